/*
 * net: TCP and UDP over IPv4 loopback (127.0.0.1), as static Linux programs use them. Sockets
 * bind port 0 and read their port back; nothing depends on timing: an asynchronous outcome (a
 * queued connection, a FIN or RST arriving) is awaited with poll() and a 10 s timeout.
 *
 * - tcp: bind, getsockname, listen, blocking connect and accept; accept's address and the
 *   accepted socket's getpeername are the client's getsockname, its getsockname the listener's;
 *   messages both ways; shutdown(SHUT_WR) gives the peer EOF (the shut side EPIPE) while the
 *   other direction works; a child sends 1 MiB in odd-sized sends, the parent reads to EOF and
 *   checks count and checksum, then sends 256 KiB back for the child to check;
 * - backlog: three clients connect (backlog 4) before any accept; POLLIN on the listener; each
 *   accepted socket has its own client's address and byte;
 * - udp: sendto/recvfrom with the sender's address (addrlen 16), datagrams of 1, 100 and 1400
 *   bytes keep their boundaries, connected sockets use send/recv, a short buffer truncates a
 *   datagram and drops its rest;
 * - non-blocking (O_NONBLOCK, SOCK_NONBLOCK, accept4, MSG_DONTWAIT): EAGAIN from accept and
 *   recv; connect gives 0 or EINPROGRESS, then POLLOUT and SO_ERROR 0; accepted sockets do not
 *   inherit O_NONBLOCK; a connection whose peer does not read fills up: EAGAIN and no POLLOUT,
 *   while the peer has POLLIN;
 * - errors: ECONNREFUSED (blocking, or via SO_ERROR after EINPROGRESS), EADDRINUSE, EINVAL
 *   (bind twice, addrlen 4, accept without listen, socket type 12345), EOPNOTSUPP (listen on
 *   UDP), ENOTCONN (getpeername), EPIPE (send unconnected), EFAULT (bind, recv; the data stays),
 *   EPROTONOSUPPORT (TCP with IPPROTO_UDP), EAFNOSUPPORT (sin_family AF_INET6);
 * - EPIPE: writes to a closed peer succeed until its RST (POLLERR|POLLHUP), then fail with
 *   EPIPE (or ECONNRESET), then EPIPE; each EPIPE raises SIGPIPE, except with MSG_NOSIGNAL;
 * - options: SO_REUSEADDR, TCP_NODELAY, SO_KEEPALIVE read back, SO_RCVBUF/SO_SNDBUF at least
 *   the 65536 set, SO_TYPE; optlen 2 is EINVAL for setsockopt, truncates getsockopt's value, a
 *   negative one is EINVAL; unknown options ENOPROTOOPT, an unknown level ENOPROTOOPT (set) or
 *   EOPNOTSUPP (get); with SO_REUSEADDR a new listener binds the port whose accepted connection
 *   closed first and is in TIME_WAIT (without it EADDRINUSE);
 * - sendmsg/recvmsg with two iovecs on TCP and UDP (msg_name, MSG_TRUNC), read/write on TCP;
 * - close: after the peer's shutdown(SHUT_WR) or close(), poll says POLLIN (no POLLHUP) and recv
 *   0; POLLIN|POLLHUP once both directions are shut;
 * - interfaces: the SIOCGIF* ioctls on lo (struct ifreq 40 bytes, ifconf 16): SIOCGIFCONF with a
 *   null buffer gives the length, a buffer for one entry gets one, lo is listed with
 *   127.0.0.1; index and name both ways; flags UP|LOOPBACK|RUNNING; address, destination,
 *   netmask; hardware family ARPHRD_LOOPBACK; MTU, metric, queue length, map; ENODEV for an
 *   unknown name or index, EFAULT for bad pointers; on an AF_UNIX socket the device requests
 *   work and the address ones are ENOTTY; setting flags or the MTU is EPERM without privilege
 *   (on Reef EOPNOTSUPP for root; Linux's root is not asked to change lo); /proc/net/dev's
 *   headers and lo's packet counts grow with a datagram over 127.0.0.1; /proc/net/tcp shows a
 *   listener (0A) and both ends of a connection (01), /proc/net/udp a bound socket (07), by
 *   their addresses and ports, each with its holder's uid and its descriptor's inode (what
 *   netstat -p matches); /proc/net/route has Linux's header.
 * - netlink: route netlink sockets (SOCK_RAW and SOCK_DGRAM; ESOCKTNOSUPPORT for a stream,
 *   EPROTONOSUPPORT past the last protocol): getsockname before bind (port 0), bind with port 0
 *   gives the process's pid, a second socket another port, binding a taken port EADDRINUSE, a
 *   short address EINVAL; SO_RCVBUF doubled, NETLINK_EXT_ACK accepted; a GETLINK dump (sendto,
 *   sized with MSG_PEEK|MSG_TRUNC first) lists lo as index 1, ARPHRD_LOOPBACK, UP|LOOPBACK,
 *   with its name and MTU, and ends with NLMSG_DONE; a GETADDR dump (write) has 127.0.0.1/8,
 *   scope host, label lo; a GETROUTE dump (send) only IPv4 routes, on Reef with a NIC exactly
 *   default via 10.0.2.2 and 10.0.2.0/24 src 10.0.2.15 on index 2; answers come from port 0
 *   with the request's sequence and the socket's port; GETLINK of index 1 with NLM_F_ACK
 *   answers lo, then an ack; RTM_DELADDR is EPERM without privilege; malformed sends are
 *   taken and answered with nothing; a cut answer sets MSG_TRUNC; two requests in one send get
 *   two answers; poll and epoll see POLLIN only while an answer waits; a non-blocking receive
 *   of nothing is EAGAIN; on Reef, answers past the receive buffer are dropped (POLLERR, then
 *   ENOBUFS once).
 */
#include "reef-test.h"
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <net/if.h>
#include <net/if_arp.h>
#include <netpacket/packet.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <stddef.h>

#define WAIT_MS 10000            /* generous timeout for asynchronous outcomes */
#define STREAM_BYTES (1 << 20)   /* child to parent */
#define REVERSE_BYTES (256 << 10) /* parent to child */
#define FILL_CAP (64 << 20)      /* most bytes sent to a peer that does not read */

/* ---- helpers ---- */

static struct sockaddr_in loopback(uint16_t port)
{
    return (struct sockaddr_in){
        .sin_family = AF_INET, .sin_port = htons(port), .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
}

static int same_addr(const struct sockaddr_in *a, const struct sockaddr_in *b)
{
    return a->sin_family == b->sin_family && a->sin_port == b->sin_port &&
           a->sin_addr.s_addr == b->sin_addr.s_addr;
}

/* getsockname (peer 0) or getpeername (peer 1), which must fill a whole sockaddr_in. */
static struct sockaddr_in addr_of(int fd, int peer)
{
    struct sockaddr_in a;
    socklen_t len = sizeof a;
    CHECK_SYS((peer ? getpeername : getsockname)(fd, (struct sockaddr *)&a, &len));
    CHECK_EQ(len, sizeof a);
    return a;
}

/* A socket of `type` bound to 127.0.0.1 port 0; its address in *addr. */
static int bound(int type, struct sockaddr_in *addr)
{
    int fd = CHECK_SYS(socket(AF_INET, type, 0));
    struct sockaddr_in a = loopback(0);
    CHECK_SYS(bind(fd, (struct sockaddr *)&a, sizeof a));
    *addr = addr_of(fd, 0);
    CHECK(addr->sin_port != 0);
    CHECK_EQ(addr->sin_addr.s_addr, htonl(INADDR_LOOPBACK));
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

/* Waits (at most WAIT_MS) until poll reports something of `events` (or POLLERR/POLLHUP). */
static short wait_for(int fd, short events, const char *what)
{
    struct pollfd p = {fd, events, 0};
    if (CHECK_SYS(poll(&p, 1, WAIT_MS)) == 0)
        FAIL("timed out after %d ms waiting for %s", WAIT_MS, what);
    return p.revents;
}

/* Waits (at most WAIT_MS) until poll reports exactly `want` of `events`|POLLERR|POLLHUP. */
static void wait_exact(int fd, short events, short want, const char *what)
{
    long long end = now_ns() + WAIT_MS * 1000000LL;
    short got;
    while ((got = wait_for(fd, events, what)) != want)
        if (now_ns() > end)
            FAIL("waiting for %s: poll says 0x%x, not 0x%x", what, got, want);
}

/* What poll reports right now. */
static short poll_now(int fd, short events)
{
    struct pollfd p = {fd, events, 0};
    CHECK_SYS(poll(&p, 1, 0));
    return p.revents;
}

static void send_all(int fd, const void *buf, size_t n)
{
    for (const char *p = buf; n > 0;) {
        ssize_t r = CHECK_SYS(send(fd, p, n, MSG_NOSIGNAL));
        CHECK(r > 0);
        p += r;
        n -= (size_t)r;
    }
}

/* Receives strlen(want) bytes, which must be `want`. */
static void expect(int fd, const char *want)
{
    char buf[64];
    size_t n = strlen(want), got = 0;
    CHECK(n <= sizeof buf);
    while (got < n) {
        ssize_t r = CHECK_SYS(recv(fd, buf + got, n - got, 0));
        if (r == 0)
            FAIL("EOF after %zu of the %zu bytes \"%s\"", got, n, want);
        got += (size_t)r;
    }
    if (memcmp(buf, want, n) != 0)
        FAIL("received \"%.*s\", expected \"%s\"", (int)n, buf, want);
}

/* Closes each descriptor given, failing if a close fails. */
#define CLOSE(...) close_fds((const int[]){__VA_ARGS__}, sizeof((int[]){__VA_ARGS__}) / sizeof(int))

static void close_fds(const int *fds, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (close(fds[i]) != 0)
            FAIL("close(%d) failed: %s", fds[i], strerror(errno));
}

static int is_nonblock(int fd)
{
    return (CHECK_SYS(fcntl(fd, F_GETFL)) & O_NONBLOCK) != 0;
}

static void set_nonblock(int fd)
{
    CHECK_SYS(fcntl(fd, F_SETFL, CHECK_SYS(fcntl(fd, F_GETFL)) | O_NONBLOCK));
}

static int getopt_int(int fd, int level, int name)
{
    int v = -1;
    socklen_t len = sizeof v;
    CHECK_SYS(getsockopt(fd, level, name, &v, &len));
    CHECK_EQ(len, sizeof v);
    return v;
}

static void setopt_int(int fd, int level, int name, int v)
{
    CHECK_SYS(setsockopt(fd, level, name, &v, sizeof v));
}

/* Deterministic pseudo-random bytes (xorshift32) and an FNV-1a checksum. */
static uint8_t gen_byte(uint32_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 17;
    *s ^= *s << 5;
    return (uint8_t)(*s >> 24);
}

#define FNV_START 14695981039346656037ULL
#define FNV_STEP(h, byte) ((h) = ((h) ^ (byte)) * 1099511628211ULL)

static uint64_t gen_sum(uint32_t seed, size_t total)
{
    uint64_t h = FNV_START;
    for (size_t i = 0; i < total; i++)
        FNV_STEP(h, gen_byte(&seed));
    return h;
}

/* Odd-sized chunks: 1, 7, 333, ... bytes. */
static const size_t odd_sizes[] = {1, 7, 333, 4099, 65537, 12345, 3, 1023, 30001, 999};
#define NODD (sizeof odd_sizes / sizeof odd_sizes[0])

static uint8_t bigbuf[65537];

/* Sends `total` generator bytes from `seed` in odd-sized sends. */
static void send_stream(int fd, uint32_t seed, size_t total)
{
    for (size_t done = 0, i = 0, n; done < total; done += n, i++) {
        n = odd_sizes[i % NODD] < total - done ? odd_sizes[i % NODD] : total - done;
        for (size_t k = 0; k < n; k++)
            bigbuf[k] = gen_byte(&seed);
        send_all(fd, bigbuf, n);
    }
}

/* Reads to EOF in odd-sized reads; returns the byte count, the checksum in *h. */
static size_t recv_stream(int fd, uint64_t *h)
{
    size_t total = 0;
    *h = FNV_START;
    for (size_t i = 0;; i++) {
        ssize_t r = CHECK_SYS(read(fd, bigbuf, odd_sizes[(i + 3) % NODD]));
        if (r == 0)
            return total;
        for (ssize_t k = 0; k < r; k++)
            FNV_STEP(*h, bigbuf[k]);
        total += (size_t)r;
    }
}

/* ---- 1. TCP in one process ---- */

static void tcp_basic(void)
{
    struct sockaddr_in la;
    int l = listener(8, &la);
    int c = connect_to(&la);
    struct sockaddr_in from;
    socklen_t flen = sizeof from;
    int s = CHECK_SYS(accept(l, (struct sockaddr *)&from, &flen));
    CHECK_EQ(flen, sizeof from);
    struct sockaddr_in ca = addr_of(c, 0);
    CHECK(ca.sin_port != 0 && ca.sin_port != la.sin_port);
    CHECK(same_addr(&from, &ca));
    struct sockaddr_in sp = addr_of(s, 1), sl = addr_of(s, 0), cp = addr_of(c, 1);
    CHECK(same_addr(&sp, &ca));
    CHECK(same_addr(&sl, &la));
    CHECK(same_addr(&cp, &la));
    /* Sockets are on the socket file system (Linux's SOCKFS_MAGIC), whatever is mounted. */
    struct statfs sf;
    CHECK_SYS(fstatfs(s, &sf));
    CHECK_EQ((unsigned long)sf.f_type, 0x534f434bUL);

    char buf[64];
    for (int i = 0; i < 5; i++) {
        char msg[16];
        snprintf(msg, sizeof msg, "ping %d", i);
        send_all(c, msg, strlen(msg));
        expect(s, msg);
        msg[1] = 'o';
        send_all(s, msg, strlen(msg));
        expect(c, msg);
    }

    CHECK_SYS(shutdown(c, SHUT_WR));
    CHECK_EQ(recv(s, buf, sizeof buf, 0), 0);
    CHECK_EQ(recv(s, buf, sizeof buf, 0), 0);
    CHECK_ERRNO(send(c, "x", 1, MSG_NOSIGNAL), EPIPE);
    send_all(s, "still open", 10);
    expect(c, "still open");
    CHECK_SYS(close(s));
    CHECK_EQ(recv(c, buf, sizeof buf, 0), 0);
    CLOSE(c, l);
    SAY("tcp: bind 127.0.0.1:0 got port %d, blocking connect/accept, addresses agree, 5 "
        "messages each way, shutdown(SHUT_WR) gives EOF (and EPIPE) while the other way works",
        ntohs(la.sin_port));
}

/* ---- 2. TCP across processes ---- */

static void tcp_processes(void)
{
    struct sockaddr_in la;
    int l = listener(8, &la);
    pid_t pid = CHECK_SYS(fork());
    if (pid == 0) {
        CHECK_SYS(close(l));
        int c = connect_to(&la);
        send_stream(c, 12345, STREAM_BYTES);
        CHECK_SYS(close(c));
        c = connect_to(&la);
        uint64_t h;
        CHECK_EQ(recv_stream(c, &h), REVERSE_BYTES);
        CHECK_EQ(h, gen_sum(777, REVERSE_BYTES));
        CHECK_SYS(close(c));
        _exit(0);
    }
    int s = CHECK_SYS(accept(l, NULL, NULL));
    uint64_t h;
    CHECK_EQ(recv_stream(s, &h), STREAM_BYTES);
    CHECK_EQ(h, gen_sum(12345, STREAM_BYTES));
    CHECK_SYS(close(s));
    s = CHECK_SYS(accept(l, NULL, NULL));
    send_stream(s, 777, REVERSE_BYTES);
    CHECK_SYS(close(s));
    CHECK_CHILD_EXIT(pid, 0);
    CHECK_SYS(close(l));
    SAY("tcp: a child sent %d bytes in odd-sized sends, the parent read them to EOF, count and "
        "checksum right; %d bytes back to the child, checked there",
        STREAM_BYTES, REVERSE_BYTES);
}

/* ---- 3. several pending connections ---- */

static void backlog(void)
{
    struct sockaddr_in la;
    int l = listener(4, &la);
    int c[3];
    struct sockaddr_in ca[3];
    for (int i = 0; i < 3; i++) {
        c[i] = connect_to(&la);
        ca[i] = addr_of(c[i], 0);
        send_all(c[i], (char[]){(char)('A' + i)}, 1);
    }
    CHECK_EQ(wait_for(l, POLLIN, "a queued connection"), POLLIN);
    int seen = 0;
    for (int i = 0; i < 3; i++) {
        struct sockaddr_in from;
        socklen_t flen = sizeof from;
        int s = CHECK_SYS(accept(l, (struct sockaddr *)&from, &flen));
        int k = 0;
        while (k < 3 && !same_addr(&from, &ca[k]))
            k++;
        if (k == 3)
            FAIL("accepted a connection from port %d, not one of the clients",
                 ntohs(from.sin_port));
        CHECK(!(seen & (1 << k)));
        seen |= 1 << k;
        expect(s, (char[]){(char)('A' + k), 0});
        CHECK_SYS(close(s));
    }
    CHECK_EQ(poll_now(l, POLLIN), 0);
    for (int i = 0; i < 3; i++)
        CHECK_SYS(close(c[i]));
    CHECK_SYS(close(l));
    SAY("tcp: 3 connections queued on a backlog-4 listener before accept, POLLIN, each "
        "accepted with its own address and byte, then no POLLIN");
}

/* ---- 4. UDP ---- */

static void udp(void)
{
    struct sockaddr_in aa, ba, from;
    int a = bound(SOCK_DGRAM, &aa), b = bound(SOCK_DGRAM, &ba);
    static char out[1400], in[4096];
    for (size_t i = 0; i < sizeof out; i++)
        out[i] = (char)(i * 7 + 1);

    CHECK_EQ(getopt_int(a, SOL_SOCKET, SO_TYPE), SOCK_DGRAM);
    const size_t sizes[3] = {1, 100, 1400};
    for (int i = 0; i < 3; i++)
        CHECK_EQ(sendto(a, out, sizes[i], 0, (struct sockaddr *)&ba, sizeof ba), sizes[i]);
    for (int i = 0; i < 3; i++) {
        socklen_t flen = sizeof from;
        memset(&from, 0, sizeof from);
        CHECK_EQ(recvfrom(b, in, sizeof in, 0, (struct sockaddr *)&from, &flen), sizes[i]);
        CHECK_EQ(flen, sizeof(struct sockaddr_in));
        CHECK(same_addr(&from, &aa));
        CHECK(memcmp(in, out, sizes[i]) == 0);
    }
    SAY("udp: datagrams of 1, 100, 1400 bytes arrive whole with the sender's address");

    /* Connected sockets. */
    CHECK_SYS(connect(a, (struct sockaddr *)&ba, sizeof ba));
    CHECK_SYS(connect(b, (struct sockaddr *)&aa, sizeof aa));
    struct sockaddr_in ap = addr_of(a, 1);
    CHECK(same_addr(&ap, &ba));
    CHECK_EQ(send(a, "hello", 5, 0), 5);
    CHECK_EQ(recv(b, in, sizeof in, 0), 5);
    CHECK(memcmp(in, "hello", 5) == 0);
    CHECK_EQ(send(b, "world!", 6, 0), 6);
    CHECK_EQ(recv(a, in, sizeof in, 0), 6);
    CHECK(memcmp(in, "world!", 6) == 0);
    SAY("udp: connected sockets exchange datagrams with send/recv, getpeername right");

    /* Truncation: the rest of the datagram is dropped. */
    CHECK_EQ(send(a, out, 200, 0), 200);
    CHECK_EQ(send(a, "next", 4, 0), 4);
    CHECK_EQ(recv(b, in, 50, 0), 50);
    CHECK(memcmp(in, out, 50) == 0);
    CHECK_EQ(recv(b, in, sizeof in, 0), 4);
    CHECK(memcmp(in, "next", 4) == 0);
    set_nonblock(b);
    CHECK_ERRNO(recv(b, in, sizeof in, 0), EAGAIN);
    CLOSE(a, b);
    SAY("udp: recv of a 200-byte datagram into 50 bytes returns 50, the rest is dropped");
}

/* ---- 5. non-blocking ---- */

static void nonblocking(void)
{
    struct sockaddr_in la;
    int l = listener(8, &la);
    set_nonblock(l);
    CHECK_ERRNO(accept(l, NULL, NULL), EAGAIN);

    int c = CHECK_SYS(socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0));
    CHECK(is_nonblock(c));
    errno = 0;
    int r = connect(c, (struct sockaddr *)&la, sizeof la);
    if (r != 0 && errno != EINPROGRESS)
        FAIL("non-blocking connect: %d, errno %d (%s)", r, errno, strerror(errno));
    int immediate = r == 0;
    CHECK(wait_for(c, POLLOUT, "the non-blocking connect") & POLLOUT);
    CHECK_EQ(getopt_int(c, SOL_SOCKET, SO_ERROR), 0);
    CHECK(wait_for(l, POLLIN, "the connection on the listener") & POLLIN);
    int s = CHECK_SYS(accept(l, NULL, NULL));
    CHECK(!is_nonblock(s));
    CHECK_ERRNO(recv(c, bigbuf, 1, 0), EAGAIN);
    CHECK_ERRNO(recv(s, bigbuf, 1, MSG_DONTWAIT), EAGAIN);
    CHECK(!is_nonblock(s));
    SAY("nonblock: EAGAIN from accept and recv, connect %s then POLLOUT and SO_ERROR 0, "
        "accepted socket blocking, MSG_DONTWAIT EAGAIN",
        immediate ? "0" : "EINPROGRESS");

    /* accept4 with SOCK_NONBLOCK. */
    int c2 = connect_to(&la);
    CHECK(wait_for(l, POLLIN, "the second connection") & POLLIN);
    int s2 = CHECK_SYS(accept4(l, NULL, NULL, SOCK_NONBLOCK));
    CHECK(is_nonblock(s2));
    CHECK_ERRNO(recv(s2, bigbuf, 1, 0), EAGAIN);
    CLOSE(c2, s2);

    /* Fill c until EAGAIN; s never reads. */
    memset(bigbuf, 'f', sizeof bigbuf);
    long total = 0, rounds = 0;
    for (;;) {
        ssize_t n = send(c, bigbuf, sizeof bigbuf, 0);
        if (n > 0) {
            total += n;
            if (total > FILL_CAP)
                FAIL("sent %ld bytes to a peer that does not read, never EAGAIN", total);
            continue;
        }
        if (n == 0 || errno != EAGAIN)
            FAIL("send on a full connection: %zd, errno %d (%s)", n, errno, strerror(errno));
        /* Acks may still free room; stop once poll agrees there is none. */
        if (!(poll_now(c, POLLOUT) & POLLOUT))
            break;
        if (++rounds > 100000)
            FAIL("send says EAGAIN but poll keeps saying POLLOUT");
    }
    CHECK(wait_for(s, POLLIN, "data at the peer") & POLLIN);
    CHECK_EQ(poll_now(s, POLLIN | POLLOUT), POLLIN | POLLOUT);
    CLOSE(c, s, l);
    SAY("nonblock: accept4(SOCK_NONBLOCK); %ld KiB sent to a peer that does not read, then "
        "EAGAIN and no POLLOUT while the peer has POLLIN",
        total >> 10);
}

/* ---- 6. errors ---- */

static void errors(void)
{
    /* A port nobody listens on. */
    struct sockaddr_in dead;
    int d = bound(SOCK_STREAM, &dead);
    CHECK_SYS(close(d));
    int c = CHECK_SYS(socket(AF_INET, SOCK_STREAM, 0));
    CHECK_ERRNO(connect(c, (struct sockaddr *)&dead, sizeof dead), ECONNREFUSED);
    CHECK_SYS(close(c));
    c = CHECK_SYS(socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0));
    errno = 0;
    int r = connect(c, (struct sockaddr *)&dead, sizeof dead);
    CHECK_EQ(r, -1);
    const char *how = "immediately";
    if (errno == EINPROGRESS) {
        how = "through SO_ERROR after EINPROGRESS";
        wait_for(c, POLLOUT, "the refused connection");
        CHECK_EQ(getopt_int(c, SOL_SOCKET, SO_ERROR), ECONNREFUSED);
        CHECK_EQ(getopt_int(c, SOL_SOCKET, SO_ERROR), 0);
    } else if (errno != ECONNREFUSED) {
        FAIL("non-blocking connect to a closed port: errno %d (%s)", errno, strerror(errno));
    }
    CHECK_SYS(close(c));
    SAY("errors: connect to a closed port ECONNREFUSED; non-blocking, %s", how);

    struct sockaddr_in la;
    int l = listener(1, &la);
    int t = CHECK_SYS(socket(AF_INET, SOCK_STREAM, 0));
    CHECK_ERRNO(bind(t, (struct sockaddr *)&la, sizeof la), EADDRINUSE);
    struct sockaddr_in ta = loopback(0);
    CHECK_SYS(bind(t, (struct sockaddr *)&ta, sizeof ta));
    CHECK_ERRNO(bind(t, (struct sockaddr *)&ta, sizeof ta), EINVAL);
    CHECK_ERRNO(accept(t, NULL, NULL), EINVAL);
    CHECK_ERRNO(getpeername(t, (struct sockaddr *)&ta, &(socklen_t){sizeof ta}), ENOTCONN);
    CHECK_ERRNO(send(t, "x", 1, MSG_NOSIGNAL), EPIPE);
    CLOSE(t, l);
    SAY("errors: EADDRINUSE for a listener's port, bind twice EINVAL, accept without listen "
        "EINVAL, getpeername unconnected ENOTCONN, send unconnected EPIPE");

    int u = CHECK_SYS(socket(AF_INET, SOCK_DGRAM, 0));
    CHECK_ERRNO(listen(u, 1), EOPNOTSUPP);
    CHECK_SYS(close(u));
    t = CHECK_SYS(socket(AF_INET, SOCK_STREAM, 0));
    ta = loopback(0);
    CHECK_ERRNO(bind(t, (struct sockaddr *)&ta, 4), EINVAL);
    struct sockaddr *volatile bad = (struct sockaddr *)1;
    CHECK_ERRNO(bind(t, bad, sizeof ta), EFAULT);
    ta.sin_family = AF_INET6;
    CHECK_ERRNO(bind(t, (struct sockaddr *)&ta, sizeof ta), EAFNOSUPPORT);
    CHECK_SYS(close(t));
    CHECK_ERRNO(socket(AF_INET, 12345, 0), EINVAL);
    CHECK_ERRNO(socket(AF_INET, SOCK_STREAM, IPPROTO_UDP), EPROTONOSUPPORT);
    SAY("errors: listen on UDP EOPNOTSUPP, bind with addrlen 4 EINVAL, a bad pointer EFAULT, "
        "family AF_INET6 EAFNOSUPPORT; socket type 12345 EINVAL, TCP with IPPROTO_UDP "
        "EPROTONOSUPPORT");

    int s;
    tcp_pair(&c, &s);
    send_all(c, "data", 4);
    CHECK(wait_for(s, POLLIN, "data") & POLLIN);
    void *volatile badbuf = (void *)1;
    CHECK_ERRNO(recv(s, badbuf, 4, 0), EFAULT);
    expect(s, "data");
    CLOSE(c, s);
    SAY("errors: recv into a bad buffer EFAULT, the data still there afterwards");
}

/* ---- 7. EPIPE and SIGPIPE ---- */

static volatile sig_atomic_t sigpipes;

static void on_sigpipe(int sig)
{
    (void)sig;
    sigpipes++;
}

/* A connection whose peer has closed (its FIN seen); the other end returned. */
static int closed_peer(void)
{
    int c, s;
    tcp_pair(&c, &s);
    CHECK_SYS(close(s));
    CHECK(wait_for(c, POLLIN, "the peer's FIN") & POLLIN);
    CHECK_EQ(recv(c, bigbuf, 16, 0), 0);
    return c;
}

/* Writes 100 bytes at a time to `fd` until a write fails; after each success waits for the
 * peer's RST (POLLERR|POLLHUP). Returns the errno of the failure. */
static int write_until_error(int fd)
{
    for (int i = 0; i < 100; i++) {
        ssize_t n = write(fd, bigbuf, 100);
        if (n < 0)
            return errno;
        CHECK_EQ(n, 100);
        wait_exact(fd, 0, POLLERR | POLLHUP, "the peer's RST");
    }
    FAIL("100 writes to a closed peer succeeded");
}

static void epipe(void)
{
    set_handler(SIGPIPE, SIG_IGN, 0);
    int c = closed_peer();
    int e = write_until_error(c);
    if (e != EPIPE && e != ECONNRESET)
        FAIL("write to a closed peer: errno %d (%s), expected EPIPE or ECONNRESET", e,
             strerror(e));
    CHECK_ERRNO(write(c, bigbuf, 100), EPIPE);
    CHECK_ERRNO(send(c, bigbuf, 100, 0), EPIPE);
    CHECK_SYS(close(c));
    SAY("epipe: SIGPIPE ignored: write to a closed peer fails after its RST with %s, then EPIPE",
        e == EPIPE ? "EPIPE" : "ECONNRESET");

    set_handler(SIGPIPE, on_sigpipe, 0);
    sigpipes = 0;
    c = closed_peer();
    e = write_until_error(c);
    if (e == EPIPE)
        CHECK_EQ(sigpipes, 1);
    else if (e == ECONNRESET)
        CHECK_EQ(sigpipes, 0);
    else
        FAIL("write to a closed peer: errno %d (%s)", e, strerror(e));
    int before = sigpipes;
    CHECK_ERRNO(write(c, bigbuf, 100), EPIPE);
    CHECK_EQ(sigpipes, before + 1);
    CHECK_ERRNO(send(c, bigbuf, 100, MSG_NOSIGNAL), EPIPE);
    CHECK_EQ(sigpipes, before + 1);
    CHECK_ERRNO(send(c, bigbuf, 100, 0), EPIPE);
    CHECK_EQ(sigpipes, before + 2);
    CHECK_SYS(close(c));
    set_handler(SIGPIPE, SIG_IGN, 0);
    SAY("epipe: with a handler, each EPIPE raised SIGPIPE (%d in all), MSG_NOSIGNAL none",
        (int)sigpipes);
}

/* ---- 8. socket options ---- */

static void options(void)
{
    int t = CHECK_SYS(socket(AF_INET, SOCK_STREAM, 0));
    CHECK_EQ(getopt_int(t, SOL_SOCKET, SO_TYPE), SOCK_STREAM);
    /* Each flag reads 0, then 1 once set, then 0 once cleared. */
    const int flags[3][2] = {
        {SOL_SOCKET, SO_REUSEADDR}, {IPPROTO_TCP, TCP_NODELAY}, {SOL_SOCKET, SO_KEEPALIVE}};
    for (int i = 0; i < 3; i++)
        for (int want = 0; want < 3; want++) {
            if (want > 0)
                setopt_int(t, flags[i][0], flags[i][1], want & 1);
            if (getopt_int(t, flags[i][0], flags[i][1]) != (want & 1))
                FAIL("option %d of level %d does not read %d", flags[i][1], flags[i][0], want & 1);
        }
    setopt_int(t, SOL_SOCKET, SO_RCVBUF, 65536);
    setopt_int(t, SOL_SOCKET, SO_SNDBUF, 65536);
    int rcv = getopt_int(t, SOL_SOCKET, SO_RCVBUF), snd = getopt_int(t, SOL_SOCKET, SO_SNDBUF);
    CHECK(rcv >= 65536 && snd >= 65536);
    SAY("options: SO_REUSEADDR, TCP_NODELAY, SO_KEEPALIVE read back; SO_RCVBUF/SO_SNDBUF "
        "65536 read back as %d/%d; SO_TYPE SOCK_STREAM",
        rcv, snd);

    /* Short lengths: setsockopt refuses them, getsockopt truncates the value. */
    int v = 1, type = SOCK_STREAM;
    CHECK_ERRNO(setsockopt(t, SOL_SOCKET, SO_REUSEADDR, &v, 2), EINVAL);
    CHECK_ERRNO(setsockopt(t, IPPROTO_TCP, TCP_NODELAY, &v, 2), EINVAL);
    unsigned char raw[4];
    memset(raw, 0x7f, sizeof raw);
    socklen_t len = 2;
    CHECK_SYS(getsockopt(t, SOL_SOCKET, SO_TYPE, raw, &len));
    CHECK_EQ(len, 2);
    CHECK(memcmp(raw, &type, 2) == 0 && raw[2] == 0x7f && raw[3] == 0x7f);
    len = (socklen_t)-1;
    CHECK_ERRNO(getsockopt(t, SOL_SOCKET, SO_TYPE, &v, &len), EINVAL);
    len = (socklen_t)-1;
    CHECK_ERRNO(getsockopt(t, IPPROTO_TCP, TCP_NODELAY, &v, &len), EINVAL);
    SAY("options: optlen 2 is EINVAL for setsockopt, truncates getsockopt's value; a negative "
        "getsockopt optlen EINVAL");

    len = sizeof v;
    CHECK_ERRNO(getsockopt(t, SOL_SOCKET, 9999, &v, &len), ENOPROTOOPT);
    CHECK_ERRNO(getsockopt(t, IPPROTO_TCP, 9999, &v, &len), ENOPROTOOPT);
    CHECK_ERRNO(setsockopt(t, SOL_SOCKET, 9999, &v, sizeof v), ENOPROTOOPT);
    CHECK_ERRNO(setsockopt(t, IPPROTO_TCP, 9999, &v, sizeof v), ENOPROTOOPT);
    CHECK_ERRNO(setsockopt(t, 9999, 1, &v, sizeof v), ENOPROTOOPT);
    CHECK_ERRNO(getsockopt(t, 9999, 1, &v, &len), EOPNOTSUPP);
    CHECK_SYS(close(t));
    int u = CHECK_SYS(socket(AF_INET, SOCK_DGRAM, 0));
    CHECK_ERRNO(getsockopt(u, IPPROTO_TCP, TCP_NODELAY, &v, &len), EOPNOTSUPP);
    CHECK_SYS(close(u));
    SAY("options: unknown SOL_SOCKET and IPPROTO_TCP options ENOPROTOOPT; an unknown level "
        "ENOPROTOOPT for setsockopt, EOPNOTSUPP for getsockopt (and TCP_NODELAY on UDP)");

    /* A port whose accepted connection closed first (TIME_WAIT on the listener's side). */
    struct sockaddr_in la = loopback(0);
    int l = CHECK_SYS(socket(AF_INET, SOCK_STREAM, 0));
    setopt_int(l, SOL_SOCKET, SO_REUSEADDR, 1);
    CHECK_SYS(bind(l, (struct sockaddr *)&la, sizeof la));
    la = addr_of(l, 0);
    CHECK_SYS(listen(l, 1));
    int c = connect_to(&la);
    int s = CHECK_SYS(accept(l, NULL, NULL));
    send_all(c, "q", 1);
    expect(s, "q");
    CHECK_SYS(close(s));
    CHECK_EQ(recv(c, bigbuf, 1, 0), 0);
    CLOSE(c, l);
    int n = CHECK_SYS(socket(AF_INET, SOCK_STREAM, 0));
    CHECK_ERRNO(bind(n, (struct sockaddr *)&la, sizeof la), EADDRINUSE);
    setopt_int(n, SOL_SOCKET, SO_REUSEADDR, 1);
    CHECK_SYS(bind(n, (struct sockaddr *)&la, sizeof la));
    CHECK_SYS(listen(n, 1));
    c = connect_to(&la);
    s = CHECK_SYS(accept(n, NULL, NULL));
    CLOSE(c, s, n);
    SAY("options: port %d of a just-closed connection: bind EADDRINUSE, with SO_REUSEADDR it "
        "binds, listens and accepts",
        ntohs(la.sin_port));
}

/* SO_RCVTIMEO and SO_SNDTIMEO: read back, their errors, and a receive, an accept and a
 * read that give up with EAGAIN once the time has passed (no sooner). */
static void timeouts(void)
{
    int u = CHECK_SYS(socket(AF_INET, SOCK_DGRAM, 0));
    struct sockaddr_in ua = loopback(0);
    CHECK_SYS(bind(u, (struct sockaddr *)&ua, sizeof ua));
    struct timeval tv = {0, 0};
    socklen_t len = sizeof tv;
    CHECK_SYS(getsockopt(u, SOL_SOCKET, SO_RCVTIMEO, &tv, &len));
    CHECK(len == sizeof tv && tv.tv_sec == 0 && tv.tv_usec == 0);
    struct timeval bad = {0, 1000000};
    CHECK_ERRNO(setsockopt(u, SOL_SOCKET, SO_RCVTIMEO, &bad, sizeof bad), EDOM);
    CHECK_ERRNO(setsockopt(u, SOL_SOCKET, SO_RCVTIMEO, &bad, 8), EINVAL);
    void *volatile badptr = (void *)1;
    CHECK_ERRNO(setsockopt(u, SOL_SOCKET, SO_RCVTIMEO, badptr, sizeof bad), EFAULT);
    len = sizeof tv;
    CHECK_ERRNO(getsockopt(u, SOL_SOCKET, SO_SNDTIMEO, badptr, &len), EFAULT);
    CHECK_ERRNO(getsockopt(u, SOL_SOCKET, SO_SNDTIMEO, &tv, (socklen_t *)badptr), EFAULT);
    struct timeval want = {0, 60000};
    CHECK_SYS(setsockopt(u, SOL_SOCKET, SO_RCVTIMEO, &want, sizeof want));
    struct timeval snd = {3, 500000};
    CHECK_SYS(setsockopt(u, SOL_SOCKET, SO_SNDTIMEO, &snd, sizeof snd));
    len = sizeof tv;
    CHECK_SYS(getsockopt(u, SOL_SOCKET, SO_RCVTIMEO, &tv, &len));
    /* Linux keeps jiffies: the value reads back rounded to its tick. */
    CHECK(tv.tv_sec == 0 && tv.tv_usec >= 50000 && tv.tv_usec <= 70000);
    CHECK_SYS(getsockopt(u, SOL_SOCKET, SO_SNDTIMEO, &tv, &len));
    CHECK(tv.tv_sec == 3 && tv.tv_usec >= 490000 && tv.tv_usec <= 510000);
    char b[8];
    long long t0 = now_ns();
    CHECK_ERRNO(recv(u, b, sizeof b, 0), EAGAIN);
    long long waited = now_ns() - t0;
    if (waited < 50000000LL)
        FAIL("recv gave up after %lld ns, before its 60 ms", waited);
    /* A datagram waiting is received at once. */
    ua = addr_of(u, 0);
    CHECK_EQ(sendto(u, "t", 1, 0, (struct sockaddr *)&ua, sizeof ua), 1);
    CHECK_EQ(recv(u, b, sizeof b, 0), 1);
    CHECK_SYS(close(u));

    struct sockaddr_in la = loopback(0);
    int l = CHECK_SYS(socket(AF_INET, SOCK_STREAM, 0));
    CHECK_SYS(bind(l, (struct sockaddr *)&la, sizeof la));
    la = addr_of(l, 0);
    CHECK_SYS(listen(l, 1));
    CHECK_SYS(setsockopt(l, SOL_SOCKET, SO_RCVTIMEO, &want, sizeof want));
    CHECK_ERRNO(accept(l, NULL, NULL), EAGAIN);
    int c = connect_to(&la);
    int s = CHECK_SYS(accept(l, NULL, NULL));
    CHECK_SYS(setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &want, sizeof want));
    CHECK_ERRNO(read(s, b, sizeof b), EAGAIN);
    send_all(c, "r", 1);
    expect(s, "r");
    CLOSE(c, s, l);
    SAY("timeouts: SO_RCVTIMEO/SO_SNDTIMEO read back, EDOM, EINVAL and EFAULT; recv, accept and read "
        "give up with EAGAIN after 60 ms, not before (recv waited %lld ms)",
        waited / 1000000);
}

/* ---- 9. sendmsg/recvmsg, read/write ---- */

static void messages(void)
{
    int c, s;
    tcp_pair(&c, &s);
    char h[] = "hello, ", w[] = "world";
    struct iovec out[2] = {{h, 7}, {w, 5}};
    struct msghdr m = {.msg_iov = out, .msg_iovlen = 2};
    CHECK_EQ(sendmsg(c, &m, MSG_NOSIGNAL), 12);
    char a[5], b[7];
    struct iovec in[2] = {{a, 5}, {b, 7}};
    m = (struct msghdr){.msg_iov = in, .msg_iovlen = 2};
    CHECK_EQ(recvmsg(s, &m, MSG_WAITALL), 12);
    CHECK(memcmp(a, "hello", 5) == 0 && memcmp(b, ", world", 7) == 0);
    CHECK_EQ(write(s, "via write", 9), 9);
    char buf[16];
    for (ssize_t got = 0, r; got < 9; got += r)
        CHECK((r = read(c, buf + got, (size_t)(9 - got))) > 0);
    CHECK(memcmp(buf, "via write", 9) == 0);
    CHECK_SYS(close(c));
    CHECK_EQ(read(s, buf, sizeof buf), 0);
    CHECK_SYS(close(s));
    SAY("msg: TCP sendmsg/recvmsg with two iovecs each, read/write on a connected socket");

    struct sockaddr_in ua, va, from;
    int u = bound(SOCK_DGRAM, &ua), v = bound(SOCK_DGRAM, &va);
    m = (struct msghdr){.msg_name = &va, .msg_namelen = sizeof va, .msg_iov = out, .msg_iovlen = 2};
    CHECK_EQ(sendmsg(u, &m, 0), 12);
    memset(&from, 0, sizeof from);
    m = (struct msghdr){
        .msg_name = &from, .msg_namelen = sizeof from, .msg_iov = in, .msg_iovlen = 2};
    CHECK_EQ(recvmsg(v, &m, 0), 12);
    CHECK_EQ(m.msg_namelen, sizeof from);
    CHECK(same_addr(&from, &ua));
    CHECK_EQ(m.msg_flags, 0);
    CHECK(memcmp(a, "hello", 5) == 0 && memcmp(b, ", world", 7) == 0);

    CHECK_EQ(sendto(u, "0123456789ABCDEF", 16, 0, (struct sockaddr *)&va, sizeof va), 16);
    m = (struct msghdr){.msg_iov = in, .msg_iovlen = 2};
    CHECK_EQ(recvmsg(v, &m, 0), 12);
    CHECK_EQ(m.msg_flags, MSG_TRUNC);
    CHECK(memcmp(a, "01234", 5) == 0 && memcmp(b, "56789AB", 7) == 0);
    CLOSE(u, v);
    SAY("msg: UDP sendmsg/recvmsg with two iovecs, msg_name the sender; a longer datagram "
        "sets MSG_TRUNC");
}

/* ---- 10. close semantics ---- */

static void closing(void)
{
    int c, s;
    char buf[8];
    tcp_pair(&c, &s);
    CHECK_SYS(shutdown(s, SHUT_WR));
    CHECK(wait_for(c, POLLIN, "EOF after shutdown") & POLLIN);
    CHECK_EQ(poll_now(c, POLLIN), POLLIN);
    CHECK_EQ(poll_now(c, POLLIN | POLLOUT), POLLIN | POLLOUT);
    CHECK_EQ(recv(c, buf, sizeof buf, 0), 0);
    send_all(c, "back", 4);
    expect(s, "back");
    CHECK_SYS(shutdown(c, SHUT_WR));
    CHECK_EQ(poll_now(c, POLLIN), POLLIN | POLLHUP);
    CHECK_EQ(recv(s, buf, sizeof buf, 0), 0);
    CHECK_EQ(poll_now(s, POLLIN), POLLIN | POLLHUP);
    CLOSE(c, s);
    SAY("close: after the peer's shutdown(SHUT_WR) poll says POLLIN (POLLOUT too), recv 0, "
        "writing back works; POLLIN|POLLHUP once both ways are shut");

    tcp_pair(&c, &s);
    CHECK_SYS(close(s));
    CHECK(wait_for(c, POLLIN, "EOF after close") & POLLIN);
    CHECK_EQ(poll_now(c, POLLIN), POLLIN);
    CHECK_EQ(poll_now(c, POLLIN | POLLOUT), POLLIN | POLLOUT);
    CHECK_EQ(recv(c, buf, sizeof buf, 0), 0);
    CHECK_EQ(recv(c, buf, sizeof buf, 0), 0);
    CHECK_SYS(close(c));
    SAY("close: after the peer's close() poll says POLLIN (POLLOUT too, no POLLHUP), recv 0 "
        "again and again");
}

/* ---- 11. nothing kept ---- */

/* Hostile and large arguments, then 100 processes each with its own stack instance (some
 * 130 KiB with its socket's buffers) making a connection, and 300 sockets and epoll instances
 * opened and closed: Reef's free memory must come back within 16 MiB (the instances kept would
 * add some 13 MiB to the 10 MiB of kernel heap arenas that a few live allocations keep here,
 * /proc/reef/memory's heap-held against heap-used). Closed connections hold their instance
 * through TIME_WAIT (10 s), so the count is waited for (at most 60 s), not taken at once. */
/* Reef's network-server calls (1038 reef_netd, 1039 reef_net_mode) from a program that is not
 * the server: refused, whatever the pointers, masks, modes and process ids; ENOSYS natively. */
static void reef_net_calls(void)
{
    int reef = on_reef();
    /* Not a member of fleet/net: no region is mapped, good pointer or bad. */
    CHECK_ERRNO(syscall(1038, 0L, (void *)1), reef ? EPERM : ENOSYS);
    CHECK_ERRNO(syscall(1038, 0L, NULL), reef ? EPERM : ENOSYS);
    /* Not the attached server: no kick; a mask past the rings and an unknown op are EINVAL. */
    CHECK_ERRNO(syscall(1038, 1L, 1L), reef ? EPERM : ENOSYS);
    CHECK_ERRNO(syscall(1038, 1L, -1L), reef ? EINVAL : ENOSYS);
    CHECK_ERRNO(syscall(1038, 99L, 0L), reef ? EINVAL : ENOSYS);
    if (geteuid() != 0) {
        CHECK_ERRNO(syscall(1039, (long)getpid(), 0L), reef ? EPERM : ENOSYS);
        CHECK_ERRNO(syscall(1039, (long)getpid(), 3L), reef ? EPERM : ENOSYS);
        return;
    }
    CHECK_ERRNO(syscall(1039, (long)getpid(), 7L), reef ? EINVAL : ENOSYS);
    CHECK_ERRNO(syscall(1039, -1L, 0L), reef ? ESRCH : ENOSYS);
    CHECK_ERRNO(syscall(1039, 1L << 40, 0L), reef ? ESRCH : ENOSYS);
    CHECK_ERRNO(syscall(1039, 0x7ffffff0L, 0L), reef ? ESRCH : ENOSYS);
    /* REEF_NET_ADDRESS (3) for a process that does not exist. */
    CHECK_ERRNO(syscall(1039, -1L, 3L), reef ? ESRCH : ENOSYS);
    CHECK_ERRNO(syscall(1039, 0x7ffffff0L, 3L), reef ? ESRCH : ENOSYS);
    /* No network server here and no NIC for library mode; the kernel's switch is where it is. */
    CHECK_ERRNO(syscall(1039, (long)getpid(), 1L), reef ? ENODEV : ENOSYS);
    CHECK_ERRNO(syscall(1039, (long)getpid(), 2L), reef ? ENODEV : ENOSYS);
    if (reef)
        CHECK_EQ(syscall(1039, (long)getpid(), 0L), 0);
    printf("net: reef calls: reef_netd and reef_net_mode refuse a program that is not the server "
           "(EPERM, EINVAL, ESRCH, ENODEV)\n");
}

static void nothing_kept(void)
{
    long before = reef_free_bytes();
    reef_net_calls();
    int u = CHECK_SYS(socket(AF_INET, SOCK_DGRAM, 0));
    struct sockaddr_in lo = loopback(9);
    /* A huge length is cut to what one send takes (1 MiB on Reef); a datagram that large is
     * EMSGSIZE, and a bad buffer EFAULT, whatever the length. */
    CHECK_ERRNO(sendto(u, (void *)1, (size_t)1 << 40, 0, (struct sockaddr *)&lo, sizeof lo),
                on_reef() ? EFAULT : EMSGSIZE);
    CHECK_ERRNO(recvfrom(u, (void *)1, (size_t)1 << 40, MSG_DONTWAIT, NULL, NULL), EAGAIN);
    CHECK_ERRNO(connect(u, (struct sockaddr *)1, sizeof lo), EFAULT);
    CHECK_ERRNO(getsockname(u, (struct sockaddr *)&lo, (socklen_t *)1), EFAULT);
    CHECK_ERRNO(setsockopt(u, SOL_SOCKET, SO_RCVBUF, (void *)1, 4), EFAULT);
    CHECK_ERRNO(bind(1000, (struct sockaddr *)&lo, sizeof lo), EBADF);
    CHECK_ERRNO(listen(0, 1), ENOTSOCK);
    struct msghdr m = {.msg_iov = (struct iovec *)1, .msg_iovlen = 1};
    CHECK_ERRNO(sendmsg(u, &m, 0), EFAULT);
    /* musl's sendmsg copies the header itself: the system call takes the bad pointer. */
    CHECK_ERRNO(syscall(SYS_sendmsg, u, 1, 0), EFAULT);
    m.msg_iovlen = 1025; /* more than IOV_MAX */
    CHECK_ERRNO(recvmsg(u, &m, 0), EMSGSIZE);
    CHECK_SYS(close(u));

    struct sockaddr_in a;
    int l = listener(128, &a);
    for (int i = 0; i < 100; i++) {
        pid_t pid = CHECK_SYS(fork());
        if (pid == 0) {
            int c = socket(AF_INET, SOCK_STREAM, 0);
            if (c < 0 || connect(c, (struct sockaddr *)&a, sizeof a) != 0 ||
                write(c, "k", 1) != 1)
                _exit(2);
            _exit(0);
        }
        int s = CHECK_SYS(accept(l, NULL, NULL));
        char k;
        CHECK_EQ(read(s, &k, 1), 1);
        CHECK_SYS(close(s));
        reap(pid);
    }
    CHECK_SYS(close(l));
    for (int i = 0; i < 300; i++) {
        int t = CHECK_SYS(socket(AF_INET, i % 2 ? SOCK_STREAM : SOCK_DGRAM, 0));
        int e = CHECK_SYS(epoll_create1(0));
        struct epoll_event ev = {.events = EPOLLIN | EPOLLET};
        CHECK_SYS(epoll_ctl(e, EPOLL_CTL_ADD, t, &ev));
        CLOSE(t, e);
    }
    if (before < 0) {
        SAY("kept: hostile arguments refused, 100 connections from 100 processes and 300 "
            "sockets with epoll instances (no free-memory count here)");
        return;
    }
    long after = reef_free_bytes();
    for (int waited = 0; after < before - (16L << 20) && waited < 60000; waited += 100) {
        usleep(100 * 1000);
        after = reef_free_bytes();
    }
    if (after < before - (16L << 20))
        FAIL("free memory %ld KiB before, %ld KiB 60 s after", before >> 10, after >> 10);
    SAY("kept: hostile arguments refused; 100 connections from 100 processes and 300 sockets "
        "with epoll instances: free memory %ld KiB before, %ld KiB after",
        before >> 10, after >> 10);
}

/* An ifreq for interface `name`. */
static struct ifreq ifreq_of(const char *name)
{
    struct ifreq r;
    memset(&r, 0, sizeof r);
    strncpy(r.ifr_name, name, sizeof r.ifr_name - 1);
    return r;
}

/* The IPv4 address of a sockaddr an ioctl filled (family AF_INET checked). */
static uint32_t in_addr_of(const struct sockaddr *sa)
{
    CHECK_EQ(sa->sa_family, AF_INET);
    return ntohl(((const struct sockaddr_in *)sa)->sin_addr.s_addr);
}

/* lo's received packets in /proc/net/dev (its two header lines checked). */
static unsigned long long lo_rx_packets(void)
{
    FILE *f = fopen("/proc/net/dev", "r");
    CHECK(f != NULL);
    char line[512];
    CHECK(fgets(line, sizeof line, f) && strncmp(line, "Inter-|   Receive", 17) == 0);
    CHECK(fgets(line, sizeof line, f) && strstr(line, " face |bytes    packets errs drop") &&
          strstr(line, "|bytes    packets errs drop fifo colls carrier compressed"));
    unsigned long long bytes = 0, packets = 0;
    int found = 0;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, " lo: %llu %llu", &bytes, &packets) == 2)
            found = 1;
    fclose(f);
    CHECK(found);
    return packets;
}

/* Whether /proc/net/`file` has a socket line with these addresses, ports and state, and, if
 * `fd` is not -1, the user ID and inode of the socket open as `fd` (what `netstat -p` needs). */
static int proc_net_has(const char *file, const struct sockaddr_in *local,
                        const struct sockaddr_in *remote, unsigned state, int fd)
{
    struct stat sb = {0};
    if (fd >= 0)
        CHECK_SYS(fstat(fd, &sb));
    char path[64];
    snprintf(path, sizeof path, "/proc/net/%s", file);
    FILE *f = fopen(path, "r");
    CHECK(f != NULL);
    char line[512];
    CHECK(fgets(line, sizeof line, f) && strstr(line, "sl  local_address rem_address   st "
                                                      "tx_queue rx_queue tr tm->when"));
    unsigned la, lp, ra, rp, st, uid;
    unsigned long inode;
    int found = 0;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, " %*d: %8X:%4X %8X:%4X %2X %*X:%*X %*X:%*X %*X %u %*u %lu", &la, &lp,
                   &ra, &rp, &st, &uid, &inode) == 7 &&
            la == local->sin_addr.s_addr && lp == ntohs(local->sin_port) &&
            ra == remote->sin_addr.s_addr && rp == ntohs(remote->sin_port) && st == state &&
            (fd < 0 || (uid == geteuid() && inode == sb.st_ino)))
            found = 1;
    fclose(f);
    return found;
}

static void interfaces(void)
{
    CHECK_EQ(sizeof(struct ifreq), 40);
    CHECK_EQ(sizeof(struct ifconf), 16);
    int s = CHECK_SYS(socket(AF_INET, SOCK_DGRAM, 0));

    /* SIOCGIFCONF: the length alone, one entry, all of them. */
    struct ifconf c = {.ifc_len = 0, .ifc_buf = NULL};
    CHECK_SYS(ioctl(s, SIOCGIFCONF, &c));
    CHECK(c.ifc_len >= (int)sizeof(struct ifreq) && c.ifc_len % sizeof(struct ifreq) == 0);
    int n = c.ifc_len / (int)sizeof(struct ifreq);
    struct ifreq list[16];
    CHECK(n <= 16);
    c.ifc_len = sizeof(struct ifreq) + 10;
    c.ifc_req = list;
    CHECK_SYS(ioctl(s, SIOCGIFCONF, &c));
    CHECK_EQ(c.ifc_len, sizeof(struct ifreq));
    c.ifc_len = sizeof list;
    CHECK_SYS(ioctl(s, SIOCGIFCONF, &c));
    CHECK_EQ(c.ifc_len, n * (int)sizeof(struct ifreq));
    int lo_listed = 0;
    for (int i = 0; i < n; i++)
        lo_listed |= strcmp(list[i].ifr_name, "lo") == 0 &&
                     in_addr_of(&list[i].ifr_addr) == INADDR_LOOPBACK;
    CHECK(lo_listed);
    if (on_reef())
        CHECK(strcmp(list[0].ifr_name, "lo") == 0 &&
              (n == 1 || (n == 2 && strcmp(list[1].ifr_name, "eth0") == 0)));
    c.ifc_len = sizeof list;
    c.ifc_req = (struct ifreq *)1;
    CHECK_ERRNO(ioctl(s, SIOCGIFCONF, &c), EFAULT);
    CHECK_ERRNO(ioctl(s, SIOCGIFCONF, (void *)1), EFAULT);

    /* lo, request by request. */
    struct ifreq r = ifreq_of("lo");
    CHECK_SYS(ioctl(s, SIOCGIFINDEX, &r));
    int index = r.ifr_ifindex;
    CHECK(index >= 1);
    if (on_reef())
        CHECK_EQ(index, 1);
    r = ifreq_of("");
    r.ifr_ifindex = index;
    CHECK_SYS(ioctl(s, SIOCGIFNAME, &r));
    CHECK(strcmp(r.ifr_name, "lo") == 0);
    r = ifreq_of("lo");
    CHECK_SYS(ioctl(s, SIOCGIFFLAGS, &r));
    short flags = r.ifr_flags;
    CHECK_EQ(flags & (IFF_UP | IFF_LOOPBACK | IFF_RUNNING | IFF_BROADCAST),
             IFF_UP | IFF_LOOPBACK | IFF_RUNNING);
    CHECK_SYS(ioctl(s, SIOCGIFADDR, &r));
    CHECK_EQ(in_addr_of(&r.ifr_addr), INADDR_LOOPBACK);
    CHECK_SYS(ioctl(s, SIOCGIFDSTADDR, &r));
    CHECK_EQ(in_addr_of(&r.ifr_dstaddr), INADDR_LOOPBACK);
    CHECK_SYS(ioctl(s, SIOCGIFNETMASK, &r));
    CHECK_EQ(in_addr_of(&r.ifr_netmask), 0xff000000u);
    CHECK_SYS(ioctl(s, SIOCGIFHWADDR, &r));
    CHECK_EQ(r.ifr_hwaddr.sa_family, ARPHRD_LOOPBACK);
    static const char zeros[6];
    CHECK(memcmp(r.ifr_hwaddr.sa_data, zeros, 6) == 0);
    CHECK_SYS(ioctl(s, SIOCGIFMTU, &r));
    int mtu = r.ifr_mtu;
    CHECK(mtu >= 576);
    if (on_reef())
        CHECK_EQ(mtu, 1500);
    CHECK_SYS(ioctl(s, SIOCGIFMETRIC, &r));
    CHECK_EQ(r.ifr_metric, 0);
    CHECK_SYS(ioctl(s, SIOCGIFTXQLEN, &r));
    CHECK(r.ifr_qlen >= 0);
    CHECK_SYS(ioctl(s, SIOCGIFMAP, &r));
    /* A name ends at its NUL. */
    memcpy(r.ifr_name, "lo\0garbage", 10);
    CHECK_SYS(ioctl(s, SIOCGIFINDEX, &r));
    CHECK_EQ(r.ifr_ifindex, index);

    /* Unknown interfaces, bad pointers. */
    r = ifreq_of("nosuch0");
    CHECK_ERRNO(ioctl(s, SIOCGIFFLAGS, &r), ENODEV);
    CHECK_ERRNO(ioctl(s, SIOCGIFADDR, &r), ENODEV);
    CHECK_ERRNO(ioctl(s, SIOCGIFINDEX, &r), ENODEV);
    r.ifr_ifindex = 12345;
    CHECK_ERRNO(ioctl(s, SIOCGIFNAME, &r), ENODEV);
    CHECK_ERRNO(ioctl(s, SIOCGIFFLAGS, (void *)1), EFAULT);
    CHECK_ERRNO(ioctl(s, SIOCGIFADDR, NULL), EFAULT);

    /* An AF_UNIX socket: the device's requests, not the addresses. */
    int pair[2];
    CHECK_SYS(socketpair(AF_UNIX, SOCK_STREAM, 0, pair));
    r = ifreq_of("lo");
    CHECK_SYS(ioctl(pair[0], SIOCGIFFLAGS, &r));
    CHECK_EQ(r.ifr_flags, flags);
    CHECK_ERRNO(ioctl(pair[0], SIOCGIFADDR, &r), ENOTTY);
    CLOSE(pair[0], pair[1]);

    /* Changes: only with privilege, and Reef's interfaces are fixed. */
    r = ifreq_of("lo");
    r.ifr_flags = flags;
    struct ifreq m = ifreq_of("lo");
    m.ifr_mtu = mtu;
    if (geteuid() != 0) {
        CHECK_ERRNO(ioctl(s, SIOCSIFFLAGS, &r), EPERM);
        CHECK_ERRNO(ioctl(s, SIOCSIFMTU, &m), EPERM);
    } else if (on_reef()) {
        CHECK_ERRNO(ioctl(s, SIOCSIFFLAGS, &r), EOPNOTSUPP);
        CHECK_ERRNO(ioctl(s, SIOCSIFMTU, &m), EOPNOTSUPP);
        r = ifreq_of("nosuch0");
        CHECK_ERRNO(ioctl(s, SIOCSIFFLAGS, &r), ENODEV);
    }
    CHECK_ERRNO(ioctl(s, SIOCSIFFLAGS, (void *)1), EFAULT);
    CHECK_SYS(close(s));

    /* /proc/net/dev: lo's counts grow with a datagram over 127.0.0.1. */
    unsigned long long before = lo_rx_packets();
    struct sockaddr_in ua;
    int u = bound(SOCK_DGRAM, &ua);
    int v = CHECK_SYS(socket(AF_INET, SOCK_DGRAM, 0));
    CHECK_EQ(sendto(v, "x", 1, 0, (struct sockaddr *)&ua, sizeof ua), 1);
    char byte;
    CHECK_EQ(recv(u, &byte, 1, 0), 1);
    CHECK(lo_rx_packets() > before);

    /* /proc/net/udp and tcp: the sockets by address, port and state. */
    struct sockaddr_in none = {.sin_family = AF_INET};
    CHECK(proc_net_has("udp", &ua, &none, 0x07, u));
    struct sockaddr_in la;
    int l = listener(4, &la);
    CHECK(proc_net_has("tcp", &la, &none, 0x0A, l));
    int k = connect_to(&la);
    int a = CHECK_SYS(accept(l, NULL, NULL));
    struct sockaddr_in ka = addr_of(k, 0);
    CHECK(proc_net_has("tcp", &ka, &la, 0x01, k));
    CHECK(proc_net_has("tcp", &la, &ka, 0x01, a));
    CLOSE(u, v, k, a, l);

    FILE *f = fopen("/proc/net/route", "r");
    CHECK(f != NULL);
    char line[256];
    CHECK(fgets(line, sizeof line, f) &&
          strncmp(line, "Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask", 52) == 0);
    fclose(f);
    SAY("interfaces: %d listed, lo index %d mtu %d; /proc/net/dev, tcp, udp, route", n, index,
        mtu);
}

/* ---- route netlink (no linux headers: musl has none) ---- */

struct nl_addr {
    uint16_t family, pad;
    uint32_t pid, groups;
};
struct nl_hdr {
    uint32_t len;
    uint16_t type, flags;
    uint32_t seq, pid;
};
enum {
    NL_ERROR = 2, NL_DONE = 3, NL_REQUEST = 1, NL_MULTI = 2, NL_ACK = 4, NL_DUMP = 0x300,
    RT_NEWLINK = 16, RT_GETLINK = 18, RT_NEWADDR = 20, RT_DELADDR = 21, RT_GETADDR = 22,
    RT_NEWROUTE = 24, RT_GETROUTE = 26, SOL_NL = 270, NL_EXT_ACK = 11,
};

static uint8_t nl_buf[65536];
static uint32_t nl_seq = 100;

/* A request of `type` with `flags` and a payload of `len` bytes (zeros but its first byte,
 * `family`, and what `fill` writes); sent with `how`: 0 sendto, 1 write, 2 send. */
static uint32_t nl_request(int fd, uint16_t type, uint16_t flags, uint8_t family, size_t len,
                           const void *fill, size_t fill_len, int how)
{
    uint8_t req[64] = {0};
    struct nl_hdr *h = (struct nl_hdr *)req;
    h->len = sizeof *h + len;
    h->type = type;
    h->flags = flags;
    h->seq = ++nl_seq;
    req[sizeof *h] = family;
    if (fill)
        memcpy(req + sizeof *h, fill, fill_len);
    struct nl_addr kernel = {.family = AF_NETLINK};
    ssize_t n = how == 0   ? sendto(fd, req, h->len, 0, (struct sockaddr *)&kernel, sizeof kernel)
                : how == 1 ? write(fd, req, h->len)
                           : send(fd, req, h->len, 0);
    CHECK_EQ(n, (ssize_t)h->len);
    return h->seq;
}

/* Receives one datagram with recvmsg: from the kernel (port 0, 12-byte address). */
static size_t nl_receive(int fd)
{
    struct nl_addr from;
    struct iovec v = {nl_buf, sizeof nl_buf};
    struct msghdr m = {.msg_name = &from, .msg_namelen = sizeof from, .msg_iov = &v,
                       .msg_iovlen = 1};
    ssize_t n = CHECK_SYS(recvmsg(fd, &m, 0));
    CHECK_EQ(m.msg_namelen, sizeof from);
    CHECK(from.family == AF_NETLINK && from.pid == 0 && from.groups == 0);
    CHECK(!(m.msg_flags & MSG_TRUNC));
    return (size_t)n;
}

/* The attribute `type` among the attributes from `p` to `end` (its payload and length). */
static const uint8_t *nl_attr(const uint8_t *p, const uint8_t *end, uint16_t type, size_t *len)
{
    while (p + 4 <= end) {
        uint16_t alen, atype;
        memcpy(&alen, p, 2);
        memcpy(&atype, p + 2, 2);
        CHECK(alen >= 4 && p + alen <= end);
        if (atype == type) {
            *len = alen - 4u;
            return p + 4;
        }
        p += (alen + 3u) & ~3u;
    }
    return NULL;
}

/* Receives a dump answering `seq` from port `pid` to its NLMSG_DONE, calling `each` on every
 * message (its type and payload) and counting them. */
static int nl_dump(int fd, uint32_t seq, uint32_t pid,
                   void (*each)(uint16_t, const uint8_t *, size_t, void *), void *arg)
{
    int count = 0;
    for (;;) {
        size_t n = nl_receive(fd);
        size_t at = 0;
        while (at + sizeof(struct nl_hdr) <= n) {
            struct nl_hdr h;
            memcpy(&h, nl_buf + at, sizeof h);
            CHECK(h.len >= sizeof h && at + h.len <= n);
            CHECK_EQ(h.seq, seq);
            CHECK_EQ(h.pid, pid);
            CHECK(h.flags & NL_MULTI);
            if (h.type == NL_DONE)
                return count;
            CHECK(h.type != NL_ERROR);
            each(h.type, nl_buf + at + sizeof h, h.len - sizeof h, arg);
            count++;
            at += (h.len + 3u) & ~3u;
        }
        CHECK_EQ(at, n);
    }
}

struct nl_found {
    int lo, eth, routes, reef_routes;
};

static void nl_link(uint16_t type, const uint8_t *p, size_t len, void *arg)
{
    struct nl_found *f = arg;
    CHECK_EQ(type, RT_NEWLINK);
    CHECK(len >= 16);
    uint16_t hw;
    int32_t index;
    uint32_t flags;
    memcpy(&hw, p + 2, 2);
    memcpy(&index, p + 4, 4);
    memcpy(&flags, p + 8, 4);
    size_t nlen, mlen;
    const char *name = (const char *)nl_attr(p + 16, p + len, 3 /* IFLA_IFNAME */, &nlen);
    CHECK(name != NULL && nlen > 0 && name[nlen - 1] == 0);
    CHECK(nl_attr(p + 16, p + len, 4 /* IFLA_MTU */, &mlen) != NULL && mlen == 4);
    if (index == 1) {
        CHECK(strcmp(name, "lo") == 0 && hw == ARPHRD_LOOPBACK);
        CHECK((flags & (IFF_UP | IFF_LOOPBACK)) == (IFF_UP | IFF_LOOPBACK));
        f->lo++;
    }
    if (strcmp(name, "eth0") == 0 && index == 2)
        f->eth++;
}

static void nl_addr4(uint16_t type, const uint8_t *p, size_t len, void *arg)
{
    struct nl_found *f = arg;
    CHECK_EQ(type, RT_NEWADDR);
    CHECK(len >= 8 && p[0] == AF_INET);
    int32_t index;
    memcpy(&index, p + 4, 4);
    size_t alen, llen;
    const uint8_t *local = nl_attr(p + 8, p + len, 2 /* IFA_LOCAL */, &alen);
    CHECK(local != NULL && alen == 4);
    const char *label = (const char *)nl_attr(p + 8, p + len, 3 /* IFA_LABEL */, &llen);
    CHECK(label != NULL);
    if (index == 1 && memcmp(local, "\x7f\0\0\1", 4) == 0) {
        CHECK(p[1] == 8 && p[3] == 254 /* RT_SCOPE_HOST */ && strcmp(label, "lo") == 0);
        f->lo++;
    }
}

static void nl_route(uint16_t type, const uint8_t *p, size_t len, void *arg)
{
    struct nl_found *f = arg;
    CHECK_EQ(type, RT_NEWROUTE);
    CHECK(len >= 12 && p[0] == AF_INET);
    f->routes++;
    size_t n;
    const uint8_t *oif = nl_attr(p + 12, p + len, 4 /* RTA_OIF */, &n);
    const uint8_t *gw = nl_attr(p + 12, p + len, 5 /* RTA_GATEWAY */, &n);
    const uint8_t *dst = nl_attr(p + 12, p + len, 1 /* RTA_DST */, &n);
    const uint8_t *src = nl_attr(p + 12, p + len, 7 /* RTA_PREFSRC */, &n);
    int32_t o = 0;
    if (oif)
        memcpy(&o, oif, 4);
    if (p[4] == 254 && o == 2 && p[1] == 0 && gw && memcmp(gw, "\x0a\0\x02\x02", 4) == 0)
        f->reef_routes++;
    if (p[4] == 254 && o == 2 && p[1] == 24 && dst && memcmp(dst, "\x0a\0\x02\0", 4) == 0 &&
        src && memcmp(src, "\x0a\0\x02\x0f", 4) == 0 && p[6] == 253 /* RT_SCOPE_LINK */)
        f->reef_routes++;
}

static void netlink(void)
{
    CHECK_ERRNO(socket(AF_NETLINK, SOCK_STREAM, 0), ESOCKTNOSUPPORT);
    CHECK_ERRNO(socket(AF_NETLINK, SOCK_RAW, 32), EPROTONOSUPPORT);
    int fd = CHECK_SYS(socket(AF_NETLINK, SOCK_RAW, 0));
    int fd2 = CHECK_SYS(socket(AF_NETLINK, SOCK_DGRAM | SOCK_NONBLOCK, 0));
    struct nl_addr me;
    socklen_t alen = sizeof me;
    CHECK_SYS(getsockname(fd, (struct sockaddr *)&me, &alen));
    CHECK(alen == 12 && me.family == AF_NETLINK && me.pid == 0);
    struct nl_addr any = {.family = AF_NETLINK};
    CHECK_ERRNO(bind(fd, (struct sockaddr *)&any, 4), EINVAL);
    CHECK_SYS(bind(fd, (struct sockaddr *)&any, sizeof any));
    CHECK_SYS(getsockname(fd, (struct sockaddr *)&me, &alen));
    CHECK_EQ(me.pid, (uint32_t)getpid());
    struct nl_addr taken = {.family = AF_NETLINK, .pid = (uint32_t)getpid()};
    CHECK_ERRNO(bind(fd2, (struct sockaddr *)&taken, sizeof taken), EADDRINUSE);
    CHECK_SYS(bind(fd2, (struct sockaddr *)&any, sizeof any));
    struct nl_addr me2;
    CHECK_SYS(getsockname(fd2, (struct sockaddr *)&me2, &alen));
    CHECK(me2.pid != 0 && me2.pid != me.pid);
    setopt_int(fd, SOL_SOCKET, SO_RCVBUF, 32768);
    CHECK_EQ(getopt_int(fd, SOL_SOCKET, SO_RCVBUF), 65536);
    setopt_int(fd, SOL_NL, NL_EXT_ACK, 1);
    CHECK_EQ(getopt_int(fd, SOL_SOCKET, SO_TYPE), SOCK_RAW);

    /* Nothing waits: POLLOUT only, EAGAIN without blocking. */
    CHECK_EQ(poll_now(fd, POLLIN | POLLOUT), POLLOUT);
    CHECK_ERRNO(recv(fd2, nl_buf, sizeof nl_buf, 0), EAGAIN);
    int ep = CHECK_SYS(epoll_create1(0));
    struct epoll_event ev = {.events = EPOLLIN, .data.fd = fd}, got;
    CHECK_SYS(epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev));
    CHECK_EQ(epoll_wait(ep, &got, 1, 0), 0);

    struct nl_found f = {0};
    uint32_t seq = nl_request(fd, RT_GETLINK, NL_REQUEST | NL_DUMP, AF_UNSPEC, 16, NULL, 0, 0);
    CHECK_EQ(poll_now(fd, POLLIN | POLLOUT), POLLIN | POLLOUT);
    CHECK_EQ(epoll_wait(ep, &got, 1, 0), 1);
    ssize_t size = recv(fd, NULL, 0, MSG_PEEK | MSG_TRUNC);
    CHECK(size > 0);
    int links = nl_dump(fd, seq, me.pid, nl_link, &f);
    CHECK(links >= 1 && f.lo == 1);
    int have_eth = f.eth;
    CHECK_EQ(poll_now(fd, POLLIN | POLLOUT), POLLOUT);

    memset(&f, 0, sizeof f);
    seq = nl_request(fd, RT_GETADDR, NL_REQUEST | NL_DUMP, AF_INET, 8, NULL, 0, 1);
    int addrs = nl_dump(fd, seq, me.pid, nl_addr4, &f);
    CHECK(addrs >= 1 && f.lo == 1);

    memset(&f, 0, sizeof f);
    seq = nl_request(fd, RT_GETROUTE, NL_REQUEST | NL_DUMP, AF_INET, 12, NULL, 0, 2);
    nl_dump(fd, seq, me.pid, nl_route, &f);
    int routes = f.routes;
    if (on_reef())
        CHECK(f.routes == (have_eth ? 2 : 0) && f.reef_routes == f.routes);

    /* One link by index, acknowledged. */
    uint8_t info[16] = {0};
    int32_t one = 1;
    memcpy(info + 4, &one, 4);
    seq = nl_request(fd, RT_GETLINK, NL_REQUEST | NL_ACK, AF_UNSPEC, 16, info, 16, 0);
    size_t n = nl_receive(fd);
    struct nl_hdr h;
    memcpy(&h, nl_buf, sizeof h);
    CHECK(n >= h.len && h.type == RT_NEWLINK && h.seq == seq && h.pid == me.pid);
    memset(&f, 0, sizeof f);
    nl_link(h.type, nl_buf + sizeof h, h.len - sizeof h, &f);
    CHECK_EQ(f.lo, 1);
    n = nl_receive(fd);
    memcpy(&h, nl_buf, sizeof h);
    int32_t error;
    memcpy(&error, nl_buf + sizeof h, 4);
    CHECK(n >= sizeof h + 4 && h.type == NL_ERROR && h.seq == seq && error == 0);

    /* Deleting an address lo does not have: EPERM without privilege (Linux checks that
     * first); root gets EADDRNOTAVAIL from Linux, EOPNOTSUPP from Reef (fixed tables). */
    uint8_t del[8] = {AF_INET, 32, 0, 0, 1, 0, 0, 0};
    uint8_t attr[8] = {8, 0, 2 /* IFA_LOCAL */, 0, 192, 0, 2, 123};
    uint8_t delreq[16];
    memcpy(delreq, del, 8);
    memcpy(delreq + 8, attr, 8);
    seq = nl_request(fd, RT_DELADDR, NL_REQUEST | NL_ACK, AF_INET, 16, delreq, 16, 0);
    n = nl_receive(fd);
    memcpy(&h, nl_buf, sizeof h);
    memcpy(&error, nl_buf + sizeof h, 4);
    CHECK(h.type == NL_ERROR && h.seq == seq);
    CHECK_EQ(error, geteuid() != 0 ? -EPERM : on_reef() ? -EOPNOTSUPP : -EADDRNOTAVAIL);

    /* Malformed sends are taken and answered with nothing. */
    CHECK_EQ(send(fd2, "abc", 3, 0), 3);
    struct nl_hdr lying = {.len = 4000, .type = RT_GETLINK, .flags = NL_REQUEST | NL_DUMP};
    CHECK_EQ(send(fd2, &lying, sizeof lying, 0), (ssize_t)sizeof lying);
    CHECK_ERRNO(recv(fd2, nl_buf, sizeof nl_buf, 0), EAGAIN);

    /* A cut answer: MSG_TRUNC in msg_flags, the whole length with the MSG_TRUNC flag. */
    nl_request(fd2, RT_GETADDR, NL_REQUEST | NL_DUMP, AF_INET, 8, NULL, 0, 0);
    size = recv(fd2, NULL, 0, MSG_PEEK | MSG_TRUNC);
    CHECK(size > 16);
    struct iovec v = {nl_buf, 16};
    struct msghdr m = {.msg_iov = &v, .msg_iovlen = 1};
    CHECK_EQ(recvmsg(fd2, &m, MSG_PEEK), 16);
    CHECK(m.msg_flags & MSG_TRUNC);
    CHECK_EQ(recv(fd2, nl_buf, 16, MSG_TRUNC), size);
    while (recv(fd2, nl_buf, sizeof nl_buf, 0) > 0)
        ;
    CHECK_EQ(errno, EAGAIN);

    /* Two requests in one send: two answers, in order. */
    uint8_t two[2][32] = {{0}};
    for (int i = 0; i < 2; i++) {
        struct nl_hdr r = {.len = 32, .type = RT_GETLINK, .flags = NL_REQUEST, .seq = 500u + i};
        memcpy(two[i], &r, sizeof r);
        memcpy(two[i] + sizeof r + 4, &one, 4);
    }
    CHECK_EQ(send(fd2, two, sizeof two, 0), (ssize_t)sizeof two);
    for (uint32_t i = 0; i < 2; i++) {
        n = CHECK_SYS(recv(fd2, nl_buf, sizeof nl_buf, 0));
        memcpy(&h, nl_buf, sizeof h);
        CHECK(n >= h.len && h.type == RT_NEWLINK && h.seq == 500u + i);
    }
    CHECK_ERRNO(recv(fd2, nl_buf, sizeof nl_buf, 0), EAGAIN);

    if (on_reef()) {
        /* Answers past the receive buffer are dropped: POLLERR, then ENOBUFS once, then the
         * answers that fit. (Linux holds a dump back until it is read instead.) */
        setopt_int(fd2, SOL_SOCKET, SO_RCVBUF, 1);
        uint8_t many[20][24] = {{0}};
        for (int i = 0; i < 20; i++) {
            struct nl_hdr r = {.len = 24, .type = RT_GETADDR, .flags = NL_REQUEST | NL_DUMP};
            memcpy(many[i], &r, sizeof r);
            many[i][sizeof r] = AF_INET;
        }
        CHECK_EQ(send(fd2, many, sizeof many, 0), (ssize_t)sizeof many);
        CHECK(poll_now(fd2, POLLIN) & POLLERR);
        CHECK_ERRNO(recv(fd2, nl_buf, sizeof nl_buf, 0), ENOBUFS);
        int taken = 0;
        while (recv(fd2, nl_buf, sizeof nl_buf, 0) > 0)
            taken++;
        CHECK(errno == EAGAIN && taken >= 1 && taken < 20);
    }
    CHECK_SYS(close(ep));
    CHECK_SYS(close(fd2));
    CHECK_SYS(close(fd));
    SAY("netlink: %d links, %d IPv4 addresses, %d routes; lo index 1 127.0.0.1/8", links, addrs,
        routes);
}

/* Packet sockets of type SOCK_DGRAM (what busybox udhcpc opens) and IPPROTO_RAW sockets, with
 * Linux's answers to hostile addresses: both root's only (EPERM); a send with no address on an
 * unbound socket ENXIO, bind with a short address or another family EINVAL, an unknown
 * interface ENODEV, a send with a short address or an sll_halen past it EINVAL; on lo a
 * datagram needs no destination; a UDP datagram over 127.0.0.1 arrives without its Ethernet
 * header, with its sockaddr_ll. */
static void packet_dgram(void)
{
    if (geteuid() != 0) {
        CHECK_ERRNO(socket(AF_PACKET, SOCK_DGRAM, htons(0x0800)), EPERM);
        CHECK_ERRNO(socket(AF_INET, SOCK_RAW, IPPROTO_RAW), EPERM);
        SAY("packet_dgram: EPERM unprivileged");
        return;
    }
    int raw = CHECK_SYS(socket(AF_INET, SOCK_RAW, IPPROTO_RAW));
    struct ifreq r;
    memset(&r, 0, sizeof r);
    strcpy(r.ifr_name, "lo");
    CHECK_SYS(ioctl(raw, SIOCGIFINDEX, &r));
    int lo = r.ifr_ifindex;
    CHECK_SYS(close(raw));

    int d = CHECK_SYS(socket(AF_PACKET, SOCK_DGRAM | SOCK_NONBLOCK, htons(0x0800)));
    int type = 0;
    socklen_t tl = sizeof type;
    CHECK_SYS(getsockopt(d, SOL_SOCKET, SO_TYPE, &type, &tl));
    CHECK_EQ(type, SOCK_DGRAM);
    CHECK_ERRNO(send(d, "x", 1, 0), ENXIO);
    struct sockaddr_ll ll = {.sll_family = AF_PACKET, .sll_protocol = htons(0x0800)};
    ll.sll_ifindex = lo;
    CHECK_ERRNO(bind(d, (struct sockaddr *)&ll, sizeof ll - 1), EINVAL);
    ll.sll_family = AF_INET;
    CHECK_ERRNO(bind(d, (struct sockaddr *)&ll, sizeof ll), EINVAL);
    ll.sll_family = AF_PACKET;
    ll.sll_ifindex = 12345;
    CHECK_ERRNO(bind(d, (struct sockaddr *)&ll, sizeof ll), ENODEV);
    ll.sll_ifindex = lo;
    CHECK_SYS(bind(d, (struct sockaddr *)&ll, sizeof ll));
    CHECK_ERRNO(bind(d, (struct sockaddr *)1, sizeof ll), EFAULT);

    /* Sends: the address's length and sll_halen checked, a bad pointer EFAULT. */
    struct sockaddr_ll to = ll;
    to.sll_halen = 6;
    CHECK_ERRNO(sendto(d, "x", 1, 0, (struct sockaddr *)&to, sizeof to - 1), EINVAL);
    to.sll_halen = 9;
    CHECK_ERRNO(sendto(d, "x", 1, 0, (struct sockaddr *)&to, sizeof to), EINVAL);
    to.sll_halen = 255;
    CHECK_ERRNO(sendto(d, "x", 1, 0, (struct sockaddr *)&to, sizeof to), EINVAL);
    to.sll_halen = 8;
    CHECK_ERRNO(sendto(d, "x", 1, 0, (struct sockaddr *)1, sizeof to), EFAULT);
    /* Not an IPv4 packet: sent, and dropped by whoever reads it. */
    CHECK_EQ(sendto(d, "hello", 5, 0, (struct sockaddr *)&to, sizeof to), 5);
    CHECK_EQ(send(d, "hello", 5, 0), 5);

    /* Receiving: a datagram over 127.0.0.1, found among lo's IPv4 packets. */
    struct sockaddr_in ua;
    int u = bound(SOCK_DGRAM, &ua);
    int v = CHECK_SYS(socket(AF_INET, SOCK_DGRAM, 0));
    const char mark[] = "packet-dgram-mark";
    CHECK_EQ(sendto(v, mark, sizeof mark, 0, (struct sockaddr *)&ua, sizeof ua),
             (ssize_t)sizeof mark);
    char byte[sizeof mark];
    CHECK_EQ(recv(u, byte, sizeof byte, 0), (ssize_t)sizeof mark);
    int found = 0;
    for (int i = 0; i < 1000 && !found; i++) {
        unsigned char buf[2048];
        struct sockaddr_ll from;
        socklen_t fl = sizeof from;
        ssize_t n = recvfrom(d, buf, sizeof buf, 0, (struct sockaddr *)&from, &fl);
        if (n < 0) {
            CHECK_EQ(errno, EAGAIN);
            break;
        }
        if (n < 28 + (ssize_t)sizeof mark || memcmp(buf + 28, mark, sizeof mark) != 0)
            continue;
        found = 1;
        CHECK_EQ(buf[0], 0x45);
        CHECK_EQ(buf[9], IPPROTO_UDP);
        CHECK_EQ(fl, (socklen_t)sizeof from);
        CHECK_EQ(from.sll_family, AF_PACKET);
        CHECK_EQ(from.sll_protocol, htons(0x0800));
        CHECK_EQ(from.sll_ifindex, lo);
        CHECK_EQ(from.sll_hatype, ARPHRD_LOOPBACK);
        CHECK_EQ(from.sll_halen, 6);
    }
    CHECK(found);
    CLOSE(u, v, d);
    SAY("packet_dgram: SOCK_DGRAM packet sockets on lo, Linux's errors");
}

int main(void)
{
    test_begin("net");
    set_handler(SIGPIPE, SIG_IGN, 0);
    tcp_basic();
    tcp_processes();
    backlog();
    udp();
    nonblocking();
    errors();
    epipe();
    options();
    timeouts();
    messages();
    closing();
    interfaces();
    netlink();
    packet_dgram();
    nothing_kept();
    PASS();
}
