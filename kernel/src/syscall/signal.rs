//! Signal calls: actions, masks, `rt_sigreturn`, `kill`, `tkill`, `tgkill`, the queued
//! `rt_sigqueueinfo` and `rt_tgsigqueueinfo`, `rt_sigtimedwait`, and `signalfd4`.

use super::SysResult;
use crate::arch::idt::InterruptFrame;
use crate::fd::Node;
use crate::fs::signalfd::SignalFd;
use crate::proc::signal::{self as sig, SigAction, SigInfo};
use crate::proc::table::Life;
use crate::proc::wait::{WaitQueue, Wake};
use crate::proc::{self, Pid, Thread};
use crate::uaccess::{self, read_user, write_user};
use abi::Errno;
use alloc::sync::Arc;

/// Checks a `sigsetsize` argument: 8 bytes, else `EINVAL`.
fn check_sigset_size(size: u64) -> Result<(), Errno> {
    if size == 8 {
        Ok(())
    } else {
        Err(Errno::EINVAL)
    }
}

/// `rt_sigaction(signum, act, oldact, sigsetsize)`: installs `act` (if given) as the action of
/// `signum` and writes the old one to `oldact` (if given); `EINVAL` for signal 0, a bad number or
/// size.
pub fn rt_sigaction(me: &Arc<Thread>, _: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    check_sigset_size(a[3])?;
    let signo = sig::check(a[0])?;
    if signo == 0 {
        return Err(Errno::EINVAL);
    }
    let new = if a[1] != 0 {
        let raw: [u64; 4] = read_user(a[1])?;
        Some(SigAction {
            handler: raw[0],
            flags: raw[1],
            restorer: raw[2],
            mask: raw[3],
        })
    } else {
        None
    };
    let old = sig::set_action(&me.process, signo, new)?;
    if a[2] != 0 {
        write_user(a[2], &[old.handler, old.flags, old.restorer, old.mask])?;
    }
    Ok(0)
}

/// `rt_sigprocmask(how, set, oldset, sigsetsize)`: changes the thread's signal mask by `how` if
/// `set` is given and writes the old one to `oldset` (if given); `EINVAL` for a bad `how` or size.
pub fn rt_sigprocmask(me: &Arc<Thread>, _: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    check_sigset_size(a[3])?;
    let set = if a[1] != 0 {
        Some(read_user::<u64>(a[1])?)
    } else {
        None
    };
    let old = sig::set_mask(me, a[0], set)?;
    if a[2] != 0 {
        write_user(a[2], &old)?;
    }
    Ok(0)
}

/// `rt_sigreturn()`: restores the state saved when a signal handler was entered; a corrupt signal
/// frame raises `SIGSEGV`, as on Linux.
pub fn rt_sigreturn(me: &Arc<Thread>, frame: &mut InterruptFrame, _: [u64; 6]) -> SysResult {
    if let Err(e) = sig::sigreturn(me, frame) {
        // A corrupt signal frame: Linux kills the process with SIGSEGV.
        sig::force(me, sig::SIGSEGV, SigInfo::default());
        return Err(e);
    }
    Ok(frame.rax)
}

/// `rt_sigpending(set, sigsetsize)`: writes the signals pending for the thread or its process.
pub fn rt_sigpending(me: &Arc<Thread>, _: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    check_sigset_size(a[1])?;
    write_user(a[0], &sig::pending(me))?;
    Ok(0)
}

/// Waiting room for `rt_sigsuspend`: nothing ever notifies it, a signal ends the wait.
static SUSPENDED: WaitQueue = WaitQueue::new();

/// `rt_sigsuspend(mask, sigsetsize)`: waits with `mask` as the signal mask until a signal is
/// pending, then `EINTR`; the old mask comes back with the handler's `rt_sigreturn`.
pub fn rt_sigsuspend(me: &Arc<Thread>, _: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    check_sigset_size(a[1])?;
    let mask: u64 = read_user(a[0])?;
    let old = sig::set_mask(me, 2, Some(mask))?;
    loop {
        let seq = SUSPENDED.seq();
        if me.signal_pending() {
            break;
        }
        SUSPENDED.wait(seq, None);
    }
    // The handler runs with the suspended mask; the old one comes back with its sigreturn.
    me.signals.lock().saved = Some(old);
    Err(Errno::EINTR)
}

/// `pause`: sleeps until a signal that is not blocked arrives, then `EINTR` (its handler runs
/// first, or its default action ends the process).
pub fn pause(me: &Arc<Thread>, _: &mut InterruptFrame, _: [u64; 6]) -> SysResult {
    loop {
        let seq = SUSPENDED.seq();
        if me.signal_pending() {
            return Err(Errno::EINTR);
        }
        SUSPENDED.wait(seq, None);
    }
}

/// `sigaltstack(ss, old_ss)`: reports the thread's alternate signal stack in `old_ss`
/// (`SS_DISABLE` without one, `SS_ONSTACK` while a handler runs on it) and sets it from `ss`:
/// `SS_DISABLE` removes it; otherwise `ss_flags` must be 0 or `SS_ONSTACK` (with
/// `SS_AUTODISARM` allowed and ignored), else `EINVAL`, and `ss_size` at least `MINSIGSTKSZ`,
/// else `ENOMEM`; `EPERM` while running on it. `SA_ONSTACK` handlers then run there.
pub fn sigaltstack(me: &Arc<Thread>, frame: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    /// `ss_flags`: disarm the stack while a handler runs on it (accepted, not acted on).
    const SS_AUTODISARM: i32 = 1 << 31;
    /// Linux x86-64's `MINSIGSTKSZ`.
    const MINSIGSTKSZ: u64 = 2048;
    let now = me.signals.lock().alt_stack;
    if a[0] != 0 {
        let [base, flags, size]: [u64; 3] = read_user(a[0])?;
        if now.is_some_and(|s| s.holds(frame.rsp)) {
            return Err(Errno::EPERM);
        }
        let alt = match flags as i32 & !SS_AUTODISARM {
            sig::SS_DISABLE => None,
            0 | sig::SS_ONSTACK if size < MINSIGSTKSZ => return Err(Errno::ENOMEM),
            0 | sig::SS_ONSTACK => Some(sig::AltStack { base, size }),
            _ => return Err(Errno::EINVAL),
        };
        me.signals.lock().alt_stack = alt;
    }
    // As Linux: the old settings are written once the new ones are taken.
    if a[1] != 0 {
        write_user(a[1], &sig::stack_t(now, frame.rsp))?;
    }
    Ok(0)
}

/// `kill(pid, sig)`: sends `sig` to process `pid` (> 0), the caller's process group (0), every
/// process but init and the caller (-1), or group `-pid`; `ESRCH` when no target exists. Signal 0
/// sends nothing.
pub fn kill(me: &Arc<Thread>, _: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    let signo = sig::check(a[1])?;
    let pid = a[0] as i32;
    let info = SigInfo {
        uid: me.process.creds.lock().uid.real,
        ..SigInfo::user(me.process.pid)
    };
    let targets = match pid {
        p if p > 0 => alloc::vec![p as Pid],
        0 => super::process::members(Some(
            proc::lookup(me.process.pid)
                .map(|e| e.pgid)
                .unwrap_or(me.process.pid),
        )),
        -1 => super::process::members(None)
            .into_iter()
            .filter(|&p| p != me.process.pid)
            .collect(),
        p => super::process::members(Some(p.unsigned_abs())),
    };
    // As Linux: success if one target was signalled, else EPERM if one was refused.
    let (mut sent, mut refused) = (false, false);
    for pid in targets {
        if let Some(e) = proc::lookup(pid) {
            if may_signal(me, &e.process, e.sid, signo).is_err() {
                refused = true;
                continue;
            }
            if e.life == Life::Alive {
                sig::send_process(&e.process, signo, info);
            }
            sent = true;
        }
    }
    match (sent, refused) {
        (true, _) => Ok(0),
        (false, true) => Err(Errno::EPERM),
        (false, false) => Err(Errno::ESRCH),
    }
}

/// Whether the caller may send `signo` to `target` (of session `sid`): its credentials allow
/// it (`creds::Credentials::may_signal`), or it is `SIGCONT` within the caller's session.
fn may_signal(me: &Arc<Thread>, target: &proc::Process, sid: Pid, signo: u32) -> Result<(), Errno> {
    if core::ptr::eq(target, &*me.process) {
        return Ok(());
    }
    let them = target.creds.lock().uid;
    let allowed = me.process.creds.lock().may_signal(them);
    let same_session = || proc::lookup(me.process.pid).is_some_and(|e| e.sid == sid);
    match allowed {
        Err(_) if signo == sig::SIGCONT && same_session() => Ok(()),
        r => r,
    }
}

/// [`may_signal`] for thread `t`'s process.
fn thread_may_signal(me: &Arc<Thread>, t: &Thread, signo: u32) -> Result<(), Errno> {
    let sid = proc::lookup(t.process.pid).map_or(0, |e| e.sid);
    may_signal(me, &t.process, sid, signo)
}

/// Thread `tid` of process `tgid` (of process `tid` when `None`); `ESRCH` if there is none.
fn find_thread(tgid: Option<Pid>, tid: Pid) -> Result<Arc<Thread>, Errno> {
    let owner = tgid.unwrap_or(tid);
    let search = |p: &proc::Process| p.threads.lock().iter().find(|t| t.tid == tid).cloned();
    if let Some(t) = proc::lookup(owner).and_then(|e| search(&e.process)) {
        return Ok(t);
    }
    Err(Errno::ESRCH)
}

/// `tkill(tid, sig)`: sends `sig` to thread `tid` (of the caller's process, or of process `tid`);
/// `EINVAL` for `tid` <= 0, `ESRCH` for no such thread.
pub fn tkill(me: &Arc<Thread>, _: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    let signo = sig::check(a[1])?;
    let tid = a[0] as i32;
    if tid <= 0 {
        return Err(Errno::EINVAL);
    }
    let t = match me
        .process
        .threads
        .lock()
        .iter()
        .find(|t| t.tid == tid as Pid)
    {
        Some(t) => t.clone(),
        None => find_thread(None, tid as Pid)?,
    };
    thread_may_signal(me, &t, signo)?;
    let info = SigInfo {
        code: sig::SI_TKILL,
        pid: me.process.pid,
        uid: me.process.creds.lock().uid.real,
        ..Default::default()
    };
    sig::try_send_thread(&t, signo, info)?;
    Ok(0)
}

/// `tgkill(tgid, tid, sig)`: sends `sig` to thread `tid` of process `tgid`; `EINVAL` for an id <=
/// 0, `ESRCH` for no such thread.
pub fn tgkill(me: &Arc<Thread>, _: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    let signo = sig::check(a[2])?;
    let (tgid, tid) = (a[0] as i32, a[1] as i32);
    if tgid <= 0 || tid <= 0 {
        return Err(Errno::EINVAL);
    }
    let t = find_thread(Some(tgid as Pid), tid as Pid)?;
    thread_may_signal(me, &t, signo)?;
    let info = SigInfo {
        code: sig::SI_TKILL,
        pid: me.process.pid,
        uid: me.process.creds.lock().uid.real,
        ..Default::default()
    };
    sig::try_send_thread(&t, signo, info)?;
    Ok(0)
}

/// Reads the `siginfo_t` a program gives `rt_sigqueueinfo` or `rt_tgsigqueueinfo` at `addr`
/// (`EFAULT`), and refuses (`EPERM`) one whose `si_code` says the kernel, `kill` or `tgkill`
/// sent it (`si_code` >= 0 or `SI_TKILL`) unless the caller sends it to itself (`to_self`):
/// Linux's rule, so that nobody can forge the sender another process sees.
fn user_info(addr: u64, to_self: bool) -> Result<SigInfo, Errno> {
    let mut raw = [0u8; sig::SIGINFO];
    uaccess::copy_from_user(addr, &mut raw)?;
    let info = SigInfo::from_user(&raw);
    if (info.code >= 0 || info.code == sig::SI_TKILL) && !to_self {
        return Err(Errno::EPERM);
    }
    Ok(info)
}

/// `rt_sigqueueinfo(pid, sig, uinfo)`: sends `sig` to process `pid` with the program's
/// `siginfo_t` (as `sigqueue` does, with `SI_QUEUE` and its `si_value`); a real-time signal is
/// queued behind those of its number already pending. `EFAULT` for a bad `uinfo`, `EPERM` for
/// a forged `si_code` (see [`user_info`]) or a process the caller may not signal, `ESRCH` for
/// no such process, `EINVAL` for a bad signal, `EAGAIN` when the target's queue is full
/// (`RLIMIT_SIGPENDING`). Signal 0 checks and sends nothing.
pub fn rt_sigqueueinfo(me: &Arc<Thread>, _: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    let pid = a[0] as i32;
    let info = user_info(a[2], pid == me.tid as i32)?;
    let e = match Pid::try_from(pid) {
        Ok(p) if p > 0 => proc::lookup(p).ok_or(Errno::ESRCH)?,
        _ => return Err(Errno::ESRCH),
    };
    let signo = sig::check(a[1])?;
    may_signal(me, &e.process, e.sid, signo)?;
    if e.life == Life::Alive {
        sig::try_send_process(&e.process, signo, info)?;
    }
    Ok(0)
}

/// `rt_tgsigqueueinfo(tgid, tid, sig, uinfo)`: [`rt_sigqueueinfo`] to thread `tid` of process
/// `tgid`; `EINVAL` for an id <= 0, `EPERM` for a forged `si_code` unless `tid` is the caller.
pub fn rt_tgsigqueueinfo(me: &Arc<Thread>, _: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    let (tgid, tid) = (a[0] as i32, a[1] as i32);
    let info = user_info(a[3], tid == me.tid as i32);
    if tgid <= 0 || tid <= 0 {
        // As Linux: a bad siginfo pointer is seen first, then the ids.
        info?;
        return Err(Errno::EINVAL);
    }
    let info = info?;
    let t = find_thread(Some(tgid as Pid), tid as Pid)?;
    let signo = sig::check(a[2])?;
    thread_may_signal(me, &t, signo)?;
    sig::try_send_thread(&t, signo, info)?;
    Ok(0)
}

/// `rt_sigtimedwait(set, info, timeout, sigsetsize)` (`sigwaitinfo`, `sigtimedwait`): takes
/// the lowest pending signal of `set` (one real-time signal of a queue at a time), waiting
/// for one until `timeout` (a relative `struct timespec`; NULL: forever) with the signals of
/// `set` unblocked meanwhile, as Linux does; writes its `siginfo_t` to `info` (if given) and
/// returns its number. `EAGAIN` when the time passes (at once for a zero timeout), `EINTR`
/// when another signal that is not blocked comes first, `EINVAL` for a bad size or timeout,
/// `EFAULT` for a bad pointer.
pub fn rt_sigtimedwait(me: &Arc<Thread>, _: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    check_sigset_size(a[3])?;
    let set = read_user::<u64>(a[0])? & !sig::UNBLOCKABLE;
    let deadline = super::process::deadline_from(a[2], false)?;
    let taken = match sig::take_of(me, set) {
        Some(t) => Some(t),
        None if deadline.is_some_and(|d| d <= crate::time::now_ns()) => None,
        None => {
            {
                // The waited signals stay "blocked" for the senders' `ignored` check.
                let mut s = me.signals.lock();
                s.real_blocked = s.mask;
            }
            let old = sig::set_mask(me, 1, Some(set))?;
            let woke = loop {
                let seq = SUSPENDED.seq();
                if me.signal_pending() {
                    break Wake::Interrupted;
                }
                match SUSPENDED.wait(seq, deadline) {
                    Wake::Event => continue,
                    w => break w,
                }
            };
            me.signals.lock().real_blocked = 0;
            sig::set_mask(me, 2, Some(old))?;
            match sig::take_of(me, set) {
                Some(t) => Some(t),
                None if woke == Wake::Timeout => None,
                None => return Err(Errno::EINTR),
            }
        }
    };
    let (signo, info) = taken.ok_or(Errno::EAGAIN)?;
    if a[1] != 0 {
        uaccess::copy_to_user(a[1], &info.to_user(signo))?;
    }
    Ok(signo.into())
}

/// `SFD_NONBLOCK`, `SFD_CLOEXEC`: the flags `signalfd4` takes (`O_NONBLOCK`, `O_CLOEXEC`).
const SFD_FLAGS: u64 = (crate::fd::O_NONBLOCK | crate::fs::flags::O_CLOEXEC) as u64;

/// `signalfd4(fd, mask, sizemask, flags)`: with `fd` -1, a new signal descriptor
/// (`fs::signalfd`) reading the signals of `mask` (`SIGKILL` and `SIGSTOP` dropped), flags
/// `SFD_NONBLOCK` and `SFD_CLOEXEC`; otherwise `fd`'s mask becomes `mask`. `EINVAL` for a
/// `sizemask` other than 8, other flags or an `fd` that is not a signal descriptor, `EFAULT`
/// for a bad `mask`, `EBADF` for a bad `fd`.
pub fn signalfd4(me: &Arc<Thread>, _: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    check_sigset_size(a[2])?;
    let mask: u64 = read_user(a[1])?;
    if a[3] & !SFD_FLAGS != 0 {
        return Err(Errno::EINVAL);
    }
    if a[0] as i32 == -1 {
        let node = Node::SignalFd(SignalFd::new(mask));
        return super::eventfd::install(me, node, a[3], b"anon_inode:[signalfd]");
    }
    let f = super::file::file(me, a[0])?;
    match &f.node {
        Node::SignalFd(s) => s.set_mask(mask, me.process.pid),
        _ => return Err(Errno::EINVAL),
    }
    Ok(a[0] as i32 as u64)
}

/// `signalfd(fd, mask, sizemask)`: `signalfd4` without flags.
pub fn signalfd(me: &Arc<Thread>, f: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    signalfd4(me, f, [a[0], a[1], a[2], 0, 0, 0])
}
