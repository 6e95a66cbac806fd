// SPDX-License-Identifier: GPL-2.0
/*
 * One -ldat program, two providers (TAP): a kdat IA and an IA of OFA's
 * provider (libdaplofa, loaded by libdat's registry from dat.conf) open
 * in the same process, each call going to its own provider, and data
 * moving between them both ways: relayed through the process (received
 * on one provider into memory registered with both, sent on by the
 * other), and over connections between a kdat EP and an OFA EP, each
 * provider listening in turn.
 *
 * Run by tests/dat/registry.sh: KDAT_IA and OFA_IA name the two IAs (on
 * the same RDMA device), DAT_OVERRIDE a dat.conf that has OFA's,
 * KDAT_TEST_IP the device's IPv4 address. KDAT_T_SLOW scales the waits.
 *
 * Each case is a TEST_F() of the kernel's kselftest_harness.h on the
 * fixture of ../lib/kdat_harness.h (30 s, 120 s for those that connect,
 * times $KDAT_T_SLOW); the steps of tests/lib/dat_pair.h are checked with
 * OK(), as any DAT call is.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>

#include <dat2/udat.h>

#include "../lib/kdat_harness.h"
#include "../lib/dat_expect.h"
#include "../lib/dat_pair.h"

#define LEN 4096

static char *kdat_ia, *ofa_ia;	/* DAT_NAME_PTR is not const */

/*
 * A side of IA @name (tests/lib/dat_pair.h): its EP of one IOV, RDMA
 * writes up to 64 KiB.
 */
static void rside_open(struct __test_metadata *_metadata, struct side *s,
		       char *name)
{
	DAT_EP_ATTR a = ep_attr_rc(16, 1, 4);

	a.max_rdma_size = 0x10000;
	a.request_completion_flags = DAT_COMPLETION_DEFAULT_FLAG;
	OK(side_ia(s, name, 0));
	OK(side_ep(s, &a));
}

static unsigned char *mem(struct __test_metadata *_metadata)
{
	void *p = mmap(NULL, LEN, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	ASSERT_TRUE(p != MAP_FAILED);
	return p;
}

/* The next event on @s's EVD: a successful DTO of @ck and @len bytes. */
static void expect_dto(struct __test_metadata *_metadata, const struct side *s,
		       uint64_t ck, DAT_COUNT len)
{
	const DAT_DTO_COMPLETION_EVENT_DATA *d;
	DAT_EVENT ev;

	OK(wait_event(s->dto_evd, &ev));
	ASSERT_FALSE(ev.event_number != DAT_DTO_COMPLETION_EVENT)
		TH_LOG("%s: event %#x, want a DTO completion", s->name,
		       ev.event_number);
	d = &ev.event_data.dto_completion_event_data;
	ASSERT_FALSE(d->user_cookie.as_64 != ck ||
		     d->status != DAT_DTO_SUCCESS ||
		     d->transfered_length != (DAT_SEG_LENGTH)len)
		TH_LOG("%s: dto cookie %llu status %d len %u, want %llu 0 %d",
		       s->name, (unsigned long long)d->user_cookie.as_64,
		       d->status, d->transfered_length,
		       (unsigned long long)ck, len);
}

/* @from sends @len bytes of @src; @to receives them into @dst. */
static void send_recv(struct __test_metadata *_metadata,
		      struct side *from, const struct buf *src,
		      struct side *to, const struct buf *dst, size_t len)
{
	DAT_LMR_TRIPLET r = seg(dst, 0, LEN), t = seg(src, 0, len);

	OK(dat_ep_post_recv(to->ep, 1, &r, cookie(1), 0));
	OK(dat_ep_post_send(from->ep, 1, &t, cookie(2), 0));
	expect_dto(_metadata, from, 2, len);
	expect_dto(_metadata, to, 1, len);
}

/* @from writes @len bytes of @src into @dst, registered by its peer. */
static void rdma_write(struct __test_metadata *_metadata,
		       struct side *from, const struct buf *src,
		       const struct buf *dst, size_t len)
{
	DAT_LMR_TRIPLET t = seg(src, 0, len);
	DAT_RMR_TRIPLET rt = remote(dst, 0, len);

	OK(dat_ep_post_rdma_write(from->ep, 1, &t, cookie(3), &rt, 0));
	expect_dto(_metadata, from, 3, len);	/* RC: the peer has it */
}

static void fill(unsigned char *p, size_t len, unsigned int seed)
{
	size_t i;

	for (i = 0; i < len; i++)
		p[i] = (unsigned char)(seed + i * 7);
}

static void same(struct __test_metadata *_metadata,
		 const unsigned char *a, const unsigned char *b, size_t len,
		 const char *what)
{
	ASSERT_FALSE(memcmp(a, b, len))
		TH_LOG("%s: the bytes differ", what);
}

/* ---- cases ------------------------------------------------------------ */

/* The registry lists kdat's IA once per thread safety, and OFA's. */
TEST_F(kdat, test_list)
{
	DAT_PROVIDER_INFO info[256], *list[256];
	int kdat_ts = 0, ofa = 0;
	DAT_COUNT n, i;

	for (i = 0; i < 256; i++)
		list[i] = &info[i];
	OK(dat_registry_list_providers(256, &n, list));
	for (i = 0; i < n; i++) {
		kdat_ts += !strcmp(info[i].ia_name, kdat_ia) &&
			   info[i].is_thread_safe;
		ofa += !strcmp(info[i].ia_name, ofa_ia);
	}
	/* kdat's own entry and kdat-datconf's threadsafe line: one. */
	ASSERT_EQ(1, kdat_ts);
	ASSERT_EQ(1, ofa);
}

/* Both open in one process; each answers for itself. */
TEST_F(kdat, test_open_both)
{
	DAT_PROVIDER_ATTR kpa, opa;
	DAT_IA_ATTR kia, oia;
	DAT_HANDLE_TYPE type;
	struct side k, o;

	rside_open(_metadata, &k, kdat_ia);
	rside_open(_metadata, &o, ofa_ia);
	OK(dat_ia_query(k.ia, NULL, DAT_IA_FIELD_ALL, &kia,
			DAT_PROVIDER_FIELD_ALL, &kpa));
	OK(dat_ia_query(o.ia, NULL, DAT_IA_FIELD_ALL, &oia,
			DAT_PROVIDER_FIELD_ALL, &opa));
	TH_LOG("kdat: provider %s, adapter %s; OFA: provider %s, adapter %s",
	       kpa.provider_name, kia.adapter_name, opa.provider_name,
	       oia.adapter_name);
	ASSERT_TRUE(!strcmp(kpa.provider_name, kdat_ia));
	ASSERT_TRUE(strcmp(opa.provider_name, kpa.provider_name));
	OK(dat_get_handle_type(k.ep, &type));
	ASSERT_EQ(DAT_HANDLE_TYPE_EP, type);
	OK(dat_get_handle_type(o.ep, &type));
	ASSERT_EQ(DAT_HANDLE_TYPE_EP, type);
	/*
	 * One provider's object given to the other: the call goes by the
	 * first handle, and that provider refuses the stranger.
	 */
	{
		DAT_EP_HANDLE ep;

		ASSERT_DAT(dat_ep_create(o.ia, k.pz, o.dto_evd, o.dto_evd,
					 o.conn_evd, NULL, &ep),
			   DAT_INVALID_HANDLE);
		ASSERT_DAT(dat_ep_create(k.ia, o.pz, k.dto_evd, k.dto_evd,
					 k.conn_evd, NULL, &ep),
			   DAT_INVALID_HANDLE);
	}
	OK(side_close(&o));
	OK(side_close(&k));
}

/*
 * Each provider connected to itself; a message relayed through memory
 * registered with both: kdat's receive lands in it, OFA's send takes it
 * from there; then the way back; then the same by RDMA write.
 */
TEST_F_TIMEOUT(kdat, test_relay, 120)
{
	struct side kc, ks, oc, os;
	struct buf kc_b, ks_mid, oc_mid, os_b;
	unsigned char *mid = mem(_metadata), *want = mem(_metadata);

	rside_open(_metadata, &kc, kdat_ia);
	rside_open(_metadata, &ks, kdat_ia);
	rside_open(_metadata, &oc, ofa_ia);
	rside_open(_metadata, &os, ofa_ia);
	OK(connect_pair(&kc, &ks, false));
	OK(connect_pair(&oc, &os, false));
	OK(buf_reg_at(&kc, &kc_b, mem(_metadata), LEN, DAT_MEM_PRIV_ALL_FLAG));
	OK(buf_reg_at(&ks, &ks_mid, mid, LEN, DAT_MEM_PRIV_ALL_FLAG));
	/* The same memory, OFA's LMR. */
	OK(buf_reg_at(&oc, &oc_mid, mid, LEN, DAT_MEM_PRIV_ALL_FLAG));
	OK(buf_reg_at(&os, &os_b, mem(_metadata), LEN, DAT_MEM_PRIV_ALL_FLAG));

	/* kdat to OFA: kc -> ks (into mid) -> oc (from mid) -> os. */
	fill(kc_b.p, LEN, 1);
	memcpy(want, kc_b.p, LEN);
	send_recv(_metadata, &kc, &kc_b, &ks, &ks_mid, 1000);
	send_recv(_metadata, &oc, &oc_mid, &os, &os_b, 1000);
	same(_metadata, os_b.p, want, 1000, "kdat to OFA, send");
	/* OFA to kdat: os -> oc (into mid) -> ks (from mid) -> kc. */
	fill(os_b.p, LEN, 2);
	memcpy(want, os_b.p, LEN);
	send_recv(_metadata, &os, &os_b, &oc, &oc_mid, 3000);
	send_recv(_metadata, &ks, &ks_mid, &kc, &kc_b, 3000);
	same(_metadata, kc_b.p, want, 3000, "OFA to kdat, send");
	/* By RDMA write, both ways. */
	fill(kc_b.p, LEN, 3);
	memcpy(want, kc_b.p, LEN);
	rdma_write(_metadata, &kc, &kc_b, &ks_mid, LEN);
	rdma_write(_metadata, &oc, &oc_mid, &os_b, LEN);
	same(_metadata, os_b.p, want, LEN, "kdat to OFA, RDMA write");
	fill(os_b.p, LEN, 4);
	memcpy(want, os_b.p, LEN);
	rdma_write(_metadata, &os, &os_b, &oc_mid, LEN);
	rdma_write(_metadata, &ks, &ks_mid, &kc_b, LEN);
	same(_metadata, kc_b.p, want, LEN, "OFA to kdat, RDMA write");

	OK(side_close(&kc));
	OK(side_close(&ks));
	OK(side_close(&oc));
	OK(side_close(&os));
}

/* A kdat EP and an OFA EP connected: sends and RDMA writes both ways. */
static void cross(struct __test_metadata *_metadata, bool kdat_listens)
{
	struct side k, o;
	struct buf kb, ob;

	rside_open(_metadata, &k, kdat_ia);
	rside_open(_metadata, &o, ofa_ia);
	if (kdat_listens)
		OK(connect_pair(&o, &k, false));
	else
		OK(connect_pair(&k, &o, false));
	OK(buf_reg_at(&k, &kb, mem(_metadata), LEN, DAT_MEM_PRIV_ALL_FLAG));
	OK(buf_reg_at(&o, &ob, mem(_metadata), LEN, DAT_MEM_PRIV_ALL_FLAG));
	fill(kb.p, LEN, 5);
	send_recv(_metadata, &k, &kb, &o, &ob, 2000);
	same(_metadata, ob.p, kb.p, 2000, "kdat to OFA, send");
	fill(ob.p, LEN, 6);
	send_recv(_metadata, &o, &ob, &k, &kb, 2500);
	same(_metadata, kb.p, ob.p, 2500, "OFA to kdat, send");
	fill(kb.p, LEN, 7);
	rdma_write(_metadata, &k, &kb, &ob, LEN);
	same(_metadata, ob.p, kb.p, LEN, "kdat to OFA, RDMA write");
	fill(ob.p, LEN, 8);
	rdma_write(_metadata, &o, &ob, &kb, LEN);
	same(_metadata, kb.p, ob.p, LEN, "OFA to kdat, RDMA write");
	OK(dat_ep_disconnect(k.ep, DAT_CLOSE_GRACEFUL_FLAG));
	OK(conn_event(&k, DAT_CONNECTION_EVENT_DISCONNECTED, NULL, 0, NULL));
	OK(conn_event(&o, DAT_CONNECTION_EVENT_DISCONNECTED, NULL, 0, NULL));
	OK(side_close(&k));
	OK(side_close(&o));
}

TEST_F_TIMEOUT(kdat, test_cross_ofa_listens, 120)
{
	cross(_metadata, false);
}

TEST_F_TIMEOUT(kdat, test_cross_kdat_listens, 120)
{
	cross(_metadata, true);
}

int main(int argc, char **argv)
{
	const char *ip = getenv("KDAT_TEST_IP");
	const char *slow = getenv("KDAT_T_SLOW");

	kdat_ia = getenv("KDAT_IA");
	ofa_ia = getenv("OFA_IA");
	if (kdat_harness_listing(argc, argv))
		return kdat_harness_main(argc, argv);
	if (!kdat_ia || !ofa_ia || !ip || !getenv("DAT_OVERRIDE")) {
		printf("1..0 # SKIP needs KDAT_IA, OFA_IA, KDAT_TEST_IP and DAT_OVERRIDE\n");
		return KSFT_SKIP;
	}
	pair_conf.peer.sin_family = AF_INET;
	if (inet_pton(AF_INET, ip, &pair_conf.peer.sin_addr) != 1) {
		printf("1..0 # SKIP KDAT_TEST_IP %s: not an IPv4 address\n", ip);
		return KSFT_SKIP;
	}
	pair_conf.tmo = 10 * 1000 * 1000 * (DAT_TIMEOUT)(slow ? atoi(slow) : 1);
	/* Qualifiers apart from dat_dto_test's, as before. */
	pair_conf.qual_base = 20000;
	pair_conf.qual_span = 40000;
	return kdat_harness_main(argc, argv);
}
