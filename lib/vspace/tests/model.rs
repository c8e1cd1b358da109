//! Random operation sequences checked against a simple model: a map from page number to
//! (frame, protection, part of an intact 2 MiB page, copy-on-write) and a map of region pages.
//! After every step every page of the window is resolved and looked up in both of two instances
//! whose page tables live at different physical addresses.

mod common;

use common::FakeMemory;
use proptest::prelude::*;
use proptest::test_runner::FileFailurePersistence;
use std::collections::BTreeMap;
use vspace::{
    AddressSpace, MapError, Mapping, PageSize, Prot, Region, RegionKind, Translation, Unmapped,
    ADDR_MASK, MAX_RANGES,
};

const K: u64 = 4096;
/// Pages per 2 MiB page.
const LP: u64 = 512;
/// The window: 6 MiB whose middle crosses a PML4, a PDPT and a PD boundary at 512 GiB.
const BASE: u64 = 0x80_0000_0000 - 4 * (1 << 20);
const PAGES: u64 = 3 * LP;
/// Frames are handed out from here.
const PHYS: u64 = 0x1_0000_0000;

fn va(page: u64) -> u64 {
    BASE + page * K
}

/// One operation with concrete page numbers (relative to `BASE`).
#[derive(Clone, Debug)]
enum Op {
    MapRegion {
        page: u64,
        pages: u64,
        prot: Prot,
        kind: RegionKind,
        replace: bool,
    },
    MapFrame {
        page: u64,
        large: bool,
        frame: u64,
        prot: Prot,
        /// Map through `map_copy` with this `cow` flag (as a `fork` child does) instead of
        /// `map_frame`.
        copy: Option<bool>,
    },
    Unmap {
        page: u64,
        pages: u64,
    },
    Protect {
        page: u64,
        pages: u64,
        prot: Prot,
    },
    FindFreeMap {
        pages: u64,
        hint: Option<u64>,
        prot: Prot,
    },
    ShareForFork {
        page: u64,
        max: usize,
    },
    /// `break_cow` at the page with the frame addresses `old` and `new`.
    BreakCow {
        page: u64,
        old: u64,
        new: u64,
    },
}

/// The `new` frame a generated `BreakCow` passes.
#[derive(Clone, Copy, Debug)]
enum NewFrame {
    /// The page's current frame (no one else shares it any more).
    Same,
    /// The n-th frame of the page's size.
    Fresh(u64),
    /// The n-th frame of the page's size plus half a 4 KiB page (4 KiB for a 2 MiB page), or
    /// for 0 an aligned address wider than 52 bits: rejected.
    Bad(u64),
}

/// Where a generated operation starts: a page of the window, or the n-th page (modulo their
/// number) that is in a region, mapped or copy-on-write when the operation runs (falling back to
/// a mapped page, then a region page, then to any page), so that random sequences hit existing
/// regions and pages often.
#[derive(Clone, Copy, Debug)]
enum At {
    Page(u64),
    InRegion(usize),
    Mapped(usize),
    /// The n-th copy-on-write page (falling back as `Mapped` does).
    Cow(usize),
}

/// A generated operation; [`Gen::concrete`] fixes its addresses against the model's state.
#[derive(Clone, Debug)]
enum Gen {
    MapRegion {
        at: At,
        pages: u64,
        prot: Prot,
        kind: RegionKind,
        replace: bool,
    },
    MapFrame {
        at: At,
        large: bool,
        frame: u64,
        prot: Prot,
        copy: Option<bool>,
    },
    Unmap {
        at: At,
        pages: u64,
    },
    Protect {
        at: At,
        pages: u64,
        prot: Prot,
    },
    FindFreeMap {
        pages: u64,
        hint: Option<u64>,
        prot: Prot,
    },
    ShareForFork {
        at: At,
        max: usize,
    },
    /// `old` is the page's current frame if `old_matches` (and it is mapped), another one
    /// otherwise.
    BreakCow {
        at: At,
        old_matches: bool,
        frame: NewFrame,
    },
}

impl Gen {
    fn concrete(&self, m: &Model) -> Op {
        let page = |at: At| match at {
            At::Page(p) => p,
            At::Cow(n) if m.pages.values().any(|pg| pg.cow) => {
                let cow: Vec<u64> = m
                    .pages
                    .iter()
                    .filter(|(_, pg)| pg.cow)
                    .map(|(&p, _)| p)
                    .collect();
                cow[n % cow.len()]
            }
            At::Cow(n) if !m.pages.is_empty() => *m.pages.keys().nth(n % m.pages.len()).unwrap(),
            At::InRegion(n) if !m.regions.is_empty() => {
                *m.regions.keys().nth(n % m.regions.len()).unwrap()
            }
            At::Mapped(n) if !m.pages.is_empty() => *m.pages.keys().nth(n % m.pages.len()).unwrap(),
            At::Mapped(n) | At::Cow(n) if !m.regions.is_empty() => {
                *m.regions.keys().nth(n % m.regions.len()).unwrap()
            }
            At::InRegion(n) | At::Mapped(n) | At::Cow(n) => n as u64 % PAGES,
        };
        let len = |p: u64, pages: u64| pages.min(PAGES - p);
        match *self {
            Gen::MapRegion {
                at,
                pages,
                prot,
                kind,
                replace,
            } => {
                let p = page(at);
                Op::MapRegion {
                    page: p,
                    pages: len(p, pages),
                    prot,
                    kind,
                    replace,
                }
            }
            Gen::MapFrame {
                at,
                large,
                frame,
                prot,
                copy,
            } => {
                let p = page(at);
                Op::MapFrame {
                    page: if large { p / LP * LP } else { p },
                    large,
                    frame,
                    prot,
                    copy,
                }
            }
            Gen::Unmap { at, pages } => {
                let p = page(at);
                Op::Unmap {
                    page: p,
                    pages: len(p, pages),
                }
            }
            Gen::Protect { at, pages, prot } => {
                let p = page(at);
                Op::Protect {
                    page: p,
                    pages: len(p, pages),
                    prot,
                }
            }
            Gen::FindFreeMap { pages, hint, prot } => Op::FindFreeMap { pages, hint, prot },
            Gen::ShareForFork { at, max } => Op::ShareForFork {
                page: page(at),
                max,
            },
            Gen::BreakCow {
                at,
                old_matches,
                frame,
            } => {
                let p = page(at);
                // The frame and size of the page there (a 4 KiB one at PHYS if none).
                let (cur, bytes) = match m.pages.get(&p) {
                    Some(pg) if pg.large => (m.pages[&(p / LP * LP)].phys, LP * K),
                    Some(pg) => (pg.phys, K),
                    None => (PHYS, K),
                };
                let old = if old_matches { cur } else { cur + bytes };
                let new = match frame {
                    NewFrame::Same => cur,
                    NewFrame::Fresh(f) => PHYS + f * bytes,
                    NewFrame::Bad(0) => 1 << 52,
                    NewFrame::Bad(f) => PHYS + f * bytes + if bytes == K { K / 2 } else { K },
                };
                Op::BreakCow { page: p, old, new }
            }
        }
    }
}

fn prot() -> impl Strategy<Value = Prot> {
    (0u64..8).prop_map(|b| Prot::from_linux(b).unwrap())
}

fn kind() -> impl Strategy<Value = RegionKind> {
    prop_oneof![
        Just(RegionKind::Anonymous { shared: false }),
        Just(RegionKind::Anonymous { shared: true }),
        Just(RegionKind::Heap),
        Just(RegionKind::Image),
        Just(RegionKind::Channel { writable: true }),
        Just(RegionKind::Channel { writable: false }),
        (any::<bool>(), 1..3u64, 0..4u64).prop_map(|(shared, file, page)| RegionKind::File {
            shared,
            file,
            page
        }),
    ]
}

/// A start: anywhere, near a 2 MiB boundary, or in a region or mapping.
fn at() -> impl Strategy<Value = At> {
    prop_oneof![
        1 => (0..PAGES).prop_map(At::Page),
        1 => (0..3u64, -3i64..4)
            .prop_map(|(l, d)| At::Page((l as i64 * LP as i64 + d).clamp(0, PAGES as i64 - 1) as u64)),
        4 => any::<usize>().prop_map(At::InRegion),
        2 => any::<usize>().prop_map(At::Mapped),
    ]
}

/// A length in pages, biased towards short ones and whole 2 MiB pages.
fn pages() -> impl Strategy<Value = u64> {
    prop_oneof![1..8u64, 1..PAGES, (1..3u64).prop_map(|l| l * LP)]
}

/// A `new` frame for `break_cow`, mostly good ones.
fn new_frame() -> impl Strategy<Value = NewFrame> {
    prop_oneof![
        2 => Just(NewFrame::Same),
        4 => (0..64u64).prop_map(NewFrame::Fresh),
        1 => (0..64u64).prop_map(NewFrame::Bad),
    ]
}

fn op() -> impl Strategy<Value = Gen> {
    prop_oneof![
        3 => (at(), pages(), prot(), kind(), any::<bool>())
            .prop_map(|(at, pages, prot, kind, replace)| Gen::MapRegion { at, pages, prot, kind, replace }),
        // Whole 2 MiB-aligned regions, so that 2 MiB pages fit.
        2 => (0..3u64, 1..3u64, prot(), kind(), any::<bool>()).prop_map(|(l, n, prot, kind, replace)| {
            Gen::MapRegion { at: At::Page(l * LP), pages: n * LP, prot, kind, replace }
        }),
        6 => (at(), any::<bool>(), 0..64u64, prot(), prop_oneof![2 => Just(None), 1 => any::<bool>().prop_map(Some)])
            .prop_map(|(at, large, frame, prot, copy)| Gen::MapFrame { at, large, frame, prot, copy }),
        2 => (at(), pages()).prop_map(|(at, pages)| Gen::Unmap { at, pages }),
        3 => (at(), pages(), prot()).prop_map(|(at, pages, prot)| Gen::Protect { at, pages, prot }),
        1 => (1..64u64, proptest::option::of(0..PAGES), prot())
            .prop_map(|(pages, hint, prot)| Gen::FindFreeMap { pages, hint, prot }),
        1 => (at(), 1..=40usize).prop_map(|(at, max)| Gen::ShareForFork { at, max }),
        // Mostly at copy-on-write pages, so that breaking succeeds often.
        3 => (prop_oneof![1 => at(), 4 => any::<usize>().prop_map(At::Cow)], proptest::bool::weighted(0.8), new_frame())
            .prop_map(|(at, old_matches, frame)| Gen::BreakCow { at, old_matches, frame }),
    ]
}

/// One mapped 4 KiB piece in the model.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Page {
    /// The frame of this 4 KiB piece.
    phys: u64,
    /// Effective protection (never `write` if `cow`).
    prot: Prot,
    /// Part of an intact 2 MiB mapping.
    large: bool,
    /// Shared copy-on-write.
    cow: bool,
}

/// The effective protection of a page mapped with `prot`, copy-on-write if `cow`: read-only.
fn page_prot(prot: Prot, cow: bool) -> Prot {
    let prot = prot.effective();
    Prot {
        write: prot.write && !cow,
        ..prot
    }
}

#[derive(Default)]
struct Model {
    regions: BTreeMap<u64, (Prot, RegionKind)>,
    pages: BTreeMap<u64, Page>,
}

/// What an operation returned, in a comparable form.
#[derive(Debug, PartialEq)]
enum Outcome {
    Removed(Result<Vec<Unmapped>, MapError>),
    Mapped(Result<(), MapError>),
    Changed(Result<Vec<(u64, u64)>, MapError>),
    Found(Option<u64>, Result<Vec<Unmapped>, MapError>),
    Shared(Vec<(Mapping, bool)>),
    Broken(bool),
}

fn push_range(ranges: &mut Vec<(u64, u64)>, start: u64, len: u64) {
    match ranges.last_mut() {
        Some(last) if last.0 + last.1 >= start => last.1 = last.1.max(start + len - last.0),
        _ => ranges.push((start, len)),
    }
}

impl Model {
    /// Breaks the intact 2 MiB pages straddling `s` or `e` (page numbers) for which `needs`
    /// holds into 4 KiB pieces; returns their bases.
    fn split(&mut self, s: u64, e: u64, needs: impl Fn(&Page) -> bool) -> Vec<u64> {
        let mut bases = Vec::new();
        for edge in [s, e] {
            let base = edge / LP * LP;
            if base == edge || bases.contains(&base) {
                continue;
            }
            if self.pages.get(&base).is_some_and(|p| p.large && needs(p)) {
                for p in base..base + LP {
                    self.pages.get_mut(&p).unwrap().large = false;
                }
                bases.push(base);
            }
        }
        bases
    }

    fn unmap(&mut self, s: u64, n: u64) -> Vec<Unmapped> {
        let e = s + n;
        self.split(s, e, |_| true);
        let mut out = Vec::new();
        let inside: Vec<(u64, Page)> = self.pages.range(s..e).map(|(&p, &pg)| (p, pg)).collect();
        for (p, pg) in inside {
            self.pages.remove(&p);
            if !pg.large {
                out.push(Unmapped {
                    vaddr: va(p),
                    phys: pg.phys,
                    size: PageSize::Base4K,
                });
            } else if p % LP == 0 {
                out.push(Unmapped {
                    vaddr: va(p),
                    phys: pg.phys,
                    size: PageSize::Large2M,
                });
            }
        }
        for p in s..e {
            self.regions.remove(&p);
        }
        out
    }

    fn map_region(
        &mut self,
        s: u64,
        n: u64,
        prot: Prot,
        kind: RegionKind,
        replace: bool,
    ) -> Result<Vec<Unmapped>, MapError> {
        if !replace && self.regions.range(s..s + n).next().is_some() {
            return Err(MapError::Overlap);
        }
        let removed = if replace {
            self.unmap(s, n)
        } else {
            Vec::new()
        };
        // Each page keeps its own kind: a file region's page numbers count up from `kind`'s.
        for p in s..s + n {
            self.regions.insert(p, (prot, kind.advanced((p - s) * K)));
        }
        Ok(removed)
    }

    fn map_frame(&mut self, s: u64, large: bool, phys: u64, prot: Prot) -> Result<(), MapError> {
        let n = if large { LP } else { 1 };
        if prot.is_none() {
            return Err(MapError::ProtNone);
        }
        if (s..s + n).any(|p| !self.regions.contains_key(&p)) {
            return Err(MapError::NotInRegion);
        }
        if (s..s + n).any(|p| self.regions[&p].0.is_none()) {
            return Err(MapError::ProtNone);
        }
        self.insert(s, large, phys, page_prot(prot, false), false)
    }

    /// `map_copy`: like `map_frame`, but `PROT_NONE` (of the page or the region) is fine and
    /// the page is copy-on-write if `cow`.
    fn map_copy(
        &mut self,
        s: u64,
        large: bool,
        phys: u64,
        prot: Prot,
        cow: bool,
    ) -> Result<(), MapError> {
        let n = if large { LP } else { 1 };
        if (s..s + n).any(|p| !self.regions.contains_key(&p)) {
            return Err(MapError::NotInRegion);
        }
        self.insert(s, large, phys, page_prot(prot, cow), cow)
    }

    /// Maps the checked page at `s` unless something is mapped in its range.
    fn insert(
        &mut self,
        s: u64,
        large: bool,
        phys: u64,
        prot: Prot,
        cow: bool,
    ) -> Result<(), MapError> {
        let n = if large { LP } else { 1 };
        if self.pages.range(s..s + n).next().is_some() {
            return Err(MapError::AlreadyMapped);
        }
        for i in 0..n {
            self.pages.insert(
                s + i,
                Page {
                    phys: phys + i * K,
                    prot,
                    large,
                    cow,
                },
            );
        }
        Ok(())
    }

    fn protect(&mut self, s: u64, n: u64, prot: Prot) -> Result<Vec<(u64, u64)>, MapError> {
        let e = s + n;
        if (s..e).any(|p| !self.regions.contains_key(&p)) {
            return Err(MapError::NotMapped);
        }
        let read_only = RegionKind::Channel { writable: false };
        if prot.write && (s..e).any(|p| self.regions[&p].1 == read_only) {
            return Err(MapError::Denied);
        }
        let new = prot.effective();
        // The real code compares the entry with a plain (not copy-on-write) 2 MiB entry of
        // `prot`, so a copy-on-write page is split even if its entry would not change. (That
        // keeps `break_cow`, which takes the protection of the region at the address, from
        // giving a whole 2 MiB page the protection of part of it.)
        let split = self.split(s, e, |pg| pg.cow || pg.prot != new);
        for p in s..e {
            self.regions.get_mut(&p).unwrap().0 = prot;
        }
        let mut changed = Vec::new();
        for (&p, pg) in self.pages.range_mut(s..e) {
            let new = page_prot(prot, pg.cow);
            if pg.prot != new {
                let len = if pg.large { LP * K } else { K };
                if !pg.large || p % LP == 0 {
                    push_range(&mut changed, va(p), len);
                }
                pg.prot = new;
            }
        }
        if !split.is_empty() {
            changed.extend(split.iter().map(|&b| (va(b), LP * K)));
            changed.sort_unstable();
            let mut merged = Vec::new();
            for (s, l) in changed {
                push_range(&mut merged, s, l);
            }
            changed = merged;
        }
        if changed.len() > MAX_RANGES {
            let first = changed[0].0;
            let (last, len) = changed[changed.len() - 1];
            changed = vec![(first, last + len - first)];
        }
        Ok(changed)
    }

    /// The first `max` mappings (2 MiB pages once) from page `from` on, or from the start of
    /// the 2 MiB page containing it, each made copy-on-write unless its region (at its first
    /// page) is shared anonymous memory, with whether its write permission went.
    fn share_for_fork(&mut self, from: u64, max: usize) -> Vec<(Mapping, bool)> {
        let start = match self.pages.get(&from) {
            Some(pg) if pg.large => from / LP * LP,
            _ => from,
        };
        let leaves: Vec<u64> = self
            .pages
            .range(start..)
            .filter(|(&p, pg)| !pg.large || p % LP == 0)
            .map(|(&p, _)| p)
            .take(max)
            .collect();
        let mut out = Vec::new();
        for p in leaves {
            let shared = self.regions[&p].1.is_shared();
            let pg = self.pages[&p];
            if !shared {
                let n = if pg.large { LP } else { 1 };
                for q in p..p + n {
                    let piece = self.pages.get_mut(&q).unwrap();
                    piece.cow = true;
                    piece.prot.write = false;
                }
            }
            out.push((self.mapping(p), self.pages[&p].prot.write != pg.prot.write));
        }
        out
    }

    /// If the page at `p` is copy-on-write and maps `old` (its 2 MiB page's frame if large)
    /// and `new` is a frame address aligned to its size: maps `new` with the protection of the
    /// region at `p`, without the mark.
    fn break_cow(&mut self, p: u64, old: u64, new: u64) -> bool {
        let (Some(&(prot, _)), Some(pg)) = (self.regions.get(&p), self.pages.get(&p)) else {
            return false;
        };
        let (base, n) = if pg.large { (p / LP * LP, LP) } else { (p, 1) };
        if !pg.cow || self.pages[&base].phys != old || new % (n * K) != 0 || new & !ADDR_MASK != 0 {
            return false;
        }
        for i in 0..n {
            let piece = self.pages.get_mut(&(base + i)).unwrap();
            piece.phys = new + i * K;
            piece.prot = page_prot(prot, false);
            piece.cow = false;
        }
        true
    }

    fn find_free(&self, n: u64, hint: Option<u64>) -> Option<u64> {
        let free = |s: u64| s + n <= PAGES && self.regions.range(s..s + n).next().is_none();
        if let Some(h) = hint {
            if free(h) {
                return Some(h);
            }
        }
        (0..=PAGES.checked_sub(n)?).rev().find(|&s| free(s))
    }

    /// The regions as maximal runs of pages of equal protection and kind (a file's pages
    /// continuing each other).
    fn region_list(&self) -> Vec<Region> {
        let mut out: Vec<Region> = Vec::new();
        for (&p, &(prot, kind)) in &self.regions {
            match out.last_mut() {
                Some(r) if r.end == va(p) && r.prot == prot && r.kind.advanced(r.len()) == kind => {
                    r.end += K
                }
                _ => out.push(Region {
                    start: va(p),
                    end: va(p) + K,
                    prot,
                    kind,
                }),
            }
        }
        out
    }

    /// The mapping of the page (or 2 MiB page) starting at page `p`.
    fn mapping(&self, p: u64) -> Mapping {
        let pg = self.pages[&p];
        Mapping {
            vaddr: va(p),
            phys: pg.phys,
            size: if pg.large {
                PageSize::Large2M
            } else {
                PageSize::Base4K
            },
            prot: pg.prot,
            cow: pg.cow,
        }
    }

    fn mappings(&self) -> Vec<Mapping> {
        self.pages
            .iter()
            .filter(|(&p, pg)| !pg.large || p % LP == 0)
            .map(|(&p, _)| self.mapping(p))
            .collect()
    }

    /// Page tables the mappings need: the PML4 plus one PDPT per 512 GiB, one PD per 1 GiB and
    /// one page table per 2 MiB holding 4 KiB pages.
    fn tables(&self) -> usize {
        let distinct = |shift: u32, only_small: bool| {
            let mut v: Vec<u64> = self
                .pages
                .iter()
                .filter(|(_, pg)| !(only_small && pg.large))
                .map(|(&p, _)| va(p) >> shift)
                .collect();
            v.dedup();
            v.len()
        };
        1 + distinct(39, false) + distinct(30, false) + distinct(21, true)
    }
}

fn apply(s: &mut AddressSpace<FakeMemory>, op: &Op) -> Outcome {
    match *op {
        Op::MapRegion {
            page,
            pages,
            prot,
            kind,
            replace,
        } => Outcome::Removed(s.map_region(va(page), pages * K, prot, kind, replace)),
        Op::MapFrame {
            page,
            large,
            frame,
            prot,
            copy,
        } => {
            let (size, phys) = if large {
                (PageSize::Large2M, PHYS + frame * LP * K)
            } else {
                (PageSize::Base4K, PHYS + frame * K)
            };
            Outcome::Mapped(match copy {
                None => s.map_frame(va(page), phys, size, prot),
                Some(cow) => s.map_copy(&Mapping {
                    vaddr: va(page),
                    phys,
                    size,
                    prot,
                    cow,
                }),
            })
        }
        Op::Unmap { page, pages } => Outcome::Removed(s.unmap(va(page), pages * K)),
        Op::Protect { page, pages, prot } => Outcome::Changed(
            s.protect(va(page), pages * K, prot)
                .map(|r| r.as_slice().to_vec()),
        ),
        Op::FindFreeMap { pages, hint, prot } => {
            let found = s.find_free(pages * K, hint.map_or(0, va), BASE, BASE + PAGES * K);
            let mapped = match found {
                Some(a) => s.map_region(
                    a,
                    pages * K,
                    prot,
                    RegionKind::Anonymous { shared: false },
                    false,
                ),
                None => Ok(Vec::new()),
            };
            Outcome::Found(found, mapped)
        }
        Op::ShareForFork { page, max } => {
            let mut out = Vec::new();
            s.share_for_fork(va(page), max, &mut |m| out.push(m));
            Outcome::Shared(out)
        }
        Op::BreakCow { page, old, new } => Outcome::Broken(s.break_cow(va(page), old, new)),
    }
}

fn apply_model(m: &mut Model, op: &Op) -> Outcome {
    match *op {
        Op::MapRegion {
            page,
            pages,
            prot,
            kind,
            replace,
        } => Outcome::Removed(m.map_region(page, pages, prot, kind, replace)),
        Op::MapFrame {
            page,
            large,
            frame,
            prot,
            copy,
        } => {
            let phys = if large {
                PHYS + frame * LP * K
            } else {
                PHYS + frame * K
            };
            Outcome::Mapped(match copy {
                None => m.map_frame(page, large, phys, prot),
                Some(cow) => m.map_copy(page, large, phys, prot, cow),
            })
        }
        Op::Unmap { page, pages } => Outcome::Removed(Ok(m.unmap(page, pages))),
        Op::Protect { page, pages, prot } => Outcome::Changed(m.protect(page, pages, prot)),
        Op::FindFreeMap { pages, hint, prot } => {
            let found = m.find_free(pages, hint);
            let mapped = match found {
                Some(p) => m.map_region(
                    p,
                    pages,
                    prot,
                    RegionKind::Anonymous { shared: false },
                    false,
                ),
                None => Ok(Vec::new()),
            };
            Outcome::Found(found.map(va), mapped)
        }
        Op::ShareForFork { page, max } => Outcome::Shared(m.share_for_fork(page, max)),
        Op::BreakCow { page, old, new } => Outcome::Broken(m.break_cow(page, old, new)),
    }
}

/// Checks an instance against the model for every page of the window.
fn check(s: &AddressSpace<FakeMemory>, mem: &FakeMemory, m: &Model) -> Result<(), TestCaseError> {
    for p in 0..PAGES {
        let off = (p * 0x1d8) % K;
        let want = m.pages.get(&p).map(|pg| {
            let (frame, size) = if pg.large {
                (m.pages[&(p / LP * LP)].phys, PageSize::Large2M)
            } else {
                (pg.phys, PageSize::Base4K)
            };
            Translation {
                phys: pg.phys + off,
                frame,
                size,
                prot: pg.prot,
                cow: pg.cow,
            }
        });
        prop_assert_eq!(s.resolve(va(p) + off), want, "resolve page {}", p);
        let region = s
            .region_at(va(p) + off)
            .map(|r| (r.prot, r.kind.advanced(va(p) - r.start), r.contains(va(p))));
        let want = m.regions.get(&p).map(|&(prot, kind)| (prot, kind, true));
        prop_assert_eq!(region, want, "region_at page {}", p);
    }
    prop_assert_eq!(s.regions().copied().collect::<Vec<_>>(), m.region_list());
    prop_assert_eq!(s.pages().collect::<Vec<_>>(), m.mappings());
    prop_assert_eq!(s.table_count(), m.tables(), "table count");
    prop_assert_eq!(mem.live(), m.tables(), "live tables");
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 64,
        failure_persistence: Some(Box::new(FileFailurePersistence::WithSource("regressions"))),
        ..ProptestConfig::default()
    })]

    #[test]
    fn random_operations_match_the_model(ops in proptest::collection::vec(op(), 1..50)) {
        let ma = FakeMemory::new(0x10_0000, 0x1000);
        let mb = FakeMemory::new(0x9_0000_0000, 0x3000);
        let mut a = AddressSpace::new(ma.clone(), &[0; 256]).unwrap();
        let mut b = AddressSpace::new(mb.clone(), &[0; 256]).unwrap();
        let mut m = Model::default();
        for generated in &ops {
            let op = &generated.concrete(&m);
            let want = apply_model(&mut m, op);
            let got_a = apply(&mut a, op);
            let got_b = apply(&mut b, op);
            prop_assert_eq!(&got_a, &want, "{:?}", op);
            prop_assert_eq!(&got_b, &want, "{:?}", op);
            check(&a, &ma, &m)?;
            check(&b, &mb, &m)?;
        }
        // Tearing down returns every frame and every table.
        let want = m.unmap(0, PAGES);
        prop_assert_eq!(a.clear(), want.clone());
        prop_assert_eq!(b.clear(), want);
        prop_assert_eq!((ma.live(), mb.live()), (1, 1));
        drop(a);
        prop_assert_eq!(ma.live(), 0);
    }
}
