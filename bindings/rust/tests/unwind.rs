//! A panic unwinds through zones: each zone guard ends its zone while unwinding, so the capture
//! stays balanced, and `catch_unwind` works with the unwinder libmprof's link brings in
//! (MPROF_LINK=static links libunwind, which then also provides the `_Unwind_*` functions).
#![cfg(feature = "enable")]

mod common;

fn deep(n: u32) {
    mprof::zone!("Unwind::deep");
    if n == 0 {
        panic!("unwinding through zones");
    }
    deep(n - 1);
}

#[test]
fn a_panic_ends_the_zones_it_unwinds_through() {
    let path = common::temp_dir("unwind").join("unwind.mprof");
    let cfg = mprof::Config { capture_path: Some(path.clone()), listen: Some(false), ..Default::default() };
    mprof::startup(&cfg).expect("startup");
    let r = std::panic::catch_unwind(|| {
        mprof::zone!("Unwind::outer");
        deep(4);
    });
    assert!(r.is_err());
    {
        mprof::zone!("Unwind::after");
    }
    mprof::shutdown();

    let rep = common::report(&path, &[]);
    assert_eq!(rep.get("events").get("unmatched_zone_ends").u64(), 0);
    let zones = rep.get("zones");
    assert_eq!(zones.find("name", "Unwind::outer").get("count").u64(), 1);
    assert_eq!(zones.find("name", "Unwind::deep").get("count").u64(), 5);
    assert_eq!(zones.find("name", "Unwind::after").get("count").u64(), 1);
}
