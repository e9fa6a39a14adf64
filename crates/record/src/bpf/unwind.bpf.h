/* Code locations in the kernel: the first frame outside libc, the dynamic
 * loader and the vDSO, found at a call's entry by stepping over their frames
 * with their call frame information (the tables of
 * callsite::unwind::skip_modules(), in `unwind_rows`), as
 * callsite::unwind::find_callsite does in user space.  Every frame's rule is
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

/* The mapping holding `addr`, from the thread's cache or the kernel. */
static __always_inline struct vma_entry *vma_of(struct vma_cache *c, __u64 addr)
{
	for (int i = 0; i < VMA_CACHE; i++)
		if (addr >= c->e[i].start && addr < c->e[i].end)
			return &c->e[i];
	struct vma_found f = {};
	if (bpf_find_vma(bpf_get_current_task_btf(), addr, vma_cb, &f, 0) || !f.end)
		return 0;
	struct vma_entry *e = &c->e[c->next & (VMA_CACHE - 1)];
	c->next++;
	e->start = f.start;
	e->end = f.end;
	e->delta = f.vdso ? -f.start : (f.pgoff << 12) - f.start;
	e->ino = f.ino;
	e->dev = f.dev;
	e->skip = -1;
	for (int i = 0; i < MAX_SKIP && i < n_skip; i++) {
		if (f.vdso ? skip_modules[i].vdso : (skip_modules[i].ino == f.ino && skip_modules[i].dev == f.dev && !skip_modules[i].vdso)) {
			e->skip = i;
			break;
		}
	}
	if (!f.vdso && !f.ino)
		e->skip = -2; /* anonymous memory: no file to name */
	return e;
}

/* The row of skip module m covering file offset `off`. */
static __always_inline struct unwind_row *row_of(__u32 m, __u64 off)
{
	if (m >= MAX_SKIP)
		return 0;
	__u32 lo = skip_modules[m].first, n = skip_modules[m].count;
	if (!n)
		return 0;
	/* The last row with pc <= off: lo + (number of rows with pc <= off) - 1. */
	__u32 base = lo;
	for (int i = 0; i < ROW_SEARCH && n > 1; i++) {
		__u32 half = n / 2;
		__u32 mid = base + half;
		struct unwind_row *r = bpf_map_lookup_elem(&unwind_rows, &mid);
		if (!r)
			return 0;
		if (r->pc <= off)
			base = mid;
		n -= half;
	}
	struct unwind_row *r = bpf_map_lookup_elem(&unwind_rows, &base);
	if (!r || r->pc > off)
		return 0;
	return r;
}

/* Fills *out with the first frame outside the skipped modules; 0 when
 * found. */
static __noinline int find_callsite(struct vma_cache *c, __u64 ip, __u64 sp, __u64 bp, struct site *out)
{
	if (!c || !out)
		return -1;
	if (c->gen != maps_gen) {
		for (int i = 0; i < VMA_CACHE; i++)
			c->e[i].end = 0;
		c->have_row0 = 0;
		c->have_ra = 0;
		c->gen = maps_gen;
	}
	for (int i = 0; i < MAX_FRAMES; i++) {
		struct unwind_row row;
		if (i == 0 && c->have_row0 && ip == c->ip0) {
			row = c->row0;
		} else {
			struct vma_entry *v = vma_of(c, ip - 1);
			if (!v || v->skip == -2)
				return -1;
			__u64 off = ip + v->delta;
			if (v->skip < 0) {
				out->dev = v->dev;
				out->ino = v->ino;
				out->off = off;
				if (i > 0) {
					c->ra = ip;
					c->ra_site = *out;
					c->have_ra = 1;
				}
				return 0;
			}
			struct unwind_row *r = row_of(v->skip, off - 1);
			if (!r)
				return -1;
			row = *r;
			if (i == 0) {
				c->ip0 = ip;
				c->row0 = row;
				c->have_row0 = 1;
			}
		}
		__u64 cfa;
		if (row.kind == CFA_RSP)
			cfa = sp + (__s64)row.cfa_off;
		else if (row.kind == CFA_RBP)
			cfa = bp + (__s64)row.cfa_off;
		else
			return -1;
		__u64 ra;
		if (bpf_probe_read_user(&ra, sizeof(ra), (void *)(cfa - 8)))
			return -1;
		if (c->have_ra && ra == c->ra) {
			*out = c->ra_site;
			return 0;
		}
		if (row.has_rbp && bpf_probe_read_user(&bp, sizeof(bp), (void *)(cfa + (__s64)row.rbp_off)))
			return -1;
		ip = ra;
		sp = cfa;
	}
	return -1;
}

#endif
