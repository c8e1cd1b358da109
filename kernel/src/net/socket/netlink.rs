//! Route netlink sockets (`AF_NETLINK`, `NETLINK_ROUTE`; issue 15), read-only: what busybox
//! `ip addr`, `ip link` and `ip route` ask. The answers are built by `net::netlink` from
//! the machine's interfaces, addresses and routes (`net::ifaces`), at the send that asks, and
//! wait in the socket's queue as datagrams until received; the queue holds at most the receive
//! buffer's bytes (`SO_RCVBUF`, Linux's default 212992), and what does not fit is dropped and
//! reported as `ENOBUFS` by the next receive (Linux's overrun).
//!
//! A socket's port id is the process's pid when it binds with `nl_pid` 0 (or sends before
//! binding) and no other socket holds it, else a negative number counting down from -4096, as
//! Linux assigns them; an explicit `nl_pid` must be free (`EADDRINUSE`). Multicast groups are
//! accepted (`bind`'s `nl_groups`, `NETLINK_ADD_MEMBERSHIP`) and deliver nothing: the tables
//! never change. Only the kernel (port 0) can be sent to: Reef has no netlink messages between
//! programs (`ECONNREFUSED`, Linux's answer for a port nobody holds).

use super::NEXT_INO;
use crate::fd::POLL_WAKE;
use crate::net::ifaces;
use crate::proc::wait::{PollKey, WaitQueue, Wake};
use crate::sync::IrqMutex;
use abi::Errno;
use alloc::collections::VecDeque;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicU32, Ordering};
use net::netlink::{self, Addr, Link, Route, Sender, Tables};

/// `SOL_NETLINK`.
pub const SOL_NETLINK: i32 = 270;
/// `NETLINK_ADD_MEMBERSHIP`.
const NETLINK_ADD_MEMBERSHIP: i32 = 1;
/// `NETLINK_DROP_MEMBERSHIP`.
const NETLINK_DROP_MEMBERSHIP: i32 = 2;
/// `NETLINK_CAP_ACK`: error messages carry the request's header only.
const NETLINK_CAP_ACK: i32 = 10;
/// The flag options kept and reported (`NETLINK_PKTINFO`, `NETLINK_BROADCAST_ERROR`,
/// `NETLINK_NO_ENOBUFS`, `NETLINK_LISTEN_ALL_NSID`, `NETLINK_CAP_ACK`, `NETLINK_EXT_ACK`,
/// `NETLINK_GET_STRICT_CHK`): only `NETLINK_CAP_ACK` changes an answer (Reef's errors carry
/// no extended-ack attributes, its dumps no filters to be strict about).
const FLAG_OPTIONS: [i32; 7] = [3, 4, 5, 8, 10, 11, 12];
/// `SO_SNDBUF`.
const SO_SNDBUF: i32 = 7;
/// `SO_RCVBUF`.
const SO_RCVBUF: i32 = 8;
/// `SO_SNDBUFFORCE`.
const SO_SNDBUFFORCE: i32 = 32;
/// `SO_RCVBUFFORCE`.
const SO_RCVBUFFORCE: i32 = 33;
/// Linux's default and largest buffer (`net.core.rmem_max`, `wmem_max`), before doubling.
const BUF_MAX: i32 = 212_992;
/// Linux's smallest receive buffer (`SOCK_MIN_RCVBUF`).
const BUF_MIN: i32 = 2304;

/// `ARPHRD_ETHER`.
const ARPHRD_ETHER: u16 = 1;
/// `ARPHRD_LOOPBACK`.
const ARPHRD_LOOPBACK: u16 = 772;
/// `IFF_LOWER_UP`: the link is up (netlink's flags are 32 bits wide).
const IFF_LOWER_UP: u32 = 0x1_0000;
/// `IF_OPER_UNKNOWN` (Linux's `lo`) and `IF_OPER_UP`.
const OPER: [u8; 2] = [0, 6];

/// The port ids bound now.
static PORTS: IrqMutex<Vec<u32>> = IrqMutex::new(Vec::new());
/// The next port id tried when the process's pid is taken (Linux's `rover`).
static ROVER: AtomicU32 = AtomicU32::new(-4096i32 as u32);

/// A socket's state.
struct State {
    /// Its port id (0: not bound yet).
    pid: u32,
    /// The answers waiting, one datagram each.
    queue: VecDeque<Vec<u8>>,
    /// Their bytes.
    bytes: usize,
    /// Answers were dropped: the next receive fails with `ENOBUFS`.
    overrun: bool,
    /// `SO_RCVBUF` as reported (doubled).
    rcvbuf: i32,
    /// `SO_SNDBUF` as reported (doubled).
    sndbuf: i32,
    /// The `SOL_NETLINK` flag options set, bit `n` for option `n`.
    flags: u32,
}

/// One route netlink socket.
pub struct Netlink {
    /// The number shown as `socket:[n]` and in `st_ino`.
    pub ino: u64,
    /// Its [`PollKey::Event`] number.
    poll_id: u64,
    /// Its type (`SOCK_RAW` or `SOCK_DGRAM`: the same here), for `SO_TYPE`.
    pub sock_type: i32,
    /// Whether its opener was privileged (Linux asks both the opener and the sender).
    opener_privileged: bool,
    /// Its state.
    state: IrqMutex<State>,
    /// Receivers sleep here.
    changed: WaitQueue,
}

/// Claims port id `pid`: `EADDRINUSE` when held, `ENOMEM`.
fn claim(pid: u32) -> Result<(), Errno> {
    let mut ports = PORTS.lock();
    if ports.contains(&pid) {
        return Err(Errno::EADDRINUSE);
    }
    ports.try_reserve(1).map_err(|_| Errno::ENOMEM)?;
    ports.push(pid);
    Ok(())
}

/// The interfaces, addresses and routes as netlink describes them.
fn tables() -> (Vec<Link>, Vec<Addr>, Vec<Route>) {
    let all = ifaces::all();
    let links = all
        .iter()
        .map(|i| Link {
            index: i.index,
            name: i.name,
            hw_type: if i.mac.is_some() {
                ARPHRD_ETHER
            } else {
                ARPHRD_LOOPBACK
            },
            flags: u32::from(i.flags) | IFF_LOWER_UP,
            mtu: i.mtu as u32,
            txqlen: i.txqueuelen as u32,
            mac: i.mac.map_or([0; 6], |m| m.0),
            broadcast: if i.mac.is_some() { [0xff; 6] } else { [0; 6] },
            operstate: OPER[usize::from(i.mac.is_some())],
            counts: ifaces::counts(i),
        })
        .collect();
    let addrs = all
        .iter()
        .map(|i| Addr {
            index: i.index,
            label: i.name,
            local: i.addr.address().octets(),
            prefix_len: i.addr.prefix_len(),
            broadcast: i.mac.map(|_| i.broadcast.octets()),
            scope: if i.mac.is_some() {
                netlink::RT_SCOPE_UNIVERSE
            } else {
                netlink::RT_SCOPE_HOST
            },
        })
        .collect();
    // With a NIC, Linux's main table: the default route, then the NIC's network.
    let routes = all
        .iter()
        .filter(|i| i.mac.is_some())
        .flat_map(|i| {
            let net = i.addr.network();
            [
                Route {
                    dst: [0; 4],
                    dst_len: 0,
                    gateway: Some(crate::net::GATEWAY.octets()),
                    prefsrc: None,
                    oif: i.index,
                    scope: netlink::RT_SCOPE_UNIVERSE,
                    protocol: netlink::RTPROT_BOOT,
                },
                Route {
                    dst: net.address().octets(),
                    dst_len: net.prefix_len(),
                    gateway: None,
                    prefsrc: Some(i.addr.address().octets()),
                    oif: i.index,
                    scope: netlink::RT_SCOPE_LINK,
                    protocol: netlink::RTPROT_KERNEL,
                },
            ]
        })
        .collect();
    (links, addrs, routes)
}

impl Netlink {
    /// A new socket of type `sock_type`, opened by a privileged process or not.
    pub fn new(sock_type: i32, opener_privileged: bool) -> Arc<Netlink> {
        Arc::new(Netlink {
            ino: NEXT_INO.fetch_add(1, Ordering::Relaxed),
            poll_id: crate::fs::eventfd::next_id(),
            sock_type,
            opener_privileged,
            state: IrqMutex::new(State {
                pid: 0,
                queue: VecDeque::new(),
                bytes: 0,
                overrun: false,
                rcvbuf: BUF_MAX,
                sndbuf: BUF_MAX,
                flags: 0,
            }),
            changed: WaitQueue::new(),
        })
    }

    /// Gives the socket a port id if it has none: `pid` (`tgid`, the process's, for 0), else
    /// the next free negative one.
    fn bind_locked(s: &mut State, pid: u32, tgid: u32) -> Result<(), Errno> {
        if s.pid != 0 {
            return if pid == 0 || pid == s.pid {
                Ok(())
            } else {
                Err(Errno::EINVAL)
            };
        }
        if pid != 0 {
            claim(pid)?;
            s.pid = pid;
            return Ok(());
        }
        let mut next = tgid;
        loop {
            match claim(next) {
                Ok(()) => {
                    s.pid = next;
                    return Ok(());
                }
                Err(Errno::EADDRINUSE) => {
                    next = ROVER.fetch_sub(1, Ordering::Relaxed);
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// `bind` to port id `pid` (0: the kernel chooses); `EINVAL` for another id than the one
    /// bound already.
    pub fn bind(&self, pid: u32, tgid: u32) -> Result<(), Errno> {
        Self::bind_locked(&mut self.state.lock(), pid, tgid)
    }

    /// The port id (`getsockname`; 0 before a bind or send).
    pub fn port(&self) -> u32 {
        self.state.lock().pid
    }

    /// A send of `data` to the kernel by a sender of process `tgid`, privileged or not: the
    /// answers are queued; `EMSGSIZE` for more than the send buffer holds.
    pub fn send(&self, data: &[u8], privileged: bool, tgid: u32) -> Result<usize, Errno> {
        let (links, addrs, routes) = tables();
        let t = Tables {
            links: &links,
            addrs: &addrs,
            routes: &routes,
        };
        {
            let mut s = self.state.lock();
            if data.len() + 32 > s.sndbuf as usize {
                return Err(Errno::EMSGSIZE);
            }
            Self::bind_locked(&mut s, 0, tgid)?;
            let who = Sender {
                pid: s.pid,
                privileged: privileged && self.opener_privileged,
                cap_ack: s.flags & (1 << NETLINK_CAP_ACK) != 0,
            };
            let room = (s.rcvbuf as usize).saturating_sub(s.bytes);
            let a = netlink::answer(data, &t, &who, room);
            s.queue
                .try_reserve(a.datagrams.len())
                .map_err(|_| Errno::ENOMEM)?;
            s.bytes += a.bytes;
            s.queue.extend(a.datagrams);
            s.overrun |= a.overrun;
        }
        self.changed.notify_all();
        POLL_WAKE.notify(PollKey::Event(self.poll_id));
        Ok(data.len())
    }

    /// Receives the next answer into `out` (cut to its length): its length and the
    /// datagram's whole length; `peek` leaves it queued. `ENOBUFS` once after answers were
    /// dropped, `EAGAIN` with `nonblock` while none waits, else waits (`EINTR`).
    pub fn recv(
        &self,
        out: &mut [u8],
        peek: bool,
        nonblock: bool,
    ) -> Result<(usize, usize), Errno> {
        loop {
            let seq = self.changed.seq();
            {
                let mut s = self.state.lock();
                if s.overrun {
                    s.overrun = false;
                    return Err(Errno::ENOBUFS);
                }
                if let Some(d) = s.queue.front() {
                    let n = d.len().min(out.len());
                    out[..n].copy_from_slice(&d[..n]);
                    let full = d.len();
                    if !peek {
                        s.queue.pop_front();
                        s.bytes -= full;
                    }
                    return Ok((n, full));
                }
            }
            if nonblock {
                return Err(Errno::EAGAIN);
            }
            if self.changed.wait(seq, None) == Wake::Interrupted {
                return Err(Errno::EINTR);
            }
        }
    }

    /// Drops the next answer (taken after a peek was delivered).
    pub fn take(&self) {
        let mut s = self.state.lock();
        if let Some(d) = s.queue.pop_front() {
            s.bytes -= d.len();
        }
    }

    /// The `poll` events: `POLLOUT` always, `POLLIN` while an answer waits, `POLLERR` after
    /// an overrun.
    pub fn poll(&self) -> u16 {
        use abi::poll::{POLLERR, POLLIN, POLLOUT};
        let s = self.state.lock();
        POLLOUT | if s.queue.is_empty() { 0 } else { POLLIN } | if s.overrun { POLLERR } else { 0 }
    }

    /// The key its changes are announced under.
    pub fn poll_key(&self) -> PollKey {
        PollKey::Event(self.poll_id)
    }

    /// `setsockopt`: the buffer sizes (kept doubled, within Linux's default bounds, which the
    /// `FORCE` ones, privileged only, do not pass here), the `SOL_NETLINK` flags and
    /// memberships; `ENOPROTOOPT` for the rest.
    pub fn set_option(
        &self,
        level: i32,
        name: i32,
        value: i32,
        privileged: bool,
    ) -> Result<(), Errno> {
        let mut s = self.state.lock();
        // Doubled, from 2304 bytes to twice Linux's largest default (212992), which bounds the
        // answers a socket holds; a negative size is a huge one to Linux (unsigned).
        let size = |v: i32| v.clamp(BUF_MIN / 2, BUF_MAX) * 2;
        let unsigned = |v: i32| if v < 0 { BUF_MAX } else { v };
        match (level, name) {
            (net::stack::SOL_SOCKET, SO_RCVBUF) => s.rcvbuf = size(unsigned(value)),
            (net::stack::SOL_SOCKET, SO_SNDBUF) => s.sndbuf = size(unsigned(value)),
            (net::stack::SOL_SOCKET, SO_RCVBUFFORCE | SO_SNDBUFFORCE) if !privileged => {
                return Err(Errno::EPERM)
            }
            (net::stack::SOL_SOCKET, SO_RCVBUFFORCE) => s.rcvbuf = size(value),
            (net::stack::SOL_SOCKET, SO_SNDBUFFORCE) => s.sndbuf = size(value),
            (SOL_NETLINK, NETLINK_ADD_MEMBERSHIP | NETLINK_DROP_MEMBERSHIP) => {}
            (SOL_NETLINK, n) if FLAG_OPTIONS.contains(&n) => {
                if value != 0 {
                    s.flags |= 1 << n;
                } else {
                    s.flags &= !(1 << n);
                }
            }
            _ => return Err(Errno::ENOPROTOOPT),
        }
        Ok(())
    }

    /// `getsockopt`: `SO_TYPE`, the buffer sizes, `SO_ERROR` (0) and the `SOL_NETLINK`
    /// flags; `ENOPROTOOPT` for the rest.
    pub fn option(&self, level: i32, name: i32) -> Result<i32, Errno> {
        let s = self.state.lock();
        match (level, name) {
            (net::stack::SOL_SOCKET, net::stack::SO_TYPE) => Ok(self.sock_type),
            (net::stack::SOL_SOCKET, SO_RCVBUF) => Ok(s.rcvbuf),
            (net::stack::SOL_SOCKET, SO_SNDBUF) => Ok(s.sndbuf),
            (net::stack::SOL_SOCKET, net::stack::SO_ERROR) => Ok(0),
            (SOL_NETLINK, n) if FLAG_OPTIONS.contains(&n) => Ok(i32::from(s.flags & (1 << n) != 0)),
            _ => Err(Errno::ENOPROTOOPT),
        }
    }
}

impl Drop for Netlink {
    /// The last descriptor closed: its port id is free again.
    fn drop(&mut self) {
        let pid = self.state.lock().pid;
        if pid != 0 {
            PORTS.lock().retain(|&p| p != pid);
        }
    }
}
