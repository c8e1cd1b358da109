/*
 * fleets: fleets of servers bound to cores (fos §3.1 space sharing, §3.2.2 namespace
 * protection; /bin/fleet is usr/fleet.c, the members usr/fleetecho.c, the kernel's part
 * kernel/src/fleet.rs), which Linux does not have: off Reef the program checks that the calls
 * answer ENOSYS and passes.
 *
 * - only the fleet manager binds cores and registers names under fleet/ (this program gets
 *   EPERM, and so does a copy of /bin/fleet), and nothing may rewrite /bin/fleet (ETXTBSY);
 *   bad command lines get status 2, impossible requests status 1;
 * - with one core, `fleet start` refuses the last free core;
 * - a fleet's core runs its member alone: this program's affinity no longer shows it, moving
 *   there is EBUSY, a process pinned there before the fleet started is moved off, and busy
 *   processes started afterwards never run there;
 * - a stream of requests over several connections is answered exactly once, every answer by
 *   a member on its fleet's core, while (4 cores) the fleet grows onto a core and shrinks off
 *   another, and while a member is killed and restarted (--restart); with 2 cores, growing
 *   onto the last free core and shrinking the last member are refused;
 * - `fleet stop` ends the members and the manager, and gives the cores back;
 * - a timeshare fleet (--timeshare) on this program's own core answers a stream while the
 *   core stays free for this program (on every configuration, one core included).
 *
 * Fleets there before it began (Hare's file servers with Hare as the root) are left alone and
 * expected to stay as they were.
 */
#include "reef-test.h"
#include "reef_msg.h"
#include <stdarg.h>

#define MAXC 8
#define ECHO "/test/fleetecho"
#define NAME "fleet/t"
#define REQUESTS 20000
#define CONNS 4
#define WINDOW 8
/* Probes of sched_getcpu by a busy process (it must never see the fleet's core). */
#define PROBES 200000

struct shared {
    atomic_int pinned;    /* the squatter runs on the fleet's core-to-be */
    atomic_int started;   /* the fleet is bound */
    atomic_int answered;  /* requests answered so far */
    atomic_int step;      /* the controller's progress */
    atomic_int killed;    /* pid of the member the controller killed */
};

static struct shared *sh;

static const char *num(int v)
{
    static char bufs[4][16];
    static int i;
    char *b = bufs[i++ % 4];
    snprintf(b, 16, "%d", v);
    return b;
}

/* Whether `cpu` is in this thread's affinity. */
static int affine(int cpu)
{
    cpu_set_t set;
    CHECK_SYS(sched_getaffinity(0, sizeof set, &set));
    return CPU_ISSET(cpu, &set);
}

static int set_affinity(int cpu)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    return sched_setaffinity(0, sizeof set, &set) == 0 ? 0 : -errno;
}

/* The lines of /proc/reef/fleets, in buf. */
static const char *fleets(void)
{
    static char buf[4096];
    int fd = CHECK_SYS(open("/proc/reef/fleets", O_RDONLY));
    ssize_t n = CHECK_SYS(read(fd, buf, sizeof buf - 1));
    buf[n] = 0;
    close(fd);
    return buf;
}

/* /proc/reef/fleets when the program began: the fleets that were there before it (with Hare
 * as the root, Hare's file servers). */
static char before[4096];

/* Fails unless the fleets are those there before the program began. */
static void only_fleets_before(void)
{
    if (strcmp(fleets(), before))
        FAIL("/proc/reef/fleets is not as before (%s): %s", before, fleets());
}

/* Whether /proc/reef/fleets has a line that begins with `start` and ends with `end`. */
static int has_fleet_line(const char *start, const char *end)
{
    const char *all = fleets();
    for (const char *l = all; *l;) {
        const char *nl = strchr(l, '\n');
        size_t len = nl ? (size_t)(nl + 1 - l) : strlen(l);
        size_t e = strlen(end);
        if (!strncmp(l, start, strlen(start)) && len >= e && !strncmp(l + len - e, end, e))
            return 1;
        l += len;
    }
    return 0;
}

/* The member of fleet `name` on `core`, waiting for it to register: its pid. */
static pid_t member_on(const char *name, int core)
{
    long long deadline = now_ns() + 20000000000LL;
    for (;;) {
        struct reef_name_member m;
        for (int i = 0; i < 2 * MAXC; i++)
            if (reef_name_lookup(name, REEF_NAME_ROUND_ROBIN, &m) == 0 && (int)m.core == core)
                return (pid_t)m.pid;
        if (now_ns() > deadline)
            FAIL("no member of %s on core %d after 20 s", name, core);
        usleep(1000);
    }
}

static void hostile(int cpu)
{
    CHECK_EQ(reef_fleet_bind(getpid(), cpu, NAME, 0), -EPERM);
    CHECK_EQ(reef_fleet_bind(getpid(), cpu, NAME, REEF_FLEET_SHARED), -EPERM);
    CHECK_EQ(reef_fleet_bind(getpid(), cpu, NAME, 2), -EINVAL);
    _Atomic uint32_t *ev;
    int mbox = reef_mbox_create(0, &ev);
    CHECK(mbox >= 0);
    CHECK_EQ(reef_name_register(NAME, mbox), -EPERM);
    CHECK_EQ(reef_name_register("fleet/t/ctl", mbox), -EPERM);
    close(mbox);
    /* Nothing rewrites the manager; a copy of it is not trusted. */
    CHECK_ERRNO(open("/bin/fleet", O_WRONLY), ETXTBSY);
    CHECK_ERRNO(open("/bin/fleet", O_RDWR | O_APPEND), ETXTBSY);
    CHECK_ERRNO(truncate("/bin/fleet", 0), ETXTBSY);
    int in = CHECK_SYS(open("/bin/fleet", O_RDONLY));
    int out = CHECK_SYS(open("/tmp/fleetcopy", O_WRONLY | O_CREAT | O_TRUNC, 0755));
    char buf[4096];
    ssize_t n;
    while ((n = CHECK_SYS(read(in, buf, sizeof buf))) > 0)
        CHECK_EQ(write(out, buf, (size_t)n), n);
    close(in);
    close(out);
    CHECK_EQ(run_program("/tmp/fleetcopy", "start", "c", "--cores", num(cpu), ECHO, NULL), 1);
    CHECK_SYS(unlink("/tmp/fleetcopy"));
    /* Command lines. */
    CHECK_EQ(run_program("/bin/fleet", NULL), 2);
    CHECK_EQ(run_program("/bin/fleet", "start", "x", "--cores", "99", ECHO, NULL), 2);
    CHECK_EQ(run_program("/bin/fleet", "start", "x", "--cores", "1-", ECHO, NULL), 2);
    CHECK_EQ(run_program("/bin/fleet", "start", "a/b", "--cores", "0", ECHO, NULL), 2);
    CHECK_EQ(run_program("/bin/fleet", "grow", "x", "zero", NULL), 2);
    CHECK_EQ(run_program("/bin/fleet", "grow", "nosuch", "0", NULL), 1);
    CHECK_EQ(run_program("/bin/fleet", "stop", "nosuch", NULL), 1);
    CHECK_EQ(run_program("/bin/fleet", "start", "x", "--cores", "0", "/nonexistent", NULL), 1);
    only_fleets_before();
    SAY("only the manager binds cores and registers fleet/ names; /bin/fleet cannot be "
        "rewritten and a copy is not trusted; bad command lines refused");
}

/* A busy process that must never run on `core`: PROBES looks at where it runs. */
static void busy(int core)
{
    for (int i = 0; i < PROBES; i++)
        if (sched_getcpu() == core)
            _exit(5);
    _exit(affine(core) ? 6 : 0);
}

/* The stream's connections. */
struct conn {
    int fd;
    struct reef_msg_sender tx;
    struct reef_msg_receiver rx;
    uint32_t out[WINDOW];
    int nout;
};

static uint8_t answered[REQUESTS];
static uint32_t resend[REQUESTS];
static int nresend;
static int next_seq;
static int done;
static int served_by[64];
/* The fleet the stream goes to. */
static const char *stream_to = NAME;

static void connect_one(struct conn *c)
{
    long long deadline = now_ns() + 20000000000LL;
    struct reef_conn_info info;
    int fd;
    /* Between a member's exit and its restart the fleet may have no member. */
    while ((fd = reef_mbox_connect(stream_to, REEF_NAME_ROUND_ROBIN, 0, &info)) < 0) {
        if (fd != -ENOENT && fd != -ECONNREFUSED)
            FAIL("connect to %s: %s", stream_to, strerror(-fd));
        if (now_ns() > deadline)
            FAIL("no member of %s to connect to for 20 s", stream_to);
        usleep(1000);
    }
    c->fd = fd;
    reef_mbox_client(&c->tx, &c->rx, &info, fd);
    c->nout = 0;
}

/* Takes the answers waiting on `c`: whether its connection ended. */
static int take_answers(struct conn *c, const int *fleet_cores)
{
    struct reef_msg m;
    int r;
    while ((r = reef_msg_try_recv(&c->rx, &m)) == 1) {
        uint64_t words[2];
        CHECK_EQ(m.len, sizeof words);
        memcpy(words, m.data, sizeof words);
        uint32_t seq = (uint32_t)words[0];
        int core = (int)(words[1] >> 32);
        int i = 0;
        while (i < c->nout && c->out[i] != seq)
            i++;
        if (i == c->nout)
            FAIL("answer to request %u, which is not outstanding on its connection", seq);
        c->out[i] = c->out[--c->nout];
        if (answered[seq]++)
            FAIL("request %u answered twice", seq);
        if (core < 0 || core >= 64 || !fleet_cores[core])
            FAIL("request %u answered on core %d, not a fleet core", seq, core);
        served_by[core]++;
        done++;
        atomic_store(&sh->answered, done);
    }
    return r == -EPIPE;
}

/* The connection ended (its member left): take what was answered, send the rest again
 * elsewhere. */
static void reconnect(struct conn *c, const int *fleet_cores)
{
    take_answers(c, fleet_cores);
    for (int i = 0; i < c->nout; i++)
        resend[nresend++] = c->out[i];
    close(c->fd);
    connect_one(c);
}

/* REQUESTS requests over CONNS connections, WINDOW outstanding on each; the answers may come
 * from any core in fleet_cores. Returns how many connections ended under the stream. */
/* How many requests the stream may have sent by now: with a controller (`gated`), it waits
 * for the controller's steps, so that each part of it runs under the fleet that step makes
 * (the shrunk fleet serves the third quarter, the restarted member the last), however fast
 * either side is. */
static int sendable(int gated)
{
    if (!gated)
        return REQUESTS;
    int step = atomic_load(&sh->step);
    return step < 2 ? REQUESTS / 2 : step < 3 ? REQUESTS * 3 / 4 : REQUESTS;
}

static int stream(const int *fleet_cores, int gated)
{
    static struct conn conns[CONNS];
    int broken = 0;
    memset(answered, 0, sizeof answered);
    memset(served_by, 0, sizeof served_by);
    next_seq = done = nresend = 0;
    atomic_store(&sh->answered, 0);
    for (int i = 0; i < CONNS; i++)
        connect_one(&conns[i]);
    while (done < REQUESTS) {
        int progress = 0;
        for (int i = 0; i < CONNS; i++) {
            struct conn *c = &conns[i];
            while (c->nout < WINDOW && (nresend > 0 || next_seq < sendable(gated))) {
                uint32_t seq = nresend > 0 ? resend[nresend - 1] : (uint32_t)next_seq;
                struct reef_msg m;
                uint64_t word = seq;
                reef_msg_make(&m, 1, &word, sizeof word);
                int r = reef_msg_try_send(&c->tx, &m);
                if (r == -EAGAIN)
                    break;
                if (r == -EPIPE) {
                    reconnect(c, fleet_cores);
                    broken++;
                    progress = 1;
                    break;
                }
                CHECK_EQ(r, 0);
                if (nresend > 0)
                    nresend--;
                else
                    next_seq++;
                c->out[c->nout++] = seq;
                progress = 1;
            }
            int before = done;
            if (take_answers(c, fleet_cores)) {
                reconnect(c, fleet_cores);
                broken++;
            }
            progress |= done != before;
        }
        if (!progress)
            sched_yield();
    }
    for (int i = 0; i < CONNS; i++)
        close(conns[i].fd);
    for (int s = 0; s < REQUESTS; s++)
        if (answered[s] != 1)
            FAIL("request %d answered %d times", s, answered[s]);
    return broken;
}

/* The controller (a child): resizes the fleet and kills a member while the stream runs. */
static void control(int ncpus, int f, int g, int other)
{
    wait_at_least(&sh->answered, REQUESTS / 4);
    if (ncpus >= 3) {
        if (run_program("/bin/fleet", "grow", "t", num(g), NULL) != 0)
            _exit(10);
        if (run_program("/bin/fleet", "grow", "t", num(g), NULL) != 1) /* a member there already */
            _exit(11);
        atomic_store(&sh->step, 1);
        wait_at_least(&sh->answered, REQUESTS / 2);
        if (run_program("/bin/fleet", "shrink", "t", num(f), NULL) != 0)
            _exit(12);
        if (run_program("/bin/fleet", "shrink", "t", num(g), NULL) != 1) /* the last member */
            _exit(13);
    } else {
        if (run_program("/bin/fleet", "grow", "t", num(other), NULL) != 1) /* the last free core */
            _exit(14);
        if (run_program("/bin/fleet", "shrink", "t", num(f), NULL) != 1) /* the last member */
            _exit(15);
    }
    atomic_store(&sh->step, 2);
    wait_at_least(&sh->answered, REQUESTS * 3 / 4);
    int victim = ncpus >= 3 ? g : f;
    pid_t pid = member_on(NAME, victim);
    atomic_store(&sh->killed, pid);
    kill(pid, SIGKILL);
    atomic_store(&sh->step, 3);
    _exit(0);
}

/* Waits for the manager of fleet `name` (`ctl`, this program's child once its command exited,
 * when this program is init) after `fleet stop`. */
static void await_manager(pid_t ctl)
{
    if (getpid() == 1)
        CHECK_CHILD_EXIT(ctl, 0);
    else
        while (kill(ctl, 0) == 0)
            usleep(1000);
}

/* Timeshare placement (Hare §5.3.2): a member pinned to this program's own core, which stays
 * free for everything else. */
static void timeshare(int cpu)
{
    CHECK_EQ(run_program("/bin/fleet", "start", "ts", "--timeshare", "--cores", num(cpu), ECHO, NULL), 0);
    pid_t member = member_on("fleet/ts", cpu);
    struct reef_name_member ctl;
    CHECK_EQ(reef_name_lookup("fleet/ts/ctl", REEF_NAME_NEAREST, &ctl), 0);
    char core[16], line[128];
    snprintf(core, sizeof core, "core %d ", cpu);
    snprintf(line, sizeof line, "pid %d fleet fleet/ts shared\n", member);
    if (!has_fleet_line(core, line))
        FAIL("/proc/reef/fleets lacks \"%s... %s\": %s", core, line, fleets());
    CHECK(affine(cpu));
    CHECK_EQ(set_affinity(cpu), 0);
    int fleet_cores[64] = {0};
    fleet_cores[cpu] = 1;
    stream_to = "fleet/ts";
    int broken = stream(fleet_cores, 0);
    CHECK_EQ(broken, 0);
    CHECK_EQ(run_program("/bin/fleet", "stop", "ts", NULL), 0);
    await_manager((pid_t)ctl.pid);
    only_fleets_before();
    SAY("timeshare: a member pinned to core %d beside this program, which still runs there, "
        "answered %d requests exactly once",
        cpu, REQUESTS);
}

int main(void)
{
    test_begin("fleets");
    if (!on_reef()) {
        CHECK_EQ(reef_fleet_bind(getpid(), 0, NAME, 0), -ENOSYS);
        SAY("not Reef: the fleet calls answer ENOSYS");
        PASS();
    }
    snprintf(before, sizeof before, "%s", fleets());
    sh = shared_page(4096);
    int cpus[MAXC];
    int ncpus = allowed_cpus(cpus, MAXC);
    pin_self(cpus[0]);
    hostile(cpus[0]);
    if (ncpus == 1) {
        CHECK_EQ(run_program("/bin/fleet", "start", "t", "--cores", num(cpus[0]), ECHO, NULL), 1);
        only_fleets_before();
        SAY("one core: the last free core cannot become a fleet's");
        timeshare(cpus[0]);
        PASS();
    }
    int f = cpus[ncpus - 1], g = cpus[ncpus - 2];
    CHECK(ncpus == 2 || g != cpus[0]);

    /* A process pinned to the core before the fleet takes it. */
    pid_t squatter = CHECK_SYS(fork());
    if (squatter == 0) {
        pin_self(f);
        atomic_store(&sh->pinned, 1);
        wait_at_least(&sh->started, 1);
        while (sched_getcpu() == f)
            ;
        busy(f);
    }
    wait_at_least(&sh->pinned, 1);
    CHECK_EQ(run_program("/bin/fleet", "start", "t", "--restart", "--cores", num(f), ECHO, NULL), 0);
    atomic_store(&sh->started, 1);
    pid_t first = member_on(NAME, f);
    struct reef_name_member ctl;
    CHECK_EQ(reef_name_lookup("fleet/t/ctl", REEF_NAME_NEAREST, &ctl), 0);
    char line[128];
    snprintf(line, sizeof line, "pid %d fleet %s owned\n", first, NAME);
    if (!strstr(fleets(), line))
        FAIL("/proc/reef/fleets lacks \"%s\": %s", line, fleets());
    CHECK_EQ(run_program("/bin/fleet", "start", "t", "--cores", num(g), ECHO, NULL), 1); /* twice */
    CHECK_EQ(run_program("/bin/fleet", "list", NULL), 0);

    /* Space sharing. */
    CHECK(!affine(f));
    CHECK_EQ(set_affinity(f), -EBUSY);
    CHECK_EQ(set_affinity(cpus[0]), 0);
    pid_t busies[2];
    for (int i = 0; i < 2; i++) {
        busies[i] = CHECK_SYS(fork());
        if (busies[i] == 0) {
            cpu_set_t all;
            CPU_ZERO(&all);
            for (int c = 0; c < ncpus; c++)
                CPU_SET(cpus[c], &all);
            if (sched_setaffinity(0, sizeof all, &all) != 0)
                _exit(7);
            busy(f);
        }
    }
    CHECK_CHILD_EXIT(squatter, 0);
    for (int i = 0; i < 2; i++)
        CHECK_CHILD_EXIT(busies[i], 0);
    SAY("core %d is the fleet's: hidden from affinities, EBUSY to move onto, a process pinned "
        "there moved off, busy processes never ran there (%d probes each)",
        f, PROBES);

    /* The stream, resized and broken under it. */
    pid_t controller = CHECK_SYS(fork());
    if (controller == 0)
        control(ncpus, f, g, cpus[0]);
    int fleet_cores[64] = {0};
    fleet_cores[f] = 1;
    if (ncpus >= 3)
        fleet_cores[g] = 1;
    int broken = stream(fleet_cores, 1);
    CHECK_CHILD_EXIT(controller, 0);
    int victim = ncpus >= 3 ? g : f;
    pid_t again;
    while ((again = member_on(NAME, victim)) == atomic_load(&sh->killed))
        usleep(1000);
    if (ncpus >= 3) {
        CHECK(served_by[g] > 0);
        CHECK_EQ(set_affinity(f), 0); /* given back by the shrink */
        CHECK_EQ(set_affinity(cpus[0]), 0);
    }
    SAY("%d requests over %d connections answered exactly once (core %d: %d, core %d: %d), "
        "%d connections ended under the stream and were made again; %s; the killed member "
        "(pid %d) restarted as pid %d",
        REQUESTS, CONNS, f, served_by[f], g, ncpus >= 3 ? served_by[g] : 0, broken,
        ncpus >= 3 ? "grown and shrunk under it" : "growing onto the last free core and "
                                                   "shrinking the last member refused",
        atomic_load(&sh->killed), again);

    /* Stop. */
    CHECK_EQ(run_program("/bin/fleet", "stop", "t", NULL), 0);
    await_manager((pid_t)ctl.pid);
    only_fleets_before();
    struct reef_name_member m;
    CHECK_EQ(reef_name_lookup(NAME, REEF_NAME_NEAREST, &m), -ENOENT);
    CHECK_EQ(reef_name_lookup("fleet/t/ctl", REEF_NAME_NEAREST, &m), -ENOENT);
    CHECK_EQ(set_affinity(f), 0);
    CHECK_EQ(set_affinity(cpus[0]), 0);
    CHECK_EQ(run_program("/bin/fleet", "stop", "t", NULL), 1);
    SAY("stopped: no member, no manager, no names, the cores free again");
    timeshare(cpus[0]);
    PASS();
}
