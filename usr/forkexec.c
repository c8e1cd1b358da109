/*
 * forkexec: process creation, execution and reaping.
 *
 * - a chain of depth 5: each level forks, the child execs this program as `child LEVEL PPID PID`,
 *   checks that exec kept its pid and parent, starts the next level, checks that level's exit
 *   status (10 + level) with WIFEXITED/WEXITSTATUS, and exits with its own;
 * - getpid/getppid across fork; several children reaped in any order by wait4(-1), then ECHILD;
 * - waitid: P_PID with WEXITED (si_pid, si_code CLD_EXITED, si_status), WNOHANG on a running
 *   child (no event), and CLD_KILLED for a child killed by SIGKILL;
 * - SIGKILL of a sleeping child and of a child spinning on a core, seen as WIFSIGNALED/WTERMSIG;
 * - exec of a missing file fails with ENOENT (and the program goes on).
 */
#include "reef-test.h"
#include <signal.h>
#include <sys/resource.h>

#define DEPTH 5

static const char *self;
static char **environment;

static int exit_code(int level)
{
    return 10 + level;
}

/* The process at `level` of the chain (already exec'ed): check, recurse, exit. */
static int chain_level(int level, pid_t want_ppid, pid_t want_pid)
{
    if (getpid() != want_pid)
        FAIL("level %d: pid %d after exec, %d before", level, getpid(), want_pid);
    if (getppid() != want_ppid)
        FAIL("level %d: parent %d, expected %d", level, getppid(), want_ppid);
    SAY("chain level %d: pid %d, parent %d, exec kept both", level, getpid(), getppid());
    if (level < DEPTH) {
        pid_t parent = getpid();
        pid_t pid = CHECK_SYS(fork());
        if (pid == 0) {
            char l[16], pp[16], p[16];
            snprintf(l, sizeof l, "%d", level + 1);
            snprintf(pp, sizeof pp, "%d", parent);
            snprintf(p, sizeof p, "%d", getpid());
            char *argv[] = {(char *)self, "child", l, pp, p, NULL};
            execve(self, argv, environment);
            FAIL("level %d: execve(%s) failed: %s", level + 1, self, strerror(errno));
        }
        CHECK_CHILD_EXIT(pid, exit_code(level + 1));
        SAY("chain level %d: level %d exited with %d", level, level + 1, exit_code(level + 1));
    }
    return exit_code(level);
}

static void chain(void)
{
    pid_t me = getpid();
    pid_t pid = CHECK_SYS(fork());
    if (pid == 0) {
        char pp[16], p[16];
        snprintf(pp, sizeof pp, "%d", me);
        snprintf(p, sizeof p, "%d", getpid());
        char *argv[] = {(char *)self, "child", "1", pp, p, NULL};
        execve(self, argv, environment);
        FAIL("execve(%s) failed: %s", self, strerror(errno));
    }
    CHECK_CHILD_EXIT(pid, exit_code(1));
    SAY("exec chain of depth %d: every level's exit status checked", DEPTH);
}

static void pids(void)
{
    pid_t me = getpid();
    CHECK(me > 0);
    int *report = shared_page(4096);
    pid_t pid = CHECK_SYS(fork());
    if (pid == 0) {
        report[0] = getpid();
        report[1] = getppid();
        _exit(0);
    }
    CHECK_CHILD_EXIT(pid, 0);
    CHECK_EQ(report[0], pid);
    CHECK_EQ(report[1], me);
    CHECK(pid != me);
    CHECK_EQ(getpid(), me);
    SAY("fork: the child's getpid() is fork's return value, its getppid() is the parent");
    munmap(report, 4096);
}

static void reap_any(void)
{
    pid_t kids[3];
    int seen[3] = {0, 0, 0};
    for (int i = 0; i < 3; i++) {
        kids[i] = CHECK_SYS(fork());
        if (kids[i] == 0)
            _exit(21 + i);
    }
    for (int n = 0; n < 3; n++) {
        int st;
        struct rusage ru;
        pid_t w = CHECK_SYS(wait4(-1, &st, 0, &ru));
        int i = 0;
        while (i < 3 && kids[i] != w)
            i++;
        if (i == 3)
            FAIL("wait4(-1) returned %d, not one of the children", w);
        if (seen[i]++)
            FAIL("wait4(-1) returned child %d twice", w);
        if (!WIFEXITED(st) || WEXITSTATUS(st) != 21 + i)
            FAIL("child %d %s, expected status %d", w, describe_wait(st), 21 + i);
    }
    CHECK_ERRNO(wait4(-1, NULL, 0, NULL), ECHILD);
    CHECK_ERRNO(waitpid(-1, NULL, WNOHANG), ECHILD);
    SAY("wait4(-1) reaped 3 children with their statuses, then ECHILD");
}

static void with_waitid(void)
{
    pid_t pid = CHECK_SYS(fork());
    if (pid == 0)
        _exit(77);
    siginfo_t si;
    memset(&si, 0, sizeof si);
    CHECK_SYS(waitid(P_PID, (id_t)pid, &si, WEXITED));
    CHECK_EQ(si.si_signo, SIGCHLD);
    CHECK_EQ(si.si_pid, pid);
    CHECK_EQ(si.si_code, CLD_EXITED);
    CHECK_EQ(si.si_status, 77);
    CHECK_ERRNO(waitpid(pid, NULL, 0), ECHILD);
    SAY("waitid(P_PID, WEXITED): si_pid, CLD_EXITED, si_status 77; the child is reaped");
}

static void kills(void)
{
    /* One child sleeps in nanosleep, the other spins on a core. */
    volatile int *ready = shared_page(4096);
    pid_t sleeper = CHECK_SYS(fork());
    if (sleeper == 0) {
        ready[0] = 1;
        for (;;) {
            struct timespec ts = {1000, 0};
            nanosleep(&ts, NULL);
        }
    }
    pid_t spinner = CHECK_SYS(fork());
    if (spinner == 0) {
        ready[1] = 1;
        for (;;)
            ready[2]++;
    }
    while (!ready[0] || !ready[1])
        sched_yield();

    siginfo_t si;
    memset(&si, 0, sizeof si);
    CHECK_SYS(waitid(P_PID, (id_t)sleeper, &si, WEXITED | WNOHANG));
    CHECK_EQ(si.si_pid, 0);
    SAY("waitid(WNOHANG) on a running child: no event");

    CHECK_SYS(kill(sleeper, SIGKILL));
    memset(&si, 0, sizeof si);
    CHECK_SYS(waitid(P_PID, (id_t)sleeper, &si, WEXITED));
    CHECK_EQ(si.si_pid, sleeper);
    CHECK_EQ(si.si_code, CLD_KILLED);
    CHECK_EQ(si.si_status, SIGKILL);
    SAY("SIGKILL of a sleeping child: waitid says CLD_KILLED by signal 9");

    CHECK_SYS(kill(spinner, SIGKILL));
    int st;
    CHECK_EQ(CHECK_SYS(wait4(spinner, &st, 0, NULL)), spinner);
    if (!WIFSIGNALED(st) || WTERMSIG(st) != SIGKILL)
        FAIL("spinning child %s, expected killed by SIGKILL", describe_wait(st));
    SAY("SIGKILL of a spinning child: WIFSIGNALED, WTERMSIG 9");
    munmap((void *)ready, 4096);
}

/* A SIGKILL sent just as a child goes to sleep must still end the sleep: the kill lands at a
 * different point of the child's way into nanosleep each round. */
static void kill_while_falling_asleep(void)
{
    enum { ROUNDS = 60 };
    for (int i = 0; i < ROUNDS; i++) {
        pid_t child = CHECK_SYS(fork());
        if (child == 0) {
            for (;;) {
                struct timespec ts = {1000, 0};
                nanosleep(&ts, NULL);
            }
        }
        for (volatile int spin = 0; spin < i * 500; spin++)
            ;
        CHECK_SYS(kill(child, SIGKILL));
        int st;
        CHECK_EQ(CHECK_SYS(wait4(child, &st, 0, NULL)), child);
        if (!WIFSIGNALED(st) || WTERMSIG(st) != SIGKILL)
            FAIL("round %d: child %s, expected killed by SIGKILL", i, describe_wait(st));
    }
    SAY("SIGKILL at %d points of a child's way into nanosleep: each one ended it", ROUNDS);
}

static void missing(void)
{
    char *argv[] = {"/test/no-such-program", NULL};
    CHECK_ERRNO(execve("/test/no-such-program", argv, environment), ENOENT);
    CHECK_ERRNO(execve("/no-such-directory/program", argv, environment), ENOENT);
    SAY("execve of a missing file: ENOENT, and this process goes on");
}

int main(int argc, char **argv, char **envp)
{
    test_begin("forkexec");
    self = self_path(argv[0]);
    environment = envp;
    if (argc == 5 && strcmp(argv[1], "child") == 0)
        return chain_level(atoi(argv[2]), atoi(argv[3]), atoi(argv[4]));
    if (argc != 1)
        FAIL("usage: forkexec (with no arguments)");
    SAY("executable for re-exec: %s", self);
    pids();
    chain();
    reap_any();
    with_waitid();
    kills();
    kill_while_falling_asleep();
    missing();
    PASS();
}
