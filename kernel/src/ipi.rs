//! Inter-processor interrupts with acknowledgements.
//!
//! A request is a bit in the target's [`IpiMailbox`](crate::kcb::IpiMailbox) plus a ticket. The
//! sender sets the bit, draws a ticket from `requested`, and sends the IPI vector. The target's
//! handler reads `requested` (r), takes all pending bits, handles them, and publishes `handled =
//! max(handled, r)`. A sender whose ticket is `t` is acknowledged once `handled >= t`: the handler
//! that read r >= t took the sender's bit, because the bit was set before the ticket was drawn.
//! If the handler read r < t, the sender's IPI is still pending at the APIC and runs the handler
//! again. Several requests and several senders may thus share one interrupt.
//!
//! Acknowledgement comes when the request is handled: a TLB shootdown is acknowledged after the
//! flush, so the initiator may free frames as soon as every target acknowledged.

use crate::arch::apic;
use crate::kcb::{self, CoreState, Kcb};
use crate::time;
use core::sync::atomic::Ordering;

/// The vector all requests share.
pub const IPI_VECTOR: u8 = 0xF0;

/// What a request asks the target to do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
pub enum IpiKind {
    /// Nothing but acknowledge (round trips, waking a halted core).
    Ping = 0,
    /// Stop: return cached frames, report stopped, halt (see `smp::BootDriver::stop`).
    Stop = 1,
    /// Flush this core's TLB (NR-vMem shootdown); acknowledged after the flush.
    TlbFlush = 2,
    /// Bring this node's replicas up to date at the next safe point (NR log GC, §4.5).
    NrSync = 3,
}

/// A sent request, to wait on.
#[derive(Clone, Copy, Debug)]
pub struct Ticket {
    core: usize,
    ticket: u64,
}

/// Why a request could not be sent or was not acknowledged.
#[derive(Debug)]
pub enum IpiError {
    /// No such core, or it is not online.
    NotOnline(usize),
    /// The target did not acknowledge in time.
    Timeout { core: usize, ticket: u64 },
}

impl core::fmt::Display for IpiError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            IpiError::NotOnline(c) => write!(f, "core {c} is not online"),
            IpiError::Timeout { core, ticket } => {
                write!(f, "core {core} did not acknowledge IPI ticket {ticket}")
            }
        }
    }
}

fn post(target: &Kcb, kind: IpiKind) -> Ticket {
    target
        .ipi
        .pending
        .fetch_or(1 << kind as u32, Ordering::SeqCst);
    let ticket = target.ipi.requested.fetch_add(1, Ordering::SeqCst) + 1;
    Ticket {
        core: target.core_id,
        ticket,
    }
}

/// Sends `kind` to `core`.
pub fn send(core: usize, kind: IpiKind) -> Result<Ticket, IpiError> {
    let target = kcb::get(core).filter(|k| k.state() == CoreState::Online);
    let target = target.ok_or(IpiError::NotOnline(core))?;
    let ticket = post(target, kind);
    apic::send_ipi(target.apic_id, IPI_VECTOR);
    Ok(ticket)
}

/// Sends `kind` to every other online core with one broadcast IPI; `tickets` receives one ticket
/// per target (up to its capacity, which should be the number of cores).
pub fn broadcast(kind: IpiKind, tickets: &mut alloc::vec::Vec<Ticket>) {
    let me = kcb::current().core_id;
    for core in 0..kcb::MAX_CORES {
        if core == me {
            continue;
        }
        if let Some(target) = kcb::get(core).filter(|k| k.state() == CoreState::Online) {
            tickets.push(post(target, kind));
        }
    }
    apic::broadcast_ipi(IPI_VECTOR);
}

/// Whether the request is acknowledged.
pub fn acknowledged(t: &Ticket) -> bool {
    kcb::get(t.core).is_some_and(|k| k.ipi.handled.load(Ordering::SeqCst) >= t.ticket)
}

/// Waits up to `timeout_ns` for the acknowledgement of `t`.
pub fn wait(t: &Ticket, timeout_ns: u64) -> Result<(), IpiError> {
    let deadline = time::now_ns() + timeout_ns;
    while !acknowledged(t) {
        if time::now_ns() > deadline {
            return Err(IpiError::Timeout {
                core: t.core,
                ticket: t.ticket,
            });
        }
        crate::arch::cpu::pause();
    }
    Ok(())
}

/// Handles the IPI vector on the current core (called from the interrupt path).
pub fn handle() {
    let kcb = kcb::current();
    let requested = kcb.ipi.requested.load(Ordering::SeqCst);
    let pending = kcb.ipi.pending.swap(0, Ordering::SeqCst);
    kcb.ipi.received.fetch_add(1, Ordering::Relaxed);
    apic::eoi();
    if pending & (1 << IpiKind::Stop as u32) != 0 {
        crate::smp::stop_this_core(kcb, requested);
    }
    if pending & (1 << IpiKind::TlbFlush as u32) != 0 {
        crate::arch::cpu::flush_tlb();
    }
    if pending & (1 << IpiKind::NrSync as u32) != 0 {
        kcb.sched.nr_sync.store(true, Ordering::Release);
    }
    kcb.ipi.handled.fetch_max(requested, Ordering::SeqCst);
}
