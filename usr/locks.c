/*
 * locks: advisory file locks as Linux keeps them, between processes and descriptions.
 *
 * - fcntl record locks: a write lock shuts out another process's read and write locks on the
 *   range (EAGAIN) but not beside it; F_GETLK reports the holder's type, range and pid; a lock
 *   runs to the end of the file with l_len 0; unlocking the middle of a range splits it;
 *   F_SETLKW waits until the holder lets go (the waiter cannot have it meanwhile); a process's
 *   locks go when it closes any descriptor of the file and when it exits;
 * - open file description locks (F_OFD_*): two descriptions conflict even in one process, and
 *   with that process's own POSIX locks; closing the description lets go;
 * - flock: exclusive and shared per description (EWOULDBLOCK with LOCK_NB), conversion, apart
 *   from fcntl locks;
 * - deadlock: two processes each holding a lock and waiting for the other's: exactly one of
 *   the two F_SETLKW requests (the one that would close the cycle) fails with EDEADLK, and the
 *   other is granted once that one lets go;
 * - errors: EBADF for a write lock through a read-only descriptor, EINVAL for a bad type,
 *   a range before the start of the file, an OFD request with l_pid set, a bad flock op.
 */
#include "reef-test.h"

#include <fcntl.h>
#include <sys/file.h>

static char path[64];

static int lk(int fd, int cmd, short type, off_t start, off_t len)
{
    struct flock fl = {.l_type = type, .l_whence = SEEK_SET, .l_start = start, .l_len = len};
    return fcntl(fd, cmd, &fl);
}

/* In a child: the lock request's errno (0: granted). */
static int child_try(short type, off_t start, off_t len)
{
    int fd = open(path, O_RDWR);
    if (fd < 0)
        _exit(100);
    return lk(fd, F_SETLK, type, start, len) == 0 ? 0 : errno;
}

/* Runs `try` in a child and returns its exit status. */
static int in_child(short type, off_t start, off_t len)
{
    pid_t pid = CHECK_SYS(fork());
    if (pid == 0)
        _exit(child_try(type, start, len));
    int status;
    CHECK_SYS(waitpid(pid, &status, 0));
    CHECK(WIFEXITED(status));
    return WEXITSTATUS(status);
}

static void records(int fd)
{
    CHECK_SYS(lk(fd, F_SETLK, F_WRLCK, 0, 100));
    CHECK_EQ(in_child(F_RDLCK, 50, 10), EAGAIN);
    CHECK_EQ(in_child(F_WRLCK, 99, 1), EAGAIN);
    CHECK_EQ(in_child(F_WRLCK, 100, 50), 0);
    /* F_GETLK from another process names the holder. */
    pid_t me = getpid();
    pid_t pid = CHECK_SYS(fork());
    if (pid == 0) {
        int f2 = open(path, O_RDWR);
        struct flock fl = {.l_type = F_RDLCK, .l_whence = SEEK_SET, .l_start = 10, .l_len = 5};
        if (fcntl(f2, F_GETLK, &fl) != 0)
            _exit(1);
        if (fl.l_type != F_WRLCK || fl.l_start != 0 || fl.l_len != 100 || fl.l_pid != me)
            _exit(2);
        fl = (struct flock){.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 200, .l_len = 5};
        if (fcntl(f2, F_GETLK, &fl) != 0 || fl.l_type != F_UNLCK)
            _exit(3);
        _exit(0);
    }
    CHECK_CHILD_EXIT(pid, 0);
    /* To the end of the file, then a hole unlocked in the middle. */
    CHECK_SYS(lk(fd, F_SETLK, F_WRLCK, 0, 0));
    CHECK_EQ(in_child(F_WRLCK, 1 << 30, 1), EAGAIN);
    CHECK_SYS(lk(fd, F_SETLK, F_UNLCK, 10, 10));
    CHECK_EQ(in_child(F_WRLCK, 10, 10), 0);
    CHECK_EQ(in_child(F_WRLCK, 5, 10), EAGAIN);
    CHECK_EQ(in_child(F_RDLCK, 20, 1), EAGAIN);
    /* Closing any descriptor of the file lets go of the process's locks. */
    int dup = CHECK_SYS(open(path, O_RDONLY));
    CHECK_SYS(close(dup));
    CHECK_EQ(in_child(F_WRLCK, 0, 0), 0);
    /* Read locks share. */
    CHECK_SYS(lk(fd, F_SETLK, F_RDLCK, 0, 10));
    CHECK_EQ(in_child(F_RDLCK, 0, 10), 0);
    CHECK_EQ(in_child(F_WRLCK, 0, 10), EAGAIN);
    CHECK_SYS(lk(fd, F_SETLK, F_UNLCK, 0, 0));
    SAY("records: write locks exclude other processes on their range only, F_GETLK names the "
        "holder, to-EOF ranges, unlocking splits, closing any descriptor lets go, read locks "
        "share");
}

static void waiting(int fd)
{
    int ready[2], got[2];
    CHECK_SYS(pipe(ready));
    CHECK_SYS(pipe(got));
    CHECK_SYS(lk(fd, F_SETLK, F_WRLCK, 0, 10));
    pid_t pid = CHECK_SYS(fork());
    if (pid == 0) {
        int f2 = open(path, O_RDWR);
        if (write(ready[1], "r", 1) != 1 || lk(f2, F_SETLKW, F_WRLCK, 5, 1) != 0)
            _exit(1);
        if (write(got[1], "g", 1) != 1)
            _exit(2);
        _exit(0); /* its lock goes with it */
    }
    char c;
    CHECK_EQ(read(ready[0], &c, 1), 1);
    /* The parent holds the lock: the child cannot have it yet. */
    CHECK_SYS(fcntl(got[0], F_SETFL, O_NONBLOCK));
    CHECK_ERRNO(read(got[0], &c, 1), EAGAIN);
    CHECK_SYS(fcntl(got[0], F_SETFL, 0));
    CHECK_SYS(lk(fd, F_SETLK, F_UNLCK, 0, 10));
    CHECK_EQ(read(got[0], &c, 1), 1);
    CHECK_CHILD_EXIT(pid, 0);
    /* The child's lock went when it exited. */
    CHECK_SYS(lk(fd, F_SETLK, F_WRLCK, 0, 10));
    CHECK_SYS(lk(fd, F_SETLK, F_UNLCK, 0, 10));
    for (int i = 0; i < 2; i++) {
        CHECK_SYS(close(ready[i]));
        CHECK_SYS(close(got[i]));
    }
    SAY("F_SETLKW: waits while another process holds the range, gets it when let go; a "
        "process's locks go when it exits");
}

static void deadlock(int fd)
{
    /* The parent holds byte 0, the child byte 1; each then asks for the other's byte. Whoever
     * asks second closes the cycle and is refused; it lets go of its byte, so the first gets
     * it. Which one is second does not matter. */
    CHECK_SYS(lk(fd, F_SETLK, F_WRLCK, 0, 1));
    int ready[2], result[2];
    CHECK_SYS(pipe(ready));
    CHECK_SYS(pipe(result));
    pid_t pid = CHECK_SYS(fork());
    if (pid == 0) {
        int mine = open(path, O_RDWR);
        if (mine < 0 || lk(mine, F_SETLK, F_WRLCK, 1, 1) != 0)
            _exit(2);
        if (write(ready[1], "x", 1) != 1)
            _exit(3);
        int e = lk(mine, F_SETLKW, F_WRLCK, 0, 1) == 0 ? 0 : errno;
        if (e == EDEADLK)
            lk(mine, F_SETLK, F_UNLCK, 1, 1);
        if (write(result[1], &e, sizeof e) != sizeof e)
            _exit(4);
        _exit(0);
    }
    char c;
    CHECK_EQ(read(ready[0], &c, 1), 1);
    int mine = lk(fd, F_SETLKW, F_WRLCK, 1, 1) == 0 ? 0 : errno;
    if (mine == EDEADLK)
        CHECK_SYS(lk(fd, F_SETLK, F_UNLCK, 0, 1));
    int theirs;
    CHECK_EQ(read(result[0], &theirs, sizeof theirs), (ssize_t)sizeof theirs);
    CHECK_CHILD_EXIT(pid, 0);
    if (!(mine == 0 && theirs == EDEADLK) && !(mine == EDEADLK && theirs == 0))
        FAIL("F_SETLKW answered %s here and %s in the child, expected one EDEADLK",
             strerror(mine), strerror(theirs));
    CHECK_SYS(lk(fd, F_SETLK, F_UNLCK, 0, 0));
    for (int i = 0; i < 2; i++) {
        close(ready[i]);
        close(result[i]);
    }
    SAY("deadlock: of two processes waiting for each other's locks, the %s was refused "
        "with EDEADLK and the other granted",
        mine == EDEADLK ? "parent" : "child");
}

static void descriptions(int fd)
{
    int a = CHECK_SYS(open(path, O_RDWR)), b = CHECK_SYS(open(path, O_RDWR));
    CHECK_SYS(lk(a, F_OFD_SETLK, F_WRLCK, 0, 10));
    CHECK_ERRNO(lk(b, F_OFD_SETLK, F_WRLCK, 5, 1), EAGAIN);
    CHECK_ERRNO(lk(fd, F_SETLK, F_RDLCK, 0, 1), EAGAIN);
    struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 1};
    CHECK_SYS(fcntl(b, F_OFD_GETLK, &fl));
    CHECK_EQ(fl.l_type, F_WRLCK);
    CHECK_EQ(fl.l_pid, -1);
    CHECK_SYS(close(a));
    CHECK_SYS(lk(b, F_OFD_SETLK, F_WRLCK, 5, 1));
    CHECK_SYS(close(b));
    /* flock: per description, apart from record locks. */
    a = CHECK_SYS(open(path, O_RDONLY));
    b = CHECK_SYS(open(path, O_RDONLY));
    CHECK_SYS(flock(a, LOCK_EX));
    CHECK_ERRNO(flock(b, LOCK_EX | LOCK_NB), EWOULDBLOCK);
    CHECK_ERRNO(flock(b, LOCK_SH | LOCK_NB), EWOULDBLOCK);
    CHECK_SYS(lk(fd, F_SETLK, F_WRLCK, 0, 0));
    CHECK_SYS(flock(a, LOCK_SH));
    CHECK_SYS(flock(b, LOCK_SH | LOCK_NB));
    CHECK_ERRNO(flock(a, LOCK_EX | LOCK_NB), EWOULDBLOCK);
    CHECK_SYS(flock(b, LOCK_UN));
    CHECK_SYS(flock(a, LOCK_EX | LOCK_NB));
    CHECK_SYS(close(a));
    CHECK_SYS(flock(b, LOCK_EX | LOCK_NB));
    CHECK_SYS(close(b));
    CHECK_SYS(lk(fd, F_SETLK, F_UNLCK, 0, 0));
    SAY("OFD locks: descriptions conflict in one process and with its POSIX locks, F_OFD_GETLK "
        "says pid -1, closing lets go; flock: exclusive and shared per description, converted, "
        "apart from fcntl locks");
}

static void errors(int fd)
{
    int ro = CHECK_SYS(open(path, O_RDONLY));
    CHECK_ERRNO(lk(ro, F_SETLK, F_WRLCK, 0, 1), EBADF);
    CHECK_SYS(lk(ro, F_SETLK, F_RDLCK, 0, 1));
    CHECK_SYS(close(ro));
    CHECK_ERRNO(lk(fd, F_SETLK, 7, 0, 1), EINVAL);
    CHECK_ERRNO(lk(fd, F_SETLK, F_WRLCK, -5, 1), EINVAL);
    CHECK_ERRNO(lk(fd, F_SETLK, F_WRLCK, 2, -5), EINVAL);
    struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 1,
                       .l_pid = 1};
    CHECK_ERRNO(fcntl(fd, F_OFD_SETLK, &fl), EINVAL);
    fl.l_whence = 9;
    fl.l_pid = 0;
    CHECK_ERRNO(fcntl(fd, F_SETLK, &fl), EINVAL);
    CHECK_ERRNO(flock(fd, 3), EINVAL);
    SAY("errors: EBADF for a write lock through a read-only descriptor, EINVAL for a bad type, "
        "whence, a range before the file, an OFD l_pid, a bad flock op");
}

int main(void)
{
    test_begin("locks");
    snprintf(path, sizeof path, "/tmp/locks.%d", (int)getpid());
    int fd = CHECK_SYS(open(path, O_RDWR | O_CREAT | O_TRUNC, 0644));
    records(fd);
    waiting(fd);
    deadlock(fd);
    descriptions(fd);
    errors(fd);
    CHECK_SYS(close(fd));
    CHECK_SYS(unlink(path));
    PASS();
}
