/*
 * eventfd: event counters and timers as descriptors, as Linux has them.
 *
 * - eventfd: reads take the whole count (EFD_SEMAPHORE: one), EAGAIN at 0 with EFD_NONBLOCK,
 *   a blocked read wakes when another process writes; writes add, EAGAIN when the count
 *   would pass 2^64-2; EINVAL for short buffers, the value 2^64-1 and unknown flags; poll and
 *   epoll see POLLIN only while the count is above 0; /proc/self/fd names it;
 * - timerfd: a one-shot timer's read waits for it and returns 1; a periodic one counts its
 *   expirations; gettime shows the time left and the interval, settime returns the old
 *   setting; absolute times on CLOCK_MONOTONIC and CLOCK_REALTIME, a past one expires at
 *   once; poll and epoll wake when it expires; EAGAIN with TFD_NONBLOCK before it expires;
 *   EINVAL for unknown clocks and flags, a bad timespec, a write, settime on another kind of
 *   descriptor, EBADF for a bad one;
 * - hostile: EFAULT for bad pointers (user page 8, the kernel half) in every call, EBADF for
 *   forged descriptors; 2400 armed timers and counters made and closed keep no memory.
 */
#include "reef-test.h"

#include <fcntl.h>
#include <poll.h>
#include <stdint.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>

static uint64_t get(int fd)
{
    uint64_t v = 0;
    CHECK_EQ(read(fd, &v, sizeof v), 8);
    return v;
}

static void put(int fd, uint64_t v)
{
    CHECK_EQ(write(fd, &v, sizeof v), 8);
}

static short revents(int fd, int timeout_ms)
{
    struct pollfd p = {.fd = fd, .events = POLLIN | POLLOUT};
    CHECK_SYS(poll(&p, 1, timeout_ms));
    return p.revents;
}

static void counters(void)
{
    int fd = CHECK_SYS(eventfd(3, EFD_NONBLOCK | EFD_CLOEXEC));
    CHECK_EQ(revents(fd, 0), POLLIN | POLLOUT);
    CHECK_EQ(get(fd), 3);
    uint64_t v;
    CHECK_ERRNO(read(fd, &v, sizeof v), EAGAIN);
    CHECK_EQ(revents(fd, 0), POLLOUT);
    put(fd, 5);
    put(fd, 7);
    CHECK_EQ(get(fd), 12);
    /* Errors. */
    CHECK_ERRNO(read(fd, &v, 4), EINVAL);
    CHECK_ERRNO(write(fd, &v, 4), EINVAL);
    v = UINT64_MAX;
    CHECK_ERRNO(write(fd, &v, 8), EINVAL);
    put(fd, UINT64_MAX - 1);
    v = 1;
    CHECK_ERRNO(write(fd, &v, 8), EAGAIN);
    CHECK_EQ(revents(fd, 0), POLLIN);
    CHECK_EQ(get(fd), UINT64_MAX - 1);
    CHECK_ERRNO(eventfd(0, 0x10), EINVAL);
    char link[64] = {0}, path[64];
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    CHECK_SYS(readlink(path, link, sizeof link - 1));
    CHECK_EQ(strcmp(link, "anon_inode:[eventfd]"), 0);
    CHECK_SYS(close(fd));

    /* A semaphore: one at a time. */
    fd = CHECK_SYS(eventfd(2, EFD_SEMAPHORE | EFD_NONBLOCK));
    CHECK_EQ(get(fd), 1);
    CHECK_EQ(get(fd), 1);
    CHECK_ERRNO(read(fd, &v, sizeof v), EAGAIN);
    CHECK_SYS(close(fd));
    SAY("counters: counts, semaphore, EAGAIN both ways, EINVAL, poll, /proc/self/fd");

    /* A blocked read wakes when another process writes; epoll sees the counter. */
    fd = CHECK_SYS(eventfd(0, 0));
    int ep = CHECK_SYS(epoll_create1(0));
    struct epoll_event ev = {.events = EPOLLIN, .data.u64 = 42};
    CHECK_SYS(epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev));
    CHECK_EQ(epoll_wait(ep, &ev, 1, 0), 0);
    pid_t pid = CHECK_SYS(fork());
    if (pid == 0) {
        usleep(30000);
        uint64_t one = 1;
        _exit(write(fd, &one, 8) == 8 ? 0 : 1);
    }
    CHECK_EQ(epoll_wait(ep, &ev, 1, 10000), 1);
    CHECK(ev.events == EPOLLIN && ev.data.u64 == 42);
    CHECK_EQ(get(fd), 1);
    CHECK_CHILD_EXIT(pid, 0);
    pid = CHECK_SYS(fork());
    if (pid == 0) {
        usleep(30000);
        uint64_t two = 2;
        _exit(write(fd, &two, 8) == 8 ? 0 : 1);
    }
    CHECK_EQ(get(fd), 2);
    CHECK_CHILD_EXIT(pid, 0);
    CHECK_SYS(close(ep));
    CHECK_SYS(close(fd));
    SAY("counters: a blocked read and epoll_wait wake on another process's write");
}

static struct itimerspec spec(long long value_ns, long long interval_ns)
{
    struct itimerspec s = {
        .it_value = {.tv_sec = value_ns / 1000000000, .tv_nsec = value_ns % 1000000000},
        .it_interval = {.tv_sec = interval_ns / 1000000000, .tv_nsec = interval_ns % 1000000000},
    };
    return s;
}

static void timers(void)
{
    int fd = CHECK_SYS(timerfd_create(CLOCK_MONOTONIC, 0));
    struct itimerspec cur, old;
    CHECK_SYS(timerfd_gettime(fd, &cur));
    CHECK(cur.it_value.tv_sec == 0 && cur.it_value.tv_nsec == 0);
    /* One shot: the read waits for it. */
    struct itimerspec s = spec(50000000, 0);
    CHECK_SYS(timerfd_settime(fd, 0, &s, NULL));
    CHECK_SYS(timerfd_gettime(fd, &cur));
    CHECK(cur.it_value.tv_sec == 0 && cur.it_value.tv_nsec > 0 && cur.it_value.tv_nsec <= 50000000);
    long long t0 = now_ns();
    CHECK_EQ(get(fd), 1);
    CHECK(now_ns() - t0 >= 40000000);
    CHECK_SYS(timerfd_gettime(fd, &cur));
    CHECK(cur.it_value.tv_sec == 0 && cur.it_value.tv_nsec == 0);
    /* Periodic: expirations add up; settime hands the old setting back. */
    s = spec(10000000, 10000000);
    CHECK_SYS(timerfd_settime(fd, 0, &s, NULL));
    usleep(100000);
    CHECK(get(fd) >= 5);
    s = spec(0, 0);
    CHECK_SYS(timerfd_settime(fd, 0, &s, &old));
    CHECK(old.it_interval.tv_sec == 0 && old.it_interval.tv_nsec == 10000000);
    CHECK(old.it_value.tv_sec == 0 && old.it_value.tv_nsec <= 10000000);
    CHECK_SYS(close(fd));
    SAY("timers: one-shot read waits, periodic counts, gettime and settime's old value");

    /* Non-blocking before it expires; poll and epoll wake when it does. */
    fd = CHECK_SYS(timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC));
    s = spec(30000000, 0);
    CHECK_SYS(timerfd_settime(fd, 0, &s, NULL));
    uint64_t v;
    CHECK_ERRNO(read(fd, &v, sizeof v), EAGAIN);
    CHECK_EQ(revents(fd, 10000), POLLIN);
    CHECK_EQ(get(fd), 1);
    int ep = CHECK_SYS(epoll_create1(0));
    struct epoll_event ev = {.events = EPOLLIN, .data.u64 = 7};
    CHECK_SYS(epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev));
    CHECK_SYS(timerfd_settime(fd, 0, &s, NULL));
    CHECK_EQ(epoll_wait(ep, &ev, 1, 10000), 1);
    CHECK(ev.events == EPOLLIN && ev.data.u64 == 7);
    CHECK_EQ(get(fd), 1);
    CHECK_SYS(close(ep));
    /* Absolute times: a past one expires at once. */
    struct timespec now;
    CHECK_SYS(clock_gettime(CLOCK_MONOTONIC, &now));
    s = spec(0, 0);
    s.it_value = now;
    CHECK_SYS(timerfd_settime(fd, TFD_TIMER_ABSTIME, &s, NULL));
    CHECK_EQ(revents(fd, 10000), POLLIN);
    CHECK_EQ(get(fd), 1);
    CHECK_SYS(close(fd));
    fd = CHECK_SYS(timerfd_create(CLOCK_REALTIME, 0));
    CHECK_SYS(clock_gettime(CLOCK_REALTIME, &now));
    s.it_value.tv_sec = now.tv_sec + (now.tv_nsec + 30000000) / 1000000000;
    s.it_value.tv_nsec = (now.tv_nsec + 30000000) % 1000000000;
    CHECK_SYS(timerfd_settime(fd, TFD_TIMER_ABSTIME, &s, NULL));
    CHECK_EQ(get(fd), 1);
    struct timespec after;
    CHECK_SYS(clock_gettime(CLOCK_REALTIME, &after));
    CHECK(after.tv_sec > s.it_value.tv_sec ||
          (after.tv_sec == s.it_value.tv_sec && after.tv_nsec >= s.it_value.tv_nsec));
    SAY("timers: EAGAIN before, poll and epoll on expiry, absolute monotonic and real time");

    /* Errors. */
    CHECK_ERRNO(write(fd, &v, sizeof v), EINVAL);
    CHECK_ERRNO(read(fd, &v, 4), EINVAL);
    CHECK_ERRNO(timerfd_create(99, 0), EINVAL);
    CHECK_ERRNO(timerfd_create(CLOCK_MONOTONIC, 0x10), EINVAL);
    s = spec(1, 0);
    s.it_value.tv_nsec = 1000000000;
    CHECK_ERRNO(timerfd_settime(fd, 0, &s, NULL), EINVAL);
    s = spec(1, 0);
    CHECK_ERRNO(timerfd_settime(fd, 0x100, &s, NULL), EINVAL);
    int e = CHECK_SYS(eventfd(0, 0));
    CHECK_ERRNO(timerfd_settime(e, 0, &s, NULL), EINVAL);
    CHECK_ERRNO(timerfd_gettime(e, &cur), EINVAL);
    CHECK_ERRNO(timerfd_settime(9999, 0, &s, NULL), EBADF);
    CHECK_ERRNO(timerfd_settime(fd, 0, (void *)8, NULL), EFAULT);
    CHECK_SYS(close(e));
    CHECK_SYS(close(fd));
    SAY("timers: EINVAL, EBADF and EFAULT as Linux answers");
}

/* Bad pointers for every new call, and many armed timers and counters made and closed: errors,
 * and on Reef the free memory back where it started. */
static void hostile(void)
{
    void *low = (void *)8, *kernel = (void *)0xffff800000000000UL;
    long before = reef_free_bytes();
    for (int round = 0; round < 3; round++) {
        int fds[800];
        for (int i = 0; i < 800; i += 2) {
            fds[i] = CHECK_SYS(timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK));
            struct itimerspec s = spec(3600000000000LL, 1000000);
            CHECK_SYS(timerfd_settime(fds[i], 0, &s, NULL));
            fds[i + 1] = CHECK_SYS(eventfd(i, EFD_NONBLOCK));
        }
        for (int i = 0; i < 800; i++)
            CHECK_SYS(close(fds[i]));
    }
    int t = CHECK_SYS(timerfd_create(CLOCK_MONOTONIC, 0));
    int e = CHECK_SYS(eventfd(1, 0));
    struct itimerspec s = spec(1000000000, 0);
    CHECK_ERRNO(timerfd_gettime(t, low), EFAULT);
    CHECK_ERRNO(timerfd_gettime(t, kernel), EFAULT);
    CHECK_ERRNO(timerfd_settime(t, 0, kernel, NULL), EFAULT);
    CHECK_ERRNO(timerfd_settime(t, 0, &s, kernel), EFAULT);
    CHECK_ERRNO(timerfd_settime(-1, 0, &s, NULL), EBADF);
    CHECK_ERRNO(timerfd_settime(1 << 30, 0, &s, NULL), EBADF);
    CHECK_ERRNO(syscall(SYS_read, e, kernel, 8), EFAULT);
    CHECK_ERRNO(syscall(SYS_write, e, low, 8), EFAULT);
    CHECK_ERRNO(syscall(SYS_eventfd2, 0, -1), EINVAL);
    CHECK_EQ(get(e), 1);
    CHECK_SYS(close(t));
    CHECK_SYS(close(e));
    CHECK_MEMORY_BACK(before, "bad pointers, descriptors and flags: errors; 2400 armed timers and counters made and closed");
}

int main(void)
{
    test_begin("eventfd");
    counters();
    timers();
    hostile();
    PASS();
}
