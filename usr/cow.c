/*
 * cow: fork shares private memory copy-on-write, and untouched memory reads as zeros.
 *
 * - contents: after fork, parent and child each see the pre-fork contents of private pages
 *   (heap, stack, data, anonymous mmap), and neither sees the other's later writes, in both
 *   orders (child writes first, parent writes first), through three generations;
 * - protections: a page written and then made PROT_NONE before fork keeps its contents in the
 *   child once made readable again, and a read-only page made writable after fork is private to
 *   the process that writes it; MAP_SHARED memory stays shared;
 * - the kernel's own writes (read(2) into a buffer shared copy-on-write) copy the page too;
 * - futex: a thread waits on a private futex word in a page fork shared; another thread of the
 *   same process writes that page (which copies it) and wakes the waiter: private futexes are
 *   keyed by address, not by frame;
 * - zeros: untouched anonymous memory reads as zeros, and a write after the read sees only its
 *   own data;
 * - memory (Reef only, reef_free_bytes): reading 32 MiB of untouched memory takes almost
 *   nothing, writing it takes it; a fork of a process with 32 MiB written takes almost nothing
 *   until the child writes; and when the child has exited, free memory is back.
 */
#include "reef-test.h"
#include <pthread.h>

#define FUTEX_WAIT_PRIVATE 128
#define FUTEX_WAKE_PRIVATE 129

#define PAGES 256
#define BIG (32L << 20)
/* Page tables, kernel stacks and heap arenas (2 MiB each, kept): well below the 32 MiB that
 * a copy (or no zero page) would take. */
#define SLACK (8L << 20)

static long data_word = 0x1234;

static void fill(unsigned char *p, size_t pages, unsigned tag)
{
    for (size_t i = 0; i < pages; i++)
        memset(p + i * 4096, (int)((i + tag) & 0xff), 4096);
}

/* Fails unless every byte of every page is the value fill(.., tag) put there. */
static void expect(const unsigned char *p, size_t pages, unsigned tag, const char *who)
{
    for (size_t i = 0; i < pages; i++)
        for (size_t j = 0; j < 4096; j += 512)
            if (p[i * 4096 + j] != ((i + tag) & 0xff))
                FAIL("%s: page %zu byte %zu is %d, expected %d", who, i, j, p[i * 4096 + j],
                     (int)((i + tag) & 0xff));
}

static unsigned char *anon(size_t len, int prot)
{
    void *p = mmap(NULL, len, prot, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        FAIL("mmap of %zu bytes: %s", len, strerror(errno));
    return p;
}

/* ---- contents ---- */

/* One generation: `p` holds tag `tag`; a child checks it, writes tag+1 and recurses (while
 * `depth` lasts), then exits; the parent, which wrote tag+100 meanwhile or after, checks its
 * own data is untouched. */
static void generation(unsigned char *p, unsigned tag, int depth, int parent_first)
{
    unsigned char stack_page[4096];
    memset(stack_page, (int)tag, sizeof stack_page);
    data_word = tag;
    int go[2];
    CHECK_SYS(pipe(go));
    pid_t pid = CHECK_SYS(fork());
    if (pid == 0) {
        char c;
        CHECK_EQ(read(go[0], &c, 1), 1);
        expect(p, PAGES, tag, "child before writing");
        CHECK_EQ(stack_page[100], tag & 0xff);
        CHECK_EQ(data_word, tag);
        fill(p, PAGES, tag + 1);
        memset(stack_page, (int)(tag + 1), sizeof stack_page);
        data_word = tag + 1;
        expect(p, PAGES, tag + 1, "child after writing");
        if (depth > 1)
            generation(p, tag + 1, depth - 1, !parent_first);
        _exit(0);
    }
    if (parent_first) {
        fill(p, PAGES, tag + 100);
        CHECK_EQ(write(go[1], "x", 1), 1);
        CHECK_CHILD_EXIT(pid, 0);
    } else {
        CHECK_EQ(write(go[1], "x", 1), 1);
        CHECK_CHILD_EXIT(pid, 0);
        expect(p, PAGES, tag, "parent after the child wrote");
        fill(p, PAGES, tag + 100);
    }
    expect(p, PAGES, tag + 100, "parent");
    CHECK_EQ(stack_page[4095], tag & 0xff);
    CHECK_EQ(data_word, tag);
    close(go[0]);
    close(go[1]);
}

static void contents(void)
{
    unsigned char *p = anon(PAGES * 4096, PROT_READ | PROT_WRITE);
    fill(p, PAGES, 7);
    generation(p, 7, 3, 0);
    fill(p, PAGES, 9);
    generation(p, 9, 3, 1);
    unsigned char *h = malloc(64 * 4096);
    CHECK(h != NULL);
    fill(h, 64, 3);
    pid_t pid = CHECK_SYS(fork());
    if (pid == 0) {
        expect(h, 64, 3, "child heap");
        fill(h, 64, 4);
        _exit(0);
    }
    CHECK_CHILD_EXIT(pid, 0);
    expect(h, 64, 3, "parent heap");
    free(h);
    CHECK_SYS(munmap(p, PAGES * 4096));
    SAY("contents: parent and child keep their own copies through three generations");
}

/* ---- protections ---- */

static void protections(void)
{
    unsigned char *none = anon(4 * 4096, PROT_READ | PROT_WRITE);
    fill(none, 4, 40);
    CHECK_SYS(mprotect(none, 4 * 4096, PROT_NONE));
    unsigned char *ro = anon(4 * 4096, PROT_READ | PROT_WRITE);
    fill(ro, 4, 50);
    CHECK_SYS(mprotect(ro, 4 * 4096, PROT_READ));
    unsigned char *sh = shared_page(4096);
    sh[0] = 1;
    pid_t pid = CHECK_SYS(fork());
    if (pid == 0) {
        CHECK_SYS(mprotect(none, 4 * 4096, PROT_READ));
        expect(none, 4, 40, "child PROT_NONE page made readable");
        CHECK_SYS(mprotect(ro, 4 * 4096, PROT_READ | PROT_WRITE));
        fill(ro, 4, 51);
        sh[0] = 2;
        _exit(0);
    }
    CHECK_CHILD_EXIT(pid, 0);
    CHECK_EQ(sh[0], 2);
    expect(ro, 4, 50, "parent read-only page");
    CHECK_SYS(mprotect(ro, 4 * 4096, PROT_READ | PROT_WRITE));
    fill(ro, 4, 52);
    CHECK_SYS(mprotect(none, 4 * 4096, PROT_READ | PROT_WRITE));
    expect(none, 4, 40, "parent PROT_NONE page made writable");
    CHECK_SYS(munmap(none, 4 * 4096));
    CHECK_SYS(munmap(ro, 4 * 4096));
    CHECK_SYS(munmap(sh, 4096));
    SAY("protections: PROT_NONE contents survive fork, read-only pages made writable stay private, "
        "shared pages stay shared");
}

/* ---- kernel writes ---- */

static void kernel_writes(void)
{
    unsigned char *p = anon(2 * 4096, PROT_READ | PROT_WRITE);
    fill(p, 2, 60);
    int fds[2];
    CHECK_SYS(pipe(fds));
    pid_t pid = CHECK_SYS(fork());
    if (pid == 0) {
        /* The kernel writes into the shared page on the child's behalf. */
        CHECK_EQ(read(fds[0], p + 4096 + 10, 5), 5);
        CHECK(memcmp(p + 4096 + 10, "hello", 5) == 0);
        expect(p, 1, 60, "child first page");
        _exit(0);
    }
    CHECK_EQ(write(fds[1], "hello", 5), 5);
    CHECK_CHILD_EXIT(pid, 0);
    expect(p, 2, 60, "parent after the kernel wrote into the child's copy");
    close(fds[0]);
    close(fds[1]);
    CHECK_SYS(munmap(p, 2 * 4096));
    SAY("kernel writes: read(2) into a copy-on-write page copies it");
}

/* ---- futex ---- */

struct futex_page {
    atomic_int word;
    atomic_int waiting;
    char pad[4096 - 2 * sizeof(atomic_int)];
};

static struct futex_page *fp;

static void *waiter(void *arg)
{
    (void)arg;
    atomic_store(&fp->waiting, 1);
    while (atomic_load(&fp->word) == 0) {
        long r = syscall(SYS_futex, &fp->word, FUTEX_WAIT_PRIVATE, 0, NULL, NULL, 0);
        if (r != 0 && errno != EAGAIN && errno != EINTR)
            FAIL("futex wait: %s", strerror(errno));
    }
    return NULL;
}

static void futex_after_fork(void)
{
    fp = (struct futex_page *)anon(sizeof *fp, PROT_READ | PROT_WRITE);
    fp->pad[0] = 1;
    pid_t pid = CHECK_SYS(fork());
    if (pid == 0) {
        /* The page is shared copy-on-write with the parent now. */
        pthread_t t;
        CHECK_EQ(pthread_create(&t, NULL, waiter, NULL), 0);
        while (atomic_load(&fp->waiting) == 0)
            sched_yield();
        /* Let the waiter sleep (if it does not, the test still holds: it sees word 1). */
        for (int i = 0; i < 100; i++)
            sched_yield();
        atomic_store(&fp->word, 1); /* copies the page */
        CHECK_SYS(syscall(SYS_futex, &fp->word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0));
        CHECK_EQ(pthread_join(t, NULL), 0);
        _exit(0);
    }
    CHECK_CHILD_EXIT(pid, 0);
    CHECK_EQ(atomic_load(&fp->word), 0);
    CHECK_SYS(munmap(fp, sizeof *fp));
    SAY("futex: a waiter on a copy-on-write page is woken after the page is copied");
}

/* ---- zeros and memory ---- */

static long free_now(void)
{
    return reef_free_bytes();
}

static void zeros_and_memory(void)
{
    int reef = on_reef();
    long before = free_now();
    unsigned char *p = anon(BIG, PROT_READ | PROT_WRITE);
    unsigned sum = 0;
    for (long i = 0; i < BIG; i += 4096)
        sum += p[i] + p[i + 4095];
    CHECK_EQ(sum, 0);
    long after_read = free_now();
    if (reef) {
        SAY("zeros: reading %ld MiB took %ld KiB", BIG >> 20, (before - after_read) >> 10);
        if (before - after_read > SLACK)
            FAIL("reading untouched memory took %ld KiB", (before - after_read) >> 10);
    }
    for (long i = 0; i < BIG; i += 4096)
        p[i] = (unsigned char)(i >> 12);
    for (long i = 0; i < BIG; i += 4096) {
        CHECK_EQ(p[i], (unsigned char)(i >> 12));
        CHECK_EQ(p[i + 1], 0);
    }
    long after_write = free_now();
    if (reef && after_read - after_write < BIG - SLACK)
        FAIL("writing %ld MiB took only %ld KiB", BIG >> 20, (after_read - after_write) >> 10);

    int go[2], ready[2];
    CHECK_SYS(pipe(go));
    CHECK_SYS(pipe(ready));
    pid_t pid = CHECK_SYS(fork());
    if (pid == 0) {
        char c;
        CHECK_EQ(read(go[0], &c, 1), 1);
        for (long i = 0; i < BIG; i += 4096)
            p[i] ^= 0xff;
        CHECK_EQ(write(ready[1], "w", 1), 1);
        CHECK_EQ(read(go[0], &c, 1), 1);
        _exit(0);
    }
    long forked = free_now();
    CHECK_EQ(write(go[1], "g", 1), 1);
    char c;
    CHECK_EQ(read(ready[0], &c, 1), 1);
    long written = free_now();
    CHECK_EQ(write(go[1], "g", 1), 1);
    CHECK_CHILD_EXIT(pid, 0);
    for (long i = 0; i < BIG; i += 4096)
        CHECK_EQ(p[i], (unsigned char)(i >> 12));
    CHECK_SYS(munmap(p, BIG));
    long end = free_now();
    if (reef) {
        SAY("memory: fork took %ld KiB, the child's writes %ld KiB; %ld KiB before, %ld KiB at "
            "the end",
            (after_write - forked) >> 10, (forked - written) >> 10, before >> 10, end >> 10);
        if (after_write - forked > SLACK)
            FAIL("fork of a process with %ld MiB written took %ld KiB", BIG >> 20,
                 (after_write - forked) >> 10);
        if (forked - written < BIG - SLACK)
            FAIL("the child's writes to %ld MiB took only %ld KiB", BIG >> 20,
                 (forked - written) >> 10);
        if (end < before - SLACK)
            FAIL("lost %ld KiB", (before - end) >> 10);
    }
    close(go[0]);
    close(go[1]);
    close(ready[0]);
    close(ready[1]);
    SAY("zeros: untouched memory reads as zeros%s",
        reef ? " from the zero page; fork takes memory only when pages are written" : "");
}

int main(void)
{
    test_begin("cow");
    contents();
    protections();
    kernel_writes();
    futex_after_fork();
    zeros_and_memory();
    PASS();
}
