// SPDX-License-Identifier: GPL-2.0
/*
 * /dev/kdat from user space: the device, device list, IA open/close, the
 * ioctl size protocol and handle ownership.
 *
 * Needs /dev/kdat (exit 4 without it). Cases that need an RDMA port use
 * $KDAT_TEST_DEV (port $KDAT_TEST_PORT, default 1) when set, which must then
 * exist, or else the first port listed, and skip when there is none.
 *
 * Each case is a TEST_F() of the kernel's kselftest_harness.h on the
 * fixture of ../lib/kdat_harness.h, within the harness's 30 s (the size
 * protocol, every ioctl's objects made four times over, 60 s), times
 * $KDAT_T_SLOW on a slow kernel. -l lists the cases; names as arguments
 * (or -t NAME) pick some.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <arpa/inet.h>
#include <sys/ioctl.h>

#include <netinet/in.h>

#include <linux/kdat.h>

#include "../lib/kdat_harness.h"
#include "kdat_util.h"

TEST_F(kdat, open_device)
{
	int fd = dev_open(_metadata);

	ASSERT_GE(fd, 0);
	ASSERT_EQ(0, close(fd));
}

TEST_F(kdat, query_abi)
{
	struct kdat_query q = { .size = sizeof(q) };
	int fd = dev_open(_metadata);

	ASSERT_EQ(0, kioctl(fd, KDAT_IOCTL_QUERY, &q));
	ASSERT_EQ(KDAT_ABI_VERSION, q.abi_version);
	q.flags = 1;
	ASSERT_EQ(-EOPNOTSUPP, kioctl(fd, KDAT_IOCTL_QUERY, &q));
	q.flags = 0;
	q.__reserved = 1;
	ASSERT_EQ(-EINVAL, kioctl(fd, KDAT_IOCTL_QUERY, &q));
}

TEST_F(kdat, device_list_finds_test_device)
{
	struct kdat_port_info ports[64];
	char name[KDAT_NAME_MAX];
	uint32_t nr, port, i;
	int fd = dev_open(_metadata), found = 0;

	test_port(_metadata, fd, name, &port);
	nr = list_ports(_metadata, fd, ports, 64);
	for (i = 0; i < nr; i++) {
		if (strcmp(ports[i].name, name) || ports[i].port_num != port)
			continue;
		found = 1;
		ASSERT_GE(ports[i].phys_port_cnt, port);
		ASSERT_EQ(KDAT_PORT_ACTIVE, ports[i].port_state);
		ASSERT_NE(0, ports[i].node_guid);
		ASSERT_GE(ports[i].active_mtu, 256);
		ASSERT_TRUE(ports[i].link_layer == KDAT_LINK_LAYER_ETHERNET ||
			    ports[i].link_layer == KDAT_LINK_LAYER_INFINIBAND);
		ASSERT_EQ(0, ports[i].__reserved);
	}
	ASSERT_TRUE(found);
}

TEST_F(kdat, device_list_too_small)
{
	struct kdat_device_list cmd = {
		.size = sizeof(cmd),
		.entry_size = sizeof(struct kdat_port_info),
	};
	struct kdat_port_info one[2];
	char name[KDAT_NAME_MAX];
	uint32_t nr, port;
	int fd = dev_open(_metadata);

	test_port(_metadata, fd, name, &port);
	/* Room for none: EMSGSIZE, and the count. */
	ASSERT_EQ(-EMSGSIZE, kioctl(fd, KDAT_IOCTL_DEVICE_LIST, &cmd));
	nr = cmd.num_entries;
	ASSERT_GE(nr, 1);
	/* Room for one: filled, and EMSGSIZE when there are more. */
	memset(one, 0xa5, sizeof(one));
	cmd.num_entries = 1;
	cmd.entries = (uintptr_t)one;
	ASSERT_EQ(-(nr > 1 ? EMSGSIZE : 0), kioctl(fd, KDAT_IOCTL_DEVICE_LIST,
						   &cmd));
	ASSERT_EQ(cmd.num_entries, nr);
	ASSERT_GE(one[0].port_num, 1);
	ASSERT_NE(NULL, memchr(one[0].name, '\0', sizeof(one[0].name)));
	/* The entry past the room is untouched. */
	ASSERT_EQ(0xa5a5a5a5, one[1].port_num);
}

TEST_F(kdat, device_list_entry_size)
{
	struct kdat_device_list cmd = { .size = sizeof(cmd) };
	unsigned char big[2][sizeof(struct kdat_port_info) + 32];
	char name[KDAT_NAME_MAX];
	uint32_t port;
	size_t i;
	int fd = dev_open(_metadata);

	test_port(_metadata, fd, name, &port);
	cmd.entry_size = sizeof(struct kdat_port_info) - 4;
	cmd.num_entries = 1;
	cmd.entries = (uintptr_t)big;
	ASSERT_EQ(-EINVAL, kioctl(fd, KDAT_IOCTL_DEVICE_LIST, &cmd));
	cmd.entry_size = 4097;
	ASSERT_EQ(-EINVAL, kioctl(fd, KDAT_IOCTL_DEVICE_LIST, &cmd));

	/* A longer entry than the kernel knows gets its tail zeroed. */
	memset(big, 0xff, sizeof(big));
	cmd.entry_size = sizeof(big[0]);
	cmd.num_entries = 1;
	ASSERT_TRUE(kioctl(fd, KDAT_IOCTL_DEVICE_LIST, &cmd) == 0 ||
		    errno == EMSGSIZE);
	for (i = sizeof(struct kdat_port_info); i < sizeof(big[0]); i++) {
		ASSERT_EQ(0, big[0][i]);
	}
	ASSERT_GE(((struct kdat_port_info *)big[0])->port_num, 1);
	/* Bad pointer: EFAULT. */
	cmd.entries = 8;
	ASSERT_EQ(-EFAULT, kioctl(fd, KDAT_IOCTL_DEVICE_LIST, &cmd));
	cmd.entries = 0;
	cmd.__reserved = 1;
	ASSERT_EQ(-EINVAL, kioctl(fd, KDAT_IOCTL_DEVICE_LIST, &cmd));
}

TEST_F(kdat, ia_open_close)
{
	char name[KDAT_NAME_MAX];
	struct kdat_ia_query q;
	uint32_t port, h;
	int fd = dev_open(_metadata), err;

	test_port(_metadata, fd, name, &port);
	h = ia_open(fd, name, port, &err);
	ASSERT_EQ(0, err);
	ASSERT_NE(0, h);
	ASSERT_EQ(0, ia_query(fd, h, &q));
	ASSERT_EQ(KDAT_IA_STATE_ACTIVE, q.state);
	ASSERT_EQ(q.port_num, port);
	ASSERT_STREQ(q.name, name);
	ASSERT_EQ(KDAT_PORT_ACTIVE, q.port_state);
	ASSERT_NE(0, q.node_guid);
	ASSERT_EQ(0, destroy(fd, h));
	ASSERT_EQ(-EBADF, ia_query(fd, h, &q));
}

/* A line "key: value" of @cmd's output, its value in @val; false if none. */
static bool cmd_value(struct __test_metadata *_metadata, const char *cmd,
		      const char *key, char *val, size_t n)
{
	char line[256], *p;
	bool found = false;
	FILE *f = popen(cmd, "r");

	ASSERT_NE(NULL, f);
	while (!found && fgets(line, sizeof(line), f)) {
		p = strstr(line, key);
		if (!p || p[strlen(key)] != ':')
			continue;
		p += strlen(key) + 1;
		p += strspn(p, " \t");
		snprintf(val, n, "%.*s", (int)strcspn(p, " \t\n("), p);
		found = true;
	}
	pclose(f);
	return found;
}

/*
 * The port's facts IA_QUERY gives past its first 184 bytes, each against
 * what rdma-core and sysfs say of the same port: the active MTU and the
 * device's atomics (ibv_devinfo), GID 0 (sysfs). A query of the old size
 * leaves them alone.
 */
TEST_F(kdat, ia_query_port_facts)
{
	char name[KDAT_NAME_MAX], cmd[160], val[64], want[64];
	struct kdat_ia_query q;
	uint32_t port, h;
	int fd = dev_open(_metadata), err, i;
	unsigned char old[216];
	FILE *f;

	test_port(_metadata, fd, name, &port);
	h = ia_open(fd, name, port, &err);
	ASSERT_EQ(0, err);
	ASSERT_EQ(0, ia_query(fd, h, &q));

	snprintf(cmd, sizeof(cmd), "ibv_devinfo -v -d %s -i %u 2>/dev/null",
		 name, port);
	if (!cmd_value(_metadata, cmd, "active_mtu", val, sizeof(val)))
		SKIP(return,
		     "ibv_devinfo gives no active_mtu (rdma-core missing)");
	TH_LOG("%s port %u: active_mtu %s, kdat %u", name, port, val,
	       q.active_mtu);
	ASSERT_EQ(strtoul(val, NULL, 10), q.active_mtu);
	ASSERT_TRUE(cmd_value(_metadata, cmd, "atomic_cap", val, sizeof(val)));
	TH_LOG("atomic_cap %s, kdat %u", val, q.atomic_cap);
	ASSERT_EQ(!strcmp(val, "ATOMIC_HCA") ? KDAT_ATOMIC_HCA :
		  !strcmp(val, "ATOMIC_GLOB") ? KDAT_ATOMIC_GLOB :
		  KDAT_ATOMIC_NONE, q.atomic_cap);

	snprintf(cmd, sizeof(cmd), "/sys/class/infiniband/%s/ports/%u/gids/0",
		 name, port);
	f = fopen(cmd, "r");
	ASSERT_NE(NULL, f);
	ASSERT_NE(NULL, fgets(want, sizeof(want), f));
	fclose(f);
	want[strcspn(want, "\n")] = 0;
	for (i = 0; i < 8; i++)
		snprintf(val + 5 * i, sizeof(val) - 5 * i, "%02x%02x%s",
			 q.gid[2 * i], q.gid[2 * i + 1], i < 7 ? ":" : "");
	TH_LOG("gid 0 %s, kdat %s", want, val);
	ASSERT_STREQ(val, want);

	/* An RDMA read's segments: the device's max_sge_rd, at most 32. */
	snprintf(cmd, sizeof(cmd), "ibv_devinfo -v -d %s -i %u 2>/dev/null",
		 name, port);
	ASSERT_TRUE(cmd_value(_metadata, cmd, "max_sge_rd", val, sizeof(val)));
	TH_LOG("max_sge_rd %s, kdat %u (sends %u)", val, q.max_read_sge,
	       q.max_send_sge);
	ASSERT_EQ(strtoul(val, NULL, 10) < q.max_send_sge ?
		  strtoul(val, NULL, 10) : q.max_send_sge, q.max_read_sge);
	/* What the transport lacks: iWARP (an RNIC) datagrams, immediates. */
	snprintf(cmd, sizeof(cmd), "/sys/class/infiniband/%s/node_type", name);
	f = fopen(cmd, "r");
	ASSERT_TRUE(f && fgets(want, sizeof(want), f));
	if (f)
		fclose(f);
	TH_LOG("node_type %.*s, limits %#x", (int)strcspn(want, "\n"), want,
	       q.limits);
	ASSERT_EQ(strstr(want, "RNIC") ? KDAT_IA_NO_UD | KDAT_IA_NO_IMM_DATA |
		  KDAT_IA_READ_SINK_REMOTE_WRITE : 0,
		  q.limits & (KDAT_IA_NO_UD | KDAT_IA_NO_IMM_DATA |
			      KDAT_IA_READ_SINK_REMOTE_WRITE));
	ASSERT_EQ(q.atomic_cap == KDAT_ATOMIC_NONE,
		  !!(q.limits & KDAT_IA_NO_ATOMICS));

	/* The first published size: the bytes past it are not written. */
	memset(old, 0xa5, sizeof(old));
	memcpy(old, &(struct kdat_ia_query){ .size = 184, .ia_handle = h },
	       184);
	ASSERT_EQ(0, kioctl(fd, KDAT_IOCTL_IA_QUERY, old));
	ASSERT_TRUE(old[184] == 0xa5 && old[215] == 0xa5);
	ASSERT_EQ(0, memcmp(old + offsetof(struct kdat_ia_query, max_qp),
			    &q.max_qp, sizeof(q.max_qp)));
	ASSERT_EQ(0, destroy(fd, h));
	close(fd);
}

TEST_F(kdat, ia_open_many)
{
	char name[KDAT_NAME_MAX];
	uint32_t port, h[16];
	int fd = dev_open(_metadata), err, i, j;

	test_port(_metadata, fd, name, &port);
	for (i = 0; i < 16; i++) {
		h[i] = ia_open(fd, name, port, &err);
		ASSERT_EQ(0, err);
		for (j = 0; j < i; j++) {
			ASSERT_NE(h[j], h[i]);
		}
	}
	/* Destroy every other one; the rest still answer. */
	for (i = 0; i < 16; i += 2) {
		ASSERT_EQ(0, destroy(fd, h[i]));
	}
	for (i = 1; i < 16; i += 2) {
		struct kdat_ia_query q;

		ASSERT_EQ(0, ia_query(fd, h[i], &q));
		ASSERT_EQ(-EBADF, ia_query(fd, h[i - 1], &q));
	}
	/* The rest go with the file. */
}

TEST_F(kdat, ia_open_unknown_device)
{
	int fd = dev_open(_metadata), err;

	ia_open(fd, "no-such-rdma-dev", 1, &err);
	ASSERT_EQ(-ENODEV, err);
	ia_open(fd, "", 1, &err);
	ASSERT_EQ(-ENODEV, err);
}

TEST_F(kdat, ia_open_bad_port)
{
	char name[KDAT_NAME_MAX];
	uint32_t port;
	int fd = dev_open(_metadata), err;

	test_port(_metadata, fd, name, &port);
	ia_open(fd, name, 0, &err);
	ASSERT_EQ(-EINVAL, err);
	ia_open(fd, name, 200, &err);
	ASSERT_EQ(-EINVAL, err);
	ia_open(fd, name, 0xffffffff, &err);
	ASSERT_EQ(-EINVAL, err);
}

TEST_F(kdat, ia_open_bad_args)
{
	struct kdat_ia_open cmd = { .size = sizeof(cmd) };
	char name[KDAT_NAME_MAX];
	uint32_t port;
	int fd = dev_open(_metadata);

	test_port(_metadata, fd, name, &port);
	/* Name without its NUL. */
	memset(cmd.name, 'x', sizeof(cmd.name));
	cmd.port_num = port;
	ASSERT_EQ(-EINVAL, kioctl(fd, KDAT_IOCTL_IA_OPEN, &cmd));
	/* Unknown flag. */
	strcpy(cmd.name, name);
	cmd.flags = 0x80;
	ASSERT_EQ(-EOPNOTSUPP, kioctl(fd, KDAT_IOCTL_IA_OPEN, &cmd));
	ASSERT_EQ(0, cmd.out_ia_handle);
}

TEST_F(kdat, double_close)
{
	int fd = dev_open(_metadata);
	uint32_t h = ia_open_ok(_metadata, fd);

	ASSERT_EQ(0, destroy(fd, h));
	ASSERT_EQ(-EBADF, destroy(fd, h));
	ASSERT_EQ(-EBADF, destroy(fd, 0));
	ASSERT_EQ(-EBADF, destroy(fd, 0xffffffff));
}

TEST_F(kdat, foreign_handle_refused)
{
	int fd1 = dev_open(_metadata), fd2 = dev_open(_metadata);
	uint32_t h1 = ia_open_ok(_metadata, fd1);
	uint32_t h2 = ia_open_ok(_metadata, fd2);
	struct kdat_ia_query q;

	ASSERT_NE(h1, h2);
	ASSERT_EQ(-EBADF, ia_query(fd2, h1, &q));
	ASSERT_EQ(-EBADF, destroy(fd2, h1));
	ASSERT_EQ(-EBADF, ia_query(fd1, h2, &q));
	/* Neither file's object was disturbed. */
	ASSERT_EQ(0, ia_query(fd1, h1, &q));
	ASSERT_EQ(KDAT_IA_STATE_ACTIVE, q.state);
	ASSERT_EQ(0, ia_query(fd2, h2, &q));
	/* Closing one file leaves the other's objects. */
	ASSERT_EQ(0, close(fd1));
	ASSERT_EQ(0, ia_query(fd2, h2, &q));
	ASSERT_EQ(-EBADF, ia_query(fd2, h1, &q));
	ASSERT_EQ(0, destroy(fd2, h2));
}

/*
 * The size protocol, for every ioctl. Each entry builds a valid struct of
 * the command (one that succeeds) in a buffer larger than the struct.
 */
struct size_case {
	const char *name;
	unsigned long cmd;
	size_t size;
	size_t min_size;
	int (*fill)(struct __test_metadata *_metadata, int fd, void *buf);
};

static int fill_query(struct __test_metadata *_metadata
		      __attribute__((unused)),
		      int fd __attribute__((unused)),
		      void *buf __attribute__((unused)))
{
	return 0;
}

static int fill_device_list(struct __test_metadata *_metadata
			    __attribute__((unused)),
			    int fd __attribute__((unused)), void *buf)
{
	struct kdat_device_list *c = buf;
	static struct kdat_port_info ports[64];

	c->entry_size = sizeof(ports[0]);
	c->num_entries = 64;
	c->entries = (uintptr_t)ports;
	return 0;
}

static int fill_ia_open(struct __test_metadata *_metadata, int fd, void *buf)
{
	struct kdat_ia_open *c = buf;
	char name[KDAT_NAME_MAX];
	uint32_t port;

	test_port(_metadata, fd, name, &port);
	strcpy(c->name, name);
	c->port_num = port;
	return 0;
}

static int fill_ia_query(struct __test_metadata *_metadata, int fd, void *buf)
{
	struct kdat_ia_query *c = buf;

	c->ia_handle = ia_open_ok(_metadata, fd);
	return 0;
}

static int fill_destroy(struct __test_metadata *_metadata, int fd, void *buf)
{
	struct kdat_destroy *c = buf;

	c->handle = ia_open_ok(_metadata, fd);
	return 0;
}

/*
 * KDAT_DESTROY_IA_ALL: an IA with everything built on it, and nothing of
 * another IA; refused while another IA's EP uses one of its EVDs.
 */
TEST_F(kdat, destroy_ia_all)
{
	int fd = dev_open(_metadata);
	struct kdat_ep_create c = { .size = sizeof(c) };
	struct kdat_ia_query q;
	uint32_t ia1, ia2, pz1, evd1, conn1, ep1, ep2;

	ia1 = pz_ia(_metadata, fd, &pz1);
	ia2 = pz_ia(_metadata, fd, &c.pz_handle);
	evd1 = mk_evd(_metadata, fd, ia1, KDAT_EVD_DTO);
	conn1 = mk_evd(_metadata, fd, ia1, KDAT_EVD_CONNECTION);
	/* IA 2's EP on IA 1's EVDs. */
	c.recv_evd_handle = evd1;
	c.request_evd_handle = evd1;
	c.connect_evd_handle = conn1;
	c.attr.max_recv_dtos = 4;
	c.attr.max_request_dtos = 4;
	ep2 = mk(_metadata, fd, KDAT_IOCTL_EP_CREATE, &c, &c.out_ep_handle);
	c.pz_handle = pz1;
	ep1 = mk(_metadata, fd, KDAT_IOCTL_EP_CREATE, &c, &c.out_ep_handle);

	ASSERT_EQ(-EINVAL, destroy_flags(fd, ia1, 2, 0));
	ASSERT_EQ(-EINVAL, destroy_flags(fd, ia1, KDAT_DESTROY_IA_ALL, 1));
	ASSERT_EQ(-EBADF, destroy_flags(fd, pz1, KDAT_DESTROY_IA_ALL, 0));
	ASSERT_EQ(-EBUSY, destroy(fd, ia1));
	ASSERT_EQ(-EBUSY, destroy_flags(fd, ia1, KDAT_DESTROY_IA_ALL, 0));
	/* Refused: every object is still there. */
	ASSERT_EQ(0, ia_query(fd, ia1, &q));
	ASSERT_EQ(0, destroy(fd, ep2));
	ASSERT_EQ(0, destroy_flags(fd, ia1, KDAT_DESTROY_IA_ALL, 0));
	ASSERT_EQ(-EBADF, ia_query(fd, ia1, &q));
	ASSERT_EQ(-EBADF, destroy(fd, ep1));
	ASSERT_EQ(-EBADF, destroy(fd, evd1));
	ASSERT_EQ(-EBADF, destroy(fd, pz1));
	/* IA 2 is whole and goes the same way. */
	ASSERT_EQ(0, ia_query(fd, ia2, &q));
	ASSERT_EQ(-EBUSY, destroy(fd, ia2));
	ASSERT_EQ(0, destroy_flags(fd, ia2, KDAT_DESTROY_IA_ALL, 0));
	ASSERT_EQ(-EBADF, destroy(fd, c.pz_handle));
	ASSERT_EQ(0, close(fd));
}

/*
 * An EP without a connection EVD (connect_evd_handle 0: DAT_HANDLE_NULL)
 * is made and never connects: a connect answers EBADF, in the kernel as
 * in libdat (an accept too: kdat_hostile_test's
 * accept_without_connect_evd); an RSP of it is made, as OFA's provider
 * makes one. A DTO EVD as its connection EVD is EINVAL, an unknown
 * handle EBADF. It goes with its IA.
 */
TEST_F(kdat, ep_no_connect_evd)
{
	int fd = dev_open(_metadata);
	struct kdat_ep_create c = { .size = sizeof(c) };
	struct kdat_ep_connect cc = { .size = sizeof(cc), .conn_qual = 7471,
				      .timeout_us = 1000000 };
	struct kdat_psp_create r = { .size = sizeof(r), .conn_qual = 7472 };
	uint32_t ia, ep;

	ia = pz_ia(_metadata, fd, &c.pz_handle);
	c.recv_evd_handle = mk_evd(_metadata, fd, ia, KDAT_EVD_DTO);
	c.request_evd_handle = c.recv_evd_handle;
	c.attr.max_recv_dtos = 4;
	c.attr.max_request_dtos = 4;
	c.connect_evd_handle = c.recv_evd_handle;
	ASSERT_EQ(-EINVAL, kioctl(fd, KDAT_IOCTL_EP_CREATE, &c));
	c.connect_evd_handle = 0xdead;
	ASSERT_EQ(-EBADF, kioctl(fd, KDAT_IOCTL_EP_CREATE, &c));
	c.connect_evd_handle = 0;
	ep = mk(_metadata, fd, KDAT_IOCTL_EP_CREATE, &c, &c.out_ep_handle);

	cc.ep_handle = ep;
	cc.remote.family = AF_INET;
	ASSERT_EQ(1, inet_pton(AF_INET, "127.0.0.1", cc.remote.addr));
	ASSERT_EQ(-EBADF, kioctl(fd, KDAT_IOCTL_EP_CONNECT, &cc));
	r.ia_handle = ia;
	r.evd_handle = mk_evd(_metadata, fd, ia, KDAT_EVD_CR);
	r.rsp_ep_handle = ep;
	ASSERT_EQ(0, kioctl(fd, KDAT_IOCTL_PSP_CREATE, &r));
	ASSERT_EQ(0, destroy_flags(fd, ia, KDAT_DESTROY_IA_ALL, 0));
	ASSERT_EQ(-EBADF, destroy(fd, ep));
	ASSERT_EQ(0, close(fd));
}

/*
 * Each fill returns what the valid call answers: 0, or the errno of the
 * command's own semantics where a success needs a peer (an empty EVD,
 * no connection request to answer).
 */
static int fill_pz_create(struct __test_metadata *_metadata, int fd, void *buf)
{
	((struct kdat_pz_create *)buf)->ia_handle = ia_open_ok(_metadata, fd);
	return 0;
}

static int fill_lmr_create(struct __test_metadata *_metadata, int fd, void *buf)
{
	static char mem[8192] __attribute__((aligned(4096)));
	struct kdat_lmr_create *c = buf;

	c->pz_handle = mk_pz(_metadata, fd);
	c->addr = (uintptr_t)mem;
	c->length = sizeof(mem);
	c->mem_priv = KDAT_MEM_PRIV_ALL;
	return 0;
}

static int fill_evd_create(struct __test_metadata *_metadata, int fd, void *buf)
{
	struct kdat_evd_create *c = buf;

	c->ia_handle = ia_open_ok(_metadata, fd);
	c->qlen = 16;
	c->evd_flags = KDAT_EVD_DTO;
	return 0;
}

static int fill_evd_wait(struct __test_metadata *_metadata, int fd, void *buf)
{
	static struct kdat_event ev[4];
	struct kdat_evd_wait *c = buf;

	c->evd_handle = mk_evd(_metadata, fd, ia_open_ok(_metadata, fd),
			       KDAT_EVD_DTO);
	c->max_events = 4;
	c->events = (uintptr_t)ev;
	return EAGAIN;	/* nothing queued */
}

static int fill_ep_create(struct __test_metadata *_metadata, int fd, void *buf)
{
	struct kdat_ep_create *c = buf;
	uint32_t ia = pz_ia(_metadata, fd, &c->pz_handle);

	c->recv_evd_handle = mk_evd(_metadata, fd, ia, KDAT_EVD_DTO);
	c->request_evd_handle = mk_evd(_metadata, fd, ia, KDAT_EVD_DTO);
	c->connect_evd_handle = mk_evd(_metadata, fd, ia, KDAT_EVD_CONNECTION);
	c->attr.max_recv_dtos = 4;
	c->attr.max_request_dtos = 4;
	return 0;
}

/*
 * An RC EP's transport timers (struct kdat_ep_timers): those named in
 * set are taken, the others are kdat's defaults (what an EP that names
 * none gets), and the create and a query give all of them back, set
 * saying so. A value out of range or under the floors any user meets,
 * a field not in set or a reserved field not 0 is EINVAL, an unknown bit
 * in set EOPNOTSUPP, and no EP is made.
 */
TEST_F(kdat, ep_timers)
{
	int fd = dev_open(_metadata);
	struct kdat_ep_create c = { .size = sizeof(c) }, d;
	struct kdat_ep_query q = { .size = sizeof(q) };
	struct kdat_ep_timers t;
	uint32_t ep;

	fill_ep_create(_metadata, fd, &c);
	d = c;
	mk(_metadata, fd, KDAT_IOCTL_EP_CREATE, &d, &d.out_ep_handle);
	ASSERT_EQ(KDAT_EP_TIMER_ALL, d.timers.set);

	c.timers.set = KDAT_EP_TIMER_RNR_TIMER | KDAT_EP_TIMER_KEEPALIVE;
	c.timers.rnr_timer = 20;
	c.timers.keepalive_ms = 0;
	/* A field not in set is 0. */
	c.timers.ack_timeout = 9;
	ASSERT_EQ(-EINVAL, kioctl(fd, KDAT_IOCTL_EP_CREATE, &c));
	c.timers.ack_timeout = 0;
	t = c.timers;
	ep = mk(_metadata, fd, KDAT_IOCTL_EP_CREATE, &c, &c.out_ep_handle);
	ASSERT_EQ(KDAT_EP_TIMER_ALL, c.timers.set);
	ASSERT_EQ(20, c.timers.rnr_timer);
	ASSERT_EQ(0, c.timers.keepalive_ms);
	ASSERT_EQ(d.timers.ack_timeout, c.timers.ack_timeout);
	ASSERT_EQ(d.timers.retry_count, c.timers.retry_count);
	q.ep_handle = ep;
	ASSERT_EQ(0, kioctl(fd, KDAT_IOCTL_EP_QUERY, &q));
	ASSERT_EQ(0, memcmp(&q.timers, &c.timers, sizeof(q.timers)));

	/* Each limit, then one past it. */
	c.timers = t;
	c.timers.set = KDAT_EP_TIMER_ALL;
	c.timers.ack_timeout = 31;
	c.timers.retry_count = 7;
	c.timers.rnr_timer = 31;
	c.timers.keepalive_ms = 0xffffffff;
	t = c.timers;
	mk(_metadata, fd, KDAT_IOCTL_EP_CREATE, &c, &c.out_ep_handle);
	ASSERT_EQ(0, memcmp(&t, &c.timers, sizeof(t)));
	c.timers = t;
	c.timers.ack_timeout = 32;
	ASSERT_EQ(-EINVAL, kioctl(fd, KDAT_IOCTL_EP_CREATE, &c));
	c.timers = t;
	c.timers.retry_count = 8;
	ASSERT_EQ(-EINVAL, kioctl(fd, KDAT_IOCTL_EP_CREATE, &c));
	c.timers = t;
	c.timers.rnr_timer = 32;
	ASSERT_EQ(-EINVAL, kioctl(fd, KDAT_IOCTL_EP_CREATE, &c));
	/* The floors any user meets: 1 ms, 100 ms; 0 is allowed. */
	c.timers = t;
	c.timers.ack_timeout = 7;
	ASSERT_EQ(-EINVAL, kioctl(fd, KDAT_IOCTL_EP_CREATE, &c));
	c.timers = t;
	c.timers.keepalive_ms = 99;
	ASSERT_EQ(-EINVAL, kioctl(fd, KDAT_IOCTL_EP_CREATE, &c));
	c.timers = t;
	c.timers.ack_timeout = 0;
	c.timers.keepalive_ms = 0;
	mk(_metadata, fd, KDAT_IOCTL_EP_CREATE, &c, &c.out_ep_handle);
	ASSERT_EQ(0, c.timers.ack_timeout);
	ASSERT_EQ(0, c.timers.keepalive_ms);
	c.timers = t;
	c.timers.__reserved = 1;
	ASSERT_EQ(-EINVAL, kioctl(fd, KDAT_IOCTL_EP_CREATE, &c));
	c.timers = t;
	c.timers.set |= 1U << 4;
	ASSERT_EQ(-EOPNOTSUPP, kioctl(fd, KDAT_IOCTL_EP_CREATE, &c));
	ASSERT_EQ(0, close(fd));
}

static int fill_ep_handle(struct __test_metadata *_metadata, int fd, void *buf)
{
	((struct kdat_ep_query *)buf)->ep_handle = mk_ep(_metadata, fd);
	return 0;
}

static int fill_ep_disconnect(struct __test_metadata *_metadata, int fd,
			      void *buf)
{
	((struct kdat_ep_handle_cmd *)buf)->ep_handle = mk_ep(_metadata, fd);
	return EBUSY;	/* not connected */
}

static int fill_ep_connect(struct __test_metadata *_metadata, int fd, void *buf)
{
	struct kdat_ep_connect *c = buf;

	c->ep_handle = mk_ep(_metadata, fd);
	c->remote.family = AF_INET;
	c->remote.addr[0] = 127;
	c->remote.addr[3] = 1;
	c->conn_qual = 9;
	c->timeout_us = 1000;
	return 0;	/* started; the outcome is an event */
}

static int fill_psp_create(struct __test_metadata *_metadata, int fd, void *buf)
{
	static uint16_t qual;
	struct kdat_psp_create *c = buf;

	c->ia_handle = ia_open_ok(_metadata, fd);
	c->evd_handle = mk_evd(_metadata, fd, c->ia_handle, KDAT_EVD_CR);
	c->conn_qual = 30000 + (getpid() % 1000) * 16 + qual++ % 16;
	return 0;
}

static int fill_cr(struct __test_metadata *_metadata, int fd, void *buf)
{
	/* A handle that is no CR: the command looks it up and refuses. */
	((struct kdat_cr_query *)buf)->cr_handle = ia_open_ok(_metadata, fd);
	return EBADF;
}

static int fill_post(struct __test_metadata *_metadata, int fd, void *buf)
{
	struct kdat_post *c = buf;

	c->ep_handle = mk_ep(_metadata, fd);
	c->op = KDAT_DTO_RECEIVE;	/* 0 bytes, UNCONNECTED: allowed */
	return 0;
}

static int fill_srq_create(struct __test_metadata *_metadata, int fd, void *buf)
{
	struct kdat_srq_create *c = buf;

	c->pz_handle = mk_pz(_metadata, fd);
	c->max_recv_dtos = 4;
	return 0;
}

static int fill_srq_set_lw(struct __test_metadata *_metadata, int fd, void *buf)
{
	struct kdat_srq_create c = { .size = sizeof(c), .max_recv_dtos = 4 };

	c.pz_handle = mk_pz(_metadata, fd);
	((struct kdat_srq_set_lw *)buf)->srq_handle =
		mk(_metadata, fd, KDAT_IOCTL_SRQ_CREATE, &c, &c.out_srq_handle);
	return 0;
}

static int fill_cno_create(struct __test_metadata *_metadata, int fd, void *buf)
{
	((struct kdat_cno_create *)buf)->ia_handle = ia_open_ok(_metadata, fd);
	return 0;
}

static int fill_cno_wait(struct __test_metadata *_metadata, int fd, void *buf)
{
	((struct kdat_cno_wait *)buf)->cno_handle =
		mk_cno(_metadata, fd, ia_open_ok(_metadata, fd));
	return ETIMEDOUT;	/* nothing triggers it */
}

static int fill_cno_agent(struct __test_metadata *_metadata, int fd, void *buf)
{
	struct kdat_cno_agent *c = buf;

	c->cno_handle = mk_cno(_metadata, fd, ia_open_ok(_metadata, fd));
	c->op = KDAT_CNO_AGENT_DISARM;
	return 0;
}

static int fill_evd_modify_cno(struct __test_metadata *_metadata, int fd,
			       void *buf)
{
	struct kdat_evd_modify_cno *c = buf;
	uint32_t ia = ia_open_ok(_metadata, fd);

	c->evd_handle = mk_evd(_metadata, fd, ia, KDAT_EVD_DTO);
	c->cno_handle = mk_cno(_metadata, fd, ia);
	return 0;
}

static int fill_rmr_create(struct __test_metadata *_metadata, int fd, void *buf)
{
	((struct kdat_rmr_create *)buf)->pz_handle = mk_pz(_metadata, fd);
	return 0;
}

static int fill_rmr_bind(struct __test_metadata *_metadata, int fd, void *buf)
{
	struct kdat_rmr_create c = { .size = sizeof(c) };
	struct kdat_rmr_bind *b = buf;

	c.pz_handle = mk_pz(_metadata, fd);
	b->rmr_handle = mk(_metadata, fd, KDAT_IOCTL_RMR_CREATE, &c,
			   &c.out_rmr_handle);
	b->ep_handle = mk_ep(_metadata, fd);
	return EPERM;	/* the EP is of another PZ: refused, checked */
}

static int fill_evd_post_se(struct __test_metadata *_metadata, int fd,
			    void *buf)
{
	((struct kdat_evd_post_se *)buf)->evd_handle =
		mk_evd(_metadata, fd, ia_open_ok(_metadata, fd),
		       KDAT_EVD_SOFTWARE);
	return 0;
}

static int fill_evd_modify(struct __test_metadata *_metadata, int fd, void *buf)
{
	struct kdat_evd_modify *c = buf;

	c->evd_handle = mk_evd(_metadata, fd, ia_open_ok(_metadata, fd),
			       KDAT_EVD_DTO);
	c->op = KDAT_EVD_OP_DISABLE;
	return 0;
}

static int fill_srq_resize(struct __test_metadata *_metadata, int fd, void *buf)
{
	struct kdat_srq_create c = { .size = sizeof(c), .max_recv_dtos = 4 };
	struct kdat_srq_resize *r = buf;

	c.pz_handle = mk_pz(_metadata, fd);
	r->srq_handle = mk(_metadata, fd, KDAT_IOCTL_SRQ_CREATE, &c,
			   &c.out_srq_handle);
	r->max_recv_dtos = 8;
	return 0;
}

static int fill_ep_modify(struct __test_metadata *_metadata, int fd, void *buf)
{
	struct kdat_ep_modify *c = buf;

	c->ep_handle = mk_ep(_metadata, fd);
	c->mask = KDAT_EP_MODIFY_COMPLETION_FLAGS;
	return 0;
}

static int fill_ring_create(struct __test_metadata *_metadata, int fd,
			    void *buf)
{
	struct kdat_ring_create *c = buf;

	/* Get-or-create: every call of the protocol test answers 0. */
	c->handle = mk_ep(_metadata, fd);
	c->kind = KDAT_RING_SEND;
	return 0;
}

static int fill_ring_wake(struct __test_metadata *_metadata, int fd, void *buf)
{
	(void)_metadata;
	(void)fd;
	(void)buf;
	return 0;
}

static int fill_ah_query(struct __test_metadata *_metadata, int fd, void *buf)
{
	/* An EP is no AH: refused as such, past the size checks. */
	((struct kdat_ah_query *)buf)->ah_handle = mk_ep(_metadata, fd);
	return EBADF;
}

#define END(s, m) (offsetof(s, m) + sizeof(((s *)0)->m))
#define SC(n, s, last, fill)						\
	{ #n, KDAT_IOCTL_##n, sizeof(s), END(s, last), fill }
static const struct size_case size_cases[] = {
	{ "QUERY", KDAT_IOCTL_QUERY, sizeof(struct kdat_query),
	  END(struct kdat_query, __reserved), fill_query },
	{ "DEVICE_LIST", KDAT_IOCTL_DEVICE_LIST,
	  sizeof(struct kdat_device_list),
	  END(struct kdat_device_list, entries), fill_device_list },
	{ "IA_OPEN", KDAT_IOCTL_IA_OPEN, sizeof(struct kdat_ia_open),
	  END(struct kdat_ia_open, out_ia_handle), fill_ia_open },
	{ "IA_QUERY", KDAT_IOCTL_IA_QUERY, sizeof(struct kdat_ia_query),
	  END(struct kdat_ia_query, __reserved), fill_ia_query },
	{ "DESTROY", KDAT_IOCTL_DESTROY, sizeof(struct kdat_destroy),
	  END(struct kdat_destroy, handle), fill_destroy },
	SC(PZ_CREATE, struct kdat_pz_create, out_pz_handle, fill_pz_create),
	SC(LMR_CREATE, struct kdat_lmr_create, __reserved, fill_lmr_create),
	/* Grew from 24 bytes: the first published size still works. */
	SC(EVD_CREATE, struct kdat_evd_create, out_qlen, fill_evd_create),
	SC(EVD_WAIT, struct kdat_evd_wait, out_nmore, fill_evd_wait),
	SC(EP_CREATE, struct kdat_ep_create, srq_handle, fill_ep_create),
	SC(EP_QUERY, struct kdat_ep_query, __reserved, fill_ep_handle),
	SC(EP_CONNECT, struct kdat_ep_connect, flags, fill_ep_connect),
	SC(EP_DISCONNECT, struct kdat_ep_handle_cmd, __reserved,
	   fill_ep_disconnect),
	SC(EP_RESET, struct kdat_ep_handle_cmd, __reserved, fill_ep_handle),
	SC(PSP_CREATE, struct kdat_psp_create, rsp_ep_handle, fill_psp_create),
	SC(CR_QUERY, struct kdat_cr_query, __reserved, fill_cr),
	SC(CR_ACCEPT, struct kdat_cr_reply, private_data, fill_cr),
	SC(CR_REJECT, struct kdat_cr_reply, private_data, fill_cr),
	/* Grew from 64 bytes (IB extensions): 64 still works. */
	SC(POST, struct kdat_post, remote, fill_post),
	SC(SRQ_CREATE, struct kdat_srq_create, __reserved, fill_srq_create),
	SC(SRQ_SET_LW, struct kdat_srq_set_lw, __reserved, fill_srq_set_lw),
	SC(CNO_CREATE, struct kdat_cno_create, out_cno_handle,
	   fill_cno_create),
	SC(CNO_WAIT, struct kdat_cno_wait, __reserved, fill_cno_wait),
	SC(EVD_MODIFY_CNO, struct kdat_evd_modify_cno, __reserved,
	   fill_evd_modify_cno),
	SC(RMR_CREATE, struct kdat_rmr_create, out_rmr_handle,
	   fill_rmr_create),
	SC(RMR_BIND, struct kdat_rmr_bind, out_flags, fill_rmr_bind),
	SC(EVD_POST_SE, struct kdat_evd_post_se, pointer, fill_evd_post_se),
	SC(EVD_MODIFY, struct kdat_evd_modify, qlen, fill_evd_modify),
	SC(SRQ_RESIZE, struct kdat_srq_resize, __reserved, fill_srq_resize),
	SC(EP_MODIFY, struct kdat_ep_modify, attr, fill_ep_modify),
	SC(RING_CREATE, struct kdat_ring_create, out_off, fill_ring_create),
	SC(RING_WAKE, struct kdat_ring_wake, flags, fill_ring_wake),
	SC(AH_QUERY, struct kdat_ah_query, private_data, fill_ah_query),
	SC(CNO_AGENT, struct kdat_cno_agent, __reserved, fill_cno_agent),
};

static void size_protocol_one(struct __test_metadata *_metadata,
			      const struct size_case *sc)
{
	union {
		unsigned char b[512];
		uint32_t size;
		uint64_t align;
	} buf;
	int fd = dev_open(_metadata);
	int want;

	TH_LOG("ioctl %s", sc->name);
	/* NULL and unmapped argument. */
	ASSERT_EQ(-EFAULT, kioctl(fd, sc->cmd, NULL));
	ASSERT_EQ(-EFAULT, kioctl(fd, sc->cmd, (void *)8));

	/* Too small: 0, 4, one byte short of the first published size. */
	memset(&buf, 0, sizeof(buf));
	sc->fill(_metadata, fd, &buf);
	buf.size = 0;
	ASSERT_EQ(-EINVAL, kioctl(fd, sc->cmd, &buf));
	buf.size = 4;
	ASSERT_EQ(-EINVAL, kioctl(fd, sc->cmd, &buf));
	buf.size = sc->min_size - 1;
	ASSERT_EQ(-EINVAL, kioctl(fd, sc->cmd, &buf));

	/* Larger, non-zero tail: E2BIG, even far out. */
	buf.size = sc->size + 8;
	buf.b[sc->size + 3] = 1;
	ASSERT_EQ(-E2BIG, kioctl(fd, sc->cmd, &buf));
	buf.b[sc->size + 3] = 0;
	buf.size = sizeof(buf);
	buf.b[sizeof(buf) - 1] = 1;
	ASSERT_EQ(-E2BIG, kioctl(fd, sc->cmd, &buf));
	buf.b[sizeof(buf) - 1] = 0;

	/* Larger, zero tail: works, and the tail stays zero. */
	memset(&buf, 0, sizeof(buf));
	want = sc->fill(_metadata, fd, &buf);
	buf.size = sc->size + 8;
	ASSERT_EQ(-want, kioctl(fd, sc->cmd, &buf));
	ASSERT_EQ(0, memcmp(buf.b + sc->size, "\0\0\0\0\0\0\0\0", 8));
	/* Exact size: works. */
	memset(&buf, 0, sizeof(buf));
	want = sc->fill(_metadata, fd, &buf);
	buf.size = sc->size;
	ASSERT_EQ(-want, kioctl(fd, sc->cmd, &buf));
	/* The first published size: works too. */
	memset(&buf, 0, sizeof(buf));
	want = sc->fill(_metadata, fd, &buf);
	buf.size = sc->min_size;
	ASSERT_EQ(-want, kioctl(fd, sc->cmd, &buf));
	close(fd);
}

TEST_F_TIMEOUT(kdat, size_protocol, 60)
{
	size_t i;

	for (i = 0; i < sizeof(size_cases) / sizeof(size_cases[0]); i++)
		size_protocol_one(_metadata, &size_cases[i]);
}

/*
 * struct kdat_post's IB extension arguments (appended past its first
 * published size, 64 bytes), and which ops it takes: what each op may
 * carry is checked before anything else of the DTO. The EP is
 * UNCONNECTED, where a good send-queue DTO answers EBUSY and a receive
 * is taken, so every other answer is a check's.
 */
struct post_ext_case {
	const char *name;
	uint32_t op;
	uint32_t num;
	uint64_t seg_len, remote_off;
	struct kdat_dto_ext ext;
	bool read_only_lmr;
	int want;		/* on a device with atomics */
};

#define ATOMIC_OK	EBUSY	/* accepted, refused for the state only */

static const struct post_ext_case post_ext_cases[] = {
	{ "receive", KDAT_DTO_RECEIVE, 1, 64, 0, {}, false, 0 },
	{ "receive, imm set", KDAT_DTO_RECEIVE, 1, 64, 0,
	  { .imm_data = 1 }, false, EINVAL },
	{ "receive, AH set", KDAT_DTO_RECEIVE, 1, 64, 0,
	  { .ah_handle = 1 }, false, EINVAL },
	{ "send, compare set", KDAT_DTO_SEND, 1, 64, 0,
	  { .compare_add = 1 }, false, EINVAL },
	{ "write, swap set", KDAT_DTO_RDMA_WRITE, 1, 64, 0, { .swap = 1 },
	  false, EINVAL },
	{ "read, imm set", KDAT_DTO_RDMA_READ, 1, 64, 0, { .imm_data = 9 },
	  false, EINVAL },
	{ "write imm", KDAT_DTO_RDMA_WRITE_IMM, 1, 64, 3,
	  { .imm_data = 0xdeadbeef }, false, EBUSY },
	{ "write imm, no segment", KDAT_DTO_RDMA_WRITE_IMM, 0, 0, 0,
	  { .imm_data = 1 }, false, EBUSY },
	{ "write imm, add set", KDAT_DTO_RDMA_WRITE_IMM, 1, 64, 0,
	  { .compare_add = 1 }, false, EINVAL },
	{ "fetch-add", KDAT_DTO_FETCH_ADD, 1, 8, 8, { .compare_add = 3 },
	  false, ATOMIC_OK },
	{ "cmp-swap", KDAT_DTO_CMP_SWAP, 1, 8, 16,
	  { .compare_add = 3, .swap = 4 }, false, ATOMIC_OK },
	{ "fetch-add, swap set", KDAT_DTO_FETCH_ADD, 1, 8, 0, { .swap = 1 },
	  false, EINVAL },
	{ "cmp-swap, imm set", KDAT_DTO_CMP_SWAP, 1, 8, 0, { .imm_data = 1 },
	  false, EINVAL },
	{ "cmp-swap, 4 bytes", KDAT_DTO_CMP_SWAP, 1, 4, 0, {}, false,
	  EINVAL },
	{ "fetch-add, 16 bytes", KDAT_DTO_FETCH_ADD, 1, 16, 0, {}, false,
	  EINVAL },
	{ "fetch-add, 2 segments", KDAT_DTO_FETCH_ADD, 2, 8, 0, {}, false,
	  EINVAL },
	{ "fetch-add, remote off by 4", KDAT_DTO_FETCH_ADD, 1, 8, 4, {},
	  false, EINVAL },
	{ "cmp-swap, local read only", KDAT_DTO_CMP_SWAP, 1, 8, 0, {}, true,
	  EACCES },
	{ "completion-only op 9", KDAT_DTO_RECV_RDMA_IMM, 1, 64, 0, {},
	  false, EINVAL },
	{ "completion-only op 12", KDAT_DTO_RECV_MSG_IMM, 1, 64, 0, {},
	  false, EINVAL },
	{ "op 5", 5, 1, 64, 0, {}, false, EINVAL },
	{ "op 7", 7, 1, 64, 0, {}, false, EINVAL },
	/* A datagram on this RC EP: a handle of the wrong type. */
	{ "datagram on an RC EP", KDAT_DTO_SEND_UD, 1, 64, 0,
	  { .ah_handle = 1 }, false, EBADF },
	{ "datagram on an RC EP, no AH", KDAT_DTO_SEND_UD, 1, 64, 0, {}, false,
	  EBADF },
	{ "completion-only op 14", KDAT_DTO_RECV_UD, 1, 64, 0, {}, false,
	  EINVAL },
	{ "completion-only op 15", KDAT_DTO_RECV_UD_IMM, 1, 64, 0, {}, false,
	  EINVAL },
	{ "op 16", 16, 1, 64, 0, {}, false, EINVAL },
	{ "op 255", 255, 1, 64, 0, {}, false, EINVAL },
};

TEST_F(kdat, post_ext_args)
{
	static uint64_t mem[512] __attribute__((aligned(4096)));
	struct kdat_lmr_create l = {
		.size = sizeof(l), .addr = (uintptr_t)mem,
		.length = sizeof(mem) / 2,
		.mem_priv = KDAT_MEM_PRIV_ALL | KDAT_MEM_PRIV_REMOTE_ATOMIC,
	};
	struct kdat_ep_create e = { .size = sizeof(e) };
	int fd = dev_open(_metadata), want;
	uint32_t ia, rw_ctx, ro_ctx;
	struct kdat_ia_query q;
	bool atomics;
	size_t i;

	ia = pz_ia(_metadata, fd, &e.pz_handle);
	ASSERT_EQ(0, ia_query(fd, ia, &q));
	atomics = q.atomic_cap != KDAT_ATOMIC_NONE;
	TH_LOG("atomic_cap %u", q.atomic_cap);
	e.recv_evd_handle = mk_evd(_metadata, fd, ia, KDAT_EVD_DTO);
	e.request_evd_handle = e.recv_evd_handle;
	e.connect_evd_handle = mk_evd(_metadata, fd, ia, KDAT_EVD_CONNECTION);
	e.attr.max_recv_dtos = 64;
	e.attr.max_request_dtos = 4;
	e.attr.max_recv_iov = 2;
	e.attr.max_request_iov = 2;
	mk(_metadata, fd, KDAT_IOCTL_EP_CREATE, &e, &e.out_ep_handle);
	l.pz_handle = e.pz_handle;
	rw_ctx = mk(_metadata, fd, KDAT_IOCTL_LMR_CREATE, &l,
		    &l.out_lmr_context);
	l.addr += l.length;
	l.mem_priv = KDAT_MEM_PRIV_LOCAL_READ;
	ro_ctx = mk(_metadata, fd, KDAT_IOCTL_LMR_CREATE, &l,
		    &l.out_lmr_context);

	for (i = 0; i < sizeof(post_ext_cases) / sizeof(post_ext_cases[0]);
	     i++) {
		const struct post_ext_case *c = &post_ext_cases[i];
		bool ro = c->read_only_lmr, unused_set;
		struct kdat_lmr_triplet iov[2] = {
			{ ro ? ro_ctx : rw_ctx, 0,
			  (uintptr_t)(ro ? mem + 256 : mem), c->seg_len },
			{ rw_ctx, 0, (uintptr_t)(mem + 64), c->seg_len },
		};
		struct kdat_post p = {
			.size = sizeof(p), .ep_handle = e.out_ep_handle,
			.op = c->op, .num_segments = c->num,
			.iov = (uintptr_t)iov, .cookie = i,
			.remote = { .rmr_context = 1,
				    .target_address = 0x100000 +
						      c->remote_off,
				    .segment_length = 64 },
			.ext = c->ext,
		};

		want = c->want;
		/* Without atomics: refused as such, past the unused fields. */
		unused_set = c->ext.imm_data ||
			     (c->op == KDAT_DTO_FETCH_ADD && c->ext.swap);
		if (!atomics && (c->op == KDAT_DTO_FETCH_ADD ||
				 c->op == KDAT_DTO_CMP_SWAP) && !unused_set)
			want = EOPNOTSUPP;
		TH_LOG("%s: want %s", c->name, want ? strerror(want) : "0");
		ASSERT_EQ(-want, kioctl(fd, KDAT_IOCTL_POST, &p));
		/* In the first published size: no extension arguments. */
		if (c->ext.compare_add || c->ext.swap || c->ext.imm_data ||
		    c->ext.ah_handle)
			continue;
		p.size = offsetof(struct kdat_post, ext);
		ASSERT_EQ(-want, kioctl(fd, KDAT_IOCTL_POST, &p));
	}
	ASSERT_EQ(0, close(fd));
}

/*
 * A send ring's kind of entry (KDAT_RING_CREATE_SQE_EXT) is chosen by the
 * first call and stays; the flag is for send rings only.
 */
#define ALIGN64(x) (((x) + 63) / 64 * 64)

TEST_F(kdat, ring_sqe_ext_flag)
{
	struct kdat_ring_create c = { .size = sizeof(c) };
	int fd = dev_open(_metadata);
	uint32_t ep = mk_ep(_metadata, fd), ep2 = mk_ep(_metadata, fd);
	uint32_t esz, k;

	c.handle = ep;
	c.kind = KDAT_RING_RECV;
	c.flags = KDAT_RING_CREATE_SQE_EXT;
	ASSERT_EQ(-EINVAL, kioctl(fd, KDAT_IOCTL_RING_CREATE, &c));
	c.kind = KDAT_RING_SEND;
	c.flags = 2;
	ASSERT_EQ(-EINVAL, kioctl(fd, KDAT_IOCTL_RING_CREATE, &c));
	c.flags = KDAT_RING_CREATE_SQE_EXT;
	ASSERT_EQ(0, kioctl(fd, KDAT_IOCTL_RING_CREATE, &c));
	esz = c.out_entry_size;
	/* A cache line per entry or more, the header and a segment at least. */
	ASSERT_TRUE(esz % 64 == 0 &&
		    esz >= sizeof(struct kdat_sqe_ext) +
			   sizeof(struct kdat_lmr_triplet));
	c.flags = 0;
	ASSERT_EQ(-EBUSY, kioctl(fd, KDAT_IOCTL_RING_CREATE, &c));
	c.flags = KDAT_RING_CREATE_SQE_EXT;
	ASSERT_EQ(0, kioctl(fd, KDAT_IOCTL_RING_CREATE, &c));
	ASSERT_EQ(esz, c.out_entry_size);
	/* Plain first: then the extended kind is refused. */
	c.handle = ep2;
	c.flags = 0;
	ASSERT_EQ(0, kioctl(fd, KDAT_IOCTL_RING_CREATE, &c));
	TH_LOG("send ring entries: %u bytes extended, %u plain", esz,
	       c.out_entry_size);
	/*
	 * Alike queues: room for the same k segments behind either header,
	 * each entry rounded up to a cache line.
	 */
	for (k = 1; k <= 64; k++)
		if (esz == ALIGN64(sizeof(struct kdat_sqe_ext) + 24 * k) &&
		    c.out_entry_size == ALIGN64(sizeof(struct kdat_sqe) +
						24 * k))
			break;
	ASSERT_LE(k, 64);
	c.flags = KDAT_RING_CREATE_SQE_EXT;
	ASSERT_EQ(-EBUSY, kioctl(fd, KDAT_IOCTL_RING_CREATE, &c));
	ASSERT_EQ(0, close(fd));
}

TEST_F(kdat, unknown_ioctls)
{
	uint32_t buf[64] = { sizeof(buf) };
	int fd = dev_open(_metadata);

	ASSERT_EQ(-ENOTTY, kioctl(fd, _IO(KDAT_TYPE, KDAT_CMD_BASE - 1), buf));
	ASSERT_EQ(-ENOTTY, kioctl(fd, _IO(KDAT_TYPE, KDAT_CMD_BASE + 63), buf));
	ASSERT_EQ(-ENOTTY, kioctl(fd, _IO(KDAT_TYPE, 0xff), buf));
	ASSERT_EQ(-ENOTTY, kioctl(fd, _IO(KDAT_TYPE, 0), buf));
	/* The right number with another type or direction bits. */
	ASSERT_EQ(-ENOTTY, kioctl(fd, _IO('T', KDAT_CMD_QUERY), buf));
	ASSERT_EQ(-ENOTTY, kioctl(fd, _IOWR(KDAT_TYPE, KDAT_CMD_QUERY,
					    struct kdat_query), buf));
}

int main(int argc, char **argv)
{
	if (access(KDAT_DEVICE_PATH, F_OK) &&
	    !kdat_harness_listing(argc, argv)) {
		printf("TAP version 13\n1..0 # SKIP %s missing: kdat.ko not loaded\n",
		       KDAT_DEVICE_PATH);
		return KSFT_SKIP;
	}
	return kdat_harness_main(argc, argv);
}
