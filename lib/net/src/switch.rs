//! The frame switch: where a frame goes (LibrettOS §3.2's routing by port).
//!
//! Every instance owns the same addresses (127.0.0.1 and the machine's address on its NIC), so
//! the switch is every instance's one neighbour: it answers all their ARP requests itself with
//! [`SWITCH_MAC`] (proxy ARP) and routes IPv4 by destination: to a local address, by the TCP
//! or UDP destination port through the port map ([`Owners`]); ICMP to a local address (echo requests)
//! and ports nobody holds go to the rejecting instance, whose stack answers as a host without
//! that service does (TCP RST, ping replies); anything else leaves through the NIC, readdressed
//! from the NIC's MAC to the gateway's ([`outbound`]). Frames arriving on the NIC go the same
//! way by port ([`inbound`]); the switch answers ARP for the machine's address with the NIC's
//! MAC and learns the gateway's. Frames are checked before they are read: a malformed one is
//! dropped, never trusted.

use crate::dhcp;
use crate::portmap::{Owners, Proto, StackId};
use crate::SWITCH_MAC;
use alloc::vec::Vec;
use smoltcp::wire::{
    ArpOperation, ArpPacket, ArpRepr, EthernetAddress, EthernetFrame, EthernetProtocol,
    EthernetRepr, Icmpv4Message, Icmpv4Packet, IpProtocol, Ipv4Address, Ipv4Packet, TcpPacket,
    UdpPacket,
};

/// Where a frame goes.
#[derive(Debug, PartialEq, Eq)]
pub enum Route {
    /// To the instance holding its destination port.
    Stack(StackId),
    /// To the rejecting instance: a local destination nobody serves.
    Reject,
    /// Out of the machine (the NIC).
    Outside,
    /// Back to its sender: the switch's answer to an ARP request for a local address.
    Reply(Vec<u8>),
    /// Nowhere.
    Drop(Dropped),
}

/// Why a frame was dropped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dropped {
    /// It does not parse as Ethernet, ARP, IPv4, TCP or UDP (or its lengths lie).
    Malformed,
    /// A protocol the switch does not route (IPv6, ARP replies, ...).
    Unrouted,
}

/// Where `frame` goes; `local` tells the machine's own addresses.
pub fn route(
    frame: &[u8],
    ports: &(impl Owners + ?Sized),
    local: impl Fn(Ipv4Address) -> bool,
) -> Route {
    let Ok(eth) = EthernetFrame::new_checked(frame) else {
        return Route::Drop(Dropped::Malformed);
    };
    match eth.ethertype() {
        EthernetProtocol::Arp => arp(&eth),
        EthernetProtocol::Ipv4 => ipv4(eth.payload(), ports, local),
        _ => Route::Drop(Dropped::Unrouted),
    }
}

/// An ARP request from the switch "for" `addr`, "from" `addr` at [`SWITCH_MAC`], sent to `to`:
/// an instance that owns `addr` learns from it that `addr` is at the switch (smoltcp fills
/// its neighbour cache from any ARP packet aimed at it). Replies to an instance's own frames
/// need the entry at once: smoltcp drops a reply (a TCP reset) while it still has to ask.
pub fn announce(addr: Ipv4Address, to: EthernetAddress) -> Vec<u8> {
    let unknown = EthernetAddress([0; 6]);
    arp_frame(ArpOperation::Request, SWITCH_MAC, addr, unknown, addr, to)
}

/// The fields of an Ethernet/IPv4 ARP packet the switch reads.
pub(crate) struct Arp {
    /// Request or reply.
    pub(crate) operation: ArpOperation,
    /// The sender's MAC.
    pub(crate) sender_mac: EthernetAddress,
    /// The sender's address.
    pub(crate) sender: Ipv4Address,
    /// The address asked about.
    pub(crate) target: Ipv4Address,
}

/// Parses the ARP packet in `eth`: `Malformed` if it does not parse.
pub(crate) fn parse_arp(eth: &EthernetFrame<&[u8]>) -> Result<Arp, Dropped> {
    let packet = ArpPacket::new_checked(eth.payload()).map_err(|_| Dropped::Malformed)?;
    match ArpRepr::parse(&packet).map_err(|_| Dropped::Malformed)? {
        ArpRepr::EthernetIpv4 {
            operation,
            source_hardware_addr,
            source_protocol_addr,
            target_protocol_addr,
            ..
        } => Ok(Arp {
            operation,
            sender_mac: source_hardware_addr,
            sender: source_protocol_addr,
            target: target_protocol_addr,
        }),
        _ => Err(Dropped::Unrouted),
    }
}

/// An ARP request gets the switch's answer; other ARP from an instance is dropped.
fn arp(eth: &EthernetFrame<&[u8]>) -> Route {
    match parse_arp(eth) {
        // Local or not, every address is reached through the switch.
        Ok(a) if a.operation == ArpOperation::Request => {
            Route::Reply(arp_reply(SWITCH_MAC, a.target, a.sender_mac, a.sender))
        }
        Ok(_) => Route::Drop(Dropped::Unrouted),
        Err(why) => Route::Drop(why),
    }
}

/// An ARP reply: `addr` is at `mac`, to `to_mac` (`to_addr`).
fn arp_reply(
    mac: EthernetAddress,
    addr: Ipv4Address,
    to_mac: EthernetAddress,
    to_addr: Ipv4Address,
) -> Vec<u8> {
    arp_frame(ArpOperation::Reply, mac, addr, to_mac, to_addr, to_mac)
}

/// An ARP packet in an Ethernet frame from `mac` to `dst`.
fn arp_frame(
    operation: ArpOperation,
    mac: EthernetAddress,
    addr: Ipv4Address,
    to_mac: EthernetAddress,
    to_addr: Ipv4Address,
    dst: EthernetAddress,
) -> Vec<u8> {
    let packet = ArpRepr::EthernetIpv4 {
        operation,
        source_hardware_addr: mac,
        source_protocol_addr: addr,
        target_hardware_addr: to_mac,
        target_protocol_addr: to_addr,
    };
    let header = EthernetRepr {
        src_addr: mac,
        dst_addr: dst,
        ethertype: EthernetProtocol::Arp,
    };
    let mut out = alloc::vec![0; header.buffer_len() + packet.buffer_len()];
    let mut frame = EthernetFrame::new_unchecked(&mut out[..]);
    header.emit(&mut frame);
    packet.emit(&mut ArpPacket::new_unchecked(frame.payload_mut()));
    out
}

/// The ARP request the NIC sends to learn the gateway's MAC.
pub fn ask_gateway(nic_mac: EthernetAddress, me: Ipv4Address, gateway: Ipv4Address) -> Vec<u8> {
    arp_frame(
        ArpOperation::Request,
        nic_mac,
        me,
        EthernetAddress([0; 6]),
        gateway,
        EthernetAddress::BROADCAST,
    )
}

/// Where a frame that arrived on the NIC goes.
#[derive(Debug, PartialEq, Eq)]
pub enum Inbound {
    /// To the instance holding its destination port ([`route`]'s answer for a local address).
    To(Route),
    /// Back out of the NIC: the switch's answer to an ARP request for the machine's address
    /// (with the gateway's MAC when the gateway asked).
    Answer {
        /// The ARP reply.
        reply: Vec<u8>,
        /// The asker's MAC, if it is the gateway.
        gateway: Option<EthernetAddress>,
    },
    /// An ARP packet from the gateway: it is at this MAC.
    Gateway(EthernetAddress),
    /// A DHCP server's reply to port 68, which nobody holds: to the instance that asked with
    /// this transaction id ([`crate::dhcp`]), which the caller remembers.
    DhcpReply(u32),
    /// Nowhere (counted by the caller).
    Drop(Dropped),
}

/// Where a frame from the NIC goes: the addresses the NIC answers for are those `me` accepts
/// (the machine's address, and the addresses of instances with their own that the shared NIC
/// serves), the NIC's MAC is `nic_mac`, the gateway `gateway`. IPv4 for them, or for an
/// address `moved` accepts (an instance's own address on another NIC now: sent here before the
/// neighbours learnt of the move), goes by port as [`route`] sends it; ARP requests for `me`'s
/// are answered; ARP from the gateway tells its MAC; a DHCP server's reply goes to the holder
/// of port 68 or, with none, by its transaction id ([`Inbound::DhcpReply`]); everything else
/// is dropped.
pub fn inbound(
    frame: &[u8],
    ports: &(impl Owners + ?Sized),
    me: impl Fn(Ipv4Address) -> bool,
    moved: impl Fn(Ipv4Address) -> bool,
    nic_mac: EthernetAddress,
    gateway: Ipv4Address,
) -> Inbound {
    let Ok(eth) = EthernetFrame::new_checked(frame) else {
        return Inbound::Drop(Dropped::Malformed);
    };
    match eth.ethertype() {
        EthernetProtocol::Arp => {
            let a = match parse_arp(&eth) {
                Ok(a) => a,
                Err(why) => return Inbound::Drop(why),
            };
            let from_gateway = a.sender == gateway && a.sender_mac.is_unicast();
            if a.operation == ArpOperation::Request && me(a.target) {
                return Inbound::Answer {
                    reply: arp_reply(nic_mac, a.target, a.sender_mac, a.sender),
                    gateway: from_gateway.then_some(a.sender_mac),
                };
            }
            if from_gateway {
                return Inbound::Gateway(a.sender_mac);
            }
            Inbound::Drop(Dropped::Unrouted)
        }
        EthernetProtocol::Ipv4 => {
            if let Some(xid) = dhcp::server_reply(frame, &me) {
                return match ports.owner(Proto::Udp, dhcp::CLIENT_PORT) {
                    Some(id) => Inbound::To(Route::Stack(id)),
                    None => Inbound::DhcpReply(xid),
                };
            }
            match route(frame, ports, |a| me(a) || moved(a)) {
                Route::Outside => Inbound::Drop(Dropped::Unrouted),
                r => Inbound::To(r),
            }
        }
        _ => Inbound::Drop(Dropped::Unrouted),
    }
}

/// A gratuitous ARP request: `addr` is at `mac` now (the neighbours update their caches; an
/// instance moving between its own NIC and the shared one announces its address so).
pub fn gratuitous(mac: EthernetAddress, addr: Ipv4Address) -> Vec<u8> {
    arp_frame(
        ArpOperation::Request,
        mac,
        addr,
        EthernetAddress([0; 6]),
        addr,
        EthernetAddress::BROADCAST,
    )
}

/// Library mode's virtual interface (LibrettOS §3.3's thin VIF), outbound: a frame an instance
/// sends out of its own NIC carries the NIC's MAC `nic` instead of the instance's `stack`, in
/// the Ethernet header and as an ARP sender.
pub fn vif_out(frame: &mut [u8], stack: EthernetAddress, nic: EthernetAddress) {
    swap_mac(frame, stack, nic, true);
}

/// Library mode's virtual interface, inbound: a frame the instance's NIC received for `nic`
/// is for the instance's `stack` MAC (Ethernet destination, ARP target).
pub fn vif_in(frame: &mut [u8], nic: EthernetAddress, stack: EthernetAddress) {
    swap_mac(frame, nic, stack, false);
}

/// Library mode: whether a frame an instance on its own NIC sent is for one of the machine's
/// addresses (`local`), which the switch reaches, rather than for its NIC: an ARP request for
/// a local address, IPv4 to one, and anything that is neither ARP nor IPv4.
pub fn for_machine(frame: &[u8], local: impl Fn(Ipv4Address) -> bool) -> bool {
    let Ok(eth) = EthernetFrame::new_checked(frame) else {
        return true;
    };
    match eth.ethertype() {
        EthernetProtocol::Arp => match parse_arp(&eth) {
            Ok(a) if a.operation == ArpOperation::Request => local(a.target),
            Ok(_) => false,
            Err(_) => true,
        },
        EthernetProtocol::Ipv4 => {
            Ipv4Packet::new_checked(eth.payload()).map_or(true, |ip| local(ip.dst_addr()))
        }
        _ => true,
    }
}

/// Whether `frame` is an IPv4 Ethernet frame.
pub fn is_ipv4(frame: &[u8]) -> bool {
    EthernetFrame::new_checked(frame).is_ok_and(|e| e.ethertype() == EthernetProtocol::Ipv4)
}

/// Library mode: whether a frame an instance's own NIC received is the instance's: IPv4 for
/// its own address `own` (or broadcast or multicast), ARP replies, and ARP requests for `own`
/// (not for the machine's shared address, which only the shared NIC answers for).
pub fn for_own_nic(frame: &[u8], own: Option<Ipv4Address>) -> bool {
    let Ok(eth) = EthernetFrame::new_checked(frame) else {
        return false;
    };
    match eth.ethertype() {
        EthernetProtocol::Ipv4 => Ipv4Packet::new_checked(eth.payload()).is_ok_and(|p| {
            let to = p.dst_addr();
            Some(to) == own || to.is_broadcast() || to.is_multicast()
        }),
        EthernetProtocol::Arp => match parse_arp(&eth) {
            Ok(a) if a.operation == ArpOperation::Request => Some(a.target) == own,
            Ok(_) => true,
            Err(_) => false,
        },
        _ => false,
    }
}

/// Library mode: a frame for [`SWITCH_MAC`] goes to `gateway` instead (the instance learned
/// its neighbours while the switch answered for them).
pub fn past_switch(frame: &mut [u8], gateway: EthernetAddress) {
    if let Ok(mut eth) = EthernetFrame::new_checked(frame) {
        if eth.dst_addr() == SWITCH_MAC {
            eth.set_dst_addr(gateway);
        }
    }
}

/// Replaces MAC `from` with `to` in the source (`source`) or destination of the Ethernet
/// header and, in an ARP packet, as its sender or target hardware address.
fn swap_mac(frame: &mut [u8], from: EthernetAddress, to: EthernetAddress, source: bool) {
    let Ok(mut eth) = EthernetFrame::new_checked(&mut frame[..]) else {
        return;
    };
    if source && eth.src_addr() == from {
        eth.set_src_addr(to);
    }
    if !source && eth.dst_addr() == from {
        eth.set_dst_addr(to);
    }
    if eth.ethertype() != EthernetProtocol::Arp {
        return;
    }
    if let Ok(mut arp) = ArpPacket::new_checked(eth.payload_mut()) {
        if arp.hardware_len() != 6 {
            return;
        }
        if source && arp.source_hardware_addr() == from.as_bytes() {
            arp.set_source_hardware_addr(to.as_bytes());
        }
        if !source && arp.target_hardware_addr() == from.as_bytes() {
            arp.set_target_hardware_addr(to.as_bytes());
        }
    }
}

/// Readdresses a frame an instance sends out of the machine: from the NIC's MAC to the
/// gateway's (every outside address is reached through it), or to everyone on the link when
/// the instance sent it to the broadcast MAC (a DHCP client's request). False if it needs the
/// gateway's MAC and `gateway_mac` is unknown (the frame is not sent).
pub fn outbound(
    frame: &mut [u8],
    nic_mac: EthernetAddress,
    gateway_mac: Option<EthernetAddress>,
) -> bool {
    let Ok(mut eth) = EthernetFrame::new_checked(frame) else {
        return false;
    };
    if !eth.dst_addr().is_broadcast() {
        let Some(gateway) = gateway_mac else {
            return false;
        };
        eth.set_dst_addr(gateway);
    }
    eth.set_src_addr(nic_mac);
    true
}

/// An IPv4 packet to a local address goes by port; others go out.
fn ipv4(
    payload: &[u8],
    ports: &(impl Owners + ?Sized),
    local: impl Fn(Ipv4Address) -> bool,
) -> Route {
    let Ok(ip) = Ipv4Packet::new_checked(payload) else {
        return Route::Drop(Dropped::Malformed);
    };
    if !local(ip.dst_addr()) {
        return Route::Outside;
    }
    let (proto, port) = match ip.next_header() {
        IpProtocol::Tcp => match TcpPacket::new_checked(ip.payload()) {
            Ok(t) => (Proto::Tcp, t.dst_port()),
            Err(_) => return Route::Drop(Dropped::Malformed),
        },
        IpProtocol::Udp => match UdpPacket::new_checked(ip.payload()) {
            Ok(u) => (Proto::Udp, u.dst_port()),
            Err(_) => return Route::Drop(Dropped::Malformed),
        },
        IpProtocol::Icmp => match Icmpv4Packet::new_checked(ip.payload()) {
            // Requests are answered by the rejecting instance (a host answers pings).
            Ok(i) if i.msg_type() == Icmpv4Message::EchoRequest => return Route::Reject,
            // Replies go to the instance whose raw socket sent the request.
            Ok(i) if i.msg_type() == Icmpv4Message::EchoReply => (Proto::Icmp, i.echo_ident()),
            Ok(_) => return Route::Drop(Dropped::Unrouted),
            Err(_) => return Route::Drop(Dropped::Malformed),
        },
        _ => return Route::Drop(Dropped::Unrouted),
    };
    match ports.owner(proto, port) {
        Some(id) => Route::Stack(id),
        // A reply nobody waits for is dropped (answering it would loop).
        None if proto == Proto::Icmp => Route::Drop(Dropped::Unrouted),
        None => Route::Reject,
    }
}

/// Readdresses a frame the switch forwards: from [`SWITCH_MAC`] to `dst` (the instance
/// that gets it), as a real switch behind proxy ARP would.
pub fn readdress(frame: &mut [u8], dst: EthernetAddress) {
    if let Ok(mut eth) = EthernetFrame::new_checked(frame) {
        eth.set_dst_addr(dst);
        eth.set_src_addr(SWITCH_MAC);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::PortMap;
    use smoltcp::phy::ChecksumCapabilities;
    use smoltcp::wire::{IpAddress, Ipv4Repr, TcpControl, TcpRepr, TcpSeqNumber};

    fn is_local(a: Ipv4Address) -> bool {
        a.is_loopback()
    }

    fn tcp_frame(dst: Ipv4Address, dst_port: u16) -> Vec<u8> {
        let tcp = TcpRepr {
            src_port: 40000,
            dst_port,
            control: TcpControl::Syn,
            seq_number: TcpSeqNumber(1),
            ack_number: None,
            window_len: 100,
            window_scale: None,
            max_seg_size: None,
            sack_permitted: false,
            sack_ranges: [None; 3],
            timestamp: None,
            payload: &[],
        };
        let ip = Ipv4Repr {
            src_addr: Ipv4Address::new(127, 0, 0, 1),
            dst_addr: dst,
            next_header: IpProtocol::Tcp,
            payload_len: tcp.buffer_len(),
            hop_limit: 64,
        };
        let eth = EthernetRepr {
            src_addr: crate::stack_mac(1),
            dst_addr: SWITCH_MAC,
            ethertype: EthernetProtocol::Ipv4,
        };
        let mut out = alloc::vec![0; eth.buffer_len() + ip.buffer_len() + tcp.buffer_len()];
        let mut f = EthernetFrame::new_unchecked(&mut out[..]);
        eth.emit(&mut f);
        let caps = ChecksumCapabilities::default();
        let mut p = Ipv4Packet::new_unchecked(f.payload_mut());
        ip.emit(&mut p, &caps);
        tcp.emit(
            &mut TcpPacket::new_unchecked(p.payload_mut()),
            &IpAddress::Ipv4(ip.src_addr),
            &IpAddress::Ipv4(dst),
            &caps,
        );
        out
    }

    #[test]
    fn tcp_to_a_local_address_goes_to_the_port_holder_or_is_rejected() {
        let mut ports = PortMap::new();
        ports.claim(Proto::Tcp, 80, 7).unwrap();
        let lo = Ipv4Address::new(127, 0, 0, 1);
        assert_eq!(route(&tcp_frame(lo, 80), &ports, is_local), Route::Stack(7));
        assert_eq!(route(&tcp_frame(lo, 81), &ports, is_local), Route::Reject);
        let far = Ipv4Address::new(10, 0, 2, 2);
        assert_eq!(route(&tcp_frame(far, 80), &ports, is_local), Route::Outside);
    }

    #[test]
    fn malformed_and_truncated_frames_are_dropped() {
        let ports = PortMap::new();
        let good = tcp_frame(Ipv4Address::new(127, 0, 0, 1), 80);
        for cut in [0, 5, 14, 20, 33, 40] {
            assert_eq!(
                route(&good[..cut], &ports, is_local),
                Route::Drop(Dropped::Malformed),
                "cut at {cut}"
            );
        }
        let mut lying = good.clone();
        // An IPv4 total length beyond the frame.
        lying[16] = 0xff;
        assert_eq!(
            route(&lying, &ports, is_local),
            Route::Drop(Dropped::Malformed)
        );
    }

    #[test]
    fn frames_from_the_nic_go_by_port_and_arp_for_the_machine_is_answered() {
        let mut ports = PortMap::new();
        ports.claim(Proto::Tcp, 80, 4).unwrap();
        let me = Ipv4Address::new(10, 0, 2, 15);
        let gw = Ipv4Address::new(10, 0, 2, 2);
        let nic = EthernetAddress([0x52, 0x54, 0, 0x12, 0x34, 0x56]);
        let gw_mac = EthernetAddress([0x52, 0x55, 10, 0, 2, 2]);
        assert_eq!(
            inbound(&tcp_frame(me, 80), &ports, |a| a == me, |_| false, nic, gw),
            Inbound::To(Route::Stack(4))
        );
        assert_eq!(
            inbound(&tcp_frame(me, 81), &ports, |a| a == me, |_| false, nic, gw),
            Inbound::To(Route::Reject)
        );
        // Loopback traffic never comes from the wire.
        let lo = Ipv4Address::new(127, 0, 0, 1);
        assert_eq!(
            inbound(&tcp_frame(lo, 80), &ports, |a| a == me, |_| false, nic, gw),
            Inbound::Drop(Dropped::Unrouted)
        );
        let ask = ask_gateway(gw_mac, gw, me);
        let Inbound::Answer { gateway, .. } =
            inbound(&ask, &ports, |a| a == me, |_| false, nic, gw)
        else {
            panic!("the gateway's request is answered");
        };
        assert_eq!(gateway, Some(gw_mac), "and teaches its MAC");
        // An instance's own address on another NIC now: its IPv4 is routed, its ARP not
        // answered here.
        let own = Ipv4Address::new(10, 0, 2, 16);
        let moved = |a| a == own;
        assert_eq!(
            inbound(&tcp_frame(own, 80), &ports, |a| a == me, moved, nic, gw),
            Inbound::To(Route::Stack(4))
        );
        assert_eq!(
            inbound(&tcp_frame(own, 80), &ports, |a| a == me, |_| false, nic, gw),
            Inbound::Drop(Dropped::Unrouted)
        );
        let ask_own = ask_gateway(gw_mac, gw, own);
        assert_eq!(
            inbound(&ask_own, &ports, |a| a == me, moved, nic, gw),
            Inbound::Gateway(gw_mac)
        );
        let other = ask_gateway(
            EthernetAddress([2, 0, 0, 0, 0, 9]),
            Ipv4Address::new(10, 0, 2, 9),
            me,
        );
        let Inbound::Answer {
            reply: answer,
            gateway: None,
        } = inbound(&other, &ports, |a| a == me, |_| false, nic, gw)
        else {
            panic!("a request for the machine's address is answered");
        };
        let f = EthernetFrame::new_checked(&answer[..]).unwrap();
        assert_eq!(f.src_addr(), nic);
        let mut out = tcp_frame(gw, 80);
        assert!(outbound(&mut out, nic, Some(gw_mac)));
        let f = EthernetFrame::new_checked(&out[..]).unwrap();
        assert_eq!((f.src_addr(), f.dst_addr()), (nic, gw_mac));
    }

    #[test]
    fn arp_for_a_local_address_is_answered_by_the_switch() {
        let ask = ArpRepr::EthernetIpv4 {
            operation: ArpOperation::Request,
            source_hardware_addr: crate::stack_mac(3),
            source_protocol_addr: Ipv4Address::new(127, 0, 0, 1),
            target_hardware_addr: EthernetAddress([0; 6]),
            target_protocol_addr: Ipv4Address::new(127, 0, 0, 1),
        };
        let eth = EthernetRepr {
            src_addr: crate::stack_mac(3),
            dst_addr: EthernetAddress::BROADCAST,
            ethertype: EthernetProtocol::Arp,
        };
        let mut frame = alloc::vec![0; eth.buffer_len() + ask.buffer_len()];
        let mut f = EthernetFrame::new_unchecked(&mut frame[..]);
        eth.emit(&mut f);
        ask.emit(&mut ArpPacket::new_unchecked(f.payload_mut()));
        let Route::Reply(answer) = route(&frame, &PortMap::new(), is_local) else {
            panic!("no answer");
        };
        let f = EthernetFrame::new_checked(&answer[..]).unwrap();
        assert_eq!(f.dst_addr(), crate::stack_mac(3));
        let repr = ArpRepr::parse(&ArpPacket::new_checked(f.payload()).unwrap()).unwrap();
        let ArpRepr::EthernetIpv4 {
            operation,
            source_hardware_addr,
            ..
        } = repr
        else {
            panic!("not IPv4 ARP");
        };
        assert_eq!(operation, ArpOperation::Reply);
        assert_eq!(source_hardware_addr, SWITCH_MAC);
    }
}
