//! `syscluster calibrate`: measures this machine. Every figure is the
//! median over `samples` batches of calls timed together (the minimum is
//! kept too), so that one descheduling does not move it.

use crate::calibration::{Calibration, CallCost, Crossing, Machine, MulticallFigures, CALIBRATION_VERSION};
use std::ffi::CString;
use std::hint::black_box;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

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

struct Sample {
    median: f64,
    min: f64,
    iterations: u64,
}

/// Times `run(n)`, which makes n calls: picks n so that a batch takes about
/// `opts.batch`, then times `opts.samples` batches.
fn bench(opts: &MeasureOptions, mut run: impl FnMut(u64)) -> Sample {
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
    let mut per: Vec<f64> = (0..opts.samples.max(1))
        .map(|_| {
            let t = crate::measure_kernel::thread_cpu_ns();
            run(n);
            (crate::measure_kernel::thread_cpu_ns() - t) as f64 / n as f64
        })
        .collect();
    per.sort_by(f64::total_cmp);
    Sample { median: per[per.len() / 2], min: per[0], iterations: n }
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

#[inline(never)]
fn leaf(x: u64) -> u64 {
    black_box(x).wrapping_add(1)
}

/// Scratch files removed on drop.
struct Scratch(Vec<PathBuf>);

impl Drop for Scratch {
    fn drop(&mut self) {
        for p in &self.0 {
            let _ = std::fs::remove_file(p);
        }
    }
}

/// Measures this machine. `progress` hears one line per figure.
pub fn measure(opts: &MeasureOptions, progress: &mut dyn FnMut(&str)) -> io::Result<Calibration> {
    let pid = std::process::id();
    let src_path = opts.dir.join(format!(".syscluster-calibrate-{pid}-src"));
    let dst_path = opts.dir.join(format!(".syscluster-calibrate-{pid}-dst"));
    let _scratch = Scratch(vec![src_path.clone(), dst_path.clone()]);

    // Warm up (CPU frequency, caches, page tables) before the first figure.
    let warm = Instant::now();
    while warm.elapsed() < Duration::from_millis(100) {
        // SAFETY: getppid takes no arguments and cannot fail.
        black_box(unsafe { libc::syscall(libc::SYS_getppid) });
    }
    // Crossing against function call (seed 000 table 1).
    let f = bench(opts, |n| {
        let mut acc = 0u64;
        for _ in 0..n {
            acc = leaf(acc);
        }
        black_box(acc);
    });
    let s = bench(opts, |n| {
        for _ in 0..n {
            // SAFETY: getppid takes no arguments and cannot fail.
            black_box(unsafe { libc::syscall(libc::SYS_getppid) });
        }
    });
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
    progress(&format!(
        "crossing (getppid) {:.1} ns, function call {:.2} ns: {:.0}×",
        crossing.syscall_ns, crossing.function_call_ns, crossing.ratio
    ));

    let mut costs: Vec<CallCost> = Vec::new();
    let mut add = |costs: &mut Vec<CallCost>, syscall: &str, on: &str, bytes: u64, what: String, s: Sample| {
        progress(&format!("{syscall:<16} {on:<5} {bytes:>8} B  {:>9.1} ns  ({what})", s.min));
        costs.push(CallCost { syscall: syscall.into(), on: on.into(), bytes, ns: s.min, median_ns: s.median, what });
    };

    // Calls with no transfer.
    let s = bench(opts, |n| {
        for _ in 0..n {
            // SAFETY: no arguments.
            black_box(unsafe { libc::syscall(libc::SYS_getpid) });
        }
    });
    add(&mut costs, "getpid", "", 0, "getpid as a system call (glibc does not cache it)".into(), s);
    let mut tv = libc::timeval { tv_sec: 0, tv_usec: 0 };
    let s = bench(opts, |n| {
        for _ in 0..n {
            // SAFETY: tv is a valid timeval; a null timezone is allowed.
            black_box(unsafe { libc::syscall(libc::SYS_gettimeofday, &mut tv as *mut libc::timeval, 0usize) });
        }
    });
    add(&mut costs, "gettimeofday", "", 0, "gettimeofday as a system call".into(), s);
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    let s = bench(opts, |n| {
        for _ in 0..n {
            // SAFETY: ts is a valid timespec.
            black_box(unsafe { libc::clock_gettime(libc::CLOCK_REALTIME, &mut ts) });
        }
    });
    add(&mut costs, "clock_gettime", "vdso", 0, "clock_gettime(CLOCK_REALTIME) through glibc and the vDSO".into(), s);
    let s = bench(opts, |n| {
        for _ in 0..n {
            // SAFETY: tv is a valid timeval; a null timezone is allowed.
            black_box(unsafe { libc::gettimeofday(&mut tv, std::ptr::null_mut()) });
        }
    });
    add(&mut costs, "gettimeofday", "vdso", 0, "gettimeofday through glibc and the vDSO".into(), s);

    // select with a zero timeout on a readable pipe (seed 000's mpeg_play loop).
    let mut p = [0i32; 2];
    // SAFETY: p has room for two fds.
    check(unsafe { libc::pipe2(p.as_mut_ptr(), libc::O_CLOEXEC) } as libc::c_long, "pipe")?;
    // SAFETY: both fds were just made and are owned here.
    let (pr, pw) = unsafe { (OwnedFd::from_raw_fd(p[0]), OwnedFd::from_raw_fd(p[1])) };
    // SAFETY: one byte from a valid buffer.
    check(unsafe { libc::write(pw.as_raw_fd(), b"x".as_ptr().cast(), 1) } as libc::c_long, "write to pipe")?;
    let rfd = pr.as_raw_fd();
    let s = bench(opts, |n| {
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
    });
    add(&mut costs, "select", "pipe", 0, "select of one readable pipe, zero timeout".into(), s);
    drop((pr, pw));

    // A file in the page cache but larger than the CPU caches (bulk reads
    // and copies stream from memory, as they do in programs).
    const SRC_LEN: usize = 64 << 20;
    {
        let data: Vec<u8> = (0..SRC_LEN).map(|i| (i * 131 % 251) as u8).collect();
        std::fs::write(&src_path, &data)
            .map_err(|e| io::Error::new(e.kind(), format!("write {}: {e}", src_path.display())))?;
    }
    let src = open(&src_path, libc::O_RDONLY)?;
    let sfd = src.as_raw_fd();
    let mut buf = vec![0u8; 1 << 20];
    let s = bench(opts, |n| {
        for i in 0..n {
            // SAFETY: an lseek on an owned fd.
            black_box(unsafe { libc::lseek(sfd, ((i & 255) * 4096) as libc::off_t, libc::SEEK_SET) });
        }
    });
    add(&mut costs, "lseek", "file", 0, "lseek(fd, x, SEEK_SET) on a regular file".into(), s);
    let s = bench(opts, |n| {
        for _ in 0..n {
            // SAFETY: an lseek on an owned fd.
            black_box(unsafe { libc::lseek(sfd, 0, libc::SEEK_CUR) });
        }
    });
    add(&mut costs, "lseek", "cur", 0, "lseek(fd, 0, SEEK_CUR): asking for the offset".into(), s);
    for bytes in [8usize, 512, 4096, 65536, 131072] {
        // SAFETY: rewinding an owned fd.
        unsafe { libc::lseek(sfd, 0, libc::SEEK_SET) };
        let s = bench(opts, |n| {
            for _ in 0..n {
                // SAFETY: buf has at least `bytes` bytes.
                let r = unsafe { libc::read(sfd, buf.as_mut_ptr().cast(), bytes) };
                if r < bytes as isize {
                    // End of file: start again (amortized).
                    // SAFETY: as above.
                    unsafe { libc::lseek(sfd, 0, libc::SEEK_SET) };
                }
            }
        });
        add(
            &mut costs,
            "read",
            "file",
            bytes as u64,
            format!("read of {bytes} B from a 64 MiB file in the page cache, sequential"),
            s,
        );
    }
    for bytes in [512usize, 4096] {
        // The offsets walk the file as the read probe does, so that the two
        // differ only by the call.
        let s = bench(opts, |n| {
            for i in 0..n {
                let at = (i % (SRC_LEN / bytes) as u64) * bytes as u64;
                // SAFETY: buf has at least `bytes` bytes.
                black_box(unsafe { libc::pread(sfd, buf.as_mut_ptr().cast(), bytes, at as libc::off_t) });
            }
        });
        add(
            &mut costs,
            "pread64",
            "file",
            bytes as u64,
            format!("pread of {bytes} B from a cached file, sequential offsets"),
            s,
        );
    }
    let s = bench(opts, |n| {
        for _ in 0..n {
            // SAFETY: st is a valid buffer.
            let mut st: libc::stat = unsafe { std::mem::zeroed() };
            black_box(unsafe { libc::fstat(sfd, &mut st) });
        }
    });
    add(
        &mut costs,
        "newfstatat",
        "fd",
        0,
        "fstat of an open file (glibc: newfstatat(fd, \"\", …, AT_EMPTY_PATH))".into(),
        s,
    );
    let cpath =
        CString::new(src_path.as_os_str().as_encoded_bytes()).map_err(|_| io::Error::other("path with a NUL byte"))?;
    let s = bench(opts, |n| {
        for _ in 0..n {
            // SAFETY: a valid path and stat buffer.
            let mut st: libc::stat = unsafe { std::mem::zeroed() };
            black_box(unsafe { libc::stat(cpath.as_ptr(), &mut st) });
        }
    });
    add(
        &mut costs,
        "newfstatat",
        "path",
        0,
        format!("stat of a path {} components deep", src_path.components().count() - 1),
        s,
    );
    let s = bench(opts, |n| {
        for _ in 0..n {
            // SAFETY: a valid path.
            black_box(unsafe { libc::access(cpath.as_ptr(), libc::R_OK) });
        }
    });
    add(&mut costs, "access", "path", 0, "access of the same path".into(), s);
    let s = bench(opts, |n| {
        for _ in 0..n {
            // SAFETY: a valid path; the fd is closed at once.
            unsafe {
                let fd = libc::open(cpath.as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC);
                if fd >= 0 {
                    libc::close(fd);
                }
            }
        }
    });
    add(&mut costs, "openat+close", "file", 0, "open and close of a cached file, per pair".into(), s);

    // Appending writes to a regular file; truncated every 8 MiB (amortized).
    let dst = open(&dst_path, libc::O_WRONLY | libc::O_CREAT | libc::O_TRUNC)?;
    let dfd = dst.as_raw_fd();
    for bytes in [8usize, 512, 4096, 65536, 131072] {
        let mut written = 0usize;
        let s = bench(opts, |n| {
            for _ in 0..n {
                // SAFETY: buf has at least `bytes` bytes.
                unsafe { libc::write(dfd, buf.as_ptr().cast(), bytes) };
                written += bytes;
                if written >= 8 << 20 {
                    // SAFETY: truncating and rewinding an owned fd.
                    unsafe {
                        libc::ftruncate(dfd, 0);
                        libc::lseek(dfd, 0, libc::SEEK_SET);
                    }
                    written = 0;
                }
            }
        });
        add(&mut costs, "write", "file", bytes as u64, format!("appending write of {bytes} B to a regular file"), s);
    }
    // In-kernel copy, as the copy-offload rewrite does it.
    for bytes in [65536usize, 1 << 20] {
        // SAFETY: truncating and rewinding owned fds.
        unsafe {
            libc::ftruncate(dfd, 0);
            libc::lseek(dfd, 0, libc::SEEK_SET);
            libc::lseek(sfd, 0, libc::SEEK_SET);
        }
        let mut copied = 0usize;
        let s = bench(opts, |n| {
            for i in 0..n {
                // Whole chunks of the source, appended to the destination.
                let mut off_in = ((i as usize * bytes) % SRC_LEN) as libc::loff_t;
                // SAFETY: owned fds; off_in is a valid offset variable.
                let r = unsafe { libc::copy_file_range(sfd, &mut off_in, dfd, std::ptr::null_mut(), bytes, 0) };
                copied += r.max(0) as usize;
                if copied >= 8 << 20 {
                    // SAFETY: truncating and rewinding an owned fd (amortized).
                    unsafe {
                        libc::ftruncate(dfd, 0);
                        libc::lseek(dfd, 0, libc::SEEK_SET);
                    }
                    copied = 0;
                }
            }
        });
        add(
            &mut costs,
            "copy_file_range",
            "file",
            bytes as u64,
            format!("copy_file_range of {bytes} B between regular files"),
            s,
        );
    }
    let mut kernel_lines = Vec::new();
    let kernel =
        crate::measure_kernel::fixed_costs(opts, sfd, SRC_LEN, dfd, &mut |l| kernel_lines.push(l.to_string()))?;
    drop(dst);
    drop(src);

    // Datagrams to a bound socket on loopback that never reads (as a server
    // sending to a slow client): sendto, and sendmmsg per message.
    // SAFETY: plain socket calls on owned fds with valid addresses.
    unsafe {
        let out =
            check(libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) as libc::c_long, "socket")?
                as i32;
        let out = OwnedFd::from_raw_fd(out);
        let sink =
            check(libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) as libc::c_long, "socket")?
                as i32;
        let sink = OwnedFd::from_raw_fd(sink);
        let mut a: libc::sockaddr_in = std::mem::zeroed();
        a.sin_family = libc::AF_INET as libc::sa_family_t;
        a.sin_addr.s_addr = u32::from_be_bytes([127, 0, 0, 1]).to_be();
        let mut len = std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t;
        check(libc::bind(sink.as_raw_fd(), &a as *const _ as *const libc::sockaddr, len) as libc::c_long, "bind")?;
        check(
            libc::getsockname(sink.as_raw_fd(), &mut a as *mut _ as *mut libc::sockaddr, &mut len) as libc::c_long,
            "getsockname",
        )?;
        let ofd = out.as_raw_fd();
        for bytes in [64usize, 1024, 8192] {
            let s = bench(opts, |n| {
                for _ in 0..n {
                    black_box(libc::sendto(
                        ofd,
                        buf.as_ptr().cast(),
                        bytes,
                        0,
                        &a as *const _ as *const libc::sockaddr,
                        len,
                    ));
                }
            });
            add(&mut costs, "sendto", "udp", bytes as u64, format!("sendto of a {bytes} B datagram on loopback"), s);
        }
        const VLEN: usize = 32;
        for bytes in [64usize, 1024, 8192] {
            let mut iov: Vec<libc::iovec> =
                (0..VLEN).map(|_| libc::iovec { iov_base: buf.as_mut_ptr().cast(), iov_len: bytes }).collect();
            let mut msgs: Vec<libc::mmsghdr> = (0..VLEN)
                .map(|i| {
                    let mut m: libc::mmsghdr = std::mem::zeroed();
                    m.msg_hdr.msg_name = &a as *const _ as *mut libc::c_void;
                    m.msg_hdr.msg_namelen = len;
                    m.msg_hdr.msg_iov = &mut iov[i];
                    m.msg_hdr.msg_iovlen = 1;
                    m
                })
                .collect();
            let s = bench(opts, |n| {
                for _ in 0..n.div_ceil(VLEN as u64) {
                    black_box(libc::sendmmsg(ofd, msgs.as_mut_ptr(), VLEN as u32, 0));
                }
            });
            let s = Sample { median: s.median, min: s.min, iterations: s.iterations };
            add(
                &mut costs,
                "sendmmsg",
                "udp",
                bytes as u64,
                format!("sendmmsg of {VLEN} datagrams of {bytes} B, per datagram"),
                s,
            );
        }
    }

    kernel_lines.iter().for_each(|l| progress(l));
    let multicall = match &opts.mc_calibrate {
        Some((tool, out)) => {
            progress(&format!("running {} (libmulticall's backends by batch size)", tool.display()));
            Some(run_mc_calibrate(tool, out, &opts.dir, opts.mc_quick)?)
        }
        None => None,
    };

    Ok(Calibration {
        calibration_version: CALIBRATION_VERSION,
        tool: format!("syscluster {}", env!("CARGO_PKG_VERSION")),
        created_at: std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs_f64())
            .unwrap_or(0.0),
        machine: Machine::here(),
        crossing,
        costs,
        multicall,
        tracers: Vec::new(),
        kernel,
    })
}

/// Runs libmulticall's mc-calibrate, writing `out`, and keeps its JSON.
pub fn run_mc_calibrate(tool: &Path, out: &Path, dir: &Path, quick: bool) -> io::Result<MulticallFigures> {
    let mut cmd = std::process::Command::new(tool);
    cmd.arg("-o").arg(out).arg("--dir").arg(dir).stdin(std::process::Stdio::null());
    if quick {
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
