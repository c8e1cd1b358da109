//! Networking (LibrettOS, issue 15): each process's own TCP/IP stack instance, the machine's
//! port map, and the switch that joins the instances inside the machine.
//!
//! A process gets an [`Instance`] (a `net::Stack`, smoltcp behind Linux socket semantics) at its
//! first `socket` call; its sockets live there, so no socket state is shared between programs'
//! stacks (LibrettOS §3.1). A forked child's inherited sockets stay in the parent's instance;
//! the child's own new sockets go to its own. Every instance owns 127.0.0.1, and instances reach
//! each other through the switch (`net::switch`: proxy ARP, routing by the destination port
//! through [`PORTS`], a rejecting instance answering for ports nobody holds), as LibrettOS's
//! network server routes between applications. With a NIC ([`nic`], QEMU's virtio-net) every
//! instance also owns the machine's address ([`ADDRESS`], QEMU user networking's guest
//! address) and reaches the rest of the world through [`GATEWAY`]: the switch sends frames for
//! outside addresses out of the NIC and routes what arrives on it by port, as it does between
//! instances. Counters in `/proc/reef/net`.
//!
//! Frames move synchronously: an operation on a socket runs its instance ([`Instance::run`]),
//! and [`pump`] carries the frames it sent to their instances and runs those, until nothing
//! moves. Timers (retransmissions, TIME-WAIT, keep-alive, lingering closes) are the boot core's:
//! its tick ([`tick`]) notes that the earliest deadline passed, and [`run_due`] (next return to
//! user or idle pass, as for interval timers) polls every instance and lets idle ones go once
//! no process or descriptor holds them. Frames arriving on the NIC are routed by [`run_due`]
//! after its interrupt, running only the instances they reach.
//!
//! Locks: an instance's stack lock (its own or the receiver's), then [`PORTS`] or the network
//! server's and the NICs' locks (all interrupts off, each held for one bounded operation or
//! poll: at most `QUEUE_FRAMES` frames); [`REGISTRY`] alone or before an instance's lock.
//! Nothing holds two instances' stack locks; waiting happens with no lock held. One core at a
//! time pumps an instance (its `pumping` mark, held while its frames are taken and handed on,
//! so they leave in order); a core that finds it pumped marks it `again` and goes on, and the
//! pumping core polls it once more, so no core spins on another's pump. `server::DRAINING` (a
//! sleeping lock, threads only) comes before all of them.

pub mod ifaces;
pub mod library;
pub mod nic;
pub mod server;
pub mod socket;

use crate::fd::POLL_WAKE;
use crate::proc::wait::{PollKey, WaitQueue, Wake};
use crate::sync::IrqMutex;
use abi::Errno;
use alloc::collections::{BTreeMap, VecDeque};
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use net::switch::{self, Inbound, Route};
use net::{EthernetAddress, Instant, Ipv4Address, Ipv4Cidr, PortMap, Stack, StackId};

/// The machine's address on its NIC: QEMU user networking gives the guest 10.0.2.15/24.
pub const ADDRESS: Ipv4Cidr = Ipv4Cidr::new(Ipv4Address::new(10, 0, 2, 15), 24);
/// The gateway (QEMU user networking's host side; 10.0.2.3 is its DNS server).
pub const GATEWAY: Ipv4Address = Ipv4Address::new(10, 0, 2, 2);

/// The gateway's MAC address, once it answered (or spoke).
static GATEWAY_MAC: IrqMutex<Option<EthernetAddress>> = IrqMutex::new(None);

/// The DHCP requests the kernel's switch let out, for their replies (`net::dhcp`).
static DHCP: IrqMutex<net::dhcp::Clients> = IrqMutex::new(net::dhcp::Clients::new());

/// The instance a DHCP server's reply that nobody's port 68 takes goes to: the one whose
/// request through the kernel's switch had its transaction id.
fn dhcp_client(xid: u32) -> Option<Arc<Instance>> {
    let id = DHCP.lock().client(xid);
    id.and_then(lookup)
}

/// One stack instance and the threads waiting on its sockets.
pub struct Instance {
    /// Its number (its ports' owner).
    pub id: StackId,
    /// The stack.
    stack: IrqMutex<Stack>,
    /// Threads waiting for one of its sockets to change; woken after every poll that changed
    /// something.
    waiters: WaitQueue,
    /// Its slot in the network server's region while it is in server mode (0: its frames go
    /// through the kernel's switch; [`server`]).
    slot: AtomicUsize,
    /// Its NIC while it is in library mode (`k`: `nic::LIBRARY[k - 1]`; 0: none; [`library`]).
    direct: AtomicUsize,
    /// Its own address from the pool, once it has one (0: none; [`library`]).
    address: AtomicU32,
    /// Set while a core pumps it, from taking its frames to handing each on ([`pump_all`]),
    /// so that two cores never interleave its frames: smoltcp takes the window of every
    /// segment it accepts, so an older ACK overtaking a newer one closes the peer's window for
    /// good (it does not probe a zero window).
    pumping: AtomicBool,
    /// Set by a core that wants it pumped; the core pumping it polls it again while set.
    again: AtomicBool,
    /// Frames it sent (taken from its stack and handed on).
    frames_sent: AtomicU64,
    /// Frames delivered to it.
    frames_received: AtomicU64,
}

impl Drop for Instance {
    fn drop(&mut self) {
        let s = *self.slot.get_mut();
        if s != 0 {
            server::release(s);
        }
        let k = *self.direct.get_mut();
        if k != 0 {
            library::nic_gone(k);
        }
        if let Some(a) = self.address() {
            library::address_gone(a);
        }
    }
}

/// Every instance by number (the rejecting one is 0).
struct Registry {
    /// The instances.
    stacks: BTreeMap<StackId, Arc<Instance>>,
    /// The next number given.
    next: StackId,
}

/// The instances.
static REGISTRY: IrqMutex<Registry> = IrqMutex::new(Registry {
    stacks: BTreeMap::new(),
    next: 1,
});
/// Which instance holds each port (LibrettOS's portmap, kept by the kernel).
static PORTS: IrqMutex<PortMap> = IrqMutex::new(PortMap::new());
/// The earliest timer deadline of any instance, in milliseconds ([`crate::time`]); `u64::MAX`:
/// none.
static DEADLINE_MS: AtomicU64 = AtomicU64::new(u64::MAX);
/// The deadline passed (or a pump stopped short): [`run_due`] polls every instance.
static TIMERS_DUE: AtomicBool = AtomicBool::new(false);
/// Frames wait on the NIC (its interrupt, or the tick's look): [`run_due`] routes them.
static NIC_DUE: AtomicBool = AtomicBool::new(false);
/// A core is taking the NICs' frames ([`run_due`]).
static RECEIVING: AtomicBool = AtomicBool::new(false);
/// Frames the switch carried between instances.
static FORWARDED: AtomicU64 = AtomicU64::new(0);
/// Frames dropped: for outside addresses with no NIC, or before the gateway's MAC was known.
static DROPPED_OUTSIDE: AtomicU64 = AtomicU64::new(0);
/// Frames sent out of the NIC.
static NIC_SENT: AtomicU64 = AtomicU64::new(0);
/// Frames received on the NIC.
static NIC_RECEIVED: AtomicU64 = AtomicU64::new(0);
/// Interrupts the NIC raised.
static NIC_INTERRUPTS: AtomicU64 = AtomicU64::new(0);
/// Frames dropped: malformed (they do not parse, or their lengths lie).
static DROPPED_MALFORMED: AtomicU64 = AtomicU64::new(0);
/// Frames dropped: of a protocol or kind the switch does not route (IPv6, ARP not for the
/// machine, ICMP errors, echo replies nobody waits for).
static DROPPED_UNROUTED: AtomicU64 = AtomicU64::new(0);

/// Counts a frame the switch dropped, by why.
fn dropped(why: switch::Dropped) {
    match why {
        switch::Dropped::Malformed => DROPPED_MALFORMED.fetch_add(1, Ordering::Relaxed),
        switch::Dropped::Unrouted => DROPPED_UNROUTED.fetch_add(1, Ordering::Relaxed),
    };
}
/// Frames dropped: an instance sent them with a source MAC, address or port not its own.
static DROPPED_SPOOFED: AtomicU64 = AtomicU64::new(0);
/// Frames dropped: the receiving instance's queue was full.
static DROPPED_FULL: AtomicU64 = AtomicU64::new(0);

/// Most instance polls one [`pump`] runs; what is left waits for the next operation or tick.
const PUMP_LIMIT: usize = 100_000;

/// The time as smoltcp counts it.
fn now() -> Instant {
    Instant::from_micros((crate::time::now_ns() / 1000) as i64)
}

/// Whether the machine has a NIC.
fn has_nic() -> bool {
    nic::NIC.lock().is_some()
}

/// The addresses local to the machine: the loopback network, its address if it has a NIC, and
/// the addresses instances have of their own ([`library`]).
fn is_local(a: Ipv4Address) -> bool {
    a.is_loopback() || (a == ADDRESS.address() && has_nic()) || library::is_assigned(a)
}

/// A new instance, registered.
fn create(id: Option<StackId>) -> Result<Arc<Instance>, Errno> {
    let mut seed = [0u8; 8];
    crate::random::fill(&mut seed);
    let mut reg = REGISTRY.lock();
    let id = match id {
        Some(id) => id,
        None => {
            // A number no live instance has (0 is the rejecting one's), below 2^31 (the
            // network server's port table keeps a flag in the top bit).
            let mut n = reg.next & net::server::ID_MASK;
            while n == 0 || reg.stacks.contains_key(&n) {
                n = n.wrapping_add(1) & net::server::ID_MASK;
            }
            reg.next = n.wrapping_add(1);
            n
        }
    };
    let stack = if has_nic() {
        Stack::new(
            id,
            &[net::LOOPBACK, ADDRESS],
            Some(GATEWAY),
            u64::from_le_bytes(seed),
            now(),
        )
    } else {
        Stack::new(id, &[net::LOOPBACK], None, u64::from_le_bytes(seed), now())
    };
    let inst = Arc::new(Instance {
        id,
        stack: IrqMutex::new(stack),
        waiters: WaitQueue::new(),
        slot: AtomicUsize::new(0),
        direct: AtomicUsize::new(0),
        address: AtomicU32::new(0),
        pumping: AtomicBool::new(false),
        again: AtomicBool::new(false),
        frames_sent: AtomicU64::new(0),
        frames_received: AtomicU64::new(0),
    });
    reg.stacks.insert(id, inst.clone());
    drop(reg);
    // While a network server is attached, an application's instance starts in server mode
    // (the rejecting one stays with the kernel); with no slot free it stays with the kernel.
    if id != 0 && server::serving() {
        let _ = server::join(&inst);
    }
    Ok(inst)
}

/// The instance of process `p`, made at its first socket.
pub fn instance_of(p: &crate::proc::Process) -> Result<Arc<Instance>, Errno> {
    let mut mine = p.net.lock();
    if let Some(i) = &*mine {
        return Ok(i.clone());
    }
    let i = create(None)?;
    *mine = Some(i.clone());
    Ok(i)
}

/// Every instance (`/proc/net/tcp` and `udp`: [`ifaces`]).
pub fn instances() -> Vec<Arc<Instance>> {
    REGISTRY.lock().stacks.values().cloned().collect()
}

/// The paths an instance's frames may take (LibrettOS §3.3's modes).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Through the kernel's switch.
    Kernel,
    /// Through the network server.
    Server,
    /// Through a NIC of its own (library mode, `super::library`).
    Direct,
    /// Where it is, with an address of its own from now (`netctl address`).
    Address,
}

/// `netctl server|kernel|direct PID`: moves the instances of process `p` to `mode`: those of
/// the sockets its descriptors hold (a forked server's sockets live in the instance of the
/// process that made them), or its own if it holds none (made now if it has none). Their
/// sockets, addresses and connections stay; only the path of their frames changes. `ENODEV`
/// (no server attached, or no NIC for library mode), `ENOSPC` (no free slot or NIC),
/// `EADDRNOTAVAIL` (no address left for library mode).
pub fn set_mode(p: &crate::proc::Process, mode: Mode) -> Result<(), Errno> {
    let mut all: Vec<Arc<Instance>> = Vec::new();
    for (_, fd) in p.files.lock().iter() {
        if let crate::fd::Node::Inet(s) = &fd.file.node {
            if !all.iter().any(|i| Arc::ptr_eq(i, &s.inst)) {
                all.try_reserve(1).map_err(|_| Errno::ENOMEM)?;
                all.push(s.inst.clone());
            }
        }
    }
    if all.is_empty() {
        all.push(instance_of(p)?);
    }
    for inst in &all {
        match mode {
            Mode::Direct => library::go_direct(inst)?,
            Mode::Server => {
                if !server::serving() {
                    return Err(Errno::ENODEV);
                }
                library::go_shared(inst);
                server::join(inst)?;
            }
            Mode::Kernel => {
                library::go_shared(inst);
                server::leave(inst);
            }
            Mode::Address => library::give_address(inst)?,
        }
    }
    Ok(())
}

/// The instance numbered `id`.
fn lookup(id: StackId) -> Option<Arc<Instance>> {
    REGISTRY.lock().stacks.get(&id).cloned()
}

/// The rejecting instance (number 0): it holds no socket, so its stack answers a TCP segment
/// with a reset and a ping with a reply, as a host without the service does.
fn rejecter() -> Option<Arc<Instance>> {
    lookup(0).or_else(|| create(Some(0)).ok())
}

/// How long a socket call may wait ([`Instance::wait_for`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Patience {
    /// Not at all (`O_NONBLOCK`, `MSG_DONTWAIT`).
    Never,
    /// Until it can go on, or a signal.
    Forever,
    /// Until this time (`now_ns`), then `EAGAIN` (`SO_RCVTIMEO`, `SO_SNDTIMEO`).
    Until(u64),
}

impl Patience {
    /// A call's patience: none with `nonblock`, else the socket's `timeout` (nanoseconds:
    /// [`NO_TIMEOUT`] waits for ever, [`NO_WAIT`] not at all) from now.
    pub fn of(nonblock: bool, timeout: u64) -> Patience {
        match timeout {
            _ if nonblock => Patience::Never,
            NO_TIMEOUT => Patience::Forever,
            NO_WAIT => Patience::Never,
            t => Patience::Until(crate::time::now_ns().saturating_add(t)),
        }
    }
}

/// A socket timeout that never runs out (`SO_RCVTIMEO` of zero, Linux's default).
pub const NO_TIMEOUT: u64 = 0;
/// A socket timeout that does not wait at all (Linux's for a negative `tv_sec`).
pub const NO_WAIT: u64 = u64::MAX;

impl Instance {
    /// Runs `f` on the stack (with the port map and the time), then moves the frames it sent.
    pub fn run<R>(self: &Arc<Self>, f: impl FnOnce(&mut Stack, &mut PortMap, Instant) -> R) -> R {
        let r = {
            let mut s = self.stack.lock();
            let mut ports = PORTS.lock();
            f(&mut s, &mut ports, now())
        };
        pump(self);
        r
    }

    /// Runs `f` until it answers something other than `EAGAIN`, sleeping between tries as
    /// long as `patience` allows (`EAGAIN` once it runs out). `EINTR` if a signal comes first.
    pub fn wait_for<R>(
        self: &Arc<Self>,
        patience: Patience,
        mut f: impl FnMut(&mut Stack, &mut PortMap, Instant) -> Result<R, Errno>,
    ) -> Result<R, Errno> {
        let deadline = match patience {
            Patience::Never => None,
            Patience::Forever => Some(None),
            Patience::Until(ns) => Some(Some(ns)),
        };
        loop {
            let seq = self.waiters.seq();
            match (self.run(&mut f), deadline) {
                (Err(Errno::EAGAIN), Some(deadline)) => match self.waiters.wait(seq, deadline) {
                    Wake::Interrupted => return Err(Errno::EINTR),
                    Wake::Timeout => return Err(Errno::EAGAIN),
                    Wake::Event => {}
                },
                (r, _) => return r,
            }
        }
    }

    /// Reads the stack without running it (`poll` events, addresses).
    pub fn peek<R>(&self, f: impl FnOnce(&mut Stack) -> R) -> R {
        f(&mut self.stack.lock())
    }

    /// Its own address, if it has one ([`library`]).
    pub fn address(&self) -> Option<Ipv4Address> {
        match self.address.load(Ordering::Acquire) {
            0 => None,
            a => Some(Ipv4Address::from(a)),
        }
    }

    /// The key its changes are announced under to `poll` and `select`.
    pub fn poll_key(&self) -> PollKey {
        PollKey::Net(self.id)
    }
}

/// Polls `first` and carries the frames it sends to their instances, polling those in turn,
/// until no frame moves (or [`PUMP_LIMIT`] polls: a timer takes it from there).
pub fn pump(first: &Arc<Instance>) {
    let mut work: VecDeque<Arc<Instance>> = VecDeque::new();
    work.push_back(first.clone());
    pump_all(work);
}

/// [`pump`] starting from every instance in `work`; then the NICs are told of what was
/// queued on them meanwhile (`nic::ring_doorbells`).
fn pump_all(work: VecDeque<Arc<Instance>>) {
    pump_frames(work);
    nic::ring_doorbells();
}

/// [`pump_all`]'s polls and frames. One core at a time pumps an instance (see
/// `Instance::pumping`); a core that finds it pumped leaves it to that core, which polls it once
/// more before letting go, rather than waiting for it.
fn pump_frames(mut work: VecDeque<Arc<Instance>>) {
    let mut polls = 0;
    while let Some(inst) = work.pop_front() {
        // Asked for: by this core, or by one that found it pumped (the mark comes first, so
        // the pumping core's last look after letting go sees it).
        inst.again.store(true, Ordering::SeqCst);
        if inst.pumping.swap(true, Ordering::SeqCst) {
            continue;
        }
        while polls < PUMP_LIMIT && inst.again.swap(false, Ordering::SeqCst) {
            polls += 1;
            pump_one(&inst, &mut work);
        }
        inst.pumping.store(false, Ordering::SeqCst);
        if polls >= PUMP_LIMIT {
            TIMERS_DUE.store(true, Ordering::Release);
            return;
        }
        if inst.again.load(Ordering::SeqCst) && !work.iter().any(|w| Arc::ptr_eq(w, &inst)) {
            // Marked by a core that came after the last poll and found it still pumped.
            work.push_back(inst);
        }
    }
}

/// Polls `inst` once and hands on the frames it sent (the instances they reach join `work`).
fn pump_one(inst: &Arc<Instance>, work: &mut VecDeque<Arc<Instance>>) {
    let t = now();
    let (changed, frames, deadline) = {
        let mut s = inst.stack.lock();
        let changed = s.poll(t, &mut PORTS.lock());
        let mut frames = Vec::new();
        while let Some(f) = s.take_frame() {
            frames.push(f);
        }
        (changed, frames, s.next_deadline(t))
    };
    if let Some(d) = deadline {
        DEADLINE_MS.fetch_min(d.total_millis().max(0) as u64, Ordering::AcqRel);
    }
    if changed {
        inst.waiters.notify_all();
        POLL_WAKE.notify(inst.poll_key());
    }
    inst.frames_sent
        .fetch_add(frames.len() as u64, Ordering::Relaxed);
    let mut frames = frames.into_iter();
    while let Some(frame) = frames.next() {
        match server::sent(inst, &frame) {
            server::Sent::Queued => continue,
            server::Sent::Full => {
                // The instance keeps them until the server makes room (it kicks).
                inst.stack
                    .lock()
                    .give_back(core::iter::once(frame).chain(frames));
                break;
            }
            server::Sent::NotServer => {}
        }
        if let Some(to) = forward(inst, frame) {
            if !work.iter().any(|w| Arc::ptr_eq(w, &to)) {
                work.push_back(to);
            }
        }
    }
}

/// Carries one frame `from` sent: returns the instance that got it. An instance in server mode
/// sends every frame to the network server; the kernel's switch sends the server what is for
/// outside or for an instance in server mode while one is attached.
fn forward(from: &Arc<Instance>, mut frame: Vec<u8>) -> Option<Arc<Instance>> {
    if library::sent(from, &mut frame) {
        return None;
    }
    if from.id != 0 {
        // The check the network server makes (LibrettOS §3.2), made by the kernel's switch
        // too: a frame whose source is not its instance's goes nowhere.
        let machine = has_nic().then(|| ADDRESS.address());
        let mine = from.address();
        let own = |a: Ipv4Address| a.is_loopback() || Some(a) == machine || Some(a) == mine;
        if let Err(why) = net::server::verify(&frame, from.id, &*PORTS.lock(), own) {
            match why {
                net::server::Refused::Spoofed => DROPPED_SPOOFED.fetch_add(1, Ordering::Relaxed),
                net::server::Refused::Malformed => {
                    DROPPED_MALFORMED.fetch_add(1, Ordering::Relaxed)
                }
                net::server::Refused::Unrouted => DROPPED_UNROUTED.fetch_add(1, Ordering::Relaxed),
            };
            return None;
        }
        if let Some(xid) = net::dhcp::client_request(&frame) {
            DHCP.lock().asked(from.id, xid);
        }
    }
    let route = switch::route(&frame, &*PORTS.lock(), is_local);
    let (to, reject) = match route {
        Route::Stack(id) => {
            let to = lookup(id)?;
            if server::slot_of(&to) != 0 && server::serving() {
                server::from_switch(&frame);
                return None;
            }
            (to, false)
        }
        Route::Reject => (rejecter()?, true),
        Route::Reply(answer) => {
            from.stack.lock().deliver(answer);
            return Some(from.clone());
        }
        Route::Outside if server::serving() => {
            server::from_switch(&frame);
            return None;
        }
        Route::Outside => {
            to_nic(frame);
            return None;
        }
        Route::Drop(why) => {
            dropped(why);
            return None;
        }
    };
    let len = frame.len();
    let delivered = deliver(&to, frame, reject);
    if delivered {
        ifaces::looped(len);
    }
    delivered.then_some(to)
}

/// Hands `frame` to instance `to` (`reject`: the rejecting instance, which must know the
/// switch's MAC at once); false if its queue was full.
fn deliver(to: &Arc<Instance>, mut frame: Vec<u8>, reject: bool) -> bool {
    switch::readdress(&mut frame, net::stack_mac(to.id));
    {
        let mut s = to.stack.lock();
        if reject {
            s.learn_switch();
        }
        if !s.deliver(frame) {
            DROPPED_FULL.fetch_add(1, Ordering::Relaxed);
            return false;
        }
    }
    to.frames_received.fetch_add(1, Ordering::Relaxed);
    FORWARDED.fetch_add(1, Ordering::Relaxed);
    true
}

/// Sends a frame for an outside address out of the NIC, to the gateway. Until the gateway's
/// MAC is known the frame is dropped (TCP sends it again) and the NIC asks for it.
fn to_nic(mut frame: Vec<u8>) {
    let mut guard = nic::NIC.lock();
    let Some(n) = guard.as_mut() else {
        DROPPED_OUTSIDE.fetch_add(1, Ordering::Relaxed);
        return;
    };
    let gateway = *GATEWAY_MAC.lock();
    if !switch::outbound(&mut frame, n.mac, gateway) {
        DROPPED_OUTSIDE.fetch_add(1, Ordering::Relaxed);
        let ask = switch::ask_gateway(n.mac, ADDRESS.address(), GATEWAY);
        n.send(&ask);
    } else if n.send(&frame) {
        NIC_SENT.fetch_add(1, Ordering::Relaxed);
    } else {
        DROPPED_FULL.fetch_add(1, Ordering::Relaxed);
    }
}

/// Sends a frame the network server put in the NIC's ring, as it is.
fn nic_send(frame: &[u8]) {
    let mut guard = nic::NIC.lock();
    let Some(n) = guard.as_mut() else {
        DROPPED_OUTSIDE.fetch_add(1, Ordering::Relaxed);
        return;
    };
    if n.send(frame) {
        NIC_SENT.fetch_add(1, Ordering::Relaxed);
    } else {
        DROPPED_FULL.fetch_add(1, Ordering::Relaxed);
    }
}

/// Most frames taken from the NIC in one call (its receive queue's size).
const NIC_BATCH: usize = 64;

/// Routes the frames waiting on the NIC to their instances (added to `work`), answers ARP for
/// the machine's address and learns the gateway's MAC.
fn from_nic(work: &mut VecDeque<Arc<Instance>>) {
    for _ in 0..NIC_BATCH {
        if server::serving() && !server::nic_room() {
            // The server's kick says when it has room.
            return;
        }
        let (frame, mac) = {
            let mut guard = nic::NIC.lock();
            let Some(n) = guard.as_mut() else {
                return;
            };
            let Some(frame) = n.receive() else {
                return;
            };
            (frame, n.mac)
        };
        NIC_RECEIVED.fetch_add(1, Ordering::Relaxed);
        shared_nic_frame(frame, mac, work);
    }
}

/// A frame a library-mode NIC got for an address that has left it (its instance moved, and
/// the neighbours sent before they heard the gratuitous ARP): routed as a frame of the shared
/// NIC, which reaches the instance wherever it is now, so a move loses nothing.
pub(super) fn left_nic(frame: Vec<u8>, work: &mut VecDeque<Arc<Instance>>) {
    let Some(mac) = nic::NIC.lock().as_ref().map(|n| n.mac) else {
        dropped(switch::Dropped::Unrouted);
        return;
    };
    shared_nic_frame(frame, mac, work);
}

/// Routes a frame of the shared NIC (whose MAC is `mac`): the network server's if one is
/// attached, else the kernel's switch's. An instance's own address counts as the machine's
/// for IPv4 even while it is on a NIC of its own (see [`left_nic`]).
fn shared_nic_frame(frame: Vec<u8>, mac: EthernetAddress, work: &mut VecDeque<Arc<Instance>>) {
    if server::serving() {
        // The NIC is the network server's.
        server::nic_received(&frame);
        return;
    }
    let me = |a| a == ADDRESS.address() || library::is_served(a);
    let decision = switch::inbound(
        &frame,
        &*PORTS.lock(),
        me,
        library::is_assigned,
        mac,
        GATEWAY,
    );
    let (to, reject) = match decision {
        Inbound::To(Route::Stack(id)) => (lookup(id), false),
        Inbound::To(Route::Reject) => (rejecter(), true),
        Inbound::To(Route::Drop(why)) | Inbound::Drop(why) => {
            dropped(why);
            return;
        }
        Inbound::To(_) => {
            dropped(switch::Dropped::Unrouted);
            return;
        }
        Inbound::Answer { reply, gateway } => {
            if let Some(gw) = gateway {
                *GATEWAY_MAC.lock() = Some(gw);
            }
            if let Some(n) = nic::NIC.lock().as_mut() {
                n.send(&reply);
            }
            return;
        }
        Inbound::Gateway(gw) => {
            *GATEWAY_MAC.lock() = Some(gw);
            return;
        }
        Inbound::DhcpReply(xid) => match dhcp_client(xid) {
            Some(to) => (Some(to), false),
            None => {
                dropped(switch::Dropped::Unrouted);
                return;
            }
        },
    };
    if let Some(to) = to {
        if deliver(&to, frame, reject) && !work.iter().any(|w| Arc::ptr_eq(w, &to)) {
            work.push_back(to);
        }
    }
}

/// The boot core's timer tick: notes when the earliest deadline has passed.
pub fn tick() {
    let now_ms = crate::time::now_ns() / 1_000_000;
    if now_ms >= DEADLINE_MS.load(Ordering::Acquire) {
        TIMERS_DUE.store(true, Ordering::Release);
    }
    // A safety net for a lost interrupt: frames left on the NIC are taken at the next pass.
    if nic::NIC.lock().as_ref().is_some_and(nic::Nic::can_receive) || library::waiting() {
        NIC_DUE.store(true, Ordering::Release);
    }
}

/// The NIC interrupted: frames wait ([`run_due`] takes them).
pub fn interrupted() {
    NIC_INTERRUPTS.fetch_add(1, Ordering::Relaxed);
    NIC_DUE.store(true, Ordering::Release);
}

/// Frames may wait on the NIC ([`run_due`] takes them): the network server made room for them.
fn nic_due() {
    NIC_DUE.store(true, Ordering::Release);
}

/// Whether [`run_due`] has work.
pub fn pending() -> bool {
    NIC_DUE.load(Ordering::Acquire) || TIMERS_DUE.load(Ordering::Acquire)
}

/// Routes the NIC's frames to their instances (after its interrupt) and, when a deadline
/// passed, polls every instance (their timers) and lets go of the idle ones nothing else
/// holds. A frame's arrival runs only the instances it reaches.
pub fn run_due() {
    // One core at a time takes the NICs' frames, so that they are delivered in the order they
    // came (see `Instance::pumping`); another finds them taken or marks them due again.
    if NIC_DUE.swap(false, Ordering::AcqRel) {
        if RECEIVING.swap(true, Ordering::AcqRel) {
            NIC_DUE.store(true, Ordering::Release);
        } else {
            let mut work = VecDeque::new();
            from_nic(&mut work);
            library::receive(&mut work);
            pump_all(work);
            RECEIVING.store(false, Ordering::Release);
        }
    }
    if !TIMERS_DUE.swap(false, Ordering::AcqRel) {
        return;
    }
    DEADLINE_MS.store(u64::MAX, Ordering::Release);
    let all: VecDeque<Arc<Instance>> = REGISTRY.lock().stacks.values().cloned().collect();
    pump_all(all);
    REGISTRY.lock().stacks.retain(|&id, inst| {
        // Only the registry holds it (no process, no descriptor) and it has nothing open
        // or closing: it goes. The rejecting instance stays.
        id == 0 || Arc::strong_count(inst) > 1 || !inst.stack.lock().is_idle()
    });
}

/// `/proc/reef/net`: the instances, their sockets and ports, and the switch's counters.
pub fn report() -> alloc::string::String {
    use core::fmt::Write;
    let mut out = alloc::string::String::new();
    let all: Vec<Arc<Instance>> = REGISTRY.lock().stacks.values().cloned().collect();
    let _ = writeln!(out, "instance mode sockets ports sent received rx_dropped");
    for inst in &all {
        let (socks, dropped) = inst.peek(|s| (s.open_sockets(), s.rx_dropped));
        let ports: Vec<alloc::string::String> = PORTS
            .lock()
            .ports_of(inst.id)
            .map(|(p, n)| {
                let proto = match p {
                    net::Proto::Tcp => "tcp",
                    net::Proto::Udp => "udp",
                    net::Proto::Icmp => "icmp-echo",
                };
                alloc::format!("{proto}/{n}")
            })
            .collect();
        let ports = if ports.is_empty() {
            alloc::string::String::from("-")
        } else {
            ports.join(",")
        };
        let mode = match (inst.direct.load(Ordering::Acquire), server::slot_of(inst)) {
            (0, 0) => alloc::string::String::from("kernel"),
            (0, s) => alloc::format!("server/{s}"),
            (k, _) => alloc::format!("direct/{k}"),
        };
        let mode = match inst.address() {
            Some(a) => alloc::format!("{mode}@{a}"),
            None => mode,
        };
        let _ = writeln!(
            out,
            "{} {mode} {socks} {ports} {} {} {dropped}",
            inst.id,
            inst.frames_sent.load(Ordering::Relaxed),
            inst.frames_received.load(Ordering::Relaxed)
        );
    }
    match nic::NIC.lock().as_ref() {
        Some(n) => {
            let _ = writeln!(
                out,
                "nic {} address {} gateway {} gateway_mac {} sent {} received {} notifications {} \
                 interrupts {}",
                n.mac,
                ADDRESS,
                GATEWAY,
                GATEWAY_MAC
                    .lock()
                    .map_or(alloc::string::String::from("?"), |m| alloc::format!("{m}")),
                NIC_SENT.load(Ordering::Relaxed),
                NIC_RECEIVED.load(Ordering::Relaxed),
                n.notifications(),
                NIC_INTERRUPTS.load(Ordering::Relaxed)
            );
        }
        None => {
            let _ = writeln!(out, "nic none");
        }
    }
    let _ = writeln!(
        out,
        "forwarded {} dropped_outside {} dropped_malformed {} dropped_unrouted {} dropped_full {} dropped_spoofed {}",
        FORWARDED.load(Ordering::Relaxed),
        DROPPED_OUTSIDE.load(Ordering::Relaxed),
        DROPPED_MALFORMED.load(Ordering::Relaxed),
        DROPPED_UNROUTED.load(Ordering::Relaxed),
        DROPPED_FULL.load(Ordering::Relaxed),
        DROPPED_SPOOFED.load(Ordering::Relaxed)
    );
    library::report(&mut out);
    server::report(&mut out);
    out
}
