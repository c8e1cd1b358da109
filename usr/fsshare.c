/*
 * fsshare: POSIX file sharing semantics, exercised by processes pinned to different cores at the
 * same time, every byte read back and verified. All files live in /tmp/fsshare.<pid>/.
 *
 * - one open file description shared across fork and dup: the parent opens a file (no
 *   O_APPEND) and dups it, then N children (one per core, pinned) each write SHARED_RECORDS
 *   64-byte records (writer, sequence number, pattern, checksum) through the inherited fd, the
 *   parent's dup, their own dup and writev; afterwards the file is exactly N*K records, every
 *   record intact, every (writer, seq) exactly once and in each writer's order, and the shared
 *   offset (lseek SEEK_CUR in the parent, on both fds) equals the file size; F_SETFL in a child
 *   shows in the parent (file status flags belong to the description), FD_CLOEXEC does not;
 * - O_APPEND atomic: N processes each open the file themselves (O_RDWR|O_APPEND) and write
 *   records of varied sizes (24..1000 bytes, write or writev, some after lseek to 0); after each
 *   write the writer reads its record back just below its new offset; the whole file then parses
 *   into intact records, every (writer, seq) exactly once, size = sum of the record sizes;
 * - unlinked while open: process A creates and writes a file, process B (another core) opens it,
 *   unlinks it, and the two then take turns writing blocks and verifying each other's blocks
 *   through their descriptors; open/stat of the path give ENOENT, fstat shows nlink 0, ftruncate
 *   by one shows in the other's fstat and reads; after B's close A still reads everything, and a
 *   new file created under the old name is a different, empty file. That the space is freed after
 *   the last close is checked on Reef only, with reef_free_bytes (NR-FS) or statfs's free blocks
 *   (Hare, exactly; see unlinked_space_freed());
 *   on Linux free-space counts of the host's shared /tmp are not reliable, so it is skipped;
 * - rename atomic: a writer repeatedly writes a complete version (self-describing: version,
 *   size, pattern, checksum; sizes vary) into a temp file and renames it over the target, while
 *   readers on the other cores repeatedly open and read the target: every open succeeds, every
 *   read is exactly one complete version, versions never go backwards for a reader, and an open
 *   after the writer finished sees the last version;
 * - directory listing under churn: a directory holds LIST_STABLE stable files while churners on
 *   the other cores create and delete other files in it; a lister reads it with getdents64 and a
 *   small buffer (several calls per listing), rewinding with lseek or reopening: every listing
 *   has ".", ".." and each stable name exactly once (right d_ino and d_type), no name twice, no
 *   name that was never created; getdents64 with a too small buffer is EINVAL;
 * - rmdir of a non-empty directory is ENOTEMPTY again and again while creators on the other cores
 *   add files to it, and succeeds once the directory is emptied (then stat and creating inside it
 *   give ENOENT); mkdir of one name by N processes at once: exactly one succeeds, the others get
 *   EEXIST (RACE_ROUNDS names); open(O_CREAT|O_EXCL) of one name by N processes at once: exactly
 *   one wins, and the file holds what the winner wrote.
 *
 * N is the number of usable cores, at least 2 (two processes share the core on a 1-core system).
 * Processes synchronize through MAP_SHARED memory only (spinning with sched_yield), so this
 * program does not depend on pipes.
 */
#include "reef-test.h"
#include <dirent.h>
#include <signal.h>
#include <stddef.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/uio.h>

#define SHARED_RECORDS 200 /* records per writer through one shared description */
#define APPEND_RECORDS 150 /* records per writer with O_APPEND */
#define UNLINK_BLOCKS 40   /* blocks written in turns into the unlinked file */
#define SPACE_ROUNDS 12    /* Reef only: 1 MiB files unlinked while open, then closed */
#define RENAME_VERSIONS 200 /* versions renamed over the target */
#define LIST_STABLE 24     /* stable files in the churned directory */
#define LISTINGS 60        /* listings of the churned directory */
#define RMDIR_FILES 40     /* files each creator adds to the directory being rmdir'ed */
#define RACE_ROUNDS 30     /* names raced for by mkdir and by O_CREAT|O_EXCL */

#ifndef BASE_DIR
#define BASE_DIR "/tmp" /* where the test directory is made */
#endif
#ifndef MIN_WORKERS
#define MIN_WORKERS 2 /* processes per race at least, even on fewer cores */
#endif
#define MAX_CPUS 64
#define BLK 4096

static int ncpu;
static int cpus[MAX_CPUS];
static int nwork; /* processes that race: one per core, at least 2 */
static char dir[64];

static int cpu_of(int i)
{
    return cpus[i % ncpu];
}

static void path_of(char *buf, size_t len, const char *name)
{
    snprintf(buf, len, "%s/%s", dir, name);
}

/* ---- children: test_fork_child and test_reap_all (reef-test.h) ---- */

#define MAX_KIDS TEST_MAX_KIDS

/* Runs fn(arg) in a child pinned to `cpu`. */
static void spawn(const char *what, int cpu, void (*fn)(int), int arg)
{
    if (test_fork_child(what, cpu) == 0) {
        fn(arg);
        _exit(0);
    }
}

#define reap_all test_reap_all

/* Shared state of one test, in MAP_SHARED memory. */
struct shared {
    atomic_int arrived, generation; /* barrier */
    atomic_int step, done, count;
    atomic_int result[MAX_KIDS];
    atomic_long value[MAX_KIDS];
};

static struct shared *sh;

static void shared_reset(void)
{
    memset(sh, 0, sizeof *sh);
}

/* Barrier of `n` processes. */
static void barrier(int n)
{
    int g = atomic_load(&sh->generation);
    if (atomic_fetch_add(&sh->arrived, 1) == n - 1) {
        atomic_store(&sh->arrived, 0);
        atomic_fetch_add(&sh->generation, 1);
    } else {
        wait_at_least(&sh->generation, g + 1);
    }
}

/* ---- data patterns ---- */

static uint64_t fnv(const void *p, size_t n)
{
    const uint8_t *b = p;
    uint64_t h = 0xcbf29ce484222325ULL;
    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * 0x100000001b3ULL;
    return h;
}

static uint8_t pattern(uint32_t tag, size_t i)
{
    return (uint8_t)(tag * 131 + i * 7 + (i >> 8) + (tag >> 8));
}

static void fill(uint8_t *p, size_t n, uint32_t tag)
{
    for (size_t i = 0; i < n; i++)
        p[i] = pattern(tag, i);
}

static void check_fill(const uint8_t *p, size_t n, uint32_t tag, const char *what)
{
    for (size_t i = 0; i < n; i++)
        if (p[i] != pattern(tag, i))
            FAIL("%s: byte %zu is 0x%02x, expected 0x%02x (tag %u)", what, i, p[i],
                 pattern(tag, i), tag);
}

static void write_all(int fd, const void *buf, size_t n)
{
    long r = CHECK_SYS(write(fd, buf, n));
    CHECK_EQ(r, (long)n);
}

/* Reads exactly n bytes at `off`; fails on a short read. */
static void pread_all(int fd, void *buf, size_t n, off_t off)
{
    size_t got = 0;
    while (got < n) {
        long r = CHECK_SYS(pread(fd, (char *)buf + got, n - got, off + (off_t)got));
        if (r == 0)
            FAIL("pread: end of file at %lld, expected %zu bytes from %lld",
                 (long long)(off + (off_t)got), n, (long long)off);
        got += (size_t)r;
    }
}

static void *xmalloc(size_t n)
{
    void *p = malloc(n);
    if (!p)
        FAIL("malloc(%zu) failed", n);
    return p;
}

/* ---- 1. one open file description shared across fork and dup ---- */

#define REC_MAGIC 0x52454331u /* "REC1" */
struct rec64 {
    uint32_t magic, writer, seq, via;
    uint8_t body[40];
    uint64_t sum;
};
_Static_assert(sizeof(struct rec64) == 64, "record size");

static void rec64_make(struct rec64 *r, uint32_t writer, uint32_t seq, uint32_t via)
{
    r->magic = REC_MAGIC;
    r->writer = writer;
    r->seq = seq;
    r->via = via;
    fill(r->body, sizeof r->body, writer * 100000 + seq);
    r->sum = fnv(r, offsetof(struct rec64, sum));
}

static int shared_fd, shared_dup;

static void shared_writer(int w)
{
    int mine = CHECK_SYS(dup(shared_fd));
    int fds[3] = {shared_fd, shared_dup, mine};
    barrier(nwork);
    for (int seq = 0; seq < SHARED_RECORDS; seq++) {
        struct rec64 r;
        int via = (seq + w) % 4;
        rec64_make(&r, (uint32_t)w, (uint32_t)seq, (uint32_t)via);
        long n;
        if (via == 3) {
            struct iovec iov[2] = {{&r, 24}, {(char *)&r + 24, 40}};
            n = CHECK_SYS(writev(shared_fd, iov, 2));
        } else {
            n = CHECK_SYS(write(fds[via], &r, sizeof r));
        }
        CHECK_EQ(n, 64);
        /* The offset is shared and moves by whole records only. */
        off_t off = CHECK_SYS(lseek(mine, 0, SEEK_CUR));
        if (off % 64 != 0 || off < (off_t)(seq + 1) * 64)
            FAIL("writer %d: shared offset %lld after %d records of 64 bytes", w,
                 (long long)off, seq + 1);
    }
    close(mine);
}

static void flag_child(int unused)
{
    (void)unused;
    /* File status flags belong to the description, FD_CLOEXEC to the descriptor. */
    CHECK_SYS(fcntl(shared_fd, F_SETFL, O_APPEND));
    CHECK_SYS(fcntl(shared_fd, F_SETFD, FD_CLOEXEC));
}

static void one_description(void)
{
    char path[96];
    path_of(path, sizeof path, "shared");
    shared_fd = CHECK_SYS(open(path, O_RDWR | O_CREAT | O_TRUNC, 0644));
    shared_dup = CHECK_SYS(dup(shared_fd));
    shared_reset();
    for (int w = 0; w < nwork; w++)
        spawn("shared-offset writer", cpu_of(w), shared_writer, w);
    reap_all();

    long total = (long)nwork * SHARED_RECORDS;
    struct stat st;
    CHECK_SYS(fstat(shared_fd, &st));
    CHECK_EQ(st.st_size, total * 64);
    CHECK_EQ(lseek(shared_fd, 0, SEEK_CUR), total * 64);
    CHECK_EQ(lseek(shared_dup, 0, SEEK_CUR), total * 64);

    struct rec64 *recs = xmalloc((size_t)total * 64);
    pread_all(shared_fd, recs, (size_t)total * 64, 0);
    char extra;
    CHECK_EQ(pread(shared_fd, &extra, 1, total * 64), 0);
    int *next = calloc((size_t)nwork, sizeof *next);
    CHECK(next != NULL);
    for (long i = 0; i < total; i++) {
        struct rec64 *r = &recs[i];
        if (r->magic != REC_MAGIC || r->sum != fnv(r, offsetof(struct rec64, sum)))
            FAIL("record %ld (offset %ld) is torn or overwritten (magic 0x%x writer %u seq %u)",
                 i, i * 64, r->magic, r->writer, r->seq);
        if (r->writer >= (uint32_t)nwork)
            FAIL("record %ld: writer %u", i, r->writer);
        struct rec64 want;
        rec64_make(&want, r->writer, r->seq, r->via);
        if (memcmp(&want, r, sizeof want) != 0)
            FAIL("record %ld: contents differ from writer %u seq %u", i, r->writer, r->seq);
        /* One writer's records follow its program order: the offset only grows. */
        if (r->seq != (uint32_t)next[r->writer])
            FAIL("record %ld: writer %u seq %u, expected seq %d next (lost or duplicated)", i,
                 r->writer, r->seq, next[r->writer]);
        next[r->writer]++;
    }
    for (int w = 0; w < nwork; w++)
        CHECK_EQ(next[w], SHARED_RECORDS);
    free(next);
    free(recs);
    SAY("shared description: %d processes x %d records through fd, dup and writev: %ld intact "
        "records, each once, shared offset = size = %ld",
        nwork, SHARED_RECORDS, total, total * 64);

    /* F_SETFL in a child is seen by the parent; F_SETFD is not. */
    CHECK_EQ(fcntl(shared_fd, F_GETFL) & O_APPEND, 0);
    spawn("fcntl child", cpu_of(1), flag_child, 0);
    reap_all();
    CHECK(fcntl(shared_fd, F_GETFL) & O_APPEND);
    CHECK(fcntl(shared_dup, F_GETFL) & O_APPEND);
    CHECK_EQ(fcntl(shared_fd, F_GETFD), 0);
    CHECK_SYS(close(shared_dup));
    CHECK_SYS(close(shared_fd));
    CHECK_SYS(unlink(path));
    SAY("shared description: a child's F_SETFL(O_APPEND) shows in the parent, its FD_CLOEXEC "
        "does not");
}

/* ---- 2. O_APPEND ---- */

#define VREC_MAGIC 0x56524543u /* "VREC" */
#define VREC_MIN 24
#define VREC_MAX 1024

static size_t vrec_len(uint32_t w, uint32_t seq)
{
    return VREC_MIN + (w * 131 + seq * 61) % 977;
}

/* header: magic, len, writer, seq; payload; trailer: checksum of everything before it. */
static void vrec_make(uint8_t *buf, uint32_t w, uint32_t seq)
{
    uint32_t len = (uint32_t)vrec_len(w, seq);
    uint32_t h[4] = {VREC_MAGIC, len, w, seq};
    memcpy(buf, h, 16);
    fill(buf + 16, len - 24, w * 7919 + seq);
    uint64_t sum = fnv(buf, len - 8);
    memcpy(buf + len - 8, &sum, 8);
}

static void append_writer(int w)
{
    char path[96];
    path_of(path, sizeof path, "append");
    int fd = CHECK_SYS(open(path, O_RDWR | O_APPEND));
    uint8_t buf[VREC_MAX], back[VREC_MAX];
    barrier(nwork);
    for (int seq = 0; seq < APPEND_RECORDS; seq++) {
        size_t len = vrec_len((uint32_t)w, (uint32_t)seq);
        vrec_make(buf, (uint32_t)w, (uint32_t)seq);
        if (seq % 5 == 1)
            CHECK_EQ(lseek(fd, 0, SEEK_SET), 0); /* O_APPEND writes still go to the end */
        long n;
        if (seq % 3 == 2) {
            struct iovec iov[3] = {{buf, 5}, {buf + 5, len - 13}, {buf + len - 8, 8}};
            n = CHECK_SYS(writev(fd, iov, 3));
        } else {
            n = CHECK_SYS(write(fd, buf, len));
        }
        CHECK_EQ(n, (long)len);
        /* The offset is now just past this record, which nobody may overwrite. */
        off_t end = CHECK_SYS(lseek(fd, 0, SEEK_CUR));
        CHECK(end >= (off_t)len);
        pread_all(fd, back, len, end - (off_t)len);
        if (memcmp(back, buf, len) != 0)
            FAIL("writer %d seq %d: the %zu bytes below the offset %lld are not its record", w,
                 seq, len, (long long)end);
    }
    CHECK_SYS(close(fd));
}

static void append_atomic(void)
{
    char path[96];
    path_of(path, sizeof path, "append");
    int fd = CHECK_SYS(open(path, O_RDWR | O_CREAT | O_EXCL, 0644));
    shared_reset();
    long want = 0;
    for (int w = 0; w < nwork; w++) {
        for (int seq = 0; seq < APPEND_RECORDS; seq++)
            want += (long)vrec_len((uint32_t)w, (uint32_t)seq);
        spawn("O_APPEND writer", cpu_of(w), append_writer, w);
    }
    reap_all();

    struct stat st;
    CHECK_SYS(fstat(fd, &st));
    CHECK_EQ(st.st_size, want);
    uint8_t *data = xmalloc((size_t)want);
    pread_all(fd, data, (size_t)want, 0);
    int *next = calloc((size_t)nwork, sizeof *next);
    CHECK(next != NULL);
    long off = 0, count = 0;
    uint8_t expect[VREC_MAX];
    while (off < want) {
        uint32_t h[4];
        if (want - off < VREC_MIN)
            FAIL("%ld stray bytes at the end (offset %ld)", want - off, off);
        memcpy(h, data + off, 16);
        if (h[0] != VREC_MAGIC || h[1] < VREC_MIN || h[1] > VREC_MAX || off + h[1] > want ||
            h[2] >= (uint32_t)nwork)
            FAIL("no intact record header at offset %ld (magic 0x%x len %u writer %u)", off, h[0],
                 h[1], h[2]);
        if (h[3] != (uint32_t)next[h[2]])
            FAIL("offset %ld: writer %u seq %u, expected seq %d (lost or duplicated)", off, h[2],
                 h[3], next[h[2]]);
        if (h[1] != vrec_len(h[2], h[3]))
            FAIL("offset %ld: writer %u seq %u has length %u", off, h[2], h[3], h[1]);
        vrec_make(expect, h[2], h[3]);
        if (memcmp(expect, data + off, h[1]) != 0)
            FAIL("offset %ld: record writer %u seq %u is torn", off, h[2], h[3]);
        next[h[2]]++;
        off += h[1];
        count++;
    }
    for (int w = 0; w < nwork; w++)
        CHECK_EQ(next[w], APPEND_RECORDS);
    free(next);
    free(data);
    CHECK_SYS(close(fd));
    CHECK_SYS(unlink(path));
    SAY("O_APPEND: %d processes x %d records of 24..1000 bytes: %ld intact records, each once, "
        "size %ld",
        nwork, APPEND_RECORDS, count, want);
}

/* ---- 3. a file unlinked while open ---- */

static void check_block(int fd, int k)
{
    uint8_t buf[BLK];
    pread_all(fd, buf, BLK, (off_t)k * BLK);
    char what[48];
    snprintf(what, sizeof what, "unlinked file, block %d", k);
    check_fill(buf, BLK, 5000 + (uint32_t)k, what);
}

static void write_block(int fd, int k, int use_lseek)
{
    uint8_t buf[BLK];
    fill(buf, BLK, 5000 + (uint32_t)k);
    if (use_lseek) {
        CHECK_EQ(lseek(fd, (off_t)k * BLK, SEEK_SET), (long)k * BLK);
        write_all(fd, buf, BLK);
        CHECK_EQ(lseek(fd, 0, SEEK_CUR), (long)(k + 1) * BLK);
    } else {
        CHECK_EQ(pwrite(fd, buf, BLK, (off_t)k * BLK), BLK);
    }
}

static void check_gone(const char *path, int fd, long size)
{
    struct stat st;
    CHECK_ERRNO(open(path, O_RDWR), ENOENT);
    CHECK_ERRNO(stat(path, &st), ENOENT);
    CHECK_SYS(fstat(fd, &st));
    CHECK_EQ(st.st_nlink, 0);
    CHECK_EQ(st.st_size, size);
}

/* Process A creates and writes block 0, then writes the even blocks. */
static void unlink_a(int unused)
{
    (void)unused;
    char path[96];
    path_of(path, sizeof path, "unlinked");
    int fd = CHECK_SYS(open(path, O_RDWR | O_CREAT | O_EXCL, 0600));
    write_block(fd, 0, 1);
    struct stat st;
    CHECK_SYS(fstat(fd, &st));
    atomic_store(&sh->value[0], (long)st.st_ino);
    atomic_store(&sh->step, 1);
    for (int k = 2; k < UNLINK_BLOCKS; k += 2) {
        wait_at_least(&sh->step, k);
        check_gone(path, fd, (long)k * BLK);
        check_block(fd, k - 1);
        write_block(fd, k, 1);
        atomic_store(&sh->step, k + 1);
    }
    /* B truncates to 3 blocks and closes. */
    wait_at_least(&sh->done, 1);
    check_gone(path, fd, 3L * BLK);
    for (int k = 0; k < 3; k++)
        check_block(fd, k);
    uint8_t c;
    CHECK_EQ(pread(fd, &c, 1, 3L * BLK), 0);
    /* Still writable after the other descriptor is gone. */
    write_block(fd, 3, 0);
    check_block(fd, 3);
    /* The name is free: a new file there is another, empty file. */
    int fresh = CHECK_SYS(open(path, O_RDWR | O_CREAT | O_EXCL, 0600));
    struct stat nst;
    CHECK_SYS(fstat(fresh, &nst));
    CHECK_EQ(nst.st_nlink, 1);
    CHECK_EQ(nst.st_size, 0);
    CHECK(nst.st_ino != st.st_ino);
    write_all(fresh, "new", 3);
    check_gone("/nonexistent-fsshare", fd, 4L * BLK);
    check_block(fd, 0);
    CHECK_SYS(close(fresh));
    CHECK_SYS(unlink(path));
    CHECK_SYS(close(fd));
}

/* Process B opens the file, unlinks it, then writes the odd blocks and truncates. */
static void unlink_b(int unused)
{
    (void)unused;
    char path[96];
    path_of(path, sizeof path, "unlinked");
    wait_at_least(&sh->step, 1);
    int fd = CHECK_SYS(open(path, O_RDWR));
    struct stat st;
    CHECK_SYS(fstat(fd, &st));
    CHECK_EQ(st.st_ino, atomic_load(&sh->value[0]));
    CHECK_EQ(st.st_nlink, 1);
    CHECK_EQ(st.st_size, BLK);
    check_block(fd, 0);
    CHECK_SYS(unlink(path));
    for (int k = 1; k < UNLINK_BLOCKS; k += 2) {
        wait_at_least(&sh->step, k);
        check_gone(path, fd, (long)k * BLK);
        check_block(fd, k - 1);
        write_block(fd, k, 0);
        atomic_store(&sh->step, k + 1);
    }
    wait_at_least(&sh->step, UNLINK_BLOCKS);
    for (int k = 0; k < UNLINK_BLOCKS; k++)
        check_block(fd, k);
    CHECK_SYS(ftruncate(fd, 3L * BLK));
    CHECK_SYS(close(fd));
    atomic_store(&sh->done, 1);
}

static void unlinked_open(void)
{
    shared_reset();
    spawn("unlinked-file opener", cpu_of(0), unlink_a, 0);
    spawn("unlinked-file unlinker", cpu_of(1), unlink_b, 0);
    reap_all();
    SAY("unlinked while open: %d blocks written in turns by 2 processes and verified, ENOENT by "
        "name, nlink 0, ftruncate seen by the other, readable after the other's close, the name "
        "reusable",
        UNLINK_BLOCKS);
}

/*
 * The space of an unlinked file is freed at its last close. Checked on Reef only: NR-FS keeps
 * file data in kernel memory, so files that were never freed would show in reef_free_bytes.
 * Reef's kernel heap grows in 2 MiB steps and keeps what it took, so one warm-up round comes
 * first and a loss below 4 MiB is allowed, against SPACE_ROUNDS MiB written (once per replica).
 * On Linux, /tmp's free counts (statfs) are shared with every other process of the host and
 * may lag behind the close (ext4 frees blocks asynchronously), so the check is skipped there.
 */
static void space_round(const char *path)
{
    static uint8_t chunk[64 * 1024];
    int fd = CHECK_SYS(open(path, O_RDWR | O_CREAT | O_EXCL, 0600));
    for (int i = 0; i < 16; i++) {
        fill(chunk, sizeof chunk, 9000 + (uint32_t)i);
        write_all(fd, chunk, sizeof chunk);
    }
    CHECK_SYS(unlink(path));
    pread_all(fd, chunk, sizeof chunk, 15L * sizeof chunk);
    check_fill(chunk, sizeof chunk, 9015, "1 MiB unlinked file, last chunk");
    CHECK_SYS(close(fd));
}

static void unlinked_space_freed(void)
{
    if (!on_reef()) {
        SAY("unlinked space: not checked on Linux (host-wide free counts are not reliable)");
        return;
    }
    char path[96];
    path_of(path, sizeof path, "space");
    struct statfs sf;
    CHECK_SYS(statfs(dir, &sf));
    if (sf.f_type == HARE_SUPER_MAGIC) {
        /* Hare: the servers' free blocks of the buffer cache, exactly. */
        unsigned long before = sf.f_bfree;
        for (int r = 0; r < SPACE_ROUNDS; r++)
            space_round(path);
        CHECK_SYS(statfs(dir, &sf));
        SAY("unlinked space: %lu free blocks before, %lu after %d MiB of files unlinked while "
            "open and closed (Hare's servers)",
            before, (unsigned long)sf.f_bfree, SPACE_ROUNDS);
        if (sf.f_bfree != before)
            FAIL("%ld blocks lost: the unlinked files' blocks were not freed at the last close",
                 (long)before - (long)sf.f_bfree);
        return;
    }
    space_round(path);
    long before = reef_free_bytes();
    if (before < 0)
        FAIL("reef_free_bytes failed: %s", strerror(errno));
    for (int r = 0; r < SPACE_ROUNDS; r++)
        space_round(path);
    long after = reef_free_bytes();
    if (after < 0)
        FAIL("reef_free_bytes failed: %s", strerror(errno));
    long lost = before - after;
    SAY("unlinked space: free memory %ld KiB before, %ld KiB after %d MiB of files unlinked "
        "while open and closed",
        before >> 10, after >> 10, SPACE_ROUNDS);
    if (lost >= (4L << 20))
        FAIL("%ld KiB of memory lost: the unlinked files' data was not freed at the last close",
             lost >> 10);
}

/* ---- 4. rename atomic ---- */

#define VER_MAGIC 0x56455253u /* "VERS" */
#define VER_MAX 4096

static size_t version_len(uint32_t v)
{
    return 32 + (v * 977) % (VER_MAX - 32 + 1);
}

/* header: magic, version, size, 0; payload; trailer: checksum of everything before it. */
static void version_make(uint8_t *buf, uint32_t v)
{
    uint32_t len = (uint32_t)version_len(v);
    uint32_t h[4] = {VER_MAGIC, v, len, 0};
    memcpy(buf, h, 16);
    fill(buf + 16, len - 24, 20000 + v);
    uint64_t sum = fnv(buf, len - 8);
    memcpy(buf + len - 8, &sum, 8);
}

static void rename_writer(int unused)
{
    (void)unused;
    char target[96], tmp[96];
    path_of(target, sizeof target, "target");
    path_of(tmp, sizeof tmp, "target.tmp");
    uint8_t buf[VER_MAX];
    barrier(nwork);
    for (uint32_t v = 1; v <= RENAME_VERSIONS; v++) {
        size_t len = version_len(v);
        version_make(buf, v);
        int fd = CHECK_SYS(open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644));
        write_all(fd, buf, len / 2);
        write_all(fd, buf + len / 2, len - len / 2);
        CHECK_SYS(close(fd));
        CHECK_SYS(rename(tmp, target));
    }
    atomic_store(&sh->done, 1);
}

/* Opens and reads the target once; returns the version it holds. */
static uint32_t read_version(const char *target, int r)
{
    uint8_t buf[VER_MAX + 1];
    int fd = open(target, O_RDONLY);
    if (fd < 0)
        FAIL("reader %d: open(target) failed while it was being renamed over: %s", r,
             strerror(errno));
    size_t got = 0;
    for (;;) {
        size_t want = sizeof buf - got < 700 ? sizeof buf - got : 700;
        if (want == 0)
            FAIL("reader %d: the target is longer than any version", r);
        long n = CHECK_SYS(read(fd, buf + got, want));
        if (n == 0)
            break;
        got += (size_t)n;
    }
    struct stat st;
    CHECK_SYS(fstat(fd, &st));
    CHECK_SYS(close(fd));
    uint32_t h[4];
    if (got < 32)
        FAIL("reader %d: read %zu bytes, shorter than any version", r, got);
    memcpy(h, buf, 16);
    if (h[0] != VER_MAGIC || h[1] > RENAME_VERSIONS || h[2] != got || got != version_len(h[1]))
        FAIL("reader %d: read %zu bytes: not one complete version (magic 0x%x version %u size "
             "%u)",
             r, got, h[0], h[1], h[2]);
    CHECK_EQ(st.st_size, (long)got);
    uint8_t want[VER_MAX];
    version_make(want, h[1]);
    if (memcmp(want, buf, got) != 0)
        FAIL("reader %d: version %u is not intact (mixed with another version?)", r, h[1]);
    return h[1];
}

static void rename_reader(int r)
{
    char target[96];
    path_of(target, sizeof target, "target");
    uint32_t last = 0;
    long reads = 0;
    barrier(nwork);
    for (;;) {
        int finished = atomic_load(&sh->done);
        uint32_t v = read_version(target, r);
        reads++;
        if (v < last)
            FAIL("reader %d: version %u after version %u", r, v, last);
        last = v;
        if (finished)
            break;
    }
    /* The writer had finished before the last open: it saw the last version. */
    CHECK_EQ(last, RENAME_VERSIONS);
    atomic_store(&sh->value[r], reads);
}

static void rename_atomic(void)
{
    char target[96];
    path_of(target, sizeof target, "target");
    uint8_t buf[VER_MAX];
    version_make(buf, 0);
    int fd = CHECK_SYS(open(target, O_WRONLY | O_CREAT | O_EXCL, 0644));
    write_all(fd, buf, version_len(0));
    CHECK_SYS(close(fd));
    shared_reset();
    spawn("rename writer", cpu_of(0), rename_writer, 0);
    for (int r = 1; r < nwork; r++)
        spawn("rename reader", cpu_of(r), rename_reader, r);
    reap_all();
    long reads = 0;
    for (int r = 1; r < nwork; r++)
        reads += atomic_load(&sh->value[r]);
    CHECK_SYS(unlink(target));
    SAY("rename: %d versions renamed over the target while %d readers opened it %ld times: "
        "never ENOENT, always one complete version, never going back",
        RENAME_VERSIONS, nwork - 1, reads);
}

/* ---- 5. directory listing under churn ---- */

struct dirent64_raw {
    uint64_t d_ino;
    int64_t d_off;
    uint16_t d_reclen;
    uint8_t d_type;
    char d_name[];
};

#define LIST_BUF 128
#define MAX_NAMES 1024

static char churn_dir[96];
static ino_t stable_ino[LIST_STABLE];

static void churner(int c)
{
    char name[160];
    int created = 0, removed = 0;
    barrier(nwork);
    while (!atomic_load(&sh->done)) {
        snprintf(name, sizeof name, "%s/churn-%d-%d", churn_dir, c, created);
        CHECK_SYS(close(CHECK_SYS(open(name, O_WRONLY | O_CREAT | O_EXCL, 0644))));
        created++;
        if (created - removed > 3) {
            snprintf(name, sizeof name, "%s/churn-%d-%d", churn_dir, c, removed);
            CHECK_SYS(unlink(name));
            removed++;
        }
    }
    while (removed < created) {
        snprintf(name, sizeof name, "%s/churn-%d-%d", churn_dir, c, removed);
        CHECK_SYS(unlink(name));
        removed++;
    }
    atomic_store(&sh->value[c], created);
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Whether `name` is "churn-C-I" for a churner C. */
static int churn_name(const char *name)
{
    int c, i, len = 0;
    if (sscanf(name, "churn-%d-%d%n", &c, &i, &len) != 2 || name[len] != 0)
        return 0;
    return c >= 1 && c < nwork && i >= 0;
}

static void one_listing(int fd, int listing, char **names, char *store, size_t store_len)
{
    char buf[LIST_BUF] __attribute__((aligned(8)));
    int stable_seen[LIST_STABLE] = {0};
    int dots = 0, dotdots = 0, n = 0, calls = 0;
    size_t used = 0;
    for (;;) {
        long got = syscall(SYS_getdents64, fd, buf, sizeof buf);
        if (got < 0)
            FAIL("listing %d: getdents64 failed: %s", listing, strerror(errno));
        if (got == 0)
            break;
        calls++;
        for (long pos = 0; pos < got;) {
            struct dirent64_raw *d = (struct dirent64_raw *)(buf + pos);
            size_t head = offsetof(struct dirent64_raw, d_name);
            if (d->d_reclen < head + 2 || pos + d->d_reclen > got ||
                memchr(d->d_name, 0, d->d_reclen - head) == NULL)
                FAIL("listing %d: malformed dirent at %ld (reclen %u of %ld)", listing, pos,
                     d->d_reclen, got);
            const char *name = d->d_name;
            int s;
            if (strcmp(name, ".") == 0) {
                dots++;
                CHECK_EQ(d->d_type, DT_DIR);
            } else if (strcmp(name, "..") == 0) {
                dotdots++;
                CHECK_EQ(d->d_type, DT_DIR);
            } else if (sscanf(name, "stable-%d", &s) == 1 && s >= 0 && s < LIST_STABLE) {
                stable_seen[s]++;
                if (d->d_ino != stable_ino[s] || d->d_type != DT_REG)
                    FAIL("listing %d: %s has d_ino %llu d_type %u, expected %llu and DT_REG",
                         listing, name, (unsigned long long)d->d_ino, d->d_type,
                         (unsigned long long)stable_ino[s]);
            } else if (!churn_name(name)) {
                FAIL("listing %d: name \"%s\" that was never created", listing, name);
            }
            size_t len = strlen(name) + 1;
            if (n == MAX_NAMES || used + len > store_len)
                FAIL("listing %d: more than %d names", listing, MAX_NAMES);
            memcpy(store + used, name, len);
            names[n++] = store + used;
            used += len;
            pos += d->d_reclen;
        }
    }
    if (dots != 1 || dotdots != 1)
        FAIL("listing %d: \".\" %d times, \"..\" %d times", listing, dots, dotdots);
    for (int s = 0; s < LIST_STABLE; s++)
        if (stable_seen[s] != 1)
            FAIL("listing %d (%d getdents64 calls): stable-%02d seen %d times", listing, calls, s,
                 stable_seen[s]);
    qsort(names, (size_t)n, sizeof *names, cmp_str);
    for (int i = 1; i < n; i++)
        if (strcmp(names[i - 1], names[i]) == 0)
            FAIL("listing %d: \"%s\" listed twice", listing, names[i]);
    atomic_fetch_add(&sh->value[0], calls);
}

static void lister(int unused)
{
    (void)unused;
    static char *names[MAX_NAMES];
    static char store[MAX_NAMES * 32];
    int fd = CHECK_SYS(open(churn_dir, O_RDONLY | O_DIRECTORY));
    char tiny[8] __attribute__((aligned(8)));
    errno = 0;
    long r = syscall(SYS_getdents64, fd, tiny, sizeof tiny);
    if (r != -1 || errno != EINVAL)
        FAIL("getdents64 with an 8-byte buffer: %ld (%s), expected EINVAL", r, strerror(errno));
    barrier(nwork);
    for (int l = 0; l < LISTINGS; l++) {
        if (l % 2 == 0) {
            CHECK_EQ(lseek(fd, 0, SEEK_SET), 0);
        } else {
            CHECK_SYS(close(fd));
            fd = CHECK_SYS(open(churn_dir, O_RDONLY | O_DIRECTORY));
        }
        one_listing(fd, l, names, store, sizeof store);
    }
    CHECK_SYS(close(fd));
    atomic_store(&sh->done, 1);
}

static void listing_churn(void)
{
    path_of(churn_dir, sizeof churn_dir, "churn");
    CHECK_SYS(mkdir(churn_dir, 0755));
    for (int s = 0; s < LIST_STABLE; s++) {
        char name[160];
        snprintf(name, sizeof name, "%s/stable-%02d", churn_dir, s);
        int fd = CHECK_SYS(open(name, O_WRONLY | O_CREAT | O_EXCL, 0644));
        struct stat st;
        CHECK_SYS(fstat(fd, &st));
        stable_ino[s] = st.st_ino;
        CHECK_SYS(close(fd));
    }
    shared_reset();
    spawn("lister", cpu_of(0), lister, 0);
    for (int c = 1; c < nwork; c++)
        spawn("churner", cpu_of(c), churner, c);
    reap_all();
    long churned = 0;
    for (int c = 1; c < nwork; c++)
        churned += atomic_load(&sh->value[c]);
    long calls = atomic_load(&sh->value[0]);

    /* Quiet again: exactly the stable files are left. */
    DIR *d = opendir(churn_dir);
    CHECK(d != NULL);
    int left = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        if (strncmp(e->d_name, "stable-", 7) != 0)
            FAIL("\"%s\" left in the churned directory", e->d_name);
        left++;
    }
    closedir(d);
    CHECK_EQ(left, LIST_STABLE);
    for (int s = 0; s < LIST_STABLE; s++) {
        char name[160];
        snprintf(name, sizeof name, "%s/stable-%02d", churn_dir, s);
        CHECK_SYS(unlink(name));
    }
    CHECK_SYS(rmdir(churn_dir));
    SAY("listing under churn: %d listings (%ld getdents64 calls of %d bytes) while %d churners "
        "created and deleted %ld files: every stable name once, no name twice",
        LISTINGS, calls, LIST_BUF, nwork - 1, churned);
}

/* ---- 6. rmdir, mkdir and O_EXCL races ---- */

static char rm_dir[96];

static void rmdir_creator(int c)
{
    char name[160];
    barrier(nwork);
    for (int i = 0; i < RMDIR_FILES; i++) {
        snprintf(name, sizeof name, "%s/f-%d-%d", rm_dir, c, i);
        CHECK_SYS(close(CHECK_SYS(open(name, O_WRONLY | O_CREAT | O_EXCL, 0644))));
    }
    atomic_fetch_add(&sh->done, 1);
}

static void rmdir_remover(int unused)
{
    (void)unused;
    long tries = 0;
    barrier(nwork);
    do {
        CHECK_ERRNO(rmdir(rm_dir), ENOTEMPTY);
        tries++;
    } while (atomic_load(&sh->done) < nwork - 1);
    CHECK_ERRNO(rmdir(rm_dir), ENOTEMPTY);
    atomic_store(&sh->value[0], tries);
}

static void rmdir_busy(void)
{
    path_of(rm_dir, sizeof rm_dir, "rmdir");
    CHECK_SYS(mkdir(rm_dir, 0755));
    char name[400];
    snprintf(name, sizeof name, "%s/seed", rm_dir);
    CHECK_SYS(close(CHECK_SYS(open(name, O_WRONLY | O_CREAT | O_EXCL, 0644))));
    CHECK_ERRNO(rmdir(rm_dir), ENOTEMPTY);
    shared_reset();
    spawn("rmdir caller", cpu_of(0), rmdir_remover, 0);
    for (int c = 1; c < nwork; c++)
        spawn("file creator", cpu_of(c), rmdir_creator, c);
    reap_all();
    long tries = atomic_load(&sh->value[0]);

    /* Empty it: every created file is there. */
    int removed = 0;
    DIR *d = opendir(rm_dir);
    CHECK(d != NULL);
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        snprintf(name, sizeof name, "%s/%s", rm_dir, e->d_name);
        CHECK_SYS(unlink(name));
        removed++;
    }
    closedir(d);
    CHECK_EQ(removed, 1 + (nwork - 1) * RMDIR_FILES);
    CHECK_SYS(rmdir(rm_dir));
    struct stat st;
    CHECK_ERRNO(stat(rm_dir, &st), ENOENT);
    snprintf(name, sizeof name, "%s/late", rm_dir);
    CHECK_ERRNO(open(name, O_WRONLY | O_CREAT, 0644), ENOENT);
    CHECK_ERRNO(rmdir(rm_dir), ENOENT);
    SAY("rmdir: ENOTEMPTY %ld times while %d creators added %d files, then emptied it succeeds "
        "(and stat, creating inside give ENOENT)",
        tries, nwork - 1, (nwork - 1) * RMDIR_FILES);
}

static void mkdir_racer(int w)
{
    char name[96];
    for (int r = 0; r < RACE_ROUNDS; r++) {
        snprintf(name, sizeof name, "%s/race-%d", dir, r);
        barrier(nwork);
        int res = mkdir(name, 0755) == 0 ? 0 : errno;
        atomic_store(&sh->result[w], res);
        if (res != 0 && res != EEXIST)
            FAIL("mkdir(%s) by racer %d: %s, expected success or EEXIST", name, w, strerror(res));
        barrier(nwork);
        if (w == 0) {
            int winners = 0;
            for (int i = 0; i < nwork; i++)
                winners += atomic_load(&sh->result[i]) == 0;
            if (winners != 1)
                FAIL("mkdir(%s) by %d processes at once: %d succeeded", name, nwork, winners);
        }
    }
}

static void excl_racer(int w)
{
    char name[96];
    for (int r = 0; r < RACE_ROUNDS; r++) {
        snprintf(name, sizeof name, "%s/excl-%d", dir, r);
        barrier(nwork);
        int fd = open(name, O_RDWR | O_CREAT | O_EXCL, 0644);
        int res = fd >= 0 ? 0 : errno;
        if (fd >= 0) {
            uint32_t id[2] = {(uint32_t)w, (uint32_t)r};
            write_all(fd, id, sizeof id);
            CHECK_SYS(close(fd));
        } else if (res != EEXIST) {
            FAIL("open(%s, O_CREAT|O_EXCL) by racer %d: %s, expected success or EEXIST", name, w,
                 strerror(res));
        }
        atomic_store(&sh->result[w], res);
        barrier(nwork);
        if (w == 0) {
            int winners = 0, winner = -1;
            for (int i = 0; i < nwork; i++)
                if (atomic_load(&sh->result[i]) == 0) {
                    winners++;
                    winner = i;
                }
            if (winners != 1)
                FAIL("open(%s, O_CREAT|O_EXCL) by %d processes at once: %d won", name, nwork,
                     winners);
            fd = CHECK_SYS(open(name, O_RDONLY));
            uint32_t id[3];
            CHECK_EQ(read(fd, id, sizeof id), 8);
            CHECK_EQ(id[0], winner);
            CHECK_EQ(id[1], r);
            CHECK_SYS(close(fd));
        }
    }
}

static void name_races(void)
{
    shared_reset();
    for (int w = 0; w < nwork; w++)
        spawn("mkdir racer", cpu_of(w), mkdir_racer, w);
    reap_all();
    char name[96];
    for (int r = 0; r < RACE_ROUNDS; r++) {
        snprintf(name, sizeof name, "%s/race-%d", dir, r);
        struct stat st;
        CHECK_SYS(stat(name, &st));
        CHECK(S_ISDIR(st.st_mode));
        CHECK_SYS(rmdir(name));
    }
    SAY("mkdir race: %d names, each made by %d processes at once: exactly one success, the "
        "others EEXIST",
        RACE_ROUNDS, nwork);
    shared_reset();
    for (int w = 0; w < nwork; w++)
        spawn("O_EXCL racer", cpu_of(w), excl_racer, w);
    reap_all();
    for (int r = 0; r < RACE_ROUNDS; r++) {
        snprintf(name, sizeof name, "%s/excl-%d", dir, r);
        CHECK_SYS(unlink(name));
    }
    SAY("O_CREAT|O_EXCL race: %d names, each by %d processes at once: exactly one winner, the "
        "file holds the winner's data",
        RACE_ROUNDS, nwork);
}

int main(void)
{
    test_begin("fsshare");
    ncpu = allowed_cpus(cpus, MAX_CPUS);
    nwork = ncpu < MIN_WORKERS ? MIN_WORKERS : ncpu;
    sh = shared_page(sizeof *sh);
    snprintf(dir, sizeof dir, "%s/fsshare.%d", BASE_DIR, getpid());
    CHECK_SYS(mkdir(dir, 0755));
    SAY("%d cores, %d processes per race, files in %s", ncpu, nwork, dir);
    one_description();
    append_atomic();
    unlinked_open();
    unlinked_space_freed();
    rename_atomic();
    listing_churn();
    rmdir_busy();
    name_races();
    CHECK_SYS(rmdir(dir));
    PASS();
}
