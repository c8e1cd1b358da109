//! Random bytes for `getrandom`, `AT_RANDOM` and `/dev/urandom`.
//!
//! RDRAND where the CPU has it; otherwise a xorshift generator seeded from the TSC and mixed
//! with it on every call. Neither is meant for cryptography on this research kernel (documented
//! in docs/architecture.md).

use crate::arch::cpu;
use core::sync::atomic::{AtomicU64, Ordering};

/// State of the xorshift generator used when the CPU has no RDRAND.
static STATE: AtomicU64 = AtomicU64::new(0);

/// A value from RDRAND, or `None` if the CPU lacks it or it failed 10 times.
fn rdrand() -> Option<u64> {
    if cpu::cpuid(1, 0).2 & (1 << 30) == 0 {
        return None;
    }
    for _ in 0..10 {
        let mut v = 0u64;
        // SAFETY: RDRAND exists (CPUID.1:ECX.30) and only writes its operand.
        if unsafe { core::arch::x86_64::_rdrand64_step(&mut v) } == 1 {
            return Some(v);
        }
    }
    None
}

/// The next random word: RDRAND's, else the xorshift generator's, mixed with the TSC.
fn next() -> u64 {
    if let Some(v) = rdrand() {
        return v;
    }
    let mut x =
        STATE.load(Ordering::Relaxed) ^ cpu::rdtsc().rotate_left(17) ^ 0x9e37_79b9_7f4a_7c15;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    STATE.store(x, Ordering::Relaxed);
    x
}

/// Fills `buf` with random bytes.
pub fn fill(buf: &mut [u8]) {
    for chunk in buf.chunks_mut(8) {
        let v = next().to_le_bytes();
        chunk.copy_from_slice(&v[..chunk.len()]);
    }
}
