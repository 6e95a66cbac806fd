// SPDX-License-Identifier: GPL-2.0
/*
 * What the cases of dat_dto_test's files share (dto.h).
 */
#include "dto.h"

/* Is the test device iWARP (tests/lib/rdma_dev.h)? */
bool dev_iwarp(struct __test_metadata *_metadata)
{
	int iwarp = rdma_dev_iwarp(getenv("KDAT_TEST_DEV"));

	ASSERT_FALSE(iwarp < 0)
		TH_LOG("no node_type in sysfs for KDAT_TEST_DEV=%s",
		       getenv("KDAT_TEST_DEV"));
	return iwarp;
}

double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/*
 * Do @n bytes at @dst, the target of an RDMA write whose completion the
 * caller has seen, equal @src? On IB and RoCE at once: the write completes
 * on the peer's ack, which follows the placement. On iWARP a write
 * completes once TCP has it and lands a moment later: within 2 s.
 */
bool placed(struct __test_metadata *_metadata, const void *dst, const void *src,
	    size_t n)
{
	bool wait = dev_iwarp(_metadata);
	double t0 = now_s();

	while (wait && memcmp(dst, src, n) && now_s() - t0 < 2)
		usleep(100);
	return !memcmp(dst, src, n);
}

/*
 * A peer's reject on iWARP: siw reports an MPA reject as a reset, with a
 * private data buffer kdat does not read (kdat_dev_reject_is_peers()):
 * the reject comes with no data. Said, and true only there; a device
 * sysfs says nothing of is not iWARP here, and the caller's check of the
 * data fails. Also tests/lib/dat_pair.h's hook, called in its steps: it
 * asserts nothing.
 */
bool reject_pdata_lost(const DAT_EVENT *ev)
{
	if (ev->event_number != DAT_CONNECTION_EVENT_PEER_REJECTED ||
	    ev->event_data.connect_event_data.private_data_size ||
	    rdma_dev_iwarp(getenv("KDAT_TEST_DEV")) <= 0)
		return false;
	ksft_print_msg("iWARP: the reject came without its private data\n");
	return true;
}

void expect_conn_event(struct __test_metadata *_metadata, DAT_EVD_HANDLE evd,
		       DAT_EVENT_NUMBER num, const char *pdata)
{
	DAT_EVENT ev;

	OK(wait_event(evd, &ev));
	ASSERT_FALSE(ev.event_number != num)
		TH_LOG("event %#x, want %#x", ev.event_number, num);
	if (pdata && !reject_pdata_lost(&ev)) {
		const DAT_CONNECTION_EVENT_DATA *d =
			&ev.event_data.connect_event_data;

		ASSERT_TRUE(d->private_data_size >= (DAT_COUNT)strlen(pdata));
		ASSERT_TRUE(!memcmp(d->private_data, pdata, strlen(pdata)));
	}
}

/* The counters of @h, all of them. */
void counters(struct __test_metadata *_metadata, DAT_HANDLE h, int all,
	      DAT_UINT64 *out)
{
	memset(out, 0xAA, sizeof(*out) * all);
	OK(dat_ib_query_counters(h, all, out, 0));
}

/* A DTO completion: its cookie, status and length. */
void expect_dto(struct __test_metadata *_metadata, DAT_EVD_HANDLE evd,
		uint64_t ck, DAT_DTO_COMPLETION_STATUS status, DAT_COUNT len)
{
	const DAT_DTO_COMPLETION_EVENT_DATA *d;
	DAT_EVENT ev;

	OK(wait_event(evd, &ev));
	ASSERT_TRUE(ev.event_number == DAT_DTO_COMPLETION_EVENT);
	d = &ev.event_data.dto_completion_event_data;
	ASSERT_FALSE(d->user_cookie.as_64 != ck || d->status != status ||
		     (len >= 0 && d->transfered_length != (DAT_SEG_LENGTH)len))
		TH_LOG("dto: cookie %llu status %d len %u, want %llu %d %d",
		       (unsigned long long)d->user_cookie.as_64, d->status,
		       d->transfered_length, (unsigned long long)ck, status,
		       len);
}

void state_is(struct __test_metadata *_metadata, DAT_EP_HANDLE ep,
	      DAT_EP_STATE want)
{
	DAT_EP_STATE st;

	OK(dat_ep_get_status(ep, &st, NULL, NULL));
	ASSERT_FALSE(st != want)
		TH_LOG("EP state %d, want %d", st, want);
}

/*
 * calloc() of this program, which libdat's calls reach (the executable's
 * definition comes first): the next calloc_fail calls answer ENOMEM.
 */
extern void *__libc_calloc(size_t n, size_t size);

int calloc_fail;

void *calloc(size_t n, size_t size)
{
	if (__atomic_load_n(&calloc_fail, __ATOMIC_RELAXED) > 0 &&
	    __atomic_sub_fetch(&calloc_fail, 1, __ATOMIC_RELAXED) >= 0) {
		errno = ENOMEM;
		return NULL;
	}
	return __libc_calloc(n, size);
}

/*
 * A DTO of @x completed in error (not flushed): the connection is broken.
 * @x is DISCONNECTED, with DAT_CONNECTION_EVENT_BROKEN after the DTO's
 * event; its peer @y hears of it (DISCONNECTED, or BROKEN when a DTO of
 * its own failed too) and is DISCONNECTED; a send posted to @x now is
 * flushed at once. The DTO events @x and @y still hold (the peer's
 * failed or flushed send) are dequeued first.
 */
void broken_after_error(struct __test_metadata *_metadata, struct side *x,
			struct side *y)
{
	DAT_LMR_TRIPLET none = { 0 };
	DAT_EVENT ev;

	expect_conn_event(_metadata, x->conn_evd, DAT_CONNECTION_EVENT_BROKEN,
			  NULL);
	state_is(_metadata, x->ep, DAT_EP_STATE_DISCONNECTED);
	OK(wait_event(y->conn_evd, &ev));
	ASSERT_TRUE(ev.event_number == DAT_CONNECTION_EVENT_DISCONNECTED ||
		    ev.event_number == DAT_CONNECTION_EVENT_BROKEN);
	state_is(_metadata, y->ep, DAT_EP_STATE_DISCONNECTED);
	while (dat_evd_dequeue(x->dto_evd, &ev) == DAT_SUCCESS)
		;
	OK(dat_ep_post_send(x->ep, 0, &none, cookie(99), 0));
	expect_dto(_metadata, x->dto_evd, 99, DAT_DTO_ERR_FLUSHED, -1);
}

/*
 * The transport's side of a case (RNR waits, a connection broken under a
 * teardown) is the same whether libdat posts through the rings or the
 * ioctl: the rings-with-poller run has it, the other two modes skip it.
 */
void only_in_ring_mode(struct __test_metadata *_metadata)
{
	const char *rings = getenv("KDAT_RINGS"), *poller = getenv("KDAT_POLLER");

	if ((rings && !strcmp(rings, "0")) || (poller && !strcmp(poller, "none")))
		KDAT_SKIP("the kernel's side, the same in every mode: dat_dto_test (rings, poller) runs it");
}

/* Nothing was posted by a refused call: the next DTO is the next event. */
void pair_still_works(struct __test_metadata *_metadata, struct pair *p)
{
	DAT_LMR_TRIPLET r = seg(&p->sb, 0, 64), t = seg(&p->cb, 0, 16);

	OK(dat_ep_post_recv(p->s.ep, 1, &r, cookie(900), 0));
	OK(dat_ep_post_send(p->c.ep, 1, &t, cookie(901), 0));
	expect_dto(_metadata, p->c.dto_evd, 901, DAT_DTO_SUCCESS, 16);
	expect_dto(_metadata, p->s.dto_evd, 900, DAT_DTO_SUCCESS, 16);
}

const DAT_IB_EXTENSION_EVENT_DATA *ext_data(const DAT_EVENT *ev)
{
	return (const DAT_IB_EXTENSION_EVENT_DATA *)ev->event_extension_data;
}

/*
 * The next event: an extended DTO completion of @type and operation @op,
 * with cookie @ck, status @status and @len bytes (len < 0: any). The
 * event in *@out if asked.
 */
void expect_ext(struct __test_metadata *_metadata, DAT_EVD_HANDLE evd,
		DAT_IB_EXT_TYPE type, int op, uint64_t ck,
		DAT_DTO_COMPLETION_STATUS status, DAT_COUNT len, DAT_EVENT *out)
{
	const DAT_DTO_COMPLETION_EVENT_DATA *d;
	const DAT_IB_EXTENSION_EVENT_DATA *x;
	DAT_EVENT ev;

	OK(wait_event(evd, &ev));
	d = &ev.event_data.dto_completion_event_data;
	x = ext_data(&ev);
	ASSERT_FALSE(ev.event_number != (DAT_EVENT_NUMBER)DAT_IB_DTO_EVENT ||
		     x->type != type || (int)d->operation != op ||
		     d->user_cookie.as_64 != ck || d->status != status ||
		     x->status != (status == DAT_DTO_SUCCESS ? DAT_OP_SUCCESS :
							     DAT_IB_OP_ERR) ||
		     (len >= 0 && d->transfered_length != (DAT_SEG_LENGTH)len))
		TH_LOG("event %#x type %d op %d cookie %llu status %d/%d "
		       "len %u; want %#x %d %d %llu %d %d",
		       ev.event_number, x->type, d->operation,
		       (unsigned long long)d->user_cookie.as_64, d->status,
		       x->status, d->transfered_length, DAT_IB_DTO_EVENT,
		       type, op, (unsigned long long)ck, status, len);
	if (out)
		*out = ev;
}

/* A provider-specific attribute's value; NULL when absent; never twice. */
const char *attr_value(struct __test_metadata *_metadata,
		       const DAT_PROVIDER_ATTR *pa, const char *name)
{
	const char *v = NULL;
	int i, n = 0;

	for (i = 0; i < pa->num_provider_specific_attr; i++)
		if (!strcmp(pa->provider_specific_attr[i].name, name)) {
			v = pa->provider_specific_attr[i].value;
			n++;
		}
	ASSERT_TRUE(n <= 1);
	return v;
}

/* Is attribute @name there, with @value? */
bool attr_is(struct __test_metadata *_metadata, const DAT_PROVIDER_ATTR *pa,
	     const char *name, const char *value)
{
	const char *v = attr_value(_metadata, pa, name);

	return v && !strcmp(v, value);
}

/* Does the IA's provider attribute @attr say TRUE? */
bool ia_has(struct __test_metadata *_metadata, DAT_IA_HANDLE ia,
	    const char *attr)
{
	DAT_PROVIDER_ATTR pa;

	OK(dat_ia_query(ia, NULL, 0, NULL, DAT_PROVIDER_FIELD_ALL, &pa));
	return attr_is(_metadata, &pa, attr, "TRUE");
}
