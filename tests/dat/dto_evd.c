// SPDX-License-Identifier: GPL-2.0
/*
 * EVDs and CNOs, and waiting on them (dat_dto_test): the poller,
 * overflow, waits beside other threads and processes, the poller's spin,
 * CNO agents, solicited waits, software events, the largest queues,
 * unwaitable and disabled EVDs, resizes.
 */
#include "dto.h"

/*
 * An EVD that fills up reports the overflow instead of losing silently;
 * once the consumer has read past it, events are queued again (a software
 * event posted next is).
 */
TEST_F(kdat, test_evd_overflow)
{
	struct side c, s;
	struct buf b;
	DAT_LMR_TRIPLET t;
	DAT_EVD_HANDLE small;
	DAT_EP_HANDLE ep;
	DAT_EP_ATTR a = ep_attr();
	DAT_EVENT ev;
	int i, n = 0, overflow = 0;

	OK(side_open(&c, NULL));
	OK(side_open(&s, NULL));
	a.max_request_dtos = 2;
	a.max_recv_dtos = 2;
	OK(dat_evd_create(c.ia, 4, DAT_HANDLE_NULL,
			  DAT_EVD_DTO_FLAG | DAT_EVD_SOFTWARE_FLAG, &small));
	OK(dat_ep_create(c.ia, c.pz, small, small, c.conn_evd, &a, &ep));
	c.ep = ep;
	OK(buf_reg(&c, &b, 4096, DAT_MEM_PRIV_ALL_FLAG));
	OK(connect_pair(&c, &s, false));
	OK(dat_ep_disconnect(c.ep, DAT_CLOSE_ABRUPT_FLAG));
	expect_conn_event(_metadata, c.conn_evd,
			  DAT_CONNECTION_EVENT_DISCONNECTED, NULL);
	t = seg(&b, 0, 8);
	/* Each post on the DISCONNECTED EP is flushed at once to the EVD. */
	for (i = 0; i < 10; i++)
		OK(dat_ep_post_send(c.ep, 1, &t, cookie(i), 0));
	while (dat_evd_dequeue(small, &ev) == DAT_SUCCESS) {
		if (ev.event_number == DAT_ASYNC_ERROR_EVD_OVERFLOW)
			overflow++;
		else
			n++;
	}
	ASSERT_TRUE(n == 4);
	ASSERT_TRUE(overflow == 1);
	{
		DAT_EVENT se = { .event_number = DAT_SOFTWARE_EVENT };

		se.event_data.software_event_data.pointer = &n;
		OK(dat_evd_post_se(small, &se));
		OK(dat_evd_dequeue(small, &ev));
		ASSERT_TRUE(ev.event_number == DAT_SOFTWARE_EVENT &&
			    ev.event_data.software_event_data.pointer == &n);
	}
	OK(sides_close(&c, &s));
}

/* dat_evd_wait: the threshold, the timeout, and no spinning meanwhile. */
TEST_F(kdat, test_evd_wait)
{
	struct side c, s;
	struct buf b, rb;
	DAT_LMR_TRIPLET t, r;
	struct rusage ru0, ru1;
	struct timespec t0, t1;
	DAT_EVENT ev;
	DAT_COUNT nmore;
	double wall, cpu;
	int i;

	OK(sides_open(&c, &b, &s, &rb, 4096));

	/* Nothing comes: the wait times out after ~0.5 s, asleep. */
	getrusage(RUSAGE_SELF, &ru0);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	ASSERT_DAT(dat_evd_wait(s.dto_evd, 500000, 1, &ev, &nmore),
		   DAT_TIMEOUT_EXPIRED);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	getrusage(RUSAGE_SELF, &ru1);
	wall = (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9;
	cpu = (ru1.ru_utime.tv_sec - ru0.ru_utime.tv_sec) +
	      (ru1.ru_stime.tv_sec - ru0.ru_stime.tv_sec) +
	      ((ru1.ru_utime.tv_usec - ru0.ru_utime.tv_usec) +
	       (ru1.ru_stime.tv_usec - ru0.ru_stime.tv_usec)) / 1e6;
	TH_LOG("timed out after %.3f s wall, %.3f s CPU", wall, cpu);
	ASSERT_TRUE(wall >= 0.45);
	ASSERT_TRUE(cpu < wall / 4);

	/* Threshold 3: two events are not enough, three are. */
	r = seg(&rb, 0, 64);
	t = seg(&b, 0, 8);
	for (i = 0; i < 3; i++)
		OK(dat_ep_post_recv(s.ep, 1, &r, cookie(i), 0));
	for (i = 0; i < 2; i++)
		OK(dat_ep_post_send(c.ep, 1, &t, cookie(i),
				    DAT_COMPLETION_SUPPRESS_FLAG));
	ASSERT_DAT(dat_evd_wait(s.dto_evd, 300000, 3, &ev, &nmore),
		   DAT_TIMEOUT_EXPIRED);
	OK(dat_ep_post_send(c.ep, 1, &t, cookie(2),
			    DAT_COMPLETION_SUPPRESS_FLAG));
	OK(dat_evd_wait(s.dto_evd, TMO, 3, &ev, &nmore));
	ASSERT_TRUE(nmore == 2);
	ASSERT_TRUE(ev.event_data.dto_completion_event_data.user_cookie.as_64 ==
		    0);
	/* A threshold above the EVD's size is invalid. */
	ASSERT_DAT(dat_evd_wait(s.dto_evd, TMO, 1000, &ev, &nmore),
		   DAT_INVALID_PARAMETER);
	OK(sides_close(&c, &s));
}

/*
 * A CNO wakes its waiter when an EVD attached to it gets an event, and
 * names that EVD; a CNO in use cannot be freed.
 */
TEST_F(kdat, test_cno)
{
	struct side c, s;
	struct buf b, rb;
	DAT_CNO_HANDLE cno;
	DAT_EVD_HANDLE evd, got;
	DAT_LMR_TRIPLET t, r;
	DAT_EVENT ev;

	OK(sides_reg(&c, &b, &s, &rb, 4096));
	OK(dat_cno_create(s.ia, DAT_OS_WAIT_PROXY_AGENT_NULL, &cno));
	/* Nothing yet: the wait times out. */
	ASSERT_DAT(dat_cno_wait(cno, 200000, &got), DAT_TIMEOUT_EXPIRED);
	OK(dat_evd_modify_cno(s.dto_evd, cno));
	ASSERT_DAT(dat_cno_free(cno), DAT_INVALID_STATE);
	OK(connect_pair(&c, &s, false));
	t = seg(&b, 0, 8);
	r = seg(&rb, 0, 64);
	OK(dat_ep_post_recv(s.ep, 1, &r, cookie(1), 0));
	OK(dat_ep_post_send(c.ep, 1, &t, cookie(2), 0));
	OK(dat_cno_wait(cno, TMO, &got));
	ASSERT_TRUE(got == s.dto_evd);
	OK(dat_evd_dequeue(s.dto_evd, &ev));
	/* An EVD created with the CNO triggers it too. */
	OK(dat_evd_create(s.ia, 4, cno, DAT_EVD_DTO_FLAG, &evd));
	OK(dat_evd_modify_cno(s.dto_evd, DAT_HANDLE_NULL));
	OK(dat_evd_free(evd));
	OK(dat_cno_free(cno));
	OK(sides_close(&c, &s));
}

#define SPIN_ROUNDS 200

/*
 * The /proc/self/fdinfo file of libdat's /dev/kdat descriptor, open for
 * reading (NULL if there is none); with @count, how many /dev/kdat
 * descriptors the process has in *@count (all 1024 looked at: without
 * it, the first found ends the search, for callers in a timed loop).
 */
static FILE *kdat_fdinfo(int *count)
{
	char path[300], target[300];
	FILE *f = NULL;
	int fd, found = 0;
	ssize_t n;

	for (fd = 0; fd < 1024 && (count || !f); fd++) {
		snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
		n = readlink(path, target, sizeof(target) - 1);
		if (n < 0)
			continue;
		target[n] = 0;
		if (strcmp(target, "/dev/kdat"))
			continue;
		if (!found++) {
			snprintf(path, sizeof(path), "/proc/self/fdinfo/%d",
				 fd);
			f = fopen(path, "r");
		}
	}
	if (count)
		*count = found;
	return f;
}

/*
 * The poller of libdat's /dev/kdat descriptor (fdinfo): its sleeps so far
 * (idle, shared and unpaid), or -1 when it does not poll now.
 */
static long poller_sleeps(void)
{
	long idle, shared, unpaid, ret = -1;
	FILE *f = kdat_fdinfo(NULL);
	char line[256];

	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "poller: %*d polling cpu %*d files %*u idle_sleeps %ld shared_sleeps %ld backoff_ms %*u unpaid_sleeps %ld",
			   &idle, &shared, &unpaid) == 3)
			ret = idle + shared + unpaid;
	if (f)
		fclose(f);
	return ret;
}

/*
 * With a spinning poller on CPU 1 and this process on CPU 0: sends, each
 * waited for (dat_evd_wait) right after its post, with
 * KDAT_WAIT_SPIN_US=@spin_us, until SPIN_ROUNDS of them were taken by the
 * poller (it polled before the post and after the wait, with no sleep
 * between: the completion came from its CPU, after the wait's first
 * look). A round whose post the doorbell took completes in the post's
 * call, and counts for nothing. Writes those rounds' waits and waits that
 * blocked (DCNT_EVD_WAIT, _WAIT_BLOCKED) on the send EVD to @fds[1]. Runs
 * in a process of its own (kdat_fork()): the spin is set at the first
 * wait.
 */
struct wait_spin {
	const char *spin_us;
	int fds[2];
};

static void wait_spin_child(struct __test_metadata *_metadata, void *arg)
{
	const struct wait_spin *ws = arg;
	const char *spin_us = ws->spin_us;
	int fd = ws->fds[1];
	DAT_UINT64 c0[DCNT_EVD_ALL_COUNTERS], c1[DCNT_EVD_ALL_COUNTERS];
	bool two = sysconf(_SC_NPROCESSORS_ONLN) >= 2;
	uint64_t out[2] = { 0, 0 };
	struct side c, s;
	struct buf b, rb;
	DAT_LMR_TRIPLET t, r;
	long before, after;
	cpu_set_t cpu0;
	int i;

	close(ws->fds[0]);
	setenv("KDAT_WAIT_SPIN_US", spin_us, 1);
	setenv("KDAT_POLLER", "spin", 1);
	if (two)
		setenv("KDAT_POLLER_CPU", "1", 1);
	OK(side_open(&c, NULL));
	OK(side_open(&s, NULL));
	if (two) {
		/* After the poller's CPU is set: one we may run on. */
		CPU_ZERO(&cpu0);
		CPU_SET(0, &cpu0);
		ASSERT_TRUE(!sched_setaffinity(0, sizeof(cpu0), &cpu0));
	}
	OK(buf_reg(&c, &b, 4096, DAT_MEM_PRIV_ALL_FLAG));
	OK(buf_reg(&s, &rb, 4096, DAT_MEM_PRIV_ALL_FLAG));
	OK(connect_pair(&c, &s, false));
	t = seg(&b, 0, 64);
	r = seg(&rb, 0, 64);
	for (i = 0; i < 20 * SPIN_ROUNDS && out[0] < SPIN_ROUNDS; i++) {
		OK(dat_ep_post_recv(s.ep, 1, &r, cookie(1000000 + i), 0));
		/* Round 0 sets the spin up (its first wait measures it). */
		before = i ? poller_sleeps() : -1;
		counters(_metadata, c.dto_evd, DCNT_EVD_ALL_COUNTERS, c0);
		OK(dat_ep_post_send(c.ep, 1, &t, cookie(i), 0));
		expect_dto(_metadata, c.dto_evd, i, DAT_DTO_SUCCESS, 64);
		counters(_metadata, c.dto_evd, DCNT_EVD_ALL_COUNTERS, c1);
		after = poller_sleeps();
		expect_dto(_metadata, s.dto_evd, 1000000 + i, DAT_DTO_SUCCESS,
			   64);
		if (before < 0 || after != before)
			continue;
		out[0] += c1[DCNT_EVD_WAIT] - c0[DCNT_EVD_WAIT];
		out[1] += c1[DCNT_EVD_WAIT_BLOCKED] - c0[DCNT_EVD_WAIT_BLOCKED];
	}
	TH_LOG("KDAT_WAIT_SPIN_US=%s: %llu of %d rounds the poller took",
	       spin_us, (unsigned long long)out[0], i);
	ASSERT_TRUE(write(fd, out, sizeof(out)) == (ssize_t)sizeof(out));
	OK(sides_close(&c, &s));
}

/* wait_spin_child() in a child; its counts in @out. */
static void wait_spin_run(struct __test_metadata *_metadata,
			  const char *spin_us, uint64_t *out)
{
	struct wait_spin ws = { .spin_us = spin_us };
	int status = 0;
	pid_t pid;

	ASSERT_TRUE(pipe(ws.fds) == 0);
	pid = kdat_fork(_metadata, wait_spin_child, &ws);
	ASSERT_TRUE(pid >= 0);
	close(ws.fds[1]);
	ASSERT_TRUE(read(ws.fds[0], out, 2 * sizeof(*out)) ==
		    (ssize_t)(2 * sizeof(*out)));
	close(ws.fds[0]);
	ASSERT_TRUE(waitpid(pid, &status, 0) == pid);
	ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == KSFT_PASS);
	TH_LOG("KDAT_WAIT_SPIN_US=%s: %llu of %llu waits blocked", spin_us,
	       (unsigned long long)out[1], (unsigned long long)out[0]);
}

/*
 * A dat_evd_wait spins on the completion ring before it sleeps: a send
 * waited for right after the poller took its post is found by the spin
 * (DCNT_EVD_WAIT_BLOCKED counts the waits that went to sleep in the
 * kernel: at most a quarter here); with KDAT_WAIT_SPIN_US=0 nearly every
 * one sleeps. The spin's limit is generous (10 ms), for a slow kernel.
 * Counts are of the rounds the poller took, up to SPIN_ROUNDS
 * (wait_spin_child()); a waiter that sleeps often leaves the poller idle
 * long enough to sleep too, so the child without the spin has fewer.
 * KDAT_POLLER=none does not spin (not tested here: a post is then taken
 * in the poster's call, and its completion is there when it waits).
 */
TEST_F_TIMEOUT(kdat, test_wait_spin, 120)
{
	uint64_t on[2], off[2];

	if (getenv("KDAT_RINGS") || getenv("KDAT_POLLER"))
		SKIP(return, "its children set their own mode: run once, in the pass with rings and a poller");
	/*
	 * A claim about time (a spin finds what a sleep would wait for): on a
	 * slow kernel (the debug kernel under TCG: KASAN and lockdep) one
	 * completion takes milliseconds and the poller rarely goes a round
	 * without a sleep. The stock kernel's pass makes the claim.
	 */
	if (getenv("KDAT_T_SLOW"))
		SKIP(return, "a timing claim, made on the stock kernel: KDAT_T_SLOW says this kernel is slow");
	/*
	 * The claim is the library's spin's: the kernel's own short poll
	 * before it sleeps (wait_poll_us) would find some completions too.
	 */
	kdat_param_set(_metadata, "wait_poll_us", 0);
	wait_spin_run(_metadata, "10000", on);
	wait_spin_run(_metadata, "0", off);
	/* A poller that slept through the rounds leaves nothing to compare. */
	if (on[0] < 50 || off[0] < 20)
		SKIP(return, "the poller took too few rounds to compare");
	ASSERT_TRUE(on[1] <= on[0] / 4);
	ASSERT_TRUE(off[1] >= off[0] * 9 / 10);
}

/* What a CNO's proxy agent saw (test_cno_agent). */
struct agent_rec {
	int calls;			/* atomic */
	void *instance;
	DAT_EVD_HANDLE evd;
	DAT_EVENT_NUMBER dequeued;	/* 0: it dequeued nothing */
	bool dequeue;			/* the agent dequeues the event */
	int sleep_ms;			/* and then sleeps */
};

static void agent_fn(DAT_PVOID instance, DAT_EVD_HANDLE evd)
{
	struct agent_rec *a = instance;
	DAT_EVENT ev;

	a->instance = instance;
	a->evd = evd;
	if (a->dequeue && dat_evd_dequeue(evd, &ev) == DAT_SUCCESS)
		a->dequeued = ev.event_number;
	if (a->sleep_ms)
		usleep(a->sleep_ms * 1000);
	__atomic_add_fetch(&a->calls, 1, __ATOMIC_RELEASE);
}

/* Wait up to @ms for @a to have been called @n times; its count. */
static int agent_calls(struct agent_rec *a, int n, int ms)
{
	int got;

	while ((got = __atomic_load_n(&a->calls, __ATOMIC_ACQUIRE)) < n &&
	       ms-- > 0)
		usleep(1000);
	return got;
}

/* The threads of this process. */
static int task_count(void)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];
	int n = -1;

	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "Threads: %d", &n) == 1)
			break;
	if (f)
		fclose(f);
	return n;
}

/* Wait up to 10 s for the process to have @n threads; its count. */
static int tasks_settle(int n)
{
	int ms, got = task_count();

	for (ms = 0; got != n && ms < 10000; ms += 20) {
		usleep(20000);
		got = task_count();
	}
	return got;
}

static void post_se(struct __test_metadata *_metadata, DAT_EVD_HANDLE evd,
		    void *p)
{
	DAT_EVENT ev;

	memset(&ev, 0, sizeof(ev));
	ev.event_number = DAT_SOFTWARE_EVENT;
	ev.event_data.software_event_data.pointer = p;
	OK(dat_evd_post_se(evd, &ev));
}

/*
 * A CNO's OS Wait Proxy Agent is called, once, with its instance data and
 * the EVD, when the CNO is triggered; then the CNO has no agent, until
 * dat_cno_modify_agent gives it one again. A dat_cno_wait hears the same
 * trigger. An agent taken away is not called. A CNO freed, or its IA
 * closed, with an agent armed (or in it) leaves no thread behind.
 */
TEST_F_TIMEOUT(kdat, test_cno_agent, 120)
{
	struct agent_rec a = { 0 }, b = { .dequeue = true };
	DAT_OS_WAIT_PROXY_AGENT ag = { &a, agent_fn }, bg = { &b, agent_fn };
	DAT_OS_WAIT_PROXY_AGENT none = DAT_OS_WAIT_PROXY_AGENT_NULL;
	DAT_EVD_HANDLE evd, got;
	DAT_IA_HANDLE ia;
	DAT_EVD_HANDLE aevd = DAT_HANDLE_NULL;
	DAT_CNO_PARAM cp;
	DAT_CNO_HANDLE cno;
	DAT_EVENT ev;
	int base;

	OK(dat_ia_open(pair_conf.ia_name, 8, &aevd, &ia));
	base = task_count();
	OK(dat_cno_create(ia, ag, &cno));
	ASSERT_TRUE(task_count() == base + 1);	/* the agent's thread */
	OK(dat_cno_query(cno, DAT_CNO_FIELD_ALL, &cp));
	ASSERT_TRUE(cp.proxy.agent.instance_data == &a &&
		    cp.proxy.agent.proxy_agent_func == agent_fn);
	OK(dat_evd_create(ia, 4, cno, DAT_EVD_SOFTWARE_FLAG, &evd));
	usleep(100000);
	ASSERT_TRUE(agent_calls(&a, 1, 0) == 0);	/* not triggered */

	/* Triggered: the agent is called once, and so is a waiter woken. */
	post_se(_metadata, evd, &a);
	ASSERT_TRUE(agent_calls(&a, 1, 10000) == 1);
	ASSERT_TRUE(a.instance == &a && a.evd == evd);
	OK(dat_cno_wait(cno, TMO, &got));
	ASSERT_TRUE(got == evd);
	OK(dat_cno_query(cno, DAT_CNO_FIELD_ALL, &cp));
	ASSERT_TRUE(!cp.proxy.agent.proxy_agent_func);	/* dissociated */
	ASSERT_TRUE(tasks_settle(base) == base);
	OK(dat_evd_dequeue(evd, &ev));
	post_se(_metadata, evd, &a);
	OK(dat_cno_wait(cno, TMO, &got));
	usleep(200000);
	ASSERT_TRUE(agent_calls(&a, 2, 0) == 1);	/* once only */
	OK(dat_evd_dequeue(evd, &ev));

	/* Given again: called again; the agent may use the EVD. */
	OK(dat_cno_modify_agent(cno, bg));
	post_se(_metadata, evd, &b);
	ASSERT_TRUE(agent_calls(&b, 1, 10000) == 1);
	ASSERT_TRUE(b.evd == evd && b.dequeued == DAT_SOFTWARE_EVENT);
	OK(dat_cno_wait(cno, TMO, &got));
	ASSERT_DAT(dat_evd_dequeue(evd, &ev), DAT_QUEUE_EMPTY);

	/* Replaced before the trigger: the new agent only. */
	OK(dat_cno_modify_agent(cno, ag));
	OK(dat_cno_modify_agent(cno, bg));
	post_se(_metadata, evd, &b);
	ASSERT_TRUE(agent_calls(&b, 2, 10000) == 2);
	ASSERT_TRUE(agent_calls(&a, 2, 0) == 1);
	OK(dat_cno_wait(cno, TMO, &got));

	/* Taken away before the trigger: not called, its thread gone. */
	ASSERT_TRUE(tasks_settle(base) == base);
	OK(dat_cno_modify_agent(cno, ag));
	ASSERT_TRUE(task_count() == base + 1);
	OK(dat_cno_modify_agent(cno, none));
	ASSERT_TRUE(tasks_settle(base) == base);
	post_se(_metadata, evd, &a);
	OK(dat_cno_wait(cno, TMO, &got));
	usleep(200000);
	ASSERT_TRUE(agent_calls(&a, 2, 0) == 1);
	OK(dat_evd_dequeue(evd, &ev));

	/* Freed while armed: the thread ends. */
	OK(dat_cno_modify_agent(cno, ag));
	OK(dat_evd_modify_cno(evd, DAT_HANDLE_NULL));
	OK(dat_cno_free(cno));
	ASSERT_TRUE(tasks_settle(base) == base);

	/* Freed while its agent runs: the thread frees it after. */
	a.sleep_ms = 300;
	OK(dat_cno_create(ia, ag, &cno));
	OK(dat_evd_modify_cno(evd, cno));
	post_se(_metadata, evd, &a);
	OK(dat_cno_wait(cno, TMO, &got));
	usleep(50000);
	OK(dat_evd_modify_cno(evd, DAT_HANDLE_NULL));
	OK(dat_cno_free(cno));
	ASSERT_TRUE(agent_calls(&a, 2, 10000) == 2);
	ASSERT_TRUE(tasks_settle(base) == base);
	OK(dat_evd_dequeue(evd, &ev));
	a.sleep_ms = 0;

	/* The IA closed under an armed agent: no thread is left. */
	ASSERT_TRUE(tasks_settle(base) == base);
	OK(dat_cno_create(ia, ag, &cno));
	ASSERT_TRUE(task_count() == base + 1);
	OK(dat_evd_free(evd));
	OK(dat_ia_close(ia, DAT_CLOSE_ABRUPT_FLAG));
	ASSERT_TRUE(tasks_settle(base) == base);
	ASSERT_TRUE(agent_calls(&a, 3, 0) == 2);
}

/*
 * Solicited wait: on an EP whose receive completion flags ask for it, a
 * receive completion wakes the EVD's waiter only when the send was
 * solicited; the others are queued without notification (dequeue sees
 * them).
 */
TEST_F(kdat, test_solicited_wait)
{
	DAT_EP_ATTR sw = ep_attr();
	struct side c, s;
	struct buf b, rb;
	DAT_LMR_TRIPLET t, r;
	DAT_EVENT ev;
	DAT_COUNT nmore;
	int i;

	/* A device the harness knows signals no solicited completion. */
	if (getenv("KDAT_TEST_NO_SOLICITED"))
		SKIP(return, "%s", getenv("KDAT_TEST_NO_SOLICITED"));
	sw.recv_completion_flags = DAT_COMPLETION_SOLICITED_WAIT_FLAG;
	OK(side_open(&c, NULL));
	OK(side_open(&s, &sw));
	OK(buf_reg(&c, &b, 4096, DAT_MEM_PRIV_ALL_FLAG));
	OK(buf_reg(&s, &rb, 4096, DAT_MEM_PRIV_ALL_FLAG));
	OK(connect_pair(&c, &s, false));
	r = seg(&rb, 0, 64);
	t = seg(&b, 0, 8);
	for (i = 0; i < 4; i++)
		OK(dat_ep_post_recv(s.ep, 1, &r, cookie(i), 0));

	/* Unsolicited: delivered (the sender completes), nobody woken. */
	OK(dat_ep_post_send(c.ep, 1, &t, cookie(10), 0));
	expect_dto(_metadata, c.dto_evd, 10, DAT_DTO_SUCCESS, 8);
	ASSERT_DAT(dat_evd_wait(s.dto_evd, 300000, 1, &ev, &nmore),
		   DAT_TIMEOUT_EXPIRED);
	/*
	 * Solicited: the waiter wakes, and finds both, in order. The
	 * unsolicited one may have reached the EVD only after the timed
	 * wait above (its sender's completion can come first), and then a
	 * wait returns it at once: the solicited one is then still to come,
	 * and it must wake a second wait.
	 */
	OK(dat_ep_post_send(c.ep, 1, &t, cookie(11),
			    DAT_COMPLETION_SOLICITED_WAIT_FLAG));
	OK(dat_evd_wait(s.dto_evd, TMO, 1, &ev, &nmore));
	ASSERT_TRUE(ev.event_data.dto_completion_event_data.user_cookie.as_64 ==
		    0);
	if (nmore)
		OK(dat_evd_dequeue(s.dto_evd, &ev));
	else
		OK(dat_evd_wait(s.dto_evd, TMO, 1, &ev, &nmore));
	ASSERT_TRUE(ev.event_data.dto_completion_event_data.user_cookie.as_64 ==
		    1);
	expect_dto(_metadata, c.dto_evd, 11, DAT_DTO_SUCCESS, 8);

	/* An unsolicited one is there for dequeue, without a wake-up. */
	OK(dat_ep_post_send(c.ep, 1, &t, cookie(12), 0));
	expect_dto(_metadata, c.dto_evd, 12, DAT_DTO_SUCCESS, 8);
	for (i = 0; i < 1000; i++) {	/* 10 s at most */
		if (dat_evd_dequeue(s.dto_evd, &ev) == DAT_SUCCESS)
			break;
		usleep(10000);
	}
	ASSERT_TRUE(i < 1000);
	ASSERT_TRUE(ev.event_data.dto_completion_event_data.user_cookie.as_64 ==
		    2);
	/* Disconnect flushes the last receive, through the same path. */
	OK(dat_ep_disconnect(s.ep, DAT_CLOSE_ABRUPT_FLAG));
	expect_conn_event(_metadata, s.conn_evd,
			  DAT_CONNECTION_EVENT_DISCONNECTED, NULL);
	for (i = 0; i < 1000; i++) {	/* 10 s at most */
		if (dat_evd_dequeue(s.dto_evd, &ev) == DAT_SUCCESS)
			break;
		usleep(10000);
	}
	ASSERT_TRUE(i < 1000);
	ASSERT_TRUE(ev.event_data.dto_completion_event_data.user_cookie.as_64 ==
		    3);
	ASSERT_TRUE(ev.event_data.dto_completion_event_data.status ==
		    DAT_DTO_ERR_FLUSHED);
	OK(sides_close(&c, &s));
}

/*
 * Software events: queued with their pointer; only on a software EVD. On
 * a full EVD: DAT_QUEUE_FULL, the event not queued and no overflow (the
 * events queued are all there, and the next post once there is room is).
 */
TEST_F(kdat, test_post_se)
{
	DAT_EVD_HANDLE sevd;
	DAT_EVENT se = { .event_number = DAT_SOFTWARE_EVENT }, ev;
	DAT_COUNT nmore;
	struct side s;
	int x, i;

	OK(side_open(&s, NULL));
	OK(dat_evd_create(s.ia, 2, DAT_HANDLE_NULL, DAT_EVD_SOFTWARE_FLAG,
			  &sevd));
	se.event_data.software_event_data.pointer = &x;
	OK(dat_evd_post_se(sevd, &se));
	OK(dat_evd_wait(sevd, TMO, 1, &ev, &nmore));
	ASSERT_TRUE(ev.event_number == DAT_SOFTWARE_EVENT);
	ASSERT_TRUE(ev.event_data.software_event_data.pointer == &x);
	ASSERT_TRUE(ev.evd_handle == sevd);
	/* Full: refused, never dropped. */
	for (i = 0; i < 2; i++)
		OK(dat_evd_post_se(sevd, &se));
	ASSERT_DAT(dat_evd_post_se(sevd, &se), DAT_QUEUE_FULL);
	ASSERT_DAT(dat_evd_post_se(s.dto_evd, &se), DAT_INVALID_PARAMETER);
	for (i = 0; i < 2; i++) {
		OK(dat_evd_dequeue(sevd, &ev));
		ASSERT_TRUE(ev.event_number == DAT_SOFTWARE_EVENT);
	}
	ASSERT_DAT(dat_evd_dequeue(sevd, &ev), DAT_QUEUE_EMPTY);
	OK(dat_evd_post_se(sevd, &se));
	OK(dat_evd_dequeue(sevd, &ev));
	ASSERT_TRUE(ev.event_number == DAT_SOFTWARE_EVENT);
	OK(dat_ia_close(s.ia, DAT_CLOSE_ABRUPT_FLAG));
}

/*
 * The largest qlen dat_ia_query advertises: an EVD of it holds that many
 * events, refuses the next (DAT_QUEUE_FULL) and gives them back in order.
 */
static void evd_fill_largest(struct __test_metadata *_metadata,
			     DAT_IA_HANDLE ia)
{
	DAT_EVENT se = { .event_number = DAT_SOFTWARE_EVENT }, ev;
	DAT_EVD_HANDLE evd;
	DAT_IA_ATTR attr;
	uintptr_t i, q;

	OK(dat_ia_query(ia, NULL, DAT_IA_FIELD_ALL, &attr, 0, NULL));
	q = attr.max_evd_qlen;
	ASSERT_TRUE(q >= 4096);
	OK(dat_evd_create(ia, q, DAT_HANDLE_NULL, DAT_EVD_SOFTWARE_FLAG,
			  &evd));
	for (i = 1; i <= q; i++) {
		se.event_data.software_event_data.pointer = (void *)i;
		OK(dat_evd_post_se(evd, &se));
	}
	ASSERT_DAT(dat_evd_post_se(evd, &se), DAT_QUEUE_FULL);
	for (i = 1; i <= q; i++) {
		OK(dat_evd_dequeue(evd, &ev));
		ASSERT_FALSE(ev.event_number != DAT_SOFTWARE_EVENT ||
			     ev.event_data.software_event_data.pointer !=
			     (void *)i)
			TH_LOG("event %zu of %zu: %#x %p", (size_t)i,
			       (size_t)q, ev.event_number,
			       ev.event_data.software_event_data.pointer);
	}
	ASSERT_DAT(dat_evd_dequeue(evd, &ev), DAT_QUEUE_EMPTY);
	OK(dat_evd_free(evd));
}

/* As the runner is (root: the EVD has its 8 MiB ring in ring mode). */
TEST_F_TIMEOUT(kdat, test_evd_largest_qlen, 120)
{
	struct side s;

	OK(side_open(&s, NULL));
	evd_fill_largest(_metadata, s.ia);
	OK(dat_ia_close(s.ia, DAT_CLOSE_ABRUPT_FLAG));
}

/*
 * As nobody with 64 KiB of RLIMIT_MEMLOCK: the kernel cannot make the
 * ring (ENOMEM), and libdat's EVD goes by ioctl instead of failing.
 */
TEST_F_TIMEOUT(kdat, test_evd_largest_qlen_memlock, 120)
{
	struct rlimit rl = { 64 << 10, 64 << 10 };
	struct side s;

	const char *rings = getenv("KDAT_RINGS");

	if (rings && !strcmp(rings, "0"))
		SKIP(return, "no rings in this mode: test_evd_largest_qlen is the case");
	if (getuid() != 0)
		SKIP(return, "not root: cannot become nobody with a small RLIMIT_MEMLOCK");
	ASSERT_TRUE(!setrlimit(RLIMIT_MEMLOCK, &rl));
	OK(side_open(&s, NULL));
	ASSERT_TRUE(!setgid(65534) && !setuid(65534));
	evd_fill_largest(_metadata, s.ia);
	OK(dat_ia_close(s.ia, DAT_CLOSE_ABRUPT_FLAG));
}

struct se_waiter {
	DAT_EVD_HANDLE evd;
	DAT_RETURN ret;
	DAT_EVENT ev;
};

static void *se_wait_thread(void *arg)
{
	struct se_waiter *w = arg;
	DAT_COUNT nmore;

	w->ret = dat_evd_wait(w->evd, 10 * 1000 * 1000, 1, &w->ev, &nmore);
	return NULL;
}

static double since(const struct timespec *t0)
{
	struct timespec t1;

	clock_gettime(CLOCK_MONOTONIC, &t1);
	return (t1.tv_sec - t0->tv_sec) + (t1.tv_nsec - t0->tv_nsec) / 1e9;
}

/*
 * One thread waits on an EVD; meanwhile another's dat_evd_dequeue answers
 * at once (DAT_QUEUE_EMPTY), a second wait is DAT_INVALID_STATE (one
 * waiter at a time), and so is a free or a resize of the EVD (a thread is
 * in it); an event then ends the first wait, and the free works.
 */
TEST_F(kdat, test_evd_wait_beside)
{
	DAT_EVENT se = { .event_number = DAT_SOFTWARE_EVENT }, ev;
	struct timespec t0;
	struct se_waiter w = { .ret = DAT_SUCCESS };
	DAT_COUNT nmore;
	pthread_t th;
	struct side s;
	int x;

	OK(side_open(&s, NULL));
	OK(dat_evd_create(s.ia, 4, DAT_HANDLE_NULL, DAT_EVD_SOFTWARE_FLAG,
			  &w.evd));
	ASSERT_TRUE(!pthread_create(&th, NULL, se_wait_thread, &w));
	usleep(300 * 1000);	/* the waiter is asleep in the kernel */
	clock_gettime(CLOCK_MONOTONIC, &t0);
	ASSERT_DAT(dat_evd_dequeue(w.evd, &ev), DAT_QUEUE_EMPTY);
	ASSERT_FALSE(since(&t0) > 1.0)
		TH_LOG("dat_evd_dequeue took %.1f s beside a waiter",
		       since(&t0));
	ASSERT_DAT(dat_evd_wait(w.evd, 100 * 1000, 1, &ev, &nmore),
		   DAT_INVALID_STATE);
	ASSERT_DAT(dat_evd_free(w.evd), DAT_INVALID_STATE);
	ASSERT_DAT(dat_evd_resize(w.evd, 8), DAT_INVALID_STATE);
	se.event_data.software_event_data.pointer = &x;
	OK(dat_evd_post_se(w.evd, &se));
	ASSERT_TRUE(!pthread_join(th, NULL));
	OK(w.ret);
	ASSERT_TRUE(w.ev.event_number == DAT_SOFTWARE_EVENT);
	ASSERT_TRUE(w.ev.event_data.software_event_data.pointer == &x);
	OK(dat_evd_free(w.evd));
	OK(dat_ia_close(s.ia, DAT_CLOSE_ABRUPT_FLAG));
}

struct waiter {
	DAT_EVD_HANDLE evd;
	DAT_RETURN ret;
	double took;
};

static void *wait_thread(void *arg)
{
	struct waiter *w = arg;
	DAT_EVENT ev;
	DAT_COUNT nmore;
	double t0 = now_s();

	w->ret = dat_evd_wait(w->evd, TMO, 1, &ev, &nmore);
	w->took = now_s() - t0;
	return NULL;
}

static DAT_EVENT soft_event(uint64_t v)
{
	DAT_EVENT se = { .event_number = DAT_SOFTWARE_EVENT };

	se.event_data.software_event_data.pointer = (DAT_PVOID)(uintptr_t)v;
	return se;
}

static uint64_t soft_value(const DAT_EVENT *ev)
{
	return (uintptr_t)ev->event_data.software_event_data.pointer;
}

/* The software events @from..@to - 1 come off @evd in order, then none. */
static void expect_soft_events(struct __test_metadata *_metadata,
			       DAT_EVD_HANDLE evd, int from, int to)
{
	DAT_EVENT ev;
	int i;

	for (i = from; i < to; i++) {
		OK(dat_evd_dequeue(evd, &ev));
		ASSERT_FALSE(soft_value(&ev) != (uint64_t)i)
			TH_LOG("event %d is %llu", i,
			       (unsigned long long)soft_value(&ev));
	}
	ASSERT_DAT(dat_evd_dequeue(evd, &ev), DAT_QUEUE_EMPTY);
}

/*
 * Unwaitable: a blocked waiter returns DAT_INVALID_STATE at once, new
 * waits too (also with the events there already); events still queue and
 * dequeue; clearing makes waits work.
 */
TEST_F(kdat, test_evd_unwaitable)
{
	struct waiter w = { 0 };
	DAT_EVD_HANDLE evd;
	DAT_EVENT se = soft_event(7), ev;
	DAT_COUNT nmore;
	pthread_t th;
	struct side s;

	OK(side_open(&s, NULL));
	OK(dat_evd_create(s.ia, 4, DAT_HANDLE_NULL, DAT_EVD_SOFTWARE_FLAG,
			  &evd));
	w.evd = evd;
	ASSERT_TRUE(!pthread_create(&th, NULL, wait_thread, &w));
	usleep(200000);			/* let it block */
	OK(dat_evd_set_unwaitable(evd));
	ASSERT_TRUE(!pthread_join(th, NULL));
	ASSERT_DAT(w.ret, DAT_INVALID_STATE);
	ASSERT_FALSE(w.took > 5)
		TH_LOG("the waiter took %.1f s to return", w.took);
	ASSERT_DAT(dat_evd_wait(evd, TMO, 1, &ev, &nmore), DAT_INVALID_STATE);
	OK(dat_evd_post_se(evd, &se));
	ASSERT_DAT(dat_evd_wait(evd, TMO, 1, &ev, &nmore), DAT_INVALID_STATE);
	OK(dat_evd_dequeue(evd, &ev));
	ASSERT_TRUE(soft_value(&ev) == 7);
	OK(dat_evd_clear_unwaitable(evd));
	OK(dat_evd_post_se(evd, &se));
	OK(dat_evd_wait(evd, TMO, 1, &ev, &nmore));
	ASSERT_TRUE(soft_value(&ev) == 7);
	ASSERT_DAT(dat_evd_set_unwaitable(s.pz), DAT_INVALID_HANDLE);
	OK(dat_ia_close(s.ia, DAT_CLOSE_ABRUPT_FLAG));
}

/*
 * A disabled EVD queues events without triggering its CNO (a CNO wait
 * that times out names no EVD); dat_evd_query says which it is.
 */
TEST_F(kdat, test_evd_disable)
{
	DAT_EVD_HANDLE evd, got;
	DAT_CNO_HANDLE cno;
	DAT_EVENT se = soft_event(3), ev;
	DAT_EVD_PARAM ep;
	struct side s;

	OK(side_open(&s, NULL));
	OK(dat_cno_create(s.ia, DAT_OS_WAIT_PROXY_AGENT_NULL, &cno));
	OK(dat_evd_create(s.ia, 4, cno, DAT_EVD_SOFTWARE_FLAG, &evd));
	OK(dat_evd_query(evd, DAT_EVD_FIELD_ALL, &ep));
	ASSERT_TRUE(ep.evd_state == DAT_EVD_STATE_ENABLED);
	OK(dat_evd_disable(evd));
	OK(dat_evd_query(evd, DAT_EVD_FIELD_ALL, &ep));
	ASSERT_TRUE(ep.evd_state == DAT_EVD_STATE_DISABLED);
	OK(dat_evd_post_se(evd, &se));
	got = evd;
	ASSERT_DAT(dat_cno_wait(cno, 200000, &got), DAT_TIMEOUT_EXPIRED);
	ASSERT_TRUE(got == DAT_HANDLE_NULL);
	OK(dat_evd_dequeue(evd, &ev));
	ASSERT_TRUE(soft_value(&ev) == 3);
	OK(dat_evd_enable(evd));
	OK(dat_evd_query(evd, DAT_EVD_FIELD_ALL, &ep));
	ASSERT_TRUE(ep.evd_state == DAT_EVD_STATE_ENABLED);
	OK(dat_evd_post_se(evd, &se));
	OK(dat_cno_wait(cno, TMO, &got));
	ASSERT_TRUE(got == evd);
	OK(dat_evd_free(evd));
	OK(dat_cno_free(cno));
	OK(dat_ia_close(s.ia, DAT_CLOSE_ABRUPT_FLAG));
}

/*
 * Resize keeps queued events in order; refuses to go below them; a DTO
 * EVD resized with receives outstanding still gets their completions.
 */
TEST_F(kdat, test_evd_resize)
{
	DAT_EVD_HANDLE evd;
	DAT_EVD_PARAM ep;
	DAT_EVENT se, ev;
	DAT_LMR_TRIPLET t;
	struct pair p;
	int i;

	OK(pair_open(&p, NULL, DAT_MEM_PRIV_ALL_FLAG));
	OK(dat_evd_create(p.s.ia, 4, DAT_HANDLE_NULL, DAT_EVD_SOFTWARE_FLAG,
			  &evd));
	for (i = 0; i < 4; i++) {
		se = soft_event(i);
		OK(dat_evd_post_se(evd, &se));
	}
	ASSERT_DAT(dat_evd_post_se(evd, &se), DAT_QUEUE_FULL);
	ASSERT_DAT(dat_evd_resize(evd, 3), DAT_INVALID_STATE);
	ASSERT_DAT(dat_evd_resize(evd, 0), DAT_INVALID_PARAMETER);
	OK(dat_evd_resize(evd, 8));
	OK(dat_evd_query(evd, DAT_EVD_FIELD_ALL, &ep));
	ASSERT_TRUE(ep.evd_qlen == 8);
	for (i = 4; i < 8; i++) {
		se = soft_event(i);
		OK(dat_evd_post_se(evd, &se));
	}
	ASSERT_DAT(dat_evd_post_se(evd, &se), DAT_QUEUE_FULL);
	expect_soft_events(_metadata, evd, 0, 8);
	/* Smaller than it was, with events queued that fit. */
	se = soft_event(42);
	OK(dat_evd_post_se(evd, &se));
	OK(dat_evd_resize(evd, 1));
	OK(dat_evd_dequeue(evd, &ev));
	ASSERT_TRUE(soft_value(&ev) == 42);

	/* A DTO EVD, receives outstanding. */
	for (i = 0; i < 4; i++) {
		t = seg(&p.sb, i * 64, 64);
		OK(dat_ep_post_recv(p.s.ep, 1, &t, cookie(i), 0));
	}
	OK(dat_evd_resize(p.s.dto_evd, 8));
	for (i = 0; i < 4; i++) {
		t = seg(&p.cb, 0, 32);
		OK(dat_ep_post_send(p.c.ep, 1, &t, cookie(10 + i), 0));
		expect_dto(_metadata, p.c.dto_evd, 10 + i, DAT_DTO_SUCCESS, 32);
		expect_dto(_metadata, p.s.dto_evd, i, DAT_DTO_SUCCESS, 32);
	}
	OK(pair_close(&p));
}

/* The process's address space now, in bytes (/proc/self/statm). */
static unsigned long vm_bytes(struct __test_metadata *_metadata)
{
	unsigned long pages = 0;
	FILE *f = fopen("/proc/self/statm", "r");

	ASSERT_TRUE(f && fscanf(f, "%lu", &pages) == 1);
	fclose(f);
	return pages * (unsigned long)sysconf(_SC_PAGESIZE);
}

/*
 * A resize is done or not done. With a completion ring, the new ring must
 * be mapped into the process: where there is no address space for it
 * (RLIMIT_AS), the resize answers DAT_INSUFFICIENT_RESOURCES and nothing
 * changed: the length, the events and their order, the ring (dequeues
 * and waits work). Before, the kernel resized first and the mapping then
 * failed: DAT_INSUFFICIENT_RESOURCES for an EVD resized, whose events
 * no dequeue could reach. Without rings (KDAT_RINGS=0) nothing is
 * mapped and the resize is done.
 */
/* A software EVD of 8 on @s, opened here, holding events 0, 1 and 2. */
static DAT_EVD_HANDLE evd_of_three(struct __test_metadata *_metadata,
				   struct side *s)
{
	DAT_EVD_HANDLE evd;
	DAT_EVENT se;
	int i;

	OK(side_open(s, NULL));
	OK(dat_evd_create(s->ia, 8, DAT_HANDLE_NULL, DAT_EVD_SOFTWARE_FLAG,
			  &evd));
	for (i = 0; i < 3; i++) {
		se = soft_event(i);
		OK(dat_evd_post_se(evd, &se));
	}
	return evd;
}

/*
 * evd_of_three()'s EVD after a resize to @qlen that answered @ret: with a
 * ring (@ring) refused and nothing changed, without one done; event 0
 * comes first either way (dequeued here).
 */
static void resize_refused_with_ring(struct __test_metadata *_metadata,
				     DAT_EVD_HANDLE evd, DAT_RETURN ret,
				     bool ring, DAT_COUNT qlen)
{
	DAT_EVD_PARAM ep;
	DAT_EVENT ev;

	OK(dat_evd_query(evd, DAT_EVD_FIELD_ALL, &ep));
	if (ring) {
		ASSERT_DAT(ret, DAT_INSUFFICIENT_RESOURCES);
		ASSERT_EQ(8, ep.evd_qlen);
	} else {
		ASSERT_DAT(ret, DAT_SUCCESS);
		ASSERT_EQ(qlen, ep.evd_qlen);
	}
	OK(dat_evd_dequeue(evd, &ev));
	ASSERT_TRUE(soft_value(&ev) == 0);
}

TEST_F(kdat, test_evd_resize_no_address_space)
{
	const char *rings = getenv("KDAT_RINGS");
	bool ring = !(rings && !strcmp(rings, "0"));
	struct rlimit old, lim;
	DAT_EVD_HANDLE evd;
	DAT_EVD_PARAM ep;
	DAT_EVENT se, ev;
	DAT_RETURN ret;
	struct side s;

	evd = evd_of_three(_metadata, &s);
	ASSERT_TRUE(getrlimit(RLIMIT_AS, &old) == 0);
	/* Room for 64 KiB more; a ring of 4096 events takes 256 KiB. */
	lim.rlim_cur = vm_bytes(_metadata) + 65536;
	lim.rlim_max = old.rlim_max;
	ASSERT_TRUE(setrlimit(RLIMIT_AS, &lim) == 0);
	ret = dat_evd_resize(evd, 4096);
	ASSERT_TRUE(setrlimit(RLIMIT_AS, &old) == 0);
	/* The events are there, in order, and the EVD takes more. */
	resize_refused_with_ring(_metadata, evd, ret, ring, 4096);
	se = soft_event(3);
	OK(dat_evd_post_se(evd, &se));
	/* With room for it, the same resize is done. */
	OK(dat_evd_resize(evd, 4096));
	OK(dat_evd_query(evd, DAT_EVD_FIELD_ALL, &ep));
	ASSERT_EQ(4096, ep.evd_qlen);
	expect_soft_events(_metadata, evd, 1, 4);
	se = soft_event(4);
	OK(dat_evd_post_se(evd, &se));
	OK(dat_evd_wait(evd, TMO, 1, &ev, NULL));
	ASSERT_TRUE(soft_value(&ev) == 4);
	OK(dat_evd_free(evd));
	OK(dat_ia_close(s.ia, DAT_CLOSE_ABRUPT_FLAG));
}

/*
 * The same where the memory that describes the new ring cannot be had
 * (calloc failing): with a completion ring, DAT_INSUFFICIENT_RESOURCES
 * before the kernel resizes, and nothing changed. (Before, that calloc
 * came after the resize: the EVD was resized, its events out of reach in
 * a ring not mapped, and the answer DAT_INTERNAL_ERROR.) Without rings
 * nothing is allocated and the resize is done.
 */
TEST_F(kdat, test_evd_resize_no_memory)
{
	const char *rings = getenv("KDAT_RINGS");
	bool ring = !(rings && !strcmp(rings, "0"));
	DAT_EVD_HANDLE evd;
	DAT_EVD_PARAM ep;
	DAT_RETURN ret;
	DAT_EVENT se;
	struct side s;

	evd = evd_of_three(_metadata, &s);
	__atomic_store_n(&calloc_fail, 1, __ATOMIC_RELAXED);
	ret = dat_evd_resize(evd, 64);
	__atomic_store_n(&calloc_fail, 0, __ATOMIC_RELAXED);
	resize_refused_with_ring(_metadata, evd, ret, ring, 64);
	/* Then the resize is done. */
	OK(dat_evd_resize(evd, 64));
	OK(dat_evd_query(evd, DAT_EVD_FIELD_ALL, &ep));
	ASSERT_EQ(64, ep.evd_qlen);
	se = soft_event(3);
	OK(dat_evd_post_se(evd, &se));
	expect_soft_events(_metadata, evd, 1, 4);
	OK(dat_evd_free(evd));
	OK(dat_ia_close(s.ia, DAT_CLOSE_ABRUPT_FLAG));
}

/*
 * The mode this run asked for is the mode it got: the "poller:" line of
 * libdat's /dev/kdat descriptor in /proc/self/fdinfo names a poller
 * thread on the rings path, none with KDAT_POLLER=none (every post its
 * own doorbell) or with KDAT_RINGS=0 (no rings).
 */
TEST_F(kdat, test_poller_mode)
{
	const char *rings = getenv("KDAT_RINGS"), *mode = getenv("KDAT_POLLER");
	bool want = !(rings && !strcmp(rings, "0")) &&
		    !(mode && !strcmp(mode, "none"));
	int found, tid = -1;
	char line[256];
	struct pair p;
	FILE *f;

	OK(pair_open(&p, NULL, DAT_MEM_PRIV_ALL_FLAG));
	pair_still_works(_metadata, &p);
	f = kdat_fdinfo(&found);
	ASSERT_TRUE(found == 1);
	ASSERT_NE(NULL, f);
	while (f && fgets(line, sizeof(line), f))
		if (!strncmp(line, "poller:\t", 8)) {
			TH_LOG("%.*s", (int)strcspn(line, "\n"), line);
			tid = strcmp(line + 8, "none\n") ? atoi(line + 8) : 0;
		}
	if (f)
		fclose(f);
	ASSERT_TRUE(tid >= 0);
	ASSERT_TRUE((tid > 0) == want);
	OK(pair_close(&p));
}
