//! A `GlobalAlloc` wrapper that records allocations and frees into a named pool.
//!
//! Every allocation, free and reallocation of the inner allocator is recorded as ALLOC/FREE
//! events under the pool's name (the C `MPROF_ALLOC_NAMED` / `MPROF_FREE_NAMED`), so
//! `mprof report --memory` shows the pool's live bytes, peak, leaks and lifetimes.
//!
//! The wrapper records only while the profiler is recording and never starts it: Rust allocates
//! before `main`, and a first event there would start the profiler with the default
//! configuration before the program's own [`startup`](crate::startup). Frees are recorded
//! before the memory is returned, so that another thread that gets the same address next never
//! has its ALLOC recorded before this FREE; a reallocation is a FREE of the old block and an
//! ALLOC of the new one (the FREE again first, undone by an ALLOC of the old block when the
//! reallocation fails).
use std::alloc::{GlobalAlloc, Layout, System};
use std::os::raw::c_char;

/// A `GlobalAlloc` that forwards to `A` and records into a pool. Build it with
/// [`allocator!`](crate::allocator) (a named pool) or [`Allocator::new`] (the default heap).
///
/// ```
/// #[global_allocator]
/// static HEAP: mprof::Allocator = mprof::allocator!("rust-heap");
/// # fn main() { let v = vec![1u8; 100]; assert_eq!(v.len(), 100); }
/// ```
///
/// Without the `enable` feature it is a plain forwarder to `A`.
pub struct Allocator<A = System> {
    inner: A,
    #[cfg_attr(not(feature = "enable"), allow(dead_code))]
    pool: *const c_char,
    #[cfg_attr(not(feature = "enable"), allow(dead_code))]
    depth: i32,
}

// pool is a NUL-terminated static literal (or null): sharing it is sound.
unsafe impl<A: Sync> Sync for Allocator<A> {}
unsafe impl<A: Send> Send for Allocator<A> {}

impl<A> Allocator<A> {
    /// Wraps inner, recording into the default heap (the C pool NULL), without callstacks.
    pub const fn new(inner: A) -> Allocator<A> {
        Allocator { inner, pool: std::ptr::null(), depth: 0 }
    }

    /// What [`allocator!`](crate::allocator) expands to: pool ends with "\0"; depth is the
    /// number of callstack frames recorded per allocation (0 = none).
    #[doc(hidden)]
    pub const fn __named(inner: A, pool: &'static str, depth: i32) -> Allocator<A> {
        Allocator { inner, pool: crate::__private::nul_terminated(pool), depth }
    }

    /// The default heap with depth frames of callstack per allocation (the `tracy` module's
    /// `ProfiledAllocator`).
    #[cfg(feature = "tracy")]
    pub(crate) const fn __with_depth(inner: A, depth: i32) -> Allocator<A> {
        Allocator { inner, pool: std::ptr::null(), depth }
    }

    /// The wrapped allocator.
    pub fn inner(&self) -> &A {
        &self.inner
    }
}

#[cfg(feature = "enable")]
impl<A> Allocator<A> {
    #[inline]
    fn record_alloc(&self, ptr: *mut u8, size: usize) {
        if !ptr.is_null() && crate::is_recording() {
            unsafe { crate::sys::mprof__alloc(ptr.cast(), size, self.pool, self.depth) }
        }
    }

    #[inline]
    fn record_free(&self, ptr: *mut u8) {
        if crate::is_recording() {
            unsafe { crate::sys::mprof__free(ptr.cast(), self.pool, self.depth) }
        }
    }
}

#[cfg(not(feature = "enable"))]
impl<A> Allocator<A> {
    #[inline(always)]
    fn record_alloc(&self, _ptr: *mut u8, _size: usize) {}

    #[inline(always)]
    fn record_free(&self, _ptr: *mut u8) {}
}

unsafe impl<A: GlobalAlloc> GlobalAlloc for Allocator<A> {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = self.inner.alloc(layout);
        self.record_alloc(p, layout.size());
        p
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        let p = self.inner.alloc_zeroed(layout);
        self.record_alloc(p, layout.size());
        p
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        self.record_free(ptr);
        self.inner.dealloc(ptr, layout)
    }

    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        self.record_free(ptr);
        let p = self.inner.realloc(ptr, layout, new_size);
        if p.is_null() {
            // The old block is still live: record it again.
            self.record_alloc(ptr, layout.size());
        } else {
            self.record_alloc(p, new_size);
        }
        p
    }
}
