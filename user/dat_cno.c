// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * libdat Consumer Notification Objects and their OS Wait Proxy Agents.
 *
 * DAT calls a CNO's agent when the CNO is triggered, in addition to
 * waking its waiters, and then no longer associates the agent with the
 * CNO. The trigger happens in the kernel, so the agent is called from a
 * thread of libdat's: while a CNO has an agent, the kernel keeps the
 * CNO's next trigger for it (KDAT_IOCTL_CNO_AGENT, armed) and the thread
 * sleeps in KDAT_CNO_AGENT_WAIT until it comes, then calls the agent with
 * the EVD that triggered the CNO. The thread has its own descriptor of
 * /dev/kdat (the IA may be closed under it) and all signals blocked; it
 * ends when the CNO has no agent left, or is destroyed. Whichever of the
 * thread and kd_cno_release() comes last frees the CNO.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/ioctl.h>

#include "dat_internal.h"

static bool kd_agent_set(const DAT_OS_WAIT_PROXY_AGENT *a)
{
	return a->proxy_agent_func != NULL;
}

/*
 * Arm or disarm @cno's agent trigger in the kernel; the change's number
 * in @seq. cno->lock held.
 */
static DAT_RETURN kd_cno_arm(struct kd_cno *cno, bool arm, uint32_t *seq)
{
	struct kdat_cno_agent c = {
		.size = sizeof(c),
		.cno_handle = cno->obj.kh,
		.op = arm ? KDAT_CNO_AGENT_ARM : KDAT_CNO_AGENT_DISARM,
	};
	DAT_RETURN ret = kd_ioctl(cno->obj.ia, KDAT_IOCTL_CNO_AGENT, &c);

	if (ret == DAT_SUCCESS)
		*seq = c.out_seq;
	return ret;
}

static void kd_cno_free_mem(struct kd_cno *cno)
{
	pthread_mutex_destroy(&cno->lock);
	free(cno);
}

static void *kd_cno_helper(void *arg)
{
	struct kd_cno *cno = arg;
	/* Ours: a helper started after we end has its own. */
	int fd = cno->helper_fd;
	DAT_OS_WAIT_PROXY_AGENT agent;
	struct kdat_cno_agent c;
	bool gone, done;
	DAT_HANDLE evd;
	int err;

	do {
		memset(&c, 0, sizeof(c));
		c.size = sizeof(c);
		c.cno_handle = cno->obj.kh;
		c.op = KDAT_CNO_AGENT_WAIT;
		do
			err = ioctl(fd, KDAT_IOCTL_CNO_AGENT, &c) ? errno : 0;
		while (err == EINTR);
		evd = err ? NULL : kd_table_find(c.out_evd_handle);
		pthread_mutex_lock(&cno->lock);
		/*
		 * A trigger of the arming that gave the CNO its agent: one
		 * taken just before dat_cno_modify_agent armed it again is
		 * the replaced agent's, and the new one is not called.
		 */
		if (!err && !cno->gone && kd_agent_set(&cno->agent) &&
		    c.out_seq == cno->seq) {
			/* Called once: then no longer the CNO's agent. */
			agent = cno->agent;
			cno->agent = DAT_OS_WAIT_PROXY_AGENT_NULL;
			pthread_mutex_unlock(&cno->lock);
			agent.proxy_agent_func(agent.instance_data, evd);
			pthread_mutex_lock(&cno->lock);
		}
		/* EBUSY: disarmed; an agent given since armed it again. */
		done = cno->gone || !kd_agent_set(&cno->agent) ||
		       (err && err != EBUSY);
		if (done)
			cno->helper = false;
		gone = cno->gone;
		pthread_mutex_unlock(&cno->lock);
	} while (!done);
	close(fd);
	if (gone)
		kd_cno_free_mem(cno);
	return NULL;
}

/* Start @cno's helper thread, unless it runs; cno->lock held. */
static DAT_RETURN kd_cno_helper_start(struct kd_cno *cno)
{
	sigset_t all, old;
	pthread_attr_t attr;
	pthread_t t;
	int ret;

	if (cno->helper)
		return DAT_SUCCESS;
	cno->helper_fd = fcntl(cno->obj.ia->fd, F_DUPFD_CLOEXEC, 0);
	if (cno->helper_fd < 0)
		return DAT_INSUFFICIENT_RESOURCES;
	if (pthread_attr_init(&attr)) {
		close(cno->helper_fd);
		return DAT_INSUFFICIENT_RESOURCES;
	}
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	/* The Consumer's signals are for its own threads. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	ret = pthread_create(&t, &attr, kd_cno_helper, cno);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	pthread_attr_destroy(&attr);
	if (ret) {
		close(cno->helper_fd);
		return DAT_INSUFFICIENT_RESOURCES;
	}
	cno->helper = true;
	return DAT_SUCCESS;
}

/*
 * Give @cno @agent (none: DAT_OS_WAIT_PROXY_AGENT_NULL). On failure the
 * CNO keeps the agent it had. cno->lock held.
 */
static DAT_RETURN kd_cno_set_agent(struct kd_cno *cno,
				   DAT_OS_WAIT_PROXY_AGENT agent)
{
	uint32_t seq;
	DAT_RETURN ret;

	if (!kd_agent_set(&agent)) {
		/* Wakes the helper: it ends. */
		ret = kd_cno_arm(cno, false, &seq);
		if (ret == DAT_SUCCESS) {
			cno->agent = agent;
			cno->seq = seq;
		}
		return ret;
	}
	/*
	 * The helper first, so that a failure changes nothing. Until the
	 * kernel is armed its wait answers EBUSY; it then waits for this
	 * lock, and waits again if the CNO has an agent by then, or ends.
	 */
	ret = kd_cno_helper_start(cno);
	if (ret)
		return ret;
	ret = kd_cno_arm(cno, true, &seq);
	if (ret)
		return ret;
	cno->agent = agent;
	cno->seq = seq;
	return DAT_SUCCESS;
}

/*
 * The CNO's memory, once it is out of the handle table and its kernel
 * object is destroyed (kd_obj_free()): the helper, woken by the destroy,
 * frees it if it still runs (it may be in the agent).
 */
void kd_cno_release(struct kd_cno *cno)
{
	bool helper;

	pthread_mutex_lock(&cno->lock);
	cno->gone = true;
	helper = cno->helper;
	pthread_mutex_unlock(&cno->lock);
	if (!helper)
		kd_cno_free_mem(cno);
}

DAT_RETURN kd_cno_create(DAT_IA_HANDLE ia_handle,
			 DAT_OS_WAIT_PROXY_AGENT agent,
			 DAT_CNO_HANDLE *cno_handle)
{
	struct kdat_cno_create c = { .size = sizeof(c) };
	struct kd_ia *ia = ia_handle;
	struct kd_cno *cno;
	DAT_RETURN ret;

	if (!kd_check(ia, DAT_HANDLE_TYPE_IA))
		return DAT_INVALID_HANDLE;
	if (!cno_handle)
		return DAT_INVALID_PARAMETER;
	cno = calloc(1, sizeof(*cno));
	if (!cno)
		return DAT_INSUFFICIENT_RESOURCES;
	c.ia_handle = ia->obj.kh;
	ret = kd_ioctl(ia, KDAT_IOCTL_CNO_CREATE, &c);
	if (ret) {
		free(cno);
		return ret;
	}
	pthread_mutex_init(&cno->lock, NULL);
	cno->helper_fd = -1;
	cno->obj.ia = ia;
	cno->obj.kh = c.out_cno_handle;
	/* No EVD feeds it yet: nothing can trigger it before the helper. */
	if (kd_agent_set(&agent)) {
		pthread_mutex_lock(&cno->lock);
		ret = kd_cno_set_agent(cno, agent);
		pthread_mutex_unlock(&cno->lock);
		if (ret) {
			kd_destroy_kh(ia, c.out_cno_handle);
			kd_cno_free_mem(cno);
			return ret;
		}
	}
	if (!kd_obj_init(&cno->obj, ia, DAT_HANDLE_TYPE_CNO, c.out_cno_handle))
		return kd_obj_abandon(&cno->obj);
	*cno_handle = cno;
	return DAT_SUCCESS;
}

DAT_RETURN kd_cno_free(DAT_CNO_HANDLE cno_handle)
{
	if (!kd_check(cno_handle, DAT_HANDLE_TYPE_CNO))
		return DAT_INVALID_HANDLE;
	return kd_destroy(cno_handle);
}

DAT_RETURN kd_cno_modify_agent(DAT_CNO_HANDLE cno_handle,
			       DAT_OS_WAIT_PROXY_AGENT agent)
{
	struct kd_cno *cno = cno_handle;
	DAT_RETURN ret;

	if (!kd_check(cno, DAT_HANDLE_TYPE_CNO))
		return DAT_INVALID_HANDLE;
	pthread_mutex_lock(&cno->lock);
	ret = kd_cno_set_agent(cno, agent);
	pthread_mutex_unlock(&cno->lock);
	return ret;
}

DAT_RETURN kd_cno_wait(DAT_CNO_HANDLE cno_handle,
		       DAT_TIMEOUT timeout,
		       DAT_EVD_HANDLE *evd_handle)
{
	struct kdat_cno_wait c = { .size = sizeof(c) };
	struct kd_cno *cno = cno_handle;
	DAT_RETURN ret;

	if (!kd_check(cno, DAT_HANDLE_TYPE_CNO))
		return DAT_INVALID_HANDLE;
	if (!evd_handle)
		return DAT_INVALID_PARAMETER;
	c.cno_handle = cno->obj.kh;
	c.timeout_us = timeout == DAT_TIMEOUT_INFINITE ? KDAT_WAIT_FOREVER :
							 timeout;
	ret = kd_ioctl(cno->obj.ia, KDAT_IOCTL_CNO_WAIT, &c);
	if (ret) {
		*evd_handle = DAT_HANDLE_NULL;	/* not triggered */
		return ret;
	}
	*evd_handle = (DAT_EVD_HANDLE)kd_table_find(c.out_evd_handle);
	return DAT_SUCCESS;
}

DAT_RETURN kd_cno_query(DAT_CNO_HANDLE cno_handle,
			DAT_CNO_PARAM_MASK mask,
			DAT_CNO_PARAM *param)
{
	struct kd_cno *cno = cno_handle;

	(void)mask;
	if (!kd_check(cno, DAT_HANDLE_TYPE_CNO))
		return DAT_INVALID_HANDLE;
	if (!param)
		return DAT_INVALID_PARAMETER;
	memset(param, 0, sizeof(*param));
	param->ia_handle = cno->obj.ia;
	param->proxy_type = DAT_PROXY_TYPE_AGENT;
	pthread_mutex_lock(&cno->lock);
	param->proxy.agent = cno->agent;
	pthread_mutex_unlock(&cno->lock);
	return DAT_SUCCESS;
}
