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
