//! The ring: layout, sender, receiver, sleeping and closing.

use crate::message::{split_header, Message, FLAGS_KNOWN, PAYLOAD};
use crate::sync::{fence, AtomicU32, AtomicU64, Ordering};

/// Slots of a [`crate::PageChannel`]: a 4 KiB page less its two control lines.
pub const PAGE_SLOTS: usize = 62;
/// Payload words in a slot.
const WORDS: usize = PAYLOAD / 8;
/// Times [`Receiver::recv`] polls an empty ring before it sleeps: a sender on another core
/// that answers within that time costs no system call on either side (UMP's receivers poll).
/// None under loom, whose models would only grow.
#[cfg(not(loom))]
pub const SPIN_POLLS: u32 = 200;
/// Times [`Receiver::recv`] polls an empty ring before it sleeps (none in loom models).
#[cfg(loom)]
pub const SPIN_POLLS: u32 = 0;
/// `Channel::closed` bit: the receiver is gone.
const RX_CLOSED: u32 = 1;
/// `Channel::closed` bit: the sender is gone.
const TX_CLOSED: u32 = 2;

/// One message's cache line: the header word the receiver polls (sequence number, tag, length,
/// flags: see [`Message`]) and 56 bytes of payload.
#[repr(C, align(64))]
pub struct Slot {
    header: AtomicU64,
    data: [AtomicU64; WORDS],
}

/// The line the receiver writes: how many messages it has taken, and its sleeping word.
#[repr(C, align(64))]
struct ReceiverLine {
    head: AtomicU64,
    sleeping: AtomicU32,
}

/// The line the sender writes: how many messages it has sent, its sleeping word, and the
/// closed bits (written once by each side).
#[repr(C, align(64))]
struct SenderLine {
    tail: AtomicU64,
    sleeping: AtomicU32,
    closed: AtomicU32,
}

/// A one-way ring of `N` messages between one sender and one receiver (see the crate
/// documentation). All-zero memory is an empty, open channel.
#[repr(C)]
pub struct Channel<const N: usize> {
    rx: ReceiverLine,
    tx: SenderLine,
    slots: [Slot; N],
}

/// Two channels in opposite directions: a client's requests to the owner of a mailbox and the
/// owner's replies (fos: request and response mailboxes).
#[repr(C)]
pub struct Connection<const N: usize> {
    /// Client to owner.
    pub request: Channel<N>,
    /// Owner to client.
    pub reply: Channel<N>,
}

#[cfg(not(loom))]
const _: () = {
    use core::mem::{offset_of, size_of};
    assert!(size_of::<Slot>() == 64);
    assert!(offset_of!(Channel<PAGE_SLOTS>, rx) == 0);
    assert!(offset_of!(Channel<PAGE_SLOTS>, tx) == 64);
    assert!(offset_of!(Channel<PAGE_SLOTS>, slots) == 128);
    assert!(size_of::<Channel<PAGE_SLOTS>>() == 4096);
    assert!(size_of::<Connection<PAGE_SLOTS>>() == 8192);
};

/// How a party sleeps and wakes another: a futex-like pair of calls.
pub trait Doorbell {
    /// Sleeps while `word` holds `value`. The check and the sleep are one step against
    /// [`Doorbell::wake`]; may return early (a signal, a spurious wake-up).
    fn wait(&self, word: &AtomicU32, value: u32);
    /// Wakes whoever sleeps on `word`.
    fn wake(&self, word: &AtomicU32);
}

/// Why a message was not sent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SendError {
    /// Every slot holds a message the receiver has not taken.
    Full,
    /// The receiver is gone.
    Closed,
}

/// Why no message was received.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RecvError {
    /// The sender is gone and every message it sent has been taken.
    Closed,
    /// The slot held a header no well-behaved sender writes (a length over [`PAYLOAD`], an
    /// unknown flag); it was skipped.
    Corrupt,
}

/// The sequence number of the message at position `pos`: never 0 in the first round, so a
/// zeroed slot is empty.
fn seq(pos: u64) -> u32 {
    (pos as u32).wrapping_add(1)
}

impl<const N: usize> Default for Channel<N> {
    fn default() -> Self {
        Self::new()
    }
}

impl<const N: usize> Channel<N> {
    /// An empty, open channel (the same as all-zero memory).
    pub fn new() -> Self {
        Channel {
            rx: ReceiverLine {
                head: AtomicU64::new(0),
                sleeping: AtomicU32::new(0),
            },
            tx: SenderLine {
                tail: AtomicU64::new(0),
                sleeping: AtomicU32::new(0),
                closed: AtomicU32::new(0),
            },
            slots: core::array::from_fn(|_| Slot {
                header: AtomicU64::new(0),
                data: core::array::from_fn(|_| AtomicU64::new(0)),
            }),
        }
    }

    fn slot(&self, pos: u64) -> &Slot {
        &self.slots[(pos % N as u64) as usize]
    }

    /// The sending end, taking up where the last sender stopped. A channel has one sender at
    /// a time: two would overwrite each other's messages.
    pub fn sender<'a, D: Doorbell>(&'a self, bell: &'a D) -> Sender<'a, N, D> {
        Sender {
            ch: self,
            bell,
            tail: self.tx.tail.load(Ordering::Relaxed),
            head: self.rx.head.load(Ordering::Acquire),
        }
    }

    /// The receiving end, taking up where the last receiver stopped. A channel has one
    /// receiver at a time.
    pub fn receiver<'a, D: Doorbell>(&'a self, bell: &'a D) -> Receiver<'a, N, D> {
        Receiver {
            ch: self,
            bell,
            head: self.rx.head.load(Ordering::Relaxed),
        }
    }

    /// Messages sent and not yet taken, as far as the two counters say (a peer may lie).
    pub fn queued(&self) -> u64 {
        let tail = self.tx.tail.load(Ordering::Relaxed);
        tail.saturating_sub(self.rx.head.load(Ordering::Relaxed))
    }

    /// Messages sent through the channel so far (the sender's counter).
    pub fn sent(&self) -> u64 {
        self.tx.tail.load(Ordering::Relaxed)
    }

    /// Closes the receiving end (its owner is gone) and wakes a sender waiting for space: it
    /// gets [`SendError::Closed`] from now on.
    pub fn close_receiver(&self, bell: &impl Doorbell) {
        self.close(RX_CLOSED, &self.tx.sleeping, bell);
    }

    /// Closes the sending end and wakes a sleeping receiver: it takes what is left in the
    /// ring, then gets [`RecvError::Closed`].
    pub fn close_sender(&self, bell: &impl Doorbell) {
        self.close(TX_CLOSED, &self.rx.sleeping, bell);
    }

    fn close(&self, bit: u32, peer_sleeping: &AtomicU32, bell: &impl Doorbell) {
        self.tx.closed.fetch_or(bit, Ordering::Release);
        wake_if_sleeping(peer_sleeping, bell);
    }

    /// The word a receiver sleeps on once [`Channel::watch`] has marked it asleep (1 while it
    /// sleeps; a sender clears it before it rings): for a receiver that does its own sleeping
    /// (the kernel, which must be able to give up a wait) rather than [`Receiver::recv`]'s.
    pub fn receiver_word(&self) -> &AtomicU32 {
        &self.rx.sleeping
    }

    /// Wakes a receiver sleeping on this channel's own word, whose sender has already claimed
    /// the wake-up (cleared the word) and asked a third party to ring: the kernel does this
    /// for a mailbox's owner, who may sleep on one connection rather than on its eventcount.
    pub fn wake_receiver(&self, bell: &impl Doorbell) {
        bell.wake(&self.rx.sleeping);
    }

    /// Whether the receiver is gone.
    pub fn receiver_closed(&self) -> bool {
        self.tx.closed.load(Ordering::Acquire) & RX_CLOSED != 0
    }

    /// Whether the sender is gone.
    pub fn sender_closed(&self) -> bool {
        self.tx.closed.load(Ordering::Acquire) & TX_CLOSED != 0
    }

    /// Whether a message fits (for `poll`'s `POLLOUT`), as far as the counters say.
    pub fn has_room(&self) -> bool {
        self.queued() < N as u64
    }

    /// Marks the receiver asleep and looks once more, a full fence between, as a receiver about
    /// to sleep does: whether a message or a closed sender is waiting. What the kernel's `poll`
    /// does for a receiver that sleeps there rather than on the channel's word: a sender that
    /// publishes afterwards sees the mark and rings its doorbell.
    pub fn watch(&self) -> bool {
        if self.ready() || self.sender_closed() {
            return true;
        }
        self.rx.sleeping.store(1, Ordering::Relaxed);
        fence(Ordering::SeqCst);
        self.ready() || self.sender_closed()
    }

    /// Whether a message is waiting at position `head` (for `poll`: the kernel looks without
    /// taking).
    pub fn ready(&self) -> bool {
        let head = self.rx.head.load(Ordering::Relaxed);
        split_header(self.slot(head).header.load(Ordering::Acquire)).0 == seq(head)
    }
}

/// Wakes the party sleeping on `word` if it sleeps: after a full fence, so that either the
/// sleeper's second look sees what the caller just published, or the caller sees its word.
fn wake_if_sleeping(word: &AtomicU32, bell: &impl Doorbell) {
    fence(Ordering::SeqCst);
    if word.load(Ordering::Relaxed) != 0 && word.swap(0, Ordering::Relaxed) != 0 {
        bell.wake(word);
    }
}

/// The sending end of a [`Channel`].
pub struct Sender<'a, const N: usize, D: Doorbell> {
    ch: &'a Channel<N>,
    bell: &'a D,
    /// Position of the next message.
    tail: u64,
    /// The receiver's head when last read.
    head: u64,
}

impl<const N: usize, D: Doorbell> Sender<'_, N, D> {
    /// Sends `m` if a slot is free; wakes the receiver if it sleeps.
    pub fn try_send(&mut self, m: &Message) -> Result<(), SendError> {
        let ch = self.ch;
        if ch.receiver_closed() {
            return Err(SendError::Closed);
        }
        if self.tail.wrapping_sub(self.head) >= N as u64 {
            // Acquire: the receiver copied the slot out before it advanced `head`.
            self.head = ch.rx.head.load(Ordering::Acquire);
            if self.tail.wrapping_sub(self.head) >= N as u64 {
                return Err(SendError::Full);
            }
        }
        let slot = ch.slot(self.tail);
        for (word, bytes) in slot.data.iter().zip(m.data.chunks_exact(8)) {
            let v = u64::from_le_bytes(bytes.try_into().expect("8 bytes"));
            word.store(v, Ordering::Relaxed);
        }
        slot.header
            .store(m.header(seq(self.tail)), Ordering::Release);
        self.tail += 1;
        ch.tx.tail.store(self.tail, Ordering::Relaxed);
        wake_if_sleeping(&ch.rx.sleeping, self.bell);
        Ok(())
    }

    /// Sends `m`, sleeping while the ring is full; fails only when the receiver is gone.
    pub fn send(&mut self, m: &Message) -> Result<(), SendError> {
        loop {
            match self.try_send(m) {
                Err(SendError::Full) => {}
                r => return r,
            }
            let word = &self.ch.tx.sleeping;
            word.store(1, Ordering::Relaxed);
            fence(Ordering::SeqCst);
            self.head = self.ch.rx.head.load(Ordering::Acquire);
            if self.tail.wrapping_sub(self.head) < N as u64 || self.ch.receiver_closed() {
                word.store(0, Ordering::Relaxed);
                continue;
            }
            self.bell.wait(word, 1);
        }
    }
}

/// The receiving end of a [`Channel`].
pub struct Receiver<'a, const N: usize, D: Doorbell> {
    ch: &'a Channel<N>,
    bell: &'a D,
    /// Position of the next message.
    head: u64,
}

impl<const N: usize, D: Doorbell> Receiver<'_, N, D> {
    /// Takes the next message if there is one; wakes a sender waiting for space.
    pub fn try_recv(&mut self) -> Result<Option<Message>, RecvError> {
        let ch = self.ch;
        let slot = ch.slot(self.head);
        let mut header = slot.header.load(Ordering::Acquire);
        if split_header(header).0 != seq(self.head) {
            if !ch.sender_closed() {
                return Ok(None);
            }
            // Closed after publishing? The close (acquired above) came after every message.
            header = slot.header.load(Ordering::Acquire);
            if split_header(header).0 != seq(self.head) {
                return Err(RecvError::Closed);
            }
        }
        let (_, tag, len, flags) = split_header(header);
        let mut data = [0u8; PAYLOAD];
        for (bytes, word) in data.chunks_exact_mut(8).zip(&slot.data) {
            bytes.copy_from_slice(&word.load(Ordering::Relaxed).to_le_bytes());
        }
        self.head += 1;
        // Release: the copy above is done before the sender may reuse the slot.
        ch.rx.head.store(self.head, Ordering::Release);
        wake_if_sleeping(&ch.tx.sleeping, self.bell);
        if len as usize > PAYLOAD || flags & !FLAGS_KNOWN != 0 {
            return Err(RecvError::Corrupt);
        }
        Ok(Some(Message {
            tag,
            flags,
            len,
            data,
        }))
    }

    /// Takes the next message, polling [`SPIN_POLLS`] times and then sleeping while the ring
    /// is empty; fails only when the sender is gone and the ring is empty (or a slot is
    /// corrupt).
    pub fn recv(&mut self) -> Result<Message, RecvError> {
        loop {
            for _ in 0..SPIN_POLLS {
                if let Some(m) = self.try_recv()? {
                    return Ok(m);
                }
                core::hint::spin_loop();
            }
            if let Some(m) = self.try_recv()? {
                return Ok(m);
            }
            let word = &self.ch.rx.sleeping;
            word.store(1, Ordering::Relaxed);
            fence(Ordering::SeqCst);
            match self.try_recv() {
                Ok(None) => self.bell.wait(word, 1),
                r => {
                    word.store(0, Ordering::Relaxed);
                    if let Some(m) = r? {
                        return Ok(m);
                    }
                }
            }
        }
    }
}

/// The word a server with many inbound channels sleeps on (an eventcount): a sender that finds
/// its channel's receiver asleep bumps it and wakes it ([`EventCount::notify`], from the
/// sender's [`Doorbell`]), and [`wait_any`] sleeps while it holds the value seen before the
/// server last looked at its channels. All-zero memory is a new one.
#[repr(C)]
pub struct EventCount {
    count: AtomicU32,
}

impl Default for EventCount {
    fn default() -> Self {
        Self::new()
    }
}

impl EventCount {
    /// A new eventcount.
    pub fn new() -> Self {
        EventCount {
            count: AtomicU32::new(0),
        }
    }

    /// Announces a message (or a close) to the server and wakes it: what a sender's doorbell
    /// does for a channel into a server with many channels.
    pub fn notify(&self, bell: &impl Doorbell) {
        self.count.fetch_add(1, Ordering::SeqCst);
        bell.wake(&self.count);
    }
}

/// A server's idle step (fos §3.2.3: one run loop over all inbound channels): returns at once
/// if one of `channels` has a message or a closed sender, else marks itself asleep on every
/// channel, looks once more, and sleeps on `events` until a sender notifies it. Returns early
/// on a spurious wake-up; the caller looks at its channels again either way.
pub fn wait_any<const N: usize>(
    channels: &[&Channel<N>],
    events: &EventCount,
    bell: &impl Doorbell,
) {
    let pending = || channels.iter().any(|c| c.ready() || c.sender_closed());
    if pending() {
        return;
    }
    let seen = events.count.load(Ordering::Acquire);
    for c in channels {
        c.rx.sleeping.store(1, Ordering::Relaxed);
    }
    fence(Ordering::SeqCst);
    if !pending() {
        bell.wait(&events.count, seen);
    }
    for c in channels {
        c.rx.sleeping.store(0, Ordering::Relaxed);
    }
}
