/*
 * hareexec: where `execve` runs a program under a Hare mount's `exec=` option (Hare §3.6's
 * remote execution; kernel/src/exec.rs `place`), and that a program placed on another core is
 * still its parent's child in every way.
 *
 *     hareexec                the test
 *     hareexec core           exits with the number of the core it runs on
 *     hareexec same CORE      exits 0 if it runs on CORE, 1 if not
 *     hareexec wait FD        writes its parent's pid and its core to FD, then waits for a signal
 *
 * The mode comes from the Hare mount in /proc/mounts (the qemu::hare-exec-* cases run it under
 * `onhare -o exec=...`):
 *
 *   exec=rr      3 x N children, forked (and, for the last N, spawned with vfork), each execute
 *                `hareexec core`; N is the number of cores a program may be placed on (this
 *                process's affinity less the cores fleets own, /proc/reef/fleets). Child i must
 *                run on candidate (s + i) mod N for one s: every candidate in turn.
 *   exec=random  as rr, each on some candidate, never on a core a fleet owns.
 *   local        (a Hare mount without exec=) each child runs its program on the core it ran
 *                on before the exec.
 *   no Hare      (also natively on Linux) only the part below.
 *
 * In every mode a child that executed a program is the parent's child as before: getppid is
 * the parent, wait4 gets its exit status and the signal that ended it.
 */
#include "reef-test.h"
#include <spawn.h>
#include <sys/wait.h>

#define MAX_CORES 64

enum mode { NO_HARE, LOCAL, ROUND_ROBIN, RANDOM };

static const char *self;

/* The Hare mount's placement, from its line in /proc/mounts. */
static enum mode mount_mode(void)
{
    FILE *f = fopen("/proc/mounts", "r");
    if (f == NULL)
        FAIL("cannot open /proc/mounts: %s", strerror(errno));
    char line[512];
    enum mode m = NO_HARE;
    while (fgets(line, sizeof line, f)) {
        char dev[128], dir[256], type[32], opts[256];
        if (sscanf(line, "%127s %255s %31s %255s", dev, dir, type, opts) != 4 ||
            strcmp(type, "hare"))
            continue;
        m = strstr(opts, "exec=rr") ? ROUND_ROBIN : strstr(opts, "exec=random") ? RANDOM : LOCAL;
    }
    fclose(f);
    return m;
}

/* Whether a fleet owns `core` (split placement: nothing else may run there). */
static int owned_by_fleet(int core)
{
    FILE *f = fopen("/proc/reef/fleets", "r");
    if (f == NULL)
        return 0;
    char line[256];
    int owned = 0;
    while (fgets(line, sizeof line, f)) {
        int c;
        if (sscanf(line, "core %d ", &c) == 1 && c == core && strstr(line, " owned"))
            owned = 1;
    }
    fclose(f);
    return owned;
}

/* The cores a program of this process may be placed on, in increasing order. */
static int candidates(int *cores)
{
    int all[MAX_CORES];
    int n = allowed_cpus(all, MAX_CORES), k = 0;
    for (int i = 0; i < n; i++)
        if (!owned_by_fleet(all[i]))
            cores[k++] = all[i];
    CHECK(k >= 1);
    return k;
}

static int exit_status(pid_t pid)
{
    int st;
    while (waitpid(pid, &st, 0) < 0)
        CHECK_EQ(errno, EINTR);
    if (!WIFEXITED(st))
        FAIL("child %d %s", (int)pid, describe_wait(st));
    return WEXITSTATUS(st);
}

/* Forks a child that executes `hareexec ARGS...`; returns its pid. */
static pid_t fork_exec(char *const *args)
{
    pid_t pid = CHECK_SYS(fork());
    if (pid == 0) {
        execv(self, args);
        printf("FAIL hareexec: execv %s: %s\n", self, strerror(errno));
        _exit(127);
    }
    return pid;
}

/* Where successive children's programs ran; checks them against the mode. */
static void check_placement(enum mode m, const int *where, int count, const int *cand, int n)
{
    for (int i = 0; i < count; i++) {
        int ok = 0;
        for (int c = 0; c < n; c++)
            ok |= where[i] == cand[c];
        if (!ok)
            FAIL("child %d ran on core %d, not one a program may be placed on", i, where[i]);
    }
    if (m != ROUND_ROBIN)
        return;
    int s = 0;
    while (cand[s] != where[0])
        s++;
    for (int i = 0; i < count; i++)
        if (where[i] != cand[(s + i) % n])
            FAIL("round robin: child %d ran on core %d, expected %d (the candidate after %d)", i,
                 where[i], cand[(s + i) % n], i ? where[i - 1] : -1);
}

int main(int argc, char **argv)
{
    test_begin("hareexec");
    self = self_path(argv[0]);
    if (argc == 2 && !strcmp(argv[1], "core"))
        return sched_getcpu();
    if (argc == 3 && !strcmp(argv[1], "same"))
        return sched_getcpu() == atoi(argv[2]) ? 0 : 1;
    if (argc == 3 && !strcmp(argv[1], "wait")) {
        int fd = atoi(argv[2]);
        int report[2] = {(int)getppid(), sched_getcpu()};
        CHECK_EQ(write(fd, report, sizeof report), (long)sizeof report);
        for (;;)
            pause();
    }
    CHECK_EQ(argc, 1);

    enum mode m = mount_mode();
    static const char *names[] = {"no Hare mount", "local", "round robin", "random"};
    int cand[MAX_CORES];
    int n = candidates(cand);
    SAY("%s placement, %d cores to place programs on", names[m], n);

    if (m == ROUND_ROBIN || m == RANDOM) {
        int where[3 * MAX_CORES];
        int count = 3 * n;
        char *core_args[] = {(char *)self, "core", NULL};
        for (int i = 0; i < 2 * n; i++)
            where[i] = exit_status(fork_exec(core_args));
        /* posix_spawn (musl: a CLONE_VFORK child) goes on in the same order. */
        for (int i = 2 * n; i < count; i++) {
            pid_t pid;
            int e = posix_spawn(&pid, self, NULL, NULL, core_args, NULL);
            if (e)
                FAIL("posix_spawn: %s", strerror(e));
            where[i] = exit_status(pid);
        }
        check_placement(m, where, count, cand, n);
        char seq[3 * MAX_CORES * 4] = "";
        for (int i = 0; i < count; i++)
            snprintf(seq + strlen(seq), sizeof seq - strlen(seq), "%s%d", i ? " " : "", where[i]);
        SAY("programs ran on cores %s", seq);
    } else if (m == LOCAL) {
        for (int i = 0; i < 2 * n; i++) {
            pid_t pid = CHECK_SYS(fork());
            if (pid == 0) {
                char core[16];
                snprintf(core, sizeof core, "%d", sched_getcpu());
                execl(self, self, "same", core, (char *)NULL);
                _exit(127);
            }
            int st = exit_status(pid);
            if (st)
                FAIL("child %d: its program ran on another core than the child (status %d)",
                     i, st);
        }
        SAY("%d programs ran on the core that executed them", 2 * n);
    }

    /* The parent, the exit status and signals, wherever the program runs. */
    int p[2];
    CHECK_SYS(pipe(p));
    char fd[16];
    snprintf(fd, sizeof fd, "%d", p[1]);
    char *wait_args[] = {(char *)self, "wait", fd, NULL};
    pid_t waiter = fork_exec(wait_args);
    CHECK_SYS(close(p[1]));
    int report[2];
    CHECK_EQ(read(p[0], report, sizeof report), (long)sizeof report);
    CHECK_EQ(report[0], getpid());
    CHECK_SYS(kill(waiter, SIGTERM));
    int st;
    while (waitpid(waiter, &st, 0) < 0)
        CHECK_EQ(errno, EINTR);
    if (!WIFSIGNALED(st) || WTERMSIG(st) != SIGTERM)
        FAIL("the waiting program %s, expected SIGTERM", describe_wait(st));
    CHECK_SYS(close(p[0]));
    SAY("a program on core %d (this one on %d): getppid, SIGTERM and wait4 as for a local one",
        report[1], sched_getcpu());
    char *exit_args[] = {(char *)self, "same", "-1", NULL};
    CHECK_EQ(exit_status(fork_exec(exit_args)), 1);
    PASS();
}
