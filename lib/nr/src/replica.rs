//! NR replicas: one copy of a sequential structure, flat combining and reads (§2.1).

use alloc::boxed::Box;
use alloc::sync::{Arc, Weak};
use alloc::vec::Vec;
use core::fmt;
use core::marker::PhantomData;

use crate::context::Slot;
use crate::log::{Log, LogConsumer, Publish};
use crate::rwlock::{ReaderFlag, RwLock};
use crate::sync::{next_uid, AtomicUsize, Backoff, CachePadded, Ordering, UnsafeCell};
use crate::Dispatch;

/// Default bound on the number of threads that can register with one replica.
pub const DEFAULT_MAX_THREADS: usize = 64;

/// How often a thread waiting for its response polls its own slot before trying to become the
/// combiner itself. Waiting patiently keeps the combiner role (and with it the replica's cache
/// lines) on one core while it keeps combining; trying sooner only matters when the combiner
/// collected its batch just before we posted and then stopped issuing updates.
const POLLS_PER_COMBINE: usize = 256;

/// Combiner-lock value meaning "free".
const FREE: usize = 0;
/// Combiner-lock value used by threads that are not registered (lagging-replica advancement).
const FOREIGN: usize = usize::MAX;

/// A registered thread's operation slot and reader flag, each on its own cache line.
#[repr(align(128))]
struct ThreadState<Op, Resp> {
    slot: Slot<Op, Resp>,
    reader: ReaderFlag,
}

/// Identifies a registered thread to one replica (returned by `register`).
///
/// A token is bound to the replica that issued it (using it with another replica panics) and is
/// `Send` but not `Sync` or `Clone`: one token is one thread's operation slot, so it can move
/// to another thread but never be used by two threads at once.
pub struct ReplicaToken {
    replica: usize,
    tid: usize,
    _not_sync: PhantomData<core::cell::Cell<()>>,
}

impl ReplicaToken {
    pub(crate) fn new(replica: usize, tid: usize) -> Self {
        Self {
            replica,
            tid,
            _not_sync: PhantomData,
        }
    }

    /// The thread index within its replica (0-based, below the replica's thread bound).
    pub fn tid(&self) -> usize {
        self.tid
    }

    pub(crate) fn check(&self, replica: usize) -> usize {
        assert_eq!(
            self.replica, replica,
            "ReplicaToken used with a replica that did not issue it"
        );
        self.tid
    }
}

impl fmt::Debug for ReplicaToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ReplicaToken")
            .field("tid", &self.tid)
            .finish()
    }
}

/// A replica of a sequential structure `D`, kept consistent with the others through a shared
/// [`Log`].
///
/// Create one per NUMA node with [`Replica::new`] or [`Replica::with_data`]. Both allocate the
/// replica (structure, reader flags, per-thread slots) with `Arc::new` on the calling core, so
/// the kernel calls them on a core of the replica's node to get node-local memory.
pub struct Replica<D: Dispatch> {
    uid: usize,
    rid: usize,
    log: Arc<Log<D::UpdateOp>>,
    combiner: CachePadded<AtomicUsize>,
    registered: CachePadded<AtomicUsize>,
    data: RwLock<D>,
    threads: Box<[ThreadState<D::UpdateOp, D::Resp>]>,
    /// Slot indices of the current batch, in log order; only touched by the combiner.
    batch: UnsafeCell<Vec<usize>>,
}

// SAFETY: the structure is read concurrently (`D: Sync`) and mutated by whichever thread is the
// combiner (`D: Send`); operations are shared through the log and cloned on other threads
// (`UpdateOp: Send + Sync`); responses move to the issuing thread (`Resp: Send`). `batch` is
// only accessed by the holder of the combiner lock.
unsafe impl<D> Sync for Replica<D>
where
    D: Dispatch + Send + Sync,
    D::UpdateOp: Send + Sync,
    D::Resp: Send,
{
}
// SAFETY: as above; the replica owns its structure and pending operations.
unsafe impl<D> Send for Replica<D>
where
    D: Dispatch + Send + Sync,
    D::UpdateOp: Send + Sync,
    D::Resp: Send,
{
}

impl<D> fmt::Debug for Replica<D>
where
    D: Dispatch,
{
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Replica")
            .field("id", &self.rid)
            .field("registered", &self.registered.load(Ordering::Relaxed))
            .field("max_threads", &self.threads.len())
            .finish()
    }
}

impl<D> Replica<D>
where
    D: Dispatch + Default + Send + Sync + 'static,
    D::UpdateOp: Send + Sync,
    D::Resp: Send,
{
    /// Creates a replica of `D::default()` that uses `log`, for up to
    /// [`DEFAULT_MAX_THREADS`] threads.
    ///
    /// # Panics
    /// See [`Replica::with_data`].
    pub fn new(log: &Arc<Log<D::UpdateOp>>) -> Arc<Self> {
        Self::with_data(log, D::default(), DEFAULT_MAX_THREADS)
    }
}

impl<D> Replica<D>
where
    D: Dispatch + Send + Sync + 'static,
    D::UpdateOp: Send + Sync,
    D::Resp: Send,
{
    /// Creates a replica holding `data` (which must equal the initial state of every other
    /// replica of `log`), for up to `max_threads` registered threads.
    ///
    /// # Panics
    /// If `log` already has [`crate::MAX_REPLICAS_PER_LOG`] replicas or has already been
    /// appended to, if `max_threads` is 0, or if the log has fewer entries than `max_threads`
    /// (one combined batch must fit).
    pub fn with_data(log: &Arc<Log<D::UpdateOp>>, data: D, max_threads: usize) -> Arc<Self> {
        assert!(max_threads > 0, "a replica needs at least one thread");
        assert!(
            log.capacity() >= max_threads,
            "log too small for one batch of {max_threads} operations"
        );
        Arc::new_cyclic(|weak: &Weak<Self>| {
            let consumer: Weak<dyn LogConsumer> = weak.clone();
            let rid = log
                .register(consumer)
                .expect("log has too many replicas or is already in use");
            Self {
                uid: next_uid(),
                rid,
                log: log.clone(),
                combiner: CachePadded(AtomicUsize::new(FREE)),
                registered: CachePadded(AtomicUsize::new(0)),
                data: RwLock::new(data),
                threads: (0..max_threads)
                    .map(|_| ThreadState {
                        slot: Slot::new(),
                        reader: ReaderFlag::new(),
                    })
                    .collect(),
                batch: UnsafeCell::new(Vec::with_capacity(max_threads)),
            }
        })
    }

    /// This replica's index in its log (the `replica_id` given to the lag callback).
    pub fn id(&self) -> usize {
        self.rid
    }

    /// Registers the calling thread; returns `None` once `max_threads` threads registered.
    ///
    /// Registration briefly takes the combiner lock, so that the number of registered threads
    /// never changes under a combiner (see `apply`).
    pub fn register(&self) -> Option<ReplicaToken> {
        let mut backoff = Backoff::new();
        while self
            .combiner
            .compare_exchange(FREE, FOREIGN, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            backoff.spin();
        }
        let n = self.registered.load(Ordering::Relaxed);
        let token = (n < self.threads.len()).then(|| {
            self.registered.store(n + 1, Ordering::Relaxed);
            ReplicaToken::new(self.uid, n)
        });
        self.combiner.store(FREE, Ordering::Release);
        token
    }

    /// Executes a read-only operation on the local replica.
    ///
    /// Observes the completed tail of the log, waits until this replica has applied the log up
    /// to it (becoming the combiner if there is none), then runs `op` under the replica's read
    /// lock, concurrently with other readers.
    #[inline]
    pub fn execute(&self, op: D::ReadOp, token: &ReplicaToken) -> D::Resp {
        let tid = token.check(self.uid);
        let ctail = self.log.ctail();
        if self.log.ltail(self.rid) < ctail {
            self.catch_up(ctail, tid);
        }
        self.data
            .read(&self.threads[tid].reader, |d| d.dispatch(op))
    }

    /// Combines (or waits for the combiner) until this replica has applied the log up to
    /// `ctail`. Kept out of line so that the read fast path stays small.
    #[cold]
    #[inline(never)]
    fn catch_up(&self, ctail: usize, tid: usize) {
        let mut backoff = Backoff::new();
        while self.log.ltail(self.rid) < ctail {
            self.try_combine(tid);
            backoff.spin();
        }
    }

    /// Executes an update through the log and returns its response.
    ///
    /// Posts `op` in the thread's slot; the combiner of this replica (this thread, if the
    /// combiner lock is free) appends all posted operations to the log with one reservation,
    /// applies the log to the replica and hands back every response. The only registered
    /// thread of a replica skips the slot and appends its operation directly.
    #[inline]
    pub fn execute_mut(&self, op: D::UpdateOp, token: &ReplicaToken) -> D::Resp {
        let tid = token.check(self.uid);
        let slot = &self.threads[tid].slot;
        if self.try_lock(tid) {
            // Stable while we hold the combiner lock (`register` takes it).
            let resp = if self.registered.load(Ordering::Relaxed) == 1 {
                // We are the replica's only thread: nobody else can have posted, so append
                // and apply our operation directly, without going through the slot.
                self.execute_alone(op, tid)
            } else {
                slot.post(op, 0);
                self.combine(tid);
                slot.try_take_resp()
                    .expect("the combiner answers its own operation")
            };
            self.combiner.store(FREE, Ordering::Release);
            return resp;
        }
        slot.post(op, 0);
        self.wait_for_response(slot, tid)
    }

    /// Appends and applies one operation of thread `tid`, the only registered thread, which
    /// holds the combiner lock.
    #[inline(never)]
    fn execute_alone(&self, op: D::UpdateOp, tid: usize) -> D::Resp {
        let mut op = Some(op);
        self.log.append(
            self.rid,
            1,
            true,
            |_| op.take().expect("one operation"),
            &mut || self.apply(tid, |_| unreachable!("no operation of ours is pending")),
        );
        let mut resp = None;
        self.apply(tid, |r| resp = Some(r));
        resp.expect("the log holds our operation")
    }

    /// Waits for the combiner to answer our posted operation. Spins on the thread's own slot
    /// and only looks at the (contended) combiner lock every [`POLLS_PER_COMBINE`] polls, in
    /// case the combiner collected its batch before we posted and nobody else will combine.
    #[inline(never)]
    fn wait_for_response(&self, slot: &Slot<D::UpdateOp, D::Resp>, tid: usize) -> D::Resp {
        let mut backoff = Backoff::new();
        loop {
            for _ in 0..POLLS_PER_COMBINE {
                if let Some(resp) = slot.try_take_resp() {
                    return resp;
                }
                backoff.spin();
            }
            self.try_combine(tid);
        }
    }

    /// Brings this replica up to date with the log (also combining posted operations).
    ///
    /// Idle cores call this (or the handler of the lag callback's IPI does) so that appends
    /// on other replicas do not wait for this one.
    pub fn sync(&self, token: &ReplicaToken) {
        let tid = token.check(self.uid);
        let tail = self.log.tail();
        let mut backoff = Backoff::new();
        while self.log.ltail(self.rid) < tail {
            self.try_combine(tid);
            backoff.spin();
        }
    }

    /// Runs `f` on the local structure after bringing it up to date, under the read lock
    /// (for tests and assertions).
    pub fn verify<R>(&self, token: &ReplicaToken, f: impl FnOnce(&D) -> R) -> R {
        self.sync(token);
        let tid = token.check(self.uid);
        self.data.read(&self.threads[tid].reader, f)
    }

    /// Becomes the combiner and runs one round of combining, unless another thread is the
    /// combiner.
    #[inline]
    fn try_combine(&self, tid: usize) {
        if self.try_lock(tid) {
            self.combine(tid);
            self.combiner.store(FREE, Ordering::Release);
        }
    }

    /// Takes the combiner lock for thread `tid` if it is free.
    #[inline]
    fn try_lock(&self, tid: usize) -> bool {
        self.combiner.load(Ordering::Relaxed) == FREE
            && self
                .combiner
                .compare_exchange(FREE, tid + 1, Ordering::Acquire, Ordering::Relaxed)
                .is_ok()
    }

    /// One round of flat combining by thread `tid`, which holds the combiner lock.
    #[inline(never)]
    fn combine(&self, tid: usize) {
        self.batch.with_mut(|batch| {
            // SAFETY: `batch` is only accessed by the holder of the combiner lock, which we
            // are, and the reference does not outlive this closure.
            let batch = unsafe { &mut *batch };
            batch.clear();
            let registered = self.registered.load(Ordering::Acquire);
            for (i, t) in self.threads[..registered].iter().enumerate() {
                if t.slot.is_posted(0) {
                    batch.push(i);
                }
            }
            if !batch.is_empty() {
                self.log.append(
                    self.rid,
                    batch.len(),
                    true,
                    // SAFETY: we hold the combiner lock and observed the slot POSTED; each
                    // batched slot is taken exactly once.
                    |k| unsafe { self.threads[batch[k]].slot.take_op() },
                    &mut || self.apply(tid, |_| unreachable!("the batch is not applied yet")),
                );
            }
            let mut next = 0;
            self.apply(tid, |resp| {
                // SAFETY: we hold the combiner lock and `batch[next]` is a slot whose operation
                // we took in this round; responses come in batch order.
                unsafe { self.threads[batch[next]].slot.set_resp(resp) };
                next += 1;
            });
            debug_assert_eq!(next, batch.len());
            for &i in batch.iter() {
                self.threads[i].slot.complete();
            }
        });
    }

    /// Applies the log to the structure up to the current tail, passing the responses to this
    /// replica's operations to `respond`, in log order. The caller, thread `holder`
    /// ([`FOREIGN`] for an unregistered thread), holds the combiner lock.
    #[inline]
    fn apply(&self, holder: usize, mut respond: impl FnMut(D::Resp)) {
        if self.log.is_idle(self.rid) {
            return;
        }
        // Stable while we hold the combiner lock (`register` takes it).
        let registered = self.registered.load(Ordering::Relaxed);
        let rid = self.rid;
        let run = |d: &mut D| {
            self.log.exec(rid, Publish::After, |op, issuer| {
                let resp = d.dispatch_mut(op.clone());
                if issuer == rid {
                    // Entries of this replica past its local tail are exactly the operations
                    // the lock holder appended: every earlier holder applied its own before
                    // unlocking.
                    respond(resp);
                }
                true
            });
        };
        if registered == 1 && holder == 0 {
            // SAFETY: the only registered thread is the caller, which is combining and hence
            // not reading; no other thread can register (or read) while we hold the combiner
            // lock. So no reader can exist and the writer flag is not needed.
            unsafe { self.data.with_mut_unlocked(run) };
        } else {
            let flags = self.threads[..registered].iter().map(|t| &t.reader);
            self.data.write(flags, run);
        }
    }
}

impl<D> LogConsumer for Replica<D>
where
    D: Dispatch + Send + Sync + 'static,
    D::UpdateOp: Send + Sync,
    D::Resp: Send,
{
    fn try_advance(&self, _log_id: usize) -> bool {
        if self
            .combiner
            .compare_exchange(FREE, FOREIGN, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            return false;
        }
        self.apply(FOREIGN, |_| {
            unreachable!("a replica's own operations are applied by its combiner")
        });
        self.combiner.store(FREE, Ordering::Release);
        true
    }
}
