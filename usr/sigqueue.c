/*
 * sigqueue: queued real-time signals, sigqueue/rt_sigqueueinfo, sigwaitinfo/sigtimedwait and
 * signalfd, as Linux has them.
 *
 * - queueing: three real-time signals of one number sent while blocked are all delivered, in
 *   order, each with its si_value; two numbers come lowest first; a standard signal sent twice
 *   while blocked comes once; handlers see si_code SI_QUEUE, si_pid, si_uid; SA_RESETHAND
 *   resets only the handler;
 * - sigqueue to a child (which takes them with sigwaitinfo); rt_sigqueueinfo with a si_code of
 *   SI_USER, SI_TKILL or SI_KERNEL to another process is EPERM, to itself allowed;
 *   rt_tgsigqueueinfo to a thread; ESRCH, EINVAL, EFAULT;
 * - sigwaitinfo/sigtimedwait take queued signals one at a time; EAGAIN on a zero timeout;
 * - RLIMIT_SIGPENDING: lowered to 64, sigqueue and tgkill of a real-time signal fail with
 *   EAGAIN past it (kill does not), and exactly the queued ones come back;
 * - signalfd: one record, many in one read, EAGAIN when non-blocking, poll and epoll
 *   readiness, a blocked read, poll and epoll woken by a child's signal, EINTR by a handled
 *   signal, a thread's own signals, the mask changed by signalfd(fd, ...), EINVAL, EBADF,
 *   EFAULT;
 * - a signal whose action is to ignore it (SIGCHLD) is kept while blocked: sigwaitinfo and
 *   signalfd take a child's SIGCHLD; a thread that does not block it, woken by it in a read,
 *   goes on reading (the read restarts, as no handler runs);
 * - hostile: 2000 signal descriptors made and closed, 12000 signals queued and read back
 *   through them, keep no memory (Reef).
 */
#include "reef-test.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <pthread.h>
#include <sys/signalfd.h>

/* What the handler saw, in order. */
struct seen {
    int sig, code, pid, uid, value;
};
static struct seen seen[64];
static volatile int nseen;

static void record(int sig, siginfo_t *si, void *uc)
{
    (void)uc;
    if (nseen < 64) {
        seen[nseen] = (struct seen){sig, si->si_code, si->si_pid, (int)si->si_uid,
                                    si->si_value.sival_int};
        nseen++;
    }
}

/* SIGRTMIN + 1 and + 2 (the C library keeps the first few). */
static int rt1, rt2;

/* The test's signals: SIGUSR1, SIGUSR2 and the two real-time ones. */
static sigset_t test_set(void)
{
    sigset_t s;
    sigemptyset(&s);
    sigaddset(&s, SIGUSR1);
    sigaddset(&s, SIGUSR2);
    sigaddset(&s, rt1);
    sigaddset(&s, rt2);
    return s;
}

static sigset_t one(int sig)
{
    sigset_t s;
    sigemptyset(&s);
    sigaddset(&s, sig);
    return s;
}

/* A SA_SIGINFO handler that blocks every test signal while it runs (so handlers run one after
 * the other, in the order the signals are taken, on Linux and Reef alike). */
static void handle(int sig, int flags)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = record;
    sa.sa_flags = SA_SIGINFO | flags;
    sa.sa_mask = test_set();
    CHECK_SYS(sigaction(sig, &sa, NULL));
}

static void mask(int how, sigset_t s)
{
    CHECK_SYS(sigprocmask(how, &s, NULL));
}

static void queue(pid_t pid, int sig, int value)
{
    union sigval v = {.sival_int = value};
    CHECK_SYS(sigqueue(pid, sig, v));
}

/* rt_sigqueueinfo with a siginfo of our making. */
static long queue_info(pid_t pid, int sig, int code, int value)
{
    siginfo_t si;
    memset(&si, 0, sizeof si);
    si.si_signo = sig;
    si.si_code = code;
    si.si_pid = getpid();
    si.si_uid = getuid();
    si.si_value.sival_int = value;
    return syscall(SYS_rt_sigqueueinfo, pid, sig, &si);
}

/* Takes a pending signal of `s` without waiting: its number, or -1 with EAGAIN. */
static int take(sigset_t s, siginfo_t *si)
{
    struct timespec zero = {0, 0};
    return sigtimedwait(&s, si, &zero);
}

static void check_seen(int i, int sig, int code, int value)
{
    if (seen[i].sig != sig || seen[i].code != code || seen[i].value != value ||
        seen[i].pid != getpid() || seen[i].uid != (int)getuid())
        FAIL("handler %d saw signal %d code %d value %d pid %d uid %d; expected signal %d code "
             "%d value %d pid %d uid %d",
             i, seen[i].sig, seen[i].code, seen[i].value, seen[i].pid, seen[i].uid, sig, code,
             value, (int)getpid(), (int)getuid());
}

static void queued(void)
{
    handle(SIGUSR1, 0);
    handle(rt1, 0);
    handle(rt2, 0);
    mask(SIG_BLOCK, test_set());
    queue(getpid(), rt2, 10);
    queue(getpid(), rt2, 11);
    queue(getpid(), rt2, 12);
    queue(getpid(), rt1, 20);
    CHECK_SYS(kill(getpid(), SIGUSR1));
    CHECK_SYS(kill(getpid(), SIGUSR1));
    sigset_t p;
    CHECK_SYS(sigpending(&p));
    CHECK(sigismember(&p, SIGUSR1) && sigismember(&p, rt1) && sigismember(&p, rt2));
    nseen = 0;
    mask(SIG_UNBLOCK, test_set());
    CHECK_EQ(nseen, 5);
    CHECK_EQ(seen[0].sig, SIGUSR1);
    CHECK_EQ(seen[0].code, SI_USER);
    CHECK_EQ(seen[0].pid, getpid());
    CHECK_EQ(seen[0].uid, getuid());
    check_seen(1, rt1, SI_QUEUE, 20);
    check_seen(2, rt2, SI_QUEUE, 10);
    check_seen(3, rt2, SI_QUEUE, 11);
    check_seen(4, rt2, SI_QUEUE, 12);
    CHECK_SYS(sigpending(&p));
    CHECK(!sigismember(&p, rt1) && !sigismember(&p, rt2));
    SAY("queued: 3 of one real-time signal in order with their values, the lower number first, "
        "SIGUSR1 sent twice delivered once");

    /* rt_sigqueueinfo to itself with any si_code; SA_RESETHAND resets the handler only. */
    handle(rt1, SA_RESETHAND);
    nseen = 0;
    CHECK_EQ(queue_info(getpid(), rt1, SI_USER, 7), 0);
    CHECK_EQ(nseen, 1);
    check_seen(0, rt1, SI_USER, 7);
    struct sigaction old;
    CHECK_SYS(sigaction(rt1, NULL, &old));
    CHECK(old.sa_handler == SIG_DFL);
    CHECK(old.sa_flags & SA_SIGINFO);
    CHECK(old.sa_flags & SA_RESETHAND);
    handle(rt1, 0);
    SAY("rt_sigqueueinfo to itself with SI_USER; SA_RESETHAND keeps SA_SIGINFO");
}

/* A child that waits for EOF on pipe `p` and exits. */
static pid_t idle_child(const int p[2])
{
    pid_t pid = CHECK_SYS(fork());
    if (pid == 0) {
        char c;
        close(p[1]);
        _exit(read(p[0], &c, 1) >= 0 ? 0 : 1);
    }
    return pid;
}

static void other_process(void)
{
    /* sigqueue to a child, which takes them with sigwaitinfo. */
    mask(SIG_BLOCK, test_set());
    pid_t pid = CHECK_SYS(fork());
    if (pid == 0) {
        sigset_t s = one(rt1);
        for (int i = 0; i < 3; i++) {
            siginfo_t si;
            int sig = sigwaitinfo(&s, &si);
            if (sig != rt1 || si.si_code != SI_QUEUE || si.si_value.sival_int != 100 + i ||
                si.si_pid != getppid() || si.si_uid != getuid() || si.si_signo != rt1) {
                printf("sigqueue: child got signal %d code %d value %d pid %d\n", sig,
                       si.si_code, si.si_value.sival_int, si.si_pid);
                _exit(1);
            }
        }
        _exit(take(one(rt1), NULL) == -1 && errno == EAGAIN ? 0 : 2);
    }
    for (int i = 0; i < 3; i++)
        queue(pid, rt1, 100 + i);
    CHECK_CHILD_EXIT(pid, 0);

    /* A forged si_code to another process. */
    int p[2];
    CHECK_SYS(pipe(p));
    pid = idle_child(p);
    CHECK_ERRNO(queue_info(pid, rt1, SI_USER, 1), EPERM);
    CHECK_ERRNO(queue_info(pid, rt1, SI_TKILL, 1), EPERM);
    CHECK_ERRNO(queue_info(pid, rt1, SI_KERNEL, 1), EPERM);
    CHECK_ERRNO(queue_info(pid, rt1, 3, 1), EPERM);
    CHECK_EQ(queue_info(pid, 0, SI_QUEUE, 1), 0);
    CHECK_ERRNO(queue_info(pid, 65, SI_QUEUE, 1), EINVAL);
    CHECK_ERRNO(queue_info(0x3fffffff, rt1, SI_QUEUE, 1), ESRCH);
    CHECK_ERRNO(queue_info(0, rt1, SI_QUEUE, 1), ESRCH);
    CHECK_ERRNO(queue_info(-1, rt1, SI_QUEUE, 1), ESRCH);
    CHECK_ERRNO(syscall(SYS_rt_sigqueueinfo, pid, rt1, (void *)8), EFAULT);
    CHECK_ERRNO(syscall(SYS_rt_sigqueueinfo, pid, rt1, (void *)0xffff800000000000UL), EFAULT);
    CHECK_SYS(close(p[1]));
    CHECK_CHILD_EXIT(pid, 0);
    CHECK_SYS(close(p[0]));

    /* rt_tgsigqueueinfo: to its own thread. */
    siginfo_t si;
    memset(&si, 0, sizeof si);
    si.si_code = SI_QUEUE;
    si.si_pid = getpid();
    si.si_value.sival_int = 55;
    long tid = syscall(SYS_gettid);
    CHECK_EQ(syscall(SYS_rt_tgsigqueueinfo, getpid(), tid, rt2, &si), 0);
    CHECK_ERRNO(syscall(SYS_rt_tgsigqueueinfo, 0, tid, rt2, &si), EINVAL);
    CHECK_ERRNO(syscall(SYS_rt_tgsigqueueinfo, getpid(), -1, rt2, &si), EINVAL);
    CHECK_ERRNO(syscall(SYS_rt_tgsigqueueinfo, getpid(), tid, rt2, (void *)8), EFAULT);
    CHECK_ERRNO(syscall(SYS_rt_tgsigqueueinfo, getpid(), 0x3fffffff, rt2, &si), ESRCH);
    siginfo_t got;
    CHECK_EQ(take(one(rt2), &got), rt2);
    CHECK_EQ(got.si_code, SI_QUEUE);
    CHECK_EQ(got.si_value.sival_int, 55);
    CHECK_ERRNO(take(one(rt2), &got), EAGAIN);
    SAY("sigqueue to a child with si_pid/si_uid/SI_QUEUE; forged si_code EPERM; "
        "rt_tgsigqueueinfo; ESRCH, EINVAL, EFAULT");
}

static void waiting(void)
{
    mask(SIG_BLOCK, test_set());
    for (int i = 1; i <= 3; i++)
        queue(getpid(), rt2, i);
    queue(getpid(), rt1, 9);
    CHECK_SYS(kill(getpid(), SIGUSR2));
    CHECK_SYS(kill(getpid(), SIGUSR2));
    sigset_t s = test_set();
    siginfo_t si;
    CHECK_EQ(sigwaitinfo(&s, &si), SIGUSR2);
    CHECK_EQ(si.si_code, SI_USER);
    CHECK_EQ(si.si_pid, getpid());
    CHECK_EQ(sigwaitinfo(&s, &si), rt1);
    CHECK_EQ(si.si_value.sival_int, 9);
    for (int i = 1; i <= 3; i++) {
        struct timespec ts = {5, 0};
        CHECK_EQ(sigtimedwait(&s, &si, &ts), rt2);
        CHECK_EQ(si.si_value.sival_int, i);
        CHECK_EQ(si.si_code, SI_QUEUE);
    }
    CHECK_ERRNO(take(s, &si), EAGAIN);
    struct timespec short_wait = {0, 10000000};
    CHECK_ERRNO(sigtimedwait(&s, &si, &short_wait), EAGAIN);
    struct timespec bad = {0, 1000000000};
    CHECK_ERRNO(sigtimedwait(&s, &si, &bad), EINVAL);
    CHECK_ERRNO(syscall(SYS_rt_sigtimedwait, &s, &si, NULL, 4), EINVAL);
    CHECK_ERRNO(syscall(SYS_rt_sigtimedwait, (void *)8, &si, NULL, 8), EFAULT);
    CHECK_ERRNO(syscall(SYS_rt_sigtimedwait, &s, &si, (void *)0xffff800000000000UL, 8), EFAULT);
    /* A bad siginfo pointer: the signal is taken, then EFAULT (as Linux). */
    queue(getpid(), rt1, 1);
    CHECK_ERRNO(syscall(SYS_rt_sigtimedwait, &s, (void *)8, NULL, 8), EFAULT);
    CHECK_ERRNO(take(s, &si), EAGAIN);
    SAY("sigwaitinfo/sigtimedwait: one queued signal at a time, lowest first; EAGAIN, EINVAL, "
        "EFAULT");
}

static void limit(void)
{
    struct rlimit old, low;
    CHECK_SYS(getrlimit(RLIMIT_SIGPENDING, &old));
    if (on_reef())
        CHECK(old.rlim_cur == 4096 && old.rlim_max == 4096);
    CHECK(old.rlim_cur >= 64);
    low = old;
    low.rlim_cur = 64;
    CHECK_SYS(setrlimit(RLIMIT_SIGPENDING, &low));
    struct rlimit now;
    CHECK_SYS(getrlimit(RLIMIT_SIGPENDING, &now));
    CHECK_EQ(now.rlim_cur, 64);
    mask(SIG_BLOCK, test_set());
    int n = 0;
    union sigval v;
    for (;;) {
        v.sival_int = n;
        if (sigqueue(getpid(), rt1, v) != 0) {
            CHECK_EQ(errno, EAGAIN);
            break;
        }
        CHECK(++n <= 64);
    }
    /* Linux counts a user's queued signals in all of its processes; Reef a process's. */
    if (on_reef())
        CHECK_EQ(n, 64);
    CHECK(n >= 32);
    CHECK_ERRNO(syscall(SYS_tgkill, getpid(), syscall(SYS_gettid), rt2), EAGAIN);
    CHECK_ERRNO(queue_info(getpid(), rt2, SI_QUEUE, 1), EAGAIN);
    CHECK_SYS(kill(getpid(), rt1));
    sigset_t s = one(rt1);
    siginfo_t si;
    for (int i = 0; i < n; i++) {
        CHECK_EQ(take(s, &si), rt1);
        CHECK_EQ(si.si_value.sival_int, i);
    }
    CHECK_ERRNO(take(s, &si), EAGAIN);
    queue(getpid(), rt1, 5);
    CHECK_EQ(take(s, &si), rt1);
    CHECK_EQ(si.si_value.sival_int, 5);
    CHECK_SYS(setrlimit(RLIMIT_SIGPENDING, &old));
    low.rlim_cur = old.rlim_max;
    low.rlim_max = old.rlim_max - 1;
    CHECK_ERRNO(setrlimit(RLIMIT_SIGPENDING, &low), EINVAL);
    SAY("RLIMIT_SIGPENDING %llu: lowered to 64, %d queued, then EAGAIN for sigqueue and tgkill "
        "(kill is merged); all %d taken back in order",
        (unsigned long long)old.rlim_cur, n, n);
}

static int sfd_read(int fd, struct signalfd_siginfo *out, int max)
{
    ssize_t r = read(fd, out, sizeof *out * max);
    if (r < 0)
        return -1;
    CHECK_EQ(r % sizeof *out, 0);
    return r / sizeof *out;
}

static void check_ssi(const struct signalfd_siginfo *s, int sig, int code, int pid, int value)
{
    if ((int)s->ssi_signo != sig || s->ssi_code != code || (int)s->ssi_pid != pid ||
        s->ssi_uid != getuid() || (code == SI_QUEUE && (s->ssi_int != value ||
                                                          s->ssi_ptr != (uint64_t)value)))
        FAIL("signalfd read signal %u code %d pid %u uid %u int %d; expected %d code %d pid %d "
             "value %d",
             s->ssi_signo, s->ssi_code, s->ssi_pid, s->ssi_uid, s->ssi_int, sig, code, pid,
             value);
}

static short revents(int fd)
{
    struct pollfd p = {.fd = fd, .events = POLLIN};
    CHECK_SYS(poll(&p, 1, 0));
    return p.revents;
}

static volatile int usr2_seen;
static void on_usr2(int sig)
{
    (void)sig;
    usr2_seen++;
}

static void signalfds(void)
{
    mask(SIG_BLOCK, test_set());
    sigset_t m = one(rt1);
    sigaddset(&m, rt2);
    sigaddset(&m, SIGUSR1);
    sigaddset(&m, SIGKILL);
    int fd = CHECK_SYS(signalfd(-1, &m, SFD_NONBLOCK | SFD_CLOEXEC));
    CHECK_EQ(fcntl(fd, F_GETFD), FD_CLOEXEC);
    CHECK(fcntl(fd, F_GETFL) & O_NONBLOCK);
    struct signalfd_siginfo r[8];
    CHECK_ERRNO(read(fd, r, sizeof r), EAGAIN);
    CHECK_EQ(revents(fd), 0);
    int ep = CHECK_SYS(epoll_create1(0));
    struct epoll_event ev = {.events = EPOLLIN, .data.u64 = 9};
    CHECK_SYS(epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev));
    CHECK_EQ(epoll_wait(ep, &ev, 1, 0), 0);
    queue(getpid(), rt1, 5);
    CHECK_EQ(revents(fd), POLLIN);
    CHECK_EQ(epoll_wait(ep, &ev, 1, 0), 1);
    CHECK(ev.events == EPOLLIN && ev.data.u64 == 9);
    CHECK_EQ(sfd_read(fd, r, 1), 1);
    check_ssi(&r[0], rt1, SI_QUEUE, getpid(), 5);
    CHECK_EQ(revents(fd), 0);
    SAY("signalfd: EAGAIN, then poll and epoll readiness, one record");

    /* Many in one read, in delivery order; a short buffer takes what fits. */
    for (int i = 1; i <= 3; i++)
        queue(getpid(), rt2, i);
    queue(getpid(), rt1, 4);
    CHECK_SYS(kill(getpid(), SIGUSR1));
    CHECK_SYS(kill(getpid(), SIGUSR1));
    CHECK_EQ(sfd_read(fd, r, 8), 5);
    CHECK_EQ((int)r[0].ssi_signo, SIGUSR1);
    CHECK_EQ(r[0].ssi_code, SI_USER);
    CHECK_EQ((int)r[0].ssi_pid, getpid());
    check_ssi(&r[1], rt1, SI_QUEUE, getpid(), 4);
    for (int i = 1; i <= 3; i++)
        check_ssi(&r[1 + i], rt2, SI_QUEUE, getpid(), i);
    for (int i = 1; i <= 3; i++)
        queue(getpid(), rt2, i);
    CHECK_EQ(read(fd, r, 2 * sizeof r[0] + 50), 2 * (ssize_t)sizeof r[0]);
    CHECK_ERRNO(read(fd, r, sizeof r[0] - 1), EINVAL);
    CHECK_EQ(sfd_read(fd, r, 8), 1);
    check_ssi(&r[0], rt2, SI_QUEUE, getpid(), 3);
    SAY("signalfd: 5 records in one read (SIGUSR1 once, then lowest first, in order); a "
        "buffer of 2.4 takes 2; EINVAL below one");

    /* A thread's own signal; a signal outside the mask stays pending until the mask has it. */
    CHECK_SYS(syscall(SYS_tgkill, getpid(), syscall(SYS_gettid), rt1));
    CHECK_SYS(kill(getpid(), SIGUSR2));
    CHECK_EQ(sfd_read(fd, r, 8), 1);
    CHECK_EQ((int)r[0].ssi_signo, rt1);
    CHECK_EQ(r[0].ssi_code, SI_TKILL);
    CHECK_ERRNO(read(fd, r, sizeof r), EAGAIN);
    sigset_t p;
    CHECK_SYS(sigpending(&p));
    CHECK(sigismember(&p, SIGUSR2));
    sigset_t m2 = one(SIGUSR2);
    CHECK_EQ(signalfd(fd, &m2, 0), fd);
    CHECK_EQ(revents(fd), POLLIN);
    CHECK_EQ(sfd_read(fd, r, 8), 1);
    CHECK_EQ((int)r[0].ssi_signo, SIGUSR2);
    CHECK_SYS(signalfd(fd, &m, 0));
    SAY("signalfd: a thread's tgkill (SI_TKILL); the mask changed by signalfd(fd, ...)");

    /* Errors. */
    uint64_t word = 0;
    CHECK_ERRNO(write(fd, &word, sizeof word), EINVAL);
    int e = CHECK_SYS(epoll_create1(0));
    CHECK_ERRNO(signalfd(e, &m, 0), EINVAL);
    CHECK_ERRNO(signalfd(9999, &m, 0), EBADF);
    CHECK_ERRNO(signalfd(-2, &m, 0), EBADF);
    CHECK_ERRNO(signalfd(-1, &m, 1), EINVAL);
    CHECK_ERRNO(syscall(SYS_signalfd4, -1, &m, 4, 0), EINVAL);
    CHECK_ERRNO(syscall(SYS_signalfd4, -1, (void *)8, 8, 0), EFAULT);
    CHECK_ERRNO(syscall(SYS_signalfd4, -1, (void *)0xffff800000000000UL, 8, 0), EFAULT);
    CHECK_ERRNO(syscall(SYS_signalfd, fd, (void *)8, 8), EFAULT);
    CHECK_ERRNO(syscall(SYS_read, fd, (void *)0xffff800000000000UL, 128), EFAULT);
    queue(getpid(), rt1, 1);
    /* The signal is taken, then the copy fails (as Linux). */
    CHECK_ERRNO(syscall(SYS_read, fd, (void *)8, 128), EFAULT);
    CHECK_ERRNO(read(fd, r, sizeof r), EAGAIN);
    CHECK_SYS(close(e));
    SAY("signalfd: EINVAL (write, not a signalfd, flags, size), EBADF, EFAULT");

    /* A blocked read, poll and epoll_wait woken by a child's signal. */
    int bfd = CHECK_SYS(signalfd(-1, &m, 0));
    for (int round = 0; round < 3; round++) {
        pid_t pid = CHECK_SYS(fork());
        if (pid == 0) {
            union sigval v = {.sival_int = 70 + round};
            _exit(sigqueue(getppid(), rt1, v) == 0 ? 0 : 1);
        }
        if (round == 1) {
            struct pollfd pf = {.fd = bfd, .events = POLLIN};
            CHECK_EQ(poll(&pf, 1, -1), 1);
            CHECK_EQ(pf.revents, POLLIN);
        } else if (round == 2) {
            CHECK_SYS(epoll_ctl(ep, EPOLL_CTL_DEL, fd, NULL));
            ev.events = EPOLLIN;
            CHECK_SYS(epoll_ctl(ep, EPOLL_CTL_ADD, bfd, &ev));
            CHECK_EQ(epoll_wait(ep, &ev, 1, -1), 1);
        }
        CHECK_EQ(sfd_read(bfd, r, 8), 1);
        check_ssi(&r[0], rt1, SI_QUEUE, pid, 70 + round);
        CHECK_CHILD_EXIT(pid, 0);
    }
    SAY("signalfd: a blocked read, poll and epoll_wait woken by a child's sigqueue");

    /* A handled signal ends a blocked read with EINTR: the child sends SIGUSR2 until told to
     * stop (whether the first comes before or during the read does not matter). */
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_usr2;
    CHECK_SYS(sigaction(SIGUSR2, &sa, NULL));
    mask(SIG_UNBLOCK, one(SIGUSR2));
    volatile int *stop = shared_page(4096);
    *stop = 0;
    pid_t pid = CHECK_SYS(fork());
    if (pid == 0) {
        while (!*stop) {
            kill(getppid(), SIGUSR2);
            sched_yield();
        }
        _exit(0);
    }
    CHECK_ERRNO(read(bfd, r, sizeof r), EINTR);
    *stop = 1;
    CHECK_CHILD_EXIT(pid, 0);
    CHECK(usr2_seen > 0);
    /* Ignored: a last SIGUSR2 still pending goes. */
    sa.sa_handler = SIG_IGN;
    CHECK_SYS(sigaction(SIGUSR2, &sa, NULL));
    mask(SIG_BLOCK, one(SIGUSR2));
    munmap((void *)stop, 4096);
    CHECK_SYS(close(bfd));
    CHECK_SYS(close(ep));
    CHECK_SYS(close(fd));
    SAY("signalfd: a blocked read ends with EINTR for a handled signal");
}

/* Many descriptors and signals: on Reef, the free memory comes back. */
static void hostile(void)
{
    long before = reef_free_bytes();
    mask(SIG_BLOCK, test_set());
    sigset_t m = one(rt1);
    sigaddset(&m, rt2);
    struct rlimit lim;
    CHECK_SYS(getrlimit(RLIMIT_SIGPENDING, &lim));
    int per_round = lim.rlim_cur > 4000 ? 3000 : (int)lim.rlim_cur / 2;
    static struct signalfd_siginfo r[64];
    for (int round = 0; round < 4; round++) {
        int fds[500];
        for (int i = 0; i < 500; i++)
            fds[i] = CHECK_SYS(signalfd(-1, &m, SFD_NONBLOCK));
        int ep = CHECK_SYS(epoll_create1(0));
        struct epoll_event ev = {.events = EPOLLIN};
        for (int i = 0; i < 100; i++)
            CHECK_SYS(epoll_ctl(ep, EPOLL_CTL_ADD, fds[i], &ev));
        for (int i = 0; i < per_round; i++)
            queue(getpid(), i % 2 ? rt2 : rt1, i);
        CHECK_EQ(epoll_wait(ep, &ev, 1, 0), 1);
        int got = 0, next[2] = {0, 1};
        for (;;) {
            int n = sfd_read(fds[got % 500], r, 64);
            if (n < 0) {
                CHECK_EQ(errno, EAGAIN);
                break;
            }
            for (int k = 0; k < n; k++) {
                int which = (int)r[k].ssi_signo == rt2;
                CHECK_EQ(r[k].ssi_int, next[which]);
                next[which] += 2;
            }
            got += n;
        }
        CHECK_EQ(got, per_round);
        CHECK_SYS(close(ep));
        for (int i = 0; i < 500; i++)
            CHECK_SYS(close(fds[i]));
    }
    char what[96];
    snprintf(what, sizeof what, "2000 signal descriptors made and closed, %d signals queued and read",
             4 * per_round);
    CHECK_MEMORY_BACK(before, what);
}

static int reader_pipe[2], ready_pipe[2];

/* Reads one byte from reader_pipe with SIGCHLD unblocked; returns the read's result or -errno. */
static void *reader(void *arg)
{
    (void)arg;
    sigset_t s;
    sigemptyset(&s);
    sigaddset(&s, SIGCHLD);
    pthread_sigmask(SIG_UNBLOCK, &s, NULL);
    char c = 'r';
    if (write(ready_pipe[1], &c, 1) != 1)
        return (void *)(long)-1000;
    long n = read(reader_pipe[0], &c, 1);
    return (void *)(n < 0 ? -(long)errno : n);
}

static pid_t exiting_child(int code)
{
    pid_t pid = CHECK_SYS(fork());
    if (pid == 0)
        _exit(code);
    return pid;
}

static void ignored_but_blocked(void)
{
    signal(SIGCHLD, SIG_DFL);
    sigset_t s;
    sigemptyset(&s);
    sigaddset(&s, SIGCHLD);
    sigset_t old;
    CHECK_SYS(sigprocmask(SIG_BLOCK, &s, &old));
    /* sigwaitinfo takes it. */
    pid_t pid = exiting_child(3);
    siginfo_t si;
    CHECK_EQ(sigwaitinfo(&s, &si), SIGCHLD);
    CHECK_EQ(si.si_pid, pid);
    CHECK_EQ(si.si_code, CLD_EXITED);
    CHECK_EQ(si.si_status, 3);
    CHECK_CHILD_EXIT(pid, 3);
    /* So does a signalfd. */
    int fd = CHECK_SYS(signalfd(-1, &s, SFD_CLOEXEC));
    pid = exiting_child(4);
    struct signalfd_siginfo ssi;
    CHECK_EQ(read(fd, &ssi, sizeof ssi), (ssize_t)sizeof ssi);
    CHECK_EQ(ssi.ssi_signo, SIGCHLD);
    CHECK_EQ((pid_t)ssi.ssi_pid, pid);
    CHECK_CHILD_EXIT(pid, 4);
    CHECK_SYS(close(fd));
    /* A thread reading with SIGCHLD unblocked while this one blocks it: the SIGCHLD may wake
     * the read, which must go on. */
    CHECK_SYS(pipe(reader_pipe));
    CHECK_SYS(pipe(ready_pipe));
    pthread_t t;
    CHECK_EQ(pthread_create(&t, NULL, reader, NULL), 0);
    char c;
    CHECK_EQ(read(ready_pipe[0], &c, 1), 1);
    pid = exiting_child(5);
    CHECK_CHILD_EXIT(pid, 5);
    CHECK_EQ(write(reader_pipe[1], "x", 1), 1);
    void *r;
    CHECK_EQ(pthread_join(t, &r), 0);
    if ((long)r != 1)
        FAIL("the reading thread's read returned %ld (negative: -errno)", (long)r);
    for (int i = 0; i < 2; i++) {
        close(reader_pipe[i]);
        close(ready_pipe[i]);
    }
    /* Whatever SIGCHLD is left pending goes with the mask. */
    sigtimedwait(&s, &si, &(struct timespec){0});
    CHECK_SYS(sigprocmask(SIG_SETMASK, &old, NULL));
    SAY("ignored SIGCHLD kept while blocked: sigwaitinfo and signalfd take it, a reading "
        "thread that does not block it goes on reading");
}

int main(void)
{
    test_begin("sigqueue");
    rt1 = SIGRTMIN + 1;
    rt2 = SIGRTMIN + 2;
    queued();
    other_process();
    waiting();
    limit();
    signalfds();
    ignored_but_blocked();
    hostile();
    PASS();
}
