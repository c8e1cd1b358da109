//! Process and thread calls: fork, clone, execve, exit, wait, ids, futex, process groups.

use super::SysResult;
use crate::arch::idt::InterruptFrame;
use crate::arch::user::{self, USER_END};
use crate::proc::table::{self, ReadOp, Resp, UpdateOp, WaitFor};
use crate::proc::wait::Wake;
use crate::proc::{self, sched, signal, Pid, Process, Thread};
use crate::uaccess::{self, read_user, write_user};
use abi::Errno;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::sync::atomic::Ordering;

/// `CLONE_VM`: the child shares the caller's address space.
const CLONE_VM: u64 = 0x100;
/// `CLONE_FS`: share file-system information (root, working directory, umask).
const CLONE_FS: u64 = 0x200;
/// `CLONE_FILES`: share the descriptor table.
const CLONE_FILES: u64 = 0x400;
/// `CLONE_SIGHAND`: share the signal actions (required with `CLONE_THREAD`).
const CLONE_SIGHAND: u64 = 0x800;
/// `CLONE_VFORK`: the caller waits until the child execs or exits.
const CLONE_VFORK: u64 = 0x4000;
/// `CLONE_THREAD`: the child is a new thread of the caller's process.
const CLONE_THREAD: u64 = 0x10000;
/// `CLONE_SYSVSEM`: share System V semaphore undo values (accepted, no effect).
const CLONE_SYSVSEM: u64 = 0x40000;
/// `CLONE_SETTLS`: the child's TLS (FS) base is the `tls` argument.
const CLONE_SETTLS: u64 = 0x80000;
/// `CLONE_PARENT_SETTID`: store the child's id at `ptid` in the caller's memory.
const CLONE_PARENT_SETTID: u64 = 0x100000;
/// `CLONE_CHILD_CLEARTID`: when the child exits, clear the word at `ctid` and wake a futex waiter
/// on it.
const CLONE_CHILD_CLEARTID: u64 = 0x200000;
/// `CLONE_DETACHED`: obsolete; accepted and ignored.
const CLONE_DETACHED: u64 = 0x400000;
/// `CLONE_CHILD_SETTID`: store the child's id at `ctid` in the child's memory.
const CLONE_CHILD_SETTID: u64 = 0x1000000;
/// Flags Reef implements; anything else is EINVAL rather than silently ignored.
const CLONE_SUPPORTED: u64 = 0xff
    | CLONE_VM
    | CLONE_FS
    | CLONE_FILES
    | CLONE_SIGHAND
    | CLONE_VFORK
    | CLONE_THREAD
    | CLONE_SYSVSEM
    | CLONE_SETTLS
    | CLONE_PARENT_SETTID
    | CLONE_CHILD_CLEARTID
    | CLONE_DETACHED
    | CLONE_CHILD_SETTID;

/// `WNOHANG`: return at once when no child has exited.
const WNOHANG: u64 = 1;
/// `WUNTRACED` (`waitid`'s `WSTOPPED`): also report stopped children.
const WUNTRACED: u64 = 2;
/// `WEXITED` (`waitid`): report children that have exited.
const WEXITED: u64 = 4;
/// `WCONTINUED`: also report continued children.
const WCONTINUED: u64 = 8;
/// `WNOWAIT` (`waitid`): leave the child waitable instead of reaping it.
const WNOWAIT: u64 = 0x0100_0000;
/// `__WALL`: wait for clone children too (accepted and ignored).
const WALL: u64 = 0x4000_0000;
/// `__WCLONE`: wait for clone children only (accepted and ignored).
const WCLONE: u64 = 0x8000_0000;

/// `getpid()`: the caller's process id.
pub fn getpid(me: &Arc<Thread>, _: &mut InterruptFrame, _: [u64; 6]) -> SysResult {
    Ok(me.process.pid as u64)
}

/// `gettid()`: the caller's thread id.
pub fn gettid(me: &Arc<Thread>, _: &mut InterruptFrame, _: [u64; 6]) -> SysResult {
    Ok(me.tid as u64)
}

/// `getppid()`: the parent's process id.
pub fn getppid(me: &Arc<Thread>, _: &mut InterruptFrame, _: [u64; 6]) -> SysResult {
    Ok(u64::from(me.process.ppid.load(Ordering::Acquire)))
}

/// The new thread of `fork` or `clone`: the caller's registers (with 0 as the call's result,
/// and `newsp` as the stack if given), FPU state, signal mask, alternate signal stack (not for
/// a thread: `CLONE_VM` without `CLONE_VFORK`) and affinity; the TLS base from
/// `tls` with `CLONE_SETTLS`, else the caller's. `ENOMEM` without memory for its stack.
fn child_thread(
    me: &Thread,
    frame: &InterruptFrame,
    tid: Pid,
    process: Arc<Process>,
    flags: u64,
    newsp: u64,
    tls: u64,
) -> Result<Arc<Thread>, Errno> {
    let mut cf = frame.clone();
    cf.rax = 0;
    if newsp != 0 {
        cf.rsp = newsp;
    }
    let fs = if flags & CLONE_SETTLS != 0 {
        tls
    } else {
        me.fs_base.load(Ordering::Relaxed)
    };
    let (mask, alt_stack) = {
        let s = me.signals.lock();
        (s.mask, s.alt_stack)
    };
    let affinity = me.affinity.lock().clone();
    let t = Thread::new(tid, process, &cf, me.fpu(), fs, affinity, mask)?;
    // Priority and policy are inherited, as on Linux.
    t.nice
        .store(me.nice.load(Ordering::Relaxed), Ordering::Relaxed);
    t.policy
        .store(me.policy.load(Ordering::Relaxed), Ordering::Relaxed);
    // A new thread or process starts with its creator's name (a process's is its main
    // thread's).
    t.set_comm(me.comm());
    // As Linux: the alternate signal stack is inherited, except by a thread that shares the
    // address space for good (it runs on a stack of its own).
    if flags & CLONE_VM == 0 || flags & CLONE_VFORK != 0 {
        t.signals.lock().alt_stack = alt_stack;
    }
    Ok(t)
}

/// Creates a new process as a copy of the caller (`fork`, or `clone` without `CLONE_VM`).
fn fork_process(
    me: &Arc<Thread>,
    frame: &InterruptFrame,
    flags: u64,
    newsp: u64,
    ptid: u64,
    ctid: u64,
    tls: u64,
) -> SysResult {
    let parent = &me.process;
    // CLONE_VM (vfork): the child runs in the parent's address space, on the parent's stack,
    // while the parent waits; otherwise it gets a copy.
    let mm = parent.mm.lock();
    let vm = if flags & CLONE_VM != 0 {
        parent.vm()
    } else {
        parent.vm().fork()?
    };
    let brk = *mm;
    drop(mm);
    let pid = proc::next_pid();
    // The child gets a copy of the descriptor table sharing the open files, less mailboxes
    // and connections (CLONE_FILES between processes, a shared table, is treated the same
    // way; see docs/architecture.md).
    let files = parent.files.lock().for_child();
    let cwd = parent.cwd.lock().clone();
    let signals = parent.signals.lock().forked();
    let on_child_exit = signals.on_child_exit();
    let child = Process::new(pid, vm, files, signals, cwd);
    *child.mm.lock() = brk;
    *child.exe.lock() = parent.exe.lock().clone();
    *child.args.lock() = parent.args.lock().clone();
    child
        .umask
        .store(parent.umask.load(Ordering::Relaxed), Ordering::Relaxed);
    *child.creds.lock() = parent.creds.lock().try_clone()?;
    child.personality.store(
        parent.personality.load(Ordering::Relaxed),
        Ordering::Relaxed,
    );
    // The manager's capability passes to its children (until they execute another program);
    // fleet membership does not.
    child.fleet_manager.store(
        parent.fleet_manager.load(Ordering::Acquire),
        Ordering::Release,
    );
    child.exec_turn.store(
        parent.exec_turn.fetch_add(1, Ordering::Relaxed),
        Ordering::Relaxed,
    );
    // No memory for its kernel stack: the child (and the address space just copied for it)
    // goes away here, giving everything back.
    let t = child_thread(me, frame, pid, child.clone(), flags, newsp, tls)?;
    if flags & CLONE_CHILD_CLEARTID != 0 {
        t.clear_child_tid.store(ctid, Ordering::Relaxed);
    }
    // As on Linux, a bad CLONE_CHILD_SETTID or CLONE_PARENT_SETTID address is ignored: the
    // child exists by now and the call succeeds.
    if flags & CLONE_CHILD_SETTID != 0 {
        let _ = child.vm().write_bytes(ctid, &pid.to_le_bytes());
    }
    if flags & CLONE_PARENT_SETTID != 0 {
        let _ = write_user(ptid, &pid);
    }
    child.threads.lock().push(t.clone());
    let vfork = (flags & CLONE_VFORK != 0).then(|| {
        let done = Arc::new(proc::VforkDone::default());
        *child.vfork.lock() = Some(done.clone());
        done
    });
    child.ppid.store(parent.pid, Ordering::Release);
    proc::table().execute_mut(UpdateOp::Spawn {
        pid,
        ppid: parent.pid,
        process: nr::Payload::new(child, proc::table().replica_count()),
        on_child_exit,
    });
    sched::start(t);
    if let Some(done) = vfork {
        done.wait();
    }
    Ok(pid as u64)
}

/// `fork()`: creates a copy of the caller as a new process; returns the child's pid (0 in the
/// child).
pub fn fork(me: &Arc<Thread>, frame: &mut InterruptFrame, _: [u64; 6]) -> SysResult {
    fork_process(me, frame, 17, 0, 0, 0, 0)
}

/// `vfork`: the child borrows the parent's address space, and the parent waits until the
/// child execs or exits.
pub fn vfork(me: &Arc<Thread>, frame: &mut InterruptFrame, _: [u64; 6]) -> SysResult {
    fork_process(me, frame, CLONE_VM | CLONE_VFORK | 17, 0, 0, 0, 0)
}

/// `clone(flags, newsp, ptid, ctid, tls)`: a new process (as `fork`, or as `vfork` with
/// `CLONE_VM | CLONE_VFORK`) or, with `CLONE_THREAD` (which needs `CLONE_VM` and
/// `CLONE_SIGHAND`), a new thread of the caller's process; returns its id. `EINVAL` for
/// unsupported flags or combinations, `EPERM` for a `tls` outside user space, `EAGAIN` while the
/// process exits.
pub fn clone(me: &Arc<Thread>, frame: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    let (flags, newsp, ptid, ctid, tls) = (a[0], a[1], a[2], a[3], a[4]);
    if flags & !CLONE_SUPPORTED != 0 {
        return Err(Errno::EINVAL);
    }
    if flags & CLONE_SETTLS != 0 && tls >= USER_END {
        return Err(Errno::EPERM);
    }
    if flags & CLONE_THREAD == 0 {
        if flags & CLONE_VM != 0 && flags & CLONE_VFORK == 0 {
            // A process sharing the caller's memory for good, not just until it execs (as a
            // vfork child does): not supported.
            return Err(Errno::EINVAL);
        }
        return fork_process(me, frame, flags, newsp, ptid, ctid, tls);
    }
    if flags & (CLONE_VM | CLONE_SIGHAND) != (CLONE_VM | CLONE_SIGHAND) {
        return Err(Errno::EINVAL);
    }
    let p = me.process.clone();
    if p.exiting.load(Ordering::Acquire) {
        return Err(Errno::EAGAIN);
    }
    let tid = proc::next_pid();
    let t = child_thread(me, frame, tid, p.clone(), flags, newsp, tls)?;
    // Bad tid addresses are ignored, as on Linux (and as for a new process above).
    if flags & CLONE_PARENT_SETTID != 0 {
        let _ = write_user(ptid, &tid);
    }
    if flags & CLONE_CHILD_SETTID != 0 {
        let _ = write_user(ctid, &tid);
    }
    if flags & CLONE_CHILD_CLEARTID != 0 {
        t.clear_child_tid.store(ctid, Ordering::Relaxed);
    }
    p.threads.lock().push(t.clone());
    sched::start(t);
    Ok(tid as u64)
}

/// Longest path `execve` accepts.
const PATH_MAX: usize = 4096;
/// Most bytes of arguments plus environment.
const ARG_MAX: usize = 128 * 1024;

/// `execve(path, argv, envp)`: replaces the caller's program with `path`, started with `argv` and
/// `envp`; `EAGAIN` while the process has other threads.
pub fn execve(me: &Arc<Thread>, frame: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    let path = uaccess::read_cstring(a[0], PATH_MAX)?;
    let argv = uaccess::read_string_array(a[1], 4096, ARG_MAX)?;
    let envp = uaccess::read_string_array(a[2], 4096, ARG_MAX)?;
    if me.process.threads.lock().len() > 1 {
        // Linux ends the other threads first (de_thread); Reef does not yet, see
        // docs/architecture.md.
        return Err(Errno::EAGAIN);
    }
    // Hare §3.6 (and Linux's `sched_exec`): the new program is loaded and runs on the core
    // the placement policy chooses.
    crate::exec::place(me);
    let image = crate::exec::load(Some(&me.process), &path, argv, &envp)?;
    if image.ino.is_none() {
        // The program came from Hare: its descriptor's close goes now.
        crate::fs::hare::flush();
    }
    let exe = crate::fs::path::display(&me.process, crate::fs::path::AT_FDCWD, &image.path);
    // The fleet manager's capability goes with its program (`fleet`, in NR-FS).
    let manager = image.ino.is_some_and(crate::fs::is_trusted_exe);
    let owner = image.owner;
    crate::exec::commit(me, frame, image, &exe);
    me.process.creds.lock().exec(owner);
    me.name_after(&path);
    me.process
        .fleet_manager
        .store(manager, core::sync::atomic::Ordering::Release);
    Ok(0)
}

/// `exit(status)`: ends the calling thread; unless the process is already exiting, the low 8 bits
/// of `status` become its exit status.
pub fn exit(me: &Arc<Thread>, _: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    let p = &me.process;
    if !p.exiting.load(Ordering::Acquire) {
        p.exit_status
            .store(((a[0] & 0xff) << 8) as i32, Ordering::Release);
    }
    proc::request_exit(me);
    Ok(0)
}

/// `exit_group(status)`: ends every thread of the process, with the low 8 bits of `status` as its
/// exit status.
pub fn exit_group(me: &Arc<Thread>, _: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    proc::begin_group_exit(&me.process, ((a[0] & 0xff) << 8) as i32);
    Ok(0)
}

/// The children a `wait4` `pid` selects: -1 any, 0 the caller's process group, below -1 the group
/// `-pid`, else that process (`ECHILD` if it cannot be one).
fn wait_target(me: &Process, pid: i64) -> Result<WaitFor, Errno> {
    Ok(match pid {
        -1 => WaitFor::Any,
        0 => WaitFor::Group(proc::lookup(me.pid).map(|e| e.pgid).unwrap_or(me.pid)),
        p if p < -1 => WaitFor::Group(p.unsigned_abs() as Pid),
        p => WaitFor::Pid(Pid::try_from(p).map_err(|_| Errno::ECHILD)?),
    })
}

/// What a wait asks for: its `options` bits decoded.
#[derive(Clone, Copy)]
struct WaitWhat {
    /// Children that exited (always for `wait4`; `WEXITED` for `waitid`).
    exited: bool,
    /// Children that stopped (`WUNTRACED`, `WSTOPPED`).
    stopped: bool,
    /// Children that continued (`WCONTINUED`).
    continued: bool,
    /// Return at once if none is ready (`WNOHANG`).
    nohang: bool,
    /// Leave what is found to be waited for again (`WNOWAIT`).
    nowait: bool,
}

impl WaitWhat {
    /// The waits `options` asks for; `exited` whether exits are reported.
    fn new(options: u64, exited: bool) -> WaitWhat {
        WaitWhat {
            exited,
            stopped: options & WUNTRACED != 0,
            continued: options & WCONTINUED != 0,
            nohang: options & WNOHANG != 0,
            nowait: options & WNOWAIT != 0,
        }
    }
}

/// Waits for a child matching `which` that exited (reaped unless `nowait`), stopped or
/// continued, as `what` asks: its pid, wait status and user and system time in ticks (its
/// reaped children's included; a reaping parent adds them to its own children's time).
/// `Ok(None)`: `nohang` and none yet. `ECHILD` once no child matches: children reaped at
/// their exit (the parent ignores `SIGCHLD` or set `SA_NOCLDWAIT`) are never zombies here,
/// and the exit of the last wakes the wait to answer so.
fn wait_child(
    p: &Process,
    which: WaitFor,
    what: WaitWhat,
) -> Result<Option<(Pid, i32, [u64; 2])>, Errno> {
    loop {
        let seq = p.child_events.seq();
        let any = match proc::table().execute(ReadOp::FindZombie(p.pid, which)) {
            Resp::Zombie(Some((pid, status)), _) if what.exited => {
                let ticks = proc::lookup(pid).map_or([0; 2], |e| e.process.total_ticks());
                if what.nowait {
                    return Ok(Some((pid, status, ticks)));
                }
                if let Resp::Done(Ok(_)) = proc::table().execute_mut(UpdateOp::Reap { pid }) {
                    for (total, t) in p.children_ticks.iter().zip(ticks) {
                        total.fetch_add(t, Ordering::Relaxed);
                    }
                    return Ok(Some((pid, status, ticks)));
                }
                continue;
            }
            Resp::Zombie(_, any) => any,
            _ => unreachable!("FindZombie answers Zombie"),
        };
        if !any {
            return Err(Errno::ECHILD);
        }
        if what.stopped || what.continued {
            if let Some(found) = changed_child(p, which, what) {
                return Ok(Some(found));
            }
        }
        if what.nohang {
            return Ok(None);
        }
        if p.child_events.wait(seq, None) == Wake::Interrupted {
            return Err(Errno::EINTR);
        }
    }
}

/// A live child matching `which` that stopped or continued since its parent last waited,
/// with its wait status and time ([`proc::job::take_report`]).
fn changed_child(p: &Process, which: WaitFor, what: WaitWhat) -> Option<(Pid, i32, [u64; 2])> {
    let Resp::Pids(children) = proc::table().execute(ReadOp::LiveChildren(p.pid, which)) else {
        return None;
    };
    children.into_iter().find_map(|pid| {
        let child = proc::lookup(pid)?.process;
        let report = proc::job::take_report(&child, what.stopped, what.continued, what.nowait)?;
        Some((pid, report.wait_status(), child.total_ticks()))
    })
}

/// `wait4(pid, wstatus, options, rusage)`: waits for a child to exit and reaps it (or, with
/// `WUNTRACED` and `WCONTINUED`, to stop or continue); writes its status and its `rusage`
/// (user and system time, see [`rusage`]), returns its pid (0 with `WNOHANG` when none is
/// ready yet). `EINVAL` for unknown options, `ECHILD` for no such child, `EINTR`.
pub fn wait4(me: &Arc<Thread>, _: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    let (pid, wstatus, options, rusage) = (a[0] as i32 as i64, a[1], a[2], a[3]);
    if options & !(WNOHANG | WUNTRACED | WCONTINUED | WALL | WCLONE) != 0 {
        return Err(Errno::EINVAL);
    }
    let which = wait_target(&me.process, pid)?;
    match wait_child(&me.process, which, WaitWhat::new(options, true))? {
        None => Ok(0),
        Some((cpid, status, ticks)) => {
            if wstatus != 0 {
                write_user(wstatus, &status)?;
            }
            if rusage != 0 {
                uaccess::copy_to_user(rusage, &rusage_bytes(ticks, 0))?;
            }
            Ok(cpid as u64)
        }
    }
}

/// Nanoseconds in one timer tick (Linux's `USER_HZ` is the timer's 100 Hz).
const TICK_NS: u64 = 1_000_000_000 / crate::time::TIMER_HZ;

/// A `struct rusage` (144 bytes) with user and system time from `ticks` and `ru_maxrss` in
/// KiB; Reef counts nothing else there (faults, I/O blocks, context switches: 0).
fn rusage_bytes(ticks: [u64; 2], maxrss_kib: u64) -> [u8; 144] {
    let mut b = [0u8; 144];
    for (i, t) in ticks.iter().enumerate() {
        let ns = t * TICK_NS;
        b[16 * i..16 * i + 8].copy_from_slice(&(ns / 1_000_000_000).to_le_bytes());
        b[16 * i + 8..16 * i + 16].copy_from_slice(&(ns % 1_000_000_000 / 1000).to_le_bytes());
    }
    b[32..40].copy_from_slice(&maxrss_kib.to_le_bytes());
    b
}

/// `getrusage(who, usage)`: `RUSAGE_SELF` (the process's user and system time, sampled by the
/// timer at 10 ms, and its resident memory now as `ru_maxrss`: Reef keeps no peak),
/// `RUSAGE_CHILDREN` (its reaped children's time, theirs included; no `ru_maxrss`),
/// `RUSAGE_THREAD` (the calling thread's time); `EINVAL` for another `who`.
pub fn getrusage(me: &Arc<Thread>, _: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    const RUSAGE_SELF: i32 = 0;
    const RUSAGE_CHILDREN: i32 = -1;
    const RUSAGE_THREAD: i32 = 1;
    let load =
        |t: &[core::sync::atomic::AtomicU64; 2]| t.each_ref().map(|t| t.load(Ordering::Relaxed));
    let p = &me.process;
    let usage = match a[0] as i32 {
        RUSAGE_SELF => rusage_bytes(load(&p.cpu_ticks), p.vm().resident_pages() * 4),
        RUSAGE_CHILDREN => rusage_bytes(load(&p.children_ticks), 0),
        RUSAGE_THREAD => rusage_bytes(load(&me.cpu_ticks), 0),
        _ => return Err(Errno::EINVAL),
    };
    uaccess::copy_to_user(a[1], &usage)?;
    Ok(0)
}

/// `times(buf)`: the process's and its reaped children's user and system time in ticks
/// (`struct tms`; `buf` may be null), and the ticks since boot.
pub fn times(me: &Arc<Thread>, _: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    if a[0] != 0 {
        let p = &me.process;
        let mut b = [0u8; 32];
        for (i, t) in p.cpu_ticks.iter().chain(&p.children_ticks).enumerate() {
            b[8 * i..8 * i + 8].copy_from_slice(&t.load(Ordering::Relaxed).to_le_bytes());
        }
        uaccess::copy_to_user(a[0], &b)?;
    }
    Ok(crate::time::now_ns() / TICK_NS)
}

/// `waitid(idtype, id, infop, options)`: `P_ALL`, `P_PID` or `P_PGID` (id 0: the caller's group),
/// for children that exited (`WEXITED`), stopped (`WSTOPPED`) or continued (`WCONTINUED`), one
/// of them required (`EINVAL` otherwise); fills `infop`'s `siginfo_t` (`SIGCHLD`, code, pid,
/// status), all zeros when `WNOHANG` found none. `WNOWAIT` leaves the child waitable.
pub fn waitid(me: &Arc<Thread>, _: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    let (idtype, id, infop, options) = (a[0], a[1] as i64, a[2], a[3]);
    if options & !(WNOHANG | WEXITED | WNOWAIT | WUNTRACED | WCONTINUED | WALL | WCLONE) != 0
        || options & (WEXITED | WUNTRACED | WCONTINUED) == 0
    {
        return Err(Errno::EINVAL);
    }
    let which = match idtype {
        0 => WaitFor::Any,
        1 => WaitFor::Pid(Pid::try_from(id).map_err(|_| Errno::EINVAL)?),
        2 if id == 0 => wait_target(&me.process, 0)?,
        2 => WaitFor::Group(Pid::try_from(id).map_err(|_| Errno::EINVAL)?),
        _ => return Err(Errno::EINVAL),
    };
    let found = wait_child(
        &me.process,
        which,
        WaitWhat::new(options, options & WEXITED != 0),
    )?;
    if infop != 0 {
        let mut info = [0u8; 128];
        if let Some((cpid, status, _)) = found {
            let si = signal::SigInfo::child(cpid, status);
            info[0..4].copy_from_slice(&(signal::SIGCHLD as i32).to_le_bytes());
            info[8..12].copy_from_slice(&si.code.to_le_bytes());
            info[16..20].copy_from_slice(&(cpid as i32).to_le_bytes());
            info[24..28].copy_from_slice(&si.status.to_le_bytes());
        }
        uaccess::copy_to_user(infop, &info)?;
    }
    Ok(0)
}

/// `set_tid_address(tidptr)`: sets the word cleared (and woken) when the thread exits, as
/// `CLONE_CHILD_CLEARTID`; returns the thread id.
pub fn set_tid_address(me: &Arc<Thread>, _: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    me.clear_child_tid.store(a[0], Ordering::Relaxed);
    Ok(me.tid as u64)
}

/// Accepted and ignored: Reef does not walk robust futex lists when a thread dies (documented).
pub fn set_robust_list(_: &Arc<Thread>, _: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    if a[1] != 24 {
        return Err(Errno::EINVAL);
    }
    Ok(0)
}

/// `arch_prctl(code, addr)`: `ARCH_SET_FS` sets the FS base (`EPERM` outside user space),
/// `ARCH_GET_FS` writes it to `addr`; other codes `EINVAL`.
pub fn arch_prctl(me: &Arc<Thread>, _: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    const ARCH_SET_FS: u64 = 0x1002;
    const ARCH_GET_FS: u64 = 0x1003;
    match a[0] {
        ARCH_SET_FS => {
            if a[1] >= USER_END {
                return Err(Errno::EPERM);
            }
            me.fs_base.store(a[1], Ordering::Relaxed);
            user::set_fs_base(a[1]);
            Ok(0)
        }
        ARCH_GET_FS => {
            write_user(a[1], &me.fs_base.load(Ordering::Relaxed))?;
            Ok(0)
        }
        _ => Err(Errno::EINVAL),
    }
}

/// Reads a relative `struct timespec` and returns the absolute deadline in ns.
pub fn deadline_from(timeout: u64, absolute: bool) -> Result<Option<u64>, Errno> {
    if timeout == 0 {
        return Ok(None);
    }
    let ts: [i64; 2] = read_user(timeout)?;
    if ts[0] < 0 || !(0..1_000_000_000).contains(&ts[1]) {
        return Err(Errno::EINVAL);
    }
    let ns = (ts[0] as u64)
        .saturating_mul(1_000_000_000)
        .saturating_add(ts[1] as u64);
    Ok(Some(if absolute {
        ns
    } else {
        crate::time::now_ns().saturating_add(ns)
    }))
}

/// `futex(uaddr, futex_op, val, timeout, uaddr2, val3)`: `FUTEX_WAIT`, `FUTEX_WAKE`,
/// `FUTEX_REQUEUE`, `FUTEX_CMP_REQUEUE` and the bitset variants (`EINVAL` for a zero bitset on a
/// wait; otherwise the bitset is not used); `FUTEX_CLOCK_REALTIME` makes a bitset wait's
/// absolute timeout a `CLOCK_REALTIME` time; the other option bits of `futex_op` are ignored,
/// other operations `ENOSYS`.
pub fn futex(me: &Arc<Thread>, _: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    const WAIT: u64 = 0;
    const WAKE: u64 = 1;
    const REQUEUE: u64 = 3;
    const CMP_REQUEUE: u64 = 4;
    const WAIT_BITSET: u64 = 9;
    const WAKE_BITSET: u64 = 10;
    /// `FUTEX_CLOCK_REALTIME`: an absolute timeout is on `CLOCK_REALTIME`.
    const CLOCK_REALTIME: u64 = 256;
    let (uaddr, op, val, timeout, uaddr2, val3) =
        (a[0], a[1], a[2] as u32, a[3], a[4], a[5] as u32);
    let cmd = op & 0x7f;
    match cmd {
        WAIT | WAIT_BITSET => {
            if cmd == WAIT_BITSET && val3 == 0 {
                return Err(Errno::EINVAL);
            }
            // FUTEX_WAIT takes a relative timeout, FUTEX_WAIT_BITSET an absolute one on the
            // monotonic clock (the clock Reef keeps), or with FUTEX_CLOCK_REALTIME on the
            // real-time clock, moved onto the monotonic one (as it stands at the call).
            let mut deadline = deadline_from(timeout, cmd == WAIT_BITSET)?;
            if cmd == WAIT_BITSET && op & CLOCK_REALTIME != 0 {
                let offset = crate::time::realtime_offset_ns();
                deadline = deadline.map(|at| at.saturating_sub(offset));
            }
            crate::futex::wait(me, uaddr, val, deadline).map(|_| 0)
        }
        WAKE | WAKE_BITSET => crate::futex::wake(&me.process, uaddr, val).map(|n| n as u64),
        REQUEUE | CMP_REQUEUE => {
            let expected = (cmd == CMP_REQUEUE).then_some(val3);
            crate::futex::requeue(me, uaddr, expected, val, uaddr2, timeout as u32)
                .map(|n| n as u64)
        }
        _ => Err(Errno::ENOSYS),
    }
}

/// A pid argument (an `int`): negative is `EINVAL`.
fn pid_arg(v: u64) -> Result<Pid, Errno> {
    let v = v as i32;
    if v < 0 {
        Err(Errno::EINVAL)
    } else {
        Ok(v as Pid)
    }
}

/// `setpgid(pid, pgid)`: moves process `pid` (0: the caller) into group `pgid` (0: its own id),
/// with Linux's checks made by the process table (`ESRCH`, `EPERM`).
pub fn setpgid(me: &Arc<Thread>, _: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    let op = UpdateOp::SetPgid {
        caller: me.process.pid,
        pid: pid_arg(a[0])?,
        pgid: pid_arg(a[1])?,
    };
    match proc::table().execute_mut(op) {
        Resp::Done(r) => r.map(|_| 0),
        _ => unreachable!("SetPgid answers Done"),
    }
}

/// `getpgid(pid)`: the process group of `pid` (0: the caller); `ESRCH` for no such process.
pub fn getpgid(me: &Arc<Thread>, _: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    let pid = match pid_arg(a[0])? {
        0 => me.process.pid,
        p => p,
    };
    proc::lookup(pid).map(|e| e.pgid as u64).ok_or(Errno::ESRCH)
}

/// `getpgrp()`: the caller's process group.
pub fn getpgrp(me: &Arc<Thread>, f: &mut InterruptFrame, _: [u64; 6]) -> SysResult {
    getpgid(me, f, [0; 6])
}

/// `setsid()`: makes the caller the leader of a new session and process group and returns its id;
/// `EPERM` if it leads a process group already.
pub fn setsid(me: &Arc<Thread>, _: &mut InterruptFrame, _: [u64; 6]) -> SysResult {
    match proc::table().execute_mut(UpdateOp::SetSid {
        pid: me.process.pid,
    }) {
        Resp::Done(r) => r.map(|p| p as u64),
        _ => unreachable!("SetSid answers Done"),
    }
}

/// `getsid(pid)`: the session of `pid` (0: the caller); `ESRCH` for no such process.
pub fn getsid(me: &Arc<Thread>, _: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    let pid = match pid_arg(a[0])? {
        0 => me.process.pid,
        p => p,
    };
    proc::lookup(pid).map(|e| e.sid as u64).ok_or(Errno::ESRCH)
}

/// Live processes of a group (`Some(pgid)`) or all but init (`None`), for `kill`.
pub fn members(group: Option<Pid>) -> Vec<Pid> {
    match proc::table().execute(table::ReadOp::Members(group)) {
        Resp::Pids(p) => p,
        _ => unreachable!("Members answers Pids"),
    }
}
