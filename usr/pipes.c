/*
 * pipes: pipes between processes pinned to different cores, every byte checked.
 *
 * - pipe and pipe2: access modes, S_ISFIFO, EBADF on the wrong end, O_CLOEXEC and O_NONBLOCK
 *   visible with F_GETFD/F_GETFL (and settable with F_SETFL/F_SETFD), pipe2 with a bad flag is
 *   EINVAL, and across exec the O_CLOEXEC pipe is closed while a plain one stays open;
 * - a 1 MiB stream from a producer to a consumer on another core, written and read in chunks of
 *   varying sizes, every byte checked, then EOF;
 * - writes of at most PIPE_BUF (4096) bytes are atomic: N writers on different cores write
 *   records of 16..4096 bytes into one pipe; the reader finds every record whole, once, in each
 *   writer's order;
 * - EOF only once every write end is closed, including ends a child inherited and dup'ed
 *   (until then an O_NONBLOCK read is EAGAIN);
 * - a write of nothing returns 0 at once: on an empty pipe, a full one, with two empty iovecs
 *   (the writev musl's unbuffered printf ends with), and with no reader left (no SIGPIPE);
 * - no reader left: write kills with SIGPIPE (a child's wait status), returns EPIPE with SIGPIPE
 *   ignored, and runs a SIGPIPE handler and returns EPIPE with one; a writer blocked on a full
 *   pipe gets EPIPE when the reader on another core exits, and is woken by that reader's reads;
 * - O_NONBLOCK: EAGAIN on an empty pipe's read and on a full pipe's write, a write of PIPE_BUF
 *   bytes with less room is EAGAIN (no partial atomic write), a big write into an empty pipe
 *   writes exactly the capacity; FIONREAD counts what is in the pipe;
 * - poll and ppoll: POLLIN with data, POLLOUT with room (not when full), POLLHUP once the
 *   writers are gone, POLLERR once the readers are gone, timeouts 0 and 10 ms return 0 with no
 *   events, POLLNVAL for a closed fd, a negative fd ignored, a poll blocked forever woken by a
 *   write from another core, ppoll's signal mask letting a pending signal in (EINTR);
 * - select and pselect6: readable and writable sets, timeouts 0 and 10 ms return 0 with the sets
 *   cleared, EBADF for a closed fd, EOF readable, a blocking select woken by a process on
 *   another core, pselect6's signal mask letting a pending signal in (EINTR);
 * - a blocking read interrupted by a signal whose handler has no SA_RESTART returns EINTR; with
 *   SA_RESTART the read goes on and returns the data;
 * - AF_UNIX stream socket pairs: S_ISSOCK, O_RDWR, SOCK_CLOEXEC and SOCK_NONBLOCK; Linux's
 *   errors for AF_INET (EOPNOTSUPP), an unknown domain (EAFNOSUPPORT), a bad type flag (EINVAL)
 *   and protocol (EPROTONOSUPPORT); 256 KiB each way at once between processes on two cores,
 *   every byte checked; send/recv with MSG_DONTWAIT (EAGAIN) and MSG_NOSIGNAL, recvfrom's
 *   empty source address; shutdown(SHUT_WR) gives the peer EOF and the writer EPIPE, a bad
 *   `how` is EINVAL; ENOTSOCK for send, recv and shutdown on a pipe; after the peer closes,
 *   poll says POLLIN|POLLHUP, a read 0 and a send EPIPE;
 * - dup2 onto stdin and stdout across fork + exec: this program re-executed as `upper` filters a
 *   128 KiB text from a feeder process to the parent, which checks the uppercased result.
 *
 * N is the number of usable cores, at least 2. Processes synchronize through pipes under test
 * or MAP_SHARED memory (spinning with sched_yield); where a check wants a process to be blocked
 * first (woken poll, select, write), the other side only yields a while before acting, so the
 * check holds whichever happens first.
 */
#include "reef-test.h"
#include <sys/uio.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/stat.h>

#define STREAM_BYTES (1 << 20) /* bytes through the producer/consumer pipe */
#define ATOMIC_RECORDS 200     /* records per writer in the PIPE_BUF atomicity check */
#define WAKE_ROUNDS 20         /* blocked poll/select woken by another core */
#define FILTER_BYTES (128 << 10) /* bytes through the exec'ed filter */
#define YIELDS 200             /* sched_yield calls to give the other side time to block */
#define SOCKET_BYTES (256 << 10) /* bytes each way through a socket pair */

#define MAX_CPUS 64
#define PIPEBUF 4096 /* PIPE_BUF on Linux */

static int ncpu;
static int cpus[MAX_CPUS];
static int nwork;
static const char *self;
static char **environment;

static int cpu_of(int i)
{
    return cpus[i % ncpu];
}

#define MAX_KIDS TEST_MAX_KIDS

/* Children: test_fork_child and test_reap_all (reef-test.h). */
#define spawn test_fork_child
#define reap_all test_reap_all

struct shared {
    atomic_int step, done;
    atomic_int signals;
    atomic_long value[MAX_KIDS];
};

static struct shared *sh;

static void shared_reset(void)
{
    memset(sh, 0, sizeof *sh);
}

/* Gives another process time to block (not needed for correctness). */
static void linger(void)
{
    for (int i = 0; i < YIELDS; i++)
        sched_yield();
}

/* ---- data ---- */

static uint8_t stream_byte(uint64_t i)
{
    return (uint8_t)((i ^ (i >> 8) ^ (i >> 17)) * 151 + 7);
}

static uint32_t fnv32(const void *p, size_t n)
{
    const uint8_t *b = p;
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * 16777619u;
    return h;
}

static uint32_t lcg(uint32_t *s)
{
    *s = *s * 1103515245u + 12345u;
    return *s >> 8;
}

static void write_all(int fd, const void *buf, size_t n)
{
    size_t done = 0;
    while (done < n) {
        long r = CHECK_SYS(write(fd, (const char *)buf + done, n - done));
        CHECK(r > 0);
        done += (size_t)r;
    }
}

/* Reads exactly n bytes (the pipe may hand them over in pieces); fails at EOF. */
static void read_all(int fd, void *buf, size_t n)
{
    size_t got = 0;
    while (got < n) {
        long r = CHECK_SYS(read(fd, (char *)buf + got, n - got));
        if (r == 0)
            FAIL("EOF after %zu of %zu bytes", got, n);
        got += (size_t)r;
    }
}

static void set_nonblock(int fd, int on)
{
    int fl = CHECK_SYS(fcntl(fd, F_GETFL));
    CHECK_SYS(fcntl(fd, F_SETFL, on ? fl | O_NONBLOCK : fl & ~O_NONBLOCK));
}

static int nread(int fd)
{
    int n = -1;
    CHECK_SYS(ioctl(fd, FIONREAD, &n));
    return n;
}

/* Fills a pipe through its O_NONBLOCK write end; returns the bytes it took (stream_byte data). */
static long fill_pipe(int wr)
{
    uint8_t chunk[PIPEBUF];
    long total = 0;
    for (int pass = 0; pass < 2; pass++) {
        size_t size = pass == 0 ? sizeof chunk : 1;
        for (;;) {
            for (size_t i = 0; i < size; i++)
                chunk[i] = stream_byte((uint64_t)total + i);
            long r = write(wr, chunk, size);
            if (r == -1 && errno == EAGAIN)
                break;
            if (r == -1)
                FAIL("write into the pipe being filled: %s", strerror(errno));
            CHECK(r > 0);
            total += r;
            if (total > (64L << 20))
                FAIL("a pipe took more than 64 MiB without EAGAIN");
        }
    }
    return total;
}

/* Reads `n` bytes of stream_byte data starting at stream offset `from`, checking them. */
static void drain_check(int rd, long from, long n)
{
    uint8_t buf[8192];
    while (n > 0) {
        size_t want = n < (long)sizeof buf ? (size_t)n : sizeof buf;
        long r = CHECK_SYS(read(rd, buf, want));
        if (r == 0)
            FAIL("EOF with %ld bytes still expected", n);
        for (long i = 0; i < r; i++)
            if (buf[i] != stream_byte((uint64_t)(from + i)))
                FAIL("byte %ld of the pipe is 0x%02x, expected 0x%02x", from + i, buf[i],
                     stream_byte((uint64_t)(from + i)));
        from += r;
        n -= r;
    }
}

/* ---- signals ---- */

static volatile sig_atomic_t handled;

static void on_signal(int sig)
{
    (void)sig;
    handled++;
    if (sh)
        atomic_fetch_add(&sh->signals, 1);
}

/* ---- 1. pipe and pipe2 ---- */

static void check_ends(int p[2], int cloexec, int nonblock)
{
    CHECK(p[0] >= 0 && p[1] >= 0 && p[0] != p[1]);
    for (int e = 0; e < 2; e++) {
        int fd = CHECK_SYS(fcntl(p[e], F_GETFD));
        int fl = CHECK_SYS(fcntl(p[e], F_GETFL));
        if (fd != (cloexec ? FD_CLOEXEC : 0))
            FAIL("pipe end %d: F_GETFD 0x%x, expected 0x%x", e, fd, cloexec ? FD_CLOEXEC : 0);
        CHECK_EQ(fl & O_ACCMODE, e == 0 ? O_RDONLY : O_WRONLY);
        CHECK_EQ(!!(fl & O_NONBLOCK), nonblock);
        struct stat st;
        CHECK_SYS(fstat(p[e], &st));
        CHECK(S_ISFIFO(st.st_mode));
    }
    char c = 'x';
    CHECK_ERRNO(write(p[0], &c, 1), EBADF);
    CHECK_ERRNO(read(p[1], &c, 1), EBADF);
    write_all(p[1], "abc", 3);
    char buf[4] = {0};
    read_all(p[0], buf, 3);
    CHECK(memcmp(buf, "abc", 3) == 0);
}

static void creation(void)
{
    int p[2], q[2];
    CHECK_SYS(pipe(p));
    check_ends(p, 0, 0);
    CHECK_SYS(close(p[0]));
    CHECK_SYS(close(p[1]));
    int flags[3] = {O_CLOEXEC, O_NONBLOCK, O_CLOEXEC | O_NONBLOCK};
    for (int i = 0; i < 3; i++) {
        CHECK_SYS(pipe2(p, flags[i]));
        check_ends(p, !!(flags[i] & O_CLOEXEC), !!(flags[i] & O_NONBLOCK));
        CHECK_SYS(close(p[0]));
        CHECK_SYS(close(p[1]));
    }
    CHECK_ERRNO(pipe2(p, O_APPEND), EINVAL);
    CHECK_SYS(pipe2(p, 0));
    check_ends(p, 0, 0);
    set_nonblock(p[0], 1);
    CHECK_SYS(fcntl(p[1], F_SETFD, FD_CLOEXEC));
    CHECK(fcntl(p[0], F_GETFL) & O_NONBLOCK);
    CHECK_EQ(fcntl(p[0], F_GETFD), 0);
    CHECK_EQ(fcntl(p[1], F_GETFD), FD_CLOEXEC);
    CHECK_EQ(fcntl(p[1], F_GETFL) & O_NONBLOCK, 0);
    CHECK_SYS(close(p[0]));
    CHECK_SYS(close(p[1]));
    SAY("pipe, pipe2: ends O_RDONLY/O_WRONLY FIFOs, EBADF on the wrong end, O_CLOEXEC and "
        "O_NONBLOCK seen by F_GETFD/F_GETFL and set by F_SETFD/F_SETFL, bad flag EINVAL");

    /* Across exec: the O_CLOEXEC pipe is gone, the plain one is still there. */
    CHECK_SYS(pipe2(p, O_CLOEXEC));
    CHECK_SYS(pipe(q));
    pid_t pid = CHECK_SYS(fork());
    if (pid == 0) {
        char a[16], b[16], c[16], d[16];
        snprintf(a, sizeof a, "%d", p[0]);
        snprintf(b, sizeof b, "%d", p[1]);
        snprintf(c, sizeof c, "%d", q[0]);
        snprintf(d, sizeof d, "%d", q[1]);
        char *argv[] = {(char *)self, "fdcheck", a, b, c, d, NULL};
        execve(self, argv, environment);
        _exit(100);
    }
    CHECK_CHILD_EXIT(pid, 0);
    for (int e = 0; e < 2; e++) {
        CHECK_SYS(close(p[e]));
        CHECK_SYS(close(q[e]));
    }
    SAY("exec: the O_CLOEXEC pipe's ends are closed in the new program, a plain pipe's are open");
}

/* `pipes fdcheck A B C D`: A and B must be closed, C and D open. */
static int fdcheck(char **argv)
{
    for (int i = 0; i < 4; i++) {
        int fd = atoi(argv[i]);
        errno = 0;
        int r = fcntl(fd, F_GETFD);
        if (i < 2 && !(r == -1 && errno == EBADF))
            return 1 + i;
        if (i >= 2 && r != 0)
            return 1 + i;
    }
    return 0;
}

/* ---- 2. a 1 MiB stream across cores ---- */

static void stream(void)
{
    int p[2];
    CHECK_SYS(pipe(p));
    if (spawn("stream producer", cpu_of(0)) == 0) {
        CHECK_SYS(close(p[0]));
        static uint8_t buf[9000];
        uint32_t seed = 1;
        long off = 0;
        while (off < STREAM_BYTES) {
            long size = 1 + lcg(&seed) % sizeof buf;
            if (size > STREAM_BYTES - off)
                size = STREAM_BYTES - off;
            for (long i = 0; i < size; i++)
                buf[i] = stream_byte((uint64_t)(off + i));
            write_all(p[1], buf, (size_t)size);
            off += size;
        }
        _exit(0);
    }
    if (spawn("stream consumer", cpu_of(1)) == 0) {
        CHECK_SYS(close(p[1]));
        static uint8_t buf[12000];
        uint32_t seed = 2;
        long off = 0, reads = 0;
        for (;;) {
            size_t want = 1 + lcg(&seed) % sizeof buf;
            long r = CHECK_SYS(read(p[0], buf, want));
            if (r == 0)
                break;
            CHECK(r <= (long)want);
            for (long i = 0; i < r; i++)
                if (buf[i] != stream_byte((uint64_t)(off + i)))
                    FAIL("stream byte %ld is 0x%02x, expected 0x%02x", off + i, buf[i],
                         stream_byte((uint64_t)(off + i)));
            off += r;
            reads++;
        }
        CHECK_EQ(off, STREAM_BYTES);
        atomic_store(&sh->value[0], reads);
        _exit(0);
    }
    CHECK_SYS(close(p[0]));
    CHECK_SYS(close(p[1]));
    reap_all();
    SAY("stream: %d bytes from core %d to core %d in varying chunks (%ld reads), every byte "
        "right, then EOF",
        STREAM_BYTES, cpu_of(0), cpu_of(1), atomic_load(&sh->value[0]));
}

/* ---- 3. PIPE_BUF atomicity ---- */

#define AREC_MAGIC 0x41524543u /* "AREC" */
#define AREC_MIN 16

static size_t arec_len(uint32_t w, uint32_t seq)
{
    if (seq % 10 == 9)
        return PIPEBUF;
    return AREC_MIN + (w * 977 + seq * 4099) % (PIPEBUF - AREC_MIN + 1);
}

/* header: magic, writer, seq; payload; trailer: checksum of everything before it. */
static void arec_make(uint8_t *buf, uint32_t w, uint32_t seq)
{
    size_t len = arec_len(w, seq);
    uint32_t h[3] = {AREC_MAGIC, w, seq};
    memcpy(buf, h, 12);
    for (size_t i = 12; i < len - 4; i++)
        buf[i] = (uint8_t)(w * 31 + seq * 7 + i);
    uint32_t sum = fnv32(buf, len - 4);
    memcpy(buf + len - 4, &sum, 4);
}

static void atomic_writes(void)
{
    int p[2];
    CHECK_SYS(pipe(p));
    long total = 0;
    for (int w = 0; w < nwork; w++) {
        for (int seq = 0; seq < ATOMIC_RECORDS; seq++)
            total += (long)arec_len((uint32_t)w, (uint32_t)seq);
        if (spawn("PIPE_BUF writer", cpu_of(w)) == 0) {
            CHECK_SYS(close(p[0]));
            uint8_t buf[PIPEBUF];
            for (int seq = 0; seq < ATOMIC_RECORDS; seq++) {
                size_t len = arec_len((uint32_t)w, (uint32_t)seq);
                arec_make(buf, (uint32_t)w, (uint32_t)seq);
                long r = CHECK_SYS(write(p[1], buf, len));
                if (r != (long)len)
                    FAIL("writer %d: write of %zu bytes (<= PIPE_BUF) returned %ld", w, len, r);
            }
            _exit(0);
        }
    }
    CHECK_SYS(close(p[1]));
    uint8_t *data = malloc((size_t)total + 1);
    CHECK(data != NULL);
    long got = 0;
    for (;;) {
        long r = CHECK_SYS(read(p[0], data + got, (size_t)(total + 1 - got)));
        if (r == 0)
            break;
        got += r;
        if (got > total)
            FAIL("more than the %ld bytes written came out of the pipe", total);
    }
    CHECK_SYS(close(p[0]));
    reap_all();
    CHECK_EQ(got, total);
    int next[MAX_KIDS] = {0};
    uint8_t want[PIPEBUF];
    long off = 0, count = 0;
    while (off < total) {
        uint32_t h[3];
        if (total - off < AREC_MIN)
            FAIL("%ld stray bytes at offset %ld", total - off, off);
        memcpy(h, data + off, 12);
        if (h[0] != AREC_MAGIC || h[1] >= (uint32_t)nwork)
            FAIL("no record header at stream offset %ld (magic 0x%x writer %u): records "
                 "interleaved",
                 off, h[0], h[1]);
        if (h[2] != (uint32_t)next[h[1]])
            FAIL("offset %ld: writer %u seq %u, expected seq %d", off, h[1], h[2], next[h[1]]);
        size_t len = arec_len(h[1], h[2]);
        if (off + (long)len > total)
            FAIL("offset %ld: record of %zu bytes cut by the end", off, len);
        arec_make(want, h[1], h[2]);
        if (memcmp(want, data + off, len) != 0)
            FAIL("offset %ld: record writer %u seq %u (%zu bytes) is not whole: interleaved", off,
                 h[1], h[2], len);
        next[h[1]]++;
        off += (long)len;
        count++;
    }
    for (int w = 0; w < nwork; w++)
        CHECK_EQ(next[w], ATOMIC_RECORDS);
    free(data);
    SAY("PIPE_BUF: %d writers on %d cores, %ld records of 16..4096 bytes, none interleaved, each "
        "once and in order",
        nwork, ncpu < nwork ? ncpu : nwork, count);
}

/* ---- 4. EOF ---- */

static void eof(void)
{
    int p[2];
    CHECK_SYS(pipe(p));
    shared_reset();
    if (spawn("EOF writer", cpu_of(1)) == 0) {
        CHECK_SYS(close(p[0]));
        int d = CHECK_SYS(dup(p[1]));
        atomic_store(&sh->step, 1);
        wait_at_least(&sh->done, 1);
        write_all(d, "hello", 5);
        CHECK_SYS(close(p[1]));
        atomic_store(&sh->step, 2);
        wait_at_least(&sh->done, 2);
        _exit(0); /* closes d */
    }
    CHECK_SYS(close(p[1]));
    wait_at_least(&sh->step, 1);
    char buf[8];
    set_nonblock(p[0], 1);
    CHECK_ERRNO(read(p[0], buf, sizeof buf), EAGAIN);
    atomic_store(&sh->done, 1);
    wait_at_least(&sh->step, 2);
    set_nonblock(p[0], 0);
    read_all(p[0], buf, 5);
    CHECK(memcmp(buf, "hello", 5) == 0);
    set_nonblock(p[0], 1);
    CHECK_ERRNO(read(p[0], buf, sizeof buf), EAGAIN); /* the dup in the child is still open */
    set_nonblock(p[0], 0);
    atomic_store(&sh->done, 2);
    CHECK_EQ(read(p[0], buf, sizeof buf), 0); /* blocks until the child exits */
    reap_all();
    CHECK_EQ(read(p[0], buf, sizeof buf), 0);
    CHECK_SYS(close(p[0]));
    SAY("EOF: not while a child's inherited or dup'ed write end is open (EAGAIN), then 0 once "
        "the last one closes");
}

static void zero_length(void)
{
    int p[2];
    CHECK_SYS(pipe(p));
    char c = 0;
    CHECK_EQ(write(p[1], &c, 0), 0);
    struct iovec iov[2] = {{&c, 0}, {NULL, 0}};
    CHECK_EQ(writev(p[1], iov, 2), 0);
    /* Full: a write of nothing still does not wait. */
    set_nonblock(p[1], 1);
    static char big[1 << 16];
    while (write(p[1], big, sizeof big) > 0)
        ;
    set_nonblock(p[1], 0);
    CHECK_EQ(write(p[1], &c, 0), 0);
    CHECK_SYS(close(p[0]));
    signal(SIGPIPE, SIG_DFL);
    CHECK_EQ(write(p[1], &c, 0), 0);
    CHECK_SYS(close(p[1]));
    SAY("a write of nothing: 0 at once on an empty and a full pipe, through writev, and without "
        "a reader (no SIGPIPE)");
}

/* ---- 5. EPIPE and SIGPIPE ---- */

static void epipe(void)
{
    int p[2];
    char c = 'x';

    /* Default action: the writer dies of SIGPIPE. */
    CHECK_SYS(pipe(p));
    CHECK_SYS(close(p[0]));
    pid_t pid = spawn("SIGPIPE victim", cpu_of(1));
    if (pid == 0) {
        signal(SIGPIPE, SIG_DFL);
        write(p[1], &c, 1);
        _exit(0);
    }
    test_nkids = 0;
    int st;
    CHECK_EQ(waitpid(pid, &st, 0), pid);
    if (!WIFSIGNALED(st) || WTERMSIG(st) != SIGPIPE)
        FAIL("a write with no reader: the writer %s, expected killed by SIGPIPE",
             describe_wait(st));

    /* Ignored: EPIPE. Handled: the handler runs once, then EPIPE. */
    signal(SIGPIPE, SIG_IGN);
    CHECK_ERRNO(write(p[1], &c, 1), EPIPE);
    handled = 0;
    set_handler(SIGPIPE, on_signal, 0);
    CHECK_ERRNO(write(p[1], &c, 1), EPIPE);
    CHECK_EQ(handled, 1);
    signal(SIGPIPE, SIG_IGN);
    CHECK_SYS(close(p[1]));
    SAY("no reader: SIGPIPE kills the writer by default, EPIPE with SIGPIPE ignored, the handler "
        "runs once and EPIPE with a handler");

    /* A writer blocked on a full pipe is woken by a reader on another core... */
    CHECK_SYS(pipe(p));
    shared_reset();
    set_nonblock(p[1], 1);
    long cap = fill_pipe(p[1]);
    set_nonblock(p[1], 0);
    if (spawn("reader of a full pipe", cpu_of(1)) == 0) {
        CHECK_SYS(close(p[1]));
        wait_at_least(&sh->step, 1);
        linger();
        drain_check(p[0], 0, cap + PIPEBUF);
        atomic_store(&sh->done, 1);
        wait_at_least(&sh->step, 2);
        linger();
        _exit(0); /* ...and gets EPIPE when that reader goes */
    }
    CHECK_SYS(close(p[0]));
    uint8_t buf[PIPEBUF];
    for (int i = 0; i < PIPEBUF; i++)
        buf[i] = stream_byte((uint64_t)(cap + i));
    atomic_store(&sh->step, 1);
    CHECK_EQ(write(p[1], buf, PIPEBUF), PIPEBUF);
    wait_at_least(&sh->done, 1); /* the pipe is empty again */
    set_nonblock(p[1], 1);
    long cap2 = fill_pipe(p[1]);
    CHECK(cap2 >= PIPEBUF);
    set_nonblock(p[1], 0);
    atomic_store(&sh->step, 2);
    CHECK_ERRNO(write(p[1], buf, PIPEBUF), EPIPE);
    reap_all();
    CHECK_SYS(close(p[1]));
    signal(SIGPIPE, SIG_DFL);
    SAY("full pipe (%ld bytes): a blocked writer is woken by a reader on another core, and gets "
        "EPIPE when the reader exits",
        cap);
}

/* ---- 6. O_NONBLOCK and FIONREAD ---- */

static void nonblocking(void)
{
    int p[2];
    CHECK_SYS(pipe2(p, O_NONBLOCK));
    char buf[2000];
    CHECK_ERRNO(read(p[0], buf, sizeof buf), EAGAIN);
    CHECK_EQ(nread(p[0]), 0);
    for (int i = 0; i < 1234; i++)
        buf[i] = (char)stream_byte((uint64_t)i);
    CHECK_EQ(write(p[1], buf, 1234), 1234);
    CHECK_EQ(nread(p[0]), 1234);
    drain_check(p[0], 0, 234);
    CHECK_EQ(nread(p[0]), 1000);
    drain_check(p[0], 234, 1000);
    CHECK_EQ(nread(p[0]), 0);
    CHECK_ERRNO(read(p[0], buf, sizeof buf), EAGAIN);

    long cap = fill_pipe(p[1]);
    CHECK(cap >= PIPEBUF);
    CHECK_EQ(nread(p[0]), cap);
    char c = 'x';
    CHECK_ERRNO(write(p[1], &c, 1), EAGAIN);
    drain_check(p[0], 0, 1);
    /* Room for fewer than PIPE_BUF bytes: a PIPE_BUF write is all or nothing, here EAGAIN. */
    static uint8_t big[1 << 20];
    CHECK_ERRNO(write(p[1], big, PIPEBUF), EAGAIN);
    CHECK_EQ(nread(p[0]), cap - 1);
    drain_check(p[0], 1, cap - 1);
    CHECK_ERRNO(read(p[0], buf, sizeof buf), EAGAIN);

    /* A write bigger than the room writes what fits: all of the empty pipe. */
    for (size_t i = 0; i < sizeof big; i++)
        big[i] = stream_byte(i);
    long n = CHECK_SYS(write(p[1], big, sizeof big));
    CHECK_EQ(n, cap);
    CHECK_EQ(nread(p[0]), cap);
    drain_check(p[0], 0, cap);
    CHECK_SYS(close(p[0]));
    CHECK_SYS(close(p[1]));
    SAY("O_NONBLOCK: EAGAIN reading an empty pipe and writing a full one (capacity %ld), PIPE_BUF "
        "write with less room EAGAIN, 1 MiB write takes the capacity; FIONREAD exact throughout",
        cap);
}

/* ---- 7. poll and ppoll ---- */

static int poll1(int fd, short events, int timeout, short *revents)
{
    struct pollfd pfd = {fd, events, 0x7ff};
    int r = CHECK_SYS(poll(&pfd, 1, timeout));
    *revents = pfd.revents;
    return r;
}

static void poll_checks(void)
{
    int p[2];
    short re;
    CHECK_SYS(pipe(p));
    CHECK_EQ(poll1(p[0], POLLIN, 0, &re), 0);
    CHECK_EQ(re, 0);
    CHECK_EQ(poll1(p[1], POLLOUT, 0, &re), 1);
    CHECK_EQ(re, POLLOUT);
    CHECK_EQ(poll1(p[0], POLLIN, 10, &re), 0);
    CHECK_EQ(re, 0);
    struct pollfd two[2] = {{p[0], POLLIN, 0}, {p[1], POLLOUT, 0}};
    CHECK_EQ(poll(two, 2, 0), 1);
    CHECK_EQ(two[0].revents, 0);
    CHECK_EQ(two[1].revents, POLLOUT);
    write_all(p[1], "0123456789", 10);
    CHECK_EQ(poll(two, 2, 0), 2);
    CHECK_EQ(two[0].revents, POLLIN);
    CHECK_EQ(two[1].revents, POLLOUT);
    struct timespec zero = {0, 0}, short_ts = {0, 10000000};
    CHECK_EQ(ppoll(two, 2, &zero, NULL), 2);
    char buf[16];
    read_all(p[0], buf, 10);
    CHECK(memcmp(buf, "0123456789", 10) == 0);
    CHECK_EQ(ppoll(two, 1, &zero, NULL), 0);
    CHECK_EQ(two[0].revents, 0);
    CHECK_EQ(ppoll(two, 1, &short_ts, NULL), 0);
    CHECK_EQ(two[0].revents, 0);
    SAY("poll/ppoll: POLLIN only with data, POLLOUT with room, timeouts 0 and 10 ms return 0 "
        "with no events");

    /* Full: no POLLOUT. */
    set_nonblock(p[1], 1);
    long cap = fill_pipe(p[1]);
    CHECK_EQ(poll1(p[1], POLLOUT, 0, &re), 0);
    CHECK_EQ(re, 0);
    CHECK_EQ(poll1(p[0], POLLIN, 0, &re), 1);
    CHECK_EQ(re, POLLIN);
    drain_check(p[0], 0, cap - 5);
    /* Writers gone: POLLHUP (with POLLIN while data is left). */
    CHECK_SYS(close(p[1]));
    CHECK_EQ(poll1(p[0], POLLIN, 0, &re), 1);
    CHECK_EQ(re, POLLIN | POLLHUP);
    drain_check(p[0], cap - 5, 5);
    CHECK_EQ(poll1(p[0], POLLIN, 0, &re), 1);
    CHECK_EQ(re, POLLHUP);
    CHECK_EQ(poll1(p[0], POLLIN, -1, &re), 1); /* does not block */
    CHECK_EQ(read(p[0], buf, sizeof buf), 0);
    CHECK_SYS(close(p[0]));
    /* Readers gone: POLLERR for the writer. */
    CHECK_SYS(pipe(p));
    CHECK_SYS(close(p[0]));
    CHECK_EQ(poll1(p[1], POLLOUT, 0, &re), 1);
    if (!(re & POLLERR))
        FAIL("poll of a write end without readers: revents 0x%x, no POLLERR", re);
    /* A closed fd: POLLNVAL; a negative fd: ignored. */
    int closed = p[1];
    CHECK_SYS(close(closed));
    CHECK_EQ(poll1(closed, POLLIN, 0, &re), 1);
    CHECK_EQ(re, POLLNVAL);
    CHECK_SYS(pipe(p));
    write_all(p[1], "x", 1);
    struct pollfd neg[2] = {{-1, POLLIN, 0x55}, {p[0], POLLIN, 0}};
    CHECK_EQ(poll(neg, 2, 0), 1);
    CHECK_EQ(neg[0].revents, 0);
    CHECK_EQ(neg[1].revents, POLLIN);
    read_all(p[0], buf, 1);
    SAY("poll: no POLLOUT when full, POLLHUP when the writers are gone (POLLIN too while data is "
        "left), POLLERR when the readers are gone, POLLNVAL for a closed fd, a negative fd "
        "ignored");

    /* A poll blocked forever, woken by a write on another core. */
    shared_reset();
    if (spawn("poll waker", cpu_of(1)) == 0) {
        CHECK_SYS(close(p[0]));
        for (int r = 1; r <= WAKE_ROUNDS; r++) {
            wait_at_least(&sh->step, r);
            linger();
            write_all(p[1], &r, sizeof r);
        }
        _exit(0);
    }
    CHECK_SYS(close(p[1]));
    for (int r = 1; r <= WAKE_ROUNDS; r++) {
        atomic_store(&sh->step, r);
        CHECK_EQ(poll1(p[0], POLLIN, -1, &re), 1);
        /* After its last write the waker may be gone already. */
        if (re != POLLIN && !(r == WAKE_ROUNDS && re == (POLLIN | POLLHUP)))
            FAIL("poll woken in round %d: revents 0x%x, expected POLLIN", r, re);
        int got;
        read_all(p[0], &got, sizeof got);
        CHECK_EQ(got, r);
    }
    reap_all();
    CHECK_EQ(poll1(p[0], POLLIN, -1, &re), 1);
    CHECK_EQ(re, POLLHUP);

    /* ppoll's mask lets a blocked, pending signal in: EINTR, and the old mask is back. */
    sigset_t usr1, old, none, now;
    sigemptyset(&usr1);
    sigaddset(&usr1, SIGUSR1);
    sigemptyset(&none);
    CHECK_SYS(sigprocmask(SIG_BLOCK, &usr1, &old));
    handled = 0;
    set_handler(SIGUSR1, on_signal, 0);
    CHECK_SYS(kill(getpid(), SIGUSR1));
    CHECK_EQ(handled, 0);
    int q[2];
    CHECK_SYS(pipe(q));
    struct pollfd pq = {q[0], POLLIN, 0};
    struct timespec five = {5, 0};
    CHECK_ERRNO(ppoll(&pq, 1, &five, &none), EINTR);
    CHECK_EQ(handled, 1);
    CHECK_SYS(sigprocmask(SIG_SETMASK, &old, &now));
    CHECK(sigismember(&now, SIGUSR1));
    CHECK_SYS(close(p[0]));
    CHECK_SYS(close(q[0]));
    CHECK_SYS(close(q[1]));
    SAY("poll: %d polls with no timeout woken by a write from core %d, POLLHUP at the writer's "
        "exit; ppoll's signal mask lets a pending signal in (EINTR)",
        WAKE_ROUNDS, cpu_of(1));
}

/* ---- 8. select and pselect6 ---- */

static void select_checks(void)
{
    int p[2];
    CHECK_SYS(pipe(p));
    int nfds = (p[0] > p[1] ? p[0] : p[1]) + 1;
    fd_set rs, ws;
    struct timeval tv;

    FD_ZERO(&rs);
    FD_ZERO(&ws);
    FD_SET(p[0], &rs);
    FD_SET(p[1], &ws);
    tv = (struct timeval){0, 0};
    CHECK_EQ(select(nfds, &rs, &ws, NULL, &tv), 1);
    CHECK(!FD_ISSET(p[0], &rs));
    CHECK(FD_ISSET(p[1], &ws));
    write_all(p[1], "abc", 3);
    FD_SET(p[0], &rs);
    FD_SET(p[1], &ws);
    tv = (struct timeval){0, 0};
    CHECK_EQ(select(nfds, &rs, &ws, NULL, &tv), 2);
    CHECK(FD_ISSET(p[0], &rs));
    CHECK(FD_ISSET(p[1], &ws));
    char buf[8];
    read_all(p[0], buf, 3);
    CHECK(memcmp(buf, "abc", 3) == 0);
    FD_ZERO(&rs);
    FD_SET(p[0], &rs);
    tv = (struct timeval){0, 10000};
    CHECK_EQ(select(nfds, &rs, NULL, NULL, &tv), 0);
    CHECK(!FD_ISSET(p[0], &rs));
    struct timespec zero = {0, 0};
    FD_SET(p[0], &rs);
    CHECK_EQ(pselect(nfds, &rs, NULL, NULL, &zero, NULL), 0);
    CHECK(!FD_ISSET(p[0], &rs));
    /* Full: not writable. */
    set_nonblock(p[1], 1);
    long cap = fill_pipe(p[1]);
    FD_ZERO(&ws);
    FD_SET(p[1], &ws);
    tv = (struct timeval){0, 0};
    CHECK_EQ(select(nfds, NULL, &ws, NULL, &tv), 0);
    CHECK(!FD_ISSET(p[1], &ws));
    drain_check(p[0], 0, cap);
    set_nonblock(p[1], 0);
    /* A closed fd: EBADF. */
    int d = CHECK_SYS(dup(p[0]));
    CHECK_SYS(close(d));
    FD_ZERO(&rs);
    FD_SET(d, &rs);
    tv = (struct timeval){0, 0};
    CHECK_ERRNO(select(d + 1, &rs, NULL, NULL, &tv), EBADF);
    SAY("select/pselect6: readable only with data, writable only with room, timeouts 0 and 10 "
        "ms return 0 with the sets cleared, EBADF for a closed fd");

    /* A select blocked without timeout, woken by another process's write. */
    shared_reset();
    if (spawn("select waker", cpu_of(1)) == 0) {
        CHECK_SYS(close(p[0]));
        for (int r = 1; r <= WAKE_ROUNDS; r++) {
            wait_at_least(&sh->step, r);
            linger();
            write_all(p[1], &r, sizeof r);
        }
        _exit(0);
    }
    CHECK_SYS(close(p[1]));
    for (int r = 1; r <= WAKE_ROUNDS; r++) {
        atomic_store(&sh->step, r);
        FD_ZERO(&rs);
        FD_SET(p[0], &rs);
        if (r % 2)
            CHECK_EQ(select(p[0] + 1, &rs, NULL, NULL, NULL), 1);
        else
            CHECK_EQ(pselect(p[0] + 1, &rs, NULL, NULL, NULL, NULL), 1);
        CHECK(FD_ISSET(p[0], &rs));
        int got;
        read_all(p[0], &got, sizeof got);
        CHECK_EQ(got, r);
    }
    reap_all();
    /* EOF is readable. */
    FD_ZERO(&rs);
    FD_SET(p[0], &rs);
    CHECK_EQ(select(p[0] + 1, &rs, NULL, NULL, NULL), 1);
    CHECK_EQ(read(p[0], buf, sizeof buf), 0);

    /* pselect6's mask lets a blocked, pending signal in. */
    sigset_t usr1, old, none, now;
    sigemptyset(&usr1);
    sigaddset(&usr1, SIGUSR1);
    sigemptyset(&none);
    CHECK_SYS(sigprocmask(SIG_BLOCK, &usr1, &old));
    handled = 0;
    set_handler(SIGUSR1, on_signal, 0);
    CHECK_SYS(kill(getpid(), SIGUSR1));
    int q[2];
    CHECK_SYS(pipe(q));
    FD_ZERO(&rs);
    FD_SET(q[0], &rs);
    struct timespec five = {5, 0};
    CHECK_ERRNO(pselect(q[0] + 1, &rs, NULL, NULL, &five, &none), EINTR);
    CHECK_EQ(handled, 1);
    CHECK_SYS(sigprocmask(SIG_SETMASK, &old, &now));
    CHECK(sigismember(&now, SIGUSR1));
    CHECK_SYS(close(q[0]));
    CHECK_SYS(close(q[1]));
    CHECK_SYS(close(p[0]));
    SAY("select/pselect6: %d blocking selects woken by a process on core %d, EOF readable; "
        "pselect6's signal mask lets a pending signal in (EINTR)",
        WAKE_ROUNDS, cpu_of(1));
}

/* ---- 9. EINTR ---- */

static void interrupted(void)
{
    int p[2];
    CHECK_SYS(pipe(p));
    pid_t me = getpid();
    char buf[8];

    /* No SA_RESTART: a read that nothing will ever satisfy ends with EINTR. */
    set_handler(SIGUSR1, on_signal, 0);
    shared_reset();
    handled = 0;
    if (spawn("signal sender", cpu_of(1)) == 0) {
        CHECK_SYS(close(p[0]));
        wait_at_least(&sh->step, 1);
        while (!atomic_load(&sh->done)) {
            linger();
            CHECK_SYS(kill(me, SIGUSR1));
        }
        _exit(0);
    }
    atomic_store(&sh->step, 1);
    CHECK_ERRNO(read(p[0], buf, sizeof buf), EINTR);
    CHECK(handled >= 1);
    atomic_store(&sh->done, 1);
    reap_all();

    /* SA_RESTART: signals come in, the read goes on and returns the data. */
    set_handler(SIGUSR1, on_signal, SA_RESTART);
    shared_reset();
    handled = 0;
    if (spawn("signal sender", cpu_of(1)) == 0) {
        CHECK_SYS(close(p[0]));
        wait_at_least(&sh->step, 1);
        for (int i = 0; i < 3; i++) {
            linger();
            CHECK_SYS(kill(me, SIGUSR1));
            wait_at_least(&sh->signals, i + 1);
        }
        write_all(p[1], "data", 4);
        _exit(0);
    }
    CHECK_SYS(close(p[1]));
    atomic_store(&sh->step, 1);
    long r = read(p[0], buf, sizeof buf);
    if (r != 4)
        FAIL("read with SA_RESTART returned %ld (%s), expected the 4 bytes written", r,
             r < 0 ? strerror(errno) : "short");
    CHECK(memcmp(buf, "data", 4) == 0);
    CHECK_EQ(handled, 3);
    reap_all();
    CHECK_SYS(close(p[0]));
    signal(SIGUSR1, SIG_DFL);
    SAY("signals: a blocked read returns EINTR after a handler without SA_RESTART; with "
        "SA_RESTART 3 signals are handled and the read returns the data");
}

/* ---- 10. dup2 onto stdin/stdout across fork + exec ---- */

static char text_byte(long i)
{
    static const char words[] = "the quick brown fox jumps over the lazy dog 0123456789,.\n";
    return words[(i * 7 + i / 57) % (sizeof words - 1)];
}

static char upper(char c)
{
    return c >= 'a' && c <= 'z' ? (char)(c - 'a' + 'A') : c;
}

/* `pipes upper`: stdin to stdout, uppercased; both must be pipes. */
static int upper_filter(void)
{
    struct stat st;
    if (fstat(0, &st) != 0 || !S_ISFIFO(st.st_mode))
        return 2;
    if (fstat(1, &st) != 0 || !S_ISFIFO(st.st_mode))
        return 3;
    char buf[3000];
    for (;;) {
        long n = read(0, buf, sizeof buf);
        if (n < 0)
            return 4;
        if (n == 0)
            return 0;
        for (long i = 0; i < n; i++)
            buf[i] = upper(buf[i]);
        for (long done = 0; done < n;) {
            long w = write(1, buf + done, (size_t)(n - done));
            if (w <= 0)
                return 5;
            done += w;
        }
    }
}

/* Writes SOCKET_BYTES of stream `seed` to `fd` while reading and checking as many of stream
 * `seed ^ 1` from it, in chunks of varying sizes. */
static void socket_duplex(int fd, uint32_t seed)
{
    static uint8_t out[8192], in[8192];
    long sent = 0, got = 0;
    uint32_t rng = seed;
    set_nonblock(fd, 1);
    while (sent < SOCKET_BYTES || got < SOCKET_BYTES) {
        if (sent < SOCKET_BYTES) {
            long n = 1 + (long)(lcg(&rng) % sizeof out);
            if (n > SOCKET_BYTES - sent)
                n = SOCKET_BYTES - sent;
            for (long i = 0; i < n; i++)
                out[i] = stream_byte((uint64_t)(sent + i) * 2 + (seed & 1));
            ssize_t w = write(fd, out, (size_t)n);
            if (w < 0 && errno != EAGAIN)
                FAIL("socket write: %s", strerror(errno));
            if (w > 0)
                sent += w;
        }
        ssize_t r = read(fd, in, sizeof in);
        if (r < 0 && errno != EAGAIN)
            FAIL("socket read: %s", strerror(errno));
        for (ssize_t i = 0; i < r; i++, got++)
            if (in[i] != stream_byte((uint64_t)got * 2 + ((seed ^ 1) & 1)))
                FAIL("socket byte %ld: %u, expected %u", got, in[i],
                     stream_byte((uint64_t)got * 2 + ((seed ^ 1) & 1)));
        if (r <= 0)
            sched_yield();
    }
    if (got != SOCKET_BYTES)
        FAIL("socket: %ld bytes read, expected %d", got, SOCKET_BYTES);
}

static void socket_pairs(void)
{
    int sv[2], p[2];
    struct stat st;
    char buf[16];

    CHECK_SYS(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, sv));
    for (int i = 0; i < 2; i++) {
        CHECK_SYS(fstat(sv[i], &st));
        CHECK(S_ISSOCK(st.st_mode));
        CHECK_EQ(fcntl(sv[i], F_GETFD), FD_CLOEXEC);
        int fl = CHECK_SYS(fcntl(sv[i], F_GETFL));
        CHECK_EQ(fl & O_ACCMODE, O_RDWR);
        CHECK(fl & O_NONBLOCK);
    }
    CHECK_ERRNO(recv(sv[0], buf, sizeof buf, 0), EAGAIN);
    CHECK_SYS(close(sv[0]));
    CHECK_SYS(close(sv[1]));
    CHECK_ERRNO(socketpair(AF_INET, SOCK_STREAM, 0, sv), EOPNOTSUPP);
    CHECK_ERRNO(socketpair(12345, SOCK_STREAM, 0, sv), EAFNOSUPPORT);
    CHECK_ERRNO(socketpair(AF_UNIX, SOCK_STREAM | 0x100, 0, sv), EINVAL);
    CHECK_ERRNO(socketpair(AF_UNIX, SOCK_STREAM, 7, sv), EPROTONOSUPPORT);
    int *volatile unmapped = (int *)8;
    CHECK_ERRNO(socketpair(AF_UNIX, SOCK_STREAM, 0, unmapped), EFAULT);
    SAY("socketpair: AF_UNIX stream ends are O_RDWR sockets with SOCK_CLOEXEC and "
        "SOCK_NONBLOCK as asked; EOPNOTSUPP, EAFNOSUPPORT, EINVAL, EPROTONOSUPPORT, EFAULT");

    /* Both directions at once, between two cores. */
    CHECK_SYS(socketpair(AF_UNIX, SOCK_STREAM, 0, sv));
    pid_t pid = spawn("socket peer", cpu_of(1));
    if (pid == 0) {
        close(sv[0]);
        socket_duplex(sv[1], 1);
        _exit(0);
    }
    CHECK_SYS(close(sv[1]));
    socket_duplex(sv[0], 0);
    reap_all();
    set_nonblock(sv[0], 0);
    CHECK_EQ(read(sv[0], buf, sizeof buf), 0);
    CHECK_SYS(close(sv[0]));
    SAY("socket pair: %d bytes each way at once with a process on core %d, every byte "
        "checked, then EOF",
        SOCKET_BYTES, cpu_of(1));

    /* send, recv, recvfrom, shutdown. */
    CHECK_SYS(socketpair(AF_UNIX, SOCK_STREAM, 0, sv));
    CHECK_EQ(send(sv[0], "abc", 3, MSG_NOSIGNAL), 3);
    struct sockaddr_storage from;
    socklen_t fromlen = sizeof from;
    CHECK_EQ(recvfrom(sv[1], buf, sizeof buf, MSG_DONTWAIT, (struct sockaddr *)&from, &fromlen),
             3);
    CHECK(memcmp(buf, "abc", 3) == 0);
    CHECK_EQ(fromlen, 0);
    CHECK_ERRNO(recv(sv[1], buf, sizeof buf, MSG_DONTWAIT), EAGAIN);
    CHECK_ERRNO(shutdown(sv[0], 7), EINVAL);
    CHECK_SYS(shutdown(sv[0], SHUT_WR));
    CHECK_EQ(recv(sv[1], buf, sizeof buf, 0), 0);
    CHECK_ERRNO(send(sv[0], "x", 1, MSG_NOSIGNAL), EPIPE);
    CHECK_EQ(send(sv[1], "yz", 2, 0), 2);
    CHECK_EQ(read(sv[0], buf, sizeof buf), 2);
    CHECK_SYS(pipe(p));
    CHECK_ERRNO(send(p[1], "x", 1, 0), ENOTSOCK);
    CHECK_ERRNO(recv(p[0], buf, 1, MSG_DONTWAIT), ENOTSOCK);
    CHECK_ERRNO(shutdown(p[0], SHUT_RD), ENOTSOCK);
    CHECK_SYS(close(p[0]));
    CHECK_SYS(close(p[1]));

    /* The peer closes: POLLIN|POLLHUP, end of file, EPIPE. */
    CHECK_SYS(close(sv[1]));
    short rev = 0;
    CHECK_EQ(poll1(sv[0], POLLIN, 0, &rev), 1);
    CHECK_EQ(rev & (POLLIN | POLLHUP), POLLIN | POLLHUP);
    CHECK_EQ(read(sv[0], buf, sizeof buf), 0);
    CHECK_ERRNO(send(sv[0], "x", 1, MSG_NOSIGNAL), EPIPE);
    CHECK_SYS(close(sv[0]));
    SAY("send/recv: MSG_DONTWAIT (EAGAIN), MSG_NOSIGNAL, recvfrom's empty address; "
        "shutdown(SHUT_WR): EOF at the peer, EPIPE here, the other way still open; ENOTSOCK on "
        "a pipe; after the peer's close POLLIN|POLLHUP, EOF and EPIPE");
}

static void filter(void)
{
    int in[2], out[2];
    CHECK_SYS(pipe(in));
    CHECK_SYS(pipe(out));
    if (spawn("upper filter", cpu_of(1)) == 0) {
        CHECK_SYS(dup2(in[0], 0));
        CHECK_SYS(dup2(out[1], 1));
        for (int e = 0; e < 2; e++) {
            CHECK_SYS(close(in[e]));
            CHECK_SYS(close(out[e]));
        }
        char *argv[] = {(char *)self, "upper", NULL};
        execve(self, argv, environment);
        _exit(100);
    }
    if (spawn("filter feeder", cpu_of(0)) == 0) {
        CHECK_SYS(close(in[0]));
        CHECK_SYS(close(out[0]));
        CHECK_SYS(close(out[1]));
        char buf[5000];
        uint32_t seed = 3;
        long off = 0;
        while (off < FILTER_BYTES) {
            long size = 1 + lcg(&seed) % sizeof buf;
            if (size > FILTER_BYTES - off)
                size = FILTER_BYTES - off;
            for (long i = 0; i < size; i++)
                buf[i] = text_byte(off + i);
            write_all(in[1], buf, (size_t)size);
            off += size;
        }
        _exit(0);
    }
    CHECK_SYS(close(in[0]));
    CHECK_SYS(close(in[1]));
    CHECK_SYS(close(out[1]));
    char buf[4096];
    long off = 0;
    for (;;) {
        long n = CHECK_SYS(read(out[0], buf, sizeof buf));
        if (n == 0)
            break;
        for (long i = 0; i < n; i++)
            if (buf[i] != upper(text_byte(off + i)))
                FAIL("filter output byte %ld is 0x%02x, expected 0x%02x", off + i,
                     (uint8_t)buf[i], (uint8_t)upper(text_byte(off + i)));
        off += n;
        if (off > FILTER_BYTES)
            FAIL("the filter wrote more than the %d bytes it got", FILTER_BYTES);
    }
    CHECK_EQ(off, FILTER_BYTES);
    CHECK_SYS(close(out[0]));
    reap_all();
    SAY("dup2 + exec: %d bytes through `%s upper` on stdin/stdout, uppercased exactly, EOF at "
        "its exit",
        FILTER_BYTES, self);
}

int main(int argc, char **argv, char **envp)
{
    test_begin("pipes");
    self = self_path(argv[0]);
    environment = envp;
    if (argc == 2 && strcmp(argv[1], "upper") == 0)
        return upper_filter();
    if (argc == 6 && strcmp(argv[1], "fdcheck") == 0)
        return fdcheck(argv + 2);
    if (argc != 1)
        FAIL("usage: pipes (with no arguments)");
    ncpu = allowed_cpus(cpus, MAX_CPUS);
    nwork = ncpu < 2 ? 2 : ncpu;
    sh = shared_page(sizeof *sh);
    SAY("%d cores, %d writers in the PIPE_BUF check, executable for re-exec: %s", ncpu, nwork,
        self);
    creation();
    stream();
    atomic_writes();
    eof();
    zero_length();
    epipe();
    nonblocking();
    poll_checks();
    select_checks();
    interrupted();
    socket_pairs();
    filter();
    PASS();
}
