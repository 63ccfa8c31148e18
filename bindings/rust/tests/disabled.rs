//! Without `enable`: every macro compiles, runs nothing and never evaluates its arguments; the
//! wrappers are plain `std` locks and a plain forwarding allocator; startup succeeds and
//! nothing records.
#![cfg(not(feature = "enable"))]

use std::alloc::{GlobalAlloc, Layout};
use std::cell::Cell;

static POOL: mprof::Allocator = mprof::allocator!("disabled-pool");
static M: mprof::Mutex<u32> = mprof::mutex!("M", 1);
static RW: mprof::RwLock<u32> = mprof::rwlock!("RW", 2);

thread_local!(static EVALUATED: Cell<u32> = Cell::new(0));

fn touch() -> u32 {
    EVALUATED.with(|e| e.set(e.get() + 1));
    7
}

#[test]
fn macros_never_evaluate_their_arguments() {
    assert!(!mprof::ENABLED);
    mprof::zone!("z");
    mprof::zone!("z", touch());
    mprof::zone_text!(format!("{}", touch()));
    mprof::zone_value!(touch());
    mprof::frame_mark!();
    mprof::frame_mark!("named");
    mprof::plot!("p", touch());
    mprof::plot_int!("p", touch());
    mprof::message!(mprof::Level::Warn, "x {}", touch());
    mprof::thread_name!(format!("t{}", touch()));
    mprof::app_info!("a {}", touch());
    mprof::fiber_enter!("f");
    mprof::fiber_leave!();
    assert_eq!(EVALUATED.with(|e| e.get()), 0);
}

#[test]
fn lifecycle_and_wrappers_work_without_recording() {
    assert!(mprof::startup(&mprof::Config::default()).is_ok());
    assert!(!mprof::is_recording());
    assert_eq!(mprof::stats(), mprof::Stats::default());
    mprof::flush();
    mprof::shutdown();

    *M.lock().unwrap() += 1;
    assert_eq!(*M.try_lock().unwrap(), 2);
    {
        let _held = M.lock().unwrap();
        assert!(M.try_lock().is_err());
    }
    assert_eq!(*RW.read().unwrap() + *RW.try_read().unwrap(), 4);
    *RW.write().unwrap() = 5;
    assert_eq!(*RW.try_write().unwrap(), 5);

    unsafe {
        let l = Layout::from_size_align(64, 8).unwrap();
        let p = POOL.alloc(l);
        assert!(!p.is_null());
        let p = POOL.realloc(p, l, 128);
        assert!(!p.is_null());
        POOL.dealloc(p, Layout::from_size_align(128, 8).unwrap());
    }
}
