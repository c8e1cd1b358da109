//! Event counters (`eventfd2`) and timers read through descriptors (`timerfd_*`), with Linux's
//! semantics. Both are anonymous files (`anon_inode:[eventfd]`, `anon_inode:[timerfd]`) that
//! `poll`, `select` and `epoll` watch through [`PollKey::Event`].
//!
//! An [`EventFd`] holds a 64-bit counter: a write of 8 bytes adds to it (waiting while the sum
//! would pass `u64::MAX - 1`), a read of at least 8 bytes takes it all (or 1, with
//! `EFD_SEMAPHORE`), waiting while it is 0. A [`TimerFd`] counts its expirations: `settime`
//! arms it relative to now or at an absolute time of its clock (`CLOCK_REALTIME` deadlines
//! are moved onto the monotonic clock when set, as `futex` does: Reef's real-time clock is
//! never set, so they do not move), a read returns the expirations since the last read,
//! waiting until there is one. A blocked read sleeps until the deadline; for pollers, the boot
//! core's tick ([`tick`], 10 ms resolution) notifies each armed timer that has expired.

use crate::fd::POLL_WAKE;
pub use crate::proc::itimer::Setting;
use crate::proc::wait::{PollKey, WaitQueue, Wake};
use crate::sync::IrqMutex;
use abi::Errno;
use alloc::sync::{Arc, Weak};
use alloc::vec::Vec;
use core::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// The id of the next counter, timer or netlink socket (`st_ino`, its [`PollKey::Event`]).
static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// The largest value an event counter holds.
const MAX: u64 = u64::MAX - 1;

/// Runs `attempt` until it gives an answer, sleeping on `changed` between tries (until
/// `deadline`, if `attempt` names one); EAGAIN instead of a sleep if `nonblock`, EINTR if a
/// signal ends the sleep.
fn retry<R>(
    changed: &WaitQueue,
    nonblock: bool,
    mut attempt: impl FnMut() -> Result<R, Option<u64>>,
) -> Result<R, Errno> {
    loop {
        let seq = changed.seq();
        let deadline = match attempt() {
            Ok(r) => return Ok(r),
            Err(_) if nonblock => return Err(Errno::EAGAIN),
            Err(deadline) => deadline,
        };
        if changed.wait(seq, deadline) == Wake::Interrupted {
            return Err(Errno::EINTR);
        }
    }
}

/// A new number for a [`PollKey::Event`] (also a route netlink socket's, `net::socket::netlink`).
pub fn next_id() -> u64 {
    NEXT_ID.fetch_add(1, Ordering::Relaxed)
}

/// An event counter.
pub struct EventFd {
    /// Its number (`st_ino`, its poll key).
    pub id: u64,
    /// `EFD_SEMAPHORE`: a read takes 1, not the whole count.
    semaphore: bool,
    /// The count.
    count: IrqMutex<u64>,
    /// Readers and writers sleep here; bumped on every change.
    changed: WaitQueue,
}

impl EventFd {
    /// A counter starting at `initial`.
    pub fn new(initial: u32, semaphore: bool) -> Arc<EventFd> {
        Arc::new(EventFd {
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
            semaphore,
            count: IrqMutex::new(initial.into()),
            changed: WaitQueue::new(),
        })
    }

    /// Wakes the waiters and pollers after a change.
    fn notify(&self) {
        self.changed.notify_all();
        POLL_WAKE.notify(PollKey::Event(self.id));
    }

    /// `read`: the count (or 1) as 8 bytes, leaving 0 (or one less); EINVAL for a buffer
    /// shorter than 8 bytes, EAGAIN (`nonblock`) or a wait while the count is 0, EINTR.
    pub fn read(&self, buf: &mut [u8], nonblock: bool) -> Result<usize, Errno> {
        if buf.len() < 8 {
            return Err(Errno::EINVAL);
        }
        let taken = retry(&self.changed, nonblock, || {
            let mut c = self.count.lock();
            let take = if self.semaphore { 1.min(*c) } else { *c };
            *c -= take;
            if take > 0 {
                Ok(take)
            } else {
                Err(None)
            }
        })?;
        buf[..8].copy_from_slice(&taken.to_le_bytes());
        self.notify();
        Ok(8)
    }

    /// `write`: adds the 8-byte value; EINVAL for fewer bytes or `u64::MAX`, EAGAIN
    /// (`nonblock`) or a wait while the sum would pass the largest count, EINTR.
    pub fn write(&self, data: &[u8], nonblock: bool) -> Result<usize, Errno> {
        let Some(bytes) = data.get(..8) else {
            return Err(Errno::EINVAL);
        };
        let add = u64::from_le_bytes(bytes.try_into().expect("8 bytes"));
        if add == u64::MAX {
            return Err(Errno::EINVAL);
        }
        retry(&self.changed, nonblock, || {
            let mut c = self.count.lock();
            if MAX - *c >= add {
                *c += add;
                Ok(())
            } else {
                Err(None)
            }
        })?;
        if add > 0 {
            self.notify();
        }
        Ok(8)
    }

    /// `POLLIN` while the count is above 0, `POLLOUT` while 1 more fits.
    pub fn poll(&self) -> u16 {
        use abi::poll::{POLLIN, POLLOUT};
        let c = *self.count.lock();
        (if c > 0 { POLLIN } else { 0 }) | if c < MAX { POLLOUT } else { 0 }
    }
}

/// A timer's state, under its lock.
#[derive(Clone, Copy, Default)]
struct TimerState {
    /// The next expiry ([`crate::time::now_ns`]); 0 while disarmed.
    next: u64,
    /// Nanoseconds between expiries after the first; 0: once.
    interval: u64,
    /// Expirations not read yet.
    expired: u64,
}

impl TimerState {
    /// Counts the expiries up to `now` and moves `next` past it.
    fn catch_up(&mut self, now: u64) {
        if self.next == 0 || now < self.next {
            return;
        }
        match (now - self.next).checked_div(self.interval) {
            None => {
                self.expired += 1;
                self.next = 0;
            }
            Some(late) => {
                let n = 1 + late;
                self.expired = self.expired.saturating_add(n);
                self.next = self.next.saturating_add(n.saturating_mul(self.interval));
            }
        }
    }
}

/// A timer read through a descriptor.
pub struct TimerFd {
    /// Its number (`st_ino`, its poll key).
    pub id: u64,
    /// Its clock is `CLOCK_REALTIME` (absolute times are on that clock).
    realtime: bool,
    /// Deadline, interval and unread expirations.
    state: IrqMutex<TimerState>,
    /// Readers sleep here; bumped when it is set or expires.
    changed: WaitQueue,
}

/// The armed timers, for [`tick`] to notify their pollers when they expire.
static ARMED: IrqMutex<Vec<Weak<TimerFd>>> = IrqMutex::new(Vec::new());
/// [`ARMED`] is not empty (the tick skips its lock otherwise).
static ANY_ARMED: AtomicBool = AtomicBool::new(false);

impl TimerFd {
    /// A disarmed timer on the monotonic clock, or the real-time one.
    pub fn new(realtime: bool) -> Arc<TimerFd> {
        Arc::new(TimerFd {
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
            realtime,
            state: IrqMutex::new(TimerState::default()),
            changed: WaitQueue::new(),
        })
    }

    /// Wakes the readers and pollers.
    fn notify(&self) {
        self.changed.notify_all();
        POLL_WAKE.notify(PollKey::Event(self.id));
    }

    /// `timerfd_gettime`: the time to the next expiry and the interval.
    pub fn get(&self) -> Setting {
        let now = crate::time::now_ns();
        let mut s = self.state.lock();
        s.catch_up(now);
        Setting {
            value: if s.next == 0 { 0 } else { s.next - now },
            interval: s.interval,
        }
    }

    /// `timerfd_settime`: arms the timer (a `value` of 0 disarms it) relative to now, or at
    /// `value` on its clock if `absolute`; unread expirations are dropped. Returns the old
    /// setting. ENOMEM if the list of armed timers cannot grow.
    pub fn set(self: &Arc<Self>, new: Setting, absolute: bool) -> Result<Setting, Errno> {
        let now = crate::time::now_ns();
        let next = match (new.value, absolute) {
            (0, _) => 0,
            (v, false) => now.saturating_add(v),
            (v, true) => {
                let v = if self.realtime {
                    v.saturating_sub(crate::time::realtime_offset_ns())
                } else {
                    v
                };
                // A deadline already past expires at once.
                v.max(1)
            }
        };
        if next != 0 {
            let mut armed = ARMED.lock();
            armed.retain(|t| t.strong_count() > 0);
            if !armed.iter().any(|t| t.as_ptr() == Arc::as_ptr(self)) {
                armed.try_reserve(1).map_err(|_| Errno::ENOMEM)?;
                armed.push(Arc::downgrade(self));
            }
            ANY_ARMED.store(true, Ordering::Release);
        }
        let old = self.get();
        *self.state.lock() = TimerState {
            next,
            interval: new.interval,
            expired: 0,
        };
        self.notify();
        Ok(old)
    }

    /// `read`: the expirations since the last read as 8 bytes; EINVAL for a buffer shorter
    /// than 8 bytes, EAGAIN (`nonblock`) or a wait while there is none, EINTR.
    pub fn read(&self, buf: &mut [u8], nonblock: bool) -> Result<usize, Errno> {
        if buf.len() < 8 {
            return Err(Errno::EINVAL);
        }
        let expired = retry(&self.changed, nonblock, || {
            let mut s = self.state.lock();
            s.catch_up(crate::time::now_ns());
            match core::mem::take(&mut s.expired) {
                0 => Err((s.next != 0).then_some(s.next)),
                n => Ok(n),
            }
        })?;
        buf[..8].copy_from_slice(&expired.to_le_bytes());
        Ok(8)
    }

    /// `POLLIN` once it has expired since the last read.
    pub fn poll(&self) -> u16 {
        let mut s = self.state.lock();
        s.catch_up(crate::time::now_ns());
        if s.expired > 0 {
            abi::poll::POLLIN
        } else {
            0
        }
    }
}

/// Notifies the pollers of the armed timers that have expired (the boot core's tick); a timer
/// that will not expire again leaves the list.
pub fn tick() {
    if !ANY_ARMED.load(Ordering::Acquire) {
        return;
    }
    let now = crate::time::now_ns();
    let mut due: [Option<Arc<TimerFd>>; 8] = Default::default();
    let mut n = 0;
    {
        let mut armed = ARMED.lock();
        armed.retain(|w| {
            let Some(t) = w.upgrade() else {
                return false;
            };
            let s = *t.state.lock();
            if s.next == 0 {
                return false;
            }
            if s.next <= now && n < due.len() {
                due[n] = Some(t);
                n += 1;
            }
            true
        });
        ANY_ARMED.store(!armed.is_empty(), Ordering::Release);
    }
    for t in due.iter().flatten() {
        t.state.lock().catch_up(now);
        t.notify();
    }
}
