//! End to end: a Rust program instrumented with every macro writes a capture through libmprof,
//! and `mprof report --json` (the real binary) reads exact counts back: zones with their
//! colors and call sites, frames and frame sets, plots, messages per level, the named pool of
//! the allocator, contention of the Mutex and RwLock wrappers, and fiber runs.
#![cfg(feature = "enable")]

mod common;

use common::{report, temp_dir};
use std::alloc::{GlobalAlloc, Layout};
use std::sync::mpsc;
use std::time::{Duration, Instant};

#[global_allocator]
static HEAP: mprof::Allocator = mprof::allocator!("rust-test-heap");
static POOL: mprof::Allocator = mprof::allocator!("rust-pool");
static JOBS: mprof::Mutex<Vec<u32>> = mprof::mutex!("JobQueue", Vec::new());
static WORLD: mprof::RwLock<u64> = mprof::rwlock!("World", 0);

const FRAMES: u64 = 12;
const SOLVES: u64 = 3;

fn physics() {
    mprof::zone!("Physics::step", mprof::color::PHYSICS);
    for _ in 0..SOLVES {
        mprof::zone!("Physics::solve");
    }
}

/// The kernel's id of the calling thread.
fn tid() -> u32 {
    let link = std::fs::read_link("/proc/thread-self").expect("/proc/thread-self");
    link.file_name().unwrap().to_str().unwrap().parse().unwrap()
}

/// Waits until thread tid sleeps (state S): the worker below sleeps only inside the contended
/// lock, so this makes the contention certain instead of likely. Fails after 60 s.
fn wait_until_sleeping(tid: u32) {
    let stat = format!("/proc/self/task/{}/stat", tid);
    let start = Instant::now();
    loop {
        let s = std::fs::read_to_string(&stat).expect("task stat");
        // "tid (comm) S ...": the state follows the last ')'.
        let state = s[s.rfind(')').unwrap() + 1..].trim_start().chars().next();
        if state == Some('S') {
            return;
        }
        assert!(start.elapsed() < Duration::from_secs(60), "worker never blocked on the lock");
        std::thread::sleep(Duration::from_millis(1));
    }
}

#[test]
fn a_capture_reads_back_with_exact_counts() {
    let dir = temp_dir("capture");
    let path = dir.join("run.mprof");
    let cfg = mprof::Config {
        capture_path: Some(path.clone()),
        listen: Some(false),
        app_name: Some("rust-capture-test".to_string()),
        ..Default::default()
    };
    mprof::startup(&cfg).expect("startup");
    assert!(mprof::is_recording());
    let again = mprof::startup(&cfg).unwrap_err();
    assert_eq!(again.name(), "MPROF_ERR_STATE");
    assert_eq!(again.code(), 4);

    mprof::thread_name!("rust-main");
    mprof::app_info!("build {} of the capture test", 42);
    let mut update_line = 0;
    for f in 0..FRAMES {
        {
            mprof::zone!("Frame::update", mprof::color::AI);
            update_line = line!() - 1;
            mprof::zone_value!(f);
            mprof::zone_text!(format!("frame {}", f));
            physics();
        }
        mprof::plot!("frame_index", f);
        mprof::plot_int!("entities", f * 10);
        if f % 3 == 0 {
            mprof::frame_mark!("physics_tick");
        }
        mprof::frame_mark!();
    }

    mprof::message!(mprof::Level::Trace, "trace");
    mprof::message!(mprof::Level::Debug, "debug");
    mprof::message!(mprof::Level::Info, "info");
    mprof::message!(mprof::Level::Warn, "warn");
    mprof::message!(mprof::Level::Warn, "warn {} of {}", 2, 2);
    mprof::message!(mprof::Level::Error, "error");
    mprof::message!(mprof::Level::Fatal, "fatal");

    // The named pool: 5 blocks of 1000 bytes, one grown to 3000, all freed.
    unsafe {
        let l = Layout::from_size_align(1000, 8).unwrap();
        let mut blocks: Vec<*mut u8> = (0..5).map(|_| POOL.alloc(l)).collect();
        blocks[0] = POOL.realloc(blocks[0], l, 3000);
        POOL.dealloc(blocks[0], Layout::from_size_align(3000, 8).unwrap());
        for &b in &blocks[1..] {
            POOL.dealloc(b, l);
        }
    }

    // Contention: the worker's try_lock fails (TRY_FAILED), then its lock waits (WAIT) until
    // the main thread releases.
    let held = JOBS.lock().unwrap();
    let (tx, rx) = mpsc::channel();
    let worker = std::thread::spawn(move || {
        mprof::thread_name!("rust-worker");
        assert!(JOBS.try_lock().is_err());
        tx.send(tid()).unwrap();
        JOBS.lock().unwrap().push(1);
    });
    wait_until_sleeping(rx.recv().unwrap());
    drop(held);
    worker.join().unwrap();
    assert_eq!(*JOBS.lock().unwrap(), vec![1]);
    *WORLD.write().unwrap() += 1;
    assert_eq!(*WORLD.read().unwrap() + *WORLD.read().unwrap(), 2);

    // Async spans: guards begun here, moved to another thread and dropped there (a task that an
    // executor moves between workers), overlapping; one with a name built at run time, and one
    // pair begun and ended without a guard.
    let spans: Vec<mprof::AsyncSpan> = (0..5u64)
        .map(|i| {
            if i == 4 {
                mprof::async_span!("asset loads", i, name = format!("texture {}", i))
            } else {
                mprof::async_span!("asset loads", i, "texture")
            }
        })
        .collect();
    let carrier = std::thread::spawn(move || drop(spans));
    mprof::async_begin!("jobs", 9, "bake");
    carrier.join().unwrap();
    mprof::async_end!("jobs", 9);

    for _ in 0..3 {
        mprof::fiber_enter!("loader");
        {
            mprof::zone!("Loader::chunk", mprof::color::IO);
        }
        mprof::fiber_leave!();
    }

    let st = mprof::stats();
    mprof::shutdown();
    assert!(!mprof::is_recording());
    assert_eq!(st.events_lost, 0);
    // The worker has exited; the library lists threads it still holds, and the collector may
    // already have reaped the worker's (the report below checks that rust-worker recorded).
    assert!(st.threads >= 1);

    let r = report(&path, &["--all"]);
    assert_eq!(r.get("capture").get("app").str(), "rust-capture-test");
    assert_eq!(r.get("capture").get("complete"), &common::Json::Bool(true));
    assert_eq!(r.get("events").get("lost").u64(), 0);
    assert_eq!(r.get("events").get("unmatched_zone_ends").u64(), 0);

    // Zones: exact counts, the C colors, and each call site's module, file and line.
    let zones = r.get("zones");
    let update = zones.find("name", "Frame::update");
    assert_eq!(update.get("count").u64(), FRAMES);
    assert_eq!(update.get("color").str(), "#d63a3a");
    assert_eq!(update.get("function").str(), "capture");
    assert_eq!(update.get("file").str(), "tests/capture.rs");
    assert_eq!(update.get("line").u64(), update_line as u64);
    let step = zones.find("name", "Physics::step");
    assert_eq!(step.get("count").u64(), FRAMES);
    assert_eq!(step.get("color").str(), "#2fa84f");
    let solve = zones.find("name", "Physics::solve");
    assert_eq!(solve.get("count").u64(), FRAMES * SOLVES);
    assert_eq!(solve.get("color").str(), "#000000");
    assert_eq!(zones.find("name", "Loader::chunk").get("count").u64(), 3);
    assert_eq!(zones.arr().len(), 4);

    // Frames are the intervals between marks: 12 marks, 11 frames; physics_tick marked 4 times.
    assert_eq!(r.get("frames").get("count").u64(), FRAMES - 1);
    let sets = r.get("frame_sets");
    assert_eq!(sets.find("name", "main").get("count").u64(), FRAMES - 1);
    assert_eq!(sets.find("name", "physics_tick").get("count").u64(), 3);

    let plots = r.get("plots");
    let index = plots.find("name", "frame_index");
    assert_eq!(index.get("count").u64(), FRAMES);
    assert_eq!(index.get("max").num(), (FRAMES - 1) as f64);
    let entities = plots.find("name", "entities");
    assert_eq!(entities.get("count").u64(), FRAMES);
    assert_eq!(entities.get("last").num(), ((FRAMES - 1) * 10) as f64);

    let m = r.get("messages");
    for (level, n) in [("trace", 1), ("debug", 1), ("info", 1), ("warn", 2), ("error", 1), ("fatal", 1)] {
        assert_eq!(m.get(level).u64(), n, "{} messages", level);
    }
    assert_eq!(m.get("total").u64(), 7);

    let threads = r.get("threads");
    threads.find("name", "rust-main");
    assert_eq!(threads.find("name", "rust-worker").get("zones").u64(), 0);

    // The named pool: 5 allocations and the grown block's new one; 6 frees; nothing live.
    let pools = r.get("memory").get("pools");
    let pool = pools.find("name", "rust-pool");
    assert_eq!(pool.get("allocs").u64(), 6);
    assert_eq!(pool.get("frees").u64(), 6);
    assert_eq!(pool.get("bytes_allocated").u64(), 5 * 1000 + 3000);
    assert_eq!(pool.get("live_bytes").u64(), 0);
    assert_eq!(pool.get("peak_bytes").u64(), 4 * 1000 + 3000);
    assert_eq!(pool.get("unmatched_frees").u64(), 0);
    // The global allocator's pool saw the allocations made while recording.
    assert!(pools.find("name", "rust-test-heap").get("allocs").u64() > 0);

    // Locks: main's lock, the worker's contended lock, the final check; one failed try_lock.
    let locks = r.get("locks");
    let jobs = locks.find("name", "JobQueue");
    assert_eq!(jobs.get("kind").str(), "mutex");
    assert_eq!(jobs.get("file").str(), "tests/capture.rs");
    assert_eq!(jobs.get("acquisitions").u64(), 3);
    assert_eq!(jobs.get("contended").u64(), 1);
    assert_eq!(jobs.get("try_failed").u64(), 1);
    assert_eq!(jobs.get("waiting_threads").find("name", "rust-worker").get("waits").u64(), 1);
    let world = locks.find("name", "World");
    assert_eq!(world.get("kind").str(), "rwlock");
    assert_eq!(world.get("acquisitions").u64(), 3);
    assert_eq!(world.get("shared_acquisitions").u64(), 2);
    assert_eq!(world.get("contended").u64(), 0);

    let asyncs = r.get("async");
    let loads = asyncs.find("track", "asset loads");
    assert_eq!(loads.get("count").u64(), 5);
    assert_eq!(loads.get("open_at_end").u64(), 0);
    assert_eq!(loads.get("unmatched_ends").u64(), 0);
    assert_eq!(asyncs.find("track", "jobs").get("count").u64(), 1);

    let loader = r.get("fibers").find("name", "loader");
    assert_eq!(loader.get("runs").u64(), 3);
    assert_eq!(loader.get("zones").find("name", "Loader::chunk").get("count").u64(), 3);
}

#[test]
fn the_mirrored_structs_have_the_c_sizes() {
    for (c, rust) in mprof::__private::layout_sizes().iter() {
        assert_eq!(c, rust);
    }
}

#[test]
fn a_config_string_with_a_nul_is_rejected() {
    let cfg = mprof::Config { app_name: Some("a\0b".to_string()), ..Default::default() };
    let e = mprof::startup(&cfg).unwrap_err();
    assert_eq!(e.name(), "MPROF_ERR_INVALID");
    assert_eq!(e.to_string(), "mprof: invalid argument (MPROF_ERR_INVALID)");
}
