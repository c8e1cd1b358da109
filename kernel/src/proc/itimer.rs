//! The timers of a process: the three interval timers (`ITIMER_REAL`: `alarm`, `setitimer`,
//! `getitimer`, SIGALRM; `ITIMER_VIRTUAL`, user time, SIGVTALRM; `ITIMER_PROF`, user and
//! system time, SIGPROF) and POSIX per-process timers (`timer_create` and friends).
//!
//! Timers on the real clocks (`ITIMER_REAL` and POSIX timers) are one list, [`ARMED`], looked
//! at by the boot core's timer tick ([`tick`], from the interrupt handler, as the console is;
//! one atomic load of the earliest deadline, [`NEXT`], when none is due), so a timer fires up
//! to one tick (10 ms) late, as Linux's may by its timer slack. The CPU-time timers
//! (`ITIMER_VIRTUAL`, `ITIMER_PROF`) count the ticks `sched::account_tick` samples, so their
//! resolution is one tick too: [`cpu_tick`] runs from every core's tick for a process that has
//! one armed (one atomic load otherwise). A tick only moves what expired to a second list,
//! [`DUE`]; the signals go out, as the console's do, on the next return to user mode or pass
//! of an idle loop on any core ([`send_due`]), where dropping a process's last reference is
//! safe. The lists hold each process's `Arc` until its timer fires for good or it exits
//! ([`forget`]). Interval timers survive `execve`, POSIX timers are deleted by it, and
//! `fork` inherits neither, as on Linux.
//!
//! A POSIX timer's signal is queued once at a time, as Linux's preallocated `sigqueue`: an
//! expiry while it is still pending adds to that signal's overrun count (`si_overrun`) instead
//! (`signal::Queue`), and the count of the last signal taken is what `timer_getoverrun`
//! answers ([`delivered`]). Each timer holds one unit of `RLIMIT_SIGPENDING`
//! (`Process::rt_queued`) while it exists, as Linux charges its `sigqueue`: past the limit
//! `timer_create` answers `EAGAIN`.

use super::signal::{self, SigInfo, SIGALRM};
use super::{Pid, Process};
use crate::sync::IrqMutex;
use abi::Errno;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// `SIGVTALRM`: the virtual timer expired.
const SIGVTALRM: u32 = 26;
/// `SIGPROF`: the profiling timer expired.
const SIGPROF: u32 = 27;
/// CPU time one timer tick stands for.
const TICK_NS: u64 = 1_000_000_000 / crate::time::TIMER_HZ;
/// Linux's `DELAYTIMER_MAX`: an overrun count stops growing there.
const OVERRUN_MAX: u32 = i32::MAX as u32;

/// Which timer of a process an armed or expired entry is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Which {
    /// `ITIMER_REAL`.
    Real,
    /// `ITIMER_VIRTUAL`.
    Virtual,
    /// `ITIMER_PROF`.
    Prof,
    /// The POSIX timer with this id.
    Posix(i32),
}

/// An interval timer counting CPU time: `ITIMER_VIRTUAL` or `ITIMER_PROF`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cpu {
    /// User time (`ITIMER_VIRTUAL`).
    Virtual,
    /// User and system time (`ITIMER_PROF`).
    Prof,
}

/// One armed timer on the real clocks.
struct Armed {
    /// When it fires ([`crate::time::now_ns`]).
    deadline: u64,
    /// Nanoseconds between firings after the first; 0: once.
    interval: u64,
    /// Whose it is.
    process: Arc<Process>,
    /// Which of its timers.
    which: Which,
    /// The setting it belongs to (a POSIX timer's [`Posix::generation`]).
    generation: u64,
}

/// An expiry whose signal is still to be sent.
struct Due {
    /// Whose timer expired.
    process: Arc<Process>,
    /// Which.
    which: Which,
    /// The setting that expired (a POSIX timer set again since sends nothing).
    generation: u64,
    /// Further expirations it stands for (a tick late by more than an interval).
    missed: u32,
}

/// Every armed timer on the real clocks.
static ARMED: IrqMutex<Vec<Armed>> = IrqMutex::new(Vec::new());
/// The earliest deadline in [`ARMED`] (`u64::MAX`: none), so the tick needs no lock while
/// nothing is due.
static NEXT: AtomicU64 = AtomicU64::new(u64::MAX);
/// Expiries whose signals [`send_due`] sends.
static DUE: IrqMutex<Vec<Due>> = IrqMutex::new(Vec::new());
/// [`DUE`] is not empty.
static DUE_PENDING: AtomicBool = AtomicBool::new(false);

/// A timer's setting: nanoseconds to the next expiry (0: disarmed) and the interval.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Setting {
    /// Nanoseconds until it fires; 0 when it is not armed.
    pub value: u64,
    /// Nanoseconds between firings after that; 0: once.
    pub interval: u64,
}

/// What a POSIX timer does when it expires (its `sigevent`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Notify {
    /// `SIGEV_NONE`: nothing (the timer only counts down).
    None,
    /// `SIGEV_SIGNAL` (and `SIGEV_THREAD`, whose thread the C library makes) or
    /// `SIGEV_THREAD_ID`: signal `sig` with `si_value` `value`, to the process or to its thread
    /// `thread`.
    Signal {
        /// The signal.
        sig: u32,
        /// `sigev_value`, given back as `si_value`.
        value: u64,
        /// The thread it goes to (`SIGEV_THREAD_ID`), else any thread of the process.
        thread: Option<Pid>,
    },
}

/// A POSIX timer (`timer_create`).
struct Posix {
    /// Its id (`timer_t`), unique in the process.
    id: i32,
    /// It counts on `CLOCK_REALTIME` (else on the monotonic clock).
    realtime: bool,
    /// What its expiry does.
    notify: Notify,
    /// Its current setting's number: an expiry of an earlier one sends nothing.
    generation: u64,
    /// The overrun count of its last signal taken (`timer_getoverrun`).
    overrun_last: u32,
}

/// A CPU-time interval timer's state.
#[derive(Clone, Copy, Debug, Default)]
struct CpuTimer {
    /// The process's CPU time (of its kind) at which it fires, in ns; 0: disarmed.
    deadline: u64,
    /// Nanoseconds of CPU time between firings; 0: once.
    interval: u64,
}

/// The POSIX and CPU-time timers of a process (`Process::timers`).
pub struct Timers {
    /// Its POSIX timers and CPU-time timers.
    state: IrqMutex<State>,
    /// A CPU-time timer is armed: the tick looks at [`State::cpu`].
    cpu_armed: AtomicBool,
}

/// What [`Timers::state`] guards.
struct State {
    /// POSIX timers, by increasing id.
    posix: Vec<Posix>,
    /// The id the next POSIX timer gets (if free), as Linux's `next_posix_timer_id`.
    next_id: i32,
    /// The last setting number handed out.
    generation: u64,
    /// `ITIMER_VIRTUAL` and `ITIMER_PROF`.
    cpu: [CpuTimer; 2],
}

impl Timers {
    /// No timers.
    pub const fn new() -> Self {
        Timers {
            state: IrqMutex::new(State {
                posix: Vec::new(),
                next_id: 0,
                generation: 0,
                cpu: [CpuTimer {
                    deadline: 0,
                    interval: 0,
                }; 2],
            }),
            cpu_armed: AtomicBool::new(false),
        }
    }
}

impl Default for Timers {
    fn default() -> Self {
        Self::new()
    }
}

impl State {
    /// The index of POSIX timer `id`; `EINVAL` if there is none.
    fn find(&self, id: i32) -> Result<usize, Errno> {
        self.posix
            .binary_search_by_key(&id, |t| t.id)
            .map_err(|_| Errno::EINVAL)
    }
}

/// The setting of `p`'s timer `which` in `armed`.
fn armed_get(armed: &[Armed], p: &Arc<Process>, which: Which) -> Setting {
    let now = crate::time::now_ns();
    armed
        .iter()
        .find(|a| a.which == which && Arc::ptr_eq(&a.process, p))
        .map_or(Setting::default(), |a| Setting {
            // An expired timer the tick has not handled yet is due now: 1 ns, not 0 (disarmed).
            value: a.deadline.saturating_sub(now).max(1),
            interval: a.interval,
        })
}

/// Arms `p`'s timer `which` to fire at `deadline` (on the monotonic clock) and then every
/// `interval` ns, or disarms it (`deadline` `None`); returns the setting it had, or `ENOMEM`
/// (nothing changed) if the list cannot grow.
fn armed_set(
    p: &Arc<Process>,
    which: Which,
    generation: u64,
    deadline: Option<u64>,
    interval: u64,
) -> Result<Setting, Errno> {
    let mut armed = ARMED.lock();
    let old = armed_get(&armed, p, which);
    if deadline.is_some() {
        armed.try_reserve(1).map_err(|_| Errno::ENOMEM)?;
    }
    armed.retain(|a| a.which != which || !Arc::ptr_eq(&a.process, p));
    if let Some(deadline) = deadline {
        armed.push(Armed {
            deadline,
            interval,
            process: p.clone(),
            which,
            generation,
        });
        NEXT.fetch_min(deadline, Ordering::AcqRel);
    }
    Ok(old)
}

/// `p`'s real-time interval timer (`ITIMER_REAL`) now.
pub fn get(p: &Arc<Process>) -> Setting {
    armed_get(&ARMED.lock(), p, Which::Real)
}

/// Sets `p`'s real-time interval timer to `new` (a `value` of 0 disarms it) and returns the
/// setting it had; `ENOMEM` if the list cannot grow.
pub fn set(p: &Arc<Process>, new: Setting) -> Result<Setting, Errno> {
    let deadline = (new.value != 0).then(|| crate::time::now_ns().saturating_add(new.value));
    armed_set(p, Which::Real, 0, deadline, new.interval)
}

/// The CPU time `kind` counts of `p`, in ns (its sampled ticks).
fn cpu_ns(p: &Process, kind: Cpu) -> u64 {
    let user = p.cpu_ticks[0].load(Ordering::Relaxed);
    let ticks = match kind {
        Cpu::Virtual => user,
        Cpu::Prof => user + p.cpu_ticks[1].load(Ordering::Relaxed),
    };
    ticks.saturating_mul(TICK_NS)
}

/// `p`'s CPU-time interval timer `kind` now (`getitimer`).
pub fn get_cpu(p: &Process, kind: Cpu) -> Setting {
    let t = p.timers.state.lock().cpu[kind as usize];
    if t.deadline == 0 {
        return Setting::default();
    }
    Setting {
        value: t.deadline.saturating_sub(cpu_ns(p, kind)).max(1),
        interval: t.interval,
    }
}

/// Sets `p`'s CPU-time interval timer `kind` to `new` (a `value` of 0 disarms it): it
/// expires once the process has spent `new.value` and one tick more of that CPU time (the
/// tick Linux's `set_cpu_itimer` adds, so sampling cannot make it early). Returns the old
/// setting.
pub fn set_cpu(p: &Process, kind: Cpu, new: Setting) -> Setting {
    let old = get_cpu(p, kind);
    let mut s = p.timers.state.lock();
    s.cpu[kind as usize] = if new.value == 0 {
        CpuTimer::default()
    } else {
        CpuTimer {
            deadline: cpu_ns(p, kind)
                .saturating_add(new.value)
                .saturating_add(TICK_NS),
            interval: new.interval,
        }
    };
    let any = s.cpu.iter().any(|t| t.deadline != 0);
    p.timers.cpu_armed.store(any, Ordering::Release);
    old
}

/// Whether `p` has a CPU-time timer armed (the tick's cheap check before [`cpu_tick`]).
pub fn cpu_armed(p: &Process) -> bool {
    p.timers.cpu_armed.load(Ordering::Relaxed)
}

/// Fires `p`'s CPU-time timers whose CPU time has come (for [`send_due`]), re-arming those
/// with an interval. Called from the tick of any core that just counted a tick of `p`.
pub fn cpu_tick(p: &Arc<Process>) {
    let mut s = p.timers.state.lock();
    let mut due = DUE.lock();
    for (kind, which) in [(Cpu::Virtual, Which::Virtual), (Cpu::Prof, Which::Prof)] {
        let t = &mut s.cpu[kind as usize];
        let now = cpu_ns(p, kind);
        if t.deadline == 0 || now < t.deadline || due.try_reserve(1).is_err() {
            // Not yet, or no memory for the signal: then it fires at a later tick.
            continue;
        }
        due.push(Due {
            process: p.clone(),
            which,
            generation: 0,
            missed: 0,
        });
        t.deadline = if t.interval == 0 {
            0
        } else {
            // As Linux, one signal however far past the deadline the sampled time went.
            let late = now - t.deadline;
            now.saturating_add(t.interval - late % t.interval)
        };
    }
    if !due.is_empty() {
        DUE_PENDING.store(true, Ordering::Release);
    }
    let any = s.cpu.iter().any(|t| t.deadline != 0);
    p.timers.cpu_armed.store(any, Ordering::Release);
}

/// Makes a disarmed POSIX timer of `p` on a real clock (`realtime`: `CLOCK_REALTIME`, whose
/// absolute times are moved onto the monotonic clock) that does `notify` (`None`: SIGALRM to
/// the process with its id as the value); returns its id. `EAGAIN` past `p`'s
/// `RLIMIT_SIGPENDING` (each timer holds one unit of it) or out of memory.
pub fn create(p: &Arc<Process>, realtime: bool, notify: Option<Notify>) -> Result<i32, Errno> {
    let limit = usize::try_from(p.signals.lock().limit[0]).unwrap_or(usize::MAX);
    p.rt_queued
        .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
            (n < limit).then_some(n + 1)
        })
        .map_err(|_| Errno::EAGAIN)?;
    let made = {
        let mut s = p.timers.state.lock();
        if s.posix.try_reserve(1).is_err() {
            Err(Errno::EAGAIN)
        } else {
            // The next free id from `next_id` on, wrapping at `INT_MAX` as Linux does; there
            // are fewer timers than ids (the limit is a `usize` of queued signals, far below).
            let mut id = s.next_id;
            while s.find(id).is_ok() {
                id = id.checked_add(1).unwrap_or(0);
            }
            s.next_id = id.checked_add(1).unwrap_or(0);
            let at = s.posix.partition_point(|t| t.id < id);
            s.posix.insert(
                at,
                Posix {
                    id,
                    realtime,
                    notify: notify.unwrap_or(Notify::Signal {
                        sig: SIGALRM,
                        value: id as u64,
                        thread: None,
                    }),
                    generation: 0,
                    overrun_last: 0,
                },
            );
            Ok(id)
        }
    };
    if made.is_err() {
        p.rt_queued.fetch_sub(1, Ordering::AcqRel);
    }
    made
}

/// Deletes `p`'s POSIX timer `id` (`timer_delete`), with its signal if still pending;
/// `EINVAL` if there is none.
pub fn delete(p: &Arc<Process>, id: i32) -> Result<(), Errno> {
    {
        let mut s = p.timers.state.lock();
        let at = s.find(id)?;
        s.posix.remove(at);
        if s.posix.is_empty() {
            s.posix = Vec::new();
        }
        let _ = armed_set(p, Which::Posix(id), 0, None, 0);
    }
    p.rt_queued.fetch_sub(1, Ordering::AcqRel);
    signal::forget_timers(p, Some(id as u32));
    Ok(())
}

/// `p`'s POSIX timer `id` now (`timer_gettime`); `EINVAL` if there is none.
pub fn posix_get(p: &Arc<Process>, id: i32) -> Result<Setting, Errno> {
    let s = p.timers.state.lock();
    s.find(id)?;
    // The list's guard goes at the end of this statement, before `s`: as a temporary of the
    // tail expression it would outlive `s` (see `IrqMutexGuard::drop`).
    let now = armed_get(&ARMED.lock(), p, Which::Posix(id));
    Ok(now)
}

/// Sets `p`'s POSIX timer `id` (`timer_settime`) to fire at `deadline(realtime)`, a time
/// on the monotonic clock (a time already past: at the next tick; `realtime`: the timer is on
/// `CLOCK_REALTIME`), and then every `interval` ns, or disarms it (`None`); returns the old
/// setting. `EINVAL` if there is no such timer, `ENOMEM` if the list of armed timers cannot
/// grow.
pub fn posix_set(
    p: &Arc<Process>,
    id: i32,
    deadline: impl FnOnce(bool) -> Option<u64>,
    interval: u64,
) -> Result<Setting, Errno> {
    let mut s = p.timers.state.lock();
    let at = s.find(id)?;
    let deadline = deadline(s.posix[at].realtime);
    let interval = if deadline.is_some() { interval } else { 0 };
    s.generation += 1;
    let generation = s.generation;
    s.posix[at].generation = generation;
    armed_set(p, Which::Posix(id), generation, deadline, interval)
}

/// The overrun count of the last signal taken of `p`'s POSIX timer `id`
/// (`timer_getoverrun`); `EINVAL` if there is none.
pub fn overrun(p: &Arc<Process>, id: i32) -> Result<u32, Errno> {
    let s = p.timers.state.lock();
    let at = s.find(id)?;
    Ok(s.posix[at].overrun_last)
}

/// A signal of `p`'s POSIX timer `id` with overrun count `overrun` was taken (delivered,
/// waited for or read from a signal descriptor): `timer_getoverrun` answers that count now.
pub fn delivered(p: &Process, id: i32, overrun: u32) {
    let mut s = p.timers.state.lock();
    if let Ok(at) = s.find(id) {
        s.posix[at].overrun_last = overrun;
    }
}

/// `execve`: `p`'s POSIX timers are deleted, with their pending signals; its interval timers
/// stay.
pub fn exec(p: &Arc<Process>) {
    let gone = {
        let mut s = p.timers.state.lock();
        let gone = core::mem::take(&mut s.posix);
        ARMED
            .lock()
            .retain(|a| !matches!(a.which, Which::Posix(_)) || !Arc::ptr_eq(&a.process, p));
        gone
    };
    p.rt_queued.fetch_sub(gone.len(), Ordering::AcqRel);
    signal::forget_timers(p, None);
}

/// `p` exits: every timer is disarmed and deleted, letting go of the process.
pub fn forget(p: &Arc<Process>) {
    let (posix, gone) = {
        let mut s = p.timers.state.lock();
        let posix = core::mem::take(&mut s.posix);
        s.cpu = [CpuTimer::default(); 2];
        p.timers.cpu_armed.store(false, Ordering::Release);
        let mut armed = ARMED.lock();
        let (gone, kept): (Vec<Armed>, Vec<Armed>) = core::mem::take(&mut *armed)
            .into_iter()
            .partition(|a| Arc::ptr_eq(&a.process, p));
        *armed = kept;
        (posix, gone)
    };
    p.rt_queued.fetch_sub(posix.len(), Ordering::AcqRel);
    drop(gone);
}

/// Takes the timers that expired for [`send_due`], and re-arms those with an interval (from
/// their deadline, so they do not drift). Called by the boot core's tick.
pub fn tick() {
    let now = crate::time::now_ns();
    if NEXT.load(Ordering::Acquire) > now {
        return;
    }
    let mut armed = ARMED.lock();
    let mut due = DUE.lock();
    let _ = due.try_reserve(armed.len());
    let mut next = u64::MAX;
    armed.retain_mut(|a| {
        if a.deadline > now || due.len() == due.capacity() {
            // Not yet, or no memory for the list of signals to send: a later tick.
            next = next.min(a.deadline.max(now + 1));
            return true;
        }
        let late = now - a.deadline;
        let missed = late.checked_div(a.interval).unwrap_or(0);
        due.push(Due {
            process: a.process.clone(),
            which: a.which,
            generation: a.generation,
            missed: u32::try_from(missed).unwrap_or(OVERRUN_MAX),
        });
        if a.interval == 0 {
            return false;
        }
        // Missed expiries are not signalled again: a POSIX timer counts them as overruns,
        // `ITIMER_REAL` has one SIGALRM pending at most, as on Linux.
        a.deadline = now.saturating_add(a.interval - late % a.interval);
        next = next.min(a.deadline);
        true
    });
    NEXT.store(next, Ordering::Release);
    if !due.is_empty() {
        DUE_PENDING.store(true, Ordering::Release);
    }
}

/// Whether expired timers wait for [`send_due`].
pub fn pending() -> bool {
    DUE_PENDING.load(Ordering::Acquire)
}

/// Sends the signals of the timers that expired. Runs with interrupts enabled.
pub fn send_due() {
    if !DUE_PENDING.swap(false, Ordering::AcqRel) {
        return;
    }
    let due = core::mem::take(&mut *DUE.lock());
    for d in due {
        let p = &d.process;
        match d.which {
            Which::Real => signal::send_process(p, SIGALRM, SigInfo::kernel()),
            Which::Virtual => signal::send_process(p, SIGVTALRM, SigInfo::kernel()),
            Which::Prof => signal::send_process(p, SIGPROF, SigInfo::kernel()),
            Which::Posix(id) => send_posix(p, id, d.generation, d.missed),
        }
    }
}

/// Sends the signal of `p`'s POSIX timer `id` for an expiry of setting `generation`
/// standing for `missed` more: nothing if the timer was deleted or set again since, or is
/// `SIGEV_NONE`, or its thread has gone. The timers stay locked while it is sent, so a
/// `timer_delete` on another core either comes first or finds the signal to remove.
fn send_posix(p: &Arc<Process>, id: i32, generation: u64, missed: u32) {
    let s = p.timers.state.lock();
    let notify = match s.find(id) {
        Ok(at) if s.posix[at].generation == generation => s.posix[at].notify,
        _ => return,
    };
    let Notify::Signal { sig, value, thread } = notify else {
        return;
    };
    let info = SigInfo::timer(id as u32, missed, value);
    match thread {
        None => signal::send_process(p, sig, info),
        Some(tid) => {
            let t = p.threads.lock().iter().find(|t| t.tid == tid).cloned();
            if let Some(t) = t {
                signal::send_thread(&t, sig, info);
            }
        }
    }
}
