//! One application's TCP/IP stack instance (LibrettOS §3.1): smoltcp's interface and sockets
//! behind the Linux socket semantics that unmodified programs expect.
//!
//! The instance exchanges Ethernet frames through two queues ([`Stack::deliver`],
//! [`Stack::take_frame`]); whoever owns it (the kernel) moves them to a switch, a NIC or a
//! network server, and calls [`Stack::poll`] after every change and when
//! [`Stack::next_deadline`] comes. Nothing here blocks: an operation that would wait answers
//! `EAGAIN`, and the caller sleeps until the next poll changed something.
//!
//! What smoltcp does not have and Linux programs need is built here:
//! - listen backlogs: a listening socket keeps a pool of smoltcp sockets listening on its port
//!   (one per connection it may accept, at most [`LISTEN_POOL`] listening at once), and an
//!   established one moves to the accept queue; a SYN that finds no socket listening waits
//!   for the pool's refill, or is dropped when the backlog is full (smoltcp would reset it);
//! - connect and error outcomes: a connection that closes before it was established was refused
//!   (`ECONNREFUSED`, or `ETIMEDOUT` after [`CONNECT_TIMEOUT`]); one that closes without the
//!   peer's FIN was reset (`ECONNRESET`; `EPIPE` after the FIN, as Linux); the error is
//!   reported once (`SO_ERROR` or the next call), then writes fail with `EPIPE`;
//! - closing: a closed socket lingers until its FIN handshake and TIME-WAIT end (or, short of
//!   TIME-WAIT, [`LINGER_LIMIT`]), holding its port;
//!   if unread data waits at close, or data arrives after it, the connection is reset, as
//!   Linux does;
//! - ports: every bound socket holds its port in the machine's [`PortMap`].
//!
//! Not built: IPv6, urgent data, `SO_LINGER`, UDP datagrams larger than one frame (smoltcp's
//! fragmentation is off: `EMSGSIZE`), broadcast, multicast. Socket buffers are fixed
//! ([`TCP_BUFFER`]): `SO_RCVBUF`/`SO_SNDBUF` are kept and reported as Linux reports them.

use crate::packet::{self, Captured, Tap, ETH_HEADER, IF_ETH, IF_LO, PACKET_OUTGOING};
use crate::portmap::{PortMap, Proto, StackId};
use abi::poll::{POLLERR, POLLHUP, POLLIN, POLLOUT, POLLRDHUP};
use abi::Errno;
use alloc::collections::VecDeque;
use alloc::vec::Vec;
use smoltcp::iface::{Config, Interface, SocketHandle, SocketSet};
use smoltcp::phy::{Device, DeviceCapabilities, Medium, RxToken, TxToken};
use smoltcp::socket::{raw, tcp, udp};
use smoltcp::storage::{PacketBuffer, PacketMetadata};
use smoltcp::time::{Duration, Instant};
use smoltcp::wire::{
    EthernetAddress, HardwareAddress, IpAddress, IpCidr, IpEndpoint, IpListenEndpoint, IpProtocol,
    IpVersion, Ipv4Address, Ipv4Cidr,
};

/// A socket's number in its instance.
pub type SockId = usize;

/// What [`Stack::recv`] got: bytes copied, the datagram's whole length (TCP: the bytes
/// copied) and, for UDP, its source.
pub type Received = (usize, usize, Option<(Ipv4Address, u16)>);

/// Bytes of each TCP socket's receive and send buffers.
pub const TCP_BUFFER: usize = 64 * 1024;
/// Bytes of each UDP socket's receive and send buffers.
pub const UDP_BUFFER: usize = 64 * 1024;
/// Datagrams each UDP socket's buffers hold.
pub const UDP_PACKETS: usize = 64;
/// Largest Ethernet frame (header included).
pub const FRAME_MAX: usize = 1514;
/// Largest UDP payload: one frame (no fragmentation).
pub const UDP_MAX: usize = FRAME_MAX - 14 - 20 - 8;
/// Frames each direction's queue holds; more inbound are dropped (TCP sends them again).
pub const QUEUE_FRAMES: usize = 256;
/// Most passes of smoltcp's egress in one [`Stack::poll`] (each sends at most one segment per
/// socket): a burst fits the NIC's queue (64 frames) and the network server's rings (64 cells).
pub const EGRESS_BURST: usize = 32;
/// Most smoltcp sockets a listener keeps listening at once (each holds its two 64 KiB buffers
/// from the start: four keep a listener near 512 KiB); the pool is refilled after every poll.
/// Established connections wait in the accept queue up to the backlog.
pub const LISTEN_POOL: usize = 4;
/// Most handshakes under way at once for one listener (Linux's SYN queue); a SYN that finds
/// the backlog or this full is dropped, as Linux drops it, and the client sends it again.
pub const HANDSHAKES_MAX: usize = 64;
/// Largest backlog (Linux's `somaxconn`).
pub const MAX_BACKLOG: usize = 4096;
/// A connection not established by then fails with `ETIMEDOUT`.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(60);
/// How long a connection stays in TIME-WAIT, holding its port (smoltcp's own delay; Linux
/// waits 60 s). Its socket is freed when TIME-WAIT begins: a segment that arrives for it
/// meanwhile is answered with a reset, where Linux would acknowledge a resent FIN again.
pub const TIME_WAIT: Duration = Duration::from_secs(10);
/// A closed socket still closing after this is reset (Linux's `tcp_fin_timeout`).
pub const LINGER_LIMIT: Duration = Duration::from_secs(60);
/// Idle time before keep-alive probes (Linux's `tcp_keepalive_time`).
pub const KEEPALIVE: Duration = Duration::from_secs(7200);

/// `SOL_SOCKET`.
pub const SOL_SOCKET: i32 = 1;
/// `IPPROTO_TCP`.
pub const IPPROTO_TCP: i32 = 6;
/// `SO_REUSEADDR`.
pub const SO_REUSEADDR: i32 = 2;
/// `SO_TYPE`.
pub const SO_TYPE: i32 = 3;
/// `SO_ERROR`.
pub const SO_ERROR: i32 = 4;
/// `SO_BROADCAST`.
pub const SO_BROADCAST: i32 = 6;
/// `SO_SNDBUF`.
pub const SO_SNDBUF: i32 = 7;
/// `SO_RCVBUF`.
pub const SO_RCVBUF: i32 = 8;
/// `SO_KEEPALIVE`.
pub const SO_KEEPALIVE: i32 = 9;
/// `SO_ACCEPTCONN`.
pub const SO_ACCEPTCONN: i32 = 30;
/// `TCP_NODELAY`.
pub const TCP_NODELAY: i32 = 1;
/// `SOCK_STREAM`.
pub const SOCK_STREAM: i32 = 1;
/// `SOCK_DGRAM`.
pub const SOCK_DGRAM: i32 = 2;
/// `SOCK_RAW`.
pub const SOCK_RAW: i32 = 3;
/// Size of the IPv4 header a raw socket's sends get (no options).
const IPV4_HEADER: usize = 20;
/// ICMP's echo request type.
const ICMP_ECHO_REQUEST: u8 = 8;
/// Smallest buffer size Linux reports (`SOCK_MIN_RCVBUF`).
const MIN_BUF_OPT: i32 = 2304;
/// Largest buffer size kept (Linux's default `rmem_max`, doubled).
const MAX_BUF_OPT: i32 = 2 * 212_992;

/// `shutdown`'s `how`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shut {
    /// `SHUT_RD`.
    Read,
    /// `SHUT_WR`.
    Write,
    /// `SHUT_RDWR`.
    Both,
}

/// The frame queues smoltcp reads and writes.
struct Queues {
    /// Frames delivered, oldest first.
    rx: VecDeque<Vec<u8>>,
    /// Frames sent, oldest first.
    tx: VecDeque<Vec<u8>>,
}

/// One delivered frame for smoltcp.
struct Rx(Vec<u8>);

impl RxToken for Rx {
    fn consume<R, F: FnOnce(&[u8]) -> R>(self, f: F) -> R {
        f(&self.0)
    }
}

/// Room for one frame smoltcp sends.
struct Tx<'a>(&'a mut VecDeque<Vec<u8>>);

impl TxToken for Tx<'_> {
    fn consume<R, F: FnOnce(&mut [u8]) -> R>(self, len: usize, f: F) -> R {
        let mut frame = alloc::vec![0; len];
        let r = f(&mut frame);
        self.0.push_back(frame);
        r
    }
}

impl Device for Queues {
    type RxToken<'a> = Rx;
    type TxToken<'a> = Tx<'a>;

    fn receive(&mut self, _: Instant) -> Option<(Rx, Tx<'_>)> {
        let frame = self.rx.pop_front()?;
        Some((Rx(frame), Tx(&mut self.tx)))
    }

    fn transmit(&mut self, _: Instant) -> Option<Tx<'_>> {
        (self.tx.len() < QUEUE_FRAMES).then_some(Tx(&mut self.tx))
    }

    fn capabilities(&self) -> DeviceCapabilities {
        let mut caps = DeviceCapabilities::default();
        caps.medium = Medium::Ethernet;
        caps.max_transmission_unit = FRAME_MAX;
        caps
    }
}

/// Options a socket keeps.
#[derive(Clone, Copy, Debug, Default)]
struct Options {
    /// `SO_REUSEADDR`.
    reuse_addr: bool,
    /// `SO_KEEPALIVE`.
    keep_alive: bool,
    /// `SO_BROADCAST`.
    broadcast: bool,
    /// `TCP_NODELAY`.
    no_delay: bool,
    /// `SO_RCVBUF` as reported (0: the default).
    rcvbuf: i32,
    /// `SO_SNDBUF` as reported (0: the default).
    sndbuf: i32,
}

/// A TCP connection (connecting, connected or over).
#[derive(Clone, Copy, Debug)]
struct Conn {
    /// Its smoltcp socket.
    handle: SocketHandle,
    /// It reached `ESTABLISHED` once.
    established: bool,
    /// The peer's FIN arrived.
    peer_fin: bool,
    /// It closed by a reset, a refusal or a timeout (the error went to [`Sock::error`]).
    failed: bool,
    /// When `connect` started it.
    started: Instant,
}

/// What a socket is doing.
#[derive(Debug)]
enum Role {
    /// A TCP socket neither listening nor connected (maybe bound).
    Fresh,
    /// A listening TCP socket.
    Listening {
        /// Connections it may hold not yet accepted.
        backlog: usize,
        /// smoltcp sockets listening or in the handshake.
        pool: Vec<SocketHandle>,
        /// Established connections not yet accepted (each holds the port once).
        ready: VecDeque<SocketHandle>,
    },
    /// A TCP connection.
    Stream(Conn),
    /// A raw ICMP socket (`SOCK_RAW`, `IPPROTO_ICMP`: what `ping` opens), with the peer
    /// `connect` chose. It holds, as its "port", the echo identifier of its last request.
    Raw {
        /// Its smoltcp socket.
        handle: SocketHandle,
        /// Where `send` goes and whose packets `recv` takes.
        peer: Option<Ipv4Address>,
    },
    /// A UDP socket, with the peer `connect` chose.
    Dgram {
        /// Its smoltcp socket.
        handle: SocketHandle,
        /// Where `send` goes and whose datagrams `recv` takes.
        peer: Option<IpEndpoint>,
    },
}

/// A socket as the program sees it.
#[derive(Debug)]
struct Sock {
    /// TCP or UDP.
    proto: Proto,
    /// The address it is bound to (`None`: any local address).
    addr: Option<Ipv4Address>,
    /// Its port (0: none yet); a socket with one holds it in the port map.
    port: u16,
    /// What it is doing.
    role: Role,
    /// An error not yet reported (`SO_ERROR`, or the next call).
    error: Option<Errno>,
    /// `shutdown(SHUT_RD)` happened.
    shut_rd: bool,
    /// `shutdown(SHUT_WR)` happened.
    shut_wr: bool,
    /// Its options.
    opts: Options,
    /// Who holds it ([`Stack::set_owner`]).
    owner: Owner,
    /// What the polls brought it ([`Stack::arrivals`]).
    arrivals: Arrivals,
}

/// A socket's levels: bytes (connections, for a listener) waiting to be read, bytes waiting
/// to be sent, the connection's state and whether an error waits. Compared across a poll,
/// they tell what the poll brought.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Levels {
    rx: usize,
    tx: usize,
    state: Option<tcp::State>,
    error: bool,
}

/// The polls that brought a socket something: what an edge-triggered `epoll` interest is
/// reported again for. Linux reports one at every arrival of data and every freeing of send
/// room, not only when readiness changes; the instance's one change announcement cannot say
/// which of its sockets it was about.
#[derive(Clone, Copy, Debug, Default)]
struct Arrivals {
    /// Its levels when the poll under way began.
    before: Levels,
    /// Polls after which more waited to be read (a datagram, even an empty one, into an
    /// empty queue), the connection changed state or an error came.
    rx: u64,
    /// Polls after which less waited to be sent (room freed), the connection changed state or
    /// an error came.
    tx: u64,
}

/// `sock`'s levels now.
fn levels(set: &SocketSet<'static>, sock: &Sock) -> Levels {
    let error = sock.error.is_some();
    match &sock.role {
        Role::Fresh => Levels {
            error,
            ..Levels::default()
        },
        Role::Listening { ready, .. } => Levels {
            rx: ready.len(),
            error,
            ..Levels::default()
        },
        Role::Stream(c) => {
            let s = set.get::<tcp::Socket>(c.handle);
            Levels {
                rx: s.recv_queue(),
                tx: s.send_queue(),
                state: Some(s.state()),
                error,
            }
        }
        Role::Dgram { handle, .. } => {
            let s = set.get::<udp::Socket>(*handle);
            Levels {
                rx: s.recv_queue() + usize::from(s.can_recv()),
                tx: s.send_queue(),
                state: None,
                error,
            }
        }
        Role::Raw { handle, .. } => {
            let s = set.get::<raw::Socket>(*handle);
            Levels {
                rx: s.recv_queue() + usize::from(s.can_recv()),
                tx: s.send_queue(),
                state: None,
                error,
            }
        }
    }
}

/// What `/proc/net/tcp` and `udp` show of a socket's holder (what `netstat -p` matches with
/// `/proc/<pid>/fd`): its user ID and the inode number of its descriptor (`socket:[inode]`).
/// Zero for a socket no descriptor holds (a connection waiting for `accept`), as on Linux.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Owner {
    /// The user ID of the process that made it.
    pub uid: u32,
    /// Its inode number.
    pub inode: u64,
}

/// A closed TCP connection finishing its close.
#[derive(Clone, Copy, Debug)]
struct Lingering {
    /// Its smoltcp socket, until TIME-WAIT (then freed with its buffers: a busy server's
    /// thousands of connections in TIME-WAIT would hold 128 KiB each).
    handle: Option<SocketHandle>,
    /// The port it holds.
    port: u16,
    /// When the program closed it; in TIME-WAIT, when that began.
    since: Instant,
    /// In TIME-WAIT: its local and remote ends (for `/proc/net/tcp`).
    ends: ((Ipv4Address, u16), (Ipv4Address, u16)),
}

impl Lingering {
    /// A connection closed at `now`, still closing in smoltcp socket `handle`.
    fn closing(handle: SocketHandle, port: u16, now: Instant) -> Self {
        let none = (Ipv4Address::UNSPECIFIED, 0);
        Lingering {
            handle: Some(handle),
            port,
            since: now,
            ends: (none, none),
        }
    }

    /// When it must be looked at next: the end of TIME-WAIT, or the limit of closing.
    fn deadline(&self) -> Instant {
        match self.handle {
            Some(_) => self.since + LINGER_LIMIT,
            None => self.since + TIME_WAIT,
        }
    }
}

/// One line of Linux's `/proc/net/tcp` or `/proc/net/udp`: a socket of an instance as the
/// machine's tables show it ([`Stack::connections`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Connection {
    /// The local address and port (0.0.0.0: any local address).
    pub local: (Ipv4Address, u16),
    /// The peer's address and port (0.0.0.0:0: none).
    pub remote: (Ipv4Address, u16),
    /// Linux's state number (`TCP_ESTABLISHED` 1 ... `TCP_LISTEN` 10, `TCP_CLOSING` 11; a
    /// UDP socket is 1 when connected, else 7, `TCP_CLOSE`).
    pub state: u8,
    /// Bytes queued to send (a listener: 0).
    pub tx_queue: usize,
    /// Bytes received not yet read (a listener: connections waiting for `accept`).
    pub rx_queue: usize,
    /// Who holds it (zero for a connection no descriptor holds).
    pub owner: Owner,
}

/// Linux's number for a TCP state (`include/net/tcp_states.h`).
fn linux_state(s: tcp::State) -> u8 {
    match s {
        tcp::State::Established => 1,
        tcp::State::SynSent => 2,
        tcp::State::SynReceived => 3,
        tcp::State::FinWait1 => 4,
        tcp::State::FinWait2 => 5,
        tcp::State::TimeWait => 6,
        tcp::State::Closed => 7,
        tcp::State::CloseWait => 8,
        tcp::State::LastAck => 9,
        tcp::State::Listen => 10,
        tcp::State::Closing => 11,
    }
}

/// One application's stack instance.
pub struct Stack {
    /// Its number (its ports' owner in the port map).
    id: StackId,
    /// smoltcp's interface.
    iface: Interface,
    /// Its frame queues.
    dev: Queues,
    /// smoltcp's sockets.
    set: SocketSet<'static>,
    /// The program's sockets by number; `None`: a free number.
    socks: Vec<Option<Sock>>,
    /// Closed connections still closing.
    lingering: Vec<Lingering>,
    /// The program's packet sockets by number (their own numbers); `None`: a free number.
    taps: Vec<Option<Tap>>,
    /// A packet socket got a frame since the last poll.
    tapped: bool,
    /// Inbound frames dropped: the queue was full, or a SYN found its listener's backlog full.
    pub rx_dropped: u64,
}

/// The destination and the source of Ethernet frame `frame` if it is a TCP SYN without ACK:
/// the first segment of a connection.
fn syn_of(frame: &[u8]) -> Option<(IpEndpoint, IpEndpoint)> {
    use smoltcp::wire::{EthernetFrame, EthernetProtocol, Ipv4Packet, TcpPacket};
    let e = EthernetFrame::new_checked(frame).ok()?;
    if e.ethertype() != EthernetProtocol::Ipv4 {
        return None;
    }
    let p = Ipv4Packet::new_checked(e.payload()).ok()?;
    if p.next_header() != IpProtocol::Tcp || p.frag_offset() != 0 || p.more_frags() {
        return None;
    }
    let t = TcpPacket::new_checked(p.payload()).ok()?;
    (t.syn() && !t.ack()).then(|| {
        (
            IpEndpoint::new(IpAddress::Ipv4(p.dst_addr()), t.dst_port()),
            IpEndpoint::new(IpAddress::Ipv4(p.src_addr()), t.src_port()),
        )
    })
}

/// A buffer of `n` zero bytes, or `ENOMEM`.
fn buffer(n: usize) -> Result<Vec<u8>, Errno> {
    let mut v = Vec::new();
    v.try_reserve_exact(n).map_err(|_| Errno::ENOMEM)?;
    v.resize(n, 0);
    Ok(v)
}

/// A new smoltcp TCP socket with Reef's defaults: smoltcp's delayed ACKs (10 ms, an ACK at once
/// for every full segment received, as Linux does), so that a reply carries the ACK of the
/// request it answers rather than a frame of its own.
fn tcp_socket(opts: &Options) -> Result<tcp::Socket<'static>, Errno> {
    let rx = tcp::SocketBuffer::new(buffer(TCP_BUFFER)?);
    let tx = tcp::SocketBuffer::new(buffer(TCP_BUFFER)?);
    let mut s = tcp::Socket::new(rx, tx);
    apply(&mut s, opts);
    Ok(s)
}

/// Applies the options smoltcp has to `s`.
fn apply(s: &mut tcp::Socket, opts: &Options) {
    s.set_nagle_enabled(!opts.no_delay);
    s.set_keep_alive(opts.keep_alive.then_some(KEEPALIVE));
}

/// A datagram buffer of [`UDP_PACKETS`] packets and [`UDP_BUFFER`] bytes, or `ENOMEM`.
fn packet_buffer<H: Copy>() -> Result<PacketBuffer<'static, H>, Errno> {
    let mut meta = Vec::new();
    meta.try_reserve_exact(UDP_PACKETS)
        .map_err(|_| Errno::ENOMEM)?;
    meta.resize(UDP_PACKETS, PacketMetadata::EMPTY);
    Ok(PacketBuffer::new(meta, buffer(UDP_BUFFER)?))
}

/// A new smoltcp UDP socket.
fn udp_socket() -> Result<udp::Socket<'static>, Errno> {
    Ok(udp::Socket::new(packet_buffer()?, packet_buffer()?))
}

/// A new smoltcp raw socket for ICMP over IPv4.
fn raw_socket() -> Result<raw::Socket<'static>, Errno> {
    let (rx, tx) = (packet_buffer()?, packet_buffer()?);
    Ok(raw::Socket::new(IpVersion::Ipv4, IpProtocol::Icmp, rx, tx))
}

/// Offers `frame` to every packet socket in `taps` but `except`: true if one took it.
fn capture(
    taps: &mut [Option<Tap>],
    frame: &[u8],
    ifindex: i32,
    pkttype: u8,
    except: Option<SockId>,
) -> bool {
    let mut took = false;
    for (i, tap) in taps.iter_mut().enumerate() {
        if let Some(t) = tap.as_mut().filter(|_| Some(i) != except) {
            took |= t.offer(frame, ifindex, pkttype);
        }
    }
    took
}

/// A datagram socket's `poll` events: `POLLIN` with a datagram waiting, `POLLOUT` with room.
fn datagram_events(can_recv: bool, can_send: bool) -> u16 {
    (if can_recv { POLLIN } else { 0 }) | if can_send { POLLOUT } else { 0 }
}

/// The endpoint of `addr:port` (`None` address: unspecified).
fn endpoint(addr: Option<Ipv4Address>, port: u16) -> (Ipv4Address, u16) {
    (addr.unwrap_or(Ipv4Address::UNSPECIFIED), port)
}

/// The IPv4 address and port of a smoltcp endpoint.
fn v4(e: IpEndpoint) -> (Ipv4Address, u16) {
    let IpAddress::Ipv4(a) = e.addr;
    (a, e.port)
}

impl Stack {
    /// A new instance numbered `id` with `addrs` (and, if given, a default gateway); `seed`
    /// makes its initial sequence numbers.
    pub fn new(
        id: StackId,
        addrs: &[Ipv4Cidr],
        gateway: Option<Ipv4Address>,
        seed: u64,
        now: Instant,
    ) -> Stack {
        let mut dev = Queues {
            rx: VecDeque::new(),
            tx: VecDeque::new(),
        };
        let mut config = Config::new(HardwareAddress::Ethernet(crate::stack_mac(id)));
        config.random_seed = seed;
        let mut iface = Interface::new(config, &mut dev, now);
        iface.update_ip_addrs(|a| {
            for &cidr in addrs {
                // An interface holds a few addresses; the kernel gives at most two.
                let _ = a.push(IpCidr::Ipv4(cidr));
            }
        });
        if let Some(gw) = gateway {
            // Fails only when the route table is full, and it is empty.
            let _ = iface.routes_mut().add_default_ipv4_route(gw);
        }
        let mut stack = Stack {
            id,
            iface,
            dev,
            set: SocketSet::new(Vec::new()),
            socks: Vec::new(),
            lingering: Vec::new(),
            taps: Vec::new(),
            tapped: false,
            rx_dropped: 0,
        };
        stack.learn_switch();
        stack
    }

    /// Queues the switch's announcements of the instance's addresses, so that it knows the
    /// switch as their neighbour without asking ([`crate::switch::announce`]). The entries
    /// expire after a minute of silence: call it again before delivering a frame that may
    /// need an immediate answer (the rejecting instance's).
    pub fn learn_switch(&mut self) {
        let mac = crate::stack_mac(self.id);
        for cidr in self.iface.ip_addrs() {
            let IpCidr::Ipv4(c) = cidr;
            self.dev
                .rx
                .push_back(crate::switch::announce(c.address(), mac));
        }
    }

    /// The source address for a packet to `dst` from a socket bound to any address: 127.0.0.1
    /// for the loopback network, else the first other address it has (smoltcp would take the
    /// first address whatever the destination).
    fn source_for(&self, dst: Ipv4Address) -> Ipv4Address {
        let loopback = crate::LOOPBACK.address();
        if dst.is_loopback() {
            return loopback;
        }
        // The last one given: an address of its own, if it has one ([`Stack::add_address`]).
        self.iface
            .ip_addrs()
            .iter()
            .map(|&IpCidr::Ipv4(c)| c.address())
            .rfind(|a| !a.is_loopback())
            .unwrap_or(loopback)
    }

    /// Gives the instance one more address (LibrettOS §3.3: an address of its own, kept in
    /// every mode), which new connections to outside use from now on. False if the interface
    /// holds no more.
    pub fn add_address(&mut self, cidr: Ipv4Cidr) -> bool {
        let mut added = false;
        self.iface.update_ip_addrs(|a| {
            added = a.contains(&IpCidr::Ipv4(cidr)) || a.push(IpCidr::Ipv4(cidr)).is_ok();
        });
        if added {
            self.learn_switch();
        }
        added
    }

    /// Its number.
    pub fn id(&self) -> StackId {
        self.id
    }

    /// Whether `a` is one of its addresses (or in its loopback network).
    pub fn is_local(&self, a: Ipv4Address) -> bool {
        a.is_loopback() || self.iface.has_ip_addr(a)
    }

    /// Queues an inbound frame; false (and counted) when the queue is full. Packet sockets
    /// of its protocol get a copy.
    pub fn deliver(&mut self, frame: Vec<u8>) -> bool {
        if self.dev.rx.len() >= QUEUE_FRAMES {
            self.rx_dropped += 1;
            return false;
        }
        if !self.taps.is_empty() {
            let ifindex = packet::ifindex_of(&frame, self.has_eth());
            let pkttype = packet::pkttype_of(&frame, self.mac());
            self.tapped |= capture(&mut self.taps, &frame, ifindex, pkttype, None);
        }
        self.dev.rx.push_back(frame);
        true
    }

    /// Gives back frames taken with [`Stack::take_frame`] that could not leave yet (the ring
    /// to the network server was full): they leave first next time, in their order, and
    /// while they wait the stack's own queue holds them (smoltcp sends no more than it holds).
    pub fn give_back(&mut self, frames: impl DoubleEndedIterator<Item = Vec<u8>>) {
        for f in frames.rev() {
            self.dev.tx.push_front(f);
        }
    }

    /// The oldest frame it sent, if any.
    pub fn take_frame(&mut self) -> Option<Vec<u8>> {
        self.dev.tx.pop_front()
    }

    /// Runs the stack: takes the delivered frames, sends what its sockets have, fires timers,
    /// and moves sockets along (accept queues, errors, closes). True if a socket's state may
    /// have changed or a frame went out.
    pub fn poll(&mut self, now: Instant, ports: &mut PortMap) -> bool {
        let before = self.dev.tx.len();
        for sock in self.socks.iter_mut().flatten() {
            sock.arrivals.before = levels(&self.set, sock);
        }
        let mut changed = false;
        loop {
            // smoltcp answers a SYN that finds no socket listening with a reset, though the
            // listener takes it once its pool is refilled (observe): it waits for that.
            let held = match self.first_unready_syn() {
                Some(at) => self.dev.rx.split_off(at),
                None => VecDeque::new(),
            };
            changed |= self.iface.poll(now, &mut self.dev, &mut self.set)
                != smoltcp::iface::PollResult::None;
            self.observe(now, ports);
            if held.is_empty() {
                break;
            }
            self.dev.rx.extend(held);
            if self.first_unready_syn() == Some(0) {
                // Still no socket: the backlog is full. Dropped, as Linux drops it (its
                // ListenDrops); the client sends it again.
                self.dev.rx.pop_front();
                self.rx_dropped += 1;
            }
        }
        // smoltcp sends at most one segment per socket in a poll: its egress runs again while
        // it sends, so that what the windows allow leaves in one pass rather than one segment
        // per pass (a pass per ACK that came).
        let mut burst = 1;
        while burst < EGRESS_BURST {
            let queued = self.dev.tx.len();
            changed |= self.iface.poll_egress(now, &mut self.dev, &mut self.set)
                != smoltcp::iface::PollResult::None;
            if self.dev.tx.len() == queued {
                break;
            }
            burst += 1;
        }
        if burst > 1 {
            self.observe(now, ports);
        }
        if !self.taps.is_empty() {
            // What smoltcp sent (poll only adds to the queue): for the `ETH_P_ALL` sockets.
            let eth = self.has_eth();
            for frame in self.dev.tx.range(before..) {
                let ifindex = packet::ifindex_of(frame, eth);
                capture(&mut self.taps, frame, ifindex, PACKET_OUTGOING, None);
            }
        }
        for sock in self.socks.iter_mut().flatten() {
            let (was, now) = (sock.arrivals.before, levels(&self.set, sock));
            let moved = was.state != now.state || was.error != now.error;
            if now.rx > was.rx || moved {
                sock.arrivals.rx += 1;
            }
            if now.tx < was.tx || moved {
                sock.arrivals.tx += 1;
            }
        }
        let tapped = core::mem::take(&mut self.tapped);
        changed || self.dev.tx.len() != before || tapped
    }

    /// How many polls brought socket `id` something of what `wanted` asks for (`POLLIN` or
    /// `POLLRDHUP`: something to read; `POLLOUT`: room to send): an edge-triggered `epoll`
    /// interest is reported again when the count moved, and only then (0 for no socket).
    pub fn arrivals(&self, id: SockId, wanted: u16) -> u64 {
        let Some(Some(sock)) = self.socks.get(id) else {
            return 0;
        };
        let a = sock.arrivals;
        let rx = if wanted & (POLLIN | POLLRDHUP) != 0 {
            a.rx
        } else {
            0
        };
        let tx = if wanted & POLLOUT != 0 { a.tx } else { 0 };
        rx.wrapping_add(tx)
    }

    /// The position in the inbound queue of the first SYN that would find none of its
    /// listener's sockets listening: the listener's pool has fewer free sockets than SYNs
    /// before it in the queue (a SYN sent again for a handshake under way does not count).
    fn first_unready_syn(&self) -> Option<usize> {
        // (listener's number, SYNs before this one that took one of its sockets)
        let mut taken: Vec<(usize, usize)> = Vec::new();
        for (at, frame) in self.dev.rx.iter().enumerate() {
            let Some((to, from)) = syn_of(frame) else {
                continue;
            };
            let listener = self.socks.iter().enumerate().find_map(|(i, s)| {
                let s = s.as_ref()?;
                match &s.role {
                    Role::Listening { pool, .. }
                        if s.port == to.port
                            && s.addr.is_none_or(|a| IpAddress::Ipv4(a) == to.addr) =>
                    {
                        Some((i, pool))
                    }
                    _ => None,
                }
            });
            let Some((i, pool)) = listener else {
                continue;
            };
            let state = |h: &SocketHandle| {
                let s = self.set.get::<tcp::Socket>(*h);
                (s.state(), s.remote_endpoint())
            };
            if pool
                .iter()
                .any(|h| state(h) == (tcp::State::SynReceived, Some(from)))
            {
                continue;
            }
            let free = pool
                .iter()
                .filter(|h| state(h).0 == tcp::State::Listen)
                .count();
            let used = match taken.iter_mut().find(|(l, _)| *l == i) {
                Some((_, n)) => {
                    *n += 1;
                    *n
                }
                None => {
                    if taken.try_reserve(1).is_err() {
                        return None;
                    }
                    taken.push((i, 1));
                    1
                }
            };
            if used > free {
                return Some(at);
            }
        }
        None
    }

    /// When it must be polled next without a frame arriving (`None`: not until then).
    pub fn next_deadline(&mut self, now: Instant) -> Option<Instant> {
        let timers = self.iface.poll_at(now, &self.set);
        let linger = self.lingering.iter().map(Lingering::deadline).min();
        match (timers, linger) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// No socket is open or closing: the instance may go.
    pub fn is_idle(&self) -> bool {
        self.lingering.is_empty()
            && self.socks.iter().all(Option::is_none)
            && self.taps.iter().all(Option::is_none)
    }

    /// Sockets the program has open (packet sockets included).
    pub fn open_sockets(&self) -> usize {
        self.socks.iter().flatten().count() + self.taps.iter().flatten().count()
    }

    /// Its TCP (`proto` [`Proto::Tcp`]) or UDP sockets as Linux's `/proc/net/tcp` and
    /// `/proc/net/udp` list them: listeners, connections in the handshake (a listener's pool
    /// in `SYN-RECV`), established ones (accepted or not), closed ones still closing
    /// (`FIN-WAIT`, `TIME-WAIT`, ...) and bound UDP sockets. As on Linux, a TCP socket only
    /// bound, or one whose connection is over (`CLOSED`), is not listed.
    pub fn connections(&self, proto: Proto) -> Vec<Connection> {
        let mut out = Vec::new();
        let tcp_line = |h: SocketHandle| {
            let s = self.set.get::<tcp::Socket>(h);
            let unspecified = (Ipv4Address::UNSPECIFIED, 0);
            (s.state() != tcp::State::Closed).then(|| Connection {
                local: s.local_endpoint().map_or(unspecified, v4),
                remote: s.remote_endpoint().map_or(unspecified, v4),
                state: linux_state(s.state()),
                tx_queue: s.send_queue(),
                rx_queue: s.recv_queue(),
                owner: Owner::default(),
            })
        };
        for sock in self.socks.iter().flatten().filter(|s| s.proto == proto) {
            match &sock.role {
                Role::Listening { pool, ready, .. } => {
                    out.push(Connection {
                        local: endpoint(sock.addr, sock.port),
                        remote: (Ipv4Address::UNSPECIFIED, 0),
                        state: linux_state(tcp::State::Listen),
                        tx_queue: 0,
                        rx_queue: ready.len(),
                        owner: sock.owner,
                    });
                    let handshakes = pool.iter().copied().filter(|&h| {
                        self.set.get::<tcp::Socket>(h).state() == tcp::State::SynReceived
                    });
                    out.extend(handshakes.chain(ready.iter().copied()).filter_map(tcp_line));
                }
                Role::Stream(c) => out.extend(tcp_line(c.handle).map(|line| Connection {
                    owner: sock.owner,
                    ..line
                })),
                Role::Dgram { handle, peer } if sock.port != 0 => {
                    let s = self.set.get::<udp::Socket>(*handle);
                    out.push(Connection {
                        local: endpoint(sock.addr, sock.port),
                        remote: peer.map_or((Ipv4Address::UNSPECIFIED, 0), v4),
                        state: if peer.is_some() { 1 } else { 7 },
                        tx_queue: s.send_queue(),
                        rx_queue: s.recv_queue(),
                        owner: sock.owner,
                    });
                }
                Role::Fresh | Role::Dgram { .. } | Role::Raw { .. } => {}
            }
        }
        if proto == Proto::Tcp {
            out.extend(self.lingering.iter().filter_map(|l| match l.handle {
                Some(h) => tcp_line(h),
                None => Some(Connection {
                    local: l.ends.0,
                    remote: l.ends.1,
                    state: linux_state(tcp::State::TimeWait),
                    tx_queue: 0,
                    rx_queue: 0,
                    owner: Owner::default(),
                }),
            }));
        }
        out
    }

    /// Moves sockets along after a poll: listeners' established connections to their accept
    /// queues, connections' outcomes to their errors, closed connections out.
    fn observe(&mut self, now: Instant, ports: &mut PortMap) {
        for i in 0..self.socks.len() {
            let Some(sock) = &mut self.socks[i] else {
                continue;
            };
            match &mut sock.role {
                Role::Listening { pool, ready, .. } => {
                    let mut j = 0;
                    while j < pool.len() {
                        let s = self.set.get_mut::<tcp::Socket>(pool[j]);
                        match s.state() {
                            tcp::State::Listen | tcp::State::SynReceived => j += 1,
                            tcp::State::Closed => {
                                // Reset during the handshake: listen again.
                                let _ = s.listen(IpListenEndpoint {
                                    addr: sock.addr.map(IpAddress::Ipv4),
                                    port: sock.port,
                                });
                                j += 1;
                            }
                            _ => {
                                let h = pool.swap_remove(j);
                                if ports.claim(Proto::Tcp, sock.port, self.id).is_ok() {
                                    ready.push_back(h);
                                } else {
                                    self.set.get_mut::<tcp::Socket>(h).abort();
                                    self.lingering.push(Lingering::closing(h, 0, now));
                                }
                            }
                        }
                    }
                }
                Role::Stream(c) => {
                    let s = self.set.get_mut::<tcp::Socket>(c.handle);
                    let state = s.state();
                    if !c.established
                        && !matches!(
                            state,
                            tcp::State::Closed
                                | tcp::State::Listen
                                | tcp::State::SynSent
                                | tcp::State::SynReceived
                        )
                    {
                        c.established = true;
                        s.set_timeout(None);
                    }
                    if matches!(
                        state,
                        tcp::State::CloseWait
                            | tcp::State::LastAck
                            | tcp::State::Closing
                            | tcp::State::TimeWait
                    ) {
                        c.peer_fin = true;
                    }
                    if state == tcp::State::Closed && !c.failed {
                        c.failed = true;
                        sock.error = Some(if c.established {
                            if c.peer_fin && sock.shut_wr {
                                // Both FINs went: a normal end (TIME-WAIT or LAST-ACK
                                // over), no error.
                                c.failed = false;
                                continue;
                            }
                            // Reset. After the peer's FIN (CLOSE-WAIT) Linux reports
                            // EPIPE: the peer had said it was done.
                            if c.peer_fin {
                                Errno::EPIPE
                            } else {
                                Errno::ECONNRESET
                            }
                        } else if now >= c.started + CONNECT_TIMEOUT {
                            Errno::ETIMEDOUT
                        } else {
                            Errno::ECONNREFUSED
                        });
                    }
                }
                Role::Fresh | Role::Dgram { .. } | Role::Raw { .. } => {}
            }
        }
        self.refill_listeners();
        let mut j = 0;
        while j < self.lingering.len() {
            let l = &mut self.lingering[j];
            let Some(handle) = l.handle else {
                // TIME-WAIT keeps the port: a new listener needs `SO_REUSEADDR` meanwhile, as
                // on Linux.
                if now >= l.since + TIME_WAIT {
                    if l.port != 0 {
                        ports.release(Proto::Tcp, l.port, self.id);
                    }
                    self.lingering.swap_remove(j);
                } else {
                    j += 1;
                }
                continue;
            };
            let s = self.set.get_mut::<tcp::Socket>(handle);
            match s.state() {
                tcp::State::Closed => {
                    self.set.remove(handle);
                    if l.port != 0 {
                        ports.release(Proto::Tcp, l.port, self.id);
                    }
                    self.lingering.swap_remove(j);
                }
                tcp::State::TimeWait => {
                    let none = (Ipv4Address::UNSPECIFIED, 0);
                    l.ends = (
                        s.local_endpoint().map_or(none, v4),
                        s.remote_endpoint().map_or(none, v4),
                    );
                    l.handle = None;
                    l.since = now;
                    self.set.remove(handle);
                    j += 1;
                }
                _ => {
                    if s.can_recv() || now >= l.since + LINGER_LIMIT {
                        // Data for a closed socket, or a peer that never finishes: reset.
                        s.abort();
                    }
                    j += 1;
                }
            }
        }
    }

    /// Tops up every listener's pool of listening sockets.
    fn refill_listeners(&mut self) {
        for sock in self.socks.iter_mut().flatten() {
            let Role::Listening {
                backlog,
                pool,
                ready,
            } = &mut sock.role
            else {
                continue;
            };
            let listening = |pool: &Vec<SocketHandle>, set: &SocketSet| {
                let is_listen =
                    |h: &&SocketHandle| set.get::<tcp::Socket>(**h).state() == tcp::State::Listen;
                pool.iter().filter(is_listen).count()
            };
            while listening(pool, &self.set) < LISTEN_POOL
                && pool.len() < HANDSHAKES_MAX
                && pool.len() + ready.len() < *backlog + 1
            {
                let Ok(mut s) = tcp_socket(&sock.opts) else {
                    // Out of memory: fewer connections wait; a later poll tries again.
                    break;
                };
                if s.listen(IpListenEndpoint {
                    addr: sock.addr.map(IpAddress::Ipv4),
                    port: sock.port,
                })
                .is_err()
                {
                    break;
                }
                pool.push(self.set.add(s));
            }
        }
    }

    /// The socket numbered `id` (`EBADF` if there is none: the caller's number is stale).
    fn sock(&mut self, id: SockId) -> Result<&mut Sock, Errno> {
        self.socks
            .get_mut(id)
            .and_then(Option::as_mut)
            .ok_or(Errno::EBADF)
    }

    /// A new socket: `SOCK_STREAM` (TCP), `SOCK_DGRAM` (UDP) or `SOCK_RAW` (ICMP).
    pub fn socket(&mut self, proto: Proto) -> Result<SockId, Errno> {
        let role = match proto {
            Proto::Tcp => Role::Fresh,
            Proto::Icmp => Role::Raw {
                handle: self.set.add(raw_socket()?),
                peer: None,
            },
            Proto::Udp => Role::Dgram {
                handle: self.set.add(udp_socket()?),
                peer: None,
            },
        };
        let sock = Sock {
            proto,
            addr: None,
            port: 0,
            role,
            error: None,
            shut_rd: false,
            shut_wr: false,
            opts: Options::default(),
            owner: Owner::default(),
            arrivals: Arrivals::default(),
        };
        let id = match self.socks.iter().position(Option::is_none) {
            Some(i) => i,
            None => {
                self.socks.try_reserve(1).map_err(|_| Errno::ENOMEM)?;
                self.socks.push(None);
                self.socks.len() - 1
            }
        };
        self.socks[id] = Some(sock);
        Ok(id)
    }

    /// `bind(addr, port)`: port 0 picks a free one. `EINVAL` if already bound,
    /// `EADDRNOTAVAIL` for an address that is not local, `EADDRINUSE` if the port is taken
    /// (`SO_REUSEADDR` lets a socket take a port held only by closing connections).
    pub fn bind(
        &mut self,
        id: SockId,
        addr: Ipv4Address,
        port: u16,
        ports: &mut PortMap,
    ) -> Result<(), Errno> {
        let local = addr.is_unspecified() || self.is_local(addr);
        let stack = self.id;
        let sock = self.sock(id)?;
        if sock.port != 0 {
            return Err(Errno::EINVAL);
        }
        if !local {
            return Err(Errno::EADDRNOTAVAIL);
        }
        if sock.proto == Proto::Icmp {
            // A raw socket has no port: binding chooses its source address.
            sock.addr = (!addr.is_unspecified()).then_some(addr);
            return Ok(());
        }
        let proto = sock.proto;
        let reuse = sock.opts.reuse_addr;
        let port = if port == 0 {
            ports.claim_ephemeral(proto, stack)?
        } else {
            let taken_here = self.socks.iter().flatten().any(|s| {
                s.proto == proto
                    && s.port == port
                    && !(reuse && s.opts.reuse_addr && matches!(s.role, Role::Stream(_)))
            });
            let lingering = proto == Proto::Tcp && self.lingering.iter().any(|l| l.port == port);
            if taken_here || (lingering && !reuse) {
                return Err(Errno::EADDRINUSE);
            }
            ports.claim(proto, port, stack)?;
            port
        };
        let sock = self.sock(id)?;
        sock.port = port;
        sock.addr = (!addr.is_unspecified()).then_some(addr);
        if let Role::Dgram { handle, .. } = sock.role {
            let addr = sock.addr.map(IpAddress::Ipv4);
            // Cannot fail: the port is not 0 and the socket was not bound.
            let _ = self
                .set
                .get_mut::<udp::Socket>(handle)
                .bind(IpListenEndpoint { addr, port });
        }
        Ok(())
    }

    /// Binds an unbound socket to a free port.
    fn autobind(&mut self, id: SockId, ports: &mut PortMap) -> Result<(), Errno> {
        if self.sock(id)?.port == 0 {
            self.bind(id, Ipv4Address::UNSPECIFIED, 0, ports)?;
        }
        Ok(())
    }

    /// `listen(backlog)`: `EOPNOTSUPP` for UDP, `EINVAL` for a connected socket; a listener
    /// only changes its backlog.
    pub fn listen(&mut self, id: SockId, backlog: i32, ports: &mut PortMap) -> Result<(), Errno> {
        let backlog = usize::try_from(backlog).unwrap_or(0).min(MAX_BACKLOG);
        match &mut self.sock(id)?.role {
            Role::Dgram { .. } | Role::Raw { .. } => return Err(Errno::EOPNOTSUPP),
            Role::Stream(_) => return Err(Errno::EINVAL),
            Role::Listening { backlog: b, .. } => {
                *b = backlog;
                return Ok(());
            }
            Role::Fresh => {}
        }
        self.autobind(id, ports)?;
        self.sock(id)?.role = Role::Listening {
            backlog,
            pool: Vec::new(),
            ready: VecDeque::new(),
        };
        self.refill_listeners();
        match &self.sock(id)?.role {
            Role::Listening { pool, .. } if pool.is_empty() => Err(Errno::ENOMEM),
            _ => Ok(()),
        }
    }

    /// `connect(addr, port)`. TCP: starts the handshake (`Ok` then means in progress: see
    /// [`Stack::connect_outcome`]); `EISCONN`, `EALREADY`, `EINVAL` (listening) as Linux.
    /// UDP: sets the peer.
    pub fn connect(
        &mut self,
        id: SockId,
        addr: Ipv4Address,
        port: u16,
        ports: &mut PortMap,
        now: Instant,
    ) -> Result<(), Errno> {
        let remote = IpEndpoint::new(IpAddress::Ipv4(addr), port);
        match &mut self.sock(id)?.role {
            Role::Raw { peer, .. } => {
                *peer = Some(addr);
                return Ok(());
            }
            Role::Dgram { .. } => {
                self.autobind(id, ports)?;
                if let Role::Dgram { peer, .. } = &mut self.sock(id)?.role {
                    *peer = Some(remote);
                }
                return Ok(());
            }
            Role::Listening { .. } => return Err(Errno::EINVAL),
            Role::Stream(c) if c.failed => return Err(Errno::EISCONN),
            Role::Stream(c) if c.established => return Err(Errno::EISCONN),
            Role::Stream(_) => return Err(Errno::EALREADY),
            Role::Fresh => {}
        }
        if port == 0 || addr.is_unspecified() {
            return Err(Errno::ECONNREFUSED);
        }
        self.autobind(id, ports)?;
        let source = self.source_for(addr);
        let sock = self.sock(id)?;
        let local = IpListenEndpoint {
            addr: Some(IpAddress::Ipv4(sock.addr.unwrap_or(source))),
            port: sock.port,
        };
        let mut s = tcp_socket(&sock.opts)?;
        s.set_timeout(Some(CONNECT_TIMEOUT));
        s.connect(self.iface.context(), remote, local)
            .map_err(|_| Errno::ENETUNREACH)?;
        let handle = self.set.add(s);
        self.sock(id)?.role = Role::Stream(Conn {
            handle,
            established: false,
            peer_fin: false,
            failed: false,
            started: now,
        });
        Ok(())
    }

    /// How a TCP `connect` ended: `None` while it is in progress, then `Ok` or its error
    /// (reported once).
    pub fn connect_outcome(&mut self, id: SockId) -> Option<Result<(), Errno>> {
        let sock = self.sock(id).ok()?;
        match sock.role {
            Role::Stream(c) if c.established => Some(Ok(())),
            Role::Stream(c) if c.failed => {
                Some(Err(sock.error.take().unwrap_or(Errno::ECONNREFUSED)))
            }
            _ => None,
        }
    }

    /// Records who holds socket `id` (shown in [`Stack::connections`]).
    pub fn set_owner(&mut self, id: SockId, owner: Owner) -> Result<(), Errno> {
        self.sock(id)?.owner = owner;
        Ok(())
    }

    /// `accept`: the oldest established connection, as a new socket; `EAGAIN` if none waits,
    /// `EINVAL` if the socket does not listen.
    pub fn accept(&mut self, id: SockId) -> Result<SockId, Errno> {
        let sock = self.sock(id)?;
        let Role::Listening { ready, .. } = &mut sock.role else {
            return Err(Errno::EINVAL);
        };
        let handle = ready.front().copied().ok_or(Errno::EAGAIN)?;
        let (addr, port, opts) = (sock.addr, sock.port, sock.opts);
        let new = self.socket(Proto::Tcp)?;
        if let Some(Role::Listening { ready, .. }) = self.socks[id].as_mut().map(|s| &mut s.role) {
            ready.pop_front();
        }
        let s = self.set.get_mut::<tcp::Socket>(handle);
        s.set_timeout(None);
        let peer_fin = !s.may_recv();
        let sock = self.sock(new)?;
        sock.addr = addr;
        sock.port = port;
        sock.opts = opts;
        sock.role = Role::Stream(Conn {
            handle,
            established: true,
            peer_fin,
            failed: false,
            started: Instant::ZERO,
        });
        self.refill_listeners();
        Ok(new)
    }

    /// Takes the pending error of a connection, if any.
    fn take_error(&mut self, id: SockId) -> Result<(), Errno> {
        match self.sock(id)?.error.take() {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// `send` on TCP, `sendto` on UDP (`to`: the destination, for UDP). Returns the bytes
    /// taken (TCP: fewer than given when the buffer fills; `EAGAIN` when none fit). TCP:
    /// `EPIPE` after `shutdown(SHUT_WR)` or when the connection is over (the caller raises
    /// SIGPIPE), a reset reported once as `ECONNRESET`, `EISCONN` with an address.
    /// UDP: `EDESTADDRREQ` without one, `EMSGSIZE` beyond one frame.
    pub fn send(
        &mut self,
        id: SockId,
        data: &[u8],
        to: Option<(Ipv4Address, u16)>,
        ports: &mut PortMap,
    ) -> Result<usize, Errno> {
        let sock = self.sock(id)?;
        match sock.role {
            Role::Fresh | Role::Listening { .. } => Err(Errno::EPIPE),
            Role::Stream(c) => {
                self.take_error(id)?;
                let sock = self.sock(id)?;
                if to.is_some() && c.established {
                    return Err(Errno::EISCONN);
                }
                if sock.shut_wr || c.failed {
                    return Err(Errno::EPIPE);
                }
                if !c.established {
                    return Err(Errno::EAGAIN);
                }
                let s = self.set.get_mut::<tcp::Socket>(c.handle);
                if !s.may_send() {
                    return Err(Errno::EPIPE);
                }
                match s.send_slice(data) {
                    Ok(0) if !data.is_empty() => Err(Errno::EAGAIN),
                    Ok(n) => Ok(n),
                    Err(_) => Err(Errno::EPIPE),
                }
            }
            Role::Raw { handle, peer } => {
                let dst = to.map(|t| t.0).or(peer).ok_or(Errno::EDESTADDRREQ)?;
                self.send_raw(id, handle, data, dst, ports)
            }
            Role::Dgram { handle, peer } => {
                if sock.shut_wr {
                    return Err(Errno::EPIPE);
                }
                let dst = match (to, peer) {
                    (Some((a, p)), _) => IpEndpoint::new(IpAddress::Ipv4(a), p),
                    (None, Some(p)) => p,
                    (None, None) => return Err(Errno::EDESTADDRREQ),
                };
                if data.len() > UDP_MAX {
                    return Err(Errno::EMSGSIZE);
                }
                if dst.port == 0 {
                    return Err(Errno::EINVAL);
                }
                self.autobind(id, ports)?;
                let IpAddress::Ipv4(dst_addr) = dst.addr;
                let meta = udp::UdpMetadata {
                    endpoint: dst,
                    local_address: Some(IpAddress::Ipv4(self.source_for(dst_addr))),
                    meta: Default::default(),
                };
                let s = self.set.get_mut::<udp::Socket>(handle);
                match s.send_slice(data, meta) {
                    Ok(()) => Ok(data.len()),
                    Err(udp::SendError::BufferFull) => Err(Errno::EAGAIN),
                    Err(udp::SendError::Unaddressable) => Err(Errno::ENETUNREACH),
                }
            }
        }
    }

    /// `recv` (`peek`: `MSG_PEEK`, the data stays). Returns the bytes copied and, for UDP,
    /// the datagram's length (a longer datagram than `out` is cut, and its rest dropped) and
    /// source. TCP: 0 at the end of the stream, `EAGAIN` while nothing waits, `ENOTCONN`
    /// before a connection, a reset reported once as `ECONNRESET`.
    pub fn recv(&mut self, id: SockId, out: &mut [u8], peek: bool) -> Result<Received, Errno> {
        let sock = self.sock(id)?;
        match sock.role {
            Role::Fresh | Role::Listening { .. } => Err(Errno::ENOTCONN),
            Role::Stream(c) => {
                self.take_error(id)?;
                let sock = self.sock(id)?;
                if sock.shut_rd {
                    return Ok((0, 0, None));
                }
                if !c.established {
                    return if c.failed {
                        Err(Errno::ENOTCONN)
                    } else {
                        Err(Errno::EAGAIN)
                    };
                }
                let s = self.set.get_mut::<tcp::Socket>(c.handle);
                if s.can_recv() {
                    let n = if peek {
                        s.peek_slice(out)
                    } else {
                        s.recv_slice(out)
                    }
                    .unwrap_or(0);
                    Ok((n, n, None))
                } else if s.may_recv() {
                    Err(Errno::EAGAIN)
                } else {
                    Ok((0, 0, None))
                }
            }
            Role::Raw { handle, peer } => {
                let s = self.set.get_mut::<raw::Socket>(handle);
                loop {
                    let packet =
                        if peek { s.peek() } else { s.recv() }.map_err(|_| Errno::EAGAIN)?;
                    // smoltcp hands raw sockets whole, checked IP packets.
                    let from = packet.get(12..16).map_or(Ipv4Address::UNSPECIFIED, |b| {
                        Ipv4Address::new(b[0], b[1], b[2], b[3])
                    });
                    if peer.is_some_and(|p| p != from) {
                        if peek {
                            let _ = s.recv();
                        }
                        continue;
                    }
                    let n = packet.len().min(out.len());
                    out[..n].copy_from_slice(&packet[..n]);
                    return Ok((n, packet.len(), Some((from, 0))));
                }
            }
            Role::Dgram { handle, peer } => {
                let s = self.set.get_mut::<udp::Socket>(handle);
                loop {
                    let (data, meta) = if peek {
                        s.peek().map(|(d, m)| (d, *m))
                    } else {
                        s.recv()
                    }
                    .map_err(|_| Errno::EAGAIN)?;
                    if peer.is_some_and(|p| p != meta.endpoint) {
                        if peek {
                            // A stray datagram at the head: drop it and look again.
                            let _ = s.recv();
                        }
                        continue;
                    }
                    let n = data.len().min(out.len());
                    out[..n].copy_from_slice(&data[..n]);
                    return Ok((n, data.len(), Some(v4(meta.endpoint))));
                }
            }
        }
    }

    /// `shutdown(how)`: `ENOTCONN` unless connected.
    pub fn shutdown(&mut self, id: SockId, how: Shut) -> Result<(), Errno> {
        let sock = self.sock(id)?;
        let connected = match sock.role {
            Role::Stream(c) => c.established || !c.failed,
            Role::Dgram { peer, .. } => peer.is_some(),
            Role::Raw { peer, .. } => peer.is_some(),
            _ => false,
        };
        if !connected {
            return Err(Errno::ENOTCONN);
        }
        if matches!(how, Shut::Read | Shut::Both) {
            sock.shut_rd = true;
        }
        if matches!(how, Shut::Write | Shut::Both) && !sock.shut_wr {
            sock.shut_wr = true;
            if let Role::Stream(c) = sock.role {
                self.set.get_mut::<tcp::Socket>(c.handle).close();
            }
        }
        Ok(())
    }

    /// The program closed the socket: a connection sends its FIN and lingers until its close
    /// ends (reset at once if unread data waits), a listener resets the connections it has
    /// not accepted, the port goes back once nothing uses it.
    pub fn close(&mut self, id: SockId, ports: &mut PortMap, now: Instant) {
        let Some(sock) = self.socks.get_mut(id).and_then(Option::take) else {
            return;
        };
        let release = |ports: &mut PortMap, port: u16| {
            if port != 0 {
                ports.release(sock.proto, port, self.id);
            }
        };
        match sock.role {
            Role::Fresh => release(ports, sock.port),
            Role::Dgram { handle, .. } | Role::Raw { handle, .. } => {
                self.set.remove(handle);
                release(ports, sock.port);
            }
            Role::Listening { pool, ready, .. } => {
                for h in pool {
                    self.set.remove(h);
                }
                for h in ready {
                    self.set.get_mut::<tcp::Socket>(h).abort();
                    self.lingering.push(Lingering::closing(h, sock.port, now));
                }
                release(ports, sock.port);
            }
            Role::Stream(c) => {
                let s = self.set.get_mut::<tcp::Socket>(c.handle);
                match s.state() {
                    tcp::State::Closed => {
                        self.set.remove(c.handle);
                        release(ports, sock.port);
                    }
                    tcp::State::TimeWait => self
                        .lingering
                        .push(Lingering::closing(c.handle, sock.port, now)),
                    _ => {
                        if s.can_recv() || s.state() == tcp::State::SynSent {
                            s.abort();
                        } else {
                            s.close();
                        }
                        self.lingering
                            .push(Lingering::closing(c.handle, sock.port, now));
                    }
                }
            }
        }
    }

    /// The `poll` events that hold for socket `id`, as Linux's (`POLLRDHUP` included: the
    /// caller keeps what was asked for).
    pub fn poll_events(&mut self, id: SockId) -> u16 {
        let Ok(sock) = self.sock(id) else {
            return POLLERR;
        };
        let err = if sock.error.is_some() { POLLERR } else { 0 };
        let (shut_rd, shut_wr) = (sock.shut_rd, sock.shut_wr);
        match sock.role {
            Role::Fresh => POLLOUT | POLLHUP,
            Role::Listening { ref ready, .. } => {
                if ready.is_empty() {
                    0
                } else {
                    POLLIN
                }
            }
            Role::Stream(c) => {
                if c.failed {
                    return POLLIN | POLLOUT | POLLHUP | POLLRDHUP | err;
                }
                if !c.established {
                    return err;
                }
                let s = self.set.get::<tcp::Socket>(c.handle);
                let mut ev = err;
                if s.can_recv() || !s.may_recv() || shut_rd {
                    ev |= POLLIN;
                }
                if c.peer_fin || !s.may_recv() || shut_rd {
                    ev |= POLLRDHUP;
                }
                if shut_wr || !s.may_send() || s.can_send() {
                    ev |= POLLOUT;
                }
                if (shut_wr && !s.may_recv()) || s.state() == tcp::State::Closed {
                    ev |= POLLHUP;
                }
                ev
            }
            Role::Dgram { handle, .. } => {
                let s = self.set.get::<udp::Socket>(handle);
                err | datagram_events(s.can_recv(), s.can_send())
            }
            Role::Raw { handle, .. } => {
                let s = self.set.get::<raw::Socket>(handle);
                err | datagram_events(s.can_recv(), s.can_send())
            }
        }
    }

    /// Bytes waiting to be read (`FIONREAD`; UDP: the next datagram's length).
    pub fn available(&mut self, id: SockId) -> usize {
        let Ok(sock) = self.sock(id) else {
            return 0;
        };
        match sock.role {
            Role::Stream(c) => self.set.get::<tcp::Socket>(c.handle).recv_queue(),
            Role::Dgram { handle, .. } => self
                .set
                .get_mut::<udp::Socket>(handle)
                .peek()
                .map_or(0, |(d, _)| d.len()),
            Role::Raw { handle, .. } => self
                .set
                .get_mut::<raw::Socket>(handle)
                .peek()
                .map_or(0, <[u8]>::len),
            _ => 0,
        }
    }

    /// `getsockname`: the local address and port (0.0.0.0:0 before `bind`).
    pub fn local_addr(&mut self, id: SockId) -> Result<(Ipv4Address, u16), Errno> {
        let sock = self.sock(id)?;
        let bound = endpoint(sock.addr, sock.port);
        if let Role::Stream(c) = sock.role {
            if let Some(e) = self.set.get::<tcp::Socket>(c.handle).local_endpoint() {
                return Ok(v4(e));
            }
        }
        Ok(bound)
    }

    /// `getpeername`: `ENOTCONN` unless connected.
    pub fn peer_addr(&mut self, id: SockId) -> Result<(Ipv4Address, u16), Errno> {
        let sock = self.sock(id)?;
        match sock.role {
            Role::Stream(c) if c.established && !c.failed => self
                .set
                .get::<tcp::Socket>(c.handle)
                .remote_endpoint()
                .map(v4)
                .ok_or(Errno::ENOTCONN),
            Role::Dgram { peer: Some(p), .. } => Ok(v4(p)),
            Role::Raw { peer: Some(p), .. } => Ok((p, 0)),
            _ => Err(Errno::ENOTCONN),
        }
    }

    /// `setsockopt` of an integer option: `ENOPROTOOPT` for options Reef does not have.
    pub fn set_option(
        &mut self,
        id: SockId,
        level: i32,
        name: i32,
        value: i32,
    ) -> Result<(), Errno> {
        let sock = self.sock(id)?;
        let on = value != 0;
        let size = |v: i32| v.clamp(MIN_BUF_OPT / 2, MAX_BUF_OPT / 2) * 2;
        match (level, name) {
            (SOL_SOCKET, SO_REUSEADDR) => sock.opts.reuse_addr = on,
            (SOL_SOCKET, SO_KEEPALIVE) => sock.opts.keep_alive = on,
            (SOL_SOCKET, SO_BROADCAST) => sock.opts.broadcast = on,
            (SOL_SOCKET, SO_RCVBUF) => sock.opts.rcvbuf = size(value),
            (SOL_SOCKET, SO_SNDBUF) => sock.opts.sndbuf = size(value),
            (IPPROTO_TCP, TCP_NODELAY) if sock.proto == Proto::Tcp => sock.opts.no_delay = on,
            _ => return Err(Errno::ENOPROTOOPT),
        }
        let opts = sock.opts;
        if let Role::Stream(c) = sock.role {
            apply(self.set.get_mut::<tcp::Socket>(c.handle), &opts);
        }
        Ok(())
    }

    /// `getsockopt` of an integer option (`SO_ERROR` takes the pending error).
    pub fn option(&mut self, id: SockId, level: i32, name: i32) -> Result<i32, Errno> {
        let sock = self.sock(id)?;
        let default_buf = match sock.proto {
            Proto::Tcp => 2 * TCP_BUFFER as i32,
            Proto::Udp | Proto::Icmp => 2 * UDP_BUFFER as i32,
        };
        let buf = |v: i32| if v == 0 { default_buf } else { v };
        Ok(match (level, name) {
            (SOL_SOCKET, SO_REUSEADDR) => sock.opts.reuse_addr.into(),
            (SOL_SOCKET, SO_KEEPALIVE) => sock.opts.keep_alive.into(),
            (SOL_SOCKET, SO_BROADCAST) => sock.opts.broadcast.into(),
            (SOL_SOCKET, SO_RCVBUF) => buf(sock.opts.rcvbuf),
            (SOL_SOCKET, SO_SNDBUF) => buf(sock.opts.sndbuf),
            (SOL_SOCKET, SO_TYPE) => match sock.proto {
                Proto::Tcp => SOCK_STREAM,
                Proto::Udp => SOCK_DGRAM,
                Proto::Icmp => SOCK_RAW,
            },
            (SOL_SOCKET, SO_ACCEPTCONN) => matches!(sock.role, Role::Listening { .. }).into(),
            (SOL_SOCKET, SO_ERROR) => sock.error.take().map_or(0, |e| e.0),
            (IPPROTO_TCP, TCP_NODELAY) if sock.proto == Proto::Tcp => sock.opts.no_delay.into(),
            _ => return Err(Errno::ENOPROTOOPT),
        })
    }

    /// Whether socket `id` keeps message boundaries (UDP and raw ICMP).
    pub fn is_dgram(&mut self, id: SockId) -> bool {
        self.sock(id).is_ok_and(|s| s.proto != Proto::Tcp)
    }

    /// A raw socket's send: `data` (an ICMP message) in an IPv4 packet to `dst`. An echo
    /// request's identifier becomes the socket's in the port map, so that the reply is routed
    /// back to this instance. `EMSGSIZE` beyond one frame, `EAGAIN` when the buffer is full.
    fn send_raw(
        &mut self,
        id: SockId,
        handle: SocketHandle,
        data: &[u8],
        dst: Ipv4Address,
        ports: &mut PortMap,
    ) -> Result<usize, Errno> {
        if data.len() > FRAME_MAX - 14 - IPV4_HEADER {
            return Err(Errno::EMSGSIZE);
        }
        let source = self.source_for(dst);
        let stack = self.id;
        let sock = self.sock(id)?;
        if data.len() >= 8 && data[0] == ICMP_ECHO_REQUEST {
            let ident = u16::from_be_bytes([data[4], data[5]]);
            if sock.port != ident {
                if sock.port != 0 {
                    ports.release(Proto::Icmp, sock.port, stack);
                }
                // Another instance's identifier: its replies will not come here.
                sock.port = if ports.claim(Proto::Icmp, ident, stack).is_ok() {
                    ident
                } else {
                    0
                };
            }
        }
        let src = sock.addr.unwrap_or(source);
        let mut packet = Vec::new();
        packet
            .try_reserve_exact(IPV4_HEADER + data.len())
            .map_err(|_| Errno::ENOMEM)?;
        let total = (IPV4_HEADER + data.len()) as u16;
        // Version 4, 5 words of header; no fragments; TTL 64; smoltcp fills the checksum.
        packet.extend_from_slice(&[0x45, 0]);
        packet.extend_from_slice(&total.to_be_bytes());
        packet.extend_from_slice(&[0, 0, 0, 0, 64, 1, 0, 0]);
        packet.extend_from_slice(&src.octets());
        packet.extend_from_slice(&dst.octets());
        packet.extend_from_slice(data);
        match self.set.get_mut::<raw::Socket>(handle).send_slice(&packet) {
            Ok(()) => Ok(data.len()),
            Err(_) => Err(Errno::EAGAIN),
        }
    }
}

/// Packet sockets (`AF_PACKET`, [`crate::packet`]): numbered apart from the other sockets.
impl Stack {
    /// Its MAC address.
    pub fn mac(&self) -> EthernetAddress {
        crate::stack_mac(self.id)
    }

    /// Whether it has an address besides the loopback network's (the machine has a NIC, and
    /// `eth0` exists).
    pub fn has_eth(&self) -> bool {
        self.iface
            .ip_addrs()
            .iter()
            .any(|&IpCidr::Ipv4(c)| !c.address().is_loopback())
    }

    /// Whether `ifindex` names one of its interfaces.
    fn has_interface(&self, ifindex: i32) -> bool {
        ifindex == IF_LO || (ifindex == IF_ETH && self.has_eth())
    }

    /// A new packet socket receiving `proto` (an ethertype, `ETH_P_ALL`, or 0: nothing until
    /// `bind` names one); `dgram`: a `SOCK_DGRAM` one, whose frames come and go without their
    /// Ethernet header.
    pub fn packet_socket(&mut self, proto: u16, dgram: bool) -> Result<SockId, Errno> {
        if let Some(i) = self.taps.iter().position(Option::is_none) {
            self.taps[i] = Some(Tap::new(proto, dgram));
            return Ok(i);
        }
        self.taps.try_reserve(1).map_err(|_| Errno::ENOMEM)?;
        self.taps.push(Some(Tap::new(proto, dgram)));
        Ok(self.taps.len() - 1)
    }

    /// Packet socket `id`.
    fn tap(&mut self, id: SockId) -> Result<&mut Tap, Errno> {
        self.taps
            .get_mut(id)
            .and_then(Option::as_mut)
            .ok_or(Errno::EBADF)
    }

    /// `bind` of packet socket `id` to interface `ifindex` (0: any) and protocol `proto` (0:
    /// the one it has): `ENODEV` for an interface it does not have.
    pub fn packet_bind(&mut self, id: SockId, proto: u16, ifindex: i32) -> Result<(), Errno> {
        if ifindex != 0 && !self.has_interface(ifindex) {
            return Err(Errno::ENODEV);
        }
        self.tap(id)?.bind(proto, ifindex);
        Ok(())
    }

    /// `getsockname` of packet socket `id`: its protocol and interface.
    pub fn packet_name(&mut self, id: SockId) -> Result<(u16, i32), Errno> {
        Ok(self.tap(id)?.name())
    }

    /// Packet socket `id` sends `frame`, a whole Ethernet frame, on interface `ifindex` (the
    /// one it is bound to when `None`): the frame goes into the outgoing queue exactly as given,
    /// and the instance's other `ETH_P_ALL` sockets see it. `ENXIO` without an interface (or
    /// with one it does not have), `EINVAL` shorter than an Ethernet header, `EMSGSIZE` longer
    /// than [`FRAME_MAX`], `ENOBUFS` with the queue full, `ENOMEM`.
    pub fn send_frame(
        &mut self,
        id: SockId,
        frame: &[u8],
        ifindex: Option<i32>,
    ) -> Result<usize, Errno> {
        let bound = self.tap(id)?.name().1;
        let ifindex = ifindex.unwrap_or(bound);
        if !self.has_interface(ifindex) {
            return Err(Errno::ENXIO);
        }
        if frame.len() < ETH_HEADER {
            return Err(Errno::EINVAL);
        }
        self.queue_frame(id, &[], frame, ifindex)
    }

    /// `SOCK_DGRAM` packet socket `id` sends `payload` (what follows the Ethernet header) to
    /// `to`: the protocol (an ethertype), interface and destination MAC of the `sockaddr_ll`
    /// given, or with none to the interface it is bound to with its protocol: `ENXIO`
    /// unbound, a zero destination MAC on `lo` and `EINVAL` on `eth0` (there is no
    /// destination: Linux's `dev_hard_header` fails). The
    /// instance writes the header with its own MAC as the source and queues the frame as
    /// [`Stack::send_frame`] does; `EMSGSIZE` for a payload longer than the MTU.
    pub fn send_datagram(
        &mut self,
        id: SockId,
        payload: &[u8],
        to: Option<(u16, i32, [u8; 6])>,
    ) -> Result<usize, Errno> {
        let bound = self.tap(id)?.name().1;
        let (proto, ifindex, dst) = match to {
            Some(to) => to,
            // Linux's `eth_header` sends a loopback device's frame to a zero MAC.
            None if bound == IF_LO => (self.tap(id)?.name().0, IF_LO, [0; 6]),
            None if self.has_interface(bound) => return Err(Errno::EINVAL),
            None => return Err(Errno::ENXIO),
        };
        if !self.has_interface(ifindex) {
            return Err(Errno::ENXIO);
        }
        let header = packet::header(dst, self.mac(), proto);
        self.queue_frame(id, &header, payload, ifindex)
            .map(|n| n - ETH_HEADER)
    }

    /// Queues the frame `header` followed by `body` that packet socket `id` sends on
    /// `ifindex`, shown to the instance's other `ETH_P_ALL` sockets: its length, or
    /// `EMSGSIZE` longer than [`FRAME_MAX`], `ENOBUFS` with the queue full, `ENOMEM`.
    fn queue_frame(
        &mut self,
        id: SockId,
        header: &[u8],
        body: &[u8],
        ifindex: i32,
    ) -> Result<usize, Errno> {
        let len = header.len() + body.len();
        if len > FRAME_MAX {
            return Err(Errno::EMSGSIZE);
        }
        if self.dev.tx.len() >= QUEUE_FRAMES {
            return Err(Errno::ENOBUFS);
        }
        let mut copy = Vec::new();
        copy.try_reserve_exact(len).map_err(|_| Errno::ENOMEM)?;
        copy.extend_from_slice(header);
        copy.extend_from_slice(body);
        self.dev.tx.try_reserve(1).map_err(|_| Errno::ENOMEM)?;
        self.tapped |= capture(&mut self.taps, &copy, ifindex, PACKET_OUTGOING, Some(id));
        self.dev.tx.push_back(copy);
        Ok(len)
    }

    /// Packet socket `id` receives one frame into `out` (`peek`: it stays queued): the bytes
    /// copied, the frame's whole length, and the frame's `sockaddr_ll` facts (its bytes past
    /// `out` are dropped). A `SOCK_DGRAM` socket gets what follows the Ethernet header, and
    /// its length. `EAGAIN` while none waits.
    pub fn packet_recv(
        &mut self,
        id: SockId,
        out: &mut [u8],
        peek: bool,
    ) -> Result<(usize, usize, LinkInfo), Errno> {
        let tap = self.tap(id)?;
        let skip = tap.skip();
        let c = tap.front().ok_or(Errno::EAGAIN)?;
        let data = c.frame.get(skip..).unwrap_or_default();
        let n = data.len().min(out.len());
        out[..n].copy_from_slice(&data[..n]);
        let r = (n, data.len(), LinkInfo::of(c));
        if !peek {
            tap.pop();
        }
        Ok(r)
    }

    /// The `poll` events of packet socket `id`: `POLLIN` with a frame waiting; `POLLOUT`
    /// always (a send never waits).
    pub fn packet_events(&mut self, id: SockId) -> u16 {
        match self.tap(id) {
            Ok(t) => POLLOUT | if t.front().is_some() { POLLIN } else { 0 },
            Err(_) => POLLERR,
        }
    }

    /// The length of what packet socket `id` would receive next (`FIONREAD`).
    pub fn packet_available(&mut self, id: SockId) -> usize {
        self.tap(id).ok().map_or(0, |t| {
            t.front()
                .map_or(0, |c| c.frame.len().saturating_sub(t.skip()))
        })
    }

    /// Whether packet socket `id` is a `SOCK_DGRAM` one.
    pub fn packet_is_dgram(&mut self, id: SockId) -> Result<bool, Errno> {
        Ok(self.tap(id)?.is_dgram())
    }

    /// `PACKET_STATISTICS` of packet socket `id` (and starts them again).
    pub fn packet_stats(&mut self, id: SockId) -> Result<(u32, u32), Errno> {
        Ok(self.tap(id)?.stats())
    }

    /// The program closed packet socket `id`: its queued frames go.
    pub fn packet_close(&mut self, id: SockId) {
        if let Some(t) = self.taps.get_mut(id) {
            *t = None;
        }
    }
}

/// What `recvfrom` tells of a frame a packet socket received (its `sockaddr_ll`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LinkInfo {
    /// Its ethertype.
    pub protocol: u16,
    /// The interface it was on.
    pub ifindex: i32,
    /// `PACKET_HOST`, ..., `PACKET_OUTGOING`.
    pub pkttype: u8,
    /// Its source MAC.
    pub source: [u8; 6],
}

impl LinkInfo {
    /// The facts of `c`.
    fn of(c: &Captured) -> LinkInfo {
        LinkInfo {
            protocol: c.protocol(),
            ifindex: c.ifindex,
            pkttype: c.pkttype,
            source: c.source(),
        }
    }
}
