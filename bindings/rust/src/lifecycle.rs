//! Start-up, shutdown, configuration and counters: `mprof_startup`, `mprof_shutdown`,
//! `mprof_config` and `mprof_stats` of include/mprof/mprof.h.
//!
//! Without the `enable` feature these do nothing: [`startup`] returns `Ok(())`,
//! [`is_recording`] is false and [`stats`] are zero, so a shipping build can keep its calls.
use std::fmt;
use std::path::PathBuf;

/// Start-up configuration. `Config::default()` means every default (the C
/// `mprof_startup(&(mprof_config){0})`); environment variables (docs/API.md) override each field.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Config {
    /// Write the capture to this file; default none (env `MPROF_CAPTURE`). Parent directories
    /// are created.
    pub capture_path: Option<PathBuf>,
    /// Cap on buffered, not yet written events in bytes; 0 = the default 256 MiB
    /// (env `MPROF_MEMORY_MIB`). Past it events are dropped and counted.
    pub memory_limit_bytes: usize,
    /// zstd level 1..19; 0 = the default 1 (env `MPROF_ZSTD_LEVEL`).
    pub compression_level: i32,
    /// How often the collector drains the thread buffers; 0 = the default 2 ms.
    pub flush_interval_ms: u32,
    /// Uncompressed bytes per capture chunk; 0 = the default 1 MiB.
    pub chunk_bytes: u32,
    /// Check that the CPU counter is invariant; `None` = the default (on).
    pub invariant_check: Option<bool>,
    /// Process name in the capture; default the program name.
    pub app_name: Option<String>,
    /// Listen for `mprof capture`; `None` = the default (on when there is no capture_path;
    /// env `MPROF_LISTEN`).
    pub listen: Option<bool>,
    /// Listening address; default "127.0.0.1" (env `MPROF_ADDRESS`).
    pub listen_address: Option<String>,
    /// Listening port; 0 = the default 8086 (env `MPROF_PORT`).
    pub listen_port: u16,
    /// Seconds of events kept in memory for captures that start late; 0 = the default 5,
    /// negative = none (env `MPROF_HISTORY_SECONDS`).
    pub history_seconds: f64,
    /// Print start/stop lines on stderr; `None` = the default (off; env `MPROF_VERBOSE`).
    pub verbose: Option<bool>,
}

/// The C `mprof_config`, field for field.
#[repr(C)]
#[cfg_attr(not(feature = "enable"), allow(dead_code))]
pub(crate) struct CConfig {
    capture_path: *const std::os::raw::c_char,
    memory_limit_bytes: usize,
    compression_level: std::os::raw::c_int,
    flush_interval_ms: u32,
    chunk_bytes: u32,
    invariant_check: std::os::raw::c_int,
    app_name: *const std::os::raw::c_char,
    listen: std::os::raw::c_int,
    listen_address: *const std::os::raw::c_char,
    listen_port: u16,
    history_seconds: f64,
    verbose: std::os::raw::c_int,
}

/// Counters of the running profiler: the C `mprof_stats`, field for field.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// Events taken from thread buffers by the collector.
    pub events_recorded: u64,
    /// Events dropped because the memory cap was reached.
    pub events_lost: u64,
    /// Uncompressed capture bytes produced.
    pub bytes_raw: u64,
    /// Bytes written to the file sink.
    pub bytes_written: u64,
    /// Capture chunks written.
    pub chunks_written: u64,
    /// Bytes in thread blocks not yet collected.
    pub buffered_bytes: u64,
    /// The highest buffered_bytes so far.
    pub peak_buffered_bytes: u64,
    /// Threads that have recorded.
    pub threads: u32,
    /// Live sessions that ended because the peer vanished.
    pub sessions_dropped: u32,
    /// GPU zones not recorded: query ids exhausted.
    pub gpu_queries_lost: u64,
}

/// A failed [`startup`]: the C `mprof_result`, with its name and message.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Error {
    code: i32,
}

/// MPROF_ERR_INVALID: the code of a config string with a NUL byte inside.
const ERR_INVALID: i32 = 1;

impl Error {
    /// The C result code (`MPROF_ERR_STATE` is 4, for instance).
    pub fn code(&self) -> i32 {
        self.code
    }

    /// The result's name, e.g. "MPROF_ERR_STATE".
    pub fn name(&self) -> &'static str {
        #[cfg(feature = "enable")]
        {
            c_str(unsafe { crate::sys::mprof_result_name(self.code) })
        }
        #[cfg(not(feature = "enable"))]
        {
            "MPROF_ERR_UNSUPPORTED"
        }
    }

    /// The result's message, e.g. "call not valid in the current state".
    pub fn message(&self) -> &'static str {
        #[cfg(feature = "enable")]
        {
            c_str(unsafe { crate::sys::mprof_result_str(self.code) })
        }
        #[cfg(not(feature = "enable"))]
        {
            "not supported on this platform or build"
        }
    }
}

/// A static C string from libmprof's tables.
#[cfg(feature = "enable")]
fn c_str(p: *const std::os::raw::c_char) -> &'static str {
    if p.is_null() {
        return "";
    }
    unsafe { std::ffi::CStr::from_ptr(p) }.to_str().unwrap_or("")
}

impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({})", self.name(), self.message())
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "mprof: {} ({})", self.message(), self.name())
    }
}

impl std::error::Error for Error {}

#[cfg(feature = "enable")]
fn toggle(v: Option<bool>) -> std::os::raw::c_int {
    match v {
        None => 0,
        Some(true) => 1,
        Some(false) => 2,
    }
}

/// A config string as a C string that lives for the rest of the process: libmprof keeps the
/// pointers of its config (the capture path, the app name) while it runs and after. Startup is
/// called once or a few times per process, so these few bytes are deliberately leaked.
#[cfg(feature = "enable")]
fn leak_c(bytes: Option<Vec<u8>>) -> Result<*const std::os::raw::c_char, Error> {
    match bytes {
        None => Ok(std::ptr::null()),
        Some(b) => match std::ffi::CString::new(b) {
            Ok(c) => Ok(Box::leak(c.into_boxed_c_str()).as_ptr()),
            Err(_) => Err(Error { code: ERR_INVALID }),
        },
    }
}

#[cfg(feature = "enable")]
fn path_bytes(p: &std::path::Path) -> Vec<u8> {
    #[cfg(unix)]
    {
        use std::os::unix::ffi::OsStrExt;
        p.as_os_str().as_bytes().to_vec()
    }
    #[cfg(not(unix))]
    {
        p.to_string_lossy().into_owned().into_bytes()
    }
}

/// Starts the profiler with cfg. Main thread, once, before the first event: the first event
/// starts the profiler with the defaults otherwise, after which this returns `MPROF_ERR_STATE`,
/// as does a second call without [`shutdown`]. On failure nothing is started; a string with a
/// NUL byte inside gives `MPROF_ERR_INVALID` without calling libmprof.
pub fn startup(cfg: &Config) -> Result<(), Error> {
    #[cfg(feature = "enable")]
    {
        // Validate every string before leaking any.
        let strings = [
            cfg.capture_path.as_deref().map(path_bytes),
            cfg.app_name.as_ref().map(|s| s.as_bytes().to_vec()),
            cfg.listen_address.as_ref().map(|s| s.as_bytes().to_vec()),
        ];
        if strings.iter().flatten().any(|b| b.contains(&0)) {
            return Err(Error { code: ERR_INVALID });
        }
        let [capture_path, app_name, listen_address] = strings;
        let c = CConfig {
            capture_path: leak_c(capture_path)?,
            memory_limit_bytes: cfg.memory_limit_bytes,
            compression_level: cfg.compression_level,
            flush_interval_ms: cfg.flush_interval_ms,
            chunk_bytes: cfg.chunk_bytes,
            invariant_check: toggle(cfg.invariant_check),
            app_name: leak_c(app_name)?,
            listen: toggle(cfg.listen),
            listen_address: leak_c(listen_address)?,
            listen_port: cfg.listen_port,
            history_seconds: cfg.history_seconds,
            verbose: toggle(cfg.verbose),
        };
        match unsafe { crate::sys::mprof_startup(&c) } {
            0 => Ok(()),
            code => Err(Error { code }),
        }
    }
    #[cfg(not(feature = "enable"))]
    {
        let _ = cfg;
        let _ = ERR_INVALID;
        Ok(())
    }
}

/// Flushes every thread's events, finalises the capture and stops the collector. Safe to call
/// when not started. The thread that called [`startup`].
pub fn shutdown() {
    #[cfg(feature = "enable")]
    unsafe {
        crate::sys::mprof_shutdown()
    }
}

/// Writes everything recorded so far (blocks until written). Any thread.
pub fn flush() {
    #[cfg(feature = "enable")]
    unsafe {
        crate::sys::mprof_flush()
    }
}

/// Whether events are being recorded (a capture or the history ring is active). Any thread.
#[inline]
pub fn is_recording() -> bool {
    #[cfg(feature = "enable")]
    {
        unsafe { crate::sys::mprof_is_recording() != 0 }
    }
    #[cfg(not(feature = "enable"))]
    {
        false
    }
}

/// The current counters. Any thread.
pub fn stats() -> Stats {
    #[cfg(feature = "enable")]
    {
        let mut s = Stats::default();
        unsafe { crate::sys::mprof_get_stats(&mut s) }
        s
    }
    #[cfg(not(feature = "enable"))]
    {
        Stats::default()
    }
}
