//! Futexes: `FUTEX_WAIT` and `FUTEX_WAKE` (with timeouts; private and shared).
//!
//! A futex is identified by the physical address of its word, found through the caller's
//! address space, so private futexes (one process) and shared ones (a `MAP_SHARED` page seen by
//! several processes) use the same table. Waiting checks the word and enqueues the thread under
//! the table lock, and waking takes waiters under the same lock, so no wake-up is lost.

use crate::proc::wait::{self, Wake};
use crate::proc::{sched, Process, Thread, ThreadState};
use crate::sync::IrqMutex;
use crate::uaccess;
use abi::Errno;
use alloc::collections::{BTreeMap, VecDeque};
use alloc::sync::Arc;

static FUTEXES: IrqMutex<BTreeMap<u64, VecDeque<Arc<Thread>>>> = IrqMutex::new(BTreeMap::new());

/// The key of the futex word at `uaddr` in `p`'s address space (populating the page if it is
/// valid but not yet touched).
fn key(p: &Process, uaddr: u64) -> Result<u64, Errno> {
    if !uaddr.is_multiple_of(4) {
        return Err(Errno::EINVAL);
    }
    let _: u32 = uaccess::read_user(uaddr)?;
    match p.vm().resolve(uaddr).0 {
        Some(t) => Ok(t.phys),
        None => Err(Errno::EFAULT),
    }
}

/// `FUTEX_WAIT`: sleeps while the word at `uaddr` holds `expected`, until woken, `deadline_ns`
/// passes (`ETIMEDOUT`) or a signal arrives (`EINTR`).
pub fn wait(
    me: &Arc<Thread>,
    uaddr: u64,
    expected: u32,
    deadline_ns: Option<u64>,
) -> Result<(), Errno> {
    let k = key(&me.process, uaddr)?;
    {
        let mut table = FUTEXES.lock();
        let current: u32 = uaccess::read_user(uaddr)?;
        if current != expected {
            return Err(Errno::EAGAIN);
        }
        if me.signal_pending() {
            return Err(Errno::EINTR);
        }
        me.set_state(ThreadState::Blocked);
        table.entry(k).or_default().push_back(me.clone());
    }
    let outcome = wait::block(me, deadline_ns);
    let still_queued = {
        let mut table = FUTEXES.lock();
        let mut found = false;
        if let Some(q) = table.get_mut(&k) {
            let before = q.len();
            q.retain(|t| !Arc::ptr_eq(t, me));
            found = q.len() != before;
            if q.is_empty() {
                table.remove(&k);
            }
        }
        found
    };
    match outcome {
        _ if !still_queued => Ok(()),
        Wake::Timeout => Err(Errno::ETIMEDOUT),
        Wake::Interrupted => Err(Errno::EINTR),
        Wake::Event => Ok(()),
    }
}

/// `FUTEX_WAKE`: wakes up to `count` threads waiting on the word at `uaddr`; returns how many.
pub fn wake(p: &Process, uaddr: u64, count: u32) -> Result<usize, Errno> {
    let k = key(p, uaddr)?;
    let mut woken = 0;
    let mut table = FUTEXES.lock();
    if let Some(q) = table.get_mut(&k) {
        while woken < count as usize {
            let Some(t) = q.pop_front() else { break };
            sched::wake(&t);
            woken += 1;
        }
        if q.is_empty() {
            table.remove(&k);
        }
    }
    Ok(woken)
}

/// `FUTEX_REQUEUE`: wakes up to `wake_count` waiters of `uaddr` and moves up to `move_count` of
/// the rest to `uaddr2`; returns how many were woken plus moved.
pub fn requeue(
    p: &Process,
    uaddr: u64,
    wake_count: u32,
    uaddr2: u64,
    move_count: u32,
) -> Result<usize, Errno> {
    let from = key(p, uaddr)?;
    let to = key(p, uaddr2)?;
    let mut table = FUTEXES.lock();
    let Some(mut q) = table.remove(&from) else {
        return Ok(0);
    };
    let mut done = 0;
    while done < wake_count as usize {
        let Some(t) = q.pop_front() else { break };
        sched::wake(&t);
        done += 1;
    }
    let mut moved = 0;
    while moved < move_count as usize {
        let Some(t) = q.pop_front() else { break };
        table.entry(to).or_default().push_back(t);
        moved += 1;
    }
    if !q.is_empty() {
        table.insert(from, q);
    }
    Ok(done + moved)
}
