/*
 * msgring: the user-level message channel of reef_msg.h (lib/msg's layout and protocol)
 * between two processes over a MAP_SHARED connection, with futex wake-ups, on Reef as on Linux.
 *
 * - full: the sender's 63rd message into an unread ring of 62 fails with EAGAIN, and the
 *   ring takes one more after one receive;
 * - ping-pong: a parent and a child on two different cores (the first and the last one it
 *   may use) exchange 20000 request/reply pairs over a request and a reply channel; every
 *   reply answers its request (value + 1, same tag);
 * - stream: 200000 messages parent to child through one channel, the child checks that none
 *   is lost, duplicated or reordered (sequence numbers and a check word), and both sides sleep
 *   and wake as the ring fills and drains;
 * - closing: a child that closes its receiving end wakes the parent, blocked in a send on a
 *   full ring, with EPIPE; a parent that closes its sending end lets the child take what is
 *   left, then the child sees EPIPE;
 * - corrupt slots (a length over 56, an unknown flag) are reported as EBADMSG and skipped;
 * - server: three client processes stream 20000 messages each, on a channel each, to one
 *   server that sleeps on a single eventcount for all of them (reef_msg_wait_any): every
 *   message arrives, in order per client, and every close is seen.
 */
#include "reef-test.h"
#include "reef_msg.h"

#define ROUNDS 20000
#define STREAM 200000

static struct reef_msg_channel *new_channels(int n)
{
    void *p = mmap(NULL, 4096 * (size_t)n, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
                   -1, 0);
    CHECK(p != MAP_FAILED);
    return p;
}

static struct reef_msg word_msg(uint16_t tag, uint64_t a, uint64_t b)
{
    uint64_t w[2] = {a, b};
    struct reef_msg m;
    CHECK_EQ(reef_msg_make(&m, tag, w, sizeof w), 0);
    return m;
}

static uint64_t word(const struct reef_msg *m, int i)
{
    uint64_t w;
    memcpy(&w, m->data + 8 * i, 8);
    return w;
}

/* Pins the calling process to `cpu` (ignored if it cannot be used). */
static void pin(int cpu)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    sched_setaffinity(0, sizeof set, &set);
}

/* The first and last CPU this process may run on. */
static void cpu_range(int *first, int *last)
{
    cpu_set_t set;
    CHECK_SYS(sched_getaffinity(0, sizeof set, &set));
    *first = -1;
    for (int c = 0; c < CPU_SETSIZE; c++)
        if (CPU_ISSET(c, &set)) {
            if (*first < 0)
                *first = c;
            *last = c;
        }
}

static void wait_child(pid_t pid)
{
    int status;
    CHECK_SYS(waitpid(pid, &status, 0));
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        FAIL("child %d ended with status %#x", (int)pid, status);
}

static void full(void)
{
    struct reef_msg_channel *ch = new_channels(1);
    struct reef_msg_sender tx;
    struct reef_msg_receiver rx;
    reef_msg_sender_init(&tx, ch);
    reef_msg_receiver_init(&rx, ch);
    for (int i = 0; i < REEF_MSG_PAGE_SLOTS; i++) {
        struct reef_msg m = word_msg(1, (uint64_t)i, 0);
        CHECK_EQ(reef_msg_try_send(&tx, &m), 0);
    }
    struct reef_msg m = word_msg(1, 99, 0);
    CHECK_EQ(reef_msg_try_send(&tx, &m), -EAGAIN);
    struct reef_msg got;
    CHECK_EQ(reef_msg_try_recv(&rx, &got), 1);
    CHECK_EQ(word(&got, 0), 0);
    CHECK_EQ(reef_msg_try_send(&tx, &m), 0);
    CHECK_EQ(reef_msg_try_send(&tx, &m), -EAGAIN);
    char big[REEF_MSG_PAYLOAD + 1] = {0};
    CHECK_EQ(reef_msg_make(&m, 1, big, sizeof big), -EMSGSIZE);
    SAY("a full ring of %d refuses message %d with EAGAIN, takes one after a receive",
        REEF_MSG_PAGE_SLOTS, REEF_MSG_PAGE_SLOTS + 1);
    munmap(ch, 4096);
}

static void ping_pong(void)
{
    struct reef_msg_channel *ch = new_channels(2); /* requests, replies */
    int first, last;
    cpu_range(&first, &last);
    pid_t pid = CHECK_SYS(fork());
    if (pid == 0) {
        pin(last);
        struct reef_msg_receiver rx;
        struct reef_msg_sender tx;
        reef_msg_receiver_init(&rx, &ch[0]);
        reef_msg_sender_init(&tx, &ch[1]);
        struct reef_msg m;
        int r;
        while ((r = reef_msg_recv(&rx, &m)) == 1) {
            struct reef_msg reply = word_msg(m.tag, word(&m, 0) + 1, 0);
            CHECK_EQ(reef_msg_send(&tx, &reply), 0);
        }
        CHECK_EQ(r, -EPIPE);
        _exit(0);
    }
    pin(first);
    struct reef_msg_sender tx;
    struct reef_msg_receiver rx;
    reef_msg_sender_init(&tx, &ch[0]);
    reef_msg_receiver_init(&rx, &ch[1]);
    for (uint64_t i = 0; i < ROUNDS; i++) {
        struct reef_msg m = word_msg((uint16_t)i, i * 3, 0), reply;
        CHECK_EQ(reef_msg_send(&tx, &m), 0);
        CHECK_EQ(reef_msg_recv(&rx, &reply), 1);
        CHECK_EQ(reply.tag, (uint16_t)i);
        CHECK_EQ(word(&reply, 0), i * 3 + 1);
    }
    reef_msg_close_sender(&tx);
    wait_child(pid);
    SAY("%d round trips between cpu %d and cpu %d, every reply answers its request", ROUNDS,
        first, last);
    munmap(ch, 8192);
}

static void stream(void)
{
    struct reef_msg_channel *ch = new_channels(1);
    int first, last;
    cpu_range(&first, &last);
    pid_t pid = CHECK_SYS(fork());
    if (pid == 0) {
        pin(last);
        struct reef_msg_receiver rx;
        reef_msg_receiver_init(&rx, ch);
        struct reef_msg m;
        uint64_t next = 0;
        int r;
        while ((r = reef_msg_recv(&rx, &m)) == 1) {
            if (word(&m, 0) != next || word(&m, 1) != ~next || m.tag != (uint16_t)next)
                FAIL("message %llu: got %llu (check %llx)", (unsigned long long)next,
                     (unsigned long long)word(&m, 0), (unsigned long long)word(&m, 1));
            next++;
        }
        CHECK_EQ(r, -EPIPE);
        CHECK_EQ(next, STREAM);
        _exit(0);
    }
    pin(first);
    struct reef_msg_sender tx;
    reef_msg_sender_init(&tx, ch);
    for (uint64_t i = 0; i < STREAM; i++) {
        struct reef_msg m = word_msg((uint16_t)i, i, ~i);
        CHECK_EQ(reef_msg_send(&tx, &m), 0);
    }
    reef_msg_close_sender(&tx);
    wait_child(pid);
    SAY("%d messages streamed, none lost, duplicated or reordered", STREAM);
    munmap(ch, 4096);
}

static void closing(void)
{
    struct reef_msg_channel *ch = new_channels(2); /* data, and the child's "ready" */
    pid_t pid = CHECK_SYS(fork());
    if (pid == 0) {
        /* Wait until the parent has filled the ring, then close: the parent is (or soon
         * will be) blocked in a send. */
        struct reef_msg_receiver ready;
        struct reef_msg m;
        reef_msg_receiver_init(&ready, &ch[1]);
        CHECK_EQ(reef_msg_recv(&ready, &m), 1);
        reef_msg_close_receiver(&ch[0]);
        _exit(0);
    }
    struct reef_msg_sender tx, ready;
    reef_msg_sender_init(&tx, &ch[0]);
    reef_msg_sender_init(&ready, &ch[1]);
    struct reef_msg m = word_msg(1, 0, 0);
    for (int i = 0; i < REEF_MSG_PAGE_SLOTS; i++)
        CHECK_EQ(reef_msg_try_send(&tx, &m), 0);
    CHECK_EQ(reef_msg_send(&ready, &m), 0);
    CHECK_EQ(reef_msg_send(&tx, &m), -EPIPE);
    wait_child(pid);
    SAY("a sender blocked on a full ring gets EPIPE when the receiver closes");

    /* The other way: what was sent before the close is delivered, then EPIPE. */
    struct reef_msg_channel *c2 = new_channels(1);
    struct reef_msg_sender t2;
    struct reef_msg_receiver r2;
    reef_msg_sender_init(&t2, c2);
    reef_msg_receiver_init(&r2, c2);
    for (int i = 0; i < 3; i++) {
        struct reef_msg x = word_msg(1, (uint64_t)i, 0);
        CHECK_EQ(reef_msg_try_send(&t2, &x), 0);
    }
    reef_msg_close_sender(&t2);
    for (int i = 0; i < 3; i++) {
        CHECK_EQ(reef_msg_recv(&r2, &m), 1);
        CHECK_EQ(word(&m, 0), i);
    }
    CHECK_EQ(reef_msg_recv(&r2, &m), -EPIPE);
    SAY("a closed sender's last messages arrive, then EPIPE");

    /* Corrupt headers written by a misbehaving sender are skipped. */
    atomic_store(&c2->slots[3].header, (uint64_t)4 | (uint64_t)57 << 48);
    atomic_store(&c2->slots[4].header, (uint64_t)5 | (uint64_t)0x80 << 56);
    atomic_store(&c2->tx.closed, 0);
    CHECK_EQ(reef_msg_try_recv(&r2, &m), -EBADMSG);
    CHECK_EQ(reef_msg_try_recv(&r2, &m), -EBADMSG);
    CHECK_EQ(reef_msg_try_recv(&r2, &m), 0);
    SAY("corrupt slots give EBADMSG and are skipped");
    munmap(ch, 8192);
    munmap(c2, 4096);
}

#define CLIENTS 3
#define EACH 20000

/* One server process, CLIENTS client processes each on a channel of its own, the server
 * sleeping on one eventcount for all (lib/msg's wait_any). */
static void server(void)
{
    /* CLIENTS channels, then a page whose first word is the eventcount. */
    struct reef_msg_channel *ch = new_channels(CLIENTS + 1);
    _Atomic uint32_t *events = (_Atomic uint32_t *)&ch[CLIENTS];
    int first, last;
    cpu_range(&first, &last);
    pid_t pids[CLIENTS];
    for (int c = 0; c < CLIENTS; c++) {
        pids[c] = CHECK_SYS(fork());
        if (pids[c] == 0) {
            pin(first + (c + 1) % (last - first + 1));
            struct reef_msg_sender tx;
            reef_msg_sender_init_server(&tx, &ch[c], events);
            for (uint64_t i = 0; i < EACH; i++) {
                struct reef_msg m = word_msg((uint16_t)c, i, ~i);
                if (reef_msg_send(&tx, &m) != 0)
                    _exit(2);
            }
            reef_msg_close_sender(&tx);
            _exit(0);
        }
    }
    pin(first);
    struct reef_msg_receiver rx[CLIENTS];
    struct reef_msg_channel *live[CLIENTS];
    uint64_t next[CLIENTS] = {0};
    int open[CLIENTS];
    for (int c = 0; c < CLIENTS; c++) {
        reef_msg_receiver_init(&rx[c], &ch[c]);
        open[c] = 1;
    }
    int left = CLIENTS;
    while (left > 0) {
        int n = 0;
        for (int c = 0; c < CLIENTS; c++) {
            struct reef_msg m;
            int r;
            while (open[c] && (r = reef_msg_try_recv(&rx[c], &m)) != 0) {
                if (r == -EPIPE) {
                    CHECK_EQ(next[c], EACH);
                    open[c] = 0;
                    left--;
                    break;
                }
                CHECK_EQ(r, 1);
                if (m.tag != c || word(&m, 0) != next[c] || word(&m, 1) != ~next[c])
                    FAIL("client %d message %llu: got tag %d, %llu", c,
                         (unsigned long long)next[c], m.tag, (unsigned long long)word(&m, 0));
                next[c]++;
            }
            if (open[c])
                live[n++] = &ch[c];
        }
        if (n > 0)
            reef_msg_wait_any(live, n, events);
    }
    for (int c = 0; c < CLIENTS; c++)
        wait_child(pids[c]);
    SAY("a server sleeping on one eventcount took %d clients' %d messages each, in order", CLIENTS,
        EACH);
    munmap(ch, 4096 * (CLIENTS + 1));
}

int main(void)
{
    test_begin("msgring");
    full();
    ping_pong();
    stream();
    closing();
    server();
    PASS();
}
