//! An `AF_INET` or `AF_PACKET` socket as a descriptor sees it: a socket of a stack instance.
//!
//! `read`, `write`, `poll` and the last `close` of the descriptor come here (`fd::Node::Inet`);
//! the socket calls (`syscall::socket`) use the instance directly. A packet socket
//! (`net::packet`) is one of its instance's taps: it sends frames into that instance's
//! outgoing queue and sees that instance's frames only, not the machine's. An `IPPROTO_RAW`
//! socket ([`Kind::RawIp`]) is a handle for the interface `ioctl`s only.

pub mod netlink;

use super::{Instance, Patience, NO_TIMEOUT};
use crate::proc::wait::PollKey;
use abi::Errno;
use alloc::sync::Arc;
use core::sync::atomic::{AtomicU64, Ordering};
use net::SockId;

/// The number of the next socket (shown as `socket:[n]`; netlink sockets' too).
static NEXT_INO: AtomicU64 = AtomicU64::new(1);

/// Which of its instance's socket tables a [`Socket`]'s number is in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// An `AF_INET` socket (TCP, UDP, raw ICMP).
    Inet,
    /// An `AF_PACKET` socket.
    Packet,
    /// An `AF_INET` `SOCK_RAW` socket of protocol `IPPROTO_RAW` (root's), which programs open
    /// to make the interface `ioctl`s on (busybox `udhcpc`). Like Linux's it receives nothing;
    /// sending whole IPv4 packets on it is not built: every call but `ioctl` and `close`
    /// answers `EOPNOTSUPP`. It has no socket in its instance.
    RawIp,
}

/// One `AF_INET` or `AF_PACKET` socket.
pub struct Socket {
    /// The instance it lives in.
    pub inst: Arc<Instance>,
    /// Its number there, among the sockets of its kind (0 for [`Kind::RawIp`], which has none).
    pub id: SockId,
    /// Its kind.
    pub kind: Kind,
    /// The number shown as `socket:[n]` and in `st_ino`.
    pub ino: u64,
    /// `SO_RCVTIMEO` and `SO_SNDTIMEO` in nanoseconds ([`super::NO_TIMEOUT`],
    /// [`super::NO_WAIT`]).
    timeouts: [AtomicU64; 2],
}

/// Which of a socket's timeouts: receiving (`SO_RCVTIMEO`: reads, `accept`) or sending
/// (`SO_SNDTIMEO`: writes, `connect`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Direction {
    /// `SO_RCVTIMEO`.
    Receive = 0,
    /// `SO_SNDTIMEO`.
    Send = 1,
}

impl Socket {
    /// Wraps `AF_INET` socket `id` of `inst`, held by a process of user `uid` (which
    /// `/proc/net/tcp` and `udp` show, with the inode number).
    pub fn new(inst: Arc<Instance>, id: SockId, uid: u32) -> Arc<Socket> {
        let s = Self::of_kind(inst, id, Kind::Inet);
        let owner = net::Owner { uid, inode: s.ino };
        // The socket was just made by this instance: only a vanished id fails, which cannot be.
        let _ = s.inst.peek(|st| st.set_owner(id, owner));
        s
    }

    /// Wraps socket `id` of `inst` of kind `kind`.
    pub fn of_kind(inst: Arc<Instance>, id: SockId, kind: Kind) -> Arc<Socket> {
        Arc::new(Socket {
            inst,
            id,
            kind,
            ino: NEXT_INO.fetch_add(1, Ordering::Relaxed),
            timeouts: [AtomicU64::new(NO_TIMEOUT), AtomicU64::new(NO_TIMEOUT)],
        })
    }

    /// Sets the timeout of direction `d` (nanoseconds, [`NO_TIMEOUT`] or [`NO_WAIT`]).
    pub fn set_timeout(&self, d: Direction, ns: u64) {
        self.timeouts[d as usize].store(ns, Ordering::Relaxed);
    }

    /// The timeout of direction `d`.
    pub fn timeout(&self, d: Direction) -> u64 {
        self.timeouts[d as usize].load(Ordering::Relaxed)
    }

    /// How long a call in direction `d` may wait: not with `nonblock`, else its timeout.
    pub fn patience(&self, d: Direction, nonblock: bool) -> Patience {
        Patience::of(nonblock, self.timeout(d))
    }

    /// Whether it is a packet socket.
    pub fn is_packet(&self) -> bool {
        self.kind == Kind::Packet
    }

    /// `read`/`recv`: at least one byte, 0 at the end of the stream, or waits (`EAGAIN` with
    /// `nonblock`). A datagram (a packet socket's frame) longer than `out` is cut.
    pub fn read(&self, out: &mut [u8], nonblock: bool) -> Result<usize, Errno> {
        if self.kind == Kind::RawIp {
            return Err(Errno::EOPNOTSUPP);
        }
        let patience = self.patience(Direction::Receive, nonblock);
        if self.is_packet() {
            return self.inst.wait_for(patience, |s, _, _| {
                s.packet_recv(self.id, out, false).map(|r| r.0)
            });
        }
        if out.is_empty() && !self.inst.peek(|s| s.is_dgram(self.id)) {
            return Ok(0);
        }
        self.inst
            .wait_for(patience, |s, _, _| s.recv(self.id, out, false).map(|r| r.0))
    }

    /// `write`/`send` on a connected socket: all of `data` (a stream waits for room; fewer
    /// bytes only when a signal or `nonblock` stops it after some went), `EPIPE` when the
    /// connection cannot send (the caller raises SIGPIPE).
    pub fn write(&self, data: &[u8], nonblock: bool) -> Result<usize, Errno> {
        match self.kind {
            Kind::RawIp => Err(Errno::EOPNOTSUPP),
            Kind::Packet if self.inst.peek(|s| s.packet_is_dgram(self.id))? => {
                self.send_datagram(data, None)
            }
            Kind::Packet => self.send_frame(data, None),
            Kind::Inet => self.send(data, None, nonblock),
        }
    }

    /// A `SOCK_DGRAM` packet socket's `write`/`sendto`: `data` after an Ethernet header the
    /// instance writes (its own MAC as the source) to `to`'s protocol, interface and MAC (`None`:
    /// the bound interface, which has no destination), then as [`Socket::send_frame`].
    pub fn send_datagram(
        &self,
        data: &[u8],
        to: Option<(u16, i32, [u8; 6])>,
    ) -> Result<usize, Errno> {
        self.inst.run(|s, _, _| s.send_datagram(self.id, data, to))
    }

    /// A packet socket's `write`/`sendto`: the whole frame `data` into its instance's outgoing
    /// queue as given, on interface `ifindex` (`None`: the bound one), and from there through
    /// the kernel's switch or the network server like any frame the instance sends (both
    /// check its source). Never waits.
    pub fn send_frame(&self, data: &[u8], ifindex: Option<i32>) -> Result<usize, Errno> {
        self.inst
            .run(|s, _, _| s.send_frame(self.id, data, ifindex))
    }

    /// `sendto`: as [`Socket::write`], to `to` for a datagram socket.
    pub fn send(
        &self,
        data: &[u8],
        to: Option<(net::Ipv4Address, u16)>,
        nonblock: bool,
    ) -> Result<usize, Errno> {
        let patience = self.patience(Direction::Send, nonblock);
        let mut done = 0;
        loop {
            let r = self.inst.wait_for(patience, |s, ports, _| {
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
        match self.kind {
            Kind::Inet => self.inst.peek(|s| s.poll_events(self.id)),
            Kind::Packet => self.inst.peek(|s| s.packet_events(self.id)),
            Kind::RawIp => 0,
        }
    }

    /// The `poll` events that hold now and, for an internet socket, how many polls of its
    /// instance brought it something `wanted` asks for (`Stack::arrivals`), read together.
    pub fn poll_counted(&self, wanted: u16) -> (u16, Option<u64>) {
        match self.kind {
            Kind::Inet => self
                .inst
                .peek(|s| (s.poll_events(self.id), Some(s.arrivals(self.id, wanted)))),
            Kind::Packet | Kind::RawIp => (self.poll(), None),
        }
    }

    /// The key its changes are announced under.
    pub fn poll_key(&self) -> PollKey {
        self.inst.poll_key()
    }

    /// Bytes waiting to be read (`FIONREAD`).
    pub fn available(&self) -> usize {
        match self.kind {
            Kind::Inet => self.inst.peek(|s| s.available(self.id)),
            Kind::Packet => self.inst.peek(|s| s.packet_available(self.id)),
            Kind::RawIp => 0,
        }
    }
}

impl Drop for Socket {
    /// The last descriptor closed: the instance closes the socket (a connection lingers there
    /// until its close handshake ends).
    fn drop(&mut self) {
        let id = self.id;
        match self.kind {
            Kind::Inet => self.inst.run(|s, ports, now| s.close(id, ports, now)),
            Kind::Packet => self.inst.peek(|s| s.packet_close(id)),
            Kind::RawIp => {}
        }
    }
}
