// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * libdat as the DAT registry, in the place of OFA's libdat2: the static
 * registry (dat.conf), the dynamic one (dat_registry_add_provider and
 * _remove_provider), the other providers it loads and unloads, opening
 * and closing IAs through them, and which provider a handle belongs to.
 *
 * dat.conf: $DAT_OVERRIDE if set (a file that cannot be read then means
 * no entries; ignored in set-user-ID and set-group-ID programs, as it
 * names libraries to load), else /etc/dat.conf. One provider per line,
 * eight fields separated by blanks:
 *
 *   IA-name API thread-safety default library provider-version
 *     instance-data platform-params
 *   ofa-v2-ib0 u2.0 nonthreadsafe default libdaplofa.so.2 dapl.2.0 "ib0 0" ""
 *
 * API u<major>.<minor> (k<major>.<minor>, kDAPL's, is skipped),
 * threadsafe or nonthreadsafe, default or nondefault (skipped), provider
 * version <id>.<major>.<minor>. A field may be quoted: "..." holds blanks,
 * a backslash takes the next character as it is. A '#' where a field
 * would start comments out the rest of the line. A line that does not
 * parse is skipped (KDAT_DEBUG=1 says why on stderr). Lines with the same
 * IA name, API version and thread safety are one entry: the first whose
 * library loads serves it.
 *
 * An IA name is opened (dat_ia_openv) by the provider registered for it
 * (same name, major version and thread safety, minor version at least the
 * one asked; an exact minor first), else through its dat.conf entry: a
 * library that is a libdat means kdat, opened directly; another is loaded
 * (dlopen), its dat_provider_init(info, instance data) called, and the
 * provider it registers opens the IA. A name in neither is kdat's (see
 * kd_parse_name()). Loaded providers stay loaded until the process exits
 * (or libdat is unloaded): then each gets dat_provider_fini() and
 * dlclose(), unless an IA of it is still open.
 *
 * Handles: a DAT handle points at an object that starts with its
 * provider's DAT_PROVIDER *. kdat's are found in kdat's tables without
 * being read (kd_check()); another is read only once a provider other
 * than kdat has registered, and only names a provider when that pointer
 * is one registered here (kd_foreign()). IA handles are the providers'
 * own: dats_get_ia_handle() maps an open IA to itself.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dat_internal.h"

#define KD_CONF_DEFAULT "/etc/dat.conf"

/* The registry's errors are as OFA's registry gives them (KD_ERR). */
#define KD_CONF_FIELDS 8

/* A library a dat.conf line names; kd_load_lock. */
struct kd_lib {
	struct kd_lib *next;
	char *path;			/* as dat.conf names it */
	void *dl;			/* loaded; NULL: not (yet) */
	DAT_PROVIDER_INIT_FUNC init;
	DAT_PROVIDER_FINI_FUNC fini;
	bool kdat;			/* a libdat: IAs open directly */
};

/* A dat.conf line; built once, then only @inited changes (kd_load_lock). */
struct kd_conf {
	struct kd_conf *next;
	DAT_PROVIDER_INFO info;
	struct kd_lib *lib;
	char *instance;			/* instance data */
	bool inited;			/* dat_provider_init() called */
};

/* A registration (dat_registry_add_provider); kd_reg_lock. */
struct kd_reg {
	struct kd_reg *next;
	DAT_PROVIDER_INFO info;
	const DAT_PROVIDER *provider;
	unsigned int users;		/* IAs open or opening through it */
};

/* An IA opened through a registration; kd_reg_lock. */
struct kd_open_ia {
	struct kd_open_ia *next;
	DAT_IA_HANDLE ia;
	struct kd_reg *reg;
	bool closing;
};

/*
 * Lock order: kd_load_lock, then kd_reg_lock. kd_load_lock is held while
 * a provider's dat_provider_init/fini runs (they call back into the
 * registry, which takes kd_reg_lock); neither is held while a provider
 * opens or closes an IA.
 */
static pthread_mutex_t kd_load_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t kd_reg_lock = PTHREAD_MUTEX_INITIALIZER;

static pthread_once_t kd_conf_once = PTHREAD_ONCE_INIT;
static struct kd_conf *kd_confs;	/* in file order */
static struct kd_lib *kd_libs;
static struct kd_reg *kd_regs;		/* in registration order */
static struct kd_open_ia *kd_ias;
static bool kd_unload_armed;

/*
 * The providers other than kdat ever registered: what a handle that is
 * not kdat's may name. Only grows (a slot is written, then the count
 * published), so kd_foreign() reads it without a lock.
 */
#define KD_MAX_FOREIGN 256
static const DAT_PROVIDER *kd_foreign_tab[KD_MAX_FOREIGN];
static unsigned int kd_nr_foreign;

static void kd_reg_debug(const char *fmt, ...)
	__attribute__((format(printf, 1, 2)));

static void kd_reg_debug(const char *fmt, ...)
{
	va_list ap;

	if (!kd_debug())
		return;
	va_start(ap, fmt);
	fputs("libdat: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}

/* ---- dat.conf -------------------------------------------------------- */

/*
 * The next field of a line from *@s into @out (room for the rest of the
 * line). 1: a field; 0: none left (end of line or a comment); -1: a quote
 * that does not close.
 */
static int kd_conf_field(const char **s, char *out)
{
	const char *p = *s;
	size_t n = 0;

	while (*p == ' ' || *p == '\t')
		p++;
	if (!*p || *p == '\n' || *p == '#')
		return 0;
	if (*p == '"') {
		for (p++; *p && *p != '"' && *p != '\n'; p++) {
			if (*p == '\\' && p[1] && p[1] != '\n')
				p++;
			out[n++] = *p;
		}
		if (*p != '"')
			return -1;
		p++;
	} else {
		while (*p && *p != ' ' && *p != '\t' && *p != '\n')
			out[n++] = *p++;
	}
	out[n] = '\0';
	*s = p;
	return 1;
}

/* "<digits>": true, the value in *@v. */
static bool kd_conf_number(const char *s, size_t len, DAT_UINT32 *v)
{
	unsigned long n = 0;
	size_t i;

	if (!len || len > 9)
		return false;
	for (i = 0; i < len; i++) {
		if (s[i] < '0' || s[i] > '9')
			return false;
		n = n * 10 + (unsigned long)(s[i] - '0');
	}
	*v = (DAT_UINT32)n;
	return true;
}

/* "<major>.<minor>": true, both set. */
static bool kd_conf_version(const char *s, DAT_UINT32 *major,
			    DAT_UINT32 *minor)
{
	const char *dot = strchr(s, '.');

	return dot && kd_conf_number(s, (size_t)(dot - s), major) &&
	       kd_conf_number(dot + 1, strlen(dot + 1), minor);
}

static struct kd_lib *kd_conf_lib(const char *path)
{
	struct kd_lib *l;

	for (l = kd_libs; l; l = l->next)
		if (!strcmp(l->path, path))
			return l;
	l = calloc(1, sizeof(*l));
	if (!l)
		return NULL;
	l->path = strdup(path);
	if (!l->path) {
		free(l);
		return NULL;
	}
	l->next = kd_libs;
	kd_libs = l;
	return l;
}

/*
 * One line of dat.conf: NULL and *@why when it names no uDAPL default
 * provider (*@why NULL: a blank or comment line).
 */
static struct kd_conf *kd_conf_line(const char *line, const char **why)
{
	size_t len = strlen(line) + 1;
	char *buf, *f[KD_CONF_FIELDS];
	struct kd_conf *c = NULL;
	DAT_UINT32 major, minor;
	const char *s = line;
	int n = 0, r;

	*why = "out of memory";
	buf = malloc(len * (KD_CONF_FIELDS + 1));	/* and one too many */
	if (!buf)
		return NULL;
	*why = NULL;
	while ((r = kd_conf_field(&s, buf + n * len)) == 1) {
		if (n == KD_CONF_FIELDS) {
			*why = "more than 8 fields";
			goto out;
		}
		f[n] = buf + n * len;
		n++;
	}
	if (r < 0) {
		*why = "a quote that does not close";
		goto out;
	}
	if (!n)
		goto out;	/* blank, or a comment */
	if (n != KD_CONF_FIELDS) {
		*why = "fewer than 8 fields";
		goto out;
	}
	if (!f[0][0] || strlen(f[0]) >= DAT_NAME_MAX_LENGTH) {
		*why = "IA name empty or too long";
		goto out;
	}
	if ((f[1][0] != 'u' && f[1][0] != 'k') ||
	    !kd_conf_version(f[1] + 1, &major, &minor)) {
		*why = "API version not u<major>.<minor>";
		goto out;
	}
	if (strcmp(f[2], "threadsafe") && strcmp(f[2], "nonthreadsafe")) {
		*why = "neither threadsafe nor nonthreadsafe";
		goto out;
	}
	if (strcmp(f[3], "default") && strcmp(f[3], "nondefault")) {
		*why = "neither default nor nondefault";
		goto out;
	}
	if (!f[4][0]) {
		*why = "no library";
		goto out;
	}
	{
		const char *dot = strchr(f[5], '.');
		DAT_UINT32 pmaj, pmin;

		if (!dot || dot == f[5] ||
		    !kd_conf_version(dot + 1, &pmaj, &pmin)) {
			*why = "provider version not <id>.<major>.<minor>";
			goto out;
		}
	}
	if (f[1][0] == 'k') {
		*why = "a kDAPL entry";
		goto out;
	}
	if (!strcmp(f[3], "nondefault")) {
		*why = "nondefault";
		goto out;
	}
	*why = "out of memory";
	c = calloc(1, sizeof(*c));
	if (!c)
		goto out;
	strcpy(c->info.ia_name, f[0]);
	c->info.dapl_version_major = major;
	c->info.dapl_version_minor = minor;
	c->info.is_thread_safe = strcmp(f[2], "threadsafe") ? DAT_FALSE :
							     DAT_TRUE;
	c->instance = strdup(f[6]);
	c->lib = kd_conf_lib(f[4]);
	if (!c->instance || !c->lib) {
		free(c->instance);
		free(c);
		c = NULL;
		goto out;
	}
	*why = NULL;
out:
	free(buf);
	return c;
}

/* pthread_once: the static registry, read once. */
static void kd_conf_load(void)
{
	/* Not for set-user-ID programs: it names libraries to load. */
	const char *path = secure_getenv("DAT_OVERRIDE");
	struct kd_conf **tail = &kd_confs, *c;
	char *line = NULL;
	size_t cap = 0;
	unsigned int nr = 0;
	FILE *f;

	if (!path)
		path = KD_CONF_DEFAULT;
	f = fopen(path, "re");
	if (!f) {
		kd_reg_debug("%s: %m: no static registry", path);
		return;
	}
	while (getline(&line, &cap, f) > 0) {
		const char *why;

		nr++;
		c = kd_conf_line(line, &why);
		if (c) {
			*tail = c;
			tail = &c->next;
		} else if (why) {
			kd_reg_debug("%s:%u: skipped: %s", path, nr, why);
		}
	}
	free(line);
	fclose(f);
}

/* ---- matching ------------------------------------------------------- */

static bool kd_info_match(const DAT_PROVIDER_INFO *have,
			  const DAT_PROVIDER_INFO *want, bool exact)
{
	return !strcmp(have->ia_name, want->ia_name) &&
	       have->dapl_version_major == want->dapl_version_major &&
	       !have->is_thread_safe == !want->is_thread_safe &&
	       (exact ? have->dapl_version_minor == want->dapl_version_minor :
			have->dapl_version_minor >= want->dapl_version_minor);
}

/* The registration for @want, exact minor first; kd_reg_lock held. */
static struct kd_reg *kd_reg_find_locked(const DAT_PROVIDER_INFO *want)
{
	struct kd_reg *r;
	int exact;

	for (exact = 1; exact >= 0; exact--)
		for (r = kd_regs; r; r = r->next)
			if (kd_info_match(&r->info, want, exact))
				return r;
	return NULL;
}

/* As above, with a user taken: the registration stays until kd_reg_put. */
static struct kd_reg *kd_reg_get(const DAT_PROVIDER_INFO *want)
{
	struct kd_reg *r;

	pthread_mutex_lock(&kd_reg_lock);
	r = kd_reg_find_locked(want);
	if (r)
		r->users++;
	pthread_mutex_unlock(&kd_reg_lock);
	return r;
}

static void kd_reg_put(struct kd_reg *r)
{
	pthread_mutex_lock(&kd_reg_lock);
	r->users--;
	pthread_mutex_unlock(&kd_reg_lock);
}

static bool kd_reg_exists(const DAT_PROVIDER_INFO *info, bool exact)
{
	struct kd_reg *r;
	bool found = false;

	pthread_mutex_lock(&kd_reg_lock);
	for (r = kd_regs; r && !found; r = r->next)
		found = kd_info_match(&r->info, info, exact);
	pthread_mutex_unlock(&kd_reg_lock);
	return found;
}

/* ---- loading providers ---------------------------------------------- */

static void kd_registry_unload(void);

/* Load @l; false when it cannot serve. kd_load_lock held. */
static bool kd_lib_load(struct kd_lib *l)
{
	Dl_info init_at, kdat_at;
	void *dl, *kdat;

	if (l->dl || l->kdat)
		return true;
	dl = dlopen(l->path, RTLD_NOW | RTLD_GLOBAL);
	if (!dl) {
		kd_reg_debug("%s", dlerror());
		return false;
	}
	l->init = (DAT_PROVIDER_INIT_FUNC)dlsym(dl, DAT_PROVIDER_INIT_FUNC_STR);
	l->fini = (DAT_PROVIDER_FINI_FUNC)dlsym(dl, DAT_PROVIDER_FINI_FUNC_STR);
	/* A libdat (this one or a copy) is kdat: its IAs open directly. */
	kdat = dlsym(dl, "kdat_dat_handle");
	if (l->init && kdat && dladdr((void *)l->init, &init_at) &&
	    dladdr(kdat, &kdat_at) && init_at.dli_fbase == kdat_at.dli_fbase) {
		l->kdat = true;
		dlclose(dl);
		return true;
	}
	if (!l->init) {
		kd_reg_debug("%s: no %s", l->path, DAT_PROVIDER_INIT_FUNC_STR);
		dlclose(dl);
		return false;
	}
	l->dl = dl;
	if (!kd_unload_armed) {
		/*
		 * At exit, before any library's destructors: a provider's
		 * own destructor (OFA's tears its provider list down) would
		 * otherwise run before its dat_provider_fini. When libdat
		 * itself is dlclose'd, this runs then.
		 */
		kd_unload_armed = !atexit(kd_registry_unload);
	}
	return true;
}

enum kd_conf_says {
	KD_CONF_NONE,		/* no entry for the name: kdat's */
	KD_CONF_KDAT,		/* an entry whose library is a libdat */
	KD_CONF_PROVIDER,	/* an entry whose provider registered */
	KD_CONF_FAILED,		/* an entry, but nothing could serve it */
};

/*
 * The dat.conf entry for @want: load its library and have the provider
 * register (dat_provider_init), unless it already is.
 */
static enum kd_conf_says kd_conf_provide(const DAT_PROVIDER_INFO *want,
					 const char **instance)
{
	enum kd_conf_says says = KD_CONF_NONE;
	struct kd_conf *c;
	int exact;

	pthread_once(&kd_conf_once, kd_conf_load);
	pthread_mutex_lock(&kd_load_lock);
	for (exact = 1; exact >= 0; exact--) {
		for (c = kd_confs; c; c = c->next) {
			if (!kd_info_match(&c->info, want, exact))
				continue;
			says = KD_CONF_FAILED;
			if (!kd_lib_load(c->lib))
				continue;
			if (c->lib->kdat) {
				says = KD_CONF_KDAT;
				*instance = c->instance;
				goto out;
			}
			/*
			 * Once per entry, and again after the provider
			 * removed itself (DAT's dat_provider_init page).
			 */
			if (!kd_reg_exists(&c->info, true)) {
				c->inited = true;
				c->lib->init(&c->info, c->instance);
			}
			if (kd_reg_exists(want, false)) {
				says = KD_CONF_PROVIDER;
				goto out;
			}
		}
	}
out:
	pthread_mutex_unlock(&kd_load_lock);
	return says;
}

/*
 * At exit or when libdat is unloaded: dat_provider_fini for each entry
 * initialised, then dlclose, for the providers with no IA open (one with
 * an IA open keeps running: unloading its code under its threads would
 * crash the process on its way out).
 */
static void kd_registry_unload(void)
{
	struct kd_conf *c;
	struct kd_lib *l;
	struct kd_reg *r, **rp;

	pthread_mutex_lock(&kd_load_lock);
	for (c = kd_confs; c; c = c->next) {
		bool busy = false;

		if (!c->inited)
			continue;
		pthread_mutex_lock(&kd_reg_lock);
		for (r = kd_regs; r; r = r->next)
			if (kd_info_match(&r->info, &c->info, true) &&
			    r->users)
				busy = true;
		pthread_mutex_unlock(&kd_reg_lock);
		if (busy)
			continue;
		if (c->lib->fini)
			c->lib->fini(&c->info);
		c->inited = false;
		/* Whatever it left registered goes with its code. */
		pthread_mutex_lock(&kd_reg_lock);
		for (rp = &kd_regs; (r = *rp);) {
			if (kd_info_match(&r->info, &c->info, true)) {
				*rp = r->next;
				free(r);
			} else {
				rp = &r->next;
			}
		}
		pthread_mutex_unlock(&kd_reg_lock);
	}
	for (l = kd_libs; l; l = l->next) {
		bool busy = false;

		if (!l->dl)
			continue;
		for (c = kd_confs; c; c = c->next)
			if (c->lib == l && c->inited)
				busy = true;
		if (busy)
			continue;
		dlclose(l->dl);
		l->dl = NULL;
	}
	pthread_mutex_unlock(&kd_load_lock);
}

/* ---- the dynamic registry -------------------------------------------- */

/* A provider of kdat's own (kdat's DAT_PROVIDER tables)? */
static bool kd_provider_is_kdat(const DAT_PROVIDER *p)
{
	return p == &kd_default_provider ||
	       p->ia_open_func == kd_default_provider.ia_open_func;
}

/* kd_reg_lock held. */
static bool kd_foreign_add_locked(const DAT_PROVIDER *p)
{
	unsigned int i, nr = kd_nr_foreign;

	if (kd_provider_is_kdat(p))
		return true;
	for (i = 0; i < nr; i++)
		if (kd_foreign_tab[i] == p)
			return true;
	if (nr == KD_MAX_FOREIGN)
		return false;
	kd_foreign_tab[nr] = p;
	__atomic_store_n(&kd_nr_foreign, nr + 1, __ATOMIC_RELEASE);
	return true;
}

const DAT_PROVIDER *kd_foreign(const void *h)
{
	unsigned int i, nr = __atomic_load_n(&kd_nr_foreign, __ATOMIC_ACQUIRE);
	const DAT_PROVIDER *p;

	if (!nr || !h || kd_check(h, -1))
		return NULL;
	p = *(const DAT_PROVIDER * const *)h;
	for (i = 0; i < nr; i++)
		if (kd_foreign_tab[i] == p)
			return p;
	return NULL;
}

LIBDAT_API DAT_RETURN dat_registry_add_provider(const DAT_PROVIDER *provider,
						const DAT_PROVIDER_INFO *info)
{
	struct kd_reg *r, **tail;
	DAT_RETURN ret = DAT_SUCCESS;

	if (!provider || !provider->ia_open_func)
		return KD_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG1);
	if (!info || !memchr(info->ia_name, '\0', sizeof(info->ia_name)) ||
	    !info->ia_name[0])
		return KD_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
	r = calloc(1, sizeof(*r));
	if (!r)
		return KD_ERR(DAT_INSUFFICIENT_RESOURCES, DAT_RESOURCE_MEMORY);
	r->info = *info;
	r->provider = provider;
	pthread_mutex_lock(&kd_reg_lock);
	for (tail = &kd_regs; *tail; tail = &(*tail)->next)
		if (kd_info_match(&(*tail)->info, info, true))
			ret = KD_ERR(DAT_PROVIDER_ALREADY_REGISTERED, 0);
	if (ret == DAT_SUCCESS && !kd_foreign_add_locked(provider))
		ret = KD_ERR(DAT_INSUFFICIENT_RESOURCES, 0);
	if (ret == DAT_SUCCESS)
		*tail = r;
	pthread_mutex_unlock(&kd_reg_lock);
	if (ret != DAT_SUCCESS)
		free(r);
	return ret;
}

LIBDAT_API DAT_RETURN
dat_registry_remove_provider(const DAT_PROVIDER *provider,
			     const DAT_PROVIDER_INFO *info)
{
	DAT_RETURN ret = KD_NOT_REGISTERED;	/* as OFA's libdat2 */
	struct kd_reg *r, **rp;

	if (!provider)
		return KD_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG1);
	if (!info)
		return KD_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
	pthread_mutex_lock(&kd_reg_lock);
	for (rp = &kd_regs; (r = *rp); rp = &r->next) {
		if (r->provider != provider ||
		    !kd_info_match(&r->info, info, true))
			continue;
		if (r->users) {
			ret = KD_ERR(DAT_PROVIDER_IN_USE, 0);
		} else {
			*rp = r->next;
			free(r);
			ret = DAT_SUCCESS;
		}
		break;
	}
	pthread_mutex_unlock(&kd_reg_lock);
	return ret;
}

/*
 * kdat's IAs first (kd_own_ias()), then the dat.conf entries, each
 * provider (name, version, thread safety) once. DAT_INVALID_PARAMETER
 * with *@returned the number there is for @max 0, as OFA's registry.
 */
LIBDAT_API DAT_RETURN dat_registry_list_providers(DAT_COUNT max,
						  DAT_COUNT *returned,
						  DAT_PROVIDER_INFO *(list[]))
{
	const DAT_PROVIDER_INFO **all;
	DAT_PROVIDER_INFO *own;
	DAT_COUNT nr_own, nr = 0, i, j;
	DAT_RETURN ret = DAT_SUCCESS;
	struct kd_conf *c;

	if (!returned)
		return KD_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
	if (max < 0)
		return KD_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG1);
	if (max && !list)
		return KD_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG3);
	pthread_once(&kd_conf_once, kd_conf_load);
	nr_own = kd_own_ias(&own);
	for (c = kd_confs; c; c = c->next)
		nr++;
	all = calloc((size_t)(nr + nr_own) + 1, sizeof(*all));
	if (!all) {
		free(own);
		return KD_ERR(DAT_INSUFFICIENT_RESOURCES, DAT_RESOURCE_MEMORY);
	}
	nr = 0;
	for (i = 0; i < nr_own; i++)
		all[nr++] = &own[i];
	for (c = kd_confs; c; c = c->next) {
		for (j = 0; j < nr; j++)
			if (kd_info_match(all[j], &c->info, true))
				break;
		if (j == nr)
			all[nr++] = &c->info;
	}
	if (!max) {
		ret = KD_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG1);
	} else {
		for (i = 0; i < nr && i < max; i++)
			if (!list[i])
				ret = KD_ERR(DAT_INVALID_PARAMETER,
					     DAT_INVALID_ARG3);
		for (i = 0; ret == DAT_SUCCESS && i < nr && i < max; i++)
			*list[i] = *all[i];
		if (ret == DAT_SUCCESS)
			nr = i;
	}
	*returned = nr;
	free(all);
	free(own);
	return ret;
}

/* ---- IAs -------------------------------------------------------------- */

/* The IA @ia, open through @r; kd_reg_lock held. */
static struct kd_open_ia *kd_ia_find_locked(DAT_IA_HANDLE ia)
{
	struct kd_open_ia *o;

	for (o = kd_ias; o; o = o->next)
		if (o->ia == ia)
			return o;
	return NULL;
}

LIBDAT_API DAT_RETURN dat_ia_openv(const DAT_NAME_PTR name,
				   DAT_COUNT async_evd_qlen,
				   DAT_EVD_HANDLE *async_evd_handle,
				   DAT_IA_HANDLE *ia_handle,
				   DAT_UINT32 major, DAT_UINT32 minor,
				   DAT_BOOLEAN thread_safety)
{
	DAT_PROVIDER_INFO want = {
		.dapl_version_major = major,
		.dapl_version_minor = minor,
		.is_thread_safe = thread_safety,
	};
	const char *instance = NULL;
	char dev[KDAT_NAME_MAX];
	struct kd_open_ia *o;
	struct kd_reg *r;
	DAT_RETURN ret;
	uint32_t port;

	if (!name || strnlen(name, DAT_NAME_MAX_LENGTH) == DAT_NAME_MAX_LENGTH)
		return KD_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG1);
	if (!ia_handle)
		return KD_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_IA);
	strcpy(want.ia_name, name);
	r = kd_reg_get(&want);
	if (!r) {
		switch (kd_conf_provide(&want, &instance)) {
		case KD_CONF_NONE:
		case KD_CONF_KDAT:
			/* A kdat line's instance data may name the port. */
			kd_instance_port(instance, dev, &port);
			return kd_status(kd_ia_open(&kd_default_provider, name,
						    dev, port, async_evd_qlen,
						    async_evd_handle, ia_handle,
						    major, minor,
						    thread_safety));
		default:
			break;
		}
		r = kd_reg_get(&want);
		if (!r)
			return KD_NOT_REGISTERED;
	}
	o = calloc(1, sizeof(*o));
	if (!o) {
		kd_reg_put(r);
		return KD_ERR(DAT_INSUFFICIENT_RESOURCES, DAT_RESOURCE_MEMORY);
	}
	ret = r->provider->ia_open_func(name, async_evd_qlen,
					async_evd_handle, ia_handle);
	if (ret != DAT_SUCCESS) {
		free(o);
		kd_reg_put(r);
		return ret;
	}
	o->ia = *ia_handle;
	o->reg = r;
	pthread_mutex_lock(&kd_reg_lock);
	o->next = kd_ias;
	kd_ias = o;
	pthread_mutex_unlock(&kd_reg_lock);
	return DAT_SUCCESS;
}

LIBDAT_API DAT_RETURN dat_ia_close(DAT_IA_HANDLE ia_handle,
				   DAT_CLOSE_FLAGS flags)
{
	struct kd_open_ia *o, **op;
	const DAT_PROVIDER *p;
	DAT_RETURN ret;

	pthread_mutex_lock(&kd_reg_lock);
	o = kd_ia_find_locked(ia_handle);
	if (o && o->closing)
		o = NULL;	/* another thread closes it: not ours */
	else if (o)
		o->closing = true;
	pthread_mutex_unlock(&kd_reg_lock);
	if (!o)
		return KD_ANSWER(kd_ia_close(ia_handle, flags), ia_handle, IA);
	p = o->reg->provider;
	ret = p->ia_close_func ? p->ia_close_func(ia_handle, flags) :
				 KD_ERR(DAT_NOT_IMPLEMENTED, 0);
	pthread_mutex_lock(&kd_reg_lock);
	o->closing = false;
	if (ret == DAT_SUCCESS) {
		for (op = &kd_ias; *op != o; op = &(*op)->next)
			;
		*op = o->next;
		o->reg->users--;
	}
	pthread_mutex_unlock(&kd_reg_lock);
	if (ret == DAT_SUCCESS)
		free(o);
	return ret;
}

/*
 * IA handles are the providers' own: an open IA maps to itself (OFA's
 * providers call this to fill the ia_handle of their query answers).
 */
LIBDAT_API DAT_RETURN dats_get_ia_handle(DAT_IA_HANDLE handle,
					 DAT_IA_HANDLE *ia_handle)
{
	bool open;

	if (!handle)
		return KD_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_IA);
	if (!ia_handle)
		return KD_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
	pthread_mutex_lock(&kd_reg_lock);
	open = kd_ia_find_locked(handle);
	pthread_mutex_unlock(&kd_reg_lock);
	if (!open && !kd_check(handle, DAT_HANDLE_TYPE_IA))
		return KD_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_IA);
	*ia_handle = handle;
	return DAT_SUCCESS;
}

/* ---- extensions ------------------------------------------------------- */

/* An extension op that opens by IA name (DAT_OPEN_EXTENSION_BASE). */
static DAT_RETURN kd_extension_open(const char *name, DAT_EXTENDED_OP op,
				    va_list args)
{
	DAT_PROVIDER_INFO want = {
		.dapl_version_major = DAT_VERSION_MAJOR,
		.dapl_version_minor = DAT_VERSION_MINOR,
		.is_thread_safe = DAT_THREADSAFE,
	};
	DAT_HANDLE_EXTENDEDOP_FUNC ext;
	const char *instance = NULL;
	struct kd_reg *r;
	DAT_RETURN ret;

	if (strnlen(name, DAT_NAME_MAX_LENGTH) == DAT_NAME_MAX_LENGTH)
		return KD_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG3);
	strcpy(want.ia_name, name);
	r = kd_reg_get(&want);
	if (!r) {
		switch (kd_conf_provide(&want, &instance)) {
		case KD_CONF_NONE:
		case KD_CONF_KDAT:
			return kd_status(kd_extension_op((DAT_HANDLE)name, op,
							 args));
		default:
			break;
		}
		r = kd_reg_get(&want);
		if (!r)
			return KD_NOT_REGISTERED;
	}
	ext = r->provider->handle_extendedop_func;
	ret = ext ? ext((DAT_HANDLE)name, op, args) :
		    KD_ERR(DAT_NOT_IMPLEMENTED, 0);
	kd_reg_put(r);
	return ret;
}

/*
 * The DAT extensions: to the provider of @handle (kdat's: kd_extension_op),
 * or for an op in DAT_OPEN_EXTENSION_BASE's range, of the IA name that
 * is the first argument after @op.
 */
LIBDAT_API DAT_RETURN dat_extension_op(DAT_HANDLE handle, DAT_EXTENDED_OP op,
				       ...)
{
	const DAT_PROVIDER *p = kd_foreign(handle);
	DAT_RETURN ret;
	va_list args;

	va_start(args, op);
	if (op & DAT_OPEN_EXTENSION_BASE) {
		const char *name = va_arg(args, const char *);

		ret = name ? kd_extension_open(name, op, args) :
			     KD_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG3);
	} else if (!handle) {
		ret = KD_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE1);
	} else if (p) {
		ret = p->handle_extendedop_func ?
		      p->handle_extendedop_func(handle, op, args) :
		      KD_ERR(DAT_NOT_IMPLEMENTED, 0);
	} else {
		ret = kd_status(kd_extension_op(handle, op, args));
	}
	va_end(args);
	return ret;
}
