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
 * - free memory comes back once everything is closed.
 */
#include "reef-test.h"
#include "reef_msg.h"
#include <poll.h>

#define MAXC 8
#define PINGS 1000
#define STREAM 1000000L
/* Process and heap memory that may stay (kernel heap arenas kept: see robust.c). */
#define SLACK (8L << 20)

struct shared {
    atomic_int ready;
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
        int fd = reef_mbox_connect("poller", REEF_NAME_NEAREST, 0, &info);
        if (fd < 0)
            _exit(20);
        reef_mbox_client(&tx, &rx, &info, fd);
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
    int s = reef_mbox_accept(mbox, 0, &info);
    CHECK(s >= 0);
    struct reef_msg_sender tx;
    struct reef_msg_receiver rx;
    reef_mbox_server(&tx, &rx, &info);
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
    long free1 = reef_free_bytes();
    if (free1 < free0 - SLACK)
        FAIL("lost %ld KiB", (free0 - free1) >> 10);
    SAY("free memory %ld KiB before, %ld KiB after", free0 >> 10, free1 >> 10);
    PASS();
}
