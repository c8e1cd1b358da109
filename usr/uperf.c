/*
 * uperf: user-level micro-benchmarks for Reef (a measurement program, not a test: it prints
 * numbers, never PASS/FAIL). One mode per run:
 *
 *   uperf [-b SECONDS] [-n kernel|server|direct] MODE ARGS...
 *
 *   uperf null  [ITERS [REPS]]      syscall(SYS_getppid) in a loop: ns per call
 *   uperf spawn [ITERS [REPS]]      fork + execve(self, "noop") + waitpid: us per round
 *   uperf pspawn [ITERS [REPS]]     posix_spawn(self, "noop") + waitpid: us per round
 *   uperf run ITERS REPS PROG ARG...  fork + execve(PROG, ARG...) + waitpid, the program must
 *                                   exit 0: ms per run (Debian programs' start-up and work)
 *   uperf vmops N [OPS [REPS]]      N threads (0: one per allowed core), each pinned to its own
 *                                   core and mapping in its own region, each doing OPS rounds of
 *                                   mmap(4 KiB, MAP_POPULATE) + write + munmap: total ops/s
 *   uperf vmlat N [OPS]             the same operations, one repetition, each operation timed
 *                                   on its own (clock_gettime before and after, into an array
 *                                   allocated and touched before the start): p1/p50/p99 of the
 *                                   per-operation latency of all threads together, in us
 *   uperf msgrtt [ITERS [REPS]]     round trips of a 64-byte message over reef_msg.h channels
 *                                   (lib/msg's ring, futex wake-ups) in MAP_SHARED pages between
 *                                   this process on its first allowed CPU and a child on its
 *                                   last: ns per round trip
 *   uperf msgtput [ITERS [REPS]]    the same channel one way, ITERS messages per repetition,
 *                                   acknowledged at the end: messages per second
 *   uperf mboxrtt [ITERS [REPS]]    msgrtt through a kernel mailbox: on Reef the child creates a
 *                                   mailbox, the parent connects to it, and the messages go
 *                                   through the connection's channels (the same ring; a sender
 *                                   wakes a sleeping owner through the kernel); elsewhere it is
 *                                   msgrtt
 *   uperf mboxtput [ITERS [REPS]]   msgtput through a kernel mailbox, the same way
 *   uperf pipertt [ITERS [REPS]]    round trips of one byte over two pipes between the same two
 *                                   processes (the reference for msgrtt): ns per round trip
 *   uperf sockrtt [ITERS [REPS]]    pipertt over one AF_UNIX stream socket pair instead of two
 *                                   pipes (the other reference)
 *   uperf tcprtt [ITERS [REPS]]     pipertt over a TCP connection on 127.0.0.1 (TCP_NODELAY):
 *                                   the parent listens, the child connects after the fork (on
 *                                   Reef each end is in its own process's stack instance)
 *   uperf echortt ADDR:PORT SIZE [ITERS [REPS]]
 *                                   NetPIPE's ping-pong through the NIC: SIZE bytes sent to an
 *                                   echo server at ADDR:PORT (cargo xtask bench runs one on the
 *                                   host, 10.0.2.2 from the guest) over one TCP connection
 *                                   (TCP_NODELAY) and read back: ns per round trip. With
 *                                   `-n NETMODE`, on Reef the connection's stack instance is in
 *                                   that network mode (LibrettOS): `kernel` (the kernel's
 *                                   switch, as without -n), `server` (uperf starts the network
 *                                   server first: `fleet start net --cores 1 /bin/netd`, on one
 *                                   core `--timeshare --cores 0`, then `netctl wait 30`, so the
 *                                   instance joins server mode) or `direct` (library mode: the
 *                                   instance is moved to a NIC of its own with
 *                                   reef_net_mode(getpid(), REEF_NET_DIRECT) after socket() and
 *                                   before connect(), so the connection has the instance's own
 *                                   address; the machine needs a second NIC). After the
 *                                   measurement uperf prints its instance's line of
 *                                   /proc/reef/net (`uperf: net instance mode=...`) and fails
 *                                   unless the mode is NETMODE's. Elsewhere (Linux's own stack)
 *                                   -n changes nothing and the line says mode=linux
 *   uperf sinktput ADDR:PORT [CHUNKS [REPS]]
 *                                   bulk TCP throughput through the NIC: per repetition, the
 *                                   byte count (8 bytes, big-endian) then CHUNKS x 64 KiB sent
 *                                   over one connection (TCP_NODELAY) to a sink server at
 *                                   ADDR:PORT (cargo xtask bench runs one on the host), which
 *                                   answers the count once it has read them all: MB/s
 *                                   (10^6 bytes) from the first byte sent to the answer. `-n`
 *                                   as for echortt
 *   uperf httpd PORT                busybox httpd (`-f -p PORT -h /tmp/www`, serving a 1 KiB
 *                                   /index.html that uperf writes) for load from outside:
 *                                   once it accepts on 127.0.0.1:PORT, uperf prints
 *                                   `uperf: httpd ready ...` and waits for a line `done` on
 *                                   stdin (cargo xtask bench runs ab from the host through a
 *                                   forwarded port meanwhile, then types it), then stops it.
 *                                   `-n` as for echortt, applied to httpd's stack instance (for
 *                                   `direct`: moved with reef_net_mode(httpd's pid) once it
 *                                   listens); its /proc/reef/net line is printed and checked
 *                                   before and after the load, then (on Reef) the counters
 *                                   of /proc/reef/net. No result line: the figures are the
 *                                   host's
 *   uperf -n server switch ADDR:PORT [SWITCHES]
 *                                   LibrettOS's dynamic switch (Reef only): a 64-byte
 *                                   ping-pong with the echo server at ADDR:PORT (as echortt)
 *                                   runs while a second thread moves uperf's stack instance
 *                                   to library mode and back to server mode, SWITCHES moves in
 *                                   all (default 20), 20 ms apart. The instance gets its own
 *                                   address before connecting (reef_net_mode's
 *                                   REEF_NET_ADDRESS). Result lines: switch-to-direct and switch-to-server
 *                                   (each reef_net_mode call, us) and switch-pause (per move,
 *                                   the longest round trip in flight during the call or the
 *                                   first one after it, us)
 *   uperf grantrtt [ITERS [REPS]]   msgrtt with 4 KiB by reference: the parent fills a page of a
 *                                   128-page MAP_SHARED pool and sends a grant message naming
 *                                   it; the child sums the page's words and answers the sum,
 *                                   which the parent checks. On Reef the child reaches the pool
 *                                   through a grant (reef_grant over a kernel connection, read
 *                                   only), elsewhere through the mapping fork gave it
 *   uperf granttput [ITERS [REPS]]  the same pages one way: the child sums them all and answers
 *                                   the total at the end: 4 KiB messages per second
 *   uperf corectl BUSY [ITERS]      stops and starts the last online core ITERS times (default
 *                                   20, after one untimed round) from core 0, timing each call:
 *                                   on Reef reef_core_ctl (reef_core.h), elsewhere Linux CPU
 *                                   hotplug (writing 0, then 1, to /sys/devices/system/cpu/
 *                                   cpuN/online). BUSY 1: a spinning process per core but the
 *                                   first, not pinned further, keeps the other cores busy
 *                                   meanwhile. Two result lines, core-stop and core-start, in
 *                                   us, one value per operation (reps = ITERS)
 *   uperf park BUSY [ROUNDS]        Reef only (Barrelfish/DC §4.6, Fig. 4b): a loop pinned to
 *                                   the last core reads CLOCK_MONOTONIC while core 0 parks
 *                                   that core on itself, 0.2 s later unparks it, 0.2 s later
 *                                   again, ROUNDS times (default 10). BUSY 1: a thread pinned
 *                                   to core 0 spins meanwhile (the host has work of its own,
 *                                   so the parked KCB gets turns). Per round: each call's
 *                                   time, the largest gap the loop saw overlapping each call
 *                                   (the pause a program sees), the largest while parked and
 *                                   while exclusive (gaps under 20 us are not kept: 0 means
 *                                   none longer); result lines park-call, unpark-call,
 *                                   park-pause, unpark-pause, parked-gap, exclusive-gap, in us
 *   uperf update IMAGE [ROUNDS]     Reef only (Barrelfish/DC §4.5): park's loop pinned to the
 *                                   last core while core 0 restarts that core in kernel image
 *                                   IMAGE (reef_core_update) and 0.2 s later back in the boot
 *                                   image, ROUNDS times (default 10): each call's time and the
 *                                   largest gap the loop saw overlapping it; result lines
 *                                   update-call, update-pause, update-back-call,
 *                                   update-back-pause, in us
 *   uperf jitter [SECONDS [IMAGE]]  a busy loop pinned to the last allowed CPU reads the TSC
 *                                   for SECONDS (default 10) and records the gap between
 *                                   consecutive reads (Barrelfish/DC §5.3's jitter): the
 *                                   largest, the 99.99th and 99.9th percentiles (each the upper
 *                                   end of its histogram bucket, 1/8 octave wide) and how many
 *                                   gaps passed 10 us, in us; on Linux under SCHED_FIFO with
 *                                   real-time throttling off where it is allowed (Reef has one
 *                                   scheduling class). The TSC is
 *                                   calibrated against CLOCK_MONOTONIC over 0.2 s first.
 *                                   With IMAGE, on Reef the core is first restarted in kernel
 *                                   image IMAGE with this process alone on it (reef_core_rt:
 *                                   the real-time /boot/reef-rt, Barrelfish/DC §5.3); Linux
 *                                   ignores it
 *   uperf noop                      exits 0 at once (the exec target of `spawn` and `pspawn`)
 *
 * Defaults: null 200000 x 7, spawn and pspawn 200 x 5, vmops 20000 per thread x 5, vmlat 20000
 * per thread, msgrtt, mboxrtt, pipertt, sockrtt, tcprtt and grantrtt 20000 x 5, msgtput, mboxtput and
 * granttput 200000 x 5, echortt 2000 x 5, sinktput 1024 chunks (64 MiB) x 5. Unless ITERS/OPS
 * is given, a warm-up run estimates the cost and the count is scaled down so that the timed repetitions of a mode take about the budget at most (15 s, or
 * `-b SECONDS`; Reef under TCG is much slower than Linux); the counts used are printed. A vmops
 * or vmlat repetition that runs past twice its share of the budget stops early and reports the
 * operations done (its line says "cut short").
 *
 * Output: progress lines start with `uperf:`; each measurement ends with one result line
 *
 *   uperf <name> threads=<n> <median> <unit> min=<v> median=<v> max=<v> iters=<i> reps=<r>
 *   uperf vmlat threads=<n> <p50> us/op p1=<v> p50=<v> p99=<v> ops=<total>
 *
 * Times come from clock_gettime(CLOCK_MONOTONIC). Errors print `uperf: error: ...` and exit 1.
 */
#define _GNU_SOURCE
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <sched.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "reef_core.h"
#include "reef_msg.h"

/* Timed repetitions of one mode should take at most about this long (seconds; `-b`). */
static double budget_s = 15.0;
/* Whether the kernel is Reef's (uname's release ends in -reef). */
static int on_reef;
/* `-n`: the network mode echortt's stack instance must be in on Reef (NULL: not checked). */
static const char *net_mode;
#define MAX_REPS 64
#define MAX_THREADS 256

static void die(const char *fmt, ...) __attribute__((noreturn, format(printf, 1, 2)));
static void die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    printf("uperf: error: ");
    vprintf(fmt, ap);
    printf("\n");
    va_end(ap);
    exit(1);
}

static double now_s(void)
{
    struct timespec ts;
    if (clock_gettime(CLOCK_MONOTONIC, &ts) != 0)
        die("clock_gettime(CLOCK_MONOTONIC): %s", strerror(errno));
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static long parse_count(const char *s, const char *what)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || *end || end == s || v < 0)
        die("bad %s %s", what, s);
    return v;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Prints the result line for `n` repetition values (the headline value is the median). */
static void report(const char *name, int threads, const char *unit, const char *fmt,
                   double *v, int n, long iters)
{
    double s[MAX_REPS];
    memcpy(s, v, sizeof(double) * n);
    qsort(s, n, sizeof(double), cmp_double);
    double median = n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
    char med[32], lo[32], hi[32];
    snprintf(med, sizeof med, fmt, median);
    snprintf(lo, sizeof lo, fmt, s[0]);
    snprintf(hi, sizeof hi, fmt, s[n - 1]);
    printf("uperf %s threads=%d %s %s min=%s median=%s max=%s iters=%ld reps=%d\n", name, threads,
           med, unit, lo, med, hi, iters, n);
}

/* The count that makes `reps` repetitions take about budget_s, given `per_op` seconds per
 * operation, but never more than `want` nor less than `floor`. */
static long scaled(long want, int reps, double per_op, long floor)
{
    if (per_op <= 0)
        return want;
    double fit = budget_s / (per_op * reps);
    if (fit >= (double)want)
        return want;
    long n = (long)fit;
    if (n < floor)
        n = floor;
    if (n > want)
        n = want;
    /* Round down to two significant digits, so the printed counts read well. */
    long unit = 1;
    while (n / unit >= 100)
        unit *= 10;
    return n / unit * unit;
}

static void get_counts(int argc, char **argv, int first, long *iters, int *reps, int *explicit_)
{
    *explicit_ = 0;
    if (argc > first) {
        *iters = parse_count(argv[first], "count");
        if (*iters < 1)
            die("the count must be at least 1");
        *explicit_ = 1;
    }
    if (argc > first + 1) {
        long r = parse_count(argv[first + 1], "repetition count");
        if (r < 1 || r > MAX_REPS)
            die("repetitions must be 1..%d", MAX_REPS);
        *reps = (int)r;
    }
    if (argc > first + 2)
        die("too many arguments");
}

/* ---- null ------------------------------------------------------------------------------- */

static double null_loop(long iters)
{
    double t0 = now_s();
    for (long i = 0; i < iters; i++)
        syscall(SYS_getppid);
    return now_s() - t0;
}

static void mode_null(int argc, char **argv)
{
    long iters = 200000;
    int reps = 7, explicit_;
    get_counts(argc, argv, 2, &iters, &reps, &explicit_);
    long warm = iters < 20000 ? iters : 20000;
    double w = null_loop(warm);
    printf("uperf: null warm-up: %ld calls, %.1f ns/call\n", warm, w / warm * 1e9);
    if (!explicit_)
        iters = scaled(iters, reps, w / warm, 1000);
    printf("uperf: null: %ld calls x %d repetitions\n", iters, reps);
    double v[MAX_REPS];
    for (int r = 0; r < reps; r++) {
        double t = null_loop(iters);
        v[r] = t / iters * 1e9;
        printf("uperf: null rep %d/%d: %.1f ns/call (%.3f s)\n", r + 1, reps, v[r], t);
    }
    report("null", 1, "ns/call", "%.1f", v, reps, iters);
}

/* ---- spawn ------------------------------------------------------------------------------ */

static const char *self;
static char **environment;
static int use_posix_spawn; /* pspawn: posix_spawn instead of fork + execve */

/* What a round starts: this program's `noop`, or `run`'s command. */
static char *noop_argv[3];
static char **target = noop_argv;

static pid_t start_noop(void)
{
    pid_t pid;
    if (use_posix_spawn) {
        int e = posix_spawn(&pid, target[0], NULL, NULL, target, environment);
        if (e)
            die("posix_spawn(%s): %s", target[0], strerror(e));
        return pid;
    }
    pid = fork();
    if (pid < 0)
        die("fork: %s", strerror(errno));
    if (pid == 0) {
        execve(target[0], target, environment);
        _exit(127);
    }
    return pid;
}

static void spawn_once(void)
{
    pid_t pid = start_noop();
    int st;
    pid_t w;
    while ((w = waitpid(pid, &st, 0)) == -1 && errno == EINTR)
        ;
    if (w != pid)
        die("waitpid(%d) returned %d: %s", (int)pid, (int)w, strerror(errno));
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
        die("child %d did not exit 0 (wait status 0x%x; 127: execve of %s failed)", (int)pid, st,
            target[0]);
}

static double spawn_loop(long iters)
{
    double t0 = now_s();
    for (long i = 0; i < iters; i++)
        spawn_once();
    return now_s() - t0;
}

/* `spawn` (fork + execve) or `pspawn` (posix_spawn), named `name`. */
static void mode_spawn(int argc, char **argv, const char *name)
{
    long iters = 200;
    int reps = 5, explicit_;
    get_counts(argc, argv, 2, &iters, &reps, &explicit_);
    long warm = iters < 20 ? iters : 20;
    double w = spawn_loop(warm);
    printf("uperf: %s warm-up: %ld rounds of %s, %.1f us/round\n", name, warm, self,
           w / warm * 1e6);
    if (!explicit_)
        iters = scaled(iters, reps, w / warm, 10);
    printf("uperf: %s: %ld rounds x %d repetitions\n", name, iters, reps);
    double v[MAX_REPS];
    for (int r = 0; r < reps; r++) {
        double t = spawn_loop(iters);
        v[r] = t / iters * 1e6;
        printf("uperf: %s rep %d/%d: %.1f us/round (%.3f s)\n", name, r + 1, reps, v[r], t);
    }
    report(name, 1, "us/round", "%.1f", v, reps, iters);
}

/* `run ITERS REPS PROG ARG...`: a command started and waited for, ITERS times a repetition,
 * after one run to warm up (its pages, QEMU's translations). */
static void mode_run(int argc, char **argv)
{
    if (argc < 5)
        die("usage: uperf run ITERS REPS PROGRAM [ARG...]");
    long iters = parse_count(argv[2], "count");
    long reps = parse_count(argv[3], "repetition count");
    if (iters < 1 || reps < 1 || reps > MAX_REPS)
        die("the count must be at least 1 and repetitions 1..%d", MAX_REPS);
    target = argv + 4;
    double w = spawn_loop(1);
    printf("uperf: run warm-up: %s, %.1f ms\n", target[0], w * 1e3);
    double v[MAX_REPS];
    for (int r = 0; r < reps; r++) {
        double t = spawn_loop(iters);
        v[r] = t / iters * 1e3;
        printf("uperf: run rep %d/%ld: %.1f ms/run (%.3f s)\n", r + 1, reps, v[r], t);
    }
    report("run", 1, "ms/run", "%.1f", v, (int)reps, iters);
}

/* ---- vmops ------------------------------------------------------------------------------ */

struct worker {
    pthread_t thread;
    int index, cpu, pinned_cpu;
    long done; /* operations finished in the current round */
    double start, end;
    double *lat; /* vmlat: each operation's time in seconds, for the round's operations */
    char pad[64];
};

static struct worker workers[MAX_THREADS];
static int nthreads;
static pthread_barrier_t go, done;
static volatile long round_ops; /* operations per thread in the current round */
static volatile double round_deadline; /* threads stop early at this time (now_s()) */
static volatile int quit;

/* The start of thread i's own part of the address space (a hint; mmap may place it elsewhere). */
static uintptr_t region_of(int i)
{
    return (uintptr_t)0x100000000000ull + (uintptr_t)i * 0x40000000ull;
}

static void *vm_worker(void *arg)
{
    struct worker *me = arg;
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(me->cpu, &set);
    int e = pthread_setaffinity_np(pthread_self(), sizeof set, &set);
    if (e)
        die("pthread_setaffinity_np(cpu %d): %s", me->cpu, strerror(e));
    me->pinned_cpu = sched_getcpu();
    void *hint = (void *)region_of(me->index);
    for (;;) {
        pthread_barrier_wait(&go);
        if (quit)
            return NULL;
        long ops = round_ops, i;
        double deadline = round_deadline;
        me->start = now_s();
        double *lat = me->lat;
        for (i = 0; i < ops; i++) {
            if (i % 64 == 63 && now_s() > deadline)
                break;
            double t0 = lat ? now_s() : 0;
            char *p = mmap(hint, 4096, PROT_READ | PROT_WRITE,
                           MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
            if (p == MAP_FAILED)
                die("thread %d: mmap: %s (after %ld operations)", me->index, strerror(errno), i);
            p[0] = 1;
            if (munmap(p, 4096) != 0)
                die("thread %d: munmap(%p): %s", me->index, (void *)p, strerror(errno));
            if (lat)
                lat[i] = now_s() - t0;
        }
        me->end = now_s();
        me->done = i;
        pthread_barrier_wait(&done);
    }
}

/* One round: every thread does `ops` operations, or fewer if `cap` seconds pass first; returns
 * the wall time from the first start to the last end and the operations done in `*total`. */
static double vm_round(long ops, double cap, long *total)
{
    round_ops = ops;
    round_deadline = now_s() + cap;
    pthread_barrier_wait(&go);
    pthread_barrier_wait(&done);
    double first = workers[0].start, last = workers[0].end;
    *total = 0;
    for (int i = 0; i < nthreads; i++)
        *total += workers[i].done;
    for (int i = 1; i < nthreads; i++) {
        if (workers[i].start < first)
            first = workers[i].start;
        if (workers[i].end > last)
            last = workers[i].end;
    }
    return last - first;
}

/* Starts `want` pinned threads (0: one per allowed core), thread i on the i-th allowed cpu. */
static void vm_start(long want)
{
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) != 0)
        die("sched_getaffinity: %s", strerror(errno));
    int cpus[CPU_SETSIZE], ncpu = 0;
    for (int c = 0; c < CPU_SETSIZE; c++)
        if (CPU_ISSET(c, &set))
            cpus[ncpu++] = c;
    if (ncpu == 0)
        die("sched_getaffinity gave no cpu");
    nthreads = want == 0 ? ncpu : (int)want;
    if (nthreads > MAX_THREADS)
        die("at most %d threads", MAX_THREADS);
    if (nthreads > ncpu)
        printf("uperf: note: %d threads on %d cpus: some share a core\n", nthreads, ncpu);

    if (pthread_barrier_init(&go, NULL, nthreads + 1) ||
        pthread_barrier_init(&done, NULL, nthreads + 1))
        die("pthread_barrier_init failed");
    for (int i = 0; i < nthreads; i++) {
        workers[i].index = i;
        workers[i].cpu = cpus[i % ncpu];
        int e = pthread_create(&workers[i].thread, NULL, vm_worker, &workers[i]);
        if (e)
            die("pthread_create %d: %s", i, strerror(e));
    }
}

/* The warm-up round of `warm` operations per thread; returns the seconds per operation per
 * thread. */
static double vm_warm_up(const char *name, long warm)
{
    long total;
    double w = vm_round(warm, budget_s, &total);
    printf("uperf: %s threads:", name);
    for (int i = 0; i < nthreads; i++)
        printf(" %d@cpu%d", i, workers[i].pinned_cpu);
    printf("\n");
    printf("uperf: %s warm-up: %ld ops, %.0f ops/s total\n", name, total, (double)total / w);
    return w * nthreads / total;
}

static void vm_stop(void)
{
    quit = 1;
    pthread_barrier_wait(&go);
    for (int i = 0; i < nthreads; i++)
        pthread_join(workers[i].thread, NULL);
}

static void mode_vmops(int argc, char **argv)
{
    if (argc < 3)
        die("usage: uperf vmops N [OPS [REPS]] (N = 0: one thread per allowed core)");
    long want = parse_count(argv[2], "thread count");
    long iters = 20000, total;
    int reps = 5, explicit_;
    get_counts(argc, argv, 3, &iters, &reps, &explicit_);
    vm_start(want);
    double per_op = vm_warm_up("vmops", iters < 200 ? iters : 200);
    if (!explicit_)
        iters = scaled(iters, reps, per_op, 100);
    /* A repetition that runs past twice its share of the budget is cut short (the kernel's speed
     * can change during a run); its rate counts the operations done until then. */
    double cap = explicit_ ? 1e9 : 2 * budget_s / reps;
    printf("uperf: vmops: %d threads x %ld ops x %d repetitions", nthreads, iters, reps);
    if (!explicit_)
        printf(" (a repetition stops after %.0f s)", cap);
    printf("\n");
    double v[MAX_REPS];
    for (int r = 0; r < reps; r++) {
        double t = vm_round(iters, cap, &total);
        v[r] = (double)total / t;
        printf("uperf: vmops rep %d/%d: %.0f ops/s (%ld ops in %.3f s, %.2f us/op per thread)%s\n",
               r + 1, reps, v[r], total, t, t * nthreads / total * 1e6,
               total < iters * nthreads ? " (cut short)" : "");
    }
    vm_stop();
    report("vmops", nthreads, "ops/s", "%.0f", v, reps, iters);
}

/* The value at quantile q of the sorted values s[0..n): the one at index floor(q * (n - 1)). */
static double quantile(const double *s, long n, double q)
{
    return s[(long)(q * (double)(n - 1))];
}

static void mode_vmlat(int argc, char **argv)
{
    if (argc < 3 || argc > 4)
        die("usage: uperf vmlat N [OPS] (N = 0: one thread per allowed core)");
    long want = parse_count(argv[2], "thread count");
    long iters = 20000, total;
    int reps = 1, explicit_;
    get_counts(argc, argv, 3, &iters, &reps, &explicit_);
    vm_start(want);
    double per_op = vm_warm_up("vmlat", iters < 200 ? iters : 200);
    if (!explicit_)
        iters = scaled(iters, 1, per_op, 100);
    for (int i = 0; i < nthreads; i++) {
        workers[i].lat = malloc(sizeof(double) * (size_t)iters);
        if (!workers[i].lat)
            die("cannot allocate %ld latencies", iters);
        memset(workers[i].lat, 0, sizeof(double) * (size_t)iters);
    }
    double cap = explicit_ ? 1e9 : 2 * budget_s;
    printf("uperf: vmlat: %d threads x %ld ops, each timed", nthreads, iters);
    if (!explicit_)
        printf(" (stops after %.0f s)", cap);
    printf("\n");
    double t = vm_round(iters, cap, &total);
    vm_stop();
    printf("uperf: vmlat: %ld ops in %.3f s%s\n", total, t,
           total < iters * nthreads ? " (cut short)" : "");
    double *all = malloc(sizeof(double) * (size_t)total);
    if (!all)
        die("cannot allocate %ld latencies", total);
    long n = 0;
    for (int i = 0; i < nthreads; i++) {
        memcpy(all + n, workers[i].lat, sizeof(double) * (size_t)workers[i].done);
        n += workers[i].done;
    }
    qsort(all, (size_t)n, sizeof(double), cmp_double);
    double p1 = quantile(all, n, 0.01) * 1e6, p50 = quantile(all, n, 0.5) * 1e6,
           p99 = quantile(all, n, 0.99) * 1e6;
    printf("uperf vmlat threads=%d %.2f us/op p1=%.2f p50=%.2f p99=%.2f ops=%ld\n", nthreads, p50,
           p1, p50, p99, n);
}

/* ---- msgrtt, msgtput, mboxrtt, mboxtput, pipertt, sockrtt, grantrtt, granttput ---------- */

/* The first and last CPU this process may run on. */
static void cpu_ends(int *first, int *last)
{
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) != 0)
        die("sched_getaffinity: %s", strerror(errno));
    *first = *last = -1;
    for (int c = 0; c < CPU_SETSIZE; c++)
        if (CPU_ISSET(c, &set)) {
            if (*first < 0)
                *first = c;
            *last = c;
        }
}

static void pin_to(int cpu)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    if (sched_setaffinity(0, sizeof set, &set) != 0)
        die("sched_setaffinity(%d): %s", cpu, strerror(errno));
}

/* Channels of the msg modes: requests (parent to child) and replies. */
static struct reef_msg_channel *chans;
static struct reef_msg_sender req_tx;
static struct reef_msg_receiver rep_rx;
/* Pipes of pipertt: parent to child, child to parent (sockrtt: both directions of one socket
 * pair, the parent's end in down[1] and up[0], the child's in down[0] and up[1]). */
static int down[2], up[2];
static pid_t peer;

enum { ECHO = 1, COUNT = 2, STOP = 3, PAGE_ECHO = 4, PAGE_COUNT = 5, READY = 6, GRANT = 7,
       PAGE_LAST = 8 };

/* The page pool of grantrtt/granttput: more pages than a channel has slots (a page is refilled
 * only after the child has taken its message and the 63 after it could not all be waiting). */
enum { POOL_PAGES = 128, PAGE_BYTES = 4096, PAGE_WORDS = PAGE_BYTES / 8 };
static uint64_t *pool;
/* The grant the child reads the pool through (0 off Reef). */
static long pool_grant;
/* The parent's kernel connection to the child (grant and mbox modes on Reef), or -1. */
static int conn_fd = -1;
/* mboxrtt/mboxtput: the messages go through a kernel connection on Reef. */
static int use_mbox;

/* Fills page `k` of the pool with message k's words; returns their sum. */
static uint64_t fill_page(long k)
{
    uint64_t *p = pool + (k % POOL_PAGES) * PAGE_WORDS;
    for (int w = 0; w < PAGE_WORDS; w++)
        p[w] = (uint64_t)k * PAGE_WORDS + (uint64_t)w;
    return (uint64_t)k * PAGE_WORDS * PAGE_WORDS + (uint64_t)PAGE_WORDS * (PAGE_WORDS - 1) / 2;
}

/* The sum of the page a grant message `m` names in the child's view of the pool. */
static uint64_t sum_page(const uint64_t *view, const struct reef_msg *m)
{
    uint64_t id, offset, len;
    if (reef_msg_grant(m, &id, &offset, &len) != 0 || (long)id != pool_grant ||
        len != PAGE_BYTES || offset % PAGE_BYTES || offset >= (uint64_t)POOL_PAGES * PAGE_BYTES)
        _exit(2);
    const uint64_t *p = view + offset / 8;
    uint64_t sum = 0;
    for (int w = 0; w < PAGE_WORDS; w++)
        sum += p[w];
    return sum;
}

/* The child's end of a kernel connection from the parent: on Reef, a mailbox of its own,
 * registered as uperf-<pid> and announced by READY over the MAP_SHARED channel (word 1; 0 off
 * Reef, where the calls answer ENOSYS), and the connection the parent makes to it. Its
 * descriptor, or -1 off Reef. */
static int child_accept(struct reef_msg_sender *tx, struct reef_conn_info *info)
{
    _Atomic uint32_t *events;
    struct reef_msg m;
    uint64_t reef = 0;
    int mbox = reef_mbox_create(0, &events);
    char name[32];
    snprintf(name, sizeof name, "uperf-%d", (int)getpid());
    if (mbox >= 0) {
        if (reef_name_register(name, mbox) != 0)
            _exit(3);
        reef = 1;
    } else if (mbox != -ENOSYS)
        _exit(3);
    reef_msg_make(&m, READY, &reef, sizeof reef);
    if (reef_msg_send(tx, &m) != 0)
        _exit(1);
    if (!reef)
        return -1;
    int fd = reef_mbox_accept(mbox, 0, info);
    if (fd < 0)
        _exit(3);
    return fd;
}

/* The parent's half of child_accept: the connection's descriptor (kept in conn_fd, closed by
 * stop_peer), or -1 if the child is not on Reef. */
static int parent_connect(struct reef_conn_info *info)
{
    struct reef_msg m;
    uint64_t reef;
    if (reef_msg_recv(&rep_rx, &m) != 1 || m.tag != READY)
        die("the peer is gone");
    memcpy(&reef, m.data, 8);
    if (!reef)
        return -1;
    char name[32];
    snprintf(name, sizeof name, "uperf-%d", (int)peer);
    conn_fd = reef_mbox_connect(name, REEF_NAME_NEAREST, 0, info);
    if (conn_fd < 0)
        die("reef_mbox_connect(%s): %s", name, strerror(-conn_fd));
    return conn_fd;
}

/* The child's view of the pool: on Reef, the grant the parent makes over its connection
 * (mapped read-only); elsewhere the mapping inherited from fork. */
static const uint64_t *child_pool(struct reef_msg_receiver *rx, struct reef_msg_sender *tx)
{
    struct reef_msg m;
    struct reef_conn_info info;
    int fd = child_accept(tx, &info);
    if (fd < 0)
        return pool;
    uint64_t id, offset, len, mapped;
    if (reef_msg_recv(rx, &m) != 1 || m.tag != GRANT ||
        reef_msg_grant(&m, &id, &offset, &len) != 0)
        _exit(3);
    const uint64_t *view = reef_grant_map(fd, (long)id, &mapped);
    if (!view || mapped != (uint64_t)POOL_PAGES * PAGE_BYTES)
        _exit(3);
    pool_grant = (long)id;
    return view;
}

/* The parent's half of child_pool: connects and grants if the child is on Reef. */
static void grant_pool(void)
{
    struct reef_msg m;
    struct reef_conn_info info;
    if (parent_connect(&info) < 0)
        return;
    pool_grant = reef_grant(conn_fd, pool, (size_t)POOL_PAGES * PAGE_BYTES, 0);
    if (pool_grant < 0)
        die("reef_grant: %s", strerror((int)-pool_grant));
    reef_msg_make_grant(&m, GRANT, (uint64_t)pool_grant, 0, (uint64_t)POOL_PAGES * PAGE_BYTES);
    if (reef_msg_send(&req_tx, &m) != 0)
        die("the peer is gone");
    printf("uperf: the pool reaches the peer through Reef grant %ld\n", pool_grant);
}

/* The child of the msg and grant modes (`pages`): answers ECHO with ECHO and PAGE_ECHO with
 * the page's sum; counts COUNT messages and answers the one whose first word is 1 with the
 * number counted; counts PAGE_COUNT messages, summing their pages, and answers PAGE_LAST (the
 * last of them) with the number counted and the total; ends at STOP. */
static void msg_child(int pages)
{
    struct reef_msg_receiver rx;
    struct reef_msg_sender tx;
    reef_msg_receiver_init(&rx, &chans[0]);
    reef_msg_sender_init(&tx, &chans[1]);
    const uint64_t *view = pages ? child_pool(&rx, &tx) : NULL;
    struct reef_conn_info info;
    if (use_mbox && child_accept(&tx, &info) >= 0)
        reef_mbox_server(&tx, &rx, &info);
    struct reef_msg m;
    uint64_t counted = 0, total = 0;
    while (reef_msg_recv(&rx, &m) == 1 && m.tag != STOP) {
        uint64_t words[2];
        if (m.tag == PAGE_ECHO) {
            words[0] = sum_page(view, &m);
            reef_msg_make(&m, ECHO, words, 8);
        } else if (m.tag == PAGE_COUNT || m.tag == PAGE_LAST || m.tag == COUNT) {
            uint64_t last;
            memcpy(&last, m.data, 8);
            counted++;
            if (m.tag != COUNT)
                total += sum_page(view, &m);
            if (m.tag == PAGE_COUNT || (m.tag == COUNT && !last))
                continue;
            words[0] = counted;
            words[1] = total;
            reef_msg_make(&m, COUNT, words, sizeof words);
            counted = total = 0;
        }
        if (reef_msg_send(&tx, &m) != 0)
            _exit(1);
    }
    _exit(0);
}

static void pipe_child(void)
{
    char c;
    while (read(down[0], &c, 1) == 1 && c != 'q')
        if (write(up[1], &c, 1) != 1)
            _exit(1);
    _exit(0);
}

/* start_peer's `pipes`: 1 two pipes, SOCKET_PAIR one AF_UNIX socket pair, TCP_LOOPBACK one TCP
 * connection over 127.0.0.1. */
enum { SOCKET_PAIR = 2, TCP_LOOPBACK = 3 };

/* A listening TCP socket on 127.0.0.1 (a free port, written to *addr). */
static int tcp_listener(struct sockaddr_in *addr)
{
    int l = socket(AF_INET, SOCK_STREAM, 0);
    socklen_t len = sizeof *addr;
    *addr = (struct sockaddr_in){.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    if (l < 0 || bind(l, (struct sockaddr *)addr, sizeof *addr) != 0 || listen(l, 1) != 0 ||
        getsockname(l, (struct sockaddr *)addr, &len) != 0)
        die("TCP listener on 127.0.0.1: %s", strerror(errno));
    return l;
}

/* TCP_NODELAY on `fd`: every byte goes at once, as the pipes' do. */
static void no_delay(int fd)
{
    int one = 1;
    if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) != 0)
        die("TCP_NODELAY: %s", strerror(errno));
}

/* Starts the peer on the last allowed CPU and pins this process to the first; with `pages`,
 * maps the page pool and lets the peer reach it. */
static void start_peer(int pipes, int pages)
{
    int first, last;
    cpu_ends(&first, &last);
    struct sockaddr_in addr;
    int listener = pipes == TCP_LOOPBACK ? tcp_listener(&addr) : -1;
    if (pipes == SOCKET_PAIR) {
        int sv[2];
        if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0)
            die("socketpair(AF_UNIX, SOCK_STREAM): %s", strerror(errno));
        down[1] = up[0] = sv[0];
        down[0] = up[1] = sv[1];
    } else if (pipes == TCP_LOOPBACK) {
        /* Connected below, after the fork. */
    } else if (pipes) {
        if (pipe(down) != 0 || pipe(up) != 0)
            die("pipe: %s", strerror(errno));
    } else {
        chans = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
        if (chans == MAP_FAILED)
            die("mmap of the channels: %s", strerror(errno));
        reef_msg_sender_init(&req_tx, &chans[0]);
        reef_msg_receiver_init(&rep_rx, &chans[1]);
    }
    if (pages) {
        pool = mmap(NULL, (size_t)POOL_PAGES * PAGE_BYTES, PROT_READ | PROT_WRITE,
                    MAP_SHARED | MAP_ANONYMOUS, -1, 0);
        if (pool == MAP_FAILED)
            die("mmap of the page pool: %s", strerror(errno));
    }
    peer = fork();
    if (peer < 0)
        die("fork: %s", strerror(errno));
    if (peer == 0) {
        pin_to(last);
        if (pipes == TCP_LOOPBACK) {
            close(listener);
            int c = socket(AF_INET, SOCK_STREAM, 0);
            if (c < 0 || connect(c, (struct sockaddr *)&addr, sizeof addr) != 0)
                _exit(4);
            no_delay(c);
            down[0] = up[1] = c;
        }
        if (pipes)
            pipe_child();
        msg_child(pages);
    }
    pin_to(first);
    if (pipes == TCP_LOOPBACK) {
        int a = accept(listener, NULL, NULL);
        if (a < 0)
            die("accept: %s", strerror(errno));
        close(listener);
        no_delay(a);
        down[1] = up[0] = a;
    }
    if (pages)
        grant_pool();
    struct reef_conn_info info;
    if (use_mbox && parent_connect(&info) >= 0) {
        reef_mbox_client(&req_tx, &rep_rx, &info, conn_fd);
        printf("uperf: the messages go through a Reef kernel mailbox connection\n");
    }
    printf("uperf: this process on cpu %d, its peer on cpu %d\n", first, last);
}

static void stop_peer(int pipes)
{
    if (pipes) {
        if (write(down[1], "q", 1) != 1)
            die("write: %s", strerror(errno));
    } else {
        struct reef_msg m;
        reef_msg_make(&m, STOP, NULL, 0);
        if (reef_msg_send(&req_tx, &m) != 0)
            die("the peer is gone");
    }
    int st;
    if (waitpid(peer, &st, 0) != peer || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
        die("the peer failed (wait status 0x%x)", st);
    if (conn_fd >= 0)
        close(conn_fd);
}

static double msgrtt_loop(long iters)
{
    struct reef_msg m, r;
    uint64_t words[7] = {0};
    double t0 = now_s();
    for (long i = 0; i < iters; i++) {
        words[0] = (uint64_t)i;
        reef_msg_make(&m, ECHO, words, sizeof words);
        if (reef_msg_send(&req_tx, &m) != 0 || reef_msg_recv(&rep_rx, &r) != 1)
            die("the peer is gone");
        uint64_t got;
        memcpy(&got, r.data, 8);
        if (got != (uint64_t)i)
            die("round trip %ld answered with %llu", i, (unsigned long long)got);
    }
    return now_s() - t0;
}

static double msgtput_loop(long iters)
{
    struct reef_msg m, r;
    uint64_t words[7] = {0};
    double t0 = now_s();
    for (long i = 0; i < iters; i++) {
        words[0] = i == iters - 1;
        reef_msg_make(&m, COUNT, words, sizeof words);
        if (reef_msg_send(&req_tx, &m) != 0)
            die("the peer is gone");
    }
    if (reef_msg_recv(&rep_rx, &r) != 1)
        die("the peer is gone");
    double t = now_s() - t0;
    uint64_t counted;
    memcpy(&counted, r.data, 8);
    if (counted != (uint64_t)iters)
        die("sent %ld messages, the peer counted %llu", iters, (unsigned long long)counted);
    return t;
}

static double grantrtt_loop(long iters)
{
    struct reef_msg m, r;
    double t0 = now_s();
    for (long i = 0; i < iters; i++) {
        uint64_t sum = fill_page(i);
        reef_msg_make_grant(&m, PAGE_ECHO, (uint64_t)pool_grant,
                            (uint64_t)(i % POOL_PAGES) * PAGE_BYTES, PAGE_BYTES);
        if (reef_msg_send(&req_tx, &m) != 0 || reef_msg_recv(&rep_rx, &r) != 1)
            die("the peer is gone");
        uint64_t got;
        memcpy(&got, r.data, 8);
        if (got != sum)
            die("page %ld summed to %llu, not %llu", i, (unsigned long long)got,
                (unsigned long long)sum);
    }
    return now_s() - t0;
}

static double granttput_loop(long iters)
{
    struct reef_msg m, r;
    uint64_t total = 0;
    double t0 = now_s();
    for (long i = 0; i < iters; i++) {
        total += fill_page(i);
        reef_msg_make_grant(&m, i == iters - 1 ? PAGE_LAST : PAGE_COUNT, (uint64_t)pool_grant,
                            (uint64_t)(i % POOL_PAGES) * PAGE_BYTES, PAGE_BYTES);
        if (reef_msg_send(&req_tx, &m) != 0)
            die("the peer is gone");
    }
    if (reef_msg_recv(&rep_rx, &r) != 1)
        die("the peer is gone");
    double t = now_s() - t0;
    uint64_t got[2];
    memcpy(got, r.data, sizeof got);
    if (got[0] != (uint64_t)iters || got[1] != total)
        die("sent %ld pages summing to %llu, the peer counted %llu summing to %llu", iters,
            (unsigned long long)total, (unsigned long long)got[0], (unsigned long long)got[1]);
    return t;
}

static double pipertt_loop(long iters)
{
    char c = 'x';
    double t0 = now_s();
    for (long i = 0; i < iters; i++)
        if (write(down[1], &c, 1) != 1 || read(up[0], &c, 1) != 1)
            die("pipe round trip: %s", strerror(errno));
    return now_s() - t0;
}

/* msgrtt, msgtput, mboxrtt, mboxtput, pipertt, sockrtt, grantrtt or granttput. */
static void mode_msg(int argc, char **argv, const char *name)
{
    static const struct {
        const char *name;
        double (*loop)(long);
        int tput, pipes, pages;
    } modes[] = {
        {"msgrtt", msgrtt_loop, 0, 0, 0},      {"msgtput", msgtput_loop, 1, 0, 0},
        {"mboxrtt", msgrtt_loop, 0, 0, 0},     {"mboxtput", msgtput_loop, 1, 0, 0},
        {"pipertt", pipertt_loop, 0, 1, 0},    {"grantrtt", grantrtt_loop, 0, 0, 1},
        {"granttput", granttput_loop, 1, 0, 1}, {"sockrtt", pipertt_loop, 0, SOCKET_PAIR, 0},
        {"tcprtt", pipertt_loop, 0, TCP_LOOPBACK, 0},
    };
    int i = 0;
    while (strcmp(modes[i].name, name) != 0)
        i++;
    int pipes = modes[i].pipes, tput = modes[i].tput;
    use_mbox = !strncmp(name, "mbox", 4);
    double (*loop)(long) = modes[i].loop;
    long iters = tput ? 200000 : 20000;
    int reps = 5, explicit_;
    get_counts(argc, argv, 2, &iters, &reps, &explicit_);
    start_peer(pipes, modes[i].pages);
    long warm = iters < 2000 ? iters : 2000;
    double w = loop(warm);
    printf("uperf: %s warm-up: %ld messages, %.1f ns each\n", name, warm, w / warm * 1e9);
    if (!explicit_)
        iters = scaled(iters, reps, w / warm, 100);
    printf("uperf: %s: %ld messages x %d repetitions\n", name, iters, reps);
    double v[MAX_REPS];
    for (int r = 0; r < reps; r++) {
        uint64_t slept = rep_rx.sleeps;
        double t = loop(iters);
        v[r] = tput ? iters / t : t / iters * 1e9;
        /* How often the parent waited for an answer long enough to sleep: a sleep and its
         * wake-up cost a pipe round trip, so a few per thousand move the mean. */
        printf("uperf: %s rep %d/%d: %.1f %s (%.3f s", name, r + 1, reps, v[r],
               tput ? "msgs/s" : "ns/rt", t);
        if (!pipes)
            printf(", the sender slept %llu times", (unsigned long long)(rep_rx.sleeps - slept));
        printf(")\n");
    }
    stop_peer(pipes);
    report(name, 2, tput ? "msgs/s" : "ns/rt", "%.1f", v, reps, iters);
}

/* ---- network modes (-n) ----------------------------------------------------------------- */

#define SYS_reef_net_mode 1039 /* usr/netctl.c */
#define REEF_NET_SERVER 1
#define REEF_NET_DIRECT 2
#define REEF_NET_ADDRESS 3

/* Runs `argv` (an absolute path) and waits for it: it must exit 0. */
static void run_system(char *const *argv)
{
    pid_t pid = fork();
    if (pid < 0)
        die("fork: %s", strerror(errno));
    if (pid == 0) {
        execve(argv[0], argv, environment);
        _exit(127);
    }
    int st;
    pid_t w;
    while ((w = waitpid(pid, &st, 0)) == -1 && errno == EINTR)
        ;
    if (w != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
        die("%s %s did not exit 0 (wait status 0x%x; 127: execve failed)", argv[0], argv[1],
            st);
}

/* Before the socket: on Reef with `-n server`, starts the network server and waits until it
 * has attached, so that the instance made by the next socket() joins server mode. */
static void net_prepare(void)
{
    if (!net_mode || !on_reef || strcmp(net_mode, "server") != 0)
        return;
    int one = sysconf(_SC_NPROCESSORS_ONLN) == 1;
    char *shared[] = {"/bin/fleet", "start", "net", "--timeshare", "--cores", "0", "/bin/netd",
                      NULL};
    char *owned[] = {"/bin/fleet", "start", "net", "--cores", "1", "/bin/netd", NULL};
    char *wait[] = {"/bin/netctl", "wait", "30", NULL};
    run_system(one ? shared : owned);
    run_system(wait);
    printf("uperf: network server started (%s)\n", one ? "--timeshare --cores 0" : "--cores 1");
}

/* On Reef, moves the stack instances holding process `pid`'s sockets to network mode `mode`
 * (REEF_NET_*). */
static void net_set_mode(pid_t pid, int mode)
{
    static const char *const names[] = {"REEF_NET_KERNEL", "REEF_NET_SERVER", "REEF_NET_DIRECT",
                                        "REEF_NET_ADDRESS"};
    if (syscall(SYS_reef_net_mode, (long)pid, (long)mode) != 0)
        die("reef_net_mode(%d, %s): %s%s", (int)pid, names[mode], strerror(errno),
            mode == REEF_NET_DIRECT ? " (does the machine have a second NIC?)" : "");
}

/* After socket(), before connect(): on Reef with `-n direct`, moves this process's instance to
 * a NIC of its own (library mode), where it gets an address of its own. */
static void net_move(void)
{
    if (net_mode && on_reef && strcmp(net_mode, "direct") == 0)
        net_set_mode(getpid(), REEF_NET_DIRECT);
}

/* The mode of the stack instance holding local TCP port `port` in /proc/reef/net, printed
 * (`uperf: net instance mode=...`); fails unless it is `-n`'s. */
static void net_check_port(unsigned port, const char *address)
{
    if (!net_mode)
        return;
    if (!on_reef) {
        printf("uperf: net instance mode=linux (Linux's own stack; -n %s not applied)\n",
               net_mode);
        return;
    }
    char name[32];
    snprintf(name, sizeof name, "tcp/%u", port);
    FILE *f = fopen("/proc/reef/net", "r");
    if (!f)
        die("/proc/reef/net: %s", strerror(errno));
    /* Instance lines: `ID MODE SOCKETS PORTS ...`, PORTS comma-separated. */
    char line[512], mode[128] = "", ports[256];
    while (!*mode && fgets(line, sizeof line, f)) {
        char m[128];
        unsigned id, socks;
        if (sscanf(line, "%u %127s %u %255s", &id, m, &socks, ports) != 4)
            continue;
        for (char *p = strtok(ports, ","); p; p = strtok(NULL, ","))
            if (strcmp(p, name) == 0)
                snprintf(mode, sizeof mode, "%s", m);
    }
    fclose(f);
    if (!*mode)
        die("no instance holds %s in /proc/reef/net", name);
    printf("uperf: net instance mode=%s port=%s address=%s\n", mode, name, address);
    size_t n = strlen(net_mode);
    if (strncmp(mode, net_mode, n) != 0 || (mode[n] && mode[n] != '/' && mode[n] != '@'))
        die("the stack instance of %s is in mode %s, not %s", name, mode, net_mode);
}

/* On Reef, the counters of /proc/reef/net (instances, NICs, switch, server; not the rings),
 * each line printed after `uperf: net: `, to tell what bounded a figure. */
static void net_counters(void)
{
    if (!on_reef)
        return;
    FILE *f = fopen("/proc/reef/net", "r");
    if (!f)
        die("/proc/reef/net: %s", strerror(errno));
    char line[512];
    while (fgets(line, sizeof line, f))
        if (strncmp(line, "slot ", 5) != 0)
            printf("uperf: net: %s", line);
    fclose(f);
}

/* After the measurement, while `fd` is connected: net_check_port of its local port. */
static void net_check(int fd)
{
    struct sockaddr_in me;
    socklen_t len = sizeof me;
    if (getsockname(fd, (struct sockaddr *)&me, &len) != 0)
        die("getsockname: %s", strerror(errno));
    net_check_port(ntohs(me.sin_port), inet_ntoa(me.sin_addr));
}

/* ---- echortt and sinktput -------------------------------------------------------------- */

static int echo_fd;
static char *echo_out, *echo_in;
static size_t echo_size;

static struct sockaddr_in parse_addr(const char *arg)
{
    char host[64];
    snprintf(host, sizeof host, "%s", arg);
    char *colon = strchr(host, ':');
    if (!colon)
        die("'%s' is not ADDR:PORT", arg);
    *colon = 0;
    struct sockaddr_in to = {.sin_family = AF_INET,
                             .sin_port = htons((uint16_t)parse_count(colon + 1, "port"))};
    if (inet_pton(AF_INET, host, &to.sin_addr) != 1)
        die("'%s' is not an IPv4 address", host);
    return to;
}

/* echo_fd: a TCP connection (TCP_NODELAY) to `to` from a stack instance in `-n`'s mode. */
static void net_connect(const struct sockaddr_in *to, const char *name)
{
    net_prepare();
    echo_fd = socket(AF_INET, SOCK_STREAM, 0);
    if (echo_fd < 0)
        die("socket: %s", strerror(errno));
    net_move();
    if (connect(echo_fd, (const struct sockaddr *)to, sizeof *to) != 0)
        die("connect to %s: %s", name, strerror(errno));
    no_delay(echo_fd);
}

/* `iters` round trips of echo_size bytes: seconds taken. */
static double echortt_loop(long iters)
{
    double t0 = now_s();
    for (long i = 0; i < iters; i++) {
        echo_out[0] = (char)i;
        for (size_t done = 0; done < echo_size;) {
            ssize_t n = write(echo_fd, echo_out + done, echo_size - done);
            if (n <= 0)
                die("write to the echo server: %s", n < 0 ? strerror(errno) : "closed");
            done += (size_t)n;
        }
        for (size_t done = 0; done < echo_size;) {
            ssize_t n = read(echo_fd, echo_in + done, echo_size - done);
            if (n <= 0)
                die("read from the echo server: %s", n < 0 ? strerror(errno) : "closed");
            done += (size_t)n;
        }
        if (memcmp(echo_in, echo_out, echo_size) != 0)
            die("the echo server answered other bytes than sent");
    }
    return now_s() - t0;
}

static void mode_echortt(int argc, char **argv)
{
    if (argc < 4)
        die("usage: uperf echortt ADDR:PORT SIZE [ITERS [REPS]]");
    struct sockaddr_in to = parse_addr(argv[2]);
    echo_size = (size_t)parse_count(argv[3], "size");
    if (echo_size < 1 || echo_size > (1 << 24))
        die("SIZE is 1 to 16 MiB");
    long iters = 2000;
    int reps = 5, explicit_;
    get_counts(argc, argv, 4, &iters, &reps, &explicit_);
    echo_out = malloc(echo_size);
    echo_in = malloc(echo_size);
    if (!echo_out || !echo_in)
        die("out of memory");
    for (size_t i = 0; i < echo_size; i++)
        echo_out[i] = (char)(i * 7);
    net_connect(&to, argv[2]);
    long warm = iters < 200 ? iters : 200;
    double w = echortt_loop(warm);
    printf("uperf: echortt %zu B warm-up: %ld round trips, %.1f us each\n", echo_size, warm,
           w / warm * 1e6);
    if (!explicit_)
        iters = scaled(iters, reps, w / warm, 20);
    printf("uperf: echortt %zu B: %ld round trips x %d repetitions\n", echo_size, iters, reps);
    double v[MAX_REPS];
    for (int r = 0; r < reps; r++)
        v[r] = echortt_loop(iters) / iters * 1e9;
    net_check(echo_fd);
    close(echo_fd);
    report("echortt", 1, "ns/rt", "%.1f", v, reps, iters);
}

/* ---- sinktput --------------------------------------------------------------------------- */

#define SINK_CHUNK 65536

/* `chunks` of SINK_CHUNK bytes sent to the sink after their count (8 bytes, big-endian),
 * until the sink answers the count it received: seconds taken. */
static double sinktput_loop(long chunks)
{
    uint64_t be = htobe64((uint64_t)chunks * SINK_CHUNK);
    double t0 = now_s();
    if (write(echo_fd, &be, 8) != 8)
        die("write to the sink: %s", strerror(errno));
    for (long c = 0; c < chunks; c++)
        for (size_t done = 0; done < SINK_CHUNK;) {
            ssize_t n = write(echo_fd, echo_out + done, SINK_CHUNK - done);
            if (n <= 0)
                die("write to the sink: %s", n < 0 ? strerror(errno) : "closed");
            done += (size_t)n;
        }
    uint64_t got;
    for (size_t done = 0; done < 8;) {
        ssize_t n = read(echo_fd, (char *)&got + done, 8 - done);
        if (n <= 0)
            die("read from the sink: %s", n < 0 ? strerror(errno) : "closed");
        done += (size_t)n;
    }
    double t = now_s() - t0;
    if (got != be)
        die("the sink did not answer the count sent");
    return t;
}

static void mode_sinktput(int argc, char **argv)
{
    if (argc < 3)
        die("usage: uperf sinktput ADDR:PORT [CHUNKS [REPS]]");
    struct sockaddr_in to = parse_addr(argv[2]);
    long chunks = 1024;
    int reps = 5, explicit_;
    get_counts(argc, argv, 3, &chunks, &reps, &explicit_);
    echo_out = malloc(SINK_CHUNK);
    if (!echo_out)
        die("out of memory");
    for (size_t i = 0; i < SINK_CHUNK; i++)
        echo_out[i] = (char)(i * 7);
    net_connect(&to, argv[2]);
    long warm = chunks < 16 ? chunks : 16;
    double w = sinktput_loop(warm);
    printf("uperf: sinktput warm-up: %ld KiB, %.1f MB/s\n", warm * (SINK_CHUNK / 1024),
           warm * SINK_CHUNK / w / 1e6);
    if (!explicit_)
        chunks = scaled(chunks, reps, w / warm, 16);
    printf("uperf: sinktput: %ld KiB x %d repetitions\n", chunks * (SINK_CHUNK / 1024), reps);
    double v[MAX_REPS];
    for (int r = 0; r < reps; r++)
        v[r] = chunks * SINK_CHUNK / sinktput_loop(chunks) / 1e6;
    net_check(echo_fd);
    close(echo_fd);
    report("sinktput", 1, "MB/s", "%.2f", v, reps, chunks);
}

/* ---- httpd ------------------------------------------------------------------------------ */

#define HTTPD_ROOT "/tmp/www"
#define HTTPD_PAGE 1024

/* Writes HTTPD_ROOT/index.html: HTTPD_PAGE bytes of text. */
static void httpd_page(void)
{
    if (mkdir(HTTPD_ROOT, 0755) != 0 && errno != EEXIST)
        die("mkdir %s: %s", HTTPD_ROOT, strerror(errno));
    int fd = open(HTTPD_ROOT "/index.html", O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0)
        die("open %s/index.html: %s", HTTPD_ROOT, strerror(errno));
    char page[HTTPD_PAGE];
    for (int i = 0; i < HTTPD_PAGE; i++)
        page[i] = i % 64 == 63 ? '\n' : (char)('a' + i % 26);
    if (write(fd, page, sizeof page) != (ssize_t)sizeof page)
        die("write %s/index.html: %s", HTTPD_ROOT, strerror(errno));
    close(fd);
}

/* Whether a TCP connection to 127.0.0.1:port is accepted (closed again at once). */
static int tcp_accepts(unsigned port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0)
        die("socket: %s", strerror(errno));
    struct sockaddr_in to = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port),
                             .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    int ok = connect(fd, (struct sockaddr *)&to, sizeof to) == 0;
    close(fd);
    return ok;
}

static void mode_httpd(int argc, char **argv)
{
    if (argc != 3)
        die("usage: uperf [-n kernel|server|direct] httpd PORT");
    long port = parse_count(argv[2], "port");
    if (port < 1 || port > 65535)
        die("PORT is 1 to 65535");
    httpd_page();
    net_prepare();
    pid_t pid = fork();
    if (pid < 0)
        die("fork: %s", strerror(errno));
    if (pid == 0) {
        char *args[] = {"/bin/busybox", "httpd", "-f", "-p", argv[2], "-h", HTTPD_ROOT, NULL};
        execve(args[0], args, environment);
        _exit(127);
    }
    for (int tries = 0; !tcp_accepts((unsigned)port); tries++) {
        int st;
        if (waitpid(pid, &st, WNOHANG) == pid)
            die("busybox httpd exited before listening (wait status 0x%x)", st);
        if (tries == 200)
            die("busybox httpd does not accept on 127.0.0.1:%ld after 10 s", port);
        usleep(50000);
    }
    if (net_mode && on_reef && strcmp(net_mode, "direct") == 0)
        net_set_mode(pid, REEF_NET_DIRECT);
    net_check_port((unsigned)port, "*");
    printf("uperf: httpd ready on port %ld (busybox httpd, pid %d, %d-byte /index.html); "
           "type done when finished\n",
           port, (int)pid, HTTPD_PAGE);
    char line[64];
    do
        if (!fgets(line, sizeof line, stdin))
            die("stdin ended before done");
    while (strncmp(line, "done", 4) != 0);
    net_check_port((unsigned)port, "*");
    net_counters();
    kill(pid, SIGTERM);
    waitpid(pid, NULL, 0);
    printf("uperf: httpd stopped\n");
}

/* ---- switch ----------------------------------------------------------------------------- */

/* Round trips of the ping-pong, and the switches made meanwhile: start and length (s). */
struct span {
    double start, len;
};
static struct span *trips;
static long ntrips, trips_cap;
static struct span switches[MAX_REPS];
static long nswitches;
static volatile int switching;

/* The switcher thread: every 20 ms moves this process's instance, to library mode first,
 * then back to server mode, nswitches times in all. */
static void *switcher(void *arg)
{
    (void)arg;
    for (long i = 0; i < nswitches; i++) {
        struct timespec gap = {0, 20 * 1000 * 1000};
        nanosleep(&gap, NULL);
        double t0 = now_s();
        net_set_mode(getpid(), i % 2 ? REEF_NET_SERVER : REEF_NET_DIRECT);
        switches[i] = (struct span){t0, now_s() - t0};
    }
    switching = 0;
    return NULL;
}

static void trip_record(double start, double len)
{
    if (ntrips == trips_cap) {
        trips_cap = trips_cap ? 2 * trips_cap : 4096;
        trips = realloc(trips, (size_t)trips_cap * sizeof *trips);
        if (!trips)
            die("out of memory for %ld round trips", trips_cap);
    }
    trips[ntrips++] = (struct span){start, len};
}

/* The pause switch `s` caused: the longest round trip in flight during its call, or the first
 * one begun after it (the first on the new path), in us. */
static double switch_pause(const struct span *s)
{
    double end = s->start + s->len, longest = 0;
    for (long i = 0; i < ntrips; i++) {
        const struct span *t = &trips[i];
        int overlaps = t->start <= end && t->start + t->len >= s->start;
        if (overlaps || t->start > end) {
            if (t->len > longest)
                longest = t->len;
            if (!overlaps)
                break;
        }
    }
    return longest * 1e6;
}

static void mode_switch(int argc, char **argv)
{
    if (argc < 3 || argc > 4)
        die("usage: uperf -n server switch ADDR:PORT [SWITCHES]");
    if (!on_reef || !net_mode || strcmp(net_mode, "server") != 0)
        die("switch measures Reef's mode switch: on Reef, with -n server");
    struct sockaddr_in to = parse_addr(argv[2]);
    nswitches = argc > 3 ? parse_count(argv[3], "count") : 20;
    if (nswitches < 2 || nswitches > MAX_REPS || nswitches % 2)
        die("SWITCHES is even, 2 to %d", MAX_REPS);
    echo_size = 64;
    echo_out = calloc(1, echo_size);
    echo_in = malloc(echo_size);
    if (!echo_out || !echo_in)
        die("out of memory");
    net_prepare();
    echo_fd = socket(AF_INET, SOCK_STREAM, 0);
    if (echo_fd < 0)
        die("socket: %s", strerror(errno));
    /* As in LibrettOS, an application that will switch gets its own address at launch. */
    net_set_mode(getpid(), REEF_NET_ADDRESS);
    if (connect(echo_fd, (const struct sockaddr *)&to, sizeof to) != 0)
        die("connect to %s: %s", argv[2], strerror(errno));
    no_delay(echo_fd);
    double base[200];
    for (int i = 0; i < 200; i++)
        base[i] = echortt_loop(1) * 1e6;
    qsort(base, 200, sizeof(double), cmp_double);
    printf("uperf: switch: 64-byte round trips in server mode before switching: median %.1f us, "
           "max %.1f us; %ld switches, 20 ms apart\n",
           base[100], base[199], nswitches);
    switching = 1;
    pthread_t t;
    if (pthread_create(&t, NULL, switcher, NULL) != 0)
        die("pthread_create failed");
    while (switching) {
        double t0 = now_s();
        echortt_loop(1);
        trip_record(t0, now_s() - t0);
    }
    pthread_join(t, NULL);
    double to_direct[MAX_REPS / 2], to_server[MAX_REPS / 2], pause[MAX_REPS];
    for (long i = 0; i < nswitches; i++) {
        (i % 2 ? to_server : to_direct)[i / 2] = switches[i].len * 1e6;
        pause[i] = switch_pause(&switches[i]);
    }
    net_check(echo_fd);
    net_counters();
    close(echo_fd);
    report("switch-to-direct", 1, "us", "%.1f", to_direct, (int)nswitches / 2, 1);
    report("switch-to-server", 1, "us", "%.1f", to_server, (int)nswitches / 2, 1);
    report("switch-pause", 1, "us", "%.1f", pause, (int)nswitches, ntrips);
}

/* ---- corectl ---------------------------------------------------------------------------- */

/* Linux CPU hotplug: writes `state` ("0" or "1") to core `core`'s online file. */
static void hotplug(int core, const char *state)
{
    char path[64];
    snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu%d/online", core);
    int fd = open(path, O_WRONLY);
    if (fd < 0)
        die("open %s: %s", path, strerror(errno));
    if (write(fd, state, 1) != 1)
        die("write %s to %s: %s", state, path, strerror(errno));
    close(fd);
}

/* Stops (`up` 0) or starts core `core`: seconds taken. */
static double core_switch(int core, int up)
{
    double t0 = now_s();
    if (on_reef) {
        int r = up ? reef_core_start((unsigned)core) : reef_core_stop((unsigned)core);
        if (r < 0)
            die("reef_core_%s(%d): %s", up ? "start" : "stop", core, strerror(-r));
    } else {
        hotplug(core, up ? "1" : "0");
    }
    return now_s() - t0;
}

static void mode_corectl(int argc, char **argv)
{
    if (argc < 3 || argc > 4)
        die("usage: uperf corectl BUSY [ITERS]");
    int busy = (int)parse_count(argv[2], "BUSY flag");
    long iters = argc > 3 ? parse_count(argv[3], "count") : 20;
    if (busy > 1 || iters < 1 || iters > MAX_REPS)
        die("BUSY is 0 or 1, ITERS 1..%d", MAX_REPS);
    int first, last;
    cpu_ends(&first, &last);
    if (first != 0 || last < 1)
        die("corectl needs cores 0 and another (allowed: %d..%d)", first, last);
    pin_to(0);
    pid_t spinners[MAX_THREADS];
    int nspin = 0;
    for (int c = 1; busy && c <= last && nspin < MAX_THREADS; c++) {
        pid_t pid = fork();
        if (pid < 0)
            die("fork: %s", strerror(errno));
        if (pid == 0) {
            cpu_set_t set;
            CPU_ZERO(&set);
            for (int d = 1; d <= last; d++)
                CPU_SET(d, &set);
            if (sched_setaffinity(0, sizeof set, &set) != 0)
                _exit(1);
            for (volatile unsigned long n = 0;; n++)
                ;
        }
        spinners[nspin++] = pid;
    }
    printf("uperf: corectl: core %d stopped and started %ld times from core 0 (%s), %d "
           "spinning processes\n",
           last, iters, on_reef ? "reef_core_ctl" : "CPU hotplug", nspin);
    core_switch(last, 0);
    core_switch(last, 1);
    double stop[MAX_REPS], start[MAX_REPS];
    for (long i = 0; i < iters; i++) {
        stop[i] = core_switch(last, 0) * 1e6;
        start[i] = core_switch(last, 1) * 1e6;
        printf("uperf: corectl round %ld: stop %.1f us, start %.1f us\n", i + 1, stop[i],
               start[i]);
    }
    for (int i = 0; i < nspin; i++) {
        kill(spinners[i], SIGKILL);
        waitpid(spinners[i], NULL, 0);
    }
    report("core-stop", nspin, "us", "%.1f", stop, (int)iters, 1);
    report("core-start", nspin, "us", "%.1f", start, (int)iters, 1);
}

/* ---- park ------------------------------------------------------------------------------- */

/* Gaps the park loop keeps: longer than PARK_GAP_NS, at most PARK_GAPS of them. */
#define PARK_GAP_NS 20000LL
#define PARK_GAPS 200000
#define PARK_ROUNDS_MAX 32

static long long mono_ns(void)
{
    struct timespec ts;
    if (clock_gettime(CLOCK_MONOTONIC, &ts) != 0)
        die("clock_gettime(CLOCK_MONOTONIC): %s", strerror(errno));
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

struct park_gap {
    long long end, len;
};

static struct park_gap *park_gaps;
static long park_ngaps, park_lost;
static atomic_long park_iters;
static int park_core;
static atomic_int park_stop, park_looping, park_spin;

/* The pinned loop: records every gap between consecutive clock reads past PARK_GAP_NS. */
static void *park_loop(void *arg)
{
    (void)arg;
    pin_to(park_core);
    long long prev = mono_ns();
    atomic_store(&park_looping, 1);
    while (!atomic_load(&park_stop)) {
        long long t = mono_ns();
        if (t < prev)
            die("park: the clock went back by %lld ns on core %d", prev - t, park_core);
        if (t - prev > PARK_GAP_NS) {
            if (park_ngaps < PARK_GAPS)
                park_gaps[park_ngaps++] = (struct park_gap){t, t - prev};
            else
                park_lost++;
        }
        if (sched_getcpu() != park_core)
            die("park: the pinned loop runs on core %d, not %d", sched_getcpu(), park_core);
        prev = t;
        atomic_fetch_add_explicit(&park_iters, 1, memory_order_relaxed);
    }
    return NULL;
}

static void *park_spinner(void *arg)
{
    (void)arg;
    pin_to(0);
    while (atomic_load(&park_spin))
        ;
    return NULL;
}

/* The largest kept gap overlapping [from, to] (microseconds; 0: none). */
static double park_largest(long long from, long long to)
{
    long long best = 0;
    for (long i = 0; i < park_ngaps; i++) {
        const struct park_gap *g = &park_gaps[i];
        if (g->end > from && g->end - g->len < to && g->len > best)
            best = g->len;
    }
    return (double)best / 1e3;
}

static void park_sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

/* Starts park's loop pinned to the last allowed core (which must not be core 0, the caller's,
 * where it pins itself); `what` names the mode in errors. Returns the loop's thread and core. */
static pthread_t park_loop_start(const char *what, int *core)
{
    int first, last;
    cpu_ends(&first, &last);
    if (first != 0 || last < 1)
        die("%s needs cores 0 and another (allowed: %d..%d)", what, first, last);
    park_core = last;
    park_gaps = malloc(sizeof *park_gaps * PARK_GAPS);
    if (!park_gaps)
        die("out of memory");
    pin_to(0);
    pthread_t loop;
    if (pthread_create(&loop, NULL, park_loop, NULL) != 0)
        die("pthread_create failed");
    *core = last;
    return loop;
}

static void mode_park(int argc, char **argv)
{
    if (argc < 3 || argc > 4)
        die("usage: uperf park BUSY [ROUNDS]");
    int busy = (int)parse_count(argv[2], "BUSY flag");
    long rounds = argc > 3 ? parse_count(argv[3], "count") : 10;
    if (busy > 1 || rounds < 1 || rounds > PARK_ROUNDS_MAX)
        die("BUSY is 0 or 1, ROUNDS 1..%d", PARK_ROUNDS_MAX);
    if (!on_reef)
        die("park: parking a core's KCB on another is Reef's (reef_core_park); Linux has no "
            "counterpart");
    int last;
    pthread_t loop = park_loop_start("park", &last), spinner;
    atomic_store(&park_spin, busy);
    if (busy && pthread_create(&spinner, NULL, park_spinner, NULL) != 0)
        die("pthread_create failed");
    while (!atomic_load(&park_looping))
        park_sleep_ms(1);
    printf("uperf: park: a loop pinned to core %d; core 0 parks that core on itself and "
           "unparks it %ld times, 0.2 s apart%s\n",
           last, rounds, busy ? "; a thread pinned to core 0 spins" : "");
    double park_call[PARK_ROUNDS_MAX], unpark_call[PARK_ROUNDS_MAX];
    double park_pause[PARK_ROUNDS_MAX], unpark_pause[PARK_ROUNDS_MAX];
    double parked_gap[PARK_ROUNDS_MAX], exclusive_gap[PARK_ROUNDS_MAX];
    long long p0[PARK_ROUNDS_MAX], p1[PARK_ROUNDS_MAX], u0[PARK_ROUNDS_MAX], u1[PARK_ROUNDS_MAX];
    long long start = mono_ns();
    long iters_exclusive = 0, iters_parked = 0;
    long long ns_exclusive = 0, ns_parked = 0;
    for (long r = 0; r < rounds; r++) {
        long before = atomic_load(&park_iters);
        long long t = mono_ns();
        park_sleep_ms(200);
        iters_exclusive += atomic_load(&park_iters) - before;
        p0[r] = mono_ns();
        ns_exclusive += p0[r] - t;
        int e = reef_core_park((unsigned)last, 0);
        p1[r] = mono_ns();
        if (e < 0)
            die("reef_core_park(%d, 0): %s", last, strerror(-e));
        before = atomic_load(&park_iters);
        park_sleep_ms(200);
        iters_parked += atomic_load(&park_iters) - before;
        u0[r] = mono_ns();
        ns_parked += u0[r] - p1[r];
        e = reef_core_unpark((unsigned)last);
        u1[r] = mono_ns();
        if (e < 0)
            die("reef_core_unpark(%d): %s", last, strerror(-e));
    }
    park_sleep_ms(200);
    atomic_store(&park_stop, 1);
    atomic_store(&park_spin, 0);
    pthread_join(loop, NULL);
    if (busy)
        pthread_join(spinner, NULL);
    if (park_lost)
        die("park: %ld gaps past the %d kept", park_lost, PARK_GAPS);
    for (long r = 0; r < rounds; r++) {
        park_call[r] = (double)(p1[r] - p0[r]) / 1e3;
        unpark_call[r] = (double)(u1[r] - u0[r]) / 1e3;
        park_pause[r] = park_largest(p0[r], p1[r]);
        unpark_pause[r] = park_largest(u0[r], u1[r]);
        /* Between the calls, the gaps that overlap neither. */
        parked_gap[r] = 0;
        exclusive_gap[r] = 0;
        long long from = r ? u1[r - 1] : start;
        for (long i = 0; i < park_ngaps; i++) {
            const struct park_gap *g = &park_gaps[i];
            double len = (double)g->len / 1e3;
            if (g->end - g->len >= p1[r] && g->end <= u0[r] && len > parked_gap[r])
                parked_gap[r] = len;
            if (g->end - g->len >= from && g->end <= p0[r] && len > exclusive_gap[r])
                exclusive_gap[r] = len;
        }
        printf("uperf: park round %ld: park %.1f us (pause %.1f us), unpark %.1f us (pause "
               "%.1f us), largest gap parked %.1f us, exclusive %.1f us\n",
               r + 1, park_call[r], park_pause[r], unpark_call[r], unpark_pause[r],
               parked_gap[r], exclusive_gap[r]);
    }
    printf("uperf: park: the loop's clock reads per ms: exclusive %.1f, parked %.1f (%ld gaps "
           "over %lld us kept)\n",
           iters_exclusive / (ns_exclusive / 1e6), iters_parked / (ns_parked / 1e6), park_ngaps,
           PARK_GAP_NS / 1000);
    int threads = busy ? 2 : 1;
    report("park-call", threads, "us", "%.1f", park_call, (int)rounds, 1);
    report("unpark-call", threads, "us", "%.1f", unpark_call, (int)rounds, 1);
    report("park-pause", threads, "us", "%.1f", park_pause, (int)rounds, 1);
    report("unpark-pause", threads, "us", "%.1f", unpark_pause, (int)rounds, 1);
    report("parked-gap", threads, "us", "%.1f", parked_gap, (int)rounds, 1);
    report("exclusive-gap", threads, "us", "%.1f", exclusive_gap, (int)rounds, 1);
}

/* ---- update ----------------------------------------------------------------------------- */

/* Barrelfish/DC §4.5's update gap: the loop of `park` pinned to the last core while core 0
 * restarts that core in kernel image IMAGE and, 0.2 s later, back in the boot image. */
static void mode_update(int argc, char **argv)
{
    if (argc < 3 || argc > 4)
        die("usage: uperf update IMAGE [ROUNDS]");
    const char *image = argv[2];
    long rounds = argc > 3 ? parse_count(argv[3], "count") : 10;
    if (rounds < 1 || rounds > PARK_ROUNDS_MAX)
        die("ROUNDS is 1..%d", PARK_ROUNDS_MAX);
    if (!on_reef)
        die("update: restarting a core in another kernel image is Reef's (reef_core_update); "
            "Linux has no counterpart");
    int last;
    pthread_t loop = park_loop_start("update", &last);
    while (!atomic_load(&park_looping))
        park_sleep_ms(1);
    printf("uperf: update: a loop pinned to core %d; core 0 restarts that core in %s and back "
           "in the boot image %ld times, 0.2 s apart\n",
           last, image, rounds);
    /* Each call's start and end, to the image (0) and back (1). */
    long long t0[PARK_ROUNDS_MAX][2], t1[PARK_ROUNDS_MAX][2];
    for (long r = 0; r < rounds; r++) {
        const char *target[2] = {image, "reef"};
        for (int i = 0; i < 2; i++) {
            park_sleep_ms(200);
            t0[r][i] = mono_ns();
            int e = reef_core_update((unsigned)last, target[i]);
            t1[r][i] = mono_ns();
            if (e < 0)
                die("reef_core_update(%d, %s): %s", last, target[i], strerror(-e));
        }
    }
    park_sleep_ms(200);
    atomic_store(&park_stop, 1);
    pthread_join(loop, NULL);
    if (park_lost)
        die("update: %ld gaps past the %d kept", park_lost, PARK_GAPS);
    double to_call[PARK_ROUNDS_MAX], back_call[PARK_ROUNDS_MAX];
    double to_pause[PARK_ROUNDS_MAX], back_pause[PARK_ROUNDS_MAX];
    for (long r = 0; r < rounds; r++) {
        to_call[r] = (double)(t1[r][0] - t0[r][0]) / 1e3;
        back_call[r] = (double)(t1[r][1] - t0[r][1]) / 1e3;
        to_pause[r] = park_largest(t0[r][0], t1[r][0]);
        back_pause[r] = park_largest(t0[r][1], t1[r][1]);
        printf("uperf: update round %ld: to %s %.1f us (pause %.1f us), back %.1f us (pause "
               "%.1f us)\n",
               r + 1, image, to_call[r], to_pause[r], back_call[r], back_pause[r]);
    }
    report("update-call", 1, "us", "%.1f", to_call, (int)rounds, 1);
    report("update-pause", 1, "us", "%.1f", to_pause, (int)rounds, 1);
    report("update-back-call", 1, "us", "%.1f", back_call, (int)rounds, 1);
    report("update-back-pause", 1, "us", "%.1f", back_pause, (int)rounds, 1);
}

/* ---- jitter ----------------------------------------------------------------------------- */

static inline uint64_t read_tsc(void)
{
    uint32_t lo, hi;
    __asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
    return (uint64_t)hi << 32 | lo;
}

/* Gap histogram: gaps below 8 ticks each have a bucket, above that 8 buckets per octave. */
enum { JITTER_BUCKETS = 8 * 64 };

static unsigned jitter_bucket(uint64_t g)
{
    if (g < 8)
        return (unsigned)g;
    int msb = 63 - __builtin_clzll(g);
    return (unsigned)(msb - 2) * 8 + (unsigned)((g >> (msb - 3)) & 7);
}

/* The largest gap (ticks) that falls in bucket `b`. */
static uint64_t jitter_bucket_top(unsigned b)
{
    if (b < 8)
        return b;
    unsigned msb = b / 8 + 2, sub = b % 8;
    return ((uint64_t)(9 + sub) << (msb - 3)) - 1;
}

/* The upper end of the bucket holding the gap at fraction `q` of `n` gaps, in ticks. */
static uint64_t jitter_quantile(const uint64_t *hist, uint64_t n, double q)
{
    uint64_t want = (uint64_t)(q * (double)n), seen = 0;
    for (unsigned b = 0; b < JITTER_BUCKETS; b++) {
        seen += hist[b];
        if (seen > want)
            return jitter_bucket_top(b);
    }
    return jitter_bucket_top(JITTER_BUCKETS - 1);
}

static void mode_jitter(int argc, char **argv)
{
    if (argc > 4)
        die("usage: uperf jitter [SECONDS [IMAGE]]");
    long secs = argc > 2 ? parse_count(argv[2], "seconds") : 10;
    if (secs < 1 || secs > 3600)
        die("SECONDS is 1..3600");
    int first, last;
    cpu_ends(&first, &last);
    const char *policy = "the one scheduling class";
    if (on_reef && argc > 3) {
        /* The last core restarted in IMAGE (the real-time /boot/reef-rt), this process alone
         * on it. */
        int e = reef_core_rt((unsigned)last, argv[3]);
        if (e)
            die("reef_core_rt(%d, %s): %s", last, argv[3], strerror(-e));
        policy = argv[3];
    }
    pin_to(last);
    if (!on_reef) {
        /* Linux's best case: real-time priority, and no real-time throttling (by default a
         * SCHED_FIFO task that never sleeps is held off 50 ms every second). */
        struct sched_param sp = {.sched_priority = 50};
        int fd = open("/proc/sys/kernel/sched_rt_runtime_us", O_WRONLY);
        int unthrottled = fd >= 0 && write(fd, "-1", 2) == 2;
        if (fd >= 0)
            close(fd);
        if (sched_setscheduler(0, SCHED_FIFO, &sp) != 0)
            policy = "SCHED_OTHER (SCHED_FIFO refused)";
        else
            policy = unthrottled ? "SCHED_FIFO 50, real-time throttling off"
                                 : "SCHED_FIFO 50, real-time throttling on";
    }
    double t0 = now_s();
    uint64_t c0 = read_tsc();
    while (now_s() - t0 < 0.2)
        ;
    double t1 = now_s();
    uint64_t c1 = read_tsc();
    double ticks_per_us = (double)(c1 - c0) / ((t1 - t0) * 1e6);
    if (!(ticks_per_us > 0))
        die("the TSC did not advance over 0.2 s");
    printf("uperf: jitter: cpu %d, %s, TSC %.1f MHz, %ld s\n", last, policy, ticks_per_us,
           secs);
    static uint64_t hist[JITTER_BUCKETS];
    uint64_t end = c1 + (uint64_t)((double)secs * 1e6 * ticks_per_us);
    uint64_t over = (uint64_t)(10 * ticks_per_us), n = 0, largest = 0, overs = 0;
    uint64_t prev = read_tsc();
    for (;;) {
        uint64_t now = read_tsc();
        uint64_t gap = now - prev;
        prev = now;
        hist[jitter_bucket(gap)]++;
        n++;
        if (gap > largest)
            largest = gap;
        if (gap > over)
            overs++;
        if (now >= end)
            break;
    }
    double max_us = (double)largest / ticks_per_us;
    double p9999 = (double)jitter_quantile(hist, n, 0.9999) / ticks_per_us;
    double p999 = (double)jitter_quantile(hist, n, 0.999) / ticks_per_us;
    printf("uperf jitter threads=1 %.1f us max=%.1f p9999=%.2f p999=%.2f over10us=%llu "
           "iters=%llu reps=1\n",
           max_us, max_us, p9999, p999, (unsigned long long)overs, (unsigned long long)n);
}

/* ---- main ------------------------------------------------------------------------------- */

int main(int argc, char **argv, char **envp)
{
    if (argc == 2 && strcmp(argv[1], "noop") == 0)
        return 0;
    setvbuf(stdout, NULL, _IONBF, 0);
    while (argc >= 3 && (strcmp(argv[1], "-b") == 0 || strcmp(argv[1], "-n") == 0)) {
        if (argv[1][1] == 'b') {
            char *end;
            budget_s = strtod(argv[2], &end);
            if (*end || end == argv[2] || !(budget_s > 0))
                die("bad budget -b %s (seconds, more than 0)", argv[2]);
        } else {
            net_mode = argv[2];
            if (strcmp(net_mode, "kernel") && strcmp(net_mode, "server") &&
                strcmp(net_mode, "direct"))
                die("bad network mode -n %s (kernel, server or direct)", net_mode);
        }
        /* Drop the option and its value, keeping argv[0] in front of the mode. */
        argv[2] = argv[0];
        argv += 2;
        argc -= 2;
    }
    if (argc < 2)
        die("usage: uperf [-b SECONDS] null|spawn|pspawn [ITERS [REPS]] | "
            "uperf [-b SECONDS] vmops N [OPS [REPS]] | uperf [-b SECONDS] vmlat N [OPS] | "
            "uperf [-b SECONDS] msgrtt|msgtput|mboxrtt|mboxtput|pipertt|sockrtt|grantrtt|granttput "
            "[ITERS [REPS]] | uperf [-b SECONDS] [-n kernel|server|direct] echortt ADDR:PORT SIZE "
            "[ITERS [REPS]] | uperf [-b SECONDS] [-n kernel|server|direct] sinktput ADDR:PORT "
            "[CHUNKS [REPS]] | uperf [-n kernel|server|direct] httpd PORT | "
            "uperf -n server switch ADDR:PORT [SWITCHES] | uperf corectl BUSY [ITERS] | "
            "uperf park BUSY [ROUNDS] | uperf update IMAGE [ROUNDS] | "
            "uperf jitter [SECONDS [IMAGE]]");
    const char *env = getenv("REEF_SELF");
    self = env && *env ? env : strchr(argv[0], '/') ? argv[0] : "/proc/self/exe";
    environment = envp;
    noop_argv[0] = (char *)self;
    noop_argv[1] = "noop";
    struct utsname u;
    if (uname(&u) == 0) {
        printf("uperf: %s %s, %ld cpus online\n", u.sysname, u.release,
               sysconf(_SC_NPROCESSORS_ONLN));
        on_reef = strstr(u.release, "-reef") != NULL;
    }
    if (strcmp(argv[1], "null") == 0)
        mode_null(argc, argv);
    else if (strcmp(argv[1], "spawn") == 0)
        mode_spawn(argc, argv, "spawn");
    else if (strcmp(argv[1], "run") == 0)
        mode_run(argc, argv);
    else if (strcmp(argv[1], "pspawn") == 0) {
        use_posix_spawn = 1;
        mode_spawn(argc, argv, "pspawn");
    } else if (strcmp(argv[1], "vmops") == 0)
        mode_vmops(argc, argv);
    else if (strcmp(argv[1], "vmlat") == 0)
        mode_vmlat(argc, argv);
    else if (strcmp(argv[1], "corectl") == 0)
        mode_corectl(argc, argv);
    else if (strcmp(argv[1], "jitter") == 0)
        mode_jitter(argc, argv);
    else if (strcmp(argv[1], "update") == 0)
        mode_update(argc, argv);
    else if (strcmp(argv[1], "park") == 0)
        mode_park(argc, argv);
    else if (strcmp(argv[1], "echortt") == 0)
        mode_echortt(argc, argv);
    else if (strcmp(argv[1], "sinktput") == 0)
        mode_sinktput(argc, argv);
    else if (strcmp(argv[1], "httpd") == 0)
        mode_httpd(argc, argv);
    else if (strcmp(argv[1], "switch") == 0)
        mode_switch(argc, argv);
    else if (!strcmp(argv[1], "msgrtt") || !strcmp(argv[1], "msgtput") ||
             !strcmp(argv[1], "mboxrtt") || !strcmp(argv[1], "mboxtput") ||
             !strcmp(argv[1], "pipertt") || !strcmp(argv[1], "sockrtt") ||
             !strcmp(argv[1], "tcprtt") || !strcmp(argv[1], "grantrtt") ||
             !strcmp(argv[1], "granttput"))
        mode_msg(argc, argv, argv[1]);
    else
        die("unknown mode %s", argv[1]);
    return 0;
}
