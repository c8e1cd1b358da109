//! The per-NUMA-node frame cache.

use crate::error::AllocError;
use crate::frame::{Carving, Frame, FrameSize, PhysRange, BASE_PAGE_SIZE, LARGE_PAGE_SIZE};
use crate::links::{FrameLinks, FreeStack};

/// The frame cache of one NUMA node (NrOS §4.1): the backend that owns all of a node's free
/// physical memory.
///
/// Free frames are kept in two LIFO stacks, one of 4 KiB and one of 2 MiB frames, linked through
/// the frames themselves via [`FrameLinks`]; the NCache itself is a few words and has no capacity
/// limit. Allocation and release are O(1), except that [`allocate_base`](NCache::allocate_base)
/// splits a large frame into 512 base frames (512 link writes) when no base frame is left.
///
/// # No coalescing
///
/// Base frames are never merged back into large frames. Finding out whether all 512 base frames
/// of a 2 MiB block are free again would need per-block state (a bitmap or buddy metadata) that
/// this storage-free design deliberately avoids, or an O(n) walk of the free list on every
/// release. Like NrOS, the NCache statically partitions memory into the two classes; memory only
/// flows from the large class to the base class, on demand. Callers that need large frames late
/// in the system's life should reserve them early.
///
/// # Contract
///
/// The ranges given to [`add_range`](NCache::add_range) must be disjoint from each other and
/// from the ranges of every other NCache, and a frame may only be released once, to the NCache
/// (or a TCache of the node) it was allocated from. The NCache cannot detect violations without
/// per-frame storage; they cause the same memory to be handed out twice.
///
/// The NCache is a plain sequential structure (`&mut self`); the kernel protects each node's
/// NCache with a lock and lets per-core [`TCache`](crate::TCache)s absorb most traffic.
#[derive(Debug)]
pub struct NCache {
    node: usize,
    base: FreeStack,
    large: FreeStack,
    total_bytes: u64,
    kept_large: usize,
}

impl NCache {
    /// Creates an empty NCache for NUMA node `node`.
    pub const fn new(node: usize) -> NCache {
        NCache {
            node,
            base: FreeStack::new(),
            large: FreeStack::new(),
            total_bytes: 0,
            kept_large: 0,
        }
    }

    /// NUMA node this NCache serves; every frame it hands out carries this node.
    pub const fn node(&self) -> usize {
        self.node
    }

    /// Adds the free physical memory in `range` to the cache and returns how it was carved.
    ///
    /// The range is split as described by [`PhysRange::carve`]: 2 MiB-aligned blocks become
    /// large frames, the unaligned 4 KiB head and tail become base frames, and partial 4 KiB
    /// pages at the edges are skipped. Empty, inverted or tiny ranges add nothing. Frames are
    /// pushed so that the lowest addresses are allocated first. This writes the link word of
    /// every added frame (see [`FrameLinks`]); the range must not overlap memory already added
    /// to any NCache.
    pub fn add_range<L: FrameLinks + ?Sized>(
        &mut self,
        links: &mut L,
        range: PhysRange,
    ) -> Carving {
        let carving = range.carve();
        push_descending(&mut self.base, links, carving.tail, BASE_PAGE_SIZE);
        push_descending(&mut self.large, links, carving.large, LARGE_PAGE_SIZE);
        push_descending(&mut self.base, links, carving.head, BASE_PAGE_SIZE);
        // Disjoint ranges (the contract) cannot sum past u64::MAX; saturate rather than wrap if
        // the contract is broken.
        self.total_bytes = self.total_bytes.saturating_add(carving.bytes());
        carving
    }

    /// Allocates a frame of class `size`; see [`allocate_base`](NCache::allocate_base) and
    /// [`allocate_large`](NCache::allocate_large).
    pub fn allocate<L: FrameLinks + ?Sized>(
        &mut self,
        links: &mut L,
        size: FrameSize,
    ) -> Result<Frame, AllocError> {
        match size {
            FrameSize::Base => self.allocate_base(links),
            FrameSize::Large => self.allocate_large(links),
        }
    }

    /// Allocates a 4 KiB frame, splitting a 2 MiB frame when no 4 KiB frame is left, but
    /// never one of the last [`kept_large`](NCache::set_kept_large) 2 MiB frames:
    /// `OutOfMemory` instead. This is the path of memory a program asks for (through the
    /// TCaches), so that a node full of 4 KiB user pages still has whole 2 MiB frames for the
    /// kernel's heap.
    pub fn allocate_base<L: FrameLinks + ?Sized>(
        &mut self,
        links: &mut L,
    ) -> Result<Frame, AllocError> {
        if self.base.len() == 0 && self.large.len() <= self.kept_large {
            return Err(self.out_of_memory(FrameSize::Base));
        }
        self.allocate_base_any(links)
    }

    /// Allocates a 4 KiB frame like [`allocate_base`](NCache::allocate_base), but may split
    /// the kept 2 MiB frames too (the kernel's own page tables and small heap growth).
    pub fn allocate_base_any<L: FrameLinks + ?Sized>(
        &mut self,
        links: &mut L,
    ) -> Result<Frame, AllocError> {
        let base = match self.base.pop(links) {
            Some(base) => base,
            None => {
                let large = self
                    .large
                    .pop(links)
                    .ok_or(self.out_of_memory(FrameSize::Base))?;
                let rest = PhysRange::new(large + BASE_PAGE_SIZE, large + LARGE_PAGE_SIZE);
                push_descending(&mut self.base, links, rest, BASE_PAGE_SIZE);
                large
            }
        };
        Ok(self.frame(base, FrameSize::Base))
    }

    /// Sets how many free 2 MiB frames [`allocate_base`](NCache::allocate_base) leaves whole
    /// (0 at first). 4 KiB frames are never merged back into 2 MiB frames, so without this a
    /// node whose memory was once all handed out in 4 KiB pages has no 2 MiB frame again.
    pub fn set_kept_large(&mut self, frames: usize) {
        self.kept_large = frames;
    }

    /// Allocates a 2 MiB frame. Fails with [`AllocError::OutOfMemory`] if no large frame is
    /// free, even if 512 or more base frames are (they are never coalesced; see the type docs).
    pub fn allocate_large<L: FrameLinks + ?Sized>(
        &mut self,
        links: &mut L,
    ) -> Result<Frame, AllocError> {
        let base = self
            .large
            .pop(links)
            .ok_or(self.out_of_memory(FrameSize::Large))?;
        Ok(self.frame(base, FrameSize::Large))
    }

    /// Returns `frame` to the cache. A frame of another node is rejected with
    /// [`AllocError::ForeignFrame`] (which carries the frame back) and the cache is unchanged.
    pub fn release<L: FrameLinks + ?Sized>(
        &mut self,
        links: &mut L,
        frame: Frame,
    ) -> Result<(), AllocError> {
        if frame.node() != self.node {
            return Err(AllocError::ForeignFrame {
                node: self.node,
                frame,
            });
        }
        self.push(links, frame.base(), frame.size());
        Ok(())
    }

    /// Number of free 4 KiB frames.
    pub const fn free_base(&self) -> usize {
        self.base.len()
    }

    /// Number of free 2 MiB frames.
    pub const fn free_large(&self) -> usize {
        self.large.len()
    }

    /// Bytes in free frames of both classes.
    pub const fn free_bytes(&self) -> u64 {
        // Free frames are disjoint parts of the added ranges, so this is at most `total_bytes`
        // under the contract; saturate rather than wrap if it is broken.
        (self.base.len() as u64 * BASE_PAGE_SIZE)
            .saturating_add(self.large.len() as u64 * LARGE_PAGE_SIZE)
    }

    /// Bytes of all frames ever added with [`add_range`](NCache::add_range), free or not.
    pub const fn total_bytes(&self) -> u64 {
        self.total_bytes
    }

    /// Pushes a free frame of this node; the caller has checked the node.
    pub(crate) fn push<L: FrameLinks + ?Sized>(
        &mut self,
        links: &mut L,
        base: u64,
        size: FrameSize,
    ) {
        match size {
            FrameSize::Base => self.base.push(links, base),
            FrameSize::Large => self.large.push(links, base),
        }
    }

    /// Builds the descriptor of a frame popped from one of the stacks.
    ///
    /// # Panics
    ///
    /// Only aligned frames inside added ranges (which end at or below `u64::MAX`) are ever
    /// pushed, so this panics only if the [`FrameLinks`] implementation broke its contract and
    /// returned a link that was never written.
    fn frame(&self, base: u64, size: FrameSize) -> Frame {
        Frame::new(base, size, self.node).expect("free list corrupted: invalid frame address")
    }

    /// The out-of-memory error for this node.
    const fn out_of_memory(&self, size: FrameSize) -> AllocError {
        AllocError::OutOfMemory {
            node: self.node,
            size,
        }
    }
}

/// Pushes every `step`-sized frame of the `step`-aligned `range` onto `stack`, highest address
/// first, so that the lowest address ends up on top.
fn push_descending<L: FrameLinks + ?Sized>(
    stack: &mut FreeStack,
    links: &mut L,
    range: PhysRange,
    step: u64,
) {
    let mut addr = range.end;
    while addr > range.base {
        addr -= step;
        stack.push(links, addr);
    }
}
