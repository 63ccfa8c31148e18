//! Coming from tracy-client: an engine written against tracy-client's API only
//! (tests/tracy_engine), whose Cargo.toml names this crate as its `tracy-client` with the
//! `tracy` feature, builds unchanged and records an mprof capture with the spans, frames, frame
//! sets, plots, messages, thread names and allocations it made, read back by the real
//! `mprof report --json`. Without its feature it builds and runs with no mprof symbol. What
//! does not map (a span's callstack depth, a span color) fails to compile with mprof's reason.
#![cfg(all(feature = "tracy", feature = "enable"))]

mod common;

use common::{report, temp_dir};
use std::path::{Path, PathBuf};
use std::process::Command;

fn engine_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/tracy_engine")
}

fn build(features: &str, target: &str) -> (bool, String, PathBuf) {
    let target_dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(target);
    let mut args = vec!["build", "--quiet"];
    if !features.is_empty() {
        args.push("--features");
        args.push(features);
    }
    let out = common::cargo(&engine_dir(), &target_dir, &args);
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
        target_dir.join("debug/tracy_engine"),
    )
}

/// The engine's own `key=count` lines.
fn counts(stdout: &str, key: &str) -> u64 {
    stdout
        .lines()
        .find_map(|l| l.strip_prefix(&format!("{}=", key)))
        .unwrap_or_else(|| panic!("no {} in {}", key, stdout))
        .parse()
        .unwrap()
}

#[test]
fn a_tracy_client_engine_records_the_same_spans_and_frames() {
    let (ok, err, bin) = build("tracy", "tracy-engine");
    assert!(ok, "the tracy-client engine did not build against mprof:\n{}", err);
    let dir = temp_dir("tracy-engine");
    let capture = dir.join("run.mprof");
    let out = Command::new(&bin)
        .env("MPROF_CAPTURE", &capture)
        .env("MPROF_LISTEN", "0")
        .output()
        .expect("run the engine");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let frames = counts(&stdout, "frames");
    let r = report(&capture, &["--all"]);

    let zones = r.get("zones");
    let count = |name: &str| zones.find("name", name).get("count").u64();
    assert_eq!(count("Frame"), frames);
    assert_eq!(count("Physics::step"), frames);
    assert_eq!(count("Render::draw"), frames);
    assert_eq!(count("Job"), counts(&stdout, "jobs"));
    assert_eq!(count("Load::level"), 1);
    // span!() without a name is named after its function, as tracy-client names it.
    assert_eq!(count("tracy_engine::ai"), frames);
    assert_eq!(zones.find("name", "Render::draw").get("function").str(), "render");
    assert_eq!(zones.arr().len(), 6, "unexpected zones: {:?}", zones);

    // N frame marks make N - 1 frames in mprof (the frames between marks).
    assert_eq!(r.get("frames").get("count").u64(), frames - 1);
    let sets = r.get("frame_sets");
    assert_eq!(
        sets.find("name", "Physics tick").get("count").u64(),
        counts(&stdout, "physics_ticks") - 1
    );
    let load = sets.find("name", "Load");
    assert_eq!(load.get("count").u64(), 1);
    assert_eq!(load.get("discontinuous"), &common::Json::Bool(true));

    let plots = r.get("plots");
    assert_eq!(plots.find("name", "entities").get("count").u64(), frames);
    assert_eq!(plots.find("name", "bytes").get("count").u64(), frames);
    assert_eq!(r.get("messages").get("info").u64(), counts(&stdout, "messages"));

    let threads = r.get("threads");
    threads.find("name", "main");
    threads.find("name", "worker 0");
    threads.find("name", "worker 1");

    // The profiled allocator recorded into the default heap.
    let heap = r.get("memory").get("pools").find("name", "heap");
    assert!(heap.get("allocs").u64() >= frames, "{:?}", heap);
    assert_eq!(r.get("events").get("lost").u64(), 0);
}

#[test]
fn without_its_feature_the_engine_references_no_mprof_symbol() {
    let (ok, err, bin) = build("", "tracy-engine-off");
    assert!(ok, "{}", err);
    let out = Command::new(&bin).output().expect("run");
    assert!(out.status.success());
    let nm = Command::new("nm").arg(&bin).output().expect("nm");
    let syms = String::from_utf8_lossy(&nm.stdout);
    assert!(!syms.contains("mprof_"), "the engine without `tracy` references mprof");
}

#[test]
fn what_does_not_map_fails_to_compile_with_the_reason() {
    let (ok, err, _) = build("tracy callstack", "tracy-engine-callstack");
    assert!(!ok, "span! with a callstack depth compiled");
    assert!(err.contains("mprof: span! with a callstack depth"), "{}", err);
    let (ok, err, _) = build("tracy color", "tracy-engine-color");
    assert!(!ok, "Span::emit_color compiled");
    assert!(err.contains("ZoneColorIsSetAtTheCallSite"), "{}", err);
}
