//! Builds the LD_PRELOAD library (`runtime/`, C) with its own Makefile into
//! OUT_DIR, so that a `cargo build` always has a library to find; its path
//! is compiled in as the last place `find_library` looks.

use std::env;
use std::path::PathBuf;
use std::process::Command;

fn main() {
    let manifest = PathBuf::from(env::var_os("CARGO_MANIFEST_DIR").unwrap());
    let src = manifest.join("../../runtime");
    let out = PathBuf::from(env::var_os("OUT_DIR").unwrap()).join("preload");
    println!("cargo:rerun-if-changed={}", src.join("src").display());
    println!("cargo:rerun-if-changed={}", src.join("Makefile").display());
    let status = Command::new(env::var("MAKE").unwrap_or_else(|_| "make".into()))
        .arg("-s")
        .arg("-C")
        .arg(&src)
        .arg(format!("O={}", out.display()))
        .env_remove("MAKEFLAGS")
        .status()
        .expect("cannot run make to build runtime/ (the LD_PRELOAD library): is make installed?");
    assert!(status.success(), "building runtime/ (the LD_PRELOAD library) failed");
    println!("cargo:rustc-env=SYSCLUSTER_PRELOAD_BUILT={}", out.join("libsyscluster-preload.so").display());
    println!("cargo:rustc-env=SYSCLUSTER_SOURCE_ROOT={}", manifest.join("../..").canonicalize().unwrap().display());
}
