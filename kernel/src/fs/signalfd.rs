//! Signals read through a descriptor (`signalfd4`), with Linux's semantics: an anonymous file
//! (`anon_inode:[signalfd]`) holding a signal mask. A read takes signals of the mask pending
//! for the *reading* thread (its own first, then its process's, as delivery would: Linux's
//! `dequeue_signal`) and returns a 128-byte `struct signalfd_siginfo` for each, as many as fit;
//! it waits while none is pending, unless `O_NONBLOCK` (`EAGAIN`). A descriptor inherited by a
//! `fork` child reads the child's signals.
//!
//! Readiness, for `poll`, `select` and `epoll`, is likewise the calling thread's: `POLLIN`
//! while a signal of the mask is pending for it. Readers and pollers wait on
//! [`PollKey::Signal`] with their process's id, which every signal sent to the process or
//! one of its threads notifies ([`notify`]), once any signal descriptor exists.

use crate::fd::POLL_WAKE;
use crate::proc::signal::{self, SIGINFO, UNBLOCKABLE};
use crate::proc::wait::{PollKey, Wake};
use crate::proc::{sched, Pid};
use abi::Errno;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

/// The id of the next descriptor (`st_ino`).
static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// How many signal descriptors exist: while none does, sending a signal notifies no one.
static LIVE: AtomicUsize = AtomicUsize::new(0);

/// A signal descriptor.
pub struct SignalFd {
    /// Its number (`st_ino`).
    pub id: u64,
    /// The signals it reads (bit `sig - 1`).
    mask: AtomicU64,
}

impl SignalFd {
    /// A descriptor reading the signals of `mask` (less `SIGKILL` and `SIGSTOP`, which a mask
    /// never holds: silently dropped, as on Linux).
    pub fn new(mask: u64) -> Arc<SignalFd> {
        LIVE.fetch_add(1, Ordering::AcqRel);
        Arc::new(SignalFd {
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
            mask: AtomicU64::new(mask & !UNBLOCKABLE),
        })
    }

    /// `signalfd4` on this descriptor: reads the signals of `mask` from now on, and wakes
    /// the caller's process's readers and pollers to look again.
    pub fn set_mask(&self, mask: u64, pid: Pid) {
        self.mask.store(mask & !UNBLOCKABLE, Ordering::Release);
        notify(pid);
    }

    /// The signals it reads.
    fn mask(&self) -> u64 {
        self.mask.load(Ordering::Acquire)
    }

    /// `read`: takes the current thread's pending signals of the mask, one
    /// `struct signalfd_siginfo` each, as many as `buf` holds; `EINVAL` for a buffer shorter
    /// than one, `EAGAIN` (`nonblock`) or a wait while none is pending, `EINTR` if a signal
    /// outside the mask that is not blocked ends the wait.
    pub fn read(&self, buf: &mut [u8], nonblock: bool) -> Result<usize, Errno> {
        if buf.len() < SIGINFO {
            return Err(Errno::EINVAL);
        }
        let me = sched::current_thread();
        loop {
            let mut done = 0;
            while done + SIGINFO <= buf.len() {
                let Some((sig, info)) = signal::take_of(&me, self.mask()) else {
                    break;
                };
                buf[done..done + SIGINFO].copy_from_slice(&info.to_signalfd(sig));
                done += SIGINFO;
            }
            if done > 0 {
                return Ok(done);
            }
            if nonblock {
                return Err(Errno::EAGAIN);
            }
            let mut keys = Vec::new();
            keys.try_reserve(1).map_err(|_| Errno::ENOMEM)?;
            keys.push(PollKey::Signal(me.process.pid));
            let woke = POLL_WAKE.wait(keys, None, || signal::pending_of(&me, self.mask()))?;
            if woke == Wake::Interrupted {
                return Err(Errno::EINTR);
            }
        }
    }

    /// `POLLIN` while a signal of the mask is pending for the calling thread.
    pub fn poll(&self) -> u16 {
        match sched::current() {
            Some(me) if signal::pending_of(&me, self.mask()) => abi::poll::POLLIN,
            _ => 0,
        }
    }

    /// The key its readiness changes under: the calling thread's process's signals.
    pub fn poll_key(&self) -> Option<PollKey> {
        sched::current().map(|me| PollKey::Signal(me.process.pid))
    }
}

impl Drop for SignalFd {
    fn drop(&mut self) {
        LIVE.fetch_sub(1, Ordering::AcqRel);
    }
}

/// A signal was sent to process `pid` or one of its threads: wakes the signal descriptors'
/// readers and pollers in it (nothing to do while no descriptor exists).
pub fn notify(pid: Pid) {
    if LIVE.load(Ordering::Acquire) > 0 {
        POLL_WAKE.notify(PollKey::Signal(pid));
    }
}
