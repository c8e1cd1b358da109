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
//! last thread to stop checks ([`wait_while_stopped`]).
//!
//! Orphaned process groups, as on Linux: a group is orphaned when no member has a parent in
//! another group of its session (no shell is left to continue it). `SIGTSTP`, `SIGTTIN` and
//! `SIGTTOU` whose action is the default are discarded when they are delivered to a member
//! of an orphaned group (`SIGSTOP` still stops), and a background read of the terminal by
//! one fails with `EIO` instead of raising `SIGTTIN` (`tty::read`). When an exit orphans a
//! group that has stopped members (the exiting process was the group's last link to its
//! session, or its child's), the group gets `SIGHUP` and then `SIGCONT`
//! ([`exit_orphans`]). Unlike Linux, a parent that is process 1 keeps a group joined to its
//! session: Reef's shell and test programs run as process 1, and jobs they start in groups
//! of their own would otherwise be orphaned from the start (Ctrl-Z could not stop them).

use super::signal::{self, SigInfo};
use super::table::{Entry, Life, ReadOp, Resp};
use super::{Pid, Process, Thread};
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

/// Whether process group `group` is orphaned (see the module documentation).
pub fn group_orphaned(group: Pid) -> bool {
    matches!(
        super::table().execute(ReadOp::Orphaned(group)),
        Resp::Flag(true)
    )
}

/// Whether `p` is in an orphaned process group (a default-action terminal stop signal does
/// nothing to it).
pub fn in_orphaned_group(p: &Process) -> bool {
    super::lookup(p.pid).is_some_and(|e| group_orphaned(e.pgid))
}

/// Sends `sig` from the kernel (`SI_KERNEL`) to every live process of group `group`.
pub fn signal_group(group: Pid, sig: u32) {
    for pid in crate::syscall::process::members(Some(group)) {
        if let Some(e) = super::lookup(pid) {
            if e.life == Life::Alive {
                signal::send_process(&e.process, sig, SigInfo::kernel());
            }
        }
    }
}

/// After a process exited (`gone`: its table entry from before the exit; `adopted`: the
/// children init took over from it), sends `SIGHUP` and then `SIGCONT` to each group the exit
/// orphaned that has a stopped member, as Linux's `kill_orphaned_pgrp`: its own group if its
/// parent was in another group of the session, and each child's group that is not its own
/// but is in its session.
pub fn exit_orphans(gone: &Entry, adopted: &[Arc<Process>]) {
    let joined_by_parent = super::lookup(gone.ppid)
        .is_some_and(|parent| parent.pgid != gone.pgid && parent.sid == gone.sid);
    if joined_by_parent {
        hang_up_if_orphaned(gone.pgid);
    }
    for child in adopted {
        if let Some(c) = super::lookup(child.pid) {
            if c.life == Life::Alive && c.pgid != gone.pgid && c.sid == gone.sid {
                hang_up_if_orphaned(c.pgid);
            }
        }
    }
}

/// Sends `SIGHUP` and `SIGCONT` to `group` if it is orphaned and has a stopped member (once:
/// `SIGCONT` leaves none stopped).
fn hang_up_if_orphaned(group: Pid) {
    if !group_orphaned(group) {
        return;
    }
    let stopped = crate::syscall::process::members(Some(group))
        .into_iter()
        .filter_map(super::lookup)
        .any(|e| is_stopped(&e.process));
    if stopped {
        signal_group(group, signal::SIGHUP);
        signal_group(group, signal::SIGCONT);
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
