//! Interrupt and exception handling above the entry stubs.
//!
//! A CPU exception in the kernel is fatal: Reef prints a report (exception name, vector, error
//! code, RIP, CR2 for page faults, core, registers) and exits QEMU with the exception status
//! (see `arch::power::ExitCode`). User-mode exceptions become signals; page faults on user
//! memory go to NR-vMem (`crate::vm`).

use crate::arch::idt::{exception_name, InterruptFrame};
use crate::arch::power::{self, ExitCode};
use crate::arch::{apic, cpu};
use crate::console::print_emergency;
use crate::kcb::{self, Kcb, FIRST_BINDABLE_VECTOR};
use crate::sync::IrqMutex;
use crate::time::TIMER_VECTOR;
use core::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};

/// Drivers' handlers of device interrupts, by bindable vector (`FIRST_BINDABLE_VECTOR + i`):
/// the hook through which an interrupt reaches its driver above this layer.
static DEVICE_HANDLERS: IrqMutex<[Option<DeviceHandler>; kcb::BINDABLE_VECTORS]> =
    IrqMutex::new([None; kcb::BINDABLE_VECTORS]);

/// A driver's interrupt handler.
type DeviceHandler = fn();

/// Binds device interrupt source `gsi` (`u32::MAX` for a message-signalled one, which has
/// none) to a free vector of the calling core, whose interrupts will run `handler` (before
/// the EOI: a level-triggered device must be quieted there). Vectors are the same on every
/// core (one IDT), so a vector is free when no core has it bound.
/// Returns the vector, or `None` if no vector is free or the core has no KCB yet.
pub fn bind_device(gsi: u32, handler: DeviceHandler) -> Option<u8> {
    let k = kcb::try_current()?;
    let mut bindings = k.interrupt_bindings.lock();
    let mut handlers = DEVICE_HANDLERS.lock();
    let i = (0..kcb::BINDABLE_VECTORS).find(|&i| handlers[i].is_none())?;
    bindings.gsi[i] = Some(gsi);
    handlers[i] = Some(handler);
    HOME[i].store(k.core_id, Ordering::Release);
    Some(FIRST_BINDABLE_VECTOR + i as u8)
}

/// How a driver points a message-signalled source at another core (its MSI-X entry's
/// destination): called with the vector and the new core's APIC id.
pub type Retarget = fn(vector: u8, apic_id: u32);

/// The drivers' [`Retarget`]s, by bindable vector: sources without one stay where they are.
static RETARGET: IrqMutex<[Option<Retarget>; kcb::BINDABLE_VECTORS]> =
    IrqMutex::new([None; kcb::BINDABLE_VECTORS]);

/// The core each bound vector was bound to first, its home, to which a start or an unpark
/// brings it back ([`kcb::NO_CORE`]: none).
static HOME: [AtomicUsize; kcb::BINDABLE_VECTORS] =
    [const { AtomicUsize::new(kcb::NO_CORE) }; kcb::BINDABLE_VECTORS];

/// [`bind_device`] for a message-signalled source the driver can point at another core with
/// `retarget` ([`move_bindings`]).
pub fn bind_msi(handler: DeviceHandler, retarget: Retarget) -> Option<u8> {
    let vector = bind_device(u32::MAX, handler)?;
    RETARGET.lock()[usize::from(vector - FIRST_BINDABLE_VECTOR)] = Some(retarget);
    Some(vector)
}

/// Moves vector index `i` from core `from` to core `to` (Barrelfish/DC §4.8: a device
/// interrupt re-registered after a move): the driver points the source at `to`, then the
/// binding moves between the KCBs. False if `from` does not hold it or it cannot move.
fn move_one(i: usize, from: &Kcb, to: &Kcb) -> bool {
    let Some(retarget) = RETARGET.lock()[i] else {
        return false;
    };
    let Some(gsi) = from.interrupt_bindings.lock().gsi[i].take() else {
        return false;
    };
    let vector = FIRST_BINDABLE_VECTOR + i as u8;
    retarget(vector, to.apic_id);
    to.interrupt_bindings.lock().gsi[i] = Some(gsi);
    crate::kprintln!(
        "reef: irq: vector {vector:#x} moved from core {} to core {}",
        from.core_id,
        to.core_id
    );
    true
}

/// Moves every source bound to core `from` that can move to core `to`, before `from` stops or
/// is parked on `to`, so that no interrupt goes to a halted core. Returns how many moved.
pub fn move_bindings(from: &Kcb, to: &Kcb) -> usize {
    (0..kcb::BINDABLE_VECTORS)
        .filter(|&i| move_one(i, from, to))
        .count()
}

/// Brings back to core `home` (started or unparked again) the sources first bound there that
/// another core holds now.
pub fn bring_home(home: &Kcb) {
    for (i, h) in HOME.iter().enumerate() {
        if h.load(Ordering::Acquire) != home.core_id {
            continue;
        }
        let holder = (0..kcb::MAX_CORES)
            .filter_map(kcb::get)
            .find(|k| k.core_id != home.core_id && k.interrupt_bindings.lock().gsi[i].is_some());
        if let Some(h) = holder {
            move_one(i, h, home);
        }
    }
}

/// Makes core `core` the home of vector `vector` and moves it there (a boot option's choice);
/// false if the vector is not bound or cannot move, or the core is not online.
pub fn rehome(vector: u8, core: usize) -> bool {
    let Some(i) = vector
        .checked_sub(FIRST_BINDABLE_VECTOR)
        .map(usize::from)
        .filter(|&i| i < kcb::BINDABLE_VECTORS)
    else {
        return false;
    };
    let Some(to) = kcb::get(core).filter(|k| k.state() == kcb::CoreState::Online) else {
        return false;
    };
    let Some(from) = kcb::get(HOME[i].load(Ordering::Acquire)) else {
        return false;
    };
    if from.core_id != core && !move_one(i, from, to) {
        return false;
    }
    HOME[i].store(core, Ordering::Release);
    true
}

/// Displays a core id without allocating (the heap may be what failed).
struct CoreName(Option<usize>);

impl core::fmt::Display for CoreName {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self.0 {
            Some(c) => write!(f, "{c}"),
            None => write!(f, "boot (before KCB)"),
        }
    }
}

/// Handles an NMI (QEMU's monitor command `nmi` sends one to every core, through LINT1): the
/// first core to take it prints the scheduler's state (`sched::dump`), and every core goes on;
/// a core whose NMI comes after that dump ended, within a second of its start, prints nothing
/// (one command, one report). It changes nothing: the interrupted code may be anywhere, even in
/// the `syscall` entry before its `swapgs`, so the dump neither reads the current KCB (the
/// clock here is the raw TSC) nor takes a lock it cannot get.
pub fn nmi() {
    static DUMPING: AtomicBool = AtomicBool::new(false);
    static LAST_DUMP_TSC: AtomicU64 = AtomicU64::new(0);
    if !DUMPING.swap(true, Ordering::AcqRel) {
        let now = cpu::rdtsc();
        let last = LAST_DUMP_TSC.load(Ordering::Acquire);
        if last == 0 || now.wrapping_sub(last) > crate::time::tsc_hz() {
            LAST_DUMP_TSC.store(now, Ordering::Release);
            crate::proc::sched::dump();
        }
        DUMPING.store(false, Ordering::Release);
    }
}

/// Handles a CPU exception: page faults on user memory (demand paging, NR-vMem replicas that
/// lag, or a SIGSEGV), exceptions in user mode (signals), faults in the user-copy routine
/// (EFAULT); anything else in the kernel is fatal.
pub fn exception(frame: &mut InterruptFrame) {
    let user_mode = frame.cs & 3 == 3;
    if frame.vector == 14 {
        let addr = cpu::read_cr2();
        let err = frame.error_code;
        let in_copy = !user_mode && crate::arch::user::in_user_copy(frame);
        if in_copy && frame.rflags & (1 << 9) == 0 {
            // A user copy with interrupts off (under an `IrqMutex`) does not page, as Linux's
            // do not in atomic context: resolving may wait for other cores (the NR log, a
            // shootdown) that cannot reach this one, or for the lock its caller holds. The copy
            // fails with EFAULT; the caller drops its lock, brings the page in and retries.
            crate::arch::user::fixup_user_copy(frame);
            return;
        }
        if user_mode || in_copy {
            if let Some(me) = crate::proc::sched::current() {
                // Interrupts go back on while resolving (NR operations may wait for other
                // cores, whose IPIs must get through), as the faulting context had them on.
                let vm = me.process.vm();
                let write = err & 2 != 0;
                let exec = err & 0x10 != 0;
                // SAFETY: the interrupted context had interrupts on (user mode always has them,
                // and a copy with them off was fixed up above); the IDT and local APIC of this
                // core are set up.
                unsafe { cpu::enable_interrupts() };
                // A file mapping's missing page may be one the file holds again.
                let fault = match vm.fault(addr, write, exec) {
                    Err(crate::vm::Fault::PastEnd) if crate::filemap::fault_in(&vm, addr) => Ok(()),
                    r => r,
                };
                match fault {
                    Ok(()) => return,
                    Err(crate::vm::Fault::OutOfMemory) if user_mode => {
                        crate::proc::out_of_memory(&me, addr);
                        return;
                    }
                    Err(fault @ (crate::vm::Fault::Denied(_) | crate::vm::Fault::PastEnd))
                        if user_mode =>
                    {
                        use crate::proc::signal::{self as sig, SigInfo};
                        let (signo, code) = match fault {
                            crate::vm::Fault::Denied(code) => (sig::SIGSEGV, code),
                            _ => (sig::SIGBUS, sig::BUS_ADRERR),
                        };
                        let info = SigInfo {
                            code,
                            addr,
                            ..Default::default()
                        };
                        sig::force(&me, signo, info);
                        return;
                    }
                    Err(_) => {
                        crate::arch::user::fixup_user_copy(frame);
                        return;
                    }
                }
            }
        }
    }
    if user_mode {
        if let Some(me) = crate::proc::sched::current() {
            use crate::proc::signal::{self as sig, SigInfo};
            let signo = match frame.vector {
                0 | 16 | 19 => sig::SIGFPE,
                1 | 3 => sig::SIGTRAP,
                6 => sig::SIGILL,
                17 => sig::SIGBUS,
                _ => sig::SIGSEGV,
            };
            sig::force(
                &me,
                signo,
                SigInfo {
                    code: crate::proc::signal::SI_KERNEL,
                    addr: frame.rip,
                    ..Default::default()
                },
            );
            return;
        }
    }
    let core = CoreName(kcb::try_current().map(|k| k.core_id));
    print_emergency(format_args!(
        "\nreef: exception: {} (vector {}) error={:#x} rip={:#x} core={}\n",
        exception_name(frame.vector),
        frame.vector,
        frame.error_code,
        frame.rip,
        core
    ));
    if frame.vector == 14 {
        let e = frame.error_code;
        print_emergency(format_args!(
            "reef:   cr2={:#x} ({} {} in {} mode{})\n",
            cpu::read_cr2(),
            if e & 1 != 0 {
                "protection violation"
            } else {
                "page not present"
            },
            if e & 0x10 != 0 {
                "on instruction fetch"
            } else if e & 2 != 0 {
                "on write"
            } else {
                "on read"
            },
            if e & 4 != 0 { "user" } else { "kernel" },
            if e & 8 != 0 { ", reserved bit set" } else { "" },
        ));
    }
    print_emergency(format_args!(
        "reef:   rax={:#018x} rbx={:#018x} rcx={:#018x} rdx={:#018x}\n\
         reef:   rsi={:#018x} rdi={:#018x} rbp={:#018x} rsp={:#018x}\n\
         reef:   r8 ={:#018x} r9 ={:#018x} r10={:#018x} r11={:#018x}\n\
         reef:   r12={:#018x} r13={:#018x} r14={:#018x} r15={:#018x}\n\
         reef:   cs={:#x} ss={:#x} rflags={:#x}\n",
        frame.rax,
        frame.rbx,
        frame.rcx,
        frame.rdx,
        frame.rsi,
        frame.rdi,
        frame.rbp,
        frame.rsp,
        frame.r8,
        frame.r9,
        frame.r10,
        frame.r11,
        frame.r12,
        frame.r13,
        frame.r14,
        frame.r15,
        frame.cs,
        frame.ss,
        frame.rflags
    ));
    power::exit(ExitCode::Exception)
}

/// Handles a device, timer or inter-processor interrupt.
pub fn interrupt(frame: &mut InterruptFrame) {
    let vector = frame.vector as u8;
    match vector {
        TIMER_VECTOR => {
            if let Some(k) = kcb::try_current() {
                k.timer_ticks.fetch_add(1, Ordering::Relaxed);
            }
            apic::eoi();
            crate::proc::sched::timer_tick(frame.cs & 3 == 3);
            crate::ipi::poll();
            // Core 0's duties, also during the turn of a KCB parked on it.
            if kcb::try_current().is_some_and(|k| k.runner().core_id == 0) {
                crate::tty::receive_input();
                crate::proc::itimer::tick();
                crate::fs::eventfd::tick();
                crate::net::tick();
                crate::proc::sched::watch_ticks(kcb::current());
            }
        }
        crate::ipi::IPI_VECTOR => {
            crate::ipi::handle();
            // A tickless core (`reef-rt`) may have been given work: its timer must end the
            // running thread's slice.
            if let Some(k) = kcb::try_current().filter(|k| k.sched.is_tickless()) {
                crate::proc::sched::arm_next_timer(k);
            }
        }
        apic::SPURIOUS_VECTOR => {}
        apic::ERROR_VECTOR => {
            let esr = apic::error_status();
            apic::eoi();
            crate::kprintln!("reef: local APIC error, ESR={esr:#x}");
        }
        v if (FIRST_BINDABLE_VECTOR..FIRST_BINDABLE_VECTOR + kcb::BINDABLE_VECTORS as u8)
            .contains(&v) =>
        {
            let i = (v - FIRST_BINDABLE_VECTOR) as usize;
            let handler = DEVICE_HANDLERS.lock()[i];
            if let Some(handler) = handler {
                handler();
                apic::eoi();
                return;
            }
            let bound = kcb::try_current().and_then(|k| k.interrupt_bindings.lock().gsi[i]);
            apic::eoi();
            crate::kprintln!(
                "reef: device interrupt on vector {v:#x} (source {bound:?}) has no driver"
            );
        }
        v => {
            apic::eoi();
            crate::kprintln!("reef: unexpected interrupt vector {v:#x}");
        }
    }
}
