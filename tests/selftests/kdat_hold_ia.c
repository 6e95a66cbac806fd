// SPDX-License-Identifier: GPL-2.0
/*
 * kdat_hold_ia DEVICE PORT: open an IA and hold it, for the module-life
 * tests. Prints "ready HANDLE", then answers one command a line on stdin:
 *
 *   query   ->  "state ACTIVE|DEVICE_GONE port_state N"  or "query ERRNO"
 *   close   ->  "destroy RET"   (0 or -errno)
 *   fork    ->  "forked PID": a child goes on with the fd and stdin, and
 *               this process (the file's opener) exits
 *   exit    ->  exits 0 (as does end of input); the fd goes with it
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <linux/kdat.h>

int main(int argc, char **argv)
{
	struct kdat_ia_open op = { .size = sizeof(op) };
	char line[64];
	int fd;

	if (argc != 3 || strlen(argv[1]) >= sizeof(op.name)) {
		fprintf(stderr, "usage: %s DEVICE PORT\n", argv[0]);
		return 2;
	}
	fd = open(KDAT_DEVICE_PATH, O_RDWR);
	if (fd < 0) {
		printf("error open %d\n", errno);
		return 1;
	}
	strcpy(op.name, argv[1]);
	op.port_num = strtoul(argv[2], NULL, 0);
	if (ioctl(fd, KDAT_IOCTL_IA_OPEN, &op)) {
		printf("error ia_open %d\n", errno);
		return 1;
	}
	printf("ready %u\n", op.out_ia_handle);
	fflush(stdout);

	while (fgets(line, sizeof(line), stdin)) {
		if (!strncmp(line, "query", 5)) {
			struct kdat_ia_query q = {
				.size = sizeof(q),
				.ia_handle = op.out_ia_handle,
			};

			if (ioctl(fd, KDAT_IOCTL_IA_QUERY, &q))
				printf("query %d\n", errno);
			else
				printf("state %s port_state %u\n",
				       q.state == KDAT_IA_STATE_ACTIVE ?
				       "ACTIVE" : "DEVICE_GONE", q.port_state);
		} else if (!strncmp(line, "close", 5)) {
			struct kdat_destroy d = {
				.size = sizeof(d),
				.handle = op.out_ia_handle,
			};

			printf("destroy %d\n",
			       ioctl(fd, KDAT_IOCTL_DESTROY, &d) ? -errno : 0);
		} else if (!strncmp(line, "fork", 4)) {
			pid_t pid = fork();

			if (pid > 0) {
				printf("forked %d\n", pid);
				fflush(stdout);
				_exit(0);
			}
			if (pid < 0)
				printf("fork %d\n", errno);
		} else if (!strncmp(line, "exit", 4)) {
			break;
		}
		fflush(stdout);
	}
	return 0;
}
