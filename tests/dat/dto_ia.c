// SPDX-License-Identifier: GPL-2.0
/*
 * The IA, the provider and the EP's attributes (dat_dto_test): queries,
 * the provider-specific attributes, the EP's defaults and dat_ep_modify,
 * the registry's list, what closing an IA takes, freeing what is in use.
 */
#include "dto.h"

/*
 * IAs of one process share objects: an EP of one IA may take its
 * connection and DTO events from another IA's EVDs (same device), as
 * dapltest's limit test does. Closing the IA whose EVDs are used is
 * refused, graceful or abrupt; once they are free, an abrupt close
 * destroys that IA's objects and nothing of the other IA.
 */
TEST_F(kdat, test_ia_close_scope)
{
	static const char *const types[] = { "ia", "pz", "lmr", "evd", "ep",
					     "psp" };
	/* What closing a takes away: see side_open and below. */
	static const int gone[] = { 1, 1, 1, 4, 1, 1 };
	struct side a, b, c;
	struct buf ba, bb, bc;
	DAT_EP_HANDLE ep;
	DAT_EP_ATTR at = ep_attr();
	DAT_LMR_TRIPLET t;
	int before[6], i;

	OK(side_open(&a, NULL));
	OK(side_open(&b, NULL));
	OK(buf_reg(&a, &ba, 4096, DAT_MEM_PRIV_ALL_FLAG));
	OK(dat_psp_create(a.ia, new_qual(), a.cr_evd, DAT_PSP_CONSUMER_FLAG,
			  &a.psp));
	OK(dat_ep_create(b.ia, b.pz, a.dto_evd, a.dto_evd, a.conn_evd, &at,
			 &ep));
	/* A PZ of another IA is not one of this IA's. */
	ASSERT_DAT(dat_ep_create(b.ia, a.pz, b.dto_evd, b.dto_evd, b.conn_evd,
				 &at, &ep), DAT_INVALID_HANDLE);
	ASSERT_DAT(dat_ia_close(a.ia, DAT_CLOSE_GRACEFUL_FLAG),
		   DAT_INVALID_STATE);
	ASSERT_DAT(dat_ia_close(a.ia, DAT_CLOSE_ABRUPT_FLAG),
		   DAT_INVALID_STATE);
	/* Refused means untouched. */
	state_is(_metadata, a.ep, DAT_EP_STATE_UNCONNECTED);
	state_is(_metadata, ep, DAT_EP_STATE_UNCONNECTED);
	OK(dat_ep_free(ep));

	for (i = 0; i < 6; i++)
		before[i] = kdat_objects(types[i]);
	OK(dat_ia_close(a.ia, DAT_CLOSE_ABRUPT_FLAG));
	for (i = 0; i < 6; i++) {
		int now = kdat_objects(types[i]);

		ASSERT_FALSE(before[i] >= 0 && now != before[i] - gone[i])
			TH_LOG("%s: %d live, want %d", types[i], now,
			       before[i] - gone[i]);
	}
	ASSERT_DAT(dat_pz_free(a.pz), DAT_INVALID_HANDLE);
	ASSERT_DAT(dat_lmr_free(ba.lmr), DAT_INVALID_HANDLE);
	ASSERT_DAT(dat_ep_free(a.ep), DAT_INVALID_HANDLE);
	ASSERT_DAT(dat_ia_close(a.ia, DAT_CLOSE_ABRUPT_FLAG),
		   DAT_INVALID_HANDLE);

	/* b is whole: it connects and moves data. */
	OK(side_open(&c, NULL));
	OK(buf_reg(&b, &bb, 4096, DAT_MEM_PRIV_ALL_FLAG));
	OK(buf_reg(&c, &bc, 4096, DAT_MEM_PRIV_ALL_FLAG));
	OK(connect_pair(&c, &b, false));
	t = seg(&bb, 0, 64);
	OK(dat_ep_post_recv(b.ep, 1, &t, cookie(7), DAT_COMPLETION_DEFAULT_FLAG));
	memset(bc.p, 0x5a, 64);
	t = seg(&bc, 0, 64);
	OK(dat_ep_post_send(c.ep, 1, &t, cookie(8), 0));
	expect_dto(_metadata, c.dto_evd, 8, DAT_DTO_SUCCESS, 64);
	expect_dto(_metadata, b.dto_evd, 7, DAT_DTO_SUCCESS, 64);
	ASSERT_TRUE(bb.p[0] == 0x5a && bb.p[63] == 0x5a);
	OK(sides_close(&c, &b));
	if (before[0] < 0)
		TH_LOG("no debugfs (not root?): object counts not checked");
}

/* Freeing what others use: DAT_INVALID_STATE, and nothing is lost. */
TEST_F(kdat, test_free_in_use)
{
	struct side s;

	OK(side_open(&s, NULL));
	ASSERT_DAT(dat_evd_free(s.dto_evd), DAT_INVALID_STATE);
	ASSERT_DAT(dat_pz_free(s.pz), DAT_INVALID_STATE);
	OK(dat_ep_free(s.ep));
	OK(dat_evd_free(s.dto_evd));
	OK(dat_evd_free(s.conn_evd));
	OK(dat_evd_free(s.cr_evd));
	OK(dat_pz_free(s.pz));
	ASSERT_DAT(dat_pz_free(s.pz), DAT_INVALID_HANDLE);
	OK(dat_ia_close(s.ia, DAT_CLOSE_GRACEFUL_FLAG));
}

/*
 * dat_ia_query: the IA's address is its port's, the limits are set. An IA
 * opened with DAT_EVD_ASYNC_EXISTS (another open has the async EVD) has
 * none in scope: DAT_EVD_OUT_OF_SCOPE (udat.h).
 */
TEST_F(kdat, test_ia_query)
{
	DAT_EVD_HANDLE aevd, exists = DAT_EVD_ASYNC_EXISTS;
	DAT_PROVIDER_ATTR pa;
	DAT_IA_HANDLE ia2;
	DAT_IA_ATTR ia;
	struct side s;
	const struct sockaddr_in *sin;

	OK(side_open(&s, NULL));
	OK(dat_ia_query(s.ia, &aevd, DAT_IA_FIELD_ALL, &ia,
			DAT_PROVIDER_FIELD_ALL, &pa));
	ASSERT_TRUE(aevd == s.async_evd);
	sin = (const struct sockaddr_in *)ia.ia_address_ptr;
	ASSERT_TRUE(sin && sin->sin_family == AF_INET);
	ASSERT_TRUE(sin->sin_addr.s_addr == pair_conf.peer.sin_addr.s_addr);
	ASSERT_TRUE(ia.max_eps > 0 && ia.max_dto_per_ep > 0);
	ASSERT_TRUE(ia.max_evd_qlen > 0 && ia.max_iov_segments_per_dto > 0);
	ASSERT_TRUE(ia.max_lmr_block_size > 0 && ia.max_message_size > 0);
	ASSERT_TRUE(!strcmp(pa.provider_name, pair_conf.ia_name));
	ASSERT_TRUE(pa.srq_supported == DAT_TRUE);

	OK(dat_ia_open(pair_conf.ia_name, 8, &exists, &ia2));
	ASSERT_TRUE(exists == DAT_EVD_ASYNC_EXISTS);	/* none created */
	OK(dat_ia_query(ia2, &aevd, 0, NULL, 0, NULL));
	ASSERT_TRUE(aevd == DAT_EVD_OUT_OF_SCOPE);
	OK(dat_ia_close(ia2, DAT_CLOSE_GRACEFUL_FLAG));
	OK(dat_ia_close(s.ia, DAT_CLOSE_ABRUPT_FLAG));
}

/* The value of provider-specific attribute @name, or NULL. */
static const char *spec_attr(const DAT_PROVIDER_ATTR *pa, const char *name)
{
	DAT_COUNT i;

	for (i = 0; i < pa->num_provider_specific_attr; i++)
		if (!strcmp(pa->provider_specific_attr[i].name, name))
			return pa->provider_specific_attr[i].value;
	return NULL;
}

/* The first line of a sysfs file of the test port's device, in @buf. */
static void sysfs_line(struct __test_metadata *_metadata, const char *rel,
		       char *buf, size_t len)
{
	char path[300];
	FILE *f;

	snprintf(path, sizeof(path), "/sys/class/infiniband/%s/%s",
		 getenv("KDAT_TEST_DEV"), rel);
	f = fopen(path, "r");
	ASSERT_FALSE(!f)
		TH_LOG("%s: %s", path, strerror(errno));
	if (!fgets(buf, len, f))
		buf[0] = 0;
	fclose(f);
	buf[strcspn(buf, "\n")] = 0;
}

/*
 * The provider-specific attributes OFA's IB providers publish, with the
 * values of the IA's port, each compared with what sysfs and rdma-core
 * say: node GUID and GID 0 in OFA's hex groups (sysfs prints both the
 * same way), port state and number, the active MTU (ibv_devinfo).
 * Asked alone (no IA attributes), they are there too.
 */
TEST_F(kdat, test_provider_attrs)
{
	const char *dev = getenv("KDAT_TEST_DEV");
	const char *port = getenv("KDAT_TEST_PORT") ?: "1";
	char path[128], want[128], cmd[200], line[256];
	DAT_PROVIDER_ATTR pa;
	DAT_EVD_HANDLE all;
	DAT_EP_HANDLE ep;
	const char *v;
	struct side s;
	int i, j;
	FILE *f;

	OK(side_open(&s, NULL));
	OK(dat_ia_query(s.ia, NULL, 0, NULL, DAT_PROVIDER_FIELD_ALL, &pa));
	ASSERT_TRUE(pa.num_provider_specific_attr >= 9);

#define ATTR_IS(name, want)						\
	do {								\
		const char *__v = spec_attr(&pa, name);			\
									\
		ASSERT_FALSE(!__v || strcmp(__v, want))			\
			TH_LOG("%s = %s, want %s", name,		\
			       __v ?: "(none)", want);			\
	} while (0)
	ATTR_IS("DAT_IB_PROVIDER_NAME", "kdat");
	ATTR_IS("DAT_IB_DEVICE_NAME", dev);
	ATTR_IS("DAT_IB_CONNECTIVITY_MODE", "DIRECT");
	ATTR_IS("DAT_IB_RDMA_READ", "TRUE");
	ATTR_IS("DAT_IB_PORT_NUMBER", port);
	sysfs_line(_metadata, "node_guid", want, sizeof(want));
	ATTR_IS("DAT_IB_NODE_GUID", want);
	snprintf(path, sizeof(path), "ports/%s/gids/0", port);
	sysfs_line(_metadata, path, want, sizeof(want));
	ATTR_IS("DAT_IB_GID", want);
	snprintf(path, sizeof(path), "ports/%s/state", port);
	/* "4: ACTIVE" */
	sysfs_line(_metadata, path, want, sizeof(want));
	ATTR_IS("DAT_IB_PORT_STATUS", strchr(want, ' ') ?
		strchr(want, ' ') + 1 : want);

	v = spec_attr(&pa, "DAT_IB_TRANSPORT_MTU");
	ASSERT_NE(NULL, v);
	ASSERT_TRUE(!strcmp(v, "256") || !strcmp(v, "512") ||
		    !strcmp(v, "1024") || !strcmp(v, "2048") ||
		    !strcmp(v, "4096"));
	snprintf(cmd, sizeof(cmd), "ibv_devinfo -v -d %s -i %s 2>/dev/null",
		 dev, port);
	want[0] = 0;
	f = popen(cmd, "r");
	while (f && fgets(line, sizeof(line), f)) {
		char *p = strstr(line, "active_mtu:");

		if (p)
			snprintf(want, sizeof(want), "%lu",
				 strtoul(p + strlen("active_mtu:"), NULL, 10));
	}
	if (f)
		pclose(f);
	TH_LOG("DAT_IB_TRANSPORT_MTU %s, ibv_devinfo active_mtu %s", v,
	       want[0] ? want : "(no ibv_devinfo: not compared)");
	if (want[0])
		ATTR_IS("DAT_IB_TRANSPORT_MTU", want);
#undef ATTR_IS

	/* Any event streams merge: one EVD for all of an EP's. */
	for (i = 0; i < 6; i++)
		for (j = 0; j < 6; j++) {
			ASSERT_EQ(DAT_TRUE,
				  pa.evd_stream_merging_supported[i][j])
				TH_LOG("evd_stream_merging_supported[%d][%d]"
				       " is not DAT_TRUE", i, j);
		}
	OK(dat_evd_create(s.ia, 64, DAT_HANDLE_NULL,
			  DAT_EVD_SOFTWARE_FLAG | DAT_EVD_CR_FLAG |
			  DAT_EVD_DTO_FLAG | DAT_EVD_CONNECTION_FLAG |
			  DAT_EVD_RMR_BIND_FLAG, &all));
	OK(dat_ep_create(s.ia, s.pz, all, all, all, NULL, &ep));
	OK(dat_ep_free(ep));
	OK(dat_evd_free(all));
	OK(dat_ia_close(s.ia, DAT_CLOSE_ABRUPT_FLAG));
}

static DAT_COUNT cap4(DAT_COUNT want, DAT_COUNT limit)
{
	return limit > 0 && limit < want ? limit : want;
}

/*
 * An EP created with no attributes gets OFA's defaults (16 DTOs, 4 IOV
 * segments, 4 RDMA reads each way), no more than the IA's limits; two of
 * them move data through every segment: send/receive, RDMA write, read.
 */
TEST_F(kdat, test_ep_default_attr)
{
	struct side c, s;
	struct buf cb, sb, back;
	DAT_IA_ATTR ia;
	DAT_EP_PARAM p;
	const DAT_EP_ATTR *a = &p.ep_attr;
	DAT_LMR_TRIPLET t[4], r[4];
	DAT_RMR_TRIPLET rem;
	DAT_COUNT n, i, total;

	OK(side_open(&c, NULL));
	OK(side_open(&s, NULL));
	OK(dat_ep_free(c.ep));
	OK(dat_ep_free(s.ep));
	OK(dat_ep_create(c.ia, c.pz, c.dto_evd, c.dto_evd, c.conn_evd, NULL,
			 &c.ep));
	OK(dat_ep_create(s.ia, s.pz, s.dto_evd, s.dto_evd, s.conn_evd, NULL,
			 &s.ep));
	OK(dat_ia_query(c.ia, NULL, DAT_IA_FIELD_ALL, &ia, 0, NULL));
	OK(dat_ep_query(c.ep, DAT_EP_FIELD_ALL, &p));
	TH_LOG("defaults: dtos %d/%d iov %d/%d rdma read %d/%d; IA: dtos %d"
	       " iov %d (rdma write %d) rdma read %d/%d", a->max_recv_dtos,
	       a->max_request_dtos, a->max_recv_iov, a->max_request_iov,
	       a->max_rdma_read_in, a->max_rdma_read_out, ia.max_dto_per_ep,
	       ia.max_iov_segments_per_dto,
	       ia.max_iov_segments_per_rdma_write, ia.max_rdma_read_per_ep_in,
	       ia.max_rdma_read_per_ep_out);
	ASSERT_EQ(cap4(16, ia.max_dto_per_ep), a->max_recv_dtos);
	ASSERT_EQ(cap4(16, ia.max_dto_per_ep), a->max_request_dtos);
	ASSERT_EQ(cap4(4, ia.max_iov_segments_per_rdma_write),
		  a->max_request_iov);
	/* The IA gives the smaller of its send and receive segments. */
	if (ia.max_iov_segments_per_dto >= 4) {
		ASSERT_EQ(4, a->max_recv_iov);
	} else {
		ASSERT_TRUE(a->max_recv_iov >= ia.max_iov_segments_per_dto &&
			    a->max_recv_iov <= 4);
	}
	ASSERT_EQ(cap4(4, ia.max_rdma_read_per_ep_in), a->max_rdma_read_in);
	ASSERT_EQ(cap4(4, ia.max_rdma_read_per_ep_out), a->max_rdma_read_out);
	/* A read's IOV: at most what the IA takes per read (1 on iWARP). */
	ASSERT_EQ(a->max_request_iov < ia.max_iov_segments_per_rdma_read ?
		  a->max_request_iov : ia.max_iov_segments_per_rdma_read,
		  a->max_rdma_read_iov);
	ASSERT_EQ(a->max_request_iov, a->max_rdma_write_iov);
	ASSERT_TRUE(a->service_type == DAT_SERVICE_TYPE_RC);

	OK(buf_reg(&c, &cb, 8192, DAT_MEM_PRIV_ALL_FLAG));
	OK(buf_reg(&c, &back, 8192, DAT_MEM_PRIV_ALL_FLAG));
	OK(buf_reg(&s, &sb, 8192, DAT_MEM_PRIV_ALL_FLAG));
	OK(connect_pair(&c, &s, false));
	for (i = 0; i < 8192; i++)
		cb.p[i] = (unsigned char)(i * 7 + 3);
	memset(sb.p, 0, sb.len);

	/* A send of n segments into a receive of as many. */
	n = a->max_request_iov < a->max_recv_iov ? a->max_request_iov :
						   a->max_recv_iov;
	for (i = 0, total = 0; i < n; i++) {
		t[i] = seg(&cb, 1000 * i + i, 100 + i);
		r[i] = seg(&sb, 2000 * i, 100 + i);
		total += 100 + i;
	}
	OK(dat_ep_post_recv(s.ep, n, r, cookie(1), 0));
	OK(dat_ep_post_send(c.ep, n, t, cookie(2), 0));
	expect_dto(_metadata, c.dto_evd, 2, DAT_DTO_SUCCESS, total);
	expect_dto(_metadata, s.dto_evd, 1, DAT_DTO_SUCCESS, total);
	for (i = 0; i < n; i++) {
		ASSERT_TRUE(!memcmp(sb.p + 2000 * i, cb.p + 1000 * i + i,
				    100 + i));
	}

	/* An RDMA write of max_rdma_write_iov segments, then read back. */
	n = a->max_rdma_write_iov;
	for (i = 0, total = 0; i < n; i++) {
		t[i] = seg(&cb, 1500 * i, 200);
		total += 200;
	}
	rem.rmr_context = sb.rctx;
	rem.virtual_address = (uintptr_t)sb.p + 4096;
	rem.segment_length = total;
	OK(dat_ep_post_rdma_write(c.ep, n, t, cookie(3), &rem, 0));
	expect_dto(_metadata, c.dto_evd, 3, DAT_DTO_SUCCESS, total);
	for (i = 0; i < n; i++) {
		ASSERT_TRUE(placed(_metadata, sb.p + 4096 + 200 * i,
				   cb.p + 1500 * i, 200));
	}
	memset(back.p, 0xee, back.len);
	n = a->max_rdma_read_iov;
	for (i = 0; i < n; i++)
		r[i] = seg(&back, 2000 * i, total / n);
	OK(dat_ep_post_rdma_read(c.ep, n, r, cookie(4), &rem, 0));
	expect_dto(_metadata, c.dto_evd, 4, DAT_DTO_SUCCESS, total);
	for (i = 0; i < n; i++) {
		ASSERT_TRUE(!memcmp(back.p + 2000 * i,
				    sb.p + 4096 + i * (total / n), total / n));
	}
	/*
	 * One segment more than the attribute says is refused at the post
	 * (on iWARP a read's sink is one tagged buffer: siw says max_sge_rd
	 * 1 and places a read at its first segment whatever the others).
	 */
	if (n < 4) {
		for (i = 0; i <= n; i++)
			r[i] = seg(&back, 2000 * i, total / (n + 1));
		ASSERT_DAT(dat_ep_post_rdma_read(c.ep, n + 1, r, cookie(5),
						 &rem, 0),
			   DAT_INVALID_PARAMETER);
	}
	OK(sides_close(&c, &s));
}

/* The registry lists kdat-<device>-<port>, and that name opens an IA. */
TEST_F(kdat, test_list_providers)
{
	DAT_PROVIDER_INFO info[16], *list[16];
	DAT_IA_HANDLE ia;
	DAT_EVD_HANDLE aevd = DAT_HANDLE_NULL;
	DAT_COUNT n, i;
	char want[160];
	const char *port = getenv("KDAT_TEST_PORT");

	for (i = 0; i < 16; i++)
		list[i] = &info[i];
	OK(dat_registry_list_providers(16, &n, list));
	snprintf(want, sizeof(want), "kdat-%s-%s", getenv("KDAT_TEST_DEV"),
		 port ? port : "1");
	for (i = 0; i < n; i++)
		if (!strcmp(info[i].ia_name, want))
			break;
	ASSERT_TRUE(i < n);
	OK(dat_ia_open(want, 4, &aevd, &ia));
	OK(dat_ia_close(ia, DAT_CLOSE_ABRUPT_FLAG));
}

/*
 * dat_ep_modify before connecting: completion flags, RDMA read depths and
 * smaller DTO counts take effect; what would need another QP is
 * DAT_MODEL_NOT_SUPPORTED; a connected EP is DAT_INVALID_STATE.
 */
TEST_F(kdat, test_ep_modify)
{
	DAT_EP_HANDLE x;
	DAT_EP_PARAM p;
	DAT_LMR_TRIPLET t;
	struct side c, s;
	struct buf cb, sb;
	int i;

	OK(sides_reg(&c, &cb, &s, &sb, 4096));
	OK(dat_ep_query(c.ep, DAT_EP_FIELD_ALL, &p));

	/* Not configured for unsignalled sends yet. */
	p.ep_attr.request_completion_flags = DAT_COMPLETION_UNSIGNALLED_FLAG;
	p.ep_attr.max_request_dtos = 2;
	p.ep_attr.max_rdma_read_out = 2;
	OK(dat_ep_modify(c.ep, DAT_EP_FIELD_EP_ATTR_REQUEST_COMPLETION_FLAGS |
			 DAT_EP_FIELD_EP_ATTR_MAX_REQUEST_DTOS |
			 DAT_EP_FIELD_EP_ATTR_MAX_RDMA_READ_OUT |
			 DAT_EP_FIELD_PZ_HANDLE, &p));
	OK(dat_ep_query(c.ep, DAT_EP_FIELD_ALL, &p));
	ASSERT_TRUE(p.ep_attr.max_request_dtos == 2);
	ASSERT_TRUE(p.ep_attr.max_rdma_read_out == 2);
	ASSERT_TRUE(p.ep_attr.request_completion_flags ==
		    DAT_COMPLETION_UNSIGNALLED_FLAG);

	/* More than the QP was built for; another PZ; solicited waits. */
	p.ep_attr.max_recv_dtos = 64;
	ASSERT_DAT(dat_ep_modify(c.ep, DAT_EP_FIELD_EP_ATTR_MAX_RECV_DTOS, &p),
		   DAT_MODEL_NOT_SUPPORTED);
	p.ep_attr.max_recv_dtos = 16;
	p.pz_handle = s.pz;
	ASSERT_DAT(dat_ep_modify(c.ep, DAT_EP_FIELD_PZ_HANDLE, &p),
		   DAT_MODEL_NOT_SUPPORTED);
	p.pz_handle = c.pz;
	p.ep_attr.recv_completion_flags = DAT_COMPLETION_SOLICITED_WAIT_FLAG;
	ASSERT_DAT(dat_ep_modify(c.ep,
				 DAT_EP_FIELD_EP_ATTR_RECV_COMPLETION_FLAGS,
				 &p), DAT_MODEL_NOT_SUPPORTED);
	p.ep_attr.recv_completion_flags = DAT_COMPLETION_DEFAULT_FLAG;
	ASSERT_DAT(dat_ep_modify(c.ep, DAT_EP_FIELD_EP_STATE, &p),
		   DAT_INVALID_PARAMETER);
	/* Not below what is posted (another EP: s takes none yet). */
	OK(dat_ep_create(s.ia, s.pz, s.dto_evd, s.dto_evd, s.conn_evd, NULL,
			 &x));
	for (i = 0; i < 3; i++) {
		t = seg(&sb, i * 64, 64);
		OK(dat_ep_post_recv(x, 1, &t, cookie(50 + i), 0));
	}
	OK(dat_ep_query(x, DAT_EP_FIELD_ALL, &p));
	p.ep_attr.max_recv_dtos = 2;
	ASSERT_DAT(dat_ep_modify(x, DAT_EP_FIELD_EP_ATTR_MAX_RECV_DTOS, &p),
		   DAT_INVALID_STATE);

	if (dev_iwarp(_metadata))
		SKIP(return, "its second half needs sends that wait for a receiver (RNR): iWARP has none");
	OK(connect_pair(&c, &s, false));
	/*
	 * No receive at s: sends wait (RNR retries), so two are out and a
	 * third is refused; unsignalled ones are allowed now.
	 */
	t = seg(&cb, 0, 8);
	OK(dat_ep_post_send(c.ep, 1, &t, cookie(10),
			    DAT_COMPLETION_UNSIGNALLED_FLAG));
	OK(dat_ep_post_send(c.ep, 1, &t, cookie(11), 0));
	ASSERT_DAT(dat_ep_post_send(c.ep, 1, &t, cookie(12), 0),
		   DAT_INSUFFICIENT_RESOURCES);
	for (i = 0; i < 2; i++) {
		t = seg(&sb, i * 64, 64);
		OK(dat_ep_post_recv(s.ep, 1, &t, cookie(i), 0));
	}
	/* Unsignalled: no notification, but the event is queued. */
	expect_dto(_metadata, c.dto_evd, 10, DAT_DTO_SUCCESS, 8);
	expect_dto(_metadata, c.dto_evd, 11, DAT_DTO_SUCCESS, 8);
	for (i = 0; i < 2; i++)
		expect_dto(_metadata, s.dto_evd, i, DAT_DTO_SUCCESS, 8);
	OK(dat_ep_query(c.ep, DAT_EP_FIELD_ALL, &p));
	ASSERT_DAT(dat_ep_modify(c.ep, DAT_EP_FIELD_EP_ATTR_MAX_REQUEST_DTOS,
				 &p), DAT_INVALID_STATE);
	ASSERT_DAT(dat_ep_set_watermark(c.ep, 1, 2), DAT_MODEL_NOT_SUPPORTED);
	OK(sides_close(&c, &s));
}

/* The value of provider-specific attribute @name in @a, or NULL. */
static const char *ep_spec(const DAT_EP_ATTR *a, const char *name)
{
	DAT_COUNT i;

	for (i = 0; i < a->ep_provider_specific_count; i++)
		if (!strcmp(a->ep_provider_specific[i].name, name))
			return a->ep_provider_specific[i].value;
	return NULL;
}

/* kdat's module parameter @name, the default of new EPs' timers. */
static unsigned int kdat_param(struct __test_metadata *_metadata,
			       const char *name)
{
	char path[96];
	unsigned int v = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/sys/module/kdat/parameters/%s", name);
	f = fopen(path, "r");
	ASSERT_FALSE(!f || fscanf(f, "%u", &v) != 1)
		TH_LOG("cannot read %s", path);
	fclose(f);
	return v;
}

/*
 * The transport timers are the EP's provider-specific attributes
 * (KDAT_ACK_TIMEOUT, KDAT_RETRY_COUNT, KDAT_RNR_TIMER, KDAT_KEEPALIVE_MS):
 * what an EP is created with, dat_ep_query shows; an EP that names none
 * has kdat's defaults (the module parameters); another provider's names
 * are passed over; a value that is no number, out of range or below the
 * floors is DAT_INVALID_PARAMETER, and no EP is made; dat_ep_modify does
 * not change them.
 */
TEST_F(kdat, test_ep_timer_attrs)
{
	static const char *const names[] = { "KDAT_ACK_TIMEOUT",
		"KDAT_RETRY_COUNT", "KDAT_RNR_TIMER", "KDAT_KEEPALIVE_MS" };
	static const char *const params[] = { "ack_timeout", "retry_count",
		"rnr_timer", "keepalive_ms" };
	static const struct { const char *name, *value; } bad[] = {
		{ "KDAT_ACK_TIMEOUT", "32" }, { "KDAT_RETRY_COUNT", "8" },
		{ "KDAT_RNR_TIMER", "99" }, { "KDAT_KEEPALIVE_MS", "-1" },
		{ "KDAT_RNR_TIMER", "12ms" }, { "KDAT_RNR_TIMER", "" },
		{ "KDAT_KEEPALIVE_MS", "4294967296" },
		/* Below the floors any user meets: 1 ms, 100 ms. */
		{ "KDAT_ACK_TIMEOUT", "7" }, { "KDAT_KEEPALIVE_MS", "99" },
		{ "KDAT_RNR_TIMER", NULL },
	};
	DAT_NAMED_ATTR spec[] = {
		{ "KDAT_ACK_TIMEOUT", "16" }, { "KDAT_RETRY_COUNT", "3" },
		{ "OTHER_PROVIDER_KNOB", "x" }, { "KDAT_RNR_TIMER", "20" },
		{ "KDAT_KEEPALIVE_MS", "0" }, { "OTHER_PROVIDER_NULL", NULL },
	};
	DAT_NAMED_ATTR other_rnr = { "KDAT_RNR_TIMER", "21" };
	static const char *const want[] = { "16", "3", "20", "0" };
	DAT_EP_ATTR a = ep_attr();
	DAT_EP_PARAM p;
	DAT_EP_HANDLE ep;
	struct side s;
	char def[16];
	unsigned int i;
	int eps;

	OK(side_open(&s, NULL));
	/* The side's EP named none: the defaults. */
	OK(dat_ep_query(s.ep, DAT_EP_FIELD_ALL, &p));
	ASSERT_EQ(4, p.ep_attr.ep_provider_specific_count);
	for (i = 0; i < 4; i++) {
		unsigned int v = kdat_param(_metadata, params[i]);
		const char *got = ep_spec(&p.ep_attr, names[i]);

		/* As the kernel takes them: see kdat_ep_timers_init(). */
		if (!strcmp(params[i], "retry_count") && v > 7)
			v = 7;
		if ((!strcmp(params[i], "ack_timeout") ||
		     !strcmp(params[i], "rnr_timer")) && v > 31)
			v = 0;
		snprintf(def, sizeof(def), "%u", v);
		ASSERT_FALSE(!got || strcmp(got, def))
			TH_LOG("%s: %s, want the default %s", names[i],
			       got ? got : "(none)", def);
	}

	a.ep_provider_specific_count = sizeof(spec) / sizeof(spec[0]);
	a.ep_provider_specific = spec;
	OK(dat_ep_create(s.ia, s.pz, s.dto_evd, s.dto_evd, s.conn_evd, &a,
			 &ep));
	OK(dat_ep_query(ep, DAT_EP_FIELD_ALL, &p));
	for (i = 0; i < 4; i++) {
		const char *got = ep_spec(&p.ep_attr, names[i]);

		ASSERT_FALSE(!got || strcmp(got, want[i]))
			TH_LOG("%s: %s, want %s", names[i],
			       got ? got : "(none)", want[i]);
	}
	ASSERT_TRUE(!ep_spec(&p.ep_attr, "OTHER_PROVIDER_KNOB"));
	/*
	 * Fixed at create: dat_ep_modify with the timers it has succeeds,
	 * with another one it is DAT_MODEL_NOT_SUPPORTED.
	 */
	OK(dat_ep_modify(ep, DAT_EP_FIELD_EP_ATTR_PROVIDER_SPECIFIC_ATTR |
			 DAT_EP_FIELD_EP_ATTR_NUM_PROVIDER_ATTR, &p));
	p.ep_attr.ep_provider_specific_count = 1;
	p.ep_attr.ep_provider_specific = &other_rnr;
	ASSERT_DAT(dat_ep_modify(ep,
				 DAT_EP_FIELD_EP_ATTR_PROVIDER_SPECIFIC_ATTR |
				 DAT_EP_FIELD_EP_ATTR_NUM_PROVIDER_ATTR, &p),
		   DAT_MODEL_NOT_SUPPORTED);
	OK(dat_ep_query(ep, DAT_EP_FIELD_ALL, &p));
	ASSERT_TRUE(!strcmp(ep_spec(&p.ep_attr, "KDAT_RNR_TIMER"), "20"));
	OK(dat_ep_free(ep));

	eps = kdat_objects("ep");
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		DAT_NAMED_ATTR one = { bad[i].name, bad[i].value };

		a.ep_provider_specific_count = 1;
		a.ep_provider_specific = &one;
		ep = DAT_HANDLE_NULL;
		ASSERT_DAT(dat_ep_create(s.ia, s.pz, s.dto_evd, s.dto_evd,
					 s.conn_evd, &a, &ep),
			   DAT_INVALID_PARAMETER);
		ASSERT_TRUE(ep == DAT_HANDLE_NULL);
	}
	a.ep_provider_specific_count = -1;
	ASSERT_DAT(dat_ep_create(s.ia, s.pz, s.dto_evd, s.dto_evd, s.conn_evd,
				 &a, &ep), DAT_INVALID_PARAMETER);
	a.ep_provider_specific_count = 1;
	a.ep_provider_specific = NULL;
	ASSERT_DAT(dat_ep_create(s.ia, s.pz, s.dto_evd, s.dto_evd, s.conn_evd,
				 &a, &ep), DAT_INVALID_PARAMETER);
	ASSERT_EQ(eps, kdat_objects("ep"));
	OK(side_close(&s));
}
