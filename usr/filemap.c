/*
 * filemap: file mappings. Private ones (MAP_PRIVATE, as the dynamic loader uses them): the
 * mapping reads the file's bytes, zeros after the end of the file in its last page, and SIGBUS
 * (BUS_ADRERR) in a page wholly past the end; a write through the mapping stays private
 * (copy-on-write: the file and other mappings do not see it, nor does the parent see a fork
 * child's); offsets, mprotect, MAP_FIXED over other memory, /dev/zero. Shared ones
 * (MAP_SHARED): a store is what read() and every other shared mapping see at once, also a fork
 * child's from another core (another NUMA node on 4c2n), and write() changes what mappings
 * read; the stores stay in the file after munmap; msync. Linux's errors for an unaligned or
 * huge offset, a write-only, O_PATH, directory or pipe descriptor, a shared writable mapping
 * of a read-only descriptor, and msync's.
 */
#include "reef-test.h"

#include <fcntl.h>
#include <setjmp.h>
#include <sys/stat.h>

#define PAGE 4096
/* The file: three pages and 100 bytes. */
#define SIZE (3 * PAGE + 100)

static char path[64];
static sigjmp_buf jump;
static volatile siginfo_t caught;

static void on_bus(int sig, siginfo_t *info, void *ctx)
{
    (void)sig;
    (void)ctx;
    caught = *info;
    siglongjmp(jump, 1);
}

/* The byte at offset i of the file. */
static unsigned char pattern(size_t i)
{
    return (unsigned char)(i * 7 + i / PAGE);
}

static int make_file(void)
{
    snprintf(path, sizeof path, "/tmp/filemap.%d", (int)getpid());
    int fd = CHECK_SYS(open(path, O_RDWR | O_CREAT | O_TRUNC, 0644));
    static unsigned char buf[SIZE];
    for (size_t i = 0; i < SIZE; i++)
        buf[i] = pattern(i);
    CHECK_EQ(write(fd, buf, SIZE), SIZE);
    return fd;
}

/* Whether reading the byte at p raises SIGBUS with BUS_ADRERR at p. */
static int reading_raises_sigbus(volatile unsigned char *p)
{
    struct sigaction sa = {0};
    sa.sa_sigaction = on_bus;
    sa.sa_flags = SA_SIGINFO;
    CHECK_SYS(sigaction(SIGBUS, &sa, NULL));
    int raised = 0;
    if (sigsetjmp(jump, 1) == 0)
        (void)*p;
    else
        raised = caught.si_signo == SIGBUS && caught.si_code == BUS_ADRERR &&
                 caught.si_addr == (void *)p;
    signal(SIGBUS, SIG_DFL);
    return raised;
}

static void reads_the_file(int fd)
{
    /* Five pages: four hold the file, the fifth lies wholly past its end. */
    unsigned char *p = mmap(NULL, 5 * PAGE, PROT_READ, MAP_PRIVATE, fd, 0);
    CHECK(p != MAP_FAILED);
    for (size_t i = 0; i < SIZE; i++)
        if (p[i] != pattern(i))
            FAIL("byte %zu reads %u, the file has %u", i, p[i], pattern(i));
    for (size_t i = SIZE; i < 4 * PAGE; i++)
        if (p[i] != 0)
            FAIL("byte %zu past the end of the file reads %u, not 0", i, p[i]);
    CHECK(reading_raises_sigbus(p + 4 * PAGE + 8));
    CHECK_SYS(munmap(p, 5 * PAGE));
    /* From an offset. */
    p = mmap(NULL, 2 * PAGE, PROT_READ, MAP_PRIVATE, fd, PAGE);
    CHECK(p != MAP_FAILED);
    for (size_t i = 0; i < 2 * PAGE; i++)
        CHECK_EQ(p[i], pattern(PAGE + i));
    /* PROT_NONE and back. */
    CHECK_SYS(mprotect(p, 2 * PAGE, PROT_NONE));
    CHECK_SYS(mprotect(p, 2 * PAGE, PROT_READ));
    CHECK_EQ(p[PAGE + 5], pattern(2 * PAGE + 5));
    CHECK_SYS(munmap(p, 2 * PAGE));
    SAY("reads: the file's bytes, zeros after its end in the last page, SIGBUS past it, from an "
        "offset, after mprotect");
}

static void writes_stay_private(int fd)
{
    unsigned char *a = mmap(NULL, SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
    unsigned char *b = mmap(NULL, SIZE, PROT_READ, MAP_PRIVATE, fd, 0);
    CHECK(a != MAP_FAILED && b != MAP_FAILED);
    a[10] = 0xee;
    a[2 * PAGE + 1] = 0xdd;
    CHECK_EQ(a[10], 0xee);
    CHECK_EQ(a[11], pattern(11));
    CHECK_EQ(b[10], pattern(10));
    unsigned char byte;
    CHECK_EQ(pread(fd, &byte, 1, 10), 1);
    CHECK_EQ(byte, pattern(10));
    pid_t pid = CHECK_SYS(fork());
    if (pid == 0) {
        if (a[10] != 0xee || b[2 * PAGE + 1] != pattern(2 * PAGE + 1))
            _exit(2);
        a[10] = 0x11;
        b[0] = b[0];
        _exit(a[10] == 0x11 ? 0 : 3);
    }
    CHECK_CHILD_EXIT(pid, 0);
    CHECK_EQ(a[10], 0xee);
    CHECK_EQ(a[2 * PAGE + 1], 0xdd);
    CHECK_SYS(munmap(a, SIZE));
    CHECK_SYS(munmap(b, SIZE));
    /* A read-only descriptor maps writable privately. */
    int ro = CHECK_SYS(open(path, O_RDONLY));
    a = mmap(NULL, PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE, ro, 0);
    CHECK(a != MAP_FAILED);
    a[0] = 1;
    CHECK_SYS(munmap(a, PAGE));
    CHECK_SYS(close(ro));
    SAY("writes: private to the mapping (not in the file, another mapping or the parent after "
        "a fork child wrote), also through a read-only descriptor");
}

static void replaces_and_zero(int fd)
{
    unsigned char *p = mmap(NULL, 4 * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                            -1, 0);
    CHECK(p != MAP_FAILED);
    memset(p, 0x5a, 4 * PAGE);
    unsigned char *q = mmap(p + PAGE, PAGE, PROT_READ, MAP_PRIVATE | MAP_FIXED, fd, 2 * PAGE);
    CHECK(q == p + PAGE);
    CHECK_EQ(q[3], pattern(2 * PAGE + 3));
    CHECK_EQ(p[PAGE - 1], 0x5a);
    CHECK_EQ(p[2 * PAGE], 0x5a);
    CHECK_SYS(munmap(p, 4 * PAGE));
    int zero = CHECK_SYS(open("/dev/zero", O_RDWR));
    p = mmap(NULL, 2 * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE, zero, 0);
    CHECK(p != MAP_FAILED);
    CHECK_EQ(p[PAGE + 9], 0);
    p[PAGE + 9] = 4;
    CHECK_EQ(p[PAGE + 9], 4);
    CHECK_SYS(munmap(p, 2 * PAGE));
    CHECK_SYS(close(zero));
    SAY("MAP_FIXED: a file page in the middle of anonymous memory; /dev/zero: zeroed, writable");
}

static void shared(int fd)
{
    unsigned char *p = mmap(NULL, 5 * PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    unsigned char *q = mmap(NULL, SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    CHECK(p != MAP_FAILED && q != MAP_FAILED);
    for (size_t i = 0; i < SIZE; i++)
        if (p[i] != pattern(i))
            FAIL("shared byte %zu reads %u, the file has %u", i, p[i], pattern(i));
    p[10] = 0xab;
    unsigned char byte;
    CHECK_EQ(pread(fd, &byte, 1, 10), 1);
    CHECK_EQ(byte, 0xab);
    CHECK_EQ(q[10], 0xab);
    q[2 * PAGE + 30] = 0x31;
    CHECK_EQ(p[2 * PAGE + 30], 0x31);
    byte = 0x77;
    CHECK_EQ(pwrite(fd, &byte, 1, 20), 1);
    CHECK_EQ(p[20], 0x77);
    CHECK_EQ(q[20], 0x77);
    /* A private mapping made now starts from the same bytes and keeps its writes. */
    unsigned char *r = mmap(NULL, PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
    CHECK(r != MAP_FAILED);
    CHECK_EQ(r[10], 0xab);
    r[11] = 5;
    CHECK_EQ(p[11], pattern(11));
    CHECK_SYS(munmap(r, PAGE));
    CHECK(reading_raises_sigbus(p + 4 * PAGE + 8));
    /* A child on the last core stores and writes; the parent sees both. */
    int cpus[64];
    int n = allowed_cpus(cpus, 64);
    pid_t pid = CHECK_SYS(fork());
    if (pid == 0) {
        pin_self(cpus[n - 1]);
        p[PAGE + 40] = 0x99;
        unsigned char b = 0x55;
        if (pwrite(fd, &b, 1, PAGE + 50) != 1 || q[PAGE + 50] != 0x55)
            _exit(2);
        _exit(0);
    }
    CHECK_CHILD_EXIT(pid, 0);
    CHECK_EQ(q[PAGE + 40], 0x99);
    CHECK_EQ(p[PAGE + 50], 0x55);
    CHECK_SYS(msync(p, PAGE, MS_SYNC));
    CHECK_SYS(msync(p, 5 * PAGE, MS_ASYNC | MS_INVALIDATE));
    CHECK_ERRNO(msync(p + 1, PAGE, MS_SYNC), EINVAL);
    CHECK_ERRNO(msync(p, PAGE, MS_SYNC | MS_ASYNC), EINVAL);
    CHECK_SYS(munmap(p, 5 * PAGE));
    CHECK_SYS(munmap(q, SIZE));
    CHECK_EQ(pread(fd, &byte, 1, PAGE + 40), 1);
    CHECK_EQ(byte, 0x99);
    /* Read-only descriptors map shared only for reading. */
    int ro = CHECK_SYS(open(path, O_RDONLY));
    CHECK_ERRNO((long)mmap(NULL, PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, ro, 0), EACCES);
    p = mmap(NULL, PAGE, PROT_READ, MAP_SHARED, ro, 0);
    CHECK(p != MAP_FAILED);
    CHECK_EQ(p[10], 0xab);
    CHECK_SYS(munmap(p, PAGE));
    CHECK_SYS(close(ro));
    SAY("shared: stores seen by read() and other mappings, write() seen by mappings, a fork child "
        "on cpu %d too, SIGBUS past the end, msync, stores kept after munmap, EACCES for a "
        "writable mapping of a read-only descriptor",
        cpus[n - 1]);
}

static void errors(int fd)
{
    CHECK_ERRNO((long)mmap(NULL, PAGE, PROT_READ, MAP_PRIVATE, fd, 100), EINVAL);
    CHECK_ERRNO((long)mmap(NULL, PAGE, PROT_READ, MAP_PRIVATE, fd, 1ULL << 63), EOVERFLOW);
    int wo = CHECK_SYS(open(path, O_WRONLY));
    CHECK_ERRNO((long)mmap(NULL, PAGE, PROT_READ, MAP_PRIVATE, wo, 0), EACCES);
    CHECK_SYS(close(wo));
    int opath = CHECK_SYS(open(path, O_PATH));
    CHECK_ERRNO((long)mmap(NULL, PAGE, PROT_READ, MAP_PRIVATE, opath, 0), EBADF);
    CHECK_SYS(close(opath));
    int dir = CHECK_SYS(open("/tmp", O_RDONLY | O_DIRECTORY));
    CHECK_ERRNO((long)mmap(NULL, PAGE, PROT_READ, MAP_PRIVATE, dir, 0), ENODEV);
    CHECK_SYS(close(dir));
    int pipes[2];
    CHECK_SYS(pipe(pipes));
    CHECK_ERRNO((long)mmap(NULL, PAGE, PROT_READ, MAP_PRIVATE, pipes[0], 0), ENODEV);
    CHECK_SYS(close(pipes[0]));
    CHECK_SYS(close(pipes[1]));
    SAY("errors: unaligned offset EINVAL, offset past 2^63 EOVERFLOW, write-only EACCES, O_PATH "
        "EBADF, directory and pipe ENODEV");
}

int main(void)
{
    test_begin("filemap");
    int fd = make_file();
    reads_the_file(fd);
    writes_stay_private(fd);
    replaces_and_zero(fd);
    shared(fd);
    errors(fd);
    CHECK_SYS(close(fd));
    CHECK_SYS(unlink(path));
    PASS();
}
