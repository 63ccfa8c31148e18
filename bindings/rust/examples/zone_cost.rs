//! zone_cost: what one `zone!` (begin + end) costs from Rust while recording to a file, as a
//! ratio to two raw counter reads in the same run (the baseline bench/bench_core uses for C).
//! Prints one JSON object. Each figure is the best of 5 repetitions; quote the load average
//! with it.
//!
//! MPROF_LIB_DIR=../../build MPROF_LINK=static cargo run --release --features enable --example zone_cost [N]
//!
//! N (default 1,000,000) zones per repetition. Instruction counts, which load cannot change:
//! valgrind --tool=callgrind --toggle-collect='zone_cost::zones' zone_cost N, for two values of N.
use std::time::Instant;

#[inline(never)]
fn zones(n: u32) {
    for _ in 0..n {
        mprof::zone!("bench");
    }
}

#[cfg(target_arch = "x86_64")]
#[inline(never)]
fn two_counter_reads(n: u32) -> u64 {
    let mut acc = 0u64;
    for _ in 0..n {
        // SAFETY: rdtsc has no preconditions on x86-64.
        unsafe {
            let a = core::arch::x86_64::_rdtsc();
            let b = core::arch::x86_64::_rdtsc();
            acc = acc.wrapping_add(b.wrapping_sub(a));
        }
    }
    acc
}

#[cfg(not(target_arch = "x86_64"))]
fn two_counter_reads(n: u32) -> u64 {
    // Elsewhere a volatile read stands in for the counter: the ratio then means less.
    (0..n).map(|i| unsafe { std::ptr::read_volatile(&i) } as u64).sum()
}

fn best_ns(n: u32, mut f: impl FnMut()) -> f64 {
    let mut best = f64::MAX;
    for _ in 0..5 {
        let t = Instant::now();
        f();
        best = best.min(t.elapsed().as_secs_f64() * 1e9 / n as f64);
    }
    best
}

fn main() {
    let n: u32 = match std::env::args().nth(1) {
        None => 1_000_000,
        Some(a) => a.parse().unwrap_or_else(|_| {
            eprintln!("usage: zone_cost [N]  (N: zones per repetition)");
            std::process::exit(2)
        }),
    };
    let path = std::env::temp_dir().join(format!("zone_cost-{}.mprof", std::process::id()));
    let cfg = mprof::Config {
        capture_path: Some(path.clone()),
        listen: Some(false),
        ..Default::default()
    };
    mprof::startup(&cfg).expect("startup");
    let zone = best_ns(n, || zones(n));
    let mut sink = 0u64;
    let base = best_ns(n, || sink = sink.wrapping_add(two_counter_reads(n)));
    let lost = mprof::stats().events_lost;
    mprof::shutdown();
    let _ = std::fs::remove_file(&path);
    println!(
        "{{\"bench\": \"rust_zone\", \"enabled\": {}, \"zones\": {}, \"ns_per_zone\": {:.2}, \
         \"ns_two_counter_reads\": {:.2}, \"ratio\": {:.3}, \"events_lost\": {}, \"sink\": {}}}",
        mprof::ENABLED,
        n,
        zone,
        base,
        zone / base,
        lost,
        sink % 2
    );
}
