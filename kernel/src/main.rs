//! # Reef
//!
//! A research kernel for manycore x86-64 machines that runs static Linux binaries and makes five
//! published scalability designs real in one kernel: NrOS (node replication), Hare (a file
//! system served by a fleet of servers), fos (services as fleets of servers bound to cores),
//! Barrelfish/DC (cores started, stopped and re-kernelled at run time, state in a KCB) and
//! LibrettOS (one network stack in library or server mode).
//!
//! ## Design principles
//!
//! 1. **Per-core state lives in the core's KCB** ([`kcb::Kcb`]) and nowhere else, so a core can
//!    be stopped, restarted or handed another kernel image ([`smp::BootDriver`]).
//! 2. **Memory is NUMA-local by construction**: frames come from the core's node (NCache,
//!    TCache in [`mm`]), and the heap serves each core from its node ([`mm::heap`]).
//! 3. **Mechanisms that do not touch hardware are host-tested library crates** (`lib/acpi`,
//!    `lib/frames`, `lib/nr`); the kernel links them and supplies hardware access.
//! 4. **`unsafe` stays in the architecture layer** ([`arch`]) and a few small places that say
//!    why they are sound (the direct-map accessors, the KCB, the heap).
//! 5. **Failures are reported, never silent**: every exception and panic prints a report and
//!    makes QEMU exit with a distinct status; bad configurations are named.
//!
//! ## Boot flow
//!
//! `boot.S` (multiboot entry, long mode) → [`kmain_bsp`]: console, multiboot information,
//! kernel page tables, boot heap, ACPI topology, frame caches per node, the boot core's KCB,
//! IDT and local APIC, clock calibration, then the [`smp::BootDriver`] starts every other core
//! at [`smp::core_main`]. When all are online Reef prints the boot summary line and runs what
//! the command line asks for ([`cmdline`]).

#![no_std]
#![no_main]

extern crate alloc;

mod arch;
mod cmdline;
mod console;
mod ipi;
mod irq;
mod kcb;
mod machine;
mod mm;
mod multiboot;
mod rt;
mod selftest;
mod smp;
mod sync;
mod time;

use crate::arch::power::{self, ExitCode};
use crate::arch::{apic, cpu, paging};
use crate::kcb::CoreState;
use crate::machine::Machine;
use crate::multiboot::BootInfo;
use alloc::vec::Vec;
use frames::PhysRange;

/// The multiboot information, copied once at boot.
static BOOT_INFO: spin::Once<BootInfo> = spin::Once::new();

extern "C" {
    static __image_start_phys: u8;
    static __image_end_phys: u8;
}

/// Stops the boot with a message (a configuration the kernel cannot run on).
fn fatal(what: &str, err: &dyn core::fmt::Display) -> ! {
    console::print_emergency(format_args!("reef: boot failed: {what}: {err}\n"));
    power::exit(ExitCode::Panic)
}

/// Entry from `boot.S` on the boot core.
#[no_mangle]
extern "C" fn kmain_bsp(mbi_phys: u64, magic: u64, boot_tsc: u64) -> ! {
    kcb::init_early();
    time::set_boot_tsc(boot_tsc);
    console::init();
    kprintln!("reef: booting");

    let mut info = BootInfo::empty();
    if let Err(e) = info.read(magic as u32, mbi_phys) {
        fatal("multiboot information", &e);
    }
    let boot: &'static BootInfo = BOOT_INFO.call_once(|| info);
    let direct_map_end = boot.max_phys().max(4 << 30);
    let pml4 = paging::init(direct_map_end).unwrap_or_else(|e| fatal("page tables", &e));
    smp::set_kernel_pml4(pml4);
    mm::heap::init_boot_arena();
    let config = cmdline::init(boot.cmdline());
    for word in &config.unknown {
        kprintln!("reef: ignoring unknown command-line word '{word}'");
    }

    let image = PhysRange::new(
        &raw const __image_start_phys as u64,
        &raw const __image_end_phys as u64,
    );
    let machine = Machine::discover(boot, direct_map_end, image)
        .unwrap_or_else(|e| fatal("machine discovery", &e));
    if config.acpidump {
        acpidump(&machine);
    }
    apic::set_base(
        machine
            .acpi
            .madt
            .as_ref()
            .map(|m| m.local_apic_address)
            .unwrap_or(0xFEE0_0000),
    );
    mm::init(machine.node_free.clone(), machine.node_ranges.clone());

    let driver = smp::BootDriver::new();
    let bsp_apic = {
        apic::init_local();
        apic::id()
    };
    let topo = &machine.topology;
    let bsp_node = topo
        .cores
        .iter()
        .find(|c| c.apic_id == bsp_apic)
        .map(|c| c.node)
        .unwrap_or(0);
    let bsp = driver
        .create_kcb(0, bsp_node, bsp_apic)
        .unwrap_or_else(|e| fatal("boot core KCB", &e));
    // SAFETY: this is the boot core, and core 0's KCB is run by no other core.
    unsafe { bsp.adopt() };
    arch::idt::init();
    arch::idt::load();
    apic::disable_legacy_pic();
    apic::init_local();
    bsp.set_state(CoreState::Online);
    let (pm_port, pm_32) = machine.pm_timer();
    time::calibrate(pm_port, pm_32).unwrap_or_else(|e| fatal("clock calibration", &e));
    time::start_timer();
    kprintln!(
        "reef: clock: TSC {} MHz, APIC timer {} kHz (calibrated against the ACPI PM timer)",
        time::tsc_hz() / 1_000_000,
        time::apic_timer_hz() / 1000
    );

    report_topology(&machine);
    let others = topo.cores.iter().filter(|c| c.apic_id != bsp_apic);
    for (core_id, core) in (1..).zip(others) {
        let kcb = driver
            .create_kcb(core_id, core.node, core.apic_id)
            .unwrap_or_else(|e| fatal("creating a KCB", &e));
        if let Err(e) = driver.start(kcb, smp::core_main) {
            fatal("starting a core", &e);
        }
    }
    for c in online_cores() {
        let k = kcb::get(c).expect("online core has a KCB");
        kprintln!(
            "reef: core {} apic={} node={} online tsc_offset={}",
            k.core_id,
            k.apic_id,
            k.node_id,
            k.tsc_offset.load(core::sync::atomic::Ordering::Relaxed)
        );
    }

    let memory_mib = machine.node_ram.iter().sum::<u64>().div_ceil(1 << 20);
    kprintln!(
        "reef: boot ok: cores={} nodes={} memory={}MiB time={}ms",
        online_cores().len(),
        machine.node_ram.len(),
        memory_mib,
        time::now_ns() / 1_000_000
    );
    // SAFETY: IDT, local APIC and timer are set up on this core.
    unsafe { cpu::enable_interrupts() };
    if let Some(test) = &config.test {
        selftest::run(test, &driver);
    }
    if config.poweroff {
        kprintln!("reef: power off");
        let (a, b) = machine.pm1_control();
        power::acpi_poweroff(a, b, 0);
    }
    kprintln!("reef: nothing to run yet (user programs come with the user-process issue); idle. Quit QEMU with Ctrl-A X.");
    idle_loop()
}

fn report_topology(m: &Machine) {
    let t = &m.topology;
    for node in 0..m.node_ram.len() {
        let cores: Vec<u32> = t
            .cores
            .iter()
            .filter(|c| c.node == node)
            .map(|c| c.apic_id)
            .collect();
        let free: u64 = m.node_free[node].iter().map(|r| r.len()).sum();
        let distances: Vec<u8> = (0..m.node_ram.len()).map(|o| t.distance(node, o)).collect();
        kprintln!(
            "reef: node {node}: memory={}MiB free={}MiB ranges={} apic_ids={:?} distances={:?}",
            m.node_ram[node].div_ceil(1 << 20),
            free >> 20,
            m.node_free[node].len(),
            cores,
            distances
        );
    }
    if m.unassigned > 0 {
        kprintln!(
            "reef: {} KiB of RAM are in no SRAT range; given to node 0",
            m.unassigned / 1024
        );
    }
}

fn acpidump(m: &Machine) {
    kprintln!("reef: acpidump: RSDP at {:#x}", m.acpi.rsdp);
    for t in &m.acpi.tables {
        let sig = core::str::from_utf8(&t.signature).unwrap_or("????");
        kprintln!("reef: acpidump: {sig} at {:#x} length {}", t.phys, t.length);
        let base = paging::phys_to_virt(t.phys) as *const u8;
        // SAFETY: the parser read this table through the same direct map, so it is mapped.
        let bytes = unsafe { core::slice::from_raw_parts(base, t.length as usize) };
        for (i, line) in bytes.chunks(32).enumerate() {
            kprint!("reef: acpidump: {sig} {:05x}:", i * 32);
            for b in line {
                kprint!(" {b:02x}");
            }
            kprintln!();
        }
    }
}

/// Ids of the cores that are online, in order.
pub fn online_cores() -> Vec<usize> {
    (0..kcb::MAX_CORES)
        .filter(|&c| kcb::get(c).is_some_and(|k| k.state() == CoreState::Online))
        .collect()
}

/// What a core does when it has nothing else to do: run pending self-test work, and halt until
/// the next interrupt while its run queue is empty.
pub fn idle_loop() -> ! {
    let kcb = kcb::current();
    loop {
        cpu::disable_interrupts();
        if selftest::pending() {
            // SAFETY: this core's IDT and local APIC are initialized.
            unsafe { cpu::enable_interrupts() };
            selftest::run_pending();
        } else if kcb.run_queue.lock().ready.is_empty() {
            cpu::enable_and_halt();
        } else {
            // SAFETY: as above.
            unsafe { cpu::enable_interrupts() };
        }
    }
}

#[panic_handler]
fn panic(info: &core::panic::PanicInfo<'_>) -> ! {
    let core = kcb::try_current().map(|k| k.core_id as i64).unwrap_or(-1);
    match info.location() {
        Some(loc) => console::print_emergency(format_args!(
            "\nreef: panic on core {core} at {}:{}:{}: {}\n",
            loc.file(),
            loc.line(),
            loc.column(),
            info.message()
        )),
        None => console::print_emergency(format_args!(
            "\nreef: panic on core {core}: {}\n",
            info.message()
        )),
    }
    power::exit(ExitCode::Panic)
}
