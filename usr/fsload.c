/*
 * fsload: the file-system workloads of Hare's Table 5.1 (Gruenwald's thesis, §5.2), written
 * again from their descriptions, for `cargo xtask bench hare` (Hare, NR-FS and Linux tmpfs
 * run the same binary) and for the qemu::hare-fsload case of `cargo xtask test`.
 *
 *     fsload WORKLOAD [-p PROCS] [-d SECONDS | -i ITERATIONS] [-s SCALE] DIR
 *
 * WORKLOAD is one of the names below, or `all` (each in turn). PROCS processes (default: one
 * per online CPU; process i is pinned to the i-th CPU it may run on, modulo their number)
 * work under DIR/fsload.<pid>, which the run makes and removes. The repeating workloads run
 * for SECONDS (default 1) or, with -i, exactly ITERATIONS iterations per process (what the
 * test uses: then nothing depends on timing); pfind's iteration is a walk of the whole tree.
 * rm removes its tree once. SCALE (default 1) multiplies the trees' sizes; 0 makes small ones
 * (the test's).
 *
 *   creates      open(O_CREAT) and close a new file, then unlink it; a shared distributed
 *                directory
 *   writes       make a file, write it 10 times 4096 bytes, close, unlink; a shared directory
 *   renames      rename a file of one's own back and forth; a shared distributed directory
 *   directories  mkdir then rmdir a directory of one's own; a shared directory
 *   rm-dense     remove a tree of 4 directories x 8 directories x 64 files (x SCALE; 4 with
 *                SCALE 0) made before timing, the processes sharing the 32 lower directories
 *   rm-sparse    remove a binary tree of directories 9 levels deep (10 with SCALE >= 2, 5
 *                with SCALE 0)
 *   pfind-dense  every process lists the whole dense tree again and again, breadth first in
 *                a random order, and must find every entry (its directories distributed)
 *   pfind-sparse the same on the sparse tree (not distributed)
 *   mailbench    sv6's mail delivery without its exec calls: write a message into the spool's
 *                tmp, rename it into the queue, read it back as the queue manager, deliver it
 *                into a mailbox's tmp, rename it into new; a reader deletes old mail
 *   fsstress     random operations (create, append, read, truncate, stat, rename, unlink,
 *                mkdir, rmdir, list) on 24 names of one's own subtree, from a seeded
 *                generator; only the errors those operations may meet are allowed
 *   grow         create files of one's own, kept, in one shared ordinary directory, listing it
 *                every 64 creates (and after the last of -i's) and finding every file one
 *                made; the directory grows from
 *                every core, so Hare distributes it by itself once it passes the mount's
 *                threshold (§6.1.2, `distribute_at`) while the others create and list
 *   punzip       busybox unzip of punzip.zip beside fsload (100 man-page-sized files in 5
 *                directories, stored: xtask/src/zip.rs) into a directory of one's own in a
 *                shared distributed directory, then its removal; an operation is a file
 *
 * Directories marked distributed are made with mode bit S_DISTRIBUTED (0200000,
 * lib/abi/src/reef.rs): on Hare their entries spread over every file server; NR-FS and Linux
 * ignore mode bits outside 07777, so the program is the same everywhere.
 *
 * Output: set-up lines, then one result line per workload:
 *
 *     fsload creates procs=2 ops=1234 seconds=1.002 ops_per_sec=1231.5 us_per_op=1.62
 *
 * (us_per_op: the time over the operations of one process, the latency of one operation
 * when the processes do not wait for one another.)
 * An operation is one iteration of a repeating workload (fsstress: one random operation), an
 * entry removed (rm) or an entry seen (pfind). The time runs from the processes' common start
 * to the last one's end; the trees are made before it. Any unexpected error prints a FAIL line and
 * exits with status 1.
 */
#include "reef-test.h"
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>

#define S_DISTRIBUTED 0200000
#define MAX_PROCS 64
#define DENSE_TOP 4
#define DENSE_MID 8
#define DENSE_FILES 64

static int procs, iterations, scale = 1;
static double seconds = 1.0;
static char root[512];

static double now_s(void)
{
    return (double)now_ns() * 1e-9;
}

/* Whether a repeating loop started at `t0` should run iteration `k`. */
static int more(long k, double t0)
{
    if (iterations > 0)
        return k < iterations;
    return now_s() - t0 < seconds;
}

static void path_of(char *out, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void path_of(char *out, size_t len, const char *fmt, ...)
{
    int n = snprintf(out, len, "%s/", root);
    va_list ap;
    va_start(ap, fmt);
    int m = vsnprintf(out + n, len - (size_t)n, fmt, ap);
    va_end(ap);
    if (m < 0 || (size_t)(n + m) >= len)
        FAIL("path too long under %s", root);
}

static void make_dir(const char *path, int distributed)
{
    CHECK_SYS(mkdir(path, 0755 | (distributed ? S_DISTRIBUTED : 0)));
}

/* ---- the processes ---- */

/* Pins the calling process to the i-th CPU it may run on. */
static void pin(int i)
{
    cpu_set_t set;
    CHECK_SYS(sched_getaffinity(0, sizeof set, &set));
    int n = CPU_COUNT(&set);
    if (n == 0)
        return;
    int want = i % n;
    for (int cpu = 0; cpu < CPU_SETSIZE; cpu++) {
        if (CPU_ISSET(cpu, &set) && want-- == 0) {
            cpu_set_t one;
            CPU_ZERO(&one);
            CPU_SET(cpu, &one);
            CHECK_SYS(sched_setaffinity(0, sizeof one, &one));
            return;
        }
    }
}

/* Runs body(i) in `procs` processes that start together; returns the sum of their counts
 * and the time from the start to the last one's end in `*elapsed`. */
static long in_parallel(long (*body)(int i), double *elapsed)
{
    int go[2], counts[2];
    CHECK_SYS(pipe(go));
    CHECK_SYS(pipe(counts));
    pid_t pids[MAX_PROCS];
    for (int i = 0; i < procs; i++) {
        pids[i] = CHECK_SYS(fork());
        if (pids[i] == 0) {
            close(go[1]);
            close(counts[0]);
            pin(i);
            char c;
            CHECK_EQ(read(go[0], &c, 1), 0); /* the parent closes its end: start */
            long n = body(i);
            CHECK_EQ(write(counts[1], &n, sizeof n), sizeof n);
            _exit(0);
        }
    }
    close(go[0]);
    close(counts[1]);
    double t0 = now_s();
    close(go[1]);
    long total = 0;
    for (int i = 0; i < procs; i++) {
        long n;
        CHECK_EQ(read(counts[0], &n, sizeof n), sizeof n);
        total += n;
    }
    *elapsed = now_s() - t0;
    close(counts[0]);
    for (int i = 0; i < procs; i++) {
        int status;
        CHECK_EQ(waitpid(pids[i], &status, 0), pids[i]);
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
            FAIL("process %d ended with status 0x%x", i, status);
    }
    return total;
}

static void report(const char *name, long ops, double elapsed)
{
    printf("fsload %s procs=%d ops=%ld seconds=%.3f ops_per_sec=%.1f us_per_op=%.2f\n", name,
           procs, ops, elapsed, elapsed > 0 ? (double)ops / elapsed : 0.0,
           ops > 0 ? elapsed * procs * 1e6 / (double)ops : 0.0);
}

/* ---- repeating workloads ---- */

static long creates(int i)
{
    char p[600];
    double t0 = now_s();
    long k = 0;
    for (; more(k, t0); k++) {
        path_of(p, sizeof p, "creates/c%d.%ld", i, k);
        int fd = CHECK_SYS(open(p, O_CREAT | O_EXCL | O_WRONLY, 0644));
        CHECK_SYS(close(fd));
        CHECK_SYS(unlink(p));
    }
    return k;
}

static long writes(int i)
{
    static char block[4096];
    memset(block, 'a' + i % 26, sizeof block);
    char p[600];
    double t0 = now_s();
    long k = 0;
    for (; more(k, t0); k++) {
        path_of(p, sizeof p, "writes/w%d.%ld", i, k);
        int fd = CHECK_SYS(open(p, O_CREAT | O_EXCL | O_WRONLY, 0644));
        for (int w = 0; w < 10; w++)
            CHECK_EQ(write(fd, block, sizeof block), sizeof block);
        CHECK_SYS(close(fd));
        struct stat st;
        CHECK_SYS(stat(p, &st));
        CHECK_EQ(st.st_size, 10 * sizeof block);
        CHECK_SYS(unlink(p));
    }
    return k;
}

static long renames(int i)
{
    char a[600], b[600];
    path_of(a, sizeof a, "renames/r%d.a", i);
    path_of(b, sizeof b, "renames/r%d.b", i);
    CHECK_SYS(close(CHECK_SYS(open(a, O_CREAT | O_EXCL | O_WRONLY, 0644))));
    double t0 = now_s();
    long k = 0;
    for (; more(k, t0); k++)
        CHECK_SYS(k % 2 ? rename(b, a) : rename(a, b));
    CHECK_SYS(unlink(k % 2 ? b : a));
    return k;
}

static long directories(int i)
{
    char p[600];
    double t0 = now_s();
    long k = 0;
    for (; more(k, t0); k++) {
        path_of(p, sizeof p, "dirs/d%d.%ld", i, k);
        CHECK_SYS(mkdir(p, 0755));
        CHECK_SYS(rmdir(p));
    }
    return k;
}

/* Writes `len` bytes of `c` to a new file `p`. */
static void put_file(const char *p, char c, size_t len)
{
    char buf[1024];
    memset(buf, c, sizeof buf);
    int fd = CHECK_SYS(open(p, O_CREAT | O_EXCL | O_WRONLY, 0600));
    CHECK_EQ(write(fd, buf, len), (long)len);
    CHECK_SYS(close(fd));
}

/* Messages a mailbox keeps before its reader deletes the oldest. */
#define MAIL_KEPT 32

static long mailbench(int i)
{
    char tmp[600], queued[600], box[600], delivered[600], old[600];
    char buf[1024];
    int user = i;
    double t0 = now_s();
    long k = 0;
    for (; more(k, t0); k++) {
        size_t len = 300 + (size_t)(k * 37 % 700);
        /* mail-enqueue: the message into the spool, then into the queue. */
        path_of(tmp, sizeof tmp, "mail/spool/tmp/%d.%ld", i, k);
        path_of(queued, sizeof queued, "mail/spool/queue/%d.%ld", i, k);
        put_file(tmp, 'm', len);
        CHECK_SYS(rename(tmp, queued));
        /* mail-qman: read it, deliver it (mail-deliver), drop it from the queue. */
        int fd = CHECK_SYS(open(queued, O_RDONLY));
        CHECK_EQ(read(fd, buf, sizeof buf), (long)len);
        CHECK_SYS(close(fd));
        path_of(box, sizeof box, "mail/user%d/tmp/%d.%ld", user, i, k);
        path_of(delivered, sizeof delivered, "mail/user%d/new/%d.%ld", user, i, k);
        put_file(box, buf[0], len);
        CHECK_SYS(rename(box, delivered));
        CHECK_SYS(unlink(queued));
        /* The mailbox's reader deletes old mail. */
        if (k >= MAIL_KEPT) {
            path_of(old, sizeof old, "mail/user%d/new/%d.%ld", user, i, k - MAIL_KEPT);
            CHECK_SYS(unlink(old));
        }
    }
    for (long j = k > MAIL_KEPT ? k - MAIL_KEPT : 0; j < k; j++) {
        path_of(old, sizeof old, "mail/user%d/new/%d.%ld", user, i, j);
        CHECK_SYS(unlink(old));
    }
    return k;
}

/* Creates between two listings in grow. */
#define GROW_LIST_EVERY 64

/* Entries of directory `dir` whose names start with `prefix`. */
static long count_prefixed(const char *dir, const char *prefix)
{
    DIR *d = opendir(dir);
    if (!d)
        FAIL("opendir %s: %s", dir, strerror(errno));
    long n = 0;
    size_t len = strlen(prefix);
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        n += strncmp(e->d_name, prefix, len) == 0;
    CHECK_SYS(closedir(d));
    return n;
}

static long grow(int i)
{
    char dir[600], p[600], mine[32];
    path_of(dir, sizeof dir, "grow");
    snprintf(mine, sizeof mine, "g%d.", i);
    double t0 = now_s();
    long k = 0;
    for (; more(k, t0); k++) {
        path_of(p, sizeof p, "grow/g%d.%ld", i, k);
        CHECK_SYS(close(CHECK_SYS(open(p, O_CREAT | O_EXCL | O_WRONLY, 0644))));
        if ((k + 1) % GROW_LIST_EVERY == 0 || (iterations > 0 && k + 1 == iterations)) {
            long seen = count_prefixed(dir, mine);
            if (seen != k + 1)
                FAIL("grow: a listing of %s found %ld of the %ld files process %d made", dir,
                     seen, k + 1, i);
        }
    }
    return k;
}

/* xorshift64*: the same sequence on every system. */
static uint64_t next_random(uint64_t *s)
{
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return *s * 0x2545f4914f6cdd1dull;
}

#define STRESS_NAMES 24

/* Fails unless `r` succeeded or failed with one of the errors the operation may meet. */
static void stress_check(long r, const char *op, const char *p)
{
    if (r >= 0)
        return;
    switch (errno) {
    case ENOENT: case EEXIST: case ENOTEMPTY: case ENOTDIR: case EISDIR: case EINVAL:
        return;
    default:
        FAIL("fsstress %s %s: %s (errno %d)", op, p, strerror(errno), errno);
    }
}

/* Removes the tree under `p` (and `p`). */
static long remove_tree(const char *p)
{
    struct stat st;
    if (lstat(p, &st) != 0)
        FAIL("lstat %s: %s", p, strerror(errno));
    if (!S_ISDIR(st.st_mode)) {
        CHECK_SYS(unlink(p));
        return 1;
    }
    long n = 0;
    /* Remove in rounds: a listing read while removing may skip entries. */
    for (;;) {
        DIR *d = opendir(p);
        if (!d)
            FAIL("opendir %s: %s", p, strerror(errno));
        long round = 0;
        struct dirent *e;
        char child[600];
        while ((e = readdir(d)) != NULL) {
            if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
                continue;
            snprintf(child, sizeof child, "%s/%s", p, e->d_name);
            round += remove_tree(child);
        }
        closedir(d);
        if (round == 0)
            break;
        n += round;
    }
    CHECK_SYS(rmdir(p));
    return n + 1;
}

static long fsstress(int i)
{
    uint64_t seed = 0x9e3779b97f4a7c15ull * (uint64_t)(i + 1);
    char base[600], p[700], q[700];
    path_of(base, sizeof base, "stress/p%d", i);
    make_dir(base, 0);
    char buf[8192];
    memset(buf, 's', sizeof buf);
    double t0 = now_s();
    long k = 0;
    for (; more(k, t0); k++) {
        uint64_t r = next_random(&seed);
        /* Names one or two levels down: n3 or d1/n7. */
        int a = (int)(r % STRESS_NAMES), b = (int)(r / STRESS_NAMES % STRESS_NAMES);
        if (a % 3)
            snprintf(p, sizeof p, "%s/n%d", base, a);
        else
            snprintf(p, sizeof p, "%s/d%d/n%d", base, a % 4, b);
        snprintf(q, sizeof q, "%s/n%d", base, b);
        long res;
        switch (r >> 40 & 15) {
        case 0: case 1: {
            int fd = open(p, O_CREAT | O_WRONLY | O_APPEND, 0644);
            stress_check(fd, "create", p);
            if (fd >= 0) {
                size_t len = (size_t)(r >> 20 & 8191);
                CHECK_EQ(write(fd, buf, len), (long)len);
                CHECK_SYS(close(fd));
            }
            break;
        }
        case 2: case 3: {
            int fd = open(p, O_RDONLY);
            stress_check(fd, "open", p);
            if (fd >= 0) {
                res = read(fd, buf, sizeof buf);
                stress_check(res, "read", p);
                CHECK_SYS(close(fd));
            }
            break;
        }
        case 4:
            stress_check(truncate(p, (off_t)(r >> 24 & 4095)), "truncate", p);
            break;
        case 5: case 6: {
            struct stat st;
            stress_check(stat(p, &st), "stat", p);
            break;
        }
        case 7: case 8:
            stress_check(rename(p, q), "rename", p);
            break;
        case 9: case 10:
            stress_check(unlink(p), "unlink", p);
            break;
        case 11: case 12:
            snprintf(p, sizeof p, "%s/d%d", base, a % 4);
            stress_check(mkdir(p, 0755), "mkdir", p);
            break;
        case 13:
            snprintf(p, sizeof p, "%s/d%d", base, a % 4);
            stress_check(rmdir(p), "rmdir", p);
            break;
        default: {
            DIR *d = opendir(base);
            if (!d)
                FAIL("opendir %s: %s", base, strerror(errno));
            while (readdir(d) != NULL) {
            }
            closedir(d);
        }
        }
    }
    remove_tree(base);
    return k;
}

/* ---- tree workloads ---- */

static int sparse_depth(void)
{
    return scale == 0 ? 5 : scale >= 2 ? 10 : 9;
}

static int dense_files(void)
{
    return scale == 0 ? 4 : DENSE_FILES * scale;
}

/* Makes the dense tree under `top`: DENSE_TOP x DENSE_MID directories, dense_files() files in
 * each of the latter. Its number of entries. */
static long make_dense(const char *top, int distributed)
{
    char p[700];
    long n = 0;
    make_dir(top, distributed);
    for (int t = 0; t < DENSE_TOP; t++) {
        snprintf(p, sizeof p, "%s/t%d", top, t);
        make_dir(p, distributed);
        n++;
        for (int m = 0; m < DENSE_MID; m++) {
            snprintf(p, sizeof p, "%s/t%d/m%d", top, t, m);
            make_dir(p, distributed);
            n++;
            for (int f = 0; f < dense_files(); f++) {
                snprintf(p, sizeof p, "%s/t%d/m%d/f%d", top, t, m, f);
                CHECK_SYS(close(CHECK_SYS(open(p, O_CREAT | O_EXCL | O_WRONLY, 0644))));
                n++;
            }
        }
    }
    return n;
}

/* Makes a binary tree of directories `depth` levels below `p`. Its number of entries. */
static long make_sparse(const char *p, int depth)
{
    if (depth == 0)
        return 0;
    char c[700];
    long n = 0;
    for (int k = 0; k < 2; k++) {
        snprintf(c, sizeof c, "%s/%c", p, 'a' + k);
        make_dir(c, 0);
        n += 1 + make_sparse(c, depth - 1);
    }
    return n;
}

static char tree[600];
static long tree_entries;

static long rm_dense(int i)
{
    char p[700];
    long n = 0;
    for (int leaf = i; leaf < DENSE_TOP * DENSE_MID; leaf += procs) {
        snprintf(p, sizeof p, "%s/t%d/m%d", tree, leaf / DENSE_MID, leaf % DENSE_MID);
        n += remove_tree(p);
    }
    return n;
}

/* The sparse tree's subtrees three levels down (8), shared out. */
static long rm_sparse(int i)
{
    char p[700];
    long n = 0;
    for (int s = i; s < 8; s += procs) {
        snprintf(p, sizeof p, "%s/%c/%c/%c", tree, 'a' + (s >> 2), 'a' + (s >> 1 & 1), 'a' + (s & 1));
        n += remove_tree(p);
    }
    return n;
}

/* Lists the tree breadth first, each directory's children visited in a random order; must
 * find every entry. */
static long walk(uint64_t *seed)
{
    enum { QUEUE = 4096 };
    static char queue[QUEUE][160];
    int head = 0, tail = 0;
    if (strlen(tree) >= sizeof queue[0])
        FAIL("pfind: %s too long", tree);
    memcpy(queue[tail++], tree, strlen(tree) + 1);
    long seen = 0;
    while (head < tail) {
        char dir[sizeof queue[0]];
        memcpy(dir, queue[head++ % QUEUE], sizeof dir);
        DIR *d = opendir(dir);
        if (!d)
            FAIL("opendir %s: %s", dir, strerror(errno));
        int first = tail;
        struct dirent *e;
        while ((e = readdir(d)) != NULL) {
            if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
                continue;
            seen++;
            if (e->d_type == DT_DIR) {
                if (tail - head >= QUEUE)
                    FAIL("pfind: more than %d directories queued", QUEUE);
                int n = snprintf(queue[tail++ % QUEUE], sizeof queue[0], "%s/%s", dir, e->d_name);
                if (n < 0 || (size_t)n >= sizeof queue[0])
                    FAIL("pfind: path %s/%s too long", dir, e->d_name);
            }
        }
        closedir(d);
        /* Shuffle the directories just queued (no herd walking in step). */
        for (int a = tail - 1; a > first; a--) {
            int b = first + (int)(next_random(seed) % (uint64_t)(a - first + 1));
            char t[160];
            memcpy(t, queue[a % QUEUE], sizeof t);
            memcpy(queue[a % QUEUE], queue[b % QUEUE], sizeof t);
            memcpy(queue[b % QUEUE], t, sizeof t);
        }
    }
    if (seen != tree_entries)
        FAIL("pfind saw %ld entries of %ld", seen, tree_entries);
    return seen;
}

/* Walks the tree again and again. */
static long pfind(int i)
{
    uint64_t seed = 0x2545f4914f6cdd1dull * (uint64_t)(i + 7);
    double t0 = now_s();
    long seen = 0;
    for (long k = 0; more(k, t0); k++)
        seen += walk(&seed);
    return seen;
}

/* ---- the workloads ---- */

/* A repeating workload in directory `sub`, which each operation leaves `kept` entries in (0:
 * every process removes what it made). */
static void repeating(const char *name, const char *sub, int distributed, long (*body)(int),
                      long kept)
{
    char p[600];
    path_of(p, sizeof p, "%s", sub);
    make_dir(p, distributed);
    double elapsed;
    long ops = in_parallel(body, &elapsed);
    if (iterations > 0)
        CHECK_EQ(ops, (long)iterations * procs);
    /* What the operations kept is there, and nothing else. */
    CHECK_EQ(remove_tree(p), 1 + ops * kept);
    report(name, ops, elapsed);
}

/* The punzip archive (xtask/src/zip.rs): PUNZIP_FILES files in PUNZIP_DIRS directories, in
 * fsload's own directory (/test in QEMU, out/usr natively). */
static char archive[512];
#define PUNZIP_FILES 100
#define PUNZIP_DIRS 5

/* An iteration: busybox unzip extracts the archive into a directory of one's own in the
 * shared distributed directory (it checks every file's CRC-32), then the tree is removed;
 * every file and directory must be there. Counts the files. */
static long punzip(int i)
{
    char d[600];
    double t0 = now_s();
    long k = 0;
    for (; more(k, t0); k++) {
        path_of(d, sizeof d, "punzip/u%d.%ld", i, k);
        make_dir(d, 0);
        pid_t pid = CHECK_SYS(fork());
        if (pid == 0) {
            execl("/bin/busybox", "unzip", "-q", archive, "-d", d, (char *)NULL);
            printf("FAIL fsload: exec /bin/busybox unzip: %s\n", strerror(errno));
            _exit(127);
        }
        int status;
        CHECK_EQ(waitpid(pid, &status, 0), pid);
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
            FAIL("unzip into %s: %s", d, describe_wait(status));
        CHECK_EQ(remove_tree(d), PUNZIP_FILES + PUNZIP_DIRS + 1);
    }
    return k * PUNZIP_FILES;
}

static void unzips(void)
{
    char p[600];
    path_of(p, sizeof p, "punzip");
    make_dir(p, 1);
    double elapsed;
    long files = in_parallel(punzip, &elapsed);
    if (iterations > 0)
        CHECK_EQ(files, (long)iterations * procs * PUNZIP_FILES);
    CHECK_EQ(remove_tree(p), 1);
    report("punzip", files, elapsed);
}

static void mail(void)
{
    char p[600];
    path_of(p, sizeof p, "mail");
    make_dir(p, 0);
    path_of(p, sizeof p, "mail/spool");
    make_dir(p, 0);
    path_of(p, sizeof p, "mail/spool/tmp");
    make_dir(p, 1);
    path_of(p, sizeof p, "mail/spool/queue");
    make_dir(p, 1);
    for (int u = 0; u < procs; u++) {
        path_of(p, sizeof p, "mail/user%d", u);
        make_dir(p, 0);
        path_of(p, sizeof p, "mail/user%d/tmp", u);
        make_dir(p, 0);
        path_of(p, sizeof p, "mail/user%d/new", u);
        make_dir(p, 1);
    }
    double elapsed;
    long ops = in_parallel(mailbench, &elapsed);
    if (iterations > 0)
        CHECK_EQ(ops, (long)iterations * procs);
    path_of(p, sizeof p, "mail");
    /* Every message was delivered and read: only the directories are left. */
    CHECK_EQ(remove_tree(p), 3 + 3 * procs + 1);
    report("mailbench", ops, elapsed);
}

static void rm(const char *name, int dense)
{
    path_of(tree, sizeof tree, "%s", name);
    long n = dense ? make_dense(tree, 0) : (make_dir(tree, 0), make_sparse(tree, sparse_depth()));
    SAY("%s: %ld entries made", name, n);
    double elapsed;
    long removed = in_parallel(dense ? rm_dense : rm_sparse, &elapsed);
    /* What the processes left: the upper directories, then the top. */
    long rest = remove_tree(tree) - 1;
    CHECK_EQ(removed + rest, n);
    report(name, removed, elapsed);
}

static void find(const char *name, int dense)
{
    path_of(tree, sizeof tree, "%s", name);
    tree_entries = dense ? make_dense(tree, 1) : (make_dir(tree, 0), make_sparse(tree, sparse_depth()));
    SAY("%s: %ld entries made", name, tree_entries);
    double elapsed;
    long seen = in_parallel(pfind, &elapsed);
    CHECK_EQ(seen % tree_entries, 0);
    if (iterations > 0)
        CHECK_EQ(seen, tree_entries * procs * iterations);
    CHECK_EQ(remove_tree(tree), tree_entries + 1);
    report(name, seen, elapsed);
}

static const char *const WORKLOADS[] = {"creates",   "writes",      "renames",     "directories",
                                        "rm-dense",  "rm-sparse",   "pfind-dense", "pfind-sparse",
                                        "mailbench", "fsstress",    "punzip",      "grow"};

static void run(const char *w)
{
    if (!strcmp(w, "creates"))
        repeating(w, "creates", 1, creates, 0);
    else if (!strcmp(w, "writes"))
        repeating(w, "writes", 0, writes, 0);
    else if (!strcmp(w, "renames"))
        repeating(w, "renames", 1, renames, 0);
    else if (!strcmp(w, "directories"))
        repeating(w, "dirs", 0, directories, 0);
    else if (!strcmp(w, "rm-dense"))
        rm(w, 1);
    else if (!strcmp(w, "rm-sparse"))
        rm(w, 0);
    else if (!strcmp(w, "pfind-dense"))
        find(w, 1);
    else if (!strcmp(w, "pfind-sparse"))
        find(w, 0);
    else if (!strcmp(w, "mailbench"))
        mail();
    else if (!strcmp(w, "fsstress"))
        repeating(w, "stress", 0, fsstress, 0);
    else if (!strcmp(w, "punzip"))
        unzips();
    else if (!strcmp(w, "grow"))
        repeating(w, "grow", 0, grow, 1);
    else
        FAIL("unknown workload %s", w);
}

int main(int argc, char **argv)
{
    test_begin("fsload");
    const char *usage = "usage: fsload WORKLOAD|all [-p PROCS] [-d SECONDS | -i ITERATIONS] "
                        "[-s SCALE] DIR";
    if (argc < 3) {
        fprintf(stderr, "%s\n", usage);
        return 2;
    }
    const char *workload = argv[1];
    procs = (int)sysconf(_SC_NPROCESSORS_ONLN);
    int opt;
    optind = 2;
    while ((opt = getopt(argc, argv, "p:d:i:s:")) != -1) {
        switch (opt) {
        case 'p': procs = atoi(optarg); break;
        case 'd': seconds = atof(optarg); break;
        case 'i': iterations = atoi(optarg); break;
        case 's': scale = atoi(optarg); break;
        default: fprintf(stderr, "%s\n", usage); return 2;
        }
    }
    if (optind != argc - 1 || procs < 1 || procs > MAX_PROCS || seconds <= 0 || iterations < 0 ||
        scale < 0 || scale > 16) {
        fprintf(stderr, "%s\n(PROCS 1..%d, SCALE 0..16)\n", usage, MAX_PROCS);
        return 2;
    }
    const char *self = self_path(argv[0]);
    const char *slash = strrchr(self, '/');
    snprintf(archive, sizeof archive, "%.*s/punzip.zip", slash ? (int)(slash - self) : 1,
             slash ? self : ".");
    snprintf(root, sizeof root, "%s/fsload.%d", argv[optind], (int)getpid());
    CHECK_SYS(mkdir(root, 0755));
    SAY("%d processes under %s", procs, root);
    if (!strcmp(workload, "all")) {
        for (size_t k = 0; k < sizeof WORKLOADS / sizeof WORKLOADS[0]; k++)
            run(WORKLOADS[k]);
    } else {
        run(workload);
    }
    CHECK_SYS(rmdir(root));
    SAY("done, %s removed", root);
    return 0;
}
