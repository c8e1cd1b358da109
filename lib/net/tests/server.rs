//! Instances in server mode talking through the network server's rings, as the kernel and
//! `netd` drive them: connections between two server-mode instances and to the kernel's
//! rejecting instance, spoofed frames dropped, a server restarted in the middle of a transfer,
//! and frames from the NIC routed by port.

use net::ring::{Consumer, Page, Producer, Ring, CELL_DATA};
use net::server::{self, Control, Counter, PortTable, Server, NIC, PORT_PAGES, REGION_PAGES};
use net::switch::{readdress, route, Route};
use net::{EthernetAddress, Instant, Ipv4Address, PortMap, Proto, Stack, StackId, LOOPBACK};
use std::sync::atomic::AtomicU64;

const LO: Ipv4Address = Ipv4Address::new(127, 0, 0, 1);
const ME: Ipv4Address = Ipv4Address::new(10, 0, 2, 15);
const GW: Ipv4Address = Ipv4Address::new(10, 0, 2, 2);
const NIC_MAC: EthernetAddress = EthernetAddress([0x52, 0x54, 0, 0x12, 0x34, 0x56]);

fn leak_pages(n: usize) -> &'static [Page] {
    let v: Vec<Page> = (0..n)
        .map(|_| core::array::from_fn(|_| AtomicU64::new(0)))
        .collect();
    Vec::leak(v)
}

/// Instance 0 rejects (the kernel's, slot 0); instance `i` >= 1 is in server mode in slot `i`.
struct Machine {
    ports: PortMap,
    stacks: Vec<Stack>,
    now: Instant,
    region: &'static [Page],
    table: &'static [Page],
    server: Option<Server<'static, [Page], [Page]>>,
    /// The kernel's side of the rings to the server and from it, by slot.
    kout: Vec<Producer>,
    kin: Vec<Consumer>,
    /// Frames the server sent out of the NIC.
    wire: Vec<Vec<u8>>,
}

impl Machine {
    fn new(n: usize) -> Machine {
        let now = Instant::from_millis(1000);
        let stacks = (0..=n)
            .map(|i| {
                Stack::new(
                    i as StackId,
                    &[LOOPBACK, net::Ipv4Cidr::new(ME, 24)],
                    Some(GW),
                    i as u64 + 1,
                    now,
                )
            })
            .collect();
        let region = leak_pages(REGION_PAGES);
        let table = leak_pages(PORT_PAGES);
        let ctl = Control::new(region);
        ctl.init(Some(NIC_MAC), ME, GW);
        let mut ports = PortMap::new();
        ports.mirror_to(Box::leak(Box::new(PortTable::new(table))));
        for s in 1..=n {
            assert!(ctl.is_free(s));
            ctl.join(s, s as StackId, None);
        }
        let kout = (0..=NIC)
            .map(|s| Producer::resume(&Ring::new(region, server::to_server(s))))
            .collect();
        let kin = (0..=NIC)
            .map(|s| Consumer::resume(&Ring::new(region, server::from_server(s))))
            .collect();
        Machine {
            ports,
            stacks,
            now,
            region,
            table,
            server: Some(Server::attach(region, table).unwrap()),
            kout,
            kin,
            wire: Vec::new(),
        }
    }

    fn push(&mut self, s: usize, frame: &[u8]) {
        let _ = self.kout[s].push(&Ring::new(self.region, server::to_server(s)), frame);
    }

    /// The kernel's switch for slot 0's frames coming back: by port, or to the rejecter.
    fn kernel_deliver(&mut self, mut f: Vec<u8>) {
        let to = match route(&f, &self.ports, |a| a.is_loopback() || a == ME) {
            Route::Stack(id) => id as usize,
            Route::Reject => {
                self.stacks[0].learn_switch();
                0
            }
            _ => return,
        };
        readdress(&mut f, net::stack_mac(to as StackId));
        self.stacks[to].deliver(f);
    }

    fn settle(&mut self) {
        let mut buf = [0u8; CELL_DATA];
        for _ in 0..100_000 {
            let mut moved = false;
            for i in 0..self.stacks.len() {
                self.stacks[i].poll(self.now, &mut self.ports);
                while let Some(f) = self.stacks[i].take_frame() {
                    moved = true;
                    if i > 0 {
                        self.push(i, &f);
                        continue;
                    }
                    // The rejecter's answers: for an instance in server mode, through slot 0.
                    match route(&f, &self.ports, |a| a.is_loopback() || a == ME) {
                        Route::Stack(_) | Route::Outside => self.push(0, &f),
                        Route::Reply(r) => {
                            self.stacks[0].deliver(r);
                        }
                        Route::Reject | Route::Drop(_) => {}
                    }
                }
            }
            if let Some(server) = self.server.as_mut() {
                moved |= server.step(64).moved > 0;
            }
            for s in 0..=NIC {
                let ring = Ring::new(self.region, server::from_server(s));
                while let Some(got) = self.kin[s].pop(&ring, &mut buf) {
                    self.kin[s].commit(&ring);
                    moved = true;
                    let f = buf[..got.unwrap()].to_vec();
                    match s {
                        0 => self.kernel_deliver(f),
                        NIC => self.wire.push(f),
                        s => {
                            self.stacks[s].deliver(f);
                        }
                    }
                }
            }
            if !moved {
                return;
            }
        }
        panic!("the machine never settled");
    }

    fn counter(&self, c: Counter) -> u64 {
        Control::new(self.region).counter(c)
    }
}

#[test]
fn two_server_mode_instances_connect_and_carry_data_through_the_server() {
    let mut m = Machine::new(2);
    let l = m.stacks[1].socket(Proto::Tcp).unwrap();
    m.stacks[1].bind(l, LO, 7000, &mut m.ports).unwrap();
    m.stacks[1].listen(l, 4, &mut m.ports).unwrap();
    let c = m.stacks[2].socket(Proto::Tcp).unwrap();
    let now = m.now;
    m.stacks[2].connect(c, LO, 7000, &mut m.ports, now).unwrap();
    m.settle();
    assert_eq!(m.stacks[2].connect_outcome(c), Some(Ok(())));
    let a = m.stacks[1].accept(l).unwrap();
    let data: Vec<u8> = (0..200_000u32).map(|i| (i % 253) as u8).collect();
    let (mut sent, mut got) = (0, Vec::new());
    let mut buf = vec![0; 65536];
    let mut restarted = false;
    while got.len() < data.len() {
        if sent < data.len() {
            sent += m.stacks[2]
                .send(c, &data[sent..], None, &mut m.ports)
                .unwrap_or(0);
        }
        m.settle();
        if let Ok((n, _, _)) = m.stacks[1].recv(a, &mut buf, false) {
            got.extend_from_slice(&buf[..n]);
        }
        if !restarted && got.len() > data.len() / 2 {
            // The server is killed and started again: it maps the region and goes on.
            m.server = None;
            m.stacks[2].send(c, b"", None, &mut m.ports).ok();
            m.settle();
            m.server = Some(Server::attach(m.region, m.table).unwrap());
            restarted = true;
        }
        m.now += net::Duration::from_millis(10);
    }
    assert!(restarted);
    assert_eq!(got, data);
    assert_eq!(m.counter(Counter::Spoofed), 0);
    assert!(m.counter(Counter::Routed) > 100);
}

#[test]
fn a_port_nobody_holds_is_refused_by_the_kernels_rejecter() {
    let mut m = Machine::new(1);
    let c = m.stacks[1].socket(Proto::Tcp).unwrap();
    let now = m.now;
    m.stacks[1].connect(c, LO, 9, &mut m.ports, now).unwrap();
    m.settle();
    assert_eq!(
        m.stacks[1].connect_outcome(c),
        Some(Err(abi::Errno::ECONNREFUSED))
    );
}

#[test]
fn spoofed_and_malformed_frames_are_dropped_and_counted() {
    let mut m = Machine::new(2);
    let l = m.stacks[2].socket(Proto::Tcp).unwrap();
    m.stacks[2].bind(l, LO, 8000, &mut m.ports).unwrap();
    m.stacks[2].listen(l, 4, &mut m.ports).unwrap();
    // Instance 1 connects; its SYN is taken from its queue and rewritten before the kernel
    // side puts it in slot 1's ring.
    let c = m.stacks[1].socket(Proto::Tcp).unwrap();
    let now = m.now;
    m.stacks[1].connect(c, LO, 8000, &mut m.ports, now).unwrap();
    m.stacks[1].poll(now, &mut m.ports);
    let mut syn = None;
    while let Some(f) = m.stacks[1].take_frame() {
        if f[12..14] == [0x08, 0x00] {
            syn = Some(f);
        }
    }
    let syn = syn.expect("a SYN");
    // Another instance's MAC.
    let mut f = syn.clone();
    f[6..12].copy_from_slice(&net::stack_mac(2).0);
    m.push(1, &f);
    // A source port instance 1 does not hold (8000 is instance 2's).
    let mut f = syn.clone();
    f[14 + 20..14 + 22].copy_from_slice(&8000u16.to_be_bytes());
    m.push(1, &f);
    // A source address not the machine's.
    let mut f = syn.clone();
    f[14 + 12..14 + 16].copy_from_slice(&[10, 9, 9, 9]);
    m.push(1, &f);
    // Shorter than an Ethernet header.
    m.push(1, &[0xff; 10]);
    m.settle();
    assert_eq!(m.counter(Counter::Spoofed), 3);
    assert_eq!(m.counter(Counter::Malformed), 1);
    // A pool address: not instance 1's until the kernel says it got it in server mode.
    let own = [10, 0, 2, 16];
    let mut from_own = syn.clone();
    from_own[14 + 12..14 + 16].copy_from_slice(&own);
    m.push(1, &from_own);
    m.settle();
    assert_eq!(m.counter(Counter::Spoofed), 4);
    Control::new(m.region).set_slot_address(1, Ipv4Address::from(own));
    m.push(1, &from_own);
    m.settle();
    assert_eq!(m.counter(Counter::Spoofed), 4, "its own address now");
    assert_eq!(m.stacks[2].accept(l), Err(abi::Errno::EAGAIN));
    // The real SYN goes through.
    m.push(1, &syn);
    m.settle();
    m.now += net::Duration::from_millis(10);
    m.settle();
    assert!(m.stacks[2].accept(l).is_ok());
}

#[test]
fn frames_from_the_nic_go_by_port_and_the_gateway_is_learned() {
    let mut m = Machine::new(1);
    let l = m.stacks[1].socket(Proto::Tcp).unwrap();
    m.stacks[1].bind(l, ME, 80, &mut m.ports).unwrap();
    m.stacks[1].listen(l, 4, &mut m.ports).unwrap();
    // Instance 1 calls out: the server asks the gateway first.
    let c = m.stacks[1].socket(Proto::Tcp).unwrap();
    let now = m.now;
    m.stacks[1]
        .connect(c, Ipv4Address::new(10, 0, 2, 2), 5555, &mut m.ports, now)
        .unwrap();
    m.settle();
    assert_eq!(m.counter(Counter::NoGateway), 1);
    let ask = m.wire.pop().expect("an ARP request on the wire");
    assert_eq!(&ask[12..14], &[0x08, 0x06]);
    // A server started again asks at once (it knows no MAC yet).
    m.server = Some(Server::attach(m.region, m.table).unwrap());
    m.server.as_mut().unwrap().hello();
    m.settle();
    let ask = m.wire.pop().expect("the new server's ARP request");
    assert_eq!(&ask[12..14], &[0x08, 0x06]);
    assert_eq!(Control::new(m.region).gateway_mac(), None);
    // The gateway answers with a request of its own for the machine's address.
    let gw_mac = EthernetAddress([0x52, 0x55, 10, 0, 2, 2]);
    let question = net::switch::ask_gateway(gw_mac, GW, ME);
    m.push(NIC, &question);
    m.settle();
    let answer = m.wire.pop().expect("the machine's ARP answer");
    assert_eq!(&answer[6..12], &NIC_MAC.0);
    // Learned, and kept for the next server, which does not ask.
    assert_eq!(Control::new(m.region).gateway_mac(), Some(gw_mac));
    let sent = m.wire.len();
    m.server = Some(Server::attach(m.region, m.table).unwrap());
    m.server.as_mut().unwrap().hello();
    m.settle();
    assert_eq!(m.wire.len(), sent);
    // The retransmitted SYN now goes out to the gateway's MAC.
    m.now += net::Duration::from_millis(1500);
    m.settle();
    let syn = m
        .wire
        .iter()
        .find(|f| f[12..14] == [0x08, 0x00])
        .expect("a SYN out");
    assert_eq!((&syn[0..6], &syn[6..12]), (&gw_mac.0[..], &NIC_MAC.0[..]));
    // A SYN from outside to port 80 reaches instance 1: made from instance 1's own SYN,
    // turned around.
    let mut inbound = syn.clone();
    inbound[0..6].copy_from_slice(&NIC_MAC.0);
    inbound[6..12].copy_from_slice(&gw_mac.0);
    inbound[14 + 12..14 + 16].copy_from_slice(&[10, 0, 2, 2]);
    inbound[14 + 16..14 + 20].copy_from_slice(&ME.octets());
    inbound[14 + 20..14 + 22].copy_from_slice(&4444u16.to_be_bytes());
    inbound[14 + 22..14 + 24].copy_from_slice(&80u16.to_be_bytes());
    fix_checksums(&mut inbound);
    let before = m.wire.len();
    m.push(NIC, &inbound);
    m.settle();
    // Instance 1 answered with a SYN-ACK from port 80, out of the NIC.
    assert!(m.wire[before..]
        .iter()
        .any(|f| f[12..14] == [0x08, 0x00] && f[14 + 20..14 + 22] == 80u16.to_be_bytes()));
}

/// Recomputes the IPv4 header and TCP checksums of a frame.
fn fix_checksums(f: &mut [u8]) {
    use smoltcp::wire::{IpAddress, Ipv4Packet, TcpPacket};
    let mut ip = Ipv4Packet::new_checked(&mut f[14..]).unwrap();
    ip.fill_checksum();
    let (src, dst) = (ip.src_addr(), ip.dst_addr());
    let mut tcp = TcpPacket::new_checked(ip.payload_mut()).unwrap();
    tcp.fill_checksum(&IpAddress::Ipv4(src), &IpAddress::Ipv4(dst));
}

#[test]
fn pool_addresses_on_the_shared_nic_are_announced_and_answered() {
    let mut m = Machine::new(1);
    let own = Ipv4Address::new(10, 0, 2, 16);
    let ctl = Control::new(m.region);
    ctl.set_pool(own, 1, 1);
    ctl.announce();
    m.settle();
    let garp = m.wire.pop().expect("a gratuitous ARP for the pool address");
    assert_eq!(garp, net::switch::gratuitous(NIC_MAC, own));
    m.settle();
    assert!(m.wire.is_empty(), "announced once per request");
    // The gateway asks for it: the shared NIC answers.
    let gw_mac = EthernetAddress([0x52, 0x55, 10, 0, 2, 2]);
    m.push(NIC, &net::switch::ask_gateway(gw_mac, GW, own));
    m.settle();
    let answer = m.wire.pop().expect("an answer for the pool address");
    assert_eq!(&answer[6..12], &NIC_MAC.0);
    assert_eq!(&answer[14 + 14..14 + 18], &own.octets());
    // On a NIC of its own, the address is not the shared NIC's to answer for.
    ctl.set_pool(own, 1, 0);
    m.push(NIC, &net::switch::ask_gateway(gw_mac, GW, own));
    m.settle();
    assert!(m.wire.is_empty());
    // It went to its own NIC and came back between two of the server's steps: the served
    // bitmap looks unchanged, the request is not.
    ctl.set_pool(own, 1, 1);
    ctl.announce();
    m.settle();
    assert_eq!(m.wire.pop(), Some(net::switch::gratuitous(NIC_MAC, own)));
    ctl.set_pool(own, 1, 0);
    ctl.set_pool(own, 1, 1);
    ctl.announce();
    m.settle();
    assert_eq!(m.wire.pop(), Some(net::switch::gratuitous(NIC_MAC, own)));
}

#[test]
fn the_vif_swaps_macs_in_headers_and_arp_both_ways() {
    let stack = net::stack_mac(7);
    let own = Ipv4Address::new(10, 0, 2, 16);
    let mut f = net::switch::gratuitous(stack, own);
    net::switch::vif_out(&mut f, stack, NIC_MAC);
    assert_eq!(f, net::switch::gratuitous(NIC_MAC, own));
    let mut answer = net::switch::ask_gateway(GW_MAC_FOR_TEST, GW, own);
    // A reply-like frame to the NIC's MAC comes in for the instance's.
    answer[0..6].copy_from_slice(&NIC_MAC.0);
    net::switch::vif_in(&mut answer, NIC_MAC, stack);
    assert_eq!(&answer[0..6], &stack.0);
}

const GW_MAC_FOR_TEST: EthernetAddress = EthernetAddress([0x52, 0x55, 10, 0, 2, 2]);

#[test]
fn a_sleeping_server_is_woken_by_the_first_frame_of_a_slot_given_meanwhile() {
    let mut m = Machine::new(1);
    let ctl = Control::new(m.region);
    let ring = Ring::new(m.region, server::to_server(5));
    // Slot 5 served an instance that left: its ring's mark was used up.
    ctl.join(5, 8, None);
    m.kout[5].push(&ring, b"frame").unwrap();
    let server = m.server.as_mut().unwrap();
    server.step(64);
    ctl.leave(5);
    server.step(64);
    assert!(ctl.is_free(5));
    assert!(server.may_sleep());
    // The kernel gives slot 5 to another instance while the server sleeps.
    ctl.join(5, 9, None);
    let woke = m.kout[5].push(&ring, b"frame").unwrap();
    assert!(woke, "the push asks for a wake-up");
}
