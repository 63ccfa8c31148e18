//! The instrumentation macros. Two definitions of each: with the `enable` feature they record
//! through libmprof; without it they expand to nothing that runs (the C macros' `((void)0)`)
//! and never evaluate their arguments, so a build without `enable` references no mprof symbol.
//! Arguments other than literals are still type-checked inside an `if false` block, which the
//! compiler removes: a variable or an import that only instrumentation uses does not become an
//! "unused" warning in the shipping build.
//!
//! The features are those of this crate, not of the crate that invokes the macros: an engine
//! turns profiling on by forwarding a feature of its own to `mprof/enable`.

/// A zone that ends with the enclosing block: `zone!("name")` or `zone!("name", color)`.
///
/// The name is a string literal; the color is a `u32` 0xRRGGBB constant, usually one of
/// [`color`](crate::color). The call site owns a `static` source location (name, module path,
/// file, line, color). Use it as a statement; zones nest to any depth.
///
/// ```
/// fn step() {
///     mprof::zone!("Physics::step", mprof::color::PHYSICS);
///     {
///         mprof::zone!("Physics::broadphase");
///     } // Physics::broadphase ends here
/// } // Physics::step ends here
/// # step();
/// ```
#[cfg(feature = "enable")]
#[macro_export]
macro_rules! zone {
    ($name:literal) => {
        $crate::zone!($name, 0)
    };
    ($name:literal, $color:expr) => {
        let _mprof_zone = {
            static LOC: $crate::__private::SrcLoc = $crate::__private::SrcLoc::new(
                concat!($name, "\0"),
                concat!(module_path!(), "\0"),
                concat!(file!(), "\0"),
                line!(),
                $color,
            );
            $crate::__private::Zone::begin(&LOC)
        };
    };
}

/// A zone that ends with the enclosing block (disabled build: nothing).
#[cfg(not(feature = "enable"))]
#[macro_export]
macro_rules! zone {
    ($name:literal) => {};
    ($name:literal, $color:expr) => {
        if false {
            let _ = $color;
        }
    };
}

/// Attaches a text to the innermost open zone of the calling thread (copied): `zone_text!(s)`.
#[cfg(feature = "enable")]
#[macro_export]
macro_rules! zone_text {
    ($text:expr) => {
        $crate::__private::zone_text(::core::convert::AsRef::<str>::as_ref(&$text))
    };
}

/// Attaches a text to the innermost open zone (disabled build: nothing).
#[cfg(not(feature = "enable"))]
#[macro_export]
macro_rules! zone_text {
    ($text:expr) => {
        if false {
            let _ = &$text;
        }
    };
}

/// Attaches a number to the innermost open zone of the calling thread: `zone_value!(n)`.
#[cfg(feature = "enable")]
#[macro_export]
macro_rules! zone_value {
    ($value:expr) => {
        $crate::__private::zone_value(($value) as u64)
    };
}

/// Attaches a number to the innermost open zone (disabled build: nothing).
#[cfg(not(feature = "enable"))]
#[macro_export]
macro_rules! zone_value {
    ($value:expr) => {
        if false {
            let _ = &$value;
        }
    };
}

/// The end of a frame: `frame_mark!()` for the main loop, `frame_mark!("name")` for a secondary
/// frame set (e.g. a fixed physics tick). The name is a string literal.
#[cfg(feature = "enable")]
#[macro_export]
macro_rules! frame_mark {
    () => {
        $crate::__private::frame_mark(::core::option::Option::None)
    };
    ($name:literal) => {
        $crate::__private::frame_mark(::core::option::Option::Some(concat!($name, "\0")))
    };
}

/// The end of a frame (disabled build: nothing).
#[cfg(not(feature = "enable"))]
#[macro_export]
macro_rules! frame_mark {
    () => {
        ()
    };
    ($name:literal) => {
        ()
    };
}

/// A sample of a plot: `plot!("name", value)`, value converted with `as f64`.
#[cfg(feature = "enable")]
#[macro_export]
macro_rules! plot {
    ($name:literal, $value:expr) => {
        $crate::__private::plot_f64(concat!($name, "\0"), ($value) as f64)
    };
}

/// A sample of a plot (disabled build: nothing).
#[cfg(not(feature = "enable"))]
#[macro_export]
macro_rules! plot {
    ($name:literal, $value:expr) => {
        if false {
            let _ = &$value;
        }
    };
}

/// An integer sample of a plot: `plot_int!("name", value)`, value converted with `as i64`.
#[cfg(feature = "enable")]
#[macro_export]
macro_rules! plot_int {
    ($name:literal, $value:expr) => {
        $crate::__private::plot_i64(concat!($name, "\0"), ($value) as i64)
    };
}

/// An integer sample of a plot (disabled build: nothing).
#[cfg(not(feature = "enable"))]
#[macro_export]
macro_rules! plot_int {
    ($name:literal, $value:expr) => {
        if false {
            let _ = &$value;
        }
    };
}

/// A timeline message: `message!(level, "format {}", args...)` with a [`Level`](crate::Level):
/// Trace, Debug, Info, Warn, Error or Fatal. The text is copied; a plain literal is passed
/// without formatting.
#[cfg(feature = "enable")]
#[macro_export]
macro_rules! message {
    ($level:expr, $($arg:tt)+) => {
        $crate::__private::message($level, ::core::format_args!($($arg)+))
    };
}

/// A timeline message (disabled build: nothing).
#[cfg(not(feature = "enable"))]
#[macro_export]
macro_rules! message {
    ($level:expr, $($arg:tt)+) => {
        if false {
            let _ = $level;
            let _ = ::core::format_args!($($arg)+);
        }
    };
}

/// Names the calling thread in the capture: `thread_name!(name)` with any `AsRef<str>`
/// (copied).
#[cfg(feature = "enable")]
#[macro_export]
macro_rules! thread_name {
    ($name:expr) => {
        $crate::__private::thread_name(::core::convert::AsRef::<str>::as_ref(&$name))
    };
}

/// Names the calling thread (disabled build: nothing).
#[cfg(not(feature = "enable"))]
#[macro_export]
macro_rules! thread_name {
    ($name:expr) => {
        if false {
            let _ = &$name;
        }
    };
}

/// Free text about the run (build, level, settings), formatted like `format!` and copied:
/// `app_info!("build {}", sha)`.
#[cfg(feature = "enable")]
#[macro_export]
macro_rules! app_info {
    ($($arg:tt)+) => {
        $crate::__private::app_info(::core::format_args!($($arg)+))
    };
}

/// Free text about the run (disabled build: nothing).
#[cfg(not(feature = "enable"))]
#[macro_export]
macro_rules! app_info {
    ($($arg:tt)+) => {
        if false {
            let _ = ::core::format_args!($($arg)+);
        }
    };
}

/// Call right after switching to a fiber: `fiber_enter!("name")`. The name (a literal, one per
/// fiber) is the fiber's identity; everything the thread records until [`fiber_leave!`] belongs
/// to the fiber's own track.
#[cfg(feature = "enable")]
#[macro_export]
macro_rules! fiber_enter {
    ($name:literal) => {
        $crate::__private::fiber_enter(concat!($name, "\0"))
    };
}

/// Call right after switching to a fiber (disabled build: nothing).
#[cfg(not(feature = "enable"))]
#[macro_export]
macro_rules! fiber_enter {
    ($name:literal) => {
        ()
    };
}

/// Call right before switching away from the current fiber: `fiber_leave!()`.
#[cfg(feature = "enable")]
#[macro_export]
macro_rules! fiber_leave {
    () => {
        $crate::__private::fiber_leave()
    };
}

/// Call right before switching away from a fiber (disabled build: nothing).
#[cfg(not(feature = "enable"))]
#[macro_export]
macro_rules! fiber_leave {
    () => {
        ()
    };
}

/// A [`Mutex`](crate::Mutex) named by a literal, with this call site as its source location:
/// `mutex!("JobQueue", value)`. Usable in a `static`.
#[cfg(feature = "enable")]
#[macro_export]
macro_rules! mutex {
    ($name:literal, $value:expr) => {{
        static LOC: $crate::__private::SrcLoc = $crate::__private::SrcLoc::new(
            concat!($name, "\0"),
            concat!(module_path!(), "\0"),
            concat!(file!(), "\0"),
            line!(),
            0,
        );
        $crate::Mutex::__tracked(&LOC, $value)
    }};
}

/// A [`Mutex`](crate::Mutex) (disabled build: an untracked mutex around value).
#[cfg(not(feature = "enable"))]
#[macro_export]
macro_rules! mutex {
    ($name:literal, $value:expr) => {
        $crate::Mutex::__untracked($value)
    };
}

/// An [`RwLock`](crate::RwLock) named by a literal, with this call site as its source
/// location: `rwlock!("World", value)`. Usable in a `static`.
#[cfg(feature = "enable")]
#[macro_export]
macro_rules! rwlock {
    ($name:literal, $value:expr) => {{
        static LOC: $crate::__private::SrcLoc = $crate::__private::SrcLoc::new(
            concat!($name, "\0"),
            concat!(module_path!(), "\0"),
            concat!(file!(), "\0"),
            line!(),
            0,
        );
        $crate::RwLock::__tracked(&LOC, $value)
    }};
}

/// An [`RwLock`](crate::RwLock) (disabled build: an untracked rwlock around value).
#[cfg(not(feature = "enable"))]
#[macro_export]
macro_rules! rwlock {
    ($name:literal, $value:expr) => {
        $crate::RwLock::__untracked($value)
    };
}

/// An [`Allocator`](crate::Allocator) that records into the named pool: `allocator!("pool")`
/// wraps `std::alloc::System`, `allocator!("pool", inner)` wraps another `GlobalAlloc`, and
/// `allocator!("pool", inner, depth)` also records `depth` frames of callstack per
/// allocation. Usable in a `static`, e.g. as the `#[global_allocator]`.
#[cfg(feature = "enable")]
#[macro_export]
macro_rules! allocator {
    ($pool:literal) => {
        $crate::allocator!($pool, ::std::alloc::System, 0)
    };
    ($pool:literal, $inner:expr) => {
        $crate::allocator!($pool, $inner, 0)
    };
    ($pool:literal, $inner:expr, $depth:expr) => {
        $crate::Allocator::__named($inner, concat!($pool, "\0"), $depth)
    };
}

/// An [`Allocator`](crate::Allocator) (disabled build: a plain forwarder to the inner
/// allocator).
#[cfg(not(feature = "enable"))]
#[macro_export]
macro_rules! allocator {
    ($pool:literal) => {
        $crate::Allocator::new(::std::alloc::System)
    };
    ($pool:literal, $inner:expr) => {
        $crate::Allocator::new($inner)
    };
    ($pool:literal, $inner:expr, $depth:expr) => {
        $crate::Allocator::new($inner)
    };
}

/// An async span: `let span = async_span!("track", id, "name");` begins it and returns an
/// [`AsyncSpan`](crate::AsyncSpan) guard that ends it when dropped, on any thread. track and
/// name are literals; id (a `u64`, converted with `as u64`) is unique in its track while the
/// span is open. `async_span!("track", id, name = expr)` takes a name built at run time (copied).
#[cfg(feature = "enable")]
#[macro_export]
macro_rules! async_span {
    ($track:literal, $id:expr, $name:literal) => {
        $crate::AsyncSpan::begin(concat!($track, "\0"), ($id) as u64, concat!($name, "\0"))
    };
    ($track:literal, $id:expr, name = $name:expr) => {
        $crate::AsyncSpan::begin_dyn(concat!($track, "\0"), ($id) as u64, &$name)
    };
}

/// An async span (disabled build: a guard that does nothing; no argument is evaluated).
#[cfg(not(feature = "enable"))]
#[macro_export]
macro_rules! async_span {
    ($track:literal, $id:expr, $name:literal) => {{
        if false {
            let _ = &$id;
        }
        $crate::AsyncSpan::disabled()
    }};
    ($track:literal, $id:expr, name = $name:expr) => {{
        if false {
            let _ = (&$id, &$name);
        }
        $crate::AsyncSpan::disabled()
    }};
}

/// Begins an async span without a guard: `async_begin!("track", id, "name")`; end it with
/// [`async_end!`] on any thread (for spans whose begin and end are in different functions).
#[cfg(feature = "enable")]
#[macro_export]
macro_rules! async_begin {
    ($track:literal, $id:expr, $name:literal) => {
        $crate::__private::async_begin(concat!($track, "\0"), ($id) as u64, concat!($name, "\0"))
    };
}

/// Begins an async span (disabled build: nothing).
#[cfg(not(feature = "enable"))]
#[macro_export]
macro_rules! async_begin {
    ($track:literal, $id:expr, $name:literal) => {
        if false {
            let _ = &$id;
        }
    };
}

/// Ends the async span of that id in that track: `async_end!("track", id)`.
#[cfg(feature = "enable")]
#[macro_export]
macro_rules! async_end {
    ($track:literal, $id:expr) => {
        $crate::__private::async_end(concat!($track, "\0"), ($id) as u64)
    };
}

/// Ends an async span (disabled build: nothing).
#[cfg(not(feature = "enable"))]
#[macro_export]
macro_rules! async_end {
    ($track:literal, $id:expr) => {
        if false {
            let _ = &$id;
        }
    };
}
