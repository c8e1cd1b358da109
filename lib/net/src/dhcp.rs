//! DHCP clients behind the switch (RFC 2131): the two narrow exceptions to the port rules that
//! let a program such as busybox `udhcpc` ask for a lease over a packet socket.
//!
//! A DHCP client has no address yet: it sends its request from 0.0.0.0, UDP port 68, to the
//! limited broadcast 255.255.255.255, port 67, on a packet socket, and the server answers to
//! port 68, broadcast or to the offered address, which no instance holds in the port map. So:
//!
//! - **Out** ([`client_request`], used by [`crate::server::verify`]): a frame from an
//!   instance's own MAC whose IPv4 source is 0.0.0.0 passes only as such a request (UDP
//!   0.0.0.0:68 to 255.255.255.255:67 carrying a BOOTP request, `op` 1, Ethernet hardware
//!   addresses), and only while no other instance holds UDP port 68. Any other frame from
//!   0.0.0.0 is spoofed. Only packet sockets make such frames (an instance's UDP sockets send
//!   from its addresses), and those are root's, as Linux's need `CAP_NET_RAW`.
//! - **In** ([`server_reply`], used by [`crate::switch::inbound`]): a UDP frame from port 67
//!   to port 68, broadcast or to one of the machine's addresses, carrying a BOOTP reply, goes
//!   to the holder of UDP port 68 if one holds it (a client listening with an ordinary UDP
//!   socket), else to the instance whose request had the reply's transaction id (`xid`),
//!   remembered in [`Clients`] by whatever routes the frames (the kernel's switch, the
//!   network server). A reply whose `xid` nobody asked with is dropped.
//!
//! Nothing here makes or changes a DHCP message: the lease a client gets is what the server
//! on the wire (QEMU's user network) answered.

use crate::portmap::StackId;
use smoltcp::wire::{
    EthernetFrame, EthernetProtocol, IpProtocol, Ipv4Address, Ipv4Packet, UdpPacket,
};

/// The DHCP client's UDP port.
pub const CLIENT_PORT: u16 = 68;
/// The DHCP server's UDP port.
pub const SERVER_PORT: u16 = 67;
/// Bytes of a BOOTP message up to its options' magic cookie (RFC 2131 §2).
const BOOTP_FIXED: usize = 236;
/// BOOTP `op`: a client's request.
const BOOTREQUEST: u8 = 1;
/// BOOTP `op`: a server's reply.
const BOOTREPLY: u8 = 2;
/// BOOTP `htype`: Ethernet.
const HTYPE_ETHER: u8 = 1;
/// How many clients' transactions [`Clients`] remembers.
pub const CLIENTS: usize = 8;

/// The IPv4 packet, source and destination ports and BOOTP message of a UDP frame, if it is
/// one whose BOOTP message is whole, of operation `op`, for Ethernet addresses.
fn bootp(frame: &[u8], op: u8) -> Option<(Ipv4Packet<&[u8]>, u16, u16, u32)> {
    let eth = EthernetFrame::new_checked(frame).ok()?;
    if eth.ethertype() != EthernetProtocol::Ipv4 {
        return None;
    }
    let ip = Ipv4Packet::new_checked(eth.payload()).ok()?;
    if ip.next_header() != IpProtocol::Udp || ip.more_frags() || ip.frag_offset() != 0 {
        return None;
    }
    let udp = UdpPacket::new_checked(ip.payload()).ok()?;
    let msg = udp.payload();
    if msg.len() < BOOTP_FIXED || msg[0] != op || msg[1] != HTYPE_ETHER || msg[2] != 6 {
        return None;
    }
    let xid = u32::from_be_bytes([msg[4], msg[5], msg[6], msg[7]]);
    let (src, dst) = (udp.src_port(), udp.dst_port());
    Some((ip, src, dst, xid))
}

/// The transaction id of `frame` if it is a DHCP client's request as it is sent before the
/// client has an address: UDP from 0.0.0.0:68 to 255.255.255.255:67, a BOOTP request.
pub fn client_request(frame: &[u8]) -> Option<u32> {
    let (ip, src, dst, xid) = bootp(frame, BOOTREQUEST)?;
    let addressed = ip.src_addr() == Ipv4Address::UNSPECIFIED
        && ip.dst_addr() == Ipv4Address::BROADCAST
        && src == CLIENT_PORT
        && dst == SERVER_PORT;
    addressed.then_some(xid)
}

/// The transaction id of `frame` if it is a DHCP server's reply to a client of this machine:
/// UDP from port 67 to port 68, to 255.255.255.255 or an address `me` accepts, a BOOTP reply.
pub fn server_reply(frame: &[u8], me: impl Fn(Ipv4Address) -> bool) -> Option<u32> {
    let (ip, src, dst, xid) = bootp(frame, BOOTREPLY)?;
    let to = ip.dst_addr();
    let addressed =
        src == SERVER_PORT && dst == CLIENT_PORT && (to == Ipv4Address::BROADCAST || me(to));
    addressed.then_some(xid)
}

/// The instances that sent DHCP requests lately, by transaction id (the newest
/// [`CLIENTS`]; an older one is forgotten, and its client asks again).
#[derive(Debug, Default)]
pub struct Clients {
    /// (instance, xid), in no order.
    recent: [Option<(StackId, u32)>; CLIENTS],
    /// Where the next one goes.
    next: usize,
}

impl Clients {
    /// None yet.
    pub const fn new() -> Clients {
        Clients {
            recent: [None; CLIENTS],
            next: 0,
        }
    }

    /// Instance `id` sent a request with transaction id `xid`.
    pub fn asked(&mut self, id: StackId, xid: u32) {
        if self.recent.contains(&Some((id, xid))) {
            return;
        }
        self.recent[self.next] = Some((id, xid));
        self.next = (self.next + 1) % CLIENTS;
    }

    /// The instance that asked with `xid` most lately, if any.
    pub fn client(&self, xid: u32) -> Option<StackId> {
        (0..CLIENTS)
            .map(|i| (self.next + CLIENTS - 1 - i) % CLIENTS)
            .find_map(|i| self.recent[i].filter(|r| r.1 == xid).map(|r| r.0))
    }
}
