/*
 * hareroot: makes Hare the root file system (issue 13). The kernel runs it as init when its
 * command line says root=hare or root=hare:LIST:
 *
 *   hareroot LIST PROGRAM [ARG...]
 *
 * It starts Hare's fleet, one server on each core of LIST time-sharing it with programs
 * (`fleet start hare --timeshare --cores LIST /bin/hared LIST`), waits until every server has
 * registered, mounts Hare over / with option `root` (the kernel copies NR-FS's files, the
 * initramfs, into it first; /dev, /proc and /sys stay the kernel's), makes / its working
 * directory and executes PROGRAM, which keeps pid 1 and finds its files, /bin and /test among
 * them, in Hare. The buffer cache is twice what NR-FS holds, 64 to 256 MiB (the initramfs
 * and room to work).
 *
 * What does not come along: the fleet manager in Hare is a copy, not the executable the
 * kernel trusts, so programs cannot start fleets (the Hare fleet runs from NR-FS's); a
 * file's times are those of the copy.
 *
 * Exit status (only if it does not execute PROGRAM): 2 bad usage, 1 a step failed (said on
 * standard error).
 */
#define _GNU_SOURCE
#include "hare.h"
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/statfs.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* How long the servers may take to register. */
#define REGISTER_MS 30000


/* Distinct members of fleet/hare registered now. */
static int registered(void)
{
    uint32_t pids[64];
    int found = 0;
    for (int i = 0; i < 256 && found < 64; i++) {
        struct reef_name_member m;
        if (reef_name_lookup("fleet/hare", REEF_NAME_ROUND_ROBIN, &m) != 0)
            break;
        int known = 0;
        for (int j = 0; j < found; j++)
            known |= pids[j] == m.pid;
        if (!known)
            pids[found++] = m.pid;
    }
    return found;
}

int main(int argc, char **argv)
{
    uint16_t id, servers;
    if (argc < 3 || hare_list_place(argv[1], -1, &id, &servers) < 0) {
        fprintf(stderr, "usage: hareroot LIST PROGRAM [ARG...] (the kernel's root=hare:LIST)\n");
        return 2;
    }
    pid_t pid = fork();
    if (pid < 0) {
        perror("hareroot: fork");
        return 1;
    }
    if (pid == 0) {
        execl("/bin/fleet", "fleet", "start", "hare", "--timeshare", "--cores", argv[1],
              "/bin/hared", argv[1], (char *)NULL);
        perror("hareroot: /bin/fleet");
        _exit(127);
    }
    int status;
    if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        fprintf(stderr, "hareroot: fleet start hare on cores %s failed\n", argv[1]);
        return 1;
    }
    for (int waited = 0; registered() < servers; waited++) {
        if (waited >= REGISTER_MS) {
            fprintf(stderr, "hareroot: %d of %d file servers registered after %d ms\n",
                    registered(), servers, REGISTER_MS);
            return 1;
        }
        usleep(1000);
    }
    /* The buffer cache: twice what the root holds (the servers share the copy, each taking
     * files in turn), 64 to 256 MiB. */
    struct statfs fs;
    long used_mib = statfs("/", &fs) == 0
                        ? (long)((fs.f_blocks - fs.f_bfree) * (unsigned long)fs.f_bsize >> 20)
                        : 0;
    long cache = 2 * used_mib + 16;
    cache = cache < 64 ? 64 : cache > 256 ? 256 : cache;
    char options[32];
    snprintf(options, sizeof options, "cache=%ld,root", cache);
    if (mount("none", "/", "hare", 0, options) != 0) {
        fprintf(stderr, "hareroot: mount -t hare -o root /: %s\n", strerror(errno));
        return 1;
    }
    if (chdir("/") != 0) {
        perror("hareroot: chdir /");
        return 1;
    }
    execv(argv[2], argv + 2);
    fprintf(stderr, "hareroot: %s: %s\n", argv[2], strerror(errno));
    return 1;
}
