// SPDX-License-Identifier: GPL-2.0
/*
 * A DAT provider for tests/dat/registry_unit.c, loaded by libdat's
 * registry from a dat.conf line: what a provider library is to a DAT
 * registry (dat_provider_init registers a DAT_PROVIDER, dat_provider_fini
 * removes it), with objects that start with their DAT_PROVIDER * as the
 * DAT ABI says. It records what it was given and asked, for the test to
 * read (dlsym); it moves no data.
 *
 * Instance data "noregister": dat_provider_init registers nothing.
 * FAKE_FINI_LOG=FILE: dat_provider_fini appends "fini NAME RET" there
 * (RET: what dat_registry_remove_provider answered).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <dat2/udat.h>
#include <dat2/dat_registry.h>

struct fake_obj {
	DAT_PROVIDER *provider;		/* first, as the DAT ABI requires */
	DAT_HANDLE_TYPE type;
	DAT_CONTEXT context;
};

/* What the test reads. */
char fake_instance[256];
DAT_PROVIDER_INFO fake_info;
int fake_nr_init, fake_nr_open, fake_nr_close, fake_nr_pz;
DAT_RETURN fake_add_ret;
DAT_EXTENDED_OP fake_ext_op;
DAT_HANDLE fake_ext_handle;
int fake_ext_arg;
DAT_PROVIDER fake_provider;

static DAT_RETURN fake_new(DAT_HANDLE_TYPE type, void **h)
{
	struct fake_obj *o = calloc(1, sizeof(*o));

	if (!o)
		return DAT_CLASS_ERROR | DAT_INSUFFICIENT_RESOURCES;
	o->provider = &fake_provider;
	o->type = type;
	*h = o;
	return DAT_SUCCESS;
}

static DAT_RETURN fake_ia_open(const DAT_NAME_PTR name, DAT_COUNT qlen,
			       DAT_EVD_HANDLE *async_evd, DAT_IA_HANDLE *ia)
{
	(void)name;
	(void)qlen;
	(void)async_evd;
	fake_nr_open++;
	return fake_new(DAT_HANDLE_TYPE_IA, ia);
}

static DAT_RETURN fake_ia_close(DAT_IA_HANDLE ia, DAT_CLOSE_FLAGS flags)
{
	(void)flags;
	fake_nr_close++;
	free(ia);
	return DAT_SUCCESS;
}

static DAT_RETURN fake_pz_create(DAT_IA_HANDLE ia, DAT_PZ_HANDLE *pz)
{
	(void)ia;
	fake_nr_pz++;
	return fake_new(DAT_HANDLE_TYPE_PZ, pz);
}

static DAT_RETURN fake_pz_free(DAT_PZ_HANDLE pz)
{
	fake_nr_pz--;
	free(pz);
	return DAT_SUCCESS;
}

static DAT_RETURN fake_get_handle_type(DAT_HANDLE h, DAT_HANDLE_TYPE *type)
{
	*type = ((struct fake_obj *)h)->type;
	return DAT_SUCCESS;
}

static DAT_RETURN fake_set_context(DAT_HANDLE h, DAT_CONTEXT c)
{
	((struct fake_obj *)h)->context = c;
	return DAT_SUCCESS;
}

static DAT_RETURN fake_get_context(DAT_HANDLE h, DAT_CONTEXT *c)
{
	*c = ((struct fake_obj *)h)->context;
	return DAT_SUCCESS;
}

/*
 * Records the op and its first int argument; answers DAT_QUEUE_EMPTY,
 * bare, as OFA's provider returns it.
 */
static DAT_RETURN fake_ext(DAT_HANDLE h, DAT_EXTENDED_OP op, va_list args)
{
	fake_ext_handle = h;
	fake_ext_op = op;
	fake_ext_arg = va_arg(args, int);
	return DAT_QUEUE_EMPTY;
}

void dat_provider_init(const DAT_PROVIDER_INFO *info,
		       const char *instance_data)
{
	fake_nr_init++;
	fake_info = *info;
	snprintf(fake_instance, sizeof(fake_instance), "%s", instance_data);
	if (!strcmp(instance_data, "noregister"))
		return;
	fake_provider.device_name = "fake";
	fake_provider.ia_open_func = fake_ia_open;
	fake_provider.ia_close_func = fake_ia_close;
	fake_provider.pz_create_func = fake_pz_create;
	fake_provider.pz_free_func = fake_pz_free;
	fake_provider.get_handle_type_func = fake_get_handle_type;
	fake_provider.set_consumer_context_func = fake_set_context;
	fake_provider.get_consumer_context_func = fake_get_context;
	fake_provider.handle_extendedop_func = fake_ext;
	fake_add_ret = dat_registry_add_provider(&fake_provider, info);
}

void dat_provider_fini(const DAT_PROVIDER_INFO *info)
{
	const char *log = getenv("FAKE_FINI_LOG");
	DAT_RETURN ret;
	FILE *f;

	ret = dat_registry_remove_provider(&fake_provider, info);
	if (log) {
		f = fopen(log, "a");
		if (f) {
			fprintf(f, "fini %s %#x\n", info->ia_name,
				(unsigned int)ret);
			fclose(f);
		}
	}
}
