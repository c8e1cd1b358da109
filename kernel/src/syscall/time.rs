//! Clocks and sleeping. Reef keeps one clock, the calibrated TSC (`crate::time`); the realtime
//! clock is that clock plus the wall time read from the CMOS RTC at boot.

use super::process::deadline_from;
use super::SysResult;
use crate::arch::idt::InterruptFrame;
use crate::proc::wait::{self, Wake};
use crate::proc::Thread;
use crate::proc::{itimer, signal};
use crate::uaccess::{self, read_user, write_user};
use abi::Errno;
use alloc::sync::Arc;

/// `CLOCK_REALTIME`: wall-clock time.
const CLOCK_REALTIME: u64 = 0;
/// `CLOCK_REALTIME_COARSE`: wall-clock time, read here as `CLOCK_REALTIME`.
const CLOCK_REALTIME_COARSE: u64 = 5;
/// `CLOCK_TAI`: international atomic time, read here as `CLOCK_REALTIME`.
const CLOCK_TAI: u64 = 11;
/// `CLOCK_PROCESS_CPUTIME_ID`: the CPU time of the caller's process.
const CLOCK_PROCESS_CPUTIME_ID: u64 = 2;
/// `CLOCK_THREAD_CPUTIME_ID`: the CPU time of the calling thread.
const CLOCK_THREAD_CPUTIME_ID: u64 = 3;
/// Nanoseconds of one timer tick, the unit CPU time is sampled in (`sched::timer_tick`).
const TICK_NS: u64 = 10_000_000;
/// `TIMER_ABSTIME` for `clock_nanosleep`: the request is an absolute time on the clock.
const TIMER_ABSTIME: u64 = 1;

/// The current time of `clock` in ns for `me`; `EINVAL` for an unknown clock. The CPU-time
/// clocks count the timer ticks that found the process's or the thread's code running, user
/// and system (10 ms each, as `/proc/<pid>/stat` and `times` count them): sampled, not
/// measured, so a short run may read 0.
fn clock_ns(me: &Thread, clock: u64) -> Result<u64, Errno> {
    let ticks = |t: &[core::sync::atomic::AtomicU64; 2]| {
        t.iter()
            .map(|n| n.load(core::sync::atomic::Ordering::Relaxed))
            .sum::<u64>()
            * TICK_NS
    };
    match clock {
        CLOCK_REALTIME | CLOCK_REALTIME_COARSE | CLOCK_TAI => {
            Ok(crate::time::now_ns() + crate::time::realtime_offset_ns())
        }
        CLOCK_PROCESS_CPUTIME_ID => Ok(ticks(&me.process.cpu_ticks)),
        CLOCK_THREAD_CPUTIME_ID => Ok(ticks(&me.cpu_ticks)),
        // Monotonic, monotonic raw and coarse, boot time.
        1 | 4 | 6 | 7 => Ok(crate::time::now_ns()),
        _ => Err(Errno::EINVAL),
    }
}

/// `ns` as a `struct timespec`: seconds and nanoseconds.
fn timespec(ns: u64) -> [i64; 2] {
    [(ns / 1_000_000_000) as i64, (ns % 1_000_000_000) as i64]
}

/// `clock_gettime(clockid, tp)`: writes the clock's time; `EINVAL` for an unknown clock.
pub fn clock_gettime(me: &Arc<Thread>, _: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    let ns = clock_ns(me, a[0])?;
    write_user(a[1], &timespec(ns))?;
    Ok(0)
}

/// `clock_getres(clockid, res)`: a resolution of 1 ns for every known clock but the CPU-time
/// ones, whose unit is a timer tick (`EINVAL` for an unknown clock), written to `res` unless it
/// is NULL.
pub fn clock_getres(me: &Arc<Thread>, _: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    clock_ns(me, a[0])?;
    let res = match a[0] {
        CLOCK_PROCESS_CPUTIME_ID | CLOCK_THREAD_CPUTIME_ID => TICK_NS as i64,
        _ => 1,
    };
    if a[1] != 0 {
        write_user(a[1], &[0i64, res])?;
    }
    Ok(0)
}

/// `time(tloc)`: seconds since the epoch, also stored at `tloc` unless it is NULL.
pub fn time(me: &Arc<Thread>, _: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    let secs = clock_ns(me, CLOCK_REALTIME)? / 1_000_000_000;
    if a[0] != 0 {
        write_user(a[0], &(secs as i64))?;
    }
    Ok(secs)
}

/// `gettimeofday(tv, tz)`: the realtime clock in seconds and microseconds; the time zone, if asked
/// for, is all zeros (UTC).
pub fn gettimeofday(me: &Arc<Thread>, _: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    if a[0] != 0 {
        let ns = clock_ns(me, CLOCK_REALTIME)?;
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
/// time `req` on the clock; `EINVAL` for an unknown clock and for the thread's CPU-time clock,
/// `EOPNOTSUPP` for the process's (Linux's answers for a clock it cannot or will not sleep
/// on; Reef sleeps on its one clock). `rem` is written only for a relative sleep.
pub fn clock_nanosleep(me: &Arc<Thread>, _: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    let (clock, flags, req, rem) = (a[0], a[1], a[2], a[3]);
    match clock {
        CLOCK_THREAD_CPUTIME_ID => return Err(Errno::EINVAL),
        CLOCK_PROCESS_CPUTIME_ID => return Err(Errno::EOPNOTSUPP),
        _ => clock_ns(me, clock)?,
    };
    let absolute = flags & TIMER_ABSTIME != 0;
    let mut deadline = deadline_from(req, absolute)?.ok_or(Errno::EFAULT)?;
    if absolute && matches!(clock, CLOCK_REALTIME | CLOCK_REALTIME_COARSE | CLOCK_TAI) {
        deadline = deadline.saturating_sub(crate::time::realtime_offset_ns());
    }
    sleep_until_deadline(me, deadline, if absolute { 0 } else { rem })
}

/// `setitimer`/`getitimer`'s `which`: the real-time timer (SIGALRM).
const ITIMER_REAL: u64 = 0;
/// `which`: the virtual timer (user time; SIGVTALRM).
const ITIMER_VIRTUAL: u64 = 1;
/// `which`: the profiling timer (user and system time; SIGPROF).
const ITIMER_PROF: u64 = 2;

/// `which` of `setitimer`/`getitimer`: the real-time timer (`None`) or a CPU-time one;
/// `EINVAL` for anything else.
fn itimer_which(which: u64) -> Result<Option<itimer::Cpu>, Errno> {
    match which {
        ITIMER_REAL => Ok(None),
        ITIMER_VIRTUAL => Ok(Some(itimer::Cpu::Virtual)),
        ITIMER_PROF => Ok(Some(itimer::Cpu::Prof)),
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

/// `getitimer(which, curr)`: the interval of the real-time, virtual or profiling timer and
/// the time (real or CPU) to its next expiry (zeros when disarmed).
pub fn getitimer(me: &Arc<Thread>, _: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    let now = match itimer_which(a[0])? {
        None => itimer::get(&me.process),
        Some(kind) => itimer::get_cpu(&me.process, kind),
    };
    write_user(a[1], &itimerval(now))?;
    Ok(0)
}

/// `setitimer(which, new, old)`: arms the real-time timer (`ITIMER_REAL`, SIGALRM) or the
/// virtual (user CPU time, SIGVTALRM) or profiling one (user and system CPU time, SIGPROF)
/// to fire after `new`'s `it_value` of that time and then every `it_interval` (a zero value
/// disarms it; a NULL `new` too, as Linux allows), writing the previous setting to `old` if
/// given. CPU time is counted in timer ticks (10 ms).
pub fn setitimer(me: &Arc<Thread>, _: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    let which = itimer_which(a[0])?;
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
    let old = match which {
        None => itimer::set(&me.process, new)?,
        Some(kind) => itimer::set_cpu(&me.process, kind, new),
    };
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

/// `CLOCK_MONOTONIC`.
const CLOCK_MONOTONIC: u64 = 1;
/// `CLOCK_BOOTTIME` (Reef never suspends: the monotonic clock).
const CLOCK_BOOTTIME: u64 = 7;
/// `sigev_notify`: a signal to the process.
const SIGEV_SIGNAL: i32 = 0;
/// `sigev_notify`: nothing.
const SIGEV_NONE: i32 = 1;
/// `sigev_notify`: a function run in a new thread, which the C library makes; the kernel
/// sends the signal as for `SIGEV_SIGNAL` (as Linux does).
const SIGEV_THREAD: i32 = 2;
/// `sigev_notify`: a signal to one thread of the process.
const SIGEV_THREAD_ID: i32 = 4;
/// Size of `struct sigevent`.
const SIGEVENT: usize = 64;

/// Whether `clock` is a real clock a POSIX timer may count on (`CLOCK_REALTIME` and
/// `CLOCK_TAI`: true; `CLOCK_MONOTONIC`, `CLOCK_BOOTTIME`: false). The CPU-time clocks, the
/// raw and coarse clocks and the alarm clocks have no timers here (`EOPNOTSUPP`, Linux's
/// answer for a clock without timers); anything else is `EINVAL`.
fn timer_clock(clock: u64) -> Result<bool, Errno> {
    match clock {
        CLOCK_REALTIME | CLOCK_TAI => Ok(true),
        CLOCK_MONOTONIC | CLOCK_BOOTTIME => Ok(false),
        2..=6 | 8 | 9 => Err(Errno::EOPNOTSUPP),
        _ => Err(Errno::EINVAL),
    }
}

/// The `struct sigevent` at `at` as a timer's notification (`NULL`: SIGALRM with the timer's
/// id as its value, filled in by the caller); `EFAULT` for a bad pointer, `EINVAL` for an
/// unknown `sigev_notify`, a bad signal or a `SIGEV_THREAD_ID` thread not of the process
/// (Linux's `good_sigevent`).
fn sigevent(me: &Arc<Thread>, at: u64) -> Result<Option<itimer::Notify>, Errno> {
    if at == 0 {
        return Ok(None);
    }
    let raw: [u8; SIGEVENT] = read_user(at)?;
    let word = |i: usize| i32::from_le_bytes([raw[i], raw[i + 1], raw[i + 2], raw[i + 3]]);
    let value = u64::from_le_bytes(raw[..8].try_into().map_err(|_| Errno::EINVAL)?);
    let (signo, notify, tid) = (word(8), word(12), word(16));
    let thread = match notify {
        SIGEV_NONE => return Ok(Some(itimer::Notify::None)),
        SIGEV_SIGNAL | SIGEV_THREAD => None,
        SIGEV_THREAD_ID => {
            let tid = u32::try_from(tid).map_err(|_| Errno::EINVAL)?;
            if !me.process.threads.lock().iter().any(|t| t.tid == tid) {
                return Err(Errno::EINVAL);
            }
            Some(tid)
        }
        _ => return Err(Errno::EINVAL),
    };
    let sig = u32::try_from(signo).map_err(|_| Errno::EINVAL)?;
    if !(1..=signal::NSIG).contains(&sig) {
        return Err(Errno::EINVAL);
    }
    Ok(Some(itimer::Notify::Signal { sig, value, thread }))
}

/// `timer_create(clockid, sevp, timerid)`: a disarmed POSIX timer on `CLOCK_REALTIME`,
/// `CLOCK_MONOTONIC`, `CLOCK_BOOTTIME` or `CLOCK_TAI` that notifies as `sevp` says (NULL:
/// SIGALRM with `si_value` the timer's id); its id is written to `timerid`. `EAGAIN` past
/// `RLIMIT_SIGPENDING` (one unit per timer) or out of memory.
pub fn timer_create(me: &Arc<Thread>, _: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    let realtime = timer_clock(a[0])?;
    let notify = sigevent(me, a[1])?;
    uaccess::check_range(a[2], 4)?;
    let p = &me.process;
    let id = itimer::create(p, realtime, notify)?;
    if let Err(e) = write_user(a[2], &id) {
        let _ = itimer::delete(p, id);
        return Err(e);
    }
    Ok(0)
}

/// The timer id argument of the `timer_*` calls (Linux's `timer_t` is an `int`).
fn timer_id(arg: u64) -> i32 {
    arg as i32
}

/// `timer_settime(timerid, flags, new, old)`: arms the timer to fire after `new`'s value (with
/// `TIMER_ABSTIME`, at that time of its clock; a time already past fires at once) and then
/// every interval, or disarms it (a zero value), writing the old setting to `old` unless it is
/// NULL (after the change, as Linux). `EINVAL` for a NULL `new`, a bad `timespec` or no such
/// timer; other flag bits are ignored, as on Linux.
pub fn timer_settime(me: &Arc<Thread>, _: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    if a[2] == 0 {
        return Err(Errno::EINVAL);
    }
    let spec: [i64; 4] = read_user(a[2])?;
    let interval = timespec_ns(spec[0], spec[1])?;
    let value = timespec_ns(spec[2], spec[3])?;
    let p = &me.process;
    let id = timer_id(a[0]);
    let absolute = a[1] & TIMER_ABSTIME != 0;
    let deadline = |realtime: bool| match value {
        0 => None,
        v if !absolute => Some(crate::time::now_ns().saturating_add(v)),
        v if realtime => Some(v.saturating_sub(crate::time::realtime_offset_ns())),
        v => Some(v),
    };
    let old = itimer::posix_set(p, id, deadline, interval)?;
    if a[3] != 0 {
        write_user(a[3], &itimerspec(old))?;
    }
    Ok(0)
}

/// `timer_gettime(timerid, curr)`: the time to the timer's next expiry (0: disarmed) and its
/// interval; `EINVAL` for no such timer.
pub fn timer_gettime(me: &Arc<Thread>, _: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    let now = itimer::posix_get(&me.process, timer_id(a[0]))?;
    write_user(a[1], &itimerspec(now))?;
    Ok(0)
}

/// `timer_getoverrun(timerid)`: the overrun count of the timer's last signal taken;
/// `EINVAL` for no such timer.
pub fn timer_getoverrun(me: &Arc<Thread>, _: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    Ok(u64::from(itimer::overrun(&me.process, timer_id(a[0]))?))
}

/// `timer_delete(timerid)`: deletes the timer (and its signal, if still pending); `EINVAL` for
/// no such timer.
pub fn timer_delete(me: &Arc<Thread>, _: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    itimer::delete(&me.process, timer_id(a[0]))?;
    Ok(0)
}

/// Nanoseconds of a `struct timespec`: `EINVAL` if negative or its nanoseconds out of range.
fn timespec_ns(sec: i64, nsec: i64) -> Result<u64, Errno> {
    if sec < 0 || !(0..1_000_000_000).contains(&nsec) {
        return Err(Errno::EINVAL);
    }
    Ok((sec as u64)
        .saturating_mul(1_000_000_000)
        .saturating_add(nsec as u64))
}

/// A setting as `struct itimerspec` (interval first, then value).
fn itimerspec(s: itimer::Setting) -> [i64; 4] {
    let [is, ins] = timespec(s.interval);
    let [vs, vns] = timespec(s.value);
    [is, ins, vs, vns]
}
