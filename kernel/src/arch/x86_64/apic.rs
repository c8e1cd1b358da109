//! Local APIC (xAPIC, memory-mapped; QEMU's TCG offers no x2APIC) and the legacy 8259 PICs.

use super::cpu;
use super::paging::phys_to_virt;
use core::sync::atomic::{AtomicU64, Ordering};

/// Local APIC ID Register (the id is in bits 31:24).
const REG_ID: u32 = 0x20;
/// Task Priority Register (TPR).
const REG_TPR: u32 = 0x80;
/// EOI Register: a write signals the end of the current interrupt.
const REG_EOI: u32 = 0xB0;
/// Spurious Interrupt Vector Register: the spurious vector and the APIC software enable bit
/// (bit 8).
const REG_SVR: u32 = 0xF0;
/// Error Status Register (ESR).
const REG_ESR: u32 = 0x280;
/// Interrupt Command Register (ICR), bits 31:0: vector, delivery mode and delivery status;
/// writing it sends the IPI.
const REG_ICR_LOW: u32 = 0x300;
/// Interrupt Command Register (ICR), bits 63:32: the destination field (bits 63:56).
const REG_ICR_HIGH: u32 = 0x310;
/// LVT Timer Register.
const REG_LVT_TIMER: u32 = 0x320;
/// LVT LINT0 Register.
const REG_LVT_LINT0: u32 = 0x350;
/// LVT LINT1 Register.
const REG_LVT_LINT1: u32 = 0x360;
/// LVT Error Register.
const REG_LVT_ERROR: u32 = 0x370;
/// Initial Count Register of the APIC timer.
const REG_TIMER_INIT: u32 = 0x380;
/// Current Count Register of the APIC timer.
const REG_TIMER_CURRENT: u32 = 0x390;
/// Divide Configuration Register of the APIC timer.
const REG_TIMER_DIVIDE: u32 = 0x3E0;

/// Mask bit (16) of an LVT entry: the interrupt is not delivered.
const LVT_MASKED: u32 = 1 << 16;
/// Delivery mode NMI (100b, bits 10:8) of an LVT entry.
const LVT_NMI: u32 = 0b100 << 8;
/// Delivery Status bit (12) of an LVT entry: an interrupt is being sent (read only).
const LVT_DELIVERY_PENDING: u32 = 1 << 12;
/// Timer mode field of the LVT Timer Register set to periodic (bits 18:17 = 01).
const TIMER_PERIODIC: u32 = 1 << 17;
/// Delivery Status bit (12) of the ICR: the previous IPI has not been accepted yet (send
/// pending).
const ICR_DELIVERY_PENDING: u32 = 1 << 12;

/// Vector of spurious local APIC interrupts.
pub const SPURIOUS_VECTOR: u8 = 0xFF;
/// Vector of local APIC error interrupts.
pub const ERROR_VECTOR: u8 = 0xFE;

/// Physical address of the local APIC registers (from the MADT; the architectural default until
/// then).
static APIC_PHYS: AtomicU64 = AtomicU64::new(0xFEE0_0000);

/// Sets the physical address of the local APIC registers.
pub fn set_base(phys: u64) {
    APIC_PHYS.store(phys, Ordering::Relaxed);
}

/// Pointer to the local APIC register at `offset`, through the direct map.
fn reg(offset: u32) -> *mut u32 {
    phys_to_virt(APIC_PHYS.load(Ordering::Relaxed) + offset as u64) as *mut u32
}

/// Reads the local APIC register at `offset`.
fn read(offset: u32) -> u32 {
    // SAFETY: the local APIC register page is mapped by the direct map and registers are
    // 32-bit aligned; reads have no side effects on the registers used here.
    unsafe { reg(offset).read_volatile() }
}

/// Writes `value` to the local APIC register at `offset`.
fn write(offset: u32, value: u32) {
    // SAFETY: as for `read`; writes only reach this core's own local APIC.
    unsafe { reg(offset).write_volatile(value) }
}

/// Remaps the legacy PICs away from the exception vectors and masks all their lines: Reef takes
/// interrupts through the local APIC only.
pub fn disable_legacy_pic() {
    // SAFETY: 0x20/0x21/0xA0/0xA1 are the 8259 PICs of every PC; this is their standard
    // initialization sequence, followed by masking every line.
    unsafe {
        cpu::outb(0x20, 0x11);
        cpu::outb(0xA0, 0x11);
        cpu::outb(0x21, 0x20);
        cpu::outb(0xA1, 0x28);
        cpu::outb(0x21, 4);
        cpu::outb(0xA1, 2);
        cpu::outb(0x21, 1);
        cpu::outb(0xA1, 1);
        cpu::outb(0x21, 0xff);
        cpu::outb(0xA1, 0xff);
    }
}

/// Enables this core's local APIC: software-enabled, all local interrupts masked except errors,
/// task priority 0.
pub fn init_local() {
    // SAFETY: IA32_APIC_BASE exists on every CPU with an APIC (checked at boot); setting the
    // global-enable bit keeps the base address unchanged.
    unsafe {
        let base = cpu::rdmsr(0x1B);
        cpu::wrmsr(0x1B, base | (1 << 11));
    }
    write(REG_SVR, 0x100 | SPURIOUS_VECTOR as u32);
    write(REG_LVT_TIMER, LVT_MASKED);
    write(REG_LVT_LINT0, LVT_MASKED);
    // LINT1 is the NMI pin (as the firmware sets it up): QEMU's monitor command `nmi` comes
    // through it, and the NMI prints the scheduler's state (`irq::nmi`).
    write(REG_LVT_LINT1, LVT_NMI);
    write(REG_LVT_ERROR, ERROR_VECTOR as u32);
    write(REG_ESR, 0);
    write(REG_ESR, 0);
    write(REG_TPR, 0);
    eoi();
}

/// This core's local APIC id.
pub fn id() -> u32 {
    read(REG_ID) >> 24
}

/// Signals end of interrupt.
pub fn eoi() {
    write(REG_EOI, 0);
}

/// Reads and clears the error status register.
pub fn error_status() -> u32 {
    write(REG_ESR, 0);
    read(REG_ESR)
}

/// Writes the ICR with destination `apic_id` and low half `low`, which sends the IPI, and waits
/// until its delivery status is idle again.
fn send(apic_id: u32, low: u32) {
    write(REG_ICR_HIGH, apic_id << 24);
    write(REG_ICR_LOW, low);
    while read(REG_ICR_LOW) & ICR_DELIVERY_PENDING != 0 {
        cpu::pause();
    }
}

/// Sends a fixed interrupt with `vector` to the core with `apic_id`.
pub fn send_ipi(apic_id: u32, vector: u8) {
    send(apic_id, vector as u32);
}

/// Sends a fixed interrupt with `vector` to every core except this one.
pub fn broadcast_ipi(vector: u8) {
    send(0, (0b11 << 18) | vector as u32);
}

/// Sends INIT to a core: it stops and waits for a startup IPI.
pub fn send_init(apic_id: u32) {
    send(apic_id, 0x4500);
}

/// Sends a startup IPI: the core starts in real mode at physical address `page << 12`.
pub fn send_startup(apic_id: u32, page: u8) {
    send(apic_id, 0x4600 | page as u32);
}

/// Starts the timer counting down from `initial` with divisor 16, masked (used to calibrate).
pub fn timer_start_oneshot_masked(initial: u32) {
    write(REG_TIMER_DIVIDE, 0b0011);
    write(REG_LVT_TIMER, LVT_MASKED);
    write(REG_TIMER_INIT, initial);
}

/// Current count of the timer.
pub fn timer_current() -> u32 {
    read(REG_TIMER_CURRENT)
}

/// The timer's LVT entry in periodic mode with `vector`, as [`timer_start_periodic`] writes it
/// and [`timer_setting`] reads it back.
pub fn periodic_entry(vector: u8) -> u32 {
    TIMER_PERIODIC | vector as u32
}

/// Starts the periodic timer: `vector` every `initial` ticks of the bus clock divided by 16.
pub fn timer_start_periodic(vector: u8, initial: u32) {
    write(REG_TIMER_DIVIDE, 0b0011);
    write(REG_LVT_TIMER, periodic_entry(vector));
    write(REG_TIMER_INIT, initial);
}

/// The timer's LVT entry and initial count as they read now; the entry without its
/// delivery-status bit, which reads 1 while an interrupt is being sent.
pub fn timer_setting() -> (u32, u32) {
    (
        read(REG_LVT_TIMER) & !LVT_DELIVERY_PENDING,
        read(REG_TIMER_INIT),
    )
}

/// Whether the timer is set to interrupt this core: unmasked, with a count to count down.
pub fn timer_running() -> bool {
    let (entry, initial) = timer_setting();
    entry & LVT_MASKED == 0 && initial != 0
}

/// Starts the timer once: `vector` after `initial` ticks of the bus clock divided by 16 (the
/// wake-ups of a tickless core, one that runs the `reef-rt` image).
pub fn timer_start_oneshot(vector: u8, initial: u32) {
    write(REG_TIMER_DIVIDE, 0b0011);
    write(REG_LVT_TIMER, vector as u32);
    write(REG_TIMER_INIT, initial);
}

/// Stops the timer.
pub fn timer_stop() {
    write(REG_LVT_TIMER, LVT_MASKED);
    write(REG_TIMER_INIT, 0);
}
