//! What a TLB shootdown invalidates: a few pages one by one, or the whole TLB.
//!
//! Invalidating a page (`invlpg`) costs about as much as a few TLB misses, while reloading the
//! page-table root throws away every translation of the address space; so a shootdown names
//! the pages it removed or changed when they are few and asks for a full flush when they are
//! many, like Linux's `tlb_single_page_flush_ceiling`. Several shootdowns aimed at one core
//! before it handles them merge into one set.

/// Most pages a set names before it becomes a full flush.
pub const FLUSH_PAGES: usize = 32;

/// The translations one core must invalidate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FlushSet {
    pages: [u64; FLUSH_PAGES],
    len: usize,
    all: bool,
}

impl Default for FlushSet {
    fn default() -> Self {
        FlushSet::EMPTY
    }
}

impl FlushSet {
    /// Nothing to invalidate.
    pub const EMPTY: FlushSet = FlushSet {
        pages: [0; FLUSH_PAGES],
        len: 0,
        all: false,
    };

    /// Every translation.
    pub fn all() -> FlushSet {
        FlushSet {
            all: true,
            ..FlushSet::EMPTY
        }
    }

    /// Adds the page containing `va` (any address inside a large page names the whole page).
    pub fn add_page(&mut self, va: u64) {
        if self.all {
            return;
        }
        let page = va & !(crate::PAGE_SIZE - 1);
        if self.pages[..self.len].contains(&page) {
            return;
        }
        if self.len == FLUSH_PAGES {
            *self = FlushSet::all();
            return;
        }
        self.pages[self.len] = page;
        self.len += 1;
    }

    /// Adds every base page of `[start, end)`: a full flush if that is more than the set holds.
    pub fn add_range(&mut self, start: u64, end: u64) {
        let first = start & !(crate::PAGE_SIZE - 1);
        let count = end.saturating_sub(first).div_ceil(crate::PAGE_SIZE);
        if count > (FLUSH_PAGES - self.len) as u64 {
            *self = FlushSet::all();
            return;
        }
        for i in 0..count {
            self.add_page(first + i * crate::PAGE_SIZE);
        }
    }

    /// Adds everything `other` names.
    pub fn merge(&mut self, other: &FlushSet) {
        if other.all {
            *self = FlushSet::all();
            return;
        }
        for &page in other.pages() {
            self.add_page(page);
        }
    }

    /// Empties the set, returning what it held.
    pub fn take(&mut self) -> FlushSet {
        core::mem::take(self)
    }

    /// Whether nothing is to be invalidated.
    pub fn is_empty(&self) -> bool {
        !self.all && self.len == 0
    }

    /// Whether the whole TLB is to be flushed.
    pub fn is_all(&self) -> bool {
        self.all
    }

    /// The pages to invalidate one by one (empty when [`FlushSet::is_all`]).
    pub fn pages(&self) -> &[u64] {
        &self.pages[..self.len]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::PAGE_SIZE;

    #[test]
    fn pages_are_named_once_and_aligned() {
        let mut s = FlushSet::EMPTY;
        assert!(s.is_empty());
        s.add_page(0x1234);
        s.add_page(0x1000);
        s.add_page(0x5fff);
        assert_eq!(s.pages(), &[0x1000, 0x5000]);
        assert!(!s.is_all() && !s.is_empty());
    }

    #[test]
    fn too_many_pages_become_a_full_flush() {
        let mut s = FlushSet::EMPTY;
        for i in 0..FLUSH_PAGES as u64 {
            s.add_page(i * PAGE_SIZE);
        }
        assert!(!s.is_all());
        assert_eq!(s.pages().len(), FLUSH_PAGES);
        s.add_page(FLUSH_PAGES as u64 * PAGE_SIZE);
        assert!(s.is_all());
        assert!(s.pages().is_empty());
        s.add_page(0);
        assert!(s.is_all());
    }

    #[test]
    fn ranges_count_base_pages() {
        let mut s = FlushSet::EMPTY;
        s.add_range(0x10_0800, 0x10_2001);
        assert_eq!(s.pages(), &[0x10_0000, 0x10_1000, 0x10_2000]);
        s.add_range(0x10_0000, 0x10_0000);
        assert_eq!(s.pages().len(), 3);
        let mut big = FlushSet::EMPTY;
        big.add_range(0, (FLUSH_PAGES as u64 + 1) * PAGE_SIZE);
        assert!(big.is_all());
        let mut huge = FlushSet::EMPTY;
        huge.add_range(0, u64::MAX);
        assert!(huge.is_all());
    }

    #[test]
    fn merge_and_take() {
        let mut a = FlushSet::EMPTY;
        a.add_page(0x1000);
        let mut b = FlushSet::EMPTY;
        b.add_page(0x1000);
        b.add_page(0x2000);
        a.merge(&b);
        assert_eq!(a.pages(), &[0x1000, 0x2000]);
        let taken = a.take();
        assert!(a.is_empty());
        assert_eq!(taken.pages(), &[0x1000, 0x2000]);
        a.merge(&FlushSet::all());
        assert!(a.is_all());
        let mut c = FlushSet::EMPTY;
        c.merge(&taken);
        c.merge(&FlushSet::EMPTY);
        assert_eq!(c, taken);
    }
}
