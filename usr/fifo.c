/*
 * fifo: FIFOs (named pipes) as Linux has them.
 *
 * - making: mkfifo (mknodat) gives S_IFIFO with the mode less the umask in stat, lstat,
 *   statx, fstat of an open end (the same inode) and getdents (DT_FIFO); execve of one is
 *   EACCES without waiting for a writer (in Hare it opened it first); EEXIST, ENOENT,
 *   ENOTDIR; mknod of type 0 or S_IFREG makes a regular file, a directory type is EPERM, an
 *   unknown type EINVAL; a character or block device is EPERM for user 1000 (a forked child
 *   after setuid, when this runs as root), who also may not open root's 0600 FIFO (EACCES);
 *   on Reef root may make a character device (S_IFSOCK is EPERM there; Linux makes a socket)
 *   except in Hare (EPERM: its servers keep no devices; the suite runs there too);
 *   EFAULT for bad path pointers (user page 8, the kernel half);
 * - opening: a blocking reader and a blocking writer in two processes (the writer pinned to
 *   the last CPU) find each other whichever comes first, 200 KiB pass in order, then end of
 *   file; O_RDONLY|O_NONBLOCK succeeds alone and reads 0, O_WRONLY|O_NONBLOCK without a
 *   reader is ENXIO, O_RDWR succeeds alone; O_CREAT on a FIFO opens it, O_TRUNC is ignored;
 *   a blocked open (either side) ends with EINTR on a handled signal (no SA_RESTART), and
 *   leaves no end behind, but not when its peer came before the signal (a writer that opens,
 *   writes and exits at once, its SIGCHLD handled);
 * - using: poll (POLLIN, POLLOUT, POLLHUP only once a writer came and went, POLLERR without
 *   readers), EPIPE and SIGPIPE without readers, lseek and pread ESPIPE, FIONREAD; unlinked
 *   while open it keeps working; bytes left when the last end closes are gone at the next
 *   open (EAGAIN with a writer, 0 without);
 * - hostile: 2000 FIFOs made, opened (500 at a time, each holding data), closed and unlinked
 *   keep no memory on Reef.
 */
#include "reef-test.h"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/time.h>

static char dir[64];

static char *at(const char *name)
{
    static char buf[4][128];
    static int i;
    char *b = buf[i++ % 4];
    snprintf(b, sizeof buf[0], "%s/%s", dir, name);
    return b;
}

static short revents(int fd, short events)
{
    struct pollfd p = {.fd = fd, .events = events};
    CHECK_SYS(poll(&p, 1, 0));
    return p.revents;
}

static volatile sig_atomic_t signals;

static void count(int sig)
{
    (void)sig;
    signals++;
}

static void making(void)
{
    umask(022);
    CHECK_SYS(mkfifo(at("p"), 0666));
    struct stat st, lst, fst;
    CHECK_SYS(stat(at("p"), &st));
    CHECK(S_ISFIFO(st.st_mode));
    CHECK_EQ(st.st_mode, S_IFIFO | 0644);
    CHECK_EQ(st.st_size, 0);
    CHECK_EQ(st.st_nlink, 1);
    CHECK_EQ(st.st_uid, getuid());
    CHECK_SYS(lstat(at("p"), &lst));
    CHECK_EQ(lst.st_ino, st.st_ino);
    CHECK_EQ(lst.st_mode, S_IFIFO | 0644);
    /* statx's mode at offset 28 of its 256-byte answer (STATX_TYPE | STATX_MODE). */
    unsigned char sx[256];
    CHECK_SYS(syscall(SYS_statx, AT_FDCWD, at("p"), 0, 3, sx));
    uint16_t sx_mode;
    memcpy(&sx_mode, sx + 28, 2);
    CHECK_EQ(sx_mode, S_IFIFO | 0644);
    int fd = CHECK_SYS(open(at("p"), O_RDWR));
    CHECK_SYS(fstat(fd, &fst));
    CHECK_EQ(fst.st_mode, S_IFIFO | 0644);
    CHECK_EQ(fst.st_ino, st.st_ino);
    CHECK_EQ(fst.st_dev, st.st_dev);
    CHECK_SYS(close(fd));
    DIR *d = opendir(dir);
    CHECK(d != NULL);
    struct dirent *e;
    int found = 0;
    while ((e = readdir(d)) != NULL)
        if (strcmp(e->d_name, "p") == 0) {
            CHECK_EQ(e->d_type, DT_FIFO);
            CHECK_EQ(e->d_ino, st.st_ino);
            found++;
        }
    closedir(d);
    CHECK_EQ(found, 1);
    SAY("mkfifo: S_IFIFO|0644 (umask 022) in stat, lstat, statx, fstat, getdents");

    /* execve of a FIFO is EACCES at once, execute bits or not: no open waits for a writer. */
    CHECK_SYS(chmod(at("p"), 0755));
    char *exec_argv[] = {at("p"), NULL};
    CHECK_ERRNO(execve(exec_argv[0], exec_argv, environ), EACCES);
    CHECK_SYS(chmod(at("p"), 0644));
    SAY("execve of a FIFO with execute bits: EACCES, without waiting");

    CHECK_ERRNO(mkfifo(at("p"), 0600), EEXIST);
    CHECK_SYS(close(CHECK_SYS(open(at("file"), O_WRONLY | O_CREAT, 0600))));
    CHECK_ERRNO(mkfifo(at("file"), 0600), EEXIST);
    CHECK_ERRNO(mkfifo(at("missing/p"), 0600), ENOENT);
    CHECK_ERRNO(mkfifo(at("file/p"), 0600), ENOTDIR);
    CHECK_ERRNO(mkfifo("", 0600), ENOENT);
    CHECK_ERRNO(mknod(at("p"), S_IFIFO | 0600, 0), EEXIST);
    CHECK_SYS(mknod(at("reg"), S_IFREG | 0666, 0));
    CHECK_SYS(stat(at("reg"), &st));
    CHECK_EQ(st.st_mode, S_IFREG | 0644);
    CHECK_EQ(st.st_size, 0);
    CHECK_SYS(mknod(at("reg0"), 0640, 0));
    CHECK_SYS(stat(at("reg0"), &st));
    CHECK_EQ(st.st_mode, S_IFREG | 0640);
    CHECK_ERRNO(mknod(at("reg"), S_IFREG | 0600, 0), EEXIST);
    CHECK_ERRNO(mknod(at("bad"), S_IFMT | 0600, 0), EINVAL);
    CHECK_ERRNO(mknod(at("bad"), 0030000 | 0600, 0), EINVAL);
    CHECK_ERRNO(mknod(at("bad"), S_IFLNK | 0600, 0), EINVAL);
    CHECK_ERRNO(mknod(at("bad"), S_IFDIR | 0700, 0), EPERM);
    CHECK_ERRNO(stat(at("bad"), &st), ENOENT);
    CHECK_SYS(mknodat(AT_FDCWD, at("q"), S_IFIFO | 0777, 0));
    CHECK_SYS(stat(at("q"), &st));
    CHECK_EQ(st.st_mode, S_IFIFO | 0755);
    CHECK_SYS(unlink(at("q")));
    CHECK_ERRNO(stat(at("q"), &st), ENOENT);
    SAY("EEXIST, ENOENT, ENOTDIR; mknod of S_IFREG and type 0 make files; S_IFDIR EPERM, "
        "unknown types EINVAL");

    /* Devices, and the checks of another user. */
    int as_root = getuid() == 0;
    if (as_root)
        CHECK_SYS(chmod(dir, 0777));
    CHECK_SYS(mkfifo(at("private"), 0600));
    pid_t pid = CHECK_SYS(fork());
    if (pid == 0) {
        if (as_root)
            CHECK_SYS(setuid(1000));
        CHECK_ERRNO(mknod(at("chr"), S_IFCHR | 0600, makedev(1, 3)), EPERM);
        CHECK_ERRNO(mknod(at("blk"), S_IFBLK | 0600, makedev(7, 0)), EPERM);
        CHECK_ERRNO(mknod(at("p"), S_IFCHR | 0600, makedev(1, 3)), EEXIST);
        if (as_root) {
            CHECK_ERRNO(open(at("private"), O_RDONLY | O_NONBLOCK), EACCES);
            CHECK_ERRNO(open(at("private"), O_WRONLY | O_NONBLOCK), EACCES);
            CHECK_SYS(mkfifo(at("mine"), 0600));
            struct stat m;
            CHECK_SYS(stat(at("mine"), &m));
            CHECK_EQ(m.st_uid, 1000);
            CHECK_SYS(unlink(at("mine")));
        }
        _exit(0);
    }
    CHECK_CHILD_EXIT(pid, 0);
    CHECK_SYS(unlink(at("private")));
    if (as_root)
        CHECK_SYS(chmod(dir, 0755));
    SAY("devices EPERM for %s%s", as_root ? "user 1000" : "this user",
        as_root ? "; EACCES for root's 0600 FIFO, its own FIFO owned by it" : "");
    if (in_hare(dir)) {
        /* Hare's servers keep files, directories, symlinks and FIFOs only. */
        CHECK_ERRNO(mknod(at("null"), S_IFCHR | 0666, makedev(1, 3)), EPERM);
        CHECK_ERRNO(mknod(at("blk"), S_IFBLK | 0600, makedev(7, 0)), EPERM);
        SAY("Reef, in Hare: devices EPERM, whoever makes them");
    } else if (on_reef()) {
        CHECK_SYS(mknod(at("null"), S_IFCHR | 0666, makedev(1, 3)));
        CHECK_SYS(stat(at("null"), &st));
        CHECK(S_ISCHR(st.st_mode));
        CHECK_EQ(st.st_rdev, makedev(1, 3));
        int n = CHECK_SYS(open(at("null"), O_RDWR));
        char c;
        CHECK_EQ(read(n, &c, 1), 0);
        CHECK_EQ(write(n, "x", 1), 1);
        CHECK_SYS(close(n));
        CHECK_SYS(unlink(at("null")));
        CHECK_ERRNO(mknod(at("sock"), S_IFSOCK | 0600, 0), EPERM);
        CHECK_ERRNO(mknod(at("blk"), S_IFBLK | 0600, makedev(7, 0)), EPERM);
        SAY("Reef: root makes a character device (/dev/null's number works); block devices "
            "and sockets EPERM");
    }

    void *low = (void *)8, *kernel = (void *)0xffff800000000000UL;
    CHECK_ERRNO(syscall(SYS_mknodat, AT_FDCWD, low, S_IFIFO | 0600, 0), EFAULT);
    CHECK_ERRNO(syscall(SYS_mknodat, AT_FDCWD, kernel, S_IFIFO | 0600, 0), EFAULT);
    CHECK_ERRNO(syscall(SYS_mknod, low, S_IFIFO | 0600, 0), EFAULT);
    CHECK_ERRNO(syscall(SYS_mknod, kernel, S_IFREG | 0600, 0), EFAULT);
    CHECK_ERRNO(syscall(SYS_mknodat, -1, "relative", S_IFIFO | 0600, 0), EBADF);
    CHECK_ERRNO(syscall(SYS_open, kernel, O_RDONLY | O_NONBLOCK), EFAULT);
    SAY("EFAULT for bad path pointers, EBADF for a bad dirfd");
}

/* A writer in a child on the last CPU and a reader here meet through the FIFO; `writer_first`
 * makes the child open first (the parent waits for its word on a pipe: the child's open then
 * blocks until the reader comes), else the reader opens first and blocks. */
static void stream(int writer_first)
{
    enum { TOTAL = 200 * 1024 };
    int cpus[64];
    int n = allowed_cpus(cpus, 64);
    int sync[2];
    CHECK_SYS(pipe(sync));
    pid_t pid = CHECK_SYS(fork());
    if (pid == 0) {
        pin_self(cpus[n - 1]);
        close(sync[0]);
        if (writer_first)
            CHECK_EQ(write(sync[1], "w", 1), 1);
        int w = CHECK_SYS(open(at("p"), O_WRONLY));
        static unsigned char buf[TOTAL];
        for (int i = 0; i < TOTAL; i++)
            buf[i] = (unsigned char)(i * 7 + i / 251);
        for (int done = 0; done < TOTAL;) {
            int chunk = TOTAL - done < 3000 ? TOTAL - done : 3000;
            done += CHECK_SYS(write(w, buf + done, chunk));
        }
        _exit(0);
    }
    close(sync[1]);
    char c;
    if (writer_first)
        CHECK_EQ(read(sync[0], &c, 1), 1);
    close(sync[0]);
    int r = CHECK_SYS(open(at("p"), O_RDONLY));
    static unsigned char got[TOTAL + 1];
    int total = 0;
    for (;;) {
        ssize_t k = read(r, got + total, sizeof got - total);
        if (k < 0 && errno == EINTR)
            continue;
        CHECK(k >= 0);
        if (k == 0)
            break;
        total += k;
    }
    CHECK_EQ(total, TOTAL);
    for (int i = 0; i < TOTAL; i++)
        if (got[i] != (unsigned char)(i * 7 + i / 251))
            FAIL("byte %d is %d", i, got[i]);
    CHECK_EQ(read(r, &c, 1), 0);
    CHECK_CHILD_EXIT(pid, 0);
    CHECK_EQ(read(r, &c, 1), 0);
    CHECK_SYS(close(r));
}

/* A writer that opens, writes a byte and exits at once, while this process waits in its open
 * with a SIGCHLD handler without SA_RESTART: the writer's open ended the wait before its exit
 * sent SIGCHLD, so the open succeeds (as a shell's `cat < fifo` with `echo x > fifo &`). */
static void quick_writer(void)
{
    set_handler(SIGCHLD, count, 0);
    signals = 0;
    pid_t pid = CHECK_SYS(fork());
    if (pid == 0) {
        int w = CHECK_SYS(open(at("p"), O_WRONLY));
        CHECK_EQ(write(w, "q", 1), 1);
        _exit(0);
    }
    int r = CHECK_SYS(open(at("p"), O_RDONLY));
    char buf[4];
    ssize_t n;
    while ((n = read(r, buf, sizeof buf)) < 0 && errno == EINTR)
        ;
    CHECK_EQ(n, 1);
    CHECK_EQ(buf[0], 'q');
    while ((n = read(r, buf, sizeof buf)) < 0 && errno == EINTR)
        ;
    CHECK_EQ(n, 0);
    CHECK_CHILD_EXIT(pid, 0);
    CHECK_SYS(close(r));
    set_handler(SIGCHLD, SIG_DFL, 0);
}

static void opening(void)
{
    stream(0);
    SAY("reader opened first and waited; 200 KiB from a writer on the last CPU, then EOF");
    stream(1);
    SAY("writer opened first and waited; the same");
    for (int i = 0; i < 20; i++)
        quick_writer();
    SAY("a writer that opens, writes and exits at once: the reader's open succeeds despite "
        "SIGCHLD (20 times)");

    char c;
    int r = CHECK_SYS(open(at("p"), O_RDONLY | O_NONBLOCK));
    CHECK_EQ(read(r, &c, 1), 0);
    /* No writer has come yet: no POLLHUP (Linux keeps the writers it saw at the open). */
    CHECK_EQ(revents(r, POLLIN), 0);
    int flags = CHECK_SYS(fcntl(r, F_GETFL));
    CHECK_EQ(flags & (O_ACCMODE | O_NONBLOCK), O_RDONLY | O_NONBLOCK);
    int w = CHECK_SYS(open(at("p"), O_WRONLY | O_NONBLOCK));
    CHECK_EQ(revents(w, POLLOUT), POLLOUT);
    CHECK_EQ(revents(r, POLLIN), 0);
    CHECK_ERRNO(read(r, &c, 1), EAGAIN);
    CHECK_EQ(write(w, "hello", 5), 5);
    CHECK_EQ(revents(r, POLLIN), POLLIN);
    int avail = 0;
    CHECK_SYS(ioctl(r, FIONREAD, &avail));
    CHECK_EQ(avail, 5);
    /* O_CREAT opens the FIFO; O_TRUNC changes nothing. */
    int w2 = CHECK_SYS(open(at("p"), O_WRONLY | O_CREAT | O_TRUNC | O_NONBLOCK, 0600));
    CHECK_SYS(ioctl(r, FIONREAD, &avail));
    CHECK_EQ(avail, 5);
    CHECK_ERRNO(open(at("p"), O_WRONLY | O_CREAT | O_EXCL, 0600), EEXIST);
    CHECK_SYS(close(w));
    CHECK_SYS(close(w2));
    CHECK_EQ(revents(r, POLLIN), POLLIN | POLLHUP);
    char buf[16];
    CHECK_EQ(read(r, buf, sizeof buf), 5);
    CHECK(memcmp(buf, "hello", 5) == 0);
    CHECK_EQ(read(r, buf, sizeof buf), 0);
    CHECK_EQ(revents(r, POLLIN), POLLHUP);
    CHECK_SYS(close(r));
    SAY("O_RDONLY|O_NONBLOCK alone reads 0; poll POLLIN, POLLOUT, POLLHUP once a writer came "
        "and went; O_CREAT opens it, O_TRUNC ignored, FIONREAD");

    CHECK_ERRNO(open(at("p"), O_WRONLY | O_NONBLOCK), ENXIO);
    int rw = CHECK_SYS(open(at("p"), O_RDWR));
    CHECK_EQ(revents(rw, POLLIN | POLLOUT), POLLOUT);
    CHECK_EQ(write(rw, "abc", 3), 3);
    CHECK_EQ(revents(rw, POLLIN | POLLOUT), POLLIN | POLLOUT);
    w = CHECK_SYS(open(at("p"), O_WRONLY | O_NONBLOCK)); /* rw is a reader */
    CHECK_EQ(read(rw, buf, sizeof buf), 3);
    CHECK(memcmp(buf, "abc", 3) == 0);
    CHECK_SYS(close(w));
    CHECK_SYS(close(rw));
    SAY("O_WRONLY|O_NONBLOCK without a reader ENXIO; O_RDWR alone reads its own bytes");

    /* Blocked opens ended by a handled signal: a 20 ms interval timer keeps interrupting, so
     * the open is interrupted however late it starts to wait. */
    set_handler(SIGALRM, count, 0);
    struct itimerval every = {{0, 20000}, {0, 20000}}, off = {{0, 0}, {0, 0}};
    signals = 0;
    CHECK_SYS(setitimer(ITIMER_REAL, &every, NULL));
    CHECK_ERRNO(open(at("p"), O_RDONLY), EINTR);
    CHECK_ERRNO(open(at("p"), O_WRONLY), EINTR);
    CHECK_SYS(setitimer(ITIMER_REAL, &off, NULL));
    CHECK(signals >= 2);
    /* Neither left an end: no reader for a writer, no writer for a reader. */
    CHECK_ERRNO(open(at("p"), O_WRONLY | O_NONBLOCK), ENXIO);
    r = CHECK_SYS(open(at("p"), O_RDONLY | O_NONBLOCK));
    CHECK_EQ(read(r, &c, 1), 0);
    CHECK_SYS(close(r));
    set_handler(SIGALRM, SIG_DFL, 0);
    SAY("blocked O_RDONLY and O_WRONLY opens end with EINTR on a handled signal, no end left");
}

static void using(void)
{
    char c, buf[16];
    /* EPIPE and SIGPIPE once the readers are gone. */
    int r = CHECK_SYS(open(at("p"), O_RDONLY | O_NONBLOCK));
    int w = CHECK_SYS(open(at("p"), O_WRONLY | O_NONBLOCK));
    CHECK_SYS(close(r));
    CHECK_EQ(revents(w, POLLOUT), POLLOUT | POLLERR);
    set_handler(SIGPIPE, count, 0);
    signals = 0;
    CHECK_ERRNO(write(w, "x", 1), EPIPE);
    CHECK_EQ(signals, 1);
    set_handler(SIGPIPE, SIG_DFL, 0);
    CHECK_SYS(close(w));
    SAY("EPIPE and SIGPIPE without readers, POLLERR");

    /* lseek and pread: ESPIPE. */
    r = CHECK_SYS(open(at("p"), O_RDONLY | O_NONBLOCK));
    w = CHECK_SYS(open(at("p"), O_WRONLY));
    CHECK_ERRNO(lseek(r, 0, SEEK_SET), ESPIPE);
    CHECK_ERRNO(lseek(w, 0, SEEK_CUR), ESPIPE);
    CHECK_ERRNO(pread(r, buf, 1, 0), ESPIPE);
    CHECK_ERRNO(pwrite(w, "x", 1, 0), ESPIPE);
    CHECK_ERRNO(ftruncate(w, 0), EINVAL);
    CHECK_ERRNO(truncate(at("p"), 0), EINVAL);
    SAY("lseek, pread, pwrite ESPIPE; truncate EINVAL");

    /* Unlinked while open: keeps working, fstat shows no name. */
    struct stat st;
    CHECK_SYS(unlink(at("p")));
    CHECK_ERRNO(stat(at("p"), &st), ENOENT);
    CHECK_EQ(write(w, "still", 5), 5);
    CHECK_EQ(read(r, buf, sizeof buf), 5);
    CHECK(memcmp(buf, "still", 5) == 0);
    CHECK_SYS(fstat(w, &st));
    CHECK(S_ISFIFO(st.st_mode));
    CHECK_EQ(st.st_nlink, 0);
    /* A new FIFO of the same name is another pipe. */
    CHECK_SYS(mkfifo(at("p"), 0600));
    int r2 = CHECK_SYS(open(at("p"), O_RDONLY | O_NONBLOCK));
    CHECK_EQ(write(w, "old", 3), 3);
    CHECK_EQ(read(r2, &c, 1), 0);
    CHECK_SYS(close(r2));
    CHECK_EQ(read(r, buf, sizeof buf), 3);
    CHECK_SYS(close(w));
    CHECK_EQ(read(r, buf, sizeof buf), 0);
    CHECK_SYS(close(r));
    SAY("unlinked while open it keeps working (nlink 0); a new FIFO of that name is apart");

    /* Bytes left at the last close are gone. */
    int rw = CHECK_SYS(open(at("p"), O_RDWR));
    CHECK_EQ(write(rw, "left", 4), 4);
    CHECK_SYS(close(rw));
    r = CHECK_SYS(open(at("p"), O_RDONLY | O_NONBLOCK));
    CHECK_EQ(read(r, buf, sizeof buf), 0);
    w = CHECK_SYS(open(at("p"), O_WRONLY | O_NONBLOCK));
    CHECK_ERRNO(read(r, buf, sizeof buf), EAGAIN);
    CHECK_SYS(close(w));
    CHECK_SYS(close(r));
    SAY("bytes left at the last close are gone: 0 without a writer, EAGAIN with one");
}

/* 2000 FIFOs made, opened, filled, closed and unlinked, 500 at a time: on Reef the free
 * memory comes back. */
static void hostile(void)
{
    enum { ROUNDS = 4, AT_ONCE = 500 };
    static int fds[AT_ONCE];
    char data[1000];
    memset(data, 'f', sizeof data);
    long before = reef_free_bytes();
    for (int round = 0; round < ROUNDS; round++) {
        char name[32];
        for (int i = 0; i < AT_ONCE; i++) {
            snprintf(name, sizeof name, "many%d", i);
            CHECK_SYS(mkfifo(at(name), 0600));
            fds[i] = CHECK_SYS(open(at(name), O_RDWR | O_NONBLOCK));
            CHECK_EQ(write(fds[i], data, sizeof data), (ssize_t)sizeof data);
        }
        for (int i = 0; i < AT_ONCE; i++) {
            snprintf(name, sizeof name, "many%d", i);
            if (i % 2)
                CHECK_SYS(unlink(at(name)));
            CHECK_SYS(close(fds[i]));
            if (i % 2 == 0)
                CHECK_SYS(unlink(at(name)));
        }
    }
    CHECK_MEMORY_BACK(before, "2000 FIFOs made, opened with data, closed and unlinked");
}

int main(void)
{
    test_begin("fifo");
    snprintf(dir, sizeof dir, "/tmp/fifo.%d", getpid());
    CHECK_SYS(mkdir(dir, 0755));
    making();
    opening();
    using();
    hostile();
    CHECK_SYS(unlink(at("p")));
    CHECK_SYS(unlink(at("file")));
    CHECK_SYS(unlink(at("reg")));
    CHECK_SYS(unlink(at("reg0")));
    CHECK_SYS(rmdir(dir));
    PASS();
}
