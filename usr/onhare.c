/*
 * onhare: runs a program with Hare mounted over a directory, so that programs written for an
 * ordinary file system run on Hare unchanged (the qemu::hare-* cases of `cargo xtask test`,
 * the hare-* benchmarks of `cargo xtask bench`).
 *
 *     onhare [-o OPTIONS] PLACEMENT DIR PROGRAM [ARG...]
 *
 * Starts the fleet "hare", mounts Hare over DIR (`mount -t hare none DIR -o OPTIONS`, its root
 * then given DIR's own mode, 1777 for /tmp; see
 * kernel/src/fs/hare/mod.rs for the options), runs PROGRAM with its arguments as a child and
 * waits for it; then unmounts, stops the fleet and checks that the memory the fleet and the
 * mount took has come back. PLACEMENT is where the file servers run (Hare §5.3.2):
 *
 *   N          N servers: on one core they time-share core 0; with more cores they own cores
 *              1..N, so N must be below the number of cores
 *   timeshare  a server on every core, time-sharing it with the programs
 *   split      a server on every odd core (half of them, one per pair of cores, so both
 *              NUMA nodes of an even machine get servers), owning it; programs run on the
 *              even cores (at least 2 cores)
 *
 * Prints `onhare: PROGRAM exited with status N`, then the mount's counters (the client lines
 * of /proc/reef/hare: requests, cache hits, time waiting for replies, ...), and exits with the
 * program's status (128 +
 * signal if it was killed), or with status 1 after a FAIL line if the fleet, the mount or the
 * clean-up went wrong.
 */
#include "reef-test.h"
#include "hare_fleet.h"
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>

int main(int argc, char **argv)
{
    test_begin("onhare");
    const char *options = NULL;
    int first = 1;
    if (argc > 2 && !strcmp(argv[1], "-o")) {
        options = argv[2];
        first = 3;
    }
    if (argc < first + 3) {
        fprintf(stderr, "usage: onhare [-o OPTIONS] N|timeshare|split DIR PROGRAM [ARG...]\n");
        return 2;
    }
    const char *placement = argv[first];
    const char *dir = argv[first + 1];
    char **program = argv + first + 2;
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    if (cores > HARE_TEST_MAX_SERVERS * 2)
        FAIL("%ld cores: onhare places at most %d servers", cores, HARE_TEST_MAX_SERVERS);

    long free_before = reef_free_memory(NULL);
    char list[64];
    int servers;
    if (!strcmp(placement, "timeshare")) {
        if (cores > HARE_TEST_MAX_SERVERS)
            FAIL("timeshare: %ld cores, at most %d servers", cores, HARE_TEST_MAX_SERVERS);
        servers = (int)cores;
        if (servers == 1)
            snprintf(list, sizeof list, "0");
        else
            snprintf(list, sizeof list, "0-%d", servers - 1);
        hare_fleet_start_on(list, servers, true);
    } else if (!strcmp(placement, "split")) {
        if (cores < 2)
            FAIL("split needs at least 2 cores, not %ld", cores);
        servers = 0;
        size_t at = 0;
        for (long c = 1; c < cores; c += 2, servers++)
            at += (size_t)snprintf(list + at, sizeof list - at, "%s%ld", servers ? "," : "", c);
        hare_fleet_start_on(list, servers, false);
    } else {
        char *end;
        long n = strtol(placement, &end, 10);
        long most = cores == 1 ? 1 : cores - 1;
        if (most > HARE_TEST_MAX_SERVERS)
            most = HARE_TEST_MAX_SERVERS;
        if (*end || n < 1 || n > most)
            FAIL("PLACEMENT must be timeshare, split or 1..%ld with %ld cores (one is left to "
                 "programs), not %s",
                 most, cores, placement);
        servers = hare_fleet_start(list, sizeof list, (int)n);
        CHECK_EQ(servers, n);
    }
    /* The mount's root takes the mode of the directory it covers (Hare makes it 0755): over
     * /tmp it is 1777 as /tmp is, so programs that drop root (fuzz's workers) may use it. */
    struct stat covered;
    CHECK_SYS(stat(dir, &covered));
    CHECK_SYS(mount("none", dir, "hare", 0, options));
    CHECK_SYS(chmod(dir, covered.st_mode & 07777));
    SAY("%d file servers on cores %s (%s), mounted over %s%s%s", servers, list, placement, dir,
        options ? " with " : "", options ? options : "");

    pid_t child = fork();
    CHECK_SYS(child);
    if (child == 0) {
        execv(program[0], program);
        fprintf(stderr, "onhare: cannot execute %s: %s\n", program[0], strerror(errno));
        _exit(127);
    }
    int status;
    CHECK_EQ(waitpid(child, &status, 0), child);
    int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    SAY("%s exited with status %d", program[0], code);
    FILE *report = fopen("/proc/reef/hare", "r");
    if (report == NULL)
        FAIL("cannot open /proc/reef/hare: %s", strerror(errno));
    char line[512];
    while (fgets(line, sizeof line, report))
        if (strstr(line, " client: ") || !strncmp(line, "resizes ", 8))
            SAY("%s", strtok(line, "\n"));
    fclose(report);

    /* The program's descriptors are closed: the mount comes off and the servers go. */
    CHECK_SYS(umount(dir));
    hare_fleet_stop(free_before);
    return code;
}
