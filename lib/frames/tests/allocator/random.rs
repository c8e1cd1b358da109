//! Randomized allocate/release sequences checked against an ownership model.

use frames::{AllocError, FrameSize, NCache, PhysRange, TCache, BASE_PAGE_SIZE};

use crate::common::{check_partition, MockLinks, Owned, XorShift};

const MIB: u64 = 1024 * 1024;
const NODE: usize = 1;

/// Small caches so that refills and spills happen often.
type SmallTCache = TCache<8, 2>;

/// Runs `ops` random operations on one node with three cores and checks, after every operation,
/// that allocated frames are valid and disjoint (in [`Owned::take`]) and that no memory is lost:
/// free + cached + owned == total. Every 500 operations the cores are drained and the free lists
/// enumerated to check that free and owned frames partition the memory exactly.
fn run(seed: u64, ops: usize) {
    let mut rng = XorShift::new(seed);
    let mut links = MockLinks::default();
    let mut nc = NCache::new(NODE);
    // Awkward ranges: unaligned edges, a sub-page sliver, an empty one, page 0 and the top of
    // the address space; about 12 MiB in all, so exhaustion is reached.
    for range in [
        PhysRange::new(0, 0x20_1000),
        PhysRange::new(0x40_0123, 0x80_0fff),
        PhysRange::new(0x90_0001, 0x90_0ff0),
        PhysRange::new(0xa0_0000, 0xa0_0000),
        PhysRange::new(0x1_0000_0000 - 0x3000, 0x1_0040_5000),
        PhysRange::new(u64::MAX - 4 * MIB - 0x7fff, u64::MAX),
    ] {
        links.add(&mut nc, range);
    }
    let total = nc.total_bytes();
    let mut cores = [
        SmallTCache::new(NODE),
        SmallTCache::new(NODE),
        SmallTCache::new(NODE),
    ];
    let mut owned = Owned::default();
    let (mut allocations, mut failures) = (0usize, 0usize);

    for op in 0..ops {
        let core = rng.below(3) as usize;
        // Bias towards allocation so that the node runs out of memory now and then.
        match rng.below(16) {
            0..=8 => {
                let size = if rng.below(5) == 0 {
                    FrameSize::Large
                } else {
                    FrameSize::Base
                };
                let result = if rng.below(4) == 0 {
                    nc.allocate(&mut links, size)
                } else {
                    cores[core].allocate(&mut nc, &mut links, size)
                };
                match result {
                    Ok(frame) => {
                        assert_eq!(frame.size(), size);
                        owned.take(&mut links, NODE, frame);
                        allocations += 1;
                    }
                    Err(e) => {
                        assert_eq!(e, AllocError::OutOfMemory { node: NODE, size });
                        failures += 1;
                    }
                }
            }
            9..=14 if owned.len() > 0 => {
                let frame = owned.remove_nth(rng.below(owned.len() as u64) as usize);
                if rng.below(4) == 0 {
                    nc.release(&mut links, frame).unwrap();
                } else {
                    cores[core].release(&mut nc, &mut links, frame).unwrap();
                }
            }
            _ => cores[core].drain_into(&mut nc, &mut links).unwrap(),
        }
        let cached: u64 = cores.iter().map(SmallTCache::cached_bytes).sum();
        assert_eq!(nc.free_bytes() + cached + owned.bytes(), total, "op {op}");
        assert_eq!(
            nc.free_bytes(),
            nc.free_base() as u64 * BASE_PAGE_SIZE + nc.free_large() as u64 * 2 * MIB
        );
        if op % 500 == 499 {
            for core in &mut cores {
                core.drain_into(&mut nc, &mut links).unwrap();
            }
            check_partition(&mut nc, &mut links, &owned);
        }
    }
    // The sequences must exercise both success and exhaustion.
    assert!(
        allocations > ops / 4,
        "seed {seed:#x}: {allocations} allocations"
    );
    assert!(failures > 0, "seed {seed:#x}: never ran out of memory");

    for (i, frame) in owned.drain().into_iter().enumerate() {
        cores[i % 3].release(&mut nc, &mut links, frame).unwrap();
    }
    for core in &mut cores {
        core.drain_into(&mut nc, &mut links).unwrap();
    }
    assert_eq!(nc.free_bytes(), total, "seed {seed:#x}: memory lost");
    check_partition(&mut nc, &mut links, &Owned::default());
}

#[test]
fn random_sequences() {
    for seed in [
        1,
        0x2545_f491_4f6c_dd1d,
        0xdead_beef,
        42,
        0x0123_4567_89ab_cdef,
    ] {
        run(seed, 6_000);
    }
}
