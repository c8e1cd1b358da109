//! Unit tests of NR replicas, the log, lagging replicas, payloads and deterministic allocation.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread;

use nr::dalloc::{
    AllocError, DetAllocHandle, DeterministicAlloc, GlobalAllocator, ReplicaAllocator,
};
use nr::{Dispatch, Log, Payload, Replica};

/// A small sequential map from keys `0..8` to values.
#[derive(Default, Clone, PartialEq, Eq, Debug)]
struct Map {
    values: [u64; 8],
}

#[derive(Clone, Debug)]
enum Update {
    Put(usize, u64),
}

impl Dispatch for Map {
    type ReadOp = usize;
    type UpdateOp = Update;
    type Resp = u64;

    fn dispatch(&self, key: usize) -> u64 {
        self.values[key]
    }

    fn dispatch_mut(&mut self, op: Update) -> u64 {
        match op {
            Update::Put(k, v) => std::mem::replace(&mut self.values[k], v),
        }
    }
}

#[test]
fn updates_reach_every_replica() {
    let log = Arc::new(Log::<Update>::with_capacity(64));
    let r1 = Replica::<Map>::new(&log);
    let r2 = Replica::<Map>::new(&log);
    assert_eq!((r1.id(), r2.id()), (0, 1));
    let t1 = r1.register().unwrap();
    let t2 = r2.register().unwrap();
    assert_eq!(r1.execute_mut(Update::Put(1, 10), &t1), 0);
    assert_eq!(r2.execute_mut(Update::Put(1, 11), &t2), 10);
    assert_eq!(r1.execute(1, &t1), 11);
    assert_eq!(r2.execute(1, &t2), 11);
    let s1 = r1.verify(&t1, |m| m.clone());
    let s2 = r2.verify(&t2, |m| m.clone());
    assert_eq!(s1, s2);
}

#[test]
fn log_wraps_and_idle_replica_is_advanced_by_appender() {
    // A 4-entry log wraps every 4 updates; replica 2 never executes anything itself, so the
    // appender on replica 1 must advance it whenever the log is full.
    let log = Arc::new(Log::<Update>::with_capacity(4));
    let r1 = Replica::<Map>::with_data(&log, Map::default(), 2);
    let r2 = Replica::<Map>::with_data(&log, Map::default(), 2);
    let t1 = r1.register().unwrap();
    let t2 = r2.register().unwrap();
    for i in 0..100u64 {
        assert_eq!(
            r1.execute_mut(Update::Put((i % 8) as usize, i), &t1),
            i.saturating_sub(8)
        );
    }
    assert!(log.tail() == 100);
    assert_eq!(r1.verify(&t1, |m| m.clone()), r2.verify(&t2, |m| m.clone()));
}

#[test]
fn register_is_bounded_and_tokens_are_bound_to_their_replica() {
    let log = Arc::new(Log::<Update>::with_capacity(16));
    let r1 = Replica::<Map>::with_data(&log, Map::default(), 2);
    let r2 = Replica::<Map>::with_data(&log, Map::default(), 2);
    let t1 = r1.register().unwrap();
    assert!(r1.register().is_some());
    assert!(r1.register().is_none());
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| r2.execute(0, &t1)));
    assert!(result.is_err(), "a foreign token must be rejected");
}

#[test]
fn replicas_cannot_join_a_used_log() {
    let log = Arc::new(Log::<Update>::with_capacity(128));
    let r1 = Replica::<Map>::new(&log);
    let t1 = r1.register().unwrap();
    r1.execute_mut(Update::Put(0, 1), &t1);
    let late = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| Replica::<Map>::new(&log)));
    assert!(late.is_err());
}

/// Set by [`record_lag`].
static LAG_REPORTS: AtomicUsize = AtomicUsize::new(0);
static LAGGING_REPLICA: AtomicUsize = AtomicUsize::new(usize::MAX);
/// Opens [`Gated`]'s gate.
static GATE_OPEN: AtomicBool = AtomicBool::new(false);

fn record_lag(log_id: usize, replica: usize) {
    assert_eq!(log_id, 7);
    LAGGING_REPLICA.store(replica, Ordering::SeqCst);
    LAG_REPORTS.fetch_add(1, Ordering::SeqCst);
    // The "IPI handler" lets the stuck replica continue.
    GATE_OPEN.store(true, Ordering::SeqCst);
}

/// A counter whose `Block` update blocks replica 1 (inside its combiner) until the gate opens.
struct Gated {
    replica: usize,
    count: u64,
}

#[derive(Clone)]
enum GatedOp {
    Block,
    Inc,
}

impl Dispatch for Gated {
    type ReadOp = ();
    type UpdateOp = GatedOp;
    type Resp = u64;

    fn dispatch(&self, _: ()) -> u64 {
        self.count
    }

    fn dispatch_mut(&mut self, op: GatedOp) -> u64 {
        match op {
            GatedOp::Block => {
                while self.replica == 1 && !GATE_OPEN.load(Ordering::SeqCst) {
                    thread::yield_now();
                }
            }
            GatedOp::Inc => self.count += 1,
        }
        self.count
    }
}

#[test]
fn lag_callback_fires_when_lagging_replica_is_busy() {
    let log = Arc::new(
        Log::<GatedOp>::with_capacity(4)
            .with_id(7)
            .with_lag_callback(record_lag),
    );
    let r0 = Replica::with_data(
        &log,
        Gated {
            replica: 0,
            count: 0,
        },
        1,
    );
    let r1 = Replica::with_data(
        &log,
        Gated {
            replica: 1,
            count: 0,
        },
        1,
    );
    let t0 = r0.register().unwrap();
    let t1 = r1.register().unwrap();
    let blocker = {
        let r1 = r1.clone();
        thread::spawn(move || r1.execute_mut(GatedOp::Block, &t1))
    };
    // Wait until the blocking update is in the log, so replica 1 is stuck applying it.
    while log.tail() == 0 {
        thread::yield_now();
    }
    for i in 1..=20 {
        assert_eq!(r0.execute_mut(GatedOp::Inc, &t0), i);
    }
    blocker.join().unwrap();
    assert!(LAG_REPORTS.load(Ordering::SeqCst) >= 1);
    assert_eq!(LAGGING_REPLICA.load(Ordering::SeqCst), 1);
}

#[test]
fn sync_brings_an_idle_replica_up_to_date() {
    let log = Arc::new(Log::<Update>::with_capacity(64));
    let r1 = Replica::<Map>::new(&log);
    let r2 = Replica::<Map>::new(&log);
    let t1 = r1.register().unwrap();
    let t2 = r2.register().unwrap();
    for k in 0..8 {
        r1.execute_mut(Update::Put(k, k as u64 + 1), &t1);
    }
    r2.sync(&t2);
    // After `sync`, the replica's local state is current without further combining.
    assert_eq!(r2.execute(7, &t2), 8);
}

/// A structure that consumes payloads.
#[derive(Default)]
struct Writes {
    bytes: usize,
}

#[derive(Clone)]
struct Write(Payload<Vec<u8>>);

impl Dispatch for Writes {
    type ReadOp = ();
    type UpdateOp = Write;
    type Resp = usize;

    fn dispatch(&self, _: ()) -> usize {
        self.bytes
    }

    fn dispatch_mut(&mut self, op: Write) -> usize {
        let data = op.0.apply().expect("each replica applies the payload once");
        self.bytes += data.len();
        self.bytes
    }
}

#[test]
fn payload_is_released_when_the_last_replica_applied_it() {
    let log = Arc::new(Log::<Write>::with_capacity(64));
    let r1 = Replica::<Writes>::new(&log);
    let r2 = Replica::<Writes>::new(&log);
    let t1 = r1.register().unwrap();
    let t2 = r2.register().unwrap();
    let payload = Payload::new(vec![0u8; 4096], 2);
    assert_eq!(r1.execute_mut(Write(payload.clone()), &t1), 4096);
    assert!(!payload.is_released(), "replica 2 has not applied it yet");
    assert!(!payload.is_settled(), "replica 2 will still apply it");
    r2.sync(&t2);
    assert!(payload.is_released());
    assert!(payload.is_settled());
    assert!(payload.apply().is_none());
    assert_eq!(r2.execute((), &t2), 4096);
}

#[test]
fn a_payload_in_no_log_is_settled_once_its_other_handles_are_gone() {
    let payload = Payload::new(vec![0u8; 16], 2);
    let op = Write(payload.clone());
    assert!(!payload.is_settled(), "the operation may still enter a log");
    drop(op);
    assert!(payload.is_settled(), "no replica can apply it any more");
    assert!(!payload.is_released());
}

#[test]
fn one_application_claims_the_payload() {
    let payload = Payload::new(7u32, 3);
    let (a, b, c) = (
        payload.apply().unwrap(),
        payload.apply().unwrap(),
        payload.apply().unwrap(),
    );
    let claims = [b.claim(), a.claim(), c.claim(), b.claim()];
    assert_eq!(claims, [true, false, false, false]);
    // Every application still sees the data.
    assert_eq!(*a + *b + *c, 21);
}

/// A global allocator that fails the `n`-th allocation (counting from 1), shared by a test.
struct FailNth {
    calls: AtomicUsize,
    fail_at: usize,
}

impl ReplicaAllocator for FailNth {
    fn allocate(
        &self,
        replica: usize,
        layout: std::alloc::Layout,
    ) -> Option<std::ptr::NonNull<u8>> {
        if self.calls.fetch_add(1, Ordering::SeqCst) + 1 == self.fail_at {
            return None;
        }
        GlobalAllocator.allocate(replica, layout)
    }

    unsafe fn deallocate(
        &self,
        replica: usize,
        ptr: std::ptr::NonNull<u8>,
        layout: std::alloc::Layout,
    ) {
        // SAFETY: forwarded from our caller; blocks come from `GlobalAllocator`.
        unsafe { GlobalAllocator.deallocate(replica, ptr, layout) }
    }
}

/// A list of heap blocks allocated deterministically.
struct Blocks {
    alloc: DetAllocHandle<FailNth>,
    blocks: Vec<std::ptr::NonNull<u8>>,
    failures: usize,
}

// SAFETY: the blocks are owned by the structure and only freed by it.
unsafe impl Send for Blocks {}
// SAFETY: shared access only reads the vector.
unsafe impl Sync for Blocks {}

impl Drop for Blocks {
    fn drop(&mut self) {
        for b in self.blocks.drain(..) {
            // SAFETY: allocated by `self.alloc` with this layout and freed once.
            unsafe {
                self.alloc
                    .deallocate(b, std::alloc::Layout::new::<[u64; 4]>())
            };
        }
    }
}

impl Dispatch for Blocks {
    type ReadOp = ();
    type UpdateOp = ();
    type Resp = Result<usize, AllocError>;

    fn dispatch(&self, _: ()) -> Self::Resp {
        Ok(self.blocks.len())
    }

    fn dispatch_mut(&mut self, _: ()) -> Self::Resp {
        match self.alloc.allocate(std::alloc::Layout::new::<[u64; 4]>()) {
            Ok(b) => {
                self.blocks.push(b);
                Ok(self.blocks.len())
            }
            Err(e) => {
                self.failures += 1;
                Err(e)
            }
        }
    }
}

#[test]
fn deterministic_allocation_gives_every_replica_the_same_outcome() {
    // The 4th underlying allocation fails: it belongs to the second request (2 replicas x 2
    // requests), so request 2 must fail on both replicas and requests 1 and 3 succeed.
    let shared = DeterministicAlloc::new(
        FailNth {
            calls: AtomicUsize::new(0),
            fail_at: 4,
        },
        2,
    );
    let log = Arc::new(Log::<()>::with_capacity(16));
    let make = |r| Blocks {
        alloc: shared.handle(r),
        blocks: Vec::new(),
        failures: 0,
    };
    let r1 = Replica::with_data(&log, make(0), 1);
    let r2 = Replica::with_data(&log, make(1), 1);
    let t1 = r1.register().unwrap();
    let t2 = r2.register().unwrap();
    assert_eq!(r1.execute_mut((), &t1), Ok(1));
    assert_eq!(r1.execute_mut((), &t1), Err(AllocError));
    assert_eq!(r2.execute_mut((), &t2), Ok(2));
    assert_eq!(
        shared.outstanding(),
        1,
        "replica 1 has not reached request 3 yet"
    );
    let view = |b: &Blocks| (b.blocks.len(), b.failures);
    assert_eq!(r1.verify(&t1, view), (2, 1));
    assert_eq!(r2.verify(&t2, view), (2, 1));
    assert_eq!(
        shared.outstanding(),
        0,
        "every replica picked up every result"
    );
    let distinct = r1.verify(&t1, |b| b.blocks.clone()) != r2.verify(&t2, |b| b.blocks.clone());
    assert!(distinct, "each replica gets its own blocks");
}

#[test]
fn try_box_uses_the_global_allocator() {
    let shared = DeterministicAlloc::new(GlobalAllocator, 1);
    let mut handle = shared.handle(0);
    let b = handle.try_box([7u64; 3]).unwrap();
    assert_eq!(*b, [7, 7, 7]);
    assert_eq!(shared.outstanding(), 0);
}

#[test]
fn concurrent_writers_and_readers_agree() {
    nr::set_spin_hook(thread::yield_now);
    let log = Arc::new(Log::<Update>::with_capacity(16));
    let replicas = [
        Replica::<Map>::with_data(&log, Map::default(), 4),
        Replica::<Map>::with_data(&log, Map::default(), 4),
    ];
    let handles: Vec<_> = (0..4)
        .map(|t| {
            let r = replicas[t % 2].clone();
            let tok = r.register().unwrap();
            thread::spawn(move || {
                let mut sum = 0;
                for i in 0..500u64 {
                    r.execute_mut(Update::Put(t, i + 1), &tok);
                    // Our own key only changes through us: reads must see our last write.
                    assert_eq!(r.execute(t, &tok), i + 1);
                    sum += r.execute((t + 1) % 4, &tok);
                }
                (tok, sum)
            })
        })
        .collect();
    let toks: Vec<_> = handles.into_iter().map(|h| h.join().unwrap().0).collect();
    let s0 = replicas[0].verify(&toks[0], |m| m.clone());
    let s1 = replicas[1].verify(&toks[1], |m| m.clone());
    assert_eq!(s0, s1);
    assert_eq!(&s0.values[..4], &[500; 4]);
}
