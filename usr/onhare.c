/*
 * onhare: runs a program with Hare mounted over a directory, so that programs written for an
 * ordinary file system run on Hare unchanged (the qemu::hare-* cases of `cargo xtask test`).
 *
 *     onhare SERVERS DIR PROGRAM [ARG...]
 *
 * Starts the fleet "hare" with SERVERS file servers (on one core they time-share core 0; with
 * more cores they take cores 1..SERVERS, the split placement, so SERVERS must be below the
 * number of cores), mounts Hare over DIR (`mount -t hare none DIR`), runs PROGRAM with its
 * arguments as a child and waits for it; then unmounts, stops the fleet and checks that the
 * memory the fleet and the mount took has come back. Prints `onhare: PROGRAM exited with
 * status N` and exits with the program's status (128 + signal if it was killed), or with
 * status 1 after a FAIL line if the fleet, the mount or the clean-up went wrong.
 */
#include "reef-test.h"
#include "hare_fleet.h"
#include <sys/mount.h>
#include <sys/wait.h>

int main(int argc, char **argv)
{
    test_begin("onhare");
    if (argc < 4) {
        fprintf(stderr, "usage: onhare SERVERS DIR PROGRAM [ARG...]\n");
        return 2;
    }
    char *end;
    long servers = strtol(argv[1], &end, 10);
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    long most = cores == 1 ? 1 : cores - 1;
    if (most > HARE_TEST_MAX_SERVERS)
        most = HARE_TEST_MAX_SERVERS;
    if (*end || servers < 1 || servers > most)
        FAIL("SERVERS must be 1..%ld with %ld cores (one is left to programs), not %s", most,
             cores, argv[1]);
    const char *dir = argv[2];

    long free_before = reef_free_bytes();
    char list[64];
    CHECK_EQ(hare_fleet_start(list, sizeof list, (int)servers), (int)servers);
    CHECK_SYS(mount("none", dir, "hare", 0, NULL));
    SAY("%ld file servers on cores %s, mounted over %s", servers, list, dir);

    pid_t child = fork();
    CHECK_SYS(child);
    if (child == 0) {
        execv(argv[3], argv + 3);
        fprintf(stderr, "onhare: cannot execute %s: %s\n", argv[3], strerror(errno));
        _exit(127);
    }
    int status;
    CHECK_EQ(waitpid(child, &status, 0), child);
    int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    SAY("%s exited with status %d", argv[3], code);

    /* The program's descriptors are closed: the mount comes off and the servers go. */
    CHECK_SYS(umount(dir));
    hare_fleet_stop(free_before);
    return code;
}
