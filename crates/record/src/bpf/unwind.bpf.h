/* Code locations in the kernel: the first frame outside libc, the dynamic
 * loader, the vDSO and the program's language runtime, found at a call's
 * entry by stepping over their frames with their call frame information (the
 * tables of callsite::runtime::skip_modules_for(), in `unwind_rows`; the
 * program's own code is CFA_OWN there), as callsite::unwind::find_callsite
 * does in user space.  Every frame's rule is
 * looked up at ip - 1 (inside the call instruction).
 *
 * Mappings come from bpf_find_vma, remembered per thread (VMA_CACHE) until
 * a recorded task changes its mappings (maps_gen). */
#ifndef UNWIND_BPF_H
#define UNWIND_BPF_H

const volatile __u8 capture_sites = 0;
const volatile __u32 n_skip = 0;
const volatile struct skip_module skip_modules[MAX_SKIP] = {};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1); /* resized before load */
	__type(key, __u32);
	__type(value, struct unwind_row);
} unwind_rows SEC(".maps");

/* Bumped around every call that may unmap or replace code. */
__u64 maps_gen = 0;

static __always_inline void vma_cache_init(struct vma_cache *c)
{
	c->gen = maps_gen - 1;
}

static __always_inline int changes_mappings(long nr)
{
	switch (nr) {
	case 9:   /* mmap (MAP_FIXED replaces) */
	case 11:  /* munmap */
	case 25:  /* mremap */
	case 30:  /* shmat (SHM_REMAP) */
	case 67:  /* shmdt */
	case 216: /* remap_file_pages */
	case __NR_execve:
	case __NR_execveat:
		return 1;
	}
	return 0;
}

struct vma_found {
	__u64 start;
	__u64 end;
	__u64 pgoff;
	__u64 ino;
	__u32 dev;
	__u32 vdso;
};

static long vma_cb(struct task_struct *task, struct vm_area_struct *vma, void *ctx)
{
	struct vma_found *f = ctx;
	f->start = vma->vm_start;
	f->end = vma->vm_end;
	f->pgoff = vma->vm_pgoff;
	struct file *file = vma->vm_file;
	if (file) {
		f->ino = file->f_inode->i_ino;
		f->dev = file->f_inode->i_sb->s_dev;
	} else {
		f->vdso = vma->vm_start == (__u64)vma->vm_mm->context.vdso;
	}
	return 0;
}

/* The mapping holding `addr` (copied to *out), from the cache of the task
 * whose pt_regs are at `regs`, or from the kernel.  Global functions, here
 * and below, are verified once on their own, whatever their callers. */
__noinline int unwind_vma(__u64 regs, __u64 addr, struct vma_entry *out)
{
	TASK_STATE *st = lookup_state(regs);
	if (!st || !out)
		return -1;
	struct vma_cache *c = &st->vmas;
	for (int i = 0; i < VMA_CACHE; i++) {
		if (addr >= c->e[i].start && addr < c->e[i].end) {
			*out = c->e[i];
			return 0;
		}
	}
	struct vma_found f = {};
	if (bpf_find_vma(bpf_get_current_task_btf(), addr, vma_cb, &f, 0) || !f.end)
		return -1;
	struct vma_entry e = {
		.start = f.start,
		.end = f.end,
		.delta = f.vdso ? -f.start : (f.pgoff << 12) - f.start,
		.ino = f.ino,
		.dev = f.dev,
		.skip = -1,
	};
	for (int i = 0; i < MAX_SKIP; i++) {
		if (i >= n_skip)
			break;
		if (f.vdso ? skip_modules[i].vdso
			   : (skip_modules[i].ino == f.ino && skip_modules[i].dev == f.dev && !skip_modules[i].vdso)) {
			e.skip = i;
			break;
		}
	}
	if (!f.vdso && !f.ino)
		e.skip = -2; /* anonymous memory: no file to name */
	c->e[c->next & (VMA_CACHE - 1)] = e;
	c->next++;
	*out = e;
	return 0;
}

/* The row of skip module m covering file offset `off` (copied to *out). */
__noinline int unwind_row_at(__u32 m, __u64 off, struct unwind_row *out)
{
	if (m >= MAX_SKIP || !out)
		return -1;
	__u32 base = skip_modules[m].first, n = skip_modules[m].count;
	/* The last row with pc <= off. */
	for (int i = 0; i < ROW_SEARCH; i++) {
		if (n <= 1)
			break;
		__u32 half = n / 2;
		__u32 mid = base + half;
		struct unwind_row *r = bpf_map_lookup_elem(&unwind_rows, &mid);
		if (!r)
			return -1;
		if (r->pc <= off)
			base = mid;
		n -= half;
	}
	struct unwind_row *r = bpf_map_lookup_elem(&unwind_rows, &base);
	if (!n || !r || r->pc > off)
		return -1;
	*out = *r;
	return 0;
}

/* An unwind in progress (bpf_loop's context: the loop body is verified
 * once, where an unrolled loop of frames and searches took the verifier
 * most of a second). */
struct unwind_ctx {
	__u64 regs; /* the task's pt_regs address, which finds its state */
	__u64 ip;
	__u64 sp;
	__u64 bp;
	struct site out;
	/* The first frame in the program's language runtime: the call site
	 * when the walk cannot get past the runtime. */
	struct site fallback;
	int have_fallback;
	int result; /* 0: found; -1: failed; 1: going on; 2: no caller outside */
};

/* One frame: the first outside the skipped modules ends the walk; a frame
 * inside them is stepped over. */
static long unwind_step(__u32 i, void *data)
{
	struct unwind_ctx *u = data;
	TASK_STATE *st = lookup_state(u->regs);
	if (!st)
		goto fail;
	struct vma_cache *c = &st->vmas;
	__u64 ip = u->ip;
	struct unwind_row row;
	if (i == 0 && c->have_row0 && ip == c->ip0) {
		row = c->row0;
	} else {
		struct vma_entry v;
		if (unwind_vma(u->regs, ip - 1, &v) || v.skip == -2)
			goto fail;
		__u64 off = ip + v.delta;
		if (v.skip < 0) {
			u->out.dev = v.dev;
			u->out.ino = v.ino;
			u->out.off = off;
			u->result = 0;
			if (i > 0) {
				c->ra = ip;
				c->ra_site = u->out;
				c->have_ra = 1;
			}
			return 1;
		}
		if (v.skip < MAX_SKIP && skip_modules[v.skip].runtime && !u->have_fallback) {
			u->fallback.dev = v.dev;
			u->fallback.ino = v.ino;
			u->fallback.off = off;
			u->have_fallback = 1;
		}
		if (unwind_row_at(v.skip, off - 1, &row))
			goto fail;
		if (row.kind == CFA_OWN) {
			u->out.dev = v.dev;
			u->out.ino = v.ino;
			u->out.off = off;
			u->result = 0;
			return 1;
		}
		/* unwind_vma may have refilled the cache: find the state again. */
		st = lookup_state(u->regs);
		if (!st)
			goto fail;
		c = &st->vmas;
		/* Not in the program's runtime: its first frame is the fallback,
		 * which this shortcut would skip. */
		if (i == 0 && !u->have_fallback) {
			c->ip0 = ip;
			c->row0 = row;
			c->have_row0 = 1;
		}
	}
	__u64 cfa;
	if (row.kind == CFA_RSP) {
		cfa = u->sp + (__s64)row.cfa_off;
	} else if (row.kind == CFA_RBP) {
		cfa = u->bp + (__s64)row.cfa_off;
	} else if (row.kind == CFA_OUTERMOST) {
		u->result = 2; /* libc or the loader called on its own */
		return 1;
	} else {
		goto fail;
	}
	__u64 ra;
	if (bpf_probe_read_user(&ra, sizeof(ra), (void *)(cfa - 8)))
		goto fail;
	if (c->have_ra && ra == c->ra) {
		u->out = c->ra_site;
		u->result = 0;
		return 1;
	}
	if (row.has_rbp && bpf_probe_read_user(&u->bp, sizeof(u->bp), (void *)(cfa + (__s64)row.rbp_off)))
		goto fail;
	u->ip = ra;
	u->sp = cfa;
	return 0;
fail:
	u->result = -1;
	return 1;
}

/* Fills *out with the first frame outside the skipped modules, for the
 * task whose state `c` is and whose pt_regs are at `regs`: 0 when found, 1
 * when the stack ends inside them (the loader at startup, libc's own calls:
 * there is no such frame, and nothing was lost), -1 when the unwind failed. */
static __always_inline int find_callsite(struct vma_cache *c, __u64 regs, struct site *out)
{
	if (c->gen != maps_gen) {
		for (int i = 0; i < VMA_CACHE; i++)
			c->e[i].end = 0;
		c->have_row0 = 0;
		c->have_ra = 0;
		c->gen = maps_gen;
	}
	struct pt_regs *r = regs_at(regs);
	struct unwind_ctx u = { .regs = regs, .ip = r->ip, .sp = r->sp, .bp = r->bp, .result = 1 };
	bpf_loop(MAX_FRAMES, unwind_step, &u, 0);
	/* The walk's frame has the runtime's first frame as its site when both
	 * are in the program's file; the runtime's frame alone when the walk
	 * failed or left the file past it (callsite::unwind::Callsite::of). */
	if (u.have_fallback && (u.result != 0 || u.out.dev != u.fallback.dev || u.out.ino != u.fallback.ino)) {
		*out = u.fallback;
		out->call_off = 0;
		return 0;
	}
	if (u.result == 2)
		return 1;
	if (u.result)
		return -1;
	*out = u.out;
	out->call_off = u.have_fallback && u.fallback.off != u.out.off ? u.fallback.off : 0;
	return 0;
}

#endif
