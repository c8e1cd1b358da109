//! Pages lent to mappings (`nrfs::PageSharing`): lending counts a mapping of each page, and a
//! write or truncation never changes a lent page in place but gives the file a copy.
//!
//! The sharing is installed once for this whole test binary: a map from page address to the
//! number of mappings a test made. The tests run one at a time and start with an empty map, so
//! a page another test freed (whose address an allocation may reuse) is never taken as lent.

use std::collections::BTreeMap;
use std::sync::Mutex;

use abi::Errno;
use nrfs::*;

static MAPPINGS: Mutex<BTreeMap<usize, u32>> = Mutex::new(BTreeMap::new());
static SERIAL: Mutex<()> = Mutex::new(());

fn share(addr: usize) {
    *MAPPINGS.lock().unwrap().entry(addr).or_default() += 1;
}

fn is_shared(addr: usize) -> bool {
    MAPPINGS.lock().unwrap().get(&addr).is_some_and(|&n| n > 0)
}

/// Ends every mapping of the page at `addr` (the test's "munmap").
fn unmap(addr: usize) {
    MAPPINGS.lock().unwrap().remove(&addr);
}

fn mappings(addr: usize) -> u32 {
    MAPPINGS.lock().unwrap().get(&addr).copied().unwrap_or(0)
}

/// Installs the sharing (once) and runs the calling test alone, with no page lent.
fn install() -> std::sync::MutexGuard<'static, ()> {
    let serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    set_page_sharing(PageSharing { share, is_shared });
    MAPPINGS.lock().unwrap().clear();
    serial
}

fn t(sec: i64) -> Timespec {
    Timespec::new(sec, 0)
}

const FILE: Attrs = Attrs::new(0o644, 1000, 100);
const NEW: CreateFlags = CreateFlags {
    exclusive: false,
    open: false,
};

/// A file of three pages (filled with 1, a hole, filled with 3) and half a page (4).
fn sample() -> (FileSystem, Ino) {
    let mut fs = FileSystem::new(Attrs::new(0o755, 0, 0), t(0));
    let ino = fs.unused_ino();
    fs.create(ROOT_INO, b"f", ino, FILE, NEW, t(1)).unwrap();
    fs.write(ino, 0, &[1; 4096], t(1)).unwrap();
    fs.write(ino, 2 * 4096, &[3; 4096], t(1)).unwrap();
    fs.write(ino, 3 * 4096, &[4; 2048], t(1)).unwrap();
    (fs, ino)
}

#[test]
fn lending_names_pages_and_counts_mappings() {
    let _serial = install();
    let (fs, ino) = sample();
    let lent = fs.lend_pages(ino, 0, 6).unwrap();
    assert_eq!(lent.len(), 6);
    assert!(lent[0].is_some() && lent[2].is_some() && lent[3].is_some());
    assert_eq!(
        (lent[1], lent[4], lent[5]),
        (None, None, None),
        "hole, past the end"
    );
    for a in lent.iter().flatten() {
        assert_eq!(mappings(*a), 1);
    }
    let again = fs.lend_pages(ino, 2, 1).unwrap();
    assert_eq!(again, vec![lent[2]], "the same page, not a copy");
    assert_eq!(mappings(lent[2].unwrap()), 2);
    assert_eq!(fs.lend_pages(ino, u64::MAX, 2).unwrap(), vec![None, None]);
    let dir = fs.resolve(ROOT_INO, b"/", true).unwrap();
    assert_eq!(fs.lend_pages(dir, 0, 1), Err(Errno::EISDIR));
    assert_eq!(fs.lend_pages(9999, 0, 1), Err(Errno::ENOENT));
    for a in lent.iter().flatten() {
        unmap(*a);
    }
}

#[test]
fn writes_copy_lent_pages_and_change_others_in_place() {
    let _serial = install();
    let (mut fs, ino) = sample();
    let before = fs.lend_pages(ino, 0, 3).unwrap();
    unmap(before[2].unwrap());
    // Page 0 is lent: the write goes to a copy. Page 2 is not (any more): in place.
    fs.write(ino, 10, &[7; 4], t(2)).unwrap();
    fs.write(ino, 2 * 4096 + 10, &[8; 4], t(2)).unwrap();
    let after = fs.lend_pages(ino, 0, 3).unwrap();
    assert_ne!(after[0], before[0], "a lent page was written in place");
    assert_eq!(after[2], before[2], "an unlent page was copied");
    let mut buf = [0u8; 16];
    fs.read(ino, 8, &mut buf).unwrap();
    assert_eq!(buf, [1, 1, 7, 7, 7, 7, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1]);
    fs.read(ino, 2 * 4096 + 8, &mut buf).unwrap();
    assert_eq!(buf, [3, 3, 8, 8, 8, 8, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3]);
    for a in before.iter().chain(&after).flatten() {
        unmap(*a);
    }
}

#[test]
fn truncation_copies_a_lent_tail_page() {
    let _serial = install();
    let (mut fs, ino) = sample();
    let before = fs.lend_pages(ino, 2, 1).unwrap()[0].unwrap();
    fs.truncate(ino, 2 * 4096 + 100, t(2)).unwrap();
    let after = fs.lend_pages(ino, 2, 2).unwrap();
    assert_ne!(
        after[0],
        Some(before),
        "the lent tail page was zeroed in place"
    );
    assert_eq!(after[1], None, "the page past the new end is gone");
    let mut buf = [9u8; 200];
    assert_eq!(fs.read(ino, 2 * 4096, &mut buf), Ok(100));
    assert!(buf[..100].iter().all(|&b| b == 3));
    fs.truncate(ino, 2 * 4096 + 200, t(3)).unwrap();
    assert_eq!(fs.read(ino, 2 * 4096 + 100, &mut buf), Ok(100));
    assert!(
        buf[..100].iter().all(|&b| b == 0),
        "bytes past a truncation come back as zeros"
    );
    unmap(before);
    for a in after.iter().flatten() {
        unmap(*a);
    }
}

#[test]
fn each_replica_lends_its_own_copy() {
    let _serial = install();
    let (nrfs, replicas) = NrFs::new(2, 64, 2).unwrap();
    let a = nrfs.client(&replicas[0]).unwrap();
    let b = nrfs.client(&replicas[1]).unwrap();
    let f = a.create(ROOT_INO, b"x", FILE, NEW, t(1)).unwrap().ino;
    a.write(f, 0, &[5; 8192], t(1)).unwrap();
    let pa = a.lend_pages(f, 0, 2).unwrap();
    let pb = b.lend_pages(f, 0, 2).unwrap();
    assert!(pa.iter().chain(&pb).all(Option::is_some));
    assert_ne!(pa, pb, "replicas share a page");
    // A write through either replica leaves both replicas' lent pages alone.
    b.write(f, 4096, &[6; 4], t(2)).unwrap();
    let (qa, qb) = (
        a.lend_pages(f, 1, 1).unwrap(),
        b.lend_pages(f, 1, 1).unwrap(),
    );
    assert!(qa[0] != pa[1] && qb[0] != pb[1]);
    let mut buf = [0u8; 6];
    assert_eq!(a.read(f, 4094, &mut buf), Ok(6));
    assert_eq!(buf, [5, 5, 6, 6, 6, 6]);
    for p in pa.iter().chain(&pb).chain(&qa).chain(&qb).flatten() {
        unmap(*p);
    }
}
