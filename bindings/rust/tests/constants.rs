//! The crate's constants are the C header's: each MPROF_COLOR_* and MPROF_LOG_* value of
//! include/mprof/mprof.h, read from the header itself, equals its Rust counterpart.
use std::collections::HashMap;

/// `#define NAME VALUE` and `NAME = VALUE,` lines of mprof.h, as numbers.
fn header_values() -> HashMap<String, u64> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../include/mprof/mprof.h");
    let text = std::fs::read_to_string(path).expect("include/mprof/mprof.h");
    let mut m = HashMap::new();
    for line in text.lines() {
        let line = line.trim();
        let (name, rest) = if let Some(def) = line.strip_prefix("#define ") {
            let mut it = def.splitn(2, char::is_whitespace);
            (it.next().unwrap_or(""), it.next().unwrap_or("").trim())
        } else if let Some(eq) = line.find(" = ") {
            (&line[..eq], line[eq + 3..].trim())
        } else {
            continue;
        };
        let v = rest.split(|c: char| c == ',' || c.is_whitespace()).next().unwrap_or("");
        let v = v.trim_end_matches('u');
        let parsed = match v.strip_prefix("0x") {
            Some(hex) => u64::from_str_radix(hex, 16).ok(),
            None => v.parse::<u64>().ok(),
        };
        if let Some(n) = parsed {
            m.insert(name.to_string(), n);
        }
    }
    m
}

#[test]
fn colors_equal_the_c_ones() {
    let h = header_values();
    let rust = [
        ("DEFAULT", mprof::color::DEFAULT),
        ("RENDERER", mprof::color::RENDERER),
        ("PHYSICS", mprof::color::PHYSICS),
        ("AI", mprof::color::AI),
        ("AUDIO", mprof::color::AUDIO),
        ("NETWORK", mprof::color::NETWORK),
        ("IO", mprof::color::IO),
        ("JOBS", mprof::color::JOBS),
    ];
    for (name, value) in rust {
        let c = h.get(&format!("MPROF_COLOR_{}", name)).copied();
        assert_eq!(c, Some(value as u64), "MPROF_COLOR_{}", name);
    }
    // Every C color has a Rust one.
    let n_c = h.keys().filter(|k| k.starts_with("MPROF_COLOR_")).count();
    assert_eq!(n_c, rust.len());
}

#[test]
fn levels_equal_the_c_ones() {
    use mprof::Level::*;
    let h = header_values();
    for (name, level) in
        [("TRACE", Trace), ("DEBUG", Debug), ("INFO", Info), ("WARN", Warn), ("ERROR", Error), ("FATAL", Fatal)]
    {
        assert_eq!(h.get(&format!("MPROF_LOG_{}", name)).copied(), Some(level as u64), "{}", name);
    }
}
