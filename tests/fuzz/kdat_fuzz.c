// SPDX-License-Identifier: GPL-2.0
/*
 * kdat_fuzz: a fuzzer for /dev/kdat (include/uapi/linux/kdat.h).
 *
 * A supervisor process forks -p worker processes; each opens /dev/kdat and
 * runs -j threads that pick random operations from the whole ioctl set,
 * the ring mappings and process-level events (fork + kill -9 of a child
 * using the file, the file closed and reopened under running threads), on
 * handles drawn from a per-process table of the handles it has seen (and
 * sometimes stale, random, foreign or wrong-type ones), with arguments
 * mutated (boundary values, random bits, the size field short, long,
 * huge). The supervisor kills workers with SIGKILL at random moments and
 * starts new ones. At the end the kernel must still answer (open, IA open,
 * close) and every process must have been reaped: then "ok", else
 * "not ok" (TAP, for tests/run-all).
 *
 * Reproducible: every random choice comes from per-thread generators
 * seeded from -s SEED and the process slot/generation and thread index.
 * The op stream of every thread replays with the same seed (the kernel's
 * answers, the scheduling and, with kcov, the corpus may differ).
 *
 * Coverage guidance, when /sys/kernel/debug/kcov exists (CONFIG_KCOV, as
 * root): each thread traces the kernel PCs of its own syscalls; PCs inside
 * kdat.ko's text go into a global set shared by all workers; a thread
 * whose last ops (an op is its kind and the seed its arguments are drawn
 * from) found new PCs stores them in a shared corpus, which threads later
 * replay with mutations (kinds, seeds, insertion, removal, splicing).
 * KDAT_FUZZ_PCS=file writes the distinct PCs there at the end.
 *
 *   kdat_fuzz [-s SEED] [-n OPS] [-t SECONDS] [-j THREADS] [-p PROCS]
 *             [-o [-]OP,...] [-q]
 *
 * Environment: KDAT_FUZZ_IP (the port's IPv4 address for connects; else
 * KDAT_TEST_IP; else 192.0.2.1), KDAT_TEST_DEV / KDAT_TEST_PORT (the port
 * to use; else the first listed), KDAT_FUZZ_PCS, KDAT_FUZZ_DEV (another
 * device path, to test the fuzzer itself, e.g. /dev/null).
 *
 * Exit: 0 pass, 1 fail, 4 skipped (no /dev/kdat).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>

#include <linux/kdat.h>

#include "../lib/slow_fuse.h"

#define KSFT_PASS 0
#define KSFT_FAIL 1
#define KSFT_SKIP 4

#define PAGE 4096UL
#define END(s, m) (offsetof(s, m) + sizeof(((s *)0)->m))
#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define MIN(a, b) ((a) < (b) ? (a) : (b))
#define MAX(a, b) ((a) > (b) ? (a) : (b))

/* kcov (include/uapi/linux/kcov.h), defined here to need no header. */
#define KCOV_INIT_TRACE _IOR('c', 1, unsigned long)
#define KCOV_ENABLE _IO('c', 100)
#define KCOV_DISABLE _IO('c', 101)
#define KCOV_TRACE_PC 0
#define KCOV_PATH "/sys/kernel/debug/kcov"
#define COVER_WORDS (64 * 1024)

/* ---- random numbers ------------------------------------------------- */

struct rng {
	uint64_t s;
};

static uint64_t mix64(uint64_t z)
{
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static uint64_t rnd(struct rng *r)
{
	r->s += 0x9e3779b97f4a7c15ULL;
	return mix64(r->s);
}

static uint32_t rn(struct rng *r, uint64_t n)
{
	return n ? (uint32_t)(rnd(r) % n) : 0;
}

static bool pct(struct rng *r, unsigned int p)
{
	return rn(r, 100) < p;
}

/* A value from the edges: 0, 1, powers of two and their neighbours, ~0. */
static uint64_t rboundary(struct rng *r)
{
	static const uint64_t v[] = {
		0, 1, 2, 3, 4, 7, 8, 15, 16, 31, 32, 33, 56, 57, 63, 64, 65,
		127, 128, 255, 256, 4095, 4096, 4097, 32767, 32768, 65535,
		65536, 65537, 0x7fffffff, 0x80000000, 0xfffffffe, 0xffffffff,
		0x100000000ULL, 0x7fffffffffffffffULL, 0x8000000000000000ULL,
		~0ULL - 1, ~0ULL,
	};
	uint64_t x;

	switch (rn(r, 5)) {
	case 0:
	case 1:
		return v[rn(r, ARRAY_SIZE(v))];
	case 2:
		x = 1ULL << rn(r, 64);
		return x + rn(r, 3) - 1;
	case 3:
		return rn(r, 1024);
	default:
		return rnd(r);
	}
}

/* ---- shared state (all processes) ----------------------------------- */

#define HIST 8
#define CORPUS_MAX 512
#define PCSET_SIZE (1U << 17)
#define NBADMSG 8

struct opdesc {
	uint32_t kind;
	uint32_t pad;
	uint64_t seed;
};

struct centry {
	uint32_t n;
	uint32_t pad;
	struct opdesc op[HIST];
};

enum op_kind {
#define X(name, w, f) OP_##name,
#define OPLIST							\
	X(QUERY, 15, 0) X(DEVICE_LIST, 15, 0) X(IA_OPEN, 35, 0)	\
	X(IA_QUERY, 20, 0) X(DESTROY, 50, 0)			\
	X(DESTROY_IA_ALL, 8, 0) X(PZ_CREATE, 35, 0)		\
	X(LMR_CREATE, 40, 0) X(RMR_CREATE, 15, 0)		\
	X(RMR_BIND, 30, 0) X(EVD_CREATE, 50, 0)			\
	X(EVD_WAIT, 35, 0) X(EVD_DEQUEUE, 70, 0)			\
	X(EVD_MODIFY, 30, 0) X(EVD_MODIFY_CNO, 20, 0)		\
	X(EVD_POST_SE, 30, 0) X(CNO_CREATE, 15, 0)		\
	X(CNO_WAIT, 20, 0) X(EP_CREATE, 50, 0) X(EP_QUERY, 25, 0)	\
	X(EP_CONNECT, 40, 0) X(EP_DISCONNECT, 25, 0)		\
	X(EP_RESET, 15, 0) X(EP_MODIFY, 25, 0)			\
	X(PSP_CREATE, 25, 0) X(RSP_CREATE, 8, 0)			\
	X(CR_QUERY, 15, 0) X(CR_ACCEPT, 35, 0) X(CR_REJECT, 15, 0)	\
	X(POST, 90, 0) X(SRQ_CREATE, 15, 0) X(SRQ_SET_LW, 15, 0)	\
	X(SRQ_RESIZE, 15, 0) X(RING_CREATE, 40, 0)		\
	X(RING_SUBMIT, 70, 0) X(RING_REAP, 35, 0)		\
	X(RING_SCRIBBLE, 15, 0) X(RING_WAKE, 15, 0)		\
	X(POLLER_SET, 8, 0)					\
	X(RING_MUNMAP, 12, 0) X(BUF_REMAP, 8, 0)			\
	X(BAD_IOCTL, 10, 0) X(FOREIGN_FILE, 15, 0)		\
	X(CONNECT_PAIR, 12, 0) X(FORK_CHILD, 4, 1)		\
	X(REOPEN, 2, 1) X(AH_QUERY, 15, 0) X(CNO_AGENT, 15, 0)	\
	X(SLOW_MAP, 8, 0) X(UD_FLOOD, 4, 0) X(SRQ_CYCLE, 6, 0)
	OPLIST
#undef X
	NOPS
};

struct shared {
	int stop;
	int pad;
	uint64_t ops;
	uint64_t budget;	/* 0: none */
	uint64_t deadline_ns;
	uint64_t err[256];	/* [0]: success, [e]: errno e */
	uint64_t opn[NOPS];
	uint64_t ring_faults, children, child_kills, child_bad, reopens;
	uint64_t kcov_threads, corpus_replays, corpus_adds;
	uint64_t mmaps, mmap_fail;
	/* Race stretching (issue 44): slow pages. */
	uint64_t slow_maps;
	uint64_t pc_lo, pc_hi;
	uint64_t pcs_outside;	/* PCs kcov gave outside [pc_lo, pc_hi) */
	uint32_t npcs;
	uint32_t nbad;
	char bad[NBADMSG][160];
	uint64_t corpus_next;
	uint32_t corpus_n;
	struct centry corpus[CORPUS_MAX];
	uint64_t pcs[PCSET_SIZE];
};

static struct shared *S;
static const char *g_dev = KDAT_DEVICE_PATH;	/* KDAT_FUZZ_DEV: tests */
static uint64_t g_seed;
static int g_kcov;		/* kcov may be used */

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static void add(uint64_t *p, uint64_t n)
{
	__atomic_fetch_add(p, n, __ATOMIC_RELAXED);
}

static bool stopping(void)
{
	return __atomic_load_n(&S->stop, __ATOMIC_RELAXED) ||
	       now_ns() >= S->deadline_ns;
}

/* Something that makes the run fail; kept for the report. */
static void bad(const char *fmt, ...)
{
	uint32_t i = __atomic_fetch_add(&S->nbad, 1, __ATOMIC_RELAXED);
	va_list ap;

	if (i >= NBADMSG)
		return;
	va_start(ap, fmt);
	vsnprintf(S->bad[i], sizeof(S->bad[i]), fmt, ap);
	va_end(ap);
}

static bool pc_insert(uint64_t pc)
{
	uint32_t h = (uint32_t)mix64(pc), i;

	for (i = 0; i < 64; i++) {
		uint64_t *slot = &S->pcs[(h + i) & (PCSET_SIZE - 1)];
		uint64_t cur = __atomic_load_n(slot, __ATOMIC_RELAXED);

		if (cur == pc)
			return false;
		if (cur)
			continue;
		if (__atomic_compare_exchange_n(slot, &cur, pc, false,
						__ATOMIC_RELAXED,
						__ATOMIC_RELAXED)) {
			__atomic_fetch_add(&S->npcs, 1, __ATOMIC_RELAXED);
			return true;
		}
		if (cur == pc)
			return false;
	}
	return false;
}

/* ---- per-process state (a worker) ---------------------------------- */

enum htype {
	H_NONE, H_IA, H_PZ, H_LMR, H_RMR, H_EVD, H_CNO, H_EP, H_PSP, H_CR,
	H_SRQ, H_AH, H_NT
};

/*
 * One handle seen. @ia: the IA it hangs off; @aux: PZ for LMR/RMR/EP/SRQ,
 * EVD flags for an EVD, the connection qualifier for a PSP, the EP for a
 * UD AH; @ctx/@rctx:
 * an LMR's contexts (an RMR's bound rmr_context in @rctx); @file: 1 or 2,
 * which of the process's two open files it belongs to.
 */
struct hent {
	uint32_t h, ia, aux, ctx, rctx;
	uint8_t type, alive, file, pad;
	uint64_t addr, len;
};

#define HMAX 768
static const unsigned int h_cap[H_NT] = {
	[H_IA] = 6, [H_PZ] = 12, [H_LMR] = 32, [H_RMR] = 12, [H_EVD] = 40,
	[H_CNO] = 10, [H_EP] = 32, [H_PSP] = 12, [H_CR] = 1000, [H_SRQ] = 8,
	[H_AH] = 64,
};

static pthread_mutex_t h_lock = PTHREAD_MUTEX_INITIALIZER;
static struct hent h_tab[HMAX];
static unsigned int h_n, h_live[H_NT];

static int g_fd = -1, g_fd2 = -1;
static char g_port_name[KDAT_NAME_MAX];
static uint32_t g_port_num;
static bool g_have_port;
static uint8_t g_ip4[4] = { 192, 0, 2, 1 };
static uint32_t g_qual_base;

/* Memory LMRs are made on: mmap'd slots (remapped at times), malloc'd. */
#define NBUF 8
#define BUFSZ (256 * 1024UL)
#define NMBLK 4
#define MBLKSZ (64 * 1024UL)
static uint8_t *g_bufs;
static int g_buf_mapped[NBUF];
static uint8_t *g_mblk[NMBLK];
/* Reserved, never mapped: where "unmapped" pointers point. */
#define HOLESZ (1024 * 1024UL)
static uint8_t *g_hole;

/*
 * Slow memory (root, FUSE): a file whose reads a releaser process answers
 * late, 0 to 30 ms (now and then 300), mapped over buffer slots by
 * SLOW_MAP: every pin and copy of it waits in a fault for that long,
 * which stretches the windows between a check and a use.
 */
static struct slow_fuse g_sf;
static bool g_slow;
static int g_slow_fd = -1;		/* per worker */
static pid_t g_releaser;

/* Ring mappings. */
struct rmap {
	pthread_mutex_t lock;
	int valid;
	int prot;
	uint8_t *m;
	size_t size;
	uint32_t handle, kind, pz, ia, entries, esz;
	bool ext;		/* entries are struct kdat_sqe_ext */
	struct kdat_ring_offsets off;
};

#define NRMAP 24
static struct rmap g_rm[NRMAP];

/* ---- per-thread state ----------------------------------------------- */

#define ARG_AREA (64 * 1024UL)
#define OUT_AREA (16 * 1024UL)

struct thr {
	int idx;
	struct rng rng;		/* the thread's stream: ops and their seeds */
	struct rng *r;		/* the current op's arguments */
	unsigned int mutp;	/* mutation probability of the op, % */
	bool nomut, in_child;
	int file;		/* 1: g_fd, 2: g_fd2 */
	uint8_t *arg, *arg_guard, *out, *out_guard;
	int kcov_fd;
	uint64_t *cover;
	timer_t tmr;
	bool has_tmr, armed;
	struct opdesc hist[HIST];
	unsigned int hn, hpos;
	sigjmp_buf jb;
	volatile int in_ring;
	uint8_t priv[256];
};

static __thread struct thr *T;

static bool mut(void)
{
	return !T->nomut && T->mutp && rn(T->r, 100) < T->mutp;
}

static uint32_t M32(uint32_t v)
{
	return mut() ? (uint32_t)rboundary(T->r) : v;
}

static uint64_t M64(uint64_t v)
{
	return mut() ? rboundary(T->r) : v;
}

static int cur_fd(void)
{
	return T->file == 2 ? g_fd2 : g_fd;
}

/* ---- the handle table ----------------------------------------------- */

static void h_add(int type, uint32_t h, uint32_t ia, uint32_t aux,
		  uint32_t ctx, uint32_t rctx, uint64_t addr, uint64_t len)
{
	struct hent *e = NULL;
	unsigned int i, start;

	if (!h)
		return;
	pthread_mutex_lock(&h_lock);
	if (h_n < HMAX) {
		e = &h_tab[h_n++];
	} else {
		start = rn(T->r, HMAX);
		for (i = 0; i < HMAX && !e; i++)
			if (!h_tab[(start + i) % HMAX].alive)
				e = &h_tab[(start + i) % HMAX];
		if (!e) {
			e = &h_tab[start];
			h_live[e->type]--;
		}
	}
	*e = (struct hent){ .h = h, .ia = ia, .aux = aux, .ctx = ctx,
			    .rctx = rctx, .type = (uint8_t)type, .alive = 1,
			    .file = (uint8_t)T->file, .addr = addr,
			    .len = len };
	h_live[type]++;
	pthread_mutex_unlock(&h_lock);
}

static void h_kill_if(bool (*match)(const struct hent *, uint32_t),
		      uint32_t arg)
{
	unsigned int i;

	pthread_mutex_lock(&h_lock);
	for (i = 0; i < h_n; i++) {
		struct hent *e = &h_tab[i];

		if (e->alive && match(e, arg)) {
			e->alive = 0;
			h_live[e->type]--;
		}
	}
	pthread_mutex_unlock(&h_lock);
}

static bool m_handle(const struct hent *e, uint32_t h)
{
	return e->h == h && e->file == T->file;
}

static bool m_ia(const struct hent *e, uint32_t ia)
{
	return e->ia == ia && e->file == T->file;
}

static bool m_file(const struct hent *e, uint32_t file)
{
	return e->file == file;
}

static void h_set_rctx(uint32_t h, uint32_t rctx)
{
	unsigned int i;

	pthread_mutex_lock(&h_lock);
	for (i = 0; i < h_n; i++)
		if (h_tab[i].h == h && h_tab[i].alive)
			h_tab[i].rctx = rctx;
	pthread_mutex_unlock(&h_lock);
}

static unsigned int h_count(int type)
{
	return __atomic_load_n(&h_live[type], __ATOMIC_RELAXED);
}

/*
 * A live entry of @type (H_NONE: any), preferring (mostly) the current
 * file, the IA @ia, aux == @aux and aux & @mask, when given.
 */
static bool h_pick(int type, uint32_t ia, uint32_t aux, uint32_t mask,
		   struct hent *out)
{
	struct rng *r = T->r;
	bool f_file = pct(r, 95), f_ia = ia && pct(r, 85);
	bool f_aux = aux && pct(r, 85), f_mask = mask && pct(r, 80);
	unsigned int idx[HMAX], n = 0, i, pass;

	pthread_mutex_lock(&h_lock);
	for (pass = 0; pass < 2 && !n; pass++) {
		for (i = 0; i < h_n; i++) {
			const struct hent *e = &h_tab[i];

			if (!e->alive || (type && e->type != type))
				continue;
			if (!pass && ((f_file && e->file != T->file) ||
				      (f_ia && e->ia != ia) ||
				      (f_aux && e->aux != aux) ||
				      (f_mask && !(e->aux & mask))))
				continue;
			idx[n++] = i;
		}
	}
	if (n)
		*out = h_tab[idx[rn(r, n)]];
	pthread_mutex_unlock(&h_lock);
	return n > 0;
}

static bool h_pick_dead(int type, struct hent *out)
{
	unsigned int idx[HMAX], n = 0, i;

	pthread_mutex_lock(&h_lock);
	for (i = 0; i < h_n; i++)
		if (!h_tab[i].alive && (!type || h_tab[i].type == type))
			idx[n++] = i;
	if (n)
		*out = h_tab[idx[rn(T->r, n)]];
	pthread_mutex_unlock(&h_lock);
	return n > 0;
}

/* The handle an argument of @type gets: mostly a good one. */
static uint32_t phx(int type, uint32_t ia, uint32_t aux, uint32_t mask,
		    struct hent *e)
{
	struct rng *r = T->r;
	struct hent tmp;

	if (!e)
		e = &tmp;
	memset(e, 0, sizeof(*e));
	if (mut() || pct(r, 2)) {
		switch (rn(r, 7)) {
		case 0:
			return 0;
		case 1:
			return (uint32_t)rnd(r);
		case 2:
			if (h_pick_dead(pct(r, 50) ? type : H_NONE, e))
				return e->h;
			break;
		case 3:
			if (h_pick(H_NONE, 0, 0, 0, e))	/* any type */
				return e->h;
			break;
		case 4:
			if (h_pick(type, 0, 0, 0, e))	/* any IA */
				return e->h;
			break;
		case 5:
			return (uint32_t)rboundary(r);
		default:
			break;
		}
		memset(e, 0, sizeof(*e));
	}
	if (h_pick(type, ia, aux, mask, e))
		return e->h;
	if (h_pick_dead(type, e))
		return e->h;
	return pct(r, 50) ? 0 : (uint32_t)rnd(r);
}

static uint32_t ph(int type, uint32_t ia, struct hent *e)
{
	return phx(type, ia, 0, 0, e);
}

/* ---- pointers ------------------------------------------------------- */

/* @good, or (mutated) a pointer the kernel must refuse. */
static uint64_t mptr(const void *good)
{
	struct rng *r = T->r;

	if (!mut())
		return (uintptr_t)good;
	switch (rn(r, 7)) {
	case 0:
		return 0;
	case 1:
		return 8;
	case 2:
		return 0xffff888000000000ULL + rn(r, 1 << 20) * 8;
	case 3:
		return pct(r, 50) ? (uintptr_t)T->arg_guard :
			(uintptr_t)g_hole + rn(r, HOLESZ);
	case 4:
		return (uintptr_t)T->out_guard - rn(r, 64);
	case 5:
		return (uintptr_t)good + rn(r, 4096) - 2048;
	default:
		return rnd(r);
	}
}

/* ---- the ioctl, with the size protocol mutated ---------------------- */

static void arm_intr(unsigned int ms);
static void disarm_intr(void);
static bool may_wait(unsigned long cmd);

static bool within(uint64_t a, uint64_t end, const void *base, size_t len)
{
	uintptr_t b = (uintptr_t)base;

	return base && a >= b && end <= b + len;
}

/* An address the kernel cannot write to, or ours to be written. */
static bool harmless(uint64_t a, uint64_t end)
{
	return end < a || a >= 0x800000000000ULL || end > 0x800000000000ULL ||
	       end <= 0x10000 || within(a, end, g_hole, HOLESZ);
}

/*
 * May the kernel write (or RDMA) to [@a, @a + @len) of this process? Only
 * memory kept for that, else a bit flip would let it corrupt the fuzzer.
 */
static bool lmr_range_ok(uint64_t a, uint64_t len)
{
	uint64_t end = a + len;
	unsigned int i;

	if (harmless(a, end) || within(a, end, g_bufs, NBUF * BUFSZ))
		return true;
	for (i = 0; i < NMBLK; i++)
		if (within(a, end, g_mblk[i], MBLKSZ))
			return true;
	for (i = 0; i < NRMAP; i++)
		if (g_rm[i].valid && within(a, end, g_rm[i].m, g_rm[i].size))
			return true;
	return false;
}

/* An output array: in the out area (the guard page after it stops it). */
static uint64_t out_ptr_ok(uint64_t a)
{
	if (harmless(a, a + 1) || within(a, a + 1, T->out, OUT_AREA + PAGE) ||
	    within(a, a + 1, T->arg_guard, PAGE))
		return a;
	return (uintptr_t)g_hole + (a & (PAGE - 1));
}

/* The pointers the kernel writes through, made safe after mutation. */
static void sanitize(unsigned long cmd, uint8_t *a)
{
	if (cmd == KDAT_IOCTL_LMR_CREATE) {
		struct kdat_lmr_create *c = (void *)a;

		if (!lmr_range_ok(c->addr, c->length))
			c->addr = (uintptr_t)g_hole + (c->addr & (PAGE - 1));
	} else if (cmd == KDAT_IOCTL_EVD_WAIT) {
		struct kdat_evd_wait *c = (void *)a;

		c->events = out_ptr_ok(c->events);
	} else if (cmd == KDAT_IOCTL_DEVICE_LIST) {
		struct kdat_device_list *c = (void *)a;

		c->entries = out_ptr_ok(c->entries);
	}
}

static void count_err(int e)
{
	add(&S->err[e > 0 && e < 256 ? e : (e ? 255 : 0)], 1);
}

/*
 * Issue @cmd with the @sz bytes of @s (whose first member is the size;
 * @minsz the first published size). Returns 0 or the errno. The output
 * comes back into @s when the struct was passed where it belongs.
 */
static int kio(unsigned long cmd, void *s, size_t sz, size_t minsz)
{
	struct thr *t = T;
	struct rng *r = t->r;
	uint8_t *a = t->arg, *p = a;
	size_t usz = sz, dirty = sz, k = 0;
	bool safety;
	int ret;

	*(uint32_t *)s = (uint32_t)sz;
	if (mut() && pct(r, 15)) {	/* random bits anywhere after size */
		unsigned int n = 1 + rn(r, 3);

		while (n--) {
			size_t bit = 32 + rn(r, (sz - 4) * 8);

			((uint8_t *)s)[bit / 8] ^= (uint8_t)(1U << (bit % 8));
		}
	}
	memcpy(a, s, sz);
	if (!t->nomut && pct(r, t->mutp ? 12 : 2)) {
		switch (rn(r, 9)) {
		case 0:
			usz = minsz;
			break;
		case 1:
			usz = rn(r, minsz);
			break;
		case 2:		/* longer, zero tail: accepted */
			usz = sz + 1 + rn(r, 64);
			break;
		case 3:		/* longer, non-zero tail: E2BIG */
			usz = sz + 1 + rn(r, 64);
			a[sz + rn(r, usz - sz)] = (uint8_t)(1 + rn(r, 255));
			dirty = usz;
			break;
		case 4:		/* huge, zero tail, mapped */
			usz = ARG_AREA - rn(r, 64);
			break;
		case 5:		/* huge, past the guard page */
			usz = ARG_AREA + 1 + rn(r, 2 * PAGE);
			break;
		case 6:
			usz = (uint32_t)rboundary(r);
			break;
		case 7:		/* the struct straddles the guard page */
			k = 1 + rn(r, sz - 1);
			p = t->arg_guard - k;
			memcpy(p, s, k);
			break;
		default:
			p = (uint8_t *)(uintptr_t)mptr(a);
			if (p == a)
				p = NULL;
			break;
		}
		if (p == a)
			*(uint32_t *)a = (uint32_t)usz;
		else if (k >= 4)
			*(uint32_t *)p = (uint32_t)usz;
	}
	if (p == a)
		sanitize(cmd, a);
	/* A flipped bit may make any timeout huge: never block for long. */
	safety = may_wait(cmd) && !t->armed;
	if (safety)
		arm_intr(150);
	ret = ioctl(cur_fd(), cmd, p) ? errno : 0;
	if (safety)
		disarm_intr();
	count_err(ret);
	if (p == a)
		memcpy(s, a, sz);
	memset(a, 0, dirty);
	if (k)
		memset(t->arg_guard - k, 0, k);
	return ret;
}

#define KIO(cmd, st, last) kio(cmd, &(st), sizeof(st), END(__typeof__(st), last))

/* ---- interrupting long waits ---------------------------------------- */

/*
 * SIGUSR1 to this thread every @ms until disarmed: a wait that started
 * before the first one is still interrupted by the next (EINTR).
 */
static void arm_intr(unsigned int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };
	struct itimerspec its = { .it_interval = ts, .it_value = ts };

	if (T->has_tmr && !timer_settime(T->tmr, 0, &its, NULL))
		T->armed = true;
}

static void disarm_intr(void)
{
	struct itimerspec its = { { 0, 0 }, { 0, 0 } };

	if (T->armed)
		timer_settime(T->tmr, 0, &its, NULL);
	T->armed = false;
}

/* Commands that may sleep as long as their (mutated) arguments say. */
static bool may_wait(unsigned long cmd)
{
	return cmd == KDAT_IOCTL_EVD_WAIT || cmd == KDAT_IOCTL_CNO_WAIT ||
	       cmd == KDAT_IOCTL_CNO_AGENT ||
	       _IOC_TYPE(cmd) != KDAT_TYPE || _IOC_NR(cmd) < KDAT_CMD_BASE ||
	       _IOC_NR(cmd) > KDAT_CMD_CNO_AGENT || _IOC_DIR(cmd);
}

static void thread_timer(struct thr *t)
{
	struct sigevent sev;

	memset(&sev, 0, sizeof(sev));
	sev.sigev_notify = SIGEV_THREAD_ID;
	sev.sigev_signo = SIGUSR1;
	sev._sigev_un._tid = gettid();
	t->has_tmr = !timer_create(CLOCK_MONOTONIC, &sev, &t->tmr);
}

/* A wait's timeout: short, sometimes for ever (then interrupted). */
static uint64_t wait_timeout(bool *intr)
{
	struct rng *r = T->r;
	uint64_t us;

	*intr = false;
	switch (rn(r, 20)) {
	case 0:
		us = pct(r, 50) ? KDAT_WAIT_FOREVER : rboundary(r);
		break;
	case 1:
	case 2:
		us = rn(r, 200000);
		break;
	default:
		us = rn(r, 20000);
		break;
	}
	if (us > 100000) {
		*intr = true;
		arm_intr(20 + rn(r, 80));
	}
	return us;
}

/* ---- events --------------------------------------------------------- */

static void harvest(const struct kdat_event *ev, uint32_t n, uint32_t ia)
{
	uint32_t i;

	for (i = 0; i < n; i++) {
		if ((ev[i].event_number == KDAT_EVENT_CONNECTION_REQUEST ||
		     ev[i].event_number == KDAT_EVENT_UD_CONNECTION_REQUEST) &&
		    ev[i].cr_handle)
			h_add(H_CR, ev[i].cr_handle, ia, ev[i].handle, 0, 0, 0,
			      0);
		/* A UD EP's new address handle. */
		if (ev[i].event_number == KDAT_EVENT_UD_ESTABLISHED &&
		    ev[i].ah_handle)
			h_add(H_AH, ev[i].ah_handle, ia, ev[i].handle, 0, 0, 0,
			      0);
	}
}

/* ---- the operations ------------------------------------------------- */

static int destroy_h(uint32_t h, uint32_t flags)
{
	struct kdat_destroy c = { .handle = h, .flags = flags };
	int ret = KIO(KDAT_IOCTL_DESTROY, c, handle);

	if (!ret) {
		if (flags & KDAT_DESTROY_IA_ALL)
			h_kill_if(m_ia, h);
		h_kill_if(m_handle, h);
	}
	return ret;
}

/* At the cap of @type: destroy one of them instead of creating. */
static bool at_cap(int type)
{
	struct hent e;

	if (h_count(type) < h_cap[type])
		return false;
	if (h_pick(type, 0, 0, 0, &e))
		destroy_h(e.h, type == H_IA && pct(T->r, 70) ?
			  KDAT_DESTROY_IA_ALL : 0);
	return true;
}

static void op_query(void)
{
	struct kdat_query c = { .flags = M32(0) };

	c.__reserved = M32(0);
	KIO(KDAT_IOCTL_QUERY, c, __reserved);
}

static void op_device_list(void)
{
	struct rng *r = T->r;
	struct kdat_device_list c = {
		.entry_size = sizeof(struct kdat_port_info),
		.num_entries = 1 + rn(r, 8),
	};
	uint32_t room;

	if (pct(r, 20))
		c.entry_size = 80 + rn(r, 200);
	c.entry_size = M32(c.entry_size);
	c.num_entries = M32(pct(r, 10) ? 0 : c.num_entries);
	/* The entries end at the guard page: too many fault, no overrun. */
	room = (uint32_t)MIN((uint64_t)c.entry_size * c.num_entries,
			     OUT_AREA);
	c.entries = mptr(T->out_guard - room);
	if (!c.num_entries && pct(r, 50))
		c.entries = 0;
	c.__reserved = M32(0);
	KIO(KDAT_IOCTL_DEVICE_LIST, c, entries);
}

static void op_ia_open(void)
{
	struct rng *r = T->r;
	struct kdat_ia_open c = { .port_num = g_port_num };

	if (at_cap(H_IA))
		return;
	if (g_have_port && !mut()) {
		strcpy(c.name, g_port_name);
	} else {
		switch (rn(r, 5)) {
		case 0:
			strcpy(c.name, "no-such-rdma-dev");
			break;
		case 1:
			break;
		case 2:
			memset(c.name, 'x', sizeof(c.name));
			break;
		case 3:
			strcpy(c.name, g_port_name);
			c.port_num = (uint32_t)rboundary(r);
			break;
		default:
			c.name[0] = (char)rnd(r);
			c.name[1] = (char)rnd(r);
			break;
		}
	}
	c.port_num = M32(c.port_num ? c.port_num : 1);
	c.flags = M32(0);
	if (!KIO(KDAT_IOCTL_IA_OPEN, c, out_ia_handle))
		h_add(H_IA, c.out_ia_handle, c.out_ia_handle, 0, 0, 0, 0, 0);
}

static void op_ia_query(void)
{
	struct kdat_ia_query c = { .ia_handle = ph(H_IA, 0, NULL) };

	c.__reserved = M32(0);
	KIO(KDAT_IOCTL_IA_QUERY, c, __reserved);
}

static void op_destroy(void)
{
	struct rng *r = T->r;
	int type = 1 + rn(r, H_NT - 1);
	uint32_t h = ph(type, 0, NULL);
	uint32_t flags = M32(0);

	if (type == H_IA && pct(r, 30))
		flags = KDAT_DESTROY_IA_ALL;
	destroy_h(h, flags);
}

static void op_destroy_ia_all(void)
{
	destroy_h(ph(H_IA, 0, NULL), M32(KDAT_DESTROY_IA_ALL));
}

static void op_pz_create(void)
{
	struct hent ia;
	struct kdat_pz_create c = { 0 };

	if (at_cap(H_PZ))
		return;
	c.ia_handle = ph(H_IA, 0, &ia);
	c.flags = M32(0);
	if (!KIO(KDAT_IOCTL_PZ_CREATE, c, out_pz_handle))
		h_add(H_PZ, c.out_pz_handle, c.ia_handle, 0, 0, 0, 0, 0);
}

static uint32_t rand_priv(uint32_t valid)
{
	static const uint32_t bits[] = { KDAT_MEM_PRIV_LOCAL_READ,
					 KDAT_MEM_PRIV_REMOTE_READ,
					 KDAT_MEM_PRIV_LOCAL_WRITE,
					 KDAT_MEM_PRIV_REMOTE_WRITE,
					 KDAT_MEM_PRIV_REMOTE_ATOMIC };
	uint32_t p = 0, i;

	if (pct(T->r, 60))
		return M32(valid);
	for (i = 0; i < ARRAY_SIZE(bits); i++)
		if ((bits[i] & valid) && pct(T->r, 50))
			p |= bits[i];
	return M32(p);
}

static void op_lmr_create(void)
{
	struct rng *r = T->r;
	struct hent pz;
	struct kdat_lmr_create c = { 0 };
	uint64_t off, room;
	uint32_t k = rn(r, 100), i;

	if (at_cap(H_LMR))
		return;
	c.pz_handle = ph(H_PZ, 0, &pz);
	if (k < 60) {			/* an mmap'd slot (maybe unmapped) */
		i = rn(r, NBUF);
		off = rn(r, BUFSZ / PAGE) * PAGE;
		if (pct(r, 10))
			off += rn(r, PAGE);
		room = BUFSZ - off;
		c.addr = (uintptr_t)(g_bufs + i * BUFSZ + off);
		c.length = pct(r, 50) ? room : 1 + rn(r, room);
	} else if (k < 85) {		/* malloc'd */
		i = rn(r, NMBLK);
		off = rn(r, MBLKSZ / 2);
		c.addr = (uintptr_t)(g_mblk[i] + off);
		c.length = 1 + rn(r, MBLKSZ - off);
	} else if (k < 90) {		/* a ring mapping */
		struct rmap *m = &g_rm[rn(r, NRMAP)];

		c.addr = (uintptr_t)m->m;
		c.length = m->size ? m->size : PAGE;
	} else {			/* nothing of ours */
		c.addr = mptr(NULL);
		c.length = pct(r, 50) ? rboundary(r) : PAGE;
		if (pct(r, 30)) {	/* overflowing the address space */
			c.addr = ~0ULL - rn(r, PAGE);
			c.length = 2 * PAGE;
		}
	}
	c.addr = M64(c.addr);
	c.length = M64(c.length);
	c.mem_priv = rand_priv(KDAT_MEM_PRIV_ALL |
			       KDAT_MEM_PRIV_REMOTE_ATOMIC);
	c.flags = M32(0);
	c.__reserved = M32(0);
	if (!KIO(KDAT_IOCTL_LMR_CREATE, c, __reserved))
		h_add(H_LMR, c.out_lmr_handle, pz.ia, c.pz_handle,
		      c.out_lmr_context, c.out_rmr_context, c.addr, c.length);
}

static void op_rmr_create(void)
{
	struct hent pz;
	struct kdat_rmr_create c = { 0 };

	if (at_cap(H_RMR))
		return;
	c.pz_handle = ph(H_PZ, 0, &pz);
	c.flags = M32(0);
	if (!KIO(KDAT_IOCTL_RMR_CREATE, c, out_rmr_handle))
		h_add(H_RMR, c.out_rmr_handle, pz.ia, c.pz_handle, 0, 0, 0, 0);
}

/* A range inside LMR @e: [*addr, *addr + *len). */
static void in_lmr(const struct hent *e, __u64 *addr, __u64 *len)
{
	struct rng *r = T->r;
	uint64_t off = e->len ? rn(r, e->len) : 0;

	if (pct(r, 40))
		off = 0;
	*addr = e->addr + off;
	*len = e->len - off;
	if (*len && pct(r, 60))
		*len = 1 + rn(r, MIN(*len, 4096));
	*addr = M64(*addr);
	*len = M64(*len);
}

static void op_rmr_bind(void)
{
	struct rng *r = T->r;
	struct hent rmr, lmr, ep;
	struct kdat_rmr_bind c = { 0 };

	c.rmr_handle = ph(H_RMR, 0, &rmr);
	c.lmr_context = phx(H_LMR, rmr.ia, rmr.aux, 0, &lmr);
	if (lmr.ctx && pct(r, 90))
		c.lmr_context = lmr.ctx;
	c.ep_handle = phx(H_EP, rmr.ia, rmr.aux, 0, &ep);
	c.mem_priv = rand_priv(KDAT_MEM_PRIV_REMOTE_READ |
			       KDAT_MEM_PRIV_REMOTE_WRITE |
			       KDAT_MEM_PRIV_REMOTE_ATOMIC);
	c.completion_flags = M32(pct(r, 70) ? 0 : KDAT_COMPLETION_SUPPRESS);
	in_lmr(&lmr, &c.addr, &c.length);
	if (pct(r, 15))
		c.length = 0;		/* unbind */
	c.cookie = rnd(r);
	c.out_flags = M32(0);
	if (!KIO(KDAT_IOCTL_RMR_BIND, c, out_flags) &&
	    !(c.out_flags & KDAT_RMR_BIND_FLUSHED))
		h_set_rctx(c.rmr_handle, c.out_rmr_context);
}

static void op_evd_create(void)
{
	static const uint32_t kinds[] = {
		KDAT_EVD_SOFTWARE, KDAT_EVD_CR, KDAT_EVD_DTO,
		KDAT_EVD_CONNECTION, KDAT_EVD_RMR_BIND, KDAT_EVD_ASYNC,
	};
	struct rng *r = T->r;
	struct hent ia;
	struct kdat_evd_create c = { 0 };
	uint32_t k = rn(r, 100), i;

	if (at_cap(H_EVD))
		return;
	c.ia_handle = ph(H_IA, 0, &ia);
	if (k < 70)
		c.qlen = 1 + rn(r, 32);
	else if (k < 92)
		c.qlen = 1 + rn(r, 1024);
	else if (k < 97)
		c.qlen = 1 + rn(r, 8192);
	else
		c.qlen = (uint32_t)rboundary(r);
	if (pct(r, 50)) {
		c.evd_flags = kinds[rn(r, ARRAY_SIZE(kinds))];
	} else {
		for (i = 0; i < ARRAY_SIZE(kinds); i++)
			if (pct(r, 35))
				c.evd_flags |= kinds[i];
	}
	c.evd_flags = M32(c.evd_flags);
	if (pct(r, 35))
		c.cno_handle = ph(H_CNO, c.ia_handle, NULL);
	c.__reserved = M32(0);
	if (!KIO(KDAT_IOCTL_EVD_CREATE, c, out_qlen))
		h_add(H_EVD, c.out_evd_handle, c.ia_handle, c.evd_flags, 0, 0,
		      0, 0);
}

static void evd_wait(bool dequeue)
{
	static const uint32_t want[] = { KDAT_EVD_CR, KDAT_EVD_CONNECTION,
					 KDAT_EVD_DTO, KDAT_EVD_SOFTWARE,
					 KDAT_EVD_ASYNC, 0 };
	struct rng *r = T->r;
	struct kdat_evd_wait c = { 0 };
	uint32_t cap = OUT_AREA / sizeof(struct kdat_event), n;
	struct hent e;
	bool intr = false;
	int ret;

	c.evd_handle = phx(H_EVD, 0, 0, want[rn(r, ARRAY_SIZE(want))], &e);
	if (!dequeue) {
		c.threshold = pct(r, 70) ? 1 : rn(r, 8);
		c.timeout_us = wait_timeout(&intr);
	}
	c.threshold = M32(c.threshold);
	c.max_events = pct(r, 8) ? 0 : 1 + rn(r, 16);
	if (pct(r, 3))
		c.max_events = cap + rn(r, 64);	/* runs into the guard */
	c.max_events = M32(c.max_events);
	c.events = mptr(T->out);
	if (!intr) {
		c.timeout_us = M64(c.timeout_us);
		if (c.timeout_us > 100000) {
			intr = true;
			arm_intr(20 + rn(r, 80));
		}
	}
	ret = KIO(KDAT_IOCTL_EVD_WAIT, c, out_nmore);
	if (intr)
		disarm_intr();
	if (!ret && c.events == (uintptr_t)T->out) {
		n = MIN(MIN(c.out_count, c.max_events), cap);
		harvest((const struct kdat_event *)T->out, n, e.ia);
	}
}

static void op_evd_wait(void)
{
	evd_wait(false);
}

static void op_evd_dequeue(void)
{
	evd_wait(true);
}

static void op_evd_modify(void)
{
	struct rng *r = T->r;
	struct kdat_evd_modify c = { .evd_handle = ph(H_EVD, 0, NULL) };

	c.op = M32(1 + rn(r, 5));
	if (c.op == KDAT_EVD_OP_RESIZE)
		c.qlen = pct(r, 90) ? 1 + rn(r, 256) : (uint32_t)rboundary(r);
	c.qlen = M32(c.qlen);
	KIO(KDAT_IOCTL_EVD_MODIFY, c, qlen);
}

static void op_evd_modify_cno(void)
{
	struct hent e;
	struct kdat_evd_modify_cno c = { 0 };

	c.evd_handle = ph(H_EVD, 0, &e);
	c.cno_handle = pct(T->r, 30) ? 0 : ph(H_CNO, e.ia, NULL);
	c.__reserved = M32(0);
	KIO(KDAT_IOCTL_EVD_MODIFY_CNO, c, __reserved);
}

static void op_evd_post_se(void)
{
	struct rng *r = T->r;
	struct kdat_evd_post_se c = { 0 };
	unsigned int n = pct(r, 80) ? 1 : 1 + rn(r, 40);

	c.evd_handle = phx(H_EVD, 0, 0,
			   pct(r, 80) ? KDAT_EVD_SOFTWARE : 0, NULL);
	while (n--) {
		c.pointer = rnd(r);
		if (KIO(KDAT_IOCTL_EVD_POST_SE, c, pointer))
			break;
	}
}

static void op_cno_create(void)
{
	struct kdat_cno_create c = { 0 };

	if (at_cap(H_CNO))
		return;
	c.ia_handle = ph(H_IA, 0, NULL);
	c.flags = M32(0);
	if (!KIO(KDAT_IOCTL_CNO_CREATE, c, out_cno_handle))
		h_add(H_CNO, c.out_cno_handle, c.ia_handle, 0, 0, 0, 0, 0);
}

static void op_cno_wait(void)
{
	struct kdat_cno_wait c = { .cno_handle = ph(H_CNO, 0, NULL) };
	bool intr;

	c.timeout_us = wait_timeout(&intr);
	c.__reserved = M32(0);
	KIO(KDAT_IOCTL_CNO_WAIT, c, __reserved);
	if (intr)
		disarm_intr();
}

/* A CNO's agent trigger: arm, disarm, or wait (kio() interrupts it). */
static void op_cno_agent(void)
{
	struct kdat_cno_agent c = { .cno_handle = ph(H_CNO, 0, NULL) };

	c.op = M32(KDAT_CNO_AGENT_ARM + rn(T->r, 3));
	c.__reserved = M32(0);
	KIO(KDAT_IOCTL_CNO_AGENT, c, __reserved);
}

static void rand_attr(struct kdat_ep_attr *a)
{
	struct rng *r = T->r;

	a->max_recv_dtos = M32(1 + rn(r, 16));
	a->max_request_dtos = M32(1 + rn(r, 16));
	a->max_recv_iov = M32(1 + rn(r, 4));
	a->max_request_iov = M32(1 + rn(r, 4));
	a->max_rdma_read_in = M32(rn(r, 3));
	a->max_rdma_read_out = M32(rn(r, 3));
	a->recv_completion_flags = M32(pct(r, 60) ? 0 : rn(r, 16));
	a->request_completion_flags = M32(pct(r, 60) ? 0 : rn(r, 16));
}

static void op_ep_create(void)
{
	struct rng *r = T->r;
	struct hent pz;
	struct kdat_ep_create c = { 0 };

	if (at_cap(H_EP))
		return;
	c.pz_handle = ph(H_PZ, 0, &pz);
	c.recv_evd_handle = phx(H_EVD, pz.ia, 0, KDAT_EVD_DTO, NULL);
	c.request_evd_handle = pct(r, 50) ? c.recv_evd_handle :
		phx(H_EVD, pz.ia, 0, KDAT_EVD_DTO, NULL);
	c.connect_evd_handle = phx(H_EVD, pz.ia, 0, KDAT_EVD_CONNECTION, NULL);
	c.flags = M32(pct(r, 25) ? KDAT_EP_CREATE_UD : 0);
	rand_attr(&c.attr);
	/* A UD EP takes no RDMA reads: mostly none asked. */
	if (c.flags == KDAT_EP_CREATE_UD && pct(r, 80))
		c.attr.max_rdma_read_in = c.attr.max_rdma_read_out = 0;
	if (pct(r, 25))
		c.srq_handle = phx(H_SRQ, pz.ia, c.pz_handle, 0, NULL);
	if (!KIO(KDAT_IOCTL_EP_CREATE, c, srq_handle))
		h_add(H_EP, c.out_ep_handle, pz.ia, c.pz_handle, c.srq_handle,
		      0, 0, 0);
}

static void op_ep_query(void)
{
	struct kdat_ep_query c = { .ep_handle = ph(H_EP, 0, NULL) };

	c.__reserved = M32(0);
	KIO(KDAT_IOCTL_EP_QUERY, c, __reserved);
}

static void fill_priv(__u64 *ptr, __u32 *len)
{
	struct rng *r = T->r;
	uint32_t i;

	*len = rn(r, KDAT_MAX_PRIVATE_DATA + 1);
	if (pct(r, 4))
		*len = KDAT_MAX_PRIVATE_DATA + 1 + rn(r, 200);
	for (i = 0; i < sizeof(T->priv); i++)
		T->priv[i] = (uint8_t)rnd(r);
	*len = M32(*len);
	*ptr = *len || pct(r, 50) ? mptr(T->priv) : 0;
}

static void op_ep_connect(void)
{
	struct rng *r = T->r;
	struct kdat_ep_connect c = { .ep_handle = ph(H_EP, 0, NULL) };
	struct hent psp;
	unsigned int k;

	c.remote.family = AF_INET;
	memcpy(c.remote.addr, g_ip4, 4);
	if (mut() || pct(r, 5)) {
		switch (rn(r, 6)) {
		case 0:		/* loopback */
			memcpy(c.remote.addr, "\x7f\0\0\x01", 4);
			break;
		case 1:		/* nobody there */
			memcpy(c.remote.addr, "\x0a\x63\x63\x01", 4);
			c.remote.addr[3] = (uint8_t)rnd(r);
			break;
		case 2:
			memset(c.remote.addr, 0, 4);
			break;
		case 3:
			c.remote.family = AF_INET6;
			memset(c.remote.addr, 0, 16);
			c.remote.addr[15] = 1;
			break;
		case 4:
			c.remote.family = (uint16_t)rnd(r);
			break;
		default:
			c.remote.family = AF_INET6;
			for (k = 0; k < 16; k++)
				c.remote.addr[k] = (uint8_t)rnd(r);
			c.remote.scope_id = (uint32_t)rnd(r);
			break;
		}
	}
	c.remote.port = (uint16_t)M32(0);
	if (pct(r, 80) && h_pick(H_PSP, 0, 0, 0, &psp))
		c.conn_qual = psp.aux;
	else
		c.conn_qual = g_qual_base + rn(r, 128);
	c.conn_qual = M64(c.conn_qual);
	c.timeout_us = pct(r, 50) ? KDAT_WAIT_FOREVER :
		1000 + rn(r, 2000000);
	c.timeout_us = M64(c.timeout_us);
	fill_priv(&c.private_data, &c.private_data_len);
	c.flags = M32(0);
	KIO(KDAT_IOCTL_EP_CONNECT, c, flags);
}

static void op_ep_disconnect(void)
{
	struct kdat_ep_handle_cmd c = { .ep_handle = ph(H_EP, 0, NULL) };

	c.flags = M32(pct(T->r, 30) ? KDAT_CLOSE_GRACEFUL : 0);
	c.__reserved = M32(0);
	KIO(KDAT_IOCTL_EP_DISCONNECT, c, __reserved);
}

static void op_ep_reset(void)
{
	struct kdat_ep_handle_cmd c = { .ep_handle = ph(H_EP, 0, NULL) };

	c.flags = M32(0);
	c.__reserved = M32(0);
	KIO(KDAT_IOCTL_EP_RESET, c, __reserved);
}

static void op_ep_modify(void)
{
	struct kdat_ep_modify c = { .ep_handle = ph(H_EP, 0, NULL) };

	c.mask = M32(rn(T->r, 8));
	c.__reserved = M32(0);
	rand_attr(&c.attr);
	KIO(KDAT_IOCTL_EP_MODIFY, c, attr);
}

static void psp_create(bool rsp)
{
	struct rng *r = T->r;
	struct kdat_psp_create c = { 0 };

	if (at_cap(H_PSP))
		return;
	c.ia_handle = ph(H_IA, 0, NULL);
	c.evd_handle = phx(H_EVD, c.ia_handle, 0, KDAT_EVD_CR, NULL);
	c.flags = M32(0);
	c.conn_qual = M64(g_qual_base + rn(r, 128));
	if (rsp)
		c.rsp_ep_handle = ph(H_EP, c.ia_handle, NULL);
	if (!KIO(KDAT_IOCTL_PSP_CREATE, c, rsp_ep_handle))
		h_add(H_PSP, c.out_psp_handle, c.ia_handle,
		      (uint32_t)c.conn_qual, 0, 0, 0, 0);
}

static void op_psp_create(void)
{
	psp_create(false);
}

static void op_rsp_create(void)
{
	psp_create(true);
}

static void op_cr_query(void)
{
	struct kdat_cr_query c = { .cr_handle = ph(H_CR, 0, NULL) };

	c.__reserved = M32(0);
	KIO(KDAT_IOCTL_CR_QUERY, c, __reserved);
}

static void cr_reply(bool accept)
{
	struct kdat_cr_reply c = { 0 };
	struct hent cr;
	int ret;

	c.cr_handle = ph(H_CR, 0, &cr);
	c.ep_handle = accept ? ph(H_EP, cr.ia, NULL) : M32(0);
	fill_priv(&c.private_data, &c.private_data_len);
	ret = accept ? KIO(KDAT_IOCTL_CR_ACCEPT, c, private_data) :
		       KIO(KDAT_IOCTL_CR_REJECT, c, private_data);
	if (!ret || ret == ECONNABORTED)
		h_kill_if(m_handle, c.cr_handle);
}

static void op_cr_accept(void)
{
	cr_reply(true);
}

static void op_cr_reject(void)
{
	cr_reply(false);
}

/* An IOV segment in an LMR of @pz (mostly). */
static void fill_triplet(struct kdat_lmr_triplet *t, uint32_t ia,
			 uint32_t pz)
{
	struct hent e;

	memset(t, 0, sizeof(*t));
	t->lmr_context = phx(H_LMR, ia, pz, 0, &e);
	if (e.ctx && pct(T->r, 95))
		t->lmr_context = e.ctx;
	in_lmr(&e, &t->virtual_address, &t->segment_length);
	t->__pad = M32(0);
}

/* The remote buffer of an RDMA: an LMR's or a bound RMR's range. */
static void fill_remote(struct kdat_rmr_triplet *t, uint32_t ia)
{
	struct rng *r = T->r;
	struct hent e;

	memset(t, 0, sizeof(*t));
	if (pct(r, 20) && h_pick(H_RMR, ia, 0, 0, &e) && e.rctx) {
		t->rmr_context = e.rctx;
		t->target_address = rnd(r);
		t->segment_length = 1 + rn(r, 4096);
	} else {
		phx(H_LMR, ia, 0, 0, &e);
		t->rmr_context = e.rctx;
		in_lmr(&e, &t->target_address, &t->segment_length);
	}
	t->rmr_context = M32(t->rmr_context);
	t->__pad = M32(0);
}

/*
 * A send-queue op: mostly the base ones, a third of the time the IB
 * extensions' (and now and then a completion-only kind, refused).
 */
static uint32_t send_op(void)
{
	static const uint32_t ops[] = {
		KDAT_DTO_SEND, KDAT_DTO_SEND, KDAT_DTO_RDMA_WRITE,
		KDAT_DTO_RDMA_READ, KDAT_DTO_SEND, KDAT_DTO_RDMA_WRITE,
		KDAT_DTO_RDMA_WRITE_IMM, KDAT_DTO_FETCH_ADD,
		KDAT_DTO_CMP_SWAP, KDAT_DTO_SEND_UD, KDAT_DTO_SEND_UD,
	};

	if (pct(T->r, 2))
		return pct(T->r, 50) ? KDAT_DTO_RECV_RDMA_IMM :
		       pct(T->r, 50) ? KDAT_DTO_RECV_MSG_IMM :
				       KDAT_DTO_RECV_UD;
	return ops[rn(T->r, ARRAY_SIZE(ops))];
}

static bool ext_op(uint32_t op)
{
	return op == KDAT_DTO_RDMA_WRITE_IMM || op == KDAT_DTO_FETCH_ADD ||
	       op == KDAT_DTO_CMP_SWAP || op == KDAT_DTO_SEND_UD;
}

/*
 * The extensions' arguments of @op: those it uses (random values), the
 * others 0 but when mutated; an atomic's one 8-byte local segment and
 * aligned remote address, mostly.
 */
static void fill_ext(struct kdat_dto_ext *x, uint32_t op,
		     struct kdat_lmr_triplet *iov, uint32_t *num,
		     struct kdat_rmr_triplet *remote)
{
	struct rng *r = T->r;

	memset(x, 0, sizeof(*x));
	if (op == KDAT_DTO_RDMA_WRITE_IMM)
		x->imm_data = (uint32_t)rnd(r);
	if (op == KDAT_DTO_FETCH_ADD || op == KDAT_DTO_CMP_SWAP)
		x->compare_add = pct(r, 50) ? rnd(r) : rn(r, 4);
	if (op == KDAT_DTO_CMP_SWAP)
		x->swap = rnd(r);
	x->compare_add = M64(x->compare_add);
	x->swap = M64(x->swap);
	x->imm_data = M32(x->imm_data);
	/* A datagram's AH: mostly one seen, of any EP (the kernel checks). */
	x->ah_handle = op == KDAT_DTO_SEND_UD ? ph(H_AH, 0, NULL) : M32(0);
	if (op != KDAT_DTO_FETCH_ADD && op != KDAT_DTO_CMP_SWAP)
		return;
	if (pct(r, 85)) {
		*num = iov ? 1 : *num;
		if (iov)
			iov[0].segment_length = 8;
		remote->target_address &= ~7ULL;
	}
	remote->target_address = M64(remote->target_address);
}

static void op_post(void)
{
	struct rng *r = T->r;
	struct kdat_post c = { 0 };
	struct kdat_lmr_triplet *iov = (struct kdat_lmr_triplet *)T->out;
	uint32_t cap = OUT_AREA / sizeof(*iov), i, n;
	struct hent q;
	uint32_t k = rn(r, 100);

	if (k < 12) {
		c.ep_handle = ph(H_SRQ, 0, &q);
		c.op = KDAT_POST_SRQ_RECV;
	} else {
		c.ep_handle = ph(H_EP, 0, &q);
		c.op = k < 45 ? KDAT_DTO_RECEIVE : send_op();
	}
	c.op = M32(c.op);
	c.completion_flags = M32(pct(r, 70) ? 0 : rn(r, 16));
	c.num_segments = pct(r, 8) ? 0 : 1 + rn(r, 3);
	if (pct(r, 3))
		c.num_segments = 4 + rn(r, 60);
	c.num_segments = M32(c.num_segments);
	/* The array ends at the guard page: a count past it faults. */
	n = MIN(c.num_segments, cap);
	iov = (struct kdat_lmr_triplet *)(T->out_guard - n * sizeof(*iov));
	memset(iov, 0, n * sizeof(*iov));
	for (i = 0; i < MIN(n, 64); i++)
		fill_triplet(&iov[i], q.ia, q.aux);
	c.iov = n ? mptr(iov) : 0;
	if (!n && pct(r, 10))
		c.iov = (uintptr_t)T->out;
	c.cookie = rnd(r);
	if (c.op == KDAT_DTO_RDMA_READ || c.op == KDAT_DTO_RDMA_WRITE ||
	    ext_op(c.op) || pct(r, 5))
		fill_remote(&c.remote, q.ia);
	if (ext_op(c.op) || pct(r, 3))
		fill_ext(&c.ext, c.op, n ? iov : NULL, &c.num_segments,
			 &c.remote);
	c.__reserved = M32(0);
	/* Now and then in the first published size (no extension). */
	if (pct(r, 10))
		kio(KDAT_IOCTL_POST, &c, END(struct kdat_post, remote),
		    END(struct kdat_post, remote));
	else
		KIO(KDAT_IOCTL_POST, c, remote);
}

static void op_ah_query(void)
{
	struct kdat_ah_query c = { .ah_handle = ph(H_AH, 0, NULL) };

	c.__reserved = M32(0);
	KIO(KDAT_IOCTL_AH_QUERY, c, private_data);
}

static void op_srq_create(void)
{
	struct rng *r = T->r;
	struct hent pz;
	struct kdat_srq_create c = { 0 };

	if (at_cap(H_SRQ))
		return;
	c.pz_handle = ph(H_PZ, 0, &pz);
	c.max_recv_dtos = pct(r, 90) ? 1 + rn(r, 32) : (uint32_t)rboundary(r);
	c.max_recv_iov = M32(1 + rn(r, 4));
	c.low_watermark = M32(pct(r, 50) ? 0 : rn(r, c.max_recv_dtos + 1));
	c.max_recv_dtos = M32(c.max_recv_dtos);
	c.flags = M32(0);
	c.__reserved = M32(0);
	if (!KIO(KDAT_IOCTL_SRQ_CREATE, c, __reserved))
		h_add(H_SRQ, c.out_srq_handle, pz.ia, c.pz_handle, 0, 0, 0, 0);
}

static void op_srq_set_lw(void)
{
	struct kdat_srq_set_lw c = { .srq_handle = ph(H_SRQ, 0, NULL) };

	c.low_watermark = M32(rn(T->r, 40));
	c.__reserved = M32(0);
	KIO(KDAT_IOCTL_SRQ_SET_LW, c, __reserved);
}

static void op_srq_resize(void)
{
	struct kdat_srq_resize c = { .srq_handle = ph(H_SRQ, 0, NULL) };

	c.max_recv_dtos = pct(T->r, 90) ? 1 + rn(T->r, 64) :
		(uint32_t)rboundary(T->r);
	c.max_recv_dtos = M32(c.max_recv_dtos);
	c.__reserved = M32(0);
	KIO(KDAT_IOCTL_SRQ_RESIZE, c, __reserved);
}

/* ---- rings ---------------------------------------------------------- */

/*
 * Lock @mx; in a forked child only try (another thread of the parent may
 * have held it at fork time, with the slot half written).
 */
static bool lock_or_skip(pthread_mutex_t *mx)
{
	if (T->in_child)
		return !pthread_mutex_trylock(mx);
	pthread_mutex_lock(mx);
	return true;
}

static pthread_mutex_t rm_alloc_lock = PTHREAD_MUTEX_INITIALIZER;

static void ring_store(struct rmap *m)
{
	struct rmap *slot = NULL;
	unsigned int i, start = rn(T->r, NRMAP);

	if (!lock_or_skip(&rm_alloc_lock)) {
		munmap(m->m, m->size);
		return;
	}
	for (i = 0; i < NRMAP && !slot; i++) {
		struct rmap *s = &g_rm[(start + i) % NRMAP];

		if (!lock_or_skip(&s->lock))
			continue;
		if (!s->valid)
			slot = s;
		else
			pthread_mutex_unlock(&s->lock);
	}
	if (!slot) {		/* full: one goes, at random */
		slot = &g_rm[start];
		if (!lock_or_skip(&slot->lock)) {
			pthread_mutex_unlock(&rm_alloc_lock);
			munmap(m->m, m->size);
			return;
		}
		munmap(slot->m, slot->size);
	}
	pthread_mutex_unlock(&rm_alloc_lock);
	slot->valid = 1;
	slot->prot = m->prot;
	slot->m = m->m;
	slot->size = m->size;
	slot->handle = m->handle;
	slot->kind = m->kind;
	slot->pz = m->pz;
	slot->ia = m->ia;
	slot->entries = m->entries;
	slot->esz = m->esz;
	slot->off = m->off;
	pthread_mutex_unlock(&slot->lock);
}

static void ring_map(const struct kdat_ring_create *c, const struct hent *e)
{
	struct rng *r = T->r;
	struct rmap m;
	size_t size = c->out_map_size;
	off_t off = (off_t)c->out_mmap_offset;
	int prot = PROT_READ | PROT_WRITE, flags = MAP_SHARED;
	void *p;

	memset(&m, 0, sizeof(m));
	if (mut() || pct(r, 5)) {
		switch (rn(r, 8)) {
		case 0:
			size = size > PAGE ? size - PAGE : size;
			break;
		case 1:
			size += PAGE;
			break;
		case 2:
			off += (off_t)PAGE * (1 + rn(r, 4));
			break;
		case 3:
			off = (off_t)(rn(r, 1 << 20) * PAGE);
			break;
		case 4:
			flags = MAP_PRIVATE;
			break;
		case 5:
			prot = PROT_READ;
			break;
		case 6:
			prot |= PROT_EXEC;
			break;
		default:
			size = 1 + rn(r, size);
			break;
		}
	}
	p = mmap(NULL, size, prot, flags, cur_fd(), off);
	add(&S->mmaps, 1);
	if (p == MAP_FAILED) {
		add(&S->mmap_fail, 1);
		count_err(errno);
		return;
	}
	count_err(0);
	m.m = p;
	m.size = (size + PAGE - 1) & ~(PAGE - 1);
	m.prot = prot;
	m.handle = c->handle;
	m.kind = c->kind;
	m.pz = e->aux;
	m.ia = e->ia;
	m.entries = c->out_entries;
	m.esz = c->out_entry_size;
	m.ext = c->flags & KDAT_RING_CREATE_SQE_EXT;
	m.off = c->out_off;
	ring_store(&m);
}

static void op_ring_create(void)
{
	static const int types[] = { H_EP, H_EP, H_SRQ, H_EVD };
	struct rng *r = T->r;
	struct kdat_ring_create c = { 0 };
	uint32_t k = rn(r, 4);
	struct hent e;

	c.handle = ph(types[k], 0, &e);
	c.kind = pct(r, 95) ? k + 1 : rn(r, 7);
	c.kind = M32(c.kind);
	/* A send ring of extended entries, mostly; else either kind. */
	c.flags = c.kind == KDAT_RING_SEND ? (pct(r, 70) ?
		  KDAT_RING_CREATE_SQE_EXT : 0) : pct(r, 3);
	c.flags = M32(c.flags);
	c.__reserved = M32(0);
	if (!KIO(KDAT_IOCTL_RING_CREATE, c, out_off) && pct(r, 80))
		ring_map(&c, &e);
}

static void ring_wake(uint32_t flags)
{
	struct kdat_ring_wake c = { .flags = flags };

	KIO(KDAT_IOCTL_RING_WAKE, c, flags);
}

static void op_ring_wake(void)
{
	ring_wake(M32(pct(T->r, 50) ? KDAT_RING_WAKE_SUBMIT : 0));
}

/* Poller on, off, moved between CPUs, under whatever runs on the rings. */
static void op_poller_set(void)
{
	struct rng *r = T->r;
	struct kdat_poller_set c = { 0 };

	c.mode = M32(rn(r, 3) ? KDAT_POLLER_ADAPTIVE : KDAT_POLLER_NONE);
	c.cpu = (int32_t)M32((uint32_t)((int32_t)rn(r, 3) - 1));
	c.__reserved = M32(0);
	KIO(KDAT_IOCTL_POLLER_SET, c, __reserved);
}

/* A valid ring of @kinds (bitmask of 1 << kind), locked; NULL if none. */
static struct rmap *ring_get(unsigned int kinds, bool writable)
{
	unsigned int i, start = rn(T->r, NRMAP);

	for (i = 0; i < NRMAP; i++) {
		struct rmap *m = &g_rm[(start + i) % NRMAP];

		if (!lock_or_skip(&m->lock))
			continue;
		if (m->valid && m->kind < 32 && (kinds & (1U << m->kind)) &&
		    (!writable || (m->prot & PROT_WRITE)))
			return m;
		pthread_mutex_unlock(&m->lock);
	}
	return NULL;
}

/* A field of the ring's header, if it lies in what is mapped. */
static uint32_t *ring_u32(struct rmap *m, uint32_t off)
{
	if ((size_t)off + 4 > m->size || (off & 3))
		return NULL;
	return (uint32_t *)(m->m + off);
}

static uint8_t *ring_slot(struct rmap *m, uint32_t idx)
{
	size_t at;

	if (!m->entries || !m->esz)
		return NULL;
	at = (size_t)m->off.entries + (size_t)(idx & (m->entries - 1)) * m->esz;
	if (at + m->esz > m->size)
		return NULL;
	return m->m + at;
}

#define SQE_MAX 4096

/*
 * One entry for a submission ring of @m, built in @buf: struct kdat_sqe,
 * or struct kdat_sqe_ext in a send ring created so (same front part).
 */
static void sqe_build(struct rmap *m, uint8_t *buf, size_t esz)
{
	struct rng *r = T->r;
	struct kdat_sqe *e = (struct kdat_sqe *)buf;
	struct kdat_sqe_ext *x = (struct kdat_sqe_ext *)buf;
	size_t hdr = m->ext ? sizeof(*x) : sizeof(*e);
	struct kdat_lmr_triplet *iov = m->ext ? x->iov : e->iov;
	uint32_t maxseg, i, num;

	memset(buf, 0, esz);
	if (pct(r, 15)) {		/* garbage */
		for (i = 0; i < esz; i++)
			buf[i] = (uint8_t)rnd(r);
		return;
	}
	maxseg = esz > hdr ? (uint32_t)((esz - hdr) / sizeof(iov[0])) : 0;
	if (m->kind == KDAT_RING_SEND)
		e->op = send_op();
	else
		e->op = KDAT_DTO_RECEIVE;
	e->op = (uint8_t)M32(e->op);
	num = MIN(maxseg, pct(r, 10) ? 0 : 1 + rn(r, 2));
	e->__pad = (uint16_t)M32(0);
	e->completion_flags = M32(pct(r, 80) ? 0 : rn(r, 16));
	e->cookie = rnd(r);
	if (e->op == KDAT_DTO_RDMA_READ || e->op == KDAT_DTO_RDMA_WRITE ||
	    ext_op(e->op))
		fill_remote(&e->remote, m->ia);
	for (i = 0; i < MIN(num, maxseg); i++)
		fill_triplet(&iov[i], m->ia, m->pz);
	/* A plain entry of an extended op is refused: tried too. */
	if (m->ext && (ext_op(e->op) || pct(r, 3)))
		fill_ext(&x->ext, e->op, num ? iov : NULL, &num, &e->remote);
	e->num_segments = (uint8_t)M32(MIN(num, maxseg));
}

static void ring_fault(struct rmap *m)
{
	add(&S->ring_faults, 1);
	m->valid = 0;	/* leave it mapped: what faulted is not ours */
}

static void op_ring_submit(void)
{
	static const unsigned int kinds = 1U << KDAT_RING_SEND |
		1U << KDAT_RING_RECV | 1U << KDAT_RING_SRQ;
	struct rng *r = T->r;
	uint8_t buf[8][SQE_MAX];
	uint32_t *tailp, *headp, *flagsp, tail, head, n, i, newtail;
	volatile uint32_t f = 0;
	struct rmap *m = ring_get(kinds, true);
	size_t esz;

	if (!m)
		return;
	esz = MIN(m->esz, SQE_MAX);
	n = 1 + rn(r, 8);
	for (i = 0; i < n; i++)
		sqe_build(m, buf[i], esz);
	tailp = ring_u32(m, m->off.tail);
	headp = ring_u32(m, m->off.head);
	flagsp = ring_u32(m, m->off.flags);
	if (!tailp || !headp || !flagsp)
		goto out;
	if (sigsetjmp(T->jb, 1)) {
		T->in_ring = 0;
		ring_fault(m);
		goto out;
	}
	T->in_ring = 1;
	tail = *tailp;
	head = __atomic_load_n(headp, __ATOMIC_ACQUIRE);
	if (pct(r, 70) && m->entries) {	/* a well-behaved producer */
		uint32_t used = tail - head;

		n = used >= m->entries ? 0 : MIN(n, m->entries - used);
	}
	for (i = 0; i < n; i++) {
		uint8_t *slot = ring_slot(m, tail + i);

		if (slot)
			memcpy(slot, buf[i], esz);
	}
	newtail = tail + n;
	if (mut() || pct(r, 5)) {
		switch (rn(r, 4)) {
		case 0:
			newtail = tail + m->entries + 1 + rn(r, 1000);
			break;
		case 1:
			newtail = tail - 1 - rn(r, 8);
			break;
		case 2:
			newtail = head;
			break;
		default:
			newtail = (uint32_t)rnd(r);
			break;
		}
	}
	__atomic_store_n(tailp, newtail, __ATOMIC_RELEASE);
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	f = __atomic_load_n(flagsp, __ATOMIC_RELAXED);
	T->in_ring = 0;
out:
	pthread_mutex_unlock(&m->lock);
	if ((f & KDAT_RING_F_NEED_WAKEUP) || pct(r, 10))
		ring_wake(0);
}

static void op_ring_reap(void)
{
	struct rng *r = T->r;
	struct kdat_event ev[64];
	struct rmap *m = ring_get(1U << KDAT_RING_EVD, true);
	uint32_t *headp, *tailp, head, tail, n = 0, i, ia = 0;

	if (!m)
		return;
	headp = ring_u32(m, m->off.head);
	tailp = ring_u32(m, m->off.tail);
	if (!headp || !tailp)
		goto out;
	if (sigsetjmp(T->jb, 1)) {
		T->in_ring = 0;
		ring_fault(m);
		n = 0;
		goto out;
	}
	T->in_ring = 1;
	head = *headp;
	tail = __atomic_load_n(tailp, __ATOMIC_ACQUIRE);
	n = MIN(tail - head, m->entries);
	n = MIN(n, ARRAY_SIZE(ev));
	for (i = 0; i < n; i++) {
		uint8_t *slot = ring_slot(m, head + i);

		if (slot && m->esz >= sizeof(ev[i]))
			memcpy(&ev[i], slot, sizeof(ev[i]));
		else
			memset(&ev[i], 0, sizeof(ev[i]));
	}
	head += n;
	if (mut() || pct(r, 5))
		head = pct(r, 50) ? head - 1 - rn(r, 4) : (uint32_t)rnd(r);
	__atomic_store_n(headp, head, __ATOMIC_RELEASE);
	T->in_ring = 0;
	ia = m->ia;
out:
	pthread_mutex_unlock(&m->lock);
	harvest(ev, n, ia);
}

/* Random stores into a ring's header and entries (the kernel's own too). */
static void op_ring_scribble(void)
{
	struct rng *r = T->r;
	struct rmap *m = ring_get(~0U, true);
	uint32_t offs[7], n, *p;

	if (!m)
		return;
	offs[0] = m->off.head;
	offs[1] = m->off.tail;
	offs[2] = m->off.flags;
	offs[3] = m->off.ring_mask;
	offs[4] = m->off.ring_entries;
	offs[5] = m->off.completed;
	offs[6] = m->off.ep_state;
	if (sigsetjmp(T->jb, 1)) {
		T->in_ring = 0;
		ring_fault(m);
		goto out;
	}
	T->in_ring = 1;
	for (n = 1 + rn(r, 4); n; n--) {
		if (pct(r, 60)) {
			p = ring_u32(m, offs[rn(r, 7)]);
			if (p)
				__atomic_store_n(p, (uint32_t)rboundary(r),
						 __ATOMIC_RELEASE);
		} else if (m->size > 8) {
			size_t at = rn(r, m->size - 8) & ~7UL;
			uint64_t v = rnd(r);

			memcpy(m->m + at, &v, 8);
		}
	}
	T->in_ring = 0;
out:
	pthread_mutex_unlock(&m->lock);
	if (pct(r, 50))
		ring_wake(0);
}

static void op_ring_munmap(void)
{
	struct rmap *m = ring_get(~0U, false);

	if (!m)
		return;
	if (m->size > PAGE && pct(T->r, 25)) {	/* keep the first page */
		munmap(m->m + PAGE, m->size - PAGE);
		m->size = PAGE;
	} else {
		munmap(m->m, m->size);
		m->valid = 0;
	}
	pthread_mutex_unlock(&m->lock);
}

/* An LMR's memory slot replaced (the pinned pages stay with the MR). */
static void op_buf_remap(void)
{
	struct rng *r = T->r;
	uint32_t i = rn(r, NBUF);
	uint8_t *b = g_bufs + i * BUFSZ;
	int prot = pct(r, 75) ? PROT_READ | PROT_WRITE : PROT_NONE;

	if (pct(r, 20)) {
		madvise(b, BUFSZ, MADV_DONTNEED);
		return;
	}
	if (mmap(b, BUFSZ, prot, MAP_FIXED | MAP_ANONYMOUS |
		 (pct(r, 30) ? MAP_SHARED : MAP_PRIVATE), -1, 0) != MAP_FAILED)
		g_buf_mapped[i] = prot != PROT_NONE;
}

/* Unknown commands, wrong types and directions, random arguments. */
static void op_bad_ioctl(void)
{
	static const unsigned int types[] = { KDAT_TYPE, KDAT_TYPE, KDAT_TYPE,
					      0xDB, 0xD9 };
	struct rng *r = T->r;
	unsigned int nr = pct(r, 60) ? KDAT_CMD_BASE + rn(r, 40) : rn(r, 256);
	unsigned int dir = pct(r, 50) ? 0 : rn(r, 4);
	unsigned long cmd = _IOC(dir, types[rn(r, ARRAY_SIZE(types))], nr,
				 rn(r, 1 << 14));
	uint8_t *a = T->arg;
	uint32_t i, n = rn(r, 512);
	void *p = a;
	int ret;

	for (i = 0; i < n; i++)
		a[i] = (uint8_t)rnd(r);
	*(uint32_t *)a = pct(r, 50) ? rn(r, 512) : (uint32_t)rboundary(r);
	if (pct(r, 10))
		p = (void *)(uintptr_t)mptr(NULL);
	arm_intr(150);
	ret = ioctl(cur_fd(), cmd, p) ? errno : 0;
	disarm_intr();
	count_err(ret);
	memset(a, 0, n > 4 ? n : 4);
}

/* ---- a connected pair, built with valid calls ----------------------- */

static uint32_t mk(unsigned long cmd, void *s, size_t sz, uint32_t *out)
{
	return kio(cmd, s, sz, sz) ? 0 : *out;
}

static uint32_t mk_evd(uint32_t ia, uint32_t flags, uint32_t qlen)
{
	struct kdat_evd_create c = { .ia_handle = ia, .qlen = qlen,
				     .evd_flags = flags };
	uint32_t h = mk(KDAT_IOCTL_EVD_CREATE, &c, sizeof(c),
			&c.out_evd_handle);

	h_add(H_EVD, h, ia, flags, 0, 0, 0, 0);
	return h;
}

static uint32_t mk_ep(uint32_t ia, uint32_t pz, uint32_t dto, uint32_t conn)
{
	struct kdat_ep_create c = {
		.pz_handle = pz, .recv_evd_handle = dto,
		.request_evd_handle = dto, .connect_evd_handle = conn,
		.attr = { 8, 8, 2, 2, 1, 1, 0, 0 },
	};
	uint32_t h = mk(KDAT_IOCTL_EP_CREATE, &c, sizeof(c), &c.out_ep_handle);

	h_add(H_EP, h, ia, pz, 0, 0, 0, 0);
	return h;
}

static uint32_t mk_ud_ep(uint32_t ia, uint32_t pz, uint32_t dto,
			 uint32_t conn)
{
	struct kdat_ep_create c = {
		.pz_handle = pz, .recv_evd_handle = dto,
		.request_evd_handle = dto, .connect_evd_handle = conn,
		.flags = KDAT_EP_CREATE_UD, .attr = { 8, 8, 2, 2, 0, 0, 0, 0 },
	};
	uint32_t h = mk(KDAT_IOCTL_EP_CREATE, &c, sizeof(c), &c.out_ep_handle);

	h_add(H_EP, h, ia, pz, 0, 0, 0, 0);
	return h;
}

static int wait1(uint32_t evd, struct kdat_event *ev, uint64_t us)
{
	struct kdat_evd_wait c = { .evd_handle = evd, .threshold = 1,
				   .max_events = 1, .timeout_us = us,
				   .events = (uintptr_t)ev };
	int ret;

	arm_intr((unsigned int)(us / 1000) + 1000);
	ret = kio(KDAT_IOCTL_EVD_WAIT, &c, sizeof(c), sizeof(c));
	disarm_intr();
	return ret ?: (c.out_count ? 0 : EAGAIN);
}

static int post1(uint32_t ep, uint32_t op, uint32_t lctx, uint8_t *addr,
		 uint64_t len)
{
	struct kdat_lmr_triplet t = { .lmr_context = lctx,
				      .virtual_address = (uintptr_t)addr,
				      .segment_length = len };
	struct kdat_post c = { .ep_handle = ep, .op = op, .num_segments = 1,
			       .iov = (uintptr_t)&t, .cookie = 42 };

	return kio(KDAT_IOCTL_POST, &c, sizeof(c), sizeof(c));
}

/*
 * An IA with two EPs, one connected to the other through a PSP of the IA,
 * and a few messages; everything goes into the handle table for the
 * random ops to work on (connected EPs are hard to reach at random).
 */
static void op_connect_pair(void)
{
	struct rng *r = T->r;
	struct kdat_ia_open io = { .port_num = g_port_num };
	struct kdat_pz_create pc = { 0 };
	struct kdat_lmr_create lc = { 0 };
	struct kdat_psp_create ps = { 0 };
	struct kdat_ep_connect cc = { 0 };
	struct kdat_cr_reply ca = { 0 };
	struct kdat_event ev;
	uint32_t ia, pz, dto, conn, cr, ep1, ep2, psp = 0, lctx, i, slot;
	uint32_t ah = 0;
	bool ud = pct(r, 35);	/* UD EPs, their AHs and datagrams */
	uint8_t *buf;

	if (!g_have_port)
		return;
	if (h_count(H_IA) >= h_cap[H_IA] && at_cap(H_IA))
		return;
	T->nomut = true;
	strcpy(io.name, g_port_name);
	ia = mk(KDAT_IOCTL_IA_OPEN, &io, sizeof(io), &io.out_ia_handle);
	if (!ia)
		goto out;
	h_add(H_IA, ia, ia, 0, 0, 0, 0, 0);
	pc.ia_handle = ia;
	pz = mk(KDAT_IOCTL_PZ_CREATE, &pc, sizeof(pc), &pc.out_pz_handle);
	h_add(H_PZ, pz, ia, 0, 0, 0, 0, 0);
	dto = mk_evd(ia, KDAT_EVD_DTO, 64);
	conn = mk_evd(ia, KDAT_EVD_CONNECTION, 16);
	cr = mk_evd(ia, KDAT_EVD_CR, 16);
	ep1 = ud ? mk_ud_ep(ia, pz, dto, conn) : mk_ep(ia, pz, dto, conn);
	ep2 = ud ? mk_ud_ep(ia, pz, dto, conn) : mk_ep(ia, pz, dto, conn);
	if (!pz || !dto || !conn || !cr || !ep1 || !ep2)
		goto out;
	slot = rn(r, NBUF);
	buf = g_bufs + slot * BUFSZ;
	lc = (struct kdat_lmr_create){ .pz_handle = pz,
				       .addr = (uintptr_t)buf,
				       .length = BUFSZ,
				       .mem_priv = KDAT_MEM_PRIV_ALL };
	lctx = 0;
	if (!kio(KDAT_IOCTL_LMR_CREATE, &lc, sizeof(lc), sizeof(lc))) {
		lctx = lc.out_lmr_context;
		h_add(H_LMR, lc.out_lmr_handle, ia, pz, lctx,
		      lc.out_rmr_context, lc.addr, lc.length);
	}
	for (i = 0; i < 4 && !psp; i++) {
		ps = (struct kdat_psp_create){ .ia_handle = ia,
					       .evd_handle = cr };
		ps.conn_qual = g_qual_base + 128 + rn(r, 64);
		psp = mk(KDAT_IOCTL_PSP_CREATE, &ps, sizeof(ps),
			 &ps.out_psp_handle);
	}
	if (!psp)
		goto out;
	h_add(H_PSP, psp, ia, (uint32_t)ps.conn_qual, 0, 0, 0, 0);
	if (lctx)		/* receives before the connection */
		for (i = 0; i < 4; i++)
			post1(ep2, KDAT_DTO_RECEIVE, lctx, buf + i * 256, 256);
	cc.ep_handle = ep1;
	cc.remote.family = AF_INET;
	memcpy(cc.remote.addr, g_ip4, 4);
	cc.conn_qual = ps.conn_qual;
	cc.timeout_us = 2000000;
	if (kio(KDAT_IOCTL_EP_CONNECT, &cc, sizeof(cc), sizeof(cc)))
		goto out;
	if (wait1(cr, &ev, 3000000) ||
	    ev.event_number != (ud ? KDAT_EVENT_UD_CONNECTION_REQUEST :
				     KDAT_EVENT_CONNECTION_REQUEST))
		goto out;
	ca.cr_handle = ev.cr_handle;
	ca.ep_handle = ep2;
	if (kio(KDAT_IOCTL_CR_ACCEPT, &ca, sizeof(ca), sizeof(ca)))
		goto out;
	/* Both sides' ESTABLISHED (or whatever came instead). */
	for (i = 0; i < 2; i++) {
		if (wait1(conn, &ev, 3000000))
			break;
		harvest(&ev, 1, ia);
		if (ev.event_number == KDAT_EVENT_UD_ESTABLISHED &&
		    ev.handle == ep1)
			ah = ev.ah_handle;
	}
	if (lctx && !ud)
		for (i = 0; i < 3; i++)
			post1(ep1, KDAT_DTO_SEND, lctx,
			      buf + BUFSZ / 2 + i * 64, 64);
	for (i = 0; lctx && ah && i < 3; i++) {
		struct kdat_lmr_triplet t = {
			.lmr_context = lctx,
			.virtual_address = (uintptr_t)buf + BUFSZ / 2 + i * 64,
			.segment_length = 64,
		};
		struct kdat_post c = {
			.ep_handle = ep1, .op = KDAT_DTO_SEND_UD,
			.num_segments = 1, .iov = (uintptr_t)&t, .cookie = 43,
			.ext = { .ah_handle = ah },
		};

		kio(KDAT_IOCTL_POST, &c, sizeof(c), sizeof(c));
	}
	if (pct(r, 50))
		destroy_h(psp, 0);
out:
	T->nomut = false;
}

/* ---- process-level operations --------------------------------------- */

static void exec_op(unsigned int kind, uint64_t seed);
static unsigned int pick_kind(struct rng *r, bool no_proc);

/* The same random op on the process's other open file. */
static void op_foreign_file(void)
{
	unsigned int kind = pick_kind(T->r, true);

	if (kind == OP_FOREIGN_FILE || kind == OP_CONNECT_PAIR)
		kind = OP_IA_OPEN;
	T->file = 2;
	exec_op(kind, rnd(T->r));
	T->file = 1;
}

/* Replace an open file under the running threads (close + reopen). */
static void op_reopen(void)
{
	struct rng *r = T->r;
	int which = pct(r, 70) ? 1 : 2;
	int nfd = open(g_dev, O_RDWR | O_CLOEXEC);

	if (nfd < 0)
		return;
	dup3(nfd, which == 1 ? g_fd : g_fd2, O_CLOEXEC);
	close(nfd);
	h_kill_if(m_file, (uint32_t)which);
	add(&S->reopens, 1);
}

static void child_main(void)
{
	struct rng *r = T->r;
	unsigned int i, n;
	int nfd;

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	T->in_child = true;
	T->cover = NULL;
	T->armed = false;
	thread_timer(T);
	/* Other threads held these at fork time, maybe. */
	pthread_mutex_init(&h_lock, NULL);
	if (pct(r, 40)) {	/* a file of its own; else the parent's */
		nfd = open(g_dev, O_RDWR | O_CLOEXEC);
		if (nfd >= 0) {
			dup3(nfd, g_fd, O_CLOEXEC);
			close(nfd);
			h_kill_if(m_file, 1);
		}
	}
	n = 1 + rn(r, 20);
	for (i = 0; i < n && !stopping(); i++)
		exec_op(pick_kind(r, true), rnd(r));
	_exit(0);
}

/* A child that does a few ops and exits, or is killed at any moment. */
static void op_fork_child(void)
{
	struct rng *r = T->r;
	uint64_t t0;
	int status = 0;
	pid_t pid;

	if (T->in_child)
		return;
	pid = fork();
	if (pid < 0)
		return;
	if (!pid)
		child_main();
	add(&S->children, 1);
	usleep(rn(r, 100000));
	if (pct(r, 50)) {
		kill(pid, SIGKILL);
		add(&S->child_kills, 1);
	}
	t0 = now_ns();
	while (waitpid(pid, &status, WNOHANG) == 0) {
		if (now_ns() - t0 > 15000000000ULL) {
			kill(pid, SIGKILL);
			waitpid(pid, &status, 0);
			break;
		}
		usleep(5000);
	}
	if ((WIFSIGNALED(status) && WTERMSIG(status) != SIGKILL) ||
	    (WIFEXITED(status) && WEXITSTATUS(status))) {
		add(&S->child_bad, 1);
		bad("forked child %d: status %#x (signal %d)", (int)pid,
		    status, WIFSIGNALED(status) ? WTERMSIG(status) : 0);
	}
}

/* ---- the op table --------------------------------------------------- */

/* ---- race stretching (issue 44) -------------------------------------- */

/* Answer each held READ of the slow file after a random delay. */
static void releaser(uint64_t seed)
{
	struct rng r = { .s = seed };
	char c;

	for (;;) {
		if (read(g_sf.reads, &c, 1) != 1)
			_exit(0);
		usleep(pct(&r, 3) ? 300000 : rn(&r, 30000));
		if (write(g_sf.release, &c, 1) != 1)
			_exit(0);
	}
}

static void slow_setup(void)
{
	if (geteuid() || getenv("KDAT_FUZZ_NO_SLOW"))
		return;
	if (system("modprobe fuse >/dev/null 2>&1")) {
		/* Built in, or absent: /dev/fuse says which. */
	}
	if (access("/dev/fuse", F_OK))
		return;
	if (slow_fuse_start(&g_sf, BUFSZ)) {
		printf("# %s%s\n", g_sf.skip ? "SKIP: " : "", g_sf.why);
		exit(g_sf.skip ? KSFT_SKIP : KSFT_FAIL);
	}
	g_releaser = fork();
	if (!g_releaser)
		releaser(mix64(g_seed ^ 0x51e3));
	g_slow = g_releaser > 0;
}

static void slow_stop(void)
{
	if (!g_slow)
		return;
	slow_fuse_stop(&g_sf);
	kill(g_releaser, SIGKILL);
	waitpid(g_releaser, NULL, 0);
}

/*
 * A buffer slot becomes a mapping of the slow file (its page cache
 * dropped first, so the faults go to the server again): LMRs, RMR binds,
 * posts and ioctl arguments that land there wait in faults.
 */
static void op_slow_map(void)
{
	struct rng *r = T->r;
	uint32_t i = rn(r, NBUF);
	uint8_t *b = g_bufs + i * BUFSZ;
	int prot = PROT_READ | (pct(r, 50) ? PROT_WRITE : 0);

	if (!g_slow)
		return;
	if (g_slow_fd < 0)
		g_slow_fd = open(g_sf.path, O_RDONLY | O_CLOEXEC);
	if (g_slow_fd < 0)
		return;
	posix_fadvise(g_slow_fd, 0, 0, POSIX_FADV_DONTNEED);
	if (mmap(b, BUFSZ, prot, MAP_FIXED | MAP_PRIVATE, g_slow_fd, 0) !=
	    MAP_FAILED) {
		g_buf_mapped[i] = 1;
		add(&S->slow_maps, 1);
	}
}

/* Connects to where nobody answers from one EP, past the per-EP bound. */
static void op_ud_flood(void)
{
	struct rng *r = T->r;
	struct kdat_ep_connect c = { .ep_handle = ph(H_EP, 0, NULL) };
	unsigned int i, n = 1 + rn(r, 2 * KDAT_UD_MAX_CONNS);

	c.remote.family = AF_INET;
	memcpy(c.remote.addr, "\x0a\x63\x63\x01", 4);
	c.timeout_us = 1000 * (1 + rn(r, 3000));
	for (i = 0; i < n && !stopping(); i++) {
		c.remote.addr[3] = (uint8_t)rnd(r);
		c.conn_qual = g_qual_base + rn(r, 128);
		KIO(KDAT_IOCTL_EP_CONNECT, c, remote);
	}
}

/* An SRQ shrunk, given an EP, grown back: the commitments must follow. */
static void op_srq_cycle(void)
{
	struct rng *r = T->r;
	struct kdat_srq_resize z = { .srq_handle = ph(H_SRQ, 0, NULL) };
	struct hent srq;

	if (h_pick(H_SRQ, 0, 0, 0, &srq))
		z.srq_handle = srq.h;
	z.max_recv_dtos = 1 + rn(r, 4);
	KIO(KDAT_IOCTL_SRQ_RESIZE, z, __reserved);
	op_ep_create();
	z.max_recv_dtos = 16 + rn(r, 4096);
	KIO(KDAT_IOCTL_SRQ_RESIZE, z, __reserved);
}

struct opdef {
	const char *name;
	void (*fn)(void);
	int proc;
};

static const struct opdef ops[NOPS] = {
	[OP_QUERY] = { "QUERY", op_query, 0 },
	[OP_DEVICE_LIST] = { "DEVICE_LIST", op_device_list, 0 },
	[OP_IA_OPEN] = { "IA_OPEN", op_ia_open, 0 },
	[OP_IA_QUERY] = { "IA_QUERY", op_ia_query, 0 },
	[OP_DESTROY] = { "DESTROY", op_destroy, 0 },
	[OP_DESTROY_IA_ALL] = { "DESTROY_IA_ALL", op_destroy_ia_all, 0 },
	[OP_PZ_CREATE] = { "PZ_CREATE", op_pz_create, 0 },
	[OP_LMR_CREATE] = { "LMR_CREATE", op_lmr_create, 0 },
	[OP_RMR_CREATE] = { "RMR_CREATE", op_rmr_create, 0 },
	[OP_RMR_BIND] = { "RMR_BIND", op_rmr_bind, 0 },
	[OP_EVD_CREATE] = { "EVD_CREATE", op_evd_create, 0 },
	[OP_EVD_WAIT] = { "EVD_WAIT", op_evd_wait, 0 },
	[OP_EVD_DEQUEUE] = { "EVD_DEQUEUE", op_evd_dequeue, 0 },
	[OP_EVD_MODIFY] = { "EVD_MODIFY", op_evd_modify, 0 },
	[OP_EVD_MODIFY_CNO] = { "EVD_MODIFY_CNO", op_evd_modify_cno, 0 },
	[OP_EVD_POST_SE] = { "EVD_POST_SE", op_evd_post_se, 0 },
	[OP_CNO_CREATE] = { "CNO_CREATE", op_cno_create, 0 },
	[OP_CNO_WAIT] = { "CNO_WAIT", op_cno_wait, 0 },
	[OP_EP_CREATE] = { "EP_CREATE", op_ep_create, 0 },
	[OP_EP_QUERY] = { "EP_QUERY", op_ep_query, 0 },
	[OP_EP_CONNECT] = { "EP_CONNECT", op_ep_connect, 0 },
	[OP_EP_DISCONNECT] = { "EP_DISCONNECT", op_ep_disconnect, 0 },
	[OP_EP_RESET] = { "EP_RESET", op_ep_reset, 0 },
	[OP_EP_MODIFY] = { "EP_MODIFY", op_ep_modify, 0 },
	[OP_PSP_CREATE] = { "PSP_CREATE", op_psp_create, 0 },
	[OP_RSP_CREATE] = { "RSP_CREATE", op_rsp_create, 0 },
	[OP_CR_QUERY] = { "CR_QUERY", op_cr_query, 0 },
	[OP_CR_ACCEPT] = { "CR_ACCEPT", op_cr_accept, 0 },
	[OP_CR_REJECT] = { "CR_REJECT", op_cr_reject, 0 },
	[OP_POST] = { "POST", op_post, 0 },
	[OP_SRQ_CREATE] = { "SRQ_CREATE", op_srq_create, 0 },
	[OP_SRQ_SET_LW] = { "SRQ_SET_LW", op_srq_set_lw, 0 },
	[OP_SRQ_RESIZE] = { "SRQ_RESIZE", op_srq_resize, 0 },
	[OP_RING_CREATE] = { "RING_CREATE", op_ring_create, 0 },
	[OP_RING_SUBMIT] = { "RING_SUBMIT", op_ring_submit, 0 },
	[OP_RING_REAP] = { "RING_REAP", op_ring_reap, 0 },
	[OP_RING_SCRIBBLE] = { "RING_SCRIBBLE", op_ring_scribble, 0 },
	[OP_RING_WAKE] = { "RING_WAKE", op_ring_wake, 0 },
	[OP_POLLER_SET] = { "POLLER_SET", op_poller_set, 0 },
	[OP_RING_MUNMAP] = { "RING_MUNMAP", op_ring_munmap, 0 },
	[OP_BUF_REMAP] = { "BUF_REMAP", op_buf_remap, 0 },
	[OP_BAD_IOCTL] = { "BAD_IOCTL", op_bad_ioctl, 0 },
	[OP_FOREIGN_FILE] = { "FOREIGN_FILE", op_foreign_file, 0 },
	[OP_CONNECT_PAIR] = { "CONNECT_PAIR", op_connect_pair, 0 },
	[OP_FORK_CHILD] = { "FORK_CHILD", op_fork_child, 1 },
	[OP_REOPEN] = { "REOPEN", op_reopen, 1 },
	[OP_AH_QUERY] = { "AH_QUERY", op_ah_query, 0 },
	[OP_CNO_AGENT] = { "CNO_AGENT", op_cno_agent, 0 },
	[OP_SLOW_MAP] = { "SLOW_MAP", op_slow_map, 0 },
	[OP_UD_FLOOD] = { "UD_FLOOD", op_ud_flood, 0 },
	[OP_SRQ_CYCLE] = { "SRQ_CYCLE", op_srq_cycle, 0 },
};

static unsigned int op_weight[NOPS] = {
#define X(name, w, f) [OP_##name] = w,
	OPLIST
#undef X
};

static unsigned int weight_sum[2];

static unsigned int pick_kind(struct rng *r, bool no_proc)
{
	unsigned int x = rn(r, weight_sum[no_proc]), k;

	for (k = 0; k < NOPS; k++) {
		if (no_proc && ops[k].proc)
			continue;
		if (x < op_weight[k])
			return k;
		x -= op_weight[k];
	}
	return OP_QUERY;
}

/* ---- running ops: coverage, history, corpus ------------------------- */

static void corpus_add(const struct thr *t)
{
	uint64_t i = __atomic_fetch_add(&S->corpus_next, 1, __ATOMIC_RELAXED);
	struct centry *c = &S->corpus[i % CORPUS_MAX];
	unsigned int k;

	/* Unlocked: a torn entry is only a few random ops. */
	c->n = t->hn;
	for (k = 0; k < t->hn; k++)
		c->op[k] = t->hist[(t->hpos + HIST - t->hn + k) % HIST];
	if (i < CORPUS_MAX)
		__atomic_fetch_add(&S->corpus_n, 1, __ATOMIC_RELAXED);
	add(&S->corpus_adds, 1);
}

static void exec_op(unsigned int kind, uint64_t seed)
{
	struct thr *t = T;
	struct rng r = { seed }, *saved = t->r;
	unsigned int saved_mutp = t->mutp, newpcs = 0;

	if (kind >= NOPS)
		kind = OP_QUERY;
	t->r = &r;
	t->mutp = pct(&r, 55) ? 0 : 2 + rn(&r, 20);
	if (t->cover)
		__atomic_store_n(&t->cover[0], 0, __ATOMIC_RELAXED);
	ops[kind].fn();
	if (t->cover) {
		uint64_t n = __atomic_load_n(&t->cover[0], __ATOMIC_RELAXED), i;

		n = MIN(n, COVER_WORDS - 1);
		for (i = 0; i < n; i++) {
			uint64_t pc = t->cover[i + 1];

			if (pc < S->pc_lo || pc >= S->pc_hi)
				add(&S->pcs_outside, 1);
			else if (pc_insert(pc))
				newpcs++;
		}
	}
	add(&S->opn[kind], 1);
	t->hist[t->hpos] = (struct opdesc){ .kind = kind, .seed = seed };
	t->hpos = (t->hpos + 1) % HIST;
	if (t->hn < HIST)
		t->hn++;
	if (newpcs && !t->in_child)
		corpus_add(t);
	if (S->budget &&
	    __atomic_add_fetch(&S->ops, 1, __ATOMIC_RELAXED) >= S->budget)
		__atomic_store_n(&S->stop, 1, __ATOMIC_RELAXED);
	else if (!S->budget)
		add(&S->ops, 1);
	t->r = saved;
	t->mutp = saved_mutp;
}

/* Replay a corpus entry, mutated. */
static void replay(struct thr *t)
{
	struct rng *r = &t->rng;
	uint32_t n = __atomic_load_n(&S->corpus_n, __ATOMIC_RELAXED), k, i;
	struct centry c = S->corpus[rn(r, n)];
	struct opdesc tmp;

	c.n = MIN(c.n, HIST);
	for (k = 1 + rn(r, 3); k; k--) {
		i = c.n ? rn(r, c.n) : 0;
		switch (rn(r, 6)) {
		case 0:		/* other arguments */
			if (c.n)
				c.op[i].seed = rnd(r);
			break;
		case 1:		/* another op */
			if (c.n)
				c.op[i].kind = pick_kind(r, false);
			break;
		case 2:		/* remove one */
			if (c.n > 1) {
				memmove(&c.op[i], &c.op[i + 1],
					(c.n - i - 1) * sizeof(c.op[0]));
				c.n--;
			}
			break;
		case 3:		/* insert one */
			if (c.n < HIST) {
				memmove(&c.op[i + 1], &c.op[i],
					(c.n - i) * sizeof(c.op[0]));
				c.op[i] = (struct opdesc){ pick_kind(r, false),
							   0, rnd(r) };
				c.n++;
			}
			break;
		case 4:		/* swap two */
			if (c.n > 1) {
				uint32_t j = rn(r, c.n);

				tmp = c.op[i];
				c.op[i] = c.op[j];
				c.op[j] = tmp;
			}
			break;
		default: {	/* splice with another entry */
			struct centry d = S->corpus[rn(r, n)];
			uint32_t from = MIN(d.n, HIST), j;

			for (j = i; j < HIST && j - i < from; j++)
				c.op[j] = d.op[j - i];
			c.n = MAX(c.n, j);
			break;
		}
		}
	}
	add(&S->corpus_replays, 1);
	for (i = 0; i < c.n && !stopping(); i++)
		exec_op(c.op[i].kind % NOPS, c.op[i].seed);
}

/* ---- threads and workers -------------------------------------------- */

static void on_fault(int sig, siginfo_t *si, void *uc)
{
	(void)si;
	(void)uc;
	if (T && T->in_ring)
		siglongjmp(T->jb, 1);
	signal(sig, SIG_DFL);	/* ours: crash for real */
}

static void on_usr1(int sig)
{
	(void)sig;
}

static void kcov_start(struct thr *t)
{
	void *m;

	t->kcov_fd = -1;
	if (!g_kcov)
		return;
	t->kcov_fd = open(KCOV_PATH, O_RDWR | O_CLOEXEC);
	if (t->kcov_fd < 0)
		return;
	if (ioctl(t->kcov_fd, KCOV_INIT_TRACE, (unsigned long)COVER_WORDS))
		goto fail;
	m = mmap(NULL, COVER_WORDS * 8, PROT_READ | PROT_WRITE, MAP_SHARED,
		 t->kcov_fd, 0);
	if (m == MAP_FAILED)
		goto fail;
	if (ioctl(t->kcov_fd, KCOV_ENABLE, KCOV_TRACE_PC)) {
		munmap(m, COVER_WORDS * 8);
		goto fail;
	}
	t->cover = m;
	add(&S->kcov_threads, 1);
	return;
fail:
	close(t->kcov_fd);
	t->kcov_fd = -1;
}

static void *thread_main(void *arg)
{
	struct thr *t = arg;

	T = t;
	thread_timer(t);
	kcov_start(t);
	while (!stopping()) {
		if (__atomic_load_n(&S->corpus_n, __ATOMIC_RELAXED) &&
		    pct(&t->rng, 15))
			replay(t);
		else
			exec_op(pick_kind(&t->rng, false), rnd(&t->rng));
	}
	if (t->cover)
		ioctl(t->kcov_fd, KCOV_DISABLE, 0);
	return NULL;
}

static bool find_port(int fd, char *name, uint32_t *port)
{
	const char *want = getenv("KDAT_TEST_DEV");
	const char *wport = getenv("KDAT_TEST_PORT");
	struct kdat_port_info p[16];
	struct kdat_device_list c = { .size = sizeof(c),
				      .entry_size = sizeof(p[0]),
				      .num_entries = 16,
				      .entries = (uintptr_t)p };
	uint32_t i, n;

	if (ioctl(fd, KDAT_IOCTL_DEVICE_LIST, &c) && errno != EMSGSIZE)
		return false;
	n = MIN(c.num_entries, 16);
	for (i = 0; i < n; i++) {
		if (want && strcmp(p[i].name, want))
			continue;
		if (want && wport && p[i].port_num != strtoul(wport, NULL, 0))
			continue;
		break;
	}
	if (i == n)
		i = 0;		/* not the one asked for: the first */
	if (!n)
		return false;
	snprintf(name, KDAT_NAME_MAX, "%s", p[i].name);
	*port = p[i].port_num;
	return true;
}

static void *map_or_die(size_t len)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED) {
		bad("worker %d: mmap: %s", (int)getpid(), strerror(errno));
		_exit(KSFT_FAIL);
	}
	return p;
}

static void worker(int slot, unsigned int gen, int nthreads)
{
	uint64_t base = mix64(g_seed ^ mix64(((uint64_t)slot << 32 | gen) + 1));
	struct rng wr = { base };
	struct sigaction sa;
	pthread_attr_t attr;
	pthread_t *th;
	struct thr *ts;
	struct thr main_t;
	int i;

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	/*
	 * No stdio: a worker stuck in the kernel for good must not hold the
	 * supervisor's stdout (a pipe to tee would never see its end).
	 */
	i = open("/dev/null", O_RDWR);
	if (i >= 0) {
		dup2(i, 0);
		dup2(i, 1);
		dup2(i, 2);
		if (i > 2)
			close(i);
	}
	memset(&main_t, 0, sizeof(main_t));
	main_t.rng.s = base;
	main_t.r = &main_t.rng;
	main_t.file = 1;
	T = &main_t;

	g_fd = open(g_dev, O_RDWR | O_CLOEXEC);
	g_fd2 = open(g_dev, O_RDWR | O_CLOEXEC);
	if (g_fd < 0 || g_fd2 < 0)
		_exit(KSFT_SKIP);
	g_have_port = find_port(g_fd, g_port_name, &g_port_num);
	g_qual_base = 20000 + rn(&wr, 300) * 128;
	g_bufs = map_or_die(NBUF * BUFSZ);
	g_hole = mmap(NULL, HOLESZ, PROT_NONE,
		      MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (g_hole == MAP_FAILED)
		_exit(KSFT_FAIL);
	for (i = 0; i < NBUF; i++)
		g_buf_mapped[i] = 1;
	for (i = 0; i < NMBLK; i++) {
		g_mblk[i] = malloc(MBLKSZ);	/* LMR memory only, never freed */
		if (!g_mblk[i])
			_exit(KSFT_FAIL);
		memset(g_mblk[i], 0, MBLKSZ);
	}
	for (i = 0; i < NRMAP; i++)
		pthread_mutex_init(&g_rm[i].lock, NULL);

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_fault;
	sa.sa_flags = SA_SIGINFO | SA_NODEFER;
	sigaction(SIGSEGV, &sa, NULL);
	sigaction(SIGBUS, &sa, NULL);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_usr1;	/* no SA_RESTART: waits see EINTR */
	sigaction(SIGUSR1, &sa, NULL);

	ts = calloc((size_t)nthreads, sizeof(*ts));
	th = calloc((size_t)nthreads, sizeof(*th));
	if (!ts || !th)
		_exit(KSFT_FAIL);
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, 1 << 20);
	for (i = 0; i < nthreads; i++) {
		struct thr *t = &ts[i];
		/* guard | arg area | guard | out area | guard */
		uint8_t *m = map_or_die(ARG_AREA + OUT_AREA + 3 * PAGE);

		t->idx = i;
		t->rng.s = mix64(base + 0x1000ULL * (uint64_t)(i + 1));
		t->r = &t->rng;
		t->file = 1;
		t->arg = m + PAGE;
		t->arg_guard = t->arg + ARG_AREA;
		t->out = t->arg_guard + PAGE;
		t->out_guard = t->out + OUT_AREA;
		mprotect(m, PAGE, PROT_NONE);
		mprotect(t->arg_guard, PAGE, PROT_NONE);
		mprotect(t->out_guard, PAGE, PROT_NONE);
		if (pthread_create(&th[i], &attr, thread_main, t))
			_exit(KSFT_FAIL);
	}
	for (i = 0; i < nthreads; i++)
		pthread_join(th[i], NULL);
	/* Half the time tidy up, else leave it all to the file's release. */
	if (pct(&wr, 50)) {
		struct hent e;

		main_t.arg = ts[0].arg;
		main_t.arg_guard = ts[0].arg_guard;
		main_t.nomut = true;
		while (h_pick(H_IA, 0, 0, 0, &e) && e.file == 1)
			if (destroy_h(e.h, KDAT_DESTROY_IA_ALL)) {
				h_kill_if(m_handle, e.h);
			}
	}
	_exit(0);
}

/* ---- the supervisor ------------------------------------------------- */

#define MAXPROC 64

struct wslot {
	pid_t pid;
	unsigned int gen;
	bool killed;		/* by us */
};

static struct wslot g_w[MAXPROC];
static int g_nproc = 2, g_nthreads = 4, g_quiet;
static unsigned int g_secs = 60;
static uint64_t g_t0;

static void say(const char *s)
{
	ssize_t n = write(1, s, strlen(s));

	(void)n;
}

static void on_alarm(int sig)
{
	int i;

	(void)sig;
	for (i = 0; i < g_nproc; i++)
		if (g_w[i].pid > 0)
			kill(g_w[i].pid, SIGKILL);
	say("# watchdog: the run did not end in time (a process stuck in "
	    "the kernel?)\nnot ok 1 fuzz: watchdog fired\n");
	_exit(KSFT_FAIL);
}

static pid_t start_worker(int slot)
{
	pid_t pid;

	fflush(stdout);
	fflush(stderr);
	pid = fork();
	if (pid == 0)
		worker(slot, g_w[slot].gen, g_nthreads);
	g_w[slot].pid = pid;
	g_w[slot].killed = false;
	return pid;
}

/* A worker ended: was it expected? */
static void reaped(int slot, int status)
{
	struct wslot *w = &g_w[slot];

	if (WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL && w->killed)
		return;
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
		return;
	bad("worker %d (slot %d gen %u): %s %d", (int)w->pid, slot, w->gen,
	    WIFSIGNALED(status) ? "killed by signal" : "exit status",
	    WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
}

/* ---- what a stuck process is doing --------------------------------- */

static void print_file(const char *path, const char *prefix, int max)
{
	char line[256];
	FILE *f = fopen(path, "r");

	while (f && max-- > 0 && fgets(line, sizeof(line), f))
		printf("%s%s", prefix, line);
	if (f)
		fclose(f);
}

/* Every thread of @pid: state, wchan, kernel stack (root only). */
static void dump_task(pid_t pid, const char *what)
{
	char path[320], stat[512], wchan[64];
	struct dirent *de;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	d = opendir(path);
	while (d && (de = readdir(d))) {
		const char *st;
		FILE *f;

		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/%d/task/%s/stat",
			 (int)pid, de->d_name);
		f = fopen(path, "r");
		stat[0] = 0;
		if (f && !fgets(stat, sizeof(stat), f))
			stat[0] = 0;
		if (f)
			fclose(f);
		st = strrchr(stat, ')');
		snprintf(path, sizeof(path), "/proc/%d/task/%s/wchan",
			 (int)pid, de->d_name);
		f = fopen(path, "r");
		wchan[0] = 0;
		if (f && !fgets(wchan, sizeof(wchan), f))
			wchan[0] = 0;
		if (f)
			fclose(f);
		printf("# %s %d task %s: state %c wchan %s\n", what, (int)pid,
		       de->d_name, st && st[1] ? st[2] : '?',
		       wchan[0] ? wchan : "-");
		snprintf(path, sizeof(path), "/proc/%d/task/%s/stack",
			 (int)pid, de->d_name);
		print_file(path, "#     ", 16);
	}
	if (d)
		closedir(d);
}

/* The workers still there, their children, and kdat's poller threads. */
static void dump_stuck(const pid_t *pids, int n)
{
	struct dirent *de;
	DIR *d = opendir("/proc");
	int i;

	for (i = 0; i < n; i++)
		if (pids[i] > 0)
			dump_task(pids[i], "worker");
	while (d && (de = readdir(d))) {
		char path[300], buf[512], *p;
		int pid = atoi(de->d_name), ppid = 0;
		FILE *f;

		if (pid <= 0)
			continue;
		snprintf(path, sizeof(path), "/proc/%d/stat", pid);
		f = fopen(path, "r");
		if (!f)
			continue;
		if (fgets(buf, sizeof(buf), f)) {
			p = strrchr(buf, ')');
			if (p && sscanf(p + 2, "%*c %d", &ppid) != 1)
				ppid = 0;
			if (strstr(buf, "(kdat-poll"))
				dump_task(pid, "poller");
			for (i = 0; i < n; i++)
				if (pids[i] > 0 && ppid == pids[i])
					dump_task(pid, "child of a worker");
		}
		fclose(f);
	}
	if (d)
		closedir(d);
}

static void kcov_setup(void)
{
	char line[512], name[128];
	unsigned long size = 0;
	unsigned long long base = 0, text = 0, a, hi = ~0ULL;
	DIR *d;
	struct dirent *de;
	FILE *f;

	S->pc_lo = 0;
	S->pc_hi = ~0ULL;
	g_kcov = !access(KCOV_PATH, R_OK | W_OK);
	if (!g_kcov)
		return;
	f = fopen("/proc/modules", "r");
	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "%127s %lu %*s %*s %*s %llx", name, &size,
			   &base) == 3 && !strcmp(name, "kdat"))
			break;
		else
			size = 0, base = 0;
	if (f)
		fclose(f);
	f = fopen("/sys/module/kdat/sections/.text", "r");
	if (!f || fscanf(f, "%llx", &text) != 1)
		text = 0;
	if (f)
		fclose(f);
	if (!text) {
		if (!g_quiet)
			printf("# kcov: kdat's .text unknown (not root?): "
			       "counting every PC\n");
		return;
	}
	/* The text ends where the first non-text section after it begins. */
	d = opendir("/sys/module/kdat/sections");
	while (d && (de = readdir(d))) {
		char path[512];

		if (de->d_name[0] == '.' && (!de->d_name[1] ||
					     !strcmp(de->d_name, "..")))
			continue;
		if (strstr(de->d_name, "text") || strstr(de->d_name, "init") ||
		    strstr(de->d_name, "altinstr"))
			continue;
		snprintf(path, sizeof(path), "/sys/module/kdat/sections/%s",
			 de->d_name);
		f = fopen(path, "r");
		if (f && fscanf(f, "%llx", &a) == 1 && a > text && a < hi)
			hi = a;
		if (f)
			fclose(f);
	}
	if (d)
		closedir(d);
	if (base && size && base + size > text && base + size < hi)
		hi = base + size;
	if (hi == ~0ULL)
		hi = text + (size ? size : 1 << 20);
	S->pc_lo = text;
	S->pc_hi = hi;
	if (!g_quiet)
		printf("# kcov: kdat.ko text 0x%llx-0x%llx\n", text, hi);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static void write_pcs(const char *path)
{
	uint64_t *v = malloc(PCSET_SIZE * sizeof(*v));
	size_t n = 0, i;
	FILE *f;

	if (!v)
		return;
	for (i = 0; i < PCSET_SIZE; i++)
		if (S->pcs[i])
			v[n++] = S->pcs[i];
	qsort(v, n, sizeof(*v), cmp_u64);
	f = fopen(path, "w");
	if (f) {
		for (i = 0; i < n; i++)
			fprintf(f, "0x%" PRIx64 "\n", v[i]);
		fclose(f);
	} else {
		printf("# KDAT_FUZZ_PCS=%s: %s\n", path, strerror(errno));
	}
	free(v);
}

/* The kernel still answers: open, query, IA open and destroy, close. */
static bool sanity(char *why, size_t len)
{
	struct kdat_query q = { .size = sizeof(q) };
	struct kdat_ia_open io = { .size = sizeof(io) };
	struct kdat_destroy d = { .size = sizeof(d) };
	int fd = open(g_dev, O_RDWR | O_CLOEXEC);
	char name[KDAT_NAME_MAX];
	uint32_t port;

	if (fd < 0) {
		snprintf(why, len, "open: %s", strerror(errno));
		return false;
	}
	if (ioctl(fd, KDAT_IOCTL_QUERY, &q) ||
	    q.abi_version != KDAT_ABI_VERSION) {
		snprintf(why, len, "QUERY: %s", strerror(errno));
		close(fd);
		return false;
	}
	if (find_port(fd, name, &port)) {
		strcpy(io.name, name);
		io.port_num = port;
		if (ioctl(fd, KDAT_IOCTL_IA_OPEN, &io)) {
			snprintf(why, len, "IA_OPEN %s/%u: %s", name, port,
				 strerror(errno));
			close(fd);
			return false;
		}
		d.handle = io.out_ia_handle;
		if (ioctl(fd, KDAT_IOCTL_DESTROY, &d)) {
			snprintf(why, len, "DESTROY of the IA: %s",
				 strerror(errno));
			close(fd);
			return false;
		}
	}
	if (close(fd)) {
		snprintf(why, len, "close: %s", strerror(errno));
		return false;
	}
	return true;
}

static void usage(const char *argv0)
{
	fprintf(stderr, "usage: %s [-s SEED] [-n OPS] [-t SECONDS] "
		"[-j THREADS] [-p PROCS] [-o [-]OP,...] [-q]\n", argv0);
	exit(2);
}

/*
 * -o LIST: only the ops named (QUERY,POST,...), or all but those named
 * with a '-' (-FORK_CHILD,-REOPEN); a name may be a prefix (RING_).
 */
static void filter_ops(char *list, const char *argv0)
{
	bool only = list[0] != '-', hit;
	unsigned int k, keep[NOPS] = { 0 };
	char *tok, *save;

	for (tok = strtok_r(list, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		if (*tok == '-')
			tok++;
		hit = false;
		for (k = 0; k < NOPS; k++)
			if (*tok && !strncasecmp(ops[k].name, tok, strlen(tok)))
				keep[k] = hit = true;
		if (!hit) {
			fprintf(stderr, "no op %s\n", tok);
			usage(argv0);
		}
	}
	for (k = 0; k < NOPS; k++)
		if (keep[k] != only)
			op_weight[k] = 0;
}

static void report_errnos(void)
{
	char buf[2048];
	size_t len = 0;
	int e;

	len += (size_t)snprintf(buf, sizeof(buf), "# results: OK %" PRIu64,
				S->err[0]);
	for (e = 1; e < 256 && len < sizeof(buf) - 64; e++) {
		const char *n;

		if (!S->err[e])
			continue;
		n = strerrorname_np(e);
		len += (size_t)snprintf(buf + len, sizeof(buf) - len,
					", %s %" PRIu64, n ? n : "E?",
					S->err[e]);
	}
	printf("%s\n", buf);
}

static void report_ops(void)
{
	char buf[4096];
	size_t len = 0;
	unsigned int k;

	len += (size_t)snprintf(buf, sizeof(buf), "# ops by kind:");
	for (k = 0; k < NOPS && len < sizeof(buf) - 64; k++)
		len += (size_t)snprintf(buf + len, sizeof(buf) - len,
					" %s %" PRIu64, ops[k].name,
					S->opn[k]);
	printf("%s\n", buf);
}

int main(int argc, char **argv)
{
	uint64_t budget = 0, next_kill, tick_ns = 20000000ULL, stop_ns = 0;
	int phase = 0;
	pid_t pids[MAXPROC];
	bool seeded = false, ok = true;
	const char *filtered = NULL;
	struct rng sr;
	struct sigaction sa;
	char why[256] = "", name[KDAT_NAME_MAX];
	const char *ip, *pcs_path;
	uint32_t port, k;
	unsigned int workers_started = 0, worker_kills = 0;
	double secs;
	int opt, fd, i, live;

	while ((opt = getopt(argc, argv, "s:n:t:j:p:o:qh")) != -1) {
		switch (opt) {
		case 's':
			g_seed = strtoull(optarg, NULL, 0);
			seeded = true;
			break;
		case 'n':
			budget = strtoull(optarg, NULL, 0);
			break;
		case 't':
			g_secs = (unsigned int)strtoul(optarg, NULL, 0);
			break;
		case 'j':
			g_nthreads = atoi(optarg);
			break;
		case 'p':
			g_nproc = atoi(optarg);
			break;
		case 'q':
			g_quiet = 1;
			break;
		case 'o':
			filtered = strdup(optarg);
			filter_ops(optarg, argv[0]);
			break;
		default:
			usage(argv[0]);
		}
	}
	if (optind != argc || g_nthreads < 1 || g_nthreads > 64 ||
	    g_nproc < 1 || g_nproc > MAXPROC || !g_secs)
		usage(argv[0]);
	for (k = 0; k < NOPS; k++) {
		weight_sum[0] += op_weight[k];
		if (!ops[k].proc)
			weight_sum[1] += op_weight[k];
	}
	if (!weight_sum[1]) {
		fprintf(stderr, "-o leaves no op a thread can run\n");
		usage(argv[0]);
	}
	if (!seeded)
		g_seed = mix64((uint64_t)time(NULL) ^ now_ns() ^
			       ((uint64_t)getpid() << 32)) % 1000000000000ULL;
	if (getenv("KDAT_FUZZ_DEV"))
		g_dev = getenv("KDAT_FUZZ_DEV");
	setvbuf(stdout, NULL, _IOLBF, 0);
	signal(SIGPIPE, SIG_IGN);
	printf("# seed: %" PRIu64 "\n", g_seed);
	printf("TAP version 13\n");

	fd = open(g_dev, O_RDWR | O_CLOEXEC);
	if (fd < 0) {
		printf("1..0 # SKIP %s: %s (kdat.ko not loaded?)\n",
		       g_dev, strerror(errno));
		return KSFT_SKIP;
	}
	printf("1..1\n");
	ip = getenv("KDAT_FUZZ_IP");
	if (!ip)
		ip = getenv("KDAT_TEST_IP");
	if (ip && inet_pton(AF_INET, ip, g_ip4) != 1)
		printf("# KDAT_FUZZ_IP=%s is not IPv4: using 192.0.2.1\n", ip);
	if (find_port(fd, name, &port))
		printf("# port %s/%u, connects to %u.%u.%u.%u\n", name, port,
		       g_ip4[0], g_ip4[1], g_ip4[2], g_ip4[3]);
	else
		printf("# no RDMA port: fuzzing what needs none\n");
	close(fd);
	printf("# %d processes x %d threads, %u s%s\n", g_nproc, g_nthreads,
	       g_secs, budget ? "" : ", no op budget");
	if (filtered)
		printf("# ops filtered: -o %s\n", filtered);

	S = mmap(NULL, sizeof(*S), PROT_READ | PROT_WRITE,
		 MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (S == MAP_FAILED) {
		perror("mmap");
		return KSFT_FAIL;
	}
	S->budget = budget;
	kcov_setup();
	slow_setup();
	printf("# slow memory: %s\n", g_slow ? g_sf.path :
	       "none (needs root and FUSE)");

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_alarm;
	sigaction(SIGALRM, &sa, NULL);
	alarm(g_secs + 60);

	g_t0 = now_ns();
	S->deadline_ns = g_t0 + (uint64_t)g_secs * 1000000000ULL;
	sr.s = mix64(g_seed ^ 0x5eed);
	for (i = 0; i < g_nproc; i++) {
		if (start_worker(i) > 0)
			workers_started++;
	}
	/* A worker dies by SIGKILL every few seconds, and another starts. */
	next_kill = g_t0 + (1 + rn(&sr, 2 * (g_secs > 8 ? g_secs / 4 : 2))) *
		1000000000ULL;
	for (;;) {
		uint64_t now = now_ns();
		int status;
		pid_t pid;

		if (!S->stop && now >= S->deadline_ns)
			__atomic_store_n(&S->stop, 1, __ATOMIC_RELAXED);
		if (S->stop && !stop_ns)
			stop_ns = now;
		while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
			for (i = 0; i < g_nproc; i++)
				if (g_w[i].pid == pid)
					break;
			if (i == g_nproc)
				continue;
			reaped(i, status);
			g_w[i].pid = 0;
			if (!S->stop) {
				g_w[i].gen++;
				if (start_worker(i) > 0)
					workers_started++;
			}
		}
		live = 0;
		for (i = 0; i < g_nproc; i++)
			live += g_w[i].pid > 0;
		if (S->stop && !live)
			break;
		if (!S->stop && now >= next_kill &&
		    now + 2000000000ULL < S->deadline_ns) {
			i = (int)rn(&sr, (uint64_t)g_nproc);
			if (g_w[i].pid > 0) {
				g_w[i].killed = true;
				kill(g_w[i].pid, SIGKILL);
				worker_kills++;
			}
			next_kill = now + (1 + rn(&sr, 2 * (g_secs > 8 ?
					   g_secs / 4 : 2))) * 1000000000ULL;
		}
		/*
		 * Workers finish their op and exit within seconds of the
		 * end. 25 s after it, what is left is shown and killed; 20 s
		 * later, what has not died of SIGKILL is stuck in the kernel.
		 */
		for (i = 0; i < g_nproc; i++)
			pids[i] = g_w[i].pid;
		if (S->stop && phase == 0 && now > stop_ns + 25000000000ULL) {
			printf("# workers still running 25 s after the end:\n");
			dump_stuck(pids, g_nproc);
			for (i = 0; i < g_nproc; i++)
				if (g_w[i].pid > 0) {
					bad("worker %d did not stop in 25 s",
					    (int)g_w[i].pid);
					g_w[i].killed = true;
					kill(g_w[i].pid, SIGKILL);
				}
			phase = 1;
		}
		if (S->stop && phase == 1 && now > stop_ns + 45000000000ULL) {
			printf("# not dead 20 s after SIGKILL (stuck in the "
			       "kernel):\n");
			dump_stuck(pids, g_nproc);
			bad("processes unkillable: stuck in the kernel");
			break;
		}
		usleep((useconds_t)(tick_ns / 1000));
	}
	slow_stop();
	while (waitpid(-1, NULL, WNOHANG) > 0)
		;
	secs = (double)(now_ns() - g_t0) / 1e9;

	printf("# ops: %" PRIu64 " in %.1f s (%.0f/s); workers started %u, "
	       "%u killed mid-run; children %" PRIu64 " (%" PRIu64
	       " killed); reopens %" PRIu64 "\n", S->ops, secs,
	       (double)S->ops / secs, workers_started, worker_kills,
	       S->children, S->child_kills, S->reopens);
	printf("# mmaps %" PRIu64 " (%" PRIu64 " refused); ring faults %"
	       PRIu64 "\n", S->mmaps, S->mmap_fail, S->ring_faults);
	printf("# race stretching: %" PRIu64 " slow mappings\n",
	       S->slow_maps);
	report_errnos();
	if (!g_quiet)
		report_ops();
	if (g_kcov && S->kcov_threads) {
		printf("# corpus: %u entries (%" PRIu64 " added), %" PRIu64
		       " replays\n", MIN(S->corpus_n, CORPUS_MAX),
		       S->corpus_adds, S->corpus_replays);
		printf("# kcov: %u distinct kdat PCs\n", S->npcs);
		/*
		 * Only kdat.ko is instrumented: PCs outside its text are
		 * kcov's canonical ones, shifted by the KASLR offset.
		 */
		if (!S->npcs && S->pcs_outside)
			printf("# kcov: %" PRIu64 " PCs, all outside kdat.ko's "
			       "text: a KASLR kernel (kcov subtracts its "
			       "offset); boot with nokaslr\n", S->pcs_outside);
	} else {
		printf("# kcov: unavailable (no %s, or not allowed)\n",
		       KCOV_PATH);
	}
	pcs_path = getenv("KDAT_FUZZ_PCS");
	if (pcs_path && S->npcs)
		write_pcs(pcs_path);

	if (S->ring_faults) {
		ok = false;
		printf("# %" PRIu64 " faults on ring mappings\n",
		       S->ring_faults);
	}
	for (k = 0; k < MIN(S->nbad, NBADMSG); k++)
		printf("# %s\n", S->bad[k]);
	if (S->nbad) {
		ok = false;
		if (S->nbad > NBADMSG)
			printf("# ... %u in all\n", S->nbad);
	}
	if (!sanity(why, sizeof(why))) {
		ok = false;
		printf("# the kernel no longer answers: %s\n", why);
	}
	alarm(0);
	printf("%s 1 fuzz: %" PRIu64 " ops in %.0f s, seed %" PRIu64 "\n",
	       ok ? "ok" : "not ok", S->ops, secs, g_seed);
	return ok ? KSFT_PASS : KSFT_FAIL;
}
