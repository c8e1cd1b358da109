//! [`AddressSpace`]: one replica's region database and page tables.

use crate::entry::{
    ACCESSED, ADDR_MASK, COW, DIRTY, HUGE, LARGE_ADDR_MASK, NX, PRESENT, PROT_NONE, TABLE_FLAGS,
    USER, WRITABLE,
};
use crate::types::{
    MapError, Mapping, PageSize, Prot, Region, RegionKind, Translation, Unmapped, Walk,
    LARGE_PAGE_SIZE, PAGE_SIZE, USER_END,
};
use crate::TableMemory;
use alloc::collections::BTreeMap;
use alloc::vec::Vec;
use core::fmt;

/// Entries per table.
const ENTRIES: usize = 512;
/// The first PML4 index of the kernel half.
const KERNEL_FIRST: usize = 256;
/// The hardware-owned bits a replica's entries may differ in (the walker sets them).
const HW_BITS: u64 = ACCESSED | DIRTY;
/// Most regions an address space holds (Linux's default `vm.max_map_count`): an operation that
/// could need more fails with `OutOfMemory` (`ENOMEM`, as on Linux).
pub const MAX_REGIONS: usize = 65530;
/// Most ranges [`AddressSpace::protect`] reports separately.
pub const MAX_RANGES: usize = 64;
/// The flag bits of a leaf that encode its protection, size and sharing.
const LEAF_FLAGS: u64 = PRESENT | WRITABLE | USER | HUGE | PROT_NONE | NX | COW;

/// The bytes one entry at `level` covers (level 1 = page table, 4 = PML4).
const fn span(level: u32) -> u64 {
    1 << (12 + 9 * (level - 1))
}

/// The index of `va` in a table at `level`.
const fn index(va: u64, level: u32) -> usize {
    ((va >> (12 + 9 * (level - 1))) & 511) as usize
}

/// The leaf entry bits (everything but the address and A/D) for a page of `prot` and `size`.
fn leaf_bits(prot: Prot, size: PageSize) -> u64 {
    let mut bits = USER;
    if size == PageSize::Large2M {
        bits |= HUGE;
    }
    if prot.is_none() {
        // Not present, so every access faults; the frame stays in the entry.
        bits | PROT_NONE | NX
    } else {
        bits |= PRESENT;
        if prot.write {
            bits |= WRITABLE;
        }
        if !prot.exec {
            bits |= NX;
        }
        bits
    }
}

/// [`leaf_bits`], made copy-on-write (read-only, marked [`COW`]) if `cow`.
fn leaf_bits_cow(prot: Prot, size: PageSize, cow: bool) -> u64 {
    let bits = leaf_bits(prot, size);
    if cow {
        (bits & !WRITABLE) | COW
    } else {
        bits
    }
}

/// The [`Mapping`] a leaf `entry` of `size` at `vaddr` describes.
fn mapping(vaddr: u64, size: PageSize, entry: u64) -> Mapping {
    Mapping {
        vaddr,
        phys: leaf_frame(entry, size),
        size,
        prot: leaf_prot(entry),
        cow: entry & COW != 0,
    }
}

/// The region of `regions` containing `va`, if any.
fn region_containing(regions: &BTreeMap<u64, Region>, va: u64) -> Option<&Region> {
    regions
        .range(..=va)
        .next_back()
        .map(|(_, r)| r)
        .filter(|r| r.contains(va))
}

/// The effective protection a leaf entry grants.
fn leaf_prot(entry: u64) -> Prot {
    if entry & PRESENT == 0 {
        Prot::NONE
    } else {
        Prot {
            read: true,
            write: entry & WRITABLE != 0,
            exec: entry & NX == 0,
        }
    }
}

/// The frame address of a leaf entry of `size`.
fn leaf_frame(entry: u64, size: PageSize) -> u64 {
    match size {
        PageSize::Base4K => entry & ADDR_MASK,
        PageSize::Large2M => entry & LARGE_ADDR_MASK,
    }
}

/// Checks a user range given as `start` and `len`; returns `[start, end)` with the length
/// rounded up to whole pages, as Linux's `mmap`, `munmap` and `mprotect` do.
fn user_range(start: u64, len: u64) -> Result<(u64, u64), MapError> {
    if start % PAGE_SIZE != 0 || len == 0 {
        return Err(MapError::BadAddress);
    }
    let len = len.checked_add(PAGE_SIZE - 1).ok_or(MapError::BadAddress)? & !(PAGE_SIZE - 1);
    let end = start.checked_add(len).ok_or(MapError::BadAddress)?;
    if end > USER_END {
        return Err(MapError::BadAddress);
    }
    Ok((start, end))
}

/// Whether every entry of `table` is zero.
fn table_empty<M: TableMemory>(mem: &M, table: u64) -> bool {
    (0..ENTRIES).all(|i| mem.read(table, i) == 0)
}

/// Calls `f(vaddr, size, entry)` for every leaf overlapping `[start, end)` below `table` (a table
/// at `level` whose first entry maps `base`), in address order.
fn visit_leaves<M: TableMemory>(
    mem: &M,
    table: u64,
    level: u32,
    base: u64,
    start: u64,
    end: u64,
    f: &mut impl FnMut(u64, PageSize, u64),
) {
    for idx in index(start, level)..=index(end - 1, level) {
        let entry = mem.read(table, idx);
        if entry == 0 {
            continue;
        }
        let va = base + idx as u64 * span(level);
        if let Some(size) = leaf_size(level, entry) {
            f(va, size, entry);
        } else {
            let (s, e) = (start.max(va), end.min(va + span(level)));
            visit_leaves(mem, entry & ADDR_MASK, level - 1, va, s, e, f);
        }
    }
}

/// The 2 MiB pages [`AddressSpace::split_straddling`] split: one at each end of a range at most.
#[derive(Default)]
struct Split {
    /// Their bases, `len` of them.
    bases: [u64; 2],
    /// How many.
    len: usize,
}

impl Split {
    /// The bases.
    fn bases(&self) -> &[u64] {
        &self.bases[..self.len]
    }
}

/// How far a bounded walk over leaves may go: leaves left to visit, and whether it stopped
/// because there were none left.
struct Budget {
    left: usize,
    stopped: bool,
}

impl Budget {
    fn unlimited() -> Budget {
        Budget::of(usize::MAX)
    }

    fn of(leaves: usize) -> Budget {
        Budget {
            left: leaves,
            stopped: false,
        }
    }

    /// Takes one leaf from the budget; `false` (and stopped) when none is left.
    fn take(&mut self) -> bool {
        if self.left == 0 {
            self.stopped = true;
            return false;
        }
        self.left -= 1;
        true
    }
}

/// The size of the page a non-zero `entry` of a table at `level` maps, if it is a leaf.
fn leaf_size(level: u32, entry: u64) -> Option<PageSize> {
    match level {
        1 => Some(PageSize::Base4K),
        2 if entry & HUGE != 0 => Some(PageSize::Large2M),
        _ => None,
    }
}

/// Replaces leaves overlapping `[start, end)` below `table` by `f(vaddr, size, entry)` (writing
/// only entries that change), in address order, until `budget` leaves were visited (then it
/// stops and marks the budget stopped), and frees lower tables that became empty. Leaves must
/// not straddle the range (callers split 2 MiB pages first). Returns whether an entry of
/// `table` was cleared.
#[allow(clippy::too_many_arguments)]
fn update_leaves<M: TableMemory>(
    mem: &mut M,
    tables: &mut usize,
    table: u64,
    level: u32,
    base: u64,
    start: u64,
    end: u64,
    budget: &mut Budget,
    f: &mut impl FnMut(u64, PageSize, u64) -> u64,
) -> bool {
    let mut cleared = false;
    for idx in index(start, level)..=index(end - 1, level) {
        let entry = mem.read(table, idx);
        if entry == 0 {
            continue;
        }
        let va = base + idx as u64 * span(level);
        if let Some(size) = leaf_size(level, entry) {
            if !budget.take() {
                break;
            }
            let new = f(va, size, entry);
            if new != entry {
                mem.write(table, idx, new);
                cleared |= new == 0;
            }
        } else {
            let child = entry & ADDR_MASK;
            let (s, e) = (start.max(va), end.min(va + span(level)));
            if update_leaves(mem, tables, child, level - 1, va, s, e, budget, f)
                && table_empty(mem, child)
            {
                // Unlink before freeing, so no walker can reach a reused frame through us.
                mem.write(table, idx, 0);
                mem.free_table(child);
                *tables -= 1;
                cleared = true;
            }
            if budget.stopped {
                break;
            }
        }
    }
    cleared
}

/// Address ranges `(start, len)` in address order, coalesced; more than [`MAX_RANGES`] of them
/// become the one range that covers them all. Kept without the heap, since it is built inside
/// replicated operations.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ranges {
    /// The ranges, `len` of them.
    items: [(u64, u64); MAX_RANGES],
    /// How many.
    len: usize,
    /// More than [`MAX_RANGES`] came: `items[0]` covers them all.
    covering: bool,
}

impl Ranges {
    /// No range.
    pub const EMPTY: Ranges = Ranges {
        items: [(0, 0); MAX_RANGES],
        len: 0,
        covering: false,
    };

    /// The ranges.
    pub fn as_slice(&self) -> &[(u64, u64)] {
        &self.items[..self.len]
    }

    /// Adds `[start, start + len)`, in any order.
    pub fn add(&mut self, start: u64, len: u64) {
        let end = start + len;
        if self.covering {
            let (s, l) = self.items[0];
            let lo = s.min(start);
            self.items[0] = (lo, (s + l).max(end) - lo);
            return;
        }
        let at = self.as_slice().partition_point(|&(s, _)| s <= start);
        if at > 0 {
            let (s, l) = self.items[at - 1];
            if s + l >= start {
                self.items[at - 1].1 = l.max(end - s);
                self.merge_from(at - 1);
                return;
            }
        }
        if self.len == MAX_RANGES {
            let first = self.items[0].0.min(start);
            let (s, l) = self.items[self.len - 1];
            let last = (s + l).max(end);
            self.items[0] = (first, last - first);
            self.len = 1;
            self.covering = true;
            return;
        }
        self.items.copy_within(at..self.len, at + 1);
        self.items[at] = (start, len);
        self.len += 1;
        self.merge_from(at);
    }

    /// Merges the ranges after `i` that the range at `i` reaches into it.
    fn merge_from(&mut self, i: usize) {
        let mut next = i + 1;
        while next < self.len && self.items[next].0 <= self.items[i].0 + self.items[i].1 {
            let (s, l) = self.items[next];
            let end = (s + l).max(self.items[i].0 + self.items[i].1);
            self.items[i].1 = end - self.items[i].0;
            next += 1;
        }
        self.items.copy_within(next..self.len, i + 1);
        self.len -= next - i - 1;
    }
}

/// One replica of a process address space: the region database (like Linux's VMA tree) and the
/// x86-64 page tables built from it, with page-table pages from `M`.
///
/// Every operation is deterministic given the sequence of operations before it: two instances
/// fed the same operations return the same values and hold the same regions and mappings, even
/// though their page tables live at different physical addresses. Every operation either
/// succeeds or fails without changing anything (page tables it needs are allocated up front).
pub struct AddressSpace<M: TableMemory> {
    /// Where the page tables live.
    mem: M,
    /// The PML4's physical address.
    root: u64,
    /// The regions, keyed by start address; they never overlap, and adjacent regions with the
    /// same protection and kind are always merged.
    regions: BTreeMap<u64, Region>,
    /// Page-table pages currently allocated, including the PML4.
    tables: usize,
}

impl<M: TableMemory> AddressSpace<M> {
    /// Creates an empty address space whose PML4's upper half (entries 256..512) holds
    /// `kernel_entries`, the kernel's shared mappings. Fails with `OutOfMemory` if `mem` has no
    /// table for the PML4.
    pub fn new(mut mem: M, kernel_entries: &[u64; 256]) -> Result<Self, MapError> {
        let root = mem.allocate_table().ok_or(MapError::OutOfMemory)?;
        for (i, &entry) in kernel_entries.iter().enumerate() {
            if entry != 0 {
                mem.write(root, KERNEL_FIRST + i, entry);
            }
        }
        Ok(AddressSpace {
            mem,
            root,
            regions: BTreeMap::new(),
            tables: 1,
        })
    }

    /// The physical address of the PML4 (the value for CR3).
    pub fn root(&self) -> u64 {
        self.root
    }

    /// The number of page-table pages this address space holds, including the PML4.
    pub fn table_count(&self) -> usize {
        self.tables
    }

    /// The table memory (for inspection; the tables themselves belong to the address space).
    pub fn memory(&self) -> &M {
        &self.mem
    }

    // ----- Regions -------------------------------------------------------------------------

    /// The region containing `va`, if any.
    pub fn region_at(&self, va: u64) -> Option<&Region> {
        region_containing(&self.regions, va)
    }

    /// All regions in address order.
    pub fn regions(&self) -> impl Iterator<Item = &Region> + '_ {
        self.regions.values()
    }

    /// `OutOfMemory` unless `more` regions can be added without passing [`MAX_REGIONS`].
    fn room_for(&self, more: usize) -> Result<(), MapError> {
        if self.regions.len() + more > MAX_REGIONS {
            Err(MapError::OutOfMemory)
        } else {
            Ok(())
        }
    }

    /// The regions that end above `from`, in address order.
    pub fn regions_from(&self, from: u64) -> impl Iterator<Item = &Region> + '_ {
        let first = self.region_at(from).map(|r| r.start).unwrap_or(from);
        self.regions.range(first..).map(|(_, r)| r)
    }

    /// Whether any region overlaps `[start, end)`.
    fn overlaps(&self, start: u64, end: u64) -> bool {
        self.regions
            .range(..end)
            .next_back()
            .is_some_and(|(_, r)| r.end > start)
    }

    /// Adds the region `[start, start + len)` (length rounded up to pages) with `prot` and
    /// `kind`, merging it with adjacent regions of the same protection and kind.
    ///
    /// Without `replace`, a range overlapping an existing region is `MapError::Overlap`. With
    /// `replace` (`MAP_FIXED`) whatever overlaps is removed first, as by [`unmap`](Self::unmap),
    /// and the removed page mappings are returned. `PROT_NONE` regions (reservations, guard
    /// pages) are allowed; no page can be mapped in them.
    pub fn map_region(
        &mut self,
        start: u64,
        len: u64,
        prot: Prot,
        kind: RegionKind,
        replace: bool,
    ) -> Result<Vec<Unmapped>, MapError> {
        let mut removed = Vec::new();
        self.map_region_into(start, len, prot, kind, replace, usize::MAX, &mut |u| {
            removed.push(u)
        })?;
        Ok(removed)
    }

    /// [`map_region`](Self::map_region) handing each removed page mapping to `removed`; with
    /// `replace`, at most `max` of them (the caller checked that no more are mapped there).
    #[allow(clippy::too_many_arguments)]
    fn map_region_into(
        &mut self,
        start: u64,
        len: u64,
        prot: Prot,
        kind: RegionKind,
        replace: bool,
        max: usize,
        removed: &mut impl FnMut(Unmapped),
    ) -> Result<(), MapError> {
        let (start, end) = user_range(start, len)?;
        self.room_for(2)?;
        if replace {
            self.unmap_range(start, end, max, removed)?;
        } else if self.overlaps(start, end) {
            return Err(MapError::Overlap);
        }
        self.regions.insert(
            start,
            Region {
                start,
                end,
                prot,
                kind,
            },
        );
        self.merge_regions(start, end);
        Ok(())
    }

    /// A free, page-aligned range of `len` bytes (rounded up to pages) inside `[floor, ceiling)`
    /// (rounded inwards to pages, `ceiling` capped at the end of the user half), chosen like
    /// Linux's `mmap`: `hint` (rounded up to a page; 0 means none) if the range there is free,
    /// otherwise the highest free range. Deterministic, so every replica that runs it inside
    /// the same update picks the same address. `None` if nothing fits.
    pub fn find_free(&self, len: u64, hint: u64, floor: u64, ceiling: u64) -> Option<u64> {
        let round_up = |x: u64| x.checked_add(PAGE_SIZE - 1).map(|x| x & !(PAGE_SIZE - 1));
        let len = round_up(len)?;
        let floor = round_up(floor)?;
        let ceiling = ceiling.min(USER_END) & !(PAGE_SIZE - 1);
        if len == 0 || ceiling < floor || ceiling - floor < len {
            return None;
        }
        if hint != 0 {
            if let Some(h) = round_up(hint) {
                if h >= floor && h <= ceiling - len && !self.overlaps(h, h + len) {
                    return Some(h);
                }
            }
        }
        // Walk the gaps from the top down.
        let mut gap_end = ceiling;
        for r in self.regions.range(..ceiling).rev().map(|(_, r)| r) {
            if r.end < gap_end && gap_end - r.end.max(floor) >= len {
                return Some(gap_end - len);
            }
            gap_end = gap_end.min(r.start);
            if gap_end < floor || gap_end - floor < len {
                return None;
            }
        }
        Some(gap_end - len)
    }

    /// Splits the region containing `at` strictly inside into two at `at`.
    fn split_region_at(&mut self, at: u64) {
        let right = match self.regions.range_mut(..at).next_back() {
            Some((_, r)) if r.end > at => {
                let right = Region {
                    start: at,
                    kind: r.kind.advanced(at - r.start),
                    ..*r
                };
                r.end = at;
                right
            }
            _ => return,
        };
        self.regions.insert(at, right);
    }

    /// Merges adjacent compatible regions among those touching `[lo, hi]`. Allocates nothing
    /// (it runs inside replicated operations, where an allocation failing on one replica only
    /// would make the replicas differ).
    fn merge_regions(&mut self, lo: u64, hi: u64) {
        let mut current = match self.regions.range(..lo).next_back() {
            Some((&s, r)) if r.end >= lo => s,
            _ => match self.regions.range(lo..=hi).next() {
                Some((&s, _)) => s,
                None => return,
            },
        };
        while current < hi {
            let cur = self.regions[&current];
            let Some((&next, &next_region)) = self.regions.range(current + 1..=hi).next() else {
                return;
            };
            if cur.merges_with(&next_region) {
                self.regions.remove(&next);
                self.regions
                    .get_mut(&current)
                    .expect("the key was just read")
                    .end = next_region.end;
            } else {
                current = next;
            }
        }
    }

    /// Removes the region parts inside `[start, end)`.
    fn remove_regions(&mut self, start: u64, end: u64) {
        self.split_region_at(start);
        self.split_region_at(end);
        while let Some((&k, _)) = self.regions.range(start..end).next() {
            self.regions.remove(&k);
        }
    }

    /// Checks that regions cover `[start, end)` without gaps; returns whether any of them is
    /// `PROT_NONE`, or `Err(())` if there is a gap.
    fn coverage(&self, start: u64, end: u64) -> Result<bool, ()> {
        let first = self.region_at(start).ok_or(())?.start;
        let mut cursor = start;
        let mut any_none = false;
        for r in self.regions.range(first..end).map(|(_, r)| r) {
            if r.start > cursor {
                return Err(());
            }
            cursor = r.end;
            any_none |= r.prot.is_none();
        }
        if cursor < end {
            return Err(());
        }
        Ok(any_none)
    }

    // ----- Pages ---------------------------------------------------------------------------

    /// The slot `(table, index, size)` of the leaf entry mapping `va`, if there is one.
    fn leaf_slot(&self, va: u64) -> Option<(u64, usize, PageSize)> {
        let mut table = self.root;
        for level in [4, 3, 2] {
            let entry = self.mem.read(table, index(va, level));
            if entry == 0 {
                return None;
            }
            if level == 2 && entry & HUGE != 0 {
                return Some((table, index(va, level), PageSize::Large2M));
            }
            table = entry & ADDR_MASK;
        }
        let idx = index(va, 1);
        (self.mem.read(table, idx) != 0).then_some((table, idx, PageSize::Base4K))
    }

    /// Maps the page of `size` at `vaddr` to the frame at `phys` with `prot`.
    ///
    /// The page must lie inside regions (`NotInRegion`) none of which is `PROT_NONE`, and `prot`
    /// must not be `PROT_NONE` (`ProtNone`); nothing may be mapped in its range yet
    /// (`AlreadyMapped`); `vaddr` and `phys` must be aligned to `size` (`BadAddress`). Missing
    /// page tables are allocated (`OutOfMemory` if `TableMemory` has none). The entry gets
    /// `PRESENT | USER`, `WRITABLE` if `prot.write`, `NX` if `!prot.exec`.
    ///
    /// `prot` may differ from the region's protection (e.g. read-only for copy-on-write), but
    /// a later [`protect`](Self::protect) sets every page in its range to the new protection.
    pub fn map_frame(
        &mut self,
        vaddr: u64,
        phys: u64,
        size: PageSize,
        prot: Prot,
    ) -> Result<(), MapError> {
        let bytes = size.bytes();
        if vaddr % bytes != 0 || phys % bytes != 0 || phys & !ADDR_MASK != 0 {
            return Err(MapError::BadAddress);
        }
        let end = vaddr.checked_add(bytes).ok_or(MapError::BadAddress)?;
        if end > USER_END {
            return Err(MapError::BadAddress);
        }
        if prot.is_none() {
            return Err(MapError::ProtNone);
        }
        match self.coverage(vaddr, end) {
            Err(()) => return Err(MapError::NotInRegion),
            Ok(true) => return Err(MapError::ProtNone),
            Ok(false) => {}
        }
        self.map_leaf(vaddr, phys, size, leaf_bits(prot, size))
    }

    /// Maps a page as another address space maps it (a [`Mapping`] from
    /// [`share_for_fork`](Self::share_for_fork)), or the kernel's shared zero page: the same
    /// frame and protection, copy-on-write if `m.cow` (read-only and marked [`COW`]). Unlike
    /// [`map_frame`](Self::map_frame), `PROT_NONE` is allowed (the entry keeps the frame, not
    /// present), since a `fork` child gets its parent's `PROT_NONE` pages too. The page must lie
    /// inside regions (`NotInRegion`), nothing may be mapped there yet (`AlreadyMapped`), and
    /// the addresses must be aligned (`BadAddress`).
    pub fn map_copy(&mut self, m: &Mapping) -> Result<(), MapError> {
        let bytes = m.size.bytes();
        if m.vaddr % bytes != 0 || m.phys % bytes != 0 || m.phys & !ADDR_MASK != 0 {
            return Err(MapError::BadAddress);
        }
        let end = m.vaddr.checked_add(bytes).ok_or(MapError::BadAddress)?;
        if end > USER_END {
            return Err(MapError::BadAddress);
        }
        self.coverage(m.vaddr, end)
            .map_err(|()| MapError::NotInRegion)?;
        self.map_leaf(
            m.vaddr,
            m.phys,
            m.size,
            leaf_bits_cow(m.prot, m.size, m.cow),
        )
    }

    /// Writes the leaf `phys | bits` for the checked page of `size` at `vaddr`, allocating the
    /// missing tables first.
    fn map_leaf(
        &mut self,
        vaddr: u64,
        phys: u64,
        size: PageSize,
        bits: u64,
    ) -> Result<(), MapError> {
        let target = match size {
            PageSize::Base4K => 1,
            PageSize::Large2M => 2,
        };
        // Walk down as far as tables exist.
        let mut table = self.root;
        let mut level = 4;
        while level > target {
            let entry = self.mem.read(table, index(vaddr, level));
            if entry == 0 {
                break;
            }
            if level == 2 && entry & HUGE != 0 {
                return Err(MapError::AlreadyMapped);
            }
            table = entry & ADDR_MASK;
            level -= 1;
        }
        if level == target && self.mem.read(table, index(vaddr, level)) != 0 {
            // A leaf, or (for a 2 MiB page) a page table, which holds at least one page.
            return Err(MapError::AlreadyMapped);
        }
        // Tables for levels level-1 down to target, allocated before anything changes.
        let needed = (level - target) as usize;
        let mut new = [0u64; 3];
        for i in 0..needed {
            match self.mem.allocate_table() {
                Some(t) => new[i] = t,
                None => {
                    for &t in &new[..i] {
                        self.mem.free_table(t);
                    }
                    return Err(MapError::OutOfMemory);
                }
            }
        }
        self.tables += needed;
        // Build bottom-up, so a concurrent hardware walker never sees a half-built path.
        let leaf_table = if needed == 0 { table } else { new[needed - 1] };
        self.mem
            .write(leaf_table, index(vaddr, target), phys | bits);
        for i in (1..needed).rev() {
            let lvl = level - i as u32;
            self.mem
                .write(new[i - 1], index(vaddr, lvl), new[i] | TABLE_FLAGS);
        }
        if needed > 0 {
            self.mem
                .write(table, index(vaddr, level), new[0] | TABLE_FLAGS);
        }
        Ok(())
    }

    /// Translates `vaddr` by walking the page tables. `None` if no page is mapped there (or the
    /// address is not in the user half); a `PROT_NONE` page resolves with `Prot::NONE`.
    pub fn resolve(&self, vaddr: u64) -> Option<Translation> {
        if vaddr >= USER_END {
            return None;
        }
        let (table, idx, size) = self.leaf_slot(vaddr)?;
        let entry = self.mem.read(table, idx);
        let frame = leaf_frame(entry, size);
        Some(Translation {
            phys: frame + (vaddr & (size.bytes() - 1)),
            frame,
            size,
            prot: leaf_prot(entry),
            cow: entry & COW != 0,
        })
    }

    /// The entries a hardware walk of `vaddr` passes through (for page-fault reports). For an
    /// address outside the user half only the PML4 entry is read.
    pub fn walk(&self, vaddr: u64) -> Walk {
        let mut entries = [None; 4];
        let mut table = self.root;
        for (i, level) in [4u32, 3, 2, 1].into_iter().enumerate() {
            let entry = self.mem.read(table, index(vaddr, level));
            entries[i] = Some(entry);
            let leaf = level == 1 || (level == 2 && entry & HUGE != 0);
            if entry == 0 || leaf || vaddr >= USER_END {
                break;
            }
            table = entry & ADDR_MASK;
        }
        Walk { entries }
    }

    /// Every page mapping (including `PROT_NONE` pages) in address order (for inspection; `fork`
    /// goes in bounded steps of [`share_for_fork`](Self::share_for_fork)).
    pub fn pages(&self) -> impl Iterator<Item = Mapping> {
        let mut out = Vec::new();
        visit_leaves(
            &self.mem,
            self.root,
            4,
            0,
            0,
            USER_END,
            &mut |vaddr, size, entry| out.push(mapping(vaddr, size, entry)),
        );
        out.into_iter()
    }

    /// Pages (in 4 KiB units, a 2 MiB page counting 512) mapped to frames that `counts`
    /// accepts, `PROT_NONE` pages included: the resident size of the address space, for
    /// choosing whom an out-of-memory kills. Allocates nothing.
    pub fn resident_pages(&self, counts: impl Fn(u64) -> bool) -> u64 {
        let mut pages = 0;
        visit_leaves(
            &self.mem,
            self.root,
            4,
            0,
            0,
            USER_END,
            &mut |vaddr, size, entry| {
                if counts(mapping(vaddr, size, entry).phys) {
                    pages += size.bytes() / PAGE_SIZE;
                }
            },
        );
        pages
    }

    /// Splits the 2 MiB pages that straddle `start` or `end` and whose entry satisfies `needs`
    /// into 512 4 KiB entries for the same frames. Allocates all tables before changing
    /// anything. Returns the bases of the pages split (none, one or two).
    fn split_straddling(
        &mut self,
        start: u64,
        end: u64,
        needs: impl Fn(u64) -> bool,
    ) -> Result<Split, MapError> {
        let mut split = Split::default();
        for edge in [start, end] {
            let base = edge & !(LARGE_PAGE_SIZE - 1);
            if base == edge || split.bases().contains(&base) {
                continue;
            }
            if let Some((table, idx, PageSize::Large2M)) = self.leaf_slot(base) {
                if needs(self.mem.read(table, idx)) {
                    split.bases[split.len] = base;
                    split.len += 1;
                }
            }
        }
        let bases = split.bases;
        let bases = &bases[..split.len];
        let mut new = [0u64; 2];
        for i in 0..bases.len() {
            match self.mem.allocate_table() {
                Some(t) => new[i] = t,
                None => {
                    for &t in &new[..i] {
                        self.mem.free_table(t);
                    }
                    return Err(MapError::OutOfMemory);
                }
            }
        }
        for (&base, &pt) in bases.iter().zip(&new) {
            let (pd, idx, _) = self.leaf_slot(base).expect("checked above");
            let entry = self.mem.read(pd, idx);
            let frame = entry & LARGE_ADDR_MASK;
            let flags = entry & (LEAF_FLAGS | HW_BITS) & !HUGE;
            for i in 0..ENTRIES {
                self.mem
                    .write(pt, i, (frame + i as u64 * PAGE_SIZE) | flags);
            }
            self.mem.write(pd, idx, pt | TABLE_FLAGS);
            self.tables += 1;
        }
        Ok(split)
    }

    /// Removes the regions in the checked range `[start, end)` and at most `max` of its page
    /// mappings (the first ones in address order), handing each to `out`; returns whether
    /// mappings remain.
    fn unmap_range(
        &mut self,
        start: u64,
        end: u64,
        max: usize,
        out: &mut impl FnMut(Unmapped),
    ) -> Result<bool, MapError> {
        self.room_for(1)?;
        self.split_straddling(start, end, |_| true)?;
        let mut budget = Budget::of(max);
        update_leaves(
            &mut self.mem,
            &mut self.tables,
            self.root,
            4,
            0,
            start,
            end,
            &mut budget,
            &mut |vaddr, size, entry| {
                out(Unmapped {
                    vaddr,
                    phys: leaf_frame(entry, size),
                    size,
                });
                0
            },
        );
        self.remove_regions(start, end);
        Ok(budget.stopped)
    }

    /// The number of page mappings in `[start, end)`, counting up to `limit` (a larger number
    /// reads as `limit`).
    fn count_pages(&self, start: u64, end: u64, limit: usize) -> usize {
        let mut n = 0;
        visit_leaves(&self.mem, self.root, 4, 0, start, end, &mut |_, _, _| {
            n = (n + 1).min(limit);
        });
        n
    }

    /// Removes the regions (splitting them) and page mappings in `[start, start + len)` (length
    /// rounded up to pages) and returns the removed mappings in address order. Nothing there is
    /// fine. A 2 MiB page partly inside is split into 4 KiB entries for the same frames first,
    /// and only its pieces inside are removed (each reported). Page tables that become empty
    /// are freed.
    ///
    /// The work and the returned list grow with the number of pages mapped in the range; a
    /// kernel that must bound both uses [`unmap_step`](Self::unmap_step).
    pub fn unmap(&mut self, start: u64, len: u64) -> Result<Vec<Unmapped>, MapError> {
        let (start, end) = user_range(start, len)?;
        let mut out = Vec::new();
        self.unmap_range(start, end, usize::MAX, &mut |u| out.push(u))?;
        Ok(out)
    }

    /// One bounded step of [`unmap`](Self::unmap): removes the regions in the range (all of
    /// them, at once) and at most `max` page mappings, handing each to `out` in address order;
    /// returns whether more remain. Allocates nothing (see [`clear_step`](Self::clear_step)).
    /// The caller repeats the step until none remain, freeing each step's frames after its TLB
    /// shootdown. Between the steps the range has no region, so no new page can be mapped in
    /// it, but pages not yet removed still translate; the caller must not add a region there
    /// before the last step (the kernel serializes address-space changes of a process).
    pub fn unmap_step(
        &mut self,
        start: u64,
        len: u64,
        max: usize,
        out: &mut impl FnMut(Unmapped),
    ) -> Result<bool, MapError> {
        let (start, end) = user_range(start, len)?;
        self.unmap_range(start, end, max.max(1), out)
    }

    /// [`map_region`](Self::map_region) with `replace`, done only if at most `max` pages are
    /// mapped in the range, each removed one handed to `out`; otherwise `Ok(false)` and nothing
    /// changes (the caller then removes the range in [`unmap_step`](Self::unmap_step)s first
    /// and maps the region after). Allocates nothing but the region's place in the database.
    pub fn replace_region(
        &mut self,
        start: u64,
        len: u64,
        prot: Prot,
        kind: RegionKind,
        max: usize,
        out: &mut impl FnMut(Unmapped),
    ) -> Result<bool, MapError> {
        let (s, e) = user_range(start, len)?;
        if self.count_pages(s, e, max.saturating_add(1)) > max {
            return Ok(false);
        }
        self.map_region_into(start, len, prot, kind, true, max, out)?;
        Ok(true)
    }

    /// Sets the protection of the regions (splitting them) and of the mapped pages in
    /// `[start, start + len)` (length rounded up to pages) to `prot`. `NotMapped` if regions do
    /// not cover the whole range. `PROT_NONE` makes the entries not present but keeps their
    /// frames. Returns the ranges `(start, len)` whose hardware entries changed, coalesced and
    /// in address order, for the TLB shootdown; a 2 MiB page split because the range covers
    /// only part of it is reported whole. More than [`MAX_RANGES`] ranges are reported as the
    /// one range that covers them all (a shootdown that large flushes everything anyway).
    pub fn protect(&mut self, start: u64, len: u64, prot: Prot) -> Result<Ranges, MapError> {
        let (start, end) = user_range(start, len)?;
        self.coverage(start, end)
            .map_err(|()| MapError::NotMapped)?;
        let first = self.region_at(start).map_or(start, |r| r.start);
        let read_only = RegionKind::Channel { writable: false };
        if prot.write
            && self
                .regions
                .range(first..end)
                .any(|(_, r)| r.kind == read_only)
        {
            return Err(MapError::Denied);
        }
        self.room_for(2)?;
        let large_bits = leaf_bits(prot, PageSize::Large2M);
        let split = self.split_straddling(start, end, |e| e & LEAF_FLAGS != large_bits)?;
        self.split_region_at(start);
        self.split_region_at(end);
        for r in self.regions.range_mut(start..end).map(|(_, r)| r) {
            r.prot = prot;
        }
        self.merge_regions(start, end);
        let mut changed = Ranges::EMPTY;
        update_leaves(
            &mut self.mem,
            &mut self.tables,
            self.root,
            4,
            0,
            start,
            end,
            &mut Budget::unlimited(),
            &mut |vaddr, size, entry| {
                let new =
                    (entry & (HW_BITS | ADDR_MASK)) | leaf_bits_cow(prot, size, entry & COW != 0);
                if new & !HW_BITS != entry & !HW_BITS {
                    changed.add(vaddr, size.bytes());
                }
                new
            },
        );
        for &base in split.bases() {
            changed.add(base, LARGE_PAGE_SIZE);
        }
        Ok(changed)
    }

    /// One bounded step of preparing a `fork`: at most `max` page mappings at or above `from`,
    /// in address order, as the child should map them with [`map_copy`](Self::map_copy), each
    /// with whether its hardware entry changed here (for the TLB shootdown). Pages of shared
    /// regions ([`RegionKind::is_shared`]) are listed as they are: parent and child share the
    /// frame (the kernel leaves channels out of the child). Every other page becomes copy-on-write here (read-only, marked [`COW`]), so both
    /// go on reading the frame until one of them writes ([`break_cow`](Self::break_cow));
    /// `PROT_NONE` pages get the mark too and keep it when made accessible. The next step
    /// starts just after the last mapping handed to `out`. Allocates nothing (see
    /// [`clear_step`](Self::clear_step)).
    pub fn share_for_fork(&mut self, from: u64, max: usize, out: &mut impl FnMut((Mapping, bool))) {
        if from >= USER_END || max == 0 {
            return;
        }
        let regions = &self.regions;
        update_leaves(
            &mut self.mem,
            &mut self.tables,
            self.root,
            4,
            0,
            from,
            USER_END,
            &mut Budget::of(max),
            &mut |vaddr, size, entry| {
                let shared = region_containing(regions, vaddr).is_some_and(|r| r.kind.is_shared());
                let new = if shared {
                    entry
                } else {
                    (entry & !WRITABLE) | COW
                };
                out((
                    mapping(vaddr, size, new),
                    new & WRITABLE != entry & WRITABLE,
                ));
                new
            },
        );
    }

    /// Ends the copy-on-write sharing of the page at `vaddr`: if it still maps the frame `old`
    /// marked [`COW`], it maps `new` instead (a private copy the kernel made, or `old` itself
    /// when no one else shares it any more) with its region's protection, and the mark goes.
    /// Returns whether it did; `false` (nothing changed) if the page changed since the caller
    /// looked (unmapped, remapped, already broken) or `new` is not a frame address aligned to
    /// the page size. The caller shoots down `vaddr`, since other cores may hold the old entry.
    pub fn break_cow(&mut self, vaddr: u64, old: u64, new: u64) -> bool {
        let Some(prot) = self.region_at(vaddr).map(|r| r.prot) else {
            return false;
        };
        let Some((table, idx, size)) = self.leaf_slot(vaddr) else {
            return false;
        };
        let entry = self.mem.read(table, idx);
        if entry & COW == 0
            || leaf_frame(entry, size) != old
            || new % size.bytes() != 0
            || new & !ADDR_MASK != 0
        {
            return false;
        }
        let kept = if new == old { entry & HW_BITS } else { 0 };
        self.mem
            .write(table, idx, new | kept | leaf_bits(prot, size));
        true
    }

    /// Removes every region and page mapping and frees every page table except the PML4;
    /// returns the removed mappings in address order.
    pub fn clear(&mut self) -> Vec<Unmapped> {
        let mut out = Vec::new();
        self.clear_step(usize::MAX, &mut |u| out.push(u));
        out
    }

    /// One bounded step of [`clear`](Self::clear): removes every region and at most `max` page
    /// mappings, handing each to `out`; returns whether more remain (see
    /// [`unmap_step`](Self::unmap_step)). Allocates nothing: a replicated kernel runs it on
    /// every replica, and an allocation failing on one of them only would make them differ.
    pub fn clear_step(&mut self, max: usize, out: &mut impl FnMut(Unmapped)) -> bool {
        let mut budget = Budget::of(max.max(1));
        update_leaves(
            &mut self.mem,
            &mut self.tables,
            self.root,
            4,
            0,
            0,
            USER_END,
            &mut budget,
            &mut |vaddr, size, entry| {
                out(Unmapped {
                    vaddr,
                    phys: leaf_frame(entry, size),
                    size,
                });
                0
            },
        );
        self.regions.clear();
        budget.stopped
    }
}

impl<M: TableMemory> Drop for AddressSpace<M> {
    /// Frees every page table, the PML4 included (with its kernel half zeroed, so every freed
    /// table is all zero), through `TableMemory`. The frames of mapped pages are the kernel's:
    /// it should [`clear`](AddressSpace::clear) first to learn them.
    fn drop(&mut self) {
        self.clear();
        for i in KERNEL_FIRST..ENTRIES {
            self.mem.write(self.root, i, 0);
        }
        self.mem.free_table(self.root);
        self.tables -= 1;
    }
}

impl<M: TableMemory> fmt::Debug for AddressSpace<M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AddressSpace")
            .field("root", &format_args!("{:#x}", self.root))
            .field("tables", &self.tables)
            .field("regions", &self.regions.values().collect::<Vec<_>>())
            .finish()
    }
}
