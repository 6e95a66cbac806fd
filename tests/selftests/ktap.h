/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A small TAP harness for kdat's kselftest-style programs.
 *
 * Each case runs in a child process, in a process group of its own, so a
 * crash or a leaked fd stays in that case; whatever the case started and
 * left running is killed with the group when the case ends (a busy loop
 * a failed case did not reap must not hold the suite's output open), and
 * a SIGTERM to the harness (a suite's time limit) kills the running case's
 * group before the harness goes. A case fails on the first KTAP_EXPECT*
 * that does not hold, skips with ktap_skip("reason"), and passes
 * otherwise. The program exits
 * 0 when nothing failed, 1 when a case failed, 4 (KSFT_SKIP) when every
 * case skipped.
 */
#ifndef KDAT_KTAP_H
#define KDAT_KTAP_H

#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define KSFT_PASS 0
#define KSFT_FAIL 1
#define KSFT_SKIP 4

struct ktap_case {
	const char *name;
	void (*fn)(void);
};

static inline void ktap_diag(const char *fmt, ...)
{
	va_list ap;

	fputs("# ", stdout);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	fputc('\n', stdout);
	fflush(stdout);
}

static inline __attribute__((noreturn)) void ktap_skip(const char *reason)
{
	ktap_diag("SKIP: %s", reason);
	exit(KSFT_SKIP);
}

#define KTAP_FAIL(...)							\
	do {								\
		ktap_diag("%s:%d: ", __FILE__, __LINE__);		\
		ktap_diag(__VA_ARGS__);					\
		exit(KSFT_FAIL);					\
	} while (0)

#define KTAP_EXPECT(cond)						\
	do {								\
		if (!(cond))						\
			KTAP_FAIL("expected: %s", #cond);		\
	} while (0)

/* Two integers equal; both printed when not. */
#define KTAP_EXPECT_EQ(a, b)						\
	do {								\
		long long __a = (long long)(a), __b = (long long)(b);	\
		if (__a != __b)						\
			KTAP_FAIL("%s == %s: %lld != %lld", #a, #b,	\
				  __a, __b);				\
	} while (0)

/* @expr returns 0 or -errno; expect exactly -@err (0 for success). */
#define KTAP_EXPECT_RET(expr, err)					\
	do {								\
		long __r = (long)(expr);				\
		long __e = -(long)(err);				\
		if (__r != __e)						\
			KTAP_FAIL("%s: got %ld (%s), want %ld (%s)", #expr, \
				  __r, strerror((int)-__r), __e,	\
				  strerror((int)-__e));			\
	} while (0)

/* The running case's process group, for the SIGTERM handler. */
static volatile pid_t ktap_case_pgrp;

static inline void ktap_on_term(int sig)
{
	if (ktap_case_pgrp > 0)
		kill(-ktap_case_pgrp, SIGKILL);
	signal(sig, SIG_DFL);
	raise(sig);
}

/*
 * KTAP_FILTER=substring runs only the matching cases (the others report
 * as skipped, saying so): for debugging one case.
 */
static inline int ktap_run(const struct ktap_case *cases, int n)
{
	const char *filter = getenv("KTAP_FILTER");
	int i, failed = 0, skipped = 0;

	signal(SIGTERM, ktap_on_term);
	printf("TAP version 13\n1..%d\n", n);
	fflush(stdout);
	for (i = 0; i < n; i++) {
		struct timespec t0, t1;
		int status = 0, rc;
		pid_t pid;

		if (filter && !strstr(cases[i].name, filter)) {
			printf("ok %d %s # SKIP not in KTAP_FILTER\n", i + 1,
			       cases[i].name);
			skipped++;
			continue;
		}
		fflush(stdout);
		clock_gettime(CLOCK_MONOTONIC, &t0);
		pid = fork();

		if (pid == 0) {
			setpgid(0, 0);
			signal(SIGTERM, SIG_DFL);
			cases[i].fn();
			exit(KSFT_PASS);
		}
		if (pid > 0) {
			/* Both sides set it: no window where it is not. */
			setpgid(pid, pid);
			ktap_case_pgrp = pid;
		}
		if (pid < 0 || waitpid(pid, &status, 0) < 0)
			rc = KSFT_FAIL;
		else if (WIFEXITED(status))
			rc = WEXITSTATUS(status);
		else {
			ktap_diag("%s killed by signal %d", cases[i].name,
				  WTERMSIG(status));
			rc = KSFT_FAIL;
		}
		if (pid > 0) {
			/* Whatever the case left behind goes with it. */
			kill(-pid, SIGKILL);
			ktap_case_pgrp = 0;
		}
		/* Where a suite's time goes (make check's budget). */
		clock_gettime(CLOCK_MONOTONIC, &t1);
		if (t1.tv_sec - t0.tv_sec >= 2)
			ktap_diag("%s: %ld s", cases[i].name,
				  (long)(t1.tv_sec - t0.tv_sec));
		if (rc == KSFT_PASS) {
			printf("ok %d %s\n", i + 1, cases[i].name);
		} else if (rc == KSFT_SKIP) {
			printf("ok %d %s # SKIP\n", i + 1, cases[i].name);
			skipped++;
		} else {
			printf("not ok %d %s\n", i + 1, cases[i].name);
			failed++;
		}
		fflush(stdout);
	}
	ktap_diag("Totals: pass:%d fail:%d skip:%d", n - failed - skipped,
		  failed, skipped);
	if (failed)
		return KSFT_FAIL;
	return skipped == n ? KSFT_SKIP : KSFT_PASS;
}

/*
 * The cases @names names (@nnames of them; all when none): a program's
 * arguments pick its cases, as a suite line's arguments do
 * (tests/suites.debug). A name no case has fails the run.
 */
static inline int ktap_run_named(const struct ktap_case *cases, int n,
				 int nnames, char **names)
{
	struct ktap_case *sel;
	int i, j, ret;

	if (nnames <= 0)
		return ktap_run(cases, n);
	sel = calloc(nnames, sizeof(*sel));
	if (!sel)
		return KSFT_FAIL;
	for (j = 0; j < nnames; j++) {
		for (i = 0; i < n && strcmp(cases[i].name, names[j]); i++)
			;
		if (i == n) {
			printf("1..0 # no case %s\n", names[j]);
			free(sel);
			return KSFT_FAIL;
		}
		sel[j] = cases[i];
	}
	ret = ktap_run(sel, nnames);
	free(sel);
	return ret;
}

#define KTAP_CASE(fn) { #fn, fn }
#define KTAP_MAIN(cases)						\
	int main(int argc, char **argv)					\
	{								\
		return ktap_run_named(cases,				\
				      sizeof(cases) / sizeof(cases[0]),	\
				      argc - 1, argv + 1);		\
	}

#endif
