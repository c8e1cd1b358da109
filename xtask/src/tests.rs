//! `cargo xtask test`: host unit tests of every crate and the user test programs run natively on
//! Linux, then QEMU integration tests that boot Reef in several configurations and check its
//! serial output and exit status.
//!
//! Each test has a time limit and prints the whole log when it fails. Tests check behaviour,
//! never timing.
//!
//! The `user-...` cases boot a user program as init (`init=/test/<name>` from the initramfs, or
//! busybox) and expect its output, `reef: init exited with status N`, the power-off report lines
//! and the QEMU exit status that N maps to (see [`qemu_status_for_init`]). The same programs run
//! on the host as `linux::user-...` to show that they pass on Linux; busybox runs there as the
//! host's `/bin/busybox` (Debian's busybox-static, the initramfs's busybox) with `PATH` naming
//! only a directory of its applets, so that the host's own tools play no part.
//!
//! `user-shell-suite` boots `init=/bin/sh /test/sh/run.sh`: the busybox scripts of `usr/sh/`,
//! each compared with its expected output (see `usr/sh/run.sh`).
//!
//! `user-fuzz` runs a short campaign of the random-system-call fuzzer (`usr/fuzz.c`, see
//! `fuzz`) with a fixed seed and expects its `fuzz: done` line; a failure says why, with the
//! seed and each worker's last calls.
//!
//! The `tty-...` case talks to an interactive shell on the serial console: it types a script
//! into QEMU's stdin step by step, each step waiting (with a time limit) for the output it
//! expects before the next input goes in.

use crate::qemu::{Accel, Console, Machine};
use crate::{build, cmdline, deps, monitor, usr};
use std::io::{Read, Write};
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::rc::Rc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Time limit of one QEMU boot.
pub(crate) const LIMIT: Duration = Duration::from_secs(180);
/// Time limit of the boots that create many processes.
const LONG_LIMIT: Duration = Duration::from_secs(400);
/// Time limit of one user program run natively on Linux.
const NATIVE_LIMIT: Duration = Duration::from_secs(120);
/// Time limit of waiting for one expected output of an interactive script.
const STEP_LIMIT: Duration = Duration::from_secs(60);

/// How a run ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum End {
    /// Exited with this status.
    Exited(i32),
    /// Killed by this signal (only native runs; QEMU exits by itself).
    Signaled(i32),
    /// Still running at the time limit, and killed.
    TimedOut,
}

/// What a QEMU (or native) run produced.
pub struct Outcome {
    /// Serial output (stdout and stderr of the process).
    pub log: String,
    /// How it ended.
    pub end: End,
    /// Wall time from spawning the process to its exit.
    pub wall: Duration,
}

/// QEMU's exit status when init exits with status `n`: 0 for 0 (ACPI power-off), else the
/// kernel writes `16 + min(n, 111)` to isa-debug-exit and QEMU exits with twice that plus one.
pub fn qemu_status_for_init(n: u32) -> i32 {
    if n == 0 {
        0
    } else {
        33 + 2 * n.min(111) as i32
    }
}

/// Explains a QEMU exit status (see docs/debugging.md).
pub fn describe_status(code: i32) -> String {
    match code {
        0 => "clean power-off, or init exited with status 0".into(),
        1 => "QEMU error".into(),
        3 => "kernel panic".into(),
        5 => "CPU exception in the kernel".into(),
        7 => "kernel self-test failed".into(),
        9 => "ACPI power-off did not work".into(),
        255 => "init exited with status 111 or more (the serial log has the exact status)".into(),
        35..=253 if code % 2 == 1 => format!("init exited with status {}", (code - 33) / 2),
        _ => "unknown status (QEMU error?)".into(),
    }
}

/// The output of a running process, collected by one thread per pipe.
struct Capture {
    log: Arc<Mutex<Vec<u8>>>,
    readers: Vec<std::thread::JoinHandle<()>>,
}

impl Capture {
    /// Starts collecting the (piped) stdout and stderr of `child`.
    fn start(child: &mut std::process::Child) -> Capture {
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
        Capture { log, readers }
    }

    /// The output so far, carriage returns removed.
    fn text(&self) -> String {
        String::from_utf8_lossy(&self.log.lock().expect("log lock")).replace('\r', "")
    }

    /// Whether both pipes reached their end (everything the process wrote is in the log).
    fn drained(&self) -> bool {
        self.readers.iter().all(|r| r.is_finished())
    }

    /// Waits for the pipes to close and returns the whole output.
    fn finish(self) -> String {
        for r in self.readers {
            let _ = r.join();
        }
        String::from_utf8_lossy(&self.log.lock().expect("log lock")).replace('\r', "")
    }
}

/// Waits until `child` exits or `limit` (from `start`) passes; then `at_limit` runs (to ask
/// a guest that hangs where it is) and it is killed.
pub fn wait_for_exit(
    child: &mut std::process::Child,
    start: Instant,
    limit: Duration,
    at_limit: impl FnOnce(),
) -> Result<End, String> {
    loop {
        if let Some(s) = child.try_wait().map_err(|e| e.to_string())? {
            return Ok(match (s.code(), s.signal()) {
                (Some(c), _) => End::Exited(c),
                (None, Some(sig)) => End::Signaled(sig),
                (None, None) => End::Exited(-1),
            });
        }
        if start.elapsed() > limit {
            at_limit();
            let _ = child.kill();
            let _ = child.wait();
            return Ok(End::TimedOut);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Starts `cmd` with `stdin` and its stdout and stderr piped; returns it and its start time.
pub fn spawn_piped(mut cmd: Command, stdin: Stdio) -> Result<(Child, Instant), String> {
    cmd.stdin(stdin)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let start = Instant::now();
    let child = cmd
        .spawn()
        .map_err(|e| format!("cannot start {:?}: {e}", cmd.get_program()))?;
    Ok((child, start))
}

/// Runs `cmd` with stdin closed, collecting stdout and stderr until it exits or `limit` passes
/// (then `at_limit` runs and it is killed).
pub fn collect(cmd: Command, limit: Duration, at_limit: impl FnOnce()) -> Result<Outcome, String> {
    let (mut child, start) = spawn_piped(cmd, Stdio::null())?;
    let capture = Capture::start(&mut child);
    let end = wait_for_exit(&mut child, start, limit, at_limit)?;
    let wall = start.elapsed();
    let log = capture.finish();
    Ok(Outcome { log, end, wall })
}

/// One step of a conversation with the serial console.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Step {
    /// Types this text (writes it to QEMU's stdin, which is the serial port).
    Send(&'static str),
    /// Waits, at most [`STEP_LIMIT`], until the output after the previous match contains this
    /// text (carriage returns removed).
    Expect(&'static str),
    /// Does something on the host (given the host port of the case's first forwarded port),
    /// then types what it returns, if anything.
    Host(fn(u16) -> Result<Option<String>, String>),
}

/// Runs `cmd` with its stdin piped and plays `script`, then waits for the process to exit
/// (within `limit` from the start). Returns the outcome and whether every step succeeded; a
/// failed step kills the process and says what was typed so far. `on_hang` runs before the
/// process is killed when an expected output did not come in time or the process did not exit
/// in time (to ask the guest where it is; its answer on the console is kept).
fn converse(
    cmd: Command,
    script: &[Step],
    limit: Duration,
    host_port: u16,
    on_hang: impl FnOnce(),
) -> Result<(Outcome, Result<(), String>), String> {
    let mut on_hang = Some(on_hang);
    let (mut child, start) = spawn_piped(cmd, Stdio::piped())?;
    let mut stdin = child.stdin.take().expect("piped");
    let capture = Capture::start(&mut child);
    let mut seen = 0;
    let mut typed: Vec<String> = Vec::new();
    let mut verdict = Ok(());
    'script: for (i, step) in script.iter().enumerate() {
        match *step {
            Step::Send(text) => {
                if let Err(e) = stdin.write_all(text.as_bytes()).and_then(|_| stdin.flush()) {
                    verdict = Err(format!("step {}: cannot write to QEMU: {e}", i + 1));
                    break;
                }
                typed.push(text.into());
            }
            Step::Host(action) => match action(host_port) {
                Ok(None) => {}
                Ok(Some(text)) => {
                    if let Err(e) = stdin.write_all(text.as_bytes()).and_then(|_| stdin.flush()) {
                        verdict = Err(format!("step {}: cannot write to QEMU: {e}", i + 1));
                        break;
                    }
                    typed.push(text);
                }
                Err(e) => {
                    verdict = Err(format!("step {} (on the host): {e}", i + 1));
                    break;
                }
            },
            Step::Expect(want) => {
                let step_start = Instant::now();
                loop {
                    // Whether it exited is asked before the log is read, and an exit counts
                    // only once the pipes are drained: output written just before the exit is
                    // still seen.
                    let exited =
                        child.try_wait().map_err(|e| e.to_string())?.is_some() && capture.drained();
                    let log = capture.text();
                    if let Some(at) = log.get(seen..).and_then(|rest| rest.find(want)) {
                        seen += at + want.len();
                        break;
                    }
                    if exited || step_start.elapsed() > STEP_LIMIT || start.elapsed() > limit {
                        if !exited {
                            if let Some(f) = on_hang.take() {
                                f()
                            }
                        }
                        verdict = Err(format!(
                            "step {}: expected {want:?} in the output{}; typed so far: {typed:?}",
                            i + 1,
                            if exited {
                                " before QEMU exited".to_string()
                            } else {
                                format!(" within {} s", STEP_LIMIT.as_secs())
                            }
                        ));
                        break 'script;
                    }
                    std::thread::sleep(Duration::from_millis(20));
                }
            }
        }
    }
    let end = if verdict.is_ok() {
        wait_for_exit(&mut child, start, limit, || {
            if let Some(f) = on_hang.take() {
                f()
            }
        })?
    } else {
        let _ = child.kill();
        let _ = child.wait();
        End::TimedOut
    };
    drop(stdin);
    let wall = start.elapsed();
    let log = capture.finish();
    Ok((Outcome { log, end, wall }, verdict))
}

/// Boots `kernel` with the initramfs `initrd` on `machine` with `cmdline` and collects the
/// serial output.
pub fn boot(
    machine: &Machine,
    kernel: &Path,
    initrd: &Path,
    cmdline: &str,
    limit: Duration,
) -> Result<Outcome, String> {
    collect(
        machine.command(kernel, initrd, cmdline, Console::Piped),
        limit,
        || {},
    )
}

pub(crate) type Check = Box<dyn Fn(&Machine, &Outcome) -> Result<(), String>>;

/// Explains a failed run from its log and QEMU's exit status (an error with the details).
pub(crate) type Explain = fn(&str, i32) -> Result<(), String>;

pub(crate) struct Case {
    pub(crate) name: String,
    pub(crate) cores: u32,
    pub(crate) nodes: u32,
    pub(crate) memory_mib: u32,
    pub(crate) cmdline: String,
    pub(crate) status: i32,
    pub(crate) limit: Duration,
    pub(crate) check: Check,
    /// Input typed into the serial console (empty: stdin stays closed).
    pub(crate) script: Vec<Step>,
    /// Explains a failure from the log and QEMU's status (the fuzzer's seed and last calls).
    pub(crate) explain: Option<Explain>,
    /// TCP ports of the host's 127.0.0.1 forwarded to the guest.
    pub(crate) forwards: Vec<crate::qemu::Forward>,
    /// NICs (`Machine::nics`).
    pub(crate) nics: u32,
    /// Boots the image with Debian's packages (`out/initramfs-debian.cpio`, see `debian.rs`).
    pub(crate) debian: bool,
}

pub(crate) fn expect(log: &str, needle: &str) -> Result<(), String> {
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

fn check_timer_watch(m: &Machine, o: &Outcome) -> Result<(), String> {
    check_boot(m, o)?;
    let last = m.cores - 1;
    expect(
        &o.log,
        &format!("reef: timer-watch: core {last} stopped its timer after"),
    )?;
    expect(
        &o.log,
        &format!("reef: timer: core {last} had stopped its timer after"),
    )?;
    expect(
        &o.log,
        &format!("reef: timer-watch: core {last} ticks again"),
    )?;
    expect(&o.log, "reef: selftest timer-watch: passed")
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

/// A kernel panic on core 0 reported with `message` and the calling chain (by frame pointers:
/// at least the caller of the code that panicked).
fn expect_panic(log: &str, message: &str) -> Result<(), String> {
    expect(log, "reef: panic on core 0 at src/")?;
    expect(log, message)?;
    expect(log, "reef:   backtrace: 0xffffffff8")
}

fn check_panic(_: &Machine, o: &Outcome) -> Result<(), String> {
    expect(&o.log, "reef: panic on core 0 at src/selftest.rs:")?;
    expect_panic(&o.log, "deliberate panic (test=panic)")
}

fn check_lock_order(_: &Machine, o: &Outcome) -> Result<(), String> {
    expect_panic(
        &o.log,
        "IrqMutex<u16> released after an enclosing IrqMutex: interrupts were on while it was held",
    )
}

fn check_deadlock(_: &Machine, o: &Outcome) -> Result<(), String> {
    expect_panic(
        &o.log,
        "IrqMutex<u32> still held by another after 30 s: a deadlock",
    )
}

fn check_unknown_test(_: &Machine, o: &Outcome) -> Result<(), String> {
    expect(&o.log, "reef: selftest nonsense: FAILED: no such self-test")?;
    expect(&o.log, "reef: ignoring unknown command-line word 'bogus=1'")
}

/// A kernel self-test case.
fn kernel_case(
    name: &str,
    (cores, nodes, memory_mib): (u32, u32, u32),
    cmdline: &str,
    status: i32,
    check: fn(&Machine, &Outcome) -> Result<(), String>,
) -> Case {
    Case {
        name: name.into(),
        cores,
        nodes,
        memory_mib,
        cmdline: cmdline.into(),
        status,
        limit: LIMIT,
        check: Box::new(check),
        script: Vec::new(),
        explain: None,
        forwards: Vec::new(),
        nics: 1,
        debian: false,
    }
}

fn kernel_cases() -> Vec<Case> {
    vec![
        kernel_case("boot-1c1n", (1, 1, 128), "test=ipi poweroff", 0, check_ipi),
        kernel_case("boot-2c2n", (2, 2, 256), "test=ipi poweroff", 0, check_ipi),
        kernel_case("boot-4c2n", (4, 2, 512), "test=ipi poweroff", 0, check_ipi),
        kernel_case(
            "memory-4c2n",
            (4, 2, 512),
            "test=memory poweroff",
            0,
            check_memory,
        ),
        kernel_case(
            "corectl-4c2n",
            (4, 2, 512),
            "test=corectl poweroff",
            0,
            check_corectl,
        ),
        kernel_case(
            "timer-watch-2c1n",
            (2, 1, 128),
            "test=timer-watch poweroff",
            0,
            check_timer_watch,
        ),
        kernel_case(
            "fault-bsp",
            (2, 1, 128),
            "test=fault poweroff",
            5,
            check_fault,
        ),
        kernel_case(
            "fault-ap",
            (2, 2, 256),
            "test=fault-ap poweroff",
            5,
            check_fault_ap,
        ),
        kernel_case("panic", (1, 1, 128), "test=panic poweroff", 3, check_panic),
        kernel_case(
            "lock-order",
            (1, 1, 128),
            "test=lock-order poweroff",
            3,
            check_lock_order,
        ),
        kernel_case(
            "deadlock",
            (1, 1, 128),
            "test=deadlock poweroff",
            3,
            check_deadlock,
        ),
        kernel_case(
            "unknown-test",
            (1, 1, 128),
            "bogus=1 test=nonsense poweroff",
            7,
            check_unknown_test,
        ),
    ]
}

// ---- user programs ----

/// Machine configurations of the user cases: (cores, nodes, memory MiB).
const ONE_CORE: (u32, u32, u32) = (1, 1, 256);
const FOUR_CORES: (u32, u32, u32) = (4, 2, 512);
/// Two cores on two nodes, for the programs that need a core of their own and one more.
const TWO_NODES: (u32, u32, u32) = (2, 2, 512);

/// The fixed-seed fuzz campaign of `cargo xtask test` (`user-fuzz-...`): calls and seed.
const FUZZ_CALLS: &str = "20000";
const FUZZ_SEED: &str = "1";
/// Its time limit: a kernel hang shows as this limit passing.
const FUZZ_LIMIT: Duration = Duration::from_secs(150);

/// Arguments the `args` case passes to init: spaces, quotes, backslashes, an empty word, a tab,
/// words that look like kernel options, and non-ASCII text.
const ARGS_WORDS: &[&str] = &[
    "hello world",
    r#"say "hi""#,
    r"back\slash",
    "",
    "tab\there",
    "plain",
    r#"""#,
    r"\",
    r#"a\"b"#,
    r"trailing\",
    "  two leading spaces",
    "poweroff",
    "init=/bin/false",
    "naïve",
];

/// The `expect=N:HEX,...` word that tells `args` what the following words must be.
fn args_expectation(words: &[&str]) -> String {
    let hex: Vec<String> = words
        .iter()
        .map(|w| w.bytes().map(|b| format!("{b:02x}")).collect())
        .collect();
    format!("expect={}:{}", words.len(), hex.join(","))
}

/// Something a user program's output must show.
#[derive(Clone, Debug)]
enum Expect {
    /// A line exactly equal to this.
    Line(String),
    /// A line starting with this.
    LineStart(String),
    /// These lines, exactly, in this order (others may come between).
    InOrder(Vec<String>),
    /// Every line starting with the first string starts with the second.
    EveryStart(String, String),
}

fn check_expects(log: &str, expects: &[Expect]) -> Result<(), String> {
    let lines: Vec<&str> = log.lines().collect();
    for e in expects {
        match e {
            Expect::Line(l) => {
                if !lines.iter().any(|x| x == l) {
                    return Err(format!("expected the line: {l}"));
                }
            }
            Expect::LineStart(s) => {
                if !lines.iter().any(|x| x.starts_with(s.as_str())) {
                    return Err(format!("expected a line starting with: {s}"));
                }
            }
            Expect::EveryStart(some, all) => {
                if let Some(l) = lines
                    .iter()
                    .find(|x| x.starts_with(some.as_str()) && !x.starts_with(all.as_str()))
                {
                    return Err(format!(
                        "every line starting with {some:?} must start with {all:?}: {l}"
                    ));
                }
            }
            Expect::InOrder(want) => {
                let mut rest = lines.iter();
                for l in want {
                    if !rest.any(|x| x == l) {
                        return Err(format!("expected the lines {want:?} in this order"));
                    }
                }
            }
        }
    }
    if let Some(fail) = lines.iter().find(|l| l.starts_with("FAIL ")) {
        return Err(format!("the program failed: {fail}"));
    }
    Ok(())
}

/// What a user program's output must show, given its argv[0] as run.
type ExpectFn = Box<dyn Fn(&str) -> Vec<Expect>>;

/// A user program run as init (and, where it makes sense, natively on Linux).
struct UserTest {
    /// The program's name (or `shell-suite`, `fuzz`, ...).
    name: &'static str,
    /// init's argv: argv[0] is the path in the initramfs.
    argv: Vec<String>,
    /// init's exit status (128 + signal for a signal).
    status: u32,
    /// The signal that kills init, as the kernel names it.
    signal: Option<&'static str>,
    /// What the output must show.
    expect: ExpectFn,
    /// The configurations to boot it in.
    configs: &'static [(u32, u32, u32)],
    /// Also run it on the host (where it behaves the same on Linux).
    native: bool,
    /// Time limit of one QEMU boot.
    limit: Duration,
    /// Explains a failed QEMU run (see [`Case`]).
    explain: Option<Explain>,
    /// Needs Debian's packages (see [`Case`]).
    debian: bool,
}

impl UserTest {
    /// The name of its cases (the QEMU cases add the configuration): `user-NAME`, except fos's
    /// messaging and fleet tests (issue 12), named `msg-*` and `fleet-*`, the cores' stop and
    /// start, park and unpark under load (issue 14), `corectl-*` as the kernel's self-test of
    /// it, and the Linux behaviours of issue 16, `compat-*`, and the socket semantics of issue
    /// 15, `net-*`.
    fn case(&self) -> String {
        match self.name {
            "corestop" => "corectl-stop-start".into(),
            "corepark" => "corectl-park".into(),
            "coreupdate" => "corectl-update".into(),
            "msgring" => "msg-ring".into(),
            "mailbox" => "msg-mailbox".into(),
            "names" => "msg-names".into(),
            "twotier" => "msg-twotier".into(),
            "fleets" => "fleet-cores".into(),
            "compat" => "compat-calls".into(),
            "filemap" => "compat-filemap".into(),
            "locks" => "compat-locks".into(),
            "creds" => "compat-creds".into(),
            "jobs" => "compat-jobs".into(),
            "tasks" => "compat-tasks".into(),
            "eventfd" => "compat-eventfd".into(),
            "timers" => "compat-timers".into(),
            "mappings" => "compat-mappings".into(),
            "sched" => "compat-sched".into(),
            "fifo" => "compat-fifo".into(),
            "sigqueue" => "compat-signals".into(),
            "reap" => "compat-reap".into(),
            n if n.starts_with("debian-") => n.into(),
            "net" => "net-sockets".into(),
            "udhcpc" => "net-udhcpc".into(),
            // Kernel mode; nettest.rs has the server-mode case, `net-spoof-server-*`.
            "spoof" => "net-spoof-kernel".into(),
            n => format!("user-{n}"),
        }
    }
}

/// `qemu::net-udhcpc-1c1n`: busybox `udhcpc` asks QEMU's user network for a lease on `eth0`
/// (a packet socket's DHCP exchange through the kernel's switch, `net::dhcp`) and its script
/// prints what the lease says. The values come over the wire from QEMU's DHCP server: Reef
/// builds no DHCP message, the switch only routes the client's request out and the server's
/// reply back, and the script reads nothing but udhcpc's variables (the expected line is what
/// QEMU's server gives the first MAC that asks).
pub(crate) const UDHCPC: &str =
    "printf '#!/bin/sh\\n[ \"$1\" = bound ] && echo \"lease: ip=$ip subnet=$subnet \
router=$router dns=$dns interface=$interface\"\\nexit 0\\n' > /tmp/lease.sh && \
chmod 755 /tmp/lease.sh && udhcpc -i eth0 -n -q -f -s /tmp/lease.sh";

fn words(w: &[&str]) -> Vec<String> {
    w.iter().map(|s| s.to_string()).collect()
}

fn user_tests() -> Vec<UserTest> {
    let mut tests = Vec::new();
    for p in usr::PROGRAMS {
        let name = p.name;
        let mut argv = vec![format!("/test/{name}")];
        let expect: ExpectFn = match name {
            "hello" => Box::new(|argv0| vec![Expect::Line(format!("hello from {argv0}"))]),
            "args" | "args-pie" => {
                argv.push(args_expectation(ARGS_WORDS));
                argv.extend(words(ARGS_WORDS));
                Box::new(move |_| {
                    vec![
                        Expect::Line(format!(
                            "{name}: {} arguments match the expectation",
                            ARGS_WORDS.len()
                        )),
                        Expect::Line(format!("PASS {name}")),
                    ]
                })
            }
            // On Reef (the program in /test) the traced system calls must all come from the
            // core it updates to reef-trace, the last of 4c2n's.
            "coreupdate" => Box::new(|argv0| {
                let mut e = vec![Expect::Line("PASS coreupdate".into())];
                if argv0.starts_with("/test/") {
                    e.push(Expect::LineStart("reef-trace: core 3 ".into()));
                    e.push(Expect::EveryStart(
                        "reef-trace: ".into(),
                        "reef-trace: core 3 ".into(),
                    ));
                }
                e
            }),
            _ => Box::new(move |_| vec![Expect::Line(format!("PASS {name}"))]),
        };
        tests.push(UserTest {
            name,
            argv,
            status: 0,
            signal: None,
            expect,
            // fos (issue 12): one core, two nodes of one core each, four cores; fleets take
            // whole cores.
            configs: if matches!(
                name,
                "fleets" | "mailbox" | "names" | "msgring" | "twotier" | "haretest" | "haremount"
            ) {
                &[ONE_CORE, TWO_NODES, FOUR_CORES]
            } else if matches!(name, "spoof" | "hareexec") {
                // hareexec: without Hare, only a program's ties to its parent; the placements
                // are hare-exec-* (hare_cases).
                &[ONE_CORE]
            } else if name == "coreupdate" {
                &[FOUR_CORES]
            } else if name == "hareresize" {
                // Servers time-sharing two cores, or owning three of four.
                &[TWO_NODES, FOUR_CORES]
            } else if name == "corepark" {
                // Also two nodes of one core each: core 1 parked on core 0 of the other node,
                // which is then the only online core.
                &[ONE_CORE, TWO_NODES, FOUR_CORES]
            } else {
                &[ONE_CORE, FOUR_CORES]
            },
            native: true,
            // corestop: 300 core starts, each with a 10 ms INIT wait, under emulation;
            // corepark: 60 parks and unparks with workers sharing the hosts.
            limit: if matches!(name, "spawnloop" | "corestop" | "corepark") {
                LONG_LIMIT
            } else {
                LIMIT
            },
            explain: None,
            debian: false,
        });
    }
    tests.push(UserTest {
        name: "shell-suite",
        argv: words(&["/bin/sh", usr::SHELL_SUITE_RUNNER]),
        status: 0,
        signal: None,
        expect: Box::new(|_| vec![Expect::Line("PASS shell-suite".into())]),
        configs: &[ONE_CORE, FOUR_CORES],
        native: true,
        // Some 1300 processes and a few MiB through pipes and files, under emulation.
        limit: LONG_LIMIT,
        explain: None,
        debian: false,
    });
    // The fuzzer: a short campaign with a fixed seed, so that a failure repeats
    // (`cargo xtask fuzz` runs long ones; see docs/debugging.md). Natively it runs as nobody.
    tests.push(UserTest {
        name: "fuzz",
        argv: words(&[
            "/test/fuzz",
            "--calls",
            FUZZ_CALLS,
            "--seed",
            FUZZ_SEED,
            "--trace",
        ]),
        status: 0,
        signal: None,
        expect: Box::new(|_| vec![Expect::LineStart("fuzz: done calls=".into())]),
        configs: &[ONE_CORE, FOUR_CORES],
        native: true,
        limit: FUZZ_LIMIT,
        explain: Some(crate::fuzz::check_campaign),
        debian: false,
    });
    // Hare's Table 5.1 workloads (usr/fsload.c), each a few iterations per process on small
    // trees, with checks that nothing is lost or left (`cargo xtask bench hare` measures them).
    tests.push(UserTest {
        name: "fsload",
        argv: words(&["/test/fsload", "all", "-i", "4", "-s", "0", "/tmp"]),
        status: 0,
        signal: None,
        expect: Box::new(|_| vec![Expect::LineStart("fsload: done, ".into())]),
        configs: &[ONE_CORE, FOUR_CORES],
        native: true,
        limit: LIMIT,
        explain: None,
        debian: false,
    });
    tests.push(UserTest {
        name: "busybox-echo",
        argv: words(&["/bin/busybox", "echo", "hello", "world"]),
        status: 0,
        signal: None,
        expect: Box::new(|_| vec![Expect::Line("hello world".into())]),
        configs: &[ONE_CORE],
        native: true,
        limit: LIMIT,
        explain: None,
        debian: false,
    });
    tests.push(UserTest {
        name: "busybox-uname",
        argv: words(&["/bin/busybox", "uname", "-a"]),
        status: 0,
        signal: None,
        expect: Box::new(|_| vec![Expect::LineStart("Linux reef 6.1.0-reef".into())]),
        configs: &[ONE_CORE],
        native: false,
        limit: LIMIT,
        explain: None,
        debian: false,
    });
    tests.push(UserTest {
        name: "udhcpc",
        argv: words(&["/bin/sh", "-c", UDHCPC]),
        status: 0,
        signal: None,
        expect: Box::new(|_| {
            vec![Expect::Line(
                "lease: ip=10.0.2.15 subnet=255.255.255.0 router=10.0.2.2 dns=10.0.2.3 \
                 interface=eth0"
                    .into(),
            )]
        }),
        configs: &[ONE_CORE],
        native: false,
        limit: LIMIT,
        explain: None,
        debian: false,
    });
    tests.push(UserTest {
        name: "busybox-sh",
        argv: words(&["/bin/busybox", "sh", "-c", "echo a; echo b"]),
        status: 0,
        signal: None,
        expect: Box::new(|_| vec![Expect::InOrder(words(&["a", "b"]))]),
        configs: &[FOUR_CORES],
        native: true,
        limit: LIMIT,
        explain: None,
        debian: false,
    });
    tests.push(UserTest {
        name: "exit-status",
        argv: words(&["/bin/busybox", "sh", "-c", "exit 3"]),
        status: 3,
        signal: None,
        expect: Box::new(|_| Vec::new()),
        configs: &[ONE_CORE],
        native: true,
        limit: LIMIT,
        explain: None,
        debian: false,
    });
    tests.push(UserTest {
        name: "init-killed",
        argv: words(&["/test/hello", "segv"]),
        status: 128 + 11,
        signal: Some("SIGSEGV"),
        expect: Box::new(|argv0| vec![Expect::Line(format!("hello from {argv0}"))]),
        configs: &[ONE_CORE],
        native: true,
        limit: LIMIT,
        explain: None,
        debian: false,
    });
    // Debian's own programs (issue 16), dynamically linked, from the Debian image.
    for (name, script) in [
        ("debian-coreutils", "/test/debian/coreutils.sh"),
        ("debian-python", "/test/debian/python.sh"),
        ("debian-sqlite", "/test/debian/sqlite.sh"),
        ("debian-make", "/test/debian/make.sh"),
    ] {
        tests.push(UserTest {
            name,
            argv: words(&["/bin/sh", script]),
            status: 0,
            signal: None,
            expect: Box::new(move |_| vec![Expect::Line(format!("PASS {name}"))]),
            configs: &[ONE_CORE, FOUR_CORES],
            native: true,
            limit: LIMIT,
            explain: None,
            debian: true,
        });
    }
    tests
}

/// The line the kernel prints when init ends this way.
fn init_exit_line(status: u32, signal: Option<&str>) -> String {
    match signal {
        Some(s) => format!("reef: init exited with status {status} (killed by {s})"),
        None => format!("reef: init exited with status {status}"),
    }
}

fn user_cases() -> Result<Vec<Case>, String> {
    let mut cases = Vec::new();
    for t in user_tests() {
        let t = Rc::new(t);
        for &config in t.configs {
            let (cores, nodes, _) = config;
            let name = format!("{}-{cores}c{nodes}n", t.case());
            cases.push(user_case(&t, name, config, &[])?);
        }
    }
    Ok(cases)
}

/// The case that boots `t` as init in `config`, its argv after `prefix` (a launcher and its
/// arguments): the program's expectations, init's exit line and the power-off report.
fn user_case(
    t: &Rc<UserTest>,
    name: String,
    (cores, nodes, memory_mib): (u32, u32, u32),
    prefix: &[&str],
) -> Result<Case, String> {
    let argv: Vec<&str> = prefix
        .iter()
        .copied()
        .chain(t.argv.iter().map(String::as_str))
        .collect();
    let init = format!("init={}", argv[0]);
    let words: Vec<&str> = std::iter::once(init.as_str())
        .chain(argv[1..].iter().copied())
        .collect();
    let t2 = Rc::clone(t);
    Ok(Case {
        name,
        cores,
        nodes,
        memory_mib,
        cmdline: cmdline::join(&words)?,
        status: qemu_status_for_init(t.status),
        limit: t.limit,
        check: Box::new(move |_, o| {
            check_expects(&o.log, &(t2.expect)(&t2.argv[0]))?;
            let lines: Vec<&str> = o.log.lines().collect();
            let exit = init_exit_line(t2.status, t2.signal);
            if !lines.contains(&exit.as_str()) {
                return Err(format!("expected the line: {exit}"));
            }
            for start in [
                "reef: unimplemented syscalls: ",
                "reef: free memory: before init ",
            ] {
                if !lines.iter().any(|l| l.starts_with(start)) {
                    return Err(format!("expected a line starting with: {start}"));
                }
            }
            Ok(())
        }),
        script: Vec::new(),
        explain: t.explain,
        forwards: Vec::new(),
        nics: 1,
        debian: t.debian,
    })
}

/// The file-system programs on Hare (issue 13): `fileio`, `fsshare`, the shell suite and the
/// Table 5.1 workloads (`fsload`), each
/// run by `/test/onhare SERVERS /tmp ...` with Hare mounted over `/tmp` (where they keep their
/// files), on one core with one time-shared server and on 4c2n with one and three servers
/// (split: cores 1..SERVERS). Named `hare-NAME-CONFIG-Ns`; `fsload` also runs with every
/// technique of the §5.4 ablations switched off (`hare-fsload-4c2n-3s-ablated`). `fifo` runs
/// there too (its FIFOs Hare inodes), and `harekill` (operations cut short by `SIGKILL`), on
/// 1c1n and 4c2n with three servers. `hareexec`
/// runs under three `exec=` placements instead (`hare-exec-*`). `fileio`, `fsshare` and the
/// shell suite also boot with Hare as the root (`root=hare:LIST`, `hare-root-*`), and so do
/// `fleets` (`hare-root-fleets-4c2n`: `/bin/fleet` stays NR-FS's trusted manager). The
/// fuzzer's fixed-seed campaign runs with its files on Hare, a server time-sharing each of
/// four cores that its churner stops and starts (`hare-fuzz-4c2n-timeshare`): hostile
/// programs against the kernel's client and the servers behind it.
fn hare_cases() -> Result<Vec<Case>, String> {
    let mut cases = Vec::new();
    for t in user_tests() {
        if !matches!(
            t.name,
            "fileio"
                | "fsshare"
                | "shell-suite"
                | "fsload"
                | "hareexec"
                | "fifo"
                | "fuzz"
                | "harekill"
                | "fleets"
        ) {
            continue;
        }
        let t = Rc::new(t);
        if t.name == "fuzz" {
            let prefix = ["/test/onhare", "timeshare", "/tmp"];
            let name = "hare-fuzz-4c2n-timeshare".to_string();
            cases.push(user_case(&t, name, FOUR_CORES, &prefix)?);
            continue;
        }
        if t.name == "hareexec" {
            // §3.6's placement of execve: round robin over every core (servers time-sharing
            // them), random over the cores the servers leave (split), and the default, local.
            for (config, option, placement, label) in [
                (FOUR_CORES, "exec=rr", "timeshare", "rr-timeshare"),
                (FOUR_CORES, "exec=random", "split", "random-split"),
                (TWO_NODES, "cache=16", "timeshare", "local-timeshare"),
            ] {
                let (cores, nodes, _) = config;
                let name = format!("hare-exec-{label}-{cores}c{nodes}n");
                let prefix = ["/test/onhare", "-o", option, placement, "/tmp"];
                cases.push(user_case(&t, name, config, &prefix)?);
            }
            continue;
        }
        // Hare as the root (`root=hare:LIST`): the program and everything it uses from the
        // initramfs in Hare, time-sharing servers on LIST; `fleets` with its fleet manager,
        // `/bin/fleet`, still NR-FS's trusted one, and cores 1-3 free for its fleets.
        let roots: &[((u32, u32, u32), &str)] = match t.name {
            "fileio" | "fsshare" | "shell-suite" => &[(ONE_CORE, "0"), (FOUR_CORES, "0-3")],
            "fleets" => &[(FOUR_CORES, "0")],
            _ => &[],
        };
        for &(config, list) in roots {
            let (cores, nodes, _) = config;
            let name = format!("hare-root-{}-{cores}c{nodes}n", t.name);
            let mut case = user_case(&t, name, config, &[])?;
            case.cmdline = format!("root=hare:{list} {}", case.cmdline);
            let inner = case.check;
            case.check = Box::new(move |a, o| {
                expect(&o.log, "reef: hare: the root: ")?;
                inner(a, o)
            });
            cases.push(case);
        }
        if t.name == "fleets" {
            continue;
        }
        for (config, servers) in [(ONE_CORE, "1"), (FOUR_CORES, "1"), (FOUR_CORES, "3")] {
            // fsload's many processes on one server's client core: long, and no new path;
            // FIFOs' pipes are the kernel's, and harekill's operations cross servers, so one
            // server at 4c2n shows nothing new either.
            if matches!(t.name, "fsload" | "fifo" | "harekill")
                && config == FOUR_CORES
                && servers == "1"
            {
                continue;
            }
            let (cores, nodes, _) = config;
            let name = format!("hare-{}-{cores}c{nodes}n-{servers}s", t.name);
            let prefix = ["/test/onhare", servers, "/tmp"];
            cases.push(user_case(&t, name, config, &prefix)?);
        }
        if t.name == "fsload" {
            // Every §5.4 technique off (the mount options of the ablations).
            let prefix = [
                "/test/onhare",
                "-o",
                "nodist,nobcast,nolookupcache,noaffinity,nodirect",
                "3",
                "/tmp",
            ];
            let name = "hare-fsload-4c2n-3s-ablated".to_string();
            cases.push(user_case(&t, name, FOUR_CORES, &prefix)?);
        }
    }
    Ok(cases)
}

/// The interactive shell on the console terminal: ash's line editing and history, Ctrl-C on a
/// foreground job (status 130), background jobs, `fg`, Ctrl-Z stopping a job and `fg` and `bg`
/// continuing it, the kernel's canonical mode (erase, Ctrl-D), and `exit 0` powering off.
fn tty_cases() -> Vec<Case> {
    use Step::{Expect, Send};
    const PROMPT: &str = "/ # ";
    let script = vec![
        Expect(PROMPT),
        // ash edits the line itself (the terminal in non-canonical mode, no echo): DEL erases.
        Send("echo abX\x7fc\r"),
        Expect("\nabc\n"),
        Expect(PROMPT),
        // History: the up arrow brings the last line back.
        Send("\x1b[A\r"),
        Expect("\nabc\n"),
        Expect(PROMPT),
        // Ctrl-C reaches the foreground job once it runs (it printed "started").
        Send("sh -c 'echo started; exec sleep 1000'\r"),
        Expect("\nstarted\n"),
        Send("\x03"),
        Expect(PROMPT),
        Send("echo rc=$?\r"),
        Expect("\nrc=130\n"),
        Expect(PROMPT),
        // ... and a process that computes and never reads. Not the interactive shell itself:
        // ash's SIGINT handler longjmps out of wherever the shell is, and a Ctrl-C sent while
        // its own `echo` is still inside glibc's stdio (between the `cmpxchg` that takes
        // stdout's lock and the store of its owner, a translated-block boundary under TCG)
        // leaves that lock taken by no one, so the next prompt waits on it for ever (seen about
        // once in 300 runs; ash's problem, not the kernel's). Nor `/bin/echo` printing the line:
        // ash takes the terminal back only after that child has exited, so a Ctrl-C sent right
        // after its line can reach the finished job's group. A non-interactive `sh -c` prints
        // and loops in one process, which SIGINT's default action ends.
        Send("sh -c 'echo looping; while :; do :; done'\r"),
        Expect("\nlooping\n"),
        Send("\x03"),
        Expect(PROMPT),
        Send("echo rc=$?\r"),
        Expect("\nrc=130\n"),
        Expect(PROMPT),
        // Background jobs.
        Send("sleep 1000 &\r"),
        Expect(PROMPT),
        Send("jobs\r"),
        Expect("Running"),
        Expect(PROMPT),
        Send("kill %1; wait %1; echo rc=$?\r"),
        Expect("\nrc=143\n"),
        Expect(PROMPT),
        Send("sleep 1 & fg; echo fg=$?\r"),
        Expect("\nfg=0\n"),
        Expect(PROMPT),
        // Ctrl-Z stops the foreground job (blocked in a read of the terminal); `jobs` shows it
        // stopped; `fg` continues it and its read carries on.
        Send("sh -c 'echo started; read x; echo got=$x'\r"),
        Expect("\nstarted\n"),
        Send("\x1a"),
        Expect("Stopped"),
        Expect(PROMPT),
        Send("jobs\r"),
        Expect("Stopped"),
        Expect(PROMPT),
        Send("fg\r"),
        Expect("read x"),
        Send("hi\r"),
        Expect("\ngot=hi\n"),
        Expect(PROMPT),
        // `bg` continues a stopped job in the background.
        Send("sh -c 'echo slept; exec sleep 1000'\r"),
        Expect("\nslept\n"),
        Send("\x1a"),
        Expect("Stopped"),
        Expect(PROMPT),
        Send("bg\r"),
        Expect(PROMPT),
        Send("jobs\r"),
        Expect("Running"),
        Expect(PROMPT),
        Send("kill %1; wait %1; echo rc=$?\r"),
        Expect("\nrc=143\n"),
        Expect(PROMPT),
        // The kernel's canonical mode: echo, erase, one line per read, Ctrl-D at end of file.
        Send("echo ready; cat\r"),
        Expect("\nready\n"),
        Send("helX\x7flo\r"),
        Expect("helX\x08 \x08lo\nhello\n"),
        Send("\x04"),
        Expect(PROMPT),
        Send("echo rc=$?\r"),
        Expect("\nrc=0\n"),
        Expect(PROMPT),
        Send("exit 0\r"),
    ];
    vec![Case {
        name: "tty-shell-2c1n".into(),
        cores: 2,
        nodes: 1,
        memory_mib: 256,
        cmdline: "init=/bin/sh -i".into(),
        status: 0,
        limit: LIMIT,
        check: Box::new(|_, o| expect(&o.log, &init_exit_line(0, None))),
        script,
        explain: None,
        forwards: Vec::new(),
        nics: 1,
        debian: false,
    }]
}

fn all_cases() -> Result<Vec<Case>, String> {
    let mut cases = kernel_cases();
    cases.extend(user_cases()?);
    cases.extend(hare_cases()?);
    cases.extend(tty_cases());
    cases.extend(crate::nettest::cases()?);
    Ok(cases)
}

fn machine(c: &Case) -> Machine {
    Machine {
        cores: c.cores,
        nodes: c.nodes,
        memory_mib: c.memory_mib,
        accel: Accel::detect(),
        forwards: c.forwards.clone(),
        nics: c.nics,
        pcap: None,
    }
}

fn cargo() -> Command {
    let mut c = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
    c.current_dir(build::root());
    c
}

/// Unit and integration tests of every host crate, then the loom model checks of `lib/nr` and
/// `lib/msg` (built with `--cfg loom` in a target directory of their own, so the two builds do
/// not invalidate each other).
fn host_tests() -> Result<bool, String> {
    eprintln!("xtask: host tests (cargo test --workspace)");
    let unit = cargo()
        .args(["test", "--workspace", "--exclude", "nr-bench"])
        .status()
        .map_err(|e| format!("cannot run cargo: {e}"))?;
    eprintln!(
        "xtask: loom model checks (RUSTFLAGS='--cfg loom' cargo test -p nr -p msg --release --test loom)"
    );
    let loom = cargo()
        .args([
            "test",
            "-p",
            "nr",
            "-p",
            "msg",
            "--release",
            "--test",
            "loom",
        ])
        .env("RUSTFLAGS", "--cfg loom")
        .env("CARGO_TARGET_DIR", build::root().join("target/loom"))
        .status()
        .map_err(|e| format!("cannot run cargo: {e}"))?;
    Ok(unit.success() && loom.success())
}

fn report(group: &str, name: &str, verdict: Result<(), String>, o: &Outcome, how: &str) -> bool {
    match verdict {
        Ok(()) => {
            println!(
                "test {group}::{name} ... ok ({:.1} s)",
                o.wall.as_secs_f64()
            );
            true
        }
        Err(why) => {
            println!(
                "test {group}::{name} ... FAILED after {:.1} s: {why}",
                o.wall.as_secs_f64()
            );
            println!("---- log of {group}::{name} ({how}) ----");
            // The fuzzer's trace (a line per call) is left out: the verdict has the last calls.
            let trace = o.log.lines().filter(|l| l.starts_with("fuzz: T ")).count();
            for l in o.log.lines().filter(|l| !l.starts_with("fuzz: T ")) {
                println!("{l}");
            }
            if trace > 0 {
                println!("({trace} trace lines `fuzz: T ...` left out)");
            }
            println!("---- end of log ----");
            false
        }
    }
}

/// How a user test's argv (initramfs paths) runs on the host: the program and its arguments.
/// `/test/sh/FILE` is `usr/sh/FILE` of the checkout, `/test/NAME` the built `out/usr/NAME`;
/// `/bin/busybox` is the host's, and `/bin/APPLET` is `/bin/busybox APPLET`, as the host's
/// `/bin/sh` (and the like) need not be busybox.
fn native_argv(argv: &[String]) -> (PathBuf, Vec<String>) {
    let host = |word: &str| -> String {
        match word.strip_prefix("/test/sh/") {
            Some(file) => build::root()
                .join(usr::SHELL_SUITE_DIR)
                .join(file)
                .to_string_lossy()
                .into_owned(),
            None => match word.strip_prefix("/test/debian/") {
                Some(file) => build::root()
                    .join(crate::debian::SCRIPTS_DIR)
                    .join(file)
                    .to_string_lossy()
                    .into_owned(),
                None => word.to_string(),
            },
        }
    };
    let rest = argv[1..].iter().map(|w| host(w));
    if argv[0] == deps::BUSYBOX.program {
        (PathBuf::from(&argv[0]), rest.collect())
    } else if let Some(applet) = argv[0].strip_prefix("/bin/") {
        (
            PathBuf::from(deps::BUSYBOX.program),
            std::iter::once(applet.to_string()).chain(rest).collect(),
        )
    } else if let Some(name) = argv[0].strip_prefix("/test/") {
        (usr::program_path(name), rest.collect())
    } else {
        (PathBuf::from(&argv[0]), rest.collect())
    }
}

/// A directory of symlinks to the host's busybox, one per applet, like the initramfs's `/bin`;
/// removed when dropped.
struct AppletDir(PathBuf);

impl AppletDir {
    fn new() -> Result<AppletDir, String> {
        let busybox = Path::new(deps::BUSYBOX.program);
        let dir = std::env::temp_dir().join(format!("reef-busybox-bin.{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        let made = AppletDir(dir);
        for a in usr::applets(busybox)? {
            let link = made.0.join(&a);
            std::os::unix::fs::symlink(busybox, &link)
                .map_err(|e| format!("cannot create {}: {e}", link.display()))?;
        }
        Ok(made)
    }
}

impl Drop for AppletDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The user programs run directly on this (Linux) machine: they must pass here too.
fn linux_tests(filter: Option<&str>) -> Result<(usize, usize), String> {
    let tests: Vec<UserTest> = user_tests()
        .into_iter()
        .filter(|t| t.native)
        .filter(|t| filter.is_none_or(|f| t.case().contains(f)))
        .collect();
    if tests.is_empty() {
        return Ok((0, 0));
    }
    usr::build_programs()?;
    if tests.iter().any(|t| t.debian) {
        deps::ensure(deps::DEBIAN_NATIVE)?;
    }
    let busybox = Path::new(deps::BUSYBOX.program);
    let applets = if tests.iter().any(|t| native_argv(&t.argv).0 == busybox) {
        deps::ensure(&[deps::BUSYBOX])?;
        Some(AppletDir::new()?)
    } else {
        None
    };
    let (mut passed, mut failed) = (0, 0);
    for t in &tests {
        let (program, args) = native_argv(&t.argv);
        let argv0 = program.to_string_lossy().into_owned();
        let mut cmd = Command::new(&program);
        cmd.args(&args);
        default_signals(&mut cmd);
        if let Some(dir) = applets.as_ref().filter(|_| program == busybox) {
            // init's environment on Reef (its PATH is /bin:/usr/local/bin:/usr/bin:/test),
            // with the applets in place of /bin and the programs in place of /test.
            let path = [
                dir.0.clone(),
                "/usr/local/bin".into(),
                "/usr/bin".into(),
                usr::out_dir(),
            ];
            let path = std::env::join_paths(path).map_err(|e| format!("cannot make PATH: {e}"))?;
            cmd.env_clear()
                .env("HOME", "/")
                .env("TERM", "linux")
                .env("PATH", path);
        }
        let o = collect(cmd, NATIVE_LIMIT, || {})?;
        let want = match t.signal {
            Some(_) => End::Signaled(t.status as i32 - 128),
            None => End::Exited(t.status as i32),
        };
        let verdict = if o.end != want {
            Err(format!("ended {:?}, expected {want:?}", o.end))
        } else {
            check_expects(&o.log, &(t.expect)(&argv0))
        };
        let how = format!("{argv0} {args:?}");
        if report("linux", &t.case(), verdict, &o, &how) {
            passed += 1;
        } else {
            failed += 1;
        }
    }
    Ok((passed, failed))
}

/// Makes a natively run program start as init starts programs on Reef: every signal at its
/// default action (std already unblocks them all). A caller that ignores one (`nohup` ignores
/// SIGHUP) would otherwise pass that on through fork and exec, and a shell may not undo it
/// (POSIX): the shell suite's `kill -s HUP` of a background job would then do nothing.
fn default_signals(cmd: &mut Command) {
    use std::os::unix::process::CommandExt;
    // SAFETY: the closure runs in the child between fork and exec and only calls signal(2),
    // which is async-signal-safe; it allocates nothing and touches no state of the parent.
    unsafe {
        cmd.pre_exec(|| {
            for sig in 1..=31 {
                if sig != libc::SIGKILL && sig != libc::SIGSTOP {
                    libc::signal(sig, libc::SIG_DFL);
                }
            }
            Ok(())
        });
    }
}

fn qemu_tests(filter: Option<&str>) -> Result<(usize, usize), String> {
    deps::ensure(&[deps::QEMU, deps::QBOOT, deps::OBJCOPY])?;
    let cases: Vec<Case> = all_cases()?
        .into_iter()
        .filter(|c| filter.is_none_or(|f| c.name.contains(f)))
        .collect();
    if cases.is_empty() {
        return Ok((0, 0));
    }
    let kernel = build::kernel()?;
    let lean = usr::initramfs()?;
    let debian = match cases.iter().any(|c| c.debian) {
        true => Some(crate::debian::initramfs()?),
        false => None,
    };
    let (mut passed, mut failed) = (0, 0);
    let sock = std::env::temp_dir().join(format!("reef-test-{}.monitor", std::process::id()));
    for case in &cases {
        let m = machine(case);
        let initrd = match &debian {
            Some(d) if case.debian => d,
            _ => &lean,
        };
        // Every case is asked where it is if it hangs: at its time limit, or (scripted) when
        // an expected output does not come.
        let mut registers = String::new();
        let _ = std::fs::remove_file(&sock);
        let cmd = m.command(
            &kernel.image,
            initrd,
            &case.cmdline,
            Console::Watched(&sock),
        );
        let on_hang = || registers = monitor::ask_hung(&sock);
        let (mut o, script) = if case.script.is_empty() {
            (collect(cmd, case.limit, on_hang)?, Ok(()))
        } else {
            let host_port = case.forwards.first().map_or(0, |f| f.host);
            converse(cmd, &case.script, case.limit, host_port, on_hang)?
        };
        let verdict = script.and_then(|()| match o.end {
            End::TimedOut => Err(format!("no exit within {} s", case.limit.as_secs())),
            End::Exited(s) if s != case.status => Err(format!(
                "exit status {s} ({}), expected {} ({})",
                describe_status(s),
                case.status,
                describe_status(case.status)
            )),
            End::Signaled(sig) => Err(format!("QEMU was killed by signal {sig}")),
            End::Exited(_) => (case.check)(&m, &o),
        });
        let verdict = match (verdict, case.explain, o.end) {
            (Err(why), Some(explain), End::Exited(s)) => match explain(&o.log, s) {
                Err(more) => Err(format!("{why}: {more}")),
                Ok(()) => Err(why),
            },
            (v, _, _) => v,
        };
        if verdict.is_err() {
            o.log = monitor::name_backtraces(&o.log, &kernel.elf);
            if !registers.is_empty() {
                o.log
                    .push_str("xtask: where each vCPU was when it hung (QEMU's monitor):\n");
                for l in monitor::where_each_cpu_was(&registers, &kernel.elf) {
                    o.log.push_str(&format!("xtask: {l}\n"));
                }
            }
        }
        let how = format!(
            "{:?}",
            m.command(&kernel.image, initrd, &case.cmdline, Console::Piped)
        );
        if report("qemu", &case.name, verdict, &o, &how) {
            passed += 1;
        } else {
            failed += 1;
        }
    }
    let _ = std::fs::remove_file(&sock);
    Ok((passed, failed))
}

/// `cargo xtask test`.
pub fn main(args: &[String]) -> Result<u8, String> {
    let (mut host, mut linux, mut qemu) = (true, true, true);
    let mut filter = None;
    for a in args {
        match a.as_str() {
            "--host-only" => qemu = false,
            "--qemu-only" => (host, linux) = (false, false),
            "--linux-only" => (host, qemu) = (false, false),
            f if !f.starts_with('-') => filter = Some(f.to_string()),
            other => return Err(format!("unknown option '{other}'")),
        }
    }
    let host_ok = if host { host_tests()? } else { true };
    let (lpassed, lfailed) = if linux {
        linux_tests(filter.as_deref())?
    } else {
        (0, 0)
    };
    let (passed, failed) = if qemu {
        qemu_tests(filter.as_deref())?
    } else {
        (0, 0)
    };
    if linux {
        println!("linux: {lpassed} passed, {lfailed} failed");
    }
    if qemu {
        println!("qemu: {passed} passed, {failed} failed");
    }
    if !host_ok {
        println!("xtask: host tests failed");
    }
    Ok(if host_ok && failed == 0 && lfailed == 0 {
        0
    } else {
        1
    })
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
    if runs == 0 {
        return Err("--runs must be at least 1".into());
    }
    deps::ensure(&[deps::QEMU, deps::QBOOT, deps::OBJCOPY])?;
    let kernel = build::kernel()?;
    let initrd = usr::initramfs()?;
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
            forwards: Vec::new(),
            nics: 1,
            pcap: None,
        };
        let mut kernel_ms = Vec::new();
        let mut wall_ms = Vec::new();
        for _ in 0..runs {
            let o = boot(&m, &kernel.image, &initrd, "poweroff", LIMIT)?;
            if o.end != End::Exited(0) {
                return Err(format!(
                    "boot of {cores}c{nodes}n failed ({:?}):\n{}",
                    o.end, o.log
                ));
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

#[cfg(test)]
mod unit {
    use super::*;

    #[test]
    fn init_status_mapping() {
        assert_eq!(qemu_status_for_init(0), 0);
        assert_eq!(qemu_status_for_init(1), 35);
        assert_eq!(qemu_status_for_init(3), 39);
        assert_eq!(qemu_status_for_init(110), 253);
        assert_eq!(qemu_status_for_init(111), 255);
        assert_eq!(qemu_status_for_init(139), 255);
        for n in 1..=110 {
            assert_eq!(
                describe_status(qemu_status_for_init(n)),
                format!("init exited with status {n}")
            );
        }
        assert!(describe_status(255).contains("111 or more"));
        assert_eq!(describe_status(3), "kernel panic");
    }

    #[test]
    fn every_program_has_a_case_per_configuration() {
        let cases = user_cases().unwrap();
        let tests = user_tests();
        for p in usr::PROGRAMS {
            let t = tests.iter().find(|t| t.name == p.name).unwrap();
            // Every program on one core but coreupdate (which needs another core to update)
            // and hareresize (a second server needs a second core); all but spoof (whose
            // server-mode case is on four cores, nettest.rs) and hareexec (whose placements are
            // the hare-exec-* cases) on four cores.
            let cfgs: &[&str] = match p.name {
                "spoof" | "hareexec" => &["1c1n"],
                "coreupdate" => &["4c2n"],
                "hareresize" => &["2c2n", "4c2n"],
                _ => &["1c1n", "4c2n"],
            };
            for cfg in cfgs {
                let name = format!("{}-{cfg}", t.case());
                let case = cases.iter().find(|c| c.name == name);
                let case = case.unwrap_or_else(|| panic!("no case {name}"));
                assert!(
                    case.cmdline.starts_with(&format!("init=/test/{} ", p.name))
                        || case.cmdline == format!("init=/test/{}", p.name)
                );
                assert_eq!(case.status, 0);
            }
        }
        let exit3 = cases
            .iter()
            .find(|c| c.name.starts_with("user-exit-status"))
            .unwrap();
        assert_eq!(exit3.cmdline, r#"init=/bin/busybox sh -c "exit 3""#);
        assert_eq!(exit3.status, 39);
        // The filters `user`, `msg-`, `fleet-` and the issues' own prefixes together select
        // exactly the user cases, and issue 12's cases are named as it asks; only the `debian-`
        // cases boot the Debian image.
        let all = all_cases().unwrap();
        let named = |c: &Case| {
            [
                "user",
                "msg-",
                "fleet-",
                "corectl-stop",
                "corectl-park",
                "corectl-update",
                "compat-",
                "net-sockets",
                "net-spoof-kernel",
                "net-udhcpc-1c1n",
                "debian-",
            ]
            .iter()
            .any(|f| c.name.contains(f))
        };
        assert_eq!(all.iter().filter(|c| named(c)).count(), cases.len());
        for c in &all {
            assert_eq!(c.debian, c.name.starts_with("debian-"), "{}", c.name);
        }
        for n in [
            "msg-ring-4c2n",
            "msg-mailbox-2c2n",
            "msg-names-1c1n",
            "fleet-cores-2c2n",
            "corectl-stop-start-4c2n",
            "corectl-park-4c2n",
            "corectl-update-4c2n",
        ] {
            assert!(cases.iter().any(|c| c.name == n), "no case {n}");
        }
    }

    #[test]
    fn shell_suite_has_a_case_per_configuration() {
        let cases = user_cases().unwrap();
        for (cfg, cores, nodes) in [("1c1n", 1, 1), ("4c2n", 4, 2)] {
            let name = format!("user-shell-suite-{cfg}");
            let case = cases.iter().find(|c| c.name == name);
            let case = case.unwrap_or_else(|| panic!("no case {name}"));
            assert_eq!(case.cmdline, "init=/bin/sh /test/sh/run.sh");
            assert_eq!((case.cores, case.nodes), (cores, nodes));
            assert_eq!(case.status, 0);
            assert_eq!(case.limit, LONG_LIMIT);
            let m = machine(case);
            let outcome = |log: &str| Outcome {
                log: log.into(),
                end: End::Exited(0),
                wall: Duration::ZERO,
            };
            let report = "reef: init exited with status 0\n\
                          reef: unimplemented syscalls: none\n\
                          reef: free memory: before init 1 KiB, at power-off 1 KiB\n";
            let good = format!("ok files\nPASS shell-suite\n{report}");
            assert_eq!((case.check)(&m, &outcome(&good)), Ok(()));
            let bad = format!("FAIL files: output differs\nPASS shell-suite\n{report}");
            assert!((case.check)(&m, &outcome(&bad)).is_err());
            assert!((case.check)(&m, &outcome(report)).is_err());
        }
        // Natively: the host's busybox runs the checkout's runner.
        let suite = user_tests()
            .into_iter()
            .find(|t| t.name == "shell-suite")
            .unwrap();
        assert!(suite.native);
        let (program, args) = native_argv(&suite.argv);
        assert_eq!(program, Path::new("/bin/busybox"));
        assert_eq!(args[0], "sh");
        assert_eq!(
            Path::new(&args[1]),
            build::root().join("usr/sh/run.sh").as_path()
        );
        assert!(Path::new(&args[1]).is_file());
        let (program, args) = native_argv(&words(&["/test/hello", "segv"]));
        assert_eq!(program, usr::program_path("hello"));
        assert_eq!(args, ["segv"]);
        let (program, args) = native_argv(&words(&["/bin/busybox", "echo", "hi"]));
        assert_eq!(program, Path::new("/bin/busybox"));
        assert_eq!(args, ["echo", "hi"]);
    }

    #[test]
    fn fuzz_cases_have_a_fixed_seed_and_explain_failures() {
        let cases = user_cases().unwrap();
        for (cfg, cores, nodes) in [("1c1n", 1, 1), ("4c2n", 4, 2)] {
            let name = format!("user-fuzz-{cfg}");
            let case = cases.iter().find(|c| c.name == name);
            let case = case.unwrap_or_else(|| panic!("no case {name}"));
            assert_eq!(
                case.cmdline,
                format!("init=/test/fuzz --calls {FUZZ_CALLS} --seed {FUZZ_SEED} --trace")
            );
            assert_eq!((case.cores, case.nodes, case.status), (cores, nodes, 0));
            assert_eq!(case.limit, FUZZ_LIMIT);
            let m = machine(case);
            let outcome = |log: &str| Outcome {
                log: log.into(),
                end: End::Exited(0),
                wall: Duration::ZERO,
            };
            let good = "fuzz: done calls=15000 seed=1 workers=1\n\
                        reef: init exited with status 0\n\
                        reef: unimplemented syscalls: none\n\
                        reef: free memory: before init 1 KiB, at power-off 1 KiB\n";
            assert_eq!((case.check)(&m, &outcome(good)), Ok(()));
            let panic = "fuzz: last w0 g1 #7 pid=3 mmap(0, 0x1000, 0x3, 0x21, 0, 0) = ?\n\
                         reef: panic on core 0 at src/x.rs:1:1: boom\n";
            let why = (case.explain.unwrap())(panic, 3).unwrap_err();
            assert!(why.starts_with("kernel panic"), "{why}");
            assert!(why.contains("worker 0: last: w0 g1 #7"), "{why}");
        }
        let fuzz = user_tests().into_iter().find(|t| t.name == "fuzz").unwrap();
        assert!(fuzz.native);
        assert_eq!(native_argv(&fuzz.argv).0, usr::program_path("fuzz"));
        assert!(usr::TOOLS.iter().any(|p| p.name == "fuzz"));
    }

    #[test]
    fn args_case_carries_every_word() {
        let case = user_cases()
            .unwrap()
            .into_iter()
            .find(|c| c.name == "user-args-1c1n")
            .unwrap();
        let words = cmdline::split(&case.cmdline).unwrap();
        assert_eq!(words[0], "init=/test/args");
        assert_eq!(words[1], args_expectation(ARGS_WORDS));
        assert_eq!(&words[2..], ARGS_WORDS);
        assert_eq!(args_expectation(&["hi", ""]), "expect=2:6869,");
    }

    #[test]
    fn user_checks_need_the_exit_and_report_lines() {
        let case = user_cases()
            .unwrap()
            .into_iter()
            .find(|c| c.name == "user-exit-status-1c1n")
            .unwrap();
        let m = machine(&case);
        let outcome = |log: &str| Outcome {
            log: log.into(),
            end: End::Exited(39),
            wall: Duration::ZERO,
        };
        let good = "reef: init exited with status 3\n\
                    reef: unimplemented syscalls: none\n\
                    reef: free memory: before init 1000 KiB, at power-off 1000 KiB\n";
        assert_eq!((case.check)(&m, &outcome(good)), Ok(()));
        let wrong = good.replace("status 3", "status 4");
        assert!((case.check)(&m, &outcome(&wrong)).is_err());
        let no_report = good.replace("unimplemented", "unknown");
        assert!((case.check)(&m, &outcome(&no_report)).is_err());

        let killed = user_cases()
            .unwrap()
            .into_iter()
            .find(|c| c.name == "user-init-killed-1c1n")
            .unwrap();
        assert_eq!(killed.status, 255);
        let log = "hello from /test/hello\n\
                   reef: init exited with status 139 (killed by SIGSEGV)\n\
                   reef: unimplemented syscalls: none\n\
                   reef: free memory: before init 1 KiB, at power-off 1 KiB\n";
        assert_eq!((killed.check)(&m, &outcome(log)), Ok(()));
    }

    #[test]
    fn conversation_waits_for_output_before_typing() {
        let script = [
            Step::Send("one\n"),
            Step::Expect("got=one\n"),
            Step::Send("two\n"),
            Step::Expect("got=two"),
        ];
        let mut cmd = Command::new("sh");
        cmd.args(["-c", "read a; echo got=$a; read b; echo got=$b; exit 4"]);
        let (o, verdict) = converse(cmd, &script, LIMIT, 0, || {}).unwrap();
        assert_eq!(verdict, Ok(()));
        assert_eq!(o.end, End::Exited(4));
        assert_eq!(o.log, "got=one\ngot=two\n");
    }

    #[test]
    fn conversation_fails_on_missing_output_and_says_what_was_typed() {
        let script = [
            Step::Send("echo one\n"),
            Step::Expect("one"),
            Step::Expect("one"),
        ];
        let mut cmd = Command::new("sh");
        cmd.args(["-c", "read x; echo $x"]);
        let (o, verdict) = converse(cmd, &script, LIMIT, 0, || {}).unwrap();
        let why = verdict.unwrap_err();
        assert!(why.starts_with("step 3: expected \"one\""), "{why}");
        assert!(why.contains("typed so far: [\"echo one\\n\"]"), "{why}");
        assert_eq!(o.log, "echo one\n");
    }

    #[test]
    fn expectations() {
        let log = "x\na\nFAILED? no\nb\n";
        assert!(check_expects(log, &[Expect::InOrder(words(&["a", "b"]))]).is_ok());
        assert!(check_expects(log, &[Expect::InOrder(words(&["b", "a"]))]).is_err());
        assert!(check_expects(log, &[Expect::Line("a".into())]).is_ok());
        assert!(check_expects(log, &[Expect::Line("FAILED".into())]).is_err());
        assert!(check_expects(log, &[Expect::LineStart("FAILED".into())]).is_ok());
        assert!(check_expects("PASS x\nFAIL x: y\n", &[Expect::Line("PASS x".into())]).is_err());
    }
}
