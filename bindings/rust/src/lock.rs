//! `std::sync::Mutex` and `RwLock` wrappers that record contention, with the semantics of the C
//! `mprof_mutex` / `mprof_rwlock` (include/mprof/lock.h):
//!
//! - every acquisition records LOCK_OBTAINED, and its guard records LOCK_RELEASED before the
//!   lock is released, so that the next holder's OBTAINED never precedes it;
//! - an acquisition that finds the lock taken (its first `try_lock` fails) records LOCK_WAIT
//!   before blocking, so `mprof report --locks` counts contended acquisitions exactly and
//!   measures their wait;
//! - a failed `try_lock` records LOCK_TRY_FAILED.
//!
//! The lock is announced to libmprof (LOCK_ANNOUNCE: name, kind, call site) on its first use,
//! because the constructors are `const` so that locks can be `static`s. Two threads that race
//! to announce one lock both get an id; one id wins and the other is never used (ids are only
//! written into a capture with the lock's first event there). A poisoned lock is still
//! acquired, and recorded as such; the poison is passed on as `std` does.
//!
//! Without the `enable` feature the wrappers are the bare `std` calls: no `try_lock`, no
//! branch, no call into libmprof.
use std::fmt;
use std::ops::{Deref, DerefMut};
use std::sync::{self, LockResult, PoisonError, TryLockError, TryLockResult};

#[cfg(feature = "enable")]
use crate::__private::SrcLoc;
#[cfg(feature = "enable")]
use std::sync::atomic::{AtomicU32, Ordering};

/// A lock's identity in libmprof: its call site and, once announced, its id.
#[cfg(feature = "enable")]
struct Site {
    loc: &'static SrcLoc,
    kind: i32,
    /// 0: not announced yet; UNTRACKED: libmprof gave no id; else the id.
    id: AtomicU32,
}

#[cfg(feature = "enable")]
const UNTRACKED: u32 = u32::MAX;

#[cfg(feature = "enable")]
impl Site {
    const fn new(loc: &'static SrcLoc, kind: i32) -> Site {
        Site { loc, kind, id: AtomicU32::new(0) }
    }

    /// The id to record with, 0 when the lock is not tracked.
    #[inline]
    fn id(&self) -> u32 {
        match self.id.load(Ordering::Acquire) {
            0 => self.announce(),
            UNTRACKED => 0,
            id => id,
        }
    }

    #[cold]
    fn announce(&self) -> u32 {
        let got = unsafe { crate::sys::mprof__lock_announce(self.loc.name_ptr(), self.kind, self.loc) };
        let store = if got == 0 { UNTRACKED } else { got };
        match self.id.compare_exchange(0, store, Ordering::AcqRel, Ordering::Acquire) {
            Ok(_) => got,
            Err(UNTRACKED) => 0,
            Err(other) => other,
        }
    }
}

#[cfg(feature = "enable")]
mod ev {
    #[inline]
    pub fn wait(id: u32, shared: bool) {
        if id != 0 {
            unsafe { crate::sys::mprof__lock_wait(id, shared as i32) }
        }
    }
    #[inline]
    pub fn obtained(id: u32, shared: bool) {
        if id != 0 {
            unsafe { crate::sys::mprof__lock_obtained(id, shared as i32) }
        }
    }
    #[inline]
    pub fn released(id: u32, shared: bool) {
        if id != 0 {
            unsafe { crate::sys::mprof__lock_released(id, shared as i32) }
        }
    }
    #[inline]
    pub fn try_failed(id: u32, shared: bool) {
        if id != 0 {
            unsafe { crate::sys::mprof__lock_try_failed(id, shared as i32) }
        }
    }
}

/// Maps the guard inside a LockResult.
fn map_result<G, H>(r: LockResult<G>, f: impl FnOnce(G) -> H) -> LockResult<H> {
    match r {
        Ok(g) => Ok(f(g)),
        Err(p) => Err(PoisonError::new(f(p.into_inner()))),
    }
}

/// Acquires through try_acquire first when tracked: WAIT only when that fails.
#[cfg(feature = "enable")]
fn acquire<G, H>(
    id: u32,
    shared: bool,
    try_acquire: impl FnOnce() -> TryLockResult<G>,
    acquire: impl FnOnce() -> LockResult<G>,
    wrap: impl FnOnce(G) -> H,
) -> LockResult<H> {
    if id == 0 {
        return map_result(acquire(), wrap);
    }
    let r = match try_acquire() {
        Ok(g) => Ok(g),
        Err(TryLockError::Poisoned(p)) => Err(p),
        Err(TryLockError::WouldBlock) => {
            ev::wait(id, shared);
            acquire()
        }
    };
    ev::obtained(id, shared);
    map_result(r, wrap)
}

#[cfg(feature = "enable")]
fn try_acquire<G, H>(
    id: u32,
    shared: bool,
    try_acquire: impl FnOnce() -> TryLockResult<G>,
    wrap: impl FnOnce(G) -> H,
) -> TryLockResult<H> {
    match try_acquire() {
        Ok(g) => {
            ev::obtained(id, shared);
            Ok(wrap(g))
        }
        Err(TryLockError::Poisoned(p)) => {
            ev::obtained(id, shared);
            Err(TryLockError::Poisoned(PoisonError::new(wrap(p.into_inner()))))
        }
        Err(TryLockError::WouldBlock) => {
            ev::try_failed(id, shared);
            Err(TryLockError::WouldBlock)
        }
    }
}

#[cfg(not(feature = "enable"))]
fn try_plain<G, H>(r: TryLockResult<G>, wrap: impl FnOnce(G) -> H) -> TryLockResult<H> {
    match r {
        Ok(g) => Ok(wrap(g)),
        Err(TryLockError::Poisoned(p)) => {
            Err(TryLockError::Poisoned(PoisonError::new(wrap(p.into_inner()))))
        }
        Err(TryLockError::WouldBlock) => Err(TryLockError::WouldBlock),
    }
}

// ---- Mutex ------------------------------------------------------------------------------------

/// A `std::sync::Mutex` that records contention. Build it with [`mutex!`](crate::mutex):
///
/// ```
/// static JOBS: mprof::Mutex<Vec<u32>> = mprof::mutex!("JobQueue", Vec::new());
/// JOBS.lock().unwrap().push(1);
/// assert_eq!(JOBS.lock().unwrap().len(), 1);
/// ```
pub struct Mutex<T: ?Sized> {
    #[cfg(feature = "enable")]
    site: Site,
    inner: sync::Mutex<T>,
}

impl<T> Mutex<T> {
    /// What [`mutex!`](crate::mutex) expands to with `enable`.
    #[cfg(feature = "enable")]
    #[doc(hidden)]
    pub const fn __tracked(loc: &'static SrcLoc, value: T) -> Mutex<T> {
        Mutex { site: Site::new(loc, crate::sys::LOCK_KIND_MUTEX), inner: sync::Mutex::new(value) }
    }

    /// What [`mutex!`](crate::mutex) expands to without `enable`.
    #[cfg(not(feature = "enable"))]
    #[doc(hidden)]
    pub const fn __untracked(value: T) -> Mutex<T> {
        Mutex { inner: sync::Mutex::new(value) }
    }

    /// The value, consuming the mutex (as `std::sync::Mutex::into_inner`).
    pub fn into_inner(self) -> LockResult<T> {
        self.inner.into_inner()
    }
}

impl<T: ?Sized> Mutex<T> {
    /// Blocks until the lock is acquired (as `std::sync::Mutex::lock`). Records OBTAINED, and
    /// WAIT first when the lock was taken.
    pub fn lock(&self) -> LockResult<MutexGuard<'_, T>> {
        #[cfg(feature = "enable")]
        {
            let id = self.site.id();
            acquire(id, false, || self.inner.try_lock(), || self.inner.lock(), |g| MutexGuard {
                inner: g,
                id,
            })
        }
        #[cfg(not(feature = "enable"))]
        map_result(self.inner.lock(), |g| MutexGuard { inner: g })
    }

    /// Acquires the lock if it is free (as `std::sync::Mutex::try_lock`). Records OBTAINED, or
    /// TRY_FAILED when the lock was taken.
    pub fn try_lock(&self) -> TryLockResult<MutexGuard<'_, T>> {
        #[cfg(feature = "enable")]
        {
            let id = self.site.id();
            try_acquire(id, false, || self.inner.try_lock(), |g| MutexGuard { inner: g, id })
        }
        #[cfg(not(feature = "enable"))]
        try_plain(self.inner.try_lock(), |g| MutexGuard { inner: g })
    }

    /// Whether a holder panicked (as `std::sync::Mutex::is_poisoned`).
    pub fn is_poisoned(&self) -> bool {
        self.inner.is_poisoned()
    }

    /// The value, through an exclusive borrow: no locking, nothing recorded.
    pub fn get_mut(&mut self) -> LockResult<&mut T> {
        self.inner.get_mut()
    }
}

impl<T: ?Sized + fmt::Debug> fmt::Debug for Mutex<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("mprof::Mutex").field("inner", &&self.inner).finish()
    }
}

/// Holds a [`Mutex`]; records RELEASED and unlocks when dropped.
pub struct MutexGuard<'a, T: ?Sized> {
    inner: sync::MutexGuard<'a, T>,
    #[cfg(feature = "enable")]
    id: u32,
}

impl<T: ?Sized> Drop for MutexGuard<'_, T> {
    #[inline]
    fn drop(&mut self) {
        // Runs before the field is dropped: RELEASED is recorded before the unlock.
        #[cfg(feature = "enable")]
        ev::released(self.id, false);
    }
}

impl<T: ?Sized> Deref for MutexGuard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.inner
    }
}

impl<T: ?Sized> DerefMut for MutexGuard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        &mut self.inner
    }
}

impl<T: ?Sized + fmt::Debug> fmt::Debug for MutexGuard<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&**self, f)
    }
}

// ---- RwLock -----------------------------------------------------------------------------------

/// A `std::sync::RwLock` that records contention; shared (read) holds are recorded as shared.
/// Build it with [`rwlock!`](crate::rwlock):
///
/// ```
/// static WORLD: mprof::RwLock<u32> = mprof::rwlock!("World", 0);
/// *WORLD.write().unwrap() += 1;
/// assert_eq!(*WORLD.read().unwrap(), 1);
/// ```
pub struct RwLock<T: ?Sized> {
    #[cfg(feature = "enable")]
    site: Site,
    inner: sync::RwLock<T>,
}

impl<T> RwLock<T> {
    /// What [`rwlock!`](crate::rwlock) expands to with `enable`.
    #[cfg(feature = "enable")]
    #[doc(hidden)]
    pub const fn __tracked(loc: &'static SrcLoc, value: T) -> RwLock<T> {
        RwLock { site: Site::new(loc, crate::sys::LOCK_KIND_RWLOCK), inner: sync::RwLock::new(value) }
    }

    /// What [`rwlock!`](crate::rwlock) expands to without `enable`.
    #[cfg(not(feature = "enable"))]
    #[doc(hidden)]
    pub const fn __untracked(value: T) -> RwLock<T> {
        RwLock { inner: sync::RwLock::new(value) }
    }

    /// The value, consuming the lock (as `std::sync::RwLock::into_inner`).
    pub fn into_inner(self) -> LockResult<T> {
        self.inner.into_inner()
    }
}

impl<T: ?Sized> RwLock<T> {
    /// A shared hold (as `std::sync::RwLock::read`), recorded as shared.
    pub fn read(&self) -> LockResult<RwLockReadGuard<'_, T>> {
        #[cfg(feature = "enable")]
        {
            let id = self.site.id();
            acquire(id, true, || self.inner.try_read(), || self.inner.read(), |g| {
                RwLockReadGuard { inner: g, id }
            })
        }
        #[cfg(not(feature = "enable"))]
        map_result(self.inner.read(), |g| RwLockReadGuard { inner: g })
    }

    /// An exclusive hold (as `std::sync::RwLock::write`).
    pub fn write(&self) -> LockResult<RwLockWriteGuard<'_, T>> {
        #[cfg(feature = "enable")]
        {
            let id = self.site.id();
            acquire(id, false, || self.inner.try_write(), || self.inner.write(), |g| {
                RwLockWriteGuard { inner: g, id }
            })
        }
        #[cfg(not(feature = "enable"))]
        map_result(self.inner.write(), |g| RwLockWriteGuard { inner: g })
    }

    /// A shared hold if one is available now (as `std::sync::RwLock::try_read`).
    pub fn try_read(&self) -> TryLockResult<RwLockReadGuard<'_, T>> {
        #[cfg(feature = "enable")]
        {
            let id = self.site.id();
            try_acquire(id, true, || self.inner.try_read(), |g| RwLockReadGuard { inner: g, id })
        }
        #[cfg(not(feature = "enable"))]
        try_plain(self.inner.try_read(), |g| RwLockReadGuard { inner: g })
    }

    /// An exclusive hold if the lock is free now (as `std::sync::RwLock::try_write`).
    pub fn try_write(&self) -> TryLockResult<RwLockWriteGuard<'_, T>> {
        #[cfg(feature = "enable")]
        {
            let id = self.site.id();
            try_acquire(id, false, || self.inner.try_write(), |g| RwLockWriteGuard { inner: g, id })
        }
        #[cfg(not(feature = "enable"))]
        try_plain(self.inner.try_write(), |g| RwLockWriteGuard { inner: g })
    }

    /// Whether a writer panicked (as `std::sync::RwLock::is_poisoned`).
    pub fn is_poisoned(&self) -> bool {
        self.inner.is_poisoned()
    }

    /// The value, through an exclusive borrow: no locking, nothing recorded.
    pub fn get_mut(&mut self) -> LockResult<&mut T> {
        self.inner.get_mut()
    }
}

impl<T: ?Sized + fmt::Debug> fmt::Debug for RwLock<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("mprof::RwLock").field("inner", &&self.inner).finish()
    }
}

/// A shared hold of an [`RwLock`]; records RELEASED (shared) and releases when dropped.
pub struct RwLockReadGuard<'a, T: ?Sized> {
    inner: sync::RwLockReadGuard<'a, T>,
    #[cfg(feature = "enable")]
    id: u32,
}

impl<T: ?Sized> Drop for RwLockReadGuard<'_, T> {
    #[inline]
    fn drop(&mut self) {
        #[cfg(feature = "enable")]
        ev::released(self.id, true);
    }
}

impl<T: ?Sized> Deref for RwLockReadGuard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.inner
    }
}

/// An exclusive hold of an [`RwLock`]; records RELEASED and releases when dropped.
pub struct RwLockWriteGuard<'a, T: ?Sized> {
    inner: sync::RwLockWriteGuard<'a, T>,
    #[cfg(feature = "enable")]
    id: u32,
}

impl<T: ?Sized> Drop for RwLockWriteGuard<'_, T> {
    #[inline]
    fn drop(&mut self) {
        #[cfg(feature = "enable")]
        ev::released(self.id, false);
    }
}

impl<T: ?Sized> Deref for RwLockWriteGuard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.inner
    }
}

impl<T: ?Sized> DerefMut for RwLockWriteGuard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        &mut self.inner
    }
}
