//! Aggregate mode: the kernel builds the graph (`aggregate.bpf.c`); this
//! loads the programs, runs the command, and reads the maps at the end.

use super::skel::aggregate::types::{self, key_bits};
use super::skel::aggregate::AggregateSkelBuilder;
use super::{arg_info_table, key_mode_of, read_as, report_losses, spawn_armed, Counters, unavailable, wait_all, TICK};
use crate::{ExitStatus, RecordError, RecordOptions, Sink};
use libbpf_rs::skel::{OpenSkel, Skel, SkelBuilder};
use libbpf_rs::{MapCore, MapFlags};
use rustc_hash::FxHashMap;
use std::ffi::OsString;
use std::mem::MaybeUninit;
use syscluster_analysis::RawKey;
use syscluster_model::event::normalize_arg;
use syscluster_model::syscalls;

/// The key of a thread's start: the source of the edge to its first call.
const NODE_START: u64 = u64::MAX;

pub fn record(argv: &[OsString], opts: &RecordOptions, sink: &mut Sink) -> Result<ExitStatus, RecordError> {
    let mut object = MaybeUninit::uninit();
    let mut open = AggregateSkelBuilder::default()
        .open(&mut object)
        .map_err(|e| unavailable("opening the BPF object", e))?;
    let rodata = open.maps.rodata_data.as_deref_mut().expect("rodata is mapped");
    rodata.arg_info = arg_info_table();
    rodata.key_mode = key_mode_of(sink.builder.node_key_mode()).0;
    rodata.time_all = std::env::var_os("SYSCLUSTER_TIME_ALL").is_some() as u8; // EXPERIMENT
    let mut skel = open.load().map_err(|e| unavailable("loading the BPF programs", e))?;
    skel.attach().map_err(|e| unavailable("attaching the BPF programs", e))?;

    let bss: *mut types::bss = skel.maps.bss_data.as_deref_mut().expect("bss is mapped");
    // SAFETY: the mapping lives as long as `skel`; the kernel updates the
    // counters concurrently, hence the volatile accesses.
    let counters = unsafe { Counters { live: &mut (*bss).live_tasks, unadopted: &mut (*bss).unadopted } };
    let mut child = spawn_armed(argv, &skel.maps.children, counters)?;
    child.release()?;
    let live = || unsafe { std::ptr::read_volatile(&(*bss).live_tasks) };
    let status = wait_all(&mut child, &live, &mut || std::thread::sleep(TICK))?;
    let _ = opts;

    read_graph(&skel.maps.edges, sink)?;
    for k in skel.maps.threads.keys() {
        if let Ok(Some(v)) = skel.maps.threads.lookup(&k, MapFlags::ANY) {
            if let (Some(tid), Some(pid)) = (read_as::<u32>(&k), read_as::<u32>(&v)) {
                sink.builder.add_task(pid, tid);
            }
        }
    }
    // SAFETY: as above; every recorded task has ended.
    let (lost, unlisted) = unsafe { (std::ptr::read_volatile(&(*bss).lost), std::ptr::read_volatile(&(*bss).threads_unlisted)) };
    report_losses(&lost, sink);
    if unlisted > 0 {
        eprintln!("syscluster: {unlisted} threads were recorded but not listed; the thread count is low by that much");
    }
    Ok(status)
}

/// The node key of a kernel key (see `syscluster.h`).
fn raw_key(k: u64) -> RawKey {
    let nr16 = (k & key_bits::KEY_NR_MASK.0 as u64) as u32;
    let nr = if nr16 == key_bits::KEY_NR_MASK.0 as u32 { u32::MAX } else { nr16 };
    let fd = if k & key_bits::KEY_HAS_FD.0 as u64 != 0 {
        // The register as the kernel saw it, for the builder's
        // interpretation (the high half is all ones or taken as zeros).
        let low = k >> key_bits::KEY_ARG_SHIFT.0 as u32;
        let high = if k & key_bits::KEY_FD_HIGH.0 as u64 != 0 { 0xffff_ffff_0000_0000 } else { 0 };
        syscalls::fd_arg(nr).map(|i| normalize_arg(nr, i, high | low))
    } else {
        None
    };
    RawKey { nr, fd, site: None }
}

/// Feeds the edges, and the node counts that follow from them, to the
/// builder.
fn read_graph(edges: &dyn MapCore, sink: &mut Sink) -> Result<(), RecordError> {
    #[derive(Default)]
    struct Acc {
        count: u64,
        errors: u64,
        kernel_ns: u64,
    }
    let mut nodes: FxHashMap<u64, Acc> = FxHashMap::default();
    for k in edges.keys() {
        let v = edges
            .lookup(&k, MapFlags::ANY)
            .map_err(|e| RecordError::Backend(format!("reading the graph from the kernel: {e}")))?;
        let (Some(key), Some(val)) = (read_as::<types::edge_key>(&k), v.as_deref().and_then(read_as::<types::edge_val>)) else {
            continue;
        };
        let n = nodes.entry(key.to).or_default();
        n.count += val.count;
        n.errors += val.errors;
        // The kernel times a sample of the calls: scale it to all of them.
        if val.timed > 0 {
            n.kernel_ns += (val.kernel_ns as u128 * val.count as u128 / val.timed as u128) as u64;
        }
        if key.from != NODE_START {
            sink.builder.add_edge(raw_key(key.from), raw_key(key.to), val.count);
        }
    }
    for (k, n) in nodes {
        sink.builder.add_node_counts(raw_key(k), n.count, n.errors, Some(n.kernel_ns));
    }
    Ok(())
}
