//! Random operation sequences checked against a simple model: a map from page number to
//! (frame, protection, part of an intact 2 MiB page) and a map of region pages. After every step
//! every page of the window is resolved and looked up in both of two instances whose page
//! tables live at different physical addresses.

mod common;

use common::FakeMemory;
use proptest::prelude::*;
use proptest::test_runner::FileFailurePersistence;
use std::collections::BTreeMap;
use vspace::{
    AddressSpace, MapError, Mapping, PageSize, Prot, Region, RegionKind, Translation, Unmapped,
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
}

/// Where a generated operation starts: a page of the window, or the n-th page (modulo their
/// number) that is in a region or mapped when the operation runs (falling back to a region page,
/// then to any page), so that random sequences hit existing regions and pages often.
#[derive(Clone, Copy, Debug)]
enum At {
    Page(u64),
    InRegion(usize),
    Mapped(usize),
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
}

impl Gen {
    fn concrete(&self, m: &Model) -> Op {
        let page = |at: At| match at {
            At::Page(p) => p,
            At::InRegion(n) if !m.regions.is_empty() => {
                *m.regions.keys().nth(n % m.regions.len()).unwrap()
            }
            At::Mapped(n) if !m.pages.is_empty() => *m.pages.keys().nth(n % m.pages.len()).unwrap(),
            At::Mapped(n) if !m.regions.is_empty() => {
                *m.regions.keys().nth(n % m.regions.len()).unwrap()
            }
            At::InRegion(n) | At::Mapped(n) => n as u64 % PAGES,
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
            } => {
                let p = page(at);
                Op::MapFrame {
                    page: if large { p / LP * LP } else { p },
                    large,
                    frame,
                    prot,
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

fn op() -> impl Strategy<Value = Gen> {
    prop_oneof![
        3 => (at(), pages(), prot(), kind(), any::<bool>())
            .prop_map(|(at, pages, prot, kind, replace)| Gen::MapRegion { at, pages, prot, kind, replace }),
        // Whole 2 MiB-aligned regions, so that 2 MiB pages fit.
        2 => (0..3u64, 1..3u64, prot(), kind(), any::<bool>()).prop_map(|(l, n, prot, kind, replace)| {
            Gen::MapRegion { at: At::Page(l * LP), pages: n * LP, prot, kind, replace }
        }),
        6 => (at(), any::<bool>(), 0..64u64, prot())
            .prop_map(|(at, large, frame, prot)| Gen::MapFrame { at, large, frame, prot }),
        2 => (at(), pages()).prop_map(|(at, pages)| Gen::Unmap { at, pages }),
        3 => (at(), pages(), prot()).prop_map(|(at, pages, prot)| Gen::Protect { at, pages, prot }),
        1 => (1..64u64, proptest::option::of(0..PAGES), prot())
            .prop_map(|(pages, hint, prot)| Gen::FindFreeMap { pages, hint, prot }),
    ]
}

/// One mapped 4 KiB piece in the model.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Page {
    /// The frame of this 4 KiB piece.
    phys: u64,
    /// Effective protection.
    prot: Prot,
    /// Part of an intact 2 MiB mapping.
    large: bool,
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
        for p in s..s + n {
            self.regions.insert(p, (prot, kind));
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
        if self.pages.range(s..s + n).next().is_some() {
            return Err(MapError::AlreadyMapped);
        }
        for i in 0..n {
            self.pages.insert(
                s + i,
                Page {
                    phys: phys + i * K,
                    prot: prot.effective(),
                    large,
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
        let new = prot.effective();
        let split = self.split(s, e, |pg| pg.prot != new);
        for p in s..e {
            self.regions.get_mut(&p).unwrap().0 = prot;
        }
        let mut changed = Vec::new();
        for (&p, pg) in self.pages.range_mut(s..e) {
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
        Ok(changed)
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

    /// The regions as maximal runs of equal (protection, kind).
    fn region_list(&self) -> Vec<Region> {
        let mut out: Vec<Region> = Vec::new();
        for (&p, &(prot, kind)) in &self.regions {
            match out.last_mut() {
                Some(r) if r.end == va(p) && r.prot == prot && r.kind == kind => r.end += K,
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

    fn mappings(&self) -> Vec<Mapping> {
        self.pages
            .iter()
            .filter(|(&p, pg)| !pg.large || p % LP == 0)
            .map(|(&p, pg)| Mapping {
                vaddr: va(p),
                phys: pg.phys,
                size: if pg.large {
                    PageSize::Large2M
                } else {
                    PageSize::Base4K
                },
                prot: pg.prot,
                cow: false,
            })
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
        } => {
            let (size, phys) = if large {
                (PageSize::Large2M, PHYS + frame * LP * K)
            } else {
                (PageSize::Base4K, PHYS + frame * K)
            };
            Outcome::Mapped(s.map_frame(va(page), phys, size, prot))
        }
        Op::Unmap { page, pages } => Outcome::Removed(s.unmap(va(page), pages * K)),
        Op::Protect { page, pages, prot } => Outcome::Changed(s.protect(va(page), pages * K, prot)),
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
        } => {
            let phys = if large {
                PHYS + frame * LP * K
            } else {
                PHYS + frame * K
            };
            Outcome::Mapped(m.map_frame(page, large, phys, prot))
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
                cow: false,
            }
        });
        prop_assert_eq!(s.resolve(va(p) + off), want, "resolve page {}", p);
        let region = s
            .region_at(va(p) + off)
            .map(|r| (r.prot, r.kind, r.contains(va(p))));
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
