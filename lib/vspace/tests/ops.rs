//! Unit tests of each operation of `AddressSpace`.

mod common;

use abi::Errno;
use common::{kernel_entries, space, space_at, FakeMemory};
use vspace::{
    decode, AddressSpace, MapError, Mapping, PageSize, Prot, Ranges, Region, RegionKind,
    TableMemory, Translation, Unmapped, ADDR_MASK, COW, HUGE, MAX_RANGES, NX, PRESENT, PROT_NONE,
    USER, USER_END, WRITABLE,
};

const K: u64 = 4096;
const M2: u64 = 2 << 20;
const ANON: RegionKind = RegionKind::Anonymous { shared: false };

/// The raw leaf entry mapping `va`.
fn leaf(s: &AddressSpace<FakeMemory>, va: u64) -> u64 {
    let w = s.walk(va);
    w.entries.iter().rev().find_map(|e| *e).expect("walked")
}

/// `protect`, its changed ranges as a `Vec`.
fn protect(
    s: &mut AddressSpace<FakeMemory>,
    start: u64,
    len: u64,
    prot: Prot,
) -> Result<Vec<(u64, u64)>, MapError> {
    s.protect(start, len, prot).map(|r| r.as_slice().to_vec())
}

/// `share_for_fork`, its pages as a `Vec`.
fn share(s: &mut AddressSpace<FakeMemory>, from: u64, max: usize) -> Vec<(Mapping, bool)> {
    let mut out = Vec::new();
    s.share_for_fork(from, max, &mut |m| out.push(m));
    out
}

fn regions(s: &AddressSpace<FakeMemory>) -> Vec<(u64, u64, Prot, RegionKind)> {
    s.regions()
        .map(|r| (r.start, r.end, r.prot, r.kind))
        .collect()
}

#[test]
fn new_copies_kernel_half_and_leaves_user_half_empty() {
    let (s, mem) = space();
    assert_eq!(s.table_count(), 1);
    assert_eq!(mem.live(), 1);
    let k = kernel_entries();
    for (i, &kernel) in k.iter().enumerate() {
        assert_eq!(mem.read(s.root(), i), 0, "user entry {i}");
        assert_eq!(mem.read(s.root(), 256 + i), kernel, "kernel entry {i}");
    }
    assert_eq!(s.regions().count(), 0);
    assert_eq!(s.pages().count(), 0);
    assert_eq!(s.resolve(0x40_0000), None);
}

#[test]
fn new_without_memory_is_out_of_memory() {
    let mem = FakeMemory::new(0x1000, 0x1000);
    mem.set_budget(Some(0));
    let r = AddressSpace::new(mem, &[0; 256]);
    assert_eq!(r.err(), Some(MapError::OutOfMemory));
}

#[test]
fn map_region_overlap_and_replace() {
    let (mut s, _) = space();
    assert_eq!(
        s.map_region(0x10000, 4 * K, Prot::RW, ANON, false),
        Ok(vec![])
    );
    assert_eq!(
        s.map_region(0x12000, 4 * K, Prot::READ, ANON, false),
        Err(MapError::Overlap)
    );
    assert_eq!(
        s.map_region(0xf000, 2 * K, Prot::READ, ANON, false),
        Err(MapError::Overlap)
    );
    // Length rounds up to pages: [0x14000, 0x15000).
    assert_eq!(
        s.map_region(0x14000, 1, Prot::READ, RegionKind::Image, false),
        Ok(vec![])
    );
    assert_eq!(s.region_at(0x14fff).map(|r| r.end), Some(0x15000));
    s.map_frame(0x11000, 0x7000_0000, PageSize::Base4K, Prot::RW)
        .unwrap();
    s.map_frame(0x13000, 0x7000_1000, PageSize::Base4K, Prot::RW)
        .unwrap();
    // MAP_FIXED over the middle removes the pages there and splits the old region.
    let removed = s
        .map_region(0x11000, 2 * K, Prot::READ, RegionKind::Heap, true)
        .unwrap();
    assert_eq!(
        removed,
        vec![Unmapped {
            vaddr: 0x11000,
            phys: 0x7000_0000,
            size: PageSize::Base4K
        }]
    );
    assert_eq!(
        regions(&s),
        vec![
            (0x10000, 0x11000, Prot::RW, ANON),
            (0x11000, 0x13000, Prot::READ, RegionKind::Heap),
            (0x13000, 0x14000, Prot::RW, ANON),
            (0x14000, 0x15000, Prot::READ, RegionKind::Image),
        ]
    );
    assert_eq!(s.resolve(0x11000), None);
    assert_eq!(s.resolve(0x13000).map(|t| t.phys), Some(0x7000_1000));
    assert_eq!(s.region_at(0xffff), None);
    assert_eq!(s.region_at(0x15000), None);
}

#[test]
fn adjacent_compatible_regions_merge() {
    let (mut s, _) = space();
    s.map_region(0x10000, 4 * K, Prot::RW, ANON, false).unwrap();
    s.map_region(0x18000, 4 * K, Prot::RW, ANON, false).unwrap();
    // Fills the gap exactly: all three merge.
    s.map_region(0x14000, 4 * K, Prot::RW, ANON, false).unwrap();
    assert_eq!(regions(&s), vec![(0x10000, 0x1c000, Prot::RW, ANON)]);
    // Different kind or protection next door: no merge.
    s.map_region(
        0x1c000,
        K,
        Prot::RW,
        RegionKind::Anonymous { shared: true },
        false,
    )
    .unwrap();
    s.map_region(0xf000, K, Prot::READ, ANON, false).unwrap();
    assert_eq!(s.regions().count(), 3);
    // Protecting the neighbour to match merges it in.
    protect(&mut s, 0xf000, K, Prot::RW).unwrap();
    assert_eq!(regions(&s)[0], (0xf000, 0x1c000, Prot::RW, ANON));
    // Heap grows by adjacent map_region (brk).
    s.map_region(0x100000, 8 * K, Prot::RW, RegionKind::Heap, false)
        .unwrap();
    s.map_region(0x108000, 8 * K, Prot::RW, RegionKind::Heap, false)
        .unwrap();
    assert_eq!(
        s.region_at(0x100000).map(|r| (r.start, r.end)),
        Some((0x100000, 0x110000))
    );
}

#[test]
fn file_regions_merge_only_where_the_file_continues() {
    let (mut s, _) = space();
    let file = |page| RegionKind::File {
        shared: false,
        file: 7,
        page,
    };
    s.map_region(0x10000, 2 * K, Prot::READ, file(0), false)
        .unwrap();
    // Pages 2-3 of the file right after pages 0-1: one region.
    s.map_region(0x12000, 2 * K, Prot::READ, file(2), false)
        .unwrap();
    assert_eq!(regions(&s), vec![(0x10000, 0x14000, Prot::READ, file(0))]);
    // Page 9 next: another region, as is another file's page 4.
    s.map_region(0x14000, K, Prot::READ, file(9), false)
        .unwrap();
    let other = RegionKind::File {
        shared: false,
        file: 8,
        page: 4,
    };
    s.map_region(0xf000, K, Prot::READ, other, false).unwrap();
    assert_eq!(s.regions().count(), 3);
    // A hole punched in the middle leaves each part its own file page.
    s.unmap(0x11000, K).unwrap();
    assert_eq!(
        regions(&s),
        vec![
            (0xf000, 0x10000, Prot::READ, other),
            (0x10000, 0x11000, Prot::READ, file(0)),
            (0x12000, 0x14000, Prot::READ, file(2)),
            (0x14000, 0x15000, Prot::READ, file(9)),
        ]
    );
    // Protecting part of a region splits it the same way, and protecting it back merges.
    protect(&mut s, 0x13000, K, Prot::RW).unwrap();
    assert_eq!(s.region_at(0x13000).unwrap().kind, file(3));
    protect(&mut s, 0x13000, K, Prot::READ).unwrap();
    assert_eq!(s.region_at(0x13000).unwrap().start, 0x12000);
    assert_eq!(file(2).advanced(3 * K), file(5));
    assert_eq!(ANON.advanced(3 * K), ANON);
}

#[test]
fn map_frame_sets_entry_bits_from_prot() {
    let (mut s, _) = space();
    s.map_region(0x40_0000, 16 * K, Prot::RWX, ANON, false)
        .unwrap();
    let cases = [
        (Prot::READ, PRESENT | USER | NX, Prot::READ),
        (Prot::RW, PRESENT | USER | WRITABLE | NX, Prot::RW),
        (Prot::RX, PRESENT | USER, Prot::RX),
        (Prot::RWX, PRESENT | USER | WRITABLE, Prot::RWX),
        // Write-only and exec-only are readable on x86-64.
        (
            Prot {
                read: false,
                write: true,
                exec: false,
            },
            PRESENT | USER | WRITABLE | NX,
            Prot::RW,
        ),
        (
            Prot {
                read: false,
                write: false,
                exec: true,
            },
            PRESENT | USER,
            Prot::RX,
        ),
    ];
    for (i, (prot, bits, effective)) in cases.into_iter().enumerate() {
        let va = 0x40_0000 + i as u64 * K;
        let phys = 0x1234_5000 + i as u64 * K;
        s.map_frame(va, phys, PageSize::Base4K, prot).unwrap();
        let e = leaf(&s, va);
        assert_eq!(e, phys | bits, "{prot:?}");
        let t = s.resolve(va + 0x123).unwrap();
        assert_eq!(
            t,
            Translation {
                phys: phys + 0x123,
                frame: phys,
                size: PageSize::Base4K,
                prot: effective,
                cow: false
            }
        );
        assert_eq!(effective, prot.effective());
    }
    assert_eq!(
        s.map_frame(0x40_0000, 0x9000, PageSize::Base4K, Prot::READ),
        Err(MapError::AlreadyMapped)
    );
}

#[test]
fn map_frame_checks_region_alignment_and_prot_none() {
    let (mut s, mem) = space();
    s.map_region(0x40_0000, 8 * K, Prot::RW, ANON, false)
        .unwrap();
    s.map_region(0x50_0000, 8 * K, Prot::NONE, ANON, false)
        .unwrap();
    let f =
        |s: &mut AddressSpace<FakeMemory>, va, phys, size, prot| s.map_frame(va, phys, size, prot);
    assert_eq!(
        f(&mut s, 0x3f_f000, 0x1000, PageSize::Base4K, Prot::RW),
        Err(MapError::NotInRegion)
    );
    assert_eq!(
        f(&mut s, 0x40_8000, 0x1000, PageSize::Base4K, Prot::RW),
        Err(MapError::NotInRegion)
    );
    assert_eq!(
        f(&mut s, 0x40_0800, 0x1000, PageSize::Base4K, Prot::RW),
        Err(MapError::BadAddress)
    );
    assert_eq!(
        f(&mut s, 0x40_0000, 0x1800, PageSize::Base4K, Prot::RW),
        Err(MapError::BadAddress)
    );
    assert_eq!(
        f(&mut s, 0x40_0000, 1 << 52, PageSize::Base4K, Prot::RW),
        Err(MapError::BadAddress)
    );
    assert_eq!(
        f(&mut s, 0x40_0000, 0x1000, PageSize::Base4K, Prot::NONE),
        Err(MapError::ProtNone)
    );
    assert_eq!(
        f(&mut s, 0x50_0000, 0x1000, PageSize::Base4K, Prot::READ),
        Err(MapError::ProtNone)
    );
    assert_eq!(
        f(&mut s, USER_END - K, 0x1000, PageSize::Base4K, Prot::READ),
        Err(MapError::NotInRegion)
    );
    assert_eq!(
        f(&mut s, USER_END, 0x1000, PageSize::Base4K, Prot::READ),
        Err(MapError::BadAddress)
    );
    assert_eq!(
        f(
            &mut s,
            0xffff_8000_0000_0000,
            0x1000,
            PageSize::Base4K,
            Prot::READ
        ),
        Err(MapError::BadAddress)
    );
    // A 2 MiB page needs the whole 2 MiB inside regions.
    assert_eq!(
        f(&mut s, 0x40_0000, 0x20_0000, PageSize::Large2M, Prot::RW),
        Err(MapError::NotInRegion)
    );
    // Nothing failed half-way: no tables were allocated.
    assert_eq!(mem.live(), 1);
}

#[test]
fn large_pages_map_resolve_and_conflict() {
    let (mut s, mem) = space();
    s.map_region(0x4000_0000, 3 * M2, Prot::RW, ANON, false)
        .unwrap();
    s.map_frame(0x4000_0000, 0x8000_0000, PageSize::Large2M, Prot::RW)
        .unwrap();
    // PML4 table, PDPT, PD: no page table for a 2 MiB page.
    assert_eq!(s.table_count(), 3);
    assert_eq!(mem.live(), 3);
    let e = leaf(&s, 0x4000_0000);
    assert_eq!(e, 0x8000_0000 | PRESENT | USER | WRITABLE | NX | HUGE);
    assert_eq!(s.walk(0x4000_0000).entries[3], None);
    let t = s.resolve(0x4012_3456).unwrap();
    assert_eq!(
        t,
        Translation {
            phys: 0x8012_3456,
            frame: 0x8000_0000,
            size: PageSize::Large2M,
            prot: Prot::RW,
            cow: false
        }
    );
    // 4 KiB inside a 2 MiB page, 2 MiB over a 4 KiB page.
    assert_eq!(
        s.map_frame(0x4010_0000, 0x1000, PageSize::Base4K, Prot::RW),
        Err(MapError::AlreadyMapped)
    );
    s.map_frame(0x4021_0000, 0x1000, PageSize::Base4K, Prot::RW)
        .unwrap();
    assert_eq!(
        s.map_frame(0x4020_0000, 0x20_0000, PageSize::Large2M, Prot::RW),
        Err(MapError::AlreadyMapped)
    );
    assert_eq!(
        s.map_frame(0x4040_0000, 0x10_0000, PageSize::Large2M, Prot::RW),
        Err(MapError::BadAddress)
    );
    assert_eq!(
        s.map_frame(0x4040_1000, 0x20_0000, PageSize::Large2M, Prot::RW),
        Err(MapError::BadAddress)
    );
    s.map_frame(0x4040_0000, 0x20_0000, PageSize::Large2M, Prot::READ)
        .unwrap();
    let pages: Vec<Mapping> = s.pages().collect();
    assert_eq!(
        pages,
        vec![
            Mapping {
                vaddr: 0x4000_0000,
                phys: 0x8000_0000,
                size: PageSize::Large2M,
                prot: Prot::RW,
                cow: false
            },
            Mapping {
                vaddr: 0x4021_0000,
                phys: 0x1000,
                size: PageSize::Base4K,
                prot: Prot::RW,
                cow: false
            },
            Mapping {
                vaddr: 0x4040_0000,
                phys: 0x20_0000,
                size: PageSize::Large2M,
                prot: Prot::READ,
                cow: false
            },
        ]
    );
}

#[test]
fn unmap_whole_large_page_reports_it_once() {
    let (mut s, mem) = space();
    s.map_region(0x4000_0000, 2 * M2, Prot::RW, ANON, false)
        .unwrap();
    s.map_frame(0x4020_0000, 0x8000_0000, PageSize::Large2M, Prot::RW)
        .unwrap();
    let removed = s.unmap(0x4000_0000, 2 * M2).unwrap();
    assert_eq!(
        removed,
        vec![Unmapped {
            vaddr: 0x4020_0000,
            phys: 0x8000_0000,
            size: PageSize::Large2M
        }]
    );
    assert_eq!(s.regions().count(), 0);
    assert_eq!(mem.live(), 1);
    assert_eq!(s.table_count(), 1);
}

#[test]
fn unmap_part_of_large_page_splits_it() {
    let (mut s, mem) = space();
    s.map_region(0x4000_0000, M2, Prot::RW, ANON, false)
        .unwrap();
    s.map_frame(0x4000_0000, 0x8000_0000, PageSize::Large2M, Prot::RW)
        .unwrap();
    // Remove 3 pages from the middle.
    let removed = s.unmap(0x4010_0000, 3 * K).unwrap();
    let want: Vec<Unmapped> = (0..3)
        .map(|i| Unmapped {
            vaddr: 0x4010_0000 + i * K,
            phys: 0x8010_0000 + i * K,
            size: PageSize::Base4K,
        })
        .collect();
    assert_eq!(removed, want);
    // The rest stays mapped to the same frames, now as 4 KiB pages with the same rights.
    assert_eq!(mem.live(), 4);
    for off in [0, 0xf_f000, 0x10_3000, 0x1f_f000] {
        let t = s.resolve(0x4000_0000 + off).unwrap();
        assert_eq!(
            (t.frame, t.size, t.prot),
            (0x8000_0000 + off, PageSize::Base4K, Prot::RW)
        );
    }
    for off in [0x10_0000, 0x10_2000] {
        assert_eq!(s.resolve(0x4000_0000 + off), None);
    }
    assert_eq!(s.pages().count(), 509);
    // Regions split around the hole.
    assert_eq!(
        regions(&s),
        vec![
            (0x4000_0000, 0x4010_0000, Prot::RW, ANON),
            (0x4010_3000, 0x4020_0000, Prot::RW, ANON)
        ]
    );
    // Unmapping the rest frees every table.
    let rest = s.unmap(0x4000_0000, M2).unwrap();
    assert_eq!(rest.len(), 509);
    assert_eq!(mem.live(), 1);
}

#[test]
fn unmap_straddling_two_large_pages() {
    let (mut s, _) = space();
    s.map_region(0x4000_0000, 2 * M2, Prot::RW, ANON, false)
        .unwrap();
    s.map_frame(0x4000_0000, 0x8000_0000, PageSize::Large2M, Prot::RW)
        .unwrap();
    s.map_frame(0x4020_0000, 0x6000_0000, PageSize::Large2M, Prot::RW)
        .unwrap();
    let removed = s.unmap(0x401f_f000, 2 * K).unwrap();
    assert_eq!(
        removed,
        vec![
            Unmapped {
                vaddr: 0x401f_f000,
                phys: 0x801f_f000,
                size: PageSize::Base4K
            },
            Unmapped {
                vaddr: 0x4020_0000,
                phys: 0x6000_0000,
                size: PageSize::Base4K
            },
        ]
    );
    assert_eq!(s.resolve(0x401f_e000).map(|t| t.frame), Some(0x801f_e000));
    assert_eq!(s.resolve(0x4020_1000).map(|t| t.frame), Some(0x6000_1000));
}

#[test]
fn unmap_nothing_is_fine_and_bad_ranges_fail() {
    let (mut s, _) = space();
    assert_eq!(s.unmap(0x1000, 0x10000), Ok(vec![]));
    assert_eq!(s.unmap(0x1000, 1 << 46), Ok(vec![]));
    assert_eq!(s.unmap(0x1001, K), Err(MapError::BadAddress));
    assert_eq!(s.unmap(0x1000, 0), Err(MapError::BadAddress));
    assert_eq!(s.unmap(0x1000, u64::MAX - 10), Err(MapError::BadAddress));
    assert_eq!(s.unmap(USER_END - K, 2 * K), Err(MapError::BadAddress));
    assert_eq!(s.unmap(USER_END - K, K), Ok(vec![]));
    assert_eq!(s.unmap(0xffff_8000_0000_0000, K), Err(MapError::BadAddress));
    assert_eq!(s.unmap(0x0000_9000_0000_0000, K), Err(MapError::BadAddress));
    assert_eq!(
        s.map_region(0x1000, 0, Prot::RW, ANON, false),
        Err(MapError::BadAddress)
    );
    assert_eq!(
        s.map_region(!0xfff, K, Prot::RW, ANON, false),
        Err(MapError::BadAddress)
    );
    assert_eq!(
        s.map_region(USER_END - K, 2 * K, Prot::RW, ANON, true),
        Err(MapError::BadAddress)
    );
    assert_eq!(
        protect(&mut s, 0x1003, K, Prot::RW),
        Err(MapError::BadAddress)
    );
    assert_eq!(
        protect(&mut s, 0x1000, 0, Prot::RW),
        Err(MapError::BadAddress)
    );
    // The very last user page is usable.
    s.map_region(USER_END - K, K, Prot::RW, ANON, false)
        .unwrap();
    s.map_frame(USER_END - K, 0x5000, PageSize::Base4K, Prot::RW)
        .unwrap();
    assert_eq!(s.resolve(USER_END - 1).map(|t| t.phys), Some(0x5fff));
    assert_eq!(s.resolve(USER_END), None);
}

#[test]
fn a_read_only_channel_region_cannot_be_made_writable() {
    let (mut s, _) = space();
    let read_only = RegionKind::Channel { writable: false };
    let writable = RegionKind::Channel { writable: true };
    s.map_region(0x10_0000, 2 * K, Prot::READ, read_only, false)
        .unwrap();
    s.map_region(0x10_2000, 2 * K, Prot::RW, writable, false)
        .unwrap();
    // Over the read-only region, alone or with its neighbour: refused, nothing changed.
    assert_eq!(
        protect(&mut s, 0x10_1000, K, Prot::RW),
        Err(MapError::Denied)
    );
    assert_eq!(
        protect(&mut s, 0x10_1000, 2 * K, Prot::RW),
        Err(MapError::Denied)
    );
    assert_eq!(MapError::Denied.to_errno(), Errno::EACCES);
    // Less access is fine, and so is writing where the region allows it.
    assert_eq!(protect(&mut s, 0x10_0000, K, Prot::NONE), Ok(vec![]));
    assert_eq!(protect(&mut s, 0x10_2000, 2 * K, Prot::READ), Ok(vec![]));
    assert_eq!(protect(&mut s, 0x10_2000, 2 * K, Prot::RW), Ok(vec![]));
    assert_eq!(
        regions(&s),
        vec![
            (0x10_0000, 0x10_1000, Prot::NONE, read_only),
            (0x10_1000, 0x10_2000, Prot::READ, read_only),
            (0x10_2000, 0x10_4000, Prot::RW, writable),
        ]
    );
}

#[test]
fn protect_changes_regions_and_entries() {
    let (mut s, _) = space();
    s.map_region(0x10_0000, 8 * K, Prot::RW, ANON, false)
        .unwrap();
    for i in [0, 2, 3, 5] {
        s.map_frame(
            0x10_0000 + i * K,
            0x20_0000 + i * K,
            PageSize::Base4K,
            Prot::RW,
        )
        .unwrap();
    }
    let changed = protect(&mut s, 0x10_2000, 4 * K, Prot::READ).unwrap();
    // Pages 2 and 3 changed (one range), page 5 changed; 4 is unmapped.
    assert_eq!(changed, vec![(0x10_2000, 2 * K), (0x10_5000, K)]);
    assert_eq!(leaf(&s, 0x10_2000), 0x20_2000 | PRESENT | USER | NX);
    assert_eq!(
        leaf(&s, 0x10_0000),
        0x20_0000 | PRESENT | USER | WRITABLE | NX
    );
    assert_eq!(
        regions(&s),
        vec![
            (0x10_0000, 0x10_2000, Prot::RW, ANON),
            (0x10_2000, 0x10_6000, Prot::READ, ANON),
            (0x10_6000, 0x10_8000, Prot::RW, ANON),
        ]
    );
    // Same protection again: nothing changes in hardware.
    assert_eq!(protect(&mut s, 0x10_2000, 4 * K, Prot::READ), Ok(vec![]));
    // Back to RW: the regions merge again.
    assert_eq!(
        protect(&mut s, 0x10_0000, 8 * K, Prot::RW).unwrap(),
        vec![(0x10_2000, 2 * K), (0x10_5000, K)]
    );
    assert_eq!(regions(&s), vec![(0x10_0000, 0x10_8000, Prot::RW, ANON)]);
    // A hole makes it NotMapped (ENOMEM), and nothing changes.
    s.unmap(0x10_4000, K).unwrap();
    assert_eq!(
        protect(&mut s, 0x10_0000, 8 * K, Prot::READ),
        Err(MapError::NotMapped)
    );
    assert_eq!(
        protect(&mut s, 0x20_0000, K, Prot::READ),
        Err(MapError::NotMapped)
    );
    assert_eq!(s.resolve(0x10_0000).unwrap().prot, Prot::RW);
    assert_eq!(s.regions().count(), 2);
    // Protection spanning two adjacent regions of different kinds.
    s.map_region(0x10_4000, K, Prot::READ, RegionKind::Stack, false)
        .unwrap();
    assert_eq!(
        protect(&mut s, 0x10_0000, 8 * K, Prot::RX).unwrap(),
        vec![(0x10_0000, K), (0x10_2000, 2 * K), (0x10_5000, K)]
    );
    assert_eq!(s.regions().count(), 3);
    assert!(s.regions().all(|r| r.prot == Prot::RX));
}

#[test]
fn prot_none_keeps_frames() {
    let (mut s, _) = space();
    s.map_region(0x10_0000, 2 * K, Prot::RW, ANON, false)
        .unwrap();
    s.map_frame(0x10_0000, 0x30_0000, PageSize::Base4K, Prot::RW)
        .unwrap();
    assert_eq!(
        protect(&mut s, 0x10_0000, 2 * K, Prot::NONE).unwrap(),
        vec![(0x10_0000, K)]
    );
    let e = decode(leaf(&s, 0x10_0000));
    assert!(!e.present && e.prot_none && e.addr == 0x30_0000);
    assert_eq!(
        s.resolve(0x10_0000),
        Some(Translation {
            phys: 0x30_0000,
            frame: 0x30_0000,
            size: PageSize::Base4K,
            prot: Prot::NONE,
            cow: false
        })
    );
    assert_eq!(s.pages().next().map(|m| m.prot), Some(Prot::NONE));
    // Nothing new can be mapped there, and the mapped page still counts as mapped.
    assert_eq!(
        s.map_frame(0x10_1000, 0x1000, PageSize::Base4K, Prot::READ),
        Err(MapError::ProtNone)
    );
    // Back to readable: the same frame is present again.
    assert_eq!(
        protect(&mut s, 0x10_0000, K, Prot::READ).unwrap(),
        vec![(0x10_0000, K)]
    );
    assert_eq!(leaf(&s, 0x10_0000), 0x30_0000 | PRESENT | USER | NX);
    protect(&mut s, 0x10_0000, K, Prot::NONE).unwrap();
    assert_eq!(
        s.unmap(0x10_0000, 2 * K).unwrap(),
        vec![Unmapped {
            vaddr: 0x10_0000,
            phys: 0x30_0000,
            size: PageSize::Base4K
        }]
    );
}

#[test]
fn protect_part_of_large_page_splits_only_when_needed() {
    let (mut s, mem) = space();
    s.map_region(0x4000_0000, M2, Prot::RW, ANON, false)
        .unwrap();
    s.map_frame(0x4000_0000, 0x8000_0000, PageSize::Large2M, Prot::RW)
        .unwrap();
    // Same protection: no split, no change.
    assert_eq!(protect(&mut s, 0x4000_0000, K, Prot::RW), Ok(vec![]));
    assert_eq!(s.resolve(0x4000_0000).unwrap().size, PageSize::Large2M);
    assert_eq!(mem.live(), 3);
    // The whole page: its entry changes in place.
    assert_eq!(
        protect(&mut s, 0x4000_0000, M2, Prot::READ),
        Ok(vec![(0x4000_0000, M2)])
    );
    assert_eq!(
        leaf(&s, 0x4000_0000),
        0x8000_0000 | PRESENT | USER | NX | HUGE
    );
    // One page of it: split, the whole 2 MiB is reported.
    assert_eq!(
        protect(&mut s, 0x4000_1000, K, Prot::NONE),
        Ok(vec![(0x4000_0000, M2)])
    );
    assert_eq!(mem.live(), 4);
    let t = |va| s.resolve(va).map(|t| (t.frame, t.size, t.prot));
    assert_eq!(
        t(0x4000_0000),
        Some((0x8000_0000, PageSize::Base4K, Prot::READ))
    );
    assert_eq!(
        t(0x4000_1000),
        Some((0x8000_1000, PageSize::Base4K, Prot::NONE))
    );
    assert_eq!(
        t(0x4000_2000),
        Some((0x8000_2000, PageSize::Base4K, Prot::READ))
    );
    assert_eq!(regions(&s).len(), 3);
}

#[test]
fn protect_keeps_accessed_and_dirty_bits() {
    let (mut s, mut mem) = space();
    s.map_region(0x10_0000, K, Prot::RW, ANON, false).unwrap();
    s.map_frame(0x10_0000, 0x30_0000, PageSize::Base4K, Prot::RW)
        .unwrap();
    // Play the hardware walker: set A and D in the leaf.
    let w = s.walk(0x10_0000);
    let pt = w.entries[2].unwrap() & ADDR_MASK;
    let idx = 0x100;
    assert_eq!(mem.read(pt, idx) & ADDR_MASK, 0x30_0000);
    mem.write(
        pt,
        idx,
        mem.read(pt, idx) | vspace::ACCESSED | vspace::DIRTY,
    );
    // Setting the same protection is not a change; a new one keeps A/D.
    assert_eq!(protect(&mut s, 0x10_0000, K, Prot::RW), Ok(vec![]));
    assert_eq!(
        protect(&mut s, 0x10_0000, K, Prot::READ),
        Ok(vec![(0x10_0000, K)])
    );
    let e = decode(mem.read(pt, idx));
    assert!(e.accessed && e.dirty && !e.writable && e.present);
}

#[test]
fn kernel_half_is_never_touched() {
    let (mut s, mem) = space();
    let k = kernel_entries();
    s.map_region(0, USER_END, Prot::RW, ANON, false).unwrap();
    for va in [0, 0x7fff_ff00_0000, 0x40_0000_0000, USER_END - K] {
        let size = if va % M2 == 0 && va != 0 {
            PageSize::Large2M
        } else {
            PageSize::Base4K
        };
        s.map_frame(va, 0x20_0000, size, Prot::RWX).unwrap();
    }
    protect(&mut s, 0, USER_END, Prot::READ).unwrap();
    s.unmap(0x1000, USER_END - 0x1000).unwrap();
    for (i, &kernel) in k.iter().enumerate() {
        assert_eq!(mem.read(s.root(), 256 + i), kernel);
    }
    assert_eq!(s.resolve(0xffff_8000_0000_0000), None);
    assert_eq!(
        s.walk(0xffff_8000_0000_0000).entries,
        [Some(k[0]), None, None, None]
    );
    s.clear();
    for (i, &kernel) in k.iter().enumerate() {
        assert_eq!(mem.read(s.root(), 256 + i), kernel);
        assert_eq!(mem.read(s.root(), i), 0);
    }
}

#[test]
fn find_free_is_top_down_and_honours_hints() {
    let (mut s, _) = space();
    let (floor, ceil) = (0x1_0000, 0x100_0000);
    assert_eq!(s.find_free(3 * K, 0, floor, ceil), Some(ceil - 3 * K));
    // Length and ceiling round to pages.
    assert_eq!(s.find_free(1, 0, floor, ceil + 5), Some(ceil - K));
    s.map_region(ceil - 2 * K, 2 * K, Prot::RW, ANON, false)
        .unwrap();
    s.map_region(ceil - 8 * K, 4 * K, Prot::RW, ANON, false)
        .unwrap();
    // The 2-page gap between the regions fits 2 pages but not 3.
    assert_eq!(s.find_free(2 * K, 0, floor, ceil), Some(ceil - 4 * K));
    assert_eq!(s.find_free(3 * K, 0, floor, ceil), Some(ceil - 11 * K));
    // A free hint is taken as is (rounded up); a taken one falls back to top-down.
    assert_eq!(s.find_free(K, 0x20_0000, floor, ceil), Some(0x20_0000));
    assert_eq!(s.find_free(K, 0x20_0001, floor, ceil), Some(0x20_1000));
    assert_eq!(
        s.find_free(K, ceil - 2 * K, floor, ceil),
        Some(ceil - 3 * K)
    );
    assert_eq!(s.find_free(K, 0x1000, floor, ceil), Some(ceil - 3 * K));
    // Floor: 3 pages fit in no gap above it.
    assert_eq!(s.find_free(3 * K, 0, ceil - 9 * K, ceil), None);
    assert_eq!(
        s.find_free(3 * K, 0, ceil - 11 * K, ceil),
        Some(ceil - 11 * K)
    );
    assert_eq!(s.find_free(0, 0, floor, ceil), None);
    assert_eq!(s.find_free(u64::MAX, 0, floor, ceil), None);
    assert_eq!(s.find_free(K, 0, ceil, floor), None);
    // The ceiling is capped at the end of the user half.
    assert_eq!(s.find_free(K, 0, 0, u64::MAX), Some(USER_END - K));
    // A region that ends above the ceiling.
    s.map_region(0x200_0000, 0x100_0000, Prot::RW, ANON, false)
        .unwrap();
    assert_eq!(
        s.find_free(K, 0, 0x100_0000, 0x280_0000),
        Some(0x200_0000 - K)
    );
}

#[test]
fn clear_and_drop_free_every_table() {
    let (mut s, mem) = space();
    s.map_region(0x1000, 0x1_0000_0000, Prot::RW, ANON, false)
        .unwrap();
    s.map_frame(0x2000, 0x5000, PageSize::Base4K, Prot::RW)
        .unwrap();
    s.map_frame(0x8000_0000, 0x20_0000, PageSize::Large2M, Prot::READ)
        .unwrap();
    assert_eq!(mem.live(), 5);
    let removed = s.clear();
    assert_eq!(
        removed,
        vec![
            Unmapped {
                vaddr: 0x2000,
                phys: 0x5000,
                size: PageSize::Base4K
            },
            Unmapped {
                vaddr: 0x8000_0000,
                phys: 0x20_0000,
                size: PageSize::Large2M
            },
        ]
    );
    assert_eq!(s.regions().count(), 0);
    assert_eq!(mem.live(), 1);
    assert_eq!(s.table_count(), 1);
    s.map_region(0x1000, K, Prot::RW, ANON, false).unwrap();
    s.map_frame(0x1000, 0x5000, PageSize::Base4K, Prot::RW)
        .unwrap();
    assert_eq!(mem.live(), 4);
    drop(s);
    assert_eq!(mem.live(), 0);
}

#[test]
fn map_unmap_loop_returns_table_count_to_start() {
    let (mut s, mem) = space();
    let start = s.table_count();
    let bases = [
        0x1000,
        0x3fff_f000,
        0x7f_ffff_f000,
        0x7fff_bfff_e000,
        0x5555_5555_4000,
    ];
    for round in 0..200u64 {
        let base = bases[round as usize % bases.len()];
        s.map_region(base, 2 * K, Prot::RW, ANON, false).unwrap();
        s.map_frame(base, 0x10_0000 + round * K, PageSize::Base4K, Prot::RW)
            .unwrap();
        s.map_frame(base + K, 0x20_0000, PageSize::Base4K, Prot::RW)
            .unwrap();
        let large = (base + 0x4000_0000) & !(M2 - 1);
        s.map_region(large, M2, Prot::READ, ANON, false).unwrap();
        s.map_frame(large, 0x4000_0000, PageSize::Large2M, Prot::READ)
            .unwrap();
        assert!(s.table_count() > start);
        // Unmap in pieces, including half of the large page first.
        assert_eq!(s.unmap(base + K, K).unwrap().len(), 1);
        assert_eq!(s.unmap(large + M2 / 2, M2 / 2).unwrap().len(), 256);
        assert_eq!(s.unmap(large, M2 / 2).unwrap().len(), 256);
        assert_eq!(s.unmap(base, K).unwrap().len(), 1);
        assert_eq!(s.table_count(), start, "round {round}");
        assert_eq!(mem.live(), start);
    }
    // Fresh allocations were reused, not leaked.
    assert!(mem.0.borrow().next < 0x100_0000 + 0x100 * K);
}

#[test]
fn out_of_memory_changes_nothing() {
    let (mut s, mem) = space();
    s.map_region(0x4000_0000, 2 * M2, Prot::RW, ANON, false)
        .unwrap();
    // A 4 KiB page needs PDPT, PD and PT; with two tables left it fails cleanly.
    mem.set_budget(Some(2));
    assert_eq!(
        s.map_frame(0x4000_0000, 0x1000, PageSize::Base4K, Prot::RW),
        Err(MapError::OutOfMemory)
    );
    assert_eq!((mem.live(), s.table_count(), s.pages().count()), (1, 1, 0));
    // A 2 MiB page needs only two.
    s.map_frame(0x4020_0000, 0x8000_0000, PageSize::Large2M, Prot::RW)
        .unwrap();
    assert_eq!(mem.live(), 3);
    let before: Vec<Mapping> = s.pages().collect();
    let regions_before = regions(&s);
    // Splitting needs a page table: unmap, protect and MAP_FIXED fail without one.
    mem.set_budget(Some(0));
    assert_eq!(s.unmap(0x4020_0000, K), Err(MapError::OutOfMemory));
    assert_eq!(
        protect(&mut s, 0x4020_0000, K, Prot::READ),
        Err(MapError::OutOfMemory)
    );
    assert_eq!(
        s.map_region(0x4030_0000, K, Prot::READ, ANON, true),
        Err(MapError::OutOfMemory)
    );
    assert_eq!(s.pages().collect::<Vec<_>>(), before);
    assert_eq!(regions(&s), regions_before);
    // Operations that need no table still work.
    assert_eq!(
        protect(&mut s, 0x4020_0000, M2, Prot::READ).unwrap(),
        vec![(0x4020_0000, M2)]
    );
    assert_eq!(s.unmap(0x4000_0000, M2), Ok(vec![]));
    // Both pages straddling a range's ends need a table each; one is not enough.
    s.map_frame(0x4000_0000, 0x6000_0000, PageSize::Large2M, Prot::RW)
        .unwrap_err();
    s.map_region(0x4000_0000, M2, Prot::READ, ANON, false)
        .unwrap();
    mem.set_budget(None);
    s.map_frame(0x4000_0000, 0x6000_0000, PageSize::Large2M, Prot::READ)
        .unwrap();
    mem.set_budget(Some(1));
    let before: Vec<Mapping> = s.pages().collect();
    assert_eq!(s.unmap(0x401f_f000, 2 * K), Err(MapError::OutOfMemory));
    assert_eq!(s.pages().collect::<Vec<_>>(), before);
    assert_eq!(mem.live(), 3);
    mem.set_budget(Some(2));
    assert_eq!(s.unmap(0x401f_f000, 2 * K).unwrap().len(), 2);
}

#[test]
fn two_instances_agree_despite_different_table_addresses() {
    let (mut a, ma) = space_at(0x10_0000);
    let (mut b, mb) = space_at(0x7_0000_0000);
    let run = |s: &mut AddressSpace<FakeMemory>| {
        let mut log = Vec::new();
        let va = s.find_free(3 * M2, 0, 0x1_0000, 0x7fff_0000_0000).unwrap();
        log.push(format!("{va:#x}"));
        log.push(format!(
            "{:?}",
            s.map_region(va, 3 * M2, Prot::RW, ANON, false)
        ));
        let large = (va + M2 - 1) & !(M2 - 1);
        log.push(format!(
            "{:?}",
            s.map_frame(large, 0x20_0000, PageSize::Large2M, Prot::RW)
        ));
        log.push(format!(
            "{:?}",
            s.map_frame(va, 0x3000, PageSize::Base4K, Prot::RX)
        ));
        log.push(format!("{:?}", protect(s, large + K, K, Prot::NONE)));
        log.push(format!("{:?}", s.unmap(large + 8 * K, M2)));
        log.push(format!("{:?}", s.pages().collect::<Vec<_>>()));
        log.push(format!("{:?}", s.regions().collect::<Vec<_>>()));
        log.push(format!("{:?}", s.resolve(large + K)));
        log.push(format!("{}", s.table_count()));
        log
    };
    let (la, lb) = (run(&mut a), run(&mut b));
    assert_eq!(la, lb);
    assert_ne!(a.root(), b.root());
    assert_eq!(ma.live(), mb.live());
}

#[test]
fn errors_have_errnos_and_messages() {
    let cases = [
        (MapError::OutOfMemory, Errno::ENOMEM),
        (MapError::Overlap, Errno::EEXIST),
        (MapError::AlreadyMapped, Errno::EEXIST),
        (MapError::NotInRegion, Errno::EFAULT),
        (MapError::NotMapped, Errno::ENOMEM),
        (MapError::BadAddress, Errno::EINVAL),
        (MapError::ProtNone, Errno::EFAULT),
    ];
    let mut messages = std::collections::HashSet::new();
    for (e, errno) in cases {
        assert_eq!(e.to_errno(), errno, "{e:?}");
        let msg = e.to_string();
        assert!(msg.len() > 10, "{e:?}: {msg}");
        assert!(messages.insert(msg), "{e:?} has a duplicate message");
    }
}

#[test]
fn decode_and_prot_helpers() {
    let e = decode(0x8000_0000_1234_5067 | NX);
    assert!(e.present && e.writable && e.user && e.accessed && e.dirty && e.no_exec);
    assert!(!e.huge && !e.prot_none);
    assert_eq!(e.addr, 0x1234_5000);
    assert_eq!(
        e.to_string(),
        "0x8000000012345067 -> 0x12345000 [P W U A D NX]"
    );
    let n = decode(0x20_0000 | PROT_NONE | HUGE | USER);
    assert_eq!(n.to_string(), "0x200284 -> 0x200000 [U PS PROT_NONE]");
    assert_eq!(decode(0).to_string(), "0x0 -> 0x0 []");
    assert_eq!(Prot::from_linux(3), Some(Prot::RW));
    assert_eq!(Prot::from_linux(5), Some(Prot::RX));
    assert_eq!(Prot::from_linux(0), Some(Prot::NONE));
    assert_eq!(Prot::from_linux(8), None);
    assert_eq!(Prot::RX.to_linux(), 5);
    assert_eq!(Prot::RW.to_string(), "rw-");
    assert_eq!(Prot::NONE.to_string(), "---");
    let r = Region {
        start: 0x1000,
        end: 0x3000,
        prot: Prot::READ,
        kind: RegionKind::Stack,
    };
    assert!(r.contains(0x2fff) && !r.contains(0x3000) && !r.contains(0xfff));
    assert_eq!(r.len(), 0x2000);
}

/// Maps `n` pages with a frame each, every `stride` pages from `base`, in one region.
fn scattered(s: &mut AddressSpace<FakeMemory>, base: u64, n: u64, stride: u64) {
    s.map_region(base, n * stride * K, Prot::RW, ANON, false)
        .unwrap();
    for i in 0..n {
        s.map_frame(
            base + i * stride * K,
            0x4000_0000 + i * K,
            PageSize::Base4K,
            Prot::RW,
        )
        .unwrap();
    }
}

#[test]
fn unmap_steps_remove_what_unmap_removes_a_bounded_number_at_a_time() {
    let (mut a, mem_a) = space();
    let (mut b, _) = space();
    scattered(&mut a, 0x100_0000, 700, 3);
    scattered(&mut b, 0x100_0000, 700, 3);
    let tables_before = mem_a.live();
    let all = a.unmap(0x100_0000, 2100 * K).unwrap();
    assert_eq!(all.len(), 700);
    let mut stepped = Vec::new();
    let mut steps = 0;
    loop {
        let mut some = Vec::new();
        let more = b
            .unmap_step(0x100_0000, 2100 * K, 64, &mut |u| some.push(u))
            .unwrap();
        assert!(some.len() <= 64);
        // The regions go with the first step: nothing new can be mapped in the range.
        assert_eq!(b.regions().count(), 0);
        stepped.extend(some);
        steps += 1;
        if !more {
            break;
        }
    }
    assert_eq!(stepped, all);
    assert_eq!(steps, 700usize.div_ceil(64));
    assert_eq!(b.pages().count(), 0);
    assert_eq!(b.table_count(), a.table_count());
    assert!(mem_a.live() < tables_before);
}

#[test]
fn clear_steps_and_share_for_fork_are_bounded() {
    let (mut s, mem) = space();
    scattered(&mut s, 0x100_0000, 300, 2);
    let every: Vec<u64> = s.pages().map(|m| m.vaddr).collect();
    let mut pieces = Vec::new();
    let mut from = 0;
    loop {
        let mut piece = Vec::new();
        s.share_for_fork(from, 100, &mut |m| piece.push(m));
        assert!(piece.len() <= 100);
        let Some((last, _)) = piece.last() else { break };
        from = last.vaddr + last.size.bytes();
        pieces.extend(piece.iter().map(|(m, _)| m.vaddr));
    }
    assert_eq!(pieces, every);
    assert!(s.pages().all(|m| m.cow));
    let mut removed = 0;
    loop {
        let mut some = 0;
        let more = s.clear_step(128, &mut |_| some += 1);
        assert!(some <= 128);
        removed += some;
        if !more {
            break;
        }
    }
    assert_eq!(removed, 300);
    assert_eq!(s.regions().count(), 0);
    assert_eq!(s.table_count(), 1);
    assert_eq!(mem.live(), 1);
}

#[test]
fn replace_region_only_when_few_pages_are_mapped() {
    let (mut s, _) = space();
    scattered(&mut s, 0x100_0000, 10, 1);
    let mut removed = Vec::new();
    assert_eq!(
        s.replace_region(0x100_0000, 10 * K, Prot::READ, ANON, 9, &mut |u| removed
            .push(u)),
        Ok(false)
    );
    assert!(removed.is_empty());
    assert_eq!(s.pages().count(), 10);
    assert_eq!(
        s.replace_region(0x100_0000, 10 * K, Prot::READ, ANON, 10, &mut |u| removed
            .push(u)),
        Ok(true)
    );
    assert_eq!(removed.len(), 10);
    assert_eq!(
        regions(&s),
        vec![(0x100_0000, 0x100_0000 + 10 * K, Prot::READ, ANON)]
    );
}

#[test]
fn protect_reports_at_most_max_ranges() {
    let (mut s, _) = space();
    scattered(&mut s, 0x100_0000, 200, 2);
    let changed = protect(&mut s, 0x100_0000, 400 * K, Prot::READ).unwrap();
    assert_eq!(changed, vec![(0x100_0000, 399 * K)]);
    let (mut t, _) = space();
    scattered(&mut t, 0x100_0000, 10, 2);
    assert_eq!(
        protect(&mut t, 0x100_0000, 20 * K, Prot::READ)
            .unwrap()
            .len(),
        10
    );
    const { assert!(vspace::MAX_RANGES < 200) };
}

#[test]
fn region_count_is_bounded() {
    let (mut s, _) = space();
    // Alternating protections, so that no two neighbours merge.
    for i in 0..vspace::MAX_REGIONS as u64 - 1 {
        let prot = if i % 2 == 0 { Prot::READ } else { Prot::RW };
        s.map_region(0x100_0000 + i * 2 * K, K, prot, ANON, false)
            .unwrap();
    }
    assert_eq!(s.regions().count(), vspace::MAX_REGIONS - 1);
    let next = 0x100_0000 + vspace::MAX_REGIONS as u64 * 2 * K;
    assert_eq!(
        s.map_region(next, K, Prot::READ, ANON, false),
        Err(MapError::OutOfMemory)
    );
    // Splitting a region in two is refused too; removing one is not.
    assert_eq!(
        protect(&mut s, 0x100_0000, K, Prot::NONE),
        Err(MapError::OutOfMemory)
    );
    assert_eq!(s.unmap(0x100_0000, K).map(|v| v.len()), Ok(0));
    assert_eq!(s.regions().count(), vspace::MAX_REGIONS - 2);
}

#[test]
fn share_for_fork_makes_private_pages_copy_on_write_and_keeps_shared_ones() {
    let (mut s, _) = space();
    let shared = RegionKind::Anonymous { shared: true };
    s.map_region(0x10000, 2 * K, Prot::RW, ANON, false).unwrap();
    s.map_region(0x20000, K, Prot::RW, shared, false).unwrap();
    s.map_region(0x30000, K, Prot::READ, RegionKind::Image, false)
        .unwrap();
    s.map_frame(0x10000, 0x5000, PageSize::Base4K, Prot::RW)
        .unwrap();
    s.map_frame(0x11000, 0x6000, PageSize::Base4K, Prot::RW)
        .unwrap();
    s.map_frame(0x20000, 0x7000, PageSize::Base4K, Prot::RW)
        .unwrap();
    s.map_frame(0x30000, 0x8000, PageSize::Base4K, Prot::READ)
        .unwrap();
    protect(&mut s, 0x11000, K, Prot::NONE).unwrap();
    // Bounded: two pages, then the rest.
    let first = share(&mut s, 0, 2);
    let cow = |vaddr, phys, prot| Mapping {
        vaddr,
        phys,
        size: PageSize::Base4K,
        prot,
        cow: true,
    };
    assert_eq!(
        first,
        vec![
            (cow(0x10000, 0x5000, Prot::READ), true),
            (cow(0x11000, 0x6000, Prot::NONE), false),
        ]
    );
    let rest = share(&mut s, 0x12000, 10);
    assert_eq!(
        rest,
        vec![
            (
                Mapping {
                    vaddr: 0x20000,
                    phys: 0x7000,
                    size: PageSize::Base4K,
                    prot: Prot::RW,
                    cow: false
                },
                false
            ),
            (cow(0x30000, 0x8000, Prot::READ), false),
        ]
    );
    assert_eq!(leaf(&s, 0x10000) & (WRITABLE | COW), COW);
    assert!(s.resolve(0x10000).unwrap().cow);
    assert!(!s.resolve(0x20000).unwrap().cow);

    // The child maps what it was given, PROT_NONE included.
    let (mut child, _) = space_at(0x100_0000);
    child
        .map_region(0x10000, 2 * K, Prot::RW, ANON, false)
        .unwrap();
    for (m, _) in first.iter() {
        child.map_copy(m).unwrap();
    }
    assert_eq!(
        child.pages().collect::<Vec<_>>(),
        vec![first[0].0, first[1].0]
    );
    assert_eq!(child.map_copy(&first[0].0), Err(MapError::AlreadyMapped));
    assert_eq!(
        child.map_copy(&rest[1].0),
        Err(MapError::NotInRegion),
        "no region at 0x30000 in the child"
    );
}

#[test]
fn protect_keeps_copy_on_write_pages_read_only() {
    let (mut s, _) = space();
    s.map_region(0x10000, K, Prot::READ, ANON, false).unwrap();
    s.map_frame(0x10000, 0x5000, PageSize::Base4K, Prot::READ)
        .unwrap();
    share(&mut s, 0, 10);
    protect(&mut s, 0x10000, K, Prot::RW).unwrap();
    let t = s.resolve(0x10000).unwrap();
    assert_eq!((t.prot, t.cow), (Prot::READ, true));
    protect(&mut s, 0x10000, K, Prot::NONE).unwrap();
    assert_eq!(
        leaf(&s, 0x10000) & (PRESENT | PROT_NONE | COW),
        PROT_NONE | COW
    );
    protect(&mut s, 0x10000, K, Prot::RWX).unwrap();
    let t = s.resolve(0x10000).unwrap();
    assert_eq!((t.prot, t.cow), (Prot::RX, true));
}

#[test]
fn break_cow_maps_the_new_frame_with_the_region_protection() {
    let (mut s, _) = space();
    s.map_region(0x10000, 2 * K, Prot::RW, ANON, false).unwrap();
    s.map_frame(0x10000, 0x5000, PageSize::Base4K, Prot::RW)
        .unwrap();
    s.map_frame(0x11000, 0x6000, PageSize::Base4K, Prot::RW)
        .unwrap();
    share(&mut s, 0, 10);
    // Not copy-on-write, wrong old frame, unaligned new frame, no page: nothing changes.
    assert!(!s.break_cow(0x10000, 0x6000, 0x9000));
    assert!(!s.break_cow(0x10000, 0x5000, 0x9001));
    assert!(!s.break_cow(0x12000, 0x5000, 0x9000));
    assert!(s.resolve(0x10000).unwrap().cow);
    // A copy.
    assert!(s.break_cow(0x10000, 0x5000, 0x9000));
    let t = s.resolve(0x10000).unwrap();
    assert_eq!((t.frame, t.prot, t.cow), (0x9000, Prot::RW, false));
    assert!(!s.break_cow(0x10000, 0x9000, 0xa000), "already broken");
    // The frame itself, once no one else shares it.
    assert!(s.break_cow(0x11000, 0x6000, 0x6000));
    let t = s.resolve(0x11000).unwrap();
    assert_eq!((t.frame, t.prot, t.cow), (0x6000, Prot::RW, false));
    // The zero page of a read fault in a read-only region stays read-only once broken.
    s.map_region(0x20000, K, Prot::READ, ANON, false).unwrap();
    let zero = Mapping {
        vaddr: 0x20000,
        phys: 0x1000,
        size: PageSize::Base4K,
        prot: Prot::READ,
        cow: true,
    };
    s.map_copy(&zero).unwrap();
    assert!(s.break_cow(0x20000, 0x1000, 0xb000));
    assert_eq!(s.resolve(0x20000).unwrap().prot, Prot::READ);
}

#[test]
fn resident_pages_counts_the_frames_asked_for() {
    let (mut s, _) = space();
    assert_eq!(s.resident_pages(|_| true), 0);
    s.map_region(0x10000, 8 * K, Prot::RW, ANON, false).unwrap();
    s.map_region(0x4000_0000, M2, Prot::RW, ANON, false)
        .unwrap();
    s.map_frame(0x10000, 0x7000_0000, PageSize::Base4K, Prot::RW)
        .unwrap();
    s.map_frame(0x11000, 0x7000_1000, PageSize::Base4K, Prot::RW)
        .unwrap();
    // A frame every process shares (the zero page, say), which the caller leaves out.
    s.map_frame(0x12000, 0x6000_0000, PageSize::Base4K, Prot::READ)
        .unwrap();
    s.map_frame(0x4000_0000, 0x8000_0000, PageSize::Large2M, Prot::RW)
        .unwrap();
    // A PROT_NONE page still holds its frame.
    protect(&mut s, 0x11000, K, Prot::NONE).unwrap();
    assert_eq!(s.resident_pages(|_| true), 3 + 512);
    assert_eq!(s.resident_pages(|phys| phys != 0x6000_0000), 2 + 512);
    s.unmap(0x4000_0000, M2).unwrap();
    assert_eq!(s.resident_pages(|phys| phys != 0x6000_0000), 2);
}

#[test]
fn changed_ranges_coalesce_and_past_the_limit_become_one() {
    let mut r = Ranges::EMPTY;
    r.add(0x5000, K);
    r.add(0x1000, K);
    r.add(0x2000, K);
    r.add(0x4000, K);
    assert_eq!(r.as_slice(), &[(0x1000, 2 * K), (0x4000, 2 * K)]);
    r.add(0x3000, K);
    assert_eq!(r.as_slice(), &[(0x1000, 5 * K)]);
    let mut r = Ranges::EMPTY;
    for i in 0..MAX_RANGES as u64 {
        r.add(0x10_0000 + 2 * i * K, K);
    }
    assert_eq!(r.as_slice().len(), MAX_RANGES);
    r.add(0x1000, K);
    let end = 0x10_0000 + 2 * (MAX_RANGES as u64 - 1) * K + K;
    assert_eq!(r.as_slice(), &[(0x1000, end - 0x1000)]);
    r.add(end + 4 * K, K);
    assert_eq!(r.as_slice(), &[(0x1000, end + 5 * K - 0x1000)]);
}
