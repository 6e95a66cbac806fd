// SPDX-License-Identifier: GPL-2.0
/*
 * The same DAT calls, the same way, and what each returns: built twice,
 * against libdat (-ldat: tests/dat/retcodes) and against OFA's registry
 * (-ldat2: tests/dat/retcodes_ofa), run by tests/dat/retcodes.sh, which
 * compares the two. Each case runs in a child of its own, so that a
 * call one side answers with a crash is reported ("crash") and does not
 * end the run.
 *
 *   retcodes [IA_NAME]
 *
 * prints "CASE 0xCODE" per case (type, subtype and the class bit as
 * returned); without IA_NAME only the cases that need no IA.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/wait.h>

#include <dat2/udat.h>
#include <dat2/dat_registry.h>

#include "../lib/dat_pair.h"

static char *ia_name;

/*
 * What an IA case starts from (a side of tests/lib/dat_pair.h without
 * its EP): an IA, a PZ, a DTO and a connection EVD of 16 each, no CR
 * EVD. Each case returns the code under test; a fixture failure exits 3.
 */
#define FIXTURE(f)							\
	do {								\
		DAT_RETURN __r = side_ia(f, ia_name, 16);		\
		if (__r) {						\
			fprintf(stderr, "fixture: %#x\n", __r);		\
			exit(3);					\
		}							\
	} while (0)

/* A failed step of the fixture: said, and FIXTURE() exits. */
static void fixture_failed(const char *file, int line, const char *what)
{
	fprintf(stderr, "fixture: %s:%d: %s\n", file, line, what);
}

/*
 * The fixture and an EP on it (the provider's attributes), its DTO EVD
 * for both queues and, with @conn, the connection EVD.
 */
static DAT_RETURN fixture_ep(struct side *f, bool conn, DAT_EP_HANDLE *ep)
{
	FIXTURE(f);
	return dat_ep_create(f->ia, f->pz, f->dto_evd, f->dto_evd,
			     conn ? f->conn_evd : DAT_HANDLE_NULL, NULL, ep);
}

static DAT_RETURN set_context_null(void)
{
	return dat_set_consumer_context(DAT_HANDLE_NULL, (DAT_CONTEXT){ 0 });
}

static DAT_RETURN get_context_null(void)
{
	DAT_CONTEXT c;

	return dat_get_consumer_context(DAT_HANDLE_NULL, &c);
}

static DAT_RETURN clear_unwaitable_null(void)
{
	return dat_evd_clear_unwaitable(DAT_HANDLE_NULL);
}

static DAT_RETURN set_unwaitable_null(void)
{
	return dat_evd_set_unwaitable(DAT_HANDLE_NULL);
}

/* A NULL first handle, of each kind: the registry answers, naming it. */
static DAT_RETURN ia_query_null(void)
{
	DAT_IA_ATTR a;

	return dat_ia_query(DAT_HANDLE_NULL, NULL, DAT_IA_FIELD_ALL, &a, 0,
			    NULL);
}

static DAT_RETURN ia_close_null(void)
{
	return dat_ia_close(DAT_HANDLE_NULL, DAT_CLOSE_ABRUPT_FLAG);
}

static DAT_RETURN ep_post_send_null(void)
{
	DAT_LMR_TRIPLET iov = { 0 };

	return dat_ep_post_send(DAT_HANDLE_NULL, 1, &iov,
				(DAT_DTO_COOKIE){ 0 },
				DAT_COMPLETION_DEFAULT_FLAG);
}

static DAT_RETURN ep_post_rdma_write_null(void)
{
	DAT_RMR_TRIPLET rem = { 0 };
	DAT_LMR_TRIPLET iov = { 0 };

	return dat_ep_post_rdma_write(DAT_HANDLE_NULL, 1, &iov,
				      (DAT_DTO_COOKIE){ 0 }, &rem,
				      DAT_COMPLETION_DEFAULT_FLAG);
}

static DAT_RETURN evd_dequeue_null(void)
{
	DAT_EVENT ev;

	return dat_evd_dequeue(DAT_HANDLE_NULL, &ev);
}

static DAT_RETURN pz_free_null(void)
{
	return dat_pz_free(DAT_HANDLE_NULL);
}

static DAT_RETURN lmr_free_null(void)
{
	return dat_lmr_free(DAT_HANDLE_NULL);
}

static DAT_RETURN rmr_free_null(void)
{
	return dat_rmr_free(DAT_HANDLE_NULL);
}

static DAT_RETURN psp_free_null(void)
{
	DAT_PSP_HANDLE psp = DAT_HANDLE_NULL;

	return dat_psp_free(&psp);
}

static DAT_RETURN psp_create_any_null(void)
{
	DAT_PSP_HANDLE psp;
	DAT_CONN_QUAL q;

	return dat_psp_create_any(DAT_HANDLE_NULL, &q, DAT_HANDLE_NULL,
				  DAT_PSP_CONSUMER_FLAG, &psp);
}

static DAT_RETURN cr_reject_null(void)
{
	return dat_cr_reject(DAT_HANDLE_NULL, 0, NULL);
}

static DAT_RETURN cno_free_null(void)
{
	return dat_cno_free(DAT_HANDLE_NULL);
}

static DAT_RETURN srq_free_null(void)
{
	return dat_srq_free(DAT_HANDLE_NULL);
}

static DAT_RETURN remove_unregistered(void)
{
	static DAT_PROVIDER p = { .device_name = "retcodes" };
	DAT_PROVIDER_INFO info = {
		.ia_name = "retcodes-nowhere",
		.dapl_version_major = DAT_VERSION_MAJOR,
		.dapl_version_minor = DAT_VERSION_MINOR,
		.is_thread_safe = DAT_FALSE,
	};

	return dat_registry_remove_provider(&p, &info);
}

static DAT_RETURN open_unknown(void)
{
	DAT_EVD_HANDLE async = DAT_HANDLE_NULL;
	DAT_IA_HANDLE ia;

	return dat_ia_open("retcodes-nowhere", 8, &async, &ia);
}

static DAT_RETURN ep_create_no_connect_evd(void)
{
	struct side f;
	DAT_EP_HANDLE ep;

	return fixture_ep(&f, false, &ep);
}

static DAT_RETURN connect_no_connect_evd(void)
{
	struct sockaddr_in to = { .sin_family = AF_INET,
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	struct side f;
	DAT_EP_HANDLE ep;
	DAT_RETURN r;

	r = fixture_ep(&f, false, &ep);
	if (r)
		return r;
	return dat_ep_connect(ep, (DAT_IA_ADDRESS_PTR)&to, 7479, 1000000, 0,
			      NULL, DAT_QOS_BEST_EFFORT,
			      DAT_CONNECT_DEFAULT_FLAG);
}

static DAT_RETURN query_no_connect_evd(void)
{
	struct side f;
	DAT_EP_PARAM param;
	DAT_EP_HANDLE ep;
	DAT_RETURN r;

	r = fixture_ep(&f, false, &ep);
	if (!r)
		r = dat_ep_query(ep, DAT_EP_FIELD_ALL, &param);
	if (r)
		return r;
	/* Success only when the EP says it has none. */
	return param.connect_evd_handle == DAT_HANDLE_NULL ? DAT_SUCCESS :
	       DAT_CLASS_ERROR | DAT_INTERNAL_ERROR;
}

static DAT_RETURN rsp_no_connect_evd(void)
{
	DAT_RSP_HANDLE rsp;
	DAT_EVD_HANDLE cr;
	struct side f;
	DAT_EP_HANDLE ep;
	DAT_RETURN r;

	r = fixture_ep(&f, false, &ep);
	if (!r)
		r = dat_evd_create(f.ia, 16, DAT_HANDLE_NULL, DAT_EVD_CR_FLAG,
				   &cr);
	if (r)
		return r;
	return dat_rsp_create(f.ia, 7478, ep, cr, &rsp);
}

static DAT_RETURN ep_create_dto_as_connect_evd(void)
{
	struct side f;
	DAT_EP_HANDLE ep;

	FIXTURE(&f);
	return dat_ep_create(f.ia, f.pz, f.dto_evd, f.dto_evd, f.dto_evd, NULL,
			     &ep);
}

static DAT_RETURN ep_create_conn_as_recv_evd(void)
{
	struct side f;
	DAT_EP_HANDLE ep;

	FIXTURE(&f);
	return dat_ep_create(f.ia, f.pz, f.conn_evd, f.dto_evd, f.conn_evd, NULL,
			     &ep);
}

static DAT_RETURN wait_unwaitable(void)
{
	DAT_EVENT ev;
	struct side f;
	DAT_COUNT n;
	DAT_RETURN r;

	FIXTURE(&f);
	r = dat_evd_set_unwaitable(f.dto_evd);
	if (r)
		return r;
	return dat_evd_wait(f.dto_evd, 1000, 1, &ev, &n);
}

static DAT_RETURN dequeue_empty(void)
{
	struct side f;
	DAT_EVENT ev;

	FIXTURE(&f);
	return dat_evd_dequeue(f.dto_evd, &ev);
}

static DAT_RETURN wait_timeout(void)
{
	struct side f;
	DAT_EVENT ev;
	DAT_COUNT n;

	FIXTURE(&f);
	return dat_evd_wait(f.dto_evd, 1000, 1, &ev, &n);
}

static DAT_RETURN pz_free_in_use(void)
{
	struct side f;
	DAT_EP_HANDLE ep;
	DAT_RETURN r;

	r = fixture_ep(&f, true, &ep);
	if (r)
		return r;
	return dat_pz_free(f.pz);
}

static DAT_RETURN evd_free_in_use(void)
{
	struct side f;
	DAT_EP_HANDLE ep;
	DAT_RETURN r;

	r = fixture_ep(&f, true, &ep);
	if (r)
		return r;
	return dat_evd_free(f.conn_evd);
}

static DAT_RETURN ep_free_twice(void)
{
	struct side f;
	DAT_EP_HANDLE ep;
	DAT_RETURN r;

	r = fixture_ep(&f, true, &ep);
	if (!r)
		r = dat_ep_free(ep);
	if (r)
		return r;
	return dat_ep_free(ep);
}

static DAT_RETURN ia_close_graceful_busy(void)
{
	struct side f;

	FIXTURE(&f);
	return dat_ia_close(f.ia, DAT_CLOSE_GRACEFUL_FLAG);
}

static DAT_RETURN evd_create_bad_flags(void)
{
	struct side f;
	DAT_EVD_HANDLE evd;

	FIXTURE(&f);
	return dat_evd_create(f.ia, 16, DAT_HANDLE_NULL, 0, &evd);
}

static DAT_RETURN lmr_create_null_region(void)
{
	DAT_REGION_DESCRIPTION region = { .for_va = NULL };
	DAT_LMR_CONTEXT lc;
	DAT_RMR_CONTEXT rc;
	DAT_VLEN len;
	DAT_VADDR va;
	DAT_LMR_HANDLE lmr;
	struct side f;

	FIXTURE(&f);
	return dat_lmr_create(f.ia, DAT_MEM_TYPE_VIRTUAL, region, 0, f.pz,
			      DAT_MEM_PRIV_ALL_FLAG, DAT_VA_TYPE_VA, &lmr, &lc,
			      &rc, &len, &va);
}

static const struct {
	const char *name;
	DAT_RETURN (*call)(void);
	int needs_ia;
} cases[] = {
	{ "dat_set_consumer_context(NULL)", set_context_null, 0 },
	{ "dat_get_consumer_context(NULL)", get_context_null, 0 },
	{ "dat_evd_clear_unwaitable(NULL)", clear_unwaitable_null, 0 },
	{ "dat_evd_set_unwaitable(NULL)", set_unwaitable_null, 0 },
	{ "dat_ia_query(NULL)", ia_query_null, 0 },
	{ "dat_ia_close(NULL)", ia_close_null, 0 },
	{ "dat_ep_post_send(NULL)", ep_post_send_null, 0 },
	{ "dat_ep_post_rdma_write(NULL)", ep_post_rdma_write_null, 0 },
	{ "dat_evd_dequeue(NULL)", evd_dequeue_null, 0 },
	{ "dat_pz_free(NULL)", pz_free_null, 0 },
	{ "dat_lmr_free(NULL)", lmr_free_null, 0 },
	{ "dat_rmr_free(NULL)", rmr_free_null, 0 },
	{ "dat_psp_free(NULL)", psp_free_null, 0 },
	{ "dat_psp_create_any(NULL)", psp_create_any_null, 0 },
	{ "dat_cr_reject(NULL)", cr_reject_null, 0 },
	{ "dat_cno_free(NULL)", cno_free_null, 0 },
	{ "dat_srq_free(NULL)", srq_free_null, 0 },
	{ "dat_registry_remove_provider(not registered)",
	  remove_unregistered, 0 },
	{ "dat_ia_open(unknown name)", open_unknown, 0 },
	{ "dat_ep_create(connect EVD NULL)", ep_create_no_connect_evd, 1 },
	{ "dat_ep_connect(EP without connect EVD)", connect_no_connect_evd,
	  1 },
	{ "dat_ep_query(EP without connect EVD)", query_no_connect_evd, 1 },
	{ "dat_rsp_create(EP without connect EVD)", rsp_no_connect_evd, 1 },
	{ "dat_ep_create(DTO EVD as connect EVD)",
	  ep_create_dto_as_connect_evd, 1 },
	{ "dat_ep_create(connection EVD as receive EVD)",
	  ep_create_conn_as_recv_evd, 1 },
	{ "dat_evd_wait(unwaitable EVD)", wait_unwaitable, 1 },
	{ "dat_evd_dequeue(empty)", dequeue_empty, 1 },
	{ "dat_evd_wait(nothing comes, 1 ms)", wait_timeout, 1 },
	{ "dat_pz_free(PZ of an EP)", pz_free_in_use, 1 },
	{ "dat_evd_free(connection EVD of an EP)", evd_free_in_use, 1 },
	{ "dat_ep_free(freed EP)", ep_free_twice, 1 },
	{ "dat_ia_close(graceful, objects left)", ia_close_graceful_busy, 1 },
	{ "dat_evd_create(no stream flags)", evd_create_bad_flags, 1 },
	{ "dat_lmr_create(NULL region, length 0)", lmr_create_null_region, 1 },
};

int main(int argc, char **argv)
{
	unsigned int i;
	int fds[2];

	ia_name = argc > 1 ? argv[1] : NULL;
	pair_conf.conn_qlen = 16;
	pair_conf.cr_qlen = 0;
	pair_conf.fail = fixture_failed;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		DAT_RETURN r = 0;
		int status;
		pid_t pid;

		if (cases[i].needs_ia && !ia_name)
			continue;
		if (pipe(fds))
			return 2;
		fflush(stdout);
		pid = fork();
		if (pid < 0)
			return 2;
		if (!pid) {
			close(fds[0]);
			r = cases[i].call();
			if (write(fds[1], &r, sizeof(r)) != sizeof(r))
				_exit(2);
			_exit(0);
		}
		close(fds[1]);
		if (read(fds[0], &r, sizeof(r)) != sizeof(r))
			r = 0;
		close(fds[0]);
		if (waitpid(pid, &status, 0) != pid)
			return 2;
		if (WIFSIGNALED(status))
			printf("%s crash (signal %d)\n", cases[i].name,
			       WTERMSIG(status));
		else if (WEXITSTATUS(status) == 3)
			printf("%s fixture failed\n", cases[i].name);
		else if (WEXITSTATUS(status))
			printf("%s exit %d\n", cases[i].name,
			       WEXITSTATUS(status));
		else
			printf("%s %#010x\n", cases[i].name, (unsigned int)r);
	}
	return 0;
}
