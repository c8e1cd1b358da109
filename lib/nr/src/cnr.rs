//! Concurrent node replication (CNR, §3): several logs, concurrent replicas, one combiner per
//! log and replica, and multi-log scan operations (§3.2).
//!
//! A [`LogMapper`] maps every operation to the set of logs it conflicts with. Operations mapped
//! to one log are ordered only with the other operations of that log and are combined by that
//! log's combiner. Operations mapped to several logs are *scans*: the issuing thread takes the
//! scan lock, appends the operation to each of its logs, releases the lock, and then waits until
//! its replica has applied every one of those logs exactly up to the scan's entries (combiners
//! of those logs stop there). At that point the replica reflects an atomic snapshot of the
//! logs, and the issuing thread executes the scan. Every other replica does the same with a
//! scan-update: the last of its combiners to reach the scan executes it; a scan-read is only a
//! barrier there. Combiners stopped at a scan keep helping the replica's other logs, so a scan
//! completes even if no thread is active on some log.

use alloc::boxed::Box;
use alloc::sync::{Arc, Weak};
use alloc::vec::Vec;
use core::fmt;

use crate::context::{Slot, Slots};
use crate::log::{LagCallback, Log, LogConsumer, Publish};
use crate::replica::{ReplicaToken, DEFAULT_MAX_THREADS};
use crate::sync::{
    next_uid, AtomicBool, AtomicUsize, Backoff, CachePadded, Ordering, SpinLock, UnsafeCell,
};

/// Most logs a CNR structure can use (the size of a [`LogSet`]).
pub const MAX_LOGS: usize = 64;

/// Combiner-lock value meaning "free".
const FREE: usize = 0;
/// Combiner-lock value of a thread helping without being the log's combiner.
const FOREIGN: usize = usize::MAX;

/// A set of log indices (below [`MAX_LOGS`]), filled by [`LogMapper::hash`].
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct LogSet {
    bits: u64,
}

impl LogSet {
    /// The empty set.
    pub const fn new() -> Self {
        Self { bits: 0 }
    }

    /// Removes every log.
    pub fn clear(&mut self) {
        self.bits = 0;
    }

    /// Adds log `log`.
    ///
    /// # Panics
    /// If `log >= MAX_LOGS`.
    pub fn push(&mut self, log: usize) {
        assert!(log < MAX_LOGS, "log index {log} out of range");
        self.bits |= 1 << log;
    }

    /// Adds logs `0..nlogs` (an operation that conflicts with everything).
    pub fn push_all(&mut self, nlogs: usize) {
        for log in 0..nlogs {
            self.push(log);
        }
    }

    /// Whether `log` is in the set.
    pub fn contains(&self, log: usize) -> bool {
        log < MAX_LOGS && self.bits & (1 << log) != 0
    }

    /// Number of logs in the set.
    pub fn len(&self) -> usize {
        self.bits.count_ones() as usize
    }

    /// Whether the set is empty.
    pub fn is_empty(&self) -> bool {
        self.bits == 0
    }

    /// The logs in increasing order.
    pub fn iter(&self) -> impl Iterator<Item = usize> {
        let bits = self.bits;
        (0..MAX_LOGS).filter(move |log| bits & (1 << log) != 0)
    }

    /// Whether every log in the set is below `nlogs`.
    fn within(&self, nlogs: usize) -> bool {
        nlogs >= MAX_LOGS || self.bits >> nlogs == 0
    }

    fn first(&self) -> usize {
        self.bits.trailing_zeros() as usize
    }
}

/// Maps an operation to the logs of the operations it conflicts with (Listing 3 of the paper).
///
/// Conflicting operations must share at least one log; an operation mapped to more than one
/// log is executed as a scan. Every operation must map to at least one log below `nlogs`.
pub trait LogMapper {
    /// Fills `logs` with the logs this operation belongs to, for a structure with `nlogs` logs.
    fn hash(&self, nlogs: usize, logs: &mut LogSet);
}

/// A concurrent structure that CNR can replicate.
///
/// Unlike [`crate::Dispatch`], updates take `&self`: updates on different logs run
/// concurrently on one replica. Both kinds of operation must be deterministic.
pub trait Dispatch {
    /// Operations that do not modify the structure.
    type ReadOp: LogMapper;
    /// Operations that modify the structure; stored in the logs and cloned for each replica.
    type UpdateOp: LogMapper + Clone;
    /// The response of both kinds of operation.
    type Resp;

    /// Executes a read operation.
    fn dispatch(&self, op: Self::ReadOp) -> Self::Resp;

    /// Executes an update operation.
    fn dispatch_mut(&self, op: Self::UpdateOp) -> Self::Resp;
}

/// Per-replica progress of one scan: how many of the scan's logs reached it, and whether it
/// has been executed.
struct ScanBarrier {
    logs: usize,
    arrived: Box<[AtomicUsize]>,
    done: Box<[AtomicBool]>,
}

/// What a CNR log entry holds.
enum Entry<U> {
    /// An operation of this log alone.
    Update(U),
    /// A scan-update; one copy in each of its logs.
    ScanUpdate(U, Arc<ScanBarrier>),
    /// A scan-read, executed only by the issuing replica; a barrier everywhere.
    ScanRead(Arc<ScanBarrier>),
}

/// The logs of a CNR structure and the scan lock that orders scans across them.
///
/// Create with [`Logs::new`], wrap in an `Arc`, and create every replica with it before the
/// first operation.
pub struct Logs<U> {
    logs: Box<[Log<Entry<U>>]>,
    scan_lock: SpinLock<()>,
}

impl<U> fmt::Debug for Logs<U> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.logs.iter()).finish()
    }
}

impl<U> Logs<U> {
    /// Creates `nlogs` logs (numbered `0..nlogs`, the ids given to the lag callback) of about
    /// `bytes_per_log` bytes each.
    ///
    /// # Panics
    /// If `nlogs` is 0 or larger than [`MAX_LOGS`].
    pub fn new(nlogs: usize, bytes_per_log: usize) -> Self {
        Self::from_logs(nlogs, |_| Log::new(bytes_per_log))
    }

    /// Creates `nlogs` logs of exactly `entries` entries each (a power of two).
    pub fn with_capacity(nlogs: usize, entries: usize) -> Self {
        Self::from_logs(nlogs, |_| Log::with_capacity(entries))
    }

    fn from_logs(nlogs: usize, make: impl Fn(usize) -> Log<Entry<U>>) -> Self {
        assert!(
            (1..=MAX_LOGS).contains(&nlogs),
            "CNR needs 1..={MAX_LOGS} logs"
        );
        Self {
            logs: (0..nlogs).map(|i| make(i).with_id(i)).collect(),
            scan_lock: SpinLock::new(()),
        }
    }

    /// Registers the lag callback (§4.5) on every log.
    pub fn with_lag_callback(self, callback: LagCallback) -> Self {
        Self {
            logs: self
                .logs
                .into_vec()
                .into_iter()
                .map(|l| l.with_lag_callback(callback))
                .collect(),
            scan_lock: self.scan_lock,
        }
    }

    /// Number of logs.
    pub fn len(&self) -> usize {
        self.logs.len()
    }

    /// Always false: there is at least one log.
    pub fn is_empty(&self) -> bool {
        self.logs.is_empty()
    }

    /// Number of entries of each log.
    pub fn capacity(&self) -> usize {
        self.logs[0].capacity()
    }
}

/// State of one log's combiner at one replica.
struct Combiner {
    lock: AtomicUsize,
    /// Slot indices of the current batch, in log order.
    batch: UnsafeCell<Vec<usize>>,
    /// Whether this log has been counted as arrived at the scan its local tail points at.
    arrived: UnsafeCell<bool>,
}

/// A replica of a concurrent structure `D`, kept consistent with the others through [`Logs`].
///
/// Like [`crate::Replica`], the constructors allocate with `Arc::new` on the calling core.
pub struct Replica<D: Dispatch> {
    uid: usize,
    rid: usize,
    logs: Arc<Logs<D::UpdateOp>>,
    data: D,
    combiners: Box<[CachePadded<Combiner>]>,
    registered: CachePadded<AtomicUsize>,
    slots: Slots<D::UpdateOp, D::Resp>,
}

// SAFETY: `D` is used concurrently through `&self` (`D: Sync`); operations are shared through
// the logs (`UpdateOp: Send + Sync`); responses move to the issuing thread (`Resp: Send`). The
// cells in `Combiner` are only accessed by the holder of that combiner's lock.
unsafe impl<D> Sync for Replica<D>
where
    D: Dispatch + Send + Sync,
    D::UpdateOp: Send + Sync,
    D::Resp: Send,
{
}
// SAFETY: as above.
unsafe impl<D> Send for Replica<D>
where
    D: Dispatch + Send + Sync,
    D::UpdateOp: Send + Sync,
    D::Resp: Send,
{
}

impl<D: Dispatch> fmt::Debug for Replica<D> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("cnr::Replica")
            .field("id", &self.rid)
            .field("logs", &self.combiners.len())
            .field("registered", &self.registered.load(Ordering::Relaxed))
            .finish()
    }
}

/// A scan's operation, executed by the issuing thread.
enum ScanOp<R, U> {
    Read(R),
    Update(U),
}

impl<D> Replica<D>
where
    D: Dispatch + Default + Send + Sync + 'static,
    D::UpdateOp: Send + Sync,
    D::Resp: Send,
{
    /// Creates a replica of `D::default()` for up to [`DEFAULT_MAX_THREADS`] threads.
    pub fn new(logs: &Arc<Logs<D::UpdateOp>>) -> Arc<Self> {
        Self::with_data(logs, D::default(), DEFAULT_MAX_THREADS)
    }
}

impl<D> Replica<D>
where
    D: Dispatch + Send + Sync + 'static,
    D::UpdateOp: Send + Sync,
    D::Resp: Send,
{
    /// Creates a replica holding `data` (equal to every other replica's initial state) for up
    /// to `max_threads` threads.
    ///
    /// # Panics
    /// If the logs already have [`crate::MAX_REPLICAS_PER_LOG`] replicas or were appended to,
    /// if `max_threads` is 0, or if a log has fewer entries than `max_threads`.
    pub fn with_data(logs: &Arc<Logs<D::UpdateOp>>, data: D, max_threads: usize) -> Arc<Self> {
        assert!(max_threads > 0, "a replica needs at least one thread");
        assert!(
            logs.capacity() >= max_threads,
            "log too small for one batch of {max_threads} operations"
        );
        Arc::new_cyclic(|weak: &Weak<Self>| {
            let mut rid = None;
            for log in logs.logs.iter() {
                let consumer: Weak<dyn LogConsumer> = weak.clone();
                let r = log
                    .register(consumer)
                    .expect("logs have too many replicas or are already in use");
                assert!(
                    rid.is_none_or(|rid| rid == r),
                    "replicas must be created with all logs"
                );
                rid = Some(r);
            }
            Self {
                uid: next_uid(),
                rid: rid.expect("at least one log"),
                logs: logs.clone(),
                data,
                combiners: (0..logs.len())
                    .map(|_| {
                        CachePadded(Combiner {
                            lock: AtomicUsize::new(FREE),
                            batch: UnsafeCell::new(Vec::with_capacity(max_threads)),
                            arrived: UnsafeCell::new(false),
                        })
                    })
                    .collect(),
                registered: CachePadded(AtomicUsize::new(0)),
                slots: (0..max_threads).map(|_| CachePadded(Slot::new())).collect(),
            }
        })
    }

    /// This replica's index (the `replica_id` given to the lag callback).
    pub fn id(&self) -> usize {
        self.rid
    }

    /// Registers the calling thread; returns `None` once `max_threads` threads registered.
    pub fn register(&self) -> Option<ReplicaToken> {
        let n = self
            .registered
            .fetch_update(Ordering::SeqCst, Ordering::Relaxed, |n| {
                (n < self.slots.len()).then_some(n + 1)
            })
            .ok()?;
        Some(ReplicaToken::new(self.uid, n))
    }

    fn mapping(&self, op: &impl LogMapper) -> LogSet {
        let mut set = LogSet::new();
        op.hash(self.logs.len(), &mut set);
        assert!(
            !set.is_empty() && set.within(self.logs.len()),
            "LogMapper must map every operation to at least one existing log"
        );
        set
    }

    /// Executes a read. A read mapped to one log waits until this replica has applied that
    /// log up to its completed tail (combining if nobody is) and runs concurrently with
    /// everything else; a read mapped to several logs is a scan-read.
    pub fn execute(&self, op: D::ReadOp, token: &ReplicaToken) -> D::Resp {
        let tid = token.check(self.uid);
        let set = self.mapping(&op);
        if set.len() > 1 {
            return self.scan(ScanOp::Read(op), set);
        }
        let j = set.first();
        let log = &self.logs.logs[j];
        let ctail = log.ctail();
        let mut backoff = Backoff::new();
        while log.ltail(self.rid) < ctail {
            self.try_combine(j, tid);
            backoff.spin();
        }
        self.data.dispatch(op)
    }

    /// Executes an update. An update mapped to one log is flat-combined by that log's
    /// combiner on this replica; an update mapped to several logs is a scan-update.
    pub fn execute_mut(&self, op: D::UpdateOp, token: &ReplicaToken) -> D::Resp {
        let tid = token.check(self.uid);
        let set = self.mapping(&op);
        if set.len() > 1 {
            return self.scan(ScanOp::Update(op), set);
        }
        let j = set.first();
        let slot = &self.slots[tid];
        slot.post(op, j);
        let mut backoff = Backoff::new();
        loop {
            self.try_combine(j, tid);
            if let Some(resp) = slot.try_take_resp() {
                return resp;
            }
            backoff.spin();
        }
    }

    /// Brings this replica up to date with every log.
    pub fn sync(&self, token: &ReplicaToken) {
        let tid = token.check(self.uid);
        for (j, log) in self.logs.logs.iter().enumerate() {
            let tail = log.tail();
            let mut backoff = Backoff::new();
            while log.ltail(self.rid) < tail {
                self.try_combine(j, tid);
                backoff.spin();
            }
        }
    }

    /// Runs `f` on the local structure after bringing it up to date (for tests).
    pub fn verify<R>(&self, token: &ReplicaToken, f: impl FnOnce(&D) -> R) -> R {
        self.sync(token);
        f(&self.data)
    }

    /// Becomes the combiner of log `j` unless another thread is, and combines once.
    fn try_combine(&self, j: usize, tid: usize) {
        let lock = &self.combiners[j].lock;
        if lock.load(Ordering::Relaxed) != FREE
            || lock
                .compare_exchange(FREE, tid + 1, Ordering::Acquire, Ordering::Relaxed)
                .is_err()
        {
            return;
        }
        self.combine(j);
        lock.store(FREE, Ordering::Release);
    }

    /// One round of flat combining on log `j`. The caller holds combiner lock `j`.
    fn combine(&self, j: usize) {
        let log = &self.logs.logs[j];
        self.combiners[j].batch.with_mut(|batch| {
            // SAFETY: the batch is only accessed by the holder of combiner lock `j`, which we
            // are; the reference does not outlive this closure.
            let batch = unsafe { &mut *batch };
            batch.clear();
            let registered = self.registered.load(Ordering::Acquire);
            for (i, slot) in self.slots[..registered].iter().enumerate() {
                if slot.claim(j) {
                    batch.push(i);
                }
            }
            if batch.is_empty() {
                // Nothing to wait for: if the log is stopped at a scan, push the scan's other
                // logs forward instead of spinning.
                if !self.apply(j, &[], &mut 0) {
                    self.help(Some(j));
                }
                return;
            }
            // Not exclusive: scans append to this log without its combiner lock.
            log.append(
                self.rid,
                batch.len(),
                false,
                // SAFETY: we claimed each batched slot; each is taken exactly once.
                |k| Entry::Update(unsafe { self.slots[batch[k]].take_op() }),
                &mut || {
                    self.apply(j, &[], &mut 0);
                    self.help(Some(j));
                },
            );
            let mut next = 0;
            let mut backoff = Backoff::new();
            while !self.apply(j, batch, &mut next) {
                self.help(Some(j));
                backoff.spin();
            }
            for &i in batch.iter() {
                self.slots[i].complete();
            }
        });
    }

    /// Applies log `j` to this replica until its tail or an unfinished scan; returns whether
    /// the tail was reached. Responses to this replica's updates go to `batch[*next..]`. The
    /// caller holds combiner lock `j`.
    fn apply(&self, j: usize, batch: &[usize], next: &mut usize) -> bool {
        let rid = self.rid;
        self.logs.logs[j].exec(rid, Publish::Before, |entry, issuer| match entry {
            Entry::Update(op) => {
                let resp = self.data.dispatch_mut(op.clone());
                if issuer == rid {
                    // Entries of this replica past its local tail are exactly the current
                    // batch: every earlier combiner of this log finished its batch first.
                    // SAFETY: we hold combiner lock `j` and claimed the slot `batch[*next]`.
                    unsafe { self.slots[batch[*next]].set_resp(resp) };
                    *next += 1;
                }
                true
            }
            Entry::ScanUpdate(op, barrier) => self.arrive(j, barrier, issuer, Some(op)),
            Entry::ScanRead(barrier) => self.arrive(j, barrier, issuer, None),
        })
    }

    /// Log `j` reached a scan entry: count the arrival once; the last arrival at a replica
    /// other than the issuer's executes the scan-update there. Returns whether the scan is done
    /// at this replica (so log `j` may move past it). The caller holds combiner lock `j`.
    fn arrive(
        &self,
        j: usize,
        barrier: &ScanBarrier,
        issuer: usize,
        op: Option<&D::UpdateOp>,
    ) -> bool {
        let rid = self.rid;
        self.combiners[j].arrived.with_mut(|arrived| {
            // SAFETY: only the holder of combiner lock `j` accesses `arrived`.
            let arrived = unsafe { &mut *arrived };
            if !*arrived {
                *arrived = true;
                let count = barrier.arrived[rid].fetch_add(1, Ordering::AcqRel) + 1;
                if count == barrier.logs && issuer != rid {
                    if let Some(op) = op {
                        self.data.dispatch_mut(op.clone());
                    }
                    barrier.done[rid].store(true, Ordering::Release);
                }
            }
            let done = barrier.done[rid].load(Ordering::Acquire);
            if done {
                *arrived = false;
            }
            done
        })
    }

    /// Applies, without blocking, every log (except `skip`) whose combiner lock is free.
    /// Returns whether every such log's lock was obtained.
    fn help(&self, skip: Option<usize>) -> bool {
        let mut all = true;
        for (j, combiner) in self.combiners.iter().enumerate() {
            if Some(j) == skip {
                continue;
            }
            if combiner
                .lock
                .compare_exchange(FREE, FOREIGN, Ordering::Acquire, Ordering::Relaxed)
                .is_ok()
            {
                self.apply(j, &[], &mut 0);
                combiner.lock.store(FREE, Ordering::Release);
            } else {
                all = false;
            }
        }
        all
    }

    /// Executes a scan over the logs in `set` (§3.2).
    fn scan(&self, op: ScanOp<D::ReadOp, D::UpdateOp>, set: LogSet) -> D::Resp {
        let replicas = self.logs.logs[0].replicas();
        let barrier = Arc::new(ScanBarrier {
            logs: set.len(),
            arrived: (0..replicas).map(|_| AtomicUsize::new(0)).collect(),
            done: (0..replicas).map(|_| AtomicBool::new(false)).collect(),
        });
        let mut positions = [0usize; MAX_LOGS];
        {
            let _scan = self.logs.scan_lock.lock();
            for j in set.iter() {
                let entry = match &op {
                    ScanOp::Read(_) => Entry::ScanRead(barrier.clone()),
                    ScanOp::Update(u) => Entry::ScanUpdate(u.clone(), barrier.clone()),
                };
                let mut entry = Some(entry);
                positions[j] = self.logs.logs[j].append(
                    self.rid,
                    1,
                    false,
                    |_| entry.take().expect("one entry"),
                    &mut || {
                        self.help(None);
                    },
                );
            }
        }
        let mut backoff = Backoff::new();
        while barrier.arrived[self.rid].load(Ordering::Acquire) < set.len() {
            self.help(None);
            backoff.spin();
        }
        // Every log of the scan has stopped at the scan's entry on this replica: the replica is
        // exactly at the snapshot.
        let resp = match op {
            ScanOp::Read(op) => self.data.dispatch(op),
            ScanOp::Update(op) => self.data.dispatch_mut(op),
        };
        barrier.done[self.rid].store(true, Ordering::Release);
        // Return only once this replica has moved past the scan's entry in every one of its
        // logs: that publishes the entry in each log's completed tail, so a read that starts
        // after this scan returns, on any replica, waits for it (linearizability).
        let mut backoff = Backoff::new();
        while set
            .iter()
            .any(|j| self.logs.logs[j].ltail(self.rid) <= positions[j])
        {
            self.help(None);
            backoff.spin();
        }
        resp
    }
}

impl<D> LogConsumer for Replica<D>
where
    D: Dispatch + Send + Sync + 'static,
    D::UpdateOp: Send + Sync,
    D::Resp: Send,
{
    fn try_advance(&self, log_id: usize) -> bool {
        let lock = &self.combiners[log_id].lock;
        if lock
            .compare_exchange(FREE, FOREIGN, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            return false;
        }
        self.apply(log_id, &[], &mut 0);
        lock.store(FREE, Ordering::Release);
        self.help(Some(log_id));
        true
    }
}
