//! Symbols that the compiler and the prebuilt `core` library expect from a C runtime.
//!
//! The kernel is built for the host target, whose `core` calls `memcpy` and friends from libc;
//! Reef has no libc, so it defines them here. They use string instructions (or volatile reads),
//! so the compiler cannot turn their bodies back into calls to themselves.

use core::arch::asm;

/// Copies `n` bytes from `src` to `dest` (non-overlapping): 8 bytes at a time, then the rest
/// (QEMU's TCG emulates a string instruction one element per step, so `movsq` is 8 times
/// fewer steps than `movsb`; on hardware both are fast).
///
/// # Safety
/// The usual `memcpy` contract: both ranges valid for `n` bytes and not overlapping.
#[no_mangle]
pub unsafe extern "C" fn memcpy(dest: *mut u8, src: *const u8, n: usize) -> *mut u8 {
    // SAFETY: per the caller's contract; the direction flag is clear in kernel code. The
    // quadword copy moves n & !7 bytes and leaves rdi/rsi after them for the byte copy.
    unsafe {
        asm!("rep movsq", "mov rcx, {rest}", "rep movsb",
             rest = in(reg) n & 7,
             inout("rcx") n / 8 => _, inout("rdi") dest => _, inout("rsi") src => _,
             options(nostack, preserves_flags))
    };
    dest
}

/// Copies `n` bytes from `src` to `dest`; the ranges may overlap.
///
/// # Safety
/// Both ranges valid for `n` bytes.
#[no_mangle]
pub unsafe extern "C" fn memmove(dest: *mut u8, src: *const u8, n: usize) -> *mut u8 {
    if (dest as usize) <= (src as usize) || (dest as usize) >= (src as usize).wrapping_add(n) {
        // SAFETY: a forward copy is correct when dest is below src or the ranges are disjoint.
        unsafe { memcpy(dest, src, n) }
    } else {
        // SAFETY: copying backwards (direction flag set, restored before returning) handles the
        // overlap with dest above src; both ranges are valid per the caller.
        unsafe {
            asm!("std", "rep movsb", "cld",
                 inout("rcx") n => _,
                 inout("rdi") dest.add(n - 1) => _,
                 inout("rsi") src.add(n - 1) => _,
                 options(nostack))
        };
        dest
    }
}

/// Fills `n` bytes at `dest` with `c`, 8 bytes at a time, then the rest (see [`memcpy`]).
///
/// # Safety
/// `dest` valid for `n` bytes.
#[no_mangle]
pub unsafe extern "C" fn memset(dest: *mut u8, c: i32, n: usize) -> *mut u8 {
    let pattern = u64::from(c as u8) * 0x0101_0101_0101_0101;
    // SAFETY: per the caller's contract; `stosq` stores n & !7 bytes of the repeated byte and
    // leaves rdi after them for `stosb`, which stores the low byte of the same pattern.
    unsafe {
        asm!("rep stosq", "mov rcx, {rest}", "rep stosb",
             rest = in(reg) n & 7,
             inout("rcx") n / 8 => _, inout("rdi") dest => _, in("rax") pattern,
             options(nostack, preserves_flags))
    };
    dest
}

/// Compares `n` bytes.
///
/// # Safety
/// Both ranges valid for `n` bytes.
#[no_mangle]
pub unsafe extern "C" fn memcmp(a: *const u8, b: *const u8, n: usize) -> i32 {
    for i in 0..n {
        // SAFETY: i < n and both ranges are valid for n bytes; volatile keeps this a loop.
        let (x, y) = unsafe { (a.add(i).read_volatile(), b.add(i).read_volatile()) };
        if x != y {
            return x as i32 - y as i32;
        }
    }
    0
}

/// Compares `n` bytes for equality (zero when equal).
///
/// # Safety
/// Both ranges valid for `n` bytes.
#[no_mangle]
pub unsafe extern "C" fn bcmp(a: *const u8, b: *const u8, n: usize) -> i32 {
    // SAFETY: same contract.
    unsafe { memcmp(a, b, n) }
}

/// Length of a NUL-terminated string.
///
/// # Safety
/// `s` must point to a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn strlen(s: *const u8) -> usize {
    let mut n = 0;
    // SAFETY: the string is NUL-terminated, so every byte up to the NUL is readable.
    while unsafe { s.add(n).read_volatile() } != 0 {
        n += 1;
    }
    n
}

/// Referenced by the prebuilt `core` for unwinding; Reef aborts on panic, so it is never called.
#[no_mangle]
pub extern "C" fn rust_eh_personality() {}

/// Referenced by the prebuilt `core` for unwinding; never called with `panic = "abort"`.
#[no_mangle]
pub extern "C" fn _Unwind_Resume() -> ! {
    crate::arch::cpu::halt_forever()
}
