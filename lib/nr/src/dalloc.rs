//! Deterministic allocation for replicated operations (§4.1).
//!
//! Replicas apply the same operation at different times, and memory may run out in between, so
//! allocating independently at each replica could succeed on one and fail on another. With a
//! [`DeterministicAlloc`], the first replica to reach an allocation request allocates for every
//! replica; replicas that come later pick up their block (or the failure). Every replica
//! therefore sees the same outcome.
//!
//! Each replica's structure owns a [`DetAllocHandle`] (created with
//! [`DeterministicAlloc::handle`]). Requests are matched by their position in the sequence of
//! requests a replica makes, so `dispatch_mut` must request allocations deterministically: the
//! same layouts in the same order on every replica (which NR's log order guarantees for
//! deterministic code).

use alloc::boxed::Box;
use alloc::collections::VecDeque;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::alloc::Layout;
use core::fmt;
use core::ptr::NonNull;

use crate::sync::SpinLock;

/// The error every replica sees when an allocation request failed on the replica that served
/// it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AllocError;

impl fmt::Display for AllocError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("deterministic allocation failed")
    }
}

/// The allocator behind a [`DeterministicAlloc`]: allocates a block for a given replica (the
/// kernel allocates from that replica's NUMA node).
pub trait ReplicaAllocator: Send + Sync {
    /// Allocates a block of `layout` (non-zero size) for `replica`; `None` if out of memory.
    fn allocate(&self, replica: usize, layout: Layout) -> Option<NonNull<u8>>;

    /// Frees a block.
    ///
    /// # Safety
    /// `ptr` must come from `allocate(replica, layout)` on this allocator and not be freed.
    unsafe fn deallocate(&self, replica: usize, ptr: NonNull<u8>, layout: Layout);
}

/// [`ReplicaAllocator`] using the global allocator for every replica.
#[derive(Debug, Default, Clone, Copy)]
pub struct GlobalAllocator;

impl ReplicaAllocator for GlobalAllocator {
    fn allocate(&self, _replica: usize, layout: Layout) -> Option<NonNull<u8>> {
        // SAFETY: callers never pass zero-sized layouts (see `DetAllocHandle::allocate`).
        NonNull::new(unsafe { alloc::alloc::alloc(layout) })
    }

    unsafe fn deallocate(&self, _replica: usize, ptr: NonNull<u8>, layout: Layout) {
        // SAFETY: by the caller contract `ptr` was allocated with `layout` by `allocate`,
        // i.e. by the global allocator.
        unsafe { alloc::alloc::dealloc(ptr.as_ptr(), layout) }
    }
}

/// One served request: the layout asked for and either a block per replica (address, `None`
/// once picked up) or `None` for a failure.
struct Request {
    layout: Layout,
    blocks: Option<Vec<Option<usize>>>,
    picked: usize,
}

/// Requests served by a leading replica and not yet picked up by every replica.
struct Pending {
    /// Sequence number of `requests[0]`.
    base: u64,
    requests: VecDeque<Request>,
}

/// Allocation results shared by the replicas of one structure; see the [module docs](self).
pub struct DeterministicAlloc<A: ReplicaAllocator> {
    alloc: A,
    replicas: usize,
    pending: SpinLock<Pending>,
}

impl<A: ReplicaAllocator> fmt::Debug for DeterministicAlloc<A> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DeterministicAlloc")
            .field("replicas", &self.replicas)
            .finish()
    }
}

impl<A: ReplicaAllocator> DeterministicAlloc<A> {
    /// Creates the shared state for `replicas` replicas allocating from `alloc`.
    pub fn new(alloc: A, replicas: usize) -> Arc<Self> {
        assert!(replicas > 0, "need at least one replica");
        Arc::new(Self {
            alloc,
            replicas,
            pending: SpinLock::new(Pending {
                base: 0,
                requests: VecDeque::new(),
            }),
        })
    }

    /// Creates the handle for replica `replica` (in `0..replicas`); put it in that replica's
    /// structure. Create each handle once, before any allocation.
    pub fn handle(self: &Arc<Self>, replica: usize) -> DetAllocHandle<A> {
        assert!(replica < self.replicas, "replica index out of range");
        DetAllocHandle {
            shared: self.clone(),
            replica,
            next: 0,
        }
    }

    /// Number of requests served but not yet picked up by every replica.
    pub fn outstanding(&self) -> usize {
        self.pending.lock().requests.len()
    }

    /// Serves request `seq` for `replica`.
    fn request(&self, replica: usize, seq: u64, layout: Layout) -> Result<NonNull<u8>, AllocError> {
        let mut pending = self.pending.lock();
        let idx = usize::try_from(seq - pending.base).expect("request index overflow");
        if idx == pending.requests.len() {
            let request = self.serve(layout);
            pending.requests.push_back(request);
        }
        let request = &mut pending.requests[idx];
        assert_eq!(
            request.layout, layout,
            "replicas made different allocation requests: dispatch_mut is not deterministic"
        );
        request.picked += 1;
        let result = match &mut request.blocks {
            Some(blocks) => {
                let addr = blocks[replica].take().expect("request picked up twice");
                // SAFETY: the address came from a successful allocation, so it is non-null.
                Ok(unsafe { NonNull::new_unchecked(addr as *mut u8) })
            }
            None => Err(AllocError),
        };
        while pending
            .requests
            .front()
            .is_some_and(|r| r.picked == self.replicas)
        {
            pending.requests.pop_front();
            pending.base += 1;
        }
        result
    }

    /// Allocates one block per replica, or none at all.
    fn serve(&self, layout: Layout) -> Request {
        let mut blocks = Vec::with_capacity(self.replicas);
        for replica in 0..self.replicas {
            match self.alloc.allocate(replica, layout) {
                Some(ptr) => blocks.push(Some(ptr.as_ptr() as usize)),
                None => {
                    for (r, block) in blocks.into_iter().enumerate() {
                        if let Some(addr) = block {
                            // SAFETY: allocated just above for replica `r` with `layout`.
                            unsafe {
                                self.alloc.deallocate(
                                    r,
                                    NonNull::new_unchecked(addr as *mut u8),
                                    layout,
                                )
                            };
                        }
                    }
                    return Request {
                        layout,
                        blocks: None,
                        picked: 0,
                    };
                }
            }
        }
        Request {
            layout,
            blocks: Some(blocks),
            picked: 0,
        }
    }
}

impl<A: ReplicaAllocator> Drop for DeterministicAlloc<A> {
    fn drop(&mut self) {
        let pending = self.pending.lock();
        for request in &pending.requests {
            for (r, block) in request.blocks.iter().flatten().enumerate() {
                if let Some(addr) = block {
                    // SAFETY: blocks still listed were allocated for replica `r` with
                    // `request.layout` and never handed out.
                    unsafe {
                        self.alloc.deallocate(
                            r,
                            NonNull::new_unchecked(*addr as *mut u8),
                            request.layout,
                        )
                    };
                }
            }
        }
    }
}

/// A replica's view of a [`DeterministicAlloc`]; lives in the replica's structure.
pub struct DetAllocHandle<A: ReplicaAllocator> {
    shared: Arc<DeterministicAlloc<A>>,
    replica: usize,
    next: u64,
}

impl<A: ReplicaAllocator> fmt::Debug for DetAllocHandle<A> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DetAllocHandle")
            .field("replica", &self.replica)
            .field("next", &self.next)
            .finish()
    }
}

impl<A: ReplicaAllocator> DetAllocHandle<A> {
    /// Allocates a block of `layout` for this replica, with the same outcome (success or
    /// [`AllocError`]) as every other replica's matching request. Zero-sized layouts always
    /// succeed with a dangling, well-aligned pointer and are not counted as requests.
    pub fn allocate(&mut self, layout: Layout) -> Result<NonNull<u8>, AllocError> {
        if layout.size() == 0 {
            // SAFETY: alignments are non-zero.
            return Ok(unsafe { NonNull::new_unchecked(layout.align() as *mut u8) });
        }
        let seq = self.next;
        self.next += 1;
        self.shared.request(self.replica, seq, layout)
    }

    /// Frees a block obtained from [`DetAllocHandle::allocate`] on this handle.
    ///
    /// # Safety
    /// `ptr` must come from `self.allocate(layout)` and not have been freed.
    pub unsafe fn deallocate(&self, ptr: NonNull<u8>, layout: Layout) {
        if layout.size() != 0 {
            // SAFETY: by the caller contract, `ptr` was allocated for this replica with
            // `layout` by the shared allocator.
            unsafe { self.shared.alloc.deallocate(self.replica, ptr, layout) }
        }
    }

    /// The replica this handle belongs to.
    pub fn replica(&self) -> usize {
        self.replica
    }
}

impl DetAllocHandle<GlobalAllocator> {
    /// Moves `value` into a deterministically allocated `Box`.
    pub fn try_box<T>(&mut self, value: T) -> Result<Box<T>, AllocError> {
        let layout = Layout::new::<T>();
        let ptr = self.allocate(layout)?.cast::<T>();
        // SAFETY: `ptr` is a fresh allocation of `T`'s layout from the global allocator (or
        // dangling and aligned for a zero-sized `T`), so writing `value` and handing it to
        // `Box` (which frees with the global allocator) is sound.
        unsafe {
            ptr.as_ptr().write(value);
            Ok(Box::from_raw(ptr.as_ptr()))
        }
    }
}
