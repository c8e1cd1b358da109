/*
 * layout: where execve places a program (address-space layout randomization: Linux's, and
 * Reef's vm::UserLayout) and personality(2), which turns it off.
 *
 * Runs copies of itself as probes (`layout probe FD`), each of which writes to a pipe the
 * address of a local variable (its stack), of a fresh anonymous mapping, and its personality:
 *
 * - random: five probes started normally have five different stacks and five different
 *   mappings (skipped where the system does not randomize: Linux with
 *   /proc/sys/kernel/randomize_va_space 0). Two equal by chance has odds below 1 in 2^20;
 * - fixed: five probes started under personality(ADDR_NO_RANDOMIZE), set in the child before
 *   execve, all have the same stack and the same mapping, and still have the flag (execve
 *   keeps the personality);
 * - calls: personality(0xffffffff) reads without changing, a set returns the old value, a
 *   fork child inherits it; on Reef, an execution domain other than PER_LINUX is refused
 *   with EINVAL and changes nothing (Linux accepts them).
 */
#include "reef-test.h"
#include <sys/mman.h>
#include <sys/personality.h>
#include <sys/wait.h>

#define PROBES 5

struct report {
    unsigned long stack, mapping, persona;
};

static int probe_main(int fd)
{
    volatile int local = 0;
    void *m = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED)
        return 3;
    struct report r = {(unsigned long)&local, (unsigned long)m,
                       (unsigned long)personality(0xffffffff)};
    return write(fd, &r, sizeof r) == sizeof r ? 0 : 4;
}

/* Runs a probe (under personality `persona` unless it is -1) and returns its report. */
static struct report run_probe(const char *self, long persona)
{
    int p[2];
    CHECK_SYS(pipe(p));
    pid_t pid = fork();
    CHECK_SYS(pid);
    if (pid == 0) {
        close(p[0]);
        if (persona >= 0 && personality((unsigned long)persona) < 0)
            _exit(5);
        char fd[16];
        snprintf(fd, sizeof fd, "%d", p[1]);
        execl(self, self, "probe", fd, (char *)NULL);
        _exit(6);
    }
    close(p[1]);
    struct report r;
    CHECK_EQ(read(p[0], &r, sizeof r), (long)sizeof r);
    close(p[0]);
    int st;
    CHECK_EQ(waitpid(pid, &st, 0), pid);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
        FAIL("probe: %s", describe_wait(st));
    return r;
}

/* Whether the system randomizes layouts: always on Reef, on Linux unless switched off. */
static int randomizing(void)
{
    if (on_reef())
        return 1;
    FILE *f = fopen("/proc/sys/kernel/randomize_va_space", "r");
    int level = 2;
    if (f) {
        if (fscanf(f, "%d", &level) != 1)
            level = 2;
        fclose(f);
    }
    return level != 0;
}

static void random_layouts(const char *self)
{
    if (!randomizing()) {
        SAY("random: skipped, /proc/sys/kernel/randomize_va_space is 0 here");
        return;
    }
    struct report r[PROBES];
    for (int i = 0; i < PROBES; i++) {
        r[i] = run_probe(self, -1);
        SAY("random: probe %d: stack %#lx, mapping %#lx", i, r[i].stack, r[i].mapping);
        CHECK_EQ(r[i].persona & ADDR_NO_RANDOMIZE, 0);
        for (int j = 0; j < i; j++)
            if (r[i].stack == r[j].stack || r[i].mapping == r[j].mapping)
                FAIL("probes %d and %d were laid out alike", j, i);
    }
}

static void fixed_layouts(const char *self)
{
    struct report first = run_probe(self, ADDR_NO_RANDOMIZE);
    SAY("fixed: stack %#lx, mapping %#lx", first.stack, first.mapping);
    CHECK(first.persona & ADDR_NO_RANDOMIZE);
    for (int i = 1; i < PROBES; i++) {
        struct report r = run_probe(self, ADDR_NO_RANDOMIZE);
        CHECK_EQ(r.stack, first.stack);
        CHECK_EQ(r.mapping, first.mapping);
        CHECK_EQ(r.persona, first.persona);
    }
}

static void calls(void)
{
    int old = personality(0xffffffff);
    CHECK_SYS(old);
    CHECK_EQ(personality(0xffffffff), old);
    CHECK_EQ(personality(old | ADDR_NO_RANDOMIZE), old);
    CHECK_EQ(personality(0xffffffff), old | ADDR_NO_RANDOMIZE);
    pid_t pid = fork();
    CHECK_SYS(pid);
    if (pid == 0)
        _exit(personality(0xffffffff) == (old | ADDR_NO_RANDOMIZE) ? 0 : 1);
    int st;
    CHECK_EQ(waitpid(pid, &st, 0), pid);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    if (on_reef()) {
        errno = 0;
        CHECK_EQ(personality(PER_BSD), -1);
        CHECK_EQ(errno, EINVAL);
        CHECK_EQ(personality(0xffffffff), old | ADDR_NO_RANDOMIZE);
    }
    CHECK_EQ(personality(old), old | ADDR_NO_RANDOMIZE);
    SAY("calls: read, set, inherited%s", on_reef() ? ", foreign domain refused" : "");
}

int main(int argc, char **argv)
{
    if (argc == 3 && !strcmp(argv[1], "probe"))
        return probe_main(atoi(argv[2]));
    test_begin("layout");
    const char *self = self_path(argv[0]);
    random_layouts(self);
    fixed_layouts(self);
    calls();
    PASS();
}
