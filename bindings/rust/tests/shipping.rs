//! A shipping build references no mprof symbol: the example engine built with
//! `--features shipping` has no libmprof function in its symbol table (defined or undefined)
//! and no libmprof in its dynamic section. As a control, the same engine built with
//! `--features profiling` (when this test runs with `enable`, so that libmprof is at hand) does
//! reference the zone entry point, so the check can tell the difference.
mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

fn build_engine(features: &str, target: &str) -> PathBuf {
    let engine = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/rust_engine");
    let target_dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(target);
    let out = common::cargo(&engine, &target_dir, &["build", "--quiet", "--features", features]);
    assert!(
        out.status.success(),
        "rust_engine --features {} did not build:\n{}",
        features,
        String::from_utf8_lossy(&out.stderr)
    );
    target_dir.join("debug/rust_engine")
}

/// Every symbol name in bin's symbol tables (static and dynamic).
fn symbols(bin: &Path) -> Vec<String> {
    let nm = std::env::var("NM").unwrap_or_else(|_| "nm".to_string());
    let mut names = Vec::new();
    let plain: &[&str] = &[];
    for args in [plain, &["-D"]] {
        let out = Command::new(&nm).args(args).arg(bin).output().expect("cannot run nm");
        assert!(out.status.success(), "nm {:?} failed on {}", args, bin.display());
        for line in String::from_utf8_lossy(&out.stdout).lines() {
            if let Some(name) = line.split_whitespace().last() {
                names.push(name.to_string());
            }
        }
    }
    names
}

/// libmprof's C symbols: its API (mprof_*) and its internal entry points (mprof__*).
fn libmprof_symbols(names: &[String]) -> Vec<&String> {
    names.iter().filter(|n| n.starts_with("mprof_")).collect()
}

fn needs_libmprof(bin: &Path) -> bool {
    let out = Command::new("readelf").arg("-d").arg(bin).output().expect("cannot run readelf");
    String::from_utf8_lossy(&out.stdout).contains("libmprof")
}

#[test]
fn a_shipping_build_references_no_mprof_symbol() {
    let bin = build_engine("shipping", "shipping-engine");
    let names = symbols(&bin);
    assert!(names.len() > 100, "nm found too few symbols in {}", bin.display());
    let found = libmprof_symbols(&names);
    assert!(found.is_empty(), "the shipping build references libmprof: {:?}", found);
    assert!(!needs_libmprof(&bin), "the shipping build needs libmprof.so");
    // And it runs, with profiling off.
    let out = Command::new(&bin).args(["--frames", "3"]).output().unwrap();
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).contains("profiling off"));
}

#[cfg(feature = "enable")]
#[test]
fn a_profiling_build_does_reference_libmprof() {
    let bin = build_engine("profiling", "profiling-engine");
    let names = symbols(&bin);
    assert!(
        names.iter().any(|n| n == "mprof_ffi_zone_begin"),
        "the profiling build does not reference mprof_ffi_zone_begin"
    );
}
