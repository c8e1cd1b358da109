//! The real-time interval timer of each process (`ITIMER_REAL`: `alarm`, `setitimer`,
//! `getitimer`): when it expires the process gets SIGALRM, and with an interval it is armed
//! again.
//!
//! The armed timers are one list, looked at by the boot core's timer tick ([`tick`], from the
//! interrupt handler, as the console is), so a timer fires up to one tick (10 ms) late, as
//! Linux's may by its timer slack. The tick only moves the processes due to a second list;
//! the signals go out, as the console's do, on the next return to user mode or pass of an
//! idle loop on any core ([`send_due`]), where dropping a process's last reference is safe.
//! The lists hold each process's `Arc` until its timer fires for good or it exits
//! ([`forget`]). Timers survive `execve` and are not inherited by
//! `fork`, as on Linux. The virtual and profiling timers (`ITIMER_VIRTUAL`, `ITIMER_PROF`) are
//! not built: Reef does not account user and system time per process.

use super::signal::{self, SigInfo, SIGALRM};
use super::Process;
use crate::sync::IrqMutex;
use abi::Errno;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicBool, Ordering};

/// One armed timer.
struct Armed {
    /// When it fires ([`crate::time::now_ns`]).
    deadline: u64,
    /// Nanoseconds between firings after the first; 0: once.
    interval: u64,
    /// Whose it is.
    process: Arc<Process>,
}

/// Every armed timer, at most one per process.
static ARMED: IrqMutex<Vec<Armed>> = IrqMutex::new(Vec::new());
/// Processes whose timer expired, for [`send_due`].
static DUE: IrqMutex<Vec<Arc<Process>>> = IrqMutex::new(Vec::new());
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

/// `p`'s timer now.
pub fn get(p: &Arc<Process>) -> Setting {
    let now = crate::time::now_ns();
    ARMED
        .lock()
        .iter()
        .find(|a| Arc::ptr_eq(&a.process, p))
        .map_or(Setting::default(), |a| Setting {
            // An expired timer the tick has not handled yet is due now: 1 ns, not 0 (disarmed).
            value: a.deadline.saturating_sub(now).max(1),
            interval: a.interval,
        })
}

/// Sets `p`'s timer to `new` (a `value` of 0 disarms it) and returns the setting it had;
/// `ENOMEM` if the list cannot grow.
pub fn set(p: &Arc<Process>, new: Setting) -> Result<Setting, Errno> {
    let old = get(p);
    let mut armed = ARMED.lock();
    armed.retain(|a| !Arc::ptr_eq(&a.process, p));
    if new.value != 0 {
        armed.try_reserve(1).map_err(|_| Errno::ENOMEM)?;
        armed.push(Armed {
            deadline: crate::time::now_ns().saturating_add(new.value),
            interval: new.interval,
            process: p.clone(),
        });
    }
    Ok(old)
}

/// Disarms `p`'s timer (its exit), letting go of the process.
pub fn forget(p: &Arc<Process>) {
    let gone: Vec<Armed> = {
        let mut armed = ARMED.lock();
        let (gone, kept) = core::mem::take(&mut *armed)
            .into_iter()
            .partition(|a| Arc::ptr_eq(&a.process, p));
        *armed = kept;
        gone
    };
    drop(gone);
}

/// Takes the timers that expired for [`send_due`], and re-arms those with an interval (from
/// their deadline, so they do not drift). Called by the boot core's tick.
pub fn tick() {
    let now = crate::time::now_ns();
    let mut armed = ARMED.lock();
    if armed.iter().all(|a| a.deadline > now) {
        return;
    }
    let mut due = DUE.lock();
    let _ = due.try_reserve(armed.len());
    armed.retain_mut(|a| {
        if a.deadline > now {
            return true;
        }
        if due.len() == due.capacity() {
            // No memory for the list of signals to send: it fires at the next tick.
            return true;
        }
        due.push(a.process.clone());
        if a.interval == 0 {
            return false;
        }
        // Missed expiries are not queued (one SIGALRM is pending at most, as on Linux).
        let late = now - a.deadline;
        a.deadline = now.saturating_add(a.interval - late % a.interval);
        true
    });
    if !due.is_empty() {
        DUE_PENDING.store(true, Ordering::Release);
    }
}

/// Whether expired timers wait for [`send_due`].
pub fn pending() -> bool {
    DUE_PENDING.load(Ordering::Acquire)
}

/// Sends SIGALRM to the processes whose timer expired. Runs with interrupts enabled.
pub fn send_due() {
    if !DUE_PENDING.swap(false, Ordering::AcqRel) {
        return;
    }
    let due = core::mem::take(&mut *DUE.lock());
    for p in due {
        signal::send_process(&p, SIGALRM, SigInfo::kernel());
    }
}
