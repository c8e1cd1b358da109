/*
 * sched: priorities and scheduling policies, as Linux answers for them.
 *
 * - getpriority/setpriority: a thread's nice value (PRIO_PROCESS), a process group's
 *   (PRIO_PGRP), a user's (PRIO_USER); clamped to -20..19; inherited by a new thread and a fork
 *   child; shown in /proc/self/stat; as user 1000: raising its nice value is allowed, lowering
 *   it EACCES, another user's process EPERM; ESRCH, EINVAL;
 * - sched_getscheduler/sched_setscheduler/sched_getparam/sched_setparam: SCHED_OTHER with
 *   priority 0 at the start, SCHED_BATCH and SCHED_IDLE taken and reported, a priority other
 *   than 0 for them EINVAL, an unknown policy EINVAL, as user 1000 SCHED_FIFO EPERM and
 *   SCHED_IDLE not left (EPERM); sched_get_priority_max/min; sched_rr_get_interval; a negative
 *   pid EINVAL, a missing one ESRCH, bad pointers EFAULT;
 * - membarrier: the query lists the global and private commands, a private barrier before
 *   its registration is EPERM and after it succeeds (also with SYNC_CORE), the global one
 *   succeeds while threads run on other cores, unknown commands and flags EINVAL.
 */
#include "reef-test.h"

#include <pthread.h>
#include <sched.h>
#include <sys/resource.h>

#ifndef SCHED_IDLE
#define SCHED_IDLE 5
#endif
#ifndef SCHED_BATCH
#define SCHED_BATCH 3
#endif

/* Field 19 (nice) of /proc/self/task/<tid>/stat. */
static long stat_nice(pid_t tid)
{
    char path[64], buf[512];
    snprintf(path, sizeof path, "/proc/self/task/%d/stat", (int)tid);
    FILE *f = fopen(path, "r");
    CHECK(f != NULL);
    CHECK(fgets(buf, sizeof buf, f) != NULL);
    fclose(f);
    char *p = strrchr(buf, ')');
    CHECK(p != NULL);
    /* After ") ": fields 3.. ; nice is field 19, the 17th after the name. */
    long v = 0;
    p += 2;
    for (int field = 3; field <= 19; field++) {
        char *end;
        v = strtol(p, &end, 10);
        if (field == 3)
            end = p + 1; /* the state letter */
        p = end + 1;
    }
    return v;
}

static void *thread_nice(void *arg)
{
    (void)arg;
    errno = 0;
    long n = getpriority(PRIO_PROCESS, 0);
    return (void *)(errno ? -100 : n);
}

static void priorities(void)
{
    pid_t me = getpid();
    /* Its own group, so that PRIO_PGRP names this process alone (a session leader, as init
     * on Reef, leads its group already: EPERM). */
    if (getsid(0) != me)
        CHECK_SYS(setpgid(0, 0));
    errno = 0;
    CHECK_EQ(getpriority(PRIO_PROCESS, 0), 0);
    CHECK_EQ(errno, 0);
    CHECK_SYS(setpriority(PRIO_PROCESS, 0, 5));
    CHECK_EQ(getpriority(PRIO_PROCESS, me), 5);
    CHECK_EQ(stat_nice(me), 5);
    CHECK_SYS(setpriority(PRIO_PROCESS, 0, 7));
    /* Inherited by a thread and a fork child. */
    pthread_t t;
    CHECK_EQ(pthread_create(&t, NULL, thread_nice, NULL), 0);
    void *r;
    CHECK_EQ(pthread_join(t, &r), 0);
    CHECK_EQ((long)r, 7);
    pid_t pid = CHECK_SYS(fork());
    if (pid == 0)
        _exit(getpriority(PRIO_PROCESS, 0) == 7 ? 0 : 1);
    CHECK_CHILD_EXIT(pid, 0);
    /* A group and a user. */
    CHECK_EQ(getpriority(PRIO_PGRP, 0), 7);
    CHECK_SYS(setpriority(PRIO_PGRP, getpgrp(), 8));
    CHECK_EQ(getpriority(PRIO_PROCESS, 0), 8);
    errno = 0;
    CHECK(getpriority(PRIO_USER, 0) <= 8);
    CHECK_EQ(errno, 0);
    /* Errors. */
    CHECK_ERRNO(getpriority(3, 0), EINVAL);
    CHECK_ERRNO(setpriority(PRIO_PROCESS, 0x3fffffff, 1), ESRCH);
    CHECK_ERRNO(getpriority(PRIO_PGRP, 0x3fffffff), ESRCH);
    /* The raw call answers 20 - nice. */
    CHECK_EQ(syscall(SYS_getpriority, PRIO_PROCESS, 0), 12);
    if (getuid() == 0) {
        CHECK_SYS(setpriority(PRIO_PROCESS, 0, -5));
        CHECK_EQ(getpriority(PRIO_PROCESS, 0), -5);
        pid = CHECK_SYS(fork());
        if (pid == 0) {
            if (setpriority(PRIO_PROCESS, 0, 0) != 0 || setuid(1000) != 0)
                _exit(2);
            if (setpriority(PRIO_PROCESS, 0, 3) != 0)
                _exit(3);
            if (setpriority(PRIO_PROCESS, 0, 1) == 0 || errno != EACCES)
                _exit(4);
            if (setpriority(PRIO_PROCESS, getppid(), 10) == 0 || errno != EPERM)
                _exit(5);
            _exit(getpriority(PRIO_PROCESS, 0) == 3 ? 0 : 6);
        }
        CHECK_CHILD_EXIT(pid, 0);
    }
    /* Clamped (a user may only raise its nice value: this comes last). */
    CHECK_SYS(setpriority(PRIO_PROCESS, 0, 100));
    CHECK_EQ(getpriority(PRIO_PROCESS, 0), 19);
    if (getuid() == 0)
        CHECK_SYS(setpriority(PRIO_PROCESS, 0, 0));
    SAY("priorities: a thread's nice value set, clamped, inherited, in /proc; groups and users; "
        "%s",
        getuid() == 0 ? "as user 1000 EACCES to lower it and EPERM for another's" : "not root");
}

/* The raw calls: musl's wrappers answer ENOSYS (the calls act on one thread on Linux). */
static int getsched(pid_t pid)
{
    return (int)syscall(SYS_sched_getscheduler, pid);
}

static int setsched(pid_t pid, int policy, const struct sched_param *p)
{
    return (int)syscall(SYS_sched_setscheduler, pid, policy, p);
}

static int getparam(pid_t pid, struct sched_param *p)
{
    return (int)syscall(SYS_sched_getparam, pid, p);
}

static int setparam(pid_t pid, const struct sched_param *p)
{
    return (int)syscall(SYS_sched_setparam, pid, p);
}

static void policies(void)
{
    struct sched_param p = {.sched_priority = 0};
    CHECK_EQ(getsched(0), SCHED_OTHER);
    CHECK_SYS(getparam(0, &p));
    CHECK_EQ(p.sched_priority, 0);
    CHECK_SYS(setsched(0, SCHED_BATCH, &p));
    CHECK_EQ(getsched(0), SCHED_BATCH);
    CHECK_SYS(setsched(0, SCHED_OTHER, &p));
    p.sched_priority = 1;
    CHECK_ERRNO(setsched(0, SCHED_BATCH, &p), EINVAL);
    CHECK_ERRNO(setparam(0, &p), EINVAL);
    CHECK_ERRNO(setsched(0, 77, &p), EINVAL);
    p.sched_priority = 0;
    CHECK_SYS(setparam(0, &p));
    CHECK_EQ(sched_get_priority_max(SCHED_FIFO), 99);
    CHECK_EQ(sched_get_priority_min(SCHED_RR), 1);
    CHECK_EQ(sched_get_priority_max(SCHED_OTHER), 0);
    CHECK_ERRNO(sched_get_priority_max(77), EINVAL);
    struct timespec ts = {0, 0};
    CHECK_SYS(sched_rr_get_interval(0, &ts));
    /* Reef's time slice; Linux may answer 0 for a time-shared thread. */
    CHECK(ts.tv_sec >= 0 && (ts.tv_sec > 0 || ts.tv_nsec > 0 || !on_reef()));
    CHECK_ERRNO(getsched(-1), EINVAL);
    CHECK_ERRNO(getsched(0x3fffffff), ESRCH);
    CHECK_ERRNO(syscall(SYS_sched_getparam, 0, (void *)8), EFAULT);
    CHECK_ERRNO(syscall(SYS_sched_setscheduler, 0, SCHED_OTHER, (void *)0xffff800000000000UL),
                EFAULT);
    CHECK_ERRNO(syscall(SYS_sched_rr_get_interval, 0, (void *)8), EFAULT);
    pid_t pid = CHECK_SYS(fork());
    if (pid == 0) {
        if (getuid() == 0 && setuid(1000) != 0)
            _exit(2);
        struct sched_param q = {.sched_priority = 10};
        if (setsched(0, SCHED_FIFO, &q) == 0 || errno != EPERM)
            _exit(3);
        q.sched_priority = 0;
        if (setsched(0, SCHED_IDLE, &q) != 0 || getsched(0) != SCHED_IDLE)
            _exit(4);
        if (setsched(0, SCHED_OTHER, &q) == 0 || errno != EPERM)
            _exit(5);
        _exit(0);
    }
    CHECK_CHILD_EXIT(pid, 0);
    SAY("policies: SCHED_OTHER, SCHED_BATCH and back; priorities EINVAL; ranges; the interval; "
        "unprivileged: SCHED_FIFO EPERM, SCHED_IDLE not left; EINVAL, ESRCH, EFAULT");
}

static atomic_int spinning, stop_spinning;

static void *spinner(void *arg)
{
    (void)arg;
    atomic_fetch_add(&spinning, 1);
    while (!atomic_load(&stop_spinning))
        ;
    return NULL;
}

static void barriers(void)
{
    long q = syscall(SYS_membarrier, 0 /* QUERY */, 0, 0);
    CHECK(q >= 0);
    CHECK_EQ(q & (1 | 8 | 16), 1 | 8 | 16);
    CHECK_ERRNO(syscall(SYS_membarrier, 8 /* PRIVATE_EXPEDITED */, 0, 0), EPERM);
    CHECK_SYS(syscall(SYS_membarrier, 16 /* REGISTER_PRIVATE_EXPEDITED */, 0, 0));
    /* Threads spinning on the other cores take the barrier too. */
    pthread_t t[2];
    for (int i = 0; i < 2; i++)
        CHECK_EQ(pthread_create(&t[i], NULL, spinner, NULL), 0);
    wait_at_least(&spinning, 2);
    for (int i = 0; i < 100; i++)
        CHECK_SYS(syscall(SYS_membarrier, 8, 0, 0));
    CHECK_SYS(syscall(SYS_membarrier, 1 /* GLOBAL */, 0, 0));
    if (q & 32) {
        CHECK_ERRNO(syscall(SYS_membarrier, 32 /* PRIVATE_EXPEDITED_SYNC_CORE */, 0, 0), EPERM);
        CHECK_SYS(syscall(SYS_membarrier, 64, 0, 0));
        CHECK_SYS(syscall(SYS_membarrier, 32, 0, 0));
    }
    atomic_store(&stop_spinning, 1);
    for (int i = 0; i < 2; i++)
        CHECK_EQ(pthread_join(t[i], NULL), 0);
    CHECK_ERRNO(syscall(SYS_membarrier, 0x4000, 0, 0), EINVAL);
    CHECK_ERRNO(syscall(SYS_membarrier, 8, 7, 0), EINVAL);
    SAY("membarrier: query, EPERM before registering, 100 private and one global barrier with "
        "threads spinning, SYNC_CORE, EINVAL");
}

int main(void)
{
    test_begin("sched");
    priorities();
    policies();
    barriers();
    PASS();
}
