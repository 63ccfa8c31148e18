//! Async spans: work that begins on one thread and ends on another.

/// An async span, begun by [`async_span!`](crate::async_span) and ended when dropped, on
/// whichever thread drops it. It is `Send`: an async task can hold it across `.await` points
/// while its executor moves it between worker threads, and the span covers the task's whole
/// life. Spans of one track may overlap; each needs an id unique in its track while open.
#[must_use = "the span ends when this guard is dropped"]
pub struct AsyncSpan {
    #[cfg(feature = "enable")]
    track: &'static str,
    #[cfg(feature = "enable")]
    id: u64,
}

impl AsyncSpan {
    /// Begins a span of a literal name; track and name end with "\0" (the macros append it).
    #[cfg(feature = "enable")]
    #[doc(hidden)]
    pub fn begin(track: &'static str, id: u64, name: &'static str) -> AsyncSpan {
        crate::__private::async_begin(track, id, name);
        AsyncSpan { track, id }
    }

    /// Begins a span whose name is built at run time (copied).
    #[cfg(feature = "enable")]
    #[doc(hidden)]
    pub fn begin_dyn(track: &'static str, id: u64, name: &str) -> AsyncSpan {
        crate::__private::async_begin_dyn(track, id, name);
        AsyncSpan { track, id }
    }

    /// The guard of a build that does not record: nothing to end.
    #[cfg(not(feature = "enable"))]
    #[doc(hidden)]
    pub const fn disabled() -> AsyncSpan {
        AsyncSpan {}
    }
}

#[cfg(feature = "enable")]
impl Drop for AsyncSpan {
    fn drop(&mut self) {
        crate::__private::async_end(self.track, self.id)
    }
}
