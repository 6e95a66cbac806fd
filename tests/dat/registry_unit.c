// SPDX-License-Identifier: GPL-2.0
/*
 * libdat as the DAT registry, on the host (no RDMA device, no /dev/kdat
 * needed): dat.conf parsing (DAT_OVERRIDE, comments, quoting, bad lines
 * skipped), dat_registry_list_providers / _add_provider /
 * _remove_provider and their return codes, opening IAs through a
 * registered provider and through a dat.conf line (the test provider
 * registry_fake_provider.c, built as libregfake.so beside this program),
 * every call on another provider's handle reaching that provider,
 * dat_provider_fini at exit, and OFA's libdaplofa loaded and registered
 * through a dat.conf line (its IA open then fails: no device).
 *
 * Each case is a TEST_F() of the kernel's kselftest_harness.h on the
 * fixture of ../lib/kdat_harness.h, in a process of its own: the registry
 * reads dat.conf once, at its first use, so each case sets DAT_OVERRIDE
 * first. -l lists the cases; names as arguments (or -t NAME) pick some.
 */
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <dat2/udat.h>
#include <dat2/dat_registry.h>

#include "../lib/kdat_harness.h"
#include "../lib/dat_expect.h"

#define MAX_LIST 128

/* What OFA's providers call; libdat2 exports it, no header declares it. */
extern DAT_RETURN dats_get_ia_handle(DAT_IA_HANDLE handle,
				     DAT_IA_HANDLE *ia_handle);

static char dir[64];			/* scratch, removed at the end */
static char fake_lib[PATH_MAX + 16];	/* libregfake.so */
static char libdat_path[PATH_MAX];	/* the libdat this program uses */

/* Write @text as this case's dat.conf and point DAT_OVERRIDE at it. */
static void use_conf(struct __test_metadata *_metadata, const char *text)
{
	char path[PATH_MAX + 32];
	FILE *f;

	snprintf(path, sizeof(path), "%s/dat.conf.%d", dir, (int)getpid());
	f = fopen(path, "w");
	ASSERT_NE(NULL, f);
	ASSERT_TRUE(fputs(text, f) >= 0);
	ASSERT_TRUE(fclose(f) == 0);
	ASSERT_TRUE(setenv("DAT_OVERRIDE", path, 1) == 0);
}

/* The providers listed whose name starts with @prefix, in order. */
static DAT_COUNT list_prefixed(struct __test_metadata *_metadata,
			       const char *prefix, DAT_PROVIDER_INFO *out)
{
	static DAT_PROVIDER_INFO info[MAX_LIST];
	DAT_PROVIDER_INFO *list[MAX_LIST];
	DAT_COUNT n, i, m = 0;

	for (i = 0; i < MAX_LIST; i++)
		list[i] = &info[i];
	OK(dat_registry_list_providers(MAX_LIST, &n, list));
	ASSERT_TRUE(n >= 0 && n <= MAX_LIST);
	for (i = 0; i < n; i++)
		if (!strncmp(info[i].ia_name, prefix, strlen(prefix)))
			out[m++] = info[i];
	return m;
}

static void expect_info(struct __test_metadata *_metadata,
			const DAT_PROVIDER_INFO *i, const char *name,
			DAT_UINT32 major, DAT_UINT32 minor, DAT_BOOLEAN ts)
{
	ASSERT_FALSE(strcmp(i->ia_name, name) ||
		     i->dapl_version_major != major ||
		     i->dapl_version_minor != minor ||
		     !i->is_thread_safe != !ts)
		TH_LOG("listed %s %u.%u ts %d, want %s %u.%u ts %d",
		       i->ia_name, i->dapl_version_major,
		       i->dapl_version_minor, i->is_thread_safe, name,
		       major, minor, ts);
}

static DAT_RETURN open_ia(const char *name, DAT_UINT32 major,
			  DAT_UINT32 minor, DAT_BOOLEAN ts, DAT_IA_HANDLE *ia)
{
	DAT_EVD_HANDLE evd = DAT_HANDLE_NULL;

	return dat_ia_openv((DAT_NAME_PTR)name, 8, &evd, ia, major, minor, ts);
}

/* ---- dat.conf ---------------------------------------------------------- */

/*
 * Comments, blank lines, quoting, and every kind of bad line between good
 * ones: the good ones are listed, in file order, the bad and the skipped
 * ones not.
 */
TEST_F(kdat, test_conf_parse)
{
	DAT_PROVIDER_INFO got[MAX_LIST];
	char text[4096], longname[300];

	memset(longname, 'n', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = '\0';
	longname[0] = 't';
	longname[1] = '-';
	snprintf(text, sizeof(text),
		 "# a comment line\n"
		 "\n"
		 "   \t \n"
		 "t-a u2.0 nonthreadsafe default liba.so dapl.2.0 \"a 0\" \"\"\n"
		 "t-b u2.1 threadsafe default libb.so dapl.2.0 \"b 1\" \"\" # trailing\n"
		 "  t-c\tu1.2\tnonthreadsafe\tdefault\tlibc.so\tx.1.0\tinst\tplat\n"
		 "t-q u2.0 nonthreadsafe default \"lib q.so\" dapl.2.0 \"say \\\"hi\\\"\" \"\"\n"
		 "t-bad7 u2.0 nonthreadsafe default lib.so dapl.2.0 \"x\"\n"
		 "t-bad9 u2.0 nonthreadsafe default lib.so dapl.2.0 \"x\" \"\" extra\n"
		 "t-badapi x2.0 nonthreadsafe default lib.so dapl.2.0 \"x\" \"\"\n"
		 "t-badapi2 u2 nonthreadsafe default lib.so dapl.2.0 \"x\" \"\"\n"
		 "t-badapi3 u2.x nonthreadsafe default lib.so dapl.2.0 \"x\" \"\"\n"
		 "t-badts u2.0 threadsafeish default lib.so dapl.2.0 \"x\" \"\"\n"
		 "t-baddef u2.0 threadsafe maybe lib.so dapl.2.0 \"x\" \"\"\n"
		 "t-badver u2.0 threadsafe default lib.so dapl \"x\" \"\"\n"
		 "t-badver2 u2.0 threadsafe default lib.so .2.0 \"x\" \"\"\n"
		 "t-badquote u2.0 threadsafe default lib.so dapl.2.0 \"x \"\"\n"
		 "t-nondef u2.0 nonthreadsafe nondefault lib.so dapl.2.0 \"x\" \"\"\n"
		 "t-kdapl k2.0 nonthreadsafe default lib.so dapl.2.0 \"x\" \"\"\n"
		 "%s u2.0 nonthreadsafe default lib.so dapl.2.0 \"x\" \"\"\n"
		 "\"\" u2.0 nonthreadsafe default lib.so dapl.2.0 \"x\" \"\"\n"
		 "#t-commented u2.0 nonthreadsafe default lib.so dapl.2.0 \"x\" \"\"\n"
		 "t-d u2.0 nonthreadsafe default libd.so dapl.2.0 \"\" \"\"\n"
		 "t-a u2.0 nonthreadsafe default liba2.so dapl.2.0 \"a 0\" \"\"\n"
		 "t-a u2.0 threadsafe default liba.so dapl.2.0 \"a 0\" \"\"\n"
		 "t-e u2.0 nonthreadsafe default libe.so dapl.2.0 \"no newline\" \"\"",
		 longname);
	use_conf(_metadata, text);
	ASSERT_EQ(7, list_prefixed(_metadata, "t-", got));
	expect_info(_metadata, &got[0], "t-a", 2, 0, DAT_FALSE);
	expect_info(_metadata, &got[1], "t-b", 2, 1, DAT_TRUE);
	expect_info(_metadata, &got[2], "t-c", 1, 2, DAT_FALSE);
	expect_info(_metadata, &got[3], "t-q", 2, 0, DAT_FALSE);
	expect_info(_metadata, &got[4], "t-d", 2, 0, DAT_FALSE);
	/* The second t-a nonthreadsafe line is a fallback, not listed. */
	expect_info(_metadata, &got[5], "t-a", 2, 0, DAT_TRUE);
	expect_info(_metadata, &got[6], "t-e", 2, 0, DAT_FALSE);
}

/* DAT_OVERRIDE naming a file that is not there: no entries at all. */
TEST_F(kdat, test_conf_override_missing)
{
	DAT_PROVIDER_INFO got[MAX_LIST];
	char path[PATH_MAX + 16];

	snprintf(path, sizeof(path), "%s/no-such-dat.conf", dir);
	ASSERT_TRUE(setenv("DAT_OVERRIDE", path, 1) == 0);
	ASSERT_EQ(0, list_prefixed(_metadata, "", got));
}

/* Without DAT_OVERRIDE: /etc/dat.conf, whose first entry is listed. */
TEST_F(kdat, test_conf_default_file)
{
	DAT_PROVIDER_INFO got[MAX_LIST];
	char line[1024], name[DAT_NAME_MAX_LENGTH] = "";
	DAT_COUNT n, i;
	FILE *f;

	unsetenv("DAT_OVERRIDE");
	f = fopen("/etc/dat.conf", "r");
	if (!f)
		SKIP(return, "no /etc/dat.conf");
	while (!name[0] && fgets(line, sizeof(line), f)) {
		char api[64], def[64];

		if (line[0] == '#' ||
		    sscanf(line, "%255s %63s %*s %63s", name, api, def) != 3 ||
		    api[0] != 'u' || strcmp(def, "default"))
			name[0] = '\0';
	}
	fclose(f);
	if (!name[0])
		SKIP(return, "no uDAPL default entry in /etc/dat.conf");
	n = list_prefixed(_metadata, "", got);
	for (i = 0; i < n; i++)
		if (!strcmp(got[i].ia_name, name))
			break;
	ASSERT_FALSE(i == n)
		TH_LOG("/etc/dat.conf's %s not listed", name);
}

/* ---- dat_registry_list_providers --------------------------------------- */

TEST_F(kdat, test_list_semantics)
{
	DAT_PROVIDER_INFO info[4], *list[4];
	DAT_COUNT n, all, i;

	use_conf(_metadata,
		 "t-1 u2.0 nonthreadsafe default l.so d.2.0 \"\" \"\"\n"
		 "t-2 u2.0 nonthreadsafe default l.so d.2.0 \"\" \"\"\n"
		 "t-3 u2.0 nonthreadsafe default l.so d.2.0 \"\" \"\"\n");
	for (i = 0; i < 4; i++)
		list[i] = &info[i];
	/* max 0: how many there are, and DAT_INVALID_PARAMETER (OFA's). */
	n = -1;
	ASSERT_DAT(dat_registry_list_providers(0, &n, NULL),
		   DAT_INVALID_PARAMETER);
	all = n;
	ASSERT_TRUE(all >= 3);	/* and kdat's IAs, where there is kdat */
	ASSERT_DAT(dat_registry_list_providers(4, NULL, list),
		   DAT_INVALID_PARAMETER);
	ASSERT_DAT(dat_registry_list_providers(4, &n, NULL),
		   DAT_INVALID_PARAMETER);
	ASSERT_DAT(dat_registry_list_providers(-1, &n, list),
		   DAT_INVALID_PARAMETER);
	/* Fewer room than entries: as many as fit. */
	OK(dat_registry_list_providers(2, &n, list));
	ASSERT_EQ(2, n);
	/* A NULL slot among those it would fill. */
	list[1] = NULL;
	ASSERT_DAT(dat_registry_list_providers(4, &n, list),
		   DAT_INVALID_PARAMETER);
	list[1] = &info[1];
	OK(dat_registry_list_providers(4, &n, list));
	ASSERT_EQ(all < 4 ? all : 4, n);
	/* Listing changes nothing: the same again. */
	OK(dat_registry_list_providers(4, &i, list));
	ASSERT_EQ(n, i);
}

/* ---- the dynamic registry, with a provider of this program ------------- */

struct test_obj {
	DAT_PROVIDER *provider;
	DAT_HANDLE_TYPE type;
};

static DAT_PROVIDER test_provider, other_provider;
static int nr_open, nr_close, nr_pz, nr_ep_post;
/*
 * What the provider's functions were given, for the case to check (they
 * run in the registry's call, not as a case's helper).
 */
static int nr_pz_not_ia;
static DAT_COUNT ep_post_n;
static DAT_UINT64 ep_post_cookie;

static DAT_RETURN test_ia_open(const DAT_NAME_PTR name, DAT_COUNT qlen,
			       DAT_EVD_HANDLE *evd, DAT_IA_HANDLE *ia)
{
	static struct test_obj o = { &test_provider, DAT_HANDLE_TYPE_IA };

	(void)name;
	(void)qlen;
	(void)evd;
	nr_open++;
	*ia = &o;
	return DAT_SUCCESS;
}

static DAT_RETURN test_ia_close(DAT_IA_HANDLE ia, DAT_CLOSE_FLAGS flags)
{
	(void)ia;
	nr_close++;
	return flags == DAT_CLOSE_ABRUPT_FLAG ? DAT_SUCCESS :
			DAT_CLASS_ERROR | DAT_INVALID_STATE;
}

static DAT_RETURN test_pz_create(DAT_IA_HANDLE ia, DAT_PZ_HANDLE *pz)
{
	static struct test_obj o = { &test_provider, DAT_HANDLE_TYPE_PZ };

	nr_pz_not_ia += ((struct test_obj *)ia)->type != DAT_HANDLE_TYPE_IA;
	nr_pz++;
	*pz = &o;
	return DAT_SUCCESS;
}

static DAT_RETURN test_ep_post_send(DAT_EP_HANDLE ep, DAT_COUNT n,
				    DAT_LMR_TRIPLET *iov, DAT_DTO_COOKIE c,
				    DAT_COMPLETION_FLAGS f)
{
	(void)ep;
	(void)iov;
	(void)f;
	ep_post_n = n;
	ep_post_cookie = c.as_64;
	nr_ep_post++;
	return DAT_CLASS_ERROR | DAT_QUEUE_FULL;
}

static DAT_EXTENDED_OP ext_op;
static int ext_arg;
static DAT_HANDLE ext_handle;

static DAT_RETURN test_ext(DAT_HANDLE h, DAT_EXTENDED_OP op, va_list args)
{
	ext_handle = h;
	ext_op = op;
	ext_arg = va_arg(args, int);
	return DAT_QUEUE_EMPTY;
}

static DAT_PROVIDER_INFO test_info(const char *name, DAT_UINT32 minor,
				   DAT_BOOLEAN ts)
{
	DAT_PROVIDER_INFO i = {
		.dapl_version_major = 2,
		.dapl_version_minor = minor,
		.is_thread_safe = ts,
	};

	snprintf(i.ia_name, sizeof(i.ia_name), "%s", name);
	return i;
}

static void setup_test_provider(void)
{
	test_provider.device_name = "test";
	test_provider.ia_open_func = test_ia_open;
	test_provider.ia_close_func = test_ia_close;
	test_provider.pz_create_func = test_pz_create;
	test_provider.ep_post_send_func = test_ep_post_send;
	test_provider.handle_extendedop_func = test_ext;
	other_provider = test_provider;
}

/* Adding and removing, with every error the pages name. */
TEST_F(kdat, test_add_remove)
{
	DAT_PROVIDER_INFO a = test_info("t-dyn", 0, DAT_FALSE);
	DAT_PROVIDER_INFO a_ts = test_info("t-dyn", 0, DAT_TRUE);
	DAT_PROVIDER_INFO b = test_info("t-other", 0, DAT_FALSE);
	DAT_PROVIDER_INFO got[MAX_LIST];
	DAT_PROVIDER bad = { .device_name = "no open function" };
	DAT_PROVIDER_INFO unterminated;
	DAT_IA_HANDLE ia;

	setup_test_provider();
	use_conf(_metadata, "");
	ASSERT_DAT(dat_registry_add_provider(NULL, &a), DAT_INVALID_PARAMETER);
	ASSERT_DAT(dat_registry_add_provider(&test_provider, NULL),
		   DAT_INVALID_PARAMETER);
	ASSERT_DAT(dat_registry_add_provider(&bad, &a), DAT_INVALID_PARAMETER);
	memset(&unterminated, 'x', sizeof(unterminated));
	ASSERT_DAT(dat_registry_add_provider(&test_provider, &unterminated),
		   DAT_INVALID_PARAMETER);
	OK(dat_registry_add_provider(&test_provider, &a));
	/* The same IA name, version and thread safety again. */
	ASSERT_DAT(dat_registry_add_provider(&test_provider, &a),
		   DAT_PROVIDER_ALREADY_REGISTERED);
	ASSERT_DAT(dat_registry_add_provider(&other_provider, &a),
		   DAT_PROVIDER_ALREADY_REGISTERED);
	/* The name with the other thread safety is another entry. */
	OK(dat_registry_add_provider(&test_provider, &a_ts));
	/* Dynamic registrations are not the static registry's list. */
	ASSERT_EQ(0, list_prefixed(_metadata, "t-", got));

	/* Removing what is not there, or someone else's. */
	ASSERT_DAT(dat_registry_remove_provider(NULL, &a),
		   DAT_INVALID_PARAMETER);
	ASSERT_DAT(dat_registry_remove_provider(&test_provider, NULL),
		   DAT_INVALID_PARAMETER);
	ASSERT_DAT(dat_registry_remove_provider(&test_provider, &b),
		   DAT_PROVIDER_NOT_FOUND);
	ASSERT_DAT(dat_registry_remove_provider(&other_provider, &a),
		   DAT_PROVIDER_NOT_FOUND);

	/* In use while an IA is open through it. */
	OK(open_ia("t-dyn", 2, 0, DAT_FALSE, &ia));
	ASSERT_EQ(1, nr_open);
	ASSERT_DAT(dat_registry_remove_provider(&test_provider, &a),
		   DAT_PROVIDER_IN_USE);
	/* The provider refuses a graceful close: still open, still in use. */
	ASSERT_DAT(dat_ia_close(ia, DAT_CLOSE_GRACEFUL_FLAG),
		   DAT_INVALID_STATE);
	ASSERT_DAT(dat_registry_remove_provider(&test_provider, &a),
		   DAT_PROVIDER_IN_USE);
	OK(dat_ia_close(ia, DAT_CLOSE_ABRUPT_FLAG));
	ASSERT_EQ(2, nr_close);
	/* Closed: not an IA any more, not the provider's to close again. */
	ASSERT_DAT(dat_ia_close(ia, DAT_CLOSE_ABRUPT_FLAG), DAT_INVALID_HANDLE);
	ASSERT_EQ(2, nr_close);
	OK(dat_registry_remove_provider(&test_provider, &a));
	ASSERT_DAT(dat_registry_remove_provider(&test_provider, &a),
		   DAT_PROVIDER_NOT_FOUND);
	OK(dat_registry_remove_provider(&test_provider, &a_ts));

	/* Gone: the name is no one's now (no kdat device here either). */
	ASSERT_DAT(open_ia("t-dyn", 2, 0, DAT_FALSE, &ia),
		   DAT_PROVIDER_NOT_FOUND);
	ASSERT_EQ(1, nr_open);
	/* Back again after removal. */
	OK(dat_registry_add_provider(&test_provider, &a));
}

/* Which registration an open takes: name, major, thread safety, minor. */
TEST_F(kdat, test_open_matching)
{
	DAT_PROVIDER_INFO v25 = test_info("t-ver", 5, DAT_TRUE);
	DAT_IA_HANDLE ia;
	char longname[DAT_NAME_MAX_LENGTH + 1];

	setup_test_provider();
	use_conf(_metadata, "");
	OK(dat_registry_add_provider(&test_provider, &v25));
	OK(open_ia("t-ver", 2, 5, DAT_TRUE, &ia));	/* exact */
	OK(dat_ia_close(ia, DAT_CLOSE_ABRUPT_FLAG));
	OK(open_ia("t-ver", 2, 3, DAT_TRUE, &ia));	/* a newer minor */
	OK(dat_ia_close(ia, DAT_CLOSE_ABRUPT_FLAG));
	ASSERT_EQ(2, nr_open);
	ASSERT_DAT(open_ia("t-ver", 2, 6, DAT_TRUE, &ia),
		   DAT_PROVIDER_NOT_FOUND);		/* an older one */
	ASSERT_DAT(open_ia("t-ver", 1, 5, DAT_TRUE, &ia),
		   DAT_PROVIDER_NOT_FOUND);		/* another major */
	ASSERT_DAT(open_ia("t-ver", 2, 5, DAT_FALSE, &ia),
		   DAT_PROVIDER_NOT_FOUND);		/* not thread safe */
	ASSERT_DAT(open_ia("t-VER", 2, 5, DAT_TRUE, &ia),
		   DAT_PROVIDER_NOT_FOUND);		/* names are exact */
	ASSERT_EQ(2, nr_open);
	/* Arguments. */
	ASSERT_DAT(open_ia(NULL, 2, 5, DAT_TRUE, &ia), DAT_INVALID_PARAMETER);
	memset(longname, 'x', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = '\0';
	ASSERT_DAT(open_ia(longname, 2, 5, DAT_TRUE, &ia),
		   DAT_INVALID_PARAMETER);
	ASSERT_DAT(open_ia("t-ver", 2, 5, DAT_TRUE, NULL), DAT_INVALID_HANDLE);
	ASSERT_EQ(2, nr_open);
}

/*
 * Every call on the provider's handles reaches the provider; a call its
 * table has no function for answers DAT_NOT_IMPLEMENTED; a handle of no
 * provider registered here is refused without reaching anyone.
 */
TEST_F(kdat, test_dispatch)
{
	DAT_PROVIDER_INFO a = test_info("t-disp", 0, DAT_FALSE);
	struct test_obj ep = { &test_provider, DAT_HANDLE_TYPE_EP };
	struct test_obj stranger = { &other_provider, DAT_HANDLE_TYPE_EP };
	DAT_LMR_TRIPLET iov[3];
	DAT_DTO_COOKIE cookie = { .as_64 = 0x1234 };
	DAT_IA_HANDLE ia, mapped;
	DAT_PZ_HANDLE pz;
	DAT_EVD_HANDLE evd;

	setup_test_provider();
	use_conf(_metadata, "");
	OK(dat_registry_add_provider(&test_provider, &a));
	OK(open_ia("t-disp", 2, 0, DAT_FALSE, &ia));
	OK(dat_pz_create(ia, &pz));
	ASSERT_EQ(1, nr_pz);
	ASSERT_EQ(0, nr_pz_not_ia);
	ASSERT_DAT(dat_ep_post_send(&ep, 3, iov, cookie, 0), DAT_QUEUE_FULL);
	ASSERT_EQ(1, nr_ep_post);
	ASSERT_EQ(3, ep_post_n);
	ASSERT_EQ(0x1234, ep_post_cookie);
	/* No function in its table for these. */
	ASSERT_DAT(dat_evd_create(ia, 8, DAT_HANDLE_NULL, DAT_EVD_DTO_FLAG,
				  &evd), DAT_NOT_IMPLEMENTED);
	ASSERT_DAT(dat_pz_free(pz), DAT_NOT_IMPLEMENTED);
	/* A provider that never registered: kdat's refusal, not a call. */
	ASSERT_DAT(dat_ep_post_send(&stranger, 3, iov, cookie, 0),
		   DAT_INVALID_HANDLE);
	ASSERT_DAT(dat_pz_free(NULL), DAT_INVALID_HANDLE);
	ASSERT_EQ(1, nr_ep_post);

	/* An open IA maps to itself; anything else is no IA. */
	OK(dats_get_ia_handle(ia, &mapped));
	ASSERT_TRUE(mapped == ia);
	ASSERT_DAT(dats_get_ia_handle(pz, &mapped), DAT_INVALID_HANDLE);
	ASSERT_DAT(dats_get_ia_handle(NULL, &mapped), DAT_INVALID_HANDLE);
	ASSERT_DAT(dats_get_ia_handle(ia, NULL), DAT_INVALID_PARAMETER);

	/* Extensions: to the handle's provider, with their arguments. */
	ASSERT_DAT(dat_extension_op(&ep, 7, 42), DAT_QUEUE_EMPTY);
	ASSERT_TRUE(ext_handle == &ep && ext_op == 7 && ext_arg == 42);
	/* By IA name (DAT_OPEN_EXTENSION_BASE): the name is the handle. */
	ASSERT_DAT(dat_extension_op(NULL, DAT_OPEN_EXTENSION_BASE, "t-disp",
				    43), DAT_QUEUE_EMPTY);
	ASSERT_TRUE(!strcmp(ext_handle, "t-disp") && ext_arg == 43 &&
		    ext_op == DAT_OPEN_EXTENSION_BASE);
	ASSERT_DAT(dat_extension_op(NULL, DAT_OPEN_EXTENSION_BASE, NULL),
		   DAT_INVALID_PARAMETER);
	ASSERT_DAT(dat_extension_op(NULL, 7, 44), DAT_INVALID_HANDLE);
	/* kdat's (here: no such handle): the hook, not implemented yet. */
	ASSERT_DAT(dat_extension_op(&stranger, 7, 45), DAT_NOT_IMPLEMENTED);
	ASSERT_EQ(43, ext_arg);

	OK(dat_ia_close(ia, DAT_CLOSE_ABRUPT_FLAG));
	ASSERT_DAT(dats_get_ia_handle(ia, &mapped), DAT_INVALID_HANDLE);
}

/* ---- providers loaded through dat.conf (libregfake.so) ------------------ */

static void *fake_sym(struct __test_metadata *_metadata, const char *name)
{
	void *dl = dlopen(fake_lib, RTLD_NOW | RTLD_NOLOAD);
	void *sym;

	ASSERT_NE(NULL, dl);
	sym = dlsym(dl, name);
	ASSERT_NE(NULL, sym);
	dlclose(dl);
	return sym;
}

#define FAKE(type, name) (*(type *)fake_sym(_metadata, name))

TEST_F(kdat, test_conf_provider)
{
	DAT_PROVIDER_INFO info = test_info("t-fake", 0, DAT_FALSE);
	DAT_HANDLE_TYPE type;
	DAT_CONTEXT ctx = { .as_64 = 77 };
	DAT_IA_HANDLE ia;
	DAT_PZ_HANDLE pz;
	char text[3 * PATH_MAX];

	snprintf(text, sizeof(text),
		 "t-fake u2.0 nonthreadsafe default %s fake.1.0 "
		 "\"inst \\\"q\\\" \\\\x\" \"plat\"\n", fake_lib);
	use_conf(_metadata, text);
	setup_test_provider();
	ASSERT_TRUE(!dlopen(fake_lib, RTLD_NOW | RTLD_NOLOAD));
	OK(open_ia("t-fake", 2, 0, DAT_FALSE, &ia));
	/* Loaded, initialised with the entry and its unquoted instance data. */
	ASSERT_EQ(1, FAKE(int, "fake_nr_init"));
	ASSERT_EQ(1, FAKE(int, "fake_nr_open"));
	OK(FAKE(DAT_RETURN, "fake_add_ret"));
	expect_info(_metadata, &FAKE(DAT_PROVIDER_INFO, "fake_info"), "t-fake",
		    2, 0, DAT_FALSE);
	ASSERT_TRUE(!strcmp(&FAKE(char, "fake_instance"), "inst \"q\" \\x"));
	/* Registered under the entry's name: a second add is refused. */
	ASSERT_DAT(dat_registry_add_provider(&test_provider, &info),
		   DAT_PROVIDER_ALREADY_REGISTERED);

	/* Its handles' calls reach it. */
	OK(dat_pz_create(ia, &pz));
	ASSERT_EQ(1, FAKE(int, "fake_nr_pz"));
	OK(dat_get_handle_type(pz, &type));
	ASSERT_EQ(DAT_HANDLE_TYPE_PZ, type);
	OK(dat_set_consumer_context(pz, ctx));
	ctx.as_64 = 0;
	OK(dat_get_consumer_context(pz, &ctx));
	ASSERT_EQ(77, ctx.as_64);
	ASSERT_DAT(dat_extension_op(pz, 9, 46), DAT_QUEUE_EMPTY);
	ASSERT_EQ(46, FAKE(int, "fake_ext_arg"));
	OK(dat_pz_free(pz));
	ASSERT_EQ(0, FAKE(int, "fake_nr_pz"));

	/* A second IA: no second dat_provider_init. */
	{
		DAT_IA_HANDLE ia2;

		OK(open_ia("t-fake", 2, 0, DAT_FALSE, &ia2));
		OK(dat_ia_close(ia2, DAT_CLOSE_ABRUPT_FLAG));
	}
	ASSERT_EQ(1, FAKE(int, "fake_nr_init"));
	OK(dat_ia_close(ia, DAT_CLOSE_ABRUPT_FLAG));
	ASSERT_EQ(2, FAKE(int, "fake_nr_close"));

	/*
	 * The provider removes itself: the next open initialises it again
	 * (DAT's dat_provider_init page).
	 */
	OK(dat_registry_remove_provider(&FAKE(DAT_PROVIDER, "fake_provider"),
					&info));
	OK(open_ia("t-fake", 2, 0, DAT_FALSE, &ia));
	ASSERT_EQ(2, FAKE(int, "fake_nr_init"));
	OK(dat_ia_close(ia, DAT_CLOSE_ABRUPT_FLAG));
}

/*
 * Entries that cannot serve: a library that does not load (the next line
 * for the same name serves), a provider that does not register, and a
 * line naming libdat itself (kdat's, opened directly: no
 * dat_provider_init, nothing registered).
 */
TEST_F(kdat, test_conf_provider_failures)
{
	DAT_PROVIDER_INFO kd = test_info("t-kdat", 0, DAT_FALSE);
	DAT_IA_HANDLE ia;
	char text[6 * PATH_MAX];

	snprintf(text, sizeof(text),
		 "t-fall u2.0 nonthreadsafe default %s/missing.so x.1.0 \"\" \"\"\n"
		 "t-fall u2.0 nonthreadsafe default %s x.1.0 \"fallback\" \"\"\n"
		 "t-gone u2.0 nonthreadsafe default %s/missing.so x.1.0 \"\" \"\"\n"
		 "t-noreg u2.1 nonthreadsafe default %s x.1.0 noregister \"\"\n"
		 "t-kdat u2.0 nonthreadsafe default %s kdat.2.0 \"x 1\" \"\"\n",
		 dir, fake_lib, dir, fake_lib, libdat_path);
	use_conf(_metadata, text);
	setup_test_provider();
	OK(open_ia("t-fall", 2, 0, DAT_FALSE, &ia));
	ASSERT_TRUE(!strcmp(&FAKE(char, "fake_instance"), "fallback"));
	OK(dat_ia_close(ia, DAT_CLOSE_ABRUPT_FLAG));
	ASSERT_DAT(open_ia("t-gone", 2, 0, DAT_FALSE, &ia),
		   DAT_PROVIDER_NOT_FOUND);
	ASSERT_DAT(open_ia("t-noreg", 2, 0, DAT_FALSE, &ia),
		   DAT_PROVIDER_NOT_FOUND);
	ASSERT_TRUE(!strcmp(&FAKE(char, "fake_instance"), "noregister"));
	ASSERT_EQ(2, FAKE(int, "fake_nr_init"));
	ASSERT_EQ(1, FAKE(int, "fake_nr_open"));
	/* kdat's line: no device here, so kdat's answer. */
	ASSERT_DAT(open_ia("t-kdat", 2, 0, DAT_FALSE, &ia),
		   DAT_PROVIDER_NOT_FOUND);
	OK(dat_registry_add_provider(&test_provider, &kd));
}

/*
 * At exit the registry calls dat_provider_fini of each provider it
 * initialised that has no IA open (and the provider's
 * dat_registry_remove_provider succeeds then); one with an IA open is
 * left alone. Run in a child each, FAKE_FINI_LOG saying what happened.
 */
static void fini_run(struct __test_metadata *_metadata, bool leave_open,
		     char *log, size_t size)
{
	char path[PATH_MAX + 32], text[3 * PATH_MAX];
	int status, fd;
	pid_t pid;
	ssize_t n;

	snprintf(path, sizeof(path), "%s/fini.%d", dir, (int)getpid());
	unlink(path);
	snprintf(text, sizeof(text),
		 "t-fini u2.0 nonthreadsafe default %s x.1.0 \"\" \"\"\n",
		 fake_lib);
	use_conf(_metadata, text);
	ASSERT_TRUE(setenv("FAKE_FINI_LOG", path, 1) == 0);
	pid = fork();
	ASSERT_TRUE(pid >= 0);
	if (!pid) {
		DAT_IA_HANDLE ia;

		if (open_ia("t-fini", 2, 0, DAT_FALSE, &ia) != DAT_SUCCESS)
			_exit(2);
		if (!leave_open && dat_ia_close(ia, DAT_CLOSE_ABRUPT_FLAG))
			_exit(3);
		exit(0);	/* atexit: the registry unloads */
	}
	ASSERT_TRUE(waitpid(pid, &status, 0) == pid);
	ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	log[0] = '\0';
	fd = open(path, O_RDONLY);
	if (fd >= 0) {
		n = read(fd, log, size - 1);
		log[n > 0 ? n : 0] = '\0';
		close(fd);
	}
}

TEST_F(kdat, test_fini_at_exit)
{
	char log[256];

	fini_run(_metadata, false, log, sizeof(log));
	ASSERT_FALSE(strcmp(log, "fini t-fini 0\n"))
		TH_LOG("fini log \"%s\", want \"fini t-fini 0\"", log);
	fini_run(_metadata, true, log, sizeof(log));
	ASSERT_FALSE(log[0])
		TH_LOG("fini with an IA open: log \"%s\"", log);
}

/* ---- OFA's provider ------------------------------------------------------ */

/*
 * OFA's libdaplofa through a dat.conf line, as /etc/dat.conf has them: it
 * loads, registers the entry's name, and its IA open on "lo" (no RDMA
 * device here) fails with DAT_INTERNAL_ERROR, the code OFA's own libdat2
 * gives for the same line. At exit the registry calls its
 * dat_provider_fini and unloads it: the case ends cleanly.
 */
TEST_F(kdat, test_ofa_provider)
{
	DAT_PROVIDER_INFO info = test_info("t-ofa", 0, DAT_FALSE);
	DAT_IA_HANDLE ia = DAT_HANDLE_NULL;
	void *dl;

	dl = dlopen("libdaplofa.so.2", RTLD_NOW | RTLD_NOLOAD);
	ASSERT_TRUE(!dl);
	dl = dlopen("libdaplofa.so.2", RTLD_LAZY | RTLD_LOCAL);
	if (!dl)
		SKIP(return, "no libdaplofa.so.2 (libdapl2)");
	dlclose(dl);
	if (!access("/sys/class/infiniband", F_OK)) {
		DIR *d = opendir("/sys/class/infiniband");
		struct dirent *e;
		bool any = false;

		while (d && (e = readdir(d)))
			any |= e->d_name[0] != '.';
		if (d)
			closedir(d);
		if (any)
			SKIP(return, "an RDMA device here: OFA's open may work");
	}
	use_conf(_metadata,
		 "t-ofa u2.0 nonthreadsafe default libdaplofa.so.2 dapl.2.0 "
		 "\"lo 0\" \"\"\n");
	setup_test_provider();
	ASSERT_EQ(DAT_INTERNAL_ERROR, open_ia("t-ofa", 2, 0, DAT_FALSE, &ia));
	ASSERT_TRUE(ia == DAT_HANDLE_NULL);
	/* Loaded, and registered under the entry's name. */
	dl = dlopen("libdaplofa.so.2", RTLD_NOW | RTLD_NOLOAD);
	ASSERT_NE(NULL, dl);
	dlclose(dl);
	ASSERT_DAT(dat_registry_add_provider(&test_provider, &info),
		   DAT_PROVIDER_ALREADY_REGISTERED);
	/* A failed open leaves it unused: no IA to close. */
	ASSERT_DAT(dat_ia_close(ia, DAT_CLOSE_ABRUPT_FLAG), DAT_INVALID_HANDLE);
	/*
	 * The end the comment above speaks of: exit(), whose handlers unload
	 * the provider (the harness ends a case's process with _exit()). A
	 * crash there fails the case.
	 */
	exit(KSFT_PASS);
}

/*
 * dat_strerror names every type and subtype of <dat2/dat_error.h>, in
 * any class, and refuses a type or subtype DAT does not define, storing
 * nothing.
 */
TEST_F(kdat, test_strerror)
{
	static const struct {
		DAT_RETURN v;
		const char *major, *minor;
	} ok[] = {
		{ DAT_SUCCESS, "DAT_SUCCESS", "" },
		{ DAT_CLASS_ERROR | DAT_INVALID_HANDLE | DAT_INVALID_HANDLE_EP,
		  "DAT_INVALID_HANDLE", "DAT_INVALID_HANDLE_EP" },
		{ DAT_CLASS_ERROR | DAT_INVALID_STATE |
		  DAT_INVALID_STATE_EP_DISCONNECTED,
		  "DAT_INVALID_STATE", "DAT_INVALID_STATE_EP_DISCONNECTED" },
		{ DAT_CLASS_WARNING | DAT_QUEUE_EMPTY, "DAT_QUEUE_EMPTY", "" },
		{ DAT_CLASS_ERROR | DAT_PORT_IN_USE, "DAT_PORT_IN_USE", "" },
		{ DAT_CLASS_ERROR | DAT_CONN_QUAL_UNAVAILABLE,
		  "DAT_CONN_QUAL_UNAVAILABLE", "" },
		{ DAT_CLASS_ERROR | DAT_COMM_NOT_SUPPORTED |
		  DAT_THREAD_SAFETY_NOT_FOUND,
		  "DAT_COMM_NOT_SUPPORTED", "DAT_THREAD_SAFETY_NOT_FOUND" },
		{ DAT_CLASS_ERROR | DAT_INSUFFICIENT_RESOURCES |
		  DAT_RESOURCE_MEMORY,
		  "DAT_INSUFFICIENT_RESOURCES", "DAT_RESOURCE_MEMORY" },
		{ DAT_CLASS_ERROR | DAT_NOT_IMPLEMENTED, "DAT_NOT_IMPLEMENTED",
		  "" },
	};
	static const DAT_RETURN bad[] = {
		DAT_CLASS_ERROR | 0x00180000,	/* after DAT_COMM_NOT_SUPPORTED */
		DAT_CLASS_ERROR | DAT_EXTENSION_BASE,
		DAT_CLASS_ERROR | DAT_ABORT | (DAT_THREAD_SAFETY_NOT_FOUND + 1),
		DAT_CLASS_ERROR | DAT_ABORT | 0xffff,
	};
	const char *major, *minor;
	size_t i;

	for (i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		major = minor = NULL;
		ASSERT_EQ(DAT_SUCCESS, dat_strerror(ok[i].v, &major, &minor));
		ASSERT_FALSE(!major || !minor || strcmp(major, ok[i].major) ||
			     strcmp(minor, ok[i].minor))
			TH_LOG("0x%x: \"%s\" \"%s\", want \"%s\" \"%s\"",
			       ok[i].v, major ? major : "(null)",
			       minor ? minor : "(null)", ok[i].major,
			       ok[i].minor);
	}
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		major = minor = "unchanged";
		ASSERT_EQ(DAT_INVALID_PARAMETER,
			  dat_strerror(bad[i], &major, &minor));
		ASSERT_TRUE(!strcmp(major, "unchanged") &&
			    !strcmp(minor, "unchanged"));
	}
	/* Either pointer may be NULL. */
	ASSERT_EQ(DAT_SUCCESS, dat_strerror(DAT_ABORT, NULL, &minor));
	ASSERT_EQ(DAT_SUCCESS, dat_strerror(DAT_ABORT, &major, NULL));
	ASSERT_TRUE(!strcmp(major, "DAT_ABORT"));
}

static pid_t main_pid;

/* At the program's exit: the scratch directory goes. */
static void rm_dir(void)
{
	char cmd[PATH_MAX + 16];

	if (getpid() != main_pid)
		return;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd)) {
		printf("# %s: not removed\n", dir);
		fflush(stdout);
		_exit(KSFT_FAIL);
	}
}

int main(int argc, char **argv)
{
	char self[PATH_MAX];
	Dl_info at;
	ssize_t n;

	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n <= 0)
		return KSFT_FAIL;
	self[n] = '\0';
	*strrchr(self, '/') = '\0';
	snprintf(fake_lib, sizeof(fake_lib), "%s/libregfake.so", self);
	if (access(fake_lib, R_OK)) {
		printf("# %s: %s\n", fake_lib, strerror(errno));
		return KSFT_FAIL;
	}
	if (!dladdr((void *)dat_ia_openv, &at) ||
	    !realpath(at.dli_fname, libdat_path))
		return KSFT_FAIL;
	snprintf(dir, sizeof(dir), "/tmp/kdat-registry.XXXXXX");
	if (!mkdtemp(dir))
		return KSFT_FAIL;
	main_pid = getpid();
	if (atexit(rm_dir)) {
		rm_dir();
		return KSFT_FAIL;
	}
	return kdat_harness_main(argc, argv);
}
