/*
 * corestop: cores stopped and started while programs run (Barrelfish/DC §4.5, issue 14).
 *
 * Workers compute and check results, one pinned to each core and two free to move, each
 * reading the monotonic clock every round. Meanwhile the main thread stops and starts every
 * core but 0, ROUNDS times each (default 100, `corestop ROUNDS`), and checks after each stop
 * that the core reads as stopped, that sysconf and sched_getaffinity no longer count it, and
 * that the worker pinned to it did not run while it was stopped (it waits for its core, it is
 * not moved); after each start that the core is online again. At the end every worker must
 * have computed right, never seen the clock go back, never run off its core, and made progress
 * after its core's last start. Then, with two nodes, it stops every core of the last node and
 * runs some 1200 process-table operations and 3000 address-space operations from node 0, more
 * than their logs hold: they complete only if the stopped node's replicas are still advanced
 * (NrOS §4.5). Processes pinned to a stopped core die at once when killed. Every error case
 * answers its error and changes nothing.
 *
 * On Linux the calls do not exist (ENOSYS) and the test passes after saying so.
 */
#include "reef-test.h"
#include "core_test.h"

#define MAX_CPUS 64

static int stop_result;

static void *stop_own_core(void *arg)
{
    int cpu = *(int *)arg;
    pin_self(cpu);
    stop_result = reef_core_stop((unsigned)cpu);
    return NULL;
}

static struct reef_core_info info_of(unsigned core)
{
    struct reef_core_info i;
    CHECK_EQ(reef_core_info(core, &i), 0);
    CHECK_EQ(i.core, core);
    return i;
}

static int affinity_count(void)
{
    cpu_set_t set;
    CHECK_SYS(sched_getaffinity(0, sizeof set, &set));
    return CPU_COUNT(&set);
}

/* Operations on the process table and this address space, enough to wrap their NR logs. */
static void replicated_work(void)
{
    for (int i = 0; i < 400; i++) {
        pid_t pid = CHECK_SYS(fork());
        if (pid == 0)
            _exit(7);
        int st;
        CHECK_EQ(CHECK_SYS(waitpid(pid, &st, 0)), pid);
        CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 7);
    }
    for (int i = 0; i < 3000; i++) {
        char *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        CHECK(p != MAP_FAILED);
        p[0] = (char)i;
        CHECK_SYS(munmap(p, 4096));
    }
}

int main(int argc, char **argv)
{
    int rounds = core_test_begin("corestop", argc, argv, 100);
    unsigned ncores = 0;
    struct reef_core_info info[MAX_CPUS];
    while (ncores < MAX_CPUS && reef_core_info(ncores, &info[ncores]) == 0) {
        CHECK_EQ(info[ncores].core, ncores);
        CHECK_EQ(info[ncores].state, REEF_CORE_ONLINE);
        CHECK(info[ncores].starts >= 1);
        CHECK(strcmp(info[ncores].image, "reef") == 0);
        ncores++;
    }
    CHECK_EQ(sysconf(_SC_NPROCESSORS_ONLN), ncores);
    unsigned nodes = info[ncores - 1].node + 1;
    SAY("%u cores, %u nodes", ncores, nodes);

    /* Errors, which change nothing and keep no memory. */
    long free_before = reef_free_bytes();
    struct reef_core_info scratch;
    CHECK_EQ(reef_core_info(ncores, &scratch), -ENODEV);
    CHECK_EQ(reef_core_info(~0u, &scratch), -ENODEV);
    CHECK_ERRNO(syscall(SYS_reef_core_info, 1L << 40, &scratch), ENODEV);
    CHECK_ERRNO(syscall(SYS_reef_core_info, 0L, (void *)8), EFAULT);
    CHECK_ERRNO(syscall(SYS_reef_core_info, 0L, (void *)0xffff800000000000ul), EFAULT);
    CHECK_ERRNO(syscall(SYS_reef_core_info, 0L, (void *)0x8000000000000000ul), EFAULT);
    CHECK_ERRNO(syscall(SYS_reef_core_info, 0L, (void *)(0x7ffffffff000ul - 8)), EFAULT);
    CHECK_ERRNO(syscall(SYS_reef_core_ctl, 7L, 1L), EINVAL);
    CHECK_ERRNO(syscall(SYS_reef_core_ctl, -1L, -1L), EINVAL);
    CHECK_ERRNO(syscall(SYS_reef_core_ctl, 0L, 1L << 40), ENODEV);
    for (int k = 0; k < 1000; k++)
        CHECK_EQ(reef_core_stop(9999 + (unsigned)k), -ENODEV);
    CHECK(reef_free_bytes() >= free_before - (1 << 20));
    CHECK_EQ(reef_core_stop(9999), -ENODEV);
    CHECK_EQ(reef_core_start(9999), -ENODEV);
    CHECK_EQ(reef_core_start(0), -EALREADY);
    CHECK_EQ(reef_core_stop(0), -EBUSY);
    /* /bin/corectl: 0 done, 1 refused (nothing changes), 2 a bad command line. */
    CHECK_EQ(run_program("/bin/corectl", "list", NULL), 0);
    CHECK_EQ(run_program("/bin/corectl", "lskcb", NULL), 0);
    CHECK_EQ(run_program("/bin/corectl", "stop", "0", NULL), 1);
    CHECK_EQ(run_program("/bin/corectl", "start", "0", NULL), 1);
    CHECK_EQ(run_program("/bin/corectl", "stop", "9999", NULL), 1);
    CHECK_EQ(run_program("/bin/corectl", "stop", "x", NULL), 2);
    CHECK_EQ(run_program("/bin/corectl", "park", "1", NULL), 2);
    CHECK_EQ(run_program("/bin/corectl", NULL), 2);
    if (ncores >= 2) {
        CHECK_EQ(run_program("/bin/corectl", "stop", "1", NULL), 0);
        CHECK_EQ(info_of(1).state, REEF_CORE_STOPPED);
        CHECK_EQ(run_program("/bin/corectl", "stop", "1", NULL), 1);
        CHECK_EQ(run_program("/bin/corectl", "start", "1", NULL), 0);
        CHECK_EQ(info_of(1).state, REEF_CORE_ONLINE);
    }
    SAY("corectl list, lskcb, stop and start: done, refused and bad command lines answered");
    if (ncores < 2) {
        SAY("one core: it cannot be stopped");
        PASS();
    }
    int one = 1;
    pthread_t t;
    CHECK_PT(pthread_create(&t, NULL, stop_own_core, &one));
    CHECK_PT(pthread_join(t, NULL));
    CHECK_EQ(stop_result, -EDEADLK);
    CHECK_EQ(info_of(1).state, REEF_CORE_ONLINE);
    SAY("errors answered: ENODEV, EFAULT (user, kernel and non-canonical pointers), EINVAL, "
        "EALREADY, EBUSY, EDEADLK, with free memory kept");

    struct core_worker workers[MAX_CPUS + 2];
    unsigned nworkers = ncores + 2;
    memset(workers, 0, sizeof workers);
    for (unsigned i = 0; i < nworkers; i++) {
        workers[i].cpu = i < ncores ? (int)i : -1;
        CHECK_PT(pthread_create(&workers[i].thread, NULL, core_work, &workers[i]));
    }
    for (unsigned i = 0; i < nworkers; i++)
        core_worker_wait(&workers[i], 0);

    for (int r = 0; r < rounds; r++) {
        for (unsigned c = 1; c < ncores; c++) {
            uint64_t starts = info_of(c).starts;
            CHECK_EQ(reef_core_stop(c), 0);
            long frozen = atomic_load(&workers[c].iters);
            struct reef_core_info i = info_of(c);
            CHECK_EQ(i.state, REEF_CORE_STOPPED);
            CHECK(i.shutdown_ns > 0);
            CHECK_EQ(reef_core_stop(c), -EALREADY);
            CHECK_EQ(sysconf(_SC_NPROCESSORS_ONLN), ncores - 1);
            CHECK_EQ(affinity_count(), (int)ncores - 1);
            CHECK_EQ(atomic_load(&workers[c].iters), frozen);
            CHECK_EQ(reef_core_start(c), 0);
            i = info_of(c);
            CHECK_EQ(i.state, REEF_CORE_ONLINE);
            CHECK_EQ(i.starts, starts + 1);
        }
        if ((r + 1) % 25 == 0 || r + 1 == rounds) {
            for (unsigned i = 0; i < nworkers; i++)
                core_worker_wait(&workers[i], atomic_load(&workers[i].iters));
            SAY("round %d: every core but 0 stopped and started again, every worker going on",
                r + 1);
        }
    }

    for (unsigned i = 0; i < nworkers; i++)
        core_worker_wait(&workers[i], atomic_load(&workers[i].iters));
    core_workers_join(workers, nworkers);
    /* Killed while its core is stopped, a process pinned there still dies at once (it runs
     * elsewhere to exit): one spinning, one asleep. */
    atomic_int *pinned = shared_page(4096);
    pid_t spinner = test_fork_child("a child spinning on cpu 1", 1);
    if (spinner == 0) {
        atomic_fetch_add(pinned, 1);
        for (;;)
            ;
    }
    pid_t sleeper = test_fork_child("a child asleep on cpu 1", 1);
    if (sleeper == 0) {
        atomic_fetch_add(pinned, 1);
        sleep(1000);
        _exit(1);
    }
    while (atomic_load(pinned) < 2)
        sched_yield();
    CHECK_EQ(reef_core_stop(1), 0);
    CHECK_SYS(kill(spinner, SIGKILL));
    CHECK_SYS(kill(sleeper, SIGKILL));
    long long deadline = now_ns() + 30 * 1000000000LL;
    for (int dead = 0; dead < 2;) {
        int st;
        pid_t w = CHECK_SYS(waitpid(-1, &st, WNOHANG));
        if (w == 0) {
            if (now_ns() > deadline)
                FAIL("a process pinned to stopped cpu 1 still lives 30 s after SIGKILL");
            sched_yield();
            continue;
        }
        CHECK(w == spinner || w == sleeper);
        CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
        dead++;
    }
    test_nkids = 0;
    CHECK_EQ(info_of(1).state, REEF_CORE_STOPPED);
    CHECK_EQ(reef_core_start(1), 0);
    SAY("two processes pinned to stopped cpu 1 died of SIGKILL while it stayed stopped");

    if (nodes >= 2) {
        unsigned last = nodes - 1, stopped = 0;
        for (unsigned c = 1; c < ncores; c++)
            if (info_of(c).node == last) {
                CHECK_EQ(reef_core_stop(c), 0);
                stopped++;
            }
        CHECK(stopped >= 1);
        replicated_work();
        for (unsigned c = 1; c < ncores; c++)
            if (info_of(c).node == last)
                CHECK_EQ(reef_core_start(c), 0);
        SAY("node %u stopped (%u cores): 400 forks and 3000 mmaps from node 0 went through",
            last, stopped);
    }

    for (unsigned c = 0; c < ncores; c++)
        CHECK_EQ(info_of(c).state, REEF_CORE_ONLINE);
    SAY("%d rounds: %u workers computed right, their clocks never went back, pinned ones never "
        "left their core",
        rounds, nworkers);
    PASS();
}
