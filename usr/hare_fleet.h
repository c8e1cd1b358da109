/*
 * hare_fleet.h: starting Hare's file servers for a test (usr/haretest.c, usr/haremount.c).
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

/* Starts the fleet "hare" on at most `most` cores (and HARE_TEST_MAX_SERVERS) and waits for
 * its members: their number; their cores in `list`. */
static inline int hare_fleet_start(char *list, size_t len, int most)
{
    int cores = (int)sysconf(_SC_NPROCESSORS_ONLN);
    int servers;
    if (cores <= 1) {
        snprintf(list, len, "0");
        servers = 1;
        CHECK_EQ(run_program("/bin/fleet", "start", "hare", "--timeshare", "--cores", list,
                             "/bin/hared", list, NULL),
                 0);
    } else {
        servers = cores - 1 < HARE_TEST_MAX_SERVERS ? cores - 1 : HARE_TEST_MAX_SERVERS;
        if (servers > most)
            servers = most > 0 ? most : 1;
        snprintf(list, len, "1-%d", servers);
        CHECK_EQ(run_program("/bin/fleet", "start", "hare", "--cores", list, "/bin/hared", list,
                             NULL),
                 0);
    }
    hare_fleet_wait(servers);
    return servers;
}

#endif
