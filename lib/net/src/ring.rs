//! Frame rings: the shared-memory rings between the network server and the kernel's side of
//! the stack instances (LibrettOS §3.2: each application exchanges L2 frames with the server
//! through a pair of rings).
//!
//! A ring is one-way, one producer and one consumer, in pages both sides map: a header page
//! (the consumer's count `head`, its `asleep` word, the producer's count `tail`, the frames the
//! producer dropped because the ring was full) and [`CELLS`] cells of 2 KiB, two to a page,
//! each a length word and the frame's bytes. This is the fos channel's protocol (`lib/msg`)
//! with cells a frame fits in: the consumer marks itself asleep and looks once more before it
//! sleeps, the producer looks at that mark after it published, so a wake-up is asked for only
//! when the consumer sleeps, and none is lost (both sides order their store and load with a
//! sequentially consistent fence, Dekker's way).
//!
//! Either side may be hostile to the other (the server is a user process): each side keeps
//! its own count and reads the other's only to bound its work, so a count or length the other
//! side wrote cannot make it read or write outside the ring, loop, or panic. A bad count reads
//! as a full or (past [`CELLS`] frames) a corrupt ring, a bad length as a malformed frame.
//!
//! The pages are reached through [`Pages`], so the kernel, whose frames are scattered, and the
//! server, which maps them at consecutive addresses, run the same code.

use core::sync::atomic::{fence, AtomicU64, Ordering};

/// 64-bit words in a page.
pub const PAGE_WORDS: usize = 512;
/// A page of shared memory, as the words both sides read and write.
pub type Page = [AtomicU64; PAGE_WORDS];

/// Shared pages, by number, without holes (if page `i` is there, so is every page below it).
pub trait Pages {
    /// Page `i`, or `None` past the end.
    fn page(&self, i: usize) -> Option<&Page>;
}

impl Pages for [Page] {
    fn page(&self, i: usize) -> Option<&Page> {
        self.get(i)
    }
}

/// Words in a cell (2 KiB).
const CELL_WORDS: usize = 256;
/// Most bytes a cell holds (its first word is the length): any Ethernet frame without a
/// VLAN tag (1514) fits.
pub const CELL_DATA: usize = (CELL_WORDS - 1) * 8;
/// Cells in a ring: the frames in flight one way.
pub const CELLS: u64 = 64;
/// Pages of a ring: its header and its cells.
pub const RING_PAGES: usize = 1 + CELLS as usize * CELL_WORDS / PAGE_WORDS;

/// Header words (each on its own cache line).
const HEAD: usize = 0;
/// Nonzero while the consumer sleeps (or is about to).
const ASLEEP: usize = 8;
/// The producer's count.
const TAIL: usize = 16;
/// Frames the producer found no room for.
const FULL: usize = 24;
/// Nonzero while the producer waits for room (it found the ring full and kept its frame).
const WAITING: usize = 32;

/// Why [`Producer::push`] did not put a frame in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PushError {
    /// The ring is full (or the consumer's count is impossible): the frame is not in, the
    /// ring counts it, and the producer is marked waiting for room ([`Consumer::pop`]'s caller
    /// learns it from [`Consumer::producer_waits`]).
    Full,
    /// The frame is larger than a cell.
    TooBig,
    /// The ring's pages are not all there.
    Missing,
}

/// Why [`Consumer::pop`] took a cell but no frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PopError {
    /// The cell's length is larger than a cell: the cell is skipped.
    Malformed,
    /// The producer's count is more than [`CELLS`] ahead: the consumer skipped to it, losing
    /// what was there.
    Corrupt,
    /// The ring's pages are not all there.
    Missing,
}

/// A ring: [`RING_PAGES`] pages of `pages` from page `first`.
pub struct Ring<'a, P: Pages + ?Sized> {
    /// The pages the ring lies in.
    pages: &'a P,
    /// Its header page's number.
    first: usize,
}

impl<'a, P: Pages + ?Sized> Ring<'a, P> {
    /// The ring whose header is page `first` of `pages`.
    pub fn new(pages: &'a P, first: usize) -> Self {
        Ring { pages, first }
    }

    /// Header word `i`.
    fn header(&self, i: usize) -> Option<&'a AtomicU64> {
        self.pages.page(self.first).map(|p| &p[i])
    }

    /// The words of cell `c` (`c < CELLS`): its length, then the frame's bytes. A cell lies
    /// in one page, so a frame's copy looks its page up once.
    fn cell(&self, c: u64) -> Option<&'a [AtomicU64]> {
        let per_page = PAGE_WORDS / CELL_WORDS;
        let c = c as usize;
        let page = self.pages.page(self.first + 1 + c / per_page)?;
        page.get((c % per_page) * CELL_WORDS..)?.get(..CELL_WORDS)
    }

    /// Whether every page of the ring is there (its last one is: pages have no holes).
    fn whole(&self) -> bool {
        self.pages.page(self.first + RING_PAGES - 1).is_some()
    }

    /// The producer's count as published.
    pub fn tail(&self) -> u64 {
        self.header(TAIL).map_or(0, |w| w.load(Ordering::Acquire))
    }

    /// The consumer's count as published.
    pub fn head(&self) -> u64 {
        self.header(HEAD).map_or(0, |w| w.load(Ordering::Acquire))
    }

    /// The ring's state for reports: the published counts and the consumer's and producer's
    /// marks (asleep, waiting for room).
    pub fn state(&self) -> (u64, u64, bool, bool) {
        let get = |i| self.header(i).map_or(0, |w| w.load(Ordering::Acquire));
        (get(HEAD), get(TAIL), get(ASLEEP) != 0, get(WAITING) != 0)
    }

    /// Frames the producer dropped because the ring was full.
    pub fn full_drops(&self) -> u64 {
        self.header(FULL).map_or(0, |w| w.load(Ordering::Relaxed))
    }

    /// Zeroes the header: an empty ring whose consumer sleeps (the state a new ring starts
    /// in, so that the first frame asks for a wake-up).
    pub fn reset(&self) {
        for w in [HEAD, TAIL, FULL, WAITING] {
            if let Some(w) = self.header(w) {
                w.store(0, Ordering::Release);
            }
        }
        if let Some(w) = self.header(ASLEEP) {
            w.store(1, Ordering::Release);
        }
    }
}

/// The producer's side of a ring: its own count.
#[derive(Clone, Copy, Debug, Default)]
pub struct Producer {
    /// Frames it put in.
    tail: u64,
}

impl Producer {
    /// The producer of `ring` as its published count left it (a restarted server resumes).
    pub fn resume<P: Pages + ?Sized>(ring: &Ring<'_, P>) -> Producer {
        Producer { tail: ring.tail() }
    }

    /// Whether a frame fits now. If not, the producer is marked waiting for room, as a full
    /// [`Producer::push`] marks it, and the consumer says when it made room
    /// ([`Consumer::producer_waits`]): a producer that can leave its frames where they are (a
    /// NIC's receive queue) looks before it takes one, rather than dropping it.
    pub fn has_room<P: Pages + ?Sized>(&self, ring: &Ring<'_, P>) -> bool {
        if self.tail.wrapping_sub(ring.head()) < CELLS {
            return true;
        }
        // Marked waiting, then a second look (the consumer frees a cell, then looks at the
        // mark): either the consumer sees the mark or this sees the room.
        if let Some(w) = ring.header(WAITING) {
            w.store(1, Ordering::SeqCst);
        }
        fence(Ordering::SeqCst);
        self.tail.wrapping_sub(ring.head()) < CELLS
    }

    /// Puts `frame` in the next cell and publishes it: `Ok(true)` if the consumer sleeps and
    /// must be woken (the mark is cleared, so one wake-up is asked for).
    pub fn push<P: Pages + ?Sized>(
        &mut self,
        ring: &Ring<'_, P>,
        frame: &[u8],
    ) -> Result<bool, PushError> {
        if frame.len() > CELL_DATA {
            return Err(PushError::TooBig);
        }
        if !ring.whole() {
            return Err(PushError::Missing);
        }
        if !self.has_room(ring) {
            if let Some(w) = ring.header(FULL) {
                w.fetch_add(1, Ordering::Relaxed);
            }
            return Err(PushError::Full);
        }
        let Some((length, words)) = ring.cell(self.tail % CELLS).and_then(<[_]>::split_first)
        else {
            return Err(PushError::Missing);
        };
        let mut whole = frame.chunks_exact(8);
        let mut words = words.iter();
        // The frame's iterator first: `zip` stops on it without taking a word.
        for (chunk, w) in whole.by_ref().zip(words.by_ref()) {
            if let Ok(word) = <[u8; 8]>::try_from(chunk) {
                w.store(u64::from_le_bytes(word), Ordering::Relaxed);
            }
        }
        let rest = whole.remainder();
        if let (Some(w), false) = (words.next(), rest.is_empty()) {
            let mut word = [0u8; 8];
            word[..rest.len()].copy_from_slice(rest);
            w.store(u64::from_le_bytes(word), Ordering::Relaxed);
        }
        length.store(frame.len() as u64, Ordering::Relaxed);
        self.tail = self.tail.wrapping_add(1);
        if let Some(w) = ring.header(TAIL) {
            w.store(self.tail, Ordering::Release);
        }
        fence(Ordering::SeqCst);
        Ok(ring
            .header(ASLEEP)
            .is_some_and(|w| w.swap(0, Ordering::AcqRel) != 0))
    }
}

/// The consumer's side of a ring: its own count.
#[derive(Clone, Copy, Debug, Default)]
pub struct Consumer {
    /// Frames it took.
    head: u64,
}

impl Consumer {
    /// The consumer of `ring` as its published count left it.
    pub fn resume<P: Pages + ?Sized>(ring: &Ring<'_, P>) -> Consumer {
        Consumer { head: ring.head() }
    }

    /// A consumer that drops what waits in `ring` (a ring passing to a new party).
    pub fn skip_all<P: Pages + ?Sized>(ring: &Ring<'_, P>) -> Consumer {
        let mut c = Consumer { head: ring.tail() };
        c.publish(ring);
        c
    }

    /// Publishes its count, freeing the cells it took.
    fn publish<P: Pages + ?Sized>(&mut self, ring: &Ring<'_, P>) {
        if let Some(w) = ring.header(HEAD) {
            w.store(self.head, Ordering::Release);
        }
    }

    /// Whether a frame waits.
    pub fn ready<P: Pages + ?Sized>(&self, ring: &Ring<'_, P>) -> bool {
        ring.tail() != self.head
    }

    /// Takes the next frame into `out`: its length, `None` if the ring is empty. Its cell stays
    /// the consumer's until [`Consumer::commit`].
    pub fn pop<P: Pages + ?Sized>(
        &mut self,
        ring: &Ring<'_, P>,
        out: &mut [u8; CELL_DATA],
    ) -> Option<Result<usize, PopError>> {
        let tail = ring.tail();
        let waiting = tail.wrapping_sub(self.head);
        if waiting == 0 {
            return None;
        }
        if !ring.whole() {
            return Some(Err(PopError::Missing));
        }
        if waiting > CELLS {
            self.head = tail;
            self.publish(ring);
            return Some(Err(PopError::Corrupt));
        }
        let Some((length, words)) = ring.cell(self.head % CELLS).and_then(<[_]>::split_first)
        else {
            return Some(Err(PopError::Missing));
        };
        let result = match usize::try_from(length.load(Ordering::Relaxed)) {
            Ok(len) if len <= CELL_DATA => {
                let mut whole = out[..len].chunks_exact_mut(8);
                let mut words = words.iter();
                for (chunk, w) in whole.by_ref().zip(words.by_ref()) {
                    chunk.copy_from_slice(&w.load(Ordering::Relaxed).to_le_bytes());
                }
                let rest = whole.into_remainder();
                if let Some(w) = words.next() {
                    let word = w.load(Ordering::Relaxed).to_le_bytes();
                    rest.copy_from_slice(&word[..rest.len()]);
                }
                Ok(len)
            }
            _ => Err(PopError::Malformed),
        };
        self.head = self.head.wrapping_add(1);
        Some(result)
    }

    /// Publishes that the frames taken so far are done with, freeing their cells. A consumer
    /// that may die between taking a frame and acting on it (the server) commits after
    /// acting, so that the one after it takes the frame again: a frame is then acted on at
    /// least once (TCP takes a duplicate in its stride, not a loss: smoltcp does not probe a
    /// zero window, so a lost window update stalls a connection for good).
    pub fn commit<P: Pages + ?Sized>(&mut self, ring: &Ring<'_, P>) {
        self.publish(ring);
    }

    /// Whether the producer waits for room (it found the ring full): the mark is taken, so the
    /// caller tells the producer once.
    pub fn producer_waits<P: Pages + ?Sized>(&self, ring: &Ring<'_, P>) -> bool {
        fence(Ordering::SeqCst);
        ring.header(WAITING)
            .is_some_and(|w| w.load(Ordering::SeqCst) != 0 && w.swap(0, Ordering::AcqRel) != 0)
    }

    /// Marks the consumer asleep and looks once more: `true` if the ring is still empty (it
    /// may sleep; the next frame asks for a wake-up), `false` if a frame came meanwhile (the
    /// mark is taken back).
    pub fn sleep<P: Pages + ?Sized>(&self, ring: &Ring<'_, P>) -> bool {
        let Some(asleep) = ring.header(ASLEEP) else {
            return true;
        };
        asleep.store(1, Ordering::SeqCst);
        fence(Ordering::SeqCst);
        if self.ready(ring) {
            asleep.store(0, Ordering::SeqCst);
            return false;
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec::Vec;

    /// Takes and commits one frame.
    fn take<P: Pages + ?Sized>(
        c: &mut Consumer,
        ring: &Ring<'_, P>,
        out: &mut [u8; CELL_DATA],
    ) -> Option<Result<usize, PopError>> {
        let got = c.pop(ring, out);
        c.commit(ring);
        got
    }

    fn pages(n: usize) -> Vec<Page> {
        (0..n)
            .map(|_| core::array::from_fn(|_| AtomicU64::new(0)))
            .collect()
    }

    #[test]
    fn frames_go_through_in_order_and_a_sleeping_consumer_is_woken_once() {
        let mem = pages(RING_PAGES);
        let ring = Ring::new(&mem[..], 0);
        ring.reset();
        let mut p = Producer::resume(&ring);
        let mut c = Consumer::resume(&ring);
        let mut out = [0u8; CELL_DATA];
        assert_eq!(take(&mut c, &ring, &mut out), None);
        assert_eq!(p.push(&ring, b"first frame"), Ok(true), "it started asleep");
        assert_eq!(p.push(&ring, &[7; 1514]), Ok(false), "woken once");
        assert_eq!(take(&mut c, &ring, &mut out), Some(Ok(11)));
        assert_eq!(&out[..11], b"first frame");
        assert_eq!(take(&mut c, &ring, &mut out), Some(Ok(1514)));
        assert!(out[..1514].iter().all(|&b| b == 7));
        assert!(c.sleep(&ring));
        assert_eq!(p.push(&ring, b""), Ok(true));
        assert!(!c.sleep(&ring), "a frame waits: no sleep");
        assert_eq!(p.push(&ring, b"x"), Ok(false));
        assert_eq!(p.push(&ring, &[0; CELL_DATA + 1]), Err(PushError::TooBig));
    }

    #[test]
    fn a_full_ring_refuses_counts_and_marks_the_producer_waiting() {
        let mem = pages(RING_PAGES);
        let ring = Ring::new(&mem[..], 0);
        ring.reset();
        let mut p = Producer::resume(&ring);
        let mut c = Consumer::resume(&ring);
        for i in 0..CELLS {
            p.push(&ring, &i.to_le_bytes()).unwrap();
        }
        assert_eq!(p.push(&ring, b"no room"), Err(PushError::Full));
        assert_eq!(ring.full_drops(), 1);
        assert!(c.producer_waits(&ring), "the producer waits for room");
        assert!(!c.producer_waits(&ring), "told once");
        let mut out = [0u8; CELL_DATA];
        for i in 0..CELLS {
            assert_eq!(take(&mut c, &ring, &mut out), Some(Ok(8)));
            assert_eq!(out[..8], i.to_le_bytes());
        }
        assert_eq!(take(&mut c, &ring, &mut out), None);
    }

    #[test]
    fn a_producer_that_looks_first_is_told_of_room_and_counts_no_drop() {
        let mem = pages(RING_PAGES);
        let ring = Ring::new(&mem[..], 0);
        ring.reset();
        let mut p = Producer::resume(&ring);
        let mut c = Consumer::resume(&ring);
        for i in 0..CELLS {
            assert!(p.has_room(&ring));
            p.push(&ring, &i.to_le_bytes()).unwrap();
        }
        assert!(!c.producer_waits(&ring), "room was there each time");
        assert!(!p.has_room(&ring));
        assert_eq!(ring.full_drops(), 0, "looking is not dropping");
        let mut out = [0u8; CELL_DATA];
        assert_eq!(take(&mut c, &ring, &mut out), Some(Ok(8)));
        assert!(
            c.producer_waits(&ring),
            "the producer that looked waits for room"
        );
        assert!(p.has_room(&ring));
        assert_eq!(p.push(&ring, b"one more"), Ok(false));
    }

    #[test]
    fn hostile_counts_and_lengths_are_bounded() {
        let mem = pages(RING_PAGES);
        let ring = Ring::new(&mem[..], 0);
        ring.reset();
        let mut p = Producer::resume(&ring);
        let mut c = Consumer::resume(&ring);
        // A consumer count ahead of the producer's reads as full.
        mem[0][HEAD].store(1000, Ordering::Relaxed);
        assert_eq!(p.push(&ring, b"x"), Err(PushError::Full));
        mem[0][HEAD].store(0, Ordering::Relaxed);
        // A lying length is a malformed frame, and the ring goes on.
        p.push(&ring, b"abc").unwrap();
        p.push(&ring, b"def").unwrap();
        mem[1][0].store(u64::MAX, Ordering::Relaxed);
        let mut out = [0u8; CELL_DATA];
        assert_eq!(
            take(&mut c, &ring, &mut out),
            Some(Err(PopError::Malformed))
        );
        assert_eq!(take(&mut c, &ring, &mut out), Some(Ok(3)));
        assert_eq!(&out[..3], b"def");
        // A producer count far ahead: skipped, once.
        mem[0][TAIL].store(1 << 40, Ordering::Relaxed);
        assert_eq!(take(&mut c, &ring, &mut out), Some(Err(PopError::Corrupt)));
        assert_eq!(take(&mut c, &ring, &mut out), None);
        // Missing pages: nothing is touched.
        let short = pages(3);
        let ring = Ring::new(&short[..], 0);
        assert_eq!(
            Producer::default().push(&ring, b"x"),
            Err(PushError::Missing)
        );
    }

    #[test]
    fn a_frame_taken_and_not_committed_is_taken_again_by_the_next_consumer() {
        let mem = pages(RING_PAGES);
        let ring = Ring::new(&mem[..], 0);
        ring.reset();
        let mut p = Producer::resume(&ring);
        p.push(&ring, b"one").unwrap();
        p.push(&ring, b"two").unwrap();
        let mut out = [0u8; CELL_DATA];
        let mut c = Consumer::resume(&ring);
        assert_eq!(c.pop(&ring, &mut out), Some(Ok(3)));
        c.commit(&ring);
        assert_eq!(c.pop(&ring, &mut out), Some(Ok(3)));
        // It dies here: the next one takes "two" again.
        let mut c = Consumer::resume(&ring);
        assert_eq!(take(&mut c, &ring, &mut out), Some(Ok(3)));
        assert_eq!(&out[..3], b"two");
        assert_eq!(take(&mut c, &ring, &mut out), None);
    }

    #[test]
    fn a_resumed_side_continues_where_the_published_counts_are() {
        let mem = pages(RING_PAGES * 2);
        let ring = Ring::new(&mem[..], RING_PAGES);
        ring.reset();
        let mut p = Producer::resume(&ring);
        let mut c = Consumer::resume(&ring);
        let mut out = [0u8; CELL_DATA];
        for i in 0..100u64 {
            p.push(&ring, &i.to_le_bytes()).unwrap();
            if i % 3 == 0 {
                p = Producer::resume(&ring);
            }
            assert_eq!(take(&mut c, &ring, &mut out), Some(Ok(8)));
            assert_eq!(out[..8], i.to_le_bytes());
            if i % 5 == 0 {
                c = Consumer::resume(&ring);
            }
        }
        p.push(&ring, b"left").unwrap();
        let c = Consumer::skip_all(&ring);
        assert!(!c.ready(&ring));
    }
}
