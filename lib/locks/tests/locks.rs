//! The lock table against Linux's rules for record and `flock` locks.

use locks::{Family, Kind, Lock, LockTable, Owner, Refused, EOF, MAX_DEADLOCK_STEPS};

const F: (u64, Family) = (7, Family::Record);
const A: Owner = Owner::Process(1);
const B: Owner = Owner::Process(2);
const D: Owner = Owner::Description(9);

fn lock(owner: Owner, kind: Kind, start: u64, end: u64) -> Lock {
    Lock {
        owner,
        kind,
        start,
        end,
    }
}

#[test]
fn readers_share_and_writers_exclude() {
    let mut t = LockTable::new();
    t.set(F, A, Some(Kind::Read), (0, 100)).unwrap();
    t.set(F, B, Some(Kind::Read), (50, 150)).unwrap();
    assert_eq!(
        t.set(F, B, Some(Kind::Write), (90, 95)),
        Err(Refused::Conflict(lock(A, Kind::Read, 0, 100)))
    );
    assert_eq!(t.conflict(F, B, Kind::Write, (100, 200)), None);
    assert_eq!(
        t.conflict(F, A, Kind::Write, (120, 130)),
        Some(lock(B, Kind::Read, 50, 150))
    );
    // An OFD lock (a description) conflicts with a process's record lock too.
    assert!(t.conflict(F, D, Kind::Write, (0, 1)).is_some());
    // A refused request changed nothing.
    assert_eq!(t.locks(7, Family::Record).len(), 2);
}

#[test]
fn an_owner_replaces_splits_and_merges_its_own_ranges() {
    let mut t = LockTable::new();
    t.set(F, A, Some(Kind::Write), (0, EOF)).unwrap();
    // Its own locks never conflict: converting the middle to a read lock splits it in three.
    t.set(F, A, Some(Kind::Read), (10, 20)).unwrap();
    assert_eq!(
        t.locks(7, Family::Record),
        &[
            lock(A, Kind::Write, 0, 10),
            lock(A, Kind::Read, 10, 20),
            lock(A, Kind::Write, 20, EOF)
        ]
    );
    // Unlocking a hole, then taking it back as a write lock merges everything again.
    t.set(F, A, None, (10, 20)).unwrap();
    assert_eq!(t.locks(7, Family::Record).len(), 2);
    assert_eq!(t.conflict(F, B, Kind::Write, (10, 20)), None);
    t.set(F, A, Some(Kind::Write), (10, 20)).unwrap();
    assert_eq!(t.locks(7, Family::Record), &[lock(A, Kind::Write, 0, EOF)]);
    // Unlocking what was never locked, or an empty range, is fine.
    t.set(F, B, None, (0, 5)).unwrap();
    t.set(F, A, Some(Kind::Read), (5, 5)).unwrap();
    t.set(F, A, None, (0, EOF)).unwrap();
    assert!(t.is_empty());
}

#[test]
fn families_do_not_conflict_and_releases_are_per_owner() {
    let mut t = LockTable::new();
    t.set((7, Family::Flock), D, Some(Kind::Write), (0, EOF))
        .unwrap();
    t.set(F, B, Some(Kind::Write), (0, EOF)).unwrap();
    assert_eq!(
        t.set(
            (7, Family::Flock),
            Owner::Description(10),
            Some(Kind::Read),
            (0, EOF)
        ),
        Err(Refused::Conflict(lock(D, Kind::Write, 0, EOF)))
    );
    // flock converts in place: the holder downgrades and another reader joins.
    t.set((7, Family::Flock), D, Some(Kind::Read), (0, EOF))
        .unwrap();
    t.set(
        (7, Family::Flock),
        Owner::Description(10),
        Some(Kind::Read),
        (0, EOF),
    )
    .unwrap();
    t.set((8, Family::Record), B, Some(Kind::Read), (0, 1))
        .unwrap();
    t.release(F, B);
    assert!(t.locks(7, Family::Record).is_empty());
    assert_eq!(t.locks(8, Family::Record).len(), 1);
    t.release_all(B);
    t.release_all(D);
    t.release_all(Owner::Description(10));
    assert!(t.is_empty());
}

#[test]
fn a_cycle_of_waiting_processes_is_a_deadlock() {
    let (a, b, c) = (Owner::Process(1), Owner::Process(2), Owner::Process(3));
    let mut t = LockTable::new();
    // a waits for b, b for c: c waiting for a closes the cycle; a waiting for c does not.
    t.wait_for(a, Some(b)).unwrap();
    t.wait_for(b, Some(c)).unwrap();
    assert_eq!(t.wait_for(c, Some(a)), Err(Refused::Deadlock));
    assert!(!t.is_waiting(c));
    // b stops waiting (granted or interrupted): c may wait for a now.
    t.wait_for(b, None).unwrap();
    t.wait_for(c, Some(a)).unwrap();
    assert!(t.is_waiting(c));
    // An open file description's wait is not recorded.
    let d = Owner::Description(9);
    t.wait_for(d, Some(c)).unwrap();
    assert!(!t.is_waiting(d));
    // A chain longer than the steps followed is not called a deadlock.
    let mut t = LockTable::new();
    let n = MAX_DEADLOCK_STEPS as u32 + 2;
    for i in 0..n {
        t.wait_for(Owner::Process(i), Some(Owner::Process(i + 1)))
            .unwrap();
    }
    assert_eq!(
        t.wait_for(Owner::Process(n), Some(Owner::Process(0))),
        Ok(())
    );
    // A direct wait on oneself is a deadlock.
    assert_eq!(t.wait_for(a, Some(a)), Err(Refused::Deadlock));
}
