/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A file whose pages fault for as long as the test likes: a FUSE file
 * system of one read-only file, served by a child process over the raw
 * /dev/fuse protocol (no libfuse), whose READ replies wait until the test
 * releases them. Memory mapped from it is what a hostile process puts
 * under a pin or a copy to keep the kernel waiting (issue 44): the kernel
 * sends the READ, the test learns of it (slow_fuse_wait_read()), and the
 * faulting task stays in the fault until slow_fuse_release().
 *
 * Needs root (mount) and a kernel with FUSE; slow_fuse_start() says so
 * otherwise (a case skips). The server is in the case's process group,
 * which the runner kills when the case ends: the connection aborts and
 * every fault ends. Only the mounting user (root) may use the file
 * system. No test harness here: the functions answer, their callers
 * judge.
 */
#ifndef KDAT_SLOW_FUSE_H
#define KDAT_SLOW_FUSE_H

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <linux/fuse.h>

#define SLOW_FUSE_INO		2
#define SLOW_FUSE_NAME		"slow"

struct slow_fuse {
	char dir[64];		/* the mount point */
	char path[96];		/* the file */
	size_t size;		/* its size */
	pid_t server;
	int reads;		/* server -> test: a byte per READ held */
	int release;		/* test -> server: a byte releases one READ */
	int skip;		/* slow_fuse_start() failed for want of root
				 * or of FUSE, not of a failure */
	char why[96];		/* what slow_fuse_start() could not do */
};

#define SLOW_FUSE_DATA	(1 << 16)	/* the most a READ answers */

static inline int slow_fuse_reply(int fd, uint64_t unique, int error,
				  const void *arg, size_t len)
{
	static char buf[sizeof(struct fuse_out_header) + SLOW_FUSE_DATA];
	struct fuse_out_header *h = (void *)buf;

	if (len > SLOW_FUSE_DATA)
		len = SLOW_FUSE_DATA;
	h->len = sizeof(*h) + len;
	h->error = error;
	h->unique = unique;
	if (len)
		memcpy(buf + sizeof(*h), arg, len);
	return write(fd, buf, h->len) == (ssize_t)h->len ? 0 : -errno;
}

static inline void slow_fuse_attr(struct fuse_attr *a, uint64_t ino,
				  size_t size)
{
	memset(a, 0, sizeof(*a));
	a->ino = ino;
	a->size = ino == SLOW_FUSE_INO ? size : 0;
	a->blocks = (a->size + 511) / 512;
	a->mode = ino == SLOW_FUSE_INO ? S_IFREG | 0444 : S_IFDIR | 0755;
	a->nlink = ino == SLOW_FUSE_INO ? 1 : 2;
	a->blksize = 4096;
}

/* A READ held: what its answer needs. */
struct slow_fuse_read {
	uint64_t unique;
	size_t len;
};

#define SLOW_FUSE_HELD	16

/*
 * The server: answers everything at once but READs, which it holds (and
 * tells the test of) until the test releases them, oldest first. Other
 * requests (a FLUSH when a file descriptor closes, at an exit or exec)
 * are answered meanwhile.
 */
static inline void slow_fuse_serve(int fd, const struct slow_fuse *sf)
{
	static char req[1 << 17];
	static char data[SLOW_FUSE_DATA];
	struct slow_fuse_read held[SLOW_FUSE_HELD];
	int nheld = 0;

	memset(data, 0x5a, sizeof(data));
	for (;;) {
		struct pollfd p[2] = {
			{ .fd = fd, .events = POLLIN },
			{ .fd = sf->release, .events = POLLIN },
		};
		struct fuse_in_header *in = (void *)req;
		void *arg = req + sizeof(*in);
		ssize_t n;
		char c;

		if (poll(p, nheld ? 2 : 1, -1) < 0)
			continue;
		if (nheld && (p[1].revents & (POLLIN | POLLHUP))) {
			if (read(sf->release, &c, 1) != 1)
				_exit(0);
			slow_fuse_reply(fd, held[0].unique, 0, data,
					held[0].len);
			memmove(held, held + 1, --nheld * sizeof(held[0]));
			continue;
		}
		if (!(p[0].revents & POLLIN)) {
			if (p[0].revents)
				_exit(0);
			continue;
		}
		n = read(fd, req, sizeof(req));
		if (n < 0 && (errno == EINTR || errno == ENOENT))
			continue;
		if (n < (ssize_t)sizeof(*in))
			_exit(0);	/* unmounted or aborted */
		switch (in->opcode) {
		case FUSE_INIT: {
			struct fuse_init_out out = {
				.major = FUSE_KERNEL_VERSION,
				.minor = FUSE_KERNEL_MINOR_VERSION,
				.max_readahead = 0,
				.max_write = 4096,
			};

			slow_fuse_reply(fd, in->unique, 0, &out, sizeof(out));
			break;
		}
		case FUSE_LOOKUP: {
			struct fuse_entry_out out = {};

			if (strcmp(arg, SLOW_FUSE_NAME)) {
				slow_fuse_reply(fd, in->unique, -ENOENT, 0, 0);
				break;
			}
			out.nodeid = SLOW_FUSE_INO;
			out.generation = 1;
			out.entry_valid = 3600;
			out.attr_valid = 3600;
			slow_fuse_attr(&out.attr, SLOW_FUSE_INO, sf->size);
			slow_fuse_reply(fd, in->unique, 0, &out, sizeof(out));
			break;
		}
		case FUSE_GETATTR: {
			struct fuse_attr_out out = { .attr_valid = 3600 };

			slow_fuse_attr(&out.attr, in->nodeid, sf->size);
			slow_fuse_reply(fd, in->unique, 0, &out, sizeof(out));
			break;
		}
		case FUSE_OPEN:
		case FUSE_OPENDIR: {
			struct fuse_open_out out = { .fh = 1 };

			slow_fuse_reply(fd, in->unique, 0, &out, sizeof(out));
			break;
		}
		case FUSE_READ: {
			const struct fuse_read_in *r = arg;
			size_t len = r->size;

			if (r->offset >= sf->size)
				len = 0;
			else if (len > sf->size - r->offset)
				len = sf->size - r->offset;
			if (len > sizeof(data))
				len = sizeof(data);
			if (nheld == SLOW_FUSE_HELD) {
				slow_fuse_reply(fd, in->unique, 0, data, len);
				break;
			}
			/* Held; the test hears of it. */
			held[nheld].unique = in->unique;
			held[nheld++].len = len;
			c = 1;
			if (write(sf->reads, &c, 1) != 1)
				_exit(0);
			break;
		}
		case FUSE_INTERRUPT: {
			/*
			 * The task waiting for a held READ got a signal: the
			 * READ ends (EINTR), so that a case can always be
			 * killed while it is still interruptible.
			 */
			const struct fuse_interrupt_in *r = arg;
			int i;

			for (i = 0; i < nheld; i++)
				if (held[i].unique == r->unique)
					break;
			if (i < nheld) {
				slow_fuse_reply(fd, held[i].unique, -EINTR, 0,
						0);
				memmove(held + i, held + i + 1,
					(--nheld - i) * sizeof(held[0]));
			}
			break;		/* an INTERRUPT has no reply */
		}
		case FUSE_FORGET:
		case FUSE_BATCH_FORGET:
			break;		/* no reply */
		case FUSE_FLUSH:
		case FUSE_RELEASE:
		case FUSE_RELEASEDIR:
		case FUSE_DESTROY:
			slow_fuse_reply(fd, in->unique, 0, 0, 0);
			break;
		default:
			slow_fuse_reply(fd, in->unique, -ENOSYS, 0, 0);
			break;
		}
	}
}

/* slow_fuse_start()'s answer when it cannot: -1, @sf->why said. */
static inline int slow_fuse_fail(struct slow_fuse *sf, int skip,
				 const char *what)
{
	sf->skip = skip;
	snprintf(sf->why, sizeof(sf->why), "%s%s%s", what, skip ? "" : ": ",
		 skip ? "" : strerror(errno));
	return -1;
}

/*
 * Mount a file of @size bytes and start its server: 0, or -1 with
 * @sf->why saying why (and @sf->skip set without root or FUSE).
 */
static inline int slow_fuse_start(struct slow_fuse *sf, size_t size)
{
	int fd, reads[2], release[2];
	char opts[128];

	memset(sf, 0, sizeof(*sf));
	if (geteuid())
		return slow_fuse_fail(sf, 1, "needs root (a FUSE mount)");
	if (system("modprobe fuse >/dev/null 2>&1")) {
		/* Built in, or no FUSE at all: the open says which. */
	}
	fd = open("/dev/fuse", O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return slow_fuse_fail(sf, 1,
				      "no /dev/fuse: a kernel without FUSE");
	sf->size = size;
	snprintf(sf->dir, sizeof(sf->dir), "/tmp/kdat-fuse.XXXXXX");
	if (!mkdtemp(sf->dir))
		return slow_fuse_fail(sf, 0, "mkdtemp");
	snprintf(sf->path, sizeof(sf->path), "%s/%s", sf->dir,
		 SLOW_FUSE_NAME);
	snprintf(opts, sizeof(opts),
		 "fd=%d,rootmode=40000,user_id=0,group_id=0", fd);
	if (mount("kdat-slow", sf->dir, "fuse", MS_NOSUID | MS_NODEV, opts))
		return slow_fuse_fail(sf, 0, "mount fuse");
	if (pipe(reads) || pipe(release))
		return slow_fuse_fail(sf, 0, "pipe");
	sf->server = fork();
	if (sf->server < 0)
		return slow_fuse_fail(sf, 0, "fork");
	if (!sf->server) {
		close(reads[0]);
		close(release[1]);
		sf->reads = reads[1];
		sf->release = release[0];
		slow_fuse_serve(fd, sf);
		_exit(0);
	}
	close(fd);
	close(reads[1]);
	close(release[0]);
	sf->reads = reads[0];
	sf->release = release[1];
	return 0;
}

/* A READ is held by the server, within @ms; false if none came. */
static inline int slow_fuse_wait_read(struct slow_fuse *sf, int ms)
{
	struct pollfd p = { .fd = sf->reads, .events = POLLIN };
	char c;

	if (poll(&p, 1, ms) != 1 || read(sf->reads, &c, 1) != 1)
		return 0;
	return 1;
}

/* Let the held READ (and, later, @n - 1 more) be answered: 0 or -errno. */
static inline int slow_fuse_release(struct slow_fuse *sf, int n)
{
	char c = 1;

	while (n-- > 0)
		if (write(sf->release, &c, 1) != 1)
			return -errno;
	return 0;
}

/* Unmount and stop the server (every fault it held ends). */
static inline void slow_fuse_stop(struct slow_fuse *sf)
{
	close(sf->release);
	close(sf->reads);
	umount2(sf->dir, MNT_DETACH);
	kill(sf->server, SIGKILL);
	waitpid(sf->server, NULL, 0);
	rmdir(sf->dir);
}

#endif
