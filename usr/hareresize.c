/*
 * hareresize: growing and shrinking Hare's fleet of file servers while a program creates files,
 * and directories distributing themselves (issue 13; Hare §6.1.1 and §6.1.2, dynamic resizing
 * and dynamic distribution, the thesis's open problems). The fleet starts with
 * one server, Hare is mounted, and a worker process creates FILES files in a distributed
 * directory and FILES in an ordinary one, each holding its own name, reading the previous one
 * back as it goes. Meanwhile `fleet grow hare CORE` and `fleet shrink hare CORE` change the
 * servers, the first one (which held the root) leaving too: with four cores
 *
 *   1 -> 1,2 -> 1,2,3 -> 2,3 -> 1,2,3 -> 1,2 -> 1          (split: each server owns its core)
 *
 * and with two, 1 -> 0,1 -> 0 -> 0,1 -> 1 (timeshare: servers share cores with programs).
 * Where the worker is when each change lands does not matter: what is checked holds for
 * every interleaving:
 *
 *  - after each change, /proc/reef/hare names the servers and every shard has one (256);
 *  - the worker's every call succeeds, and at the end each file reads back its name, each
 *    directory lists exactly its files, a file opened before the first change and read after
 *    the last reads back what was written, and statfs's used blocks are exactly the files'
 *    (no block lost or given twice while free blocks moved between servers);
 *  - after umount, a new mount finds the resized fleet (its table from the servers) and
 *    every file, also after a grow while unmounted;
 *  - §6.1.2 (mount option distribute_at=64): the worker's ordinary directory distributed
 *    itself as it grew; with two servers, a directory of 128 creates and unlinks (one entry
 *    at a time) stays ordinary, one of 63 entries made from one core too, the 64th makes it
 *    distributed, and 16 entries made from two cores make another; every entry is listed
 *    after, and every file of the worker still reads back;
 *  - a process other than the fleet manager cannot call reef_fleet_resize (EPERM; EFAULT for
 *    a bad name pointer and EINVAL for a huge name length first), a second
 *    member on a core is refused, the last member cannot be shrunk.
 *
 * Off Reef (Linux, not root or no such type) mount answers an error and nothing else is done.
 */
#include "reef-test.h"
#include "hare_fleet.h"
#include <dirent.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>

#define MNT "/mnt/hareresize"
#define FILES 150
#define S_DISTRIBUTED 0200000
#define KEPT_BYTES (3 * 4096)
/* Entries at which an ordinary directory distributes itself (a quarter of them made from two
 * cores or more). */
#define DISTRIBUTE_AT "64"

/* The servers' cores after each step: `+C` grows onto core C, `-C` shrinks off it. */
static const char *const STEPS_SPLIT[] = {"+2", "+3", "-1", "+1", "-3", "-2"};
static const char *const STEPS_TIMESHARE[] = {"+0", "-1", "+1", "-0"};

static void write_all(int fd, const char *p, size_t n)
{
    while (n > 0) {
        ssize_t w = CHECK_SYS(write(fd, p, n));
        p += w;
        n -= (size_t)w;
    }
}

/* Checks that `path` holds exactly its own name. */
static void check_named(const char *path)
{
    char back[128];
    int fd = open(path, O_RDONLY);
    if (fd < 0)
        FAIL("open %s: %s", path, strerror(errno));
    ssize_t n = CHECK_SYS(read(fd, back, sizeof back));
    CHECK_SYS(close(fd));
    if (n != (ssize_t)strlen(path) || memcmp(back, path, (size_t)n) != 0)
        FAIL("%s holds %zd bytes, not its name", path, n);
}

/* Files the worker has made so far (a shared page): each step waits for more. */
static atomic_int *made;

/* The worker: creates the files of both directories, each checked once made. */
static void worker(void)
{
    char path[128], prev[128] = "";
    for (int i = 0; i < FILES; i++) {
        for (int d = 0; d < 2; d++) {
            snprintf(path, sizeof path, MNT "/%s/f%d", d ? "plain" : "spread", i);
            int fd = open(path, O_CREAT | O_EXCL | O_WRONLY, 0644);
            if (fd < 0)
                FAIL("create %s: %s", path, strerror(errno));
            write_all(fd, path, strlen(path));
            CHECK_SYS(close(fd));
            atomic_fetch_add(made, 1);
            if (prev[0])
                check_named(prev);
            memcpy(prev, path, sizeof path);
        }
    }
    _exit(0);
}

/* Directories that became distributed by themselves, as /proc/reef/hare counts them. */
static int distributed_dirs;

/* The servers /proc/reef/hare lists, their shards in all, and what it says of the last
 * resize (shards moved, microseconds the kernel's clients were held back); sets
 * distributed_dirs. */
static int servers_listed(int *shards, int *moved, long *held_us)
{
    FILE *f = fopen("/proc/reef/hare", "r");
    CHECK(f != NULL);
    char line[512];
    int n = 0;
    *shards = 0;
    *moved = -1;
    *held_us = -1;
    while (fgets(line, sizeof line, f)) {
        char *at = strstr(line, " shards ");
        if (!strncmp(line, "server ", 7) && at) {
            n++;
            *shards += atoi(at + 8);
        }
        if (!strncmp(line, "resizes ", 8))
            CHECK_EQ(sscanf(line,
                            "resizes %*d last_resize_shards_moved %d last_resize_held_us %ld "
                            "directories_distributed %d",
                            moved, held_us, &distributed_dirs),
                     3);
    }
    fclose(f);
    return n;
}

/* The entries of directory `dir` other than . and .., each checked to be f0..f(FILES-1) once. */
static void check_listing(const char *dir)
{
    static char seen[FILES];
    memset(seen, 0, sizeof seen);
    DIR *d = opendir(dir);
    CHECK(d != NULL);
    struct dirent *e;
    int n = 0;
    while ((e = readdir(d)) != NULL) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
            continue;
        int i = e->d_name[0] == 'f' ? atoi(e->d_name + 1) : -1;
        if (i < 0 || i >= FILES || seen[i])
            FAIL("%s lists %s (again, or not a file of the worker's)", dir, e->d_name);
        seen[i] = 1;
        n++;
    }
    closedir(d);
    CHECK_EQ(n, FILES);
}

/* Every file of both directories reads back its name and is listed once. */
static void check_files(void)
{
    char path[128];
    for (int i = 0; i < FILES; i++)
        for (int d = 0; d < 2; d++) {
            snprintf(path, sizeof path, MNT "/%s/f%d", d ? "plain" : "spread", i);
            check_named(path);
        }
    check_listing(MNT "/spread");
    check_listing(MNT "/plain");
}

/* Makes `n` files `prefix0`.. in directory `dir`. */
static void make_files(const char *dir, const char *prefix, int n)
{
    char path[128];
    for (int i = 0; i < n; i++) {
        snprintf(path, sizeof path, "%s/%s%d", dir, prefix, i);
        CHECK_SYS(close(CHECK_SYS(open(path, O_CREAT | O_EXCL | O_WRONLY, 0644))));
    }
}

/* The entries of `dir` other than . and .. */
static int count_entries(const char *dir)
{
    DIR *d = opendir(dir);
    CHECK(d != NULL);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
    closedir(d);
    return n;
}

/* §6.1.2: a directory distributes itself at DISTRIBUTE_AT entries, or a quarter of them made
 * from two cores (with two servers, so that its entries move). */
static void check_self_distribution(int cores)
{
    int shards, moved;
    long held_us;
    CHECK_EQ(servers_listed(&shards, &moved, &held_us), 2);
    CHECK_EQ(distributed_dirs, 0);
    int at = atoi(DISTRIBUTE_AT);
    pin_self(0);
    /* Entries count, not creates: a directory whose files come and go stays ordinary. */
    CHECK_SYS(mkdir(MNT "/churn", 0755));
    for (int i = 0; i < 2 * at; i++) {
        make_files(MNT "/churn", "c", 1);
        CHECK_SYS(unlink(MNT "/churn/c0"));
    }
    servers_listed(&shards, &moved, &held_us);
    CHECK_EQ(distributed_dirs, 0);
    CHECK_SYS(mkdir(MNT "/grow", 0755));
    make_files(MNT "/grow", "g", at - 1);
    servers_listed(&shards, &moved, &held_us);
    CHECK_EQ(distributed_dirs, 0);
    make_files(MNT "/grow", "h", 1);
    servers_listed(&shards, &moved, &held_us);
    CHECK_EQ(distributed_dirs, 1);
    CHECK_EQ(count_entries(MNT "/grow"), at);
    make_files(MNT "/grow", "k", 20);
    CHECK_EQ(count_entries(MNT "/grow"), at + 20);
    CHECK_SYS(mkdir(MNT "/shared", 0755));
    pid_t kid = CHECK_SYS(fork());
    if (kid == 0) {
        pin_self(cores - 1);
        make_files(MNT "/shared", "c", at / 8);
        _exit(0);
    }
    CHECK_CHILD_EXIT(kid, 0);
    make_files(MNT "/shared", "p", at / 8);
    servers_listed(&shards, &moved, &held_us);
    CHECK_EQ(distributed_dirs, 2);
    CHECK_EQ(count_entries(MNT "/shared"), at / 4);
    SAY("with two servers, a directory distributed itself at %d entries made from one core (not "
        "%d), another at %d from two; %d creates and unlinks left one ordinary",
        at, at - 1, at / 4, 2 * at);
}

int main(void)
{
    test_begin("hareresize");
    if (!on_reef()) {
        CHECK(mount("none", "/", "hare", 0, NULL) != 0);
        SAY("not Reef: mount -t hare answers %s", strerror(errno));
        PASS();
    }
    int cores = (int)sysconf(_SC_NPROCESSORS_ONLN);
    if (cores < 2) {
        SAY("one core: a fleet of one server has nothing to grow onto");
        PASS();
    }
    bool split = cores >= 4;
    const char *const *steps = split ? STEPS_SPLIT : STEPS_TIMESHARE;
    int nsteps = split ? 6 : 4;
    CHECK(mkdir("/mnt", 0755) == 0 || errno == EEXIST);
    CHECK(mkdir(MNT, 0755) == 0 || errno == EEXIST);
    long free_before = reef_free_memory(NULL);
    hare_fleet_start_on("1", 1, !split);
    CHECK_EQ(reef_fleet_resize(getpid(), HARE_FLEET, REEF_FLEET_JOIN), -EPERM);
    errno = 0;
    CHECK_EQ(syscall(SYS_reef_fleet_resize, (long)getpid(), (const char *)1, 10L,
                     (long)REEF_FLEET_LEAVE),
             -1);
    CHECK_EQ(errno, EFAULT);
    errno = 0;
    CHECK_EQ(syscall(SYS_reef_fleet_resize, (long)getpid(), HARE_FLEET, 1L << 40,
                     (long)REEF_FLEET_JOIN),
             -1);
    CHECK_EQ(errno, EINVAL);
    CHECK_SYS(mount("none", MNT, "hare", 0, "cache=16,distribute_at=" DISTRIBUTE_AT));
    CHECK(file_has("/proc/mounts", "hare " MNT " hare rw,cache=16M,distribute_at=" DISTRIBUTE_AT));
    struct statfs fs;
    CHECK_SYS(statfs(MNT, &fs));
    long total = (long)fs.f_blocks, free_at_start = (long)fs.f_bfree;
    CHECK_SYS(mkdir(MNT "/spread", 0755 | S_DISTRIBUTED));
    CHECK_SYS(mkdir(MNT "/plain", 0755));
    static char kept_data[KEPT_BYTES], back[KEPT_BYTES];
    for (int i = 0; i < KEPT_BYTES; i++)
        kept_data[i] = (char)(i * 13 + i / 4096);
    int kept = CHECK_SYS(open(MNT "/kept", O_CREAT | O_RDWR, 0644));
    write_all(kept, kept_data, KEPT_BYTES);
    SAY("one server on core 1 (%s), Hare mounted, %ld blocks free", split ? "split" : "timeshare",
        free_at_start);

    made = shared_page(sizeof *made);
    pid_t kid = CHECK_SYS(fork());
    if (kid == 0)
        worker();
    int servers = 1;
    for (int s = 0; s < nsteps; s++) {
        /* Each fleet has files made before it, and the worker goes on through the change. */
        while (atomic_load(made) < 2 * FILES * (s + 1) / (nsteps + 2)) {
            int status;
            if (CHECK_SYS(waitpid(kid, &status, WNOHANG)) == kid)
                FAIL("the worker %s after %d files", describe_wait(status), atomic_load(made));
            sched_yield();
        }
        const char *core = steps[s] + 1;
        bool grow = steps[s][0] == '+';
        long long t0 = now_ns();
        CHECK_EQ(run_program("/bin/fleet", grow ? "grow" : "shrink", "hare", core, NULL), 0);
        long long took = now_ns() - t0;
        servers += grow ? 1 : -1;
        int shards, moved;
        long held_us;
        CHECK_EQ(servers_listed(&shards, &moved, &held_us), servers);
        CHECK_EQ(shards, 256);
        SAY("%s core %s: %d servers hold the 256 shards (the worker has made %d files); %d "
            "shards moved, clients held %ld us, the command took %lld us",
            grow ? "grown onto" : "shrunk off", core, servers, atomic_load(made), moved, held_us,
            took / 1000);
    }
    CHECK_CHILD_EXIT(kid, 0);
    SAY("the worker made its %d files while the fleet grew and shrank %d times", 2 * FILES,
        nsteps);

    /* The refusals: a second member on a core, the last member. */
    CHECK(run_program("/bin/fleet", "grow", "hare", "1", NULL) != 0);
    CHECK(run_program("/bin/fleet", "shrink", "hare", "1", NULL) != 0);

    check_files();
    CHECK_EQ(pread(kept, back, KEPT_BYTES, 0), KEPT_BYTES);
    CHECK(memcmp(back, kept_data, KEPT_BYTES) == 0);
    CHECK_SYS(close(kept));
    CHECK_SYS(statfs(MNT, &fs));
    CHECK_EQ((long)fs.f_blocks, total);
    CHECK_EQ(free_at_start - (long)fs.f_bfree, 2 * FILES + KEPT_BYTES / 4096);
    SAY("every file reads back and is listed once; /kept, open throughout, too; %ld blocks "
        "used, exactly the files'",
        free_at_start - (long)fs.f_bfree);
    int shards, moved;
    long held_us;
    servers_listed(&shards, &moved, &held_us);
    CHECK_EQ(distributed_dirs, 1);
    SAY("the worker's ordinary directory distributed itself during its creates");

    CHECK_SYS(umount(MNT));
    CHECK_SYS(mount("none", MNT, "hare", 0, NULL));
    check_files();
    SAY("mounted again: the resized fleet's table and every file");
    CHECK_SYS(umount(MNT));

    /* Unmounted, the kernel still resizes the servers it gave the cache. */
    CHECK_EQ(run_program("/bin/fleet", "grow", "hare", steps[0] + 1, NULL), 0);
    CHECK_SYS(mount("none", MNT, "hare", 0, "distribute_at=" DISTRIBUTE_AT));
    CHECK_EQ(servers_listed(&shards, &moved, &held_us), 2);
    CHECK_EQ(shards, 256);
    check_files();
    SAY("grown onto core %s while unmounted: mounted again, two servers and every file",
        steps[0] + 1);
    check_self_distribution(cores);
    check_files();
    CHECK_SYS(umount(MNT));
    hare_fleet_stop(free_before);
    PASS();
}
