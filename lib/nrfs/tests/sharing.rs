//! Pages lent to mappings (`nrfs::PageSharing`): lending counts a mapping of each page, and a
//! write or truncation never changes a lent page in place but gives the file a copy. Shared
//! pages (`share_pages`, for `MAP_SHARED`): one frame for every replica, changed in place by
//! writes (each applied once, by the first replica) and by stores through mappings.
//!
//! The sharing is installed once for this whole test binary: a map from page address to the
//! number of holders a test made (mappings, and replicas of shared pages). The tests run one at
//! a time and start with an empty map, so a page another test freed (whose address an
//! allocation may reuse) is never taken as lent. Shared frames are leaked page-sized boxes.

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

fn release(addr: usize) {
    let mut m = MAPPINGS.lock().unwrap();
    let n = m.get_mut(&addr).expect("a release of a page no one holds");
    *n = n.checked_sub(1).expect("released more often than shared");
}

/// A frame for shared pages: a leaked page of `fill` bytes.
#[repr(C, align(4096))]
struct Frame([u8; 4096]);

fn frame(fill: u8) -> usize {
    Box::leak(Box::new(Frame([fill; 4096]))) as *mut Frame as usize
}

fn frame_bytes(addr: usize) -> &'static mut [u8; 4096] {
    // SAFETY: test frames are leaked `Frame`s, never freed, and the tests run one at a time.
    unsafe { &mut (*(addr as *mut Frame)).0 }
}

fn read_frame(addr: usize, at: usize, buf: &mut [u8]) {
    buf.copy_from_slice(&frame_bytes(addr)[at..at + buf.len()]);
}

fn write_frame(addr: usize, at: usize, data: &[u8]) {
    frame_bytes(addr)[at..at + data.len()].copy_from_slice(data);
}

/// Installs the sharing (once) and runs the calling test alone, with no page lent.
fn install() -> std::sync::MutexGuard<'static, ()> {
    let serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    set_page_sharing(PageSharing {
        share,
        is_shared,
        release,
        read: read_frame,
        write: write_frame,
    });
    MAPPINGS.lock().unwrap().clear();
    serial
}

/// The addresses of lent pages, all of them a replica's own (copy-on-write).
fn own(lent: Vec<Option<Lent>>) -> Vec<Option<usize>> {
    lent.into_iter()
        .map(|l| {
            l.map(|l| {
                assert!(!l.shared, "a page lent as shared");
                l.addr
            })
        })
        .collect()
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
    let lent = own(fs.lend_pages(ino, 0, 6).unwrap());
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
    let again = own(fs.lend_pages(ino, 2, 1).unwrap());
    assert_eq!(again, vec![lent[2]], "the same page, not a copy");
    assert_eq!(mappings(lent[2].unwrap()), 2);
    assert_eq!(
        own(fs.lend_pages(ino, u64::MAX, 2).unwrap()),
        vec![None, None]
    );
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
    let before = own(fs.lend_pages(ino, 0, 3).unwrap());
    unmap(before[2].unwrap());
    // Page 0 is lent: the write goes to a copy. Page 2 is not (any more): in place.
    fs.write(ino, 10, &[7; 4], t(2)).unwrap();
    fs.write(ino, 2 * 4096 + 10, &[8; 4], t(2)).unwrap();
    let after = own(fs.lend_pages(ino, 0, 3).unwrap());
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
    let before = own(fs.lend_pages(ino, 2, 1).unwrap())[0].unwrap();
    fs.truncate(ino, 2 * 4096 + 100, t(2)).unwrap();
    let after = own(fs.lend_pages(ino, 2, 2).unwrap());
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
    let pa = own(a.lend_pages(f, 0, 2).unwrap());
    let pb = own(b.lend_pages(f, 0, 2).unwrap());
    assert!(pa.iter().chain(&pb).all(Option::is_some));
    assert_ne!(pa, pb, "replicas share a page");
    // A write through either replica leaves both replicas' lent pages alone.
    b.write(f, 4096, &[6; 4], t(2)).unwrap();
    let (qa, qb) = (
        own(a.lend_pages(f, 1, 1).unwrap()),
        own(b.lend_pages(f, 1, 1).unwrap()),
    );
    assert!(qa[0] != pa[1] && qb[0] != pb[1]);
    let mut buf = [0u8; 6];
    assert_eq!(a.read(f, 4094, &mut buf), Ok(6));
    assert_eq!(buf, [5, 5, 6, 6, 6, 6]);
    for p in pa.iter().chain(&pb).chain(&qa).chain(&qb).flatten() {
        unmap(*p);
    }
}

#[test]
fn shared_pages_take_the_files_bytes_and_change_in_place() {
    let _serial = install();
    let (mut fs, ino) = sample();
    let frames: Vec<usize> = (0..5).map(|_| frame(0xee)).collect();
    // Four pages hold the file (the last one half); the fifth frame is not taken.
    assert_eq!(fs.share_pages(ino, 0, &frames), Ok(4));
    assert!(frame_bytes(frames[0]).iter().all(|&b| b == 1));
    assert!(frame_bytes(frames[1]).iter().all(|&b| b == 0), "a hole");
    assert!(frame_bytes(frames[3])[..2048].iter().all(|&b| b == 4));
    assert!(frame_bytes(frames[3])[2048..].iter().all(|&b| b == 0));
    assert!(frame_bytes(frames[4]).iter().all(|&b| b == 0xee));
    for (i, &f) in frames.iter().enumerate() {
        assert_eq!(mappings(f), u32::from(i < 4), "frame {i}: the file's share");
    }
    // Lent as shared, the same frame each time; sharing again takes nothing.
    let lent = fs.lend_pages(ino, 0, 2).unwrap();
    assert_eq!(
        lent[0],
        Some(Lent {
            addr: frames[0],
            shared: true
        })
    );
    assert_eq!(fs.share_pages(ino, 0, &[frame(0)]), Ok(0));
    // A write changes the frame; a store in the frame (a mapping's) is what a read sees.
    fs.write(ino, 10, &[9; 4], t(2)).unwrap();
    assert_eq!(frame_bytes(frames[0])[9..15], [1, 9, 9, 9, 9, 1]);
    frame_bytes(frames[2])[100] = 42;
    let mut buf = [0u8; 1];
    fs.read(ino, 2 * 4096 + 100, &mut buf).unwrap();
    assert_eq!(buf, [42]);
    // A truncation gives back the pages past the end and zeroes the tail of the last one.
    fs.truncate(ino, 4096 + 10, t(3)).unwrap();
    assert_eq!((mappings(frames[2]), mappings(frames[3])), (0, 0));
    frame_bytes(frames[1])[5] = 5;
    fs.truncate(ino, 4096 + 4, t(4)).unwrap();
    assert_eq!(frame_bytes(frames[1])[5], 0);
    // Removing the file gives back the rest (the lent pages keep the mapping's share).
    fs.unlink(ROOT_INO, b"f", t(5)).unwrap();
    assert_eq!((mappings(frames[0]), mappings(frames[1])), (1, 1));
}

/// Clients of two replicas of a fresh NR-FS, and a file `x` of 100 bytes of 5 that only the
/// first has applied the creation and write of.
fn two_replicas_with_a_file() -> (FsClient, FsClient, Ino) {
    let (nrfs, replicas) = NrFs::new(2, 64, 2).unwrap();
    let a = nrfs.client(&replicas[0]).unwrap();
    let b = nrfs.client(&replicas[1]).unwrap();
    let f = a.create(ROOT_INO, b"x", FILE, NEW, t(1)).unwrap().ino;
    a.write(f, 0, &[5; 100], t(1)).unwrap();
    (a, b, f)
}

#[test]
fn replicas_share_one_frame_and_apply_each_write_once() {
    let _serial = install();
    let (a, b, f) = two_replicas_with_a_file();
    let shared = frame(0);
    let (taken, offer) = a.share_pages(f, 0, vec![shared]);
    assert_eq!(taken, Ok(1));
    assert!(!offer.adopted(), "replica B has not applied it yet");
    let lent = b.lend_pages(f, 0, 1).unwrap()[0].unwrap();
    assert_eq!(
        lent,
        Lent {
            addr: shared,
            shared: true
        }
    );
    assert_eq!(
        mappings(shared),
        3,
        "each replica holds a share, and the lending one"
    );
    assert!(offer.adopted(), "B applied it before it lent the page");
    assert!(frame_bytes(shared)[..100].iter().all(|&b| b == 5));
    // B writes; then a mapping stores over the same bytes. Replica A applies B's write only
    // when it next reads: were it to write the frame again, the store would be lost.
    b.write(f, 0, &[6; 4], t(2)).unwrap();
    assert_eq!(frame_bytes(shared)[..5], [6, 6, 6, 6, 5]);
    frame_bytes(shared)[..4].copy_from_slice(&[7; 4]);
    let mut buf = [0u8; 5];
    assert_eq!(a.read(f, 0, &mut buf), Ok(5));
    assert_eq!(
        buf,
        [7, 7, 7, 7, 5],
        "a lagging replica wrote the shared page again"
    );
    assert_eq!(b.read(f, 0, &mut buf), Ok(5));
    assert_eq!(buf, [7, 7, 7, 7, 5]);
    // Appends land once too, and both replicas see them.
    a.append(f, &[8; 3], t(3)).unwrap();
    assert_eq!(b.read(f, 99, &mut buf), Ok(4));
    assert_eq!(buf[..4], [5, 8, 8, 8]);
    // A snapshot owns copies of shared pages (dropping it gives back nothing of the frame).
    let snap = b.replica().verify(b.token(), |d| d.snapshot());
    drop(snap);
    assert_eq!(mappings(shared), 3, "the snapshot took a share");
}

/// A replica that lags behind a `share_pages` and a truncation that gives the frame up adopts
/// the frame only when it catches up; the [`nrfs::Offer`] says when that has happened, which is
/// when the caller may let its own share of the frame go (had it done so at once, the frame
/// could have been freed and reused before B took a share of it).
#[test]
fn an_offer_is_adopted_once_the_lagging_replica_applied_it() {
    let _serial = install();
    let (a, b, f) = two_replicas_with_a_file();
    let shared = frame(0);
    share(shared); // the caller's share
    let (taken, offer) = a.share_pages(f, 0, vec![shared]);
    assert_eq!(taken, Ok(1));
    a.truncate(f, 10, t(2)).unwrap();
    assert!(!offer.adopted());
    assert_eq!(
        mappings(shared),
        2,
        "A's share and the caller's, which keeps the frame for B"
    );
    assert_eq!(b.stat(f).map(|s| s.size), Ok(10), "B catches up");
    assert!(offer.adopted());
    assert_eq!(mappings(shared), 3, "B's share too");
    assert_eq!(frame_bytes(shared)[..11], [5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 0]);
}

/// A replica that applies a truncation late must not zero the tail of a shared page again:
/// the bytes written there after the truncation (here by a write the leading replica put into
/// the frame) would be lost.
#[test]
fn a_late_truncation_leaves_a_shared_page_alone() {
    let _serial = install();
    let (a, b, f) = two_replicas_with_a_file();
    let shared = frame(0);
    assert_eq!(a.share_pages(f, 0, vec![shared]).0, Ok(1));
    a.truncate(f, 10, t(2)).unwrap();
    assert_eq!(frame_bytes(shared)[..11], [5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 0]);
    a.write(f, 10, &[6; 4], t(3)).unwrap();
    let mut buf = [0u8; 15];
    assert_eq!(b.read(f, 0, &mut buf), Ok(14), "B catches up");
    assert_eq!(buf[..14], [5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 6, 6, 6, 6]);
    assert_eq!(frame_bytes(shared)[10..14], [6; 4]);
}
