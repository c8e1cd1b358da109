//! KVM's paravirtual interface: steal time and deferred TLB flushes of preempted vCPUs.
//!
//! Under KVM a vCPU is a host thread that the host may deschedule at any moment. A TLB
//! shootdown that interrupts such a vCPU waits until the host runs it again, for a host time
//! slice when there are more vCPUs than host CPUs. KVM's steal-time area (one 64-byte record
//! per vCPU, registered with `MSR_KVM_STEAL_TIME`) carries a `preempted` byte that the host
//! sets while the vCPU is descheduled; a shootdown that finds it set adds `KVM_VCPU_FLUSH_TLB`
//! with a compare-and-swap instead of sending an interrupt, and the host flushes the vCPU's
//! TLB before it runs guest code again (Linux's `kvm_flush_tlb_multi` does the same). The
//! record also counts the time the host ran something else (steal time).
//!
//! Without KVM (TCG, bare metal) or without these features nothing is registered and every
//! shootdown interrupts its targets.

use super::{cpu, paging};
use core::sync::atomic::{AtomicU32, AtomicU64, AtomicU8, Ordering};

/// `MSR_KVM_STEAL_TIME`.
const MSR_KVM_STEAL_TIME: u32 = 0x4b56_4d03;
/// Low bit of the MSR value: the record is enabled.
const KVM_MSR_ENABLED: u64 = 1;
/// CPUID 0x4000_0001 EAX bits.
const FEATURE_STEAL_TIME: u32 = 1 << 5;
/// `KVM_FEATURE_PV_TLB_FLUSH`: the host honours `KVM_VCPU_FLUSH_TLB` in the steal-time record.
const FEATURE_PV_TLB_FLUSH: u32 = 1 << 9;
/// `preempted` bits.
const VCPU_PREEMPTED: u8 = 1;
/// `KVM_VCPU_FLUSH_TLB`: set by the guest; the host flushes the vCPU's TLB before it runs again.
const VCPU_FLUSH_TLB: u8 = 2;

/// One vCPU's steal-time record (`struct kvm_steal_time`), written by the host.
#[repr(C, align(64))]
pub struct StealTime {
    /// Nanoseconds the vCPU was runnable but not running (`steal`).
    steal: AtomicU64,
    /// Made odd by the host while it updates the record, even again afterwards (`version`).
    version: AtomicU32,
    /// Flags (`flags`); Reef does not use them.
    flags: AtomicU32,
    /// `KVM_VCPU_PREEMPTED` and `KVM_VCPU_FLUSH_TLB` bits (`preempted`).
    preempted: AtomicU8,
    /// Padding to the record's 64 bytes.
    _pad: [u8; 47],
}

const _: () = assert!(core::mem::size_of::<StealTime>() == 64);

impl StealTime {
    /// An empty record.
    pub const fn new() -> StealTime {
        StealTime {
            steal: AtomicU64::new(0),
            version: AtomicU32::new(0),
            flags: AtomicU32::new(0),
            preempted: AtomicU8::new(0),
            _pad: [0; 47],
        }
    }

    /// Nanoseconds this vCPU was runnable but not running on the host (0 without KVM).
    pub fn stolen_ns(&self) -> u64 {
        // The host makes `version` odd while it writes the record.
        loop {
            let v = self.version.load(Ordering::Acquire);
            let steal = self.steal.load(Ordering::Acquire);
            if v.is_multiple_of(2) && self.version.load(Ordering::Acquire) == v {
                return steal;
            }
            cpu::pause();
        }
    }

    /// If this vCPU is descheduled by the host, asks the host to flush its TLB before it runs
    /// again and returns true; false if it is running (or KVM does not support this), and the
    /// caller must interrupt it.
    pub fn defer_flush(&self) -> bool {
        if !pv_tlb_flush() {
            return false;
        }
        let state = self.preempted.load(Ordering::SeqCst);
        state & VCPU_PREEMPTED != 0
            && self
                .preempted
                .compare_exchange(
                    state,
                    state | VCPU_FLUSH_TLB,
                    Ordering::SeqCst,
                    Ordering::SeqCst,
                )
                .is_ok()
    }
}

impl Default for StealTime {
    fn default() -> Self {
        StealTime::new()
    }
}

/// KVM's feature bits (CPUID 0x4000_0001 EAX at KVM's base leaf), once read.
static FEATURES: spin::Once<u32> = spin::Once::new();

/// KVM's feature bits: CPUID EAX of the leaf after KVM's base leaf, or 0 if there is no
/// hypervisor or it is not KVM. Read once.
fn features() -> u32 {
    *FEATURES.call_once(|| {
        let (_, _, ecx, _) = cpu::cpuid(1, 0);
        if ecx & (1 << 31) == 0 {
            return 0;
        }
        // Hypervisors place their leaves at 0x4000_0000 + k * 0x100 (KVM moves up when it
        // also offers Hyper-V's interface).
        (0x4000_0000u32..0x4001_0000)
            .step_by(0x100)
            .find_map(|base| {
                let (max, b, c, d) = cpu::cpuid(base, 0);
                let kvm = [b, c, d] == [0x4b4d_564b, 0x564b_4d56, 0x4d];
                (kvm && max > base).then(|| cpu::cpuid(base + 1, 0).0)
            })
            .unwrap_or(0)
    })
}

/// Whether deferred TLB flushes are available (KVM with steal time and PV TLB flush).
pub fn pv_tlb_flush() -> bool {
    let f = features();
    f & FEATURE_STEAL_TIME != 0 && f & FEATURE_PV_TLB_FLUSH != 0
}

/// Registers `record` as this core's steal-time record, if KVM offers steal time. Returns
/// whether it did.
pub fn register(record: &'static StealTime) -> bool {
    if features() & FEATURE_STEAL_TIME == 0 {
        return false;
    }
    let phys = paging::virt_to_phys(record as *const StealTime as u64);
    // SAFETY: KVM advertises the MSR (checked above); the record is 64-byte aligned, lives for
    // the rest of the kernel's life (it is part of a KCB) and is only read by the kernel, so
    // the host's writes to it disturb nothing.
    unsafe { cpu::wrmsr(MSR_KVM_STEAL_TIME, phys | KVM_MSR_ENABLED) };
    true
}

/// Stops the host writing this core's steal-time record (a core that stops).
pub fn unregister() {
    if features() & FEATURE_STEAL_TIME != 0 {
        // SAFETY: KVM advertises the MSR; writing 0 disables the record.
        unsafe { cpu::wrmsr(MSR_KVM_STEAL_TIME, 0) };
    }
}
