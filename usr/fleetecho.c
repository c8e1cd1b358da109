/*
 * fleetecho: a fleet member for the fleet test (usr/fleets.c), started by /bin/fleet with
 * FLEET_NAME and FLEET_CORE in its environment. It registers a mailbox under FLEET_NAME and
 * answers every request with its payload's first word, the core it runs on and its pid. On SIGTERM (the
 * manager shrinks or stops the fleet) it unregisters the name, so that new clients go to the
 * other members, answers what it has taken, closes its connections and exits 0; a client
 * whose connection ends sends again what was not answered. Exit status 2: no fleet
 * environment, 3: the name could not be registered.
 */
#define _GNU_SOURCE
#include "reef_msg.h"
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>

#define MAX_CONNS 64

struct conn {
    int fd;
    struct reef_msg_sender tx;
    struct reef_msg_receiver rx;
};

static volatile sig_atomic_t stopping;
static _Atomic uint32_t *events;

static void on_term(int sig)
{
    (void)sig;
    stopping = 1;
    /* Whatever the run loop sleeps on, it wakes (the eventcount moved). */
    atomic_fetch_add(events, 1);
    reef_msg_futex_wake(events);
}

/* Answers what waits on `c`: whether the connection is still open. */
static int serve(struct conn *c, uint32_t pid)
{
    struct reef_msg m;
    int r;
    while ((r = reef_msg_try_recv(&c->rx, &m)) == 1) {
        uint64_t words[2] = {0, (uint64_t)(uint32_t)sched_getcpu() << 32 | pid};
        memcpy(&words[0], m.data, sizeof words[0]);
        reef_msg_make(&m, 1, words, sizeof words);
        if (reef_msg_send(&c->tx, &m) != 0)
            return 0;
    }
    return r != -EPIPE;
}

int main(void)
{
    const char *name = getenv("FLEET_NAME");
    if (!name || !getenv("FLEET_CORE")) {
        fprintf(stderr, "fleetecho: run me with /bin/fleet (no FLEET_NAME, FLEET_CORE)\n");
        return 2;
    }
    int mbox = reef_mbox_create(O_NONBLOCK, &events);
    if (mbox < 0) {
        fprintf(stderr, "fleetecho: mailbox: %s\n", strerror(-mbox));
        return 3;
    }
    struct sigaction sa = {.sa_handler = on_term};
    sigaction(SIGTERM, &sa, NULL);
    long r = reef_name_register(name, mbox);
    if (r < 0) {
        fprintf(stderr, "fleetecho: register %s: %s\n", name, strerror((int)-r));
        return 3;
    }
    uint32_t pid = (uint32_t)getpid();
    static struct conn conns[MAX_CONNS];
    struct reef_msg_channel *chans[MAX_CONNS];
    int n = 0;
    for (;;) {
        /* Read before looking at anything: a connection, a message that rings or SIGTERM
         * after this moves it, and the sleep below does not happen. */
        uint32_t seen = atomic_load(events);
        if (stopping) {
            reef_name_unregister(name, mbox);
            for (int i = 0; i < n; i++) {
                serve(&conns[i], pid);
                close(conns[i].fd);
            }
            return 0;
        }
        struct reef_conn_info info;
        int fd;
        while (n < MAX_CONNS && (fd = reef_mbox_accept(mbox, 0, &info)) >= 0) {
            conns[n].fd = fd;
            reef_mbox_server(&conns[n].tx, &conns[n].rx, &info);
            chans[n] = &info.conn->request;
            n++;
        }
        for (int i = 0; i < n;) {
            if (serve(&conns[i], pid)) {
                i++;
                continue;
            }
            close(conns[i].fd);
            conns[i] = conns[n - 1];
            chans[i] = chans[n - 1];
            n--;
        }
        reef_msg_sleep_since(chans, n, events, seen);
    }
}
