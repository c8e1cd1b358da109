//! `TCache`: refill and spill batches, node checks and draining.

use frames::{
    AllocError, Frame, FrameSize, NCache, PhysRange, TCache, BASE_PAGE_SIZE, LARGE_PAGE_SIZE,
    TCACHE_BASE_CAPACITY, TCACHE_LARGE_CAPACITY,
};

use crate::common::{check_partition, MockLinks, Owned};

const MIB: u64 = 1024 * 1024;

/// An NCache of `node` with 512 free base frames and 16 free large frames.
fn ncache(links: &mut MockLinks, node: usize) -> NCache {
    let mut nc = NCache::new(node);
    let at = node as u64 * 256 * MIB;
    links.add(&mut nc, PhysRange::new(at + BASE_PAGE_SIZE, at + 2 * MIB));
    links.add(
        &mut nc,
        PhysRange::new(at + 2 * MIB, at + 2 * MIB + BASE_PAGE_SIZE),
    );
    links.add(&mut nc, PhysRange::new(at + 4 * MIB, at + 36 * MIB));
    assert_eq!((nc.free_base(), nc.free_large()), (512, 16));
    nc
}

#[test]
fn default_capacities() {
    assert_eq!(
        TCache::<TCACHE_BASE_CAPACITY, TCACHE_LARGE_CAPACITY>::BASE_CAPACITY,
        64
    );
    assert_eq!(
        TCache::<TCACHE_BASE_CAPACITY, TCACHE_LARGE_CAPACITY>::LARGE_CAPACITY,
        8
    );
    let tc: TCache = TCache::new(4);
    assert_eq!(tc.node(), 4);
    assert_eq!(
        (tc.cached_base(), tc.cached_large(), tc.cached_bytes()),
        (0, 0, 0)
    );
}

#[test]
fn refill_takes_half_capacity() {
    let mut links = MockLinks::default();
    let mut nc = ncache(&mut links, 0);
    let mut tc: TCache = TCache::new(0);
    let mut owned = Owned::default();

    let f = tc.allocate_base(&mut nc, &mut links).unwrap();
    owned.take(&mut links, 0, f);
    assert_eq!(nc.free_base(), 512 - 32);
    assert_eq!(tc.cached_base(), 31);
    // The next 31 allocations are served locally.
    for i in 0..31 {
        let f = tc.allocate_base(&mut nc, &mut links).unwrap();
        owned.take(&mut links, 0, f);
        assert_eq!((nc.free_base(), tc.cached_base()), (512 - 32, 30 - i));
    }
    let f = tc.allocate_base(&mut nc, &mut links).unwrap();
    owned.take(&mut links, 0, f);
    assert_eq!((nc.free_base(), tc.cached_base()), (512 - 64, 31));

    let f = tc.allocate_large(&mut nc, &mut links).unwrap();
    owned.take(&mut links, 0, f);
    assert_eq!((nc.free_large(), tc.cached_large()), (16 - 4, 3));
    for _ in 0..3 {
        let f = tc.allocate(&mut nc, &mut links, FrameSize::Large).unwrap();
        owned.take(&mut links, 0, f);
    }
    assert_eq!((nc.free_large(), tc.cached_large()), (12, 0));
    let f = tc.allocate_large(&mut nc, &mut links).unwrap();
    owned.take(&mut links, 0, f);
    assert_eq!((nc.free_large(), tc.cached_large()), (8, 3));

    assert_eq!(tc.cached_bytes(), 31 * BASE_PAGE_SIZE + 3 * LARGE_PAGE_SIZE);
    assert_eq!(
        nc.free_bytes() + tc.cached_bytes() + owned.bytes(),
        nc.total_bytes()
    );
}

#[test]
fn release_spills_half_when_full() {
    let mut links = MockLinks::default();
    let mut nc = ncache(&mut links, 0);
    let mut tc: TCache = TCache::new(0);
    let mut owned = Owned::default();
    for _ in 0..65 {
        let f = nc.allocate_base(&mut links).unwrap();
        owned.take(&mut links, 0, f);
    }
    for _ in 0..9 {
        let f = nc.allocate_large(&mut links).unwrap();
        owned.take(&mut links, 0, f);
    }
    let (free_base, free_large) = (nc.free_base(), nc.free_large());

    for (i, f) in owned.drain().into_iter().enumerate() {
        let size = f.size();
        tc.release(&mut nc, &mut links, f).unwrap();
        match (size, i) {
            (FrameSize::Base, 0..=63) => {
                assert_eq!((tc.cached_base(), nc.free_base()), (i + 1, free_base));
            }
            (FrameSize::Base, _) => {
                assert_eq!((tc.cached_base(), nc.free_base()), (33, free_base + 32));
            }
            (FrameSize::Large, 65..=72) => {
                assert_eq!((tc.cached_large(), nc.free_large()), (i - 64, free_large));
            }
            (FrameSize::Large, _) => {
                assert_eq!((tc.cached_large(), nc.free_large()), (5, free_large + 4));
            }
        }
    }
    assert_eq!(nc.free_bytes() + tc.cached_bytes(), nc.total_bytes());
    tc.drain_into(&mut nc, &mut links).unwrap();
    assert_eq!(
        check_partition(&mut nc, &mut links, &Owned::default()),
        (512, 16)
    );
}

#[test]
fn partial_refill_then_out_of_memory() {
    let mut links = MockLinks::default();
    let mut nc = NCache::new(1);
    links.add(&mut nc, PhysRange::new(0x10_0000, 0x10_3000));
    let mut tc: TCache = TCache::new(1);
    let mut owned = Owned::default();
    let f = tc.allocate_base(&mut nc, &mut links).unwrap();
    owned.take(&mut links, 1, f);
    assert_eq!((tc.cached_base(), nc.free_base()), (2, 0));
    let f = tc.allocate_base(&mut nc, &mut links).unwrap();
    owned.take(&mut links, 1, f);
    let f = tc.allocate_base(&mut nc, &mut links).unwrap();
    owned.take(&mut links, 1, f);
    let oom = |size| AllocError::OutOfMemory { node: 1, size };
    assert_eq!(
        tc.allocate_base(&mut nc, &mut links),
        Err(oom(FrameSize::Base))
    );
    assert_eq!(
        tc.allocate_large(&mut nc, &mut links),
        Err(oom(FrameSize::Large))
    );
    // Recovery after a release.
    let f = owned.remove_nth(1);
    tc.release(&mut nc, &mut links, f).unwrap();
    assert_eq!(tc.allocate_base(&mut nc, &mut links), Ok(f));
}

#[test]
fn refuses_another_nodes_ncache() {
    let mut links = MockLinks::default();
    let mut nc0 = ncache(&mut links, 0);
    let mut nc1 = ncache(&mut links, 1);
    let mut tc: TCache = TCache::new(0);
    let f0 = tc.allocate_base(&mut nc0, &mut links).unwrap();
    let (cached, free0, free1) = (tc.cached_bytes(), nc0.free_bytes(), nc1.free_bytes());
    let mismatch = AllocError::NodeMismatch {
        tcache: 0,
        ncache: 1,
    };

    assert_eq!(tc.allocate_base(&mut nc1, &mut links), Err(mismatch));
    assert_eq!(tc.allocate_large(&mut nc1, &mut links), Err(mismatch));
    assert_eq!(tc.release(&mut nc1, &mut links, f0), Err(mismatch));
    assert_eq!(tc.drain_into(&mut nc1, &mut links), Err(mismatch));
    assert_eq!(
        (tc.cached_bytes(), nc0.free_bytes(), nc1.free_bytes()),
        (cached, free0, free1)
    );

    // A frame of node 1 is refused even with the right NCache.
    let f1 = nc1.allocate_base(&mut links).unwrap();
    assert_eq!(
        tc.release(&mut nc0, &mut links, f1),
        Err(AllocError::ForeignFrame { node: 0, frame: f1 })
    );
    assert_eq!(tc.cached_bytes(), cached);

    nc1.release(&mut links, f1).unwrap();
    tc.release(&mut nc0, &mut links, f0).unwrap();
    tc.drain_into(&mut nc0, &mut links).unwrap();
    assert_eq!(nc0.free_bytes(), nc0.total_bytes());
    assert_eq!(nc1.free_bytes(), nc1.total_bytes());
}

#[test]
fn drain_returns_every_frame() {
    let mut links = MockLinks::default();
    let mut nc = ncache(&mut links, 0);
    let mut tcs: [TCache; 3] = [TCache::new(0), TCache::new(0), TCache::new(0)];
    let mut owned = Owned::default();
    for (i, tc) in tcs.iter_mut().enumerate() {
        for _ in 0..=i * 20 {
            let f = tc.allocate_base(&mut nc, &mut links).unwrap();
            owned.take(&mut links, 0, f);
        }
        let f = tc.allocate_large(&mut nc, &mut links).unwrap();
        owned.take(&mut links, 0, f);
    }
    for (i, f) in owned.drain().into_iter().enumerate() {
        tcs[i % 3].release(&mut nc, &mut links, f).unwrap();
    }
    let cached: u64 = tcs.iter().map(TCache::cached_bytes).sum();
    assert!(cached > 0);
    assert_eq!(nc.free_bytes() + cached, nc.total_bytes());
    for tc in &mut tcs {
        tc.drain_into(&mut nc, &mut links).unwrap();
        assert_eq!(
            (tc.cached_base(), tc.cached_large(), tc.cached_bytes()),
            (0, 0, 0)
        );
    }
    assert_eq!(nc.free_bytes(), nc.total_bytes());
    assert_eq!(
        check_partition(&mut nc, &mut links, &Owned::default()),
        (512, 16)
    );
}

#[test]
fn capacity_one() {
    let mut links = MockLinks::default();
    let mut nc = ncache(&mut links, 0);
    let mut tc = TCache::<1, 1>::new(0);
    let a = tc.allocate_base(&mut nc, &mut links).unwrap();
    assert_eq!((tc.cached_base(), nc.free_base()), (0, 511));
    let b = tc.allocate_base(&mut nc, &mut links).unwrap();
    assert_ne!(a, b);
    tc.release(&mut nc, &mut links, a).unwrap();
    assert_eq!((tc.cached_base(), nc.free_base()), (1, 510));
    tc.release(&mut nc, &mut links, b).unwrap();
    assert_eq!((tc.cached_base(), nc.free_base()), (1, 511));
    let l = tc.allocate_large(&mut nc, &mut links).unwrap();
    assert_eq!(l.size(), FrameSize::Large);
    tc.release(&mut nc, &mut links, l).unwrap();
    tc.drain_into(&mut nc, &mut links).unwrap();
    assert_eq!(nc.free_bytes(), nc.total_bytes());
}

#[test]
fn frames_keep_their_identity_through_the_cache() {
    let mut links = MockLinks::default();
    let mut nc = ncache(&mut links, 2);
    let mut tc: TCache = TCache::new(2);
    let f = tc.allocate_large(&mut nc, &mut links).unwrap();
    assert_eq!(f, Frame::new(f.base(), FrameSize::Large, 2).unwrap());
    tc.release(&mut nc, &mut links, f).unwrap();
    assert_eq!(tc.allocate_large(&mut nc, &mut links), Ok(f));
}

#[test]
fn take_and_keep_never_touch_the_ncache() {
    let mut links = MockLinks::default();
    let mut nc = ncache(&mut links, 0);
    let mut tc: TCache<4, 2> = TCache::new(0);
    assert!(
        tc.take(FrameSize::Base).is_none(),
        "an empty TCache has nothing to take"
    );
    let first = tc.allocate_base(&mut nc, &mut links).unwrap();
    assert_eq!((nc.free_base(), tc.cached_base()), (512 - 2, 1));
    let second = tc
        .take(FrameSize::Base)
        .expect("one frame was cached by the refill");
    assert_eq!(second.node(), 0);
    assert_ne!(second.base(), first.base());
    assert!(tc.take(FrameSize::Base).is_none());
    assert!(tc.take(FrameSize::Large).is_none());
    // Keep caches up to the capacity and then hands the frame back; the NCache is unchanged.
    tc.keep(first).unwrap();
    tc.keep(second).unwrap();
    let a = nc.allocate(&mut links, FrameSize::Base).unwrap();
    let b = nc.allocate(&mut links, FrameSize::Base).unwrap();
    let c = nc.allocate(&mut links, FrameSize::Base).unwrap();
    let free = nc.free_base();
    tc.keep(a).unwrap();
    tc.keep(b).unwrap();
    assert_eq!(tc.keep(c), Err(c), "a full TCache hands the frame back");
    assert_eq!((nc.free_base(), tc.cached_base()), (free, 4));
    // A frame of another node is handed back too.
    let mut other = ncache(&mut links, 1);
    let foreign = other.allocate(&mut links, FrameSize::Base).unwrap();
    let mut tc2: TCache<4, 2> = TCache::new(0);
    assert_eq!(tc2.keep(foreign), Err(foreign));
    tc.release(&mut nc, &mut links, c).unwrap();
    assert_eq!(tc.take(FrameSize::Base).map(|f| f.base()), Some(c.base()));
}
