/*
 * fleet: Reef's fleet manager (fos §3.1 space sharing, §3.2.2 namespace protection; the
 * kernel's part is kernel/src/fleet.rs). Installed as /bin/fleet, the one executable the
 * kernel trusts to bind cores to fleet members and to register any name under "fleet/".
 *
 *   fleet start NAME [--restart] [--timeshare] --cores LIST PROGRAM [ARG...]
 *   fleet grow NAME CORE
 *   fleet shrink NAME CORE
 *   fleet stop NAME
 *   fleet list
 *
 * `start` forks the fleet's manager, a daemon in a session of its own, and returns once every
 * member has been bound to its core and is executing PROGRAM (status 0), or with the first
 * error (status 1; members started are stopped again). LIST is cores and ranges: "1,3-5".
 *
 * A member is a child of the manager that waits until the manager has bound it to its core
 * (reef_fleet_bind: nothing else runs there; with --timeshare the member is pinned there and
 * time-shares the core with other programs, Hare's timeshare placement), then executes PROGRAM
 * with FLEET_NAME=fleet/NAME, FLEET_CORE=C and FLEET_SHARED=1 (--timeshare) or 0 (it owns the
 * core) in its environment. It registers its mailbox under FLEET_NAME, which only
 * the fleet's members and the manager may do; clients look that name up.
 *
 * The manager serves the mailbox "fleet/NAME/ctl": grow, shrink and stop are one request each,
 * answered with 0 or an errno value. Growing and shrinking tell the kernel
 * (reef_fleet_resize): a grown member once it has registered its name, a member to shrink
 * before it is stopped, so that a kernel service built on the fleet (Hare's mount, which
 * moves the file servers' shards) moves its state first; an error there undoes the grow or
 * refuses the shrink. Shrinking then sends SIGTERM to the core's member, which
 * should unregister its name (new clients go to the others), answer the requests it has taken
 * and exit; a client whose connection ends then reconnects to another member and sends again
 * what was not answered. A member still there after 5 seconds gets SIGKILL. A member that
 * dies otherwise is reported on standard error and, with --restart, started again on its core
 * (at most 10 times per core; a member that could not execute PROGRAM is not restarted).
 * `list` prints /proc/reef/fleets, one line per core a fleet owns.
 *
 * Exit status: 0 done, 1 the operation failed (the message says why), 2 bad usage.
 */
#define _GNU_SOURCE
#include "reef_msg.h"
#include <ctype.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>

#define MAX_CORES 64
#define RESTARTS_MAX 10
#define EXEC_FAILED 127
/* How long a member may take to exit after SIGTERM, and a command for its answer. */
#define GRACE_MS 5000
#define ANSWER_MS 30000

enum op { OP_GROW = 1, OP_SHRINK = 2, OP_STOP = 3 };

static const char *fleet;     /* NAME */
static char member_name[80];  /* fleet/NAME */
static char ctl_name[96];     /* fleet/NAME/ctl */
static char **program;        /* PROGRAM [ARG...] */
static int restart;
static int timeshare;
static pid_t members[MAX_CORES];
static int restarts[MAX_CORES];
static int wake_pipe[2] = {-1, -1};

static void usage(void)
{
    fprintf(stderr, "usage: fleet start NAME [--restart] [--timeshare] --cores LIST PROGRAM "
                    "[ARG...]\n"
                    "       fleet grow NAME CORE\n"
                    "       fleet shrink NAME CORE\n"
                    "       fleet stop NAME\n"
                    "       fleet list\n");
    exit(2);
}

static long long now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (long long)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

/* NAME: letters, digits, '-', '_' and '.', short enough for "fleet/NAME/ctl". */
static void set_fleet(const char *name)
{
    size_t n = strlen(name);
    if (n == 0 || n > 48) {
        fprintf(stderr, "fleet: a fleet name has 1 to 48 characters\n");
        exit(2);
    }
    for (size_t i = 0; i < n; i++)
        if (!isalnum((unsigned char)name[i]) && !strchr("-_.", name[i])) {
            fprintf(stderr, "fleet: %s: a fleet name has letters, digits, '-', '_', '.'\n",
                    name);
            exit(2);
        }
    fleet = name;
    snprintf(member_name, sizeof member_name, REEF_FLEET_PREFIX "%s", name);
    snprintf(ctl_name, sizeof ctl_name, REEF_FLEET_PREFIX "%s/ctl", name);
}

static int parse_core(const char *s)
{
    char *end;
    errno = 0;
    long c = strtol(s, &end, 10);
    if (errno || end == s || *end || c < 0 || c >= MAX_CORES) {
        fprintf(stderr, "fleet: %s: not a core number (0 to %d)\n", s, MAX_CORES - 1);
        exit(2);
    }
    return (int)c;
}

/* "1,3-5" into want[]; exits on a malformed list. */
static void parse_cores(const char *list, int *want)
{
    const char *p = list;
    for (;;) {
        char *end;
        long a = strtol(p, &end, 10), b = a;
        if (end == p)
            break;
        if (*end == '-') {
            const char *q = end + 1;
            b = strtol(q, &end, 10);
            if (end == q)
                break;
        }
        if (a < 0 || b < a || b >= MAX_CORES)
            break;
        for (long c = a; c <= b; c++)
            want[c] = 1;
        if (*end == 0)
            return;
        if (*end != ',')
            break;
        p = end + 1;
    }
    fprintf(stderr, "fleet: %s: not a core list like 1,3-5 (cores 0 to %d)\n", list,
            MAX_CORES - 1);
    exit(2);
}

/* ---- The manager ------------------------------------------------------------------------ */

static void on_child(int sig)
{
    (void)sig;
    int saved = errno;
    (void)!write(wake_pipe[1], "c", 1);
    errno = saved;
}

/* Starts a member on `core`: its pid, or a negative errno value. */
static pid_t start_member(int core)
{
    int go[2];
    if (pipe2(go, O_CLOEXEC) < 0)
        return -errno;
    pid_t pid = fork();
    if (pid < 0) {
        int e = errno;
        close(go[0]);
        close(go[1]);
        return -e;
    }
    if (pid == 0) {
        char c;
        close(go[1]);
        if (read(go[0], &c, 1) != 1)
            _exit(EXEC_FAILED); /* the manager could not bind this process */
        char core_text[16];
        snprintf(core_text, sizeof core_text, "%d", core);
        setenv("FLEET_NAME", member_name, 1);
        setenv("FLEET_CORE", core_text, 1);
        setenv("FLEET_SHARED", timeshare ? "1" : "0", 1);
        signal(SIGCHLD, SIG_DFL);
        signal(SIGTERM, SIG_DFL);
        execv(program[0], program);
        fprintf(stderr, "fleet: %s: cannot execute %s: %s\n", fleet, program[0],
                strerror(errno));
        _exit(EXEC_FAILED);
    }
    close(go[0]);
    long r = reef_fleet_bind(pid, core, member_name, timeshare ? REEF_FLEET_SHARED : 0);
    if (r < 0) {
        close(go[1]);
        waitpid(pid, NULL, 0);
        return (pid_t)r;
    }
    (void)!write(go[1], "g", 1);
    close(go[1]);
    members[core] = pid;
    return pid;
}

static int member_count(void)
{
    int n = 0;
    for (int c = 0; c < MAX_CORES; c++)
        n += members[c] > 0;
    return n;
}

static int core_of(pid_t pid)
{
    for (int c = 0; c < MAX_CORES; c++)
        if (members[c] == pid)
            return c;
    return -1;
}

static const char *describe(int status)
{
    static char text[48];
    if (WIFEXITED(status))
        snprintf(text, sizeof text, "exited with status %d", WEXITSTATUS(status));
    else
        snprintf(text, sizeof text, "killed by signal %d", WTERMSIG(status));
    return text;
}

/* A member that went away unasked: reported, and restarted if asked. */
static void member_died(pid_t pid, int status)
{
    int core = core_of(pid);
    if (core < 0)
        return;
    members[core] = 0;
    fprintf(stderr, "fleet: %s: the member on core %d (pid %d) %s\n", fleet, core, pid,
            describe(status));
    int failed = WIFEXITED(status) && WEXITSTATUS(status) == EXEC_FAILED;
    if (!restart || failed)
        return;
    if (restarts[core] >= RESTARTS_MAX) {
        fprintf(stderr, "fleet: %s: core %d restarted %d times already; left stopped\n", fleet,
                core, RESTARTS_MAX);
        return;
    }
    restarts[core]++;
    pid_t again = start_member(core);
    if (again < 0)
        fprintf(stderr, "fleet: %s: cannot restart the member on core %d: %s\n", fleet, core,
                strerror((int)-again));
    else
        fprintf(stderr, "fleet: %s: restarted on core %d as pid %d\n", fleet, core, again);
}

static void reap(void)
{
    char buf[64];
    while (read(wake_pipe[0], buf, sizeof buf) > 0)
        ;
    int status;
    pid_t pid;
    while ((pid = waitpid(-1, &status, WNOHANG)) > 0)
        member_died(pid, status);
}

/* Stops the member on `core`: SIGTERM, then SIGKILL after GRACE_MS. */
static void stop_member(int core)
{
    pid_t pid = members[core];
    members[core] = 0;
    kill(pid, SIGTERM);
    long long deadline = now_ms() + GRACE_MS;
    int status;
    for (;;) {
        pid_t r = waitpid(pid, &status, WNOHANG);
        if (r == pid || (r < 0 && errno != EINTR))
            return;
        if (now_ms() > deadline) {
            fprintf(stderr, "fleet: %s: the member on core %d (pid %d) ignored SIGTERM for %d "
                            "ms; killed\n",
                    fleet, core, pid, GRACE_MS);
            kill(pid, SIGKILL);
            waitpid(pid, &status, 0);
            return;
        }
        usleep(1000);
    }
}

static void stop_all(void)
{
    for (int c = 0; c < MAX_CORES; c++)
        if (members[c] > 0)
            stop_member(c);
}

/* Tells the kernel that the member `pid` started on `core` joined, once it has registered its
 * name (a kernel service built on the fleet, Hare's mount, moves state onto it first):
 * 0 or an errno value (ECHILD: it exited first; ETIMEDOUT: it did not register in time). */
static int joined(int core, pid_t pid)
{
    long long deadline = now_ms() + GRACE_MS;
    for (;;) {
        long r = reef_fleet_resize(pid, member_name, REEF_FLEET_JOIN);
        if (r != -EAGAIN) {
            if (r < 0)
                fprintf(stderr, "fleet: %s: the kernel could not take the member on core %d "
                                "in: %s\n",
                        fleet, core, strerror((int)-r));
            return (int)-r;
        }
        int status;
        if (waitpid(pid, &status, WNOHANG) == pid) {
            members[core] = 0;
            fprintf(stderr, "fleet: %s: the member on core %d (pid %d) %s before it registered\n",
                    fleet, core, pid, describe(status));
            return ECHILD;
        }
        if (now_ms() > deadline)
            return ETIMEDOUT;
        usleep(1000);
    }
}

/* A grow, shrink or stop request: 0 or an errno value. */
static int handle(enum op op, int core)
{
    if (op == OP_STOP) {
        stop_all();
        return 0;
    }
    if (core < 0 || core >= MAX_CORES)
        return EINVAL;
    if (op == OP_GROW) {
        if (members[core] > 0)
            return EEXIST;
        pid_t pid = start_member(core);
        if (pid < 0)
            return (int)-pid;
        int r = joined(core, pid);
        if (r != 0) {
            if (members[core] > 0)
                stop_member(core);
            return r;
        }
        fprintf(stderr, "fleet: %s: grown onto core %d (pid %d)\n", fleet, core, pid);
        return 0;
    }
    if (op == OP_SHRINK) {
        if (members[core] <= 0)
            return ENOENT;
        if (member_count() == 1)
            return EBUSY; /* the last member: `fleet stop` */
        long r = reef_fleet_resize(members[core], member_name, REEF_FLEET_LEAVE);
        if (r < 0) {
            fprintf(stderr, "fleet: %s: the kernel could not move what the member on core %d "
                            "holds: %s; left running\n",
                    fleet, core, strerror((int)-r));
            return (int)-r;
        }
        stop_member(core);
        fprintf(stderr, "fleet: %s: shrunk off core %d\n", fleet, core);
        return 0;
    }
    return EINVAL;
}

/* Serves one command connection: one request, one answer. Whether the fleet stopped. */
static int serve_command(int mbox)
{
    struct reef_conn_info info;
    int fd = reef_mbox_accept(mbox, O_NONBLOCK, &info);
    if (fd < 0)
        return 0;
    struct reef_msg_sender tx;
    struct reef_msg_receiver rx;
    reef_mbox_server(&tx, &rx, &info);
    struct pollfd p = {.fd = fd, .events = POLLIN};
    struct reef_msg m;
    int stopped = 0;
    /* A command that connects and sends nothing is dropped after ANSWER_MS. */
    if (poll(&p, 1, ANSWER_MS) == 1 && reef_msg_try_recv(&rx, &m) == 1) {
        int32_t core = -1;
        if (m.len >= sizeof core)
            memcpy(&core, m.data, sizeof core);
        int32_t answer = handle((enum op)m.tag, core);
        stopped = m.tag == OP_STOP;
        reef_msg_make(&m, 0, &answer, sizeof answer);
        reef_msg_try_send(&tx, &m);
    }
    close(fd);
    return stopped;
}

/* The daemon: starts the members, tells the command through `report` (an errno value and the
 * core it concerns), then serves. */
static void manager(const int *want, int report)
{
    setsid();
    int null = open("/dev/null", O_RDONLY);
    if (null >= 0) {
        dup2(null, 0);
        close(null);
    }
    int32_t result[2] = {0, -1};
    _Atomic uint32_t *events;
    int mbox = reef_mbox_create(O_NONBLOCK | O_CLOEXEC, &events);
    if (mbox < 0 || pipe2(wake_pipe, O_CLOEXEC | O_NONBLOCK) < 0) {
        result[0] = mbox < 0 ? -mbox : errno;
        (void)!write(report, result, sizeof result);
        exit(1);
    }
    long r = reef_name_register(ctl_name, mbox);
    if (r < 0) {
        result[0] = (int32_t)-r;
        (void)!write(report, result, sizeof result);
        exit(1);
    }
    /* A name may have many members: another manager registered under it means a fleet of
     * that name runs (of two starting at once, both may step back; neither runs twice). */
    for (int i = 0; i < 2 * MAX_CORES; i++) {
        struct reef_name_member m;
        if (reef_name_lookup(ctl_name, REEF_NAME_ROUND_ROBIN, &m) == 0 &&
            m.pid != (uint32_t)getpid()) {
            result[0] = EEXIST;
            (void)!write(report, result, sizeof result);
            exit(1);
        }
    }
    struct sigaction sa = {.sa_handler = on_child, .sa_flags = SA_RESTART | SA_NOCLDSTOP};
    sigaction(SIGCHLD, &sa, NULL);
    signal(SIGTERM, SIG_IGN);
    for (int c = 0; c < MAX_CORES && result[0] == 0; c++) {
        if (!want[c])
            continue;
        pid_t pid = start_member(c);
        if (pid < 0) {
            result[0] = -pid;
            result[1] = c;
        }
    }
    if (result[0] != 0)
        stop_all();
    (void)!write(report, result, sizeof result);
    close(report);
    if (result[0] != 0)
        exit(1);
    for (;;) {
        struct pollfd p[2] = {{.fd = mbox, .events = POLLIN}, {.fd = wake_pipe[0], .events = POLLIN}};
        if (poll(p, 2, -1) < 0 && errno != EINTR)
            break;
        reap();
        if ((p[0].revents & POLLIN) && serve_command(mbox))
            break;
    }
    close(mbox);
    exit(0);
}

static int start(int argc, char **argv)
{
    if (argc < 1)
        usage();
    set_fleet(argv[0]);
    int want[MAX_CORES] = {0};
    int have = 0, i = 1;
    for (; i < argc && argv[i][0] == '-'; i++) {
        if (!strcmp(argv[i], "--restart")) {
            restart = 1;
        } else if (!strcmp(argv[i], "--timeshare")) {
            timeshare = 1;
        } else if (!strcmp(argv[i], "--cores") && i + 1 < argc) {
            parse_cores(argv[++i], want);
            have = 1;
        } else {
            usage();
        }
    }
    if (!have || i >= argc)
        usage();
    program = argv + i;
    if (access(program[0], X_OK) < 0) {
        fprintf(stderr, "fleet: %s: cannot execute %s: %s\n", fleet, program[0],
                strerror(errno));
        return 1;
    }
    int report[2];
    if (pipe2(report, O_CLOEXEC) < 0) {
        fprintf(stderr, "fleet: pipe: %s\n", strerror(errno));
        return 1;
    }
    pid_t daemon = fork();
    if (daemon < 0) {
        fprintf(stderr, "fleet: fork: %s\n", strerror(errno));
        return 1;
    }
    if (daemon == 0) {
        close(report[0]);
        manager(want, report[1]);
    }
    close(report[1]);
    int32_t result[2];
    if (read(report[0], result, sizeof result) != sizeof result) {
        fprintf(stderr, "fleet: %s: the manager died while starting\n", fleet);
        return 1;
    }
    if (result[0] == EEXIST && result[1] < 0) {
        fprintf(stderr, "fleet: %s: a fleet of that name runs already\n", fleet);
        return 1;
    }
    if (result[0] != 0) {
        if (result[1] >= 0)
            fprintf(stderr, "fleet: %s: cannot bind core %d: %s\n", fleet, result[1],
                    strerror(result[0]));
        else if (result[0] == EPERM)
            fprintf(stderr, "fleet: %s: cannot start: only /bin/fleet may manage fleets\n",
                    fleet);
        else
            fprintf(stderr, "fleet: %s: cannot start: %s\n", fleet, strerror(result[0]));
        return 1;
    }
    printf("fleet: %s: started (manager pid %d)\n", fleet, daemon);
    return 0;
}

/* Sends a request to the fleet's manager and returns its answer (an errno value). */
static int command(enum op op, int core)
{
    struct reef_conn_info info;
    int fd = reef_mbox_connect(ctl_name, REEF_NAME_NEAREST, O_CLOEXEC, &info);
    if (fd == -ENOENT) {
        fprintf(stderr, "fleet: %s: no such fleet\n", fleet);
        exit(1);
    }
    if (fd < 0) {
        fprintf(stderr, "fleet: %s: cannot reach the manager: %s\n", fleet, strerror(-fd));
        exit(1);
    }
    struct reef_msg_sender tx;
    struct reef_msg_receiver rx;
    reef_mbox_client(&tx, &rx, &info, fd);
    struct reef_msg m;
    int32_t c = core;
    reef_msg_make(&m, (uint16_t)op, &c, sizeof c);
    if (reef_msg_send(&tx, &m) != 0 || reef_msg_recv(&rx, &m) != 1 || m.len != sizeof c) {
        fprintf(stderr, "fleet: %s: the manager went away\n", fleet);
        exit(1);
    }
    int32_t answer;
    memcpy(&answer, m.data, sizeof answer);
    close(fd);
    return answer;
}

static int list(void)
{
    FILE *f = fopen("/proc/reef/fleets", "r");
    if (!f) {
        fprintf(stderr, "fleet: /proc/reef/fleets: %s\n", strerror(errno));
        return 1;
    }
    char line[256];
    while (fgets(line, sizeof line, f))
        fputs(line, stdout);
    fclose(f);
    return 0;
}

/* Tells what a refused grow, shrink or stop means. */
static void explain(const char *what, int core, int answer)
{
    if (answer == EEXIST)
        fprintf(stderr, "fleet: %s: core %d has a member already\n", fleet, core);
    else if (answer == ENOENT)
        fprintf(stderr, "fleet: %s: no member on core %d\n", fleet, core);
    else if (answer == EBUSY && !strcmp(what, "shrink"))
        fprintf(stderr, "fleet: %s: core %d has the last member (fleet stop ends it)\n", fleet,
                core);
    else if (answer == EBUSY)
        fprintf(stderr, "fleet: %s: core %d is another fleet's or the last free core\n", fleet,
                core);
    else
        fprintf(stderr, "fleet: %s: %s: %s\n", fleet, what, strerror(answer));
}

int main(int argc, char **argv)
{
    if (argc < 2)
        usage();
    const char *what = argv[1];
    if (!strcmp(what, "list") && argc == 2)
        return list();
    if (!strcmp(what, "start"))
        return start(argc - 2, argv + 2);
    int core = -1;
    enum op op;
    if (!strcmp(what, "stop") && argc == 3)
        op = OP_STOP;
    else if (!strcmp(what, "grow") && argc == 4)
        op = OP_GROW;
    else if (!strcmp(what, "shrink") && argc == 4)
        op = OP_SHRINK;
    else
        usage();
    set_fleet(argv[2]);
    if (op != OP_STOP)
        core = parse_core(argv[3]);
    int answer = command(op, core);
    if (answer != 0)
        explain(what, core, answer);
    return answer == 0 ? 0 : 1;
}
