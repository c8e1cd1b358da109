//! Hare: a POSIX file system served by a fleet of file servers, after *Hare: a file system
//! for non-cache-coherent multicores* (Gruenwald, Sironi, Kaashoek, Zeldovich; EuroSys '15 and
//! Gruenwald's 2014 thesis, chapter 3). This crate is the protocol and the two state machines;
//! Reef runs the servers as a fos fleet (`usr/hared.c`, through the C ABI of `usr/hare/`),
//! and the client library in the kernel behind `mount -t hare` (`kernel/src/fs/hare/`)
//! and in user space for `usr/haretest.c`.
//!
//! `no_std` + `alloc`, stable Rust, no `unsafe`.
//!
//! * [`proto`]: the RPCs of the thesis's Table 4.2 as typed [`Request`]s and [`Reply`]s, and
//!   the [`Invalidation`]s servers send to clients that cache a removed entry (§3.7.1).
//! * [`Server`]: one file server, a sequential state machine: its inodes, its share of the
//!   directories, open-file counts (§3.5), free buffer-cache blocks (§3.3), rmdir holds and
//!   marks (§3.4.1), and who caches which entry.
//! * [`Client`]: the client library, Linux's file calls as `async` sequences of requests
//!   over a [`Transport`], with a lookup cache and path resolution by NR-FS's walker, data
//!   copied directly to and from a [`BufferCache`].
//! * [`wire`]: requests and replies as `msg` channel messages, with a page of a granted pool
//!   beside each for names, block lists and directory batches.
//! * [`ShardTable`]: where inodes and entries live. Entries of a distributed directory are
//!   spread by name hash (§3.4); entries and inodes hash to 256 shards mapped to servers, so
//!   that the number of servers can change by moving whole shards (§6.1.1,
//!   [`ShardTable::resized`]).
//! * [`resize`]: the servers' part and the resizer's part of that move, in messages: a
//!   shard's state leaves its old owner and reaches its new one in parts ([`ShardState`]),
//!   carried by a [`Courier`] (Reef's kernel).
//!
//! The host tests run several servers and clients with messages delivered in an order
//! proptest chooses and compare every answer with NR-FS's sequential `FileSystem`.
//!
//! Not built yet: block lists kept by the client between reads and writes (each asks the
//! server), a shared description going back to local when one descriptor is left, and a
//! resize while requests are in flight (docs/plans.md).
#![no_std]
#![forbid(unsafe_code)]
#![deny(missing_docs)]

extern crate alloc;

mod client;
pub mod proto;
pub mod resize;
mod server;
mod shard;
pub mod wire;

pub use client::{
    BufferCache, Client, ClientStats, Fd, OpenFlags, Policy, SetAttr, SharedFd, Space, Techniques,
    Transport, LISTING_BYTES_KEPT, READ_AHEAD,
};
pub use nrfs::{Attrs, Ino, Kind, Stat, Timespec, NAME_MAX, ROOT_INO};
pub use proto::{Entry, Invalidation, Listing, Reply, Request, Target};
pub use resize::{Courier, ShardState};
pub use server::{DataCopy, Handled, Server, ServerStats, LISTERS_MAX};
pub use shard::{entry_shard, inode_shard, Shard, ShardTable, SHARDS};

/// A file server's number in the fleet.
pub type ServerId = u16;

/// A client library instance (in Reef, one per core).
pub type ClientId = u32;

/// A block of the shared buffer cache.
pub type Block = u32;

/// Size of a buffer-cache block (a page).
pub const BLOCK_SIZE: usize = nrfs::PAGE_SIZE;

/// The pages (block indices in a file) holding `len` bytes at byte `at` (`at + len` at most
/// `u64::MAX`).
pub fn pages_of(at: u64, len: u64) -> core::ops::Range<u64> {
    let page = BLOCK_SIZE as u64;
    at / page..(at + len).div_ceil(page)
}

/// Runs a [`Client`] operation to completion over a synchronous [`Transport`] (one whose
/// `call` has its reply before it returns, as Reef's kernel and `usr/hare` have): the future
/// is ready at its first poll. Panics if it is not (a transport that is not synchronous).
pub fn run_ready<T>(f: impl core::future::Future<Output = T>) -> T {
    use core::task::{Context, Poll, Waker};
    let mut f = core::pin::pin!(f);
    match f.as_mut().poll(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(v) => v,
        Poll::Pending => panic!("a future of a synchronous transport is pending"),
    }
}
