//! Stopped processes (job control): a stop signal whose action is the default (`SIGSTOP`,
//! and `SIGTSTP`, `SIGTTIN`, `SIGTTOU` unless handled or ignored) stops the whole process;
//! `SIGCONT` continues it; the parent learns of both through `SIGCHLD` (`CLD_STOPPED`,
//! `CLD_CONTINUED`, unless it set `SA_NOCLDSTOP`) and through `wait4`'s `WUNTRACED` and
//! `WCONTINUED` (and `waitid`'s `WSTOPPED`, `WCONTINUED`), each change reported once.
//!
//! As on Linux, `SIGCONT` acts when it is sent, not when it is delivered: it continues the
//! process and discards pending stop signals even if it is blocked, ignored or handled (a
//! handler still runs). A stop signal sent discards a pending `SIGCONT`. A stopped process's
//! threads sleep on their way back to user mode ([`wait_while_stopped`]) until `SIGCONT`,
//! `SIGKILL` or the process's exit; a thread sleeping in a system call when the process stops
//! goes on sleeping there and stops when it returns. The parent is told of the stop once no
//! thread can run user code any more, as Linux tells it once the group stop is complete: when
//! every thread sleeps (stopped, or in a system call it will stop after) or has exited; the
//! last thread to stop checks ([`wait_while_stopped`]). Not built: Linux's discarding of
//! `SIGTSTP`, `SIGTTIN` and `SIGTTOU` sent to an orphaned process group.

use super::signal::{self, SigInfo};
use super::{Process, Thread};
use alloc::sync::Arc;
use core::sync::atomic::Ordering;

/// A change of a child's state its parent has not waited for yet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Report {
    /// It stopped, by this signal.
    Stopped(u32),
    /// It was continued.
    Continued,
}

impl Report {
    /// The wait status `wait4` reports: `0x7f` with the signal above it for a stop, `0xffff`
    /// for a continue (what `WIFSTOPPED`, `WSTOPSIG` and `WIFCONTINUED` decode).
    pub fn wait_status(self) -> i32 {
        match self {
            Report::Stopped(sig) => ((sig as i32) << 8) | 0x7f,
            Report::Continued => 0xffff,
        }
    }
}

/// Stops `me`'s process by signal `sig` (the default action of a stop signal, taken by `me`
/// on its way to user mode, where it then stops): the other threads are made to enter the
/// kernel, where they stop; the parent is told once all have ([`wait_while_stopped`]).
pub fn stop(me: &Arc<Thread>, sig: u32) {
    let p = &me.process;
    if p.exiting.load(Ordering::Acquire) {
        return;
    }
    if p.stop_signal.swap(sig, Ordering::AcqRel) == 0 {
        // A thread that stops before this sees the last stop's `true` and leaves the telling
        // to a later one (`me` stops after this).
        p.stop_told.store(false, Ordering::SeqCst);
        for t in p.threads.lock().iter() {
            t.note_signal();
            signal::kick(t);
        }
    }
}

/// Continues `p` if it is stopped (`SIGCONT` sent to it): its threads wake and its parent is
/// told.
pub fn resume(p: &Arc<Process>) {
    let mut report = p.job_report.lock();
    if p.stop_signal.swap(0, Ordering::AcqRel) != 0 {
        *report = Some(Report::Continued);
        drop(report);
        p.resumed.notify_all();
        tell_parent(p, signal::CLD_CONTINUED, signal::SIGCONT as i32);
    }
}

/// Tells `p`'s parent that `p` stopped, once: when no thread of `p` can run user code (each
/// is stopped, sleeps in the kernel, or has exited) while `p` is still stopped.
fn report_if_stopped(p: &Process) {
    let all = p.threads.lock().iter().all(|t| {
        t.parked.load(Ordering::SeqCst)
            || matches!(
                t.state(),
                super::ThreadState::Blocked | super::ThreadState::Exited
            )
    });
    if !all {
        return;
    }
    let mut report = p.job_report.lock();
    let sig = p.stop_signal.load(Ordering::Acquire);
    if sig == 0 || p.stop_told.swap(true, Ordering::SeqCst) {
        return;
    }
    *report = Some(Report::Stopped(sig));
    drop(report);
    tell_parent(p, signal::CLD_STOPPED, sig as i32);
}

/// Whether `p` is stopped.
pub fn is_stopped(p: &Process) -> bool {
    p.stop_signal.load(Ordering::Acquire) != 0
}

/// Sleeps while `me`'s process is stopped, until it is continued or `me` is dying (killed, or
/// its process exiting; both wake this sleep).
pub fn wait_while_stopped(me: &Arc<Thread>) {
    let p = &me.process;
    me.parked.store(true, Ordering::SeqCst);
    report_if_stopped(p);
    loop {
        let seq = p.resumed.seq();
        if !is_stopped(p) || me.dying() {
            break;
        }
        p.resumed.wait_uninterruptible(seq);
    }
    me.parked.store(false, Ordering::SeqCst);
}

/// Takes `p`'s unreported change if the waiter asks for its kind (`stopped`: `WUNTRACED`,
/// `continued`: `WCONTINUED`); `keep` (`WNOWAIT`) leaves it to be reported again.
pub fn take_report(p: &Process, stopped: bool, continued: bool, keep: bool) -> Option<Report> {
    let mut r = p.job_report.lock();
    let wanted = match *r {
        Some(Report::Stopped(_)) => stopped,
        Some(Report::Continued) => continued,
        None => false,
    };
    if !wanted {
        return None;
    }
    if keep {
        *r
    } else {
        r.take()
    }
}

/// Tells `p`'s parent that `p` stopped or continued: `SIGCHLD` with `code` and `status`
/// unless the parent's `SIGCHLD` action has `SA_NOCLDSTOP`, and a wake-up of its waits.
fn tell_parent(p: &Process, code: i32, status: i32) {
    let Some(parent) = super::lookup(p.ppid.load(Ordering::Acquire)).map(|e| e.process) else {
        return;
    };
    if !signal::no_child_stop(&parent) {
        let info = SigInfo {
            code,
            pid: p.pid,
            status,
            ..Default::default()
        };
        signal::send_process(&parent, signal::SIGCHLD, info);
    }
    parent.child_events.notify_all();
}
