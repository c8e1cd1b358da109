//! The kernel's one lock type for state shared between cores outside node replication.
//!
//! [`IrqMutex`] is a spin lock that also disables interrupts on the holding core while held, so
//! an interrupt handler that takes the same lock cannot deadlock against the code it interrupted.

use crate::arch::cpu;
use core::ops::{Deref, DerefMut};

/// How long [`IrqMutex::lock`] waits before it reports a deadlock: far beyond any holder's
/// section (microseconds; under TCG a descheduled vCPU may add milliseconds), well within a
/// test's time limit.
const DEADLOCK_SECS: u64 = 30;

/// A spin lock that disables interrupts while held.
pub struct IrqMutex<T> {
    /// The spin lock holding the value.
    inner: spin::Mutex<T>,
}

/// Guard of an [`IrqMutex`]; restores the interrupt flag when dropped.
pub struct IrqMutexGuard<'a, T> {
    /// The spin lock's guard (taken when dropped, before interrupts are restored).
    guard: Option<spin::MutexGuard<'a, T>>,
    /// Whether interrupts were enabled before the lock was taken.
    were_enabled: bool,
}

impl<T: Default> Default for IrqMutex<T> {
    fn default() -> Self {
        IrqMutex::new(T::default())
    }
}

impl<T> IrqMutex<T> {
    /// A new unlocked mutex.
    pub const fn new(value: T) -> Self {
        IrqMutex {
            inner: spin::Mutex::new(value),
        }
    }

    /// Disables interrupts and takes the lock. Waiting for it longer than [`DEADLOCK_SECS`] is
    /// a kernel bug (a holder that never lets go: a deadlock, or a guard leaked with
    /// interrupts on, see [`IrqMutexGuard::drop`]), reported with the lock's type and a
    /// backtrace rather than a machine that hangs without a word. Always inlined, as its
    /// release is: out of line, the pair cost a Hare create 29 us under TCG (docs/results.md).
    #[inline(always)]
    pub fn lock(&self) -> IrqMutexGuard<'_, T> {
        let were_enabled = cpu::disable_interrupts();
        let guard = match self.inner.try_lock() {
            Some(guard) => guard,
            None => self.wait(),
        };
        IrqMutexGuard {
            guard: Some(guard),
            were_enabled,
        }
    }

    /// Spins until the lock is free, or panics after [`DEADLOCK_SECS`] (the TSC measures, once
    /// calibrated; before that, early in boot, one core runs and nothing waits).
    #[cold]
    fn wait(&self) -> spin::MutexGuard<'_, T> {
        let hz = crate::time::tsc_hz();
        let start = cpu::rdtsc();
        loop {
            for _ in 0..1024 {
                if let Some(guard) = self.inner.try_lock() {
                    return guard;
                }
                cpu::pause();
            }
            if hz != 0 && cpu::rdtsc().wrapping_sub(start) > DEADLOCK_SECS * hz {
                panic!(
                    "IrqMutex<{}> still held by another after {DEADLOCK_SECS} s: a deadlock",
                    core::any::type_name::<T>()
                );
            }
        }
    }

    /// Takes the lock if it is free within `spins` attempts (used on the panic path, where the
    /// holder may be the panicking code itself).
    pub fn try_lock_for(&self, spins: usize) -> Option<IrqMutexGuard<'_, T>> {
        let were_enabled = cpu::disable_interrupts();
        for _ in 0..spins {
            if let Some(guard) = self.inner.try_lock() {
                return Some(IrqMutexGuard {
                    guard: Some(guard),
                    were_enabled,
                });
            }
            cpu::pause();
        }
        cpu::restore_interrupts(were_enabled);
        None
    }
}

impl<T> Deref for IrqMutexGuard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        self.guard.as_ref().expect("guard present until drop")
    }
}

impl<T> DerefMut for IrqMutexGuard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        self.guard.as_mut().expect("guard present until drop")
    }
}

impl<T> Drop for IrqMutexGuard<'_, T> {
    /// Releases the lock, then restores the interrupt flag. Guards must be released in the
    /// reverse order of taking: an enclosing guard released first turns interrupts back on
    /// while this lock is still held, and an interrupt handler taking it then spins for ever on
    /// this core. That is a kernel bug, reported here whether or not an interrupt came in the
    /// window (Rust 2021 drops a function's tail-expression temporaries after its locals, so
    /// `let a = A.lock(); f(&B.lock())` as a tail releases `a` first).
    #[inline(always)]
    fn drop(&mut self) {
        drop(self.guard.take());
        if !self.were_enabled && cpu::interrupts_enabled() {
            panic!(
                "IrqMutex<{}> released after an enclosing IrqMutex: interrupts were on while \
                 it was held",
                core::any::type_name::<T>()
            );
        }
        cpu::restore_interrupts(self.were_enabled);
    }
}
