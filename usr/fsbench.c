/*
 * fsbench: the file-system throughput benchmark of NrOS's Figure 3 (a measurement program, not a
 * test: it prints numbers, no PASS line).
 *
 *   fsbench [-t threads] [-w write_percent] [-s shared|private] [-d seconds] [-f file_size_kib]
 *           [-b block_size]
 *
 *   -t  threads (default: one per CPU this process may run on); thread i is pinned to the i-th
 *       allowed CPU (modulo their number)
 *   -w  percentage of operations that are writes, 0..100 (default 0); each thread draws every
 *       operation with its own PRNG (xorshift64*, seeded by the thread index)
 *   -s  shared: all threads use one file, each opening it itself (default);
 *       private: each thread has a file of its own
 *   -d  duration of the timed phase in seconds, may be fractional (default 2)
 *   -f  size of each file in KiB (default 256)
 *   -b  block size in bytes, a multiple of 8 of at least 32 dividing the file size (default 1024)
 *
 * The files (/tmp/fsbench.<pid>.shared or /tmp/fsbench.<pid>.<i>) are created and filled before
 * timing. The threads then meet at a barrier; for the duration each one does pread or pwrite of
 * one block at a random block-aligned offset, counting operations, until the main thread raises
 * the stop flag. Every block written carries a header (writer, per-thread sequence number, block
 * index) and a payload derived from it.
 *
 * Sanity check after the run (printed, and the exit status is 1 when it fails):
 *   private: during the run every read must return the block this thread last wrote there (or
 *            the initial fill); afterwards every block is re-read and must hold exactly the last
 *            write of its thread (or the initial fill when never written);
 *   shared:  afterwards every block is re-read and must be one whole write of some thread (or the
 *            initial fill), with a sequence number that thread reached.
 *
 * Output: `fsbench: ...` lines for the set-up, one per thread (`fsbench: thread I cpu C ops=..
 * reads=.. writes=..`) and the sanity check, then one result line:
 *
 *   fsbench threads=2 write_pct=100 mode=shared block=1024 file_kib=256 seconds=2.000 ops=N
 *   ops_per_sec=R sanity=ok
 *
 * Errors print `fsbench: error: ...` and exit 1. Times come from clock_gettime(CLOCK_MONOTONIC).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define MAX_THREADS 256
#define MAGIC 0x6673626e63682121ull /* "fsbnch!!" */
#define INITIAL_WRITER 0xffffffffull

static void die(const char *fmt, ...) __attribute__((noreturn, format(printf, 1, 2)));
static void die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    printf("fsbench: error: ");
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

/* ---- configuration ---- */

static int nthreads, write_pct, shared = 1;
static double seconds = 2.0;
static long file_kib = 256, block = 1024;
static long nblocks;
static int cpus[MAX_THREADS * 4], ncpus;
static char paths[MAX_THREADS][64];

/* ---- block contents ---- */

static uint64_t mix(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ull;
    x ^= x >> 33;
    return x;
}

static void make_block(uint64_t *w, uint64_t writer, uint64_t seq, uint64_t idx)
{
    w[0] = MAGIC;
    w[1] = writer;
    w[2] = seq;
    w[3] = idx;
    uint64_t v = mix(writer * 0x9e3779b97f4a7c15ull ^ seq ^ (idx << 40));
    for (long i = 4; i < block / 8; i++)
        w[i] = v + (uint64_t)i;
}

/* Whether `w` is exactly make_block(w[1], w[2], idx). */
static int well_formed(const uint64_t *w, uint64_t idx)
{
    if (w[0] != MAGIC || w[3] != idx)
        return 0;
    uint64_t v = mix(w[1] * 0x9e3779b97f4a7c15ull ^ w[2] ^ (idx << 40));
    for (long i = 4; i < block / 8; i++)
        if (w[i] != v + (uint64_t)i)
            return 0;
    return 1;
}

static void fill_file(const char *path)
{
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
    if (fd < 0)
        die("open(%s): %s", path, strerror(errno));
    uint64_t *buf = malloc(block);
    if (!buf)
        die("out of memory");
    for (long b = 0; b < nblocks; b++) {
        make_block(buf, INITIAL_WRITER, 0, b);
        if (pwrite(fd, buf, block, b * block) != block)
            die("filling %s: pwrite: %s", path, strerror(errno));
    }
    free(buf);
    if (close(fd) != 0)
        die("close(%s): %s", path, strerror(errno));
}

/* ---- threads ---- */

struct worker {
    pthread_t thread;
    int index, cpu;
    uint64_t ops, reads, writes, seq, bad_reads;
    uint64_t *last_seq; /* private mode: this thread's last sequence number per block */
    char bad[160];
} __attribute__((aligned(128)));

static struct worker workers[MAX_THREADS];
static pthread_barrier_t start_line;
static atomic_int stop;

static void *work(void *arg)
{
    struct worker *me = arg;
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(me->cpu, &set);
    int e = pthread_setaffinity_np(pthread_self(), sizeof set, &set);
    if (e)
        die("thread %d: pinning to cpu %d: %s", me->index, me->cpu, strerror(e));
    const char *path = paths[shared ? 0 : me->index];
    int fd = open(path, O_RDWR);
    if (fd < 0)
        die("thread %d: open(%s): %s", me->index, path, strerror(errno));
    uint64_t *buf = aligned_alloc(64, block);
    if (!buf)
        die("out of memory");
    uint64_t x = mix((uint64_t)me->index + 1) | 1;
    pthread_barrier_wait(&start_line);
    while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        uint64_t r = x * 0x2545f4914f6cdd1dull;
        uint64_t idx = (r >> 8) % (uint64_t)nblocks;
        off_t off = (off_t)idx * block;
        if ((long)((r >> 40) % 100) < write_pct) {
            me->seq++;
            make_block(buf, (uint64_t)me->index, me->seq, idx);
            if (pwrite(fd, buf, block, off) != block)
                die("thread %d: pwrite at %lld: %s", me->index, (long long)off, strerror(errno));
            if (!shared)
                me->last_seq[idx] = me->seq;
            me->writes++;
        } else {
            if (pread(fd, buf, block, off) != block)
                die("thread %d: pread at %lld: %s", me->index, (long long)off, strerror(errno));
            if (!shared) {
                /* Only this thread writes this file: the header must be its last write. */
                uint64_t want_writer = me->last_seq[idx] ? (uint64_t)me->index : INITIAL_WRITER;
                if (buf[0] != MAGIC || buf[1] != want_writer || buf[2] != me->last_seq[idx] ||
                    buf[3] != idx) {
                    if (!me->bad_reads)
                        snprintf(me->bad, sizeof me->bad,
                                 "thread %d read block %llu: writer %llu seq %llu block %llu, "
                                 "expected writer %llu seq %llu",
                                 me->index, (unsigned long long)idx,
                                 (unsigned long long)buf[1], (unsigned long long)buf[2],
                                 (unsigned long long)buf[3], (unsigned long long)want_writer,
                                 (unsigned long long)me->last_seq[idx]);
                    me->bad_reads++;
                }
            }
            me->reads++;
        }
        me->ops++;
    }
    free(buf);
    if (close(fd) != 0)
        die("thread %d: close: %s", me->index, strerror(errno));
    return NULL;
}

/* ---- sanity check ---- */

/* Re-reads every block; returns the number of problems (the first described in `why`). */
static long verify(char *why, size_t cap, long *written, long *initial)
{
    long problems = 0;
    *written = *initial = 0;
    uint64_t *buf = malloc(block);
    if (!buf)
        die("out of memory");
    for (int f = 0; f < (shared ? 1 : nthreads); f++) {
        int fd = open(paths[f], O_RDONLY);
        if (fd < 0)
            die("open(%s): %s", paths[f], strerror(errno));
        for (long b = 0; b < nblocks; b++) {
            if (pread(fd, buf, block, b * block) != block)
                die("re-reading %s: pread: %s", paths[f], strerror(errno));
            const char *bad = NULL;
            uint64_t want_writer = INITIAL_WRITER, want_seq = 0;
            if (!shared && workers[f].last_seq[b]) {
                want_writer = (uint64_t)f;
                want_seq = workers[f].last_seq[b];
            }
            if (!well_formed(buf, (uint64_t)b))
                bad = "not one whole write";
            else if (!shared && (buf[1] != want_writer || buf[2] != want_seq))
                bad = "not the thread's last write";
            else if (shared && buf[1] != INITIAL_WRITER &&
                     (buf[1] >= (uint64_t)nthreads || buf[2] == 0 ||
                      buf[2] > workers[buf[1]].seq))
                bad = "a write no thread made";
            else if (shared && buf[1] == INITIAL_WRITER && buf[2] != 0)
                bad = "a corrupted initial fill";
            if (bad) {
                if (!problems)
                    snprintf(why, cap,
                             "%s block %ld: %s (writer %llu seq %llu, expected writer %lld seq "
                             "%llu)",
                             paths[f], b, bad, (unsigned long long)buf[1],
                             (unsigned long long)buf[2],
                             shared ? -1LL : (long long)(int64_t)want_writer,
                             (unsigned long long)want_seq);
                problems++;
            } else if (buf[1] == INITIAL_WRITER) {
                (*initial)++;
            } else {
                (*written)++;
            }
        }
        close(fd);
    }
    free(buf);
    return problems;
}

/* ---- main ---- */

static long parse_long(const char *s, const char *what, long lo, long hi)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || *end || end == s || v < lo || v > hi)
        die("bad %s %s (%ld..%ld)", what, s, lo, hi);
    return v;
}

static void usage(void)
{
    die("usage: fsbench [-t threads] [-w write_percent] [-s shared|private] [-d seconds] "
        "[-f file_size_kib] [-b block_size]");
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IONBF, 0);
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) != 0)
        die("sched_getaffinity: %s", strerror(errno));
    for (int c = 0; c < CPU_SETSIZE && ncpus < (int)(sizeof cpus / sizeof cpus[0]); c++)
        if (CPU_ISSET(c, &set))
            cpus[ncpus++] = c;
    if (ncpus == 0)
        die("no CPU in the affinity mask");
    nthreads = ncpus < MAX_THREADS ? ncpus : MAX_THREADS;

    int opt;
    while ((opt = getopt(argc, argv, "t:w:s:d:f:b:")) != -1) {
        switch (opt) {
        case 't':
            nthreads = (int)parse_long(optarg, "thread count", 1, MAX_THREADS);
            break;
        case 'w':
            write_pct = (int)parse_long(optarg, "write percentage", 0, 100);
            break;
        case 's':
            if (!strcmp(optarg, "shared"))
                shared = 1;
            else if (!strcmp(optarg, "private"))
                shared = 0;
            else
                die("bad mode %s (shared or private)", optarg);
            break;
        case 'd': {
            char *end;
            seconds = strtod(optarg, &end);
            if (*end || end == optarg || !(seconds > 0) || seconds > 3600)
                die("bad duration %s (seconds, 0 < d <= 3600)", optarg);
            break;
        }
        case 'f':
            file_kib = parse_long(optarg, "file size", 1, 1L << 22);
            break;
        case 'b':
            block = parse_long(optarg, "block size", 32, 1L << 20);
            break;
        default:
            usage();
        }
    }
    if (optind != argc)
        usage();
    if (block % 8 || (file_kib * 1024) % block)
        die("block size %ld must be a multiple of 8 dividing the file size %ld KiB", block,
            file_kib);
    nblocks = file_kib * 1024 / block;

    int nfiles = shared ? 1 : nthreads;
    for (int f = 0; f < nfiles; f++) {
        if (shared)
            snprintf(paths[f], sizeof paths[f], "/tmp/fsbench.%d.shared", getpid());
        else
            snprintf(paths[f], sizeof paths[f], "/tmp/fsbench.%d.%d", getpid(), f);
        fill_file(paths[f]);
    }
    printf("fsbench: %d thread(s) on %d allowed cpu(s), %s: %d file(s) of %ld KiB filled, %ld "
           "blocks of %ld bytes each\n",
           nthreads, ncpus, shared ? "shared" : "private", nfiles, file_kib, nblocks, block);

    int e = pthread_barrier_init(&start_line, NULL, (unsigned)nthreads + 1);
    if (e)
        die("pthread_barrier_init: %s", strerror(e));
    for (int i = 0; i < nthreads; i++) {
        struct worker *w = &workers[i];
        w->index = i;
        w->cpu = cpus[i % ncpus];
        if (!shared) {
            w->last_seq = calloc((size_t)nblocks, sizeof *w->last_seq);
            if (!w->last_seq)
                die("out of memory");
        }
        e = pthread_create(&w->thread, NULL, work, w);
        if (e)
            die("pthread_create: %s", strerror(e));
    }
    pthread_barrier_wait(&start_line);
    double t0 = now_s();
    struct timespec d = {(time_t)seconds, (long)((seconds - (double)(time_t)seconds) * 1e9)};
    while (nanosleep(&d, &d) != 0 && errno == EINTR)
        ;
    atomic_store(&stop, 1);
    double elapsed = now_s() - t0;
    uint64_t ops = 0, bad_reads = 0;
    const char *first_bad = NULL;
    for (int i = 0; i < nthreads; i++) {
        struct worker *w = &workers[i];
        e = pthread_join(w->thread, NULL);
        if (e)
            die("pthread_join: %s", strerror(e));
        ops += w->ops;
        bad_reads += w->bad_reads;
        if (w->bad_reads && !first_bad)
            first_bad = w->bad;
        printf("fsbench: thread %d cpu %d ops=%llu reads=%llu writes=%llu\n", i, w->cpu,
               (unsigned long long)w->ops, (unsigned long long)w->reads,
               (unsigned long long)w->writes);
    }

    char why[256] = "";
    long written, initial;
    long problems = verify(why, sizeof why, &written, &initial);
    int ok = problems == 0 && bad_reads == 0;
    if (bad_reads)
        printf("fsbench: sanity FAILED: %llu reads during the run returned the wrong block; "
               "first: %s\n",
               (unsigned long long)bad_reads, first_bad);
    if (problems)
        printf("fsbench: sanity FAILED: %ld of %ld blocks wrong on re-reading; first: %s\n",
               problems, nblocks * nfiles, why);
    if (ok && shared)
        printf("fsbench: sanity ok: all %ld blocks re-read whole: %ld last written by some "
               "thread, %ld still the initial fill\n",
               nblocks, written, initial);
    else if (ok)
        printf("fsbench: sanity ok: every read during the run and every block re-read after it "
               "(%ld written, %ld initial) held the thread's last write to it\n",
               written, initial);

    for (int f = 0; f < nfiles; f++)
        if (unlink(paths[f]) != 0)
            die("unlink(%s): %s", paths[f], strerror(errno));
    printf("fsbench threads=%d write_pct=%d mode=%s block=%ld file_kib=%ld seconds=%.3f "
           "ops=%llu ops_per_sec=%.0f sanity=%s\n",
           nthreads, write_pct, shared ? "shared" : "private", block, file_kib, elapsed,
           (unsigned long long)ops, (double)ops / elapsed, ok ? "ok" : "FAILED");
    return ok ? 0 : 1;
}
