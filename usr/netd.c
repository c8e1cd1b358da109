/*
 * netd: Reef's network server (LibrettOS §3.2, server mode). It owns the shared NIC and
 * switches the frames of every stack instance in server mode, which reach it through rings in
 * pages it shares with the kernel; it checks that each frame's source MAC, address and port
 * belong to the instance that sent it (spoofed frames are dropped and counted) and routes by
 * the port map, which the kernel alone writes and maps read-only here. The logic is
 * lib/net's `server` (usr/netd/, a static library); this file attaches and serves.
 *
 * It runs as the fleet "net", a fos fleet of one bound to a core:
 *
 *   fleet start net [--restart] [--timeshare] --cores C /bin/netd
 *
 * Killed and started again (--restart), it maps the same region and goes on; connections
 * survive (TCP retransmits what was lost). /proc/reef/net and `netctl list` show its counters.
 * Exit status: 1 when it cannot attach (the message says why).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#define SYS_reef_netd 1038
#define FUTEX_WAIT 0 /* <linux/futex.h>, which musl's headers lack */
#define REEF_NETD_ATTACH 0
#define REEF_NETD_KICK 1

struct netd_attach {
    uint64_t region, region_pages, ports, port_pages;
};

int netd_serve(const void *region, const void *ports, long (*kick)(unsigned mask),
               long (*wait)(const uint32_t *word, uint32_t value), unsigned spins,
               void (*pause)(void));

/* Empty passes netd polls before it sleeps: spinning when it owns its core; yielding the core
 * between two when it time-shares one (fleet --timeshare: FLEET_SHARED=1), so that it polls
 * only while no other program wants the core (a reply that comes while the program waits for
 * it then costs no wake-up). */
#define SPINS_OWNED 2000
#define SPINS_SHARED 200

static void spin(void)
{
    __builtin_ia32_pause();
}

static void yield(void)
{
    sched_yield();
}

static long kick(unsigned mask)
{
    return syscall(SYS_reef_netd, (long)REEF_NETD_KICK, (long)mask);
}

static long wait_word(const uint32_t *word, uint32_t value)
{
    /* Not FUTEX_PRIVATE: the kernel wakes the word by its frame. */
    return syscall(SYS_futex, word, FUTEX_WAIT, value, NULL, NULL, 0);
}

int main(void)
{
    struct netd_attach a;
    if (syscall(SYS_reef_netd, (long)REEF_NETD_ATTACH, &a) != 0) {
        int e = errno;
        if (e == EPERM)
            fprintf(stderr, "netd: not a member of fleet/net: start it with "
                            "`fleet start net --cores CORE /bin/netd`\n");
        else if (e == EBUSY)
            fprintf(stderr, "netd: another network server is attached\n");
        else
            fprintf(stderr, "netd: cannot attach: %s\n", strerror(e));
        return 1;
    }
    const char *core = getenv("FLEET_CORE");
    const char *shared = getenv("FLEET_SHARED");
    int owned = !(shared && strcmp(shared, "1") == 0);
    fprintf(stderr,
            "netd: serving on core %s (%llu region pages, %llu port-table pages, %s)\n",
            core ? core : "?", (unsigned long long)a.region_pages,
            (unsigned long long)a.port_pages,
            owned ? "polling before it sleeps" : "time-shared, yielding while it polls");
    int r = netd_serve((const void *)(uintptr_t)a.region, (const void *)(uintptr_t)a.ports,
                       kick, wait_word, owned ? SPINS_OWNED : SPINS_SHARED,
                       owned ? spin : yield);
    fprintf(stderr, "netd: the kernel's region is not one this netd serves (%d)\n", r);
    return 1;
}
