//! Kernel state replicated per NUMA node with node replication (NrOS §2, §4): the glue between
//! the `nr` library and the kernel.
//!
//! A [`NodeReplicated<D>`] holds one operation log and one [`Replica`] of `D` per NUMA node. A
//! core executes operations on its own node's replica with a token it registers lazily, one per
//! (core, replica) pair; the token's lock also keeps interrupts off while the core is inside
//! the library, so an interrupt handler never runs on a core that holds a combiner or writer
//! lock. A core may also bring another node's replica up to date ([`NodeReplicated::sync_all`]),
//! which `munmap` uses before its TLB shootdown so that no replica's page tables still map a
//! frame about to be freed.
//!
//! Log garbage collection (§4.5): when an append finds the log full because a replica lags and
//! its combiner is busy, the library calls [`lagging_replica`], which sends an `NrSync` IPI to a
//! core of that node; the core syncs all replicas of its node at its next safe point (the idle
//! loop or the return to user mode), never inside the interrupt handler.

use crate::kcb;
use crate::sync::IrqMutex;
use alloc::collections::BTreeMap;
use alloc::sync::{Arc, Weak};
use alloc::vec::Vec;
use core::sync::atomic::{AtomicUsize, Ordering};
use nr::{Dispatch, Log, Replica, ReplicaToken};

/// Something with one replica per node that a core can bring up to date.
pub trait SyncReplica: Send + Sync {
    /// Applies every outstanding log entry to `node`'s replica.
    fn sync_node(&self, node: usize);
}

/// Logs with live replicas, by log id, for the lagging-replica path.
static REGISTRY: IrqMutex<BTreeMap<usize, Weak<dyn SyncReplica>>> = IrqMutex::new(BTreeMap::new());
/// The id the next log gets (its key in [`REGISTRY`]).
static NEXT_LOG_ID: AtomicUsize = AtomicUsize::new(1);

/// Number of NUMA nodes and cores, fixed at boot.
static SHAPE: spin::Once<(usize, usize)> = spin::Once::new();

/// Records the machine's shape (nodes, cores) before the first replicated structure is made.
pub fn init(nodes: usize, cores: usize) {
    SHAPE.call_once(|| (nodes.max(1), cores.max(1)));
}

/// The (nodes, cores) recorded by [`init`].
fn shape() -> (usize, usize) {
    *SHAPE.get().expect("replicated::init runs at boot")
}

/// Runs `f` with the kernel heap of `node` serving this core's allocations (before the KCBs
/// exist, the boot core's heap does).
fn on_node_heap<R>(node: usize, f: impl FnOnce() -> R) -> R {
    match kcb::try_current() {
        Some(k) if k.node_id != node => k.with_heap_node(node, f),
        _ => f(),
    }
}

/// The number of replicas every [`NodeReplicated`] has: one per NUMA node.
pub fn node_count() -> usize {
    shape().0
}

/// A structure replicated once per NUMA node.
pub struct NodeReplicated<D: Dispatch> {
    /// The operation log all replicas share.
    log: Arc<Log<D::UpdateOp>>,
    /// One replica per node, indexed by node id.
    replicas: Vec<Arc<Replica<D>>>,
    /// `tokens[core * nodes + node]`: core `core`'s registration with `node`'s replica.
    tokens: Vec<IrqMutex<Option<ReplicaToken>>>,
    /// Number of replicas (NUMA nodes).
    nodes: usize,
}

impl<D> NodeReplicated<D>
where
    D: Dispatch + Send + Sync + 'static,
    D::UpdateOp: Send + Sync + 'static,
    D::Resp: Send,
{
    /// Creates one replica per node, `make(node)` giving each its initial state, sharing a log
    /// of `log_entries` entries.
    pub fn new(log_entries: usize, mut make: impl FnMut(usize) -> D) -> Arc<Self> {
        match Self::try_new(log_entries, |node| Ok::<D, ()>(make(node))) {
            Ok(this) => this,
            Err(()) => unreachable!("an infallible constructor failed"),
        }
    }

    /// As [`NodeReplicated::new`], with a constructor that can fail (out of memory for a
    /// replica's page tables, say).
    pub fn try_new<E>(
        log_entries: usize,
        mut make: impl FnMut(usize) -> Result<D, E>,
    ) -> Result<Arc<Self>, E> {
        let (nodes, cores) = shape();
        let id = NEXT_LOG_ID.fetch_add(1, Ordering::Relaxed);
        let log = Arc::new(
            Log::with_capacity(log_entries)
                .with_id(id)
                .with_lag_callback(lagging_replica),
        );
        let mut replicas = Vec::with_capacity(nodes);
        for node in 0..nodes {
            let data = on_node_heap(node, || make(node))?;
            replicas.push(on_node_heap(node, || Replica::with_data(&log, data, cores)));
        }
        let this = Arc::new(NodeReplicated {
            log,
            replicas,
            tokens: (0..nodes * cores).map(|_| IrqMutex::new(None)).collect(),
            nodes,
        });
        let weak: Weak<dyn SyncReplica> = Arc::downgrade(&this) as Weak<dyn SyncReplica>;
        REGISTRY.lock().insert(id, weak);
        Ok(this)
    }

    /// Runs `f` on `node`'s replica with this core's token for it (registering the token the
    /// first time), with `node`'s heap serving allocations.
    fn with_token<R>(&self, node: usize, f: impl FnOnce(&Replica<D>, &ReplicaToken) -> R) -> R {
        let core = kcb::current().core_id;
        let replica = &self.replicas[node];
        let mut slot = self.tokens[core * self.nodes + node].lock();
        let token = slot.get_or_insert_with(|| {
            replica
                .register()
                .expect("a replica admits as many threads as there are cores")
        });
        on_node_heap(node, || f(replica, token))
    }

    /// This core's node, as a replica index.
    fn local_node(&self) -> usize {
        kcb::current().node_id.min(self.nodes - 1)
    }

    /// Executes a read operation on this core's node replica.
    pub fn execute(&self, op: D::ReadOp) -> D::Resp {
        self.with_token(self.local_node(), |r, t| r.execute(op, t))
    }

    /// Executes an update operation through the log, applied on this core's node replica.
    pub fn execute_mut(&self, op: D::UpdateOp) -> D::Resp {
        self.with_token(self.local_node(), |r, t| r.execute_mut(op, t))
    }

    /// Brings every node's replica up to date from this core.
    pub fn sync_all(&self) {
        for node in 0..self.nodes {
            self.with_token(node, |r, t| r.sync(t));
        }
    }

    /// Runs `f` on `node`'s replica after bringing it up to date (for reports).
    pub fn verify<R>(&self, node: usize, f: impl FnOnce(&D) -> R) -> R {
        self.with_token(node, |r, t| r.verify(t, f))
    }

    /// Number of replicas (nodes).
    pub fn replica_count(&self) -> usize {
        self.nodes
    }
}

impl<D> SyncReplica for NodeReplicated<D>
where
    D: Dispatch + Send + Sync + 'static,
    D::UpdateOp: Send + Sync + 'static,
    D::Resp: Send,
{
    fn sync_node(&self, node: usize) {
        if node < self.nodes {
            self.with_token(node, |r, t| r.sync(t));
        }
    }
}

impl<D: Dispatch> Drop for NodeReplicated<D> {
    fn drop(&mut self) {
        REGISTRY.lock().remove(&self.log.id());
    }
}

/// The `nr` library's lagging-replica callback: asks a core of the lagging node to sync.
pub fn lagging_replica(_log_id: usize, replica: usize) {
    let target = (0..kcb::MAX_CORES)
        .filter_map(kcb::get)
        .find(|k| k.node_id == replica && k.state() == kcb::CoreState::Online);
    if let Some(k) = target {
        if k.core_id != kcb::current().core_id {
            let _ = crate::ipi::send(k.core_id, crate::ipi::IpiKind::NrSync);
        }
    }
}

/// Brings every node's replica of every replicated structure up to date, from this core: then
/// nothing a program released is still held by a replica that has not applied the release yet
/// (the free memory `reef_free_bytes` reports does not depend on which replicas lag).
pub fn sync_all_nodes() {
    let live: Vec<Arc<dyn SyncReplica>> =
        REGISTRY.lock().values().filter_map(Weak::upgrade).collect();
    for node in 0..node_count() {
        for r in &live {
            r.sync_node(node);
        }
    }
    crate::fs::sync_all();
}

/// Brings this node's replicas of every replicated structure up to date (the idle loop and the
/// return to user mode call it after an `NrSync` IPI).
pub fn sync_local_node() {
    let node = kcb::current().node_id;
    let live: Vec<Arc<dyn SyncReplica>> =
        REGISTRY.lock().values().filter_map(Weak::upgrade).collect();
    for r in live {
        r.sync_node(node);
    }
    crate::fs::sync_local();
}
