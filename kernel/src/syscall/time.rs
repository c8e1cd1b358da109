//! Clocks and sleeping. Reef keeps one clock, the calibrated TSC (`crate::time`); the realtime
//! clock is that clock plus the wall time read from the CMOS RTC at boot.

use super::process::deadline_from;
use super::SysResult;
use crate::arch::idt::InterruptFrame;
use crate::proc::wait::{self, Wake};
use crate::proc::Thread;
use crate::uaccess::write_user;
use abi::Errno;
use alloc::sync::Arc;

/// `CLOCK_REALTIME`: wall-clock time.
const CLOCK_REALTIME: u64 = 0;
/// `CLOCK_REALTIME_COARSE`: wall-clock time, read here as `CLOCK_REALTIME`.
const CLOCK_REALTIME_COARSE: u64 = 5;
/// `CLOCK_TAI`: international atomic time, read here as `CLOCK_REALTIME`.
const CLOCK_TAI: u64 = 11;
/// `TIMER_ABSTIME` for `clock_nanosleep`: the request is an absolute time on the clock.
const TIMER_ABSTIME: u64 = 1;

/// The current time of `clock` in ns; `EINVAL` for an unknown clock.
fn clock_ns(clock: u64) -> Result<u64, Errno> {
    match clock {
        CLOCK_REALTIME | CLOCK_REALTIME_COARSE | CLOCK_TAI => {
            Ok(crate::time::now_ns() + crate::time::realtime_offset_ns())
        }
        // Monotonic, process/thread CPU time (approximated by the monotonic clock, see
        // docs/architecture.md), monotonic raw and coarse, boot time.
        1..=4 | 6 | 7 => Ok(crate::time::now_ns()),
        _ => Err(Errno::EINVAL),
    }
}

/// `ns` as a `struct timespec`: seconds and nanoseconds.
fn timespec(ns: u64) -> [i64; 2] {
    [(ns / 1_000_000_000) as i64, (ns % 1_000_000_000) as i64]
}

/// `clock_gettime(clockid, tp)`: writes the clock's time; `EINVAL` for an unknown clock.
pub fn clock_gettime(_: &Arc<Thread>, _: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    let ns = clock_ns(a[0])?;
    write_user(a[1], &timespec(ns))?;
    Ok(0)
}

/// `clock_getres(clockid, res)`: a resolution of 1 ns for every known clock (`EINVAL` otherwise),
/// written to `res` unless it is NULL.
pub fn clock_getres(_: &Arc<Thread>, _: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    clock_ns(a[0])?;
    if a[1] != 0 {
        write_user(a[1], &[0i64, 1])?;
    }
    Ok(0)
}

/// `time(tloc)`: seconds since the epoch, also stored at `tloc` unless it is NULL.
pub fn time(_: &Arc<Thread>, _: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    let secs = clock_ns(CLOCK_REALTIME)? / 1_000_000_000;
    if a[0] != 0 {
        write_user(a[0], &(secs as i64))?;
    }
    Ok(secs)
}

/// `gettimeofday(tv, tz)`: the realtime clock in seconds and microseconds; the time zone, if asked
/// for, is all zeros (UTC).
pub fn gettimeofday(_: &Arc<Thread>, _: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    if a[0] != 0 {
        let ns = clock_ns(CLOCK_REALTIME)?;
        write_user(
            a[0],
            &[
                (ns / 1_000_000_000) as i64,
                ((ns % 1_000_000_000) / 1000) as i64,
            ],
        )?;
    }
    if a[1] != 0 {
        write_user(a[1], &[0i32, 0])?;
    }
    Ok(0)
}

/// Sleeps until `deadline` on the monotonic clock; `EINTR` (with the time left written to
/// `rem`, if given) when a signal arrives.
fn sleep_until_deadline(me: &Arc<Thread>, deadline: u64, rem: u64) -> SysResult {
    loop {
        let now = crate::time::now_ns();
        if now >= deadline {
            return Ok(0);
        }
        if wait::sleep_until(me, deadline) == Wake::Interrupted {
            if rem != 0 {
                let left = deadline.saturating_sub(crate::time::now_ns());
                write_user(rem, &timespec(left))?;
            }
            return Err(Errno::EINTR);
        }
    }
}

/// `nanosleep(req, rem)`: sleeps for the relative time `req` (`EFAULT` for NULL, `EINVAL` for a bad
/// value); `EINTR` with the time left in `rem` if a signal arrives.
pub fn nanosleep(me: &Arc<Thread>, _: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    let deadline = deadline_from(a[0], false)?.ok_or(Errno::EFAULT)?;
    sleep_until_deadline(me, deadline, a[1])
}

/// `clock_nanosleep(clockid, flags, req, rem)`: sleeps for `req`, or with `TIMER_ABSTIME` until the
/// time `req` on the clock; `EINVAL` for an unknown clock. `rem` is written only for a relative
/// sleep.
pub fn clock_nanosleep(me: &Arc<Thread>, _: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    let (clock, flags, req, rem) = (a[0], a[1], a[2], a[3]);
    clock_ns(clock)?;
    let absolute = flags & TIMER_ABSTIME != 0;
    let mut deadline = deadline_from(req, absolute)?.ok_or(Errno::EFAULT)?;
    if absolute && matches!(clock, CLOCK_REALTIME | CLOCK_REALTIME_COARSE | CLOCK_TAI) {
        deadline = deadline.saturating_sub(crate::time::realtime_offset_ns());
    }
    sleep_until_deadline(me, deadline, if absolute { 0 } else { rem })
}
