//! The per-core frame cache.

use crate::error::AllocError;
use crate::frame::{Frame, FrameSize, BASE_PAGE_SIZE, LARGE_PAGE_SIZE};
use crate::links::FrameLinks;
use crate::ncache::NCache;

/// Default number of 4 KiB frames a [`TCache`] holds.
pub const TCACHE_BASE_CAPACITY: usize = 64;

/// Default number of 2 MiB frames a [`TCache`] holds.
pub const TCACHE_LARGE_CAPACITY: usize = 8;

/// The frame cache of one core (NrOS §4.1): a small frontend in front of its node's
/// [`NCache`].
///
/// A TCache holds up to `BASE` 4 KiB and `LARGE` 2 MiB frames in fixed arrays (no heap, no
/// links in the frames). Allocation and release are served locally; only when the TCache runs
/// empty does it refill a batch of half its capacity from the NCache, and only when it is full
/// does it spill half back. The core therefore takes the NCache's lock once per batch rather
/// than once per frame, and frames just released are handed out again while still warm in the
/// core's cache.
///
/// A TCache belongs to the node given to [`new`](TCache::new) for its whole life. Every
/// operation that takes an NCache first checks that it is the NCache of that node and fails
/// with [`AllocError::NodeMismatch`] (changing nothing) otherwise, so frames never migrate
/// between nodes through a TCache. Frames cached here are not counted as free by the NCache;
/// call [`drain_into`](TCache::drain_into) when the core stops (or to reclaim memory when the
/// node is out of memory).
///
/// Both capacities must be at least 1; this is checked at compile time.
#[derive(Debug)]
pub struct TCache<
    const BASE: usize = TCACHE_BASE_CAPACITY,
    const LARGE: usize = TCACHE_LARGE_CAPACITY,
> {
    node: usize,
    base: FrameArray<BASE>,
    large: FrameArray<LARGE>,
}

impl<const BASE: usize, const LARGE: usize> TCache<BASE, LARGE> {
    /// Number of 4 KiB frames this TCache can hold.
    pub const BASE_CAPACITY: usize = BASE;

    /// Number of 2 MiB frames this TCache can hold.
    pub const LARGE_CAPACITY: usize = LARGE;

    /// Rejects zero capacities at compile time (evaluated when [`TCache::new`] is instantiated).
    const CAPACITIES_OK: () = assert!(
        BASE >= 1 && LARGE >= 1,
        "TCache capacities must be at least 1"
    );

    /// Creates an empty TCache for a core of NUMA node `node`.
    pub const fn new(node: usize) -> Self {
        let () = Self::CAPACITIES_OK;
        TCache {
            node,
            base: FrameArray::new(),
            large: FrameArray::new(),
        }
    }

    /// NUMA node this TCache belongs to.
    pub const fn node(&self) -> usize {
        self.node
    }

    /// Allocates a frame of class `size`; see [`allocate_base`](TCache::allocate_base) and
    /// [`allocate_large`](TCache::allocate_large).
    pub fn allocate<L: FrameLinks + ?Sized>(
        &mut self,
        ncache: &mut NCache,
        links: &mut L,
        size: FrameSize,
    ) -> Result<Frame, AllocError> {
        self.check_ncache(ncache)?;
        match size {
            FrameSize::Base => self.base.allocate(ncache, links, size),
            FrameSize::Large => self.large.allocate(ncache, links, size),
        }
    }

    /// Allocates a 4 KiB frame, refilling half the base capacity from `ncache` if the TCache
    /// holds none (the NCache splits a large frame if needed). Fails with
    /// [`AllocError::OutOfMemory`] if neither holds a frame, or [`AllocError::NodeMismatch`] if
    /// `ncache` is not this TCache's node.
    pub fn allocate_base<L: FrameLinks + ?Sized>(
        &mut self,
        ncache: &mut NCache,
        links: &mut L,
    ) -> Result<Frame, AllocError> {
        self.allocate(ncache, links, FrameSize::Base)
    }

    /// Allocates a 2 MiB frame, refilling half the large capacity from `ncache` if the TCache
    /// holds none. Fails with [`AllocError::OutOfMemory`] if neither holds a large frame, or
    /// [`AllocError::NodeMismatch`] if `ncache` is not this TCache's node.
    pub fn allocate_large<L: FrameLinks + ?Sized>(
        &mut self,
        ncache: &mut NCache,
        links: &mut L,
    ) -> Result<Frame, AllocError> {
        self.allocate(ncache, links, FrameSize::Large)
    }

    /// Caches `frame` for reuse. If the TCache is full for that class, half of its capacity is
    /// first spilled back to `ncache`. Fails, changing nothing, with
    /// [`AllocError::NodeMismatch`] if `ncache` is not this TCache's node or
    /// [`AllocError::ForeignFrame`] if `frame` belongs to another node.
    pub fn release<L: FrameLinks + ?Sized>(
        &mut self,
        ncache: &mut NCache,
        links: &mut L,
        frame: Frame,
    ) -> Result<(), AllocError> {
        self.check_ncache(ncache)?;
        if frame.node() != self.node {
            return Err(AllocError::ForeignFrame {
                node: self.node,
                frame,
            });
        }
        match frame.size() {
            FrameSize::Base => self.base.release(ncache, links, frame),
            FrameSize::Large => self.large.release(ncache, links, frame),
        }
        Ok(())
    }

    /// The fast path of allocation: a cached frame of class `size`, without touching the
    /// NCache (so without its node-wide lock); `None` when none is cached and the caller must
    /// go through [`allocate`](TCache::allocate).
    pub fn take(&mut self, size: FrameSize) -> Option<Frame> {
        let base = match size {
            FrameSize::Base => self.base.pop(),
            FrameSize::Large => self.large.pop(),
        }?;
        Some(Frame::from_valid(base, size, self.node))
    }

    /// The fast path of release: caches `frame` without touching the NCache if it is of this
    /// node and there is room; otherwise hands it back for [`release`](TCache::release).
    pub fn keep(&mut self, frame: Frame) -> Result<(), Frame> {
        let array_full = match frame.size() {
            FrameSize::Base => self.base.is_full(),
            FrameSize::Large => self.large.is_full(),
        };
        if frame.node() != self.node || array_full {
            return Err(frame);
        }
        match frame.size() {
            FrameSize::Base => self.base.push(frame.base()),
            FrameSize::Large => self.large.push(frame.base()),
        }
        Ok(())
    }

    /// Returns every cached frame to `ncache`, leaving the TCache empty. Fails, changing
    /// nothing, with [`AllocError::NodeMismatch`] if `ncache` is not this TCache's node.
    pub fn drain_into<L: FrameLinks + ?Sized>(
        &mut self,
        ncache: &mut NCache,
        links: &mut L,
    ) -> Result<(), AllocError> {
        self.check_ncache(ncache)?;
        while let Some(base) = self.base.pop() {
            ncache.push(links, base, FrameSize::Base);
        }
        while let Some(base) = self.large.pop() {
            ncache.push(links, base, FrameSize::Large);
        }
        Ok(())
    }

    /// Number of cached 4 KiB frames.
    pub const fn cached_base(&self) -> usize {
        self.base.len
    }

    /// Number of cached 2 MiB frames.
    pub const fn cached_large(&self) -> usize {
        self.large.len
    }

    /// Bytes in cached frames of both classes.
    pub const fn cached_bytes(&self) -> u64 {
        self.base.len as u64 * BASE_PAGE_SIZE + self.large.len as u64 * LARGE_PAGE_SIZE
    }

    /// Fails unless `ncache` serves this TCache's node.
    fn check_ncache(&self, ncache: &NCache) -> Result<(), AllocError> {
        if ncache.node() == self.node {
            Ok(())
        } else {
            Err(AllocError::NodeMismatch {
                tcache: self.node,
                ncache: ncache.node(),
            })
        }
    }
}

/// A fixed-capacity LIFO stack of frame base addresses of one class.
#[derive(Debug)]
struct FrameArray<const N: usize> {
    frames: [u64; N],
    len: usize,
}

impl<const N: usize> FrameArray<N> {
    /// An empty array.
    const fn new() -> Self {
        FrameArray {
            frames: [0; N],
            len: 0,
        }
    }

    /// Frames moved per refill or spill: half the capacity, at least one.
    const fn batch(&self) -> usize {
        N.div_ceil(2)
    }

    /// Whether no frame is cached.
    const fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Whether the capacity is reached.
    const fn is_full(&self) -> bool {
        self.len == N
    }

    /// Pops a frame of class `size`, first refilling half the capacity from `ncache` (which the
    /// caller has checked is of the right node) if the array is empty.
    fn allocate<L: FrameLinks + ?Sized>(
        &mut self,
        ncache: &mut NCache,
        links: &mut L,
        size: FrameSize,
    ) -> Result<Frame, AllocError> {
        if self.is_empty() {
            // A partial refill is fine; an empty one means the node is out of memory.
            for _ in 0..self.batch() {
                match ncache.allocate(links, size) {
                    Ok(frame) => self.push(frame.base()),
                    Err(_) => break,
                }
            }
        }
        let node = ncache.node();
        match self.pop() {
            Some(base) => Ok(Frame::from_valid(base, size, node)),
            None => Err(AllocError::OutOfMemory { node, size }),
        }
    }

    /// Pushes `frame` (already checked to be of the right node), first spilling half the
    /// capacity to `ncache` if the array is full.
    fn release<L: FrameLinks + ?Sized>(
        &mut self,
        ncache: &mut NCache,
        links: &mut L,
        frame: Frame,
    ) {
        if self.is_full() {
            for _ in 0..self.batch() {
                if let Some(base) = self.pop() {
                    ncache.push(links, base, frame.size());
                }
            }
        }
        self.push(frame.base());
    }

    /// Pushes a frame; the caller has made room.
    fn push(&mut self, base: u64) {
        self.frames[self.len] = base;
        self.len += 1;
    }

    /// Pops the most recently pushed frame, if any.
    fn pop(&mut self) -> Option<u64> {
        self.len = self.len.checked_sub(1)?;
        Some(self.frames[self.len])
    }
}
