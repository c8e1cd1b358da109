//! Loom model checks of NR and CNR. Run with
//! `RUSTFLAGS="--cfg loom" cargo test -p nr --release --test loom`.
//!
//! The models are deliberately tiny (two threads, logs of two or four entries) and use a
//! preemption bound of 4 so that all of them finish in a few minutes.
#![cfg(loom)]

use std::sync::Arc;

use loom::sync::atomic::{AtomicBool, Ordering};
use loom::thread;
use nr::cnr::{self, LogMapper, LogSet, Logs};
use nr::{Dispatch, Log, Replica};

fn model(f: impl Fn() + Sync + Send + 'static) {
    let mut builder = loom::model::Builder::new();
    builder.preemption_bound = Some(4);
    builder.check(f);
}

/// A register with `Set(v)` (returns the old value) and reads.
#[derive(Default)]
struct Register(u64);

impl Dispatch for Register {
    type ReadOp = ();
    type UpdateOp = u64;
    type Resp = u64;
    fn dispatch(&self, _: ()) -> u64 {
        self.0
    }
    fn dispatch_mut(&mut self, v: u64) -> u64 {
        std::mem::replace(&mut self.0, v)
    }
}

/// A counter whose increments return the new value.
#[derive(Default)]
struct Counter(u64);

impl Dispatch for Counter {
    type ReadOp = ();
    type UpdateOp = ();
    type Resp = u64;
    fn dispatch(&self, _: ()) -> u64 {
        self.0
    }
    fn dispatch_mut(&mut self, _: ()) -> u64 {
        self.0 += 1;
        self.0
    }
}

/// A read on another replica that starts after an update returned sees the update, and reads
/// never go back in time.
#[test]
fn read_linearizability_across_replicas() {
    model(|| {
        let log = Arc::new(Log::<u64>::with_capacity(4));
        let r0 = Replica::with_data(&log, Register::default(), 1);
        let r1 = Replica::with_data(&log, Register::default(), 1);
        let t0 = r0.register().unwrap();
        let t1 = r1.register().unwrap();
        let done = Arc::new(AtomicBool::new(false));
        let writer = {
            let (r0, done) = (r0.clone(), done.clone());
            thread::spawn(move || {
                assert_eq!(r0.execute_mut(1, &t0), 0);
                done.store(true, Ordering::SeqCst);
            })
        };
        let after_write = done.load(Ordering::SeqCst);
        let first = r1.execute((), &t1);
        if after_write {
            assert_eq!(first, 1, "a read after a completed write must see it");
        }
        let second = r1.execute((), &t1);
        assert!(second >= first, "reads must not go back");
        writer.join().unwrap();
        assert_eq!(r1.execute((), &t1), 1);
    });
}

/// Two threads on one replica: flat combining applies both increments exactly once and gives
/// each thread its own response.
#[test]
fn combining_returns_each_response_once() {
    model(|| {
        let log = Arc::new(Log::<()>::with_capacity(4));
        let r = Replica::with_data(&log, Counter::default(), 2);
        let ta = r.register().unwrap();
        let tb = r.register().unwrap();
        let other = {
            let r = r.clone();
            thread::spawn(move || r.execute_mut((), &tb))
        };
        let mine = r.execute_mut((), &ta);
        let theirs = other.join().unwrap();
        let mut both = [mine, theirs];
        both.sort_unstable();
        assert_eq!(both, [1, 2]);
        assert_eq!(r.execute((), &ta), 2);
    });
}

/// A two-entry log shared by two replicas wraps around: appends wait for (and advance) the
/// other replica, and both replicas end in the same state.
#[test]
fn log_wraps_around() {
    model(|| {
        let log = Arc::new(Log::<()>::with_capacity(2));
        let r0 = Replica::with_data(&log, Counter::default(), 1);
        let r1 = Replica::with_data(&log, Counter::default(), 1);
        let t0 = r0.register().unwrap();
        let t1 = r1.register().unwrap();
        let other = {
            let r1 = r1.clone();
            thread::spawn(move || {
                let v = r1.execute_mut((), &t1);
                (v, t1)
            })
        };
        let a = r0.execute_mut((), &t0);
        let b = r0.execute_mut((), &t0);
        assert!(b > a);
        let (v, t1) = other.join().unwrap();
        assert!((1..=3).contains(&v));
        assert_eq!(log.tail(), 3);
        assert_eq!(r0.execute((), &t0), 3);
        assert_eq!(r1.execute((), &t1), 3);
    });
}

/// Two slots, one per log; `Sum` is a scan-read over both logs.
#[derive(Default)]
struct Pair([loom::sync::atomic::AtomicU64; 2]);

#[derive(Clone, Copy)]
enum PairOp {
    Set(usize, u64),
    Sum,
    /// Zeroes both slots and returns their old sum: a scan-update over both logs.
    Clear,
}

impl LogMapper for PairOp {
    fn hash(&self, nlogs: usize, logs: &mut LogSet) {
        logs.clear();
        match *self {
            PairOp::Set(k, _) => logs.push(k % nlogs),
            PairOp::Sum | PairOp::Clear => logs.push_all(nlogs),
        }
    }
}

impl cnr::Dispatch for Pair {
    type ReadOp = PairOp;
    type UpdateOp = PairOp;
    type Resp = u64;
    fn dispatch(&self, op: PairOp) -> u64 {
        match op {
            PairOp::Sum => self.0.iter().map(|v| v.load(Ordering::SeqCst)).sum(),
            PairOp::Set(k, _) => self.0[k].load(Ordering::SeqCst),
            PairOp::Clear => unreachable!("Clear is an update"),
        }
    }
    fn dispatch_mut(&self, op: PairOp) -> u64 {
        match op {
            PairOp::Set(k, v) => self.0[k].swap(v, Ordering::SeqCst),
            PairOp::Clear => self.0.iter().map(|v| v.swap(0, Ordering::SeqCst)).sum(),
            PairOp::Sum => unreachable!("Sum is a read"),
        }
    }
}

/// A scan-read observes an atomic snapshot of both logs: the writer sets slot 0 and then slot
/// 1, so the scan may see 0, 1 or 11, never 10.
#[test]
fn cnr_scan_sees_a_snapshot() {
    model(|| {
        let logs = Arc::new(Logs::<PairOp>::with_capacity(2, 2));
        let r = cnr::Replica::with_data(&logs, Pair::default(), 2);
        let tw = r.register().unwrap();
        let ts = r.register().unwrap();
        let writer = {
            let r = r.clone();
            thread::spawn(move || {
                r.execute_mut(PairOp::Set(0, 1), &tw);
                r.execute_mut(PairOp::Set(1, 10), &tw);
            })
        };
        let sum = r.execute(PairOp::Sum, &ts);
        assert!([0, 1, 11].contains(&sum), "scan saw a torn state: {sum}");
        writer.join().unwrap();
        assert_eq!(r.execute(PairOp::Sum, &ts), 11);
    });
}

/// A scan-update issued on one replica is applied at the same point of both logs on both
/// replicas: the writer (on the other replica) sets slot 0 and then slot 1, so `Clear` returns
/// 0, 1 or 11 and both replicas end in the state that order implies.
#[test]
fn cnr_scan_update_is_atomic_on_every_replica() {
    model(|| {
        let logs = Arc::new(Logs::<PairOp>::with_capacity(2, 4));
        let r0 = cnr::Replica::with_data(&logs, Pair::default(), 1);
        let r1 = cnr::Replica::with_data(&logs, Pair::default(), 1);
        let tw = r0.register().unwrap();
        let tc = r1.register().unwrap();
        let writer = {
            let r0 = r0.clone();
            thread::spawn(move || {
                r0.execute_mut(PairOp::Set(0, 1), &tw);
                r0.execute_mut(PairOp::Set(1, 10), &tw);
                tw
            })
        };
        let cleared = r1.execute_mut(PairOp::Clear, &tc);
        let tw = writer.join().unwrap();
        let expected = match cleared {
            0 => 11,
            1 => 10,
            11 => 0,
            torn => panic!("scan-update saw a torn state: {torn}"),
        };
        assert_eq!(r0.execute(PairOp::Sum, &tw), expected);
        assert_eq!(r1.execute(PairOp::Sum, &tc), expected);
    });
}

/// CNR reads take no lock, so a read can see an update while that update's combiner is still
/// applying its batch: a read on another replica that starts after such a read must see the
/// update too (the completed tail moves before the batch is applied).
#[test]
fn cnr_read_after_a_read_that_saw_an_update() {
    model(|| {
        let logs = Arc::new(Logs::<PairOp>::with_capacity(2, 4));
        let r0 = cnr::Replica::with_data(&logs, Pair::default(), 2);
        let r1 = cnr::Replica::with_data(&logs, Pair::default(), 1);
        let tw = r0.register().unwrap();
        let tr = r0.register().unwrap();
        let t1 = r1.register().unwrap();
        let writer = {
            let r0 = r0.clone();
            thread::spawn(move || {
                r0.execute_mut(PairOp::Set(0, 1), &tw);
            })
        };
        let first = r0.execute(PairOp::Set(0, 0), &tr);
        let second = r1.execute(PairOp::Set(0, 0), &t1);
        assert!(
            second >= first,
            "a read on replica 1 missed an update a read on replica 0 had seen"
        );
        writer.join().unwrap();
    });
}
