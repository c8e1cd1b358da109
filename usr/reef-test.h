/*
 * reef-test.h: the small shared harness of Reef's user test programs (one .c file each in usr/).
 *
 * Every program prints what it checks, one line at a time, and ends with `PASS <name>` and exit
 * status 0, or prints `FAIL <name>: FILE:LINE: <why>` and exits with status 1. The programs are
 * static musl binaries that must pass on Linux as well as on Reef; `on_reef()` tells them apart
 * (uname release `6.1.0-reef`) for the few checks that only make sense on one of the two.
 *
 * The programs of the user-process issue use no pipes and no files: children report to their
 * parents through exit statuses and MAP_SHARED memory. Those of the file-system issue (fsshare,
 * pipes, ...) also use files under /tmp (unique names, /tmp/<name>.<pid>, removed at the end)
 * and pipes.
 */
#ifndef REEF_TEST_H
#define REEF_TEST_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* Name printed in PASS/FAIL lines; every program sets it first thing with test_begin(). */
static const char *test_name = "?";

/* Reef's own system call: free physical memory in bytes (-1 with ENOSYS on Linux). */
#define SYS_reef_free_bytes 1024

/* Unbuffered stdout (one write per printf, nothing duplicated by fork or lost by a crash). */
static inline void test_begin(const char *name)
{
    test_name = name;
    setvbuf(stdout, NULL, _IONBF, 0);
}

static inline void test_fail_at(const char *file, int line, const char *fmt, ...)
    __attribute__((noreturn, format(printf, 3, 4)));

/* Prints `FAIL <name>: FILE:LINE: <message>` and ends the whole process with status 1. */
static inline void test_fail_at(const char *file, int line, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    printf("FAIL %s: %s:%d: %s\n", test_name, file, line, msg);
    _exit(1);
}

#define FAIL(...) test_fail_at(__FILE__, __LINE__, __VA_ARGS__)

/* Fails unless `cond` holds. */
#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond))                                                                               \
            FAIL("check failed: %s", #cond);                                                       \
    } while (0)

/* Fails unless the two integer expressions are equal; prints both values. */
#define CHECK_EQ(a, b)                                                                             \
    do {                                                                                           \
        long long check_a_ = (long long)(a), check_b_ = (long long)(b);                            \
        if (check_a_ != check_b_)                                                                  \
            FAIL("check failed: %s == %s (%lld != %lld, 0x%llx != 0x%llx)", #a, #b, check_a_,      \
                 check_b_, (unsigned long long)check_a_, (unsigned long long)check_b_);            \
    } while (0)

/* Evaluates a libc call that returns -1 with errno on failure; fails with the errno if it does. */
#define CHECK_SYS(expr)                                                                            \
    ({                                                                                             \
        long check_r_ = (long)(expr);                                                              \
        if (check_r_ == -1)                                                                        \
            FAIL("%s failed: %s (errno %d)", #expr, strerror(errno), errno);                       \
        check_r_;                                                                                  \
    })

/* Fails unless the libc call returns -1 with errno `err`. */
#define CHECK_ERRNO(expr, err)                                                                     \
    do {                                                                                           \
        errno = 0;                                                                                 \
        long check_r_ = (long)(expr);                                                              \
        if (check_r_ != -1 || errno != (err))                                                      \
            FAIL("%s: expected -1 with %s, got %ld with errno %d (%s)", #expr, #err, check_r_,     \
                 errno, strerror(errno));                                                          \
    } while (0)

/* Fails with the error number a pthread function returned. */
#define CHECK_PT(expr)                                                                             \
    do {                                                                                           \
        int check_e_ = (expr);                                                                     \
        if (check_e_ != 0)                                                                         \
            FAIL("%s failed: %s (%d)", #expr, strerror(check_e_), check_e_);                       \
    } while (0)

/* Prints one progress line, prefixed by the test name. */
#define SAY(...)                                                                                   \
    do {                                                                                           \
        printf("%s: ", test_name);                                                                 \
        printf(__VA_ARGS__);                                                                       \
        printf("\n");                                                                              \
    } while (0)

/* Ends a hostile part that made and freed much: on Reef (`before`, its free memory when the
 * part began, is not -1) fails unless the free memory is back within 2 MiB; says `what`, with
 * the figures on Reef. */
#define CHECK_MEMORY_BACK(before, what)                                                            \
    do {                                                                                           \
        long check_before_ = (before), check_after_ = reef_free_bytes();                           \
        if (check_before_ < 0) {                                                                   \
            SAY("%s", what);                                                                       \
            break;                                                                                 \
        }                                                                                          \
        if (check_after_ < check_before_ - (2L << 20))                                             \
            FAIL("%s: free memory %ld KiB before, %ld KiB after", what, check_before_ >> 10,       \
                 check_after_ >> 10);                                                              \
        SAY("%s: free memory %ld KiB before, %ld KiB after", what, check_before_ >> 10,            \
            check_after_ >> 10);                                                                   \
    } while (0)

/* Prints `PASS <name>` and exits with status 0. */
#define PASS()                                                                                     \
    do {                                                                                           \
        printf("PASS %s\n", test_name);                                                            \
        exit(0);                                                                                   \
    } while (0)

/* Runs `prog` with the NULL-terminated arguments (at most 14) and waits for it: its exit
 * status, or 128 + the signal that killed it (126: it could not be executed). */
static inline int run_program(const char *prog, ...)
{
    const char *argv[16];
    int n = 0;
    argv[n++] = prog;
    va_list ap;
    va_start(ap, prog);
    const char *a;
    while ((a = va_arg(ap, const char *)) != NULL && n < 15)
        argv[n++] = a;
    va_end(ap);
    argv[n] = NULL;
    pid_t pid = CHECK_SYS(fork());
    if (pid == 0) {
        execv(prog, (char *const *)argv);
        _exit(126);
    }
    int st;
    while (waitpid(pid, &st, 0) < 0)
        CHECK(errno == EINTR);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* Whether a line of file `path` (a /proc file) contains `what`; fails if it cannot be read. */
static inline int file_has(const char *path, const char *what)
{
    FILE *f = fopen(path, "r");
    if (f == NULL)
        FAIL("cannot open %s: %s", path, strerror(errno));
    char line[512];
    int found = 0;
    while (fgets(line, sizeof line, f))
        found |= strstr(line, what) != NULL;
    fclose(f);
    return found;
}

/* Whether this runs on Reef (uname release 6.1.0-reef) rather than Linux. */
static inline int on_reef(void)
{
    struct utsname u;
    return uname(&u) == 0 && strstr(u.release, "-reef") != NULL;
}

/* statfs's f_type of a Hare mount ("HARE"). */
#define HARE_SUPER_MAGIC 0x48415245

/* Whether `path` is in a Hare mount (on Reef). */
static inline int in_hare(const char *path)
{
    struct statfs sf;
    return statfs(path, &sf) == 0 && sf.f_type == HARE_SUPER_MAGIC;
}

/* The running program's own path, for re-executing itself: $REEF_SELF, else argv[0] when it
 * holds a '/', else /proc/self/exe (Linux only). */
static inline const char *self_path(const char *argv0)
{
    const char *env = getenv("REEF_SELF");
    if (env && *env)
        return env;
    if (argv0 && strchr(argv0, '/'))
        return argv0;
    return "/proc/self/exe";
}

/* Describes a wait status ("exited with status 3", "killed by signal 9"). */
static inline const char *describe_wait(int status)
{
    static char buf[64];
    if (WIFEXITED(status))
        snprintf(buf, sizeof buf, "exited with status %d", WEXITSTATUS(status));
    else if (WIFSIGNALED(status))
        snprintf(buf, sizeof buf, "killed by signal %d (%s)", WTERMSIG(status),
                 strsignal(WTERMSIG(status)));
    else
        snprintf(buf, sizeof buf, "wait status 0x%x", status);
    return buf;
}

/* Waits for child `pid` (again if interrupted) and fails unless it exited with status `code`. */
#define CHECK_CHILD_EXIT(pid, code)                                                                \
    do {                                                                                           \
        int check_st_ = 0;                                                                         \
        pid_t check_w_;                                                                            \
        while ((check_w_ = waitpid((pid), &check_st_, 0)) == -1 && errno == EINTR)                 \
            ;                                                                                      \
        if (check_w_ == -1)                                                                        \
            FAIL("waitpid(%d) failed: %s", (int)(pid), strerror(errno));                           \
        CHECK_EQ(check_w_, (pid));                                                                 \
        if (!WIFEXITED(check_st_) || WEXITSTATUS(check_st_) != (code))                             \
            FAIL("child %d %s, expected exit status %d", (int)(pid), describe_wait(check_st_),     \
                 (int)(code));                                                                     \
    } while (0)

/* The CPUs this process may run on, in increasing order; returns how many (at most `max`). */
static inline int allowed_cpus(int *cpus, int max)
{
    cpu_set_t set;
    CHECK_SYS(sched_getaffinity(0, sizeof set, &set));
    int n = 0;
    for (int c = 0; c < CPU_SETSIZE && n < max; c++)
        if (CPU_ISSET(c, &set))
            cpus[n++] = c;
    CHECK(n >= 1);
    return n;
}

/* Pins the calling thread to `cpu` and checks that it now runs there. */
static inline void pin_self(int cpu)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    CHECK_SYS(sched_setaffinity(0, sizeof set, &set));
    int now = sched_getcpu();
    if (now != cpu)
        FAIL("pinned to cpu %d, but sched_getcpu() says %d", cpu, now);
}

/* Anonymous shared memory that survives fork, for children to report to their parent. */
static inline void *shared_page(size_t len)
{
    void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        FAIL("mmap of %zu shared bytes failed: %s", len, strerror(errno));
    return p;
}

/* Waits for child `pid` (through EINTR) and fails unless it exited with status 0. */
static inline void reap(pid_t pid)
{
    int st;
    while (waitpid(pid, &st, 0) < 0)
        CHECK_EQ(errno, EINTR);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

/* Reef's free physical memory in bytes, or -1 (errno ENOSYS) where the call does not exist. */
static inline long reef_free_bytes(void)
{
    return syscall(SYS_reef_free_bytes);
}

/* What the kernel has free for a new use, in bytes (-1 natively, where the count does not
 * exist): its free frames (reef_free_bytes()) and what its heaps hold without using (each
 * node's arenas less their live allocations, and its spare arena: /proc/reef/memory); `*heap`
 * (if not NULL) gets the heaps' part. A heap gives
 * an arena (2 MiB) back only once nothing in it lives, so a few long-lived objects keep
 * arenas that are mostly free: counting free frames alone, a fuzz campaign on Hare
 * (`onhare -o exec=random,nodirect timeshare /tmp /test/fuzz --calls 80000 --workers 4` at
 * 4c2n) seemed to lose 11.9 MiB, of which 10.2 MiB were such arenas and spares and 2 MiB the
 * churner's variant image, while the heaps' live bytes had gone down. A leaked object still
 * counts: it is live. */
static inline long reef_free_memory(long *heap)
{
    long frames = reef_free_bytes();
    if (frames < 0)
        return -1;
    FILE *f = fopen("/proc/reef/memory", "r");
    if (f == NULL)
        FAIL("cannot open /proc/reef/memory: %s", strerror(errno));
    char line[256];
    long kib = 0;
    int nodes = 0;
    while (fgets(line, sizeof line, f)) {
        long node, free, reserve, held, used, allocations, arenas, released, spare;
        if (sscanf(line, "%ld %ld %ld %ld %ld %ld %ld %ld %ld", &node, &free, &reserve, &held,
                   &used, &allocations, &arenas, &released, &spare) == 9) {
            kib += held - used + spare;
            nodes++;
        }
    }
    fclose(f);
    if (nodes == 0)
        FAIL("/proc/reef/memory has no node lines");
    if (heap != NULL)
        *heap = kib << 10;
    return frames + (kib << 10);
}

/* Installs `fn` (or SIG_DFL/SIG_IGN) for `sig` with `flags`, nothing masked while it runs. */
static inline void set_handler(int sig, void (*fn)(int), int flags)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = fn;
    sa.sa_flags = flags;
    sigemptyset(&sa.sa_mask);
    CHECK_SYS(sigaction(sig, &sa, NULL));
}

static inline long long now_ns(void)
{
    struct timespec ts;
    CHECK_SYS(clock_gettime(CLOCK_MONOTONIC, &ts));
    return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* ---- children forked pinned to a core, reaped together; one failure kills the rest ---- */

#define TEST_MAX_KIDS 80
static pid_t test_kids[TEST_MAX_KIDS];
static const char *test_kid_what[TEST_MAX_KIDS];
static int test_nkids;

/* Forks a child pinned to `cpu` (described by `what` in failure reports); returns 0 in the
 * child (which must end with _exit), else the child's pid. */
static inline pid_t test_fork_child(const char *what, int cpu)
{
    CHECK(test_nkids < TEST_MAX_KIDS);
    pid_t pid = CHECK_SYS(fork());
    if (pid == 0) {
        test_nkids = 0;
        pin_self(cpu);
        return 0;
    }
    test_kids[test_nkids] = pid;
    test_kid_what[test_nkids] = what;
    test_nkids++;
    return pid;
}

/* Waits for every child of test_fork_child; if one did not exit with 0, kills the others and
 * fails with its description. */
static inline void test_reap_all(void)
{
    for (int left = test_nkids; left > 0; left--) {
        int st;
        pid_t w = waitpid(-1, &st, 0);
        if (w == -1 && errno == EINTR) {
            left++;
            continue;
        }
        if (w == -1)
            FAIL("waitpid(-1) failed: %s", strerror(errno));
        int i = 0;
        while (i < test_nkids && test_kids[i] != w)
            i++;
        if (i == test_nkids)
            FAIL("waitpid(-1) returned %d, not a child of this test", w);
        test_kids[i] = 0;
        if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
            for (int j = 0; j < test_nkids; j++)
                if (test_kids[j] > 0)
                    kill(test_kids[j], SIGKILL);
            for (int j = 0; j < test_nkids; j++)
                if (test_kids[j] > 0)
                    waitpid(test_kids[j], NULL, 0);
            FAIL("child %d (%s) %s", w, test_kid_what[i], describe_wait(st));
        }
    }
    test_nkids = 0;
}

/* Spins (yielding the core) until *p >= v, for a child waiting on its parent's shared memory;
 * leaves with status 3 if the parent died. */
static inline void wait_at_least(atomic_int *p, int v)
{
    pid_t parent = getppid();
    for (unsigned n = 1; atomic_load(p) < v; n++) {
        sched_yield();
        if ((n & 255) == 0 && getppid() != parent)
            _exit(3);
    }
}

#endif
