/*
 * names: Reef's name directory (fos §3.2.1; reef_name_register/unregister/lookup, system calls
 * 1025-1027, kernel names.rs), which Linux does not have: off Reef the program checks that the
 * calls answer ENOSYS and passes.
 *
 * - names are checked (empty, over 64 bytes, a space: EINVAL; under "fleet/": EPERM, as this
 *   is not the fleet manager, usr/fleets.c); a member is a mailbox (reef_mbox_create; another descriptor is
 *   ENOTSOCK); a registration is found, a second one of the same mailbox is EEXIST, a wrong
 *   unregistration ENOENT, bad pointers EFAULT, a bad `how` EINVAL; closing a mailbox removes
 *   its names;
 * - one-to-many: a child on every allowed core registers under one name; a lookup of the
 *   nearest member from each core answers the child on that core, and round-robin lookups
 *   answer every child;
 * - a member that dies is never answered again (the directory forgets it and the per-core
 *   caches are invalidated: /proc/reef/names shows the invalidations), and one that is
 *   pinned to another core is answered there;
 * - a name whose last member unregisters is gone (ENOENT);
 * - huge lengths, kernel and non-canonical pointers are refused, another process cannot remove
 *   a registration, a process holds 16 registrations at most (EDQUOT), processes that fill
 *   the directory get ENOSPC and their names go when they exit, and free memory comes back.
 */
#include "reef-test.h"
#include "reef_msg.h"

#define MAXC 8
/* Registrations a process may hold (lib/msg's NAMES_PER_PROCESS). */
#define QUOTA 16
/* Process and heap memory that may stay (kernel heap arenas kept: see robust.c). */
#define SLACK (8L << 20)

static int cores[MAXC], ncores;

static void pin(int cpu)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    CHECK_SYS(sched_setaffinity(0, sizeof set, &set));
}

/* A new mailbox of this process (its descriptor). */
static int new_mailbox(void)
{
    _Atomic uint32_t *events;
    int fd = reef_mbox_create(O_CLOEXEC, &events);
    if (fd < 0)
        FAIL("reef_mbox_create: %s", strerror(-fd));
    return fd;
}

/* A member on `core`: registers a mailbox of its own under `name`, says so, waits to be
 * killed. */
static pid_t member(const char *name, int core, volatile int *ready)
{
    pid_t pid = CHECK_SYS(fork());
    if (pid == 0) {
        pin(core);
        if (reef_name_register(name, new_mailbox()) != 0)
            _exit(2);
        __atomic_add_fetch(ready, 1, __ATOMIC_SEQ_CST);
        for (;;)
            pause();
    }
    return pid;
}

static void kill_wait(pid_t pid)
{
    int st;
    CHECK_SYS(kill(pid, SIGKILL));
    CHECK_SYS(waitpid(pid, &st, 0));
    CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
}

static long invalidations(void)
{
    FILE *f = fopen("/proc/reef/names", "r");
    CHECK(f != NULL);
    char line[512];
    long total = 0, n;
    while (fgets(line, sizeof line, f)) {
        char *p = strstr(line, "invalidations=");
        if (p && sscanf(p, "invalidations=%ld", &n) == 1)
            total += n;
    }
    fclose(f);
    return total;
}

static int listed(pid_t pid)
{
    char want[32];
    snprintf(want, sizeof want, "pid=%d ", (int)pid);
    return file_has("/proc/reef/names", want);
}

int main(void)
{
    test_begin("names");
    if (!on_reef()) {
        CHECK_EQ(reef_name_register("x", 0), -ENOSYS);
        SAY("not Reef: the name calls answer ENOSYS");
        PASS();
    }
    long free0 = reef_free_bytes();
    cpu_set_t set;
    CHECK_SYS(sched_getaffinity(0, sizeof set, &set));
    for (int c = 0; c < CPU_SETSIZE && ncores < MAXC; c++)
        if (CPU_ISSET(c, &set))
            cores[ncores++] = c;
    pin(cores[0]);
    int mb = new_mailbox(), mb2 = new_mailbox();

    /* Checking. */
    char big[66];
    memset(big, 'a', 65);
    big[65] = 0;
    CHECK_EQ(reef_name_register("", mb), -EINVAL);
    CHECK_EQ(reef_name_register(big, mb), -EINVAL);
    CHECK_EQ(reef_name_register("a b", mb), -EINVAL);
    CHECK_EQ(reef_name_register("fleet/fs", mb), -EPERM);
    CHECK_EQ(syscall(SYS_reef_name_register, NULL, 3L, (long)mb), -1);
    CHECK_EQ(errno, EFAULT);
    CHECK_EQ(reef_name_register("svc", 1), -ENOTSOCK);
    CHECK_EQ(reef_name_register("svc", mb), 0);
    CHECK_EQ(reef_name_register("svc", mb), -EEXIST);
    struct reef_name_member m;
    CHECK_EQ(reef_name_lookup("svc", REEF_NAME_NEAREST, &m), 0);
    CHECK(m.mailbox != 0);
    uint64_t mb_id = m.mailbox;
    CHECK_EQ(m.pid, getpid());
    CHECK_EQ(m.core, cores[0]);
    CHECK_EQ(reef_name_lookup("svc", 9, &m), -EINVAL);
    CHECK_EQ(syscall(SYS_reef_name_lookup, "svc", 3L, 0L, (void *)8), -1);
    CHECK_EQ(errno, EFAULT);
    CHECK_EQ(reef_name_lookup("nobody", REEF_NAME_NEAREST, &m), -ENOENT);
    CHECK_EQ(reef_name_unregister("svc", mb2), -ENOENT);
    /* Huge lengths, kernel and non-canonical addresses. */
    CHECK_EQ(syscall(SYS_reef_name_register, "x", 1L << 40, (long)mb), -1);
    CHECK_EQ(errno, EINVAL);
    CHECK_EQ(syscall(SYS_reef_name_lookup, "svc", 3L, 0L, (void *)0xffff800000000000UL), -1);
    CHECK_EQ(errno, EFAULT);
    CHECK_EQ(syscall(SYS_reef_name_register, (void *)0x0000800000000000UL, 3L, (long)mb), -1);
    CHECK_EQ(errno, EFAULT);
    /* Another process cannot remove this one's registration (no forged ownership): a fork
     * child does not inherit the mailbox, and its own is another. */
    pid_t other = CHECK_SYS(fork());
    if (other == 0)
        _exit(reef_name_unregister("svc", mb) == -EBADF &&
                      reef_name_unregister("svc", new_mailbox()) == -ENOENT
                  ? 0
                  : 1);
    int ost;
    CHECK_SYS(waitpid(other, &ost, 0));
    CHECK(WIFEXITED(ost) && WEXITSTATUS(ost) == 0);
    CHECK_EQ(reef_name_unregister("svc", mb), 0);
    CHECK_EQ(reef_name_lookup("svc", REEF_NAME_NEAREST, &m), -ENOENT);
    /* Closing a mailbox removes its names. */
    CHECK_EQ(reef_name_register("svc", mb2), 0);
    CHECK_EQ(reef_name_register("svc2", mb2), 0);
    CHECK_EQ(reef_name_lookup("svc2", REEF_NAME_NEAREST, &m), 0);
    CHECK(m.mailbox != mb_id);
    close(mb2);
    CHECK_EQ(reef_name_lookup("svc", REEF_NAME_NEAREST, &m), -ENOENT);
    CHECK_EQ(reef_name_lookup("svc2", REEF_NAME_NEAREST, &m), -ENOENT);
    SAY("bad names, reserved names, duplicates, bad pointers and unknown names are refused");

    /* One-to-many, nearest and round robin. */
    volatile int *ready = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
                               -1, 0);
    CHECK(ready != MAP_FAILED);
    pid_t kids[MAXC];
    for (int i = 0; i < ncores; i++)
        kids[i] = member("echo", cores[i], ready);
    while (*ready < ncores)
        sched_yield();
    for (int i = 0; i < ncores; i++) {
        pin(cores[i]);
        for (int rep = 0; rep < 3; rep++) {
            CHECK_EQ(reef_name_lookup("echo", REEF_NAME_NEAREST, &m), 0);
            CHECK_EQ(m.core, cores[i]);
            CHECK_EQ(m.pid, kids[i]);
        }
    }
    unsigned seen = 0;
    for (int i = 0; i < 4 * ncores; i++) {
        CHECK_EQ(reef_name_lookup("echo", REEF_NAME_ROUND_ROBIN, &m), 0);
        for (int k = 0; k < ncores; k++)
            if (m.pid == (uint32_t)kids[k])
                seen |= 1u << k;
    }
    CHECK_EQ(seen, (1u << ncores) - 1);
    SAY("%d members on %d cores: each core's nearest is its own, round robin answers all",
        ncores, ncores);

    /* A member dies: never answered again, from any core. */
    long before = invalidations();
    int last = ncores - 1;
    pin(cores[last]);
    CHECK_EQ(reef_name_lookup("echo", REEF_NAME_NEAREST, &m), 0);
    CHECK_EQ(m.pid, kids[last]);
    kill_wait(kids[last]);
    CHECK(!listed(kids[last]));
    for (int i = 0; i < ncores; i++) {
        pin(cores[i]);
        for (int rep = 0; rep < 2 * ncores; rep++) {
            CHECK_EQ(reef_name_lookup("echo", REEF_NAME_ROUND_ROBIN, &m) == 0 || ncores == 1, 1);
            if (ncores > 1)
                CHECK(m.pid != (uint32_t)kids[last]);
        }
    }
    CHECK(invalidations() > before);
    SAY("a dead member is gone from the directory and from every core's cache");

    /* A member pinned elsewhere is answered there. */
    if (ncores > 1) {
        cpu_set_t to;
        CPU_ZERO(&to);
        CPU_SET(cores[last], &to);
        CHECK_SYS(sched_setaffinity(kids[0], sizeof to, &to));
        pin(cores[last]);
        CHECK_EQ(reef_name_lookup("echo", REEF_NAME_NEAREST, &m), 0);
        CHECK_EQ(m.pid, kids[0]);
        CHECK_EQ(m.core, cores[last]);
        SAY("a member pinned to another core is found there");
    }
    for (int i = 0; i < last; i++)
        kill_wait(kids[i]);
    CHECK_EQ(reef_name_lookup("echo", REEF_NAME_NEAREST, &m), -ENOENT);
    SAY("the name goes with its last member");

    /* A process holds 16 registrations at most (EDQUOT); processes that fill the directory
     * together get ENOSPC; when they exit, everything is gone and the kernel's memory is back
     * (the directory's room is taken once, at boot). */
    pid_t fillers[32];
    int nf = 0;
    for (char verdict = 'q'; verdict == 'q';) {
        CHECK(nf < 32);
        int p[2];
        CHECK_SYS(pipe(p));
        pid_t k = CHECK_SYS(fork());
        if (k == 0) {
            close(p[0]);
            char n[24];
            int own = new_mailbox(), i = 0;
            long r = 0;
            while (r == 0 && i < 100) {
                snprintf(n, sizeof n, "fill%d-%d", nf, i++);
                r = reef_name_register(n, own);
            }
            char v = r == -EDQUOT && i == QUOTA + 1 ? 'q' : r == -ENOSPC ? 'f' : 'x';
            if (write(p[1], &v, 1) != 1)
                _exit(1);
            pause();
            _exit(0);
        }
        close(p[1]);
        CHECK_EQ(read(p[0], &verdict, 1), 1);
        close(p[0]);
        fillers[nf++] = k;
        CHECK(verdict == 'q' || verdict == 'f');
    }
    CHECK(nf > 256 / QUOTA / 2);
    for (int i = 0; i < nf; i++) {
        kill_wait(fillers[i]);
        CHECK(!listed(fillers[i]));
    }
    CHECK_EQ(reef_name_register("after", mb), 0);
    CHECK_EQ(reef_name_unregister("after", mb), 0);
    close(mb);
    long free1 = reef_free_bytes();
    if (free1 < free0 - SLACK)
        FAIL("lost %ld KiB", (free0 - free1) >> 10);
    SAY("a process's %dth registration answers EDQUOT; %d processes filled the directory "
        "(ENOSPC), which empties when they exit; free memory %ld KiB before, %ld KiB after",
        QUOTA + 1, nf, free0 >> 10, free1 >> 10);
    PASS();
}
