/*
 * spoof: packet sockets (AF_PACKET, SOCK_RAW: Linux packet(7)) and the check every frame an
 * instance sends gets (LibrettOS §3.2: its source MAC, IPv4 source and port must be its own),
 * made by the kernel's switch (kernel mode) or by the network server netd (server mode).
 *
 * Reef only: on Linux the spoofed frames would go out on a real network, so off Reef (no
 * /proc/reef/net) it sends nothing, says SKIP and passes. On Reef, as root:
 *
 * - a process without privilege gets EPERM; SOCK_DGRAM and SOCK_STREAM packet sockets
 *   ESOCKTNOSUPPORT; bind answers EINVAL for a short address or another family, ENODEV for
 *   an interface that does not exist (eth0 exists exactly when there is a NIC); getsockname
 *   gives the protocol, lo's index, hardware type and the instance's MAC; sends answer ENXIO
 *   unbound, EINVAL for less than an Ethernet header, EMSGSIZE for more than 1514 bytes;
 * - receive: a socket bound to lo with ETH_P_ALL sees every segment of a TCP connection of
 *   its own process over 127.0.0.1 twice (sent: PACKET_OUTGOING from its MAC, and delivered:
 *   PACKET_HOST), the data among them, with a sockaddr_ll; an ETH_P_IP socket sees only the
 *   delivered ones; poll and epoll say POLLIN; MSG_TRUNC and MSG_PEEK as Linux's; a blocking
 *   recvfrom is woken by a frame; a connection of a child process (its own instance) is not
 *   seen; a socket nobody reads keeps 128 frames and counts the rest as dropped
 *   (PACKET_STATISTICS);
 * - spoof: with a TCP listener on 127.0.0.1 holding port P, it sends (a) a segment from P
 *   with another instance's MAC, (b) one from a port it does not hold, (c) one from an
 *   address that is not the machine's, (d) one from 0.0.0.0 (which only a DHCP client's
 *   request may come from), and (e) a reset from its own MAC, 127.0.0.1 and P to P, which
 *   nothing can refuse: (e) comes back to its instance (the socket sees it delivered) and the
 *   spoofed counter of its mode (dropped_spoofed of the kernel's switch, or the server's
 *   spoofed) rose by exactly 4, the other's not at all.
 */
#include "reef-test.h"
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netpacket/packet.h>
#include <poll.h>
#include <pthread.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/uio.h>

#define ETH_P_ALL 0x0003
#define ETH_P_IP 0x0800
#define ETH_P_ARP 0x0806
#define IF_LO 1
#define IF_ETH 2
#define ARPHRD_LOOPBACK 772
#define FRAME_MAX 1514
#define QUEUE 128     /* frames a packet socket keeps */
#define WAIT_MS 10000 /* generous timeout for asynchronous outcomes */

/* struct tpacket_stats (not in musl's headers). */
struct tpacket_stats {
    unsigned tp_packets, tp_drops;
};

/* The switch's MAC (lib/net SWITCH_MAC): every local address resolves to it. */
static const uint8_t SWITCH_MAC[6] = {0x02, 0x52, 0x45, 0x45, 0x46, 0xff};

/* ---- helpers ---- */

static struct sockaddr_in loopback(uint16_t port)
{
    return (struct sockaddr_in){
        .sin_family = AF_INET, .sin_port = htons(port), .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
}

/* A TCP listener on 127.0.0.1 (any port); its port to *port. */
static int listener(uint16_t *port)
{
    int l = CHECK_SYS(socket(AF_INET, SOCK_STREAM, 0));
    struct sockaddr_in a = loopback(0);
    socklen_t len = sizeof a;
    CHECK_SYS(bind(l, (struct sockaddr *)&a, sizeof a));
    CHECK_SYS(listen(l, 4));
    CHECK_SYS(getsockname(l, (struct sockaddr *)&a, &len));
    *port = ntohs(a.sin_port);
    return l;
}

/* A connection to `port` on 127.0.0.1 and the listener's end of it; the client's port. */
static uint16_t connect_pair(int l, uint16_t port, int *client, int *server)
{
    *client = CHECK_SYS(socket(AF_INET, SOCK_STREAM, 0));
    struct sockaddr_in a = loopback(port);
    CHECK_SYS(connect(*client, (struct sockaddr *)&a, sizeof a));
    *server = CHECK_SYS(accept(l, NULL, NULL));
    socklen_t len = sizeof a;
    CHECK_SYS(getsockname(*client, (struct sockaddr *)&a, &len));
    return ntohs(a.sin_port);
}

/* A packet socket of `proto` bound to `ifindex` with protocol `bind_proto`. */
static int packet_socket(int proto, int bind_proto, int ifindex)
{
    int s = CHECK_SYS(socket(AF_PACKET, SOCK_RAW, htons(proto)));
    struct sockaddr_ll a = {
        .sll_family = AF_PACKET, .sll_protocol = htons(bind_proto), .sll_ifindex = ifindex};
    CHECK_SYS(bind(s, (struct sockaddr *)&a, sizeof a));
    return s;
}

/* One frame a packet socket received. */
struct frame {
    uint8_t data[FRAME_MAX];
    int len;
    struct sockaddr_ll from;
};

/* Receives every frame waiting on `s` (at most `max`) without waiting. */
static int drain(int s, struct frame *out, int max)
{
    int n = 0;
    for (;;) {
        struct frame f;
        socklen_t alen = sizeof f.from;
        ssize_t r = recvfrom(s, f.data, sizeof f.data, MSG_DONTWAIT, (struct sockaddr *)&f.from,
                             &alen);
        if (r < 0) {
            if (errno != EAGAIN)
                FAIL("recvfrom on a packet socket: %s", strerror(errno));
            return n;
        }
        CHECK_EQ(alen, sizeof(struct sockaddr_ll));
        CHECK_EQ(f.from.sll_family, AF_PACKET);
        CHECK_EQ(f.from.sll_halen, 6);
        CHECK_EQ(ntohs(f.from.sll_protocol), (f.data[12] << 8) | f.data[13]);
        CHECK(memcmp(f.from.sll_addr, f.data + 6, 6) == 0);
        f.len = (int)r;
        if (n < max)
            out[n] = f;
        n++;
    }
}

/* Whether frame `f` is a TCP segment from port `sport` to `dport` (its payload to *payload). */
static int is_tcp(const struct frame *f, uint16_t sport, uint16_t dport, const uint8_t **payload,
                  int *payload_len)
{
    if (f->len < 54 || f->data[12] != 0x08 || f->data[13] != 0x00 || f->data[23] != 6)
        return 0;
    const uint8_t *ip = f->data + 14;
    int ihl = (ip[0] & 0xf) * 4, total = (ip[2] << 8) | ip[3];
    const uint8_t *tcp = ip + ihl;
    if (((tcp[0] << 8) | tcp[1]) != sport || ((tcp[2] << 8) | tcp[3]) != dport)
        return 0;
    int off = (tcp[12] >> 4) * 4;
    if (payload) {
        *payload = tcp + off;
        *payload_len = total - ihl - off;
    }
    return 1;
}

/* The Internet checksum of `len` bytes, starting from `sum`. */
static uint16_t checksum(const uint8_t *p, int len, uint32_t sum)
{
    for (int i = 0; i + 1 < len; i += 2)
        sum += (p[i] << 8) | p[i + 1];
    if (len & 1)
        sum += p[len - 1] << 8;
    while (sum >> 16)
        sum = (sum & 0xffff) + (sum >> 16);
    return (uint16_t)~sum;
}

/* Writes into `f` a TCP reset with sequence number `seq` from `mac`, `src`:`sport` to
 * 127.0.0.1:`dport`, to the switch; its length (54). Addresses in host order. */
static int tcp_frame(uint8_t *f, const uint8_t mac[6], uint32_t src, uint16_t sport,
                     uint16_t dport, uint8_t seq)
{
    uint32_t dst = INADDR_LOOPBACK;
    memset(f, 0, 54);
    memcpy(f, SWITCH_MAC, 6);
    memcpy(f + 6, mac, 6);
    f[12] = 0x08;
    uint8_t *ip = f + 14, *tcp = f + 34;
    ip[0] = 0x45;
    ip[3] = 40;
    ip[6] = 0x40; /* don't fragment */
    ip[8] = 64;
    ip[9] = 6;
    for (int i = 0; i < 4; i++) {
        ip[12 + i] = (uint8_t)(src >> (24 - 8 * i));
        ip[16 + i] = (uint8_t)(dst >> (24 - 8 * i));
    }
    uint16_t c = checksum(ip, 20, 0);
    ip[10] = c >> 8;
    ip[11] = c & 0xff;
    tcp[0] = sport >> 8;
    tcp[1] = sport & 0xff;
    tcp[2] = dport >> 8;
    tcp[3] = dport & 0xff;
    tcp[7] = seq;
    tcp[12] = 5 << 4; /* no options */
    tcp[13] = 0x04;   /* RST */
    /* Pseudo-header: addresses, protocol, TCP length. */
    uint32_t sum = (src >> 16) + (src & 0xffff) + (dst >> 16) + (dst & 0xffff) + 6 + 20;
    c = checksum(tcp, 20, sum);
    tcp[16] = c >> 8;
    tcp[17] = c & 0xff;
    return 54;
}

/* The value after ` key ` on the /proc/reef/net line starting with `prefix` (-1: no such
 * line or key). */
static long counter(const char *prefix, const char *key)
{
    FILE *f = fopen("/proc/reef/net", "r");
    if (!f)
        FAIL("/proc/reef/net: %s", strerror(errno));
    char line[1024], pat[64];
    long v = -1;
    snprintf(pat, sizeof pat, " %s ", key);
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, prefix, strlen(prefix)) != 0)
            continue;
        char *p = strstr(line, pat);
        if (p)
            v = strtol(p + strlen(pat), NULL, 10);
    }
    fclose(f);
    return v;
}

/* The mode ("kernel" or "server/N") of the instance holding TCP port `port`, into `mode`. */
static void mode_of(uint16_t port, char *mode, size_t size)
{
    FILE *f = fopen("/proc/reef/net", "r");
    if (!f)
        FAIL("/proc/reef/net: %s", strerror(errno));
    char line[1024], want[16];
    snprintf(want, sizeof want, "tcp/%u", port);
    mode[0] = 0;
    while (fgets(line, sizeof line, f)) {
        char id[32], m[32], socks[32], ports[512];
        if (sscanf(line, "%31s %31s %31s %511s", id, m, socks, ports) != 4)
            continue;
        for (char *t = strtok(ports, ","); t; t = strtok(NULL, ","))
            if (strcmp(t, want) == 0)
                snprintf(mode, size, "%s", m);
    }
    fclose(f);
    if (!mode[0])
        FAIL("no instance holds %s in /proc/reef/net", want);
}

/* Whether the machine has a NIC (/proc/reef/net's `nic` line is not `nic none`). */
static int has_nic(void)
{
    FILE *f = fopen("/proc/reef/net", "r");
    if (!f)
        FAIL("/proc/reef/net: %s", strerror(errno));
    char line[1024];
    int nic = 0;
    while (fgets(line, sizeof line, f))
        if (strncmp(line, "nic ", 4) == 0)
            nic = strncmp(line, "nic none", 8) != 0;
    fclose(f);
    return nic;
}

/* Lets the frames in flight arrive (in server mode they go through netd). */
static void quiet(void)
{
    struct timespec t = {0, 300 * 1000 * 1000};
    nanosleep(&t, NULL);
}

/* ---- the parts ---- */

static uint8_t own_mac[6];

static void errors(void)
{
    /* Without privilege: EPERM, as Linux without CAP_NET_RAW. */
    pid_t pid = CHECK_SYS(fork());
    if (pid == 0) {
        if (setuid(65534) != 0)
            _exit(2);
        errno = 0;
        int r = socket(AF_PACKET, SOCK_RAW, htons(ETH_P_ALL));
        _exit(r == -1 && errno == EPERM ? 0 : 1);
    }
    int status;
    CHECK_SYS(waitpid(pid, &status, 0));
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    CHECK_ERRNO(socket(AF_PACKET, SOCK_SEQPACKET, htons(ETH_P_ALL)), ESOCKTNOSUPPORT);
    CHECK_ERRNO(socket(AF_PACKET, SOCK_STREAM, 0), ESOCKTNOSUPPORT);

    int s = CHECK_SYS(socket(AF_PACKET, SOCK_RAW, 0));
    int one = 0;
    socklen_t len = sizeof one;
    CHECK_SYS(getsockopt(s, SOL_SOCKET, SO_TYPE, &one, &len));
    CHECK_EQ(one, SOCK_RAW);
    uint8_t frame[FRAME_MAX + 1] = {0};
    CHECK_ERRNO(write(s, frame, 60), ENXIO);
    struct sockaddr_ll a = {.sll_family = AF_PACKET, .sll_ifindex = IF_LO};
    CHECK_ERRNO(bind(s, (struct sockaddr *)&a, 10), EINVAL);
    a.sll_family = AF_INET;
    CHECK_ERRNO(bind(s, (struct sockaddr *)&a, sizeof a), EINVAL);
    a.sll_family = AF_PACKET;
    a.sll_ifindex = 99;
    CHECK_ERRNO(bind(s, (struct sockaddr *)&a, sizeof a), ENODEV);
    a.sll_ifindex = IF_ETH;
    if (has_nic()) {
        CHECK_SYS(bind(s, (struct sockaddr *)&a, sizeof a));
    } else {
        CHECK_ERRNO(bind(s, (struct sockaddr *)&a, sizeof a), ENODEV);
    }
    a.sll_ifindex = IF_LO;
    CHECK_SYS(bind(s, (struct sockaddr *)&a, sizeof a));
    CHECK_ERRNO(write(s, frame, 13), EINVAL);
    CHECK_ERRNO(write(s, frame, FRAME_MAX + 1), EMSGSIZE);
    CHECK_ERRNO(sendto(s, frame, 60, 0, (struct sockaddr *)&a, 8), EINVAL);
    a.sll_ifindex = 99;
    CHECK_ERRNO(sendto(s, frame, 60, 0, (struct sockaddr *)&a, sizeof a), ENXIO);
    CHECK_ERRNO(listen(s, 1), EOPNOTSUPP);
    CHECK_ERRNO(getpeername(s, (struct sockaddr *)&a, &len), EOPNOTSUPP);

    /* getsockname: protocol 0 kept, lo, its hardware type, the instance's MAC. */
    struct sockaddr_ll name;
    len = sizeof name;
    CHECK_SYS(getsockname(s, (struct sockaddr *)&name, &len));
    CHECK_EQ(len, 18);
    CHECK_EQ(name.sll_family, AF_PACKET);
    CHECK_EQ(name.sll_protocol, 0);
    CHECK_EQ(name.sll_ifindex, IF_LO);
    CHECK_EQ(name.sll_hatype, ARPHRD_LOOPBACK);
    CHECK_EQ(name.sll_halen, 6);
    CHECK(name.sll_addr[0] == 0x02 && name.sll_addr[1] == 0x52);
    memcpy(own_mac, name.sll_addr, 6);
    CHECK_SYS(close(s));
    SAY("errors: EPERM unprivileged, ESOCKTNOSUPPORT, EINVAL, ENODEV, ENXIO, EMSGSIZE; "
        "own MAC %02x:%02x:%02x:%02x:%02x:%02x",
        own_mac[0], own_mac[1], own_mac[2], own_mac[3], own_mac[4], own_mac[5]);
}

/* The thread that writes to a connection after a pause (for a blocking recvfrom). */
static void *late_writer(void *arg)
{
    struct timespec t = {0, 200 * 1000 * 1000};
    nanosleep(&t, NULL);
    if (write(*(int *)arg, "late", 4) != 4)
        FAIL("late write: %s", strerror(errno));
    return NULL;
}

static struct frame seen[4 * QUEUE];

static void receive(void)
{
    uint16_t port, cport;
    int l = listener(&port);
    int all = packet_socket(ETH_P_ALL, 0, IF_LO);
    int ip = packet_socket(ETH_P_IP, 0, IF_LO);
    int arp = packet_socket(ETH_P_ARP, 0, 0);
    int c, s;
    cport = connect_pair(l, port, &c, &s);
    CHECK_EQ(write(c, "spoof-hello", 11), 11);
    char buf[64];
    CHECK_EQ(read(s, buf, sizeof buf), 11);

    struct pollfd p = {.fd = all, .events = POLLIN};
    CHECK_EQ(poll(&p, 1, WAIT_MS), 1);
    CHECK(p.revents & POLLIN);
    int ep = CHECK_SYS(epoll_create1(0));
    struct epoll_event ev = {.events = EPOLLIN}, got;
    CHECK_SYS(epoll_ctl(ep, EPOLL_CTL_ADD, all, &ev));
    CHECK_EQ(epoll_wait(ep, &got, 1, WAIT_MS), 1);

    /* Until every segment sent was also delivered (in server mode the last ones may still be
     * on their way through netd). */
    int n = 0, out_c = 0, in_c = 0, out_s = 0, in_s = 0, hello = 0;
    for (int round = 0; round == 0 || in_c != out_c || in_s != out_s; round++) {
        if (round > 0)
            CHECK(round < 100 && poll(&p, 1, WAIT_MS) == 1);
        int got_n = drain(all, seen, 4 * QUEUE);
        CHECK(got_n <= 4 * QUEUE);
        n += got_n;
        for (int i = 0; i < got_n; i++) {
            const uint8_t *pl;
            int pn;
            struct frame *f = &seen[i];
            CHECK_EQ(f->from.sll_ifindex, IF_LO);
            if (f->from.sll_pkttype == PACKET_OUTGOING)
                CHECK(memcmp(f->data + 6, own_mac, 6) == 0);
            else
                CHECK_EQ(f->from.sll_pkttype, PACKET_HOST);
            int out = f->from.sll_pkttype == PACKET_OUTGOING;
            if (is_tcp(f, cport, port, &pl, &pn)) {
                out ? out_c++ : in_c++;
                if (!out && pn == 11 && memcmp(pl, "spoof-hello", 11) == 0)
                    hello++;
            } else if (is_tcp(f, port, cport, NULL, NULL)) {
                out ? out_s++ : in_s++;
            }
        }
    }
    SAY("receive: ETH_P_ALL on lo saw %d frames: client to listener %d sent, %d delivered; "
        "back %d sent, %d delivered",
        n, out_c, in_c, out_s, in_s);
    CHECK(out_c >= 2 && out_s >= 1);
    CHECK_EQ(hello, 1);
    int n_ip = drain(ip, seen, 4 * QUEUE);
    for (int i = 0; i < n_ip; i++) {
        CHECK_EQ(seen[i].from.sll_pkttype, PACKET_HOST);
        CHECK_EQ(ntohs(seen[i].from.sll_protocol), ETH_P_IP);
    }
    CHECK(n_ip >= in_c + in_s);
    (void)drain(arp, seen, 4 * QUEUE);
    /* Drained, the socket is not ready and has nothing to read. A late segment of the
     * connection (an ACK sent after the counts above matched, seen under a loaded host) may
     * still come; then epoll's readiness must be true (something to read), and the look is
     * made again. */
    for (int round = 0;; round++) {
        CHECK(round < 100);
        int ready = CHECK_SYS(epoll_wait(ep, &got, 1, 0));
        ssize_t r = recv(all, buf, sizeof buf, MSG_DONTWAIT);
        if (ready == 0 && r < 0) {
            CHECK_EQ(errno, EAGAIN);
            break;
        }
        if (ready == 1 && r < 0)
            FAIL("epoll said EPOLLIN on a packet socket with nothing to read: %s",
                 strerror(errno));
        (void)drain(all, seen, 4 * QUEUE);
    }
    SAY("receive: ETH_P_IP saw %d (delivered only); poll and epoll said POLLIN", n_ip);

    /* A blocking recvfrom is woken by a frame; MSG_PEEK and MSG_TRUNC. */
    pthread_t t;
    CHECK_PT(pthread_create(&t, NULL, late_writer, &c));
    uint8_t small[20];
    ssize_t full = recv(all, small, sizeof small, MSG_PEEK | MSG_TRUNC);
    CHECK(full > (ssize_t)sizeof small);
    CHECK_EQ(recv(all, small, sizeof small, MSG_TRUNC), full);
    struct iovec iov = {small, 10};
    struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1};
    CHECK_EQ(recvmsg(all, &m, 0), 10);
    CHECK(m.msg_flags & MSG_TRUNC);
    CHECK_PT(pthread_join(t, NULL));
    CHECK_EQ(read(s, buf, sizeof buf), 4);
    struct tpacket_stats st;
    socklen_t len = sizeof st;
    CHECK_SYS(getsockopt(all, SOL_PACKET, PACKET_STATISTICS, &st, &len));
    CHECK_EQ(len, sizeof st);
    CHECK_EQ(st.tp_drops, 0);
    CHECK(st.tp_packets >= (unsigned)n + 2);
    SAY("receive: a blocking recvfrom woken; MSG_PEEK|MSG_TRUNC gave %zd; %u frames counted", full,
        st.tp_packets);

    /* A child's connection is in its own instance: not seen here. */
    quiet();
    (void)drain(all, seen, 4 * QUEUE);
    int fds[2];
    CHECK_SYS(pipe(fds));
    pid_t pid = CHECK_SYS(fork());
    if (pid == 0) {
        uint16_t cp;
        int cl = listener(&cp), cc, cs;
        connect_pair(cl, cp, &cc, &cs);
        if (write(cc, "child", 5) != 5 || read(cs, buf, sizeof buf) != 5 ||
            write(fds[1], &cp, sizeof cp) != sizeof cp)
            _exit(1);
        _exit(0);
    }
    int status;
    CHECK_SYS(waitpid(pid, &status, 0));
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    uint16_t cp;
    CHECK_EQ(read(fds[0], &cp, sizeof cp), sizeof cp);
    close(fds[0]);
    close(fds[1]);
    quiet();
    n = drain(all, seen, 4 * QUEUE);
    for (int i = 0; i < n && i < 4 * QUEUE; i++) {
        const uint8_t *d = seen[i].data;
        int tcp = seen[i].len >= 54 && d[12] == 0x08 && d[13] == 0 && d[23] == 6;
        CHECK(!tcp || (((d[34] << 8) | d[35]) != cp && ((d[36] << 8) | d[37]) != cp));
    }
    SAY("receive: the child's connection to port %u was not seen (%d other frames)", cp, n);

    /* A socket nobody reads keeps QUEUE frames and counts the rest as dropped. */
    int full_sock = packet_socket(ETH_P_ALL, 0, IF_LO);
    for (int i = 0; i < QUEUE; i++) {
        CHECK_EQ(write(c, "x", 1), 1);
        CHECK_EQ(read(s, buf, 1), 1);
    }
    quiet();
    len = sizeof st;
    CHECK_SYS(getsockopt(full_sock, SOL_PACKET, PACKET_STATISTICS, &st, &len));
    n = drain(full_sock, seen, 4 * QUEUE);
    SAY("receive: unread socket kept %d of %u frames, dropped %u", n, st.tp_packets, st.tp_drops);
    CHECK_EQ(n, QUEUE);
    CHECK(st.tp_drops > 0);
    CHECK_EQ(st.tp_packets - st.tp_drops, (unsigned)QUEUE);
    len = sizeof st;
    CHECK_SYS(getsockopt(full_sock, SOL_PACKET, PACKET_STATISTICS, &st, &len));
    CHECK_EQ(st.tp_packets, 0);
    CHECK_EQ(st.tp_drops, 0);

    close(full_sock);
    close(ep);
    close(c);
    close(s);
    close(l);
    close(all);
    close(ip);
    close(arp);
}

static void spoof(void)
{
    uint16_t port;
    int l = listener(&port);
    char mode[32];
    mode_of(port, mode, sizeof mode);
    int server = strncmp(mode, "server/", 7) == 0;
    int all = packet_socket(ETH_P_ALL, 0, IF_LO);
    int tx = packet_socket(0, 0, IF_LO);
    (void)drain(all, seen, 4 * QUEUE);
    long k0 = counter("forwarded ", "dropped_spoofed"), s0 = counter("server ", "spoofed");
    CHECK(k0 >= 0);
    uint8_t f[5][54], other[6];
    memcpy(other, own_mac, 6);
    other[5] ^= 1;
    tcp_frame(f[0], other, INADDR_LOOPBACK, port, port, 1);
    tcp_frame(f[1], own_mac, INADDR_LOOPBACK, 9, port, 2);
    tcp_frame(f[2], own_mac, 0x0a090909, port, port, 3); /* 10.9.9.9 */
    /* From 0.0.0.0, which only a DHCP client's request may come from (net::dhcp). */
    tcp_frame(f[3], own_mac, INADDR_ANY, port, port, 4);
    tcp_frame(f[4], own_mac, INADDR_LOOPBACK, port, port, 5);
    for (int i = 0; i < 5; i++)
        CHECK_EQ(send(tx, f[i], 54, 0), 54);
    /* (e) comes back: delivered to this instance, which holds the port. */
    int back = 0, outgoing = 0;
    for (int tries = 0; !back && tries < 100; tries++) {
        struct pollfd p = {.fd = all, .events = POLLIN};
        CHECK(poll(&p, 1, WAIT_MS) == 1);
        int n = drain(all, seen, 4 * QUEUE);
        for (int i = 0; i < n && i < 4 * QUEUE; i++) {
            int j = 0;
            while (j < 5 && (seen[i].len != 54 || memcmp(seen[i].data + 12, f[j] + 12, 42) != 0))
                j++;
            if (j == 5)
                continue;
            if (seen[i].from.sll_pkttype == PACKET_OUTGOING) {
                /* Sent exactly as given. */
                CHECK(memcmp(seen[i].data, f[j], 54) == 0);
                outgoing++;
            } else {
                /* Only the proper one is delivered. */
                CHECK_EQ(j, 4);
                back = 1;
            }
        }
    }
    CHECK(back);
    CHECK_EQ(outgoing, 5);
    long k1 = counter("forwarded ", "dropped_spoofed"), s1 = counter("server ", "spoofed");
    SAY("source check: instance in %s mode; dropped_spoofed %ld -> %ld, "
        "server spoofed %ld -> %ld",
        mode, k0, k1, s0, s1);
    if (server) {
        CHECK_EQ(s1 - s0, 4);
        CHECK_EQ(k1, k0);
    } else {
        CHECK_EQ(k1 - k0, 4);
        CHECK_EQ(s1, s0);
    }
    SAY("source check: (a) another MAC, (b) a port not held, (c) a foreign address, (d) "
        "0.0.0.0 refused and counted; (e) from its own MAC, address and port delivered");
    close(tx);
    close(all);
    close(l);
}

int main(void)
{
    test_begin("spoof");
    if (!on_reef() || access("/proc/reef/net", R_OK) != 0) {
        SAY("SKIP: not Reef: packet sockets would put spoofed frames on a real network");
        printf("PASS %s\n", test_name);
        return 0;
    }
    CHECK_EQ(geteuid(), 0);
    errors();
    receive();
    spoof();
    printf("PASS %s\n", test_name);
    return 0;
}
