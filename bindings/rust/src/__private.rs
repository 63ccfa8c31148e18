//! What the macros expand to. Not API: names and signatures may change.
//!
//! Each function is a thin, inlined call into libmprof. Names arrive NUL-terminated from the
//! macros (`concat!(name, "\0")`), so they reach C without copying; texts that C copies arrive
//! as `&str` with their length.
#[cfg(feature = "enable")]
use crate::sys;
use std::os::raw::c_char;

/// A call site's static description: the C `mprof_srcloc`, field for field.
///
/// Every pointer is a NUL-terminated string with static storage duration.
#[repr(C)]
pub struct SrcLoc {
    name: *const c_char,
    function: *const c_char,
    file: *const c_char,
    line: u32,
    color: u32,
}

// The strings are immutable statics: sharing their addresses between threads is sound.
unsafe impl Sync for SrcLoc {}

/// The address of a NUL-terminated literal; a name without the NUL fails at compile time when
/// used in a `static`, which is how the macros use it.
pub const fn nul_terminated(s: &'static str) -> *const c_char {
    let b = s.as_bytes();
    if b.is_empty() || b[b.len() - 1] != 0 {
        panic!("mprof: a name passed to SrcLoc must end with \\0");
    }
    b.as_ptr().cast::<c_char>()
}

impl SrcLoc {
    /// name, function and file end with "\0" (the macros append it).
    pub const fn new(
        name: &'static str,
        function: &'static str,
        file: &'static str,
        line: u32,
        color: u32,
    ) -> SrcLoc {
        SrcLoc {
            name: nul_terminated(name),
            function: nul_terminated(function),
            file: nul_terminated(file),
            line,
            color,
        }
    }

    /// A call site from NUL-terminated strings that live for the rest of the process (the
    /// `tracy` module's sites made at run time).
    #[cfg(feature = "tracy")]
    pub(crate) fn __raw(
        name: *const c_char,
        function: *const c_char,
        file: *const c_char,
        line: u32,
        color: u32,
    ) -> SrcLoc {
        SrcLoc { name, function, file, line, color }
    }

    /// The name (NUL-terminated).
    pub fn name_ptr(&self) -> *const c_char {
        self.name
    }
}

/// A scoped zone: begun by `zone!`, ended when dropped (the end of the enclosing block).
/// Not `Send`: a zone ends on the thread that began it.
#[cfg(feature = "enable")]
pub struct Zone {
    active: i32,
    _not_send: std::marker::PhantomData<*const ()>,
}

#[cfg(feature = "enable")]
impl Zone {
    /// Begins a zone at loc. One call into libmprof: the inline C hot path compiled in ffi.c.
    #[inline(always)]
    pub fn begin(loc: &'static SrcLoc) -> Zone {
        Zone {
            active: unsafe { sys::mprof_ffi_zone_begin(loc) },
            _not_send: std::marker::PhantomData,
        }
    }
}

#[cfg(feature = "enable")]
impl Drop for Zone {
    #[inline(always)]
    fn drop(&mut self) {
        // 0: the begin was not recorded (profiler off), so there is nothing to end.
        if self.active != 0 {
            unsafe { sys::mprof_ffi_zone_end(self.active) }
        }
    }
}

#[cfg(feature = "enable")]
#[inline]
pub fn zone_text(text: &str) {
    unsafe { sys::mprof__zone_text(text.as_ptr().cast(), text.len()) }
}

#[cfg(feature = "enable")]
#[inline]
pub fn zone_value(value: u64) {
    unsafe { sys::mprof__zone_value(value) }
}

#[cfg(feature = "enable")]
#[inline]
pub fn frame_mark(name: Option<&'static str>) {
    let p = match name {
        Some(n) => nul_terminated(n),
        None => std::ptr::null(),
    };
    unsafe { sys::mprof__frame_mark(p) }
}

#[cfg(feature = "enable")]
#[inline]
pub fn plot_f64(name: &'static str, value: f64) {
    unsafe { sys::mprof__plot_f64(nul_terminated(name), value) }
}

#[cfg(feature = "enable")]
#[inline]
pub fn plot_i64(name: &'static str, value: i64) {
    unsafe { sys::mprof__plot_i64(nul_terminated(name), value) }
}

/// Calls f with the text of args: the literal itself when there is nothing to format.
#[cfg(feature = "enable")]
fn with_text(args: std::fmt::Arguments<'_>, f: impl FnOnce(&str)) {
    match args.as_str() {
        Some(s) => f(s),
        None => f(&std::fmt::format(args)),
    }
}

#[cfg(feature = "enable")]
pub fn message(level: crate::Level, args: std::fmt::Arguments<'_>) {
    with_text(args, |s| unsafe {
        sys::mprof__message(level as i32, s.as_ptr().cast(), s.len())
    })
}

#[cfg(feature = "enable")]
pub fn app_info(args: std::fmt::Arguments<'_>) {
    with_text(args, |s| unsafe { sys::mprof__app_info(s.as_ptr().cast(), s.len()) })
}

/// The C function takes a NUL-terminated string (which it copies): the name is cut at its first
/// NUL, if any.
#[cfg(feature = "enable")]
pub fn thread_name(name: &str) {
    with_c_string(name, |n| unsafe { sys::mprof__thread_name(n) })
}

#[cfg(feature = "enable")]
#[inline]
pub fn fiber_enter(name: &'static str) {
    unsafe { sys::mprof__fiber_enter(nul_terminated(name)) }
}

#[cfg(feature = "enable")]
#[inline]
pub fn fiber_leave() {
    unsafe { sys::mprof__fiber_leave() }
}

/// The C function copies a NUL-terminated name: the name is cut at its first NUL, if any.
#[cfg(feature = "enable")]
fn with_c_string<R>(text: &str, f: impl FnOnce(*const c_char) -> R) -> R {
    let bytes = text.as_bytes();
    let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
    let mut v = Vec::with_capacity(end + 1);
    v.extend_from_slice(&bytes[..end]);
    v.push(0);
    f(v.as_ptr().cast())
}

#[cfg(feature = "enable")]
#[inline]
pub fn async_begin(track: &'static str, id: u64, name: &'static str) {
    unsafe { sys::mprof__async_begin(nul_terminated(track), id, nul_terminated(name)) }
}

#[cfg(feature = "enable")]
pub fn async_begin_dyn(track: &'static str, id: u64, name: &str) {
    with_c_string(name, |n| unsafe { sys::mprof__async_begin_dyn(nul_terminated(track), id, n) })
}

#[cfg(feature = "enable")]
#[inline]
pub fn async_end(track: &'static str, id: u64) {
    unsafe { sys::mprof__async_end(nul_terminated(track), id) }
}

/// sizeof of a C struct as libmprof sees it, and the size of this crate's mirror, for the
/// layout test: (srcloc, config, stats) pairs of (C, Rust).
#[cfg(feature = "enable")]
pub fn layout_sizes() -> [(usize, usize); 3] {
    unsafe {
        [
            (sys::mprof_ffi_sizeof(sys::FFI_TYPE_SRCLOC), std::mem::size_of::<SrcLoc>()),
            (
                sys::mprof_ffi_sizeof(sys::FFI_TYPE_CONFIG),
                std::mem::size_of::<crate::lifecycle::CConfig>(),
            ),
            (sys::mprof_ffi_sizeof(sys::FFI_TYPE_STATS), std::mem::size_of::<crate::Stats>()),
        ]
    }
}
