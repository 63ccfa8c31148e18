//! Finds libmprof for the `enable` feature; does nothing without it.
//!
//! Where the library is:
//!   MPROF_LIB_DIR=dir   the directory holding libmprof.so / libmprof.a (a CMake build
//!                       directory or an installed lib directory); else
//!   pkg-config          `pkg-config --libs mprof` (run as a command; PKG_CONFIG names another
//!                       binary, PKG_CONFIG_PATH finds a non-system install).
//! How it is linked: MPROF_LINK=dylib (the default: libmprof.so, which must then be found at run
//! time, e.g. through LD_LIBRARY_PATH for a build directory) or MPROF_LINK=static (libmprof.a plus
//! its private dependencies zstd, xxhash, libunwind and pthread: a binary that runs anywhere those
//! Debian libraries are installed).
//!
//! With both `shipping` and `enable` it does nothing either, so that the crate's compile-time
//! guard, not a link error, is what the build reports.
use std::env;
use std::path::Path;
use std::process::{exit, Command};

/// libmprof.a's own dependencies, as in cmake/mprof.pc.in (Libs.private).
const STATIC_DEPS: &[&str] = &["zstd", "xxhash", "unwind", "pthread"];

fn fail(msg: &str) -> ! {
    eprintln!("mprof build.rs: {}", msg);
    exit(1);
}

fn main() {
    for v in ["MPROF_LIB_DIR", "MPROF_LINK", "PKG_CONFIG", "PKG_CONFIG_PATH"] {
        println!("cargo:rerun-if-env-changed={}", v);
    }
    println!("cargo:rerun-if-changed=build.rs");
    let enable = env::var_os("CARGO_FEATURE_ENABLE").is_some();
    let shipping = env::var_os("CARGO_FEATURE_SHIPPING").is_some();
    if !enable || shipping {
        return;
    }
    let link_static = match env::var("MPROF_LINK").as_deref() {
        Err(_) | Ok("") | Ok("dylib") => false,
        Ok("static") => true,
        Ok(other) => fail(&format!(
            "MPROF_LINK={} is not understood: use MPROF_LINK=dylib (the default) or MPROF_LINK=static",
            other
        )),
    };

    if let Some(dir) = env::var_os("MPROF_LIB_DIR").filter(|d| !d.is_empty()) {
        let dir = Path::new(&dir);
        let file = if link_static { "libmprof.a" } else { "libmprof.so" };
        if !dir.join(file).exists() {
            fail(&format!(
                "MPROF_LIB_DIR={} has no {} (build libmprof with `make build`, or point \
                 MPROF_LIB_DIR at the directory that holds it)",
                dir.display(),
                file
            ));
        }
        // Relink when the library is rebuilt (cargo cannot see it change otherwise).
        println!("cargo:rerun-if-changed={}", dir.join(file).display());
        println!("cargo:rustc-link-search=native={}", dir.display());
        if link_static {
            println!("cargo:rustc-link-lib=static=mprof");
            for lib in STATIC_DEPS {
                println!("cargo:rustc-link-lib=dylib={}", lib);
            }
        } else {
            println!("cargo:rustc-link-lib=dylib=mprof");
        }
        return;
    }

    let pkg_config = env::var("PKG_CONFIG").unwrap_or_else(|_| "pkg-config".to_string());
    let mut cmd = Command::new(&pkg_config);
    if link_static {
        cmd.arg("--static");
    }
    cmd.args(["--libs", "mprof"]);
    let out = match cmd.output() {
        Ok(out) => out,
        Err(e) => fail(&format!(
            "the `enable` feature needs libmprof, and `{}` could not be run ({}): install \
             pkg-config and libmprof, or set MPROF_LIB_DIR to the directory of libmprof.so",
            pkg_config, e
        )),
    };
    if !out.status.success() {
        fail(&format!(
            "`{} --libs mprof` failed: {}install libmprof (cmake --install), set PKG_CONFIG_PATH \
             to its lib/pkgconfig directory, or set MPROF_LIB_DIR",
            pkg_config,
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    let libs = String::from_utf8_lossy(&out.stdout).into_owned();
    for flag in libs.split_whitespace() {
        if let Some(dir) = flag.strip_prefix("-L") {
            println!("cargo:rustc-link-search=native={}", dir);
        } else if let Some(lib) = flag.strip_prefix("-l") {
            let kind = if link_static && lib == "mprof" { "static" } else { "dylib" };
            println!("cargo:rustc-link-lib={}={}", kind, lib);
        } else if flag == "-pthread" {
            println!("cargo:rustc-link-lib=dylib=pthread");
        } else {
            println!("cargo:warning=mprof: ignoring pkg-config flag {}", flag);
        }
    }
}
