//! Test support: a checked [`FrameLinks`] implementation and an ownership model.

use std::collections::{BTreeMap, HashMap};

use frames::{
    AllocError, Carving, Frame, FrameLinks, FrameSize, NCache, PhysRange, BASE_PAGE_SIZE,
};

/// Link words of free frames, standing in for the kernel's direct map.
///
/// It checks the [`FrameLinks`] contract from the memory side: writes only go to aligned
/// addresses inside ranges given to [`MockLinks::add`], reads only of words that were written,
/// and once a frame is handed out ([`MockLinks::hand_out`]) its word is forgotten, so any later
/// read by the allocator (a use after hand-out) panics.
#[derive(Default)]
pub struct MockLinks {
    words: HashMap<u64, u64>,
    ranges: Vec<PhysRange>,
    /// Number of `write_next` calls so far.
    pub writes: usize,
}

impl MockLinks {
    /// Adds `range` to `ncache`, recording it as memory the allocator may touch.
    pub fn add(&mut self, ncache: &mut NCache, range: PhysRange) -> Carving {
        self.ranges.push(range);
        ncache.add_range(self, range)
    }

    /// Ranges added so far.
    pub fn ranges(&self) -> &[PhysRange] {
        &self.ranges
    }

    /// Records that the kernel now owns `frame`: its link word is dropped, like memory the kernel
    /// overwrites.
    pub fn hand_out(&mut self, frame: Frame) {
        self.words.remove(&frame.base());
    }

    fn in_ranges(&self, addr: u64) -> bool {
        self.ranges
            .iter()
            .any(|r| r.contains(addr) && addr.checked_add(8).is_some_and(|end| end <= r.end))
    }
}

impl FrameLinks for MockLinks {
    fn write_next(&mut self, frame_base: u64, next: u64) {
        assert_eq!(frame_base % BASE_PAGE_SIZE, 0, "unaligned link write");
        assert!(
            self.in_ranges(frame_base),
            "link write at {frame_base:#x} outside the added ranges"
        );
        self.writes += 1;
        self.words.insert(frame_base, next);
    }

    fn read_next(&self, frame_base: u64) -> u64 {
        *self
            .words
            .get(&frame_base)
            .unwrap_or_else(|| panic!("read of link {frame_base:#x} that is not free"))
    }
}

/// The frames the "kernel" owns, checked for the allocator's safety properties on insertion.
#[derive(Default)]
pub struct Owned {
    frames: BTreeMap<u64, Frame>,
    bytes: u64,
}

impl Owned {
    /// Takes ownership of a freshly allocated `frame`, asserting that it is aligned, of `node`,
    /// inside one of `links`' ranges and disjoint from every frame already owned; then hands it
    /// out in `links`.
    pub fn take(&mut self, links: &mut MockLinks, node: usize, frame: Frame) {
        let size = frame.size().bytes();
        assert_eq!(frame.base() % size, 0, "{frame} misaligned");
        assert_eq!(frame.end() - frame.base(), size);
        assert_eq!(frame.node(), node, "{frame} of the wrong node");
        assert!(
            links
                .ranges()
                .iter()
                .any(|r| r.contains_range(&frame.range())),
            "{frame} outside the added ranges"
        );
        if let Some((_, below)) = self.frames.range(..=frame.base()).next_back() {
            assert!(
                below.end() <= frame.base(),
                "{frame} overlaps owned {below}"
            );
        }
        if let Some((_, above)) = self.frames.range(frame.base()..).next() {
            assert!(
                frame.end() <= above.base(),
                "{frame} overlaps owned {above}"
            );
        }
        self.frames.insert(frame.base(), frame);
        self.bytes += size;
        links.hand_out(frame);
    }

    /// Gives up the owned frame at index `i` (in address order).
    pub fn remove_nth(&mut self, i: usize) -> Frame {
        let base = *self.frames.keys().nth(i).expect("index in range");
        self.remove(base)
    }

    /// Gives up the owned frame at `base`.
    pub fn remove(&mut self, base: u64) -> Frame {
        let frame = self.frames.remove(&base).expect("frame owned");
        self.bytes -= frame.size().bytes();
        frame
    }

    /// Gives up every owned frame.
    pub fn drain(&mut self) -> Vec<Frame> {
        self.bytes = 0;
        std::mem::take(&mut self.frames).into_values().collect()
    }

    /// Number of owned frames.
    pub fn len(&self) -> usize {
        self.frames.len()
    }

    /// Bytes in owned frames.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }
}

/// Allocates every free frame of `ncache` (all large frames first, so none is split), checks
/// that they are disjoint from each other and from `owned`, that together they account for
/// `total_bytes` (so no frame may be cached in a TCache), and releases them again. Returns the number of (base, large) frames found.
pub fn check_partition(
    ncache: &mut NCache,
    links: &mut MockLinks,
    owned: &Owned,
) -> (usize, usize) {
    let node = ncache.node();
    let (free_base, free_large) = (ncache.free_base(), ncache.free_large());
    let mut all = Owned {
        frames: owned.frames.clone(),
        bytes: owned.bytes,
    };
    let mut taken = Vec::new();
    for size in [FrameSize::Large, FrameSize::Base] {
        loop {
            match ncache.allocate(links, size) {
                Ok(frame) => {
                    all.take(links, node, frame);
                    taken.push(frame);
                }
                Err(e) => {
                    assert_eq!(e, AllocError::OutOfMemory { node, size });
                    break;
                }
            }
        }
    }
    let large = taken
        .iter()
        .filter(|f| f.size() == FrameSize::Large)
        .count();
    assert_eq!((taken.len() - large, large), (free_base, free_large));
    assert_eq!(
        all.bytes(),
        ncache.total_bytes(),
        "frames lost or duplicated"
    );
    for frame in taken.into_iter().rev() {
        ncache.release(links, frame).unwrap();
    }
    assert_eq!(
        (ncache.free_base(), ncache.free_large()),
        (free_base, free_large)
    );
    (free_base, free_large)
}

/// A small deterministic xorshift64 PRNG.
pub struct XorShift(u64);

impl XorShift {
    /// Creates a generator; `seed` must be non-zero.
    pub fn new(seed: u64) -> XorShift {
        assert_ne!(seed, 0);
        XorShift(seed)
    }

    /// Next 64 random bits.
    pub fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }

    /// A value in `0..n` (`n > 0`).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}
