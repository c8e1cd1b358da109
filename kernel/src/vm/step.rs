//! The output of a replicated update that returns a list (the pages a `munmap` step removed,
//! the pages `fork` shares, the pages a batch could not map), without allocating inside the
//! operation.
//!
//! Every replica applies every update, and an allocation that fails on one replica and not on
//! another would make them differ; a failure on all of them would panic the kernel inside the
//! log (a 1024-page step's list is 24 KiB, more than a heap left without 2 MiB frames can
//! grow by: `cargo xtask fuzz --seed 101 --cores 4 --nodes 2 --memory 512` hit it). So the
//! caller reserves the list's room before the update enters the log ([`Step::reserve`], which
//! can fail with `ENOMEM` before anything changed), the update carries a [`StepRef`] to it, and
//! the first replica that applies the update fills it. All replicas compute the same list
//! (they apply the same updates in the same order), so one copy is the answer; the others
//! only change their own tables. The step number keeps a lagging replica, applying an earlier
//! step of the same buffer later, away from a later step's list.

use crate::sync::IrqMutex;
use abi::Errno;
use alloc::sync::Arc;
use alloc::vec::Vec;

/// The buffer the caller and the replicas share.
struct Shared<T> {
    /// The step whose output goes here.
    step: u64,
    /// A replica filled it for `step`.
    filled: bool,
    /// The list (empty while the caller holds it between steps).
    items: Vec<T>,
}

/// The caller's side: the reserved list between steps.
pub struct Step<T> {
    /// What the updates fill.
    shared: Arc<IrqMutex<Shared<T>>>,
    /// The list, while no step is under way.
    items: Vec<T>,
    /// The last step begun.
    step: u64,
}

/// The update's side: where its list goes and how long it may be.
pub struct StepRef<T> {
    /// The buffer.
    shared: Arc<IrqMutex<Shared<T>>>,
    /// The step this update is.
    step: u64,
    /// The most items the update may produce (the reserved room; the same on every replica).
    pub max: usize,
}

impl<T> Clone for StepRef<T> {
    fn clone(&self) -> Self {
        StepRef {
            shared: self.shared.clone(),
            step: self.step,
            max: self.max,
        }
    }
}

/// Items a [`Step::reserve`] settles for when its first choice cannot be had: a list the heap
/// can grow for from a 4 KiB frame.
const SMALL: usize = 64;

impl<T> Step<T> {
    /// Room for steps of `max` items, or of [`SMALL`] (or `max`, if smaller) when memory is
    /// short; `ENOMEM` if not even that.
    pub fn reserve(max: usize) -> Result<Step<T>, Errno> {
        let mut items = Vec::new();
        if items.try_reserve_exact(max).is_err() {
            items
                .try_reserve_exact(max.min(SMALL))
                .map_err(|_| Errno::ENOMEM)?;
        }
        Ok(Step::with(items))
    }

    /// Room for exactly `n` items; `ENOMEM` if there is none.
    pub fn reserve_exact(n: usize) -> Result<Step<T>, Errno> {
        let mut items = Vec::new();
        items.try_reserve_exact(n).map_err(|_| Errno::ENOMEM)?;
        Ok(Step::with(items))
    }

    /// Steps filling `items`' room.
    fn with(items: Vec<T>) -> Step<T> {
        Step {
            shared: Arc::new(IrqMutex::new(Shared {
                step: 0,
                filled: false,
                items: Vec::new(),
            })),
            items,
            step: 0,
        }
    }

    /// Begins a step: an empty list for the update to fill.
    pub fn begin(&mut self) -> StepRef<T> {
        let mut items = core::mem::take(&mut self.items);
        items.clear();
        self.step += 1;
        let max = items.capacity();
        let mut s = self.shared.lock();
        s.step = self.step;
        s.filled = false;
        s.items = items;
        StepRef {
            shared: self.shared.clone(),
            step: self.step,
            max,
        }
    }

    /// Ends the step begun last (its update has returned): its list.
    pub fn finish(&mut self) -> &mut Vec<T> {
        self.items = core::mem::take(&mut self.shared.lock().items);
        &mut self.items
    }
}

impl<T> StepRef<T> {
    /// Runs the update `f`, which hands each item of its list to the function it is given (at
    /// most [`max`](Self::max)): kept if this replica is the first to apply this step.
    pub fn fill<R>(&self, f: impl FnOnce(&mut dyn FnMut(T)) -> R) -> R {
        let mut s = self.shared.lock();
        let mine = s.step == self.step && !s.filled;
        s.filled |= mine;
        let items = &mut s.items;
        f(&mut |t| {
            // The room was reserved for `max` items, so this never grows the list.
            if mine && items.len() < items.capacity() {
                items.push(t);
            }
        })
    }
}
