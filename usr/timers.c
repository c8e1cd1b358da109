/*
 * timers: POSIX per-process timers and the CPU-time interval timers, as Linux has them.
 *
 * - timer_create/settime/gettime/getoverrun/delete (raw system calls, the kernel's int ids):
 *   one-shot and periodic SIGEV_SIGNAL timers taken with sigwaitinfo (si_code SI_TIMER,
 *   si_timerid, si_value, si_overrun); expirations while the signal stays blocked count as
 *   overruns (si_overrun and timer_getoverrun, lower bounds only); TIMER_ABSTIME in the past
 *   fires at once, a monotonic absolute time later; gettime's time left and interval;
 *   settime's old value; a zero value disarms; SIGEV_NONE counts down without a signal; a
 *   NULL sigevent is SIGALRM with the id as the value; SIGEV_THREAD_ID reaches that thread;
 *   SIGEV_THREAD through the C library runs its function; not inherited by fork, deleted by
 *   execve;
 * - setitimer/getitimer ITIMER_VIRTUAL and ITIMER_PROF: SIGVTALRM and SIGPROF after CPU time
 *   spent in user mode (one-shot and periodic, within generous wall-clock bounds), the old
 *   setting, disarming;
 * - the CPU-time clocks: CLOCK_PROCESS_CPUTIME_ID and CLOCK_THREAD_CPUTIME_ID grow by about
 *   the time spun (at least a third of it), not by the time slept (less than half of it), the
 *   thread's never past the process's;
 * - errors: EINVAL for bad clocks, sigevents, timespecs and ids (and after timer_delete),
 *   EFAULT for bad pointers (user page 8, the kernel half);
 * - hostile: 2000 timers made (some with their signal pending) and deleted, timers made until
 *   EAGAIN under a lowered RLIMIT_SIGPENDING, then deleted: free memory comes back.
 */
#include "reef-test.h"

#include <pthread.h>
#include <sys/resource.h>
#include <sys/time.h>

/* The kernel's struct sigevent (the C libraries' differ in naming the thread id). */
struct ksigevent {
    union sigval value;
    int signo;
    int notify;
    int tid;
    int pad[11];
};

#define KSIGEV_SIGNAL 0
#define KSIGEV_NONE 1
#define KSIGEV_THREAD_ID 4
#define MS 1000000LL

static void *const low = (void *)8;
static void *const kernel = (void *)0xffff800000000000UL;

static long t_create(long clock, void *sev, void *id)
{
    return syscall(SYS_timer_create, clock, sev, id);
}

static int make(clockid_t clock, int notify, int sig, long value)
{
    struct ksigevent sev;
    memset(&sev, 0, sizeof sev);
    sev.value.sival_ptr = (void *)value;
    sev.signo = sig;
    sev.notify = notify;
    int id = -1;
    CHECK_SYS(t_create(clock, &sev, &id));
    CHECK(id >= 0);
    return id;
}

static void set(int id, int flags, long long value, long long interval, struct itimerspec *old)
{
    struct itimerspec its = {
        .it_interval = {interval / 1000000000LL, interval % 1000000000LL},
        .it_value = {value / 1000000000LL, value % 1000000000LL},
    };
    CHECK_SYS(syscall(SYS_timer_settime, id, flags, &its, old));
}

static long long ns_of(struct timespec ts)
{
    return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static struct itimerspec get(int id)
{
    struct itimerspec its;
    memset(&its, 0xff, sizeof its);
    CHECK_SYS(syscall(SYS_timer_gettime, id, &its));
    return its;
}

static void del(int id)
{
    CHECK_SYS(syscall(SYS_timer_delete, id));
}

static void block(int sig)
{
    sigset_t s;
    sigemptyset(&s);
    sigaddset(&s, sig);
    CHECK_PT(pthread_sigmask(SIG_BLOCK, &s, NULL));
}

/* Waits (at most `ms` milliseconds) for `sig`; returns its siginfo, or si_signo 0 on none. */
static siginfo_t wait_for(int sig, long ms)
{
    sigset_t s;
    sigemptyset(&s);
    sigaddset(&s, sig);
    struct timespec to = {ms / 1000, (ms % 1000) * 1000000};
    siginfo_t si;
    memset(&si, 0, sizeof si);
    int r;
    while ((r = sigtimedwait(&s, &si, &to)) < 0 && errno == EINTR)
        ;
    if (r < 0) {
        CHECK_EQ(errno, EAGAIN);
        si.si_signo = 0;
    }
    return si;
}

/* Spins until `ms` milliseconds of monotonic time have passed (time passing, not a sleep
 * standing for an event: the timers must expire meanwhile). */
static void spin_ms(long ms)
{
    long long end = now_ns() + ms * MS;
    while (now_ns() < end)
        ;
}

static void check_timer_signal(siginfo_t si, int sig, int id, long value)
{
    CHECK_EQ(si.si_signo, sig);
    CHECK_EQ(si.si_code, SI_TIMER);
    CHECK_EQ(si.si_timerid, id);
    CHECK_EQ((long)si.si_value.sival_ptr, value);
}

static void basic(int sig)
{
    int id = make(CLOCK_MONOTONIC, KSIGEV_SIGNAL, sig, 0x1234);
    struct itimerspec its = get(id);
    CHECK_EQ(ns_of(its.it_value), 0);
    CHECK_EQ(ns_of(its.it_interval), 0);
    long long t0 = now_ns();
    set(id, 0, 30 * MS, 0, NULL);
    its = get(id);
    CHECK(ns_of(its.it_value) > 0 && ns_of(its.it_value) <= 30 * MS);
    siginfo_t si = wait_for(sig, 10000);
    check_timer_signal(si, sig, id, 0x1234);
    CHECK_EQ(si.si_overrun, 0);
    CHECK(now_ns() - t0 >= 25 * MS);
    its = get(id);
    CHECK_EQ(ns_of(its.it_value), 0);
    CHECK_EQ(syscall(SYS_timer_getoverrun, id), 0);
    SAY("one-shot SIGEV_SIGNAL: SI_TIMER, si_timerid, si_value, no overrun, disarmed after");

    /* Periodic: three signals, gettime shows the interval and at most one interval left. */
    set(id, 0, 10 * MS, 20 * MS, NULL);
    for (int i = 0; i < 3; i++) {
        si = wait_for(sig, 10000);
        check_timer_signal(si, sig, id, 0x1234);
    }
    its = get(id);
    CHECK_EQ(ns_of(its.it_interval), 20 * MS);
    CHECK(ns_of(its.it_value) > 0 && ns_of(its.it_value) <= 20 * MS);
    struct itimerspec old;
    memset(&old, 0xff, sizeof old);
    set(id, 0, 0, 5 * MS, &old);
    CHECK_EQ(ns_of(old.it_interval), 20 * MS);
    CHECK(ns_of(old.it_value) > 0 && ns_of(old.it_value) <= 20 * MS);
    its = get(id);
    CHECK_EQ(ns_of(its.it_value), 0);
    CHECK_EQ(ns_of(its.it_interval), 0);
    wait_for(sig, 0); /* one that came before the disarm */
    CHECK_EQ(wait_for(sig, 60).si_signo, 0);
    SAY("periodic: three signals, gettime's interval and time left, settime's old value, "
        "a zero value disarms");

    /* Overruns: the signal stays blocked while the timer expires many times. */
    set(id, 0, 10 * MS, 10 * MS, NULL);
    spin_ms(200);
    si = wait_for(sig, 10000);
    check_timer_signal(si, sig, id, 0x1234);
    CHECK(si.si_overrun >= 3);
    CHECK_EQ(syscall(SYS_timer_getoverrun, id), si.si_overrun);
    SAY("overruns while blocked: si_overrun %d, timer_getoverrun the same", si.si_overrun);
    set(id, 0, 0, 0, NULL);
    wait_for(sig, 0);
    del(id);

    /* Absolute times: on CLOCK_REALTIME in the past, at once; on CLOCK_MONOTONIC later. */
    id = make(CLOCK_REALTIME, KSIGEV_SIGNAL, sig, 7);
    struct timespec rt;
    CHECK_SYS(clock_gettime(CLOCK_REALTIME, &rt));
    set(id, TIMER_ABSTIME, ns_of(rt) - 1000 * MS, 0, NULL);
    check_timer_signal(wait_for(sig, 10000), sig, id, 7);
    del(id);
    id = make(CLOCK_BOOTTIME, KSIGEV_SIGNAL, sig, 8);
    del(id);
    id = make(CLOCK_MONOTONIC, KSIGEV_SIGNAL, sig, 9);
    t0 = now_ns();
    set(id, TIMER_ABSTIME, t0 + 30 * MS, 0, NULL);
    check_timer_signal(wait_for(sig, 10000), sig, id, 9);
    CHECK(now_ns() - t0 >= 25 * MS);
    del(id);
    SAY("TIMER_ABSTIME: a past real time fires at once, a monotonic one when it comes");

    /* SIGEV_NONE: counts down, no signal. */
    id = make(CLOCK_MONOTONIC, KSIGEV_NONE, 0, 0);
    set(id, 0, 10000 * MS, 0, NULL);
    long long left1 = ns_of(get(id).it_value);
    spin_ms(30);
    long long left2 = ns_of(get(id).it_value);
    CHECK(left1 > 0 && left1 <= 10000 * MS);
    CHECK(left2 > 0 && left2 < left1);
    set(id, 0, 10 * MS, 0, NULL);
    long long end = now_ns() + 10000 * MS;
    while (ns_of(get(id).it_value) != 0 && now_ns() < end)
        ;
    CHECK_EQ(ns_of(get(id).it_value), 0);
    sigset_t pend;
    CHECK_SYS(sigpending(&pend));
    CHECK(!sigismember(&pend, sig));
    del(id);
    SAY("SIGEV_NONE: gettime counts down to 0, no signal");

    /* A NULL sigevent: SIGALRM with the id as its value. */
    block(SIGALRM);
    CHECK_SYS(t_create(CLOCK_MONOTONIC, NULL, &id));
    set(id, 0, 10 * MS, 0, NULL);
    check_timer_signal(wait_for(SIGALRM, 10000), SIGALRM, id, id);
    del(id);
    SAY("NULL sigevent: SIGALRM, si_value the timer id");
}

static atomic_int thread_tid, thread_got_code, thread_got_tid;
static int thread_sig;

static void *waiter(void *arg)
{
    (void)arg;
    atomic_store(&thread_tid, (int)syscall(SYS_gettid));
    siginfo_t si = wait_for(thread_sig, 10000);
    atomic_store(&thread_got_code, si.si_signo == thread_sig ? si.si_code : -1);
    atomic_store(&thread_got_tid, (int)syscall(SYS_gettid));
    return NULL;
}

static atomic_int notified;
static void *notified_ptr;

static void notify_fn(union sigval v)
{
    notified_ptr = v.sival_ptr;
    atomic_fetch_add(&notified, 1);
}

static void threads(int sig)
{
    /* SIGEV_THREAD_ID: only that thread (which waits for it) gets the signal. */
    thread_sig = sig;
    pthread_t th;
    CHECK_PT(pthread_create(&th, NULL, waiter, NULL));
    long long end = now_ns() + 10000 * MS;
    while (atomic_load(&thread_tid) == 0 && now_ns() < end)
        sched_yield();
    CHECK(atomic_load(&thread_tid) != 0);
    struct ksigevent sev;
    memset(&sev, 0, sizeof sev);
    sev.signo = sig;
    sev.notify = KSIGEV_THREAD_ID;
    sev.tid = atomic_load(&thread_tid);
    sev.value.sival_int = 77;
    int id = -1;
    CHECK_SYS(t_create(CLOCK_MONOTONIC, &sev, &id));
    set(id, 0, 20 * MS, 0, NULL);
    CHECK_PT(pthread_join(th, NULL));
    CHECK_EQ(atomic_load(&thread_got_code), SI_TIMER);
    CHECK_EQ(atomic_load(&thread_got_tid), atomic_load(&thread_tid));
    del(id);
    sev.tid = getppid();
    CHECK_ERRNO(t_create(CLOCK_MONOTONIC, &sev, &id), EINVAL);
    sev.tid = 0x7fffffff;
    CHECK_ERRNO(t_create(CLOCK_MONOTONIC, &sev, &id), EINVAL);
    SAY("SIGEV_THREAD_ID: the signal reaches that thread; another process's thread EINVAL");

    /* SIGEV_THREAD through the C library (a helper thread on SIGEV_THREAD_ID). */
    struct sigevent lsev;
    memset(&lsev, 0, sizeof lsev);
    lsev.sigev_notify = SIGEV_THREAD;
    lsev.sigev_notify_function = notify_fn;
    lsev.sigev_value.sival_ptr = &notified;
    timer_t t;
    CHECK_SYS(timer_create(CLOCK_MONOTONIC, &lsev, &t));
    struct itimerspec its = {{0, 20 * MS}, {0, 20 * MS}};
    CHECK_SYS(timer_settime(t, 0, &its, NULL));
    end = now_ns() + 10000 * MS;
    while (atomic_load(&notified) < 3 && now_ns() < end)
        sched_yield();
    CHECK(atomic_load(&notified) >= 3);
    CHECK(notified_ptr == &notified);
    CHECK_SYS(timer_delete(t));
    SAY("SIGEV_THREAD: the C library's thread ran the function %d times", atomic_load(&notified));
}

static void lifetime(int sig, const char *self)
{
    /* Not inherited by fork. */
    int id = make(CLOCK_MONOTONIC, KSIGEV_SIGNAL, sig, 1);
    set(id, 0, 10000 * MS, 0, NULL);
    pid_t pid = CHECK_SYS(fork());
    if (pid == 0) {
        struct itimerspec its;
        if (syscall(SYS_timer_gettime, id, &its) != -1 || errno != EINVAL)
            _exit(1);
        _exit(0);
    }
    CHECK_CHILD_EXIT(pid, 0);
    CHECK(ns_of(get(id).it_value) > 0);
    /* Deleted by execve (a child that execs this program with "probe ID"). */
    pid = CHECK_SYS(fork());
    if (pid == 0) {
        int cid = make(CLOCK_MONOTONIC, KSIGEV_SIGNAL, sig, 1);
        set(cid, 0, 10000 * MS, 0, NULL);
        char arg[16];
        snprintf(arg, sizeof arg, "%d", cid);
        execl(self, self, "probe", arg, (char *)NULL);
        _exit(2);
    }
    CHECK_CHILD_EXIT(pid, 0);
    del(id);
    SAY("timers not inherited by fork, deleted by execve");
}

static volatile sig_atomic_t cpu_signals;

static void on_cpu_timer(int sig)
{
    (void)sig;
    cpu_signals++;
}

/* Burns user CPU time until `want` signals came (or 20 s of wall time passed). */
static void burn_until(int want)
{
    long long end = now_ns() + 20000 * MS;
    volatile unsigned long x = 0;
    while (cpu_signals < want && now_ns() < end)
        for (int i = 0; i < 100000; i++)
            x += i;
    CHECK(cpu_signals >= want);
}

static void cpu_timers(void)
{
    int which[2] = {ITIMER_VIRTUAL, ITIMER_PROF}, sigs[2] = {SIGVTALRM, SIGPROF};
    for (int k = 0; k < 2; k++) {
        set_handler(sigs[k], on_cpu_timer, SA_RESTART);
        struct itimerval v = {{0, 0}, {0, 50000}}, old, now;
        memset(&old, 0xff, sizeof old);
        cpu_signals = 0;
        CHECK_SYS(setitimer(which[k], &v, &old));
        CHECK_EQ(old.it_value.tv_sec + old.it_value.tv_usec, 0);
        CHECK_SYS(getitimer(which[k], &now));
        /* Linux adds a tick (at most 10 ms) to the first expiry, so it cannot come early. */
        CHECK(now.it_value.tv_sec == 0 && now.it_value.tv_usec > 0 &&
              now.it_value.tv_usec <= 60000);
        burn_until(1);
        CHECK_SYS(getitimer(which[k], &now));
        CHECK_EQ(now.it_value.tv_sec + now.it_value.tv_usec, 0);
        /* Periodic, then the old setting and disarming. */
        struct itimerval p = {{0, 20000}, {0, 20000}};
        cpu_signals = 0;
        CHECK_SYS(setitimer(which[k], &p, NULL));
        burn_until(3);
        struct itimerval zero = {{0, 0}, {0, 0}};
        CHECK_SYS(setitimer(which[k], &zero, &old));
        CHECK_EQ(old.it_interval.tv_usec, 20000);
        CHECK(old.it_value.tv_sec == 0 && old.it_value.tv_usec > 0 &&
              old.it_value.tv_usec <= 20000);
        CHECK_SYS(getitimer(which[k], &now));
        CHECK_EQ(now.it_value.tv_sec + now.it_value.tv_usec + now.it_interval.tv_usec, 0);
        set_handler(sigs[k], SIG_DFL, 0);
    }
    CHECK_ERRNO(syscall(SYS_setitimer, 7, NULL, NULL), EINVAL);
    SAY("ITIMER_VIRTUAL and ITIMER_PROF: SIGVTALRM and SIGPROF after CPU time, periodic, old "
        "settings, disarming");
}

static long long cpu_ns(clockid_t c)
{
    struct timespec ts;
    CHECK_SYS(clock_gettime(c, &ts));
    return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void cpu_clocks(void)
{
    long long p0 = cpu_ns(CLOCK_PROCESS_CPUTIME_ID), t0 = cpu_ns(CLOCK_THREAD_CPUTIME_ID);
    spin_ms(300);
    long long p1 = cpu_ns(CLOCK_PROCESS_CPUTIME_ID), t1 = cpu_ns(CLOCK_THREAD_CPUTIME_ID);
    if (p1 - p0 < 100 * MS || t1 - t0 < 100 * MS)
        FAIL("300 ms spun: the CPU-time clocks grew by %lld and %lld ms", (p1 - p0) / MS,
             (t1 - t0) / MS);
    CHECK(t1 <= p1);
    struct timespec nap = {0, 200 * MS};
    CHECK_SYS(nanosleep(&nap, NULL));
    long long p2 = cpu_ns(CLOCK_PROCESS_CPUTIME_ID);
    if (p2 - p1 >= 100 * MS)
        FAIL("200 ms asleep: the process's CPU-time clock grew by %lld ms", (p2 - p1) / MS);
    struct timespec res;
    CHECK_SYS(clock_getres(CLOCK_PROCESS_CPUTIME_ID, &res));
    CHECK(res.tv_sec == 0 && res.tv_nsec > 0 && res.tv_nsec <= 10 * MS);
    SAY("CPU-time clocks: 300 ms spun counted %lld ms (thread %lld ms), 200 ms asleep %lld ms",
        (p1 - p0) / MS, (t1 - t0) / MS, (p2 - p1) / MS);
}

static void errors(int sig)
{
    int id = -1;
    CHECK_ERRNO(t_create(99, NULL, &id), EINVAL);
    CHECK_ERRNO(t_create(10, NULL, &id), EINVAL);
    struct ksigevent sev;
    memset(&sev, 0, sizeof sev);
    sev.notify = 99;
    sev.signo = sig;
    CHECK_ERRNO(t_create(CLOCK_MONOTONIC, &sev, &id), EINVAL);
    sev.notify = KSIGEV_SIGNAL;
    sev.signo = 0;
    CHECK_ERRNO(t_create(CLOCK_MONOTONIC, &sev, &id), EINVAL);
    sev.signo = 65;
    CHECK_ERRNO(t_create(CLOCK_MONOTONIC, &sev, &id), EINVAL);
    sev.signo = sig;
    CHECK_ERRNO(t_create(CLOCK_MONOTONIC, low, &id), EFAULT);
    CHECK_ERRNO(t_create(CLOCK_MONOTONIC, kernel, &id), EFAULT);
    CHECK_ERRNO(t_create(CLOCK_MONOTONIC, &sev, low), EFAULT);
    CHECK_ERRNO(t_create(CLOCK_MONOTONIC, &sev, kernel), EFAULT);

    id = make(CLOCK_MONOTONIC, KSIGEV_SIGNAL, sig, 0);
    struct itimerspec bad = {{0, 0}, {0, 1000000000}};
    CHECK_ERRNO(syscall(SYS_timer_settime, id, 0, &bad, NULL), EINVAL);
    bad.it_value.tv_nsec = 0;
    bad.it_value.tv_sec = -1;
    CHECK_ERRNO(syscall(SYS_timer_settime, id, 0, &bad, NULL), EINVAL);
    bad.it_value.tv_sec = 1;
    bad.it_interval.tv_nsec = -1;
    CHECK_ERRNO(syscall(SYS_timer_settime, id, 0, &bad, NULL), EINVAL);
    CHECK_ERRNO(syscall(SYS_timer_settime, id, 0, NULL, NULL), EINVAL);
    CHECK_ERRNO(syscall(SYS_timer_settime, id, 0, low, NULL), EFAULT);
    CHECK_ERRNO(syscall(SYS_timer_settime, id, 0, kernel, NULL), EFAULT);
    CHECK_ERRNO(syscall(SYS_timer_gettime, id, low), EFAULT);
    CHECK_ERRNO(syscall(SYS_timer_gettime, id, kernel), EFAULT);
    struct itimerspec off = {{0, 0}, {0, 0}};
    CHECK_ERRNO(syscall(SYS_timer_settime, id, 0, &off, low), EFAULT);
    CHECK_ERRNO(syscall(SYS_timer_settime, id, 0, &off, kernel), EFAULT);
    del(id);
    struct itimerspec its;
    CHECK_ERRNO(syscall(SYS_timer_settime, id, 0, &off, NULL), EINVAL);
    CHECK_ERRNO(syscall(SYS_timer_gettime, id, &its), EINVAL);
    CHECK_ERRNO(syscall(SYS_timer_getoverrun, id), EINVAL);
    CHECK_ERRNO(syscall(SYS_timer_delete, id), EINVAL);
    CHECK_ERRNO(syscall(SYS_timer_delete, -1), EINVAL);
    CHECK_ERRNO(syscall(SYS_timer_gettime, 0x7fffffff, &its), EINVAL);
    CHECK_ERRNO(syscall(SYS_getitimer, ITIMER_VIRTUAL, low), EFAULT);
    CHECK_ERRNO(syscall(SYS_setitimer, ITIMER_PROF, low, NULL), EFAULT);
    SAY("EINVAL for bad clocks, sigevents, timespecs and ids; EFAULT for bad pointers");
}

static void hostile(int sig)
{
    long before = reef_free_bytes();
    int ids[200];
    for (int round = 0; round < 10; round++) {
        for (int i = 0; i < 200; i++) {
            ids[i] = make(i % 2 ? CLOCK_REALTIME : CLOCK_MONOTONIC,
                          i % 3 ? KSIGEV_SIGNAL : KSIGEV_NONE, sig, i);
            /* Some fire at once and leave their signal pending, some wait, some never run. */
            if (i % 4 == 1)
                set(ids[i], 0, 1, 0, NULL);
            else if (i % 4 == 2)
                set(ids[i], 0, 10000 * MS, 10 * MS, NULL);
        }
        spin_ms(20);
        for (int i = 0; i < 200; i++)
            del(ids[i]);
    }
    CHECK_EQ(wait_for(sig, 0).si_signo, 0);
    SAY("2000 timers made and deleted, their pending signals with them");

    /* Timers until EAGAIN: each holds one unit of RLIMIT_SIGPENDING. */
    struct rlimit saved, low_limit;
    CHECK_SYS(getrlimit(RLIMIT_SIGPENDING, &saved));
    low_limit = saved;
    low_limit.rlim_cur = 300;
    CHECK_SYS(setrlimit(RLIMIT_SIGPENDING, &low_limit));
    static int many[400];
    int n = 0;
    for (; n < 400; n++) {
        int id;
        if (t_create(CLOCK_MONOTONIC, NULL, &id) < 0) {
            CHECK_EQ(errno, EAGAIN);
            break;
        }
        many[n] = id;
        set(id, 0, 10000 * MS, 0, NULL);
    }
    CHECK(n < 400);
    if (on_reef()) /* (a C library's SIGEV_THREAD helper may still hold its timer) */
        CHECK(n >= 298 && n <= 300);
    for (int i = 0; i < n; i++)
        del(many[i]);
    CHECK_SYS(setrlimit(RLIMIT_SIGPENDING, &saved));
    long after = reef_free_bytes();
    if (after < before - (2L << 20))
        FAIL("free memory %ld KiB before, %ld KiB after", before >> 10, after >> 10);
    SAY("%d timers until EAGAIN under RLIMIT_SIGPENDING 300, all deleted; free memory %ld KiB "
        "before, %ld KiB after",
        n, before >> 10, after >> 10);
}

int main(int argc, char **argv)
{
    if (argc == 3 && strcmp(argv[1], "probe") == 0) {
        /* The execve child of lifetime(): its timer must be gone. */
        struct itimerspec its;
        if (syscall(SYS_timer_gettime, atoi(argv[2]), &its) != -1 || errno != EINVAL)
            return 1;
        return 0;
    }
    test_begin("timers");
    int sig = SIGRTMIN + 4;
    block(sig);
    basic(sig);
    threads(sig);
    lifetime(sig, self_path(argv[0]));
    cpu_timers();
    cpu_clocks();
    errors(sig);
    hostile(sig);
    PASS();
}
