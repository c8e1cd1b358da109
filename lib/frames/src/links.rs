//! Intrusive free lists: the link word lives in the free frame itself.

use crate::frame::BASE_PAGE_SIZE;

/// Access to the link word stored at the start of each free frame.
///
/// An [`NCache`](crate::NCache) keeps its free frames in singly-linked stacks whose links are
/// stored *in the free frames themselves*: the first 8 bytes of a free frame hold the physical
/// address of the next free frame of the same size class. The NCache therefore needs no storage
/// of its own and can hold any amount of memory. This crate only decides *what* to store; the
/// implementor provides the memory access. The kernel implements it over its direct map of
/// physical memory (with `unsafe` code that stays in the kernel); host tests implement it with a
/// map from address to value.
///
/// # Contract
///
/// * The allocator calls [`write_next`](FrameLinks::write_next) and
///   [`read_next`](FrameLinks::read_next) only with the base address of a frame that is free,
///   i.e. one it received through [`NCache::add_range`](crate::NCache::add_range) or a release
///   and has not handed out since. Addresses are always 4 KiB-aligned.
/// * [`read_next`](FrameLinks::read_next)`(frame)` must return the value of the last
///   [`write_next`](FrameLinks::write_next)`(frame, _)`. The allocator never reads a link it
///   has not written, and never touches a frame after handing it out, so the kernel may use a
///   frame's memory freely (including the link word) as soon as it owns the frame.
/// * The implementor must make the first 8 bytes of every free frame accessible (mapped,
///   writable) and must not use free frames for anything else.
///
/// The values stored are opaque to the implementor: either a frame base address or an
/// end-of-list marker that is not 4 KiB-aligned. If [`read_next`](FrameLinks::read_next)
/// returns a value that was never written, the free list is corrupt; the allocator panics when
/// it detects a link that is not a valid frame address rather than hand out such a frame.
pub trait FrameLinks {
    /// Stores `next` in the link word of the free frame at physical address `frame_base`.
    fn write_next(&mut self, frame_base: u64, next: u64);

    /// Returns the value last stored by [`write_next`](FrameLinks::write_next) in the link word
    /// of the free frame at physical address `frame_base`.
    fn read_next(&self, frame_base: u64) -> u64;
}

/// End-of-list marker. It is not 4 KiB-aligned, so it is never a frame base address (a frame at
/// physical address 0 is allowed).
const NIL: u64 = u64::MAX;

/// A LIFO stack of free frames of one size class, linked through the frames themselves.
#[derive(Debug)]
pub(crate) struct FreeStack {
    /// Base address of the top frame, or [`NIL`] when empty.
    head: u64,
    /// Number of frames on the stack.
    len: usize,
}

impl FreeStack {
    /// An empty stack.
    pub(crate) const fn new() -> FreeStack {
        FreeStack { head: NIL, len: 0 }
    }

    /// Number of frames on the stack.
    pub(crate) const fn len(&self) -> usize {
        self.len
    }

    /// Pushes the free frame at `base`.
    pub(crate) fn push<L: FrameLinks + ?Sized>(&mut self, links: &mut L, base: u64) {
        debug_assert!(base % BASE_PAGE_SIZE == 0, "unaligned frame {base:#x}");
        links.write_next(base, self.head);
        self.head = base;
        self.len += 1;
    }

    /// Pops the most recently pushed frame, if any.
    pub(crate) fn pop<L: FrameLinks + ?Sized>(&mut self, links: &L) -> Option<u64> {
        if self.len == 0 {
            return None;
        }
        let base = self.head;
        self.head = links.read_next(base);
        self.len -= 1;
        debug_assert!(
            (self.len == 0) == (self.head == NIL),
            "free list corrupted: length {} but next link {:#x}",
            self.len,
            self.head
        );
        debug_assert!(
            self.head == NIL || self.head % BASE_PAGE_SIZE == 0,
            "free list corrupted: unaligned link {:#x}",
            self.head
        );
        Some(base)
    }
}
