/* Types and constants shared by the BPF programs and their Rust loader (which
 * sees them through the skeleton's generated types, never hand-copied). */
#ifndef SYSCLUSTER_H
#define SYSCLUSTER_H

/* Constants are enums, so that they reach the Rust side through BTF. */

enum limits {
	NR_SLOTS = 512,    /* size of the per-syscall tables; numbers are below */
	PATH_CAP = 256,    /* bytes of a path argument captured, NUL included */
	CACHE_SLOTS = 64,  /* aggregate mode: entries of a thread's edge cache */
	CACHE_SHIFT = 58,  /* 64 - log2(CACHE_SLOTS) */
	TASK_SLOTS_LOG2 = 12, /* states found without a helper: 1 << this */
	TASK_SLOTS = 4096,
	TIME_FIRST = 8,    /* aggregate mode: time the first calls of each edge entry, */
	TIME_MASK = 15,    /* then one call in TIME_MASK + 1, at random */
	MAX_SKIP = 4,      /* code locations: modules whose frames are skipped */
	MAX_FRAMES = 16,   /* frames stepped through inside them at most */
	VMA_CACHE = 4,     /* mappings each thread remembers */
	ROW_SEARCH = 20,   /* binary search steps: up to 2^20 rows per module */
};

/* How an unwind row finds the canonical frame address (CFA); the return
 * address is at CFA - 8. */
enum cfa_kind {
	CFA_UNKNOWN = 0,   /* no rule: stop */
	CFA_RSP = 1,       /* CFA = rsp + cfa_off */
	CFA_RBP = 2,       /* CFA = rbp + cfa_off */
	CFA_OUTERMOST = 3, /* the stack ends here */
	CFA_OWN = 4,       /* the program's own code, outside its language
			      runtime: the call site */
};

/* arg_info[nr]: bits 0-2 = index + 1 of the argument that keys the node
 * (syscalls::key_fd_arg), bit 3 = it is a directory fd (not a key when it
 * is AT_FDCWD), bits 4-7 = path argument index + 1; 0 = none. */
enum arg_info_bits {
	ARG_FD_MASK = 0x7,
	ARG_FD_DIRFD = 0x8,
	ARG_PATH_SHIFT = 4,
};

enum key_mode {
	KEY_NAME = 0,
	KEY_FD = 1,
	KEY_CALLSITE = 2,
};

/* Aggregate mode: a node key is a u64.  Bits 0-15: the syscall number
 * (0xffff for numbers that do not fit); KEY_HAS_FD: bits 32-63 hold the fd
 * argument's low 32 bits, KEY_FD_HIGH: its high 32 bits were all ones (else
 * they were taken as zeros: fd parameters are ints, or hold one);
 * KEY_HAS_SITE: bits 32-63 hold a callsite id.  A
 * thread's first call is an edge from the key with all bits set (no call
 * has it: 0xffff has no fd argument). */
enum key_bits {
	KEY_NR_MASK = 0xffff,
	KEY_HAS_FD = 0x10000,
	KEY_HAS_SITE = 0x20000,
	KEY_FD_HIGH = 0x40000,
	KEY_ARG_SHIFT = 32,
};
#define NODE_START 0xffffffffffffffffULL

enum phase {
	PHASE_ARMED = 1,    /* the command at its gate: counting starts at execve */
	PHASE_COUNTING = 2,
	/* Flag of a `children` entry: the task is detached (see task_common). */
	PHASE_DETACHED = 0x80,
};

/* Indexes of the lost[] counters. */
enum loss {
	LOSS_RINGBUF = 0,
	LOSS_MAP_FULL = 1,
	LOSS_UNTRACKED = 2,
	LOSS_CALLSITE = 3,
	LOSS_N = 4,
};

/* Events mode: record kinds and flags. */
enum rec_kind {
	REC_CALL = 1,
	REC_EXIT = 2,
};

enum rec_flag {
	RF_RET = 1,         /* ret is valid: the call returned */
	RF_GAP = 2,         /* records of this thread were lost just before */
	RF_SITE = 4,        /* site is valid */
	RF_GROUP_DEAD = 8,  /* REC_EXIT: the last thread of its process */
	RF_PATH_TRUNC = 16, /* the path was longer than PATH_CAP - 1 */
};

struct edge_key {
	__u64 from;
	__u64 to;
};

struct edge_val {
	__u64 count;
	__u64 errors;
	__u64 timed;
	__u64 kernel_ns;
	__u64 blocked_ns; /* of the timed calls: their time off the CPU */
};

/* A code location: the file (device in the kernel's encoding, inode) and the
 * offset of the address in it; call_off, when not 0, the offset in the same
 * file of the call into libc the location was found past (the first frame
 * in the program's language runtime: CodeAddr::site). */
struct site {
	__u32 dev;
	__u32 _pad;
	__u64 ino;
	__u64 off;
	__u64 call_off;
};

/* One call (REC_CALL) or one thread exit (REC_EXIT); a REC_CALL with a path
 * is followed by PATH_CAP bytes, path_len of them used (with the NUL). */
struct ev_record {
	__u8 kind;
	__u8 flags;
	__u16 path_len;
	__u32 nr;
	__u32 pid;
	__u32 tid;
	__s64 ret;
	__u64 args[6];
	__u64 enter_ns;
	__u64 exit_ns;
	__u64 blocked_ns; /* of exit_ns - enter_ns, the time off the CPU */
	struct site site;
};

/* One row of a skipped module's unwind table (the rows of all modules are
 * in one array, each module's sorted by pc): from file offset `pc` up to the
 * next row's, the CFA is found by `kind`, and the caller's rbp was saved at
 * CFA + rbp_off if has_rbp. */
struct unwind_row {
	__u32 pc;
	__s32 cfa_off;
	__s32 rbp_off;
	__u8 kind;
	__u8 has_rbp;
	__u8 _pad[2];
};

/* A module whose frames are skipped: libc, the loader, the vDSO (no file:
 * vdso = 1), the program's language runtime (runtime = 1: the program's
 * file, whose rows outside the runtime are CFA_OWN); its rows are
 * unwind_rows[first .. first + count). */
struct skip_module {
	__u64 ino;
	__u32 dev; /* the kernel's encoding */
	__u32 first;
	__u32 count;
	__u32 vdso;
	__u32 runtime;
	__u32 _pad;
};

/* A mapping a thread's unwinds found: file offset = address + delta. */
struct vma_entry {
	__u64 start;
	__u64 end;
	__u64 delta;
	__u64 ino;
	__u32 dev;
	__s32 skip; /* index in skip_modules, or -1 */
};

/* Each thread's cache of mappings, valid while `gen` is maps_gen, and of
 * its last unwind: the row of its innermost frame (a loop calls through the
 * same libc code) and where its last return address outside the skipped
 * modules is. */
struct vma_cache {
	__u64 gen;
	__u32 next;
	__u8 have_row0;
	__u8 have_ra;
	__u8 _pad[2];
	struct vma_entry e[VMA_CACHE];
	__u64 ip0;
	struct unwind_row row0;
	__u64 ra;
	struct site ra_site;
};

/* The start of every task's state (task storage value). */
struct task_common {
	__u64 owner;   /* the pt_regs address of the task holding the state; 0: free */
	__u8 phase;
	__u8 pending;  /* a call entered and has not returned */
	__u8 gap;      /* events mode: records of this thread were lost */
	__u8 spilled;  /* the state is in `spill`, not in `slots` */
	__u8 timed;    /* aggregate mode: the call in flight is being timed */
	__u8 detached; /* its process left the command's session (setsid), or descends from one that did */
	__u8 _pad[2];
	__u64 off_at;  /* switched out in the call in flight at this time; 0: on the CPU */
	__u64 off_ns;  /* time off the CPU in the call in flight */
};

/* Aggregate mode: one entry of a thread's edge cache. */
struct edge_slot {
	__u64 from;
	__u64 to;
	__u64 count;
	__u64 errors;
	__u64 timed;     /* calls whose time in the kernel was measured */
	__u64 kernel_ns; /* their total time */
	__u64 blocked_ns; /* the part of it off the CPU */
};

/* Aggregate mode: a recorded thread's state. */
struct agg_task {
	struct task_common c;
	__u32 cur; /* cache slot of the call in flight */
	__u32 rng; /* xorshift state: which calls are timed */
	__u64 prev;
	__u64 enter_ns;
	struct vma_cache vmas;
	struct site last_site; /* callsite keys: the last location and its id */
	__u32 last_site_id;
	__u32 _pad;
	struct edge_slot cache[CACHE_SLOTS];
};

/* Aggregate mode with callsite keys: a code location's id. */
struct site_id {
	__u32 id;
};

/* Events mode: a recorded thread's state, the call in flight. */
struct ev_task {
	struct task_common c;
	__u32 nr;
	__u16 path_len;
	__u16 _pad;
	__u32 _pad2;
	__u64 args[6];
	__u64 enter_ns;
	struct site site;
	__u8 has_site;
	__u8 _pad3[3];
	__u32 emitted;
	struct vma_cache vmas;
	char path[PATH_CAP];
};

/* Never used: it puts the enums and the record type into the object's BTF,
 * so that the Rust skeleton generates them. */
struct abi {
	enum limits limits;
	enum arg_info_bits arg_info_bits;
	enum key_mode key_mode;
	enum key_bits key_bits;
	enum phase phase;
	enum loss loss;
	enum rec_kind rec_kind;
	enum rec_flag rec_flag;
	enum cfa_kind cfa_kind;
	struct ev_record ev_record;
};

#endif
