//! x86-64 architecture layer: boot entry, descriptor tables, interrupts, paging, local APIC,
//! serial port, power control and KVM's paravirtual interface. Almost all of Reef's `unsafe`
//! code lives here.

pub mod apic;
pub mod cpu;
pub mod gdt;
pub mod idt;
pub mod kvm;
pub mod paging;
pub mod pci;
pub mod power;
pub mod rtc;
pub mod serial;
pub mod user;

core::arch::global_asm!(include_str!("boot.S"), options(att_syntax));

extern "C" {
    static BOOT_PML4_PHYS: u64;
    static ap_trampoline_start: u8;
    static ap_trampoline_end: u8;
}

/// Physical address of the boot page tables (below 4 GiB; used by the AP trampoline).
pub fn boot_pml4_phys() -> u64 {
    // SAFETY: a read-only value written by the assembler.
    unsafe { BOOT_PML4_PHYS }
}

/// The AP trampoline image, to be copied to [`AP_TRAMPOLINE_PHYS`].
pub fn ap_trampoline() -> &'static [u8] {
    // SAFETY: both symbols delimit the trampoline code in .rodata (see boot.S).
    unsafe {
        let start = &raw const ap_trampoline_start;
        let end = &raw const ap_trampoline_end;
        core::slice::from_raw_parts(start, end as usize - start as usize)
    }
}

/// Physical address where the AP trampoline runs (startup IPI vector 0x08).
pub const AP_TRAMPOLINE_PHYS: u64 = 0x8000;
/// Offset of the trampoline's parameter block within its page.
pub const AP_PARAMS_OFFSET: u64 = 0xF00;
