//! The shared operation log (§2.1 of the NrOS paper).

use alloc::boxed::Box;
use alloc::sync::Weak;
use alloc::vec::Vec;
use core::fmt;

use crate::sync::{AtomicBool, AtomicUsize, Backoff, CachePadded, Ordering, SpinLock, UnsafeCell};

/// Most replicas that can register with one log.
pub const MAX_REPLICAS_PER_LOG: usize = 16;

/// Number of spin iterations between two calls of the lag callback for the same full log.
const LAG_CALLBACK_INTERVAL: usize = 1 << 16;

/// Hook that the embedder registers to hear about a replica that blocks log appends.
///
/// It is called as `callback(log_id, replica_id)` when an append finds the log full, the
/// lagging replica `replica_id` cannot be advanced by the appending thread (another thread of
/// that replica holds its combiner lock), and the append has to wait. The kernel sends an IPI to
/// a core of that replica, whose handler calls `Replica::sync`. It is called again every
/// 65 536 spin iterations while the append keeps waiting, so it must be cheap and must not
/// block.
pub type LagCallback = fn(log_id: usize, replica_id: usize);

/// When a walk of the log ([`Log::exec`]) moves the completed tail past the entries it
/// applies.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Publish {
    /// After the walk (NR): a replica's reads wait behind its writer lock while it applies
    /// entries, so nothing applied is visible before the walk ends.
    After,
    /// Before the walk (CNR): reads take no lock, so an applied entry is visible at once, and
    /// a read on another replica that starts after a read saw it must wait for it. Publishing
    /// entries not applied yet only makes such a read wait for its own replica to apply them.
    Before,
}

/// Something that consumes a log on behalf of one replica and can be asked to catch up.
pub(crate) trait LogConsumer: Send + Sync {
    /// Tries to apply the outstanding entries of log `log_id` to this replica without
    /// blocking; returns false if another thread is already doing so.
    fn try_advance(&self, log_id: usize) -> bool;
}

/// One slot of the circular buffer, aligned to a cache line.
#[repr(align(64))]
struct Entry<T> {
    /// Logical index + 1 of the operation stored here; entries are published by storing it.
    seq: AtomicUsize,
    /// Index (in the log) of the replica that appended the operation.
    replica: UnsafeCell<usize>,
    /// The operation; `None` only before the slot is written for the first time.
    op: UnsafeCell<Option<T>>,
}

/// The shared operation log: a circular buffer of cache-line-aligned entries.
///
/// The log keeps a `tail` (next free logical index, advanced with one compare-and-swap per
/// appended batch), one local tail per replica (the next entry that replica has to apply), a
/// completed tail `ctail` (the largest local tail, used by reads) and a cached `head` (the
/// smallest local tail: entries below it have been applied everywhere and may be reused).
///
/// Logical indices grow forever; an entry at index `i` lives in slot `i % capacity` and is
/// published by storing `i + 1` into the slot's sequence number, so a slot can be reused
/// without per-replica "alive" masks.
///
/// Create a log with [`Log::new`] (a byte budget, as in the paper) or [`Log::with_capacity`],
/// wrap it in an `Arc`, then create one replica per NUMA node with it. Every replica must be
/// created before the first operation is executed on any of them.
pub struct Log<T> {
    entries: Box<[Entry<T>]>,
    mask: usize,
    tail: CachePadded<AtomicUsize>,
    ctail: CachePadded<AtomicUsize>,
    head: CachePadded<AtomicUsize>,
    ltails: [CachePadded<AtomicUsize>; MAX_REPLICAS_PER_LOG],
    nreplicas: AtomicUsize,
    /// Set by the first append; registration fails afterwards.
    sealed: AtomicBool,
    consumers: SpinLock<Vec<Weak<dyn LogConsumer>>>,
    lag_callback: Option<LagCallback>,
    id: usize,
}

// SAFETY: operations are moved into the log by one thread and read (by reference, then cloned)
// by any thread; entry contents are only written after the slot was consumed by every replica
// and only read after being published through `seq`, so `T: Send + Sync` suffices.
unsafe impl<T: Send + Sync> Sync for Log<T> {}
// SAFETY: as above; the log owns its operations.
unsafe impl<T: Send> Send for Log<T> {}

impl<T> fmt::Debug for Log<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Log")
            .field("id", &self.id)
            .field("capacity", &self.entries.len())
            .field("tail", &self.tail.load(Ordering::Relaxed))
            .field("ctail", &self.ctail.load(Ordering::Relaxed))
            .field("head", &self.head.load(Ordering::Relaxed))
            .finish()
    }
}

impl<T> Log<T> {
    /// Creates a log that uses about `bytes` bytes of entries (rounded down to a power-of-two
    /// number of entries, at least 2).
    pub fn new(bytes: usize) -> Self {
        let entries = (bytes / core::mem::size_of::<Entry<T>>()).max(2);
        Self::with_capacity(1 << (usize::BITS - 1 - entries.leading_zeros()))
    }

    /// Creates a log with exactly `entries` entries.
    ///
    /// # Panics
    /// If `entries` is not a power of two or is smaller than 2.
    pub fn with_capacity(entries: usize) -> Self {
        assert!(
            entries >= 2 && entries.is_power_of_two(),
            "log capacity must be a power of two >= 2"
        );
        Self {
            entries: (0..entries)
                .map(|_| Entry {
                    seq: AtomicUsize::new(0),
                    replica: UnsafeCell::new(0),
                    op: UnsafeCell::new(None),
                })
                .collect(),
            mask: entries - 1,
            tail: CachePadded(AtomicUsize::new(0)),
            ctail: CachePadded(AtomicUsize::new(0)),
            head: CachePadded(AtomicUsize::new(0)),
            ltails: core::array::from_fn(|_| CachePadded(AtomicUsize::new(0))),
            nreplicas: AtomicUsize::new(0),
            sealed: AtomicBool::new(false),
            consumers: SpinLock::new(Vec::new()),
            lag_callback: None,
            id: 0,
        }
    }

    /// Registers the callback used when a lagging replica blocks appends (§4.5).
    pub fn with_lag_callback(mut self, callback: LagCallback) -> Self {
        self.lag_callback = Some(callback);
        self
    }

    /// Sets the identifier passed to the lag callback (default 0; CNR numbers its logs).
    pub fn with_id(mut self, id: usize) -> Self {
        self.id = id;
        self
    }

    /// The identifier passed to the lag callback.
    pub fn id(&self) -> usize {
        self.id
    }

    /// Number of entries in the circular buffer.
    pub fn capacity(&self) -> usize {
        self.entries.len()
    }

    /// Number of operations ever appended (the logical tail).
    pub fn tail(&self) -> usize {
        self.tail.load(Ordering::Acquire)
    }

    /// Registers a replica; returns its index in this log, or `None` if the log is full of
    /// replicas or has already been appended to.
    pub(crate) fn register(&self, consumer: Weak<dyn LogConsumer>) -> Option<usize> {
        let mut consumers = self.consumers.lock();
        if consumers.len() >= MAX_REPLICAS_PER_LOG || self.sealed.load(Ordering::Acquire) {
            return None;
        }
        consumers.push(consumer);
        let idx = consumers.len() - 1;
        self.nreplicas.store(idx + 1, Ordering::Release);
        Some(idx)
    }

    /// Number of registered replicas.
    pub(crate) fn replicas(&self) -> usize {
        self.nreplicas.load(Ordering::Acquire)
    }

    /// The completed tail: every operation below it has been applied (or, with
    /// [`Publish::Before`], is being applied) by some replica, and every operation whose
    /// effect any thread could have seen lies below it.
    #[inline(always)]
    pub(crate) fn ctail(&self) -> usize {
        self.ctail.load(Ordering::Acquire)
    }

    /// The local tail of replica `rid`.
    #[inline(always)]
    pub(crate) fn ltail(&self, rid: usize) -> usize {
        self.ltails[rid].load(Ordering::Acquire)
    }

    /// Whether replica `rid` has applied every appended operation.
    #[inline(always)]
    pub(crate) fn is_idle(&self, rid: usize) -> bool {
        self.ltails[rid].load(Ordering::Relaxed) == self.tail.load(Ordering::Relaxed)
    }

    fn min_ltail(&self) -> usize {
        let n = self.replicas();
        (0..n)
            .map(|r| self.ltails[r].load(Ordering::Acquire))
            .min()
            .unwrap_or(0)
    }

    /// Closes registration, so that the set of replicas is final; called by every append.
    #[inline(always)]
    fn seal(&self) {
        if !self.sealed.load(Ordering::Acquire) {
            let _consumers = self.consumers.lock();
            self.sealed.store(true, Ordering::Release);
        }
    }

    /// Appends `n` operations for replica `rid` with one reservation and returns the logical
    /// index of the first. `fill(k)` produces the `k`-th operation.
    ///
    /// `per_replica_exclusive` states that the caller excludes every other append of replica
    /// `rid` (it holds the replica's only combiner lock, as NR combiners do); if the log also
    /// has a single replica, the reservation is then a plain store instead of a CAS.
    ///
    /// While the log is full, calls `help` (which must apply outstanding entries to replica
    /// `rid` without blocking), advances lagging replicas where their combiner lock is free,
    /// and otherwise invokes the lag callback.
    pub(crate) fn append(
        &self,
        rid: usize,
        n: usize,
        per_replica_exclusive: bool,
        mut fill: impl FnMut(usize) -> T,
        help: &mut dyn FnMut(),
    ) -> usize {
        debug_assert!(n <= self.capacity());
        self.seal();
        // Sealed: no replica can register any more, so a single replica stays alone.
        let exclusive = per_replica_exclusive && self.replicas() == 1;
        let cap = self.capacity();
        let mut backoff = Backoff::new();
        let mut waited = 0usize;
        loop {
            let tail = self.tail.load(Ordering::Relaxed);
            let head = self.head.load(Ordering::Acquire);
            if tail + n <= head + cap {
                let reserved = if exclusive {
                    self.tail.store(tail + n, Ordering::Relaxed);
                    true
                } else {
                    self.tail
                        .compare_exchange_weak(tail, tail + n, Ordering::Relaxed, Ordering::Relaxed)
                        .is_ok()
                };
                if reserved {
                    for k in 0..n {
                        self.write(tail + k, rid, fill(k));
                    }
                    return tail;
                }
                continue;
            }
            let min = self.min_ltail();
            if min > head {
                self.head.fetch_max(min, Ordering::AcqRel);
                continue;
            }
            help();
            self.advance_laggards(rid, tail + n - cap, waited);
            waited += 1;
            backoff.spin();
        }
    }

    /// Asks every replica other than `rid` whose local tail is below `needed` to catch up.
    fn advance_laggards(&self, rid: usize, needed: usize, waited: usize) {
        let consumers = self.consumers.lock();
        for (r, consumer) in consumers.iter().enumerate() {
            if r == rid || self.ltails[r].load(Ordering::Acquire) >= needed {
                continue;
            }
            let advanced = consumer.upgrade().is_some_and(|c| c.try_advance(self.id));
            if !advanced && waited % LAG_CALLBACK_INTERVAL == 0 {
                if let Some(callback) = self.lag_callback {
                    callback(self.id, r);
                }
            }
        }
    }

    /// Writes operation `op` of replica `rid` at logical index `idx`, which this thread has
    /// reserved, and publishes it.
    fn write(&self, idx: usize, rid: usize, op: T) {
        let e = &self.entries[idx & self.mask];
        // SAFETY: `idx` was reserved by this thread, so no other writer touches the slot, and
        // the reservation only succeeded once every replica's local tail passed
        // `idx - capacity` (the previous occupant), so no reader is still looking at it: readers
        // only access a slot after seeing `seq == idx + 1`, which is published below.
        e.replica.with_mut(|p| unsafe { *p = rid });
        // SAFETY: as above.
        e.op.with_mut(|p| unsafe { *p = Some(op) });
        e.seq.store(idx + 1, Ordering::Release);
    }

    /// Applies entries to replica `rid`, from its local tail up to the tail observed now.
    ///
    /// `f(op, issuer)` is called for each entry in order; if it returns false the entry is
    /// not consumed and the walk stops there. Returns true if the walk reached the tail. The
    /// caller must hold the right to apply the log for `rid` (its combiner lock). `publish`
    /// says when the completed tail moves past the walked entries.
    pub(crate) fn exec(
        &self,
        rid: usize,
        publish: Publish,
        mut f: impl FnMut(&T, usize) -> bool,
    ) -> bool {
        let start = self.ltails[rid].load(Ordering::Relaxed);
        let tail = self.tail.load(Ordering::Acquire);
        if start == tail {
            return true;
        }
        if publish == Publish::Before {
            self.advance_ctail(tail);
        }
        let mut i = start;
        while i < tail {
            let e = &self.entries[i & self.mask];
            let mut backoff = Backoff::new();
            while e.seq.load(Ordering::Acquire) != i + 1 {
                backoff.spin();
            }
            // SAFETY: `seq == i + 1` was published with Release after the entry was written,
            // and the slot cannot be rewritten before this replica's local tail passes `i`,
            // which happens only below, after the last access.
            let issuer = e.replica.with(|p| unsafe { *p });
            // SAFETY: as above; the operation is `Some` once published.
            let keep_going = e.op.with(|p| match unsafe { &*p } {
                Some(op) => f(op, issuer),
                None => unreachable!("published log entry without an operation"),
            });
            if !keep_going {
                break;
            }
            i += 1;
        }
        if i != start {
            self.ltails[rid].store(i, Ordering::Release);
            if self.replicas() == 1 {
                // The only replica's local tail is the completed tail; only the holder of its
                // combiner lock writes it, so a plain store keeps it monotonic. A read, which
                // waits only for its own replica's local tail, never waits on it.
                self.ctail.store(i, Ordering::Release);
            } else if publish == Publish::After {
                self.advance_ctail(i);
            }
        }
        i == tail
    }

    /// Moves the completed tail of a log with several replicas up to `upto`.
    fn advance_ctail(&self, upto: usize) {
        if self.replicas() > 1 && self.ctail.load(Ordering::Relaxed) < upto {
            self.ctail.fetch_max(upto, Ordering::AcqRel);
        }
    }
}
