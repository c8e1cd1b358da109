/*
 * execmap: execve maps a program's file pages copy-on-write instead of copying them, as Linux
 * maps its page cache.
 *
 * - private: a child running a copy of this program writes a page of its initialized data and
 *   a page of its read-only data made writable with mprotect; it sees its own writes, and the
 *   file does not change;
 * - snapshot (Reef) or ETXTBSY (Linux): while the child runs, the parent overwrites a page of
 *   the copy's read-only data and truncates the file in the middle of that page, dropping the
 *   pages after it. On Reef the child still sees the bytes it was started with (NR-FS gives
 *   the file a new page instead of changing one a program maps, and a page the file drops
 *   stays with the program) and runs to its end; the file holds what the parent wrote. Linux
 *   refuses to open a running program for writing (ETXTBSY), which is accepted there only;
 * - shared (Reef only): eight processes running busybox at once take less than 1 MiB each
 *   (busybox has 1.9 MiB of text and read-only data: a copy per process would take more);
 * - memory (Reef only): six rounds of running a copy of busybox, unlinking the file while it
 *   runs and letting it exit give all memory back (within 4 MiB: heap arenas), so a page that
 *   both the file system and a program held is freed by whichever lets go last.
 */
#include "reef-test.h"
#include <fcntl.h>
#include <sys/stat.h>

#define PAGE 4096
#define SLACK (4L << 20)

/* Two pages of read-only data and one of initialized data, each a whole page of the file. */
static const char rodata[2][PAGE] __attribute__((aligned(PAGE))) = {
    "execmap read-only page A: the child makes it writable and writes its first byte",
    "execmap read-only page B: the parent overwrites it in the file while the child runs",
};
static volatile long data[PAGE / sizeof(long)] __attribute__((aligned(PAGE))) = {
    0x5eed0001, 0x5eed0002, 0x5eed0003, 0x5eed0004,
};

/* ---- the child: a copy of this program started with `child GO REPORT` ---- */

/* `p`, hidden from the compiler, which would otherwise fold reads of const data. */
static char *launder(const char *p)
{
    __asm__ volatile("" : "+r"(p));
    return (char *)p;
}

static int child_main(int go, int report)
{
    char *a = launder(rodata[0]), *b = launder(rodata[1]);
    if (data[0] != 0x5eed0001 || data[3] != 0x5eed0004 || b[0] != 'e')
        return 2;
    data[0] = 99;
    if (mprotect(a, PAGE, PROT_READ | PROT_WRITE) != 0)
        return 3;
    a[0] = 'X';
    char c = 'r';
    if (write(report, &c, 1) != 1 || read(go, &c, 1) != 1)
        return 4;
    /* The parent has changed the file (Reef) or could not (Linux): same view either way. */
    if (data[0] != 99 || data[1] != 0x5eed0002 || a[0] != 'X' ||
        strcmp(a + 1, "xecmap read-only page A: the child makes it writable and writes its "
                      "first byte") ||
        strcmp(b, "execmap read-only page B: the parent overwrites it in the file while the "
                  "child runs"))
        return 5;
    return 0;
}

/* ---- helpers ---- */

/* The whole of file `path`, malloc'ed; its size in *len. */
static unsigned char *read_all(const char *path, size_t *len)
{
    int fd = CHECK_SYS(open(path, O_RDONLY));
    struct stat st;
    CHECK_SYS(fstat(fd, &st));
    unsigned char *buf = malloc((size_t)st.st_size + 1);
    CHECK(buf != NULL);
    size_t done = 0;
    while (done < (size_t)st.st_size) {
        ssize_t n = CHECK_SYS(read(fd, buf + done, (size_t)st.st_size - done));
        if (n == 0)
            break;
        done += (size_t)n;
    }
    CHECK_EQ(done, (size_t)st.st_size);
    CHECK_SYS(close(fd));
    *len = done;
    return buf;
}

static void write_file(const char *path, const unsigned char *buf, size_t len)
{
    int fd = CHECK_SYS(open(path, O_CREAT | O_TRUNC | O_WRONLY, 0755));
    size_t done = 0;
    while (done < len)
        done += (size_t)CHECK_SYS(write(fd, buf + done, len - done));
    CHECK_SYS(close(fd));
}

/* The page-aligned offset in `file` whose page holds exactly the bytes at `page`. */
static size_t find_page(const unsigned char *file, size_t len, const void *page)
{
    for (size_t off = 0; off + PAGE <= len; off += PAGE)
        if (!memcmp(file + off, page, PAGE))
            return off;
    FAIL("no page of the program file holds the page at %p", page);
}

/* ---- private and snapshot ---- */

static void private_and_snapshot(void)
{
    size_t len;
    unsigned char *orig = read_all("/proc/self/exe", &len);
    size_t off_b = find_page(orig, len, rodata[1]);
    find_page(orig, len, rodata[0]);
    find_page(orig, len, (const void *)data);
    char copy[64];
    snprintf(copy, sizeof copy, "/tmp/execmap.%d", getpid());
    write_file(copy, orig, len);

    int go[2], report[2];
    CHECK_SYS(pipe(go));
    CHECK_SYS(pipe(report));
    pid_t pid = CHECK_SYS(fork());
    if (pid == 0) {
        char g[16], r[16];
        snprintf(g, sizeof g, "%d", go[0]);
        snprintf(r, sizeof r, "%d", report[1]);
        execl(copy, copy, "child", g, r, (char *)NULL);
        _exit(100);
    }
    char c;
    CHECK_EQ(read(report[0], &c, 1), 1);

    int fd = open(copy, O_WRONLY);
    int changed = fd >= 0;
    if (!changed) {
        if (on_reef() || errno != ETXTBSY)
            FAIL("opening the running program for writing: %s", strerror(errno));
        SAY("private: Linux refuses to open the running program for writing (ETXTBSY)");
    } else {
        if (!on_reef())
            SAY("private: this Linux opens a running program for writing");
        unsigned char junk[PAGE];
        memset(junk, 0xee, sizeof junk);
        CHECK_EQ(pwrite(fd, junk, PAGE, (off_t)off_b), PAGE);
        CHECK_SYS(ftruncate(fd, (off_t)off_b + 100));
        CHECK_SYS(close(fd));
    }
    CHECK_EQ(write(go[1], "g", 1), 1);
    int st;
    CHECK_SYS(waitpid(pid, &st, 0));
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
        FAIL("the child running the copy: %s (2-5: its view of its pages changed)",
             describe_wait(st));

    size_t now_len;
    unsigned char *now = read_all(copy, &now_len);
    if (changed) {
        CHECK_EQ(now_len, off_b + 100);
        CHECK(!memcmp(now, orig, off_b));
        for (size_t i = 0; i < 100; i++)
            CHECK_EQ(now[off_b + i], 0xee);
    } else {
        CHECK_EQ(now_len, len);
        CHECK(!memcmp(now, orig, len));
    }
    free(now);
    free(orig);
    CHECK_SYS(unlink(copy));
    CHECK_SYS(close(go[0]));
    CHECK_SYS(close(go[1]));
    CHECK_SYS(close(report[0]));
    CHECK_SYS(close(report[1]));
    SAY("private: the child's writes to its data and to read-only data made writable stayed "
        "its own%s",
        changed ? "; it kept its pages while the file was overwritten and truncated" : "");
}

/* ---- shared and memory ---- */

/* Starts `prog cat` with a pipe as stdin; returns its pid and the pipe's write end. */
static pid_t start_cat(const char *prog, int *in)
{
    /* Close-on-exec, so that no other cat holds this one's write end open. */
    int p[2];
    CHECK_SYS(pipe2(p, O_CLOEXEC));
    pid_t pid = CHECK_SYS(fork());
    if (pid == 0) {
        dup2(p[0], 0);
        int null = open("/dev/null", O_WRONLY);
        dup2(null, 1);
        close(p[0]);
        close(p[1]);
        execl(prog, "cat", (char *)NULL);
        _exit(100);
    }
    CHECK_SYS(close(p[0]));
    *in = p[1];
    return pid;
}

/* Closes `in` and reaps `pid`, which must exit with status 0. */
static void end_cat(pid_t pid, int in)
{
    CHECK_SYS(close(in));
    int st;
    CHECK_SYS(waitpid(pid, &st, 0));
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
        FAIL("cat: %s", describe_wait(st));
}

/* Waits until `pid` has started running busybox (its /proc/<pid>/exe names it). */
static void await_exec(pid_t pid, const char *prog)
{
    char link[64], target[256];
    snprintf(link, sizeof link, "/proc/%d/exe", pid);
    for (int i = 0; i < 100000; i++) {
        ssize_t n = readlink(link, target, sizeof target - 1);
        if (n > 0) {
            target[n] = 0;
            if (!strcmp(target, prog))
                return;
        }
        sched_yield();
    }
    FAIL("process %d did not start %s", pid, prog);
}

static void shared_and_memory(void)
{
    if (!on_reef()) {
        SAY("shared, memory: Reef only, skipped");
        return;
    }
    enum { N = 8, ROUNDS = 6 };
    pid_t pids[N];
    int ins[N];
    /* Once first, so that the heap and the caches have what one round needs. */
    pids[0] = start_cat("/bin/busybox", &ins[0]);
    await_exec(pids[0], "/bin/busybox");
    end_cat(pids[0], ins[0]);

    long before = reef_free_bytes();
    for (int i = 0; i < N; i++) {
        pids[i] = start_cat("/bin/busybox", &ins[i]);
        await_exec(pids[i], "/bin/busybox");
    }
    long each = (before - reef_free_bytes()) / N;
    for (int i = 0; i < N; i++)
        end_cat(pids[i], ins[i]);
    if (each >= 1L << 20)
        FAIL("shared: each of %d busybox processes takes %ld KiB", N, each >> 10);
    SAY("shared: each of %d busybox processes takes %ld KiB", N, each >> 10);

    size_t len;
    unsigned char *bb = read_all("/bin/busybox", &len);
    char copy[64];
    snprintf(copy, sizeof copy, "/tmp/execmap-bb.%d", getpid());
    before = reef_free_bytes();
    for (int r = 0; r < ROUNDS; r++) {
        write_file(copy, bb, len);
        int in;
        pid_t pid = start_cat(copy, &in);
        await_exec(pid, copy);
        CHECK_SYS(unlink(copy));
        end_cat(pid, in);
    }
    free(bb);
    long after = reef_free_bytes();
    SAY("memory: free %ld KiB before %d rounds of running a busybox copy unlinked while it "
        "ran, %ld KiB after",
        before >> 10, ROUNDS, after >> 10);
    if (after < before - SLACK)
        FAIL("memory: %ld KiB lost", (before - after) >> 10);
}

int main(int argc, char **argv)
{
    if (argc == 4 && !strcmp(argv[1], "child"))
        return child_main(atoi(argv[2]), atoi(argv[3]));
    test_begin("execmap");
    private_and_snapshot();
    shared_and_memory();
    PASS();
}
