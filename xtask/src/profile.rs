//! `cargo xtask profile`: where Reef's vCPUs spend their time, by sampling guest instruction
//! pointers through QEMU's monitor.
//!
//! ```text
//! cargo xtask profile [--cores N] [--nodes M] [--memory MIB] [--accel tcg|kvm]
//!                     [--skip SECS] [--interval MS] [--top N] [--by inner|outer]
//!                     [--user ELF] [--callers NAME,...] [-- WORD...]
//! ```
//!
//! Boots Reef like `run` (serial output to `out/profile/serial.log`), waits `--skip` seconds
//! (default 3: the boot), then every `--interval` milliseconds (default 20) stops the machine,
//! reads every vCPU's `RIP` (monitor command `info registers -a`) and continues, until the guest
//! powers off. Kernel addresses are named with `addr2line` on the kernel ELF (the innermost
//! function, inlined ones included); user addresses are counted as `[user]`, or with `--user ELF`
//! named with that program's symbols (programs under `out/usr/` are built with `-g`), each
//! prefixed by its address space (`[user N]`: the Nth most sampled `CR3`), since two static
//! programs share their addresses and only the names tell which space runs `ELF`. Samples in the leaf routines of [`LEAVES`] (`memset`, `memcpy`,
//! ...) are charged to their caller too, read from the word at the stack pointer (they push
//! nothing). Prints the `--top` functions (default 30) with their share of the samples, per
//! vCPU and in all: by default the innermost function inlined at each address (`--by inner`),
//! or with `--by outer` the function the code was compiled into, so that small helpers inlined
//! in many places are charged to the routine that runs them. `--callers` names functions (by a
//! part of their name: `IrqMutex`) whose kernel samples are shown with their caller, read from
//! the frame the sampled function made (the kernel keeps frame pointers: the word after the
//! one at `RBP`); a sample taken before the function made its frame shows its caller's caller.
//!
//! QEMU 7.2 has no `-perfmap`, so host `perf` cannot name guest code (docs/results.md); this
//! is the stand-in. Stopping the machine for each sample perturbs timing; the numbers are shares
//! of samples, not times.

use crate::qemu::Machine;
use crate::{build, cmdline, deps, usr};
use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Kernel routines that call nothing and push nothing, so the word at RSP is their return
/// address: their samples are shown with their caller.
const LEAVES: &[&str] = &["memset", "memcpy", "memmove", "memcmp", "user_copy"];

/// One vCPU's state at a sample.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Sample {
    rip: u64,
    /// The word at RSP, for kernel samples.
    top: Option<u64>,
    /// The return address in the frame at RBP, for kernel samples.
    frame: Option<u64>,
    /// The address space (`CR3`), for user samples.
    space: u64,
}

/// Which function of an address's inlined chain names a sample.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum By {
    /// The innermost function inlined there.
    Inner,
    /// The function the code was compiled into.
    Outer,
}

/// Options of `cargo xtask profile`.
struct Options {
    machine: Machine,
    skip: Duration,
    interval: Duration,
    top: usize,
    by: By,
    /// The program whose symbols name user addresses.
    user: Option<std::path::PathBuf>,
    /// Parts of the names of functions shown with their callers.
    callers: Vec<String>,
    words: Vec<String>,
}

fn parse(args: &[String]) -> Result<Options, String> {
    let mut rest = Vec::new();
    let mut o = Options {
        machine: Machine {
            cores: 1,
            nodes: 1,
            memory_mib: 1024,
            accel: crate::qemu::Accel::detect(),
            forwards: Vec::new(),
            nics: 1,
            pcap: None,
        },
        skip: Duration::from_secs(3),
        interval: Duration::from_millis(20),
        top: 30,
        by: By::Inner,
        user: None,
        callers: Vec::new(),
        words: Vec::new(),
    };
    let mut i = 0;
    while i < args.len() {
        let value = || crate::number(&args[i], args.get(i + 1));
        match args[i].as_str() {
            "--skip" => o.skip = Duration::from_secs(value()?.into()),
            "--interval" => o.interval = Duration::from_millis(value()?.max(1).into()),
            "--top" => o.top = value()? as usize,
            "--by" => {
                o.by = match args.get(i + 1).map(String::as_str) {
                    Some("inner") => By::Inner,
                    Some("outer") => By::Outer,
                    _ => return Err("profile: --by takes inner or outer".into()),
                }
            }
            "--user" => {
                let elf = args
                    .get(i + 1)
                    .ok_or("profile: --user takes a program's ELF")?;
                o.user = Some(elf.into());
            }
            "--callers" => {
                let names = args
                    .get(i + 1)
                    .ok_or("profile: --callers takes names, comma-separated")?;
                o.callers = names.split(',').map(str::to_string).collect();
            }
            "--" => {
                rest.extend_from_slice(&args[i..]);
                break;
            }
            _ => {
                rest.push(args[i].clone());
                i += 1;
                continue;
            }
        }
        i += 2;
    }
    let (machine, gdb, words) = crate::parse_machine(&rest, o.machine.clone())?;
    if gdb {
        return Err("profile: --gdb does not combine with sampling".into());
    }
    o.machine = machine;
    o.words = words;
    Ok(o)
}

/// Runs `cargo xtask profile`.
pub fn main(args: &[String]) -> Result<u8, String> {
    let o = parse(args)?;
    o.machine.validate()?;
    let line = cmdline::join(&o.words)?;
    deps::ensure(&[deps::QEMU, deps::QBOOT, deps::OBJCOPY])?;
    let kernel = build::kernel()?;
    let initrd = usr::initramfs()?;
    let dir = Path::new("out/profile");
    std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let socket = dir.join("monitor.sock");
    let serial = dir.join("serial.log");
    let _ = std::fs::remove_file(&socket);
    let mut cmd = Command::new("qemu-system-x86_64");
    cmd.args(o.machine.args())
        .arg("-kernel")
        .arg(&kernel.image)
        .arg("-initrd")
        .arg(&initrd)
        .arg("-append")
        .arg(&line)
        .arg("-serial")
        .arg(format!("file:{}", serial.display()))
        .arg("-monitor")
        .arg(format!("unix:{},server,nowait", socket.display()))
        .stdin(Stdio::null());
    eprintln!(
        "xtask: profiling Reef: {} cores, {} nodes, {:?}; serial output in {}",
        o.machine.cores,
        o.machine.nodes,
        o.machine.accel,
        serial.display()
    );
    let mut qemu = cmd.spawn().map_err(|e| format!("cannot start QEMU: {e}"))?;
    let mut monitor = connect(&socket)?;
    std::thread::sleep(o.skip);
    let mut samples: Vec<Vec<Sample>> = vec![Vec::new(); o.machine.cores as usize];
    let started = Instant::now();
    loop {
        if qemu.try_wait().map_err(|e| e.to_string())?.is_some() {
            break;
        }
        let Ok(taken) = sample(&mut monitor) else {
            break;
        };
        for (cpu, s) in taken {
            if let Some(list) = samples.get_mut(cpu) {
                list.push(s);
            }
        }
        std::thread::sleep(o.interval);
    }
    let status = qemu.wait().map_err(|e| e.to_string())?;
    let total: usize = samples.iter().map(Vec::len).sum();
    eprintln!(
        "xtask: {total} samples over {:.1} s; QEMU exited with {status}",
        started.elapsed().as_secs_f64()
    );
    let addresses = samples
        .iter()
        .flatten()
        .flat_map(|s| [Some(s.rip), s.top, s.frame])
        .flatten();
    let mut names = name_addresses(
        &kernel.elf,
        addresses.clone().filter(|&a| kernel_address(a)),
    )?;
    if let Some(elf) = &o.user {
        names.extend(name_addresses(
            elf,
            addresses.filter(|&a| !kernel_address(a)),
        )?);
    }
    let spaces = rank_spaces(samples.iter().flatten());
    let named = Names {
        names,
        spaces,
        by: o.by,
        callers: o.callers,
    };
    for (cpu, s) in samples.iter().enumerate() {
        report(&format!("vCPU {cpu}"), s, &named, o.top);
    }
    if samples.len() > 1 {
        let all: Vec<Sample> = samples.concat();
        report("all vCPUs", &all, &named, o.top);
    }
    Ok(0)
}

/// Connects to the monitor socket (QEMU creates it shortly after starting) and reads its banner.
fn connect(socket: &Path) -> Result<BufReader<UnixStream>, String> {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        match UnixStream::connect(socket) {
            Ok(s) => {
                s.set_read_timeout(Some(Duration::from_secs(5)))
                    .map_err(|e| e.to_string())?;
                let mut r = BufReader::new(s);
                read_prompt(&mut r)?;
                return Ok(r);
            }
            Err(_) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(50)),
            Err(e) => return Err(format!("cannot reach QEMU's monitor: {e}")),
        }
    }
}

/// Reads monitor output up to and including the next `(qemu) ` prompt.
fn read_prompt(r: &mut BufReader<UnixStream>) -> Result<String, String> {
    let mut out = Vec::new();
    let mut byte = [0u8; 1];
    while !out.ends_with(b"(qemu) ") {
        match r.read(&mut byte) {
            Ok(0) => return Err("monitor closed".into()),
            Ok(_) => out.push(byte[0]),
            Err(e) => return Err(format!("monitor: {e}")),
        }
    }
    Ok(String::from_utf8_lossy(&out).into_owned())
}

fn command(r: &mut BufReader<UnixStream>, cmd: &str) -> Result<String, String> {
    r.get_mut()
        .write_all(format!("{cmd}\n").as_bytes())
        .map_err(|e| format!("monitor: {e}"))?;
    read_prompt(r)
}

/// One sample: every vCPU's RIP (and, in the kernel, the word at its RSP), with the machine
/// stopped while they are read.
fn sample(r: &mut BufReader<UnixStream>) -> Result<Vec<(usize, Sample)>, String> {
    command(r, "stop")?;
    let taken = read_vcpus(r);
    command(r, "cont")?;
    taken
}

fn read_vcpus(r: &mut BufReader<UnixStream>) -> Result<Vec<(usize, Sample)>, String> {
    let regs = parse_registers(&command(r, "info registers -a")?);
    let mut out = Vec::new();
    for Registers {
        cpu,
        rip,
        rsp,
        rbp,
        cr3,
    } in regs
    {
        let (mut top, mut frame) = (None, None);
        if kernel_address(rip) {
            command(r, &format!("cpu {cpu}"))?;
            top = parse_word(&command(r, &format!("x /1gx {rsp:#x}"))?);
            if kernel_address(rbp) {
                frame = parse_word(&command(r, &format!("x /1gx {:#x}", rbp + 8))?);
            }
        }
        let space = if kernel_address(rip) { 0 } else { cr3 };
        out.push((
            cpu,
            Sample {
                rip,
                top,
                frame,
                space,
            },
        ));
    }
    Ok(out)
}

/// The value of a register field `NAME=hex` in `line`.
fn field(line: &str, name: &str) -> Option<u64> {
    let at = line.find(name)?;
    let hex: String = line[at + name.len()..]
        .chars()
        .take_while(char::is_ascii_hexdigit)
        .collect();
    u64::from_str_radix(&hex, 16).ok()
}

/// What a sample reads of one vCPU.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Registers {
    cpu: usize,
    rip: u64,
    rsp: u64,
    rbp: u64,
    cr3: u64,
}

/// The registers of every vCPU in `info registers -a` output: a `CPU#N` line starts each
/// vCPU's registers, its `RBP=`, `RSP=` and `RIP=` fields follow, then `CR3=`.
fn parse_registers(text: &str) -> Vec<Registers> {
    let mut out: Vec<Registers> = Vec::new();
    let mut cpu = 0;
    let mut rsp = 0;
    let mut rbp = 0;
    for line in text.lines() {
        if let Some(n) = line.trim().strip_prefix("CPU#") {
            cpu = n
                .split(|c: char| !c.is_ascii_digit())
                .next()
                .and_then(|d| d.parse().ok())
                .unwrap_or(cpu);
        }
        if let Some(v) = field(line, "RSP=") {
            rsp = v;
        }
        if let Some(v) = field(line, "RBP=") {
            rbp = v;
        }
        if let Some(rip) = field(line, "RIP=") {
            out.push(Registers {
                cpu,
                rip,
                rsp,
                rbp,
                cr3: 0,
            });
        }
        if let (Some(cr3), Some(last)) = (field(line, "CR3="), out.last_mut()) {
            last.cr3 = cr3;
        }
    }
    out
}

/// The word of an `x /1gx` answer (`ffff...: 0x0123...`).
fn parse_word(text: &str) -> Option<u64> {
    let line = text.lines().find(|l| l.contains(": 0x"))?;
    let hex = line.rsplit("0x").next()?.trim();
    u64::from_str_radix(hex, 16).ok()
}

/// Whether `rip` is in the kernel half.
fn kernel_address(rip: u64) -> bool {
    rip >= 0xffff_8000_0000_0000
}

/// Names every distinct address of `elf` with `addr2line -f -i -C`: the chain of functions
/// inlined at it, innermost first (the last is the function the code is in).
fn name_addresses(
    elf: &Path,
    addresses: impl Iterator<Item = u64>,
) -> Result<HashMap<u64, Vec<String>>, String> {
    let mut unique: Vec<u64> = addresses.collect();
    unique.sort_unstable();
    unique.dedup();
    let mut names = HashMap::new();
    if unique.is_empty() {
        return Ok(names);
    }
    let mut child = Command::new("addr2line")
        .args(["-a", "-f", "-i", "-C", "-e"])
        .arg(elf)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot run addr2line: {e}"))?;
    let input: String = unique.iter().map(|a| format!("{a:#x}\n")).collect();
    let mut stdin = child.stdin.take().expect("piped");
    let writer = std::thread::spawn(move || stdin.write_all(input.as_bytes()));
    let stdout = BufReader::new(child.stdout.take().expect("piped"));
    // Output per address: the address line (`0x...`), then pairs of function and file lines
    // for the inlined chain, innermost first.
    let mut current: Option<u64> = None;
    let mut expect_function = false;
    for line in stdout.lines() {
        let line = line.map_err(|e| e.to_string())?;
        if let Some(hex) = line.strip_prefix("0x") {
            current = u64::from_str_radix(hex, 16).ok();
            expect_function = true;
        } else if expect_function {
            if let (Some(a), false) = (current, line.starts_with("??")) {
                names.entry(a).or_insert_with(Vec::new).push(short(&line));
            }
            expect_function = false;
        } else {
            expect_function = true;
        }
    }
    writer
        .join()
        .map_err(|_| "addr2line writer panicked".to_string())?
        .map_err(|e| format!("addr2line: {e}"))?;
    child.wait().map_err(|e| e.to_string())?;
    Ok(names)
}

/// A function name without its hash suffix and generic arguments' noise.
fn short(name: &str) -> String {
    let name = name.trim();
    match name.rfind("::h") {
        Some(at) if name[at + 3..].chars().all(|c| c.is_ascii_hexdigit()) => name[..at].into(),
        _ => name.into(),
    }
}

/// The user address spaces, most sampled first.
fn rank_spaces<'a>(samples: impl Iterator<Item = &'a Sample>) -> Vec<u64> {
    let mut counts: HashMap<u64, usize> = HashMap::new();
    for s in samples.filter(|s| !kernel_address(s.rip)) {
        *counts.entry(s.space).or_default() += 1;
    }
    let mut spaces: Vec<(u64, usize)> = counts.into_iter().collect();
    spaces.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    spaces.into_iter().map(|(space, _)| space).collect()
}

/// What names a sample: the addresses' inlined chains, the user address spaces' ranks.
struct Names {
    names: HashMap<u64, Vec<String>>,
    spaces: Vec<u64>,
    by: By,
    /// Parts of the names of functions shown with their callers (`--callers`).
    callers: Vec<String>,
}

impl Names {
    /// The function at `a` that `by` picks.
    fn function(&self, a: u64) -> Option<&str> {
        let chain = self.names.get(&a);
        match self.by {
            By::Inner => chain.and_then(|c| c.first()),
            By::Outer => chain.and_then(|c| c.last()),
        }
        .map(String::as_str)
    }

    /// The call site `a`: the function it is in, then (in brackets) the functions inlined
    /// there.
    fn caller(&self, a: u64) -> String {
        match self.names.get(&a).map(Vec::as_slice) {
            Some([inlined @ .., outer]) if !inlined.is_empty() => {
                let chain: Vec<&str> = inlined.iter().rev().map(String::as_str).collect();
                format!("{outer} [{}]", chain.join(" > "))
            }
            Some([outer]) => outer.clone(),
            _ => "[kernel, unnamed]".to_string(),
        }
    }

    /// The row a sample is counted in.
    fn of(&self, s: &Sample) -> String {
        if !kernel_address(s.rip) {
            let rank = self.spaces.iter().position(|&c| c == s.space).unwrap_or(0);
            return match self.function(s.rip) {
                Some(f) => format!("[user {rank}] {f}"),
                None => format!("[user {rank}]"),
            };
        }
        let name = self.function(s.rip).unwrap_or("[kernel, unnamed]");
        let traced = self.callers.iter().any(|c| name.contains(c.as_str()));
        match s
            .top
            .filter(|&t| kernel_address(t) && LEAVES.contains(&name))
            .or(s.frame.filter(|&f| traced && kernel_address(f)))
        {
            Some(caller) => format!("{name} <- {}", self.caller(caller)),
            None => name.to_string(),
        }
    }
}

fn report(title: &str, samples: &[Sample], names: &Names, top: usize) {
    if samples.is_empty() {
        return;
    }
    let mut counts: HashMap<String, usize> = HashMap::new();
    for s in samples {
        *counts.entry(names.of(s)).or_default() += 1;
    }
    let mut rows: Vec<(String, usize)> = counts.into_iter().collect();
    rows.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    println!("\n{title}: {} samples", samples.len());
    for (name, n) in rows.into_iter().take(top) {
        let name = name.as_str();
        println!(
            "{:6.1}% {:6}  {name}",
            100.0 * n as f64 / samples.len() as f64,
            n
        );
    }
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn registers_of_every_cpu() {
        let text = "CPU#0\nRAX=0000000000000000 RBX=1\nRSI=0 RDI=0 RBP=ffff800000123480 \
                    RSP=ffff800000123450\n\
                    RIP=ffffffff80012345 RFL=00000046\nCR0=80050033 CR2=0 CR3=0000000000abc000\n\
                    CPU#1 (halted)\nRBP=0 RSP=00007ffffffff000\nRIP=0000000000401000 RFL=00000202\n\
                    CR0=80050033 CR2=0000000000000000 CR3=0000000000def000 CR4=00000020\n(qemu) ";
        let regs = |cpu, rip, (rsp, rbp), cr3| Registers {
            cpu,
            rip,
            rsp,
            rbp,
            cr3,
        };
        assert_eq!(
            parse_registers(text),
            vec![
                regs(
                    0,
                    0xffff_ffff_8001_2345,
                    (0xffff_8000_0012_3450, 0xffff_8000_0012_3480),
                    0xab_c000
                ),
                regs(1, 0x40_1000, (0x7fff_ffff_f000, 0), 0xde_f000)
            ]
        );
        assert_eq!(
            parse_word("ffff800000123450: 0xffffffff80001234\r\n(qemu) "),
            Some(0xffff_ffff_8000_1234)
        );
    }

    #[test]
    fn names_lose_their_hash() {
        assert_eq!(
            short("reef::vm::VSpace::fork::h0123456789abcdef"),
            "reef::vm::VSpace::fork"
        );
        assert_eq!(short("memcpy"), "memcpy");
    }
}
