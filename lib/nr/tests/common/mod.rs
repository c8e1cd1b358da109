//! Helpers shared by the randomized tests: a seeded RNG and a linearizability checker.

use std::collections::HashSet;
use std::fmt::Debug;
use std::hash::Hash;
use std::sync::atomic::{AtomicU64, Ordering};

/// SplitMix64: small, seedable, good enough to pick operations.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed)
    }

    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// Base seed: `NR_SEED` from the environment, or a fixed default.
pub fn base_seed() -> u64 {
    std::env::var("NR_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x5eed_2021)
}

/// A global clock for invocation and response timestamps (SeqCst, so the timestamps respect
/// real-time order between threads).
pub struct Clock(AtomicU64);

impl Clock {
    pub fn new() -> Self {
        Clock(AtomicU64::new(0))
    }

    pub fn now(&self) -> u64 {
        self.0.fetch_add(1, Ordering::SeqCst)
    }
}

/// One completed operation of a concurrent history.
#[derive(Debug, Clone)]
pub struct Event<Op, Resp> {
    pub op: Op,
    pub resp: Resp,
    pub call: u64,
    pub ret: u64,
}

/// A sequential specification.
pub trait Model: Clone + Eq + Hash + Debug {
    type Op: Debug;
    type Resp: Eq + Debug;
    fn step(&mut self, op: &Self::Op) -> Self::Resp;
}

/// Wing & Gong's search with memoization (Lowe's variant): is there a total order of `history`
/// (at most 64 events) that respects real-time order and makes `model` produce every response?
pub fn linearizable<M: Model>(model: &M, history: &[Event<M::Op, M::Resp>]) -> bool {
    assert!(history.len() <= 64);
    let mut seen = HashSet::new();
    search(model, history, 0, &mut seen)
}

fn search<M: Model>(
    state: &M,
    history: &[Event<M::Op, M::Resp>],
    done: u64,
    seen: &mut HashSet<(u64, M)>,
) -> bool {
    let all = if history.len() == 64 {
        u64::MAX
    } else {
        (1u64 << history.len()) - 1
    };
    if done == all {
        return true;
    }
    if !seen.insert((done, state.clone())) {
        return false;
    }
    // An event can go next if no pending event returned before it was called.
    let min_ret = history
        .iter()
        .enumerate()
        .filter(|(i, _)| done & (1 << i) == 0)
        .map(|(_, e)| e.ret)
        .min()
        .unwrap();
    for (i, e) in history.iter().enumerate() {
        if done & (1 << i) != 0 || e.call > min_ret {
            continue;
        }
        let mut next = state.clone();
        if next.step(&e.op) == e.resp && search(&next, history, done | (1 << i), seen) {
            return true;
        }
    }
    false
}

#[test]
fn checker_rejects_a_stale_read() {
    #[derive(Clone, PartialEq, Eq, Hash, Debug, Default)]
    struct Reg(u64);
    impl Model for Reg {
        type Op = Option<u64>;
        type Resp = u64;
        fn step(&mut self, op: &Option<u64>) -> u64 {
            match op {
                Some(v) => std::mem::replace(&mut self.0, *v),
                None => self.0,
            }
        }
    }
    let ev = |op, resp, call, ret| Event {
        op,
        resp,
        call,
        ret,
    };
    // write(1) completes, then a read returns the old value: not linearizable.
    let bad = [ev(Some(1), 0, 0, 1), ev(None, 0, 2, 3)];
    assert!(!linearizable(&Reg::default(), &bad));
    // Overlapping, the same read is fine.
    let ok = [ev(Some(1), 0, 0, 3), ev(None, 0, 1, 2)];
    assert!(linearizable(&Reg::default(), &ok));
}
