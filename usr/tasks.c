/*
 * tasks: a process's threads in /proc, per-thread names, and orphaned process groups, as Linux
 * has them.
 *
 * - /proc/self/task lists exactly the threads (the main one and two made here, then one after
 *   a join); task/<tid>/stat starts with the tid, the thread's name and a state (S for a
 *   thread blocked in a pipe read, R for the reader itself), status has Name, Pid and Tgid;
 *   a spinning thread's own CPU time grows in its task stat; /proc/thread-self names
 *   <pid>/task/<tid>;
 * - names: PR_SET_NAME and PR_GET_NAME act on the calling thread (15 bytes kept); a new
 *   thread starts with its creator's name, a forked child with its forking thread's;
 *   task/<tid>/comm shows each thread's, /proc/self/comm, stat and status the main thread's;
 *   pthread_setname_np/pthread_getname_np on another thread (a write and a read of its comm;
 *   a write of a comm returns its length, ERANGE for names longer than 15); execve names the
 *   process after the program's path (one thread left in task);
 * - orphaned process groups: in a group none of whose members has a parent in another group
 *   of its session (a child that made itself a session leader), SIGTSTP, SIGTTIN and SIGTTOU
 *   with the default action do nothing, whether raised or sent, and SIGSTOP still stops; a
 *   stopped group that an exit orphans gets SIGHUP and then SIGCONT (a grandchild stopped in
 *   a group of its own, whose parent exits, runs its SIGHUP handler).
 *
 * Waits for another process or thread to reach a state are bounded (10 s): only a huge delay
 * could make one fail.
 */
#include "reef-test.h"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sys/prctl.h>

#define WAIT_MS 10000

static const char *self;

/* Reads a whole small file into buf (NUL-terminated); the length. */
static ssize_t slurp(const char *path, char *buf, size_t size)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        FAIL("open %s: %s", path, strerror(errno));
    ssize_t n = read(fd, buf, size - 1);
    if (n < 0)
        FAIL("read %s: %s", path, strerror(errno));
    buf[n] = 0;
    close(fd);
    return n;
}

/* The name and state in /proc/self/task/<tid>/stat, checking that it starts with tid. */
static char task_state(pid_t tid, char *name, size_t name_size, long *ticks)
{
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/self/task/%d/stat", (int)tid);
    slurp(path, buf, sizeof buf);
    CHECK_EQ(atoi(buf), tid);
    char *open_paren = strchr(buf, '(');
    char *close_paren = strrchr(buf, ')');
    CHECK(open_paren && close_paren && close_paren > open_paren && close_paren[1] == ' ');
    size_t len = (size_t)(close_paren - open_paren - 1);
    CHECK(len < name_size);
    memcpy(name, open_paren + 1, len);
    name[len] = 0;
    char state = close_paren[2];
    CHECK(strchr("RSDT", state) != NULL);
    if (ticks) {
        /* Fields 14 and 15 (utime, stime): v[k] is field 4 + k (p starts at field 3, the
         * state). */
        char *p = close_paren + 2;
        long v[12];
        for (int i = 0; i < 12; i++) {
            p = strchr(p, ' ');
            CHECK(p != NULL);
            v[i] = strtol(++p, NULL, 10);
        }
        *ticks = v[10] + v[11];
    }
    return state;
}

/* The name PR_GET_NAME gives the calling thread. */
static const char *my_name(void)
{
    static __thread char name[17];
    memset(name, 0, sizeof name);
    CHECK_SYS(prctl(PR_GET_NAME, (unsigned long)name, 0UL, 0UL, 0UL));
    return name;
}

/* Fails unless /proc/self/task/<tid>/comm holds `name` and a newline. */
static void check_comm(pid_t tid, const char *name)
{
    char path[64], buf[64], want[32];
    snprintf(path, sizeof path, "/proc/self/task/%d/comm", (int)tid);
    slurp(path, buf, sizeof buf);
    snprintf(want, sizeof want, "%s\n", name);
    if (strcmp(buf, want) != 0)
        FAIL("%s holds '%s', not '%s'", path, buf, name);
}

/* The thread ids /proc/self/task lists (at most max), sorted; how many. */
static int list_tasks(pid_t *tids, int max)
{
    DIR *d = opendir("/proc/self/task");
    CHECK(d != NULL);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        CHECK(n < max);
        CHECK(e->d_type == DT_DIR);
        tids[n++] = atoi(e->d_name);
    }
    closedir(d);
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0 && tids[j - 1] > tids[j]; j--) {
            pid_t t = tids[j];
            tids[j] = tids[j - 1];
            tids[j - 1] = t;
        }
    return n;
}

/* Reads one byte from fd within WAIT_MS (-1 if none came). */
static int byte_within(int fd)
{
    struct pollfd p = {.fd = fd, .events = POLLIN};
    long long end = now_ns() + WAIT_MS * 1000000LL;
    for (;;) {
        long long left = (end - now_ns()) / 1000000;
        if (left < 0)
            return -1;
        int r = poll(&p, 1, (int)left);
        if (r < 0 && errno == EINTR)
            continue;
        CHECK(r >= 0);
        if (r == 0)
            return -1;
        unsigned char c;
        ssize_t n = read(fd, &c, 1);
        if (n < 0 && errno == EINTR)
            continue;
        return n == 1 ? c : -1;
    }
}

/* ---- threads and names ---- */

struct worker {
    pthread_t thread;
    const char *name;
    atomic_int tid;          /* set once it named itself */
    char inherited[17];      /* its name before it named itself */
    int go[2];               /* it blocks reading this until the main thread writes */
    char renamed[17];        /* its name after the main thread renamed it */
    int fork_status;         /* its forked child's exit status */
    long ticks;              /* its CPU time after spinning */
    char thread_self[64];    /* readlink /proc/thread-self */
};

static void *work(void *arg)
{
    struct worker *w = arg;
    strcpy(w->inherited, my_name());
    CHECK_SYS(prctl(PR_SET_NAME, (unsigned long)w->name, 0UL, 0UL, 0UL));
    ssize_t n = readlink("/proc/thread-self", w->thread_self, sizeof w->thread_self - 1);
    CHECK(n > 0);
    w->thread_self[n] = 0;
    atomic_store(&w->tid, (int)gettid());
    char c;
    CHECK_EQ(read(w->go[0], &c, 1), 1);
    strcpy(w->renamed, my_name());
    if (c == 'f') {
        /* A forked child is named as the thread that forked it. */
        pid_t pid = CHECK_SYS(fork());
        if (pid == 0) {
            char buf[64], want[32];
            slurp("/proc/self/comm", buf, sizeof buf);
            snprintf(want, sizeof want, "%s\n", w->renamed);
            _exit(strcmp(my_name(), w->renamed) == 0 && strcmp(buf, want) == 0 ? 0 : 1);
        }
        int st;
        CHECK_EQ(waitpid(pid, &st, 0), pid);
        w->fork_status = st;
    } else {
        /* Spins until its own CPU time shows in its task stat (10 ms ticks on both). */
        long long end = now_ns() + WAIT_MS * 1000000LL;
        char name[32];
        do {
            for (volatile int i = 0; i < 1000000; i++)
                ;
            task_state(gettid(), name, sizeof name, &w->ticks);
        } while (w->ticks < 2 && now_ns() < end);
    }
    return NULL;
}

static void threads_and_names(void)
{
    pid_t me = getpid();
    CHECK_SYS(prctl(PR_SET_NAME, (unsigned long)"tasks-main", 0UL, 0UL, 0UL));
    CHECK(strcmp(my_name(), "tasks-main") == 0);
    /* 15 bytes are kept. */
    CHECK_SYS(prctl(PR_SET_NAME, (unsigned long)"0123456789abcdefXYZ", 0UL, 0UL, 0UL));
    CHECK(strcmp(my_name(), "0123456789abcde") == 0);
    check_comm(me, "0123456789abcde");
    CHECK_SYS(prctl(PR_SET_NAME, (unsigned long)"tasks-main", 0UL, 0UL, 0UL));
    SAY("PR_SET_NAME and PR_GET_NAME name the main thread (15 bytes kept)");

    static struct worker w[2] = {{.name = "worker-a"}, {.name = "worker-b"}};
    for (int i = 0; i < 2; i++) {
        CHECK_SYS(pipe(w[i].go));
        CHECK_PT(pthread_create(&w[i].thread, NULL, work, &w[i]));
    }
    for (int i = 0; i < 2; i++)
        while (atomic_load(&w[i].tid) == 0)
            usleep(1000);
    pid_t a = atomic_load(&w[0].tid), b = atomic_load(&w[1].tid);
    for (int i = 0; i < 2; i++) {
        CHECK(strcmp(w[i].inherited, "tasks-main") == 0);
        char want[64];
        snprintf(want, sizeof want, "%d/task/%d", (int)me, atomic_load(&w[i].tid));
        CHECK(strcmp(w[i].thread_self, want) == 0);
    }
    SAY("new threads start with their creator's name; /proc/thread-self is <pid>/task/<tid>");

    pid_t tids[8], want[3] = {me, a, b};
    CHECK_EQ(list_tasks(tids, 8), 3);
    for (int i = 1; i < 3; i++)
        for (int j = i; j > 0 && want[j - 1] > want[j]; j--) {
            pid_t t = want[j];
            want[j] = want[j - 1];
            want[j - 1] = t;
        }
    for (int i = 0; i < 3; i++)
        CHECK_EQ(tids[i], want[i]);
    SAY("/proc/self/task lists the main thread and the two made");

    /* Each thread's name; both workers come to sleep in their pipe reads. */
    char name[32];
    check_comm(me, "tasks-main");
    check_comm(a, "worker-a");
    check_comm(b, "worker-b");
    for (int i = 0; i < 2; i++) {
        pid_t t = atomic_load(&w[i].tid);
        long long end = now_ns() + WAIT_MS * 1000000LL;
        char state;
        while ((state = task_state(t, name, sizeof name, NULL)) != 'S' && now_ns() < end)
            usleep(2000);
        CHECK_EQ(state, 'S');
        CHECK(strcmp(name, w[i].name) == 0);
    }
    CHECK_EQ(task_state(me, name, sizeof name, NULL), 'R');
    CHECK(strcmp(name, "tasks-main") == 0);
    char buf[1024], line[64];
    slurp("/proc/self/comm", buf, sizeof buf);
    CHECK(strcmp(buf, "tasks-main\n") == 0);
    slurp("/proc/self/stat", buf, sizeof buf);
    CHECK(strstr(buf, " (tasks-main) ") != NULL);
    snprintf(line, sizeof line, "/proc/%d/task/%d/status", (int)me, (int)b);
    slurp(line, buf, sizeof buf);
    CHECK(strstr(buf, "Name:\tworker-b\n") != NULL);
    snprintf(line, sizeof line, "\nPid:\t%d\n", (int)b);
    CHECK(strstr(buf, line) != NULL);
    snprintf(line, sizeof line, "\nTgid:\t%d\n", (int)me);
    CHECK(strstr(buf, line) != NULL);
    slurp("/proc/self/status", buf, sizeof buf);
    CHECK(strncmp(buf, "Name:\ttasks-main\n", 17) == 0);
    SAY("task/<tid>/comm, stat and status show each thread's name, blocked threads S, the "
        "reader R; /proc/self/comm, stat and status the main thread's");

    /* Naming another thread writes its comm; reading it back reads it. */
    CHECK_PT(pthread_setname_np(w[0].thread, "renamed-a"));
    check_comm(a, "renamed-a");
    char got[32];
    CHECK_PT(pthread_getname_np(w[0].thread, got, sizeof got));
    CHECK(strcmp(got, "renamed-a") == 0);
    CHECK_PT(pthread_getname_np(w[1].thread, got, sizeof got));
    CHECK(strcmp(got, "worker-b") == 0);
    CHECK_EQ(pthread_setname_np(w[1].thread, "much-too-long-a-name"), ERANGE);
    snprintf(line, sizeof line, "/proc/self/task/%d/comm", (int)b);
    int fd = CHECK_SYS(open(line, O_WRONLY | O_CLOEXEC));
    CHECK_EQ(write(fd, "written-b", 9), 9);
    close(fd);
    check_comm(b, "written-b");
    check_comm(me, "tasks-main");
    CHECK_PT(pthread_setname_np(pthread_self(), "main-again"));
    CHECK_PT(pthread_getname_np(pthread_self(), got, sizeof got));
    CHECK(strcmp(got, "main-again") == 0);
    slurp("/proc/self/comm", buf, sizeof buf);
    CHECK(strcmp(buf, "main-again\n") == 0);
    SAY("pthread_setname_np and pthread_getname_np name another thread through its comm; "
        "ERANGE past 15 bytes");

    /* Worker a forks (its child takes its name); worker b spins. */
    CHECK_EQ(write(w[0].go[1], "f", 1), 1);
    CHECK_EQ(write(w[1].go[1], "s", 1), 1);
    for (int i = 0; i < 2; i++)
        CHECK_PT(pthread_join(w[i].thread, NULL));
    CHECK(strcmp(w[0].renamed, "renamed-a") == 0);
    CHECK(strcmp(w[1].renamed, "written-b") == 0);
    CHECK(WIFEXITED(w[0].fork_status) && WEXITSTATUS(w[0].fork_status) == 0);
    CHECK(w[1].ticks >= 2);
    SAY("the threads saw their new names; a forked child took its thread's name; a spinning "
        "thread's CPU time shows in its task stat");

    /* The joined threads leave the list (Linux may list an exiting thread a moment longer). */
    long long end = now_ns() + WAIT_MS * 1000000LL;
    int n;
    while ((n = list_tasks(tids, 8)) != 1 && now_ns() < end)
        usleep(2000);
    CHECK_EQ(n, 1);
    CHECK_EQ(tids[0], me);
    snprintf(line, sizeof line, "/proc/self/task/%d/comm", (int)a);
    CHECK_ERRNO(open(line, O_RDONLY), ENOENT);
    SAY("joined threads leave /proc/self/task");
}

/* After execve: the process is named after the program's path and has one thread. */
static int after_exec(void)
{
    const char *base = strrchr(self, '/');
    base = base ? base + 1 : self;
    char want[16];
    snprintf(want, sizeof want, "%.15s", base);
    if (strcmp(my_name(), want) != 0)
        return 2;
    char buf[64], line[32];
    slurp("/proc/self/comm", buf, sizeof buf);
    snprintf(line, sizeof line, "%s\n", want);
    if (strcmp(buf, line) != 0)
        return 3;
    pid_t tids[4];
    if (list_tasks(tids, 4) != 1 || tids[0] != getpid())
        return 4;
    return 0;
}

static void exec_name(void)
{
    pid_t pid = CHECK_SYS(fork());
    if (pid == 0) {
        if (prctl(PR_SET_NAME, (unsigned long)"before-exec", 0UL, 0UL, 0UL) != 0)
            _exit(1);
        execl(self, self, "after-exec", (char *)NULL);
        _exit(5);
    }
    CHECK_CHILD_EXIT(pid, 0);
    SAY("execve names the process after the program's path");
}

/* ---- orphaned process groups ---- */

/* A child that made itself a session leader is in an orphaned group: terminal stop signals
 * with the default action do nothing to it; SIGSTOP stops it. */
static void orphaned_stops(void)
{
    int up[2], down[2];
    CHECK_SYS(pipe(up));
    CHECK_SYS(pipe(down));
    pid_t pid = CHECK_SYS(fork());
    if (pid == 0) {
        char c;
        if (setsid() < 0)
            _exit(1);
        /* Raised: default action, orphaned group, nothing happens. */
        raise(SIGTSTP);
        raise(SIGTTIN);
        raise(SIGTTOU);
        if (write(up[1], "a", 1) != 1)
            _exit(2);
        /* Then sent by the parent while this reads. */
        while (read(down[0], &c, 1) == 1) {
            if (c == 'e')
                _exit(0);
            if (write(up[1], &c, 1) != 1)
                _exit(3);
        }
        _exit(4);
    }
    int got = byte_within(up[0]);
    if (got != 'a') {
        kill(pid, SIGKILL);
        FAIL("the child did not go on after raising SIGTSTP, SIGTTIN and SIGTTOU (read %d)",
             got);
    }
    CHECK_SYS(kill(pid, SIGTSTP));
    CHECK_SYS(kill(pid, SIGTTIN));
    CHECK_EQ(write(down[1], "b", 1), 1);
    got = byte_within(up[0]);
    if (got != 'b') {
        kill(pid, SIGKILL);
        FAIL("the child did not answer after SIGTSTP and SIGTTIN were sent to it");
    }
    int st;
    CHECK_EQ(waitpid(pid, &st, WNOHANG | WUNTRACED), 0);
    SAY("SIGTSTP, SIGTTIN and SIGTTOU raised in or sent to an orphaned group do nothing");

    CHECK_SYS(kill(pid, SIGSTOP));
    CHECK_EQ(waitpid(pid, &st, WUNTRACED), pid);
    CHECK(WIFSTOPPED(st) && WSTOPSIG(st) == SIGSTOP);
    CHECK_SYS(kill(pid, SIGCONT));
    CHECK_EQ(write(down[1], "c", 1), 1);
    CHECK_EQ(byte_within(up[0]), 'c');
    CHECK_EQ(write(down[1], "e", 1), 1);
    CHECK_CHILD_EXIT(pid, 0);
    for (int i = 0; i < 2; i++) {
        close(up[i]);
        close(down[i]);
    }
    SAY("SIGSTOP still stops a process of an orphaned group");
}

static int hup_fd = -1;

static void on_hup(int sig)
{
    (void)sig;
    if (write(hup_fd, "h", 1) == 1)
        _exit(0);
    _exit(7);
}

/* A grandchild stopped in a group of its own within its parent's session: when the parent
 * exits, the group is orphaned with a stopped member and gets SIGHUP, then SIGCONT. */
static void orphaned_by_exit(void)
{
    int report[2];
    CHECK_SYS(pipe(report));
    pid_t child = CHECK_SYS(fork());
    if (child == 0) {
        int ready[2];
        if (setsid() < 0 || pipe(ready) != 0)
            _exit(1);
        pid_t g = fork();
        if (g < 0)
            _exit(2);
        if (g == 0) {
            hup_fd = report[1];
            set_handler(SIGHUP, on_hup, 0);
            alarm(30); /* never outlives a broken test for long */
            if (setpgid(0, 0) != 0 || write(ready[1], "r", 1) != 1)
                _exit(3);
            for (;;)
                pause();
        }
        char c;
        setpgid(g, g);
        if (read(ready[0], &c, 1) != 1)
            _exit(4);
        /* Not orphaned yet (this process is in another group of its session): it stops. */
        int st;
        if (kill(g, SIGTSTP) != 0 || waitpid(g, &st, WUNTRACED) != g || !WIFSTOPPED(st) ||
            WSTOPSIG(st) != SIGTSTP)
            _exit(5);
        if (write(report[1], &g, sizeof g) != sizeof g)
            _exit(6);
        _exit(0);
    }
    close(report[1]);
    CHECK_CHILD_EXIT(child, 0);
    pid_t g;
    CHECK_EQ(read(report[0], &g, sizeof g), (ssize_t)sizeof g);
    int got = byte_within(report[0]);
    if (got != 'h') {
        kill(g, SIGKILL);
        FAIL("the stopped grandchild got no SIGHUP and SIGCONT when its group was orphaned");
    }
    /* On Reef the test is process 1, which adopts the grandchild: reap it. */
    int st;
    if (waitpid(g, &st, 0) == g)
        CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    close(report[0]);
    SAY("a stopped group orphaned by an exit gets SIGHUP and SIGCONT (the grandchild stopped "
        "by SIGTSTP before)");
}

int main(int argc, char **argv)
{
    self = self_path(argv[0]);
    if (argc > 1 && strcmp(argv[1], "after-exec") == 0)
        return after_exec();
    test_begin("tasks");
    threads_and_names();
    exec_name();
    orphaned_stops();
    orphaned_by_exit();
    PASS();
}
