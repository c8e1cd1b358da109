//! Synchronization primitives shared by NR and CNR.
//!
//! Everything that a loom model must see (atomics, cells holding shared data, spin loops) goes
//! through this module, so that `--cfg loom` swaps in loom's instrumented versions.

use core::ops::{Deref, DerefMut};
use core::sync::atomic::AtomicPtr;

#[cfg(not(loom))]
pub(crate) use core::sync::atomic::{AtomicBool, AtomicUsize};
#[cfg(loom)]
pub(crate) use loom::sync::atomic::{AtomicBool, AtomicUsize};

pub(crate) use core::sync::atomic::Ordering;

/// A cell for data that is shared between threads and protected by a protocol of the caller.
///
/// Mirrors the closure-based API of `loom::cell::UnsafeCell`, so that loom can check accesses.
#[cfg(not(loom))]
#[derive(Debug)]
pub(crate) struct UnsafeCell<T>(core::cell::UnsafeCell<T>);

#[cfg(not(loom))]
impl<T> UnsafeCell<T> {
    /// Wraps `data`.
    pub(crate) const fn new(data: T) -> Self {
        Self(core::cell::UnsafeCell::new(data))
    }

    /// Calls `f` with a shared raw pointer to the contents.
    #[inline(always)]
    pub(crate) fn with<R>(&self, f: impl FnOnce(*const T) -> R) -> R {
        f(self.0.get())
    }

    /// Calls `f` with a mutable raw pointer to the contents.
    #[inline(always)]
    pub(crate) fn with_mut<R>(&self, f: impl FnOnce(*mut T) -> R) -> R {
        f(self.0.get())
    }
}

#[cfg(loom)]
pub(crate) use loom::cell::UnsafeCell;

/// Aligns and pads `T` to 128 bytes (two cache lines, because x86 prefetches line pairs), so
/// that values written by different cores never share a line.
#[derive(Debug, Default)]
#[repr(align(128))]
pub(crate) struct CachePadded<T>(pub(crate) T);

impl<T> Deref for CachePadded<T> {
    type Target = T;
    #[inline(always)]
    fn deref(&self) -> &T {
        &self.0
    }
}

impl<T> DerefMut for CachePadded<T> {
    #[inline(always)]
    fn deref_mut(&mut self) -> &mut T {
        &mut self.0
    }
}

/// Function called by long spin-waits, set with [`set_spin_hook`]; null means "none".
static SPIN_HOOK: AtomicPtr<()> = AtomicPtr::new(core::ptr::null_mut());

/// Number of `pause` iterations before a spin-wait starts calling the spin hook.
#[cfg(not(loom))]
const SPINS_BEFORE_HOOK: u32 = 128;

/// Registers `hook` to be called from every iteration of a long spin-wait (one that has already
/// spun 128 times), for the whole program.
///
/// Spin-waits in this crate wait for other cores (a combiner, a lagging replica, an appender
/// that reserved log entries but has not written them yet). A host program that runs more
/// threads than cores should pass `std::thread::yield_now` so that a preempted thread gets to
/// run; the kernel can leave it unset (a plain `pause` loop) or pass a function that handles
/// pending interrupts.
pub fn set_spin_hook(hook: fn()) {
    SPIN_HOOK.store(hook as *mut (), core::sync::atomic::Ordering::Release);
}

/// Exponential-free spin-wait helper: `pause` first, then the registered spin hook.
#[derive(Debug, Default)]
pub(crate) struct Backoff {
    #[cfg(not(loom))]
    spins: u32,
}

impl Backoff {
    /// Creates a fresh backoff state.
    #[inline(always)]
    pub(crate) fn new() -> Self {
        Self {
            #[cfg(not(loom))]
            spins: 0,
        }
    }

    /// Waits a little. Under loom, yields to the model scheduler instead.
    #[inline(always)]
    pub(crate) fn spin(&mut self) {
        #[cfg(loom)]
        {
            loom::thread::yield_now();
        }
        #[cfg(not(loom))]
        {
            if self.spins < SPINS_BEFORE_HOOK {
                self.spins += 1;
                core::hint::spin_loop();
            } else {
                let hook = SPIN_HOOK.load(core::sync::atomic::Ordering::Acquire);
                if hook.is_null() {
                    core::hint::spin_loop();
                } else {
                    // SAFETY: the only non-null values ever stored in `SPIN_HOOK` are `fn()`
                    // pointers cast to `*mut ()` by `set_spin_hook`, so transmuting back yields
                    // the same valid function pointer.
                    let hook: fn() = unsafe { core::mem::transmute::<*mut (), fn()>(hook) };
                    hook();
                }
            }
        }
    }
}

/// A minimal test-and-test-and-set spin lock, used only on slow paths (registration, the CNR
/// scan lock, deterministic allocation bookkeeping).
#[derive(Debug)]
pub(crate) struct SpinLock<T> {
    locked: AtomicBool,
    data: core::cell::UnsafeCell<T>,
}

// SAFETY: the lock hands out access to `data` to one thread at a time, so sharing the lock is
// sound whenever `T` may be sent to the thread that takes the lock.
unsafe impl<T: Send> Sync for SpinLock<T> {}
// SAFETY: moving the lock moves `T`.
unsafe impl<T: Send> Send for SpinLock<T> {}

impl<T> SpinLock<T> {
    /// Creates an unlocked lock around `data`.
    pub(crate) fn new(data: T) -> Self {
        Self {
            locked: AtomicBool::new(false),
            data: core::cell::UnsafeCell::new(data),
        }
    }

    /// Spins until the lock is taken; it is released when the guard is dropped.
    pub(crate) fn lock(&self) -> SpinLockGuard<'_, T> {
        let mut backoff = Backoff::new();
        loop {
            if !self.locked.load(Ordering::Relaxed)
                && self
                    .locked
                    .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
                    .is_ok()
            {
                return SpinLockGuard { lock: self };
            }
            backoff.spin();
        }
    }
}

/// Exclusive access to the contents of a [`SpinLock`].
pub(crate) struct SpinLockGuard<'a, T> {
    lock: &'a SpinLock<T>,
}

impl<T> Deref for SpinLockGuard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        // SAFETY: the guard exists only while `locked` is held by this thread.
        unsafe { &*self.lock.data.get() }
    }
}

impl<T> DerefMut for SpinLockGuard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: the guard exists only while `locked` is held by this thread, and `&mut self`
        // ensures this is the only reference derived from the guard.
        unsafe { &mut *self.lock.data.get() }
    }
}

impl<T> Drop for SpinLockGuard<'_, T> {
    fn drop(&mut self) {
        self.lock.locked.store(false, Ordering::Release);
    }
}

/// Source of process-wide unique identities for replicas, so that a token can be checked
/// against the replica it is used with.
static NEXT_UID: core::sync::atomic::AtomicUsize = core::sync::atomic::AtomicUsize::new(1);

/// Returns a new process-wide unique, non-zero identifier.
pub(crate) fn next_uid() -> usize {
    NEXT_UID.fetch_add(1, core::sync::atomic::Ordering::Relaxed)
}
