//! File I/O rules: pread/pwrite for seek+transfer, write coalescing, copy
//! offload, larger blocks, reopened files, stat storms.

use super::{
    bytes, calibrated_or, count, edge_evidence, io_evidence, on_of, pct, value_evidence, Estimate, Finding, Part, Rule,
};
use crate::advice::Evidence;
use crate::cost::{Basis, CostModel, Priced};
use crate::facts::Facts;

pub static PREAD: Rule = Rule {
    id: "pread",
    title: "Replace lseek + read by pread",
    mechanism: "pread",
    explanation: "A seek followed by a read of the same descriptor is two crossings for one transfer. \
pread takes the offset as an argument: one crossing, and the lseek's kernel work is gone. \
pread does not move the file offset, so code that later reads at the offset the lseek set must keep it \
in step (or use pread too). libmulticall's fusion backend makes the same rewrite inside a multi-call (seek_pread).",
    before: "lseek({fd}, off, SEEK_SET);\nn = read({fd}, buf, {size});",
    after: "n = pread({fd}, buf, {size}, off);   /* one crossing; the file offset is not moved */",
};

pub static PWRITE: Rule = Rule {
    id: "pwrite",
    title: "Replace lseek + write by pwrite",
    mechanism: "pwrite",
    explanation: "A seek followed by a write of the same descriptor is two crossings for one transfer. \
pwrite takes the offset as an argument: one crossing, and the lseek's kernel work is gone. \
pwrite does not move the file offset (and ignores it under O_APPEND), so later code that writes at the \
offset must keep it in step.",
    before: "lseek({fd}, off, SEEK_SET);\nwrite({fd}, buf, {size});",
    after: "pwrite({fd}, buf, {size}, off);   /* one crossing; the file offset is not moved */",
};

pub static COALESCE: Rule = Rule {
    id: "coalesce-writes",
    title: "Coalesce consecutive small writes to one descriptor",
    mechanism: "writev-coalescing",
    explanation: "Each write crosses into the kernel and runs the write path for a few bytes (seed 001's \
short writes). Gathering consecutive writes to one descriptor in a buffer and writing it with one write \
(or the pieces with one writev) removes all but one crossing per buffer and most of the per-call kernel \
work; the bytes and their order do not change. The buffer must be written before anything can observe \
the file: a read, seek, fsync, fork, exec or exit. For unmodified binaries writing regular files, \
`syscluster run --coalesce-writes` does exactly this at the system-call boundary.",
    before: "for (…)\n    write({fd}, rec, {size});             /* {count} calls */",
    after: "static char buf[{buffer}];\nstatic size_t len;\nfor (…) {\n    if (len + {size} > sizeof buf) {\n        write({fd}, buf, len);            /* one call per {buffer_text} */\n        len = 0;\n    }\n    memcpy(buf + len, rec, {size});\n    len += {size};\n}\nwrite({fd}, buf, len);                    /* and before any read, seek, fsync, fork, exec or exit */\n/* unmodified binary: syscluster run --coalesce-writes -- CMD */",
};

pub static BATCH: Rule = Rule {
    id: "batch-writes",
    title: "Write a loop's repeated block with writev batches",
    mechanism: "writev-batch",
    explanation: "A loop writes the same block to the same file again and again (one write of the same \
descriptor, buffer and count per iteration: clearing sectors, padding an image), one crossing and one \
run of the write path per block. writev takes up to IOV_MAX (1024) buffers, and they may all be the \
same one: a batch of blocks is one crossing, written at the same offsets, the file position moving as \
far. Where a batch stops early the loop goes on from the first block not written, so a failing or \
short write still reaches the program's own check with its result and errno. `syscluster cc --plan` \
makes the rewrite (the plan's batch-writes cluster) when the loop's body is that one checked write.",
    before: "for (i = 0; i < k; i++)\n    if (write({fd}, block, {size}) != {size})      /* {count} calls */\n        die(\"write\");",
    after: "struct iovec iov[IOV_MAX];                  /* each: block, {size} */\nfor (i = 0; i < k; i += m) {\n    m = k - i < IOV_MAX ? k - i : IOV_MAX;\n    r = writev({fd}, iov, m);             /* one crossing per {batch} blocks */\n    if (r != m * {size}) /* the loop as written from block i + r / {size} */;\n}\n/* or: syscluster cc --plan PLAN */",
};

pub static COPY_OFFLOAD: Rule = Rule {
    id: "copy-offload",
    title: "Let the kernel copy: copy_file_range, sendfile or splice",
    mechanism: "copy_file_range",
    explanation: "This loop reads a block and writes the same bytes (write's count is read's result: the \
data dependency of seed 000 §3.2), crossing twice per block and copying every byte into user space and \
back. copy_file_range (between regular files), sendfile (from a file to a socket) or splice (through a \
pipe) moves the data inside the kernel, many blocks per call: seed 000 §3.4's specialized read_write \
call, which Linux now has. Keep the loop as the fallback when the call fails with EXDEV, EINVAL or ENOSYS.",
    before: "while ((n = read({in}, buf, {size})) > 0)\n    write({out}, buf, n);",
    after: "while ((n = {call}) > 0)\n    ;\nif (n < 0 && (errno == EXDEV || errno == EINVAL || errno == ENOSYS))\n    /* the read/write loop as before */;",
};

pub static LARGER_BLOCK: Rule = Rule {
    id: "larger-block",
    title: "Copy in larger blocks",
    mechanism: "larger-buffer",
    explanation: "The value profile shows a small, fixed block size: every block costs a read and a write \
crossing and their fixed kernel work. A larger buffer (coreutils' cp uses 128 KiB) moves the same bytes \
in proportionally fewer calls; the bytes written and their order do not change. This is also the \
value-based specialization of seed 000 §3.4: the size is a constant worth tuning.",
    before: "char buf[{size}];\nwhile ((n = read({in}, buf, sizeof buf)) > 0)\n    write({out}, buf, n);",
    after: "static char buf[{block}];               /* {block_text} */\nwhile ((n = read({in}, buf, sizeof buf)) > 0)\n    write({out}, buf, n);",
};

pub static SENDFILE: Rule = Rule {
    id: "sendfile",
    title: "Send file data with sendfile instead of reading it into user space",
    mechanism: "sendfile",
    explanation: "Each round reads a block of a file into a buffer and sends that buffer on a socket (a \
server sending files: seed 000 §4.3's web server, whose read → sendto cluster it names). Where the program \
does not look at or change the bytes between the read and the send (no compression, no TLS in user space, \
no parsing), sendfile moves them from the page cache to the socket inside the kernel: the copy into user \
space and the read's crossing go, and a header still goes first with send(…, MSG_MORE) (or TCP_CORK). \
sendfile with an offset pointer does not move the file offset, as pread does not. Keep the read and send \
as the fallback when sendfile fails with EINVAL or ENOSYS.",
    before: "n = {read};\n{send};",
    after: "send({sock}, headers, hlen, MSG_MORE);           /* if the original sent headers with the data */\noff_t off = offset;\nn = sendfile({sock}, {file}, &off, {size});   /* the file's bytes, inside the kernel */",
};

pub static REOPEN: Rule = Rule {
    id: "reopen-same-file",
    title: "Keep a file open instead of opening it again and again",
    mechanism: "keep-open",
    explanation: "The same path is opened, read and closed many times: each round pays the path walk of \
open and the teardown of close besides the read. Opening it once and reading it with pread at offset 0 \
keeps the bytes read the same while the file is unchanged; if it may be replaced (renamed over), compare \
st_ino/st_mtime from an fstat, or use inotify, before trusting the open descriptor.",
    before: "for (…) {\n    fd = open(\"{path}\", O_RDONLY);\n    n = read(fd, buf, sizeof buf);\n    close(fd);\n}",
    after: "int fd = open(\"{path}\", O_RDONLY);    /* once */\nfor (…)\n    n = pread(fd, buf, sizeof buf, 0);",
};

pub static STAT_STORM: Rule = Rule {
    id: "stat-storm",
    title: "Stat storm: cache metadata or stat relative to a directory",
    mechanism: "cache-metadata",
    explanation: "A large share of the calls ask the kernel about paths (stat, lstat, access, statx), each \
walking the path from the start. Cache the answers the program asks for again, stat relative to an open \
directory (fstatat(dirfd, name, …)) so the walk is one component, or read a directory once with \
getdents64 and use d_type instead of a stat per entry. The profile does not say which paths repeat, so \
the saving shown is an upper bound: the cost of all these calls.",
    before: "for (each name)\n    stat(path_of(dir, name), &st);        /* {count} calls */",
    after: "int dfd = open(dir, O_RDONLY | O_DIRECTORY);\nfor (each name)\n    fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW);   /* or a cache, or d_type */",
};

pub fn find(f: &Facts, cost: &CostModel, out: &mut Vec<Finding>) {
    seek_then_transfer(f, cost, out);
    coalesce(f, cost, out);
    batch(f, cost, out);
    copy_loops(f, cost, out);
    file_to_socket(f, cost, out);
    reopen(f, cost, out);
    stat_storm(f, cost, out);
}

fn seek_then_transfer(f: &Facts, cost: &CostModel, out: &mut Vec<Finding>) {
    for e in &f.p.edges {
        let (a, b) = (f.node(e.from), f.node(e.to));
        let rule = match (a.syscall.as_str(), b.syscall.as_str()) {
            ("lseek", "read") => &PREAD,
            ("lseek", "write") => &PWRITE,
            _ => continue,
        };
        if !a.key.same_descriptor(&b.key) || !f.big_enough(e.weight, 2 * e.weight) {
            continue;
        }
        let w = e.weight;
        let mut evidence = vec![edge_evidence(f, e.from, e.to)];
        let mut notes = Vec::new();
        // Absolute seeks only: lseek(fd, 0, SEEK_CUR) asks for the offset (another rule).
        match f.share_where("lseek", "whence", |v| v == 0) {
            Some(s) if s >= 0.8 => evidence.extend(value_evidence(f, "lseek", "whence")),
            Some(_) => continue,
            None => notes
                .push("the profile has no value profiles: check that these seeks are absolute (SEEK_SET)".to_string()),
        }
        // Two calls returning to one place were made by libc, not by the
        // code there: a stdio stream's fseek (on a stream being read it
        // seeks to a block and refills the buffer; on one being written
        // it writes what the last fwrite buffered, then seeks). The code
        // calls fseek and fread/fwrite, and that is what changes.
        let stdio = f.top_site(e.from).filter(|sa| f.top_site(e.to).as_ref() == Some(sa));
        if let Some(sa) = &stdio {
            notes.push(if b.syscall == "read" {
                format!(
                    "both calls return to {}: one libc call made them — stdio's fseek on a stream being read seeks and refills the stream's buffer — so the rewrite is of the stdio calls there (fseek + fread to pread on the stream's descriptor), not of an lseek in the code",
                    sa.short()
                )
            } else {
                format!(
                    "both calls return to {}: libc made them — stdio's fseek on a stream being written writes what the last fwrite buffered, then seeks; each lseek → write pair is one fseek's seek and the next one's write — so the rewrite is of the stdio calls there (fseek + fwrite to pwrite on the stream's descriptor), not of an lseek in the code",
                    sa.short()
                )
            });
        }
        let arg = "count";
        let size = f
            .usual_size(&b.syscall, arg)
            .unwrap_or_else(|| f.mean_where(&b.syscall, arg, |v| v > 0).map_or(4096, |m| m.round() as u64));
        evidence.extend(value_evidence(f, &b.syscall, arg));
        let covered = w as f64 / b.count.max(1) as f64;
        evidence.push(Evidence::Calls { node: f.label(e.to), count: b.count });
        if covered < 0.9 {
            notes.push(format!(
                "only {} of the {} calls of {} follow an lseek: the others use the file offset, which p{} does not move",
                count(w),
                count(b.count),
                f.label(e.to),
                b.syscall
            ));
        }
        evidence.extend(f.placement_evidence(&[e.from, e.to]));
        // The transfer is the same work either way: the saving is the lseek.
        let seek = cost.node_call(e.from, "lseek", "file", 0);
        let fd = a.key.fd.map_or("fd".to_string(), |fd| fd.to_string());
        out.push(Finding {
            rule,
            nodes: vec![e.from, e.to],
            vars: vec![("fd", fd.clone()), ("size", size.to_string())],
            specifics: format!(
                "Here lseek({fd}) → {}({fd}) ran {} times, {} B per transfer{}.",
                b.syscall,
                count(w),
                size,
                if notes.is_empty() { String::new() } else { format!("; {}", notes.join("; ")) }
            ),
            evidence,
            saving: Estimate {
                before: vec![Part::new(w as f64, seek)],
                after: vec![],
                crossings_removed: w,
                upper_bound: false,
                assumes: format!(
                    "every lseek → {} pair becomes one p{}: the lseek goes, the transfer costs the same either way",
                    b.syscall, b.syscall
                ),
            },
            applicable_here: true,
            // libmulticall fuses a seek with a read (seek_pread), not with a
            // write, and not what libc makes inside fseek.
            how: match (&stdio, b.syscall.as_str()) {
                (Some(sa), _) => format!("by hand at the stdio calls of {} (the sketch)", sa.short()),
                (None, "read") => {
                    "by hand (the sketch), or libmulticall's fusion backend (seek_pread) in a multi-call".into()
                }
                (None, _) => "by hand (the sketch)".into(),
            },
            mechanism: None,
            sketch: stdio.map(|_| stdio_sketch(&b.syscall, size)),
        });
    }
}

/// The pread/pwrite rewrite of code that seeks through stdio: what it
/// calls is fseek and fread/fwrite, which make the lseek and the transfer.
fn stdio_sketch(transfer: &str, size: u64) -> (String, String) {
    if transfer == "read" {
        (
            format!("fseek(f, off, SEEK_SET);          /* libc: lseek, then read of {size} B into the stream's buffer */\nn = fread(buf, 1, len, f);"),
            "n = pread(fileno(f), buf, len, off);   /* one crossing; the stream's position and buffer are not used */".into(),
        )
    } else {
        (
            "fseek(f, off, SEEK_SET);          /* libc: write of what the last fwrite buffered, then lseek */\nfwrite(buf, 1, len, f);".into(),
            "fflush(f);                               /* once, before the first piece */\npwrite(fileno(f), buf, len, off);   /* per piece: one crossing; the stream's position is not moved */".into(),
        )
    }
}

fn coalesce(f: &Facts, cost: &CostModel, out: &mut Vec<Finding>) {
    for n in &f.p.nodes {
        if n.syscall != "write" {
            continue;
        }
        // One descriptor: the node is keyed by it, or the value profile says so.
        let one_fd =
            n.key.has_descriptor() || f.dominant("write", "fd").is_some_and(|(_, s, _)| s >= f.opts.dominant_share);
        let w = f.weight(n.id, n.id);
        if !one_fd || !f.big_enough(w, w) {
            continue;
        }
        let io = f.io_of(n.id);
        let mut evidence = vec![edge_evidence(f, n.id, n.id)];
        let small = |v: i64| (0..crate::SMALL_WRITE as i64).contains(&v);
        let size = match (io, f.share_where("write", "count", small)) {
            (Some(io), _) if io.class == "short writes" && io.writes > 0 => {
                evidence.push(io_evidence(io));
                evidence.extend(value_evidence(f, "write", "count"));
                (io.bytes_written as f64 / io.writes as f64).max(1.0)
            }
            (_, Some(s)) if s >= 0.8 => {
                evidence.extend(value_evidence(f, "write", "count"));
                if let Some(io) = io {
                    evidence.push(io_evidence(io));
                }
                f.mean_where("write", "count", small).unwrap_or(8.0).max(1.0)
            }
            _ => continue,
        };
        evidence.extend(f.placement_evidence(&[n.id]));
        let kind = f.kind_of(n.id);
        let on = on_of(kind);
        let per = cost.node_call(n.id, "write", on, size.round() as u64);
        let buffer = f.opts.coalesce_buffer;
        let after_calls = ((w as f64 * size) / buffer as f64).ceil().max(1.0);
        let after = calibrated_or(cost, "write", on, buffer, per);
        let fd = n.key.fd.map_or("fd".to_string(), |fd| fd.to_string());
        let (how, applicable) = match kind {
            "file" if f.made_without_libc(n.id) => (
                "buffer by hand as sketched (in Go: a bufio.Writer); `syscluster run` cannot: the program's runtime \
                 makes these calls with raw syscall instructions, not through libc"
                    .into(),
                true,
            ),
            "file" => (format!("`syscluster run --coalesce-writes -- {}` (no rebuild), or buffer by hand as sketched", command(f)), true),
            "socket" => ("buffer by hand as sketched, or writev (the runtime coalesces regular files only; mind the latency of a socket)".into(), true),
            _ => ("buffer by hand as sketched, or `syscluster run --coalesce-writes` if the descriptor is a regular file".into(), true),
        };
        out.push(Finding {
            rule: &COALESCE,
            nodes: vec![n.id],
            vars: vec![
                ("fd", fd.clone()),
                ("size", format!("{}", size.round() as u64)),
                ("count", count(n.count)),
                ("buffer", buffer.to_string()),
                ("buffer_text", bytes(buffer)),
            ],
            specifics: format!(
                "Here {} wrote {} times in a row ({} consecutive pairs), {:.0} B per write on average{}.",
                f.label(n.id),
                count(n.count),
                count(w),
                size,
                io.map_or(String::new(), |io| format!(", to {} ({})", io.path, io.kind))
            ),
            evidence,
            saving: Estimate {
                before: vec![Part::new(w as f64, per)],
                after: vec![Part::new(after_calls, after)],
                crossings_removed: w.saturating_sub(after_calls as u64),
                upper_bound: false,
                assumes: format!(
                    "the consecutive writes go through a {} buffer: one write of {} per buffer instead of one per record",
                    bytes(buffer),
                    bytes(buffer)
                ),
            },
            applicable_here: applicable,
            how,
            mechanism: None,
            sketch: None,
        });
    }
}

/// The blocks one writev of the batch-writes rewrite carries (IOV_MAX).
pub const BATCH_BLOCKS: u64 = 1024;

/// A loop of one write into a regular file: the same descriptor and the
/// same count (the value profile's, in nearly every call: a constant the
/// loop repeats) call after call (the write → write self-edge). Writes
/// under `SMALL_WRITE` are coalesce-writes' own; blocks of the coalescing
/// buffer's size or more are large already.
fn batch(f: &Facts, cost: &CostModel, out: &mut Vec<Finding>) {
    for n in &f.p.nodes {
        if n.syscall != "write" {
            continue;
        }
        let w = f.weight(n.id, n.id);
        let one_fd = n.key.has_descriptor() || f.dominant("write", "fd").is_some_and(|(_, s, _)| s >= BATCH_SHARE);
        // Without a value profile, or with counts that vary: nothing.
        let Some((size, share, _)) = f.dominant("write", "count") else {
            continue;
        };
        // Blocks of the coalescing buffer's size or more are large writes
        // already: the fixed work of a call is a small part of each.
        if !one_fd
            || !f.big_enough(w, w)
            || share < BATCH_SHARE
            || size < crate::SMALL_WRITE as i64
            || size >= f.opts.coalesce_buffer as i64
        {
            continue;
        }
        // A regular file: a writev of a pipe or socket splits differently.
        if f.kind_of(n.id) != "file" || f.made_without_libc(n.id) {
            continue;
        }
        let size = size as u64;
        let mut evidence = vec![edge_evidence(f, n.id, n.id)];
        evidence.extend(value_evidence(f, "write", "count"));
        evidence.extend(f.io_of(n.id).map(io_evidence));
        evidence.extend(f.placement_evidence(&[n.id]));
        let per = cost.node_call(n.id, "write", "file", size);
        // What a write costs whatever its size (crossing included), from the
        // calibration's line; else the crossing alone.
        let (fixed, basis) = match cost.program_line("write", "file", size, per) {
            Some(l) => (l.fixed_ns.min(per.ns), Basis::Calibrated),
            None => (cost.crossing().min(per.ns), Basis::CrossingOnly),
        };
        // Each run of the loop (a write that follows no write of this node)
        // asks what the descriptor is (one fstat: glibc's is newfstatat on
        // the descriptor) and makes at least one writev.
        let runs = n.count.saturating_sub(w).max(1);
        let writevs = w.div_ceil(BATCH_BLOCKS) + runs;
        let stat =
            calibrated_or(cost, "newfstatat", "fd", 0, Priced { ns: cost.crossing(), basis: Basis::CrossingOnly });
        let fd = n.key.fd.map_or("fd".to_string(), |fd| fd.to_string());
        out.push(Finding {
            rule: &BATCH,
            nodes: vec![n.id],
            vars: vec![
                ("fd", fd),
                ("size", size.to_string()),
                ("count", count(n.count)),
                ("batch", BATCH_BLOCKS.to_string()),
            ],
            specifics: format!(
                "Here {} wrote {} times, {} times right after itself, {} B in {} of the writes{}.",
                f.label(n.id),
                count(n.count),
                count(w),
                size,
                pct(share),
                f.io_of(n.id).map_or(String::new(), |io| format!(", to {} ({})", io.path, io.kind))
            ),
            evidence,
            saving: Estimate {
                before: vec![Part::new(w as f64, per)],
                after: vec![
                    // The blocks' own work stays; their fixed work goes.
                    Part::units(w as f64, Priced { ns: per.ns - fixed, basis }, 0.0),
                    Part::new(writevs as f64, Priced { ns: fixed, basis }),
                    Part::new(runs as f64, stat),
                ],
                crossings_removed: w.saturating_sub(writevs + runs),
                upper_bound: false,
                assumes: format!(
                    "the {} consecutive writes go in writevs of up to {} blocks: one crossing and one write's fixed work per writev, the blocks' own work as before; {} runs of the loop (writes that follow no write of this node), each with an fstat and a last, partial writev",
                    count(w),
                    BATCH_BLOCKS,
                    count(runs)
                ),
            },
            applicable_here: true,
            how: "`syscluster cc --plan PLAN` where the loop's body is that one write (its check into a handler that does not return), or by hand as sketched".into(),
            mechanism: None,
            sketch: None,
        });
    }
}

/// The share of the writes the dominant count (and descriptor) must have:
/// nearly all, so that the loop's write is the program's usual one.
pub const BATCH_SHARE: f64 = 0.95;

/// The recorded command, for `syscluster run -- CMD` lines.
pub fn command(f: &Facts) -> String {
    let c = &f.p.meta.command;
    if c.is_empty() {
        "CMD".into()
    } else {
        c.iter().map(|a| if a.contains(' ') { format!("'{a}'") } else { a.clone() }).collect::<Vec<_>>().join(" ")
    }
}

/// A read → write loop that copies: write's count is read's result.
pub struct CopyLoop {
    pub read: u32,
    pub write: u32,
    pub weight: u64,
    pub forwarded: f64,
    /// Whether the profile showed the data dependency (write's count is
    /// read's result). A profile without result matches (aggregate mode)
    /// has only the loop's edges and counts: the copy is then a candidate
    /// to check, not a finding.
    pub confirmed: bool,
}

/// What `--mode events` would add to an aggregate-mode finding.
pub const EVENTS_WOULD_ADD: &str = "`syscluster record --mode events` would add the data dependency (write's count = read's result), the block size, what each descriptor is (file, socket, pipe, device) and the code locations";

impl CopyLoop {
    /// The loop's evidence: its edges both ways, the read's result passed
    /// as the write's `len_arg`, then `extra`, the read sizes, the buffer
    /// shared with the write's `buf_arg`, the I/O of both calls and where
    /// they are.
    pub fn evidence(&self, f: &Facts, len_arg: &str, buf_arg: &str, extra: Option<Evidence>) -> Vec<Evidence> {
        let (read, write) = (self.read, self.write);
        let mut evidence = vec![edge_evidence(f, read, write), edge_evidence(f, write, read)];
        if self.confirmed {
            evidence.push(Evidence::ResultMatch {
                from: f.label(read),
                to: f.label(write),
                arg: len_arg.into(),
                count: (self.forwarded * self.weight as f64).round() as u64,
                share: self.forwarded,
            });
        }
        evidence.extend(extra);
        evidence.extend(value_evidence(f, "read", "count"));
        evidence.extend(super::same_buffer(f, "read", &f.node(write).syscall, buf_arg));
        for id in [read, write] {
            if let Some(io) = f.io_of(id) {
                evidence.push(io_evidence(io));
            }
        }
        evidence.extend(f.placement_evidence(&[read, write]));
        evidence
    }
}

pub fn find_copy_loops(f: &Facts, to: &str) -> Vec<CopyLoop> {
    let mut v = Vec::new();
    for e in &f.p.edges {
        let (a, b) = (f.node(e.from), f.node(e.to));
        if a.syscall != "read" || b.syscall != to || e.from == e.to {
            continue;
        }
        // Without result matches, the loop's edges are all there is.
        let confirmed = f.p.meta.collected.result_matches;
        let fwd = f.forwarded(e.from, e.to, 2);
        let back = f.weight(e.to, e.from);
        if (confirmed && fwd < f.opts.dep_share)
            || (!confirmed && e.from == e.to)
            || (back as f64) < 0.8 * e.weight as f64
            || !f.big_enough(e.weight, 2 * e.weight)
        {
            continue;
        }
        v.push(CopyLoop { read: e.from, write: e.to, weight: e.weight, forwarded: fwd, confirmed });
    }
    v
}

fn copy_loops(f: &Facts, cost: &CostModel, out: &mut Vec<Finding>) {
    for l in find_copy_loops(f, "write") {
        let (kin, kout) = (f.kind_of(l.read), f.kind_of(l.write));
        if kin == "socket" || kin == "device" || kout == "device" {
            continue;
        }
        let w = l.weight;
        let (rn, wn) = (f.node(l.read), f.node(l.write));
        let bytes_known = l.confirmed || f.io_of(l.read).is_some();
        let total_bytes = match f.io_of(l.read) {
            Some(io) if io.bytes_read > 0 => io.bytes_read,
            _ => {
                let per = f
                    .mean_where("read", "result", |v| v > 0)
                    .or_else(|| f.dominant("read", "count").map(|d| d.0 as f64))
                    .unwrap_or(4096.0);
                (per * w as f64) as u64
            }
        };
        let size = (total_bytes as f64 / w as f64).round().max(1.0) as u64;
        let block_now = f.usual_size("read", "count").unwrap_or(size);
        let evidence = l.evidence(f, "count", "buf", None);
        let (fin, fout) = (
            rn.key.fd.map_or("in".to_string(), |x| x.to_string()),
            wn.key.fd.map_or("out".to_string(), |x| x.to_string()),
        );
        let on_out = on_of(kout);
        let rd = cost.node_call(l.read, "read", "file", size);
        let wr = cost.node_call(l.write, "write", on_out, size);

        // copy_file_range / sendfile.
        let (call, mech) = if kout == "socket" {
            (format!("sendfile({fout}, {fin}, NULL, 1 << 30)"), "sendfile")
        } else {
            (format!("copy_file_range({fin}, NULL, {fout}, NULL, 1 << 30, 0)"), "copy_file_range")
        };
        let chunks = total_bytes.div_ceil(1 << 30).max(1);
        let crossing = Priced { ns: cost.crossing(), basis: Basis::Calibrated };
        let lines = (
            cost.program_line("read", "file", size, rd),
            cost.program_line("write", on_out, size, wr),
            cost.line("read", "file", size),
            cost.line("write", on_out, size),
            cost.line("copy_file_range", "file", total_bytes / chunks),
        );
        let (before, after, assumes) = match (cost.call("copy_file_range", "file", total_bytes / chunks), lines) {
            (_, (Some(pr), Some(pw), Some(cr), Some(cw), Some(cfr))) if mech == "copy_file_range" && bytes_known => {
                // The kernel copy's work per byte, at the calibrated ratio
                // to read + write's, applied to the program's own: what the
                // recorded run and the calibration disagree on (how fast
                // this machine's memory moved bytes then) cancels.
                let cal_rw = cr.per_byte_ns + cw.per_byte_ns;
                let level = if cal_rw > 0.0 { (pr.per_byte_ns + pw.per_byte_ns) / cal_rw } else { 1.0 };
                let per_chunk = cfr.at(level * (total_bytes / chunks) as f64);
                (
                    vec![Part::new(w as f64, rd), Part::new(w as f64, wr)],
                    vec![Part::new(chunks as f64, Priced { ns: per_chunk, basis: Basis::Calibrated }), Part::new(1.0, crossing)],
                    format!(
                        "{} copied by {} copy_file_range call(s) plus the last one that returns 0; each read and write removed saves its crossing and the kernel's fixed work per call ({:.0} and {:.0} ns, calibrated), and the kernel copies each byte once instead of twice (copy_file_range's work per byte is {:.0} % of read + write's, calibrated)",
                        bytes(total_bytes),
                        chunks,
                        pr.fixed_ns,
                        pw.fixed_ns,
                        if cal_rw > 0.0 { 100.0 * cfr.per_byte_ns / cal_rw } else { 100.0 }
                    ),
                )
            }
            (Some(ns), _) if mech == "copy_file_range" && bytes_known => (
                vec![Part::new(w as f64, rd), Part::new(w as f64, wr)],
                vec![Part::new(chunks as f64, Priced { ns, basis: Basis::Calibrated }), Part::new(1.0, crossing)],
                format!("{} copied by {} copy_file_range call(s) plus the last one that returns 0, at the calibrated cost per byte", bytes(total_bytes), chunks),
            ),
            (_, _) => {
                let c = Priced { ns: cost.crossing(), basis: if cost.calibrated() { Basis::Calibrated } else { Basis::CrossingOnly } };
                (
                    vec![Part::new(2.0 * w as f64, c)],
                    vec![Part::new(chunks as f64 + 1.0, c)],
                    format!("only the crossings are counted: the copying itself stays in the kernel and {mech} was not calibrated"),
                )
            }
        };
        let specifics = if l.confirmed {
            format!(
                "Here {} → {} ran {} times, {} in all, and write's count was read's result in {} of them.",
                f.label(l.read),
                f.label(l.write),
                count(w),
                bytes(total_bytes),
                pct(l.forwarded)
            )
        } else {
            format!(
                "Here {} → {} → {} ran {} times. This profile has only the loop's edges and counts (aggregate mode): check that the write writes what the read returned and that the input is a file (not a device or socket) before rewriting; {}.",
                f.label(l.read),
                f.label(l.write),
                f.label(l.read),
                count(w),
                EVENTS_WOULD_ADD
            )
        };
        out.push(Finding {
            rule: &COPY_OFFLOAD,
            nodes: vec![l.read, l.write],
            vars: vec![("in", fin.clone()), ("out", fout.clone()), ("size", if bytes_known { block_now.to_string() } else { "sizeof buf".into() }), ("call", call)],
            specifics,
            evidence: evidence.clone(),
            saving: Estimate { crossings_removed: (2 * w).saturating_sub(chunks + 1), before, after, upper_bound: false, assumes },
            applicable_here: true,
            how: if l.confirmed {
                format!("by hand (the sketch), or libmulticall's mc_copy(), which uses {mech} where the files allow")
            } else {
                format!("first confirm the copy with `syscluster record --mode events -- {}`; then by hand (the sketch), or libmulticall's mc_copy()", command(f))
            },
            mechanism: Some(mech.into()),
            sketch: None,
        });

        // A larger block, where the value profile shows a small fixed one.
        let block = f.opts.block_size;
        let Some((b, share, obs)) = f.dominant("read", "count") else {
            continue;
        };
        if share < f.opts.dominant_share || b <= 0 || b as u64 >= block || total_bytes < 2 * block {
            continue;
        }
        let b = b as u64;
        let w2 = total_bytes.div_ceil(block);
        let (rb, wb) = (cost.node_call(l.read, "read", "file", b), cost.node_call(l.write, "write", on_out, b));
        let lines = (cost.program_line("read", "file", b, rb), cost.program_line("write", on_out, b, wb));
        let (before, after, assumes) = if let (Some(lr), Some(lw)) = lines {
            // Blocks of a page or more: the same bytes, so the same work per
            // byte (the program's, from its own prices); what goes with
            // each call removed is its crossing and the kernel's fixed work.
            let per = total_bytes as f64 / w2 as f64;
            let price = |line: crate::cost::Line| Priced { ns: line.at(per), basis: Basis::Calibrated };
            (
                vec![Part::new(w as f64, rb), Part::new(w as f64, wb)],
                vec![Part::new(w2 as f64, price(lr)), Part::new(w2 as f64, price(lw))],
                format!(
                    "{} moved in blocks of {} instead of {}: each call removed saves its crossing and the kernel's fixed work per call ({:.0} ns per read, {:.0} ns per write, calibrated); the work per byte stays",
                    bytes(total_bytes),
                    bytes(block),
                    bytes(b),
                    lr.fixed_ns,
                    lw.fixed_ns
                ),
            )
        } else if cost.calibrated() {
            let rd2 = calibrated_or(cost, "read", "file", block, rd);
            let wr2 = calibrated_or(cost, "write", on_out, block, wr);
            (
                vec![Part::new(w as f64, rb), Part::new(w as f64, wb)],
                vec![Part::new(w2 as f64, rd2), Part::new(w2 as f64, wr2)],
                format!(
                    "{} moved in blocks of {} instead of {}, at the calibrated cost of each size",
                    bytes(total_bytes),
                    bytes(block),
                    bytes(b)
                ),
            )
        } else {
            let c = Priced { ns: cost.crossing(), basis: Basis::CrossingOnly };
            (
                vec![Part::new(2.0 * w as f64, c)],
                vec![Part::new(2.0 * w2 as f64, c)],
                "only the crossings are counted (no calibration of the per-call kernel work by size)".into(),
            )
        };
        let mut ev = evidence;
        ev.retain(|e| !matches!(e, Evidence::ResultMatch { .. }));
        out.push(Finding {
            rule: &LARGER_BLOCK,
            nodes: vec![l.read, l.write],
            vars: vec![
                ("in", fin),
                ("out", fout),
                ("size", b.to_string()),
                ("block", block.to_string()),
                ("block_text", bytes(block)),
            ],
            specifics: format!(
                "Here the block size is {} in {} of {} reads, and the loop moved {}: {} blocks of {} would do.",
                bytes(b),
                pct(share),
                count(obs),
                bytes(total_bytes),
                count(w2),
                bytes(block)
            ),
            evidence: ev,
            saving: Estimate {
                crossings_removed: 2 * w.saturating_sub(w2),
                before,
                after,
                upper_bound: false,
                assumes,
            },
            applicable_here: true,
            how: "by hand: a larger buffer".into(),
            mechanism: None,
            sketch: None,
        });
    }
}

/// A read of a file followed by a send of a socket, again and again.
fn file_to_socket(f: &Facts, cost: &CostModel, out: &mut Vec<Finding>) {
    for e in &f.p.edges {
        let (a, b) = (f.node(e.from), f.node(e.to));
        if !matches!(a.syscall.as_str(), "read" | "pread64")
            || !matches!(b.syscall.as_str(), "write" | "writev" | "sendmsg" | "sendto")
            || f.kind_of(e.from) != "file"
            || f.kind_of(e.to) != "socket"
        {
            continue;
        }
        // Datagrams are the batching rules' (sendmmsg): a stream gets sendfile.
        if f.share_where("socket", "type", |v| v & 0xf == 2).is_some_and(|s| s >= f.opts.dominant_share) {
            continue;
        }
        let w = e.weight;
        // At least half the reads of the node are followed by the send: a
        // file sent in one block is read twice (the block, then end of
        // file), and a `many files` node also holds the program's other
        // reads in passing (an interpreter's imports).
        if !f.big_enough(w, 2 * w) || 2 * w < a.count {
            continue;
        }
        if out.iter().any(|o| o.nodes.contains(&e.from) && o.nodes.contains(&e.to)) {
            continue;
        }
        let io = f.io_of(e.from);
        let size = f
            .usual_size(&a.syscall, "count")
            .or_else(|| io.filter(|io| io.reads > 0).map(|io| io.bytes_read / io.reads))
            .unwrap_or(4096)
            .max(1);
        let per_read = cost.node_call(e.from, &a.syscall, "file", size);
        let crossing = Priced {
            ns: cost.crossing(),
            basis: if cost.calibrated() { Basis::Calibrated } else { Basis::CrossingOnly },
        };
        let mut evidence =
            vec![edge_evidence(f, e.from, e.to), Evidence::Calls { node: f.label(e.from), count: a.count }];
        evidence.extend(io.map(io_evidence));
        evidence.extend(f.io_of(e.to).map(io_evidence));
        evidence.extend(f.placement_evidence(&[e.from, e.to]));
        let fd = |n: &syscluster_model::profile::Node, or: &str| n.key.fd.map_or(or.to_string(), |x| x.to_string());
        let (file, sock) = (fd(a, "file"), fd(b, "sock"));
        let read = if a.syscall == "pread64" {
            format!("pread({file}, buf, {size}, offset)")
        } else {
            format!("read({file}, buf, {size})")
        };
        let send = match b.syscall.as_str() {
            "writev" => format!("writev({sock}, iov /* headers, then buf */, iovcnt)"),
            "sendmsg" => format!("sendmsg({sock}, &msg /* buf */, flags)"),
            "sendto" => format!("send({sock}, buf, n, flags)"),
            _ => format!("write({sock}, buf, n)"),
        };
        out.push(Finding {
            rule: &SENDFILE,
            nodes: vec![e.from, e.to],
            vars: vec![
                ("file", file),
                ("sock", sock),
                ("size", size.to_string()),
                ("read", read),
                ("send", send),
            ],
            specifics: format!(
                "Here {} → {} ran {} times ({} of the reads), about {} per read{}.",
                f.label(e.from),
                f.label(e.to),
                count(w),
                pct(w as f64 / a.count.max(1) as f64),
                bytes(size),
                io.map_or(String::new(), |io| format!(", from {}", io.path))
            ),
            evidence,
            saving: Estimate {
                before: vec![Part::new(w as f64, per_read)],
                after: vec![Part::new(w as f64, crossing)],
                crossings_removed: 0,
                upper_bound: false,
                assumes: format!(
                    "each {} becomes a sendfile: its copy into user space goes (sendfile's copy to the socket replaces the send's copy of the buffer); one crossing each, as before",
                    a.syscall
                ),
            },
            applicable_here: true,
            how: "by hand (the sketch), where the bytes are sent as read".into(),
            mechanism: None,
            sketch: None,
        });
    }
}

fn reopen(f: &Facts, cost: &CostModel, out: &mut Vec<Finding>) {
    let opens: Vec<u32> =
        f.p.nodes.iter().filter(|n| matches!(n.syscall.as_str(), "openat" | "open")).map(|n| n.id).collect();
    // Calls that replace, remove or cut a file: the profile does not say
    // which path each touched, so as many of them as reopenings mean the
    // file may change between opens (a journal unlinked at every commit).
    let changers: u64 =
        f.p.nodes
            .iter()
            .filter(|n| {
                matches!(
                    n.syscall.as_str(),
                    "unlink" | "unlinkat" | "rename" | "renameat" | "renameat2" | "truncate" | "ftruncate"
                )
            })
            .map(|n| n.count)
            .sum();
    let sends = f.p.nodes.iter().any(|n| n.syscall == "sendfile" && n.count > 0);
    for io in &f.p.io_patterns {
        if io.kind != "file" || io.path.starts_with('<') || !f.big_enough(io.opens, 2 * io.opens) {
            continue;
        }
        let again = io.opens - 1;
        // Keep-open holds only for a file read as it is: not one the
        // program writes, nor one that may be unlinked, renamed or
        // truncated between the opens.
        if io.writes > 0 || io.bytes_written > 0 || 2 * changers >= again {
            continue;
        }
        // Only the opening sites that could have made these opens: one-off
        // sites elsewhere are not this file's.
        let min_site = f.opts.min_repeats.max(io.opens / 10);
        let opens: Vec<u32> = opens.iter().copied().filter(|&id| f.node(id).count >= min_site).collect();
        if opens.is_empty() {
            continue;
        }
        let pair = match cost.call("openat+close", "file", 0) {
            Some(ns) => Priced { ns, basis: Basis::Calibrated },
            None => {
                let o = opens.first().map_or(Priced { ns: cost.crossing(), basis: Basis::CrossingOnly }, |&id| {
                    cost.node_call(id, "openat", "file", 0)
                });
                Priced { ns: o.ns + cost.crossing(), basis: o.basis }
            }
        };
        let mut evidence = vec![io_evidence(io)];
        for &id in &opens {
            evidence.push(Evidence::Calls { node: f.label(id), count: f.node(id).count });
        }
        out.push(Finding {
            rule: &REOPEN,
            nodes: opens.clone(),
            vars: vec![("path", io.path.clone())],
            specifics: format!(
                "Here {} was opened {} times ({} transfers out of it{}, {} in all), and never written.",
                io.path,
                count(io.opens),
                count(io.reads),
                if sends { ": reads, preads or sendfile" } else { "" },
                bytes(io.bytes_read)
            ),
            evidence,
            saving: Estimate {
                before: vec![Part::new(again as f64, pair)],
                after: vec![],
                crossings_removed: 2 * again,
                upper_bound: false,
                assumes: "every open but the first goes, with its close; the reads stay (as preads)".into(),
            },
            applicable_here: true,
            how: "by hand (the sketch)".into(),
            mechanism: None,
            sketch: None,
        });
    }
}

/// Calls that look a path up (data/syscall_properties.tsv, class looks-up).
const PATH_STATS: &[&str] = syscluster_model::syscall_lists::LOOKS_UP_PATH;

fn stat_storm(f: &Facts, cost: &CostModel, out: &mut Vec<Finding>) {
    let mut nodes = Vec::new();
    let mut calls = 0u64;
    let mut before = Vec::new();
    for n in &f.p.nodes {
        if !PATH_STATS.contains(&n.syscall.as_str()) || n.key.fd.is_some_and(|fd| fd >= 0) || n.key.descriptor.is_some()
        {
            continue;
        }
        let mut c = n.count as f64;
        if n.syscall == "newfstatat" {
            // fstat(fd) is newfstatat(fd, "", …, AT_EMPTY_PATH): not a path lookup.
            if let Some(s) = f.share_where("newfstatat", "flag", |v| v & 0x1000 != 0) {
                c *= 1.0 - s;
            }
        }
        if c < 1.0 {
            continue;
        }
        let on = "path";
        let proxy = if n.syscall == "access" || n.syscall.starts_with("faccessat") { "access" } else { "newfstatat" };
        let p = cost.node_call(n.id, proxy, on, 0);
        before.push(Part::new(c, p));
        calls += c as u64;
        nodes.push(n.id);
    }
    if calls < 8 * f.opts.min_repeats || (calls as f64) < 0.25 * f.total() as f64 {
        return;
    }
    let evidence = nodes.iter().map(|&id| Evidence::Calls { node: f.label(id), count: f.node(id).count }).collect();
    out.push(Finding {
        rule: &STAT_STORM,
        nodes,
        vars: vec![("count", count(calls))],
        specifics: format!(
            "Here {} of the {} calls ({}) look paths up.",
            count(calls),
            count(f.total()),
            pct(calls as f64 / f.total() as f64)
        ),
        evidence,
        saving: Estimate {
            before,
            after: vec![],
            crossings_removed: calls,
            upper_bound: true,
            assumes:
                "an upper bound: every path lookup served from a cache; the profile does not record which paths repeat"
                    .into(),
        },
        applicable_here: true,
        how: "by hand".into(),
        mechanism: None,
        sketch: None,
    });
}
