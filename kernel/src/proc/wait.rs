//! Wait queues: a thread sleeps until an event counter changes, a timeout passes, or a signal
//! arrives.
//!
//! A waiter reads the counter ([`WaitQueue::seq`]) before it checks its condition, and sleeps
//! only if the counter still has that value when it enqueues itself; a waker bumps the counter
//! before waking. So a wake-up between the check and the sleep is never lost.

use super::sched;
use super::{Thread, ThreadState};
use crate::sync::IrqMutex;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::sync::atomic::Ordering;

/// How a sleep ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Wake {
    /// The event happened (or had already happened).
    Event,
    /// The deadline passed.
    Timeout,
    /// A signal is pending for the thread.
    Interrupted,
}

struct Inner {
    seq: u64,
    waiters: Vec<Arc<Thread>>,
}

/// Threads waiting for an event.
pub struct WaitQueue {
    inner: IrqMutex<Inner>,
}

impl WaitQueue {
    /// An empty queue.
    pub const fn new() -> Self {
        WaitQueue {
            inner: IrqMutex::new(Inner {
                seq: 0,
                waiters: Vec::new(),
            }),
        }
    }

    /// The event counter; read it before checking the condition you wait for.
    pub fn seq(&self) -> u64 {
        self.inner.lock().seq
    }

    /// Wakes every waiter.
    pub fn notify_all(&self) {
        let waiters = {
            let mut q = self.inner.lock();
            q.seq += 1;
            core::mem::take(&mut q.waiters)
        };
        for t in waiters {
            sched::wake(&t);
        }
    }

    /// Sleeps until the counter differs from `seq`, `deadline_ns` (absolute, [`crate::time`])
    /// passes, or a signal is pending.
    pub fn wait(&self, seq: u64, deadline_ns: Option<u64>) -> Wake {
        let me = sched::current_thread();
        {
            let mut q = self.inner.lock();
            if q.seq != seq {
                return Wake::Event;
            }
            if me.signal_pending() {
                return Wake::Interrupted;
            }
            me.set_state(ThreadState::Blocked);
            q.waiters.push(me.clone());
        }
        let outcome = block(&me, deadline_ns);
        self.inner.lock().waiters.retain(|t| !Arc::ptr_eq(t, &me));
        match outcome {
            Wake::Event if self.seq() == seq && me.signal_pending() => Wake::Interrupted,
            other => other,
        }
    }
}

impl Default for WaitQueue {
    fn default() -> Self {
        Self::new()
    }
}

impl WaitQueue {
    /// Sleeps until the counter differs from `seq`; a pending signal does not end the sleep.
    pub fn wait_uninterruptible(&self, seq: u64) {
        let me = sched::current_thread();
        {
            let mut q = self.inner.lock();
            if q.seq != seq {
                return;
            }
            me.set_state(ThreadState::Blocked);
            q.waiters.push(me.clone());
        }
        block(&me, None);
        self.inner.lock().waiters.retain(|t| !Arc::ptr_eq(t, &me));
    }
}

/// Sleeps until `deadline_ns` passes or a signal arrives (nothing else wakes the thread).
pub fn sleep_until(me: &Arc<Thread>, deadline_ns: u64) -> Wake {
    me.set_state(ThreadState::Blocked);
    block(me, Some(deadline_ns))
}

/// Blocks the current thread, already marked blocked and registered where a waker finds it,
/// until it is woken or `deadline_ns` passes.
pub fn block(me: &Arc<Thread>, deadline_ns: Option<u64>) -> Wake {
    if let Some(d) = deadline_ns {
        sched::arm_timer(me, d);
    }
    sched::schedule();
    if deadline_ns.is_some() {
        sched::disarm_timer(me);
    }
    if me.timed_out.swap(false, Ordering::AcqRel) {
        Wake::Timeout
    } else if me.signal_pending() {
        Wake::Interrupted
    } else {
        Wake::Event
    }
}
