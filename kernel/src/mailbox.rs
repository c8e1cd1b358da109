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
//!   connections, `msg::wait_any`), mapped into it alone. A client whose request finds the
//!   owner asleep calls `reef_mbox_notify`, and the kernel bumps the eventcount and wakes it
//!   ([`Conn::notify`]); the owner wakes a client through the futex on the reply channel's
//!   word directly (the client can wake no one but its owner, and only through the kernel). Every futex wake-up on a channel page also wakes `poll`
//!   ([`crate::fd::POLL_WAKE`]); `poll` on a connection marks its receiver asleep first
//!   ([`msg::Channel::watch`]), so a sender rings for it too.
//! - **Death.** Closing a connection end (the last descriptor, or its process's exit) closes
//!   its two channel ends and wakes the peer: a sender then gets `EPIPE` and a receiver gets
//!   what is left, then `EPIPE`; nobody waits for a party that is gone. Closing a mailbox
//!   refuses new connections (`ECONNREFUSED`), closes the ones not yet accepted and removes
//!   its names. A process's mapping of the pages stays until it unmaps them or exits; a frame
//!   is freed when neither the kernel object nor any address space holds it (`mm::share`).

use crate::arch::paging;
use crate::fd::POLL_WAKE;
use crate::proc::wait::{WaitQueue, Wake};
use crate::sync::IrqMutex;
use crate::vm::{self, VSpace};
use abi::Errno;
use alloc::collections::VecDeque;
use alloc::sync::Arc;
use core::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use msg::{Doorbell, EventCount, PageChannel};

/// Connections a mailbox holds before its owner accepts them; `connect` answers `EAGAIN` past
/// that.
pub const BACKLOG: usize = 64;

static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// A zeroed frame the kernel holds one share of, mapped into processes beside it: freed when
/// the kernel and every address space have let go.
struct SharedFrame(u64);

impl SharedFrame {
    fn new() -> Result<SharedFrame, Errno> {
        vm::allocate_user_frame().map(SharedFrame)
    }

    /// The frame's bytes in the kernel's direct map.
    fn address(&self) -> u64 {
        paging::phys_to_virt(self.0)
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
        crate::futex::wake_frame_word(paging::virt_to_phys(word as *const AtomicU32 as u64));
        POLL_WAKE.notify_all();
    }
}

/// A receive mailbox: its owner's eventcount and the connections waiting to be accepted.
pub struct Mailbox {
    /// Unique for the kernel's lifetime (what the name directory records).
    pub id: u64,
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
        vm.map_kernel_frames(&[self.events.0])
    }

    /// Wakes the owner sleeping on its eventcount (and its `poll`).
    fn ring(&self) {
        self.events.events().notify(&KernelBell);
    }

    /// A new connection to this mailbox, not offered to its owner yet ([`Mailbox::offer`]).
    pub fn new_connection(self: &Arc<Mailbox>) -> Result<Arc<Conn>, Errno> {
        Ok(Arc::new(Conn {
            mailbox: self.clone(),
            request: SharedFrame::new()?,
            reply: SharedFrame::new()?,
            open: [AtomicBool::new(true), AtomicBool::new(true)],
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
    mailbox: Arc<Mailbox>,
    request: SharedFrame,
    reply: SharedFrame,
    /// Whether each end (client, server) is still held.
    open: [AtomicBool; 2],
}

impl Conn {
    /// Maps both channels into `vm`; returns the address of the request channel (the reply
    /// channel follows it).
    pub fn map(&self, vm: &VSpace) -> Result<u64, Errno> {
        vm.map_kernel_frames(&[self.request.0, self.reply.0])
    }

    /// The id of the mailbox it connects to.
    pub fn mailbox(&self) -> u64 {
        self.mailbox.id
    }

    /// The client rings the owner (`reef_mbox_notify`): bumps its eventcount and wakes it.
    pub fn notify(&self) {
        self.mailbox.ring();
    }

    /// `end` let go (its last descriptor closed): its channel ends close and the peer wakes.
    pub fn close(&self, end: End) {
        if !self.open[end as usize].swap(false, Ordering::AcqRel) {
            return;
        }
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
        POLL_WAKE.notify_all();
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
