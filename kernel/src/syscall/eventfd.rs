//! `eventfd`, `eventfd2` and the `timerfd_*` calls: descriptors for an event counter and a
//! timer (`fs::eventfd`), read and written through the ordinary calls and watched by `poll`,
//! `select` and `epoll`.

use super::SysResult;
use crate::arch::idt::InterruptFrame;
use crate::fd::{Node, OpenFile, O_NONBLOCK, O_RDWR};
use crate::fs::eventfd::{EventFd, Setting, TimerFd};
use crate::fs::flags::O_CLOEXEC;
use crate::proc::Thread;
use crate::uaccess::{read_user, write_user};
use abi::Errno;
use alloc::sync::Arc;

/// `EFD_SEMAPHORE`: a read takes 1 from the counter.
const EFD_SEMAPHORE: u64 = 1;
/// `TFD_TIMER_ABSTIME`: the new value is an absolute time on the timer's clock.
const TFD_TIMER_ABSTIME: u64 = 1;
/// `TFD_TIMER_CANCEL_ON_SET`: cancel a real-time timer when the clock is set (accepted: Reef's
/// real-time clock is never set).
const TFD_TIMER_CANCEL_ON_SET: u64 = 2;
/// `CLOCK_REALTIME`.
const CLOCK_REALTIME: u64 = 0;
/// `CLOCK_MONOTONIC`.
const CLOCK_MONOTONIC: u64 = 1;
/// `CLOCK_BOOTTIME` (Reef never suspends: the monotonic clock).
const CLOCK_BOOTTIME: u64 = 7;
/// `CLOCK_REALTIME_ALARM` and `CLOCK_BOOTTIME_ALARM`: need `CAP_WAKE_ALARM`.
const ALARM_CLOCKS: [u64; 2] = [8, 9];

/// Installs `node` as a new descriptor named `name`, open for reading and writing (a timer's
/// write then answers EINVAL, as on Linux), with the `O_CLOEXEC` and `O_NONBLOCK` bits of
/// `flags`.
pub(super) fn install(me: &Arc<Thread>, node: Node, flags: u64, name: &[u8]) -> SysResult {
    let nonblock = flags as u32 & O_NONBLOCK;
    let f = OpenFile::new(node, O_RDWR | nonblock, name.to_vec());
    let fd = me
        .process
        .files
        .lock()
        .insert(f, flags & u64::from(O_CLOEXEC) != 0, 0)?;
    Ok(fd as u64)
}

/// `eventfd2(initval, flags)`: a counter starting at `initval`; flags `EFD_CLOEXEC`,
/// `EFD_NONBLOCK`, `EFD_SEMAPHORE` (others EINVAL).
pub fn eventfd2(me: &Arc<Thread>, _: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    let allowed = u64::from(O_CLOEXEC | O_NONBLOCK) | EFD_SEMAPHORE;
    if a[1] & !allowed != 0 {
        return Err(Errno::EINVAL);
    }
    let e = EventFd::new(a[0] as u32, a[1] & EFD_SEMAPHORE != 0);
    install(me, Node::EventFd(e), a[1], b"anon_inode:[eventfd]")
}

/// `eventfd(initval)`: `eventfd2` without flags.
pub fn eventfd(me: &Arc<Thread>, f: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    eventfd2(me, f, [a[0], 0, 0, 0, 0, 0])
}

/// `timerfd_create(clockid, flags)`: a disarmed timer on `CLOCK_REALTIME`, `CLOCK_MONOTONIC`
/// or `CLOCK_BOOTTIME` (the alarm clocks EPERM, others EINVAL); flags `TFD_CLOEXEC`,
/// `TFD_NONBLOCK`.
pub fn timerfd_create(me: &Arc<Thread>, _: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    if a[1] & !u64::from(O_CLOEXEC | O_NONBLOCK) != 0 {
        return Err(Errno::EINVAL);
    }
    let realtime = match a[0] {
        CLOCK_REALTIME => true,
        CLOCK_MONOTONIC | CLOCK_BOOTTIME => false,
        c if ALARM_CLOCKS.contains(&c) => return Err(Errno::EPERM),
        _ => return Err(Errno::EINVAL),
    };
    let t = TimerFd::new(realtime);
    install(me, Node::TimerFd(t), a[1], b"anon_inode:[timerfd]")
}

/// The timer open as `fd`: EBADF for no descriptor, EINVAL for another kind of file.
fn timer_of(me: &Arc<Thread>, fd: u64) -> Result<Arc<TimerFd>, Errno> {
    let f = me.process.files.lock().get(fd as i32)?;
    match &f.node {
        Node::TimerFd(t) => Ok(t.clone()),
        _ => Err(Errno::EINVAL),
    }
}

/// Nanoseconds of a `struct timespec` (EINVAL if negative or its nanoseconds out of range).
fn ns(sec: i64, nsec: i64) -> Result<u64, Errno> {
    if sec < 0 || !(0..1_000_000_000).contains(&nsec) {
        return Err(Errno::EINVAL);
    }
    Ok((sec as u64)
        .saturating_mul(1_000_000_000)
        .saturating_add(nsec as u64))
}

/// A setting as `struct itimerspec` (interval first, then value).
fn itimerspec(s: Setting) -> [i64; 4] {
    let split = |v: u64| [(v / 1_000_000_000) as i64, (v % 1_000_000_000) as i64];
    let [is, ins] = split(s.interval);
    let [vs, vns] = split(s.value);
    [is, ins, vs, vns]
}

/// `timerfd_settime(fd, flags, new, old)`: arms or disarms the timer (`TFD_TIMER_ABSTIME`:
/// `new`'s value is a time on its clock) and writes the old setting to `old` unless it is
/// NULL; EINVAL for unknown flags or a bad `timespec`.
pub fn timerfd_settime(me: &Arc<Thread>, _: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    if a[1] & !(TFD_TIMER_ABSTIME | TFD_TIMER_CANCEL_ON_SET) != 0 {
        return Err(Errno::EINVAL);
    }
    let t = timer_of(me, a[0])?;
    let spec: [i64; 4] = read_user(a[2])?;
    let new = Setting {
        interval: ns(spec[0], spec[1])?,
        value: ns(spec[2], spec[3])?,
    };
    let old = t.set(new, a[1] & TFD_TIMER_ABSTIME != 0)?;
    if a[3] != 0 {
        write_user(a[3], &itimerspec(old))?;
    }
    Ok(0)
}

/// `timerfd_gettime(fd, curr)`: the time to the next expiry (0: disarmed) and the interval.
pub fn timerfd_gettime(me: &Arc<Thread>, _: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    let t = timer_of(me, a[0])?;
    write_user(a[1], &itimerspec(t.get()))?;
    Ok(0)
}
