//! Per-thread operation slots used for flat combining.

use alloc::boxed::Box;

use crate::sync::{AtomicUsize, CachePadded, Ordering, UnsafeCell};

/// The per-thread slots of one replica, each on its own cache lines.
pub(crate) type Slots<Op, Resp> = Box<[CachePadded<Slot<Op, Resp>>]>;

/// No operation posted; the owner may post.
const EMPTY: usize = 0;
/// The combiner stored a response; the owner may take it.
const DONE: usize = 1;
/// A combiner claimed the posted operation (CNR only).
const TAKEN: usize = 2;
/// `POSTED + log`: an operation for log `log` is waiting for a combiner.
const POSTED: usize = 3;

/// One thread's slot: a posted operation and, later, its response.
///
/// Protocol: the owner writes `op` and publishes `POSTED + log`; a combiner of that log reads
/// the operation (after observing or claiming the state), later writes `resp` and publishes
/// `DONE`; the owner takes the response and returns the slot to `EMPTY`.
pub(crate) struct Slot<Op, Resp> {
    state: AtomicUsize,
    op: UnsafeCell<Option<Op>>,
    resp: UnsafeCell<Option<Resp>>,
}

impl<Op, Resp> Slot<Op, Resp> {
    /// Creates an empty slot.
    pub(crate) fn new() -> Self {
        Self {
            state: AtomicUsize::new(EMPTY),
            op: UnsafeCell::new(None),
            resp: UnsafeCell::new(None),
        }
    }

    /// Posts `op` for a combiner of log `log`. Called by the owner, with the slot empty.
    #[inline(always)]
    pub(crate) fn post(&self, op: Op, log: usize) {
        debug_assert_eq!(self.state.load(Ordering::Relaxed), EMPTY);
        // SAFETY: the slot is EMPTY, so no combiner accesses `op` until it sees the POSTED
        // state published below.
        self.op.with_mut(|p| unsafe { *p = Some(op) });
        self.state.store(POSTED + log, Ordering::Release);
    }

    /// Whether an operation for log `log` is posted. Used by the single NR combiner, which
    /// needs no claim.
    #[inline(always)]
    pub(crate) fn is_posted(&self, log: usize) -> bool {
        self.state.load(Ordering::Acquire) == POSTED + log
    }

    /// Claims an operation posted for log `log` (CNR, where several combiners scan the slot).
    #[inline(always)]
    pub(crate) fn claim(&self, log: usize) -> bool {
        self.state.load(Ordering::Relaxed) == POSTED + log
            && self
                .state
                .compare_exchange(POSTED + log, TAKEN, Ordering::Acquire, Ordering::Relaxed)
                .is_ok()
    }

    /// Moves the posted operation out.
    ///
    /// # Safety
    /// The caller must be the combiner that observed [`Slot::is_posted`] (holding the only
    /// combiner lock of the slot's replica) or won [`Slot::claim`], and must call this once.
    #[inline(always)]
    pub(crate) unsafe fn take_op(&self) -> Op {
        // SAFETY: by the caller contract we have exclusive access to `op` until `complete`.
        self.op
            .with_mut(|p| unsafe { (*p).take() })
            .expect("posted slot without an operation")
    }

    /// Stores the response of the posted operation.
    ///
    /// # Safety
    /// Same as [`Slot::take_op`]; must be called before [`Slot::complete`].
    #[inline(always)]
    pub(crate) unsafe fn set_resp(&self, resp: Resp) {
        // SAFETY: by the caller contract we have exclusive access to `resp` until `complete`.
        self.resp.with_mut(|p| unsafe { *p = Some(resp) });
    }

    /// Hands the response to the owner.
    #[inline(always)]
    pub(crate) fn complete(&self) {
        self.state.store(DONE, Ordering::Release);
    }

    /// Takes the response if the operation completed. Called by the owner.
    #[inline(always)]
    pub(crate) fn try_take_resp(&self) -> Option<Resp> {
        if self.state.load(Ordering::Acquire) != DONE {
            return None;
        }
        // SAFETY: DONE was published after the combiner wrote `resp`, and no combiner touches
        // the slot again until the owner posts a new operation.
        let resp = self.resp.with_mut(|p| unsafe { (*p).take() });
        self.state.store(EMPTY, Ordering::Relaxed);
        resp
    }
}

// SAFETY: the state protocol above gives exactly one thread access to `op` and `resp` at any
// time; values move between threads, so `Send` contents suffice.
unsafe impl<Op: Send, Resp: Send> Sync for Slot<Op, Resp> {}
