//! The table of measurements: each row says what it measures, how, in
//! which unit, which field of the calibration it fills and what it needs
//! of the host; `measure` runs the rows in order, one progress line per
//! figure. Adding a measurement is adding a row to `TABLE` (and, for a new
//! kind of figure, a `Fills` variant and the field it fills in
//! `syscluster_model::calibration`).
//!
//! A timed figure is the least disturbed of `samples` batches of calls
//! lasting about `batch` each (the machine is shared: interference only
//! ever adds time); the median is kept beside it.

use std::ffi::CString;
use std::hint::black_box;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use syscluster_model::calibration::{
    Calibration, CallCost, Crossing, KernelFixed, MulticallFigures, TracerCost, CALIBRATION_VERSION,
};
use syscluster_model::host::Host;
use syscluster_record::{Backend, Mode};

#[derive(Clone, Debug)]
pub struct MeasureOptions {
    /// Batches timed per figure.
    pub samples: u32,
    /// Wall time one batch should take.
    pub batch: Duration,
    /// A directory on the file system whose costs to measure (scratch
    /// files are made and removed there).
    pub dir: PathBuf,
    /// mc-calibrate to run, if built, and where it writes (libmulticall's
    /// auto backend reads that file).
    pub mc_calibrate: Option<(PathBuf, PathBuf)>,
    /// Fewer repetitions in mc-calibrate (seconds instead of half a minute).
    pub mc_quick: bool,
}

impl Default for MeasureOptions {
    fn default() -> Self {
        MeasureOptions {
            samples: 9,
            batch: Duration::from_millis(4),
            dir: std::env::temp_dir(),
            mc_calibrate: None,
            mc_quick: false,
        }
    }
}

/// One row of the table.
#[derive(Clone, Copy)]
pub struct Measurement {
    /// A short name (progress lines, `syscluster calibrate --list`).
    pub name: &'static str,
    /// The field of the calibration its figures fill.
    pub fills: Fills,
    /// Bytes per call of each figure: one figure per size; `&[0]` for a
    /// call that moves nothing.
    pub sizes: &'static [u64],
    /// The unit of its figures.
    pub unit: &'static str,
    /// What it needs of the host; without it, it is left out (and says so).
    pub needs: Needs,
    /// What exactly is timed (a cost's `what`); `{bytes}` stands for the size.
    pub how: &'static str,
    /// Measures one size.
    pub run: fn(&mut Bench, u64) -> io::Result<Figure>,
}

/// The field of the calibration a measurement fills.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fills {
    /// `crossing.syscall_ns` (and its median, samples, iterations).
    Crossing,
    /// `crossing.function_call_ns` (and its median).
    FunctionCall,
    /// One entry of `costs` per size: `{syscall, on, bytes}`.
    Cost { syscall: &'static str, on: &'static str },
    /// `multicall`: libmulticall's own figures, as mc-calibrate wrote them.
    Multicall,
    /// One entry of `tracers`: a recorder's own cost.
    Tracer,
    /// `kernel`: the fixed and per-byte work of the transfers (kernel.rs).
    Kernel,
}

/// What a measurement needs of the host.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Needs {
    Nothing,
    /// libmulticall's mc-calibrate, built (`MeasureOptions::mc_calibrate`).
    McCalibrate,
    /// A recorder that can run here (BPF needs the right to load programs,
    /// ptrace the right to trace): tried, left out when it cannot.
    Recorder,
    /// io_uring, usable by this process (`Host::uring`).
    Uring,
    /// libmulticall's kernel module (`Host::kmod`).
    Kmod,
}

/// What a measurement found.
pub enum Figure {
    Timed(Sample),
    Multicall(MulticallFigures),
    Tracer(TracerCost),
    Kernel(Vec<KernelFixed>),
    /// Not measured, and why (a recorder that cannot run here).
    Absent(String),
}

/// One timed figure.
#[derive(Clone, Copy, Debug)]
pub struct Sample {
    /// ns per call, median over the batches.
    pub median: f64,
    /// ns per call, least disturbed batch.
    pub min: f64,
    /// Calls per batch.
    pub iterations: u64,
}

impl Fills {
    /// The field, as the calibration file names it.
    pub fn field(&self) -> String {
        match self {
            Fills::Crossing => "crossing.syscall_ns".into(),
            Fills::FunctionCall => "crossing.function_call_ns".into(),
            Fills::Cost { syscall, on } => format!("costs[{syscall}, {}]", if on.is_empty() { "-" } else { on }),
            Fills::Multicall => "multicall".into(),
            Fills::Tracer => "tracers".into(),
            Fills::Kernel => "kernel".into(),
        }
    }
}

impl Needs {
    /// Why the host does not offer what is needed, if it does not.
    fn missing(self, opts: &MeasureOptions, host: &Host) -> Option<String> {
        match self {
            Needs::Nothing | Needs::Recorder => None,
            Needs::McCalibrate => opts
                .mc_calibrate
                .is_none()
                .then(|| "mc-calibrate not found: build libmulticall, or pass --mc-calibrate".into()),
            Needs::Uring => (!host.uring).then(|| "io_uring is not usable here".into()),
            Needs::Kmod => (!host.kmod.usable).then(|| format!("no multicall module answers at {}", host.kmod.device)),
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Needs::Nothing => "-",
            Needs::McCalibrate => "mc-calibrate",
            Needs::Recorder => "recorder",
            Needs::Uring => "io_uring",
            Needs::Kmod => "kmod",
        }
    }
}

/// Sizes of the transfers timed.
const FILE_SIZES: &[u64] = &[8, 512, 4096, 65536, 131072];
const DGRAM_SIZES: &[u64] = &[64, 1024, 8192];
const NONE: &[u64] = &[0];
/// The source file: in the page cache but larger than the CPU caches, so
/// that bulk reads and copies stream from memory as they do in programs.
const SRC_LEN: usize = 64 << 20;
/// Datagrams per sendmmsg.
const VLEN: usize = 32;

/// Every measurement, in the order they run.
pub const TABLE: &[Measurement] = &[
    // Seed 000 table 1: a crossing against a function call.
    Measurement {
        name: "function-call",
        fills: Fills::FunctionCall,
        sizes: NONE,
        unit: "ns per call",
        needs: Needs::Nothing,
        how: "a call of a non-inlined function of one argument",
        run: |b, _| Ok(Figure::Timed(b.time(function_calls))),
    },
    Measurement {
        name: "crossing",
        fills: Fills::Crossing,
        sizes: NONE,
        unit: "ns per call",
        needs: Needs::Nothing,
        how: "getppid, the cheapest call that cannot be cached",
        run: |b, _| Ok(Figure::Timed(b.time(|n| syscalls0(libc::SYS_getppid, n)))),
    },
    // Calls with no transfer.
    Measurement {
        name: "getpid",
        fills: Fills::Cost { syscall: "getpid", on: "" },
        sizes: NONE,
        unit: "ns per call",
        needs: Needs::Nothing,
        how: "getpid as a system call (glibc does not cache it)",
        run: |b, _| Ok(Figure::Timed(b.time(|n| syscalls0(libc::SYS_getpid, n)))),
    },
    Measurement {
        name: "gettimeofday",
        fills: Fills::Cost { syscall: "gettimeofday", on: "" },
        sizes: NONE,
        unit: "ns per call",
        needs: Needs::Nothing,
        how: "gettimeofday as a system call",
        run: |b, _| Ok(Figure::Timed(b.time(gettimeofday_syscalls))),
    },
    Measurement {
        name: "clock_gettime-vdso",
        fills: Fills::Cost { syscall: "clock_gettime", on: "vdso" },
        sizes: NONE,
        unit: "ns per call",
        needs: Needs::Nothing,
        how: "clock_gettime(CLOCK_REALTIME) through glibc and the vDSO",
        run: |b, _| Ok(Figure::Timed(b.time(clock_gettime_vdso))),
    },
    Measurement {
        name: "gettimeofday-vdso",
        fills: Fills::Cost { syscall: "gettimeofday", on: "vdso" },
        sizes: NONE,
        unit: "ns per call",
        needs: Needs::Nothing,
        how: "gettimeofday through glibc and the vDSO",
        run: |b, _| Ok(Figure::Timed(b.time(gettimeofday_vdso))),
    },
    Measurement {
        name: "select-pipe",
        fills: Fills::Cost { syscall: "select", on: "pipe" },
        sizes: NONE,
        unit: "ns per call",
        needs: Needs::Nothing,
        how: "select of one readable pipe, zero timeout",
        run: select_pipe,
    },
    // A regular file in the page cache.
    Measurement {
        name: "lseek-set",
        fills: Fills::Cost { syscall: "lseek", on: "file" },
        sizes: NONE,
        unit: "ns per call",
        needs: Needs::Nothing,
        how: "lseek(fd, x, SEEK_SET) on a regular file",
        run: lseek_set,
    },
    Measurement {
        name: "lseek-cur",
        fills: Fills::Cost { syscall: "lseek", on: "cur" },
        sizes: NONE,
        unit: "ns per call",
        needs: Needs::Nothing,
        how: "lseek(fd, 0, SEEK_CUR): asking for the offset",
        run: lseek_cur,
    },
    Measurement {
        name: "read-file",
        fills: Fills::Cost { syscall: "read", on: "file" },
        sizes: FILE_SIZES,
        unit: "ns per call",
        needs: Needs::Nothing,
        how: "read of {bytes} B from a 64 MiB file in the page cache, sequential",
        run: read_file,
    },
    Measurement {
        name: "pread-file",
        fills: Fills::Cost { syscall: "pread64", on: "file" },
        sizes: &[512, 4096],
        unit: "ns per call",
        needs: Needs::Nothing,
        how: "pread of {bytes} B from a cached file, sequential offsets",
        run: pread_file,
    },
    Measurement {
        name: "fstat",
        fills: Fills::Cost { syscall: "newfstatat", on: "fd" },
        sizes: NONE,
        unit: "ns per call",
        needs: Needs::Nothing,
        how: "fstat of an open file (glibc: newfstatat(fd, \"\", …, AT_EMPTY_PATH))",
        run: fstat_fd,
    },
    Measurement {
        name: "stat-path",
        fills: Fills::Cost { syscall: "newfstatat", on: "path" },
        sizes: NONE,
        unit: "ns per call",
        needs: Needs::Nothing,
        how: "stat of the source file's path",
        run: stat_path,
    },
    Measurement {
        name: "access-path",
        fills: Fills::Cost { syscall: "access", on: "path" },
        sizes: NONE,
        unit: "ns per call",
        needs: Needs::Nothing,
        how: "access of the same path",
        run: access_path,
    },
    Measurement {
        name: "open-close",
        fills: Fills::Cost { syscall: "openat+close", on: "file" },
        sizes: NONE,
        unit: "ns per pair",
        needs: Needs::Nothing,
        how: "open and close of a cached file, per pair",
        run: open_close,
    },
    Measurement {
        name: "write-file",
        fills: Fills::Cost { syscall: "write", on: "file" },
        sizes: FILE_SIZES,
        unit: "ns per call",
        needs: Needs::Nothing,
        how: "appending write of {bytes} B to a regular file",
        run: write_file,
    },
    Measurement {
        name: "copy_file_range",
        fills: Fills::Cost { syscall: "copy_file_range", on: "file" },
        sizes: &[65536, 1 << 20],
        unit: "ns per call",
        needs: Needs::Nothing,
        how: "copy_file_range of {bytes} B between regular files",
        run: copy_file_range,
    },
    // Datagrams to a bound socket on loopback that never reads (as a
    // server sending to a slow client).
    Measurement {
        name: "sendto-udp",
        fills: Fills::Cost { syscall: "sendto", on: "udp" },
        sizes: DGRAM_SIZES,
        unit: "ns per call",
        needs: Needs::Nothing,
        how: "sendto of a {bytes} B datagram on loopback",
        run: sendto_udp,
    },
    Measurement {
        name: "sendmmsg-udp",
        fills: Fills::Cost { syscall: "sendmmsg", on: "udp" },
        sizes: DGRAM_SIZES,
        unit: "ns per datagram",
        needs: Needs::Nothing,
        how: "sendmmsg of 32 datagrams of {bytes} B, per datagram",
        run: sendmmsg_udp,
    },
    // libmulticall's backends by batch size.
    // The kernel's fixed work per call of the transfers a larger block or a
    // kernel copy removes (kernel.rs): read, write and copy_file_range at two
    // sizes each, in alternating batches, fitted as fixed + per byte.
    Measurement {
        name: "kernel-fixed-work",
        fills: Fills::Kernel,
        sizes: NONE,
        unit: "ns per call + ns per byte",
        needs: Needs::Nothing,
        how: "read and appending write of a page-cached file at 4 KiB and 128 KiB, copy_file_range at 64 KiB and 1 MiB, alternately",
        run: |b, _| {
            let (src, dst) = (b.source()?, b.dest()?);
            Ok(Figure::Kernel(crate::kernel::fixed_costs(b.opts, src, SRC_LEN, dst)?))
        },
    },
    Measurement {
        name: "mc-calibrate",
        fills: Fills::Multicall,
        sizes: NONE,
        unit: "mc-calibrate's figures (ns by backend and batch size)",
        needs: Needs::McCalibrate,
        how: "libmulticall's mc-calibrate, its output kept verbatim",
        run: |b, _| Ok(Figure::Multicall(run_mc_calibrate(b.opts)?)),
    },
    // The recorders' own cost.
    Measurement {
        name: "recorder-bpf-events",
        fills: Fills::Tracer,
        sizes: NONE,
        unit: "ns per recorded call",
        needs: Needs::Recorder,
        how: "dd bs=1 count=100000 and 200000, recorded by BPF (events) and not",
        run: |b, _| Ok(b.tracer(Backend::Bpf, Mode::Events, 100_000)),
    },
    Measurement {
        name: "recorder-bpf-aggregate",
        fills: Fills::Tracer,
        sizes: NONE,
        unit: "ns per recorded call",
        needs: Needs::Recorder,
        how: "dd bs=1 count=100000 and 200000, recorded by BPF (aggregate) and not",
        run: |b, _| Ok(b.tracer(Backend::Bpf, Mode::Aggregate, 100_000)),
    },
    Measurement {
        name: "recorder-ptrace",
        fills: Fills::Tracer,
        sizes: NONE,
        unit: "ns per recorded call",
        needs: Needs::Recorder,
        how: "dd bs=1 count=10000 and 20000, recorded by ptrace and not",
        run: |b, _| Ok(b.tracer(Backend::Ptrace, Mode::Events, 10_000)),
    },
];

/// Measures this machine, row by row of `TABLE`; `progress` hears one line
/// per figure.
pub fn measure(opts: &MeasureOptions, host: &Host, progress: &mut dyn FnMut(&str)) -> io::Result<Calibration> {
    measure_rows(TABLE, opts, host, progress)
}

/// Measures the rows of `table`, which must hold a crossing and a
/// function-call row.
pub fn measure_rows(
    table: &[Measurement],
    opts: &MeasureOptions,
    host: &Host,
    progress: &mut dyn FnMut(&str),
) -> io::Result<Calibration> {
    let mut b = Bench::new(opts);
    b.warm_up();
    let (mut syscall, mut function) = (None, None);
    let mut costs = Vec::new();
    let mut multicall = None;
    let mut tracers = Vec::new();
    let mut kernel = Vec::new();
    for m in table {
        if let Some(why) = m.needs.missing(opts, host) {
            progress(&format!("{}: not measured ({why})", m.name));
            continue;
        }
        if matches!(m.fills, Fills::Multicall | Fills::Tracer) {
            progress(&format!("{}: {}…", m.name, m.how));
        }
        for &bytes in m.sizes {
            let what = m.how.replace("{bytes}", &bytes.to_string());
            match ((m.run)(&mut b, bytes)?, m.fills) {
                (Figure::Absent(why), _) => progress(&format!("{}: not measured ({why})", m.name)),
                (Figure::Timed(s), Fills::Crossing) => {
                    progress(&format!("crossing (getppid) {:.1} ns", s.min));
                    syscall = Some(s);
                }
                (Figure::Timed(s), Fills::FunctionCall) => {
                    progress(&format!("function call {:.2} ns", s.min));
                    function = Some(s);
                }
                (Figure::Timed(s), Fills::Cost { syscall, on }) => {
                    progress(&format!("{syscall:<16} {on:<5} {bytes:>8} B  {:>9.1} {}  ({what})", s.min, m.unit));
                    costs.push(CallCost {
                        syscall: syscall.into(),
                        on: on.into(),
                        bytes,
                        ns: s.min,
                        median_ns: s.median,
                        what,
                    });
                }
                (Figure::Multicall(f), Fills::Multicall) => multicall = Some(f),
                (Figure::Tracer(t), Fills::Tracer) => {
                    progress(&format!(
                        "recorder {}/{}: {:.0} ns per recorded call ({:.0} ns of it inside the call), {:.1} ms per run",
                        t.backend,
                        t.mode,
                        t.per_call_ns,
                        t.kernel_ns,
                        t.fixed_ns / 1e6
                    ));
                    tracers.push(t);
                }
                (Figure::Kernel(lines), Fills::Kernel) => {
                    for k in &lines {
                        progress(&format!(
                            "{:<16} {:<5} fixed {:>7.1} ns per call + {:.4} ns/B (median of the rounds {:.1} ns + {:.4} ns/B)",
                            k.syscall, k.on, k.fixed_ns, k.per_byte_ns, k.fixed_median_ns, k.per_byte_median_ns
                        ));
                    }
                    kernel.extend(lines);
                }
                _ => {
                    return Err(io::Error::other(format!(
                        "measurement {} gave a figure {} does not hold",
                        m.name,
                        m.fills.field()
                    )))
                }
            }
        }
    }
    let (Some(s), Some(f)) = (syscall, function) else {
        return Err(io::Error::other("the table has no crossing or no function-call measurement"));
    };
    let crossing = Crossing {
        syscall: "getppid".into(),
        syscall_ns: s.min,
        syscall_median_ns: s.median,
        function_call_ns: f.min,
        function_call_median_ns: f.median,
        ratio: s.min / f.min.max(1e-3),
        samples: opts.samples,
        iterations: s.iterations,
    };
    progress(&format!("a crossing costs {:.0} function calls", crossing.ratio));
    Ok(Calibration {
        calibration_version: CALIBRATION_VERSION,
        tool: format!("syscluster {}", env!("CARGO_PKG_VERSION")),
        created_at: syscluster_model::machine::now_epoch(),
        machine: host.machine.clone(),
        crossing,
        costs,
        multicall,
        tracers,
        kernel,
    })
}

/// What the measurements share: the options, and scratch objects made on
/// first use (and removed on drop).
pub struct Bench<'o> {
    opts: &'o MeasureOptions,
    src_path: PathBuf,
    dst_path: PathBuf,
    src: Option<OwnedFd>,
    dst: Option<OwnedFd>,
    /// The sending socket, and the bound one it sends to.
    udp: Option<(OwnedFd, OwnedFd, libc::sockaddr_in)>,
}

impl Drop for Bench<'_> {
    fn drop(&mut self) {
        for p in [&self.src_path, &self.dst_path] {
            let _ = std::fs::remove_file(p);
        }
    }
}

impl<'o> Bench<'o> {
    pub fn new(opts: &'o MeasureOptions) -> Bench<'o> {
        let pid = std::process::id();
        Bench {
            opts,
            src_path: opts.dir.join(format!(".syscluster-calibrate-{pid}-src")),
            dst_path: opts.dir.join(format!(".syscluster-calibrate-{pid}-dst")),
            src: None,
            dst: None,
            udp: None,
        }
    }

    /// CPU frequency, caches, page tables: warm before the first figure.
    fn warm_up(&self) {
        let warm = Instant::now();
        while warm.elapsed() < Duration::from_millis(100) {
            syscalls0(libc::SYS_getppid, 1);
        }
    }

    /// Times `run(n)`, which makes n calls: picks n so that a batch takes
    /// about `opts.batch`, then times `opts.samples` batches.
    pub fn time(&self, mut run: impl FnMut(u64)) -> Sample {
        let opts = self.opts;
        let mut n: u64 = 16;
        loop {
            let t = Instant::now();
            run(n);
            let e = t.elapsed();
            if e >= opts.batch / 2 || n >= 1 << 26 {
                let scale = opts.batch.as_secs_f64() / e.as_secs_f64().max(1e-9);
                n = ((n as f64 * scale) as u64).clamp(16, 1 << 26);
                break;
            }
            n *= 4;
        }
        // Timed by the thread's CPU time, not the wall clock: on a shared
        // machine a batch is often preempted, and others' time is no cost of
        // the calls (kernel.rs, thread_cpu_ns).
        let mut per: Vec<f64> = (0..opts.samples.max(1))
            .map(|_| {
                let t = crate::kernel::thread_cpu_ns();
                run(n);
                (crate::kernel::thread_cpu_ns() - t) as f64 / n as f64
            })
            .collect();
        per.sort_by(f64::total_cmp);
        Sample { median: per[per.len() / 2], min: per[0], iterations: n }
    }

    /// The 64 MiB source file, open for reading.
    pub fn source(&mut self) -> io::Result<RawFd> {
        if self.src.is_none() {
            let data: Vec<u8> = (0..SRC_LEN).map(|i| (i * 131 % 251) as u8).collect();
            std::fs::write(&self.src_path, &data)
                .map_err(|e| io::Error::new(e.kind(), format!("write {}: {e}", self.src_path.display())))?;
            self.src = Some(open(&self.src_path, libc::O_RDONLY)?);
        }
        Ok(self.src.as_ref().map_or(-1, |f| f.as_raw_fd()))
    }

    /// The source file's path (after `source`).
    pub fn source_path(&self) -> io::Result<CString> {
        CString::new(self.src_path.as_os_str().as_encoded_bytes()).map_err(|_| io::Error::other("path with a NUL byte"))
    }

    /// The destination file, empty and open for writing.
    pub fn dest(&mut self) -> io::Result<RawFd> {
        if self.dst.is_none() {
            self.dst = Some(open(&self.dst_path, libc::O_WRONLY | libc::O_CREAT | libc::O_TRUNC)?);
        }
        let fd = self.dst.as_ref().map_or(-1, |f| f.as_raw_fd());
        truncate(fd);
        Ok(fd)
    }

    /// A datagram socket, and the address of a bound one on loopback that
    /// never reads.
    pub fn udp(&mut self) -> io::Result<(RawFd, libc::sockaddr_in)> {
        if self.udp.is_none() {
            let socket = || -> io::Result<OwnedFd> {
                // SAFETY: a plain socket call; the fd returned is owned here.
                let fd = check(
                    unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) } as libc::c_long,
                    "socket",
                )?;
                // SAFETY: just made, owned by nobody else.
                Ok(unsafe { OwnedFd::from_raw_fd(fd as i32) })
            };
            let (out, sink) = (socket()?, socket()?);
            // SAFETY: zeroed sockaddr_in is valid; bind and getsockname get
            // its size.
            unsafe {
                let mut a: libc::sockaddr_in = std::mem::zeroed();
                a.sin_family = libc::AF_INET as libc::sa_family_t;
                a.sin_addr.s_addr = u32::from_be_bytes([127, 0, 0, 1]).to_be();
                let mut len = std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t;
                check(
                    libc::bind(sink.as_raw_fd(), &a as *const _ as *const libc::sockaddr, len) as libc::c_long,
                    "bind",
                )?;
                check(
                    libc::getsockname(sink.as_raw_fd(), &mut a as *mut _ as *mut libc::sockaddr, &mut len)
                        as libc::c_long,
                    "getsockname",
                )?;
                self.udp = Some((out, sink, a));
            }
        }
        let (out, _, a) = self.udp.as_ref().expect("made above");
        Ok((out.as_raw_fd(), *a))
    }

    /// A recorder's cost, or why it cannot run here.
    fn tracer(&self, backend: Backend, mode: Mode, blocks: u64) -> Figure {
        match crate::tracers::measure(backend, mode, blocks, self.opts.samples.clamp(1, 3)) {
            Ok(t) => Figure::Tracer(t),
            Err(e) => Figure::Absent(e),
        }
    }
}

fn check(r: libc::c_long, what: &str) -> io::Result<libc::c_long> {
    if r < 0 {
        let e = io::Error::last_os_error();
        return Err(io::Error::new(e.kind(), format!("{what}: {e}")));
    }
    Ok(r)
}

fn open(path: &Path, flags: i32) -> io::Result<OwnedFd> {
    let c = CString::new(path.as_os_str().as_encoded_bytes()).map_err(|_| io::Error::other("path with a NUL byte"))?;
    // SAFETY: a valid C string; the fd returned is owned here.
    let fd = unsafe { libc::open(c.as_ptr(), flags | libc::O_CLOEXEC, 0o600) };
    check(fd as libc::c_long, &format!("open {}", path.display()))?;
    // SAFETY: fd was just opened and is owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Empties a file and rewinds its descriptor.
fn truncate(fd: RawFd) {
    // SAFETY: truncating and rewinding an fd the bench owns.
    unsafe {
        libc::ftruncate(fd, 0);
        libc::lseek(fd, 0, libc::SEEK_SET);
    }
}

#[inline(never)]
fn leaf(x: u64) -> u64 {
    black_box(x).wrapping_add(1)
}

fn function_calls(n: u64) {
    let mut acc = 0u64;
    for _ in 0..n {
        acc = leaf(acc);
    }
    black_box(acc);
}

/// n calls of a system call that takes no arguments and cannot fail.
fn syscalls0(nr: libc::c_long, n: u64) {
    for _ in 0..n {
        // SAFETY: getppid and getpid take no arguments.
        black_box(unsafe { libc::syscall(nr) });
    }
}

fn gettimeofday_syscalls(n: u64) {
    let mut tv = libc::timeval { tv_sec: 0, tv_usec: 0 };
    for _ in 0..n {
        // SAFETY: tv is a valid timeval; a null timezone is allowed.
        black_box(unsafe { libc::syscall(libc::SYS_gettimeofday, &mut tv as *mut libc::timeval, 0usize) });
    }
}

fn clock_gettime_vdso(n: u64) {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    for _ in 0..n {
        // SAFETY: ts is a valid timespec.
        black_box(unsafe { libc::clock_gettime(libc::CLOCK_REALTIME, &mut ts) });
    }
}

fn gettimeofday_vdso(n: u64) {
    let mut tv = libc::timeval { tv_sec: 0, tv_usec: 0 };
    for _ in 0..n {
        // SAFETY: tv is a valid timeval; a null timezone is allowed.
        black_box(unsafe { libc::gettimeofday(&mut tv, std::ptr::null_mut()) });
    }
}

/// select with a zero timeout on a readable pipe (seed 000's mpeg_play loop).
fn select_pipe(b: &mut Bench, _: u64) -> io::Result<Figure> {
    let mut p = [0i32; 2];
    // SAFETY: p has room for two fds.
    check(unsafe { libc::pipe2(p.as_mut_ptr(), libc::O_CLOEXEC) } as libc::c_long, "pipe")?;
    // SAFETY: both fds were just made and are owned here.
    let (pr, pw) = unsafe { (OwnedFd::from_raw_fd(p[0]), OwnedFd::from_raw_fd(p[1])) };
    // SAFETY: one byte from a valid buffer.
    check(unsafe { libc::write(pw.as_raw_fd(), b"x".as_ptr().cast(), 1) } as libc::c_long, "write to pipe")?;
    let rfd = pr.as_raw_fd();
    Ok(Figure::Timed(b.time(|n| {
        for _ in 0..n {
            // SAFETY: set and tv are valid; rfd < FD_SETSIZE (a fresh fd of a small process).
            unsafe {
                let mut set: libc::fd_set = std::mem::zeroed();
                libc::FD_SET(rfd, &mut set);
                let mut tv = libc::timeval { tv_sec: 0, tv_usec: 0 };
                black_box(libc::syscall(
                    libc::SYS_select,
                    rfd + 1,
                    &mut set as *mut libc::fd_set,
                    0usize,
                    0usize,
                    &mut tv as *mut libc::timeval,
                ));
            }
        }
    })))
}

fn lseek_set(b: &mut Bench, _: u64) -> io::Result<Figure> {
    let sfd = b.source()?;
    Ok(Figure::Timed(b.time(|n| {
        for i in 0..n {
            // SAFETY: an lseek on an owned fd.
            black_box(unsafe { libc::lseek(sfd, ((i & 255) * 4096) as libc::off_t, libc::SEEK_SET) });
        }
    })))
}

fn lseek_cur(b: &mut Bench, _: u64) -> io::Result<Figure> {
    let sfd = b.source()?;
    Ok(Figure::Timed(b.time(|n| {
        for _ in 0..n {
            // SAFETY: an lseek on an owned fd.
            black_box(unsafe { libc::lseek(sfd, 0, libc::SEEK_CUR) });
        }
    })))
}

fn read_file(b: &mut Bench, bytes: u64) -> io::Result<Figure> {
    let sfd = b.source()?;
    let bytes = bytes as usize;
    let mut buf = vec![0u8; bytes.max(1)];
    // SAFETY: rewinding an owned fd.
    unsafe { libc::lseek(sfd, 0, libc::SEEK_SET) };
    Ok(Figure::Timed(b.time(|n| {
        for _ in 0..n {
            // SAFETY: buf has at least `bytes` bytes.
            let r = unsafe { libc::read(sfd, buf.as_mut_ptr().cast(), bytes) };
            if r < bytes as isize {
                // End of file: start again (amortized).
                // SAFETY: as above.
                unsafe { libc::lseek(sfd, 0, libc::SEEK_SET) };
            }
        }
    })))
}

/// The offsets walk the file as `read_file` does, so that the two differ
/// only by the call.
fn pread_file(b: &mut Bench, bytes: u64) -> io::Result<Figure> {
    let sfd = b.source()?;
    let mut buf = vec![0u8; bytes as usize];
    Ok(Figure::Timed(b.time(|n| {
        for i in 0..n {
            let at = (i % (SRC_LEN as u64 / bytes)) * bytes;
            // SAFETY: buf has `bytes` bytes.
            black_box(unsafe { libc::pread(sfd, buf.as_mut_ptr().cast(), bytes as usize, at as libc::off_t) });
        }
    })))
}

fn fstat_fd(b: &mut Bench, _: u64) -> io::Result<Figure> {
    let sfd = b.source()?;
    Ok(Figure::Timed(b.time(|n| {
        for _ in 0..n {
            // SAFETY: st is a valid buffer.
            let mut st: libc::stat = unsafe { std::mem::zeroed() };
            black_box(unsafe { libc::fstat(sfd, &mut st) });
        }
    })))
}

fn stat_path(b: &mut Bench, _: u64) -> io::Result<Figure> {
    b.source()?;
    let path = b.source_path()?;
    Ok(Figure::Timed(b.time(|n| {
        for _ in 0..n {
            // SAFETY: a valid path and stat buffer.
            let mut st: libc::stat = unsafe { std::mem::zeroed() };
            black_box(unsafe { libc::stat(path.as_ptr(), &mut st) });
        }
    })))
}

fn access_path(b: &mut Bench, _: u64) -> io::Result<Figure> {
    b.source()?;
    let path = b.source_path()?;
    Ok(Figure::Timed(b.time(|n| {
        for _ in 0..n {
            // SAFETY: a valid path.
            black_box(unsafe { libc::access(path.as_ptr(), libc::R_OK) });
        }
    })))
}

fn open_close(b: &mut Bench, _: u64) -> io::Result<Figure> {
    b.source()?;
    let path = b.source_path()?;
    Ok(Figure::Timed(b.time(|n| {
        for _ in 0..n {
            // SAFETY: a valid path; the fd is closed at once.
            unsafe {
                let fd = libc::open(path.as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC);
                if fd >= 0 {
                    libc::close(fd);
                }
            }
        }
    })))
}

/// Appending writes to a regular file; truncated every 8 MiB (amortized).
fn write_file(b: &mut Bench, bytes: u64) -> io::Result<Figure> {
    let dfd = b.dest()?;
    let bytes = bytes as usize;
    let buf = vec![0u8; bytes];
    let mut written = 0usize;
    Ok(Figure::Timed(b.time(|n| {
        for _ in 0..n {
            // SAFETY: buf has `bytes` bytes.
            unsafe { libc::write(dfd, buf.as_ptr().cast(), bytes) };
            written += bytes;
            if written >= 8 << 20 {
                truncate(dfd);
                written = 0;
            }
        }
    })))
}

/// In-kernel copy, as the copy-offload rewrite does it: whole chunks of the
/// source appended to the destination, truncated every 8 MiB.
fn copy_file_range(b: &mut Bench, bytes: u64) -> io::Result<Figure> {
    let sfd = b.source()?;
    let dfd = b.dest()?;
    let bytes = bytes as usize;
    let mut copied = 0usize;
    Ok(Figure::Timed(b.time(|n| {
        for i in 0..n {
            let mut off_in = ((i as usize * bytes) % SRC_LEN) as libc::loff_t;
            // SAFETY: owned fds; off_in is a valid offset variable.
            let r = unsafe { libc::copy_file_range(sfd, &mut off_in, dfd, std::ptr::null_mut(), bytes, 0) };
            copied += r.max(0) as usize;
            if copied >= 8 << 20 {
                truncate(dfd);
                copied = 0;
            }
        }
    })))
}

fn sendto_udp(b: &mut Bench, bytes: u64) -> io::Result<Figure> {
    let (ofd, a) = b.udp()?;
    let buf = vec![0u8; bytes as usize];
    let len = std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t;
    Ok(Figure::Timed(b.time(|n| {
        for _ in 0..n {
            // SAFETY: a valid buffer and address on an owned socket.
            black_box(unsafe {
                libc::sendto(ofd, buf.as_ptr().cast(), buf.len(), 0, &a as *const _ as *const libc::sockaddr, len)
            });
        }
    })))
}

/// sendmmsg of `VLEN` datagrams; the figure is per datagram.
fn sendmmsg_udp(b: &mut Bench, bytes: u64) -> io::Result<Figure> {
    let (ofd, a) = b.udp()?;
    let mut buf = vec![0u8; bytes as usize];
    let len = std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t;
    let mut iov: Vec<libc::iovec> =
        (0..VLEN).map(|_| libc::iovec { iov_base: buf.as_mut_ptr().cast(), iov_len: bytes as usize }).collect();
    let mut msgs: Vec<libc::mmsghdr> = (0..VLEN)
        .map(|i| {
            // SAFETY: a zeroed mmsghdr is valid; its pointers are set below.
            let mut m: libc::mmsghdr = unsafe { std::mem::zeroed() };
            m.msg_hdr.msg_name = &a as *const _ as *mut libc::c_void;
            m.msg_hdr.msg_namelen = len;
            m.msg_hdr.msg_iov = &mut iov[i];
            m.msg_hdr.msg_iovlen = 1;
            m
        })
        .collect();
    Ok(Figure::Timed(b.time(|n| {
        for _ in 0..n.div_ceil(VLEN as u64) {
            // SAFETY: msgs points at live iovecs, buffer and address.
            black_box(unsafe { libc::sendmmsg(ofd, msgs.as_mut_ptr(), VLEN as u32, 0) });
        }
    })))
}

/// Runs libmulticall's mc-calibrate, writing where the library's auto
/// backend reads, and keeps its JSON.
fn run_mc_calibrate(opts: &MeasureOptions) -> io::Result<MulticallFigures> {
    let Some((tool, out)) = &opts.mc_calibrate else {
        return Err(io::Error::other("no mc-calibrate to run"));
    };
    let mut cmd = std::process::Command::new(tool);
    cmd.arg("-o").arg(out).arg("--dir").arg(&opts.dir).stdin(std::process::Stdio::null());
    if opts.mc_quick {
        cmd.arg("--quick");
    }
    let o = cmd.output().map_err(|e| io::Error::new(e.kind(), format!("cannot run {}: {e}", tool.display())))?;
    if !o.status.success() {
        let err = String::from_utf8_lossy(&o.stderr);
        return Err(io::Error::other(format!(
            "{} failed ({}): {}",
            tool.display(),
            o.status,
            err.lines().last().unwrap_or("")
        )));
    }
    let bytes = std::fs::read(out)
        .map_err(|e| io::Error::new(e.kind(), format!("{} wrote no {}: {e}", tool.display(), out.display())))?;
    let data: serde_json::Value = serde_json::from_slice(&bytes)
        .map_err(|e| io::Error::other(format!("{} wrote no JSON calibration: {e}", tool.display())))?;
    Ok(MulticallFigures { source: tool.display().to_string(), data })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    #[test]
    fn every_row_is_named_once_and_sized() {
        let names: BTreeSet<&str> = TABLE.iter().map(|m| m.name).collect();
        assert_eq!(names.len(), TABLE.len(), "two rows share a name");
        for m in TABLE {
            assert!(!m.sizes.is_empty() && !m.how.is_empty() && !m.unit.is_empty(), "{}", m.name);
            assert_eq!(
                m.how.contains("{bytes}"),
                m.sizes.iter().any(|&s| s > 0),
                "{}: a row timed at several sizes says which in its `how`",
                m.name
            );
        }
        let fills: Vec<Fills> = TABLE.iter().map(|m| m.fills).collect();
        assert!(fills.contains(&Fills::Crossing) && fills.contains(&Fills::FunctionCall));
        // Two rows filling the same cost entries would overwrite each other.
        let mut costs = BTreeSet::new();
        for m in TABLE {
            if let Fills::Cost { syscall, on } = m.fills {
                for &s in m.sizes {
                    assert!(costs.insert((syscall, on, s)), "{syscall} on {on} at {s} B measured twice");
                }
            }
        }
    }

    #[test]
    fn the_rows_the_cost_model_prices_with() {
        // The advisor's rules ask the calibration for these (crates/advise/src/rules/).
        let costs: BTreeSet<(&str, &str)> = TABLE
            .iter()
            .filter_map(|m| match m.fills {
                Fills::Cost { syscall, on } => Some((syscall, on)),
                _ => None,
            })
            .collect();
        for want in [
            ("write", "file"),
            ("read", "file"),
            ("lseek", "file"),
            ("copy_file_range", "file"),
            ("sendmmsg", "udp"),
            ("clock_gettime", "vdso"),
            ("openat+close", "file"),
        ] {
            assert!(costs.contains(&want), "{want:?}");
        }
    }

    fn host(uring: bool) -> Host {
        Host {
            uring,
            kmod: syscluster_model::host::Kmod { device: "/nonexistent".into(), usable: false },
            ..crate::host::describe(Path::new("/nonexistent"))
        }
    }

    #[test]
    fn measures_a_table_row_by_row() {
        // A small table: the crossing pair, two sizes of one row, and a
        // row this host cannot run.
        let table = [
            TABLE[0],
            TABLE[1],
            Measurement { sizes: &[8, 512], ..*TABLE.iter().find(|m| m.name == "write-file").unwrap() },
            Measurement { name: "needs-kmod", needs: Needs::Kmod, ..TABLE[2] },
        ];
        let dir = tempfile::tempdir().unwrap();
        let opts = MeasureOptions {
            samples: 1,
            batch: Duration::from_micros(200),
            dir: dir.path().into(),
            ..Default::default()
        };
        let mut lines = Vec::new();
        let c = measure_rows(&table, &opts, &host(true), &mut |l| lines.push(l.to_string())).unwrap();
        assert!(c.crossing.syscall_ns > 0.0 && c.crossing.function_call_ns > 0.0);
        let writes: Vec<u64> = c.costs.iter().map(|k| k.bytes).collect();
        assert_eq!(writes, [8, 512], "{:?}", c.costs);
        assert_eq!(c.costs[1].what, "appending write of 512 B to a regular file");
        assert!(c.costs.iter().all(|k| k.syscall == "write" && k.on == "file"));
        assert!(
            lines.iter().any(|l| l == "needs-kmod: not measured (no multicall module answers at /nonexistent)"),
            "{lines:?}"
        );
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0, "scratch files removed");
        // Without a crossing there is no calibration.
        let e = measure_rows(&table[1..], &opts, &host(true), &mut |_| {}).unwrap_err();
        assert!(e.to_string().contains("no crossing or no function-call"), "{e}");
    }
}
