//! The kernel's fixed work per call of the transfers the rules resize:
//! `read` and appending `write` of a page-cached regular file, and
//! `copy_file_range` between two, each timed at a small and a large size
//! in alternating batches and fitted as `cost = fixed + per_byte × bytes`.
//!
//! A rewrite that moves the same bytes in fewer calls (a larger block, a
//! kernel copy) removes per call the crossing and the work the kernel does
//! whatever the size (the VFS path, the file's locks, fsnotify, and for
//! writes of a page or more one page-cache folio each); the per-byte work
//! stays. Timing the two sizes in alternation, round after round, puts both
//! in the same conditions on a shared machine, so their difference — what
//! the fit rests on — is not the difference between a quiet and a busy
//! moment.

use crate::measure::MeasureOptions;
use std::hint::black_box;
use std::io;
use std::os::fd::RawFd;
use std::time::Instant;
use syscluster_model::calibration::KernelFixed;

/// The sizes fitted: one page (no write of a page or more shares a
/// folio with the next) and coreutils' block; copy_file_range at the
/// sizes `syscluster calibrate` times it.
const READ_WRITE: (usize, usize) = (4096, 128 << 10);
const COPY: (usize, usize) = (64 << 10, 1 << 20);

/// This thread's CPU time, ns (user + system). Batches are timed with it,
/// not the wall clock: on a shared machine a batch of a few ms is often
/// preempted, and the time other programs run then is no cost of the
/// calls (the programs whose savings are estimated are measured by their
/// CPU time too).
pub fn thread_cpu_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: ts is a valid timespec; this clock exists on every Linux.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Calls per batch so that one batch at `bytes` lasts about `opts.batch`.
fn batch_len(opts: &MeasureOptions, run: &mut dyn FnMut(u64)) -> u64 {
    let mut n: u64 = 4;
    loop {
        let t = Instant::now();
        run(n);
        let e = t.elapsed();
        if e >= opts.batch / 2 || n >= 1 << 22 {
            let scale = opts.batch.as_secs_f64() / e.as_secs_f64().max(1e-9);
            return ((n as f64 * scale) as u64).clamp(4, 1 << 22);
        }
        n *= 4;
    }
}

/// The least-squares line through two points is the line through them.
fn line(small: (f64, f64), large: (f64, f64)) -> (f64, f64) {
    let per_byte = ((large.1 - small.1) / (large.0 - small.0)).max(0.0);
    (small.1 - per_byte * small.0, per_byte)
}

/// Fits `cost = fixed + per_byte × bytes` from `rounds` alternating batches
/// of `call(bytes, n)` at the two sizes. The fit kept is that of the least
/// disturbed batch of each size (interference only adds time); the median
/// of the fits of each round is kept beside it, as their spread.
pub fn fit(opts: &MeasureOptions, sizes: (usize, usize), call: &mut dyn FnMut(usize, u64)) -> (f64, f64, f64, f64) {
    let n_small = batch_len(opts, &mut |n| call(sizes.0, n));
    let n_large = batch_len(opts, &mut |n| call(sizes.1, n));
    let rounds = opts.samples.max(3);
    let (mut min_s, mut min_l) = (f64::INFINITY, f64::INFINITY);
    let mut fits: Vec<(f64, f64)> = Vec::with_capacity(rounds as usize);
    for _ in 0..rounds {
        let t = thread_cpu_ns();
        call(sizes.0, n_small);
        let s = (thread_cpu_ns() - t) as f64 / n_small as f64;
        let t = thread_cpu_ns();
        call(sizes.1, n_large);
        let l = (thread_cpu_ns() - t) as f64 / n_large as f64;
        min_s = min_s.min(s);
        min_l = min_l.min(l);
        fits.push(line((sizes.0 as f64, s), (sizes.1 as f64, l)));
    }
    let (fixed, per_byte) = line((sizes.0 as f64, min_s), (sizes.1 as f64, min_l));
    fits.sort_by(|a, b| a.0.total_cmp(&b.0));
    let median_fixed = fits[fits.len() / 2].0;
    let mut pb: Vec<f64> = fits.iter().map(|f| f.1).collect();
    pb.sort_by(f64::total_cmp);
    (fixed, per_byte, median_fixed, pb[pb.len() / 2])
}

/// Measures the fixed and per-byte work of read, write and copy_file_range
/// on regular files: `src` is a page-cached file of `src_len` bytes open
/// for reading, `dst` a scratch file open for writing (truncated here
/// every 8 MiB, amortized over the bytes as a program's own output file is
/// at its open).
pub fn fixed_costs(opts: &MeasureOptions, src: RawFd, src_len: usize, dst: RawFd) -> io::Result<Vec<KernelFixed>> {
    let mut buf = vec![0u8; COPY.1.max(READ_WRITE.1)];
    let mut out = Vec::new();
    let mut keep = |syscall: &str, sizes: (usize, usize), f: (f64, f64, f64, f64), what: String| {
        out.push(KernelFixed {
            syscall: syscall.into(),
            on: "file".into(),
            small_bytes: sizes.0 as u64,
            large_bytes: sizes.1 as u64,
            fixed_ns: f.0,
            per_byte_ns: f.1,
            fixed_median_ns: f.2,
            per_byte_median_ns: f.3,
            rounds: opts.samples.max(3),
            what,
        });
    };
    let mut at = 0usize;
    let f = fit(opts, READ_WRITE, &mut |bytes, n| {
        for _ in 0..n {
            if at + bytes > src_len {
                at = 0;
            }
            // SAFETY: buf has at least `bytes` bytes; src is open.
            black_box(unsafe { libc::pread(src, buf.as_mut_ptr().cast(), bytes, at as libc::off_t) });
            at += bytes;
        }
    });
    // pread walks the file as read does, without a seek call between.
    keep("read", READ_WRITE, f, "read of a 64 MiB page-cached file, sequential, 4 KiB and 128 KiB alternately".into());
    let mut written = 0usize;
    let truncate = |written: &mut usize, bytes: usize| {
        *written += bytes;
        if *written >= 8 << 20 {
            // SAFETY: truncating and rewinding an owned fd.
            unsafe {
                libc::ftruncate(dst, 0);
                libc::lseek(dst, 0, libc::SEEK_SET);
            }
            *written = 0;
        }
    };
    let f = fit(opts, READ_WRITE, &mut |bytes, n| {
        for _ in 0..n {
            // SAFETY: buf has at least `bytes` bytes; dst is open.
            black_box(unsafe { libc::write(dst, buf.as_ptr().cast(), bytes) });
            truncate(&mut written, bytes);
        }
    });
    keep(
        "write",
        READ_WRITE,
        f,
        "appending write to a regular file (truncated every 8 MiB), 4 KiB and 128 KiB alternately".into(),
    );
    let f = fit(opts, COPY, &mut |bytes, n| {
        for i in 0..n {
            let mut off_in = ((i as usize * bytes) % (src_len - bytes + 1)) as libc::loff_t;
            // SAFETY: owned fds; off_in is a valid offset variable.
            let r = unsafe { libc::copy_file_range(src, &mut off_in, dst, std::ptr::null_mut(), bytes, 0) };
            truncate(&mut written, r.max(0) as usize);
        }
    });
    keep(
        "copy_file_range",
        COPY,
        f,
        "copy_file_range between regular files, appending, 64 KiB and 1 MiB alternately".into(),
    );
    Ok(out)
}
