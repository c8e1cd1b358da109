/*
 * corepark: cores parked and unparked while programs run (Barrelfish/DC §4.6, issue 14).
 *
 * Workers compute and check results, one pinned to each core and two free to move; each reads
 * the monotonic clock every round and checks that sched_getcpu() answers its core, and every
 * 64 rounds sleeps 100 us (a wake-up by its KCB's timer) and maps, writes and unmaps a page (a
 * TLB shootdown to the cores running the process's other threads). Meanwhile the main thread
 * parks every core but 0 on the next one (the last on core 0) and unparks it, ROUNDS times
 * (default 20, `corepark ROUNDS`), and checks while a core is parked that it reads as parked
 * on its host, that the host reads as hosting it, that sysconf no longer counts it, that the
 * worker pinned to it goes on computing (its host runs its KCB) as does the host's own, and
 * that `/bin/corectl list` says so; after the unpark that the core is online again. At the
 * end every worker must have computed right, never seen the clock go back, never seen another
 * core than its own, and gone on after the last unpark. A process pinned to a parked core
 * runs and dies at once when killed. Every error case answers its error and changes nothing;
 * two cores are parked at once (the second by a thread running on the first's parked KCB), a
 * thread of the host parks and unparks, a stopped core is parked as it is (and started by its
 * unpark), parking keeps no memory, and with three cores or more
 * two KCBs share a host, then every core but 0 is parked on core 0 at once, which runs them
 * all by turns while every worker goes on.
 *
 * On Linux the calls do not exist (ENOSYS) and the test passes after saying so.
 */
#include "core_test.h"
#include <pthread.h>
#include <sys/mman.h>

#define MAX_CPUS 64

struct worker {
    int cpu; /* pinned there, or -1 */
    pthread_t thread;
    atomic_long iters;
    atomic_long bad, backwards, misplaced, short_sleeps;
};

static atomic_int finish;
static volatile int sum_to = 1000;

static void *work(void *arg)
{
    struct worker *w = arg;
    if (w->cpu >= 0)
        pin_self(w->cpu);
    long long prev = now_ns();
    for (long n = 1; !atomic_load(&finish); n++) {
        unsigned long s = 0;
        for (int i = 1; i <= sum_to; i++)
            s += (unsigned long)i;
        if (s != 500500)
            atomic_fetch_add(&w->bad, 1);
        if (n % 64 == 0) {
            struct timespec ts = {0, 100000};
            long long before = now_ns();
            CHECK_SYS(nanosleep(&ts, NULL));
            if (now_ns() - before < 100000)
                atomic_fetch_add(&w->short_sleeps, 1);
            char *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
            CHECK(p != MAP_FAILED);
            p[0] = (char)n;
            CHECK_SYS(munmap(p, 4096));
        }
        long long t = now_ns();
        if (t < prev)
            atomic_fetch_add(&w->backwards, 1);
        prev = t;
        if (w->cpu >= 0 && sched_getcpu() != w->cpu)
            atomic_fetch_add(&w->misplaced, 1);
        atomic_fetch_add(&w->iters, 1);
    }
    return NULL;
}

static struct reef_core_info info_of(unsigned core)
{
    struct reef_core_info i;
    CHECK_EQ(reef_core_info(core, &i), 0);
    CHECK_EQ(i.core, core);
    return i;
}

/* Waits (yielding) until worker `w` has made `steps` rounds since it had made `since`. */
static void wait_rounds(struct worker *w, long since, long steps)
{
    long long deadline = now_ns() + 60 * 1000000000LL;
    while (atomic_load(&w->iters) < since + steps) {
        if (now_ns() > deadline)
            FAIL("the worker pinned to cpu %d made no progress in 60 s", w->cpu);
        sched_yield();
    }
}

/* Waits until worker `w` has made progress since `since`. */
static void wait_progress(struct worker *w, long since)
{
    wait_rounds(w, since, 1);
}

/* Whether `/bin/corectl list` prints a line containing `what`. */
static int corectl_lists(const char *what)
{
    FILE *f = popen("/bin/corectl list", "r");
    CHECK(f != NULL);
    char line[256];
    int found = 0;
    while (fgets(line, sizeof line, f))
        if (strstr(line, what))
            found = 1;
    CHECK_EQ(pclose(f), 0);
    return found;
}

/* A thread pinned to a core that parks or unparks a core when told to. */
struct call {
    int cpu, op;
    unsigned core, host;
    pthread_t thread;
    atomic_int ready, go;
    int result;
};

static void *call_pinned(void *arg)
{
    struct call *c = arg;
    pin_self(c->cpu);
    atomic_store(&c->ready, 1);
    while (!atomic_load(&c->go))
        sched_yield();
    c->result = c->op == REEF_CORE_PARK ? reef_core_park(c->core, c->host)
                                        : reef_core_unpark(c->core);
    return NULL;
}

/* Starts a thread pinned to `cpu` (online) that will make the call; waits until it is pinned. */
static void call_prepare(struct call *c, int cpu, int op, unsigned core, unsigned host)
{
    memset(c, 0, sizeof *c);
    c->cpu = cpu, c->op = op, c->core = core, c->host = host;
    CHECK_PT(pthread_create(&c->thread, NULL, call_pinned, c));
    while (!atomic_load(&c->ready))
        sched_yield();
}

/* Lets the thread make its call and returns the result. */
static int call_result(struct call *c)
{
    atomic_store(&c->go, 1);
    CHECK_PT(pthread_join(c->thread, NULL));
    return c->result;
}

static void check_all_online(unsigned ncores)
{
    for (unsigned c = 0; c < ncores; c++) {
        struct reef_core_info i = info_of(c);
        CHECK_EQ(i.state, REEF_CORE_ONLINE);
        CHECK_EQ(i.parked_on, REEF_CORE_NONE);
        CHECK_EQ(i.guest, REEF_CORE_NONE);
    }
}

int main(int argc, char **argv)
{
    int rounds = core_test_begin("corepark", argc, argv, 20);
    unsigned ncores = core_count();
    check_all_online(ncores);
    SAY("%u cores", ncores);

    /* Errors, which change nothing. */
    CHECK_EQ(reef_core_park(ncores, 0), -ENODEV);
    CHECK_EQ(reef_core_park(0, ncores), -ENODEV);
    CHECK_EQ(reef_core_park(9999, 9999), -ENODEV);
    CHECK_EQ(reef_core_unpark(9999), -ENODEV);
    CHECK_ERRNO(syscall(SYS_reef_core_ctl, (long)REEF_CORE_PARK, 1L << 40, 0L), ENODEV);
    CHECK_ERRNO(syscall(SYS_reef_core_ctl, (long)REEF_CORE_PARK, 0L, 1L << 40), ENODEV);
    CHECK_EQ(reef_core_park(0, 0), -EINVAL);
    CHECK_EQ(reef_core_unpark(0), -EINVAL);
    CHECK_EQ(run_program("/bin/corectl", "park", "x", "0", NULL), 2);
    CHECK_EQ(run_program("/bin/corectl", "park", "1", NULL), 2);
    CHECK_EQ(run_program("/bin/corectl", "unpark", NULL), 2);
    CHECK_EQ(run_program("/bin/corectl", "unpark", "0", NULL), 1);
    CHECK_EQ(run_program("/bin/corectl", "park", "0", "9999", NULL), 1);
    if (ncores < 2) {
        check_all_online(ncores);
        SAY("one core: nothing to park it on");
        PASS();
    }
    CHECK_EQ(reef_core_park(0, 1), -EBUSY);
    CHECK_EQ(reef_core_park(1, 1), -EINVAL);
    CHECK_EQ(reef_core_unpark(1), -EINVAL);
    struct call pinned;
    call_prepare(&pinned, 1, REEF_CORE_PARK, 1, 0);
    CHECK_EQ(call_result(&pinned), -EDEADLK);
    /* Pinned to cpu 1 before it is parked: to unpark it from its parked KCB, and to park
     * another core from there. */
    call_prepare(&pinned, 1, REEF_CORE_UNPARK, 1, 0);
    struct call other;
    if (ncores >= 4)
        call_prepare(&other, 1, REEF_CORE_PARK, 2, 3);
    CHECK_EQ(reef_core_stop(1), 0);
    if (ncores >= 3)
        CHECK_EQ(reef_core_park(2, 1), -EINVAL); /* the host is stopped */
    /* A stopped core is parked as it is; unparking starts it. */
    CHECK_EQ(reef_core_park(1, 0), 0);
    CHECK_EQ(info_of(1).state, REEF_CORE_PARKED);
    CHECK_EQ(info_of(1).parked_on, 0);
    CHECK_EQ(reef_core_unpark(1), 0);
    check_all_online(ncores);
    CHECK_EQ(run_program("/bin/corectl", "park", "1", "0", NULL), 0);
    CHECK_EQ(info_of(1).state, REEF_CORE_PARKED);
    CHECK_EQ(info_of(1).parked_on, 0);
    CHECK_EQ(info_of(0).guest, 1);
    CHECK(corectl_lists("parked on 0"));
    CHECK(corectl_lists("hosts 1"));
    CHECK_EQ(run_program("/bin/corectl", "lskcb", NULL), 0);
    CHECK_EQ(reef_core_park(1, 0), -EALREADY);
    CHECK_EQ(reef_core_stop(1), -EALREADY);
    CHECK_EQ(reef_core_start(1), -EALREADY);
    CHECK_EQ(reef_core_unpark(0), -EINVAL);
    CHECK_EQ(call_result(&pinned), -EDEADLK);
    if (ncores >= 3) {
        /* A second KCB on the same host. */
        CHECK_EQ(reef_core_park(2, 0), 0);
        CHECK_EQ(info_of(2).state, REEF_CORE_PARKED);
        CHECK_EQ(info_of(2).parked_on, 0);
        CHECK_EQ(info_of(0).guest, 1); /* the lowest of its guests */
        CHECK(corectl_lists("hosts 1,2"));
        CHECK_EQ(reef_core_unpark(2), 0);
        CHECK_EQ(info_of(2).state, REEF_CORE_ONLINE);
        CHECK(corectl_lists("hosts 1)"));
        CHECK_EQ(reef_core_park(2, 1), -EINVAL); /* 1 is parked */
    }
    if (ncores >= 4) {
        /* Two cores parked at once, the second by a thread of the first's KCB. */
        CHECK_EQ(call_result(&other), 0);
        CHECK_EQ(info_of(2).state, REEF_CORE_PARKED);
        CHECK_EQ(info_of(3).guest, 2);
        CHECK_EQ(info_of(1).state, REEF_CORE_PARKED);
        CHECK_EQ(sysconf(_SC_NPROCESSORS_ONLN), ncores - 2);
        CHECK_EQ(reef_core_unpark(2), 0);
        /* A host cannot be stopped or parked. */
        CHECK_EQ(reef_core_unpark(1), 0);
        CHECK_EQ(reef_core_park(1, 2), 0);
        CHECK_EQ(reef_core_stop(2), -EBUSY);
        CHECK_EQ(reef_core_park(2, 3), -EBUSY);
        CHECK_EQ(info_of(2).state, REEF_CORE_ONLINE);
        CHECK_EQ(info_of(2).guest, 1);
    }
    CHECK_EQ(info_of(1).state, REEF_CORE_PARKED);
    CHECK_EQ(run_program("/bin/corectl", "unpark", "1", NULL), 0);
    CHECK_EQ(run_program("/bin/corectl", "unpark", "1", NULL), 1);
    check_all_online(ncores);
    CHECK(!corectl_lists("parked"));
    SAY("errors answered: ENODEV, EINVAL, EBUSY, EALREADY, EDEADLK; corectl park, unpark and "
        "list done, refused and bad command lines answered");

    /* Parked and unparked by a thread of the host itself. */
    call_prepare(&pinned, 0, REEF_CORE_PARK, 1, 0);
    CHECK_EQ(call_result(&pinned), 0);
    CHECK_EQ(info_of(1).state, REEF_CORE_PARKED);
    call_prepare(&pinned, 0, REEF_CORE_UNPARK, 1, 0);
    CHECK_EQ(call_result(&pinned), 0);
    check_all_online(ncores);

    /* Parking and unparking keep no memory. */
    long free_before = reef_free_bytes();
    for (int i = 0; i < 50; i++) {
        CHECK_EQ(reef_core_park(1, 0), 0);
        CHECK_EQ(reef_core_unpark(1), 0);
    }
    CHECK(reef_free_bytes() >= free_before - (1 << 20));
    SAY("50 parks and unparks of cpu 1 on 0 kept no memory");

    /* A process pinned to a parked core runs on its host, and dies at once when killed. */
    atomic_int *count = shared_page(4096);
    pid_t spinner = test_fork_child("a child counting on cpu 1", 1);
    if (spinner == 0) {
        for (;;)
            atomic_fetch_add(count, 1);
    }
    while (atomic_load(count) == 0)
        sched_yield();
    CHECK_EQ(reef_core_park(1, 0), 0);
    int seen = atomic_load(count);
    long long deadline = now_ns() + 60 * 1000000000LL;
    while (atomic_load(count) - seen < 1000) {
        if (now_ns() > deadline)
            FAIL("a process pinned to parked cpu 1 made no progress in 60 s");
        sched_yield();
    }
    CHECK_SYS(kill(spinner, SIGKILL));
    int st;
    CHECK_EQ(CHECK_SYS(waitpid(spinner, &st, 0)), spinner);
    CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
    test_nkids = 0;
    CHECK_EQ(info_of(1).state, REEF_CORE_PARKED);
    CHECK_EQ(reef_core_unpark(1), 0);
    SAY("a process pinned to cpu 1 ran while it was parked on 0, and died of SIGKILL there");

    struct worker workers[MAX_CPUS + 2];
    unsigned nworkers = ncores + 2;
    memset(workers, 0, sizeof workers);
    for (unsigned i = 0; i < nworkers; i++) {
        workers[i].cpu = i < ncores ? (int)i : -1;
        CHECK_PT(pthread_create(&workers[i].thread, NULL, work, &workers[i]));
    }
    for (unsigned i = 0; i < nworkers; i++)
        wait_progress(&workers[i], 0);

    for (int r = 0; r < rounds; r++) {
        for (unsigned c = 1; c < ncores; c++) {
            unsigned host = (c + 1) % ncores;
            uint64_t starts = info_of(c).starts;
            CHECK_EQ(reef_core_park(c, host), 0);
            struct reef_core_info i = info_of(c);
            CHECK_EQ(i.state, REEF_CORE_PARKED);
            CHECK_EQ(i.parked_on, host);
            CHECK(i.shutdown_ns > 0);
            i = info_of(host);
            CHECK_EQ(i.state, REEF_CORE_ONLINE);
            CHECK_EQ(i.guest, c);
            CHECK_EQ(sysconf(_SC_NPROCESSORS_ONLN), ncores - 1);
            /* Each goes through two sleeps and two unmaps (64 rounds each) while parked. */
            wait_rounds(&workers[c], atomic_load(&workers[c].iters), 130);
            wait_rounds(&workers[host], atomic_load(&workers[host].iters), 130);
            CHECK_EQ(reef_core_unpark(c), 0);
            i = info_of(c);
            CHECK_EQ(i.state, REEF_CORE_ONLINE);
            CHECK_EQ(i.parked_on, REEF_CORE_NONE);
            CHECK_EQ(i.starts, starts + 1);
            CHECK_EQ(info_of(host).guest, REEF_CORE_NONE);
        }
        if ((r + 1) % 5 == 0 || r + 1 == rounds) {
            for (unsigned i = 0; i < nworkers; i++)
                wait_progress(&workers[i], atomic_load(&workers[i].iters));
            SAY("round %d: every core but 0 parked and unparked, every worker going on", r + 1);
        }
    }

    if (ncores >= 3) {
        /* Every core but 0 parked on 0 at once: core 0 runs all the KCBs by turns (Barrelfish/DC's
         * multi-KCB kernel), and every worker goes on. */
        for (unsigned c = 1; c < ncores; c++)
            CHECK_EQ(reef_core_park(c, 0), 0);
        CHECK_EQ(sysconf(_SC_NPROCESSORS_ONLN), 1);
        CHECK_EQ(info_of(0).guest, 1);
        for (unsigned c = 1; c < ncores; c++) {
            CHECK_EQ(info_of(c).state, REEF_CORE_PARKED);
            CHECK_EQ(info_of(c).parked_on, 0);
        }
        CHECK(corectl_lists(ncores == 3 ? "hosts 1,2)" : "hosts 1,2,3"));
        for (unsigned i = 0; i < nworkers; i++)
            wait_rounds(&workers[i], atomic_load(&workers[i].iters), 130);
        for (unsigned c = ncores - 1; c >= 1; c--)
            CHECK_EQ(reef_core_unpark(c), 0);
        check_all_online(ncores);
        CHECK_EQ(info_of(0).guest, REEF_CORE_NONE);
        SAY("cpus 1..%u parked on 0 at once: every worker went on; all unparked", ncores - 1);
    }

    for (unsigned i = 0; i < nworkers; i++)
        wait_progress(&workers[i], atomic_load(&workers[i].iters));
    atomic_store(&finish, 1);
    for (unsigned i = 0; i < nworkers; i++) {
        struct worker *w = &workers[i];
        CHECK_PT(pthread_join(w->thread, NULL));
        if (w->bad || w->backwards || w->misplaced || w->short_sleeps)
            FAIL("worker %u (cpu %d): %ld wrong sums, %ld clock steps back, %ld rounds off its "
                 "core, %ld sleeps too short",
                 i, w->cpu, atomic_load(&w->bad), atomic_load(&w->backwards),
                 atomic_load(&w->misplaced), atomic_load(&w->short_sleeps));
    }
    check_all_online(ncores);
    SAY("%d rounds: %u workers computed right, their clocks never went back, pinned ones always "
        "saw their own core, parked or not",
        rounds, nworkers);
    PASS();
}
