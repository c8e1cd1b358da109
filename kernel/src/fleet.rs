//! Fleets (fos §3.1 space sharing, §3.2.2 namespace protection): the kernel's part.
//!
//! A fleet is a set of server processes, one per core, each owning its core: the scheduler
//! runs no other process's threads there (`proc::sched::may_run` reads the core's
//! `Kcb::fleet_owner`), places no new thread there, and `sched_setaffinity` onto it answers
//! `EBUSY`. The fleet manager (`usr/fleet.c`, the user-space server that starts, grows, shrinks
//! and restarts fleets) keeps the fleets themselves; the kernel keeps only who owns which core
//! and which process may register which name under `fleet/`:
//!
//! - **The manager's capability.** A process that executes the trusted executable
//!   (`/bin/fleet` of the initramfs, `fs::trust_exe`, which nothing may rewrite) holds
//!   `Process::fleet_manager`; `fork` passes it on and `execve` of anything else drops it. Only
//!   such a process may bind cores and register any name under `fleet/`.
//! - **Members.** [`bind`] makes a process (normally a child of the manager, before it
//!   executes the server program) a member of one fleet, `fleet/NAME`, which it may then
//!   register; its threads are pinned to the member's core. A member owns its core (split
//!   placement) or, bound with `REEF_FLEET_SHARED`, time-shares it with other programs (Hare's
//!   timeshare placement). An owned core is free again when its member exits; the last free
//!   online core cannot be owned, so ordinary programs always have one.

use crate::kcb;
use crate::names::Name;
use crate::proc::{self, CpuSet, Membership, Process};
use crate::sync::IrqMutex;
use abi::Errno;
use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::fmt::Write;
use core::sync::atomic::Ordering;
use msg::names::RESERVED_PREFIX;

/// The path of the fleet manager's program in the initramfs.
pub const MANAGER_PATH: &[u8] = b"/bin/fleet";

/// Held while a bind checks and takes a core, so that concurrent binds cannot together take
/// the last free core.
static BINDING: IrqMutex<()> = IrqMutex::new(());

/// Whether `p` may register `name`: any name outside `fleet/`; under it, the manager any, and
/// a member its own fleet's.
pub fn may_register(p: &Process, name: &Name) -> bool {
    !name.as_bytes().starts_with(RESERVED_PREFIX)
        || p.fleet_manager.load(Ordering::Acquire)
        || p.fleet.lock().is_some_and(|m| m.name == *name)
}

/// Whether `p` holds the manager's capability: else `EPERM`.
pub fn manager(p: &Process) -> Result<(), Errno> {
    if p.fleet_manager.load(Ordering::Acquire) {
        Ok(())
    } else {
        Err(Errno::EPERM)
    }
}

/// The KCB of online core `core`: else `EINVAL`.
fn online(core: u64) -> Result<&'static kcb::Kcb, Errno> {
    let core = usize::try_from(core).map_err(|_| Errno::EINVAL)?;
    if !kcb::online_cores().contains(&core) {
        return Err(Errno::EINVAL);
    }
    kcb::get(core).ok_or(Errno::EINVAL)
}

/// The manager `me` makes live process `pid` a member of fleet `name` (under `fleet/`) on
/// online `core`: its threads are pinned there, it may register `name`, and, unless `shared`
/// (Hare's timeshare placement), it owns the core, which then runs nothing else. `EPERM` (not
/// the manager), `EINVAL` (core, or a name outside `fleet/`), `ESRCH` (no such live process),
/// `EBUSY` (the process is a member already, the core is owned, or, to own it, it is the last
/// free online core or runs a parked KCB).
pub fn bind(me: &Process, pid: u32, core: u64, name: Name, shared: bool) -> Result<(), Errno> {
    manager(me)?;
    let k = online(core)?;
    if !name.as_bytes().starts_with(RESERVED_PREFIX) || name.as_bytes() == RESERVED_PREFIX {
        return Err(Errno::EINVAL);
    }
    take(&live_process(pid)?, k, name, shared)
}

/// Makes process `p` the owner of online core `core`, as a member of `fleet/rt` (Barrelfish/DC
/// §5.3's program alone on a core: `corectl::rt`): its threads are pinned there and the core
/// runs nothing else until it exits. `bind`'s errors but `EPERM`.
pub fn own(p: &Arc<Process>, core: u64) -> Result<(), Errno> {
    take(p, online(core)?, Name::new(b"fleet/rt")?, false)
}

/// Whether `bind` could make a process the owner of online core `core` now (`own`'s errors):
/// checked before a change that `own` completes.
pub fn ownable(p: &Process, core: u64) -> Result<(), Errno> {
    let k = online(core)?;
    let owned = |c: usize| kcb::get(c).map_or(0, |k| k.fleet_owner.load(Ordering::Acquire));
    let other_free = kcb::online_cores()
        .iter()
        .any(|&c| c != k.core_id && owned(c) == 0);
    if owned(k.core_id) != 0 || !other_free || k.guests.load(Ordering::Acquire) != 0 {
        return Err(Errno::EBUSY);
    }
    if p.fleet.lock().is_some() {
        return Err(Errno::EBUSY);
    }
    Ok(())
}

/// Makes `target` a member of fleet `name` on core `k` (see [`bind`]).
fn take(
    target: &Arc<Process>,
    k: &'static kcb::Kcb,
    name: Name,
    shared: bool,
) -> Result<(), Errno> {
    let pid = target.pid;
    {
        // Two managers binding at once must not both take what is left: one bind at a time
        // (cores are only ever freed concurrently).
        let _one_at_a_time = BINDING.lock();
        let owned = |c: usize| kcb::get(c).map_or(0, |k| k.fleet_owner.load(Ordering::Acquire));
        if owned(k.core_id) != 0
            || (!shared
                && !kcb::online_cores()
                    .iter()
                    .any(|&c| c != k.core_id && owned(c) == 0))
        {
            return Err(Errno::EBUSY);
        }
        // Under the member's lock, so that its exit either sees the core taken or is seen
        // here (`sched::release_core`).
        let mut fleet = target.fleet.lock();
        if fleet.is_some() {
            return Err(Errno::EBUSY);
        }
        if target.has_exited() {
            return Err(Errno::ESRCH);
        }
        if !shared {
            k.fleet_owner
                .compare_exchange(0, pid, Ordering::SeqCst, Ordering::SeqCst)
                .map_err(|_| Errno::EBUSY)?;
            // A core that runs a parked KCB is not the member's alone: taken before the guest
            // is checked, as `corectl::park` claims the guest before it checks the owner.
            if k.guests.load(Ordering::SeqCst) != 0 {
                k.fleet_owner.store(0, Ordering::SeqCst);
                return Err(Errno::EBUSY);
            }
        }
        *fleet = Some(Membership {
            name,
            core: k.core_id,
            shared,
        });
    }
    let mut only = CpuSet([0; kcb::MAX_CORES / 64]);
    only.0[k.core_id / 64] |= 1 << (k.core_id % 64);
    let threads = target.threads.lock().clone();
    for t in &threads {
        *t.affinity.lock() = only.clone();
    }
    if target.is_named() {
        crate::names::process_moved(pid, k.core_id);
    }
    // A thread of another process running there leaves at its next switch, at the latest
    // when its time slice ends.
    if !shared && k.core_id != kcb::current().core_id {
        k.sched.need_resched.store(true, Ordering::Release);
        let _ = crate::ipi::send(k.core_id, crate::ipi::IpiKind::Ping);
    }
    Ok(())
}

/// A process that has not exited: else `ESRCH`.
fn live_process(pid: u32) -> Result<Arc<Process>, Errno> {
    match proc::lookup(pid) {
        Some(e) if e.life == proc::table::Life::Alive => Ok(e.process),
        _ => Err(Errno::ESRCH),
    }
}

/// `/proc/reef/fleets`: one line per fleet member, by core, `core C node N pid P fleet NAME
/// owned` (split placement: nothing else runs there) or `... shared` (timeshare).
pub fn report() -> String {
    let mut members: Vec<(u32, Membership)> = proc::all_pids()
        .into_iter()
        .filter_map(|pid| Some((pid, (*proc::lookup(pid)?.process.fleet.lock())?)))
        .collect();
    members.sort_by_key(|&(pid, m)| (m.core, pid));
    let mut s = String::new();
    for (pid, m) in members {
        let node = kcb::get(m.core).map_or(0, |k| k.node_id);
        let _ = writeln!(
            s,
            "core {} node {node} pid {pid} fleet {} {}",
            m.core,
            String::from_utf8_lossy(m.name.as_bytes()),
            if m.shared { "shared" } else { "owned" }
        );
    }
    s
}
