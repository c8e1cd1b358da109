//! QEMU's monitor and the kernel ELF, for saying where a guest was: the registers of every
//! vCPU (`info registers -a`), an NMI (the kernel prints every core's scheduler state, `reef:
//! nmi:` lines), and `addr2line` for the kernel's return addresses and instruction pointers.
//! The fuzzer (`fuzz.rs`) and the QEMU tests (`tests.rs`) use it when a guest hangs.

use std::io::{Read, Write};
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

/// The `-monitor` argument for a monitor on the Unix socket `sock` that QEMU does not wait for.
pub fn argument(sock: &Path) -> String {
    format!("unix:{},server=on,wait=off", sock.display())
}

/// Sends `command` to QEMU's monitor (a Unix socket) and returns its answer: `info registers
/// -a` for every vCPU's registers, `nmi` for the kernel's scheduler dump (`reef: nmi:` lines on
/// the console).
pub fn ask(sock: &Path, command: &str) -> Result<String, String> {
    use std::os::unix::net::UnixStream;
    let mut s = UnixStream::connect(sock).map_err(|e| format!("monitor: {e}"))?;
    s.set_read_timeout(Some(Duration::from_millis(500)))
        .map_err(|e| e.to_string())?;
    s.write_all(format!("{command}\n").as_bytes())
        .map_err(|e| format!("monitor: {e}"))?;
    let mut out = Vec::new();
    let start = Instant::now();
    let mut buf = [0u8; 8192];
    while start.elapsed() < Duration::from_secs(5) {
        match s.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => out.extend_from_slice(&buf[..n]),
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                if !out.is_empty() {
                    break;
                }
            }
            Err(e) => return Err(format!("monitor: {e}")),
        }
    }
    Ok(String::from_utf8_lossy(&out).into_owned())
}

/// Reads every vCPU's registers from the monitor at `sock`, then sends an NMI and gives the
/// kernel two seconds to print its scheduler state on the console: what a hung guest is asked
/// before it is killed. Returns the registers (or why they could not be read).
pub fn ask_hung(sock: &Path) -> String {
    let registers = ask(sock, "info registers -a").unwrap_or_else(|e| e);
    if ask(sock, "nmi").is_ok() {
        std::thread::sleep(Duration::from_secs(2));
    }
    registers
}

/// The `RIP=...` of every vCPU in QEMU's `info registers -a` output, in order.
pub fn rips(registers: &str) -> Vec<u64> {
    registers
        .split_whitespace()
        .filter_map(|w| w.strip_prefix("RIP="))
        .filter_map(|h| u64::from_str_radix(h, 16).ok())
        .collect()
}

/// `addr2line -a -f -i -p -C -e ELF ADDR...`: function and line of each address (one string
/// each), with the functions inlined there: the innermost first, each caller after a ` < `
/// (`block at ... < wait at ... < futex at ...`), so that an address in a function that
/// inlines much (a system call's `dispatch`) says which call it is in.
pub fn addr2line(elf: &Path, addrs: &[u64]) -> Vec<String> {
    if addrs.is_empty() {
        return Vec::new();
    }
    let out = Command::new("addr2line")
        .args(["-a", "-f", "-i", "-p", "-C", "-e"])
        .arg(elf)
        .args(addrs.iter().map(|a| format!("{a:#x}")))
        .output();
    let Ok(out) = out else {
        return Vec::new();
    };
    let mut places: Vec<String> = Vec::with_capacity(addrs.len());
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        if let Some(caller) = line.trim_start().strip_prefix("(inlined by) ") {
            if let Some(place) = places.last_mut() {
                place.push_str(" < ");
                place.push_str(caller);
            }
        } else {
            // `0xADDR: function at file:line`
            let place = line.split_once(": ").map_or(line, |(_, place)| place);
            places.push(place.to_string());
        }
    }
    places
}

/// The return addresses of a kernel report's `backtrace:` line (none for any other line).
pub fn backtrace(line: &str) -> Vec<u64> {
    line.split_once("backtrace:")
        .map_or(Vec::new(), |(_, rest)| {
            rest.split_whitespace()
                .filter_map(|a| u64::from_str_radix(a.trim_start_matches("0x"), 16).ok())
                .collect()
        })
}

/// `log` with each kernel `backtrace:` line followed by its addresses named, one per line.
pub fn name_backtraces(log: &str, elf: &Path) -> String {
    let mut out = String::with_capacity(log.len());
    for line in log.lines() {
        out.push_str(line);
        out.push('\n');
        let chain = backtrace(line);
        for (ret, place) in chain.iter().zip(addr2line(elf, &chain)) {
            out.push_str(&format!("  {ret:#x} {place}\n"));
        }
    }
    out
}

/// One line per vCPU of `registers`: its `RIP` and, named, the kernel function and line.
pub fn where_each_cpu_was(registers: &str, elf: &Path) -> Vec<String> {
    let r = rips(registers);
    if r.is_empty() {
        return vec![registers.trim().to_string()];
    }
    let places = addr2line(elf, &r);
    r.iter()
        .enumerate()
        .map(|(cpu, rip)| {
            let place = places.get(cpu).map_or("", String::as_str);
            format!("cpu {cpu}: RIP={rip:#018x} {place}")
        })
        .collect()
}

#[cfg(test)]
mod unit {
    use super::*;

    #[test]
    fn monitor_output_gives_each_rip() {
        let regs = "CPU#0\nRAX=0000000000000000 RBX=0000000000000001\n\
                    RSI=0 RDI=0 RBP=0 RSP=ffffffff80200000\n\
                    R8 =0 R9 =0\nRIP=ffffffff80101234 RFL=00000046 [---Z-P-] CPL=0\n\
                    CPU#1\nRIP=0000000000401000 RFL=00000202\n";
        assert_eq!(rips(regs), [0xffffffff80101234, 0x401000]);
    }

    #[test]
    fn backtrace_lines_give_their_addresses() {
        assert_eq!(
            backtrace("reef:   backtrace: 0xffffffff80101234 0xffffffff80105678"),
            [0xffffffff80101234, 0xffffffff80105678]
        );
        assert!(backtrace("reef: panic on core 1 at src/mm/mod.rs:10:5").is_empty());
    }
}
