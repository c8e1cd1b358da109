//! The network server (LibrettOS §3.2): a process that owns the shared NIC and switches the
//! frames of the stack instances in server mode, through rings in memory it shares with the
//! kernel.
//!
//! The kernel makes one [`region`](REGION_PAGES) of pages and maps it into the server: a
//! control page, then a pair of [`ring`](crate::ring)s per slot. Slot 0 is the kernel's own
//! switch (every instance not in server mode, and the rejecting instance); slots 1 to
//! [`SLOTS`]` - 1` are instances in server mode, one each; the pair [`NIC`] carries the frames
//! the NIC received (to the server) and the frames to send on it (from the server). The
//! control page has the NIC's MAC and the machine's addresses, the server's wake-up word
//! ([`W_EVENTS`]), its counters, and the slot table the kernel writes (which instance is in
//! which slot). The port map is a second mapping, [`PortTable`], which only the kernel writes
//! (the server's is read-only): a server that is killed and started again maps both again and
//! goes on from the counts the rings published.
//!
//! [`Server`] is the server's whole logic: it takes the frames each instance sent, checks that
//! their source MAC, address and port are the instance's own (a spoofed frame is dropped and
//! counted), and routes them with the kernel's switch rules ([`crate::switch`]): to the slot of
//! the instance holding the destination port, to slot 0 for the others, back for the proxy ARP
//! answers, or out of the NIC to the gateway. Frames from the NIC go by port the same way.

use crate::dhcp;
use crate::portmap::{Owners, PortMirror, Proto, StackId};
use crate::ring::{Consumer, Pages, PopError, Producer, PushError, Ring, CELL_DATA};
use crate::ring::{PAGE_WORDS, RING_PAGES};
use crate::switch::{self, Dropped, Inbound, Route};
use core::sync::atomic::{AtomicU64, Ordering};
use smoltcp::wire::{
    EthernetAddress, EthernetFrame, EthernetProtocol, Icmpv4Message, Icmpv4Packet, IpProtocol,
    Ipv4Address, Ipv4Packet, TcpPacket, UdpPacket,
};

/// The control page's first word.
pub const MAGIC: u64 = u64::from_le_bytes(*b"ReefNetd");
/// The layout's version: the server refuses a region of another.
pub const VERSION: u64 = 2;
/// Slots: the kernel's switch (0) and up to `SLOTS - 1` instances in server mode.
pub const SLOTS: usize = 16;
/// The ring pair of the NIC (after the slots').
pub const NIC: usize = SLOTS;
/// Pages of the region: the control page and two rings per slot and for the NIC.
pub const REGION_PAGES: usize = 1 + 2 * (SLOTS + 1) * RING_PAGES;
/// Pages of the port table: an owner (32 bits) for each port of each protocol.
pub const PORT_PAGES: usize = 3 * 65536 / 2 / PAGE_WORDS;

/// Control word: [`MAGIC`].
const W_MAGIC: usize = 0;
/// Control word: [`VERSION`].
const W_VERSION: usize = 1;
/// Control word: the NIC's MAC in its low six bytes, bit 63 set (0: no NIC).
const W_NIC_MAC: usize = 2;
/// Control word: the machine's address on the NIC (big-endian bytes in the low 32 bits).
const W_ADDRESS: usize = 3;
/// Control word: the gateway's address.
const W_GATEWAY: usize = 4;
/// Control word: the gateway's MAC once known (as [`W_NIC_MAC`]), written by the kernel when
/// it knew it first and by the server when it learns it, so a restarted server need not ask.
const W_GATEWAY_MAC: usize = 5;
/// Control word: the first address of the pool instances get their own addresses from
/// (LibrettOS §3.3: an instance that may move to its own NIC keeps one address in every mode).
const W_POOL_BASE: usize = 6;
/// Control word: bit `i` set while pool address `i` is some instance's (local to the machine).
const W_POOL_ASSIGNED: usize = 7;
/// Control word: bit `i` set while pool address `i` is reached through the shared NIC (its
/// instance is not on a NIC of its own): the server answers ARP for it (and announces it, see
/// [`W_POOL_ANNOUNCE`]).
const W_POOL_SERVED: usize = 9;
/// Control word: how many times an address came back to the shared NIC (the kernel adds one,
/// then wakes the server): the server announces every served address with a gratuitous ARP
/// when it changed. A count, not the bitmap's edges: an address that left and came back
/// between two of the server's steps is announced too.
const W_POOL_ANNOUNCE: usize = 10;
/// Control word: the server's wake-up word (its low 32 bits are a futex): the kernel adds one
/// and wakes it after a frame found a ring of the server's asleep.
pub const W_EVENTS: usize = 8;
/// Control words: the server's counters, by [`Counter`].
const W_COUNTERS: usize = 24;
/// Control words: the slot table, [`APP_WORDS`] per slot.
const W_APPS: usize = 64;
/// Words of a slot: its state (generation << 1 | active), its instance, the state the server
/// last acted on, the instance's own address (0: none).
const APP_WORDS: usize = 4;

/// The server's counters (in the control page, so the kernel reports them and a restarted
/// server goes on counting).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Counter {
    /// Frames delivered to a slot or the NIC.
    Routed,
    /// Frames an instance sent with a source MAC, address or port not its own.
    Spoofed,
    /// Frames that do not parse (or whose ring cell lied).
    Malformed,
    /// Frames of a kind the switch does not route.
    Unrouted,
    /// Frames dropped: the ring they were for was full.
    Full,
    /// Frames for outside dropped before the gateway's MAC was known.
    NoGateway,
}

impl Counter {
    /// Every counter, in report order.
    pub const ALL: [Counter; 6] = [
        Counter::Routed,
        Counter::Spoofed,
        Counter::Malformed,
        Counter::Unrouted,
        Counter::Full,
        Counter::NoGateway,
    ];

    /// Its name in reports.
    pub fn name(self) -> &'static str {
        match self {
            Counter::Routed => "routed",
            Counter::Spoofed => "spoofed",
            Counter::Malformed => "malformed",
            Counter::Unrouted => "unrouted",
            Counter::Full => "full",
            Counter::NoGateway => "no_gateway",
        }
    }
}

/// The first page of the ring carrying slot `s`'s frames to the server.
pub fn to_server(s: usize) -> usize {
    1 + 2 * s * RING_PAGES
}

/// The first page of the ring carrying the server's frames to slot `s`.
pub fn from_server(s: usize) -> usize {
    1 + (2 * s + 1) * RING_PAGES
}

/// A slot's state word: active, and its generation.
fn active(state: u64) -> bool {
    state & 1 != 0
}

/// The control page of a region (both sides read it; each writes its own words).
pub struct Control<'a, P: Pages + ?Sized> {
    /// The region's pages.
    pages: &'a P,
}

impl<'a, P: Pages + ?Sized> Control<'a, P> {
    /// The control page of `pages`.
    pub fn new(pages: &'a P) -> Self {
        Control { pages }
    }

    /// Control word `i`.
    fn word(&self, i: usize) -> Option<&'a AtomicU64> {
        self.pages.page(0).map(|p| &p[i])
    }

    /// Reads control word `i` (0 if the page is missing).
    fn get(&self, i: usize) -> u64 {
        self.word(i).map_or(0, |w| w.load(Ordering::Acquire))
    }

    /// Writes control word `i`.
    fn set(&self, i: usize, v: u64) {
        if let Some(w) = self.word(i) {
            w.store(v, Ordering::Release);
        }
    }

    /// The kernel, once: writes the layout's marks and the machine's addresses, and empties
    /// every ring.
    pub fn init(&self, nic: Option<EthernetAddress>, address: Ipv4Address, gateway: Ipv4Address) {
        self.set_mac(W_NIC_MAC, nic);
        self.set(W_ADDRESS, u64::from(u32::from(address)));
        self.set(W_GATEWAY, u64::from(u32::from(gateway)));
        for s in 0..=SLOTS {
            Ring::new(self.pages, to_server(s)).reset();
            Ring::new(self.pages, from_server(s)).reset();
        }
        self.set(W_VERSION, VERSION);
        self.set(W_MAGIC, MAGIC);
    }

    /// The MAC in word `i` (bit 63: present).
    fn mac(&self, i: usize) -> Option<EthernetAddress> {
        let w = self.get(i);
        let b = w.to_le_bytes();
        (w >> 63 != 0).then(|| EthernetAddress([b[0], b[1], b[2], b[3], b[4], b[5]]))
    }

    /// Writes `mac` into word `i`.
    fn set_mac(&self, i: usize, mac: Option<EthernetAddress>) {
        let w = mac.map_or(0, |m| {
            let mut b = [0u8; 8];
            b[..6].copy_from_slice(&m.0);
            u64::from_le_bytes(b) | 1 << 63
        });
        self.set(i, w);
    }

    /// The NIC's MAC, if the machine has one.
    pub fn nic_mac(&self) -> Option<EthernetAddress> {
        self.mac(W_NIC_MAC)
    }

    /// The gateway's MAC, if it is known.
    pub fn gateway_mac(&self) -> Option<EthernetAddress> {
        self.mac(W_GATEWAY_MAC)
    }

    /// The gateway is at `mac`.
    pub fn set_gateway_mac(&self, mac: EthernetAddress) {
        self.set_mac(W_GATEWAY_MAC, Some(mac));
    }

    /// The machine's address and its gateway's.
    pub fn addresses(&self) -> (Ipv4Address, Ipv4Address) {
        let a = |w| Ipv4Address::from(self.get(w) as u32);
        (a(W_ADDRESS), a(W_GATEWAY))
    }

    /// The pool's first address, and the bitmaps of its assigned and served addresses.
    pub fn pool(&self) -> (Ipv4Address, u64, u64) {
        (
            Ipv4Address::from(self.get(W_POOL_BASE) as u32),
            self.get(W_POOL_ASSIGNED),
            self.get(W_POOL_SERVED),
        )
    }

    /// The kernel: the pool starts at `base`; `assigned` and `served` are its bitmaps.
    pub fn set_pool(&self, base: Ipv4Address, assigned: u64, served: u64) {
        self.set(W_POOL_BASE, u64::from(u32::from(base)));
        self.set(W_POOL_ASSIGNED, assigned);
        self.set(W_POOL_SERVED, served);
    }

    /// The kernel: an address came back to the shared NIC; the server is to announce the
    /// served ones (the caller wakes it).
    pub fn announce(&self) {
        if let Some(w) = self.word(W_POOL_ANNOUNCE) {
            w.fetch_add(1, Ordering::AcqRel);
        }
    }

    /// Whether `a` is a pool address whose bit is set in `bits`.
    fn in_pool(&self, a: Ipv4Address, bits: u64) -> bool {
        let base = self.get(W_POOL_BASE) as u32;
        let i = u32::from(a).wrapping_sub(base);
        base != 0 && i < 64 && bits >> i & 1 != 0
    }

    /// The own address of the instance in slot `s`.
    fn slot_address(&self, s: usize) -> Option<Ipv4Address> {
        match self.get(W_APPS + s * APP_WORDS + 3) as u32 {
            0 => None,
            a => Some(Ipv4Address::from(a)),
        }
    }

    /// The server's wake-up word.
    pub fn events(&self) -> Option<&'a AtomicU64> {
        self.word(W_EVENTS)
    }

    /// Counter `c`'s value.
    pub fn counter(&self, c: Counter) -> u64 {
        self.get(W_COUNTERS + c as usize)
    }

    /// Counts one `c`.
    fn count(&self, c: Counter) {
        if let Some(w) = self.word(W_COUNTERS + c as usize) {
            w.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Slot `s`'s state word.
    fn state(&self, s: usize) -> u64 {
        self.get(W_APPS + s * APP_WORDS)
    }

    /// The instance in slot `s`, if the slot is active.
    pub fn instance(&self, s: usize) -> Option<StackId> {
        active(self.state(s)).then(|| self.get(W_APPS + s * APP_WORDS + 1) as StackId)
    }

    /// The state the server last acted on for slot `s`.
    fn seen(&self, s: usize) -> u64 {
        self.get(W_APPS + s * APP_WORDS + 2)
    }

    /// The kernel: whether slot `s` may take an instance (inactive, and the server has
    /// finished with its last one).
    pub fn is_free(&self, s: usize) -> bool {
        let state = self.state(s);
        !active(state) && self.seen(s) == state
    }

    /// The kernel: slot `s` is instance `id`'s from now on (a new generation); `address` is
    /// its own address, if it has one.
    pub fn join(&self, s: usize, id: StackId, address: Option<Ipv4Address>) {
        let next = (self.state(s) | 1).wrapping_add(2);
        self.set(W_APPS + s * APP_WORDS + 1, u64::from(id));
        self.set(
            W_APPS + s * APP_WORDS + 3,
            address.map_or(0, |a| u64::from(u32::from(a))),
        );
        self.set(W_APPS + s * APP_WORDS, next);
    }

    /// The kernel: slot `s`'s instance got its own address `a` while in server mode (the
    /// server checks its frames' sources against it from now).
    pub fn set_slot_address(&self, s: usize, a: Ipv4Address) {
        self.set(W_APPS + s * APP_WORDS + 3, u64::from(u32::from(a)));
    }

    /// The kernel: slot `s`'s instance left server mode; the server routes what it sent
    /// still, then frees the slot.
    pub fn leave(&self, s: usize) {
        self.set(W_APPS + s * APP_WORDS, self.state(s) & !1);
    }
}

/// The port map as the server reads it: a word per two ports, written by the kernel alone
/// (the [`PortMirror`] of its `PortMap`).
pub struct PortTable<'a, P: Pages + ?Sized> {
    /// [`PORT_PAGES`] pages.
    pages: &'a P,
}

impl<'a, P: Pages + ?Sized> PortTable<'a, P> {
    /// The table in `pages`.
    pub fn new(pages: &'a P) -> Self {
        PortTable { pages }
    }

    /// The word holding `port`'s owner, and the owner's shift in it.
    fn slot(&self, proto: Proto, port: u16) -> Option<(&'a AtomicU64, u32)> {
        let i = proto as usize * 65536 + usize::from(port);
        let page = self.pages.page(i / 2 / PAGE_WORDS)?;
        Some((&page[i / 2 % PAGE_WORDS], (i % 2) as u32 * 32))
    }

    /// Writes `port`'s holder (or last holder, not `held`). One writer at a time (the kernel,
    /// under its port map's lock). Instance numbers are below 2^31 (the top bit is `held`).
    pub fn write(&self, proto: Proto, port: u16, owner: StackId, held: bool) {
        if let Some((w, shift)) = self.slot(proto, port) {
            let entry = (owner & ID_MASK) | if held { HELD } else { 0 };
            let old = w.load(Ordering::Relaxed);
            let new = (old & !(0xffff_ffff << shift)) | u64::from(entry) << shift;
            w.store(new, Ordering::Release);
        }
    }

    /// `port`'s entry: its (last) holder's number and [`HELD`].
    fn entry(&self, proto: Proto, port: u16) -> u32 {
        self.slot(proto, port)
            .map_or(0, |(w, shift)| (w.load(Ordering::Acquire) >> shift) as u32)
    }
}

/// A [`PortTable`] entry's bit: the port is held (else its last holder is remembered).
const HELD: u32 = 1 << 31;
/// The bits of an instance number a [`PortTable`] keeps (the kernel numbers instances below
/// 2^31).
pub const ID_MASK: StackId = !HELD;

impl<P: Pages + ?Sized> Owners for PortTable<'_, P> {
    fn owner(&self, proto: Proto, port: u16) -> Option<StackId> {
        let e = self.entry(proto, port);
        (e & HELD != 0).then_some(e & ID_MASK)
    }

    fn last_holder(&self, proto: Proto, port: u16) -> Option<StackId> {
        let e = self.entry(proto, port);
        (e != 0).then_some(e & ID_MASK)
    }
}

impl<P: Pages + ?Sized + Sync> PortMirror for PortTable<'static, P> {
    fn set(&self, proto: Proto, port: u16, owner: StackId, held: bool) {
        self.write(proto, port, owner, held);
    }
}

/// Why the server refused a frame an instance sent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refused {
    /// Its source MAC, address or port is not the instance's.
    Spoofed,
    /// It does not parse.
    Malformed,
    /// A kind the switch does not route.
    Unrouted,
}

/// Checks a frame instance `id` sent (LibrettOS §3.2's verification): its source MAC must be
/// the instance's, and for ARP its sender's too; an IPv4 source must be one of the instance's
/// addresses (`own`: loopback, the machine's, its own if it has one); a TCP or UDP source
/// port, or an echo request's identifier, must be held by the instance in `ports` (or have
/// been, with nobody holding it since: the reset of an aborted connection). Any other
/// ICMP message is refused (an application's instance answers none: the rejecting instance,
/// the kernel's, does). The one frame from an address the instance does not own that passes
/// is a DHCP client's request from 0.0.0.0 ([`crate::dhcp::client_request`]) while no other
/// instance holds UDP port 68.
pub fn verify(
    frame: &[u8],
    id: StackId,
    ports: &(impl Owners + ?Sized),
    own: impl Fn(Ipv4Address) -> bool,
) -> Result<(), Refused> {
    let eth = EthernetFrame::new_checked(frame).map_err(|_| Refused::Malformed)?;
    let mac = crate::stack_mac(id);
    if eth.src_addr() != mac {
        return Err(Refused::Spoofed);
    }
    match eth.ethertype() {
        EthernetProtocol::Arp => {
            let a = switch::parse_arp(&eth).map_err(|why| match why {
                Dropped::Malformed => Refused::Malformed,
                Dropped::Unrouted => Refused::Unrouted,
            })?;
            if a.sender_mac != mac || !own(a.sender) {
                return Err(Refused::Spoofed);
            }
            Ok(())
        }
        EthernetProtocol::Ipv4 => {
            let ip = Ipv4Packet::new_checked(eth.payload()).map_err(|_| Refused::Malformed)?;
            if !own(ip.src_addr()) {
                let port_free = ports
                    .owner(Proto::Udp, dhcp::CLIENT_PORT)
                    .is_none_or(|o| o == id);
                if dhcp::client_request(frame).is_some() && port_free {
                    return Ok(());
                }
                return Err(Refused::Spoofed);
            }
            let malformed = |_| Refused::Malformed;
            let (proto, port) = match ip.next_header() {
                IpProtocol::Tcp => (
                    Proto::Tcp,
                    TcpPacket::new_checked(ip.payload())
                        .map_err(malformed)?
                        .src_port(),
                ),
                IpProtocol::Udp => (
                    Proto::Udp,
                    UdpPacket::new_checked(ip.payload())
                        .map_err(malformed)?
                        .src_port(),
                ),
                IpProtocol::Icmp => {
                    let i = Icmpv4Packet::new_checked(ip.payload()).map_err(malformed)?;
                    if i.msg_type() != Icmpv4Message::EchoRequest {
                        return Err(Refused::Spoofed);
                    }
                    (Proto::Icmp, i.echo_ident())
                }
                _ => return Err(Refused::Spoofed),
            };
            if ports.last_holder(proto, port) != Some(id) {
                return Err(Refused::Spoofed);
            }
            Ok(())
        }
        _ => Err(Refused::Unrouted),
    }
}

/// Why [`Server::attach`] refused a region.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AttachError {
    /// Pages are missing.
    Short,
    /// The control page does not start with [`MAGIC`].
    Magic,
    /// The layout is another [`VERSION`].
    Version,
}

/// What one [`Server::step`] did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Step {
    /// Frames it took from the rings.
    pub moved: usize,
    /// The kernel's rings it put frames in while the kernel slept, or whose ring to it had
    /// filled and has room again: bit `s` for slot `s`, bit [`NIC`] for the NIC (frames to
    /// send, or room for the frames the NIC received; the server asks the kernel to look at
    /// them).
    pub kick: u32,
}

/// The network server's state: its side of every ring, and what it learned.
pub struct Server<'a, P: Pages + ?Sized, T: Pages + ?Sized> {
    /// The region.
    region: &'a P,
    /// The port map.
    ports: PortTable<'a, T>,
    /// Its side of the rings to it, by slot ([`NIC`]: the NIC's received frames).
    inbox: [Consumer; SLOTS + 1],
    /// Its side of the rings from it, by slot ([`NIC`]: frames to send).
    outbox: [Producer; SLOTS + 1],
    /// The slot states it acted on.
    seen: [u64; SLOTS],
    /// The NIC's MAC, if there is a NIC.
    nic_mac: Option<EthernetAddress>,
    /// The machine's address on the NIC.
    address: Ipv4Address,
    /// The gateway's address.
    gateway: Ipv4Address,
    /// The gateway's MAC, once it spoke.
    gateway_mac: Option<EthernetAddress>,
    /// The count of [`W_POOL_ANNOUNCE`] it last acted on.
    announced: u64,
    /// The DHCP requests of instances in server mode, for their replies ([`crate::dhcp`]).
    dhcp: dhcp::Clients,
}

impl<'a, P: Pages + ?Sized, T: Pages + ?Sized> Server<'a, P, T> {
    /// The server of a region the kernel made, going on from the counts its rings published.
    pub fn attach(region: &'a P, ports: &'a T) -> Result<Self, AttachError> {
        if (0..REGION_PAGES).any(|i| region.page(i).is_none())
            || (0..PORT_PAGES).any(|i| ports.page(i).is_none())
        {
            return Err(AttachError::Short);
        }
        let ctl = Control::new(region);
        if ctl.get(W_MAGIC) != MAGIC {
            return Err(AttachError::Magic);
        }
        if ctl.get(W_VERSION) != VERSION {
            return Err(AttachError::Version);
        }
        let (address, gateway) = ctl.addresses();
        Ok(Server {
            region,
            ports: PortTable::new(ports),
            inbox: core::array::from_fn(|s| Consumer::resume(&Ring::new(region, to_server(s)))),
            outbox: core::array::from_fn(|s| Producer::resume(&Ring::new(region, from_server(s)))),
            seen: [u64::MAX; SLOTS],
            nic_mac: ctl.nic_mac(),
            address,
            gateway,
            gateway_mac: ctl.gateway_mac(),
            announced: 0,
            dhcp: dhcp::Clients::new(),
        })
    }

    /// The control page.
    pub fn control(&self) -> Control<'a, P> {
        Control::new(self.region)
    }

    /// Asks the gateway for its MAC unless it is known (a server that knows none drops the
    /// frames for outside while it asks).
    pub fn hello(&mut self) -> Step {
        let mut step = Step::default();
        if let (Some(nic), None) = (self.nic_mac, self.gateway_mac) {
            let ask = switch::ask_gateway(nic, self.address, self.gateway);
            self.put(NIC, &ask, &mut step);
        }
        step
    }

    /// The slot of instance `id` in server mode.
    fn slot_of(&self, id: StackId) -> Option<usize> {
        let ctl = self.control();
        (1..SLOTS).find(|&s| ctl.instance(s) == Some(id))
    }

    /// Whether the server reads slot `s`'s ring: the kernel's, an active slot's, or one whose
    /// instance left and whose frames it has not finished.
    fn live(&self, s: usize) -> bool {
        let state = self.control().state(s);
        s == 0 || active(state) || self.seen[s] != state
    }

    /// Takes up to `budget` frames from each ring and routes them; first announces the pool
    /// addresses the shared NIC serves if the kernel asked (an instance came back from a NIC of
    /// its own; a server attached anew announces them too).
    pub fn step(&mut self, budget: usize) -> Step {
        let mut step = Step::default();
        let ctl = self.control();
        let (base, _, served) = ctl.pool();
        let requests = ctl.get(W_POOL_ANNOUNCE);
        if requests != self.announced {
            self.announced = requests;
            if let Some(nic) = self.nic_mac {
                for i in (0..64).filter(|i| served >> i & 1 != 0) {
                    let a = Ipv4Address::from(u32::from(base).wrapping_add(i));
                    self.put(NIC, &switch::gratuitous(nic, a), &mut step);
                }
            }
        }
        let mut frame = [0u8; CELL_DATA];
        for s in 0..SLOTS {
            let state = ctl.state(s);
            if s > 0 && active(state) && self.seen[s] != state {
                // A new instance: its rings go on from the counts the kernel left.
                self.inbox[s] = Consumer::resume(&Ring::new(self.region, to_server(s)));
                self.outbox[s] = Producer::resume(&Ring::new(self.region, from_server(s)));
                self.seen[s] = state;
                ctl.set(W_APPS + s * APP_WORDS + 2, state);
            }
            if !self.live(s) {
                continue;
            }
            let id = ctl.get(W_APPS + s * APP_WORDS + 1) as StackId;
            let ring = Ring::new(self.region, to_server(s));
            for _ in 0..budget {
                let Some(got) = self.inbox[s].pop(&ring, &mut frame) else {
                    break;
                };
                step.moved += 1;
                match got {
                    Ok(len) => self.route_sent(s, id, &mut frame[..len], &mut step),
                    Err(PopError::Malformed | PopError::Corrupt | PopError::Missing) => {
                        ctl.count(Counter::Malformed)
                    }
                }
                // Done with it: a server killed before this line routes it again when
                // started again.
                self.inbox[s].commit(&ring);
            }
            if s > 0 && self.inbox[s].producer_waits(&ring) {
                // The kernel kept frames for want of room: there is room now.
                step.kick |= 1 << s;
            }
            if s > 0 && !active(state) && !self.inbox[s].ready(&ring) {
                // Its last frames are routed: the slot is free.
                self.seen[s] = state;
                ctl.set(W_APPS + s * APP_WORDS + 2, state);
            }
        }
        let ring = Ring::new(self.region, to_server(NIC));
        for _ in 0..budget {
            let Some(got) = self.inbox[NIC].pop(&ring, &mut frame) else {
                break;
            };
            step.moved += 1;
            match got {
                Ok(len) => self.route_received(&frame[..len], &mut step),
                Err(_) => ctl.count(Counter::Malformed),
            }
            self.inbox[NIC].commit(&ring);
        }
        if self.inbox[NIC].producer_waits(&ring) {
            // The kernel left the NIC's frames on the NIC for want of room: there is room now.
            step.kick |= 1 << NIC;
        }
        step
    }

    /// Marks every ring to it asleep, those of free slots too (the kernel may give one to an
    /// instance while it sleeps, and that instance's first frame must wake it), and looks once
    /// more: `true` if all are empty (it may sleep on [`W_EVENTS`] until the kernel adds to
    /// it), `false` if a frame came.
    pub fn may_sleep(&self) -> bool {
        (0..=SLOTS).all(|s| self.inbox[s].sleep(&Ring::new(self.region, to_server(s))))
    }

    /// Puts `frame` in the ring to slot `s` (or [`NIC`]).
    fn put(&mut self, s: usize, frame: &[u8], step: &mut Step) {
        let ctl = self.control();
        match self.outbox[s].push(&Ring::new(self.region, from_server(s)), frame) {
            Ok(wake) => {
                ctl.count(Counter::Routed);
                if wake {
                    step.kick |= 1 << s;
                }
            }
            Err(PushError::Full) => ctl.count(Counter::Full),
            Err(PushError::TooBig | PushError::Missing) => ctl.count(Counter::Malformed),
        }
    }

    /// Delivers `frame` to instance `id`: to its slot if it is in server mode, else to the
    /// kernel's switch, which knows it.
    fn deliver_to(&mut self, id: StackId, frame: &mut [u8], step: &mut Step) {
        match self.slot_of(id) {
            Some(s) => {
                switch::readdress(frame, crate::stack_mac(id));
                self.put(s, frame, step);
            }
            None => self.put(0, frame, step),
        }
    }

    /// Routes a frame slot `s` (instance `id`; slot 0: the kernel) sent.
    fn route_sent(&mut self, s: usize, id: StackId, frame: &mut [u8], step: &mut Step) {
        let ctl = self.control();
        let machine = self.nic_mac.map(|_| self.address);
        let (_, assigned, _) = ctl.pool();
        if s > 0 {
            let mine = ctl.slot_address(s);
            let own = |a: Ipv4Address| a.is_loopback() || Some(a) == machine || Some(a) == mine;
            match verify(frame, id, &self.ports, own) {
                Ok(()) => {}
                Err(Refused::Spoofed) => return ctl.count(Counter::Spoofed),
                Err(Refused::Malformed) => return ctl.count(Counter::Malformed),
                Err(Refused::Unrouted) => return ctl.count(Counter::Unrouted),
            }
            if let Some(xid) = dhcp::client_request(frame) {
                self.dhcp.asked(id, xid);
            }
        }
        let local =
            |a: Ipv4Address| a.is_loopback() || Some(a) == machine || ctl.in_pool(a, assigned);
        match switch::route(frame, &self.ports, local) {
            Route::Stack(to) => self.deliver_to(to, frame, step),
            Route::Reject => self.put(0, frame, step),
            Route::Reply(answer) => self.put(s, &answer, step),
            Route::Outside => self.send_out(frame, step),
            Route::Drop(Dropped::Malformed) => ctl.count(Counter::Malformed),
            Route::Drop(Dropped::Unrouted) => ctl.count(Counter::Unrouted),
        }
    }

    /// Sends a frame for outside to the gateway; until its MAC is known, drops the frame and
    /// asks for it.
    fn send_out(&mut self, frame: &mut [u8], step: &mut Step) {
        let Some(nic) = self.nic_mac else {
            return self.control().count(Counter::Unrouted);
        };
        if switch::outbound(frame, nic, self.gateway_mac) {
            self.put(NIC, frame, step);
        } else {
            self.control().count(Counter::NoGateway);
            let ask = switch::ask_gateway(nic, self.address, self.gateway);
            self.put(NIC, &ask, step);
        }
    }

    /// The gateway is at `mac`: kept, and told to the control page for a server started later.
    fn learn_gateway(&mut self, mac: EthernetAddress) {
        if self.gateway_mac != Some(mac) {
            self.gateway_mac = Some(mac);
            self.control().set_gateway_mac(mac);
        }
    }

    /// Routes a frame the NIC received.
    fn route_received(&mut self, frame: &[u8], step: &mut Step) {
        let ctl = self.control();
        let Some(nic) = self.nic_mac else {
            return ctl.count(Counter::Unrouted);
        };
        let (_, assigned, served) = ctl.pool();
        let me = |a: Ipv4Address| a == self.address || ctl.in_pool(a, served);
        let moved = |a: Ipv4Address| ctl.in_pool(a, assigned);
        match switch::inbound(frame, &self.ports, me, moved, nic, self.gateway) {
            Inbound::To(Route::Stack(id)) => {
                let mut own = [0u8; CELL_DATA];
                own[..frame.len()].copy_from_slice(frame);
                self.deliver_to(id, &mut own[..frame.len()], step);
            }
            Inbound::To(Route::Reject) => self.put(0, frame, step),
            Inbound::To(Route::Drop(Dropped::Malformed)) | Inbound::Drop(Dropped::Malformed) => {
                ctl.count(Counter::Malformed)
            }
            Inbound::To(_) | Inbound::Drop(Dropped::Unrouted) => ctl.count(Counter::Unrouted),
            Inbound::Answer { reply, gateway } => {
                if let Some(mac) = gateway {
                    self.learn_gateway(mac);
                }
                self.put(NIC, &reply, step);
            }
            Inbound::Gateway(mac) => self.learn_gateway(mac),
            // An instance in server mode asked; else the kernel's switch may know who did.
            Inbound::DhcpReply(xid) => match self.dhcp.client(xid) {
                Some(id) => {
                    let mut own = [0u8; CELL_DATA];
                    own[..frame.len()].copy_from_slice(frame);
                    self.deliver_to(id, &mut own[..frame.len()], step);
                }
                None => self.put(0, frame, step),
            },
        }
    }
}
