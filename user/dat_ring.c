// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * libdat ring setup: map the ring the kernel gives a queue, unmap it. The
 * fast path on a ring is dat_ring.h's.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "dat_internal.h"
#include "dat_ring.h"

/*
 * The ring path is the default; KDAT_RINGS=0 in the environment selects
 * the ioctl path (every post and every dequeue a system call).
 */
bool kd_rings_wanted(void)
{
	const char *e = getenv("KDAT_RINGS");

	return !e || strcmp(e, "0");
}

/*
 * How the kernel takes this process's posts (KDAT_IOCTL_POLLER_SET), from
 * the environment: KDAT_POLLER=none posts from the caller's context (one
 * system call per post, no poller thread), KDAT_POLLER=adaptive (the
 * default) has a poller that spins while it has a CPU of its own and its
 * spinning pays, KDAT_POLLER=spin one that spins while it has a CPU;
 * KDAT_POLLER_CPU=N pins it. A setting the kernel refuses is said on
 * stderr and the default kept. Returns the mode the file has.
 */
uint32_t kd_poller_setup(int fd)
{
	const char *mode = getenv("KDAT_POLLER"), *cpu = getenv("KDAT_POLLER_CPU");
	struct kdat_poller_set p = {
		.size = sizeof(p), .mode = KDAT_POLLER_ADAPTIVE,
		.cpu = KDAT_POLLER_ANY_CPU,
	};

	if (!mode && !cpu)
		return KDAT_POLLER_ADAPTIVE;
	if (mode && !strcmp(mode, "none"))
		p.mode = KDAT_POLLER_NONE;
	else if (mode && !strcmp(mode, "spin"))
		p.mode = KDAT_POLLER_SPIN;
	else if (mode && strcmp(mode, "adaptive"))
		fprintf(stderr, "libdat: KDAT_POLLER=%s: not none, adaptive nor spin\n",
			mode);
	if (cpu)
		p.cpu = atoi(cpu);
	if (ioctl(fd, KDAT_IOCTL_POLLER_SET, &p)) {
		fprintf(stderr, "libdat: KDAT_POLLER=%s KDAT_POLLER_CPU=%s: %s\n",
			mode ? mode : "", cpu ? cpu : "", strerror(errno));
		return KDAT_POLLER_ADAPTIVE;
	}
	return p.mode;
}

void kd_ring_unmap(struct kd_ring *r)
{
	if (!r)
		return;
	munmap(r->map, r->map_size);
	pthread_mutex_destroy(&r->lock);
	free(r);
}

/*
 * The ring of @kind for kernel object @kh, mapped; NULL on failure. A send
 * ring has extended entries, for every EP: the IB extensions' DTOs may
 * come on any, and a queue cannot change rings once DTOs are out. The
 * cost is 24 bytes more per entry (which holds the segments the QP
 * takes), often nothing once rounded to a cache line (on rxe's 32
 * segments: 832 bytes either way), at most a line. A kernel without
 * them (EINVAL) gives a plain ring: no extended DTOs. @made, if not
 * NULL, says whether the kernel made the ring (the queue then takes its
 * entries from it alone, mapped or not).
 */
struct kd_ring *kd_ring_map(struct kd_ia *ia, uint32_t kh,
			    uint32_t kind, bool *made)
{
	return kd_ring_map_at(ia, kh, kind, made, NULL, 0, NULL);
}

/*
 * Address space for the ring the kernel will make for @r's queue at @want
 * entries (an EVD resize), reserved (PROT_NONE, no memory behind it) so
 * that mapping the new ring cannot fail for want of it: NULL when the
 * process cannot have it. The size is the uapi's: the same header,
 * @want entries rounded up to a power of two, whole pages.
 */
void *kd_ring_reserve(const struct kd_ring *r, uint32_t want, size_t *len)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	size_t off = (size_t)(r->entries - (uint8_t *)r->map);
	uint64_t n = 1;
	void *m;

	while (n < want)
		n <<= 1;
	*len = (off + n * r->entry_size + page - 1) & ~(page - 1);
	m = mmap(NULL, *len, PROT_NONE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	return m == MAP_FAILED ? NULL : m;
}

/*
 * kd_ring_map(), the ring mapped over @at (@at_len bytes that
 * kd_ring_reserve() gave) when it is of that size; @at is the ring's or
 * unmapped when this returns. @r, if not NULL, is the zeroed struct to
 * describe the ring in, allocated ahead (the ring's or freed when this
 * returns).
 */
struct kd_ring *kd_ring_map_at(struct kd_ia *ia, uint32_t kh,
			       uint32_t kind, bool *made, void *at,
			       size_t at_len, struct kd_ring *r)
{
	struct kdat_ring_create c = {
		.size = sizeof(c), .handle = kh, .kind = kind,
		.flags = kind == KDAT_RING_SEND ? KDAT_RING_CREATE_SQE_EXT : 0,
	};
	uint8_t *m;
	int ret;

	ret = ioctl(ia->fd, KDAT_IOCTL_RING_CREATE, &c);
	if (ret && c.flags && errno == EINVAL) {
		c.flags = 0;
		ret = ioctl(ia->fd, KDAT_IOCTL_RING_CREATE, &c);
	}
	if (made)
		*made = !ret;
	if (at && (ret || c.out_map_size != at_len)) {
		munmap(at, at_len);
		at = NULL;
	}
	if (ret)
		goto fail;
	m = mmap(at, c.out_map_size, PROT_READ | PROT_WRITE,
		 MAP_SHARED | (at ? MAP_FIXED : 0), ia->fd,
		 (off_t)c.out_mmap_offset);
	if (m == MAP_FAILED) {
		if (at)
			munmap(at, at_len);
		goto fail;
	}
	if (!r)
		r = calloc(1, sizeof(*r));
	if (!r) {
		munmap(m, c.out_map_size);
		return NULL;
	}
	r->map = m;
	r->map_size = c.out_map_size;
	r->id = (uint32_t)(c.out_mmap_offset /
			   (uint64_t)sysconf(_SC_PAGESIZE));
	r->head = (uint32_t *)(m + c.out_off.head);
	r->tail = (uint32_t *)(m + c.out_off.tail);
	r->flags = (uint32_t *)(m + c.out_off.flags);
	r->completed = (uint32_t *)(m + c.out_off.completed);
	r->ep_state = (uint32_t *)(m + c.out_off.ep_state);
	r->entries = m + c.out_off.entries;
	r->mask = *(uint32_t *)(m + c.out_off.ring_mask);
	r->entry_size = c.out_entry_size;
	r->ext = c.flags & KDAT_RING_CREATE_SQE_EXT;
	r->max_iov = (c.out_entry_size - (r->ext ?
					  sizeof(struct kdat_sqe_ext) :
					  sizeof(struct kdat_sqe))) /
		     sizeof(struct kdat_lmr_triplet);
	pthread_mutex_init(&r->lock, NULL);
	return r;

fail:
	free(r);
	return NULL;
}
