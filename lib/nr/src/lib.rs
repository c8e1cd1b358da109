//! Node replication (NR) and concurrent node replication (CNR), after §2–3 and §4.1/§4.5 of
//! *NrOS: Effective Replication and Sharing in an Operating System* (OSDI '21).
//!
//! `no_std` + `alloc`, stable Rust; used by the Reef kernel and by host programs.
//!
//! # Design
//!
//! **NR** turns a sequential structure into a linearizable concurrent one. The structure
//! implements [`Dispatch`]: read operations run on `&self`, update operations on `&mut self`.
//! Each [`Replica`] (one per NUMA node) holds a copy; replicas stay consistent through a shared
//! operation [`Log`], a circular buffer of cache-line-aligned entries with a tail, one local
//! tail per replica and a completed tail.
//!
//! * Updates ([`Replica::execute_mut`]) use *flat combining*: a thread posts its operation in
//!   its per-thread slot; one thread per replica, the *combiner*, collects every posted
//!   operation, appends the batch to the log with a single compare-and-swap on the tail,
//!   applies all new log entries to its replica under the replica's writer lock, and hands each
//!   thread its response.
//! * Reads ([`Replica::execute`]) observe the completed tail, wait until the local replica has
//!   applied the log that far (becoming the combiner if nobody is), and run under the replica's
//!   distributed readers-writer lock, concurrently with other readers.
//!
//! **CNR** ([`cnr`]) replicates a concurrent (`Sync`) structure over several logs. A
//! [`cnr::LogMapper`] maps each operation to the logs it conflicts with; commuting operations
//! use different logs and different combiners. Operations that map to several logs are *scan*
//! operations: they are entered into all their logs under a scan lock and executed on a replica
//! brought exactly to that snapshot.
//!
//! **Log space** (§4.5): an append that finds the log full first applies the log to its own
//! replica, then advances any lagging replica whose combiner lock is free, and otherwise calls
//! the [`LagCallback`] registered with [`Log::with_lag_callback`] (the kernel sends an IPI to
//! a core of the lagging replica, which calls [`Replica::sync`]). Payloads that live outside the
//! log can be released as soon as every replica applied the operation with [`Payload`].
//!
//! **Deterministic allocation** (§4.1): [`dalloc`] lets replicated operations allocate so that
//! every replica sees the same outcome.
//!
//! # Threads and memory
//!
//! Threads register with a replica and receive a [`ReplicaToken`] that they pass to every call
//! (the kernel has no thread-locals). The number of threads per replica is bounded by a
//! constructor argument. `Log::new` and the replica constructors allocate with `alloc`
//! (`Box`/`Arc::new`) on the calling core: the kernel creates each replica on a core of its
//! NUMA node. All replicas of a log must be created before the first operation.
//!
//! Spin-waits use `pause`; host programs that run more threads than cores should call
//! [`set_spin_hook`]`(std::thread::yield_now)`.
//!
//! # Example (Listings 1–3 of the paper)
//!
//! A sequential hash map replicated with NR:
//!
//! ```
//! use std::collections::HashMap;
//! use std::sync::Arc;
//! use nr::{Dispatch, Log, Replica};
//!
//! // Standard Rust hashmap node replicated to each NUMA node.
//! #[derive(Default)]
//! pub struct NrHashMap {
//!     storage: HashMap<usize, usize>,
//! }
//!
//! // NrHashMap has a Get(k) op that does not modify state.
//! pub enum HmReadOp { Get(usize) }
//!
//! // NrHashMap has a Put(k, v) op that modifies replica state.
//! #[derive(Clone)]
//! pub enum HmUpdateOp { Put(usize, usize) }
//!
//! // How each operation executes on the sequential structure at each replica.
//! impl Dispatch for NrHashMap {
//!     type ReadOp = HmReadOp;
//!     type UpdateOp = HmUpdateOp;
//!     type Resp = Option<usize>;
//!
//!     // Execute non-mutating operations (Get).
//!     fn dispatch(&self, op: Self::ReadOp) -> Self::Resp {
//!         match op {
//!             HmReadOp::Get(k) => self.storage.get(&k).copied(),
//!         }
//!     }
//!
//!     // Execute mutating operations (Put).
//!     fn dispatch_mut(&mut self, op: Self::UpdateOp) -> Self::Resp {
//!         match op {
//!             HmUpdateOp::Put(k, v) => self.storage.insert(k, v),
//!         }
//!     }
//! }
//!
//! // Allocate an operation log to synchronize replicas.
//! let logsize = 2 * 1024 * 1024;
//! let log = Arc::new(Log::<<NrHashMap as Dispatch>::UpdateOp>::new(logsize));
//!
//! // Create two replicas of the hashmap (one per NUMA node).
//! let replica1 = Replica::<NrHashMap>::new(&log);
//! let replica2 = Replica::<NrHashMap>::new(&log);
//!
//! // Register threads on one NUMA node with replica1.
//! let tid1 = replica1.register().unwrap();
//! // Threads on the other node register similarly with replica2.
//! let tid2 = replica2.register().unwrap();
//!
//! // Issue Get and Put operations and await results.
//! let r = replica1.execute(HmReadOp::Get(1), &tid1);
//! assert_eq!(r, None);
//! let r = replica1.execute_mut(HmUpdateOp::Put(1, 1), &tid1);
//! assert_eq!(r, None);
//! assert_eq!(replica2.execute(HmReadOp::Get(1), &tid2), Some(1));
//! ```
//!
//! The same map with CNR: the structure is concurrent, updates take `&self`, and a
//! [`cnr::LogMapper`] spreads keys over the logs (Listing 3). `Len` reads every log, so it is a
//! scan.
//!
//! ```
//! use std::sync::atomic::{AtomicUsize, Ordering};
//! use std::sync::Arc;
//! use nr::cnr::{Dispatch, LogMapper, LogSet, Logs, Replica};
//!
//! // A concurrent map from small keys to values (0 = absent).
//! pub struct CnrMap {
//!     slots: Vec<AtomicUsize>,
//! }
//!
//! impl Default for CnrMap {
//!     fn default() -> Self {
//!         CnrMap { slots: (0..64).map(|_| AtomicUsize::new(0)).collect() }
//!     }
//! }
//!
//! pub enum ReadOp { Get(usize), Len }
//! #[derive(Clone)]
//! pub enum UpdateOp { Put(usize, usize) }
//!
//! impl LogMapper for ReadOp {
//!     fn hash(&self, nlogs: usize, logs: &mut LogSet) {
//!         logs.clear();
//!         match self {
//!             ReadOp::Get(key) => logs.push(*key % nlogs),
//!             ReadOp::Len => logs.push_all(nlogs),
//!         }
//!     }
//! }
//!
//! impl LogMapper for UpdateOp {
//!     fn hash(&self, nlogs: usize, logs: &mut LogSet) {
//!         logs.clear();
//!         match self {
//!             UpdateOp::Put(key, _v) => logs.push(*key % nlogs),
//!         }
//!     }
//! }
//!
//! impl Dispatch for CnrMap {
//!     type ReadOp = ReadOp;
//!     type UpdateOp = UpdateOp;
//!     type Resp = usize;
//!
//!     fn dispatch(&self, op: ReadOp) -> usize {
//!         match op {
//!             ReadOp::Get(k) => self.slots[k].load(Ordering::Relaxed),
//!             ReadOp::Len => self.slots.iter().filter(|s| s.load(Ordering::Relaxed) != 0).count(),
//!         }
//!     }
//!
//!     // `&self`: commuting updates run concurrently, one combiner per log.
//!     fn dispatch_mut(&self, op: UpdateOp) -> usize {
//!         match op {
//!             UpdateOp::Put(k, v) => self.slots[k].swap(v, Ordering::Relaxed),
//!         }
//!     }
//! }
//!
//! let logs = Arc::new(Logs::<UpdateOp>::new(4, 64 * 1024));
//! let replica1 = Replica::<CnrMap>::new(&logs);
//! let replica2 = Replica::<CnrMap>::new(&logs);
//! let t1 = replica1.register().unwrap();
//! let t2 = replica2.register().unwrap();
//! replica1.execute_mut(UpdateOp::Put(3, 30), &t1);
//! replica2.execute_mut(UpdateOp::Put(4, 40), &t2);
//! assert_eq!(replica2.execute(ReadOp::Get(3), &t2), 30);
//! assert_eq!(replica1.execute(ReadOp::Len, &t1), 2);
//! ```
#![no_std]
#![deny(missing_docs)]

extern crate alloc;

pub mod cnr;
mod context;
pub mod dalloc;
mod log;
mod payload;
mod replica;
mod rwlock;
mod sync;

pub use crate::log::{LagCallback, Log, MAX_REPLICAS_PER_LOG};
pub use crate::payload::{Payload, PayloadRef};
pub use crate::replica::{Replica, ReplicaToken, DEFAULT_MAX_THREADS};
pub use crate::sync::set_spin_hook;

/// A sequential structure that NR can replicate.
///
/// Read operations run on `&self` and may run concurrently on one replica; update operations
/// run on `&mut self`, once on every replica, in log order. Both must be deterministic: every
/// replica must reach the same state and return the same response (use [`dalloc`] for memory
/// allocation inside `dispatch_mut`).
pub trait Dispatch {
    /// Operations that do not modify the structure.
    type ReadOp;
    /// Operations that modify the structure; stored in the log and cloned for each replica.
    type UpdateOp: Clone;
    /// The response of both kinds of operation.
    type Resp;

    /// Executes a read operation.
    fn dispatch(&self, op: Self::ReadOp) -> Self::Resp;

    /// Executes an update operation.
    fn dispatch_mut(&mut self, op: Self::UpdateOp) -> Self::Resp;
}
