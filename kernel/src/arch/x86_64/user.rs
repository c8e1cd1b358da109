//! User mode: the `syscall` entry, the first entry of a new thread, kernel-stack switching, the
//! copy routine for user memory, and SMEP/SMAP.
//!
//! Every entry from user mode (`syscall`, interrupt, exception) leaves one [`InterruptFrame`] at
//! the top of the thread's kernel stack, with the user's FPU/SSE state saved just below it (512
//! bytes in `fxsave64` layout; a `syscall` saves only XMM0-15 there and marks it so, see
//! [`complete_fpu`]), and every return to user mode leaves through `interrupt_exit` or
//! `syscall_return` (in `idt.rs`), which restore both. So a thread's user state is always at the same place: the
//! scheduler, `fork`, signal delivery and `rt_sigreturn` edit it there ([`user_frame`]).
//!
//! `syscall` clears IF, DF, TF and AC (SFMASK), swaps GS to the KCB, saves the user stack pointer
//! in the KCB (`gs:8`) and loads the thread's kernel stack top (`gs:16`), pushes what an
//! interrupt would push (vector [`SYSCALL_VECTOR`], the syscall number in the error-code slot so
//! that a restarted syscall can be re-issued) and the registers, saves XMM0-15, and calls the
//! interrupt dispatcher, which hands the frame to `crate::syscall::dispatch`. (`fxsave64` and
//! `fxrstor64` on every call were two thirds of a null system call's time under TCG.)
//! Returning uses the common exit path, which restores every register: `sysretq` when the
//! frame is still that of a `syscall` ([`sysret_ready`]), `iretq` otherwise (interrupts,
//! exceptions, and frames that `rt_sigreturn`, `execve` or signal delivery rewrote).

use super::cpu;
use super::gdt::KERNEL_CS;
use super::idt::InterruptFrame;
use core::arch::global_asm;
use core::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// User code segment selector (64-bit, RPL 3).
pub const USER_CS: u64 = 0x2b;
/// User data/stack segment selector (RPL 3).
pub const USER_SS: u64 = 0x23;
/// Vector number recorded in the frame of a `syscall` entry.
pub const SYSCALL_VECTOR: u64 = 0x100;
/// Size of the FPU/SSE save area below the frame.
pub const FPU_AREA: usize = 512;
/// Offset in the FPU area of the word that says it holds only XMM0-15 (in `fxsave`'s
/// software-available bytes, 464..512, which `fxsave`/`fxrstor` leave alone).
pub const XMM_ONLY: usize = 464;
/// Bytes an entry from user mode uses at the top of a kernel stack: frame plus FPU area.
pub const ENTRY_BYTES: usize = core::mem::size_of::<InterruptFrame>() + FPU_AREA;
/// First address above the user half.
pub const USER_END: u64 = 0x0000_8000_0000_0000;

/// Whether SMAP is on (the copy routines then use `stac`/`clac`).
#[no_mangle]
static SMAP_ENABLED: AtomicBool = AtomicBool::new(false);

global_asm!(
    r#"
    .section .text.user, "ax"
    .global syscall_entry
syscall_entry:
    swapgs
    mov %rsp, %gs:8
    mov %gs:16, %rsp
    pushq ${user_ss}
    pushq %gs:8
    push %r11
    pushq ${user_cs}
    push %rcx
    push %rax
    pushq ${syscall_vector}
    jmp syscall_save

    .global switch_stacks
switch_stacks:
    push %rbp
    push %rbx
    push %r12
    push %r13
    push %r14
    push %r15
    mov %rsp, (%rdi)
    mov %rsi, %rsp
    pop %r15
    pop %r14
    pop %r13
    pop %r12
    pop %rbx
    pop %rbp
    ret

    .global thread_start
thread_start:
    lea 512(%rsp), %rdi
    call thread_first_run
    jmp interrupt_exit

    .global user_copy
user_copy:
    cmpb $0, SMAP_ENABLED(%rip)
    je 1f
    stac
1:  mov %rdx, %rcx
    shr $3, %rcx
    .global user_copy_start
user_copy_start:
    rep movsq
    mov %rdx, %rcx
    and $7, %rcx
    rep movsb
    .global user_copy_end
user_copy_end:
    cmpb $0, SMAP_ENABLED(%rip)
    je 2f
    clac
2:  xor %eax, %eax
    ret
    .global user_copy_fixup
user_copy_fixup:
    cmpb $0, SMAP_ENABLED(%rip)
    je 3f
    clac
3:  mov $1, %eax
    ret
"#,
    user_ss = const USER_SS,
    user_cs = const USER_CS,
    syscall_vector = const SYSCALL_VECTOR,
    options(att_syntax)
);

extern "C" {
    fn syscall_entry();
    fn switch_stacks(save_rsp: *mut u64, next_rsp: u64);
    fn thread_start();
    fn user_copy(dst: *mut u8, src: *const u8, len: usize) -> u64;
    static user_copy_start: u8;
    static user_copy_end: u8;
    static user_copy_fixup: u8;
}

/// IA32_EFER MSR (extended feature enables).
const IA32_EFER: u32 = 0xC000_0080;
/// IA32_STAR MSR: the segment selectors `syscall` and `sysret` load.
const IA32_STAR: u32 = 0xC000_0081;
/// IA32_LSTAR MSR: the RIP `syscall` jumps to in 64-bit mode.
const IA32_LSTAR: u32 = 0xC000_0082;
/// IA32_FMASK MSR: the RFLAGS bits `syscall` clears.
const IA32_FMASK: u32 = 0xC000_0084;
/// IA32_FS_BASE MSR: the base address of FS.
const IA32_FS_BASE: u32 = 0xC000_0100;
/// IA32_EFER.SCE (bit 0): enables `syscall` and `sysret`.
const EFER_SCE: u64 = 1;
/// RFLAGS bits `syscall` clears: TF, IF, DF, AC.
const SYSCALL_MASK: u64 = (1 << 8) | (1 << 9) | (1 << 10) | (1 << 18);
/// CR4.SMEP (bit 20): supervisor-mode execution prevention.
const CR4_SMEP: u64 = 1 << 20;
/// CR4.SMAP (bit 21): supervisor-mode access prevention.
const CR4_SMAP: u64 = 1 << 21;

/// Enables `syscall` (entering this kernel image) and SMEP/SMAP (where the CPU has them) on
/// this core, and records this image's user copy routine.
pub fn init_core() {
    register_copy_routine();
    let (_, ebx, _, _) = cpu::cpuid(7, 0);
    let mut cr4 = cpu::read_cr4();
    if ebx & (1 << 7) != 0 {
        cr4 |= CR4_SMEP;
    }
    if ebx & (1 << 20) != 0 {
        cr4 |= CR4_SMAP;
        SMAP_ENABLED.store(true, Ordering::Relaxed);
    }
    // SAFETY: SMEP and SMAP only forbid the kernel to run user code and to touch user memory
    // outside `user_copy` (which sets AC); the kernel does neither. The syscall MSRs exist on
    // every x86-64 CPU; STAR's selectors match the GDT layout in `gdt.rs` (kernel CS, then SS =
    // CS + 8; user base 0x18 so that SYSRET would use 0x20 for SS and 0x28 for CS) and LSTAR is
    // the entry stub above, which switches to the kernel stack before touching memory.
    unsafe {
        cpu::write_cr4(cr4);
        cpu::wrmsr(IA32_EFER, cpu::rdmsr(IA32_EFER) | EFER_SCE);
        cpu::wrmsr(IA32_STAR, ((KERNEL_CS as u64) << 32) | (0x1b << 48));
        cpu::wrmsr(IA32_LSTAR, syscall_entry as *const () as u64);
        cpu::wrmsr(IA32_FMASK, SYSCALL_MASK);
    }
}

/// Whether SMEP and SMAP are on (for the boot report).
pub fn protection() -> (bool, bool) {
    let cr4 = cpu::read_cr4();
    (cr4 & CR4_SMEP != 0, cr4 & CR4_SMAP != 0)
}

/// Whether `addr` is canonical (bits 63..47 all equal).
pub fn canonical(addr: u64) -> bool {
    matches!((addr as i64) >> 47, 0 | -1)
}

/// Whether a return to user mode can load `frame` without faulting in the kernel: its
/// instruction and stack pointers are canonical (selectors and flags are always the kernel's).
pub fn returnable(frame: &InterruptFrame) -> bool {
    canonical(frame.rip) && canonical(frame.rsp)
}

/// Whether the return to user mode in `frame` may use `sysretq` (the caller then does), and if
/// so prepares RCX and R11 for it. Only the return of a `syscall` whose frame still says so
/// qualifies: `syscall` itself clobbered the user's RCX and R11, so `sysretq` loses nothing;
/// a frame that `rt_sigreturn`, `execve` or an interrupted-call restart rewrote has its vector
/// cleared and leaves through `iretq`, which restores every register. The instruction pointer
/// must be canonical (Intel CPUs raise #GP in ring 0 otherwise) and the trap flag clear.
pub fn sysret_ready(frame: &mut InterruptFrame) -> bool {
    const TF: u64 = 1 << 8;
    if frame.vector != SYSCALL_VECTOR
        || frame.cs != USER_CS
        || frame.ss != USER_SS
        || frame.rflags & TF != 0
        || !canonical(frame.rip)
    {
        return false;
    }
    frame.rcx = frame.rip;
    frame.r11 = frame.rflags;
    true
}

/// Sets the user FS base (thread-local storage) of the running thread.
pub fn set_fs_base(base: u64) {
    // SAFETY: FS is not used by the kernel; the caller checked `base` is canonical (a
    // non-canonical value would #GP here).
    unsafe { cpu::wrmsr(IA32_FS_BASE, base) };
}

/// The user frame of a thread whose kernel stack ends at `stack_top`.
///
/// # Safety
/// `stack_top` must be the top of a live kernel stack of a thread that entered the kernel from
/// user mode (or was prepared by [`prepare_stack`]), and nothing else may access the frame for
/// the lifetime of the returned reference.
pub unsafe fn user_frame<'a>(stack_top: u64) -> &'a mut InterruptFrame {
    let frame =
        (stack_top as usize - core::mem::size_of::<InterruptFrame>()) as *mut InterruptFrame;
    // SAFETY: per the caller's contract, the frame lies at the top of that stack.
    unsafe { &mut *frame }
}

/// The user registers of a thread whose kernel stack ends at `stack_top`, as it entered the
/// kernel (or will return to user mode): `[rip, rsp, rax, rdi, rsi, rdx]`, for a system call
/// its number and first three arguments. Only for the thread report of a hung guest
/// (`proc::dump_threads`): the thread may be running meanwhile, and the values may then be
/// stale.
///
/// # Safety
/// `stack_top` must be the top of a kernel stack that stays allocated during the call, of a
/// thread that entered the kernel from user mode or was prepared by [`prepare_stack`].
pub unsafe fn saved_user_registers(stack_top: u64) -> [u64; 6] {
    let frame =
        (stack_top as usize - core::mem::size_of::<InterruptFrame>()) as *const InterruptFrame;
    // SAFETY: per the caller's contract the frame lies inside allocated memory, aligned (the
    // stack top is 16-byte aligned, the frame's size a multiple of 8). Its fields are plain
    // integers with no invariant, read with volatile loads: a thread running meanwhile can make
    // them stale, never invalid.
    unsafe {
        [
            core::ptr::addr_of!((*frame).rip).read_volatile(),
            core::ptr::addr_of!((*frame).rsp).read_volatile(),
            core::ptr::addr_of!((*frame).rax).read_volatile(),
            core::ptr::addr_of!((*frame).rdi).read_volatile(),
            core::ptr::addr_of!((*frame).rsi).read_volatile(),
            core::ptr::addr_of!((*frame).rdx).read_volatile(),
        ]
    }
}

/// The FPU save area of a thread whose kernel stack ends at `stack_top`.
///
/// # Safety
/// As for [`user_frame`].
pub unsafe fn fpu_area<'a>(stack_top: u64) -> &'a mut [u8; FPU_AREA] {
    let area = (stack_top as usize - ENTRY_BYTES) as *mut [u8; FPU_AREA];
    // SAFETY: per the caller's contract, the area lies just below the frame.
    unsafe { &mut *area }
}

/// Makes the FPU area of the running thread whose kernel stack ends at `stack_top` a whole
/// `fxsave` image. A `syscall` entry saves only XMM0-15, the only user FPU/SSE state kernel
/// code changes (it uses SSE registers, never x87 or MXCSR), and leaves the rest in the CPU;
/// this adds the rest (`fxsave`, then the saved XMM registers over the kernel's). It must run
/// on the thread's core before anything else could load another thread's FPU state: before
/// reading or replacing the area, and before switching to another thread.
///
/// # Safety
/// As for [`fpu_area`]; the thread must be the one running on this core.
pub unsafe fn complete_fpu(stack_top: u64) {
    // SAFETY: per the caller's contract.
    let area = unsafe { fpu_area(stack_top) };
    if area[XMM_ONLY] == 0 {
        return;
    }
    #[repr(C, align(16))]
    struct Image([u8; FPU_AREA]);
    let mut image = Image([0; FPU_AREA]);
    // SAFETY: `fxsave64` writes 512 bytes to a 16-byte aligned buffer of that size.
    unsafe {
        core::arch::asm!("fxsave64 [{}]", in(reg) image.0.as_mut_ptr(), options(nostack));
    }
    image.0[160..416].copy_from_slice(&area[160..416]);
    area[..XMM_ONLY].copy_from_slice(&image.0[..XMM_ONLY]);
    area[XMM_ONLY..XMM_ONLY + 8].fill(0);
}

/// A clean FPU/SSE state: x87 control word 0x37f, MXCSR 0x1f80 (all exceptions masked).
pub fn initial_fpu_state() -> [u8; FPU_AREA] {
    let mut area = [0u8; FPU_AREA];
    area[0..2].copy_from_slice(&0x037fu16.to_le_bytes());
    area[24..28].copy_from_slice(&0x1f80u32.to_le_bytes());
    area
}

/// Prepares a new thread's kernel stack (16-byte aligned `stack_top`) so that switching to the
/// returned stack pointer enters user mode with `frame` and `fpu`, after calling
/// `thread_first_run` on that stack. Returns the stack pointer to switch to.
///
/// # Safety
/// `stack_top` must be the top of an unused kernel stack of at least a few KiB that stays
/// allocated while the thread lives.
pub unsafe fn prepare_stack(stack_top: u64, frame: &InterruptFrame, fpu: &[u8; FPU_AREA]) -> u64 {
    debug_assert!(stack_top.is_multiple_of(16));
    // SAFETY: per the caller's contract, the stack is unused and large enough.
    unsafe {
        let f = user_frame(stack_top);
        core::ptr::copy_nonoverlapping(frame, f, 1);
        *fpu_area(stack_top) = *fpu;
        let mut sp = stack_top - ENTRY_BYTES as u64;
        sp -= 8;
        (sp as *mut u64).write(thread_start as *const () as u64);
        for _ in 0..6 {
            sp -= 8;
            (sp as *mut u64).write(0);
        }
        sp
    }
}

/// Saves the current kernel context (callee-saved registers and stack pointer) into `*save`
/// and resumes the context whose stack pointer is `next`.
///
/// # Safety
/// `next` must be a stack pointer saved by `switch_to` or returned by [`prepare_stack`], whose
/// stack is live and not in use by any core; interrupts must be disabled.
pub unsafe fn switch_to(save: *mut u64, next: u64) {
    // SAFETY: per the caller's contract.
    unsafe { switch_stacks(save, next) }
}

/// Why a user copy failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fault;

/// Copies `len` bytes between user and kernel memory. The user side must already be checked to
/// lie in the user half ([`USER_END`]); a page that is not mapped there (after demand paging)
/// makes it return [`Fault`] instead of crashing.
///
/// # Safety
/// The kernel side must be valid for `len` bytes (written or read as the direction says).
pub unsafe fn copy(dst: *mut u8, src: *const u8, len: usize) -> Result<(), Fault> {
    // SAFETY: the routine only moves bytes; faults on the user side are recovered by
    // `fixup_user_copy`, and the kernel side is valid per the caller's contract.
    match unsafe { user_copy(dst, src, len) } {
        0 => Ok(()),
        _ => Err(Fault),
    }
}

/// The most kernel images whose user copy routines [`COPY_ROUTINES`] keeps.
const MAX_IMAGES: usize = 8;

/// The user copy routine of every kernel image a core has run (`start`, `end`, `fixup`; 0:
/// free), filled by [`init_core`]. A thread that blocked in one image's code may resume on a
/// core that runs another (Barrelfish/DC §4.5's `update`), whose fault handler must still
/// recognise a fault in the first image's routine.
static COPY_ROUTINES: [[AtomicU64; 3]; MAX_IMAGES] =
    [const { [AtomicU64::new(0), AtomicU64::new(0), AtomicU64::new(0)] }; MAX_IMAGES];

/// Records this image's user copy routine in [`COPY_ROUTINES`] (once per image).
fn register_copy_routine() {
    let start = &raw const user_copy_start as u64;
    let end = &raw const user_copy_end as u64;
    let fixup = &raw const user_copy_fixup as u64;
    for slot in &COPY_ROUTINES {
        match slot[0].compare_exchange(0, start, Ordering::AcqRel, Ordering::Acquire) {
            Ok(_) => {
                slot[2].store(fixup, Ordering::Release);
                slot[1].store(end, Ordering::Release);
                return;
            }
            Err(s) if s == start => return,
            Err(_) => {}
        }
    }
    // The kernel loads at most `image::MAX_IMAGES` (< MAX_IMAGES) images.
    unreachable!("more kernel images than user copy slots");
}

/// The failure exit of the user copy routine that `rip` lies in, if any.
fn copy_fixup(rip: u64) -> Option<u64> {
    COPY_ROUTINES.iter().find_map(|slot| {
        let (start, end) = (
            slot[0].load(Ordering::Acquire),
            slot[1].load(Ordering::Acquire),
        );
        (start != 0 && (start..end).contains(&rip)).then(|| slot[2].load(Ordering::Acquire))
    })
}

/// Redirects a fault inside a user copy routine to the routine's failure exit.
pub fn fixup_user_copy(frame: &mut InterruptFrame) {
    debug_assert!(in_user_copy(frame));
    if let Some(fixup) = copy_fixup(frame.rip) {
        frame.rip = fixup;
    }
}

/// Whether a page fault at `frame.rip` came from the user copy routine (of any kernel image).
pub fn in_user_copy(frame: &InterruptFrame) -> bool {
    copy_fixup(frame.rip).is_some()
}
