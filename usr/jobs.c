/*
 * jobs: stopped processes and job control, as Linux does them.
 *
 * - SIGSTOP stops every thread of a child (two threads counting in shared memory stand still);
 *   wait4(WUNTRACED) reports it once (WIFSTOPPED, WSTOPSIG), waitid(WSTOPPED|WNOWAIT) leaves
 *   it to be reported again, /proc/<pid>/stat says T; the parent's SIGCHLD says CLD_STOPPED;
 * - SIGCONT continues it (the counters move again): wait4(WCONTINUED) reports WIFCONTINUED
 *   once, SIGCHLD says CLD_CONTINUED; SA_NOCLDSTOP leaves both SIGCHLDs out;
 * - SIGTSTP stops by default but runs a handler when one is set, and does nothing when
 *   ignored; SIGCONT continues a stopped child even when the child ignores it, and runs a
 *   handler;
 * - SIGKILL ends a stopped child at once; SIGTERM stays pending until SIGCONT, then ends it;
 * - a stop signal sent to a stopped child changes nothing; a system call the stop interrupted
 *   (a read of a pipe) carries on after SIGCONT and returns the data;
 * - on Reef, run as process 1: SIGSTOP and SIGTSTP do not stop it (Linux's init ignores
 *   signals it does not handle; natively the test is not process 1).
 */
#include "reef-test.h"

#include <fcntl.h>
#include <pthread.h>
#include <sys/wait.h>

static volatile long *counters; /* [0], [1]: the child's threads; [2]: its handler's runs */
static volatile sig_atomic_t chld_code, chld_count;

static void on_chld(int sig, siginfo_t *si, void *ctx)
{
    (void)sig;
    (void)ctx;
    chld_code = si->si_code;
    chld_count++;
}

static void *count(void *arg)
{
    volatile long *c = arg;
    for (;;)
        (*c)++;
    return NULL;
}

/* A child whose two threads count forever. */
static pid_t counting_child(void)
{
    counters[0] = counters[1] = 0;
    pid_t pid = CHECK_SYS(fork());
    if (pid == 0) {
        pthread_t t;
        if (pthread_create(&t, NULL, count, (void *)&counters[1]) != 0)
            _exit(3);
        count((void *)&counters[0]);
    }
    /* Both threads have started counting. */
    while (counters[0] == 0 || counters[1] == 0)
        sched_yield();
    return pid;
}

/* Whether both counters stand still over 50 ms. */
static int frozen(void)
{
    long a = counters[0], b = counters[1];
    usleep(50000);
    return a == counters[0] && b == counters[1];
}

/* Waits (up to 10 s) until both counters move. */
static int moving(void)
{
    long a = counters[0], b = counters[1];
    for (int i = 0; i < 1000; i++) {
        if (counters[0] != a && counters[1] != b)
            return 1;
        usleep(10000);
    }
    return 0;
}

static char state_of(pid_t pid)
{
    char path[64], buf[256];
    snprintf(path, sizeof path, "/proc/%d/stat", pid);
    int fd = CHECK_SYS(open(path, O_RDONLY));
    ssize_t n = CHECK_SYS(read(fd, buf, sizeof buf - 1));
    CHECK_SYS(close(fd));
    buf[n] = 0;
    char *p = strrchr(buf, ')');
    CHECK(p != NULL && p[1] == ' ');
    return p[2];
}

/* Waits for SIGCHLD number `n` to have arrived (up to 10 s). */
static void await_chld(int n)
{
    for (int i = 0; i < 1000 && chld_count < n; i++)
        usleep(10000);
    CHECK_EQ(chld_count, n);
}

static void stop_and_continue(void)
{
    struct sigaction sa = {.sa_sigaction = on_chld, .sa_flags = SA_SIGINFO | SA_RESTART};
    sigemptyset(&sa.sa_mask);
    CHECK_SYS(sigaction(SIGCHLD, &sa, NULL));
    chld_count = 0;
    pid_t pid = counting_child();
    int st;
    CHECK_EQ(waitpid(pid, &st, WNOHANG | WUNTRACED), 0);
    CHECK_SYS(kill(pid, SIGSTOP));
    CHECK_EQ(waitpid(pid, &st, WUNTRACED), pid);
    CHECK(WIFSTOPPED(st) && WSTOPSIG(st) == SIGSTOP);
    await_chld(1);
    CHECK_EQ(chld_code, CLD_STOPPED);
    CHECK(frozen());
    CHECK_EQ(state_of(pid), 'T');
    /* Reported once to wait4; a second stop signal changes nothing. */
    CHECK_EQ(waitpid(pid, &st, WNOHANG | WUNTRACED), 0);
    CHECK_SYS(kill(pid, SIGTSTP));
    CHECK_EQ(waitpid(pid, &st, WNOHANG | WUNTRACED), 0);
    CHECK(frozen());

    CHECK_SYS(kill(pid, SIGCONT));
    CHECK_EQ(waitpid(pid, &st, WCONTINUED), pid);
    CHECK(WIFCONTINUED(st));
    CHECK_EQ(waitpid(pid, &st, WNOHANG | WCONTINUED), 0);
    await_chld(2);
    CHECK_EQ(chld_code, CLD_CONTINUED);
    CHECK(moving());
    CHECK(state_of(pid) != 'T');

    /* waitid: WNOWAIT leaves the stop to be seen again. */
    CHECK_SYS(kill(pid, SIGSTOP));
    siginfo_t si;
    memset(&si, 0, sizeof si);
    CHECK_SYS(waitid(P_PID, pid, &si, WSTOPPED | WNOWAIT));
    CHECK(si.si_pid == pid && si.si_code == CLD_STOPPED && si.si_status == SIGSTOP);
    memset(&si, 0, sizeof si);
    CHECK_SYS(waitid(P_PID, pid, &si, WSTOPPED));
    CHECK(si.si_pid == pid && si.si_code == CLD_STOPPED);
    memset(&si, 0, sizeof si);
    CHECK_SYS(waitid(P_PID, pid, &si, WSTOPPED | WNOHANG));
    CHECK_EQ(si.si_pid, 0);

    /* A fatal signal waits while the child is stopped and ends it once continued. */
    CHECK_SYS(kill(pid, SIGTERM));
    CHECK_EQ(waitpid(pid, &st, WNOHANG), 0);
    CHECK_EQ(state_of(pid), 'T');
    CHECK_SYS(kill(pid, SIGCONT));
    CHECK_EQ(waitpid(pid, &st, 0), pid);
    CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGTERM);
    SAY("SIGSTOP stops both threads, SIGCONT continues them; wait4, waitid and SIGCHLD "
        "report each change once; SIGTERM waits for SIGCONT to end a stopped child");

    /* SA_NOCLDSTOP: no SIGCHLD for stops and continues (the exit still sends one). */
    sa.sa_flags |= SA_NOCLDSTOP;
    CHECK_SYS(sigaction(SIGCHLD, &sa, NULL));
    chld_count = 0;
    pid = counting_child();
    CHECK_SYS(kill(pid, SIGSTOP));
    CHECK_EQ(waitpid(pid, &st, WUNTRACED), pid);
    CHECK_SYS(kill(pid, SIGCONT));
    CHECK_EQ(waitpid(pid, &st, WCONTINUED), pid);
    CHECK_SYS(kill(pid, SIGSTOP));
    CHECK_EQ(waitpid(pid, &st, WUNTRACED), pid);
    CHECK_EQ(chld_count, 0);
    CHECK_SYS(kill(pid, SIGKILL));
    CHECK_EQ(waitpid(pid, &st, 0), pid);
    CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
    await_chld(1);
    CHECK_EQ(chld_code, CLD_KILLED);
    set_handler(SIGCHLD, SIG_DFL, 0);
    SAY("SA_NOCLDSTOP: no SIGCHLD for a stop or a continue; SIGKILL ends a stopped child");
}

static void on_tstp(int sig)
{
    (void)sig;
    counters[2]++;
}

static void tstp_and_cont(void)
{
    int st;
    /* Handled: the handler runs and nothing stops. */
    counters[2] = 0;
    int ready[2];
    CHECK_SYS(pipe(ready));
    pid_t pid = CHECK_SYS(fork());
    if (pid == 0) {
        set_handler(SIGTSTP, on_tstp, 0);
        set_handler(SIGCONT, on_tstp, 0);
        if (write(ready[1], "r", 1) != 1)
            _exit(1);
        for (;;)
            pause();
    }
    char c;
    CHECK_EQ(read(ready[0], &c, 1), 1);
    CHECK_SYS(kill(pid, SIGTSTP));
    for (int i = 0; i < 1000 && counters[2] < 1; i++)
        usleep(10000);
    CHECK_EQ(counters[2], 1);
    CHECK_EQ(waitpid(pid, &st, WNOHANG | WUNTRACED), 0);
    /* SIGCONT with a handler: the handler runs (it was not stopped). */
    CHECK_SYS(kill(pid, SIGCONT));
    for (int i = 0; i < 1000 && counters[2] < 2; i++)
        usleep(10000);
    CHECK_EQ(counters[2], 2);
    CHECK_SYS(kill(pid, SIGKILL));
    CHECK_EQ(waitpid(pid, &st, 0), pid);

    /* Ignored SIGTSTP does nothing; SIGSTOP still stops, and SIGCONT continues though the
     * child ignores SIGCONT. */
    pid = CHECK_SYS(fork());
    if (pid == 0) {
        set_handler(SIGTSTP, SIG_IGN, 0);
        set_handler(SIGCONT, SIG_IGN, 0);
        if (write(ready[1], "r", 1) != 1)
            _exit(1);
        for (;;)
            pause();
    }
    CHECK_EQ(read(ready[0], &c, 1), 1);
    CHECK_SYS(kill(pid, SIGTSTP));
    usleep(20000);
    CHECK_EQ(waitpid(pid, &st, WNOHANG | WUNTRACED), 0);
    CHECK_SYS(kill(pid, SIGSTOP));
    CHECK_EQ(waitpid(pid, &st, WUNTRACED), pid);
    CHECK(WIFSTOPPED(st) && WSTOPSIG(st) == SIGSTOP);
    CHECK_SYS(kill(pid, SIGCONT));
    CHECK_EQ(waitpid(pid, &st, WCONTINUED), pid);
    CHECK(WIFCONTINUED(st));
    CHECK_SYS(kill(pid, SIGKILL));
    CHECK_EQ(waitpid(pid, &st, 0), pid);
    SAY("SIGTSTP: a handler runs, ignored does nothing; SIGCONT continues a child that "
        "ignores it and runs a handler");

    /* Default SIGTSTP stops; a read the stop interrupted carries on after SIGCONT. */
    int data[2];
    CHECK_SYS(pipe(data));
    pid = CHECK_SYS(fork());
    if (pid == 0) {
        /* Its own process group, whose parent (this test) is outside it: Linux and Reef
         * discard SIGTSTP sent to an orphaned group (tasks.c), which the test's own group may
         * be. */
        char buf[8];
        if (setpgid(0, 0) != 0 || write(ready[1], "r", 1) != 1)
            _exit(1);
        ssize_t n = read(data[0], buf, sizeof buf);
        _exit(n == 3 && memcmp(buf, "abc", 3) == 0 ? 0 : 10 + (n < 0 ? errno : 0));
    }
    CHECK_EQ(read(ready[0], &c, 1), 1);
    usleep(20000); /* let it block in read (the test holds either way) */
    CHECK_SYS(kill(pid, SIGTSTP));
    CHECK_EQ(waitpid(pid, &st, WUNTRACED), pid);
    CHECK(WIFSTOPPED(st) && WSTOPSIG(st) == SIGTSTP);
    CHECK_SYS(kill(pid, SIGCONT));
    CHECK_EQ(write(data[1], "abc", 3), 3);
    CHECK_CHILD_EXIT(pid, 0);
    SAY("SIGTSTP stops by default; the read it interrupted returns the data after SIGCONT");
}

int main(void)
{
    test_begin("jobs");
    counters = shared_page(4096);
    stop_and_continue();
    tstp_and_cont();
    if (on_reef() && getpid() == 1) {
        /* As init (on Reef), stop signals it does not handle pass it by, as Linux's init. */
        CHECK_SYS(kill(1, SIGSTOP));
        CHECK_SYS(kill(1, SIGTSTP));
        CHECK(state_of(1) != 'T');
        SAY("process 1 is not stopped by SIGSTOP or SIGTSTP");
    }
    PASS();
}
