//! Thin wrappers around privileged x86-64 instructions.
//!
//! Every function here is a single instruction (or a fixed short sequence). They are `unsafe` only
//! where the instruction can break memory safety (control registers, MSRs, port I/O to arbitrary
//! devices); each caller documents why its use is sound.

use core::arch::asm;

/// Reads the time-stamp counter.
#[inline(always)]
pub fn rdtsc() -> u64 {
    // SAFETY: RDTSC reads a counter; CR4.TSD is never set, so it cannot fault.
    unsafe { core::arch::x86_64::_rdtsc() }
}

/// Executes CPUID for `leaf`/`subleaf` and returns (eax, ebx, ecx, edx).
pub fn cpuid(leaf: u32, subleaf: u32) -> (u32, u32, u32, u32) {
    let r = core::arch::x86_64::__cpuid_count(leaf, subleaf);
    (r.eax, r.ebx, r.ecx, r.edx)
}

/// Reads a model-specific register.
///
/// # Safety
/// `msr` must exist on this CPU (reading an absent MSR raises #GP).
pub unsafe fn rdmsr(msr: u32) -> u64 {
    let (lo, hi): (u32, u32);
    // SAFETY: the caller guarantees the MSR exists.
    unsafe { asm!("rdmsr", in("ecx") msr, out("eax") lo, out("edx") hi, options(nomem, nostack)) };
    ((hi as u64) << 32) | lo as u64
}

/// Writes a model-specific register.
///
/// # Safety
/// `msr` must exist and `value` must not break invariants the kernel relies on (for example the
/// GS base holding the current KCB).
pub unsafe fn wrmsr(msr: u32, value: u64) {
    // SAFETY: the caller guarantees the write is valid and sound.
    unsafe {
        asm!("wrmsr", in("ecx") msr, in("eax") value as u32, in("edx") (value >> 32) as u32,
             options(nostack))
    };
}

/// Writes a byte to an I/O port.
///
/// # Safety
/// The port must belong to a device whose effect the caller accounts for.
pub unsafe fn outb(port: u16, value: u8) {
    // SAFETY: per the caller's contract.
    unsafe { asm!("out dx, al", in("dx") port, in("al") value, options(nomem, nostack)) };
}

/// Reads a byte from an I/O port.
///
/// # Safety
/// The port must belong to a device whose read side effects the caller accounts for.
pub unsafe fn inb(port: u16) -> u8 {
    let v: u8;
    // SAFETY: per the caller's contract.
    unsafe { asm!("in al, dx", in("dx") port, out("al") v, options(nomem, nostack)) };
    v
}

/// Writes a 16-bit word to an I/O port.
///
/// # Safety
/// As for [`outb`].
pub unsafe fn outw(port: u16, value: u16) {
    // SAFETY: per the caller's contract.
    unsafe { asm!("out dx, ax", in("dx") port, in("ax") value, options(nomem, nostack)) };
}

/// Writes a 32-bit word to an I/O port.
///
/// # Safety
/// As for [`outb`].
pub unsafe fn outl(port: u16, value: u32) {
    // SAFETY: per the caller's contract.
    unsafe { asm!("out dx, eax", in("dx") port, in("eax") value, options(nomem, nostack)) };
}

/// Reads a 32-bit word from an I/O port.
///
/// # Safety
/// As for [`inb`].
pub unsafe fn inl(port: u16) -> u32 {
    let v: u32;
    // SAFETY: per the caller's contract.
    unsafe { asm!("in eax, dx", in("dx") port, out("eax") v, options(nomem, nostack)) };
    v
}

/// Returns CR2 (the faulting address of the last page fault).
pub fn read_cr2() -> u64 {
    let v: u64;
    // SAFETY: reading CR2 has no side effects.
    unsafe { asm!("mov {}, cr2", out(reg) v, options(nomem, nostack)) };
    v
}

/// Loads CR3.
///
/// # Safety
/// `pml4_phys` must be a valid top-level page table that maps the running code, its stack and
/// every kernel object still in use, identically to the current one.
pub unsafe fn write_cr3(pml4_phys: u64) {
    // SAFETY: per the caller's contract.
    unsafe { asm!("mov cr3, {}", in(reg) pml4_phys, options(nostack)) };
}

/// Lowest address of the kernel half.
const KERNEL_HALF: u64 = 0xffff_8000_0000_0000;
/// How far above the innermost frame a [`backtrace`] follows the chain: more than a kernel
/// stack.
const BACKTRACE_SPAN: u64 = 128 * 1024;

/// The return addresses of the calling chain, innermost first, as many as fit in `out`; the
/// number found. Follows the frame-pointer chain (the kernel is built with frame pointers) and
/// stops at the first link that does not lead upwards on the same stack. For panic reports.
pub fn backtrace(out: &mut [u64]) -> usize {
    let mut rbp: u64;
    // SAFETY: reading RBP has no side effects.
    unsafe { asm!("mov {}, rbp", out(reg) rbp, options(nomem, nostack, preserves_flags)) };
    let first = rbp;
    let mut n = 0;
    while n < out.len()
        && rbp >= KERNEL_HALF
        && rbp & 7 == 0
        && rbp.wrapping_sub(first) < BACKTRACE_SPAN
    {
        // SAFETY: `rbp` is an aligned kernel-half address at most `BACKTRACE_SPAN` above this
        // function's own frame, so on the current kernel stack (a heap or static allocation,
        // mapped through the direct map or the kernel image, which extend well past any stack's
        // top); the two words are read, never written.
        let (next, ret) = unsafe {
            (
                core::ptr::read_volatile(rbp as *const u64),
                core::ptr::read_volatile((rbp + 8) as *const u64),
            )
        };
        if ret < KERNEL_HALF {
            break;
        }
        out[n] = ret;
        n += 1;
        if next <= rbp {
            break;
        }
        rbp = next;
    }
    n
}

/// Reads CR3.
pub fn read_cr3() -> u64 {
    let v: u64;
    // SAFETY: reading CR3 has no side effects.
    unsafe { asm!("mov {}, cr3", out(reg) v, options(nomem, nostack)) };
    v
}

/// Flushes this core's TLB entries that are not global (all user mappings) by reloading CR3.
pub fn flush_tlb() {
    // SAFETY: reloading the current CR3 keeps the same page tables.
    unsafe { write_cr3(read_cr3()) };
}

/// Drops this core's TLB entry for the page containing `addr`.
pub fn invlpg(addr: u64) {
    // SAFETY: invalidating a TLB entry only makes the next access walk the page tables.
    unsafe { asm!("invlpg [{}]", in(reg) addr, options(nostack)) };
}

/// Reads CR4.
pub fn read_cr4() -> u64 {
    let v: u64;
    // SAFETY: reading CR4 has no side effects.
    unsafe { asm!("mov {}, cr4", out(reg) v, options(nomem, nostack)) };
    v
}

/// Writes CR4.
///
/// # Safety
/// The new value must keep the features the kernel relies on (PAE, PGE, OSFXSR) and enable only
/// features the CPU has.
pub unsafe fn write_cr4(value: u64) {
    // SAFETY: per the caller's contract.
    unsafe { asm!("mov cr4, {}", in(reg) value, options(nostack)) };
}

/// Enables maskable interrupts.
///
/// # Safety
/// The IDT and the local APIC must be set up so that every interrupt that can arrive is handled.
pub unsafe fn enable_interrupts() {
    // SAFETY: per the caller's contract.
    unsafe { asm!("sti", options(nomem, nostack)) };
}

/// Disables maskable interrupts and returns whether they were enabled.
pub fn disable_interrupts() -> bool {
    let flags: u64;
    // SAFETY: reading RFLAGS and clearing IF cannot break memory safety.
    unsafe { asm!("pushfq", "pop {}", "cli", out(reg) flags, options(nomem)) };
    flags & (1 << 9) != 0
}

/// Whether maskable interrupts are enabled on this core.
pub fn interrupts_enabled() -> bool {
    let flags: u64;
    // SAFETY: reading RFLAGS cannot break memory safety.
    unsafe { asm!("pushfq", "pop {}", out(reg) flags, options(nomem, preserves_flags)) };
    flags & (1 << 9) != 0
}

/// Re-enables interrupts if `were_enabled` (the value returned by [`disable_interrupts`]).
pub fn restore_interrupts(were_enabled: bool) {
    if were_enabled {
        // SAFETY: interrupts were enabled before the matching `disable_interrupts`, so the
        // system was already in a state that handles them.
        unsafe { asm!("sti", options(nomem, nostack)) };
    }
}

/// Waits for the next interrupt with interrupts enabled (`sti; hlt` executes atomically, so a
/// wake-up that arrives between the two is not lost).
pub fn enable_and_halt() {
    // SAFETY: only called on cores whose IDT and local APIC are initialized.
    unsafe { asm!("sti", "hlt", options(nomem, nostack)) };
}

/// Halts forever with interrupts disabled.
pub fn halt_forever() -> ! {
    loop {
        // SAFETY: stopping the core is always memory safe.
        unsafe { asm!("cli", "hlt", options(nomem, nostack)) };
    }
}

/// Spin-loop hint.
#[inline(always)]
pub fn pause() {
    core::hint::spin_loop();
}

/// Sets the GS base (the current core's KCB pointer).
///
/// # Safety
/// `base` must point to an object whose first word is a pointer to itself and that lives as long
/// as this core runs with it (a [`crate::kcb::Kcb`] or the boot placeholder).
pub unsafe fn set_gs_base(base: u64) {
    // SAFETY: IA32_GS_BASE exists on every x86-64 CPU; the caller guarantees the value is valid.
    unsafe { wrmsr(0xC000_0101, base) };
}

/// Reads the quadword at `gs:offset`.
///
/// # Safety
/// The GS base must point to an object at least `offset + 8` bytes long.
pub unsafe fn read_gs_u64(offset: usize) -> u64 {
    let v: u64;
    // SAFETY: per the caller's contract.
    unsafe { asm!("mov {}, gs:[{}]", out(reg) v, in(reg) offset, options(readonly, nostack)) };
    v
}
