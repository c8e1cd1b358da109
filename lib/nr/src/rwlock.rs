//! The per-replica readers-writer lock (§2.1): a writer-preference distributed lock with one
//! reader flag per registered thread, so that readers never write a shared cache line.

use alloc::boxed::Box;

use crate::sync::{AtomicBool, Backoff, CachePadded, Ordering, UnsafeCell};

/// A distributed readers-writer lock around `T`.
///
/// Only one thread at a time may call [`RwLock::write`] (the holder of the replica's combiner
/// lock); readers identify themselves by their thread index.
pub(crate) struct RwLock<T> {
    writer: CachePadded<AtomicBool>,
    readers: Box<[CachePadded<AtomicBool>]>,
    data: UnsafeCell<T>,
}

impl<T> RwLock<T> {
    /// Creates a lock for `readers` reader threads.
    pub(crate) fn new(data: T, readers: usize) -> Self {
        Self {
            writer: CachePadded(AtomicBool::new(false)),
            readers: (0..readers)
                .map(|_| CachePadded(AtomicBool::new(false)))
                .collect(),
            data: UnsafeCell::new(data),
        }
    }

    /// Runs `f` with shared access, as reader `tid`. Each `tid` must be used by one thread at
    /// a time.
    #[inline(always)]
    pub(crate) fn read<R>(&self, tid: usize, f: impl FnOnce(&T) -> R) -> R {
        let flag = &self.readers[tid];
        let mut backoff = Backoff::new();
        loop {
            while self.writer.load(Ordering::Relaxed) {
                backoff.spin();
            }
            // SeqCst store + SeqCst load: either the writer sees our flag, or we see its.
            flag.store(true, Ordering::SeqCst);
            if !self.writer.load(Ordering::SeqCst) {
                break;
            }
            flag.store(false, Ordering::Release);
        }
        // SAFETY: our flag is set and no writer was active after it became visible; a writer
        // that starts later waits for the flag to clear, so only shared access exists now.
        let r = self.data.with(|p| f(unsafe { &*p }));
        flag.store(false, Ordering::Release);
        r
    }

    /// Runs `f` with exclusive access, waiting for the first `readers` reader flags. The
    /// caller must be the only writer (it holds the combiner lock) and `readers` must cover
    /// every reader index that is in use.
    pub(crate) fn write<R>(&self, readers: usize, f: impl FnOnce(&mut T) -> R) -> R {
        self.writer.store(true, Ordering::SeqCst);
        for flag in &self.readers[..readers] {
            let mut backoff = Backoff::new();
            while flag.load(Ordering::SeqCst) {
                backoff.spin();
            }
        }
        // SAFETY: we are the only writer (caller contract); `writer` was set before we saw
        // every reader flag clear, so readers that come later back off until we release.
        let r = self.data.with_mut(|p| f(unsafe { &mut *p }));
        self.writer.store(false, Ordering::Release);
        r
    }
}
