//! Wait queues: a thread sleeps until an event counter changes, a timeout passes, or a signal
//! arrives.
//!
//! A waiter reads the counter ([`WaitQueue::seq`]) before it checks its condition, and sleeps
//! only if the counter still has that value when it enqueues itself; a waker bumps the counter
//! before waking. So a wake-up between the check and the sleep is never lost.
//!
//! [`SleepLock`] is a lock built on a wait queue, for holds that may be long (an address-space
//! change with its TLB shootdown): its waiters sleep, so their cores run other threads or go
//! idle instead of spinning.

use super::sched;
use super::{Thread, ThreadState};
use crate::sync::IrqMutex;
use abi::Errno;
use alloc::sync::{Arc, Weak};
use alloc::vec::Vec;
use core::ops::{Deref, DerefMut};
use core::sync::atomic::{fence, AtomicBool, AtomicU64, Ordering};

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

/// A wait queue's state, under its lock.
struct Inner {
    /// The event counter, bumped by every [`WaitQueue::notify_all`].
    seq: u64,
    /// The threads sleeping until the counter changes.
    waiters: Vec<Arc<Thread>>,
}

/// Threads waiting for an event.
pub struct WaitQueue {
    /// The counter and the sleeping threads.
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
    /// passes, or a signal is pending. An event wins over a signal that came with it (the
    /// counter moved while the thread slept): the caller looks at its condition again, as
    /// Linux's waits do before they look at signals, and its next wait sees the signal.
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
            Wake::Interrupted if self.seq() != seq => Wake::Event,
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
        sleep(&me, None);
        self.inner.lock().waiters.retain(|t| !Arc::ptr_eq(t, &me));
    }
}

/// Sleeps until `deadline_ns` passes or a signal arrives (nothing else wakes the thread).
pub fn sleep_until(me: &Arc<Thread>, deadline_ns: u64) -> Wake {
    me.set_state(ThreadState::Blocked);
    block(me, Some(deadline_ns))
}

/// Blocks the current thread, already marked blocked and registered where a waker finds it,
/// until it is woken, `deadline_ns` passes or a signal is pending.
///
/// A signal sent after the caller's last look but before it marked itself blocked found the
/// thread running, so the sender's wake-up did nothing: the look here, after the marking,
/// catches it. A sender makes the signal pending (or the process exiting) before it wakes,
/// and the fence pairs with the sender's lock or fence, so either this look sees the signal
/// or the sender sees the thread blocked and wakes it.
pub fn block(me: &Arc<Thread>, deadline_ns: Option<u64>) -> Wake {
    fence(Ordering::SeqCst);
    if me.signal_pending() && me.transition(ThreadState::Blocked, ThreadState::Running) {
        return Wake::Interrupted;
    }
    sleep(me, deadline_ns)
}

/// [`block`] for a wait only a fatal signal may end (Linux's `TASK_KILLABLE`): a thread
/// already marked blocked sleeps until woken; `false` if it is dying (killed, or its process
/// exiting) instead. Other signals wake it early, and its caller looks again and sleeps again.
pub fn block_killable(me: &Arc<Thread>) -> bool {
    fence(Ordering::SeqCst);
    if me.dying() && me.transition(ThreadState::Blocked, ThreadState::Running) {
        return false;
    }
    sleep(me, None);
    !me.dying()
}

/// Switches away until the thread is woken or `deadline_ns` passes; says why it woke.
fn sleep(me: &Arc<Thread>, deadline_ns: Option<u64>) -> Wake {
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

/// What a thread in `poll` or `select` watches, and what a waker says has changed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PollKey {
    /// A pipe, by its id.
    Pipe(u64),
    /// The console terminal.
    Console,
    /// A shared frame holding a word message channels announce changes in (a channel of a
    /// connection, a mailbox's eventcount), by its physical address.
    Frame(u64),
    /// A network stack instance, by number (any of its sockets changed).
    Net(u32),
    /// An event counter or a timer descriptor (`fs::eventfd`), by id.
    Event(u64),
    /// The signals pending for a process or its threads (`fs::signalfd`), by process id.
    Signal(super::Pid),
}

/// One thread sleeping in [`PollQueue::wait`]; a waker that finds one of its keys removes
/// the entry and wakes the thread.
struct Poller {
    /// The sleeping thread.
    thread: Arc<Thread>,
    /// The objects it watches.
    keys: Vec<PollKey>,
}

/// The threads in `poll` and `select`: each waits for one of its keys to change, and a waker
/// wakes only the threads watching the key it names. (One queue for all objects woke every
/// poller on every change anywhere: the fleet manager, polling its mailbox, ran on every Hare
/// request and doubled a request's cost on one core.)
pub struct PollQueue {
    /// The threads waiting, with their keys.
    pollers: IrqMutex<Vec<Poller>>,
    /// Flags raised when their key is notified (an edge-triggered epoll interest's), kept
    /// while their owner holds them.
    watches: IrqMutex<Vec<(PollKey, Weak<AtomicBool>)>>,
    /// `watches` is not empty (a notification without epoll skips its lock).
    watching: AtomicBool,
}

impl PollQueue {
    /// An empty queue.
    pub const fn new() -> Self {
        PollQueue {
            pollers: IrqMutex::new(Vec::new()),
            watches: IrqMutex::new(Vec::new()),
            watching: AtomicBool::new(false),
        }
    }

    /// Raises `flag` whenever `key` is notified, for as long as the flag's owner keeps it.
    pub fn watch(&self, key: PollKey, flag: &Arc<AtomicBool>) -> Result<(), Errno> {
        let mut w = self.watches.lock();
        w.retain(|(_, f)| f.strong_count() > 0);
        w.try_reserve(1).map_err(|_| Errno::ENOMEM)?;
        w.push((key, Arc::downgrade(flag)));
        self.watching.store(true, Ordering::Release);
        Ok(())
    }

    /// `key`'s object changed: raises its watches' flags and wakes the pollers watching it
    /// (in batches, each woken after the queue's lock is let go, as
    /// [`WaitQueue::notify_all`] does).
    pub fn notify(&self, key: PollKey) {
        if self.watching.load(Ordering::Acquire) {
            let mut w = self.watches.lock();
            w.retain(|(_, f)| f.strong_count() > 0);
            self.watching.store(!w.is_empty(), Ordering::Release);
            for (k, f) in w.iter() {
                if *k == key {
                    if let Some(f) = f.upgrade() {
                        f.store(true, Ordering::Release);
                    }
                }
            }
        }
        loop {
            let mut batch: [Option<Arc<Thread>>; 8] = Default::default();
            let mut n = 0;
            {
                let mut pollers = self.pollers.lock();
                let mut i = 0;
                while i < pollers.len() && n < batch.len() {
                    if pollers[i].keys.contains(&key) {
                        batch[n] = Some(pollers.swap_remove(i).thread);
                        n += 1;
                    } else {
                        i += 1;
                    }
                }
            }
            for t in batch.iter().flatten() {
                sched::wake(t);
            }
            if n < batch.len() {
                return;
            }
        }
    }

    /// Sleeps until one of `keys` changes (as a waker says), `deadline_ns` passes or a signal
    /// is pending. `scan` is the caller's look at its objects, made once the thread is
    /// registered, so that no change after the look is missed; if it finds something
    /// (`true`), there is no sleep. `ENOMEM` if the registration cannot be stored.
    pub fn wait(
        &self,
        keys: Vec<PollKey>,
        deadline_ns: Option<u64>,
        scan: impl FnOnce() -> bool,
    ) -> Result<Wake, Errno> {
        let me = sched::current_thread();
        {
            let mut pollers = self.pollers.lock();
            pollers.try_reserve(1).map_err(|_| Errno::ENOMEM)?;
            pollers.push(Poller {
                thread: me.clone(),
                keys,
            });
        }
        let mine = |p: &Poller| Arc::ptr_eq(&p.thread, &me);
        let outcome = if scan() {
            Wake::Event
        } else {
            // Still registered (no waker has taken the entry): marked blocked under the lock,
            // so a waker that takes it from now on finds the thread blocked and wakes it.
            let registered = {
                let pollers = self.pollers.lock();
                let found = pollers.iter().any(mine);
                if found {
                    me.set_state(ThreadState::Blocked);
                }
                found
            };
            if registered {
                block(&me, deadline_ns)
            } else {
                Wake::Event
            }
        };
        self.pollers.lock().retain(|p| !mine(p));
        Ok(outcome)
    }
}

impl Default for PollQueue {
    fn default() -> Self {
        Self::new()
    }
}

/// A lock whose waiters sleep on a [`WaitQueue`] (uninterruptibly: holds are bounded),
/// taken in the order they asked (tickets): a thread that lets go and asks again at once
/// cannot barge ahead of a sleeper, which on one core would starve it for as long as the
/// first keeps asking (two processes using one Hare client did).
pub struct SleepLock<T> {
    /// The protected value, locked by the ticket holder.
    inner: spin::Mutex<T>,
    /// The next ticket to hand out.
    next: AtomicU64,
    /// The ticket that may hold the lock.
    serving: AtomicU64,
    /// Where waiters sleep until their ticket is served.
    queue: WaitQueue,
}

/// Guard of a [`SleepLock`]; serves the next ticket when dropped.
pub struct SleepLockGuard<'a, T> {
    /// The lock held.
    lock: &'a SleepLock<T>,
    /// The guard of the inner lock (taken when dropped, before the next ticket is served).
    guard: Option<spin::MutexGuard<'a, T>>,
}

impl<T> SleepLock<T> {
    /// A new unlocked lock.
    pub const fn new(value: T) -> Self {
        SleepLock {
            inner: spin::Mutex::new(value),
            next: AtomicU64::new(0),
            serving: AtomicU64::new(0),
            queue: WaitQueue::new(),
        }
    }

    /// Takes the lock, sleeping until the threads that asked before have had it. Must be
    /// called by a thread (not the idle context) with no spin lock held.
    pub fn lock(&self) -> SleepLockGuard<'_, T> {
        let ticket = self.next.fetch_add(1, Ordering::AcqRel);
        loop {
            // Read before the check: a serve between the check and the sleep is not lost.
            let seq = self.queue.seq();
            if self.serving.load(Ordering::Acquire) == ticket {
                return self.held();
            }
            self.queue.wait_uninterruptible(seq);
        }
    }

    /// Takes the lock if no thread holds it or waits for it.
    pub fn try_lock(&self) -> Option<SleepLockGuard<'_, T>> {
        let serving = self.serving.load(Ordering::Acquire);
        self.next
            .compare_exchange(serving, serving + 1, Ordering::AcqRel, Ordering::Relaxed)
            .ok()
            .map(|_| self.held())
    }

    /// The guard of the ticket being served (the previous holder dropped its guard before
    /// serving the next ticket, so the inner lock is free).
    fn held(&self) -> SleepLockGuard<'_, T> {
        SleepLockGuard {
            lock: self,
            guard: Some(self.inner.lock()),
        }
    }
}

impl<T> Deref for SleepLockGuard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        self.guard.as_ref().expect("held until dropped")
    }
}

impl<T> DerefMut for SleepLockGuard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        self.guard.as_mut().expect("held until dropped")
    }
}

impl<T> Drop for SleepLockGuard<'_, T> {
    fn drop(&mut self) {
        drop(self.guard.take());
        let served = self.lock.serving.fetch_add(1, Ordering::AcqRel) + 1;
        // Sleepers each wait for their own ticket: wake them all to look (there are few).
        if self.lock.next.load(Ordering::Acquire) != served {
            self.lock.queue.notify_all();
        }
    }
}
