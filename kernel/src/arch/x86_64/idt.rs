//! Interrupt descriptor table, interrupt entry stubs and CPU exception reports.
//!
//! All 256 vectors have a stub of 16 bytes (`interrupt_stubs + 16 * vector`) that pushes a dummy
//! error code where the CPU pushes none, pushes the vector number and jumps to a common path. The
//! common path saves the general-purpose registers and the FPU/SSE state (kernel code uses SSE
//! registers, so an interrupted context's must survive the handler), and calls
//! [`interrupt_dispatch`] with the [`InterruptFrame`]. The exit path (`interrupt_exit`) is shared
//! with the `syscall` entry and new threads (see `user.rs`); from user mode, the entry swaps GS to
//! the KCB and clears AC (so SMAP holds even if the user set it). The `syscall` entry builds the
//! same hardware part of the frame and joins at `syscall_save`, which saves only XMM0-15.

use super::gdt::{IST_DOUBLE_FAULT, IST_NMI, KERNEL_CS};
use core::arch::global_asm;

/// The NMI's vector.
const NMI_VECTOR: u64 = 2;

global_asm!(
    r#"
    .macro reef_push_gprs
    push %rax
    push %rbx
    push %rcx
    push %rdx
    push %rsi
    push %rdi
    push %rbp
    push %r8
    push %r9
    push %r10
    push %r11
    push %r12
    push %r13
    push %r14
    push %r15
    .endm
    .macro reef_pop_gprs
    pop %r15
    pop %r14
    pop %r13
    pop %r12
    pop %r11
    pop %r10
    pop %r9
    pop %r8
    pop %rbp
    pop %rdi
    pop %rsi
    pop %rdx
    pop %rcx
    pop %rbx
    pop %rax
    .endm

    .section .text.interrupts, "ax"
    .balign 16
    .global interrupt_stubs
interrupt_stubs:
    .set vector, 0
    .rept 256
    .balign 16
    .if (vector == 8) | (vector == 10) | (vector == 11) | (vector == 12) | (vector == 13) | (vector == 14) | (vector == 17) | (vector == 21) | (vector == 29) | (vector == 30)
    .else
    pushq $0
    .endif
    pushq $vector
    jmp interrupt_common
    .set vector, vector + 1
    .endr

interrupt_common:
    testb $3, 24(%rsp)
    jz 1f
    swapgs
    cmpb $0, SMAP_ENABLED(%rip)
    je 1f
    clac
1:
interrupt_save:
    reef_push_gprs
    sub $512, %rsp
    fxsave64 (%rsp)
    movq $0, {xmm_only}(%rsp)
    jmp dispatch_and_exit

    // The `syscall` entry (user.rs) joins here once it pushed the hardware part of the frame:
    // it saves only XMM0-15 of the FPU state and marks the area so (see `user::complete_fpu`).
    .global syscall_save
syscall_save:
    reef_push_gprs
    sub $512, %rsp
    .irp n, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15
    movdqu %xmm\n, 160 + 16 * \n(%rsp)
    .endr
    movq $1, {xmm_only}(%rsp)
dispatch_and_exit:
    lea 512(%rsp), %rdi
    cld
    call interrupt_dispatch
    test %al, %al
    jnz syscall_return
    .global interrupt_exit
interrupt_exit:
    cli
    call restore_fpu_area
    add $512, %rsp
    reef_pop_gprs
    testb $3, 24(%rsp)
    jz 2f
    swapgs
2:  add $16, %rsp
    iretq

    // The return of a system call whose frame `sysret_ready` prepared: RCX and R11 hold the
    // user RIP and RFLAGS, so `sysretq` restores everything `iretq` would (CS and SS are
    // STAR's user selectors), without `iretq`'s stack loads and checks.
syscall_return:
    cli
    call restore_fpu_area
    add $512, %rsp
    reef_pop_gprs
    swapgs
    mov 40(%rsp), %rsp
    sysretq

    // Restores the FPU area at the caller's stack pointer (8 above ours): all of it, or only
    // XMM0-15 when a `syscall` entry saved only those (the rest is still in the CPU).
restore_fpu_area:
    cmpq $0, {xmm_only}+8(%rsp)
    jne 5f
    fxrstor64 8(%rsp)
    ret
5:
    .irp n, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15
    movdqu 168 + 16 * \n(%rsp), %xmm\n
    .endr
    ret
"#,
    xmm_only = const super::user::XMM_ONLY,
    options(att_syntax)
);

extern "C" {
    static interrupt_stubs: u8;
}

/// The registers saved on interrupt entry, in stack order.
#[repr(C)]
#[derive(Clone, Debug)]
pub struct InterruptFrame {
    /// Saved R15.
    pub r15: u64,
    /// Saved R14.
    pub r14: u64,
    /// Saved R13.
    pub r13: u64,
    /// Saved R12.
    pub r12: u64,
    /// Saved R11.
    pub r11: u64,
    /// Saved R10.
    pub r10: u64,
    /// Saved R9.
    pub r9: u64,
    /// Saved R8.
    pub r8: u64,
    /// Saved RBP.
    pub rbp: u64,
    /// Saved RDI.
    pub rdi: u64,
    /// Saved RSI.
    pub rsi: u64,
    /// Saved RDX.
    pub rdx: u64,
    /// Saved RCX.
    pub rcx: u64,
    /// Saved RBX.
    pub rbx: u64,
    /// Saved RAX.
    pub rax: u64,
    /// Vector number (pushed by the stub).
    pub vector: u64,
    /// Error code (pushed by the CPU, or 0).
    pub error_code: u64,
    /// Instruction pointer to return to.
    pub rip: u64,
    /// Code segment selector to return to.
    pub cs: u64,
    /// RFLAGS to restore.
    pub rflags: u64,
    /// Stack pointer to return to.
    pub rsp: u64,
    /// Stack segment selector to return to.
    pub ss: u64,
}

/// The interrupt descriptor table: one 16-byte gate descriptor per vector.
#[repr(C, align(16))]
struct Idt([u128; 256]);

/// The IDT the cores running this kernel image load, filled on first use ([`load`]). Each
/// image has its own (the section's `.data.image.` prefix keeps a variant image from sharing
/// the boot image's, `xtask/src/variant.rs`): its gates hold this image's handlers.
#[link_section = ".data.image.idt"]
static IDT: spin::Once<Idt> = spin::Once::new();

/// A 64-bit interrupt gate descriptor for `handler`: present, DPL 0, kernel code segment, and
/// IST slot `ist` (0: no stack switch).
fn gate(handler: u64, ist: u8) -> u128 {
    let low = (handler & 0xffff)
        | ((KERNEL_CS as u64) << 16)
        | ((ist as u64 & 7) << 32)
        | (0x8e << 40) // present, DPL 0, 64-bit interrupt gate
        | (((handler >> 16) & 0xffff) << 48);
    let high = handler >> 32;
    (low as u128) | ((high as u128) << 64)
}

/// This image's IDT: every vector's gate points to its stub in `interrupt_stubs`.
fn table() -> Idt {
    let stubs = &raw const interrupt_stubs as u64;
    let mut table = [0u128; 256];
    for (vector, entry) in table.iter_mut().enumerate() {
        let ist = match vector {
            8 => IST_DOUBLE_FAULT,
            2 | 18 => IST_NMI,
            _ => 0,
        };
        *entry = gate(stubs + 16 * vector as u64, ist);
    }
    Idt(table)
}

/// Loads this image's IDT on this core (filling it first if no core has).
pub fn load() {
    let ptr = super::gdt::DescriptorPointer {
        limit: (core::mem::size_of::<Idt>() - 1) as u16,
        base: IDT.call_once(table) as *const Idt as u64,
    };
    // SAFETY: the IDT is filled once, before any core loads it, and never modified afterwards.
    unsafe { core::arch::asm!("lidt [{}]", in(reg) &ptr, options(readonly, nostack)) };
}

/// Name of a CPU exception vector.
pub fn exception_name(vector: u64) -> &'static str {
    match vector {
        0 => "#DE divide error",
        1 => "#DB debug",
        2 => "NMI",
        3 => "#BP breakpoint",
        4 => "#OF overflow",
        5 => "#BR bound range exceeded",
        6 => "#UD invalid opcode",
        7 => "#NM device not available",
        8 => "#DF double fault",
        10 => "#TS invalid TSS",
        11 => "#NP segment not present",
        12 => "#SS stack-segment fault",
        13 => "#GP general protection fault",
        14 => "#PF page fault",
        16 => "#MF x87 floating-point error",
        17 => "#AC alignment check",
        18 => "#MC machine check",
        19 => "#XM SIMD floating-point exception",
        20 => "#VE virtualization exception",
        21 => "#CP control protection",
        _ => "reserved exception",
    }
}

/// Called by the entry stub for every interrupt and exception.
#[no_mangle]
extern "C" fn interrupt_dispatch(frame: &mut InterruptFrame) -> bool {
    if frame.vector == NMI_VECTOR {
        // On its own stack (IST), interrupting anything: back the way it came, never switching
        // threads or delivering signals on a return to user mode.
        crate::irq::nmi();
        return false;
    }
    if frame.vector == super::user::SYSCALL_VECTOR {
        crate::syscall::dispatch(frame);
    } else if frame.vector < 32 {
        crate::irq::exception(frame);
    } else {
        crate::irq::interrupt(frame);
    }
    if frame.cs & 3 == 3 {
        crate::proc::return_to_user(frame);
        return super::user::sysret_ready(frame);
    }
    false
}
