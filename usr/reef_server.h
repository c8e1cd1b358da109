/*
 * reef_server.h: fos's server structure (fos §3.2.3) for C servers, over reef_msg.h channels;
 * the C twin of lib/msg's `msg::server` (see docs/architecture.md, "Message channels").
 *
 * A service answers a request with a reply, or with a call to another server ("peer") and a
 * continuation; the runtime keeps the continuation under a transaction id of its own, takes
 * answers from peers before new requests, resumes the continuation with the answer, and
 * sleeps on the server's eventcount when idle (reef_msg_wait_any). The last payload word of
 * every message carries its transaction id (REEF_TXN_WORD), so services have 48 bytes.
 *
 * Channels: from each client a request channel in and a reply channel out; to each peer a
 * call channel out and an answer channel in. Senders into a server notify its eventcount
 * (reef_msg_sender_init_server); the runtime sets up its own senders that way: calls notify
 * the peer's eventcount, replies the client's if the client is a server, else its channel.
 */
#ifndef REEF_SERVER_H
#define REEF_SERVER_H

#include "reef_msg.h"

#define REEF_TXN_WORD (REEF_MSG_PAYLOAD / 8 - 1)
#define REEF_SERVER_MAX 16    /* clients, and peers, of one server */
#define REEF_SERVER_WAITING 256 /* transactions waiting for a peer at once */

enum reef_step_kind { REEF_STEP_REPLY, REEF_STEP_CALL };

/* Where a transaction goes next: a reply to its client, or a call to `peer` after which
 * `then` is resumed with the answer. */
struct reef_step {
    enum reef_step_kind kind;
    int peer;
    struct reef_msg msg;
    void *then;
};

struct reef_service {
    void *state;
    void (*request)(void *state, int client, const struct reef_msg *req, struct reef_step *out);
    void (*resume)(void *state, void *then, const struct reef_msg *answer, struct reef_step *out);
};

struct reef_waiting {
    uint64_t id; /* 0: free */
    int client;
    uint64_t txn;
    void *then;
};

struct reef_server {
    struct reef_service service;
    int clients, peers;
    struct reef_msg_receiver requests[REEF_SERVER_MAX];
    int request_open[REEF_SERVER_MAX];
    struct reef_msg_sender replies[REEF_SERVER_MAX];
    struct reef_msg_sender calls[REEF_SERVER_MAX];
    struct reef_msg_receiver answers[REEF_SERVER_MAX];
    int answer_open[REEF_SERVER_MAX];
    _Atomic uint32_t *events;
    struct reef_waiting waiting[REEF_SERVER_WAITING];
    int nwaiting;
    uint64_t next_id;
    uint64_t completed, resumed;
};

static inline uint64_t reef_txn_of(const struct reef_msg *m)
{
    uint64_t t;
    memcpy(&t, m->data + 8 * REEF_TXN_WORD, 8);
    return t;
}

static inline void reef_set_txn(struct reef_msg *m, uint64_t txn)
{
    memcpy(m->data + 8 * REEF_TXN_WORD, &txn, 8);
    m->len = REEF_MSG_PAYLOAD;
}

/* Sets up `s`: `reqs[i]`/`reps[i]` are client i's request and reply channels and
 * `client_events[i]` its eventcount if the client is itself a server (NULL, or a NULL array:
 * it sleeps on its reply channel); `calls[j]`/`answers[j]` are peer j's channels and
 * `peer_events[j]` its eventcount; `events` is this server's. */
static inline int reef_server_init(struct reef_server *s, struct reef_service service,
                                   int clients, struct reef_msg_channel **reqs,
                                   struct reef_msg_channel **reps,
                                   _Atomic uint32_t **client_events, int peers,
                                   struct reef_msg_channel **calls,
                                   struct reef_msg_channel **answers,
                                   _Atomic uint32_t **peer_events, _Atomic uint32_t *events)
{
    if (clients > REEF_SERVER_MAX || peers > REEF_SERVER_MAX)
        return -EINVAL;
    memset(s, 0, sizeof *s);
    s->service = service;
    s->clients = clients;
    s->peers = peers;
    s->events = events;
    s->next_id = 1;
    for (int i = 0; i < clients; i++) {
        reef_msg_receiver_init(&s->requests[i], reqs[i]);
        s->request_open[i] = 1;
        reef_msg_sender_init_server(&s->replies[i], reps[i],
                                    client_events ? client_events[i] : NULL);
    }
    for (int j = 0; j < peers; j++) {
        reef_msg_sender_init_server(&s->calls[j], calls[j], peer_events[j]);
        reef_msg_receiver_init(&s->answers[j], answers[j]);
        s->answer_open[j] = 1;
    }
    return 0;
}

/* Carries a step out: 0, or -EPIPE (a receiver is gone), -EAGAIN (REEF_SERVER_WAITING
 * transactions wait already, or no such peer: the continuation stays the service's). */
static inline int reef_server_step(struct reef_server *s, int client, uint64_t txn,
                                   struct reef_step *st)
{
    if (st->kind == REEF_STEP_REPLY) {
        s->completed++;
        reef_set_txn(&st->msg, txn);
        return reef_msg_send(&s->replies[client], &st->msg);
    }
    if (s->nwaiting == REEF_SERVER_WAITING || st->peer < 0 || st->peer >= s->peers)
        return -EAGAIN;
    uint64_t id = s->next_id++;
    for (int i = 0; i < REEF_SERVER_WAITING; i++)
        if (s->waiting[i].id == 0) {
            s->waiting[i] = (struct reef_waiting){id, client, txn, st->then};
            s->nwaiting++;
            break;
        }
    reef_set_txn(&st->msg, id);
    return reef_msg_send(&s->calls[st->peer], &st->msg);
}

/* Takes every waiting answer, then one request per client: how many it took, or a negative
 * errno (-EPIPE a peer went away with transactions waiting, -EBADMSG a corrupt slot). */
static inline int reef_server_poll(struct reef_server *s)
{
    int taken = 0, r;
    struct reef_msg m;
    struct reef_step st;
    for (int j = 0; j < s->peers; j++) {
        while (s->answer_open[j] && (r = reef_msg_try_recv(&s->answers[j], &m)) != 0) {
            if (r == -EPIPE) {
                s->answer_open[j] = 0;
                if (s->nwaiting)
                    return -EPIPE;
                break;
            }
            if (r < 0)
                return r;
            taken++;
            uint64_t id = reef_txn_of(&m);
            for (int i = 0; i < REEF_SERVER_WAITING; i++) {
                struct reef_waiting w = s->waiting[i];
                if (w.id != id || id == 0)
                    continue;
                s->waiting[i].id = 0;
                s->nwaiting--;
                s->resumed++;
                memset(&st, 0, sizeof st);
                s->service.resume(s->service.state, w.then, &m, &st);
                if ((r = reef_server_step(s, w.client, w.txn, &st)) < 0)
                    return r;
                break;
            }
        }
    }
    for (int i = 0; i < s->clients; i++) {
        if (!s->request_open[i])
            continue;
        r = reef_msg_try_recv(&s->requests[i], &m);
        if (r == -EPIPE) {
            s->request_open[i] = 0;
        } else if (r < 0) {
            return r;
        } else if (r == 1) {
            taken++;
            memset(&st, 0, sizeof st);
            s->service.request(s->service.state, i, &m, &st);
            if ((r = reef_server_step(s, i, reef_txn_of(&m), &st)) < 0)
                return r;
        }
    }
    return taken;
}

/* Serves until every client is gone and nothing waits (0), or an error (negative errno). */
static inline int reef_server_run(struct reef_server *s)
{
    for (;;) {
        int r = reef_server_poll(s);
        if (r < 0)
            return r;
        if (r > 0)
            continue;
        int open = 0;
        for (int i = 0; i < s->clients; i++)
            open += s->request_open[i];
        if (!open && !s->nwaiting)
            return 0;
        struct reef_msg_channel *live[2 * REEF_SERVER_MAX];
        int n = 0;
        for (int i = 0; i < s->clients; i++)
            if (s->request_open[i])
                live[n++] = s->requests[i].ch;
        for (int j = 0; j < s->peers; j++)
            if (s->answer_open[j])
                live[n++] = s->answers[j].ch;
        reef_msg_wait_any(live, n, s->events);
    }
}

/* A client's call: sends `req` on `tx` with a fresh transaction id from `*next_txn` and waits
 * on `rx` for the reply with that id: 1 (in *reply), or a negative errno. */
static inline int reef_server_call(struct reef_msg_sender *tx, struct reef_msg_receiver *rx,
                                   uint64_t *next_txn, struct reef_msg req, struct reef_msg *reply)
{
    uint64_t txn = (*next_txn)++;
    reef_set_txn(&req, txn);
    int r = reef_msg_send(tx, &req);
    if (r < 0)
        return r;
    for (;;) {
        r = reef_msg_recv(rx, reply);
        if (r != 1 || reef_txn_of(reply) == txn)
            return r;
    }
}

#endif
