/*
 * mman: memory-mapping semantics.
 *
 * - anonymous private mappings are zero-filled, page-aligned and writable; a big sparse mapping
 *   touched here and there;
 * - MAP_FIXED over the middle of a mapping replaces just that page (fresh zeroes);
 * - MAP_POPULATE mappings work like any other;
 * - munmap of the middle page splits a mapping: both ends keep their data, the hole faults with
 *   SIGSEGV (SEGV_MAPERR) at the exact address;
 * - mprotect to read-only: reads work, a write faults (SEGV_ACCERR, exact si_addr) and changes
 *   nothing; mprotect back to read-write; a PROT_NONE read faults; a handler that fixes the
 *   protection and returns lets the faulting write run again and succeed;
 * - brk grows (new memory zeroed and writable) and shrinks (the released pages fault);
 * - MAP_SHARED memory written by a forked child is seen by the parent; MAP_PRIVATE memory
 *   written by the child is not;
 * - madvise(MADV_DONTNEED) is accepted; argument errors give EINVAL.
 *
 * Faults are caught by a SIGSEGV handler (SA_SIGINFO) that records si_addr/si_code and leaves
 * with siglongjmp.
 */
#include "reef-test.h"
#include <setjmp.h>
#include <signal.h>

#define PAGE 4096UL

static sigjmp_buf fault_jump;
static volatile sig_atomic_t armed;
static void *volatile fault_addr;
static volatile int fault_code;
/* When set, the handler makes this page writable and returns instead of jumping. */
static void *volatile fix_page;
static volatile int fixes;

static void on_segv(int sig, siginfo_t *si, void *ctx)
{
    (void)ctx;
    if (fix_page) {
        fault_addr = si->si_addr;
        fault_code = si->si_code;
        if (mprotect(fix_page, PAGE, PROT_READ | PROT_WRITE) != 0)
            _exit(3);
        fix_page = NULL;
        fixes++;
        return;
    }
    if (!armed) {
        static const char msg[] = "FAIL mman: unexpected SIGSEGV\n";
        write(1, msg, sizeof msg - 1);
        _exit(2);
    }
    (void)sig;
    fault_addr = si->si_addr;
    fault_code = si->si_code;
    armed = 0;
    siglongjmp(fault_jump, 1);
}

/* Whether reading (write == 0) or writing one byte at `p` faults. */
static int faults(volatile char *p, int write)
{
    fault_addr = NULL;
    fault_code = 0;
    if (sigsetjmp(fault_jump, 1) == 0) {
        armed = 1;
        if (write)
            *p = 0x5a;
        else
            (void)*p;
        armed = 0;
        return 0;
    }
    return 1;
}

/* Fails unless the access faults with SIGSEGV at exactly `p` with si_code `code`. */
static void expect_fault(volatile char *p, int write, int code, const char *what)
{
    if (!faults(p, write))
        FAIL("%s: the %s at %p did not fault", what, write ? "write" : "read", (void *)p);
    if (fault_addr != (void *)p)
        FAIL("%s: si_addr %p, expected %p", what, fault_addr, (void *)p);
    if (fault_code != code)
        FAIL("%s: si_code %d, expected %d", what, fault_code, code);
}

static char *map(size_t len, int prot, int flags)
{
    void *p = mmap(NULL, len, prot, flags | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        FAIL("mmap(%zu bytes, prot %d, flags 0x%x) failed: %s", len, prot, flags, strerror(errno));
    if ((uintptr_t)p % PAGE != 0)
        FAIL("mmap returned %p, not page-aligned", p);
    return p;
}

static void anonymous(void)
{
    char *p = map(4 * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE);
    for (size_t i = 0; i < 4 * PAGE; i++)
        if (p[i] != 0)
            FAIL("fresh anonymous memory at offset %zu is %d", i, p[i]);
    for (size_t i = 0; i < 4 * PAGE; i++)
        p[i] = (char)(i * 7);
    for (size_t i = 0; i < 4 * PAGE; i++)
        CHECK_EQ(p[i], (char)(i * 7));
    CHECK_SYS(munmap(p, 4 * PAGE));

    size_t big = 64UL << 20;
    char *s = map(big, PROT_READ | PROT_WRITE, MAP_PRIVATE);
    for (size_t off = 0; off < big; off += 4UL << 20)
        s[off + 123] = (char)(off >> 20);
    for (size_t off = 0; off < big; off += 4UL << 20) {
        CHECK_EQ(s[off + 123], (char)(off >> 20));
        CHECK_EQ(s[off], 0);
    }
    CHECK_SYS(munmap(s, big));
    SAY("anonymous private mappings: zero-filled, writable; 64 MiB sparse mapping touched");
}

static void fixed(void)
{
    char *p = map(3 * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE);
    memset(p, 0xaa, 3 * PAGE);
    void *q = mmap(p + PAGE, PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED,
                   -1, 0);
    if (q != p + PAGE)
        FAIL("mmap(MAP_FIXED at %p) returned %p (%s)", (void *)(p + PAGE), q, strerror(errno));
    for (size_t i = 0; i < PAGE; i++) {
        CHECK_EQ(p[i], (char)0xaa);
        CHECK_EQ(p[PAGE + i], 0);
        CHECK_EQ(p[2 * PAGE + i], (char)0xaa);
    }
    CHECK_SYS(munmap(p, 3 * PAGE));
    SAY("MAP_FIXED replaced the middle page with zeroes, the neighbours kept their data");
}

static void populate(void)
{
    char *p = map(16 * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_POPULATE);
    for (size_t i = 0; i < 16 * PAGE; i += 512)
        CHECK_EQ(p[i], 0);
    for (size_t i = 0; i < 16 * PAGE; i += 512)
        p[i] = 1;
    CHECK_SYS(munmap(p, 16 * PAGE));
    SAY("MAP_POPULATE: 16 pages readable (zero) and writable");
}

static void split(void)
{
    char *p = map(3 * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE);
    for (size_t i = 0; i < 3 * PAGE; i++)
        p[i] = (char)(i / PAGE + 1);
    CHECK_SYS(munmap(p + PAGE, PAGE));
    CHECK_EQ(p[0], 1);
    CHECK_EQ(p[PAGE - 1], 1);
    CHECK_EQ(p[2 * PAGE], 3);
    CHECK_EQ(p[3 * PAGE - 1], 3);
    expect_fault(p + PAGE, 0, SEGV_MAPERR, "read of the unmapped middle");
    expect_fault(p + 2 * PAGE - 1, 1, SEGV_MAPERR, "write to the unmapped middle");
    CHECK_SYS(munmap(p, PAGE));
    expect_fault(p + 17, 0, SEGV_MAPERR, "read of the unmapped first page");
    CHECK_EQ(p[2 * PAGE + 5], 3);
    CHECK_SYS(munmap(p + 2 * PAGE, PAGE));
    expect_fault(p + 2 * PAGE, 0, SEGV_MAPERR, "read of the unmapped last page");
    SAY("munmap of the middle page split the mapping; unmapped pages fault at si_addr");
}

static void protect(void)
{
    char *p = map(2 * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE);
    memset(p, 0x11, 2 * PAGE);
    CHECK_SYS(mprotect(p, PAGE, PROT_READ));
    CHECK_EQ(p[100], 0x11);
    expect_fault(p + 100, 1, SEGV_ACCERR, "write to a read-only page");
    CHECK_EQ(p[100], 0x11);
    p[PAGE + 100] = 0x22; /* the second page is still writable */
    SAY("mprotect(PROT_READ): reads work, a write faults with SEGV_ACCERR at si_addr");
    CHECK_SYS(mprotect(p, PAGE, PROT_READ | PROT_WRITE));
    p[100] = 0x33;
    CHECK_EQ(p[100], 0x33);
    SAY("mprotect back to read-write: the write works");

    CHECK_SYS(mprotect(p + PAGE, PAGE, PROT_NONE));
    expect_fault(p + PAGE + 7, 0, SEGV_ACCERR, "read of a PROT_NONE page");
    CHECK_SYS(mprotect(p + PAGE, PAGE, PROT_READ));
    CHECK_EQ(p[PAGE + 100], 0x22);
    SAY("PROT_NONE: a read faults; the data is back after mprotect(PROT_READ)");

    char *n = map(PAGE, PROT_NONE, MAP_PRIVATE);
    expect_fault(n + 1, 0, SEGV_ACCERR, "read of a mapping created PROT_NONE");
    CHECK_SYS(munmap(n, PAGE));

    /* A handler that repairs the protection and returns: the write is retried and lands. */
    CHECK_SYS(mprotect(p, PAGE, PROT_READ));
    fix_page = p;
    ((volatile char *)p)[200] = 0x44;
    CHECK_EQ(fixes, 1);
    CHECK(fault_addr == p + 200);
    CHECK_EQ(p[200], 0x44);
    CHECK_SYS(munmap(p, 2 * PAGE));
    SAY("a SIGSEGV handler that mprotects and returns: the faulting write is retried");
}

static long sys_brk(uintptr_t addr)
{
    return syscall(SYS_brk, addr);
}

static void brk_checks(void)
{
    uintptr_t start = (uintptr_t)sys_brk(0);
    CHECK(start != 0);
    uintptr_t grown = start + 3 * PAGE + 100;
    CHECK_EQ(sys_brk(grown), grown);
    CHECK_EQ(sys_brk(0), grown);
    volatile char *b = (volatile char *)start;
    for (uintptr_t i = 0; i < grown - start; i++)
        CHECK_EQ(b[i], 0);
    for (uintptr_t i = 0; i < grown - start; i++)
        b[i] = (char)(i % 251 + 1);
    CHECK_EQ(b[3 * PAGE + 99], (char)((3 * PAGE + 99) % 251 + 1));
    SAY("brk grew by 3 pages + 100 bytes: zero-filled and writable");
    CHECK_EQ(sys_brk(start), start);
    CHECK_EQ(sys_brk(0), start);
    uintptr_t released = (start + PAGE - 1) / PAGE * PAGE + PAGE;
    expect_fault((volatile char *)released, 0, SEGV_MAPERR, "read above the shrunk brk");
    CHECK_EQ(sys_brk(start + 2 * PAGE + 1), start + 2 * PAGE + 1);
    CHECK_EQ(*(volatile char *)released, 0);
    CHECK_EQ(sys_brk(start), start);
    SAY("brk shrank back: the released pages fault; grown again, memory is fresh");
}

static void shared(void)
{
    char *s = map(2 * PAGE, PROT_READ | PROT_WRITE, MAP_SHARED);
    char *p = map(PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE);
    memset(s, 1, 2 * PAGE);
    memset(p, 1, PAGE);
    pid_t pid = CHECK_SYS(fork());
    if (pid == 0) {
        for (size_t i = 0; i < 2 * PAGE; i++)
            if (s[i] != 1)
                _exit(10);
        for (size_t i = 0; i < PAGE; i++)
            if (p[i] != 1)
                _exit(11);
        memset(s, 2, 2 * PAGE);
        memset(p, 2, PAGE);
        _exit(0);
    }
    CHECK_CHILD_EXIT(pid, 0);
    for (size_t i = 0; i < 2 * PAGE; i++)
        if (s[i] != 2)
            FAIL("shared byte %zu is %d after the child wrote 2", i, s[i]);
    for (size_t i = 0; i < PAGE; i++)
        if (p[i] != 1)
            FAIL("private byte %zu is %d: the child's write leaked into the parent", i, p[i]);
    CHECK_SYS(munmap(s, 2 * PAGE));
    CHECK_SYS(munmap(p, PAGE));
    SAY("MAP_SHARED: the child's writes are seen; MAP_PRIVATE: the child's writes are not");
}

static void advice_and_errors(void)
{
    char *p = map(4 * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE);
    memset(p, 9, 4 * PAGE);
    CHECK_SYS(madvise(p, 4 * PAGE, MADV_DONTNEED));
    p[0] = 1; /* still mapped and writable */
    SAY("madvise(MADV_DONTNEED) accepted (page now reads %d; Linux gives 0)", p[PAGE]);
    /* Raw calls: musl's mprotect() rounds the address down itself. */
    CHECK_ERRNO(syscall(SYS_munmap, p + 1, PAGE), EINVAL);
    CHECK_ERRNO(syscall(SYS_mprotect, p + 1, PAGE, PROT_READ), EINVAL);
    CHECK(mmap(NULL, 0, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0) == MAP_FAILED);
    CHECK_EQ(errno, EINVAL);
    CHECK(mmap(p + 1, PAGE, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) ==
          MAP_FAILED);
    CHECK_EQ(errno, EINVAL);
    CHECK_SYS(munmap(p, 4 * PAGE));
    SAY("unaligned munmap/mprotect/MAP_FIXED and zero-length mmap: EINVAL");
}

int main(void)
{
    test_begin("mman");
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_segv;
    sa.sa_flags = SA_SIGINFO;
    CHECK_SYS(sigaction(SIGSEGV, &sa, NULL));
    anonymous();
    fixed();
    populate();
    split();
    protect();
    brk_checks();
    shared();
    advice_and_errors();
    PASS();
}
