/*
 * twotier: fos's server structure in C (usr/reef_server.h) with a two-tier fleet of
 * processes over reef_msg.h channels in MAP_SHARED pages, on Reef as on Linux.
 *
 * Three client processes ask a front server for k^2 + (k+1)^2; the front server has no
 * squares of its own: each transaction calls the back server for k^2, waits in a
 * continuation, calls it again for (k+1)^2, waits again, and replies with the sum. Every
 * answer is checked; the front server completes every transaction and resumes two
 * continuations for each; the back server answers twice as many calls; both end when their
 * clients are gone. Each process runs on a core of its own where there are enough (first
 * client on the first allowed CPU, and so on, round robin).
 */
#include "reef-test.h"
#include "reef_server.h"

#define CLIENTS 3
#define CALLS 3000

/* The shared region: per client a request and a reply channel, then front-to-back calls and
 * answers, then one page whose first cache lines hold the two eventcounts. */
struct region {
    struct reef_msg_channel req[CLIENTS], rep[CLIENTS], calls, answers;
    _Atomic uint32_t front_events __attribute__((aligned(64)));
    _Atomic uint32_t back_events __attribute__((aligned(64)));
};

static struct region *shm;

static uint64_t word(const struct reef_msg *m, int i)
{
    uint64_t w;
    memcpy(&w, m->data + 8 * i, 8);
    return w;
}

static struct reef_msg words1(uint64_t a)
{
    struct reef_msg m;
    reef_msg_make(&m, 1, &a, 8);
    return m;
}

static void pin_nth(int n)
{
    cpu_set_t set, one;
    CHECK_SYS(sched_getaffinity(0, sizeof set, &set));
    int count = CPU_COUNT(&set), seen = 0;
    for (int c = 0; c < CPU_SETSIZE; c++)
        if (CPU_ISSET(c, &set) && seen++ == n % count) {
            CPU_ZERO(&one);
            CPU_SET(c, &one);
            CHECK_SYS(sched_setaffinity(0, sizeof one, &one));
            return;
        }
}

/* ---- back tier: squares ---- */

static void square_request(void *state, int client, const struct reef_msg *req,
                           struct reef_step *out)
{
    (void)state;
    (void)client;
    uint64_t k = word(req, 0);
    out->kind = REEF_STEP_REPLY;
    out->msg = words1(k * k);
}

static void no_resume(void *state, void *then, const struct reef_msg *answer,
                      struct reef_step *out)
{
    (void)state;
    (void)then;
    (void)answer;
    (void)out;
    FAIL("the back server called nobody, yet was resumed");
}

/* ---- front tier: sums of two squares ---- */

struct then {
    uint64_t k;
    uint64_t first; /* k^2 once known */
    int stage;      /* 0: waiting for k^2, 1: for (k+1)^2 */
};

static void sum_request(void *state, int client, const struct reef_msg *req,
                        struct reef_step *out)
{
    (void)state;
    (void)client;
    struct then *t = malloc(sizeof *t);
    CHECK(t != NULL);
    *t = (struct then){word(req, 0), 0, 0};
    out->kind = REEF_STEP_CALL;
    out->peer = 0;
    out->msg = words1(t->k);
    out->then = t;
}

static void sum_resume(void *state, void *then, const struct reef_msg *answer,
                       struct reef_step *out)
{
    (void)state;
    struct then *t = then;
    if (t->stage == 0) {
        t->first = word(answer, 0);
        t->stage = 1;
        out->kind = REEF_STEP_CALL;
        out->peer = 0;
        out->msg = words1(t->k + 1);
        out->then = t;
        return;
    }
    out->kind = REEF_STEP_REPLY;
    out->msg = words1(t->first + word(answer, 0));
    free(t);
}

static void back_server(void)
{
    pin_nth(CLIENTS + 1);
    struct reef_server *s = malloc(sizeof *s);
    CHECK(s != NULL);
    struct reef_msg_channel *reqs[] = {&shm->calls}, *reps[] = {&shm->answers};
    struct reef_service svc = {NULL, square_request, no_resume};
    /* Its client is the front server, which sleeps on its eventcount. */
    _Atomic uint32_t *client_events[] = {&shm->front_events};
    CHECK_EQ(reef_server_init(s, svc, 1, reqs, reps, client_events, 0, NULL, NULL, NULL,
                              &shm->back_events),
             0);
    CHECK_EQ(reef_server_run(s), 0);
    CHECK_EQ(s->completed, 2 * CLIENTS * CALLS);
    _exit(0);
}

static void front_server(void)
{
    pin_nth(CLIENTS);
    struct reef_server *s = malloc(sizeof *s);
    CHECK(s != NULL);
    struct reef_msg_channel *reqs[CLIENTS], *reps[CLIENTS];
    for (int i = 0; i < CLIENTS; i++) {
        reqs[i] = &shm->req[i];
        reps[i] = &shm->rep[i];
    }
    struct reef_msg_channel *calls[] = {&shm->calls}, *answers[] = {&shm->answers};
    _Atomic uint32_t *peer_events[] = {&shm->back_events};
    struct reef_service svc = {NULL, sum_request, sum_resume};
    CHECK_EQ(reef_server_init(s, svc, CLIENTS, reqs, reps, NULL, 1, calls, answers, peer_events,
                              &shm->front_events),
             0);
    CHECK_EQ(reef_server_run(s), 0);
    CHECK_EQ(s->completed, CLIENTS * CALLS);
    CHECK_EQ(s->resumed, 2 * CLIENTS * CALLS);
    /* No more calls: the back server sees its client gone. */
    reef_msg_close_sender(&s->calls[0]);
    _exit(0);
}

static void client(int i)
{
    pin_nth(i);
    struct reef_msg_sender tx;
    struct reef_msg_receiver rx;
    reef_msg_sender_init_server(&tx, &shm->req[i], &shm->front_events);
    reef_msg_receiver_init(&rx, &shm->rep[i]);
    uint64_t next_txn = 1;
    for (uint64_t n = 0; n < CALLS; n++) {
        uint64_t k = n * CLIENTS + (uint64_t)i;
        struct reef_msg reply;
        CHECK_EQ(reef_server_call(&tx, &rx, &next_txn, words1(k), &reply), 1);
        CHECK_EQ(word(&reply, 0), k * k + (k + 1) * (k + 1));
    }
    reef_msg_close_sender(&tx);
    _exit(0);
}

int main(void)
{
    test_begin("twotier");
    shm = mmap(NULL, sizeof *shm, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    CHECK(shm != MAP_FAILED);
    pid_t pids[CLIENTS + 2];
    for (int p = 0; p < CLIENTS + 2; p++) {
        pids[p] = CHECK_SYS(fork());
        if (pids[p] == 0) {
            if (p < CLIENTS)
                client(p);
            else if (p == CLIENTS)
                front_server();
            else
                back_server();
        }
    }
    for (int p = 0; p < CLIENTS + 2; p++) {
        int st;
        CHECK_SYS(waitpid(pids[p], &st, 0));
        if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
            FAIL("%s %d ended: %s", p < CLIENTS ? "client" : p == CLIENTS ? "front" : "back", p,
                 describe_wait(st));
    }
    SAY("%d clients x %d transactions through a front server that waits twice per transaction "
        "for a back server: every answer right",
        CLIENTS, CALLS);
    PASS();
}
