/*
 * devproc: the device files and the /proc files a Linux program expects.
 *
 * - /dev/null: reads give EOF, writes are swallowed whole; /dev/zero: reads fill the buffer with
 *   zeros, writes are swallowed; /dev/urandom: reads give the bytes asked for, two reads differ;
 *   all three are character devices, listed in /dev;
 * - /dev/console and /dev/tty open and are terminals (isatty). On Reef both must work. Off Reef
 *   (`cargo xtask test --linux-only` runs the program with stdin closed and no controlling
 *   terminal) /dev/tty may fail with ENXIO and /dev/console may be absent or refused: such a
 *   failure is printed and accepted there only; a /dev/tty that opens must be a terminal;
 * - /proc/self/exe: readlink gives the path the program was started as (argv[0], $REEF_SELF or
 *   found on $PATH), made absolute with symlinks resolved (by this program, without /proc),
 *   and stat of it is the same file as that path;
 * - /proc/self/fd/: lists exactly the open descriptors (checked against fcntl(F_GETFD) on every
 *   number), before, with and after a few extra ones (a file, /dev/null, a directory, a dup at
 *   100); readlink of /proc/self/fd/N names the file open there, stat follows to it;
 * - /proc/cpuinfo has one `processor` line per online CPU (sysconf(_SC_NPROCESSORS_ONLN));
 *   /proc/meminfo has MemTotal and MemFree lines with MemFree <= MemTotal; /proc/mounts has a
 *   line for `/`; each file reads the same in 13-byte pieces as in 4096-byte ones;
 * - on Reef only: /proc/reef/nrfs in the format `nrfs: logs=L replicas=R stale_retries=S` then
 *   `log I: submitted=N applied=A0,...,A(R-1)` per log, every applied count <= submitted, and the
 *   submitted total grows when the file system is changed; /proc/reef/memory has a header and
 *   one line per node (as many as NR-FS replicas) with heap bytes used <= held, at least one
 *   arena and a spare of 0 or 2048 KiB, then a `file data pages` line whose figure grows by at
 *   least the size of a file written (every replica keeps a copy) and shrinks when it is removed.
 */
#include "reef-test.h"
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <sys/stat.h>

#define MAX_FDS 4096

/* ---- helpers ---- */

/* The whole of a (possibly /proc) file, read `chunk` bytes at a time; NUL-terminated, malloc'ed. */
static char *slurp(const char *path, size_t chunk, size_t *len)
{
    int fd = open(path, O_RDONLY);
    if (fd < 0)
        FAIL("open(%s) failed: %s", path, strerror(errno));
    size_t cap = 8192, n = 0;
    char *buf = malloc(cap);
    CHECK(buf != NULL);
    for (;;) {
        if (n + chunk + 1 > cap) {
            cap = 2 * (n + chunk + 1);
            buf = realloc(buf, cap);
            CHECK(buf != NULL);
        }
        long r = read(fd, buf + n, chunk);
        if (r < 0)
            FAIL("read(%s) failed: %s", path, strerror(errno));
        if (r == 0)
            break;
        CHECK((size_t)r <= chunk);
        n += r;
        CHECK(n < (64u << 20));
    }
    CHECK_SYS(close(fd));
    buf[n] = 0;
    if (strlen(buf) != n)
        FAIL("%s holds a NUL byte", path);
    if (len)
        *len = n;
    return buf;
}

/* `in` made absolute, with ".", ".." and symlinks resolved (like realpath, which musl 1.2.3
 * implements through /proc/self/fd: this test must not rely on what it checks). */
static void resolve(const char *in, char *out, size_t cap)
{
    char work[3 * PATH_MAX], cwd[PATH_MAX];
    if (in[0] == '/') {
        snprintf(work, sizeof work, "%s", in);
    } else {
        CHECK(getcwd(cwd, sizeof cwd) != NULL);
        snprintf(work, sizeof work, "%s/%s", cwd, in);
    }
    char res[PATH_MAX] = "";
    int links = 0;
    char *p = work;
    for (;;) {
        while (*p == '/')
            p++;
        if (!*p)
            break;
        char *end = strchr(p, '/');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        char comp[NAME_MAX + 1];
        CHECK(len <= NAME_MAX);
        memcpy(comp, p, len);
        comp[len] = 0;
        p += len;
        if (!strcmp(comp, "."))
            continue;
        if (!strcmp(comp, "..")) {
            char *slash = strrchr(res, '/');
            if (slash)
                *slash = 0;
            continue;
        }
        char cand[PATH_MAX + NAME_MAX + 2];
        CHECK(strlen(res) + 1 + len < PATH_MAX);
        snprintf(cand, sizeof cand, "%s/%s", res, comp);
        struct stat st;
        if (lstat(cand, &st) != 0)
            FAIL("resolving %s: lstat(%s) failed: %s", in, cand, strerror(errno));
        if (!S_ISLNK(st.st_mode)) {
            strcpy(res, cand);
            continue;
        }
        if (++links > 40)
            FAIL("resolving %s: too many symlinks", in);
        char target[PATH_MAX];
        long n = readlink(cand, target, sizeof target - 1);
        if (n < 0)
            FAIL("readlink(%s) failed: %s", cand, strerror(errno));
        target[n] = 0;
        char rest[3 * PATH_MAX];
        snprintf(rest, sizeof rest, "%s%s", target, p);
        strcpy(work, rest);
        p = work;
        if (target[0] == '/')
            res[0] = 0;
    }
    snprintf(out, cap, "%s", res[0] ? res : "/");
}

/* The path this program was started from: $REEF_SELF, argv[0] with a '/', or found on $PATH. */
static void started_as(const char *argv0, char *out, size_t cap)
{
    const char *env = getenv("REEF_SELF");
    if (env && *env) {
        snprintf(out, cap, "%s", env);
        return;
    }
    if (strchr(argv0, '/')) {
        snprintf(out, cap, "%s", argv0);
        return;
    }
    const char *path = getenv("PATH");
    CHECK(path != NULL);
    while (*path) {
        const char *colon = strchr(path, ':');
        size_t len = colon ? (size_t)(colon - path) : strlen(path);
        snprintf(out, cap, "%.*s/%s", (int)len, path, argv0);
        if (access(out, X_OK) == 0)
            return;
        path += len + (colon != NULL);
    }
    FAIL("cannot find %s on $PATH", argv0);
}

/* Whether a directory lists `name` (with opendir/readdir). */
static bool dir_has(const char *dir, const char *name)
{
    DIR *d = opendir(dir);
    if (!d)
        FAIL("opendir(%s) failed: %s", dir, strerror(errno));
    bool found = false;
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        if (!strcmp(e->d_name, name))
            found = true;
    closedir(d);
    return found;
}

/* ---- /dev ---- */

static void char_device(const char *path)
{
    struct stat st;
    if (stat(path, &st) != 0)
        FAIL("stat(%s) failed: %s", path, strerror(errno));
    if (!S_ISCHR(st.st_mode))
        FAIL("%s has mode 0%o, not a character device", path, st.st_mode);
}

static void dev_files(void)
{
    static unsigned char buf[65536 + 3];
    char_device("/dev/null");
    int fd = CHECK_SYS(open("/dev/null", O_RDWR));
    memset(buf, 0xaa, sizeof buf);
    CHECK_EQ(read(fd, buf, sizeof buf), 0);
    CHECK_EQ(read(fd, buf, sizeof buf), 0);
    CHECK_EQ(buf[0], 0xaa);
    CHECK_EQ(write(fd, buf, sizeof buf), sizeof buf);
    CHECK_EQ(write(fd, "x", 1), 1);
    CHECK_EQ(read(fd, buf, 10), 0);
    CHECK_SYS(close(fd));
    SAY("/dev/null: character device, reads EOF, writes of %zu and 1 bytes swallowed", sizeof buf);

    char_device("/dev/zero");
    fd = CHECK_SYS(open("/dev/zero", O_RDWR));
    memset(buf, 0xaa, sizeof buf);
    CHECK_EQ(read(fd, buf, sizeof buf), sizeof buf);
    for (size_t i = 0; i < sizeof buf; i++)
        if (buf[i])
            FAIL("byte %zu read from /dev/zero is 0x%x", i, buf[i]);
    memset(buf, 0xaa, 100);
    CHECK_EQ(read(fd, buf + 1, 7), 7);
    CHECK(buf[0] == 0xaa && buf[8] == 0xaa);
    for (int i = 1; i < 8; i++)
        CHECK_EQ(buf[i], 0);
    CHECK_EQ(write(fd, "abc", 3), 3);
    CHECK_SYS(close(fd));
    SAY("/dev/zero: character device, reads of %zu and 7 bytes give zeros (no more), writes "
        "swallowed",
        sizeof buf);

    char_device("/dev/urandom");
    fd = CHECK_SYS(open("/dev/urandom", O_RDONLY));
    unsigned char a[64], b[64], zero[64] = {0};
    memset(a, 0, sizeof a);
    memset(b, 0, sizeof b);
    CHECK_EQ(read(fd, a, sizeof a), sizeof a);
    CHECK_EQ(read(fd, b, sizeof b), sizeof b);
    CHECK(memcmp(a, b, sizeof a) != 0);
    CHECK(memcmp(a, zero, sizeof a) != 0 && memcmp(b, zero, sizeof b) != 0);
    /* A larger read: not all bytes may be equal (probability ~0 for random bytes). */
    CHECK_EQ(read(fd, buf, 4096), 4096);
    int same = 0;
    for (int i = 1; i < 4096; i++)
        same += buf[i] == buf[0];
    CHECK(same < 4095);
    CHECK_SYS(close(fd));
    SAY("/dev/urandom: character device, two 64-byte reads differ, 4096-byte read varied");

    CHECK(dir_has("/dev", "null") && dir_has("/dev", "zero") && dir_has("/dev", "urandom"));
    SAY("/dev lists null, zero and urandom");

    /* Terminals. O_NOCTTY: do not make either the controlling terminal of this process. */
    const char *ttys[] = {"/dev/console", "/dev/tty"};
    for (int i = 0; i < 2; i++) {
        const char *path = ttys[i];
        fd = open(path, O_RDWR | O_NOCTTY);
        if (fd < 0) {
            int e = errno;
            if (on_reef())
                FAIL("open(%s) failed: %s", path, strerror(e));
            /* Linux without a controlling terminal: /dev/tty gives ENXIO; a container may lack
             * /dev/console or refuse it. Accepted off Reef only. */
            if (i == 1 && e != ENXIO)
                FAIL("open(%s) failed with %s, expected success or ENXIO", path, strerror(e));
            SAY("%s: open failed with %s (accepted on Linux: no controlling terminal here)", path,
                strerror(e));
            continue;
        }
        char_device(path);
        int tty = isatty(fd);
        if (!tty && (on_reef() || i == 1))
            FAIL("%s opened but isatty says no: %s", path, strerror(errno));
        if (on_reef()) {
            char line[64];
            int n = snprintf(line, sizeof line, "%s: hello through %s\n", test_name, path);
            CHECK_EQ(write(fd, line, n), n);
            CHECK(dir_has("/dev", path + 5));
        }
        CHECK_SYS(close(fd));
        SAY("%s: opens, isatty %s", path, tty ? "yes" : "no (accepted on Linux)");
    }
}

/* ---- /proc/self ---- */

static void self_exe(const char *argv0)
{
    char start[PATH_MAX], want[PATH_MAX], got[PATH_MAX];
    started_as(argv0, start, sizeof start);
    resolve(start, want, sizeof want);
    long n = readlink("/proc/self/exe", got, sizeof got - 1);
    if (n < 0)
        FAIL("readlink(/proc/self/exe) failed: %s", strerror(errno));
    got[n] = 0;
    if (strcmp(got, want))
        FAIL("/proc/self/exe -> %s, but the program was started as %s (%s)", got, start, want);
    struct stat a, b;
    CHECK_SYS(stat("/proc/self/exe", &a));
    CHECK_SYS(stat(want, &b));
    CHECK_EQ(a.st_ino, b.st_ino);
    CHECK_EQ(a.st_dev, b.st_dev);
    CHECK(S_ISREG(a.st_mode));
    struct stat l;
    CHECK_SYS(lstat("/proc/self/exe", &l));
    CHECK(S_ISLNK(l.st_mode));
    int fd = CHECK_SYS(open("/proc/self/exe", O_RDONLY));
    char magic[4];
    CHECK_EQ(read(fd, magic, 4), 4);
    CHECK(memcmp(magic, "\x7f" "ELF", 4) == 0);
    CHECK_SYS(close(fd));
    SAY("/proc/self/exe -> %s (started as %s): a symlink to the same file, an ELF", got, start);
}

/* Checks that /proc/self/fd lists exactly the open descriptors; returns how many there are. */
static int check_fd_list(const char *when)
{
    int dfd = CHECK_SYS(open("/proc/self/fd", O_RDONLY | O_DIRECTORY));
    static bool listed[MAX_FDS];
    memset(listed, 0, sizeof listed);
    static char buf[4096] __attribute__((aligned(8)));
    int dots = 0, max = 0, count = 0;
    for (;;) {
        long r = syscall(SYS_getdents64, dfd, buf, sizeof buf);
        if (r < 0)
            FAIL("getdents64(/proc/self/fd) failed: %s", strerror(errno));
        if (r == 0)
            break;
        for (long off = 0; off < r;) {
            struct {
                uint64_t d_ino;
                int64_t d_off;
                unsigned short d_reclen;
                unsigned char d_type;
                char d_name[];
            } *d = (void *)(buf + off);
            CHECK(d->d_reclen > 19 && off + d->d_reclen <= r);
            off += d->d_reclen;
            if (!strcmp(d->d_name, ".") || !strcmp(d->d_name, "..")) {
                dots++;
                continue;
            }
            char *end;
            long fd = strtol(d->d_name, &end, 10);
            if (*end || end == d->d_name || fd < 0 || fd >= MAX_FDS)
                FAIL("%s: /proc/self/fd lists \"%s\"", when, d->d_name);
            if (listed[fd])
                FAIL("%s: /proc/self/fd lists %ld twice", when, fd);
            if (d->d_type != DT_LNK && d->d_type != DT_UNKNOWN)
                FAIL("%s: /proc/self/fd/%ld has d_type %d", when, fd, d->d_type);
            listed[fd] = true;
            count++;
            if (fd > max)
                max = fd;
        }
    }
    if (dots != 2)
        FAIL("%s: /proc/self/fd lists . and .. %d times together", when, dots);
    int limit = max + 64 < 1024 ? 1024 : max + 64;
    if (limit > MAX_FDS)
        limit = MAX_FDS;
    for (int fd = 0; fd < limit; fd++) {
        bool open_now = fcntl(fd, F_GETFD) >= 0;
        if (open_now && !listed[fd])
            FAIL("%s: descriptor %d is open but not in /proc/self/fd", when, fd);
        if (!open_now && listed[fd])
            FAIL("%s: /proc/self/fd lists %d, which is not open", when, fd);
    }
    CHECK(listed[dfd]);
    CHECK_SYS(close(dfd));
    return count - 1; /* without the directory's own descriptor */
}

static void expect_fd_link(int fd, const char *want)
{
    char path[64], got[PATH_MAX];
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    long n = readlink(path, got, sizeof got - 1);
    if (n < 0)
        FAIL("readlink(%s) failed: %s", path, strerror(errno));
    got[n] = 0;
    if (strcmp(got, want))
        FAIL("%s -> %s, expected %s", path, got, want);
    struct stat a, b;
    CHECK_SYS(stat(path, &a));
    CHECK_SYS(fstat(fd, &b));
    CHECK_EQ(a.st_ino, b.st_ino);
    CHECK_EQ(a.st_dev, b.st_dev);
}

static void self_fd(void)
{
    int before = check_fd_list("at start");
    char dir[64], file[96], rdir[PATH_MAX], rfile[PATH_MAX];
    snprintf(dir, sizeof dir, "/tmp/devproc.%d", getpid());
    snprintf(file, sizeof file, "%s/f", dir);
    CHECK_SYS(mkdir(dir, 0755));
    int f = CHECK_SYS(open(file, O_RDWR | O_CREAT | O_TRUNC, 0644));
    int null = CHECK_SYS(open("/dev/null", O_WRONLY));
    int d = CHECK_SYS(open(dir, O_RDONLY | O_DIRECTORY));
    CHECK(fcntl(100, F_GETFD) < 0);
    CHECK_EQ(dup2(f, 100), 100);
    int with = check_fd_list("with 4 more open");
    CHECK_EQ(with, before + 4);
    resolve(dir, rdir, sizeof rdir);
    resolve(file, rfile, sizeof rfile);
    expect_fd_link(f, rfile);
    expect_fd_link(100, rfile);
    expect_fd_link(null, "/dev/null");
    expect_fd_link(d, rdir);
    SAY("/proc/self/fd: %d open descriptors listed exactly, then %d; links name %s, /dev/null, "
        "%s",
        before, with, rfile, rdir);
    CHECK_SYS(close(100));
    CHECK_SYS(close(null));
    int less = check_fd_list("after closing 2");
    CHECK_EQ(less, before + 2);
    char got[PATH_MAX];
    CHECK_ERRNO(readlink("/proc/self/fd/100", got, sizeof got), ENOENT);
    CHECK_SYS(close(f));
    CHECK_SYS(close(d));
    CHECK_EQ(check_fd_list("after closing all 4"), before);
    CHECK_SYS(unlink(file));
    CHECK_SYS(rmdir(dir));
    SAY("/proc/self/fd after closing: the closed ones gone (%d, then %d again), readlink of a "
        "closed one ENOENT",
        less, before);
}

/* ---- /proc files ---- */

/* Counts `processor : N` lines; records the numbers in `ids` (up to `max`). */
static int count_processors(const char *text, long *ids, int max)
{
    int n = 0;
    for (const char *line = text; line && *line;) {
        if (!strncmp(line, "processor", 9)) {
            const char *p = line + 9;
            while (*p == ' ' || *p == '\t')
                p++;
            if (*p != ':')
                FAIL("/proc/cpuinfo line without ':' after processor");
            char *end;
            long id = strtol(p + 1, &end, 10);
            if (end == p + 1)
                FAIL("/proc/cpuinfo: processor line without a number");
            if (n < max)
                ids[n] = id;
            n++;
        }
        line = strchr(line, '\n');
        if (line)
            line++;
    }
    return n;
}

static void cpuinfo(void)
{
    static long ids[1024];
    char *text = slurp("/proc/cpuinfo", 4096, NULL);
    int n = count_processors(text, ids, 1024);
    char *again = slurp("/proc/cpuinfo", 13, NULL);
    CHECK_EQ(count_processors(again, ids + 512, 0), n);
    free(again);
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    CHECK(online >= 1);
    CHECK(n >= 1 && n <= 1024);
    for (int i = 0; i < n; i++)
        for (int j = 0; j < i; j++)
            if (ids[i] == ids[j])
                FAIL("/proc/cpuinfo lists processor %ld twice", ids[i]);
    if (on_reef()) {
        CHECK_EQ(n, online);
        for (int i = 0; i < n; i++)
            CHECK_EQ(ids[i], i);
    } else if (n != online) {
        /* musl's sysconf counts the CPUs of this process's affinity mask, which the Linux host
         * may have narrowed (taskset, cgroups); /proc/cpuinfo lists every online CPU. */
        cpu_set_t set;
        CHECK_SYS(sched_getaffinity(0, sizeof set, &set));
        if (CPU_COUNT(&set) != online || n < online)
            FAIL("/proc/cpuinfo has %d processors, sysconf says %ld online", n, online);
        SAY("/proc/cpuinfo: %d processors, more than the %ld of this process's affinity mask "
            "(accepted on Linux)",
            n, online);
    }
    free(text);
    SAY("/proc/cpuinfo: %d distinct processor lines, sysconf(_SC_NPROCESSORS_ONLN) = %ld; the "
        "same in 13-byte reads",
        n, online);
}

/* The value in kB of the meminfo line `key:`; fails if absent or malformed. */
static unsigned long meminfo_kb(const char *text, const char *key)
{
    size_t klen = strlen(key);
    for (const char *line = text; line && *line;) {
        if (!strncmp(line, key, klen) && line[klen] == ':') {
            unsigned long v;
            char unit[8];
            if (sscanf(line + klen + 1, " %lu %7s", &v, unit) != 2 || strcmp(unit, "kB"))
                FAIL("/proc/meminfo: malformed %s line", key);
            return v;
        }
        line = strchr(line, '\n');
        if (line)
            line++;
    }
    FAIL("/proc/meminfo has no %s line", key);
}

static void meminfo(void)
{
    char *text = slurp("/proc/meminfo", 4096, NULL);
    unsigned long total = meminfo_kb(text, "MemTotal"), free_kb = meminfo_kb(text, "MemFree");
    CHECK(total > 0);
    CHECK(free_kb <= total);
    char *again = slurp("/proc/meminfo", 13, NULL);
    CHECK_EQ(meminfo_kb(again, "MemTotal"), total);
    CHECK(meminfo_kb(again, "MemFree") <= total);
    free(text);
    free(again);
    SAY("/proc/meminfo: MemTotal %lu kB, MemFree %lu kB <= MemTotal; the same in 13-byte reads",
        total, free_kb);
}

static void mounts(void)
{
    size_t len, len2;
    char *text = slurp("/proc/mounts", 4096, &len);
    char *again = slurp("/proc/mounts", 13, &len2);
    /* On Reef nothing mounts anything meanwhile; a Linux host may. */
    if (on_reef()) {
        CHECK_EQ(len2, len);
        CHECK(memcmp(text, again, len) == 0);
    }
    CHECK(strstr(again, " / ") != NULL);
    free(again);
    int lines = 0, root = 0;
    char *save = NULL;
    for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        char dev[256], dir[1024], type[64], opts[1024];
        int freq, pass;
        if (sscanf(line, "%255s %1023s %63s %1023s %d %d", dev, dir, type, opts, &freq, &pass) !=
            6)
            FAIL("/proc/mounts: malformed line \"%s\"", line);
        lines++;
        if (!strcmp(dir, "/"))
            root++;
    }
    free(text);
    CHECK(lines >= 1);
    if (!root)
        FAIL("/proc/mounts has no line for /");
    CHECK(dir_has("/proc", "self") && dir_has("/proc", "cpuinfo") &&
          dir_has("/proc", "meminfo") && dir_has("/proc", "mounts"));
    SAY("/proc/mounts: %d lines of 6 fields, / among them (also in 13-byte reads); /proc lists "
        "self, cpuinfo, meminfo, mounts",
        lines);
}

/* Parses /proc/reef/nrfs; returns the sum of `submitted` over the logs. */
static unsigned long long parse_nrfs(int *logs_out, int *replicas_out)
{
    char *text = slurp("/proc/reef/nrfs", 4096, NULL);
    int logs, replicas;
    unsigned long long stale;
    int used = 0;
    if (sscanf(text, "nrfs: logs=%d replicas=%d stale_retries=%llu%n", &logs, &replicas, &stale,
               &used) != 3 ||
        text[used] != '\n')
        FAIL("/proc/reef/nrfs: first line malformed: \"%.80s\"", text);
    CHECK(logs >= 1 && replicas >= 1);
    const char *p = text + used + 1;
    unsigned long long total = 0;
    for (int i = 0; i < logs; i++) {
        int idx;
        unsigned long long submitted;
        used = 0;
        if (sscanf(p, "log %d: submitted=%llu applied=%n", &idx, &submitted, &used) != 2 ||
            used == 0)
            FAIL("/proc/reef/nrfs: log line %d malformed: \"%.80s\"", i, p);
        CHECK_EQ(idx, i);
        p += used;
        for (int r = 0; r < replicas; r++) {
            char *end;
            unsigned long long applied = strtoull(p, &end, 10);
            if (end == p)
                FAIL("/proc/reef/nrfs: log %d: applied count %d missing", i, r);
            if (applied > submitted)
                FAIL("/proc/reef/nrfs: log %d replica %d applied %llu > submitted %llu", i, r,
                     applied, submitted);
            p = end;
            if (r + 1 < replicas) {
                if (*p != ',')
                    FAIL("/proc/reef/nrfs: log %d: %d applied counts, expected %d", i, r + 1,
                         replicas);
                p++;
            }
        }
        if (*p != '\n')
            FAIL("/proc/reef/nrfs: log %d: line goes on after %d applied counts", i, replicas);
        p++;
        total += submitted;
    }
    if (*p)
        FAIL("/proc/reef/nrfs: more than %d log lines", logs);
    free(text);
    *logs_out = logs;
    *replicas_out = replicas;
    return total;
}

static void reef_nrfs(void)
{
    if (!on_reef()) {
        SAY("/proc/reef/nrfs: Reef only, skipped");
        return;
    }
    int logs, replicas;
    unsigned long long before = parse_nrfs(&logs, &replicas);
    char dir[64];
    snprintf(dir, sizeof dir, "/tmp/devproc.%d.nrfs", getpid());
    CHECK_SYS(mkdir(dir, 0755));
    CHECK_SYS(rmdir(dir));
    int logs2, replicas2;
    unsigned long long after = parse_nrfs(&logs2, &replicas2);
    CHECK_EQ(logs2, logs);
    CHECK_EQ(replicas2, replicas);
    if (after <= before)
        FAIL("/proc/reef/nrfs: submitted total %llu before mkdir+rmdir, %llu after", before,
             after);
    SAY("/proc/reef/nrfs: %d logs, %d replicas, applied <= submitted; submitted %llu -> %llu "
        "after mkdir+rmdir",
        logs, replicas, before, after);
}

/* Parses /proc/reef/memory (checking each node line); returns the file data pages in KiB. */
static unsigned long long parse_memory(int nodes)
{
    char *text = slurp("/proc/reef/memory", 4096, NULL);
    const char *p = strchr(text, '\n');
    if (strncmp(text, "node ", 5) || !p)
        FAIL("/proc/reef/memory: header malformed: \"%.80s\"", text);
    p++;
    for (int i = 0; i < nodes; i++) {
        int node, used = 0;
        unsigned long long free_k, reserve, held, in_use, allocs, arenas, released, spare;
        if (sscanf(p, "%d %llu %llu %llu %llu %llu %llu %llu %llu%n", &node, &free_k, &reserve,
                   &held, &in_use, &allocs, &arenas, &released, &spare, &used) != 9 ||
            p[used] != '\n')
            FAIL("/proc/reef/memory: node line %d malformed: \"%.80s\"", i, p);
        CHECK_EQ(node, i);
        if (in_use > held || arenas < 1 || (spare != 0 && spare != 2048) || reserve == 0)
            FAIL("/proc/reef/memory: node %d: heap used %llu KiB of %llu held, %llu arenas, spare "
                 "%llu KiB, reserve %llu KiB",
                 i, in_use, held, arenas, spare, reserve);
        p += used + 1;
    }
    unsigned long long pages;
    int used = 0;
    if (sscanf(p, "file data pages: %llu KiB;%n", &pages, &used) != 1 || used == 0)
        FAIL("/proc/reef/memory: after %d node lines: \"%.80s\"", nodes, p);
    free(text);
    return pages;
}

static void reef_memory(void)
{
    if (!on_reef()) {
        SAY("/proc/reef/memory: Reef only, skipped");
        return;
    }
    int logs, nodes;
    parse_nrfs(&logs, &nodes);
    unsigned long long before = parse_memory(nodes);
    char path[64];
    snprintf(path, sizeof path, "/tmp/devproc.%d.mem", getpid());
    int fd = CHECK_SYS(open(path, O_CREAT | O_TRUNC | O_WRONLY, 0600));
    static char mib[1 << 20];
    memset(mib, 'm', sizeof mib);
    CHECK_EQ(write(fd, mib, sizeof mib), (ssize_t)sizeof mib);
    CHECK_SYS(close(fd));
    unsigned long long with = parse_memory(nodes);
    CHECK_SYS(unlink(path));
    unsigned long long after = parse_memory(nodes);
    if (with < before + 1024 || after >= with)
        FAIL("/proc/reef/memory: file data %llu KiB before a 1 MiB file, %llu with it, %llu after "
             "unlink",
             before, with, after);
    SAY("/proc/reef/memory: %d node lines; file data %llu -> %llu -> %llu KiB (1 MiB file written, "
        "removed)",
        nodes, before, with, after);
}

int main(int argc, char **argv)
{
    (void)argc;
    test_begin("devproc");
    dev_files();
    self_exe(argv[0]);
    self_fd();
    cpuinfo();
    meminfo();
    mounts();
    reef_nrfs();
    reef_memory();
    PASS();
}
