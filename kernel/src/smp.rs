//! Cores as devices (Barrelfish/DC §4.1–4.4): the [`BootDriver`] starts a core with a given entry
//! point, stack and KCB, and stops it again.
//!
//! Starting: the BootDriver writes the core's KCB into a 2 MiB frame of the core's node (see
//! `kcb::CoreMemory`), fills the trampoline's parameter block (boot page tables, kernel page
//! tables, entry point, stack top, KCB address) and sends INIT, then after 10 ms a startup IPI
//! (a second one if the core has not reported in after 1 ms); a core that stopped got its INIT
//! then and is restarted with the startup IPI alone. The core runs the real-mode trampoline at
//! `AP_TRAMPOLINE_PHYS`, reaches long mode, switches to the kernel page tables and calls the
//! entry point with its KCB, which checks the KCB layout, adopts it and reports online. The
//! BootDriver then measures the core's TSC offset with it. Cores are started one at a time
//! because they share the trampoline.
//!
//! Stopping (§4.5): a `Stop` IPI marks the core stopping; from then on it takes only threads
//! that may run nowhere else, and at its next scheduling point (the return to user mode, a
//! block, or at once if idle) it switches to its idle context, which moves its other ready
//! threads and timed wake-ups to other cores (`sched::evacuate`), hands its cached frames back
//! to its node, records its clock, marks itself stopped and halts with interrupts off; the
//! BootDriver then sends INIT, which holds the core in wait-for-SIPI. The KCB stays, with the
//! threads that may run only there, so a later [`BootDriver::start`] resumes the core with all
//! its per-core state; the restarted core keeps its TSC offset and never reads an earlier time
//! than when it stopped (§4.7, `time::resume_clock`).
//!
//! Parking (§4.6): a core stopped this way can have its KCB run by another core, its host,
//! which takes turns between its own KCB and the parked one (`proc::sched`, "Parked KCBs").
//! [`host_guest`] takes the KCB on the host: its clock reads the host's TSC from then on
//! (the KCB's own offset is kept aside) and never less than when it stopped, and IPIs to it go
//! to the host. [`release_guest`] gives it back from the host's idle context: the KCB records
//! its clock and reads `Stopped` again, with its own offset, and the BootDriver starts its core
//! with it as after a stop.

use crate::arch::{self, apic, cpu, paging::phys_to_virt};
use crate::kcb::{self, CoreState, Kcb};
use crate::mm::{self, FrameSize};
use crate::time;
use core::sync::atomic::{AtomicU64, Ordering};

/// Physical address of the kernel's top-level page table, loaded by every core.
static KERNEL_PML4: AtomicU64 = AtomicU64::new(0);

/// Records the kernel page tables that started cores load.
pub fn set_kernel_pml4(phys: u64) {
    KERNEL_PML4.store(phys, Ordering::Relaxed);
}

/// Physical address of the kernel's top-level page table.
pub fn kernel_pml4() -> u64 {
    KERNEL_PML4.load(Ordering::Relaxed)
}

/// Why a core could not be started or stopped.
#[derive(Debug)]
pub enum BootError {
    /// No frame left on the core's node for its KCB and stacks.
    NoMemory(mm::AllocError),
    /// The core did not come up after its startup IPIs.
    NoResponse {
        /// The core's id.
        core: usize,
        /// The core's local APIC id.
        apic_id: u32,
    },
    /// The core is not in a state that allows the operation.
    WrongState {
        /// The core's id.
        core: usize,
        /// The state the core is in.
        state: CoreState,
    },
    /// The core did not acknowledge the stop request.
    StopTimeout {
        /// The core's id.
        core: usize,
    },
}

impl core::fmt::Display for BootError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            BootError::NoMemory(e) => write!(f, "no memory for a KCB: {e}"),
            BootError::NoResponse { core, apic_id } => {
                write!(f, "core {core} (APIC id {apic_id}) did not start")
            }
            BootError::WrongState { core, state } => write!(f, "core {core} is {state:?}"),
            BootError::StopTimeout { core } => write!(f, "core {core} did not stop"),
        }
    }
}

/// Layout of the trampoline's parameter block (must match `boot.S`).
#[repr(C)]
struct ApParams {
    /// Physical address of the boot page tables, which the trampoline loads to reach long mode.
    boot_cr3: u64,
    /// Physical address of the kernel's top-level page table.
    kernel_cr3: u64,
    /// Address of the core's entry point, an `extern "C" fn(kcb: u64) -> !` of a kernel image
    /// ([`core_main`] or a variant's [`reef_image_entry`]).
    entry: u64,
    /// Top of the stack the core starts on.
    stack_top: u64,
    /// Argument of the entry point: the address of the core's KCB.
    arg: u64,
}

/// Starts and stops cores.
pub struct BootDriver {
    /// Keeps a BootDriver from being made other than by [`BootDriver::install`].
    _private: (),
}

/// The BootDriver, made by the boot core ([`BootDriver::install`]).
static DRIVER: spin::Once<BootDriver> = spin::Once::new();

/// The BootDriver (after the boot core installed it).
pub fn driver() -> &'static BootDriver {
    DRIVER.get().expect("the BootDriver is installed at boot")
}

impl BootDriver {
    /// Makes the BootDriver ([`BootDriver::new`]) and keeps it for [`driver`].
    pub fn install() -> &'static BootDriver {
        DRIVER.call_once(BootDriver::new)
    }

    /// Installs the AP trampoline below 1 MiB. The page at `AP_TRAMPOLINE_PHYS` is never given to
    /// the frame allocator (the first MiB is kept out of it).
    fn new() -> BootDriver {
        let image = arch::ap_trampoline();
        assert!(
            image.len() as u64 <= arch::AP_PARAMS_OFFSET,
            "AP trampoline too large"
        );
        let dst = phys_to_virt(arch::AP_TRAMPOLINE_PHYS) as *mut u8;
        // SAFETY: the trampoline page is reserved RAM below 1 MiB, mapped by the direct map and
        // used by nothing else; the image is shorter than the parameter block offset.
        unsafe { core::ptr::copy_nonoverlapping(image.as_ptr(), dst, image.len()) };
        BootDriver { _private: () }
    }

    /// Creates the KCB of core `core_id` (APIC id `apic_id`) in memory of its node `node`.
    pub fn create_kcb(
        &self,
        core_id: usize,
        node: usize,
        apic_id: u32,
    ) -> Result<&'static Kcb, BootError> {
        let frame = mm::allocate_on(node, FrameSize::Large).map_err(BootError::NoMemory)?;
        // SAFETY: the frame is a fresh 2 MiB frame of the node, owned by this core from now on.
        Ok(unsafe { Kcb::create(phys_to_virt(frame.base()), core_id, node, apic_id) })
    }

    /// Starts the core of `kcb` in the kernel image its KCB names (`Kcb::image`, entering at
    /// the image's entry point), waits until it is online, and measures its TSC offset.
    pub fn start(&self, kcb: &'static Kcb) -> Result<(), BootError> {
        match kcb.state() {
            CoreState::Created | CoreState::Stopped => {}
            state => {
                return Err(BootError::WrongState {
                    core: kcb.core_id,
                    state,
                })
            }
        }
        let params = ApParams {
            boot_cr3: arch::boot_pml4_phys(),
            kernel_cr3: KERNEL_PML4.load(Ordering::Relaxed),
            entry: crate::image::get(kcb.image.load(Ordering::Acquire)).entry,
            stack_top: kcb.stacks.kernel_top,
            arg: kcb as *const Kcb as u64,
        };
        let dst = phys_to_virt(arch::AP_TRAMPOLINE_PHYS + arch::AP_PARAMS_OFFSET) as *mut ApParams;
        // SAFETY: the parameter block is inside the reserved trampoline page; cores are started
        // one at a time (`&self` of the single BootDriver on the boot core), so no started core
        // reads it while it is written.
        unsafe { dst.write_volatile(params) };
        let first = kcb.starts.load(Ordering::Acquire) == 0;
        let was = kcb.state();
        kcb.set_state(CoreState::Starting);
        // A stopped core got its INIT when it stopped (`finish_stop`) and waits for a startup
        // IPI; a core never started gets INIT now and the MP specification's 10 ms.
        if was == CoreState::Created {
            apic::send_init(kcb.apic_id);
            time::spin_ns(10_000_000);
        }
        let page = (arch::AP_TRAMPOLINE_PHYS >> 12) as u8;
        apic::send_startup(kcb.apic_id, page);
        if !wait_for(kcb, CoreState::Online, 1_000_000) {
            apic::send_startup(kcb.apic_id, page);
        }
        // QEMU's TCG may take long to schedule a new vCPU thread on a loaded host.
        if !wait_for(kcb, CoreState::Online, 10_000_000_000) {
            return Err(BootError::NoResponse {
                core: kcb.core_id,
                apic_id: kcb.apic_id,
            });
        }
        if first {
            kcb.tsc_offset
                .store(time::tsc_sync_source(), Ordering::Relaxed);
            CORE_READY.store(kcb.core_id as u64 + 1, Ordering::Release);
        }
        Ok(())
    }

    /// Asks an online core to stop (see the module comment); it stops on its own at its next
    /// scheduling point. A core may ask itself: the calling thread then moves to another core
    /// when it next blocks or returns to user mode, unless it may run only here.
    pub fn request_stop(&self, kcb: &'static Kcb) -> Result<(), BootError> {
        let wrong = || BootError::WrongState {
            core: kcb.core_id,
            state: kcb.state(),
        };
        if kcb.state() != CoreState::Online {
            return Err(wrong());
        }
        if kcb.core_id == kcb::current().core_id {
            crate::proc::sched::request_stop(kcb);
            return Ok(());
        }
        crate::ipi::send(kcb.core_id, crate::ipi::IpiKind::Stop).map_err(|_| wrong())?;
        Ok(())
    }

    /// Puts a core that has stopped in wait-for-SIPI (INIT). It is halted with interrupts off and
    /// holds no lock (see [`stop_this_core`]).
    pub fn finish_stop(&self, kcb: &'static Kcb) {
        apic::send_init(kcb.apic_id);
    }

    /// Stops another online core and waits (spinning) until it has: for boot-time self-tests,
    /// which run before any thread can sleep.
    pub fn stop(&self, kcb: &'static Kcb) -> Result<(), BootError> {
        if kcb.core_id == kcb::current().core_id {
            return Err(BootError::WrongState {
                core: kcb.core_id,
                state: kcb.state(),
            });
        }
        self.request_stop(kcb)?;
        if !wait_for(kcb, CoreState::Stopped, 5_000_000_000) {
            return Err(BootError::StopTimeout { core: kcb.core_id });
        }
        self.finish_stop(kcb);
        Ok(())
    }
}

/// Waits until the core of `kcb` is in `state`; false if `timeout_ns` passed first.
fn wait_for(kcb: &Kcb, state: CoreState, timeout_ns: u64) -> bool {
    let deadline = time::now_ns() + timeout_ns;
    while kcb.state() != state {
        if time::now_ns() > deadline {
            return false;
        }
        cpu::pause();
    }
    true
}

/// Core id + 1 of the core whose TSC offset has been stored (it waits for this before using the
/// clock).
static CORE_READY: AtomicU64 = AtomicU64::new(0);

/// The entry point of a variant kernel image (its ELF entry, which `corectl update` starts a
/// core at): the image's own [`core_main`]. The boot image has it too, unused.
#[no_mangle]
pub extern "C" fn reef_image_entry(kcb_addr: u64) -> ! {
    core_main(kcb_addr)
}

/// Entry point of every core the BootDriver starts in this kernel image: checks and adopts the
/// KCB, loads this image's IDT and `syscall` entry, and runs the core's idle loop.
pub extern "C" fn core_main(kcb_addr: u64) -> ! {
    // SAFETY: the BootDriver passes the address of a KCB it created; reading its layout fields
    // is valid for any KCB-sized readable region, and `check_layout` refuses foreign layouts.
    let kcb: &'static Kcb = unsafe { &*(kcb_addr as *const Kcb) };
    if let Err((magic, version)) = kcb.check_layout() {
        crate::console::print_emergency(format_args!(
            "reef: core refuses KCB at {kcb_addr:#x}: magic {magic:#x} layout {version} \
             (this kernel: layout {})\n",
            kcb::KCB_LAYOUT_VERSION
        ));
        cpu::halt_forever();
    }
    // SAFETY: the BootDriver started this core for this KCB, and no other core runs it.
    unsafe { kcb.adopt() };
    arch::idt::load();
    arch::user::init_core();
    arch::kvm::register(&kcb.steal);
    apic::init_local();
    // Whether this image has a periodic tick: work for a tickless core needs an IPI.
    kcb.sched
        .tickless
        .store(cfg!(feature = "rt"), Ordering::Release);
    let first = kcb.starts.fetch_add(1, Ordering::AcqRel) == 0;
    kcb.set_state(CoreState::Online);
    if first {
        time::tsc_sync_target();
        while CORE_READY.load(Ordering::Acquire) != kcb.core_id as u64 + 1 {
            cpu::pause();
        }
    } else {
        time::resume_clock(kcb);
    }
    // The `reef-rt` image has no periodic tick: its timer interrupts only at a sleeper's
    // deadline (`proc::sched`).
    #[cfg(not(feature = "rt"))]
    time::start_timer();
    crate::proc::idle_loop()
}

/// Takes the KCB `guest`, whose core has stopped, to run it on this core, the host (its own KCB
/// `host`), by turns with its own: from the `Host` IPI, with interrupts off. The guest's clock
/// reads this core's TSC with this core's offset from now on, moved forward should it read less
/// than when the guest stopped (§4.7); then the guest reads `Parked`, so that IPIs reach it
/// here (its `parked_on`, which names this core, was set before the IPI).
pub fn host_guest(host: &Kcb, guest: &Kcb) {
    guest
        .tsc_offset
        .store(host.tsc_offset.load(Ordering::Acquire), Ordering::Release);
    time::resume_clock(guest);
    guest.sched.turn_over.store(false, Ordering::Release);
    // The host ticks (a tickless core hosts no KCB): the guest's timers fire on its tick.
    guest.sched.tickless.store(false, Ordering::Release);
    guest.set_state(CoreState::Parked);
}

/// Gives back the KCB `guest` parked on this core (its own KCB `host`), from the host's idle
/// context with interrupts off (the guest's turn is not running): records the guest's clock,
/// marks it `Stopped` (from then on no IPI is sent to it, and shootdowns stop waiting for it),
/// takes the requests posted to it until then (its threads ran here, so their flushes are this
/// core's) and voids later ones, restores its own TSC offset and clears the indirection last.
/// The BootDriver may then start the guest's core with it.
pub fn release_guest(host: &Kcb, guest: &Kcb) {
    guest
        .shutdown_ns
        .store(time::now_ns_of(guest), Ordering::Release);
    guest.set_state(CoreState::Stopped);
    crate::ipi::drain(guest);
    guest.tsc_offset.store(
        guest.own_tsc_offset.load(Ordering::Acquire),
        Ordering::Release,
    );
    guest.sched.idle.store(false, Ordering::Release);
    guest.sched.turn_over.store(false, Ordering::Release);
    guest.sched.release_guest.store(false, Ordering::Release);
    host.guests.fetch_sub(1, Ordering::AcqRel);
    // Last: the unparking thread waits for this before it starts the guest's core.
    guest.parked_on.store(kcb::NO_CORE, Ordering::Release);
}

/// Stops the current core, asked to by [`crate::proc::sched::request_stop`], from its idle
/// context with interrupts off, once the scheduler has moved away what may run elsewhere
/// (`sched::evacuate`): returns its cached frames to its node, records its clock, voids the IPI
/// requests posted to it (it runs nothing until it starts again, with an empty TLB), marks
/// itself stopped and halts at once (a BootDriver that sees it stopped may send INIT). Never
/// returns.
pub fn stop_this_core(kcb: &Kcb) -> ! {
    apic::timer_stop();
    arch::kvm::unregister();
    if let Some(node) = mm::nodes().get(kcb.node_id) {
        let mut tcache = kcb.tcache.lock();
        let mut ncache = node.ncache.lock();
        if let Err(e) = tcache.drain_into(&mut ncache, &mut mm::DirectMapLinks) {
            crate::kprintln!(
                "reef: core {}: could not return cached frames: {e}",
                kcb.core_id
            );
        }
    }
    cpu::flush_tlb();
    kcb.ipi.pending.store(0, Ordering::SeqCst);
    kcb.shutdown_ns.store(time::now_ns(), Ordering::Release);
    kcb.sched.stop_requested.store(false, Ordering::Release);
    kcb.sched.idle.store(false, Ordering::Release);
    kcb.ipi
        .handled
        .fetch_max(kcb.ipi.requested.load(Ordering::SeqCst), Ordering::SeqCst);
    kcb.set_state(CoreState::Stopped);
    cpu::halt_forever()
}
