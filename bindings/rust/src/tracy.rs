//! The API of the `tracy-client` crate, recorded by mprof: an engine instrumented for Tracy
//! switches by changing one dependency line, not its code.
//!
//! # Switching
//! Where the engine's `Cargo.toml` says
//! ```toml
//! tracy-client = { version = "0.17", optional = true }
//! ```
//! it says instead
//! ```toml
//! tracy-client = { package = "mprof", path = "../mprof/bindings/rust", optional = true, features = ["tracy", "enable"] }
//! ```
//! and every `tracy_client::...` path of its code resolves to this crate: [`Client::start`],
//! [`span!`](crate::span), [`frame_mark`], [`secondary_frame_mark!`](crate::secondary_frame_mark),
//! [`non_continuous_frame!`](crate::non_continuous_frame), [`plot!`](crate::plot),
//! [`Client::message`], [`set_thread_name!`](crate::set_thread_name), [`ProfiledAllocator`].
//! The captures are mprof's (`MPROF_CAPTURE=game.mprof`, then `mprof report game.mprof`).
//!
//! # The same switch
//! As in `tracy-client`, everything records only with the `enable` feature; without it every
//! call is a no-op and no mprof symbol is referenced. The items exist with the `tracy` feature.
//!
//! # What differs
//! - A span's callstack depth and a message's callstack depth are not recorded (mprof keeps
//!   stacks for allocations, and samples with `MPROF_SAMPLE_HZ`): `span!("name", N)` with a
//!   literal `N` other than 0 is a compile error; a depth given at run time to
//!   [`Client::span`], [`Client::span_alloc`] or [`Client::message`] is said once on stderr.
//! - A span's color belongs to its call site: [`Span::emit_color`] takes a
//!   [`ZoneColorIsSetAtTheCallSite`], which no value converts to, so a call is a compile error
//!   naming the reason.
//! - Message colors are not kept (mprof colors messages by level; these are info).
//! - GPU contexts are not mapped (no `GpuContext`): use mprof's GPU API from C.
//! - [`Client::start`] starts mprof with the default configuration and the environment
//!   (`MPROF_CAPTURE`, ...); dropping every `Client` does not stop it (it stops at exit).
use std::os::raw::c_char;
use std::sync::atomic::{AtomicBool, Ordering};

#[cfg(feature = "enable")]
use crate::sys;

static STARTED: AtomicBool = AtomicBool::new(false);

#[cfg(feature = "enable")]
static WARNED_DEPTH: AtomicBool = AtomicBool::new(false);

#[cfg(feature = "enable")]
fn check_depth(depth: u16) {
    if depth > 0 && !WARNED_DEPTH.swap(true, Ordering::Relaxed) {
        eprintln!(
            "mprof: callstack depths of spans and messages are not recorded (mprof records \
             allocation stacks, and samples with MPROF_SAMPLE_HZ)"
        );
    }
}

/// A running profiler, as `tracy_client::Client`. Copies are free; any thread.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Client(());

impl Client {
    /// Starts the profiler (mprof's defaults and environment) and returns a handle. Calling it
    /// again, or after mprof started by itself on a first event, is fine.
    pub fn start() -> Client {
        #[cfg(feature = "enable")]
        {
            let _ = crate::startup(&crate::Config::default());
        }
        STARTED.store(true, Ordering::Release);
        Client(())
    }

    /// The running client, or `None` before [`Client::start`]. Without `enable`, always a
    /// client (whose calls do nothing), so that code that expects one runs unchanged.
    pub fn running() -> Option<Client> {
        if !cfg!(feature = "enable") || STARTED.load(Ordering::Acquire) {
            Some(Client(()))
        } else {
            None
        }
    }

    /// Whether [`Client::start`] was called.
    pub fn is_running() -> bool {
        STARTED.load(Ordering::Acquire)
    }

    /// Whether events are being recorded (a capture file or a live session): Tracy's "a
    /// profiler is connected".
    pub fn is_connected(&self) -> bool {
        crate::is_recording()
    }

    /// Begins a span at a call site made by [`span_location!`](crate::span_location); it ends
    /// when the [`Span`] is dropped.
    pub fn span(self, loc: &'static SpanLocation, callstack_depth: u16) -> Span {
        #[cfg(feature = "enable")]
        {
            check_depth(callstack_depth);
            Span::begin(loc.loc)
        }
        #[cfg(not(feature = "enable"))]
        {
            let _ = (loc, callstack_depth);
            Span::off()
        }
    }

    /// Begins a span whose call site is made at run time: one site per distinct name,
    /// function, file and line, kept for the rest of the process.
    pub fn span_alloc(
        self,
        name: Option<&str>,
        function: &str,
        file: &str,
        line: u32,
        callstack_depth: u16,
    ) -> Span {
        #[cfg(feature = "enable")]
        {
            check_depth(callstack_depth);
            Span::begin(intern(name.unwrap_or(function), function, file, line))
        }
        #[cfg(not(feature = "enable"))]
        {
            let _ = (name, function, file, line, callstack_depth);
            Span::off()
        }
    }

    /// A message on the timeline (level info; copied).
    pub fn message(&self, message: &str, callstack_depth: u16) {
        #[cfg(feature = "enable")]
        {
            check_depth(callstack_depth);
            crate::__private::message(crate::Level::Info, format_args!("{}", message));
        }
        #[cfg(not(feature = "enable"))]
        let _ = (message, callstack_depth);
    }

    /// A message; its color is not kept (mprof colors messages by level).
    pub fn color_message(&self, message: &str, rgba: u32, callstack_depth: u16) {
        let _ = rgba;
        self.message(message, callstack_depth)
    }

    /// Names the calling thread (copied).
    pub fn set_thread_name(&self, name: &str) {
        #[cfg(feature = "enable")]
        crate::__private::thread_name(name);
        #[cfg(not(feature = "enable"))]
        let _ = name;
    }

    /// The end of a main-loop frame.
    pub fn frame_mark(&self) {
        #[cfg(feature = "enable")]
        crate::__private::frame_mark(None);
    }

    /// The end of a frame of a secondary frame set (a fixed physics tick).
    pub fn secondary_frame_mark(&self, name: FrameName) {
        #[cfg(feature = "enable")]
        unsafe {
            sys::mprof__frame_mark(name.0)
        }
        #[cfg(not(feature = "enable"))]
        let _ = name;
    }

    /// Begins a discontinuous frame (loading, a level transition); it ends when the [`Frame`]
    /// is dropped.
    pub fn non_continuous_frame(&self, name: FrameName) -> Frame {
        #[cfg(feature = "enable")]
        unsafe {
            sys::mprof__frame_begin(name.0)
        }
        Frame(name)
    }

    /// A point of a plot.
    pub fn plot(&self, name: PlotName, value: f64) {
        #[cfg(feature = "enable")]
        unsafe {
            sys::mprof__plot_f64(name.0, value)
        }
        #[cfg(not(feature = "enable"))]
        let _ = (name, value);
    }

    /// How a plot is drawn: its format, line style and color (its fill is not kept).
    pub fn plot_config(&self, name: PlotName, config: PlotConfiguration) {
        #[cfg(feature = "enable")]
        unsafe {
            let format = match config.format {
                PlotFormat::Number => 1,
                PlotFormat::Memory => 2,
                PlotFormat::Percentage => 3,
            };
            let style = match config.line_style {
                PlotLineStyle::Smooth => 1,
                PlotLineStyle::Stepped => 2,
            };
            sys::mprof_plot_config(name.0, format, style, config.color.unwrap_or(0) & 0xffffff)
        }
        #[cfg(not(feature = "enable"))]
        let _ = (name, config);
    }
}

/// The end of a main-loop frame, as `tracy_client::frame_mark()`.
pub fn frame_mark() {
    #[cfg(feature = "enable")]
    crate::__private::frame_mark(None);
}

/// A span in progress, as `tracy_client::Span`: ends when dropped, on its thread (not `Send`).
pub struct Span {
    #[cfg(feature = "enable")]
    active: i32,
    _not_send: std::marker::PhantomData<*const ()>,
}

/// What [`Span::emit_color`] takes: nothing converts to it, since mprof gives a span its color
/// at its call site ([`span_location!`](crate::span_location) has no color; use mprof's
/// `zone!(name, color)` for a colored zone).
pub enum ZoneColorIsSetAtTheCallSite {}

impl Span {
    #[cfg(feature = "enable")]
    fn begin(loc: *const crate::__private::SrcLoc) -> Span {
        let active = if loc.is_null() { 0 } else { unsafe { sys::mprof_ffi_zone_begin(loc) } };
        Span { active, _not_send: std::marker::PhantomData }
    }

    #[cfg(not(feature = "enable"))]
    fn off() -> Span {
        Span { _not_send: std::marker::PhantomData }
    }

    /// A text attached to the span (copied).
    pub fn emit_text(&self, text: &str) {
        #[cfg(feature = "enable")]
        if self.active == 1 {
            crate::__private::zone_text(text);
        }
        #[cfg(not(feature = "enable"))]
        let _ = text;
    }

    /// A number attached to the span.
    pub fn emit_value(&self, value: u64) {
        #[cfg(feature = "enable")]
        if self.active == 1 {
            crate::__private::zone_value(value);
        }
        #[cfg(not(feature = "enable"))]
        let _ = value;
    }

    /// Not recorded by mprof: see [`ZoneColorIsSetAtTheCallSite`]. No value can be passed.
    pub fn emit_color(&self, color: ZoneColorIsSetAtTheCallSite) {
        match color {}
    }
}

impl Drop for Span {
    fn drop(&mut self) {
        #[cfg(feature = "enable")]
        if self.active != 0 {
            unsafe { sys::mprof_ffi_zone_end(self.active) }
        }
    }
}

/// A span's call site, made by [`span_location!`](crate::span_location).
pub struct SpanLocation {
    #[cfg_attr(not(feature = "enable"), allow(dead_code))]
    loc: *const crate::__private::SrcLoc,
}

// The call site is immutable and lives for the rest of the process.
unsafe impl Send for SpanLocation {}
unsafe impl Sync for SpanLocation {}

impl SpanLocation {
    /// What [`span_location!`](crate::span_location) expands to.
    #[doc(hidden)]
    pub fn __new(name: &str, function: &str, file: &str, line: u32) -> SpanLocation {
        #[cfg(feature = "enable")]
        {
            SpanLocation { loc: intern(name, function, file, line) }
        }
        #[cfg(not(feature = "enable"))]
        {
            let _ = (name, function, file, line);
            SpanLocation { loc: std::ptr::null() }
        }
    }
}

/// The name of a secondary or discontinuous frame set, made by [`frame_name!`](crate::frame_name)
/// (a literal) or [`FrameName::new_leak`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FrameName(*const c_char);

unsafe impl Send for FrameName {}
unsafe impl Sync for FrameName {}

impl FrameName {
    /// What [`frame_name!`](crate::frame_name) expands to: name ends with "\0".
    #[doc(hidden)]
    pub const fn __literal(name: &'static str) -> FrameName {
        FrameName(crate::__private::nul_terminated(name))
    }

    /// A name made at run time, kept for the rest of the process: make it once per name.
    pub fn new_leak(name: String) -> FrameName {
        FrameName(leak_cstr(&name))
    }
}

/// A discontinuous frame in progress: ends when dropped.
pub struct Frame(#[cfg_attr(not(feature = "enable"), allow(dead_code))] FrameName);

impl Drop for Frame {
    fn drop(&mut self) {
        #[cfg(feature = "enable")]
        unsafe {
            sys::mprof__frame_end((self.0).0)
        }
    }
}

/// The name of a plot, made by [`plot_name!`](crate::plot_name) or [`PlotName::new_leak`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PlotName(*const c_char);

unsafe impl Send for PlotName {}
unsafe impl Sync for PlotName {}

impl PlotName {
    /// What [`plot_name!`](crate::plot_name) expands to: name ends with "\0".
    #[doc(hidden)]
    pub const fn __literal(name: &'static str) -> PlotName {
        PlotName(crate::__private::nul_terminated(name))
    }

    /// A name made at run time, kept for the rest of the process: make it once per name.
    pub fn new_leak(name: String) -> PlotName {
        PlotName(leak_cstr(&name))
    }
}

/// How a plot's values read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PlotFormat {
    /// Plain numbers.
    Number,
    /// Bytes.
    Memory,
    /// Percentages.
    Percentage,
}

/// How a plot's points are joined.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PlotLineStyle {
    /// Straight lines between points.
    Smooth,
    /// Steps: a value holds until the next point.
    Stepped,
}

/// A plot's display, for [`Client::plot_config`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PlotConfiguration {
    format: PlotFormat,
    line_style: PlotLineStyle,
    fill: bool,
    color: Option<u32>,
}

impl Default for PlotConfiguration {
    fn default() -> Self {
        PlotConfiguration { format: PlotFormat::Number, line_style: PlotLineStyle::Smooth, fill: true, color: None }
    }
}

impl PlotConfiguration {
    /// The format of the values.
    pub fn format(mut self, format: PlotFormat) -> Self {
        self.format = format;
        self
    }
    /// The line style.
    pub fn line_style(mut self, style: PlotLineStyle) -> Self {
        self.line_style = style;
        self
    }
    /// Whether the area under the line is filled (not kept by mprof).
    pub fn fill(mut self, fill: bool) -> Self {
        self.fill = fill;
        self
    }
    /// The color, 0xRRGGBB.
    pub fn color(mut self, color: Option<u32>) -> Self {
        self.color = color;
        self
    }
}

/// A `GlobalAlloc` that records the inner allocator's allocations, as
/// `tracy_client::ProfiledAllocator`: into mprof's default heap, with `callstack_depth` frames
/// of stack each (0 = none). Like [`Allocator`](crate::Allocator), it records only while the
/// profiler records and never starts it.
pub struct ProfiledAllocator<T>(crate::Allocator<T>);

impl<T> ProfiledAllocator<T> {
    /// Wraps inner.
    pub const fn new(inner: T, callstack_depth: u16) -> Self {
        ProfiledAllocator(crate::Allocator::__with_depth(inner, callstack_depth as i32))
    }
}

unsafe impl<T: std::alloc::GlobalAlloc> std::alloc::GlobalAlloc for ProfiledAllocator<T> {
    unsafe fn alloc(&self, layout: std::alloc::Layout) -> *mut u8 {
        self.0.alloc(layout)
    }
    unsafe fn alloc_zeroed(&self, layout: std::alloc::Layout) -> *mut u8 {
        self.0.alloc_zeroed(layout)
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: std::alloc::Layout) {
        self.0.dealloc(ptr, layout)
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: std::alloc::Layout, new_size: usize) -> *mut u8 {
        self.0.realloc(ptr, layout, new_size)
    }
}

/// A NUL-terminated copy of s that lives for the rest of the process (cut at a NUL inside).
fn leak_cstr(s: &str) -> *const c_char {
    let end = s.bytes().position(|b| b == 0).unwrap_or(s.len());
    let mut v = Vec::with_capacity(end + 1);
    v.extend_from_slice(&s.as_bytes()[..end]);
    v.push(0);
    Box::leak(v.into_boxed_slice()).as_ptr().cast()
}

/// The one call site with these fields, made on first use and never freed (captures refer to it
/// by address).
#[cfg(feature = "enable")]
fn intern(name: &str, function: &str, file: &str, line: u32) -> *const crate::__private::SrcLoc {
    use std::collections::HashMap;
    use std::sync::Mutex;
    type Key = (String, String, String, u32);
    static SITES: Mutex<Option<HashMap<Key, usize>>> = Mutex::new(None);
    let key = (name.to_string(), function.to_string(), file.to_string(), line);
    let mut g = SITES.lock().unwrap_or_else(|e| e.into_inner());
    let map = g.get_or_insert_with(HashMap::new);
    if let Some(&p) = map.get(&key) {
        return p as *const crate::__private::SrcLoc;
    }
    let loc = Box::leak(Box::new(crate::__private::SrcLoc::__raw(
        leak_cstr(name),
        leak_cstr(function),
        leak_cstr(file),
        line,
        0,
    )));
    let p = loc as *const crate::__private::SrcLoc;
    map.insert(key, p as usize);
    p
}

/// The name of the function that invokes it ("crate::module::function"). Not API.
#[doc(hidden)]
#[macro_export]
macro_rules! __tracy_function {
    () => {{
        fn f() {}
        fn name_of<T>(_: T) -> &'static str {
            ::core::any::type_name::<T>()
        }
        let mut n = name_of(f);
        n = &n[..n.len() - 3];
        while let Some(outer) = n.strip_suffix("::{{closure}}") {
            n = outer;
        }
        n
    }};
}

/// A call site for [`Client::span`]: `span_location!()` (named after its function) or
/// `span_location!("name")`. Made once per call site.
#[macro_export]
macro_rules! span_location {
    () => {{
        static LOC: ::std::sync::atomic::AtomicPtr<$crate::tracy::SpanLocation> =
            ::std::sync::atomic::AtomicPtr::new(::std::ptr::null_mut());
        let f = $crate::__tracy_function!();
        $crate::tracy::__location(&LOC, || $crate::tracy::SpanLocation::__new(f, f, file!(), line!()))
    }};
    ($name:expr) => {{
        static LOC: ::std::sync::atomic::AtomicPtr<$crate::tracy::SpanLocation> =
            ::std::sync::atomic::AtomicPtr::new(::std::ptr::null_mut());
        let f = $crate::__tracy_function!();
        $crate::tracy::__location(&LOC, || $crate::tracy::SpanLocation::__new($name, f, file!(), line!()))
    }};
}

/// The call site in slot, made by make on first use. Not API.
#[doc(hidden)]
pub fn __location(
    slot: &'static std::sync::atomic::AtomicPtr<SpanLocation>,
    make: impl FnOnce() -> SpanLocation,
) -> &'static SpanLocation {
    let p = slot.load(Ordering::Acquire);
    if !p.is_null() {
        return unsafe { &*p };
    }
    let new = Box::into_raw(Box::new(make()));
    match slot.compare_exchange(std::ptr::null_mut(), new, Ordering::AcqRel, Ordering::Acquire) {
        Ok(_) => unsafe { &*new },
        Err(won) => {
            // Another thread made it first: the same site (interned), so drop ours.
            drop(unsafe { Box::from_raw(new) });
            unsafe { &*won }
        }
    }
}

/// A span that ends with the returned guard: `span!()` (named after its function),
/// `span!("name")`, `span!("name", 0)`. As in `tracy-client`, it panics when no [`Client`] was
/// started. A callstack depth other than a literal 0 is a compile error: mprof records no stack
/// with a span.
#[macro_export]
macro_rules! span {
    () => {
        $crate::tracy::Client::running()
            .expect("span! without a running Client")
            .span($crate::span_location!(), 0)
    };
    ($name:expr) => {
        $crate::span!($name, 0)
    };
    ($name:expr, 0) => {
        $crate::tracy::Client::running()
            .expect("span! without a running Client")
            .span($crate::span_location!($name), 0)
    };
    ($name:expr, $depth:expr) => {
        compile_error!(
            "mprof: span! with a callstack depth: mprof records no callstack with a span; use \
             span!(name), and MPROF_SAMPLE_HZ for callstack samples (docs/MIGRATING.md)"
        )
    };
}

/// A [`FrameName`] from a literal.
#[macro_export]
macro_rules! frame_name {
    ($name:literal) => {
        $crate::tracy::FrameName::__literal(concat!($name, "\0"))
    };
}

/// The end of a frame of the secondary frame set `name` (a literal).
#[macro_export]
macro_rules! secondary_frame_mark {
    ($name:literal) => {
        if let Some(c) = $crate::tracy::Client::running() {
            c.secondary_frame_mark($crate::frame_name!($name))
        }
    };
}

/// Begins a discontinuous frame `name` (a literal): `Some(Frame)`, which ends it when dropped,
/// or `None` without a running [`Client`].
#[macro_export]
macro_rules! non_continuous_frame {
    ($name:literal) => {
        $crate::tracy::Client::running().map(|c| c.non_continuous_frame($crate::frame_name!($name)))
    };
}

/// A [`PlotName`] from a literal.
#[macro_export]
macro_rules! plot_name {
    ($name:literal) => {
        $crate::tracy::PlotName::__literal(concat!($name, "\0"))
    };
}

/// Names the calling thread (a literal, or any `&str`), as `tracy_client::set_thread_name!`.
#[macro_export]
macro_rules! set_thread_name {
    ($name:expr) => {
        if let Some(c) = $crate::tracy::Client::running() {
            c.set_thread_name($name)
        }
    };
}
