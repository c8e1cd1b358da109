//! `SOCK_DGRAM` packet sockets and the DHCP client's way through the switch (`net::dhcp`):
//! a request from 0.0.0.0 passes the source check only as a DHCP request from the instance's
//! own MAC, and the server's reply goes back to the instance that asked.

use abi::Errno;
use net::dhcp::{self, Clients};
use net::packet::{header, IF_ETH, IF_LO, PACKET_HOST};
use net::server::{verify, Refused};
use net::switch::{inbound, outbound, Inbound, Route};
use net::{EthernetAddress, Instant, Ipv4Address, Ipv4Cidr, PortMap, Proto, Stack, LOOPBACK};
use smoltcp::phy::ChecksumCapabilities;
use smoltcp::wire::{
    EthernetFrame, EthernetProtocol, EthernetRepr, IpAddress, IpProtocol, Ipv4Packet, Ipv4Repr,
    UdpPacket, UdpRepr,
};

const ETH_P_IP: u16 = 0x0800;
const ANY: Ipv4Address = Ipv4Address::UNSPECIFIED;
const BCAST: Ipv4Address = Ipv4Address::BROADCAST;
const ME: Ipv4Address = Ipv4Address::new(10, 0, 2, 15);
const GW: Ipv4Address = Ipv4Address::new(10, 0, 2, 2);
const NIC: EthernetAddress = EthernetAddress([0x52, 0x54, 0, 0x12, 0x34, 0x56]);
const GW_MAC: EthernetAddress = EthernetAddress([0x52, 0x55, 10, 0, 2, 2]);

/// A BOOTP message of operation `op` (1 request, 2 reply) with transaction id `xid`.
fn bootp(op: u8, xid: u32) -> Vec<u8> {
    let mut m = vec![0u8; 240];
    m[0] = op;
    m[1] = 1;
    m[2] = 6;
    m[4..8].copy_from_slice(&xid.to_be_bytes());
    m[28..34].copy_from_slice(&NIC.0);
    m[236..240].copy_from_slice(&[99, 130, 83, 99]);
    m
}

/// A UDP frame from `mac` (`src:sport`) to `dst_mac` (`dst:dport`) carrying `payload`.
fn udp_frame(
    mac: EthernetAddress,
    dst_mac: EthernetAddress,
    (src, sport): (Ipv4Address, u16),
    (dst, dport): (Ipv4Address, u16),
    payload: &[u8],
) -> Vec<u8> {
    let udp = UdpRepr {
        src_port: sport,
        dst_port: dport,
    };
    let ip = Ipv4Repr {
        src_addr: src,
        dst_addr: dst,
        next_header: IpProtocol::Udp,
        payload_len: udp.header_len() + payload.len(),
        hop_limit: 64,
    };
    let eth = EthernetRepr {
        src_addr: mac,
        dst_addr: dst_mac,
        ethertype: EthernetProtocol::Ipv4,
    };
    let mut out = vec![0; eth.buffer_len() + ip.buffer_len() + udp.header_len() + payload.len()];
    let mut f = EthernetFrame::new_unchecked(&mut out[..]);
    eth.emit(&mut f);
    let caps = ChecksumCapabilities::default();
    let mut p = Ipv4Packet::new_unchecked(f.payload_mut());
    ip.emit(&mut p, &caps);
    udp.emit(
        &mut UdpPacket::new_unchecked(p.payload_mut()),
        &IpAddress::Ipv4(src),
        &IpAddress::Ipv4(dst),
        payload.len(),
        |b| b.copy_from_slice(payload),
        &caps,
    );
    out
}

/// Instance `id`'s DHCP request with `xid`, as busybox `udhcpc` sends it.
fn request(id: u32, xid: u32) -> Vec<u8> {
    let mac = net::stack_mac(id as net::StackId);
    let bcast = EthernetAddress::BROADCAST;
    udp_frame(mac, bcast, (ANY, 68), (BCAST, 67), &bootp(1, xid))
}

/// The server's reply with `xid` to `to`.
fn reply(to: Ipv4Address, xid: u32) -> Vec<u8> {
    let bcast = EthernetAddress::BROADCAST;
    udp_frame(GW_MAC, bcast, (GW, 67), (to, 68), &bootp(2, xid))
}

fn own(a: Ipv4Address) -> bool {
    a.is_loopback() || a == ME
}

#[test]
fn a_datagram_packet_socket_sends_with_a_header_it_writes_and_receives_without_one() {
    let me = Ipv4Cidr::new(ME, 24);
    let mut s = Stack::new(3, &[LOOPBACK, me], Some(GW), 1, Instant::from_millis(0));
    let unbound = s.packet_socket(ETH_P_IP, true).unwrap();
    let bcast = [0xff; 6];
    // No destination: unbound ENXIO, bound EINVAL (no MAC to send to), as Linux.
    assert_eq!(s.send_datagram(unbound, b"x", None), Err(Errno::ENXIO));
    let p = s.packet_socket(ETH_P_IP, true).unwrap();
    assert_eq!(s.packet_is_dgram(p), Ok(true));
    s.packet_bind(p, ETH_P_IP, IF_ETH).unwrap();
    assert_eq!(s.send_datagram(p, b"x", None), Err(Errno::EINVAL));
    assert_eq!(
        s.send_datagram(p, b"x", Some((ETH_P_IP, 3, bcast))),
        Err(Errno::ENXIO)
    );
    assert_eq!(
        s.send_datagram(p, &[0; 1501], Some((ETH_P_IP, IF_ETH, bcast))),
        Err(Errno::EMSGSIZE)
    );
    // A whole frame: the instance's MAC as the source, the protocol given.
    let r = request(3, 7);
    let payload = &r[14..];
    let to = Some((ETH_P_IP, IF_ETH, bcast));
    assert_eq!(s.send_datagram(p, payload, to), Ok(payload.len()));
    assert_eq!(s.send_datagram(p, &[0; 1500], to), Ok(1500));
    assert_eq!(s.take_frame(), Some(r.clone()));
    assert_eq!(s.take_frame().map(|f| f.len()), Some(1514));
    assert_eq!(header(bcast, net::stack_mac(3), ETH_P_IP)[..], r[..14]);
    // Received: the payload alone, with the frame's link facts.
    let mut f = reply(ME, 7);
    f[..6].copy_from_slice(&net::stack_mac(3).0);
    assert!(s.deliver(f.clone()));
    assert_eq!(s.packet_available(p), f.len() - 14);
    let mut small = [0u8; 20];
    let (n, full, info) = s.packet_recv(p, &mut small, true).unwrap();
    assert_eq!((n, full), (20, f.len() - 14));
    assert_eq!(small[..], f[14..34]);
    let mut buf = [0u8; 1514];
    let (n, _, info2) = s.packet_recv(p, &mut buf, false).unwrap();
    assert_eq!(buf[..n], f[14..]);
    assert_eq!(info, info2);
    assert_eq!(info.protocol, ETH_P_IP);
    assert_eq!(info.ifindex, IF_ETH);
    assert_eq!(info.pkttype, PACKET_HOST);
    assert_eq!(info.source, GW_MAC.0);
    assert_eq!(s.packet_recv(p, &mut buf, false), Err(Errno::EAGAIN));
    // A raw socket of the same instance still gets whole frames.
    let raw = s.packet_socket(ETH_P_IP, false).unwrap();
    assert_eq!(s.packet_is_dgram(raw), Ok(false));
    s.packet_bind(raw, 0, IF_LO).unwrap();
    assert_eq!(s.send_frame(raw, &r, None), Ok(r.len()));
    assert_eq!(s.take_frame(), Some(r.clone()));
    // On lo a datagram needs no destination: it goes to a zero MAC.
    s.packet_bind(p, 0, IF_LO).unwrap();
    assert_eq!(s.send_datagram(p, b"x", None), Ok(1));
    let mut want = header([0; 6], net::stack_mac(3), ETH_P_IP).to_vec();
    want.push(b'x');
    assert_eq!(s.take_frame(), Some(want));
}

#[test]
fn only_a_dhcp_request_from_the_instance_s_own_mac_passes_from_0_0_0_0() {
    let mut ports = PortMap::new();
    let bcast = EthernetAddress::BROADCAST;
    assert_eq!(verify(&request(3, 7), 3, &ports, own), Ok(()));
    assert_eq!(dhcp::client_request(&request(3, 7)), Some(7));
    // Another instance's MAC.
    assert_eq!(
        verify(&request(4, 7), 3, &ports, own),
        Err(Refused::Spoofed)
    );
    let mac = net::stack_mac(3);
    let spoofed = [
        // Not to the broadcast address, or not to port 67, or not from port 68.
        udp_frame(mac, bcast, (ANY, 68), (GW, 67), &bootp(1, 7)),
        udp_frame(mac, bcast, (ANY, 68), (BCAST, 53), &bootp(1, 7)),
        udp_frame(mac, bcast, (ANY, 5000), (BCAST, 67), &bootp(1, 7)),
        // Not a BOOTP request, or not whole.
        udp_frame(mac, bcast, (ANY, 68), (BCAST, 67), &bootp(2, 7)),
        udp_frame(mac, bcast, (ANY, 68), (BCAST, 67), &bootp(1, 7)[..200]),
        udp_frame(mac, bcast, (ANY, 68), (BCAST, 67), b"hello"),
        // Another source address than 0.0.0.0 that is not the instance's.
        udp_frame(mac, bcast, (GW, 68), (BCAST, 67), &bootp(1, 7)),
    ];
    for (i, f) in spoofed.iter().enumerate() {
        assert_eq!(
            verify(f, 3, &ports, own),
            Err(Refused::Spoofed),
            "frame {i}"
        );
    }
    // Port 68 held by another instance: its client's, not this one's.
    ports.claim(Proto::Udp, 68, 5).unwrap();
    assert_eq!(
        verify(&request(3, 7), 3, &ports, own),
        Err(Refused::Spoofed)
    );
    assert_eq!(verify(&request(5, 7), 5, &ports, own), Ok(()));
}

#[test]
fn the_reply_goes_to_the_instance_that_asked_or_to_port_68_s_holder() {
    let mut ports = PortMap::new();
    let me = |a: Ipv4Address| a == ME;
    let mut clients = Clients::new();
    clients.asked(3, 7);
    clients.asked(4, 8);
    for to in [BCAST, ME] {
        let Inbound::DhcpReply(xid) = inbound(&reply(to, 7), &ports, me, |_| false, NIC, GW) else {
            panic!("a reply to {to}");
        };
        assert_eq!(clients.client(xid), Some(3));
    }
    assert_eq!(clients.client(9), None);
    // To another host, or not from port 67, or a request: not for this machine's clients.
    let other = reply(Ipv4Address::new(10, 0, 2, 99), 7);
    assert_eq!(
        inbound(&other, &ports, me, |_| false, NIC, GW),
        Inbound::Drop(net::switch::Dropped::Unrouted)
    );
    let bcast = EthernetAddress::BROADCAST;
    let wrong = udp_frame(GW_MAC, bcast, (GW, 99), (BCAST, 68), &bootp(2, 7));
    assert!(!matches!(
        inbound(&wrong, &ports, me, |_| false, NIC, GW),
        Inbound::DhcpReply(_)
    ));
    assert!(!matches!(
        inbound(&request(3, 7), &ports, me, |_| false, NIC, GW),
        Inbound::DhcpReply(_)
    ));
    // A client listening on port 68 with a UDP socket gets it by port.
    ports.claim(Proto::Udp, 68, 5).unwrap();
    assert_eq!(
        inbound(&reply(BCAST, 7), &ports, me, |_| false, NIC, GW),
        Inbound::To(Route::Stack(5))
    );
    // The newest requests are remembered; an older one is forgotten.
    for i in 0..dhcp::CLIENTS as u32 {
        clients.asked(10, 100 + i);
    }
    assert_eq!(clients.client(7), None);
    assert_eq!(clients.client(100), Some(10));
    clients.asked(11, 100);
    assert_eq!(clients.client(100), Some(11));
}

#[test]
fn a_broadcast_leaves_as_one_and_others_need_the_gateway() {
    let mut f = request(3, 7);
    assert!(outbound(&mut f, NIC, None));
    let eth = EthernetFrame::new_checked(&f[..]).unwrap();
    assert_eq!(eth.src_addr(), NIC);
    assert!(eth.dst_addr().is_broadcast());
    let mut u = udp_frame(net::stack_mac(3), net::SWITCH_MAC, (ME, 9), (GW, 9), b"x");
    assert!(!outbound(&mut u, NIC, None));
    assert!(outbound(&mut u, NIC, Some(GW_MAC)));
    let eth = EthernetFrame::new_checked(&u[..]).unwrap();
    assert_eq!((eth.src_addr(), eth.dst_addr()), (NIC, GW_MAC));
}
