/*
 * harekill: file operations cut short by SIGKILL leave the file system whole (issue 13). On
 * Hare one `rename`, `link`, `unlink`, `mkdir` or `rmdir` can be several requests to several
 * servers (a file's link for its new name, the new entry, the old one, the link counts, the
 * three phases of a distributed directory's `rmdir`, the lock a directory's move takes); a
 * process killed between two of them must not leave the steps before standing alone.
 *
 * ROUNDS times, a child works in two distributed directories (mode bit S_DISTRIBUTED: their
 * entries spread over the servers), making, writing, linking, renaming across directories and
 * over other files, unlinking, moving a distributed directory to the other parent and
 * removing it, and holding a file open while it unlinks it; the parent kills it with SIGKILL
 * after a pseudo-random delay (0 to MAX_DELAY_US). The child runs on the parent's core, so
 * that the parent's next call also takes the killed child's queued closes there. What is
 * checked holds wherever the kills land:
 *
 *  - every name listed has a working lstat (no entry left on a freed inode);
 *  - every file's link count is the number of names it has, and every directory's is 2 and
 *    one per subdirectory;
 *  - everything can be removed, and the blocks in use are then what they were before the
 *    rounds (nothing leaked by a half-done unlink, rename over a file or last close);
 *  - a directory can still move between two parents (nothing holds the rename lock).
 *
 * The same program passes on NR-FS and on Linux, where each of these calls is one step (off
 * Reef without the blocks compared: other programs use the host's /tmp). Where the kills land
 * depends on timing; what is checked does not.
 */
#include "reef-test.h"
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statfs.h>

#define S_DISTRIBUTED 0200000
#define ROUNDS 60
#define MAX_DELAY_US 6000
#define MAX_INODES 8192
#define PATH 512

static char top[PATH], dir_d[PATH], dir_e[PATH];

static void pathf(char *out, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void pathf(char *out, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(out, PATH, fmt, ap);
    va_end(ap);
    if (n < 0 || n >= PATH)
        FAIL("path too long");
}

/* Makes file `p` (it must not exist) holding `len` bytes of `tag`. */
static void make_file(const char *p, int tag, size_t len)
{
    static char buf[8192];
    memset(buf, 'a' + tag % 26, sizeof buf);
    int fd = CHECK_SYS(open(p, O_CREAT | O_EXCL | O_WRONLY, 0644));
    CHECK_EQ(write(fd, buf, len), (ssize_t)len);
    CHECK_SYS(close(fd));
}

/* The child's endless work, its names numbered from `base` (no two rounds share one). */
static void work(long base)
{
    char a[PATH], b[PATH], c[PATH], x[PATH];
    int held = -1;
    for (long i = base;; i++) {
        /* A file linked into the other directory, renamed across, renamed back over. */
        pathf(a, "%s/f%ld", dir_d, i);
        pathf(b, "%s/l%ld", dir_e, i);
        pathf(c, "%s/r%ld", dir_e, i);
        make_file(a, (int)i, 100);
        CHECK_SYS(link(a, b));
        CHECK_SYS(rename(a, c));
        CHECK_SYS(rename(b, a));
        pathf(b, "%s/o%ld", dir_d, i);
        make_file(b, (int)i + 1, 5000);
        CHECK_SYS(rename(c, b)); /* over another file, whose inode goes */
        if (i % 2)
            CHECK_SYS(unlink(a));
        /* A distributed directory with a file, moved to the other parent, removed. */
        pathf(a, "%s/s%ld", dir_d, i);
        pathf(b, "%s/s%ld", dir_e, i);
        CHECK_SYS(mkdir(a, 0755 | S_DISTRIBUTED));
        pathf(x, "%s/x", a);
        make_file(x, (int)i, 10);
        CHECK_SYS(rename(a, b));
        pathf(x, "%s/x", b);
        CHECK_SYS(unlink(x));
        CHECK_SYS(rmdir(b));
        /* A file unlinked while open, closed by the next turn or by the kill. */
        if (held >= 0)
            CHECK_SYS(close(held));
        pathf(a, "%s/u%ld", dir_e, i);
        held = CHECK_SYS(open(a, O_CREAT | O_EXCL | O_RDWR, 0644));
        CHECK_EQ(write(held, x, sizeof x), (ssize_t)sizeof x);
        CHECK_SYS(unlink(a));
    }
}

/* Pins the calling process to the first CPU it may run on (the child inherits it). */
static void pin_first(void)
{
    cpu_set_t set;
    CHECK_SYS(sched_getaffinity(0, sizeof set, &set));
    for (int cpu = 0; cpu < CPU_SETSIZE; cpu++) {
        if (CPU_ISSET(cpu, &set)) {
            cpu_set_t one;
            CPU_ZERO(&one);
            CPU_SET(cpu, &one);
            CHECK_SYS(sched_setaffinity(0, sizeof one, &one));
            return;
        }
    }
}

static struct {
    ino_t ino;
    nlink_t nlink;
    int names;
} inodes[MAX_INODES];
static int ninodes;

/* Counts a name of the file `st` describes. */
static void count_name(const char *p, const struct stat *st)
{
    for (int k = 0; k < ninodes; k++) {
        if (inodes[k].ino == st->st_ino) {
            if (inodes[k].nlink != st->st_nlink)
                FAIL("%s: link count %lu, another name said %lu", p, (unsigned long)st->st_nlink,
                     (unsigned long)inodes[k].nlink);
            inodes[k].names++;
            return;
        }
    }
    if (ninodes == MAX_INODES)
        FAIL("more than %d files", MAX_INODES);
    inodes[ninodes].ino = st->st_ino;
    inodes[ninodes].nlink = st->st_nlink;
    inodes[ninodes].names = 1;
    ninodes++;
}

/* Checks the tree under `dir` (see the top), or with `remove` removes everything in it, each
 * call checked; the number of names in it. */
static long walk_tree(const char *dir, int remove)
{
    DIR *dp = opendir(dir);
    if (dp == NULL)
        FAIL("opendir %s: %s", dir, strerror(errno));
    long names = 0, subdirs = 0;
    struct dirent *ent;
    char p[PATH];
    while ((ent = readdir(dp)) != NULL) {
        if (!strcmp(ent->d_name, ".") || !strcmp(ent->d_name, ".."))
            continue;
        pathf(p, "%s/%s", dir, ent->d_name);
        struct stat st;
        if (lstat(p, &st) != 0)
            FAIL("%s is listed but lstat answers %s", p, strerror(errno));
        names++;
        if (S_ISDIR(st.st_mode)) {
            subdirs++;
            names += walk_tree(p, remove);
            if (remove && rmdir(p) != 0)
                FAIL("rmdir %s: %s", p, strerror(errno));
        } else if (!remove) {
            count_name(p, &st);
        } else if (unlink(p) != 0) {
            FAIL("unlink %s: %s", p, strerror(errno));
        }
    }
    CHECK_SYS(closedir(dp));
    struct stat ds;
    CHECK_SYS(lstat(dir, &ds));
    if (!remove && ds.st_nlink != (nlink_t)(2 + subdirs))
        FAIL("%s: link count %lu with %ld subdirectories", dir, (unsigned long)ds.st_nlink,
             subdirs);
    return names;
}

/* The blocks files hold (statfs's total less its free: on Reef's NR-FS the free ones are
 * the machine's free memory, which other things use too). */
static unsigned long used_blocks(void)
{
    struct statfs sf;
    CHECK_SYS(statfs(top, &sf));
    return sf.f_blocks - sf.f_bfree;
}

int main(int argc, char **argv)
{
    test_begin("harekill");
    pathf(top, "%s/harekill.%d", argc > 1 ? argv[1] : "/tmp", (int)getpid());
    pathf(dir_d, "%s/d", top);
    pathf(dir_e, "%s/e", top);
    CHECK_SYS(mkdir(top, 0755));
    CHECK_SYS(mkdir(dir_d, 0755 | S_DISTRIBUTED));
    CHECK_SYS(mkdir(dir_e, 0755 | S_DISTRIBUTED));
    SAY("%s: %s", top, in_hare(top) ? "Hare" : "not Hare");
    pin_first();
    unsigned long before = used_blocks();

    unsigned long seed = 12345;
    int cut = 0;
    for (int round = 0; round < ROUNDS; round++) {
        pid_t pid = CHECK_SYS(fork());
        if (pid == 0)
            work(round * 100000L);
        seed = seed * 6364136223846793005UL + 1442695040888963407UL;
        usleep((useconds_t)((seed >> 33) % MAX_DELAY_US));
        CHECK_SYS(kill(pid, SIGKILL));
        int st;
        CHECK_SYS(waitpid(pid, &st, 0));
        if (!WIFSIGNALED(st) || WTERMSIG(st) != SIGKILL)
            FAIL("round %d: the child %s", round, describe_wait(st));
        cut++;
    }
    SAY("%d children killed at work", cut);

    long names = walk_tree(top, 0);
    int linked = 0;
    for (int k = 0; k < ninodes; k++) {
        if ((nlink_t)inodes[k].names != inodes[k].nlink)
            FAIL("inode %lu: link count %lu, %d names", (unsigned long)inodes[k].ino,
                 (unsigned long)inodes[k].nlink, inodes[k].names);
        linked += inodes[k].names > 1;
    }
    SAY("%ld names, %d files (%d with two names): every name stats, every link count matches",
        names, ninodes, linked);

    walk_tree(dir_d, 1);
    walk_tree(dir_e, 1);
    unsigned long after = used_blocks();
    if (!on_reef()) {
        SAY("everything removed (blocks in use not compared: off Reef other programs share /tmp)");
    } else if (after != before) {
        FAIL("used blocks: %lu before the rounds, %lu with everything removed", before, after);
    } else {
        SAY("everything removed, used blocks as before (%lu)", after);
    }

    char p[PATH], q[PATH];
    pathf(p, "%s/m", dir_d);
    pathf(q, "%s/m", dir_e);
    CHECK_SYS(mkdir(p, 0755));
    CHECK_SYS(rename(p, q));
    CHECK_SYS(rmdir(q));
    CHECK_SYS(rmdir(dir_d));
    CHECK_SYS(rmdir(dir_e));
    CHECK_SYS(rmdir(top));
    SAY("a directory still moves between parents");
    PASS();
}
