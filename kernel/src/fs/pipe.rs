//! Pipes: a bounded byte queue between a read end and a write end.
//!
//! Linux semantics: a read returns what is there (at least one byte), blocking while the pipe is
//! empty and a writer exists, and 0 (end of file) once every write end is closed. A write of at
//! most [`PIPE_BUF`] bytes is atomic (it waits until the whole of it fits); a longer write may be
//! split between readers. Writing with no read end left fails with EPIPE (the caller raises
//! SIGPIPE). With `O_NONBLOCK` an operation that would block answers EAGAIN. Every change of
//! state wakes the pipe's waiters and the pollers ([`crate::fd::POLL_WAKE`]).
//!
//! A FIFO's pipe ([`crate::fs::fifo`]) starts with no ends ([`Pipe::unopened`]); its opens add
//! them ([`Pipe::open_ends`]) and count every end ever opened, which a blocked open waits to
//! see change ([`Pipe::wait_for_peer`]).

use crate::proc::wait::{WaitQueue, Wake};
use crate::sync::IrqMutex;
use abi::Errno;
use alloc::collections::VecDeque;
use alloc::sync::Arc;
use core::sync::atomic::{AtomicU64, Ordering};

/// Bytes a pipe holds (Linux's default, 16 pages).
pub const CAPACITY: usize = 64 * 1024;
/// Writes up to this size are atomic.
pub const PIPE_BUF: usize = 4096;

/// The id of the next pipe created.
static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// The mutable state of a pipe, kept under its lock.
struct State {
    /// The bytes written and not yet read (at most [`CAPACITY`]).
    buf: VecDeque<u8>,
    /// Read ends still open.
    readers: usize,
    /// Write ends still open.
    writers: usize,
    /// Read ends ever opened (Linux's `r_counter`): a FIFO's writer waits for it to change.
    read_opens: u64,
    /// Write ends ever opened (`w_counter`): a FIFO's reader waits for it to change.
    write_opens: u64,
}

/// The ends of a pipe, as [`Pipe::ends`] saw them.
#[derive(Clone, Copy, Debug)]
pub struct Ends {
    /// Read ends open.
    pub readers: usize,
    /// Write ends open.
    pub writers: usize,
    /// Read ends ever opened.
    pub read_opens: u64,
    /// Write ends ever opened.
    pub write_opens: u64,
}

/// A pipe (both ends share it).
pub struct Pipe {
    /// Number shown as `pipe:[id]` in `/proc/<pid>/fd`.
    pub id: u64,
    /// The queue and the counts of open ends.
    state: IrqMutex<State>,
    /// Readers sleep here while the pipe is empty.
    readable: WaitQueue,
    /// Writers sleep here while their data does not fit.
    writable: WaitQueue,
}

impl Pipe {
    /// A new pipe with `ends` ends of each kind open.
    fn with_ends(ends: usize) -> Arc<Pipe> {
        Arc::new(Pipe {
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
            state: IrqMutex::new(State {
                buf: VecDeque::new(),
                readers: ends,
                writers: ends,
                read_opens: ends as u64,
                write_opens: ends as u64,
            }),
            readable: WaitQueue::new(),
            writable: WaitQueue::new(),
        })
    }

    /// A new pipe with one read end and one write end open.
    pub fn new() -> Arc<Pipe> {
        Self::with_ends(1)
    }

    /// A new pipe with no end open yet (a FIFO's, before its first open counts itself).
    pub fn unopened() -> Arc<Pipe> {
        Self::with_ends(0)
    }

    /// The ends open and ever opened.
    pub fn ends(&self) -> Ends {
        let s = self.state.lock();
        Ends {
            readers: s.readers,
            writers: s.writers,
            read_opens: s.read_opens,
            write_opens: s.write_opens,
        }
    }

    /// Counts a new read end and/or write end; returns the ends with them. The caller wakes
    /// the waiters ([`Pipe::changed`]) once it has let go of its own locks.
    pub fn open_ends(&self, read: bool, write: bool) -> Ends {
        let mut s = self.state.lock();
        if read {
            s.readers += 1;
            s.read_opens += 1;
        }
        if write {
            s.writers += 1;
            s.write_opens += 1;
        }
        Ends {
            readers: s.readers,
            writers: s.writers,
            read_opens: s.read_opens,
            write_opens: s.write_opens,
        }
    }

    /// Drops a read end and/or write end counted by [`Pipe::open_ends`]; returns whether no
    /// end is left. The caller wakes the waiters ([`Pipe::changed`]).
    pub fn close_ends(&self, read: bool, write: bool) -> bool {
        let mut s = self.state.lock();
        s.readers -= usize::from(read);
        s.writers -= usize::from(write);
        s.readers == 0 && s.writers == 0
    }

    /// Sleeps until a write end (`writer`) or a read end (not `writer`) has been opened since
    /// the count of such opens was `seen` (a peer that opened and closed again meanwhile
    /// counts, as on Linux). EINTR when a signal is pending and no peer came (a peer that
    /// came wins over a signal that arrived before the sleeper ran again, `WaitQueue::wait`:
    /// a shell's SIGCHLD from a writer that opened, wrote and exited at once).
    pub fn wait_for_peer(&self, writer: bool, seen: u64) -> Result<(), Errno> {
        // `changed` wakes both queues; a reader-to-be waits where readers wait.
        let queue = if writer {
            &self.readable
        } else {
            &self.writable
        };
        let came = || {
            let ends = self.ends();
            (if writer {
                ends.write_opens
            } else {
                ends.read_opens
            }) != seen
        };
        loop {
            let seq = queue.seq();
            if came() {
                return Ok(());
            }
            if queue.wait(seq, None) == Wake::Interrupted {
                return Err(Errno::EINTR);
            }
        }
    }

    /// Wakes both wait queues and the pollers after a change of state.
    pub fn changed(&self) {
        self.readable.notify_all();
        self.writable.notify_all();
        crate::fd::POLL_WAKE.notify(crate::proc::wait::PollKey::Pipe(self.id));
    }

    /// A read end was closed.
    pub fn close_reader(&self) {
        self.state.lock().readers -= 1;
        self.changed();
    }

    /// A write end was closed.
    pub fn close_writer(&self) {
        self.state.lock().writers -= 1;
        self.changed();
    }

    /// Bytes waiting (`FIONREAD`).
    pub fn available(&self) -> usize {
        self.state.lock().buf.len()
    }

    /// (readable, writable, hung up, no readers) for `poll`: data waits; at least `PIPE_BUF`
    /// bytes of space; every writer is gone (end of file: `POLLHUP`, not `POLLIN`, as on
    /// Linux); every reader is gone.
    pub fn poll_state(&self) -> (bool, bool, bool, bool) {
        let s = self.state.lock();
        (
            !s.buf.is_empty(),
            CAPACITY - s.buf.len() >= PIPE_BUF || s.readers == 0,
            s.writers == 0,
            s.readers == 0,
        )
    }

    /// Reads into `out`: at least one byte, or 0 at end of file.
    pub fn read(&self, out: &mut [u8], nonblock: bool) -> Result<usize, Errno> {
        if out.is_empty() {
            return Ok(0);
        }
        loop {
            let seq = self.readable.seq();
            {
                let mut s = self.state.lock();
                if !s.buf.is_empty() {
                    let n = out.len().min(s.buf.len());
                    for (dst, src) in out.iter_mut().zip(s.buf.drain(..n)) {
                        *dst = src;
                    }
                    drop(s);
                    self.changed();
                    return Ok(n);
                }
                if s.writers == 0 {
                    return Ok(0);
                }
            }
            if nonblock {
                return Err(Errno::EAGAIN);
            }
            if self.readable.wait(seq, None) == Wake::Interrupted {
                return Err(Errno::EINTR);
            }
        }
    }

    /// Writes `data`; returns the bytes written (fewer than asked only when a signal or
    /// `O_NONBLOCK` stopped a long write after some went in). EPIPE without readers. Writing
    /// nothing returns 0 at once, readers or not, as on Linux (musl's `printf` to an unbuffered
    /// stream ends with such a `writev`, which used to wait here for room forever).
    pub fn write(&self, data: &[u8], nonblock: bool) -> Result<usize, Errno> {
        if data.is_empty() {
            return Ok(0);
        }
        let mut done = 0;
        loop {
            let seq = self.writable.seq();
            {
                let mut s = self.state.lock();
                if s.readers == 0 {
                    return if done > 0 {
                        Ok(done)
                    } else {
                        Err(Errno::EPIPE)
                    };
                }
                let space = CAPACITY - s.buf.len();
                let rest = &data[done..];
                // A write of at most PIPE_BUF bytes goes in whole or not at all.
                let fits = if data.len() <= PIPE_BUF {
                    if space >= rest.len() {
                        rest.len()
                    } else {
                        0
                    }
                } else {
                    space.min(rest.len())
                };
                if fits > 0 {
                    // The buffer grows as it fills (a pipe holds nothing until written); no
                    // memory for it is ENOMEM, as Linux's page allocation for a pipe gives.
                    if s.buf.try_reserve(fits).is_err() {
                        return if done > 0 {
                            Ok(done)
                        } else {
                            Err(Errno::ENOMEM)
                        };
                    }
                    s.buf.extend(&rest[..fits]);
                    done += fits;
                    drop(s);
                    self.changed();
                    if done == data.len() {
                        return Ok(done);
                    }
                    continue;
                }
            }
            if nonblock {
                return if done > 0 {
                    Ok(done)
                } else {
                    Err(Errno::EAGAIN)
                };
            }
            if self.writable.wait(seq, None) == Wake::Interrupted {
                return if done > 0 {
                    Ok(done)
                } else {
                    Err(Errno::EINTR)
                };
            }
        }
    }
}
