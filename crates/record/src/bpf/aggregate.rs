//! Aggregate mode: the kernel builds the graph (`aggregate.bpf.c`); this
//! loads the programs, runs the command, and reads the maps at the end.

use super::skel::aggregate::types::{self, key_bits};
use super::skel::aggregate::AggregateSkelBuilder;
use super::{
    arg_info_table, key_mode_of, read_as, report_losses, slots_log2, spawn_armed, stop_programs, unavailable,
    unwind_data, wait_all, Counters, KmodProbes, TICK,
};
use crate::callsite::modules::dev_from_kernel;
use crate::{Ended, RecordError, RecordOptions, Sink};
use libbpf_rs::skel::{OpenSkel, Skel, SkelBuilder};
use libbpf_rs::{MapCore, MapFlags};
use rustc_hash::{FxHashMap, FxHashSet};
use std::ffi::OsString;
use std::mem::MaybeUninit;
use std::path::PathBuf;
use syscluster_analysis::RawKey;
use syscluster_model::event::normalize_arg;
use syscluster_model::profile::NodeKeyMode;
use syscluster_model::syscalls;
use syscluster_model::CodeAddr;

/// The key of a thread's start: the source of the edge to its first call.
const NODE_START: u64 = u64::MAX;

pub fn record(argv: &[OsString], opts: &RecordOptions, sink: &mut Sink) -> Result<Ended, RecordError> {
    if sink.builder.node_key_mode() == NodeKeyMode::Descriptor {
        // The in-kernel builder keys a call by what its registers hold at
        // entry. What a descriptor is needs every process's descriptor
        // table followed through open/accept/dup/close/exec, with paths and
        // socket addresses read from memory: map updates and string reads
        // on the path this mode keeps nearly free. Its fd numbers cannot be
        // turned into identities afterwards either (a number names one
        // descriptor after another), so the profile says `fd` (and
        // `record` says so).
        sink.builder.set_node_key(NodeKeyMode::Fd);
    }
    let mut object = MaybeUninit::uninit();
    let mut open =
        AggregateSkelBuilder::default().open(&mut object).map_err(|e| unavailable("opening the BPF object", e))?;
    let rodata = open.maps.rodata_data.as_deref_mut().expect("rodata is mapped");
    rodata.arg_info = arg_info_table();
    rodata.key_mode = key_mode_of(sink.builder.node_key_mode()).0;
    rodata.slots_log2 = slots_log2();
    open.maps.slots.set_max_entries(1 << rodata.slots_log2).map_err(|e| unavailable("sizing the task states", e))?;
    // Code locations only as node keys: what else they would add to the
    // profile (each node's issuing locations) is not worth their cost here.
    let unwind = unwind_data(sink.builder.node_key_mode() == NodeKeyMode::Callsite, argv);
    if let Some(u) = &unwind {
        rodata.capture_sites = 1;
        rodata.n_skip = u.modules.len() as u32;
        for (slot, m) in rodata.skip_modules.iter_mut().zip(&u.modules) {
            *slot = types::skip_module {
                ino: m.ino,
                dev: m.dev,
                first: m.first,
                count: m.count,
                vdso: m.vdso as u32,
                runtime: m.runtime as u32,
                ..Default::default()
            };
        }
        open.maps
            .unwind_rows
            .set_max_entries(u.count.max(1))
            .map_err(|e| unavailable("sizing the unwind tables", e))?;
    }
    // The calls a multi-call runs inside the kernel module (kmod/) reach no
    // syscall tracepoint: its own tracepoints carry them (KmodProbes).
    open.progs.on_mc_enter.set_autoattach(false);
    open.progs.on_mc_exit.set_autoattach(false);
    let mut skel = open.load().map_err(|e| unavailable("loading the BPF programs", e))?;
    if let Some(u) = &unwind {
        u.fill(&skel.maps.unwind_rows)?;
    }
    skel.attach().map_err(|e| unavailable("attaching the BPF programs", e))?;
    let mut attach_kmod = || Ok(vec![skel.progs.on_mc_enter.attach()?, skel.progs.on_mc_exit.attach()?]);
    let mut kmod = KmodProbes::start(&mut attach_kmod)?;

    let bss: *mut types::bss = skel.maps.bss_data.as_deref_mut().expect("bss is mapped");
    // SAFETY: the mapping lives as long as `skel`; the kernel updates the
    // counters concurrently, hence the volatile accesses.
    let counters = unsafe {
        Counters { live: &mut (*bss).live_tasks, detached: &mut (*bss).live_detached, unadopted: &mut (*bss).unadopted }
    };
    let mut child = spawn_armed(argv, &skel.maps.children, counters)?;
    child.release()?;
    // Code locations name their files by device and inode: note the
    // programs' mapped files while they run, to name them at the end.
    let mut mapped = MappedFiles::default();
    let status = wait_all(&mut child, counters, opts.follow_detached, &mut || {
        if unwind.is_some() {
            mapped.scan(&skel.maps.threads);
        }
        kmod.tick(&mut attach_kmod);
        std::thread::sleep(TICK)
    })?;
    kmod.report();

    // Tasks left running (detached daemons, followed or not) may still
    // flush or evict their edge caches into `edges`: read while they do,
    // a cache read among the running ones and again in `edges` after it
    // was flushed there counts its edges twice (an edge then outweighs
    // the node it leaves). Nothing is recorded after this point anyway.
    kmod.detach();
    stop_programs(&mut skel.links);
    let sites = read_sites(&skel.maps.sites, sink);
    let running = if status.left_running > 0 { running_caches(&skel.maps.slots, &skel.maps.spill) } else { Vec::new() };
    read_graph(&skel.maps.edges, &running, &sites, sink)?;
    mapped.name(sink);
    for k in skel.maps.threads.keys() {
        if let Ok(Some(v)) = skel.maps.threads.lookup(&k, MapFlags::ANY) {
            if let (Some(tid), Some(pid)) = (read_as::<u32>(&k), read_as::<u32>(&v)) {
                sink.builder.add_task(pid, tid);
            }
        }
    }
    // SAFETY: as above; every recorded task has ended.
    let (lost, unlisted) =
        unsafe { (std::ptr::read_volatile(&(*bss).lost), std::ptr::read_volatile(&(*bss).threads_unlisted)) };
    report_losses(&lost, sink);
    if unlisted > 0 {
        eprintln!("syscluster: {unlisted} threads were recorded but not listed; the thread count is low by that much");
    }
    Ok(status)
}

/// Executable files mapped by the recorded processes, seen in their
/// /proc/PID/maps while they run.
#[derive(Default)]
struct MappedFiles {
    scanned: FxHashSet<u32>,
    paths: FxHashSet<PathBuf>,
}

impl MappedFiles {
    /// Reads the maps of processes not seen yet.
    fn scan(&mut self, threads: &dyn MapCore) {
        for k in threads.keys() {
            let Ok(Some(v)) = threads.lookup(&k, MapFlags::ANY) else { continue };
            let Some(pid) = read_as::<u32>(&v) else { continue };
            if self.scanned.len() < 4096 && self.scanned.insert(pid) {
                if let Ok(maps) = crate::callsite::unwind::read_maps(pid) {
                    self.paths.extend(maps.into_iter().filter(|m| m.executable).filter_map(|m| m.path));
                }
            }
        }
    }

    fn name(&self, sink: &mut Sink) {
        for p in &self.paths {
            if !sink.modules.missing_paths() {
                break;
            }
            sink.modules.learn_path(p);
        }
    }
}

/// Callsite ids to code locations (module ids of the sink).
fn read_sites(map: &dyn MapCore, sink: &mut Sink) -> FxHashMap<u32, CodeAddr> {
    let mut out = FxHashMap::default();
    for k in map.keys() {
        let Ok(Some(v)) = map.lookup(&k, MapFlags::ANY) else { continue };
        let (Some(site), Some(id)) = (read_as::<types::site>(&k), read_as::<types::site_id>(&v)) else { continue };
        let module = sink.modules.intern(dev_from_kernel(site.dev), site.ino);
        out.insert(id.id, CodeAddr { module, offset: site.off, site: (site.call_off != 0).then_some(site.call_off) });
    }
    out
}

/// The node key of a kernel key (see `syscluster.h`).
fn raw_key(k: u64, sites: &FxHashMap<u32, CodeAddr>) -> RawKey {
    let nr16 = (k & key_bits::KEY_NR_MASK.0 as u64) as u32;
    let nr = if nr16 == key_bits::KEY_NR_MASK.0 { u32::MAX } else { nr16 };
    let fd = if k & key_bits::KEY_HAS_FD.0 as u64 != 0 {
        // The register as the kernel saw it, for the builder's
        // interpretation (the high half is all ones or taken as zeros).
        let low = k >> key_bits::KEY_ARG_SHIFT.0;
        let high = if k & key_bits::KEY_FD_HIGH.0 as u64 != 0 { 0xffff_ffff_0000_0000 } else { 0 };
        syscalls::key_fd_arg(nr).map(|(i, _)| normalize_arg(nr, i, high | low))
    } else {
        None
    };
    let site = if k & key_bits::KEY_HAS_SITE.0 as u64 != 0 {
        sites.get(&((k >> key_bits::KEY_ARG_SHIFT.0) as u32)).copied()
    } else {
        None
    };
    RawKey { nr, fd, desc: None, site }
}

/// The edge counts still in the caches of tasks that run on (detached, not
/// followed): the kernel moves a cache to `edges` only when its task exits.
fn running_caches(slots: &dyn MapCore, spill: &dyn MapCore) -> Vec<(types::edge_key, types::edge_val)> {
    let mut out = Vec::new();
    for map in [slots, spill] {
        for k in map.keys() {
            let Ok(Some(v)) = map.lookup(&k, MapFlags::ANY) else { continue };
            let Some(task) = read_as::<types::agg_task>(&v) else { continue };
            if task.c.owner == 0 {
                continue;
            }
            for e in task.cache.iter().filter(|e| e.count > 0) {
                let key = types::edge_key { from: e.from, to: e.to };
                let val = types::edge_val {
                    count: e.count,
                    errors: e.errors,
                    timed: e.timed,
                    kernel_ns: e.kernel_ns,
                    blocked_ns: e.blocked_ns,
                };
                out.push((key, val));
            }
        }
    }
    out
}

/// Feeds the edges (those of `edges`, and `running` from the caches of
/// tasks still running), and the node counts that follow from them, to the
/// builder.
fn read_graph(
    edges: &dyn MapCore,
    running: &[(types::edge_key, types::edge_val)],
    sites: &FxHashMap<u32, CodeAddr>,
    sink: &mut Sink,
) -> Result<(), RecordError> {
    #[derive(Default)]
    struct Acc {
        count: u64,
        errors: u64,
        kernel_ns: u64,
        blocked_ns: u64,
    }
    let mut nodes: FxHashMap<u64, Acc> = FxHashMap::default();
    let mut add = |key: types::edge_key, val: types::edge_val| {
        let n = nodes.entry(key.to).or_default();
        n.count += val.count;
        n.errors += val.errors;
        // The kernel times a sample of the calls: scale it to all of them.
        if val.timed > 0 {
            let scale = |ns: u64| (ns as u128 * val.count as u128 / val.timed as u128) as u64;
            n.kernel_ns += scale(val.kernel_ns);
            n.blocked_ns += scale(val.blocked_ns);
        }
        if key.from != NODE_START {
            sink.builder.add_edge(raw_key(key.from, sites), raw_key(key.to, sites), val.count);
        }
    };
    for k in edges.keys() {
        let v = edges
            .lookup(&k, MapFlags::ANY)
            .map_err(|e| RecordError::Backend(format!("reading the graph from the kernel: {e}")))?;
        if let (Some(key), Some(val)) =
            (read_as::<types::edge_key>(&k), v.as_deref().and_then(read_as::<types::edge_val>))
        {
            add(key, val);
        }
    }
    for &(key, val) in running {
        add(key, val);
    }
    for (k, n) in nodes {
        let key = raw_key(k, sites);
        sink.builder.add_node_counts(key, n.count, n.errors, Some(n.kernel_ns));
        sink.builder.add_blocked(key, n.blocked_ns);
        if let Some(site) = key.site {
            sink.builder.add_callsite(key, site, n.count);
        }
    }
    Ok(())
}
