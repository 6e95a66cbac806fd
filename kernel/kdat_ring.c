// SPDX-License-Identifier: GPL-2.0
/*
 * kdat ring memory: allocation, accounting, mapping, and the indices the
 * layers above share (kdat_ring.h). Submission rings are drained in
 * kdat_poll.c, completion rings filled in kdat_evd.c.
 *
 * Lifetime. A ring is a kref'd block of memory (kdat_ring_mem_alloc()).
 * Its queue (EP, SRQ or EVD) holds one reference from the ring's creation
 * until the queue is destroyed (kdat_ring_release()), each mapping holds
 * one; the memory goes with the last.
 *
 * Everything the process may write (tails of submission rings, heads of
 * completion rings, entries) is read once, with READ_ONCE or one memcpy
 * into kernel memory, and checked there.
 */
#include <linux/mm.h>
#include <linux/sched/signal.h>
#include <linux/sched/user.h>
#include <linux/slab.h>
#include <linux/vmalloc.h>

#include "kdat.h"
#include "kdat_ring.h"

/*
 * Ring memory: zeroed pages charged to the caller's memory cgroup
 * (vmalloc_user() would charge nothing), mapped in the kernel with
 * VM_USERMAP so that remap_vmalloc_range() may give them to the process.
 */
static int kdat_ring_mem_alloc(struct kdat_ring *r)
{
	unsigned int i, n = r->map_size >> PAGE_SHIFT;

	r->pages = kvcalloc(n, sizeof(*r->pages),
			    GFP_KERNEL_ACCOUNT | __GFP_NOWARN);
	if (!r->pages)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		r->pages[i] = alloc_page(GFP_KERNEL_ACCOUNT | __GFP_ZERO |
					 __GFP_RETRY_MAYFAIL);
		if (!r->pages[i])
			return -ENOMEM;
	}
	r->mem = vmap(r->pages, n, VM_MAP | VM_USERMAP, PAGE_KERNEL);
	return r->mem ? 0 : -ENOMEM;
}

/* Process context (vunmap() may sleep); after a failed alloc too. */
static void kdat_ring_mem_free(struct kdat_ring *r)
{
	unsigned int i, n = r->map_size >> PAGE_SHIFT;

	if (r->mem)
		vunmap(r->mem);
	for (i = 0; r->pages && i < n && r->pages[i]; i++)
		__free_page(r->pages[i]);
	kvfree(r->pages);
}

static void kdat_ring_free(struct kref *ref)
{
	struct kdat_ring *r = container_of(ref, struct kdat_ring, ref);

	if (r->user) {
		atomic_long_sub(r->acct_pages, &r->user->locked_vm);
		free_uid(r->user);
	}
	kdat_ring_mem_free(r);
	mutex_destroy(&r->drain_lock);
	kfree(r);
}

void kdat_ring_put(struct kdat_ring *r)
{
	kref_put(&r->ref, kdat_ring_free);
}

/* Charge @r's memory to the calling user; ENOMEM over RLIMIT_MEMLOCK. */
static int kdat_ring_account(struct kdat_ring *r)
{
	unsigned long pages = r->map_size >> PAGE_SHIFT, limit, cur;
	struct user_struct *user;

	if (r->kfile->kernel || capable(CAP_IPC_LOCK))
		return 0;
	limit = rlimit(RLIMIT_MEMLOCK) >> PAGE_SHIFT;
	user = get_current_user();
	cur = atomic_long_read(&user->locked_vm);
	do {
		if (cur + pages > limit || cur + pages < cur) {
			free_uid(user);
			return -ENOMEM;
		}
	} while (!atomic_long_try_cmpxchg(&user->locked_vm, &cur,
					  cur + pages));
	r->user = user;
	r->acct_pages = pages;
	return 0;
}

/*
 * A ring of at least @want entries of @entry_size bytes, in @kfile's mmap
 * table; its creator holds the one reference (kdat_ring_release()).
 */
struct kdat_ring *kdat_ring_alloc(struct kdat_file *kfile,
				  enum kdat_ring_kind kind, u32 want,
				  u32 entry_size)
{
	struct kdat_ring *r;
	size_t array;
	int ret;

	if (!want || want > KDAT_RING_MAX_WANT)
		return ERR_PTR(-EINVAL);
	r = kzalloc(sizeof(*r), GFP_KERNEL_ACCOUNT);
	if (!r)
		return ERR_PTR(-ENOMEM);
	kref_init(&r->ref);
	INIT_LIST_HEAD(&r->node);
	INIT_LIST_HEAD(&r->active);
	mutex_init(&r->drain_lock);
	spin_lock_init(&r->flags_lock);
	r->kfile = kfile;
	r->kind = kind;
	r->entries = roundup_pow_of_two(want);
	r->entry_size = entry_size;
	array = (size_t)r->entries * entry_size;
	r->map_size = PAGE_ALIGN(KDAT_RING_OFF_ARRAY + array);
	if (kdat_ring_account(r))
		goto err;
	if (kdat_ring_mem_alloc(r))
		goto err;
	*kdat_ring_u32(r, KDAT_RING_OFF_MASK) = r->entries - 1;
	*kdat_ring_u32(r, KDAT_RING_OFF_ENTRIES) = r->entries;
	/* The cookie: an id in the file's table, never 0. */
	ret = xa_alloc_cyclic(&kfile->rings, &r->id, r,
			      XA_LIMIT(1, (1U << (31 - PAGE_SHIFT)) - 1),
			      &kfile->next_ring, GFP_KERNEL_ACCOUNT);
	if (ret < 0)
		goto err;
	return r;
err:
	kdat_ring_put(r);
	return ERR_PTR(-ENOMEM);
}

/*
 * The queue is done with @r: it leaves the mmap table; the memory stays for
 * the mappings.
 */
void kdat_ring_release(struct kdat_ring *r)
{
	xa_erase(&r->kfile->rings, r->id);
	kdat_ring_put(r);
}

/* ---- mapping --------------------------------------------------------- */

static void kdat_ring_vm_open(struct vm_area_struct *vma)
{
	struct kdat_ring *r = vma->vm_private_data;

	kref_get(&r->ref);
}

static void kdat_ring_vm_close(struct vm_area_struct *vma)
{
	kdat_ring_put(vma->vm_private_data);
}

static const struct vm_operations_struct kdat_ring_vm_ops = {
	.open = kdat_ring_vm_open,
	.close = kdat_ring_vm_close,
};

int kdat_fops_mmap(struct file *filp, struct vm_area_struct *vma)
{
	struct kdat_file *kfile = filp->private_data;
	unsigned long size = vma->vm_end - vma->vm_start;
	struct kdat_ring *r;
	int ret;

	if (!(vma->vm_flags & VM_SHARED))
		return -EINVAL;
	xa_lock(&kfile->rings);
	r = xa_load(&kfile->rings, vma->vm_pgoff);
	if (r)
		kref_get(&r->ref);
	xa_unlock(&kfile->rings);
	if (!r)
		return -EINVAL;
	ret = -EINVAL;
	if (size > r->map_size)
		goto out_put;
	vm_flags_set(vma, VM_DONTEXPAND | VM_DONTDUMP);
	vm_flags_clear(vma, VM_MAYEXEC);
	ret = remap_vmalloc_range(vma, r->mem, 0);
	if (ret)
		goto out_put;
	vma->vm_private_data = r;
	vma->vm_ops = &kdat_ring_vm_ops;
	return 0;	/* the mapping keeps the reference */
out_put:
	kdat_ring_put(r);
	return ret;
}

/* ---- indices ------------------------------------------------------- */

/* Done with @n entries of submission ring @r; the queue's lock held. */
void kdat_ring_completed(struct kdat_ring *r, u32 n)
{
	WRITE_ONCE(r->kcompleted, r->kcompleted + n);	/* the poller's look */
	/* Pairs with libdat's acquire load: the slot is free before. */
	smp_store_release(kdat_ring_u32(r, KDAT_RING_OFF_COMPLETED),
			  r->kcompleted);
}

void kdat_ring_set_ep_state(struct kdat_ring *r, u32 state)
{
	WRITE_ONCE(*kdat_ring_u32(r, KDAT_RING_OFF_EP_STATE), state);
}

/* The queue's device is gone (NULL: no ring). */
void kdat_ring_set_dead(struct kdat_ring *r)
{
	if (r)
		kdat_ring_set_flag(r, KDAT_RING_F_DEAD, true);
}

/*
 * Entries from @head to @tail of a ring of @entries, the indices being
 * free-running u32 counters (they wrap): KDAT_RING_INSANE when @tail is
 * behind @head or more than @entries ahead.
 */
u32 kdat_ring_span(u32 head, u32 tail, u32 entries)
{
	u32 n = tail - head;

	return n > entries ? KDAT_RING_INSANE : n;
}

void kdat_ring_describe(struct kdat_ring *r, struct kdat_ring_create *c)
{
	c->out_entries = r->entries;
	c->out_entry_size = r->entry_size;
	c->out_map_size = r->map_size;
	c->out_mmap_offset = (u64)r->id << PAGE_SHIFT;
	c->out_off.head = KDAT_RING_OFF_HEAD;
	c->out_off.tail = KDAT_RING_OFF_TAIL;
	c->out_off.flags = KDAT_RING_OFF_FLAGS;
	c->out_off.ring_mask = KDAT_RING_OFF_MASK;
	c->out_off.ring_entries = KDAT_RING_OFF_ENTRIES;
	c->out_off.completed = KDAT_RING_OFF_COMPLETED;
	c->out_off.ep_state = KDAT_RING_OFF_EP_STATE;
	c->out_off.entries = KDAT_RING_OFF_ARRAY;
}
