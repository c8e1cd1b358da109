//! Process and thread calls: fork, clone, execve, exit, wait, ids, futex, affinity.

use super::SysResult;
use crate::arch::idt::InterruptFrame;
use crate::arch::user::{self, USER_END};
use crate::kcb;
use crate::proc::table::{self, Life, ReadOp, Resp, UpdateOp, WaitFor};
use crate::proc::wait::Wake;
use crate::proc::{self, sched, signal, CpuSet, Pid, Process, Thread};
use crate::uaccess::{self, read_user, write_user};
use abi::Errno;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::sync::atomic::Ordering;

const CLONE_VM: u64 = 0x100;
const CLONE_FS: u64 = 0x200;
const CLONE_FILES: u64 = 0x400;
const CLONE_SIGHAND: u64 = 0x800;
const CLONE_VFORK: u64 = 0x4000;
const CLONE_THREAD: u64 = 0x10000;
const CLONE_SYSVSEM: u64 = 0x40000;
const CLONE_SETTLS: u64 = 0x80000;
const CLONE_PARENT_SETTID: u64 = 0x100000;
const CLONE_CHILD_CLEARTID: u64 = 0x200000;
const CLONE_DETACHED: u64 = 0x400000;
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

const WNOHANG: u64 = 1;
const WUNTRACED: u64 = 2;
const WEXITED: u64 = 4;
const WCONTINUED: u64 = 8;
const WNOWAIT: u64 = 0x0100_0000;
const WALL: u64 = 0x4000_0000;
const WCLONE: u64 = 0x8000_0000;

pub fn getpid(me: &Arc<Thread>, _: &mut InterruptFrame, _: [u64; 6]) -> SysResult {
    Ok(me.process.pid as u64)
}

pub fn gettid(me: &Arc<Thread>, _: &mut InterruptFrame, _: [u64; 6]) -> SysResult {
    Ok(me.tid as u64)
}

pub fn getppid(me: &Arc<Thread>, _: &mut InterruptFrame, _: [u64; 6]) -> SysResult {
    Ok(u64::from(me.process.ppid.load(Ordering::Acquire)))
}

pub fn sched_yield(_: &Arc<Thread>, _: &mut InterruptFrame, _: [u64; 6]) -> SysResult {
    sched::schedule();
    Ok(0)
}

/// The new thread of `fork` or `clone`: the caller's registers (with 0 as the call's result,
/// and `newsp` as the stack if given), FPU state, signal mask and affinity; the TLS base from
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
    let mask = me.signals.lock().mask;
    let affinity = me.affinity.lock().clone();
    Thread::new(tid, process, &cf, me.fpu(), fs, affinity, mask)
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
    let child = Process::new(pid, vm, files, parent.signals.lock().forked(), cwd);
    *child.mm.lock() = brk;
    *child.exe.lock() = parent.exe.lock().clone();
    *child.cmdline.lock() = parent.cmdline.lock().clone();
    child
        .umask
        .store(parent.umask.load(Ordering::Relaxed), Ordering::Relaxed);
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
    });
    sched::start(t);
    if let Some(done) = vfork {
        done.wait();
    }
    Ok(pid as u64)
}

pub fn fork(me: &Arc<Thread>, frame: &mut InterruptFrame, _: [u64; 6]) -> SysResult {
    fork_process(me, frame, 17, 0, 0, 0, 0)
}

/// `vfork`: the child borrows the parent's address space, and the parent waits until the
/// child execs or exits.
pub fn vfork(me: &Arc<Thread>, frame: &mut InterruptFrame, _: [u64; 6]) -> SysResult {
    fork_process(me, frame, CLONE_VM | CLONE_VFORK | 17, 0, 0, 0, 0)
}

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

pub fn execve(me: &Arc<Thread>, frame: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    let path = uaccess::read_cstring(a[0], PATH_MAX)?;
    let argv = uaccess::read_string_array(a[1], 4096, ARG_MAX)?;
    let envp = uaccess::read_string_array(a[2], 4096, ARG_MAX)?;
    if me.process.threads.lock().len() > 1 {
        // Linux ends the other threads first (de_thread); Reef does not yet, see
        // docs/architecture.md.
        return Err(Errno::EAGAIN);
    }
    let image = crate::exec::load(Some(&me.process), &path, argv, &envp)?;
    if image.ino.is_none() {
        // The program came from Hare: its descriptor's close goes now.
        crate::fs::hare::flush();
    }
    let exe = crate::fs::path::display(&me.process, crate::fs::path::AT_FDCWD, &image.path);
    // The fleet manager's capability goes with its program (`fleet`, in NR-FS).
    let manager = image.ino.is_some_and(crate::fs::is_trusted_exe);
    crate::exec::commit(me, frame, image, &exe);
    me.process
        .fleet_manager
        .store(manager, core::sync::atomic::Ordering::Release);
    Ok(0)
}

pub fn exit(me: &Arc<Thread>, _: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    let p = &me.process;
    if !p.exiting.load(Ordering::Acquire) {
        p.exit_status
            .store(((a[0] & 0xff) << 8) as i32, Ordering::Release);
    }
    proc::request_exit(me);
    Ok(0)
}

pub fn exit_group(me: &Arc<Thread>, _: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    proc::begin_group_exit(&me.process, ((a[0] & 0xff) << 8) as i32);
    Ok(0)
}

fn wait_target(me: &Process, pid: i64) -> Result<WaitFor, Errno> {
    Ok(match pid {
        -1 => WaitFor::Any,
        0 => WaitFor::Group(proc::lookup(me.pid).map(|e| e.pgid).unwrap_or(me.pid)),
        p if p < -1 => WaitFor::Group(p.unsigned_abs() as Pid),
        p => WaitFor::Pid(Pid::try_from(p).map_err(|_| Errno::ECHILD)?),
    })
}

/// Waits for a zombie child matching `which`; reaps it unless `nowait`. `Ok(None)`: WNOHANG
/// and none yet.
fn wait_child(
    p: &Process,
    which: WaitFor,
    nohang: bool,
    nowait: bool,
) -> Result<Option<(Pid, i32)>, Errno> {
    loop {
        let seq = p.child_events.seq();
        match proc::table().execute(ReadOp::FindZombie(p.pid, which)) {
            Resp::Zombie(Some((pid, status)), _) => {
                if nowait {
                    return Ok(Some((pid, status)));
                }
                if let Resp::Done(Ok(_)) = proc::table().execute_mut(UpdateOp::Reap { pid }) {
                    return Ok(Some((pid, status)));
                }
            }
            Resp::Zombie(None, false) => return Err(Errno::ECHILD),
            Resp::Zombie(None, true) => {
                if nohang {
                    return Ok(None);
                }
                if p.child_events.wait(seq, None) == Wake::Interrupted {
                    return Err(Errno::EINTR);
                }
            }
            _ => unreachable!("FindZombie answers Zombie"),
        }
    }
}

pub fn wait4(me: &Arc<Thread>, _: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    let (pid, wstatus, options, rusage) = (a[0] as i32 as i64, a[1], a[2], a[3]);
    if options & !(WNOHANG | WUNTRACED | WCONTINUED | WALL | WCLONE) != 0 {
        return Err(Errno::EINVAL);
    }
    let which = wait_target(&me.process, pid)?;
    match wait_child(&me.process, which, options & WNOHANG != 0, false)? {
        None => Ok(0),
        Some((cpid, status)) => {
            if wstatus != 0 {
                write_user(wstatus, &status)?;
            }
            if rusage != 0 {
                uaccess::copy_to_user(rusage, &[0u8; 144])?;
            }
            Ok(cpid as u64)
        }
    }
}

pub fn waitid(me: &Arc<Thread>, _: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    let (idtype, id, infop, options) = (a[0], a[1] as i64, a[2], a[3]);
    if options & !(WNOHANG | WEXITED | WNOWAIT | WUNTRACED | WCONTINUED | WALL | WCLONE) != 0
        || options & WEXITED == 0
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
        options & WNOHANG != 0,
        options & WNOWAIT != 0,
    )?;
    if infop != 0 {
        let mut info = [0u8; 128];
        if let Some((cpid, status)) = found {
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

pub fn futex(me: &Arc<Thread>, _: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    const WAIT: u64 = 0;
    const WAKE: u64 = 1;
    const REQUEUE: u64 = 3;
    const CMP_REQUEUE: u64 = 4;
    const WAIT_BITSET: u64 = 9;
    const WAKE_BITSET: u64 = 10;
    let (uaddr, op, val, timeout, uaddr2, val3) =
        (a[0], a[1], a[2] as u32, a[3], a[4], a[5] as u32);
    let cmd = op & 0x7f;
    match cmd {
        WAIT | WAIT_BITSET => {
            if cmd == WAIT_BITSET && val3 == 0 {
                return Err(Errno::EINVAL);
            }
            // FUTEX_WAIT takes a relative timeout, FUTEX_WAIT_BITSET an absolute one (on the
            // monotonic clock, which is the clock Reef keeps).
            let deadline = deadline_from(timeout, cmd == WAIT_BITSET)?;
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

/// The cores of `set`, in order.
fn online_cores_in(set: &CpuSet) -> impl Iterator<Item = usize> + '_ {
    (0..kcb::MAX_CORES).filter(|&c| set.contains(c))
}

fn online_set() -> CpuSet {
    let mut s = CpuSet([0; kcb::MAX_CORES / 64]);
    for c in crate::kcb::online_cores() {
        s.0[c / 64] |= 1 << (c % 64);
    }
    s
}

/// Bytes of a CPU mask as Linux reports them: the online cores rounded up to 64-bit words.
fn mask_bytes() -> usize {
    let highest = crate::kcb::online_cores().last().copied().unwrap_or(0);
    (highest / 64 + 1) * 8
}

fn thread_of(me: &Arc<Thread>, tid: u64) -> Result<Arc<Thread>, Errno> {
    if tid == 0 || tid == me.tid as u64 {
        return Ok(me.clone());
    }
    let tid = Pid::try_from(tid).map_err(|_| Errno::ESRCH)?;
    if let Some(t) = me.process.threads.lock().iter().find(|t| t.tid == tid) {
        return Ok(t.clone());
    }
    match proc::lookup(tid) {
        Some(e) if e.life == Life::Alive => e
            .process
            .threads
            .lock()
            .first()
            .cloned()
            .ok_or(Errno::ESRCH),
        _ => Err(Errno::ESRCH),
    }
}

/// `sched_getaffinity(tid, len, mask)`: the online cores the thread may run on: its affinity
/// without the cores other processes' fleets own, or, when that leaves none, every core they
/// do not own (where `sched::may_run` lets it run).
pub fn sched_getaffinity(me: &Arc<Thread>, _: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    let t = thread_of(me, a[0])?;
    let n = mask_bytes();
    if (a[1] as usize) < n {
        return Err(Errno::EINVAL);
    }
    let pid = t.process.pid;
    let affinity = t.affinity.lock().clone();
    let mut set = CpuSet([0; kcb::MAX_CORES / 64]);
    for core in online_cores_in(&affinity).filter(|&c| sched::core_free(pid, c)) {
        set.0[core / 64] |= 1 << (core % 64);
    }
    if set.0.iter().all(|&w| w == 0) {
        for core in kcb::online_cores() {
            if sched::core_free(pid, core) {
                set.0[core / 64] |= 1 << (core % 64);
            }
        }
    }
    let online = online_set();
    let bytes: Vec<u8> = (0..n / 8)
        .flat_map(|w| (set.0[w] & online.0[w]).to_le_bytes())
        .collect();
    uaccess::copy_to_user(a[2], &bytes)?;
    Ok(n as u64)
}

/// `sched_setaffinity(tid, len, mask)`: `EINVAL` for no online core, `EBUSY` when every
/// online core of the mask is owned by another process's fleet (a core a fleet owns runs its
/// member alone; the thread never runs on the owned cores of a wider mask).
pub fn sched_setaffinity(me: &Arc<Thread>, _: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    let t = thread_of(me, a[0])?;
    let len = (a[1] as usize).min(kcb::MAX_CORES / 8);
    let mut raw = [0u8; kcb::MAX_CORES / 8];
    uaccess::copy_from_user(a[2], &mut raw[..len])?;
    let online = online_set();
    let mut set = CpuSet([0; kcb::MAX_CORES / 64]);
    for (w, word) in set.0.iter_mut().enumerate() {
        let v = u64::from_le_bytes(raw[w * 8..w * 8 + 8].try_into().expect("8 bytes"));
        *word = v & online.0[w];
    }
    if set.0.iter().all(|&w| w == 0) {
        return Err(Errno::EINVAL);
    }
    // fos space sharing: a core a fleet of another process owns runs its member alone.
    if online_cores_in(&set).all(|core| !sched::core_free(t.process.pid, core)) {
        return Err(Errno::EBUSY);
    }
    *t.affinity.lock() = set.clone();
    // Pinned to one core: where its names say it runs (fos: redirection when a server moves).
    let mut cores = online_cores_in(&set);
    if let (Some(core), None) = (cores.next(), cores.next()) {
        if t.process.is_named() {
            crate::names::process_moved(t.process.pid, core);
        }
    }
    if Arc::ptr_eq(&t, me) && !set.contains(kcb::current().core_id) {
        sched::schedule();
    }
    Ok(0)
}

pub fn getcpu(_: &Arc<Thread>, _: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    let k = kcb::current();
    if a[0] != 0 {
        write_user(a[0], &(k.core_id as u32))?;
    }
    if a[1] != 0 {
        write_user(a[1], &(k.node_id as u32))?;
    }
    Ok(0)
}

fn pid_arg(v: u64) -> Result<Pid, Errno> {
    let v = v as i32;
    if v < 0 {
        Err(Errno::EINVAL)
    } else {
        Ok(v as Pid)
    }
}

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

pub fn getpgid(me: &Arc<Thread>, _: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    let pid = match pid_arg(a[0])? {
        0 => me.process.pid,
        p => p,
    };
    proc::lookup(pid).map(|e| e.pgid as u64).ok_or(Errno::ESRCH)
}

pub fn getpgrp(me: &Arc<Thread>, f: &mut InterruptFrame, _: [u64; 6]) -> SysResult {
    getpgid(me, f, [0; 6])
}

pub fn setsid(me: &Arc<Thread>, _: &mut InterruptFrame, _: [u64; 6]) -> SysResult {
    match proc::table().execute_mut(UpdateOp::SetSid {
        pid: me.process.pid,
    }) {
        Resp::Done(r) => r.map(|p| p as u64),
        _ => unreachable!("SetSid answers Done"),
    }
}

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
