// SPDX-License-Identifier: GPL-2.0
/*
 * kdat Protection Zones and LMRs on user memory.
 *
 * An LMR registers a range of the calling process's memory with the IA's
 * device for kernel QPs: ib_reg_user_mr() pins the pages long term
 * (FOLL_LONGTERM, through ib_umem_get()), charges them to the caller's
 * RLIMIT_MEMLOCK (failing with ENOMEM, nothing pinned, when over it) and
 * returns an MR whose iova is the user address, so work requests name the
 * user's own addresses. ib_dereg_mr() unpins and uncharges.
 *
 * The lmr_context user space puts in an IOV is the LMR's kdat handle, not
 * the lkey: it is looked up among the caller's own objects and cannot be
 * forged. The rmr_context is the MR's rkey, which the peer needs.
 */
#include <linux/backing-dev.h>
#include <linux/capability.h>
#include <linux/mm.h>
#include <linux/overflow.h>
#include <linux/sched/signal.h>
#include <linux/sizes.h>

#include "kdat.h"

static void kdat_pz_disassociate(struct kdat_dev_res *res)
{
	struct kdat_pz *pz = container_of(res, struct kdat_pz, res);

	ib_dealloc_pd(pz->pd);
	pz->pd = NULL;
}

static void kdat_pz_release(struct kdat_pz *pz)
{
	struct kdat_device *kdev = pz->ia->kdev;

	down_read(&kdev->rwsem);
	if (kdat_dev_res_del(kdev, &pz->res))
		kdat_pz_disassociate(&pz->res);
	up_read(&kdev->rwsem);
}

static void kdat_pz_destroy(struct kdat_obj *obj)
{
	struct kdat_pz *pz = container_of(obj, struct kdat_pz, obj);

	kdat_pz_release(pz);
	kdat_obj_unuse(&pz->ia->obj, pz->ia);
}

static const struct kdat_obj_ops kdat_pz_ops = {
	.destroy = kdat_pz_destroy,
};

/* A PZ on @ia of @kfile, reserved; the caller holds kfile->lock. */
int kdat_pz_new(struct kdat_file *kfile, struct kdat_ia *ia,
		struct kdat_pz **pzp)
{
	struct kdat_pz *pz;
	int ret;

	pz = kdat_obj_alloc(struct kdat_pz, obj, KDAT_OBJ_PZ, &kdat_pz_ops);
	if (!pz)
		return -ENOMEM;
	pz->ia = ia;
	INIT_LIST_HEAD(&pz->res.node);

	down_read(&ia->kdev->rwsem);
	if (!ia->kdev->ibdev) {
		up_read(&ia->kdev->rwsem);
		ret = -ENODEV;
		goto err_free;
	}
	pz->pd = ib_alloc_pd(ia->kdev->ibdev, 0);
	if (IS_ERR(pz->pd)) {
		up_read(&ia->kdev->rwsem);
		ret = PTR_ERR(pz->pd);
		goto err_free;
	}
	ret = kdat_dev_res_add(ia->kdev, &pz->res, 1, kdat_pz_disassociate);
	up_read(&ia->kdev->rwsem);
	if (ret)
		goto err_pd;

	ret = kdat_obj_reserve(kfile, &pz->obj, ia);
	if (ret)
		goto err_pd;
	kdat_obj_use(&ia->obj, ia);
	*pzp = pz;
	return 0;

err_pd:
	kdat_pz_release(pz);
err_free:
	kdat_obj_abort(&pz->obj);
	return ret;
}

int kdat_cmd_pz_create(struct kdat_ucmd *ucmd)
{
	struct kdat_pz_create *cmd = ucmd->cmd;
	struct kdat_file *kfile = ucmd->kfile;
	struct kdat_ia *ia;
	struct kdat_pz *pz;
	int ret;

	if (cmd->flags)
		return -EOPNOTSUPP;

	mutex_lock(&kfile->lock);
	ia = kdat_ia_get(kfile, cmd->ia_handle);
	if (!ia) {
		ret = -EBADF;
		goto out_unlock;
	}
	ret = kdat_pz_new(kfile, ia, &pz);
	if (!ret) {
		cmd->out_pz_handle = pz->obj.handle;
		ret = kdat_ucmd_finish(ucmd, sizeof(*cmd), &pz->obj);
	}
	kdat_obj_put(&ia->obj);
out_unlock:
	mutex_unlock(&kfile->lock);
	return ret;
}

/* Unpins and uncharges the pages; or unmaps the kernel memory. */
static void kdat_lmr_disassociate(struct kdat_dev_res *res)
{
	struct kdat_lmr *lmr = container_of(res, struct kdat_lmr, res);

	if (lmr->kernel) {
		if (lmr->mapped)
			ib_dma_unmap_sgtable_attrs(lmr->pz->pd->device,
						   &lmr->sgt,
						   DMA_BIDIRECTIONAL, 0);
		lmr->mapped = false;
		return;
	}
	ib_dereg_mr(lmr->mr);
	lmr->mr = NULL;
}

static void kdat_lmr_release(struct kdat_lmr *lmr)
{
	struct kdat_device *kdev = lmr->pz->ia->kdev;

	down_read(&kdev->rwsem);
	if (kdat_dev_res_del(kdev, &lmr->res))
		kdat_lmr_disassociate(&lmr->res);
	up_read(&kdev->rwsem);
}

static void kdat_lmr_destroy(struct kdat_obj *obj)
{
	struct kdat_lmr *lmr = container_of(obj, struct kdat_lmr, obj);

	kdat_lmr_release(lmr);
	if (lmr->kernel)
		sg_free_table(&lmr->sgt);
	kdat_obj_unuse(&lmr->pz->obj, lmr->pz->ia);
}

/*
 * Before LMR @handle of @kfile goes (KDAT_IOCTL_DESTROY): the requests
 * that the file's EPs on its PZ had at the device when it was called
 * leave it first, for KDAT_SETTLE_MS at most. DAT leaves a request's
 * buffer to the Provider until the DTO completes, and a Consumer that
 * suppressed the completion cannot know when it did (dtestx -u frees its
 * send buffers right after posting): a device that sends when a request
 * is posted (6.1's rxe) has sent it, one that sends from a worker (6.12's
 * rxe) would find its memory unregistered. A request parked on the
 * peer's RNR costs the wait (a fatal signal ends it); nothing is lost by
 * it. Not when other objects use the LMR (the destroy is refused), nor
 * at the file's or an IA's abrupt close.
 */
#define KDAT_SETTLE_MS	200

struct kdat_settle {
	struct kdat_ep *ep;
	u64 target;	/* send_done once those requests completed */
};

static bool kdat_settled(struct kdat_settle *s)
{
	return (s64)(READ_ONCE(s->ep->send_done) - s->target) >= 0 ||
	       !READ_ONCE(s->ep->send.posted);
}

/* Does @obj name an EP on @pz with requests at the device? */
static bool kdat_settle_wanted(struct kdat_obj *obj, struct kdat_pz *pz)
{
	struct kdat_ep *ep = container_of(obj, struct kdat_ep, obj);

	return obj->type == KDAT_OBJ_EP && ep->pz == pz &&
	       READ_ONCE(ep->send.posted);
}

void kdat_lmr_settle(struct kdat_file *kfile, u32 handle)
{
	unsigned long deadline = jiffies + msecs_to_jiffies(KDAT_SETTLE_MS);
	unsigned int n = 0, max = 0, i;
	struct kdat_obj *lmr, *obj;
	struct kdat_settle *eps;
	unsigned long flags;
	struct kdat_pz *pz;
	struct kdat_ep *ep;
	long left;

	lmr = kdat_obj_get(kfile, handle, KDAT_OBJ_LMR);
	if (!lmr)
		return;
	pz = container_of(lmr, struct kdat_lmr, obj)->pz;
	if (atomic_read(&lmr->users))
		goto out;
	spin_lock(&kfile->obj_lock);
	list_for_each_entry(obj, &kfile->objects, file_node)
		max += kdat_settle_wanted(obj, pz);
	spin_unlock(&kfile->obj_lock);
	if (!max)
		goto out;
	eps = kvcalloc(max, sizeof(*eps), GFP_KERNEL_ACCOUNT);
	if (!eps)
		goto out;
	spin_lock(&kfile->obj_lock);
	list_for_each_entry(obj, &kfile->objects, file_node) {
		if (n == max || !kdat_settle_wanted(obj, pz) ||
		    !kref_get_unless_zero(&obj->ref))
			continue;
		ep = container_of(obj, struct kdat_ep, obj);
		eps[n].ep = ep;
		spin_lock_irqsave(&ep->lock, flags);
		eps[n].target = ep->send_done + ep->send.posted;
		ep->settlers++;
		spin_unlock_irqrestore(&ep->lock, flags);
		n++;
	}
	spin_unlock(&kfile->obj_lock);
	for (i = 0; i < n; i++) {
		ep = eps[i].ep;
		left = (long)(deadline - jiffies);
		if (left > 0)
			wait_event_killable_timeout(ep->idle_wq,
						    kdat_settled(&eps[i]),
						    left);
		spin_lock_irqsave(&ep->lock, flags);
		ep->settlers--;
		spin_unlock_irqrestore(&ep->lock, flags);
		kdat_obj_put(&ep->obj);
	}
	kvfree(eps);
out:
	kdat_obj_put(lmr);
}

static const struct kdat_obj_ops kdat_lmr_ops = {
	.destroy = kdat_lmr_destroy,
};

/*
 * The access flags of an MR with @priv, on a device with remote atomics
 * (@atomics) or without (where the privilege grants nothing).
 */
static int kdat_mem_priv_to_ib(u32 priv, bool atomics)
{
	int access = 0;

	/* IB requires local write for remote write and remote atomics. */
	if (priv & (KDAT_MEM_PRIV_LOCAL_WRITE | KDAT_MEM_PRIV_REMOTE_WRITE |
		    KDAT_MEM_PRIV_REMOTE_ATOMIC))
		access |= IB_ACCESS_LOCAL_WRITE;
	if (priv & KDAT_MEM_PRIV_REMOTE_WRITE)
		access |= IB_ACCESS_REMOTE_WRITE;
	if (priv & KDAT_MEM_PRIV_REMOTE_READ)
		access |= IB_ACCESS_REMOTE_READ;
	if ((priv & KDAT_MEM_PRIV_REMOTE_ATOMIC) && atomics)
		access |= IB_ACCESS_REMOTE_ATOMIC;
	return access;
}

/*
 * User memory a registration pins, pinned once more here, before the
 * device's rwsem is taken. The driver pins inside ib_reg_user_mr(), which
 * runs under the rwsem: a page that faults for as long as its owner likes
 * (a FUSE file whose read is never answered) would hold the rwsem that
 * long, and device removal and every other user of the device with it.
 * With the range faulted in and held by this pin, made with the flags
 * ib_umem_get() uses (a write pin, forced where the MR does not write:
 * the driver's pin then finds the same pages with the same rights), a
 * fault that stalls does so here, holding nothing that removal needs.
 * This pin is short-term and unlocked: a fault that waits for I/O drops
 * the mmap lock meanwhile, so it does not stall the rest of the caller's
 * address space either.
 *
 * The driver's pin always asks for write (ib_umem_get()), and a write to
 * a shared file mapping that the file system tracks dirty pages of faults
 * into the file system even on a present page (page_mkwrite: FUSE then
 * waits for its own writeback, which its server can hold for ever; a
 * sync write-protects the page between the two pins). Such mappings are
 * refused (EFAULT), as the mm does for every long-term write pin from
 * 6.5 on (vma_needs_dirty_tracking()): anonymous memory, shmem, hugetlbfs
 * and private file mappings are what RDMA registers.
 *
 * What this cannot close: the driver's pin takes the mmap lock where it
 * cannot pin locklessly (a mapping that is not writable, always), and a
 * range replaced by another thread between the two pins (munmap, then a
 * mmap of a FUSE file at the same place) faults there again, under the
 * rwsem. ib_core has no way to register pages its caller pinned (a
 * fast-registration MR is limited to max_fast_reg_page_list_len pages);
 * uverbs' reg_mr, which pins inside the driver while removal waits for
 * it, has the same window.
 */
struct kdat_upin {
	struct page **pages;
	unsigned long nr;
};

/* As the mm's vma_needs_dirty_tracking() (6.5 on) decides. */
static bool kdat_vma_dirty_tracked(struct vm_area_struct *vma)
{
	if ((vma->vm_flags & (VM_WRITE | VM_SHARED)) != (VM_WRITE | VM_SHARED))
		return false;
	if (vma->vm_ops &&
	    (vma->vm_ops->page_mkwrite || vma->vm_ops->pfn_mkwrite))
		return true;
	return vma->vm_file && vma->vm_file->f_mapping &&
	       mapping_can_writeback(vma->vm_file->f_mapping);
}

/* -EFAULT if a page of [@addr, @end) is in a dirty-tracked mapping. */
static int kdat_upin_check_vmas(u64 addr, u64 end)
{
	struct mm_struct *mm = current->mm;
	struct vm_area_struct *vma;
	int ret = 0;

	if (mmap_read_lock_killable(mm))
		return -EINTR;
	while (addr < end) {
		vma = vma_lookup(mm, addr);
		if (!vma || kdat_vma_dirty_tracked(vma)) {
			ret = -EFAULT;
			break;
		}
		addr = vma->vm_end;
	}
	mmap_read_unlock(mm);
	return ret;
}

static int kdat_upin_get(struct kdat_upin *p, u64 addr, u64 length,
			 int access)
{
	unsigned long first = addr >> PAGE_SHIFT, npages, limit;
	unsigned int gup = FOLL_WRITE;
	long n;

	kdat_assert_user_access();
	if (!ib_access_writable(access))
		gup |= FOLL_FORCE;
	p->nr = 0;
	npages = ((addr + length - 1) >> PAGE_SHIFT) - first + 1;
	/* What ib_umem_get() refuses, refused before anything is pinned. */
	limit = rlimit(RLIMIT_MEMLOCK) >> PAGE_SHIFT;
	if (npages + atomic64_read(&current->mm->pinned_vm) > limit &&
	    !capable(CAP_IPC_LOCK))
		return -ENOMEM;
	p->pages = kvmalloc_array(npages, sizeof(*p->pages),
				  GFP_KERNEL_ACCOUNT | __GFP_NOWARN);
	if (!p->pages)
		return -ENOMEM;
	while (p->nr < npages) {
		n = pin_user_pages_unlocked((first + p->nr) << PAGE_SHIFT,
					    min_t(unsigned long, npages - p->nr,
						  SZ_64K),
					    p->pages + p->nr, gup);
		if (n <= 0 || fatal_signal_pending(current)) {
			if (n > 0)
				p->nr += n;
			unpin_user_pages(p->pages, p->nr);
			kvfree(p->pages);
			return n < 0 ? n : n ? -EINTR : -EFAULT;
		}
		p->nr += n;
		cond_resched();
	}
	/* After the pin, which faulted the range in: as the driver finds it. */
	n = kdat_upin_check_vmas(addr, addr + length);
	if (n) {
		unpin_user_pages(p->pages, p->nr);
		kvfree(p->pages);
	}
	return n;
}

static void kdat_upin_put(struct kdat_upin *p)
{
	unpin_user_pages(p->pages, p->nr);
	kvfree(p->pages);
}

static bool kdat_pz_atomics(const struct kdat_pz *pz)
{
	return !(pz->ia->limits & KDAT_IA_NO_ATOMICS);
}

static struct kdat_lmr *kdat_lmr_alloc(struct kdat_pz *pz, u64 addr,
				       u64 length, u32 mem_priv)
{
	struct kdat_lmr *lmr;

	lmr = kdat_obj_alloc(struct kdat_lmr, obj, KDAT_OBJ_LMR, &kdat_lmr_ops);
	if (!lmr)
		return NULL;
	lmr->pz = pz;
	lmr->addr = addr;
	lmr->length = length;
	/*
	 * Local write implies local read, as on every RDMA device (and as
	 * DAT programs written for OFA's provider rely on: dtest sends from
	 * buffers registered for local write only).
	 */
	lmr->mem_priv = mem_priv;
	if (lmr->mem_priv & KDAT_MEM_PRIV_LOCAL_WRITE)
		lmr->mem_priv |= KDAT_MEM_PRIV_LOCAL_READ;
	INIT_LIST_HEAD(&lmr->res.node);
	return lmr;
}

/*
 * An LMR on [@addr, @addr + @length) of the calling process's memory,
 * reserved; the caller holds kfile->lock.
 */
int kdat_lmr_new_user(struct kdat_file *kfile, struct kdat_pz *pz, u64 addr,
		      u64 length, u32 mem_priv, struct kdat_lmr **lmrp)
{
	struct kdat_upin pin;
	struct kdat_lmr *lmr;
	u64 end;
	int ret;

	if (mem_priv & ~(KDAT_MEM_PRIV_ALL | KDAT_MEM_PRIV_REMOTE_ATOMIC))
		return -EINVAL;
	if (!length || check_add_overflow(addr, length, &end) ||
	    end > TASK_SIZE)
		return -EINVAL;
	lmr = kdat_lmr_alloc(pz, addr, length, mem_priv);
	if (!lmr)
		return -ENOMEM;
	/* Pinning fails with EFAULT for an unmapped range. */
	/* Atomics or not, the MR writes the same (kdat_mem_priv_to_ib()). */
	ret = kdat_upin_get(&pin, addr, length,
			    kdat_mem_priv_to_ib(mem_priv, false));
	if (ret)
		goto err_free;

	down_read(&pz->ia->kdev->rwsem);
	if (!pz->pd)
		lmr->mr = ERR_PTR(-ENODEV);
	else
		lmr->mr = ib_reg_user_mr(pz->pd, addr, length, addr,
					 kdat_mem_priv_to_ib(mem_priv,
						kdat_pz_atomics(pz)));
	if (IS_ERR(lmr->mr)) {
		up_read(&pz->ia->kdev->rwsem);
		kdat_upin_put(&pin);
		ret = PTR_ERR(lmr->mr);
		goto err_free;
	}
	/* The rkey is read here: once the rwsem goes, removal may free mr. */
	lmr->rkey = lmr->mr->rkey;
	ret = kdat_dev_res_add(pz->ia->kdev, &lmr->res, 1,
			       kdat_lmr_disassociate);
	up_read(&pz->ia->kdev->rwsem);
	kdat_upin_put(&pin);
	if (ret)
		goto err_mr;

	ret = kdat_obj_reserve(kfile, &lmr->obj, pz->ia);
	if (ret)
		goto err_mr;
	kdat_obj_use(&pz->obj, pz->ia);
	*lmrp = lmr;
	return 0;

err_mr:
	kdat_lmr_release(lmr);
err_free:
	kdat_obj_abort(&lmr->obj);
	return ret;
}

/*
 * An LMR on kernel memory: the pages of @sgt (the LMR takes the table;
 * it is freed with the LMR, or here on failure), named [@va, @va +
 * length) in IOVs. DMA-mapped for the LMR's life. Remote privileges are
 * refused (EINVAL): a kernel consumer grants remote access with an RMR
 * bound on an Endpoint, whose QP carries the registration.
 */
int kdat_lmr_new_kernel(struct kdat_file *kfile, struct kdat_pz *pz,
			struct sg_table *sgt, u64 va, u32 mem_priv,
			struct kdat_lmr **lmrp)
{
	struct scatterlist *sg;
	struct kdat_lmr *lmr;
	u64 length = 0, end;
	unsigned int i;
	int ret;

	for_each_sgtable_sg(sgt, sg, i)
		length += sg->length;
	if (mem_priv & ~(KDAT_MEM_PRIV_LOCAL_READ |
			 KDAT_MEM_PRIV_LOCAL_WRITE) || !mem_priv || !length ||
	    check_add_overflow(va, length, &end)) {
		ret = -EINVAL;
		goto err_table;
	}
	lmr = kdat_lmr_alloc(pz, va, length, mem_priv);
	if (!lmr) {
		ret = -ENOMEM;
		goto err_table;
	}
	lmr->kernel = true;
	lmr->sgt = *sgt;

	down_read(&pz->ia->kdev->rwsem);
	ret = -ENODEV;
	if (pz->pd)
		ret = ib_dma_map_sgtable_attrs(pz->pd->device, &lmr->sgt,
					       DMA_BIDIRECTIONAL, 0);
	if (ret) {
		up_read(&pz->ia->kdev->rwsem);
		goto err_free;
	}
	lmr->mapped = true;
	ret = kdat_dev_res_add(pz->ia->kdev, &lmr->res, 1,
			       kdat_lmr_disassociate);
	up_read(&pz->ia->kdev->rwsem);
	if (!ret)
		ret = kdat_obj_reserve(kfile, &lmr->obj, pz->ia);
	if (ret) {
		kdat_lmr_release(lmr);
		goto err_free;
	}
	kdat_obj_use(&pz->obj, pz->ia);
	*lmrp = lmr;
	return 0;

err_free:
	kdat_obj_abort(&lmr->obj);
err_table:
	sg_free_table(sgt);
	return ret;
}

/*
 * Walk the DMA segments of kernel LMR @lmr under [@va, @va + @len), which
 * the caller has checked against the LMR's bounds: @fn gets each piece's
 * DMA address and length. Returns @fn's first non-zero result, or 0.
 */
int kdat_lmr_dma_walk(const struct kdat_lmr *lmr, u64 va, u64 len,
		      int (*fn)(void *arg, u64 dma, u32 len), void *arg)
{
	u64 off = va - lmr->addr, pos = 0;
	struct scatterlist *sg;
	unsigned int i;
	int ret;

	for_each_sgtable_dma_sg(&lmr->sgt, sg, i) {
		u64 seg = sg_dma_len(sg), skip, take;

		if (!len)
			break;
		if (off >= pos + seg) {
			pos += seg;
			continue;
		}
		skip = off - pos;
		take = min(seg - skip, len);
		ret = fn(arg, sg_dma_address(sg) + skip, take);
		if (ret)
			return ret;
		off += take;
		len -= take;
		pos += seg;
	}
	return len ? -EINVAL : 0;
}

int kdat_cmd_lmr_create(struct kdat_ucmd *ucmd)
{
	struct kdat_lmr_create *cmd = ucmd->cmd;
	struct kdat_file *kfile = ucmd->kfile;
	struct kdat_lmr *lmr;
	struct kdat_pz *pz;
	int ret;

	if (cmd->flags)
		return -EOPNOTSUPP;
	if (cmd->__reserved)
		return -EINVAL;

	mutex_lock(&kfile->lock);
	pz = kdat_get(kfile, cmd->pz_handle, struct kdat_pz, KDAT_OBJ_PZ);
	if (!pz) {
		ret = -EBADF;
		goto out_unlock;
	}
	ret = kdat_lmr_new_user(kfile, pz, cmd->addr, cmd->length,
				cmd->mem_priv, &lmr);
	if (!ret) {
		cmd->out_lmr_handle = lmr->obj.handle;
		cmd->out_lmr_context = lmr->obj.handle;
		cmd->out_rmr_context = lmr->rkey;
		ret = kdat_ucmd_finish(ucmd, sizeof(*cmd), &lmr->obj);
	}
	kdat_obj_put(&pz->obj);
out_unlock:
	mutex_unlock(&kfile->lock);
	return ret;
}

static void kdat_rmr_disassociate(struct kdat_dev_res *res)
{
	struct kdat_rmr *rmr = container_of(res, struct kdat_rmr, res);

	if (rmr->mr)
		ib_dereg_mr(rmr->mr);
	rmr->mr = NULL;
}

static void kdat_rmr_release(struct kdat_rmr *rmr)
{
	struct kdat_device *kdev = rmr->pz->ia->kdev;

	down_read(&kdev->rwsem);
	if (kdat_dev_res_del(kdev, &rmr->res))
		kdat_rmr_disassociate(&rmr->res);
	up_read(&kdev->rwsem);
}

static void kdat_rmr_destroy(struct kdat_obj *obj)
{
	struct kdat_rmr *rmr = container_of(obj, struct kdat_rmr, obj);

	kdat_rmr_release(rmr);
	if (rmr->lmr)
		kdat_obj_unuse(&rmr->lmr->obj, rmr->pz->ia);
	kdat_obj_unuse(&rmr->pz->obj, rmr->pz->ia);
}

static const struct kdat_obj_ops kdat_rmr_ops = {
	.destroy = kdat_rmr_destroy,
};

/* An RMR in @pz, reserved; the caller holds kfile->lock. */
int kdat_rmr_new(struct kdat_file *kfile, struct kdat_pz *pz,
		 struct kdat_rmr **rmrp)
{
	struct kdat_rmr *rmr;
	int ret;

	rmr = kdat_obj_alloc(struct kdat_rmr, obj, KDAT_OBJ_RMR, &kdat_rmr_ops);
	if (!rmr)
		return -ENOMEM;
	rmr->pz = pz;
	mutex_init(&rmr->lock);
	INIT_LIST_HEAD(&rmr->res.node);
	ret = kdat_obj_reserve(kfile, &rmr->obj, pz->ia);
	if (ret)
		goto err_free;
	down_read(&pz->ia->kdev->rwsem);
	if (!pz->pd) {
		up_read(&pz->ia->kdev->rwsem);
		ret = -ENODEV;
		goto err_free;
	}
	/* Listed from the start: a bind adds an MR under the rwsem. */
	ret = kdat_dev_res_add(pz->ia->kdev, &rmr->res, 1,
			       kdat_rmr_disassociate);
	up_read(&pz->ia->kdev->rwsem);
	if (ret) {
		kdat_rmr_release(rmr);
		goto err_free;
	}
	kdat_obj_use(&pz->obj, pz->ia);
	*rmrp = rmr;
	return 0;

err_free:
	kdat_obj_abort(&rmr->obj);
	return ret;
}

int kdat_cmd_rmr_create(struct kdat_ucmd *ucmd)
{
	struct kdat_rmr_create *cmd = ucmd->cmd;
	struct kdat_file *kfile = ucmd->kfile;
	struct kdat_rmr *rmr;
	struct kdat_pz *pz;
	int ret;

	if (cmd->flags)
		return -EOPNOTSUPP;
	mutex_lock(&kfile->lock);
	pz = kdat_get(kfile, cmd->pz_handle, struct kdat_pz, KDAT_OBJ_PZ);
	if (!pz) {
		ret = -EBADF;
		goto out_unlock;
	}
	ret = kdat_rmr_new(kfile, pz, &rmr);
	if (!ret) {
		cmd->out_rmr_handle = rmr->obj.handle;
		ret = kdat_ucmd_finish(ucmd, sizeof(*cmd), &rmr->obj);
	}
	kdat_obj_put(&pz->obj);
out_unlock:
	mutex_unlock(&kfile->lock);
	return ret;
}

/*
 * What a bind's privileges grant: the remote ones. DAT takes any of its
 * flags, none (an RMR the peer cannot use) up to DAT_MEM_PRIV_ALL_FLAG;
 * the local ones mean nothing to the peer, and are not given to the MR.
 */
static u32 kdat_rmr_priv(u32 priv)
{
	return priv & (KDAT_MEM_PRIV_REMOTE_READ | KDAT_MEM_PRIV_REMOTE_WRITE |
		       KDAT_MEM_PRIV_REMOTE_ATOMIC);
}

/* The IB access flags of @rmr's MR for a bind with @priv. */
static int kdat_rmr_access(const struct kdat_rmr *rmr, u32 priv)
{
	return kdat_mem_priv_to_ib(kdat_rmr_priv(priv),
				   kdat_pz_atomics(rmr->pz));
}

/* Check a bind of @rmr to [@addr, @addr + @len) of @lmr with @priv. */
static int kdat_rmr_check(const struct kdat_rmr *rmr,
			  const struct kdat_lmr *lmr, u32 priv, u64 addr,
			  u64 len)
{
	u32 need = 0;

	if (priv & ~(KDAT_MEM_PRIV_ALL | KDAT_MEM_PRIV_REMOTE_ATOMIC))
		return -EINVAL;
	priv = kdat_rmr_priv(priv);
	if (priv & KDAT_MEM_PRIV_REMOTE_READ)
		need |= KDAT_MEM_PRIV_LOCAL_READ;
	if (priv & (KDAT_MEM_PRIV_REMOTE_WRITE | KDAT_MEM_PRIV_REMOTE_ATOMIC))
		need |= KDAT_MEM_PRIV_LOCAL_WRITE;
	return kdat_rule_segment(lmr->mem_priv, lmr->pz == rmr->pz, lmr->addr,
				 lmr->length, need, addr, len);
}

struct kdat_sub_sg {
	struct scatterlist *sg;
	unsigned int n, max;
};

static int kdat_sub_sg_add(void *arg, u64 dma, u32 len)
{
	struct kdat_sub_sg *s = arg;

	if (s->n == s->max)
		return -EINVAL;
	sg_dma_address(&s->sg[s->n]) = dma;
	sg_dma_len(&s->sg[s->n]) = len;
	s->n++;
	return 0;
}

/*
 * Bind @rmr to part of a kernel LMR: a fast-registration MR over the
 * range's pages, its iova the range's address, registered by a REG_MR
 * work request on @ep's send queue. Its completion is the bind's event.
 * Called with the device's rwsem and rmr->lock held, @ep connected.
 */
static int kdat_rmr_bind_frwr(struct kdat_rmr *rmr, struct kdat_lmr *lmr,
			      struct kdat_ep *ep, struct kdat_rmr_bind *cmd,
			      struct ib_mr **mrp)
{
	struct kdat_sub_sg sub = { .max = lmr->sgt.nents };
	struct kdat_dto_ctx *ctx;
	struct ib_reg_wr wr = {};
	unsigned long flags;
	struct ib_mr *mr;
	u32 npages;
	int ret, n;

	sub.sg = kcalloc(sub.max, sizeof(*sub.sg), GFP_KERNEL_ACCOUNT);
	if (!sub.sg)
		return -ENOMEM;
	sg_init_table(sub.sg, sub.max);
	ret = kdat_lmr_dma_walk(lmr, cmd->addr, cmd->length, kdat_sub_sg_add,
				&sub);
	if (ret)
		goto out_free;
	npages = DIV_ROUND_UP((cmd->addr & ~PAGE_MASK) + cmd->length,
			      PAGE_SIZE) + sub.n;
	mr = ib_alloc_mr(rmr->pz->pd, IB_MR_TYPE_MEM_REG, npages);
	if (IS_ERR(mr)) {
		ret = PTR_ERR(mr);
		goto out_free;
	}
	sg_mark_end(&sub.sg[sub.n - 1]);
	n = ib_map_mr_sg(mr, sub.sg, sub.n, NULL, PAGE_SIZE);
	/*
	 * Every piece must map (pages in the middle are whole) and the range
	 * must keep its offset in the page: the peer names it by @addr.
	 */
	if (n != sub.n || ((mr->iova ^ cmd->addr) & ~PAGE_MASK)) {
		ret = -EINVAL;
		goto err_mr;
	}
	mr->iova = cmd->addr;

	spin_lock_irqsave(&ep->lock, flags);
	ctx = kdat_slot_get(&ep->send);
	spin_unlock_irqrestore(&ep->lock, flags);
	if (!ctx) {
		ret = -ENOMEM;
		goto err_mr;
	}
	ctx->op = KDAT_OP_BIND;
	ctx->cookie = cmd->cookie;
	ctx->flags = cmd->completion_flags;
	ctx->length = 0;
	ctx->rmr_handle = rmr->obj.handle;
	wr.wr.opcode = IB_WR_REG_MR;
	wr.wr.wr_cqe = &ctx->cqe;
	wr.wr.send_flags = IB_SEND_SIGNALED;
	wr.mr = mr;
	wr.key = mr->rkey;
	wr.access = kdat_rmr_access(rmr, cmd->mem_priv);
	ret = kdat_ep_qp_send(ep, &wr.wr, NULL);
	if (ret) {
		kdat_dto_abort(ep, ctx);
		ret = -ENOMEM;
		goto err_mr;
	}
	*mrp = mr;
	goto out_free;

err_mr:
	ib_dereg_mr(mr);
out_free:
	kfree(sub.sg);
	return ret;
}

/*
 * Bind (or unbind, @cmd->length 0) an RMR of @kfile: the one
 * implementation for the ioctl and kdat_rmr_bind(). Sets
 * @cmd->out_rmr_context.
 */
int kdat_rmr_bind_do(struct kdat_file *kfile, struct kdat_rmr_bind *cmd)
{
	struct kdat_event ev = {
		.event_number = KDAT_EVENT_RMR_BIND_COMPLETION,
		.cookie = cmd->cookie,
		.status = KDAT_DTO_SUCCESS,
	};
	struct kdat_lmr *lmr = NULL, *unused = NULL;
	enum kdat_ep_verdict verdict;
	struct kdat_device *kdev;
	bool posted = false, pinned = false;
	struct kdat_upin pin;
	struct kdat_rmr *rmr;
	struct kdat_ep *ep;
	struct ib_mr *mr;
	int ret;

	if (cmd->out_flags ||
	    cmd->completion_flags & ~KDAT_COMPLETION_SUPPRESS)
		return -EINVAL;
	rmr = kdat_get(kfile, cmd->rmr_handle, struct kdat_rmr, KDAT_OBJ_RMR);
	if (!rmr)
		return -EBADF;
	ep = kdat_get(kfile, cmd->ep_handle, struct kdat_ep, KDAT_OBJ_EP);
	if (!ep) {
		ret = -EBADF;
		goto out_put_rmr;
	}
	if (cmd->length) {
		/*
		 * Under the file lock, found and used in one step: a free of
		 * the LMR either went first (not found) or finds the use.
		 */
		mutex_lock(&kfile->lock);
		lmr = kdat_get(kfile, cmd->lmr_context, struct kdat_lmr,
			       KDAT_OBJ_LMR);
		if (lmr)
			kdat_obj_use(&lmr->obj, rmr->pz->ia);
		mutex_unlock(&kfile->lock);
		if (!lmr) {
			ret = -EACCES;	/* an invalid LMR */
			goto out_put_ep;
		}
		/* The use of the LMR that this bind does not keep. */
		unused = lmr;
		ret = kdat_rmr_check(rmr, lmr, cmd->mem_priv, cmd->addr,
				     cmd->length);
		if (ret)
			goto out_put;
	}
	if (ep->pz != rmr->pz) {
		ret = -EPERM;
		goto out_put;
	}
	ev.handle = rmr->obj.handle;
	/*
	 * A user LMR's range is pinned by the driver: first here (see
	 * struct kdat_upin), unless the EP's state refuses the bind anyway
	 * (checked again below, under the locks).
	 */
	if (kdat_ep_allowed(READ_ONCE(ep->state), KDAT_EP_OP_RMR_BIND) ==
	    KDAT_EP_REFUSE) {
		ret = -EBUSY;
		goto out_put;
	}
	if (lmr && !lmr->kernel) {
		ret = kdat_upin_get(&pin, cmd->addr, cmd->length,
				    kdat_mem_priv_to_ib(kdat_rmr_priv(cmd->mem_priv),
							false));
		if (ret)
			goto out_put;
		pinned = true;
	}

	kdev = rmr->pz->ia->kdev;
	down_read(&kdev->rwsem);
	mutex_lock(&rmr->lock);
	verdict = kdat_ep_allowed(READ_ONCE(ep->state), KDAT_EP_OP_RMR_BIND);
	if (verdict == KDAT_EP_FLUSH) {
		ev.status = KDAT_DTO_ERR_FLUSHED;	/* nothing bound */
		cmd->out_flags = KDAT_RMR_BIND_FLUSHED;
		ret = 0;
	} else if (verdict != KDAT_EP_DO) {
		ret = -EBUSY;
	} else if (!rmr->pz->pd || (lmr && !lmr->kernel && !lmr->mr) ||
		   (lmr && lmr->kernel && !lmr->mapped) || !READ_ONCE(ep->qp)) {
		ret = -ENODEV;
	} else {
		mr = NULL;
		ret = 0;
		if (lmr && lmr->kernel) {
			ret = kdat_rmr_bind_frwr(rmr, lmr, ep, cmd, &mr);
			posted = !ret;
		} else if (cmd->length) {
			mr = ib_reg_user_mr(rmr->pz->pd, cmd->addr,
					    cmd->length, cmd->addr,
					    kdat_rmr_access(rmr, cmd->mem_priv));
			if (IS_ERR(mr))
				ret = PTR_ERR(mr);
		}
		if (!ret) {
			/* The old binding stops working now. */
			if (rmr->mr)
				ib_dereg_mr(rmr->mr);
			rmr->mr = mr;
			unused = rmr->lmr;
			rmr->lmr = lmr;
			cmd->out_rmr_context = mr ? mr->rkey : 0;
		}
	}
	mutex_unlock(&rmr->lock);
	up_read(&kdev->rwsem);
	if (pinned)
		kdat_upin_put(&pin);
	/* A REG_MR's completion is the event (kdat_dto_done()). */
	if (!ret && !posted &&
	    !(ev.status == KDAT_DTO_SUCCESS &&
	      cmd->completion_flags & KDAT_COMPLETION_SUPPRESS))
		kdat_evd_push(ep->req_evd, &ev);
out_put:
	if (unused)
		kdat_obj_unuse(&unused->obj, rmr->pz->ia);
	if (lmr)
		kdat_obj_put(&lmr->obj);
out_put_ep:
	kdat_obj_put(&ep->obj);
out_put_rmr:
	kdat_obj_put(&rmr->obj);
	return ret;
}

int kdat_cmd_rmr_bind(struct kdat_ucmd *ucmd)
{
	struct kdat_rmr_bind *cmd = ucmd->cmd;
	int ret;

	/*
	 * The event is queued before the answer: the caller learns the
	 * context from either. A failed copy leaves the binding made.
	 */
	ret = kdat_rmr_bind_do(ucmd->kfile, cmd);
	if (!ret)
		ret = kdat_ucmd_respond(ucmd, sizeof(*cmd));
	return ret;
}
