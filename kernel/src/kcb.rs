//! The Kernel Control Block (Barrelfish/DC §4.2): all per-core kernel state, in one object.
//!
//! A core finds its KCB through the GS base register (`gs:0` holds the KCB's own address). No
//! per-core state lives anywhere else, so a core can be stopped, restarted with another kernel
//! image, or its KCB handed to another core. Kernel images that share KCBs must agree on the
//! layout: [`Kcb::check_layout`] compares [`KCB_MAGIC`] and [`KCB_LAYOUT_VERSION`] before a core
//! adopts one.
//!
//! The KCB of core `c` and that core's stacks live in one 2 MiB frame of `c`'s NUMA node
//! ([`CoreMemory`]). The only global is [`KCBS`], a directory of pointers that other cores use
//! to reach a KCB (to send it an IPI, read its clock offset, or stop it).
//!
//! Parking (Barrelfish/DC §4.6): a stopped core's KCB can be run by another core, its host,
//! which then takes turns between its own KCB and those parked on it (`proc::sched`, "Parked
//! KCBs"). [`Kcb::parked_on`] names the host and is the indirection IPIs go through (§4.8):
//! [`Kcb::ipi_apic_id`] is the host's APIC id while the KCB is parked on it.

use crate::arch::gdt::CpuTables;
use crate::arch::kvm::StealTime;
use crate::proc::sched::CoreScheduler;
use crate::sync::IrqMutex;
use alloc::vec::Vec;
use core::cell::UnsafeCell;
use core::sync::atomic::{
    AtomicBool, AtomicI64, AtomicPtr, AtomicU32, AtomicU64, AtomicU8, AtomicUsize, Ordering,
};
use frames::TCache;
use vspace::FlushSet;

/// Identifies a KCB.
pub const KCB_MAGIC: u64 = u64::from_be_bytes(*b"REEF.KCB");
/// Version of the KCB layout; bump on any change to [`Kcb`].
pub const KCB_LAYOUT_VERSION: u32 = 12;
/// Most cores Reef manages.
pub const MAX_CORES: usize = 256;
/// [`Kcb::parked_on`] when it names no core.
pub const NO_CORE: usize = usize::MAX;

/// Lifecycle of a core, as the BootDriver sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum CoreState {
    /// KCB created, core not started.
    Created = 0,
    /// Startup IPIs sent, waiting for the core to come up.
    Starting = 1,
    /// Running the kernel.
    Online = 2,
    /// Asked to stop; finishing what it holds.
    Stopping = 3,
    /// Halted and reset with INIT; can be started again.
    Stopped = 4,
    /// Halted and reset with INIT, its KCB run by another core (its host, `Kcb::parked_on`)
    /// by turns with the host's own (Barrelfish/DC §4.6); unparked, it is `Stopped` again and
    /// then started.
    Parked = 5,
}

impl CoreState {
    /// The state stored as `v` (values past `Parked` read as `Stopped`).
    fn from_u8(v: u8) -> CoreState {
        match v {
            0 => CoreState::Created,
            1 => CoreState::Starting,
            2 => CoreState::Online,
            3 => CoreState::Stopping,
            5 => CoreState::Parked,
            _ => CoreState::Stopped,
        }
    }
}

/// Number of local interrupt vectors a core can bind to device interrupt sources.
pub const BINDABLE_VECTORS: usize = 16;
/// First vector of the bindable range.
pub const FIRST_BINDABLE_VECTOR: u8 = 0x40;

/// Device interrupt sources (global system interrupts) routed to this core, by local vector
/// (`irq::bind_device`: the NICs', on the boot core or the core `nic_irq=N` names). As
/// Barrelfish/DC re-registers them when a KCB moves (§4.8), a stop or park of this core moves
/// them to another (`irq::move_bindings`), and its start or unpark brings them back.
#[derive(Default)]
pub struct InterruptBindings {
    /// `gsi[v]` is the source bound to vector `FIRST_BINDABLE_VECTOR + v`.
    pub gsi: [Option<u32>; BINDABLE_VECTORS],
}

/// IPI requests to this core and their acknowledgements (see [`crate::ipi`]).
#[derive(Default)]
pub struct IpiMailbox {
    /// Bit set of pending request kinds.
    pub pending: AtomicU64,
    /// Tickets handed out to senders.
    pub requested: AtomicU64,
    /// Highest ticket whose request has been handled.
    pub handled: AtomicU64,
    /// IPIs received (for reports).
    pub received: AtomicU64,
    /// Translations to invalidate with the next `TlbFlush` request (merged from every
    /// initiator that aimed one at this core since it last handled one).
    pub flush: IrqMutex<FlushSet>,
    /// Cores (a bit each) that sent this core a `TlbFlush` and want an interrupt after its
    /// acknowledgement if they halted meanwhile.
    pub wake_after_ack: [AtomicU64; MAX_CORES / 64],
    /// This core is halted waiting for shootdown acknowledgements.
    pub halted_for_acks: AtomicBool,
}

/// Top addresses of a core's stacks.
#[derive(Clone, Copy, Debug)]
pub struct CoreStacks {
    /// Stack for kernel code and entries from user mode.
    pub kernel_top: u64,
    /// IST stack for double faults.
    pub double_fault_top: u64,
    /// IST stack for NMIs and machine checks.
    pub nmi_top: u64,
}

/// All per-core kernel state.
#[repr(C, align(64))]
pub struct Kcb {
    /// Address of this KCB (read through `gs:0`).
    self_ptr: *const Kcb,
    /// User stack pointer, saved by the `syscall` entry (`gs:8`) until it is pushed.
    user_rsp_scratch: AtomicU64,
    /// Kernel stack top of the thread running on this core (`gs:16`, loaded by the `syscall`
    /// entry; the TSS's RSP0 holds the same value for interrupts from user mode).
    kernel_rsp: AtomicU64,
    /// [`KCB_MAGIC`].
    magic: u64,
    /// [`KCB_LAYOUT_VERSION`].
    layout_version: u32,
    /// Dense core number (0 is the boot core), stable for the life of the KCB.
    pub core_id: usize,
    /// NUMA node of the core.
    pub node_id: usize,
    /// Local APIC id of this core (the BootDriver's INIT and startup IPIs go there; other
    /// IPIs go to [`Kcb::ipi_apic_id`]).
    pub apic_id: u32,
    /// Lifecycle state ([`CoreState`]).
    state: AtomicU8,
    /// This core's TSC minus the boot core's TSC, measured at start-up (the timer offset,
    /// Barrelfish/DC §4.7).
    pub tsc_offset: AtomicI64,
    /// The core's clock (`time::now_ns`) when it last stopped, 0 if it never did: a restarted
    /// core's clock must not read less (§4.7). A parked KCB's clock when its host gave it back.
    pub shutdown_ns: AtomicU64,
    /// The core's own `tsc_offset`, kept here while the KCB is parked (`tsc_offset` then
    /// applies to the host's TSC) and put back when the host gives the KCB back.
    pub own_tsc_offset: AtomicI64,
    /// The core whose kernel runs this KCB while it is parked ([`NO_CORE`]: none). Set before
    /// the host takes the KCB and cleared after it gave it back; IPIs to this KCB go to that
    /// core ([`Kcb::ipi_apic_id`], Barrelfish/DC §4.8's indirection).
    pub parked_on: AtomicUsize,
    /// How many KCBs are parked on this core or claimed for parking here (each names this
    /// core in its [`Kcb::parked_on`]); a core hosts any number (Barrelfish/DC's multi-KCB
    /// kernel), by turns.
    pub guests: AtomicUsize,
    /// Times the core was started (1 after boot).
    pub starts: AtomicU64,
    /// The kernel image the core runs, or starts in next (an index of `image`'s table, 0 the
    /// boot image; Barrelfish/DC §4.5's `update` changes it).
    pub image: AtomicUsize,
    /// Per-core frame cache (NrOS TCache), refilled from this node's NCache.
    pub tcache: IrqMutex<TCache>,
    /// Scheduler state: run queue, current thread, timers (see `proc::sched`).
    pub sched: CoreScheduler,
    /// Device interrupts routed to this core.
    pub interrupt_bindings: IrqMutex<InterruptBindings>,
    /// IPI requests and acknowledgements.
    pub ipi: IpiMailbox,
    /// Local APIC timer interrupts taken.
    pub timer_ticks: AtomicU64,
    /// Of those, the ones that found the core in user mode, in the kernel on a thread's
    /// behalf, and idle (`/proc/stat`; `proc::sched::account_tick`).
    pub cpu_ticks: [AtomicU64; 3],
    /// System calls made on this core: count and nanoseconds spent in each (written only by
    /// this core; `/proc/reef/syscalls` sums them).
    pub syscalls: SyscallStats,
    /// Stacks of this core.
    pub stacks: CoreStacks,
    /// KVM's steal-time record of the vCPU running this KCB (see `arch::kvm`).
    pub steal: StealTime,
    /// GDT and TSS; touched only by the core running this KCB.
    tables: UnsafeCell<CpuTables>,
    /// The node whose kernel heap serves this core's allocations while it applies operations
    /// to another node's replica ([`Kcb::heap_node`]); `usize::MAX` when it is this core's own.
    heap_override: AtomicUsize,
    /// This core's cache of the name directory (fos's per-core name cache, `names.rs`).
    pub names: IrqMutex<msg::names::NameCache>,
    /// The process that owns this core as a fleet member (fos space sharing: the scheduler
    /// runs no other process's threads here, `proc::sched::may_run`); 0 for none. Set by
    /// `fleet::bind`, cleared when the process exits (`sched::release_core`).
    pub fleet_owner: AtomicU32,
}

// SAFETY: every field shared between cores is atomic or behind an IrqMutex; `tables` is only
// accessed by the core running this KCB (see `load_tables`), and `self_ptr` is immutable.
unsafe impl Sync for Kcb {}
// SAFETY: as above; a KCB is handed from the BootDriver to the core that runs it.
unsafe impl Send for Kcb {}

/// Per-core system-call accounting, by Linux number (numbers past the Linux range share the
/// last slot).
pub struct SyscallStats {
    /// Calls made.
    pub count: [AtomicU64; abi::syscalls::SYSCALL_LIMIT + 1],
    /// Nanoseconds from entering the handler to its result, sleeps included.
    pub ns: [AtomicU64; abi::syscalls::SYSCALL_LIMIT + 1],
}

impl SyscallStats {
    /// All counts zero.
    const fn new() -> Self {
        SyscallStats {
            count: [const { AtomicU64::new(0) }; abi::syscalls::SYSCALL_LIMIT + 1],
            ns: [const { AtomicU64::new(0) }; abi::syscalls::SYSCALL_LIMIT + 1],
        }
    }

    /// Counts one call of `nr` that took `ns` nanoseconds (on the core that owns this KCB).
    pub fn record(&self, nr: usize, ns: u64) {
        let slot = nr.min(abi::syscalls::SYSCALL_LIMIT);
        // Only this core writes its counters (other cores read them for /proc/reef), and
        // nothing switches it away between the load and the store (the kernel does not
        // preempt; interrupt handlers record nothing), so a plain load and store count
        // exactly, without the atomic read-modify-write that several emulated cores make slow.
        let add = |c: &AtomicU64, v: u64| c.store(c.load(Ordering::Relaxed) + v, Ordering::Relaxed);
        add(&self.count[slot], 1);
        add(&self.ns[slot], ns);
    }
}

/// Memory of one core: its KCB and stacks, in one 2 MiB frame of its node.
pub struct CoreMemory;

impl CoreMemory {
    /// Size of the region.
    pub const SIZE: u64 = frames::LARGE_PAGE_SIZE;
    /// Bytes reserved for the KCB at the start of the region.
    pub const KCB_SPACE: u64 = 64 * 1024;
    /// Kernel stack size.
    pub const KERNEL_STACK: u64 = 1024 * 1024;
    /// Size of each IST stack.
    pub const IST_STACK: u64 = 128 * 1024;

    /// Stack tops for a region starting at virtual address `base`.
    pub fn stacks(base: u64) -> CoreStacks {
        let kernel_top = base + Self::KCB_SPACE + Self::KERNEL_STACK;
        CoreStacks {
            kernel_top,
            double_fault_top: kernel_top + Self::IST_STACK,
            nmi_top: kernel_top + 2 * Self::IST_STACK,
        }
    }
}

const _: () = assert!(core::mem::size_of::<Kcb>() as u64 <= CoreMemory::KCB_SPACE);
// The `syscall` entry (arch/x86_64/user.rs) reads these fields at fixed GS offsets.
const _: () = assert!(core::mem::offset_of!(Kcb, user_rsp_scratch) == 8);
const _: () = assert!(core::mem::offset_of!(Kcb, kernel_rsp) == 16);
const _: () = assert!(
    CoreMemory::KCB_SPACE + CoreMemory::KERNEL_STACK + 2 * CoreMemory::IST_STACK
        <= CoreMemory::SIZE
);

/// Directory of all KCBs, by core id.
static KCBS: [AtomicPtr<Kcb>; MAX_CORES] =
    [const { AtomicPtr::new(core::ptr::null_mut()) }; MAX_CORES];

/// Placeholder GS target before the boot core has a KCB: its first word is null, which
/// [`try_current`] reads as "no KCB yet".
static NO_KCB: [u64; 2] = [0, 0];

/// Points GS at the "no KCB yet" placeholder. Called first thing on the boot core.
pub fn init_early() {
    // SAFETY: NO_KCB is a static whose first word is null, which `try_current` understands.
    unsafe { crate::arch::cpu::set_gs_base(NO_KCB.as_ptr() as u64) };
}

impl Kcb {
    /// Writes a new KCB for `core_id` at `base` (the start of a [`CoreMemory`] region) and
    /// registers it in the directory.
    ///
    /// # Safety
    /// `base` must be the direct-map address of an unused [`CoreMemory::SIZE`]-byte region that
    /// stays allocated for as long as the KCB is in use.
    pub unsafe fn create(base: u64, core_id: usize, node_id: usize, apic_id: u32) -> &'static Kcb {
        let ptr = base as *mut Kcb;
        let kcb = Kcb {
            self_ptr: ptr,
            user_rsp_scratch: AtomicU64::new(0),
            kernel_rsp: AtomicU64::new(0),
            magic: KCB_MAGIC,
            layout_version: KCB_LAYOUT_VERSION,
            core_id,
            node_id,
            apic_id,
            state: AtomicU8::new(CoreState::Created as u8),
            tsc_offset: AtomicI64::new(0),
            shutdown_ns: AtomicU64::new(0),
            own_tsc_offset: AtomicI64::new(0),
            image: AtomicUsize::new(0),
            parked_on: AtomicUsize::new(NO_CORE),
            guests: AtomicUsize::new(0),
            starts: AtomicU64::new(0),
            tcache: IrqMutex::new(TCache::new(node_id)),
            heap_override: AtomicUsize::new(usize::MAX),
            sched: CoreScheduler::new(),
            interrupt_bindings: IrqMutex::new(InterruptBindings::default()),
            ipi: IpiMailbox::default(),
            timer_ticks: AtomicU64::new(0),
            cpu_ticks: [AtomicU64::new(0), AtomicU64::new(0), AtomicU64::new(0)],
            syscalls: SyscallStats::new(),
            stacks: CoreMemory::stacks(base),
            steal: StealTime::new(),
            tables: UnsafeCell::new(CpuTables::new()),
            names: IrqMutex::new(msg::names::NameCache::new()),
            fleet_owner: AtomicU32::new(0),
        };
        // SAFETY: per the caller, the region is unused, writable and large enough (checked at
        // compile time above); 2 MiB frames are aligned far beyond the KCB's alignment.
        unsafe { ptr.write(kcb) };
        KCBS[core_id].store(ptr, Ordering::Release);
        // SAFETY: just initialized; lives as long as the region, which the caller keeps.
        unsafe { &*ptr }
    }

    /// Whether this KCB has the layout this kernel image was built with.
    pub fn check_layout(&self) -> Result<(), (u64, u32)> {
        if self.magic == KCB_MAGIC && self.layout_version == KCB_LAYOUT_VERSION {
            Ok(())
        } else {
            Err((self.magic, self.layout_version))
        }
    }

    /// Makes this KCB the current core's: GS base, GDT/TSS. A host also adopts the KCB parked
    /// on it for each of its turns, and its own KCB again after it.
    ///
    /// # Safety
    /// Must be called on the core that will run this KCB, and no other core may run it.
    pub unsafe fn adopt(&'static self) {
        // SAFETY: the KCB's first word is its own address (set by `create`), as `set_gs_base`
        // requires, and it lives for the rest of the kernel's life.
        unsafe { crate::arch::cpu::set_gs_base(self as *const Kcb as u64) };
        // SAFETY: only this core touches `tables` (caller's contract); they live in the KCB and
        // do not move; the stacks are inside this core's CoreMemory region.
        unsafe {
            (*self.tables.get()).load(
                self.stacks.kernel_top,
                self.stacks.double_fault_top,
                self.stacks.nmi_top,
            )
        };
    }

    /// Makes `top` the kernel stack that entries from user mode use on this core (TSS RSP0 and
    /// the `syscall` entry's stack).
    ///
    /// # Panics
    /// If called on a core that does not run this KCB.
    pub fn set_kernel_stack(&self, top: u64) {
        assert!(
            core::ptr::eq(self, current()),
            "kernel stack set on a foreign KCB"
        );
        self.kernel_rsp.store(top, Ordering::Relaxed);
        // SAFETY: `tables` is only touched by the core running this KCB, checked above, and
        // interrupts cannot observe a torn RSP0 because it is a single aligned store.
        unsafe { (*self.tables.get()).set_rsp0(top) };
    }

    /// The node whose kernel heap serves this core's allocations: its own, or the node of the
    /// replica it is applying operations to ([`Kcb::with_heap_node`]).
    pub fn heap_node(&self) -> usize {
        match self.heap_override.load(Ordering::Relaxed) {
            usize::MAX => self.node_id,
            node => node,
        }
    }

    /// Runs `f` with this core's heap allocations served by `node`'s heap (NrOS §4.1: a
    /// replica grows on its own node, whichever core applies its operations). Only the core
    /// running this KCB calls it.
    pub fn with_heap_node<R>(&self, node: usize, f: impl FnOnce() -> R) -> R {
        let before = self.heap_override.swap(node, Ordering::Relaxed);
        let r = f();
        self.heap_override.store(before, Ordering::Relaxed);
        r
    }

    /// Current lifecycle state.
    pub fn state(&self) -> CoreState {
        CoreState::from_u8(self.state.load(Ordering::Acquire))
    }

    /// Whether the KCB runs and answers IPIs: online, stopping (it still runs until its next
    /// scheduling point), or parked (its host runs it and answers for it).
    pub fn runs_kernel(&self) -> bool {
        matches!(
            self.state(),
            CoreState::Online | CoreState::Stopping | CoreState::Parked
        )
    }

    /// The host this KCB is parked on (or being parked on, or given back by), if any.
    pub fn host(&self) -> Option<&'static Kcb> {
        get(self.parked_on.load(Ordering::Acquire))
    }

    /// The KCBs that name this core as their host (parked here, or claimed for parking here
    /// and not taken yet, or being given back), in core order.
    pub fn claimed(&self) -> impl Iterator<Item = &'static Kcb> + '_ {
        let any = self.guests.load(Ordering::Acquire) != 0;
        (0..if any { MAX_CORES } else { 0 })
            .filter_map(get)
            .filter(|g| g.parked_on.load(Ordering::Acquire) == self.core_id)
    }

    /// The KCBs parked on this core, once it has taken them (they read `Parked`), in core
    /// order.
    pub fn hosted(&self) -> impl Iterator<Item = &'static Kcb> + '_ {
        self.claimed().filter(|g| g.state() == CoreState::Parked)
    }

    /// The KCB of the core that runs this one: its host while parked, else itself.
    pub fn runner(&self) -> &Kcb {
        match self.host() {
            Some(h) => h,
            None => self,
        }
    }

    /// The other KCBs that the core running this one takes turns with: its host and the host's
    /// other guests while this one is parked, the KCBs parked here while this core hosts some.
    pub fn turn_mates(&'static self) -> impl Iterator<Item = &'static Kcb> {
        let runner: &'static Kcb = self.host().unwrap_or(self);
        core::iter::once(runner)
            .chain(runner.hosted())
            .filter(move |k| !core::ptr::eq(*k, self))
    }

    /// Where IPIs to this KCB go (Barrelfish/DC §4.8's indirection from KCB to APIC id): the
    /// APIC id of the core that runs it.
    pub fn ipi_apic_id(&self) -> u32 {
        self.runner().apic_id
    }

    /// Sets the lifecycle state.
    pub fn set_state(&self, state: CoreState) {
        self.state.store(state as u8, Ordering::Release);
    }
}

/// The KCB of the current core, if it has one yet.
pub fn try_current() -> Option<&'static Kcb> {
    // SAFETY: GS always points at a KCB or at NO_KCB (set first thing on every core), both at
    // least 8 bytes long.
    let ptr = unsafe { crate::arch::cpu::read_gs_u64(0) } as *const Kcb;
    // SAFETY: a non-null first word is the address of a live KCB (see `Kcb::create`).
    (!ptr.is_null()).then(|| unsafe { &*ptr })
}

/// The KCB of the current core. Panics before the boot core has created its KCB.
pub fn current() -> &'static Kcb {
    try_current().expect("per-core state used before this core's KCB exists")
}

/// Ids of the cores that are online, in order.
pub fn online_cores() -> Vec<usize> {
    (0..MAX_CORES)
        .filter(|&c| get(c).is_some_and(|k| k.state() == CoreState::Online))
        .collect()
}

/// The KCB of `core_id`, if one was created ([`NO_CORE`] and other ids past the last core give
/// `None`).
pub fn get(core_id: usize) -> Option<&'static Kcb> {
    let ptr = KCBS.get(core_id)?.load(Ordering::Acquire);
    // SAFETY: non-null directory entries point at live KCBs (`Kcb::create`).
    (!ptr.is_null()).then(|| unsafe { &*ptr })
}
