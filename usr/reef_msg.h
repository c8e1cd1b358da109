/*
 * reef_msg.h: the user-space half of Reef's message channels, for C programs: the layout of
 * lib/msg's `Channel<62>` (`PageChannel`, one 4 KiB page) and its send, receive, sleep and
 * close protocol, written against the same words (see lib/msg/src/lib.rs and
 * docs/architecture.md, "Message channels"). lib/msg's test `layout_matches_the_c_header`
 * writes a message as this header does and reads it with the Rust receiver.
 *
 * The doorbell is a futex on the sleeping words (FUTEX_WAIT / FUTEX_WAKE without
 * FUTEX_PRIVATE_FLAG, so a channel in a MAP_SHARED page works between processes), on Linux
 * as on Reef.
 *
 * The same channels serve kernel mailboxes (reef_mbox_*, at the end): the kernel maps a
 * connection's two channels into both processes and wakes a mailbox's owner for its clients.
 *
 * One sender and one receiver per channel. Errors are negative errno values: -EAGAIN a full
 * ring (fos: send on a full mailbox fails), -EPIPE the other end closed, -EBADMSG a corrupt
 * slot (skipped), -EMSGSIZE a payload over 56 bytes.
 */
#ifndef REEF_MSG_H
#define REEF_MSG_H

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

/* musl ships no <linux/futex.h>. */
#define REEF_MSG_FUTEX_WAIT 0
#define REEF_MSG_FUTEX_WAKE 1

#define REEF_MSG_PAYLOAD 56
#define REEF_MSG_PAGE_SLOTS 62
/* Polls of an empty ring before the receiver sleeps (lib/msg's SPIN_POLLS). */
#define REEF_MSG_SPIN_POLLS 200
#define REEF_MSG_FLAG_GRANT 1u
#define REEF_MSG_RX_CLOSED 1u
#define REEF_MSG_TX_CLOSED 2u

struct reef_msg_slot {
    _Atomic uint64_t header; /* seq (bits 0-31) | tag << 32 | len << 48 | flags << 56 */
    _Atomic uint64_t data[REEF_MSG_PAYLOAD / 8];
} __attribute__((aligned(64)));

struct reef_msg_channel {
    struct {
        _Atomic uint64_t head;     /* messages taken (written by the receiver) */
        _Atomic uint32_t sleeping; /* the receiver sleeps or is about to */
    } __attribute__((aligned(64))) rx;
    struct {
        _Atomic uint64_t tail;     /* messages sent (written by the sender) */
        _Atomic uint32_t sleeping; /* the sender waits for space */
        _Atomic uint32_t closed;   /* REEF_MSG_RX_CLOSED | REEF_MSG_TX_CLOSED */
    } __attribute__((aligned(64))) tx;
    struct reef_msg_slot slots[REEF_MSG_PAGE_SLOTS];
};

_Static_assert(sizeof(struct reef_msg_slot) == 64, "a slot is one cache line");
_Static_assert(sizeof(struct reef_msg_channel) == 4096, "a channel is one page");

struct reef_msg {
    uint16_t tag;
    uint8_t len;
    uint8_t flags;
    uint8_t data[REEF_MSG_PAYLOAD];
};

struct reef_msg_sender {
    struct reef_msg_channel *ch;
    uint64_t tail; /* position of the next message */
    uint64_t head; /* the receiver's head when last read */
    /* The eventcount of a server with many channels (lib/msg's EventCount), or NULL: the
     * receiver sleeps on this channel alone. */
    _Atomic uint32_t *events;
    /* A kernel connection's descriptor, or -1: the receiver is a mailbox's owner, woken by
     * reef_mbox_notify (its eventcount is not mapped here). */
    int notify_fd;
};

struct reef_msg_receiver {
    struct reef_msg_channel *ch;
    uint64_t head;
    uint64_t sleeps; /* times reef_msg_recv slept (FUTEX_WAIT), for diagnostics */
};

static inline void reef_msg_futex_wait(_Atomic uint32_t *word, uint32_t value)
{
    syscall(SYS_futex, word, REEF_MSG_FUTEX_WAIT, value, NULL, NULL, 0);
}

static inline void reef_msg_futex_wake(_Atomic uint32_t *word)
{
    syscall(SYS_futex, word, REEF_MSG_FUTEX_WAKE, 1, NULL, NULL, 0);
}

static inline uint32_t reef_msg_seq(uint64_t pos)
{
    return (uint32_t)pos + 1;
}

#define SYS_reef_mbox_notify 1031

/* Wakes the party sleeping on `word` if it sleeps (after a full fence: see lib/msg): through
 * the kernel when `notify_fd` is a connection to a mailbox, through `events` (bumped, then
 * woken) when the receiver is a server sleeping on many channels. */
static inline void reef_msg_wake_if_sleeping(_Atomic uint32_t *word, _Atomic uint32_t *events,
                                             int notify_fd)
{
    atomic_thread_fence(memory_order_seq_cst);
    if (atomic_load_explicit(word, memory_order_relaxed) != 0 &&
        atomic_exchange_explicit(word, 0, memory_order_relaxed) != 0) {
        if (notify_fd >= 0) {
            syscall(SYS_reef_mbox_notify, (long)notify_fd);
        } else if (events) {
            atomic_fetch_add(events, 1);
            reef_msg_futex_wake(events);
        } else {
            reef_msg_futex_wake(word);
        }
    }
}

/* A message with `tag` and `len` bytes of `data`; -EMSGSIZE if `len` is over 56. */
static inline int reef_msg_make(struct reef_msg *m, uint16_t tag, const void *data, size_t len)
{
    if (len > REEF_MSG_PAYLOAD)
        return -EMSGSIZE;
    memset(m, 0, sizeof *m);
    m->tag = tag;
    m->len = (uint8_t)len;
    memcpy(m->data, data, len);
    return 0;
}

static inline void reef_msg_sender_init(struct reef_msg_sender *s, struct reef_msg_channel *ch)
{
    s->ch = ch;
    s->tail = atomic_load_explicit(&ch->tx.tail, memory_order_relaxed);
    s->head = atomic_load_explicit(&ch->rx.head, memory_order_acquire);
    s->events = NULL;
    s->notify_fd = -1;
}

/* A sender into a server that sleeps on the eventcount `events` (reef_msg_wait_any). */
static inline void reef_msg_sender_init_server(struct reef_msg_sender *s,
                                               struct reef_msg_channel *ch,
                                               _Atomic uint32_t *events)
{
    reef_msg_sender_init(s, ch);
    s->events = events;
}

static inline void reef_msg_receiver_init(struct reef_msg_receiver *r, struct reef_msg_channel *ch)
{
    r->ch = ch;
    r->head = atomic_load_explicit(&ch->rx.head, memory_order_relaxed);
    r->sleeps = 0;
}

/* Sends `m` if a slot is free: 0, -EAGAIN (full) or -EPIPE (the receiver is gone). */
static inline int reef_msg_try_send(struct reef_msg_sender *s, const struct reef_msg *m)
{
    struct reef_msg_channel *ch = s->ch;
    if (atomic_load_explicit(&ch->tx.closed, memory_order_acquire) & REEF_MSG_RX_CLOSED)
        return -EPIPE;
    if (s->tail - s->head >= REEF_MSG_PAGE_SLOTS) {
        s->head = atomic_load_explicit(&ch->rx.head, memory_order_acquire);
        if (s->tail - s->head >= REEF_MSG_PAGE_SLOTS)
            return -EAGAIN;
    }
    struct reef_msg_slot *slot = &ch->slots[s->tail % REEF_MSG_PAGE_SLOTS];
    for (int i = 0; i < REEF_MSG_PAYLOAD / 8; i++) {
        uint64_t w;
        memcpy(&w, m->data + 8 * i, 8);
        atomic_store_explicit(&slot->data[i], w, memory_order_relaxed);
    }
    uint64_t header = reef_msg_seq(s->tail) | (uint64_t)m->tag << 32 | (uint64_t)m->len << 48 |
                      (uint64_t)m->flags << 56;
    atomic_store_explicit(&slot->header, header, memory_order_release);
    s->tail++;
    atomic_store_explicit(&ch->tx.tail, s->tail, memory_order_relaxed);
    reef_msg_wake_if_sleeping(&ch->rx.sleeping, s->events, s->notify_fd);
    return 0;
}

/* Sends `m`, sleeping while the ring is full: 0 or -EPIPE. */
static inline int reef_msg_send(struct reef_msg_sender *s, const struct reef_msg *m)
{
    struct reef_msg_channel *ch = s->ch;
    for (;;) {
        int r = reef_msg_try_send(s, m);
        if (r != -EAGAIN)
            return r;
        atomic_store_explicit(&ch->tx.sleeping, 1, memory_order_relaxed);
        atomic_thread_fence(memory_order_seq_cst);
        s->head = atomic_load_explicit(&ch->rx.head, memory_order_acquire);
        if (s->tail - s->head < REEF_MSG_PAGE_SLOTS ||
            (atomic_load_explicit(&ch->tx.closed, memory_order_acquire) & REEF_MSG_RX_CLOSED)) {
            atomic_store_explicit(&ch->tx.sleeping, 0, memory_order_relaxed);
            continue;
        }
        reef_msg_futex_wait(&ch->tx.sleeping, 1);
    }
}

/* Takes the next message: 1 (in *m), 0 (none yet), -EPIPE (the sender is gone and the ring
 * is empty) or -EBADMSG (a corrupt slot, skipped). */
static inline int reef_msg_try_recv(struct reef_msg_receiver *r, struct reef_msg *m)
{
    struct reef_msg_channel *ch = r->ch;
    struct reef_msg_slot *slot = &ch->slots[r->head % REEF_MSG_PAGE_SLOTS];
    uint64_t header = atomic_load_explicit(&slot->header, memory_order_acquire);
    if ((uint32_t)header != reef_msg_seq(r->head)) {
        if (!(atomic_load_explicit(&ch->tx.closed, memory_order_acquire) & REEF_MSG_TX_CLOSED))
            return 0;
        header = atomic_load_explicit(&slot->header, memory_order_acquire);
        if ((uint32_t)header != reef_msg_seq(r->head))
            return -EPIPE;
    }
    for (int i = 0; i < REEF_MSG_PAYLOAD / 8; i++) {
        uint64_t w = atomic_load_explicit(&slot->data[i], memory_order_relaxed);
        memcpy(m->data + 8 * i, &w, 8);
    }
    r->head++;
    atomic_store_explicit(&ch->rx.head, r->head, memory_order_release);
    reef_msg_wake_if_sleeping(&ch->tx.sleeping, NULL, -1);
    m->tag = (uint16_t)(header >> 32);
    m->len = (uint8_t)(header >> 48);
    m->flags = (uint8_t)(header >> 56);
    if (m->len > REEF_MSG_PAYLOAD || (m->flags & ~REEF_MSG_FLAG_GRANT))
        return -EBADMSG;
    return 1;
}

/* Takes the next message, polling REEF_MSG_SPIN_POLLS times and then sleeping while the ring
 * is empty: 1, -EPIPE or -EBADMSG. */
static inline int reef_msg_recv(struct reef_msg_receiver *r, struct reef_msg *m)
{
    struct reef_msg_channel *ch = r->ch;
    for (;;) {
        int got;
        for (int i = 0; i < REEF_MSG_SPIN_POLLS; i++) {
            if ((got = reef_msg_try_recv(r, m)) != 0)
                return got;
            __builtin_ia32_pause();
        }
        got = reef_msg_try_recv(r, m);
        if (got != 0)
            return got;
        atomic_store_explicit(&ch->rx.sleeping, 1, memory_order_relaxed);
        atomic_thread_fence(memory_order_seq_cst);
        got = reef_msg_try_recv(r, m);
        if (got != 0) {
            atomic_store_explicit(&ch->rx.sleeping, 0, memory_order_relaxed);
            return got;
        }
        r->sleeps++;
        reef_msg_futex_wait(&ch->rx.sleeping, 1);
    }
}

static inline void reef_msg_close(struct reef_msg_channel *ch, uint32_t bit, _Atomic uint32_t *peer,
                                  _Atomic uint32_t *events, int notify_fd)
{
    atomic_fetch_or_explicit(&ch->tx.closed, bit, memory_order_release);
    reef_msg_wake_if_sleeping(peer, events, notify_fd);
}

/* Closes the receiving end: the sender gets -EPIPE, a waiting sender is woken. (A kernel
 * connection's ends are closed by closing its descriptor.) */
static inline void reef_msg_close_receiver(struct reef_msg_channel *ch)
{
    reef_msg_close(ch, REEF_MSG_RX_CLOSED, &ch->tx.sleeping, NULL, -1);
}

/* Closes the sending end of `s`: the receiver takes what is left, then gets -EPIPE. */
static inline void reef_msg_close_sender(struct reef_msg_sender *s)
{
    reef_msg_close(s->ch, REEF_MSG_TX_CLOSED, &s->ch->rx.sleeping, s->events, s->notify_fd);
}

/* Whether the receiver of `ch` has a message, or a closed sender, waiting. */
static inline int reef_msg_pending(struct reef_msg_channel *ch)
{
    uint64_t head = atomic_load_explicit(&ch->rx.head, memory_order_relaxed);
    uint64_t header =
        atomic_load_explicit(&ch->slots[head % REEF_MSG_PAGE_SLOTS].header, memory_order_acquire);
    return (uint32_t)header == reef_msg_seq(head) ||
           (atomic_load_explicit(&ch->tx.closed, memory_order_acquire) & REEF_MSG_TX_CLOSED);
}

/* reef_msg_wait_any's sleep, with the eventcount's value `seen` read by the caller before it
 * last looked at anything else the eventcount announces (a kernel mailbox's new connections,
 * a signal handler's bump): marks itself asleep on each of the `n` channels, looks again, and
 * sleeps unless the eventcount has moved from `seen`. */
static inline void reef_msg_sleep_since(struct reef_msg_channel **chans, int n,
                                        _Atomic uint32_t *events, uint32_t seen)
{
    for (int i = 0; i < n; i++)
        atomic_store_explicit(&chans[i]->rx.sleeping, 1, memory_order_relaxed);
    atomic_thread_fence(memory_order_seq_cst);
    int pending = 0;
    for (int i = 0; i < n && !pending; i++)
        pending = reef_msg_pending(chans[i]);
    if (!pending)
        reef_msg_futex_wait(events, seen);
    for (int i = 0; i < n; i++)
        atomic_store_explicit(&chans[i]->rx.sleeping, 0, memory_order_relaxed);
}

/* A server's idle step (lib/msg's wait_any): returns at once if one of the `n` channels has a
 * message or a closed sender, else marks itself asleep on each, looks again, and sleeps on the
 * eventcount `events` until a sender bumps it. May return early; look again either way. */
static inline void reef_msg_wait_any(struct reef_msg_channel **chans, int n,
                                     _Atomic uint32_t *events)
{
    for (int i = 0; i < n; i++)
        if (reef_msg_pending(chans[i]))
            return;
    reef_msg_sleep_since(chans, n, events, atomic_load_explicit(events, memory_order_acquire));
}

/* ---- names and mailboxes (fos §3.2.1; lib/abi's reef module, kernel names.rs, mailbox.rs) ---- */

#define SYS_reef_name_register 1025
#define SYS_reef_name_unregister 1026
#define SYS_reef_name_lookup 1027
#define SYS_reef_mbox_create 1028
#define SYS_reef_mbox_connect 1029
#define SYS_reef_mbox_accept 1030
#define REEF_NAME_NEAREST 0
#define REEF_NAME_ROUND_ROBIN 1

struct reef_name_member {
    uint64_t mailbox; /* the kernel's id of the mailbox */
    uint32_t pid, core, node, pad;
};

/* A connection as both ends map it: requests (client to owner), then replies. */
struct reef_msg_connection {
    struct reef_msg_channel request;
    struct reef_msg_channel reply;
};

/* What reef_mbox_connect and reef_mbox_accept write: `client` is the pid of the process that
 * made the connection, 0 for the kernel (a server may serve the kernel alone). */
struct reef_conn_info {
    struct reef_msg_connection *conn;
    uint64_t mailbox;
    uint32_t slots, client;
};

_Static_assert(sizeof(struct reef_name_member) == 24, "lib/abi NAME_MEMBER_SIZE");
_Static_assert(sizeof(struct reef_conn_info) == 24, "lib/abi CONN_INFO_SIZE");

/* Registers this process's mailbox `mbox` (a descriptor) under `name`: 0 or -EINVAL, -EBADF,
 * -ENOTSOCK (not a mailbox), -EPERM (under "fleet/", unless the caller is the fleet manager
 * or registers its own fleet's name), -EEXIST, -ENOSPC (the directory or the name is full),
 * -EDQUOT (this process holds 16 registrations), -EFAULT (-ENOSYS off Reef). */
static inline long reef_name_register(const char *name, int mbox)
{
    long r = syscall(SYS_reef_name_register, name, strlen(name), (long)mbox);
    return r < 0 ? -errno : r;
}

/* Removes that registration: 0 or -ENOENT. */
static inline long reef_name_unregister(const char *name, int mbox)
{
    long r = syscall(SYS_reef_name_unregister, name, strlen(name), (long)mbox);
    return r < 0 ? -errno : r;
}

/* A member of `name`, the nearest (REEF_NAME_NEAREST) or in turn (REEF_NAME_ROUND_ROBIN):
 * 0 or -ENOENT, -EINVAL, -EFAULT. */
static inline long reef_name_lookup(const char *name, int how, struct reef_name_member *out)
{
    long r = syscall(SYS_reef_name_lookup, name, strlen(name), (long)how, out);
    return r < 0 ? -errno : r;
}

/* A new receive mailbox: its descriptor (not inherited by fork children), with the address of
 * its eventcount (what the owner sleeps on, reef_msg_wait_any) in *events; flags O_CLOEXEC,
 * O_NONBLOCK. -EINVAL, -ENOMEM, -EMFILE, -EFAULT. The same page counts the connections
 * offered to it (reef_mbox_arrivals). */
static inline int reef_mbox_create(int flags, _Atomic uint32_t **events)
{
    uint64_t addr = 0;
    long r = syscall(SYS_reef_mbox_create, (long)flags, &addr);
    if (r < 0)
        return -errno;
    *events = (_Atomic uint32_t *)(uintptr_t)addr;
    return (int)r;
}

/* How many connections were offered to the mailbox whose eventcount is `events` (what
 * reef_mbox_create gave): an owner that has accepted until -EAGAIN since it last read this
 * has nothing to accept while it stays the same (lib/abi's MBOX_ARRIVALS_OFFSET). */
#define REEF_MBOX_ARRIVALS_OFFSET 64
static inline uint64_t reef_mbox_arrivals(_Atomic uint32_t *events)
{
    return atomic_load_explicit(
        (_Atomic uint64_t *)((char *)events + REEF_MBOX_ARRIVALS_OFFSET), memory_order_acquire);
}

/* Connects to the mailbox registered under `name` (the member `how` picks): the connection's
 * descriptor, its pages in info->conn. -ENOENT, -ECONNREFUSED (closing), -EAGAIN (backlog
 * full), -EINVAL, -ENOMEM, -EMFILE, -EFAULT. */
static inline int reef_mbox_connect(const char *name, int how, int flags,
                                    struct reef_conn_info *info)
{
    long r = syscall(SYS_reef_mbox_connect, name, strlen(name), (long)how, info, (long)flags);
    return r < 0 ? -errno : (int)r;
}

/* The oldest waiting connection to the caller's mailbox `mbox` (waits for one unless
 * O_NONBLOCK): its descriptor, its pages in info->conn. -EAGAIN, -EINTR, -EBADF, -ENOTSOCK,
 * -ENOMEM, -EMFILE, -EFAULT. */
static inline int reef_mbox_accept(int mbox, int flags, struct reef_conn_info *info)
{
    long r = syscall(SYS_reef_mbox_accept, (long)mbox, (long)flags, info);
    return r < 0 ? -errno : (int)r;
}

/* A client's ends of connection `fd`: requests out (ringing the owner through the kernel),
 * replies in. */
static inline void reef_mbox_client(struct reef_msg_sender *tx, struct reef_msg_receiver *rx,
                                    const struct reef_conn_info *info, int fd)
{
    reef_msg_sender_init(tx, &info->conn->request);
    tx->notify_fd = fd;
    reef_msg_receiver_init(rx, &info->conn->reply);
}

/* The owner's ends of an accepted connection: requests in, replies out. The owner may sleep
 * in reef_msg_recv on this one connection or in reef_msg_wait_any on its eventcount: a
 * client's reef_mbox_notify wakes either. */
static inline void reef_mbox_server(struct reef_msg_sender *tx, struct reef_msg_receiver *rx,
                                    const struct reef_conn_info *info)
{
    reef_msg_sender_init(tx, &info->conn->reply);
    reef_msg_receiver_init(rx, &info->conn->request);
}

/* ---- Grants: data larger than a slot, by reference ------------------------------------- */

#define SYS_reef_grant 1032
#define SYS_reef_grant_map 1033
#define SYS_reef_grant_revoke 1034
#define REEF_GRANT_WRITE 1

/* Shares this process's pages [addr, addr + len) (page-aligned `addr`, within one MAP_SHARED
 * or message mapping) with the other end of connection `fd`; REEF_GRANT_WRITE lets it write.
 * The grant's id (> 0), or -EINVAL, -EFAULT, -EACCES, -ENOMEM (also: more than 256 MiB
 * granted), -ENOSPC (1024 grants on the connection), -EPIPE, -EBADF, -ENOTSOCK, -EINTR. */
static inline long reef_grant(int fd, void *addr, size_t len, int flags)
{
    long r = syscall(SYS_reef_grant, (long)fd, addr, len, (long)flags);
    return r < 0 ? -errno : r;
}

/* Maps grant `id`, made to this end by the other end of connection `fd`: its address, its
 * length in *len (if `len` is not NULL); NULL with errno EPERM (not granted to this end:
 * forged, revoked, or another connection's), ENOMEM, EFAULT, EBADF, ENOTSOCK. */
static inline void *reef_grant_map(int fd, long id, uint64_t *len)
{
    long r = syscall(SYS_reef_grant_map, (long)fd, id, len);
    return r < 0 ? NULL : (void *)r;
}

/* The granter takes grant `id` back (mappings made stay): 0 or -ENOENT, -EPERM (the other
 * end's grant), -EBADF, -ENOTSOCK. */
static inline long reef_grant_revoke(int fd, long id)
{
    long r = syscall(SYS_reef_grant_revoke, (long)fd, id);
    return r < 0 ? -errno : r;
}

/* A message that carries grant `id`'s bytes [offset, offset + len) (lib/msg's Grant). */
static inline void reef_msg_make_grant(struct reef_msg *m, uint16_t tag, uint64_t id,
                                       uint64_t offset, uint64_t len)
{
    uint64_t words[3] = {id, offset, len};
    reef_msg_make(m, tag, words, sizeof words);
    m->flags = REEF_MSG_FLAG_GRANT;
}

/* The grant `m` carries: 0, or -EINVAL if it carries none. The range is the sender's word:
 * check it against the length reef_grant_map reports. */
static inline int reef_msg_grant(const struct reef_msg *m, uint64_t *id, uint64_t *offset,
                                 uint64_t *len)
{
    uint64_t words[3];
    if (!(m->flags & REEF_MSG_FLAG_GRANT) || m->len != sizeof words)
        return -EINVAL;
    memcpy(words, m->data, sizeof words);
    *id = words[0];
    *offset = words[1];
    *len = words[2];
    return 0;
}

/* ---- Fleets: cores owned by servers (fos §3.1 space sharing) ------------------------- */

#define SYS_reef_fleet_bind 1035
/* Names under this prefix belong to fleets: the fleet manager registers any of them, a member
 * its own fleet's. */
#define REEF_FLEET_PREFIX "fleet/"

/* reef_fleet_bind's flag: the member time-shares its core (Hare's timeshare placement). */
#define REEF_FLEET_SHARED 1

/* The fleet manager (a process running /bin/fleet) makes process `pid` a member of fleet
 * `name` ("fleet/...") on online `core`: the member's threads are pinned there, it may
 * register `name`, and it owns the core (nothing else runs there) unless `flags` has
 * REEF_FLEET_SHARED. 0 or -EPERM (not the manager), -EINVAL (flags; core; name), -ESRCH,
 * -EBUSY (the process is a member already, the core is owned, or, to own it, it is the last
 * free core), -EFAULT. */
static inline long reef_fleet_bind(pid_t pid, int core, const char *name, int flags)
{
    long r = syscall(SYS_reef_fleet_bind, (long)pid, (long)core, name, strlen(name), (long)flags);
    return r < 0 ? -errno : r;
}

#define SYS_reef_fleet_resize 1040
/* reef_fleet_resize's ops. */
#define REEF_FLEET_JOIN 1
#define REEF_FLEET_LEAVE 2

/* The fleet manager tells the kernel that member `pid` of fleet `name` joined (REEF_FLEET_JOIN,
 * once it registered its name) or is to leave (REEF_FLEET_LEAVE, before it is stopped); for
 * Hare's fleet, the mounted file system moves its shards onto the members that stay before
 * this returns (kernel/src/fs/hare/resize.rs). 0 (also for any other fleet) or -EPERM (not the
 * manager), -EINVAL, -EFAULT, -EAGAIN (joined: not registered yet), -EBUSY (to leave: the last
 * server, or an rmdir half done), -EIO, -ENOMEM. */
static inline long reef_fleet_resize(pid_t pid, const char *name, int op)
{
    long r = syscall(SYS_reef_fleet_resize, (long)pid, name, strlen(name), (long)op);
    return r < 0 ? -errno : r;
}

#endif
