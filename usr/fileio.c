/*
 * fileio: single-process semantics of the POSIX file system calls, success paths and the errors
 * Linux returns. Everything happens in a private directory /tmp/fileio.<pid> (removed at the
 * end when the program passes; left behind for inspection when it fails).
 *
 * - open: O_CREAT mode under the umask, lowest free descriptor, O_EXCL (EEXIST), O_TRUNC,
 *   O_APPEND, O_DIRECTORY on a file (ENOTDIR), O_NOFOLLOW on a symlink (ELOOP), O_NONBLOCK and
 *   the access mode in F_GETFL, O_CLOEXEC in F_GETFD and across execve (the program re-executes
 *   itself as `fileio cloexec-child FD_CLOEXEC FD_KEPT` and checks which descriptors survived),
 *   ENOENT / ENOTDIR / EISDIR;
 * - read/write/readv/writev/pread64/pwrite64 (pread/pwrite leave the offset alone), short reads
 *   and EOF, lseek SEEK_SET/CUR/END, holes past EOF reading as zeros, EINVAL for a negative
 *   offset or a bad whence;
 * - dup/dup2/dup3 (one shared offset, dup3 on the same fd EINVAL), fcntl GETFD/SETFD/GETFL/
 *   SETFL/DUPFD/DUPFD_CLOEXEC (status flags shared by dups, descriptor flags not);
 * - stat/fstat/lstat/newfstatat (AT_SYMLINK_NOFOLLOW, AT_EMPTY_PATH)/statx: st_mode, st_size,
 *   st_nlink and st_ino consistent between the calls and with what was done;
 * - getdents64 (raw, with large and tiny buffers, rewinding) and opendir/readdir: every entry
 *   once, . and .., d_type and d_ino right;
 * - mkdir/mkdirat/rmdir, unlink/unlinkat (AT_REMOVEDIR), a file unlinked while open, rename/
 *   renameat/renameat2 (NOREPLACE, EXCHANGE), link/linkat (st_nlink), symlink/symlinkat/
 *   readlink/readlinkat (loops, dangling links), truncate/ftruncate (growing with zeros),
 *   chdir/fchdir/getcwd (nested, after a rename of a parent, ERANGE), access/faccessat, umask,
 *   chmod/fchmod, chown/fchown/lchown/fchownat (as root), utimensat (explicit times, UTIME_NOW,
 *   UTIME_OMIT), fsync/fdatasync, statfs/fstatfs, sendfile (with and without an offset);
 * - ENAMETOOLONG (a 256-byte name, a 4096-byte path), EBADF, EFAULT (raw system calls with bad
 *   pointers, so that libc does not touch them first), EINVAL where Linux gives it.
 *
 * Linux details this program relies on (and Reef should copy): directory st_nlink is not checked
 * (file systems differ: btrfs says 1); d_type is required to be exact (ext4/tmpfs/NR-FS give it).
 */
#include "reef-test.h"
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/uio.h>

#ifndef RENAME_NOREPLACE /* musl 1.2.3 has neither renameat2 nor these */
#define RENAME_NOREPLACE (1 << 0)
#define RENAME_EXCHANGE (1 << 1)
#endif

/* Entries made in the directory that getdents64 lists in pieces. */
#define MANY_ENTRIES 40

static char base[PATH_MAX]; /* the test directory as getcwd reports it */
static const char *self;
static char **environment;

/* ---- helpers ---- */

static void write_file(const char *path, const void *data, size_t len)
{
    int fd = CHECK_SYS(open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644));
    CHECK_EQ(write(fd, data, len), (long)len);
    CHECK_SYS(close(fd));
}

static void write_str(const char *path, const char *s)
{
    write_file(path, s, strlen(s));
}

/* Reads the whole file (at most cap - 1 bytes, NUL-terminated); returns its length. */
static size_t read_file(const char *path, char *buf, size_t cap)
{
    int fd = open(path, O_RDONLY);
    if (fd < 0)
        FAIL("open(%s) failed: %s", path, strerror(errno));
    size_t n = 0;
    for (;;) {
        long r = read(fd, buf + n, cap - 1 - n);
        if (r < 0)
            FAIL("read(%s) failed: %s", path, strerror(errno));
        if (r == 0)
            break;
        n += r;
        if (n == cap - 1)
            break;
    }
    buf[n] = 0;
    CHECK_SYS(close(fd));
    return n;
}

/* Fails unless the file holds exactly the string `want`. */
static void expect_content(const char *path, const char *want)
{
    char buf[4096];
    size_t n = read_file(path, buf, sizeof buf);
    if (n != strlen(want) || memcmp(buf, want, n) != 0)
        FAIL("%s holds \"%s\" (%zu bytes), expected \"%s\"", path, buf, n, want);
}

static struct stat stat_of(const char *path)
{
    struct stat st;
    if (stat(path, &st) != 0)
        FAIL("stat(%s) failed: %s", path, strerror(errno));
    return st;
}

static struct stat lstat_of(const char *path)
{
    struct stat st;
    if (lstat(path, &st) != 0)
        FAIL("lstat(%s) failed: %s", path, strerror(errno));
    return st;
}

static struct stat fstat_of(int fd)
{
    struct stat st;
    if (fstat(fd, &st) != 0)
        FAIL("fstat(%d) failed: %s", fd, strerror(errno));
    return st;
}

static bool exists(const char *path)
{
    struct stat st;
    if (lstat(path, &st) == 0)
        return true;
    if (errno != ENOENT)
        FAIL("lstat(%s) failed: %s", path, strerror(errno));
    return false;
}

static off_t offset_of(int fd)
{
    return CHECK_SYS(lseek(fd, 0, SEEK_CUR));
}

static bool is_cloexec(int fd)
{
    int f = CHECK_SYS(fcntl(fd, F_GETFD));
    return (f & FD_CLOEXEC) != 0;
}

static bool fd_open(int fd)
{
    if (fcntl(fd, F_GETFD) >= 0)
        return true;
    CHECK_EQ(errno, EBADF);
    return false;
}

/* Removes `path` and everything below it (no symlinks followed). */
static void rm_rf(const char *path)
{
    struct stat st;
    if (lstat(path, &st) != 0)
        return;
    if (S_ISDIR(st.st_mode)) {
        DIR *d = opendir(path);
        if (!d)
            FAIL("opendir(%s) failed: %s", path, strerror(errno));
        struct dirent *e;
        while ((e = readdir(d)) != NULL) {
            if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
                continue;
            char sub[PATH_MAX];
            snprintf(sub, sizeof sub, "%s/%s", path, e->d_name);
            rm_rf(sub);
        }
        closedir(d);
        CHECK_SYS(rmdir(path));
    } else {
        CHECK_SYS(unlink(path));
    }
}

/* A fresh empty directory `name` in the test directory (the current directory). */
static void fresh_dir(const char *name)
{
    rm_rf(name);
    CHECK_SYS(mkdir(name, 0755));
}

/* ---- open ---- */

static void open_flags(void)
{
    fresh_dir("open");
    CHECK_EQ(umask(022), 022); /* set by main */
    int fd = CHECK_SYS(open("open/a", O_WRONLY | O_CREAT, 0666));
    CHECK_EQ(fstat_of(fd).st_mode, S_IFREG | 0644);
    CHECK_EQ(fstat_of(fd).st_size, 0);
    CHECK_EQ(fstat_of(fd).st_nlink, 1);
    CHECK_SYS(close(fd));
    CHECK_EQ(umask(077), 022);
    fd = CHECK_SYS(open("open/b", O_RDWR | O_CREAT, 0666));
    CHECK_EQ(fstat_of(fd).st_mode, S_IFREG | 0600);
    CHECK_SYS(close(fd));
    CHECK_EQ(umask(022), 077);
    /* O_CREAT on an existing file keeps its mode. */
    fd = CHECK_SYS(open("open/b", O_RDWR | O_CREAT, 0666));
    CHECK_EQ(fstat_of(fd).st_mode, S_IFREG | 0600);
    CHECK_SYS(close(fd));
    SAY("O_CREAT: mode & ~umask (0666 -> 0644 under 022, 0600 under 077), existing mode kept");

    /* The lowest free descriptor. */
    int a = CHECK_SYS(open("open/a", O_RDONLY));
    int b = CHECK_SYS(open("open/a", O_RDONLY));
    CHECK(b > a);
    CHECK_SYS(close(a));
    int c = CHECK_SYS(open("open/b", O_RDONLY));
    CHECK_EQ(c, a);
    CHECK_SYS(close(b));
    CHECK_SYS(close(c));

    CHECK_ERRNO(open("open/a", O_WRONLY | O_CREAT | O_EXCL, 0644), EEXIST);
    fd = CHECK_SYS(open("open/c", O_WRONLY | O_CREAT | O_EXCL, 0644));
    CHECK_SYS(close(fd));
    CHECK(exists("open/c"));
    SAY("lowest free descriptor reused; O_EXCL: EEXIST on an existing file, creates a new one");

    write_str("open/a", "hello world");
    ino_t ino = stat_of("open/a").st_ino;
    fd = CHECK_SYS(open("open/a", O_WRONLY | O_TRUNC));
    CHECK_EQ(fstat_of(fd).st_size, 0);
    CHECK_EQ(fstat_of(fd).st_ino, ino);
    CHECK_SYS(close(fd));
    expect_content("open/a", "");

    write_str("open/a", "0123456789");
    int ap = CHECK_SYS(open("open/a", O_WRONLY | O_APPEND));
    int plain = CHECK_SYS(open("open/a", O_WRONLY));
    CHECK_EQ(write(plain, "ab", 2), 2); /* at offset 0 */
    CHECK_EQ(lseek(ap, 0, SEEK_SET), 0);
    CHECK_EQ(write(ap, "XY", 2), 2); /* at the end anyway */
    CHECK_EQ(offset_of(ap), 12);
    CHECK_EQ(write(plain, "c", 1), 1); /* at offset 2 */
    CHECK_EQ(write(ap, "Z", 1), 1);
    CHECK_EQ(offset_of(ap), 13);
    CHECK_EQ(offset_of(plain), 3);
    CHECK_EQ(lseek(ap, 1, SEEK_SET), 1);
    CHECK_EQ(write(ap, "", 0), 0); /* writes nothing, so the offset stays */
    CHECK_EQ(offset_of(ap), 1);
    CHECK_SYS(close(ap));
    CHECK_SYS(close(plain));
    expect_content("open/a", "abc3456789XYZ");
    SAY("O_TRUNC empties the file (same inode); O_APPEND writes at the end whatever the offset "
        "(and an empty write leaves the offset)");

    CHECK_ERRNO(open("open/a", O_RDONLY | O_DIRECTORY), ENOTDIR);
    fd = CHECK_SYS(open("open", O_RDONLY | O_DIRECTORY));
    CHECK(S_ISDIR(fstat_of(fd).st_mode));
    CHECK_SYS(close(fd));
    CHECK_SYS(symlink("a", "open/link"));
    CHECK_ERRNO(open("open/link", O_RDONLY | O_NOFOLLOW), ELOOP);
    fd = CHECK_SYS(open("open/link", O_RDONLY));
    CHECK_EQ(fstat_of(fd).st_ino, stat_of("open/a").st_ino);
    CHECK_SYS(close(fd));
    CHECK_SYS(symlink("open", "dirlink"));
    /* O_NOFOLLOW is about the last component only. */
    fd = CHECK_SYS(open("dirlink/a", O_RDONLY | O_NOFOLLOW));
    CHECK_SYS(close(fd));
    CHECK_SYS(unlink("dirlink"));
    SAY("O_DIRECTORY on a file: ENOTDIR; O_NOFOLLOW on a symlink: ELOOP (not for earlier "
        "components)");

    fd = CHECK_SYS(open("open/a", O_RDONLY | O_NONBLOCK));
    int fl = CHECK_SYS(fcntl(fd, F_GETFL));
    CHECK(fl & O_NONBLOCK);
    CHECK_EQ(fl & O_ACCMODE, O_RDONLY);
    CHECK_SYS(close(fd));
    fd = CHECK_SYS(open("open/a", O_WRONLY));
    fl = CHECK_SYS(fcntl(fd, F_GETFL));
    CHECK(!(fl & O_NONBLOCK));
    CHECK_EQ(fl & O_ACCMODE, O_WRONLY);
    CHECK_SYS(close(fd));
    fd = CHECK_SYS(open("open/a", O_RDWR | O_APPEND));
    fl = CHECK_SYS(fcntl(fd, F_GETFL));
    CHECK_EQ(fl & O_ACCMODE, O_RDWR);
    CHECK(fl & O_APPEND);
    CHECK_SYS(close(fd));
    SAY("F_GETFL shows O_NONBLOCK, O_APPEND and the access mode");

    CHECK_ERRNO(open("open/missing", O_RDONLY), ENOENT);
    CHECK_ERRNO(open("nodir/x", O_RDWR | O_CREAT, 0644), ENOENT);
    CHECK_ERRNO(open("", O_RDONLY), ENOENT);
    CHECK_ERRNO(open("open/a/x", O_RDONLY), ENOTDIR);
    CHECK_ERRNO(open("open/a/x", O_RDWR | O_CREAT, 0644), ENOTDIR);
    CHECK_ERRNO(open("open", O_WRONLY), EISDIR);
    CHECK_ERRNO(open("open", O_RDWR), EISDIR);
    CHECK_ERRNO(open("open", O_RDONLY | O_CREAT, 0644), EISDIR);
    SAY("open errors: ENOENT, ENOTDIR (file as a directory), EISDIR (directory for writing)");

    /* O_CLOEXEC, in F_GETFD and across execve. */
    int ce = CHECK_SYS(open("open/a", O_RDONLY | O_CLOEXEC));
    int kept = CHECK_SYS(open("open/a", O_RDONLY));
    CHECK(is_cloexec(ce));
    CHECK(!is_cloexec(kept));
    pid_t pid = CHECK_SYS(fork());
    if (pid == 0) {
        char s1[16], s2[16];
        snprintf(s1, sizeof s1, "%d", ce);
        snprintf(s2, sizeof s2, "%d", kept);
        char *argv[] = {(char *)self, "cloexec-child", s1, s2, NULL};
        execve(self, argv, environment);
        FAIL("execve(%s) failed: %s", self, strerror(errno));
    }
    CHECK_CHILD_EXIT(pid, 0);
    /* The child read 5 bytes through the same open file description. */
    CHECK_EQ(offset_of(kept), 5);
    CHECK_EQ(offset_of(ce), 0);
    CHECK_SYS(close(ce));
    CHECK_SYS(close(kept));
    SAY("O_CLOEXEC: FD_CLOEXEC set; closed by execve, the other descriptor kept with its offset");
    rm_rf("open");
}

/* Run after execve by open_flags: `ce` must be closed, `kept` open at offset 0 on open/a. */
static int cloexec_child(int ce, int kept)
{
    if (fd_open(ce))
        FAIL("descriptor %d (O_CLOEXEC) is still open after execve", ce);
    if (!fd_open(kept))
        FAIL("descriptor %d (no O_CLOEXEC) was closed by execve", kept);
    CHECK(!is_cloexec(kept));
    CHECK_EQ(offset_of(kept), 0);
    char buf[8];
    CHECK_EQ(read(kept, buf, 5), 5);
    CHECK(memcmp(buf, "abc34", 5) == 0);
    return 0;
}

/* ---- read, write, vectors, positioned I/O, lseek ---- */

static void read_write(void)
{
    fresh_dir("rw");
    int fd = CHECK_SYS(open("rw/f", O_RDWR | O_CREAT, 0644));
    CHECK_EQ(write(fd, "hello", 5), 5);
    CHECK_EQ(offset_of(fd), 5);
    char buf[256];
    CHECK_EQ(read(fd, buf, sizeof buf), 0); /* at EOF */
    CHECK_EQ(lseek(fd, 1, SEEK_SET), 1);
    CHECK_EQ(read(fd, buf, sizeof buf), 4); /* short read */
    CHECK(memcmp(buf, "ello", 4) == 0);
    CHECK_EQ(read(fd, buf, 0), 0);
    CHECK_EQ(write(fd, buf, 0), 0);
    CHECK_EQ(fstat_of(fd).st_size, 5);
    /* Overwrite in the middle: the size stays. */
    CHECK_EQ(lseek(fd, 1, SEEK_SET), 1);
    CHECK_EQ(write(fd, "EL", 2), 2);
    CHECK_EQ(fstat_of(fd).st_size, 5);
    expect_content("rw/f", "hELlo");
    SAY("write/read: counts, offsets, short read, EOF, zero-length calls, overwrite in place");

    /* writev/readv with an empty iovec in the middle. */
    CHECK_SYS(ftruncate(fd, 0));
    CHECK_EQ(lseek(fd, 0, SEEK_SET), 0);
    struct iovec wv[3] = {{"abc", 3}, {(void *)"", 0}, {"defgh", 5}};
    CHECK_EQ(writev(fd, wv, 3), 8);
    CHECK_EQ(offset_of(fd), 8);
    char x[2], y[4], z[8];
    memset(z, 0, sizeof z);
    struct iovec rv[3] = {{x, 2}, {y, 4}, {z, 8}};
    CHECK_EQ(lseek(fd, 0, SEEK_SET), 0);
    CHECK_EQ(readv(fd, rv, 3), 8);
    CHECK(memcmp(x, "ab", 2) == 0 && memcmp(y, "cdef", 4) == 0 && memcmp(z, "gh", 2) == 0);
    CHECK_EQ(offset_of(fd), 8);
    struct iovec bad = {buf, 1};
    CHECK_ERRNO(readv(fd, &bad, -1), EINVAL);
    SAY("writev/readv: scattered buffers in order, offset advanced");

    /* pread/pwrite leave the offset alone; pwrite past EOF leaves a hole of zeros. */
    CHECK_EQ(lseek(fd, 3, SEEK_SET), 3);
    CHECK_EQ(pwrite(fd, "XY", 2, 6), 2);
    CHECK_EQ(offset_of(fd), 3);
    CHECK_EQ(pread(fd, buf, 4, 5), 3);
    CHECK(memcmp(buf, "fXY", 3) == 0);
    CHECK_EQ(offset_of(fd), 3);
    CHECK_EQ(pwrite(fd, "END", 3, 100), 3);
    CHECK_EQ(fstat_of(fd).st_size, 103);
    CHECK_EQ(pread(fd, buf, sizeof buf, 0), 103);
    CHECK(memcmp(buf, "abcdefXY", 8) == 0);
    for (int i = 8; i < 100; i++)
        if (buf[i] != 0)
            FAIL("byte %d of the hole is 0x%x", i, (unsigned char)buf[i]);
    CHECK(memcmp(buf + 100, "END", 3) == 0);
    CHECK_EQ(pread(fd, buf, 10, 103), 0);
    CHECK_EQ(pread(fd, buf, 10, 5000), 0);
    CHECK_EQ(offset_of(fd), 3);
    CHECK_ERRNO(pread(fd, buf, 1, -1), EINVAL);
    CHECK_ERRNO(pwrite(fd, buf, 1, -1), EINVAL);
    SAY("pread/pwrite: offset unchanged, past EOF read 0, hole reads as zeros, EINVAL for -1");

    /* A larger transfer, read back in odd chunks. */
    enum { BIG = 65536 + 13 };
    static unsigned char big[BIG], back[BIG];
    for (int i = 0; i < BIG; i++)
        big[i] = (unsigned char)(i * 7 + i / 251);
    CHECK_SYS(ftruncate(fd, 0));
    CHECK_EQ(lseek(fd, 0, SEEK_SET), 0);
    CHECK_EQ(write(fd, big, BIG), BIG);
    CHECK_EQ(lseek(fd, 0, SEEK_SET), 0);
    size_t got = 0;
    while (got < BIG) {
        long r = CHECK_SYS(read(fd, back + got, 1000));
        CHECK(r > 0);
        got += r;
    }
    CHECK_EQ(got, BIG);
    CHECK(memcmp(big, back, BIG) == 0);
    SAY("%d bytes written at once, read back in 1000-byte pieces: equal", BIG);

    /* lseek. */
    CHECK_EQ(lseek(fd, 10, SEEK_SET), 10);
    CHECK_EQ(lseek(fd, 5, SEEK_CUR), 15);
    CHECK_EQ(lseek(fd, -3, SEEK_CUR), 12);
    CHECK_EQ(lseek(fd, 0, SEEK_END), BIG);
    CHECK_EQ(lseek(fd, -BIG, SEEK_END), 0);
    CHECK_EQ(lseek(fd, 7, SEEK_SET), 7);
    CHECK_ERRNO(lseek(fd, -1, SEEK_SET), EINVAL);
    CHECK_ERRNO(lseek(fd, -8, SEEK_CUR), EINVAL);
    CHECK_ERRNO(lseek(fd, -(BIG + 1), SEEK_END), EINVAL);
    CHECK_ERRNO(lseek(fd, 0, 17), EINVAL);
    CHECK_EQ(offset_of(fd), 7); /* failed calls leave it alone */
    CHECK_SYS(ftruncate(fd, 4));
    CHECK_EQ(lseek(fd, 4096, SEEK_END), 4100); /* past EOF: fine, no size change */
    CHECK_EQ(fstat_of(fd).st_size, 4);
    CHECK_EQ(read(fd, buf, 10), 0);
    CHECK_EQ(write(fd, "Q", 1), 1);
    CHECK_EQ(fstat_of(fd).st_size, 4101);
    static char hole[4101];
    CHECK_EQ(pread(fd, hole, sizeof hole, 0), 4101);
    for (int i = 4; i < 4100; i++)
        if (hole[i] != 0)
            FAIL("byte %d of the hole is 0x%x", i, (unsigned char)hole[i]);
    CHECK_EQ(hole[4100], 'Q');
    CHECK_SYS(close(fd));
    SAY("lseek SET/CUR/END, EINVAL for negative results and bad whence, write past EOF leaves "
        "zeros");
    rm_rf("rw");
}

/* ---- dup, dup2, dup3, fcntl ---- */

static void dups(void)
{
    fresh_dir("dup");
    write_str("dup/f", "0123456789");
    write_str("dup/g", "abcdefghij");
    int fd = CHECK_SYS(open("dup/f", O_RDWR | O_CLOEXEC));
    int d = CHECK_SYS(dup(fd));
    CHECK(d != fd);
    CHECK(!is_cloexec(d)); /* descriptor flags are not copied */
    char buf[16];
    CHECK_EQ(read(fd, buf, 3), 3);
    CHECK_EQ(offset_of(d), 3); /* one open file description */
    CHECK_EQ(read(d, buf, 2), 2);
    CHECK(memcmp(buf, "34", 2) == 0);
    CHECK_EQ(offset_of(fd), 5);
    CHECK_SYS(close(fd));
    CHECK_EQ(read(d, buf, 2), 2); /* still usable after the original is closed */
    CHECK(memcmp(buf, "56", 2) == 0);
    SAY("dup: shared offset, FD_CLOEXEC not copied, survives closing the original");

    CHECK_EQ(dup2(d, d), d);
    int g = CHECK_SYS(open("dup/g", O_RDONLY));
    CHECK_EQ(dup2(d, g), g); /* closes g's file first */
    CHECK_EQ(offset_of(g), 7);
    CHECK_EQ(read(g, buf, 3), 3);
    CHECK(memcmp(buf, "789", 3) == 0);
    int closed = g;
    CHECK_SYS(close(g));
    CHECK_ERRNO(dup2(closed, closed), EBADF);
    CHECK_ERRNO(dup2(closed, d), EBADF);
    CHECK(fd_open(d)); /* a failed dup2 does not close newfd */
    CHECK_ERRNO(dup2(d, -1), EBADF);
    CHECK_ERRNO(dup2(d, INT_MAX), EBADF);
    SAY("dup2: same fd returns it, replaces an open target, EBADF for closed/negative/huge fds");

    /* Raw calls: musl's dup3() checks oldfd == newfd itself and turns flags 0 into dup2. */
    CHECK_ERRNO(syscall(SYS_dup3, d, d, 0), EINVAL);
    CHECK_ERRNO(syscall(SYS_dup3, d, d, O_CLOEXEC), EINVAL);
    int t = CHECK_SYS(syscall(SYS_dup3, d, 60, O_CLOEXEC));
    CHECK_EQ(t, 60);
    CHECK(is_cloexec(60));
    CHECK_SYS(syscall(SYS_dup3, d, 61, 0));
    CHECK(!is_cloexec(61));
    CHECK_SYS(syscall(SYS_dup3, d, 60, 0)); /* replaces 60, now without FD_CLOEXEC */
    CHECK(!is_cloexec(60));
    CHECK_ERRNO(syscall(SYS_dup3, d, 62, O_APPEND), EINVAL);
    CHECK_ERRNO(syscall(SYS_dup3, closed, 62, 0), EBADF);
    CHECK(!fd_open(62));
    CHECK_SYS(close(60));
    CHECK_SYS(close(61));
    SAY("dup3: same fd EINVAL, O_CLOEXEC honoured, other flags EINVAL");

    /* fcntl */
    CHECK_SYS(fcntl(d, F_SETFD, FD_CLOEXEC));
    CHECK(is_cloexec(d));
    CHECK_SYS(fcntl(d, F_SETFD, 0));
    CHECK(!is_cloexec(d));
    int e = CHECK_SYS(dup(d));
    CHECK_SYS(fcntl(d, F_SETFD, FD_CLOEXEC));
    CHECK(!is_cloexec(e)); /* descriptor flag: per descriptor */
    CHECK_SYS(fcntl(d, F_SETFL, O_APPEND | O_NONBLOCK));
    int fl = CHECK_SYS(fcntl(e, F_GETFL)); /* status flags: per open file description */
    CHECK(fl & O_APPEND);
    CHECK(fl & O_NONBLOCK);
    CHECK_EQ(fl & O_ACCMODE, O_RDWR);
    CHECK_EQ(lseek(e, 0, SEEK_SET), 0);
    CHECK_EQ(write(e, "A", 1), 1);
    expect_content("dup/f", "0123456789A");
    CHECK_SYS(fcntl(e, F_SETFL, O_WRONLY)); /* access mode ignored, O_APPEND/O_NONBLOCK cleared */
    fl = CHECK_SYS(fcntl(d, F_GETFL));
    CHECK_EQ(fl & O_ACCMODE, O_RDWR);
    CHECK(!(fl & O_APPEND));
    CHECK(!(fl & O_NONBLOCK));
    CHECK_SYS(close(e));
    SAY("fcntl F_GETFD/F_SETFD per descriptor, F_GETFL/F_SETFL per description (access mode "
        "kept)");

    int ro = CHECK_SYS(open("dup/g", O_RDONLY));
    CHECK_SYS(fcntl(ro, F_SETFL, O_RDWR));
    CHECK_EQ(CHECK_SYS(fcntl(ro, F_GETFL)) & O_ACCMODE, O_RDONLY);
    CHECK_ERRNO(write(ro, "x", 1), EBADF);
    CHECK_SYS(close(ro));

    CHECK(!fd_open(50) && !fd_open(51));
    CHECK_EQ(fcntl(d, F_DUPFD, 50), 50);
    CHECK_EQ(fcntl(d, F_DUPFD, 50), 51);
    CHECK(!is_cloexec(50));
    CHECK_EQ(fcntl(d, F_DUPFD_CLOEXEC, 50), 52);
    CHECK(is_cloexec(52));
    CHECK_EQ(offset_of(52), offset_of(d));
    CHECK_SYS(close(51));
    CHECK_EQ(fcntl(d, F_DUPFD, 50), 51); /* the lowest free one at or above the argument */
    CHECK_SYS(close(50));
    CHECK_SYS(close(51));
    CHECK_SYS(close(52));
    CHECK_ERRNO(fcntl(d, F_DUPFD, -1), EINVAL);
    CHECK_ERRNO(fcntl(d, 9999), EINVAL);
    CHECK_ERRNO(fcntl(closed, F_GETFD), EBADF);
    CHECK_ERRNO(fcntl(closed, F_GETFL), EBADF);
    CHECK_SYS(close(d));
    SAY("fcntl F_DUPFD/F_DUPFD_CLOEXEC: lowest free >= arg; EINVAL for bad cmd/arg, EBADF");
    rm_rf("dup");
}

/* ---- stat family ---- */

/* struct statx as the kernel defines it (musl 1.2.3 has no statx wrapper). */
struct kstatx_ts {
    int64_t tv_sec;
    uint32_t tv_nsec;
    int32_t reserved;
};
struct kstatx {
    uint32_t stx_mask, stx_blksize;
    uint64_t stx_attributes;
    uint32_t stx_nlink, stx_uid, stx_gid;
    uint16_t stx_mode, pad1;
    uint64_t stx_ino, stx_size, stx_blocks, stx_attributes_mask;
    struct kstatx_ts stx_atime, stx_btime, stx_ctime, stx_mtime;
    uint32_t stx_rdev_major, stx_rdev_minor, stx_dev_major, stx_dev_minor;
    uint64_t spare[14];
};
#define K_STATX_TYPE 0x1u
#define K_STATX_MODE 0x2u
#define K_STATX_NLINK 0x4u
#define K_STATX_INO 0x100u
#define K_STATX_SIZE 0x200u
#define K_STATX_BASIC_STATS 0x7ffu
#define K_STATX_RESERVED 0x80000000u

static struct kstatx statx_of(int dirfd, const char *path, int flags)
{
    struct kstatx sx;
    memset(&sx, 0xa5, sizeof sx);
    if (syscall(SYS_statx, dirfd, path, flags, K_STATX_BASIC_STATS, &sx) != 0)
        FAIL("statx(%s, flags 0x%x) failed: %s", path, flags, strerror(errno));
    uint32_t need = K_STATX_TYPE | K_STATX_MODE | K_STATX_NLINK | K_STATX_INO | K_STATX_SIZE;
    if ((sx.stx_mask & need) != need)
        FAIL("statx(%s) mask 0x%x lacks 0x%x", path, sx.stx_mask, need);
    return sx;
}

/* Fails unless the statx and stat results describe the same thing. */
static void same_stat(const char *what, const struct kstatx *sx, const struct stat *st)
{
    if (sx->stx_mode != st->st_mode || sx->stx_ino != st->st_ino ||
        (long long)sx->stx_size != (long long)st->st_size || sx->stx_nlink != st->st_nlink ||
        sx->stx_uid != st->st_uid || sx->stx_gid != st->st_gid)
        FAIL("%s: statx says mode 0%o ino %llu size %llu nlink %u, stat says mode 0%o ino %llu "
             "size %lld nlink %lu",
             what, sx->stx_mode, (unsigned long long)sx->stx_ino,
             (unsigned long long)sx->stx_size, sx->stx_nlink, st->st_mode,
             (unsigned long long)st->st_ino, (long long)st->st_size,
             (unsigned long)st->st_nlink);
}

static void stats(void)
{
    fresh_dir("st");
    write_str("st/f", "twelve bytes");
    CHECK_SYS(symlink("f", "st/l"));
    CHECK_SYS(mkdir("st/d", 0755));

    struct stat s1 = stat_of("st/f"), s2 = lstat_of("st/f");
    int fd = CHECK_SYS(open("st/f", O_RDONLY));
    struct stat s3 = fstat_of(fd);
    CHECK_EQ(s1.st_mode, S_IFREG | 0644);
    CHECK_EQ(s1.st_size, 12);
    CHECK_EQ(s1.st_nlink, 1);
    CHECK_EQ(s1.st_uid, geteuid());
    CHECK_EQ(s1.st_gid, getegid());
    CHECK_EQ(s2.st_ino, s1.st_ino);
    CHECK_EQ(s3.st_ino, s1.st_ino);
    CHECK_EQ(s2.st_dev, s1.st_dev);
    CHECK_EQ(s3.st_dev, s1.st_dev);
    CHECK_EQ(s3.st_mode, s1.st_mode);
    CHECK_EQ(s3.st_size, 12);
    CHECK(s1.st_blksize > 0);

    struct stat ls = lstat_of("st/l"), fs = stat_of("st/l");
    CHECK(S_ISLNK(ls.st_mode));
    CHECK_EQ(ls.st_size, 1); /* strlen("f") */
    CHECK(ls.st_ino != s1.st_ino);
    CHECK_EQ(fs.st_ino, s1.st_ino);
    CHECK(S_ISREG(fs.st_mode));
    struct stat ds = stat_of("st/d");
    CHECK_EQ(ds.st_mode, S_IFDIR | 0755);
    CHECK(ds.st_nlink >= 1);
    CHECK(ds.st_ino != s1.st_ino && ds.st_ino != ls.st_ino);
    SAY("stat/lstat/fstat agree: mode, size %lld, nlink 1, ino %llu; lstat of a symlink: "
        "S_IFLNK with the target's length",
        (long long)s1.st_size, (unsigned long long)s1.st_ino);

    int dfd = CHECK_SYS(open("st", O_RDONLY | O_DIRECTORY));
    struct stat a;
    CHECK_SYS(fstatat(dfd, "f", &a, 0));
    CHECK_EQ(a.st_ino, s1.st_ino);
    CHECK_SYS(fstatat(dfd, "l", &a, 0));
    CHECK_EQ(a.st_ino, s1.st_ino);
    CHECK_SYS(fstatat(dfd, "l", &a, AT_SYMLINK_NOFOLLOW));
    CHECK_EQ(a.st_ino, ls.st_ino);
    CHECK(S_ISLNK(a.st_mode));
    CHECK_SYS(fstatat(fd, "", &a, AT_EMPTY_PATH));
    CHECK_EQ(a.st_ino, s1.st_ino);
    CHECK_SYS(fstatat(AT_FDCWD, "st/d", &a, 0));
    CHECK_EQ(a.st_ino, ds.st_ino);
    /* The raw system calls, in case libc takes another route for some of these. */
    memset(&a, 0, sizeof a);
    CHECK_SYS(syscall(SYS_newfstatat, fd, "", &a, AT_EMPTY_PATH));
    CHECK_EQ(a.st_ino, s1.st_ino);
    CHECK_EQ(a.st_size, 12);
    memset(&a, 0, sizeof a);
    CHECK_SYS(syscall(SYS_newfstatat, dfd, "l", &a, AT_SYMLINK_NOFOLLOW));
    CHECK_EQ(a.st_ino, ls.st_ino);
    memset(&a, 0, sizeof a);
    CHECK_SYS(syscall(SYS_fstat, fd, &a));
    CHECK_EQ(a.st_ino, s1.st_ino);
    memset(&a, 0, sizeof a);
    CHECK_SYS(syscall(SYS_lstat, "st/l", &a));
    CHECK_EQ(a.st_ino, ls.st_ino);
    memset(&a, 0, sizeof a);
    CHECK_SYS(syscall(SYS_stat, "st/l", &a));
    CHECK_EQ(a.st_ino, s1.st_ino);
    CHECK_ERRNO(syscall(SYS_newfstatat, dfd, "", &a, 0), ENOENT);
    CHECK_ERRNO(syscall(SYS_newfstatat, dfd, "f", &a, 0x1), EINVAL);
    CHECK_ERRNO(syscall(SYS_newfstatat, dfd, "missing", &a, 0), ENOENT);
    CHECK_ERRNO(syscall(SYS_newfstatat, fd, "x", &a, 0), ENOTDIR); /* dirfd not a directory */
    CHECK_ERRNO(stat("st/f/", &a), ENOTDIR);
    CHECK_ERRNO(stat("st/missing", &a), ENOENT);
    SAY("newfstatat: dirfd, AT_SYMLINK_NOFOLLOW, AT_EMPTY_PATH; ENOENT, ENOTDIR, EINVAL");

    struct kstatx sx = statx_of(AT_FDCWD, "st/f", 0);
    same_stat("statx st/f", &sx, &s1);
    sx = statx_of(dfd, "l", AT_SYMLINK_NOFOLLOW);
    same_stat("statx st/l nofollow", &sx, &ls);
    sx = statx_of(dfd, "l", 0);
    same_stat("statx st/l", &sx, &s1);
    sx = statx_of(fd, "", AT_EMPTY_PATH);
    same_stat("statx fd", &sx, &s1);
    sx = statx_of(AT_FDCWD, "st/d", 0);
    same_stat("statx st/d", &sx, &ds);
    CHECK(sx.stx_blksize > 0);
    CHECK_ERRNO(syscall(SYS_statx, AT_FDCWD, "st/f", 0, K_STATX_RESERVED, &sx), EINVAL);
    CHECK_ERRNO(syscall(SYS_statx, AT_FDCWD, "st/missing", 0, K_STATX_BASIC_STATS, &sx), ENOENT);
    SAY("statx: mask has the basic fields, mode/ino/size/nlink/uid/gid equal stat's");

    /* Sizes follow writes; inode numbers are distinct. */
    int w = CHECK_SYS(open("st/f", O_WRONLY | O_APPEND));
    CHECK_EQ(write(w, "+3b", 3), 3);
    CHECK_EQ(fstat_of(fd).st_size, 15);
    CHECK_EQ(stat_of("st/f").st_size, 15);
    CHECK_SYS(close(w));
    ino_t inos[8];
    for (int i = 0; i < 8; i++) {
        char name[32];
        snprintf(name, sizeof name, "st/n%d", i);
        write_str(name, "");
        inos[i] = stat_of(name).st_ino;
        CHECK(inos[i] != s1.st_ino && inos[i] != ds.st_ino && inos[i] != ls.st_ino);
        for (int j = 0; j < i; j++)
            CHECK(inos[i] != inos[j]);
    }
    CHECK_SYS(close(fd));
    CHECK_ERRNO(fstat(fd, &a), EBADF);
    CHECK_SYS(close(dfd));
    SAY("st_size follows writes; 11 files, 11 distinct inode numbers; fstat on a closed fd: "
        "EBADF");
    rm_rf("st");
}

/* ---- getdents64 / readdir ---- */

struct entry {
    char name[32];
    unsigned char type;
    ino_t ino;
    int seen;
};

/* Lists `path` with raw getdents64 and a `bufsize`-byte buffer into `got`; returns the count. */
static int list_raw(int fd, size_t bufsize, struct entry *got, int max)
{
    static char buf[8192] __attribute__((aligned(8)));
    CHECK(bufsize <= sizeof buf);
    int n = 0;
    for (;;) {
        long r = syscall(SYS_getdents64, fd, buf, bufsize);
        if (r < 0)
            FAIL("getdents64(%d, %zu) failed: %s", fd, bufsize, strerror(errno));
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
            CHECK(d->d_reclen > 19 && d->d_reclen % 8 == 0 && off + d->d_reclen <= r);
            if (n == max)
                FAIL("getdents64 returned more than %d entries", max);
            CHECK(strlen(d->d_name) < sizeof got[n].name);
            CHECK(19 + strlen(d->d_name) < d->d_reclen);
            strcpy(got[n].name, d->d_name);
            got[n].type = d->d_type;
            got[n].ino = d->d_ino;
            n++;
            off += d->d_reclen;
        }
    }
    return n;
}

/* Fails unless `got` holds exactly the entries of `want` (plus . and ..), each once. */
static void match_entries(const char *how, struct entry *got, int n, struct entry *want, int m,
                          ino_t dot)
{
    for (int j = 0; j < m; j++)
        want[j].seen = 0;
    int dots = 0, dotdots = 0;
    for (int i = 0; i < n; i++) {
        if (!strcmp(got[i].name, ".")) {
            dots++;
            CHECK_EQ(got[i].type, DT_DIR);
            CHECK_EQ(got[i].ino, dot);
            continue;
        }
        if (!strcmp(got[i].name, "..")) {
            dotdots++;
            CHECK_EQ(got[i].type, DT_DIR);
            continue;
        }
        int j = 0;
        while (j < m && strcmp(want[j].name, got[i].name))
            j++;
        if (j == m)
            FAIL("%s: unexpected entry \"%s\"", how, got[i].name);
        if (want[j].seen++)
            FAIL("%s: entry \"%s\" listed twice", how, got[i].name);
        if (got[i].type != want[j].type)
            FAIL("%s: \"%s\" has d_type %d, expected %d", how, got[i].name, got[i].type,
                 want[j].type);
        if (got[i].ino != want[j].ino)
            FAIL("%s: \"%s\" has d_ino %llu, lstat says %llu", how, got[i].name,
                 (unsigned long long)got[i].ino, (unsigned long long)want[j].ino);
    }
    if (dots != 1 || dotdots != 1)
        FAIL("%s: . listed %d times, .. %d times", how, dots, dotdots);
    for (int j = 0; j < m; j++)
        if (!want[j].seen)
            FAIL("%s: entry \"%s\" missing", how, want[j].name);
    CHECK_EQ(n, m + 2);
}

static void dirents(void)
{
    enum { MAXE = MANY_ENTRIES + 8 };
    static struct entry want[MAXE], got[MAXE + 4];
    int m = 0;
    fresh_dir("de");
    write_str("de/file", "x");
    CHECK_SYS(mkdir("de/sub", 0755));
    CHECK_SYS(symlink("file", "de/link"));
    CHECK_SYS(symlink("nowhere", "de/dangling"));
    const char *fixed[] = {"file", "sub", "link", "dangling"};
    unsigned char types[] = {DT_REG, DT_DIR, DT_LNK, DT_LNK};
    for (int i = 0; i < 4; i++) {
        char p[64];
        snprintf(p, sizeof p, "de/%s", fixed[i]);
        strcpy(want[m].name, fixed[i]);
        want[m].type = types[i];
        want[m].ino = lstat_of(p).st_ino;
        m++;
    }
    ino_t dot = stat_of("de").st_ino;
    int fd = CHECK_SYS(open("de", O_RDONLY | O_DIRECTORY));
    int n = list_raw(fd, 4096, got, MAXE + 4);
    match_entries("getdents64 (4096-byte buffer)", got, n, want, m, dot);
    SAY("getdents64: file, sub, link, dangling, . and ..: each once, d_type and d_ino right");

    for (int i = 0; i < MANY_ENTRIES; i++) {
        char p[64];
        snprintf(want[m].name, sizeof want[m].name, "entry-with-a-longer-name-%02d", i);
        snprintf(p, sizeof p, "de/%s", want[m].name);
        write_str(p, "");
        want[m].type = DT_REG;
        want[m].ino = lstat_of(p).st_ino;
        m++;
    }
    CHECK_EQ(lseek(fd, 0, SEEK_SET), 0);
    n = list_raw(fd, 4096, got, MAXE + 4);
    match_entries("getdents64 after rewinding", got, n, want, m, dot);
    CHECK_EQ(syscall(SYS_getdents64, fd, got, sizeof got), 0); /* still at the end */
    CHECK_EQ(lseek(fd, 0, SEEK_SET), 0);
    /* 64 bytes hold one of these entries at a time. */
    n = list_raw(fd, 64, got, MAXE + 4);
    match_entries("getdents64 (64-byte buffer)", got, n, want, m, dot);
    CHECK_EQ(lseek(fd, 0, SEEK_SET), 0);
    char tiny[8];
    CHECK_ERRNO(syscall(SYS_getdents64, fd, tiny, sizeof tiny), EINVAL);
    SAY("getdents64: %d entries complete with a 4096- and a 64-byte buffer, after lseek(0); "
        "EINVAL for an 8-byte buffer",
        m + 2);

    /* readdir over the same directory, after removing some entries. */
    for (int i = 0; i < 10; i++) {
        char p[64];
        snprintf(p, sizeof p, "de/%s", want[m - 1].name);
        CHECK_SYS(unlink(p));
        m--;
    }
    DIR *dir = opendir("de");
    CHECK(dir != NULL);
    n = 0;
    struct dirent *e;
    errno = 0;
    while ((e = readdir(dir)) != NULL) {
        CHECK(n < MAXE + 4);
        CHECK(strlen(e->d_name) < sizeof got[n].name);
        strcpy(got[n].name, e->d_name);
        got[n].type = e->d_type;
        got[n].ino = e->d_ino;
        n++;
    }
    CHECK_EQ(errno, 0);
    closedir(dir);
    match_entries("readdir after 10 unlinks", got, n, want, m, dot);
    SAY("opendir/readdir after unlinking 10 entries: exactly the remaining %d", m + 2);

    CHECK_SYS(close(fd));
    fd = CHECK_SYS(open("de/sub", O_RDONLY | O_DIRECTORY));
    n = list_raw(fd, 4096, got, MAXE + 4);
    match_entries("getdents64 of an empty directory", got, n, want, 0,
                  stat_of("de/sub").st_ino);
    CHECK_SYS(close(fd));
    fd = CHECK_SYS(open("de/file", O_RDONLY));
    CHECK_ERRNO(syscall(SYS_getdents64, fd, got, sizeof got), ENOTDIR);
    CHECK_SYS(close(fd));
    CHECK_ERRNO(syscall(SYS_getdents64, fd, got, sizeof got), EBADF);
    SAY("getdents64: empty directory lists . and ..; ENOTDIR on a file, EBADF on a closed fd");
    rm_rf("de");
}

/* ---- mkdir, rmdir, unlink ---- */

static void dirs(void)
{
    fresh_dir("mk");
    CHECK_SYS(mkdir("mk/a", 0777));
    CHECK_EQ(stat_of("mk/a").st_mode, S_IFDIR | 0755);
    int dfd = CHECK_SYS(open("mk", O_RDONLY | O_DIRECTORY));
    CHECK_SYS(mkdirat(dfd, "b", 0700));
    CHECK_EQ(stat_of("mk/b").st_mode, S_IFDIR | 0700);
    CHECK_SYS(mkdir("mk/c/", 0755)); /* a trailing slash is fine */
    CHECK(S_ISDIR(stat_of("mk/c").st_mode));
    write_str("mk/a/f", "in a");
    expect_content("mk/a/f", "in a");
    write_str("mk/file", "");
    CHECK_SYS(symlink("nowhere", "mk/dangling"));
    CHECK_SYS(symlink("a", "mk/alink"));
    CHECK_ERRNO(mkdir("mk/a", 0755), EEXIST);
    CHECK_ERRNO(mkdir("mk/file", 0755), EEXIST);
    CHECK_ERRNO(mkdir("mk/dangling", 0755), EEXIST);
    CHECK_ERRNO(mkdirat(dfd, "b", 0755), EEXIST);
    CHECK_ERRNO(mkdir("mk/none/x", 0755), ENOENT);
    CHECK_ERRNO(mkdir("mk/file/x", 0755), ENOTDIR);
    CHECK_ERRNO(mkdir("", 0755), ENOENT);
    SAY("mkdir/mkdirat: mode & ~umask, trailing slash; EEXIST (dir, file, dangling symlink), "
        "ENOENT, ENOTDIR");

    CHECK_ERRNO(rmdir("mk/a"), ENOTEMPTY);
    CHECK(exists("mk/a/f"));
    CHECK_ERRNO(rmdir("mk/file"), ENOTDIR);
    CHECK_ERRNO(rmdir("mk/alink"), ENOTDIR);
    CHECK_ERRNO(rmdir("mk/missing"), ENOENT);
    CHECK_ERRNO(rmdir("mk/b/."), EINVAL);
    CHECK_ERRNO(rmdir("mk/b/.."), ENOTEMPTY);
    CHECK_SYS(rmdir("mk/b"));
    CHECK(!exists("mk/b"));
    CHECK_SYS(rmdir("mk/c/"));
    CHECK(!exists("mk/c"));
    SAY("rmdir: ENOTEMPTY, ENOTDIR (file, symlink), ENOENT, EINVAL for \".\"; empty ones go");

    CHECK_ERRNO(unlink("mk/a"), EISDIR);
    CHECK_ERRNO(unlinkat(dfd, "a", 0), EISDIR);
    CHECK_ERRNO(unlinkat(dfd, "a", AT_REMOVEDIR), ENOTEMPTY);
    CHECK_ERRNO(unlinkat(dfd, "file", AT_REMOVEDIR), ENOTDIR);
    CHECK_ERRNO(unlinkat(dfd, "file", 0x1), EINVAL);
    CHECK_ERRNO(unlink("mk/missing"), ENOENT);
    CHECK_ERRNO(unlink("mk/file/x"), ENOTDIR);
    CHECK_SYS(unlinkat(dfd, "a/f", 0));
    CHECK(!exists("mk/a/f"));
    CHECK_SYS(unlinkat(dfd, "a", AT_REMOVEDIR));
    CHECK(!exists("mk/a"));
    CHECK_SYS(unlink("mk/dangling"));
    write_str("mk/target", "t");
    CHECK_SYS(symlink("target", "mk/tlink"));
    CHECK_SYS(unlink("mk/tlink")); /* removes the link, not the target */
    CHECK(!exists("mk/tlink"));
    expect_content("mk/target", "t");
    CHECK_SYS(unlink("mk/file"));
    CHECK_ERRNO(unlink("mk/file"), ENOENT);
    SAY("unlink/unlinkat: EISDIR for a directory, AT_REMOVEDIR (ENOTEMPTY, ENOTDIR), EINVAL, "
        "ENOENT; a symlink goes, its target stays");

    /* A file unlinked while open stays usable until closed. */
    write_str("mk/open", "before");
    int fd = CHECK_SYS(open("mk/open", O_RDWR));
    CHECK_SYS(unlink("mk/open"));
    CHECK(!exists("mk/open"));
    CHECK_EQ(fstat_of(fd).st_nlink, 0);
    CHECK_EQ(lseek(fd, 0, SEEK_END), 6);
    CHECK_EQ(write(fd, "+after", 6), 6);
    char buf[32] = {0};
    CHECK_EQ(pread(fd, buf, sizeof buf, 0), 12);
    CHECK(memcmp(buf, "before+after", 12) == 0);
    write_str("mk/open", "new"); /* a new file under the old name */
    CHECK(fstat_of(fd).st_ino != stat_of("mk/open").st_ino);
    CHECK_EQ(pread(fd, buf, sizeof buf, 0), 12);
    expect_content("mk/open", "new");
    CHECK_SYS(close(fd));
    CHECK_SYS(close(dfd));
    SAY("unlinked while open: nlink 0, still readable and writable; the name is free for a new "
        "file");
    rm_rf("mk");
}

/* ---- rename ---- */

static void renames(void)
{
    fresh_dir("rn");
    write_str("rn/a", "A");
    ino_t ia = stat_of("rn/a").st_ino;
    CHECK_SYS(rename("rn/a", "rn/b"));
    CHECK(!exists("rn/a"));
    expect_content("rn/b", "A");
    CHECK_EQ(stat_of("rn/b").st_ino, ia);
    write_str("rn/c", "C");
    int oldc = CHECK_SYS(open("rn/c", O_RDONLY));
    CHECK_SYS(rename("rn/b", "rn/c")); /* replaces c */
    CHECK(!exists("rn/b"));
    expect_content("rn/c", "A");
    CHECK_EQ(stat_of("rn/c").st_ino, ia);
    char buf[8];
    CHECK_EQ(read(oldc, buf, sizeof buf), 1); /* the replaced file lives on while open */
    CHECK_EQ(buf[0], 'C');
    CHECK_EQ(fstat_of(oldc).st_nlink, 0);
    CHECK_SYS(close(oldc));
    CHECK_SYS(rename("rn/c", "rn/c")); /* to itself: nothing happens */
    expect_content("rn/c", "A");
    CHECK_SYS(link("rn/c", "rn/c2"));
    CHECK_SYS(rename("rn/c", "rn/c2")); /* two links to one file: nothing happens */
    CHECK(exists("rn/c") && exists("rn/c2"));
    CHECK_SYS(unlink("rn/c2"));
    SAY("rename: moves the inode, replaces a target (still readable while open), no-op on "
        "itself and on another link");

    CHECK_SYS(mkdir("rn/d1", 0755));
    CHECK_SYS(mkdir("rn/d2", 0755));
    CHECK_SYS(rename("rn/c", "rn/d1/x"));
    CHECK_SYS(rename("rn/d1/x", "rn/d2/y"));
    expect_content("rn/d2/y", "A");
    int d1 = CHECK_SYS(open("rn/d1", O_RDONLY | O_DIRECTORY));
    int d2 = CHECK_SYS(open("rn/d2", O_RDONLY | O_DIRECTORY));
    CHECK_SYS(renameat(d2, "y", d1, "z"));
    expect_content("rn/d1/z", "A");
    CHECK(!exists("rn/d2/y"));
    CHECK_SYS(rename("rn/d1", "rn/e1")); /* a directory, with its contents */
    expect_content("rn/e1/z", "A");
    CHECK(!exists("rn/d1"));
    CHECK_SYS(renameat(d1, "z", AT_FDCWD, "rn/e1/w")); /* the open dirfd followed the rename */
    expect_content("rn/e1/w", "A");
    SAY("rename/renameat across directories; a directory moves with its contents and open fds");

    CHECK_SYS(mkdir("rn/e1/sub", 0755));
    CHECK_ERRNO(rename("rn/e1", "rn/e1/sub/x"), EINVAL);
    CHECK_ERRNO(rename("rn/e1", "rn/e1/x"), EINVAL);
    CHECK(exists("rn/e1/sub"));
    CHECK_ERRNO(rename("rn/d2", "rn/e1"), ENOTEMPTY); /* e1 holds w and sub */
    CHECK(exists("rn/d2") && exists("rn/e1/w"));
    CHECK_SYS(rename("rn/e1/sub", "rn/d2")); /* over an empty directory */
    CHECK(!exists("rn/e1/sub") && S_ISDIR(stat_of("rn/d2").st_mode));
    CHECK_SYS(mkdir("rn/e1/sub", 0755));
    CHECK_ERRNO(rename("rn/e1/w", "rn/e1/sub"), EISDIR);
    CHECK_ERRNO(rename("rn/e1/sub", "rn/e1/w"), ENOTDIR);
    CHECK_ERRNO(rename("rn/missing", "rn/x"), ENOENT);
    CHECK_ERRNO(rename("rn/e1/w", "rn/nodir/x"), ENOENT);
    CHECK_ERRNO(rename("rn/e1/w/x", "rn/x"), ENOTDIR);
    SAY("rename errors: EINVAL into its own subdirectory, ENOTEMPTY, EISDIR, ENOTDIR, ENOENT");

    write_str("rn/p", "P");
    write_str("rn/q", "Q");
    ino_t ip = stat_of("rn/p").st_ino, iq = stat_of("rn/q").st_ino;
    CHECK_ERRNO(syscall(SYS_renameat2, AT_FDCWD, "rn/p", AT_FDCWD, "rn/q", RENAME_NOREPLACE),
                EEXIST);
    expect_content("rn/p", "P");
    expect_content("rn/q", "Q");
    CHECK_SYS(syscall(SYS_renameat2, AT_FDCWD, "rn/p", AT_FDCWD, "rn/r", RENAME_NOREPLACE));
    CHECK(!exists("rn/p"));
    expect_content("rn/r", "P");
    CHECK_SYS(syscall(SYS_renameat2, AT_FDCWD, "rn/r", AT_FDCWD, "rn/q", RENAME_EXCHANGE));
    expect_content("rn/r", "Q");
    expect_content("rn/q", "P");
    CHECK_EQ(stat_of("rn/r").st_ino, iq);
    CHECK_EQ(stat_of("rn/q").st_ino, ip);
    CHECK_SYS(syscall(SYS_renameat2, AT_FDCWD, "rn/q", AT_FDCWD, "rn/e1", RENAME_EXCHANGE));
    CHECK(S_ISDIR(stat_of("rn/q").st_mode));
    CHECK(S_ISREG(stat_of("rn/e1").st_mode));
    expect_content("rn/e1", "P");
    expect_content("rn/q/w", "A");
    CHECK_ERRNO(syscall(SYS_renameat2, AT_FDCWD, "rn/r", AT_FDCWD, "rn/none", RENAME_EXCHANGE),
                ENOENT);
    CHECK_ERRNO(syscall(SYS_renameat2, AT_FDCWD, "rn/r", AT_FDCWD, "rn/q",
                        RENAME_EXCHANGE | RENAME_NOREPLACE),
                EINVAL);
    CHECK_ERRNO(syscall(SYS_renameat2, AT_FDCWD, "rn/r", AT_FDCWD, "rn/s", 1 << 5), EINVAL);
    expect_content("rn/r", "Q");
    CHECK_SYS(close(d1));
    CHECK_SYS(close(d2));
    SAY("renameat2: NOREPLACE (EEXIST, or moves), EXCHANGE swaps files and a file with a "
        "directory; ENOENT, EINVAL");
    rm_rf("rn");
}

/* ---- link, symlink, readlink ---- */

static void links(void)
{
    fresh_dir("ln");
    write_str("ln/a", "shared");
    ino_t ino = stat_of("ln/a").st_ino;
    CHECK_SYS(link("ln/a", "ln/b"));
    CHECK_EQ(stat_of("ln/a").st_nlink, 2);
    CHECK_EQ(stat_of("ln/b").st_nlink, 2);
    CHECK_EQ(stat_of("ln/b").st_ino, ino);
    int dfd = CHECK_SYS(open("ln", O_RDONLY | O_DIRECTORY));
    CHECK_SYS(linkat(dfd, "b", AT_FDCWD, "ln/c", 0));
    CHECK_EQ(stat_of("ln/a").st_nlink, 3);
    int fd = CHECK_SYS(open("ln/b", O_WRONLY | O_APPEND));
    CHECK_EQ(write(fd, "!", 1), 1);
    CHECK_EQ(fstat_of(fd).st_nlink, 3);
    CHECK_SYS(close(fd));
    expect_content("ln/a", "shared!");
    expect_content("ln/c", "shared!");
    CHECK_SYS(unlink("ln/a"));
    CHECK_EQ(stat_of("ln/b").st_nlink, 2);
    expect_content("ln/b", "shared!");
    CHECK_SYS(unlink("ln/c"));
    CHECK_EQ(stat_of("ln/b").st_nlink, 1);
    SAY("link/linkat: one inode, st_nlink 1 -> 2 -> 3 -> 2 -> 1, data shared");

    CHECK_SYS(mkdir("ln/dir", 0755));
    write_str("ln/x", "");
    CHECK_ERRNO(link("ln/b", "ln/x"), EEXIST);
    CHECK_ERRNO(link("ln/dir", "ln/dir2"), EPERM);
    CHECK_ERRNO(link("ln/missing", "ln/y"), ENOENT);
    CHECK_ERRNO(link("ln/b", "ln/nodir/y"), ENOENT);
    CHECK_ERRNO(linkat(AT_FDCWD, "ln/b", AT_FDCWD, "ln/y", 0x1), EINVAL);
    CHECK_SYS(symlink("b", "ln/sym"));
    CHECK_SYS(linkat(AT_FDCWD, "ln/sym", AT_FDCWD, "ln/sym-nofollow", 0));
    CHECK(S_ISLNK(lstat_of("ln/sym-nofollow").st_mode));
    CHECK_EQ(lstat_of("ln/sym-nofollow").st_ino, lstat_of("ln/sym").st_ino);
    CHECK_SYS(linkat(AT_FDCWD, "ln/sym", AT_FDCWD, "ln/sym-follow", AT_SYMLINK_FOLLOW));
    CHECK(S_ISREG(lstat_of("ln/sym-follow").st_mode));
    CHECK_EQ(lstat_of("ln/sym-follow").st_ino, ino);
    SAY("link errors: EEXIST, EPERM (directory), ENOENT, EINVAL; linkat links the symlink "
        "itself, or its target with AT_SYMLINK_FOLLOW");

    /* symlink / readlink */
    CHECK_SYS(symlink("some/where/else", "ln/s"));
    char buf[64];
    CHECK_EQ(readlink("ln/s", buf, sizeof buf), 15);
    CHECK(memcmp(buf, "some/where/else", 15) == 0);
    memset(buf, 'Z', sizeof buf);
    CHECK_EQ(readlink("ln/s", buf, 4), 4); /* truncated, no NUL */
    CHECK(memcmp(buf, "someZ", 5) == 0);
    CHECK_EQ(readlinkat(dfd, "s", buf, sizeof buf), 15);
    CHECK_SYS(symlinkat("/abs/path", dfd, "s2"));
    CHECK_EQ(readlink("ln/s2", buf, sizeof buf), 9);
    CHECK(memcmp(buf, "/abs/path", 9) == 0);
    CHECK_EQ(lstat_of("ln/s2").st_size, 9);
    CHECK_ERRNO(readlink("ln/b", buf, sizeof buf), EINVAL);
    CHECK_ERRNO(readlink("ln/dir", buf, sizeof buf), EINVAL);
    CHECK_ERRNO(readlink("ln/missing", buf, sizeof buf), ENOENT);
    CHECK_ERRNO(syscall(SYS_readlink, "ln/s", buf, 0), EINVAL);
    CHECK_ERRNO(symlink("x", "ln/b"), EEXIST);
    CHECK_ERRNO(symlink("x", "ln/s"), EEXIST);
    CHECK_ERRNO(symlink("", "ln/empty"), ENOENT);
    SAY("symlink/symlinkat/readlink/readlinkat: exact bytes, truncation, st_size; EINVAL on a "
        "non-link, ENOENT, EEXIST");

    /* Resolution: relative to the link's directory, through directories, absolute. */
    CHECK_SYS(mkdir("ln/dir/deeper", 0755));
    write_str("ln/dir/deeper/f", "deep");
    CHECK_SYS(symlink("../b", "ln/dir/up"));
    expect_content("ln/dir/up", "shared!");
    CHECK_SYS(symlink("dir/deeper", "ln/dl"));
    expect_content("ln/dl/f", "deep");
    CHECK(S_ISDIR(stat_of("ln/dl/").st_mode));
    CHECK(S_ISLNK(lstat_of("ln/dl").st_mode));
    char abs[PATH_MAX + 64];
    snprintf(abs, sizeof abs, "%s/ln/dir/deeper/f", base);
    CHECK_SYS(symlink(abs, "ln/absl"));
    expect_content("ln/absl", "deep");
    CHECK_SYS(symlink("dl", "ln/chain1"));
    CHECK_SYS(symlink("chain1", "ln/chain2"));
    CHECK_SYS(symlink("chain2/f", "ln/chain3"));
    expect_content("ln/chain3", "deep");
    /* Relative up to the root and into /proc (Debian's /etc/mtab -> ../proc/self/mounts),
     * whatever file system the test directory and the root are. */
    char up[PATH_MAX + 64] = "";
    for (const char *p = base; *p; p++)
        if (*p == '/' && p[1] && strlen(up) + 3 < sizeof up - 20)
            strcat(up, "../");
    strcat(up, "proc/self/status");
    CHECK_SYS(symlink(up, "procrel"));
    char name[6] = {0};
    fd = CHECK_SYS(open("procrel", O_RDONLY));
    CHECK_EQ(read(fd, name, 5), 5);
    CHECK(!strcmp(name, "Name:"));
    CHECK_SYS(close(fd));
    CHECK_SYS(unlink("procrel"));
    CHECK_SYS(close(CHECK_SYS(open("/tmp/../proc/self/status", O_RDONLY))));
    SAY("symlinks resolve relative to their directory, through directories, absolute, chained, "
        "up to the root and into /proc (and /tmp/../proc by name)");

    CHECK_SYS(symlink("loop2", "ln/loop1"));
    CHECK_SYS(symlink("loop1", "ln/loop2"));
    CHECK_SYS(symlink("self", "ln/self"));
    struct stat st;
    CHECK_ERRNO(open("ln/loop1", O_RDONLY), ELOOP);
    CHECK_ERRNO(stat("ln/loop2", &st), ELOOP);
    CHECK_ERRNO(stat("ln/self", &st), ELOOP);
    CHECK_ERRNO(open("ln/loop1/x", O_RDONLY | O_CREAT, 0644), ELOOP);
    CHECK(S_ISLNK(lstat_of("ln/loop1").st_mode));

    CHECK_SYS(symlink("target-to-be", "ln/dangle"));
    CHECK_ERRNO(stat("ln/dangle", &st), ENOENT);
    CHECK_ERRNO(open("ln/dangle", O_RDONLY), ENOENT);
    CHECK(S_ISLNK(lstat_of("ln/dangle").st_mode));
    CHECK_ERRNO(open("ln/dangle", O_WRONLY | O_CREAT | O_EXCL, 0644), EEXIST);
    CHECK(!exists("ln/target-to-be"));
    /* Linux: O_CREAT through a dangling symlink creates its target. */
    fd = CHECK_SYS(open("ln/dangle", O_WRONLY | O_CREAT, 0644));
    CHECK_EQ(write(fd, "made", 4), 4);
    CHECK_SYS(close(fd));
    expect_content("ln/target-to-be", "made");
    CHECK(S_ISLNK(lstat_of("ln/dangle").st_mode));
    CHECK_SYS(close(dfd));
    SAY("ELOOP for a symlink loop (open, stat); dangling: ENOENT, lstat fine, O_CREAT|O_EXCL "
        "EEXIST, O_CREAT makes the target");
    rm_rf("ln");
}

/* ---- truncate ---- */

static void truncates(void)
{
    fresh_dir("tr");
    char data[100];
    for (int i = 0; i < 100; i++)
        data[i] = (char)('a' + i % 26);
    write_file("tr/f", data, 100);
    CHECK_SYS(truncate("tr/f", 5000));
    CHECK_EQ(stat_of("tr/f").st_size, 5000);
    static char buf[8192];
    int fd = CHECK_SYS(open("tr/f", O_RDWR));
    CHECK_EQ(read(fd, buf, sizeof buf), 5000);
    CHECK(memcmp(buf, data, 100) == 0);
    for (int i = 100; i < 5000; i++)
        if (buf[i])
            FAIL("byte %d after growing is 0x%x", i, (unsigned char)buf[i]);
    CHECK_EQ(offset_of(fd), 5000);
    CHECK_SYS(ftruncate(fd, 10));
    CHECK_EQ(offset_of(fd), 5000); /* the offset is not moved */
    CHECK_EQ(fstat_of(fd).st_size, 10);
    CHECK_EQ(read(fd, buf, sizeof buf), 0);
    CHECK_EQ(pread(fd, buf, sizeof buf, 0), 10);
    CHECK(memcmp(buf, data, 10) == 0);
    CHECK_SYS(ftruncate(fd, 60)); /* grow again: the cut bytes do not come back */
    memset(buf, 0x55, sizeof buf);
    CHECK_EQ(pread(fd, buf, sizeof buf, 0), 60);
    CHECK(memcmp(buf, data, 10) == 0);
    for (int i = 10; i < 60; i++)
        if (buf[i])
            FAIL("byte %d after shrink+grow is 0x%x, not 0", i, (unsigned char)buf[i]);
    CHECK_SYS(ftruncate(fd, 0));
    CHECK_EQ(fstat_of(fd).st_size, 0);
    CHECK_SYS(ftruncate(fd, 10));
    CHECK_SYS(ftruncate(fd, 10)); /* same size */
    CHECK_EQ(fstat_of(fd).st_size, 10);
    SAY("truncate/ftruncate: grow with zeros, shrink, grow again (zeros, not old data), offset "
        "kept");

    CHECK_ERRNO(truncate("tr/f", -1), EINVAL);
    CHECK_ERRNO(ftruncate(fd, -1), EINVAL);
    CHECK_SYS(close(fd));
    fd = CHECK_SYS(open("tr/f", O_RDONLY));
    CHECK_ERRNO(ftruncate(fd, 0), EINVAL); /* Linux: EINVAL when not open for writing */
    CHECK_SYS(close(fd));
    CHECK_ERRNO(ftruncate(fd, 0), EBADF);
    CHECK_ERRNO(truncate("tr", 0), EISDIR);
    CHECK_ERRNO(truncate("tr/missing", 0), ENOENT);
    CHECK_EQ(stat_of("tr/f").st_size, 10);
    SAY("truncate errors: EINVAL (negative, read-only fd), EBADF, EISDIR, ENOENT");
    rm_rf("tr");
}

/* ---- cwd ---- */

static void expect_cwd(const char *rel)
{
    char want[PATH_MAX + 64], got[PATH_MAX];
    snprintf(want, sizeof want, "%s%s%s", base, *rel ? "/" : "", rel);
    if (!getcwd(got, sizeof got))
        FAIL("getcwd failed: %s", strerror(errno));
    if (strcmp(got, want))
        FAIL("getcwd says %s, expected %s", got, want);
}

static void cwds(void)
{
    fresh_dir("cwd");
    CHECK_SYS(mkdir("cwd/a", 0755));
    CHECK_SYS(mkdir("cwd/a/b", 0755));
    CHECK_SYS(mkdir("cwd/a/b/c", 0755));
    int top = CHECK_SYS(open(".", O_RDONLY | O_DIRECTORY));
    CHECK_SYS(chdir("cwd/a/b/c"));
    expect_cwd("cwd/a/b/c");
    write_str("here", "c");
    CHECK_SYS(chdir(".."));
    expect_cwd("cwd/a/b");
    expect_content("c/here", "c");
    CHECK_SYS(chdir("../../.."));
    expect_cwd("");
    int cfd = CHECK_SYS(open("cwd/a/b/c", O_RDONLY | O_DIRECTORY));
    CHECK_SYS(fchdir(cfd));
    expect_cwd("cwd/a/b/c");
    expect_content("here", "c");
    CHECK_SYS(fchdir(top));
    expect_cwd("");
    SAY("chdir/fchdir/getcwd: nested, \"..\", relative names resolve in the new directory");

    /* Through a symlink: getcwd shows the real path. */
    CHECK_SYS(symlink("a/b", "cwd/blink"));
    CHECK_SYS(chdir("cwd/blink/c"));
    expect_cwd("cwd/a/b/c");
    /* Renaming a parent of the cwd: getcwd follows. */
    char old[PATH_MAX + 64], new[PATH_MAX + 64];
    snprintf(old, sizeof old, "%s/cwd/a", base);
    snprintf(new, sizeof new, "%s/cwd/renamed", base);
    CHECK_SYS(rename(old, new));
    expect_cwd("cwd/renamed/b/c");
    expect_content("here", "c");

    char got[PATH_MAX];
    CHECK(getcwd(got, sizeof got) != NULL);
    size_t len = strlen(got);
    CHECK_ERRNO(syscall(SYS_getcwd, got, len), ERANGE);
    CHECK_EQ(syscall(SYS_getcwd, got, len + 1), (long)len + 1);
    CHECK_ERRNO(syscall(SYS_getcwd, got, 1), ERANGE);
    char small[4];
    CHECK(getcwd(small, sizeof small) == NULL && errno == ERANGE);
    CHECK_SYS(fchdir(top));
    SAY("getcwd through a symlink and after renaming a parent; ERANGE for a small buffer");

    write_str("cwd/file", "");
    CHECK_ERRNO(chdir("cwd/file"), ENOTDIR);
    CHECK_ERRNO(chdir("cwd/missing"), ENOENT);
    CHECK_ERRNO(chdir(""), ENOENT);
    int ffd = CHECK_SYS(open("cwd/file", O_RDONLY));
    CHECK_ERRNO(fchdir(ffd), ENOTDIR);
    CHECK_SYS(close(ffd));
    CHECK_ERRNO(fchdir(ffd), EBADF);
    expect_cwd("");
    CHECK_SYS(close(top));
    CHECK_SYS(close(cfd));
    SAY("chdir errors: ENOTDIR, ENOENT; fchdir: ENOTDIR, EBADF; the cwd unchanged");
    rm_rf("cwd");
}

/* ---- access, umask, chmod, chown, utimensat ---- */

static void attrs(void)
{
    fresh_dir("at");
    write_str("at/f", "");
    CHECK_SYS(access("at/f", F_OK));
    CHECK_SYS(access("at", F_OK | X_OK));
    int dfd = CHECK_SYS(open("at", O_RDONLY | O_DIRECTORY));
    CHECK_SYS(faccessat(dfd, "f", F_OK, 0));
    CHECK_SYS(faccessat(dfd, "f", R_OK | W_OK, 0));
    CHECK_ERRNO(access("at/missing", F_OK), ENOENT);
    CHECK_ERRNO(faccessat(dfd, "missing", F_OK, 0), ENOENT);
    CHECK_ERRNO(access("at/f/x", F_OK), ENOTDIR);
    CHECK_ERRNO(syscall(SYS_access, "at/f", 8), EINVAL);
    if (geteuid() == 0) {
        /* root may read and write anything, but execute only what has some x bit. */
        CHECK_SYS(chmod("at/f", 0));
        CHECK_SYS(access("at/f", R_OK | W_OK));
        CHECK_ERRNO(access("at/f", X_OK), EACCES);
        CHECK_SYS(chmod("at/f", 0100));
        CHECK_SYS(access("at/f", X_OK));
    }
    SAY("access/faccessat: F_OK, R_OK|W_OK, X_OK as root; ENOENT, ENOTDIR, EINVAL");

    CHECK_EQ(umask(0), 022);
    CHECK_EQ(umask(0), 0);
    int fd = CHECK_SYS(open("at/u", O_RDWR | O_CREAT, 0777));
    CHECK_EQ(fstat_of(fd).st_mode, S_IFREG | 0777);
    CHECK_SYS(close(fd));
    CHECK_EQ(umask(0777), 0);
    CHECK_EQ(umask(022), 0777); /* only the permission bits */
    SAY("umask returns the old mask; mask 0 gives the full mode");

    CHECK_SYS(chmod("at/f", 0640));
    CHECK_EQ(stat_of("at/f").st_mode, S_IFREG | 0640);
    fd = CHECK_SYS(open("at/f", O_RDONLY));
    CHECK_SYS(fchmod(fd, 0751));
    CHECK_EQ(stat_of("at/f").st_mode, S_IFREG | 0751);
    CHECK_SYS(fchmodat(dfd, "f", 0600, 0));
    CHECK_EQ(fstat_of(fd).st_mode, S_IFREG | 0600);
    CHECK_SYS(fchmod(fd, 04755));
    CHECK_EQ(fstat_of(fd).st_mode, S_IFREG | 04755);
    CHECK_SYS(chmod("at", 0700));
    CHECK_EQ(stat_of("at").st_mode, S_IFDIR | 0700);
    CHECK_SYS(chmod("at", 0755));
    CHECK_SYS(symlink("f", "at/l"));
    CHECK_SYS(chmod("at/l", 0644)); /* follows the link */
    CHECK_EQ(stat_of("at/f").st_mode, S_IFREG | 0644);
    CHECK(S_ISLNK(lstat_of("at/l").st_mode));
    CHECK_ERRNO(chmod("at/missing", 0644), ENOENT);
    CHECK_SYS(close(fd));
    CHECK_ERRNO(fchmod(fd, 0644), EBADF);
    SAY("chmod/fchmod/fchmodat: st_mode (set-user-ID too), through symlinks; ENOENT, EBADF");

    if (geteuid() == 0) {
        CHECK_SYS(chown("at/f", 1234, 5678));
        struct stat st = stat_of("at/f");
        CHECK_EQ(st.st_uid, 1234);
        CHECK_EQ(st.st_gid, 5678);
        CHECK_SYS(chown("at/f", -1, 42));
        st = stat_of("at/f");
        CHECK_EQ(st.st_uid, 1234);
        CHECK_EQ(st.st_gid, 42);
        fd = CHECK_SYS(open("at/f", O_RDONLY));
        CHECK_SYS(fchown(fd, 7, -1));
        CHECK_EQ(fstat_of(fd).st_uid, 7);
        CHECK_EQ(fstat_of(fd).st_gid, 42);
        CHECK_SYS(close(fd));
        CHECK_SYS(lchown("at/l", 11, 12)); /* the link, not the target */
        CHECK_EQ(lstat_of("at/l").st_uid, 11);
        CHECK_EQ(lstat_of("at/l").st_gid, 12);
        CHECK_EQ(stat_of("at/f").st_uid, 7);
        CHECK_SYS(chown("at/l", 21, 22)); /* the target */
        CHECK_EQ(stat_of("at/f").st_uid, 21);
        CHECK_EQ(stat_of("at/f").st_gid, 22);
        CHECK_EQ(lstat_of("at/l").st_uid, 11);
        CHECK_SYS(fchownat(dfd, "l", 31, 32, AT_SYMLINK_NOFOLLOW));
        CHECK_EQ(lstat_of("at/l").st_uid, 31);
        CHECK_EQ(lstat_of("at/l").st_gid, 32);
        CHECK_EQ(stat_of("at/f").st_uid, 21);
        CHECK_SYS(fchownat(dfd, "l", 0, 0, 0));
        CHECK_EQ(stat_of("at/f").st_uid, 0);
        CHECK_EQ(stat_of("at/f").st_gid, 0);
        CHECK_ERRNO(chown("at/missing", 0, 0), ENOENT);
        CHECK_ERRNO(fchownat(dfd, "f", 0, 0, 0x1), EINVAL);
        SAY("chown/fchown/lchown/fchownat as root: st_uid/st_gid, -1 keeps, link vs target");
    } else {
        SAY("chown family skipped: not running as root");
    }

    /* utimensat */
    struct timespec ts[2] = {{1000000000, 123456789}, {1200000000, 987654321}};
    CHECK_SYS(utimensat(AT_FDCWD, "at/f", ts, 0));
    struct stat st = stat_of("at/f");
    CHECK_EQ(st.st_atim.tv_sec, 1000000000);
    CHECK_EQ(st.st_atim.tv_nsec, 123456789);
    CHECK_EQ(st.st_mtim.tv_sec, 1200000000);
    CHECK_EQ(st.st_mtim.tv_nsec, 987654321);
    struct timespec omit[2] = {{0, UTIME_OMIT}, {1300000000, 5}};
    CHECK_SYS(utimensat(dfd, "f", omit, 0));
    st = stat_of("at/f");
    CHECK_EQ(st.st_atim.tv_sec, 1000000000);
    CHECK_EQ(st.st_atim.tv_nsec, 123456789);
    CHECK_EQ(st.st_mtim.tv_sec, 1300000000);
    CHECK_EQ(st.st_mtim.tv_nsec, 5);
    struct timespec before, after;
    CHECK_SYS(clock_gettime(CLOCK_REALTIME, &before));
    struct timespec now[2] = {{0, UTIME_OMIT}, {0, UTIME_NOW}};
    CHECK_SYS(utimensat(AT_FDCWD, "at/f", now, 0));
    CHECK_SYS(clock_gettime(CLOCK_REALTIME, &after));
    st = stat_of("at/f");
    CHECK_EQ(st.st_atim.tv_sec, 1000000000);
    /* File times may come from a coarser clock: allow a second either side. */
    CHECK(st.st_mtim.tv_sec >= before.tv_sec - 1 && st.st_mtim.tv_sec <= after.tv_sec + 1);
    fd = CHECK_SYS(open("at/f", O_RDONLY));
    CHECK_SYS(futimens(fd, ts));
    CHECK_EQ(fstat_of(fd).st_mtim.tv_sec, 1200000000);
    CHECK_SYS(utimensat(AT_FDCWD, "at/f", NULL, 0));
    CHECK_SYS(clock_gettime(CLOCK_REALTIME, &after));
    st = stat_of("at/f");
    CHECK(st.st_atim.tv_sec >= before.tv_sec - 1 && st.st_atim.tv_sec <= after.tv_sec + 1);
    CHECK(st.st_mtim.tv_sec >= before.tv_sec - 1 && st.st_mtim.tv_sec <= after.tv_sec + 1);
    CHECK_SYS(utimensat(dfd, "l", ts, AT_SYMLINK_NOFOLLOW)); /* the link's own times */
    CHECK_EQ(lstat_of("at/l").st_mtim.tv_sec, 1200000000);
    CHECK(stat_of("at/f").st_mtim.tv_sec != 1200000000);
    struct timespec bad[2] = {{0, 1000000000}, {0, 0}};
    CHECK_ERRNO(utimensat(AT_FDCWD, "at/f", bad, 0), EINVAL);
    CHECK_ERRNO(utimensat(AT_FDCWD, "at/missing", ts, 0), ENOENT);
    CHECK_SYS(close(fd));
    CHECK_SYS(close(dfd));
    SAY("utimensat/futimens: exact times to the ns, UTIME_OMIT, UTIME_NOW, NULL, "
        "AT_SYMLINK_NOFOLLOW; EINVAL, ENOENT");
    rm_rf("at");
}

/* ---- fsync, statfs, sendfile ---- */

static void misc(void)
{
    fresh_dir("mi");
    write_str("mi/f", "data");
    int fd = CHECK_SYS(open("mi/f", O_RDWR));
    CHECK_EQ(fsync(fd), 0);
    CHECK_EQ(fdatasync(fd), 0);
    int dfd = CHECK_SYS(open("mi", O_RDONLY | O_DIRECTORY));
    CHECK_EQ(fsync(dfd), 0);
    struct statfs sf;
    memset(&sf, 0, sizeof sf);
    CHECK_SYS(statfs("mi/f", &sf));
    CHECK(sf.f_bsize > 0);
    CHECK(sf.f_bfree <= sf.f_blocks);
    long bsize = sf.f_bsize;
    memset(&sf, 0, sizeof sf);
    CHECK_SYS(fstatfs(fd, &sf));
    CHECK_EQ(sf.f_bsize, bsize);
    CHECK_ERRNO(statfs("mi/missing", &sf), ENOENT);
    CHECK_SYS(close(fd));
    CHECK_SYS(close(dfd));
    CHECK_ERRNO(fsync(fd), EBADF);
    CHECK_ERRNO(fstatfs(fd, &sf), EBADF);
    SAY("fsync/fdatasync return 0; statfs/fstatfs: f_bsize %ld; ENOENT, EBADF", bsize);

    enum { SZ = 10000 };
    static char src[SZ], back[SZ];
    for (int i = 0; i < SZ; i++)
        src[i] = (char)(i * 13 + 1);
    write_file("mi/src", src, SZ);
    int in = CHECK_SYS(open("mi/src", O_RDONLY));
    int out = CHECK_SYS(open("mi/dst", O_WRONLY | O_CREAT | O_TRUNC, 0644));
    CHECK_EQ(lseek(in, 7, SEEK_SET), 7);
    off_t off = 100;
    long total = 0;
    while (total < 3000) {
        long r = CHECK_SYS(sendfile(out, in, &off, 3000 - total));
        CHECK(r > 0);
        total += r;
    }
    CHECK_EQ(off, 3100);
    CHECK_EQ(offset_of(in), 7); /* with an offset pointer the file offset stays */
    CHECK_EQ(offset_of(out), 3000);
    CHECK_EQ(read_file("mi/dst", back, sizeof back), 3000);
    CHECK(memcmp(back, src + 100, 3000) == 0);
    SAY("sendfile with an offset: 3000 bytes from 100, *offset = 3100, in_fd offset unchanged");

    CHECK_EQ(lseek(in, 5000, SEEK_SET), 5000);
    total = 0;
    for (;;) {
        long r = CHECK_SYS(sendfile(out, in, NULL, 100000));
        if (r == 0)
            break;
        total += r;
    }
    CHECK_EQ(total, SZ - 5000);
    CHECK_EQ(offset_of(in), SZ);
    CHECK_EQ(offset_of(out), 3000 + SZ - 5000);
    static char back2[SZ + 1];
    CHECK_EQ(read_file("mi/dst", back2, sizeof back2), 3000 + SZ - 5000);
    CHECK(memcmp(back2, src + 100, 3000) == 0);
    CHECK(memcmp(back2 + 3000, src + 5000, SZ - 5000) == 0);
    off = SZ + 10;
    CHECK_EQ(sendfile(out, in, &off, 10), 0); /* past EOF */
    CHECK_EQ(off, SZ + 10);
    CHECK_ERRNO(sendfile(in, in, NULL, 10), EBADF);   /* out_fd not writable */
    CHECK_ERRNO(sendfile(out, out, NULL, 10), EBADF); /* in_fd not readable */
    CHECK_SYS(close(in));
    CHECK_ERRNO(sendfile(out, in, NULL, 10), EBADF);
    CHECK_SYS(close(out));
    SAY("sendfile without an offset: to EOF, advances in_fd; 0 past EOF; EBADF");
    rm_rf("mi");
}

/* ---- ENAMETOOLONG, EBADF, EFAULT ---- */

static void errors(void)
{
    fresh_dir("er");
    char name[300];
    strcpy(name, "er/");
    memset(name + 3, 'n', 255);
    name[3 + 255] = 0;
    int fd = CHECK_SYS(open(name, O_RDWR | O_CREAT, 0644)); /* 255 bytes: the longest name */
    CHECK_SYS(close(fd));
    CHECK(exists(name));
    CHECK_SYS(unlink(name));
    name[3 + 255] = 'n';
    name[3 + 256] = 0;
    CHECK_ERRNO(open(name, O_RDWR | O_CREAT, 0644), ENAMETOOLONG);
    CHECK_ERRNO(mkdir(name, 0755), ENAMETOOLONG);
    struct stat st;
    CHECK_ERRNO(stat(name, &st), ENAMETOOLONG);
    CHECK_ERRNO(symlink("x", name), ENAMETOOLONG);
    static char path[4200];
    for (int i = 0; i < 2048; i++)
        memcpy(path + 2 * i, "./", 2);
    path[4096] = 0; /* 4096 bytes + NUL: longer than PATH_MAX allows */
    CHECK_ERRNO(stat(path, &st), ENAMETOOLONG);
    CHECK_ERRNO(open(path, O_RDONLY), ENAMETOOLONG);
    path[4095] = 0; /* 4095 bytes + NUL = PATH_MAX: resolves to "." */
    CHECK_SYS(stat(path, &st));
    CHECK_EQ(st.st_ino, stat_of(".").st_ino);
    SAY("ENAMETOOLONG for a 256-byte name and a 4096-byte path; 255 and 4095 bytes work");

    write_str("er/f", "0123456789");
    int rd = CHECK_SYS(open("er/f", O_RDONLY));
    int wr = CHECK_SYS(open("er/f", O_WRONLY));
    char buf[16];
    CHECK_ERRNO(write(rd, "x", 1), EBADF);
    CHECK_ERRNO(pwrite(rd, "x", 1, 0), EBADF);
    CHECK_ERRNO(read(wr, buf, 1), EBADF);
    CHECK_ERRNO(pread(wr, buf, 1, 0), EBADF);
    int closed = CHECK_SYS(dup(rd));
    CHECK_SYS(close(closed));
    CHECK_ERRNO(read(closed, buf, 1), EBADF);
    CHECK_ERRNO(write(closed, "x", 1), EBADF);
    CHECK_ERRNO(close(closed), EBADF);
    CHECK_ERRNO(lseek(closed, 0, SEEK_SET), EBADF);
    CHECK_ERRNO(dup(closed), EBADF);
    CHECK_ERRNO(fstat(closed, &st), EBADF);
    CHECK_ERRNO(close(-1), EBADF);
    CHECK_ERRNO(read(-1, buf, 1), EBADF);
    CHECK_ERRNO(syscall(SYS_newfstatat, closed, "f", &st, 0), EBADF);
    int dfd = CHECK_SYS(open("er", O_RDONLY | O_DIRECTORY));
    CHECK_ERRNO(read(dfd, buf, 1), EISDIR);
    CHECK_SYS(close(dfd));
    SAY("EBADF: closed fds, write to O_RDONLY, read from O_WRONLY; EISDIR reading a directory");

    /* Raw system calls, so that libc cannot touch the bad pointers first. */
    volatile uintptr_t one = 1;
    void *bad = (void *)one;
    void *kernel = (void *)(uintptr_t)0xffff800000000000ull;
    CHECK_ERRNO(syscall(SYS_write, wr, bad, 10), EFAULT);
    CHECK_ERRNO(syscall(SYS_write, wr, kernel, 10), EFAULT);
    CHECK_ERRNO(syscall(SYS_pwrite64, wr, bad, 10, 0), EFAULT);
    CHECK_EQ(stat_of("er/f").st_size, 10);
    expect_content("er/f", "0123456789");
    CHECK_ERRNO(syscall(SYS_read, rd, bad, 10), EFAULT);
    CHECK_ERRNO(syscall(SYS_read, rd, kernel, 10), EFAULT);
    CHECK_ERRNO(syscall(SYS_pread64, rd, bad, 10, 0), EFAULT);
    /* A read-only page as a read destination, an inaccessible one as a write source. */
    char *ro = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(ro != MAP_FAILED);
    CHECK_ERRNO(syscall(SYS_read, rd, ro, 10), EFAULT);
    CHECK_EQ(ro[0], 0);
    CHECK_SYS(mprotect(ro, 4096, PROT_NONE));
    CHECK_ERRNO(syscall(SYS_write, wr, ro, 10), EFAULT);
    CHECK_SYS(munmap(ro, 4096));
    CHECK_ERRNO(syscall(SYS_readv, rd, bad, 1), EFAULT);
    struct iovec iov = {bad, 10};
    CHECK_ERRNO(syscall(SYS_writev, wr, &iov, 1), EFAULT);
    CHECK_ERRNO(syscall(SYS_open, bad, O_RDONLY), EFAULT);
    CHECK_ERRNO(syscall(SYS_openat, AT_FDCWD, kernel, O_RDONLY), EFAULT);
    CHECK_ERRNO(syscall(SYS_stat, "er/f", bad), EFAULT);
    CHECK_ERRNO(syscall(SYS_fstat, rd, bad), EFAULT);
    CHECK_ERRNO(syscall(SYS_mkdir, bad, 0755), EFAULT);
    CHECK_ERRNO(syscall(SYS_getcwd, bad, 100), EFAULT);
    CHECK_ERRNO(syscall(SYS_readlink, "er/f", bad, 10), EINVAL); /* not a link: checked first */
    dfd = CHECK_SYS(open("er", O_RDONLY | O_DIRECTORY));
    CHECK_ERRNO(syscall(SYS_getdents64, dfd, bad, 4096), EFAULT);
    CHECK_SYS(close(dfd));
    CHECK_EQ(stat_of("er/f").st_size, 10);
    CHECK_EQ(offset_of(rd), 0);
    CHECK_EQ(offset_of(wr), 0);
    CHECK_SYS(close(rd));
    CHECK_SYS(close(wr));
    SAY("EFAULT: bad, kernel, read-only and PROT_NONE buffers for read/write/readv/writev/"
        "pread/pwrite, bad paths and stat buffers; file and offsets unchanged");
    rm_rf("er");
}

int main(int argc, char **argv, char **envp)
{
    environment = envp;
    self = self_path(argv[0]);
    if (argc == 4 && !strcmp(argv[1], "cloexec-child")) {
        test_begin("fileio-cloexec-child");
        return cloexec_child(atoi(argv[2]), atoi(argv[3]));
    }
    test_begin("fileio");
    umask(022);
    char dir[64];
    snprintf(dir, sizeof dir, "/tmp/fileio.%d", getpid());
    rm_rf(dir);
    CHECK_SYS(mkdir(dir, 0755));
    CHECK_SYS(chdir(dir));
    CHECK(getcwd(base, sizeof base) != NULL);
    SAY("working in %s", base);

    open_flags();
    read_write();
    dups();
    stats();
    dirents();
    dirs();
    renames();
    links();
    truncates();
    cwds();
    attrs();
    misc();
    errors();

    CHECK_SYS(chdir("/"));
    rm_rf(dir);
    CHECK(!exists(dir));
    PASS();
}
