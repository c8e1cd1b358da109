//! Clocks and sleeping. Reef keeps one clock, the calibrated TSC (`crate::time`); the realtime
//! clock is that clock plus the wall time read from the CMOS RTC at boot.

use super::process::deadline_from;
use super::SysResult;
use crate::arch::idt::InterruptFrame;
use crate::proc::itimer;
use crate::proc::wait::{self, Wake};
use crate::proc::Thread;
use crate::uaccess::{self, read_user, write_user};
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

/// `setitimer`/`getitimer`'s `which`: the real-time timer (SIGALRM).
const ITIMER_REAL: u64 = 0;
/// `which`: the virtual timer (user time; SIGVTALRM), not built.
const ITIMER_VIRTUAL: u64 = 1;
/// `which`: the profiling timer (user and system time; SIGPROF), not built.
const ITIMER_PROF: u64 = 2;

/// Checks `which`: `ITIMER_REAL`; `ENOSYS` for the virtual and profiling timers (Reef keeps no
/// per-process CPU time), `EINVAL` for anything else.
fn itimer_which(which: u64) -> Result<(), Errno> {
    match which {
        ITIMER_REAL => Ok(()),
        ITIMER_VIRTUAL | ITIMER_PROF => Err(Errno::ENOSYS),
        _ => Err(Errno::EINVAL),
    }
}

/// A `struct timeval` as nanoseconds: `EINVAL` for a negative time or microseconds past 999999.
fn timeval_ns(tv: [i64; 2]) -> Result<u64, Errno> {
    if tv[0] < 0 || !(0..1_000_000).contains(&tv[1]) {
        return Err(Errno::EINVAL);
    }
    Ok((tv[0] as u64)
        .saturating_mul(1_000_000_000)
        .saturating_add(tv[1] as u64 * 1000))
}

/// Nanoseconds as a `struct timeval`, rounded up to a whole microsecond (an armed timer never
/// reads as 0).
fn timeval(ns: u64) -> [i64; 2] {
    let us = ns.div_ceil(1000);
    [(us / 1_000_000) as i64, (us % 1_000_000) as i64]
}

/// A timer setting as a `struct itimerval`: `it_interval`, then `it_value`.
fn itimerval(s: itimer::Setting) -> [i64; 4] {
    let [is, iu] = timeval(s.interval);
    let [vs, vu] = timeval(s.value);
    [is, iu, vs, vu]
}

/// `getitimer(which, curr)`: the real-time timer's interval and time to its next expiry (zeros
/// when disarmed).
pub fn getitimer(me: &Arc<Thread>, _: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    itimer_which(a[0])?;
    write_user(a[1], &itimerval(itimer::get(&me.process)))?;
    Ok(0)
}

/// `setitimer(which, new, old)`: arms the real-time timer to fire after `new`'s `it_value`
/// and then every `it_interval` (a zero value disarms it; a NULL `new` too, as Linux allows),
/// writing the previous setting to `old` if given; SIGALRM at each expiry.
pub fn setitimer(me: &Arc<Thread>, _: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    itimer_which(a[0])?;
    let new = if a[1] != 0 {
        let v: [i64; 4] = read_user(a[1])?;
        itimer::Setting {
            interval: timeval_ns([v[0], v[1]])?,
            value: timeval_ns([v[2], v[3]])?,
        }
    } else {
        itimer::Setting::default()
    };
    if a[2] != 0 {
        uaccess::check_range(a[2], 32)?;
    }
    let old = itimer::set(&me.process, new)?;
    if a[2] != 0 {
        write_user(a[2], &itimerval(old))?;
    }
    Ok(0)
}

/// `alarm(seconds)`: SIGALRM after `seconds` (0 cancels); returns the seconds the previous
/// alarm had left, rounded to the nearest, and at least 1 if it was armed (Linux's rule).
pub fn alarm(me: &Arc<Thread>, _: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    let secs = a[0] as u32;
    let old = itimer::set(
        &me.process,
        itimer::Setting {
            value: u64::from(secs) * 1_000_000_000,
            interval: 0,
        },
    )?;
    let [s, us] = timeval(old.value);
    let left = s as u64 + u64::from(us >= 500_000);
    Ok(if left == 0 && old.value != 0 { 1 } else { left })
}
