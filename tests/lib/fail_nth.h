/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Fault injection swept over a scenario, for any test program of kdat's:
 * the hostile suite's ioctl scenarios and ring_test's ring scenario share
 * it. The sweep itself (fail_nth_sweep_run()) belongs to no harness. The
 * caller includes ../selftests/kdat_objects.h (the object counts) and
 * ../lib/kdat_harness.h first: fail_nth_sweep() and fail_nth_sweep_after()
 * are a kselftest_harness.h case's, their set-ups and scenarios assert.
 */
#ifndef KDAT_FAIL_NTH_H
#define KDAT_FAIL_NTH_H

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* Ask every slab cache to check its objects: poison overwritten shows. */
static void validate_slabs(void)
{
	DIR *d = opendir("/sys/kernel/slab");
	struct dirent *e;
	char path[512];

	if (!d)
		return;
	while ((e = readdir(d))) {
		int fd;

		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/sys/kernel/slab/%s/validate",
			 e->d_name);
		fd = open(path, O_WRONLY);
		if (fd < 0)
			continue;
		if (write(fd, "1", 1) < 0) {
			/* Caches without debugging say EINVAL: nothing to do. */
		}
		close(fd);
	}
	closedir(d);
}

static int write_file(const char *path, const char *s)
{
	int fd = open(path, O_WRONLY), ret = 0;

	if (fd < 0)
		return -errno;
	if (write(fd, s, strlen(s)) < 0)
		ret = -errno;
	close(fd);
	return ret;
}

/*
 * As iommufd's selftests do: a scenario of ioctls runs with the nth
 * fault-injection point of its task made to fail (/proc/<tid>/fail-nth:
 * an allocation, failslab or fail_page_alloc, or a copy from or to user
 * memory, fail_usercopy), for n = 1, 2, ... until a run meets no failure
 * point left. Each run ends with its file closed; whatever failed, every
 * object count must be back (nothing leaked or left half made), and the
 * kernel log clean (tests/run-all checks it after the suite; kmemleak
 * scans at the end of the debug pass). The debug kernel has fault
 * injection; Debian's does not, and the sweep skips there, saying so.
 */
static int fail_nth_fd = -1, fail_nth_report = -1;

/* The kernel log's marks (scripts/kernel-splat-check knows them). */
#define KDAT_FAULT_INJECTION_ON		"kdat-test: fault injection on\n"
#define KDAT_FAULT_INJECTION_OFF	"kdat-test: fault injection off\n"

/*
 * At the scenario's exit, however early: what was left of the count, then
 * injection off before the report. The read and the write of fail-nth
 * copy to and from user memory, failure points themselves: a read that
 * fails so (EFAULT) means the scenario met no failure point left; a
 * write that fails so is made again (iommufd's selftests do the same).
 */
static void fail_nth_atexit(void)
{
	char buf[32] = "";
	int left = 1;
	ssize_t r;

	r = pread(fail_nth_fd, buf, sizeof(buf) - 1, 0);
	if (r > 0)
		left = atoi(buf);
	else if (!(r < 0 && errno == EFAULT))
		left = -1;
	if (pwrite(fail_nth_fd, "0", 1, 0) != 1 &&
	    pwrite(fail_nth_fd, "0", 1, 0) != 1)
		_exit(3);
	if (write(fail_nth_report, &left, sizeof(left)) != sizeof(left))
		_exit(3);
}

/*
 * Can the sweep run here? 0 (failures made as the sweep wants them), or
 * KSFT_SKIP or KSFT_FAIL with @why saying why.
 */
static int fail_nth_setup(char *why, size_t len)
{
	static const char *const quiet[] = {
		"/sys/kernel/debug/failslab/verbose",
		"/sys/kernel/debug/fail_page_alloc/verbose",
		"/sys/kernel/debug/fail_usercopy/verbose",
	};
	static const char *const gfp_wait[] = {
		"/sys/kernel/debug/failslab/ignore-gfp-wait",
		"/sys/kernel/debug/fail_page_alloc/ignore-gfp-wait",
	};
	unsigned int i;

	if (access("/proc/thread-self/fail-nth", F_OK)) {
		snprintf(why, len, "no fail-nth: the kernel has no "
			 "CONFIG_FAULT_INJECTION (make check-faults runs "
			 "this, on the debug kernel)");
		return KSFT_SKIP;
	}
	/* make check's debug pass: the sweeps are the faults pass's. */
	if (getenv("KDAT_T_FAULT_SWEEPS") &&
	    !strcmp(getenv("KDAT_T_FAULT_SWEEPS"), "0")) {
		snprintf(why, len, "KDAT_T_FAULT_SWEEPS=0: make check-faults "
			 "(CI) runs the fault-injection sweeps");
		return KSFT_SKIP;
	}
	if (geteuid()) {
		snprintf(why, len, "needs root (debugfs)");
		return KSFT_SKIP;
	}
	/* Allocations that may sleep fail too, not only atomic ones. */
	for (i = 0; i < sizeof(gfp_wait) / sizeof(gfp_wait[0]); i++) {
		if (write_file(gfp_wait[i], "N")) {
			snprintf(why, len, "%s: cannot write it", gfp_wait[i]);
			return KSFT_FAIL;
		}
	}
	/* An injected failure is no splat: no stack in the kernel log. */
	for (i = 0; i < sizeof(quiet) / sizeof(quiet[0]); i++)
		write_file(quiet[i], "0");
	return 0;
}

/*
 * What a sweep runs in each of its processes: @setup(@arg) (if any) with
 * nothing failing, then @scenario(@arg) with failure point n failing.
 */
struct fail_nth_calls {
	void (*setup)(void *arg);
	void (*scenario)(void *arg);
	void *arg;
};

/*
 * Run @c's scenario with failure point 1, 2, ... of its task failing, up
 * to @max; the scenario must also succeed with none failing. Its set-up
 * runs first in the same process with nothing failing: what the scenario
 * needs but is not under test (a library's set-up that reads files: an
 * injected failure in the guest's 9p root file system's client breaks
 * the file system for every process after it). Failing stops before the
 * process's other exit handlers run. 0 with *@points the failure points
 * swept, or KSFT_SKIP or KSFT_FAIL with @why saying why.
 */
static int fail_nth_sweep_run(const char *name,
			      const struct fail_nth_calls *c, int max,
			      int *points, char *why, size_t len)
{
	struct counts before, now;
	int n, p[2], status, left, ret, i;
	ssize_t got;
	pid_t pid;

	ret = fail_nth_setup(why, len);
	if (ret)
		return ret;
	/*
	 * Allocations that fail report so, with a stack, unless made with
	 * __GFP_NOWARN (the device's own, under kdat's calls): the kernel
	 * log marks the sweep, and scripts/kernel-splat-check takes no
	 * allocation-failure report inside the marks for a splat (every other
	 * kind still is one). The mark that closes the window is written on
	 * every way out of here.
	 */
	if (write_file("/dev/kmsg", KDAT_FAULT_INJECTION_ON)) {
		snprintf(why, len, "/dev/kmsg: cannot mark the kernel log");
		return KSFT_FAIL;
	}
	for (n = 1; n <= max; n++) {
		counts_get(&before);
		if (pipe(p)) {
			snprintf(why, len, "pipe: %s", strerror(errno));
			ret = KSFT_FAIL;
			break;
		}
		pid = fork();
		if (pid < 0) {
			snprintf(why, len, "fork: %s", strerror(errno));
			close(p[0]);
			close(p[1]);
			ret = KSFT_FAIL;
			break;
		}
		if (!pid) {
			char buf[16];
			int null = open("/dev/null", O_WRONLY);

			/* The scenario's own failures say nothing here. */
			dup2(null, STDOUT_FILENO);
			close(p[0]);
			fail_nth_report = p[1];
			if (c->setup)
				c->setup(c->arg);
			fail_nth_fd = open("/proc/thread-self/fail-nth",
					   O_RDWR);
			if (fail_nth_fd < 0 || atexit(fail_nth_atexit))
				_exit(3);
			snprintf(buf, sizeof(buf), "%d", n);
			if (write(fail_nth_fd, buf, strlen(buf)) < 0)
				_exit(3);
			c->scenario(c->arg);
			exit(0);
		}
		close(p[1]);
		if (waitpid(pid, &status, 0) != pid) {
			snprintf(why, len, "waitpid: %s", strerror(errno));
			close(p[0]);
			ret = KSFT_FAIL;
			break;
		}
		left = -1;
		got = read(p[0], &left, sizeof(left));
		close(p[0]);
		if (got != sizeof(left)) {
			snprintf(why, len, "%s, failure point %d: the run died "
				 "(status %#x)", name, n, status);
			ret = KSFT_FAIL;
			break;
		}
		i = counts_differ(&before, &now);
		if (i >= 0) {
			snprintf(why, len, "%s, failure point %d: %s: %d live, "
				 "%d before", name, n, kdat_obj_types[i],
				 now.n[i], before.n[i]);
			ret = KSFT_FAIL;
			break;
		}
		if (left > 0) {
			/* No point n: every one was swept. */
			if (!WIFEXITED(status) || WEXITSTATUS(status)) {
				snprintf(why, len, "%s fails with no failure "
					 "injected", name);
				ret = KSFT_FAIL;
			}
			break;
		}
	}
	if (!ret && n > max) {
		snprintf(why, len, "%s: more than %d failure points", name,
			 max);
		ret = KSFT_FAIL;
	}
	write_file("/dev/kmsg", KDAT_FAULT_INJECTION_OFF);
	if (ret)
		return ret;
	*points = n - 1;
	validate_slabs();
	return 0;
}

#ifdef KDAT_HARNESS_H
/*
 * A kselftest_harness.h case's: each run's set-up and scenario assert with
 * a metadata of their own (kdat_child_call()'s), so that their failures,
 * which the injected faults make, end the run and not the case. A set-up
 * that fails ends the run before its scenario, which the sweep reports.
 */
struct fail_nth_case {
	struct __test_metadata *metadata;
	void (*setup)(struct __test_metadata *_metadata);
	void (*scenario)(struct __test_metadata *_metadata);
};

static void fail_nth_case_setup_call(struct __test_metadata *_metadata,
				     void *arg)
{
	((struct fail_nth_case *)arg)->setup(_metadata);
}

static void fail_nth_case_scenario(struct __test_metadata *_metadata,
				   void *arg)
{
	((struct fail_nth_case *)arg)->scenario(_metadata);
}

/* The harness's reports (TH_LOG(), on stderr) say nothing here either. */
static void fail_nth_case_setup(void *arg)
{
	struct fail_nth_case *fc = arg;
	int null = open("/dev/null", O_WRONLY);

	dup2(null, STDERR_FILENO);
	if (fc->setup &&
	    kdat_child_call(fc->metadata, fail_nth_case_setup_call, fc))
		_exit(KSFT_FAIL);
}

static void fail_nth_case_run(void *arg)
{
	struct fail_nth_case *fc = arg;

	kdat_child_run(fc->metadata, fail_nth_case_scenario, fc);
}

/*
 * The sweep of @scenario, each run after @setup (NULL: none) with nothing
 * failing: the case skips where the sweep cannot run, and fails on what
 * it found.
 */
static inline void
fail_nth_sweep_after(struct __test_metadata *_metadata, const char *name,
		     void (*setup)(struct __test_metadata *),
		     void (*scenario)(struct __test_metadata *), int max)
{
	struct fail_nth_case fc = { _metadata, setup, scenario };
	struct fail_nth_calls c = {
		fail_nth_case_setup, fail_nth_case_run, &fc,
	};
	char why[256];
	int points = 0, ret;

	ret = fail_nth_sweep_run(name, &c, max, &points, why, sizeof(why));
	if (ret == KSFT_SKIP)
		KDAT_SKIP("%s", why);
	ASSERT_EQ(0, ret)
		TH_LOG("%s", why);
	TH_LOG("%s: %d failure points, each failed once: every run "
	       "unwound, the object counts back", name, points);
}

static inline void fail_nth_sweep(struct __test_metadata *_metadata,
				  const char *name,
				  void (*scenario)(struct __test_metadata *),
				  int max)
{
	fail_nth_sweep_after(_metadata, name, NULL, scenario, max);
}
#endif /* KDAT_HARNESS_H */

#endif /* KDAT_FAIL_NTH_H */
