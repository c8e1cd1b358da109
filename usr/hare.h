/*
 * hare.h: Hare on Reef from C (Hare, Gruenwald's 2014 thesis, chapter 3): lib/hare's server
 * and client state machines behind a C ABI (usr/hare/, a Rust static library linked into the
 * programs that include this header), and the hello that opens a connection.
 *
 * A client connects to each member of the fleet "fleet/hare" (bin/hared) and sends a hello
 * first: its client id, a grant of its pool (pages where requests put names and servers put
 * what does not fit in a reply slot; lib/hare/src/wire.rs) and a grant of the buffer cache
 * (blocks of file data every client reads and writes directly, §3.3). The server answers
 * with its id and the fleet's size. After that, requests and replies are lib/hare's wire
 * messages; invalidations come on the reply ring.
 */
#ifndef HARE_H
#define HARE_H

#include "reef_msg.h"
#include <stdbool.h>
#include <stdlib.h>

#define HARE_FLEET "fleet/hare"
#define HARE_PAGE 4096
/* The tag of a hello, both ways (no operation of lib/hare's wire uses it). */
#define HARE_HELLO 0xffff
/* The tag of an invalidation on a reply ring (lib/hare/src/wire.rs, INVALIDATE). */
#define HARE_INVALIDATION 16
/* Requests a client may have unanswered at one server (lib/hare/src/wire.rs, IN_FLIGHT). */
#define HARE_IN_FLIGHT 8
/* The bit of a request's word 0 that says nobody waits for its reply (lib/hare/src/wire.rs,
 * POSTED). */
#define HARE_POSTED (1ull << 47)

/* Client to server: words client id, pool grant, pool pages, cache grant, cache blocks, and
 * (the kernel's resizer to a server that joins the fleet) 1 + the id the server takes.
 * Server to client: words server id, a number all server ids are below, 0 or the errno that
 * refused the hello. */
enum { HELLO_CLIENT, HELLO_POOL, HELLO_POOL_PAGES, HELLO_CACHE, HELLO_CACHE_BLOCKS, HELLO_JOIN };
enum { WELCOME_ID, WELCOME_SERVERS, WELCOME_ERROR };

static inline uint64_t hare_word(const struct reef_msg *m, int i)
{
    uint64_t w = 0;
    if ((i + 1) * 8 <= m->len)
        memcpy(&w, m->data + 8 * i, 8);
    return w;
}

/* Whether request `m` is posted (its client waits for no reply). */
static inline bool hare_is_posted(const struct reef_msg *m)
{
    return m->tag != HARE_HELLO && (hare_word(m, 0) & HARE_POSTED);
}

/* A list of cores as `fleet start --cores` takes it ("1,3-5"): `core`'s place in it (`*id`,
 * 0 if absent) and its length (`*n`, at most 256). 0, 1 if `core` is not in it (a hared
 * joining a running fleet), -1 for a bad list. */
static inline int hare_list_place(const char *list, int core, uint16_t *id, uint16_t *n)
{
    int count = 0, found = -1;
    const char *p = list;
    while (*p) {
        char *end;
        long lo = strtol(p, &end, 10), hi = lo;
        if (end == p || lo < 0)
            return -1;
        if (*end == '-') {
            p = end + 1;
            hi = strtol(p, &end, 10);
            if (end == p || hi < lo || hi - lo >= 256)
                return -1;
        }
        for (long c = lo; c <= hi; c++, count++)
            if (c == core)
                found = count;
        if (*end == ',')
            end++;
        else if (*end)
            return -1;
        p = end;
    }
    if (count == 0 || count > 256)
        return -1;
    *id = found < 0 ? 0 : (uint16_t)found;
    *n = (uint16_t)count;
    return found < 0;
}

/* ---- The server (usr/hare/src/server.rs) ----------------------------------------------- */

struct hare_server;

struct hare_server_stats {
    uint64_t requests, invalidations, busy, free_blocks, refused;
};

struct hare_server_runtime {
    void *ctx;
    /* Zeroes `block` of the buffer cache from byte `from` to its end. */
    void (*zero)(void *ctx, uint32_t block, uint32_t from);
    /* Sends `msg`, an invalidation, to client `client` if it is connected. */
    void (*invalidate)(void *ctx, uint32_t client, const struct reef_msg *msg);
    /* Copies `len` bytes of `block` from byte `offset` to `buf` (a request of a client without
     * direct access to the cache, `nodirect`); `offset + len` is at most a block. */
    void (*load)(void *ctx, uint32_t block, uint32_t offset, uint8_t *buf, uint32_t len);
    /* Copies `len` bytes of `data` into `block` at byte `offset`, as above. */
    void (*store)(void *ctx, uint32_t block, uint32_t offset, const uint8_t *data, uint32_t len);
};

/* Server `id` of `servers` owning buffer-cache blocks [block_lo, block_hi): NULL if `servers`
 * is 0 or over 256, or `id` is not below it. */
struct hare_server *hare_server_new(uint16_t id, uint16_t servers, uint32_t block_lo,
                                    uint32_t block_hi, bool root_distributed, int64_t now_sec);
/* Server `id` joining a fleet being resized: no shard and no block until the resize gives it
 * some (NULL for id 0xffff). */
struct hare_server *hare_server_join(uint16_t id, int64_t now_sec);
/* Handles `req` from `client` whose pool page for it is `page` (NULL: the request named a page
 * outside the pool): zeroes, copies data and invalidates through `rt`, then writes the reply
 * to `reply`.
 * A request that cannot be decoded is answered EINVAL. */
void hare_server_handle(struct hare_server *s, uint32_t client, const struct reef_msg *req,
                        uint8_t *page, struct reef_msg *reply,
                        const struct hare_server_runtime *rt);
void hare_server_stats(const struct hare_server *s, struct hare_server_stats *out);
/* The invalidation that makes a client forget its whole lookup cache. */
void hare_invalidate_everything(struct reef_msg *out);

/* ---- The client (usr/hare/src/client.rs) ----------------------------------------------- */

struct hare_client;

struct hare_transport {
    void *ctx;
    /* Sends `msg` to `server`: 0 or a negative errno. */
    int (*send)(void *ctx, uint16_t server, const struct reef_msg *msg);
    /* The next message from `server` (waiting for one if `wait`): 1, 0 or a negative errno. */
    int (*recv)(void *ctx, uint16_t server, struct reef_msg *msg, int wait);
    /* Page 0 of the pool granted to `server`. */
    uint8_t *(*page)(void *ctx, uint16_t server);
};

struct hare_stat {
    uint64_t ino, size;
    uint32_t mode, nlink;
};

struct hare_client_stats {
    uint64_t requests, cache_hits, invalidations, restarts, strays, bad_blocks;
};

/* A client of servers 0..servers-1 (its nearby one `local`) through `t`, with the buffer
 * cache of `blocks` blocks at `cache`; NULL if `servers` is 0 or over 256. */
struct hare_client *hare_client_new(uint16_t servers, uint16_t local, bool distribute_dirs,
                                    uint8_t *cache, uint32_t blocks,
                                    const struct hare_transport *t);
/* Linux's calls, paths from the root; negative errno values on failure. */
int hare_open(struct hare_client *c, const char *path, int flags, uint32_t mode);
int hare_close(struct hare_client *c, int fd);
long hare_read(struct hare_client *c, int fd, void *buf, size_t len);
long hare_write(struct hare_client *c, int fd, const void *buf, size_t len);
int64_t hare_lseek(struct hare_client *c, int fd, int64_t offset, uint32_t whence);
int hare_mkdir(struct hare_client *c, const char *path, uint32_t mode);
int hare_rmdir(struct hare_client *c, const char *path);
int hare_unlink(struct hare_client *c, const char *path);
int hare_rename(struct hare_client *c, const char *from, const char *to);
int hare_stat(struct hare_client *c, const char *path, struct hare_stat *out);
/* The names of directory `path`, each followed by a NUL: bytes written, or -ERANGE. */
long hare_list(struct hare_client *c, const char *path, char *buf, size_t len);
void hare_client_stats(const struct hare_client *c, struct hare_client_stats *out);

#endif
