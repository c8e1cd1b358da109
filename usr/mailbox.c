/*
 * mailbox: Reef's kernel mailboxes (fos §3.2.1; reef_mbox_create/connect/accept/notify,
 * system calls 1028-1031, kernel mailbox.rs), which Linux does not have: off Reef the program
 * checks that the calls answer ENOSYS and passes.
 *
 * - hostile calls get errors and change nothing: bad flags, bad descriptors, descriptors that
 *   are not mailboxes or connections, bad `how`, unknown names, output pointers that are
 *   NULL, kernel or non-canonical;
 * - ping-pong through a connection between every pair of allowed cores (a server on one, the
 *   client on the other), every reply matching its request;
 * - a full ring is reported to the sender (-EAGAIN) while the owner does not receive;
 * - a million messages through one connection arrive, none lost, duplicated or reordered;
 * - the owner killed mid-stream: the client's blocked send and its receive end with -EPIPE,
 *   the name is gone, a new connection is refused; a client that exits ends its connection
 *   for the owner (-EPIPE after the messages it sent);
 * - poll: a mailbox is readable when a connection waits, a connection when a message waits,
 *   and a poller is woken by both;
 * - a fork child gets neither the descriptors nor the pages;
 * - an owner asleep in reef_msg_recv on one connection (not on its eventcount) is woken by
 *   the client's message;
 * - grants (reef_grant, reef_grant_map, reef_grant_revoke, 1032-1034): bad arguments refused;
 *   data passed by reference both ways, read-only for good unless granted writable (mprotect
 *   -EACCES, a write faults); an id presented on another connection, by its granter, or after
 *   revocation is -EPERM; 256 MiB granted per process and 1024 grants per connection at most;
 *   a grantee's mapping outlives its granter, whose grants can no longer be mapped;
 * - free memory comes back once everything is closed.
 */
#include "reef-test.h"
#include "reef_msg.h"
#include <poll.h>
#include <setjmp.h>
#include <signal.h>

#define MAXC 8
#define PINGS 1000
#define STREAM 1000000L
/* Process and heap memory that may stay (kernel heap arenas kept: see robust.c). */
#define SLACK (8L << 20)

struct shared {
    atomic_int ready;
    atomic_int mapped;
};

static struct shared *sh;

/* The server's modes. */
enum mode { ECHO, COUNT, HOLD };

/* Waits until `name` has a member (its server registered). */
static void await_name(const char *name)
{
    struct reef_name_member m;
    while (reef_name_lookup(name, REEF_NAME_NEAREST, &m) != 0)
        sched_yield();
}

/*
 * A server (in a child): a mailbox registered under `name`; accepts connections and, per mode,
 * echoes every request (ECHO), answers the count and checksum of a stream when its client
 * closes (COUNT), or receives nothing (HOLD). Leaves when its last connection ends.
 */
static void serve(const char *name, enum mode mode)
{
    _Atomic uint32_t *events;
    int mbox = reef_mbox_create(O_NONBLOCK, &events);
    if (mbox < 0)
        _exit(10);
    if (reef_name_register(name, mbox) != 0)
        _exit(11);
    atomic_fetch_add(&sh->ready, 1);
    int fds[16], n = 0, served = 0;
    struct reef_msg_sender tx[16];
    struct reef_msg_receiver rx[16];
    long count[16] = {0};
    uint64_t next[16] = {0};
    for (;;) {
        uint32_t seen = atomic_load(events);
        struct reef_conn_info info;
        int c;
        while (n < 16 && (c = reef_mbox_accept(mbox, 0, &info)) >= 0) {
            fds[n] = c;
            reef_mbox_server(&tx[n], &rx[n], &info);
            count[n] = 0;
            next[n] = 0;
            n++;
            served++;
        }
        for (int i = 0; i < n && mode != HOLD; i++) {
            struct reef_msg m;
            int r;
            while ((r = reef_msg_try_recv(&rx[i], &m)) == 1) {
                if (mode == ECHO) {
                    if (reef_msg_send(&tx[i], &m) != 0)
                        break;
                    continue;
                }
                uint64_t seq;
                memcpy(&seq, m.data, 8);
                if (seq != next[i])
                    _exit(12); /* lost, duplicated or reordered */
                next[i]++;
                count[i]++;
            }
            if (r == -EPIPE) {
                if (mode == COUNT) {
                    struct reef_msg done;
                    reef_msg_make(&done, 2, &count[i], 8);
                    reef_msg_send(&tx[i], &done);
                }
                close(fds[i]);
                n--;
                fds[i] = fds[n];
                tx[i] = tx[n];
                rx[i] = rx[n];
                count[i] = count[n];
                next[i] = next[n];
                i--;
            } else if (r < 0) {
                _exit(13);
            }
        }
        if (served > 0 && n == 0)
            _exit(0);
        struct reef_msg_channel *chans[16];
        for (int i = 0; i < n; i++)
            chans[i] = &rx[i].ch[0];
        /* Sleep unless something came since `seen` (a connection rings the eventcount). */
        int pending = 0;
        for (int i = 0; i < n && mode != HOLD; i++)
            pending |= reef_msg_pending(chans[i]);
        if (!pending) {
            for (int i = 0; i < n && mode != HOLD; i++)
                atomic_store(&chans[i]->rx.sleeping, 1);
            atomic_thread_fence(memory_order_seq_cst);
            for (int i = 0; i < n && mode != HOLD; i++)
                pending |= reef_msg_pending(chans[i]);
            if (!pending)
                reef_msg_futex_wait(events, seen);
        }
    }
}

static pid_t start_server(const char *name, enum mode mode, int cpu)
{
    atomic_store(&sh->ready, 0);
    pid_t pid = test_fork_child(name, cpu);
    if (pid == 0)
        serve(name, mode);
    while (atomic_load(&sh->ready) == 0)
        sched_yield();
    await_name(name);
    return pid;
}

static int client(const char *name, struct reef_msg_sender *tx, struct reef_msg_receiver *rx,
                  struct reef_conn_info *info)
{
    int fd = reef_mbox_connect(name, REEF_NAME_NEAREST, O_CLOEXEC, info);
    if (fd < 0)
        FAIL("connect to %s: %s", name, strerror(-fd));
    CHECK_EQ(info->slots, REEF_MSG_PAGE_SLOTS);
    reef_mbox_client(tx, rx, info, fd);
    return fd;
}

/* The owner's ends of the next connection to `mbox` (waiting for it): its descriptor. */
static int accepted(int mbox, struct reef_msg_sender *tx, struct reef_msg_receiver *rx,
                    struct reef_conn_info *info)
{
    int fd = reef_mbox_accept(mbox, 0, info);
    if (fd < 0)
        FAIL("accept: %s", strerror(-fd));
    reef_mbox_server(tx, rx, info);
    return fd;
}

static void hostile(void)
{
    _Atomic uint32_t *ev;
    struct reef_conn_info info;
    int devnull = CHECK_SYS(open("/dev/null", O_RDONLY));
    CHECK_EQ(reef_mbox_create(0x40000000, &ev), -EINVAL);
    CHECK_EQ(syscall(SYS_reef_mbox_create, 0L, NULL), -1);
    CHECK_EQ(errno, EFAULT);
    CHECK_EQ(syscall(SYS_reef_mbox_create, 0L, (void *)0xffff800000000000UL), -1);
    CHECK_EQ(errno, EFAULT);
    CHECK_EQ(syscall(SYS_reef_mbox_create, 0L, (void *)0x0000800000000000UL), -1);
    CHECK_EQ(errno, EFAULT);
    /* No descriptor was left behind by the failures: the next one is the lowest free. */
    int probe = CHECK_SYS(dup(devnull));
    CHECK_EQ(probe, devnull + 1);
    close(probe);
    CHECK_EQ(reef_mbox_accept(devnull, 0, &info), -ENOTSOCK);
    CHECK_EQ(reef_mbox_accept(999, 0, &info), -EBADF);
    CHECK_EQ(reef_mbox_accept(-1, 0, &info), -EBADF);
    CHECK_EQ(syscall(SYS_reef_mbox_notify, 999L), -1);
    CHECK_EQ(errno, EBADF);
    CHECK_EQ(syscall(SYS_reef_mbox_notify, (long)devnull), -1);
    CHECK_EQ(errno, ENOTSOCK);
    CHECK_EQ(reef_name_register("x", devnull), -ENOTSOCK);
    CHECK_EQ(reef_name_register("x", 999), -EBADF);
    CHECK_EQ(reef_mbox_connect("nobody", REEF_NAME_NEAREST, 0, &info), -ENOENT);
    CHECK_EQ(reef_mbox_connect("nobody", 7, 0, &info), -EINVAL);
    CHECK_EQ(reef_mbox_connect("nobody", REEF_NAME_NEAREST, 0x40000000, &info), -EINVAL);

    int mbox = reef_mbox_create(O_NONBLOCK | O_CLOEXEC, &ev);
    CHECK(mbox >= 0);
    CHECK_EQ(atomic_load(ev), 0);
    CHECK_EQ(syscall(SYS_reef_mbox_notify, (long)mbox), -1);
    CHECK_EQ(errno, ENOTSOCK);
    CHECK_EQ(reef_mbox_accept(mbox, 0, &info), -EAGAIN);
    CHECK_EQ(reef_mbox_accept(mbox, 0x40000000, &info), -EINVAL);
    CHECK_EQ(reef_name_register("hostile", mbox), 0);
    CHECK_EQ(syscall(SYS_reef_mbox_connect, "hostile", 7L, 0L, NULL, 0L), -1);
    CHECK_EQ(errno, EFAULT);
    CHECK_EQ(syscall(SYS_reef_mbox_connect, "hostile", 7L, 0L, (void *)0xffff800000001000UL, 0L),
             -1);
    CHECK_EQ(errno, EFAULT);
    CHECK_EQ(reef_mbox_accept(mbox, 0, &info), -EAGAIN);
    /* A connection to itself, with the owner's end made: notify from the client end bumps the
     * eventcount, the owner's end may not notify, and read/write/lseek are refused. */
    struct reef_conn_info cinfo;
    int c = reef_mbox_connect("hostile", REEF_NAME_NEAREST, 0, &cinfo);
    CHECK(c >= 0);
    uint32_t before = atomic_load(ev);
    CHECK(before >= 1); /* the connection rang */
    CHECK_EQ(syscall(SYS_reef_mbox_notify, (long)c), 0);
    CHECK_EQ(atomic_load(ev), before + 1);
    int s = reef_mbox_accept(mbox, 0, &info);
    CHECK(s >= 0);
    CHECK(info.conn != cinfo.conn);
    CHECK_EQ(info.mailbox, cinfo.mailbox);
    CHECK_EQ(syscall(SYS_reef_mbox_notify, (long)s), -1);
    CHECK_EQ(errno, EINVAL);
    char b[8];
    CHECK_ERRNO(read(c, b, sizeof b), EINVAL);
    CHECK_ERRNO(write(s, b, sizeof b), EINVAL);
    CHECK_ERRNO(lseek(c, 0, SEEK_SET), ESPIPE);
    /* Both ends see the same pages. */
    struct reef_msg_sender tx;
    struct reef_msg_receiver rx;
    reef_msg_sender_init(&tx, &cinfo.conn->request);
    reef_msg_receiver_init(&rx, &info.conn->request);
    struct reef_msg m;
    reef_msg_make(&m, 5, "hi", 2);
    CHECK_EQ(reef_msg_try_send(&tx, &m), 0);
    CHECK_EQ(reef_msg_try_recv(&rx, &m), 1);
    CHECK_EQ(m.tag, 5);
    /* The owner closes its end: the client's send fails. */
    close(s);
    CHECK_EQ(reef_msg_try_send(&tx, &m), -EPIPE);
    close(c);
    close(mbox);
    CHECK_EQ(reef_mbox_connect("hostile", REEF_NAME_NEAREST, 0, &cinfo), -ENOENT);
    close(devnull);
    SAY("bad flags, descriptors, names and pointers are refused; closing ends the connection");
}

static void ping_pong(int *cpus, int ncpus)
{
    int pairs = 0;
    for (int a = 0; a < ncpus; a++) {
        for (int b = a + 1; b < ncpus || (ncpus == 1 && b == 1); b++) {
            int sc = cpus[a], cc = cpus[b % ncpus];
            start_server("pingpong", ECHO, sc);
            pin_self(cc);
            struct reef_msg_sender tx;
            struct reef_msg_receiver rx;
            struct reef_conn_info info;
            int fd = client("pingpong", &tx, &rx, &info);
            for (uint64_t i = 0; i < PINGS; i++) {
                struct reef_msg m;
                uint64_t w[2] = {i, i * 7 + (uint64_t)sc};
                reef_msg_make(&m, (uint16_t)i, w, sizeof w);
                CHECK_EQ(reef_msg_send(&tx, &m), 0);
                CHECK_EQ(reef_msg_recv(&rx, &m), 1);
                uint64_t back[2];
                memcpy(back, m.data, sizeof back);
                CHECK_EQ(m.tag, (uint16_t)i);
                CHECK_EQ(back[0], i);
                CHECK_EQ(back[1], i * 7 + (uint64_t)sc);
            }
            close(fd);
            CHECK_SYS(munmap(info.conn, sizeof *info.conn));
            test_reap_all();
            pairs++;
        }
    }
    SAY("ping-pong, %d round trips each, between %d pairs of cores", PINGS, pairs);
}

static void full_ring(int cpu)
{
    pid_t srv = start_server("holder", HOLD, cpu);
    struct reef_msg_sender tx;
    struct reef_msg_receiver rx;
    struct reef_conn_info info;
    int fd = client("holder", &tx, &rx, &info);
    struct reef_msg m;
    reef_msg_make(&m, 1, NULL, 0);
    int sent = 0;
    while (reef_msg_try_send(&tx, &m) == 0)
        sent++;
    CHECK_EQ(sent, REEF_MSG_PAGE_SLOTS);
    CHECK_EQ(reef_msg_try_send(&tx, &m), -EAGAIN);
    struct pollfd p = {.fd = fd, .events = POLLOUT};
    CHECK_EQ(poll(&p, 1, 0), 0);
    SAY("a full ring of %d messages is reported (-EAGAIN, no POLLOUT)", sent);

    /* The owner dies while this client is blocked sending: the send ends with -EPIPE. */
    pid_t killer = CHECK_SYS(fork());
    if (killer == 0) {
        usleep(20000);
        kill(srv, SIGKILL);
        _exit(0);
    }
    CHECK_EQ(reef_msg_send(&tx, &m), -EPIPE);
    CHECK_EQ(reef_msg_recv(&rx, &m), -EPIPE);
    CHECK_CHILD_EXIT(killer, 0);
    int st;
    CHECK_SYS(waitpid(srv, &st, 0));
    CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
    test_nkids = 0;
    p.events = POLLIN;
    CHECK_EQ(poll(&p, 1, 0), 1);
    CHECK(p.revents & POLLHUP);
    close(fd);
    CHECK_EQ(reef_mbox_connect("holder", REEF_NAME_NEAREST, 0, &info), -ENOENT);
    SAY("the owner killed mid-stream: the blocked send and the receive get -EPIPE, the name "
        "is gone");
}

static void stream(int scpu, int ccpu)
{
    start_server("counter", COUNT, scpu);
    pin_self(ccpu);
    struct reef_msg_sender tx;
    struct reef_msg_receiver rx;
    struct reef_conn_info info;
    int fd = client("counter", &tx, &rx, &info);
    long long t0 = now_ns();
    for (uint64_t i = 0; i < STREAM; i++) {
        struct reef_msg m;
        reef_msg_make(&m, 1, &i, 8);
        CHECK_EQ(reef_msg_send(&tx, &m), 0);
    }
    reef_msg_close_sender(&tx);
    struct reef_msg m;
    CHECK_EQ(reef_msg_recv(&rx, &m), 1);
    long got;
    memcpy(&got, m.data, 8);
    CHECK_EQ(got, STREAM);
    long long t1 = now_ns();
    close(fd);
    CHECK_SYS(munmap(info.conn, sizeof *info.conn));
    test_reap_all();
    SAY("%ld messages from core %d to core %d, in order, none lost (%lld ms)", STREAM, ccpu, scpu,
        (t1 - t0) / 1000000);
}

static void polling(int cpu)
{
    _Atomic uint32_t *ev;
    int mbox = reef_mbox_create(O_NONBLOCK, &ev);
    CHECK(mbox >= 0);
    CHECK_EQ(reef_name_register("poller", mbox), 0);
    struct pollfd p = {.fd = mbox, .events = POLLIN};
    CHECK_EQ(poll(&p, 1, 0), 0);
    /* A child connects and sends one message later; this process sleeps in poll meanwhile. */
    pid_t kid = test_fork_child("poll client", cpu);
    if (kid == 0) {
        usleep(20000);
        struct reef_msg_sender tx;
        struct reef_msg_receiver rx;
        struct reef_conn_info info;
        client("poller", &tx, &rx, &info);
        usleep(20000);
        struct reef_msg m;
        reef_msg_make(&m, 9, "x", 1);
        if (reef_msg_send(&tx, &m) != 0)
            _exit(21);
        _exit(reef_msg_recv(&rx, &m) == 1 && m.tag == 10 ? 0 : 22);
    }
    CHECK_EQ(poll(&p, 1, 5000), 1);
    CHECK_EQ(p.revents, POLLIN);
    struct reef_conn_info info;
    struct reef_msg_sender tx;
    struct reef_msg_receiver rx;
    int s = accepted(mbox, &tx, &rx, &info);
    struct pollfd q = {.fd = s, .events = POLLIN};
    CHECK_EQ(poll(&q, 1, 5000), 1);
    CHECK(q.revents & POLLIN);
    struct reef_msg m;
    CHECK_EQ(reef_msg_try_recv(&rx, &m), 1);
    CHECK_EQ(m.tag, 9);
    reef_msg_make(&m, 10, NULL, 0);
    CHECK_EQ(reef_msg_send(&tx, &m), 0);
    test_reap_all();
    /* The client exited: its end is closed. */
    CHECK_EQ(poll(&q, 1, 5000), 1);
    CHECK(q.revents & (POLLIN | POLLHUP));
    CHECK_EQ(reef_msg_try_recv(&rx, &m), -EPIPE);
    CHECK_EQ(reef_msg_try_send(&tx, &m), -EPIPE);

    /* A fork child has neither the descriptors nor the pages. */
    pid_t kid2 = CHECK_SYS(fork());
    if (kid2 == 0) {
        if (fcntl(mbox, F_GETFD) != -1 || fcntl(s, F_GETFD) != -1)
            _exit(30);
        volatile uint64_t x = *(volatile uint64_t *)info.conn;
        (void)x;
        _exit(31);
    }
    int st;
    CHECK_SYS(waitpid(kid2, &st, 0));
    if (!WIFSIGNALED(st) || WTERMSIG(st) != SIGSEGV)
        FAIL("fork child: %s, expected SIGSEGV", describe_wait(st));
    close(s);
    close(mbox);
    SAY("poll wakes for a connection and for a message; a client's exit reads as -EPIPE; a fork "
        "child has neither descriptors nor pages");
}

/* The owner sleeps in reef_msg_recv on one connection rather than on its eventcount: a client
 * message that finds it asleep there wakes it (reef_mbox_notify wakes the channel's word). */
static void sleeping_owner(int cpu)
{
    enum { ROUNDS = 10 };
    _Atomic uint32_t *ev;
    int mbox = reef_mbox_create(0, &ev);
    CHECK(mbox >= 0);
    CHECK_EQ(reef_name_register("sleeper", mbox), 0);
    pid_t kid = test_fork_child("sleeper client", cpu);
    if (kid == 0) {
        struct reef_msg_sender tx;
        struct reef_msg_receiver rx;
        struct reef_conn_info info;
        client("sleeper", &tx, &rx, &info);
        for (int i = 0; i < ROUNDS; i++) {
            /* Once the owner has marked itself asleep, give it time to reach its futex. */
            while (atomic_load(&info.conn->request.rx.sleeping) == 0)
                sched_yield();
            usleep(2000);
            struct reef_msg m;
            reef_msg_make(&m, 1, &i, sizeof i);
            if (reef_msg_send(&tx, &m) != 0)
                _exit(21);
        }
        _exit(0);
    }
    struct reef_conn_info info;
    struct reef_msg_sender tx;
    struct reef_msg_receiver rx;
    int s = accepted(mbox, &tx, &rx, &info);
    struct reef_msg m;
    for (int i = 0; i < ROUNDS; i++) {
        CHECK_EQ(reef_msg_recv(&rx, &m), 1);
        int got;
        memcpy(&got, m.data, sizeof got);
        CHECK_EQ(got, i);
    }
    test_reap_all();
    CHECK_EQ(reef_msg_recv(&rx, &m), -EPIPE);
    close(s);
    close(mbox);
    SAY("an owner asleep in reef_msg_recv on one connection is woken by its client, %d times",
        ROUNDS);
}

static sigjmp_buf fault_jump;
static volatile sig_atomic_t armed;

static void on_segv(int sig)
{
    (void)sig;
    if (!armed) {
        static const char msg[] = "FAIL mailbox: unexpected SIGSEGV\n";
        write(1, msg, sizeof msg - 1);
        _exit(2);
    }
    armed = 0;
    siglongjmp(fault_jump, 1);
}

/* Whether writing one byte at `p` faults. */
static int write_faults(volatile char *p)
{
    if (sigsetjmp(fault_jump, 1) == 0) {
        armed = 1;
        *p = 0x5a;
        armed = 0;
        return 0;
    }
    return 1;
}

/* A connection of this process to itself: the client end in *c, the owner's in *s. */
static void self_connection(const char *name, int *mbox, int *c, int *s,
                            struct reef_conn_info *cinfo, struct reef_conn_info *sinfo)
{
    _Atomic uint32_t *ev;
    *mbox = reef_mbox_create(O_NONBLOCK, &ev);
    CHECK(*mbox >= 0);
    CHECK_EQ(reef_name_register(name, *mbox), 0);
    *c = reef_mbox_connect(name, REEF_NAME_NEAREST, 0, cinfo);
    CHECK(*c >= 0);
    *s = reef_mbox_accept(*mbox, 0, sinfo);
    CHECK(*s >= 0);
}

/* Anonymous memory of `len` bytes. */
static char *anon(size_t len, int prot, int flags)
{
    char *p = mmap(NULL, len, prot, flags | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        FAIL("mmap of %zu bytes failed: %s", len, strerror(errno));
    return p;
}

/* reef_grant_map expected to fail with `err`. */
static void map_fails(int fd, long id, int err)
{
    uint64_t len = 0;
    errno = 0;
    CHECK(reef_grant_map(fd, id, &len) == NULL);
    CHECK_EQ(errno, err);
}

/* Grants within one process (both ends of a connection to itself), then across processes. */
static void grants(int cpu)
{
    const size_t K = 4096;
    int mbox, c, s, mbox2, c2, s2, devnull = CHECK_SYS(open("/dev/null", O_RDONLY));
    struct reef_conn_info ci, si, ci2, si2;
    self_connection("grants", &mbox, &c, &s, &ci, &si);
    self_connection("grants2", &mbox2, &c2, &s2, &ci2, &si2);
    char *buf = shared_page(4 * K);
    char *priv = anon(K, PROT_READ | PROT_WRITE, MAP_PRIVATE);
    char *ro = anon(K, PROT_READ, MAP_SHARED);
    char *none = anon(K, PROT_NONE, MAP_SHARED);
    char *hole = shared_page(3 * K);
    CHECK_SYS(munmap(hole + K, K));

    /* Bad arguments. */
    CHECK_EQ(reef_grant(devnull, buf, K, 0), -ENOTSOCK);
    CHECK_EQ(reef_grant(mbox, buf, K, 0), -ENOTSOCK);
    CHECK_EQ(reef_grant(999, buf, K, 0), -EBADF);
    CHECK_EQ(reef_grant(c, buf, K, 2), -EINVAL);
    CHECK_EQ(reef_grant(c, buf, 0, 0), -EINVAL);
    CHECK_EQ(reef_grant(c, buf + 1, K, 0), -EINVAL);
    CHECK_EQ(reef_grant(c, buf, 5 * K, 0), -EINVAL); /* past the mapping */
    CHECK_EQ(reef_grant(c, buf, (size_t)-1, 0), -EINVAL);
    CHECK_EQ(reef_grant(c, priv, K, 0), -EINVAL); /* private memory */
    CHECK_EQ(reef_grant(c, hole, 3 * K, 0), -EINVAL);
    CHECK_EQ(reef_grant(c, hole + K, K, 0), -EFAULT);
    CHECK_EQ(reef_grant(c, (void *)0xffff800000000000UL, K, 0), -EFAULT);
    CHECK_EQ(reef_grant(c, (void *)0x0000800000000000UL, K, 0), -EFAULT);
    CHECK_EQ(reef_grant(c, ro, K, REEF_GRANT_WRITE), -EACCES);
    CHECK_EQ(reef_grant(c, none, K, 0), -EACCES);
    CHECK_EQ(reef_grant(c, buf, 257L << 20, 0), -ENOMEM); /* over the 256 MiB budget */
    map_fails(s, 12345678, EPERM);
    map_fails(devnull, 1, ENOTSOCK);
    CHECK_EQ(reef_grant_revoke(c, 12345678), -ENOENT);
    CHECK_EQ(reef_grant_revoke(devnull, 1), -ENOTSOCK);

    /* Read-only, by reference: the grantee sees the data at the offset the message names. */
    for (size_t i = 0; i < 4 * K; i++)
        buf[i] = (char)(i * 7);
    long id = reef_grant(c, buf, 4 * K, 0);
    CHECK(id > 0);
    struct reef_msg_sender tx;
    struct reef_msg_receiver rx;
    reef_mbox_client(&tx, &rx, &ci, c);
    struct reef_msg_sender stx;
    struct reef_msg_receiver srx;
    reef_mbox_server(&stx, &srx, &si);
    struct reef_msg m;
    reef_msg_make_grant(&m, 9, (uint64_t)id, 100, 16000);
    CHECK_EQ(reef_msg_try_send(&tx, &m), 0);
    CHECK_EQ(reef_msg_try_recv(&srx, &m), 1);
    uint64_t gid, off, glen, mlen = 0;
    CHECK_EQ(reef_msg_grant(&m, &gid, &off, &glen), 0);
    CHECK_EQ(gid, (uint64_t)id);
    map_fails(c, id, EPERM);  /* its granter */
    map_fails(c2, id, EPERM); /* another connection */
    map_fails(s2, id, EPERM);
    char *view = reef_grant_map(s, (long)gid, &mlen);
    CHECK(view != NULL);
    CHECK_EQ(mlen, 4 * K);
    CHECK(off + glen <= mlen);
    CHECK(view != buf);
    CHECK(memcmp(view + off, buf + off, glen) == 0);
    buf[200] = 42; /* the same frames */
    CHECK_EQ(view[200], 42);
    CHECK_ERRNO(mprotect(view, K, PROT_READ | PROT_WRITE), EACCES);
    CHECK_SYS(mprotect(view, K, PROT_READ));
    struct sigaction sa = {.sa_handler = on_segv}, old;
    CHECK_SYS(sigaction(SIGSEGV, &sa, &old));
    CHECK(write_faults(view + 5));
    CHECK_EQ(syscall(SYS_reef_grant_map, (long)s, id, (void *)0xffff800000000000UL), -1);
    CHECK_EQ(errno, EFAULT);
    CHECK_EQ(reef_grant_revoke(s, id), -EPERM); /* only its granter revokes it */
    CHECK_EQ(reef_grant_revoke(c, id), 0);
    CHECK_EQ(reef_grant_revoke(c, id), -ENOENT);
    map_fails(s, id, EPERM);
    CHECK_EQ(view[200], 42); /* the mapping made stays */
    CHECK_SYS(munmap(view, 4 * K));

    /* Writable, and the other way round (the owner grants to the client). */
    char *sbuf = shared_page(2 * K);
    long wid = reef_grant(s, sbuf, 2 * K, REEF_GRANT_WRITE);
    CHECK(wid > 0);
    char *w = reef_grant_map(c, wid, NULL);
    CHECK(w != NULL);
    CHECK(!write_faults(w + K + 3));
    CHECK_EQ(sbuf[K + 3], 0x5a);
    CHECK_SYS(sigaction(SIGSEGV, &old, NULL));
    CHECK_SYS(munmap(w, 2 * K));
    CHECK_EQ(reef_grant_revoke(s, wid), 0);

    /* Limits: 256 MiB of grants per process (the same 64 MiB four times), 1024 per connection. */
    char *big = shared_page(64L << 20);
    long ids[4];
    for (int i = 0; i < 4; i++) {
        ids[i] = reef_grant(c, big, 64L << 20, 0);
        CHECK(ids[i] > 0);
    }
    CHECK_EQ(reef_grant(c2, buf, K, 0), -ENOMEM);
    CHECK_EQ(reef_grant_revoke(c, ids[3]), 0);
    long one = reef_grant(c2, buf, K, 0);
    CHECK(one > 0);
    CHECK_EQ(reef_grant_revoke(c2, one), 0);
    for (int i = 0; i < 3; i++)
        CHECK_EQ(reef_grant_revoke(c, ids[i]), 0);
    CHECK_SYS(munmap(big, 64L << 20));
    int made = 0;
    long r;
    while ((r = reef_grant(c2, buf, K, 0)) > 0)
        made++;
    CHECK_EQ(r, -ENOSPC);
    CHECK_EQ(made, 1024);
    close(c2); /* its grants go with it */
    close(s2);
    close(mbox2);
    close(c);
    CHECK_EQ(reef_grant(s, sbuf, K, 0), -EPIPE); /* the client end is gone */
    close(s);
    close(mbox);

    /* Across processes: a child grants a page to this process and exits; the mapping made
     * stays, the grant can no longer be mapped. */
    _Atomic uint32_t *ev;
    int owner = reef_mbox_create(0, &ev);
    CHECK(owner >= 0);
    CHECK_EQ(reef_name_register("granter", owner), 0);
    atomic_store(&sh->mapped, 0);
    pid_t kid = test_fork_child("granter", cpu);
    if (kid == 0) {
        struct reef_conn_info info;
        int fd = reef_mbox_connect("granter", REEF_NAME_NEAREST, 0, &info);
        if (fd < 0)
            _exit(20);
        char *page = mmap(NULL, K, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
        if (page == MAP_FAILED)
            _exit(21);
        memset(page, 0x77, K);
        long g = reef_grant(fd, page, K, REEF_GRANT_WRITE);
        if (g <= 0)
            _exit(22);
        struct reef_msg_sender ktx;
        struct reef_msg_receiver krx;
        reef_mbox_client(&ktx, &krx, &info, fd);
        struct reef_msg gm;
        reef_msg_make_grant(&gm, 1, (uint64_t)g, 0, K);
        if (reef_msg_send(&ktx, &gm) != 0)
            _exit(23);
        while (atomic_load(&sh->mapped) == 0)
            sched_yield();
        _exit(0);
    }
    int k = reef_mbox_accept(owner, 0, &si);
    CHECK(k >= 0);
    reef_mbox_server(&stx, &srx, &si);
    CHECK_EQ(reef_msg_recv(&srx, &m), 1);
    CHECK_EQ(reef_msg_grant(&m, &gid, &off, &glen), 0);
    char *got = reef_grant_map(k, (long)gid, &mlen);
    CHECK(got != NULL);
    CHECK_EQ(got[K - 1], 0x77);
    atomic_store(&sh->mapped, 1);
    test_reap_all();
    CHECK_EQ(reef_msg_recv(&srx, &m), -EPIPE);
    map_fails(k, (long)gid, EPERM);
    got[0] = 1; /* still there, still writable */
    CHECK_EQ(got[0] + got[1], 1 + 0x77);
    CHECK_SYS(munmap(got, K));
    close(k);
    close(owner);
    CHECK_SYS(munmap(buf, 4 * K));
    CHECK_SYS(munmap(sbuf, 2 * K));
    CHECK_SYS(munmap(priv, K));
    CHECK_SYS(munmap(ro, K));
    CHECK_SYS(munmap(none, K));
    CHECK_SYS(munmap(hole, 3 * K));
    close(devnull);
    SAY("grants: bad arguments refused, data by reference both ways, read-only enforced, "
        "forged/revoked ids EPERM, limits 256 MiB and 1024, mappings outlive their granter");
}

int main(void)
{
    test_begin("mailbox");
    if (!on_reef()) {
        _Atomic uint32_t *ev;
        CHECK_EQ(reef_mbox_create(0, &ev), -ENOSYS);
        SAY("not Reef: the mailbox calls answer ENOSYS");
        PASS();
    }
    sh = shared_page(4096);
    long free0 = reef_free_bytes();
    int cpus[MAXC];
    int ncpus = allowed_cpus(cpus, MAXC);
    pin_self(cpus[0]);
    hostile();
    ping_pong(cpus, ncpus);
    full_ring(cpus[ncpus - 1]);
    stream(cpus[ncpus - 1], cpus[0]);
    pin_self(cpus[0]);
    polling(cpus[ncpus - 1]);
    sleeping_owner(cpus[ncpus - 1]);
    grants(cpus[ncpus - 1]);
    long free1 = reef_free_bytes();
    if (free1 < free0 - SLACK)
        FAIL("lost %ld KiB", (free0 - free1) >> 10);
    SAY("free memory %ld KiB before, %ld KiB after", free0 >> 10, free1 >> 10);
    PASS();
}
