/*
 * mappings: what Linux programs do with mappings besides mmap, and the /proc and /sys files
 * that describe a process and the machine.
 *
 * - memfd_create: a file with no name, read and written, resized, mapped MAP_SHARED across a
 *   fork, named "/memfd:NAME (deleted)" in /proc/self/fd, MFD_CLOEXEC; EINVAL for unknown flags
 *   and a name over 249 bytes, EFAULT for a bad name;
 * - open(O_TMPFILE): a file with no name in a directory (not listed there, link count 0);
 *   EINVAL without write access;
 * - mremap: shrink; grow in place (old bytes kept, new ones zero); ENOMEM when it cannot grow
 *   in place and may not move; MREMAP_MAYMOVE moves the bytes (the old range is gone);
 *   MREMAP_FIXED to a chosen address; a moved MAP_SHARED mapping is still shared with a fork
 *   child, a moved private page still copy-on-write; a file mapping grown over more of the file
 *   reads it, and raises SIGBUS past its end; Linux's errors;
 * - madvise(MADV_DONTNEED): a private file mapping reads the file again, private anonymous
 *   memory reads zeros, shared anonymous memory keeps its bytes; MADV_FREE of a file: EINVAL;
 * - truncation under a mapping: SIGBUS in the pages past the new end, shared and private; the
 *   file grown again reads zeros there;
 * - fallocate: mode 0 extends the file (zeros), KEEP_SIZE changes nothing, PUNCH_HOLE zeros
 *   inside the file (seen through a shared mapping), ZERO_RANGE extends unless KEEP_SIZE;
 *   Linux's errors;
 * - mlock, mlock2, munlock, mlockall, munlockall: accepted over mapped ranges (ENOMEM past
 *   them, EINVAL for bad flags); mlockall(MCL_FUTURE) makes a new anonymous mapping resident
 *   before it is touched (VmRSS grows);
 * - /proc/self/maps shows a file mapping's offset and inode; /proc/self/environ the environment
 *   execve gave (not readable by another user); /proc/self/mountinfo and mounts; the CPU lists
 *   of /sys/devices/system/cpu;
 * - hostile: bad pointers and addresses (EFAULT/EINVAL), and 2000 memfds made, written, mapped,
 *   moved and closed keep no memory.
 */
#include "reef-test.h"

#include <dirent.h>
#include <fcntl.h>
#include <sched.h>
#include <setjmp.h>
#include <sys/mman.h>
#include <sys/stat.h>

#define PAGE 4096L
#ifndef FALLOC_FL_ZERO_RANGE
#define FALLOC_FL_ZERO_RANGE 0x10 /* musl's headers lack it */
#endif

static sigjmp_buf jump;
static volatile int caught;

static void on_fault(int sig, siginfo_t *info, void *ctx)
{
    (void)info;
    (void)ctx;
    caught = sig;
    siglongjmp(jump, 1);
}

/* The signal reading the byte at p raises (0 if none). */
static int reading_raises(volatile unsigned char *p)
{
    struct sigaction sa = {0};
    sa.sa_sigaction = on_fault;
    sa.sa_flags = SA_SIGINFO;
    CHECK_SYS(sigaction(SIGBUS, &sa, NULL));
    CHECK_SYS(sigaction(SIGSEGV, &sa, NULL));
    caught = 0;
    if (sigsetjmp(jump, 1) == 0)
        (void)*p;
    signal(SIGBUS, SIG_DFL);
    signal(SIGSEGV, SIG_DFL);
    return caught;
}

/* Whether [p, p + len) is mapped (msync answers ENOMEM for an unmapped page). */
static int mapped(void *p, long len)
{
    return msync(p, len, MS_ASYNC) == 0;
}

static void *map_anon(long len, int flags)
{
    void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, flags | MAP_ANONYMOUS, -1, 0);
    CHECK(p != MAP_FAILED);
    return p;
}

/* A file of `pages` pages, page i full of byte 'a' + i. */
static int page_file(const char *path, int pages)
{
    int fd = CHECK_SYS(open(path, O_RDWR | O_CREAT | O_TRUNC, 0600));
    static char buf[PAGE];
    for (int i = 0; i < pages; i++) {
        memset(buf, 'a' + i, PAGE);
        CHECK_EQ(write(fd, buf, PAGE), PAGE);
    }
    return fd;
}

static void memfd(void)
{
    int fd = CHECK_SYS(memfd_create("reef-test", MFD_CLOEXEC));
    CHECK_EQ(fcntl(fd, F_GETFD), FD_CLOEXEC);
    CHECK_EQ(write(fd, "hello", 5), 5);
    char buf[8] = {0};
    CHECK_EQ(pread(fd, buf, 5, 0), 5);
    CHECK_EQ(memcmp(buf, "hello", 5), 0);
    struct stat st;
    CHECK_SYS(fstat(fd, &st));
    CHECK(S_ISREG(st.st_mode));
    CHECK_EQ(st.st_nlink, 0);
    CHECK_EQ(st.st_size, 5);
    char link[128] = {0}, path[64];
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    CHECK_SYS(readlink(path, link, sizeof link - 1));
    CHECK_EQ(strcmp(link, "/memfd:reef-test (deleted)"), 0);
    /* Resized and shared with a fork child. */
    CHECK_SYS(ftruncate(fd, 2 * PAGE));
    char *p = mmap(NULL, 2 * PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    CHECK(p != MAP_FAILED);
    CHECK_EQ(memcmp(p, "hello", 5), 0);
    CHECK_EQ(p[PAGE], 0);
    pid_t pid = CHECK_SYS(fork());
    if (pid == 0) {
        strcpy(p + PAGE, "from the child");
        _exit(0);
    }
    CHECK_CHILD_EXIT(pid, 0);
    CHECK_EQ(strcmp(p + PAGE, "from the child"), 0);
    CHECK_EQ(pread(fd, buf, 4, PAGE), 4);
    CHECK_EQ(memcmp(buf, "from", 4), 0);
    CHECK_SYS(munmap(p, 2 * PAGE));
    CHECK_SYS(close(fd));
    /* Errors. */
    char name[300];
    memset(name, 'n', sizeof name);
    name[250] = 0;
    CHECK_ERRNO(memfd_create(name, 0), EINVAL);
    name[249] = 0;
    fd = CHECK_SYS(memfd_create(name, 0));
    CHECK_EQ(fcntl(fd, F_GETFD), 0);
    CHECK_SYS(close(fd));
    CHECK_ERRNO(memfd_create("x", 0x100), EINVAL);
    CHECK_ERRNO(syscall(SYS_memfd_create, (void *)8, 0), EFAULT);
    SAY("memfd_create: read, write, fstat (no links), /proc/self/fd name, ftruncate, MAP_SHARED "
        "with a fork child, MFD_CLOEXEC; EINVAL, EFAULT");
}

static void tmpfile_(void)
{
    char dir[64];
    snprintf(dir, sizeof dir, "/tmp/mappings.%d", (int)getpid());
    CHECK_SYS(mkdir(dir, 0700));
    int fd = CHECK_SYS(open(dir, O_TMPFILE | O_RDWR, 0600));
    CHECK_EQ(write(fd, "unnamed", 7), 7);
    struct stat st;
    CHECK_SYS(fstat(fd, &st));
    CHECK(S_ISREG(st.st_mode));
    CHECK_EQ(st.st_nlink, 0);
    CHECK_EQ(st.st_mode & 0777, 0600);
    DIR *d = opendir(dir);
    CHECK(d != NULL);
    int entries = 0;
    while (readdir(d))
        entries++;
    closedir(d);
    CHECK_EQ(entries, 2);
    CHECK_ERRNO(open(dir, O_TMPFILE | O_RDONLY, 0600), EINVAL);
    CHECK_SYS(close(fd));
    CHECK_SYS(rmdir(dir));
    SAY("O_TMPFILE: a regular file with no name and no links, not listed; EINVAL read-only");
}

static void remap_anonymous(void)
{
    /* Room to grow: eight pages reserved, the top six given back. */
    char *p = map_anon(8 * PAGE, MAP_PRIVATE);
    CHECK_SYS(munmap(p + 2 * PAGE, 6 * PAGE));
    memset(p, 0x11, 2 * PAGE);
    char *q = mremap(p, 2 * PAGE, 4 * PAGE, 0);
    CHECK(q == p);
    CHECK_EQ(p[2 * PAGE - 1], 0x11);
    CHECK_EQ(p[2 * PAGE], 0);
    CHECK_EQ(p[4 * PAGE - 1], 0);
    /* Shrink. */
    q = mremap(p, 4 * PAGE, PAGE, 0);
    CHECK(q == p);
    CHECK(!mapped(p + PAGE, PAGE));
    CHECK_EQ(p[0], 0x11);
    /* A neighbour in the way: ENOMEM unless it may move. */
    char *wall = mmap(p + PAGE, PAGE, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
    CHECK(wall == p + PAGE);
    CHECK(mremap(p, PAGE, 3 * PAGE, 0) == MAP_FAILED && errno == ENOMEM);
    q = mremap(p, PAGE, 3 * PAGE, MREMAP_MAYMOVE);
    CHECK(q != MAP_FAILED && q != p);
    CHECK_EQ(q[0], 0x11);
    CHECK_EQ(q[PAGE], 0);
    CHECK(!mapped(p, PAGE));
    /* To a chosen place, replacing what was there. */
    char *target = map_anon(3 * PAGE, MAP_PRIVATE);
    memset(target, 0x77, 3 * PAGE);
    q[PAGE] = 0x22;
    char *r = mremap(q, 3 * PAGE, 3 * PAGE, MREMAP_MAYMOVE | MREMAP_FIXED, target);
    CHECK(r == target);
    CHECK_EQ(r[0], 0x11);
    CHECK_EQ(r[PAGE], 0x22);
    CHECK_EQ(r[2 * PAGE], 0);
    CHECK(!mapped(q, PAGE));
    /* Errors. */
    CHECK(mremap(r + 1, PAGE, PAGE, 0) == MAP_FAILED && errno == EINVAL);
    CHECK(mremap(r, PAGE, 0, 0) == MAP_FAILED && errno == EINVAL);
    CHECK(mremap(r, PAGE, PAGE, 0x80) == MAP_FAILED && errno == EINVAL);
    CHECK(mremap(r, PAGE, PAGE, MREMAP_FIXED, r + 8 * PAGE) == MAP_FAILED && errno == EINVAL);
    CHECK(mremap(r, 2 * PAGE, 2 * PAGE, MREMAP_MAYMOVE | MREMAP_FIXED, r + PAGE) == MAP_FAILED &&
          errno == EINVAL);
    CHECK(mremap(q, PAGE, 2 * PAGE, MREMAP_MAYMOVE) == MAP_FAILED && errno == EFAULT);
    CHECK(mremap(r, 4 * PAGE, 5 * PAGE, MREMAP_MAYMOVE) == MAP_FAILED && errno == EFAULT);
    CHECK_SYS(munmap(r, 3 * PAGE));
    CHECK_SYS(munmap(wall, PAGE));
    SAY("mremap: shrink, grow in place, ENOMEM, MREMAP_MAYMOVE, MREMAP_FIXED; EINVAL, EFAULT");
}

static void remap_shared_and_cow(void)
{
    /* A shared page moved by the parent is still the child's page. */
    int go[2], done[2];
    CHECK_SYS(pipe(go));
    CHECK_SYS(pipe(done));
    char *s = map_anon(PAGE, MAP_SHARED);
    char *priv = map_anon(PAGE, MAP_PRIVATE);
    strcpy(priv, "before");
    pid_t pid = CHECK_SYS(fork());
    if (pid == 0) {
        char c;
        if (read(go[0], &c, 1) != 1)
            _exit(2);
        if (strcmp(s, "moved and written") != 0)
            _exit(3);
        if (strcmp(priv, "before") != 0)
            _exit(4);
        strcpy(s, "child");
        _exit(write(done[1], "x", 1) == 1 ? 0 : 5);
    }
    char *s2 = mremap(s, PAGE, 2 * PAGE, MREMAP_MAYMOVE | MREMAP_FIXED, map_anon(2 * PAGE, MAP_PRIVATE));
    CHECK(s2 != MAP_FAILED);
    char *priv2 = mremap(priv, PAGE, PAGE, MREMAP_MAYMOVE | MREMAP_FIXED, map_anon(PAGE, MAP_PRIVATE));
    CHECK(priv2 != MAP_FAILED);
    strcpy(s2, "moved and written");
    strcpy(priv2, "after");
    CHECK_EQ(write(go[1], "x", 1), 1);
    char c;
    CHECK_EQ(read(done[0], &c, 1), 1);
    CHECK_CHILD_EXIT(pid, 0);
    CHECK_EQ(strcmp(s2, "child"), 0);
    CHECK_EQ(strcmp(priv2, "after"), 0);
    CHECK_SYS(munmap(s2, 2 * PAGE));
    CHECK_SYS(munmap(priv2, PAGE));
    for (int i = 0; i < 2; i++) {
        close(go[i]);
        close(done[i]);
    }
    SAY("mremap: a moved MAP_SHARED page still shared with a fork child, a moved private page "
        "still copy-on-write");
}

static void remap_file(const char *path)
{
    int fd = page_file(path, 3);
    unsigned char *p = mmap(NULL, PAGE, PROT_READ, MAP_SHARED, fd, 0);
    CHECK(p != MAP_FAILED);
    unsigned char *q = mremap(p, PAGE, 4 * PAGE, MREMAP_MAYMOVE);
    CHECK(q != MAP_FAILED);
    CHECK_EQ(q[0], 'a');
    CHECK_EQ(q[PAGE], 'b');
    CHECK_EQ(q[3 * PAGE - 1], 'c');
    CHECK_EQ(reading_raises(q + 3 * PAGE), SIGBUS);
    CHECK_SYS(munmap(q, 4 * PAGE));
    /* /proc/self/maps shows a mapping's offset and inode. */
    p = mmap(NULL, PAGE, PROT_READ, MAP_PRIVATE, fd, 2 * PAGE);
    CHECK(p != MAP_FAILED);
    struct stat st;
    CHECK_SYS(fstat(fd, &st));
    char want[64];
    snprintf(want, sizeof want, "%lx-%lx r--p 00002000 ", (long)p, (long)p + PAGE);
    FILE *maps = fopen("/proc/self/maps", "r");
    CHECK(maps != NULL);
    char line[512];
    int found = 0;
    while (fgets(line, sizeof line, maps)) {
        if (strncmp(line, want, strlen(want)) == 0) {
            char dev[16];
            unsigned long ino = 0;
            CHECK_EQ(sscanf(line + strlen(want), "%15s %lu", dev, &ino), 2);
            CHECK_EQ(ino, (unsigned long)st.st_ino);
            found = 1;
        }
    }
    fclose(maps);
    if (!found)
        FAIL("no line starting %s in /proc/self/maps", want);
    CHECK_SYS(munmap(p, PAGE));
    CHECK_SYS(close(fd));
    SAY("mremap: a file mapping grown over the file reads it, SIGBUS past its end; "
        "/proc/self/maps: offset and inode");
}

static void dontneed(const char *path)
{
    int fd = page_file(path, 2);
    unsigned char *f = mmap(NULL, 2 * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
    CHECK(f != MAP_FAILED);
    f[0] = 'X';
    f[PAGE] = 'Y';
    CHECK_SYS(madvise(f, 2 * PAGE, MADV_DONTNEED));
    CHECK_EQ(f[0], 'a');
    CHECK_EQ(f[PAGE], 'b');
    CHECK_ERRNO(madvise(f, PAGE, MADV_FREE), EINVAL);
    CHECK_SYS(munmap(f, 2 * PAGE));
    char *a = map_anon(2 * PAGE, MAP_PRIVATE);
    memset(a, 1, 2 * PAGE);
    CHECK_SYS(madvise(a, 2 * PAGE, MADV_DONTNEED));
    CHECK_EQ(a[0], 0);
    CHECK_EQ(a[2 * PAGE - 1], 0);
    char *s = map_anon(PAGE, MAP_SHARED);
    s[0] = 5;
    CHECK_SYS(madvise(s, PAGE, MADV_DONTNEED));
    CHECK_EQ(s[0], 5);
    CHECK_ERRNO(madvise(a + 2 * PAGE + 100 * PAGE, PAGE, MADV_DONTNEED), ENOMEM);
    CHECK_SYS(munmap(a, 2 * PAGE));
    CHECK_SYS(munmap(s, PAGE));
    CHECK_SYS(close(fd));
    SAY("MADV_DONTNEED: a private file mapping reads the file again, private memory zeros, "
        "shared memory keeps its bytes; MADV_FREE of a file EINVAL");
}

static void truncation(const char *path)
{
    int fd = page_file(path, 3);
    unsigned char *s = mmap(NULL, 3 * PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    unsigned char *p = mmap(NULL, 3 * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
    CHECK(s != MAP_FAILED && p != MAP_FAILED);
    CHECK_EQ(s[2 * PAGE], 'c');
    p[2 * PAGE] = 'P';
    CHECK_SYS(ftruncate(fd, PAGE + 10));
    CHECK_EQ(s[0], 'a');
    CHECK_EQ(s[PAGE + 9], 'b');
    CHECK_EQ(s[PAGE + 10], 0);
    CHECK_EQ(reading_raises(s + 2 * PAGE), SIGBUS);
    CHECK_EQ(reading_raises(p + 2 * PAGE), SIGBUS);
    CHECK_EQ(p[0], 'a');
    /* Grown again: zeros where the file was cut. */
    CHECK_SYS(ftruncate(fd, 3 * PAGE));
    CHECK_EQ(reading_raises(s + 2 * PAGE), 0);
    CHECK_EQ(s[2 * PAGE], 0);
    s[2 * PAGE + 1] = 'S';
    unsigned char byte;
    CHECK_EQ(pread(fd, &byte, 1, 2 * PAGE + 1), 1);
    CHECK_EQ(byte, 'S');
    /* O_TRUNC too. */
    int again = CHECK_SYS(open(path, O_RDWR | O_TRUNC));
    CHECK_EQ(reading_raises(s), SIGBUS);
    CHECK_SYS(close(again));
    CHECK_SYS(munmap(s, 3 * PAGE));
    CHECK_SYS(munmap(p, 3 * PAGE));
    CHECK_SYS(close(fd));
    SAY("truncation: SIGBUS past the new end in shared and private mappings, zeros once the file "
        "grows again, O_TRUNC");
}

static void allocate(const char *path)
{
    int fd = page_file(path, 2);
    unsigned char *s = mmap(NULL, 2 * PAGE, PROT_READ, MAP_SHARED, fd, 0);
    CHECK(s != MAP_FAILED);
    struct stat st;
    CHECK_SYS(fallocate(fd, 0, PAGE, 3 * PAGE));
    CHECK_SYS(fstat(fd, &st));
    CHECK_EQ(st.st_size, 4 * PAGE);
    unsigned char byte = 1;
    CHECK_EQ(pread(fd, &byte, 1, 3 * PAGE), 1);
    CHECK_EQ(byte, 0);
    CHECK_EQ(pread(fd, &byte, 1, PAGE), 1);
    CHECK_EQ(byte, 'b');
    CHECK_SYS(fallocate(fd, FALLOC_FL_KEEP_SIZE, 0, 8 * PAGE));
    CHECK_SYS(fstat(fd, &st));
    CHECK_EQ(st.st_size, 4 * PAGE);
    CHECK_SYS(fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 10, PAGE));
    CHECK_EQ(s[9], 'a');
    CHECK_EQ(s[10], 0);
    CHECK_EQ(s[PAGE + 9], 0);
    CHECK_EQ(s[PAGE + 10], 'b');
    CHECK_SYS(fstat(fd, &st));
    CHECK_EQ(st.st_size, 4 * PAGE);
    int zero = fallocate(fd, FALLOC_FL_ZERO_RANGE, 4 * PAGE - 1, 2);
    if (zero == 0) {
        CHECK_SYS(fstat(fd, &st));
        CHECK_EQ(st.st_size, 4 * PAGE + 1);
    } else if (on_reef() || errno != EOPNOTSUPP) {
        FAIL("fallocate(FALLOC_FL_ZERO_RANGE): %s", strerror(errno));
    }
    CHECK_ERRNO(fallocate(fd, FALLOC_FL_PUNCH_HOLE, 0, PAGE), EOPNOTSUPP);
    CHECK_ERRNO(fallocate(fd, 0, -1, PAGE), EINVAL);
    CHECK_ERRNO(fallocate(fd, 0, 0, 0), EINVAL);
    CHECK_ERRNO(fallocate(fd, 0x1000, 0, PAGE), EOPNOTSUPP);
    CHECK_ERRNO(fallocate(fd, 0, 0x7fffffffffff0000L, 0x100000), EFBIG);
    CHECK_ERRNO(fallocate(-1, 0, 0, PAGE), EBADF);
    int ro = CHECK_SYS(open(path, O_RDONLY));
    CHECK_ERRNO(fallocate(ro, 0, 0, PAGE), EBADF);
    CHECK_SYS(close(ro));
    int p[2];
    CHECK_SYS(pipe(p));
    CHECK_ERRNO(fallocate(p[1], 0, 0, PAGE), ESPIPE);
    CHECK_SYS(close(p[0]));
    CHECK_SYS(close(p[1]));
    CHECK_SYS(munmap(s, 2 * PAGE));
    CHECK_SYS(close(fd));
    SAY("fallocate: extends with zeros, KEEP_SIZE, PUNCH_HOLE seen through a shared mapping, "
        "ZERO_RANGE%s; EINVAL, EOPNOTSUPP, EFBIG, EBADF, ESPIPE",
        zero == 0 ? "" : " (not on this file system)");
}

/* VmRSS of /proc/self/status in KiB. */
static long rss_kib(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    CHECK(f != NULL);
    char line[256];
    long kib = -1;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "VmRSS: %ld kB", &kib) == 1)
            break;
    fclose(f);
    CHECK(kib >= 0);
    return kib;
}

static void locking(void)
{
    char *p = map_anon(4 * PAGE, MAP_PRIVATE);
    CHECK_SYS(mlock(p + 10, 2 * PAGE));
    CHECK_EQ(p[0], 0);
    CHECK_SYS(munlock(p, 4 * PAGE));
    CHECK_SYS(syscall(SYS_mlock2, p, PAGE, 1 /* MLOCK_ONFAULT */));
    CHECK_ERRNO(syscall(SYS_mlock2, p, PAGE, 2), EINVAL);
    CHECK_SYS(munmap(p + 2 * PAGE, 2 * PAGE));
    CHECK_ERRNO(mlock(p, 4 * PAGE), ENOMEM);
    CHECK_ERRNO(munlock(p, 4 * PAGE), ENOMEM);
    CHECK_ERRNO(mlockall(0), EINVAL);
    CHECK_ERRNO(mlockall(4 /* MCL_ONFAULT alone */), EINVAL);
    CHECK_SYS(munmap(p, 2 * PAGE));
    pid_t pid = CHECK_SYS(fork());
    if (pid == 0) {
        if (mlockall(MCL_CURRENT | MCL_FUTURE) != 0)
            _exit(on_reef() || (errno != ENOMEM && errno != EPERM) ? 2 : 0);
        long before = rss_kib();
        char *q = mmap(NULL, 256 * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                       -1, 0);
        if (q == MAP_FAILED)
            _exit(3);
        long after = rss_kib();
        if (after - before < 200 * 4)
            _exit(4);
        _exit(munlockall() == 0 ? 0 : 5);
    }
    CHECK_CHILD_EXIT(pid, 0);
    SAY("mlock, mlock2, munlock, mlockall, munlockall: ranges, ENOMEM, EINVAL; MCL_FUTURE makes "
        "a new mapping resident");
}

/* Reads a whole small file (NUL-separated contents kept); returns its length. */
static long slurp(const char *path, char *buf, long size)
{
    int fd = open(path, O_RDONLY);
    if (fd < 0)
        return -errno;
    long n = 0, r;
    while (n < size && (r = read(fd, buf + n, size - n)) > 0)
        n += r;
    close(fd);
    return n;
}

/* The number of CPUs in a Linux CPU list ("0-3,5"). */
static int cpu_count(const char *list)
{
    int n = 0;
    const char *s = list;
    while (*s && *s != '\n') {
        char *end;
        long a = strtol(s, &end, 10), b = a;
        if (end == s)
            FAIL("bad CPU list %s", list);
        if (*end == '-')
            b = strtol(end + 1, &end, 10);
        n += (int)(b - a + 1);
        s = *end == ',' ? end + 1 : end;
    }
    return n;
}

static int environ_child(void)
{
    static char buf[4096];
    long n = slurp("/proc/self/environ", buf, sizeof buf);
    CHECK(n > 0);
    const char want[] = "REEF_MARK=42\0OTHER=x";
    CHECK_EQ(n, (long)sizeof want);
    CHECK_EQ(memcmp(buf, want, sizeof want), 0);
    return 0;
}

static void proc_and_sys(const char *self)
{
    /* environ: what execve gave. */
    pid_t pid = CHECK_SYS(fork());
    if (pid == 0) {
        char *argv[] = {(char *)self, "environ", NULL};
        char *envp[] = {"REEF_MARK=42", "OTHER=x", NULL};
        execve(self, argv, envp);
        _exit(127);
    }
    CHECK_CHILD_EXIT(pid, 0);
    if (getuid() == 0) {
        /* Another user may not read root's. */
        pid = CHECK_SYS(fork());
        if (pid == 0) {
            char path[64];
            snprintf(path, sizeof path, "/proc/%d/environ", (int)getppid());
            if (setuid(1000) != 0)
                _exit(2);
            _exit(open(path, O_RDONLY) < 0 && errno == EACCES ? 0 : 3);
        }
        CHECK_CHILD_EXIT(pid, 0);
    }
    CHECK(file_has("/proc/self/mountinfo", " / / "));
    CHECK(file_has("/proc/self/mountinfo", " /proc "));
    CHECK(file_has("/proc/self/mounts", " /proc proc "));
    /* The CPU lists. */
    char online[256] = {0}, possible[256] = {0};
    CHECK(slurp("/sys/devices/system/cpu/online", online, sizeof online - 1) > 0);
    CHECK(slurp("/sys/devices/system/cpu/possible", possible, sizeof possible - 1) > 0);
    cpu_set_t set;
    CHECK_SYS(sched_getaffinity(0, sizeof set, &set));
    int on = cpu_count(online);
    CHECK(on >= CPU_COUNT(&set));
    CHECK(cpu_count(possible) >= on);
    CHECK_EQ(sysconf(_SC_NPROCESSORS_ONLN), on);
    struct stat st;
    CHECK_SYS(stat("/sys/devices/system/cpu", &st));
    CHECK(S_ISDIR(st.st_mode));
    CHECK_ERRNO(open("/sys/devices/system/cpu/online", O_WRONLY), EACCES);
    SAY("/proc/self/environ (as execve gave it%s), mountinfo, mounts; /sys CPU lists: %d online",
        getuid() == 0 ? ", closed to another user" : "", on);
}

static void hostile(void)
{
    long before = reef_free_bytes();
    const long kernel = (long)0xffff800000000000UL;
    CHECK(syscall(SYS_mremap, kernel, PAGE, 2 * PAGE, MREMAP_MAYMOVE, 0) == -1);
    CHECK(errno == EFAULT || errno == EINVAL);
    CHECK_ERRNO(syscall(SYS_mremap, 8 * PAGE, PAGE, 2 * PAGE, MREMAP_MAYMOVE, 0), EFAULT);
    char *p = map_anon(PAGE, MAP_PRIVATE);
    CHECK_ERRNO(syscall(SYS_mremap, p, PAGE, PAGE, MREMAP_MAYMOVE | MREMAP_FIXED, kernel),
                EINVAL);
    CHECK_ERRNO(syscall(SYS_mremap, p, PAGE, (long)1 << 62, MREMAP_MAYMOVE, 0), EINVAL);
    CHECK_ERRNO(syscall(SYS_memfd_create, kernel, 0), EFAULT);
    CHECK_ERRNO(syscall(SYS_mlock, kernel, PAGE), ENOMEM);
    CHECK_ERRNO(syscall(SYS_munlock, 8 * PAGE, (long)1 << 62), ENOMEM);
    CHECK_ERRNO(syscall(SYS_fallocate, -1, 0, 0, PAGE), EBADF);
    CHECK_SYS(munmap(p, PAGE));
    for (int i = 0; i < 2000; i++) {
        int fd = CHECK_SYS(memfd_create("many", 0));
        CHECK_SYS(ftruncate(fd, 2 * PAGE));
        char *m = mmap(NULL, PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        CHECK(m != MAP_FAILED);
        m[0] = (char)i;
        char *moved = mremap(m, PAGE, 2 * PAGE, MREMAP_MAYMOVE);
        CHECK(moved != MAP_FAILED);
        CHECK_EQ(moved[0], (char)i);
        moved[PAGE] = 1;
        CHECK_SYS(munmap(moved, 2 * PAGE));
        CHECK_SYS(close(fd));
    }
    CHECK_MEMORY_BACK(before, "bad addresses and pointers: errors; 2000 memfds mapped, moved and closed");
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "environ") == 0)
        return environ_child();
    test_begin("mappings");
    char path[64];
    snprintf(path, sizeof path, "/tmp/mappings-file.%d", (int)getpid());
    memfd();
    tmpfile_();
    remap_anonymous();
    remap_shared_and_cow();
    remap_file(path);
    dontneed(path);
    truncation(path);
    allocate(path);
    locking();
    proc_and_sys(self_path(argv[0]));
    hostile();
    CHECK_SYS(unlink(path));
    PASS();
}
