//! Generates the x86_64 system call table from `data/syscalls_x86_64.tsv`
//! (itself produced by `scripts/gen-syscall-table.py`).
use std::fmt::Write as _;
use std::{env, fs, path::Path};

fn main() {
    let tsv = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../data/syscalls_x86_64.tsv");
    println!("cargo:rerun-if-changed={}", tsv.display());
    let text = fs::read_to_string(&tsv).expect("read data/syscalls_x86_64.tsv");
    let mut rows = Vec::new();
    for line in text.lines().filter(|l| !l.starts_with('#') && !l.trim().is_empty()) {
        let cols: Vec<&str> = line.split('\t').collect();
        assert_eq!(cols.len(), 3, "bad row in syscall table: {line}");
        let nr: u32 = cols[0].parse().expect("syscall number");
        let mut args = Vec::new();
        if cols[2] != "?" && !cols[2].is_empty() {
            for a in cols[2].split(';') {
                let mut p = a.splitn(3, ':');
                let kind = p.next().unwrap();
                let name = p.next().expect("argument name");
                let ctype = p.next().expect("argument type");
                let kind = match kind {
                    "fd" => "Fd",
                    "dirfd" => "DirFd",
                    "path" => "Path",
                    "size" => "Size",
                    "offset" => "Offset",
                    "flags" => "Flags",
                    "ptr" => "Ptr",
                    "int" => "Int",
                    other => panic!("unknown argument kind {other}"),
                };
                args.push((kind, name.to_string(), ctype.to_string()));
            }
        }
        rows.push((nr, cols[1].to_string(), cols[2] != "?", args));
    }
    let max = rows.iter().map(|r| r.0).max().unwrap_or(0);
    let mut out = String::new();
    writeln!(out, "/// One past the highest system call number in the table.").unwrap();
    writeln!(out, "pub const NR_SYSCALLS: usize = {};", max + 1).unwrap();
    writeln!(out, "static TABLE: [Option<SyscallInfo>; NR_SYSCALLS] = {{").unwrap();
    writeln!(out, "    let mut t: [Option<SyscallInfo>; NR_SYSCALLS] = [None; NR_SYSCALLS];").unwrap();
    for (nr, name, known, args) in &rows {
        let list: Vec<String> = args
            .iter()
            .map(|(k, n, c)| format!("ArgInfo {{ name: {n:?}, kind: ArgKind::{k}, ctype: {c:?} }}"))
            .collect();
        writeln!(
            out,
            "    t[{nr}] = Some(SyscallInfo {{ nr: {nr}, name: {name:?}, args_known: {known}, args: &[{}] }});",
            list.join(", ")
        )
        .unwrap();
    }
    writeln!(out, "    t\n}};").unwrap();
    let dst = Path::new(&env::var("OUT_DIR").unwrap()).join("syscall_table.rs");
    fs::write(dst, out).unwrap();
    errno_table();
}

/// Generates the errno names from `data/errno_linux.tsv`.
fn errno_table() {
    let tsv = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../data/errno_linux.tsv");
    println!("cargo:rerun-if-changed={}", tsv.display());
    let text = fs::read_to_string(&tsv).expect("read data/errno_linux.tsv");
    let mut out = String::from("/// (errno, name), sorted by errno; aliases follow their first name.\npub static ERRNOS: &[(i32, &str)] = &[\n");
    for line in text.lines().filter(|l| !l.starts_with('#') && !l.trim().is_empty()) {
        let (n, name) = line.split_once('\t').expect("errno row");
        let n: i32 = n.parse().expect("errno number");
        writeln!(out, "    ({n}, {name:?}),").unwrap();
    }
    out.push_str("];\n");
    fs::write(Path::new(&env::var("OUT_DIR").unwrap()).join("errno_table.rs"), out).unwrap();
}
