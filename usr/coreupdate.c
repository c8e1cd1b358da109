/*
 * coreupdate: a core restarted in another kernel image while programs run (Barrelfish/DC §4.5,
 * issue 14: `corectl update N IMAGE`).
 *
 * A worker pinned to the last core computes and checks results, reading the monotonic clock
 * and sched_getcpu() every round; another worker is free to move. The main thread (on core 0)
 * updates the last core to /boot/reef-trace (the kernel built with its system-call tracing,
 * linked against the boot image's state) and back to the boot image (`reef`) ROUNDS times
 * (default 4, `coreupdate ROUNDS`): after each, reef_core_info names the image the core runs,
 * the core is online, and the pinned worker made progress there (its system calls in the
 * variant are traced on the console: the xtask case checks that every `reef-trace:` line comes
 * from that core). Then a stopped core is updated (it starts in the image), and every error
 * case answers its error and changes nothing: no such core, core 0, a parked core, files that
 * are not kernel images (a program, a text file, a directory), no such file, and copies of the
 * image made for another boot image or KCB layout (their `.reef_image` fields changed); and
 * corectl's command lines. The image is loaded once: later updates take no memory. At the end
 * the workers must have computed right, never seen the clock go back nor the pinned one
 * another core, and the largest gap the pinned worker saw between two rounds is printed.
 * Last, a child takes the last core alone in the real-time image /boot/reef-rt (reef_core_rt),
 * runs and sleeps there, and exits, freeing it; then `corectl rt` runs this program there
 * (`coreupdate alone-on N`, see real_time).
 *
 * On Linux the calls do not exist (ENOSYS) and the test passes after saying so.
 */
#include "core_test.h"
#include <fcntl.h>
#include <sys/stat.h>

#define IMAGE "/boot/reef-trace"
#define RT_IMAGE "/boot/reef-rt"

/* Waits until worker `w` has done `n` more rounds. */
static void wait_rounds(struct core_worker *w, long n)
{
    for (long i = 0; i < n; i++)
        core_worker_wait(w, atomic_load(&w->iters));
}

static struct reef_core_info info_of(unsigned core)
{
    struct reef_core_info i;
    CHECK_EQ(reef_core_info(core, &i), 0);
    return i;
}

/* Checks that `core` is online in the image named `image`. */
static void check_runs(unsigned core, const char *image)
{
    struct reef_core_info i = info_of(core);
    CHECK_EQ(i.state, REEF_CORE_ONLINE);
    if (strncmp(i.image, image, sizeof i.image) != 0)
        FAIL("core %u runs image '%.16s', not '%s'", core, i.image, image);
}

/* Reads all of `path` into a malloc'd buffer; its length in `*len`. */
static unsigned char *slurp(const char *path, size_t *len)
{
    int fd = CHECK_SYS(open(path, O_RDONLY));
    struct stat st;
    CHECK_SYS(fstat(fd, &st));
    unsigned char *buf = malloc((size_t)st.st_size);
    CHECK(buf != NULL);
    size_t done = 0;
    while (done < (size_t)st.st_size) {
        ssize_t n = CHECK_SYS(read(fd, buf + done, (size_t)st.st_size - done));
        CHECK(n > 0);
        done += (size_t)n;
    }
    close(fd);
    *len = done;
    return buf;
}

/* The offset of the `.reef_image` section's bytes in the ELF file `f` (`len` bytes). */
static size_t reef_image_section(const unsigned char *f, size_t len)
{
    CHECK(len >= 64 && memcmp(f, "\177ELF", 4) == 0);
    uint64_t shoff;
    uint16_t shnum, shstrndx;
    memcpy(&shoff, f + 0x28, 8);
    memcpy(&shnum, f + 0x3c, 2);
    memcpy(&shstrndx, f + 0x3e, 2);
    CHECK(shoff + (uint64_t)shnum * 64 <= len && shstrndx < shnum);
    uint64_t names;
    memcpy(&names, f + shoff + 64 * shstrndx + 0x18, 8);
    for (unsigned i = 0; i < shnum; i++) {
        const unsigned char *h = f + shoff + 64 * i;
        uint32_t name;
        uint64_t off;
        memcpy(&name, h, 4);
        memcpy(&off, h + 0x18, 8);
        if (names + name + 12 <= len && memcmp(f + names + name, ".reef_image", 12) == 0) {
            CHECK(off + 64 <= len && memcmp(f + off, "REEFIMG1", 8) == 0);
            return off;
        }
    }
    FAIL("%s has no .reef_image section", IMAGE);
}

/* Writes `buf` with byte `at` changed to `path`. */
static void write_changed(const char *path, const unsigned char *buf, size_t len, size_t at)
{
    int fd = CHECK_SYS(open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644));
    CHECK_SYS(write(fd, buf, at));
    unsigned char b = buf[at] ^ 0x5a;
    CHECK_SYS(write(fd, &b, 1));
    CHECK_SYS(write(fd, buf + at + 1, len - at - 1));
    close(fd);
}

/* The real-time image: a child takes core `last` alone in /boot/reef-rt (reef_core_rt), runs
 * and sleeps there (the image has no periodic tick: each sleep's wake-up is its own timer
 * interrupt) and exits; the core is then free again, still in reef-rt, and cannot host parked
 * KCBs (they take turns on the tick); two processes pinned there share it (a spinner does not
 * starve the other). Errors: core 0, a core owned already. */
static void real_time(unsigned last, const char *self)
{
    CHECK_EQ(reef_core_rt(0, RT_IMAGE), -EBUSY);
    CHECK_EQ(reef_core_rt(9999, RT_IMAGE), -EINVAL);
    atomic_int *step = shared_page(4096);
    pid_t child = test_fork_child("a program alone on the real-time image", 0);
    if (child == 0) {
        CHECK_EQ(reef_core_rt(last, RT_IMAGE), 0);
        check_runs(last, "reef-rt");
        CHECK_EQ(info_of(last).fleet_owner, (uint32_t)getpid());
        for (int i = 0; i < 20; i++) {
            struct timespec ts = {0, 1000000};
            long long before = now_ns();
            CHECK_SYS(nanosleep(&ts, NULL));
            CHECK(now_ns() - before >= 1000000);
            CHECK_EQ(sched_getcpu(), (int)last);
        }
        atomic_store(step, 1);
        while (atomic_load(step) != 2)
            ;
        _exit(0);
    }
    while (atomic_load(step) != 1)
        sched_yield();
    /* The core is the child's alone: another process cannot have it nor be placed there. */
    CHECK_EQ(reef_core_rt(last, RT_IMAGE), -EBUSY);
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(last, &set);
    CHECK_ERRNO(sched_setaffinity(0, sizeof set, &set), EBUSY);
    atomic_store(step, 2);
    CHECK_CHILD_EXIT(child, 0);
    test_nkids = 0;
    CHECK_EQ(info_of(last).fleet_owner, 0u);
    check_runs(last, "reef-rt");
    CHECK_EQ(reef_core_park(1, last), -EBUSY);
    /* corectl rt runs a program there the same way. */
    char core_arg[16];
    snprintf(core_arg, sizeof core_arg, "%u", last);
    CHECK_EQ(run_program("/bin/corectl", "rt", core_arg, self, "alone-on", core_arg, NULL), 0);
    CHECK_EQ(run_program("/bin/corectl", "rt", "0", "/bin/true", NULL), 1);
    CHECK_EQ(run_program("/bin/corectl", "rt", core_arg, NULL), 2);
    CHECK_EQ(info_of(last).fleet_owner, 0u);
    /* No tick, but no starvation: a spinner pinned there does not keep another thread there
     * from running (the timer then ends the spinner's slice). */
    atomic_int *count = step + 1;
    pid_t spinner = test_fork_child("a spinner on the real-time core", (int)last);
    if (spinner == 0)
        for (;;)
            ;
    pid_t counter = test_fork_child("a counter on the real-time core", (int)last);
    if (counter == 0)
        for (;;)
            atomic_fetch_add(count, 1);
    long long deadline = now_ns() + 60 * 1000000000LL;
    while (atomic_load(count) < 100000) {
        if (now_ns() > deadline)
            FAIL("a thread sharing the real-time core with a spinner made no progress in 60 s");
        sched_yield();
    }
    CHECK_SYS(kill(spinner, SIGKILL));
    CHECK_SYS(kill(counter, SIGKILL));
    CHECK_SYS(waitpid(spinner, NULL, 0));
    CHECK_SYS(waitpid(counter, NULL, 0));
    test_nkids = 0;
    CHECK_EQ(reef_core_update(last, "reef"), 0);
    check_runs(last, "reef");
    SAY("a program ran and slept alone on core %u in %s, which had no other owner meanwhile",
        last, RT_IMAGE);
}

/* `coreupdate alone-on N`, which `corectl rt N` runs: this process must run on core N, in
 * reef-rt, as its owner. */
static int alone_on(const char *core)
{
    unsigned n = (unsigned)atoi(core);
    check_runs(n, "reef-rt");
    CHECK_EQ(info_of(n).fleet_owner, (uint32_t)getpid());
    CHECK_EQ(sched_getcpu(), (int)n);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 3 && strcmp(argv[1], "alone-on") == 0)
        return alone_on(argv[2]);
    int rounds = core_test_begin("coreupdate", argc, argv, 4);
    unsigned ncores = core_count();
    for (unsigned c = 0; c < ncores; c++)
        check_runs(c, "reef");
    if (ncores < 2) {
        SAY("one core: no other core to update");
        PASS();
    }
    unsigned last = ncores - 1;
    pin_self(0);
    SAY("%u cores; updating core %u", ncores, last);

    /* Errors, which change nothing. */
    CHECK_EQ(reef_core_update(9999, IMAGE), -ENODEV);
    CHECK_EQ(reef_core_update(0, IMAGE), -EBUSY);
    CHECK_EQ(reef_core_update(last, "/bin/busybox"), -ENOEXEC);
    CHECK_EQ(reef_core_update(last, "/etc/passwd"), -ENOEXEC);
    CHECK_EQ(reef_core_update(last, "/boot"), -EISDIR);
    CHECK_EQ(reef_core_update(last, "/boot/no-such-image"), -ENOENT);
    CHECK_ERRNO(syscall(SYS_reef_core_ctl, (long)REEF_CORE_UPDATE, (long)last, (void *)8), EFAULT);
    size_t len;
    unsigned char *image = slurp(IMAGE, &len);
    size_t info = reef_image_section(image, len);
    write_changed("/tmp/other-boot", image, len, info + 8);
    write_changed("/tmp/other-kcb", image, len, info + 16);
    write_changed("/tmp/not-reef", image, len, info);
    free(image);
    long free_refused = reef_free_bytes();
    static char long_path[8192];
    memset(long_path, 'a', sizeof long_path - 1);
    CHECK_EQ(reef_core_update(last, long_path), -ENAMETOOLONG);
    for (int i = 0; i < 20; i++) {
        CHECK_EQ(reef_core_update(last, "/tmp/other-boot"), -EINVAL);
        CHECK_EQ(reef_core_update(last, "/bin/busybox"), -ENOEXEC);
    }
    CHECK_MEMORY_BACK(free_refused, "refused updates took no memory");
    CHECK_EQ(reef_core_update(last, "/tmp/other-boot"), -EINVAL);
    CHECK_EQ(reef_core_update(last, "/tmp/other-kcb"), -EINVAL);
    CHECK_EQ(reef_core_update(last, "/tmp/not-reef"), -ENOEXEC);
    CHECK_EQ(run_program("/bin/corectl", "update", "x", IMAGE, NULL), 2);
    CHECK_EQ(run_program("/bin/corectl", "update", "1", NULL), 2);
    CHECK_EQ(run_program("/bin/corectl", "update", "0", IMAGE, NULL), 1);
    CHECK_EQ(run_program("/bin/corectl", "update", "1", "/tmp/other-boot", NULL), 1);
    CHECK_EQ(reef_core_park(last, 0), 0);
    CHECK_EQ(reef_core_update(last, IMAGE), -EBUSY);
    CHECK_EQ(reef_core_unpark(last), 0);
    for (unsigned c = 0; c < ncores; c++)
        check_runs(c, "reef");
    SAY("errors answered, nothing changed");

    struct core_worker workers[2];
    memset(workers, 0, sizeof workers);
    workers[0].cpu = (int)last;
    workers[1].cpu = -1;
    core_worker_sum_to = 20000;
    for (int i = 0; i < 2; i++)
        CHECK_PT(pthread_create(&workers[i].thread, NULL, core_work, &workers[i]));
    for (int i = 0; i < 2; i++)
        wait_rounds(&workers[i], 1);

    long free_before = -1;
    for (int r = 0; r < rounds; r++) {
        uint64_t starts = info_of(last).starts;
        CHECK_EQ(reef_core_update(last, IMAGE), 0);
        check_runs(last, "reef-trace");
        CHECK_EQ(info_of(last).starts, starts + 1);
        wait_rounds(&workers[0], 3);
        CHECK_EQ(reef_core_update(last, "reef"), 0);
        check_runs(last, "reef");
        wait_rounds(&workers[0], 3);
        if (r == 0)
            free_before = reef_free_bytes();
    }
    CHECK(reef_free_bytes() >= free_before - (1 << 20));
    SAY("%d updates of core %u to %s and back, the pinned worker computing throughout; the "
        "image was loaded once",
        rounds, last, IMAGE);

    /* A stopped core starts in the image it is updated to; `corectl` says so. */
    CHECK_EQ(reef_core_stop(last), 0);
    CHECK_EQ(reef_core_update(last, IMAGE), 0);
    check_runs(last, "reef-trace");
    wait_rounds(&workers[0], 3);
    CHECK_EQ(run_program("/bin/corectl", "update", "1", "reef", NULL), 0);
    check_runs(1, "reef");
    char core_arg[16];
    snprintf(core_arg, sizeof core_arg, "%u", last);
    CHECK_EQ(run_program("/bin/corectl", "update", core_arg, "reef", NULL), 0);
    check_runs(last, "reef");
    SAY("a stopped core started in the image it was updated to");

    core_workers_join(workers, 2);
    SAY("largest gap the worker pinned to core %u saw between two rounds: %lld us (time "
        "slices given to the free worker included; `uperf update` measures the pause alone)",
        last, atomic_load(&workers[0].max_gap_ns) / 1000);
    for (unsigned c = 0; c < ncores; c++)
        check_runs(c, "reef");
    real_time(last, self_path(argv[0]));
    PASS();
}
