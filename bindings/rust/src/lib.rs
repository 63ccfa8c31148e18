//! Rust bindings of mprof, a frame profiler for game engines.
//!
//! # Overview
//! Mark regions of code ([`zone!`]), frame boundaries ([`frame_mark!`]), plots ([`plot!`]),
//! timeline messages ([`message!`]), allocations ([`Allocator`]), lock contention ([`Mutex`],
//! [`RwLock`]), fibers ([`fiber_enter!`]) and async spans that a task carries from thread to
//! thread ([`async_span!`]); libmprof's collector writes them into a capture
//! that `mprof report`, `mprof view` and `mprof gate` read. The macros mirror the C API of
//! `include/mprof/mprof.h` and record through libmprof itself, so a Rust engine and a C engine
//! produce the same captures.
//!
//! # Features
//! - none (the default): every macro expands to nothing and never evaluates its arguments;
//!   the binary references no mprof symbol and does not link libmprof.
//! - `enable`: links libmprof (build.rs finds it with pkg-config or `MPROF_LIB_DIR`) and
//!   records.
//! - `shipping`: marks a shipping build. `shipping` together with `enable` is a compile error.
//!
//! An engine crate forwards its own features: `profiling = ["mprof/enable"]`,
//! `shipping = ["mprof/shipping"]`, so that `cargo check --features shipping` builds the shipping
//! configuration and `--features 'shipping profiling'` fails with the guard's message.
//!
//! # Step by step
//! ```
//! fn physics_step() {
//!     mprof::zone!("Physics::step", mprof::color::PHYSICS); // ends with the block
//! }
//! # fn main() {
//! mprof::startup(&mprof::Config::default()).unwrap(); // optional: the first event starts it
//! for frame in 0..3 {
//!     physics_step();
//!     mprof::plot!("frame", frame);
//!     mprof::frame_mark!();
//! }
//! mprof::shutdown();
//! # }
//! ```
//! Run with `MPROF_CAPTURE=out.mprof`, or set [`Config::capture_path`], then
//! `mprof report out.mprof`.
//!
//! # Names and call sites
//! Zone, frame, plot and fiber names are string literals: each call site owns a `static`
//! source location (name, module path, file, line, color; the C `mprof_srcloc`), and only its
//! address travels on the hot path. Rust has no `__func__`, so the "function" of a Rust zone is
//! the module path of its call site (`engine::physics`). Texts of [`message!`],
//! [`thread_name!`] and [`app_info!`] are copied and may be formatted at run time.
//!
//! # Threading
//! Every macro may be called from any thread. A zone begun on a thread ends on it (the guard is
//! not `Send`). [`startup`] and [`shutdown`] are called from one thread, not concurrently.
#![warn(missing_docs)]

#[cfg(all(feature = "shipping", feature = "enable"))]
compile_error!(
    "mprof: shipping builds must not enable profiling (feature \"enable\"); instrumentation is stripped by leaving \"enable\" off."
);

mod alloc;
mod async_span;
pub mod color;
mod lifecycle;
mod lock;
mod macros;
#[cfg(feature = "enable")]
mod sys;

#[doc(hidden)]
pub mod __private;
#[cfg(feature = "tracy")]
pub mod tracy;

// With the `tracy` feature the crate root is also shaped like `tracy-client`'s, so that an engine
// that renames this crate to `tracy-client` in its Cargo.toml compiles unchanged (tracy.rs).
#[cfg(feature = "tracy")]
pub use tracy::{
    frame_mark, Client, Frame, FrameName, PlotConfiguration, PlotFormat, PlotLineStyle, PlotName,
    ProfiledAllocator, Span, SpanLocation,
};

pub use alloc::Allocator;
pub use async_span::AsyncSpan;
pub use lifecycle::{flush, is_recording, shutdown, startup, stats, Config, Error, Stats};
pub use lock::{Mutex, MutexGuard, RwLock, RwLockReadGuard, RwLockWriteGuard};

/// True when this build records (the `enable` feature is on).
pub const ENABLED: bool = cfg!(feature = "enable");

/// Message levels of [`message!`]; the values are the C `mprof_log_level`s.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(i32)]
pub enum Level {
    /// Finest detail (grey in the timeline).
    Trace = 1,
    /// Debugging output (blue).
    Debug = 2,
    /// Ordinary events (white-grey).
    Info = 3,
    /// Something unexpected that the program handled (amber).
    Warn = 4,
    /// A failure (red).
    Error = 5,
    /// A failure the program does not survive (magenta).
    Fatal = 6,
}
