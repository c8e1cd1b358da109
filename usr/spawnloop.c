/*
 * spawnloop: many processes created and reaped, and no memory lost doing it.
 *
 * - warm-up: 50 rounds of fork + _exit and of fork + exec of this program with `noop`;
 * - free memory measured with Reef's reef_free_bytes (system call 1024);
 * - 1000 rounds of fork, a child that touches some memory (a copy of a data page, a fresh
 *   mapping) and calls _exit(i & 0xff), and waitpid checking that status;
 * - 200 rounds of fork + exec of this program with `noop` (exits 0), checked the same way;
 * - free memory measured again: more than 4 MiB less than before is a leak (FAIL). Reef's
 *   kernel heap takes memory in 2 MiB steps and keeps it, so one or two steps of growth are
 *   not a leak; a leak of even 4 KiB per process would lose 4.7 MiB over these 1200.
 *
 * On Linux reef_free_bytes is ENOSYS and the memory check is skipped (the loops still run).
 */
#include "reef-test.h"

#define WARMUP 50
#define FORKS 1000
#define EXECS 200
#define MAX_LOSS (4L << 20)

static const char *self;
static char **environment;
static char scratch[4 * 4096];

/* The child's work: copy-on-write a data page, map and touch fresh memory. */
static void child_work(int i)
{
    scratch[(i % 4) * 4096] = (char)i;
    char *m = mmap(NULL, 4 * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED)
        _exit(254);
    for (int p = 0; p < 4; p++)
        m[p * 4096] = (char)i;
}

static void fork_exit(int i)
{
    pid_t pid = fork();
    if (pid < 0)
        FAIL("fork %d failed: %s", i, strerror(errno));
    if (pid == 0) {
        child_work(i);
        _exit(i & 0xff);
    }
    CHECK_CHILD_EXIT(pid, i & 0xff);
}

static void fork_exec(int i)
{
    pid_t pid = fork();
    if (pid < 0)
        FAIL("fork %d failed: %s", i, strerror(errno));
    if (pid == 0) {
        char *argv[] = {(char *)self, "noop", NULL};
        execve(self, argv, environment);
        _exit(255);
    }
    CHECK_CHILD_EXIT(pid, 0);
}

int main(int argc, char **argv, char **envp)
{
    if (argc == 2 && strcmp(argv[1], "noop") == 0)
        return 0;
    test_begin("spawnloop");
    if (argc != 1)
        FAIL("usage: spawnloop (with no arguments)");
    self = self_path(argv[0]);
    environment = envp;

    for (int i = 0; i < WARMUP; i++) {
        fork_exit(i);
        fork_exec(i);
    }
    SAY("warm-up: %d fork+exit and %d fork+exec rounds", WARMUP, WARMUP);
    long before = reef_free_bytes();
    int measure = before >= 0;
    if (measure)
        SAY("free memory after the warm-up: %ld KiB", before / 1024);
    else
        SAY("reef_free_bytes: %s; the leak check is skipped (not Reef)", strerror(errno));

    for (int i = 0; i < FORKS; i++)
        fork_exit(i);
    SAY("%d fork + _exit(i & 0xff) + waitpid rounds, every status checked", FORKS);
    for (int i = 0; i < EXECS; i++)
        fork_exec(i);
    SAY("%d fork + exec(noop) + waitpid rounds", EXECS);

    if (measure) {
        long after = reef_free_bytes();
        if (after < 0)
            FAIL("reef_free_bytes failed the second time: %s", strerror(errno));
        SAY("free memory after the loops: %ld KiB (%+ld KiB)", after / 1024,
            (after - before) / 1024);
        if (before - after > MAX_LOSS)
            FAIL("%ld KiB of memory lost over %d processes (limit %ld KiB)",
                 (before - after) / 1024, FORKS + EXECS, MAX_LOSS / 1024);
    }
    PASS();
}
