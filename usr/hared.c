/*
 * hared: a Hare file server (Hare §3.2), a member of the fleet "fleet/hare":
 *
 *   fleet start hare --cores LIST /bin/hared LIST
 *
 * Its server id is FLEET_CORE's place in LIST, and LIST's length is the number of servers
 * (every member is given the same LIST). The state machine is lib/hare's Server (usr/hare.h);
 * this file is its runtime: it registers a mailbox under FLEET_NAME, accepts connections,
 * maps each client's pool and (once) the buffer cache from the client's hello, and then
 * answers each client's requests in order (and, before one its client waits for, the posted
 * requests at the head of every client's ring: lib/hare's POSTED, take_posted), each after
 * zeroing the blocks it needs zeroed, copying
 * the data of a client without direct access to the cache (`nodirect`) and
 * queueing its invalidations at their clients (atomic delivery, §3.7.2: a send returns once
 * the message is in the client's ring). Its share of the buffer cache is an equal slice of
 * the blocks, by server id, fixed by the first hello that grants the cache.
 *
 * It never waits for a client. A client's reply ring holds REEF_MSG_PAGE_SLOTS messages; a
 * lib/hare client has at most HARE_IN_FLIGHT requests unanswered at a server (one it awaits,
 * the others posted: closes), so their replies always have slots if invalidations leave
 * that many: when only HARE_IN_FLIGHT + 1 are left, the server sends "forget everything"
 * instead and drops that client's invalidations until it has read it (an idle client caching
 * many entries others remove loses its cache, not an entry's freshness). A client whose
 * reply does not fit (it sends requests without reading replies) is disconnected.
 *
 * On a core it owns (FLEET_SHARED=0, the split placement) it polls its rings and mailbox for
 * POLL_NS after its last request before it sleeps, as UMP's receivers poll: a steady stream
 * of requests then needs no wake-up at all, and the kernel's client polls for the reply too.
 * Sharing its core (timeshare), it sleeps at once, leaving the core to the programs.
 *
 * Resizing (§6.1.1): a member started on a core outside LIST (`fleet grow hare CORE`) joins
 * the running fleet: the kernel's first hello gives it its id and the buffer cache (no share
 * of it), and the kernel, holding its own clients back, moves shards and free blocks to it
 * from the others in messages (lib/hare's resize: Export, Import, TakeBlocks, GiveBlocks,
 * SetTable), which it answers like any request. Before `fleet shrink` stops a member, the
 * kernel moves everything it holds to the others the same way.
 *
 * SIGTERM: unregisters the name, prints its counters (with `working_ms`, the time from each
 * wake-up to the next sleep: its own work and system calls, not the switches around them)
 * and exits 0 (what it still holds is gone: `fleet shrink` has the kernel move it away
 * first, `fleet stop` does not). Exit status 2: bad usage or no fleet environment; 3: no
 * mailbox or name.
 */
#define _GNU_SOURCE
#include "hare.h"
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>
#include <x86intrin.h>

#define MAX_CONNS 64
/* How long a server that owns its core polls for work before it sleeps. */
#define POLL_NS 100000ull

struct conn {
    int fd;
    struct reef_msg_sender tx;
    struct reef_msg_receiver rx;
    uint32_t client; /* 0: no hello yet */
    uint32_t peer;   /* the process that connected, 0 for the kernel */
    uint8_t *pool;
    uint64_t pool_pages, pool_len;
    int flushed; /* a "forget everything" is in the reply ring, unread */
    struct reef_msg held; /* taken from the ring by take_posted, not answered yet */
    int has_held;
    int dead; /* found gone by take_posted */
};

static volatile sig_atomic_t stopping;
static _Atomic uint32_t *events;
static struct conn conns[MAX_CONNS];
static int nconns;
static uint8_t *cache;
static uint64_t cache_blocks;
static struct hare_server *server;
static uint16_t my_id, servers;
/* --user-clients: processes may connect, not only the kernel (usr/haretest.c's clients). */
static int user_clients;
/* Its core is not in LIST: it joins a running fleet (`fleet grow`), its id given by the
 * kernel's first hello (a member on a core of LIST joins too if that hello says so). */
static int joining;

static uint64_t now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static void on_term(int sig)
{
    (void)sig;
    stopping = 1;
    atomic_fetch_add(events, 1);
    reef_msg_futex_wake(events);
}

static void zero(void *ctx, uint32_t block, uint32_t from)
{
    (void)ctx;
    if (block < cache_blocks && from < HARE_PAGE)
        memset(cache + (uint64_t)block * HARE_PAGE + from, 0, HARE_PAGE - from);
}

/* Data of a client without direct access to the cache (`nodirect`): bounded by the cache, so a
 * hostile block number reads zeros and writes nothing. */
static void load(void *ctx, uint32_t block, uint32_t offset, uint8_t *buf, uint32_t len)
{
    (void)ctx;
    if (block < cache_blocks && offset <= HARE_PAGE && len <= HARE_PAGE - offset)
        memcpy(buf, cache + (uint64_t)block * HARE_PAGE + offset, len);
    else
        memset(buf, 0, len);
}

static void store(void *ctx, uint32_t block, uint32_t offset, const uint8_t *data, uint32_t len)
{
    (void)ctx;
    if (block < cache_blocks && offset <= HARE_PAGE && len <= HARE_PAGE - offset)
        memcpy(cache + (uint64_t)block * HARE_PAGE + offset, data, len);
}

/* Free slots of the ring `s` sends on (0 if the receiver's count is beyond belief). */
static uint64_t room(struct reef_msg_sender *s)
{
    s->head = atomic_load_explicit(&s->ch->rx.head, memory_order_acquire);
    uint64_t used = s->tail - s->head;
    return used > REEF_MSG_PAGE_SLOTS ? 0 : REEF_MSG_PAGE_SLOTS - used;
}

static void invalidate(void *ctx, uint32_t client, const struct reef_msg *m)
{
    (void)ctx;
    for (int i = 0; i < nconns; i++) {
        struct conn *c = &conns[i];
        if (c->client != client)
            continue;
        uint64_t free = room(&c->tx);
        if (free > HARE_IN_FLIGHT + 1) {
            c->flushed = 0;
            reef_msg_try_send(&c->tx, m);
        } else if (free == HARE_IN_FLIGHT + 1 && !c->flushed) {
            struct reef_msg all;
            hare_invalidate_everything(&all);
            reef_msg_try_send(&c->tx, &all);
            c->flushed = 1;
        }
    }
}

static const struct hare_server_runtime runtime = {NULL, zero, invalidate, load, store};

/* The answer to a hello: maps the pool and, the first time, the cache (and makes the server).
 * Nothing stays mapped when it fails. */
static uint64_t hello(struct conn *c, const struct reef_msg *m)
{
    /* The kernel checks permissions before it sends a request; a process that reached the
     * servers itself could do anything to any file. */
    if (c->peer != 0 && !user_clients)
        return EACCES;
    uint64_t client = hare_word(m, HELLO_CLIENT);
    uint64_t pages = hare_word(m, HELLO_POOL_PAGES);
    if (client == 0 || client > UINT32_MAX || pages == 0 || pages > 256)
        return EINVAL;
    uint64_t len = 0;
    uint8_t *pool = reef_grant_map(c->fd, (long)hare_word(m, HELLO_POOL), &len);
    if (!pool)
        return errno;
    if (len < pages * HARE_PAGE) {
        munmap(pool, len);
        return EINVAL;
    }
    /* 1 + the id a joining server takes: only in the first hello to a server that joins. */
    uint64_t join = hare_word(m, HELLO_JOIN);
    if (cache && join) {
        munmap(pool, len);
        return EINVAL;
    }
    if (!cache) {
        uint64_t blocks = hare_word(m, HELLO_CACHE_BLOCKS), clen = 0;
        uint8_t *p = NULL;
        uint64_t err = 0;
        /* A member of LIST started again by `fleet grow` joins too. */
        if (blocks < servers || blocks > UINT32_MAX || (joining && !join) || join > 0xffff)
            err = EINVAL;
        else if (!(p = reef_grant_map(c->fd, (long)hare_word(m, HELLO_CACHE), &clen)))
            err = errno;
        else if (clen < blocks * HARE_PAGE)
            err = EINVAL;
        else if (join) {
            /* Its shards and blocks come from the others (lib/hare's resize). */
            my_id = (uint16_t)(join - 1);
            server = hare_server_join(my_id, time(NULL));
            if (!server)
                err = EINVAL;
        } else {
            uint64_t share = blocks / servers;
            server = hare_server_new(my_id, servers, (uint32_t)(share * my_id),
                                     (uint32_t)(share * (my_id + 1)), false, time(NULL));
            if (!server)
                err = EINVAL;
        }
        if (err) {
            if (p)
                munmap(p, clen);
            munmap(pool, len);
            return err;
        }
        cache = p;
        cache_blocks = blocks;
    }
    c->pool = pool;
    c->pool_pages = pages;
    c->pool_len = len;
    c->client = (uint32_t)client;
    return 0;
}

/* Answers message `m` of `c`: whether the connection is still open. */
static int answer(struct conn *c, const struct reef_msg *m)
{
    struct reef_msg reply;
    if (m->tag == HARE_HELLO) {
        uint64_t err = c->client ? EISCONN : hello(c, m);
        uint64_t below = my_id >= servers ? my_id + 1u : servers;
        uint64_t words[3] = {my_id, below, err};
        reef_msg_make(&reply, HARE_HELLO, words, sizeof words);
    } else if (!c->client) {
        return 0; /* no hello first: a client that does not speak the protocol */
    } else {
        uint64_t index = m->tag >> 8;
        uint8_t *page = index < c->pool_pages ? c->pool + index * HARE_PAGE : NULL;
        hare_server_handle(server, c->client, m, page, &reply, &runtime);
    }
    return reef_msg_try_send(&c->tx, &reply) == 0; /* else gone, or not reading its replies */
}

/* Handles the posted requests at the head of every ring but `except`'s: a request someone
 * waits for is answered only after every request posted before it was sent, whichever client
 * posted it (lib/hare/src/wire.rs, POSTED; a client's write into blocks it knows is posted,
 * and the next stat from any core must see it). A request met on the way that is not posted
 * is kept for its ring's turn. */
static void take_posted(struct conn *except)
{
    for (int i = 0; i < nconns; i++) {
        struct conn *d = &conns[i];
        while (d != except && !d->dead && !d->has_held) {
            struct reef_msg m;
            if (reef_msg_try_recv(&d->rx, &m) != 1)
                break;
            if (d->client && hare_is_posted(&m)) {
                d->dead = !answer(d, &m);
            } else {
                d->held = m;
                d->has_held = 1;
            }
        }
    }
}

/* Answers what waits on `c`: whether the connection is still open. */
static int serve(struct conn *c)
{
    struct reef_msg m;
    int r = 0;
    while (!c->dead) {
        if (c->has_held) {
            m = c->held;
            c->has_held = 0;
        } else if ((r = reef_msg_try_recv(&c->rx, &m)) != 1) {
            return r != -EPIPE;
        }
        if (nconns > 1 && !(c->client && hare_is_posted(&m)))
            take_posted(c);
        if (!answer(c, &m))
            return 0;
    }
    return 0;
}

/* Polls the `n` request rings and the mailbox's eventcount (new connections) for POLL_NS:
 * whether something came. */
static int poll_for_work(struct reef_msg_channel **chans, int n, _Atomic uint32_t *events,
                         uint32_t seen)
{
    uint64_t until = now_ns() + POLL_NS;
    do {
        if (atomic_load(events) != seen || stopping)
            return 1;
        for (int i = 0; i < n; i++)
            if (reef_msg_pending(chans[i]))
                return 1;
        __builtin_ia32_pause();
    } while (now_ns() < until);
    return 0;
}

int main(int argc, char **argv)
{
    const char *name = getenv("FLEET_NAME"), *core = getenv("FLEET_CORE");
    user_clients = argc == 3 && !strcmp(argv[2], "--user-clients");
    if ((argc != 2 && !user_clients) || !name || !core ||
        (joining = hare_list_place(argv[1], atoi(core), &my_id, &servers)) < 0) {
        fprintf(stderr, "usage: fleet start hare --cores LIST /bin/hared LIST [--user-clients]\n");
        return 2;
    }
    int mbox = reef_mbox_create(O_NONBLOCK, &events);
    if (mbox < 0) {
        fprintf(stderr, "hared: mailbox: %s\n", strerror(-mbox));
        return 3;
    }
    struct sigaction sa = {.sa_handler = on_term};
    sigaction(SIGTERM, &sa, NULL);
    long r = reef_name_register(name, mbox);
    if (r < 0) {
        fprintf(stderr, "hared: register %s: %s\n", name, strerror((int)-r));
        return 3;
    }
    const char *shared = getenv("FLEET_SHARED");
    int owns_core = shared && !strcmp(shared, "0");
    struct reef_msg_channel *chans[MAX_CONNS];
    uint64_t accepted_at = UINT64_MAX;
    /* Working time in TSC ticks (no system call per wake-up), in ns at the end. */
    uint64_t work_ticks = 0, woke = __rdtsc(), started = woke, started_ns = now_ns();
    for (;;) {
        uint32_t seen = atomic_load(events);
        if (stopping) {
            reef_name_unregister(name, mbox);
            struct hare_server_stats st = {0};
            if (server)
                hare_server_stats(server, &st);
            uint64_t ticks = __rdtsc() - started, ns = now_ns() - started_ns;
            work_ticks += __rdtsc() - woke;
            double ns_per_tick = ticks ? (double)ns / (double)ticks : 0;
            printf("hared %u (core %s): %llu requests, %llu invalidations, %llu busy, "
                   "%llu refused, %llu blocks free, working_ms %llu\n",
                   my_id, core, (unsigned long long)st.requests,
                   (unsigned long long)st.invalidations, (unsigned long long)st.busy,
                   (unsigned long long)st.refused, (unsigned long long)st.free_blocks,
                   (unsigned long long)(work_ticks * ns_per_tick / 1e6));
            return 0;
        }
        /* A system call only when a connection came since the queue was last found empty. */
        uint64_t arrived = reef_mbox_arrivals(events);
        if (arrived != accepted_at) {
            struct reef_conn_info info;
            int fd = 0;
            while (nconns < MAX_CONNS && (fd = reef_mbox_accept(mbox, 0, &info)) >= 0) {
                conns[nconns] = (struct conn){.fd = fd, .peer = info.client};
                reef_mbox_server(&conns[nconns].tx, &conns[nconns].rx, &info);
                chans[nconns] = &info.conn->request;
                nconns++;
            }
            if (fd == -EAGAIN)
                accepted_at = arrived;
        }
        for (int i = 0; i < nconns;) {
            if (serve(&conns[i])) {
                i++;
                continue;
            }
            close(conns[i].fd);
            if (conns[i].pool)
                munmap(conns[i].pool, conns[i].pool_len);
            conns[i] = conns[nconns - 1];
            chans[i] = chans[nconns - 1];
            nconns--;
        }
        int held = 0;
        for (int i = 0; i < nconns; i++)
            held |= conns[i].has_held;
        if (held)
            continue; /* a request take_posted kept, from a ring served before it came */
        work_ticks += __rdtsc() - woke;
        if (!(owns_core && poll_for_work(chans, nconns, events, seen)))
            reef_msg_sleep_since(chans, nconns, events, seen);
        woke = __rdtsc();
    }
}
