//! `syscluster cc`: a drop-in C compiler — clang-19 with the syscluster
//! pass plugin and, when it links, libmulticall.
//!
//! Every argument after syscluster's own options goes to clang untouched.
//! Without --plan, clang runs exactly as it would alone.

use crate::flags::CcArgs;
use crate::Failure;
use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::process::Command;

/// What the plugin needs beside the compiler: the pass, and the archives a
/// rebuilt program links with (the loop the pass calls, libmulticall).
struct Toolchain {
    plugin: PathBuf,
    runtime: PathBuf,
    multicall: PathBuf,
}

pub fn run(a: CcArgs) -> Result<i32, Failure> {
    let clang = clang();
    let mut args: Vec<OsString> = Vec::new();
    if let Some(plan) = &a.plan {
        syscluster_model::plan::Plan::load(plan).map_err(Failure::new)?;
        let plan = std::fs::canonicalize(plan)
            .map_err(|e| Failure::new(format!("cannot read plan {}: {e}", plan.display())))?;
        let tc = toolchain()?;
        let plugin = tc.plugin.as_os_str().to_owned();
        // -Xclang -load makes the plugin's -mllvm option known to clang's
        // option parser; -fpass-plugin puts the pass in the pipeline.
        args.push(cat("-fpass-plugin=", &plugin));
        args.extend(["-Xclang".into(), "-load".into(), "-Xclang".into(), plugin]);
        args.extend(["-mllvm".into(), cat("-syscluster-plan=", plan.as_os_str())]);
        if let Some(cal) = &a.calibration {
            // Read now, so that a missing file is an error here, not a remark per unit.
            std::fs::metadata(cal)
                .map_err(|e| Failure::new(format!("cc: cannot read calibration {}: {e}", cal.display())))?;
            let cal = std::path::absolute(cal).unwrap_or_else(|_| cal.clone());
            args.extend(["-mllvm".into(), cat("-syscluster-calibration=", cal.as_os_str())]);
        }
        if a.assume_gain {
            args.extend(["-mllvm".into(), "-syscluster-assume-gain".into()]);
        }
        if let Some(dir) = &a.remarks {
            args.extend(remark_flags(dir, &a.args)?);
        }
        args.extend(a.args.iter().cloned());
        let compiles = sources(&a.args) > 0;
        if compiles && !has_debug_info(&a.args) {
            eprintln!(
                "syscluster cc: --plan without -g: the plan's locations are source lines, which \
                 this compilation will not have; nothing will be clustered"
            );
        }
        if links(&a.args) {
            // libmulticall statically, so the program runs where the original ran.
            args.push(tc.runtime.into_os_string());
            args.push(tc.multicall.into_os_string());
            args.extend(["-l:liburing.a".into(), "-lpthread".into()]);
        }
    } else {
        if a.remarks.is_some() || a.calibration.is_some() || a.assume_gain {
            return Err(Failure::with_code(
                "cc: --remarks, --calibration and --assume-gain need --plan (without a plan the pass does not run)",
                2,
            ));
        }
        args.extend(a.args.iter().cloned());
    }
    let status = Command::new(&clang)
        .args(&args)
        .status()
        .map_err(|e| Failure::new(format!("cc: cannot run {}: {e}", clang.to_string_lossy())))?;
    Ok(syscluster_supervisor::shell_code(status))
}

fn cat(a: &str, b: &OsStr) -> OsString {
    let mut s = OsString::from(a);
    s.push(b);
    s
}

/// clang-19, or the compiler SYSCLUSTER_CLANG names.
fn clang() -> OsString {
    std::env::var_os("SYSCLUSTER_CLANG").unwrap_or_else(|| "clang-19".into())
}

/// The plugin and archives: beside the installed full CLI
/// (`lib/syscluster/syscluster-cli`) or the installed binary
/// (`bin/../lib/syscluster/`), else in the build tree the binary was built
/// in (`target/release/../../llvm/build`, `libmulticall/build`).
fn toolchain() -> Result<Toolchain, Failure> {
    let exe = std::env::current_exe().map_err(|e| Failure::new(format!("cc: cannot find myself: {e}")))?;
    let dir = exe.parent().unwrap_or(Path::new("/"));
    let installed = if dir.join("SysCluster.so").is_file() { dir.to_path_buf() } else { dir.join("../lib/syscluster") };
    let tree = dir.join("../..");
    let candidates = [
        (installed.join("SysCluster.so"), installed.join("libsyscluster-rt.a"), installed.join("libmulticall.a")),
        (
            tree.join("llvm/build/SysCluster.so"),
            tree.join("llvm/build/libsyscluster-rt.a"),
            tree.join("libmulticall/build/libmulticall.a"),
        ),
    ];
    for (plugin, runtime, multicall) in candidates {
        if plugin.is_file() && runtime.is_file() && multicall.is_file() {
            let abs = |p: PathBuf| std::fs::canonicalize(&p).unwrap_or(p);
            return Ok(Toolchain { plugin: abs(plugin), runtime: abs(runtime), multicall: abs(multicall) });
        }
    }
    Err(Failure::new(format!(
        "cc: the syscluster plugin is not built (looked in {} and {}): run make build",
        installed.display(),
        tree.join("llvm/build").display()
    )))
}

/// Options of clang that take their value as the next argument.
const WITH_VALUE: &[&str] = &[
    "-o",
    "-I",
    "-L",
    "-D",
    "-U",
    "-include",
    "-imacros",
    "-x",
    "-MF",
    "-MT",
    "-MQ",
    "-isystem",
    "-iquote",
    "-idirafter",
    "-Xlinker",
    "-Xclang",
    "-Xassembler",
    "-Xpreprocessor",
    "-mllvm",
    "-target",
    "-arch",
    "-z",
    "-T",
    "-u",
    "-e",
    "--param",
    "-isysroot",
    "-iprefix",
    "-l",
];

/// The arguments that are input files (sources, objects, archives).
fn inputs(args: &[OsString]) -> Vec<&OsString> {
    let mut out = Vec::new();
    let mut skip = false;
    for a in args {
        if skip {
            skip = false;
            continue;
        }
        let s = a.to_string_lossy();
        if WITH_VALUE.contains(&s.as_ref()) {
            skip = true;
        } else if !s.starts_with('-') || s == "-" {
            out.push(a);
        }
    }
    out
}

const SOURCE_EXT: &[&str] = &["c", "i", "cc", "cpp", "cxx", "C", "ii", "m"];

fn is_source(p: &OsStr) -> bool {
    Path::new(p).extension().and_then(|e| e.to_str()).is_some_and(|e| SOURCE_EXT.contains(&e))
}

fn sources(args: &[OsString]) -> usize {
    inputs(args).into_iter().filter(|a| is_source(a)).count()
}

/// Whether clang will link: inputs, and none of the options that stop before.
fn links(args: &[OsString]) -> bool {
    let stops = ["-c", "-S", "-E", "-M", "-MM", "-fsyntax-only", "-emit-llvm"];
    !inputs(args).is_empty() && !args.iter().any(|a| stops.contains(&a.to_string_lossy().as_ref()))
}

fn has_debug_info(args: &[OsString]) -> bool {
    let mut on = false;
    for a in args {
        let s = a.to_string_lossy();
        if s == "-g0" || s == "-gline-directives-only" {
            on = false;
        } else if s.starts_with("-g") && !s.starts_with("-gno-") && !s.starts_with("-gsplit") {
            on = true;
        }
    }
    on
}

/// One remark file per translation unit, named after the output (or the
/// source) and its absolute path, so that parallel compilations never
/// share one.
fn remark_flags(dir: &Path, args: &[OsString]) -> Result<Vec<OsString>, Failure> {
    std::fs::create_dir_all(dir)
        .map_err(|e| Failure::new(format!("cc: cannot create remarks directory {}: {e}", dir.display())))?;
    let srcs: Vec<&OsString> = inputs(args).into_iter().filter(|a| is_source(a)).collect();
    if srcs.len() != 1 {
        if !srcs.is_empty() {
            eprintln!(
                "syscluster cc: --remarks: {} sources in one command: remarks are collected only for \
                 one translation unit per command (compile with -c one file at a time)",
                srcs.len()
            );
        }
        return Ok(Vec::new());
    }
    let named = args.iter().position(|a| a == "-o").and_then(|i| args.get(i + 1)).unwrap_or(srcs[0]);
    let abs = std::path::absolute(Path::new(named)).unwrap_or_else(|_| PathBuf::from(named));
    let base = abs.file_name().map(|b| b.to_string_lossy().into_owned()).unwrap_or_default();
    let h = syscluster_model::plan::fnv1a(abs.as_os_str().as_encoded_bytes());
    let dir = std::path::absolute(dir).unwrap_or_else(|_| dir.to_path_buf());
    let file = dir.join(format!("{base}-{h}.opt.yaml"));
    Ok(vec![
        "-fsave-optimization-record=yaml".into(),
        cat("-foptimization-record-file=", file.as_os_str()),
        "-foptimization-record-passes=syscluster".into(),
    ])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(s: &[&str]) -> Vec<OsString> {
        s.iter().map(OsString::from).collect()
    }

    #[test]
    fn compiling_does_not_link_and_linking_does() {
        assert!(!links(&v(&["-O2", "-c", "a.c", "-o", "a.o"])));
        assert!(links(&v(&["-O2", "a.o", "b.o", "-o", "prog"])));
        assert!(links(&v(&["-O2", "a.c"])));
        assert!(!links(&v(&["--version"])));
        assert!(!links(&v(&["-E", "a.c"])));
        // -o's value is not an input.
        assert!(!links(&v(&["-o", "prog"])));
    }

    #[test]
    fn sources_are_counted_without_option_values() {
        assert_eq!(sources(&v(&["-I", "inc.c", "-c", "x.c", "-o", "x.o"])), 1);
        assert_eq!(sources(&v(&["a.c", "b.cc", "c.o"])), 2);
    }

    #[test]
    fn debug_info_is_the_last_g_flag() {
        assert!(has_debug_info(&v(&["-O2", "-g"])));
        assert!(has_debug_info(&v(&["-gline-tables-only"])));
        assert!(!has_debug_info(&v(&["-g", "-g0"])));
        assert!(!has_debug_info(&v(&["-O2"])));
    }

    #[test]
    fn remark_files_differ_per_translation_unit() {
        let dir = std::env::temp_dir().join(format!("sc-cc-remarks-{}", std::process::id()));
        let a = remark_flags(&dir, &v(&["-c", "src/a.c", "-o", "obj/a.o"])).ok().unwrap();
        let b = remark_flags(&dir, &v(&["-c", "lib/a.c", "-o", "lib/a.o"])).ok().unwrap();
        assert_eq!(a.len(), 3);
        assert_ne!(a[1], b[1]);
        assert!(a[1].to_string_lossy().contains("a.o-"));
        assert!(remark_flags(&dir, &v(&["a.c", "b.c", "-o", "p"])).ok().unwrap().is_empty());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
