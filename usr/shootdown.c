/*
 * shootdown: TLB shootdown correctness.
 *
 * The main thread is pinned to the first allowed core; one reader thread is pinned to every other
 * allowed core. In each round the main thread maps a fresh page, lets every reader read it in a
 * loop (at least READS_BEFORE times each, so the translation is cached in their TLBs), then
 * unmaps it (or mprotects it to PROT_NONE) and afterwards publishes "munmap returned" in a flag.
 *
 * A reader loads the flag *before* each read of the page. Once munmap/mprotect has returned, no
 * core may still translate the page, so a read that began after the reader saw the flag must
 * fault; a read that completes after it is a stale TLB entry: FAIL. Every reader must take the
 * SIGSEGV (at the exact address) in every round. 100 rounds of munmap, 50 of mprotect(PROT_NONE).
 *
 * On a machine with one allowed core this cannot be tested: it says so and passes.
 */
#include "reef-test.h"
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdatomic.h>

#define MAX_CPUS 256
#define UNMAP_ROUNDS 100
#define PROTECT_ROUNDS 50
#define READS_BEFORE 200

enum { WHY_STALE = 1, WHY_VALUE, WHY_ADDRESS };

struct reader {
    int cpu;
    pthread_t thread;
    sigjmp_buf jump;
    atomic_int ready_round;   /* the round this reader is reading in */
    atomic_long reads;        /* completed reads in that round */
    atomic_int done_round;    /* the round whose fault this reader has taken */
    void *volatile fault_addr;
    volatile int failed_round; /* the round in which something went wrong (0: none) */
    volatile int why;          /* what went wrong: one of the WHY_ values */
    volatile int bad_value;
};

static int ncpu;
static int cpus[MAX_CPUS];
static struct reader readers[MAX_CPUS];
static int nreaders;

static _Atomic(volatile int *) page;
static atomic_int published_round;
static atomic_int unmapped_round; /* "munmap returned" for this round */
static __thread struct reader *self_reader;

static void on_segv(int sig, siginfo_t *si, void *ctx)
{
    (void)sig;
    (void)ctx;
    struct reader *r = self_reader;
    if (!r) {
        static const char msg[] = "FAIL shootdown: SIGSEGV outside a reader\n";
        write(1, msg, sizeof msg - 1);
        _exit(2);
    }
    r->fault_addr = si->si_addr;
    siglongjmp(r->jump, 1);
}

static int expected_value(int round)
{
    return 0x5000 + round;
}

/* Reads the page of `round` until the read faults (returns 0) or something is wrong (returns one
 * of the WHY_ values). A separate function so that nothing live in the caller spans the jump. */
static __attribute__((noinline)) int read_until_fault(struct reader *r, volatile int *p, int round)
{
    if (sigsetjmp(r->jump, 1) != 0)
        return r->fault_addr == (void *)p ? 0 : WHY_ADDRESS;
    for (;;) {
        int flag = atomic_load_explicit(&unmapped_round, memory_order_acquire);
        int v = *p;
        if (flag == round)
            return WHY_STALE;
        if (v != expected_value(round)) {
            r->bad_value = v;
            return WHY_VALUE;
        }
        atomic_fetch_add_explicit(&r->reads, 1, memory_order_relaxed);
    }
}

static void *reader_main(void *arg)
{
    struct reader *r = arg;
    self_reader = r;
    pin_self(r->cpu);
    for (int round = 1; round <= UNMAP_ROUNDS + PROTECT_ROUNDS; round++) {
        while (atomic_load(&published_round) != round)
            ;
        volatile int *p = atomic_load(&page) + round % 1024;
        atomic_store(&r->reads, 0);
        atomic_store(&r->ready_round, round);
        int why = read_until_fault(r, p, round);
        if (why) {
            r->why = why;
            r->failed_round = round;
        }
        atomic_store(&r->done_round, round);
        if (why)
            break;
    }
    self_reader = NULL;
    return NULL;
}

static void round_trip(int round, int use_mprotect)
{
    volatile int *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        FAIL("mmap failed: %s", strerror(errno));
    p[round % 1024] = expected_value(round);
    atomic_store(&page, p);
    atomic_store(&published_round, round);
    for (int i = 0; i < nreaders; i++)
        while (atomic_load(&readers[i].ready_round) != round ||
               atomic_load(&readers[i].reads) < READS_BEFORE)
            if (atomic_load(&readers[i].done_round) == round)
                break; /* it stopped early: reported below */
    if (use_mprotect)
        CHECK_SYS(mprotect((void *)p, 4096, PROT_NONE));
    else
        CHECK_SYS(munmap((void *)p, 4096));
    atomic_store_explicit(&unmapped_round, round, memory_order_release);
    for (int i = 0; i < nreaders; i++) {
        struct reader *r = &readers[i];
        while (atomic_load(&r->done_round) != round)
            ;
        if (r->failed_round) {
            if (r->why == WHY_VALUE)
                FAIL("round %d: the reader on cpu %d read 0x%x, expected 0x%x", round, r->cpu,
                     r->bad_value, expected_value(round));
            if (r->why == WHY_ADDRESS)
                FAIL("round %d: the reader on cpu %d faulted at %p, expected %p", round, r->cpu,
                     r->fault_addr, (void *)(p + round % 1024));
            FAIL("round %d: the reader on cpu %d completed a read of the page after %s returned "
                 "(stale TLB entry)",
                 round, r->cpu, use_mprotect ? "mprotect(PROT_NONE)" : "munmap");
        }
        r->fault_addr = NULL;
    }
    if (use_mprotect)
        CHECK_SYS(munmap((void *)p, 4096));
}

int main(void)
{
    test_begin("shootdown");
    ncpu = allowed_cpus(cpus, MAX_CPUS);
    if (ncpu < 2) {
        SAY("SKIP: only %d allowed cpu; a shootdown needs a reader on another core", ncpu);
        PASS();
    }
    pin_self(cpus[0]);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_segv;
    sa.sa_flags = SA_SIGINFO;
    CHECK_SYS(sigaction(SIGSEGV, &sa, NULL));
    nreaders = ncpu - 1;
    for (int i = 0; i < nreaders; i++) {
        readers[i].cpu = cpus[i + 1];
        CHECK_PT(pthread_create(&readers[i].thread, NULL, reader_main, &readers[i]));
    }
    SAY("main thread on cpu %d, readers on %d other cpus", cpus[0], nreaders);
    int round = 1;
    for (int i = 0; i < UNMAP_ROUNDS; i++)
        round_trip(round++, 0);
    SAY("%d munmap rounds: every reader faulted at the page, no read after munmap returned",
        UNMAP_ROUNDS);
    for (int i = 0; i < PROTECT_ROUNDS; i++)
        round_trip(round++, 1);
    SAY("%d mprotect(PROT_NONE) rounds: the same", PROTECT_ROUNDS);
    for (int i = 0; i < nreaders; i++)
        CHECK_PT(pthread_join(readers[i].thread, NULL));
    PASS();
}
