//! Networking (LibrettOS, issue 15): each process's own TCP/IP stack instance, the machine's
//! port map, and the switch that joins the instances inside the machine.
//!
//! A process gets an [`Instance`] (a `net::Stack`, smoltcp behind Linux socket semantics) at its
//! first `socket` call; its sockets live there, so no socket state is shared between programs'
//! stacks (LibrettOS §3.1). A forked child's inherited sockets stay in the parent's instance;
//! the child's own new sockets go to its own. Every instance owns 127.0.0.1, and instances reach
//! each other through the switch (`net::switch`: proxy ARP, routing by the destination port
//! through [`PORTS`], a rejecting instance answering for ports nobody holds), as LibrettOS's
//! network server routes between applications. There is no NIC yet: frames to other addresses
//! are dropped and counted (`/proc/reef/net`).
//!
//! Frames move synchronously: an operation on a socket runs its instance ([`Instance::run`]),
//! and [`pump`] carries the frames it sent to their instances and runs those, until nothing
//! moves. Timers (retransmissions, TIME-WAIT, keep-alive, lingering closes) are the boot core's:
//! its tick ([`tick`]) notes that the earliest deadline passed, and [`run_due`] (next return to
//! user or idle pass, as for interval timers) polls every instance and lets idle ones go once
//! no process or descriptor holds them.
//!
//! Locks: an instance's lock, then [`PORTS`] (both interrupts off, each held for one bounded
//! operation or poll: at most `QUEUE_FRAMES` frames); [`REGISTRY`] alone or before an
//! instance's lock. Nothing holds two instances' locks; waiting happens with no lock held.

pub mod socket;

use crate::fd::POLL_WAKE;
use crate::proc::wait::{PollKey, WaitQueue, Wake};
use crate::sync::IrqMutex;
use abi::Errno;
use alloc::collections::{BTreeMap, VecDeque};
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use net::switch::{self, Route};
use net::{Instant, Ipv4Address, PortMap, Stack, StackId};

/// One stack instance and the threads waiting on its sockets.
pub struct Instance {
    /// Its number (its ports' owner).
    pub id: StackId,
    /// The stack.
    stack: IrqMutex<Stack>,
    /// Threads waiting for one of its sockets to change; woken after every poll that changed
    /// something.
    waiters: WaitQueue,
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
/// The deadline passed: [`run_due`] has work.
static DUE: AtomicBool = AtomicBool::new(false);
/// Frames the switch carried between instances.
static FORWARDED: AtomicU64 = AtomicU64::new(0);
/// Frames dropped: for outside addresses (no NIC yet).
static DROPPED_OUTSIDE: AtomicU64 = AtomicU64::new(0);
/// Frames dropped: malformed or of a protocol the switch does not route.
static DROPPED_BAD: AtomicU64 = AtomicU64::new(0);
/// Frames dropped: the receiving instance's queue was full.
static DROPPED_FULL: AtomicU64 = AtomicU64::new(0);

/// Most instance polls one [`pump`] runs; what is left waits for the next operation or tick.
const PUMP_LIMIT: usize = 100_000;

/// The time as smoltcp counts it.
fn now() -> Instant {
    Instant::from_micros((crate::time::now_ns() / 1000) as i64)
}

/// The addresses local to the machine (for now, the loopback network).
fn is_local(a: Ipv4Address) -> bool {
    a.is_loopback()
}

/// A new instance, registered.
fn create(id: Option<StackId>) -> Result<Arc<Instance>, Errno> {
    let mut seed = [0u8; 8];
    crate::random::fill(&mut seed);
    let mut reg = REGISTRY.lock();
    let id = match id {
        Some(id) => id,
        None => {
            // A number no live instance has (0 is the rejecting one's).
            let mut n = reg.next;
            while n == 0 || reg.stacks.contains_key(&n) {
                n = n.wrapping_add(1);
            }
            reg.next = n.wrapping_add(1);
            n
        }
    };
    let stack = Stack::new(id, &[net::LOOPBACK], None, u64::from_le_bytes(seed), now());
    let inst = Arc::new(Instance {
        id,
        stack: IrqMutex::new(stack),
        waiters: WaitQueue::new(),
    });
    reg.stacks.insert(id, inst.clone());
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

/// The instance numbered `id`.
fn lookup(id: StackId) -> Option<Arc<Instance>> {
    REGISTRY.lock().stacks.get(&id).cloned()
}

/// The rejecting instance (number 0): it holds no socket, so its stack answers a TCP segment
/// with a reset and a ping with a reply, as a host without the service does.
fn rejecter() -> Option<Arc<Instance>> {
    lookup(0).or_else(|| create(Some(0)).ok())
}

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

    /// Runs `f` until it answers something other than `EAGAIN`, sleeping between tries
    /// (`nonblock`: once). `EINTR` if a signal comes first.
    pub fn wait_for<R>(
        self: &Arc<Self>,
        nonblock: bool,
        mut f: impl FnMut(&mut Stack, &mut PortMap, Instant) -> Result<R, Errno>,
    ) -> Result<R, Errno> {
        loop {
            let seq = self.waiters.seq();
            match self.run(&mut f) {
                Err(Errno::EAGAIN) if !nonblock => {}
                r => return r,
            }
            if self.waiters.wait(seq, None) == Wake::Interrupted {
                return Err(Errno::EINTR);
            }
        }
    }

    /// Reads the stack without running it (`poll` events, addresses).
    pub fn peek<R>(&self, f: impl FnOnce(&mut Stack) -> R) -> R {
        f(&mut self.stack.lock())
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
    let mut polls = 0;
    while let Some(inst) = work.pop_front() {
        polls += 1;
        if polls > PUMP_LIMIT {
            DUE.store(true, Ordering::Release);
            return;
        }
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
        for frame in frames {
            if let Some(to) = forward(&inst, frame) {
                if !work.iter().any(|w| Arc::ptr_eq(w, &to)) {
                    work.push_back(to);
                }
            }
        }
    }
}

/// Carries one frame `from` sent: returns the instance that got it.
fn forward(from: &Arc<Instance>, mut frame: Vec<u8>) -> Option<Arc<Instance>> {
    let route = switch::route(&frame, &PORTS.lock(), is_local);
    let (to, reject) = match route {
        Route::Stack(id) => (lookup(id)?, false),
        Route::Reject => (rejecter()?, true),
        Route::Reply(answer) => {
            from.stack.lock().deliver(answer);
            return Some(from.clone());
        }
        Route::Outside => {
            DROPPED_OUTSIDE.fetch_add(1, Ordering::Relaxed);
            return None;
        }
        Route::Drop(_) => {
            DROPPED_BAD.fetch_add(1, Ordering::Relaxed);
            return None;
        }
    };
    switch::readdress(&mut frame, net::stack_mac(to.id));
    {
        let mut s = to.stack.lock();
        if reject {
            s.learn_switch();
        }
        if !s.deliver(frame) {
            DROPPED_FULL.fetch_add(1, Ordering::Relaxed);
            return None;
        }
    }
    FORWARDED.fetch_add(1, Ordering::Relaxed);
    Some(to)
}

/// The boot core's timer tick: notes when the earliest deadline has passed.
pub fn tick() {
    let now_ms = crate::time::now_ns() / 1_000_000;
    if now_ms >= DEADLINE_MS.load(Ordering::Acquire) {
        DUE.store(true, Ordering::Release);
    }
}

/// Whether [`run_due`] has work.
pub fn pending() -> bool {
    DUE.load(Ordering::Acquire)
}

/// Polls every instance (their timers) and lets go of the idle ones nothing else holds.
pub fn run_due() {
    if !DUE.swap(false, Ordering::AcqRel) {
        return;
    }
    DEADLINE_MS.store(u64::MAX, Ordering::Release);
    let all: Vec<Arc<Instance>> = REGISTRY.lock().stacks.values().cloned().collect();
    for inst in &all {
        pump(inst);
    }
    drop(all);
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
    let _ = writeln!(out, "instance sockets ports rx_dropped");
    for inst in &all {
        let (socks, dropped) = inst.peek(|s| (s.open_sockets(), s.rx_dropped));
        let ports: Vec<alloc::string::String> = PORTS
            .lock()
            .ports_of(inst.id)
            .map(|(p, n)| {
                alloc::format!("{}/{n}", if p == net::Proto::Tcp { "tcp" } else { "udp" })
            })
            .collect();
        let ports = if ports.is_empty() {
            alloc::string::String::from("-")
        } else {
            ports.join(",")
        };
        let _ = writeln!(out, "{} {socks} {ports} {dropped}", inst.id);
    }
    let _ = writeln!(
        out,
        "forwarded {} dropped_outside {} dropped_malformed {} dropped_full {}",
        FORWARDED.load(Ordering::Relaxed),
        DROPPED_OUTSIDE.load(Ordering::Relaxed),
        DROPPED_BAD.load(Ordering::Relaxed),
        DROPPED_FULL.load(Ordering::Relaxed)
    );
    out
}
