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
//! Acknowledgement comes when the request is handled, with one exception: a TLB shootdown
//! ([`shoot_down`], NrOS §4.2) is acknowledged as soon as the target has taken the pages to
//! flush, before it flushes them. That is safe because the target flushes before it returns
//! from the interrupt handler, and the handler touches no user memory. A target vCPU that the
//! host has descheduled is not interrupted at all: the host flushes its TLB before it runs
//! again (`arch::kvm`).
//!
//! An IPI goes to the core that runs the target KCB ([`Kcb::ipi_apic_id`]): the core itself,
//! or its host while it is parked (Barrelfish/DC §4.8). The handler takes the requests of every
//! KCB its core runs (its own and the one parked on it), and every timer tick takes those whose
//! interrupt went astray while a KCB was moving between cores ([`poll`]).

use crate::arch::{apic, cpu};
use crate::kcb::{self, CoreState, Kcb};
use crate::time;
use core::sync::atomic::{AtomicU64, Ordering};
use vspace::FlushSet;

/// The vector all requests share.
pub const IPI_VECTOR: u8 = 0xF0;

/// What a request asks the target to do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
pub enum IpiKind {
    /// Nothing but acknowledge (round trips, waking a halted core).
    Ping = 0,
    /// Stop: take no more threads, stop at the next scheduling point (see
    /// `sched::request_stop` and `smp::stop_this_core`).
    Stop = 1,
    /// Invalidate the translations in the target's `flush` set (NR-vMem shootdown);
    /// acknowledged early, see [`shoot_down`].
    TlbFlush = 2,
    /// Bring this node's replicas up to date at the next safe point (NR log GC, §4.5).
    NrSync = 3,
    /// Take the KCBs claimed for parking on this core, or give back one parked here, as
    /// their fields say (`proc::sched::host_request`).
    Host = 4,
    /// See whether this core's periodic timer still runs, and start it again if not (the boot
    /// core's tick watch sends it to a core whose tick count stood still: `sched::watch_ticks`).
    CheckTimer = 5,
}

/// A sent request, to wait on.
#[derive(Clone, Copy, Debug)]
pub struct Ticket {
    /// The target core.
    core: usize,
    /// The request's number in the target's mailbox; acknowledged once the target's handled
    /// count reaches it.
    ticket: u64,
}

/// Why a request could not be sent or was not acknowledged.
#[derive(Debug)]
pub enum IpiError {
    /// No such core, or it is not online.
    NotOnline(usize),
    /// The target did not acknowledge in time.
    Timeout {
        /// The target core.
        core: usize,
        /// The unacknowledged request's ticket number.
        ticket: u64,
    },
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

/// Marks `kind` pending in `target`'s mailbox and draws the request's ticket, without sending
/// the interrupt.
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
    let target = kcb::get(core).filter(|k| k.runs_kernel());
    let target = target.ok_or(IpiError::NotOnline(core))?;
    Ok(send_to(target, kind))
}

/// Posts `kind` to a running KCB's mailbox and interrupts the core that runs it.
fn send_to(target: &Kcb, kind: IpiKind) -> Ticket {
    let ticket = post(target, kind);
    apic::send_ipi(target.ipi_apic_id(), IPI_VECTOR);
    ticket
}

/// Sends `kind` to every KCB that another core runs with one broadcast IPI; `tickets` receives
/// one ticket per target (up to its capacity, which should be the number of cores). KCBs this
/// core runs (its own and those parked here, or its host and its other guests) get nothing: the broadcast does
/// not interrupt the sender.
pub fn broadcast(kind: IpiKind, tickets: &mut alloc::vec::Vec<Ticket>) {
    let here = kcb::current().ipi_apic_id();
    for core in 0..kcb::MAX_CORES {
        if let Some(target) = kcb::get(core).filter(|k| k.runs_kernel() && k.ipi_apic_id() != here)
        {
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

/// Handles the IPI vector on the current core (called from the interrupt path): the requests
/// to each KCB the core runs.
pub fn handle() {
    let own = kcb::current().runner();
    own.ipi.received.fetch_add(1, Ordering::Relaxed);
    // Before the requests are read: a request posted after this interrupts again.
    apic::eoi();
    take_requests(own);
    for guest in own.hosted() {
        take_requests(guest);
    }
}

/// Takes the requests of the KCBs this core runs whose tickets are not all handled (called by
/// every timer tick): an IPI sent while a KCB moved between cores (parked, given back) may have
/// reached the core that no longer runs it.
pub fn poll() {
    let Some(here) = kcb::try_current() else {
        return;
    };
    let own = here.runner();
    for k in core::iter::once(own).chain(own.hosted()) {
        if k.ipi.requested.load(Ordering::SeqCst) > k.ipi.handled.load(Ordering::SeqCst) {
            take_requests(k);
        }
    }
}

/// Handles the pending requests of `kcb`, one of the KCBs this core runs, with interrupts off.
fn take_requests(kcb: &Kcb) {
    let requested = kcb.ipi.requested.load(Ordering::SeqCst);
    let pending = kcb.ipi.pending.swap(0, Ordering::SeqCst);
    if pending & (1 << IpiKind::Stop as u32) != 0 {
        crate::proc::sched::request_stop(kcb);
    }
    if pending & (1 << IpiKind::NrSync as u32) != 0 {
        kcb.sched.nr_sync.store(true, Ordering::Release);
    }
    if pending & (1 << IpiKind::Host as u32) != 0 {
        crate::proc::sched::host_request(kcb);
    }
    if pending & (1 << IpiKind::CheckTimer as u32) != 0 {
        crate::proc::sched::check_timer(kcb);
    }
    if pending & (1 << IpiKind::TlbFlush as u32) != 0 {
        let set = kcb.ipi.flush.lock().take();
        // Early acknowledgement: the flush below runs before this handler returns.
        kcb.ipi.handled.fetch_max(requested, Ordering::SeqCst);
        wake_halted_initiators(kcb);
        invalidate(&set);
    }
    kcb.ipi.handled.fetch_max(requested, Ordering::SeqCst);
}

/// Takes the last requests to a parked KCB that its host gives back (with interrupts off, once
/// it reads `Stopped` so that no more come) and voids any that come later: the core starts
/// again with an empty TLB.
pub fn drain(kcb: &Kcb) {
    take_requests(kcb);
    kcb.ipi.pending.store(0, Ordering::SeqCst);
    kcb.ipi
        .handled
        .fetch_max(kcb.ipi.requested.load(Ordering::SeqCst), Ordering::SeqCst);
}

/// Interrupts the initiators that asked for a wake-up and halted (see [`shoot_down`]).
fn wake_halted_initiators(kcb: &Kcb) {
    for (word, bits) in kcb.ipi.wake_after_ack.iter().enumerate() {
        let mut bits = bits.swap(0, Ordering::SeqCst);
        while bits != 0 {
            let core = word * 64 + bits.trailing_zeros() as usize;
            bits &= bits - 1;
            if let Some(k) = kcb::get(core) {
                if k.ipi.halted_for_acks.load(Ordering::SeqCst) {
                    apic::send_ipi(k.ipi_apic_id(), IPI_VECTOR);
                }
            }
        }
    }
}

/// Invalidates `set` in this core's TLB.
pub fn invalidate(set: &FlushSet) {
    if set.is_all() {
        cpu::flush_tlb();
    } else {
        for &page in set.pages() {
            cpu::invlpg(page);
        }
    }
}

/// TLB shootdown counters, for `/proc/reef/tlb`.
pub struct ShootdownStats {
    /// Shootdowns that had other cores to reach.
    pub shootdowns: AtomicU64,
    /// Targets interrupted with a `TlbFlush` IPI.
    pub interrupted: AtomicU64,
    /// Targets whose flush was left to the host because their vCPU was descheduled.
    pub deferred: AtomicU64,
    /// Shootdowns that named pages (`invlpg` each) rather than flushing everything.
    pub by_page: AtomicU64,
    /// Targets that took more than [`STUCK_NS`] to acknowledge (reported on the console).
    pub stuck: AtomicU64,
    /// Nanoseconds initiators spent waiting for acknowledgements.
    pub wait_ns: AtomicU64,
    /// Times an initiator halted until an acknowledgement (or another interrupt) came.
    pub halts: AtomicU64,
}

/// The counters of every shootdown.
pub static SHOOTDOWN_STATS: ShootdownStats = ShootdownStats {
    shootdowns: AtomicU64::new(0),
    interrupted: AtomicU64::new(0),
    deferred: AtomicU64::new(0),
    by_page: AtomicU64::new(0),
    stuck: AtomicU64::new(0),
    wait_ns: AtomicU64::new(0),
    halts: AtomicU64::new(0),
};

/// A target that has not acknowledged a shootdown after this long is reported (and waited
/// for: the caller cannot reuse what it unmapped before the target flushed).
pub const STUCK_NS: u64 = 5_000_000_000;

/// How long an initiator polls for an acknowledgement before it halts until one arrives.
const ACK_POLL_NS: u64 = 20_000;

/// Makes every core in `targets` (not the caller's) invalidate `set`, and returns once each
/// has taken the request or is a descheduled vCPU whose flush the host will do. Requests to
/// one core merge into its `flush` set.
///
/// The caller polls for each acknowledgement for [`ACK_POLL_NS`], then (with interrupts on)
/// halts until the target interrupts it after acknowledging: a target that is slow to answer
/// is usually a vCPU waiting for a host CPU, and a spinning initiator would keep one from it.
pub fn shoot_down(targets: impl Iterator<Item = usize>, set: &FlushSet) {
    let stats = &SHOOTDOWN_STATS;
    let me = kcb::current();
    let (my_word, my_bit) = (me.core_id / 64, 1u64 << (me.core_id % 64));
    let may_halt = cpu::interrupts_enabled();
    let mut sent: [Option<(&Kcb, Ticket)>; kcb::MAX_CORES] = [None; kcb::MAX_CORES];
    let (mut interrupted, mut deferred) = (0, 0);
    for core in targets {
        let Some(target) = kcb::get(core).filter(|k| k.runs_kernel()) else {
            continue;
        };
        // A KCB this core runs too (parked here, or this core's host) has its translations in
        // this core's TLB: no interrupt, which could not be taken while the caller waits.
        if target.ipi_apic_id() == me.ipi_apic_id() {
            invalidate(set);
            continue;
        }
        if target.runner().steal.defer_flush() {
            deferred += 1;
            continue;
        }
        target.ipi.flush.lock().merge(set);
        sent[interrupted] = Some((target, send_to(target, IpiKind::TlbFlush)));
        interrupted += 1;
    }
    if interrupted + deferred == 0 {
        return;
    }
    stats.shootdowns.fetch_add(1, Ordering::Relaxed);
    stats
        .interrupted
        .fetch_add(interrupted as u64, Ordering::Relaxed);
    if !set.is_all() {
        stats.by_page.fetch_add(1, Ordering::Relaxed);
    }
    let waited = time::now_ns();
    for &(target, ticket) in sent[..interrupted].iter().flatten() {
        let start = time::now_ns();
        let mut reported = false;
        loop {
            // A core that stopped meanwhile runs nothing until it starts again, which begins
            // with an empty TLB.
            if acknowledged(&ticket) || target.state() == CoreState::Stopped {
                break;
            }
            // A target the host descheduled after the IPI was sent is flushed by the host.
            if target.runner().steal.defer_flush() {
                deferred += 1;
                break;
            }
            let now = time::now_ns();
            if !reported && now - start > STUCK_NS {
                reported = true;
                stats.stuck.fetch_add(1, Ordering::Relaxed);
                crate::kprintln!(
                    "reef: ipi: TLB shootdown from core {}: core {} has not acknowledged for {} \
                     s; still waiting",
                    me.core_id,
                    target.core_id,
                    STUCK_NS / 1_000_000_000
                );
            }
            if may_halt && now - start > ACK_POLL_NS {
                // Pairs with the target's acknowledgement then `wake_halted_initiators`: it
                // sees this flag, or this sees its acknowledgement. The timer also ends a halt.
                me.ipi.halted_for_acks.store(true, Ordering::SeqCst);
                target.ipi.wake_after_ack[my_word].fetch_or(my_bit, Ordering::SeqCst);
                if !acknowledged(&ticket) {
                    stats.halts.fetch_add(1, Ordering::Relaxed);
                    cpu::enable_and_halt();
                }
                me.ipi.halted_for_acks.store(false, Ordering::SeqCst);
            } else {
                cpu::pause();
            }
        }
    }
    stats.deferred.fetch_add(deferred as u64, Ordering::Relaxed);
    stats
        .wait_ns
        .fetch_add(time::now_ns() - waited, Ordering::Relaxed);
}

/// `/proc/reef/tlb`: the shootdown counters, then per online core the IPIs it received and the
/// time the host stole from its vCPU (KVM steal time; 0 elsewhere).
pub fn shootdown_report() -> alloc::string::String {
    use core::fmt::Write;
    let st = &SHOOTDOWN_STATS;
    let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
    let mut s = alloc::string::String::new();
    let _ = writeln!(
        s,
        "shootdowns {}\nby_page {}\ninterrupted {}\ndeferred {}\nstuck {}\nwait_ns {}\n\
         halts {}\npv_tlb_flush {}",
        get(&st.shootdowns),
        get(&st.by_page),
        get(&st.interrupted),
        get(&st.deferred),
        get(&st.stuck),
        get(&st.wait_ns),
        get(&st.halts),
        u8::from(crate::arch::kvm::pv_tlb_flush()),
    );
    let _ = writeln!(s, "core ipis_received steal_ns");
    for core in 0..kcb::MAX_CORES {
        if let Some(k) = kcb::get(core).filter(|k| k.state() == CoreState::Online) {
            let _ = writeln!(s, "{core} {} {}", get(&k.ipi.received), k.steal.stolen_ns());
        }
    }
    s
}
