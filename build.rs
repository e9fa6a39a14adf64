//! Builds `syscluster`, the command users type — a small static C program
//! (preload/launcher/launcher.c, built by preload/Makefile) that runs the
//! plainest `syscluster run` command lines itself and `exec`s the full
//! CLI, `syscluster-cli`, for everything else — and puts it beside
//! `syscluster-cli` in cargo's output directory (target/PROFILE/), where
//! it finds it, as it finds it installed (`make install`).  Why C and not
//! a Rust binary: the launcher's comment and docs/RUNTIME.md, "Start-up".

use std::env;
use std::path::PathBuf;
use std::process::Command;

fn main() {
    let root = PathBuf::from(env::var_os("CARGO_MANIFEST_DIR").unwrap());
    let preload = root.join("preload");
    for f in ["launcher", "src/interposable.c", "src/interposable.h", "src/sys.h", "Makefile"] {
        println!("cargo:rerun-if-changed={}", preload.join(f).display());
    }
    let status = Command::new(env::var("MAKE").unwrap_or_else(|_| "make".into()))
        .arg("-s")
        .arg("-C")
        .arg(&preload)
        .arg("build/syscluster")
        .env_remove("MAKEFLAGS")
        .status()
        .expect("cannot run make to build the syscluster launcher (preload/launcher): is make installed?");
    assert!(status.success(), "building the syscluster launcher (preload/launcher) failed");
    let built = preload.join("build/syscluster");
    println!("cargo:rerun-if-changed={}", built.display());
    // OUT_DIR is target/PROFILE/build/syscluster-HASH/out.
    let out = PathBuf::from(env::var_os("OUT_DIR").unwrap());
    let profile_dir = out.ancestors().nth(3).expect("OUT_DIR is target/PROFILE/build/PKG/out").to_path_buf();
    let dest = profile_dir.join("syscluster");
    let tmp = profile_dir.join(".syscluster.tmp");
    std::fs::copy(&built, &tmp).expect("copy the launcher into the output directory");
    std::fs::rename(&tmp, &dest).expect("put the launcher beside syscluster-cli");
}
