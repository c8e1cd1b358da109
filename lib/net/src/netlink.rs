//! Route netlink (`AF_NETLINK`, `NETLINK_ROUTE`; Linux's rtnetlink(7)), read-only: the
//! answers to the requests busybox `ip addr`, `ip link` and `ip route` send, built from the
//! machine's interfaces, addresses and routes as the kernel describes them ([`Tables`]).
//!
//! [`answer`] takes the bytes of one send (one or more `struct nlmsghdr` messages, processed
//! in order as Linux's `netlink_rcv_skb` does) and gives the datagrams the socket then holds
//! for the program to receive:
//!
//! - `RTM_GETLINK`, `RTM_GETADDR`, `RTM_GETROUTE` with `NLM_F_DUMP` (either of its bits, as
//!   Linux tests it): one `RTM_NEWLINK`, `RTM_NEWADDR` or `RTM_NEWROUTE` per entry, flagged
//!   `NLM_F_MULTI`, packed into datagrams of at most [`DATAGRAM`] bytes, and `NLMSG_DONE`
//!   (in the last datagram when it fits, as Linux's `netlink_dump`). Addresses and routes are
//!   IPv4 only: a dump asking for another family than `AF_UNSPEC` or `AF_INET` is empty.
//! - `RTM_GETLINK` without `NLM_F_DUMP`: the interface its `ifinfomsg` names by index, or by
//!   `IFLA_IFNAME` when the index is 0 (`ENODEV` for none, `EINVAL` with neither).
//! - Any other rtnetlink type: `EPERM` for a request that would change something (every
//!   type but the `RTM_GET*` ones) from an unprivileged sender, which Linux checks first,
//!   else `EOPNOTSUPP` (the tables are fixed; `RTM_GETADDR` and `RTM_GETROUTE` without a
//!   dump, `ip route get`, are not built).
//! - An error comes back as `NLMSG_ERROR` with the negative errno and the request (its
//!   header alone with `NLM_F_CAPPED` when the socket set `NETLINK_CAP_ACK`); success as an
//!   `NLMSG_ERROR` of 0 with the request's header only when it asked with `NLM_F_ACK`.
//!   Messages without `NLM_F_REQUEST`, control messages (types below 16) and messages with
//!   less than one byte of payload are acknowledged only when asked.
//! - A message whose length is shorter than its header or longer than what is left ends the
//!   processing of the send silently (Linux's answer: the send itself succeeds).
//!
//! Every answer carries the request's sequence number and the socket's port id. The answers
//! of one send are bounded by `room` bytes (the socket's receive buffer): what does not fit is
//! dropped and reported as an overrun (Linux's `ENOBUFS` on the next receive).

use alloc::vec::Vec;

/// `AF_NETLINK`.
pub const AF_NETLINK: u16 = 16;
/// `NETLINK_ROUTE`, the one netlink protocol built.
pub const NETLINK_ROUTE: u64 = 0;
/// `struct sockaddr_nl`'s size.
pub const SOCKADDR_NL: usize = 12;
/// The largest datagram a dump packs its messages into (Linux's `NLMSG_GOODSIZE` is about a
/// page).
pub const DATAGRAM: usize = 4096;

/// `struct nlmsghdr`'s size.
const HDR: usize = 16;
/// `NLMSG_ERROR`.
pub const NLMSG_ERROR: u16 = 2;
/// `NLMSG_DONE`.
pub const NLMSG_DONE: u16 = 3;
/// The first type that is not a control message.
const NLMSG_MIN_TYPE: u16 = 16;
/// `NLM_F_REQUEST`.
pub const NLM_F_REQUEST: u16 = 1;
/// `NLM_F_MULTI`.
pub const NLM_F_MULTI: u16 = 2;
/// `NLM_F_ACK`.
pub const NLM_F_ACK: u16 = 4;
/// `NLM_F_DUMP` (`NLM_F_ROOT | NLM_F_MATCH`).
pub const NLM_F_DUMP: u16 = 0x300;
/// `NLM_F_CAPPED`: an error message carries the request's header only.
pub const NLM_F_CAPPED: u16 = 0x100;

/// `RTM_NEWLINK`.
pub const RTM_NEWLINK: u16 = 16;
/// `RTM_GETLINK`.
pub const RTM_GETLINK: u16 = 18;
/// `RTM_NEWADDR`.
pub const RTM_NEWADDR: u16 = 20;
/// `RTM_GETADDR`.
pub const RTM_GETADDR: u16 = 22;
/// `RTM_NEWROUTE`.
pub const RTM_NEWROUTE: u16 = 24;
/// `RTM_GETROUTE`.
pub const RTM_GETROUTE: u16 = 26;
/// The last rtnetlink type Linux knows (`RTM_MAX`).
const RTM_MAX: u16 = 123;

/// `IFLA_ADDRESS`.
pub const IFLA_ADDRESS: u16 = 1;
/// `IFLA_BROADCAST`.
pub const IFLA_BROADCAST: u16 = 2;
/// `IFLA_IFNAME`.
pub const IFLA_IFNAME: u16 = 3;
/// `IFLA_MTU`.
pub const IFLA_MTU: u16 = 4;
/// `IFLA_QDISC`.
pub const IFLA_QDISC: u16 = 6;
/// `IFLA_STATS`.
pub const IFLA_STATS: u16 = 7;
/// `IFLA_TXQLEN`.
pub const IFLA_TXQLEN: u16 = 13;
/// `IFLA_OPERSTATE`.
pub const IFLA_OPERSTATE: u16 = 16;
/// `IFLA_LINKMODE`.
pub const IFLA_LINKMODE: u16 = 17;
/// `IFLA_STATS64`.
pub const IFLA_STATS64: u16 = 23;

/// `IFA_ADDRESS`.
pub const IFA_ADDRESS: u16 = 1;
/// `IFA_LOCAL`.
pub const IFA_LOCAL: u16 = 2;
/// `IFA_LABEL`.
pub const IFA_LABEL: u16 = 3;
/// `IFA_BROADCAST`.
pub const IFA_BROADCAST: u16 = 4;
/// `IFA_CACHEINFO`.
pub const IFA_CACHEINFO: u16 = 6;
/// `IFA_FLAGS`.
pub const IFA_FLAGS: u16 = 8;
/// `IFA_F_PERMANENT`: a configured address, not one with a lifetime.
pub const IFA_F_PERMANENT: u32 = 0x80;

/// `RTA_DST`.
pub const RTA_DST: u16 = 1;
/// `RTA_OIF`.
pub const RTA_OIF: u16 = 4;
/// `RTA_GATEWAY`.
pub const RTA_GATEWAY: u16 = 5;
/// `RTA_PREFSRC`.
pub const RTA_PREFSRC: u16 = 7;
/// `RTA_TABLE`.
pub const RTA_TABLE: u16 = 15;
/// `RT_TABLE_MAIN`.
pub const RT_TABLE_MAIN: u8 = 254;
/// `RTN_UNICAST`.
pub const RTN_UNICAST: u8 = 1;
/// `RTPROT_KERNEL`: a route the kernel made for an address's network.
pub const RTPROT_KERNEL: u8 = 2;
/// `RTPROT_BOOT`: a route set at boot.
pub const RTPROT_BOOT: u8 = 3;
/// `RT_SCOPE_UNIVERSE`.
pub const RT_SCOPE_UNIVERSE: u8 = 0;
/// `RT_SCOPE_LINK`.
pub const RT_SCOPE_LINK: u8 = 253;
/// `RT_SCOPE_HOST`.
pub const RT_SCOPE_HOST: u8 = 254;

/// `AF_INET`.
const AF_INET: u8 = 2;
/// `AF_UNSPEC`.
const AF_UNSPEC: u8 = 0;
/// `EPERM`, negated in an error message.
const EPERM: i32 = 1;
/// `ENODEV`.
const ENODEV: i32 = 19;
/// `EINVAL`.
const EINVAL: i32 = 22;
/// `EOPNOTSUPP`.
const EOPNOTSUPP: i32 = 95;

/// The largest message an entry makes (a link with its statistics is about 420 bytes).
const MSG_MAX: usize = 640;

/// One interface (`RTM_NEWLINK`).
#[derive(Clone, Copy, Debug)]
pub struct Link {
    /// `ifi_index`.
    pub index: i32,
    /// `IFLA_IFNAME`.
    pub name: &'static str,
    /// `ifi_type` (`ARPHRD_*`).
    pub hw_type: u16,
    /// `ifi_flags` (`IFF_*`, with `IFF_LOWER_UP`).
    pub flags: u32,
    /// `IFLA_MTU`.
    pub mtu: u32,
    /// `IFLA_TXQLEN`.
    pub txqlen: u32,
    /// `IFLA_ADDRESS`.
    pub mac: [u8; 6],
    /// `IFLA_BROADCAST`.
    pub broadcast: [u8; 6],
    /// `IFLA_OPERSTATE` (`IF_OPER_UNKNOWN` 0, `IF_OPER_UP` 6).
    pub operstate: u8,
    /// Received bytes and frames, sent bytes, frames and drops.
    pub counts: [u64; 5],
}

/// One IPv4 address (`RTM_NEWADDR`).
#[derive(Clone, Copy, Debug)]
pub struct Addr {
    /// `ifa_index`.
    pub index: i32,
    /// `IFA_LABEL`: the interface's name.
    pub label: &'static str,
    /// `IFA_LOCAL` and `IFA_ADDRESS`.
    pub local: [u8; 4],
    /// `ifa_prefixlen`.
    pub prefix_len: u8,
    /// `IFA_BROADCAST` (none for the loopback).
    pub broadcast: Option<[u8; 4]>,
    /// `ifa_scope` (`RT_SCOPE_*`).
    pub scope: u8,
}

/// One IPv4 route of the main table (`RTM_NEWROUTE`).
#[derive(Clone, Copy, Debug)]
pub struct Route {
    /// `RTA_DST` (none for the default route).
    pub dst: [u8; 4],
    /// `rtm_dst_len`.
    pub dst_len: u8,
    /// `RTA_GATEWAY`.
    pub gateway: Option<[u8; 4]>,
    /// `RTA_PREFSRC`.
    pub prefsrc: Option<[u8; 4]>,
    /// `RTA_OIF`.
    pub oif: i32,
    /// `rtm_scope`.
    pub scope: u8,
    /// `rtm_protocol`.
    pub protocol: u8,
}

/// What the requests are answered from.
#[derive(Clone, Copy, Debug)]
pub struct Tables<'a> {
    /// The interfaces, by index.
    pub links: &'a [Link],
    /// Their IPv4 addresses.
    pub addrs: &'a [Addr],
    /// The main table's routes, in Linux's dump order.
    pub routes: &'a [Route],
}

/// Who sent a request, as the answers need it.
#[derive(Clone, Copy, Debug)]
pub struct Sender {
    /// The socket's port id (`nlmsg_pid` of every answer).
    pub pid: u32,
    /// May change the tables (else `EPERM` for a change).
    pub privileged: bool,
    /// `NETLINK_CAP_ACK`: error messages carry the request's header only.
    pub cap_ack: bool,
}

/// The answers of one send.
#[derive(Debug, Default)]
pub struct Answers {
    /// The datagrams, in order.
    pub datagrams: Vec<Vec<u8>>,
    /// Their bytes.
    pub bytes: usize,
    /// Some did not fit in the room given (or memory): dropped.
    pub overrun: bool,
}

impl Answers {
    /// Queues `d` if it fits in `room` and memory, else records an overrun.
    fn push(&mut self, d: Vec<u8>, room: usize) {
        if self.overrun || self.bytes + d.len() > room || self.datagrams.try_reserve(1).is_err() {
            self.overrun = true;
            return;
        }
        self.bytes += d.len();
        self.datagrams.push(d);
    }
}

/// A message being built in a fixed buffer (no allocation; what does not fit is cut, which
/// [`MSG_MAX`] rules out for the entries made here).
struct Msg {
    /// The bytes.
    buf: [u8; MSG_MAX],
    /// How many are used.
    len: usize,
}

impl Msg {
    /// A message of `kind` with `flags`, the sequence number `seq` and the port id `pid`.
    fn new(kind: u16, flags: u16, seq: u32, pid: u32) -> Msg {
        let mut m = Msg {
            buf: [0; MSG_MAX],
            len: HDR,
        };
        m.buf[4..6].copy_from_slice(&kind.to_ne_bytes());
        m.buf[6..8].copy_from_slice(&flags.to_ne_bytes());
        m.buf[8..12].copy_from_slice(&seq.to_ne_bytes());
        m.buf[12..16].copy_from_slice(&pid.to_ne_bytes());
        m
    }

    /// Appends `data` and pads to 4 bytes.
    fn put(&mut self, data: &[u8]) {
        let end = (self.len + data.len()).min(MSG_MAX);
        self.buf[self.len..end].copy_from_slice(&data[..end - self.len]);
        self.len = ((end + 3) & !3).min(MSG_MAX);
    }

    /// Appends attribute `kind` holding `data`.
    fn attr(&mut self, kind: u16, data: &[u8]) {
        let mut h = [0u8; 4];
        h[..2].copy_from_slice(&((4 + data.len()) as u16).to_ne_bytes());
        h[2..].copy_from_slice(&kind.to_ne_bytes());
        self.put(&h);
        self.put(data);
    }

    /// Appends a NUL-terminated string attribute.
    fn attr_str(&mut self, kind: u16, s: &str) {
        let mut b = [0u8; 32];
        let n = s.len().min(b.len() - 1);
        b[..n].copy_from_slice(&s.as_bytes()[..n]);
        self.attr(kind, &b[..=n]);
    }

    /// The finished message.
    fn bytes(&mut self) -> &[u8] {
        let len = self.len as u32;
        self.buf[..4].copy_from_slice(&len.to_ne_bytes());
        &self.buf[..self.len]
    }
}

/// A request's header.
#[derive(Clone, Copy, Debug)]
struct Header {
    /// `nlmsg_len`.
    len: usize,
    /// `nlmsg_type`.
    kind: u16,
    /// `nlmsg_flags`.
    flags: u16,
    /// `nlmsg_seq`.
    seq: u32,
}

/// Reads a native-endian `u16` at `at` of `b` (0 past the end).
fn u16_at(b: &[u8], at: usize) -> u16 {
    b.get(at..at + 2)
        .map_or(0, |s| u16::from_ne_bytes([s[0], s[1]]))
}

/// Reads a native-endian `u32` at `at` of `b` (0 past the end).
fn u32_at(b: &[u8], at: usize) -> u32 {
    b.get(at..at + 4)
        .map_or(0, |s| u32::from_ne_bytes([s[0], s[1], s[2], s[3]]))
}

/// Packs the messages of a dump into datagrams of at most [`DATAGRAM`] bytes, then
/// `NLMSG_DONE`.
struct Dump<'a> {
    /// Where the datagrams go.
    out: &'a mut Answers,
    /// The room left to the socket.
    room: usize,
    /// The datagram being filled.
    cur: Vec<u8>,
}

impl Dump<'_> {
    /// Appends one message, starting a new datagram when it does not fit.
    fn add(&mut self, msg: &[u8]) {
        if !self.cur.is_empty() && self.cur.len() + msg.len() > DATAGRAM {
            let full = core::mem::take(&mut self.cur);
            self.out.push(full, self.room);
        }
        if self.cur.capacity() == 0 && self.cur.try_reserve_exact(DATAGRAM).is_err() {
            self.out.overrun = true;
            return;
        }
        if self.cur.len() + msg.len() <= self.cur.capacity() {
            self.cur.extend_from_slice(msg);
        }
    }

    /// Appends `NLMSG_DONE` and queues the last datagram.
    fn done(mut self, seq: u32, pid: u32) {
        let mut m = Msg::new(NLMSG_DONE, NLM_F_MULTI, seq, pid);
        m.put(&0i32.to_ne_bytes());
        self.add(m.bytes());
        let last = core::mem::take(&mut self.cur);
        if !last.is_empty() {
            self.out.push(last, self.room);
        }
    }
}

/// The `RTM_NEWLINK` message of `l`.
fn link_msg(l: &Link, flags: u16, seq: u32, pid: u32) -> Msg {
    let mut m = Msg::new(RTM_NEWLINK, flags, seq, pid);
    let mut info = [0u8; 16];
    info[2..4].copy_from_slice(&l.hw_type.to_ne_bytes());
    info[4..8].copy_from_slice(&l.index.to_ne_bytes());
    info[8..12].copy_from_slice(&l.flags.to_ne_bytes());
    m.put(&info);
    m.attr_str(IFLA_IFNAME, l.name);
    m.attr(IFLA_TXQLEN, &l.txqlen.to_ne_bytes());
    m.attr(IFLA_OPERSTATE, &[l.operstate]);
    m.attr(IFLA_LINKMODE, &[0]);
    m.attr(IFLA_MTU, &l.mtu.to_ne_bytes());
    m.attr_str(IFLA_QDISC, "noqueue");
    m.attr(IFLA_ADDRESS, &l.mac);
    m.attr(IFLA_BROADCAST, &l.broadcast);
    // rx_packets, tx_packets, rx_bytes, tx_bytes, then errors, drops and the rest.
    let [rb, rp, tb, tp, td] = l.counts;
    let mut stats = [0u64; 24];
    stats[..4].copy_from_slice(&[rp, tp, rb, tb]);
    stats[7] = td;
    let mut s32 = [0u8; 96];
    let mut s64 = [0u8; 192];
    for (i, v) in stats.iter().enumerate() {
        s32[i * 4..i * 4 + 4].copy_from_slice(&(*v as u32).to_ne_bytes());
        s64[i * 8..i * 8 + 8].copy_from_slice(&v.to_ne_bytes());
    }
    m.attr(IFLA_STATS, &s32);
    m.attr(IFLA_STATS64, &s64);
    m
}

/// The `RTM_NEWADDR` message of `a`.
fn addr_msg(a: &Addr, seq: u32, pid: u32) -> Msg {
    let mut m = Msg::new(RTM_NEWADDR, NLM_F_MULTI, seq, pid);
    let mut info = [
        AF_INET,
        a.prefix_len,
        IFA_F_PERMANENT as u8,
        a.scope,
        0,
        0,
        0,
        0,
    ];
    info[4..].copy_from_slice(&a.index.to_ne_bytes());
    m.put(&info);
    m.attr(IFA_ADDRESS, &a.local);
    m.attr(IFA_LOCAL, &a.local);
    if let Some(b) = a.broadcast {
        m.attr(IFA_BROADCAST, &b);
    }
    m.attr_str(IFA_LABEL, a.label);
    m.attr(IFA_FLAGS, &IFA_F_PERMANENT.to_ne_bytes());
    // Preferred and valid lifetimes forever; created and updated at 0.
    let mut cache = [0u8; 16];
    cache[..8].fill(0xff);
    m.attr(IFA_CACHEINFO, &cache);
    m
}

/// The `RTM_NEWROUTE` message of `r`.
fn route_msg(r: &Route, seq: u32, pid: u32) -> Msg {
    let mut m = Msg::new(RTM_NEWROUTE, NLM_F_MULTI, seq, pid);
    m.put(&[
        AF_INET,
        r.dst_len,
        0,
        0,
        RT_TABLE_MAIN,
        r.protocol,
        r.scope,
        RTN_UNICAST,
        0,
        0,
        0,
        0,
    ]);
    m.attr(RTA_TABLE, &u32::from(RT_TABLE_MAIN).to_ne_bytes());
    if r.dst_len > 0 {
        m.attr(RTA_DST, &r.dst);
    }
    if let Some(g) = r.gateway {
        m.attr(RTA_GATEWAY, &g);
    }
    if let Some(s) = r.prefsrc {
        m.attr(RTA_PREFSRC, &s);
    }
    m.attr(RTA_OIF, &r.oif.to_ne_bytes());
    m
}

/// The `NLMSG_ERROR` answer of `error` (0: an acknowledgement) to request `req` (its whole
/// bytes), from `who`.
fn error_msg(req: &[u8], h: &Header, error: i32, who: &Sender, out: &mut Answers, room: usize) {
    let capped = error == 0 || who.cap_ack;
    let echo = if capped { &req[..HDR] } else { req };
    let mut d = Vec::new();
    if d.try_reserve_exact(HDR + 4 + echo.len() + 3).is_err() {
        out.overrun = true;
        return;
    }
    let flags = if capped { NLM_F_CAPPED } else { 0 };
    let mut m = Msg::new(NLMSG_ERROR, flags, h.seq, who.pid);
    m.put(&(-error).to_ne_bytes());
    let head = m.bytes();
    d.extend_from_slice(head);
    d.extend_from_slice(echo);
    let len = d.len() as u32;
    d[..4].copy_from_slice(&len.to_ne_bytes());
    // The datagram is padded to 4 bytes; the length says what the message holds.
    d.resize((d.len() + 3) & !3, 0);
    out.push(d, room);
}

/// Processes one request message `req` (header `h`): 0, or the errno of an error answer.
fn request(
    req: &[u8],
    h: &Header,
    t: &Tables,
    who: &Sender,
    out: &mut Answers,
    room: usize,
) -> i32 {
    if h.flags & NLM_F_REQUEST == 0 || h.kind < NLMSG_MIN_TYPE {
        return 0;
    }
    if h.kind > RTM_MAX {
        return EOPNOTSUPP;
    }
    let payload = &req[HDR..];
    if payload.is_empty() {
        return 0;
    }
    let get = (h.kind - RTM_NEWLINK) & 3 == 2;
    if !get && !who.privileged {
        return EPERM;
    }
    let family = payload[0];
    let dump = h.flags & NLM_F_DUMP != 0;
    let ipv4 = family == AF_UNSPEC || family == AF_INET;
    let mut d = Dump {
        out,
        room,
        cur: Vec::new(),
    };
    match (h.kind, dump) {
        (RTM_GETLINK, true) => {
            for l in t.links {
                d.add(link_msg(l, NLM_F_MULTI, h.seq, who.pid).bytes());
            }
        }
        (RTM_GETADDR, true) => {
            for a in t.addrs.iter().filter(|_| ipv4) {
                d.add(addr_msg(a, h.seq, who.pid).bytes());
            }
        }
        (RTM_GETROUTE, true) => {
            for r in t.routes.iter().filter(|_| ipv4) {
                d.add(route_msg(r, h.seq, who.pid).bytes());
            }
        }
        (RTM_GETLINK, false) => return get_link(payload, h, t, who, d.out, room),
        _ => return EOPNOTSUPP,
    }
    d.done(h.seq, who.pid);
    0
}

/// A `RTM_GETLINK` of one interface: by `ifi_index`, or by `IFLA_IFNAME` when it is 0.
fn get_link(
    payload: &[u8],
    h: &Header,
    t: &Tables,
    who: &Sender,
    out: &mut Answers,
    room: usize,
) -> i32 {
    if payload.len() < 16 {
        return EINVAL;
    }
    let index = u32_at(payload, 4) as i32;
    let found = if index > 0 {
        t.links.iter().find(|l| l.index == index)
    } else {
        let mut name = None;
        let mut at = 16;
        while at + 4 <= payload.len() {
            let len = usize::from(u16_at(payload, at));
            if len < 4 || at + len > payload.len() {
                break;
            }
            if u16_at(payload, at + 2) == IFLA_IFNAME {
                let v = &payload[at + 4..at + len];
                name = Some(v.split(|&b| b == 0).next().unwrap_or(v));
            }
            at += (len + 3) & !3;
        }
        let Some(name) = name else {
            return EINVAL;
        };
        t.links.iter().find(|l| l.name.as_bytes() == name)
    };
    let Some(l) = found else {
        return ENODEV;
    };
    let mut m = link_msg(l, 0, h.seq, who.pid);
    let b = m.bytes();
    let mut d = Vec::new();
    if d.try_reserve_exact(b.len()).is_err() {
        out.overrun = true;
        return 0;
    }
    d.extend_from_slice(b);
    out.push(d, room);
    0
}

/// Answers the messages of one send `data` from socket `who` with `t`, within `room` bytes
/// of datagrams.
pub fn answer(data: &[u8], t: &Tables, who: &Sender, room: usize) -> Answers {
    let mut out = Answers::default();
    let mut rest = data;
    while rest.len() >= HDR {
        let h = Header {
            len: u32_at(rest, 0) as usize,
            kind: u16_at(rest, 4),
            flags: u16_at(rest, 6),
            seq: u32_at(rest, 8),
        };
        if h.len < HDR || h.len > rest.len() {
            break;
        }
        let req = &rest[..h.len];
        let error = request(req, &h, t, who, &mut out, room);
        if error != 0 || h.flags & NLM_F_ACK != 0 {
            error_msg(req, &h, error, who, &mut out, room);
        }
        rest = rest.get((h.len + 3) & !3..).unwrap_or(&[]);
    }
    out
}
