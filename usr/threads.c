/*
 * threads: one thread per allowed core, each pinned to its core, synchronizing through musl's
 * pthread mutex, condition variable and barrier (all built on futex), plus raw futex WAIT/WAKE:
 *
 * - every thread checks sched_getcpu() == its core after pinning and again at the end;
 * - a mutex-protected counter and an atomic counter reach an exact total;
 * - a token passed round the threads in order with a condition variable leaves an exact log;
 * - barrier phases: every thread sees every other thread's write for the phase, and exactly one
 *   thread per phase gets PTHREAD_BARRIER_SERIAL_THREAD;
 * - TLS: initialised values in every new thread, distinct addresses, values kept per thread;
 * - raw futex: WAIT with a value mismatch is EAGAIN, WAIT with a 10 ms timeout is ETIMEDOUT (after
 *   at least 10 ms), WAKE of a blocked waiter (private and shared futexes, waits with and without
 *   a timeout) returns 1;
 * - a thread made with raw clone(CLONE_CHILD_SETTID|CLONE_CHILD_CLEARTID|CLONE_PARENT_SETTID):
 *   the tid words are written, and its exit clears the child tid word and wakes the waiter;
 * - pthread_join returns each thread's value (musl's join also relies on CLEARTID).
 */
#include "reef-test.h"
#include <pthread.h>
#include <stdatomic.h>

/* From <linux/futex.h>, which musl-gcc does not see. */
#define FUTEX_WAIT 0
#define FUTEX_WAKE 1
#define FUTEX_PRIVATE_FLAG 128
#define FUTEX_WAIT_PRIVATE (FUTEX_WAIT | FUTEX_PRIVATE_FLAG)
#define FUTEX_WAKE_PRIVATE (FUTEX_WAKE | FUTEX_PRIVATE_FLAG)

#define MAX_THREADS 256
#define INCREMENTS 5000
#define ROUNDS 50
#define PHASES 8

static int ncpu;
static int cpus[MAX_THREADS];

static __thread int tls_value = 12345;
static __thread char tls_zero[128];
static int *tls_address[MAX_THREADS];

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static pthread_barrier_t barrier;
static long counter;
static atomic_long atomic_counter;
static int turn;
static int order[ROUNDS * MAX_THREADS];
static atomic_int serial_count;
static atomic_int phase_slot[MAX_THREADS];

static long futex(atomic_int *uaddr, int op, int val, const struct timespec *timeout)
{
    return syscall(SYS_futex, uaddr, op, val, timeout, NULL, 0);
}

static void barrier_wait(void)
{
    int r = pthread_barrier_wait(&barrier);
    if (r == PTHREAD_BARRIER_SERIAL_THREAD)
        atomic_fetch_add(&serial_count, 1);
    else if (r != 0)
        FAIL("pthread_barrier_wait: %s", strerror(r));
}

static void *worker(void *arg)
{
    int id = (int)(long)arg;
    int cpu = cpus[id];

    /* TLS: every new thread starts from the initial image (.tdata) and zeroes (.tbss). */
    CHECK_EQ(tls_value, 12345);
    for (size_t i = 0; i < sizeof tls_zero; i++)
        CHECK_EQ(tls_zero[i], 0);
    tls_value = 1000 + id;
    tls_zero[id % sizeof tls_zero] = 1;
    tls_address[id] = &tls_value;

    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    CHECK_PT(pthread_setaffinity_np(pthread_self(), sizeof set, &set));
    int now = sched_getcpu();
    if (now != cpu)
        FAIL("thread %d pinned to cpu %d runs on cpu %d", id, cpu, now);
    barrier_wait();

    for (int i = 0; i < INCREMENTS; i++) {
        CHECK_PT(pthread_mutex_lock(&lock));
        counter++;
        CHECK_PT(pthread_mutex_unlock(&lock));
        atomic_fetch_add(&atomic_counter, 1);
    }
    barrier_wait();

    for (int r = 0; r < ROUNDS; r++) {
        CHECK_PT(pthread_mutex_lock(&lock));
        while (turn % ncpu != id)
            CHECK_PT(pthread_cond_wait(&cond, &lock));
        order[turn++] = id;
        CHECK_PT(pthread_cond_broadcast(&cond));
        CHECK_PT(pthread_mutex_unlock(&lock));
    }
    barrier_wait();

    for (int phase = 1; phase <= PHASES; phase++) {
        atomic_store(&phase_slot[id], phase);
        barrier_wait();
        for (int t = 0; t < ncpu; t++) {
            int seen = atomic_load(&phase_slot[t]);
            if (seen != phase)
                FAIL("phase %d: thread %d sees thread %d at phase %d", phase, id, t, seen);
        }
        barrier_wait();
    }

    now = sched_getcpu();
    if (now != cpu)
        FAIL("thread %d pinned to cpu %d runs on cpu %d after blocking", id, cpu, now);
    CHECK_EQ(tls_value, 1000 + id);
    CHECK(tls_address[id] == &tls_value);
    return (void *)(long)(id + 100);
}

static void pthread_checks(void)
{
    pthread_t th[MAX_THREADS];
    CHECK_PT(pthread_barrier_init(&barrier, NULL, (unsigned)ncpu));
    for (int i = 0; i < ncpu; i++)
        CHECK_PT(pthread_create(&th[i], NULL, worker, (void *)(long)i));
    for (int i = 0; i < ncpu; i++) {
        void *ret;
        CHECK_PT(pthread_join(th[i], &ret));
        CHECK_EQ((long)ret, i + 100);
    }
    SAY("%d threads pinned to their cores; sched_getcpu() agreed before and after blocking",
        ncpu);
    CHECK_EQ(counter, (long)ncpu * INCREMENTS);
    CHECK_EQ(atomic_load(&atomic_counter), (long)ncpu * INCREMENTS);
    SAY("mutex counter and atomic counter both %ld", counter);
    CHECK_EQ(turn, ROUNDS * ncpu);
    for (int i = 0; i < turn; i++)
        if (order[i] != i % ncpu)
            FAIL("condvar token: step %d taken by thread %d, expected %d", i, order[i], i % ncpu);
    SAY("condition variable passed the token %d times in order", turn);
    /* 3 barriers outside the phase loop, 2 per phase: exactly one serial thread each. */
    CHECK_EQ(atomic_load(&serial_count), 3 + 2 * PHASES);
    SAY("%d barrier waits, one serial thread each", 3 + 2 * PHASES);
    for (int i = 0; i < ncpu; i++)
        for (int j = i + 1; j < ncpu; j++)
            if (tls_address[i] == tls_address[j])
                FAIL("threads %d and %d share the TLS address %p", i, j, (void *)tls_address[i]);
    CHECK_EQ(tls_value, 12345);
    SAY("TLS variables distinct per thread; the main thread's untouched");
    CHECK_PT(pthread_barrier_destroy(&barrier));
}

/* Raw futex WAIT/WAKE between the main thread (waker) and a helper thread (waiter). */
struct ping {
    atomic_int word;
    int op;                      /* FUTEX_WAIT or FUTEX_WAIT_PRIVATE */
    const struct timespec *wait; /* the waiter's timeout, or NULL */
    int first_result;            /* the waiter's first futex() result (0: woken) */
    int first_errno;
};

static void *ping_waiter(void *arg)
{
    struct ping *p = arg;
    int first = 1;
    while (atomic_load(&p->word) == 0) {
        errno = 0;
        long r = futex(&p->word, p->op, 0, p->wait);
        if (first) {
            p->first_result = (int)r;
            p->first_errno = errno;
            first = 0;
        }
    }
    return NULL;
}

static void futex_ping(int private, const struct timespec *wait)
{
    struct ping p = {.op = private ? FUTEX_WAIT_PRIVATE : FUTEX_WAIT, .wait = wait};
    int wake_op = private ? FUTEX_WAKE_PRIVATE : FUTEX_WAKE;
    atomic_store(&p.word, 0);
    pthread_t th;
    CHECK_PT(pthread_create(&th, NULL, ping_waiter, &p));
    /* The word stays 0 until a WAKE finds the waiter blocked, so this loop ends exactly when a
     * wake-up reached it. */
    long woken, tries = 0;
    while ((woken = futex(&p.word, wake_op, 1, NULL)) == 0) {
        tries++;
        sched_yield();
    }
    CHECK_EQ(woken, 1);
    atomic_store(&p.word, 1);
    CHECK_SYS(futex(&p.word, wake_op, 1, NULL));
    CHECK_PT(pthread_join(th, NULL));
    if (p.first_result != 0)
        FAIL("the waiter's first FUTEX_WAIT returned %d (%s), expected 0 (woken)",
             p.first_result, strerror(p.first_errno));
    SAY("%s futex: WAKE found the blocked waiter (wait %s timeout) after %ld empty wakes",
        private ? "private" : "shared", wait ? "with a" : "without", tries);
}

static void futex_checks(void)
{
    atomic_int w;
    atomic_store(&w, 1);
    CHECK_ERRNO(futex(&w, FUTEX_WAIT_PRIVATE, 0, NULL), EAGAIN);
    CHECK_ERRNO(futex(&w, FUTEX_WAIT, 0, NULL), EAGAIN);
    SAY("FUTEX_WAIT with a value mismatch: EAGAIN");

    struct timespec ten_ms = {0, 10 * 1000 * 1000};
    long long t0 = now_ns();
    CHECK_ERRNO(futex(&w, FUTEX_WAIT_PRIVATE, 1, &ten_ms), ETIMEDOUT);
    long long waited = now_ns() - t0;
    if (waited < 10 * 1000 * 1000)
        FAIL("a FUTEX_WAIT with a 10 ms timeout returned after %lld ns", waited);
    SAY("FUTEX_WAIT with a 10 ms timeout: ETIMEDOUT");

    CHECK_EQ(futex(&w, FUTEX_WAKE_PRIVATE, 1, NULL), 0);
    SAY("FUTEX_WAKE without waiters wakes 0");

    struct timespec minute = {60, 0};
    futex_ping(1, NULL);
    futex_ping(0, NULL);
    futex_ping(1, &minute);
    futex_ping(0, &minute);
}

/* A thread made with the raw clone system call; see raw_thread below. */
long raw_thread(unsigned long flags, void *stack_top, int *ptid, atomic_int *ctid,
                int (*fn)(void *), void *arg);
__asm__(".text\n"
        ".globl raw_thread\n"
        ".type raw_thread, @function\n"
        "raw_thread:\n"
        "  and $-16, %rsi\n"
        "  sub $16, %rsi\n"
        "  mov %r8, 0(%rsi)\n" /* fn and arg on the child's stack */
        "  mov %r9, 8(%rsi)\n"
        "  mov %rcx, %r10\n" /* clone(flags, stack, ptid, ctid, tls) */
        "  xor %r8d, %r8d\n"
        "  mov $56, %eax\n"
        "  syscall\n"
        "  test %rax, %rax\n"
        "  jnz 1f\n"
        "  xor %ebp, %ebp\n" /* child: call fn(arg) on the new stack, then exit(2) */
        "  pop %rax\n"
        "  pop %rdi\n"
        "  call *%rax\n"
        "  mov %eax, %edi\n"
        "  mov $60, %eax\n"
        "  syscall\n"
        "  ud2\n"
        "1: ret\n"
        ".size raw_thread, . - raw_thread\n");

struct raw {
    atomic_int ctid;
    int ptid;
    atomic_int seen_ctid;
    atomic_int tid;
};

/* Runs in the raw thread: no libc calls (it shares the creator's TLS). */
static int raw_child(void *arg)
{
    struct raw *r = arg;
    long tid;
    __asm__ volatile("syscall" : "=a"(tid) : "a"(SYS_gettid) : "rcx", "r11", "memory");
    atomic_store(&r->seen_ctid, atomic_load(&r->ctid));
    atomic_store(&r->tid, (int)tid);
    return 0;
}

static char raw_stack[64 * 1024] __attribute__((aligned(16)));

static void cleartid_check(void)
{
    static struct raw r;
    atomic_store(&r.ctid, -1);
    r.ptid = -1;
    unsigned long flags = CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_SIGHAND | CLONE_THREAD |
                          CLONE_SYSVSEM | CLONE_PARENT_SETTID | CLONE_CHILD_SETTID |
                          CLONE_CHILD_CLEARTID;
    long tid = raw_thread(flags, raw_stack + sizeof raw_stack, &r.ptid, &r.ctid, raw_child, &r);
    if (tid < 0)
        FAIL("raw clone failed: %s", strerror((int)-tid));
    CHECK_EQ(r.ptid, tid);
    SAY("waiting for the kernel to clear and wake the CLONE_CHILD_CLEARTID word of thread %ld",
        tid);
    int v;
    while ((v = atomic_load(&r.ctid)) != 0) {
        long rc = futex(&r.ctid, FUTEX_WAIT, v, NULL);
        if (rc != 0 && errno != EAGAIN && errno != EINTR)
            FAIL("FUTEX_WAIT on the child tid word: %s", strerror(errno));
    }
    CHECK_EQ(atomic_load(&r.tid), tid);
    CHECK_EQ(atomic_load(&r.seen_ctid), tid);
    SAY("raw clone: PARENT_SETTID and CHILD_SETTID wrote the tid; the exit cleared and woke");
}

int main(void)
{
    test_begin("threads");
    ncpu = allowed_cpus(cpus, MAX_THREADS);
    SAY("%d allowed cpus (sysconf says %ld online)", ncpu, sysconf(_SC_NPROCESSORS_ONLN));
    futex_checks();
    cleartid_check();
    pthread_checks();
    PASS();
}
