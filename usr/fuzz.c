/*
 * fuzz: Reef's random-system-call fuzzer (a tool, not a PASS/FAIL test program). `cargo xtask
 * fuzz` boots it as init and watches the serial log; `cargo xtask test` runs short fixed-seed
 * campaigns (and one natively on Linux). See docs/debugging.md ("Fuzzing").
 *
 *   fuzz --calls N [--seed S] [--workers W] [--trace] [--verbose] [--hb-ms MS] [--dir DIR]
 *
 * The supervisor (this process, init on Reef) makes a scratch tree in DIR (default /tmp/fuzz on
 * Reef, /tmp/fuzz.<pid> elsewhere), forks W workers (default: one per CPU it may run on), each in
 * its own process group, and gives each N/W calls. A worker issues random system calls from a
 * weighted table of the calls Reef implements (and unknown numbers, Reef's own 1024..1040, very
 * large ones) with arguments mixing small valid values, boundary integers, valid buffers,
 * unmapped, PROT_NONE and read-only memory, kernel and non-canonical addresses, huge lengths,
 * valid and invalid descriptors and paths. The socket calls mostly get sockets the worker made
 * (each generation starts with some: a TCP listener on one of a few fixed ports of 127.0.0.1,
 * connections to it, fresh and bound UDP and TCP sockets), addresses on those ports (or
 * ports the kernel named), flags that keep them from blocking, and sometimes wrong families,
 * lengths and pointers. Reef's core stop and start are among the calls, so
 * cores come and go under the workers. A worker that dies (SIGSEGV after a bad sigreturn,
 * exit, execve of a real program, SIGKILL to itself ...) is reaped and started again as the next
 * generation; the calls it spent count. When every worker has spent its share the supervisor
 * prints `fuzz: done calls=N seed=S ...` and exits 0.
 *
 * Determinism: call i of generation g of worker w draws its random numbers from a stream seeded
 * by (seed, w, g, i) alone, so the same seed gives every worker the same sequence of call
 * choices. Arguments that name run-time state (descriptors a call returned, mappings, child
 * pids) and the points where a worker dies of a signal or is stopped by the watchdog depend on
 * scheduling, so two runs with one seed agree on the calls, not on every interleaving.
 *
 * Output (all lines start with `fuzz: `), on stdout (the serial console as init), one write()
 * per line:
 *   start seed=S calls=N workers=W ...      once
 *   hb t=SECONDS calls=C rate=R/s restarts=.. watchdog=.. strays=.. escaped=.. free=MiB
 *                                           every --hb-ms (default 1000) ms: the heartbeat;
 *                                           `cargo xtask fuzz` calls a silence of 60 s a hang
 *   last wW gG #I pid=P NAME(ARGS) = RET    after every heartbeat, each worker's latest call
 *                                           (`= ?`: still in the kernel; `#I.K`: the K-th call
 *                                           of a child that call I forked)
 *   watchdog CALL: no progress for T ms     a worker was stuck in CALL for 3 s (a blocked call
 *                                           is first poked with SIGALRM after 0.1 s): SIGKILL
 *   T wW gG #I pid=P NAME(ARGS)             --trace: every call, written by the worker itself
 *                                           before it enters the kernel (exact; the serial port
 *                                           of QEMU is cheap)
 *   FAIL REASON, ring wW ..., left STAT     the kernel is alive but wrong: a process that does
 *                                           not die 30 s after SIGKILL, fork failing for 10 s,
 *                                           the supervisor's shared memory changing under it;
 *                                           every worker's last 16 calls and (on Reef) every
 *                                           process left; exit status 1
 *   generations ended: SIGNAL=N ...         how workers died
 *   counts NAME=MADE/OK ...                 per call of the table: how many the workers made
 *                                           and how many did not fail (a few lines)
 *   done calls=N seed=S ...                 the end; exit status 0
 * --verbose adds `ended CALL: HOW` for every generation that ended and `poke CALL` lines.
 * A kernel panic leaves no chance to print anything: the last calls are those of the trace (or
 * of the last heartbeat without --trace).
 *
 * Safety of the harness (the workers must not break the supervisor, the machine or the host):
 * no reboot; signals only to the worker itself, its own process group, its children or pids
 * that do not exist (checked on the low 32 bits, which is what the kernel reads); no setsid or
 * setpgid that leaves the group (processes that leave anyway, into another existing group, are
 * killed by a sweep of /proc every 2 s: `escaped`); calls that
 * change the file system get paths in DIR only (and symlink targets and link sources too,
 * linkat without AT_EMPTY_PATH), other paths are only read; no /dev/console, /dev/tty,
 * /proc/1/fd; execve only of programs that exit (or of files that are not programs) with argv
 * without `--calls` (so a copy of this program refuses to run); worker stdin/stdout/stderr are
 * /dev/null; the supervisor's shared pages lie far from everything the workers map; a worker
 * keeps at most 16 MiB of its mappings (a bigger mmap is unmapped right after it succeeded), a
 * call that writes to a regular file asks for 8 MiB at most and a file over 8 MiB is cut to 0
 * after it, at most 4 children (killed and reaped), at most 48 descriptors. As root it first
 * becomes nobody (on Reef too, where it runs as process 1: so that the file system's
 * permission checks are exercised, and so that no call needs a root-only guard). On Reef with
 * two cores or more, a child that stays root (the core churner) stops, starts, parks,
 * unparks and updates (to the real-time image and back) the cores but 0 at random meanwhile
 * (Barrelfish/DC's operations under hostile load;
 * every answer must be success or one of the calls' documented errors), and brings every core
 * back online before the end. Unknown numbers are ones Linux has no call for either. Natively the
 * sockets are the host's: only AF_INET ones (no protocol whose module Linux might load), and
 * before bind, connect, sendto, sendmsg and listen net_guard() checks what the kernel will
 * read, so that nothing binds or listens outside 127.0.0.0/8 and nothing is sent anywhere
 * but 127.0.0.0/8 (or 0.0.0.0) on the fuzzer's ports; no multicast group is joined. On Reef
 * any address goes (there is no NIC: other addresses than 127/8 are dropped).
 */
#define _GNU_SOURCE
#include "reef-test.h"
#include "reef_core.h"
#include <dirent.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>

/* ---- limits ---- */

#define MAX_WORKERS 64
#define RING 16
#define TRACE_FD 777
#define KIDS_MAX 4
#define FDS_MAX 48
#define MAPS_MAX 32
#define SOCKS_MAX 16
#define PORTS_MAX 8
#define MAP_CAP (16ull << 20)
#define FILE_CAP (8ll << 20)
#define BUF_SIZE (64 * 1024)
#define ARGS_SIZE (16 * 1024)
#define PAGE 4096ull
/* Watchdog: poke (SIGALRM, to interrupt a blocking call) after this long without progress,
 * SIGKILL the worker's group after POKE_NS * .., give up (FAIL) when it is not dead after .. */
#define POKE_NS 100000000ll
#define KILL_NS 3000000000ll
#define UNKILLABLE_NS 30000000000ll

/* ---- raw system calls (no errno, no TLS: usable after a bad arch_prctl or sigreturn) ---- */

static inline long raw6(long n, long a, long b, long c, long d, long e, long f)
{
    register long r10 __asm__("r10") = d;
    register long r8 __asm__("r8") = e;
    register long r9 __asm__("r9") = f;
    long ret;
    __asm__ volatile("syscall"
                     : "=a"(ret)
                     : "a"(n), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8), "r"(r9)
                     : "rcx", "r11", "memory");
    return ret;
}
#define raw0(n) raw6((n), 0, 0, 0, 0, 0, 0)
#define raw1(n, a) raw6((n), (long)(a), 0, 0, 0, 0, 0)
#define raw2(n, a, b) raw6((n), (long)(a), (long)(b), 0, 0, 0, 0)
#define raw3(n, a, b, c) raw6((n), (long)(a), (long)(b), (long)(c), 0, 0, 0)
#define raw4(n, a, b, c, d) raw6((n), (long)(a), (long)(b), (long)(c), (long)(d), 0, 0)

/* clone/fork/vfork whose child never touches the stack (it may share the parent's or have a
 * bogus one): the child execs req->path (when not 0) and exits. Returns in the parent. */
struct clone_req {
    long nr, flags, newsp, ptid, ctid, tls, path, argv, envp;
};
long fz_clone(struct clone_req *req);
/* rt_sigreturn with the stack pointer at `frame` (a ucontext). A frame whose RIP is fz_resume
 * comes back here, as does a refused one (the error in RAX); anything else lands where the
 * frame says. */
long fz_sigreturn(uint64_t frame);
void fz_resume(void);
void fz_restorer(void);
__asm__(".text\n"
        ".globl fz_clone\n"
        "fz_clone:\n"
        "  push %rbx\n  push %r12\n  push %r13\n  push %r14\n"
        "  mov %rdi, %rbx\n"
        "  mov 48(%rbx), %r12\n  mov 56(%rbx), %r13\n  mov 64(%rbx), %r14\n"
        "  mov 0(%rbx), %rax\n  mov 8(%rbx), %rdi\n  mov 16(%rbx), %rsi\n"
        "  mov 24(%rbx), %rdx\n  mov 32(%rbx), %r10\n  mov 40(%rbx), %r8\n"
        "  syscall\n"
        "  test %rax, %rax\n  jz 2f\n"
        "  pop %r14\n  pop %r13\n  pop %r12\n  pop %rbx\n  ret\n"
        "2:\n  test %r12, %r12\n  jz 3f\n"
        "  mov %r12, %rdi\n  mov %r13, %rsi\n  mov %r14, %rdx\n  mov $59, %eax\n  syscall\n"
        "3:\n  mov $60, %eax\n  xor %edi, %edi\n  syscall\n  ud2\n"
        ".globl fz_sigreturn\n"
        "fz_sigreturn:\n"
        "  lea fz_ctx(%rip), %rax\n"
        "  mov %rbx, 0(%rax)\n  mov %rbp, 8(%rax)\n  mov %r12, 16(%rax)\n  mov %r13, 24(%rax)\n"
        "  mov %r14, 32(%rax)\n  mov %r15, 40(%rax)\n  mov %rsp, 48(%rax)\n"
        "  mov %rdi, %rsp\n  mov $15, %eax\n  syscall\n"
        ".globl fz_resume\n"
        "fz_resume:\n"
        "  lea fz_ctx(%rip), %rcx\n"
        "  mov 48(%rcx), %rsp\n  mov 0(%rcx), %rbx\n  mov 8(%rcx), %rbp\n  mov 16(%rcx), %r12\n"
        "  mov 24(%rcx), %r13\n  mov 32(%rcx), %r14\n  mov 40(%rcx), %r15\n"
        "  pushfq\n  andq $~0x40500, (%rsp)\n  popfq\n"
        "  sub $8, %rsp\n  movl $0x1f80, (%rsp)\n  ldmxcsr (%rsp)\n  add $8, %rsp\n  fninit\n"
        "  ret\n"
        ".globl fz_restorer\n"
        "fz_restorer:\n  mov $15, %eax\n  syscall\n  ud2\n");
uint64_t fz_ctx[8];

/* ---- the deterministic random streams ---- */

struct rng {
    uint64_t s;
};

static uint64_t mix(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static uint64_t next(struct rng *r)
{
    return mix(r->s += 0x9e3779b97f4a7c15ull);
}

static uint64_t below(struct rng *r, uint64_t n)
{
    return n ? next(r) % n : 0;
}

static int pct(struct rng *r, int p)
{
    return (int)below(r, 100) < p;
}

#define PICK(r, arr) ((arr)[below((r), sizeof(arr) / sizeof((arr)[0]))])

/* The stream of call `i` (sub 0) or of the sub-th call of the child it forked. */
static struct rng stream(uint64_t seed, uint64_t w, uint64_t gen, uint64_t i, uint64_t sub)
{
    uint64_t s = mix(seed + 0x1234567);
    s = mix(s ^ (w + 1) * 0x9e3779b97f4a7c15ull);
    s = mix(s ^ (gen + 1) * 0xc2b2ae3d27d4eb4full);
    s = mix(s ^ (i + 1) * 0x165667b19e3779f9ull);
    s = mix(s ^ sub);
    return (struct rng){s};
}

/* ---- shared with the supervisor ---- */

#define NCALLS_MAX 256 /* at least the table's NCALLS (checked below) */

struct rec {
    _Atomic uint32_t state; /* 0 empty, 1 in the kernel, 2 returned */
    uint32_t gen;
    int32_t pid;
    uint32_t id;
    uint64_t i;
    uint64_t sub;
    uint64_t nr;
    uint64_t a[6];
    int64_t ret;
};

struct slot {
    _Atomic uint64_t calls; /* spent, all generations and their children */
    _Atomic uint64_t head;  /* records written */
    _Atomic int32_t pid;
    _Atomic int32_t done;
    uint32_t gen;
    uint64_t quota;
    struct rec ring[RING];
    /* Per call of the table: made (counted before it enters the kernel) and succeeded. */
    _Atomic uint32_t made[NCALLS_MAX], ok[NCALLS_MAX];
};

static struct slot *slots;
static uint32_t *futex_page; /* one page all workers share, for futexes across processes */

/* ---- options ---- */

static uint64_t opt_calls;
static uint64_t opt_seed = 1;
static int opt_workers;
static int opt_trace;
static int opt_verbose;
static long opt_hb_ms = 1000;
static char opt_dir[200];
static int reef;
/* The core churner's pid (0: none; see `churn`). */
static pid_t churner;

/* The supervisor's output: one write() per line, so that lines of the workers' trace (which go
 * to the same console) never land inside one. */
static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...)
{
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    if ((size_t)n >= sizeof line)
        n = sizeof line - 1;
    for (char *p = line; n > 0;) {
        ssize_t w = write(1, p, (size_t)n);
        if (w <= 0)
            break;
        p += w;
        n -= (int)w;
    }
}

/* ---- the call table (weights: relative frequency, in tenths) ---- */

enum { F_CHILD_NO = 1, F_GROWS_FD = 2 };

#define CALLS(X)                                                                                   \
    X(read, 0, 3, 300, 0)                                                                          \
    X(write, 1, 3, 250, F_GROWS_FD)                                                                \
    X(open, 2, 3, 200, 0)                                                                          \
    X(close, 3, 1, 200, 0)                                                                         \
    X(stat, 4, 2, 80, 0)                                                                           \
    X(fstat, 5, 2, 80, 0)                                                                          \
    X(lstat, 6, 2, 50, 0)                                                                          \
    X(poll, 7, 3, 100, 0)                                                                          \
    X(lseek, 8, 3, 120, 0)                                                                         \
    X(mmap, 9, 6, 300, 0)                                                                          \
    X(mprotect, 10, 3, 150, 0)                                                                     \
    X(munmap, 11, 2, 200, 0)                                                                       \
    X(brk, 12, 1, 80, 0)                                                                           \
    X(rt_sigaction, 13, 4, 150, 0)                                                                 \
    X(rt_sigprocmask, 14, 4, 100, 0)                                                               \
    X(rt_sigreturn, 15, 1, 30, 0)                                                                  \
    X(ioctl, 16, 3, 150, 0)                                                                        \
    X(pread64, 17, 4, 120, 0)                                                                      \
    X(pwrite64, 18, 4, 120, F_GROWS_FD)                                                            \
    X(readv, 19, 3, 80, 0)                                                                         \
    X(writev, 20, 3, 80, F_GROWS_FD)                                                               \
    X(access, 21, 2, 40, 0)                                                                        \
    X(pipe, 22, 1, 60, 0)                                                                          \
    X(select, 23, 5, 60, 0)                                                                        \
    X(sched_yield, 24, 0, 30, 0)                                                                   \
    X(madvise, 28, 3, 100, 0)                                                                      \
    X(dup, 32, 1, 60, 0)                                                                           \
    X(dup2, 33, 2, 60, 0)                                                                          \
    X(nanosleep, 35, 2, 40, 0)                                                                     \
    X(getitimer, 36, 2, 20, 0)                                                                     \
    X(alarm, 37, 1, 10, 0)                                                                         \
    X(setitimer, 38, 3, 20, 0)                                                                     \
    X(getpid, 39, 0, 20, 0)                                                                        \
    X(socket, 41, 3, 50, 0)                                                                        \
    X(connect, 42, 3, 50, 0)                                                                       \
    X(accept, 43, 3, 15, 0)                                                                        \
    X(sendto, 44, 6, 60, F_GROWS_FD)                                                               \
    X(recvfrom, 45, 6, 60, 0)                                                                      \
    X(sendmsg, 46, 3, 40, 0)                                                                       \
    X(recvmsg, 47, 3, 40, 0)                                                                       \
    X(shutdown, 48, 2, 25, 0)                                                                      \
    X(bind, 49, 3, 45, 0)                                                                          \
    X(listen, 50, 2, 30, 0)                                                                        \
    X(getsockname, 51, 3, 20, 0)                                                                   \
    X(getpeername, 52, 3, 20, 0)                                                                   \
    X(socketpair, 53, 4, 30, 0)                                                                    \
    X(setsockopt, 54, 5, 30, 0)                                                                    \
    X(getsockopt, 55, 5, 30, 0)                                                                    \
    X(sendfile, 40, 4, 60, F_GROWS_FD)                                                             \
    X(clone, 56, 5, 80, F_CHILD_NO)                                                                \
    X(fork, 57, 0, 40, F_CHILD_NO)                                                                 \
    X(vfork, 58, 0, 30, F_CHILD_NO)                                                                \
    X(execve, 59, 3, 60, 0)                                                                        \
    X(exit, 60, 1, 3, 0)                                                                           \
    X(wait4, 61, 4, 80, 0)                                                                         \
    X(kill, 62, 2, 60, 0)                                                                          \
    X(uname, 63, 1, 30, 0)                                                                         \
    X(fcntl, 72, 3, 150, 0)                                                                        \
    X(fsync, 74, 1, 30, 0)                                                                         \
    X(fdatasync, 75, 1, 20, 0)                                                                     \
    X(truncate, 76, 2, 50, 0)                                                                      \
    X(ftruncate, 77, 2, 60, F_GROWS_FD)                                                            \
    X(getcwd, 79, 2, 40, 0)                                                                        \
    X(chdir, 80, 1, 40, 0)                                                                         \
    X(fchdir, 81, 1, 30, 0)                                                                        \
    X(rename, 82, 2, 60, 0)                                                                        \
    X(mkdir, 83, 2, 60, 0)                                                                         \
    X(rmdir, 84, 1, 50, 0)                                                                         \
    X(creat, 85, 2, 40, 0)                                                                         \
    X(link, 86, 2, 40, 0)                                                                          \
    X(unlink, 87, 1, 60, 0)                                                                        \
    X(symlink, 88, 2, 40, 0)                                                                       \
    X(readlink, 89, 3, 50, 0)                                                                      \
    X(chmod, 90, 2, 30, 0)                                                                         \
    X(fchmod, 91, 2, 30, 0)                                                                        \
    X(chown, 92, 3, 20, 0)                                                                         \
    X(fchown, 93, 3, 20, 0)                                                                        \
    X(lchown, 94, 3, 10, 0)                                                                        \
    X(umask, 95, 1, 20, 0)                                                                         \
    X(gettimeofday, 96, 2, 30, 0)                                                                  \
    X(getrlimit, 97, 2, 30, 0)                                                                     \
    X(sysinfo, 99, 1, 30, 0)                                                                       \
    X(getuid, 102, 0, 10, 0)                                                                       \
    X(getgid, 104, 0, 10, 0)                                                                       \
    X(geteuid, 107, 0, 10, 0)                                                                      \
    X(getegid, 108, 0, 10, 0)                                                                      \
    X(setpgid, 109, 2, 20, F_CHILD_NO)                                                             \
    X(getppid, 110, 0, 20, 0)                                                                      \
    X(getpgrp, 111, 0, 10, 0)                                                                      \
    X(setsid, 112, 0, 10, F_CHILD_NO)                                                              \
    X(getpgid, 121, 1, 20, 0)                                                                      \
    X(getsid, 124, 1, 20, 0)                                                                       \
    X(rt_sigpending, 127, 2, 30, 0)                                                                \
    X(rt_sigsuspend, 130, 2, 3, 0)                                                                 \
    X(sigaltstack, 131, 2, 50, 0)                                                                  \
    X(statfs, 137, 2, 20, 0)                                                                       \
    X(fstatfs, 138, 2, 20, 0)                                                                      \
    X(prctl, 157, 5, 80, 0)                                                                        \
    X(arch_prctl, 158, 2, 80, 0)                                                                   \
    X(setrlimit, 160, 2, 30, 0)                                                                    \
    X(sync, 162, 0, 10, 0)                                                                         \
    X(gettid, 186, 0, 20, 0)                                                                       \
    X(tkill, 200, 2, 40, 0)                                                                        \
    X(time, 201, 1, 20, 0)                                                                         \
    X(futex, 202, 6, 200, 0)                                                                       \
    X(sched_setaffinity, 203, 3, 40, 0)                                                            \
    X(sched_getaffinity, 204, 3, 40, 0)                                                            \
    X(getdents64, 217, 3, 100, 0)                                                                  \
    X(set_tid_address, 218, 1, 30, 0)                                                              \
    X(clock_gettime, 228, 2, 60, 0)                                                                \
    X(clock_getres, 229, 2, 30, 0)                                                                 \
    X(clock_nanosleep, 230, 4, 40, 0)                                                              \
    X(exit_group, 231, 1, 3, 0)                                                                    \
    X(tgkill, 234, 3, 40, 0)                                                                       \
    X(waitid, 247, 5, 60, 0)                                                                       \
    X(openat, 257, 4, 200, 0)                                                                      \
    X(mkdirat, 258, 3, 40, 0)                                                                      \
    X(fchownat, 260, 5, 20, 0)                                                                     \
    X(newfstatat, 262, 4, 80, 0)                                                                   \
    X(unlinkat, 263, 3, 50, 0)                                                                     \
    X(renameat, 264, 4, 30, 0)                                                                     \
    X(linkat, 265, 5, 30, 0)                                                                       \
    X(symlinkat, 266, 3, 30, 0)                                                                    \
    X(readlinkat, 267, 4, 30, 0)                                                                   \
    X(fchmodat, 268, 3, 20, 0)                                                                     \
    X(faccessat, 269, 3, 30, 0)                                                                    \
    X(pselect6, 270, 6, 50, 0)                                                                     \
    X(ppoll, 271, 5, 60, 0)                                                                        \
    X(set_robust_list, 273, 2, 30, 0)                                                              \
    X(utimensat, 280, 4, 30, 0)                                                                    \
    X(accept4, 288, 4, 50, 0)                                                                      \
    X(dup3, 292, 3, 50, 0)                                                                         \
    X(pipe2, 293, 2, 60, 0)                                                                        \
    X(preadv, 295, 5, 40, 0)                                                                       \
    X(pwritev, 296, 5, 40, F_GROWS_FD)                                                             \
    X(prlimit64, 302, 4, 50, 0)                                                                    \
    X(syncfs, 306, 1, 10, 0)                                                                       \
    X(getcpu, 309, 3, 20, 0)                                                                       \
    X(renameat2, 316, 5, 40, 0)                                                                    \
    X(getrandom, 318, 3, 60, 0)                                                                    \
    X(statx, 332, 5, 80, 0)                                                                        \
    X(faccessat2, 439, 4, 30, 0)                                                                   \
    X(reef_free_bytes, 1024, 6, 40, 0)                                                             \
    X(reef_name_register, 1025, 3, 30, 0)                                                          \
    X(reef_name_unregister, 1026, 3, 20, 0)                                                        \
    X(reef_name_lookup, 1027, 4, 30, 0)                                                            \
    X(reef_mbox_create, 1028, 2, 20, 0)                                                            \
    X(reef_mbox_connect, 1029, 5, 30, 0)                                                           \
    X(reef_mbox_accept, 1030, 3, 30, 0)                                                            \
    X(reef_mbox_notify, 1031, 1, 30, 0)                                                            \
    X(reef_grant, 1032, 4, 30, 0)                                                                  \
    X(reef_grant_map, 1033, 3, 30, 0)                                                              \
    X(reef_grant_revoke, 1034, 2, 20, 0)                                                           \
    X(reef_fleet_bind, 1035, 5, 20, 0)                                                             \
    X(reef_core_info, 1036, 2, 20, 0)                                                              \
    X(reef_core_ctl, 1037, 3, 10, 0)                                                               \
    X(unknown, -1, 6, 150, 0)                                                                      \
    X(linux_extra, -2, 6, 8, 0)

#define ENUM(name, nr, nargs, weight, flags) C_##name,
enum { CALLS(ENUM) NCALLS };
#undef ENUM
_Static_assert(NCALLS <= NCALLS_MAX, "NCALLS_MAX too small");

struct call {
    const char *name;
    long nr;
    int nargs;
    int weight;
    int flags;
};

#define ROW(name, nr, nargs, weight, flags) {#name, nr, nargs, weight, flags},
static const struct call table[NCALLS] = {CALLS(ROW)};
#undef ROW

static int total_weight;

/* Calls Linux has but Reef does not (yet): harmless on the host too. */
static const struct {
    long nr;
    const char *name;
} extras[] = {
    {27, "mincore"},       {26, "msync"},
    {98, "getrusage"},     {100, "times"},       {143, "sched_getparam"}, {145, "sched_getscheduler"},
    {140, "getpriority"},  {319, "memfd_create"}, {290, "eventfd2"},     {291, "epoll_create1"},
    {283, "timerfd_create"}, {289, "signalfd4"}, {294, "inotify_init1"}, {324, "membarrier"},
    {115, "getgroups"},    {118, "getresuid"},   {120, "getresgid"},     {125, "capget"},
    {135, "personality"},  {149, "mlock"},       {150, "munlock"},       {334, "rseq"},
    {274, "get_robust_list"}, {436, "close_range"},
};

/* ---- the worker ---- */

static struct {
    int w;
    uint32_t gen;
    int child;
    int32_t pid;
    struct slot *s;
    uint64_t i;
    int fds[FDS_MAX];
    int nfds;
    struct {
        uint64_t addr, len;
    } maps[MAPS_MAX];
    int nmaps;
    uint64_t mapped;
    int32_t kids[KIDS_MAX];
    int nkids;
    /* The sockets among fds (what made them and how far they got, as the calls' results
     * said), for the socket calls to pick plausible ones; ports learned from addresses. */
    struct sk {
        int fd;
        uint8_t type; /* SK_STREAM or SK_DGRAM */
        uint8_t state;
        uint8_t nonblock;
        uint16_t port; /* its port, when known */
    } sk[SOCKS_MAX];
    int nsk;
    uint16_t ports[PORTS_MAX];
    unsigned nports;
    char *buf, *hole, *ro, *none, *args, *edge, *cstack, *alt;
    uint64_t brk0, fs0;
    unsigned handled;
} W;

/* Paths: those a worker may change (its directory and the shared one, relative names) and the
 * ones it only reads; built per worker. */
#define NRW 40
#define NRO 96
static char path_store[NRW + NRO][260];
static const char *rw_paths[NRW];
static int nrw;
static const char *ro_paths[NRO];
static int nro;
static char long_path[5000], long_name[400], deep_path[4200];
/* Regular files of the scratch tree a worker checks for size (absolute). */
static const char *cap_paths[16];
static const char *shared_dir;
static int ncap;

static const char *const ro_fixed[] = {
    "/", "/proc", "/proc/self", "/proc/self/status", "/proc/self/stat", "/proc/self/cmdline",
    "/proc/self/exe", "/proc/self/fd", "/proc/self/fd/0", "/proc/self/fd/3", "/proc/self/maps",
    "/proc/1/status", "/proc/1/cmdline", "/proc/cpuinfo", "/proc/meminfo", "/proc/mounts",
    "/proc/uptime", "/proc/version", "/proc/loadavg", "/proc/reef", "/proc/reef/nrfs",
    "/proc/reef/syscalls", "/proc/99999/status", "/dev", "/dev/null", "/dev/zero", "/dev/full",
    "/dev/random", "/dev/urandom", "/test", "/test/hello", "/bin", "/bin/busybox", "/bin/true",
    "/etc/passwd", "/tmp", "", ".", "..", "/..", "nonexistent", "/nonexistent/x", "/dev/null/x",
    "f0/", "s0/", "./f0", "d0/../f0",
};
/* Relative names: harmless in any directory a worker may reach with chdir/fchdir. */
static const char *const rel_names[] = {"f0", "f1", "d0", "d1", "s0", "n0", "n1", "d0/f0", "d1/"};
static const char *const exec_good[] = {"/test/hello", "/bin/true"};
static const char *const exec_other[] = {"/", "/dev/null", "/proc/cpuinfo", "/nonexistent", "",
                                         "/tmp", "/etc/passwd"};

static const uint64_t boundary[] = {
    0, 1, 2, 3, 7, 8, 16, 64, 255, 256, 511, 512, 1023, 1024, 4095, 4096, 4097, 8191, 8192,
    65535, 65536, 0x7fff, 0x8000, 0xffff, 0x7fffffff, 0x80000000, 0x80000001, 0xffffffff,
    0x100000000, 0x100000001, 0x7ffff000, 1ull << 40, (1ull << 47) - 1, 1ull << 47,
    (1ull << 47) + 1, (1ull << 48) - 1, 1ull << 48, 1ull << 62, (1ull << 63) - 1, 1ull << 63,
    ~0ull, ~0ull - 1, ~0ull - 4095, 0xffffffff80000000, 0xffff800000000000, 0x0000800000000000,
    0x00ff000000000000, 0x00007ffffffff000, (uint64_t)-100,
};
static const uint64_t kernel_addrs[] = {
    0xffff800000000000, 0xffff800000001000, 0xffff880000000000, 0xffff888000000000,
    0xffffc90000000000, 0xffffffff80000000, 0xffffffff80100000, 0xffffffff80200000,
    0xffffffff81000000, 0xffffffffff600000, 0xfffffffffffff000, 0xffffffffffffffff,
};
static const uint64_t noncanonical[] = {
    0x0000800000000000, 0x0000800000001000, 0x00ff000000000000, 0x7fffffffffffffff,
    0x8000000000000000, 0x0001000000000000, 0xdead000000000000, 0x0000fffffffff000,
};
static const uint64_t user_top[] = {
    0x00007ffffffff000, 0x00007ffffffffff8, 0x00007fffffffffff, 0x00007fffffffff00,
    0x00007fffffffe000,
};
static const uint64_t huge_lens[] = {
    1ull << 30, 1ull << 31, 1ull << 32, 1ull << 40, 1ull << 46, 1ull << 47, ~0ull,
    0x7ffff000, 0x7fffffff, 0x7fffffffffffffff, 0x80000000, ~0ull - 4095,
};

/* ---- generators ---- */

static uint64_t gen_int(struct rng *r)
{
    int k = (int)below(r, 100);
    if (k < 30)
        return below(r, 17);
    if (k < 60)
        return PICK(r, boundary);
    if (k < 70)
        return next(r);
    if (k < 80)
        return (uint32_t)next(r);
    if (k < 90) {
        uint64_t p = 1ull << below(r, 64);
        return p + below(r, 3) - 1;
    }
    return -(uint64_t)below(r, 17);
}

static uint64_t buf_addr(void)
{
    return (uint64_t)(uintptr_t)W.buf;
}

/* A pointer of any kind; *avail gets how many bytes from it are valid to write (0: none). */
static uint64_t gen_ptr(struct rng *r, uint64_t *avail)
{
    uint64_t n = 0, a;
    int k = (int)below(r, 100);
    if (k < 45) {
        uint64_t off = pct(r, 50) ? 0 : below(r, BUF_SIZE);
        if (pct(r, 70))
            off &= ~7ull;
        a = buf_addr() + off;
        n = BUF_SIZE - off;
    } else if (k < 55 && W.nmaps > 0) {
        int m = (int)below(r, (uint64_t)W.nmaps);
        uint64_t off = pct(r, 50) ? 0 : below(r, W.maps[m].len);
        a = W.maps[m].addr + off;
        n = W.maps[m].len - off;
    } else if (k < 59) {
        a = (uint64_t)(uintptr_t)W.ro + below(r, PAGE);
    } else if (k < 61) {
        a = (uint64_t)(uintptr_t)&gen_int + below(r, 256);
    } else if (k < 64) {
        a = 0;
    } else if (k < 67) {
        a = (uint64_t)(uintptr_t)W.hole + below(r, PAGE);
    } else if (k < 69) {
        a = (uint64_t)(uintptr_t)W.none + below(r, PAGE);
    } else if (k < 74) {
        a = PICK(r, kernel_addrs) - (pct(r, 50) ? 0 : below(r, 64));
    } else if (k < 79) {
        a = PICK(r, noncanonical) - (pct(r, 50) ? 0 : below(r, 64));
    } else if (k < 82) {
        a = PICK(r, user_top);
    } else if (k < 85) {
        a = 1 + below(r, 0x10000);
    } else if (k < 90) {
        a = buf_addr() + BUF_SIZE - 1 - below(r, 16);
        n = buf_addr() + BUF_SIZE - a;
    } else if (k < 93) {
        a = (uint64_t)(uintptr_t)futex_page + (below(r, PAGE) & ~3ull);
        n = (uint64_t)(uintptr_t)futex_page + PAGE - a;
    } else if (k < 96) {
        a = PICK(r, boundary);
    } else {
        a = next(r);
    }
    if (avail)
        *avail = n;
    return a;
}

static uint64_t gen_len(struct rng *r, uint64_t avail)
{
    int k = (int)below(r, 100);
    if (k < 30)
        return below(r, 257);
    if (k < 50)
        return avail ? avail : below(r, 4097);
    if (k < 58)
        return avail + 1 + below(r, 4096);
    if (k < 66)
        return PAGE - 1 + below(r, 3);
    if (k < 82)
        return PICK(r, boundary);
    return PICK(r, huge_lens);
}

/* An address for the calls that change mappings (mmap hints, munmap, mprotect, madvise, brk):
 * never the program's text, data or stack, nor the argument area. */
static uint64_t gen_vm_addr(struct rng *r)
{
    int k = (int)below(r, 100);
    if (k < 50 && W.nmaps > 0) {
        int m = (int)below(r, (uint64_t)W.nmaps);
        uint64_t off = pct(r, 60) ? 0 : below(r, W.maps[m].len);
        if (pct(r, 80))
            off &= ~(PAGE - 1);
        return W.maps[m].addr + off;
    }
    if (k < 65) {
        char *own[] = {W.buf, W.ro, W.none, W.hole, W.edge, W.cstack, W.alt};
        return (uint64_t)(uintptr_t)PICK(r, own) + (pct(r, 70) ? 0 : below(r, 2 * PAGE));
    }
    if (k < 75)
        return PICK(r, boundary);
    if (k < 80)
        return PICK(r, kernel_addrs);
    if (k < 85)
        return PICK(r, noncanonical);
    if (k < 88)
        return PICK(r, user_top);
    if (k < 91)
        return 0;
    return (next(r) & 0x00007ffffffff000ull) | (pct(r, 10) ? below(r, PAGE) : 0);
}

static uint64_t gen_vm_len(struct rng *r)
{
    int k = (int)below(r, 100);
    if (k < 45)
        return (1 + below(r, 16)) * PAGE;
    if (k < 60)
        return below(r, 64 * PAGE);
    if (k < 70)
        return 1 + below(r, PAGE);
    if (k < 85)
        return PICK(r, boundary);
    return PICK(r, huge_lens);
}

/* The last grants this worker made (reef_grant), for reef_grant_map and reef_grant_revoke. */
#define GRANT_IDS 8
static uint64_t grant_ids[GRANT_IDS];
static unsigned grants_made;

static uint64_t gen_fd(struct rng *r)
{
    static const uint64_t odd[] = {(uint64_t)-1,  1023, 1024, 0x7fffffff, (uint64_t)INT_MIN,
                                   0xffffffff,    1 << 20, 65535, (uint64_t)-100};
    int k = (int)below(r, 100);
    if (k < 60 && W.nfds > 0)
        return (uint64_t)W.fds[below(r, (uint64_t)W.nfds)];
    if (k < 70)
        return below(r, 3);
    if (k < 80)
        return below(r, 64);
    if (k < 88)
        return PICK(r, odd);
    if (k < 94) {
        uint64_t low = W.nfds > 0 ? (uint64_t)W.fds[below(r, (uint64_t)W.nfds)] : below(r, 3);
        return (next(r) & ~0xffffffffull) | low;
    }
    return pct(r, 50) ? next(r) : (uint32_t)next(r);
}

static uint64_t gen_dirfd(struct rng *r)
{
    int k = (int)below(r, 100);
    if (k < 35)
        return (uint64_t)-100; /* AT_FDCWD */
    if (k < 40)
        return 0xffffff9cull; /* AT_FDCWD in 32 bits */
    return gen_fd(r);
}

/* A bad pointer for a string. */
static uint64_t bad_str(struct rng *r)
{
    int k = (int)below(r, 7);
    switch (k) {
    case 0:
        return 0;
    case 1:
        return PICK(r, kernel_addrs);
    case 2:
        return PICK(r, noncanonical);
    case 3:
        return (uint64_t)(uintptr_t)W.hole;
    case 4:
        return (uint64_t)(uintptr_t)W.none;
    case 5: /* a path that runs into the unmapped page after it, no NUL */
        return (uint64_t)(uintptr_t)W.edge + PAGE - 24;
    default: /* whatever bytes are in the buffer */
        return buf_addr() + below(r, BUF_SIZE);
    }
}

static uint64_t str(const char *s)
{
    return (uint64_t)(uintptr_t)s;
}

static uint64_t gen_path_rw(struct rng *r)
{
    int k = (int)below(r, 100);
    if (k < 70)
        return str(rw_paths[below(r, (uint64_t)nrw)]);
    if (k < 82)
        return str(PICK(r, rel_names));
    if (k < 85)
        return str(long_name);
    if (k < 87)
        return str(long_path);
    if (k < 89)
        return str(deep_path);
    return bad_str(r);
}

static uint64_t gen_path_ro(struct rng *r)
{
    int k = (int)below(r, 100);
    if (k < 45)
        return str(ro_paths[below(r, (uint64_t)nro)]);
    if (k < 85)
        return gen_path_rw(r);
    if (k < 88)
        return str(long_path);
    if (k < 90)
        return str(deep_path);
    return bad_str(r);
}

static uint64_t gen_sig(struct rng *r)
{
    int k = (int)below(r, 100);
    if (k < 80)
        return 1 + below(r, 64);
    if (k < 85)
        return 0;
    if (k < 90)
        return pct(r, 50) ? 9 : 19;
    return gen_int(r);
}

static int is_kid(int32_t p)
{
    for (int i = 0; i < W.nkids; i++)
        if (W.kids[i] == p)
            return 1;
    return 0;
}

/* A pid that is safe to signal: the low 32 bits (what the kernel reads) are 0, the worker
 * itself or its group, one of its children, or no process at all. */
static int safe_pid32(int32_t p)
{
    if (p == 0 || p == W.pid || (p > 0 && is_kid(p)))
        return 1;
    if (p == INT_MIN || (p >= 0x3ff00000) || (p < 0 && -p >= 0x3ff00000))
        return 1;
    if (p < 0 && !W.child && -p == W.pid) /* the worker's own group */
        return 1;
    return 0;
}

static uint64_t gen_pid(struct rng *r, int groups)
{
    uint64_t v;
    int k = (int)below(r, 100);
    if (k < 25)
        v = (uint64_t)(int64_t)W.pid;
    else if (k < 40)
        v = 0;
    else if (k < 60 && W.nkids > 0)
        v = (uint64_t)(int64_t)W.kids[below(r, (uint64_t)W.nkids)];
    else if (k < 70 && groups)
        v = (uint64_t)(int64_t)-W.pid;
    else if (k < 80)
        v = 0x3ff00000 + below(r, 0x100000);
    else if (k < 85)
        v = (uint64_t)INT_MIN;
    else
        v = gen_int(r);
    if (pct(r, 10))
        v = (v & 0xffffffffull) | (next(r) & ~0xffffffffull);
    int32_t p = (int32_t)(uint32_t)v;
    if (!safe_pid32(p) || (!groups && p < 0))
        v = (v & ~0xffffffffull) | (uint32_t)W.pid;
    return v;
}

static void fill_random(struct rng *r, void *p, size_t n)
{
    uint8_t *b = p;
    for (size_t i = 0; i < n; i += 8) {
        uint64_t v = pct(r, 50) ? gen_int(r) : next(r);
        memcpy(b + i, &v, n - i < 8 ? n - i : 8);
    }
}

static char *arg_area(size_t off)
{
    return W.args + off;
}

/* Offsets in the argument area. */
enum {
    A_IOV = 0,        /* 64 iovecs */
    A_POLL = 1024,    /* 64 pollfds */
    A_TS = 1536,      /* two timespecs */
    A_SIGSET = 1568,  /* 128 bytes */
    A_FDSETS = 1700,  /* three fd_sets */
    A_SIGACT = 2304,  /* struct k_sigaction */
    A_PIPE = 2400,    /* int[2] */
    A_PSEL = 2432,    /* pselect6's {sigset pointer, size} */
    A_STACK_T = 2560, /* stack_t */
    A_RLIM = 2688,    /* two rlimits */
    A_MISC = 2816,    /* small in/out values */
    A_ARGV = 3072,    /* 64 pointers */
    A_ENVP = 3584,    /* 64 pointers */
    A_FRAME = 4096,   /* a sigreturn ucontext, 1 KiB */
    A_SADDR = 5120,   /* a sockaddr to pass (128 bytes: sockaddr_storage) */
    A_NET_OUT = 5248, /* a sockaddr for the kernel to fill (128 bytes) */
    A_NET_LEN = 5376, /* its length (socklen_t, in and out) */
    A_MSGHDR = 5392,  /* a struct msghdr (56 bytes) */
    A_OPTVAL = 5504,  /* a socket option's value (64 bytes) */
    A_OPTLEN = 5568,  /* getsockopt's length (in and out) */
    A_NET_FIX = 5632, /* natively: a sockaddr net_guard() put in place of an unsafe one */
    A_MSGFIX = 5760,  /* natively: a msghdr net_guard() put in place of an unsafe one */
    A_FPU = 8192,     /* an FPU save area, 4 KiB */
    A_SIGSTACK = 14336, /* top of a small stack for handlers after a sigreturn */
};

static uint64_t arg_ptr(size_t off)
{
    return (uint64_t)(uintptr_t)arg_area(off);
}

/* A pointer to a timespec (or, with `usec`, a timeval) that is mostly short (at most 2 ms),
 * sometimes invalid, rarely long or absent (NULL: wait for ever; the watchdog's poke ends it). */
static uint64_t gen_timeout(struct rng *r, int slot, int allow_null, int usec)
{
    int64_t *t = (int64_t *)(void *)arg_area(A_TS + 16 * slot);
    int64_t sub = usec ? 1000000 : 1000000000;
    int k = (int)below(r, 1000);
    if (k < 600) {
        t[0] = 0;
        t[1] = (int64_t)below(r, (uint64_t)sub / 500);
    } else if (k < 700) {
        t[0] = 0;
        t[1] = 0;
    } else if (k < 800) {
        t[0] = (int64_t)below(r, 2);
        t[1] = sub + (int64_t)below(r, 3);
    } else if (k < 850) {
        t[0] = -1 - (int64_t)below(r, 3);
        t[1] = 0;
    } else if (k < 855) {
        t[0] = pct(r, 50) ? LLONG_MAX : 1;
        t[1] = (int64_t)below(r, 1000);
    } else if (k < 860 && allow_null) {
        return 0;
    } else if (k < 900) {
        t[0] = pct(r, 90) ? -(int64_t)below(r, 2) : (int64_t)gen_int(r);
        t[1] = (int64_t)gen_int(r);
    } else {
        return gen_ptr(r, NULL);
    }
    return arg_ptr(A_TS + 16 * slot);
}

static uint64_t gen_sigset(struct rng *r)
{
    uint64_t *m = (uint64_t *)(void *)arg_area(A_SIGSET);
    int k = (int)below(r, 100);
    if (k < 10)
        return 0;
    if (k < 20)
        return gen_ptr(r, NULL);
    m[0] = pct(r, 30) ? 0 : next(r) & next(r);
    if (pct(r, 70))
        m[0] &= ~(1ull << (SIGALRM - 1)); /* mostly leave the watchdog's poke through */
    m[1] = next(r);
    return arg_ptr(A_SIGSET);
}

static uint64_t gen_sigsetsize(struct rng *r)
{
    return pct(r, 85) ? 8 : gen_int(r);
}

static uint64_t gen_mode(struct rng *r)
{
    static const uint64_t modes[] = {0644, 0755, 0, 07777, 0600, 0777, 01777};
    return pct(r, 70) ? PICK(r, modes) : pct(r, 50) ? (next(r) & 07777) : gen_int(r);
}

static int open_writes(uint64_t fl)
{
    return (fl & (O_ACCMODE | O_CREAT | O_TRUNC | O_APPEND | 020000000)) != 0;
}

static uint64_t gen_open_flags(struct rng *r)
{
    static const uint64_t bits[] = {O_CREAT,    O_EXCL,      O_NOCTTY,  O_TRUNC,  O_APPEND,
                                    O_NONBLOCK, O_DSYNC,     O_DIRECT,  0100000,  O_DIRECTORY,
                                    O_NOFOLLOW, O_NOATIME,   O_CLOEXEC, O_SYNC,   010000000,
                                    020200000,  O_ASYNC};
    uint64_t f = pct(r, 55) ? 0 : below(r, 4);
    for (int n = (int)below(r, 4); n > 0; n--)
        f |= PICK(r, bits);
    if (pct(r, 3))
        f = next(r);
    if (pct(r, 3))
        f |= 1ull << (32 + below(r, 32));
    return f;
}

/* iovecs in the argument area pointing anywhere; returns the count to pass. */
static uint64_t gen_iov(struct rng *r, uint64_t *iov_ptr)
{
    uint64_t *v = (uint64_t *)(void *)arg_area(A_IOV);
    int n = (int)below(r, 9);
    if (pct(r, 10))
        n = 64;
    for (int i = 0; i < n; i++) {
        uint64_t avail;
        v[2 * i] = gen_ptr(r, &avail);
        v[2 * i + 1] = pct(r, 70) ? below(r, avail + 1) : gen_len(r, avail);
    }
    *iov_ptr = pct(r, 85) ? arg_ptr(A_IOV) : gen_ptr(r, NULL);
    int k = (int)below(r, 100);
    if (k < 80)
        return (uint64_t)n;
    if (k < 90) {
        static const uint64_t odd[] = {1024, 1025, (uint64_t)-1, 0x80000000, 1ull << 32, 65};
        return PICK(r, odd);
    }
    return gen_int(r);
}

static uint64_t gen_offset(struct rng *r)
{
    int k = (int)below(r, 100);
    if (k < 50)
        return below(r, 8192);
    if (k < 60)
        return below(r, 1 << 20);
    return gen_int(r);
}

static uint64_t gen_pollfds(struct rng *r, uint64_t *nfds)
{
    int16_t *p = (int16_t *)(void *)arg_area(A_POLL);
    int n = (int)below(r, 8);
    for (int i = 0; i < n; i++) {
        int32_t fd = (int32_t)gen_fd(r);
        memcpy(p + 4 * i, &fd, 4);
        p[4 * i + 2] = (int16_t)(pct(r, 80) ? (next(r) & 0x3ff) : next(r));
        p[4 * i + 3] = (int16_t)next(r);
    }
    int k = (int)below(r, 100);
    *nfds = k < 85 ? (uint64_t)n : k < 92 ? PICK(r, boundary) : 64;
    return pct(r, 85) ? arg_ptr(A_POLL) : gen_ptr(r, NULL);
}

static uint64_t gen_poll_timeout(struct rng *r)
{
    int k = (int)below(r, 100);
    if (k < 45)
        return 0;
    if (k < 90)
        return 1 + below(r, 20);
    if (k < 91)
        return (uint64_t)-1;
    return gen_int(r);
}

static uint64_t gen_fdset(struct rng *r, int i)
{
    int k = (int)below(r, 100);
    if (k < 30)
        return 0;
    if (k < 85) {
        uint64_t *s = (uint64_t *)(void *)arg_area(A_FDSETS + 128 * i);
        for (int j = 0; j < 16; j++)
            s[j] = j == 0 ? next(r) & next(r) : pct(r, 10) ? next(r) : 0;
        return arg_ptr(A_FDSETS + 128 * i);
    }
    return gen_ptr(r, NULL);
}

static uint64_t gen_nfds_select(struct rng *r)
{
    int k = (int)below(r, 100);
    if (k < 70)
        return below(r, 65);
    if (k < 85)
        return pct(r, 50) ? 1024 : 1025;
    return gen_int(r);
}

static uint64_t h_noop_addr, h_exit_addr;

static uint64_t gen_handler(struct rng *r)
{
    int k = (int)below(r, 100);
    if (k < 25)
        return 0; /* SIG_DFL */
    if (k < 45)
        return 1; /* SIG_IGN */
    if (k < 75)
        return h_noop_addr;
    if (k < 80)
        return h_exit_addr;
    return gen_ptr(r, NULL);
}

static uint64_t gen_sa_flags(struct rng *r)
{
    static const uint64_t bits[] = {4 /* SIGINFO */, 0x08000000 /* ONSTACK */,
                                    0x10000000 /* RESTART */, 0x40000000 /* NODEFER */,
                                    0x80000000 /* RESETHAND */, 1 /* NOCLDSTOP */,
                                    2 /* NOCLDWAIT */, 0x00800000 /* EXPOSE_TAGBITS */};
    uint64_t f = pct(r, 90) ? 0x04000000 : 0; /* SA_RESTORER */
    for (int n = (int)below(r, 3); n > 0; n--)
        f |= PICK(r, bits);
    if (pct(r, 5))
        f = next(r);
    return f;
}

/* ---- sockets ---- */

/* What a remembered socket is (W.sk) and how far it got: the states are bits of a mask. */
enum { SK_STREAM = 1, SK_DGRAM = 2 };
enum { SK_FRESH, SK_BOUND, SK_LISTEN, SK_CONNECTING, SK_CONNECTED };
#define SKM(st) (1u << (st))
#define SKM_ANY 0x1fu

/* The ports workers bind and connect to: a few fixed ones, so that workers (and a worker's
 * own sockets) meet; below Linux's ephemeral range, unused by the host natively. */
static const uint16_t net_ports[] = {24801, 24802, 24803, 24804};

/* A descriptor for a socket call: mostly a remembered socket of the right type and state
 * (`nb`: preferably a non-blocking one), else any descriptor (files, pipes, bad numbers). */
static uint64_t gen_sock_fd(struct rng *r, unsigned types, unsigned states, int nb)
{
    if (W.nsk > 0 && pct(r, 80)) {
        int cand[SOCKS_MAX], n = 0;
        for (int i = 0; i < W.nsk; i++)
            if ((types & W.sk[i].type) && (states & SKM(W.sk[i].state)) &&
                (!nb || W.sk[i].nonblock))
                cand[n++] = i;
        int i = n > 0 && pct(r, 85) ? cand[below(r, (uint64_t)n)] : (int)below(r, (uint64_t)W.nsk);
        return (uint64_t)W.sk[i].fd;
    }
    return gen_fd(r);
}

static int port_known(uint16_t port)
{
    for (size_t i = 0; i < sizeof net_ports / sizeof net_ports[0]; i++)
        if (net_ports[i] == port)
            return 1;
    for (unsigned i = 0; i < W.nports && i < PORTS_MAX; i++)
        if (W.ports[i] == port)
            return 1;
    return 0;
}

/* A port (host order): 0, a fixed one, one learned from an address the kernel gave, or (on
 * Reef, or for bind) anything. */
static uint16_t gen_port(struct rng *r, int dest)
{
    static const uint16_t odd[] = {1, 7, 80, 1023, 1024, 32767, 32768, 60999, 61000, 65535};
    if (dest && pct(r, 35)) { /* a listener's (when the worker has one) */
        int cand[SOCKS_MAX], n = 0;
        for (int i = 0; i < W.nsk; i++)
            if (W.sk[i].state == SK_LISTEN && W.sk[i].port)
                cand[n++] = i;
        if (n)
            return W.sk[cand[below(r, (uint64_t)n)]].port;
    }
    int k = (int)below(r, 100);
    if (k < (dest ? 4 : 35))
        return 0;
    if (k < 80)
        return PICK(r, net_ports);
    if (k < 93)
        return W.nports ? W.ports[below(r, W.nports < PORTS_MAX ? W.nports : PORTS_MAX)]
                        : PICK(r, net_ports);
    if (dest && !reef) /* natively only ports of the fuzzer's own */
        return PICK(r, net_ports);
    return pct(r, 50) ? PICK(r, odd) : (uint16_t)next(r);
}

/* An IPv4 address: mostly 127.0.0.1, sometimes 0.0.0.0 or elsewhere in 127/8; on Reef also
 * addresses outside the machine (no NIC: dropped). Natively nothing leaves loopback and
 * nothing binds to every interface. */
static void gen_ip(struct rng *r, uint8_t ip[4], int bind)
{
    static const uint8_t local[][4] = {{127, 0, 0, 2}, {127, 1, 2, 3}, {127, 255, 255, 255},
                                       {127, 0, 0, 0}};
    static const uint8_t outside[][4] = {{10, 0, 2, 2},   {10, 0, 2, 15},     {8, 8, 8, 8},
                                         {192, 0, 2, 1},  {224, 0, 0, 1},     {169, 254, 1, 1},
                                         {172, 16, 0, 1}, {255, 255, 255, 255}};
    static const uint8_t lo[4] = {127, 0, 0, 1};
    int k = (int)below(r, 100);
    if (k < 75 || (k < 83 && bind && !reef) || (k >= 90 && !reef))
        memcpy(ip, lo, 4);
    else if (k < 83)
        memset(ip, 0, 4);
    else if (k < 90)
        memcpy(ip, PICK(r, local), 4);
    else if (k < 97)
        memcpy(ip, PICK(r, outside), 4);
    else
        for (int i = 0; i < 4; i++)
            ip[i] = (uint8_t)next(r);
}

/* A sockaddr_in in the argument area at `off` (now and then of another family or with junk
 * after it), or a pointer of any kind. */
static uint64_t gen_sockaddr(struct rng *r, size_t off, int bind)
{
    static const uint16_t fams[] = {0, 1, 10, 16, 17, 0xffff, 0x0102, 0x0200, 46};
    uint8_t *sa = (uint8_t *)arg_area(off);
    memset(sa, 0, 128);
    uint16_t fam = pct(r, 90) ? AF_INET : pct(r, 80) ? PICK(r, fams) : (uint16_t)next(r);
    memcpy(sa, &fam, 2);
    uint16_t port = gen_port(r, !bind);
    sa[2] = (uint8_t)(port >> 8);
    sa[3] = (uint8_t)port;
    gen_ip(r, sa + 4, bind);
    if (pct(r, 5))
        fill_random(r, sa + 8, 120);
    return pct(r, 88) ? arg_ptr(off) : gen_ptr(r, NULL);
}

/* An address length: mostly sizeof(struct sockaddr_in), else short, long, negative, huge. */
static uint64_t gen_addrlen(struct rng *r)
{
    static const uint64_t odd[] = {0,          1,          2,          8,          15,
                                   17,         28,         110,        128,        129,
                                   4096,       0x7fffffff, 0x80000000, 0xffffffff, ~0ull,
                                   0xffffffff00000010ull};
    int k = (int)below(r, 100);
    if (k < 75)
        return 16;
    if (k < 93)
        return PICK(r, odd);
    return gen_int(r);
}

/* An address for the kernel to fill and its length's pointer (the room in it mostly 16;
 * 0, short, negative, huge; bad pointers). `may_null`: both 0 sometimes. */
static void gen_addr_out(struct rng *r, uint64_t *addr, uint64_t *lenp, int may_null)
{
    static const uint32_t rooms[] = {16, 16, 16, 16, 0, 1, 2, 4, 8, 15, 17, 128,
                                     0xffffffff, 0x80000000, 0x7fffffff};
    uint32_t room = PICK(r, rooms);
    memcpy(arg_area(A_NET_LEN), &room, 4);
    memset(arg_area(A_NET_OUT), 0, 16);
    int k = (int)below(r, 100);
    if (may_null && k < 25) {
        *addr = 0;
        *lenp = pct(r, 80) ? 0 : gen_ptr(r, NULL);
        return;
    }
    *addr = k < 85 ? arg_ptr(A_NET_OUT) : gen_ptr(r, NULL);
    *lenp = pct(r, 85) ? arg_ptr(A_NET_LEN) : gen_ptr(r, NULL);
}

/* send and recv flags: mostly MSG_DONTWAIT (a blocking one waits for the watchdog's poke),
 * with others, sometimes anything. */
static uint64_t gen_msg_flags(struct rng *r, int send)
{
    static const uint64_t sbits[] = {0x4000 /* NOSIGNAL */, 0x8000 /* MORE */, 0x1 /* OOB */,
                                     0x800 /* CONFIRM */,   0x80 /* EOR */,    0x4 /* DONTROUTE */,
                                     0x20000000 /* FASTOPEN */, 0x40};
    static const uint64_t rbits[] = {0x2 /* PEEK */,  0x20 /* TRUNC */,  0x100 /* WAITALL */,
                                     0x1 /* OOB */,   0x2000 /* ERRQUEUE */,
                                     0x40000000 /* CMSG_CLOEXEC */, 0x10000 /* WAITFORONE */,
                                     0x40};
    uint64_t f = pct(r, 65) ? MSG_DONTWAIT : 0;
    for (int n = (int)below(r, 3); n > 0; n--)
        f |= send ? PICK(r, sbits) : PICK(r, rbits);
    if (pct(r, 5))
        f = gen_int(r);
    return f;
}

/* A struct msghdr in the argument area (name, iovecs, control), or a pointer of any kind.
 * The layout is the kernel's (the iovec count and the control length are 64 bits there). */
static uint64_t gen_msghdr(struct rng *r, int send)
{
    uint64_t *m = (uint64_t *)(void *)arg_area(A_MSGHDR);
    uint64_t avail;
    int k = (int)below(r, 100);
    if (k < 40)
        m[0] = 0;
    else if (k < 85)
        m[0] = send ? gen_sockaddr(r, A_SADDR, 0) : arg_ptr(A_NET_OUT);
    else
        m[0] = gen_ptr(r, NULL);
    m[1] = send ? gen_addrlen(r) & 0xffffffff : PICK(r, ((uint64_t[]){16, 16, 0, 1, 15, 128, 0xffffffff}));
    if (pct(r, 5))
        m[1] |= next(r) << 32; /* the padding after msg_namelen */
    if (pct(r, 60)) { /* a few buffers of plausible sizes */
        uint64_t *v = (uint64_t *)(void *)arg_area(A_IOV);
        int n = 1 + (int)below(r, 4);
        for (int i = 0; i < n; i++) {
            v[2 * i] = buf_addr() + below(r, BUF_SIZE - 2048);
            v[2 * i + 1] = below(r, 2048);
        }
        m[2] = arg_ptr(A_IOV);
        m[3] = (uint64_t)n;
    } else {
        m[3] = gen_iov(r, &m[2]);
    }
    if (pct(r, 75)) {
        m[4] = 0;
        m[5] = 0;
    } else {
        m[4] = gen_ptr(r, &avail);
        m[5] = gen_len(r, avail);
    }
    m[6] = pct(r, 80) ? 0 : gen_int(r);
    if (!send)
        memset(arg_area(A_NET_OUT), 0, 16);
    return pct(r, 88) ? arg_ptr(A_MSGHDR) : gen_ptr(r, NULL);
}

/* get/setsockopt's level, name, value and length (or length pointer). */
static void gen_sockopt(struct rng *r, uint64_t *a, int set)
{
    static const uint64_t levels[] = {1, 1, 1, 1, 1, 0, 6, 6, 17, 41, 255, 0xffffffff,
                                      0x7fffffff, (1ull << 32) | 1};
    /* SOL_SOCKET: mostly options Reef has (REUSEADDR, TYPE, ERROR, BROADCAST, SNDBUF, RCVBUF,
     * KEEPALIVE, ACCEPTCONN), else others Linux has (LINGER, REUSEPORT, timeouts, ...). */
    static const uint64_t sol_have[] = {2, 3, 4, 6, 7, 8, 9, 30};
    static const uint64_t sol[] = {13, 15, 20, 21, 1, 5, 10, 18, 38, 39, 25, 26, 0, 1000};
    static const uint64_t tcp[] = {1, 1, 1, 2, 3, 4, 5, 6, 9, 11, 12, 18, 0, 100};
    static const uint64_t ip[] = {1, 2, 3, 4, 8, 10, 14, 32, 33, 34, 0, 100};
    static const int32_t vals[] = {0, 1, -1, 2, 2304, 65536, 1 << 20, INT_MAX, INT_MIN, 4096};
    static const uint64_t lens[] = {0,          1,          2,    3,          8,   16,
                                    0x80000000, 0xffffffff, ~0ull, (1ull << 32) | 4, 4096};
    a[1] = pct(r, 90) ? PICK(r, levels) : gen_int(r);
    int k = (int)below(r, 100);
    if (k < 85) {
        switch ((int32_t)a[1]) {
        case 6:
            a[2] = PICK(r, tcp);
            break;
        case 0:
            a[2] = PICK(r, ip);
            break;
        default:
            a[2] = pct(r, 70) ? PICK(r, sol_have) : PICK(r, sol);
        }
    } else {
        a[2] = gen_int(r);
    }
    /* Natively: never join a multicast group (IGMP reports would leave the host). */
    if (!reef && (int32_t)a[1] == 0 && (int32_t)a[2] >= 35 && (int32_t)a[2] <= 48)
        a[2] = 1;
    int32_t *v = (int32_t *)(void *)arg_area(A_OPTVAL);
    if (pct(r, 20))
        fill_random(r, v, 64);
    else
        memset(v, 0, 64);
    v[0] = pct(r, 80) ? PICK(r, vals) : (int32_t)next(r);
    a[3] = pct(r, 85) ? arg_ptr(A_OPTVAL) : gen_ptr(r, NULL);
    if (set) {
        a[4] = pct(r, 70) ? 4 : pct(r, 80) ? PICK(r, lens) : gen_int(r);
    } else {
        uint32_t len = pct(r, 70) ? 4 : pct(r, 80) ? (uint32_t)PICK(r, lens) : (uint32_t)next(r);
        memcpy(arg_area(A_OPTLEN), &len, 4);
        a[4] = pct(r, 85) ? arg_ptr(A_OPTLEN) : gen_ptr(r, NULL);
    }
}

/* ---- bookkeeping of what the worker owns ---- */

static struct sk *find_sk(long fd)
{
    for (int i = 0; i < W.nsk; i++)
        if (W.sk[i].fd == fd)
            return &W.sk[i];
    return NULL;
}

static void forget_sk(long fd)
{
    struct sk *k = find_sk(fd);
    if (k)
        *k = W.sk[--W.nsk];
}

/* Remembers socket fd (after add_fd); the oldest is forgotten (not closed) when full. */
static void add_sk(long fd, int type, int state, int nonblock, uint16_t port)
{
    if (fd < 0 || fd == TRACE_FD)
        return;
    forget_sk(fd);
    if (W.nsk == SOCKS_MAX) {
        memmove(W.sk, W.sk + 1, sizeof W.sk[0] * (SOCKS_MAX - 1));
        W.nsk--;
    }
    W.sk[W.nsk++] =
        (struct sk){(int)fd, (uint8_t)type, (uint8_t)state, (uint8_t)(nonblock != 0), port};
}

static void set_sk_state(long fd, int state)
{
    struct sk *k = find_sk(fd);
    if (k)
        k->state = (uint8_t)state;
}

/* The port of the AF_INET address at `addr` if it is `where` in the argument area, else 0. */
static uint16_t port_at(uint64_t addr, size_t where)
{
    const uint8_t *sa = (const uint8_t *)arg_area(where);
    uint16_t fam;
    if (addr != arg_ptr(where))
        return 0;
    memcpy(&fam, sa, 2);
    if (fam != AF_INET || (!reef && sa[4] != 127))
        return 0;
    return (uint16_t)(sa[2] << 8 | sa[3]);
}

/* Notes the port of an AF_INET address the kernel wrote to the argument area (natively only
 * ports of 127/8: the fuzzer's own sockets). */
static void learn_port(uint64_t addr)
{
    uint16_t port = port_at(addr, A_NET_OUT);
    if (port != 0 && !port_known(port))
        W.ports[W.nports++ % PORTS_MAX] = port;
}

static void add_fd(long fd)
{
    if (fd < 0 || fd == TRACE_FD)
        return;
    forget_sk(fd); /* a new descriptor of that number: the caller says if it is a socket */
    for (int i = 0; i < W.nfds; i++)
        if (W.fds[i] == fd)
            return;
    if (W.nfds == FDS_MAX) {
        raw1(SYS_close, W.fds[0]);
        forget_sk(W.fds[0]);
        memmove(W.fds, W.fds + 1, sizeof W.fds[0] * (FDS_MAX - 1));
        W.nfds--;
    }
    W.fds[W.nfds++] = (int)fd;
}

static void drop_fd(long fd)
{
    forget_sk(fd);
    for (int i = 0; i < W.nfds; i++)
        if (W.fds[i] == fd) {
            W.fds[i] = W.fds[--W.nfds];
            return;
        }
}

static void add_map(uint64_t addr, uint64_t len)
{
    len = (len + PAGE - 1) & ~(PAGE - 1);
    if (len == 0)
        return;
    if (len > MAP_CAP || W.mapped + len > MAP_CAP || W.nmaps == MAPS_MAX) {
        raw2(SYS_munmap, addr, len);
        return;
    }
    W.maps[W.nmaps].addr = addr;
    W.maps[W.nmaps].len = len;
    W.nmaps++;
    W.mapped += len;
}

static void drop_maps(uint64_t addr, uint64_t len)
{
    uint64_t end = addr + len;
    if (end < addr)
        end = ~0ull;
    for (int i = 0; i < W.nmaps;) {
        uint64_t a = W.maps[i].addr, e = a + W.maps[i].len;
        if (a < end && addr < e) {
            W.mapped -= W.maps[i].len;
            W.maps[i] = W.maps[--W.nmaps];
        } else {
            i++;
        }
    }
}

static void reap_kids(void)
{
    for (;;) {
        long p = raw4(SYS_wait4, -1, 0, 1 /* WNOHANG */ | 0x40000000 /* __WALL */, 0);
        if (p <= 0)
            break;
        for (int i = 0; i < W.nkids; i++)
            if (W.kids[i] == p) {
                W.kids[i] = W.kids[--W.nkids];
                break;
            }
    }
}

static void add_kid(long pid)
{
    if (pid <= 0)
        return;
    if (W.nkids == KIDS_MAX) {
        reap_kids();
        if (W.nkids == KIDS_MAX) {
            raw2(SYS_kill, W.kids[0], SIGKILL);
            raw4(SYS_wait4, W.kids[0], 0, 1 | 0x40000000, 0);
            memmove(W.kids, W.kids + 1, sizeof W.kids[0] * (KIDS_MAX - 1));
            W.nkids--;
        }
    }
    W.kids[W.nkids++] = (int32_t)pid;
}

/* Cuts a scratch file that grew past FILE_CAP back to 0 (fd: the file a call wrote). */
static void cap_fd(long fd)
{
    struct stat st;
    if (raw2(SYS_fstat, fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > FILE_CAP)
        raw2(SYS_ftruncate, fd, 0);
}

static void cap_paths_all(void)
{
    struct stat st;
    for (int i = 0; i < ncap; i++)
        if (raw2(SYS_stat, cap_paths[i], &st) == 0 && S_ISREG(st.st_mode) &&
            st.st_size > FILE_CAP)
            raw2(SYS_truncate, cap_paths[i], 0);
}

/* ---- formatting without libc (workers may have a broken TLS or FPU state) ---- */

static char *put_str(char *p, char *end, const char *s)
{
    while (*s && p < end)
        *p++ = *s++;
    return p;
}

static char *put_hex(char *p, char *end, uint64_t v)
{
    char tmp[24];
    int n = 0;
    if (v == 0)
        return put_str(p, end, "0");
    while (v) {
        tmp[n++] = "0123456789abcdef"[v & 15];
        v >>= 4;
    }
    p = put_str(p, end, "0x");
    while (n > 0 && p < end)
        *p++ = tmp[--n];
    return p;
}

static char *put_dec(char *p, char *end, int64_t v)
{
    char tmp[24];
    int n = 0;
    uint64_t u = v < 0 ? -(uint64_t)v : (uint64_t)v;
    if (v < 0)
        p = put_str(p, end, "-");
    do {
        tmp[n++] = (char)('0' + u % 10);
        u /= 10;
    } while (u);
    while (n > 0 && p < end)
        *p++ = tmp[--n];
    return p;
}

static const char *call_name(uint32_t id, uint64_t nr, char *tmp, size_t n)
{
    if (id == C_linux_extra)
        for (size_t i = 0; i < sizeof extras / sizeof extras[0]; i++)
            if ((uint64_t)extras[i].nr == nr)
                return extras[i].name;
    if (id == C_unknown || id >= NCALLS) {
        char *e = put_hex(put_str(tmp, tmp + n - 1, "syscall_"), tmp + n - 1, nr);
        *e = 0;
        return tmp;
    }
    return table[id].name;
}

/* `wW gG #I pid=P NAME(ARGS)` and, when it returned, ` = RET`. */
static size_t format_rec(char *out, size_t n, int w, const struct rec *e, int with_ret)
{
    char *p = out, *end = out + n - 1, tmp[40];
    p = put_str(p, end, "w");
    p = put_dec(p, end, w);
    p = put_str(p, end, " g");
    p = put_dec(p, end, e->gen);
    p = put_str(p, end, " #");
    p = put_dec(p, end, (int64_t)e->i);
    if (e->sub) {
        p = put_str(p, end, ".");
        p = put_dec(p, end, (int64_t)e->sub);
    }
    p = put_str(p, end, " pid=");
    p = put_dec(p, end, e->pid);
    p = put_str(p, end, " ");
    p = put_str(p, end, call_name(e->id, e->nr, tmp, sizeof tmp));
    p = put_str(p, end, "(");
    int nargs = e->id < NCALLS ? table[e->id].nargs : 6;
    for (int i = 0; i < nargs; i++) {
        if (i)
            p = put_str(p, end, ", ");
        p = put_hex(p, end, e->a[i]);
    }
    p = put_str(p, end, ")");
    if (with_ret) {
        if (e->state == 2) {
            p = put_str(p, end, " = ");
            p = put_dec(p, end, e->ret);
        } else {
            p = put_str(p, end, " = ?");
        }
    }
    *p = 0;
    return (size_t)(p - out);
}

/* ---- signal handlers the generator installs ---- */

static void h_noop(int sig)
{
    (void)sig;
    /* A handler that returns to a faulting instruction runs forever: give up after a while. */
    if (++W.handled > 20000)
        raw1(SYS_exit_group, 97);
}

static void h_exit(int sig)
{
    raw1(SYS_exit_group, 64 + sig);
}

/* ---- argument generation, one case per call ---- */

struct call_args {
    uint64_t nr;
    uint64_t a[6];
    struct clone_req clone;
    int special; /* 1 clone via fz_clone, 2 fork-like clone/fork in C, 3 sigreturn */
};

static void gen_frame(struct rng *r, struct call_args *c)
{
    uint64_t *f = (uint64_t *)(void *)arg_area(A_FRAME);
    fill_random(r, f, 1024);
    if (pct(r, 80)) /* uc_flags, uc_link, uc_stack */
        memset(f, 0, 40);
    /* ucontext: flags, link, stack_t (24), then mcontext gregs from byte 40. */
    uint64_t *g = f + 5;
    int k = (int)below(r, 100);
    uint64_t rip;
    if (k < 80)
        rip = (uint64_t)(uintptr_t)&fz_resume;
    else if (k < 86)
        rip = PICK(r, noncanonical);
    else if (k < 91)
        rip = PICK(r, kernel_addrs);
    else if (k < 95)
        rip = PICK(r, user_top);
    else
        rip = gen_ptr(r, NULL);
    g[16] = rip;
    g[15] = pct(r, 70) ? arg_ptr(A_SIGSTACK) : gen_ptr(r, NULL); /* rsp */
    g[13] = pct(r, 80) ? 0 : next(r);                             /* rax */
    g[17] = pct(r, 80) ? 0x202 : next(r);                          /* eflags */
    if (pct(r, 85))
        g[18] = 0x33 | (0x2bull << 48); /* cs, ss as the kernel saves them */
    uint64_t *fpstate = &f[5 + 23];
    k = (int)below(r, 100);
    if (k < 70) {
        *fpstate = 0;
    } else if (k < 90) {
        char *fp = arg_area(A_FPU);
        memset(fp, 0, 4096);
        if (pct(r, 50))
            fill_random(r, fp, 512);
        uint32_t mxcsr = pct(r, 70) ? 0x1f80 : (uint32_t)next(r);
        memcpy(fp + 24, &mxcsr, 4);
        *fpstate = arg_ptr(A_FPU);
    } else {
        *fpstate = gen_ptr(r, NULL);
    }
    /* uc_sigmask at 40 + 256 */
    f[37] = pct(r, 60) ? 0 : next(r);
    c->a[0] = pct(r, 85) ? arg_ptr(A_FRAME) : gen_ptr(r, NULL);
    c->special = 3;
}

static uint64_t gen_clone_flags(struct rng *r)
{
    static const uint64_t bits[] = {
        0x100,     0x200,      0x400,      0x800,      0x1000,     0x2000,     0x4000,
        0x8000,    0x10000,    0x20000,    0x40000,    0x80000,    0x100000,   0x200000,
        0x400000,  0x800000,   0x1000000,  0x2000000,  0x4000000,  0x8000000,  0x10000000,
        0x20000000, 0x40000000, 0x80000000, 1ull << 32, 1ull << 33};
    uint64_t f;
    int k = (int)below(r, 100);
    if (k < 35) /* like pthread_create */
        f = 0x100 | 0x200 | 0x400 | 0x800 | 0x10000 | 0x40000 | 0x80000 | 0x100000 | 0x200000;
    else if (k < 70) /* like fork */
        f = SIGCHLD | (pct(r, 50) ? 0x1000000 | 0x200000 : 0);
    else if (k < 80) /* like vfork */
        f = 0x100 | 0x4000 | SIGCHLD;
    else
        f = pct(r, 50) ? next(r) & 0xffffffff : 0;
    for (int n = (int)below(r, 3); n > 0; n--)
        f ^= PICK(r, bits);
    if (pct(r, 20))
        f = (f & ~0xffull) | below(r, 70);
    return f;
}

static void gen_exec_argv(struct rng *r, uint64_t *argv, uint64_t *envp)
{
    static const char *const words[] = {"fuzz-exec", "", "-x", "A=B"};
    uint64_t *av = (uint64_t *)(void *)arg_area(A_ARGV);
    uint64_t *ev = (uint64_t *)(void *)arg_area(A_ENVP);
    int k = (int)below(r, 100);
    if (k < 15) {
        *argv = 0;
    } else if (k < 55) {
        av[0] = str(words[0]);
        av[1] = 0;
        *argv = arg_ptr(A_ARGV);
    } else if (k < 70) {
        av[0] = str(words[0]);
        av[1] = bad_str(r);
        av[2] = 0;
        *argv = arg_ptr(A_ARGV);
    } else if (k < 80) {
        *argv = gen_ptr(r, NULL);
    } else if (k < 90) { /* more than ARG_MAX */
        for (int i = 0; i < 63; i++)
            av[i] = str(long_path);
        av[63] = 0;
        *argv = arg_ptr(A_ARGV);
    } else { /* no terminating NULL before the end of the mapping */
        uint64_t *tail = (uint64_t *)(void *)(W.buf + BUF_SIZE - 64);
        for (int i = 0; i < 8; i++)
            tail[i] = str(words[i % 3]);
        *argv = (uint64_t)(uintptr_t)tail;
    }
    k = (int)below(r, 100);
    if (k < 50) {
        *envp = 0;
    } else if (k < 80) {
        ev[0] = str(words[3]);
        ev[1] = 0;
        *envp = arg_ptr(A_ENVP);
    } else {
        *envp = gen_ptr(r, NULL);
    }
}

static uint64_t gen_exec_path(struct rng *r)
{
    int k = (int)below(r, 100);
    if (k < 12)
        return str(PICK(r, exec_good));
    if (k < 50)
        return gen_path_rw(r);
    if (k < 75)
        return str(PICK(r, exec_other));
    return bad_str(r);
}

static uint64_t gen_unknown_nr(struct rng *r)
{
    static const uint64_t low[] = {0x7fffffff, 0xffffffff, 0x80000000, 0x40000000 | 1025,
                                   0xffff0000, 0x80000400};
    int k = (int)below(r, 100);
    if (k < 30)
        return 1025 + below(r, 16);
    if (k < 50)
        return 335 + below(r, 89); /* the gap before pidfd_send_signal */
    if (k < 65)
        return reef ? 451 + below(r, 573) : 512 + below(r, 512);
    if (k < 80)
        return PICK(r, low) | (pct(r, 50) ? next(r) << 32 : 0);
    if (k < 90)
        return (next(r) | 1) << 32 | (1024 + below(r, 17));
    static const uint64_t big[] = {~0ull, 1ull << 63, 1ull << 32, (1ull << 32) + 1024,
                                   ~0ull - 1023};
    return PICK(r, big);
}

static void gen_call(int id, struct rng *r, struct call_args *c)
{
    uint64_t *a = c->a, avail;
    c->nr = (uint64_t)table[id].nr;
    c->special = 0;
    switch (id) {
    case C_read:
    case C_write:
        a[0] = gen_fd(r);
        a[1] = gen_ptr(r, &avail);
        a[2] = gen_len(r, avail);
        break;
    case C_socket: {
        static const uint64_t doms[] = {0, 1, 10, 16, 17, 3, 255, 12345, 0xffffffff,
                                        (1ull << 32) | 2};
        static const uint64_t types[] = {0, 3, 4, 5, 6, 10, 11, 15, 1 | 0x100, 2 | 0x2000,
                                         1 | (1ull << 32), SOCK_NONBLOCK, SOCK_CLOEXEC};
        static const uint64_t protos[] = {6, 17, 1, 255, 12345, ~0ull, (1ull << 32) | 6};
        a[0] = pct(r, 88) ? AF_INET : pct(r, 70) ? PICK(r, doms) : gen_int(r);
        if (pct(r, 85)) {
            a[1] = pct(r, 55) ? SOCK_STREAM : SOCK_DGRAM;
            if (pct(r, 55))
                a[1] |= SOCK_NONBLOCK;
            if (pct(r, 20))
                a[1] |= SOCK_CLOEXEC;
        } else {
            a[1] = pct(r, 60) ? PICK(r, types) : gen_int(r);
        }
        a[2] = pct(r, 85) ? 0 : pct(r, 70) ? PICK(r, protos) : gen_int(r);
        if (!reef) {
            /* Natively the host's: no other family that reaches anywhere (Linux takes the low
             * 32 bits), no SOCK_PACKET, no protocol whose module the kernel might load. */
            int32_t d = (int32_t)a[0], t = (int32_t)a[1] & 0xf, p = (int32_t)a[2];
            if (d != AF_INET && d > 0 && d < 64)
                a[0] = 0;
            if (t == 10)
                a[1] ^= 10 ^ 11;
            if (!(p == 0 || p == 6 || p == 17 || p == 1 || p == 255 || p < 0 || p >= 263))
                a[2] = 12345;
        }
        break;
    }
    case C_bind:
        a[0] = gen_sock_fd(r, SK_STREAM | SK_DGRAM, SKM(SK_FRESH), 0);
        a[1] = gen_sockaddr(r, A_SADDR, 1);
        a[2] = gen_addrlen(r);
        break;
    case C_listen: {
        static const uint64_t backlogs[] = {0, 1, 2, 5, 128, 4096, 4097, 0x7fffffff,
                                            0x80000000, 0xffffffff, ~0ull};
        a[0] = gen_sock_fd(r, SK_STREAM, SKM(SK_BOUND) | (pct(r, 40) ? SKM(SK_FRESH) : 0), 0);
        a[1] = pct(r, 85) ? PICK(r, backlogs) : gen_int(r);
        break;
    }
    case C_connect:
        /* Mostly non-blocking sockets: a blocking connect to a dropped address waits for
         * the watchdog's poke. */
        a[0] = gen_sock_fd(r, SK_STREAM | SK_DGRAM, SKM(SK_FRESH) | SKM(SK_BOUND), pct(r, 60));
        a[1] = gen_sockaddr(r, A_SADDR, 0);
        a[2] = gen_addrlen(r);
        break;
    case C_accept:
    case C_accept4:
        /* Mostly non-blocking: a blocking accept with no client waits for the watchdog. */
        a[0] = gen_sock_fd(r, SK_STREAM, SKM(SK_LISTEN), id == C_accept ? pct(r, 85) : 0);
        gen_addr_out(r, &a[1], &a[2], 1);
        if (id == C_accept4)
            a[3] = pct(r, 85) ? PICK(r, ((uint64_t[]){SOCK_NONBLOCK, SOCK_NONBLOCK,
                                                      SOCK_NONBLOCK | SOCK_CLOEXEC,
                                                      SOCK_NONBLOCK | SOCK_CLOEXEC, SOCK_CLOEXEC, 0}))
                              : gen_int(r);
        break;
    case C_sendto:
    case C_recvfrom:
        a[0] = gen_sock_fd(r, SK_STREAM | SK_DGRAM,
                           SKM(SK_CONNECTED) | SKM(SK_CONNECTING) |
                               (pct(r, 50) ? SKM(SK_FRESH) | SKM(SK_BOUND) : 0),
                           0);
        if (pct(r, 50)) { /* mostly a valid buffer of a plausible size */
            uint64_t off = below(r, BUF_SIZE);
            a[1] = buf_addr() + off;
            avail = BUF_SIZE - off;
        } else {
            a[1] = gen_ptr(r, &avail);
        }
        a[2] = pct(r, 60) ? below(r, avail < 2000 ? avail + 1 : 2000) : gen_len(r, avail);
        a[3] = gen_msg_flags(r, id == C_sendto);
        if (id == C_sendto) {
            int k = (int)below(r, 100);
            a[4] = k < 45 ? 0 : k < 88 ? gen_sockaddr(r, A_SADDR, 0) : gen_ptr(r, NULL);
            a[5] = a[4] == 0 && pct(r, 70) ? 0 : gen_addrlen(r);
        } else {
            gen_addr_out(r, &a[4], &a[5], 1);
        }
        break;
    case C_sendmsg:
    case C_recvmsg:
        a[0] = gen_sock_fd(r, SK_STREAM | SK_DGRAM,
                           SKM(SK_CONNECTED) | SKM(SK_CONNECTING) |
                               (pct(r, 50) ? SKM(SK_FRESH) | SKM(SK_BOUND) : 0),
                           0);
        a[1] = gen_msghdr(r, id == C_sendmsg);
        a[2] = gen_msg_flags(r, id == C_sendmsg);
        break;
    case C_shutdown:
        a[0] = gen_sock_fd(r, SK_STREAM | SK_DGRAM, SKM(SK_CONNECTED) | SKM(SK_CONNECTING), 0);
        a[1] = pct(r, 85) ? below(r, 3) : gen_int(r);
        break;
    case C_getsockname:
    case C_getpeername:
        a[0] = gen_sock_fd(r, SK_STREAM | SK_DGRAM, SKM_ANY, 0);
        gen_addr_out(r, &a[1], &a[2], 0);
        break;
    case C_setsockopt:
    case C_getsockopt:
        a[0] = gen_sock_fd(r, SK_STREAM | SK_DGRAM, SKM_ANY, 0);
        gen_sockopt(r, a, id == C_setsockopt);
        break;
    case C_socketpair:
        a[0] = pct(r, 80) ? 1 : PICK(r, ((uint64_t[]){0, 2, 10, 12345, ~0ull}));
        a[1] = pct(r, 75) ? PICK(r, ((uint64_t[]){1, 1 | SOCK_NONBLOCK, 1 | SOCK_CLOEXEC, 2, 5,
                                                   1 | 0x100}))
                          : gen_int(r);
        a[2] = pct(r, 85) ? 0 : gen_int(r);
        a[3] = pct(r, 80) ? arg_ptr(A_PIPE) : gen_ptr(r, NULL);
        break;
    case C_pread64:
    case C_pwrite64:
        a[0] = gen_fd(r);
        a[1] = gen_ptr(r, &avail);
        a[2] = gen_len(r, avail);
        a[3] = gen_offset(r);
        break;
    case C_readv:
    case C_writev:
        a[0] = gen_fd(r);
        a[2] = gen_iov(r, &a[1]);
        break;
    case C_preadv:
    case C_pwritev:
        a[0] = gen_fd(r);
        a[2] = gen_iov(r, &a[1]);
        a[3] = gen_offset(r);
        a[4] = pct(r, 80) ? 0 : gen_int(r);
        break;
    case C_open:
        a[1] = gen_open_flags(r);
        a[0] = open_writes(a[1]) ? gen_path_rw(r) : gen_path_ro(r);
        a[2] = gen_mode(r);
        break;
    case C_openat:
        a[0] = gen_dirfd(r);
        a[2] = gen_open_flags(r);
        a[1] = open_writes(a[2]) ? gen_path_rw(r) : gen_path_ro(r);
        a[3] = gen_mode(r);
        break;
    case C_creat:
        a[0] = gen_path_rw(r);
        a[1] = gen_mode(r);
        break;
    case C_close:
    case C_fsync:
    case C_fdatasync:
    case C_syncfs:
    case C_fchdir:
    case C_dup:
        a[0] = gen_fd(r);
        break;
    case C_dup2:
        a[0] = gen_fd(r);
        a[1] = gen_fd(r);
        break;
    case C_dup3:
        a[0] = gen_fd(r);
        a[1] = gen_fd(r);
        a[2] = pct(r, 60) ? 0 : pct(r, 60) ? O_CLOEXEC : gen_int(r);
        break;
    case C_fcntl: {
        static const uint64_t cmds[] = {0,  1,  2,  3,  4,    5,    6,    7,    8,    9,   10,
                                        11, 15, 16, 36, 37,   38,   1024, 1025, 1026, 1030,
                                        1031, 1032, 1033, 1034};
        a[0] = gen_fd(r);
        a[1] = pct(r, 90) ? PICK(r, cmds) : gen_int(r);
        switch ((uint32_t)a[1]) {
        case 8: /* F_SETOWN */
            a[2] = gen_pid(r, 1);
            break;
        case 15: { /* F_SETOWN_EX: {type, pid} */
            int32_t *o = (int32_t *)(void *)arg_area(A_MISC);
            o[0] = (int32_t)below(r, 4);
            o[1] = (int32_t)gen_pid(r, 1);
            a[2] = arg_ptr(A_MISC);
            break;
        }
        case 5:
        case 6:
        case 7:
        case 36:
        case 37:
        case 38: { /* struct flock */
            int16_t *l = (int16_t *)(void *)arg_area(A_MISC);
            fill_random(r, l, 32);
            if (pct(r, 70)) {
                l[0] = (int16_t)below(r, 3);
                l[1] = (int16_t)below(r, 3);
                int64_t se[2] = {(int64_t)below(r, 4096), (int64_t)below(r, 4096)};
                memcpy(l + 4, se, 16);
                int32_t pid = 0;
                memcpy(l + 12, &pid, 4);
            }
            a[2] = pct(r, 85) ? arg_ptr(A_MISC) : gen_ptr(r, NULL);
            break;
        }
        default:
            a[2] = pct(r, 70) ? gen_int(r) : gen_ptr(r, NULL);
        }
        break;
    }
    case C_ioctl: {
        static const uint64_t cmds[] = {
            0x5401,     0x5402,     0x5403,     0x5404,     0x540B, 0x540E, 0x540F,
            0x5410,     0x5413,     0x5414,     0x541B,     0x5421, 0x5422, 0x5429,
            0x5450,     0x5451,     0x5452,     0x80045430, 0x40045431, 0x5460, 0x80086601,
            0x8901,     0x8902,     0x8903,     0,          0xffffffff, 0x5400, 0x54ff};
        a[0] = gen_fd(r);
        a[1] = pct(r, 85) ? PICK(r, cmds) : gen_int(r);
        int k = (int)below(r, 100);
        if (k < 55)
            a[2] = gen_ptr(r, NULL);
        else if (k < 75)
            a[2] = gen_int(r);
        else {
            fill_random(r, arg_area(A_MISC), 64);
            a[2] = arg_ptr(A_MISC);
        }
        uint32_t cmd = (uint32_t)a[1];
        if (cmd == 0x5410 || cmd == 0x8901 || cmd == 0x8902) { /* set owner / process group */
            int32_t p = (int32_t)gen_pid(r, 1);
            memcpy(arg_area(A_MISC), &p, 4);
            a[2] = arg_ptr(A_MISC);
        } else if (cmd == 0x5412) { /* TIOCSTI: never */
            a[1] = 0x541B;
        }
        break;
    }
    case C_lseek:
        a[0] = gen_fd(r);
        a[1] = gen_offset(r);
        a[2] = pct(r, 85) ? below(r, 5) : gen_int(r);
        break;
    case C_fstat:
    case C_fstatfs:
        a[0] = gen_fd(r);
        a[1] = gen_ptr(r, NULL);
        break;
    case C_stat:
    case C_lstat:
    case C_statfs:
        a[0] = gen_path_ro(r);
        a[1] = gen_ptr(r, NULL);
        break;
    case C_newfstatat:
        a[0] = gen_dirfd(r);
        a[1] = pct(r, 10) ? str("") : gen_path_ro(r);
        a[2] = gen_ptr(r, NULL);
        a[3] = pct(r, 60) ? 0 : pct(r, 70) ? PICK(r, ((uint64_t[]){0x100, 0x1000, 0x800})) : gen_int(r);
        break;
    case C_statx:
        a[0] = gen_dirfd(r);
        a[1] = pct(r, 10) ? str("") : gen_path_ro(r);
        a[2] = pct(r, 60) ? 0 : pct(r, 70) ? PICK(r, ((uint64_t[]){0x100, 0x1000, 0x800, 0x2000})) : gen_int(r);
        a[3] = pct(r, 60) ? 0xfff : gen_int(r);
        a[4] = gen_ptr(r, NULL);
        break;
    case C_getdents64:
        a[0] = gen_fd(r);
        a[1] = gen_ptr(r, &avail);
        a[2] = gen_len(r, avail);
        break;
    case C_ftruncate:
        a[0] = gen_fd(r);
        a[1] = pct(r, 60) ? below(r, 1 << 16) : gen_int(r);
        break;
    case C_truncate:
        a[0] = gen_path_rw(r);
        a[1] = pct(r, 60) ? below(r, 1 << 16) : gen_int(r);
        break;
    case C_sync:
    case C_sched_yield:
    case C_getpid:
    case C_gettid:
    case C_getppid:
    case C_getpgrp:
    case C_setsid:
    case C_getuid:
    case C_getgid:
    case C_geteuid:
    case C_getegid:
    case C_fork:
        break;
    case C_sendfile:
        a[0] = gen_fd(r);
        a[1] = gen_fd(r);
        if (pct(r, 50)) {
            a[2] = 0;
        } else if (pct(r, 60)) {
            uint64_t off = gen_offset(r);
            memcpy(arg_area(A_MISC), &off, 8);
            a[2] = arg_ptr(A_MISC);
        } else {
            a[2] = gen_ptr(r, NULL);
        }
        a[3] = gen_len(r, 1 << 16);
        break;
    case C_access:
        a[0] = gen_path_ro(r);
        a[1] = pct(r, 80) ? below(r, 8) : gen_int(r);
        break;
    case C_faccessat:
        a[0] = gen_dirfd(r);
        a[1] = gen_path_ro(r);
        a[2] = pct(r, 80) ? below(r, 8) : gen_int(r);
        break;
    case C_faccessat2:
        a[0] = gen_dirfd(r);
        a[1] = gen_path_ro(r);
        a[2] = pct(r, 80) ? below(r, 8) : gen_int(r);
        a[3] = pct(r, 50) ? 0 : pct(r, 60) ? PICK(r, ((uint64_t[]){0x100, 0x200, 0x1000})) : gen_int(r);
        break;
    case C_mkdir:
        a[0] = gen_path_rw(r);
        a[1] = gen_mode(r);
        break;
    case C_mkdirat:
        a[0] = gen_dirfd(r);
        a[1] = gen_path_rw(r);
        a[2] = gen_mode(r);
        break;
    case C_rmdir:
    case C_unlink:
        a[0] = gen_path_rw(r);
        break;
    case C_unlinkat:
        a[0] = gen_dirfd(r);
        a[1] = gen_path_rw(r);
        a[2] = pct(r, 50) ? 0 : pct(r, 70) ? 0x200 : gen_int(r);
        break;
    case C_rename:
    case C_link:
    case C_symlink: /* the target too: a link must not lead out of the scratch tree */
        a[0] = gen_path_rw(r);
        a[1] = gen_path_rw(r);
        break;
    case C_renameat:
        a[0] = gen_dirfd(r);
        a[1] = gen_path_rw(r);
        a[2] = gen_dirfd(r);
        a[3] = gen_path_rw(r);
        break;
    case C_renameat2:
        a[0] = gen_dirfd(r);
        a[1] = gen_path_rw(r);
        a[2] = gen_dirfd(r);
        a[3] = gen_path_rw(r);
        a[4] = pct(r, 40) ? 0 : pct(r, 70) ? below(r, 8) : gen_int(r);
        break;
    case C_linkat:
        a[0] = gen_dirfd(r);
        a[1] = gen_path_rw(r);
        a[2] = gen_dirfd(r);
        a[3] = gen_path_rw(r);
        /* Never AT_EMPTY_PATH: it would give any open file (a program) a name in the tree. */
        a[4] = (pct(r, 60) ? 0 : pct(r, 70) ? 0x400 : gen_int(r)) & ~0x1000ull;
        break;
    case C_symlinkat:
        a[0] = gen_path_rw(r);
        a[1] = gen_dirfd(r);
        a[2] = gen_path_rw(r);
        break;
    case C_readlink:
        a[0] = gen_path_ro(r);
        a[1] = gen_ptr(r, &avail);
        a[2] = gen_len(r, avail);
        break;
    case C_readlinkat:
        a[0] = gen_dirfd(r);
        a[1] = gen_path_ro(r);
        a[2] = gen_ptr(r, &avail);
        a[3] = gen_len(r, avail);
        break;
    case C_chdir:
        a[0] = pct(r, 80) ? gen_path_rw(r) : gen_path_ro(r);
        break;
    case C_getcwd:
        a[0] = gen_ptr(r, &avail);
        a[1] = gen_len(r, avail);
        break;
    case C_chmod:
        a[0] = gen_path_rw(r);
        a[1] = gen_mode(r);
        break;
    case C_fchmod:
        a[0] = gen_fd(r);
        a[1] = gen_mode(r);
        break;
    case C_fchmodat:
        a[0] = gen_dirfd(r);
        a[1] = gen_path_rw(r);
        a[2] = gen_mode(r);
        break;
    case C_chown:
    case C_lchown:
        a[0] = gen_path_rw(r);
        a[1] = pct(r, 50) ? (uint64_t)-1 : gen_int(r);
        a[2] = pct(r, 50) ? (uint64_t)-1 : gen_int(r);
        break;
    case C_fchown:
        a[0] = gen_fd(r);
        a[1] = pct(r, 50) ? (uint64_t)-1 : gen_int(r);
        a[2] = pct(r, 50) ? (uint64_t)-1 : gen_int(r);
        break;
    case C_fchownat:
        a[0] = gen_dirfd(r);
        a[1] = gen_path_rw(r);
        a[2] = pct(r, 50) ? (uint64_t)-1 : gen_int(r);
        a[3] = pct(r, 50) ? (uint64_t)-1 : gen_int(r);
        a[4] = pct(r, 60) ? 0 : pct(r, 70) ? 0x100 : gen_int(r);
        break;
    case C_utimensat: {
        int64_t *ts = (int64_t *)(void *)arg_area(A_TS);
        static const int64_t nsecs[] = {0, 999999999, 1000000000, (1 << 30) - 1, (1 << 30) - 2, -1};
        a[0] = gen_dirfd(r);
        a[1] = pct(r, 10) ? 0 : gen_path_rw(r);
        for (int i = 0; i < 2; i++) {
            ts[2 * i] = pct(r, 70) ? (int64_t)below(r, 1u << 31) : (int64_t)gen_int(r);
            ts[2 * i + 1] = PICK(r, nsecs);
        }
        a[2] = pct(r, 30) ? 0 : pct(r, 80) ? arg_ptr(A_TS) : gen_ptr(r, NULL);
        a[3] = pct(r, 60) ? 0 : pct(r, 70) ? 0x100 : gen_int(r);
        break;
    }
    case C_umask:
        a[0] = gen_mode(r);
        break;
    case C_pipe:
        a[0] = pct(r, 80) ? arg_ptr(A_PIPE) : gen_ptr(r, NULL);
        break;
    case C_pipe2:
        a[0] = pct(r, 80) ? arg_ptr(A_PIPE) : gen_ptr(r, NULL);
        a[1] = pct(r, 30) ? 0 : pct(r, 70) ? PICK(r, ((uint64_t[]){O_NONBLOCK, O_CLOEXEC, O_NONBLOCK | O_CLOEXEC, O_DIRECT})) : gen_int(r);
        break;
    case C_poll:
        a[0] = gen_pollfds(r, &a[1]);
        a[2] = gen_poll_timeout(r);
        break;
    case C_ppoll:
        a[0] = gen_pollfds(r, &a[1]);
        a[2] = gen_timeout(r, 0, 1, 0);
        a[3] = gen_sigset(r);
        a[4] = gen_sigsetsize(r);
        break;
    case C_select:
        a[0] = gen_nfds_select(r);
        a[1] = gen_fdset(r, 0);
        a[2] = gen_fdset(r, 1);
        a[3] = gen_fdset(r, 2);
        a[4] = gen_timeout(r, 0, 1, 1);
        break;
    case C_pselect6: {
        uint64_t *d = (uint64_t *)(void *)arg_area(A_PSEL);
        a[0] = gen_nfds_select(r);
        a[1] = gen_fdset(r, 0);
        a[2] = gen_fdset(r, 1);
        a[3] = gen_fdset(r, 2);
        a[4] = gen_timeout(r, 0, 1, 0);
        d[0] = gen_sigset(r);
        d[1] = gen_sigsetsize(r);
        a[5] = pct(r, 30) ? 0 : pct(r, 80) ? arg_ptr(A_PSEL) : gen_ptr(r, NULL);
        break;
    }
    case C_mmap: {
        static const uint64_t extra[] = {0x8000 /* POPULATE */, 0x4000 /* NORESERVE */,
                                         0x100 /* GROWSDOWN */, 0x20000 /* STACK */,
                                         0x40000 /* HUGETLB */, 0x2000 /* LOCKED */,
                                         0x10000 /* NONBLOCK */, 0x80000 /* SYNC */};
        int k = (int)below(r, 100);
        uint64_t flags;
        a[0] = k < 50 ? 0 : k < 85 ? gen_vm_addr(r) : (next(r) & 0x00007ffffffff000ull);
        a[1] = gen_vm_len(r);
        a[2] = pct(r, 85) ? below(r, 8) : pct(r, 50) ? (below(r, 8) | 0x01000000ull << below(r, 2)) : gen_int(r);
        k = (int)below(r, 100);
        flags = k < 60 ? 2 : k < 85 ? 1 : k < 90 ? 3 : below(r, 16);
        if (pct(r, 70))
            flags |= 0x20; /* ANONYMOUS */
        if (a[0] && pct(r, 20))
            flags |= pct(r, 70) ? 0x10 : 0x100000; /* FIXED, FIXED_NOREPLACE */
        for (int n = (int)below(r, 3); n > 0; n--)
            if (pct(r, 50))
                flags |= PICK(r, extra);
        if (pct(r, 3))
            flags = next(r);
        a[3] = flags;
        a[4] = (flags & 0x20) && pct(r, 80) ? (uint64_t)-1 : gen_fd(r);
        a[5] = pct(r, 70) ? 0 : pct(r, 50) ? below(r, 64) * PAGE : gen_int(r);
        break;
    }
    case C_munmap:
        a[0] = gen_vm_addr(r);
        a[1] = gen_vm_len(r);
        break;
    case C_mprotect:
        a[0] = gen_vm_addr(r);
        a[1] = gen_vm_len(r);
        a[2] = pct(r, 80) ? below(r, 8) : pct(r, 50) ? (below(r, 8) | 0x01000000ull << below(r, 2)) : gen_int(r);
        break;
    case C_madvise: {
        static const uint64_t adv[] = {0, 1, 2, 3, 4, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17,
                                       18, 19, 20, 21, 22, 23, 25, 100, 101};
        a[0] = gen_vm_addr(r);
        a[1] = gen_vm_len(r);
        a[2] = pct(r, 90) ? PICK(r, adv) : gen_int(r);
        break;
    }
    case C_brk: {
        int k = (int)below(r, 100);
        if (k < 20)
            a[0] = 0;
        else if (k < 60)
            a[0] = W.brk0 + below(r, 64) * PAGE + (pct(r, 20) ? below(r, PAGE) : 0);
        else if (k < 70)
            a[0] = W.brk0 - below(r, 16) * PAGE;
        else if (k < 80)
            a[0] = W.brk0 + PICK(r, huge_lens);
        else
            a[0] = gen_vm_addr(r);
        break;
    }
    case C_rt_sigaction: {
        uint64_t *act = (uint64_t *)(void *)arg_area(A_SIGACT);
        act[0] = gen_handler(r);
        act[1] = gen_sa_flags(r);
        act[2] = pct(r, 85) ? (uint64_t)(uintptr_t)&fz_restorer : gen_ptr(r, NULL);
        act[3] = pct(r, 50) ? 0 : next(r);
        a[0] = gen_sig(r);
        a[1] = pct(r, 20) ? 0 : pct(r, 85) ? arg_ptr(A_SIGACT) : gen_ptr(r, NULL);
        a[2] = pct(r, 50) ? 0 : gen_ptr(r, NULL);
        a[3] = gen_sigsetsize(r);
        break;
    }
    case C_rt_sigprocmask:
        a[0] = pct(r, 85) ? below(r, 3) : gen_int(r);
        a[1] = gen_sigset(r);
        a[2] = pct(r, 50) ? 0 : gen_ptr(r, NULL);
        a[3] = gen_sigsetsize(r);
        break;
    case C_rt_sigreturn:
        gen_frame(r, c);
        break;
    case C_rt_sigpending:
        a[0] = gen_ptr(r, NULL);
        a[1] = gen_sigsetsize(r);
        break;
    case C_rt_sigsuspend: /* with SIGALRM open, mostly: it waits for the watchdog's poke */
        a[0] = gen_sigset(r);
        if (pct(r, 90) && a[0] == arg_ptr(A_SIGSET))
            *(uint64_t *)(void *)arg_area(A_SIGSET) &= ~(1ull << (SIGALRM - 1));
        a[1] = gen_sigsetsize(r);
        break;
    case C_sigaltstack: {
        uint64_t *ss = (uint64_t *)(void *)arg_area(A_STACK_T);
        static const uint64_t sizes[] = {2048, 2047, 8192, 16384, 0, 1ull << 40};
        ss[0] = pct(r, 70) ? (uint64_t)(uintptr_t)W.alt : gen_ptr(r, NULL);
        ss[1] = pct(r, 60) ? 0 : pct(r, 60) ? PICK(r, ((uint64_t[]){1, 2, 0x80000000})) : gen_int(r);
        ss[2] = pct(r, 80) ? PICK(r, sizes) : gen_int(r);
        a[0] = pct(r, 20) ? 0 : pct(r, 85) ? arg_ptr(A_STACK_T) : gen_ptr(r, NULL);
        a[1] = pct(r, 50) ? 0 : gen_ptr(r, NULL);
        break;
    }
    case C_kill:
        a[0] = gen_pid(r, 1);
        a[1] = gen_sig(r);
        break;
    case C_tkill:
        a[0] = gen_pid(r, 0);
        a[1] = gen_sig(r);
        break;
    case C_tgkill:
        a[0] = gen_pid(r, 0);
        a[1] = gen_pid(r, 0);
        a[2] = gen_sig(r);
        break;
    case C_clone: {
        struct clone_req *q = &c->clone;
        a[0] = gen_clone_flags(r);
        int k = (int)below(r, 100);
        a[1] = k < 50 ? 0 : k < 75 ? (uint64_t)(uintptr_t)(W.cstack + 4 * PAGE) : gen_ptr(r, NULL);
        a[2] = gen_ptr(r, NULL);
        a[3] = gen_ptr(r, NULL);
        k = (int)below(r, 100);
        a[4] = k < 40 ? W.fs0 : k < 70 ? 0 : gen_ptr(r, NULL);
        if ((a[0] & 0x100) || a[1] != 0) {
            *q = (struct clone_req){56, (long)a[0], (long)a[1], (long)a[2], (long)a[3], (long)a[4], 0, 0, 0};
            if ((a[0] & 0x10000) == 0 && pct(r, 50)) { /* a process child may exec */
                q->path = (long)gen_exec_path(r);
                gen_exec_argv(r, (uint64_t *)&q->argv, (uint64_t *)&q->envp);
            }
            c->special = 1;
        } else {
            c->special = 2;
        }
        break;
    }
    case C_vfork: {
        struct clone_req *q = &c->clone;
        *q = (struct clone_req){58, 0, 0, 0, 0, 0, 0, 0, 0};
        if (pct(r, 60)) {
            q->path = (long)gen_exec_path(r);
            gen_exec_argv(r, (uint64_t *)&q->argv, (uint64_t *)&q->envp);
        }
        c->special = 1;
        break;
    }
    case C_execve:
        a[0] = gen_exec_path(r);
        gen_exec_argv(r, &a[1], &a[2]);
        break;
    case C_exit:
    case C_exit_group:
        a[0] = pct(r, 50) ? below(r, 256) : gen_int(r);
        break;
    case C_wait4: {
        int k = (int)below(r, 100);
        a[0] = k < 40 ? (uint64_t)-1 : k < 50 ? 0 : k < 70 && W.nkids ? (uint64_t)W.kids[below(r, (uint64_t)W.nkids)] : gen_int(r);
        a[1] = pct(r, 30) ? 0 : gen_ptr(r, NULL);
        k = (int)below(r, 100);
        a[2] = k < 70 ? 1 | (pct(r, 30) ? 0x40000000 : 0) : k < 85 ? 0 : gen_int(r);
        a[3] = pct(r, 60) ? 0 : gen_ptr(r, NULL);
        break;
    }
    case C_waitid: {
        a[0] = pct(r, 85) ? below(r, 4) : gen_int(r);
        a[1] = pct(r, 50) && W.nkids ? (uint64_t)W.kids[below(r, (uint64_t)W.nkids)] : gen_int(r);
        a[2] = pct(r, 20) ? 0 : gen_ptr(r, NULL);
        a[3] = pct(r, 80) ? (4 | (pct(r, 80) ? 1 : 0) | (pct(r, 20) ? 0x1000000 : 0) | (pct(r, 20) ? 2 : 0)) : gen_int(r);
        a[4] = pct(r, 60) ? 0 : gen_ptr(r, NULL);
        break;
    }
    case C_set_tid_address:
        a[0] = gen_ptr(r, NULL);
        break;
    case C_set_robust_list:
        a[0] = gen_ptr(r, NULL);
        a[1] = pct(r, 70) ? 24 : gen_int(r);
        break;
    case C_arch_prctl: {
        static const uint64_t codes[] = {0x1001, 0x1002, 0x1003, 0x1004, 0x1011, 0x1012,
                                         0x2001, 0x2002, 0x2003, 0x3001, 0x4001};
        a[0] = pct(r, 90) ? PICK(r, codes) : gen_int(r);
        int k = (int)below(r, 100);
        a[1] = k < 30 ? W.fs0 : k < 40 ? 0 : k < 60 ? gen_vm_addr(r) : gen_ptr(r, NULL);
        break;
    }
    case C_futex: {
        static const uint64_t ops[] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13};
        uint32_t *word = futex_page + below(r, 16);
        int k = (int)below(r, 100);
        if (k < 50)
            a[0] = (uint64_t)(uintptr_t)word;
        else if (k < 70)
            a[0] = buf_addr() + (below(r, 64) & ~3ull);
        else
            a[0] = gen_ptr(r, NULL);
        uint64_t op = pct(r, 90) ? PICK(r, ops) : gen_int(r);
        if (pct(r, 50))
            op |= 128; /* PRIVATE */
        if (pct(r, 10))
            op |= 256; /* CLOCK_REALTIME */
        a[1] = op;
        k = (int)below(r, 100);
        a[2] = k < 40 ? *word : k < 70 ? below(r, 4) : gen_int(r);
        uint32_t base = (uint32_t)op & 127;
        if (base == 0 || base == 9 || base == 6 || base == 11 || base == 13)
            a[3] = gen_timeout(r, 1, 1, 0);
        else
            a[3] = pct(r, 70) ? below(r, 4) : gen_int(r);
        a[4] = pct(r, 60) ? (uint64_t)(uintptr_t)(futex_page + below(r, 16)) : gen_ptr(r, NULL);
        a[5] = pct(r, 50) ? 0xffffffff : gen_int(r);
        break;
    }
    case C_alarm: /* short ones: SIGALRM is the watchdog's poke, which workers survive */
        a[0] = pct(r, 90) ? below(r, 3) : gen_int(r);
        break;
    case C_getitimer:
        a[0] = pct(r, 80) ? 0 : pct(r, 50) ? below(r, 4) : gen_int(r);
        a[1] = pct(r, 70) ? arg_ptr(A_MISC + 160) : gen_ptr(r, NULL);
        break;
    case C_setitimer: {
        /* Intervals of 0..20 ms and values of 0..1 s, or anything. */
        int64_t *v = (int64_t *)(void *)arg_area(A_MISC + 160);
        v[0] = 0;
        v[1] = pct(r, 50) ? 0 : (int64_t)below(r, 20000);
        v[2] = 0;
        v[3] = pct(r, 90) ? (int64_t)below(r, 1000000) : (int64_t)gen_int(r);
        a[0] = pct(r, 80) ? 0 : pct(r, 50) ? below(r, 4) : gen_int(r);
        a[1] = pct(r, 80) ? arg_ptr(A_MISC + 160) : pct(r, 50) ? 0 : gen_ptr(r, NULL);
        a[2] = pct(r, 50) ? 0 : pct(r, 70) ? arg_ptr(A_MISC + 192) : gen_ptr(r, NULL);
        break;
    }
    case C_nanosleep:
        a[0] = gen_timeout(r, 0, 0, 0);
        a[1] = pct(r, 50) ? 0 : gen_ptr(r, NULL);
        break;
    case C_clock_nanosleep: /* mostly clocks that advance while the caller sleeps */
        a[0] = pct(r, 80) ? PICK(r, ((uint64_t[]){0, 1, 7})) : pct(r, 50) ? below(r, 12) : gen_int(r);
        a[1] = pct(r, 60) ? 0 : pct(r, 70) ? 1 : gen_int(r);
        a[2] = gen_timeout(r, 0, 0, 0);
        a[3] = pct(r, 50) ? 0 : gen_ptr(r, NULL);
        break;
    case C_clock_gettime:
    case C_clock_getres:
        a[0] = pct(r, 80) ? below(r, 12) : gen_int(r);
        a[1] = gen_ptr(r, NULL);
        break;
    case C_gettimeofday:
        a[0] = gen_ptr(r, NULL);
        a[1] = pct(r, 70) ? 0 : gen_ptr(r, NULL);
        break;
    case C_time:
    case C_uname:
    case C_sysinfo:
        a[0] = pct(r, 20) ? 0 : gen_ptr(r, NULL);
        break;
    case C_setpgid: {
        /* The worker stays in its own group: (0 or itself, 0 or itself or nobody). */
        static const uint64_t who[] = {0, 1, 2};
        uint64_t p = PICK(r, who), g = PICK(r, who);
        a[0] = p == 0 ? 0 : p == 1 ? (uint64_t)W.pid : 0x3ff00000 + below(r, 1000);
        a[1] = g == 0 ? 0 : g == 1 ? (uint64_t)W.pid : 0x3ff00000 + below(r, 1000);
        break;
    }
    case C_getpgid:
    case C_getsid:
        a[0] = pct(r, 50) ? gen_pid(r, 0) : gen_int(r);
        break;
    case C_getcpu:
        a[0] = gen_ptr(r, NULL);
        a[1] = gen_ptr(r, NULL);
        a[2] = gen_ptr(r, NULL);
        break;
    case C_sched_getaffinity:
    case C_sched_setaffinity:
        a[0] = gen_pid(r, 0);
        a[1] = pct(r, 60) ? PICK(r, ((uint64_t[]){8, 128, 16, 4})) : gen_int(r);
        if (id == C_sched_setaffinity && pct(r, 80)) {
            uint64_t *m = (uint64_t *)(void *)arg_area(A_MISC);
            fill_random(r, m, 128);
            m[0] = pct(r, 50) ? ~0ull : next(r);
            a[2] = arg_ptr(A_MISC);
        } else {
            a[2] = gen_ptr(r, NULL);
        }
        break;
    case C_getrandom:
        a[0] = gen_ptr(r, &avail);
        a[1] = gen_len(r, avail);
        a[2] = pct(r, 70) ? below(r, 8) : gen_int(r);
        break;
    case C_prlimit64:
    case C_getrlimit:
    case C_setrlimit: {
        uint64_t *l = (uint64_t *)(void *)arg_area(A_RLIM);
        l[0] = gen_int(r);
        l[1] = pct(r, 50) ? ~0ull : gen_int(r);
        uint64_t res = pct(r, 85) ? below(r, 17) : gen_int(r);
        uint64_t newp = pct(r, 40) ? 0 : pct(r, 80) ? arg_ptr(A_RLIM) : gen_ptr(r, NULL);
        uint64_t oldp = pct(r, 40) ? 0 : gen_ptr(r, NULL);
        if (id == C_prlimit64) {
            a[0] = pct(r, 50) ? 0 : gen_pid(r, 0);
            a[1] = res;
            a[2] = newp;
            a[3] = oldp;
        } else {
            a[0] = res;
            a[1] = id == C_setrlimit ? (newp ? newp : gen_ptr(r, NULL)) : gen_ptr(r, NULL);
        }
        break;
    }
    case C_prctl: {
        static const uint64_t opts[] = {1, 2, 3, 4, 15, 16, 22, 21, 23, 24, 29, 30, 36, 37,
                                        38, 39, 40, 41, 42, 8, 7, 0, 100, 0x59616d61};
        a[0] = pct(r, 90) ? PICK(r, opts) : gen_int(r);
        for (int i = 1; i < 5; i++)
            a[i] = pct(r, 50) ? gen_ptr(r, NULL) : gen_int(r);
        if (a[0] == 15) { /* PR_SET_NAME */
            a[1] = pct(r, 70) ? str(pct(r, 50) ? "fuzz-name" : long_name) : gen_ptr(r, NULL);
        } else if (a[0] == 1) { /* PR_SET_PDEATHSIG */
            a[1] = gen_sig(r);
        } else if (a[0] == 0x59616d61) { /* PR_SET_PTRACER */
            a[1] = gen_pid(r, 0);
        }
        break;
    }
    case C_reef_name_register:
    case C_reef_name_unregister:
    case C_reef_name_lookup:
    case C_reef_mbox_connect: {
        /* Mostly one of a few names (one reserved), sometimes bad lengths or pointers. */
        static const char *const names[] = {"fz", "fz-echo", "fleet/fz", "a b", "echo"};
        char *name = arg_area(A_MISC + 64);
        const char *pick = PICK(r, names);
        size_t len = strlen(pick);
        memcpy(name, pick, len + 1);
        a[0] = pct(r, 85) ? (uint64_t)(uintptr_t)name : gen_ptr(r, NULL);
        a[1] = pct(r, 85) ? len : PICK(r, ((uint64_t[]){0, 64, 65, 4096}));
        if (id == C_reef_name_lookup || id == C_reef_mbox_connect) {
            a[2] = pct(r, 80) ? below(r, 2) : gen_int(r);
            a[3] = pct(r, 50) ? arg_ptr(A_MISC + 160) : gen_ptr(r, NULL);
            a[4] = pct(r, 80) ? PICK(r, ((uint64_t[]){0, O_CLOEXEC})) : gen_int(r);
        } else {
            a[2] = pct(r, 70) ? gen_fd(r) : gen_int(r);
        }
        break;
    }
    case C_reef_mbox_create:
        a[0] = pct(r, 80) ? PICK(r, ((uint64_t[]){0, O_NONBLOCK, O_CLOEXEC, O_NONBLOCK | O_CLOEXEC}))
                          : gen_int(r);
        a[1] = pct(r, 70) ? arg_ptr(A_MISC + 160) : gen_ptr(r, NULL);
        break;
    case C_reef_mbox_accept:
        /* Mostly non-blocking: a blocking accept with no client waits for the watchdog. */
        a[0] = gen_fd(r);
        a[1] = pct(r, 90) ? PICK(r, ((uint64_t[]){O_NONBLOCK, O_NONBLOCK | O_CLOEXEC}))
                          : gen_int(r);
        a[2] = pct(r, 70) ? arg_ptr(A_MISC + 160) : gen_ptr(r, NULL);
        break;
    case C_reef_mbox_notify:
        a[0] = gen_fd(r);
        break;
    case C_reef_grant:
        /* Any memory: mostly refused (private, unmapped), sometimes a MAP_SHARED arena. */
        a[0] = gen_fd(r);
        a[1] = gen_ptr(r, NULL);
        a[2] = pct(r, 70) ? 4096 * (1 + below(r, 4)) : gen_int(r);
        a[3] = pct(r, 80) ? below(r, 2) : gen_int(r);
        break;
    case C_reef_grant_map:
    case C_reef_grant_revoke:
        /* A grant this worker made (forged on any other connection) or any id. */
        a[0] = gen_fd(r);
        a[1] = pct(r, 70) ? grant_ids[below(r, GRANT_IDS)] : gen_int(r);
        a[2] = pct(r, 70) ? arg_ptr(A_MISC + 160) : gen_ptr(r, NULL);
        break;
    case C_reef_fleet_bind: {
        /* Refused (the fuzzer is not the fleet manager), whatever the arguments. */
        static const char *const names[] = {"fleet/fz", "fz", "fleet/"};
        char *name = arg_area(A_MISC + 64);
        const char *pick = PICK(r, names);
        memcpy(name, pick, strlen(pick) + 1);
        a[0] = gen_pid(r, 1);
        a[1] = pct(r, 80) ? below(r, 8) : gen_int(r);
        a[2] = pct(r, 85) ? (uint64_t)(uintptr_t)name : gen_ptr(r, NULL);
        a[3] = pct(r, 85) ? strlen(pick) : gen_int(r);
        a[4] = pct(r, 80) ? below(r, 2) : gen_int(r);
        break;
    }
    case C_reef_core_info:
        a[0] = pct(r, 80) ? below(r, 6) : gen_int(r);
        a[1] = pct(r, 70) ? arg_ptr(A_MISC + 160) : gen_ptr(r, NULL);
        break;
    case C_reef_core_ctl:
        /* Workers run as nobody: EPERM whatever they ask (the core churner, root, is the one
         * that stops, starts, parks and unparks cores under them). */
        a[0] = pct(r, 85) ? below(r, 4) : gen_int(r);
        a[1] = pct(r, 85) ? below(r, 6) : gen_int(r);
        a[2] = pct(r, 85) ? below(r, 6) : gen_int(r);
        break;
    case C_reef_free_bytes:
        for (int i = 0; i < 6; i++)
            a[i] = pct(r, 70) ? 0 : gen_int(r);
        break;
    case C_unknown:
        c->nr = gen_unknown_nr(r);
        for (int i = 0; i < 6; i++)
            a[i] = pct(r, 50) ? gen_ptr(r, NULL) : gen_int(r);
        break;
    case C_linux_extra: {
        int e = (int)below(r, sizeof extras / sizeof extras[0]);
        c->nr = (uint64_t)extras[e].nr;
        for (int i = 0; i < 6; i++)
            a[i] = pct(r, 50) ? gen_ptr(r, NULL) : gen_int(r);
        if (c->nr == 140) /* getpriority(which, who) */
            a[1] = gen_pid(r, 0);
        if (c->nr == 149 || c->nr == 150) /* mlock: within what the worker maps */
            a[0] = gen_vm_addr(r), a[1] = gen_vm_len(r);
        if (c->nr == 436) /* close_range: never the trace descriptor */
            a[0] = below(r, 64), a[1] = a[0] + below(r, 64), a[2] = pct(r, 70) ? 0 : gen_int(r) & ~4ull;
        break;
    }
    default:
        for (int i = 0; i < 6; i++)
            a[i] = gen_int(r);
    }
}

/* ---- running one call ---- */

static void child_body(uint64_t parent_i);
static uint64_t seed_global;

static long run_call(int id, struct call_args *c)
{
    uint64_t *a = c->a;
    switch (c->special) {
    case 1:
        return fz_clone(&c->clone);
    case 2: {
        long ret = id == C_fork ? raw0(SYS_fork) : raw6(SYS_clone, (long)a[0], (long)a[1], (long)a[2], (long)a[3], (long)a[4], 0);
        if (ret == 0)
            child_body(W.i);
        return ret;
    }
    case 3:
        return fz_sigreturn(a[0]);
    }
    if (id == C_fork) {
        long ret = raw0(SYS_fork);
        if (ret == 0)
            child_body(W.i);
        return ret;
    }
    return raw6((long)c->nr, (long)a[0], (long)a[1], (long)a[2], (long)a[3], (long)a[4], (long)a[5]);
}

/* Bounds what one call may write to a file (the tree lives in RAM on Reef): a call that writes
 * to a regular file asks for FILE_CAP bytes at most (descriptors of other kinds keep their
 * huge lengths). Returns whether it changed an argument. */
static int bound_call(int id, struct call_args *c)
{
    uint64_t *a = c->a;
    struct stat st;
    if (!(table[id].flags & F_GROWS_FD) || id == C_ftruncate)
        return 0;
    if (raw2(SYS_fstat, (long)a[0], &st) != 0 || !S_ISREG(st.st_mode))
        return 0;
    int changed = 0;
    if ((id == C_write || id == C_pwrite64) && a[2] > (uint64_t)FILE_CAP)
        a[2] = (uint64_t)FILE_CAP, changed = 1;
    if (id == C_sendfile && a[3] > (uint64_t)FILE_CAP)
        a[3] = (uint64_t)FILE_CAP, changed = 1;
    if ((id == C_writev || id == C_pwritev) && a[1] == arg_ptr(A_IOV)) {
        uint64_t *v = (uint64_t *)(void *)arg_area(A_IOV);
        for (uint64_t i = 0; i < 64 && i < a[2]; i++)
            if (v[2 * i + 1] > (uint64_t)FILE_CAP / 8)
                v[2 * i + 1] = (uint64_t)FILE_CAP / 8, changed = 1;
    }
    return changed;
}

/* Natively the sockets are the host's: no connection or datagram may leave 127.0.0.0/8 or go
 * to a port the fuzzer does not use (its fixed ones, those its sockets got), and nothing may
 * bind or listen on every interface. What the kernel would read is looked at first (without
 * faulting: process_vm_readv on itself); a sockaddr that breaks the rule is replaced with a
 * copy that names 127.0.0.1 and a fixed port. Returns whether it changed an argument. */
static int peek_user(uint64_t addr, void *out, size_t n)
{
    struct iovec local = {out, n}, remote = {(void *)(uintptr_t)addr, n};
    long got = raw6(SYS_process_vm_readv, raw0(SYS_getpid), (long)&local, 1, (long)&remote, 1, 0);
    if (got == (long)n)
        return 1; /* readable */
    if (got == -EFAULT || (got >= 0 && got < (long)n))
        return 0; /* not (all) readable: the kernel's copy fails too */
    return -1;    /* cannot tell: treated as unsafe */
}

static int sockaddr_unsafe(uint64_t p, int bind)
{
    uint8_t sa[8];
    uint16_t fam;
    int k = peek_user(p, sa, sizeof sa);
    if (k <= 0)
        return k < 0;
    memcpy(&fam, sa, 2);
    if (fam != AF_INET && fam != 0) /* AF_UNSPEC: as AF_INET for a datagram's destination */
        return 0;
    int any = !sa[4] && !sa[5] && !sa[6] && !sa[7];
    if (sa[4] != 127 && !(any && !bind))
        return 1;
    uint16_t port = (uint16_t)(sa[2] << 8 | sa[3]);
    return !bind && port != 0 && !port_known(port);
}

static uint64_t sockaddr_fix(uint64_t p)
{
    uint8_t *sa = (uint8_t *)arg_area(A_NET_FIX);
    if (peek_user(p, sa, 16) != 1)
        memset(sa, 0, 16);
    uint16_t fam = AF_INET, port = net_ports[sa[3] % (sizeof net_ports / sizeof net_ports[0])];
    memcpy(sa, &fam, 2);
    sa[2] = (uint8_t)(port >> 8);
    sa[3] = (uint8_t)port;
    sa[4] = 127, sa[5] = 0, sa[6] = 0, sa[7] = 1;
    return arg_ptr(A_NET_FIX);
}

static int net_guard(int id, struct call_args *c)
{
    uint64_t *a = c->a;
    switch (id) {
    case C_bind:
    case C_connect:
        if (sockaddr_unsafe(a[1], id == C_bind)) {
            a[1] = sockaddr_fix(a[1]);
            return 1;
        }
        return 0;
    case C_sendto:
        if (a[4] != 0 && sockaddr_unsafe(a[4], 0)) {
            a[4] = sockaddr_fix(a[4]);
            return 1;
        }
        return 0;
    case C_sendmsg: {
        uint64_t *m = (uint64_t *)(void *)arg_area(A_MSGFIX);
        int k = peek_user(a[1], m, 56);
        if (k == 0 || (k == 1 && (m[0] == 0 || !sockaddr_unsafe(m[0], 0))))
            return 0;
        if (k < 0)
            memset(m, 0, 56);
        m[0] = sockaddr_fix(k == 1 ? m[0] : 0);
        a[1] = arg_ptr(A_MSGFIX);
        return 1;
    }
    case C_listen: {
        /* An unbound socket would be bound to 0.0.0.0: listen only on 127/8. */
        uint8_t sa[16];
        uint32_t len = sizeof sa;
        uint16_t fam;
        if (raw3(SYS_getsockname, a[0], sa, &len) != 0)
            return 0;
        memcpy(&fam, sa, 2);
        if (fam == AF_INET && (sa[4] != 127 || (sa[2] == 0 && sa[3] == 0))) {
            a[0] = (uint64_t)-1;
            return 1;
        }
        return 0;
    }
    }
    return 0;
}

static void after_call(int id, struct call_args *c, long ret)
{
    uint64_t *a = c->a;
    if (table[id].flags & F_GROWS_FD && ret > 0)
        cap_fd((long)a[0]); /* sendfile's out, the others' fd */
    if (id == C_connect && ret == -115) /* EINPROGRESS */
        set_sk_state((int32_t)a[0], SK_CONNECTING);
    if (ret < 0 && ret > -4096)
        return;
    /* A duplicate of a remembered socket is one too. */
    struct sk *orig = find_sk((int32_t)a[0]), copy = orig ? *orig : (struct sk){0, 0, 0, 0, 0};
    switch (id) {
    case C_open:
    case C_openat:
    case C_creat:
    case C_reef_mbox_create:
    case C_reef_mbox_connect:
    case C_reef_mbox_accept:
        add_fd(ret);
        break;
    case C_dup:
    case C_dup2:
    case C_dup3:
        add_fd(ret);
        if (orig)
            add_sk(ret, copy.type, copy.state, copy.nonblock, copy.port);
        break;
    case C_fcntl:
        if ((uint32_t)a[1] == 0 || (uint32_t)a[1] == 1030) {
            add_fd(ret);
            if (orig)
                add_sk(ret, copy.type, copy.state, copy.nonblock, copy.port);
        }
        break;
    case C_socket:
        add_fd(ret);
        if ((a[1] & 0xf) == SOCK_STREAM || (a[1] & 0xf) == SOCK_DGRAM)
            add_sk(ret, (a[1] & 0xf) == SOCK_STREAM ? SK_STREAM : SK_DGRAM, SK_FRESH,
                   (a[1] & SOCK_NONBLOCK) != 0, 0);
        break;
    case C_accept:
    case C_accept4:
        add_fd(ret);
        add_sk(ret, SK_STREAM, SK_CONNECTED, id == C_accept4 && (a[3] & SOCK_NONBLOCK),
               copy.port);
        learn_port(a[1]);
        break;
    case C_bind:
        if (orig && orig->state == SK_FRESH)
            orig->state = SK_BOUND;
        if (orig && port_at(a[1], A_SADDR))
            orig->port = port_at(a[1], A_SADDR);
        break;
    case C_listen:
        if (orig && orig->type == SK_STREAM)
            orig->state = SK_LISTEN;
        break;
    case C_connect:
        if (orig)
            orig->state = SK_CONNECTED;
        break;
    case C_getsockname:
        if (orig && port_at(a[1], A_NET_OUT))
            orig->port = port_at(a[1], A_NET_OUT);
        learn_port(a[1]);
        break;
    case C_getpeername:
    case C_recvfrom:
        learn_port(a[id == C_recvfrom ? 4 : 1]);
        break;
    case C_recvmsg:
        if (a[1] == arg_ptr(A_MSGHDR))
            learn_port(*(uint64_t *)(void *)arg_area(A_MSGHDR));
        break;
    case C_reef_grant:
        grant_ids[grants_made++ % GRANT_IDS] = (uint64_t)ret;
        break;
    case C_linux_extra:
        if (c->nr == 319 || c->nr == 290 || c->nr == 291 || c->nr == 283 || c->nr == 289 ||
            c->nr == 294)
            add_fd(ret);
        break;
    case C_socketpair:
    case C_pipe:
    case C_pipe2:
        /* Both write their two descriptors to A_PIPE: pipe's first argument, socketpair's last. */
        if (ret == 0 && a[id == C_socketpair ? 3 : 0] == arg_ptr(A_PIPE)) {
            int *p = (int *)(void *)arg_area(A_PIPE);
            add_fd(p[0]);
            add_fd(p[1]);
            if (id == C_socketpair) /* the send and receive calls use them too */
                for (int i = 0; i < 2; i++)
                    add_sk(p[i], SK_STREAM, SK_CONNECTED, (a[1] & SOCK_NONBLOCK) != 0, 0);
        }
        break;
    case C_close:
        drop_fd((long)(int)a[0]);
        break;
    case C_mmap:
        if ((uint64_t)ret < 0x0000800000000000ull)
            add_map((uint64_t)ret, a[1]);
        break;
    case C_munmap:
        drop_maps(a[0], a[1]);
        break;
    case C_brk:
        if ((uint64_t)ret > W.brk0 + MAP_CAP)
            raw1(SYS_brk, W.brk0);
        break;
    case C_truncate:
        cap_paths_all();
        break;
    case C_clone:
        if (!(a[0] & 0x10000))
            add_kid(ret);
        break;
    case C_fork:
    case C_vfork:
        add_kid(ret);
        break;
    case C_wait4:
        for (int i = 0; i < W.nkids; i++)
            if (W.kids[i] == ret) {
                W.kids[i] = W.kids[--W.nkids];
                break;
            }
        break;
    }
}

static int pick_call(struct rng *r)
{
    int x = (int)below(r, (uint64_t)total_weight);
    for (int i = 0; i < NCALLS; i++) {
        x -= table[i].weight;
        if (x < 0)
            return i;
    }
    return C_getpid;
}

static void trace_rec(const struct rec *e)
{
    char line[512];
    memcpy(line, "fuzz: T ", 8);
    size_t n = 8 + format_rec(line + 8, sizeof line - 9, W.w, e, 0);
    line[n++] = '\n';
    raw3(SYS_write, TRACE_FD, line, n);
}

/* One fuzz call: call `i` of this generation (sub 0), or the sub-th of a child it forked. */
static void do_one(uint64_t i, uint64_t sub)
{
    struct rng r = stream(seed_global, (uint64_t)W.w, W.gen, i, sub);
    int id = pick_call(&r);
    if (W.child && (table[id].flags & F_CHILD_NO))
        id = C_getpid;
    struct call_args c;
    memset(&c, 0, sizeof c);
    gen_call(id, &r, &c);
    bound_call(id, &c);
    if (!reef)
        net_guard(id, &c);
    atomic_fetch_add(&W.s->calls, 1);
    uint64_t h = atomic_fetch_add(&W.s->head, 1);
    struct rec *e = &W.s->ring[h % RING];
    atomic_store(&e->state, 1);
    e->gen = W.gen;
    e->pid = W.pid;
    e->id = (uint32_t)id;
    e->i = i;
    e->sub = sub;
    e->nr = c.nr;
    memcpy(e->a, c.a, sizeof e->a);
    if (c.special == 1) {
        e->a[0] = (uint64_t)c.clone.flags;
        e->a[1] = (uint64_t)c.clone.newsp;
    }
    if (opt_trace)
        trace_rec(e);
    atomic_fetch_add(&W.s->made[id], 1);
    long ret = run_call(id, &c);
    if (!(ret < 0 && ret > -4096))
        atomic_fetch_add(&W.s->ok[id], 1);
    if (e->i == i && e->pid == W.pid) {
        e->ret = ret;
        atomic_store(&e->state, 2);
    }
    after_call(id, &c, ret);
}

static void child_body(uint64_t parent_i)
{
    raw2(SYS_arch_prctl, 0x1002, W.fs0);
    W.child = 1;
    W.pid = (int32_t)raw0(SYS_getpid);
    W.nkids = 0;
    struct rng r = stream(seed_global, (uint64_t)W.w, W.gen, parent_i, 1000);
    int n = 1 + (int)below(&r, 8);
    for (int k = 1; k <= n && atomic_load(&W.s->calls) < W.s->quota; k++)
        do_one(parent_i, (uint64_t)k);
    raw1(SYS_exit_group, 0);
}

/* ---- worker set-up ---- */

/* Pages of the buffer block: buffer, hole, read-only, none, edge (2), clone stack (4), alt
 * stack (4). */
#define BLOCK_PAGES (BUF_SIZE / PAGE + 1 + 1 + 1 + 2 + 4 + 4)

/* n pages at `hint` if the kernel agrees, else anywhere. */
static char *map_at(uint64_t hint, size_t n, int prot)
{
    void *p = mmap((void *)(uintptr_t)hint, n * PAGE, prot, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        raw1(SYS_exit_group, 120);
    return p;
}

static char *add_path(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int nstore;
static char *add_path(const char *fmt, ...)
{
    char *p = path_store[nstore++];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(p, sizeof path_store[0], fmt, ap);
    va_end(ap);
    return p;
}

/* The path tables of worker w (absolute names in DIR, the fixed ones, long ones). */
static void build_paths(int w)
{
    static const char *const own[] = {"f0", "f1", "f2", "d0", "d1", "d0/f0", "d0/d1", "s0",
                                      "s1", "n0", "n1", "d1/n0", "nonexistent/x", "f0/x"};
    static const char *const shared[] = {"f0", "f1", "d0", "d0/f0", "s0", "n0", "n1", "d1"};
    nstore = nrw = nro = ncap = 0;
    for (size_t i = 0; i < sizeof own / sizeof own[0]; i++) {
        rw_paths[nrw] = add_path("%s/w%d/%s", opt_dir, w, own[i]);
        if (own[i][0] == 'f' && !strchr(own[i], '/'))
            cap_paths[ncap++] = rw_paths[nrw];
        nrw++;
    }
    for (size_t i = 0; i < sizeof shared / sizeof shared[0]; i++) {
        rw_paths[nrw] = add_path("%s/shared/%s", opt_dir, shared[i]);
        if (shared[i][0] == 'f' && !strchr(shared[i], '/'))
            cap_paths[ncap++] = rw_paths[nrw];
        nrw++;
    }
    cap_paths[ncap++] = rw_paths[5]; /* w/d0/f0 */
    for (size_t i = 0; i < sizeof ro_fixed / sizeof ro_fixed[0]; i++)
        ro_paths[nro++] = ro_fixed[i];
    ro_paths[nro++] = add_path("%s", opt_dir);
    ro_paths[nro++] = shared_dir = add_path("%s/shared", opt_dir);
    ro_paths[nro++] = add_path("%s/w%d", opt_dir, w);
    ro_paths[nro++] = add_path("%s/shared/loop", opt_dir);
    ro_paths[nro++] = add_path("%s/shared/dangling", opt_dir);
    ro_paths[nro++] = add_path("%s/shared/loop/x", opt_dir);
    ro_paths[nro++] = add_path("//%s///shared/./d0/../f0", opt_dir);
    ro_paths[nro++] = add_path("%s/w%d/../shared/s0", opt_dir, w);
    /* A name of 300 bytes, a path of 4200 bytes, one of 4095 bytes through '..'. */
    int n = snprintf(long_name, sizeof long_name, "%s/", opt_dir);
    memset(long_name + n, 'x', 300);
    long_name[n + 300] = 0;
    n = snprintf(long_path, sizeof long_path, "%s/shared/", opt_dir);
    for (; n < 4200; n += 2)
        memcpy(long_path + n, "./", 2);
    long_path[n] = 0;
    n = snprintf(deep_path, sizeof deep_path, "%s/shared", opt_dir);
    while (n < 4095 - 10)
        n += snprintf(deep_path + n, sizeof deep_path - (size_t)n, "/d0/..");
    while (n < 4095 - 3)
        deep_path[n++] = '/';
    memcpy(deep_path + n, "f0", 3);
}

/* 127.0.0.1:port. */
static struct sockaddr_in loopback(uint16_t port)
{
    struct sockaddr_in sin;
    memset(&sin, 0, sizeof sin);
    sin.sin_family = AF_INET;
    sin.sin_port = htons(port);
    sin.sin_addr.s_addr = htonl(0x7f000001);
    return sin;
}

/* Binds fd to 127.0.0.1 and the worker's fixed port (if free), else any port; remembers the
 * port (learned ports: an ephemeral one). Returns the address. */
static struct sockaddr_in bind_loopback(int fd, int w)
{
    struct sockaddr_in sin = loopback(net_ports[w % (int)(sizeof net_ports / sizeof net_ports[0])]);
    socklen_t len = sizeof sin;
    if (bind(fd, (struct sockaddr *)&sin, sizeof sin) != 0) {
        sin.sin_port = 0;
        bind(fd, (struct sockaddr *)&sin, sizeof sin);
    }
    if (getsockname(fd, (struct sockaddr *)&sin, &len) != 0)
        sin.sin_port = 0;
    else if (sin.sin_port != 0 && !port_known(ntohs(sin.sin_port)))
        W.ports[W.nports++ % PORTS_MAX] = ntohs(sin.sin_port);
    return sin;
}

/* Sockets every generation starts with, so that the socket calls find some in every state:
 * a TCP listener (non-blocking) on a fixed port, a connection to it (the connecting end
 * non-blocking, the accepted one blocking) and one not accepted yet, two fresh TCP sockets (one non-blocking) and a
 * fresh UDP one, a UDP socket on a fixed port (non-blocking) and one connected to it
 * (blocking). Natively all on 127.0.0.1. */
static void setup_sockets(int w)
{
    int one = 1;
    int l = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    if (l >= 0) {
        setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        struct sockaddr_in sin = bind_loopback(l, w);
        int ok = sin.sin_port != 0 && listen(l, 8) == 0; /* never listen unbound (0.0.0.0) */
        add_fd(l);
        add_sk(l, SK_STREAM, ok ? SK_LISTEN : SK_BOUND, 1, ntohs(sin.sin_port));
        int c = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
        if (c >= 0) {
            int r = connect(c, (struct sockaddr *)&sin, sizeof sin);
            add_fd(c);
            add_sk(c, SK_STREAM, r == 0 ? SK_CONNECTED : SK_CONNECTING, 1, 0);
            struct pollfd pf = {c, POLLOUT, 0};
            poll(&pf, 1, 100);
            int a = accept4(l, NULL, NULL, 0);
            if (a >= 0) {
                add_fd(a);
                add_sk(a, SK_STREAM, SK_CONNECTED, 0, ntohs(sin.sin_port));
                set_sk_state(c, SK_CONNECTED);
            }
        }
        /* One more, left for the fuzzed accept calls to take. */
        c = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
        if (c >= 0) {
            int r = connect(c, (struct sockaddr *)&sin, sizeof sin);
            add_fd(c);
            add_sk(c, SK_STREAM, r == 0 ? SK_CONNECTED : SK_CONNECTING, 1, 0);
        }
    }
    for (int i = 0; i < 2; i++) { /* fresh ones: a non-blocking and a blocking one */
        int f = socket(AF_INET, SOCK_STREAM | (i ? 0 : SOCK_NONBLOCK), 0);
        add_fd(f);
        add_sk(f, SK_STREAM, SK_FRESH, !i, 0);
    }
    int f = socket(AF_INET, SOCK_DGRAM, 0);
    add_fd(f);
    add_sk(f, SK_DGRAM, SK_FRESH, 0, 0);
    int u = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK, 0);
    if (u >= 0) {
        struct sockaddr_in sin = bind_loopback(u, w);
        add_fd(u);
        add_sk(u, SK_DGRAM, SK_BOUND, 1, ntohs(sin.sin_port));
        int v = socket(AF_INET, SOCK_DGRAM, 0);
        if (v >= 0) {
            int r = connect(v, (struct sockaddr *)&sin, sizeof sin);
            add_fd(v);
            add_sk(v, SK_DGRAM, r == 0 ? SK_CONNECTED : SK_FRESH, 0, 0);
        }
    }
}

static void worker_setup(int w)
{
    W.w = w;
    W.s = &slots[w];
    W.gen = W.s->gen;
    W.child = 0;
    W.pid = (int32_t)raw0(SYS_getpid);
    W.nfds = W.nmaps = W.nkids = W.nsk = 0;
    W.nports = 0;
    W.mapped = 0;
    W.handled = 0;
    raw2(SYS_setpgid, 0, 0);
    if (!reef)
        prctl(PR_SET_PDEATHSIG, SIGKILL);
    /* Signals: everything unblocked, a no-op handler for those a random kill() would otherwise
     * end the worker with, SIGALRM (the watchdog's poke) interrupting calls. */
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = h_noop;
    for (int s = 1; s < 65; s++) {
        if (s == SIGKILL || s == SIGSTOP || s == SIGSEGV || s == SIGBUS || s == SIGILL ||
            s == SIGFPE || s == SIGTRAP || s == SIGABRT || s == SIGSYS)
            continue;
        sigaction(s, &sa, NULL);
    }
    signal(SIGPIPE, SIG_IGN);
    signal(SIGXFSZ, SIG_IGN);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    h_noop_addr = (uint64_t)(uintptr_t)&h_noop;
    h_exit_addr = (uint64_t)(uintptr_t)&h_exit;

    build_paths(w);
    /* Workers chmod and rename what they can reach (as nobody natively, a directory of mode 0
     * would lock every later generation out): repair the top of the tree first. */
    char dir[260];
    snprintf(dir, sizeof dir, "%s/w%d", opt_dir, w);
    chmod(opt_dir, 0755);
    chmod(shared_dir, 0755);
    if (mkdir(dir, 0755) != 0 && chmod(dir, 0755) != 0) {
        unlink(dir);
        mkdir(dir, 0755);
    }
    if (chdir(dir) != 0)
        raw1(SYS_exit_group, 121);
    mkdir("d0", 0755);
    int fd = open("f0", O_RDWR | O_CREAT, 0644);
    int null = open("/dev/null", O_RDWR);
    if (null < 0)
        raw1(SYS_exit_group, 122);
    for (int i = 0; i < 3; i++)
        dup2(null, i);
    close(null);

    /* Memory, far from the program, its stack and the supervisor's shared pages, so that most
     * of what the calls do to it leaves the worker alive: a 64 KiB buffer with an unmapped
     * page after it, a read-only page, a PROT_NONE page, a page whose last bytes are a path
     * without NUL before an unmapped page, a stack for clone and one for sigaltstack. The
     * argument area (where the worker builds iovecs, timespecs, frames) lies elsewhere. */
    char *block = map_at(0x200000000000ull, BLOCK_PAGES, PROT_READ | PROT_WRITE);
    W.buf = block;
    W.hole = W.buf + BUF_SIZE;
    W.ro = W.hole + PAGE;
    W.none = W.ro + PAGE;
    W.edge = W.none + PAGE;
    W.cstack = W.edge + 2 * PAGE;
    W.alt = W.cstack + 4 * PAGE;
    munmap(W.hole, PAGE);
    munmap(W.edge + PAGE, PAGE);
    struct rng r = stream(seed_global, (uint64_t)w, W.gen, ~0ull, 0);
    fill_random(&r, W.buf, BUF_SIZE);
    memcpy(W.ro, "/dev/null", 10);
    mprotect(W.ro, PAGE, PROT_READ);
    mprotect(W.none, PAGE, PROT_NONE);
    memset(W.edge, '/', PAGE);
    memcpy(W.edge + PAGE - 16, "tmp/fuzz/sharedf", 16);
    W.args = map_at(0x300000000000ull, ARGS_SIZE / PAGE, PROT_READ | PROT_WRITE);
    W.brk0 = (uint64_t)raw1(SYS_brk, 0);
    raw2(SYS_arch_prctl, 0x1003, &W.fs0);

    /* Descriptors: scratch files, directories, devices, a pipe. */
    add_fd(fd);
    add_fd(open(rw_paths[14 + 0], O_RDWR | O_CREAT, 0644)); /* shared/f0 */
    add_fd(open(".", O_RDONLY | O_DIRECTORY));
    add_fd(open(opt_dir, O_RDONLY | O_DIRECTORY));
    add_fd(open("/dev/null", O_RDWR));
    add_fd(open("/dev/zero", O_RDONLY));
    add_fd(open("/dev/urandom", O_RDONLY));
    add_fd(open("/proc/self/status", O_RDONLY));
    add_fd(open("/", O_RDONLY | O_DIRECTORY));
    int p[2];
    if (pipe2(p, O_NONBLOCK) == 0) {
        add_fd(p[0]);
        add_fd(p[1]);
    }
    if (pipe(p) == 0) {
        add_fd(p[0]);
        add_fd(p[1]);
    }
    setup_sockets(w);
}

static void worker_main(int w)
{
    worker_setup(w);
    for (W.i = 0; atomic_load(&W.s->calls) < W.s->quota; W.i++) {
        do_one(W.i, 0);
        if ((W.i & 31) == 31)
            reap_kids();
    }
    atomic_store(&W.s->done, 1);
    for (int i = 0; i < W.nkids; i++)
        raw2(SYS_kill, W.kids[i], SIGKILL);
    raw1(SYS_exit_group, 0);
}

/* ---- the supervisor ---- */

static struct {
    uint64_t seen;     /* calls at the last check */
    long long since;   /* when they last changed */
    long long poked;   /* last poke */
    long long killed;  /* when the watchdog killed the group (0: not) */
    int32_t pgid;      /* the running generation's group (0: none) */
    long long down_since; /* when fork started failing */
} sv[MAX_WORKERS];

static unsigned restarts, watchdogs, strays, pokes, escaped;
/* The supervisor's own copy of what it put in the slots. */
static uint64_t quota[MAX_WORKERS];
static uint32_t gens[MAX_WORKERS];
/* How generations ended: by signal number (1..64), exit status (index 65 + status / 32). */
static unsigned endings[65 + 8];

static void print_rec_line(const char *what, int w, const struct rec *e)
{
    char line[600];
    format_rec(line, sizeof line, w, e, 1);
    say("fuzz: %s %s\n", what, line);
}

/* The record to show for worker w: its own call still in the kernel, else the newest. */
static struct rec stuck_rec(int w)
{
    struct slot *s = &slots[w];
    uint64_t h = atomic_load(&s->head);
    for (uint64_t k = h; k > 0 && k + RING > h; k--) {
        struct rec e = s->ring[(k - 1) % RING];
        if (e.state == 1 && e.pid == sv[w].pgid)
            return e;
    }
    return s->ring[(h ? h - 1 : 0) % RING];
}

static void print_last(int w)
{
    struct slot *s = &slots[w];
    uint64_t h = atomic_load(&s->head);
    if (h == 0)
        return;
    struct rec e = s->ring[(h - 1) % RING];
    print_rec_line("last", w, &e);
}

static void print_rings(void)
{
    for (int w = 0; w < opt_workers; w++) {
        struct slot *s = &slots[w];
        uint64_t h = atomic_load(&s->head);
        for (uint64_t k = h > RING ? h - RING : 0; k < h; k++) {
            struct rec e = s->ring[k % RING];
            print_rec_line("ring", w, &e);
        }
    }
}

/* For a /proc entry `name` of another process than this one, reads its /proc/PID/stat line
 * (newline cut) into `line` and returns the pid; 0 for anything else. */
static long read_stat(const char *name, char *line, size_t size)
{
    char *end;
    long pid = strtol(name, &end, 10);
    if (*end || pid <= 0 || pid == getpid())
        return 0;
    char path[64];
    snprintf(path, sizeof path, "/proc/%ld/stat", pid);
    int fd = open(path, O_RDONLY);
    if (fd < 0)
        return 0;
    ssize_t n = read(fd, line, size - 1);
    close(fd);
    if (n <= 0)
        return 0;
    line[n] = 0;
    line[strcspn(line, "\n")] = 0;
    return pid;
}

/* Prints `fuzz: left STAT` for every process but this one (from /proc/PID/stat). */
static void print_processes(void)
{
    DIR *d = opendir("/proc");
    if (!d)
        return;
    struct dirent *de;
    char line[256];
    while ((de = readdir(d)) != NULL)
        if (read_stat(de->d_name, line, sizeof line) > 0)
            say("fuzz: left %s\n", line);
    closedir(d);
}

/* Reef only (the supervisor is init there, every other process descends from it): SIGKILLs
 * the processes that are in no running worker's group (all of them with `all`). A worker or
 * child may leave its group (setpgid() into another existing group; until issue 11, Reef also
 * let it name a group that did not exist), and the supervisor's kill(-pgid) would no longer
 * reach it. Returns how many. */
static unsigned sweep(int all)
{
    unsigned n = 0;
    DIR *d = opendir("/proc");
    if (!d)
        return 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        char line[256];
        long pid = read_stat(de->d_name, line, sizeof line);
        if (pid <= 1)
            continue;
        /* pid (comm) state ppid pgid ...; comm has no spaces or ')' here. */
        char *p = strrchr(line, ')');
        char state;
        long ppid, pgid;
        if (!p || sscanf(p + 1, " %c %ld %ld", &state, &ppid, &pgid) != 3 || state == 'Z')
            continue;
        int known = churner && pid == churner;
        for (int w = 0; w < opt_workers && !all; w++)
            known |= sv[w].pgid != 0 && sv[w].pgid == pgid;
        if (!known && kill((pid_t)pid, SIGKILL) == 0)
            n++;
    }
    closedir(d);
    return n;
}

static void fail(const char *fmt, ...) __attribute__((noreturn, format(printf, 1, 2)));
static void fail(const char *fmt, ...)
{
    char msg[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    say("fuzz: FAIL %s (seed=%llu)\n", msg, (unsigned long long)opt_seed);
    print_rings();
    if (reef)
        print_processes();
    for (int w = 0; w < opt_workers; w++)
        if (sv[w].pgid)
            kill(-sv[w].pgid, SIGKILL);
    exit(1);
}

/* `fuzz: counts NAME=MADE/OK ...`: every call of the table the workers made (and how many
 * did not fail), a few lines. */
static void print_counts(void)
{
    char line[1024];
    int n = 0;
    for (int id = 0; id < NCALLS; id++) {
        unsigned long long made = 0, ok = 0;
        for (int w = 0; w < opt_workers; w++) {
            made += atomic_load(&slots[w].made[id]);
            ok += atomic_load(&slots[w].ok[id]);
        }
        if (!made)
            continue;
        if (n == 0)
            n = snprintf(line, sizeof line, "fuzz: counts");
        n += snprintf(line + n, sizeof line - (size_t)n, " %s=%llu/%llu", table[id].name, made, ok);
        if (n > 900) {
            say("%s\n", line);
            n = 0;
        }
    }
    if (n > 0)
        say("%s\n", line);
}

static int start_worker(int w)
{
    struct slot *s = &slots[w];
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0)
        worker_main(w);
    setpgid(pid, pid); /* also in the child; whichever runs first */
    atomic_store(&s->pid, pid);
    sv[w].pgid = pid;
    sv[w].seen = atomic_load(&s->calls);
    sv[w].since = now_ns();
    sv[w].poked = 0;
    sv[w].killed = 0;
    return 0;
}

static int worker_of(pid_t pid)
{
    for (int w = 0; w < opt_workers; w++)
        if (sv[w].pgid == pid)
            return w;
    return -1;
}

/* Removes a scratch tree (making directories writable first: workers chmod them). */
static void remove_tree(const char *path, int depth)
{
    struct stat st;
    if (lstat(path, &st) != 0)
        return;
    if (!S_ISDIR(st.st_mode) || depth > 20) {
        unlink(path);
        return;
    }
    chmod(path, 0700);
    DIR *d = opendir(path);
    if (d) {
        struct dirent *de;
        char sub[4200];
        while ((de = readdir(d)) != NULL) {
            if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
                continue;
            snprintf(sub, sizeof sub, "%s/%s", path, de->d_name);
            remove_tree(sub, depth + 1);
        }
        closedir(d);
    }
    rmdir(path);
}

static void write_file(const char *path, size_t n)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) {
        say("fuzz: error: cannot create %s: %s\n", path, strerror(errno));
        exit(2);
    }
    char block[512];
    for (size_t i = 0; i < sizeof block; i++)
        block[i] = (char)('a' + i % 26);
    for (size_t done = 0; done < n; done += sizeof block)
        if (write(fd, block, sizeof block) < 0)
            break;
    close(fd);
}

static void make_tree(void)
{
    char p[300];
    remove_tree(opt_dir, 0);
    if (mkdir(opt_dir, 0755) != 0) {
        say("fuzz: error: cannot create %s: %s\n", opt_dir, strerror(errno));
        exit(2);
    }
    snprintf(p, sizeof p, "%s/shared", opt_dir);
    mkdir(p, 0755);
    snprintf(p, sizeof p, "%s/shared/d0", opt_dir);
    mkdir(p, 0755);
    snprintf(p, sizeof p, "%s/shared/f0", opt_dir);
    write_file(p, 4096);
    snprintf(p, sizeof p, "%s/shared/f1", opt_dir);
    write_file(p, 100);
    snprintf(p, sizeof p, "%s/shared/s0", opt_dir);
    symlink("f0", p);
    snprintf(p, sizeof p, "%s/shared/loop", opt_dir);
    symlink("loop", p);
    snprintf(p, sizeof p, "%s/shared/dangling", opt_dir);
    symlink("nonexistent", p);
    for (int w = 0; w < opt_workers; w++) {
        snprintf(p, sizeof p, "%s/w%d", opt_dir, w);
        mkdir(p, 0755);
        snprintf(p, sizeof p, "%s/w%d/d0", opt_dir, w);
        mkdir(p, 0755);
        snprintf(p, sizeof p, "%s/w%d/f0", opt_dir, w);
        write_file(p, 8192);
        snprintf(p, sizeof p, "%s/w%d/s0", opt_dir, w);
        symlink("f0", p);
    }
}

/* Shared pages at `hint`, far from everything else, with nothing mapped around them: the futex
 * page is in the workers' pointer pool, and a call that writes past its end must meet an
 * unmapped page, not the slots. (Guard pages would not do: a worker's mprotect may open them.)
 * The hints are no powers of two, which the integer generator makes. */
static void *shared_pages(uint64_t hint, size_t n)
{
    char *p = mmap((void *)(uintptr_t)hint, n * PAGE, PROT_READ | PROT_WRITE,
                   MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
        say("fuzz: error: cannot map shared memory: %s\n", strerror(errno));
        exit(2);
    }
    return p;
}

/* ---- the core churner (Reef, two cores or more) ---- */

static atomic_int *churn_stop;

/* Stops, starts, parks and unparks cores 1..ncores-1 (parked on any core) at random, 2 ms
 * apart, and restarts them in the real-time image or the boot one (REEF_CORE_UPDATE), until
 * told to stop; then brings every core back online. Exit status 0, or 3 after an answer no
 * call documents (said on the console). */
static void churn(uint64_t seed, int ncores)
{
    static const char *const names[] = {"stop", "start", "park", "unpark", "update"};
    static const char *const images[] = {"/boot/reef-rt", "reef"};
    struct rng r = {mix(seed ^ 0xc0de)};
    unsigned long tried[5] = {0}, done[5] = {0};
    while (!atomic_load(churn_stop)) {
        int op = (int)below(&r, 5);
        unsigned core = 1 + (unsigned)below(&r, (uint64_t)ncores - 1);
        long arg = (long)below(&r, (uint64_t)ncores);
        unsigned host = (unsigned)arg;
        if (op == REEF_CORE_UPDATE)
            arg = (long)images[below(&r, 2)];
        long e = syscall(SYS_reef_core_ctl, (long)op, (long)core, arg);
        tried[op]++;
        if (e == 0)
            done[op]++;
        else if (errno != EALREADY && errno != EBUSY && errno != EINVAL && errno != EDEADLK &&
                 errno != EINTR) {
            say("fuzz: churn: FAIL %s of core %u (host %u): %s\n", names[op], core, host,
                strerror(errno));
            _exit(3);
        }
        struct timespec ts = {0, 2000000};
        nanosleep(&ts, NULL);
    }
    for (unsigned c = 1; c < (unsigned)ncores; c++) {
        struct reef_core_info i;
        if (reef_core_info(c, &i) != 0)
            continue;
        int e = i.state == REEF_CORE_PARKED    ? reef_core_unpark(c)
                : i.state == REEF_CORE_STOPPED ? reef_core_start(c)
                                               : 0;
        if (e != 0) {
            say("fuzz: churn: FAIL bringing core %u back online: %s\n", c, strerror(-e));
            _exit(3);
        }
    }
    say("fuzz: churn: stop %lu/%lu start %lu/%lu park %lu/%lu unpark %lu/%lu update %lu/%lu "
        "(done/tried); every core online again\n",
        done[0], tried[0], done[1], tried[1], done[2], tried[2], done[3], tried[3], done[4],
        tried[4]);
    _exit(0);
}

/* Starts the core churner while still root. */
static void start_churner(int ncores)
{
    if (!reef || getuid() != 0 || ncores < 2)
        return;
    churn_stop = shared_pages(0x134700000000ull, 1);
    churner = fork();
    if (churner < 0) {
        say("fuzz: error: cannot fork the core churner: %s\n", strerror(errno));
        exit(2);
    }
    if (churner == 0) {
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        churn(opt_seed, ncores);
    }
}

/* Tells the churner to stop and waits until every core is back online. */
static void stop_churner(void)
{
    if (!churner)
        return;
    atomic_store(churn_stop, 1);
    int st;
    if (waitpid(churner, &st, 0) != churner || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
        fail("the core churner ended badly (wait status 0x%x)", st);
    churner = 0;
}

static void drop_root(void)
{
    if (getuid() != 0)
        return;
    if (setgroups(0, NULL) != 0 || setgid(65534) != 0 || setuid(65534) != 0 || getuid() == 0) {
        say("fuzz: error: running as root and cannot become nobody: refusing\n");
        exit(2);
    }
    say("fuzz: running as root: now uid 65534 (nobody)\n");
}

static void usage(void)
{
    say("usage: fuzz --calls N [--seed S] [--workers W] [--trace] [--verbose] [--hb-ms MS] [--dir DIR]\n");
    exit(2);
}

static uint64_t parse_u64(const char *s)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 0);
    if (errno || *end || end == s || *s == '-')
        usage();
    return v;
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IONBF, 0);
    int have_calls = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--trace")) {
            opt_trace = 1;
            continue;
        }
        if (!strcmp(a, "--verbose")) {
            opt_verbose = 1;
            continue;
        }
        if (i + 1 >= argc)
            usage();
        const char *v = argv[++i];
        if (!strcmp(a, "--calls")) {
            opt_calls = parse_u64(v);
            have_calls = 1;
        } else if (!strcmp(a, "--seed")) {
            opt_seed = parse_u64(v);
        } else if (!strcmp(a, "--workers")) {
            opt_workers = (int)parse_u64(v);
            if (opt_workers < 1 || opt_workers > MAX_WORKERS)
                usage();
        } else if (!strcmp(a, "--hb-ms")) {
            opt_hb_ms = (long)parse_u64(v);
            if (opt_hb_ms < 10)
                usage();
        } else if (!strcmp(a, "--dir")) {
            if (strlen(v) >= 100 || v[0] != '/')
                usage();
            snprintf(opt_dir, sizeof opt_dir, "%s", v);
        } else {
            usage();
        }
    }
    /* Required, so that a copy of this program exec'd by a worker does nothing. */
    if (!have_calls)
        usage();
    seed_global = opt_seed;
    reef = on_reef();
    start_churner((int)sysconf(_SC_NPROCESSORS_ONLN));
    drop_root();
    if (!opt_dir[0])
        snprintf(opt_dir, sizeof opt_dir, reef ? "/tmp/fuzz" : "/tmp/fuzz.%d", (int)getpid());
    if (!opt_workers) {
        int cpus[256];
        opt_workers = allowed_cpus(cpus, 256);
        if (opt_workers > MAX_WORKERS)
            opt_workers = MAX_WORKERS;
    }
    for (int i = 0; i < NCALLS; i++)
        total_weight += table[i].weight;

    /* The supervisor takes no signal a worker might send by mistake (workers unblock them). */
    sigset_t all;
    sigfillset(&all);
    sigprocmask(SIG_BLOCK, &all, NULL);
    if (!reef)
        prctl(PR_SET_CHILD_SUBREAPER, 1);

    slots = shared_pages(0x134500000000ull, (sizeof(struct slot) * (size_t)opt_workers + PAGE - 1) / PAGE);
    futex_page = shared_pages(0x134600000000ull, 1);
    for (int w = 0; w < opt_workers; w++)
        slots[w].quota = quota[w] = opt_calls / (uint64_t)opt_workers +
                                    ((uint64_t)w < opt_calls % (uint64_t)opt_workers ? 1 : 0);
    make_tree();
    if (opt_trace && dup2(1, TRACE_FD) != TRACE_FD) {
        say("fuzz: error: cannot make the trace descriptor: %s\n", strerror(errno));
        return 2;
    }
    long free0 = reef ? reef_free_bytes() : -1;
    say("fuzz: start seed=%llu calls=%llu workers=%d dir=%s trace=%d reef=%d free=%ldMiB "
        "slots=%p futex=%p\n",
        (unsigned long long)opt_seed, (unsigned long long)opt_calls, opt_workers, opt_dir,
        opt_trace, reef, free0 >> 20, (void *)slots, (void *)futex_page);

    long long t0 = now_ns(), last_hb = t0, last_sweep = t0;
    uint64_t last_hb_calls = 0;
    for (int w = 0; w < opt_workers; w++) {
        sv[w].pgid = 0;
        if (slots[w].quota == 0)
            atomic_store(&slots[w].done, 1);
    }
    for (;;) {
        /* Reap: workers (restart them unless done) and strays (orphans, CLONE_PARENT children). */
        int st;
        pid_t pid;
        while ((pid = waitpid(-1, &st, WNOHANG | __WALL)) > 0) {
            if (churner && pid == churner)
                fail("the core churner ended before the campaign (wait status 0x%x)", st);
            int w = worker_of(pid);
            if (w < 0) {
                strays++;
                continue;
            }
            kill(-pid, SIGKILL); /* what is left of its group */
            if (WIFSIGNALED(st))
                endings[WTERMSIG(st) & 63]++;
            else
                endings[65 + (WEXITSTATUS(st) & 255) / 32]++;
            if (opt_verbose && !atomic_load(&slots[w].done)) {
                uint64_t h = atomic_load(&slots[w].head);
                struct rec e = slots[w].ring[(h ? h - 1 : 0) % RING];
                char line[600];
                format_rec(line, sizeof line, w, &e, 1);
                say("fuzz: ended %s: %s\n", line, describe_wait(st));
            }
            sv[w].pgid = 0;
            if (!atomic_load(&slots[w].done)) {
                slots[w].gen = ++gens[w];
                restarts++;
            }
        }
        /* No worker writes anything but its ring and counters, and no pointer it passes names
         * this memory: anything else changing it is the kernel's doing. */
        for (int w = 0; w < opt_workers; w++) {
            struct slot *s = &slots[w];
            uint64_t h = atomic_load(&s->head), c = atomic_load(&s->calls); /* h <= c */
            if (s->quota != quota[w] || s->gen != gens[w] || c > quota[w] + 1000 || h > c ||
                c - h > 64)
                fail("the supervisor's shared memory changed under it: slot %d quota=%llu "
                     "(was %llu) gen=%u (was %u) calls=%llu head=%llu",
                     w, (unsigned long long)s->quota, (unsigned long long)quota[w], s->gen,
                     gens[w], (unsigned long long)c, (unsigned long long)h);
        }
        long long now = now_ns();
        int running = 0;
        for (int w = 0; w < opt_workers; w++) {
            struct slot *s = &slots[w];
            if (atomic_load(&s->done) && !sv[w].pgid)
                continue;
            running++;
            if (!sv[w].pgid) {
                if (start_worker(w) != 0) {
                    if (!sv[w].down_since)
                        sv[w].down_since = now;
                    else if (now - sv[w].down_since > 10000000000ll)
                        fail("cannot fork worker %d for 10 s: %s", w, strerror(errno));
                } else {
                    sv[w].down_since = 0;
                }
                continue;
            }
            uint64_t c = atomic_load(&s->calls);
            if (c != sv[w].seen) {
                sv[w].seen = c;
                sv[w].since = now;
                sv[w].poked = 0;
                continue;
            }
            long long stalled = now - sv[w].since;
            if (sv[w].killed) {
                if (now - sv[w].killed > UNKILLABLE_NS) {
                    struct rec e = stuck_rec(w);
                    char line[600];
                    format_rec(line, sizeof line, w, &e, 1);
                    fail("worker %d (pid %d) still there %lld s after SIGKILL; last call: %s", w,
                         sv[w].pgid, (now - sv[w].killed) / 1000000000ll, line);
                }
            } else if (stalled > KILL_NS) {
                struct rec e = stuck_rec(w);
                char line[600];
                format_rec(line, sizeof line, w, &e, 1);
                say("fuzz: watchdog %s: no progress for %lld ms, SIGKILL\n", line,
                       stalled / 1000000);
                watchdogs++;
                kill(-sv[w].pgid, SIGKILL);
                sv[w].killed = now;
            } else if (stalled > POKE_NS && now - sv[w].poked > POKE_NS) {
                kill(-sv[w].pgid, SIGCONT);
                kill(sv[w].pgid, SIGALRM);
                sv[w].poked = now;
                pokes++;
                if (opt_verbose) {
                    struct rec e = stuck_rec(w);
                    print_rec_line("poke", w, &e);
                }
            }
        }
        if (running == 0)
            break;
        if (reef && now - last_sweep >= 2000000000ll) {
            escaped += sweep(0);
            last_sweep = now;
        }
        if (now - last_hb >= opt_hb_ms * 1000000ll) {
            uint64_t total = 0;
            for (int w = 0; w < opt_workers; w++)
                total += atomic_load(&slots[w].calls);
            double t = (double)(now - t0) / 1e9, dt = (double)(now - last_hb) / 1e9;
            long fr = reef ? reef_free_bytes() : -1;
            say("fuzz: hb t=%.1fs calls=%llu rate=%.0f/s restarts=%u watchdog=%u strays=%u "
                   "escaped=%u free=%ldMiB\n",
                   t, (unsigned long long)total, (double)(total - last_hb_calls) / dt, restarts,
                   watchdogs, strays, escaped, fr >> 20);
            for (int w = 0; w < opt_workers; w++)
                print_last(w);
            last_hb = now;
            last_hb_calls = total;
        }
        struct timespec ts = {0, 20000000};
        nanosleep(&ts, NULL);
    }
    /* Every worker is reaped; what is left (orphans out of their group) is killed and reaped. */
    long long end = now_ns();
    stop_churner();
    if (reef)
        escaped += sweep(1);
    for (;;) {
        pid_t pid = waitpid(-1, NULL, WNOHANG | __WALL);
        if (pid > 0) {
            strays++;
            continue;
        }
        if (pid < 0)
            break;
        if (now_ns() - end > UNKILLABLE_NS)
            fail("processes left %d s after every worker ended", (int)(UNKILLABLE_NS / 1000000000));
        struct timespec ts = {0, 20000000};
        nanosleep(&ts, NULL);
    }
    uint64_t total = 0;
    for (int w = 0; w < opt_workers; w++)
        total += atomic_load(&slots[w].calls);
    double t = (double)(now_ns() - t0) / 1e9;
    remove_tree(opt_dir, 0);
    char ends[1024];
    size_t n = (size_t)snprintf(ends, sizeof ends, "fuzz: generations ended:");
    for (int i = 1; i < 65 && n < sizeof ends; i++)
        if (endings[i])
            n += (size_t)snprintf(ends + n, sizeof ends - n, " %s=%u", strsignal(i), endings[i]);
    for (int i = 0; i < 8 && n < sizeof ends; i++)
        if (endings[65 + i])
            n += (size_t)snprintf(ends + n, sizeof ends - n, " exit%d-%d=%u", i * 32, i * 32 + 31,
                                  endings[65 + i]);
    say("%s\n", ends);
    print_counts();
    long free1 = reef ? reef_free_bytes() : -1;
    say("fuzz: done calls=%llu seed=%llu workers=%d restarts=%u watchdog=%u strays=%u "
           "escaped=%u time=%.1fs rate=%.0f/s free=%ldMiB->%ldMiB\n",
           (unsigned long long)total, (unsigned long long)opt_seed, opt_workers, restarts,
           watchdogs, strays, escaped, t, (double)total / t, free0 >> 20, free1 >> 20);
    return 0;
}
