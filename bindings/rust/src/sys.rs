//! The libmprof functions the crate calls (include/mprof/mprof.h and include/mprof/ffi.h).
//! Only compiled with the `enable` feature: without it no mprof symbol is referenced. The
//! library is linked by build.rs, hence no `#[link]` attribute here.
use crate::__private::SrcLoc;
use crate::lifecycle::{CConfig, Stats};
use std::os::raw::{c_char, c_int, c_void};

extern "C" {
    pub(crate) fn mprof_startup(cfg: *const CConfig) -> c_int;
    pub(crate) fn mprof_shutdown();
    pub(crate) fn mprof_is_recording() -> c_int;
    pub(crate) fn mprof_get_stats(out: *mut Stats);
    pub(crate) fn mprof_flush();
    pub(crate) fn mprof_result_name(r: c_int) -> *const c_char;
    pub(crate) fn mprof_result_str(r: c_int) -> *const c_char;

    pub(crate) fn mprof_ffi_zone_begin(loc: *const SrcLoc) -> c_int;
    pub(crate) fn mprof_ffi_zone_end(active: c_int);
    pub(crate) fn mprof_ffi_sizeof(what: c_int) -> usize;

    pub(crate) fn mprof__zone_text(text: *const c_char, len: usize);
    pub(crate) fn mprof__zone_value(value: u64);
    pub(crate) fn mprof__frame_mark(name: *const c_char);
    pub(crate) fn mprof__frame_begin(name: *const c_char);
    pub(crate) fn mprof__frame_end(name: *const c_char);
    pub(crate) fn mprof_plot_config(name: *const c_char, format: c_int, style: c_int, color: u32);
    pub(crate) fn mprof__plot_f64(name: *const c_char, value: f64);
    pub(crate) fn mprof__plot_i64(name: *const c_char, value: i64);
    pub(crate) fn mprof__message(level: c_int, text: *const c_char, len: usize);
    pub(crate) fn mprof__thread_name(name: *const c_char);
    pub(crate) fn mprof__app_info(text: *const c_char, len: usize);

    pub(crate) fn mprof__alloc(ptr: *const c_void, size: usize, pool: *const c_char, depth: c_int);
    pub(crate) fn mprof__free(ptr: *const c_void, pool: *const c_char, depth: c_int);

    pub(crate) fn mprof__fiber_enter(name: *const c_char);
    pub(crate) fn mprof__fiber_leave();

    pub(crate) fn mprof__async_begin(track: *const c_char, id: u64, name: *const c_char);
    pub(crate) fn mprof__async_begin_dyn(track: *const c_char, id: u64, name: *const c_char);
    pub(crate) fn mprof__async_end(track: *const c_char, id: u64);

    pub(crate) fn mprof__lock_announce(name: *const c_char, kind: c_int, loc: *const SrcLoc) -> u32;
    pub(crate) fn mprof__lock_wait(id: u32, shared: c_int);
    pub(crate) fn mprof__lock_obtained(id: u32, shared: c_int);
    pub(crate) fn mprof__lock_released(id: u32, shared: c_int);
    pub(crate) fn mprof__lock_try_failed(id: u32, shared: c_int);
}

/// mprof_lock_kind values.
pub(crate) const LOCK_KIND_MUTEX: c_int = 1;
pub(crate) const LOCK_KIND_RWLOCK: c_int = 2;

/// mprof_ffi_type values.
pub(crate) const FFI_TYPE_SRCLOC: c_int = 1;
pub(crate) const FFI_TYPE_CONFIG: c_int = 2;
pub(crate) const FFI_TYPE_STATS: c_int = 3;
