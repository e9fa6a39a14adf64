//! Builds the LD_PRELOAD library (`preload/`, C) with its own Makefile, in
//! its one place, `preload/build/`: the library a `cargo build` finds is the
//! one `make -C preload test` tests and `make install` installs.  Its path
//! is compiled in as the last place `find_library` looks.

use std::env;
use std::path::PathBuf;
use std::process::Command;

fn main() {
    let manifest = PathBuf::from(env::var_os("CARGO_MANIFEST_DIR").unwrap());
    let src = manifest.join("../../preload");
    println!("cargo:rerun-if-changed={}", src.join("src").display());
    println!("cargo:rerun-if-changed={}", src.join("Makefile").display());
    let status = Command::new(env::var("MAKE").unwrap_or_else(|_| "make".into()))
        .arg("-s")
        .arg("-C")
        .arg(&src)
        // The library only: the launcher is the root package's (build.rs).
        .arg("build/libsyscluster-preload.so")
        .env_remove("MAKEFLAGS")
        .status()
        .expect("cannot run make to build preload/ (the LD_PRELOAD library): is make installed?");
    assert!(status.success(), "building preload/ (the LD_PRELOAD library) failed");
    let built = src.canonicalize().unwrap().join("build/libsyscluster-preload.so");
    // Built again if removed (`make clean`), and relinked when rebuilt.
    println!("cargo:rerun-if-changed={}", built.display());
    println!("cargo:rustc-env=SYSCLUSTER_PRELOAD_BUILT={}", built.display());
}
