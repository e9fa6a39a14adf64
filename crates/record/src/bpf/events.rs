//! Events mode: every call comes through the ring buffer of
//! `events.bpf.c` and goes to the profile builder in its thread's order.

use super::skel::events::types::{self, rec_flag, rec_kind};
use super::skel::events::EventsSkelBuilder;
use super::{
    arg_info_table, key_mode_of, read_as, report_losses, slots_log2, spawn_armed, unavailable, unwind_data, wait_all,
    Counters, KmodProbes, TICK,
};
use crate::callsite::modules::dev_from_kernel;
use crate::{Ended, RecordError, RecordOptions, Sink};
use libbpf_rs::skel::{OpenSkel, Skel, SkelBuilder};
use libbpf_rs::RingBufferBuilder;
use rustc_hash::FxHashSet;
use std::ffi::OsString;
use std::mem::MaybeUninit;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use syscluster_model::{syscalls, CodeAddr, SyscallEvent};

/// Calls whose path may name a module that code locations point into.
/// Calls whose path the recorder keeps (data/syscall_properties.tsv, class opens-path).
const PATH_CALLS: &[&str] = syscluster_model::syscall_lists::OPENS_PATH;

/// The smallest ring the kernel accepts is one page; a power of two.
fn ring_size(bytes: usize) -> Result<u32, RecordError> {
    let page = 4096usize;
    let size = bytes.max(page).checked_next_power_of_two().filter(|&s| s <= 1 << 30);
    size.map(|s| s as u32)
        .ok_or_else(|| RecordError::Backend(format!("ring buffer size {bytes} is too large (at most 1 GiB)")))
}

pub fn record(argv: &[OsString], opts: &RecordOptions, sink: &mut Sink) -> Result<Ended, RecordError> {
    let ring = ring_size(opts.ring_buffer_bytes)?;
    let mut object = MaybeUninit::uninit();
    let mut open =
        EventsSkelBuilder::default().open(&mut object).map_err(|e| unavailable("opening the BPF object", e))?;
    let rodata = open.maps.rodata_data.as_deref_mut().expect("rodata is mapped");
    rodata.arg_info = arg_info_table();
    for (nr, slot) in rodata.mem_arg.iter_mut().enumerate() {
        if let Some((i, at_exit)) = syscalls::descriptor_memory_arg(nr as u32) {
            *slot = (i as u8 + 1) | if at_exit { 8 } else { 0 };
        }
    }
    rodata.key_mode = key_mode_of(sink.builder.node_key_mode()).0;
    rodata.slots_log2 = slots_log2();
    open.maps.slots.set_max_entries(1 << rodata.slots_log2).map_err(|e| unavailable("sizing the task states", e))?;
    rodata.wake_bytes = ring as u64 / 2;
    let unwind = unwind_data(opts.callsites, argv);
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
    if std::env::var_os("SYSCLUSTER_BPF_DEBUG").is_some() {
        open.progs.on_enter.set_log_level(4);
    }
    // The calls a multi-call runs inside the kernel module (kmod/) reach no
    // syscall tracepoint: its own tracepoints carry them (KmodProbes).
    open.progs.on_mc_enter.set_autoattach(false);
    open.progs.on_mc_exit.set_autoattach(false);
    open.progs.on_task_exit.set_autoattach(false);
    open.progs.on_task_exit_6_1.set_autoattach(false);
    open.maps.events.set_max_entries(ring).map_err(|e| unavailable("sizing the ring buffer", e))?;
    let mut skel = open.load().map_err(|e| unavailable("loading the BPF programs", e))?;
    if let Some(u) = &unwind {
        u.fill(&skel.maps.unwind_rows)?;
    }
    skel.attach().map_err(|e| unavailable("attaching the BPF programs", e))?;
    // sched_process_exit has group_dead as its second argument since after
    // 6.1; a program reading it does not attach to 6.1's.
    match skel.progs.on_task_exit.attach() {
        Ok(link) => skel.links.on_task_exit = Some(link),
        Err(_) => {
            let link =
                skel.progs.on_task_exit_6_1.attach().map_err(|e| unavailable("attaching the BPF programs", e))?;
            skel.links.on_task_exit_6_1 = Some(link);
        }
    }

    let mut attach_kmod = || Ok(vec![skel.progs.on_mc_enter.attach()?, skel.progs.on_mc_exit.attach()?]);
    let mut kmod = KmodProbes::start(&mut attach_kmod)?;

    let bss: *mut types::bss = skel.maps.bss_data.as_deref_mut().expect("bss is mapped");
    // SAFETY: the mapping lives as long as `skel`; the kernel updates the
    // counters concurrently, hence the volatile accesses.
    let counters = unsafe {
        Counters { live: &mut (*bss).live_tasks, detached: &mut (*bss).live_detached, unadopted: &mut (*bss).unadopted }
    };
    let mut child = spawn_armed(argv, &skel.maps.children, counters)?;

    let status = {
        let mut consumer = Consumer { sink: &mut *sink, paths: Default::default(), known_modules: 0 };
        let mut rb = RingBufferBuilder::new();
        rb.add(&skel.maps.events, move |data| {
            consumer.record(data);
            0
        })
        .map_err(|e| RecordError::Backend(format!("opening the ring buffer: {e}")))?;
        let rb = rb.build().map_err(|e| RecordError::Backend(format!("opening the ring buffer: {e}")))?;
        child.release()?;
        let mut failed = None;
        let status = wait_all(&mut child, counters, opts.follow_detached, &mut || {
            // Records are submitted without a wakeup: poll sleeps the tick
            // unless the ring fills past half, then drain what is there. A
            // signal to the recorder interrupts the poll: nothing is lost,
            // the records wait in the ring for the next one.
            match rb.poll(TICK).and_then(|_| rb.consume()) {
                Err(e) if e.kind() != libbpf_rs::ErrorKind::Interrupted => {
                    failed.get_or_insert(e);
                }
                _ => {}
            }
            kmod.tick(&mut attach_kmod);
        })?;
        rb.consume().map_err(|e| RecordError::Backend(format!("reading the ring buffer: {e}")))?;
        if let Some(e) = failed {
            return Err(RecordError::Backend(format!("reading the ring buffer: {e}")));
        }
        status
    };
    kmod.report();
    // SAFETY: as above; every recorded task has ended.
    let lost = unsafe { std::ptr::read_volatile(&(*bss).lost) };
    report_losses(&lost, sink);
    Ok(status)
}

/// Turns ring buffer records into builder calls.
struct Consumer<'a> {
    sink: &'a mut Sink,
    /// Paths the program executed or opened: the names of the modules its
    /// code locations are in, for those the maps no longer show.
    paths: FxHashSet<Vec<u8>>,
    known_modules: usize,
}

impl Drop for Consumer<'_> {
    fn drop(&mut self) {
        let modules = &mut self.sink.modules;
        for p in &self.paths {
            if !modules.missing_paths() {
                break;
            }
            modules.learn_path(Path::new(std::ffi::OsStr::from_bytes(p)));
        }
    }
}

impl Consumer<'_> {
    fn record(&mut self, data: &[u8]) {
        let Some(r) = read_as::<types::ev_record>(data) else { return };
        let flags = r.flags as u32;
        let has = |f: rec_flag| flags & f.0 != 0;
        if r.kind as u32 == rec_kind::REC_EXIT.0 {
            self.sink.builder.thread_exit(r.tid);
            if has(rec_flag::RF_GROUP_DEAD) {
                self.sink.builder.process_exit(r.pid);
            }
            return;
        }
        if has(rec_flag::RF_GAP) {
            // Records of this thread were lost: no edge across the gap.
            self.sink.builder.thread_exit(r.tid);
        }
        let head = std::mem::size_of::<types::ev_record>();
        let path = match r.path_len as usize {
            0 => None,
            n => data.get(head..head + n - 1),
        };
        let returned = has(rec_flag::RF_RET);
        // The bytes of a socket address or descriptor pair come where a path would.
        let mem = syscalls::descriptor_memory_arg(r.nr).is_some();
        let callsite = has(rec_flag::RF_SITE).then(|| {
            let module = self.sink.modules.intern(dev_from_kernel(r.site.dev), r.site.ino);
            if self.sink.modules.len() > self.known_modules {
                // A new module: name it while its process still maps it.
                self.known_modules = self.sink.modules.len();
                self.sink.modules.learn_from_maps(r.pid);
            }
            CodeAddr { module, offset: r.site.off, site: (r.site.call_off != 0).then_some(r.site.call_off) }
        });
        if let Some(p) = path {
            if PATH_CALLS.contains(&&*syscalls::name_of(r.nr)) && self.paths.len() < 4096 {
                self.paths.insert(p.to_vec());
            }
        }
        let ev = SyscallEvent {
            pid: r.pid,
            tid: r.tid,
            nr: r.nr,
            args: r.args,
            ret: returned.then_some(r.ret),
            enter_ns: r.enter_ns,
            kernel_ns: returned.then(|| r.exit_ns.saturating_sub(r.enter_ns)),
            blocked_ns: returned.then_some(r.blocked_ns),
            callsite,
            path: path.filter(|_| !mem),
            addr: path.filter(|_| mem),
            unknown_args: 0,
        };
        self.sink.builder.event(&ev);
    }
}
