//! The compile-time guard: `shipping` together with `enable` does not compile, and says why
//! with exactly the documented message; `shipping` alone compiles. Checked on this crate and on
//! the example engine, whose own `shipping` and `profiling` features forward to this crate's
//! (the shape of the seed's engine crates: `cargo check --features 'shipping <profiling>'`).
mod common;

use std::path::Path;

const GUARD: &str = "mprof: shipping builds must not enable profiling (feature \"enable\"); instrumentation is stripped by leaving \"enable\" off.";

fn check(manifest_dir: &Path, target: &str, features: &str) -> std::process::Output {
    let target_dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(target);
    common::cargo(manifest_dir, &target_dir, &["check", "--quiet", "--features", features])
}

fn assert_guard(out: &std::process::Output, what: &str) {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{} compiled", what);
    assert!(
        stderr.contains(&format!("error: {}", GUARD)),
        "{}: the guard message is not in stderr:\n{}",
        what,
        stderr
    );
}

#[test]
fn shipping_with_enable_is_a_compile_error_with_the_message() {
    let crate_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let out = check(crate_dir, "guard-crate", "shipping enable");
    assert_guard(&out, "mprof with --features 'shipping enable'");

    let out = check(crate_dir, "guard-crate", "shipping");
    assert!(
        out.status.success(),
        "mprof with --features shipping must compile:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn the_engine_inherits_the_guard() {
    let engine = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/rust_engine");
    let out = check(&engine, "guard-engine", "shipping profiling");
    assert_guard(&out, "rust_engine with --features 'shipping profiling'");

    let out = check(&engine, "guard-engine", "shipping");
    assert!(
        out.status.success(),
        "rust_engine with --features shipping must compile:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
