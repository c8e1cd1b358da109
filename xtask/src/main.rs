//! `cargo xtask`: Reef's build tool.
//!
//! - `cargo xtask run [--cores N] [--nodes M] [--memory MIB] [--accel tcg|kvm] [--gdb]
//!   [-- WORD...]` builds Reef and the initramfs and boots them in QEMU; each WORD becomes one
//!   word of the kernel command line (quoted when needed, see `cmdline`).
//! - `cargo xtask test [--host-only|--linux-only|--qemu-only] [FILTER]` runs the host tests of
//!   every crate, the user test programs natively on Linux, and the QEMU integration tests.
//! - `cargo xtask boottime [--runs N]` measures boot time in the test configurations.
//! - `cargo xtask initramfs [--list]` builds the user programs and `out/initramfs.cpio`.
//! - `cargo xtask bench [--quick] [--runs N] [--out DIR] [NAME...]` measures Reef against
//!   Linux 6.1 on the same QEMU machine (and the node replication library on the host) and
//!   writes CSV, plots and a summary.
//! - `cargo xtask fuzz [--calls N] [--seed S] [--cores C --nodes M] [--memory MIB] ...` boots
//!   Reef with the random-system-call fuzzer as init and fails on a kernel panic, fault or hang
//!   (see `fuzz`).
//! - `cargo xtask profile [--cores N] ... [-- WORD...]` boots Reef and samples every vCPU's
//!   instruction pointer through QEMU's monitor, naming kernel functions (see `profile`).
//!
//! Missing system packages (QEMU, binutils, musl-tools, busybox-static) are installed with
//! apt-get, saying what is installed.

mod bench;
mod build;
mod cmdline;
mod cpio;
mod debian;
mod deps;
mod fuzz;
mod linux;
mod monitor;
mod nettest;
mod profile;
mod qemu;
mod tests;
mod usr;
mod variant;
mod zip;

use qemu::{Accel, Console, Machine};
use std::process::ExitCode;

const USAGE: &str = "usage:
  cargo xtask run [--cores N] [--nodes M] [--memory MIB] [--accel tcg|kvm] [--gdb]
                  [--forward HOSTPORT:[GUESTADDR:]GUESTPORT]... [--nics N] [--pcap FILE]
                  [-- WORD...]
  cargo xtask test [--host-only | --linux-only | --qemu-only] [FILTER]
  cargo xtask boottime [--runs N]
  cargo xtask initramfs [--list]
  cargo xtask bench [--quick] [--runs N] [--out DIR] [NAME...]
  cargo xtask fuzz [--calls N] [--seed S] [--cores C] [--nodes M] [--memory MIB]
                   [--accel tcg|kvm] [--workers W] [--trace] [--hang SECS] [--limit SECS]
  cargo xtask profile [--cores N] [--nodes M] [--memory MIB] [--accel tcg|kvm] [--skip SECS]
                      [--interval MS] [--top N] [-- WORD...]

defaults: --cores 4 --nodes 2 --memory 1024 --nics 1 (profile: --cores 1 --nodes 1),
accelerator: KVM where real hardware virtualization exists, else TCG.
run: the guest is 10.0.2.15 on QEMU user networking; --nics N adds N - 1 NICs for library
mode on the same network (`netctl direct PID` gives one to a program, with an address of its
own from 10.0.2.16 up, which --forward HOSTPORT:10.0.2.16:PORT reaches).
run: each WORD is one kernel command-line word, e.g.
  cargo xtask run -- init=/bin/busybox sh -c 'echo a; echo b'";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("run") => run(&args[1..]),
        Some("test") => tests::main(&args[1..]),
        Some("boottime") => tests::boottime(&args[1..]),
        Some("initramfs") => usr::main(&args[1..]),
        Some("bench") => bench::main(&args[1..]),
        Some("fuzz") => fuzz::main(&args[1..]),
        Some("profile") => profile::main(&args[1..]),
        Some("-h" | "--help" | "help") => {
            println!("{USAGE}");
            Ok(0)
        }
        _ => Err(format!("unknown or missing command\n{USAGE}")),
    };
    match result {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            eprintln!("xtask: error: {e}");
            ExitCode::from(2)
        }
    }
}

fn number(flag: &str, value: Option<&String>) -> Result<u32, String> {
    let v = value.ok_or_else(|| format!("{flag} needs a value"))?;
    v.parse()
        .map_err(|_| format!("{flag}: '{v}' is not a number"))
}

/// Parses machine options; returns the machine, whether `--gdb` was given, and the words after
/// `--`.
fn parse_run(args: &[String]) -> Result<(Machine, bool, Vec<String>), String> {
    let m = Machine {
        cores: 4,
        nodes: 2,
        memory_mib: 1024,
        accel: Accel::detect(),
        forwards: Vec::new(),
        nics: 1,
        pcap: None,
    };
    parse_machine(args, m)
}

/// [`parse_run`] starting from the machine `m` (the command's defaults).
fn parse_machine(args: &[String], mut m: Machine) -> Result<(Machine, bool, Vec<String>), String> {
    let mut gdb = false;
    let mut i = 0;
    while i < args.len() {
        match args[i].as_str() {
            "--cores" => {
                m.cores = number("--cores", args.get(i + 1))?;
                i += 1;
            }
            "--nodes" => {
                m.nodes = number("--nodes", args.get(i + 1))?;
                i += 1;
            }
            "--memory" => {
                m.memory_mib = number("--memory", args.get(i + 1))?;
                i += 1;
            }
            "--nics" => {
                m.nics = number("--nics", args.get(i + 1))?;
                i += 1;
            }
            "--accel" => {
                m.accel = match args.get(i + 1).map(String::as_str) {
                    Some("tcg") => Accel::Tcg,
                    Some("kvm") => Accel::Kvm,
                    other => return Err(format!("--accel must be tcg or kvm, not {other:?}")),
                };
                i += 1;
            }
            "--gdb" => gdb = true,
            "--pcap" => {
                let v = args.get(i + 1).ok_or("--pcap needs a file name")?;
                m.pcap = Some(v.into());
                i += 1;
            }
            "--forward" => {
                let v = args
                    .get(i + 1)
                    .ok_or("--forward needs HOSTPORT:GUESTPORT")?;
                m.forwards.push(parse_forward(v)?);
                i += 1;
            }
            "--" => return Ok((m, gdb, args[i + 1..].to_vec())),
            other => return Err(format!("unknown option '{other}'\n{USAGE}")),
        }
        i += 1;
    }
    Ok((m, gdb, Vec::new()))
}

/// `HOSTPORT:GUESTPORT` of `--forward`.
fn parse_forward(v: &str) -> Result<qemu::Forward, String> {
    let bad = || format!("--forward: '{v}' is not HOSTPORT:[GUESTADDR:]GUESTPORT (ports 1-65535)");
    let (h, rest) = v.split_once(':').ok_or_else(bad)?;
    let (addr, g) = match rest.split_once(':') {
        Some((a, g)) => (Some(a.parse().map_err(|_| bad())?), g),
        None => (None, rest),
    };
    let port = |p: &str| p.parse::<u16>().ok().filter(|&p| p != 0).ok_or_else(bad);
    Ok(qemu::Forward {
        host: port(h)?,
        addr,
        guest: port(g)?,
    })
}

fn run(args: &[String]) -> Result<u8, String> {
    let (machine, gdb, words) = parse_run(args)?;
    machine.validate()?;
    let line = cmdline::join(&words)?;
    deps::ensure(&[deps::QEMU, deps::QBOOT, deps::OBJCOPY])?;
    let kernel = build::kernel()?;
    let initrd = debian::initramfs()?;
    let mut cmd = machine.command(&kernel.image, &initrd, &line, Console::Terminal);
    if gdb {
        cmd.args(["-s", "-S"]);
        eprintln!("xtask: QEMU waits for a debugger on localhost:1234. In another terminal:");
        eprintln!(
            "  gdb {} -ex 'target remote localhost:1234' -ex 'break kmain_bsp' -ex continue",
            kernel.elf.display()
        );
    }
    eprintln!(
        "xtask: booting Reef: {} cores, {} nodes, {} MiB, {:?} (quit: Ctrl-A X)",
        machine.cores, machine.nodes, machine.memory_mib, machine.accel
    );
    eprintln!("xtask: network: the guest is 10.0.2.15 on QEMU user networking (gateway 10.0.2.2)");
    for f in &machine.forwards {
        let addr = f.addr.map_or("10.0.2.15".into(), |a| a.to_string());
        eprintln!(
            "xtask: 127.0.0.1:{} on this host reaches the guest's {addr}:{}",
            f.host, f.guest
        );
    }
    if machine.nics > 1 {
        eprintln!(
            "xtask: {} more NICs for library mode (netctl direct PID)",
            machine.nics - 1
        );
    }
    let status = cmd
        .status()
        .map_err(|e| format!("cannot start QEMU: {e}"))?;
    let code = status.code().unwrap_or(1);
    if code != 0 {
        eprintln!(
            "xtask: QEMU exited with status {code} ({})",
            tests::describe_status(code)
        );
    }
    Ok(code.clamp(0, 255) as u8)
}
