/*
 * haremount: Hare behind the ordinary file calls (issue 13). The fleet of bin/hared servers
 * is started, `mount("none", "/mnt/hare", "hare", 0, "cache=16")` makes the kernel their
 * client, and from then on this program (and busybox) use plain open/read/write/readdir/
 * rename/unlink/... on /mnt/hare, with no Hare code linked in. It checks:
 *
 *  - mount's errors (a second mount, another type, a file as the target, a bad option) and
 *    /proc/mounts, /proc/reef/hare;
 *  - data written and read back across blocks, pread/pwrite, O_APPEND, ftruncate and
 *    truncate, holes reading as zeros, fstat sizes;
 *  - directories: 40 files listed once each by getdents64 (in small batches), stat of each,
 *    rename, unlink, rmdir ENOTEMPTY then done, symlink and readlink;
 *  - chdir into the mount, relative paths, getcwd, `..` out of it;
 *  - a shared description across fork with the child pinned to another core (the offset
 *    moves for both), and close-to-open: another process opening after a close reads what
 *    was written;
 *  - a hard link; cross-mount calls (rename, link: EXDEV), execve of a file without an
 *    execute bit (EACCES), bad pointers (EFAULT) with the files intact;
 *  - symlinks across mounts, both ways: NR-FS symlinks (absolute and relative) into Hare and
 *    into /proc, Hare symlinks out to NR-FS (absolute, and relative above the mount's root;
 *    stat, open, O_CREAT, mkdir, rename, unlink and execve through them), a loop across the two (ELOOP), a rename across through a symlink
 *    (EXDEV);
 *  - busybox sh, echo, cat, cp, mv, ls and rm on the mount; a static program and a `#!`
 *    script executed from it (EACCES without an execute bit);
 *  - statfs: the servers' free blocks, a truncation's blocks held back until the last close;
 *  - a process's own connection to the servers refused (they serve the kernel alone);
 *  - permissions: a process of another user is refused root's files (open, truncate, unlink,
 *    rename, create, chmod, chown, utimensat) and a directory it may not search, owns the
 *    files it makes, and cannot remove another's file from a sticky directory;
 *  - umount refused while a descriptor is open, then done; the servers keep the files and a
 *    new mount finds them; the ablation options listed and answering the same (nodirect reads
 *    through the servers); mode= setting the root's permission bits.
 *
 * Off Reef (Linux, not root or no such type) mount answers an error and nothing else is done.
 */
#include "reef-test.h"
#include "hare_fleet.h"
#include <dirent.h>
#include <grp.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>

#define MNT "/mnt/hare"
#define BIG (5 * 4096 + 123)
#define FILES 40

static unsigned char pattern(size_t i)
{
    return (unsigned char)(i * 7 + i / 4096);
}

static void check_data(void)
{
    static unsigned char buf[BIG + 100], back[BIG + 100];
    for (size_t i = 0; i < BIG; i++)
        buf[i] = pattern(i);
    int fd = open(MNT "/big", O_CREAT | O_RDWR | O_EXCL, 0644);
    CHECK(fd >= 0);
    CHECK_EQ(write(fd, buf, BIG), BIG);
    CHECK_EQ(lseek(fd, 0, SEEK_CUR), BIG);
    CHECK_EQ(lseek(fd, 0, SEEK_SET), 0);
    CHECK_EQ(read(fd, back, sizeof back), BIG);
    CHECK(memcmp(buf, back, BIG) == 0);
    CHECK_EQ(read(fd, back, sizeof back), 0);
    /* pread/pwrite leave the offset alone. */
    CHECK_EQ(pwrite(fd, "XYZ", 3, 4095), 3);
    CHECK_EQ(pread(fd, back, 5, 4094), 5);
    CHECK(back[0] == pattern(4094) && memcmp(back + 1, "XYZ", 3) == 0 && back[4] == pattern(4098));
    CHECK_EQ(lseek(fd, 0, SEEK_CUR), BIG);
    struct stat st;
    CHECK_SYS(fstat(fd, &st));
    CHECK_EQ(st.st_size, BIG);
    mode_t um = umask(0);
    umask(um);
    CHECK(S_ISREG(st.st_mode) && (st.st_mode & 0777) == (0644 & ~um));
    /* A hole reads as zeros. */
    CHECK_EQ(pwrite(fd, "end", 3, 3 * BIG), 3);
    CHECK_EQ(pread(fd, back, 100, 2 * BIG), 100);
    for (int i = 0; i < 100; i++)
        CHECK_EQ(back[i], 0);
    CHECK_SYS(ftruncate(fd, 1000));
    CHECK_SYS(fstat(fd, &st));
    CHECK_EQ(st.st_size, 1000);
    CHECK_EQ(pread(fd, back, 100, 990), 10);
    CHECK_SYS(close(fd));
    CHECK_SYS(truncate(MNT "/big", 10));
    CHECK_SYS(stat(MNT "/big", &st));
    CHECK_EQ(st.st_size, 10);
    /* O_APPEND writes at the end whatever the offset. */
    fd = open(MNT "/log", O_CREAT | O_WRONLY | O_APPEND, 0600);
    CHECK(fd >= 0);
    CHECK_EQ(write(fd, "one\n", 4), 4);
    CHECK_EQ(lseek(fd, 0, SEEK_SET), 0);
    CHECK_EQ(write(fd, "two\n", 4), 4);
    CHECK_SYS(close(fd));
    fd = open(MNT "/log", O_RDONLY);
    CHECK(fd >= 0);
    CHECK_EQ(read(fd, back, 100), 8);
    CHECK(memcmp(back, "one\ntwo\n", 8) == 0);
    CHECK_ERRNO(write(fd, "x", 1), EBADF);
    CHECK_SYS(close(fd));
    CHECK_ERRNO(open(MNT "/big", O_CREAT | O_EXCL | O_RDWR, 0644), EEXIST);
    CHECK_ERRNO(open(MNT "/none", O_RDONLY), ENOENT);
    CHECK_ERRNO(open(MNT "/big/x", O_RDONLY), ENOTDIR);
    SAY("data: %d bytes across blocks, pread/pwrite, a hole, truncation, O_APPEND", BIG);
}

/* Lists `path` with getdents64 in batches of at most `batch` bytes: entries other than . and
 * .., checking each name is seen once. */
/* statfs of the mount counts the servers' free blocks: a truncation of a file that is still
 * open holds its blocks back until the last close (Hare §3.5), an unlink gives them back. */
static void check_space(void)
{
    struct statfs a, b;
    CHECK_SYS(statfs(MNT, &a));
    CHECK_EQ(a.f_type, 0x48415245);
    CHECK_EQ(a.f_bsize, 4096);
    CHECK(a.f_blocks >= a.f_bfree && a.f_bfree >= 16);
    int fd = CHECK_SYS(open(MNT "/space", O_RDWR | O_CREAT | O_EXCL, 0644));
    /* One write: a second write extending the file would allocate pages ahead of the writes
     * to come, counted as used until the last close (as XFS's preallocation past the end). */
    static unsigned char pages[8 * 4096];
    memset(pages, 5, sizeof pages);
    CHECK_EQ(write(fd, pages, sizeof pages), (ssize_t)sizeof pages);
    CHECK_SYS(statfs(MNT, &b));
    CHECK_EQ(a.f_bfree - b.f_bfree, 8);
    CHECK_EQ(b.f_files - b.f_ffree, a.f_files - a.f_ffree + 1);
    int other = CHECK_SYS(open(MNT "/space", O_RDWR));
    CHECK_SYS(ftruncate(other, 4096));
    CHECK_SYS(statfs(MNT, &b));
    CHECK_EQ(a.f_bfree - b.f_bfree, 8);
    CHECK_SYS(close(other));
    CHECK_SYS(statfs(MNT, &b));
    CHECK_EQ(a.f_bfree - b.f_bfree, 8);
    CHECK_SYS(close(fd));
    CHECK_SYS(statfs(MNT, &b));
    CHECK_EQ(a.f_bfree - b.f_bfree, 1);
    CHECK_SYS(unlink(MNT "/space"));
    CHECK_SYS(statfs(MNT, &b));
    CHECK_EQ(b.f_bfree, a.f_bfree);
    SAY("statfs: the servers' free blocks; a truncation's blocks held until the last close");
}

/* What a user other than root may do in the mount: the servers keep each file's owner, group
 * and mode (a new file is its creator's), and the kernel checks them as for NR-FS. */
static void as_user(void)
{
    CHECK_SYS(setgroups(0, NULL));
    CHECK_SYS(setresgid(1000, 1000, 1000));
    CHECK_SYS(setresuid(1000, 1000, 1000));
    CHECK_ERRNO(open(MNT "/perm/secret", O_RDONLY), EACCES);
    CHECK_SYS(close(CHECK_SYS(open(MNT "/perm/public", O_RDONLY))));
    CHECK_ERRNO(open(MNT "/perm/public", O_WRONLY), EACCES);
    CHECK_ERRNO(open(MNT "/perm/public", O_RDONLY | O_TRUNC), EACCES);
    CHECK_ERRNO(truncate(MNT "/perm/public", 0), EACCES);
    CHECK_ERRNO(unlink(MNT "/perm/public"), EACCES);
    CHECK_ERRNO(rename(MNT "/perm/public", MNT "/open/taken"), EACCES);
    CHECK_ERRNO(open(MNT "/perm/new", O_CREAT | O_WRONLY, 0644), EACCES);
    CHECK_ERRNO(mkdir(MNT "/perm/d", 0755), EACCES);
    CHECK_ERRNO(symlink("public", MNT "/perm/l"), EACCES);
    CHECK_ERRNO(link(MNT "/perm/public", MNT "/perm/hard"), EACCES);
    CHECK_ERRNO(chmod(MNT "/perm/public", 0666), EPERM);
    CHECK_ERRNO(chown(MNT "/perm/public", 1000, 1000), EPERM);
    struct timespec times[2] = {{1, 0}, {2, 0}};
    CHECK_ERRNO(utimensat(AT_FDCWD, MNT "/perm/public", times, 0), EPERM);
    CHECK_ERRNO(utimensat(AT_FDCWD, MNT "/perm/public", NULL, 0), EACCES);
    /* A directory it may not search: nothing below it. */
    CHECK_ERRNO(open(MNT "/locked/f", O_RDONLY), EACCES);
    struct stat st;
    CHECK_ERRNO(stat(MNT "/locked/f", &st), EACCES);
    CHECK_ERRNO(chdir(MNT "/locked"), EACCES);
    /* Its own file in a directory anyone may write: its owner and group, and its to change. */
    int fd = CHECK_SYS(open(MNT "/open/mine", O_CREAT | O_EXCL | O_WRONLY, 0644));
    CHECK_SYS(fstat(fd, &st));
    CHECK_EQ(st.st_uid, 1000);
    CHECK_EQ(st.st_gid, 1000);
    CHECK_SYS(fchmod(fd, 0600));
    CHECK_SYS(close(fd));
    CHECK_SYS(mkdir(MNT "/open/sub", 0700));
    CHECK_SYS(stat(MNT "/open/sub", &st));
    CHECK_EQ(st.st_uid, 1000);
    CHECK_SYS(utimensat(AT_FDCWD, MNT "/open/mine", times, 0));
    CHECK_SYS(rmdir(MNT "/open/sub"));
    CHECK_SYS(unlink(MNT "/open/mine"));
    /* The sticky bit: another user's file in a sticky directory stays. */
    CHECK_ERRNO(unlink(MNT "/open/roots"), EPERM);
    _exit(0);
}

static void check_permissions(void)
{
    CHECK_SYS(mkdir(MNT "/perm", 0755));
    CHECK_SYS(mkdir(MNT "/locked", 0700));
    CHECK_SYS(mkdir(MNT "/open", 0777));
    CHECK_SYS(chmod(MNT "/open", 01777));
    CHECK_SYS(close(CHECK_SYS(open(MNT "/perm/secret", O_CREAT | O_WRONLY, 0600))));
    CHECK_SYS(close(CHECK_SYS(open(MNT "/perm/public", O_CREAT | O_WRONLY, 0644))));
    CHECK_SYS(close(CHECK_SYS(open(MNT "/locked/f", O_CREAT | O_WRONLY, 0644))));
    CHECK_SYS(close(CHECK_SYS(open(MNT "/open/roots", O_CREAT | O_WRONLY, 0644))));
    struct stat st;
    CHECK_SYS(stat(MNT "/perm/public", &st));
    CHECK_EQ(st.st_uid, 0);
    pid_t pid = CHECK_SYS(fork());
    if (pid == 0)
        as_user();
    CHECK_CHILD_EXIT(pid, 0);
    CHECK_SYS(stat(MNT "/perm/public", &st));
    CHECK_EQ(st.st_mode & 07777, 0644);
    CHECK_SYS(unlink(MNT "/perm/secret"));
    CHECK_SYS(unlink(MNT "/perm/public"));
    CHECK_SYS(unlink(MNT "/locked/f"));
    CHECK_SYS(unlink(MNT "/open/roots"));
    CHECK_SYS(rmdir(MNT "/perm"));
    CHECK_SYS(rmdir(MNT "/locked"));
    CHECK_SYS(rmdir(MNT "/open"));
    SAY("permissions: another user is refused root's files and directories, owns what it "
        "makes, and the sticky bit holds");
}

/* A process may not speak to the servers itself: they serve the kernel's connections alone,
 * which check permissions first (hared without --user-clients). Its hello is refused with
 * EACCES before anything in it is looked at. */
static void check_no_user_clients(void)
{
    CHECK_EQ(hare_forged_hello(), EACCES);
    SAY("a process's own connection to the servers is refused (EACCES)");
}

static int list(const char *path, size_t batch, int *dots)
{
    char seen[FILES] = {0};
    int fd = open(path, O_RDONLY | O_DIRECTORY);
    CHECK(fd >= 0);
    char buf[512];
    int n = 0;
    *dots = 0;
    for (;;) {
        long got = syscall(SYS_getdents64, fd, buf, batch);
        CHECK(got >= 0);
        if (got == 0)
            break;
        for (long off = 0; off < got;) {
            struct dirent64 *d = (struct dirent64 *)(buf + off);
            if (!strcmp(d->d_name, ".") || !strcmp(d->d_name, "..")) {
                (*dots)++;
            } else {
                int i;
                CHECK(sscanf(d->d_name, "f%d", &i) == 1 && i >= 0 && i < FILES);
                CHECK(!seen[i]);
                CHECK_EQ(d->d_type, DT_REG);
                seen[i] = 1;
                n++;
            }
            off += d->d_reclen;
        }
    }
    CHECK_SYS(close(fd));
    return n;
}

static void check_dirs(void)
{
    CHECK_SYS(mkdir(MNT "/d", 0755));
    CHECK_ERRNO(mkdir(MNT "/d", 0755), EEXIST);
    char p[64];
    for (int i = 0; i < FILES; i++) {
        snprintf(p, sizeof p, MNT "/d/f%d", i);
        int fd = open(p, O_CREAT | O_WRONLY, 0644);
        CHECK(fd >= 0);
        CHECK_EQ(write(fd, p, strlen(p)), (ssize_t)strlen(p));
        CHECK_SYS(close(fd));
    }
    int dots;
    CHECK_EQ(list(MNT "/d", 100, &dots), FILES);
    CHECK_EQ(dots, 2);
    CHECK_EQ(list(MNT "/d", sizeof(char[512]), &dots), FILES);
    for (int i = 0; i < FILES; i++) {
        struct stat st;
        snprintf(p, sizeof p, MNT "/d/f%d", i);
        CHECK_SYS(stat(p, &st));
        CHECK_EQ(st.st_size, (off_t)strlen(p));
    }
    CHECK_ERRNO(rmdir(MNT "/d"), ENOTEMPTY);
    CHECK_SYS(rename(MNT "/d/f0", MNT "/moved"));
    CHECK_ERRNO(access(MNT "/d/f0", F_OK), ENOENT);
    CHECK_SYS(access(MNT "/moved", R_OK));
    CHECK_SYS(symlink("moved", MNT "/link"));
    char target[32] = {0};
    CHECK_EQ(readlink(MNT "/link", target, sizeof target), 5);
    CHECK(!strcmp(target, "moved"));
    struct stat st;
    CHECK_SYS(lstat(MNT "/link", &st));
    CHECK(S_ISLNK(st.st_mode));
    CHECK_SYS(stat(MNT "/link", &st));
    CHECK(S_ISREG(st.st_mode));
    for (int i = 1; i < FILES; i++) {
        snprintf(p, sizeof p, MNT "/d/f%d", i);
        CHECK_SYS(unlink(p));
    }
    CHECK_EQ(list(MNT "/d", 100, &dots), 0);
    CHECK_SYS(rmdir(MNT "/d"));
    CHECK_ERRNO(stat(MNT "/d", &st), ENOENT);
    CHECK_SYS(chmod(MNT "/moved", 0600));
    CHECK_SYS(stat(MNT "/moved", &st));
    CHECK_EQ(st.st_mode & 0777, 0600);
    SAY("directories: %d files listed once each in batches, rename, symlink, unlink, rmdir",
        FILES);
}

static void check_cwd(void)
{
    CHECK_SYS(mkdir(MNT "/w", 0755));
    CHECK_SYS(chdir(MNT "/w"));
    char cwd[128];
    CHECK(getcwd(cwd, sizeof cwd) != NULL);
    CHECK(!strcmp(cwd, MNT "/w"));
    int fd = open("rel", O_CREAT | O_WRONLY, 0644);
    CHECK(fd >= 0);
    CHECK_SYS(close(fd));
    CHECK_SYS(access(MNT "/w/rel", F_OK));
    CHECK_SYS(access("../w/rel", F_OK));
    CHECK_SYS(chdir(".."));
    CHECK(getcwd(cwd, sizeof cwd) != NULL);
    CHECK(!strcmp(cwd, MNT));
    CHECK_SYS(chdir(".."));
    CHECK(getcwd(cwd, sizeof cwd) != NULL);
    CHECK(!strcmp(cwd, "/mnt"));
    /* A relative path from NR-FS into the mount. */
    CHECK_SYS(access("hare/w/rel", F_OK));
    CHECK_SYS(chdir("/"));
    SAY("working directory inside, relative paths, .. out of the mount");
}

static void check_sharing(void)
{
    int fd = open(MNT "/shared", O_CREAT | O_RDWR | O_TRUNC, 0644);
    CHECK(fd >= 0);
    CHECK_EQ(write(fd, "parent.", 7), 7);
    int cpus[64];
    int ncpus = allowed_cpus(cpus, 64);
    pid_t kid = fork();
    CHECK(kid >= 0);
    if (kid == 0) {
        if (ncpus > 1)
            pin_self(cpus[ncpus - 1]);
        if (write(fd, "child.", 6) != 6)
            _exit(1);
        _exit(0);
    }
    CHECK_CHILD_EXIT(kid, 0);
    /* One description: the child's write moved this offset too. */
    CHECK_EQ(lseek(fd, 0, SEEK_CUR), 13);
    CHECK_SYS(close(fd));
    /* Close-to-open: another process opens after the close and reads it all. */
    kid = fork();
    CHECK(kid >= 0);
    if (kid == 0) {
        if (ncpus > 1)
            pin_self(cpus[ncpus - 1]);
        char b[32] = {0};
        int f = open(MNT "/shared", O_RDONLY);
        if (f < 0 || read(f, b, sizeof b) != 13 || strcmp(b, "parent.child."))
            _exit(2);
        _exit(0);
    }
    CHECK_CHILD_EXIT(kid, 0);
    SAY("a description shared across fork and cores; another process reads after close");
    if (ncpus < 2)
        return;
    /* Invalidation between the kernel's clients of two cores (§3.7.1-2): this core's client
     * caches "inv"; a process on another core renames it; the next lookup here misses. */
    pin_self(cpus[0]);
    fd = open(MNT "/inv", O_CREAT | O_WRONLY, 0644);
    CHECK(fd >= 0);
    CHECK_SYS(close(fd));
    struct stat st;
    CHECK_SYS(stat(MNT "/inv", &st));
    kid = fork();
    CHECK(kid >= 0);
    if (kid == 0) {
        pin_self(cpus[ncpus - 1]);
        _exit(rename(MNT "/inv", MNT "/inv2") == 0 ? 0 : 3);
    }
    CHECK_CHILD_EXIT(kid, 0);
    CHECK_ERRNO(stat(MNT "/inv", &st), ENOENT);
    CHECK_SYS(stat(MNT "/inv2", &st));
    char want[64];
    snprintf(want, sizeof want, "core %d client", cpus[0]);
    FILE *f = fopen("/proc/reef/hare", "r");
    CHECK(f != NULL);
    char line[512];
    long inval = -1;
    while (fgets(line, sizeof line, f)) {
        char *at = strstr(line, " invalidations ");
        if (!strncmp(line, want, strlen(want)) && at)
            inval = atol(at + strlen(" invalidations "));
    }
    fclose(f);
    CHECK(inval >= 1);
    SAY("a rename on core %d invalidated core %d's cached entry at once (%ld applied)",
        cpus[ncpus - 1], cpus[0], inval);
}

static void check_hostile(void)
{
    int fd = open(MNT "/moved", O_RDWR);
    CHECK(fd >= 0);
    CHECK_ERRNO(read(fd, NULL, 10), EFAULT);
    CHECK_ERRNO(write(fd, (void *)1, 10), EFAULT);
    CHECK_ERRNO(read(fd, (void *)0xffff800000000000ull, 10), EFAULT);
    CHECK_ERRNO(open((const char *)1, O_RDONLY), EFAULT);
    CHECK_ERRNO(rename(MNT "/moved", "/tmp/moved"), EXDEV);
    CHECK_ERRNO(rename("/test/haremount", MNT "/init"), EXDEV);
    struct stat st;
    CHECK_SYS(link(MNT "/moved", MNT "/hard"));
    CHECK_SYS(stat(MNT "/hard", &st));
    CHECK_EQ(st.st_nlink, 2);
    CHECK_SYS(unlink(MNT "/hard"));
    CHECK_ERRNO(link(MNT "/moved", "/tmp/hard"), EXDEV);
    char *argv[] = {"moved", NULL};
    CHECK_ERRNO(execve(MNT "/moved", argv, argv + 1), EACCES);
    char name[300];
    memset(name, 'n', sizeof name - 1);
    name[sizeof name - 1] = 0;
    char path[320];
    snprintf(path, sizeof path, MNT "/%s", name);
    CHECK_ERRNO(open(path, O_CREAT | O_RDWR, 0644), ENAMETOOLONG);
    CHECK_SYS(fstat(fd, &st));
    CHECK_EQ(st.st_size, (off_t)strlen(MNT "/d/f0"));
    char b[64] = {0};
    CHECK_EQ(read(fd, b, sizeof b), (ssize_t)strlen(MNT "/d/f0"));
    CHECK(!strcmp(b, MNT "/d/f0"));
    CHECK_SYS(close(fd));
    SAY("bad pointers, cross-mount rename and link, exec from Hare, long names: errors");
}

static void read_is(const char *path, const char *want)
{
    char b[64] = {0};
    int fd = open(path, O_RDONLY);
    if (fd < 0)
        FAIL("open %s: %s", path, strerror(errno));
    CHECK_EQ(read(fd, b, sizeof b - 1), (ssize_t)strlen(want));
    CHECK(!strcmp(b, want));
    CHECK_SYS(close(fd));
}

static void check_symlinks_across(void)
{
    struct stat st, bb;
    int fd = open(MNT "/across", O_CREAT | O_WRONLY | O_EXCL, 0644);
    CHECK(fd >= 0);
    CHECK_EQ(write(fd, "in hare", 7), 7);
    CHECK_SYS(close(fd));
    /* NR-FS into Hare: absolute, relative, a directory. */
    CHECK_SYS(symlink(MNT "/across", "/tmp/into"));
    CHECK_SYS(symlink("../mnt/hare/across", "/tmp/rel"));
    CHECK_SYS(symlink(MNT, "/tmp/hdir"));
    read_is("/tmp/into", "in hare");
    read_is("/tmp/rel", "in hare");
    read_is("/tmp/hdir/across", "in hare");
    CHECK_SYS(stat("/tmp/into", &st));
    CHECK(S_ISREG(st.st_mode) && st.st_size == 7);
    CHECK_SYS(lstat("/tmp/into", &st));
    CHECK(S_ISLNK(st.st_mode));
    CHECK_SYS(stat("/tmp/hdir", &st));
    CHECK(S_ISDIR(st.st_mode));
    CHECK_SYS(symlink(MNT "/made", "/tmp/dangling"));
    fd = open("/tmp/dangling", O_CREAT | O_WRONLY, 0644);
    CHECK(fd >= 0);
    CHECK_SYS(close(fd));
    CHECK_SYS(stat(MNT "/made", &st));
    CHECK_SYS(mkdir("/tmp/hdir/sub", 0755));
    CHECK_SYS(stat(MNT "/sub", &st));
    CHECK(S_ISDIR(st.st_mode));
    CHECK_SYS(rename("/tmp/hdir/made", "/tmp/hdir/sub/made2"));
    CHECK_SYS(stat(MNT "/sub/made2", &st));
    CHECK_ERRNO(rename("/tmp/hdir/across", "/tmp/moved-out"), EXDEV);
    CHECK_SYS(unlink("/tmp/hdir/sub/made2"));
    CHECK_SYS(rmdir("/tmp/hdir/sub"));
    CHECK_ERRNO(stat(MNT "/sub", &st), ENOENT);
    CHECK_SYS(chmod("/tmp/into", 0600));
    CHECK_SYS(stat(MNT "/across", &st));
    CHECK_EQ(st.st_mode & 07777, 0600);
    /* NR-FS into /proc. */
    CHECK_SYS(symlink("/proc/self", "/tmp/me"));
    CHECK_SYS(stat("/tmp/me/status", &st));
    /* Hare out to NR-FS, and back in. */
    CHECK_SYS(symlink("/bin/busybox", MNT "/true"));
    CHECK_SYS(symlink("/tmp", MNT "/nrfs"));
    CHECK_SYS(stat(MNT "/true", &st));
    CHECK_SYS(stat("/bin/busybox", &bb));
    CHECK(S_ISREG(st.st_mode) && st.st_size == bb.st_size && st.st_ino == bb.st_ino);
    char b[64] = {0};
    CHECK_EQ(readlink(MNT "/true", b, sizeof b), 12);
    CHECK_EQ(run_program(MNT "/true", NULL), 0);
    read_is(MNT "/nrfs/into", "in hare");
    CHECK_SYS(symlink("../../tmp/into", MNT "/up"));
    read_is(MNT "/up", "in hare");
    fd = open(MNT "/nrfs/made-in-nrfs", O_CREAT | O_WRONLY | O_EXCL, 0644);
    CHECK(fd >= 0);
    CHECK_SYS(close(fd));
    CHECK_SYS(unlink("/tmp/made-in-nrfs"));
    /* A mount point, by name or through a symlink, cannot be removed or renamed. */
    CHECK_SYS(symlink("/mnt", "/tmp/mnt"));
    CHECK_ERRNO(rmdir(MNT), EBUSY);
    CHECK_ERRNO(rmdir("/tmp/mnt/hare"), EBUSY);
    CHECK_ERRNO(rename("/tmp/mnt/hare", "/tmp/mnt/gone"), EBUSY);
    CHECK_SYS(mkdir("/tmp/spare", 0755));
    CHECK_ERRNO(rename("/tmp/spare", "/tmp/mnt/hare"), EBUSY);
    CHECK_SYS(rmdir("/tmp/spare"));
    CHECK_SYS(stat("/tmp/mnt/hare/nrfs", &st));
    /* A loop across the two. */
    CHECK_SYS(symlink(MNT "/loopb", "/tmp/loopa"));
    CHECK_SYS(symlink("/tmp/loopa", MNT "/loopb"));
    CHECK_ERRNO(open("/tmp/loopa", O_RDONLY), ELOOP);
    CHECK_ERRNO(stat(MNT "/loopb", &st), ELOOP);
    const char *links[] = {"/tmp/into", "/tmp/rel",  "/tmp/hdir",     "/tmp/dangling", "/tmp/me",
                           "/tmp/loopa", MNT "/true", MNT "/nrfs", MNT "/loopb", MNT "/up",
                           "/tmp/mnt"};
    for (size_t i = 0; i < sizeof links / sizeof links[0]; i++)
        CHECK_SYS(unlink(links[i]));
    CHECK_SYS(unlink(MNT "/across"));
    SAY("symlinks across mounts: NR-FS into Hare and /proc, Hare out to NR-FS, a mount point "
        "busy, a loop ELOOP");
}

static void check_busybox(void)
{
    CHECK_EQ(run_program("/bin/sh", "-c",
                         "cd " MNT " && echo one > s.txt && grep -q one s.txt && "
                         "cp s.txt t.txt && mv t.txt u.txt && ls | grep -q u.txt && "
                         "cat u.txt | grep -q one && rm u.txt s.txt && ! ls u.txt 2>/dev/null",
                         NULL),
             0);
    SAY("busybox sh, echo, grep, cp, mv, ls, cat and rm on the mount");

    /* Programs run from the mount: a static binary copied there and a script. */
    CHECK_EQ(run_program("/bin/cp", "/test/hello", MNT "/hello", NULL), 0);
    CHECK_SYS(chmod(MNT "/hello", 0644));
    CHECK_EQ(run_program(MNT "/hello", NULL), 126); /* no execute bit: EACCES */
    CHECK_SYS(chmod(MNT "/hello", 0755));
    CHECK_EQ(run_program(MNT "/hello", NULL), 0);
    int fd = open(MNT "/script", O_CREAT | O_WRONLY | O_TRUNC, 0755);
    CHECK(fd >= 0);
    const char *script = "#!/bin/sh\nexec " MNT "/hello from-script\n";
    CHECK_EQ(write(fd, script, strlen(script)), (ssize_t)strlen(script));
    CHECK_SYS(close(fd));
    CHECK_EQ(run_program(MNT "/script", NULL), 0);
    CHECK_SYS(unlink(MNT "/script"));
    CHECK_SYS(unlink(MNT "/hello"));
    SAY("a program and a #! script executed from the mount");
}

int main(void)
{
    test_begin("haremount");
    if (!on_reef()) {
        CHECK(mount("none", "/", "hare", 0, NULL) != 0);
        SAY("not Reef: mount -t hare answers %s", strerror(errno));
        PASS();
    }
    CHECK(mkdir("/mnt", 0755) == 0 || errno == EEXIST);
    CHECK(mkdir(MNT, 0755) == 0 || errno == EEXIST);
    CHECK_ERRNO(mount("none", MNT, "hare", 0, NULL), ENODEV);
    long free_before = reef_free_memory(NULL);
    /* With three cores or more, one is left to programs besides core 0, so that the kernel's
     * clients of two cores meet (split placement takes the others). */
    char list[64];
    int servers = hare_fleet_start(list, sizeof list, (int)sysconf(_SC_NPROCESSORS_ONLN) - 2);
    SAY("fleet/hare: %d file servers on cores %s", servers, list);

    CHECK_ERRNO(mount("none", MNT, "nosuchfs", 0, NULL), ENODEV);
    CHECK_ERRNO(mount("none", MNT, "hare", 0, "cache=0"), EINVAL);
    CHECK_ERRNO(mount("none", MNT, "hare", 0, "colour=blue"), EINVAL);
    CHECK_ERRNO(mount("none", "/test/haremount", "hare", 0, NULL), ENOTDIR);
    CHECK_ERRNO(mount("none", "/", "hare", 0, NULL), EBUSY);
    CHECK_ERRNO(mount("none", MNT, "hare", 0, "root"), EINVAL);
    CHECK_ERRNO(mount("none", MNT, "hare", MS_REMOUNT, NULL), EINVAL);
    CHECK_ERRNO(mount("none", MNT, (const char *)1, 0, NULL), EFAULT);
    CHECK_ERRNO(mount("none", (const char *)1, "hare", 0, NULL), EFAULT);
    CHECK_ERRNO(mount("none", MNT, "hare", 0, (const void *)0xffff800000000000ull), EFAULT);
    CHECK_ERRNO(mount("none", MNT, "hare", 0, "cache=257"), EINVAL);
    CHECK_ERRNO(mount("none", MNT, "hare", 0, "cache=99999999999999999999999"), EINVAL);
    CHECK_ERRNO(umount((const char *)1), EFAULT);
    CHECK_ERRNO(umount(MNT), EINVAL);
    CHECK_SYS(mount("none", MNT, "hare", 0, "cache=16"));
    CHECK_ERRNO(mount("none", "/tmp", "hare", 0, NULL), EBUSY);
    CHECK(file_has("/proc/mounts", "hare " MNT " hare rw,cache=16M"));
    CHECK(file_has("/proc/reef/hare", "mounted at " MNT));
    struct stat st;
    CHECK_SYS(stat(MNT, &st));
    CHECK(S_ISDIR(st.st_mode));
    SAY("mounted: errors for a second mount, other types, bad options and targets");

    check_data();
    check_space();
    check_permissions();
    check_no_user_clients();
    check_dirs();
    check_cwd();
    check_sharing();
    check_hostile();
    check_symlinks_across();
    check_busybox();

    int fd = open(MNT "/moved", O_RDONLY);
    CHECK(fd >= 0);
    CHECK_ERRNO(umount(MNT), EBUSY);
    CHECK_ERRNO(umount("/tmp"), EINVAL);
    CHECK_SYS(close(fd));
    CHECK_SYS(umount(MNT));
    CHECK_ERRNO(stat(MNT "/moved", &st), ENOENT);
    CHECK(!file_has("/proc/mounts", "hare"));
    /* The servers keep the first mount's cache, which holds the data: a new mount of the
     * same servers takes it again (whatever cache= says). */
    CHECK_SYS(mount("none", MNT, "hare", 0, "cache=32"));
    CHECK(file_has("/proc/mounts", "hare " MNT " hare rw,cache=16M"));
    fd = open(MNT "/moved", O_RDONLY);
    CHECK(fd >= 0);
    char b[64] = {0};
    CHECK_EQ(read(fd, b, sizeof b), (ssize_t)strlen(MNT "/d/f0"));
    CHECK(!strcmp(b, MNT "/d/f0"));
    CHECK_SYS(close(fd));
    CHECK_SYS(umount(MNT));
    SAY("umount refused while a file is open, then done; a new mount finds the files and data");

    /* The §5.4 ablations and `distribute`: listed, and the file system the same through them
     * (a directory asked to be distributed, S_DISTRIBUTED, is made undistributed by nodist). */
    CHECK_ERRNO(mount("none", MNT, "hare", 0, "nocache"), EINVAL);
    CHECK_ERRNO(mount("none", MNT, "hare", 0, "nodist=1"), EINVAL);
    CHECK_ERRNO(mount("none", MNT, "hare", 0, "exec=far"), EINVAL);
    CHECK_ERRNO(mount("none", MNT, "hare", 0, "mode=8"), EINVAL);
    CHECK_ERRNO(mount("none", MNT, "hare", 0, "mode=17777"), EINVAL);
    CHECK_ERRNO(mount("none", MNT, "hare", 0, "mode="), EINVAL);
    /* mode= sets the root's permission bits, as tmpfs's does. */
    CHECK_SYS(mount("none", MNT, "hare", 0, "mode=1777"));
    CHECK(file_has("/proc/mounts", "hare " MNT " hare rw,cache=16M,mode=1777 0 0"));
    CHECK_SYS(stat(MNT, &st));
    CHECK_EQ(st.st_mode & 07777, 01777);
    CHECK_SYS(umount(MNT));
    CHECK_SYS(mount("none", MNT, "hare", 0,
                    "noaffinity,nolookupcache,nobcast,nodist,distribute,nodirect,exec=random"));
    CHECK(file_has("/proc/mounts", "hare " MNT " hare rw,cache=16M,distribute,nodist,nobcast,"
                                   "nolookupcache,noaffinity,nodirect,exec=random 0 0"));
    fd = CHECK_SYS(open(MNT "/moved", O_RDONLY));
    memset(b, 0, sizeof b);
    CHECK_EQ(read(fd, b, sizeof b), (ssize_t)strlen(MNT "/d/f0"));
    CHECK(!strcmp(b, MNT "/d/f0"));
    CHECK_SYS(close(fd));
    CHECK_SYS(mkdir(MNT "/spread", 0755 | 0200000));
    CHECK_SYS(close(CHECK_SYS(open(MNT "/spread/a", O_CREAT | O_WRONLY, 0644))));
    CHECK_SYS(stat(MNT "/spread/a", &st));
    CHECK_SYS(stat(MNT "/moved", &st));
    CHECK_SYS(unlink(MNT "/spread/a"));
    CHECK_SYS(rmdir(MNT "/spread"));
    CHECK_SYS(umount(MNT));
    SAY("the ablation options are listed in /proc/mounts and change no answer");

    hare_fleet_stop(free_before);
    PASS();
}
