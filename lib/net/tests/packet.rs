//! Packet sockets (`AF_PACKET`): frames sent exactly as given and checked by the switch's
//! source verification like any frame of the instance, and copies of the instance's own
//! traffic received by protocol and interface, in a bounded queue.

use abi::Errno;
use net::packet::{ETH_P_ALL, IF_ETH, IF_LO, PACKET_HOST, PACKET_OUTGOING, PACKET_QUEUE};
use net::server::{verify, Refused};
use net::stack::FRAME_MAX;
use net::switch::{readdress, route, Route};
use net::{Instant, Ipv4Address, Ipv4Cidr, PortMap, Proto, SockId, Stack, StackId, LOOPBACK};
use smoltcp::phy::ChecksumCapabilities;
use smoltcp::wire::{
    EthernetAddress, EthernetFrame, EthernetProtocol, EthernetRepr, IpAddress, IpProtocol,
    Ipv4Packet, Ipv4Repr, TcpControl, TcpPacket, TcpRepr, TcpSeqNumber,
};

const LO: Ipv4Address = Ipv4Address::new(127, 0, 0, 1);
const ETH_P_IP: u16 = 0x0800;
const ETH_P_ARP: u16 = 0x0806;

/// A TCP reset from `src:sport` to `dst:dport`, from MAC `mac` to the switch.
fn tcp_frame(
    mac: EthernetAddress,
    src: Ipv4Address,
    sport: u16,
    dst: Ipv4Address,
    dport: u16,
) -> Vec<u8> {
    let tcp = TcpRepr {
        src_port: sport,
        dst_port: dport,
        control: TcpControl::Rst,
        seq_number: TcpSeqNumber(1),
        ack_number: None,
        window_len: 0,
        window_scale: None,
        max_seg_size: None,
        sack_permitted: false,
        sack_ranges: [None; 3],
        timestamp: None,
        payload: &[],
    };
    let ip = Ipv4Repr {
        src_addr: src,
        dst_addr: dst,
        next_header: IpProtocol::Tcp,
        payload_len: tcp.buffer_len(),
        hop_limit: 64,
    };
    let eth = EthernetRepr {
        src_addr: mac,
        dst_addr: net::SWITCH_MAC,
        ethertype: EthernetProtocol::Ipv4,
    };
    let mut out = vec![0; eth.buffer_len() + ip.buffer_len() + tcp.buffer_len()];
    let mut f = EthernetFrame::new_unchecked(&mut out[..]);
    eth.emit(&mut f);
    let caps = ChecksumCapabilities::default();
    let mut p = Ipv4Packet::new_unchecked(f.payload_mut());
    ip.emit(&mut p, &caps);
    tcp.emit(
        &mut TcpPacket::new_unchecked(p.payload_mut()),
        &IpAddress::Ipv4(src),
        &IpAddress::Ipv4(dst),
        &caps,
    );
    out
}

/// Instances joined by a switch that checks every frame's source, as the kernel's does.
struct Machine {
    ports: PortMap,
    stacks: Vec<Stack>,
    now: Instant,
    spoofed: usize,
}

impl Machine {
    fn new(n: usize) -> Machine {
        let now = Instant::from_millis(1000);
        let stacks = (0..=n)
            .map(|i| Stack::new(i as StackId, &[LOOPBACK], None, i as u64 + 1, now))
            .collect();
        Machine {
            ports: PortMap::new(),
            stacks,
            now,
            spoofed: 0,
        }
    }

    fn settle(&mut self) {
        for _ in 0..10_000 {
            let mut moved = false;
            for i in 0..self.stacks.len() {
                self.stacks[i].poll(self.now, &mut self.ports);
                while let Some(mut f) = self.stacks[i].take_frame() {
                    moved = true;
                    if i != 0 {
                        match verify(&f, i as StackId, &self.ports, |a| a.is_loopback()) {
                            Ok(()) => {}
                            Err(Refused::Spoofed) => {
                                self.spoofed += 1;
                                continue;
                            }
                            Err(why) => panic!("refused: {why:?}"),
                        }
                    }
                    let to = match route(&f, &self.ports, |a| a.is_loopback()) {
                        Route::Stack(id) => id as usize,
                        Route::Reject => 0,
                        Route::Reply(r) => {
                            self.stacks[i].deliver(r);
                            continue;
                        }
                        // The rejecting instance's answers to the switch's announcements.
                        Route::Drop(_) => continue,
                        Route::Outside => panic!("a frame for outside"),
                    };
                    readdress(&mut f, net::stack_mac(to as StackId));
                    if to == 0 {
                        self.stacks[0].learn_switch();
                    }
                    self.stacks[to].deliver(f);
                }
            }
            if !moved {
                return;
            }
        }
        panic!("the machine never settled");
    }

    /// A listener of instance `i` on 127.0.0.1: its socket and port.
    fn listener(&mut self, i: usize) -> (SockId, u16) {
        let l = self.stacks[i].socket(Proto::Tcp).unwrap();
        self.stacks[i].bind(l, LO, 0, &mut self.ports).unwrap();
        self.stacks[i].listen(l, 4, &mut self.ports).unwrap();
        let port = self.stacks[i].local_addr(l).unwrap().1;
        (l, port)
    }

    /// Every frame packet socket `p` of instance `i` holds.
    fn drain(&mut self, i: usize, p: SockId) -> Vec<(Vec<u8>, net::stack::LinkInfo)> {
        let mut out = Vec::new();
        let mut buf = [0u8; FRAME_MAX];
        while let Ok((n, full, info)) = self.stacks[i].packet_recv(p, &mut buf, false) {
            assert_eq!(n, full);
            out.push((buf[..n].to_vec(), info));
        }
        out
    }
}

/// Whether `f` is a TCP segment with source port `sport` and destination port `dport`.
fn is_tcp(f: &[u8], sport: u16, dport: u16) -> bool {
    let eth = EthernetFrame::new_checked(f).unwrap();
    if eth.ethertype() != EthernetProtocol::Ipv4 {
        return false;
    }
    let ip = Ipv4Packet::new_checked(eth.payload()).unwrap();
    ip.next_header() == IpProtocol::Tcp
        && TcpPacket::new_checked(ip.payload())
            .is_ok_and(|t| t.src_port() == sport && t.dst_port() == dport)
}

#[test]
fn a_frame_goes_out_exactly_as_given_or_is_refused_as_linux_refuses_it() {
    let mut s = Stack::new(1, &[LOOPBACK], None, 1, Instant::from_millis(0));
    let p = s.packet_socket(ETH_P_ALL, false).unwrap();
    let frame = tcp_frame(net::stack_mac(9), Ipv4Address::new(1, 2, 3, 4), 7, LO, 8);
    // No interface yet; eth0 needs a NIC.
    assert_eq!(s.send_frame(p, &frame, None), Err(Errno::ENXIO));
    assert_eq!(s.send_frame(p, &frame, Some(IF_ETH)), Err(Errno::ENXIO));
    assert_eq!(s.packet_bind(p, 0, IF_ETH), Err(Errno::ENODEV));
    assert_eq!(s.packet_bind(p, 0, 3), Err(Errno::ENODEV));
    assert_eq!(s.packet_bind(p, 0, IF_LO), Ok(()));
    assert_eq!(s.packet_name(p), Ok((ETH_P_ALL, IF_LO)));
    assert_eq!(s.send_frame(p, &frame[..13], None), Err(Errno::EINVAL));
    assert_eq!(
        s.send_frame(p, &[0; FRAME_MAX + 1], None),
        Err(Errno::EMSGSIZE)
    );
    assert_eq!(s.send_frame(p, &frame, None), Ok(frame.len()));
    assert_eq!(s.send_frame(p, &frame[..14], Some(IF_LO)), Ok(14));
    assert_eq!(s.take_frame(), Some(frame.clone()));
    assert_eq!(s.take_frame(), Some(frame[..14].to_vec()));
    assert_eq!(s.take_frame(), None);
    // The sender does not see its own frames.
    let mut buf = [0u8; 64];
    assert_eq!(s.packet_recv(p, &mut buf, false), Err(Errno::EAGAIN));
    // With a NIC, eth0 exists.
    let me = Ipv4Cidr::new(Ipv4Address::new(10, 0, 2, 15), 24);
    let mut s = Stack::new(2, &[LOOPBACK, me], None, 1, Instant::from_millis(0));
    let p = s.packet_socket(0, false).unwrap();
    assert_eq!(s.packet_bind(p, 0, IF_ETH), Ok(()));
    assert_eq!(s.packet_name(p), Ok((0, IF_ETH)));
    assert_eq!(s.send_frame(p, &frame, None), Ok(frame.len()));
    s.packet_close(p);
    assert_eq!(s.send_frame(p, &frame, None), Err(Errno::EBADF));
}

#[test]
fn spoofed_frames_are_refused_and_a_proper_one_passes() {
    let mut m = Machine::new(2);
    let (_, port) = m.listener(1);
    let p = m.stacks[1].packet_socket(ETH_P_ALL, false).unwrap();
    m.stacks[1].packet_bind(p, 0, IF_LO).unwrap();
    let own = net::stack_mac(1);
    let spoofed = [
        tcp_frame(net::stack_mac(2), LO, port, LO, port),
        tcp_frame(own, LO, port.wrapping_add(1), LO, port),
        tcp_frame(own, Ipv4Address::new(10, 9, 9, 9), port, LO, port),
    ];
    for f in &spoofed {
        m.stacks[1].send_frame(p, f, None).unwrap();
    }
    let proper = tcp_frame(own, LO, port, LO, port);
    m.stacks[1].send_frame(p, &proper, None).unwrap();
    m.settle();
    assert_eq!(m.spoofed, 3);
    // The proper one came back to its instance (the listener holds the port), readdressed.
    // (Besides its ARP answers to the switch's announcements.)
    let got: Vec<_> = m
        .drain(1, p)
        .into_iter()
        .filter(|g| g.1.protocol == ETH_P_IP)
        .collect();
    assert_eq!(got.len(), 1, "{got:?}");
    assert_eq!(got[0].0[12..], proper[12..]);
    assert_eq!(got[0].1.pkttype, PACKET_HOST);
    assert_eq!(got[0].1.source, net::SWITCH_MAC.0);
    assert_eq!(got[0].1.protocol, ETH_P_IP);
}

#[test]
fn packet_sockets_see_their_instance_s_connection_by_protocol() {
    let mut m = Machine::new(2);
    let all = m.stacks[1].packet_socket(ETH_P_ALL, false).unwrap();
    m.stacks[1].packet_bind(all, 0, IF_LO).unwrap();
    let ip = m.stacks[1].packet_socket(ETH_P_IP, false).unwrap();
    let arp = m.stacks[1].packet_socket(ETH_P_ARP, false).unwrap();
    let none = m.stacks[1].packet_socket(0, false).unwrap();
    let other = m.stacks[2].packet_socket(ETH_P_ALL, false).unwrap();
    let (l, port) = m.listener(1);
    let c = m.stacks[1].socket(Proto::Tcp).unwrap();
    let now = m.now;
    m.stacks[1].connect(c, LO, port, &mut m.ports, now).unwrap();
    m.settle();
    let a = m.stacks[1].accept(l).unwrap();
    let cport = m.stacks[1].local_addr(c).unwrap().1;
    m.stacks[1].send(c, b"hello", None, &mut m.ports).unwrap();
    m.settle();
    let mut buf = [0u8; 16];
    assert_eq!(m.stacks[1].recv(a, &mut buf, false).unwrap().0, 5);
    assert!(m.stacks[1].packet_events(all) & abi::poll::POLLIN != 0);
    let seen = m.drain(1, all);
    // Every segment twice: sent (outgoing) and delivered (to the instance), both ways.
    let count = |s: u16, d: u16, t: u8| {
        seen.iter()
            .filter(|(f, i)| is_tcp(f, s, d) && i.pkttype == t && i.ifindex == IF_LO)
            .count()
    };
    for t in [PACKET_OUTGOING, PACKET_HOST] {
        assert!(count(cport, port, t) >= 2, "{t}: {seen:?}");
        assert!(count(port, cport, t) >= 1, "{t}: {seen:?}");
    }
    assert!(seen
        .iter()
        .any(|(f, i)| i.pkttype == PACKET_HOST && f.ends_with(b"hello")));
    assert!(seen
        .iter()
        .all(|(f, i)| i.pkttype != PACKET_OUTGOING || f[6..12] == net::stack_mac(1).0));
    let host = seen
        .iter()
        .filter(|(_, i)| i.pkttype == PACKET_HOST)
        .count();
    let ip_seen = m.drain(1, ip);
    assert_eq!(ip_seen.len(), host);
    assert!(ip_seen.iter().all(|(_, i)| i.pkttype == PACKET_HOST));
    assert!(m.drain(1, arp).is_empty());
    assert!(m.drain(1, none).is_empty());
    // Another instance's packet socket sees none of it.
    assert!(m
        .drain(2, other)
        .iter()
        .all(|(f, _)| !is_tcp(f, port, cport) && !is_tcp(f, cport, port)));
    assert_eq!(m.stacks[1].packet_events(all), abi::poll::POLLOUT);
}

#[test]
fn a_full_queue_drops_and_counts() {
    let mut s = Stack::new(1, &[LOOPBACK], None, 1, Instant::from_millis(0));
    let tx = s.packet_socket(ETH_P_ALL, false).unwrap();
    s.packet_bind(tx, 0, IF_LO).unwrap();
    let rx = s.packet_socket(ETH_P_ALL, false).unwrap();
    let frame = tcp_frame(net::stack_mac(1), LO, 1, LO, 2);
    for _ in 0..PACKET_QUEUE + 10 {
        s.send_frame(tx, &frame, None).unwrap();
        s.take_frame().unwrap();
    }
    assert_eq!(s.packet_stats(rx), Ok(((PACKET_QUEUE + 10) as u32, 10)));
    assert_eq!(s.packet_stats(rx), Ok((0, 0)));
    assert_eq!(s.packet_available(rx), frame.len());
    // A short buffer gets the frame's start and its whole length; a peek leaves it.
    let mut buf = [0u8; 20];
    let (n, full, info) = s.packet_recv(rx, &mut buf, true).unwrap();
    assert_eq!((n, full, info.pkttype), (20, frame.len(), PACKET_OUTGOING));
    assert_eq!(buf[..], frame[..20]);
    let mut count = 0;
    while s.packet_recv(rx, &mut buf, false).is_ok() {
        count += 1;
    }
    assert_eq!(count, PACKET_QUEUE);
    assert_eq!(s.open_sockets(), 2);
    s.packet_close(tx);
    s.packet_close(rx);
    assert!(s.is_idle());
}
