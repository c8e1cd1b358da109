/*
 * netctl: the network modes of stack instances (LibrettOS §3.3).
 *
 *   netctl list              the instances (mode, sockets, ports), the NIC and the switch's
 *                            and network server's counters (/proc/reef/net)
 *   netctl server PID        moves PID's instance to the network server (netd)
 *   netctl kernel PID        moves PID's instance to the kernel's switch
 *   netctl direct PID        gives PID's instance a NIC of its own (library mode; the machine
 *                            needs more than one NIC: `cargo xtask run --nics 2`), with an
 *                            address of its own from 10.0.2.16 up, which it keeps in every mode
 *   netctl address PID       gives PID's instance an address of its own now, where it is (as
 *                            LibrettOS does at launch for an application that may switch):
 *                            its new connections outside go from it, so they keep their
 *                            address when it moves (a move to library mode gives one too, but
 *                            connections made before go on from 10.0.2.15)
 *   netctl wait [SECONDS]    waits until a network server is attached (default 30 s)
 *
 * PID's instances are those of the sockets it holds (a forked server's live in the process
 * that made them), or its own. A move keeps the instances' sockets, addresses and
 * connections: only the path of their frames changes, and a gratuitous ARP tells the network
 * the address's new MAC. Exit status: 0 done, 1 the operation failed (the message says why), 2 bad
 * usage.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define SYS_reef_net_mode 1039
#define REEF_NET_KERNEL 0
#define REEF_NET_SERVER 1
#define REEF_NET_DIRECT 2
#define REEF_NET_ADDRESS 3

static int usage(void)
{
    fprintf(stderr, "usage: netctl list | server PID | kernel PID | direct PID | address PID | "
                    "wait [SECONDS]\n");
    return 2;
}

/* Copies /proc/reef/net to standard output; whether a server is attached. */
static int report(int print)
{
    FILE *f = fopen("/proc/reef/net", "r");
    if (!f) {
        fprintf(stderr, "netctl: /proc/reef/net: %s\n", strerror(errno));
        return -1;
    }
    char line[512];
    int serving = 0;
    while (fgets(line, sizeof line, f)) {
        if (print)
            fputs(line, stdout);
        if (strncmp(line, "server ", 7) == 0 && strncmp(line + 7, "none", 4) != 0 &&
            strncmp(line + 7, "gone", 4) != 0)
            serving = 1;
    }
    fclose(f);
    return serving;
}

static int parse_pid(const char *s, long *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || *s == 0 || *end != 0 || v <= 0 || v > 0x7fffffff)
        return -1;
    *out = v;
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2)
        return usage();
    if (strcmp(argv[1], "list") == 0 && argc == 2)
        return report(1) < 0;
    if (strcmp(argv[1], "wait") == 0 && argc <= 3) {
        long secs = 30;
        if (argc == 3 && parse_pid(argv[2], &secs) != 0)
            return usage();
        for (long i = 0; i < secs * 10; i++) {
            int r = report(0);
            if (r < 0)
                return 1;
            if (r)
                return 0;
            struct timespec t = {0, 100 * 1000 * 1000};
            nanosleep(&t, NULL);
        }
        fprintf(stderr, "netctl: no network server attached after %ld s\n", secs);
        return 1;
    }
    long mode;
    if (strcmp(argv[1], "server") == 0)
        mode = REEF_NET_SERVER;
    else if (strcmp(argv[1], "kernel") == 0)
        mode = REEF_NET_KERNEL;
    else if (strcmp(argv[1], "direct") == 0)
        mode = REEF_NET_DIRECT;
    else if (strcmp(argv[1], "address") == 0)
        mode = REEF_NET_ADDRESS;
    else
        return usage();
    if (argc != 3)
        return usage();
    long pid;
    if (parse_pid(argv[2], &pid) != 0) {
        fprintf(stderr, "netctl: not a process id: %s\n", argv[2]);
        return 2;
    }
    if (syscall(SYS_reef_net_mode, pid, mode)) {
        int e = errno;
        const char *why = e == ENODEV && mode == REEF_NET_DIRECT
                              ? "the machine has no NIC for library mode (boot with --nics 2)"
                          : e == ENODEV && mode == REEF_NET_ADDRESS
                              ? "the machine has no NIC"
                          : e == ENODEV ? "no network server is attached (start netd)"
                          : e == ENOSPC && mode == REEF_NET_DIRECT
                              ? "every library-mode NIC is taken"
                          : e == ENOSPC ? "every server slot is taken"
                          : e == EADDRNOTAVAIL ? "no address of its own is left"
                          : e == ESRCH  ? "no such process"
                          : e == EPERM  ? "only root may move instances"
                                        : strerror(e);
        fprintf(stderr, "netctl: %s %ld: %s\n", argv[1], pid, why);
        return 1;
    }
    return 0;
}
