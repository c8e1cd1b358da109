//! Frame sizes, frames and physical address ranges.

use core::fmt;

/// Size in bytes of a base (4 KiB) page frame.
pub const BASE_PAGE_SIZE: u64 = 4096;

/// Size in bytes of a large (2 MiB) page frame.
pub const LARGE_PAGE_SIZE: u64 = 2 * 1024 * 1024;

/// Number of base frames a large frame is split into.
pub const BASE_FRAMES_PER_LARGE: usize = (LARGE_PAGE_SIZE / BASE_PAGE_SIZE) as usize;

/// The two frame classes the allocator hands out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum FrameSize {
    /// A 4 KiB frame ([`BASE_PAGE_SIZE`]), aligned to 4 KiB.
    Base,
    /// A 2 MiB frame ([`LARGE_PAGE_SIZE`]), aligned to 2 MiB.
    Large,
}

impl FrameSize {
    /// Size of a frame of this class in bytes; frames are aligned to their size.
    pub const fn bytes(self) -> u64 {
        match self {
            FrameSize::Base => BASE_PAGE_SIZE,
            FrameSize::Large => LARGE_PAGE_SIZE,
        }
    }
}

impl fmt::Display for FrameSize {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FrameSize::Base => f.write_str("4 KiB"),
            FrameSize::Large => f.write_str("2 MiB"),
        }
    }
}

/// A physical page frame owned by whoever holds this value.
///
/// Invariants (enforced by [`Frame::new`], the only constructor): `base` is aligned to
/// `size.bytes()` and `base + size.bytes()` does not overflow, so [`Frame::end`] is always
/// representable. `node` is the NUMA node whose [`NCache`](crate::NCache) the frame belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Frame {
    base: u64,
    size: FrameSize,
    node: usize,
}

impl Frame {
    /// Creates a frame descriptor, or `None` if `base` is not aligned to `size` or the frame
    /// would extend past the end of the 64-bit physical address space.
    ///
    /// The kernel uses this to rebuild a [`Frame`] it recorded elsewhere (for example in a page
    /// table) before releasing it.
    pub const fn new(base: u64, size: FrameSize, node: usize) -> Option<Frame> {
        if base % size.bytes() != 0 || base.checked_add(size.bytes()).is_none() {
            return None;
        }
        Some(Frame { base, size, node })
    }

    /// Rebuilds a frame from the parts of a [`Frame`] that was valid (used by caches that store
    /// only base addresses).
    pub(crate) const fn from_valid(base: u64, size: FrameSize, node: usize) -> Frame {
        debug_assert!(Frame::new(base, size, node).is_some());
        Frame { base, size, node }
    }

    /// Physical address of the first byte of the frame.
    pub const fn base(&self) -> u64 {
        self.base
    }

    /// Size class of the frame.
    pub const fn size(&self) -> FrameSize {
        self.size
    }

    /// NUMA node the frame belongs to.
    pub const fn node(&self) -> usize {
        self.node
    }

    /// Physical address one past the last byte of the frame.
    pub const fn end(&self) -> u64 {
        // Cannot overflow: checked in `Frame::new`.
        self.base + self.size.bytes()
    }

    /// The physical range covered by the frame.
    pub const fn range(&self) -> PhysRange {
        PhysRange::new(self.base, self.end())
    }
}

impl fmt::Display for Frame {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} frame {:#x} on node {}",
            self.size, self.base, self.node
        )
    }
}

/// A half-open physical address range `[base, end)`.
///
/// A range with `end <= base` is empty. Ranges need not be aligned; the allocator only uses the
/// whole 4 KiB frames inside them (see [`PhysRange::carve`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct PhysRange {
    /// Physical address of the first byte of the range.
    pub base: u64,
    /// Physical address one past the last byte of the range (exclusive).
    pub end: u64,
}

impl PhysRange {
    /// The empty range at address 0.
    pub const EMPTY: PhysRange = PhysRange::new(0, 0);

    /// Creates the range `[base, end)`.
    pub const fn new(base: u64, end: u64) -> PhysRange {
        PhysRange { base, end }
    }

    /// Creates the range of `len` bytes starting at `base`, as firmware memory maps describe
    /// regions. The end is clamped to `u64::MAX` (exclusive) instead of overflowing.
    pub const fn from_base_len(base: u64, len: u64) -> PhysRange {
        PhysRange::new(base, base.saturating_add(len))
    }

    /// Number of bytes in the range (0 if empty).
    pub const fn len(&self) -> u64 {
        self.end.saturating_sub(self.base)
    }

    /// Whether the range contains no byte.
    pub const fn is_empty(&self) -> bool {
        self.end <= self.base
    }

    /// Whether `addr` lies inside the range.
    pub const fn contains(&self, addr: u64) -> bool {
        self.base <= addr && addr < self.end
    }

    /// Whether `other` lies entirely inside this range (an empty `other` always does).
    pub const fn contains_range(&self, other: &PhysRange) -> bool {
        other.is_empty() || (self.base <= other.base && other.end <= self.end)
    }

    /// Splits the range into the frames [`NCache::add_range`](crate::NCache::add_range) adds.
    ///
    /// The range is first shrunk to whole 4 KiB frames (partial pages at either edge are
    /// skipped). Every 2 MiB-aligned 2 MiB block inside it becomes a large frame (`large`); the
    /// 4 KiB frames before the first such block (`head`) and after the last one (`tail`) become
    /// base frames. If the range holds no whole 2 MiB-aligned block, all of it is `head`.
    /// No arithmetic here can overflow, whatever the range.
    pub const fn carve(&self) -> Carving {
        let (start, end) = match (align_up(self.base, BASE_PAGE_SIZE), self.end) {
            (Some(start), end) => (start, align_down(end, BASE_PAGE_SIZE)),
            (None, _) => return Carving::EMPTY,
        };
        if start >= end {
            return Carving::EMPTY;
        }
        let large_end = align_down(end, LARGE_PAGE_SIZE);
        match align_up(start, LARGE_PAGE_SIZE) {
            Some(large_start) if large_start < large_end => Carving {
                head: PhysRange::new(start, large_start),
                large: PhysRange::new(large_start, large_end),
                tail: PhysRange::new(large_end, end),
            },
            _ => Carving {
                head: PhysRange::new(start, end),
                large: PhysRange::EMPTY,
                tail: PhysRange::EMPTY,
            },
        }
    }
}

/// How a [`PhysRange`] is split into frames; returned by [`PhysRange::carve`] and
/// [`NCache::add_range`](crate::NCache::add_range).
///
/// All three ranges are aligned to 4 KiB, `large` is aligned to 2 MiB, and they are disjoint
/// and ordered: `head.end == large.base` and `large.end == tail.base` when `large` is non-empty.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Carving {
    /// Base frames below the first 2 MiB boundary (fewer than 512 when `large` is non-empty).
    pub head: PhysRange,
    /// Large frames.
    pub large: PhysRange,
    /// Base frames above the last 2 MiB boundary (fewer than 512).
    pub tail: PhysRange,
}

impl Carving {
    /// A carving with no frame at all.
    pub const EMPTY: Carving = Carving {
        head: PhysRange::EMPTY,
        large: PhysRange::EMPTY,
        tail: PhysRange::EMPTY,
    };

    /// Number of 4 KiB frames (head and tail).
    pub const fn base_frames(&self) -> u64 {
        (self.head.len() + self.tail.len()) / BASE_PAGE_SIZE
    }

    /// Number of 2 MiB frames.
    pub const fn large_frames(&self) -> u64 {
        self.large.len() / LARGE_PAGE_SIZE
    }

    /// Total bytes covered by all frames of the carving.
    pub const fn bytes(&self) -> u64 {
        // The three parts are disjoint sub-ranges of one range, so the sum fits in a u64.
        self.head.len() + self.large.len() + self.tail.len()
    }
}

/// Rounds `addr` up to a multiple of `align` (a power of two), or `None` on overflow.
const fn align_up(addr: u64, align: u64) -> Option<u64> {
    match addr.checked_add(align - 1) {
        Some(a) => Some(align_down(a, align)),
        None => None,
    }
}

/// Rounds `addr` down to a multiple of `align` (a power of two).
const fn align_down(addr: u64, align: u64) -> u64 {
    addr & !(align - 1)
}
