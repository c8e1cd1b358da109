//! The socket calls: `AF_INET` stream and datagram sockets (`net`: each process's own stack
//! instance), `AF_PACKET` raw and datagram sockets (Ethernet frames of the caller's own
//! instance, `net::packet`; root only), `AF_NETLINK` route sockets (`net::socket::netlink`,
//! read-only) and `AF_UNIX` stream pairs (`fs::unix`).
//!
//! Arguments are decoded and checked here (addresses, lengths, flags, user pointers); the
//! instance does the rest. Linux's answers where they are specific: `EAFNOSUPPORT` for a
//! family Reef lacks (`AF_INET6`, named `AF_UNIX` sockets), `EINVAL` for a short
//! address, `EFAULT` for a bad pointer (a `recv` into one leaves the data queued), SIGPIPE with
//! `EPIPE` unless `MSG_NOSIGNAL`. Not built: IPv6, raw sockets but ICMP ones (an
//! `IPPROTO_RAW` one is a handle for interface `ioctl`s only), ICMP datagram ("ping")
//! sockets, the packet socket options but `PACKET_STATISTICS` (socket filters and
//! `PACKET_AUXDATA` too: `ENOPROTOOPT`), `SO_LINGER`, the timeout options of `AF_UNIX` pairs
//! (`ENOPROTOOPT`; `AF_INET` and packet sockets have `SO_RCVTIMEO` and `SO_SNDTIMEO`),
//! ancillary data (`msg_control` is ignored on send and comes back empty), out-of-band data.
//!
//! The interface and route requests of `ioctl` on a socket (`SIOCGIF*`, `SIOCADDRT`, ...) are
//! decoded here too ([`interface_ioctl`]); `net::ifaces` has the interfaces.

use super::file::{file, install_pair, iovecs, sigpipe, IOV_MAX, MAX_IO};
use super::SysResult;
use crate::arch::idt::InterruptFrame;
use crate::fd::{Node, OpenFile, O_NONBLOCK, O_RDWR};
use crate::fs::unix;
use crate::net::socket::netlink::Netlink;
use crate::net::socket::{Direction, Kind, Socket};
use crate::proc::Thread;
use crate::uaccess::{self, read_user, write_user};
use abi::Errno;
use alloc::sync::Arc;
use alloc::vec::Vec;
use net::{Ipv4Address, Proto};

/// `AF_UNIX` (also `PF_UNIX`, the one protocol a pair may name).
const AF_UNIX: u64 = 1;
/// `AF_INET`.
const AF_INET: u64 = 2;
/// `AF_INET6`: not built.
const AF_INET6: u64 = 10;
/// `AF_PACKET`: raw Ethernet frames.
const AF_PACKET: u64 = 17;
/// `AF_NETLINK`: route netlink only.
const AF_NETLINK: u64 = net::netlink::AF_NETLINK as u64;
/// `SOL_PACKET`: the packet sockets' option level.
const SOL_PACKET: i32 = 263;
/// `PACKET_STATISTICS`: frames received and dropped (`struct tpacket_stats`).
const PACKET_STATISTICS: i32 = 6;
/// Size of `struct sockaddr_ll`.
const SOCKADDR_LL: usize = 20;
/// Offset of `sll_addr` in `struct sockaddr_ll`.
const SLL_ADDR: usize = 12;
/// Largest socket address (`struct sockaddr_storage`).
const SOCKADDR_MAX: u64 = 128;
/// `ARPHRD_ETHER`: `eth0`'s hardware type.
const ARPHRD_ETHER: u16 = 1;
/// `ARPHRD_LOOPBACK`: `lo`'s hardware type.
const ARPHRD_LOOPBACK: u16 = 772;
/// A byte stream.
const SOCK_STREAM: u64 = 1;
/// Datagrams.
const SOCK_DGRAM: u64 = 2;
/// Raw packets (`IPPROTO_ICMP` only: what `ping` opens).
const SOCK_RAW: u64 = 3;
/// Sequenced packets: not built.
const SOCK_SEQPACKET: u64 = 5;
/// The first type number Linux does not know.
const SOCK_MAX: u64 = 11;
/// Type flag: the descriptor is `O_NONBLOCK`.
const SOCK_NONBLOCK: u64 = 0o4000;
/// Type flag: the descriptor is close-on-exec.
const SOCK_CLOEXEC: u64 = 0o2000000;
/// `IPPROTO_IP`.
const IPPROTO_IP: i32 = 0;
/// `IPPROTO_ICMP`.
const IPPROTO_ICMP: u64 = 1;
/// `IPPROTO_TCP`.
const IPPROTO_TCP: u64 = 6;
/// `IPPROTO_UDP`.
const IPPROTO_UDP: u64 = 17;
/// `IPPROTO_RAW`: raw IPv4 packets with their header (`Kind::RawIp`).
const IPPROTO_RAW: u64 = 255;
/// Flag: out-of-band data (not built).
const MSG_OOB: u64 = 0x1;
/// Flag: look at the data without taking it.
const MSG_PEEK: u64 = 0x2;
/// Flag: return a datagram's whole length even when cut.
const MSG_TRUNC: u64 = 0x20;
/// Flag: this call does not block.
const MSG_DONTWAIT: u64 = 0x40;
/// Flag: wait until the whole buffer is filled (streams).
const MSG_WAITALL: u64 = 0x100;
/// Flag: `EPIPE` without SIGPIPE.
const MSG_NOSIGNAL: u64 = 0x4000;
/// Flag: more data follows (a hint).
const MSG_MORE: u64 = 0x8000;
/// Flag: close-on-exec for received descriptors (none are passed).
const MSG_CMSG_CLOEXEC: u64 = 0x4000_0000;
/// Size of `struct sockaddr_in`.
const SOCKADDR_IN: usize = 16;

/// What a socket descriptor is.
enum Sock {
    /// One end of an `AF_UNIX` pair.
    Pair(Arc<unix::SocketEnd>),
    /// An `AF_INET` socket.
    Inet(Arc<Socket>),
    /// An `AF_PACKET` socket.
    Packet(Arc<Socket>),
    /// An `AF_NETLINK` socket.
    Netlink(Arc<Netlink>),
}

/// The socket `fd` names: `EBADF`, or `ENOTSOCK` for another kind of file; `EOPNOTSUPP`
/// for an `IPPROTO_RAW` socket, which only answers `ioctl`s.
fn sock_of(me: &Thread, fd: u64) -> Result<(Arc<OpenFile>, Sock), Errno> {
    let f = file(me, fd)?;
    let s = match &f.node {
        Node::Socket(e) => Sock::Pair(e.clone()),
        Node::Inet(s) if s.kind == Kind::RawIp => return Err(Errno::EOPNOTSUPP),
        Node::Inet(s) if s.is_packet() => Sock::Packet(s.clone()),
        Node::Inet(s) => Sock::Inet(s.clone()),
        Node::Netlink(s) => Sock::Netlink(s.clone()),
        _ => return Err(Errno::ENOTSOCK),
    };
    Ok((f, s))
}

/// The `AF_INET` socket `fd` names; `pair` is the answer for an `AF_UNIX` pair's end,
/// `EOPNOTSUPP` for a packet or netlink socket's (Linux's for `listen`, `connect`, `accept`).
fn inet_of(me: &Thread, fd: u64, pair: Errno) -> Result<(Arc<OpenFile>, Arc<Socket>), Errno> {
    match sock_of(me, fd)? {
        (f, Sock::Inet(s)) => Ok((f, s)),
        (_, Sock::Pair(_)) => Err(pair),
        (_, Sock::Packet(_) | Sock::Netlink(_)) => Err(Errno::EOPNOTSUPP),
    }
}

/// Reads a `struct sockaddr_nl` of `len` bytes at `addr`: its port id and groups. `EINVAL`
/// if short or of another family, `EFAULT` if unreadable.
fn read_nl(addr: u64, len: u64) -> Result<(u32, u32), Errno> {
    if len > SOCKADDR_MAX || (len as usize) < net::netlink::SOCKADDR_NL {
        return Err(Errno::EINVAL);
    }
    let raw: [u32; 3] = read_user(addr)?;
    if raw[0] as u16 != net::netlink::AF_NETLINK {
        return Err(Errno::EINVAL);
    }
    Ok((raw[1], raw[2]))
}

/// A `struct sockaddr_nl` of port id `pid` (0: the kernel's).
fn sockaddr_nl(pid: u32) -> [u8; net::netlink::SOCKADDR_NL] {
    let mut raw = [0u8; net::netlink::SOCKADDR_NL];
    raw[..2].copy_from_slice(&net::netlink::AF_NETLINK.to_ne_bytes());
    raw[4..8].copy_from_slice(&pid.to_ne_bytes());
    raw
}

/// Checks where a netlink send goes (`to`: its `sockaddr_nl`): the kernel only
/// (`ECONNREFUSED`: no program's port can be sent to), multicast groups only from a
/// privileged sender (`EPERM`, and nothing is delivered to them).
fn netlink_to(me: &Arc<Thread>, to: Option<(u64, u64)>) -> Result<(), Errno> {
    if let Some((addr, len)) = to {
        let (pid, groups) = read_nl(addr, len)?;
        if groups != 0 {
            super::cred::privileged(me)?;
        }
        if pid != 0 {
            return Err(Errno::ECONNREFUSED);
        }
    }
    Ok(())
}

/// Whether the caller is privileged (a netlink request that changes something needs it).
fn is_privileged(me: &Arc<Thread>) -> bool {
    super::cred::privileged(me).is_ok()
}

/// Reads a `struct sockaddr_ll` of `len` bytes at `addr`: its protocol (host order),
/// interface and the first six bytes of `sll_addr` (a MAC). `EINVAL` if short or too long,
/// `EFAULT` if unreadable; as Linux, `bind` asks for `AF_PACKET` (`EINVAL` otherwise) and a
/// send (`!bind`) for an `sll_halen` that fits the length given (`EINVAL`, so above 8 too).
fn read_ll(addr: u64, len: u64, bind: bool) -> Result<(u16, i32, [u8; 6]), Errno> {
    if len > SOCKADDR_MAX || (len as usize) < SOCKADDR_LL {
        return Err(Errno::EINVAL);
    }
    let mut raw = [0u8; SOCKADDR_LL];
    uaccess::copy_from_user(addr, &mut raw)?;
    if bind && u64::from(u16::from_ne_bytes([raw[0], raw[1]])) != AF_PACKET {
        return Err(Errno::EINVAL);
    }
    if !bind && usize::from(raw[11]) + SLL_ADDR > len as usize {
        return Err(Errno::EINVAL);
    }
    let proto = u16::from_be_bytes([raw[2], raw[3]]);
    let ifindex = i32::from_ne_bytes([raw[4], raw[5], raw[6], raw[7]]);
    let mut mac = [0u8; 6];
    mac.copy_from_slice(&raw[SLL_ADDR..SLL_ADDR + 6]);
    Ok((proto, ifindex, mac))
}

/// A `struct sockaddr_ll` of `proto` on `ifindex` with the MAC `mac` (none: `sll_halen` 0),
/// and its length as Linux reports it (up to the MAC's end).
fn sockaddr_ll(
    proto: u16,
    ifindex: i32,
    pkttype: u8,
    mac: Option<[u8; 6]>,
) -> ([u8; SOCKADDR_LL], usize) {
    let mut raw = [0u8; SOCKADDR_LL];
    raw[..2].copy_from_slice(&(AF_PACKET as u16).to_ne_bytes());
    raw[2..4].copy_from_slice(&proto.to_be_bytes());
    raw[4..8].copy_from_slice(&ifindex.to_ne_bytes());
    let hatype = match ifindex {
        net::packet::IF_LO => ARPHRD_LOOPBACK,
        net::packet::IF_ETH => ARPHRD_ETHER,
        _ => 0,
    };
    raw[8..10].copy_from_slice(&hatype.to_ne_bytes());
    raw[10] = pkttype;
    match mac {
        Some(m) => {
            raw[11] = 6;
            raw[SLL_ADDR..SLL_ADDR + 6].copy_from_slice(&m);
            (raw, SLL_ADDR + 6)
        }
        None => (raw, SLL_ADDR),
    }
}

/// The `sockaddr_ll` `recvfrom` gives for a frame a packet socket received (its whole size,
/// as Linux reports it).
fn link_addr(l: &net::stack::LinkInfo) -> [u8; SOCKADDR_LL] {
    sockaddr_ll(l.protocol, l.ifindex, l.pkttype, Some(l.source)).0
}

/// Reads a `struct sockaddr_in` of `len` bytes at `addr`: `EINVAL` if short, `EFAULT` if
/// unreadable, `EAFNOSUPPORT` for another family (`AF_UNSPEC`, which would dissolve a
/// datagram socket's association, is not built).
fn read_addr(addr: u64, len: u64) -> Result<(Ipv4Address, u16), Errno> {
    if len > i32::MAX as u64 || (len as usize) < SOCKADDR_IN {
        return Err(Errno::EINVAL);
    }
    let mut raw = [0u8; SOCKADDR_IN];
    uaccess::copy_from_user(addr, &mut raw)?;
    if u64::from(u16::from_ne_bytes([raw[0], raw[1]])) != AF_INET {
        return Err(Errno::EAFNOSUPPORT);
    }
    let port = u16::from_be_bytes([raw[2], raw[3]]);
    let ip = Ipv4Address::new(raw[4], raw[5], raw[6], raw[7]);
    Ok((ip, port))
}

/// Writes `a` as a `struct sockaddr_in` to `addr` (at most `*lenp` bytes, as Linux cuts it)
/// and the full length to `*lenp`; nothing when `addr` is 0.
fn write_addr(addr: u64, lenp: u64, a: (Ipv4Address, u16)) -> Result<(), Errno> {
    let mut raw = [0u8; SOCKADDR_IN];
    raw[..2].copy_from_slice(&(AF_INET as u16).to_ne_bytes());
    raw[2..4].copy_from_slice(&a.1.to_be_bytes());
    raw[4..8].copy_from_slice(&a.0.octets());
    write_sockaddr(addr, lenp, &raw)
}

/// Writes the socket address `raw` to `addr` (at most `*lenp` bytes, as Linux cuts it) and
/// its full length to `*lenp`; nothing when `addr` is 0.
fn write_sockaddr(addr: u64, lenp: u64, raw: &[u8]) -> Result<(), Errno> {
    if addr == 0 {
        return Ok(());
    }
    let room: i32 = read_user(lenp)?;
    if room < 0 {
        return Err(Errno::EINVAL);
    }
    let n = (room as usize).min(raw.len());
    uaccess::copy_to_user(addr, &raw[..n])?;
    write_user(lenp, &(raw.len() as u32))
}

/// Writes an `AF_UNIX` address without a name (a pair's ends have none) as Linux does.
fn write_unnamed(addr: u64, lenp: u64) -> Result<(), Errno> {
    let room: i32 = read_user(lenp)?;
    if room < 0 {
        return Err(Errno::EINVAL);
    }
    if room >= 2 {
        write_user(addr, &(AF_UNIX as u16))?;
    }
    write_user(lenp, &2u32)
}

/// `socket(domain, type, protocol)`: `AF_INET` streams (TCP), datagrams (UDP) and raw ICMP
/// sockets (`ping`: any process may open one), `IPPROTO_RAW` ones for root (`EPERM`
/// otherwise; `Kind::RawIp`: for `ioctl`s only), and `AF_PACKET` raw and datagram sockets
/// of protocol `htons(ethertype)` (`EPERM` unless privileged, as Linux without
/// `CAP_NET_RAW`; `ESOCKTNOSUPPORT` for other types), and `AF_NETLINK` route sockets.
pub fn socket(me: &Arc<Thread>, _: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    let flags = a[1] & !0xf;
    if flags & !(SOCK_NONBLOCK | SOCK_CLOEXEC) != 0 {
        return Err(Errno::EINVAL);
    }
    let kind = a[1] & 0xf;
    if kind == 0 || kind >= SOCK_MAX {
        return Err(Errno::EINVAL);
    }
    if a[0] == AF_PACKET {
        return packet_socket(me, kind, a[2], flags);
    }
    if a[0] == AF_NETLINK {
        return netlink_socket(me, kind, a[2], flags);
    }
    if a[0] != AF_INET {
        return Err(Errno::EAFNOSUPPORT);
    }
    if (kind, a[2]) == (SOCK_RAW, IPPROTO_RAW) {
        super::cred::privileged(me)?;
        if !me.process.files.lock().has_room() {
            return Err(Errno::EMFILE);
        }
        let inst = crate::net::instance_of(&me.process)?;
        return install(me, Socket::of_kind(inst, 0, Kind::RawIp), flags);
    }
    let proto = match (kind, a[2]) {
        (SOCK_STREAM, 0 | IPPROTO_TCP) => Proto::Tcp,
        (SOCK_DGRAM, 0 | IPPROTO_UDP) => Proto::Udp,
        (SOCK_RAW, IPPROTO_ICMP) => Proto::Icmp,
        (SOCK_STREAM | SOCK_DGRAM | SOCK_RAW, _) => return Err(Errno::EPROTONOSUPPORT),
        _ => return Err(Errno::ESOCKTNOSUPPORT),
    };
    if !me.process.files.lock().has_room() {
        return Err(Errno::EMFILE);
    }
    let inst = crate::net::instance_of(&me.process)?;
    let id = inst.run(|s, _, _| s.socket(proto))?;
    let uid = crate::fs::perm::new_owner(&me.process).0;
    install(me, Socket::new(inst, id, uid), flags)
}

/// `socket(AF_PACKET, kind, protocol)`: a packet socket of the caller's instance receiving the
/// ethertype `protocol` names in network order (only its low 16 bits count, as Linux's),
/// whole frames (`SOCK_RAW`) or without their Ethernet header (`SOCK_DGRAM`).
fn packet_socket(me: &Arc<Thread>, kind: u64, protocol: u64, flags: u64) -> SysResult {
    super::cred::privileged(me)?;
    if kind != SOCK_RAW && kind != SOCK_DGRAM {
        return Err(Errno::ESOCKTNOSUPPORT);
    }
    if !me.process.files.lock().has_room() {
        return Err(Errno::EMFILE);
    }
    let proto = u16::from_be(protocol as u16);
    let inst = crate::net::instance_of(&me.process)?;
    let id = inst.peek(|s| s.packet_socket(proto, kind == SOCK_DGRAM))?;
    install(me, Socket::of_kind(inst, id, Kind::Packet), flags)
}

/// `socket(AF_NETLINK, kind, protocol)`: a route netlink socket (`SOCK_RAW` or `SOCK_DGRAM`,
/// else `ESOCKTNOSUPPORT`; `EPROTONOSUPPORT` for another protocol than `NETLINK_ROUTE`).
fn netlink_socket(me: &Arc<Thread>, kind: u64, protocol: u64, flags: u64) -> SysResult {
    if kind != SOCK_RAW && kind != SOCK_DGRAM {
        return Err(Errno::ESOCKTNOSUPPORT);
    }
    if protocol != net::netlink::NETLINK_ROUTE {
        return Err(Errno::EPROTONOSUPPORT);
    }
    if !me.process.files.lock().has_room() {
        return Err(Errno::EMFILE);
    }
    let s = Netlink::new(kind as i32, is_privileged(me));
    let name = alloc::format!("socket:[{}]", s.ino).into_bytes();
    install_node(me, Node::Netlink(s), name, flags)
}

/// Gives socket `s` a descriptor (`SOCK_NONBLOCK`, `SOCK_CLOEXEC` from `flags`).
fn install(me: &Arc<Thread>, s: Arc<Socket>, flags: u64) -> SysResult {
    let name = alloc::format!("socket:[{}]", s.ino).into_bytes();
    install_node(me, Node::Inet(s), name, flags)
}

/// Gives socket `node`, named `name`, a descriptor (`SOCK_NONBLOCK`, `SOCK_CLOEXEC` from
/// `flags`).
fn install_node(me: &Arc<Thread>, node: Node, name: Vec<u8>, flags: u64) -> SysResult {
    let nonblock = if flags & SOCK_NONBLOCK != 0 {
        O_NONBLOCK
    } else {
        0
    };
    let f = OpenFile::new(node, O_RDWR | nonblock, name);
    let r = me
        .process
        .files
        .lock()
        .insert(f.clone(), flags & SOCK_CLOEXEC != 0, 0);
    // On failure `f` closes the socket here, outside the descriptor table's lock.
    r.map(|fd| fd as u64)
}

/// `bind(fd, addr, addrlen)`; a packet socket's to a `struct sockaddr_ll` (`ENODEV` for an
/// interface the instance does not have), a netlink socket's to a `struct sockaddr_nl`
/// (groups are accepted and deliver nothing).
pub fn bind(me: &Arc<Thread>, _: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    match sock_of(me, a[0])? {
        (_, Sock::Packet(s)) => {
            let (proto, ifindex, _) = read_ll(a[1], a[2], true)?;
            s.inst.peek(|st| st.packet_bind(s.id, proto, ifindex))?;
            return Ok(0);
        }
        (_, Sock::Netlink(s)) => {
            let (pid, _groups) = read_nl(a[1], a[2])?;
            s.bind(pid, me.process.pid)?;
            return Ok(0);
        }
        _ => {}
    }
    let (_, s) = inet_of(me, a[0], Errno::EINVAL)?;
    let (ip, port) = read_addr(a[1], a[2])?;
    s.inst.run(|st, ports, _| st.bind(s.id, ip, port, ports))?;
    Ok(0)
}

/// `listen(fd, backlog)`.
pub fn listen(me: &Arc<Thread>, _: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    let (_, s) = inet_of(me, a[0], Errno::EINVAL)?;
    s.inst
        .run(|st, ports, _| st.listen(s.id, a[1] as i32, ports))?;
    Ok(0)
}

/// `connect(fd, addr, addrlen)`: a stream waits for the handshake (`EINPROGRESS` without
/// waiting when `O_NONBLOCK`: `poll` for `POLLOUT`, then `SO_ERROR`); a datagram socket
/// only records its peer.
pub fn connect(me: &Arc<Thread>, _: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    if let (_, Sock::Netlink(s)) = sock_of(me, a[0])? {
        // Only to the kernel, which every send goes to anyway; binds as Linux does.
        netlink_to(me, Some((a[1], a[2])))?;
        s.bind(0, me.process.pid)?;
        return Ok(0);
    }
    let (f, s) = inet_of(me, a[0], Errno::EISCONN)?;
    let (ip, port) = read_addr(a[1], a[2])?;
    let id = s.id;
    s.inst
        .run(|st, ports, now| st.connect(id, ip, port, ports, now))?;
    if s.inst.peek(|st| st.is_dgram(id)) {
        return Ok(0);
    }
    let outcome = |st: &mut net::Stack, _: &mut net::PortMap, _| {
        st.connect_outcome(id).unwrap_or(Err(Errno::EAGAIN))
    };
    match s
        .inst
        .wait_for(s.patience(Direction::Send, f.nonblock()), outcome)
    {
        Err(Errno::EAGAIN) => Err(Errno::EINPROGRESS),
        r => r.map(|()| 0),
    }
}

/// `accept(fd, addr, addrlen)`.
pub fn accept(me: &Arc<Thread>, frame: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    accept4(me, frame, [a[0], a[1], a[2], 0, 0, 0])
}

/// `accept4(fd, addr, addrlen, flags)`: waits for a connection (`EAGAIN` with
/// `O_NONBLOCK`); the new descriptor takes only `flags`' `SOCK_NONBLOCK`/`SOCK_CLOEXEC`.
pub fn accept4(me: &Arc<Thread>, _: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    if a[3] & !(SOCK_NONBLOCK | SOCK_CLOEXEC) != 0 {
        return Err(Errno::EINVAL);
    }
    let (f, s) = inet_of(me, a[0], Errno::EINVAL)?;
    if a[1] != 0 {
        let room: i32 = read_user(a[2])?;
        if room < 0 {
            return Err(Errno::EINVAL);
        }
    }
    if !me.process.files.lock().has_room() {
        return Err(Errno::EMFILE);
    }
    let patience = s.patience(Direction::Receive, f.nonblock());
    let id = s.inst.wait_for(patience, |st, _, _| st.accept(s.id))?;
    let conn = Socket::new(
        s.inst.clone(),
        id,
        crate::fs::perm::new_owner(&me.process).0,
    );
    let peer = s.inst.peek(|st| st.peer_addr(id));
    let fd = install(me, conn, a[3])?;
    if let Ok(peer) = peer {
        if let Err(e) = write_addr(a[1], a[2], peer) {
            let undone = me.process.files.lock().close(fd as i32);
            drop(undone);
            return Err(e);
        }
    }
    Ok(fd)
}

/// `getsockname(fd, addr, addrlen)`; a packet socket's protocol, interface and the
/// instance's MAC (none while bound to no interface).
pub fn getsockname(me: &Arc<Thread>, _: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    match sock_of(me, a[0])?.1 {
        Sock::Pair(_) => write_unnamed(a[1], a[2])?,
        Sock::Inet(s) => write_addr(a[1], a[2], s.inst.peek(|st| st.local_addr(s.id))?)?,
        Sock::Packet(s) => {
            let ((proto, ifindex), mac) = s
                .inst
                .peek(|st| st.packet_name(s.id).map(|n| (n, st.mac())))?;
            let mac = (ifindex != 0).then_some(mac.0);
            let (raw, len) = sockaddr_ll(proto, ifindex, 0, mac);
            write_sockaddr(a[1], a[2], &raw[..len])?
        }
        Sock::Netlink(s) => write_sockaddr(a[1], a[2], &sockaddr_nl(s.port()))?,
    }
    Ok(0)
}

/// `getpeername(fd, addr, addrlen)`: `ENOTCONN` unless connected (`EOPNOTSUPP` for a packet
/// socket).
pub fn getpeername(me: &Arc<Thread>, _: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    match sock_of(me, a[0])?.1 {
        Sock::Pair(_) => write_unnamed(a[1], a[2])?,
        Sock::Inet(s) => write_addr(a[1], a[2], s.inst.peek(|st| st.peer_addr(s.id))?)?,
        Sock::Packet(_) => return Err(Errno::EOPNOTSUPP),
        Sock::Netlink(_) => write_sockaddr(a[1], a[2], &sockaddr_nl(0))?,
    }
    Ok(0)
}

/// `setsockopt(fd, level, name, value, len)`: integer options (`EINVAL` for a shorter
/// value, `ENOPROTOOPT` for options and levels Reef does not have).
pub fn setsockopt(me: &Arc<Thread>, _: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    let (_, s) = sock_of(me, a[0])?;
    if let (Sock::Inet(s) | Sock::Packet(s), Some(d)) = (&s, timeout_option(a[1], a[2])) {
        return set_timeout(s, d, a[3], a[4]);
    }
    if (a[4] as usize) < 4 {
        return Err(Errno::EINVAL);
    }
    let value: i32 = read_user(a[3])?;
    match s {
        Sock::Pair(_) | Sock::Packet(_) => Err(Errno::ENOPROTOOPT),
        Sock::Netlink(s) => {
            s.set_option(a[1] as i32, a[2] as i32, value, is_privileged(me))?;
            Ok(0)
        }
        Sock::Inet(s) => {
            s.inst
                .peek(|st| st.set_option(s.id, a[1] as i32, a[2] as i32, value))?;
            Ok(0)
        }
    }
}

/// `SO_RCVTIMEO` (`SO_RCVTIMEO_OLD`, the same on x86-64).
const SO_RCVTIMEO: i32 = 20;
/// `SO_SNDTIMEO`.
const SO_SNDTIMEO: i32 = 21;

/// The timeout a `(level, name)` option sets, if it is one.
fn timeout_option(level: u64, name: u64) -> Option<Direction> {
    match (level as i32, name as i32) {
        (net::stack::SOL_SOCKET, SO_RCVTIMEO) => Some(Direction::Receive),
        (net::stack::SOL_SOCKET, SO_SNDTIMEO) => Some(Direction::Send),
        _ => None,
    }
}

/// `setsockopt` of `SO_RCVTIMEO`/`SO_SNDTIMEO`: a `struct timeval` at `value` (`len` at least
/// its 16 bytes, else `EINVAL`; microseconds outside a second `EDOM`). Zero waits for ever, a
/// negative time not at all (Linux's rules); anything else bounds each wait of a call in that
/// direction, which then answers `EAGAIN` (`connect`: `EINPROGRESS`).
fn set_timeout(s: &Socket, d: Direction, value: u64, len: u64) -> SysResult {
    if len < 16 {
        return Err(Errno::EINVAL);
    }
    let tv: [i64; 2] = read_user(value)?;
    let ns = match tv {
        [_, usec] if !(0..1_000_000).contains(&usec) => return Err(Errno::EDOM),
        [sec, _] if sec < 0 => crate::net::NO_WAIT,
        [0, 0] => crate::net::NO_TIMEOUT,
        [sec, usec] => (sec as u64)
            .saturating_mul(1_000_000_000)
            .saturating_add(usec as u64 * 1000)
            .min(crate::net::NO_WAIT - 1),
    };
    s.set_timeout(d, ns);
    Ok(0)
}

/// `getsockopt` of `SO_RCVTIMEO`/`SO_SNDTIMEO`: the `struct timeval` (zero when it waits for
/// ever or not at all, as Linux shows both), cut to `room` bytes.
fn get_timeout(s: &Socket, d: Direction, value: u64, lenp: u64, room: i32) -> SysResult {
    let ns = match s.timeout(d) {
        crate::net::NO_TIMEOUT | crate::net::NO_WAIT => 0,
        ns => ns,
    };
    let tv = [
        (ns / 1_000_000_000) as i64,
        (ns % 1_000_000_000 / 1000) as i64,
    ];
    let mut raw = [0u8; 16];
    raw[..8].copy_from_slice(&tv[0].to_ne_bytes());
    raw[8..].copy_from_slice(&tv[1].to_ne_bytes());
    let n = (room as usize).min(16);
    uaccess::copy_to_user(value, &raw[..n])?;
    write_user(lenp, &(n as u32))?;
    Ok(0)
}

/// `getsockopt(fd, level, name, value, lenp)`: integer options, cut to `*lenp` bytes as
/// Linux does; `EOPNOTSUPP` for an unknown level.
pub fn getsockopt(me: &Arc<Thread>, _: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    let (_, s) = sock_of(me, a[0])?;
    let room: i32 = read_user(a[4])?;
    if room < 0 {
        return Err(Errno::EINVAL);
    }
    if let (Sock::Inet(s) | Sock::Packet(s), Some(d)) = (&s, timeout_option(a[1], a[2])) {
        return get_timeout(s, d, a[3], a[4], room);
    }
    let level = a[1] as i32;
    if let Sock::Packet(s) = &s {
        return packet_getsockopt(s, level, a[2] as i32, a[3], a[4], room);
    }
    if let Sock::Netlink(s) = &s {
        let value = s.option(level, a[2] as i32)?;
        let n = (room as usize).min(4);
        uaccess::copy_to_user(a[3], &value.to_ne_bytes()[..n])?;
        write_user(a[4], &(n as u32))?;
        return Ok(0);
    }
    // The levels a socket has: the socket's, IP's (an `AF_INET` one) and its protocol's.
    let own = match &s {
        Sock::Pair(_) | Sock::Packet(_) | Sock::Netlink(_) => net::stack::SOL_SOCKET,
        Sock::Inet(s) => match s
            .inst
            .peek(|st| st.option(s.id, net::stack::SOL_SOCKET, net::stack::SO_TYPE))
        {
            Ok(net::stack::SOCK_DGRAM) => IPPROTO_UDP as i32,
            Ok(net::stack::SOCK_RAW) => IPPROTO_ICMP as i32,
            _ => net::stack::IPPROTO_TCP,
        },
    };
    let ip = if matches!(s, Sock::Inet(_)) {
        IPPROTO_IP
    } else {
        net::stack::SOL_SOCKET
    };
    if ![net::stack::SOL_SOCKET, ip, own].contains(&level) {
        return Err(Errno::EOPNOTSUPP);
    }
    let value = match s {
        Sock::Pair(_) | Sock::Packet(_) | Sock::Netlink(_) => match (level, a[2] as i32) {
            (net::stack::SOL_SOCKET, net::stack::SO_TYPE) => net::stack::SOCK_STREAM,
            (net::stack::SOL_SOCKET, net::stack::SO_ERROR) => 0,
            _ => return Err(Errno::ENOPROTOOPT),
        },
        Sock::Inet(s) => s.inst.peek(|st| st.option(s.id, level, a[2] as i32))?,
    };
    let n = (room as usize).min(4);
    uaccess::copy_to_user(a[3], &value.to_ne_bytes()[..n])?;
    write_user(a[4], &(n as u32))?;
    Ok(0)
}

/// A packet socket's `getsockopt`: `SO_TYPE`, `SO_ERROR` and `PACKET_STATISTICS` (which
/// starts the counts again), cut to `room` bytes; `ENOPROTOOPT` for the rest.
fn packet_getsockopt(
    s: &Socket,
    level: i32,
    name: i32,
    value: u64,
    lenp: u64,
    room: i32,
) -> SysResult {
    let mut raw = [0u8; 8];
    let len = match (level, name) {
        (net::stack::SOL_SOCKET, net::stack::SO_TYPE) => {
            let kind = if s.inst.peek(|st| st.packet_is_dgram(s.id))? {
                net::stack::SOCK_DGRAM
            } else {
                net::stack::SOCK_RAW
            };
            raw[..4].copy_from_slice(&kind.to_ne_bytes());
            4
        }
        (net::stack::SOL_SOCKET, net::stack::SO_ERROR) => 4,
        (SOL_PACKET, PACKET_STATISTICS) => {
            uaccess::check_range(value, (room as usize).min(8))?;
            let (packets, drops) = s.inst.peek(|st| st.packet_stats(s.id))?;
            raw[..4].copy_from_slice(&packets.to_ne_bytes());
            raw[4..].copy_from_slice(&drops.to_ne_bytes());
            8
        }
        _ => return Err(Errno::ENOPROTOOPT),
    };
    let n = (room as usize).min(len);
    uaccess::copy_to_user(value, &raw[..n])?;
    write_user(lenp, &(n as u32))?;
    Ok(0)
}

/// `shutdown(fd, how)`: `SHUT_RD`, `SHUT_WR` or `SHUT_RDWR`, else `EINVAL`.
pub fn shutdown(me: &Arc<Thread>, _: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    match sock_of(me, a[0])?.1 {
        Sock::Pair(end) => end.shutdown(a[1])?,
        Sock::Packet(_) | Sock::Netlink(_) => return Err(Errno::EOPNOTSUPP),
        Sock::Inet(s) => {
            let how = match a[1] {
                0 => net::stack::Shut::Read,
                1 => net::stack::Shut::Write,
                2 => net::stack::Shut::Both,
                _ => return Err(Errno::EINVAL),
            };
            s.inst.run(|st, _, _| st.shutdown(s.id, how))?;
        }
    }
    Ok(0)
}

/// Sends `data` on `fd` (to the address of `to`'s length at its pointer, for a datagram or
/// packet socket) with `flags`; SIGPIPE with `EPIPE` unless `MSG_NOSIGNAL`.
fn send(me: &Arc<Thread>, fd: u64, data: &[u8], to: Option<(u64, u64)>, flags: u64) -> SysResult {
    if flags & !(MSG_DONTWAIT | MSG_NOSIGNAL | MSG_MORE) != 0 {
        return Err(Errno::EOPNOTSUPP);
    }
    let (f, s) = sock_of(me, fd)?;
    let nonblock = f.nonblock() || flags & MSG_DONTWAIT != 0;
    let inet_to = match (&s, to) {
        (Sock::Pair(_) | Sock::Inet(_), Some((addr, len))) => Some(read_addr(addr, len)?),
        _ => None,
    };
    let r = match s {
        Sock::Pair(_) if to.is_some() => return Err(Errno::EISCONN),
        Sock::Pair(end) => end.write(data, nonblock),
        Sock::Inet(s) => s.send(data, inet_to, nonblock),
        Sock::Packet(s) => {
            let to = match to {
                Some((addr, len)) => Some(read_ll(addr, len, false)?),
                None => None,
            };
            if s.inst.peek(|st| st.packet_is_dgram(s.id))? {
                s.send_datagram(data, to)
            } else {
                s.send_frame(data, to.map(|t| t.1))
            }
        }
        Sock::Netlink(s) => {
            netlink_to(me, to)?;
            s.send(data, is_privileged(me), me.process.pid)
        }
    };
    if flags & MSG_NOSIGNAL != 0 {
        r.map(|n| n as u64)
    } else {
        sigpipe(me, r).map(|n| n as u64)
    }
}

/// What a receive got: the bytes, the datagram's whole length and its source.
struct Got {
    /// The bytes, at most the length asked for.
    data: Vec<u8>,
    /// The datagram's whole length (streams: the bytes).
    full: usize,
    /// The source (datagrams).
    from: Option<(Ipv4Address, u16)>,
    /// A packet socket's frame: its `sockaddr_ll`.
    link: Option<[u8; SOCKADDR_LL]>,
    /// A netlink answer: from the kernel.
    kernel: bool,
}

/// Receives up to `len` bytes from `fd` with `flags`, then hands them to `deliver` (which
/// copies them out). A socket's data stays queued unless `deliver` succeeds (a bad buffer
/// loses nothing) and `MSG_PEEK` is not set.
fn recv(
    me: &Arc<Thread>,
    fd: u64,
    len: usize,
    flags: u64,
    deliver: impl FnOnce(&Got) -> Result<(), Errno>,
) -> Result<Got, Errno> {
    if flags & !(MSG_PEEK | MSG_TRUNC | MSG_DONTWAIT | MSG_WAITALL | MSG_CMSG_CLOEXEC) != 0
        || flags & MSG_OOB != 0
    {
        return Err(Errno::EOPNOTSUPP);
    }
    let (f, s) = sock_of(me, fd)?;
    let nonblock = f.nonblock() || flags & MSG_DONTWAIT != 0;
    let mut buf = crate::mm::zeroed_buffer(len.min(MAX_IO))?;
    // What was received: its length, the datagram's whole length and source, and the socket
    // whose queue still holds it (a peek to be taken once delivered).
    let mut link = None;
    let mut answer = None;
    let (n, full, from, held) = match s {
        Sock::Netlink(s) => {
            let (n, full) = s.recv(&mut buf, true, nonblock)?;
            answer = Some(s);
            (n, full, None, None)
        }
        Sock::Pair(end) => {
            if flags & MSG_PEEK != 0 {
                return Err(Errno::EOPNOTSUPP);
            }
            let n = end.read(&mut buf, nonblock)?;
            (n, n, None, None)
        }
        Sock::Packet(s) => {
            let patience = s.patience(Direction::Receive, nonblock);
            let (n, full, info) = s
                .inst
                .wait_for(patience, |st, _, _| st.packet_recv(s.id, &mut buf, true))?;
            link = Some(link_addr(&info));
            (n, full, None, (flags & MSG_PEEK == 0).then_some(s))
        }
        Sock::Inet(s)
            if flags & MSG_WAITALL != 0
                && flags & MSG_PEEK == 0
                && !s.inst.peek(|st| st.is_dgram(s.id)) =>
        {
            // Fill the buffer: stop early only at the end, an error or a signal.
            let patience = s.patience(Direction::Receive, nonblock);
            let mut done = 0;
            while done < buf.len() {
                let r = s
                    .inst
                    .wait_for(patience, |st, _, _| st.recv(s.id, &mut buf[done..], false));
                match r {
                    Ok((0, _, _)) => break,
                    Ok((n, _, _)) => done += n,
                    Err(_) if done > 0 => break,
                    Err(e) => return Err(e),
                }
            }
            (done, done, None, None)
        }
        Sock::Inet(s) => {
            let patience = s.patience(Direction::Receive, nonblock);
            let (n, full, from) = s
                .inst
                .wait_for(patience, |st, _, _| st.recv(s.id, &mut buf, true))?;
            (n, full, from, (flags & MSG_PEEK == 0).then_some(s))
        }
    };
    buf.truncate(n);
    let got = Got {
        data: buf,
        full,
        from,
        link,
        kernel: answer.is_some(),
    };
    deliver(&got)?;
    if let Some(s) = answer.filter(|_| flags & MSG_PEEK == 0) {
        s.take();
    }
    if let Some(s) = held {
        // Take what was looked at (a stream: the same bytes; a datagram or frame: all of it).
        if s.is_packet() {
            s.inst.peek(|st| st.packet_recv(s.id, &mut [], false))?;
        } else {
            let mut sink = crate::mm::zeroed_buffer(n)?;
            s.inst.run(|st, _, _| st.recv(s.id, &mut sink, false))?;
        }
    }
    Ok(got)
}

/// `sendto(fd, buf, len, flags, addr, addrlen)`: up to 1 MiB of `buf`.
pub fn sendto(me: &Arc<Thread>, _: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    let len = (a[2] as usize).min(MAX_IO);
    uaccess::check_range(a[1], len)?;
    let to = (a[4] != 0).then_some((a[4], a[5]));
    let mut buf = crate::mm::zeroed_buffer(len)?;
    uaccess::copy_from_user(a[1], &mut buf)?;
    send(me, a[0], &buf, to, a[3])
}

/// `recvfrom(fd, buf, len, flags, addr, addrlen)`: up to 1 MiB into `buf`; the source of a
/// datagram to `addr` (a pair's ends have no address: `*addrlen` becomes 0, as on Linux).
/// With `MSG_TRUNC` a datagram's whole length is returned.
pub fn recvfrom(me: &Arc<Thread>, _: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    let len = (a[2] as usize).min(MAX_IO);
    uaccess::check_range(a[1], len)?;
    if a[4] != 0 {
        let room: i32 = read_user(a[5])?;
        if room < 0 {
            return Err(Errno::EINVAL);
        }
    }
    let got = recv(me, a[0], len, a[3], |g| {
        uaccess::copy_to_user(a[1], &g.data)
    })?;
    if a[4] != 0 {
        match (got.from, &got.link) {
            (Some(from), _) => write_addr(a[4], a[5], from)?,
            (None, Some(link)) => write_sockaddr(a[4], a[5], link)?,
            (None, None) if got.kernel => write_sockaddr(a[4], a[5], &sockaddr_nl(0))?,
            (None, None) if sock_of(me, a[0]).is_ok_and(|(_, s)| matches!(s, Sock::Pair(_))) => {
                write_user(a[5], &0u32)?
            }
            (None, None) => {}
        }
    }
    Ok(if a[3] & MSG_TRUNC != 0 {
        got.full
    } else {
        got.data.len()
    } as u64)
}

/// `struct msghdr`'s fields Reef reads: name, name length, iovec array, its length.
struct MsgHdr {
    /// `msg_name`.
    name: u64,
    /// `msg_namelen`.
    namelen: u32,
    /// `msg_iov`.
    iov: u64,
    /// `msg_iovlen`.
    iovlen: u64,
}

/// Offset of `msg_namelen` in `struct msghdr`.
const MSG_NAMELEN: u64 = 8;
/// Offset of `msg_controllen`.
const MSG_CONTROLLEN: u64 = 40;
/// Offset of `msg_flags`.
const MSG_FLAGS: u64 = 48;

/// Reads the `struct msghdr` at `addr`: `EMSGSIZE` for more buffers than `IOV_MAX`, as Linux.
fn read_msghdr(addr: u64) -> Result<MsgHdr, Errno> {
    let raw: [u64; 7] = read_user(addr)?;
    if raw[3] > IOV_MAX {
        return Err(Errno::EMSGSIZE);
    }
    Ok(MsgHdr {
        name: raw[0],
        namelen: raw[1] as u32,
        iov: raw[2],
        iovlen: raw[3],
    })
}

/// `sendmsg(fd, msg, flags)`: the gathered buffers (at most 1 MiB) as one send.
pub fn sendmsg(me: &Arc<Thread>, _: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    let m = read_msghdr(a[1])?;
    let to = (m.name != 0).then_some((m.name, u64::from(m.namelen)));
    let mut data = Vec::new();
    for [base, len] in iovecs(m.iov, m.iovlen)? {
        let len = (len as usize).min(MAX_IO - data.len());
        let start = data.len();
        data.try_reserve(len).map_err(|_| Errno::ENOMEM)?;
        data.resize(start + len, 0);
        uaccess::copy_from_user(base, &mut data[start..])?;
    }
    send(me, a[0], &data, to, a[2])
}

/// `recvmsg(fd, msg, flags)`: one receive scattered over the buffers; the source to
/// `msg_name`, no control data, `MSG_TRUNC` in `msg_flags` for a cut datagram.
pub fn recvmsg(me: &Arc<Thread>, _: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    let m = read_msghdr(a[1])?;
    let vecs = iovecs(m.iov, m.iovlen)?;
    let total = vecs
        .iter()
        .map(|v| v[1] as usize)
        .sum::<usize>()
        .min(MAX_IO);
    let got = recv(me, a[0], total, a[2], |g| {
        let mut done = 0;
        for &[base, len] in &vecs {
            if done == g.data.len() {
                break;
            }
            let take = (len as usize).min(g.data.len() - done);
            uaccess::copy_to_user(base, &g.data[done..done + take])?;
            done += take;
        }
        Ok(())
    })?;
    if m.name != 0 {
        match (got.from, got.link) {
            (Some(from), _) => write_addr(m.name, a[1] + MSG_NAMELEN, from)?,
            (None, Some(link)) => write_sockaddr(m.name, a[1] + MSG_NAMELEN, &link)?,
            (None, None) if got.kernel => {
                write_sockaddr(m.name, a[1] + MSG_NAMELEN, &sockaddr_nl(0))?
            }
            (None, None) => write_user(a[1] + MSG_NAMELEN, &0u32)?,
        }
    }
    write_user(a[1] + MSG_CONTROLLEN, &0u64)?;
    let cut = if got.full > got.data.len() {
        MSG_TRUNC as i32
    } else {
        0
    };
    write_user(a[1] + MSG_FLAGS, &cut)?;
    Ok(if a[2] & MSG_TRUNC != 0 {
        got.full
    } else {
        got.data.len()
    } as u64)
}

/// `socketpair(domain, type, protocol, sv)`: `AF_UNIX` stream pairs only. As Linux:
/// `EOPNOTSUPP` for `AF_INET` and `AF_INET6` (no pairs there), `EAFNOSUPPORT` for another
/// domain, `EINVAL` for an unknown type or flag, `EPROTONOSUPPORT` for a protocol other than 0
/// or `PF_UNIX`; and `EOPNOTSUPP` for datagram and seqpacket pairs, which Reef does not have.
pub fn socketpair(me: &Arc<Thread>, _: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    match a[0] {
        AF_UNIX => {}
        AF_INET | AF_INET6 => return Err(Errno::EOPNOTSUPP),
        _ => return Err(Errno::EAFNOSUPPORT),
    }
    let flags = a[1] & !0xf;
    if flags & !(SOCK_NONBLOCK | SOCK_CLOEXEC) != 0 {
        return Err(Errno::EINVAL);
    }
    match a[1] & 0xf {
        SOCK_STREAM => {}
        SOCK_DGRAM | SOCK_SEQPACKET => return Err(Errno::EOPNOTSUPP),
        _ => return Err(Errno::EINVAL),
    }
    if a[2] != 0 && a[2] != AF_UNIX {
        return Err(Errno::EPROTONOSUPPORT);
    }
    uaccess::check_range(a[3], 8)?;
    let nonblock = if flags & SOCK_NONBLOCK != 0 {
        O_NONBLOCK
    } else {
        0
    };
    let cloexec = flags & SOCK_CLOEXEC != 0;
    let (x, y) = unix::pair();
    let open = |e: Arc<unix::SocketEnd>| {
        let name = alloc::format!("socket:[{}]", e.id).into_bytes();
        OpenFile::new(Node::Socket(e), O_RDWR | nonblock, name)
    };
    install_pair(me, [open(x), open(y)], cloexec, a[3])
}

/// `reef_netd(op, arg)`: the network server's calls (`net::server`). `REEF_NETD_ATTACH`
/// writes `{ u64 region, region_pages, ports, port_pages; }` to `arg` (`EPERM` unless a
/// member of `fleet/net`, `EBUSY`, `ENOMEM`, `EFAULT`: the mappings are undone);
/// `REEF_NETD_KICK` takes what the server put in the rings of mask `arg` (`EPERM` unless the
/// attached server, `EINVAL`). `EINVAL` for another `op`.
pub fn reef_netd(me: &Arc<Thread>, _: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    let p = &me.process;
    match a[0] {
        abi::reef::REEF_NETD_ATTACH => {
            let (region, ports) = crate::net::server::attach(p)?;
            let info = [
                region,
                net::server::REGION_PAGES as u64,
                ports,
                net::server::PORT_PAGES as u64,
            ];
            let mut bytes = [0u8; 32];
            for (chunk, v) in bytes.chunks_mut(8).zip(info) {
                chunk.copy_from_slice(&v.to_le_bytes());
            }
            if let Err(e) = uaccess::copy_to_user(a[1], &bytes) {
                crate::net::server::process_gone(p.pid);
                let vm = p.vm();
                let _ = vm.unmap(
                    region,
                    net::server::REGION_PAGES as u64 * crate::vm::PAGE_SIZE,
                );
                let _ = vm.unmap(ports, net::server::PORT_PAGES as u64 * crate::vm::PAGE_SIZE);
                return Err(e);
            }
            Ok(0)
        }
        abi::reef::REEF_NETD_KICK => {
            crate::net::server::kick(p.pid, a[1])?;
            Ok(0)
        }
        _ => Err(Errno::EINVAL),
    }
}

/// `reef_net_mode(pid, mode)`: `netctl server|kernel|direct|address PID` (`net::set_mode`).
/// `EPERM` unless root, `ESRCH`, `EINVAL` (mode), `ENODEV` (no network server, or no NIC for
/// library mode), `ENOSPC` (no free slot or NIC), `EADDRNOTAVAIL`.
pub fn reef_net_mode(me: &Arc<Thread>, _: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    super::cred::privileged(me)?;
    use crate::net::Mode;
    let mode = match a[1] {
        abi::reef::REEF_NET_SERVER => Mode::Server,
        abi::reef::REEF_NET_KERNEL => Mode::Kernel,
        abi::reef::REEF_NET_DIRECT => Mode::Direct,
        abi::reef::REEF_NET_ADDRESS => Mode::Address,
        _ => return Err(Errno::EINVAL),
    };
    let pid = u32::try_from(a[0]).map_err(|_| Errno::ESRCH)?;
    let e = crate::proc::lookup(pid).ok_or(Errno::ESRCH)?;
    if !matches!(e.life, crate::proc::table::Life::Alive) {
        return Err(Errno::ESRCH);
    }
    crate::net::set_mode(&e.process, mode)?;
    Ok(0)
}

/// Size of `struct ifreq`: a name of [`IFNAMSIZ`] bytes and a 24-byte union.
const IFREQ: usize = 40;
/// Size of an interface name, its NUL included.
const IFNAMSIZ: usize = 16;
/// Size of `struct ifconf`: `ifc_len`, padding, the buffer's address.
const IFCONF: usize = 16;
/// Size of `struct rtentry` (`SIOCADDRT`, `SIOCDELRT`).
const RTENTRY: usize = 120;

/// `SIOCGIFNAME`.
const SIOCGIFNAME: u64 = 0x8910;
/// `SIOCGIFCONF`.
const SIOCGIFCONF: u64 = 0x8912;
/// `SIOCGIFFLAGS`.
const SIOCGIFFLAGS: u64 = 0x8913;
/// `SIOCGIFADDR`.
const SIOCGIFADDR: u64 = 0x8915;
/// `SIOCGIFDSTADDR`.
const SIOCGIFDSTADDR: u64 = 0x8917;
/// `SIOCGIFBRDADDR`.
const SIOCGIFBRDADDR: u64 = 0x8919;
/// `SIOCGIFNETMASK`.
const SIOCGIFNETMASK: u64 = 0x891b;
/// `SIOCGIFMETRIC`.
const SIOCGIFMETRIC: u64 = 0x891d;
/// `SIOCGIFMTU`.
const SIOCGIFMTU: u64 = 0x8921;
/// `SIOCGIFHWADDR`.
const SIOCGIFHWADDR: u64 = 0x8927;
/// `SIOCGIFINDEX`.
const SIOCGIFINDEX: u64 = 0x8933;
/// `SIOCGIFTXQLEN`.
const SIOCGIFTXQLEN: u64 = 0x8942;
/// `SIOCGIFMAP`.
const SIOCGIFMAP: u64 = 0x8970;
/// `SIOCADDRT`.
const SIOCADDRT: u64 = 0x890b;
/// `SIOCDELRT`.
const SIOCDELRT: u64 = 0x890c;
/// The requests that change an interface (`SIOCSIFFLAGS`, `SIOCSIFADDR`, `SIOCSIFDSTADDR`,
/// `SIOCSIFBRDADDR`, `SIOCSIFNETMASK`, `SIOCSIFMETRIC`, `SIOCSIFMTU`, `SIOCSIFNAME`,
/// `SIOCSIFHWADDR`, `SIOCADDMULTI`, `SIOCDELMULTI`, `SIOCDIFADDR`, `SIOCSIFHWBROADCAST`,
/// `SIOCSIFTXQLEN`, `SIOCSIFMAP`), each with a `struct ifreq`.
const SETTERS: [u64; 15] = [
    0x8914, 0x8916, 0x8918, 0x891a, 0x891c, 0x891e, 0x8922, 0x8923, 0x8924, 0x8931, 0x8932, 0x8936,
    0x8937, 0x8943, 0x8971,
];
/// Requests Linux answers only on an `AF_INET` socket (`inet_ioctl`; on another socket they
/// are `ENOTTY`): the address getters and setters (`SIOCSIFADDR`, `SIOCSIFDSTADDR`,
/// `SIOCSIFBRDADDR`, `SIOCSIFNETMASK`, `SIOCDIFADDR`) and the routes. (`SIOCSIFFLAGS` reaches
/// `devinet_ioctl` too, but `dev_ioctl` answers it on any socket.)
const INET_ONLY: [u64; 11] = [
    SIOCGIFADDR,
    SIOCGIFDSTADDR,
    SIOCGIFBRDADDR,
    SIOCGIFNETMASK,
    0x8916,
    0x8918,
    0x891a,
    0x891c,
    0x8936,
    SIOCADDRT,
    SIOCDELRT,
];

/// Whether `cmd` is one of the interface and route requests [`interface_ioctl`] answers.
pub fn is_interface_request(cmd: u64) -> bool {
    matches!(
        cmd,
        SIOCGIFNAME
            | SIOCGIFCONF
            | SIOCGIFFLAGS
            | SIOCGIFADDR
            | SIOCGIFDSTADDR
            | SIOCGIFBRDADDR
            | SIOCGIFNETMASK
            | SIOCGIFMETRIC
            | SIOCGIFMTU
            | SIOCGIFHWADDR
            | SIOCGIFINDEX
            | SIOCGIFTXQLEN
            | SIOCGIFMAP
            | SIOCADDRT
            | SIOCDELRT
    ) || SETTERS.contains(&cmd)
}

/// Writes `a` as a `struct sockaddr_in` at the start of `out`.
fn put_sockaddr(out: &mut [u8], a: Ipv4Address) {
    out[..16].fill(0);
    out[..2].copy_from_slice(&(AF_INET as u16).to_ne_bytes());
    out[4..8].copy_from_slice(&a.octets());
}

/// `ioctl` of an interface or route request (`is_interface_request`) on a socket (`inet`: an
/// `AF_INET` one), as Linux answers them for Reef's interfaces (`net::ifaces`): the getters
/// fill the caller's `struct ifreq` (`ENODEV` for an unknown name or index), `SIOCGIFCONF`
/// lists the interfaces with their addresses (a null buffer: the length needed). The setters
/// and route changes are `EPERM` for a caller without privilege and `EOPNOTSUPP` for root
/// (`ENODEV` first for an unknown name): Reef's interfaces and routes are fixed.
pub fn interface_ioctl(me: &Arc<Thread>, inet: bool, cmd: u64, arg: u64) -> SysResult {
    use crate::net::ifaces;
    if !inet && INET_ONLY.contains(&cmd) {
        return Err(Errno::ENOTTY);
    }
    match cmd {
        SIOCGIFCONF => return interface_list(arg),
        SIOCADDRT | SIOCDELRT => {
            super::cred::privileged(me)?;
            let mut rt = [0u8; RTENTRY];
            uaccess::copy_from_user(arg, &mut rt)?;
            return Err(Errno::EOPNOTSUPP);
        }
        _ => {}
    }
    let mut req = [0u8; IFREQ];
    uaccess::copy_from_user(arg, &mut req)?;
    // As Linux: the name ends at its first NUL or at its 16th byte.
    req[IFNAMSIZ - 1] = 0;
    let name_len = req.iter().position(|&b| b == 0).unwrap_or(0);
    let named = || ifaces::by_name(&req[..name_len]).ok_or(Errno::ENODEV);
    if SETTERS.contains(&cmd) {
        super::cred::privileged(me)?;
        named()?;
        return Err(Errno::EOPNOTSUPP);
    }
    let (head, data) = req.split_at_mut(IFNAMSIZ);
    if cmd == SIOCGIFNAME {
        let index = i32::from_ne_bytes([data[0], data[1], data[2], data[3]]);
        let i = ifaces::by_index(index).ok_or(Errno::ENODEV)?;
        head.fill(0);
        head[..i.name.len()].copy_from_slice(i.name.as_bytes());
    } else {
        let i = ifaces::by_name(&head[..name_len]).ok_or(Errno::ENODEV)?;
        let int = |data: &mut [u8], v: i32| data[..4].copy_from_slice(&v.to_ne_bytes());
        match cmd {
            SIOCGIFFLAGS => data[..2].copy_from_slice(&i.flags.to_ne_bytes()),
            // Not a point-to-point link: the destination is the interface's own address.
            SIOCGIFADDR | SIOCGIFDSTADDR => put_sockaddr(data, i.addr.address()),
            SIOCGIFBRDADDR => put_sockaddr(data, i.broadcast),
            SIOCGIFNETMASK => put_sockaddr(data, i.addr.netmask()),
            SIOCGIFMETRIC => int(data, 0),
            SIOCGIFMTU => int(data, i.mtu),
            SIOCGIFINDEX => int(data, i.index),
            SIOCGIFTXQLEN => int(data, i.txqueuelen),
            // No memory window, I/O port, IRQ line or DMA channel (the NIC interrupts by
            // MSI-X).
            SIOCGIFMAP => data.fill(0),
            SIOCGIFHWADDR => {
                data[..16].fill(0);
                let (family, mac) = match i.mac {
                    Some(m) => (ARPHRD_ETHER, m.0),
                    None => (ARPHRD_LOOPBACK, [0; 6]),
                };
                data[..2].copy_from_slice(&family.to_ne_bytes());
                data[2..8].copy_from_slice(&mac);
            }
            _ => return Err(Errno::ENOTTY),
        }
    }
    uaccess::copy_to_user(arg, &req)?;
    Ok(0)
}

/// `SIOCGIFCONF`: a `struct ifreq` with the name and address of each interface, as many as fit
/// in `ifc_len` bytes, and the bytes written in `ifc_len`; with a null buffer, the bytes all
/// would take.
fn interface_list(arg: u64) -> SysResult {
    let mut conf = [0u8; IFCONF];
    uaccess::copy_from_user(arg, &mut conf)?;
    let room = i32::from_ne_bytes([conf[0], conf[1], conf[2], conf[3]]);
    let buf = u64::from_ne_bytes([
        conf[8], conf[9], conf[10], conf[11], conf[12], conf[13], conf[14], conf[15],
    ]);
    let all = crate::net::ifaces::all();
    let mut done = 0usize;
    for i in &all {
        if buf != 0 {
            if (room as i64) < (done + IFREQ) as i64 {
                break;
            }
            let mut req = [0u8; IFREQ];
            req[..i.name.len()].copy_from_slice(i.name.as_bytes());
            put_sockaddr(&mut req[IFNAMSIZ..], i.addr.address());
            let at = buf.checked_add(done as u64).ok_or(Errno::EFAULT)?;
            uaccess::copy_to_user(at, &req)?;
        }
        done += IFREQ;
    }
    write_user(arg, &(done as i32))?;
    Ok(0)
}
