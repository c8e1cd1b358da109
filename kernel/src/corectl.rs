//! Core management for programs (Barrelfish/DC §4, `corectl`): what each core is doing, and
//! stopping and starting cores while programs run, through the [`crate::smp::BootDriver`].
//!
//! One operation at a time ([`CORE_CTL`]): the checks below (the last online core, the
//! caller's own core) hold only while no other stop or start runs. A stop returns once the
//! core has stopped; it stops by itself at the scheduling point the stop IPI forces, tens of
//! microseconds later, so the caller polls its state for up to [`STOP_SPIN_NS`] and only then
//! sleeps a millisecond at a time (a timer tick, 10 ms, in practice). The stopping core does
//! not wake it: it halts the moment it reads as stopped, so that the INIT that follows cannot
//! catch it holding a lock.
//!
//! Core 0 cannot be stopped: it is the bootstrap processor, which an INIT sends back to the
//! firmware's reset vector instead of into wait-for-SIPI as it does an application processor
//! (Linux 6.1 keeps CPU 0 online by default too), and its timer tick polls the console.
//! Left for later (issue 14): `update`, `park` and `unpark` do not exist yet.

use crate::kcb::{self, CoreState, Kcb};
use crate::proc::wait::{self, SleepLock, Wake};
use crate::proc::{sched, Thread};
use abi::Errno;
use alloc::sync::Arc;
use core::sync::atomic::Ordering;

/// Held across each stop and start.
static CORE_CTL: SleepLock<()> = SleepLock::new(());

/// How long a stop polls the core's state before it sleeps: a stop that needs longer waits for
/// a thread that runs with interrupts off, and the caller's core can do other work meanwhile.
const STOP_SPIN_NS: u64 = 2_000_000;

/// The name of the kernel image every core runs (`reef_core_info`'s `image`).
const IMAGE: &[u8] = b"reef";

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
    out[48..48 + IMAGE.len()].copy_from_slice(IMAGE);
    Ok(out)
}

/// Stops core `core` for thread `me` and waits until it has stopped. Errors, which change
/// nothing: `ENODEV` (no such core), `EALREADY` (not online), `EBUSY` (the last online core;
/// core 0; a fleet member owns it), `EDEADLK` (`me` may run only there, so it could not go on
/// to see the stop). `EINTR` if a signal comes while waiting: the core still stops.
pub fn stop(me: &Arc<Thread>, core: u64) -> Result<(), Errno> {
    let k = core_kcb(core)?;
    let _one = CORE_CTL.lock();
    if k.state() != CoreState::Online {
        return Err(Errno::EALREADY);
    }
    if k.core_id == 0 || kcb::online_cores().len() < 2 {
        return Err(Errno::EBUSY);
    }
    if k.fleet_owner.load(Ordering::Acquire) != 0 {
        return Err(Errno::EBUSY);
    }
    let elsewhere = kcb::online_cores()
        .into_iter()
        .any(|c| c != k.core_id && sched::may_run(me, c));
    if !elsewhere {
        return Err(Errno::EDEADLK);
    }
    let driver = crate::smp::driver();
    driver.request_stop(k).map_err(|_| Errno::EALREADY)?;
    let spin_until = crate::time::now_ns() + STOP_SPIN_NS;
    while k.state() != CoreState::Stopped {
        if crate::time::now_ns() < spin_until {
            crate::arch::cpu::pause();
        } else if wait::sleep_until(me, crate::time::now_ns() + 1_000_000) == Wake::Interrupted {
            return Err(Errno::EINTR);
        }
    }
    driver.finish_stop(k);
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
    crate::smp::driver()
        .start(k, crate::smp::core_main)
        .map_err(|e| {
            crate::kprintln!("reef: corectl: {e}");
            Errno::EIO
        })
}

/// The KCB of core `core`: `ENODEV` if there is no such core.
fn core_kcb(core: u64) -> Result<&'static Kcb, Errno> {
    usize::try_from(core)
        .ok()
        .and_then(kcb::get)
        .ok_or(Errno::ENODEV)
}
