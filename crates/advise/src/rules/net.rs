//! Datagram rules: many sendto → sendmmsg (and the web server's read →
//! sendto loop → one read and one sendmmsg per batch); many recvfrom →
//! recvmmsg.

use super::io::find_copy_loops;
use super::{bytes, calibrated_or, count, edge_evidence, pct, value_evidence, Estimate, Finding, Part, Rule};
use crate::advice::Evidence;
use crate::cost::{Basis, CostModel, Priced};
use crate::facts::Facts;

pub static SENDMMSG: Rule = Rule {
    id: "sendmmsg",
    title: "Send many datagrams per call with sendmmsg",
    mechanism: "sendmmsg",
    explanation: "Every sendto crosses into the kernel for one datagram. sendmmsg sends a vector of \
datagrams in one call, each with its own address and length, so the datagrams on the wire are the same \
and in the same order; the crossing is paid once per batch. When the data comes from a regular file \
read block by block (the web server cluster of seed 000 §4: read → sendto with the read's result as the \
length), one read of a batch of blocks and one sendmmsg of as many datagrams replace two calls per \
block; libmulticall's mc_read_sendto does this (batch_send).",
    before: "while ((n = read({in}, buf, {size})) > 0)\n    sendto({out}, buf, n, 0, &to, sizeof to);",
    after: "while ((n = read({in}, buf, {batch} * {size})) > 0) {    /* {batch} blocks at once */\n    int k = 0;\n    for (ssize_t at = 0; at < n; at += {size}, k++) {\n        iov[k] = (struct iovec){ buf + at, MIN({size}, n - at) };\n        msg[k].msg_hdr = (struct msghdr){ .msg_name = &to, .msg_namelen = sizeof to, .msg_iov = &iov[k], .msg_iovlen = 1 };\n    }\n    sendmmsg({out}, msg, k, 0);            /* the same datagrams, one crossing */\n}",
};

pub static RECVMMSG: Rule = Rule {
    id: "recvmmsg",
    title: "Receive many datagrams per call with recvmmsg",
    mechanism: "recvmmsg",
    explanation: "Every recvfrom crosses into the kernel for one datagram. recvmmsg fills a vector of \
buffers in one call (with MSG_WAITFORONE it returns as soon as one datagram is there, so latency does \
not grow), and reports each datagram's length and source: the program sees the same datagrams in the \
same order, one crossing per batch.",
    before: "for (;;)\n    n = recvfrom({fd}, buf, {size}, 0, &from, &len);",
    after: "for (;;) {\n    int k = recvmmsg({fd}, msg, {batch}, MSG_WAITFORONE, NULL);\n    for (int i = 0; i < k; i++)\n        /* msg[i].msg_len bytes from msg[i].msg_hdr.msg_name */;\n}",
};

const SOCK_DGRAM: i64 = 2;

/// Evidence that the program's sockets carry datagrams.
fn datagram_evidence(f: &Facts, call: &str) -> Option<Evidence> {
    if let Some(s) = f.share_where("socket", "type", |v| v & 0xf == SOCK_DGRAM) {
        if s >= f.opts.dominant_share {
            return value_evidence(f, "socket", "type");
        }
    }
    // A destination address on every send: datagrams (a connected stream ignores it or fails).
    if call == "sendto" {
        if let Some(s) = f.share_where("sendto", "addr_len", |v| v > 0) {
            if s >= f.opts.dominant_share {
                return value_evidence(f, "sendto", "addr_len");
            }
        }
    }
    None
}

pub fn find(f: &Facts, cost: &CostModel, out: &mut Vec<Finding>) {
    let batch = f.opts.batch;
    // The web server cluster: read → sendto with the length forwarded.
    let mut done = Vec::new();
    for l in find_copy_loops(f, "sendto") {
        let Some(dgram) = datagram_evidence(f, "sendto") else {
            continue;
        };
        if f.kind_of(l.read) == "socket" {
            continue;
        }
        let w = l.weight;
        let size = f.usual_size("read", "count").unwrap_or(1024);
        let evidence = l.evidence(f, "len", "buff", Some(dgram));
        let rd = cost.node_call(l.read, "read", "file", size);
        let sd = cost.node_call(l.write, "sendto", "udp", size);
        let batches = (w as f64 / batch as f64).ceil();
        let (after, assumes) = match cost.call("sendmmsg", "udp", size) {
            Some(per_msg) => (
                vec![
                    Part::new(batches, calibrated_or(cost, "read", "file", batch * size, rd)),
                    Part::units(w as f64, Priced { ns: per_msg, basis: Basis::Calibrated }, batches),
                ],
                format!("{batch} blocks per read and per sendmmsg, at the calibrated cost of a read of {} and of a datagram sent by sendmmsg", bytes(batch * size)),
            ),
            None => (
                vec![
                    Part::new(batches, rd),
                    Part::units(w as f64, Priced { ns: (sd.ns - cost.crossing()).max(0.0), basis: sd.basis }, 0.0),
                    Part::new(batches, Priced { ns: cost.crossing(), basis: Basis::CrossingOnly }),
                ],
                format!("{batch} blocks per read and per sendmmsg; only the crossings of the sends are counted (sendmmsg not calibrated)"),
            ),
        };
        let (fin, fout) = (
            f.node(l.read).key.fd.map_or("in".into(), |x| x.to_string()),
            f.node(l.write).key.fd.map_or("sock".into(), |x| x.to_string()),
        );
        out.push(Finding {
            rule: &SENDMMSG,
            nodes: vec![l.read, l.write],
            vars: vec![("in", fin), ("out", fout), ("size", size.to_string()), ("batch", batch.to_string())],
            specifics: format!(
                "Here {} → {} ran {} times with {} datagrams; sendto's length was read's result in {}.",
                f.label(l.read),
                f.label(l.write),
                count(w),
                bytes(size),
                pct(l.forwarded)
            ),
            evidence,
            saving: Estimate {
                before: vec![Part::new(w as f64, rd), Part::new(w as f64, sd)],
                after,
                crossings_removed: (2 * w).saturating_sub(2 * batches as u64),
                upper_bound: false,
                assumes,
            },
            applicable_here: true,
            how: "by hand (the sketch), or libmulticall's mc_read_sendto() (batch_send)".into(),
            mechanism: Some("read + sendmmsg (batch_send)".into()),
            sketch: None,
        });
        done.push(l.write);
    }
    // Runs of sends or receives on one socket.
    for n in &f.p.nodes {
        let (rule, per_msg) = match n.syscall.as_str() {
            "sendto" | "sendmsg" => (&SENDMMSG, "sendmmsg"),
            "recvfrom" | "recvmsg" => (&RECVMMSG, "recvmmsg"),
            _ => continue,
        };
        if done.contains(&n.id) {
            continue;
        }
        let w = f.weight(n.id, n.id);
        if !f.big_enough(w, w) {
            continue;
        }
        let Some(dgram) = datagram_evidence(f, &n.syscall) else {
            continue;
        };
        let len_arg = if n.syscall.starts_with("send") { "len" } else { "size" };
        let size = f.dominant(&n.syscall, len_arg).map_or(1024, |d| d.0.max(1) as u64);
        let mut evidence = vec![edge_evidence(f, n.id, n.id), dgram];
        evidence.extend(value_evidence(f, &n.syscall, len_arg));
        evidence.extend(f.placement_evidence(&[n.id]));
        let per = cost.node_call(n.id, &n.syscall, "udp", size);
        let batches = (w as f64 / batch as f64).ceil();
        let after = match cost.call(per_msg, "udp", size) {
            Some(ns) => vec![Part::units(w as f64, Priced { ns, basis: Basis::Calibrated }, batches)],
            None => vec![
                Part::units(w as f64, Priced { ns: (per.ns - cost.crossing()).max(0.0), basis: per.basis }, 0.0),
                Part::new(batches, Priced { ns: cost.crossing(), basis: Basis::CrossingOnly }),
            ],
        };
        let fd = n.key.fd.map_or("fd".into(), |x| x.to_string());
        let sketch = if rule.id == "sendmmsg" {
            Some((
                format!("for (…)\n    sendto({fd}, buf, {size}, 0, &to, sizeof to);"),
                format!("/* gather up to {batch} datagrams */\nmsg[k++].msg_hdr = (struct msghdr){{ .msg_name = &to, .msg_namelen = sizeof to, .msg_iov = &iov[k], .msg_iovlen = 1 }};\nif (k == {batch}) {{ sendmmsg({fd}, msg, k, 0); k = 0; }}"),
            ))
        } else {
            None
        };
        out.push(Finding {
            rule,
            nodes: vec![n.id],
            vars: vec![("fd", fd), ("size", size.to_string()), ("batch", batch.to_string())],
            specifics: format!("Here {} ran {} times in a row, {} per datagram.", f.label(n.id), count(w), bytes(size)),
            evidence,
            saving: Estimate {
                before: vec![Part::new(w as f64, per)],
                after,
                crossings_removed: w.saturating_sub(batches as u64),
                upper_bound: false,
                assumes: format!("{batch} datagrams per {per_msg}"),
            },
            applicable_here: true,
            how: format!("by hand ({per_msg}), or libmulticall's fusion backend in a multi-call"),
            mechanism: None,
            sketch,
        });
    }
}
