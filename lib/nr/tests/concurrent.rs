//! Randomized multi-threaded linearizability checks of NR and CNR (with scans) against a
//! sequential model, and stress tests with more threads than cores. Logs are tiny (4 or 64
//! entries) so that appends constantly wait for log space and lagging replicas get advanced.
//!
//! Every randomized round derives its seed from `NR_SEED` (default fixed) and prints it on
//! failure; rerun with `NR_SEED=<seed>` to replay the same operation mix.

mod common;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Barrier};
use std::thread;

use common::{base_seed, linearizable, Clock, Event, Model, Rng};
use nr::cnr::{self, LogMapper, LogSet, Logs};
use nr::{Dispatch, Log, Replica};

const KEYS: usize = 6;
const REPLICAS: usize = 2;
const THREADS_PER_REPLICA: usize = 2;
const OPS_PER_THREAD: usize = 6;
const ROUNDS: u64 = 1000;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Op {
    Get(usize),
    Put(usize, u64),
    /// Sum of keys whose log (key % 3) is 0 or 1: a scan-read over two of three logs in CNR.
    Sum01,
    /// Adds to every key, returns the old total: a scan-update over all logs in CNR.
    AddAll(u64),
}

impl Op {
    fn random(rng: &mut Rng) -> Op {
        let key = rng.below(KEYS as u64) as usize;
        match rng.below(10) {
            0..=3 => Op::Get(key),
            4..=7 => Op::Put(key, 1 + rng.below(9)),
            8 => Op::Sum01,
            _ => Op::AddAll(1 + rng.below(3)),
        }
    }

    fn is_update(&self) -> bool {
        matches!(self, Op::Put(..) | Op::AddAll(_))
    }
}

/// The sequential specification.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
struct Spec([u64; KEYS]);

impl Model for Spec {
    type Op = Op;
    type Resp = u64;
    fn step(&mut self, op: &Op) -> u64 {
        match *op {
            Op::Get(k) => self.0[k],
            Op::Put(k, v) => std::mem::replace(&mut self.0[k], v),
            Op::Sum01 => (0..KEYS).filter(|k| k % 3 != 2).map(|k| self.0[k]).sum(),
            Op::AddAll(d) => {
                let old = self.0.iter().sum();
                self.0.iter_mut().for_each(|v| *v += d);
                old
            }
        }
    }
}

/// NR: the specification itself is the replicated sequential structure.
impl Dispatch for Spec {
    type ReadOp = Op;
    type UpdateOp = Op;
    type Resp = u64;
    fn dispatch(&self, op: Op) -> u64 {
        assert!(!op.is_update());
        self.clone().step(&op)
    }
    fn dispatch_mut(&mut self, op: Op) -> u64 {
        assert!(op.is_update());
        self.step(&op)
    }
}

/// CNR: a concurrent map of atomics; key `k` belongs to log `k % 3`.
#[derive(Default)]
struct AtomicMap([AtomicU64; KEYS]);

impl LogMapper for Op {
    fn hash(&self, nlogs: usize, logs: &mut LogSet) {
        logs.clear();
        match *self {
            Op::Get(k) | Op::Put(k, _) => logs.push(k % nlogs),
            Op::Sum01 => {
                logs.push(0);
                logs.push(1);
            }
            Op::AddAll(_) => logs.push_all(nlogs),
        }
    }
}

impl cnr::Dispatch for AtomicMap {
    type ReadOp = Op;
    type UpdateOp = Op;
    type Resp = u64;
    fn dispatch(&self, op: Op) -> u64 {
        match op {
            Op::Get(k) => self.0[k].load(Ordering::SeqCst),
            Op::Sum01 => (0..KEYS)
                .filter(|k| k % 3 != 2)
                .map(|k| self.0[k].load(Ordering::SeqCst))
                .sum(),
            _ => unreachable!("not a read"),
        }
    }
    fn dispatch_mut(&self, op: Op) -> u64 {
        match op {
            Op::Put(k, v) => self.0[k].swap(v, Ordering::SeqCst),
            Op::AddAll(d) => self
                .0
                .iter()
                .map(|v| v.fetch_add(d, Ordering::SeqCst))
                .sum(),
            _ => unreachable!("not an update"),
        }
    }
}

/// Runs one round with `per_replica` threads per replica: every thread executes its random operations through `exec(replica, thread,
/// op)`; returns the history.
fn run_round<F>(seed: u64, per_replica: usize, exec: F) -> Vec<Event<Op, u64>>
where
    F: Fn(usize, usize, Op) -> u64 + Send + Sync + 'static,
{
    let exec = Arc::new(exec);
    let clock = Arc::new(Clock::new());
    let threads = REPLICAS * per_replica;
    let start = Arc::new(Barrier::new(threads));
    let handles: Vec<_> = (0..threads)
        .map(|t| {
            let (exec, clock, start) = (exec.clone(), clock.clone(), start.clone());
            thread::spawn(move || {
                let mut rng = Rng::new(seed ^ (t as u64 + 1).wrapping_mul(0x1234_5678_9abc_def1));
                start.wait();
                (0..OPS_PER_THREAD)
                    .map(|_| {
                        let op = Op::random(&mut rng);
                        let call = clock.now();
                        let resp = exec(t % REPLICAS, t / REPLICAS, op);
                        let ret = clock.now();
                        Event {
                            op,
                            resp,
                            call,
                            ret,
                        }
                    })
                    .collect::<Vec<_>>()
            })
        })
        .collect();
    handles
        .into_iter()
        .flat_map(|h| h.join().unwrap())
        .collect()
}

fn check(kind: &str, seed: u64, history: &[Event<Op, u64>]) {
    assert!(
        linearizable(&Spec::default(), history),
        "{kind}: history not linearizable (rerun with NR_SEED={seed}):\n{history:#?}"
    );
}

#[test]
fn nr_is_linearizable() {
    nr::set_spin_hook(thread::yield_now);
    let base = base_seed();
    for round in 0..ROUNDS {
        let seed = base.wrapping_add(round);
        // Odd rounds use one thread per replica (the combiner then skips the reader lock).
        let per_replica = 1 + (round % 2) as usize;
        let log = Arc::new(Log::<Op>::with_capacity(4));
        let replicas: Vec<_> = (0..REPLICAS)
            .map(|_| Replica::with_data(&log, Spec::default(), per_replica))
            .collect();
        let tokens: Vec<Vec<_>> = replicas
            .iter()
            .map(|r| (0..per_replica).map(|_| r.register().unwrap()).collect())
            .collect();
        // Tokens are not `Sync`; each thread takes its own out of this table.
        let table: Arc<Vec<Vec<std::sync::Mutex<Option<nr::ReplicaToken>>>>> = Arc::new(
            tokens
                .into_iter()
                .map(|ts| {
                    ts.into_iter()
                        .map(|t| std::sync::Mutex::new(Some(t)))
                        .collect()
                })
                .collect(),
        );
        let rs = replicas.clone();
        let history = run_round(seed, per_replica, move |r, t, op| {
            let guard = table[r][t].lock().unwrap();
            let token = guard.as_ref().unwrap();
            if op.is_update() {
                rs[r].execute_mut(op, token)
            } else {
                rs[r].execute(op, token)
            }
        });
        check("NR", seed, &history);
    }
}

#[test]
fn cnr_with_scans_is_linearizable() {
    nr::set_spin_hook(thread::yield_now);
    let base = base_seed() ^ 0xc0ffee;
    for round in 0..ROUNDS {
        let seed = base.wrapping_add(round);
        let logs = Arc::new(Logs::<Op>::with_capacity(3, 4));
        let replicas: Vec<_> = (0..REPLICAS)
            .map(|_| cnr::Replica::with_data(&logs, AtomicMap::default(), THREADS_PER_REPLICA + 1))
            .collect();
        let table: Arc<Vec<Vec<std::sync::Mutex<Option<nr::ReplicaToken>>>>> = Arc::new(
            replicas
                .iter()
                .map(|r| {
                    (0..THREADS_PER_REPLICA)
                        .map(|_| std::sync::Mutex::new(r.register()))
                        .collect()
                })
                .collect(),
        );
        let rs = replicas.clone();
        let history = run_round(seed, THREADS_PER_REPLICA, move |r, t, op| {
            let guard = table[r][t].lock().unwrap();
            let token = guard.as_ref().unwrap();
            if op.is_update() {
                rs[r].execute_mut(op, token)
            } else {
                rs[r].execute(op, token)
            }
        });
        check("CNR", seed, &history);
        // Every replica ends in the same state.
        let states: Vec<Vec<u64>> = replicas
            .iter()
            .map(|r| {
                let token = r
                    .register()
                    .unwrap_or_else(|| panic!("seed {seed}: no spare token"));
                r.verify(&token, |m| {
                    m.0.iter().map(|v| v.load(Ordering::SeqCst)).collect()
                })
            })
            .collect();
        assert_eq!(states[0], states[1], "replicas diverged (NR_SEED={seed})");
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

const STRESS_THREADS: usize = 8;
const STRESS_OPS: u64 = 5000;

#[test]
fn nr_stress_more_threads_than_cores() {
    nr::set_spin_hook(thread::yield_now);
    let log = Arc::new(Log::<()>::with_capacity(64));
    let replicas: Vec<_> = (0..2)
        .map(|_| Replica::with_data(&log, Counter::default(), STRESS_THREADS / 2))
        .collect();
    let handles: Vec<_> = (0..STRESS_THREADS)
        .map(|t| {
            let r = replicas[t % 2].clone();
            let token = r.register().unwrap();
            thread::spawn(move || {
                let mut seen = Vec::with_capacity(STRESS_OPS as usize);
                let mut last_read = 0;
                for i in 0..STRESS_OPS {
                    let v = r.execute_mut((), &token);
                    assert!(
                        v > *seen.last().unwrap_or(&0),
                        "own increments must be ordered"
                    );
                    seen.push(v);
                    if i % 8 == 0 {
                        // A read after our increment sees at least it, and reads never go back.
                        let now = r.execute((), &token);
                        assert!(now >= v && now >= last_read);
                        last_read = now;
                    }
                }
                seen
            })
        })
        .collect();
    let mut all: Vec<u64> = handles
        .into_iter()
        .flat_map(|h| h.join().unwrap())
        .collect();
    all.sort_unstable();
    let total = STRESS_THREADS as u64 * STRESS_OPS;
    assert_eq!(
        all,
        (1..=total).collect::<Vec<_>>(),
        "every increment got a unique response"
    );
    for r in &replicas {
        let token = r.register();
        assert!(token.is_none(), "all slots are taken");
    }
}

/// Per-key counters over 4 logs; `Total` is a scan-read over all logs.
#[derive(Default)]
struct Counters([AtomicU64; 4]);

#[derive(Clone, Copy)]
enum CounterOp {
    Inc(usize),
    Total,
}

impl LogMapper for CounterOp {
    fn hash(&self, nlogs: usize, logs: &mut LogSet) {
        logs.clear();
        match *self {
            CounterOp::Inc(k) => logs.push(k % nlogs),
            CounterOp::Total => logs.push_all(nlogs),
        }
    }
}

impl cnr::Dispatch for Counters {
    type ReadOp = CounterOp;
    type UpdateOp = CounterOp;
    type Resp = u64;
    fn dispatch(&self, op: CounterOp) -> u64 {
        match op {
            CounterOp::Total => self.0.iter().map(|c| c.load(Ordering::SeqCst)).sum(),
            CounterOp::Inc(k) => self.0[k].load(Ordering::SeqCst),
        }
    }
    fn dispatch_mut(&self, op: CounterOp) -> u64 {
        match op {
            CounterOp::Inc(k) => self.0[k].fetch_add(1, Ordering::SeqCst) + 1,
            CounterOp::Total => unreachable!("Total is a read"),
        }
    }
}

#[test]
fn cnr_stress_more_threads_than_cores() {
    nr::set_spin_hook(thread::yield_now);
    let logs = Arc::new(Logs::<CounterOp>::with_capacity(4, 64));
    let replicas: Vec<_> = (0..2)
        .map(|_| cnr::Replica::with_data(&logs, Counters::default(), STRESS_THREADS / 2 + 1))
        .collect();
    let handles: Vec<_> = (0..STRESS_THREADS)
        .map(|t| {
            let r = replicas[t % 2].clone();
            let token = r.register().unwrap();
            thread::spawn(move || {
                let key = t % 4;
                let mut seen = Vec::new();
                let mut last_total = 0;
                for i in 0..STRESS_OPS {
                    seen.push(r.execute_mut(CounterOp::Inc(key), &token));
                    if i % 16 == 0 {
                        // Scan totals never go back and include our own increments.
                        let total = r.execute(CounterOp::Total, &token);
                        assert!(total >= last_total && total > i);
                        last_total = total;
                    }
                }
                (key, seen)
            })
        })
        .collect();
    let mut per_key = vec![Vec::new(); 4];
    for h in handles {
        let (key, seen) = h.join().unwrap();
        per_key[key].extend(seen);
    }
    let per_key_ops = STRESS_OPS * (STRESS_THREADS as u64 / 4);
    for seen in &mut per_key {
        seen.sort_unstable();
        assert_eq!(*seen, (1..=per_key_ops).collect::<Vec<_>>());
    }
    for r in &replicas {
        let token = r.register().unwrap();
        let totals = r.verify(&token, |c| {
            c.0.iter()
                .map(|v| v.load(Ordering::SeqCst))
                .collect::<Vec<_>>()
        });
        assert_eq!(totals, vec![per_key_ops; 4]);
    }
}
