//! The client's half: a `lib/hare` [`Client`] per process whose transport is the C side's
//! connections (one per server) and whose buffer cache is a shared mapping. Each call runs
//! to completion before it returns: a request is sent and its reply awaited in place, with
//! the invalidations that arrive meanwhile queued for the next walk (§3.7.2).

use alloc::boxed::Box;
use alloc::collections::BTreeSet;
use alloc::vec::Vec;
use core::cell::{Cell, RefCell};
use core::ffi::{c_char, c_int, c_void, CStr};
use core::future::{ready, Future};

use abi::Errno;
use hare::wire::{self, PAGE_SIZE};
use hare::{
    run_ready, Attrs, BufferCache, Client, Fd, Invalidation, Kind, OpenFlags, Policy, Reply,
    Request, ServerId, ShardTable, Stat, Techniques, Timespec, Transport, BLOCK_SIZE, ROOT_INO,
};

use crate::cabi::CMsg;

/// `struct hare_transport`: the C side's connections to the servers.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct CTransport {
    /// Passed back to the functions below.
    pub ctx: *mut c_void,
    /// Sends `msg` to `server`: 0, or a negative errno if the server is gone.
    pub send: extern "C" fn(ctx: *mut c_void, server: u16, msg: *const CMsg) -> c_int,
    /// Takes the next message from `server` into `msg`, waiting for one if `wait`: 1, 0 (none
    /// and not `wait`), or a negative errno if the server is gone.
    pub recv: extern "C" fn(ctx: *mut c_void, server: u16, msg: *mut CMsg, wait: c_int) -> c_int,
    /// The page of the pool this client granted `server` (page 0: one request at a time).
    pub page: extern "C" fn(ctx: *mut c_void, server: u16) -> *mut u8,
}

/// The transport over [`CTransport`].
struct Conns {
    c: CTransport,
    servers: u16,
    next_id: Cell<u64>,
    queued: RefCell<Vec<Invalidation>>,
    /// Messages that were neither the awaited reply nor an invalidation.
    strays: Cell<u64>,
}

impl Conns {
    /// Sends `req` and waits for its reply; EIO if the server is gone or answers garbage.
    fn exchange(&self, server: ServerId, req: &Request) -> Reply {
        let id = self.next_id.get();
        self.next_id.set((id + 1) & wire::ID_MASK);
        let mut buf = [0u8; PAGE_SIZE];
        let Ok(m) = wire::encode_request(id, 0, req, &mut buf) else {
            return Reply::Err(Errno::ENAMETOOLONG);
        };
        let page = (self.c.page)(self.c.ctx, server);
        if page.is_null() || server >= self.servers {
            return Reply::Err(Errno::EIO);
        }
        // SAFETY: the C side's page for `server` is PAGE_SIZE bytes of this process's pool;
        // written and read by copy only (the server writes it while it handles the request).
        unsafe { core::ptr::copy_nonoverlapping(buf.as_ptr(), page, wire::page_len(&m)) };
        if (self.c.send)(self.c.ctx, server, &CMsg::from_message(&m)) != 0 {
            return Reply::Err(Errno::EIO);
        }
        loop {
            let mut got = CMsg::from_message(&m);
            if (self.c.recv)(self.c.ctx, server, &mut got, 1) != 1 {
                return Reply::Err(Errno::EIO);
            }
            let Some(r) = got.to_message() else {
                self.strays.set(self.strays.get() + 1);
                continue;
            };
            if wire::is_invalidation(&r) {
                match wire::decode_invalidation(&r) {
                    Ok(i) => self.queued.borrow_mut().push(i),
                    Err(_) => self.strays.set(self.strays.get() + 1),
                }
                continue;
            }
            if wire::request_id(&r) != (id, 0) {
                self.strays.set(self.strays.get() + 1);
                continue;
            }
            let len = wire::page_len(&r);
            // SAFETY: as above; `len` is at most PAGE_SIZE.
            unsafe { core::ptr::copy_nonoverlapping(page, buf.as_mut_ptr(), len) };
            return wire::decode_reply(&r, &buf[..len]).unwrap_or(Reply::Err(Errno::EIO));
        }
    }
}

impl Transport for Conns {
    fn call(&self, server: ServerId, req: Request) -> impl Future<Output = Reply> {
        ready(self.exchange(server, &req))
    }

    /// Waits for the reply too: this transport has one request in flight per server.
    fn post(&self, server: ServerId, req: Request) {
        self.exchange(server, &req);
    }

    fn invalidations(&self, out: &mut Vec<Invalidation>) {
        for server in 0..self.servers {
            let mut m = CMsg::from_message(&wire::encode_invalidation(&Invalidation::everything()));
            while (self.c.recv)(self.c.ctx, server, &mut m, 0) == 1 {
                match m.to_message().map(|r| wire::decode_invalidation(&r)) {
                    Some(Ok(i)) => self.queued.borrow_mut().push(i),
                    _ => self.strays.set(self.strays.get() + 1),
                }
            }
        }
        out.append(&mut self.queued.borrow_mut());
    }
}

/// The buffer cache: `blocks` blocks at `base`, a mapping shared with the servers and the
/// other clients.
struct Cache {
    base: *mut u8,
    blocks: u32,
    /// Accesses to blocks past the cache (a server's error), which read zeros and write
    /// nothing.
    bad: Cell<u64>,
}

impl Cache {
    fn at(&self, block: u32, offset: usize, len: usize) -> Option<*mut u8> {
        if block >= self.blocks || offset + len > BLOCK_SIZE {
            self.bad.set(self.bad.get() + 1);
            return None;
        }
        // SAFETY: block < blocks, so the block lies inside the mapping.
        Some(unsafe { self.base.add(block as usize * BLOCK_SIZE + offset) })
    }
}

impl BufferCache for Cache {
    fn read(&self, block: u32, offset: usize, buf: &mut [u8]) {
        match self.at(block, offset, buf.len()) {
            // SAFETY: `at` checked the range is inside the mapping; copied, never referenced
            // (other processes write the cache concurrently, as on Linux's page cache).
            Some(p) => unsafe { core::ptr::copy_nonoverlapping(p, buf.as_mut_ptr(), buf.len()) },
            None => buf.fill(0),
        }
    }

    fn write(&self, block: u32, offset: usize, data: &[u8]) {
        if let Some(p) = self.at(block, offset, data.len()) {
            // SAFETY: as in `read`.
            unsafe { core::ptr::copy_nonoverlapping(data.as_ptr(), p, data.len()) };
        }
    }
}

/// A client instance.
pub struct HareClient {
    client: Client<Conns, Cache>,
}

/// A client of the servers `0..servers` (which know it by the id its connections gave them),
/// its nearby server `local` (creation affinity,
/// §3.7.5), new directories distributed if `distribute_dirs`, reaching the servers through
/// `t` and the `blocks`-block buffer cache at `cache`. Null if `servers` is 0 or over 256.
///
/// # Safety
/// `t` points to a transport whose functions stay valid while the client lives; `cache`
/// points to `blocks * 4096` bytes that stay mapped while it lives.
#[no_mangle]
pub unsafe extern "C" fn hare_client_new(
    servers: u16,
    local: u16,
    distribute_dirs: bool,
    cache: *mut u8,
    blocks: u32,
    t: *const CTransport,
) -> *mut HareClient {
    let Some(table) = ShardTable::spread(usize::from(servers)) else {
        return core::ptr::null_mut();
    };
    // SAFETY: per the contract.
    let c = unsafe { *t };
    let policy = Policy {
        local: local.min(servers - 1),
        near: BTreeSet::from([local.min(servers - 1)]),
        distribute_dirs,
        cache_entries: 4096,
        techniques: Techniques::default(),
    };
    let conns = Conns {
        c,
        servers,
        next_id: Cell::new(1),
        queued: RefCell::new(Vec::new()),
        strays: Cell::new(0),
    };
    let cache = Cache {
        base: cache,
        blocks,
        bad: Cell::new(0),
    };
    let client = Client::new(table, conns, cache, policy, false);
    Box::into_raw(Box::new(HareClient { client }))
}

#[repr(C)]
struct CTimespec {
    sec: i64,
    nsec: i64,
}

extern "C" {
    fn clock_gettime(clock: c_int, ts: *mut CTimespec) -> c_int;
}

fn now() -> Timespec {
    let mut ts = CTimespec { sec: 0, nsec: 0 };
    // SAFETY: CLOCK_REALTIME (0) into a valid timespec.
    unsafe { clock_gettime(0, &mut ts) };
    Timespec::new(ts.sec, ts.nsec.clamp(0, 999_999_999) as u32)
}

/// The client and a path of a C call.
///
/// # Safety
/// `c` comes from [`hare_client_new`]; `path` is a NUL-terminated string.
unsafe fn args<'a>(c: *mut HareClient, path: *const c_char) -> (&'a mut HareClient, &'a [u8]) {
    // SAFETY: per the contract.
    unsafe { (&mut *c, CStr::from_ptr(path).to_bytes()) }
}

fn code(r: Result<(), Errno>) -> c_int {
    r.map_or_else(|e| -e.0.abs(), |()| 0)
}

fn long(r: Result<usize, Errno>) -> isize {
    r.map_or_else(|e| -(e.0.abs() as isize), |n| n as isize)
}

const O_CREAT: c_int = 0o100;
const O_EXCL: c_int = 0o200;
const O_TRUNC: c_int = 0o1000;
const O_APPEND: c_int = 0o2000;
const O_NOFOLLOW: c_int = 0o400000;
const O_ACCMODE: c_int = 0o3;

/// `open(path, flags, mode)` (flags: Linux's O_CREAT, O_EXCL, O_TRUNC, O_APPEND, O_NOFOLLOW,
/// and the access mode: a write through an `O_RDONLY` descriptor is `EBADF`): a descriptor
/// or a negative errno.
///
/// # Safety
/// `c` comes from [`hare_client_new`]; `path` is a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn hare_open(
    c: *mut HareClient,
    path: *const c_char,
    flags: c_int,
    mode: u32,
) -> c_int {
    // SAFETY: per the contract.
    let (c, path) = unsafe { args(c, path) };
    let f = OpenFlags {
        create: flags & O_CREAT != 0,
        exclusive: flags & O_EXCL != 0,
        truncate: flags & O_TRUNC != 0,
        append: flags & O_APPEND != 0,
        nofollow: flags & O_NOFOLLOW != 0,
        list: false,
        read_only: flags & O_ACCMODE == 0,
    };
    let attrs = Attrs::new(mode & 0o7777, 0, 0);
    match run_ready(c.client.open(ROOT_INO, path, f, attrs, now())) {
        Ok(Fd(fd)) => fd as c_int,
        Err(e) => -e.0.abs(),
    }
}

/// `close(fd)`.
///
/// # Safety
/// `c` comes from [`hare_client_new`].
#[no_mangle]
pub unsafe extern "C" fn hare_close(c: *mut HareClient, fd: c_int) -> c_int {
    // SAFETY: per the contract.
    let c = unsafe { &mut *c };
    code(run_ready(c.client.close(Fd(fd as u32))))
}

/// `read(fd, buf, len)`.
///
/// # Safety
/// `c` comes from [`hare_client_new`]; `buf` points to `len` writable bytes.
#[no_mangle]
pub unsafe extern "C" fn hare_read(
    c: *mut HareClient,
    fd: c_int,
    buf: *mut u8,
    len: usize,
) -> isize {
    // SAFETY: per the contract.
    let (c, buf) = unsafe { (&mut *c, core::slice::from_raw_parts_mut(buf, len)) };
    long(run_ready(c.client.read(Fd(fd as u32), buf)))
}

/// `write(fd, buf, len)`.
///
/// # Safety
/// `c` comes from [`hare_client_new`]; `buf` points to `len` bytes.
#[no_mangle]
pub unsafe extern "C" fn hare_write(
    c: *mut HareClient,
    fd: c_int,
    buf: *const u8,
    len: usize,
) -> isize {
    // SAFETY: per the contract.
    let (c, data) = unsafe { (&mut *c, core::slice::from_raw_parts(buf, len)) };
    long(run_ready(c.client.write(Fd(fd as u32), data, now())))
}

/// `lseek(fd, offset, whence)`: the new offset or a negative errno.
///
/// # Safety
/// `c` comes from [`hare_client_new`].
#[no_mangle]
pub unsafe extern "C" fn hare_lseek(
    c: *mut HareClient,
    fd: c_int,
    offset: i64,
    whence: u32,
) -> i64 {
    // SAFETY: per the contract.
    let c = unsafe { &mut *c };
    run_ready(c.client.lseek(Fd(fd as u32), offset, whence))
        .map_or_else(|e| -i64::from(e.0.abs()), |o| o as i64)
}

/// `mkdir(path, mode)`.
///
/// # Safety
/// `c` comes from [`hare_client_new`]; `path` is a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn hare_mkdir(c: *mut HareClient, path: *const c_char, mode: u32) -> c_int {
    // SAFETY: per the contract.
    let (c, path) = unsafe { args(c, path) };
    let attrs = Attrs::new(mode & 0o7777, 0, 0);
    code(run_ready(c.client.mkdir(
        ROOT_INO,
        path,
        attrs,
        false,
        now(),
    )))
}

/// `rmdir(path)`.
///
/// # Safety
/// `c` comes from [`hare_client_new`]; `path` is a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn hare_rmdir(c: *mut HareClient, path: *const c_char) -> c_int {
    // SAFETY: per the contract.
    let (c, path) = unsafe { args(c, path) };
    code(run_ready(c.client.rmdir(ROOT_INO, path, now())))
}

/// `unlink(path)`.
///
/// # Safety
/// `c` comes from [`hare_client_new`]; `path` is a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn hare_unlink(c: *mut HareClient, path: *const c_char) -> c_int {
    // SAFETY: per the contract.
    let (c, path) = unsafe { args(c, path) };
    code(run_ready(c.client.unlink(ROOT_INO, path, now())))
}

/// `rename(from, to)`.
///
/// # Safety
/// `c` comes from [`hare_client_new`]; `from` and `to` are NUL-terminated strings.
#[no_mangle]
pub unsafe extern "C" fn hare_rename(
    c: *mut HareClient,
    from: *const c_char,
    to: *const c_char,
) -> c_int {
    // SAFETY: per the contract.
    let (c, from) = unsafe { args(c, from) };
    // SAFETY: per the contract.
    let to = unsafe { CStr::from_ptr(to).to_bytes() };
    code(run_ready(c.client.rename(
        ROOT_INO,
        from,
        ROOT_INO,
        to,
        0,
        now(),
    )))
}

/// `struct hare_stat`.
#[repr(C)]
pub struct CStat {
    /// Inode number.
    pub ino: u64,
    /// Size in bytes.
    pub size: u64,
    /// `st_mode` (type and permissions).
    pub mode: u32,
    /// Links.
    pub nlink: u32,
}

/// `stat(path)` (following a last symlink) into `out`.
///
/// # Safety
/// `c` comes from [`hare_client_new`]; `path` is a NUL-terminated string; `out` is writable.
#[no_mangle]
pub unsafe extern "C" fn hare_stat(
    c: *mut HareClient,
    path: *const c_char,
    out: *mut CStat,
) -> c_int {
    // SAFETY: per the contract.
    let (c, path) = unsafe { args(c, path) };
    let r = run_ready(c.client.stat(ROOT_INO, path, true)).map(|s: Stat| {
        let st = CStat {
            ino: s.ino,
            size: s.size,
            mode: s.st_mode(),
            nlink: s.nlink,
        };
        // SAFETY: per the contract.
        unsafe { out.write(st) };
    });
    code(r)
}

/// Lists directory `path` into `buf`: each name followed by a NUL, in the servers' order
/// (by server, then by name), `.` and `..` left out. The bytes written, or a negative errno
/// (ERANGE: `buf` is too small).
///
/// # Safety
/// `c` comes from [`hare_client_new`]; `path` is a NUL-terminated string; `buf` points to
/// `len` writable bytes.
#[no_mangle]
pub unsafe extern "C" fn hare_list(
    c: *mut HareClient,
    path: *const c_char,
    buf: *mut u8,
    len: usize,
) -> isize {
    // SAFETY: per the contract.
    let (c, path) = unsafe { args(c, path) };
    // SAFETY: per the contract.
    let out = unsafe { core::slice::from_raw_parts_mut(buf, len) };
    let mut list = |c: &mut HareClient| -> Result<usize, Errno> {
        let flags = OpenFlags::default();
        let fd = run_ready(
            c.client
                .open(ROOT_INO, path, flags, Attrs::new(0, 0, 0), now()),
        )?;
        let entries = run_ready(c.client.read_dir(fd));
        run_ready(c.client.close(fd))?;
        let mut used = 0;
        for (name, e) in entries?.iter() {
            if name == b"." || name == b".." || e.kind == Kind::CharDev {
                continue;
            }
            let end = used + name.len() + 1;
            let dst = out.get_mut(used..end).ok_or(Errno::ERANGE)?;
            dst[..name.len()].copy_from_slice(name);
            dst[name.len()] = 0;
            used = end;
        }
        Ok(used)
    };
    long(list(c))
}

/// `struct hare_client_stats`.
#[repr(C)]
pub struct CClientStats {
    /// Requests sent.
    pub requests: u64,
    /// Lookups answered from the cache.
    pub cache_hits: u64,
    /// Invalidations applied.
    pub invalidations: u64,
    /// Operations restarted after a stale entry.
    pub restarts: u64,
    /// Messages that were neither an awaited reply nor an invalidation.
    pub strays: u64,
    /// Buffer-cache accesses outside the cache.
    pub bad_blocks: u64,
}

/// Writes the client's counters to `out`.
///
/// # Safety
/// `c` comes from [`hare_client_new`]; `out` is writable.
#[no_mangle]
pub unsafe extern "C" fn hare_client_stats(c: *const HareClient, out: *mut CClientStats) {
    // SAFETY: per the contract.
    let (c, out) = unsafe { (&*c, &mut *out) };
    let s = c.client.stats();
    let (strays, bad) = (
        c.client.transport().strays.get(),
        c.client.buffer_cache().bad.get(),
    );
    *out = CClientStats {
        requests: s.requests,
        cache_hits: s.cache_hits,
        invalidations: s.invalidations,
        restarts: s.restarts,
        strays,
        bad_blocks: bad,
    };
}
