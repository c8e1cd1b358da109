//! Allocation logic of Reef's physical frame allocator.
//!
//! Reef follows the design of NrOS (Bhardwaj et al., OSDI '21, §4.1). Physical memory is not
//! managed through node replication: every replica must see the *same* frames, so frames are
//! allocated up front, outside the replicated operation. At boot the kernel learns which physical
//! ranges belong to which NUMA node and hands each range to that node's [`NCache`]. The NCache
//! statically partitions its memory into two classes, 4 KiB ([`FrameSize::Base`]) and 2 MiB
//! ([`FrameSize::Large`]) frames. Every core has a [`TCache`] holding a few frames of each class
//! for fast, contention-free allocation; when it is empty it refills a batch from its *local*
//! NCache, and when it is full it spills a batch back, like the frontend and backend of a slab
//! allocator.
//!
//! # Division of labour
//!
//! This crate contains only the allocation *logic* and no `unsafe` code. The NCache keeps its
//! free frames in intrusive singly-linked stacks whose link words are stored in the free frames
//! themselves, so it needs no storage of its own and has no capacity limit. Reading and writing
//! those link words is the kernel's job: it implements [`FrameLinks`] over its direct map of
//! physical memory. Host tests implement it with a map.
//!
//! The structures are sequential (`&mut self`): the kernel wraps each NCache in a lock and keeps
//! each TCache in per-core data, so the lock is taken once per batch, not once per frame.
//!
//! # Errors
//!
//! Running out of memory is an ordinary [`AllocError::OutOfMemory`] value, never a panic; misuse
//! that can be detected cheaply (a frame or TCache of the wrong node) is reported as an error
//! without changing any state. All address arithmetic is checked, so ranges that are empty,
//! inverted, unaligned, smaller than a page, start at 0 or end at the top of the 64-bit space
//! are handled.
//!
//! # Example
//!
//! ```
//! use frames::{FrameLinks, FrameSize, NCache, PhysRange, TCache};
//! use std::collections::HashMap;
//!
//! /// Stands in for the kernel's direct map.
//! #[derive(Default)]
//! struct Links(HashMap<u64, u64>);
//!
//! impl FrameLinks for Links {
//!     fn write_next(&mut self, frame_base: u64, next: u64) {
//!         self.0.insert(frame_base, next);
//!     }
//!     fn read_next(&self, frame_base: u64) -> u64 {
//!         self.0[&frame_base]
//!     }
//! }
//!
//! let mut links = Links::default();
//! let mut ncache = NCache::new(0);
//! // 4 KiB + 2 MiB + 4 KiB, unaligned at both ends.
//! let carving = ncache.add_range(&mut links, PhysRange::new(0x1f_f000, 0x40_1000));
//! assert_eq!((carving.base_frames(), carving.large_frames()), (2, 1));
//!
//! let mut tcache: TCache = TCache::new(0);
//! let frame = tcache.allocate_base(&mut ncache, &mut links)?;
//! assert_eq!(frame.size(), FrameSize::Base);
//! tcache.release(&mut ncache, &mut links, frame)?;
//! tcache.drain_into(&mut ncache, &mut links)?;
//! assert_eq!(ncache.free_bytes(), ncache.total_bytes());
//! # Ok::<(), frames::AllocError>(())
//! ```

#![no_std]
#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod error;
mod frame;
mod links;
mod ncache;
mod tcache;

pub use error::AllocError;
pub use frame::{
    Carving, Frame, FrameSize, PhysRange, BASE_FRAMES_PER_LARGE, BASE_PAGE_SIZE, LARGE_PAGE_SIZE,
};
pub use links::FrameLinks;
pub use ncache::NCache;
pub use tcache::{TCache, TCACHE_BASE_CAPACITY, TCACHE_LARGE_CAPACITY};
