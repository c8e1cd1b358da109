//! Several stack instances joined by the switch, as the kernel joins them: the Linux answers
//! for TCP and UDP over 127.0.0.1 between instances.

use abi::Errno;
use net::stack::{Shut, SOL_SOCKET, SO_ERROR, SO_RCVBUF, SO_REUSEADDR};
use net::switch::{readdress, route, Route};
use net::{Instant, Ipv4Address, PortMap, Proto, SockId, Stack, StackId, LOOPBACK};

const LO: Ipv4Address = Ipv4Address::new(127, 0, 0, 1);

/// Instances and the port map; instance 0 rejects.
struct Machine {
    ports: PortMap,
    stacks: Vec<Stack>,
    now: Instant,
    dropped: usize,
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
            dropped: 0,
        }
    }

    /// Polls every instance and moves frames until nothing changes.
    fn settle(&mut self) {
        for _ in 0..100_000 {
            let mut moved = false;
            for i in 0..self.stacks.len() {
                self.stacks[i].poll(self.now, &mut self.ports);
                while let Some(mut f) = self.stacks[i].take_frame() {
                    moved = true;
                    let to = match route(&f, &self.ports, |a| a.is_loopback()) {
                        Route::Stack(id) => id as usize,
                        Route::Reject => 0,
                        Route::Reply(r) => {
                            self.stacks[i].deliver(r);
                            continue;
                        }
                        Route::Outside | Route::Drop(_) => {
                            self.dropped += 1;
                            continue;
                        }
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

    /// Advances the clock by `ms` and settles.
    fn wait(&mut self, ms: u64) {
        self.now += smoltcp_ms(ms);
        self.settle();
    }

    fn s(&mut self, i: usize) -> &mut Stack {
        &mut self.stacks[i]
    }

    fn listener(&mut self, i: usize, backlog: i32) -> (SockId, u16) {
        let l = self.stacks[i].socket(Proto::Tcp).unwrap();
        self.stacks[i].bind(l, LO, 0, &mut self.ports).unwrap();
        self.stacks[i].listen(l, backlog, &mut self.ports).unwrap();
        let port = self.stacks[i].local_addr(l).unwrap().1;
        (l, port)
    }

    fn connect(&mut self, i: usize, port: u16) -> SockId {
        let c = self.stacks[i].socket(Proto::Tcp).unwrap();
        let now = self.now;
        self.stacks[i]
            .connect(c, LO, port, &mut self.ports, now)
            .unwrap();
        self.settle();
        c
    }

    fn send(&mut self, i: usize, s: SockId, data: &[u8]) -> Result<usize, Errno> {
        let r = self.stacks[i].send(s, data, None, &mut self.ports);
        self.settle();
        r
    }

    fn recv(&mut self, i: usize, s: SockId, n: usize) -> Result<Vec<u8>, Errno> {
        let mut buf = vec![0; n];
        let r = self.stacks[i].recv(s, &mut buf, false);
        self.settle();
        let (got, _, _) = r?;
        buf.truncate(got);
        Ok(buf)
    }

    fn close(&mut self, i: usize, s: SockId) {
        let now = self.now;
        self.stacks[i].close(s, &mut self.ports, now);
        self.settle();
    }
}

fn smoltcp_ms(ms: u64) -> net::Duration {
    net::Duration::from_millis(ms)
}

#[test]
fn tcp_between_instances_connects_accepts_and_carries_data_both_ways() {
    let mut m = Machine::new(2);
    let (l, port) = m.listener(1, 4);
    assert_eq!(m.s(1).accept(l), Err(Errno::EAGAIN));
    let c = m.connect(2, port);
    assert_eq!(m.s(2).connect_outcome(c), Some(Ok(())));
    assert_eq!(m.s(1).poll_events(l) & abi::poll::POLLIN, abi::poll::POLLIN);
    let a = m.s(1).accept(l).unwrap();
    assert_eq!(m.s(1).peer_addr(a).unwrap(), m.s(2).local_addr(c).unwrap());
    assert_eq!(m.s(1).local_addr(a).unwrap(), (LO, port));
    assert_eq!(m.send(2, c, b"hello"), Ok(5));
    assert_eq!(m.recv(1, a, 100).unwrap(), b"hello");
    assert_eq!(m.recv(1, a, 100), Err(Errno::EAGAIN));
    // Bulk both ways through the 64 KiB windows.
    let data: Vec<u8> = (0..300_000u32).map(|i| (i * 7 % 251) as u8).collect();
    let (mut sent, mut got) = (0, Vec::new());
    while got.len() < data.len() {
        if sent < data.len() {
            sent += m.send(2, c, &data[sent..]).unwrap_or(0);
        }
        if let Ok(b) = m.recv(1, a, 10_000) {
            got.extend(b);
        }
    }
    assert_eq!(got, data);
    // Half close: the reader sees the end, the other direction still works.
    m.s(2).shutdown(c, Shut::Write).unwrap();
    m.settle();
    assert_eq!(m.recv(1, a, 10).unwrap(), b"");
    assert_eq!(m.send(1, a, b"back"), Ok(4));
    assert_eq!(m.recv(2, c, 10).unwrap(), b"back");
    assert_eq!(m.send(2, c, b"x"), Err(Errno::EPIPE));
    m.close(1, a);
    m.close(2, c);
    m.close(1, l);
    // TIME-WAIT holds the closing side's port for 10 s.
    assert!(!m.ports.is_empty());
    m.wait(11_000);
    assert!(m.stacks.iter().all(Stack::is_idle), "every socket closed");
    assert!(m.ports.is_empty(), "every port given back");
}

#[test]
fn a_port_nobody_holds_refuses_and_a_held_one_is_in_use() {
    let mut m = Machine::new(2);
    let c = m.connect(1, 5555);
    assert_eq!(m.s(1).connect_outcome(c), Some(Err(Errno::ECONNREFUSED)));
    assert_eq!(m.s(1).connect_outcome(c), Some(Err(Errno::ECONNREFUSED)));
    let (_, port) = m.listener(1, 1);
    let other = m.s(2).socket(Proto::Tcp).unwrap();
    assert_eq!(
        m.stacks[2].bind(other, LO, port, &mut m.ports),
        Err(Errno::EADDRINUSE)
    );
    let same = m.s(1).socket(Proto::Tcp).unwrap();
    assert_eq!(
        m.stacks[1].bind(same, LO, port, &mut m.ports),
        Err(Errno::EADDRINUSE)
    );
    m.stacks[1].bind(same, LO, 0, &mut m.ports).unwrap();
    assert_eq!(
        m.stacks[1].bind(same, LO, 0, &mut m.ports),
        Err(Errno::EINVAL)
    );
    let far = m.s(1).socket(Proto::Tcp).unwrap();
    let not_mine = Ipv4Address::new(10, 9, 9, 9);
    assert_eq!(
        m.stacks[1].bind(far, not_mine, 0, &mut m.ports),
        Err(Errno::EADDRNOTAVAIL)
    );
}

#[test]
fn a_backlog_holds_several_connections_before_accept() {
    let mut m = Machine::new(4);
    let (l, port) = m.listener(1, 4);
    let cs: Vec<_> = (2..5).map(|i| (i, m.connect(i, port))).collect();
    for &(i, c) in &cs {
        assert_eq!(m.s(i).connect_outcome(c), Some(Ok(())));
        assert_eq!(m.send(i, c, &[i as u8]), Ok(1));
    }
    let mut seen = Vec::new();
    for _ in 0..3 {
        let a = m.s(1).accept(l).unwrap();
        seen.push(m.recv(1, a, 10).unwrap()[0]);
    }
    seen.sort();
    assert_eq!(seen, [2, 3, 4]);
    assert_eq!(m.s(1).accept(l), Err(Errno::EAGAIN));
}

/// Starts a connection from each of `clients` to `port` without moving a frame: their SYNs
/// reach the listener together at the next settle.
fn connect_all(
    m: &mut Machine,
    clients: std::ops::Range<usize>,
    port: u16,
) -> Vec<(usize, SockId)> {
    let now = m.now;
    clients
        .map(|i| {
            let c = m.stacks[i].socket(Proto::Tcp).unwrap();
            m.stacks[i].connect(c, LO, port, &mut m.ports, now).unwrap();
            (i, c)
        })
        .collect()
}

#[test]
fn a_burst_of_syns_waits_for_the_listeners_sockets_instead_of_being_reset() {
    let mut m = Machine::new(13);
    let (l, port) = m.listener(1, 16);
    // Twelve SYNs in one queue, more than the pool's listening sockets (smoltcp would reset
    // the others): each waits for the pool's refill.
    let cs = connect_all(&mut m, 2..14, port);
    m.settle();
    for &(i, c) in &cs {
        assert_eq!(m.s(i).connect_outcome(c), Some(Ok(())), "client {i}");
    }
    for _ in &cs {
        m.s(1).accept(l).unwrap();
    }
    assert_eq!(m.s(1).accept(l), Err(Errno::EAGAIN));
}

#[test]
fn a_syn_beyond_a_full_backlog_is_dropped_and_sent_again_not_refused() {
    let mut m = Machine::new(7);
    let (l, port) = m.listener(1, 2);
    let cs = connect_all(&mut m, 2..8, port);
    m.settle();
    let connected = |m: &mut Machine| {
        cs.iter()
            .filter(|&&(i, c)| m.s(i).connect_outcome(c) == Some(Ok(())))
            .count()
    };
    // The backlog (2) and the one being accepted: three; the others wait, none refused.
    assert_eq!(connected(&mut m), 3);
    for &(i, c) in &cs {
        assert_ne!(m.s(i).connect_outcome(c), Some(Err(Errno::ECONNREFUSED)));
    }
    assert!(
        m.s(1).rx_dropped >= 3,
        "the SYNs beyond the backlog are dropped"
    );
    let mut accepted = 0;
    for _ in 0..20 {
        while m.s(1).accept(l).is_ok() {
            accepted += 1;
        }
        if accepted == cs.len() {
            break;
        }
        m.wait(1000);
    }
    assert_eq!(accepted, cs.len(), "the clients' SYNs sent again are taken");
    assert_eq!(connected(&mut m), cs.len());
}

#[test]
fn writing_to_a_closed_peer_resets_then_fails_with_epipe() {
    let mut m = Machine::new(2);
    let (l, port) = m.listener(1, 1);
    let c = m.connect(2, port);
    let a = m.s(1).accept(l).unwrap();
    m.close(1, a);
    assert_eq!(m.recv(2, c, 10).unwrap(), b"", "the FIN reads as the end");
    // The first write is taken; the closed end answers with a reset.
    assert_eq!(m.send(2, c, b"data"), Ok(4));
    assert_eq!(
        m.s(2).poll_events(c) & (abi::poll::POLLERR | abi::poll::POLLHUP),
        abi::poll::POLLERR | abi::poll::POLLHUP
    );
    // After the peer's FIN, Linux reports the reset as EPIPE.
    assert_eq!(m.send(2, c, b"more"), Err(Errno::EPIPE));
    assert_eq!(m.send(2, c, b"more"), Err(Errno::EPIPE));
}

#[test]
fn unread_data_at_close_resets_the_connection() {
    let mut m = Machine::new(2);
    let (l, port) = m.listener(1, 1);
    let c = m.connect(2, port);
    let a = m.s(1).accept(l).unwrap();
    assert_eq!(m.send(2, c, b"unread"), Ok(6));
    m.close(1, a);
    assert_eq!(m.recv(2, c, 10), Err(Errno::ECONNRESET));
    assert_eq!(m.s(2).option(c, SOL_SOCKET, SO_ERROR), Ok(0));
}

#[test]
fn reuseaddr_takes_a_port_held_only_by_closing_connections() {
    let mut m = Machine::new(2);
    let (l, port) = m.listener(1, 1);
    let c = m.connect(2, port);
    let a = m.s(1).accept(l).unwrap();
    // The server closes first: its end waits for the client's FIN.
    m.close(1, a);
    m.close(1, l);
    let plain = m.s(1).socket(Proto::Tcp).unwrap();
    assert_eq!(
        m.stacks[1].bind(plain, LO, port, &mut m.ports),
        Err(Errno::EADDRINUSE)
    );
    let reuse = m.s(1).socket(Proto::Tcp).unwrap();
    m.s(1)
        .set_option(reuse, SOL_SOCKET, SO_REUSEADDR, 1)
        .unwrap();
    m.stacks[1].bind(reuse, LO, port, &mut m.ports).unwrap();
    m.close(2, c);
}

#[test]
fn udp_keeps_datagram_boundaries_sources_and_cuts_long_ones() {
    let mut m = Machine::new(2);
    let a = m.s(1).socket(Proto::Udp).unwrap();
    m.stacks[1].bind(a, LO, 0, &mut m.ports).unwrap();
    let a_addr = m.s(1).local_addr(a).unwrap();
    let b = m.s(2).socket(Proto::Udp).unwrap();
    for n in [1, 100, 1400] {
        let data = vec![n as u8; n];
        assert_eq!(
            m.stacks[2].send(b, &data, Some(a_addr), &mut m.ports),
            Ok(n)
        );
    }
    m.settle();
    let (any, b_port) = m.s(2).local_addr(b).unwrap();
    assert!(
        any.is_unspecified() && b_port != 0,
        "sending bound the socket to a port"
    );
    let b_addr = (LO, b_port);
    let mut buf = [0; 2000];
    for n in [1, 100] {
        let (got, len, from) = m.s(1).recv(a, &mut buf, false).unwrap();
        assert_eq!((got, len, from), (n, n, Some(b_addr)));
    }
    let mut small = [0; 10];
    assert_eq!(m.s(1).recv(a, &mut small, false).unwrap().0, 10);
    assert_eq!(m.s(1).recv(a, &mut buf, false), Err(Errno::EAGAIN));
    assert_eq!(
        m.stacks[2].send(b, &[0; 2000], Some(a_addr), &mut m.ports),
        Err(Errno::EMSGSIZE)
    );
    assert_eq!(
        m.stacks[2].send(b, b"x", None, &mut m.ports),
        Err(Errno::EDESTADDRREQ)
    );
    assert_eq!(
        m.stacks[1].listen(a, 1, &mut m.ports),
        Err(Errno::EOPNOTSUPP)
    );
}

#[test]
fn options_read_back_as_linux_reports_them() {
    let mut m = Machine::new(1);
    let s = m.s(1).socket(Proto::Tcp).unwrap();
    m.s(1).set_option(s, SOL_SOCKET, SO_RCVBUF, 65536).unwrap();
    assert_eq!(m.s(1).option(s, SOL_SOCKET, SO_RCVBUF), Ok(131072));
    assert_eq!(m.s(1).option(s, SOL_SOCKET, 999), Err(Errno::ENOPROTOOPT));
    assert_eq!(m.s(1).peer_addr(s), Err(Errno::ENOTCONN));
    assert_eq!(
        m.stacks[1].send(s, b"x", None, &mut m.ports),
        Err(Errno::EPIPE)
    );
}

#[test]
fn a_raw_icmp_socket_pings_a_local_address_and_gets_the_reply() {
    let mut m = Machine::new(1);
    let s = m.s(1).socket(Proto::Icmp).unwrap();
    // An echo request with identifier 0x1234, sequence 1; the checksum is the sender's.
    let mut req = vec![8, 0, 0, 0, 0x12, 0x34, 0, 1, b'p', b'i', b'n', b'g'];
    let mut acc: u32 = req
        .chunks(2)
        .map(|c| u32::from(u16::from_be_bytes([c[0], c[1]])))
        .sum();
    while acc > 0xffff {
        acc = (acc & 0xffff) + (acc >> 16);
    }
    req[2..4].copy_from_slice(&(!(acc as u16)).to_be_bytes());
    assert_eq!(
        m.stacks[1].send(s, &req, Some((LO, 0)), &mut m.ports),
        Ok(req.len())
    );
    m.settle();
    let mut buf = [0u8; 200];
    let (n, full, from) = m.s(1).recv(s, &mut buf, false).unwrap();
    assert_eq!(
        (n, full, from),
        (20 + req.len(), 20 + req.len(), Some((LO, 0)))
    );
    // The reply: IPv4 from 127.0.0.1, ICMP type 0 with the request's identifier, sequence and
    // data.
    assert_eq!(buf[9], 1, "ICMP");
    assert_eq!(buf[20], 0, "echo reply");
    assert_eq!(&buf[24..n], &req[4..]);
    m.close(1, s);
    assert!(m.ports.is_empty(), "the identifier is given back");
}

#[test]
fn an_added_address_is_local_and_the_source_of_new_connections_outside() {
    let now = Instant::from_millis(1000);
    let me = Ipv4Address::new(10, 0, 2, 15);
    let own = Ipv4Address::new(10, 0, 2, 16);
    let mut s = Stack::new(
        1,
        &[LOOPBACK, net::Ipv4Cidr::new(me, 24)],
        Some(Ipv4Address::new(10, 0, 2, 2)),
        1,
        now,
    );
    assert!(!s.is_local(own));
    assert!(s.add_address(net::Ipv4Cidr::new(own, 24)));
    assert!(s.add_address(net::Ipv4Cidr::new(own, 24)), "twice is once");
    assert!(s.is_local(own) && s.is_local(me));
    let mut ports = PortMap::new();
    let c = s.socket(Proto::Tcp).unwrap();
    s.connect(c, Ipv4Address::new(10, 0, 2, 2), 80, &mut ports, now)
        .unwrap();
    assert_eq!(s.local_addr(c).unwrap().0, own);
}

#[test]
fn connections_list_sockets_as_proc_net_tcp_and_udp_show_them() {
    use net::{Connection, Owner};
    const ANY: (Ipv4Address, u16) = (Ipv4Address::UNSPECIFIED, 0);
    let mut m = Machine::new(2);
    // A fresh or only bound TCP socket is not listed (as on Linux).
    let fresh = m.s(1).socket(Proto::Tcp).unwrap();
    m.stacks[1]
        .bind(fresh, Ipv4Address::UNSPECIFIED, 0, &mut m.ports)
        .unwrap();
    assert_eq!(m.s(1).connections(Proto::Tcp), vec![]);
    let (l, port) = m.listener(1, 4);
    // The listener's holder, as the kernel records it (uid and the descriptor's inode).
    let holder = Owner {
        uid: 1000,
        inode: 77,
    };
    m.stacks[1].set_owner(l, holder).unwrap();
    let listening = Connection {
        local: (LO, port),
        remote: ANY,
        state: 10,
        tx_queue: 0,
        rx_queue: 0,
        owner: holder,
    };
    assert_eq!(m.s(1).connections(Proto::Tcp), vec![listening]);
    // A connection: the client's side established, with 3 bytes unread on the server's.
    let c = m.connect(2, port);
    let client = m.s(2).local_addr(c).unwrap();
    assert_eq!(m.send(2, c, b"abc"), Ok(3));
    // The server's delayed ACK (10 ms) goes out.
    m.wait(20);
    let mut server = m.s(1).connections(Proto::Tcp);
    assert_eq!(server.len(), 2, "{server:?}");
    assert_eq!(
        server.remove(0),
        Connection {
            rx_queue: 1,
            ..listening
        },
        "the listener counts one connection to accept"
    );
    assert_eq!(
        server[0],
        Connection {
            local: (LO, port),
            remote: client,
            state: 1,
            tx_queue: 0,
            rx_queue: 3,
            owner: Owner::default(),
        },
        "a connection waiting for accept has no holder"
    );
    assert_eq!(
        m.s(2).connections(Proto::Tcp),
        vec![Connection {
            local: client,
            remote: (LO, port),
            state: 1,
            tx_queue: 0,
            rx_queue: 0,
            owner: Owner::default(),
        }]
    );
    // Accepted, read and closed by the client first: the client's side in TIME-WAIT (6).
    let a = m.s(1).accept(l).unwrap();
    assert_eq!(m.recv(1, a, 10).unwrap(), b"abc");
    m.close(2, c);
    m.close(1, a);
    let states: Vec<u8> = m
        .s(2)
        .connections(Proto::Tcp)
        .iter()
        .map(|c| c.state)
        .collect();
    assert_eq!(states, vec![6]);
    m.wait(11_000);
    assert_eq!(m.s(2).connections(Proto::Tcp), vec![]);
    // UDP: unbound is not listed; bound is CLOSE (7), connected ESTABLISHED (1); no TCP line.
    let u = m.s(2).socket(Proto::Udp).unwrap();
    assert_eq!(m.s(2).connections(Proto::Udp), vec![]);
    m.stacks[2].bind(u, LO, 0, &mut m.ports).unwrap();
    let uport = m.s(2).local_addr(u).unwrap().1;
    let bound = Connection {
        local: (LO, uport),
        remote: ANY,
        state: 7,
        tx_queue: 0,
        rx_queue: 0,
        owner: Owner::default(),
    };
    assert_eq!(m.s(2).connections(Proto::Udp), vec![bound]);
    let now = m.now;
    m.stacks[2].connect(u, LO, 9, &mut m.ports, now).unwrap();
    assert_eq!(
        m.s(2).connections(Proto::Udp),
        vec![Connection {
            remote: (LO, 9),
            state: 1,
            ..bound
        }]
    );
    assert_eq!(m.s(2).connections(Proto::Tcp), vec![]);
}

#[test]
fn arrivals_count_what_came_to_a_socket_not_what_its_instance_did() {
    use abi::poll::{POLLIN, POLLOUT};
    let mut m = Machine::new(2);
    let (l, port) = m.listener(1, 4);
    let listened = m.s(1).arrivals(l, POLLIN);
    let c = m.connect(2, port);
    assert!(
        m.s(1).arrivals(l, POLLIN) > listened,
        "a connection to accept"
    );
    let a = m.s(1).accept(l).unwrap();
    // c and a second connection d live on instance 2; only what reaches a counts for a.
    let d = m.connect(2, port);
    let b = m.s(1).accept(l).unwrap();
    let at = |m: &mut Machine| m.s(1).arrivals(a, POLLIN);
    let start = at(&mut m);
    m.send(2, c, b"one").unwrap();
    let one = at(&mut m);
    assert!(one > start, "data arrived");
    m.wait(500);
    assert_eq!(
        at(&mut m),
        one,
        "the delayed ACK of that data brought a nothing"
    );
    m.send(2, d, b"other").unwrap();
    m.send(1, b, b"back").unwrap();
    m.wait(500);
    assert_eq!(
        at(&mut m),
        one,
        "traffic on the instance's other connection"
    );
    m.send(2, c, b"two").unwrap();
    let two = at(&mut m);
    assert!(two > one, "more data, the first still unread");
    assert_eq!(m.recv(1, a, 100).unwrap(), b"onetwo");
    m.wait(500);
    assert_eq!(
        at(&mut m),
        two,
        "reading it, and the window update that follows"
    );
    assert_eq!(m.s(1).arrivals(a, 0), 0, "nothing wanted, nothing counted");

    // Room to send: c's data is acknowledged.
    let room = m.s(2).arrivals(c, POLLOUT);
    m.send(2, c, b"three").unwrap();
    m.wait(500);
    assert!(
        m.s(2).arrivals(c, POLLOUT) > room,
        "acknowledged data freed room"
    );
    // The peer's FIN changes the state: reported even with data already waiting.
    let waiting = at(&mut m);
    m.close(2, c);
    assert!(at(&mut m) > waiting, "the FIN, with data unread");

    // UDP: each datagram into an empty queue, an empty one too.
    let u = m.s(1).socket(Proto::Udp).unwrap();
    m.stacks[1].bind(u, LO, 0, &mut m.ports).unwrap();
    let to = m.s(1).local_addr(u).unwrap();
    let v = m.s(2).socket(Proto::Udp).unwrap();
    for data in [&b"dgram"[..], b""] {
        let before = m.s(1).arrivals(u, POLLIN);
        m.stacks[2].send(v, data, Some(to), &mut m.ports).unwrap();
        m.settle();
        assert!(
            m.s(1).arrivals(u, POLLIN) > before,
            "datagram of {} bytes",
            data.len()
        );
        let mut buf = [0; 16];
        assert_eq!(m.s(1).recv(u, &mut buf, false).unwrap().0, data.len());
    }
}
