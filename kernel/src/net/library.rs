//! Library mode (LibrettOS §3.1) and the addresses that make the live switch possible (§3.3).
//!
//! An instance in library mode has a NIC of its own (one of `nic::LIBRARY`, QEMU's extra
//! virtio-net devices on the shared NIC's segment, standing in for SR-IOV virtual functions):
//! the frames it sends to outside leave by that NIC, and everything the NIC receives is its,
//! with no switch and no server on the way. Only frames for the machine's own addresses
//! (loopback, 10.0.2.15, other instances' addresses) still go through the kernel's switch. The
//! thin VIF between the instance and its NIC swaps the instance's MAC for the NIC's both ways
//! (`net::switch::vif_out`, `vif_in`).
//!
//! The NIC has an address of its own: as in LibrettOS, an instance that moves between modes
//! keeps one address throughout, taken from a pool ([`POOL_BASE`], [`POOL_SIZE`]) when it
//! first goes to library mode and given back when the instance goes. The shared NIC (the
//! kernel's switch or the network server) answers ARP for the pool addresses whose instances
//! are not in library mode ([`SERVED`]), and every move announces the address's new MAC with a
//! gratuitous ARP, so the neighbours (QEMU's user network) send to the right NIC from then on
//! and connections survive the move (TCP resends what was lost meanwhile).
//!
//! Locks: `nic::LIBRARY` alone, or after an instance's lock is let go; never with [`super`]'s
//! registry or an instance's lock held.

use super::{nic, server, Instance, GATEWAY_MAC};
use abi::Errno;
use alloc::collections::VecDeque;
use alloc::sync::Arc;
use core::sync::atomic::{AtomicU64, Ordering};
use net::{Ipv4Address, Ipv4Cidr};

/// The first address of the pool.
pub const POOL_BASE: Ipv4Address = Ipv4Address::new(10, 0, 2, 16);
/// Addresses in the pool.
pub const POOL_SIZE: u32 = 16;

/// Bit `i`: pool address `i` is an instance's.
static ASSIGNED: AtomicU64 = AtomicU64::new(0);
/// Bit `i`: pool address `i` is reached through the shared NIC (its instance is not in library
/// mode).
static SERVED: AtomicU64 = AtomicU64::new(0);
/// Frames instances in library mode sent out of their NICs.
static SENT: AtomicU64 = AtomicU64::new(0);
/// Frames their NICs received for them.
static RECEIVED: AtomicU64 = AtomicU64::new(0);
/// Frames a library-mode NIC received and nobody took: not IPv4 and not the instance's (ARP
/// for an address not its own; no instance has the NIC), or the instance's queue was full.
static DROPPED: AtomicU64 = AtomicU64::new(0);
/// IPv4 frames a library-mode NIC got for an address not (or no longer) on it, handed to the
/// shared NIC's routing (`super::left_nic`).
static MOVED: AtomicU64 = AtomicU64::new(0);

/// The pool index of `a`.
fn index(a: Ipv4Address) -> Option<u32> {
    let i = u32::from(a).wrapping_sub(u32::from(POOL_BASE));
    (i < POOL_SIZE).then_some(i)
}

/// Whether `a` is a pool address some instance has (local to the machine).
pub fn is_assigned(a: Ipv4Address) -> bool {
    index(a).is_some_and(|i| ASSIGNED.load(Ordering::Acquire) >> i & 1 != 0)
}

/// Whether the shared NIC answers for pool address `a`.
pub fn is_served(a: Ipv4Address) -> bool {
    index(a).is_some_and(|i| SERVED.load(Ordering::Acquire) >> i & 1 != 0)
}

/// The pool: its first address and its assigned and served bitmaps.
pub fn pool() -> (Ipv4Address, u64, u64) {
    (
        POOL_BASE,
        ASSIGNED.load(Ordering::Acquire),
        SERVED.load(Ordering::Acquire),
    )
}

/// Tells the network server the pool's state (it answers ARP for the served addresses).
fn publish() {
    let (base, assigned, served) = pool();
    server::set_pool(base, assigned, served);
}

/// The address of `inst`'s own, given now from the pool if it has none (reached through the
/// shared NIC until the instance goes to library mode). `EADDRNOTAVAIL` when the pool is used
/// up.
fn own_address(inst: &Arc<Instance>) -> Result<Ipv4Address, Errno> {
    if let Some(a) = inst.address() {
        return Ok(a);
    }
    let i = loop {
        let now = ASSIGNED.load(Ordering::Acquire);
        let i = (!now).trailing_zeros();
        if i >= POOL_SIZE {
            return Err(Errno::EADDRNOTAVAIL);
        }
        if ASSIGNED
            .compare_exchange(now, now | 1 << i, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
        {
            break i;
        }
    };
    let a = Ipv4Address::from(u32::from(POOL_BASE) + i);
    if !inst.peek(|s| s.add_address(Ipv4Cidr::new(a, 24))) {
        ASSIGNED.fetch_and(!(1 << i), Ordering::AcqRel);
        return Err(Errno::EADDRNOTAVAIL);
    }
    inst.address.store(u32::from(a), Ordering::Release);
    SERVED.fetch_or(1 << i, Ordering::AcqRel);
    publish();
    Ok(a)
}

/// An instance with address `a` went away: the address goes back to the pool.
pub fn address_gone(a: Ipv4Address) {
    if let Some(i) = index(a) {
        SERVED.fetch_and(!(1 << i), Ordering::AcqRel);
        ASSIGNED.fetch_and(!(1 << i), Ordering::AcqRel);
        publish();
    }
}

/// An instance in library mode went away: its NIC is free.
pub fn nic_gone(k: usize) {
    if let Some(n) = nic::LIBRARY.lock().get_mut(k - 1) {
        n.owner = None;
    }
}

/// `netctl direct PID`: `inst` goes to library mode on a free NIC, with its own address
/// (given now if it has none), announced on that NIC. `ENODEV` (the machine has no NIC for
/// library mode), `ENOSPC` (every one is taken), `EADDRNOTAVAIL` (the pool is used up).
pub fn go_direct(inst: &Arc<Instance>) -> Result<(), Errno> {
    if inst.direct.load(Ordering::Acquire) != 0 {
        return Ok(());
    }
    if nic::LIBRARY.lock().is_empty() {
        return Err(Errno::ENODEV);
    }
    let a = own_address(inst)?;
    let k = {
        let mut nics = nic::LIBRARY.lock();
        let k = nics
            .iter()
            .position(|n| n.owner.is_none())
            .ok_or(Errno::ENOSPC)?;
        nics[k].owner = Some(inst.id);
        k + 1
    };
    // Out of the network server first: what it holds for the instance is delivered.
    server::leave(inst);
    inst.direct.store(k, Ordering::Release);
    if let Some(i) = index(a) {
        SERVED.fetch_and(!(1 << i), Ordering::AcqRel);
    }
    publish();
    if let Some(n) = nic::LIBRARY.lock().get_mut(k - 1) {
        let garp = net::switch::gratuitous(n.mac, a);
        n.send(&garp);
    }
    nic::ring_doorbells();
    Ok(())
}

/// `netctl server|kernel PID` of an instance in library mode: its NIC is free again and its
/// address is the shared NIC's, announced there ([`announce_shared`]).
pub fn go_shared(inst: &Arc<Instance>) {
    let k = inst.direct.swap(0, Ordering::AcqRel);
    if k == 0 {
        return;
    }
    nic_gone(k);
    let Some(a) = inst.address() else { return };
    if let Some(i) = index(a) {
        SERVED.fetch_or(1 << i, Ordering::AcqRel);
    }
    publish();
    announce_shared(a);
}

/// Announces pool address `a` as the shared NIC's: by the network server if one is attached
/// (asked through `server::announce`), else here.
fn announce_shared(a: Ipv4Address) {
    if server::serving() {
        server::announce();
    } else if let Some(n) = nic::NIC.lock().as_mut() {
        let garp = net::switch::gratuitous(n.mac, a);
        n.send(&garp);
        nic::ring_doorbells();
    }
}

/// `netctl address PID`: `inst` gets an address of its own now, where it is (LibrettOS gives
/// one at launch to an application that may switch), announced on the shared NIC; its new
/// connections outside go from it, so that they keep their path's address across moves.
/// `ENODEV` without a NIC, `EADDRNOTAVAIL` when the pool is used up; nothing if it has one.
pub fn give_address(inst: &Arc<Instance>) -> Result<(), Errno> {
    if inst.address().is_some() {
        return Ok(());
    }
    if !super::has_nic() {
        return Err(Errno::ENODEV);
    }
    let a = own_address(inst)?;
    server::address_given(inst);
    announce_shared(a);
    Ok(())
}

/// A frame `inst` sent: `true` if it left by the instance's own NIC (library mode, and not for
/// one of the machine's addresses, which the kernel's switch reaches).
pub fn sent(inst: &Instance, frame: &mut [u8]) -> bool {
    let k = inst.direct.load(Ordering::Acquire);
    if k == 0 {
        return false;
    }
    if net::switch::for_machine(frame, super::is_local) {
        return false;
    }
    let mut nics = nic::LIBRARY.lock();
    let Some(n) = nics.get_mut(k - 1) else {
        return false;
    };
    net::switch::vif_out(frame, net::stack_mac(inst.id), n.mac);
    if let Some(gw) = *GATEWAY_MAC.lock() {
        net::switch::past_switch(frame, gw);
    }
    if n.send(frame) {
        SENT.fetch_add(1, Ordering::Relaxed);
    } else {
        DROPPED.fetch_add(1, Ordering::Relaxed);
    }
    true
}

/// Most frames taken from one NIC per pass.
const BATCH: usize = 64;

/// Delivers what the library-mode NICs received to their instances (added to `work`).
pub fn receive(work: &mut VecDeque<Arc<Instance>>) {
    let count = nic::LIBRARY.lock().len();
    for k in 0..count {
        for _ in 0..BATCH {
            let got = {
                let mut nics = nic::LIBRARY.lock();
                let Some(n) = nics.get_mut(k) else { break };
                n.receive().map(|f| (f, n.mac, n.owner))
            };
            let Some((mut frame, mac, owner)) = got else {
                break;
            };
            let inst = owner.and_then(super::lookup);
            let Some(inst) = inst.filter(|i| net::switch::for_own_nic(&frame, i.address())) else {
                if net::switch::is_ipv4(&frame) {
                    // For an address that left this NIC (or never was on it).
                    MOVED.fetch_add(1, Ordering::Relaxed);
                    super::left_nic(frame, work);
                } else {
                    DROPPED.fetch_add(1, Ordering::Relaxed);
                }
                continue;
            };
            net::switch::vif_in(&mut frame, mac, net::stack_mac(inst.id));
            RECEIVED.fetch_add(1, Ordering::Relaxed);
            if super::deliver(&inst, frame, false) && !work.iter().any(|w| Arc::ptr_eq(w, &inst)) {
                work.push_back(inst);
            }
        }
    }
}

/// Whether a library-mode NIC has frames waiting (the tick's look for a lost interrupt).
pub fn waiting() -> bool {
    nic::LIBRARY.lock().iter().any(nic::Nic::can_receive)
}

/// `/proc/reef/net`'s lines about library mode: each NIC and its instance, the counters.
pub fn report(out: &mut alloc::string::String) {
    use core::fmt::Write;
    for (k, n) in nic::LIBRARY.lock().iter().enumerate() {
        let owner = n.owner.map_or(alloc::string::String::from("free"), |o| {
            alloc::format!("{o}")
        });
        let _ = writeln!(
            out,
            "library-nic {} mac {} instance {owner} foreign {} notifications {}",
            k + 1,
            n.mac,
            n.foreign,
            n.notifications()
        );
    }
    let _ = writeln!(
        out,
        "library sent {} received {} dropped {} moved {} pool {}/{} assigned {:#x} served {:#x}",
        SENT.load(Ordering::Relaxed),
        RECEIVED.load(Ordering::Relaxed),
        DROPPED.load(Ordering::Relaxed),
        MOVED.load(Ordering::Relaxed),
        POOL_BASE,
        POOL_SIZE,
        ASSIGNED.load(Ordering::Relaxed),
        SERVED.load(Ordering::Relaxed)
    );
}
