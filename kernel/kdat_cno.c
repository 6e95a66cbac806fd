// SPDX-License-Identifier: GPL-2.0
/*
 * kdat Consumer Notification Objects.
 *
 * A CNO hears of an event on any EVD associated with it
 * (kdat_cmd_evd_modify_cno()) that no waiter on the EVD itself took and
 * that is not disabled: kdat_evd.c calls kdat_cno_trigger() under the
 * EVD's lock, which names the EVD to one dat_cno_wait() (kdat_cno_take())
 * and, kept apart, to the CNO's OS Wait Proxy Agent, which libdat runs in
 * a thread of its own (kdat_cmd_cno_agent()). cno->lock, taken under an
 * EVD's lock and never the other way round, guards the trigger and the
 * agent's arming.
 */
#include <linux/jiffies.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>

#include "kdat.h"

/* Tell the CNO that @evd has an event; evd->lock held. */
void kdat_cno_trigger(struct kdat_cno *cno, struct kdat_evd *evd)
{
	spin_lock(&cno->lock);
	if (!cno->triggered)
		cno->triggered = evd->obj.handle;
	if (cno->armed) {
		cno->armed = false;
		cno->agent_evd = evd->obj.handle;
		cno->kept_seq = cno->agent_seq;
	}
	spin_unlock(&cno->lock);
	wake_up(&cno->wq);
}

static void kdat_cno_destroy(struct kdat_obj *obj)
{
	struct kdat_cno *cno = container_of(obj, struct kdat_cno, obj);

	kdat_obj_unuse(&cno->ia->obj, cno->ia);
}

static void kdat_cno_kill(struct kdat_obj *obj)
{
	wake_up_all(&container_of(obj, struct kdat_cno, obj)->wq);
}

static const struct kdat_obj_ops kdat_cno_ops = {
	.kill = kdat_cno_kill,
	.destroy = kdat_cno_destroy,
};

int kdat_cmd_cno_create(struct kdat_ucmd *ucmd)
{
	struct kdat_cno_create *cmd = ucmd->cmd;
	struct kdat_file *kfile = ucmd->kfile;
	struct kdat_cno *cno;
	struct kdat_ia *ia;
	int ret;

	if (cmd->flags)
		return -EOPNOTSUPP;
	mutex_lock(&kfile->lock);
	ia = kdat_ia_get(kfile, cmd->ia_handle);
	if (!ia) {
		ret = -EBADF;
		goto out_unlock;
	}
	cno = kdat_obj_alloc(struct kdat_cno, obj, KDAT_OBJ_CNO, &kdat_cno_ops);
	if (!cno) {
		ret = -ENOMEM;
		goto out_put;
	}
	cno->ia = ia;
	spin_lock_init(&cno->lock);
	init_waitqueue_head(&cno->wq);
	ret = kdat_obj_reserve(kfile, &cno->obj, ia);
	if (ret) {
		kdat_obj_abort(&cno->obj);
		goto out_put;
	}
	/* Counted before the answer: a failed copy undoes it by destroy. */
	kdat_obj_use(&ia->obj, ia);
	cmd->out_cno_handle = cno->obj.handle;
	ret = kdat_ucmd_finish(ucmd, sizeof(*cmd), &cno->obj);
out_put:
	kdat_obj_put(&ia->obj);
out_unlock:
	mutex_unlock(&kfile->lock);
	return ret;
}

/* Take the triggering EVD, if any. */
static u32 kdat_cno_take(struct kdat_cno *cno)
{
	unsigned long flags;
	u32 h;

	spin_lock_irqsave(&cno->lock, flags);
	h = cno->triggered;
	cno->triggered = 0;
	spin_unlock_irqrestore(&cno->lock, flags);
	return h;
}

int kdat_cmd_cno_wait(struct kdat_ucmd *ucmd)
{
	struct kdat_cno_wait *cmd = ucmd->cmd;
	struct kdat_cno *cno;
	long timeout;
	u32 h = 0;
	int ret;

	if (cmd->__reserved)
		return -EINVAL;
	cno = kdat_get(ucmd->kfile, cmd->cno_handle, struct kdat_cno,
		       KDAT_OBJ_CNO);
	if (!cno)
		return -EBADF;
	if (cmd->timeout_us == KDAT_WAIT_FOREVER)
		timeout = MAX_SCHEDULE_TIMEOUT;
	else
		timeout = usecs_to_jiffies(min_t(u64, cmd->timeout_us,
						 U32_MAX));
	timeout = wait_event_interruptible_timeout(cno->wq,
						   (h = kdat_cno_take(cno)) ||
						   READ_ONCE(cno->obj.dead),
						   timeout);
	if (READ_ONCE(cno->obj.dead))
		ret = -EBADF;
	else if (timeout < 0)
		ret = -EINTR;
	else if (!h)
		ret = -ETIMEDOUT;
	else
		ret = 0;
	if (!ret) {
		cmd->out_evd_handle = h;
		ret = kdat_ucmd_respond(ucmd, sizeof(*cmd));
	}
	kdat_obj_put(&cno->obj);
	return ret;
}

/*
 * Take the trigger kept for the agent into @h, its arming into @seq. True
 * when there is one, or when none can come (not armed: @h is 0).
 */
static bool kdat_cno_agent_take(struct kdat_cno *cno, u32 *h, u32 *seq)
{
	unsigned long flags;
	bool done;

	spin_lock_irqsave(&cno->lock, flags);
	*h = cno->agent_evd;
	*seq = cno->kept_seq;
	cno->agent_evd = 0;
	done = *h || !cno->armed;
	spin_unlock_irqrestore(&cno->lock, flags);
	return done;
}

/*
 * A CNO's OS Wait Proxy Agent. libdat arms the CNO when the Consumer gives
 * it an agent and a thread of its own waits for the trigger and calls the
 * agent; the trigger is kept apart from the consumer's (kdat_cno_take()),
 * so that an agent and a dat_cno_wait() both hear it.
 */
int kdat_cmd_cno_agent(struct kdat_ucmd *ucmd)
{
	struct kdat_cno_agent *cmd = ucmd->cmd;
	struct kdat_cno *cno;
	unsigned long flags;
	u32 h = 0, seq = 0;
	int ret = 0;

	if (cmd->__reserved || cmd->op < KDAT_CNO_AGENT_ARM ||
	    cmd->op > KDAT_CNO_AGENT_WAIT)
		return -EINVAL;
	cno = kdat_get(ucmd->kfile, cmd->cno_handle, struct kdat_cno,
		       KDAT_OBJ_CNO);
	if (!cno)
		return -EBADF;
	if (cmd->op == KDAT_CNO_AGENT_WAIT) {
		if (wait_event_interruptible(cno->wq,
					     kdat_cno_agent_take(cno, &h, &seq) ||
					     READ_ONCE(cno->obj.dead)))
			ret = -EINTR;
		else if (READ_ONCE(cno->obj.dead))
			ret = -EBADF;
		else if (!h)
			ret = -EBUSY;
	} else {
		spin_lock_irqsave(&cno->lock, flags);
		cno->armed = cmd->op == KDAT_CNO_AGENT_ARM;
		cno->agent_evd = 0;
		seq = ++cno->agent_seq;
		spin_unlock_irqrestore(&cno->lock, flags);
		wake_up_all(&cno->wq);
	}
	if (!ret) {
		cmd->out_evd_handle = h;
		cmd->out_seq = seq;
		ret = kdat_ucmd_respond(ucmd, sizeof(*cmd));
	}
	if (ret && h) {
		/* Not answered: it stays, unless armed or disarmed since. */
		spin_lock_irqsave(&cno->lock, flags);
		if (!cno->agent_evd && !cno->armed && seq == cno->agent_seq) {
			cno->agent_evd = h;
			cno->kept_seq = seq;
		}
		spin_unlock_irqrestore(&cno->lock, flags);
	}
	kdat_obj_put(&cno->obj);
	return ret;
}

int kdat_cmd_evd_modify_cno(struct kdat_ucmd *ucmd)
{
	struct kdat_evd_modify_cno *cmd = ucmd->cmd;
	struct kdat_file *kfile = ucmd->kfile;
	struct kdat_cno *cno = NULL, *old;
	struct kdat_evd *evd;
	unsigned long flags;
	int ret = 0;

	if (cmd->__reserved)
		return -EINVAL;
	/* Under the file lock: neither can go meanwhile. */
	mutex_lock(&kfile->lock);
	evd = kdat_get(kfile, cmd->evd_handle, struct kdat_evd, KDAT_OBJ_EVD);
	if (!evd) {
		ret = -EBADF;
		goto out_unlock;
	}
	if (cmd->cno_handle) {
		cno = kdat_get(kfile, cmd->cno_handle, struct kdat_cno,
			       KDAT_OBJ_CNO);
		if (!cno) {
			ret = -EBADF;
			goto out_put;
		}
		if (cno->ia != evd->ia) {
			ret = -EINVAL;
			goto out_put;
		}
		kdat_obj_use(&cno->obj, evd->ia);
	}
	spin_lock_irqsave(&evd->lock, flags);
	old = evd->cno;
	evd->cno = cno;
	spin_unlock_irqrestore(&evd->lock, flags);
	if (old)
		kdat_obj_unuse(&old->obj, evd->ia);
out_put:
	if (cno)
		kdat_obj_put(&cno->obj);
	kdat_obj_put(&evd->obj);
out_unlock:
	mutex_unlock(&kfile->lock);
	return ret;
}
