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
 * stderr and the default kept.
 */
void kd_poller_setup(int fd)
{
	const char *mode = getenv("KDAT_POLLER"), *cpu = getenv("KDAT_POLLER_CPU");
	struct kdat_poller_set p = {
		.size = sizeof(p), .mode = KDAT_POLLER_ADAPTIVE,
		.cpu = KDAT_POLLER_ANY_CPU,
	};

	if (!mode && !cpu)
		return;
	if (mode && !strcmp(mode, "none"))
		p.mode = KDAT_POLLER_NONE;
	else if (mode && !strcmp(mode, "spin"))
		p.mode = KDAT_POLLER_SPIN;
	else if (mode && strcmp(mode, "adaptive"))
		fprintf(stderr, "libdat: KDAT_POLLER=%s: not none, adaptive nor spin\n",
			mode);
	if (cpu)
		p.cpu = atoi(cpu);
	if (ioctl(fd, KDAT_IOCTL_POLLER_SET, &p))
		fprintf(stderr, "libdat: KDAT_POLLER=%s KDAT_POLLER_CPU=%s: %s\n",
			mode ? mode : "", cpu ? cpu : "", strerror(errno));
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
	struct kdat_ring_create c = {
		.size = sizeof(c), .handle = kh, .kind = kind,
		.flags = kind == KDAT_RING_SEND ? KDAT_RING_CREATE_SQE_EXT : 0,
	};
	struct kd_ring *r;
	uint8_t *m;
	int ret;

	ret = ioctl(ia->fd, KDAT_IOCTL_RING_CREATE, &c);
	if (ret && c.flags && errno == EINVAL) {
		c.flags = 0;
		ret = ioctl(ia->fd, KDAT_IOCTL_RING_CREATE, &c);
	}
	if (made)
		*made = !ret;
	if (ret)
		return NULL;
	m = mmap(NULL, c.out_map_size, PROT_READ | PROT_WRITE, MAP_SHARED,
		 ia->fd, (off_t)c.out_mmap_offset);
	if (m == MAP_FAILED)
		return NULL;
	r = calloc(1, sizeof(*r));
	if (!r) {
		munmap(m, c.out_map_size);
		return NULL;
	}
	r->map = m;
	r->map_size = c.out_map_size;
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
}
