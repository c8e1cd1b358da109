//! Kernel self-tests, selected with `test=NAME` on the command line and checked by the QEMU
//! integration tests (`cargo xtask test`):
//!
//! - `ipi`: every core sends a `Ping` IPI to every other core and waits for its acknowledgement
//!   (all ordered pairs, all cores at once), then a clock relay passes a timestamp from core to
//!   core and checks that the clock never goes backwards across cores, and every core's APIC
//!   timer must tick;
//! - `corectl`: stops the last core with the BootDriver, restarts it with its KCB, and pings it;
//! - `memory`: allocates frames and heap memory on every core and checks they come from the
//!   core's own node;
//! - `fault`: the boot core touches an unmapped address (the exception report and status 5);
//! - `fault-ap`: the last core executes an invalid instruction (the report names that core);
//! - `panic`: the boot core panics (the panic report and status 3);
//! - `timer-watch`: the last core stops its own timer; the boot core's tick watch must find it
//!   and have it started again (`proc::sched::watch_ticks`).
//!
//! A self-test that fails prints `reef: selftest NAME: FAILED: ...` and exits with status 7.

use crate::arch::cpu;
use crate::arch::power::{self, ExitCode};
use crate::ipi::{self, IpiKind};
use crate::kcb::online_cores;
use crate::kcb::{self, CoreState};
use crate::kprintln;
use crate::mm::{self, FrameSize};
use crate::smp::BootDriver;
use crate::sync::IrqMutex;
use crate::time;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

/// Phase of the multi-core part of a self-test: cores run their part when it is non-zero.
static PHASE: AtomicUsize = AtomicUsize::new(0);
/// Phase in which every core pings every other core and records the round-trip times.
const PHASE_IPI: usize = 1;
/// Phase in which the last online core executes an invalid instruction (`fault-ap`).
const PHASE_FAULT_AP: usize = 2;
/// Phase in which every core checks that its frames and heap memory come from its own node.
const PHASE_MEMORY: usize = 3;
/// Phase in which the cores pass a timestamp around (the clock relay).
const PHASE_RELAY: usize = 4;
/// Phase in which the last online core stops its own timer (`timer-watch`).
const PHASE_TIMER_STOP: usize = 5;
/// Bit set of cores that finished their part of the current phase.
static DONE: [AtomicU64; kcb::MAX_CORES / 64] = [const { AtomicU64::new(0) }; kcb::MAX_CORES / 64];
/// Failures reported by any core.
static FAILURES: AtomicUsize = AtomicUsize::new(0);
/// Round-trip times, `RTT[from * MAX_CORES + to]` in ns (0: not measured).
static RTT: [AtomicU64; 64 * 64] = [const { AtomicU64::new(0) }; 64 * 64];
/// Row length of `RTT`: round-trip times are recorded only between cores with ids below this.
const RTT_CORES: usize = 64;
/// Clock relay: number of hops, and (hop, timestamp) passed from core to core.
static RELAY_HOPS: AtomicUsize = AtomicUsize::new(0);
/// Number of the next hop of the clock relay.
static RELAY_HOP: AtomicUsize = AtomicUsize::new(0);
/// Timestamp in ns read by the core that made the last hop of the clock relay.
static RELAY_TIME: AtomicU64 = AtomicU64::new(0);
/// How long a core waits for a `Ping` IPI to be acknowledged, in ns.
const ACK_TIMEOUT_NS: u64 = 5_000_000_000;

/// Counts a failure and prints the failure report of self-test `test`.
fn fail(test: &str, args: core::fmt::Arguments<'_>) {
    FAILURES.fetch_add(1, Ordering::SeqCst);
    kprintln!("reef: selftest {test}: FAILED: {args}");
}

/// Marks `core` as finished with the current phase in `DONE`.
fn mark_done(core: usize) {
    DONE[core / 64].fetch_or(1 << (core % 64), Ordering::SeqCst);
}

/// Whether all of `cores` finished the current phase.
fn all_done(cores: &[usize]) -> bool {
    cores
        .iter()
        .all(|&c| DONE[c / 64].load(Ordering::SeqCst) & (1 << (c % 64)) != 0)
}

/// Whether a multi-core phase is waiting for this core (checked by the idle loop with
/// interrupts disabled).
pub fn pending() -> bool {
    let phase = PHASE.load(Ordering::Acquire);
    let core = kcb::current().core_id;
    phase != 0 && DONE[core / 64].load(Ordering::SeqCst) & (1 << (core % 64)) == 0
}

/// Runs this core's part of the current phase (called by the idle loop of every core).
pub fn run_pending() {
    let core = kcb::current().core_id;
    match PHASE.load(Ordering::Acquire) {
        PHASE_IPI => ipi_part(core),
        PHASE_FAULT_AP if core == *online_cores().last().expect("cores") => {
            kprintln!("reef: selftest fault-ap: core {core} executes ud2");
            // SAFETY: deliberately raises #UD to test the exception report; the handler never
            // returns.
            unsafe { core::arch::asm!("ud2") };
        }
        PHASE_MEMORY => memory_part(core),
        PHASE_RELAY => relay_part(core),
        PHASE_TIMER_STOP if core == *online_cores().last().expect("cores") => {
            crate::arch::apic::timer_stop();
        }
        _ => {}
    }
    mark_done(core);
}

/// Sends a `Ping` IPI from core `me` to every other online core, waits for each
/// acknowledgement, and records the round-trip times in `RTT`.
fn ipi_part(me: usize) {
    for to in online_cores() {
        if to == me {
            continue;
        }
        let start = time::now_ns();
        let result = ipi::send(to, IpiKind::Ping).and_then(|t| ipi::wait(&t, ACK_TIMEOUT_NS));
        match result {
            Ok(()) if me < RTT_CORES && to < RTT_CORES => {
                RTT[me * RTT_CORES + to].store((time::now_ns() - start).max(1), Ordering::SeqCst)
            }
            Ok(()) => {}
            Err(e) => fail("ipi", format_args!("{me}->{to}: {e}")),
        }
    }
}

/// Checks on core `me` that 100 allocated frames and a heap allocation are on the core's own
/// node, then releases the frames.
fn memory_part(me: usize) {
    let node = kcb::current().node_id;
    let mut frames = Vec::new();
    for _ in 0..100 {
        match mm::allocate(FrameSize::Base) {
            Ok(f) => frames.push(f),
            Err(e) => return fail("memory", format_args!("core {me}: {e}")),
        }
    }
    if let Some(f) = frames
        .iter()
        .find(|f| f.node() != node || mm::node_of(f.base()) != Some(node))
    {
        fail(
            "memory",
            format_args!("core {me} on node {node} got frame {f}"),
        );
    }
    for f in frames {
        if let Err(e) = mm::release(f) {
            fail("memory", format_args!("core {me}: release: {e}"));
        }
    }
    let boxed = alloc::boxed::Box::new([0u8; 1024]);
    let phys = crate::arch::paging::virt_to_phys(boxed.as_ptr() as u64);
    if mm::node_of(phys) != Some(node) {
        fail(
            "memory",
            format_args!(
                "core {me} on node {node}: heap memory at {phys:#x} is on node {:?}",
                mm::node_of(phys)
            ),
        );
    }
}

/// Runs a multi-core phase on all online cores (including this one) and waits for them.
fn run_phase(phase: usize) {
    for d in &DONE {
        d.store(0, Ordering::SeqCst);
    }
    PHASE.store(phase, Ordering::Release);
    let mut tickets = Vec::new();
    ipi::broadcast(IpiKind::Ping, &mut tickets);
    run_pending();
    let cores = online_cores();
    let deadline = time::now_ns() + 60_000_000_000;
    while !all_done(&cores) {
        if time::now_ns() > deadline {
            fail("phase", format_args!("cores did not finish phase {phase}"));
            break;
        }
        cpu::pause();
    }
    PHASE.store(0, Ordering::Release);
}

/// Passes a timestamp around all cores `4 * cores` times; see `relay_part`.
fn clock_relay() {
    let cores = online_cores().len();
    RELAY_HOPS.store(4 * cores, Ordering::SeqCst);
    RELAY_TIME.store(time::now_ns(), Ordering::SeqCst);
    RELAY_HOP.store(0, Ordering::SeqCst);
    run_phase(PHASE_RELAY);
    kprintln!(
        "reef: clock relay: {} hops across {cores} cores, never backwards",
        4 * cores
    );
}

/// At hop `h` the core at position `h % cores` reads the clock, checks it is not earlier than
/// the previous core's reading, and passes its reading on.
fn relay_part(me: usize) {
    let cores = online_cores();
    let count = cores.len();
    let index = cores
        .iter()
        .position(|&c| c == me)
        .expect("running core is online");
    let hops = RELAY_HOPS.load(Ordering::SeqCst);
    let deadline = time::now_ns() + 30_000_000_000;
    loop {
        let hop = RELAY_HOP.load(Ordering::SeqCst);
        if hop >= hops {
            return;
        }
        if hop % count == index {
            let previous = RELAY_TIME.load(Ordering::SeqCst);
            let now = time::now_ns();
            if now < previous {
                fail("ipi", format_args!("clock went backwards from {previous} to {now} ns at hop {hop} on core {me}"));
            }
            RELAY_TIME.store(now, Ordering::SeqCst);
            RELAY_HOP.store(hop + 1, Ordering::SeqCst);
        } else if time::now_ns() > deadline {
            fail(
                "ipi",
                format_args!("clock relay stalled at hop {hop} on core {me}"),
            );
            return;
        }
        cpu::pause();
    }
}

/// Runs the self-test `name` on the boot core after boot. Returns normally if it passed.
pub fn run(name: &str, driver: &BootDriver) {
    match name {
        "ipi" => {
            run_phase(PHASE_IPI);
            let cores = online_cores();
            let mut pairs = 0;
            for &from in &cores {
                for &to in &cores {
                    if from != to && from < RTT_CORES && to < RTT_CORES {
                        let rtt = RTT[from * RTT_CORES + to].load(Ordering::SeqCst);
                        if rtt > 0 {
                            kprintln!("reef: ipi {from}->{to} ok rtt={rtt}ns");
                            pairs += 1;
                        }
                    }
                }
            }
            clock_relay();
            kprintln!("reef: ipi: {pairs} pairs acknowledged");
            timers_tick(&cores);
        }
        "memory" => {
            let before = mm::free_bytes();
            run_phase(PHASE_MEMORY);
            kprintln!(
                "reef: memory: frames and heap local on {} cores; free {} KiB before, {} KiB after; \
                 {} heap allocations served by a remote node",
                online_cores().len(),
                before / 1024,
                mm::free_bytes() / 1024,
                mm::heap::remote_fallbacks()
            );
        }
        "corectl" => corectl(driver),
        "fault" => {
            kprintln!("reef: selftest fault: writing to unmapped address 0xdead0000");
            // SAFETY: deliberately faults (the address is not mapped) to test the exception
            // report; the handler never returns.
            unsafe { (0xdead_0000 as *mut u64).write_volatile(1) };
        }
        "fault-ap" => run_phase(PHASE_FAULT_AP),
        "panic" => panic!("deliberate panic (test=panic)"),
        "lock-order" => lock_order(),
        "deadlock" => deadlock(),
        "timer-watch" => timer_watch(),
        other => fail(
            other,
            format_args!(
                "no such self-test (ipi, memory, corectl, fault, fault-ap, panic, lock-order, \
                 deadlock, timer-watch)"
            ),
        ),
    }
    let failures = FAILURES.load(Ordering::SeqCst);
    if failures > 0 {
        kprintln!("reef: selftest {name}: {failures} failures");
        power::exit(ExitCode::TestFailure);
    }
    kprintln!("reef: selftest {name}: passed");
}

/// Checks that every core's calibrated local APIC timer interrupts it (waits for two ticks on
/// each, with a generous deadline: this checks behaviour, not timing).
fn timers_tick(cores: &[usize]) {
    let deadline = time::now_ns() + 10_000_000_000;
    for &c in cores {
        let kcb = kcb::get(c).expect("online core has a KCB");
        while kcb.timer_ticks.load(Ordering::Relaxed) < 2 {
            if time::now_ns() > deadline {
                return fail("ipi", format_args!("core {c}'s APIC timer does not tick"));
            }
            cpu::pause();
        }
    }
    kprintln!(
        "reef: APIC timer ticking on all {} cores at {} Hz",
        cores.len(),
        time::TIMER_HZ
    );
}

/// The `timer-watch` self-test: the last core stops its own timer, as the core whose timer
/// never ran did (`time::start_timer`); the boot core's tick watch must notice within a few
/// seconds and have the core start it again, after which the core ticks again.
fn timer_watch() {
    let cores = online_cores();
    let Some(&last) = cores.last().filter(|&&c| c != 0) else {
        return fail("timer-watch", format_args!("needs at least two cores"));
    };
    let kcb = kcb::get(last).expect("online core has a KCB");
    let restarts = crate::proc::sched::TIMER_RESTARTS.load(Ordering::Relaxed);
    run_phase(PHASE_TIMER_STOP);
    let stopped_at = kcb.timer_ticks.load(Ordering::Relaxed);
    kprintln!("reef: timer-watch: core {last} stopped its timer after {stopped_at} ticks");
    let deadline = time::now_ns() + 30_000_000_000;
    while crate::proc::sched::TIMER_RESTARTS.load(Ordering::Relaxed) == restarts
        || kcb.timer_ticks.load(Ordering::Relaxed) < stopped_at + 2
    {
        if time::now_ns() > deadline {
            return fail(
                "timer-watch",
                format_args!(
                    "core {last}'s timer was not started again: {} ticks, {} restarts",
                    kcb.timer_ticks.load(Ordering::Relaxed),
                    crate::proc::sched::TIMER_RESTARTS.load(Ordering::Relaxed)
                ),
            );
        }
        cpu::pause();
    }
    kprintln!(
        "reef: timer-watch: core {last} ticks again ({} ticks)",
        kcb.timer_ticks.load(Ordering::Relaxed)
    );
}

/// The `corectl` self-test: stops the last core, checks that it accepts no IPIs and takes no
/// timer interrupts, restarts it with its KCB, and checks that it acknowledges a `Ping` again.
fn corectl(driver: &BootDriver) {
    let cores = online_cores();
    let Some(&last) = cores.last().filter(|&&c| c != 0) else {
        return fail("corectl", format_args!("needs at least two cores"));
    };
    let kcb = kcb::get(last).expect("online core has a KCB");
    let ticks_before = kcb.timer_ticks.load(Ordering::Relaxed);
    if let Err(e) = driver.stop(kcb) {
        return fail("corectl", format_args!("stop: {e}"));
    }
    kprintln!(
        "reef: corectl: core {last} stopped (state {:?}, cached frames {})",
        kcb.state(),
        kcb.tcache.lock().cached_base()
    );
    if ipi::send(last, IpiKind::Ping).is_ok() {
        fail("corectl", format_args!("a stopped core accepted an IPI"));
    }
    time::spin_ns(50_000_000);
    if kcb.timer_ticks.load(Ordering::Relaxed) > ticks_before + 1 {
        fail(
            "corectl",
            format_args!("stopped core {last} kept taking timer interrupts"),
        );
    }
    if let Err(e) = driver.start(kcb) {
        return fail("corectl", format_args!("restart: {e}"));
    }
    kprintln!(
        "reef: corectl: core {last} restarted with its KCB (state {:?})",
        kcb.state()
    );
    match ipi::send(last, IpiKind::Ping).and_then(|t| ipi::wait(&t, ACK_TIMEOUT_NS)) {
        Ok(()) => kprintln!("reef: corectl: core {last} acknowledges IPIs again"),
        Err(e) => fail("corectl", format_args!("ping after restart: {e}")),
    }
    if kcb.state() != CoreState::Online {
        fail(
            "corectl",
            format_args!("core {last} is {:?} after restart", kcb.state()),
        );
    }
}

/// `test=lock-order`: releases an `IrqMutex` guard before one taken inside it, which
/// `IrqMutexGuard::drop` reports as a kernel bug (a panic naming the inner lock's type).
fn lock_order() {
    static OUTER: IrqMutex<u8> = IrqMutex::new(0);
    static INNER: IrqMutex<u16> = IrqMutex::new(0);
    // SAFETY: this core's IDT and local APIC are initialized (the self-tests run after boot);
    // the outer guard must find interrupts on for its release to turn them back on.
    unsafe { cpu::enable_interrupts() };
    let outer = OUTER.lock();
    let inner = INNER.lock();
    drop(outer);
    drop(inner);
    fail(
        "lock-order",
        format_args!("a guard released after its enclosing one was not reported"),
    );
}

/// `test=deadlock`: takes an `IrqMutex` this core already holds, which `IrqMutex::lock`
/// reports after its deadlock timeout (a panic naming the lock's type).
fn deadlock() {
    static LOCK: IrqMutex<u32> = IrqMutex::new(0);
    let held = LOCK.lock();
    let again = LOCK.lock();
    drop(again);
    drop(held);
    fail(
        "deadlock",
        format_args!("a lock taken twice was granted twice"),
    );
}
