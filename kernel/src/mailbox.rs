//! fos mailboxes (§3.2.1) as kernel objects: a process creates a [`Mailbox`], registers it
//! under a name (`crate::names`), and clients connect to it by name. Each connection is a
//! [`Conn`]: two `msg::PageChannel`s (requests, replies) in two frames the kernel allocates and
//! maps into both processes, so messages then flow in user space with no system call; the
//! kernel only wakes sleepers and cleans up.
//!
//! - **Handles.** Mailboxes and connection ends are file descriptors ([`crate::fd::Node`]):
//!   `close`, `O_CLOEXEC` across `execve`, `poll` and `dup` come from the descriptor table. A
//!   `fork` child inherits neither the descriptors nor the pages (`RegionKind::Channel`): a
//!   mailbox is its creator's alone (only it accepts), and a connection end has one party.
//! - **Waking.** The owner sleeps on its mailbox's [`EventCount`] (one word for all its
//!   connections, `msg::wait_any`), mapped into it alone, or on one connection's request
//!   channel. A client whose request finds the owner asleep calls `reef_mbox_notify`, and the
//!   kernel wakes both the channel's word and the eventcount ([`Conn::notify`]); the owner wakes a client through the futex on the reply channel's
//!   word directly (the client can wake no one but its owner, and only through the kernel). Every futex wake-up on a channel page also wakes the
//!   threads polling that page's connection ([`notify_pollers`]); `poll` on a connection marks its receiver asleep first
//!   ([`msg::Channel::watch`]), so a sender rings for it too.
//! - **Grants.** Data larger than a slot travels by reference: one end shares pages of its
//!   own (`MAP_SHARED` or message memory) with the other (`reef_grant`, a [`Granted`] in the
//!   connection's table, holding a share of each frame) and sends the id in a message
//!   (`msg::Grant`); the other end maps them (`reef_grant_map`), read-only for good unless
//!   granted writable. Only the connection's other end can map a grant (an id from anywhere
//!   else is `EPERM`: a forged grant), and only its granter revokes it; closing either end
//!   revokes them all. Revoking stops new mappings; a mapping made stays until its process
//!   unmaps it, as a `MAP_SHARED` mapping outlives its descriptor. A process may hold at most
//!   [`GRANT_PAGES_MAX`] granted pages (its [`GrantBudget`]), so that grants bound the kernel
//!   memory their frame lists take, as `RLIMIT_MEMLOCK` bounds pinned pages on Linux.
//! - **Death.** Closing a connection end (the last descriptor, or its process's exit) closes
//!   its two channel ends and wakes the peer: a sender then gets `EPIPE` and a receiver gets
//!   what is left, then `EPIPE`; nobody waits for a party that is gone. Closing a mailbox
//!   refuses new connections (`ECONNREFUSED`), closes the ones not yet accepted and removes
//!   its names. A process's mapping of the pages stays until it unmaps them or exits; a frame
//!   is freed when neither the kernel object nor any address space holds it (`mm::share`).

use crate::arch::paging;
use crate::fd::POLL_WAKE;
use crate::proc::wait::{PollKey, WaitQueue, Wake};
use crate::proc::Thread;
use crate::sync::IrqMutex;
use crate::vm::{self, VSpace};
use abi::reef::MBOX_ARRIVALS_OFFSET;
use abi::Errno;
use alloc::collections::VecDeque;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use msg::{Doorbell, EventCount, Message, PageChannel, RecvError, SendError};

/// Connections a mailbox holds before its owner accepts them; `connect` answers `EAGAIN` past
/// that.
pub const BACKLOG: usize = 64;

/// Pages a process may have granted and not revoked (256 MiB): `reef_grant` answers `ENOMEM`
/// past it.
pub const GRANT_PAGES_MAX: u64 = 65536;

/// Grants one connection holds at once: `reef_grant` answers `ENOSPC` past it.
pub const GRANTS_PER_CONN: usize = 1024;

/// Bytes in a page, as a `usize`.
const PAGE_BYTES: usize = vm::PAGE_SIZE as usize;

/// The id of the next mailbox created.
static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// The id of the next grant made (unique across connections).
static NEXT_GRANT: AtomicU64 = AtomicU64::new(1);

/// A zeroed frame the kernel holds one share of, mapped into processes beside it: freed when
/// the kernel and every address space have let go. Other parties may write it at any time,
/// so the kernel reads and writes its bytes by copy ([`SharedFrame::read`],
/// [`SharedFrame::write`]), never through a reference, except as the atomics of a channel.
pub struct SharedFrame(u64);

impl SharedFrame {
    /// A new zeroed frame, on the calling core's node.
    pub fn new() -> Result<SharedFrame, Errno> {
        vm::allocate_user_frame().map(SharedFrame)
    }

    /// Its physical address.
    pub fn phys(&self) -> u64 {
        self.0
    }

    /// The frame's bytes in the kernel's direct map.
    fn address(&self) -> u64 {
        paging::phys_to_virt(self.0)
    }

    /// Copies the bytes from `offset` into `buf` (as many as the page holds).
    pub fn read(&self, offset: usize, buf: &mut [u8]) {
        let n = buf.len().min(PAGE_BYTES.saturating_sub(offset));
        // SAFETY: `offset + n` is within the page, which the kernel holds a share of while
        // `self` lives and reaches through the direct map; a copy, so a party writing the
        // page meanwhile changes what is read, never the kernel's memory.
        unsafe {
            core::ptr::copy_nonoverlapping(
                (self.address() as *const u8).add(offset),
                buf.as_mut_ptr(),
                n,
            )
        };
    }

    /// Copies `data` into the frame from `offset` (as much as the page holds).
    pub fn write(&self, offset: usize, data: &[u8]) {
        let n = data.len().min(PAGE_BYTES.saturating_sub(offset));
        // SAFETY: as in `read`, in the other direction.
        unsafe {
            core::ptr::copy_nonoverlapping(
                data.as_ptr(),
                (self.address() as *mut u8).add(offset),
                n,
            )
        };
    }

    /// The frame as the 64-bit words other parties share with the kernel (a network server's
    /// rings, `net::server`).
    pub fn words(&self) -> &[AtomicU64; 512] {
        // SAFETY: as for `channel`: the frame is a page of RAM the kernel holds a share of
        // while `self` lives, page-aligned in the direct map; atomics are valid for every bit
        // pattern and made to be written by other parties at the same time.
        unsafe { &*(self.address() as *const [AtomicU64; 512]) }
    }

    /// The frame as the channel it holds.
    fn channel(&self) -> &PageChannel {
        // SAFETY: the frame is RAM the kernel holds a share of while `self` lives, mapped in
        // the direct map at a page-aligned address, and `PageChannel` is one page of atomics
        // (its layout is checked in lib/msg), valid for every bit pattern and made to be
        // written by other parties at the same time (its user-space mappings).
        unsafe { &*(self.address() as *const PageChannel) }
    }

    /// The frame as the eventcount at its start.
    fn events(&self) -> &EventCount {
        // SAFETY: as for `channel`: an `EventCount` is one atomic word, valid for every bit
        // pattern, at the start of a page the kernel holds.
        unsafe { &*(self.address() as *const EventCount) }
    }
}

impl Drop for SharedFrame {
    fn drop(&mut self) {
        vm::free_frame(self.0, vspace::PageSize::Base4K);
    }
}

/// The kernel's doorbell for a channel: wakes the futex waiters of a word in one of its
/// frames, and `poll` (the kernel never sleeps on a channel).
struct KernelBell;

impl Doorbell for KernelBell {
    fn wait(&self, _: &AtomicU32, _: u32) {}

    fn wake(&self, word: &AtomicU32) {
        let phys = paging::virt_to_phys(word as *const AtomicU32 as u64);
        crate::futex::wake_frame_word(phys);
        notify_pollers(phys);
    }
}

/// Wakes the threads polling a connection or mailbox whose channel or eventcount holds the
/// word at physical address `phys` (a word of the frame changed: a message, a close, a wake-up).
pub fn notify_pollers(phys: u64) {
    POLL_WAKE.notify(PollKey::Frame(phys & !(vm::PAGE_SIZE - 1)));
}

/// The doorbell of a client end the kernel holds: ringing wakes the owner as
/// `reef_mbox_notify` does. The kernel never sleeps through it (it sends with `try_send`, and
/// waits for replies with [`Conn::wait_reply`]).
struct OwnerBell<'a>(&'a Conn);

impl Doorbell for OwnerBell<'_> {
    fn wait(&self, _: &AtomicU32, _: u32) {}

    fn wake(&self, _: &AtomicU32) {
        self.0.notify();
    }
}

/// The mailbox `id` that process `pid` holds (a directory member), if it still does.
pub fn find(pid: u32, id: u64) -> Option<Arc<Mailbox>> {
    let owner = crate::proc::lookup(pid)?.process;
    let files = owner.files.lock();
    let found = files.iter().find_map(|(_, fd)| match &fd.file.node {
        crate::fd::Node::Mailbox(m) if m.id == id => Some(m.clone()),
        _ => None,
    });
    found
}

/// A receive mailbox: its owner's eventcount and the connections waiting to be accepted.
pub struct Mailbox {
    /// Unique for the kernel's lifetime (what the name directory records).
    pub id: u64,
    /// The frame of the owner's eventcount, mapped into the owner alone.
    events: SharedFrame,
    /// Connections not accepted yet; `None` once closed.
    pending: IrqMutex<Option<VecDeque<Arc<Conn>>>>,
    /// Woken when a connection arrives or the mailbox closes (a blocking `accept`).
    arrivals: WaitQueue,
}

impl Mailbox {
    /// A new mailbox and the frame of its eventcount, to map into the owner.
    pub fn new() -> Result<Arc<Mailbox>, Errno> {
        let mut pending = VecDeque::new();
        pending.try_reserve(BACKLOG).map_err(|_| Errno::ENOMEM)?;
        Ok(Arc::new(Mailbox {
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
            events: SharedFrame::new()?,
            pending: IrqMutex::new(Some(pending)),
            arrivals: WaitQueue::new(),
        }))
    }

    /// Maps the eventcount's page into `vm` (the owner); returns its address.
    pub fn map_events(&self, vm: &VSpace) -> Result<u64, Errno> {
        vm.map_kernel_frames(&[self.events.0], true)
    }

    /// Wakes the owner sleeping on its eventcount (and its `poll`).
    fn ring(&self) {
        self.events.events().notify(&KernelBell);
    }

    /// A new connection to this mailbox made by process `client_pid` (0: the kernel), not
    /// offered to its owner yet ([`Mailbox::offer`]).
    pub fn new_connection(self: &Arc<Mailbox>, client_pid: u32) -> Result<Arc<Conn>, Errno> {
        Ok(Arc::new(Conn {
            mailbox: self.clone(),
            client_pid,
            request: SharedFrame::new()?,
            reply: SharedFrame::new()?,
            open: [AtomicBool::new(true), AtomicBool::new(true)],
            grants: IrqMutex::new(Vec::new()),
        }))
    }

    /// Queues `conn` for the owner and rings it: `ECONNREFUSED` if the mailbox is closed,
    /// `EAGAIN` if [`BACKLOG`] connections wait already (nothing queued then).
    pub fn offer(&self, conn: Arc<Conn>) -> Result<(), Errno> {
        {
            let mut pending = self.pending.lock();
            let queue = pending.as_mut().ok_or(Errno::ECONNREFUSED)?;
            if queue.len() >= BACKLOG {
                return Err(Errno::EAGAIN);
            }
            queue.push_back(conn);
        }
        self.events.words()[MBOX_ARRIVALS_OFFSET / 8].fetch_add(1, Ordering::Release);
        self.arrivals.notify_all();
        self.ring();
        Ok(())
    }

    /// Puts back a connection [`Mailbox::accept`] took but the owner could not take in (its
    /// output pointer faulted, no descriptor was left): first in line again, or closed if the
    /// mailbox closed meanwhile. The queue may then hold more than [`BACKLOG`], by at most one
    /// per thread of the owner.
    pub fn put_back(&self, conn: Arc<Conn>) {
        let refused = {
            let mut pending = self.pending.lock();
            match pending.as_mut() {
                Some(queue) => {
                    queue.push_front(conn);
                    None
                }
                None => Some(conn),
            }
        };
        if let Some(conn) = refused {
            conn.close(End::Server);
        }
    }

    /// The oldest waiting connection; waits for one unless `nonblock` (`EAGAIN`), `EINTR` on a
    /// signal.
    pub fn accept(&self, nonblock: bool) -> Result<Arc<Conn>, Errno> {
        loop {
            let seq = self.arrivals.seq();
            if let Some(c) = self.pending.lock().as_mut().and_then(|q| q.pop_front()) {
                return Ok(c);
            }
            if nonblock {
                return Err(Errno::EAGAIN);
            }
            if self.arrivals.wait(seq, None) == Wake::Interrupted {
                return Err(Errno::EINTR);
            }
        }
    }

    /// What a poller of the mailbox watches: its eventcount's frame, which every offered
    /// connection rings.
    pub fn poll_key(&self) -> PollKey {
        PollKey::Frame(self.events.0)
    }

    /// Whether a connection waits (`poll`'s `POLLIN`).
    pub fn has_pending(&self) -> bool {
        self.pending.lock().as_ref().is_some_and(|q| !q.is_empty())
    }

    /// The owner let go of it (its last descriptor closed): no more connections, the waiting
    /// ones closed, its names gone.
    pub fn close(&self) {
        let waiting = self.pending.lock().take();
        for conn in waiting.into_iter().flatten() {
            conn.close(End::Server);
        }
        self.arrivals.notify_all();
        crate::names::mailbox_gone(self.id);
    }
}

/// The pages a process has granted and not revoked ([`GRANT_PAGES_MAX`] at most); each
/// [`Granted`] keeps its process's budget and gives its pages back when it goes.
#[derive(Default)]
pub struct GrantBudget(AtomicU64);

impl GrantBudget {
    /// Counts `pages` more: `ENOMEM` (nothing counted) past [`GRANT_PAGES_MAX`].
    pub fn charge(&self, pages: u64) -> Result<(), Errno> {
        self.0
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |v| {
                v.checked_add(pages).filter(|&n| n <= GRANT_PAGES_MAX)
            })
            .map(|_| ())
            .map_err(|_| Errno::ENOMEM)
    }

    /// Counts `pages` fewer.
    pub fn refund(&self, pages: u64) {
        self.0.fetch_sub(pages, Ordering::AcqRel);
    }
}

/// Frames one end of a connection shared with the other (`reef_grant`): the grant holds a
/// share of each and the granter's budget counts them until the grant goes (revoked, or the
/// connection closed, and no mapping in progress still holds it).
pub struct Granted {
    /// Its id, unique for the kernel's lifetime (what the grantee maps it by).
    id: u64,
    /// The end that made the grant.
    from: End,
    /// Whether the grantee may map the pages writable.
    writable: bool,
    /// Physical addresses of the granted frames, one share of each held by the grant.
    frames: Vec<u64>,
    /// The granter's budget, charged for the frames until the grant goes.
    budget: Arc<GrantBudget>,
}

impl Granted {
    /// A grant of `frames` (each with a share taken for it, charged to `budget` already) from
    /// `from` to the other end.
    pub fn new(from: End, writable: bool, frames: Vec<u64>, budget: Arc<GrantBudget>) -> Granted {
        Granted {
            id: NEXT_GRANT.fetch_add(1, Ordering::Relaxed),
            from,
            writable,
            frames,
            budget,
        }
    }

    /// Maps the frames into `vm` (the grantee) at a new address, returned with the length.
    pub fn map(&self, vm: &VSpace) -> Result<(u64, u64), Errno> {
        let addr = vm.map_kernel_frames(&self.frames, self.writable)?;
        Ok((addr, self.frames.len() as u64 * vm::PAGE_SIZE))
    }
}

impl Drop for Granted {
    fn drop(&mut self) {
        for &phys in &self.frames {
            vm::free_frame(phys, vspace::PageSize::Base4K);
        }
        self.budget.refund(self.frames.len() as u64);
    }
}

/// Which side of a connection a descriptor holds.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum End {
    /// The client: sends requests, receives replies.
    Client,
    /// The mailbox's owner: receives requests, sends replies.
    Server,
}

/// One connection: a request channel and a reply channel, one frame each, mapped as a
/// `msg::Connection<62>` (requests first) into the client and the owner.
pub struct Conn {
    /// The mailbox connected to.
    mailbox: Arc<Mailbox>,
    /// The process that made it (its client end), 0 for the kernel: what `accept` tells the
    /// owner, so that a server may serve the kernel's connections alone (Hare's `hared`).
    client_pid: u32,
    /// The frame of the request channel (client to owner).
    request: SharedFrame,
    /// The frame of the reply channel (owner to client).
    reply: SharedFrame,
    /// Whether each end (client, server) is still held.
    open: [AtomicBool; 2],
    /// Grants not revoked, from either end ([`GRANTS_PER_CONN`] at most); emptied when
    /// either end closes.
    grants: IrqMutex<Vec<Arc<Granted>>>,
}

impl Conn {
    /// The process that made the connection, 0 for the kernel.
    pub fn client_pid(&self) -> u32 {
        self.client_pid
    }

    /// Maps both channels into `vm`; returns the address of the request channel (the reply
    /// channel follows it).
    pub fn map(&self, vm: &VSpace) -> Result<u64, Errno> {
        vm.map_kernel_frames(&[self.request.0, self.reply.0], true)
    }

    /// Records `grant` for the other end; returns its id. `EPIPE` once either end has closed,
    /// `ENOSPC` when the connection holds [`GRANTS_PER_CONN`] grants, `ENOMEM`; the grant is
    /// dropped (its frames given back) on failure.
    pub fn grant(&self, grant: Granted) -> Result<u64, Errno> {
        let id = grant.id;
        let grant = Arc::new(grant);
        let mut grants = self.grants.lock();
        if !self.open.iter().all(|o| o.load(Ordering::Acquire)) {
            return Err(Errno::EPIPE);
        }
        if grants.len() >= GRANTS_PER_CONN {
            return Err(Errno::ENOSPC);
        }
        grants.try_reserve(1).map_err(|_| Errno::ENOMEM)?;
        grants.push(grant);
        Ok(id)
    }

    /// The grant `id` made to `end` by the other end, for `end` to map: `EPERM` for any other
    /// id (one made by `end` itself, on another connection, revoked, or never made: forged).
    pub fn granted_to(&self, end: End, id: u64) -> Result<Arc<Granted>, Errno> {
        self.grants
            .lock()
            .iter()
            .find(|g| g.id == id && g.from != end)
            .cloned()
            .ok_or(Errno::EPERM)
    }

    /// `end` revokes its grant `id`: `ENOENT` for an id the connection does not hold, `EPERM`
    /// for one the other end made.
    pub fn revoke(&self, end: End, id: u64) -> Result<(), Errno> {
        let gone = {
            let mut grants = self.grants.lock();
            let i = grants
                .iter()
                .position(|g| g.id == id)
                .ok_or(Errno::ENOENT)?;
            if grants[i].from != end {
                return Err(Errno::EPERM);
            }
            grants.swap_remove(i)
        };
        drop(gone);
        Ok(())
    }

    /// The kernel, holding the client end, sends `m` (ringing the owner if it sleeps):
    /// `EPIPE` once the owner is gone, `EAGAIN` if the ring is full.
    pub fn send_request(&self, m: &Message) -> Result<(), Errno> {
        let bell = OwnerBell(self);
        match self.request.channel().sender(&bell).try_send(m) {
            Ok(()) => Ok(()),
            Err(SendError::Closed) => Err(Errno::EPIPE),
            Err(SendError::Full) => Err(Errno::EAGAIN),
        }
    }

    /// The kernel, holding the client end, takes the next reply if one waits: `EPIPE` once
    /// the owner is gone and every reply is taken, `EIO` for a slot no sender writes.
    pub fn try_reply(&self) -> Result<Option<Message>, Errno> {
        match self.reply.channel().receiver(&KernelBell).try_recv() {
            Ok(m) => Ok(m),
            Err(RecvError::Closed) => Err(Errno::EPIPE),
            Err(RecvError::Corrupt) => Err(Errno::EIO),
        }
    }

    /// Whether a reply or the owner's close waits (a look, nothing taken).
    pub fn reply_waiting(&self) -> bool {
        let ch = self.reply.channel();
        ch.ready() || ch.sender_closed()
    }

    /// The kernel's thread `me` sleeps until a reply (or the owner's close) may be waiting;
    /// only a fatal signal ends the wait early (`EINTR`).
    pub fn wait_reply(&self, me: &Arc<Thread>) -> Result<(), Errno> {
        let ch = self.reply.channel();
        if ch.watch() {
            return Ok(());
        }
        crate::futex::wait_kernel_word(me, ch.receiver_word(), 1)
    }

    /// The kernel, holding the client end, grants the owner `frames` (frames it holds, of
    /// which the grant takes a share each), writable, charged to `budget`; returns the id.
    pub fn grant_frames(&self, frames: &[u64], budget: &Arc<GrantBudget>) -> Result<u64, Errno> {
        let mut held = Vec::new();
        held.try_reserve_exact(frames.len())
            .map_err(|_| Errno::ENOMEM)?;
        budget.charge(frames.len() as u64)?;
        for &f in frames {
            crate::mm::share(f);
            held.push(f);
        }
        self.grant(Granted::new(End::Client, true, held, budget.clone()))
    }

    /// The id of the mailbox it connects to.
    pub fn mailbox(&self) -> u64 {
        self.mailbox.id
    }

    /// The client rings the owner (`reef_mbox_notify`): wakes it whether it sleeps on this
    /// connection's request channel (`reef_msg_recv`) or on its eventcount (`wait_any`).
    pub fn notify(&self) {
        self.request.channel().wake_receiver(&KernelBell);
        self.mailbox.ring();
    }

    /// `end` let go (its last descriptor closed): its channel ends close and the peer wakes.
    pub fn close(&self, end: End) {
        if !self.open[end as usize].swap(false, Ordering::AcqRel) {
            return;
        }
        // Nobody can map them any more; frames are given back outside the lock.
        let grants = core::mem::take(&mut *self.grants.lock());
        drop(grants);
        let request = self.request.channel();
        let reply = self.reply.channel();
        match end {
            End::Client => {
                request.close_sender(&KernelBell);
                reply.close_receiver(&KernelBell);
                // The owner sleeps on its eventcount (or in `poll`) rather than on the request
                // channel's word: ring it regardless.
                self.mailbox.ring();
            }
            End::Server => {
                request.close_receiver(&KernelBell);
                reply.close_sender(&KernelBell);
            }
        }
        for key in self.poll_keys() {
            POLL_WAKE.notify(key);
        }
    }

    /// What a poller of either end watches: the frames of both channels.
    pub fn poll_keys(&self) -> [PollKey; 2] {
        [PollKey::Frame(self.request.0), PollKey::Frame(self.reply.0)]
    }

    /// `poll`'s events for `end`: `POLLIN` when a message (or a closed sender) waits, `POLLOUT`
    /// when a message fits, `POLLHUP` once the peer is gone. A receiver found idle is marked
    /// asleep, so the peer's next message rings.
    pub fn poll(&self, end: End) -> u16 {
        use abi::poll::{POLLHUP, POLLIN, POLLOUT};
        let (inbound, outbound) = match end {
            End::Client => (self.reply.channel(), self.request.channel()),
            End::Server => (self.request.channel(), self.reply.channel()),
        };
        let mut events = 0;
        if inbound.watch() {
            events |= POLLIN;
        }
        if outbound.has_room() && !outbound.receiver_closed() {
            events |= POLLOUT;
        }
        if inbound.sender_closed() || outbound.receiver_closed() {
            events |= POLLHUP;
        }
        events
    }
}
