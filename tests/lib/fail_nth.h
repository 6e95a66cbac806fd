/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Fault injection swept over a scenario (fail_nth_sweep()), for any test
 * program of kdat's: the hostile suite's ioctl scenarios and ring_test's
 * ring scenario share it. The caller includes ktap.h and
 * ../selftests/kdat_objects.h (the object counts) first.
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

static pid_t fail_nth_marker;

/* The sweep's process ends, however: the log's window closes. */
static void fail_nth_mark_off(void)
{
	if (getpid() == fail_nth_marker)
		write_file("/dev/kmsg", KDAT_FAULT_INJECTION_OFF);
}

static void fail_nth_setup(void)
{
	static const char *const quiet[] = {
		"/sys/kernel/debug/failslab/verbose",
		"/sys/kernel/debug/fail_page_alloc/verbose",
		"/sys/kernel/debug/fail_usercopy/verbose",
	};
	unsigned int i;

	if (access("/proc/thread-self/fail-nth", F_OK))
		ktap_skip("no fail-nth: the kernel has no CONFIG_FAULT_INJECTION "
			  "(make check-faults runs this, on the debug kernel)");
	/* make check's debug pass: the sweeps are the faults pass's. */
	if (getenv("KDAT_T_FAULT_SWEEPS") &&
	    !strcmp(getenv("KDAT_T_FAULT_SWEEPS"), "0"))
		ktap_skip("KDAT_T_FAULT_SWEEPS=0: make check-faults (CI) "
			  "runs the fault-injection sweeps");
	if (geteuid())
		ktap_skip("needs root (debugfs)");
	/* Allocations that may sleep fail too, not only atomic ones. */
	KTAP_EXPECT(!write_file("/sys/kernel/debug/failslab/ignore-gfp-wait",
				"N"));
	KTAP_EXPECT(!write_file(
		"/sys/kernel/debug/fail_page_alloc/ignore-gfp-wait", "N"));
	/* An injected failure is no splat: no stack in the kernel log. */
	for (i = 0; i < sizeof(quiet) / sizeof(quiet[0]); i++)
		write_file(quiet[i], "0");
}

/*
 * Run @scenario with failure point 1, 2, ... of its task failing, up to
 * @max; the scenario must also succeed with none failing. @setup (if any)
 * runs first in the same process with nothing failing: what the scenario
 * needs but is not under test (a library's set-up that reads files: an
 * injected failure in the guest's 9p root file system's client breaks
 * the file system for every process after it). Failing stops before the
 * process's other exit handlers run.
 */
static void fail_nth_sweep_after(const char *name, void (*setup)(void),
				 void (*scenario)(void), int max)
{
	struct counts before;
	int n, p[2], status, left;
	pid_t pid;

	fail_nth_setup();
	/*
	 * Allocations that fail report so, with a stack, unless made with
	 * __GFP_NOWARN (the device's own, under kdat's calls): the kernel
	 * log marks the sweep, and scripts/kernel-splat-check takes no
	 * allocation-failure report inside the marks for a splat (every other
	 * kind still is one).
	 */
	fail_nth_marker = getpid();
	KTAP_EXPECT(atexit(fail_nth_mark_off) == 0);
	KTAP_EXPECT(!write_file("/dev/kmsg", KDAT_FAULT_INJECTION_ON));
	for (n = 1; n <= max; n++) {
		counts_get(&before);
		KTAP_EXPECT(pipe(p) == 0);
		pid = fork();
		KTAP_EXPECT(pid >= 0);
		if (!pid) {
			char buf[16];
			int null = open("/dev/null", O_WRONLY);

			/* The scenario's own failures say nothing here. */
			dup2(null, STDOUT_FILENO);
			close(p[0]);
			fail_nth_report = p[1];
			if (setup)
				setup();
			fail_nth_fd = open("/proc/thread-self/fail-nth",
					   O_RDWR);
			if (fail_nth_fd < 0 || atexit(fail_nth_atexit))
				_exit(3);
			snprintf(buf, sizeof(buf), "%d", n);
			if (write(fail_nth_fd, buf, strlen(buf)) < 0)
				_exit(3);
			scenario();
			exit(0);
		}
		close(p[1]);
		KTAP_EXPECT(waitpid(pid, &status, 0) == pid);
		left = -1;
		if (read(p[0], &left, sizeof(left)) != sizeof(left))
			KTAP_FAIL("%s, failure point %d: the run died (status "
				  "%#x)", name, n, status);
		close(p[0]);
		counts_back(&before);
		if (left > 0) {
			/* No point n: every one was swept. */
			if (!WIFEXITED(status) || WEXITSTATUS(status))
				KTAP_FAIL("%s fails with no failure injected",
					  name);
			break;
		}
	}
	if (n > max)
		KTAP_FAIL("%s: more than %d failure points", name, max);
	ktap_diag("%s: %d failure points, each failed once: every run "
		  "unwound, the object counts back", name, n - 1);
	validate_slabs();
}

static inline void fail_nth_sweep(const char *name, void (*scenario)(void),
				  int max)
{
	fail_nth_sweep_after(name, NULL, scenario, max);
}

#endif /* KDAT_FAIL_NTH_H */
