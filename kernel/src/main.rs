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
#![deny(unsafe_op_in_unsafe_fn)]
#![warn(clippy::undocumented_unsafe_blocks)]
#![warn(clippy::missing_docs_in_private_items)]
#![no_main]

extern crate alloc;

mod arch;
mod cmdline;
mod console;
mod corectl;
mod exec;
mod fd;
mod filemap;
mod fleet;
mod fs;
mod futex;
mod image;
mod ipi;
mod irq;
mod kcb;
mod machine;
mod mailbox;
mod mm;
mod multiboot;
mod names;
mod net;
mod proc;
mod random;
mod replicated;
mod rt;
mod selftest;
mod smp;
mod sync;
mod syscall;
mod time;
mod tty;
mod uaccess;
mod vm;

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
    for problem in &config.errors {
        kprintln!("reef: command line: {problem}");
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

    let driver = smp::BootDriver::install();
    image::init();
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
    replicated::init(machine.node_ram.len(), topo.cores.len());
    arch::idt::load();
    arch::user::init_core();
    if arch::kvm::register(&bsp.steal) {
        kprintln!(
            "reef: kvm: steal time on every core; TLB flushes of preempted vCPUs deferred to the host: {}",
            if arch::kvm::pv_tlb_flush() { "yes" } else { "no" }
        );
    }
    apic::disable_legacy_pic();
    apic::init_local();
    bsp.starts.store(1, core::sync::atomic::Ordering::Release);
    bsp.set_state(CoreState::Online);
    let (pm_port, pm_32) = machine.pm_timer();
    time::calibrate(pm_port, pm_32).unwrap_or_else(|e| fatal("clock calibration", &e));
    time::init_realtime();
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
        if let Err(e) = driver.start(kcb) {
            fatal("starting a core", &e);
        }
    }
    for c in kcb::online_cores() {
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
        kcb::online_cores().len(),
        machine.node_ram.len(),
        memory_mib,
        time::now_ns() / 1_000_000
    );
    // SAFETY: IDT, local APIC and timer are set up on this core.
    unsafe { cpu::enable_interrupts() };
    if let Some(test) = &config.test {
        selftest::run(test, driver);
    }
    let (a, b) = machine.pm1_control();
    PM1_CONTROL.call_once(|| (a, b));
    if config.poweroff {
        kprintln!("reef: power off");
        power::acpi_poweroff(a, b, 0);
    }
    start_init(boot, &machine, config);
    proc::idle_loop()
}

/// The ACPI power-off ports, for when init exits.
static PM1_CONTROL: spin::Once<(u16, u16)> = spin::Once::new();
/// Free memory when init started, in bytes.
static FREE_BEFORE_INIT: core::sync::atomic::AtomicU64 = core::sync::atomic::AtomicU64::new(0);

/// Unpacks the initramfs into NR-FS and starts the first process.
fn start_init(boot: &BootInfo, machine: &Machine, config: &cmdline::Config) {
    let (smep, smap) = arch::user::protection();
    kprintln!(
        "reef: user mode: SMEP {}, SMAP {}",
        on_off(smep),
        on_off(smap)
    );
    if let Err(e) = fs::init(machine.node_ram.len(), machine.topology.cores.len()) {
        fatal("creating the root file system", &e);
    }
    if let Err(e) = names::init() {
        fatal("creating the name directory", &e);
    }
    net::nic::init();
    match boot.modules().first() {
        Some(m) => {
            let archive = paging::phys_slice(m.start, m.end - m.start);
            match fs::unpack_initramfs(archive) {
                Ok(u) => kprintln!(
                    "reef: initramfs: {} KiB, {} files ({} KiB), {} directories, {} links",
                    (m.end - m.start) / 1024,
                    u.files,
                    u.bytes / 1024,
                    u.dirs,
                    u.links
                ),
                Err(e) => kprintln!("reef: initramfs is damaged: {e}"),
            }
        }
        None => {
            kprintln!("reef: no initramfs was passed (QEMU -initrd); the root file system is empty")
        }
    }
    if let Err(e) = fs::dev::populate() {
        kprintln!("reef: cannot create the /dev entries: {e}");
    }
    if let Err(e) = fs::cover_generated() {
        kprintln!("reef: cannot mark /proc and /sys in NR-FS: {e}");
    }
    if let Err(e) = fs::trust_exe(fleet::MANAGER_PATH) {
        kprintln!("reef: no fleet manager ({e}): nobody can bind cores or register fleet/ names");
    }
    let mut argv: Vec<alloc::string::String> = config
        .init
        .clone()
        .unwrap_or_else(|| alloc::vec![cmdline::DEFAULT_INIT.into()]);
    if let Some(list) = &config.hare_root {
        // Hare as the root (issue 13): the launcher starts the servers, mounts Hare over `/`
        // with the initramfs's files and executes init there.
        argv.splice(0..0, [fs::hare::ROOT_LAUNCHER.into(), list.clone()]);
    }
    if config.init.is_none() {
        greet(machine);
    }
    // With every NR-FS replica holding the initramfs, as at power-off (`final_report`).
    fs::sync_all();
    FREE_BEFORE_INIT.store(mm::free_bytes(), core::sync::atomic::Ordering::Relaxed);
    if let Err(e) = proc::spawn_init(&argv) {
        kprintln!("reef: cannot start init '{}': {e}", argv[0]);
        init_exited(127 << 8);
    }
}

/// The greeting before the default shell starts.
fn greet(machine: &Machine) {
    kprintln!();
    kprintln!("Welcome to Reef, a research kernel for manycore x86-64 machines.");
    kprintln!(
        "This is busybox sh on NR-FS, a file system replicated on each of the {} NUMA node(s)",
        machine.node_ram.len()
    );
    kprintln!("(NrOS node replication); try: ls /proc, cat /proc/reef/nrfs, ls /test.");
    kprintln!("To power off: type 'exit' (or 'poweroff -f'); to leave QEMU at once: Ctrl-A X.");
    kprintln!();
}

/// "on", or "off" with the reason, for the boot report of a CPU protection feature.
fn on_off(b: bool) -> &'static str {
    if b {
        "on"
    } else {
        "off (the CPU lacks it)"
    }
}

/// Init (process 1) ended with wait status `wstatus`: report and power off.
pub fn init_exited(wstatus: i32) -> ! {
    let (n, killed) = if wstatus & 0x7f == 0 {
        (((wstatus >> 8) & 0xff) as u32, None)
    } else {
        let sig = (wstatus & 0x7f) as u32;
        (128 + sig, Some(sig))
    };
    match killed {
        Some(sig) => kprintln!(
            "reef: init exited with status {n} (killed by {})",
            proc::signal::name(sig)
        ),
        None => kprintln!("reef: init exited with status {n}"),
    }
    final_report();
    if n == 0 {
        let (a, b) = PM1_CONTROL.get().copied().unwrap_or((0, 0));
        power::acpi_poweroff(a, b, 0);
    }
    power::exit_init_status(n)
}

/// `reboot(LINUX_REBOOT_CMD_POWER_OFF)` (or HALT, RESTART) by process `pid`: report and power
/// off (QEMU exits with status 0).
pub fn power_off_by(pid: u32) -> ! {
    kprintln!("reef: power off requested by process {pid}");
    final_report();
    let (a, b) = PM1_CONTROL.get().copied().unwrap_or((0, 0));
    power::acpi_poweroff(a, b, 0)
}

/// The lines printed before power-off once user programs ran: unimplemented system calls
/// and free memory.
fn final_report() {
    fs::sync_all();
    kprintln!(
        "reef: unimplemented syscalls:{}",
        syscall::unimplemented_report()
    );
    kprintln!(
        "reef: free memory: before init {} KiB, at power-off {} KiB",
        FREE_BEFORE_INIT.load(core::sync::atomic::Ordering::Relaxed) / 1024,
        mm::free_bytes() / 1024
    );
}

/// Prints each node's memory, free ranges, APIC ids and distances, and the RAM no SRAT range
/// covers.
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

/// Prints the RSDP address and a hex dump of every ACPI table (`acpidump` on the command line).
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

/// Reports the panic (core, location, message) on the console and exits with
/// [`ExitCode::Panic`].
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
    let mut chain = [0u64; 24];
    let n = arch::cpu::backtrace(&mut chain);
    console::print_emergency(format_args!("reef:   backtrace:"));
    for ret in &chain[..n] {
        console::print_emergency(format_args!(" {ret:#x}"));
    }
    console::print_emergency(format_args!("\n"));
    power::exit(ExitCode::Panic)
}
