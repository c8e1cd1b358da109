//! The file server's half: `hared`'s C runtime takes a request off a connection and calls
//! [`hare_server_handle`], which runs `lib/hare`'s [`Server`] and hands back what the
//! runtime does next, in Hare's order (§3.3, §3.7.2): zero blocks, copy the data of a client
//! without direct access to the cache, send invalidations, reply.

use alloc::boxed::Box;
use core::ffi::c_void;

use abi::Errno;
use hare::wire::{self, PAGE_SIZE};
use hare::{Attrs, BufferCache, Reply, Server, ShardTable, Timespec};

use crate::cabi::CMsg;

/// Writes the invalidation that makes a client forget its whole lookup cache to `out`.
///
/// # Safety
/// `out` points to writable memory for a message.
#[no_mangle]
pub unsafe extern "C" fn hare_invalidate_everything(out: *mut CMsg) {
    let m = CMsg::from_message(&wire::encode_invalidation(&hare::Invalidation::everything()));
    // SAFETY: per the contract.
    unsafe { out.write(m) };
}

/// Counters of `struct hare_server_stats`.
#[repr(C)]
pub struct ServerStats {
    /// Requests handled.
    pub requests: u64,
    /// Invalidations sent.
    pub invalidations: u64,
    /// Requests answered "busy".
    pub busy: u64,
    /// Buffer-cache blocks free.
    pub free_blocks: u64,
    /// Requests that could not be decoded (answered EINVAL).
    pub refused: u64,
}

/// A server and what the runtime counts beside it.
pub struct HareServer {
    server: Server,
    refused: u64,
    /// Where a request's page is copied in and its reply's written before going back.
    page: Box<[u8; PAGE_SIZE]>,
}

/// Server `id` of `servers`, owning buffer-cache blocks `[block_lo, block_hi)`; the one that
/// holds the root's shard makes the root directory (mode 0755, owner root; its entries
/// spread over all servers if `root_distributed`). Null if `servers` is 0 or more than 256,
/// or `id` is not below it.
#[no_mangle]
pub extern "C" fn hare_server_new(
    id: u16,
    servers: u16,
    block_lo: u32,
    block_hi: u32,
    root_distributed: bool,
    now_sec: i64,
) -> *mut HareServer {
    let Some(table) = ShardTable::spread(usize::from(servers)) else {
        return core::ptr::null_mut();
    };
    if id >= servers {
        return core::ptr::null_mut();
    }
    let server = Server::new(
        id,
        table,
        block_lo..block_hi.max(block_lo),
        Attrs::new(0o755, 0, 0),
        root_distributed,
        Timespec::new(now_sec, 0),
    );
    Box::into_raw(Box::new(HareServer {
        server,
        refused: 0,
        page: Box::new([0; PAGE_SIZE]),
    }))
}

/// Server `id` joining a fleet that is being resized (`Server::joining`): null for the id no
/// server may have.
#[no_mangle]
pub extern "C" fn hare_server_join(id: u16, now_sec: i64) -> *mut HareServer {
    match Server::joining(id, Timespec::new(now_sec, 0)) {
        Some(server) => Box::into_raw(Box::new(HareServer {
            server,
            refused: 0,
            page: Box::new([0; PAGE_SIZE]),
        })),
        None => core::ptr::null_mut(),
    }
}

/// What a runtime provides to [`hare_server_handle`].
#[repr(C)]
pub struct ServerRuntime {
    /// Passed back to the functions below.
    pub ctx: *mut c_void,
    /// Zeroes block `block` of the buffer cache from byte `from` to its end.
    pub zero: extern "C" fn(ctx: *mut c_void, block: u32, from: u32),
    /// Sends `msg` (an invalidation) to client `client`, if it is connected.
    pub invalidate: extern "C" fn(ctx: *mut c_void, client: u32, msg: *const CMsg),
    /// Copies `len` bytes of block `block` from byte `offset` to `buf` (`offset + len` is at
    /// most a block).
    pub load: extern "C" fn(ctx: *mut c_void, block: u32, offset: u32, buf: *mut u8, len: u32),
    /// Copies `len` bytes of `data` into block `block` at byte `offset`.
    pub store: extern "C" fn(ctx: *mut c_void, block: u32, offset: u32, data: *const u8, len: u32),
}

/// The buffer cache as the runtime reaches it, for data that moves through the server
/// (`Handled::copy_data`, a client without direct access).
struct RuntimeCache<'a>(&'a ServerRuntime);

impl BufferCache for RuntimeCache<'_> {
    fn read(&self, block: u32, offset: usize, buf: &mut [u8]) {
        // Within one block: `copy_data` splits at block boundaries.
        (self.0.load)(
            self.0.ctx,
            block,
            offset as u32,
            buf.as_mut_ptr(),
            buf.len() as u32,
        );
    }

    fn write(&self, block: u32, offset: usize, data: &[u8]) {
        (self.0.store)(
            self.0.ctx,
            block,
            offset as u32,
            data.as_ptr(),
            data.len() as u32,
        );
    }
}

/// Handles request `req` from client `client`, whose pool page for it is `page` (4096 bytes,
/// or null if the request named a page outside the client's pool), and writes the reply to
/// `reply` after calling `rt`'s `zero`, `load` or `store`, and then `invalidate` for what the
/// request needs.
/// A request that cannot be decoded is answered EINVAL and changes nothing.
///
/// # Safety
/// `s` comes from [`hare_server_new`]; `req` and `reply` point to messages; `page` is null or
/// points to 4096 bytes that stay mapped during the call (the client may change them
/// meanwhile: they are read and written once each, by copy).
#[no_mangle]
pub unsafe extern "C" fn hare_server_handle(
    s: *mut HareServer,
    client: u32,
    req: *const CMsg,
    page: *mut u8,
    reply: *mut CMsg,
    rt: *const ServerRuntime,
) {
    // SAFETY: per the contract, `s` is a live server used by this thread alone, `req`, `reply`
    // and `rt` point to valid values.
    let (s, req, reply, rt) = unsafe { (&mut *s, *req, &mut *reply, &*rt) };
    let Some(m) = req.to_message() else {
        s.refused += 1;
        *reply = refuse(&req);
        return;
    };
    let (id, index) = wire::request_id(&m);
    let buf = &mut s.page[..];
    let used = wire::page_len(&m);
    let decoded = if page.is_null() {
        Err(wire::WireError::Bad("no page"))
    } else {
        // SAFETY: `page` points to PAGE_SIZE mapped bytes and `used` is at most PAGE_SIZE;
        // copied, never referenced.
        unsafe { core::ptr::copy_nonoverlapping(page, buf.as_mut_ptr(), used) };
        wire::decode_request(&m, &buf[..used])
    };
    let Ok(request) = decoded else {
        s.refused += 1;
        *reply = refuse(&req);
        return;
    };
    let mut handled = s.server.handle(client, request);
    for &(block, from) in &handled.zero {
        (rt.zero)(rt.ctx, block, from);
    }
    handled.copy_data(&RuntimeCache(rt));
    for (to, inv) in &handled.invalidations {
        let m = CMsg::from_message(&wire::encode_invalidation(inv));
        (rt.invalidate)(rt.ctx, *to, &m);
    }
    if wire::is_posted(&m) {
        handled.reply = wire::posted_reply(handled.reply);
    }
    let encoded = wire::encode_reply(id, index, &handled.reply, &mut s.page[..])
        .expect("a reply fits the page its request came with");
    // SAFETY: as above (a request that reaches here had a page); the reply's bytes go back
    // into the client's page.
    unsafe { core::ptr::copy_nonoverlapping(s.page.as_ptr(), page, wire::page_len(&encoded)) };
    *reply = CMsg::from_message(&encoded);
}

/// EINVAL for a request that could not be decoded (no page needed).
fn refuse(req: &CMsg) -> CMsg {
    let id = u64::from_le_bytes(req.data[..8].try_into().expect("8 bytes"));
    let index = (req.tag >> 8) as u8;
    let m = wire::encode_reply(id, index, &Reply::Err(Errno::EINVAL), &mut [])
        .expect("an error needs no page");
    CMsg::from_message(&m)
}

/// Writes the server's counters to `out`.
///
/// # Safety
/// `s` comes from [`hare_server_new`]; `out` points to writable memory for the counters.
#[no_mangle]
pub unsafe extern "C" fn hare_server_stats(s: *const HareServer, out: *mut ServerStats) {
    // SAFETY: per the contract.
    let (s, out) = unsafe { (&*s, &mut *out) };
    let st = s.server.stats();
    *out = ServerStats {
        requests: st.requests,
        invalidations: st.invalidations,
        busy: st.busy,
        free_blocks: st.free_blocks,
        refused: s.refused,
    };
}
