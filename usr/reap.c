/*
 * reap: children that are reaped when they exit, as Linux does when the parent's SIGCHLD
 * action is SIG_IGN or has SA_NOCLDWAIT (sigaction(2), wait(2) NOTES).
 *
 * - SIG_IGN: 50 children that exit leave no zombie (kill(pid, 0) answers ESRCH, /proc/<pid>
 *   is gone), no SIGCHLD is sent (not even pending while blocked), and waitpid(-1), wait4 and
 *   waitid answer ECHILD;
 * - SIG_IGN: a waitpid(-1) made while children live blocks until the last has exited (their
 *   pipe's write ends are all closed when it returns) and then answers ECHILD;
 * - SA_NOCLDWAIT with a handler: the handler runs (si_pid, CLD_EXITED, the status) and no
 *   zombie is left, for one child and for 50;
 * - SIG_DFL (and a handler without SA_NOCLDWAIT): children are zombies (/proc says Z) until
 *   waitpid returns each one's status;
 * - the action at a child's exit decides, not the one at its fork: back to SIG_DFL makes
 *   later exits zombies again, and the other way round;
 * - fork and execve keep SIG_IGN (a child's children are reaped, also after it executed
 *   this program again); execve resets a handler with SA_NOCLDWAIT, so zombies again;
 * - orphans re-parented to init follow init's action (a zombie orphan is reaped at its
 *   adoption under SIG_IGN, kept for waitpid under SIG_DFL): on Reef, where the test is
 *   process 1; natively as a child subreaper (PR_SET_CHILD_SUBREAPER), which adopts them.
 *
 * - a zombie holds little memory: its address space went at its exit (50 zombies may keep at
 *   most 32 KiB each of the kernel's free memory, on Reef), and reaping them gives that back.
 *
 * Every wait for a process to be gone or to be a zombie polls with a generous bound (60 s):
 * only a process that never goes (or never exits) fails it.
 */
#include "reef-test.h"

#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/resource.h>

#define CHILDREN 50

/* The state letter of process `pid` in /proc/<pid>/stat, '-' if there is none. */
static char state_of(pid_t pid)
{
    char path[64], buf[512];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    int fd = open(path, O_RDONLY);
    if (fd < 0)
        return '-';
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return '-';
    buf[n] = 0;
    char *paren = strrchr(buf, ')');
    return paren && paren[1] == ' ' ? paren[2] : '?';
}

/* Whether process `pid` is gone: kill(pid, 0) answers ESRCH (a zombie answers 0). */
static int gone(pid_t pid)
{
    return kill(pid, 0) == -1 && errno == ESRCH;
}

/* Seconds on the monotonic clock. */
static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Whether process `pid` is a zombie (/proc/<pid>/stat says Z). */
static int zombie(pid_t pid)
{
    return state_of(pid) == 'Z';
}

/* Polls `cond(pid)` for at most 60 s; its last answer. */
static int poll_for(int (*cond)(pid_t), pid_t pid)
{
    double end = now() + 60;
    while (!cond(pid) && now() < end)
        usleep(1000);
    return cond(pid);
}

/* Waits until `pid` is gone (at most 60 s); fails if it stays: a zombie. */
static void wait_gone(pid_t pid)
{
    if (!poll_for(gone, pid))
        FAIL("process %d is still there (state %c)", (int)pid, state_of(pid));
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    CHECK_ERRNO(access(path, F_OK), ENOENT);
}

/* Waits until `pid` is a zombie (at most 60 s); fails if it does not become one. */
static void wait_zombie(pid_t pid)
{
    if (!poll_for(zombie, pid))
        FAIL("process %d is not a zombie (state %c)", (int)pid, state_of(pid));
    CHECK_EQ(kill(pid, 0), 0);
}

/* Reads the pipe `fd` to its end (every writer gone); returns the bytes read. */
static int drain(int fd)
{
    char buf[256];
    int total = 0;
    for (;;) {
        ssize_t n = read(fd, buf, sizeof buf);
        if (n < 0 && errno == EINTR)
            continue;
        CHECK(n >= 0);
        if (n == 0)
            return total;
        total += (int)n;
    }
}

/* Forks `n` children (pids into `pids`) that each write a byte to a pipe and exit with
 * status i + 1, and returns when every one has closed the pipe (so is exiting or gone). */
static void children_that_exit(pid_t *pids, int n)
{
    int p[2];
    CHECK_SYS(pipe(p));
    for (int i = 0; i < n; i++) {
        pids[i] = CHECK_SYS(fork());
        if (pids[i] == 0) {
            close(p[0]);
            if (write(p[1], "x", 1) != 1)
                _exit(100);
            _exit(i + 1);
        }
    }
    close(p[1]);
    CHECK_EQ(drain(p[0]), n);
    close(p[0]);
}

static volatile sig_atomic_t chld_count, chld_pid, chld_code, chld_status;

static void on_chld(int sig, siginfo_t *si, void *ctx)
{
    (void)sig;
    (void)ctx;
    chld_pid = si->si_pid;
    chld_code = si->si_code;
    chld_status = si->si_status;
    chld_count++;
}

/* SIGCHLD's action for set_chld(). */
enum action { IGNORE, DEFAULT, HANDLER };

/* Sets SIGCHLD's action to SIG_IGN, SIG_DFL or on_chld (with SA_SIGINFO) and `flags`. */
static void set_chld(enum action action, int flags)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    if (action == HANDLER) {
        sa.sa_sigaction = on_chld;
        flags |= SA_SIGINFO;
    } else {
        sa.sa_handler = action == IGNORE ? SIG_IGN : SIG_DFL;
    }
    sa.sa_flags = flags;
    sigemptyset(&sa.sa_mask);
    CHECK_SYS(sigaction(SIGCHLD, &sa, NULL));
}

/* Blocks or unblocks SIGCHLD. */
static void block_chld(int block)
{
    sigset_t s;
    sigemptyset(&s);
    sigaddset(&s, SIGCHLD);
    CHECK_SYS(sigprocmask(block ? SIG_BLOCK : SIG_UNBLOCK, &s, NULL));
}

/* Sleeps in sigsuspend, SIGCHLD unblocked, until the handler has run once more than
 * `before`. */
static void await_handler(int before)
{
    sigset_t none;
    sigemptyset(&none);
    while (chld_count == before)
        sigsuspend(&none);
}

/* Whether waitpid(-1), wait4 and waitid all answer ECHILD at once: no child at all. */
static void check_no_children(void)
{
    int st;
    CHECK_ERRNO(waitpid(-1, &st, 0), ECHILD);
    CHECK_ERRNO(waitpid(-1, &st, WNOHANG), ECHILD);
    struct rusage ru;
    CHECK_ERRNO(wait4(-1, &st, 0, &ru), ECHILD);
    siginfo_t si;
    CHECK_ERRNO(waitid(P_ALL, 0, &si, WEXITED), ECHILD);
}

/* Waits for `pid` to exit (it must be a zombie first when `zombie`) and checks its status. */
static void reap_status(pid_t pid, int status, int zombie)
{
    if (zombie)
        wait_zombie(pid);
    int st;
    CHECK_EQ(waitpid(pid, &st, 0), pid);
    CHECK(WIFEXITED(st));
    CHECK_EQ(WEXITSTATUS(st), status);
    CHECK(gone(pid));
}

static void ignored(void)
{
    set_chld(IGNORE, 0);
    block_chld(1);
    struct rusage before, after;
    CHECK_SYS(getrusage(RUSAGE_CHILDREN, &before));
    pid_t pids[CHILDREN];
    children_that_exit(pids, CHILDREN);
    for (int i = 0; i < CHILDREN; i++)
        wait_gone(pids[i]);
    check_no_children();
    sigset_t pending;
    CHECK_SYS(sigpending(&pending));
    CHECK(!sigismember(&pending, SIGCHLD));
    block_chld(0);
    CHECK_SYS(getrusage(RUSAGE_CHILDREN, &after));
    CHECK_EQ(after.ru_utime.tv_sec, before.ru_utime.tv_sec);
    SAY("SIG_IGN: %d children exited, none left as a zombie, no SIGCHLD, waits answer ECHILD",
        CHILDREN);
}

static void blocking_wait(void)
{
    enum { WAITERS = 5 };
    set_chld(IGNORE, 0);
    int go[2], done[2];
    CHECK_SYS(pipe(go));
    CHECK_SYS(pipe2(done, O_NONBLOCK));
    pid_t parent = getpid();
    pid_t pids[WAITERS + 1];
    for (int i = 0; i < WAITERS; i++) {
        pids[i] = CHECK_SYS(fork());
        if (pids[i] == 0) {
            close(go[1]);
            char c;
            while (read(go[0], &c, 1) != 0)
                ;
            _exit(0);
        }
    }
    /* The releaser: once the parent sleeps (in its waitpid; at most 10 s, which decides
     * nothing), it lets the others go, and exits last. */
    pids[WAITERS] = CHECK_SYS(fork());
    if (pids[WAITERS] == 0) {
        close(go[0]);
        double end = now() + 10;
        while (state_of(parent) != 'S' && now() < end)
            usleep(1000);
        close(go[1]);
        _exit(0);
    }
    close(go[0]);
    close(go[1]);
    close(done[1]);
    int st;
    CHECK_ERRNO(waitpid(-1, &st, 0), ECHILD);
    /* Every child had closed its end of `done` (it was exiting) when the wait ended. */
    char c;
    CHECK_EQ(read(done[0], &c, 1), 0);
    close(done[0]);
    for (int i = 0; i <= WAITERS; i++)
        wait_gone(pids[i]);
    SAY("SIG_IGN: waitpid(-1) blocked until the last of %d children exited, then ECHILD",
        WAITERS + 1);
}

static void nocldwait(void)
{
    set_chld(HANDLER, SA_NOCLDWAIT | SA_RESTART);
    block_chld(1);
    int before = chld_count;
    pid_t pid = CHECK_SYS(fork());
    if (pid == 0)
        _exit(7);
    await_handler(before);
    CHECK_EQ(chld_pid, pid);
    CHECK_EQ(chld_code, CLD_EXITED);
    CHECK_EQ(chld_status, 7);
    wait_gone(pid);
    int st;
    CHECK_ERRNO(waitpid(pid, &st, 0), ECHILD);
    check_no_children();
    SAY("SA_NOCLDWAIT: the handler ran for the child's exit (status 7), no zombie");

    before = chld_count;
    pid_t pids[CHILDREN];
    children_that_exit(pids, CHILDREN);
    for (int i = 0; i < CHILDREN; i++)
        wait_gone(pids[i]);
    check_no_children();
    await_handler(before);
    block_chld(0);
    SAY("SA_NOCLDWAIT: %d children exited, none left as a zombie, the handler ran", CHILDREN);
}

static void zombies(void)
{
    enum { N = 10 };
    pid_t pids[N];
    set_chld(DEFAULT, 0);
    children_that_exit(pids, N);
    for (int i = 0; i < N; i++)
        reap_status(pids[i], i + 1, 1);
    check_no_children();
    SAY("SIG_DFL: %d children were zombies until waitpid returned each status", N);

    set_chld(HANDLER, SA_RESTART);
    children_that_exit(pids, N);
    for (int i = 0; i < N; i++)
        reap_status(pids[i], i + 1, 1);
    check_no_children();
    set_chld(DEFAULT, 0);
    SAY("a handler without SA_NOCLDWAIT: %d zombies, each status returned", N);
}

/* A child that waits for a byte (or the end) of `fd` and then exits with `status`. */
static pid_t waiting_child(int fds[2], int status)
{
    pid_t pid = CHECK_SYS(fork());
    if (pid == 0) {
        close(fds[1]);
        char c;
        if (read(fds[0], &c, 1) < 0)
            _exit(100);
        _exit(status);
    }
    return pid;
}

static void switching(void)
{
    pid_t pid;
    set_chld(IGNORE, 0);
    children_that_exit(&pid, 1);
    wait_gone(pid);
    set_chld(DEFAULT, 0);
    children_that_exit(&pid, 1);
    reap_status(pid, 1, 1);
    set_chld(HANDLER, SA_NOCLDWAIT | SA_RESTART);
    children_that_exit(&pid, 1);
    wait_gone(pid);
    set_chld(DEFAULT, 0);
    children_that_exit(&pid, 1);
    reap_status(pid, 1, 1);
    SAY("SIG_IGN, then SIG_DFL: zombies again; SA_NOCLDWAIT, then SIG_DFL: zombies again");

    /* Forked under SIG_IGN, exits under SIG_DFL: a zombie; and the other way round. */
    int p[2];
    CHECK_SYS(pipe(p));
    set_chld(IGNORE, 0);
    pid = waiting_child(p, 3);
    set_chld(DEFAULT, 0);
    close(p[1]);
    reap_status(pid, 3, 1);
    close(p[0]);
    CHECK_SYS(pipe(p));
    pid = waiting_child(p, 4);
    set_chld(IGNORE, 0);
    close(p[1]);
    wait_gone(pid);
    close(p[0]);
    check_no_children();
    set_chld(DEFAULT, 0);
    SAY("the action at the child's exit decides, not the one at its fork");
}

/* Where child_checks() writes a byte when they pass (-1: nowhere). */
static int ok_fd = -1;

/* In a child whose SIGCHLD action is `expect`: forks three children that exit and checks
 * that they are reaped at once (SIG_IGN) or zombies (SIG_DFL); exits 0 if so (a byte to
 * `ok_fd` first). */
static void child_checks(void (*expect)(int))
{
    struct sigaction sa;
    CHECK_SYS(sigaction(SIGCHLD, NULL, &sa));
    CHECK(sa.sa_handler == expect);
    pid_t pids[3];
    children_that_exit(pids, 3);
    for (int i = 0; i < 3; i++) {
        if (expect == SIG_IGN)
            wait_gone(pids[i]);
        else
            reap_status(pids[i], i + 1, 1);
    }
    check_no_children();
    if (ok_fd >= 0 && write(ok_fd, "k", 1) != 1)
        FAIL("write: %s", strerror(errno));
    exit(0);
}

static void inherited(const char *self)
{
    set_chld(DEFAULT, 0);
    pid_t pid = CHECK_SYS(fork());
    if (pid == 0) {
        set_chld(IGNORE, 0);
        int ok[2];
        CHECK_SYS(pipe(ok));
        pid_t gc = CHECK_SYS(fork());
        if (gc == 0) {
            close(ok[0]);
            ok_fd = ok[1];
            child_checks(SIG_IGN);
        }
        close(ok[1]);
        int st;
        /* Its own child is reaped at its exit too: ECHILD, after its checks passed. */
        CHECK_ERRNO(waitpid(gc, &st, 0), ECHILD);
        CHECK_EQ(drain(ok[0]), 1);
        wait_gone(gc);
        _exit(0);
    }
    reap_status(pid, 0, 0);
    SAY("fork keeps SIG_IGN: a child's children are reaped at once");

    pid = CHECK_SYS(fork());
    if (pid == 0) {
        set_chld(IGNORE, 0);
        execl(self, self, "exec-ign", (char *)NULL);
        _exit(126);
    }
    reap_status(pid, 0, 0);
    pid = CHECK_SYS(fork());
    if (pid == 0) {
        set_chld(HANDLER, SA_NOCLDWAIT);
        execl(self, self, "exec-dfl", (char *)NULL);
        _exit(126);
    }
    reap_status(pid, 0, 0);
    SAY("execve keeps SIG_IGN (children reaped) and resets SA_NOCLDWAIT's handler (zombies)");
}

/* A child leaves this process a zombie orphan and a live one: on Reef, where it runs as
 * process 1; on Linux, as a child subreaper (which Linux treats as it treats init). */
static void orphans(void)
{
    if (getpid() != 1 && prctl(PR_SET_CHILD_SUBREAPER, 1) != 0) {
        SAY("neither process 1 nor a subreaper: orphans go elsewhere, skipped");
        return;
    }
    for (int round = 0; round < 2; round++) {
        int ignore = round == 0;
        set_chld(ignore ? IGNORE : DEFAULT, 0);
        int report[2], hold[2];
        CHECK_SYS(pipe(report));
        CHECK_SYS(pipe(hold));
        pid_t middle = CHECK_SYS(fork());
        if (middle == 0) {
            set_chld(DEFAULT, 0);
            pid_t gc[2];
            gc[0] = CHECK_SYS(fork());
            if (gc[0] == 0)
                _exit(5);
            gc[1] = waiting_child(hold, 6);
            wait_zombie(gc[0]);
            if (write(report[1], gc, sizeof gc) != sizeof gc)
                _exit(100);
            _exit(0);
        }
        close(report[1]);
        close(hold[0]);
        pid_t gc[2];
        CHECK_EQ(read(report[0], gc, sizeof gc), sizeof gc);
        close(report[0]);
        /* The middle child's exit gives both grandchildren to process 1. */
        if (ignore) {
            wait_gone(middle);
            wait_gone(gc[0]);
        } else {
            reap_status(middle, 0, 0);
            reap_status(gc[0], 5, 1);
        }
        close(hold[1]);
        if (ignore)
            wait_gone(gc[1]);
        else
            reap_status(gc[1], 6, 0);
        check_no_children();
    }
    set_chld(DEFAULT, 0);
    SAY("orphans adopted by %s follow its action: reaped under SIG_IGN, zombies under "
        "SIG_DFL",
        getpid() == 1 ? "process 1" : "a subreaper");
}

/* On Reef: 50 zombies keep at most 32 KiB each of the kernel's free memory (before their
 * address spaces went at exit, about 180 KiB each), and reaping them gives it back within
 * 1 MiB (heap arenas are counted as their free part). */
static void zombie_memory(void)
{
    enum { MOST_PER_ZOMBIE = 32 << 10 };
    set_chld(DEFAULT, 0);
    long before = reef_free_memory(NULL);
    pid_t pids[CHILDREN];
    children_that_exit(pids, CHILDREN);
    for (int i = 0; i < CHILDREN; i++)
        wait_zombie(pids[i]);
    long zombies = reef_free_memory(NULL);
    for (int i = 0; i < CHILDREN; i++)
        reap_status(pids[i], i + 1, 1);
    check_no_children();
    long after = reef_free_memory(NULL);
    if (before < 0) {
        SAY("zombies' memory: not measured natively");
        return;
    }
    long held = (before - zombies) / CHILDREN;
    if (held > MOST_PER_ZOMBIE)
        FAIL("%d zombies keep %ld bytes each of free memory (%ld KiB before, %ld KiB with "
             "them)",
             CHILDREN, held, before >> 10, zombies >> 10);
    if (after < before - (1L << 20))
        FAIL("reaping %d zombies gave memory back to %ld KiB only (%ld KiB before them)",
             CHILDREN, after >> 10, before >> 10);
    SAY("zombies' memory: %d zombies keep %ld bytes each; %ld KiB free before, %ld KiB after "
        "they were reaped",
        CHILDREN, held > 0 ? held : 0, before >> 10, after >> 10);
}

int main(int argc, char **argv)
{
    test_begin("reap");
    if (argc == 2 && strcmp(argv[1], "exec-ign") == 0)
        child_checks(SIG_IGN);
    if (argc == 2 && strcmp(argv[1], "exec-dfl") == 0)
        child_checks(SIG_DFL);
    ignored();
    blocking_wait();
    nocldwait();
    zombies();
    switching();
    inherited(self_path(argv[0]));
    orphans();
    zombie_memory();
    PASS();
}
