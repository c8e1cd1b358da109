//! Scheduling calls: `sched_yield`, a thread's cores (`sched_getaffinity`,
//! `sched_setaffinity`, `getcpu`), and its priority and policy (`getpriority`, `setpriority`,
//! `sched_getscheduler`, `sched_setscheduler`, `sched_getparam`, `sched_setparam`, the
//! priority ranges, `sched_rr_get_interval`).

use super::SysResult;
use crate::arch::idt::InterruptFrame;
use crate::kcb;
use crate::proc::table::Life;
use crate::proc::{self, sched, CpuSet, Pid, Thread};
use crate::uaccess::{self, write_user};
use abi::Errno;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::sync::atomic::Ordering;

/// `sched_yield()`: lets the scheduler run another thread.
pub fn sched_yield(_: &Arc<Thread>, _: &mut InterruptFrame, _: [u64; 6]) -> SysResult {
    sched::schedule();
    Ok(0)
}

/// The cores of `set`, in order.
fn online_cores_in(set: &CpuSet) -> impl Iterator<Item = usize> + '_ {
    (0..kcb::MAX_CORES).filter(|&c| set.contains(c))
}

/// The online cores as a [`CpuSet`].
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

/// The thread a `sched_*affinity` `tid` names: the caller for 0 or its own id, else a thread of the
/// caller's process, else the first thread of a live process with that pid; `ESRCH` otherwise.
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

/// `getcpu(cpu, node, tcache)`: writes the current core and its NUMA node to `cpu` and `node`
/// unless they are NULL.
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

/// `getpriority`/`setpriority`'s `which`: a thread (by id), a process group, a user.
const PRIO_PROCESS: u64 = 0;
/// See [`PRIO_PROCESS`].
const PRIO_PGRP: u64 = 1;
/// See [`PRIO_PROCESS`].
const PRIO_USER: u64 = 2;

/// The threads `which` and `who` name for `getpriority` and `setpriority`, as Linux finds
/// them: `PRIO_PROCESS` the thread with that id (0: the caller), `PRIO_PGRP` every thread of
/// the group's processes (0: the caller's group), `PRIO_USER` every thread of the processes
/// whose real user ID it is (0: the caller's). `EINVAL` for another `which`, `ESRCH` when
/// none is found.
fn prio_targets(me: &Arc<Thread>, which: u64, who: u64) -> Result<Vec<Arc<Thread>>, Errno> {
    let who = u32::try_from(who).map_err(|_| Errno::ESRCH)?;
    let mut out = Vec::new();
    let mut add = |t: Arc<Thread>| -> Result<(), Errno> {
        out.try_reserve(1).map_err(|_| Errno::ENOMEM)?;
        out.push(t);
        Ok(())
    };
    let all_threads = |add: &mut dyn FnMut(Arc<Thread>) -> Result<(), Errno>,
                       keep: &dyn Fn(&proc::table::Entry) -> bool|
     -> Result<(), Errno> {
        for pid in proc::all_pids() {
            let Some(e) = proc::lookup(pid).filter(|e| e.life == Life::Alive && keep(e)) else {
                continue;
            };
            let threads = e.process.threads.lock().clone();
            for t in threads {
                add(t)?;
            }
        }
        Ok(())
    };
    match which {
        PRIO_PROCESS => add(thread_of(me, u64::from(who))?)?,
        PRIO_PGRP => {
            let group = if who == 0 {
                proc::lookup(me.process.pid).ok_or(Errno::ESRCH)?.pgid
            } else {
                who
            };
            all_threads(&mut add, &|e| e.pgid == group)?;
        }
        PRIO_USER => {
            let uid = if who == 0 {
                me.process.creds.lock().uid.real
            } else {
                who
            };
            all_threads(&mut add, &|e| e.process.creds.lock().uid.real == uid)?;
        }
        _ => return Err(Errno::EINVAL),
    }
    if out.is_empty() {
        return Err(Errno::ESRCH);
    }
    Ok(out)
}

/// `getpriority(which, who)`: `20 - nice` of the highest priority (lowest nice value) among
/// the threads named ([`prio_targets`]), the raw value glibc turns back into a nice value.
pub fn getpriority(me: &Arc<Thread>, _: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    let targets = prio_targets(me, a[0], a[1])?;
    let nice = targets
        .iter()
        .map(|t| t.nice.load(Ordering::Relaxed))
        .min()
        .unwrap_or(0);
    Ok((20 - nice) as u64)
}

/// `setpriority(which, who, nice)`: sets the nice value (clamped to -20..=19) of every thread
/// named ([`prio_targets`]). Linux's checks for each: `EPERM` unless the caller may
/// reschedule its process (`Credentials::may_reschedule`), `EACCES` for lowering a nice value
/// without root (Reef's `RLIMIT_NICE` is 0, Linux's default). Reef's scheduler gives every
/// ready thread the same time slice: the value is kept and reported (`getpriority`,
/// `/proc/<pid>/stat`), and changes no share of the CPU.
pub fn setpriority(me: &Arc<Thread>, _: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    let nice = (a[2] as i32).clamp(-20, 19);
    let targets = prio_targets(me, a[0], a[1])?;
    for t in &targets {
        let ids = t.process.creds.lock().uid;
        let privileged = {
            let cred = me.process.creds.lock();
            cred.may_reschedule(ids)?;
            cred.is_privileged()
        };
        if nice < t.nice.load(Ordering::Relaxed) && !privileged {
            return Err(Errno::EACCES);
        }
    }
    for t in &targets {
        t.nice.store(nice, Ordering::Relaxed);
    }
    Ok(0)
}

/// `SCHED_OTHER`: the ordinary time-shared policy.
const SCHED_OTHER: u32 = 0;
/// `SCHED_FIFO`: real-time, first in first out.
const SCHED_FIFO: u32 = 1;
/// `SCHED_RR`: real-time, round robin.
const SCHED_RR: u32 = 2;
/// `SCHED_BATCH`: time-shared, for work that does not wait for anyone.
const SCHED_BATCH: u32 = 3;
/// `SCHED_IDLE`: time-shared, at the lowest priority.
const SCHED_IDLE: u32 = 5;
/// `SCHED_DEADLINE`: earliest deadline first (set only through `sched_setattr`).
const SCHED_DEADLINE: u32 = 6;
/// `SCHED_RESET_ON_FORK`, or'ed into a policy.
const SCHED_RESET_ON_FORK: u32 = 0x4000_0000;

/// The thread a `sched_*` call's `pid` names (0: the caller); `EINVAL` for a negative one.
fn sched_target(me: &Arc<Thread>, pid: u64) -> Result<Arc<Thread>, Errno> {
    if (pid as i32) < 0 {
        return Err(Errno::EINVAL);
    }
    thread_of(me, u64::from(pid as u32))
}

/// Sets `t`'s policy to `policy` with real-time priority `prio`, for `me`: Linux's checks
/// (`EINVAL` for an unknown policy or a priority the policy does not take, `EPERM` for
/// another user's thread, or for leaving `SCHED_IDLE` without root, whose `RLIMIT_NICE` of 0
/// forbids it), and `EPERM` for `SCHED_FIFO` and `SCHED_RR`, since Reef has no real-time
/// scheduling (Linux's answer to a process without `CAP_SYS_NICE`). The time-shared policies
/// are kept and reported; Reef's scheduler treats them alike.
fn set_policy(me: &Arc<Thread>, t: &Thread, policy: u32, prio: i32) -> Result<(), Errno> {
    let policy = policy & !SCHED_RESET_ON_FORK;
    match policy {
        SCHED_OTHER | SCHED_BATCH | SCHED_IDLE if prio == 0 => {}
        SCHED_FIFO | SCHED_RR if (1..=99).contains(&prio) => return Err(Errno::EPERM),
        _ => return Err(Errno::EINVAL),
    }
    let ids = t.process.creds.lock().uid;
    let privileged = {
        let cred = me.process.creds.lock();
        cred.may_reschedule(ids)?;
        cred.is_privileged()
    };
    let old = t.policy.load(Ordering::Relaxed);
    if old == SCHED_IDLE && policy != SCHED_IDLE && !privileged {
        return Err(Errno::EPERM);
    }
    t.policy.store(policy, Ordering::Relaxed);
    Ok(())
}

/// The `sched_priority` of the `struct sched_param` at `addr` (`EINVAL` for NULL).
fn sched_param(addr: u64) -> Result<i32, Errno> {
    if addr == 0 {
        return Err(Errno::EINVAL);
    }
    uaccess::read_user::<i32>(addr)
}

/// `sched_setscheduler(pid, policy, param)`: see [`set_policy`].
pub fn sched_setscheduler(me: &Arc<Thread>, _: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    let t = sched_target(me, a[0])?;
    if (a[1] as i32) < 0 {
        return Err(Errno::EINVAL);
    }
    let prio = sched_param(a[2])?;
    set_policy(me, &t, a[1] as u32, prio).map(|()| 0)
}

/// `sched_getscheduler(pid)`: the thread's policy.
pub fn sched_getscheduler(me: &Arc<Thread>, _: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    let t = sched_target(me, a[0])?;
    Ok(u64::from(t.policy.load(Ordering::Relaxed)))
}

/// `sched_setparam(pid, param)`: the priority within the thread's policy, which for the
/// time-shared ones can only be 0 (`EINVAL` otherwise).
pub fn sched_setparam(me: &Arc<Thread>, _: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    let t = sched_target(me, a[0])?;
    let prio = sched_param(a[1])?;
    set_policy(me, &t, t.policy.load(Ordering::Relaxed), prio).map(|()| 0)
}

/// `sched_getparam(pid, param)`: priority 0 (no thread has a real-time policy).
pub fn sched_getparam(me: &Arc<Thread>, _: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    sched_target(me, a[0])?;
    if a[1] == 0 {
        return Err(Errno::EINVAL);
    }
    write_user(a[1], &0i32)?;
    Ok(0)
}

/// The priority range of `policy`: 1 to 99 for the real-time ones, 0 for the others;
/// `EINVAL` for an unknown policy.
fn priority_range(policy: u64) -> Result<(u64, u64), Errno> {
    match u32::try_from(policy).map_err(|_| Errno::EINVAL)? {
        SCHED_FIFO | SCHED_RR => Ok((1, 99)),
        SCHED_OTHER | SCHED_BATCH | SCHED_IDLE | SCHED_DEADLINE => Ok((0, 0)),
        _ => Err(Errno::EINVAL),
    }
}

/// `sched_get_priority_max(policy)`.
pub fn sched_get_priority_max(_: &Arc<Thread>, _: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    priority_range(a[0]).map(|(_, max)| max)
}

/// `sched_get_priority_min(policy)`.
pub fn sched_get_priority_min(_: &Arc<Thread>, _: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    priority_range(a[0]).map(|(min, _)| min)
}

/// `sched_rr_get_interval(pid, tp)`: Reef's time slice (`sched::TIME_SLICE_TICKS` ticks of
/// 10 ms), which every thread gets.
pub fn sched_rr_get_interval(me: &Arc<Thread>, _: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    sched_target(me, a[0])?;
    let ns = sched::TIME_SLICE_TICKS * 10_000_000;
    write_user(
        a[1],
        &[(ns / 1_000_000_000) as i64, (ns % 1_000_000_000) as i64],
    )?;
    Ok(0)
}
