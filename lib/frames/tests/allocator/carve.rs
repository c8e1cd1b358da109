//! Carving arithmetic of `PhysRange::carve`.

use frames::{Carving, PhysRange, BASE_PAGE_SIZE, LARGE_PAGE_SIZE};

use crate::common::XorShift;

const KIB: u64 = 1024;
const MIB: u64 = 1024 * KIB;

fn counts(base: u64, end: u64) -> (u64, u64) {
    let c = PhysRange::new(base, end).carve();
    (c.base_frames(), c.large_frames())
}

#[test]
fn exact_frame_counts() {
    // (base, end, base frames, large frames)
    let cases = [
        (0, 2 * MIB, 0, 1),
        (0, 4 * MIB, 0, 2),
        (2 * MIB, 6 * MIB, 0, 2),
        (0x1f_f000, 0x40_1000, 2, 1),
        (4 * KIB, 4 * MIB, 511, 1),
        (0, 2 * MIB + 4 * KIB, 1, 1),
        (0x1234, 0x5678, 3, 0),
        (0, 4 * KIB, 1, 0),
        (0, 2 * MIB - 1, 511, 0),
        (1, 4 * MIB, 511, 1),
        (1, 4 * MIB - 1, 1022, 0),
        (1, 4 * MIB + 2 * MIB + 1, 511, 2),
        // Legacy PC layout: 640 KiB of low memory, then memory from 1 MiB to 128 MiB.
        (0, 640 * KIB, 160, 0),
        (MIB, 128 * MIB, 256, 63),
    ];
    for (base, end, nbase, nlarge) in cases {
        assert_eq!(
            counts(base, end),
            (nbase, nlarge),
            "range [{base:#x}, {end:#x})"
        );
    }
}

#[test]
fn degenerate_ranges_are_empty() {
    for (base, end) in [
        (0, 0),
        (0x5000, 0x5000),
        (0x9000, 0x1000),
        (u64::MAX, 0),
        (0x1001, 0x1fff),
        (0x1000, 0x1fff),
        (0x1001, 0x2000),
        (u64::MAX - 5, u64::MAX),
        (u64::MAX - 0xfff, u64::MAX),
        (u64::MAX, u64::MAX),
    ] {
        let range = PhysRange::new(base, end);
        assert_eq!(range.carve(), Carving::EMPTY, "range [{base:#x}, {end:#x})");
        assert_eq!(range.carve().bytes(), 0);
    }
}

#[test]
fn top_of_address_space() {
    // The last, partial page below 2^64 is skipped; no arithmetic overflows.
    let top = u64::MAX - 4 * MIB + 1; // 2 MiB-aligned, 4 MiB below 2^64.
    let c = PhysRange::new(top, u64::MAX).carve();
    assert_eq!(c.large, PhysRange::new(top, top + 2 * MIB));
    assert_eq!(c.tail, PhysRange::new(top + 2 * MIB, u64::MAX - 0xfff));
    assert_eq!((c.base_frames(), c.large_frames()), (511, 1));

    // The whole address space.
    let c = PhysRange::new(0, u64::MAX).carve();
    assert_eq!(c.large_frames(), (1 << 43) - 1);
    assert_eq!(c.base_frames(), 511);
    assert_eq!(c.bytes(), u64::MAX - 0xfff);

    // Base near the top: aligning it up would overflow.
    assert_eq!(
        PhysRange::new(u64::MAX - 0x10, u64::MAX).carve(),
        Carving::EMPTY
    );
    assert_eq!(
        PhysRange::from_base_len(u64::MAX - 0x2fff, u64::MAX),
        PhysRange::new(u64::MAX - 0x2fff, u64::MAX)
    );
    assert_eq!(counts(u64::MAX - 0x2fff, u64::MAX), (2, 0));
}

#[test]
fn range_helpers() {
    let r = PhysRange::from_base_len(0x1000, 0x3000);
    assert_eq!(r, PhysRange::new(0x1000, 0x4000));
    assert_eq!(r.len(), 0x3000);
    assert!(!r.is_empty());
    assert!(r.contains(0x1000) && r.contains(0x3fff) && !r.contains(0x4000));
    assert!(r.contains_range(&PhysRange::new(0x2000, 0x4000)));
    assert!(!r.contains_range(&PhysRange::new(0x2000, 0x4001)));
    assert!(r.contains_range(&PhysRange::EMPTY));
    let inverted = PhysRange::new(0x4000, 0x1000);
    assert!(inverted.is_empty());
    assert_eq!(inverted.len(), 0);
}

/// Checks the structural properties of a carving against an independent count of the whole
/// 4 KiB pages inside the range.
fn check_carving(range: PhysRange) {
    let c = range.carve();
    let (base, end) = (u128::from(range.base), u128::from(range.end));
    let page = u128::from(BASE_PAGE_SIZE);
    let first = base.div_ceil(page);
    let last = end / page; // exclusive
    let pages = if end > base {
        last.saturating_sub(first)
    } else {
        0
    };
    assert_eq!(
        u128::from(c.bytes()),
        pages * page,
        "range {range:x?} carved into {c:x?}"
    );
    if c.bytes() == 0 {
        return;
    }
    for part in [c.head, c.large, c.tail] {
        assert!(range.contains_range(&part), "{part:x?} outside {range:x?}");
        assert_eq!(part.base % BASE_PAGE_SIZE, 0);
        assert_eq!(part.end % BASE_PAGE_SIZE, 0);
    }
    if c.large.is_empty() {
        assert!(c.tail.is_empty());
        // No 2 MiB-aligned block fits in the usable part.
        let large = u128::from(LARGE_PAGE_SIZE);
        let start = u128::from(c.head.base).div_ceil(large) * large;
        assert!(start + large > u128::from(c.head.end));
    } else {
        assert_eq!(c.large.base % LARGE_PAGE_SIZE, 0);
        assert_eq!(c.large.end % LARGE_PAGE_SIZE, 0);
        assert!(c.head.is_empty() || c.head.end == c.large.base);
        assert!(c.tail.is_empty() || c.tail.base == c.large.end);
        assert!(c.head.len() < LARGE_PAGE_SIZE && c.tail.len() < LARGE_PAGE_SIZE);
    }
}

#[test]
fn random_ranges_carve_consistently() {
    let mut rng = XorShift::new(0x5eed_0001);
    for _ in 0..20_000 {
        // Mix small ranges near interesting boundaries with arbitrary ones.
        let anchor = match rng.below(4) {
            0 => 0,
            1 => u64::MAX - rng.below(8 * MIB),
            2 => rng.below(1 << 40) & !(LARGE_PAGE_SIZE - 1),
            _ => rng.next(),
        };
        let base = anchor.wrapping_add(rng.below(3 * MIB)).wrapping_sub(MIB);
        let end = if rng.below(8) == 0 {
            rng.next()
        } else {
            base.saturating_add(rng.below(9 * MIB))
        };
        check_carving(PhysRange::new(base, end));
    }
}
