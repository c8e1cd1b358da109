//! Signals: actions, masks, pending sets, delivery to user handlers with the Linux x86-64
//! signal frame (`rt_sigframe`), `rt_sigreturn`, and default actions.
//!
//! Standard signals (1..=31) are pending at most once (a second one sent while the first is
//! pending is merged into it). Real-time signals (32..=64) are queued, as on Linux: each one
//! sent is delivered, with its own `siginfo_t`, in the order sent, the lowest number first.
//! Their queues ([`Queue`]) grow fallibly and are bounded per process by `RLIMIT_SIGPENDING`
//! ([`SignalState::limit`], counted in `Process::rt_queued`): past it (or when memory runs
//! out) a `kill` or a kernel-sent signal still becomes pending but loses its information
//! (Linux's behaviour), while `rt_sigqueueinfo`, `sigqueue` and `tgkill` fail with `EAGAIN`. A
//! signal that a fault raises (SIGSEGV, SIGBUS, SIGILL, SIGFPE) while blocked or ignored kills
//! the process, as Linux does.

use super::table::{OnChildExit, UpdateOp};
use super::{sched, Pid, Process, Thread};
use crate::arch::idt::InterruptFrame;
use crate::arch::user::{self, FPU_AREA, USER_CS, USER_END, USER_SS};
use crate::uaccess;
use abi::Errno;
use alloc::collections::VecDeque;
use alloc::sync::Arc;
use core::sync::atomic::Ordering;

/// Hangup.
pub const SIGHUP: u32 = 1;
/// Interrupt (Ctrl-C).
pub const SIGINT: u32 = 2;
/// Illegal instruction.
pub const SIGILL: u32 = 4;
/// Trap.
pub const SIGTRAP: u32 = 5;
/// Abort.
pub const SIGABRT: u32 = 6;
/// Bus error.
pub const SIGBUS: u32 = 7;
/// Arithmetic error.
pub const SIGFPE: u32 = 8;
/// Kill (cannot be caught).
pub const SIGKILL: u32 = 9;
/// Segmentation fault.
pub const SIGSEGV: u32 = 11;
/// Broken pipe.
pub const SIGPIPE: u32 = 13;
/// `SIGALRM`: a real-time interval timer expired (`alarm`, `setitimer`).
pub const SIGALRM: u32 = 14;
/// Termination.
pub const SIGTERM: u32 = 15;
/// Child stopped or exited.
pub const SIGCHLD: u32 = 17;
/// Continue.
pub const SIGCONT: u32 = 18;
/// Stop (cannot be caught).
pub const SIGSTOP: u32 = 19;
/// Terminal stop.
pub const SIGTSTP: u32 = 20;
/// Background read.
pub const SIGTTIN: u32 = 21;
/// Background write.
pub const SIGTTOU: u32 = 22;
/// Urgent data.
pub const SIGURG: u32 = 23;
/// Window size change.
pub const SIGWINCH: u32 = 28;
/// Highest signal number.
pub const NSIG: u32 = 64;
/// The first real-time signal (the kernel's `SIGRTMIN`; C libraries keep the first few).
pub const SIGRTMIN: u32 = 32;
/// How many real-time signals there are (32..=64).
const NRT: usize = (NSIG - SIGRTMIN + 1) as usize;
/// The default `RLIMIT_SIGPENDING`, soft and hard: real-time signals one process may have
/// queued (Linux derives its default from the memory size; this is its value for 1 GiB).
pub const SIGPENDING_DEFAULT: u64 = 4096;

/// `SIG_DFL`: the handler value that selects the default action.
const SIG_DFL: u64 = 0;
/// `SIG_IGN`: the handler value that ignores the signal.
const SIG_IGN: u64 = 1;
/// `sa_flags` bits.
const SA_SIGINFO: u64 = 4;
/// `SA_ONSTACK`: run the handler on the alternate signal stack (`sigaltstack`).
const SA_ONSTACK: u64 = 0x0800_0000;
/// `SA_RESTART`: restart a syscall the signal interrupts instead of failing it with `EINTR`.
const SA_RESTART: u64 = 0x1000_0000;

/// Whether system call `nr` ends with `EINTR` after a handler even with `SA_RESTART`, as on
/// Linux (`ERESTARTNOHAND` and `ERESTART_RESTARTBLOCK`: waits for readiness, for a signal and
/// sleeps; `signal(7)`).
fn never_restarted(nr: u64) -> bool {
    use abi::syscalls::*;
    matches!(
        nr as usize,
        SYS_POLL
            | SYS_PPOLL
            | SYS_SELECT
            | SYS_PSELECT6
            | SYS_EPOLL_WAIT
            | SYS_EPOLL_PWAIT
            | SYS_EPOLL_PWAIT2
            | SYS_PAUSE
            | SYS_RT_SIGSUSPEND
            | SYS_RT_SIGTIMEDWAIT
            | SYS_NANOSLEEP
            | SYS_CLOCK_NANOSLEEP
    )
}
/// `SA_NODEFER`: do not block the signal while its handler runs.
const SA_NODEFER: u64 = 0x4000_0000;
/// `SA_RESETHAND`: reset the action to the default when the handler is entered.
const SA_RESETHAND: u64 = 0x8000_0000;
/// `SA_RESTORER`: `sa_restorer` holds the return trampoline the handler returns to.
const SA_RESTORER: u64 = 0x0400_0000;
/// The `sa_flags` bits `rt_sigaction` keeps (the others are cleared).
const SUPPORTED_FLAGS: u64 = SA_SIGINFO
    | SA_ONSTACK
    | SA_RESTART
    | SA_NODEFER
    | SA_RESETHAND
    | SA_RESTORER
    | SA_NOCLDSTOP
    | SA_NOCLDWAIT;

/// `si_code` values.
pub const SI_USER: i32 = 0;
/// Sent by a POSIX timer (its `si_timerid` and `si_overrun` sit where `si_pid` and `si_uid`
/// are).
pub const SI_TIMER: i32 = -2;
/// Sent by `tgkill`.
pub const SI_TKILL: i32 = -6;
/// Sent by the kernel (a terminal's signal characters, faults).
pub const SI_KERNEL: i32 = 0x80;
/// SIGSEGV: address not mapped.
pub const SEGV_MAPERR: i32 = 1;
/// SIGSEGV: access not permitted.
pub const SEGV_ACCERR: i32 = 2;
/// `si_code` of a SIGBUS for an address past the end of a mapped file.
pub const BUS_ADRERR: i32 = 2;
/// SIGCHLD: child exited.
pub const CLD_EXITED: i32 = 1;
/// SIGCHLD: child killed.
pub const CLD_KILLED: i32 = 2;
/// SIGCHLD: child stopped.
pub const CLD_STOPPED: i32 = 5;
/// SIGCHLD: stopped child continued.
pub const CLD_CONTINUED: i32 = 6;
/// `SA_NOCLDSTOP`: no SIGCHLD when a child stops or continues.
const SA_NOCLDSTOP: u64 = 1;
/// `SA_NOCLDWAIT` (of `SIGCHLD`'s action): children are reaped when they exit, not left as
/// zombies.
const SA_NOCLDWAIT: u64 = 2;

/// The bit of signal `sig` in a signal set (bit `sig - 1`).
fn bit(sig: u32) -> u64 {
    1 << (sig - 1)
}

/// Signals that cannot be caught, blocked or ignored.
pub const UNBLOCKABLE: u64 = (1 << (SIGKILL - 1)) | (1 << (SIGSTOP - 1));

/// A `struct sigaction` as the kernel sees it.
#[derive(Clone, Copy, Debug, Default)]
#[repr(C)]
pub struct SigAction {
    /// Handler address, SIG_DFL or SIG_IGN.
    pub handler: u64,
    /// SA_* flags.
    pub flags: u64,
    /// Return trampoline (`SA_RESTORER`).
    pub restorer: u64,
    /// Signals blocked while the handler runs.
    pub mask: u64,
}

/// What a signal carries (the parts of `siginfo_t` Reef fills).
#[derive(Clone, Copy, Debug, Default)]
pub struct SigInfo {
    /// `si_code`.
    pub code: i32,
    /// Sending process (kill, SIGCHLD, sigqueue).
    pub pid: Pid,
    /// The sender's real user ID (`si_uid`).
    pub uid: u32,
    /// Faulting address (SIGSEGV and friends).
    pub addr: u64,
    /// Child's exit code or signal (SIGCHLD).
    pub status: i32,
    /// The value `sigqueue` sends (`si_value`: `si_int`, `si_ptr`).
    pub value: u64,
    /// Sent by a POSIX timer of the process (`pid` is its id, `uid` its overrun count), not
    /// by a program that chose `SI_TIMER`: queued once at a time and not charged to
    /// `RLIMIT_SIGPENDING` (the timer holds its charge; see `proc::itimer`).
    pub timer: bool,
}

impl SigInfo {
    /// Sent by the kernel itself (`SI_KERNEL`).
    pub fn kernel() -> Self {
        SigInfo {
            code: SI_KERNEL,
            ..Default::default()
        }
    }

    /// Sent by `kill` from `pid` (`SI_USER`).
    pub fn user(pid: Pid) -> Self {
        SigInfo {
            code: SI_USER,
            pid,
            ..Default::default()
        }
    }

    /// The signal of POSIX timer `id` (`SI_TIMER`) with `overrun` expirations beyond the
    /// first and `si_value` `value`.
    pub fn timer(id: u32, overrun: u32, value: u64) -> Self {
        SigInfo {
            code: SI_TIMER,
            pid: id,
            uid: overrun,
            value,
            timer: true,
            ..Default::default()
        }
    }

    /// SIGCHLD (or `waitid`'s answer) for a child whose wait status is `wstatus`: exited,
    /// killed, stopped or continued.
    pub fn child(pid: Pid, wstatus: i32) -> Self {
        let (code, status) = if wstatus == 0xffff {
            (CLD_CONTINUED, SIGCONT as i32)
        } else if wstatus & 0xff == 0x7f {
            (CLD_STOPPED, (wstatus >> 8) & 0xff)
        } else if wstatus & 0x7f == 0 {
            (CLD_EXITED, (wstatus >> 8) & 0xff)
        } else {
            (CLD_KILLED, wstatus & 0x7f)
        };
        SigInfo {
            code,
            pid,
            status,
            ..Default::default()
        }
    }

    /// The information a program gives `rt_sigqueueinfo` in a `siginfo_t`: its `si_code`
    /// and the first 16 bytes of its union (`si_pid`, `si_uid`, `si_value`, or `si_addr`, or
    /// `si_status`, as the code's layout reads them), which [`SigInfo::to_user`] gives back
    /// as they were. The union's other 16 bytes (`si_utime`, `si_stime`, `si_addr_lsb`...)
    /// are not kept.
    pub fn from_user(raw: &[u8; SIGINFO]) -> Self {
        let word = |at: usize| u32::from_le_bytes(raw[at..at + 4].try_into().expect("4 bytes"));
        SigInfo {
            code: word(8) as i32,
            pid: word(16),
            uid: word(20),
            addr: get(raw, 16),
            status: word(24) as i32,
            value: get(raw, 24),
            timer: false,
        }
    }

    /// Whether the address is what the union holds: a fault signal with a fault's code.
    fn is_fault(&self, sig: u32) -> bool {
        matches!(sig, SIGSEGV | SIGBUS | SIGILL | SIGFPE | SIGTRAP) && self.code > 0
    }

    /// Whether it is a child's report (`si_status` in the union).
    fn is_child(&self, sig: u32) -> bool {
        sig == SIGCHLD && self.code > 0 && self.code < SI_KERNEL
    }

    /// The `siginfo_t` a handler, `rt_sigtimedwait` or `waitid` gets for signal `sig`.
    pub fn to_user(self, sig: u32) -> [u8; SIGINFO] {
        let mut buf = [0u8; SIGINFO];
        put32(&mut buf, 0, sig);
        put32(&mut buf, 8, self.code as u32);
        if self.is_fault(sig) {
            put(&mut buf, 16, self.addr);
        } else {
            put32(&mut buf, 16, self.pid);
            put32(&mut buf, 20, self.uid);
            if self.is_child(sig) {
                put32(&mut buf, 24, self.status as u32);
            } else {
                put(&mut buf, 24, self.value);
            }
        }
        buf
    }

    /// The `struct signalfd_siginfo` a `signalfd` read gives for signal `sig`: the fields of
    /// the code's layout, as Linux's `signalfd_copyinfo` fills them.
    pub fn to_signalfd(self, sig: u32) -> [u8; SIGINFO] {
        let mut buf = [0u8; SIGINFO];
        put32(&mut buf, 0, sig);
        put32(&mut buf, 8, self.code as u32);
        if self.is_fault(sig) {
            put(&mut buf, 72, self.addr);
        } else if self.code == SI_TIMER {
            put32(&mut buf, 24, self.pid);
            put32(&mut buf, 32, self.uid);
            put32(&mut buf, 44, self.value as u32);
            put(&mut buf, 48, self.value);
        } else {
            put32(&mut buf, 12, self.pid);
            put32(&mut buf, 16, self.uid);
            if self.is_child(sig) {
                put32(&mut buf, 40, self.status as u32);
            } else if self.code < 0 {
                put32(&mut buf, 44, self.value as u32);
                put(&mut buf, 48, self.value);
            }
        }
        buf
    }
}

/// Pending signals' information: one `siginfo` per standard signal, a queue per real-time
/// one (the pending set itself is the `pending` word beside it).
pub struct Queue {
    /// Information of pending standard signals, indexed by signal number - 1.
    infos: [SigInfo; (SIGRTMIN - 1) as usize],
    /// Queued real-time signals, indexed by signal number - [`SIGRTMIN`], oldest first.
    /// A real-time signal pending without an entry lost its information (see the module).
    rt: [VecDeque<SigInfo>; NRT],
}

impl Queue {
    /// Nothing queued (no memory held).
    fn new() -> Self {
        Queue {
            infos: [SigInfo::default(); (SIGRTMIN - 1) as usize],
            rt: core::array::from_fn(|_| VecDeque::new()),
        }
    }

    /// Makes `sig` pending in `set` with `info`, charging a queued real-time signal to `p`
    /// (below `limit`). A standard signal already pending stays as it was. Past the limit or
    /// out of memory, a real-time signal from `kill` or the kernel becomes pending without
    /// its information; from anyone else, `EAGAIN`.
    fn add(
        &mut self,
        set: &mut u64,
        sig: u32,
        info: SigInfo,
        p: &Process,
        limit: u64,
    ) -> Result<(), Errno> {
        if info.timer && self.add_overrun(*set, sig, info) {
            return Ok(());
        }
        if sig < SIGRTMIN {
            if *set & bit(sig) == 0 {
                *set |= bit(sig);
                self.infos[(sig - 1) as usize] = info;
            }
            return Ok(());
        }
        let q = &mut self.rt[(sig - SIGRTMIN) as usize];
        if info.timer {
            // Charged to the timer already; without memory the expiry is lost.
            if q.try_reserve(1).is_ok() {
                q.push_back(info);
                *set |= bit(sig);
            }
            return Ok(());
        }
        let limit = usize::try_from(limit).unwrap_or(usize::MAX);
        let charged = p
            .rt_queued
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < limit).then_some(n + 1)
            })
            .is_ok();
        if charged && q.try_reserve(1).is_ok() {
            q.push_back(info);
        } else {
            if charged {
                p.rt_queued.fetch_sub(1, Ordering::AcqRel);
            }
            if info.code != SI_USER && info.code != SI_KERNEL {
                return Err(Errno::EAGAIN);
            }
        }
        *set |= bit(sig);
        Ok(())
    }

    /// If the signal `sig` of the timer that sends `info` is still pending in `set`, adds the
    /// new expiration and those `info` stands for to its overrun count (Linux's
    /// `send_sigqueue` of a queued `sigqueue`) and returns true.
    fn add_overrun(&mut self, set: u64, sig: u32, info: SigInfo) -> bool {
        if set & bit(sig) == 0 {
            return false;
        }
        let mine = |i: &SigInfo| i.timer && i.pid == info.pid;
        let queued = if sig < SIGRTMIN {
            Some(&mut self.infos[(sig - 1) as usize]).filter(|i| mine(i))
        } else {
            self.rt[(sig - SIGRTMIN) as usize]
                .iter_mut()
                .find(|i| mine(i))
        };
        match queued {
            Some(q) => {
                q.uid = q
                    .uid
                    .saturating_add(1)
                    .saturating_add(info.uid)
                    .min(i32::MAX as u32);
                true
            }
            None => false,
        }
    }

    /// Removes the pending signals of POSIX timer `id` (every timer's: `None`) from `set`.
    fn forget_timers(&mut self, set: &mut u64, id: Option<u32>) {
        let mine = |i: &SigInfo| i.timer && id.is_none_or(|id| i.pid == id);
        for sig in 1..SIGRTMIN {
            if *set & bit(sig) != 0 && mine(&self.infos[(sig - 1) as usize]) {
                *set &= !bit(sig);
            }
        }
        for (n, q) in self.rt.iter_mut().enumerate() {
            if q.iter().any(mine) {
                q.retain(|i| !mine(i));
                if q.is_empty() {
                    *set &= !bit(SIGRTMIN + n as u32);
                    *q = VecDeque::new();
                }
            }
        }
    }

    /// Takes pending signal `sig` out of `set`: its information (a real-time signal's oldest),
    /// refunding a queued one to `p`. A real-time signal stays pending while more are queued.
    fn take(&mut self, set: &mut u64, sig: u32, p: &Process) -> SigInfo {
        if sig < SIGRTMIN {
            *set &= !bit(sig);
            return self.infos[(sig - 1) as usize];
        }
        let q = &mut self.rt[(sig - SIGRTMIN) as usize];
        let info = match q.pop_front() {
            Some(info) => {
                if !info.timer {
                    p.rt_queued.fetch_sub(1, Ordering::AcqRel);
                }
                info
            }
            // Pending without its information (see `add`): as Linux, a plain SI_USER.
            None => SigInfo::default(),
        };
        if q.is_empty() {
            *set &= !bit(sig);
            // An emptied queue gives its memory back.
            *q = VecDeque::new();
        }
        info
    }

    /// Removes the signals of `which` from `set`, refunding their queued entries to `p`.
    fn discard(&mut self, set: &mut u64, which: u64, p: &Process) {
        let mut gone = *set & which;
        *set &= !which;
        while gone != 0 {
            let sig = gone.trailing_zeros() + 1;
            gone &= !bit(sig);
            if sig >= SIGRTMIN {
                let q = core::mem::take(&mut self.rt[(sig - SIGRTMIN) as usize]);
                let charged = q.iter().filter(|i| !i.timer).count();
                p.rt_queued.fetch_sub(charged, Ordering::AcqRel);
            }
        }
    }
}

/// Process-wide signal state.
pub struct SignalState {
    /// Actions, indexed by signal number - 1.
    pub actions: [SigAction; NSIG as usize],
    /// Signals pending for the process (any thread may take them).
    pub pending: u64,
    /// Information of pending process-wide signals.
    queue: Queue,
    /// `RLIMIT_SIGPENDING` (soft, hard): how many real-time signals may be queued for the
    /// process and its threads. Inherited by `fork`, kept by `execve`.
    pub limit: [u64; 2],
    /// How many times the `SIGCHLD` action was set (what it makes of children's exits may
    /// have changed): the number of the latest time, which the process table's record of it
    /// carries ([`UpdateOp::SetChildExit`]).
    child_exit_changes: u64,
}

impl SignalState {
    /// Default actions, nothing pending.
    pub fn new() -> Self {
        SignalState {
            actions: [SigAction::default(); NSIG as usize],
            pending: 0,
            queue: Queue::new(),
            limit: [SIGPENDING_DEFAULT; 2],
            child_exit_changes: 0,
        }
    }

    /// The state a child of `fork` inherits: the same actions and limit, nothing pending
    /// (its process table entry starts with its [`SignalState::on_child_exit`], as change 0).
    pub fn forked(&self) -> Self {
        SignalState {
            actions: self.actions,
            pending: 0,
            queue: Queue::new(),
            limit: self.limit,
            child_exit_changes: 0,
        }
    }

    /// What its `SIGCHLD` action makes of its children's exits, as Linux's
    /// `do_notify_parent`: `SIG_IGN` reaps them without a signal, `SA_NOCLDWAIT` (with a
    /// handler or `SIG_DFL`) reaps them and still sends `SIGCHLD`; otherwise (`SIG_DFL`, whose
    /// default action ignores the signal, included) they become zombies.
    pub fn on_child_exit(&self) -> OnChildExit {
        let a = self.actions[(SIGCHLD - 1) as usize];
        if a.handler == SIG_IGN {
            OnChildExit::ReapQuietly
        } else if a.flags & SA_NOCLDWAIT != 0 {
            OnChildExit::Reap
        } else {
            OnChildExit::Zombie
        }
    }

    /// Numbers what its `SIGCHLD` action now makes of children's exits as a new change, for
    /// the process table ([`publish_child_exit`]).
    fn child_exit_change(&mut self) -> (u64, OnChildExit) {
        self.child_exit_changes += 1;
        (self.child_exit_changes, self.on_child_exit())
    }
}

/// Records what `p` makes of its children's exits in the process table, if `change` (from
/// [`SignalState::child_exit_change`], taken under the signal lock, which is released by
/// now) says. It is there when this returns: an exit the table orders after it follows it; one
/// ordered before it happened, in the table's order, before the change. Of two changes that
/// reach the log in the other order than they were made, the older is ignored.
fn publish_child_exit(p: &Process, change: Option<(u64, OnChildExit)>) {
    if let Some((seq, on_child_exit)) = change {
        super::table().execute_mut(UpdateOp::SetChildExit {
            pid: p.pid,
            seq,
            on_child_exit,
        });
    }
}

/// `execve`'s signal actions: handled signals revert to the default, ignored ones stay
/// ignored.
pub fn exec(p: &Process) {
    let change = {
        let mut s = p.signals.lock();
        let before = s.on_child_exit();
        for a in s.actions.iter_mut() {
            if a.handler != SIG_IGN {
                *a = SigAction::default();
            }
        }
        (s.on_child_exit() != before).then(|| s.child_exit_change())
    };
    publish_child_exit(p, change);
}

impl Default for SignalState {
    fn default() -> Self {
        Self::new()
    }
}

/// A thread's signal mask and own pending signals.
pub struct ThreadSignals {
    /// Blocked signals.
    pub mask: u64,
    /// Signals sent to this thread.
    pub pending: u64,
    /// The mask to restore after the next handler (`rt_sigsuspend` replaced it).
    pub saved: Option<u64>,
    /// The mask before `rt_sigtimedwait` unblocked the signals it waits for (Linux's
    /// `real_blocked`): they still count as blocked for [`ignored`]. 0 otherwise.
    pub real_blocked: u64,
    /// The alternate signal stack (`sigaltstack`), where `SA_ONSTACK` handlers run.
    pub alt_stack: Option<AltStack>,
    /// Information of the signals pending for this thread.
    queue: Queue,
}

impl ThreadSignals {
    /// Nothing pending, `mask` blocked.
    pub fn new(mask: u64) -> Self {
        ThreadSignals {
            mask: mask & !UNBLOCKABLE,
            pending: 0,
            saved: None,
            real_blocked: 0,
            alt_stack: None,
            queue: Queue::new(),
        }
    }
}

/// An alternate signal stack: `size` bytes from `base` (Linux's `stack_t` without the flags).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AltStack {
    /// Its lowest address (`ss_sp`).
    pub base: u64,
    /// Its size in bytes (`ss_size`).
    pub size: u64,
}

impl AltStack {
    /// Whether the stack pointer `sp` is on it (a handler running there).
    pub fn holds(&self, sp: u64) -> bool {
        sp > self.base && sp <= self.base.saturating_add(self.size)
    }
}

/// `stack_t`'s `ss_flags`: the thread runs on its alternate stack now.
pub const SS_ONSTACK: i32 = 1;
/// `stack_t`'s `ss_flags`: no alternate stack.
pub const SS_DISABLE: i32 = 2;

/// `stack_t` as `sigaltstack` and `uc_stack` hold it: `ss_sp`, `ss_flags`, `ss_size`.
pub fn stack_t(alt: Option<AltStack>, sp: u64) -> [u8; 24] {
    let mut out = [0u8; 24];
    let flags = match alt {
        None => SS_DISABLE,
        Some(a) if a.holds(sp) => SS_ONSTACK,
        Some(_) => 0,
    };
    let (base, size) = alt.map_or((0, 0), |a| (a.base, a.size));
    out[0..8].copy_from_slice(&base.to_le_bytes());
    out[8..12].copy_from_slice(&flags.to_le_bytes());
    out[16..24].copy_from_slice(&size.to_le_bytes());
    out
}

/// Checks that `sig` is a signal number (1..=`NSIG`); `EINVAL` otherwise.
fn valid(sig: u32) -> Result<(), Errno> {
    if (1..=NSIG).contains(&sig) {
        Ok(())
    } else {
        Err(Errno::EINVAL)
    }
}

/// What the default action of `sig` does.
fn default_kills(sig: u32) -> bool {
    !matches!(
        sig,
        SIGCHLD | SIGURG | SIGWINCH | SIGCONT | SIGSTOP | SIGTSTP | SIGTTIN | SIGTTOU
    )
}

/// Whether the default action of `sig` stops the process.
fn default_stops(sig: u32) -> bool {
    matches!(sig, SIGSTOP | SIGTSTP | SIGTTIN | SIGTTOU)
}

/// Whether `p` asked for no SIGCHLD when a child stops or continues (`SA_NOCLDSTOP`).
pub fn no_child_stop(p: &Process) -> bool {
    p.signals.lock().actions[(SIGCHLD - 1) as usize].flags & SA_NOCLDSTOP != 0
}

/// Whether `p` ignores `sig` or every thread of it blocks it (`tty::read` asks this of
/// `SIGTTIN` before it signals a background reader: Linux answers `EIO` then).
pub fn ignores_or_blocks(p: &Process, sig: u32) -> bool {
    let ign = p.signals.lock().actions[(sig - 1) as usize].handler == SIG_IGN;
    ign || p
        .threads
        .lock()
        .iter()
        .all(|t| t.signals.lock().mask & bit(sig) != 0)
}

/// What sending `sig` to `p` does at once, before it is queued (Linux's `prepare_signal`):
/// `SIGCONT` continues a stopped process and discards pending stop signals; a stop signal
/// discards a pending `SIGCONT`.
fn on_send(p: &Arc<Process>, sig: u32) {
    let stops = bit(SIGSTOP) | bit(SIGTSTP) | bit(SIGTTIN) | bit(SIGTTOU);
    if sig == SIGCONT {
        discard(p, stops);
        super::job::resume(p);
    } else if stops & bit(sig) != 0 {
        discard(p, bit(SIGCONT));
    }
}

/// Removes the signals of `set` from what is pending for `p` and each of its threads.
fn discard(p: &Process, set: u64) {
    {
        let mut s = p.signals.lock();
        let s = &mut *s;
        s.queue.discard(&mut s.pending, set, p);
    }
    for t in p.threads.lock().iter() {
        let mut s = t.signals.lock();
        let s = &mut *s;
        s.queue.discard(&mut s.pending, set, p);
    }
}

/// The current thread ends: the real-time signals queued for it alone go, and their charge
/// to its process with them.
pub fn thread_gone(me: &Thread) {
    let mut s = me.signals.lock();
    let s = &mut *s;
    s.queue.discard(&mut s.pending, u64::MAX, &me.process);
}

/// The process has ended: what was pending for it goes (its memory now, not at reaping).
pub fn process_gone(p: &Process) {
    let mut s = p.signals.lock();
    let s = &mut *s;
    s.queue.discard(&mut s.pending, u64::MAX, p);
}

/// Removes the pending signals of `p`'s POSIX timer `id` (all timers': `None`) from the
/// process and its threads (`timer_delete`, `execve`).
pub fn forget_timers(p: &Process, id: Option<u32>) {
    {
        let mut s = p.signals.lock();
        let s = &mut *s;
        s.queue.forget_timers(&mut s.pending, id);
    }
    for t in p.threads.lock().iter() {
        let mut s = t.signals.lock();
        let s = &mut *s;
        s.queue.forget_timers(&mut s.pending, id);
    }
}

/// Whether `sig` would be discarded on arrival (ignored, or default-ignored). Process 1 is
/// never stopped by a default action (as Linux's init ignores what it does not handle): a
/// program cannot freeze the system with `kill(1, SIGSTOP)`, nor Ctrl-Z a script run as init.
fn ignored(p: &Process, sig: u32) -> bool {
    let a = p.signals.lock().actions[(sig - 1) as usize];
    let default_acts = default_kills(sig) || (default_stops(sig) && p.pid != 1);
    let ignores = a.handler == SIG_IGN || (a.handler == SIG_DFL && !default_acts);
    if sig == SIGKILL || !ignores {
        return false;
    }
    // As Linux's `sig_ignored`: a signal the main thread blocks (or waits for in
    // `rt_sigtimedwait`) stays pending, for `sigwaitinfo`, `signalfd` or a later handler.
    let main = {
        let threads = p.threads.lock();
        threads
            .iter()
            .find(|t| t.tid == p.pid)
            .or(threads.first())
            .cloned()
    };
    !main.is_some_and(|t| {
        let s = t.signals.lock();
        (s.mask | s.real_blocked) & bit(sig) != 0
    })
}

/// Sends `sig` to process `p` (any of its threads may take it) and wakes a thread that can.
/// A real-time signal that finds the queue full becomes pending without its information if
/// it comes from `kill` or the kernel (`SI_USER`, `SI_KERNEL`), else it is dropped: see
/// [`try_send_process`].
pub fn send_process(p: &Arc<Process>, sig: u32, info: SigInfo) {
    let _ = try_send_process(p, sig, info);
}

/// [`send_process`], or `EAGAIN` when a real-time signal with other than `SI_USER` or
/// `SI_KERNEL` finds the process's queue full (`RLIMIT_SIGPENDING`) or no memory.
pub fn try_send_process(p: &Arc<Process>, sig: u32, info: SigInfo) -> Result<(), Errno> {
    if sig == 0 {
        return Ok(());
    }
    on_send(p, sig);
    if ignored(p, sig) {
        return Ok(());
    }
    {
        let mut s = p.signals.lock();
        let s = &mut *s;
        s.queue.add(&mut s.pending, sig, info, p, s.limit[0])?;
    }
    let threads = p.threads.lock().clone();
    for t in &threads {
        t.note_signal();
    }
    let target = threads
        .iter()
        .find(|t| t.signals.lock().mask & bit(sig) == 0)
        .or(threads.first());
    if let Some(t) = target {
        sched::wake(t);
        kick(t);
    }
    if sig == SIGKILL {
        for t in &threads {
            sched::rescue(t);
        }
        // A stopped process's threads wake to die.
        p.resumed.notify_all();
    }
    crate::fs::signalfd::notify(p.pid);
    Ok(())
}

/// Sends `sig` to one thread (see [`send_process`] for a full queue).
pub fn send_thread(t: &Arc<Thread>, sig: u32, info: SigInfo) {
    let _ = try_send_thread(t, sig, info);
}

/// [`send_thread`], or `EAGAIN` as [`try_send_process`].
pub fn try_send_thread(t: &Arc<Thread>, sig: u32, info: SigInfo) -> Result<(), Errno> {
    if sig == 0 {
        return Ok(());
    }
    on_send(&t.process, sig);
    if ignored(&t.process, sig) {
        return Ok(());
    }
    let limit = t.process.signals.lock().limit[0];
    {
        let mut s = t.signals.lock();
        let s = &mut *s;
        s.queue.add(&mut s.pending, sig, info, &t.process, limit)?;
    }
    t.note_signal();
    sched::wake(t);
    kick(t);
    if sig == SIGKILL {
        sched::rescue(t);
        t.process.resumed.notify_all();
    }
    crate::fs::signalfd::notify(t.process.pid);
    Ok(())
}

/// Makes a thread running in user mode on another core enter the kernel soon (it checks
/// signals on its way back).
pub fn kick(t: &Thread) {
    if t.state() == super::ThreadState::Running {
        let core = t.core.load(Ordering::Acquire);
        if core != crate::kcb::current().core_id {
            let _ = crate::ipi::send(core, crate::ipi::IpiKind::Ping);
        }
    }
}

/// Raises a fault signal on the current thread (from an exception in user mode). If the signal
/// is blocked or ignored, its action is reset to the default, so it kills the process.
pub fn force(me: &Arc<Thread>, sig: u32, info: SigInfo) {
    {
        let mut ps = me.process.signals.lock();
        let blocked = me.signals.lock().mask & bit(sig) != 0;
        let a = &mut ps.actions[(sig - 1) as usize];
        if blocked || a.handler == SIG_IGN {
            *a = SigAction::default();
        }
    }
    {
        let mut s = me.signals.lock();
        s.mask &= !bit(sig);
        s.pending |= bit(sig);
        s.queue.infos[(sig - 1) as usize] = info;
    }
    me.note_signal();
}

/// Takes the lowest-numbered deliverable signal of `me`.
fn take(me: &Thread) -> Option<(u32, SigInfo)> {
    let mask = me.signals.lock().mask;
    take_of(me, !mask)
}

/// Takes the lowest-numbered signal of `set` pending for `me`, its own first, then its
/// process's (Linux's `dequeue_signal`): one real-time signal of a queue at a time. For
/// delivery, `rt_sigtimedwait` and `signalfd` reads.
pub fn take_of(me: &Thread, set: u64) -> Option<(u32, SigInfo)> {
    let taken = take_from(me, set);
    if let Some((_, info)) = taken.filter(|(_, i)| i.timer) {
        super::itimer::delivered(&me.process, info.pid as i32, info.uid);
    }
    taken
}

/// [`take_of`] without telling a POSIX timer that its signal was taken.
fn take_from(me: &Thread, set: u64) -> Option<(u32, SigInfo)> {
    {
        let mut own = me.signals.lock();
        let own = &mut *own;
        let ready = own.pending & set;
        if ready != 0 {
            let sig = ready.trailing_zeros() + 1;
            return Some((sig, own.queue.take(&mut own.pending, sig, &me.process)));
        }
    }
    let mut shared = me.process.signals.lock();
    let shared = &mut *shared;
    let ready = shared.pending & set;
    if ready != 0 {
        let sig = ready.trailing_zeros() + 1;
        return Some((
            sig,
            shared.queue.take(&mut shared.pending, sig, &me.process),
        ));
    }
    None
}

/// Whether a signal of `set` is pending for `me` or its process.
pub fn pending_of(me: &Thread, set: u64) -> bool {
    pending(me) & set != 0
}

/// Size of the kernel's part of `struct ucontext`.
const UCONTEXT: usize = 304;
/// Size of `siginfo_t` (and of `struct signalfd_siginfo`).
pub const SIGINFO: usize = 128;
/// The most stack a signal frame takes ([`push_frame`]: the FPU state aligned to 64 bytes,
/// the return address, `ucontext` and `siginfo_t` aligned to 16), reported to programs as
/// `AT_MINSIGSTKSZ`.
pub const FRAME_BYTES: usize = FPU_AREA + 63 + 8 + UCONTEXT + SIGINFO + 15 + 8;
/// Offset of `uc_mcontext` in `ucontext`.
const MCONTEXT: usize = 40;
/// Offset of `uc_stack` (a `stack_t`) in the `ucontext`.
const UC_STACK: usize = 16;
/// Offset of `uc_sigmask` in `ucontext`.
const SIGMASK: usize = 296;

/// Writes `v` as 8 little-endian bytes at offset `at` of `buf`.
fn put(buf: &mut [u8], at: usize, v: u64) {
    buf[at..at + 8].copy_from_slice(&v.to_le_bytes());
}

/// Writes `v` as 4 little-endian bytes at offset `at` of `buf`.
fn put32(buf: &mut [u8], at: usize, v: u32) {
    buf[at..at + 4].copy_from_slice(&v.to_le_bytes());
}

/// Reads 8 little-endian bytes at offset `at` of `buf`.
fn get(buf: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(buf[at..at + 8].try_into().expect("8 bytes"))
}

/// `sigcontext` register order (as `gregs` in `ucontext_t`).
fn gregs(f: &InterruptFrame) -> [u64; 18] {
    [
        f.r8, f.r9, f.r10, f.r11, f.r12, f.r13, f.r14, f.r15, f.rdi, f.rsi, f.rbp, f.rbx, f.rdx,
        f.rax, f.rcx, f.rsp, f.rip, f.rflags,
    ]
}

/// Delivers pending signals to the current thread on its way to user mode: runs default
/// actions, or builds a signal frame on the user stack and points the thread at the handler.
pub fn deliver(me: &Arc<Thread>, frame: &mut InterruptFrame) {
    let Some((sig, info)) = take(me) else { return };
    let action = me.process.signals.lock().actions[(sig - 1) as usize];
    if action.handler == SIG_IGN || action.handler == SIG_DFL {
        // No handler runs: a mask saved by rt_sigsuspend, ppoll or pselect6 comes back now.
        let restored = {
            let mut s = me.signals.lock();
            let saved = s.saved.take();
            if let Some(m) = saved {
                s.mask = m;
            }
            saved.is_some()
        };
        if restored {
            me.note_signal();
        }
    }
    let interrupted_call =
        frame.vector == user::SYSCALL_VECTOR && frame.rax as i64 == Errno::EINTR.to_return() as i64;
    // A terminal stop signal (not SIGSTOP) does nothing to an orphaned process group, as on
    // Linux (`proc::job`).
    let ignores = action.handler == SIG_IGN
        || action.handler == SIG_DFL && !default_stops(sig) && !default_kills(sig)
        || action.handler == SIG_DFL
            && default_stops(sig)
            && sig != SIGSTOP
            && super::job::in_orphaned_group(&me.process);
    if ignores {
        // No handler runs, so a system call the signal interrupted runs again, as on Linux
        // (a blocked signal with nothing to do, kept pending for `sigwaitinfo` or `signalfd`,
        // wakes a thread that does not block it).
        if interrupted_call {
            frame.rax = frame.error_code;
            frame.rip -= 2;
            frame.vector = 0;
        }
        return;
    }
    if action.handler == SIG_DFL {
        if default_stops(sig) {
            // A system call the stop interrupted runs again once the process continues, as
            // on Linux when no handler runs.
            if frame.vector == user::SYSCALL_VECTOR
                && frame.rax as i64 == Errno::EINTR.to_return() as i64
                && !never_restarted(frame.error_code)
            {
                frame.rax = frame.error_code;
                frame.rip -= 2;
                frame.vector = 0;
            }
            super::job::stop(me, sig);
        } else if default_kills(sig) {
            super::begin_group_exit(&me.process, sig as i32);
        }
        return;
    }
    // A syscall interrupted by this signal: restart it (SA_RESTART) or let it return EINTR.
    if frame.vector == user::SYSCALL_VECTOR && frame.rax as i64 == Errno::EINTR.to_return() as i64 {
        if action.flags & SA_RESTART != 0 && !never_restarted(frame.error_code) {
            frame.rax = frame.error_code;
            frame.rip -= 2;
        }
        frame.vector = 0;
    }
    let old_mask = {
        let mut s = me.signals.lock();
        s.saved.take().unwrap_or(s.mask)
    };
    if let Err(()) = push_frame(me, frame, sig, &info, &action, old_mask) {
        force(me, SIGSEGV, SigInfo::default());
        let mut ps = me.process.signals.lock();
        ps.actions[(SIGSEGV - 1) as usize] = SigAction::default();
        return;
    }
    let mut s = me.signals.lock();
    s.mask |= action.mask & !UNBLOCKABLE;
    if action.flags & SA_NODEFER == 0 {
        s.mask |= bit(sig);
    }
    drop(s);
    if action.flags & SA_RESETHAND != 0 {
        // As Linux: only the handler goes back to the default; flags and mask stay.
        me.process.signals.lock().actions[(sig - 1) as usize].handler = SIG_DFL;
    }
}

/// Pushes the Linux x86-64 signal frame on the user stack (below the red zone): the FPU state,
/// the `sa_restorer` return address, a `ucontext` holding the registers and `old_mask`, and the
/// `siginfo_t`; then points `frame` at the handler with the signal number, the `siginfo_t` and
/// the `ucontext` as its arguments. Fails if the frame cannot be written to user memory.
fn push_frame(
    me: &Thread,
    frame: &mut InterruptFrame,
    sig: u32,
    info: &SigInfo,
    action: &SigAction,
    old_mask: u64,
) -> Result<(), ()> {
    // An SA_ONSTACK handler starts at the top of the alternate stack, unless the thread already
    // runs there (a nested signal goes on below, past the red zone, as on the normal stack).
    let alt = me.signals.lock().alt_stack;
    let mut sp = match alt {
        Some(a) if action.flags & SA_ONSTACK != 0 && !a.holds(frame.rsp) => {
            a.base.checked_add(a.size).ok_or(())?
        }
        _ => frame.rsp.checked_sub(128).ok_or(())?,
    };
    sp = (sp - FPU_AREA as u64) & !63;
    let fpstate = sp;
    uaccess::copy_to_user(fpstate, &me.fpu()[..]).map_err(|_| ())?;
    sp -= (8 + UCONTEXT + SIGINFO) as u64;
    sp = (sp & !15) - 8;
    let mut buf = [0u8; 8 + UCONTEXT + SIGINFO];
    put(&mut buf, 0, action.restorer);
    let uc = 8;
    for (i, r) in gregs(frame).iter().enumerate() {
        put(&mut buf, uc + MCONTEXT + 8 * i, *r);
    }
    let csgsfs = USER_CS | (USER_SS << 48);
    put(&mut buf, uc + MCONTEXT + 144, csgsfs);
    put(&mut buf, uc + MCONTEXT + 152, frame.error_code);
    put(&mut buf, uc + MCONTEXT + 160, frame.vector);
    put(&mut buf, uc + MCONTEXT + 168, old_mask);
    put(&mut buf, uc + MCONTEXT + 176, info.addr);
    put(&mut buf, uc + MCONTEXT + 184, fpstate);
    put(&mut buf, uc + SIGMASK, old_mask);
    buf[uc + UC_STACK..uc + UC_STACK + 24].copy_from_slice(&stack_t(alt, frame.rsp));
    let si = 8 + UCONTEXT;
    buf[si..si + SIGINFO].copy_from_slice(&info.to_user(sig));
    uaccess::copy_to_user(sp, &buf).map_err(|_| ())?;
    frame.rsp = sp;
    frame.rip = action.handler;
    frame.rdi = sig as u64;
    frame.rsi = sp + si as u64;
    frame.rdx = sp + uc as u64;
    frame.rax = 0;
    frame.rflags &= !(1 << 10 | 1 << 8);
    Ok(())
}

/// `rt_sigreturn`: restores the registers, FPU state and mask saved by [`deliver`]. The user
/// controls the frame, so every value is checked: the instruction pointer must be canonical
/// user space, segments are forced to the user ones, and only harmless flags are taken.
pub fn sigreturn(me: &Arc<Thread>, frame: &mut InterruptFrame) -> Result<(), Errno> {
    let uc = frame.rsp;
    let mut buf = [0u8; UCONTEXT];
    uaccess::copy_from_user(uc, &mut buf)?;
    let r = |i: usize| get(&buf, MCONTEXT + 8 * i);
    let rip = r(16);
    if rip >= USER_END {
        return Err(Errno::EFAULT);
    }
    let fpstate = get(&buf, MCONTEXT + 184);
    if fpstate != 0 {
        let mut fpu = [0u8; FPU_AREA];
        uaccess::copy_from_user(fpstate, &mut fpu)?;
        let mxcsr = u32::from_le_bytes(fpu[24..28].try_into().expect("4 bytes")) & 0xffff;
        fpu[24..28].copy_from_slice(&mxcsr.to_le_bytes());
        // A whole image: the software bytes are the kernel's (see `user::complete_fpu`).
        fpu[user::XMM_ONLY..].fill(0);
        *me.fpu() = fpu;
    }
    frame.r8 = r(0);
    frame.r9 = r(1);
    frame.r10 = r(2);
    frame.r11 = r(3);
    frame.r12 = r(4);
    frame.r13 = r(5);
    frame.r14 = r(6);
    frame.r15 = r(7);
    frame.rdi = r(8);
    frame.rsi = r(9);
    frame.rbp = r(10);
    frame.rbx = r(11);
    frame.rdx = r(12);
    frame.rax = r(13);
    frame.rcx = r(14);
    frame.rsp = r(15);
    frame.rip = rip;
    const USER_FLAGS: u64 = 0x0000_0000_0025_0fd5;
    frame.rflags = (frame.rflags & !USER_FLAGS) | (r(17) & USER_FLAGS) | (1 << 9);
    frame.cs = USER_CS;
    frame.ss = USER_SS;
    frame.vector = 0;
    me.signals.lock().mask = get(&buf, SIGMASK) & !UNBLOCKABLE;
    me.note_signal();
    Ok(())
}

/// `rt_sigaction`.
pub fn set_action(p: &Process, sig: u32, new: Option<SigAction>) -> Result<SigAction, Errno> {
    valid(sig)?;
    let mut s = p.signals.lock();
    let old = s.actions[(sig - 1) as usize];
    if let Some(mut a) = new {
        if sig == SIGKILL || sig == SIGSTOP {
            return Err(Errno::EINVAL);
        }
        a.flags &= SUPPORTED_FLAGS;
        a.mask &= !UNBLOCKABLE;
        s.actions[(sig - 1) as usize] = a;
        // Every new SIGCHLD action goes to the table, even one that changes nothing there: a
        // change another thread made may still be on its way to the log, and this call must
        // not return before the table has what the action it leaves makes of exits.
        let change = (sig == SIGCHLD).then(|| s.child_exit_change());
        drop(s);
        publish_child_exit(p, change);
        // As Linux: a signal now ignored is no longer pending, for the process or any thread.
        if a.handler == SIG_IGN || (a.handler == SIG_DFL && !default_kills(sig)) {
            discard(p, bit(sig));
        }
    }
    Ok(old)
}

/// `rt_sigprocmask`: `how` is SIG_BLOCK (0), SIG_UNBLOCK (1) or SIG_SETMASK (2).
pub fn set_mask(me: &Thread, how: u64, set: Option<u64>) -> Result<u64, Errno> {
    let old = {
        let mut s = me.signals.lock();
        let old = s.mask;
        if let Some(set) = set {
            s.mask = match how {
                0 => old | set,
                1 => old & !set,
                2 => set,
                _ => return Err(Errno::EINVAL),
            } & !UNBLOCKABLE;
        }
        old
    };
    if set.is_some() {
        me.note_signal();
    }
    Ok(old)
}

/// Signals pending for the thread (own and process-wide), for `rt_sigpending`.
pub fn pending(me: &Thread) -> u64 {
    me.signals.lock().pending | me.process.signals.lock().pending
}

/// Checks a signal number from user space (0 allowed: "may I send?").
pub fn check(sig: u64) -> Result<u32, Errno> {
    if sig > NSIG as u64 {
        Err(Errno::EINVAL)
    } else {
        Ok(sig as u32)
    }
}

/// Name of a signal, for reports.
pub fn name(sig: u32) -> &'static str {
    match sig {
        SIGHUP => "SIGHUP",
        SIGINT => "SIGINT",
        3 => "SIGQUIT",
        SIGILL => "SIGILL",
        SIGTRAP => "SIGTRAP",
        SIGABRT => "SIGABRT",
        SIGBUS => "SIGBUS",
        SIGFPE => "SIGFPE",
        SIGKILL => "SIGKILL",
        10 => "SIGUSR1",
        SIGSEGV => "SIGSEGV",
        12 => "SIGUSR2",
        SIGPIPE => "SIGPIPE",
        14 => "SIGALRM",
        SIGTERM => "SIGTERM",
        SIGCHLD => "SIGCHLD",
        SIGCONT => "SIGCONT",
        SIGSTOP => "SIGSTOP",
        SIGTSTP => "SIGTSTP",
        _ => "signal",
    }
}
