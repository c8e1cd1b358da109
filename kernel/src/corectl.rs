//! Core management for programs (Barrelfish/DC §4, `corectl`): what each core is doing, and
//! stopping and starting cores while programs run, through the [`crate::smp::BootDriver`].
//!
//! One operation at a time ([`CORE_CTL`]): the checks below (the last online core, the
//! caller's own core) hold only while no other stop or start runs. A stop returns once the
//! core has stopped; it stops by itself at the scheduling point the stop IPI forces, tens of
//! microseconds later, so the caller polls its state for up to [`STOP_SPIN_NS`] (20 ms) and only then
//! sleeps a millisecond at a time (a timer tick, 10 ms, in practice). The stopping core does
//! not wake it: it halts the moment it reads as stopped, so that the INIT that follows cannot
//! catch it holding a lock.
//!
//! Core 0 cannot be stopped: it is the bootstrap processor, which an INIT sends back to the
//! firmware's reset vector instead of into wait-for-SIPI as it does an application processor
//! (Linux 6.1 keeps CPU 0 online by default too), and its timer tick polls the console.
//!
//! Parking (§4.6): [`park`] stops a core as [`stop`] does and has another online core, its
//! host, run its KCB (the threads that may run only there) by turns with its own (see
//! `smp::host_guest`, `proc::sched`); [`unpark`] has the host give it back and starts the core
//! again with it. A host runs any number of parked KCBs (round robin), cannot be stopped or parked
//! while it does, and is not given to a fleet member. Park and unpark run to the end once begun (a signal
//! does not cut them short: each waits a few milliseconds at most for the cores involved).
//! Device interrupts (§4.8): before a core stops, the sources bound to it move to another
//! online core of its node, else the boot core; before it is parked, to its host; its start or
//! unpark brings them back (`irq::move_bindings`, `irq::bring_home`), so none goes to a halted
//! core. [`update`] restarts a core in another kernel image (§4.5, `image`), which it then
//! runs until the next update; a start or unpark starts it in the image its KCB names.

use crate::kcb::{self, CoreState, Kcb};
use crate::proc::wait::{self, SleepLock, Wake};
use crate::proc::{sched, Thread};
use abi::Errno;
use alloc::sync::Arc;
use core::sync::atomic::Ordering;

/// Held across each stop, start, park and unpark.
static CORE_CTL: SleepLock<()> = SleepLock::new(());

/// How long a stop polls the core's state before it sleeps: a stop that needs longer waits for
/// a thread that runs with interrupts off, and the caller's core can do other work meanwhile.
/// Two timer ticks: a sleep lasts a tick at least, which the stopped core's programs would
/// wait out before it starts again (an update or unpark); under emulation a stop takes a few
/// milliseconds now and then (the vCPU not running), which 2 ms of polling missed.
const STOP_SPIN_NS: u64 = 20_000_000;

/// `struct reef_core_info` of core `core` (see `abi::reef::CORE_INFO_SIZE`): `ENODEV` if there
/// is no such core.
pub fn info(core: u64) -> Result<[u8; abi::reef::CORE_INFO_SIZE], Errno> {
    let k = core_kcb(core)?;
    let mut out = [0u8; abi::reef::CORE_INFO_SIZE];
    let words32 = [
        k.core_id as u32,
        k.node_id as u32,
        k.apic_id,
        k.state() as u8 as u32,
    ];
    for (i, w) in words32.iter().enumerate() {
        out[4 * i..4 * i + 4].copy_from_slice(&w.to_le_bytes());
    }
    let words64 = [
        crate::arch::paging::virt_to_phys(k as *const Kcb as u64),
        k.starts.load(Ordering::Acquire),
        k.shutdown_ns.load(Ordering::Acquire),
    ];
    for (i, w) in words64.iter().enumerate() {
        out[16 + 8 * i..24 + 8 * i].copy_from_slice(&w.to_le_bytes());
    }
    out[40..44].copy_from_slice(&(sched::queued_threads(k) as u32).to_le_bytes());
    out[44..48].copy_from_slice(&k.fleet_owner.load(Ordering::Acquire).to_le_bytes());
    let image = crate::image::get(k.image.load(Ordering::Acquire)).name();
    out[48..48 + image.len()].copy_from_slice(image);
    let parked_on = match k.state() {
        CoreState::Parked => k.host().map_or(abi::reef::CORE_NONE, |h| h.core_id as u32),
        _ => abi::reef::CORE_NONE,
    };
    let guest = k
        .hosted()
        .next()
        .map_or(abi::reef::CORE_NONE, |g| g.core_id as u32);
    out[64..68].copy_from_slice(&parked_on.to_le_bytes());
    out[68..72].copy_from_slice(&guest.to_le_bytes());
    Ok(out)
}

/// Stops core `core` for thread `me` and waits until it has stopped. Errors, which change
/// nothing: `ENODEV` (no such core), `EALREADY` (not online), `EBUSY` (the last online core;
/// core 0; a fleet member owns it; it hosts a parked core), `EDEADLK` (`me` may run only there,
/// so it could not go on to see the stop). `EINTR` if a signal comes while waiting: the core
/// still stops.
pub fn stop(me: &Arc<Thread>, core: u64) -> Result<(), Errno> {
    let k = core_kcb(core)?;
    let _one = CORE_CTL.lock();
    check_stoppable(me, k)?;
    halt(me, k, interrupt_heir(k), true)
}

/// Moves the device interrupts bound to `k` to `heir`, has the BootDriver stop `k` and waits
/// until it has: `EALREADY` (with the interrupts back) if `k` was not online; `EINTR` if a
/// signal comes while waiting and `interruptible` (the core still stops).
fn halt(me: &Arc<Thread>, k: &'static Kcb, heir: &Kcb, interruptible: bool) -> Result<(), Errno> {
    crate::irq::move_bindings(k, heir);
    let driver = crate::smp::driver();
    if driver.request_stop(k).is_err() {
        crate::irq::bring_home(k);
        return Err(Errno::EALREADY);
    }
    wait_until(me, || k.state() == CoreState::Stopped, interruptible)?;
    driver.finish_stop(k);
    Ok(())
}

/// The core that takes the device interrupts bound to `k` while it is stopped (§4.8): an
/// online core of its node, else the boot core (which never stops).
fn interrupt_heir(k: &Kcb) -> &'static Kcb {
    let online = |o: &&'static Kcb| o.core_id != k.core_id && o.state() == CoreState::Online;
    (0..kcb::MAX_CORES)
        .filter_map(kcb::get)
        .filter(online)
        .find(|o| o.node_id == k.node_id)
        .or_else(|| kcb::get(0))
        .expect("the boot core's KCB exists")
}

/// Whether `me` may stop core `k` now (see [`stop`] for the errors). Called under [`CORE_CTL`].
fn check_stoppable(me: &Arc<Thread>, k: &Kcb) -> Result<(), Errno> {
    if k.state() != CoreState::Online {
        return Err(Errno::EALREADY);
    }
    if k.core_id == 0 || kcb::online_cores().len() < 2 {
        return Err(Errno::EBUSY);
    }
    if k.fleet_owner.load(Ordering::Acquire) != 0 || k.guests.load(Ordering::Acquire) != 0 {
        return Err(Errno::EBUSY);
    }
    // Online, or parked (a thread pinned to a parked core goes on on its host).
    let runs = |c: usize| {
        kcb::get(c).is_some_and(|o| matches!(o.state(), CoreState::Online | CoreState::Parked))
    };
    let elsewhere = (0..kcb::MAX_CORES).any(|c| c != k.core_id && runs(c) && sched::may_run(me, c));
    if !elsewhere {
        return Err(Errno::EDEADLK);
    }
    Ok(())
}

/// Waits until `done` holds: polls for up to [`STOP_SPIN_NS`], then sleeps a millisecond at a
/// time. `EINTR` if a signal comes and `interruptible`; otherwise a signal only turns the
/// sleeps into polling.
fn wait_until(me: &Arc<Thread>, done: impl Fn() -> bool, interruptible: bool) -> Result<(), Errno> {
    let spin_until = crate::time::now_ns() + STOP_SPIN_NS;
    while !done() {
        if crate::time::now_ns() < spin_until {
            crate::arch::cpu::pause();
        } else if wait::sleep_until(me, crate::time::now_ns() + 1_000_000) == Wake::Interrupted {
            if interruptible {
                return Err(Errno::EINTR);
            }
            crate::arch::cpu::pause();
        }
    }
    Ok(())
}

/// Parks core `core` on core `host` for thread `me`: an online core is stopped as [`stop`]
/// stops it (its threads that may run elsewhere move there), a stopped one is taken as it is;
/// then `host` runs its KCB by turns with its own, and the call returns once it does. Errors,
/// which change nothing: `ENODEV` (no such core or host), `EINVAL` (the core is the host; the
/// host is not online), `EALREADY` (the core is parked already, or stopping or starting),
/// `EBUSY` (as for [`stop`]: core 0, the last online core, a fleet's core, a core hosting
/// others; or a fleet member owns the host, or it runs a tickless image such as `reef-rt`),
/// `EDEADLK` (`me` may run only on the core).
pub fn park(me: &Arc<Thread>, core: u64, host: u64) -> Result<(), Errno> {
    let k = core_kcb(core)?;
    let h = core_kcb(host)?;
    let _one = CORE_CTL.lock();
    if k.core_id == h.core_id || h.state() != CoreState::Online {
        return Err(Errno::EINVAL);
    }
    // A host takes turns between KCBs on its tick, which a tickless image's cores lack.
    if crate::image::get(h.image.load(Ordering::Acquire)).tickless {
        return Err(Errno::EBUSY);
    }
    let stopped = k.state() == CoreState::Stopped;
    if !stopped {
        check_stoppable(me, k)?;
    } else if k.core_id == 0 || k.fleet_owner.load(Ordering::Acquire) != 0 {
        return Err(Errno::EBUSY);
    }
    // Claimed before the fleet owner is checked, as `fleet::bind` takes the owner before it
    // checks for a guest: one of the two sees the other.
    h.guests.fetch_add(1, Ordering::SeqCst);
    if h.fleet_owner.load(Ordering::SeqCst) != 0 {
        h.guests.fetch_sub(1, Ordering::SeqCst);
        return Err(Errno::EBUSY);
    }
    if !stopped {
        if let Err(e) = halt(me, k, h, false) {
            h.guests.fetch_sub(1, Ordering::SeqCst);
            return Err(e);
        }
    }
    k.own_tsc_offset
        .store(k.tsc_offset.load(Ordering::Acquire), Ordering::Release);
    k.parked_on.store(h.core_id, Ordering::SeqCst);
    // The host is online and cannot stop meanwhile (stops take `CORE_CTL`), so it answers.
    let _ = crate::ipi::send(h.core_id, crate::ipi::IpiKind::Host);
    wait_until(me, || k.state() == CoreState::Parked, false)
}

/// Unparks core `core`: its host gives its KCB back, and the core starts again with it; returns
/// once it is online. Errors, which change nothing: `ENODEV`, `EINVAL` (not parked), `EDEADLK`
/// (the caller runs on that KCB: it may run only on that core); `EIO` if the core did not come
/// up (it stays stopped, with its KCB, and can be started).
pub fn unpark(core: u64) -> Result<(), Errno> {
    let k = core_kcb(core)?;
    let _one = CORE_CTL.lock();
    if k.state() != CoreState::Parked {
        return Err(Errno::EINVAL);
    }
    // The caller's sleeps below would be on the parked KCB's timers, which stop with it.
    if kcb::current().core_id == k.core_id {
        return Err(Errno::EDEADLK);
    }
    let h = k.host().ok_or(Errno::EINVAL)?;
    k.sched.release_guest.store(true, Ordering::SeqCst);
    let _ = crate::ipi::send(h.core_id, crate::ipi::IpiKind::Host);
    // The host gives it back from its idle context and wakes the queue; the caller may be a
    // thread of the host, which must sleep for that context to run. A signal does not end the
    // wait: the unpark has been asked for and completes.
    loop {
        let seq = sched::GUEST_RELEASED.seq();
        if k.state() == CoreState::Stopped && k.parked_on.load(Ordering::Acquire) == kcb::NO_CORE {
            break;
        }
        sched::GUEST_RELEASED.wait_uninterruptible(seq);
    }
    start_with_kcb(k)
}

/// Restarts core `core` in the kernel image `path` names for `me` (`reef`: the boot image; a
/// variant image's file, `/boot/reef-trace`) with its KCB (Barrelfish/DC §4.5), and returns
/// once it is online there: an online core is stopped first as [`stop`] stops it (its threads
/// that may run elsewhere move, those pinned there wait and resume in the new image), a
/// stopped one is started in the image. The image is loaded and checked before anything
/// changes (`image::load`'s errors). Errors, which change nothing: `ENODEV`, `EBUSY` (as for
/// [`stop`]; or the core is parked), `EALREADY` (stopping or starting), `EDEADLK`; `EIO` if
/// the core did not come up in the image (it stays stopped, set to start in it).
pub fn update(me: &Arc<Thread>, core: u64, path: &[u8]) -> Result<(), Errno> {
    let k = core_kcb(core)?;
    let _one = CORE_CTL.lock();
    let online = match k.state() {
        CoreState::Online => {
            check_stoppable(me, k)?;
            true
        }
        CoreState::Stopped if k.core_id == 0 || k.fleet_owner.load(Ordering::Acquire) != 0 => {
            return Err(Errno::EBUSY)
        }
        CoreState::Stopped => false,
        CoreState::Parked => return Err(Errno::EBUSY),
        _ => return Err(Errno::EALREADY),
    };
    let index = crate::image::load(&me.process, path, k.node_id)?;
    if online {
        halt(me, k, interrupt_heir(k), false)?;
    }
    k.image.store(index, Ordering::Release);
    start_with_kcb(k)
}

/// Restarts online core `core` in the kernel image `path` names, as [`update`] does, and makes
/// `me`'s process its owner (`fleet::own`): the process's threads are pinned there and the core
/// runs nothing else until the process exits (Barrelfish/DC §5.3: one program alone on a core,
/// in the real-time image `/boot/reef-rt`). The ownership is checked first: `EINVAL` (not
/// online), `EBUSY` (owned already, the last free online core, a host of parked cores, or the
/// process owns a core already); then `update`'s errors. The caller returns on the core.
pub fn rt(me: &Arc<Thread>, core: u64, path: &[u8]) -> Result<(), Errno> {
    crate::fleet::ownable(&me.process, core)?;
    update(me, core, path)?;
    crate::fleet::own(&me.process, core)?;
    // The caller returns on its core, as from `sched_setaffinity` onto it.
    if kcb::current().core_id as u64 != core {
        sched::schedule();
    }
    Ok(())
}

/// Starts stopped core `core` again with its KCB, and returns once it is online: `ENODEV`,
/// `EALREADY` (not stopped), `EIO` (it did not come up).
pub fn start(core: u64) -> Result<(), Errno> {
    let k = core_kcb(core)?;
    let _one = CORE_CTL.lock();
    if k.state() != CoreState::Stopped {
        return Err(Errno::EALREADY);
    }
    start_with_kcb(k)
}

/// Starts stopped core `k` through the BootDriver with its KCB, then brings back the device
/// interrupts bound there (§4.8): `EIO` if it did not come up (it stays stopped).
fn start_with_kcb(k: &'static Kcb) -> Result<(), Errno> {
    crate::smp::driver().start(k).map_err(|e| {
        crate::kprintln!("reef: corectl: {e}");
        Errno::EIO
    })?;
    crate::irq::bring_home(k);
    Ok(())
}

/// The KCB of core `core`: `ENODEV` if there is no such core.
fn core_kcb(core: u64) -> Result<&'static Kcb, Errno> {
    usize::try_from(core)
        .ok()
        .and_then(kcb::get)
        .ok_or(Errno::ENODEV)
}
