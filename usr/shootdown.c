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
 * SIGSEGV (at the exact address) in every round. 100 rounds of munmap of one page, 20 of munmap of
 * 8 touched pages (Reef invalidates them one by one), 20 of 64 touched pages (more than Reef's 32:
 * a full flush), 50 of mprotect(PROT_NONE).
 *
 * On Reef the last phase checks /proc/reef/tlb while every reader spins in user mode on its core:
 * unmapping a large range in which no page was ever touched interrupts no core, and unmapping a
 * touched page reaches the readers' cores (interrupted, or deferred to the host under KVM).
 *
 * On a machine with one allowed core this cannot be tested: it says so and passes.
 */
#include "reef-test.h"
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdatomic.h>

#define MAX_CPUS 256
#define UNMAP_ROUNDS 100
#define PROTECT_ROUNDS 50
#define MULTI_ROUNDS 20
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
static atomic_int spinning, stop_spinning;
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

/* Pages mapped in a round, and the one the readers read. */
static int round_pages(int round)
{
    if (round <= UNMAP_ROUNDS || round > UNMAP_ROUNDS + 2 * MULTI_ROUNDS)
        return 1;
    return round <= UNMAP_ROUNDS + MULTI_ROUNDS ? 8 : 64;
}

static volatile int *round_word(volatile int *base, int round)
{
    return base + (round % round_pages(round)) * 1024 + round % 1024;
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
    for (int round = 1; round <= UNMAP_ROUNDS + 2 * MULTI_ROUNDS + PROTECT_ROUNDS; round++) {
        while (atomic_load(&published_round) != round)
            ;
        volatile int *p = round_word(atomic_load(&page), round);
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
    /* The counter phase: spin in user mode on this core until told to stop. */
    atomic_fetch_add(&spinning, 1);
    while (!atomic_load(&stop_spinning))
        ;
    return NULL;
}

static void round_trip(int round, int use_mprotect)
{
    size_t len = (size_t)round_pages(round) * 4096;
    volatile int *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        FAIL("mmap failed: %s", strerror(errno));
    for (size_t i = 0; i < len / sizeof(int); i += 1024)
        p[i] = 1;
    *round_word(p, round) = expected_value(round);
    atomic_store(&page, p);
    atomic_store(&published_round, round);
    for (int i = 0; i < nreaders; i++)
        while (atomic_load(&readers[i].ready_round) != round ||
               atomic_load(&readers[i].reads) < READS_BEFORE)
            if (atomic_load(&readers[i].done_round) == round)
                break; /* it stopped early: reported below */
    if (use_mprotect)
        CHECK_SYS(mprotect((void *)p, len, PROT_NONE));
    else
        CHECK_SYS(munmap((void *)p, len));
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
                     r->fault_addr, (void *)round_word(p, round));
            FAIL("round %d: the reader on cpu %d completed a read of the page after %s returned "
                 "(stale TLB entry)",
                 round, r->cpu, use_mprotect ? "mprotect(PROT_NONE)" : "munmap");
        }
        r->fault_addr = NULL;
    }
    if (use_mprotect)
        CHECK_SYS(munmap((void *)p, len));
}

/* Reaches of other cores so far: /proc/reef/tlb's `interrupted` plus `deferred`, read without
 * malloc (which could unmap); -1 if there is no such file (Linux). */
static long tlb_reaches(void)
{
    static char buf[4096];
    int fd = open("/proc/reef/tlb", O_RDONLY);
    if (fd < 0)
        return -1;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        FAIL("/proc/reef/tlb: empty read");
    buf[n] = 0;
    long total = 0;
    const char *keys[] = {"\ninterrupted ", "\ndeferred "};
    for (int i = 0; i < 2; i++) {
        const char *at = strstr(buf, keys[i]);
        if (!at)
            FAIL("/proc/reef/tlb has no '%s' line:\n%s", keys[i] + 1, buf);
        total += atol(at + strlen(keys[i]));
    }
    return total;
}

/* With every reader spinning on its own core: an unmap with nothing to invalidate reaches no
 * core, one with a touched page reaches every reader's core. */
static void counter_phase(void)
{
    while (atomic_load(&spinning) != nreaders)
        ;
    long before = tlb_reaches();
    if (before < 0) {
        SAY("no /proc/reef/tlb (not Reef): counter phase skipped");
        return;
    }
    for (int i = 0; i < 10; i++) {
        void *big = mmap(NULL, 64 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (big == MAP_FAILED)
            FAIL("mmap 64 MiB: %s", strerror(errno));
        CHECK_SYS(munmap(big, 64 << 20));
    }
    long after = tlb_reaches();
    if (after != before)
        FAIL("unmapping untouched memory reached %ld other cores (expected none)",
             after - before);
    volatile int *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        FAIL("mmap: %s", strerror(errno));
    p[0] = 1;
    CHECK_SYS(munmap((void *)p, 4096));
    long touched = tlb_reaches() - after;
    if (touched != nreaders)
        FAIL("unmapping a touched page reached %ld other cores, expected the %d readers' cores",
             touched, nreaders);
    SAY("untouched 64 MiB unmapped 10 times: no core reached; a touched page: %ld cores", touched);
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
    for (int i = 0; i < MULTI_ROUNDS; i++)
        round_trip(round++, 0);
    SAY("%d munmap rounds of 8 touched pages: the same", MULTI_ROUNDS);
    for (int i = 0; i < MULTI_ROUNDS; i++)
        round_trip(round++, 0);
    SAY("%d munmap rounds of 64 touched pages: the same", MULTI_ROUNDS);
    for (int i = 0; i < PROTECT_ROUNDS; i++)
        round_trip(round++, 1);
    SAY("%d mprotect(PROT_NONE) rounds: the same", PROTECT_ROUNDS);
    counter_phase();
    atomic_store(&stop_spinning, 1);
    for (int i = 0; i < nreaders; i++)
        CHECK_PT(pthread_join(readers[i].thread, NULL));
    PASS();
}
