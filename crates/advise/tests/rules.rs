//! The rules on synthetic profiles: each fires on its evidence, at the nodes
//! and code locations that carry it, and stays silent without it.

use std::collections::BTreeSet;
use syscluster_advise::advice::{Advice, Evidence};
use syscluster_advise::calibration::{Calibration, CallCost, Crossing, KernelFixed, Machine, CALIBRATION_VERSION};
use syscluster_advise::plan::{function_hash, source_hash, Plan};
use syscluster_advise::{advise, AdviseOptions, CostModel};
use syscluster_analysis::{BuilderOptions, ProfileBuilder};
use syscluster_model::host::{Host, Kmod, HOST_VERSION};
use syscluster_model::profile::{Location, Meta, NodeKeyMode};
use syscluster_model::{syscalls, CodeAddr, Profile, SyscallEvent};

/// A thread making calls, one after another.
struct Sim {
    b: ProfileBuilder,
    t: u64,
    site: Option<CodeAddr>,
    /// Kernel time of the next calls, ns.
    kernel: Option<u64>,
    backend: &'static str,
}

const SOCK_DGRAM: i64 = 2;
const SOCK_STREAM: i64 = 1;

impl Sim {
    fn new() -> Sim {
        Sim::with_key(NodeKeyMode::Fd)
    }
    fn with_key(node_key: NodeKeyMode) -> Sim {
        Sim {
            b: ProfileBuilder::new(BuilderOptions { node_key, ..Default::default() }),
            t: 0,
            site: None,
            kernel: None,
            backend: "test",
        }
    }
    /// The next calls come from code offset `offset` of the program.
    fn at(&mut self, offset: u64) -> &mut Sim {
        self.site = Some(CodeAddr::at(0, offset));
        self
    }
    fn call_path(&mut self, name: &str, args: &[i64], ret: i64, path: Option<&[u8]>) -> &mut Sim {
        let nr = syscalls::by_name(name).unwrap_or_else(|| panic!("no call {name}")).nr;
        let mut ev = SyscallEvent::new(100, 100, nr);
        for (i, a) in args.iter().enumerate() {
            ev.args[i] = *a as u64;
        }
        ev.ret = Some(ret);
        ev.enter_ns = self.t;
        ev.callsite = self.site;
        ev.kernel_ns = self.kernel;
        ev.path = path;
        self.t += 10_000;
        self.b.event(&ev);
        self
    }
    fn call(&mut self, name: &str, args: &[i64], ret: i64) -> &mut Sim {
        self.call_path(name, args, ret, None)
    }
    fn open(&mut self, path: &str, ret: i64) -> &mut Sim {
        self.call_path("openat", &[-100, 0x1000, 0, 0], ret, Some(path.as_bytes()))
    }
    fn finish(self) -> Profile {
        let meta = Meta {
            tool: "test".into(),
            command: vec!["/bin/prog".into()],
            arch: "x86_64".into(),
            backend: self.backend.into(),
            mode: "events".into(),
            duration_ns: self.t.max(1),
            runs: 1,
            ..Default::default()
        };
        // Offsets name functions and lines: 0x1000.. is main, 0x2000.. is helper.
        self.b.finish(meta, &mut |a: CodeAddr| Location {
            module: "/bin/prog".into(),
            offset: a.offset,
            function: Some(if a.offset < 0x2000 { "main" } else { "helper" }.into()),
            file: Some("prog.c".into()),
            line: Some((a.offset % 0x1000) as u32 / 16 + 10),
            site: a.site,
        })
    }
}

fn cost(syscall: &str, on: &str, bytes: u64, ns: f64) -> CallCost {
    CallCost { syscall: syscall.into(), on: on.into(), bytes, ns, median_ns: ns, what: String::new() }
}

fn machine() -> Machine {
    Machine { arch: "x86_64".into(), kernel: "6.1.0-test #1".into(), cpu: "test CPU".into(), cpus: 2 }
}

/// A host with io_uring and the vDSO, without the kernel module.
fn host() -> Host {
    Host {
        host_version: HOST_VERSION,
        machine: machine(),
        uring: true,
        kmod: Kmod { device: "/nonexistent/multicall".into(), usable: false },
        vdso: true,
    }
}

/// A calibration with round figures, so that savings can be checked exactly.
fn calibration() -> Calibration {
    Calibration {
        calibration_version: CALIBRATION_VERSION,
        tool: "test".into(),
        created_at: 0.0,
        machine: machine(),
        crossing: Crossing {
            syscall: "getppid".into(),
            syscall_ns: 200.0,
            syscall_median_ns: 200.0,
            function_call_ns: 2.0,
            function_call_median_ns: 2.0,
            ratio: 100.0,
            samples: 1,
            iterations: 1,
        },
        costs: vec![
            cost("write", "file", 8, 800.0),
            cost("write", "file", 65536, 12000.0),
            cost("write", "file", 4096, 3000.0),
            cost("write", "file", 131072, 24000.0),
            cost("read", "file", 512, 500.0),
            cost("read", "file", 4096, 600.0),
            cost("read", "file", 131072, 5000.0),
            cost("pread64", "file", 512, 500.0),
            cost("lseek", "file", 0, 200.0),
            cost("lseek", "cur", 0, 190.0),
            cost("getpid", "", 0, 180.0),
            cost("gettimeofday", "", 0, 220.0),
            cost("clock_gettime", "vdso", 0, 20.0),
            cost("copy_file_range", "file", 65536, 20000.0),
            cost("copy_file_range", "file", 1048576, 300000.0),
            cost("sendto", "udp", 1024, 3300.0),
            cost("sendmmsg", "udp", 1024, 2700.0),
            cost("newfstatat", "fd", 0, 450.0),
            cost("newfstatat", "path", 0, 1400.0),
            cost("access", "path", 0, 1200.0),
            cost("openat+close", "file", 0, 2700.0),
        ],
        multicall: None,
        tracers: Vec::new(),
        kernel: vec![
            fixed("read", 450.0, 0.035),
            fixed("write", 1700.0, 0.17),
            KernelFixed { small_bytes: 65536, large_bytes: 1048576, ..fixed("copy_file_range", 2000.0, 0.1) },
        ],
    }
}

/// A calibrated line: `fixed_ns` per call (crossing included) and
/// `per_byte_ns`, from 4 KiB up.
fn fixed(syscall: &str, fixed_ns: f64, per_byte_ns: f64) -> KernelFixed {
    KernelFixed {
        syscall: syscall.into(),
        on: "file".into(),
        small_bytes: 4096,
        large_bytes: 131072,
        fixed_ns,
        per_byte_ns,
        fixed_median_ns: fixed_ns,
        per_byte_median_ns: per_byte_ns,
        rounds: 9,
        what: String::new(),
    }
}

fn run(p: &Profile) -> Advice {
    let cal = calibration();
    let cost = CostModel::new(p, Some(&cal), Some("test".into()));
    advise(p, &cost, &host(), &AdviseOptions::default())
}

fn rules(a: &Advice) -> BTreeSet<String> {
    a.recommendations.iter().map(|r| r.rule.clone()).collect()
}

fn rec<'a>(a: &'a Advice, rule: &str) -> &'a syscluster_advise::Recommendation {
    a.recommendations.iter().find(|r| r.rule == rule).unwrap_or_else(|| panic!("no {rule} in {:?}", rules(a)))
}

fn set(v: &[&str]) -> BTreeSet<String> {
    v.iter().map(|s| s.to_string()).collect()
}

/// write8: n writes of 8 bytes to fd 3.
fn short_writes(n: u64, size: i64) -> Profile {
    let mut s = Sim::new();
    s.at(0x1010).open("/tmp/out", 3);
    s.at(0x1040);
    for _ in 0..n {
        s.call("write", &[3, 0x5000, size], size);
    }
    s.at(0x1050).call("close", &[3], 0);
    s.finish()
}

#[test]
fn coalesce_writes_on_short_writes_with_exact_saving() {
    let a = run(&short_writes(1000, 8));
    assert_eq!(rules(&a), set(&["coalesce-writes"]));
    let r = rec(&a, "coalesce-writes");
    assert_eq!(r.labels, ["write(3)"]);
    assert_eq!(r.rank, 1);
    assert!(r.applicable_here && r.how.contains("--coalesce-writes"), "{}", r.how);
    // 999 consecutive writes of 8 B at 800 ns; after: one 64 KiB write at 12 µs.
    assert_eq!(r.saving.calls_before, 999);
    assert_eq!(r.saving.calls_after, 1);
    assert!((r.saving.ns - (999.0 * 800.0 - 12000.0)).abs() < 1e-6, "{}", r.saving.ns);
    assert!((r.saving.crossing_ns - 998.0 * 200.0).abs() < 1e-6);
    assert!((r.saving.crossing_ns + r.saving.kernel_ns - r.saving.ns).abs() < 1e-6);
    assert!(r.evidence.contains(&Evidence::Edge { from: "write(3)".into(), to: "write(3)".into(), weight: 999 }));
    assert!(r.evidence.iter().any(
        |e| matches!(e, Evidence::IoPattern { path, class, .. } if path == "/tmp/out" && class == "short writes")
    ));
    assert_eq!(r.locations.len(), 1);
    assert_eq!(r.locations[0].short, "prog.c:14");
    assert_eq!(r.parameters["fd"], "3");
    assert_eq!(r.parameters["size"], "8");
}

#[test]
fn no_coalescing_of_large_or_few_writes() {
    // 4 KiB writes are not short: the loop of one block is batch-writes'.
    assert_eq!(rules(&run(&short_writes(1000, 4096))), set(&["batch-writes"]), "4 KiB writes are not short");
    assert!(run(&short_writes(20, 8)).recommendations.is_empty(), "20 writes are too few");
}

#[test]
fn batch_writes_for_a_loop_of_one_block_priced_per_crossing_avoided() {
    let p = short_writes(1000, 4096);
    let a = run(&p);
    let r = rec(&a, "batch-writes");
    assert_eq!(r.labels, ["write(3)"]);
    assert_eq!(r.mechanism, "writev-batch");
    assert!(r.applicable_here && r.how.contains("syscluster cc --plan"), "{}", r.how);
    // 999 writes after a write at 3 µs each; the calibrated line's fixed
    // work (1.7 µs, crossing included) goes for all but 2 writevs (999
    // blocks in one, plus the run's last), and the run adds an fstat
    // (newfstatat on a descriptor: 450 ns calibrated).
    assert_eq!(r.saving.calls_before, 999);
    assert_eq!(r.saving.calls_after, 3);
    assert_eq!(r.saving.crossings_removed, 996);
    let want = 999.0 * 1700.0 - 2.0 * 1700.0 - 450.0;
    assert!((r.saving.ns - want).abs() < 1e-6, "{} != {want}", r.saving.ns);
    assert!(r.evidence.iter().any(|e| matches!(e, Evidence::Value { arg, value: 4096, .. } if arg == "count")));
    assert_eq!(r.parameters["size"], "4096");
    assert_eq!(r.parameters["batch"], "1024");
    // The plan: one call, its constant descriptor and count, the loop's site.
    let plan = syscluster_advise::plan::from_advice(&a, &p);
    let c = plan.clusters.iter().find(|c| c.rule == "batch-writes").unwrap();
    assert_eq!((c.shape.as_str(), c.mechanism.as_str()), ("run", "writev-batch"));
    assert_eq!(c.calls.len(), 1);
    assert_eq!((c.calls[0].syscall.as_str(), c.calls[0].fd), ("write", Some(3)));
    assert_eq!(c.calls[0].args.get("count"), Some(&4096));
    assert_eq!(c.locations.iter().map(|l| l.line.unwrap()).collect::<Vec<_>>(), [14]);
}

#[test]
fn no_batch_writes_where_the_value_profile_does_not_show_one_block() {
    // Counts that vary: half the writes 4 KiB, half 8 KiB.
    let mut s = Sim::new();
    s.at(0x1010).open("/tmp/out", 3);
    s.at(0x1040);
    for i in 0..1000 {
        let n = if i % 2 == 0 { 4096 } else { 8192 };
        s.call("write", &[3, 0x5000, n], n);
    }
    let a = run(&s.finish());
    assert!(!rules(&a).contains("batch-writes"), "{:?}", rules(&a));
    // No value profile at all: nothing on a hunch.
    let a = run(&as_aggregate(short_writes(1000, 4096)));
    assert!(!rules(&a).contains("batch-writes"), "{:?}", rules(&a));
    // A pipe: a writev splits it differently from the writes.
    let mut s = Sim::new();
    s.at(0x1010).call("pipe2", &[0x6000, 0], 0);
    s.at(0x1040);
    for _ in 0..1000 {
        s.call("write", &[4, 0x5000, 4096], 4096);
    }
    let a = run(&s.finish());
    assert!(!rules(&a).contains("batch-writes"), "{:?}", rules(&a));
    // Writes under 512 B are coalesce-writes'.
    assert!(!rules(&run(&short_writes(1000, 8))).contains("batch-writes"));
}

fn seek_reads(n: i64, whence: i64, offset_step: i64) -> Profile {
    let mut s = Sim::new();
    s.at(0x1010).open("/tmp/data", 3);
    for i in 0..n {
        let at = (i * offset_step) % 61440;
        s.at(0x1080).call("lseek", &[3, at, whence], at);
        s.at(0x1090).call("read", &[3, 0x5000, 512], 512);
    }
    s.finish()
}

#[test]
fn pread_for_seek_then_read() {
    let a = run(&seek_reads(200, 0, 7 * 512));
    assert_eq!(rules(&a), set(&["pread"]), "a multi-call of lseek → read is covered by pread");
    let r = rec(&a, "pread");
    assert_eq!(r.labels, ["lseek(3)", "read(3)"]);
    // Per pair: the lseek (200 ns) goes; read and pread cost the same.
    assert!((r.saving.ns - 200.0 * 200.0).abs() < 1e-6, "{}", r.saving.ns);
    assert_eq!((r.saving.calls_before, r.saving.calls_after), (200, 0), "the lseeks");
    assert_eq!(r.saving.crossings_removed, 200);
    assert!(r.after.contains("pread(3, buf, 512, off)"), "{}", r.after);
    let places: Vec<&str> = r.locations.iter().map(|l| l.short.as_str()).collect();
    assert_eq!(places, ["prog.c:18", "prog.c:19"]);
    assert!(r.evidence.iter().any(|e| matches!(e, Evidence::Placement { class, .. } if class == "adjacent")));
}

#[test]
fn a_call_whose_recorded_time_is_mostly_the_recorders_is_priced_by_the_calibration() {
    // lseek → read recorded with BPF; the recorder adds 300 ns inside each
    // call (with_tracer).
    let seeks = |kernel| {
        let mut s = Sim::new();
        s.backend = "bpf";
        s.kernel = Some(kernel);
        s.at(0x1010).open("/tmp/data", 3);
        for i in 0..200 {
            s.at(0x1080).call("lseek", &[3, i * 512, 0], i * 512);
            s.at(0x1090).call("read", &[3, 0x5000, 512], 512);
        }
        let p = s.finish();
        let cal = with_tracer(calibration());
        let cost = CostModel::new(&p, Some(&cal), None);
        let a = advise(&p, &cost, &host(), &AdviseOptions::default());
        rec(&a, "pread").saving.clone()
    };
    // 450 ns recorded, 300 of them the recorder's: the calibrated lseek (200 ns).
    let s = seeks(450);
    assert!((s.ns - 200.0 * 200.0).abs() < 1e-6, "{}", s.ns);
    assert!(s.basis.contains("calls timed by `syscluster calibrate`"), "{}", s.basis);
    // 1,000 ns recorded: the profile resolves it, 700 ns of kernel work
    // plus the crossing (200 ns).
    let s = seeks(1000);
    assert!((s.ns - 200.0 * 900.0).abs() < 1e-6, "{}", s.ns);
    assert!(s.basis.contains("the profile's kernel times"), "{}", s.basis);
}

#[test]
fn pwrite_is_not_said_to_be_fused_by_seek_pread() {
    // libmulticall's fusion backend fuses lseek with read (seek_pread) only.
    let mut s = Sim::new();
    s.at(0x1010).open("/tmp/data", 3);
    for i in 0..200 {
        s.at(0x1080).call("lseek", &[3, i * 4096, 0], i * 4096);
        s.at(0x1090).call("write", &[3, 0x5000, 512], 512);
    }
    let a = run(&s.finish());
    let r = rec(&a, "pwrite");
    assert!(!r.how.contains("seek_pread"), "{}", r.how);
    assert!(!r.explanation.contains("one library call"), "{}", r.explanation);
    assert!(rec(&run(&seek_reads(200, 0, 7 * 512)), "pread").how.contains("seek_pread"));
}

#[test]
fn seek_and_read_made_by_one_library_call_say_so() {
    // make's linker: libbfd's bfd_seek calls fseek, which seeks and reads;
    // both calls return to the same place in bfd_seek.
    let mut s = Sim::new();
    s.at(0x1010).open("/tmp/data", 3);
    for i in 0..200 {
        s.at(0x1080).call("lseek", &[3, i * 4096, 0], i * 4096);
        s.at(0x1080).call("read", &[3, 0x5000, 4096], 4096);
    }
    let a = run(&s.finish());
    let r = rec(&a, "pread");
    assert!(r.explanation.contains("one libc call made them"), "{}", r.explanation);
    // The code calls fseek and fread: the sketch rewrites those, and no
    // multi-call fuses what libc makes inside fseek.
    assert!(r.before.starts_with("fseek(f, off, SEEK_SET);") && r.before.contains("fread("), "{}", r.before);
    assert!(!r.before.contains("lseek(") && r.after.contains("pread(fileno(f), buf, len, off)"), "{}", r.after);
    assert!(!r.how.contains("seek_pread") && r.how.contains("stdio calls of prog.c:18"), "{}", r.how);
}

#[test]
fn seek_and_write_made_by_stdio_are_rewritten_as_stdio_calls() {
    // make -j2's linker: libbfd's bfd_seek calls fseek on a stream being
    // written; fseek writes what the last fwrite buffered, then seeks.
    // Every write and lseek returns to that one fseek call.
    let mut s = Sim::new();
    s.at(0x1010).open("/tmp/out", 3);
    for i in 0..200 {
        s.at(0x1080).call("write", &[3, 0x5000, 170], 170);
        s.at(0x1080).call("lseek", &[3, i * 4096, 0], i * 4096);
    }
    let a = run(&s.finish());
    let r = rec(&a, "pwrite");
    assert!(r.explanation.contains("stdio's fseek on a stream being written"), "{}", r.explanation);
    assert!(!r.explanation.contains("fread"), "{}", r.explanation);
    assert!(r.before.starts_with("fseek(f, off, SEEK_SET);") && r.before.contains("fwrite("), "{}", r.before);
    assert!(!r.before.contains("lseek("), "no lseek in the code: {}", r.before);
    assert!(r.after.contains("pwrite(fileno(f), buf, len, off)"), "{}", r.after);
    assert!(r.how.contains("stdio calls of prog.c:18"), "{}", r.how);
}

#[test]
fn lseek_for_the_offset_is_redundant_not_pread() {
    let a = run(&seek_reads(200, 1, 0));
    assert!(rules(&a).contains("redundant-lseek"), "{:?}", rules(&a));
    assert!(!rules(&a).contains("pread"), "SEEK_CUR, 0 only asks for the offset");
    let r = rec(&a, "redundant-lseek");
    assert!((r.saving.ns - 200.0 * 190.0).abs() < 1e-6, "{}", r.saving.ns);
}

fn copy_loop(blocks: u64, forwarded: bool) -> Profile {
    let mut s = Sim::new();
    s.at(0x1010).open("/tmp/in", 3);
    s.at(0x1020).call_path("openat", &[-100, 0x1000, 0x241, 0o666], 4, Some(b"/tmp/out"));
    for i in 0..blocks {
        let n = if i + 1 == blocks { 832 } else { 4096 };
        s.at(0x1100).call("read", &[3, 0x5000, 4096], n);
        s.at(0x1110).call("write", &[4, 0x5000, if forwarded { n } else { 100 }], if forwarded { n } else { 100 });
    }
    s.at(0x1100).call("read", &[3, 0x5000, 4096], 0);
    s.finish()
}

#[test]
fn copy_loop_gets_offload_larger_block_and_looped_multicall() {
    let p = copy_loop(1000, true);
    let a = run(&p);
    assert_eq!(rules(&a), set(&["copy-offload", "larger-block", "looped-multicall"]));
    let c = rec(&a, "copy-offload");
    assert_eq!(c.labels, ["read(3)", "write(4)"]);
    assert_eq!(c.mechanism, "copy_file_range");
    assert!(c.after.contains("copy_file_range(3, NULL, 4, NULL, 1 << 30, 0)"), "{}", c.after);
    assert!(c.before.contains("read(3, buf, 4096)"), "{}", c.before);
    assert!(c
        .evidence
        .iter()
        .any(|e| matches!(e, Evidence::ResultMatch { arg, share, .. } if arg == "count" && *share == 1.0)));
    let lb = rec(&a, "larger-block");
    assert_eq!(lb.parameters["size"], "4096");
    assert_eq!(lb.parameters["block"], "131072");
    let l = rec(&a, "looped-multicall");
    assert!(!l.applicable_here, "no kernel module here");
    assert!(l.rank > c.rank && l.rank > lb.rank, "what cannot be applied here ranks last");
    assert!(l.after.contains("mc_set_ref(&body[1], 2, 0)"), "write's count is read's result:\n{}", l.after);
    assert!(!l.after.contains("mc_set_ref(&body[0]"), "read's count is a constant, not write's result:\n{}", l.after);
    // The three are alternatives for the same calls.
    assert_eq!(c.overlaps.len(), 2);
    // The loop's analysis: the dependency, the placement, the backends.
    let s =
        a.sequences.iter().find(|s| s.kind == "loop" && s.labels == ["read(3)", "write(4)"]).expect("the copy loop");
    assert_eq!(s.dependencies.len(), 1);
    assert_eq!((s.dependencies[0].from, s.dependencies[0].to, s.dependencies[0].arg_name.as_str()), (0, 1, "count"));
    assert_eq!(s.placement.class, "adjacent");
    let fusion = s.backends.iter().find(|b| b.backend == "fusion").unwrap();
    assert!(fusion.can_run && fusion.why.contains("copy_file_range"), "{}", fusion.why);
    assert!(s.specialization.iter().any(|v| v.syscall == "read" && v.arg == "count" && v.value == 4096));
}

/// The copy loop of `copy_loop`, recorded with BPF: every call shows
/// `kernel` ns in the kernel.
fn traced_copy_loop(blocks: u64, kernel: u64) -> Profile {
    let mut s = Sim::new();
    s.backend = "bpf";
    s.kernel = Some(kernel);
    s.at(0x1010).open("/tmp/in", 3);
    s.at(0x1020).call_path("openat", &[-100, 0x1000, 0x241, 0o666], 4, Some(b"/tmp/out"));
    for i in 0..blocks {
        let n = if i + 1 == blocks { 832 } else { 4096 };
        s.at(0x1100).call("read", &[3, 0x5000, 4096], n);
        s.at(0x1110).call("write", &[4, 0x5000, n], n);
    }
    s.at(0x1100).call("read", &[3, 0x5000, 4096], 0);
    s.finish()
}

#[test]
fn a_larger_block_saves_the_crossing_and_the_fixed_kernel_work_of_each_call_removed() {
    // Priced from the calibration: read 600 ns and write 3,000 ns at 4 KiB;
    // the lines: read 450 ns + 0.035 ns/B, write 1,700 ns + 0.17 ns/B.
    let p = copy_loop(1000, true);
    let total = 999.0 * 4096.0 + 832.0;
    let (w, w2) = (1000.0, (total / 131072.0_f64).ceil());
    let lb = rec(&run(&p), "larger-block").saving.clone();
    // The program's own work per byte: its price less the fixed work.
    let per_byte = (600.0 - 450.0) / 4096.0 + (3000.0 - 1700.0) / 4096.0;
    let expect = w * 3600.0 - w2 * (450.0 + 1700.0) - per_byte * total;
    assert!((lb.ns - expect).abs() < 1.0, "{} vs {expect}", lb.ns);
    // That is the fixed work of the calls removed (and the bytes the last
    // short block did not move).
    let removed = (w - w2) * (450.0 + 1700.0) + per_byte * (w * 4096.0 - total);
    assert!((lb.ns - removed).abs() < 1.0, "{} vs {removed}", lb.ns);
    assert!(lb.assumes.contains("fixed work per call (450 ns per read, 1700 ns per write"), "{}", lb.assumes);
    // Without the lines (an older calibration) the after calls are the
    // calibrated 128 KiB ones.
    let mut cal = calibration();
    cal.kernel.clear();
    let cost = CostModel::new(&p, Some(&cal), None);
    let a = advise(&p, &cost, &host(), &AdviseOptions::default());
    let old = &rec(&a, "larger-block").saving;
    assert!((old.ns - (w * 3600.0 - w2 * (5000.0 + 24000.0))).abs() < 1.0, "{}", old.ns);
}

#[test]
fn the_recorded_runs_pace_cancels_out_of_a_larger_blocks_saving() {
    // The same loop recorded twice, its calls twice as slow the second
    // time (a busier machine, colder caches): the work per byte doubled,
    // the calls removed and their fixed work did not.
    let cal = calibration();
    let saving = |kernel| {
        let p = traced_copy_loop(1000, kernel);
        let cost = CostModel::new(&p, Some(&cal), None);
        let a = advise(&p, &cost, &host(), &AdviseOptions::default());
        (rec(&a, "larger-block").saving.clone(), rec(&a, "copy-offload").saving.clone())
    };
    let (lb1, cf1) = saving(3000);
    let (lb2, cf2) = saving(6000);
    assert!(lb2.before_ns > 1.9 * lb1.before_ns, "{} {}", lb1.before_ns, lb2.before_ns);
    assert!((lb1.ns - lb2.ns).abs() < 0.01 * lb1.ns, "larger-block {} vs {}", lb1.ns, lb2.ns);
    // copy_file_range's work per byte follows the program's (at the
    // calibrated ratio 0.1 / (0.035 + 0.17)): the saving grows with the
    // per-byte work, less than in proportion.
    assert!(cf2.ns > cf1.ns && cf2.ns < 2.0 * cf1.ns, "copy-offload {} vs {}", cf1.ns, cf2.ns);
    let total = 999.0 * 4096.0 + 832.0;
    let crossing = 200.0;
    let expect = |k: f64| {
        // Per byte of the mean block, 4,093 B (the last one is short).
        let per_byte = ((crossing + k - 450.0) + (crossing + k - 1700.0)) / (total / 1000.0_f64).round();
        let level = per_byte / (0.035 + 0.17);
        1000.0 * 2.0 * (crossing + k) - (2000.0 + 0.1 * level * total) - crossing
    };
    assert!((cf1.ns - expect(3000.0)).abs() < 1.0, "{} vs {}", cf1.ns, expect(3000.0));
    assert!((cf2.ns - expect(6000.0)).abs() < 1.0, "{} vs {}", cf2.ns, expect(6000.0));
}

#[test]
fn no_copy_without_the_data_dependency() {
    let a = run(&copy_loop(1000, false));
    assert!(!rules(&a).contains("copy-offload") && !rules(&a).contains("larger-block"), "{:?}", rules(&a));
}

fn udp_server(blocks: u64, sock_type: i64, addr_len: i64) -> Profile {
    let mut s = Sim::new();
    s.at(0x1010).open("/tmp/page", 3);
    s.at(0x1020).call("socket", &[2, sock_type, 0], 4);
    for _ in 0..blocks {
        s.at(0x1100).call("read", &[3, 0x5000, 1024], 1024);
        s.at(0x1110).call("sendto", &[4, 0x5000, 1024, 0, 0x6000, addr_len], 1024);
    }
    s.at(0x1100).call("read", &[3, 0x5000, 1024], 0);
    s.finish()
}

#[test]
fn read_sendto_loop_gets_sendmmsg_and_looped_multicall() {
    let a = run(&udp_server(640, SOCK_DGRAM, 16));
    assert_eq!(rules(&a), set(&["sendmmsg", "looped-multicall"]));
    let r = rec(&a, "sendmmsg");
    assert_eq!(r.labels, ["read(3)", "sendto(4)"]);
    // 640 blocks: 640 reads of 1 KiB and 640 sendto before; 20 reads of 32 KiB
    // and 640 datagrams by 20 sendmmsg after.
    assert_eq!(r.saving.calls_after, 40);
    let read32k = 600.0 + (5000.0 - 600.0) * (32768.0 - 4096.0) / (131072.0 - 4096.0);
    let expect = 640.0 * (500.0 + (600.0 - 500.0) * 512.0 / 3584.0 + 3300.0) - (20.0 * read32k + 640.0 * 2700.0);
    assert!((r.saving.ns - expect).abs() < 1e-3, "{} vs {expect}", r.saving.ns);
    let a = run(&udp_server(640, SOCK_STREAM, 0));
    assert!(!rules(&a).contains("sendmmsg"), "no datagram evidence: {:?}", rules(&a));
}

#[test]
fn select_then_clock() {
    let mut s = Sim::new();
    for _ in 0..300 {
        s.at(0x1200).call("select", &[4, 0x7000, 0, 0, 0x7100], 1);
        s.at(0x1210).call("gettimeofday", &[0x7200, 0], 0);
    }
    let a = run(&s.finish());
    assert_eq!(rules(&a), set(&["select-clock"]), "select fills fd sets the program reads: no looped multi-call");
    let r = rec(&a, "select-clock");
    assert!((r.saving.ns - 300.0 * (220.0 - 20.0)).abs() < 1e-6, "{}", r.saving.ns);
    assert!(r.explanation.contains("select → gettimeofday"), "{}", r.explanation);
}

#[test]
fn clocks_through_the_system_call() {
    let mut s = Sim::new();
    for _ in 0..300 {
        s.at(0x1300).call("clock_gettime", &[1, 0x7000], 0);
    }
    assert_eq!(rules(&run(&s.finish())), set(&["clock-vdso"]));
    let mut s = Sim::new();
    for _ in 0..300 {
        s.at(0x1300).call("clock_gettime", &[2, 0x7000], 0);
    }
    assert!(run(&s.finish()).recommendations.is_empty(), "the vDSO does not serve CPU-time clocks");
}

#[test]
fn reopening_one_file_and_the_multicall_of_its_rounds() {
    let mut s = Sim::new();
    for _ in 0..100 {
        s.at(0x1010).open("/etc/app.conf", 3);
        s.at(0x1020).call("read", &[3, 0x5000, 4096], 64);
        s.at(0x1030).call("close", &[3], 0);
    }
    let a = run(&s.finish());
    assert_eq!(rules(&a), set(&["reopen-same-file", "multicall"]));
    let r = rec(&a, "reopen-same-file");
    assert!((r.saving.ns - 99.0 * 2700.0).abs() < 1e-6);
    assert_eq!(r.parameters["path"], "/etc/app.conf");
    let m = rec(&a, "multicall");
    assert!(m.after.contains("mc_run(ctx, c, 3)"), "{}", m.after);
    // The fd comes from the open by its value profile, not by a result
    // match counted on an edge: that profile is the evidence.
    assert!(
        !m.evidence.iter().any(|e| matches!(e, Evidence::ResultMatch { count: 0, .. })),
        "a result match with no count: {:?}",
        m.evidence
    );
    assert!(
        m.evidence.iter().any(
            |e| matches!(e, Evidence::Value { syscall, arg, value: 3, .. } if syscall == "openat" && arg == "result")
        ),
        "the open's result profile is the evidence: {:?}",
        m.evidence
    );
    assert!(
        m.after.contains("/* fd = result of c[") || m.after.contains("mc_set_ref"),
        "the fd comes from openat:\n{}",
        m.after
    );
}

#[test]
fn a_multicall_across_functions_says_so() {
    let mut s = Sim::new();
    for i in 0..100 {
        s.at(0x1010).open(&format!("/data/f{i}"), 3);
        s.at(0x2020).call("newfstatat", &[3, 0, 0x5000, 0x1000], 0);
        s.at(0x2030).call("read", &[3, 0x5000, 4096], 100);
        s.at(0x1040).call("close", &[3], 0);
    }
    let a = run(&s.finish());
    assert_eq!(rules(&a), set(&["multicall"]));
    let r = rec(&a, "multicall");
    assert_eq!(r.nodes.len(), 4);
    assert!(r.evidence.iter().any(|e| matches!(e, Evidence::Placement { class, .. } if class == "several_functions")));
    let seq = a.sequences.iter().find(|s| s.kind == "hot_path" && s.nodes.len() == 4).unwrap();
    // fstat's fd is openat's result: always 3 here, so the value says so, not the edge.
    assert!(seq.dependencies.iter().any(|d| d.from == 0 && d.to == 1 && d.arg_name == "dfd"), "{:?}", seq.dependencies);
    assert!(seq.dependencies.iter().any(|d| d.via == "fd_value" && d.arg_name == "fd"), "{:?}", seq.dependencies);
    assert_eq!(seq.placement.class, "several_functions");
    // The hot-path rule shows an fd_value dependency as the looped rule does
    // (reopening_one_file_and_the_multicall_of_its_rounds): by the open's
    // result profile, never a result match that was not counted (issue 11).
    assert!(r.after.contains("int k = mc_run(ctx, c, 4)"), "the hot-path rule's multi-call: {}", r.after);
    assert!(!r.evidence.iter().any(|e| matches!(e, Evidence::ResultMatch { count: 0, .. })), "{:?}", r.evidence);
    // Three calls take openat's descriptor: its profile is one fact, said once.
    let opened = r
        .evidence
        .iter()
        .filter(
            |e| matches!(e, Evidence::Value { syscall, arg, value: 3, .. } if syscall == "openat" && arg == "result"),
        )
        .count();
    assert_eq!(opened, 1, "{:?}", r.evidence);
}

#[test]
fn stat_storm_is_an_upper_bound() {
    let mut s = Sim::with_key(NodeKeyMode::Name);
    for i in 0..3000 {
        s.at(0x1400).call("newfstatat", &[-100, 0x8000 + (i % 8), 0x5000, 0], 0);
    }
    let a = run(&s.finish());
    assert_eq!(rules(&a), set(&["stat-storm"]));
    let r = rec(&a, "stat-storm");
    assert_eq!(r.saving.bound, "upper_bound");
    assert!((r.saving.ns - 3000.0 * 1400.0).abs() < 1e-6);
}

#[test]
fn getpid_and_fstat_repeats() {
    let mut s = Sim::new();
    for _ in 0..200 {
        s.at(0x1500).call("getpid", &[], 100);
    }
    let a = run(&s.finish());
    assert_eq!(rules(&a), set(&["redundant-getpid"]));
    assert!((rec(&a, "redundant-getpid").saving.ns - 199.0 * 180.0).abs() < 1e-6);

    let fstat_loop = |write: bool| {
        let mut s = Sim::new();
        s.at(0x1010).open("/tmp/f", 3);
        for _ in 0..200 {
            s.at(0x1600).call("newfstatat", &[3, 0x9000, 0x5000, 0x1000], 0);
            s.at(0x1610).call("pread64", &[3, 0x5000, 8, 0], 8);
            if write {
                s.at(0x1620).call("write", &[3, 0x5000, 8], 8);
            }
        }
        s.finish()
    };
    let a = run(&fstat_loop(false));
    assert!(rules(&a).contains("redundant-fstat"), "{:?}", rules(&a));
    let a = run(&fstat_loop(true));
    assert!(!rules(&a).contains("redundant-fstat"), "the loop writes the file: {:?}", rules(&a));
}

#[test]
fn clean_programs_get_nothing() {
    // A few unrelated calls.
    let mut s = Sim::new();
    s.call("getcwd", &[0x5000, 4096], 10).call("uname", &[0x5000], 0).call("getpid", &[], 7).call(
        "write",
        &[1, 0x5000, 20],
        20,
    );
    let a = run(&s.finish());
    assert!(a.recommendations.is_empty(), "{:?}", rules(&a));
    // One 1 MiB copy.
    let mut s = Sim::new();
    s.open("/tmp/in", 3).open("/tmp/out", 4);
    s.call("read", &[3, 0x5000, 1 << 20], 1 << 20).call("write", &[4, 0x5000, 1 << 20], 1 << 20).call(
        "read",
        &[3, 0x5000, 1 << 20],
        0,
    );
    let a = run(&s.finish());
    assert!(a.recommendations.is_empty(), "{:?}", rules(&a));
    // Large writes.
    assert!(run(&short_writes(500, 65536)).recommendations.is_empty());
}

#[test]
fn without_calibration_the_profile_times_are_used_and_said() {
    let p = short_writes(1000, 8);
    let cost = CostModel::new(&p, None, None);
    let a = advise(&p, &cost, &host(), &AdviseOptions::default());
    assert_eq!(a.costs.source, "assumed", "the synthetic profile has no kernel times");
    assert!(a.notes.iter().any(|n| n.contains("syscluster calibrate")), "{:?}", a.notes);
    let r = rec(&a, "coalesce-writes");
    assert!(r.saving.basis.contains("crossing alone"), "{}", r.saving.basis);
    assert!(r.saving.ns > 0.0);
}

#[test]
fn plan_names_calls_results_and_locations() {
    let p = copy_loop(1000, true);
    let a = run(&p);
    let plan = syscluster_advise::plan::from_advice(&a, &p);
    assert_eq!(plan.clusters.len(), a.recommendations.len());
    let c = plan.clusters.iter().find(|c| c.rule == "looped-multicall").unwrap();
    assert_eq!(c.shape, "loop");
    assert_eq!(c.calls.len(), 2);
    assert_eq!(c.calls[1].syscall, "write");
    assert_eq!(c.calls[1].fd, Some(4));
    assert_eq!(c.calls[1].results.get("count"), Some(&0), "write's count is the result of call 0");
    assert_eq!(c.calls[0].args.get("count"), Some(&4096));
    assert_eq!(c.locations.iter().map(|l| l.line.unwrap()).collect::<Vec<_>>(), [26, 27]);
    assert_eq!(plan.modules.len(), 1);
    assert_eq!(plan.modules[0].path, "/bin/prog");
    assert!(
        plan.modules[0].build_id.is_none() && plan.modules[0].status.contains("cannot read"),
        "{:?}",
        plan.modules[0]
    );
    // Round trip, and bad plans.
    let d = tempfile::tempdir().unwrap();
    let path = d.path().join("plan.json");
    std::fs::write(&path, plan.to_json()).unwrap();
    let parsed: Plan = serde_json::from_slice(&plan.to_json()).unwrap();
    assert_eq!(Plan::load(&path).unwrap(), parsed);
    assert_eq!(
        parsed.clusters.iter().map(|c| (c.id, c.rule.clone())).collect::<Vec<_>>(),
        plan.clusters.iter().map(|c| (c.id, c.rule.clone())).collect::<Vec<_>>()
    );
    let mut bad = plan.clone();
    bad.clusters[0].calls[0].results.insert("count".into(), 9);
    std::fs::write(&path, bad.to_json()).unwrap();
    assert!(Plan::load(&path).unwrap_err().contains("refers to call 9"));
    std::fs::write(&path, br#"{"plan_version": 3}"#).unwrap();
    assert!(Plan::load(&path).unwrap_err().contains("plan_version 3"));
}

#[test]
fn plan_fingerprints_each_location_and_its_function() {
    // The copy loop's read and write are lines 26 and 27 of prog.c: a
    // source where they are in main, whose header is line 20.
    let d = tempfile::tempdir().unwrap();
    let src = d.path().join("prog.c");
    let mut text: Vec<String> = (1..20).map(|i| format!("int v{i};")).collect();
    text.push("int main(void)".into());
    text.push("{".into());
    text.extend((22..26).map(|i| format!("    int x{i} = 0;")));
    text.push("    while ((n = read(3, buf, sizeof buf)) > 0)".into());
    text.push("        write(4, buf, n);".into());
    text.push("}".into());
    std::fs::write(&src, text.join("\n") + "\n").unwrap();
    let mut p = copy_loop(1000, true);
    for cs in p.nodes.iter_mut().flat_map(|n| n.callsites.iter_mut()) {
        cs.location.file = Some(src.display().to_string());
    }
    let a = run(&p);
    let plan = syscluster_advise::plan::from_advice(&a, &p);
    let c = plan.clusters.iter().find(|c| c.rule == "looped-multicall").unwrap();
    let main = function_hash(&src, 26).unwrap();
    assert_eq!(function_hash(&src, 20).unwrap(), main, "one function");
    // main uses no macro: macro_hash is the hash of nothing, present.
    let no_macros = syscluster_model::plan::fnv1a(b"");
    for l in &c.locations {
        assert_eq!(l.source_hash.as_deref(), Some(source_hash(&src, l.line.unwrap()).unwrap().as_str()));
        assert_eq!(l.function_hash.as_deref(), Some(main.as_str()), "{l:?}");
        assert_eq!(l.macro_hash.as_deref(), Some(no_macros.as_str()), "{l:?}");
    }
    // The open at line 11 is in no function body: no function_hash.
    let opens: Vec<_> = plan.clusters.iter().flat_map(|c| &c.locations).filter(|l| l.line == Some(11)).collect();
    assert!(opens.iter().all(|l| l.function_hash.is_none()), "{opens:?}");
    // The plan says plan_version 2, and a plan_version 1 plan (no function_hash) still loads.
    assert_eq!(plan.plan_version, 2);
    let path = d.path().join("plan.json");
    let mut v: serde_json::Value = serde_json::from_slice(&plan.to_json()).unwrap();
    v["plan_version"] = 1.into();
    for c in v["clusters"].as_array_mut().unwrap() {
        for l in c["locations"].as_array_mut().unwrap() {
            l.as_object_mut().unwrap().remove("function_hash");
            l.as_object_mut().unwrap().remove("macro_hash");
        }
    }
    std::fs::write(&path, serde_json::to_vec(&v).unwrap()).unwrap();
    let old = Plan::load(&path).unwrap();
    assert!(old.clusters.iter().flat_map(|c| &c.locations).all(|l| l.function_hash.is_none()));
    // A plan_version 2 plan written before macro_hash still loads.
    let mut v: serde_json::Value = serde_json::from_slice(&plan.to_json()).unwrap();
    for c in v["clusters"].as_array_mut().unwrap() {
        for l in c["locations"].as_array_mut().unwrap() {
            l.as_object_mut().unwrap().remove("macro_hash");
        }
    }
    std::fs::write(&path, serde_json::to_vec(&v).unwrap()).unwrap();
    let before = Plan::load(&path).unwrap();
    assert!(before.clusters.iter().flat_map(|c| &c.locations).all(|l| l.macro_hash.is_none()));
}

#[test]
fn text_rendering_shows_the_ranked_list() {
    let a = run(&copy_loop(1000, true));
    let t = syscluster_advise::text::render(&a);
    assert!(t.contains("#1 ") && t.contains("[copy-offload]") && t.contains("prog.c:26"), "{t}");
    assert!(t.lines().all(|l| l.chars().count() <= 80 || l.starts_with("      ")), "80 columns but code:\n{t}");
    let json = serde_json::to_string(&a).unwrap();
    let back: Advice = serde_json::from_str(&json).unwrap();
    assert_eq!(
        back.recommendations.iter().map(|r| (&r.rule, r.rank, &r.locations)).collect::<Vec<_>>(),
        a.recommendations.iter().map(|r| (&r.rule, r.rank, &r.locations)).collect::<Vec<_>>()
    );
}

/// Every object key of a JSON value, recursively.
fn keys(v: &serde_json::Value, out: &mut BTreeSet<String>) {
    match v {
        serde_json::Value::Object(m) => {
            for (k, x) in m {
                out.insert(k.clone());
                keys(x, out);
            }
        }
        serde_json::Value::Array(a) => a.iter().for_each(|x| keys(x, out)),
        _ => {}
    }
}

fn doc(name: &str) -> String {
    let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs").join(name);
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

#[test]
fn docs_describe_every_rule_and_field() {
    let advice_md = doc("ADVICE.md");
    for r in syscluster_advise::rules::catalogue() {
        assert!(advice_md.contains(&format!("| `{}` |", r.id)), "docs/ADVICE.md lacks rule {}", r.id);
        assert!(!r.explanation.is_empty() && !r.title.is_empty());
    }
    // Fields of the advice and the plan, from real ones (parameters and
    // evidence payloads are data, not fields).
    let p = copy_loop(1000, true);
    let a = run(&p);
    let mut k = BTreeSet::new();
    keys(&serde_json::to_value(&a).unwrap(), &mut k);
    // Locations are the profile's (docs/PROFILE_FORMAT.md).
    let location = ["module", "offset", "function", "file", "line"];
    for key in k
        .iter()
        .filter(|k| !["in", "out", "size", "block", "fd"].contains(&k.as_str()) && !location.contains(&k.as_str()))
    {
        assert!(advice_md.contains(&format!("`{key}`")), "docs/ADVICE.md lacks field {key}");
    }
    let plan_md = doc("PLAN_FORMAT.md");
    let mut k = BTreeSet::new();
    let mut plan = serde_json::to_value(syscluster_advise::plan::from_advice(&a, &p)).unwrap();
    // Evidence is the advice's (docs/ADVICE.md).
    for c in plan["clusters"].as_array_mut().unwrap() {
        c["evidence"] = serde_json::Value::Array(vec![]);
    }
    keys(&plan, &mut k);
    for key in k.iter().filter(|k| !["in", "out", "size", "block", "fd", "count"].contains(&k.as_str())) {
        assert!(plan_md.contains(&format!("`{key}`")), "docs/PLAN_FORMAT.md lacks field {key}");
    }
}

/// The recorder's calibrated cost for bpf/events.
fn with_tracer(mut c: Calibration) -> Calibration {
    c.tracers.push(syscluster_advise::calibration::TracerCost {
        backend: "bpf".into(),
        mode: "events".into(),
        per_call_ns: 2000.0,
        fixed_ns: 1_000_000.0,
        kernel_ns: 300.0,
        cpu_per_call_ns: None,
        calls: 1,
        samples: 1,
        what: String::new(),
    });
    c
}

/// 20,000 writes of 8 B recorded with BPF: each call took 10 µs of the
/// recorded run and shows 1,000 ns in the kernel.
fn traced_writes() -> Profile {
    let mut s = Sim::new();
    s.backend = "bpf";
    s.kernel = Some(1000);
    for _ in 0..20_000 {
        s.at(0x1100).call("write", &[1, 0x5000, 8], 8);
    }
    s.finish()
}

#[test]
fn shares_are_of_the_untraced_run_with_the_recorders_cost_taken_out() {
    let p = traced_writes();
    let recorded = p.meta.duration_ns as f64;
    let cal = with_tracer(calibration());
    let cost = CostModel::new(&p, Some(&cal), None);
    let a = advise(&p, &cost, &host(), &AdviseOptions::default());
    // 200 ms recorded, less 1 ms per run and 2 µs per call for 20,000 calls.
    let untraced = recorded - 1e6 - 2000.0 * 20_000.0;
    assert!((a.costs.run_ns - untraced).abs() < 1.0, "{} vs {untraced}", a.costs.run_ns);
    assert!(a.costs.run_untraced);
    assert_eq!(a.costs.tracer_ns_per_call, Some(2000.0));
    let c = rec(&a, "coalesce-writes");
    assert_eq!(c.saving.share_of, "untraced run, estimated");
    assert!((c.saving.share_of_run - c.saving.ns / untraced).abs() < 1e-9);
    assert!(c.saving.ns <= untraced);
    // The kernel time of each write is 1,000 ns less the recorder's 300 ns.
    let per = c.saving.before_ns / 20_000.0;
    assert!((per - (200.0 + 700.0)).abs() < 1.0, "per write {per}");
    let text = syscluster_advise::text::render(&a);
    assert!(text.contains("of the untraced run, estimated"), "{text}");
    // Without the recorder's cost the share is of the traced run, and said so.
    let cal = calibration();
    let cost = CostModel::new(&p, Some(&cal), None);
    let a = advise(&p, &cost, &host(), &AdviseOptions::default());
    assert_eq!(rec(&a, "coalesce-writes").saving.share_of, "traced run");
    assert!(a.notes.iter().any(|n| n.contains("recorder's cost")), "{:?}", a.notes);
}

#[test]
fn with_the_programs_cpu_time_the_share_is_of_its_untraced_cpu_time() {
    // 20,000 writes recorded in 200 ms of wall time, of which the program
    // used 90 ms of CPU; the recorder adds 2 µs of wall time per call
    // (the machine was busy) but 1.5 µs of the program's CPU.
    let mut p = traced_writes();
    p.meta.cpu_ns = Some(90_000_000);
    let mut cal = with_tracer(calibration());
    cal.tracers[0].cpu_per_call_ns = Some(1500.0);
    let cost = CostModel::new(&p, Some(&cal), None);
    let a = advise(&p, &cost, &host(), &AdviseOptions::default());
    let untraced_cpu = 90e6 - 1500.0 * 20_000.0;
    assert!((a.costs.run_ns - untraced_cpu).abs() < 1.0, "{} vs {untraced_cpu}", a.costs.run_ns);
    assert!(a.costs.run_untraced);
    assert_eq!(a.costs.tracer_ns_per_call, Some(1500.0));
    let c = rec(&a, "coalesce-writes");
    assert_eq!(c.saving.share_of, "untraced CPU time, estimated");
    assert!((c.saving.share_of_run - c.saving.ns.min(untraced_cpu) / untraced_cpu).abs() < 1e-9);
    // The saving itself does not depend on the denominator: 1,000 ns of
    // kernel time less the recorder's 300, plus the 200 ns crossing.
    assert!((c.saving.before_ns / 20_000.0 - 900.0).abs() < 1.0);
    let text = syscluster_advise::text::render(&a);
    assert!(text.contains("untraced CPU time (user + system), estimated: 60.00 ms"), "{text}");
    // A recorder's CPU cost larger than the program's CPU time: the run is
    // still the calls' crossings at least.
    cal.tracers[0].cpu_per_call_ns = Some(10_000.0);
    let a = advise(&p, &CostModel::new(&p, Some(&cal), None), &host(), &AdviseOptions::default());
    assert!((a.costs.run_ns - 20_000.0 * 200.0).abs() < 1.0, "{}", a.costs.run_ns);
    // Without the program's CPU time, the recorded duration is used.
    p.meta.cpu_ns = None;
    let a = advise(&p, &CostModel::new(&p, Some(&cal), None), &host(), &AdviseOptions::default());
    assert_eq!(rec(&a, "coalesce-writes").saving.share_of, "untraced run, estimated");
    assert_eq!(a.costs.tracer_ns_per_call, Some(2000.0));
}

#[test]
fn a_saving_never_exceeds_the_run_it_is_taken_from() {
    let p = traced_writes();
    // A recorder that costs nearly all of the run: the untraced run is the
    // calls' crossings at least, and the saving at most that.
    let mut cal = with_tracer(calibration());
    cal.tracers[0].per_call_ns = 9_900.0;
    let cost = CostModel::new(&p, Some(&cal), None);
    let a = advise(&p, &cost, &host(), &AdviseOptions::default());
    assert!(a.costs.run_ns >= 20_000.0 * 200.0 - 1.0);
    for r in &a.recommendations {
        assert!(r.saving.ns <= a.costs.run_ns + 1e-6, "{}: {} > {}", r.rule, r.saving.ns, a.costs.run_ns);
        assert!(r.saving.share_of_run <= 1.0);
    }
}

/// A dd-like copy with a block of 8: read(0) → write(1), plus a few reads of
/// another size elsewhere (so read.count is 8 in most, not all, calls).
fn dd8(blocks: u64) -> Profile {
    let mut s = Sim::new();
    for _ in 0..40 {
        s.at(0x1010).call("read", &[5, 0x7000, 832], 832);
    }
    for _ in 0..blocks {
        s.at(0x1100).call("read", &[0, 0x5000, 8], 8);
        s.at(0x1110).call("write", &[1, 0x5000, 8], 8);
    }
    s.at(0x1100).call("read", &[0, 0x5000, 8], 0);
    s.finish()
}

#[test]
fn equal_constants_are_no_data_dependency() {
    let a = run(&dd8(2000));
    let s =
        a.sequences.iter().find(|s| s.kind == "loop" && s.labels == ["read(0)", "write(1)"]).expect("the copy loop");
    // write's count is read's result: the bytes read are the bytes written.
    assert!(s.dependencies.iter().any(|d| d.from == 0 && d.to == 1 && d.arg_name == "count"));
    // read's count equals write's result only because both are 8.
    assert!(
        !s.dependencies.iter().any(|d| d.from == 1 && d.to == 0),
        "a coincidence of constants shown as a dependency: {:?}",
        s.dependencies
    );
    assert!(s.specialization.iter().any(|v| v.syscall == "read" && v.arg == "count" && v.value == 8));
    let text = syscluster_advise::text::render(&a);
    assert!(!text.contains("read(0).count = result of write(1)"), "{text}");
}

#[test]
fn no_specialization_from_the_values_of_other_nodes() {
    // Most writes go to fd 1; a loop of writes to fd 2 is another node.
    let mut s = Sim::new();
    for _ in 0..2000 {
        s.at(0x1100).call("write", &[1, 0x5000, 100], 100);
    }
    for _ in 0..100 {
        s.at(0x1200).call("write", &[2, 0x6000, 7], 7);
    }
    let a = run(&s.finish());
    for seq in a.sequences.iter().filter(|q| q.labels == ["write(2)"]) {
        assert!(
            seq.specialization.is_empty(),
            "write(2) specialized on other writes' values: {:?}",
            seq.specialization
        );
    }
    let one = a.sequences.iter().find(|q| q.labels == ["write(1)"]).expect("write(1)");
    assert!(one.specialization.iter().all(|v| v.arg != "fd"), "the key fd is no specialization");
    assert!(one.specialization.iter().any(|v| v.arg == "count" && v.value == 100));
}

#[test]
fn no_function_claimed_without_symbols() {
    let mut s = Sim::new();
    for _ in 0..200 {
        s.at(0x1100).call("getppid", &[], 1);
        s.at(0x1500).call("getuid", &[], 0);
    }
    let p = s.b.finish(
        Meta { backend: "test".into(), mode: "events".into(), duration_ns: s.t, runs: 1, ..Default::default() },
        &mut |a: CodeAddr| Location { module: "/bin/tar".into(), offset: a.offset, ..Default::default() },
    );
    let a = run(&p);
    let seq = a.sequences.iter().find(|q| q.nodes.len() == 2).expect("the loop of two calls");
    assert_eq!(seq.placement.class, "no_symbols", "{:?}", seq.placement);
    let text = syscluster_advise::text::render(&a);
    assert!(!text.contains("code: one function"), "{text}");
    assert!(!text.contains("tar:?"), "{text}");
}

#[test]
fn calls_in_two_modules_are_not_one_function() {
    // memcached's loop: epoll_wait in libevent, read and sendmsg in
    // memcached, neither with symbols, was said to be "one function".
    let mut s = Sim::new();
    for _ in 0..200 {
        s.at(0x1100).call("getppid", &[], 1);
        s.at(0x2500).call("getuid", &[], 0);
    }
    let p = s.b.finish(
        Meta { backend: "test".into(), mode: "events".into(), duration_ns: s.t, runs: 1, ..Default::default() },
        &mut |a: CodeAddr| Location {
            module: if a.offset < 0x2000 { "/lib/libevent.so".into() } else { "/usr/bin/memcached".into() },
            offset: a.offset,
            ..Default::default()
        },
    );
    let a = run(&p);
    let seq = a.sequences.iter().find(|q| q.nodes.len() == 2).expect("the loop of two calls");
    assert_eq!(seq.placement.class, "several_functions", "{:?}", seq.placement);
    let text = syscluster_advise::text::render(&a);
    assert!(!text.contains("code: one function"), "{text}");
}

/// What aggregate mode keeps of a profile: the graph, counts and times.
fn as_aggregate(mut p: Profile) -> Profile {
    p.meta.mode = "aggregate".into();
    p.meta.collected.value_profiles = false;
    p.meta.collected.result_matches = false;
    p.meta.collected.io_patterns = false;
    p.meta.collected.callsites = false;
    p.value_profiles.clear();
    p.io_patterns.clear();
    for e in &mut p.edges {
        e.result_matches.clear();
    }
    for n in &mut p.nodes {
        n.callsites.clear();
        n.key.callsite = None;
    }
    p
}

#[test]
fn aggregate_profiles_get_the_copy_loop_from_the_graph_and_what_is_missing() {
    let a = run(&as_aggregate(copy_loop(50_000, true)));
    let c = rec(&a, "copy-offload");
    assert_eq!(c.labels, ["read(3)", "write(4)"]);
    assert!(
        !c.evidence.iter().any(|e| matches!(e, Evidence::ResultMatch { .. })),
        "no result match was recorded: {:?}",
        c.evidence
    );
    assert!(c.explanation.contains("--mode events"), "{}", c.explanation);
    assert!(c.how.contains("--mode events"), "{}", c.how);
    assert!(!c.before.contains("4096"), "the block size is not known: {}", c.before);
    assert!(
        a.notes.iter().any(|n| n.contains("larger-block (the block size)") && n.contains("--mode events")),
        "{:?}",
        a.notes
    );
    // Rules that need values say nothing on a hunch.
    assert!(!rules(&a).contains("larger-block") && !rules(&a).contains("looped-multicall"));
}

#[test]
fn a_server_sending_file_blocks_gets_sendfile() {
    // pread64 of a file → writev on a connection, as a web server does.
    let mut s = Sim::new();
    s.at(0x1010).call("socket", &[2, SOCK_STREAM, 0], 4);
    s.at(0x1020).open("/srv/www/big.iso", 5);
    for i in 0..2000 {
        s.at(0x1100).call("pread64", &[5, 0x5000, 16384, i * 16384], 16384);
        s.at(0x1110).call("writev", &[4, 0x6000, 2], 16384 + 200);
    }
    let a = run(&s.finish());
    let r = rec(&a, "sendfile");
    assert_eq!(r.labels, ["pread64(5)", "writev(4)"]);
    assert!(r.after.contains("sendfile(4, 5, &off, 16384)"), "{}", r.after);
    assert!(r.before.contains("pread(5, buf, 16384, offset)"), "{}", r.before);
    assert!(r.saving.ns > 0.0 && r.saving.crossings_removed == 0);
    assert!(r.explanation.contains("does not look at or change the bytes"));
}

#[test]
fn a_server_sending_many_files_gets_sendfile() {
    // A web server sending 300 pages, each opened, read in two blocks with
    // pread64, sent with writev and closed: under the descriptor key the
    // reads are one node, `many files`, and the sends one node, the
    // connection: a file node and a socket node whatever the I/O patterns.
    let mut s = Sim::with_key(NodeKeyMode::Descriptor);
    s.at(0x1010).call("socket", &[2, SOCK_STREAM, 0], 4);
    s.at(0x1012).call("connect", &[4, 0x7000, 16], 0);
    for page in 0..300 {
        s.at(0x1020).open(&format!("/srv/www/page{page}.html"), 5);
        for b in 0..2 {
            s.at(0x1100).call("pread64", &[5, 0x5000, 16384, b * 16384], 16384);
            s.at(0x1110).call("writev", &[4, 0x6000, 2], 16384 + 200);
        }
        s.at(0x1120).call("close", &[5], 0);
    }
    let p = s.finish();
    assert!(p.nodes.iter().any(|n| n.syscall == "pread64" && n.key.descriptor.as_deref() == Some("many files")));
    let a = run(&p);
    let r = rec(&a, "sendfile");
    assert_eq!(r.labels.len(), 2, "{:?}", r.labels);
    assert!(r.labels[0].starts_with("pread64(many files"), "{:?}", r.labels);
    assert!(r.labels[1].starts_with("writev(connected tcp"), "{:?}", r.labels);
    assert!(r.after.contains("16384"), "{}", r.after);
    // The same server writing to a pipe (a CGI's stdout) is no socket.
    let mut s = Sim::with_key(NodeKeyMode::Descriptor);
    s.at(0x1010).call("pipe2", &[0x7000, 0], 0);
    for page in 0..300 {
        s.at(0x1020).open(&format!("/srv/www/page{page}.html"), 5);
        for b in 0..2 {
            s.at(0x1100).call("pread64", &[5, 0x5000, 16384, b * 16384], 16384);
            s.at(0x1110).call("writev", &[1, 0x6000, 2], 16384 + 200);
        }
        s.at(0x1120).call("close", &[5], 0);
    }
    assert!(!rules(&run(&s.finish())).contains("sendfile"));
}

#[test]
fn no_keep_open_for_a_journal_written_and_unlinked_between_opens() {
    let mut s = Sim::new();
    for _ in 0..100 {
        s.at(0x1010).open("/db/test.db-journal", 3);
        s.at(0x1020).call("write", &[3, 0x5000, 512], 512);
        s.at(0x1030).call("close", &[3], 0);
        s.at(0x1040).call_path("unlink", &[0], 0, Some(b"/db/test.db-journal"));
    }
    let a = run(&s.finish());
    assert!(!rules(&a).contains("reopen-same-file"), "{:?}", rules(&a));
    // Read only, but unlinked between the opens.
    let mut s = Sim::new();
    for _ in 0..100 {
        s.at(0x1010).open("/run/app.pid", 3);
        s.at(0x1020).call("read", &[3, 0x5000, 64], 6);
        s.at(0x1030).call("close", &[3], 0);
        s.at(0x1040).call_path("unlink", &[0], 0, Some(b"/run/app.pid"));
    }
    let a = run(&s.finish());
    assert!(!rules(&a).contains("reopen-same-file"), "{:?}", rules(&a));
}

#[test]
fn keep_open_names_only_the_sites_that_opened_the_file() {
    let mut s = Sim::new();
    // One-off opens elsewhere in the program.
    for (i, p) in ["/etc/a", "/etc/b", "/etc/c"].iter().enumerate() {
        s.at(0x1800 + 16 * i as u64).open(p, 6);
        s.at(0x1900).call("close", &[6], 0);
    }
    for _ in 0..100 {
        s.at(0x1010).open("/etc/app.conf", 3);
        s.at(0x1020).call("read", &[3, 0x5000, 4096], 64);
        s.at(0x1030).call("close", &[3], 0);
    }
    let a = run(&s.finish());
    let r = rec(&a, "reopen-same-file");
    let open_sites: Vec<_> = r.locations.iter().filter(|l| l.syscall == "openat").collect();
    assert_eq!(open_sites.len(), 1, "{:?}", r.locations);
    assert_eq!(open_sites[0].count, 100);
    assert!(r.explanation.contains("never written"), "{}", r.explanation);
}
