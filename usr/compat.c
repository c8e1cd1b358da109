/*
 * compat: Linux behaviours real programs and conformance suites rely on, each of which Reef got
 * wrong (issue 16's list); every check passes natively on Linux and on Reef.
 *
 * - errors: dup3 with equal descriptors is EINVAL; readv/writev with a negative or too large
 *   count is EINVAL; mmap of a closed descriptor is EBADF;
 * - signals: a handled signal ends nanosleep with EINTR and the time left, and ends a blocking
 *   ppoll with EINTR; SA_RESETHAND delivers once with its siginfo, then the action is SIG_DFL;
 *   sigaltstack sets, reports and is used by an SA_ONSTACK handler, and refuses a too small
 *   stack (ENOMEM) and bad flags (EINVAL);
 * - timers: alarm fires SIGALRM (a handler ends pause; by default it kills), returns the
 *   seconds left of the one it replaces; setitimer(ITIMER_REAL) with an interval fires again
 *   and again, getitimer reports it, a zero value disarms it and returns the old setting;
 *   EINVAL for a bad `which` or microseconds;
 * - hostile arguments to the calls added with these (socket pairs, timers, sigaltstack):
 *   unmapped, kernel and non-canonical pointers give EFAULT, bad descriptors EBADF;
 * - nothing kept (on Reef, by its free-memory count): the hostile calls (also the file calls:
 *   locks, copy_file_range, getrusage, times, xattrs with bad pointers and descriptors, 2000
 *   record locks, 100 shared mappings of 64 GiB of a 12 KiB file), 2000 socket pairs made
 *   and closed, 200 children that arm an alarm and an alternate signal stack and exit, leave
 *   free memory where it was (within 2 MiB);
 * - copies: copy_file_range copies between files at given offsets (advanced) or at the file
 *   offsets, returns 0 at the end of the input, and refuses flags, overlapping ranges of one
 *   file and a pipe (EINVAL), an O_APPEND output (EBADF) and a directory (EISDIR); fadvise64 is
 *   a hint with Linux's errors (EINVAL, ESPIPE, EBADF);
 * - close_range closes a range of descriptors or marks them close-on-exec, EINVAL for a
 *   reversed range or unknown flags;
 * - /proc/self/maps: the lines of the stack ([stack]), the program's code (its path, executable)
 *   and a shared mapping (r--s);
 * - CPU time: a child spinning until its getrusage says 50 ms shows them in the parent's wait4
 *   rusage, RUSAGE_CHILDREN and times(); getrusage EINVAL for a bad who;
 * - /proc/stat (a cpu line per online core, ctxt, btime) and /proc/self/stat's utime and
 *   stime parse; ctxt grows over a child's run; the kernel log reads back with klogctl
 *   (dmesg's calls) with Linux's EINVALs (natively it may be refused with EPERM);
 * - futex: FUTEX_WAIT_BITSET with FUTEX_CLOCK_REALTIME takes an absolute CLOCK_REALTIME
 *   deadline (it ends with ETIMEDOUT when that passes; a child does the wait and the parent
 *   fails the test if it is still waiting 20 s later).
 */
#include "reef-test.h"
#include <sys/file.h>
#include <sys/klog.h>
#include <sys/resource.h>
#include <sys/times.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/uio.h>

/* <linux/futex.h>, which musl-gcc's include path does not have. */
#define FUTEX_WAIT_BITSET 9
#define FUTEX_CLOCK_REALTIME 256
#define FUTEX_BITSET_MATCH_ANY 0xffffffffu

static volatile sig_atomic_t got;
static volatile sig_atomic_t got_code;
static volatile sig_atomic_t got_pid;
static volatile uintptr_t handler_sp;

static void on_usr1(int sig)
{
    (void)sig;
    got++;
}

static void on_info(int sig, siginfo_t *si, void *ctx)
{
    (void)ctx;
    got++;
    got_code = si->si_signo == sig ? si->si_code : -1;
    got_pid = si->si_pid;
}

static void on_alt(int sig)
{
    int here;
    (void)sig;
    handler_sp = (uintptr_t)&here;
    got++;
}

/* A child that sends `sig` to this process after `ms` milliseconds. */
static pid_t signal_later(int sig, int ms)
{
    pid_t parent = getpid();
    pid_t pid = CHECK_SYS(fork());
    if (pid == 0) {
        struct timespec t = {ms / 1000, (long)(ms % 1000) * 1000000L};
        nanosleep(&t, NULL);
        kill(parent, sig);
        _exit(0);
    }
    return pid;
}

static void errors(void)
{
    int fd = CHECK_SYS(open("/dev/null", O_RDWR));
    CHECK_ERRNO(dup3(fd, fd, 0), EINVAL);
    CHECK_ERRNO(dup3(fd, fd, O_CLOEXEC), EINVAL);
    char b;
    struct iovec iov = {&b, 1};
    CHECK_ERRNO(syscall(SYS_readv, fd, &iov, -1L), EINVAL);
    CHECK_ERRNO(syscall(SYS_readv, fd, &iov, 1025L), EINVAL);
    CHECK_ERRNO(syscall(SYS_writev, fd, &iov, -1L), EINVAL);
    CHECK_ERRNO(syscall(SYS_writev, fd, &iov, 1025L), EINVAL);
    CHECK_SYS(close(fd));
    CHECK(mmap(NULL, 4096, PROT_READ, MAP_PRIVATE, fd, 0) == MAP_FAILED);
    CHECK_EQ(errno, EBADF);
    CHECK(mmap(NULL, 4096, PROT_READ, MAP_SHARED, 1000, 0) == MAP_FAILED);
    CHECK_EQ(errno, EBADF);
    SAY("errors: dup3 onto itself EINVAL, readv/writev with a bad count EINVAL, mmap of a closed "
        "descriptor EBADF");
}

static void interrupted_waits(void)
{
    set_handler(SIGUSR1, on_usr1, 0);
    got = 0;
    pid_t pid = signal_later(SIGUSR1, 100);
    struct timespec want = {30, 0}, left = {0, 0};
    long long t0 = now_ns();
    CHECK_ERRNO(nanosleep(&want, &left), EINTR);
    long long took = now_ns() - t0;
    CHECK_EQ(got, 1);
    CHECK(took < 20LL * 1000000000LL);
    CHECK(left.tv_sec > 0 && left.tv_sec <= 30);
    reap(pid);
    SAY("nanosleep(30 s): a handled signal ended it with EINTR after %lld ms, %ld s left",
        took / 1000000, (long)left.tv_sec);

    int p[2];
    CHECK_SYS(pipe(p));
    got = 0;
    pid = signal_later(SIGUSR1, 100);
    struct pollfd pfd = {p[0], POLLIN, 0};
    struct timespec forever = {30, 0};
    CHECK_ERRNO(ppoll(&pfd, 1, &forever, NULL), EINTR);
    CHECK_EQ(got, 1);
    reap(pid);
    CHECK_SYS(close(p[0]));
    CHECK_SYS(close(p[1]));
    set_handler(SIGUSR1, SIG_DFL, 0);
    SAY("ppoll on an empty pipe: a handled signal ended it with EINTR");
}

static void reset_hand(void)
{
    struct sigaction sa, now;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_info;
    sa.sa_flags = SA_SIGINFO | SA_RESETHAND;
    sigemptyset(&sa.sa_mask);
    CHECK_SYS(sigaction(SIGUSR2, &sa, NULL));
    got = 0;
    got_code = -2;
    CHECK_SYS(kill(getpid(), SIGUSR2));
    CHECK_EQ(got, 1);
    CHECK_EQ(got_code, SI_USER);
    CHECK_EQ(got_pid, getpid());
    CHECK_SYS(sigaction(SIGUSR2, NULL, &now));
    CHECK(now.sa_handler == SIG_DFL);
    SAY("SA_RESETHAND|SA_SIGINFO: the handler ran once with its siginfo (SI_USER from this "
        "process), then the action was SIG_DFL");
}

static void alt_stack(void)
{
    static char stack[64 * 1024];
    stack_t ss = {.ss_sp = stack, .ss_size = sizeof stack, .ss_flags = 0}, old;
    stack_t tiny = {.ss_sp = stack, .ss_size = 512, .ss_flags = 0};
    CHECK_ERRNO(sigaltstack(&tiny, NULL), ENOMEM);
    stack_t bad = {.ss_sp = stack, .ss_size = sizeof stack, .ss_flags = 0x1234};
    CHECK_ERRNO(sigaltstack(&bad, NULL), EINVAL);
    CHECK_SYS(sigaltstack(&ss, NULL));
    CHECK_SYS(sigaltstack(NULL, &old));
    CHECK(old.ss_sp == stack && old.ss_size == sizeof stack && old.ss_flags == 0);
    set_handler(SIGUSR1, on_alt, SA_ONSTACK);
    got = 0;
    handler_sp = 0;
    CHECK_SYS(kill(getpid(), SIGUSR1));
    CHECK_EQ(got, 1);
    CHECK(handler_sp > (uintptr_t)stack && handler_sp < (uintptr_t)stack + sizeof stack);
    set_handler(SIGUSR1, SIG_DFL, 0);
    stack_t off = {.ss_flags = SS_DISABLE};
    CHECK_SYS(sigaltstack(&off, NULL));
    CHECK_SYS(sigaltstack(NULL, &old));
    CHECK(old.ss_flags & SS_DISABLE);
    SAY("sigaltstack: set and reported, an SA_ONSTACK handler ran on it, SS_DISABLE; ENOMEM for "
        "512 bytes, EINVAL for bad flags");
}

static void timers(void)
{
    set_handler(SIGALRM, on_usr1, 0);
    got = 0;
    CHECK_EQ(alarm(1), 0);
    long long t0 = now_ns();
    CHECK_ERRNO(pause(), EINTR);
    long long took = now_ns() - t0;
    CHECK_EQ(got, 1);
    CHECK(took > 500LL * 1000000 && took < 20LL * 1000000000LL);
    CHECK_EQ(alarm(5), 0);
    CHECK_EQ(alarm(0), 5);
    CHECK_EQ(alarm(0), 0);
    SAY("alarm(1): SIGALRM after %lld ms ended pause; alarm(0) returned the 5 s left",
        took / 1000000);

    struct itimerval every = {{0, 50000}, {0, 50000}}, now, old;
    got = 0;
    CHECK_SYS(setitimer(ITIMER_REAL, &every, NULL));
    CHECK_SYS(getitimer(ITIMER_REAL, &now));
    CHECK(now.it_interval.tv_sec == 0 && now.it_interval.tv_usec == 50000);
    CHECK(now.it_value.tv_sec == 0 && now.it_value.tv_usec > 0 && now.it_value.tv_usec <= 50000);
    while (got < 4)
        pause();
    struct itimerval zero = {{0, 0}, {0, 0}};
    CHECK_SYS(setitimer(ITIMER_REAL, &zero, &old));
    CHECK(old.it_interval.tv_sec == 0 && old.it_interval.tv_usec == 50000);
    CHECK_SYS(getitimer(ITIMER_REAL, &now));
    CHECK(now.it_value.tv_sec == 0 && now.it_value.tv_usec == 0);
    struct itimerval bad = {{0, 0}, {0, 1000000}};
    CHECK_ERRNO(setitimer(ITIMER_REAL, &bad, NULL), EINVAL);
    CHECK_ERRNO(syscall(SYS_setitimer, 7L, &every, NULL), EINVAL);
    set_handler(SIGALRM, SIG_DFL, 0);
    SAY("setitimer(ITIMER_REAL, 50 ms every 50 ms): 4 SIGALRMs, getitimer reported it, a zero "
        "value disarmed it and gave the old setting; EINVAL for 1000000 us and which 7");

    pid_t pid = CHECK_SYS(fork());
    if (pid == 0) {
        alarm(1);
        for (;;)
            pause();
    }
    int st;
    CHECK_EQ(waitpid(pid, &st, 0), pid);
    CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGALRM);
    SAY("an unhandled SIGALRM from alarm(1) killed the process");
}

static void futex_realtime(void)
{
    static _Atomic int word;
    pid_t pid = CHECK_SYS(fork());
    if (pid == 0) {
        struct timespec at;
        clock_gettime(CLOCK_REALTIME, &at);
        at.tv_nsec += 200 * 1000000L;
        if (at.tv_nsec >= 1000000000L) {
            at.tv_sec++;
            at.tv_nsec -= 1000000000L;
        }
        long r = syscall(SYS_futex, &word, FUTEX_WAIT_BITSET | FUTEX_CLOCK_REALTIME, 0, &at,
                         NULL, FUTEX_BITSET_MATCH_ANY);
        _exit(r == -1 && errno == ETIMEDOUT ? 0 : 1);
    }
    long long deadline = now_ns() + 20LL * 1000000000LL;
    int st;
    pid_t w;
    while ((w = waitpid(pid, &st, WNOHANG)) == 0) {
        if (now_ns() > deadline) {
            kill(pid, SIGKILL);
            waitpid(pid, &st, 0);
            FAIL("FUTEX_CLOCK_REALTIME wait for now + 200 ms still waiting after 20 s");
        }
        struct timespec t = {0, 10 * 1000000L};
        nanosleep(&t, NULL);
    }
    CHECK_EQ(w, pid);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    SAY("futex FUTEX_WAIT_BITSET|FUTEX_CLOCK_REALTIME: an absolute real-time deadline 200 ms "
        "away ended the wait with ETIMEDOUT");
}

static void hostile(void)
{
    static char *const bad[] = {(char *)8, (char *)0xffff800000000000ul,
                                (char *)0x8000000000000000ul};
    int sv[2];
    char c = 'x';
    CHECK_SYS(socketpair(AF_UNIX, SOCK_STREAM, 0, sv));
    for (unsigned i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        CHECK_ERRNO(send(sv[0], bad[i], 16, MSG_DONTWAIT), EFAULT);
        CHECK_EQ(send(sv[0], &c, 1, 0), 1);
        CHECK_ERRNO(recv(sv[1], bad[i], 16, 0), EFAULT);
        CHECK_ERRNO(syscall(SYS_setitimer, 0L, bad[i], NULL), EFAULT);
        CHECK_ERRNO(syscall(SYS_getitimer, 0L, bad[i]), EFAULT);
        CHECK_ERRNO(syscall(SYS_sigaltstack, bad[i], NULL), EFAULT);
        CHECK_ERRNO(syscall(SYS_sigaltstack, NULL, bad[i]), EFAULT);
        CHECK_ERRNO(syscall(SYS_socketpair, 1L, 1L, 0L, bad[i]), EFAULT);
    }
    CHECK_EQ(send(sv[0], &c, 1, 0), 1);
    socklen_t *bad_len = (socklen_t *)8;
    struct sockaddr_storage from;
    CHECK_ERRNO(recvfrom(sv[1], &c, 1, 0, (struct sockaddr *)&from, bad_len), EFAULT);
    CHECK_ERRNO(send(9999, &c, 1, 0), EBADF);
    CHECK_ERRNO(recv(-1, &c, 1, 0), EBADF);
    CHECK_ERRNO(shutdown(9999, SHUT_RD), EBADF);
    CHECK_SYS(close(sv[0]));
    CHECK_SYS(close(sv[1]));
    SAY("hostile arguments: unmapped, kernel and non-canonical pointers to send, recv, "
        "recvfrom, socketpair, setitimer, getitimer and sigaltstack give EFAULT; bad "
        "descriptors EBADF");
}

/* The file calls added for issue 16 with bad pointers, bad descriptors and large counts: each
 * ends in an error (or, for the counts, in success that keeps nothing once undone). */
static void hostile_files(void)
{
    static char *const bad[] = {(char *)8, (char *)0xffff800000000000ul,
                                (char *)0x8000000000000000ul};
    char path[64];
    snprintf(path, sizeof path, "/tmp/compat-h.%d", (int)getpid());
    int fd = CHECK_SYS(open(path, O_RDWR | O_CREAT | O_TRUNC, 0644));
    CHECK_SYS(ftruncate(fd, 3 * 4096));
    for (unsigned i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        CHECK_ERRNO(fcntl(fd, F_SETLK, bad[i]), EFAULT);
        CHECK_ERRNO(fcntl(fd, F_GETLK, bad[i]), EFAULT);
        CHECK_ERRNO(fcntl(fd, F_OFD_SETLKW, bad[i]), EFAULT);
        CHECK_ERRNO(syscall(SYS_copy_file_range, fd, bad[i], fd, NULL, 10L, 0), EFAULT);
        CHECK_ERRNO(syscall(SYS_getrusage, 0L, bad[i]), EFAULT);
        CHECK_ERRNO(syscall(SYS_times, bad[i]), EFAULT);
        CHECK_ERRNO(syscall(SYS_getxattr, bad[i], "user.x", NULL, 0L), EFAULT);
        CHECK_ERRNO(syscall(SYS_lgetxattr, bad[i], "user.x", NULL, 0L), EFAULT);
    }
    CHECK_ERRNO(fcntl(9999, F_SETLK, &(struct flock){.l_type = F_RDLCK}), EBADF);
    CHECK_ERRNO(flock(9999, LOCK_EX), EBADF);
    CHECK_ERRNO(syscall(SYS_copy_file_range, 9999, NULL, fd, NULL, 1L, 0), EBADF);
    CHECK_ERRNO(syscall(SYS_fgetxattr, 9999, "user.x", NULL, 0L), EBADF);
    CHECK_ERRNO(msync((void *)0x100000000000ul, 4096, MS_SYNC), ENOMEM);
    CHECK_EQ(syscall(SYS_close_range, 100000, ~0U, 0), 0);
    /* 2000 separate record locks (every other byte), then closing lets go of them all. */
    for (int i = 0; i < 2000; i++)
        CHECK_SYS(fcntl(fd, F_SETLK,
                        &(struct flock){.l_type = F_WRLCK, .l_whence = SEEK_SET,
                                        .l_start = 2 * i, .l_len = 1}));
    /* A shared mapping far larger than the file (only its pages are mapped), 100 times. */
    for (int i = 0; i < 100; i++) {
        char *p = mmap(NULL, 1ul << 36, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        CHECK(p != MAP_FAILED);
        p[4096 + i] = (char)i;
        CHECK_SYS(munmap(p, 1ul << 36));
    }
    CHECK_SYS(close(fd));
    CHECK_SYS(unlink(path));
    SAY("hostile file calls: EFAULT for bad lock, copy, rusage, times and xattr pointers, EBADF "
        "for bad descriptors, 2000 record locks and 100 shared 64 GiB mappings undone");
}

/* `pairs` AF_UNIX socket pairs written to and closed, then `children` children that set an
 * alarm and an alternate stack and exit. */
static void pairs_and_children(int pairs, int children)
{
    for (int i = 0; i < pairs; i++) {
        int sv[2];
        CHECK_SYS(socketpair(AF_UNIX, SOCK_STREAM, 0, sv));
        CHECK_EQ(write(sv[0], "x", 1), 1);
        CHECK_SYS(close(sv[0]));
        CHECK_SYS(close(sv[1]));
    }
    for (int i = 0; i < children; i++) {
        pid_t pid = CHECK_SYS(fork());
        if (pid == 0) {
            static char stack[16384];
            stack_t ss = {.ss_sp = stack, .ss_size = sizeof stack};
            alarm(100);
            sigaltstack(&ss, NULL);
            _exit(0);
        }
        reap(pid);
    }
}

static void nothing_kept(void)
{
    /* A round first, so that the kernel's heap of every node the children ran on has grown
     * (by 2 MiB steps, kept): the check is for what the measured rounds leave behind. */
    pairs_and_children(200, 20);
    long before = reef_free_bytes();
    hostile();
    hostile_files();
    pairs_and_children(2000, 200);
    CHECK_MEMORY_BACK(before, "2000 socket pairs and 200 children with alarms and alternate stacks");
}

/* Reads the whole of the small file `path` into a string. */
static const char *contents(const char *path)
{
    static char buf[64];
    int fd = CHECK_SYS(open(path, O_RDONLY));
    long n = CHECK_SYS(read(fd, buf, sizeof buf - 1));
    buf[n] = 0;
    CHECK_SYS(close(fd));
    return buf;
}

static void copies(void)
{
    char a[64], b[64];
    snprintf(a, sizeof a, "/tmp/compat-a.%d", (int)getpid());
    snprintf(b, sizeof b, "/tmp/compat-b.%d", (int)getpid());
    int in = CHECK_SYS(open(a, O_RDWR | O_CREAT | O_TRUNC, 0644));
    int out = CHECK_SYS(open(b, O_RDWR | O_CREAT | O_TRUNC, 0644));
    CHECK_EQ(write(in, "hello world", 11), 11);
    long long oin = 6, oout = 0;
    CHECK_EQ(syscall(SYS_copy_file_range, in, &oin, out, &oout, 5L, 0), 5);
    CHECK_EQ(oin, 11);
    CHECK_EQ(oout, 5);
    CHECK(strcmp(contents(b), "world") == 0);
    /* At the file offsets, which advance: the output's is still 0. */
    CHECK_SYS(lseek(in, 0, SEEK_SET));
    CHECK_EQ(syscall(SYS_copy_file_range, in, NULL, out, NULL, 6L, 0), 6);
    CHECK_EQ(lseek(in, 0, SEEK_CUR), 6);
    CHECK_EQ(lseek(out, 0, SEEK_CUR), 6);
    CHECK(strcmp(contents(b), "hello ") == 0);
    /* At the end of the input: 0. */
    oin = 11;
    CHECK_EQ(syscall(SYS_copy_file_range, in, &oin, out, NULL, 5L, 0), 0);
    CHECK_ERRNO(syscall(SYS_copy_file_range, in, NULL, out, NULL, 1L, 1), EINVAL);
    oin = 0, oout = 2;
    CHECK_ERRNO(syscall(SYS_copy_file_range, in, &oin, in, &oout, 4L, 0), EINVAL);
    int app = CHECK_SYS(open(b, O_WRONLY | O_APPEND));
    CHECK_ERRNO(syscall(SYS_copy_file_range, in, NULL, app, NULL, 1L, 0), EBADF);
    CHECK_SYS(close(app));
    int dir = CHECK_SYS(open("/tmp", O_RDONLY | O_DIRECTORY));
    CHECK_ERRNO(syscall(SYS_copy_file_range, dir, NULL, out, NULL, 1L, 0), EISDIR);
    CHECK_SYS(close(dir));
    int pipes[2];
    CHECK_SYS(pipe(pipes));
    CHECK_ERRNO(syscall(SYS_copy_file_range, pipes[0], NULL, out, NULL, 1L, 0), EINVAL);
    CHECK_EQ(syscall(SYS_fadvise64, in, 0L, 0L, 2L), 0);
    CHECK_ERRNO(syscall(SYS_fadvise64, in, 0L, 0L, 99L), EINVAL);
    CHECK_ERRNO(syscall(SYS_fadvise64, pipes[0], 0L, 0L, 0L), ESPIPE);
    CHECK_ERRNO(syscall(SYS_fadvise64, 1000, 0L, 0L, 0L), EBADF);
    CHECK_SYS(close(pipes[0]));
    CHECK_SYS(close(pipes[1]));
    CHECK_SYS(close(in));
    CHECK_SYS(close(out));
    CHECK_SYS(unlink(a));
    CHECK_SYS(unlink(b));
    SAY("copies: copy_file_range at given and file offsets, 0 at the end, EINVAL for flags, "
        "overlap and a pipe, EBADF for O_APPEND, EISDIR; fadvise64 a hint with Linux's errors");
}

#ifndef SYS_close_range
#define SYS_close_range 436
#endif

static void close_ranges(void)
{
    int fd = CHECK_SYS(open("/dev/null", O_RDONLY));
    for (int i = 40; i <= 43; i++)
        CHECK_EQ(dup2(fd, i), i);
    CHECK_SYS(close(fd));
    CHECK_EQ(syscall(SYS_close_range, 41, 42, 0), 0);
    CHECK_ERRNO(fcntl(41, F_GETFD), EBADF);
    CHECK_ERRNO(fcntl(42, F_GETFD), EBADF);
    CHECK_EQ(fcntl(40, F_GETFD), 0);
    CHECK_EQ(syscall(SYS_close_range, 40, ~0U, 4 /* CLOSE_RANGE_CLOEXEC */), 0);
    CHECK_EQ(fcntl(40, F_GETFD), FD_CLOEXEC);
    CHECK_EQ(fcntl(43, F_GETFD), FD_CLOEXEC);
    CHECK_ERRNO(syscall(SYS_close_range, 5, 4, 0), EINVAL);
    CHECK_ERRNO(syscall(SYS_close_range, 40, 50, 8), EINVAL);
    CHECK_EQ(syscall(SYS_close_range, 40, ~0U, 0), 0);
    CHECK_ERRNO(fcntl(43, F_GETFD), EBADF);
    SAY("close_range: closes a range, marks one close-on-exec, EINVAL for first > last and "
        "unknown flags");
}


static long long cpu_us(const struct rusage *r)
{
    return (r->ru_utime.tv_sec + r->ru_stime.tv_sec) * 1000000LL + r->ru_utime.tv_usec +
           r->ru_stime.tv_usec;
}

/* The line of /proc/self/maps whose range holds `addr` (its permissions and path). */
static int maps_line(const void *addr, char *perms, char *path, size_t path_len)
{
    FILE *f = fopen("/proc/self/maps", "r");
    CHECK(f != NULL);
    char line[512];
    int found = 0;
    while (!found && fgets(line, sizeof line, f)) {
        unsigned long lo, hi;
        char p[8];
        int end = 0;
        if (sscanf(line, "%lx-%lx %7s %*s %*s %*s %n", &lo, &hi, p, &end) < 3 || end == 0)
            FAIL("bad /proc/self/maps line: %s", line);
        if ((unsigned long)addr >= lo && (unsigned long)addr < hi) {
            snprintf(perms, 8, "%s", p);
            snprintf(path, path_len, "%s", line + end);
            path[strcspn(path, "\n")] = 0;
            found = 1;
        }
    }
    fclose(f);
    return found;
}

static void maps(void)
{
    char perms[8], path[256], exe[256];
    int local = 0;
    CHECK(maps_line(&local, perms, path, sizeof path));
    CHECK(strcmp(path, "[stack]") == 0);
    CHECK(perms[0] == 'r' && perms[1] == 'w' && perms[3] == 'p');
    CHECK(maps_line((const void *)maps, perms, path, sizeof path));
    long n = CHECK_SYS(readlink("/proc/self/exe", exe, sizeof exe - 1));
    exe[n] = 0;
    CHECK(strcmp(path, exe) == 0);
    CHECK(perms[2] == 'x');
    void *shared = mmap(NULL, 8192, PROT_READ, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    CHECK(shared != MAP_FAILED);
    CHECK(maps_line((char *)shared + 4096, perms, path, sizeof path));
    CHECK(strcmp(perms, "r--s") == 0);
    CHECK_SYS(munmap(shared, 8192));
    SAY("/proc/self/maps: the stack's line, the program's code with its path, a shared mapping");
}

static void cpu_times(void)
{
    struct rusage r;
    CHECK_SYS(getrusage(RUSAGE_SELF, &r));
    CHECK_SYS(getrusage(RUSAGE_THREAD, &r));
    CHECK_ERRNO(getrusage(5, &r), EINVAL);
    /* A child spins until its own time says 70 ms (30 s of real time at most); the parent
     * then finds them in wait4's rusage and RUSAGE_CHILDREN, and at least 50 ms in times()'
     * cutime + cstime: each of the two is cut to whole clock ticks (10 ms) on its own, so
     * their sum may read up to two ticks short (Linux once gave 4 ticks for a 50 ms child). */
    struct rusage before;
    CHECK_SYS(getrusage(RUSAGE_CHILDREN, &before));
    pid_t pid = CHECK_SYS(fork());
    if (pid == 0) {
        long long start = now_ns();
        volatile unsigned long spin = 0;
        for (;;) {
            for (int i = 0; i < 1000000; i++)
                spin++;
            getrusage(RUSAGE_SELF, &r);
            if (cpu_us(&r) >= 70000)
                _exit(0);
            if (now_ns() - start > 30000000000LL)
                _exit(2);
        }
    }
    int status;
    struct rusage child;
    CHECK_EQ(wait4(pid, &status, 0, &child), pid);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    CHECK(cpu_us(&child) >= 70000);
    struct rusage after;
    CHECK_SYS(getrusage(RUSAGE_CHILDREN, &after));
    CHECK(cpu_us(&after) - cpu_us(&before) >= 70000);
    struct tms t;
    CHECK(times(&t) != (clock_t)-1);
    CHECK(t.tms_cutime + t.tms_cstime >= 5 * sysconf(_SC_CLK_TCK) / 100);
    SAY("cpu times: a child that spun %lld ms by its own count shows them in wait4's rusage, "
        "RUSAGE_CHILDREN and times(); EINVAL for a bad who",
        cpu_us(&child) / 1000);
}

/* /proc/stat's `ctxt`: the context switches of every core since boot (-1 if missing). */
static long long context_switches(void)
{
    FILE *f = fopen("/proc/stat", "r");
    CHECK(f != NULL);
    char line[512];
    long long ctxt = -1;
    while (fgets(line, sizeof line, f))
        sscanf(line, "ctxt %lld", &ctxt);
    fclose(f);
    return ctxt;
}

static void proc_and_log(void)
{
    /* /proc/stat: a "cpu" line of ten counters and a line per online core, ctxt, btime. */
    FILE *f = fopen("/proc/stat", "r");
    CHECK(f != NULL);
    char line[512];
    unsigned long long v[10];
    CHECK(fgets(line, sizeof line, f) != NULL);
    CHECK_EQ(sscanf(line, "cpu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1],
                    &v[2], &v[3], &v[4], &v[5], &v[6], &v[7], &v[8], &v[9]),
             10);
    long cores = 0, btime = 0;
    while (fgets(line, sizeof line, f)) {
        int n;
        if (sscanf(line, "cpu%d ", &n) == 1)
            cores++;
        sscanf(line, "btime %ld", &btime);
    }
    fclose(f);
    CHECK_EQ(cores, sysconf(_SC_NPROCESSORS_ONLN));
    CHECK(btime > 1000000000L);
    /* ctxt counts switches: a child that ran and was waited for made some. */
    long long ctxt = context_switches();
    CHECK(ctxt > 0);
    pid_t child = CHECK_SYS(fork());
    if (child == 0)
        _exit(0);
    CHECK_EQ(waitpid(child, NULL, 0), child);
    CHECK(context_switches() > ctxt);
    /* /proc/self/stat: utime and stime (fields 14 and 15) are numbers. */
    f = fopen("/proc/self/stat", "r");
    CHECK(f != NULL);
    CHECK(fgets(line, sizeof line, f) != NULL);
    fclose(f);
    char *after = strrchr(line, ')');
    CHECK(after != NULL);
    unsigned long long utime, stime;
    CHECK_EQ(sscanf(after + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &utime,
                    &stime),
             2);
    /* The kernel log: dmesg's calls. Linux may refuse them without CAP_SYSLOG. */
    int size = klogctl(10, NULL, 0);
    if (size < 0 && !on_reef()) {
        CHECK_EQ(errno, EPERM);
        SAY("/proc/stat and /proc/self/stat parse; the kernel log is not readable here (EPERM)");
        return;
    }
    CHECK(size >= 4096);
    char *buf = malloc(size);
    CHECK(buf != NULL);
    int n = CHECK_SYS(klogctl(3, buf, size));
    CHECK(n > 0 && n <= size);
    CHECK(buf[0] == '<');
    if (on_reef())
        CHECK(memmem(buf, n, "reef: boot ok: ", 15) != NULL);
    CHECK_EQ(klogctl(3, buf, 0), 0);
    CHECK_ERRNO(klogctl(3, NULL, 10), EINVAL);
    CHECK_ERRNO(klogctl(3, buf, -1), EINVAL);
    CHECK_ERRNO(klogctl(99, buf, 10), EINVAL);
    free(buf);
    SAY("/proc/stat (cpu lines for %ld cores, ctxt, btime) and /proc/self/stat's times parse; the "
        "kernel log reads back (%d bytes), EINVAL for a null buffer, a negative length, a bad "
        "type",
        cores, n);
}

int main(void)
{
    test_begin("compat");
    proc_and_log();
    maps();
    cpu_times();
    copies();
    close_ranges();
    errors();
    interrupted_waits();
    reset_hand();
    alt_stack();
    timers();
    nothing_kept();
    futex_realtime();
    PASS();
}
