/*
 * hare_fleet.h: starting and stopping Hare's file servers for a test (usr/haretest.c,
 * usr/haremount.c, usr/onhare.c).
 *
 * With one core the fleet time-shares it (--timeshare, Hare's timeshare placement); with
 * more, it takes cores from 1 up (split placement).
 */
#ifndef HARE_FLEET_H
#define HARE_FLEET_H

#include "reef-test.h"
#include "hare.h"

#define HARE_TEST_MAX_SERVERS 8

/* Waits until `servers` distinct members are registered (they register after `fleet start`
 * has returned). */
static inline void hare_fleet_wait(int servers)
{
    long long deadline = now_ns() + 60000000000LL;
    for (;;) {
        uint32_t pids[HARE_TEST_MAX_SERVERS];
        int found = 0;
        for (int i = 0; i < 4 * HARE_TEST_MAX_SERVERS; i++) {
            struct reef_name_member m;
            if (reef_name_lookup(HARE_FLEET, REEF_NAME_ROUND_ROBIN, &m) != 0)
                break;
            int known = 0;
            for (int j = 0; j < found; j++)
                known |= pids[j] == m.pid;
            if (!known && found < HARE_TEST_MAX_SERVERS)
                pids[found++] = m.pid;
        }
        if (found == servers)
            return;
        if (now_ns() > deadline)
            FAIL("%d of %d hared members registered after 60 s", found, servers);
        usleep(1000);
    }
}

/* Connects to the fleet from this process and sends a hello whose pool grant was never made
 * (client 9, grant 12345, one page): the welcome's error (EPERM: no such grant; EACCES:
 * the servers serve the kernel alone). */
static inline uint64_t hare_forged_hello(void)
{
    struct reef_conn_info info;
    int fd = reef_mbox_connect(HARE_FLEET, REEF_NAME_ROUND_ROBIN, 0, &info);
    CHECK(fd >= 0);
    CHECK_EQ(info.client, getpid());
    struct reef_msg_sender tx;
    struct reef_msg_receiver rx;
    reef_mbox_client(&tx, &rx, &info, fd);
    uint64_t words[5] = {9, 12345, 1, 0, 0};
    struct reef_msg m;
    reef_msg_make(&m, HARE_HELLO, words, sizeof words);
    CHECK_EQ(reef_msg_send(&tx, &m), 0);
    CHECK_EQ(reef_msg_recv(&rx, &m), 1);
    CHECK_EQ(m.tag, HARE_HELLO);
    CHECK_SYS(close(fd));
    return hare_word(&m, WELCOME_ERROR);
}

/* Whether the servers the next start makes serve processes too, not only the kernel (`hared
 * --user-clients`: usr/haretest.c's clients). */
static bool hare_fleet_user_clients;

/* Starts the fleet "hare" with one server on each core of `list` ("1,3" or "1-3"), time-sharing
 * them with programs or owning them, and waits for its `servers` members. */
static inline void hare_fleet_start_on(const char *list, int servers, bool timeshare)
{
    /* NULL ends the arguments where the flag is not wanted. */
    const char *user = hare_fleet_user_clients ? "--user-clients" : NULL;
    if (timeshare)
        CHECK_EQ(run_program("/bin/fleet", "start", "hare", "--timeshare", "--cores", list,
                             "/bin/hared", list, user, NULL),
                 0);
    else
        CHECK_EQ(run_program("/bin/fleet", "start", "hare", "--cores", list, "/bin/hared", list,
                             user, NULL),
                 0);
    hare_fleet_wait(servers);
}

/* Starts the fleet "hare" on at most `most` cores (and HARE_TEST_MAX_SERVERS) and waits for
 * its members: their number; their cores in `list`. */
static inline int hare_fleet_start(char *list, size_t len, int most)
{
    int cores = (int)sysconf(_SC_NPROCESSORS_ONLN);
    if (cores <= 1) {
        snprintf(list, len, "0");
        hare_fleet_start_on(list, 1, true);
        return 1;
    }
    int servers = cores - 1 < HARE_TEST_MAX_SERVERS ? cores - 1 : HARE_TEST_MAX_SERVERS;
    if (servers > most)
        servers = most > 0 ? most : 1;
    snprintf(list, len, "1-%d", servers);
    hare_fleet_start_on(list, servers, false);
    return servers;
}

/* Free memory (reef_free_memory()) may end this much below its value before the fleet
 * started: the kernel's per-core structures made meanwhile stay, and so does a variant kernel
 * image (2 MiB) the fuzzer's core churner loaded. Losses of 5 and 12 MiB seen here were the
 * NR-FS replica of node 1 still copying the initramfs when the first figure was taken;
 * reef_free_bytes() now brings every replica up to date first. Losses of 6.7-11.8 MiB of
 * `onhare timeshare /tmp /test/fuzz` (onhare as process 1) were the fuzzer's orphans, adopted
 * by onhare, which does not reap them: each zombie held its address space's NR log and tables
 * (about 180 KiB) until the kernel gave them back at exit; 2.4-2.5 MiB are lost now, the
 * variant image and what zombies still hold. The buffer cache alone is 16 MiB, so losing it
 * is still caught. */
#define HARE_FLEET_SLACK (8L << 20)

/* Stops the fleet and waits (up to 10 s, for the servers' exit) until free memory is back
 * within HARE_FLEET_SLACK of `before` (reef_free_memory() before the fleet started): every
 * page the servers and the mount took, and every object of the kernel's heaps. Says so, or
 * fails. */
static inline void hare_fleet_stop(long before)
{
    CHECK_EQ(run_program("/bin/fleet", "stop", "hare", NULL), 0);
    long after = 0, heap = 0;
    for (int i = 0; i < 1000; i++) {
        after = reef_free_memory(&heap);
        if (after >= before - HARE_FLEET_SLACK)
            break;
        usleep(10000);
    }
    if (after < before - HARE_FLEET_SLACK)
        FAIL("free memory %ld KiB before the fleet, %ld KiB after it stopped (%ld KiB of it free "
             "in the kernel's heaps): lost %ld KiB",
             before >> 10, after >> 10, heap >> 10, (before - after) >> 10);
    SAY("fleet stopped, free memory back: %ld KiB before the fleet, %ld KiB after (%ld KiB of it "
        "free in the kernel's heaps)",
        before >> 10, after >> 10, heap >> 10);
}

#endif
