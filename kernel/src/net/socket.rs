//! An `AF_INET` socket as a descriptor sees it: a socket of a stack instance.
//!
//! `read`, `write`, `poll` and the last `close` of the descriptor come here (`fd::Node::Inet`);
//! the socket calls (`syscall::socket`) use the instance directly.

use super::Instance;
use crate::proc::wait::PollKey;
use abi::Errno;
use alloc::sync::Arc;
use core::sync::atomic::{AtomicU64, Ordering};
use net::SockId;

/// The number of the next socket (shown as `socket:[n]`).
static NEXT_INO: AtomicU64 = AtomicU64::new(1);

/// One `AF_INET` socket.
pub struct Socket {
    /// The instance it lives in.
    pub inst: Arc<Instance>,
    /// Its number there.
    pub id: SockId,
    /// The number shown as `socket:[n]` and in `st_ino`.
    pub ino: u64,
}

impl Socket {
    /// Wraps socket `id` of `inst`.
    pub fn new(inst: Arc<Instance>, id: SockId) -> Arc<Socket> {
        Arc::new(Socket {
            inst,
            id,
            ino: NEXT_INO.fetch_add(1, Ordering::Relaxed),
        })
    }

    /// `read`/`recv`: at least one byte, 0 at the end of the stream, or waits (`EAGAIN` with
    /// `nonblock`). A datagram longer than `out` is cut.
    pub fn read(&self, out: &mut [u8], nonblock: bool) -> Result<usize, Errno> {
        if out.is_empty() && !self.inst.peek(|s| s.is_dgram(self.id)) {
            return Ok(0);
        }
        self.inst
            .wait_for(nonblock, |s, _, _| s.recv(self.id, out, false).map(|r| r.0))
    }

    /// `write`/`send` on a connected socket: all of `data` (a stream waits for room; fewer
    /// bytes only when a signal or `nonblock` stops it after some went), `EPIPE` when the
    /// connection cannot send (the caller raises SIGPIPE).
    pub fn write(&self, data: &[u8], nonblock: bool) -> Result<usize, Errno> {
        self.send(data, None, nonblock)
    }

    /// `sendto`: as [`Socket::write`], to `to` for a datagram socket.
    pub fn send(
        &self,
        data: &[u8],
        to: Option<(net::Ipv4Address, u16)>,
        nonblock: bool,
    ) -> Result<usize, Errno> {
        let mut done = 0;
        loop {
            let r = self.inst.wait_for(nonblock, |s, ports, _| {
                s.send(self.id, &data[done..], to, ports)
            });
            match r {
                Ok(n) => {
                    done += n;
                    if done >= data.len() || self.inst.peek(|s| s.is_dgram(self.id)) {
                        return Ok(done);
                    }
                }
                Err(_) if done > 0 => return Ok(done),
                Err(e) => return Err(e),
            }
        }
    }

    /// The `poll` events that hold now.
    pub fn poll(&self) -> u16 {
        self.inst.peek(|s| s.poll_events(self.id))
    }

    /// The key its changes are announced under.
    pub fn poll_key(&self) -> PollKey {
        self.inst.poll_key()
    }

    /// Bytes waiting to be read (`FIONREAD`).
    pub fn available(&self) -> usize {
        self.inst.peek(|s| s.available(self.id))
    }
}

impl Drop for Socket {
    /// The last descriptor closed: the instance closes the socket (a connection lingers there
    /// until its close handshake ends).
    fn drop(&mut self) {
        let id = self.id;
        self.inst.run(|s, ports, now| s.close(id, ports, now));
    }
}
