/*
 * What the core-management tests (corestop, corepark, coreupdate) share: their start, and the
 * checking worker of corestop and coreupdate, a thread, pinned to
 * a core or free, that sums 1..N over and over (N = `core_worker_sum_to`) and counts wrong sums, steps back of the
 * monotonic clock, rounds run on another core than its own (if pinned), and the largest gap
 * between two rounds, until `core_workers_finish` is set. The tests stop, start and re-kernel
 * cores under it and check at the end that it computed right throughout.
 */
#ifndef CORE_TEST_H
#define CORE_TEST_H

#include "reef-test.h"
#include "reef_core.h"
#include <pthread.h>

/* Starts test `name` with ROUNDS from the command line (`rounds` by default, at least 1): on a
 * kernel without the core calls (Linux) says so and passes. */
static inline int core_test_begin(const char *name, int argc, char **argv, int rounds)
{
    test_begin(name);
    if (argc > 1)
        rounds = atoi(argv[1]);
    CHECK(rounds >= 1);
    struct reef_core_info first;
    int e = reef_core_info(0, &first);
    if (e == -ENOSYS) {
        SAY("no core management calls here (not Reef): nothing to test");
        PASS();
    }
    CHECK_EQ(e, 0);
    return rounds;
}

/* The number of cores the kernel reports (at most 64). */
static inline unsigned core_count(void)
{
    struct reef_core_info info;
    unsigned n = 0;
    while (n < 64 && reef_core_info(n, &info) == 0)
        n++;
    return n;
}

struct core_worker {
    int cpu; /* pinned there, or -1 */
    pthread_t thread;
    atomic_long iters;
    atomic_long bad, backwards, misplaced;
    atomic_llong max_gap_ns;
};

static atomic_int core_workers_finish;
static volatile int core_worker_sum_to = 1000;

static inline void *core_work(void *arg)
{
    struct core_worker *w = arg;
    if (w->cpu >= 0)
        pin_self(w->cpu);
    long long prev = now_ns();
    while (!atomic_load(&core_workers_finish)) {
        unsigned long s = 0, n = (unsigned long)core_worker_sum_to;
        for (unsigned long i = 1; i <= n; i++)
            s += i;
        if (s != n * (n + 1) / 2)
            atomic_fetch_add(&w->bad, 1);
        long long t = now_ns();
        if (t < prev)
            atomic_fetch_add(&w->backwards, 1);
        if (t - prev > atomic_load(&w->max_gap_ns))
            atomic_store(&w->max_gap_ns, t - prev);
        prev = t;
        if (w->cpu >= 0 && sched_getcpu() != w->cpu)
            atomic_fetch_add(&w->misplaced, 1);
        atomic_fetch_add(&w->iters, 1);
    }
    return NULL;
}

/* Waits until worker `w` has done a round more than `since` (60 s at most). */
static inline void core_worker_wait(struct core_worker *w, long since)
{
    long long deadline = now_ns() + 60 * 1000000000LL;
    while (atomic_load(&w->iters) == since) {
        if (now_ns() > deadline)
            FAIL("the worker on cpu %d made no progress in 60 s", w->cpu);
        sched_yield();
    }
}

/* Ends the workers and fails unless each computed right, never saw the clock go back, and
 * (if pinned) never ran elsewhere. */
static inline void core_workers_join(struct core_worker *workers, unsigned n)
{
    atomic_store(&core_workers_finish, 1);
    for (unsigned i = 0; i < n; i++) {
        struct core_worker *w = &workers[i];
        CHECK_PT(pthread_join(w->thread, NULL));
        if (atomic_load(&w->bad) || atomic_load(&w->backwards) || atomic_load(&w->misplaced))
            FAIL("worker %u (cpu %d): %ld wrong sums, %ld clock steps back, %ld rounds off its "
                 "core",
                 i, w->cpu, atomic_load(&w->bad), atomic_load(&w->backwards),
                 atomic_load(&w->misplaced));
    }
}

#endif
