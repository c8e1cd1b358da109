//! Message channels between cores, after fos (*Factored Operating Systems*, OSR '09, §3.2.1)
//! and Barrelfish's UMP transport: the transport under Reef's mailboxes, fleets and servers.
//!
//! `no_std`, no `unsafe`; the channel allocates nothing (the name directory does, fallibly);
//! used by the kernel and, through the C header
//! `usr/include/reef_msg.h` that mirrors its layout, by user programs.
//!
//! # Channel
//!
//! A [`Channel`] is a one-way ring of `N` [`Slot`]s of 64 bytes (one cache line) in memory
//! shared by exactly two parties, one [`Sender`] and one [`Receiver`]. A slot holds a header
//! word and 56 bytes of payload. The sender fills a slot, then publishes it by storing its
//! header (release) with the slot's sequence number; the receiver polls the header of the next
//! slot until the sequence number it expects appears (acquire), copies the payload out, and
//! advances its `head` counter, which tells the sender that the slot is free again. No lock, no
//! read-modify-write and no system call on this path; the sender reads `head` only when its
//! cached copy says the ring is full. A full ring is reported to the sender ([`SendError::Full`],
//! fos: "if a receive mailbox is full, the sending client's send call returns an error"), and
//! [`Sender::send`] waits instead.
//!
//! All-zero memory is an empty, open channel, so a freshly zeroed shared page is one. Every
//! shared word is an atomic, so a peer that writes garbage, or races, produces wrong messages
//! ([`RecvError::Corrupt`] where it can be seen) but never undefined behaviour in the other
//! party.
//!
//! # Sleeping and waking
//!
//! A receiver with nothing to read polls the ring [`SPIN_POLLS`] times (a sender on another
//! core usually answers by then), then sleeps; the sender wakes it only if it sleeps, so a busy stream needs no
//! wake-up at all (LibrettOS's `threads` counter, Barrelfish's UMP with a notification only for a
//! blocked receiver). The receiver sets its `sleeping` word, issues a full fence, looks at the
//! ring once more and only then sleeps on the word; the sender publishes a message, issues a
//! full fence and looks at the word: one of the two sees the other's write, so no wake-up is
//! lost (the loom models check this). Sleeping and waking are the caller's, through a
//! [`Doorbell`]: in Reef a futex-like kernel call (sleep while the word holds a value, wake the
//! sleepers of the word); in the host tests a mutex and condition variable. A sender that
//! waits for space does the same with the sender's word.
//!
//! A server with many inbound channels (one per client connection) sleeps on one
//! [`EventCount`] instead: [`wait_any`] marks it asleep on every channel, looks once more and
//! sleeps while the eventcount is unchanged; a sender that finds it asleep bumps the
//! eventcount and wakes it (its [`Doorbell`] calls [`EventCount::notify`]).
//!
//! # Closing
//!
//! Either side, or the kernel on its behalf when its process dies, closes its end
//! ([`Channel::close_receiver`], [`Channel::close_sender`]) and wakes the other: a sender then
//! gets [`SendError::Closed`], a receiver gets the messages still in the ring and then
//! [`RecvError::Closed`]. Nobody waits for a party that is gone.
//!
//! # Larger data
//!
//! A message carries at most [`PAYLOAD`] bytes. Larger data travels by reference: a [`Grant`]
//! names frames that the sender shared with the receiver through the kernel (which checks
//! that the grant was made to the receiver), with an offset and a length, and goes through the
//! ring as a message with the [`Message::is_grant`] flag.
//!
//! # Connections
//!
//! Two channels in opposite directions make a [`Connection`]; [`PageChannel`] (one 4 KiB page,
//! [`PAGE_SLOTS`] slots) is the size Reef's mailboxes use.
//!
//! # Servers
//!
//! [`server`] is fos's server structure: a run loop over a server's channels, answers before
//! requests, and continuations kept while a transaction waits for another server.
//!
//! # Names
//!
//! [`names`] is the directory of mailbox names (one-to-many, nearest or round-robin lookups,
//! a reserved prefix for the fleet manager) and the per-core name cache.

#![no_std]
#![forbid(unsafe_code)]
#![deny(missing_docs)]

extern crate alloc;

mod channel;
mod grant;
mod message;
pub mod names;
pub mod server;
mod sync;

pub use channel::{
    wait_any, Channel, Connection, Doorbell, EventCount, Receiver, RecvError, SendError, Sender,
    Slot, PAGE_SLOTS, SPIN_POLLS,
};
pub use grant::Grant;
pub use message::{Message, TooLong, PAYLOAD};

/// The channel of one 4 KiB page: two control lines and [`PAGE_SLOTS`] slots.
pub type PageChannel = Channel<PAGE_SLOTS>;
