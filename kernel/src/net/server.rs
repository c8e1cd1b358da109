//! The kernel's side of the network server (LibrettOS §3.2, server mode).
//!
//! The network server is a user process, `netd`, a member of the fleet `fleet/net` (a fos
//! fleet of one, bound to its core). At its first `reef_netd(ATTACH)` the kernel makes the
//! shared region of `net::server` (the control page and a pair of rings per slot and for the
//! NIC) and the port table, and keeps both for good: it maps the region read-write and the
//! table read-only into the server, and from then on mirrors every change of its port map into
//! the table (`PortMap::mirror_to`), which the server never writes. A server killed and
//! started again (the fleet manager's `--restart`) attaches to the same pages and goes on from
//! the counts the rings published, so frames queued meanwhile are not lost and TCP
//! retransmits the rest (§5.8).
//!
//! While a server is attached:
//! - the NIC is the server's: what it receives goes to the NIC's ring ([`nic_received`]) and
//!   what the server puts in the other is sent ([`kick`]);
//! - a new stack instance goes into server mode in a free slot ([`join`]): every frame it
//!   sends goes to its slot's ring ([`sent`]), and what the server puts in the ring back is
//!   delivered to it; `netctl kernel|server PID` moves a running instance between the modes
//!   (`super::set_mode`);
//! - the other instances stay with the kernel's switch; their frames for outside or for an
//!   instance in server mode go to the server through slot 0, and the server's frames in slot
//!   0's ring back are routed by the kernel's switch ([`kick`]).
//!
//! The server marks its rings asleep before it sleeps on the control page's wake-up word; the
//! kernel adds to the word and wakes it (a futex on a shared frame) only when a frame finds a
//! ring marked. In the other direction the kernel's side of a ring is not a thread: the
//! server's `reef_netd(KICK, mask)` asks it to take what the server put in the rings of
//! `mask` whose kernel side was marked asleep, and the kernel marks each asleep again once it
//! is empty.
//!
//! Once no server is attached (it exited), the NIC and slot 0's traffic are the kernel
//! switch's again; instances in server mode keep their slots and their rings fill until a
//! server attaches.
//!
//! Locks: [`NETD`] is taken alone, or after the registry's lock (an instance's last reference
//! going, [`release`]); frames are taken out of the rings under it and delivered after.

use super::{lookup, rejecter, Instance, ADDRESS, GATEWAY, PORTS};
use crate::mailbox::SharedFrame;
use crate::proc::wait::SleepLock;
use crate::proc::Process;
use crate::sync::IrqMutex;
use crate::vm::PAGE_SIZE;
use abi::Errno;
use alloc::boxed::Box;
use alloc::collections::VecDeque;
use alloc::sync::{Arc, Weak};
use alloc::vec::Vec;
use core::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use net::ring::{Consumer, Page, Pages, Producer, Ring, CELLS, CELL_DATA};
use net::server::{self as shared, Control, Counter, PortTable, NIC, SLOTS};
use net::switch::{self, Route};

/// The fleet whose members may serve.
const FLEET: &[u8] = b"fleet/net";

/// Pages the kernel holds and a server maps.
pub struct KernelPages(Vec<SharedFrame>);

impl Pages for KernelPages {
    fn page(&self, i: usize) -> Option<&Page> {
        self.0.get(i).map(SharedFrame::words)
    }
}

impl KernelPages {
    /// `n` new zeroed pages (`ENOMEM`).
    fn new(n: usize) -> Result<KernelPages, Errno> {
        let mut v = Vec::new();
        v.try_reserve_exact(n).map_err(|_| Errno::ENOMEM)?;
        for _ in 0..n {
            v.push(SharedFrame::new()?);
        }
        Ok(KernelPages(v))
    }

    /// The physical addresses of its pages.
    fn frames(&self) -> Result<Vec<u64>, Errno> {
        let mut v = Vec::new();
        v.try_reserve_exact(self.0.len())
            .map_err(|_| Errno::ENOMEM)?;
        v.extend(self.0.iter().map(SharedFrame::phys));
        Ok(v)
    }
}

/// The region and the port table, made at the first attach and kept for good.
struct Shared {
    /// The control page and the rings.
    region: KernelPages,
    /// The port table's pages.
    table_pages: &'static KernelPages,
    /// The port table, which the kernel's port map mirrors to.
    table: PortTable<'static, KernelPages>,
}

/// The kernel's side of the rings, and who serves.
struct Netd {
    /// The pages.
    shared: &'static Shared,
    /// The kernel's side of the rings to the server, by slot ([`NIC`]: received frames).
    to_server: [Producer; SLOTS + 1],
    /// The kernel's side of the rings from the server, by slot ([`NIC`]: frames to send).
    from_server: [Consumer; SLOTS + 1],
    /// The attached server's pid.
    server: Option<u32>,
    /// The instance in each slot (1 and up).
    slots: [Option<Weak<Instance>>; SLOTS],
}

/// The network server's state, once one attached.
static NETD: IrqMutex<Option<Netd>> = IrqMutex::new(None);
/// A server is attached (read without [`NETD`] on every frame).
static SERVING: AtomicBool = AtomicBool::new(false);
/// Wake-ups the kernel gave the server.
static WAKEUPS: AtomicU64 = AtomicU64::new(0);
/// Frames the kernel could not put in a ring (full).
static RING_FULL: AtomicU64 = AtomicU64::new(0);

/// Whether a server is attached.
pub fn serving() -> bool {
    SERVING.load(Ordering::Acquire)
}

impl Netd {
    /// The region's ring `first`.
    fn ring(&self, first: usize) -> Ring<'static, KernelPages> {
        Ring::new(&self.shared.region, first)
    }

    /// The control page.
    fn control(&self) -> Control<'static, KernelPages> {
        Control::new(&self.shared.region)
    }

    /// Puts `frame` in slot `s`'s ring to the server: whether the server must be woken, or
    /// `None` if the frame is not in (the ring is full).
    fn push(&mut self, s: usize, frame: &[u8]) -> Option<bool> {
        let ring = self.ring(shared::to_server(s));
        match self.to_server[s].push(&ring, frame) {
            Ok(wake) => Some(wake),
            Err(_) => {
                RING_FULL.fetch_add(1, Ordering::Relaxed);
                None
            }
        }
    }

    /// The physical address of the server's wake-up word, after adding to it.
    fn ring_bell(&self) -> Option<u64> {
        let events = self.control().events()?;
        events.fetch_add(1, Ordering::AcqRel);
        let page = self.shared.region.0.first()?;
        Some(page.phys() + (shared::W_EVENTS * 8) as u64)
    }
}

/// Wakes a sleeping server (its futex word changed).
fn wake(bell: Option<u64>) {
    if let Some(phys) = bell {
        WAKEUPS.fetch_add(1, Ordering::Relaxed);
        crate::futex::wake_frame_word(phys);
    }
}

/// Puts `frame` in slot `s`'s ring and wakes the server if it sleeps; false if the ring is
/// full (the server kicks the slot once it has room).
fn push(s: usize, frame: &[u8]) -> bool {
    let (pushed, bell) = {
        let mut guard = NETD.lock();
        let Some(n) = guard.as_mut() else {
            return false;
        };
        match n.push(s, frame) {
            Some(true) => (true, n.ring_bell()),
            Some(false) => (true, None),
            None => (false, None),
        }
    };
    wake(bell);
    pushed
}

/// `reef_netd(ATTACH)`: process `p`, a member of `fleet/net`, becomes the network server. The
/// region goes into it read-write and the port table read-only: their addresses. `EPERM`
/// (not a member), `EBUSY` (another server is attached), `ENOMEM`.
pub fn attach(p: &Process) -> Result<(u64, u64), Errno> {
    let member = p.fleet.lock().is_some_and(|m| m.name.as_bytes() == FLEET);
    if !member {
        return Err(Errno::EPERM);
    }
    let mut guard = NETD.lock();
    if guard.as_ref().is_some_and(|n| n.server.is_some()) {
        return Err(Errno::EBUSY);
    }
    if guard.is_none() {
        let region = KernelPages::new(shared::REGION_PAGES)?;
        let table = KernelPages::new(shared::PORT_PAGES)?;
        let nic = super::nic::NIC.lock().as_ref().map(|n| n.mac);
        Control::new(&region).init(nic, ADDRESS.address(), GATEWAY);
        let table_pages: &'static KernelPages = Box::leak(Box::new(table));
        let shared: &'static Shared = Box::leak(Box::new(Shared {
            region,
            table_pages,
            table: PortTable::new(table_pages),
        }));
        PORTS.lock().mirror_to(&shared.table);
        let ring = |s| Ring::new(&shared.region, s);
        *guard = Some(Netd {
            shared,
            to_server: core::array::from_fn(|s| Producer::resume(&ring(shared::to_server(s)))),
            from_server: core::array::from_fn(|s| Consumer::resume(&ring(shared::from_server(s)))),
            server: None,
            slots: core::array::from_fn(|_| None),
        });
    }
    let n = guard.as_mut().ok_or(Errno::ENOMEM)?;
    if let Some(mac) = *super::GATEWAY_MAC.lock() {
        n.control().set_gateway_mac(mac);
    }
    let (base, assigned, served) = super::library::pool();
    n.control().set_pool(base, assigned, served);
    let region = n.shared.region.frames()?;
    let table = n.shared.table_pages.frames()?;
    let vm = p.vm();
    let region_addr = vm.map_kernel_frames(&region, true)?;
    let table_addr = match vm.map_kernel_frames(&table, false) {
        Ok(a) => a,
        Err(e) => {
            let _ = vm.unmap(region_addr, region.len() as u64 * PAGE_SIZE);
            return Err(e);
        }
    };
    n.server = Some(p.pid);
    SERVING.store(true, Ordering::Release);
    drop(guard);
    // A server killed between filling a ring and its kick left the ring's kernel side marked
    // awake with nobody draining it: take what waits and mark every ring asleep again.
    for s in 0..=NIC {
        drain(s);
    }
    Ok((region_addr, table_addr))
}

/// Process `pid` exited: if it served, the NIC and slot 0 go back to the kernel's switch.
pub fn process_gone(pid: u32) {
    if let Some(n) = NETD.lock().as_mut() {
        if n.server == Some(pid) {
            n.server = None;
            SERVING.store(false, Ordering::Release);
        }
    }
}

/// Rounds of [`join`] that deliver what a free slot's ring back still holds before it gives up
/// on them (a server that keeps filling the ring of a slot it saw freed).
const JOIN_DRAINS: usize = 4;

/// A new instance: into server mode in a free slot while a server is attached. A free slot's
/// ring back may still hold frames the server routed to its last instance before it saw that
/// instance leave (a server killed between routing them and its kick): they go to that
/// instance through the kernel's switch ([`drain`] of a slot with no instance), wherever it is
/// now, before the slot is taken. A thread's call, with no spin lock held.
pub fn join(inst: &Arc<Instance>) -> Result<(), Errno> {
    let mut drains = 0;
    loop {
        let mut guard = NETD.lock();
        let n = guard.as_mut().ok_or(Errno::ENODEV)?;
        if n.server.is_none() {
            return Err(Errno::ENODEV);
        }
        if inst.slot.load(Ordering::Acquire) != 0 {
            return Ok(());
        }
        let ctl = n.control();
        let s = (1..SLOTS)
            .find(|&s| n.slots[s].is_none() && ctl.is_free(s))
            .ok_or(Errno::ENOSPC)?;
        let back = n.ring(shared::from_server(s));
        if n.from_server[s].ready(&back) {
            if drains < JOIN_DRAINS {
                drains += 1;
                drop(guard);
                drain(s);
                continue;
            }
            n.from_server[s] = Consumer::skip_all(&back);
        }
        // Asleep, so that the server's first frame for this instance asks for the kernel.
        n.from_server[s].sleep(&back);
        n.to_server[s] = Producer::resume(&n.ring(shared::to_server(s)));
        ctl.join(s, inst.id, inst.address());
        n.slots[s] = Some(Arc::downgrade(inst));
        inst.slot.store(s, Ordering::Release);
        return Ok(());
    }
}

/// `inst` got its own address: if it is in server mode, the server accepts it as its frames'
/// source from now.
pub fn address_given(inst: &Instance) {
    let s = inst.slot.load(Ordering::Acquire);
    if let (Some(n), Some(a)) = (NETD.lock().as_ref(), inst.address()) {
        if s != 0 {
            n.control().set_slot_address(s, a);
        }
    }
}

/// An instance in server mode goes back to the kernel's switch: what the server has put in
/// its ring back is delivered to it first, and the server routes what it sent still.
pub fn leave(inst: &Arc<Instance>) {
    let s = inst.slot.load(Ordering::Acquire);
    if s == 0 {
        return;
    }
    drain(s);
    inst.slot.store(0, Ordering::Release);
    release(s);
}

/// Slot `s` is free again (its instance left, or went away).
pub fn release(s: usize) {
    if let Some(n) = NETD.lock().as_mut() {
        if let Some(slot) = n.slots.get_mut(s) {
            *slot = None;
            n.control().leave(s);
        }
    }
}

/// The pool of instances' own addresses changed (`super::library`): tells the server which
/// it answers for.
pub fn set_pool(base: net::Ipv4Address, assigned: u64, served: u64) {
    if let Some(n) = NETD.lock().as_ref() {
        n.control().set_pool(base, assigned, served);
    }
}

/// A pool address came back to the shared NIC (`super::library`): the server announces the
/// served addresses with gratuitous ARPs, woken for it.
pub fn announce() {
    let bell = {
        let guard = NETD.lock();
        let Some(n) = guard.as_ref() else {
            return;
        };
        n.control().announce();
        n.ring_bell()
    };
    wake(bell);
}

/// What became of a frame an instance sent, for [`sent`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sent {
    /// The instance is not in server mode: the kernel's switch routes the frame.
    NotServer,
    /// It is in the ring to the server.
    Queued,
    /// The ring is full: the instance keeps the frame (`Stack::give_back`) until the server
    /// makes room and kicks the slot.
    Full,
}

/// A frame instance `inst` sent, to the server if the instance is in server mode.
pub fn sent(inst: &Instance, frame: &[u8]) -> Sent {
    match inst.slot.load(Ordering::Acquire) {
        0 => Sent::NotServer,
        s if push(s, frame) => Sent::Queued,
        _ => Sent::Full,
    }
}

/// A frame of the kernel's switch for outside or for an instance in server mode: to the
/// server through slot 0 (dropped and counted if the ring is full).
pub fn from_switch(frame: &[u8]) {
    push(0, frame);
}

/// A frame the NIC received: to the server (dropped and counted if the ring is full; the
/// kernel looks for room first, [`nic_room`]).
pub fn nic_received(frame: &[u8]) {
    push(NIC, frame);
}

/// Whether the server's ring for the NIC's frames has room for one more. If not, the ring is
/// marked, the frames wait on the NIC (as a NIC's receive queue waits for its driver, rather
/// than being dropped for TCP to send again), and the server's kick of the NIC's bit says
/// when there is room ([`kick`]).
pub fn nic_room() -> bool {
    NETD.lock()
        .as_ref()
        .is_none_or(|n| n.to_server[NIC].has_room(&n.ring(shared::to_server(NIC))))
}

/// Takes up to a ring's worth of frames from slot `s`'s ring back (the instance of the slot).
fn take(s: usize) -> (Vec<Vec<u8>>, Option<Arc<Instance>>) {
    let mut out = Vec::new();
    let mut guard = NETD.lock();
    let Some(n) = guard.as_mut() else {
        return (out, None);
    };
    let inst = n.slots.get(s).and_then(|w| w.as_ref()?.upgrade());
    let ring = n.ring(shared::from_server(s));
    let mut buf = [0u8; CELL_DATA];
    for _ in 0..CELLS {
        let Some(got) = n.from_server[s].pop(&ring, &mut buf) else {
            break;
        };
        n.from_server[s].commit(&ring);
        let Ok(len) = got else {
            super::dropped(switch::Dropped::Malformed);
            continue;
        };
        let mut f = Vec::new();
        if f.try_reserve_exact(len).is_err() || out.try_reserve(1).is_err() {
            super::DROPPED_FULL.fetch_add(1, Ordering::Relaxed);
            continue;
        }
        f.extend_from_slice(&buf[..len]);
        out.push(f);
    }
    drop(guard);
    (out, inst)
}

/// Marks the kernel's side of slot `s`'s ring back asleep: `false` if a frame came meanwhile.
fn sleep(s: usize) -> bool {
    NETD.lock()
        .as_ref()
        .is_none_or(|n| n.from_server[s].sleep(&n.ring(shared::from_server(s))))
}

/// Held while a ring back is drained: the server's kick, an attach and an instance's move
/// may drain at once, and two drains delivering one ring's frames side by side would reorder
/// them (see `Instance::pumping`).
static DRAINING: SleepLock<()> = SleepLock::new(());

/// Takes and delivers everything in slot `s`'s ring back, until it is empty and marked asleep.
/// A thread's call (it may sleep for [`DRAINING`]), with no spin lock held.
fn drain(s: usize) {
    let _draining = DRAINING.lock();
    loop {
        let (frames, inst) = take(s);
        if !frames.is_empty() {
            deliver(s, frames, inst);
        }
        if sleep(s) {
            return;
        }
    }
}

/// Delivers frames the server sent to slot `s`: to its instance (through the kernel's switch
/// if it has left the slot), through the kernel's switch (slot 0), or out of the NIC.
fn deliver(s: usize, frames: Vec<Vec<u8>>, inst: Option<Arc<Instance>>) {
    if s == NIC {
        for f in frames {
            super::nic_send(&f);
        }
        super::nic::ring_doorbells();
        return;
    }
    let mut work: VecDeque<Arc<Instance>> = VecDeque::new();
    for f in frames {
        let reply = (s == 0)
            .then(|| net::dhcp::server_reply(&f, |a| a == super::ADDRESS.address()))
            .flatten();
        let (to, reject) = if let Some(xid) = reply {
            // A DHCP reply for an instance not in server mode: to the holder of port 68, or
            // to the instance whose request the kernel's switch let out.
            let holder = PORTS.lock().owner(net::Proto::Udp, net::dhcp::CLIENT_PORT);
            (
                holder.and_then(lookup).or_else(|| super::dhcp_client(xid)),
                false,
            )
        } else if s == 0 || inst.is_none() {
            // Slot 0's, or frames the server routed to a slot whose instance left before the
            // server saw it leave: the kernel's switch finds their instance wherever it is.
            match switch::route(&f, &*PORTS.lock(), super::is_local) {
                Route::Stack(id) => (lookup(id), false),
                Route::Reject => (rejecter(), true),
                _ => {
                    super::dropped(switch::Dropped::Unrouted);
                    continue;
                }
            }
        } else {
            (inst.clone(), false)
        };
        let Some(to) = to else { continue };
        if super::deliver(&to, f, reject) && !work.iter().any(|w| Arc::ptr_eq(w, &to)) {
            work.push_back(to);
        }
    }
    super::pump_all(work);
}

/// `reef_netd(KICK, mask)` from the server: takes what it put in the rings back of the slots
/// in `mask` (bit [`NIC`]: the NIC's) and runs their instances, which send what they kept
/// while their rings to the server were full (the NIC's bit: the frames left on the NIC are
/// taken at the return to user mode). `EPERM` unless `pid` is the attached server, `EINVAL`
/// for bits past the rings.
pub fn kick(pid: u32, mask: u64) -> Result<(), Errno> {
    if mask >> (NIC + 1) != 0 {
        return Err(Errno::EINVAL);
    }
    if NETD.lock().as_ref().and_then(|n| n.server) != Some(pid) {
        return Err(Errno::EPERM);
    }
    for s in 0..=NIC {
        if mask & 1 << s != 0 {
            drain(s);
            if s == NIC {
                // There may be room for the frames left on the NIC.
                super::nic_due();
            }
            // The ring to the server may have room for frames the instance kept.
            let inst = NETD
                .lock()
                .as_ref()
                .and_then(|n| n.slots.get(s)?.as_ref()?.upgrade());
            if let Some(inst) = inst {
                super::pump(&inst);
            }
        }
    }
    Ok(())
}

/// `/proc/reef/net`'s lines about the server: who serves, the slots and the counters.
pub fn report(out: &mut alloc::string::String) {
    use core::fmt::Write;
    let guard = NETD.lock();
    let Some(n) = guard.as_ref() else {
        let _ = writeln!(out, "server none");
        return;
    };
    let ctl = n.control();
    let _ = write!(
        out,
        "server {} wakeups {} ring_full {}",
        n.server
            .map_or(alloc::string::String::from("gone"), |p| alloc::format!(
                "{p}"
            )),
        WAKEUPS.load(Ordering::Relaxed),
        RING_FULL.load(Ordering::Relaxed)
    );
    for c in Counter::ALL {
        let _ = write!(out, " {} {}", c.name(), ctl.counter(c));
    }
    let _ = writeln!(out);
    let ring = |first| {
        let (head, tail, asleep, waiting) = n.ring(first).state();
        alloc::format!(
            "{head}/{tail}{}{}",
            if asleep { " asleep" } else { "" },
            if waiting { " waiting" } else { "" }
        )
    };
    for s in 0..=NIC {
        let who = match (s, ctl.instance(s)) {
            (0, _) => alloc::string::String::from("kernel"),
            (NIC, _) => alloc::string::String::from("nic"),
            (_, Some(id)) => alloc::format!("instance {id}"),
            (_, None) => continue,
        };
        let _ = writeln!(
            out,
            "slot {s} {who} to_server {} from_server {}",
            ring(shared::to_server(s)),
            ring(shared::from_server(s))
        );
    }
}

/// The slot of an instance in server mode (0: the kernel's switch).
pub fn slot_of(inst: &Instance) -> usize {
    inst.slot.load(Ordering::Acquire)
}
