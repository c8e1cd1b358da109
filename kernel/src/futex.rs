//! Futexes: `FUTEX_WAIT` and `FUTEX_WAKE` (with timeouts; private and shared).
//!
//! A futex in shared memory (a `MAP_SHARED` page seen by several processes) is identified by
//! the physical address of its word; one in private memory by its address space and virtual
//! address, as on Linux, since its frame changes when a copy-on-write fault copies it (and
//! before that is shared with a `fork` child that has futexes of its own there).
//!
//! Waiting reads the word and enqueues the thread under the table lock, and waking takes
//! waiters under the same lock, so no wake-up is lost. Under the lock interrupts are off and a
//! user copy does not page (see `uaccess`): when the word's page is not present there,
//! [`with_word`] drops the lock, brings the page in, and retries, as Linux does.

use crate::proc::wait::{self, Wake};
use crate::proc::{sched, Process, Thread, ThreadState};
use crate::sync::IrqMutex;
use crate::uaccess;
use abi::Errno;
use alloc::collections::{BTreeMap, VecDeque};
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicU32, Ordering};
use vspace::RegionKind;

/// The threads waiting on one futex word, in arrival order.
type Queue = VecDeque<Arc<Thread>>;

/// Emptied queues kept for reuse: most words have one waiter at a time, so a wait then
/// allocates nothing.
const SPARE_QUEUES: usize = 16;

/// The waiters of every futex word, by key.
struct Table {
    /// Each word's waiters (never an empty queue).
    queues: BTreeMap<Key, Queue>,
    /// Empty queues, with their room, for the next words waited on.
    spare: Vec<Queue>,
}

impl Table {
    /// Adds `t` to `k`'s waiters.
    fn push(&mut self, k: Key, t: Arc<Thread>) {
        let spare = &mut self.spare;
        self.queues
            .entry(k)
            .or_insert_with(|| spare.pop().unwrap_or_default())
            .push_back(t);
    }

    /// Drops `k`'s queue if it is empty.
    fn tidy(&mut self, k: Key) {
        if self.queues.get(&k).is_some_and(Queue::is_empty) {
            if let Some(q) = self.queues.remove(&k) {
                self.recycle(q);
            }
        }
    }

    /// Keeps `q`, emptied, for reuse (up to [`SPARE_QUEUES`]).
    fn recycle(&mut self, q: Queue) {
        if q.is_empty() && self.spare.len() < SPARE_QUEUES {
            self.spare.push(q);
        }
    }
}

/// All futex waiters, by key, under one lock.
static FUTEXES: IrqMutex<Table> = IrqMutex::new(Table {
    queues: BTreeMap::new(),
    spare: Vec::new(),
});

/// What identifies a futex word.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Key {
    /// In private memory: the address space's id and the word's address.
    Private(usize, u64),
    /// In shared anonymous memory: the word's physical address.
    Shared(u64),
}

/// The key of the futex word at `uaddr` in `p`'s address space (populating the page if it is
/// valid but not yet touched).
fn key(p: &Process, uaddr: u64) -> Result<Key, Errno> {
    key_and_kind(p, uaddr).map(|(k, _)| k)
}

/// [`key`], and whether the word is in a message channel's page (`RegionKind::Channel`).
fn key_and_kind(p: &Process, uaddr: u64) -> Result<(Key, bool), Errno> {
    if !uaddr.is_multiple_of(4) {
        return Err(Errno::EINVAL);
    }
    let _: u32 = uaccess::read_user(uaddr)?;
    let vm = p.vm();
    match vm.resolve(uaddr) {
        (Some(t), Some(r)) if r.kind.is_shared() => Ok((
            Key::Shared(t.phys),
            matches!(r.kind, RegionKind::Channel { .. }),
        )),
        (Some(_), _) => Ok((Key::Private(vm.id(), uaddr), false)),
        (None, _) => Err(Errno::EFAULT),
    }
}

/// Runs `step` on the table, locked, with the value of the word at `uaddr` read under the same
/// lock. Where the word's page is not present under the lock, drops the lock, brings the page
/// in with interrupts on, and starts over; gives up with `EFAULT` when the word is not
/// readable, or `EINTR` when `me` is being killed meanwhile.
fn with_word<R>(
    me: &Thread,
    uaddr: u64,
    mut step: impl FnMut(&mut Table, u32) -> R,
) -> Result<R, Errno> {
    loop {
        {
            let mut table = FUTEXES.lock();
            if let Ok(word) = uaccess::read_user::<u32>(uaddr) {
                return Ok(step(&mut table, word));
            }
        }
        let _: u32 = uaccess::read_user(uaddr)?;
        if me.dying() {
            return Err(Errno::EINTR);
        }
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
    with_word(me, uaddr, |table, current| {
        if current != expected {
            return Err(Errno::EAGAIN);
        }
        if me.signal_pending() {
            return Err(Errno::EINTR);
        }
        me.set_state(ThreadState::Blocked);
        table.push(k, me.clone());
        Ok(())
    })??;
    let outcome = wait::block(me, deadline_ns);
    let still_queued = dequeue(k, me);
    match outcome {
        _ if !still_queued => Ok(()),
        Wake::Timeout => Err(Errno::ETIMEDOUT),
        Wake::Interrupted => Err(Errno::EINTR),
        Wake::Event => Ok(()),
    }
}

/// Takes `me` off `k`'s waiters after its sleep; whether it was still there (not woken).
fn dequeue(k: Key, me: &Arc<Thread>) -> bool {
    let mut table = FUTEXES.lock();
    let Some(q) = table.queues.get_mut(&k) else {
        return false;
    };
    let before = q.len();
    q.retain(|t| !Arc::ptr_eq(t, me));
    let found = q.len() != before;
    table.tidy(k);
    found
}

/// `FUTEX_WAKE`: wakes up to `count` threads waiting on the word at `uaddr`; returns how many.
/// A wake-up on a message channel's word also wakes `poll`, where a party may sleep on the
/// channel's descriptor instead (see `crate::mailbox`).
pub fn wake(p: &Process, uaddr: u64, count: u32) -> Result<usize, Errno> {
    let (k, channel) = key_and_kind(p, uaddr)?;
    if let (true, Key::Shared(phys)) = (channel, k) {
        crate::mailbox::notify_pollers(phys);
    }
    let mut woken = 0;
    let mut table = FUTEXES.lock();
    if let Some(q) = table.queues.get_mut(&k) {
        while woken < count as usize {
            let Some(t) = q.pop_front() else { break };
            sched::wake(&t);
            woken += 1;
        }
        table.tidy(k);
    }
    Ok(woken)
}

/// Wakes every thread waiting on the shared futex word at physical address `phys` (the kernel
/// ringing a channel's doorbell: see `crate::mailbox`); returns how many.
pub fn wake_frame_word(phys: u64) -> usize {
    let Some(mut q) = FUTEXES.lock().queues.remove(&Key::Shared(phys)) else {
        return 0;
    };
    let woken = q.len();
    // Woken with the table let go: a wake-up may reach another core's run queue.
    for t in q.drain(..) {
        sched::wake(&t);
    }
    FUTEXES.lock().recycle(q);
    woken
}

/// The kernel sleeps on a shared futex word it reaches through the direct map (a channel
/// word of a connection whose client end it holds: see `crate::fs::hare`), while the word
/// holds `expected`, until a wake-up of that word ([`wake`] by a process that maps it, or
/// [`wake_frame_word`]); only a fatal signal ends the wait early (`EINTR`).
pub fn wait_kernel_word(me: &Arc<Thread>, word: &AtomicU32, expected: u32) -> Result<(), Errno> {
    let k = Key::Shared(crate::arch::paging::virt_to_phys(
        word as *const AtomicU32 as u64,
    ));
    {
        let mut table = FUTEXES.lock();
        if word.load(Ordering::Acquire) != expected {
            return Ok(());
        }
        me.set_state(ThreadState::Blocked);
        table.push(k, me.clone());
    }
    let alive = wait::block_killable(me);
    dequeue(k, me);
    if alive {
        Ok(())
    } else {
        Err(Errno::EINTR)
    }
}

/// `FUTEX_REQUEUE` (and, with `expected`, `FUTEX_CMP_REQUEUE`: only while the word at `uaddr`
/// holds it, else `EAGAIN`): wakes up to `wake_count` waiters of `uaddr` and moves up to
/// `move_count` of the rest to `uaddr2`; returns how many were woken plus moved.
pub fn requeue(
    me: &Thread,
    uaddr: u64,
    expected: Option<u32>,
    wake_count: u32,
    uaddr2: u64,
    move_count: u32,
) -> Result<usize, Errno> {
    let from = key(&me.process, uaddr)?;
    let to = key(&me.process, uaddr2)?;
    with_word(me, uaddr, |table, current| {
        if expected.is_some_and(|e| e != current) {
            return Err(Errno::EAGAIN);
        }
        let Some(mut q) = table.queues.remove(&from) else {
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
            table.push(to, t);
            moved += 1;
        }
        if q.is_empty() {
            table.recycle(q);
        } else {
            table.queues.insert(from, q);
        }
        Ok(done + moved)
    })?
}
