//! Packet sockets (Linux packet(7): `AF_PACKET`, `SOCK_RAW` and `SOCK_DGRAM`): Ethernet
//! frames that a program sends and receives on its own stack instance, whole (`SOCK_RAW`) or
//! without their link-layer header (`SOCK_DGRAM`: the instance writes it, [`header`]).
//!
//! A packet socket is a [`Tap`] of one instance ([`crate::Stack::packet_socket`]). What it
//! sends goes into the instance's outgoing frame queue exactly as given
//! ([`crate::Stack::send_frame`]) and from there wherever the instance's frames go (the
//! kernel's switch or the network server), which check its source like any frame's
//! ([`crate::server::verify`]). What it receives is a copy of each frame delivered to the
//! instance whose ethertype is the socket's protocol, or with [`ETH_P_ALL`] also of each frame
//! the instance sends (`PACKET_OUTGOING`), as Linux's taps see a device's traffic. Each
//! program has its own instance (LibrettOS §3.1), so a packet socket sees its own instance's
//! frames, never the whole machine's.
//!
//! An instance has one Ethernet link that carries both its loopback network and, with a NIC,
//! the machine's address; a frame is on `lo` ([`IF_LO`]) when an IPv4 (or ARP) address in it
//! is a loopback one, else on `eth0` ([`IF_ETH`], only with a NIC). A socket bound to an
//! interface sees that interface's frames. Not built: socket filters, multicast and
//! promiscuous membership, the ring buffers (`PACKET_RX_RING`), auxiliary data.

use alloc::collections::VecDeque;
use alloc::vec::Vec;
use smoltcp::wire::{
    ArpPacket, EthernetAddress, EthernetFrame, EthernetProtocol, Ipv4Address, Ipv4Packet,
};

/// `ETH_P_ALL`: every protocol, in both directions.
pub const ETH_P_ALL: u16 = 0x0003;
/// `lo`'s interface index.
pub const IF_LO: i32 = 1;
/// `eth0`'s interface index (with a NIC).
pub const IF_ETH: i32 = 2;
/// Bytes of an Ethernet header: the shortest frame a packet socket sends.
pub const ETH_HEADER: usize = 14;
/// Frames a packet socket's queue holds; more are dropped and counted.
pub const PACKET_QUEUE: usize = 128;
/// `PACKET_HOST`: a frame for the instance.
pub const PACKET_HOST: u8 = 0;
/// `PACKET_BROADCAST`.
pub const PACKET_BROADCAST: u8 = 1;
/// `PACKET_MULTICAST`.
pub const PACKET_MULTICAST: u8 = 2;
/// `PACKET_OTHERHOST`: a frame for another MAC.
pub const PACKET_OTHERHOST: u8 = 3;
/// `PACKET_OUTGOING`: a frame the instance sent.
pub const PACKET_OUTGOING: u8 = 4;

/// A frame a packet socket received, with what `recvfrom`'s `sockaddr_ll` says of it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Captured {
    /// The whole frame.
    pub frame: Vec<u8>,
    /// The interface it was on.
    pub ifindex: i32,
    /// `PACKET_HOST`, ..., `PACKET_OUTGOING`.
    pub pkttype: u8,
}

impl Captured {
    /// Its ethertype.
    pub fn protocol(&self) -> u16 {
        u16::from_be_bytes([self.frame[12], self.frame[13]])
    }

    /// Its source MAC.
    pub fn source(&self) -> [u8; 6] {
        let mut mac = [0; 6];
        mac.copy_from_slice(&self.frame[6..12]);
        mac
    }
}

/// One packet socket's receiving side.
#[derive(Debug)]
pub struct Tap {
    /// `SOCK_DGRAM`: it receives frames without their Ethernet header.
    dgram: bool,
    /// The protocol it receives (an ethertype, [`ETH_P_ALL`], or 0: none).
    proto: u16,
    /// The interface it is bound to (0: any).
    ifindex: i32,
    /// Frames received, oldest first.
    queue: VecDeque<Captured>,
    /// Frames it took or dropped since its statistics were last read.
    packets: u32,
    /// Frames it dropped (queue full, or no memory) since then.
    drops: u32,
}

impl Tap {
    /// A socket receiving `proto`, on any interface; `dgram`: a `SOCK_DGRAM` one.
    pub fn new(proto: u16, dgram: bool) -> Tap {
        Tap {
            dgram,
            proto,
            ifindex: 0,
            queue: VecDeque::new(),
            packets: 0,
            drops: 0,
        }
    }

    /// `bind`: to interface `ifindex` (0: any); a `proto` of 0 keeps the protocol.
    pub fn bind(&mut self, proto: u16, ifindex: i32) {
        if proto != 0 {
            self.proto = proto;
        }
        self.ifindex = ifindex;
    }

    /// Whether it is a `SOCK_DGRAM` socket.
    pub fn is_dgram(&self) -> bool {
        self.dgram
    }

    /// Where what it receives starts in a frame: past the Ethernet header for `SOCK_DGRAM`.
    pub fn skip(&self) -> usize {
        if self.dgram {
            ETH_HEADER
        } else {
            0
        }
    }

    /// Its protocol and interface (`getsockname`).
    pub fn name(&self) -> (u16, i32) {
        (self.proto, self.ifindex)
    }

    /// Offers it a frame on interface `ifindex`: copied into its queue if it is of its
    /// protocol and interface (an outgoing frame only with [`ETH_P_ALL`]); dropped and counted
    /// when the queue is full or no memory is left. True if it took the frame.
    pub fn offer(&mut self, frame: &[u8], ifindex: i32, pkttype: u8) -> bool {
        let Some(ethertype) = frame.get(12..14) else {
            return false;
        };
        let ethertype = u16::from_be_bytes([ethertype[0], ethertype[1]]);
        let wanted = match self.proto {
            0 => false,
            ETH_P_ALL => true,
            p => p == ethertype && pkttype != PACKET_OUTGOING,
        };
        if !wanted || (self.ifindex != 0 && self.ifindex != ifindex) {
            return false;
        }
        self.packets = self.packets.wrapping_add(1);
        let mut copy = Vec::new();
        if self.queue.len() >= PACKET_QUEUE
            || copy.try_reserve_exact(frame.len()).is_err()
            || self.queue.try_reserve(1).is_err()
        {
            self.drops = self.drops.wrapping_add(1);
            return false;
        }
        copy.extend_from_slice(frame);
        self.queue.push_back(Captured {
            frame: copy,
            ifindex,
            pkttype,
        });
        true
    }

    /// The oldest frame, if any.
    pub fn front(&self) -> Option<&Captured> {
        self.queue.front()
    }

    /// Takes the oldest frame.
    pub fn pop(&mut self) -> Option<Captured> {
        self.queue.pop_front()
    }

    /// `PACKET_STATISTICS`: frames received (the dropped ones included) and dropped since
    /// the last call, as Linux counts them; both start again from 0.
    pub fn stats(&mut self) -> (u32, u32) {
        let r = (self.packets, self.drops);
        self.packets = 0;
        self.drops = 0;
        r
    }
}

/// The Ethernet header a `SOCK_DGRAM` packet socket's send gets: to `dst`, from `src`, of
/// ethertype `proto` (Linux's `dev_hard_header` for an Ethernet device).
pub fn header(dst: [u8; 6], src: EthernetAddress, proto: u16) -> [u8; ETH_HEADER] {
    let mut h = [0u8; ETH_HEADER];
    h[..6].copy_from_slice(&dst);
    h[6..12].copy_from_slice(src.as_bytes());
    h[12..].copy_from_slice(&proto.to_be_bytes());
    h
}

/// The interface a frame is on: `lo` when an IPv4 address in it (or, for ARP, a protocol
/// address) is a loopback one, or when the instance has no NIC (`eth`); else `eth0`.
pub fn ifindex_of(frame: &[u8], eth: bool) -> i32 {
    if !eth {
        return IF_LO;
    }
    let Ok(f) = EthernetFrame::new_checked(frame) else {
        return IF_ETH;
    };
    let loopback = match f.ethertype() {
        EthernetProtocol::Ipv4 => Ipv4Packet::new_checked(f.payload())
            .is_ok_and(|ip| ip.src_addr().is_loopback() || ip.dst_addr().is_loopback()),
        EthernetProtocol::Arp => ArpPacket::new_checked(f.payload()).is_ok_and(|a| {
            let v4 =
                |b: &[u8]| <[u8; 4]>::try_from(b).is_ok_and(|a| Ipv4Address::from(a).is_loopback());
            v4(a.source_protocol_addr()) || v4(a.target_protocol_addr())
        }),
        _ => false,
    };
    if loopback {
        IF_LO
    } else {
        IF_ETH
    }
}

/// The `sll_pkttype` of a frame delivered to an instance whose MAC is `own`.
pub fn pkttype_of(frame: &[u8], own: EthernetAddress) -> u8 {
    let Some(dst) = frame.get(..6) else {
        return PACKET_OTHERHOST;
    };
    let dst = EthernetAddress::from_bytes(dst);
    if dst == own {
        PACKET_HOST
    } else if dst.is_broadcast() {
        PACKET_BROADCAST
    } else if dst.is_multicast() {
        PACKET_MULTICAST
    } else {
        PACKET_OTHERHOST
    }
}
