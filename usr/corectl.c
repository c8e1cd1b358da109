/*
 * corectl: Reef's cores as devices (Barrelfish/DC §4), from the shell.
 *
 *   corectl list            every core: node, APIC id, state, KCB, kernel image, threads
 *   corectl lskcb           every KCB: its physical address, the times its core was started,
 *                           and the core's clock when it last stopped
 *   corectl stop N          stops core N: its threads that may run elsewhere move there,
 *                           those pinned to it wait until it starts again
 *   corectl start N         starts stopped core N again with its KCB
 *   corectl park N M        parks core N on core M: N stops (if it runs), and M runs N's
 *                           KCB (the threads that may run only on N) by turns with its own
 *                           and any other parked there
 *   corectl unpark N        M gives N's KCB back and N starts again with it
 *   corectl update N IMAGE  restarts core N in kernel image IMAGE (a file such as
 *                           /boot/reef-trace, or `reef`: the boot image) with its KCB
 *   corectl rt N PROGRAM [ARG...]
 *                           restarts core N in the real-time image /boot/reef-rt and runs
 *                           PROGRAM there alone (this process, which it becomes, owns the
 *                           core until it exits)
 *
 * Errors change nothing and say why (exit status 1); a bad command line exits 2. Core 0 takes
 * the console's interrupts and cannot be stopped or parked yet (docs/architecture.md, "Cores as
 * devices").
 */
#include "reef_core.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int usage(void)
{
    fprintf(stderr, "usage: corectl list\n"
                    "       corectl lskcb\n"
                    "       corectl stop N\n"
                    "       corectl start N\n"
                    "       corectl park N M\n"
                    "       corectl unpark N\n"
                    "       corectl update N IMAGE\n"
                    "       corectl rt N PROGRAM [ARG...]\n");
    return 2;
}

/* Core number `s`, or -1 if it is not a decimal number. */
static long core_arg(const char *s)
{
    char *end;
    long v = strtol(s, &end, 10);
    return *s && !*end && v >= 0 && v < 65536 ? v : -1;
}

/* " (hosts A,B,...)": the cores parked on core `host` (each names it as parked_on). */
static void hosted_by(unsigned host, char *out, size_t size)
{
    struct reef_core_info g;
    size_t n = (size_t)snprintf(out, size, " (hosts");
    char sep = ' ';
    for (unsigned c = 0; reef_core_info(c, &g) == 0 && n < size; c++)
        if (g.state == REEF_CORE_PARKED && g.parked_on == host) {
            n += (size_t)snprintf(out + n, size - n, "%c%u", sep, c);
            sep = ',';
        }
    if (n < size)
        snprintf(out + n, size - n, ")");
}

static int list(int kcbs)
{
    struct reef_core_info info;
    int e = reef_core_info(0, &info);
    if (e) {
        fprintf(stderr, "corectl: %s\n",
                e == -ENOSYS ? "this kernel has no core management (not Reef)" : strerror(-e));
        return 1;
    }
    if (kcbs)
        printf("%-5s %-18s %-7s %-14s %s\n", "core", "kcb", "starts", "stopped_at_ns", "run_by");
    else
        printf("%-5s %-5s %-5s %-9s %-18s %-11s %-8s %s\n", "core", "node", "apic", "state", "kcb",
               "image", "threads", "fleet");
    for (unsigned c = 0; reef_core_info(c, &info) == 0; c++) {
        if (kcbs) {
            char run_by[16] = "-";
            if (info.parked_on != REEF_CORE_NONE)
                snprintf(run_by, sizeof run_by, "core %u", info.parked_on);
            else if (info.state == REEF_CORE_ONLINE || info.state == REEF_CORE_STOPPING)
                snprintf(run_by, sizeof run_by, "core %u", info.core);
            printf("%-5u 0x%-16llx %-7llu %-14llu %s\n", info.core, (unsigned long long)info.kcb,
                   (unsigned long long)info.starts, (unsigned long long)info.shutdown_ns, run_by);
            continue;
        }
        char fleet[16] = "-", parking[96] = "";
        if (info.fleet_owner)
            snprintf(fleet, sizeof fleet, "pid %u", info.fleet_owner);
        if (info.parked_on != REEF_CORE_NONE)
            snprintf(parking, sizeof parking, " (parked on %u)", info.parked_on);
        else if (info.guest != REEF_CORE_NONE)
            hosted_by(c, parking, sizeof parking);
        printf("%-5u %-5u %-5u %-9s 0x%-16llx %-11.16s %-8u %s%s\n", info.core, info.node,
               info.apic_id, reef_core_state_name(info.state), (unsigned long long)info.kcb,
               info.image, info.threads, fleet, parking);
    }
    return 0;
}

static const char *why(const char *what, int e)
{
    int park = strcmp(what, "park") == 0, unpark = strcmp(what, "unpark") == 0;
    switch (-e) {
    case ENODEV:
        return park ? "no such core or host" : "no such core";
    case EALREADY:
        return strcmp(what, "start") == 0 ? "the core is not stopped" : "the core is not online";
    case EBUSY:
        if (strcmp(what, "rt") == 0)
            return "the core cannot be stopped (core 0, the last online core, a fleet's core, or "
                   "it hosts a parked core), another program owns it, or it is the last free one";
        if (strcmp(what, "update") == 0)
            return "the core cannot be stopped (core 0, the last online core, a fleet's core, or "
                   "it hosts a parked core), it is parked, or another image holds that one's "
                   "addresses";
        return park ? "the core cannot be stopped (core 0, the last online core, a fleet's core "
                      "or a host), or the host hosts a core already or is a fleet's"
                    : "the core cannot be stopped (core 0, the last online core, a fleet's "
                      "core, or it hosts a parked core)";
    case EINVAL:
        if (strcmp(what, "rt") == 0)
            return "the core is not online, or the image was made for another kernel (see the "
                   "kernel log)";
        if (strcmp(what, "update") == 0)
            return "the image was made for another kernel or KCB layout (see the kernel log)";
        return park ? "the host must be another core, online" : unpark ? "the core is not parked"
                                                                      : strerror(-e);
    case EDEADLK:
        return "this process may run only on that core";
    case ENOEXEC:
        return "not a Reef kernel image (see the kernel log)";
    case EIO:
        return "the core did not come up (see the kernel log)";
    case ENOSYS:
        return "this kernel has no core management (not Reef)";
    default:
        return strerror(-e);
    }
}

int main(int argc, char **argv)
{
    if (argc == 2 && strcmp(argv[1], "list") == 0)
        return list(0);
    if (argc == 2 && strcmp(argv[1], "lskcb") == 0)
        return list(1);
    if (argc == 3 && (strcmp(argv[1], "stop") == 0 || strcmp(argv[1], "start") == 0)) {
        long core = core_arg(argv[2]);
        if (core < 0) {
            fprintf(stderr, "corectl: %s: not a core number\n", argv[2]);
            return 2;
        }
        int stop = argv[1][2] == 'o';
        int e = stop ? reef_core_stop((unsigned)core) : reef_core_start((unsigned)core);
        if (e) {
            fprintf(stderr, "corectl: %s %ld: %s\n", argv[1], core, why(argv[1], e));
            return 1;
        }
        printf("corectl: core %ld %s\n", core, stop ? "stopped" : "started");
        return 0;
    }
    if ((argc == 4 && strcmp(argv[1], "park") == 0) ||
        (argc == 3 && strcmp(argv[1], "unpark") == 0)) {
        int park = argc == 4;
        long core = core_arg(argv[2]), host = park ? core_arg(argv[3]) : 0;
        if (core < 0 || host < 0) {
            fprintf(stderr, "corectl: %s: not a core number\n", core < 0 ? argv[2] : argv[3]);
            return 2;
        }
        int e = park ? reef_core_park((unsigned)core, (unsigned)host)
                     : reef_core_unpark((unsigned)core);
        if (e) {
            fprintf(stderr, "corectl: %s %ld: %s\n", argv[1], core, why(argv[1], e));
            return 1;
        }
        if (park)
            printf("corectl: core %ld parked on core %ld\n", core, host);
        else
            printf("corectl: core %ld unparked\n", core);
        return 0;
    }
    if (argc == 4 && strcmp(argv[1], "update") == 0) {
        long core = core_arg(argv[2]);
        if (core < 0) {
            fprintf(stderr, "corectl: %s: not a core number\n", argv[2]);
            return 2;
        }
        int e = reef_core_update((unsigned)core, argv[3]);
        if (e) {
            fprintf(stderr, "corectl: update %ld %s: %s\n", core, argv[3], why(argv[1], e));
            return 1;
        }
        printf("corectl: core %ld runs %s\n", core, argv[3]);
        return 0;
    }
    if (argc >= 4 && strcmp(argv[1], "rt") == 0) {
        long core = core_arg(argv[2]);
        if (core < 0) {
            fprintf(stderr, "corectl: %s: not a core number\n", argv[2]);
            return 2;
        }
        int e = reef_core_rt((unsigned)core, "/boot/reef-rt");
        if (e) {
            fprintf(stderr, "corectl: rt %ld: %s\n", core, why("rt", e));
            return 1;
        }
        execvp(argv[3], argv + 3);
        fprintf(stderr, "corectl: rt %ld: %s: %s\n", core, argv[3], strerror(errno));
        return 1;
    }
    return usage();
}
