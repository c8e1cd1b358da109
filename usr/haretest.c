/*
 * haretest: Hare's file servers on Reef (Hare chapter 3): a fleet of bin/hared members and
 * lib/hare's client library in this process (usr/hare.h), over Reef's mailboxes, grants and
 * name server. With one core the fleet time-shares it (--timeshare, Hare's timeshare
 * placement); with more, it takes every core but 0 (split placement).
 *
 * It checks what the host tests (lib/hare/tests) cannot: requests and replies cross real
 * channels between processes on different cores, names and answers travel in granted pool
 * pages, file data in a buffer cache granted to the servers, which zero new blocks through
 * their own mapping; invalidations reach a second client's reply rings (a rename another
 * client made is seen at once); a third client in another process reads what the first one
 * wrote; rmdir's three phases refuse a non-empty directory; a distributed listing; and
 * requests a hostile client forges are answered EINVAL while the servers go on serving.
 *
 * Off Reef it checks that the mailbox calls answer ENOSYS.
 */
#include "reef-test.h"
#include "hare.h"
#include "hare_fleet.h"
#include <sys/stat.h>

#define CACHE_BLOCKS 1024
#define FILE_BYTES (3 * HARE_PAGE + 100)

struct side {
    int n;
    struct {
        int fd;
        struct reef_msg_sender tx;
        struct reef_msg_receiver rx;
        uint8_t *page;
    } s[HARE_TEST_MAX_SERVERS];
};

static int t_send(void *ctx, uint16_t server, const struct reef_msg *m)
{
    struct side *d = ctx;
    return server < d->n ? reef_msg_send(&d->s[server].tx, m) : -EINVAL;
}

static int t_recv(void *ctx, uint16_t server, struct reef_msg *m, int wait)
{
    struct side *d = ctx;
    if (server >= d->n)
        return -EINVAL;
    return wait ? reef_msg_recv(&d->s[server].rx, m) : reef_msg_try_recv(&d->s[server].rx, m);
}

static uint8_t *t_page(void *ctx, uint16_t server)
{
    struct side *d = ctx;
    return server < d->n ? d->s[server].page : NULL;
}

static uint8_t *cache;


/* Connects client `id` to every server: one connection per server (round-robin lookups
 * until each server id has answered a hello), a pool page each, the cache granted to each. */
static struct hare_client *connect_client(struct side *d, uint32_t id, int servers,
                                          struct hare_transport *t)
{
    memset(d, 0, sizeof *d);
    d->n = servers;
    int have = 0;
    for (int tries = 0; have < servers; tries++) {
        if (tries > 8 * servers)
            FAIL("client %u reached %d of %d servers", id, have, servers);
        struct reef_conn_info info;
        int fd = reef_mbox_connect(HARE_FLEET, REEF_NAME_ROUND_ROBIN, 0, &info);
        if (fd < 0)
            FAIL("connect %s: %s", HARE_FLEET, strerror(-fd));
        struct reef_msg_sender tx;
        struct reef_msg_receiver rx;
        reef_mbox_client(&tx, &rx, &info, fd);
        uint8_t *page = mmap(NULL, HARE_PAGE, PROT_READ | PROT_WRITE,
                             MAP_SHARED | MAP_ANONYMOUS, -1, 0);
        CHECK(page != MAP_FAILED);
        long pool = reef_grant(fd, page, HARE_PAGE, REEF_GRANT_WRITE);
        long cgrant = reef_grant(fd, cache, (size_t)CACHE_BLOCKS * HARE_PAGE, REEF_GRANT_WRITE);
        CHECK(pool > 0 && cgrant > 0);
        uint64_t words[5] = {id, (uint64_t)pool, 1, (uint64_t)cgrant, CACHE_BLOCKS};
        struct reef_msg m;
        reef_msg_make(&m, HARE_HELLO, words, sizeof words);
        CHECK_EQ(reef_msg_send(&tx, &m), 0);
        CHECK_EQ(reef_msg_recv(&rx, &m), 1);
        CHECK_EQ(m.tag, HARE_HELLO);
        CHECK_EQ(hare_word(&m, WELCOME_ERROR), 0);
        CHECK_EQ(hare_word(&m, WELCOME_SERVERS), servers);
        uint64_t sid = hare_word(&m, WELCOME_ID);
        CHECK(sid < (uint64_t)servers);
        if (d->s[sid].page) {
            close(fd);
            munmap(page, HARE_PAGE);
            continue;
        }
        d->s[sid].fd = fd;
        d->s[sid].tx = tx;
        d->s[sid].rx = rx;
        d->s[sid].page = page;
        have++;
    }
    *t = (struct hare_transport){d, t_send, t_recv, t_page};
    /* Each client's nearby server (creation affinity) is a different one; new directories
     * spread their entries over every server (§3.4). */
    uint16_t local = (uint16_t)((id - 1) % (uint32_t)servers);
    struct hare_client *c = hare_client_new((uint16_t)servers, local, true, cache, CACHE_BLOCKS, t);
    CHECK(c != NULL);
    return c;
}

static uint8_t pattern(size_t i)
{
    return (uint8_t)(i * 7 + i / HARE_PAGE);
}

/* Reads all of `path` through `c` and compares it with the pattern. */
static void check_file(struct hare_client *c, const char *path, size_t size)
{
    static uint8_t buf[FILE_BYTES + 1];
    int fd = hare_open(c, path, O_RDONLY, 0);
    CHECK(fd >= 0);
    size_t got = 0;
    long n;
    while ((n = hare_read(c, fd, buf + got, sizeof buf - got)) > 0)
        got += (size_t)n;
    CHECK_EQ(n, 0);
    CHECK_EQ(got, size);
    for (size_t i = 0; i < size; i++)
        if (buf[i] != pattern(i))
            FAIL("%s: byte %zu is %u, written %u", path, i, buf[i], pattern(i));
    CHECK_EQ(hare_close(c, fd), 0);
}

/* The names `hare_list` wrote, counted, each checked to be `prefix` and two digits. */
static int count_names(const char *buf, long len, const char *prefix)
{
    int n = 0, seen[100] = {0};
    for (long off = 0; off < len; off += (long)strlen(buf + off) + 1) {
        const char *name = buf + off;
        size_t p = strlen(prefix);
        CHECK(strncmp(name, prefix, p) == 0 && strlen(name) == p + 2);
        int k = atoi(name + p);
        CHECK(!seen[k]);
        seen[k] = 1;
        n++;
    }
    return n;
}

/* Sends `tag` with `words` to server `server` on `d`'s connection: the errno of the reply (0
 * if it is not an error). */
static uint64_t forge(struct side *d, int server, uint16_t tag, const uint64_t *words, int n)
{
    struct reef_msg m, r;
    reef_msg_make(&m, tag, words, (size_t)n * 8);
    CHECK_EQ(reef_msg_send(&d->s[server].tx, &m), 0);
    do
        CHECK_EQ(reef_msg_recv(&d->s[server].rx, &r), 1);
    while (r.tag == HARE_INVALIDATION);
    CHECK_EQ(hare_word(&r, 0), words[0]); /* the id comes back */
    return (r.tag & 0xff) == 2 ? hare_word(&r, 1) : 0; /* lib/hare's wire: code 2, an error */
}

/* What a hostile client can send: nothing it forges harms the file system. */
static void hostile(struct side *d, struct hare_client *c, int servers)
{
    uint64_t junk[7] = {99, 1, 2, 3, 4, 5, 6};
    CHECK_EQ(forge(d, 0, 0x00fe, junk, 7), EINVAL);  /* an operation nobody knows */
    CHECK_EQ(forge(d, 0, 0xc801, junk, 7), EINVAL);  /* page 200 of a one-page pool */
    struct hare_stat st;
    CHECK_EQ(hare_stat(c, "/d/g", &st), 0);
    /* DESTROY (operation 5) of the root and of another client's file, at every server: the
     * one holding the inode refuses (EPERM), the others do not know it (ENOENT). */
    uint64_t victims[2] = {1, st.ino};
    for (int v = 0; v < 2; v++) {
        int refused = 0;
        for (int s = 0; s < servers; s++) {
            uint64_t w[2] = {100 + (uint64_t)s, victims[v]};
            uint64_t e = forge(d, s, 5, w, 2);
            CHECK(e == EPERM || e == ENOENT);
            refused += e == EPERM;
        }
        CHECK_EQ(refused, 1);
    }
    CHECK_EQ(hare_stat(c, "/", &st), 0);
    CHECK_EQ(hare_stat(c, "/d/g", &st), 0);
    /* A hello whose pool grant was never made. */
    CHECK_EQ(hare_forged_hello(), EPERM);
    SAY("forged operations, pages, inode numbers and grants: errors, and the files are intact");
}

int main(void)
{
    test_begin("haretest");
    if (!on_reef()) {
        _Atomic uint32_t *ev;
        CHECK_EQ(reef_mbox_create(0, &ev), -ENOSYS);
        SAY("not Reef: the mailbox calls answer ENOSYS, nothing to serve Hare");
        PASS();
    }
    char list[64];
    hare_fleet_user_clients = true;
    int servers = hare_fleet_start(list, sizeof list, HARE_TEST_MAX_SERVERS);
    SAY("fleet/hare: %d file servers on cores %s (%s)", servers, list,
        servers == 1 && strcmp(list, "0") == 0 ? "timeshare" : "split");

    cache = mmap(NULL, (size_t)CACHE_BLOCKS * HARE_PAGE, PROT_READ | PROT_WRITE,
                 MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    CHECK(cache != MAP_FAILED);
    /* Garbage where the servers' blocks will be: what a reader sees of a new block must come
     * from the server's zeroing, not from fresh memory. */
    memset(cache, 0xa5, (size_t)CACHE_BLOCKS * HARE_PAGE);
    static struct side da, db, dc;
    struct hare_transport ta, tb, tc;
    struct hare_client *a = connect_client(&da, 1, servers, &ta);
    struct hare_client *b = connect_client(&db, 2, servers, &tb);
    SAY("two clients connected to every server, pool pages and the buffer cache granted");

    CHECK_EQ(hare_mkdir(a, "/d", 0755), 0);
    CHECK_EQ(hare_mkdir(a, "/d", 0755), -EEXIST);
    int fd = hare_open(a, "/d/f", O_CREAT | O_EXCL | O_WRONLY, 0644);
    CHECK(fd >= 0);
    static uint8_t data[FILE_BYTES];
    for (size_t i = 0; i < FILE_BYTES; i++)
        data[i] = pattern(i);
    CHECK_EQ(hare_write(a, fd, data, 1000), 1000);
    CHECK_EQ(hare_write(a, fd, data + 1000, FILE_BYTES - 1000), FILE_BYTES - 1000);
    CHECK_EQ(hare_close(a, fd), 0);
    struct hare_stat st;
    CHECK_EQ(hare_stat(b, "/d/f", &st), 0);
    CHECK_EQ(st.size, FILE_BYTES);
    CHECK(S_ISREG(st.mode) && (st.mode & 07777) == 0644 && st.nlink == 1);
    check_file(b, "/d/f", FILE_BYTES);
    SAY("client 2 reads the %d bytes client 1 wrote through the buffer cache", FILE_BYTES);

    /* Client 2 caches /d/f; client 1's rename must reach it as an invalidation. */
    struct hare_client_stats cs;
    hare_client_stats(b, &cs);
    uint64_t inval_before = cs.invalidations;
    CHECK_EQ(hare_rename(a, "/d/f", "/d/g"), 0);
    CHECK_EQ(hare_stat(b, "/d/f", &st), -ENOENT);
    hare_client_stats(b, &cs);
    CHECK(cs.invalidations > inval_before);
    check_file(b, "/d/g", FILE_BYTES);
    SAY("a rename by client 1 invalidates client 2's cached entry: ENOENT at once");

    fflush(stdout);
    pid_t child = CHECK_SYS(fork());
    if (child == 0) {
        struct hare_client *c = connect_client(&dc, 3, servers, &tc);
        check_file(c, "/d/g", FILE_BYTES);
        _exit(0);
    }
    int status;
    CHECK_EQ(CHECK_SYS(waitpid(child, &status, 0)), child);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    SAY("a client in another process reads the same file");

    CHECK_EQ(hare_mkdir(a, "/d/sub", 0755), 0);
    fd = hare_open(a, "/d/sub/x", O_CREAT | O_WRONLY, 0600);
    CHECK(fd >= 0);
    CHECK_EQ(hare_close(a, fd), 0);
    CHECK_EQ(hare_rmdir(b, "/d/sub"), -ENOTEMPTY);
    CHECK_EQ(hare_unlink(b, "/d/sub/x"), 0);
    CHECK_EQ(hare_rmdir(b, "/d/sub"), 0);
    CHECK_EQ(hare_stat(a, "/d/sub", &st), -ENOENT);
    CHECK_EQ(hare_open(a, "/d/sub/y", O_CREAT | O_WRONLY, 0600), -ENOENT);
    SAY("rmdir: ENOTEMPTY with an entry, then removed; client 1 sees it gone");

    CHECK_EQ(hare_mkdir(a, "/m", 0755), 0);
    for (int i = 0; i < 40; i++) {
        char path[32];
        snprintf(path, sizeof path, "/m/f%02d", i);
        fd = hare_open(i % 2 ? a : b, path, O_CREAT | O_EXCL | O_WRONLY, 0644);
        CHECK(fd >= 0);
        CHECK_EQ(hare_close(i % 2 ? a : b, fd), 0);
    }
    static char names[4096];
    long len = hare_list(b, "/m", names, sizeof names);
    CHECK(len > 0);
    CHECK_EQ(count_names(names, len, "f"), 40);
    CHECK_EQ(hare_list(b, "/m", names, 8), -ERANGE);
    SAY("40 files made by two clients in a distributed directory, listed once each");

    /* Client 2 caches many entries and stays idle while client 1 removes them all: more
     * invalidations than its reply rings hold. A server must neither block on the full ring
     * (client 1 would wait for it forever) nor let client 2 use a removed entry. */
    const int MANY = 2 * REEF_MSG_PAGE_SLOTS * servers;
    CHECK_EQ(hare_mkdir(a, "/n", 0755), 0);
    for (int i = 0; i < MANY; i++) {
        char path[32];
        snprintf(path, sizeof path, "/n/g%04d", i);
        fd = hare_open(a, path, O_CREAT | O_EXCL | O_WRONLY, 0644);
        CHECK(fd >= 0);
        CHECK_EQ(hare_close(a, fd), 0);
        CHECK_EQ(hare_stat(b, path, &st), 0);
    }
    hare_client_stats(b, &cs);
    inval_before = cs.invalidations;
    for (int i = 0; i < MANY; i++) {
        char path[32];
        snprintf(path, sizeof path, "/n/g%04d", i);
        CHECK_EQ(hare_unlink(a, path), 0);
    }
    for (int i = 0; i < MANY; i++) {
        char path[32];
        snprintf(path, sizeof path, "/n/g%04d", i);
        CHECK_EQ(hare_stat(b, path, &st), -ENOENT);
    }
    hare_client_stats(b, &cs);
    CHECK(cs.invalidations > inval_before);
    CHECK_EQ(hare_rmdir(b, "/n"), 0);
    SAY("%d entries an idle client cached removed by another: no server blocks on its full "
        "rings, and it sees every one gone",
        MANY);

    fd = hare_open(a, "/d/g", O_WRONLY | O_TRUNC, 0);
    CHECK(fd >= 0);
    CHECK_EQ(hare_write(a, fd, data, 10), 10);
    CHECK_EQ(hare_lseek(a, fd, 2 * HARE_PAGE, SEEK_SET), 2 * HARE_PAGE);
    CHECK_EQ(hare_write(a, fd, data + 2 * HARE_PAGE, 5), 5);
    CHECK_EQ(hare_close(a, fd), 0);
    static uint8_t buf[3 * HARE_PAGE];
    fd = hare_open(b, "/d/g", O_RDONLY, 0);
    CHECK_EQ(hare_read(b, fd, buf, sizeof buf), 2 * HARE_PAGE + 5);
    for (size_t i = 0; i < 2 * HARE_PAGE + 5; i++) {
        uint8_t want = i < 10 || i >= 2 * HARE_PAGE ? pattern(i) : 0;
        if (buf[i] != want)
            FAIL("/d/g after truncate and a sparse write: byte %zu is %u, not %u", i, buf[i],
                 want);
    }
    CHECK_EQ(hare_close(b, fd), 0);
    SAY("truncated and written sparsely: the hole and each block's tail read as zeros");

    hostile(&db, b, servers);
    CHECK_EQ(hare_stat(a, "/d/g", &st), 0);
    CHECK_EQ(st.size, 2 * HARE_PAGE + 5);

    struct hare_client_stats sa, sb;
    hare_client_stats(a, &sa);
    hare_client_stats(b, &sb);
    CHECK_EQ(sa.strays + sb.strays, 0);
    CHECK_EQ(sa.bad_blocks + sb.bad_blocks, 0);
    SAY("client 1: %llu requests, %llu cache hits; client 2: %llu requests, %llu invalidations",
        (unsigned long long)sa.requests, (unsigned long long)sa.cache_hits,
        (unsigned long long)sb.requests, (unsigned long long)sb.invalidations);
    CHECK_EQ(run_program("/bin/fleet", "stop", "hare", NULL), 0);
    SAY("fleet stopped");
    PASS();
}
