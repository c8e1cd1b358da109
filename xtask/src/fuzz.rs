//! `cargo xtask fuzz`: boots Reef with the random-system-call fuzzer (`usr/fuzz.c`) as init and
//! watches it.
//!
//! ```text
//! cargo xtask fuzz [--calls N] [--seed S] [--cores C] [--nodes M] [--memory MIB]
//!                  [--accel tcg|kvm] [--workers W] [--no-trace | --trace-log] [--hang SECS]
//!                  [--limit SECS]
//! ```
//!
//! The kernel command line is `init=/test/fuzz --calls N --seed S [--workers W] --trace`. The
//! serial log streams to `out/fuzz/<seed>.log` and, but for the per-call lines, to the terminal.
//! The run fails, with exit status 1, when
//!
//! - the kernel panics or takes a CPU exception in kernel mode (QEMU status 3 or 5),
//! - the fuzzer's heartbeat (`fuzz: hb`, every second) stops for `--hang` seconds (default
//!   60): a hang; the registers of every vCPU are read from QEMU's monitor first and each RIP
//!   is turned into a kernel function and line with addr2line, and an NMI makes the kernel
//!   print every core's scheduler state (`reef: nmi:` lines: run queues, timed wake-ups),
//! - the whole run takes longer than `--limit` seconds (default: 300 plus one second per 50
//!   calls),
//! - init exits with another status than 0 (the fuzzer's own `fuzz: FAIL` verdict: a process
//!   that does not die after SIGKILL, fork failing for good), or the machine resets.
//!
//! It then prints the seed, the reason, the kernel's report and the last calls of every worker.
//! A panic gives the program no chance to print, so the workers trace: each writes every call to
//! the console before it enters the kernel (`fuzz: T` lines; QEMU's serial port costs little).
//! The watcher keeps the last [`TRACE_KEEP`] of each worker in memory (`--trace-log` writes them
//! all to the log too, which grows by some 100 bytes a call) and prints them on failure, with
//! the supervisor's `fuzz: last` lines (each worker's latest call at a heartbeat, with its
//! result, `= ?` while it was in the kernel). With `--no-trace` only the heartbeat lines are
//! left. Reproduce with the same seed: each worker draws the same calls (docs/debugging.md).

use crate::qemu::{Accel, Machine};
use crate::{build, cmdline, deps, monitor, tests, usr};
use std::collections::{BTreeMap, VecDeque};
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// Options of `cargo xtask fuzz`.
#[derive(Clone, Debug)]
pub struct Options {
    /// System calls to spend, all workers together.
    pub calls: u64,
    /// The seed of every worker's random stream.
    pub seed: u64,
    /// The machine.
    pub machine: Machine,
    /// Workers (default: one per core).
    pub workers: Option<u32>,
    /// Every call on the console (`fuzz: T` lines; default).
    pub trace: bool,
    /// ... and in the log file.
    pub trace_log: bool,
    /// A heartbeat gap this long is a hang.
    pub hang: Duration,
    /// The whole run's time limit (default: from the number of calls).
    pub limit: Option<Duration>,
}

const USAGE: &str = "usage: cargo xtask fuzz [--calls N] [--seed S] [--cores C] [--nodes M] \
[--memory MIB] [--accel tcg|kvm] [--workers W] [--no-trace | --trace-log] [--hang SECS] \
[--limit SECS]";

/// Default number of calls.
pub const DEFAULT_CALLS: u64 = 100_000;

fn value<'a>(args: &'a [String], i: usize, flag: &str) -> Result<&'a str, String> {
    args.get(i + 1)
        .map(String::as_str)
        .ok_or_else(|| format!("{flag} needs a value\n{USAGE}"))
}

fn num<T: std::str::FromStr>(v: &str, flag: &str) -> Result<T, String> {
    v.parse()
        .map_err(|_| format!("{flag}: '{v}' is not a number\n{USAGE}"))
}

/// A seed: decimal or 0x-hexadecimal.
pub fn parse_seed(v: &str) -> Result<u64, String> {
    match v.strip_prefix("0x").or_else(|| v.strip_prefix("0X")) {
        Some(hex) => u64::from_str_radix(hex, 16).ok(),
        None => v.parse().ok(),
    }
    .ok_or_else(|| format!("--seed: '{v}' is not a number (decimal or 0x...)"))
}

/// Parses the options; `default_seed` is used when there is no `--seed`.
pub fn parse(args: &[String], default_seed: u64) -> Result<Options, String> {
    let mut o = Options {
        calls: DEFAULT_CALLS,
        seed: default_seed,
        machine: Machine {
            cores: 4,
            nodes: 2,
            memory_mib: 1024,
            accel: Accel::detect(),
            forwards: Vec::new(),
            nics: 1,
            pcap: None,
        },
        workers: None,
        trace: true,
        trace_log: false,
        hang: Duration::from_secs(60),
        limit: None,
    };
    let mut i = 0;
    while i < args.len() {
        let flag = args[i].as_str();
        match flag {
            "--no-trace" | "--trace-log" => {
                o.trace = flag == "--trace-log";
                o.trace_log = o.trace;
                i += 1;
                continue;
            }
            "--calls" => o.calls = num(value(args, i, flag)?, flag)?,
            "--seed" => o.seed = parse_seed(value(args, i, flag)?)?,
            "--cores" => o.machine.cores = num(value(args, i, flag)?, flag)?,
            "--nodes" => o.machine.nodes = num(value(args, i, flag)?, flag)?,
            "--memory" => o.machine.memory_mib = num(value(args, i, flag)?, flag)?,
            "--accel" => {
                o.machine.accel = match value(args, i, flag)? {
                    "tcg" => Accel::Tcg,
                    "kvm" => Accel::Kvm,
                    other => return Err(format!("--accel must be tcg or kvm, not '{other}'")),
                }
            }
            "--workers" => {
                let w: u32 = num(value(args, i, flag)?, flag)?;
                if !(1..=64).contains(&w) {
                    return Err("--workers must be 1..=64".into());
                }
                o.workers = Some(w);
            }
            "--hang" => o.hang = Duration::from_secs(num(value(args, i, flag)?, flag)?),
            "--limit" => o.limit = Some(Duration::from_secs(num(value(args, i, flag)?, flag)?)),
            other => return Err(format!("unknown option '{other}'\n{USAGE}")),
        }
        i += 2;
    }
    if o.calls == 0 {
        return Err("--calls must be at least 1".into());
    }
    if o.hang < Duration::from_secs(5) {
        return Err("--hang must be at least 5 seconds (the heartbeat is once a second)".into());
    }
    o.machine.validate()?;
    Ok(o)
}

impl Options {
    /// init's words on the kernel command line.
    pub fn init_words(&self) -> Vec<String> {
        let mut w = vec![
            "init=/test/fuzz".to_string(),
            "--calls".into(),
            self.calls.to_string(),
            "--seed".into(),
            self.seed.to_string(),
        ];
        if let Some(n) = self.workers {
            w.extend(["--workers".into(), n.to_string()]);
        }
        if self.trace {
            w.push("--trace".into());
        }
        w
    }

    /// The run's overall time limit: `--limit`, else 300 s plus 1 s per 50 calls (TCG on a
    /// busy 2-CPU host does some 1000 calls per second).
    pub fn time_limit(&self) -> Duration {
        self.limit
            .unwrap_or_else(|| Duration::from_secs(300 + self.calls / 50))
    }

    /// The command that repeats this run.
    pub fn reproduce(&self) -> String {
        let mut s = format!(
            "cargo xtask fuzz --calls {} --seed {} --cores {} --nodes {} --memory {}",
            self.calls, self.seed, self.machine.cores, self.machine.nodes, self.machine.memory_mib
        );
        if let Some(w) = self.workers {
            s.push_str(&format!(" --workers {w}"));
        }
        if !self.trace {
            s.push_str(" --no-trace");
        }
        s
    }
}

/// How QEMU's run ended, as far as the watcher saw.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ending {
    /// QEMU exited with this status.
    Exited(i32),
    /// No heartbeat for this long: killed.
    Hang(Duration),
    /// The overall time limit passed: killed.
    TimeLimit(Duration),
}

/// Why a campaign failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Failure {
    /// A Rust panic in the kernel (status 3).
    Panic,
    /// A CPU exception in kernel mode (status 5).
    Exception,
    /// The heartbeat stopped.
    Hang(Duration),
    /// The whole run took too long.
    TimeLimit(Duration),
    /// init ended otherwise than with 0 (the line the kernel printed, or the QEMU status).
    Init(String),
    /// QEMU exited with 0 but without the fuzzer's `done` line: a reset (triple fault).
    NoDone,
    /// Another QEMU status.
    Qemu(i32),
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Failure::Panic => write!(f, "kernel panic (QEMU exit status 3)"),
            Failure::Exception => write!(f, "CPU exception in the kernel (QEMU exit status 5)"),
            Failure::Hang(d) => write!(f, "hang: no heartbeat for {} s", d.as_secs()),
            Failure::TimeLimit(d) => write!(f, "time limit of {} s passed", d.as_secs()),
            Failure::Init(why) => write!(f, "init failed: {why}"),
            Failure::NoDone => write!(
                f,
                "QEMU exited with status 0 without `fuzz: done`: the machine reset (triple fault?)"
            ),
            Failure::Qemu(s) => write!(
                f,
                "QEMU exited with status {s} ({})",
                tests::describe_status(*s)
            ),
        }
    }
}

/// The call count of the `fuzz: done calls=N ...` line, if any.
pub fn done_calls(lines: &[&str]) -> Option<u64> {
    lines.iter().find_map(|l| {
        l.strip_prefix("fuzz: done calls=")
            .and_then(|rest| rest.split_whitespace().next())
            .and_then(|n| n.parse().ok())
    })
}

/// The calls spent at the last heartbeat (`fuzz: hb ... calls=N ...`).
pub fn heartbeat_calls(lines: &[&str]) -> Option<u64> {
    lines.iter().rev().find_map(|l| {
        l.strip_prefix("fuzz: hb ")?
            .split_whitespace()
            .find_map(|w| w.strip_prefix("calls="))
            .and_then(|n| n.parse().ok())
    })
}

/// Decides how a campaign went from its serial log and ending: the calls spent, or why it
/// failed.
pub fn classify(lines: &[&str], ending: Ending) -> Result<u64, Failure> {
    let init_line = lines
        .iter()
        .find(|l| l.starts_with("reef: init exited with status "));
    match ending {
        Ending::Hang(d) => Err(Failure::Hang(d)),
        Ending::TimeLimit(d) => Err(Failure::TimeLimit(d)),
        Ending::Exited(3) => Err(Failure::Panic),
        Ending::Exited(5) => Err(Failure::Exception),
        Ending::Exited(0) => match (init_line, done_calls(lines)) {
            (Some(l), Some(n)) if *l == "reef: init exited with status 0" => Ok(n),
            (Some(l), _) if *l != "reef: init exited with status 0" => {
                Err(Failure::Init(l.to_string()))
            }
            _ => Err(Failure::NoDone),
        },
        Ending::Exited(s) if s >= 35 => Err(Failure::Init(match init_line {
            Some(l) => l.to_string(),
            None => tests::describe_status(s),
        })),
        Ending::Exited(s) => Err(Failure::Qemu(s)),
    }
}

/// The kernel's report: from the first `reef: panic` or `reef: exception` line, the lines that
/// follow it (at most 40, up to the next fuzzer line).
pub fn kernel_report<'a>(lines: &[&'a str]) -> Vec<&'a str> {
    let Some(start) = lines
        .iter()
        .position(|l| l.starts_with("reef: panic") || l.starts_with("reef: exception"))
    else {
        return Vec::new();
    };
    lines[start..]
        .iter()
        .take(40)
        .take_while(|l| !l.starts_with("fuzz: "))
        .copied()
        .filter(|l| !l.trim().is_empty())
        .collect()
}

/// The last `k` calls the log shows for each worker, oldest first: `fuzz: T` (trace),
/// `fuzz: last` (heartbeat), `fuzz: ring` (the supervisor's dump on FAIL), `fuzz: watchdog`,
/// `fuzz: poke` and `fuzz: ended` lines, by the worker (`wN`) they name. A call seen more than
/// once (still in the kernel at two heartbeats, then in the ring) is kept once, where it was
/// seen last.
pub fn last_calls(lines: &[&str], k: usize) -> BTreeMap<u32, Vec<String>> {
    const KINDS: [&str; 6] = ["T", "last", "ring", "watchdog", "poke", "ended"];
    let mut per: BTreeMap<u32, VecDeque<String>> = BTreeMap::new();
    for l in lines {
        let Some(rest) = l.strip_prefix("fuzz: ") else {
            continue;
        };
        let Some((kind, call)) = rest.split_once(' ') else {
            continue;
        };
        if !KINDS.contains(&kind) {
            continue;
        }
        let Some(w) = call
            .split_whitespace()
            .next()
            .and_then(|t| t.strip_prefix('w'))
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        let q = per.entry(w).or_default();
        // The same call seen again (by the next heartbeat, or the ring after it): the newer word.
        let key = strip_result(call);
        q.retain(|prev| strip_result(prev.split_once(": ").map_or(prev, |(_, c)| c)) != key);
        q.push_back(format!("{kind}: {call}"));
        if q.len() > k {
            q.pop_front();
        }
    }
    per.into_iter()
        .map(|(w, q)| (w, q.into_iter().collect()))
        .collect()
}

/// The last traced call of each process (pid) of each worker that is older than the worker's
/// last `recent` calls: a process that stopped calling while its worker went on (a child stuck in
/// the kernel, or one that ended), with how many of the worker's calls ago, oldest first. These
/// are the candidates for a call that hogs a core or never returns.
pub fn stalled_processes(lines: &[&str], recent: usize) -> BTreeMap<u32, Vec<(String, usize)>> {
    let mut per: BTreeMap<u32, Vec<(&str, &str)>> = BTreeMap::new();
    for l in lines {
        let Some(w) = trace_worker(l) else {
            continue;
        };
        let call = &l["fuzz: T ".len()..];
        let pid = call
            .split_whitespace()
            .find(|t| t.starts_with("pid="))
            .unwrap_or("");
        per.entry(w).or_default().push((pid, call));
    }
    let mut out = BTreeMap::new();
    for (w, calls) in per {
        let n = calls.len();
        let mut last: BTreeMap<&str, usize> = BTreeMap::new();
        for (i, (pid, _)) in calls.iter().enumerate() {
            last.insert(pid, i);
        }
        let mut old: Vec<(String, usize)> = last
            .values()
            .filter(|&&i| i + recent < n)
            .map(|&i| (format!("T: {}", calls[i].1), n - 1 - i))
            .collect();
        old.sort_by_key(|o| std::cmp::Reverse(o.1));
        if !old.is_empty() {
            out.insert(w, old);
        }
    }
    out
}

/// The pids of the supervisor's `fuzz: left PID (comm) ...` lines (processes still there when
/// it failed; zombies excluded), as `pid=PID`.
pub fn left_pids(lines: &[&str]) -> Vec<String> {
    lines
        .iter()
        .filter_map(|l| l.strip_prefix("fuzz: left "))
        .filter(|rest| !rest.contains(") Z "))
        .filter_map(|rest| rest.split_whitespace().next())
        .map(|pid| format!("pid={pid}"))
        .collect()
}

/// Which of the processes that stopped calling to show: those the supervisor found still there
/// (`left`), when it said; else (a panic or hang) each worker's 3 most recent, as most are
/// children that simply ended.
fn shown_stalled(
    mut all: BTreeMap<u32, Vec<(String, usize)>>,
    left: &[String],
) -> BTreeMap<u32, Vec<(String, usize)>> {
    for calls in all.values_mut() {
        if left.is_empty() {
            let n = calls.len();
            calls.drain(..n.saturating_sub(3));
        } else {
            calls.retain(|(c, _)| c.split_whitespace().any(|t| left.iter().any(|p| p == t)));
        }
    }
    all.retain(|_, c| !c.is_empty());
    all
}

/// A call line without its ` = RESULT` (and what follows it), for comparisons.
fn strip_result(call: &str) -> &str {
    call.split(" = ").next().unwrap_or(call)
}

/// Lines the terminal does not get (they are in the log file): every call of the trace and the
/// per-worker lines of each heartbeat.
fn quiet(line: &str) -> bool {
    line.starts_with("fuzz: T ") || line.starts_with("fuzz: last ")
}

/// The worker a `fuzz: T wN ...` trace line names.
fn trace_worker(line: &str) -> Option<u32> {
    line.strip_prefix("fuzz: T w")?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// What the watcher keeps in memory of a long log: its last lines (the whole log is on disk).
const KEEP_LINES: usize = 100_000;
/// The trace lines kept per worker.
pub const TRACE_KEEP: usize = 256;

/// The serial log as the watcher keeps it: the last lines in arrival order, and apart from them
/// each worker's last trace lines (numbered in the same sequence).
#[derive(Default)]
struct Kept {
    seq: u64,
    lines: VecDeque<(u64, String)>,
    traces: BTreeMap<u32, VecDeque<(u64, String)>>,
}

impl Kept {
    fn push(&mut self, line: String) {
        self.seq += 1;
        if let Some(w) = trace_worker(&line) {
            let q = self.traces.entry(w).or_default();
            q.push_back((self.seq, line));
            if q.len() > TRACE_KEEP {
                q.pop_front();
            }
            return;
        }
        self.lines.push_back((self.seq, line));
        if self.lines.len() > KEEP_LINES {
            self.lines.pop_front();
        }
    }

    /// Every kept line, trace lines in their place.
    fn merged(&self) -> Vec<&str> {
        let mut all: Vec<&(u64, String)> = self.lines.iter().collect();
        all.extend(self.traces.values().flatten());
        all.sort_by_key(|(seq, _)| *seq);
        all.into_iter().map(|(_, l)| l.as_str()).collect()
    }
}

/// `cargo xtask fuzz`.
pub fn main(args: &[String]) -> Result<u8, String> {
    let seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64 % 1_000_000_000)
        .unwrap_or(1);
    let o = parse(args, seed)?;
    deps::ensure(&[deps::QEMU, deps::QBOOT, deps::OBJCOPY])?;
    let kernel = build::kernel()?;
    let initrd = usr::initramfs()?;
    let dir = build::root().join("out/fuzz");
    std::fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let log_path = log_path(o.seed);
    let sock = dir.join(format!("{}.monitor", o.seed));
    let _ = std::fs::remove_file(&sock);
    let line = cmdline::join(&o.init_words())?;
    let mut cmd = Command::new("qemu-system-x86_64");
    cmd.args(o.machine.args());
    cmd.arg("-kernel").arg(&kernel.image);
    cmd.arg("-initrd").arg(&initrd);
    cmd.arg("-append").arg(&line);
    cmd.args(["-serial", "stdio", "-monitor"]);
    cmd.arg(monitor::argument(&sock));
    eprintln!(
        "xtask: fuzzing Reef: seed {}, {} calls, {} cores, {} nodes, {} MiB, {:?}; log {}",
        o.seed,
        o.calls,
        o.machine.cores,
        o.machine.nodes,
        o.machine.memory_mib,
        o.machine.accel,
        log_path.display()
    );
    let (kept, ending, registers, wall) = watch(cmd, &o, &log_path, &sock)?;
    let _ = std::fs::remove_file(&sock);
    let lines = kept.merged();
    match classify(&lines, ending) {
        Ok(n) => {
            println!(
                "xtask: fuzz passed: {n} calls, seed {}, {:.0} s ({:.0} calls/s)",
                o.seed,
                wall.as_secs_f64(),
                n as f64 / wall.as_secs_f64()
            );
            Ok(0)
        }
        Err(why) => {
            print_failure(&o, &why, &lines, &registers, &kernel.elf, &log_path);
            Ok(1)
        }
    }
}

/// Runs QEMU, streaming its output to `log` and the terminal, until it exits, the heartbeat
/// stops or the time limit passes. Returns what it kept of the log, how the run ended, the
/// vCPU registers (for a hang or the time limit) and the wall time.
fn watch(
    cmd: Command,
    o: &Options,
    log: &Path,
    sock: &Path,
) -> Result<(Kept, Ending, String, Duration), String> {
    let file =
        std::fs::File::create(log).map_err(|e| format!("cannot create {}: {e}", log.display()))?;
    let mut file = std::io::BufWriter::new(file);
    let (mut child, start) = tests::spawn_piped(cmd, Stdio::null())?;
    let (tx, rx) = mpsc::channel::<String>();
    let mut readers = Vec::new();
    for pipe in [
        Box::new(child.stdout.take().expect("piped")) as Box<dyn Read + Send>,
        Box::new(child.stderr.take().expect("piped")),
    ] {
        let tx = tx.clone();
        readers.push(std::thread::spawn(move || {
            let mut r = BufReader::new(pipe);
            let mut buf = Vec::new();
            while let Ok(n) = r.read_until(b'\n', &mut buf) {
                if n == 0 {
                    break;
                }
                let text = String::from_utf8_lossy(&buf).replace('\r', "");
                if tx.send(text.trim_end_matches('\n').to_string()).is_err() {
                    break;
                }
                buf.clear();
            }
        }));
    }
    drop(tx);
    let mut kept = Kept::default();
    let take = |kept: &mut Kept, file: &mut dyn Write, line: String| {
        let trace = line.starts_with("fuzz: T ");
        if !trace || o.trace_log {
            let _ = writeln!(file, "{line}");
        }
        if !quiet(&line) {
            println!("{line}");
        }
        kept.push(line);
    };
    let mut last_beat = start;
    let limit = o.time_limit();
    let mut registers = String::new();
    let mut last_flush = Instant::now();
    let ending = loop {
        if let Ok(line) = rx.recv_timeout(Duration::from_millis(100)) {
            if line.starts_with("fuzz: hb ") || line.starts_with("fuzz: start ") {
                last_beat = Instant::now();
            }
            take(&mut kept, &mut file, line);
            if last_flush.elapsed() > Duration::from_secs(1) {
                let _ = file.flush();
                last_flush = Instant::now();
            }
            continue;
        }
        if let Some(s) = child.try_wait().map_err(|e| e.to_string())? {
            use std::os::unix::process::ExitStatusExt;
            break Ending::Exited(s.code().unwrap_or_else(|| 128 + s.signal().unwrap_or(0)));
        }
        let now = Instant::now();
        let silent = now - last_beat;
        if silent > o.hang || now - start > limit {
            // The kernel prints its scheduler state on the NMI: the console readers take it.
            registers = monitor::ask_hung(sock);
            let _ = child.kill();
            let _ = child.wait();
            break if silent > o.hang {
                Ending::Hang(silent)
            } else {
                Ending::TimeLimit(limit)
            };
        }
    };
    for r in readers {
        let _ = r.join();
    }
    for line in rx.try_iter() {
        take(&mut kept, &mut file, line);
    }
    let _ = file.flush();
    Ok((kept, ending, registers, start.elapsed()))
}

fn print_failure(
    o: &Options,
    why: &Failure,
    lines: &[&str],
    registers: &str,
    elf: &Path,
    log: &Path,
) {
    println!();
    println!("xtask: fuzz FAILED: {why}");
    println!(
        "xtask: seed {}, {} cores, {} nodes, {} MiB, {} calls; {} calls spent at the last heartbeat",
        o.seed,
        o.machine.cores,
        o.machine.nodes,
        o.machine.memory_mib,
        o.calls,
        heartbeat_calls(lines).map_or("no".to_string(), |n| n.to_string())
    );
    let report = kernel_report(lines);
    if !report.is_empty() {
        println!("---- kernel report ----");
        for l in &report {
            println!("{l}");
            let chain = monitor::backtrace(l);
            for (ret, place) in chain.iter().zip(monitor::addr2line(elf, &chain)) {
                println!("  {ret:#x} {place}");
            }
        }
    }
    if let Some(l) = lines.iter().find(|l| l.starts_with("fuzz: FAIL ")) {
        println!("---- the fuzzer's verdict ----\n{l}");
    }
    if let Some(l) = lines
        .iter()
        .find(|l| l.starts_with("reef: init exited with status "))
    {
        println!("{l}");
    }
    if !registers.is_empty() {
        let file = log.with_extension("registers");
        let saved = std::fs::write(&file, registers).is_ok();
        println!(
            "---- where each vCPU was (QEMU monitor{}) ----",
            if saved {
                format!("; all registers in {}", file.display())
            } else {
                String::new()
            }
        );
        for l in monitor::where_each_cpu_was(registers, elf) {
            println!("{l}");
        }
    }
    let dump: Vec<&str> = lines
        .iter()
        .copied()
        .filter(|l| l.starts_with("reef: nmi: "))
        .collect();
    if !dump.is_empty() {
        println!("---- the scheduler's state (the kernel's answer to an NMI) ----");
        for l in dump {
            println!("{l}");
        }
    }
    println!(
        "---- last calls of each worker (oldest first; `last`: at a heartbeat, `T`: --trace, \
         `= ?`: in the kernel) ----"
    );
    let calls = last_calls(lines, 8);
    let others = shown_stalled(stalled_processes(lines, 8), &left_pids(lines));
    if calls.is_empty() {
        println!("(none in the log)");
    }
    for (w, calls) in calls {
        println!("worker {w}:");
        for c in calls {
            println!("  {c}");
        }
        for (call, ago) in others.get(&w).into_iter().flatten() {
            println!("  ... a process that made no call since, {ago} calls of this worker ago:");
            println!("    {call}");
        }
    }
    println!("---- reproduce ----");
    println!("{}", o.reproduce());
    println!("full log: {}", log.display());
}

/// A short fixed-seed campaign's check for `cargo xtask test`: the `done` line, else the
/// failure with the last calls.
pub fn check_campaign(log: &str, status: i32) -> Result<(), String> {
    let lines: Vec<&str> = log.lines().collect();
    match classify(&lines, Ending::Exited(status)) {
        Ok(_) => Ok(()),
        Err(why) => {
            let mut msg = format!("{why}");
            for l in kernel_report(&lines).iter().take(3) {
                msg.push_str(&format!("\n  {l}"));
            }
            for (w, calls) in last_calls(&lines, 4) {
                for c in calls {
                    msg.push_str(&format!("\n  worker {w}: {c}"));
                }
            }
            Err(msg)
        }
    }
}

/// The path of a log of seed `seed` (for the documentation and tests).
pub fn log_path(seed: u64) -> PathBuf {
    build::root().join(format!("out/fuzz/{seed}.log"))
}

#[cfg(test)]
mod unit {
    use super::*;

    fn words(w: &[&str]) -> Vec<String> {
        w.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn options() {
        let o = parse(&[], 7).unwrap();
        assert_eq!(
            (o.calls, o.seed, o.machine.cores, o.machine.nodes),
            (DEFAULT_CALLS, 7, 4, 2)
        );
        assert_eq!(o.machine.memory_mib, 1024);
        assert!(o.trace && !o.trace_log);
        assert_eq!(o.hang, Duration::from_secs(60));
        assert_eq!(
            o.time_limit(),
            Duration::from_secs(300 + DEFAULT_CALLS / 50)
        );
        let o = parse(
            &words(&[
                "--calls",
                "10000000",
                "--seed",
                "0x10",
                "--cores",
                "1",
                "--nodes",
                "1",
                "--memory",
                "256",
                "--workers",
                "3",
                "--no-trace",
                "--hang",
                "30",
                "--limit",
                "99",
            ]),
            7,
        )
        .unwrap();
        assert_eq!(o.calls, 10_000_000);
        assert_eq!(o.seed, 16);
        assert_eq!(
            (o.machine.cores, o.machine.nodes, o.machine.memory_mib),
            (1, 1, 256)
        );
        assert_eq!(o.workers, Some(3));
        assert!(!o.trace);
        assert_eq!(o.hang, Duration::from_secs(30));
        assert_eq!(o.time_limit(), Duration::from_secs(99));
        assert_eq!(
            o.init_words(),
            words(&[
                "init=/test/fuzz",
                "--calls",
                "10000000",
                "--seed",
                "16",
                "--workers",
                "3"
            ])
        );
        assert_eq!(
            o.reproduce(),
            "cargo xtask fuzz --calls 10000000 --seed 16 --cores 1 --nodes 1 --memory 256 \
             --workers 3 --no-trace"
        );
        let o = parse(&words(&["--trace-log"]), 1).unwrap();
        assert!(o.trace && o.trace_log);
        assert_eq!(o.init_words().last().unwrap(), "--trace");
        assert!(!o.reproduce().contains("trace"));
        for bad in [
            &["--calls"][..],
            &["--calls", "x"],
            &["--calls", "0"],
            &["--seed", "-1"],
            &["--seed", "0xg"],
            &["--workers", "0"],
            &["--hang", "1"],
            &["--cores", "2", "--nodes", "3"],
            &["--accel", "xen"],
            &["--bogus"],
        ] {
            assert!(parse(&words(bad), 1).is_err(), "{bad:?}");
        }
        assert_eq!(parse_seed("123").unwrap(), 123);
        assert_eq!(parse_seed("0xff").unwrap(), 255);
    }

    const HEARTBEAT: &str = "\
reef: boot ok: cores=4 nodes=2 memory=1024MiB time=900ms
fuzz: start seed=5 calls=1000 workers=2 dir=/tmp/fuzz trace=0 reef=1 free=990MiB
fuzz: hb t=1.0s calls=300 rate=300/s restarts=1 watchdog=0 strays=0 free=900MiB
fuzz: last w0 g0 #150 pid=3 read(0x3, 0x200000000000, 0x10) = 16
fuzz: last w1 g1 #20 pid=9 futex(0x7f0000000000, 0x80, 0, 0x300000000600, 0, 0) = ?
fuzz: hb t=2.0s calls=600 rate=300/s restarts=1 watchdog=0 strays=0 free=900MiB
fuzz: last w0 g0 #300 pid=3 mmap(0, 0x1000, 0x3, 0x22, 0xffffffffffffffff, 0) = 1234
fuzz: last w1 g1 #20 pid=9 futex(0x7f0000000000, 0x80, 0, 0x300000000600, 0, 0) = ?
";

    #[test]
    fn a_clean_run() {
        let log = format!(
            "{HEARTBEAT}fuzz: done calls=1000 seed=5 workers=2 restarts=1\n\
             reef: init exited with status 0\nreef: unimplemented syscalls: none\n"
        );
        let lines: Vec<&str> = log.lines().collect();
        assert_eq!(classify(&lines, Ending::Exited(0)), Ok(1000));
        assert_eq!(check_campaign(&log, 0), Ok(()));
        assert_eq!(heartbeat_calls(&lines), Some(600));
        // Status 0 without the done line: a reset.
        let lines: Vec<&str> = HEARTBEAT.lines().collect();
        assert_eq!(classify(&lines, Ending::Exited(0)), Err(Failure::NoDone));
    }

    #[test]
    fn a_panic_with_the_last_calls() {
        let log = format!(
            "{HEARTBEAT}\nreef: panic on core 1 at src/mm/mod.rs:10:5: out of memory\n\
             reef:   backtrace: 0xffffffff80101234\n"
        );
        let lines: Vec<&str> = log.lines().collect();
        assert_eq!(classify(&lines, Ending::Exited(3)), Err(Failure::Panic));
        assert_eq!(
            kernel_report(&lines),
            [
                "reef: panic on core 1 at src/mm/mod.rs:10:5: out of memory",
                "reef:   backtrace: 0xffffffff80101234"
            ]
        );
        let calls = last_calls(&lines, 8);
        assert_eq!(calls.len(), 2);
        assert_eq!(
            calls[&0],
            [
                "last: w0 g0 #150 pid=3 read(0x3, 0x200000000000, 0x10) = 16",
                "last: w0 g0 #300 pid=3 mmap(0, 0x1000, 0x3, 0x22, 0xffffffffffffffff, 0) = 1234"
            ]
        );
        // The call still in the kernel at two heartbeats is shown once.
        assert_eq!(
            calls[&1],
            ["last: w1 g1 #20 pid=9 futex(0x7f0000000000, 0x80, 0, 0x300000000600, 0, 0) = ?"]
        );
        let msg = check_campaign(&log, 3).unwrap_err();
        assert!(msg.starts_with("kernel panic"), "{msg}");
        assert!(msg.contains("out of memory"), "{msg}");
        assert!(msg.contains("worker 1: last: w1 g1 #20"), "{msg}");
    }

    #[test]
    fn exceptions_hangs_and_init_failures() {
        let log = format!(
            "{HEARTBEAT}reef: exception: #GP general protection (vector 13) error=0x0 \
             rip=0xffffffff80104321 core=2\nreef:   rax=0x0 rbx=0x1\n"
        );
        let lines: Vec<&str> = log.lines().collect();
        assert_eq!(classify(&lines, Ending::Exited(5)), Err(Failure::Exception));
        assert_eq!(kernel_report(&lines).len(), 2);
        let d = Duration::from_secs(61);
        assert_eq!(classify(&lines, Ending::Hang(d)), Err(Failure::Hang(d)));
        assert_eq!(
            classify(&lines, Ending::TimeLimit(d)),
            Err(Failure::TimeLimit(d))
        );
        let log = format!(
            "{HEARTBEAT}fuzz: FAIL worker 1 (pid 9) still there 30 s after SIGKILL (seed=5)\n\
             fuzz: ring w1 g1 #19 pid=9 getpid() = 9\n\
             fuzz: ring w1 g1 #20 pid=9 futex(0x7f0000000000, 0x80, 0, 0x300000000600, 0, 0) = ?\n\
             reef: init exited with status 1\n"
        );
        let lines: Vec<&str> = log.lines().collect();
        assert_eq!(
            classify(&lines, Ending::Exited(35)),
            Err(Failure::Init("reef: init exited with status 1".into()))
        );
        let calls = last_calls(&lines, 8);
        assert_eq!(
            calls[&1],
            [
                "ring: w1 g1 #19 pid=9 getpid() = 9",
                "ring: w1 g1 #20 pid=9 futex(0x7f0000000000, 0x80, 0, 0x300000000600, 0, 0) = ?"
            ]
        );
        assert_eq!(classify(&[], Ending::Exited(1)), Err(Failure::Qemu(1)));
    }

    #[test]
    fn trace_lines_give_exact_last_calls() {
        let mut log = String::from(HEARTBEAT);
        for i in 0..20 {
            log.push_str(&format!("fuzz: T w0 g2 #{i} pid=4 getpid()\n"));
        }
        log.push_str("fuzz: T w3 g0 #7.2 pid=12 brk(0)\n");
        let lines: Vec<&str> = log.lines().collect();
        let calls = last_calls(&lines, 4);
        assert_eq!(
            calls[&0],
            [
                "T: w0 g2 #16 pid=4 getpid()",
                "T: w0 g2 #17 pid=4 getpid()",
                "T: w0 g2 #18 pid=4 getpid()",
                "T: w0 g2 #19 pid=4 getpid()"
            ]
        );
        assert_eq!(calls[&3], ["T: w3 g0 #7.2 pid=12 brk(0)"]);
        assert!(quiet("fuzz: T w0 g2 #1 pid=4 getpid()"));
        assert!(!quiet("fuzz: hb t=1.0s calls=300"));
    }

    #[test]
    fn the_watcher_keeps_each_workers_last_trace_lines_in_place() {
        let mut kept = Kept::default();
        let n = TRACE_KEEP + 5;
        kept.push("fuzz: hb t=1.0s calls=3".into());
        for i in 0..n {
            kept.push(format!("fuzz: T w1 g0 #{i} pid=4 getpid()"));
        }
        kept.push("fuzz: T w0 g0 #0 pid=3 brk(0)".into());
        kept.push(format!("fuzz: last w1 g0 #{} pid=4 getpid() = 4", n - 1));
        kept.push("reef: panic on core 0 at x.rs:1:1: boom".into());
        assert_eq!(kept.lines.len(), 3);
        let merged = kept.merged();
        assert_eq!(merged.len(), 3 + TRACE_KEEP + 1);
        assert_eq!(merged[0], "fuzz: hb t=1.0s calls=3");
        assert_eq!(merged[1], "fuzz: T w1 g0 #5 pid=4 getpid()");
        assert_eq!(
            merged[merged.len() - 1],
            "reef: panic on core 0 at x.rs:1:1: boom"
        );
        let calls = last_calls(&merged, 3);
        // The last call's trace line gives way to the heartbeat's line of it, with its result.
        assert_eq!(
            calls[&1],
            [
                format!("T: w1 g0 #{} pid=4 getpid()", n - 3),
                format!("T: w1 g0 #{} pid=4 getpid()", n - 2),
                format!("last: w1 g0 #{} pid=4 getpid() = 4", n - 1)
            ]
        );
        assert_eq!(calls[&0], ["T: w0 g0 #0 pid=3 brk(0)"]);
        assert!(stalled_processes(&merged, 8).is_empty());
        assert_eq!(trace_worker("fuzz: T w12 g0 #0 pid=3 brk(0)"), Some(12));
        assert_eq!(trace_worker("fuzz: last w12 g0 #0 pid=3 brk(0) = 1"), None);
    }

    #[test]
    fn a_child_that_stopped_calling_is_shown() {
        let mut log = String::new();
        log.push_str("fuzz: T w2 g1 #40 pid=7 fork()\n");
        log.push_str("fuzz: T w2 g1 #40.1 pid=9 sendfile(0x7, 0x9, 0, 0x80000000)\n");
        for i in 41..60 {
            log.push_str(&format!("fuzz: T w2 g1 #{i} pid=7 getpid()\n"));
        }
        log.push_str("fuzz: T w3 g0 #5 pid=8 getpid()\n");
        let lines: Vec<&str> = log.lines().collect();
        let s = stalled_processes(&lines, 8);
        assert_eq!(s.len(), 1);
        assert_eq!(
            s[&2],
            [(
                "T: w2 g1 #40.1 pid=9 sendfile(0x7, 0x9, 0, 0x80000000)".to_string(),
                19
            )]
        );
    }

    #[test]
    fn stalled_processes_shown_are_those_left_or_the_latest() {
        let mut log = String::new();
        for (i, pid) in [10, 11, 12, 13, 14].iter().enumerate() {
            log.push_str(&format!("fuzz: T w0 g1 #{i}.1 pid={pid} getpid()\n"));
        }
        for i in 5..20 {
            log.push_str(&format!("fuzz: T w0 g1 #{i} pid=7 getpid()\n"));
        }
        let lines: Vec<&str> = log.lines().collect();
        let all = stalled_processes(&lines, 8);
        assert_eq!(all[&0].len(), 5);
        let latest = shown_stalled(all.clone(), &[]);
        let calls: Vec<&str> = latest[&0].iter().map(|(c, _)| &c[..16]).collect();
        assert_eq!(
            calls,
            ["T: w0 g1 #2.1 pi", "T: w0 g1 #3.1 pi", "T: w0 g1 #4.1 pi"]
        );
        let left = left_pids(&[
            "fuzz: left 11 (fuzz) R 1 11 1 0",
            "fuzz: left 12 (fuzz) Z 7 7 1 0",
        ]);
        assert_eq!(left, ["pid=11"]);
        let shown = shown_stalled(all, &left);
        assert_eq!(shown[&0].len(), 1);
        assert!(shown[&0][0].0.contains("pid=11 "));
    }
}
