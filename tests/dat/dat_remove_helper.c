// SPDX-License-Identifier: GPL-2.0
/*
 * dat_remove_helper DEVICE:PORT IP: for the module-life suite. Builds two
 * connected Endpoints with receives posted and LMRs registered, prints
 * "ready", and waits for a line on stdin; meanwhile the suite removes the
 * RDMA device. Then it checks what DAT promises: both EPs DISCONNECTED
 * with a broken-connection event, the posted receives flushed, the IA's
 * async EVD told, later calls failing cleanly, and everything freeable.
 * Exits 0 when all holds, 1 otherwise (saying what failed).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <arpa/inet.h>
#include <netinet/in.h>

#include <dat2/udat.h>

#define TMO (10 * 1000 * 1000)

#define CHECK(cond)							\
	do {								\
		if (!(cond)) {						\
			printf("failed: %s (line %d)\n", #cond, __LINE__); \
			exit(1);					\
		}							\
	} while (0)

struct side {
	DAT_IA_HANDLE ia;
	DAT_EVD_HANDLE async_evd, dto_evd, conn_evd, cr_evd;
	DAT_PZ_HANDLE pz;
	DAT_EP_HANDLE ep;
	DAT_LMR_HANDLE lmr;
	DAT_LMR_TRIPLET iov;
};

static void side_open(struct side *s, char *name)
{
	DAT_EP_ATTR a = {
		.service_type = DAT_SERVICE_TYPE_RC,
		.max_recv_dtos = 4, .max_request_dtos = 4,
		.max_recv_iov = 1, .max_request_iov = 1,
		.max_rdma_read_in = 1, .max_rdma_read_out = 1,
	};
	DAT_REGION_DESCRIPTION r;
	DAT_RMR_CONTEXT rc;
	DAT_VLEN len;
	DAT_VADDR va;
	void *p;

	s->async_evd = DAT_HANDLE_NULL;
	CHECK(dat_ia_open(name, 8, &s->async_evd, &s->ia) == DAT_SUCCESS);
	CHECK(dat_pz_create(s->ia, &s->pz) == DAT_SUCCESS);
	CHECK(dat_evd_create(s->ia, 16, NULL, DAT_EVD_DTO_FLAG,
			     &s->dto_evd) == DAT_SUCCESS);
	CHECK(dat_evd_create(s->ia, 8, NULL, DAT_EVD_CONNECTION_FLAG,
			     &s->conn_evd) == DAT_SUCCESS);
	CHECK(dat_evd_create(s->ia, 8, NULL, DAT_EVD_CR_FLAG,
			     &s->cr_evd) == DAT_SUCCESS);
	CHECK(dat_ep_create(s->ia, s->pz, s->dto_evd, s->dto_evd, s->conn_evd,
			    &a, &s->ep) == DAT_SUCCESS);
	p = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(p != MAP_FAILED);
	r.for_va = p;
	CHECK(dat_lmr_create(s->ia, DAT_MEM_TYPE_VIRTUAL, r, 4096, s->pz,
			     DAT_MEM_PRIV_ALL_FLAG, DAT_VA_TYPE_VA, &s->lmr,
			     &s->iov.lmr_context, &rc, &len, &va) ==
	      DAT_SUCCESS);
	s->iov.virtual_address = (uintptr_t)p;
	s->iov.segment_length = 64;
}

static DAT_EVENT_NUMBER next_event(DAT_EVD_HANDLE evd)
{
	DAT_EVENT ev;
	DAT_COUNT nmore;

	CHECK(dat_evd_wait(evd, TMO, 1, &ev, &nmore) == DAT_SUCCESS);
	return ev.event_number;
}

static void check_after(struct side *s)
{
	DAT_DTO_COOKIE ck = { .as_64 = 9 };
	DAT_EVENT_NUMBER num;
	DAT_EP_STATE st;
	DAT_EVENT ev;
	DAT_COUNT nmore;

	CHECK(dat_ep_get_status(s->ep, &st, NULL, NULL) == DAT_SUCCESS);
	CHECK(st == DAT_EP_STATE_DISCONNECTED);
	/*
	 * Broken, or disconnected when the other EP (same device) went
	 * first and its CM told this one.
	 */
	num = next_event(s->conn_evd);
	CHECK(num == DAT_CONNECTION_EVENT_BROKEN ||
	      num == DAT_CONNECTION_EVENT_DISCONNECTED);
	/* The posted receive was flushed. */
	CHECK(dat_evd_wait(s->dto_evd, TMO, 1, &ev, &nmore) == DAT_SUCCESS);
	CHECK(ev.event_number == DAT_DTO_COMPLETION_EVENT);
	CHECK(ev.event_data.dto_completion_event_data.status ==
	      DAT_DTO_ERR_FLUSHED);
	CHECK(next_event(s->async_evd) == DAT_ASYNC_ERROR_IA_CATASTROPHIC);
	/* Later calls fail cleanly. */
	CHECK(dat_ep_post_send(s->ep, 1, &s->iov, ck, 0) != DAT_SUCCESS);
	CHECK(dat_ep_reset(s->ep) != DAT_SUCCESS);
	/* Everything can still be freed. */
	CHECK(dat_ep_free(s->ep) == DAT_SUCCESS);
	CHECK(dat_lmr_free(s->lmr) == DAT_SUCCESS);
	CHECK(dat_ia_close(s->ia, DAT_CLOSE_ABRUPT_FLAG) == DAT_SUCCESS);
}

int main(int argc, char **argv)
{
	struct sockaddr_in addr = { .sin_family = AF_INET };
	DAT_DTO_COOKIE ck = { .as_64 = 1 };
	struct side c, s;
	DAT_PSP_HANDLE psp;
	DAT_EVENT ev;
	DAT_COUNT nmore;
	char line[16];

	if (argc != 3 || inet_pton(AF_INET, argv[2], &addr.sin_addr) != 1) {
		fprintf(stderr, "usage: %s DEVICE:PORT IPV4\n", argv[0]);
		return 2;
	}
	side_open(&c, argv[1]);
	side_open(&s, argv[1]);
	CHECK(dat_psp_create(s.ia, 4321, s.cr_evd, DAT_PSP_CONSUMER_FLAG,
			     &psp) == DAT_SUCCESS);
	CHECK(dat_ep_post_recv(c.ep, 1, &c.iov, ck, 0) == DAT_SUCCESS);
	CHECK(dat_ep_post_recv(s.ep, 1, &s.iov, ck, 0) == DAT_SUCCESS);
	CHECK(dat_ep_connect(c.ep, (DAT_IA_ADDRESS_PTR)&addr, 4321, TMO, 0,
			     NULL, DAT_QOS_BEST_EFFORT,
			     DAT_CONNECT_DEFAULT_FLAG) == DAT_SUCCESS);
	CHECK(dat_evd_wait(s.cr_evd, TMO, 1, &ev, &nmore) == DAT_SUCCESS);
	CHECK(dat_cr_accept(ev.event_data.cr_arrival_event_data.cr_handle,
			    s.ep, 0, NULL) == DAT_SUCCESS);
	CHECK(next_event(c.conn_evd) == DAT_CONNECTION_EVENT_ESTABLISHED);
	CHECK(next_event(s.conn_evd) == DAT_CONNECTION_EVENT_ESTABLISHED);

	printf("ready\n");
	fflush(stdout);
	if (!fgets(line, sizeof(line), stdin))
		return 1;
	check_after(&c);
	check_after(&s);
	printf("ok\n");
	return 0;
}
