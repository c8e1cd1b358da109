//! Hare behind the ordinary file calls (issue 13; Hare §3, fos Figure 5): the kernel is the
//! client library. `mount -t hare none DIR` connects to every member of the fleet
//! `fleet/hare` (`/bin/hared`, started with `fleet start hare ...`), and from then on the
//! file calls on paths under `DIR` (and on descriptors opened there) become `lib/hare`
//! requests, with no change to programs.
//!
//! - **Clients.** One `lib/hare` [`Client`] per core ([`Mount::clients`]): the processes on a
//!   core share its lookup cache and its connections, one per server, made by the kernel
//!   itself (the kernel holds the client end of each `Conn`; `crate::mailbox`). A path call
//!   uses the client of the core it starts on; a descriptor keeps the client that opened it
//!   (its `hare::Fd` and offset live there), so a process that moves, or a `fork` child on
//!   another core, goes on using it: one kernel holds the open file description, so Hare's
//!   hybrid descriptors (§3.5, server-kept shared offsets) are not needed here.
//! - **Requests.** A client runs one operation at a time (its [`SleepLock`]); a request is
//!   written into the link's pool page and sent when the client library makes the call, and
//!   its thread sleeps on the reply ring's word until the reply comes when it awaits it
//!   ([`Links::send`], [`Links::receive`]): a broadcast's requests are all sent before the
//!   first wait, so its servers work at the same time (§3.7.3). A link has one awaited
//!   request at a time (its body and reply share the pool page): another one for the same
//!   server first takes the earlier reply and keeps it for its caller. Invalidations that
//!   arrive meanwhile queue for the next walk (atomic delivery, §3.7.2). Only a fatal signal
//!   ends a wait, and only before the operation has sent a request that changes something
//!   (its lookups; [`Links::committed`]): from then on a killed thread finishes the
//!   operation, so that no first steps stand alone. The reply of a wait cut short is no
//!   one's, and the next request on that link first takes it (the server may still be
//!   writing the pool page).
//! - **The buffer cache** (§3.3) is an arena of kernel frames made at mount (`cache=MiB`,
//!   default [`CACHE_MIB_DEFAULT`]), granted to every server in the first hello, which splits
//!   it among them; the clients read and write file data straight into it. x86 keeps it
//!   coherent, so close-to-open (§3.3.1) has nothing to flush or drop: its protocol points are
//!   counted (`/proc/reef/hare`: opens are where a client would invalidate, closes where it
//!   would write back).
//! - **Options** ([`Options`]): `distribute` makes every new directory distributed (else only
//!   a `mkdir` with [`abi::reef::S_DISTRIBUTED`] asks for one), and `nodist`, `nobcast`,
//!   `nolookupcache`, `noaffinity`, `nodirect` switch one of Hare's techniques off each (§5.4's
//!   ablations, `lib/hare`'s `Techniques` in every core client's policy); `exec=rr` or
//!   `exec=random` places each `execve` on another core (§3.6, [`ExecPlacement`]);
//!   `distribute_at=` is when a directory distributes itself (§6.1.2); `mode=` sets the root
//!   directory's permission bits.
//! - **Resizing** (§6.1.1, [`resize`]): `fleet grow hare`/`fleet shrink hare` move shards
//!   between the servers while every core client is held back, and a directory that grew
//!   past `distribute_at=` entries becomes distributed the same way (`resize.rs`).
//! - **Closing** a descriptor can happen where the kernel may not sleep (a descriptor replaced
//!   under a lock), so a dropped [`HareNode`] queues its close ([`Mount::closing`], room
//!   reserved when it was opened); the next operation on that core's client sends it, as
//!   does the thread that let go of it ([`release`]). A close is posted: sent without
//!   waiting for its reply (nothing in it is needed), which the client takes with its next
//!   reply from that server (`Links::post`); a resize and `umount` wait for every reply
//!   owed first (`Links::settle`).
//!
//! Differences from NR-FS, documented in docs/architecture.md: permissions are checked by
//! `crate::fs::perm`'s `hare_*` functions with a `stat` of each directory of a path; `..` of
//! the mount's root is the root
//! itself for a walk that starts inside (paths with `..` are resolved by name from the
//! directory's current path, [`HareNode::path`], so `cd ..` leaves the mount); an absolute
//! symlink target resolves inside Hare if it lies under the mount point and leads out of it
//! if not ([`exit`], `crate::fs::path::at`); programs in Hare run with their pages copied
//! (`crate::fs::MappedFile`).

use crate::fd::{KStat, Node, OpenFile, O_ACCMODE, O_PATH, O_RDONLY};
use crate::kcb;
use crate::mailbox::{self, Conn, GrantBudget, SharedFrame};
use crate::names::{self, Name};
use crate::proc::sched;
use crate::proc::wait::{SleepLock, SleepLockGuard};
use crate::proc::Thread;
use crate::sync::IrqMutex;
use ::hare::wire::{self, PAGE_SIZE};
use ::hare::{
    run_ready, Attrs, BufferCache, Client, Fd, Ino, Invalidation, Kind, Listing, OpenFlags,
    Policy, Reply, Request, ServerId, SetAttr, ShardTable, Techniques, Transport, BLOCK_SIZE,
    ROOT_INO,
};
use abi::Errno;
use alloc::boxed::Box;
use alloc::collections::{BTreeMap, BTreeSet};
use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::cell::{Cell, RefCell};
use core::fmt::Write;
use core::future::Future;
use core::pin::Pin;
use core::task::{Context, Poll};
use core::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use msg::names::Member;
use msg::Message;

mod resize;

pub use resize::{resize, Change};

/// Entries of an ordinary directory past which it becomes distributed (`distribute_at=`'s
/// default; a quarter of it made from two cores or more does too).
pub const DISTRIBUTE_AT_DEFAULT: u32 = 1024;

/// Directories whose creating cores the mount remembers at once (more are not watched).
const COUNTED_DIRS: usize = 4096;

/// The fleet whose members are the file servers.
pub const FLEET: &[u8] = b"fleet/hare";

/// The program that makes Hare the root (`root=hare`, `usr/hareroot.c`): it starts the
/// servers, mounts Hare over `/` with option `root` and executes init.
pub const ROOT_LAUNCHER: &str = "/bin/hareroot";

/// Top-level directories a Hare mounted over `/` leaves to the kernel's own trees (devices
/// in NR-FS, `/proc` and `/sys`), as Linux mounts them over the root.
const NOT_IN_ROOT: [&[u8]; 3] = [b"dev", b"proc", b"sys"];

/// The buffer cache's size unless `cache=MiB` says otherwise.
pub const CACHE_MIB_DEFAULT: u64 = 16;

/// The largest buffer cache a mount may ask for (`cache=MiB`; `EINVAL` past it).
pub const CACHE_MIB_MAX: u64 = 256;

/// `st_dev` of files in Hare (after `crate::fd`'s numbers).
pub const DEV_HARE: u64 = 7;

/// Client ids of the kernel's clients: this plus the core (user-space clients such as
/// `usr/haretest.c` number theirs from 1).
const KERNEL_CLIENT: u32 = 0x4b00_0000;

/// The client id of the kernel's resizer (`resize`), past every core's.
const RESIZER_CLIENT: u32 = KERNEL_CLIENT + 0xffff;

/// Core `core`'s client id.
fn client_id(core: usize) -> u32 {
    KERNEL_CLIENT + core as u32
}

/// One connection to one server: the channel pair and the pool page its requests use.
struct Link {
    /// The connection to the server; the kernel holds its client end.
    conn: Arc<Conn>,
    /// The page, granted to the server, that carries a request's body and then its reply's.
    pool: SharedFrame,
    /// The awaited request whose reply has not been taken yet, and whether a caller still
    /// wants it (`false` once its thread stopped waiting, a fatal signal): at most one, since
    /// its body and its reply's page share the pool page, so the next request on the link
    /// first takes this reply.
    outstanding: Cell<Option<(u64, bool)>>,
    /// Replies taken before their callers asked for them (a request sent to this server
    /// while another's reply was still to come), by request id.
    early: RefCell<Vec<(u64, Reply)>>,
    /// Posted requests whose replies have not come yet (at most `wire::IN_FLIGHT` - 1, so
    /// that an awaited request has room too): the replies come in order, before the reply of
    /// any request sent after them, and are dropped.
    owed: Cell<usize>,
    /// The server owns another core (split placement), where it polls its rings between
    /// requests (`hared`): a reply comes sooner than a sleep and a wake-up would take, so the
    /// client polls for it first (UMP's receivers poll), for up to [`REPLY_POLL_NS`].
    polls: bool,
}

/// How long a client polls for the reply of a server that owns its core before it sleeps.
const REPLY_POLL_NS: u64 = 200_000;

impl Drop for Link {
    fn drop(&mut self) {
        self.conn.close(mailbox::End::Client);
    }
}

/// The transport of one core's client (or of a resize, `resize`): its links, by server id.
pub struct Links {
    /// The links, indexed by server id (none for an id no server of the fleet has).
    links: Vec<Option<Link>>,
    /// A fatal signal does not end a wait for a reply (a resize, which must finish what it
    /// began: the thread polls for the reply instead of sleeping).
    patient: bool,
    /// The operation under way has sent a request that changes something
    /// ([`Request::changes`]): from then on it is patient too, so that a thread killed in
    /// the middle of a `rename` or an `rmdir` finishes it rather than leave its first steps
    /// standing alone (a link count raised for a name never made, a directory's marks never
    /// committed or released). Cleared when an operation takes the client ([`Mount::client`]).
    committed: Cell<bool>,
    /// The mount's [`Mount::generation`] these links and the client's table follow.
    generation: u64,
    /// The id of the next request (kept within `wire::ID_MASK`).
    next_id: Cell<u64>,
    /// Invalidations that came while a reply was awaited, for the client's next walk.
    queued: RefCell<Vec<Invalidation>>,
    /// Messages that were neither an awaited reply, an invalidation nor an owed reply.
    strays: Cell<u64>,
    /// Owed replies that were errors (a posted request the server refused).
    refused_posts: Cell<u64>,
    /// Requests sent, nanoseconds from each send to its reply, and the times the reply was
    /// not there yet when looked for (each a wait on the reply ring).
    exchanges: Cell<u64>,
    /// Nanoseconds from each send to its reply, summed.
    waited_ns: Cell<u64>,
    /// Times a reply was not there yet when looked for.
    waits: Cell<u64>,
    /// Where requests are encoded and replies' pages copied (one request at a time).
    scratch: RefCell<Box<[u8]>>,
}

/// A request sent and not yet answered: where and when it went.
struct Sent {
    /// The server it went to.
    server: ServerId,
    /// Its request id.
    id: u64,
    /// When it went (`time::now_ns`), for the link's waiting figures.
    at_ns: u64,
}

/// A [`Links::call`]: the request went out when the call was made; the first poll sleeps
/// until its reply and takes it. So the requests of a broadcast (`lib/hare`'s
/// `broadcast_each` makes every call before it polls any) are all at their servers before the
/// client waits for the first reply, and the servers work at the same time (§3.7.3).
struct Call<'a> {
    /// The transport it went through.
    links: &'a Links,
    /// The request, or why it could not be sent.
    state: Result<Sent, Errno>,
}

impl Future for Call<'_> {
    type Output = Reply;

    fn poll(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<Reply> {
        let this = self.get_mut();
        let state = core::mem::replace(&mut this.state, Err(Errno::EIO));
        Poll::Ready(match state {
            Ok(sent) => this.links.receive(sent),
            Err(e) => Reply::Err(e),
        })
    }
}

impl Drop for Call<'_> {
    /// A call dropped before its reply came: the reply is no one's (taken and dropped later).
    fn drop(&mut self) {
        if let Ok(sent) = &self.state {
            self.links.forget(sent);
        }
    }
}

impl Links {
    /// Sends `req` to `server` and sleeps until its reply: `EIO` if the server is gone or
    /// answers garbage, `EINTR` if the thread is killed meanwhile.
    fn exchange(&self, server: ServerId, req: &Request) -> Reply {
        match self.send(server, req) {
            Ok(sent) => self.receive(sent),
            Err(e) => Reply::Err(e),
        }
    }

    /// Sends `req` to `server` without waiting for its reply ([`Links::receive`] takes it),
    /// after taking the reply still to come on that link, if any (its page is the one this
    /// request's body and reply use): why it cannot be sent.
    fn send(&self, server: ServerId, req: &Request) -> Result<Sent, Errno> {
        let Some(link) = self.link(server) else {
            return Err(Errno::EIO);
        };
        self.note_change(req);
        if let Some((id, wanted)) = link.outstanding.get() {
            let reply = self.take_reply(link, id)?;
            if wanted {
                link.early.borrow_mut().push((id, reply));
            }
        }
        let mut buf = self.scratch.borrow_mut();
        let (id, m) = self.encode(req, &mut buf, 0)?;
        link.pool.write(0, &buf[..wire::page_len(&m)]);
        let at_ns = crate::time::now_ns();
        if link.conn.send_request(&m).is_err() {
            return Err(Errno::EIO);
        }
        link.outstanding.set(Some((id, true)));
        Ok(Sent { server, id, at_ns })
    }

    /// Sleeps until the reply to `sent` and takes it (or takes the one an earlier look
    /// found): `EINTR` if the thread is killed meanwhile (the reply is then no one's).
    fn receive(&self, sent: Sent) -> Reply {
        let Some(link) = self.link(sent.server) else {
            return Reply::Err(Errno::EIO);
        };
        let mut early = link.early.borrow_mut();
        if let Some(i) = early.iter().position(|(id, _)| *id == sent.id) {
            return early.swap_remove(i).1;
        }
        drop(early);
        if link.outstanding.get() != Some((sent.id, true)) {
            return Reply::Err(Errno::EIO);
        }
        let reply = match self.take_reply(link, sent.id) {
            Ok(r) => r,
            Err(Errno::EINTR) => {
                link.outstanding.set(Some((sent.id, false)));
                Reply::Err(Errno::EINTR)
            }
            Err(_) => {
                // The server is gone or wrote garbage: nothing more comes on this link.
                link.outstanding.set(None);
                Reply::Err(Errno::EIO)
            }
        };
        self.exchanges.set(self.exchanges.get() + 1);
        self.waited_ns
            .set(self.waited_ns.get() + crate::time::now_ns().saturating_sub(sent.at_ns));
        reply
    }

    /// `sent`'s caller gave up before its reply: the reply is dropped when it comes.
    fn forget(&self, sent: &Sent) {
        let Some(link) = self.link(sent.server) else {
            return;
        };
        if link.outstanding.get() == Some((sent.id, true)) {
            link.outstanding.set(Some((sent.id, false)));
        }
        link.early.borrow_mut().retain(|(id, _)| *id != sent.id);
    }

    /// Sleeps until the reply to `link`'s outstanding request `id` and decodes it (`EIO` for
    /// garbage); the link then has none outstanding. `EINTR` if the thread is killed first.
    fn take_reply(&self, link: &Link, id: u64) -> Result<Reply, Errno> {
        let m = self.await_reply(link, &sched::current_thread(), id)?;
        link.outstanding.set(None);
        Ok(self.decode(link, &m))
    }

    /// Reply `m` of `link`, its page read from the pool page.
    fn decode(&self, link: &Link, m: &Message) -> Reply {
        let mut buf = self.scratch.borrow_mut();
        let len = wire::page_len(m);
        link.pool.read(0, &mut buf[..len]);
        wire::decode_reply(m, &buf[..len]).unwrap_or(Reply::Err(Errno::EIO))
    }

    /// `req` encoded with the next request id into `buf` (its page), marked with `flags`
    /// (`wire::POSTED` or 0): the id and the message.
    fn encode(&self, req: &Request, buf: &mut [u8], flags: u64) -> Result<(u64, Message), Errno> {
        let id = self.next_id.get();
        self.next_id.set((id + 1) & wire::ID_MASK);
        let m = wire::encode_request(id | flags, 0, req, buf).map_err(|_| Errno::ENAMETOOLONG)?;
        Ok((id, m))
    }

    /// Sends `req`, whose reply nobody needs, to `server` without waiting for it; first
    /// waits for the oldest owed reply if `wire::IN_FLIGHT` - 1 are owed already, and for
    /// the reply of a request whose thread stopped waiting: the server handles a link's
    /// posted requests before others' awaited ones only while nothing awaited is ahead of
    /// them (`wire::POSTED`). What is posted changes something, so a killed thread waits
    /// too ([`Links::committed`]): its closes go out. A request with a body (in the pool
    /// page, which the next request reuses) is exchanged instead.
    fn post(&self, server: ServerId, req: &Request) {
        let Some(link) = self.link(server) else {
            return;
        };
        self.note_change(req);
        if let Some((id, false)) = link.outstanding.get() {
            let _ = self.take_reply(link, id);
        }
        let Ok((_, m)) = self.encode(req, &mut self.scratch.borrow_mut(), wire::POSTED) else {
            return;
        };
        if wire::page_len(&m) > 0 {
            self.exchange(server, req);
            return;
        }
        if link.owed.get() + 1 >= wire::IN_FLIGHT
            && self.settle_link(link, wire::IN_FLIGHT - 2).is_err()
        {
            return;
        }
        if link.conn.send_request(&m).is_ok() {
            link.owed.set(link.owed.get() + 1);
        }
    }

    /// Takes messages from `link` until at most `keep` replies are owed.
    fn settle_link(&self, link: &Link, keep: usize) -> Result<(), Errno> {
        let me = sched::current_thread();
        while link.owed.get() > keep {
            match link.conn.try_reply()? {
                Some(m) => self.take_unawaited(link, &m),
                None => self.wait(link, &me)?,
            }
        }
        Ok(())
    }

    /// Sleeps until `link`'s reply ring has a message: `EINTR` if the thread is killed first,
    /// unless the links are patient or the operation has sent a change ([`Links::committed`]):
    /// then a killed thread goes on waiting, yielding the core between looks.
    fn wait(&self, link: &Link, me: &Arc<Thread>) -> Result<(), Errno> {
        match link.conn.wait_reply(me) {
            Err(Errno::EINTR) if self.patient || self.committed.get() => {
                sched::schedule();
                Ok(())
            }
            waited => waited,
        }
    }

    /// Notes that the operation under way sent `req` ([`Links::committed`]).
    fn note_change(&self, req: &Request) {
        if req.changes() {
            self.committed.set(true);
        }
    }

    /// Waits for every owed reply, so that the servers have handled everything this client
    /// sent (before a resize or an unmount): `EINTR` if the thread is killed meanwhile, `EIO`
    /// if a server is gone.
    pub fn settle(&self) -> Result<(), Errno> {
        let mut settled = Ok(());
        for link in self.links.iter().flatten() {
            match self.settle_link(link, 0) {
                Ok(()) => {}
                Err(Errno::EINTR) => return Err(Errno::EINTR),
                Err(e) => {
                    // A server that is gone answers nothing more: the rest are settled still.
                    link.owed.set(0);
                    settled = settled.and(Err(e));
                }
            }
        }
        settled
    }

    /// A message no one awaits yet: an invalidation (queued), an owed reply, the reply to the
    /// link's outstanding request (kept for its caller, or dropped if no one wants it), or a
    /// stray.
    fn take_unawaited(&self, link: &Link, m: &Message) {
        if wire::is_invalidation(m) {
            self.take_invalidation(m);
        } else if let Some((id, wanted)) = link
            .outstanding
            .get()
            .filter(|&(id, _)| wire::request_id(m) == (id, 0))
        {
            link.outstanding.set(None);
            if wanted {
                let reply = self.decode(link, m);
                link.early.borrow_mut().push((id, reply));
            }
        } else if link.owed.get() > 0 {
            link.owed.set(link.owed.get() - 1);
            // A posted request's reply has no page (`post` sends only those).
            if !matches!(wire::decode_reply(m, &[]), Ok(Reply::Done)) {
                self.refused_posts.set(self.refused_posts.get() + 1);
            }
        } else {
            self.strays.set(self.strays.get() + 1);
        }
    }

    /// Takes messages from `link` until the reply to request `id`, queueing invalidations.
    fn await_reply(&self, link: &Link, me: &Arc<Thread>, id: u64) -> Result<Message, Errno> {
        loop {
            match link.conn.try_reply()? {
                Some(m) if !wire::is_invalidation(&m) && wire::request_id(&m) == (id, 0) => {
                    return Ok(m)
                }
                Some(m) => self.take_unawaited(link, &m),
                None if link.polls && poll_reply(link) => {}
                None => {
                    self.waits.set(self.waits.get() + 1);
                    self.wait(link, me)?;
                }
            }
        }
    }

    /// Links over `links` (by server id), with the scratch page.
    fn new(links: Vec<Option<Link>>, patient: bool) -> Result<Self, Errno> {
        let mut scratch = Vec::new();
        scratch
            .try_reserve_exact(PAGE_SIZE)
            .map_err(|_| Errno::ENOMEM)?;
        scratch.resize(PAGE_SIZE, 0);
        Ok(Links {
            links,
            patient,
            committed: Cell::new(false),
            generation: 0,
            next_id: Cell::new(1),
            queued: RefCell::new(Vec::new()),
            strays: Cell::new(0),
            refused_posts: Cell::new(0),
            exchanges: Cell::new(0),
            waited_ns: Cell::new(0),
            waits: Cell::new(0),
            scratch: RefCell::new(scratch.into_boxed_slice()),
        })
    }

    /// The link to server `server`.
    fn link(&self, server: ServerId) -> Option<&Link> {
        self.links.get(usize::from(server)).and_then(Option::as_ref)
    }

    /// Puts `link` at server id `server` (a server that joined).
    fn insert(&mut self, server: ServerId, link: Link) -> Result<(), Errno> {
        let at = usize::from(server);
        if self.links.len() <= at {
            let more = at + 1 - self.links.len();
            self.links.try_reserve(more).map_err(|_| Errno::ENOMEM)?;
            self.links.resize_with(at + 1, || None);
        }
        self.links[at] = Some(link);
        Ok(())
    }

    /// Queues the invalidation in `m`; a message that does not decode counts as a stray.
    fn take_invalidation(&self, m: &Message) {
        match wire::decode_invalidation(m) {
            Ok(i) => self.queued.borrow_mut().push(i),
            Err(_) => self.strays.set(self.strays.get() + 1),
        }
    }
}

impl Transport for Links {
    fn call(&self, server: ServerId, req: Request) -> impl Future<Output = Reply> {
        Call {
            links: self,
            state: self.send(server, &req),
        }
    }

    fn post(&self, server: ServerId, req: Request) {
        Links::post(self, server, &req);
    }

    fn invalidations(&self, out: &mut Vec<Invalidation>) {
        for link in self.links.iter().flatten() {
            while let Ok(Some(m)) = link.conn.try_reply() {
                self.take_unawaited(link, &m);
            }
        }
        out.append(&mut self.queued.borrow_mut());
    }
}

/// The buffer cache: kernel frames, block `b` in `frames[b]`.
pub struct Arena {
    /// The frames, one per block.
    frames: Vec<SharedFrame>,
    /// Accesses to blocks past the arena (a server's error): read as zeros, written nowhere.
    bad: AtomicU64,
}

impl Arena {
    /// An arena of `blocks` zeroed frames on the calling core's node.
    fn new(blocks: usize) -> Result<Arena, Errno> {
        let mut frames = Vec::new();
        frames
            .try_reserve_exact(blocks)
            .map_err(|_| Errno::ENOMEM)?;
        for _ in 0..blocks {
            frames.push(SharedFrame::new()?);
        }
        Ok(Arena {
            frames,
            bad: AtomicU64::new(0),
        })
    }
}

/// What the kernel knows of the file servers it granted a buffer cache to, kept after
/// `umount` while they live (they hold file data there, and a server takes the cache of its
/// first hello only) and changed by a resize (`resize`).
struct Servers {
    /// The members, each with the id its welcome gave (none until a mount met it).
    members: Vec<(Member, Option<ServerId>)>,
    /// The table they answer by (none until a mount asked).
    table: Option<ShardTable>,
    /// The id the next server to join takes: ids are never given twice, since a shared
    /// description's number carries the id of the server that made it.
    next_id: ServerId,
    /// The cache they were granted.
    arena: Arc<Arena>,
}

impl Servers {
    /// Whether `fleet` are exactly these servers.
    fn are(&self, fleet: &[Member]) -> bool {
        self.members.len() == fleet.len()
            && fleet.iter().all(|m| {
                self.members
                    .iter()
                    .any(|(k, _)| (k.pid, k.mailbox) == (m.pid, m.mailbox))
            })
    }
}

/// The servers holding the buffer cache, if any (dropped by [`process_gone`]).
static SERVERS: IrqMutex<Option<Servers>> = IrqMutex::new(None);

/// A named process exited: if it was one of the servers holding the cache, the kernel lets
/// go of it (a new fleet gets a new one; a mount still using it keeps it).
pub fn process_gone(pid: u32) {
    let gone = {
        let mut r = SERVERS.lock();
        match r.as_ref() {
            Some(k) if k.members.iter().any(|(m, _)| m.pid == pid) => r.take(),
            _ => None,
        }
    };
    drop(gone);
}

/// A client's view of the arena.
pub struct CacheView(Arc<Arena>);

impl BufferCache for CacheView {
    fn read(&self, block: u32, offset: usize, buf: &mut [u8]) {
        match self.0.frames.get(block as usize) {
            Some(f) if offset + buf.len() <= BLOCK_SIZE => f.read(offset, buf),
            _ => {
                self.0.bad.fetch_add(1, Ordering::Relaxed);
                buf.fill(0);
            }
        }
    }

    fn write(&self, block: u32, offset: usize, data: &[u8]) {
        match self.0.frames.get(block as usize) {
            Some(f) if offset + data.len() <= BLOCK_SIZE => f.write(offset, data),
            _ => {
                self.0.bad.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
}

/// One core's `lib/hare` client: over the kernel's links, with file data in the arena.
type CoreClient = Client<Links, CacheView>;

/// A mounted Hare: its servers, its buffer cache and one client per core.
pub struct Mount {
    /// The mount point, absolute, as components.
    at: Vec<Vec<u8>>,
    /// The NR-FS directory the mount covers (a symlink in NR-FS that leads into it leads into
    /// Hare: `crate::fs::path::at`).
    covers: Ino,
    /// What `mount -o` chose (the buffer cache's size is the cache's).
    options: Options,
    /// With Hare as the root, its own directories of [`NOT_IN_ROOT`] with their paths: the
    /// kernel's trees cover them, so a symlink into one leads there (`Client::set_covered`).
    shadowed: IrqMutex<Vec<(Ino, Vec<u8>)>>,
    /// The fleet's members, with their server ids (a resize changes them).
    members: IrqMutex<Vec<(ServerId, Member)>>,
    /// The table the servers answer by (a resize changes it).
    table: IrqMutex<ShardTable>,
    /// Resizes and distributions done since the mount: a core client that has seen fewer
    /// catches up.
    generation: AtomicU64,
    /// Resizes done, and the last one's shards moved and nanoseconds its core clients were
    /// held back.
    resizes: IrqMutex<(u64, usize, u64)>,
    /// The ordinary directories the core clients made entries in, with a bit per core that
    /// made some (§6.1.2's trigger, [`Mount::watch_growth`]).
    creating_cores: IrqMutex<BTreeMap<Ino, u64>>,
    /// Directories made distributed by themselves.
    distributions: AtomicU64,
    /// The buffer cache, granted to the servers.
    cache: Arc<Arena>,
    /// The grants of the kernel's clients (pool pages, and the cache once per server).
    budget: Arc<GrantBudget>,
    /// `clients[core]`, made on the core's first call.
    clients: Vec<SleepLock<Option<CoreClient>>>,
    /// Closes of dropped descriptors, by core of their client, not sent yet.
    closing: IrqMutex<Vec<(usize, Fd)>>,
    /// Descriptors open on it (each has a slot reserved in `closing`).
    open: AtomicUsize,
    /// Opens (where close-to-open invalidates) and closes (where it writes back).
    opens: AtomicU64,
    /// Closes sent (where close-to-open writes back).
    closes: AtomicU64,
}

/// The mounted Hare, if any (one mount at a time).
static MOUNTED: IrqMutex<Option<Arc<Mount>>> = IrqMutex::new(None);

/// Whether [`MOUNTED`] holds a mount: every path call looks (`crate::fs::path`), and only
/// while Hare is mounted does it take the lock.
static IS_MOUNTED: AtomicBool = AtomicBool::new(false);

/// Held across a `mount` (and an `umount`), so that two cannot race to the servers.
static MOUNTING: SleepLock<()> = SleepLock::new(());

/// Closes queued in [`Mount::closing`] and not sent yet (a cheap look for [`flush`]).
static QUEUED_CLOSES: AtomicUsize = AtomicUsize::new(0);

/// Whether Hare is mounted (no lock: what every path call asks first).
pub fn is_mounted() -> bool {
    IS_MOUNTED.load(Ordering::Acquire)
}

/// The mounted Hare, if any.
pub fn mounted() -> Option<Arc<Mount>> {
    if !is_mounted() {
        return None;
    }
    MOUNTED.lock().clone()
}

/// The options of `mount -t hare`, comma-separated: `cache=MiB` (the buffer cache),
/// `distribute` (every new directory is distributed, not only those `mkdir` asks for with
/// [`abi::reef::S_DISTRIBUTED`]), and the §5.4 ablations, each switching one technique off:
/// `nodist` (directory distribution), `nobcast` (directory broadcast), `nolookupcache` (the
/// lookup cache), `noaffinity` (creation affinity), `nodirect` (direct access to the buffer
/// cache: data travels in the messages); `exec=local|rr|random`, where `execve` runs the
/// new program ([`ExecPlacement`]); `distribute_at=N`, the entries at which an ordinary
/// directory becomes distributed (§6.1.2, [`Mount::watch_growth`]; 0: never); and
/// `mode=OCTAL`, the root directory's permission bits (as tmpfs's; Hare makes it 0755), set
/// at every mount that gives it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Options {
    /// Blocks of the buffer cache.
    cache_blocks: usize,
    /// `mode=`.
    root_mode: Option<u32>,
    /// `distribute`.
    distribute_all: bool,
    /// What the ablation options leave on.
    techniques: Techniques,
    /// `exec=`.
    exec: ExecPlacement,
    /// `distribute_at=`: entries past which an ordinary directory becomes distributed
    /// (0: never).
    distribute_at: u32,
    /// `root`: mounted over `/`, with NR-FS's files copied in first.
    root: bool,
}

/// Where `execve` runs the new program while Hare is mounted (Hare §3.6's scheduling policy;
/// `exec::place` carries it out).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExecPlacement {
    /// `exec=local` (the default): on the calling core.
    Local,
    /// `exec=rr`: on the cores a program may run on, in turn ([`crate::proc::Process::exec_turn`],
    /// handed from parent to child).
    RoundRobin,
    /// `exec=random`: on one of them chosen at random.
    Random,
}

impl Options {
    /// Parses `options`: `EINVAL` for an unknown option or a bad value.
    fn parse(options: &[u8]) -> Result<Self, Errno> {
        let mut mib = CACHE_MIB_DEFAULT;
        let mut o = Options {
            cache_blocks: 0,
            root_mode: None,
            distribute_all: false,
            techniques: Techniques::default(),
            exec: ExecPlacement::Local,
            distribute_at: DISTRIBUTE_AT_DEFAULT,
            root: false,
        };
        for opt in options.split(|&b| b == b',').filter(|o| !o.is_empty()) {
            let t = &mut o.techniques;
            match opt {
                b"distribute" => o.distribute_all = true,
                b"nodist" => t.distribution = false,
                b"nobcast" => t.broadcast = false,
                b"nolookupcache" => t.lookup_cache = false,
                b"noaffinity" => t.affinity = false,
                b"nodirect" => t.direct = false,
                b"root" => o.root = true,
                b"exec=local" => o.exec = ExecPlacement::Local,
                b"exec=rr" => o.exec = ExecPlacement::RoundRobin,
                b"exec=random" => o.exec = ExecPlacement::Random,
                _ if opt.starts_with(b"mode=") => {
                    let digits = &opt[5..];
                    if digits.is_empty()
                        || digits.len() > 5
                        || !digits.iter().all(|d| (b'0'..=b'7').contains(d))
                    {
                        return Err(Errno::EINVAL);
                    }
                    let mode = digits.iter().fold(0, |m, d| m * 8 + u32::from(d - b'0'));
                    if mode > 0o7777 {
                        return Err(Errno::EINVAL);
                    }
                    o.root_mode = Some(mode);
                }
                _ if opt.starts_with(b"distribute_at=") => {
                    o.distribute_at = core::str::from_utf8(&opt[14..])
                        .ok()
                        .and_then(|v| v.parse().ok())
                        .filter(|&n| n <= 1 << 20)
                        .ok_or(Errno::EINVAL)?;
                }
                _ => {
                    let value = opt.strip_prefix(b"cache=").ok_or(Errno::EINVAL)?;
                    mib = core::str::from_utf8(value)
                        .ok()
                        .and_then(|v| v.parse().ok())
                        .filter(|&m| (1..=CACHE_MIB_MAX).contains(&m))
                        .ok_or(Errno::EINVAL)?;
                }
            }
        }
        o.cache_blocks = (mib << 20) as usize / BLOCK_SIZE;
        Ok(o)
    }

    /// The options as `/proc/mounts` shows them after `cache=`.
    fn flags(&self) -> String {
        let t = &self.techniques;
        let mode = self
            .root_mode
            .map(|m| alloc::format!(",mode={m:o}"))
            .unwrap_or_default();
        let at = Some(self.distribute_at)
            .filter(|&n| n != DISTRIBUTE_AT_DEFAULT)
            .map(|n| alloc::format!(",distribute_at={n}"))
            .unwrap_or_default();
        let flags: String = [
            (self.root, ",root"),
            (self.distribute_all, ",distribute"),
            (!t.distribution, ",nodist"),
            (!t.broadcast, ",nobcast"),
            (!t.lookup_cache, ",nolookupcache"),
            (!t.affinity, ",noaffinity"),
            (!t.direct, ",nodirect"),
        ]
        .iter()
        .filter(|(on, _)| *on)
        .map(|(_, s)| *s)
        .chain(match self.exec {
            ExecPlacement::Local => None,
            ExecPlacement::RoundRobin => Some(",exec=rr"),
            ExecPlacement::Random => Some(",exec=random"),
        })
        .collect();
        mode + &flags + &at
    }
}

/// Where `execve` runs the new program: the mounted Hare's `exec=` option, `Local` when Hare
/// is not mounted.
pub fn exec_placement() -> ExecPlacement {
    mounted().map_or(ExecPlacement::Local, |m| m.options.exec)
}

/// `mount("hare", at, "hare", 0, options)`: connects to the fleet's servers and makes the
/// buffer cache, or takes again the one the same servers were granted by an earlier mount
/// (`cache=` has no effect then: `/proc/mounts` shows the size). `EBUSY` if Hare is mounted
/// already, `ENODEV` if no file server runs (start them with `fleet start hare ...`), `EIO`
/// if the fleet's members disagree about its size, `EINVAL` for a bad option, `ENOMEM`.
pub fn mount(at: Vec<Vec<u8>>, options: &[u8]) -> Result<(), Errno> {
    let options = Options::parse(options)?;
    match (at.is_empty(), options.root) {
        (true, false) => return Err(Errno::EBUSY),
        (false, true) => return Err(Errno::EINVAL),
        _ => {}
    }
    // One mount at a time: the first hello that reaches a server fixes its cache.
    let _one = MOUNTING.lock();
    if MOUNTED.lock().is_some() {
        return Err(Errno::EBUSY);
    }
    let fleet = names::members(Name::new(FLEET)?)?;
    if fleet.is_empty() {
        crate::kprintln!("reef: hare: no file server: start them with `fleet start hare ...`");
        return Err(Errno::ENODEV);
    }
    // The servers keep the cache of the first mount for good (file data lives there): a
    // mount of the same servers takes it again and grants nothing.
    let known = SERVERS
        .lock()
        .as_ref()
        .filter(|k| k.are(&fleet))
        .map(|k| k.arena.clone());
    let (cache, grant) = match known {
        Some(arena) => (arena, false),
        None => (Arc::new(Arena::new(options.cache_blocks)?), true),
    };
    if grant {
        // Kept from the first grant on, so that a mount that fails half-way and is tried
        // again gives the servers that took this cache no other.
        let mut members = Vec::new();
        members
            .try_reserve_exact(fleet.len())
            .map_err(|_| Errno::ENOMEM)?;
        members.extend(fleet.iter().map(|m| (*m, None)));
        *SERVERS.lock() = Some(Servers {
            members,
            table: None,
            next_id: 0,
            arena: cache.clone(),
        });
    }
    let budget = Arc::new(GrantBudget::default());
    let core = kcb::current().core_id;
    // The first client meets every member, learns its id and grants it the cache.
    let mut links = Links::new(Vec::new(), false)?;
    let mut members: Vec<(ServerId, Member)> = Vec::new();
    members
        .try_reserve_exact(fleet.len())
        .map_err(|_| Errno::ENOMEM)?;
    for m in &fleet {
        let grant = grant.then_some(&cache);
        let (link, w) =
            connect(m, (client_id(core), core), grant, None, &budget).inspect_err(|e| {
                crate::kprintln!(
                    "reef: hare: file server pid {} on core {} refused the mount ({e:?}): a \
                 server grown into a fleet never mounted, or not a hared?",
                    m.pid,
                    m.core
                );
            })?;
        if links.link(w.server).is_some() {
            return Err(Errno::EIO);
        }
        links.insert(w.server, link)?;
        members.push((w.server, *m));
    }
    // Where the shards are: as the servers started, or as the last resize left them.
    let first = members[0].0;
    let table = match links.exchange(first, &Request::GetTable) {
        Reply::Table(t) => *t,
        Reply::Err(e) => return Err(e),
        _ => return Err(Errno::EIO),
    };
    let mut ids: Vec<ServerId> = members.iter().map(|(id, _)| *id).collect();
    ids.sort_unstable();
    if table.servers() != ids {
        crate::kprintln!(
            "reef: hare: the file servers are {ids:?}, their table names {:?}",
            table.servers()
        );
        return Err(Errno::EIO);
    }
    if let Some(k) = SERVERS.lock().as_mut().filter(|k| k.are(&fleet)) {
        for (m, id) in &mut k.members {
            *id = members
                .iter()
                .find(|(_, x)| x.pid == m.pid)
                .map(|(i, _)| *i);
        }
        k.next_id = k.next_id.max(ids[ids.len() - 1] + 1);
        k.table = Some(table.clone());
    }
    let mut clients = Vec::new();
    clients
        .try_reserve_exact(kcb::MAX_CORES)
        .map_err(|_| Errno::ENOMEM)?;
    clients.extend((0..kcb::MAX_CORES).map(|_| SleepLock::new(None)));
    let mut point = b"/".to_vec();
    point.extend_from_slice(&at.join(&b'/'));
    let covers = crate::fs::with_client(|c| c.resolve(nrfs::ROOT_INO, &point, true))?;
    let mount = Arc::new(Mount {
        at,
        covers,
        options,
        shadowed: IrqMutex::new(Vec::new()),
        members: IrqMutex::new(members),
        table: IrqMutex::new(table),
        generation: AtomicU64::new(0),
        resizes: IrqMutex::new((0, 0, 0)),
        creating_cores: IrqMutex::new(BTreeMap::new()),
        distributions: AtomicU64::new(0),
        cache,
        budget,
        clients,
        closing: IrqMutex::new(Vec::new()),
        open: AtomicUsize::new(0),
        opens: AtomicU64::new(0),
        closes: AtomicU64::new(0),
    });
    *mount.clients[core].lock() = Some(mount.client_over(core, links)?);
    if let Some(mode) = options.root_mode {
        mount.here(|c| run_ready(c.chmod(ROOT_INO, b"/", mode, now())))?;
    }
    if options.root {
        let since = crate::time::now_ns();
        let (files, bytes) = mount.copy_root(core)?;
        crate::kprintln!(
            "reef: hare: the root: {files} files and directories ({} KiB) copied from NR-FS \
             in {} ms",
            bytes / 1024,
            crate::time::now_ns().saturating_sub(since) / 1_000_000
        );
        mount.shadow_kernel_trees(core)?;
    }
    crate::fs::cover(covers)?;
    // `MOUNTING` is held: nothing was mounted meanwhile.
    *MOUNTED.lock() = Some(mount);
    IS_MOUNTED.store(true, Ordering::Release);
    Ok(())
}

/// `umount(at)`: `EINVAL` if Hare is not mounted there, `EBUSY` while a descriptor (or a
/// working directory) is open in it. The servers keep the files; a new mount finds them.
pub fn umount(at: &[Vec<u8>]) -> Result<(), Errno> {
    flush();
    let _one = MOUNTING.lock();
    // The closes posted are handled before the connections close (those to a server that
    // is gone are lost with it: no reason to refuse the unmount).
    if let Some(m) = mounted() {
        for c in &m.clients {
            if let Some(c) = c.lock().as_ref() {
                if let Err(Errno::EINTR) = c.transport().settle() {
                    return Err(Errno::EINTR);
                }
            }
        }
    }
    let gone = {
        let mut slot = MOUNTED.lock();
        match slot.as_ref() {
            Some(m) if m.at == at => {
                if m.open.load(Ordering::Acquire) > 0 {
                    return Err(Errno::EBUSY);
                }
                IS_MOUNTED.store(false, Ordering::Release);
                crate::fs::uncover(m.covers);
                slot.take()
            }
            _ => return Err(Errno::EINVAL),
        }
    };
    drop(gone);
    Ok(())
}

/// Polls `link`'s reply ring for up to [`REPLY_POLL_NS`]: whether a reply (or the server's
/// close) came.
fn poll_reply(link: &Link) -> bool {
    let until = crate::time::now_ns() + REPLY_POLL_NS;
    while crate::time::now_ns() < until {
        if link.conn.reply_waiting() {
            return true;
        }
        crate::arch::cpu::pause();
    }
    false
}

/// Connects to `member` as client `client` on core `core`: a connection, a pool page, the
/// cache if `cache` (the first client; with `join`, the id of a server that joins the
/// fleet), and the hello. What the server said about itself: `ECONNREFUSED` if its mailbox
/// is gone, the errno it refused the hello with, `EIO` for a reply that is not a hello.
fn connect(
    member: &Member,
    (client, core): (u32, usize),
    cache: Option<&Arc<Arena>>,
    join: Option<ServerId>,
    budget: &Arc<GrantBudget>,
) -> Result<(Link, wire::Welcome), Errno> {
    let mailbox = mailbox::find(member.pid, member.mailbox).ok_or(Errno::ECONNREFUSED)?;
    let conn = mailbox.new_connection(0)?;
    mailbox.offer(conn.clone())?;
    let owned = kcb::get(member.core as usize)
        .is_some_and(|k| k.fleet_owner.load(Ordering::Acquire) == member.pid);
    let link = Link {
        conn,
        pool: SharedFrame::new()?,
        outstanding: Cell::new(None),
        early: RefCell::new(Vec::new()),
        owed: Cell::new(0),
        polls: owned && member.core as usize != core,
    };
    let pool = link.conn.grant_frames(&[link.pool.phys()], budget)?;
    let cache = match cache {
        Some(c) => {
            // The cache is the kernel's, made at mount: a budget of its own per server, so
            // that granting it to several servers is not counted as pinning more (a budget
            // bounds what a process pins; `CACHE_MIB_MAX` bounds this).
            let frames: Vec<u64> = c.frames.iter().map(SharedFrame::phys).collect();
            let own = Arc::new(GrantBudget::default());
            (link.conn.grant_frames(&frames, &own)?, frames.len() as u64)
        }
        None => (0, 0),
    };
    link.conn
        .send_request(&wire::hello(client, pool, 1, cache, join))?;
    let me = sched::current_thread();
    let welcome = loop {
        match link.conn.try_reply()? {
            Some(m) if m.tag == wire::HELLO => break m,
            Some(_) => return Err(Errno::EIO),
            None => link.conn.wait_reply(&me)?,
        }
    };
    match wire::decode_welcome(&welcome) {
        Ok(Ok(w)) => Ok((link, w)),
        Ok(Err(e)) => Err(e),
        Err(_) => Err(Errno::EIO),
    }
}

impl Mount {
    /// Core `core`'s client over `links`, answering by the mount's table.
    fn client_over(&self, core: usize, links: Links) -> Result<CoreClient, Errno> {
        let table = self.table.lock().clone();
        let policy = self.policy(core);
        let mut c = Client::new(table, links, CacheView(self.cache.clone()), policy, false);
        c.set_mount_point(&self.at_path());
        c.set_covered(self.shadowed.lock().clone());
        Ok(c)
    }

    /// With Hare as the root: notes which of Hare's own directories the kernel's `/dev`,
    /// `/proc` and `/sys` cover (the copy of the root made them, empty), and tells core
    /// `core`'s client, the only one made yet.
    fn shadow_kernel_trees(&self, core: usize) -> Result<(), Errno> {
        let mut shadowed = Vec::new();
        shadowed
            .try_reserve_exact(NOT_IN_ROOT.len())
            .map_err(|_| Errno::ENOMEM)?;
        self.with(core, |c| {
            for name in NOT_IN_ROOT {
                let mut at = b"/".to_vec();
                at.extend_from_slice(name);
                match run_ready(c.stat(ROOT_INO, &at, false)) {
                    Ok(st) if st.kind == Kind::Dir => shadowed.push((st.ino, at)),
                    Ok(_) | Err(Errno::ENOENT) => {}
                    Err(e) => return Err(e),
                }
            }
            c.set_covered(shadowed.clone());
            Ok(())
        })?;
        *self.shadowed.lock() = shadowed;
        Ok(())
    }

    /// Core `core`'s policy: its nearby server is one on the core, else on its node, else
    /// chosen by core number (creation affinity, §3.7.5).
    fn policy(&self, core: usize) -> Policy {
        let members = self.members.lock();
        let node = kcb::get(core).map_or(0, |k| k.node_id) as u32;
        let id =
            |pick: &dyn Fn(&Member) -> bool| members.iter().find(|(_, m)| pick(m)).map(|(i, _)| *i);
        let local = id(&|m| m.core == core as u32)
            .or_else(|| id(&|m| m.node == node))
            .unwrap_or(members[core % members.len()].0);
        let mut near: BTreeSet<ServerId> = members
            .iter()
            .filter(|(_, m)| m.node == node)
            .map(|(i, _)| *i)
            .collect();
        near.insert(local);
        Policy {
            local,
            near,
            distribute_dirs: self.options.distribute_all,
            cache_entries: 4096,
            techniques: self.options.techniques,
        }
    }

    /// Core `core`'s client, locked, made if it is the core's first call; the closes queued
    /// for it are sent first. The operation that takes it starts uncommitted
    /// ([`Links::committed`]): a fatal signal ends its waits until it sends a change.
    fn client(&self, core: usize) -> Result<SleepLockGuard<'_, Option<CoreClient>>, Errno> {
        let mut c = self.clients.get(core).ok_or(Errno::EINVAL)?.lock();
        if c.is_none() {
            let mut links = Links::new(Vec::new(), false)?;
            let members = self.members.lock().clone();
            for (id, m) in &members {
                let (link, w) = connect(m, (client_id(core), core), None, None, &self.budget)?;
                if w.server != *id {
                    return Err(Errno::EIO);
                }
                links.insert(*id, link)?;
            }
            *c = Some(self.client_over(core, links)?);
        }
        if let Some(client) = c.as_mut() {
            self.catch_up(core, client)?;
            // One at a time, so that taking them allocates nothing.
            loop {
                let fd = {
                    let mut q = self.closing.lock();
                    let at = q.iter().position(|&(k, _)| k == core);
                    at.map(|i| q.swap_remove(i).1)
                };
                let Some(fd) = fd else { break };
                QUEUED_CLOSES.fetch_sub(1, Ordering::AcqRel);
                self.closes.fetch_add(1, Ordering::Relaxed);
                // A server gone: the close is lost with the server's count.
                let _ = run_ready(client.close(fd));
            }
            client.transport().committed.set(false);
        }
        Ok(c)
    }

    /// Brings core `core`'s client up to the resizes done since it last looked
    /// (`resize`): connections to servers that joined, none to those that left, the new
    /// table and placement, and an empty lookup cache. Nothing to do, and cheap, if there
    /// were none; an error (a server that joined cannot be reached) leaves it to try again
    /// at the next call.
    fn catch_up(&self, core: usize, client: &mut CoreClient) -> Result<(), Errno> {
        let generation = self.generation.load(Ordering::Acquire);
        if client.transport().generation == generation {
            return Ok(());
        }
        let members = self.members.lock().clone();
        let t = client.transport_mut();
        for (id, slot) in t.links.iter_mut().enumerate() {
            if slot.is_some() && !members.iter().any(|(i, _)| usize::from(*i) == id) {
                *slot = None;
            }
        }
        for (id, m) in &members {
            if t.link(*id).is_none() {
                let (link, w) = connect(m, (client_id(core), core), None, None, &self.budget)?;
                if w.server != *id {
                    return Err(Errno::EIO);
                }
                t.insert(*id, link)?;
            }
        }
        t.generation = generation;
        client.forget_cache();
        client.set_table(self.table.lock().clone());
        client.set_policy(self.policy(core));
        Ok(())
    }

    /// Runs `f` on core `core`'s client; then, if its creates made an ordinary directory
    /// grow due to become distributed, distributes it (§6.1.2).
    fn with<R>(
        &self,
        core: usize,
        f: impl FnOnce(&mut CoreClient) -> Result<R, Errno>,
    ) -> Result<R, Errno> {
        let (r, due) = {
            let mut c = self.client(core)?;
            let client = c.as_mut().ok_or(Errno::EIO)?;
            let r = f(client);
            let made = client.take_creates();
            (r, self.watch_growth(core, &made))
        };
        if let Some(dir) = due {
            match resize::distribute(dir) {
                Ok(()) | Err(Errno::ENOENT) => {}
                Err(e) => crate::kprintln!("reef: hare: directory {dir} stays ordinary: {e:?}"),
            }
        }
        r
    }

    /// Watches the ordinary directories core `core` made entries in (`made`: each with its
    /// entries just after): one that holds `distribute_at=` entries, or a quarter of that
    /// with entries made from two cores or more, is due to become distributed.
    fn watch_growth(&self, core: usize, made: &[(Ino, u32)]) -> Option<Ino> {
        let at = self.options.distribute_at;
        if made.is_empty() || at == 0 {
            return None;
        }
        let mut cores_of = self.creating_cores.lock();
        let mut due = None;
        for &(dir, entries) in made {
            if !cores_of.contains_key(&dir) && cores_of.len() >= COUNTED_DIRS {
                continue;
            }
            let cores = cores_of.entry(dir).or_insert(0);
            *cores |= 1 << (core % 64);
            if entries >= at || (entries >= at.div_ceil(4) && cores.count_ones() >= 2) {
                cores_of.remove(&dir);
                due = Some(dir);
            }
        }
        due
    }

    /// Runs `f` on the calling core's client.
    fn here<R>(&self, f: impl FnOnce(&mut CoreClient) -> Result<R, Errno>) -> Result<R, Errno> {
        self.with(kcb::current().core_id, f)
    }

    /// Copies NR-FS's tree into this mount over `/` (`root`, [`copy_tree`]) through core
    /// `core`'s client, the files going to the servers in turn (a server's blocks are its
    /// own: one server would fill with the whole initramfs). Returns the files and
    /// directories copied and the bytes of data.
    fn copy_root(&self, core: usize) -> Result<(usize, u64), Errno> {
        let mut guard = self.client(core)?;
        let c = guard.as_mut().ok_or(Errno::EIO)?;
        let servers = self.table.lock().servers();
        let placed = self.policy(core);
        let copied = copy_tree(c, &servers, &placed);
        c.set_policy(placed);
        copied
    }

    /// Blocks of its buffer cache.
    pub fn cache_blocks(&self) -> u64 {
        self.cache.frames.len() as u64
    }

    /// The options for `/proc/mounts`: `cache=NM` and those that differ from the defaults.
    pub fn options_text(&self) -> String {
        alloc::format!(
            "cache={}M{}",
            self.cache_blocks() / 256,
            self.options.flags()
        )
    }

    /// The mount point as `/proc/mounts` shows it (`/` for the root).
    pub fn point(&self) -> String {
        match self.at_path() {
            p if p.is_empty() => String::from("/"),
            p => String::from_utf8_lossy(&p).into_owned(),
        }
    }

    /// The mount point as a path (empty for the root).
    pub fn at_path(&self) -> Vec<u8> {
        let mut p = Vec::new();
        for c in &self.at {
            p.push(b'/');
            p.extend_from_slice(c);
        }
        p
    }
}

/// Copies NR-FS's tree into Hare through client `c`: every directory (those of
/// [`NOT_IN_ROOT`] empty), regular file with its data and symlink, with its mode and owner
/// (times are the copy's), each file's inode on the next of `servers` in turn (`policy`
/// otherwise). Returns the files and directories copied and the bytes of data.
fn copy_tree(
    c: &mut CoreClient,
    servers: &[ServerId],
    policy: &Policy,
) -> Result<(usize, u64), Errno> {
    let mut buf = Vec::new();
    buf.try_reserve_exact(1 << 16).map_err(|_| Errno::ENOMEM)?;
    buf.resize(1 << 16, 0);
    let (mut files, mut bytes) = (0, 0u64);
    let mut dirs: Vec<(nrfs::Ino, Vec<u8>)> = alloc::vec![(nrfs::ROOT_INO, Vec::new())];
    while let Some((dir, path)) = dirs.pop() {
        let mut cookie = 0;
        loop {
            let entries = super::with_client(|f| f.read_dir(dir, cookie, 64))?;
            let Some(last) = entries.last() else { break };
            cookie = last.next_cookie;
            for e in entries.iter().filter(|e| e.name != b"." && e.name != b"..") {
                let st = super::with_client(|f| f.stat(e.ino))?;
                let attrs = Attrs::new(st.mode & 0o7777, st.uid, st.gid);
                let mut p = path.clone();
                p.push(b'/');
                p.extend_from_slice(&e.name);
                match e.kind {
                    Kind::Dir => {
                        run_ready(c.mkdir(ROOT_INO, &p, attrs, false, now()))?;
                        if !(path.is_empty() && NOT_IN_ROOT.contains(&&e.name[..])) {
                            dirs.try_reserve(1).map_err(|_| Errno::ENOMEM)?;
                            dirs.push((e.ino, p));
                        }
                    }
                    Kind::File => {
                        c.set_policy(Policy {
                            local: servers[files % servers.len()],
                            near: BTreeSet::new(),
                            ..policy.clone()
                        });
                        let create = OpenFlags {
                            create: true,
                            exclusive: true,
                            ..OpenFlags::default()
                        };
                        let fd = run_ready(c.open(ROOT_INO, &p, create, attrs, now()))?;
                        let mut off = 0;
                        let copied = loop {
                            let n = match super::with_client(|f| f.read(e.ino, off, &mut buf)) {
                                Ok(0) => break Ok(()),
                                Ok(n) => n,
                                Err(e) => break Err(e),
                            };
                            match run_ready(c.write(fd, &buf[..n], now())) {
                                Ok(w) if w == n => {}
                                Ok(_) => break Err(Errno::ENOSPC),
                                Err(e) => break Err(e),
                            }
                            off += n as u64;
                        };
                        run_ready(c.close(fd))?;
                        copied?;
                        bytes += off;
                    }
                    Kind::Symlink => {
                        let target = super::with_client(|f| f.readlink(e.ino))?;
                        run_ready(c.symlink(&target, ROOT_INO, &p, attrs, now()))?;
                    }
                    // Devices and FIFOs live in /dev, which Hare leaves to NR-FS.
                    _ => continue,
                }
                files += 1;
            }
        }
    }
    Ok((files, bytes))
}

/// Lets go of `files` (descriptions a thread took out of its table or working directory:
/// `close`, `dup2`, `dup3`, `execve`, `chdir`) and, if one was in Hare, sends the closes
/// queued ([`flush`]).
pub fn release(files: impl IntoIterator<Item = Arc<OpenFile>>) {
    let mut hare = false;
    for f in files {
        hare |= f.is_hare();
    }
    if hare {
        flush();
    }
}

/// Sends the closes dropped descriptors queued (see the module's notes). Called by a thread
/// that let go of a Hare descriptor ([`release`], and `execve` of a program in Hare), so
/// never by a server's thread, which would wait for itself. Closes of a process that exits
/// are sent by the next call on that core's client (or at `umount`). Cheap when there are
/// none.
pub fn flush() {
    if QUEUED_CLOSES.load(Ordering::Acquire) == 0 {
        return;
    }
    let Some(m) = mounted() else { return };
    // Each core with closes queued, in order (no set built: usually it is one core).
    let mut from = 0;
    loop {
        let next = m
            .closing
            .lock()
            .iter()
            .map(|&(k, _)| k)
            .filter(|&k| k >= from)
            .min();
        let Some(core) = next else { break };
        drop(m.client(core));
        from = core + 1;
    }
}

/// The time now, for Hare's timestamps ([`super::now`]).
fn now() -> ::hare::Timespec {
    super::now()
}

/// A file or directory of Hare, open: the client that opened it and its descriptor there.
pub struct HareNode {
    /// The mount it is open in.
    mount: Arc<Mount>,
    /// The core whose client opened it and keeps its descriptor.
    core: usize,
    /// Its descriptor in that client.
    fd: Fd,
    /// Its inode number in Hare.
    ino: Ino,
    /// Its kind (regular file, directory, ...).
    kind: Kind,
    /// A directory's listing, taken when `getdents64` starts at position 0.
    listing: IrqMutex<Option<Arc<Listing>>>,
}

impl Drop for HareNode {
    fn drop(&mut self) {
        // Room was reserved at open: this push does not allocate.
        self.mount.closing.lock().push((self.core, self.fd));
        QUEUED_CLOSES.fetch_add(1, Ordering::AcqRel);
        self.mount.open.fetch_sub(1, Ordering::AcqRel);
    }
}

impl HareNode {
    /// Its inode number in Hare.
    pub fn ino(&self) -> Ino {
        self.ino
    }

    /// Whether it is a directory.
    pub fn is_dir(&self) -> bool {
        self.kind == Kind::Dir
    }

    /// Runs `f` on the client that opened it, with its descriptor there.
    fn with<R>(&self, f: impl FnOnce(&mut CoreClient, Fd) -> Result<R, Errno>) -> Result<R, Errno> {
        self.mount.with(self.core, |c| f(c, self.fd))
    }

    /// `read` at the description's offset.
    pub fn read(&self, buf: &mut [u8]) -> Result<usize, Errno> {
        self.with(|c, fd| run_ready(c.read(fd, buf)))
    }

    /// `pread`.
    pub fn pread(&self, buf: &mut [u8], off: u64) -> Result<usize, Errno> {
        self.with(|c, fd| run_ready(c.pread(fd, buf, off)))
    }

    /// `write` at the description's offset, or at the end if `append` (the description's
    /// `O_APPEND` now: `fcntl(F_SETFL)` changes it).
    pub fn write(&self, data: &[u8], append: bool) -> Result<usize, Errno> {
        self.with(|c, fd| {
            c.set_append(fd, append)?;
            run_ready(c.write(fd, data, now()))
        })
    }

    /// `pwrite`.
    pub fn pwrite(&self, data: &[u8], off: u64) -> Result<usize, Errno> {
        self.with(|c, fd| run_ready(c.pwrite(fd, data, off, now())))
    }

    /// The directory's absolute path as it is now (`getcwd`, and `..` from it): the mount
    /// point, then its path in Hare, which follows renames of its parents.
    pub fn path(&self) -> Result<Vec<u8>, Errno> {
        let inside = self.mount.here(|c| run_ready(c.dir_path(self.ino)))?;
        let mut path = self.mount.at_path();
        if inside != b"/" || path.is_empty() {
            path.extend_from_slice(&inside);
        }
        Ok(path)
    }

    /// `fchmod`, `fchown`, `futimens`.
    pub fn set(&self, attr: SetAttr) -> Result<(), Errno> {
        self.with(|c, fd| run_ready(c.fset(fd, attr, now())))
    }

    /// `lseek` of a file (a directory's position is the kernel's: see `crate::fd`).
    pub fn seek(&self, off: i64, whence: u32) -> Result<u64, Errno> {
        self.with(|c, fd| run_ready(c.lseek(fd, off, whence)))
    }

    /// `fstat`.
    pub fn stat(&self) -> Result<KStat, Errno> {
        let s = self.with(|c, fd| run_ready(c.fstat(fd)))?;
        Ok(stat_of(&s))
    }

    /// `ftruncate`.
    pub fn truncate(&self, size: u64) -> Result<(), Errno> {
        self.with(|c, fd| run_ready(c.ftruncate(fd, size, now())))
    }

    /// The directory's entries from position `pos` on: the listing taken when a reading
    /// started at 0, shared, not copied (a `getdents64` call uses as many as fit, and a copy of
    /// the rest made every call cost a big directory's listing time its square).
    pub fn entries(&self, pos: u64) -> Result<Entries, Errno> {
        if !self.is_dir() {
            return Err(Errno::ENOTDIR);
        }
        let cached = self.listing.lock().clone();
        let list = match cached {
            Some(l) if pos > 0 => l,
            _ => {
                let l = self.with(|c, fd| run_ready(c.read_dir(fd)))?;
                *self.listing.lock() = Some(l.clone());
                l
            }
        };
        Ok(Entries {
            dir: self.ino,
            from: pos,
            list,
        })
    }
}

/// A directory's entries from a position on ([`HareNode::entries`]): 0 is `.`, 1 is `..`,
/// then the listing.
pub struct Entries {
    /// The directory's inode.
    dir: Ino,
    /// The first position.
    from: u64,
    /// The listing taken when the reading started at position 0.
    list: Arc<Listing>,
}

impl Entries {
    /// The entries from the first position on, as (inode, kind, name). `..` of every directory
    /// is given as the directory itself (Hare's `Stat` does not name the parent).
    pub fn iter(&self) -> impl Iterator<Item = (Ino, Kind, &[u8])> + '_ {
        let from = usize::try_from(self.from).unwrap_or(usize::MAX);
        let dots = [&b"."[..], b".."].map(|name| (self.dir, Kind::Dir, name));
        // The listing sliced, not skipped through: a big directory read a buffer at a time
        // would otherwise cost its size squared.
        let listed = self.list.iter_from(from.saturating_sub(2));
        let listed = listed.map(|(name, e)| (e.ino, e.kind, name));
        dots.into_iter().skip(from).chain(listed)
    }
}

/// A Hare `Stat` as `stat` reports it.
fn stat_of(s: &::hare::Stat) -> KStat {
    let mut k = KStat::from_nrfs(s);
    k.dev = DEV_HARE;
    k
}

/// Where a path in Hare lies: the mount, the directory a walk starts from, the rest.
pub struct HarePath {
    /// The mount.
    pub mount: Arc<Mount>,
    /// The directory the walk starts from.
    pub start: Ino,
    /// The path from there (`.` for the start itself).
    pub path: Vec<u8>,
}

/// The Hare place of `normal`, an absolute path with `.`, `..` and repeated slashes removed
/// ([`crate::fs::path::join`]), if it lies in the mount; its bytes become the place's path.
pub fn place_of(mut normal: Vec<u8>) -> Option<HarePath> {
    let mount = mounted()?;
    // `normal[..end]` is the mount point: each of its components, after a slash.
    let mut end = 0;
    for c in &mount.at {
        let next = end + 1 + c.len();
        if normal.get(end + 1..next) != Some(&c[..]) || normal.get(next).is_some_and(|&b| b != b'/')
        {
            return None;
        }
        end = next;
    }
    let rest = normal.get(end + 1..).unwrap_or_default();
    let top = rest.split(|&b| b == b'/').next();
    // Over `/`: the kernel's trees, and the trusted fleet manager, whose capability only
    // NR-FS's copy carries (nothing may rewrite it), are not Hare's.
    if mount.at.is_empty()
        && (top.is_some_and(|c| NOT_IN_ROOT.contains(&c)) || super::is_trusted_path(&normal))
    {
        return None;
    }
    // The mount point itself is Hare's root as `/` (not `.`): `rmdir` and `rename` of it
    // then answer `EBUSY`, as for a mount point on Linux.
    let path = if rest.is_empty() {
        b"/".to_vec()
    } else {
        normal.drain(..=end);
        normal
    };
    Some(HarePath {
        mount,
        start: ROOT_INO,
        path,
    })
}

/// A path relative to an open Hare directory.
pub fn relative(dir: &HareNode, path: &[u8]) -> HarePath {
    HarePath {
        mount: dir.mount.clone(),
        start: dir.ino,
        path: path.to_vec(),
    }
}

/// `open` in Hare: flags as Linux's, the mode and umask of a file it creates, whose owner and
/// group are `uid` and `gid`; `kept` are the flags the description keeps; it shows `shown`.
pub fn open(
    p: &HarePath,
    (flags, mode, umask): (u32, u32, u32),
    (uid, gid): (u32, u32),
    kept: u32,
    shown: Vec<u8>,
) -> Result<Arc<OpenFile>, Errno> {
    use super::flags::{O_CREAT, O_DIRECTORY, O_EXCL, O_NOFOLLOW, O_TRUNC};
    let writing = flags & O_PATH == 0 && flags & O_ACCMODE != O_RDONLY;
    let f = OpenFlags {
        create: flags & O_CREAT != 0,
        exclusive: flags & O_EXCL != 0,
        truncate: flags & O_TRUNC != 0 && writing,
        append: flags & crate::fd::O_APPEND != 0,
        nofollow: flags & O_NOFOLLOW != 0,
        // `opendir` opens with O_DIRECTORY, and lists next.
        list: flags & O_DIRECTORY != 0 && flags & O_PATH == 0,
        read_only: !writing,
    };
    let attrs = Attrs::new(mode & 0o7777 & !umask, uid, gid);
    let core = kcb::current().core_id;
    let m = p.mount.clone();
    // Room for this descriptor's close, reserved before it exists: the queue may have to
    // hold what it holds now and a close from every open descriptor, this one counted first
    // (so that two opens at once each reserve for both).
    let open = m.open.fetch_add(1, Ordering::AcqRel) + 1;
    let reserved = m.closing.lock().try_reserve(open);
    let opened = reserved.map_err(|_| Errno::ENOMEM).and_then(|()| {
        m.with(core, |c| {
            let fd = run_ready(c.open(p.start, &p.path, f, attrs, now()))?;
            Ok((fd, c.inode(fd)?))
        })
    });
    let (fd, (ino, kind)) = opened.inspect_err(|_| {
        m.open.fetch_sub(1, Ordering::AcqRel);
    })?;
    m.opens.fetch_add(1, Ordering::Relaxed);
    let node = HareNode {
        mount: m,
        core,
        fd,
        ino,
        kind,
        listing: IrqMutex::new(None),
    };
    // As NR-FS's open; dropping `node` queues the close.
    match kind {
        Kind::Dir if writing => return Err(Errno::EISDIR),
        Kind::Dir => {}
        _ if flags & O_DIRECTORY != 0 => return Err(Errno::ENOTDIR),
        Kind::Symlink if flags & O_PATH == 0 => return Err(Errno::ELOOP),
        // A FIFO's pipe is the kernel's, as for NR-FS's FIFOs; the end keeps the Hare open.
        Kind::Fifo if flags & O_PATH == 0 => {
            let end = super::fifo::open(super::fifo::FifoFile::Hare(node), flags)?;
            return Ok(OpenFile::new(Node::Fifo(end), kept, shown));
        }
        _ => {}
    }
    Ok(OpenFile::new(Node::Hare(node), kept, shown))
}

/// `stat` of a path.
pub fn stat(p: &HarePath, follow: bool) -> Result<KStat, Errno> {
    stat_at(p, &p.path, follow)
}

/// Where a walk of `p` leads out of Hare (an absolute symlink target outside the mount
/// point), as the absolute path to go on with (`crate::fs::path::at`).
pub fn exit(p: &HarePath, follow: bool, parent_only: bool) -> Result<Option<Vec<u8>>, Errno> {
    p.mount
        .here(|c| run_ready(c.exit(p.start, &p.path, follow, parent_only)))
}

/// `stat` of `path` from the start directory of `p` (a permission check's look at the
/// directories on `p`'s way, `crate::fs::perm`).
pub fn stat_at(p: &HarePath, path: &[u8], follow: bool) -> Result<KStat, Errno> {
    let s = p.mount.here(|c| run_ready(c.stat(p.start, path, follow)))?;
    Ok(stat_of(&s))
}

/// `statfs` of the mounted Hare: the buffer cache's blocks and the servers' free blocks and
/// inodes (every server asked). `EIO` if Hare is not mounted (it was unmounted meanwhile).
pub fn statfs() -> Result<(u64, ::hare::Space), Errno> {
    let m = mounted().ok_or(Errno::EIO)?;
    let space = m.here(|c| run_ready(c.statfs()))?;
    Ok((m.cache_blocks(), space))
}

/// `mkdir`; `distribute` asks for a distributed directory (§3.4's flag).
pub fn mkdir(
    p: &HarePath,
    perm: u32,
    (uid, gid): (u32, u32),
    distribute: bool,
) -> Result<(), Errno> {
    let attrs = Attrs::new(perm, uid, gid);
    p.mount
        .here(|c| run_ready(c.mkdir(p.start, &p.path, attrs, distribute, now())))
}

/// `unlink` (or `rmdir` if `dir`).
pub fn remove(p: &HarePath, dir: bool) -> Result<(), Errno> {
    p.mount.here(|c| {
        if dir {
            run_ready(c.rmdir(p.start, &p.path, now()))
        } else {
            run_ready(c.unlink(p.start, &p.path, now()))
        }
    })
}

/// `renameat2` within the mount.
pub fn rename(from: &HarePath, to: &HarePath, flags: u32) -> Result<(), Errno> {
    from.mount
        .here(|c| run_ready(c.rename(from.start, &from.path, to.start, &to.path, flags, now())))
}

/// `linkat` within the mount (`follow`: `AT_SYMLINK_FOLLOW`).
pub fn link(from: &HarePath, to: &HarePath, follow: bool) -> Result<(), Errno> {
    from.mount.here(|c| {
        let (old, new) = ((from.start, &from.path[..]), (to.start, &to.path[..]));
        run_ready(c.link(old, new, follow, now()))
    })
}

/// `symlink`.
pub fn symlink(target: &[u8], p: &HarePath, (uid, gid): (u32, u32)) -> Result<(), Errno> {
    let attrs = Attrs::new(0o777, uid, gid);
    p.mount
        .here(|c| run_ready(c.symlink(target, p.start, &p.path, attrs, now())))
}

/// `mknod` of a FIFO, with permissions `perm` (the umask applied), owned by `uid` and `gid`.
pub fn mkfifo(p: &HarePath, perm: u32, (uid, gid): (u32, u32)) -> Result<(), Errno> {
    p.mount
        .here(|c| run_ready(c.mkfifo(p.start, &p.path, Attrs::new(perm, uid, gid), now())))
}

/// `readlink`.
pub fn readlink(p: &HarePath) -> Result<Vec<u8>, Errno> {
    p.mount.here(|c| run_ready(c.readlink(p.start, &p.path)))
}

/// `truncate`.
pub fn truncate(p: &HarePath, size: u64) -> Result<(), Errno> {
    p.mount
        .here(|c| run_ready(c.truncate(p.start, &p.path, size, now())))
}

/// `fchmodat`.
pub fn chmod(p: &HarePath, mode: u32) -> Result<(), Errno> {
    p.mount
        .here(|c| run_ready(c.chmod(p.start, &p.path, mode, now())))
}

/// `fchownat` (`None` leaves the owner or group).
pub fn chown(p: &HarePath, follow: bool, ids: (Option<u32>, Option<u32>)) -> Result<(), Errno> {
    p.mount
        .here(|c| run_ready(c.chown(p.start, &p.path, follow, ids, now())))
}

/// `utimensat` (`None` leaves a time).
pub fn utimens(
    p: &HarePath,
    follow: bool,
    times: (Option<::hare::Timespec>, Option<::hare::Timespec>),
) -> Result<(), Errno> {
    p.mount
        .here(|c| run_ready(c.utimens(p.start, &p.path, follow, times, now())))
}

/// `/proc/reef/hare`: the mount, its servers, and each core's client.
pub fn report() -> String {
    let Some(m) = mounted() else {
        return String::from("not mounted\n");
    };
    let mut s = String::new();
    let members = m.members.lock().clone();
    let _ = writeln!(
        s,
        "mounted at {} servers {} table_version {} cache_blocks {} bad_cache_accesses {}",
        m.point(),
        members.len(),
        m.table.lock().version(),
        m.cache.frames.len(),
        m.cache.bad.load(Ordering::Relaxed)
    );
    let (resizes, moved, held_ns) = *m.resizes.lock();
    let _ = writeln!(
        s,
        "resizes {resizes} last_resize_shards_moved {moved} last_resize_held_us {} \
         directories_distributed {}",
        held_ns / 1000,
        m.distributions.load(Ordering::Relaxed)
    );
    let _ = writeln!(
        s,
        "open {} opens {} closes {} closes_queued {}",
        m.open.load(Ordering::Relaxed),
        m.opens.load(Ordering::Relaxed),
        m.closes.load(Ordering::Relaxed),
        QUEUED_CLOSES.load(Ordering::Relaxed)
    );
    let table = m.table.lock().clone();
    for (i, member) in &members {
        let _ = writeln!(
            s,
            "server {i} pid {} core {} node {} shards {}",
            member.pid,
            member.core,
            member.node,
            table.shards_of(*i).len()
        );
    }
    for (core, c) in m.clients.iter().enumerate() {
        // A client busy with a request is not waited for (its server may be stopped): it is
        // said to be busy.
        let Some(c) = c.try_lock() else {
            let _ = writeln!(s, "core {core} client: busy");
            continue;
        };
        if let Some(c) = c.as_ref() {
            let st = c.stats();
            let _ = writeln!(
                s,
                "core {core} client: requests {} cache_hits {} listing_hits {} invalidations {} \
                 restarts {} busy_retries {} posted {} refused_posts {} cached_entries {} \
                 strays {} exchanges {} waited_ns {} waits {}",
                st.requests,
                st.cache_hits,
                st.listing_hits,
                st.invalidations,
                st.restarts,
                st.busy_retries,
                st.posted,
                c.transport().refused_posts.get(),
                c.cached_entries(),
                c.transport().strays.get(),
                c.transport().exchanges.get(),
                c.transport().waited_ns.get(),
                c.transport().waits.get()
            );
        }
    }
    s
}
