//! `AF_UNIX` stream socket pairs (`socketpair`): two [`Pipe`]s crossed, one per direction, so
//! each end reads what the other writes.
//!
//! Linux semantics for what exists: a read returns what is there, blocks while nothing is and
//! the peer may still write, and answers 0 (end of file) once the peer shut its writing down
//! or closed; a write after the peer closed (or shut its reading down) fails with EPIPE, and
//! the caller raises SIGPIPE unless `MSG_NOSIGNAL`; `shutdown` ends one direction or both.
//! Not built: `socket`/`bind`/`connect` with names (and so `AF_UNIX` addresses), datagram and
//! seqpacket types, `MSG_PEEK`, `MSG_WAITALL`, out-of-band data and descriptor passing
//! (`SCM_RIGHTS`): the networking issue's socket layer comes first.

use super::pipe::Pipe;
use crate::proc::wait::PollKey;
use abi::Errno;
use alloc::sync::Arc;
use core::sync::atomic::{AtomicBool, Ordering};

/// `shutdown`'s `how`: no more reading.
const SHUT_RD: u64 = 0;
/// `shutdown`'s `how`: no more writing (the peer reads the end of file).
const SHUT_WR: u64 = 1;
/// `shutdown`'s `how`: neither.
const SHUT_RDWR: u64 = 2;

/// One end of a connected pair.
pub struct SocketEnd {
    /// Number shown as `socket:[id]` in `/proc/<pid>/fd` (its receiving pipe's).
    pub id: u64,
    /// What the peer writes.
    rx: Arc<Pipe>,
    /// What the peer reads.
    tx: Arc<Pipe>,
    /// This end no longer reads (it let go of `rx`'s read side).
    read_shut: AtomicBool,
    /// This end no longer writes (it let go of `tx`'s write side).
    write_shut: AtomicBool,
}

/// A connected pair of ends.
pub fn pair() -> (Arc<SocketEnd>, Arc<SocketEnd>) {
    let a = Pipe::new();
    let b = Pipe::new();
    let end = |rx: &Arc<Pipe>, tx: &Arc<Pipe>| {
        Arc::new(SocketEnd {
            id: rx.id,
            rx: rx.clone(),
            tx: tx.clone(),
            read_shut: AtomicBool::new(false),
            write_shut: AtomicBool::new(false),
        })
    };
    (end(&a, &b), end(&b, &a))
}

impl SocketEnd {
    /// Reads into `out`: at least one byte, or 0 at end of file (the peer shut its writing
    /// down or closed, or this end shut its reading down).
    pub fn read(&self, out: &mut [u8], nonblock: bool) -> Result<usize, Errno> {
        if self.read_shut.load(Ordering::Acquire) {
            return Ok(0);
        }
        self.rx.read(out, nonblock)
    }

    /// Writes `data` (see [`Pipe::write`]): EPIPE once this end shut its writing down or the
    /// peer stopped reading.
    pub fn write(&self, data: &[u8], nonblock: bool) -> Result<usize, Errno> {
        if self.write_shut.load(Ordering::Acquire) {
            return Err(Errno::EPIPE);
        }
        self.tx.write(data, nonblock)
    }

    /// `shutdown(how)`: `EINVAL` for an unknown `how`. Shutting a direction down twice is
    /// harmless.
    pub fn shutdown(&self, how: u64) -> Result<(), Errno> {
        let (read, write) = match how {
            SHUT_RD => (true, false),
            SHUT_WR => (false, true),
            SHUT_RDWR => (true, true),
            _ => return Err(Errno::EINVAL),
        };
        if read && !self.read_shut.swap(true, Ordering::AcqRel) {
            self.rx.close_reader();
        }
        if write && !self.write_shut.swap(true, Ordering::AcqRel) {
            self.tx.close_writer();
        }
        Ok(())
    }

    /// The last descriptor of this end closed: both directions end.
    pub fn close(&self) {
        let _ = self.shutdown(SHUT_RDWR);
    }

    /// `poll` events, as Linux's: `POLLIN` when data or the end of file waits, `POLLOUT` when a
    /// write of `PIPE_BUF` bytes would not block (or would fail at once: nobody reads),
    /// `POLLHUP` once both directions are over.
    pub fn poll(&self) -> u16 {
        use abi::poll::{POLLHUP, POLLIN, POLLOUT};
        let (data, _, eof, _) = self.rx.poll_state();
        let (_, room, _, unread) = self.tx.poll_state();
        let eof = eof || self.read_shut.load(Ordering::Acquire);
        let unread = unread || self.write_shut.load(Ordering::Acquire);
        let mut events = 0;
        if data || eof {
            events |= POLLIN;
        }
        if room {
            events |= POLLOUT;
        }
        if eof && unread {
            events |= POLLHUP;
        }
        events
    }

    /// The keys whose change may change [`SocketEnd::poll`]'s answer: both pipes.
    pub fn poll_keys(&self) -> [PollKey; 2] {
        [PollKey::Pipe(self.rx.id), PollKey::Pipe(self.tx.id)]
    }

    /// Bytes waiting to be read (`FIONREAD`).
    pub fn available(&self) -> usize {
        self.rx.available()
    }
}
