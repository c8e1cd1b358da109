//! `NCache`: carving into free lists, splitting, exhaustion, release and errors.

use frames::{
    AllocError, Frame, FrameSize, NCache, PhysRange, BASE_FRAMES_PER_LARGE, BASE_PAGE_SIZE,
    LARGE_PAGE_SIZE,
};

use crate::common::{check_partition, MockLinks, Owned};

const MIB: u64 = 1024 * 1024;

fn oom(node: usize, size: FrameSize) -> AllocError {
    AllocError::OutOfMemory { node, size }
}

#[test]
fn add_range_fills_counters() {
    let mut links = MockLinks::default();
    let mut nc = NCache::new(3);
    assert_eq!(nc.node(), 3);
    assert_eq!(
        (
            nc.free_base(),
            nc.free_large(),
            nc.free_bytes(),
            nc.total_bytes()
        ),
        (0, 0, 0, 0)
    );

    let c = links.add(&mut nc, PhysRange::new(0x1f_f000, 0x60_1000));
    assert_eq!((c.base_frames(), c.large_frames()), (2, 2));
    assert_eq!((nc.free_base(), nc.free_large()), (2, 2));
    assert_eq!(nc.total_bytes(), 2 * BASE_PAGE_SIZE + 2 * LARGE_PAGE_SIZE);
    assert_eq!(nc.free_bytes(), nc.total_bytes());
    assert_eq!(links.writes, 4, "one link write per frame");

    // Degenerate ranges add nothing and touch no memory.
    for r in [
        PhysRange::new(0x9000, 0x1000),
        PhysRange::new(0x1001, 0x1fff),
        PhysRange::EMPTY,
    ] {
        assert_eq!(links.add(&mut nc, r).bytes(), 0);
    }
    assert_eq!(links.writes, 4);

    let c = links.add(&mut nc, PhysRange::new(64 * MIB + 1, 70 * MIB));
    assert_eq!((c.base_frames(), c.large_frames()), (511, 2));
    assert_eq!((nc.free_base(), nc.free_large()), (513, 4));
    assert_eq!(nc.free_bytes(), nc.total_bytes());
    assert_eq!(
        check_partition(&mut nc, &mut links, &Owned::default()),
        (513, 4)
    );
}

#[test]
fn frames_are_distinct_aligned_and_in_range() {
    let mut links = MockLinks::default();
    let mut nc = NCache::new(1);
    links.add(&mut nc, PhysRange::new(0x1234, 5 * MIB + 0x777));
    links.add(
        &mut nc,
        PhysRange::new(16 * MIB, 20 * MIB + 3 * BASE_PAGE_SIZE),
    );
    let total = nc.total_bytes();
    let mut owned = Owned::default();
    // Alternate classes until both are exhausted; `take` checks every property.
    let mut large_ok = true;
    loop {
        if large_ok {
            match nc.allocate_large(&mut links) {
                Ok(f) => owned.take(&mut links, 1, f),
                Err(e) => {
                    assert_eq!(e, oom(1, FrameSize::Large));
                    large_ok = false;
                }
            }
        }
        match nc.allocate_base(&mut links) {
            Ok(f) => owned.take(&mut links, 1, f),
            Err(e) => {
                assert_eq!(e, oom(1, FrameSize::Base));
                break;
            }
        }
        assert_eq!(nc.free_bytes() + owned.bytes(), total);
    }
    assert_eq!(owned.bytes(), total);
    assert_eq!(nc.free_bytes(), 0);
    for f in owned.drain() {
        nc.release(&mut links, f).unwrap();
    }
    assert_eq!(nc.free_bytes(), total);
}

#[test]
fn lowest_addresses_first() {
    let mut links = MockLinks::default();
    let mut nc = NCache::new(0);
    links.add(&mut nc, PhysRange::new(MIB, 6 * MIB));
    let bases: Vec<u64> = (0..4)
        .map(|_| nc.allocate_base(&mut links).unwrap().base())
        .collect();
    assert_eq!(bases, [MIB, MIB + 0x1000, MIB + 0x2000, MIB + 0x3000]);
    let larges: Vec<u64> = (0..2)
        .map(|_| nc.allocate_large(&mut links).unwrap().base())
        .collect();
    assert_eq!(larges, [2 * MIB, 4 * MIB]);
}

#[test]
fn split_large_into_base_frames() {
    let mut links = MockLinks::default();
    let mut nc = NCache::new(2);
    links.add(&mut nc, PhysRange::new(4 * MIB, 6 * MIB));
    assert_eq!((nc.free_base(), nc.free_large()), (0, 1));

    let mut owned = Owned::default();
    let first = nc.allocate_base(&mut links).unwrap();
    assert_eq!(first, Frame::new(4 * MIB, FrameSize::Base, 2).unwrap());
    assert_eq!(
        (nc.free_base(), nc.free_large()),
        (BASE_FRAMES_PER_LARGE - 1, 0)
    );
    owned.take(&mut links, 2, first);
    for i in 1..BASE_FRAMES_PER_LARGE {
        let f = nc.allocate_base(&mut links).unwrap();
        assert_eq!(f.base(), 4 * MIB + i as u64 * BASE_PAGE_SIZE);
        owned.take(&mut links, 2, f);
        assert_eq!(nc.free_base(), BASE_FRAMES_PER_LARGE - 1 - i);
    }
    assert_eq!(nc.allocate_base(&mut links), Err(oom(2, FrameSize::Base)));
    assert_eq!(nc.allocate_large(&mut links), Err(oom(2, FrameSize::Large)));

    // Released base frames are not coalesced back into a large frame.
    for f in owned.drain() {
        nc.release(&mut links, f).unwrap();
    }
    assert_eq!(
        (nc.free_base(), nc.free_large()),
        (BASE_FRAMES_PER_LARGE, 0)
    );
    assert_eq!(nc.free_bytes(), nc.total_bytes());
    assert_eq!(nc.allocate_large(&mut links), Err(oom(2, FrameSize::Large)));
}

#[test]
fn base_frames_are_used_before_splitting() {
    let mut links = MockLinks::default();
    let mut nc = NCache::new(0);
    links.add(
        &mut nc,
        PhysRange::new(2 * MIB - 2 * BASE_PAGE_SIZE, 4 * MIB),
    );
    assert_eq!((nc.free_base(), nc.free_large()), (2, 1));
    nc.allocate_base(&mut links).unwrap();
    nc.allocate_base(&mut links).unwrap();
    assert_eq!((nc.free_base(), nc.free_large()), (0, 1));
    let f = nc.allocate_base(&mut links).unwrap();
    assert_eq!(f.base(), 2 * MIB);
    assert_eq!((nc.free_base(), nc.free_large()), (511, 0));
}

#[test]
fn exhaustion_then_recovery() {
    let mut links = MockLinks::default();
    let mut nc = NCache::new(0);
    links.add(&mut nc, PhysRange::new(0, 4 * MIB));
    let a = nc.allocate_large(&mut links).unwrap();
    let b = nc.allocate_large(&mut links).unwrap();
    links.hand_out(a);
    links.hand_out(b);
    for _ in 0..3 {
        assert_eq!(nc.allocate_large(&mut links), Err(oom(0, FrameSize::Large)));
        assert_eq!(nc.allocate_base(&mut links), Err(oom(0, FrameSize::Base)));
    }
    assert_eq!(nc.free_bytes(), 0);
    nc.release(&mut links, b).unwrap();
    assert_eq!((nc.free_large(), nc.free_bytes()), (1, LARGE_PAGE_SIZE));
    assert_eq!(nc.allocate_large(&mut links), Ok(b));
    nc.release(&mut links, b).unwrap();
    nc.release(&mut links, a).unwrap();
    assert_eq!(nc.free_bytes(), nc.total_bytes());
    assert_eq!(
        check_partition(&mut nc, &mut links, &Owned::default()),
        (0, 2)
    );
}

#[test]
fn empty_cache_is_out_of_memory() {
    let mut links = MockLinks::default();
    let mut nc = NCache::new(7);
    assert_eq!(nc.allocate_base(&mut links), Err(oom(7, FrameSize::Base)));
    assert_eq!(nc.allocate_large(&mut links), Err(oom(7, FrameSize::Large)));
    assert_eq!(
        nc.allocate(&mut links, FrameSize::Large),
        Err(oom(7, FrameSize::Large))
    );
}

#[test]
fn frame_at_address_zero() {
    let mut links = MockLinks::default();
    let mut nc = NCache::new(0);
    links.add(&mut nc, PhysRange::new(0, 3 * BASE_PAGE_SIZE));
    let mut bases: Vec<u64> = (0..3)
        .map(|_| nc.allocate_base(&mut links).unwrap().base())
        .collect();
    assert_eq!(bases, [0, 0x1000, 0x2000]);
    assert!(nc.allocate_base(&mut links).is_err());
    for &b in bases.iter().rev() {
        nc.release(&mut links, Frame::new(b, FrameSize::Base, 0).unwrap())
            .unwrap();
    }
    bases.clear();
    bases.extend((0..3).map(|_| nc.allocate_base(&mut links).unwrap().base()));
    assert_eq!(bases, [0, 0x1000, 0x2000]);
}

#[test]
fn top_of_address_space() {
    let mut links = MockLinks::default();
    let mut nc = NCache::new(0);
    let top = u64::MAX - 4 * MIB + 1;
    links.add(&mut nc, PhysRange::new(top - 0x5000, u64::MAX));
    assert_eq!((nc.free_base(), nc.free_large()), (5 + 511, 1));
    let mut owned = Owned::default();
    let large = nc.allocate_large(&mut links).unwrap();
    assert_eq!((large.base(), large.end()), (top, top + 2 * MIB));
    owned.take(&mut links, 0, large);
    while let Ok(f) = nc.allocate_base(&mut links) {
        owned.take(&mut links, 0, f);
    }
    assert_eq!(owned.len(), 1 + 5 + 511);
    assert_eq!(owned.remove(u64::MAX - 0x1fff).end(), u64::MAX - 0xfff);
    assert_eq!(owned.bytes() + BASE_PAGE_SIZE, nc.total_bytes());
}

#[test]
fn release_rejects_foreign_frames() {
    let mut links = MockLinks::default();
    let mut nc0 = NCache::new(0);
    let mut nc1 = NCache::new(1);
    links.add(&mut nc0, PhysRange::new(0, 2 * MIB));
    links.add(&mut nc1, PhysRange::new(2 * MIB, 4 * MIB));
    let f = nc1.allocate_large(&mut links).unwrap();
    assert_eq!(f.node(), 1);
    let err = nc0.release(&mut links, f).unwrap_err();
    assert_eq!(err, AllocError::ForeignFrame { node: 0, frame: f });
    assert_eq!((nc0.free_large(), nc0.free_bytes()), (1, 2 * MIB));
    assert_eq!((nc1.free_large(), nc1.free_bytes()), (0, 0));
    // The error carries the frame back so it can go to the right node.
    let AllocError::ForeignFrame { frame, .. } = err else {
        unreachable!()
    };
    nc1.release(&mut links, frame).unwrap();
    assert_eq!(nc1.free_bytes(), nc1.total_bytes());
}

#[test]
fn frame_constructor_validates() {
    assert!(Frame::new(0, FrameSize::Base, 0).is_some());
    assert!(Frame::new(0x1000, FrameSize::Base, 0).is_some());
    assert!(Frame::new(0x1800, FrameSize::Base, 0).is_none());
    assert!(Frame::new(0x1000, FrameSize::Large, 0).is_none());
    assert!(Frame::new(4 * MIB, FrameSize::Large, 0).is_some());
    // The last page of the address space would end at 2^64, which is not representable.
    assert!(Frame::new(u64::MAX - 0xfff, FrameSize::Base, 0).is_none());
    assert!(Frame::new(u64::MAX - 2 * MIB + 1, FrameSize::Large, 0).is_none());
    let f = Frame::new(u64::MAX - 0x1fff, FrameSize::Base, 5).unwrap();
    assert_eq!(f.end(), u64::MAX - 0xfff);
    assert_eq!(f.range(), PhysRange::new(f.base(), f.end()));
    assert_eq!((f.size(), f.node()), (FrameSize::Base, 5));
    assert_eq!(FrameSize::Base.bytes(), 4096);
    assert_eq!(FrameSize::Large.bytes(), 2 * MIB);
    assert_eq!(BASE_FRAMES_PER_LARGE, 512);
}

#[test]
fn display() {
    let f = Frame::new(0x20_0000, FrameSize::Large, 1).unwrap();
    assert_eq!(f.to_string(), "2 MiB frame 0x200000 on node 1");
    assert_eq!(
        oom(3, FrameSize::Base).to_string(),
        "out of memory: no free 4 KiB frame on node 3"
    );
    assert_eq!(
        AllocError::ForeignFrame { node: 0, frame: f }.to_string(),
        "2 MiB frame 0x200000 on node 1 released to a cache of node 0"
    );
    assert_eq!(
        AllocError::NodeMismatch {
            tcache: 0,
            ncache: 2
        }
        .to_string(),
        "TCache of node 0 used with the NCache of node 2"
    );
}

#[test]
fn kept_large_frames_are_not_split_for_base_frames() {
    let mut links = MockLinks::default();
    let mut nc = NCache::new(0);
    links.add(&mut nc, PhysRange::new(0, 3 * LARGE_PAGE_SIZE));
    nc.set_kept_large(2);
    // One 2 MiB frame may be split; the last two stay whole.
    for _ in 0..BASE_FRAMES_PER_LARGE {
        nc.allocate_base(&mut links).unwrap();
    }
    assert_eq!(nc.allocate_base(&mut links), Err(oom(0, FrameSize::Base)));
    assert_eq!(nc.free_large(), 2);
    // The kernel's own path may split them, and 2 MiB allocations take them.
    nc.allocate_base_any(&mut links).unwrap();
    assert_eq!(nc.free_large(), 1);
    assert_eq!(
        nc.allocate(&mut links, FrameSize::Large).map(|f| f.size()),
        Ok(FrameSize::Large)
    );
    assert_eq!(nc.free_large(), 0);
}
