//! `cargo xtask test`: host unit tests of every crate, then QEMU integration tests that boot
//! Reef in several configurations and check its serial output and exit status.
//!
//! Each QEMU test has a time limit and prints the whole serial log when it fails. Tests check
//! behaviour, never timing.

use crate::build;
use crate::deps;
use crate::qemu::{Accel, Machine};
use std::io::Read;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Time limit of one QEMU boot.
const LIMIT: Duration = Duration::from_secs(180);

/// What a QEMU run produced.
pub struct Outcome {
    /// Serial output.
    pub log: String,
    /// Exit status, or None when killed at the time limit.
    pub status: Option<i32>,
    /// Wall time from spawning QEMU to its exit.
    pub wall: Duration,
}

/// Explains a QEMU exit status (see docs/debugging.md).
pub fn describe_status(code: i32) -> &'static str {
    match code {
        0 => "clean power-off",
        3 => "kernel panic",
        5 => "CPU exception in the kernel",
        7 => "kernel self-test failed",
        9 => "ACPI power-off did not work",
        _ => "QEMU error",
    }
}

/// Boots `kernel` on `machine` with `cmdline` and collects the serial output.
pub fn boot(machine: &Machine, kernel: &std::path::Path, cmdline: &str) -> Result<Outcome, String> {
    let mut cmd = machine.command(kernel, cmdline, false);
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let start = Instant::now();
    let mut child = cmd.spawn().map_err(|e| format!("cannot start QEMU: {e}"))?;
    let log = Arc::new(Mutex::new(Vec::new()));
    let mut readers = Vec::new();
    for mut pipe in [
        Box::new(child.stdout.take().expect("piped")) as Box<dyn Read + Send>,
        Box::new(child.stderr.take().expect("piped")),
    ] {
        let log = Arc::clone(&log);
        readers.push(std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n) = pipe.read(&mut buf) {
                if n == 0 {
                    break;
                }
                log.lock().expect("log lock").extend_from_slice(&buf[..n]);
            }
        }));
    }
    let status = loop {
        if let Some(s) = child.try_wait().map_err(|e| e.to_string())? {
            break s.code();
        }
        if start.elapsed() > LIMIT {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let wall = start.elapsed();
    for r in readers {
        let _ = r.join();
    }
    let log = String::from_utf8_lossy(&log.lock().expect("log lock")).replace('\r', "");
    Ok(Outcome { log, status, wall })
}

type Check = fn(&Machine, &Outcome) -> Result<(), String>;

struct Case {
    name: &'static str,
    cores: u32,
    nodes: u32,
    memory_mib: u32,
    cmdline: &'static str,
    status: i32,
    check: Check,
}

fn expect(log: &str, needle: &str) -> Result<(), String> {
    if log.contains(needle) {
        Ok(())
    } else {
        Err(format!("expected output containing: {needle}"))
    }
}

/// The boot summary line, every core's APIC id and node, every node's memory.
fn check_boot(m: &Machine, o: &Outcome) -> Result<(), String> {
    let line = o
        .log
        .lines()
        .find(|l| l.starts_with("reef: boot ok: "))
        .ok_or("no boot summary line")?;
    let prefix = format!(
        "reef: boot ok: cores={} nodes={} memory={}MiB time=",
        m.cores, m.nodes, m.memory_mib
    );
    let ms = line
        .strip_prefix(&prefix)
        .and_then(|rest| rest.strip_suffix("ms"))
        .ok_or_else(|| format!("summary line is '{line}', expected '{prefix}<ms>ms'"))?;
    ms.parse::<u64>()
        .map_err(|_| format!("time in '{line}' is not a number"))?;
    for node in 0..m.nodes {
        for core in m.node_cores(node) {
            expect(
                &o.log,
                &format!("reef: core {core} apic={core} node={node} online"),
            )?;
        }
        let apic_ids: Vec<u32> = m.node_cores(node).collect();
        let distances: Vec<u32> = (0..m.nodes)
            .map(|o| if o == node { 10 } else { 20 })
            .collect();
        let line = format!("reef: node {node}: memory={}MiB", m.memory_mib / m.nodes);
        let found = o
            .log
            .lines()
            .find(|l| l.starts_with(&line))
            .ok_or_else(|| format!("expected a line starting with: {line}"))?;
        for part in [
            format!("apic_ids={apic_ids:?}"),
            format!("distances={distances:?}"),
        ] {
            if !found.contains(&part) {
                return Err(format!("node line '{found}' lacks {part}"));
            }
        }
    }
    if o.log
        .lines()
        .filter(|l| l.starts_with("reef: core "))
        .count()
        != m.cores as usize
    {
        return Err(format!("expected exactly {} core lines", m.cores));
    }
    Ok(())
}

/// Boot checks plus an acknowledged IPI between every ordered pair of cores, the clock relay,
/// and a clean power-off.
fn check_ipi(m: &Machine, o: &Outcome) -> Result<(), String> {
    check_boot(m, o)?;
    for from in 0..m.cores {
        for to in 0..m.cores {
            if from != to {
                expect(&o.log, &format!("reef: ipi {from}->{to} ok rtt="))?;
            }
        }
    }
    expect(
        &o.log,
        &format!("reef: ipi: {} pairs acknowledged", m.cores * (m.cores - 1)),
    )?;
    expect(&o.log, "never backwards")?;
    expect(
        &o.log,
        &format!("reef: APIC timer ticking on all {} cores", m.cores),
    )?;
    expect(&o.log, "reef: selftest ipi: passed")?;
    expect(&o.log, "reef: power off")
}

fn check_corectl(m: &Machine, o: &Outcome) -> Result<(), String> {
    check_boot(m, o)?;
    let last = m.cores - 1;
    expect(
        &o.log,
        &format!("reef: corectl: core {last} stopped (state Stopped, cached frames 0)"),
    )?;
    expect(
        &o.log,
        &format!("reef: corectl: core {last} restarted with its KCB (state Online)"),
    )?;
    expect(
        &o.log,
        &format!("reef: corectl: core {last} acknowledges IPIs again"),
    )?;
    expect(&o.log, "reef: selftest corectl: passed")
}

fn check_memory(m: &Machine, o: &Outcome) -> Result<(), String> {
    check_boot(m, o)?;
    expect(
        &o.log,
        &format!("reef: memory: frames and heap local on {} cores", m.cores),
    )?;
    expect(&o.log, "reef: selftest memory: passed")
}

fn check_fault(_: &Machine, o: &Outcome) -> Result<(), String> {
    expect(
        &o.log,
        "reef: exception: #PF page fault (vector 14) error=0x2 rip=0xffffffff8",
    )?;
    expect(&o.log, "core=0")?;
    expect(
        &o.log,
        "reef:   cr2=0xdead0000 (page not present on write in kernel mode)",
    )?;
    if o.log.contains("reef: power off") {
        return Err("powered off after the fault".into());
    }
    Ok(())
}

fn check_fault_ap(m: &Machine, o: &Outcome) -> Result<(), String> {
    expect(
        &o.log,
        "reef: exception: #UD invalid opcode (vector 6) error=0x0 rip=0xffffffff8",
    )?;
    expect(&o.log, &format!("core={}", m.cores - 1))
}

fn check_panic(_: &Machine, o: &Outcome) -> Result<(), String> {
    expect(&o.log, "reef: panic on core 0 at src/selftest.rs:")?;
    expect(&o.log, "deliberate panic (test=panic)")
}

fn check_unknown_test(_: &Machine, o: &Outcome) -> Result<(), String> {
    expect(&o.log, "reef: selftest nonsense: FAILED: no such self-test")?;
    expect(&o.log, "reef: ignoring unknown command-line word 'bogus=1'")
}

const CASES: &[Case] = &[
    Case {
        name: "boot-1c1n",
        cores: 1,
        nodes: 1,
        memory_mib: 128,
        cmdline: "test=ipi poweroff",
        status: 0,
        check: check_ipi,
    },
    Case {
        name: "boot-2c2n",
        cores: 2,
        nodes: 2,
        memory_mib: 256,
        cmdline: "test=ipi poweroff",
        status: 0,
        check: check_ipi,
    },
    Case {
        name: "boot-4c2n",
        cores: 4,
        nodes: 2,
        memory_mib: 512,
        cmdline: "test=ipi poweroff",
        status: 0,
        check: check_ipi,
    },
    Case {
        name: "memory-4c2n",
        cores: 4,
        nodes: 2,
        memory_mib: 512,
        cmdline: "test=memory poweroff",
        status: 0,
        check: check_memory,
    },
    Case {
        name: "corectl-4c2n",
        cores: 4,
        nodes: 2,
        memory_mib: 512,
        cmdline: "test=corectl poweroff",
        status: 0,
        check: check_corectl,
    },
    Case {
        name: "fault-bsp",
        cores: 2,
        nodes: 1,
        memory_mib: 128,
        cmdline: "test=fault poweroff",
        status: 5,
        check: check_fault,
    },
    Case {
        name: "fault-ap",
        cores: 2,
        nodes: 2,
        memory_mib: 256,
        cmdline: "test=fault-ap poweroff",
        status: 5,
        check: check_fault_ap,
    },
    Case {
        name: "panic",
        cores: 1,
        nodes: 1,
        memory_mib: 128,
        cmdline: "test=panic poweroff",
        status: 3,
        check: check_panic,
    },
    Case {
        name: "unknown-test",
        cores: 1,
        nodes: 1,
        memory_mib: 128,
        cmdline: "bogus=1 test=nonsense poweroff",
        status: 7,
        check: check_unknown_test,
    },
];

fn machine(c: &Case) -> Machine {
    Machine {
        cores: c.cores,
        nodes: c.nodes,
        memory_mib: c.memory_mib,
        accel: Accel::detect(),
    }
}

fn cargo() -> Command {
    let mut c = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
    c.current_dir(build::root());
    c
}

/// Unit and integration tests of every host crate, then the loom model checks of `lib/nr`
/// (built with `--cfg loom` in a target directory of their own, so the two builds do not
/// invalidate each other).
fn host_tests() -> Result<bool, String> {
    eprintln!("xtask: host tests (cargo test --workspace)");
    let unit = cargo()
        .args(["test", "--workspace", "--exclude", "nr-bench"])
        .status()
        .map_err(|e| format!("cannot run cargo: {e}"))?;
    eprintln!(
        "xtask: loom model checks (RUSTFLAGS='--cfg loom' cargo test -p nr --release --test loom)"
    );
    let loom = cargo()
        .args(["test", "-p", "nr", "--release", "--test", "loom"])
        .env("RUSTFLAGS", "--cfg loom")
        .env("CARGO_TARGET_DIR", build::root().join("target/loom"))
        .status()
        .map_err(|e| format!("cannot run cargo: {e}"))?;
    Ok(unit.success() && loom.success())
}

fn qemu_tests(filter: Option<&str>) -> Result<(usize, usize), String> {
    deps::ensure(&[deps::QEMU, deps::QBOOT, deps::OBJCOPY])?;
    let kernel = build::kernel()?;
    let (mut passed, mut failed) = (0, 0);
    for case in CASES
        .iter()
        .filter(|c| filter.is_none_or(|f| c.name.contains(f)))
    {
        let m = machine(case);
        let o = boot(&m, &kernel.image, case.cmdline)?;
        let verdict = match o.status {
            None => Err(format!("no exit within {} s", LIMIT.as_secs())),
            Some(s) if s != case.status => Err(format!(
                "exit status {s} ({}), expected {} ({})",
                describe_status(s),
                case.status,
                describe_status(case.status)
            )),
            Some(_) => (case.check)(&m, &o),
        };
        match verdict {
            Ok(()) => {
                passed += 1;
                println!(
                    "test qemu::{} ... ok ({:.1} s)",
                    case.name,
                    o.wall.as_secs_f64()
                );
            }
            Err(why) => {
                failed += 1;
                println!("test qemu::{} ... FAILED: {why}", case.name);
                println!(
                    "---- serial log of qemu::{} (QEMU {}) ----",
                    case.name,
                    m.args().join(" ")
                );
                println!("{}", o.log);
                println!("---- end of serial log ----");
            }
        }
    }
    Ok((passed, failed))
}

/// `cargo xtask test`.
pub fn main(args: &[String]) -> Result<u8, String> {
    let mut host = true;
    let mut qemu = true;
    let mut filter = None;
    for a in args {
        match a.as_str() {
            "--host-only" => qemu = false,
            "--qemu-only" => host = false,
            f if !f.starts_with('-') => filter = Some(f.to_string()),
            other => return Err(format!("unknown option '{other}'")),
        }
    }
    let host_ok = if host { host_tests()? } else { true };
    let (passed, failed) = if qemu {
        qemu_tests(filter.as_deref())?
    } else {
        (0, 0)
    };
    if qemu {
        println!("qemu: {passed} passed, {failed} failed");
    }
    if !host_ok {
        println!("xtask: host tests failed");
    }
    Ok(if host_ok && failed == 0 { 0 } else { 1 })
}

/// `cargo xtask boottime`: boots each test configuration with `poweroff` several times and
/// prints the median of the kernel's own boot time and of QEMU's wall time.
pub fn boottime(args: &[String]) -> Result<u8, String> {
    let runs: usize = match args {
        [] => 5,
        [flag, n] if flag == "--runs" => n
            .parse()
            .map_err(|_| format!("--runs: '{n}' is not a number"))?,
        _ => return Err("usage: cargo xtask boottime [--runs N]".into()),
    };
    deps::ensure(&[deps::QEMU, deps::QBOOT, deps::OBJCOPY])?;
    let kernel = build::kernel()?;
    println!(
        "| configuration | boot summary time= (median ms) | QEMU wall time (median ms) | runs |"
    );
    println!("|---|---|---|---|");
    for (cores, nodes, memory_mib) in [(1, 1, 128), (2, 2, 256), (4, 2, 512)] {
        let m = Machine {
            cores,
            nodes,
            memory_mib,
            accel: Accel::detect(),
        };
        let mut kernel_ms = Vec::new();
        let mut wall_ms = Vec::new();
        for _ in 0..runs {
            let o = boot(&m, &kernel.image, "poweroff")?;
            if o.status != Some(0) {
                return Err(format!("boot of {cores}c{nodes}n failed:\n{}", o.log));
            }
            let ms = o
                .log
                .lines()
                .find_map(|l| l.strip_prefix("reef: boot ok: "))
                .and_then(|l| l.rsplit("time=").next())
                .and_then(|t| t.strip_suffix("ms"))
                .and_then(|t| t.parse::<u64>().ok())
                .ok_or("no boot summary line")?;
            kernel_ms.push(ms);
            wall_ms.push(o.wall.as_millis() as u64);
        }
        kernel_ms.sort_unstable();
        wall_ms.sort_unstable();
        println!(
            "| {cores} cores, {nodes} nodes, {memory_mib} MiB ({:?}) | {} | {} | {runs} |",
            m.accel,
            kernel_ms[runs / 2],
            wall_ms[runs / 2]
        );
    }
    Ok(0)
}
