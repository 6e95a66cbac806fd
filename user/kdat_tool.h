/* SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause) */
/*
 * What every kdat tool does alike, as the tools of rdma-core and
 * iproute2 do: --help prints the usage on stdout and exits 0; a usage
 * error prints a message and the usage on stderr and exits 2; --version
 * prints "PROGRAM (kdat) VERSION" and exits 0. KDAT_VERSION comes from
 * the build (debian/changelog's first entry).
 */
#ifndef KDAT_TOOL_H
#define KDAT_TOOL_H

#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#ifndef KDAT_VERSION
#error "KDAT_VERSION is set by the Makefile"
#endif

/* The long options every tool takes; 'h' and 'V' in its optstring. */
#define KDAT_TOOL_LONGOPTS			\
	{ "help", no_argument, NULL, 'h' },	\
	{ "version", no_argument, NULL, 'V' }

static inline void kdat_tool_version(const char *prog)
{
	printf("%s (kdat) %s\n", prog, KDAT_VERSION);
	exit(0);
}

/*
 * A usage error: "PROG: MESSAGE" and @usage on stderr, exit 2. @usage is
 * the tool's usage text, as --help prints it.
 */
static inline void __attribute__((format(printf, 3, 4), noreturn))
kdat_tool_usage_error(const char *prog, const char *usage, const char *fmt,
		      ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", prog);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n%s", usage);
	exit(2);
}

/*
 * An option getopt_long() refused: it has said which on stderr; the
 * usage follows, exit 2.
 */
static inline void __attribute__((noreturn))
kdat_tool_bad_option(const char *usage)
{
	fputs(usage, stderr);
	exit(2);
}

#endif
