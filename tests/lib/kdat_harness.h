/* SPDX-License-Identifier: GPL-2.0 */
/*
 * kdat's selftests on the kernel's kselftest_harness.h: linux-source-6.12's
 * tools/testing/selftests, which scripts/setup takes out of Debian's
 * tarball into a private cache (the Makefile puts it on the include path).
 * This header reaches into the harness's internals in a few places (its
 * test and fixture lists, the running test, a test's metadata), each said
 * where: they are 6.12's.
 *
 * Each case of a program is TEST_F(kdat, name), or TEST_F_TIMEOUT() for
 * one that may run longer than the harness's 30 s, on the fixture below;
 * the program ends with KDAT_HARNESS_MAIN, or its main() calls
 * kdat_harness_main(). Over the harness, that gives:
 *
 *  - A case's leftovers go with it. The harness runs each case in a
 *    process of its own and in a process group of its own, which it kills
 *    at the case's timeout; TEST_F() runs the case's body in a child of
 *    that process. When the body is over, however it ended, the fixture's
 *    teardown kills whatever the case started and left in the group: a
 *    helper process, a FUSE server that holds a page fault.
 *  - What a case changed and said to put back (kdat_at_end(): a module
 *    parameter, a debugfs switch) is put back by that teardown, however
 *    the case ended: after a failed ASSERT_*() too, where no exit handler
 *    runs (the harness's processes end with _exit()).
 *  - A SIGTERM (a suite's time limit, tests/run-all) or SIGINT to the
 *    program kills the running case's process group before the program
 *    goes: nothing of the case keeps the suite's output open.
 *  - Timeouts: each case's (30 s unless TEST_F_TIMEOUT() says more) is
 *    multiplied by $KDAT_T_SLOW, a slow kernel's factor (make check's
 *    debug passes), as tests/run-all multiplies a suite's limit.
 *  - Exit status 4 (KSFT_SKIP) when every case skipped; otherwise the
 *    harness's: 0 when none failed, 1 when one did.
 *  - Case names as arguments: "prog a b" runs cases a and b (as -t a -t
 *    b; in the file's order), and a name no case has fails the run.
 *  - A case's time, when it took 2 s or more (make check's budget).
 *
 * A helper that asserts takes the case's `struct __test_metadata
 * *_metadata`: its ASSERT_*() end the case. A helper that finds that the
 * case cannot run here ends it skipped with KDAT_SKIP(). A child process
 * that runs such helpers is made with kdat_fork(): there an ASSERT_*()
 * ends the child (exit status 1), not the case, which reads the child's
 * status as it reads any child's (kdat_child_call(): the same without the
 * fork, in such a process, for a step whose failure it reads). A thread
 * other than the case's own never asserts (it would jump to another
 * thread's stack): it hands back what it saw.
 */
#ifndef KDAT_HARNESS_H
#define KDAT_HARNESS_H

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <setjmp.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "kselftest_harness.h"

/*
 * Skip the whole case from a helper it called (the harness's SKIP() only
 * runs its statement: a return would leave the helper, not the case).
 */
#define KDAT_SKIP(fmt, ...) SKIP(exit(KSFT_SKIP), fmt, ##__VA_ARGS__)

#define KDAT_AT_END_MAX	8

FIXTURE(kdat) {
	struct timespec start;
	/* Files written at the case's end (kdat_at_end()), in order. */
	int nend;
	struct {
		char path[112];
		char value[48];
	} end[KDAT_AT_END_MAX];
};

/*
 * The running case's fixture, in the process that runs its body and in the
 * processes that one forks. The teardown, in the case's first process,
 * has its own `self`: TEST_F() shares the fixture between the two
 * (FIXTURE_TEARDOWN_PARENT()).
 */
static FIXTURE_DATA(kdat) *kdat_case;

/*
 * At the case's end, however it ends, write @value to @path (a module
 * parameter, a sysctl, a debugfs switch): what a case changed is back for
 * the next. The latest first. 0, or -1 when there is no room.
 */
static inline int kdat_at_end(const char *path, const char *value)
{
	FIXTURE_DATA(kdat) *c = kdat_case;

	if (!c || c->nend == KDAT_AT_END_MAX ||
	    strlen(path) >= sizeof(c->end[0].path) ||
	    strlen(value) >= sizeof(c->end[0].value))
		return -1;
	strcpy(c->end[c->nend].path, path);
	strcpy(c->end[c->nend].value, value);
	c->nend++;
	return 0;
}

static inline void kdat_at_end_run_on(FIXTURE_DATA(kdat) *c)
{
	while (c->nend > 0) {
		int fd;

		c->nend--;
		fd = open(c->end[c->nend].path, O_WRONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		if (write(fd, c->end[c->nend].value,
			  strlen(c->end[c->nend].value)) < 0) {
			/* Nothing more to do about it here. */
		}
		close(fd);
	}
}

/*
 * kdat's module parameter @name set to @v for the rest of the case, put
 * back at the case's end (kdat_at_end()), whether it passes or fails.
 * Skips the case where it cannot be set (not root).
 */
static inline void kdat_param_set(struct __test_metadata *_metadata,
				  const char *name, unsigned int v)
{
	char path[128], was[16];
	unsigned int saved;
	FILE *f;

	snprintf(path, sizeof(path), "/sys/module/kdat/parameters/%s", name);
	f = fopen(path, "r+");
	if (!f)
		KDAT_SKIP("cannot set kdat's module parameters (not root?)");
	ASSERT_EQ(1, fscanf(f, "%u", &saved));
	snprintf(was, sizeof(was), "%u\n", saved);
	ASSERT_EQ(0, kdat_at_end(path, was));
	rewind(f);
	fprintf(f, "%u\n", v);
	ASSERT_EQ(0, fclose(f));
}

/* Now rather than at the case's end: what kdat_at_end() said, forgotten. */
static inline void kdat_at_end_run(void)
{
	if (kdat_case)
		kdat_at_end_run_on(kdat_case);
}

FIXTURE_SETUP(kdat)
{
	kdat_case = self;
	/* The program's handler (kdat_harness_main()) is not the case's. */
	signal(SIGTERM, SIG_DFL);
	signal(SIGINT, SIG_DFL);
	clock_gettime(CLOCK_MONOTONIC, &self->start);
}

/*
 * Every process of the case's process group but this one and its parent
 * (the teardown's process and, when that is the body's, the case's first
 * one): SIGKILL, again until none is left (a process it missed may have
 * been forking). A process stuck in the kernel past a second is left.
 */
static inline void kdat_kill_leftovers(void)
{
	pid_t me = getpid(), up = getppid(), group = getpgrp();
	int round, found;

	for (round = 0, found = 1; found && round < 100; round++) {
		struct dirent *e;
		DIR *d = opendir("/proc");

		if (round)
			usleep(10000);
		found = 0;
		while (d && (e = readdir(d))) {
			char path[64], buf[512], *p, state;
			int fd, pgrp, ppid;
			ssize_t n;
			pid_t pid = atoi(e->d_name);

			if (pid <= 0 || pid == me || pid == up)
				continue;
			snprintf(path, sizeof(path), "/proc/%d/stat", pid);
			fd = open(path, O_RDONLY | O_CLOEXEC);
			if (fd < 0)
				continue;
			n = read(fd, buf, sizeof(buf) - 1);
			close(fd);
			if (n <= 0)
				continue;
			buf[n] = 0;
			/* "pid (comm) state ppid pgrp": comm may hold a ")". */
			p = strrchr(buf, ')');
			if (!p || sscanf(p + 1, " %c %d %d", &state, &ppid,
					 &pgrp) != 3)
				continue;
			if (pgrp != group || state == 'Z' || state == 'X')
				continue;
			kill(pid, SIGKILL);
			found++;
		}
		if (d)
			closedir(d);
	}
}

/*
 * Once the case's body has run: whatever the case left in its process
 * group goes, then the files kdat_at_end() named are written. In the
 * case's first process, once the body's process has ended, as
 * FIXTURE_TEARDOWN_PARENT() says; but after a failed ASSERT_*() 6.12's
 * TEST_F() runs it in the body's process itself (its own `child`, which
 * setjmp() does not keep, reads as the parent's there), the case's first
 * process waiting: hence no kill(2) of the whole group.
 */
FIXTURE_TEARDOWN_PARENT(kdat)
{
	struct timespec now;
	long s;

	kdat_kill_leftovers();
	kdat_at_end_run_on(self);
	clock_gettime(CLOCK_MONOTONIC, &now);
	s = now.tv_sec - self->start.tv_sec;
	if (s >= 2)
		ksft_print_msg("%s: %ld s\n", _metadata->name, s);
}

/*
 * In a process of the case's that runs helpers that assert (not the case's
 * own): @fn(@arg) runs with a metadata of its own, a copy of the harness's
 * struct __test_metadata with its own jump buffer and result, so that an
 * ASSERT_*() there ends @fn, not the case. The answer: KSFT_PASS when @fn
 * returned, KSFT_FAIL after a failed ASSERT_*(). (A SKIP() there runs its
 * statement: KDAT_SKIP() ends the process with KSFT_SKIP.)
 */
static inline int kdat_child_call(struct __test_metadata *_metadata,
				  void (*fn)(struct __test_metadata *, void *),
				  void *arg)
{
	/* Static: this process's own, not changed under a longjmp(). */
	static struct __test_results results;
	static struct __test_metadata m;

	m = *_metadata;
	m.exit_code = KSFT_PASS;
	m.trigger = 0;
	m.aborted = false;
	memset(&results, 0, sizeof(results));
	m.results = &results;
	if (!setjmp(m.env))
		fn(&m, arg);
	return m.exit_code;
}

/*
 * kdat_child_call(), then the process exits (its exit handlers run) with
 * its answer: KSFT_FAIL after a failed ASSERT_*(), KSFT_PASS when @fn
 * returned.
 */
static inline __attribute__((noreturn)) void
kdat_child_run(struct __test_metadata *_metadata,
	       void (*fn)(struct __test_metadata *, void *), void *arg)
{
	exit(kdat_child_call(_metadata, fn, arg));
}

/*
 * fork(), for a case whose child runs helpers that assert: the child runs
 * @fn(@arg) with kdat_child_run(), and the case reads its exit status.
 * In the parent: fork()'s answer.
 */
static inline pid_t kdat_fork(struct __test_metadata *_metadata,
			      void (*fn)(struct __test_metadata *, void *),
			      void *arg)
{
	pid_t pid = fork();

	if (!pid)
		kdat_child_run(_metadata, fn, arg);
	return pid;
}

/* The harness's options (test_harness_argv_check()'s). */
#define KDAT_HARNESS_OPTS	"hlF:f:V:v:t:T:r:"

static pid_t kdat_harness_pid;

/*
 * A SIGTERM or SIGINT to the program: the running case's process group
 * goes too (__active_test: the harness's case while it waits for it).
 */
static void kdat_harness_stop(int sig)
{
	if (getpid() == kdat_harness_pid && __active_test)
		kill(-__active_test->pid, SIGKILL);
	signal(sig, SIG_DFL);
	raise(sig);
}

/*
 * At the program's exit (the harness exits 0 when nothing failed): 4,
 * KSFT_SKIP, when every case skipped. ksft_plan and ksft_cnt are
 * kselftest.h's counts.
 */
static void kdat_harness_exit(void)
{
	if (getpid() != kdat_harness_pid || !ksft_plan ||
	    ksft_cnt.ksft_xskip != ksft_plan)
		return;
	fflush(stdout);
	fflush(stderr);
	_exit(KSFT_SKIP);
}

/*
 * kdat_harness_exit() is registered before main() runs, so that it runs
 * last at exit: after the program's own exit handlers (what main()
 * registers with atexit(), a scratch directory removed), which its
 * _exit() would skip.
 */
static bool kdat_harness_ready;

static void __attribute__((constructor)) kdat_harness_init(void)
{
	kdat_harness_pid = getpid();
	kdat_harness_ready = !atexit(kdat_harness_exit);
}

/* Is @name a case of the program? (The harness's lists of them.) */
static inline int kdat_harness_has(const char *name)
{
	struct __fixture_metadata *f;
	struct __test_metadata *t;

	for (f = __fixture_list; f; f = f->next)
		for (t = f->tests; t; t = t->next)
			if (!strcmp(t->name, name))
				return 1;
	return 0;
}

/* Every case's timeout times $KDAT_T_SLOW. */
static inline void kdat_harness_slow(void)
{
	const char *env = getenv("KDAT_T_SLOW");
	int k = env ? atoi(env) : 1;
	struct __fixture_metadata *f;
	struct __test_metadata *t;

	if (k <= 1)
		return;
	for (f = __fixture_list; f; f = f->next)
		for (t = f->tests; t; t = t->next)
			t->timeout *= k;
}

/* Does @argv ask for the list of cases or the usage, not a run? */
static inline int kdat_harness_listing(int argc, char **argv)
{
	int opt, list = 0;

	opterr = 0;
	optind = 1;
	while ((opt = getopt(argc, argv, KDAT_HARNESS_OPTS)) != -1)
		list |= opt == 'l' || opt == 'h';
	optind = 1;
	opterr = 1;
	return list;
}

/*
 * The harness's run of @argv's cases: its options, and case names, each
 * taken for a -t of it.
 */
static inline int kdat_harness_main(int argc, char **argv)
{
	char **args = calloc(2 * argc + 1, sizeof(*args));
	int i, n;

	if (!args)
		return KSFT_FAIL;
	/* getopt() moves the names after the options, from optind on. */
	opterr = 0;
	optind = 1;
	while (getopt(argc, argv, KDAT_HARNESS_OPTS) != -1)
		;
	for (n = 0, i = 0; i < optind; i++)
		/* A "--" that ended the options would end the -t ones too. */
		if (i != optind - 1 || strcmp(argv[i], "--"))
			args[n++] = argv[i];
	for (i = optind; i < argc; i++) {
		if (!kdat_harness_has(argv[i])) {
			printf("1..0 # no case %s\n", argv[i]);
			return KSFT_FAIL;
		}
		args[n++] = "-t";
		args[n++] = argv[i];
	}
	optind = 1;
	opterr = 1;

	if (!kdat_harness_ready)
		return KSFT_FAIL;
	signal(SIGTERM, kdat_harness_stop);
	signal(SIGINT, kdat_harness_stop);
	kdat_harness_slow();
	return test_harness_run(n, args);
}

#define KDAT_HARNESS_MAIN						\
	int main(int argc, char **argv)					\
	{								\
		return kdat_harness_main(argc, argv);			\
	}

#endif /* KDAT_HARNESS_H */
