/*
 * creds: user and group IDs, and the permission checks that follow once a process is not root.
 *
 * - the set*id family: setgroups/getgroups, setresuid with a saved root ID and back,
 *   setreuid, setfsuid (returns the old ID, changes only to a held one), EPERM once every ID
 *   is dropped, EINVAL for setuid(-1), a negative getgroups size and more than 65536 groups,
 *   EFAULT for bad pointers (user page 8, the kernel half, null); 65536 groups set, copied by
 *   fork and dropped 20 times keep no memory;
 * - files as user 1000: EACCES for reading a 0600 file of root's, writing a 0644 one,
 *   anything below a 0700 directory (search permission, also through a symlink), making or
 *   removing names in a directory it cannot write; access() by the real IDs; EPERM for chmod
 *   and chown of root's file; new files owned by the creator's IDs; a sticky directory lets
 *   only the owner remove an entry; a 0744 program is not executable by others, a 0755 one
 *   is; a set-user-ID program runs with its owner as effective user; EPERM for mount;
 * - signals: EPERM for kill() of a root process by user 1000, which may signal its own;
 * - capabilities: capget shows root's effective and permitted sets alike and not empty (all 41
 *   on Reef), the effective set empty once the effective ID is not 0 and the permitted one
 *   once no ID is; a capset that changes nothing succeeds, one that raises a set is EPERM;
 *   EINVAL (and version 3 written back) for an unknown version, EINVAL for a negative pid,
 *   ESRCH for a missing process, EFAULT for bad pointers.
 */
#include "reef-test.h"

#include <fcntl.h>
#include <grp.h>
#include <sys/mount.h>
#include <sys/fsuid.h>
#include <sys/stat.h>

/* <linux/capability.h>'s header and data (musl has no such header). */
struct cap_header {
    uint32_t version;
    int pid;
};
struct cap_data {
    uint32_t effective, permitted, inheritable;
};
#define CAP_V3 0x20080522
#define CAP_SYS_ADMIN_BIT 21

static char dir[64];
static const char *self;

static char *at(const char *name)
{
    static char buf[4][128];
    static int i;
    char *b = buf[i++ % 4];
    snprintf(b, sizeof buf[0], "%s/%s", dir, name);
    return b;
}

static void put(const char *name, mode_t mode, const char *text)
{
    int fd = CHECK_SYS(open(at(name), O_WRONLY | O_CREAT | O_TRUNC, 0600));
    CHECK_EQ(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    CHECK_SYS(close(fd));
    CHECK_SYS(chmod(at(name), mode));
}

static void ids(void)
{
    CHECK_EQ(getuid(), 0);
    CHECK_EQ(geteuid(), 0);
    gid_t set[] = {300, 100, 200};
    CHECK_SYS(setgroups(3, set));
    gid_t got[8];
    CHECK_EQ(getgroups(0, NULL), 3);
    CHECK_EQ(getgroups(8, got), 3);
    int seen = 0;
    for (int i = 0; i < 3; i++)
        seen |= (got[i] == 100) << 0 | (got[i] == 200) << 1 | (got[i] == 300) << 2;
    CHECK_EQ(seen, 7);
    CHECK_ERRNO(getgroups(2, got), EINVAL);
    CHECK_ERRNO(syscall(SYS_getgroups, -1, got), EINVAL);
    CHECK_ERRNO(setuid(-1), EINVAL);
    CHECK_SYS(setgroups(0, NULL));
    CHECK_EQ(getgroups(0, NULL), 0);
    /* Bad pointers and sizes: EFAULT and EINVAL, nothing changed. */
    CHECK_ERRNO(syscall(SYS_setgroups, 65537, set), EINVAL);
    CHECK_ERRNO(syscall(SYS_setgroups, 65536, (void *)8), EFAULT);
    CHECK_ERRNO(syscall(SYS_setgroups, 3, (void *)0xffff800000000000UL), EFAULT);
    CHECK_EQ(getgroups(0, NULL), 0);
    CHECK_SYS(setgroups(1, set));
    CHECK_ERRNO(syscall(SYS_getgroups, 1, (void *)8), EFAULT);
    CHECK_ERRNO(syscall(SYS_getresuid, NULL, NULL, NULL), EFAULT);
    CHECK_ERRNO(syscall(SYS_getresgid, (void *)1, (void *)1, (void *)1), EFAULT);
    CHECK_SYS(setgroups(0, NULL));
    /* The most groups, set and dropped again and again (and copied by fork): no memory kept. */
    static gid_t many[65536];
    for (int i = 0; i < 65536; i++)
        many[i] = i;
    /* Measured from the second round on: the first may grow the kernel's heaps for good
     * (their first use on each node), which is not memory kept by the groups. */
    long before = 0;
    for (int i = 0; i <= 20; i++) {
        if (i == 1)
            before = reef_free_bytes();
        CHECK_SYS(setgroups(65536, many));
        pid_t kid = CHECK_SYS(fork());
        if (kid == 0)
            _exit(getgroups(0, NULL) == 65536 ? 0 : 1);
        CHECK_CHILD_EXIT(kid, 0);
        CHECK_SYS(setgroups(0, NULL));
    }
    long after = reef_free_bytes();
    if (before >= 0 && after < before - (2L << 20))
        FAIL("free memory %ld KiB before, %ld KiB after", before >> 10, after >> 10);

    pid_t pid = CHECK_SYS(fork());
    if (pid == 0) {
        uid_t r, e, s;
        CHECK_SYS(setresuid(1000, 1000, 0));
        CHECK_SYS(getresuid(&r, &e, &s));
        CHECK(r == 1000 && e == 1000 && s == 0);
        CHECK_ERRNO(setgroups(0, NULL), EPERM);
        CHECK_ERRNO(setresuid(2000, -1, -1), EPERM);
        /* The saved root ID lets it take root back as effective ID. */
        CHECK_SYS(seteuid(0));
        CHECK_EQ(geteuid(), 0);
        CHECK_EQ(getuid(), 1000);
        CHECK_SYS(setreuid(-1, 1000));
        CHECK_SYS(getresuid(&r, &e, &s));
        CHECK(r == 1000 && e == 1000 && s == 0);
        /* setfsuid: the old ID back, no change to an ID it does not hold. */
        CHECK_EQ(setfsuid(4242), 1000);
        CHECK_EQ(setfsuid(-1), 1000);
        CHECK_SYS(setuid(0)); /* to the saved ID: effective only */
        CHECK_SYS(getresuid(&r, &e, &s));
        CHECK(r == 1000 && e == 0 && s == 0);
        CHECK_SYS(setuid(1000)); /* privileged: all three */
        CHECK_SYS(getresuid(&r, &e, &s));
        CHECK(r == 1000 && e == 1000 && s == 1000);
        CHECK_ERRNO(setuid(0), EPERM);
        CHECK_ERRNO(seteuid(0), EPERM);
        _exit(0);
    }
    CHECK_CHILD_EXIT(pid, 0);
    SAY("set*id: groups, a saved root ID taken back, setfsuid, EPERM once dropped");
}

/* As user 1000, group 1000: what it may and may not do with root's files. */
static void as_user(void)
{
    CHECK_SYS(setgroups(0, NULL));
    CHECK_SYS(setresgid(1000, 1000, 1000));
    CHECK_SYS(setresuid(1000, 1000, 1000));
    char buf[16];
    CHECK_ERRNO(open(at("secret"), O_RDONLY), EACCES);
    int fd = CHECK_SYS(open(at("public"), O_RDONLY));
    CHECK_EQ(read(fd, buf, sizeof buf), 3);
    CHECK_SYS(close(fd));
    CHECK_ERRNO(open(at("public"), O_WRONLY), EACCES);
    CHECK_ERRNO(open(at("public"), O_RDONLY | O_TRUNC), EACCES);
    CHECK_ERRNO(truncate(at("public"), 0), EACCES);
    /* Search permission: nothing below a 0700 directory, by path or through a symlink. */
    struct stat st;
    CHECK_ERRNO(stat(at("closed/inner"), &st), EACCES);
    CHECK_ERRNO(open(at("closed/inner"), O_RDONLY), EACCES);
    CHECK_ERRNO(open(at("to-inner"), O_RDONLY), EACCES);
    CHECK_ERRNO(chdir(at("closed")), EACCES);
    CHECK_SYS(stat(at("closed"), &st));
    /* Names in a directory it cannot write. */
    CHECK_ERRNO(open(at("new"), O_WRONLY | O_CREAT, 0644), EACCES);
    CHECK_ERRNO(mkdir(at("newdir"), 0755), EACCES);
    CHECK_ERRNO(unlink(at("public")), EACCES);
    CHECK_ERRNO(rename(at("public"), at("mine/public")), EACCES);
    CHECK_ERRNO(symlink("public", at("link2")), EACCES);
    /* access() answers for the real IDs. */
    CHECK_ERRNO(access(at("secret"), R_OK), EACCES);
    CHECK_SYS(access(at("public"), R_OK));
    CHECK_ERRNO(access(at("public"), W_OK), EACCES);
    /* Root's file: not its to change. */
    CHECK_ERRNO(chmod(at("public"), 0666), EPERM);
    CHECK_ERRNO(chown(at("public"), 1000, 1000), EPERM);
    CHECK_ERRNO(mount("none", at("mine"), "hare", 0, NULL), EPERM);
    /* Its own directory: new files are its own; it may chmod them but not give them away. */
    fd = CHECK_SYS(open(at("mine/f"), O_WRONLY | O_CREAT, 0600));
    CHECK_SYS(fstat(fd, &st));
    CHECK(st.st_uid == 1000 && st.st_gid == 1000);
    CHECK_SYS(close(fd));
    CHECK_SYS(chmod(at("mine/f"), 0640));
    CHECK_ERRNO(chown(at("mine/f"), 0, -1), EPERM);
    CHECK_SYS(mkdir(at("mine/d"), 0700));
    CHECK_SYS(rename(at("mine/f"), at("mine/d/f")));
    CHECK_SYS(unlink(at("mine/d/f")));
    CHECK_SYS(rmdir(at("mine/d")));
    /* A sticky directory: its own entry goes, root's stays. */
    fd = CHECK_SYS(open(at("sticky/mine"), O_WRONLY | O_CREAT, 0644));
    CHECK_SYS(close(fd));
    CHECK_ERRNO(unlink(at("sticky/roots")), EPERM);
    CHECK_ERRNO(rename(at("sticky/roots"), at("sticky/x")), EPERM);
    CHECK_SYS(unlink(at("sticky/mine")));
    /* Programs: 0744 is root's alone, 0755 anyone's; a set-user-ID one runs as its owner. */
    CHECK_EQ(run_program(at("prog744"), NULL), 126);
    CHECK_EQ(run_program(at("prog755"), NULL), 7);
    CHECK_EQ(run_program(at("suid"), "euid", NULL), 0);
    /* Signals: not to a root process. */
    CHECK_ERRNO(kill(getppid(), 0), EPERM);
    CHECK_ERRNO(kill(getppid(), SIGTERM), EPERM);
    CHECK_SYS(kill(getpid(), 0));
    pid_t kid = CHECK_SYS(fork());
    if (kid == 0) {
        for (;;)
            pause();
    }
    CHECK_SYS(kill(kid, SIGKILL));
    int status;
    CHECK_SYS(waitpid(kid, &status, 0));
    if (!WIFSIGNALED(status) || WTERMSIG(status) != SIGKILL)
        FAIL("its child killed with SIGKILL: %s", describe_wait(status));
    _exit(0);
}

/* The capability sets of process `pid` (0: this one), as 64-bit masks. */
static void caps_of(int pid, uint64_t *effective, uint64_t *permitted)
{
    struct cap_header h = {.version = CAP_V3, .pid = pid};
    struct cap_data d[2];
    CHECK_SYS(syscall(SYS_capget, &h, d));
    *effective = d[0].effective | (uint64_t)d[1].effective << 32;
    *permitted = d[0].permitted | (uint64_t)d[1].permitted << 32;
}

static void capabilities(void)
{
    uint64_t eff, perm;
    caps_of(0, &eff, &perm);
    CHECK(eff != 0);
    CHECK_EQ(eff, perm);
    if (on_reef())
        CHECK_EQ(eff, ((uint64_t)1 << 41) - 1);
    struct cap_header h = {.version = 0x12345, .pid = 0};
    struct cap_data d[2];
    CHECK_ERRNO(syscall(SYS_capget, &h, d), EINVAL);
    CHECK_EQ(h.version, CAP_V3);
    CHECK_SYS(syscall(SYS_capget, &h, NULL));
    h.pid = -1;
    CHECK_ERRNO(syscall(SYS_capget, &h, d), EINVAL);
    h.pid = 0x3fffffff;
    CHECK_ERRNO(syscall(SYS_capget, &h, d), ESRCH);
    h.pid = 0;
    CHECK_ERRNO(syscall(SYS_capget, (void *)8, d), EFAULT);
    CHECK_ERRNO(syscall(SYS_capget, &h, (void *)0xffff800000000000UL), EFAULT);
    /* Setting the sets it has changes nothing. */
    CHECK_SYS(syscall(SYS_capget, &h, d));
    CHECK_SYS(syscall(SYS_capset, &h, d));
    pid_t pid = CHECK_SYS(fork());
    if (pid == 0) {
        /* Effective ID 1000, real and saved 0: nothing effective, all still permitted. */
        if (setresuid(0, 1000, 0) != 0)
            _exit(2);
        caps_of(0, &eff, &perm);
        if (eff != 0 || perm == 0)
            _exit(3);
        if (setresuid(1000, 1000, 1000) != 0)
            _exit(4);
        caps_of(0, &eff, &perm);
        if (eff != 0 || perm != 0)
            _exit(5);
        /* Raising the permitted set is refused. */
        struct cap_header hh = {.version = CAP_V3};
        struct cap_data dd[2] = {{0}};
        dd[0].permitted = 1 << CAP_SYS_ADMIN_BIT;
        _exit(syscall(SYS_capset, &hh, dd) == -1 && errno == EPERM ? 0 : 6);
    }
    CHECK_CHILD_EXIT(pid, 0);
    SAY("capabilities: root's full, none effective with effective ID 1000, none once every ID "
        "is; capset of the same sets, EPERM to raise; EINVAL, ESRCH, EFAULT");
}

int main(int argc, char **argv)
{
    test_begin("creds");
    if (argc > 1 && strcmp(argv[1], "euid") == 0)
        return geteuid() == 0 ? 0 : 1;
    if (getuid() != 0)
        FAIL("must start as root (uid %d): it drops privilege to test the checks", getuid());
    self = self_path(argv[0]);
    ids();
    capabilities();

    snprintf(dir, sizeof dir, "/tmp/creds.%d", getpid());
    CHECK_SYS(mkdir(dir, 0755));
    CHECK_SYS(chmod(dir, 0755));
    put("secret", 0600, "top");
    put("public", 0644, "pub");
    CHECK_SYS(mkdir(at("closed"), 0700));
    put("closed/inner", 0644, "in");
    CHECK_SYS(symlink("closed/inner", at("to-inner")));
    CHECK_SYS(mkdir(at("mine"), 0700));
    CHECK_SYS(chown(at("mine"), 1000, 1000));
    CHECK_SYS(mkdir(at("sticky"), 0777));
    CHECK_SYS(chmod(at("sticky"), 01777));
    put("sticky/roots", 0666, "r");
    put("prog744", 0744, "#!/bin/sh\nexit 7\n");
    put("prog755", 0755, "#!/bin/sh\nexit 7\n");
    /* A set-user-ID copy of this program. */
    int in = CHECK_SYS(open(self, O_RDONLY));
    int out = CHECK_SYS(open(at("suid"), O_WRONLY | O_CREAT | O_TRUNC, 0700));
    char block[4096];
    ssize_t n;
    while ((n = CHECK_SYS(read(in, block, sizeof block))) > 0)
        CHECK_EQ(write(out, block, n), n);
    CHECK_SYS(close(in));
    CHECK_SYS(close(out));
    CHECK_SYS(chmod(at("suid"), 04755));

    pid_t pid = CHECK_SYS(fork());
    if (pid == 0)
        as_user();
    CHECK_CHILD_EXIT(pid, 0);
    SAY("files as user 1000: read, write, search, create and remove refused by the bits; "
        "its own files; sticky directory; execute bits; a set-user-ID program");
    SAY("signals: EPERM for a root process, its own children allowed");

    const char *files[] = {"closed/inner", "to-inner", "sticky/roots", "secret",
                           "public",       "prog744",  "prog755",      "suid"};
    for (unsigned i = 0; i < sizeof files / sizeof *files; i++)
        CHECK_SYS(unlink(at(files[i])));
    CHECK_SYS(rmdir(at("closed")));
    CHECK_SYS(rmdir(at("mine")));
    CHECK_SYS(rmdir(at("sticky")));
    CHECK_SYS(rmdir(dir));
    PASS();
}
