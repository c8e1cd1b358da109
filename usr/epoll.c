/*
 * epoll: epoll_create/epoll_create1, epoll_ctl, epoll_wait and epoll_pwait on pipes and
 * 127.0.0.1 sockets, with Linux's exact answers. Nothing depends on timing: "nothing is ready"
 * is epoll_wait with timeout 0; "becomes ready" waits with a 10 s timeout and fails with a
 * clear message when it expires.
 *
 * - create: epoll_create1(0) without FD_CLOEXEC, EPOLL_CLOEXEC with it, epoll_create(1) (libc
 *   and the raw system call); the epoll_create system call with size 0 or -1 EINVAL (musl's
 *   epoll_create does not pass the size on), epoll_create1 with a flag other than EPOLL_CLOEXEC
 *   EINVAL; a new instance has nothing ready;
 * - errors: epoll_ctl EBADF (bad epfd, bad fd), EINVAL (fd == epfd, unknown op, epfd not an
 *   epoll fd), EEXIST (ADD twice), ENOENT (MOD/DEL of an fd not added), EPERM (a regular file
 *   /tmp/epoll.<pid>, ADD and DEL), EFAULT (bad event pointer; nothing added); DEL with a NULL
 *   event works; epoll_wait: maxevents 0 and -1 EINVAL, a bad events pointer EFAULT with
 *   something ready (still reported afterwards), a non-epoll fd EINVAL, a closed fd EBADF;
 * - level-triggered pipe: nothing while empty, EPOLLIN with its epoll_data (u64) after a write,
 *   again without reading, not after draining; the write end EPOLLOUT while there is room, not
 *   when full (EAGAIN), again once drained; the read end closed: the write end reports
 *   EPOLLOUT|EPOLLERR; the write end closed: the read end reports EPOLLIN|EPOLLHUP while data
 *   remains, EPOLLHUP alone once drained (and EPOLLHUP for an interest asking for nothing);
 * - edge-triggered pipe: one report per write, none when nothing new arrived, a second write
 *   while data is unread reported again, draining to EAGAIN then writing reported again;
 *   EPOLLOUT|EPOLLET reported at ADD, not again until a full pipe is drained;
 * - EPOLLONESHOT: one report, none after new writes, ADD again EEXIST, EPOLL_CTL_MOD re-arms
 *   (new data), MOD to level-triggered reports every time, DEL stops reports (DEL again ENOENT);
 * - sockets: a listener reports EPOLLIN for a pending connection (blocking connect), not once
 *   accepted; a non-blocking connect reports EPOLLOUT with SO_ERROR 0; an accepted socket
 *   EPOLLOUT, EPOLLIN|EPOLLOUT with data, EPOLLIN|EPOLLOUT after the peer's shutdown(SHUT_WR)
 *   (no EPOLLRDHUP when not asked for); after the peer's close and a write that provokes its
 *   RST, EPOLLERR|EPOLLHUP (EPOLLIN|EPOLLOUT|EPOLLERR|EPOLLHUP when asked for EPOLLIN|EPOLLOUT);
 *   edge-triggered TCP: one report per arrival, reading to EAGAIN then new data reported again;
 *   UDP: EPOLLIN once a datagram arrives, not after it is read;
 * - many: 100 pipes, every 7th written: maxevents 10 returns 10, the next call the other 5
 *   (each read as it is reported), then 0; each of the 15 exactly once, with its own data;
 * - poll on an epoll fd: 0 while nothing is ready, POLLIN (only, even asked for POLLOUT) when a
 *   registered fd becomes ready, 0 again after draining;
 * - close: closing the only descriptor of a registered file removes it (DEL then EBADF); with a
 *   dup() alive the closed descriptor's interest keeps being reported with its data, DEL on
 *   the dup is ENOENT, a new pipe that reuses the closed number can be ADDed (a separate
 *   interest, both reported), and closing the dup ends the old interest;
 * - signals: epoll_pwait with a mask that unblocks SIGUSR1 (blocked in the process) returns
 *   EINTR and the handler ran, also with SA_RESTART; the process mask is back afterwards; with
 *   a mask that keeps it blocked, ready data is returned and no handler runs; epoll_wait with a
 *   50 ms timeout and nothing ready returns 0; the raw epoll_wait and epoll_pwait system calls
 *   (epoll_pwait with a sigsetsize of 4 EINVAL). A child sends SIGUSR1 every 10 ms until killed;
 * - EPOLLRDHUP (last, on its own line, so that its absence shows separately): after the peer's
 *   shutdown(SHUT_WR) an interest asking for EPOLLIN|EPOLLRDHUP reports exactly that, plain
 *   data does not set it.
 */
#include "reef-test.h"
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/socket.h>

#define WAIT_MS 10000 /* generous timeout for asynchronous outcomes */
#define NPIPES 100

/* ---- helpers ---- */

/* Closes each descriptor given, failing if a close fails. */
#define CLOSE(...) close_fds((const int[]){__VA_ARGS__}, sizeof((int[]){__VA_ARGS__}) / sizeof(int))

static void close_fds(const int *fds, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (close(fds[i]) != 0)
            FAIL("close(%d) failed: %s", fds[i], strerror(errno));
}

static void set_nonblock(int fd)
{
    CHECK_SYS(fcntl(fd, F_SETFL, CHECK_SYS(fcntl(fd, F_GETFL)) | O_NONBLOCK));
}

static int ep_new(void)
{
    return CHECK_SYS(epoll_create1(EPOLL_CLOEXEC));
}

static void ep_ctl(int ep, int op, int fd, uint32_t events, uint64_t data)
{
    struct epoll_event ev = {.events = events, .data.u64 = data};
    if (epoll_ctl(ep, op, fd, &ev) != 0)
        FAIL("epoll_ctl(%d, %d, %d, events 0x%x) failed: %s", ep, op, fd, events,
             strerror(errno));
}

#define ep_add(ep, fd, events, data) ep_ctl(ep, EPOLL_CTL_ADD, fd, events, data)
#define ep_mod(ep, fd, events, data) ep_ctl(ep, EPOLL_CTL_MOD, fd, events, data)

/* Fails (at `line`) unless `n` events were returned and the first is `events` with `data`. */
static void check_one(int line, const char *what, int n, const struct epoll_event *ev,
                      uint32_t events, uint64_t data)
{
    if (n != 1)
        test_fail_at(__FILE__, line, "%s: epoll_wait returned %d, expected 1 event (0x%x)", what,
                     n, events);
    if (ev[0].events != events || ev[0].data.u64 != data)
        test_fail_at(__FILE__, line,
                     "%s: epoll_wait reported events 0x%x data 0x%llx, expected 0x%x data 0x%llx",
                     what, ev[0].events, (unsigned long long)ev[0].data.u64, events,
                     (unsigned long long)data);
}

/* Nothing is ready right now (timeout 0). */
static void none_at(int line, int ep)
{
    struct epoll_event ev[4];
    int n = epoll_wait(ep, ev, 4, 0);
    if (n < 0)
        test_fail_at(__FILE__, line, "epoll_wait failed: %s", strerror(errno));
    if (n > 0)
        test_fail_at(__FILE__, line,
                     "epoll_wait(timeout 0) reported %d event(s) (the first 0x%x data 0x%llx), "
                     "expected none",
                     n, ev[0].events, (unsigned long long)ev[0].data.u64);
}

/* Exactly one interest is ready right now (timeout 0), with `events` and `data`. */
static void now_at(int line, int ep, uint32_t events, uint64_t data)
{
    struct epoll_event ev[4];
    int n = epoll_wait(ep, ev, 4, 0);
    if (n < 0)
        test_fail_at(__FILE__, line, "epoll_wait failed: %s", strerror(errno));
    check_one(line, "epoll_wait(timeout 0)", n, ev, events, data);
}

/* Waits (at most WAIT_MS) until one interest reports all of `need`, then fails unless that
 * report is exactly `events` with `data` and nothing else is ready. */
static void wait_at(int line, int ep, uint32_t need, uint32_t events, uint64_t data,
                    const char *what)
{
    long long end = now_ns() + WAIT_MS * 1000000LL;
    struct epoll_event ev[4];
    int n;
    for (;;) {
        long long left = (end - now_ns()) / 1000000;
        n = epoll_wait(ep, ev, 4, left > 0 ? (int)left : 0);
        if (n < 0)
            test_fail_at(__FILE__, line, "epoll_wait failed: %s", strerror(errno));
        if (n > 0 && (ev[0].events & need) == need)
            break;
        if (now_ns() >= end) {
            if (n == 0)
                test_fail_at(__FILE__, line, "timed out after %d ms waiting for %s", WAIT_MS,
                             what);
            test_fail_at(__FILE__, line, "waiting for %s: after %d ms epoll still says 0x%x",
                         what, WAIT_MS, ev[0].events);
        }
    }
    check_one(line, what, n, ev, events, data);
}

#define EXPECT_NONE(ep) none_at(__LINE__, ep)
#define EXPECT_NOW(ep, events, data) now_at(__LINE__, ep, events, data)
#define EXPECT_WAIT(ep, events, data, what) wait_at(__LINE__, ep, events, events, data, what)
#define EXPECT_WAIT_FOR(ep, need, events, data, what) wait_at(__LINE__, ep, need, events, data, what)

static void write_str(int fd, const char *s)
{
    CHECK_EQ(write(fd, s, strlen(s)), strlen(s));
}

/* Reads strlen(want) bytes (in one read), which must be `want`. */
static void read_str(int fd, const char *want)
{
    char buf[64];
    size_t n = strlen(want);
    ssize_t r = read(fd, buf, sizeof buf);
    if (r < 0)
        FAIL("read of \"%s\" failed: %s", want, strerror(errno));
    if ((size_t)r != n || memcmp(buf, want, n) != 0)
        FAIL("read \"%.*s\" (%zd bytes), expected \"%s\"", (int)(r > 0 ? r : 0), buf, r, want);
}

/* Reads (a non-blocking `fd`) until EAGAIN; returns the byte count. */
static size_t drain(int fd)
{
    static char buf[65536];
    size_t total = 0;
    for (;;) {
        ssize_t r = read(fd, buf, sizeof buf);
        if (r > 0) {
            total += (size_t)r;
            continue;
        }
        if (r == 0)
            FAIL("EOF while draining fd %d", fd);
        CHECK_EQ(errno, EAGAIN);
        return total;
    }
}

/* Writes (a non-blocking `fd`) 4096 bytes at a time until EAGAIN; returns the byte count. */
static size_t fill(int fd)
{
    static char buf[4096];
    size_t total = 0;
    for (;;) {
        ssize_t r = write(fd, buf, sizeof buf);
        if (r > 0) {
            total += (size_t)r;
            if (total > (64u << 20))
                FAIL("wrote %zu bytes into fd %d, never EAGAIN", total, fd);
            continue;
        }
        CHECK_EQ(r, -1);
        CHECK_EQ(errno, EAGAIN);
        return total;
    }
}

static struct sockaddr_in loopback(uint16_t port)
{
    return (struct sockaddr_in){
        .sin_family = AF_INET, .sin_port = htons(port), .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
}

/* A socket of `type` bound to 127.0.0.1 port 0; its address in *addr. */
static int bound(int type, struct sockaddr_in *addr)
{
    int fd = CHECK_SYS(socket(AF_INET, type, 0));
    struct sockaddr_in a = loopback(0);
    CHECK_SYS(bind(fd, (struct sockaddr *)&a, sizeof a));
    socklen_t len = sizeof *addr;
    CHECK_SYS(getsockname(fd, (struct sockaddr *)addr, &len));
    CHECK_EQ(len, sizeof *addr);
    CHECK(addr->sin_port != 0);
    return fd;
}

static int listener(int backlog, struct sockaddr_in *addr)
{
    int fd = bound(SOCK_STREAM, addr);
    CHECK_SYS(listen(fd, backlog));
    return fd;
}

static int connect_to(const struct sockaddr_in *a)
{
    int fd = CHECK_SYS(socket(AF_INET, SOCK_STREAM, 0));
    CHECK_SYS(connect(fd, (const struct sockaddr *)a, sizeof *a));
    return fd;
}

/* A connected TCP pair: *c the connecting end, *s the accepted one. */
static void tcp_pair(int *c, int *s)
{
    struct sockaddr_in a;
    int l = listener(1, &a);
    *c = connect_to(&a);
    *s = CHECK_SYS(accept(l, NULL, NULL));
    CHECK_SYS(close(l));
}

static void send_str(int fd, const char *s)
{
    CHECK_EQ(send(fd, s, strlen(s), MSG_NOSIGNAL), strlen(s));
}

static int getopt_int(int fd, int level, int name)
{
    int v = -1;
    socklen_t len = sizeof v;
    CHECK_SYS(getsockopt(fd, level, name, &v, &len));
    CHECK_EQ(len, sizeof v);
    return v;
}

/* ---- 1. creation ---- */

static void create(void)
{
    int a = CHECK_SYS(epoll_create1(0));
    CHECK_EQ(CHECK_SYS(fcntl(a, F_GETFD)), 0);
    int b = CHECK_SYS(epoll_create1(EPOLL_CLOEXEC));
    CHECK_EQ(CHECK_SYS(fcntl(b, F_GETFD)), FD_CLOEXEC);
    int c = CHECK_SYS(epoll_create(1));
    CHECK_EQ(CHECK_SYS(fcntl(c, F_GETFD)), 0);
    int d = CHECK_SYS(epoll_create(100000));
    CHECK_ERRNO(epoll_create1(1), EINVAL);
    CHECK_ERRNO(epoll_create1(O_NONBLOCK), EINVAL);
    CHECK_ERRNO(epoll_create1(EPOLL_CLOEXEC | 1), EINVAL);
    const char *raw = "size 0 or -1 not checked (no SYS_epoll_create)";
#ifdef SYS_epoll_create
    /* The system call itself: musl's epoll_create (1.2.3) calls epoll_create1(0) whatever the
     * size, glibc's the epoll_create system call. */
    int e = CHECK_SYS(syscall(SYS_epoll_create, 1));
    CHECK_EQ(CHECK_SYS(fcntl(e, F_GETFD)), 0);
    CHECK_ERRNO(syscall(SYS_epoll_create, 0), EINVAL);
    CHECK_ERRNO(syscall(SYS_epoll_create, -1), EINVAL);
    CHECK_SYS(close(e));
    raw = "the epoll_create system call with size 0 or -1 EINVAL";
#endif
    struct epoll_event ev[2];
    CHECK_EQ(epoll_wait(a, ev, 2, 0), 0);
    CHECK_EQ(epoll_wait(c, ev, 2, 0), 0);
    CLOSE(a, b, c, d);
    SAY("create: epoll_create1(0) no FD_CLOEXEC, EPOLL_CLOEXEC sets it, epoll_create(1) works, "
        "%s, epoll_create1 with a flag other than EPOLL_CLOEXEC EINVAL; nothing ready when new",
        raw);
}

/* ---- 2. errors ---- */

static void errors(void)
{
    int ep = ep_new(), p[2];
    CHECK_SYS(pipe(p));
    struct epoll_event ev = {.events = EPOLLIN, .data.u64 = 1}, out[4];
    int closed = CHECK_SYS(dup(p[0]));
    CHECK_SYS(close(closed));

    CHECK_ERRNO(epoll_ctl(closed, EPOLL_CTL_ADD, p[0], &ev), EBADF);
    CHECK_ERRNO(epoll_ctl(-1, EPOLL_CTL_ADD, p[0], &ev), EBADF);
    CHECK_ERRNO(epoll_ctl(ep, EPOLL_CTL_ADD, closed, &ev), EBADF);
    CHECK_ERRNO(epoll_ctl(ep, EPOLL_CTL_ADD, -1, &ev), EBADF);
    CHECK_ERRNO(epoll_ctl(ep, EPOLL_CTL_ADD, ep, &ev), EINVAL);
    CHECK_ERRNO(epoll_ctl(ep, 99, p[0], &ev), EINVAL);
    CHECK_ERRNO(epoll_ctl(p[0], EPOLL_CTL_ADD, p[1], &ev), EINVAL);
    CHECK_SYS(epoll_ctl(ep, EPOLL_CTL_ADD, p[0], &ev));
    CHECK_ERRNO(epoll_ctl(ep, EPOLL_CTL_ADD, p[0], &ev), EEXIST);
    CHECK_ERRNO(epoll_ctl(ep, EPOLL_CTL_MOD, p[1], &ev), ENOENT);
    CHECK_ERRNO(epoll_ctl(ep, EPOLL_CTL_DEL, p[1], &ev), ENOENT);
    CHECK_ERRNO(epoll_ctl(ep, EPOLL_CTL_DEL, p[1], NULL), ENOENT);
    CHECK_SYS(epoll_ctl(ep, EPOLL_CTL_DEL, p[0], NULL));
    CHECK_ERRNO(epoll_ctl(ep, EPOLL_CTL_DEL, p[0], NULL), ENOENT);
    CHECK_SYS(epoll_ctl(ep, EPOLL_CTL_ADD, p[0], &ev));
    SAY("errors: epoll_ctl EBADF (bad epfd, bad fd), EINVAL (fd == epfd, op 99, a pipe as epfd), "
        "EEXIST (ADD twice), ENOENT (MOD/DEL not added), DEL with a NULL event");

    char path[64];
    snprintf(path, sizeof path, "/tmp/epoll.%d", getpid());
    int f = CHECK_SYS(open(path, O_RDWR | O_CREAT | O_EXCL, 0600));
    CHECK_SYS(unlink(path));
    CHECK_ERRNO(epoll_ctl(ep, EPOLL_CTL_ADD, f, &ev), EPERM);
    CHECK_ERRNO(epoll_ctl(ep, EPOLL_CTL_DEL, f, NULL), EPERM);
    CHECK_SYS(close(f));
    struct epoll_event *volatile bad = (struct epoll_event *)1;
    CHECK_ERRNO(epoll_ctl(ep, EPOLL_CTL_ADD, p[1], bad), EFAULT);
    CHECK_ERRNO(epoll_ctl(ep, EPOLL_CTL_DEL, p[1], NULL), ENOENT);
    SAY("errors: epoll_ctl on a regular file (%s) EPERM for ADD and DEL, a bad event pointer "
        "EFAULT (nothing added)",
        path);

    CHECK_ERRNO(epoll_wait(ep, out, 0, 0), EINVAL);
    volatile int minus_one = -1; /* (glibc declares maxevents an access size) */
    CHECK_ERRNO(epoll_wait(ep, out, minus_one, 0), EINVAL);
    CHECK_ERRNO(epoll_wait(p[0], out, 4, 0), EINVAL);
    CHECK_ERRNO(epoll_wait(closed, out, 4, 0), EBADF);
    CHECK_EQ(epoll_wait(ep, bad, 4, 0), 0); /* nothing ready: nothing written */
    write_str(p[1], "x");
    CHECK_ERRNO(epoll_wait(ep, bad, 4, 0), EFAULT);
    CHECK_ERRNO(epoll_wait(ep, bad, 4, WAIT_MS), EFAULT);
    EXPECT_NOW(ep, EPOLLIN, 1);
    CLOSE(ep, p[0], p[1]);
    SAY("errors: epoll_wait with maxevents 0 or -1 EINVAL, on a pipe EINVAL, on a closed fd "
        "EBADF, a bad events pointer EFAULT with something ready (0 with nothing), which is "
        "still reported afterwards");
}

/* ---- 3. level-triggered pipe ---- */

static void level_pipe(void)
{
    const uint64_t rd = 0x1122334455667788ULL, wr = 0x8877665544332211ULL;
    int epr = ep_new(), epw = ep_new(), p[2];
    CHECK_SYS(pipe(p));
    ep_add(epr, p[0], EPOLLIN, rd);
    EXPECT_NONE(epr);
    write_str(p[1], "abc");
    EXPECT_WAIT(epr, EPOLLIN, rd, "EPOLLIN after a write");
    EXPECT_NOW(epr, EPOLLIN, rd);
    EXPECT_NOW(epr, EPOLLIN, rd);
    read_str(p[0], "abc");
    EXPECT_NONE(epr);
    SAY("level: empty pipe nothing; after a write EPOLLIN with data 0x%llx, again without "
        "reading, nothing once drained",
        (unsigned long long)rd);

    ep_add(epw, p[1], EPOLLOUT, wr);
    EXPECT_NOW(epw, EPOLLOUT, wr);
    EXPECT_NOW(epw, EPOLLOUT, wr);
    set_nonblock(p[0]);
    set_nonblock(p[1]);
    size_t cap = fill(p[1]);
    EXPECT_NONE(epw);
    EXPECT_NOW(epr, EPOLLIN, rd);
    CHECK_EQ(drain(p[0]), cap);
    EXPECT_WAIT(epw, EPOLLOUT, wr, "EPOLLOUT once the pipe is drained");
    EXPECT_NONE(epr);
    CHECK_SYS(close(p[0]));
    EXPECT_NONE(epr);
    EXPECT_NOW(epw, EPOLLOUT | EPOLLERR, wr);
    EXPECT_NOW(epw, EPOLLOUT | EPOLLERR, wr);
    CHECK_SYS(close(p[1]));
    EXPECT_NONE(epw);
    SAY("level: write end EPOLLOUT while there is room, nothing when full (%zu bytes, EAGAIN), "
        "again once drained; read end closed: EPOLLOUT|EPOLLERR",
        cap);

    int q[2], eph = ep_new();
    CHECK_SYS(pipe(q));
    ep_add(epr, q[0], EPOLLIN, 3);
    ep_add(eph, q[0], 0, 4);
    write_str(q[1], "xy");
    EXPECT_NOW(epr, EPOLLIN, 3);
    EXPECT_NONE(eph);
    CHECK_SYS(close(q[1]));
    EXPECT_NOW(epr, EPOLLIN | EPOLLHUP, 3);
    EXPECT_NOW(eph, EPOLLHUP, 4);
    read_str(q[0], "xy");
    EXPECT_NOW(epr, EPOLLHUP, 3);
    EXPECT_NOW(epr, EPOLLHUP, 3);
    EXPECT_NOW(eph, EPOLLHUP, 4);
    CHECK_EQ(read(q[0], (char[4]){0}, 4), 0);
    CLOSE(q[0], epr, epw, eph);
    SAY("level: write end closed: EPOLLIN|EPOLLHUP while data remains, EPOLLHUP once drained; "
        "EPOLLHUP also for an interest asking for nothing");
}

/* ---- 4. edge-triggered pipe ---- */

static void edge_pipe(void)
{
    int ep = ep_new(), p[2];
    CHECK_SYS(pipe(p));
    set_nonblock(p[0]);
    set_nonblock(p[1]);
    ep_add(ep, p[0], EPOLLIN | EPOLLET, 40);
    EXPECT_NONE(ep);
    write_str(p[1], "a");
    EXPECT_WAIT(ep, EPOLLIN, 40, "EPOLLIN|EPOLLET after a write");
    EXPECT_NONE(ep);
    EXPECT_NONE(ep);
    write_str(p[1], "b");
    EXPECT_WAIT(ep, EPOLLIN, 40, "EPOLLIN|EPOLLET after a second write while data is unread");
    EXPECT_NONE(ep);
    CHECK_EQ(drain(p[0]), 2);
    EXPECT_NONE(ep);
    write_str(p[1], "c");
    EXPECT_WAIT(ep, EPOLLIN, 40, "EPOLLIN|EPOLLET after draining to EAGAIN and a new write");
    EXPECT_NONE(ep);
    CHECK_EQ(drain(p[0]), 1);
    EXPECT_NONE(ep);
    SAY("edge: one report per write, none without a new one, a second write while data is "
        "unread reported again, drained to EAGAIN then a write reported again");

    int epw = ep_new();
    ep_add(epw, p[1], EPOLLOUT | EPOLLET, 41);
    EXPECT_NOW(epw, EPOLLOUT, 41);
    EXPECT_NONE(epw);
    size_t cap = fill(p[1]);
    EXPECT_NONE(epw);
    CHECK_EQ(drain(p[0]), cap);
    EXPECT_WAIT(epw, EPOLLOUT, 41, "EPOLLOUT|EPOLLET once a full pipe is drained");
    EXPECT_NONE(epw);
    CLOSE(p[0], p[1], ep, epw);
    SAY("edge: EPOLLOUT|EPOLLET reported at ADD, then not; filled to EAGAIN and drained: "
        "reported once more");
}

/* ---- 5. EPOLLONESHOT ---- */

static void oneshot(void)
{
    int ep = ep_new(), p[2];
    CHECK_SYS(pipe(p));
    ep_add(ep, p[0], EPOLLIN | EPOLLONESHOT, 50);
    EXPECT_NONE(ep);
    write_str(p[1], "a");
    EXPECT_WAIT(ep, EPOLLIN, 50, "EPOLLIN|EPOLLONESHOT after a write");
    EXPECT_NONE(ep);
    write_str(p[1], "b");
    EXPECT_NONE(ep);
    struct epoll_event ev = {.events = EPOLLIN, .data.u64 = 0};
    CHECK_ERRNO(epoll_ctl(ep, EPOLL_CTL_ADD, p[0], &ev), EEXIST);
    ep_mod(ep, p[0], EPOLLIN | EPOLLONESHOT, 51);
    EXPECT_NOW(ep, EPOLLIN, 51);
    EXPECT_NONE(ep);
    ep_mod(ep, p[0], EPOLLIN, 52);
    EXPECT_NOW(ep, EPOLLIN, 52);
    EXPECT_NOW(ep, EPOLLIN, 52);
    CHECK_SYS(epoll_ctl(ep, EPOLL_CTL_DEL, p[0], NULL));
    EXPECT_NONE(ep);
    write_str(p[1], "c");
    EXPECT_NONE(ep);
    CHECK_ERRNO(epoll_ctl(ep, EPOLL_CTL_DEL, p[0], NULL), ENOENT);
    CHECK_ERRNO(epoll_ctl(ep, EPOLL_CTL_MOD, p[0], &ev), ENOENT);
    read_str(p[0], "abc");
    CLOSE(p[0], p[1], ep);
    SAY("oneshot: one report, none after more writes, ADD again EEXIST, MOD re-arms (new data "
        "reported), MOD to level-triggered reports each time, DEL stops reports");
}

/* ---- 6. sockets ---- */

static void sockets(void)
{
    struct sockaddr_in la;
    int l = listener(8, &la), epl = ep_new();
    ep_add(epl, l, EPOLLIN, 60);
    EXPECT_NONE(epl);
    int c = connect_to(&la);
    EXPECT_WAIT(epl, EPOLLIN, 60, "EPOLLIN on a listener with a pending connection");
    int s = CHECK_SYS(accept(l, NULL, NULL));
    EXPECT_NONE(epl);

    int c2 = CHECK_SYS(socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0)), epc = ep_new();
    errno = 0;
    int r = connect(c2, (struct sockaddr *)&la, sizeof la);
    if (r != 0 && errno != EINPROGRESS)
        FAIL("non-blocking connect: %d, errno %d (%s)", r, errno, strerror(errno));
    ep_add(epc, c2, EPOLLOUT, 61);
    EXPECT_WAIT(epc, EPOLLOUT, 61, "EPOLLOUT after a non-blocking connect");
    CHECK_EQ(getopt_int(c2, SOL_SOCKET, SO_ERROR), 0);
    EXPECT_WAIT(epl, EPOLLIN, 60, "EPOLLIN on the listener for the non-blocking connect");
    int s2 = CHECK_SYS(accept(l, NULL, NULL));
    EXPECT_NONE(epl);
    CLOSE(c2, s2, epc, epl, l);
    SAY("tcp: a listener reports EPOLLIN with a pending connection (blocking connect), not once "
        "accepted; a non-blocking connect (%s) reports EPOLLOUT, SO_ERROR 0",
        r == 0 ? "0" : "EINPROGRESS");

    int ep = ep_new();
    ep_add(ep, s, EPOLLIN | EPOLLOUT, 62);
    EXPECT_NOW(ep, EPOLLOUT, 62);
    send_str(c, "hello");
    EXPECT_WAIT_FOR(ep, EPOLLIN, EPOLLIN | EPOLLOUT, 62, "EPOLLIN on data");
    EXPECT_NOW(ep, EPOLLIN | EPOLLOUT, 62);
    char buf[16];
    CHECK_EQ(recv(s, buf, sizeof buf, 0), 5);
    EXPECT_NOW(ep, EPOLLOUT, 62);
    CHECK_SYS(shutdown(c, SHUT_WR));
    EXPECT_WAIT_FOR(ep, EPOLLIN, EPOLLIN | EPOLLOUT, 62, "EPOLLIN after the peer's SHUT_WR");
    CHECK_EQ(recv(s, buf, sizeof buf, 0), 0);
    EXPECT_NOW(ep, EPOLLIN | EPOLLOUT, 62);
    CLOSE(c, s, ep);
    SAY("tcp: accepted socket EPOLLOUT, EPOLLIN|EPOLLOUT with data, EPOLLOUT once read; the "
        "peer's shutdown(SHUT_WR): EPOLLIN|EPOLLOUT (no EPOLLRDHUP when not asked), also after "
        "recv 0");

    tcp_pair(&c, &s);
    ep = ep_new();
    int ep2 = ep_new();
    ep_add(ep, c, EPOLLIN, 63);
    CHECK_SYS(close(s));
    EXPECT_WAIT(ep, EPOLLIN, 63, "EPOLLIN after the peer's close");
    CHECK_EQ(recv(c, buf, sizeof buf, 0), 0);
    ep_mod(ep, c, 0, 64);
    EXPECT_NONE(ep);
    send_str(c, "x");
    EXPECT_WAIT_FOR(ep, EPOLLERR, EPOLLERR | EPOLLHUP, 64, "EPOLLERR after the peer's RST");
    EXPECT_NOW(ep, EPOLLERR | EPOLLHUP, 64);
    ep_add(ep2, c, EPOLLIN | EPOLLOUT, 65);
    EXPECT_NOW(ep2, EPOLLIN | EPOLLOUT | EPOLLERR | EPOLLHUP, 65);
    CLOSE(c, ep, ep2);
    SAY("tcp: the peer closed, a write provokes its RST: EPOLLERR|EPOLLHUP (asked for nothing), "
        "EPOLLIN|EPOLLOUT|EPOLLERR|EPOLLHUP (asked for EPOLLIN|EPOLLOUT)");

    tcp_pair(&c, &s);
    set_nonblock(s);
    ep = ep_new();
    ep_add(ep, s, EPOLLIN | EPOLLET, 66);
    EXPECT_NONE(ep);
    send_str(c, "one");
    EXPECT_WAIT(ep, EPOLLIN, 66, "EPOLLIN|EPOLLET on TCP data");
    EXPECT_NONE(ep);
    send_str(c, "two");
    EXPECT_WAIT(ep, EPOLLIN, 66, "EPOLLIN|EPOLLET on more TCP data, the first unread");
    EXPECT_NONE(ep);
    CHECK_EQ(drain(s), 6);
    EXPECT_NONE(ep);
    send_str(c, "three");
    EXPECT_WAIT(ep, EPOLLIN, 66, "EPOLLIN|EPOLLET on TCP data after reading to EAGAIN");
    EXPECT_NONE(ep);
    CHECK_EQ(drain(s), 5);
    EXPECT_NONE(ep);
    CLOSE(c, s, ep);
    SAY("tcp: edge-triggered: one report per arrival (also with data unread), none in between, "
        "read to EAGAIN then new data reported again");

    struct sockaddr_in ua, va;
    int u = bound(SOCK_DGRAM, &ua), v = bound(SOCK_DGRAM, &va);
    ep = ep_new();
    ep_add(ep, v, EPOLLIN, 67);
    EXPECT_NONE(ep);
    CHECK_EQ(sendto(u, "dgram", 5, 0, (struct sockaddr *)&va, sizeof va), 5);
    EXPECT_WAIT(ep, EPOLLIN, 67, "EPOLLIN on a UDP datagram");
    EXPECT_NOW(ep, EPOLLIN, 67);
    CHECK_EQ(recv(v, buf, sizeof buf, 0), 5);
    CHECK(memcmp(buf, "dgram", 5) == 0);
    EXPECT_NONE(ep);
    ep_mod(ep, v, EPOLLIN | EPOLLOUT, 68);
    EXPECT_NOW(ep, EPOLLOUT, 68);
    CLOSE(u, v, ep);
    SAY("udp: EPOLLIN once a datagram arrives, nothing once it is read; EPOLLOUT when asked");
}

/* ---- 7. many descriptors ---- */

static void many(void)
{
    static int p[NPIPES][2];
    int ep = ep_new(), ready = 0;
    for (int i = 0; i < NPIPES; i++) {
        CHECK_SYS(pipe(p[i]));
        ep_add(ep, p[i][0], EPOLLIN, 1000 + (uint64_t)i);
    }
    EXPECT_NONE(ep);
    for (int i = 0; i < NPIPES; i += 7, ready++)
        write_str(p[i][1], "m");
    CHECK_EQ(ready, 15);

    int seen[NPIPES] = {0}, counts[4] = {0}, calls = 0, total = 0;
    struct epoll_event ev[10];
    for (;; calls++) {
        CHECK(calls < 4);
        int n = CHECK_SYS(epoll_wait(ep, ev, 10, calls == 0 ? WAIT_MS : 0));
        counts[calls] = n;
        if (n == 0)
            break;
        for (int k = 0; k < n; k++) {
            long i = (long)ev[k].data.u64 - 1000;
            if (i < 0 || i >= NPIPES || i % 7 != 0)
                FAIL("reported data %llu, not one of the written pipes",
                     (unsigned long long)ev[k].data.u64);
            if (seen[i]++)
                FAIL("pipe %ld reported twice", i);
            CHECK_EQ(ev[k].events, EPOLLIN);
            read_str(p[i][0], "m");
            total++;
        }
    }
    CHECK_EQ(total, 15);
    CHECK_EQ(counts[0], 10);
    CHECK_EQ(counts[1], 5);
    CHECK_EQ(calls, 2);
    for (int i = 0; i < NPIPES; i++)
        CLOSE(p[i][0], p[i][1]);
    CHECK_SYS(close(ep));
    SAY("many: %d pipes, every 7th written: maxevents 10 returned %d, then %d, then 0; each of "
        "the 15 once, with its data",
        NPIPES, counts[0], counts[1]);
}

/* ---- 8. poll on an epoll descriptor ---- */

static void poll_epoll(void)
{
    int ep = ep_new(), p[2];
    CHECK_SYS(pipe(p));
    ep_add(ep, p[0], EPOLLIN, 80);
    struct pollfd pf = {ep, POLLIN | POLLOUT, 0};
    CHECK_EQ(poll(&pf, 1, 0), 0);
    CHECK_EQ(pf.revents, 0);
    write_str(p[1], "p");
    pf.revents = 0;
    int n = CHECK_SYS(poll(&pf, 1, WAIT_MS));
    if (n == 0)
        FAIL("timed out after %d ms waiting for POLLIN on the epoll fd", WAIT_MS);
    CHECK_EQ(n, 1);
    CHECK_EQ(pf.revents, POLLIN);
    pf = (struct pollfd){ep, POLLIN, 0};
    CHECK_EQ(poll(&pf, 1, 0), 1);
    CHECK_EQ(pf.revents, POLLIN);
    EXPECT_NOW(ep, EPOLLIN, 80);
    read_str(p[0], "p");
    pf.revents = 0;
    CHECK_EQ(poll(&pf, 1, 0), 0);
    CHECK_EQ(pf.revents, 0);
    CLOSE(p[0], p[1], ep);
    SAY("poll: an epoll fd is not ready while nothing is; POLLIN (only, also asked for POLLOUT) "
        "once a registered pipe has data; 0 again once drained");
}

/* ---- 9. closing registered descriptors ---- */

static void closing(void)
{
    int ep = ep_new(), p[2];
    CHECK_SYS(pipe(p));
    ep_add(ep, p[0], EPOLLIN, 90);
    write_str(p[1], "z");
    EXPECT_NOW(ep, EPOLLIN, 90);
    CHECK_SYS(close(p[0]));
    EXPECT_NONE(ep);
    CHECK_ERRNO(epoll_ctl(ep, EPOLL_CTL_DEL, p[0], NULL), EBADF);
    CHECK_SYS(close(p[1]));
    SAY("close: closing the only descriptor of a registered pipe removes it (nothing reported, "
        "DEL EBADF)");

    int q[2], r[2];
    CHECK_SYS(pipe(q));
    int d = CHECK_SYS(dup(q[0])), num = q[0];
    ep_add(ep, q[0], EPOLLIN, 91);
    CHECK_SYS(close(q[0]));
    EXPECT_NONE(ep);
    write_str(q[1], "q");
    EXPECT_NOW(ep, EPOLLIN, 91);
    EXPECT_NOW(ep, EPOLLIN, 91);
    CHECK_ERRNO(epoll_ctl(ep, EPOLL_CTL_DEL, num, NULL), EBADF);
    CHECK_ERRNO(epoll_ctl(ep, EPOLL_CTL_DEL, d, NULL), ENOENT);
    struct epoll_event e1 = {.events = EPOLLIN, .data.u64 = 0};
    CHECK_ERRNO(epoll_ctl(ep, EPOLL_CTL_MOD, d, &e1), ENOENT);

    CHECK_SYS(pipe(r));
    CHECK_EQ(r[0], num); /* the lowest free number: the closed one */
    ep_add(ep, r[0], EPOLLIN, 92);
    EXPECT_NOW(ep, EPOLLIN, 91);
    write_str(r[1], "r");
    struct epoll_event ev[4];
    int n = CHECK_SYS(epoll_wait(ep, ev, 4, 0));
    CHECK_EQ(n, 2);
    CHECK_EQ(ev[0].events, EPOLLIN);
    CHECK_EQ(ev[1].events, EPOLLIN);
    CHECK((ev[0].data.u64 == 91 && ev[1].data.u64 == 92) ||
          (ev[0].data.u64 == 92 && ev[1].data.u64 == 91));
    CHECK_SYS(close(d));
    EXPECT_NOW(ep, EPOLLIN, 92);
    read_str(r[0], "r");
    EXPECT_NONE(ep);
    CLOSE(q[1], r[0], r[1], ep);
    SAY("close: with a dup() alive a closed descriptor's interest keeps being reported (DEL of "
        "the number EBADF, of the dup ENOENT); a new pipe reusing the number is a separate "
        "interest (both reported); closing the dup ends the old one");
}

/* ---- 10. signals and timeouts ---- */

static volatile sig_atomic_t usr1;

static void on_usr1(int sig)
{
    (void)sig;
    usr1++;
}

/* Waits in epoll_pwait (10 s) with `mask`; must be interrupted by SIGUSR1's handler. */
static void pwait_eintr(int ep, const sigset_t *mask, const char *how)
{
    struct epoll_event ev[2];
    usr1 = 0;
    errno = 0;
    int r = epoll_pwait(ep, ev, 2, WAIT_MS, mask);
    if (r == 0)
        FAIL("%s: epoll_pwait timed out after %d ms, no SIGUSR1 came in", how, WAIT_MS);
    if (r != -1 || errno != EINTR)
        FAIL("%s: epoll_pwait returned %d, errno %d (%s), expected EINTR", how, r, errno,
             strerror(errno));
    CHECK(usr1 >= 1);
    sigset_t now;
    CHECK_SYS(sigprocmask(SIG_BLOCK, NULL, &now));
    CHECK(sigismember(&now, SIGUSR1));
}

static void signals(void)
{
    int ep = ep_new(), p[2];
    CHECK_SYS(pipe(p));
    ep_add(ep, p[0], EPOLLIN, 100);
    struct epoll_event ev[2];
    CHECK_EQ(epoll_wait(ep, ev, 2, 50), 0);
    CHECK_EQ(epoll_pwait(ep, ev, 2, 0, NULL), 0);
    SAY("timeout: epoll_wait with a 50 ms timeout and nothing ready returns 0; epoll_pwait "
        "with a NULL mask and timeout 0 returns 0");

    sigset_t usr, old, open, closed;
    sigemptyset(&usr);
    sigaddset(&usr, SIGUSR1);
    set_handler(SIGUSR1, on_usr1, 0);
    CHECK_SYS(sigprocmask(SIG_BLOCK, &usr, &old));
    CHECK_SYS(sigprocmask(SIG_BLOCK, NULL, &closed));
    open = closed;
    sigdelset(&open, SIGUSR1);

    pid_t parent = getpid();
    pid_t kid = CHECK_SYS(fork());
    if (kid == 0) {
        for (int i = 0; i < WAIT_MS / 10; i++) {
            if (getppid() != parent)
                _exit(0);
            kill(parent, SIGUSR1);
            nanosleep(&(struct timespec){0, 10 * 1000000}, NULL);
        }
        _exit(0);
    }
    pwait_eintr(ep, &open, "handler without SA_RESTART");
    set_handler(SIGUSR1, on_usr1, SA_RESTART);
    pwait_eintr(ep, &open, "handler with SA_RESTART");

    write_str(p[1], "s");
    usr1 = 0;
    int n = CHECK_SYS(epoll_pwait(ep, ev, 2, WAIT_MS, &closed));
    check_one(__LINE__, "epoll_pwait with SIGUSR1 blocked", n, ev, EPOLLIN, 100);
    CHECK_EQ(usr1, 0);

    CHECK_SYS(kill(kid, SIGKILL));
    int st;
    while (waitpid(kid, &st, 0) == -1)
        CHECK_EQ(errno, EINTR);
    /* Discard a pending SIGUSR1 (ignoring it does), then restore the mask and the default. */
    set_handler(SIGUSR1, SIG_IGN, 0);
    CHECK_SYS(sigprocmask(SIG_SETMASK, &old, NULL));
    set_handler(SIGUSR1, SIG_DFL, 0);
    SAY("signals: SIGUSR1 blocked, a child sends it every 10 ms: epoll_pwait with a mask that "
        "lets it in returns EINTR after the handler ran (also with SA_RESTART), the mask is "
        "back; with it kept blocked, ready data is returned and no handler runs");

    const char *raw = "";
#if defined(SYS_epoll_wait) && defined(SYS_epoll_pwait)
    /* musl's epoll_wait is the epoll_pwait system call: the kernel's own epoll_wait too. */
    memset(ev, 0, sizeof ev);
    CHECK_EQ(syscall(SYS_epoll_wait, ep, ev, 2, 0), 1);
    CHECK_EQ(ev[0].events, EPOLLIN);
    CHECK_EQ(ev[0].data.u64, 100);
    memset(ev, 0, sizeof ev);
    CHECK_EQ(syscall(SYS_epoll_pwait, ep, ev, 2, 0, &closed, 8), 1);
    CHECK_EQ(ev[0].data.u64, 100);
    CHECK_EQ(syscall(SYS_epoll_pwait, ep, ev, 2, 0, NULL, 0), 1);
    CHECK_ERRNO(syscall(SYS_epoll_pwait, ep, ev, 2, 0, &closed, 4), EINVAL);
    read_str(p[0], "s");
    CHECK_EQ(syscall(SYS_epoll_wait, ep, ev, 2, 0), 0);
    CHECK_ERRNO(syscall(SYS_epoll_wait, ep, ev, 0, 0), EINVAL);
    raw = "raw system calls: epoll_wait reports the data, epoll_pwait too (sigsetsize 4 EINVAL)";
#else
    read_str(p[0], "s");
    raw = "raw system calls not checked (no SYS_epoll_wait)";
#endif
    CLOSE(p[0], p[1], ep);
    SAY("signals: %s", raw);
}

/* ---- 11. EPOLLRDHUP ---- */

static void rdhup(void)
{
    int c, s, ep = ep_new();
    tcp_pair(&c, &s);
    ep_add(ep, s, EPOLLIN | EPOLLRDHUP, 110);
    EXPECT_NONE(ep);
    send_str(c, "d");
    EXPECT_WAIT(ep, EPOLLIN, 110, "EPOLLIN on data (asked for EPOLLIN|EPOLLRDHUP)");
    char buf[4];
    CHECK_EQ(recv(s, buf, sizeof buf, 0), 1);
    EXPECT_NONE(ep);
    CHECK_SYS(shutdown(c, SHUT_WR));
    EXPECT_WAIT_FOR(ep, EPOLLIN, EPOLLIN | EPOLLRDHUP, 110,
                    "EPOLLRDHUP: EPOLLIN|EPOLLRDHUP after the peer's shutdown(SHUT_WR)");
    CHECK_EQ(recv(s, buf, sizeof buf, 0), 0);
    EXPECT_NOW(ep, EPOLLIN | EPOLLRDHUP, 110);
    CLOSE(c, s, ep);
    SAY("rdhup: EPOLLRDHUP asked for: plain data EPOLLIN only; after the peer's "
        "shutdown(SHUT_WR) EPOLLIN|EPOLLRDHUP, also after recv 0");
}

int main(void)
{
    test_begin("epoll");
    set_handler(SIGPIPE, SIG_IGN, 0);
    create();
    errors();
    level_pipe();
    edge_pipe();
    oneshot();
    sockets();
    many();
    poll_epoll();
    closing();
    signals();
    rdhup();
    PASS();
}
