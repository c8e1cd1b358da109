//! Leaving the machine: ACPI soft-off, and QEMU's `isa-debug-exit` device for failure statuses.
//!
//! Exit statuses seen by whoever started QEMU (documented in docs/debugging.md):
//! - 0: clean power-off through ACPI S5 (`poweroff` on the command line);
//! - `2 * code + 1` for a code written to `isa-debug-exit` (port 0xF4): see [`ExitCode`];
//! - `33 + 2 * min(n, 111)` when init exits with a non-zero status `n` ([`exit_init_status`]).

use super::cpu;

/// Reasons for leaving QEMU through `isa-debug-exit`. QEMU exits with status `2 * code + 1`.
#[derive(Clone, Copy, Debug)]
#[repr(u8)]
pub enum ExitCode {
    /// A Rust panic: status 3.
    Panic = 1,
    /// A CPU exception in the kernel: status 5.
    Exception = 2,
    /// A kernel self-test failed: status 7.
    TestFailure = 3,
    /// ACPI power-off did not take effect: status 9.
    PowerOffFailed = 4,
}

/// First `isa-debug-exit` value used for init's exit status `n` (1..=111): `16 + n`, so QEMU
/// exits with `33 + 2n` (35..=255); statuses above 111 share 255.
pub const INIT_STATUS_BASE: u8 = 16;

/// Exits QEMU reporting init's non-zero exit status `n` (see [`INIT_STATUS_BASE`]).
pub fn exit_init_status(n: u32) -> ! {
    let v = INIT_STATUS_BASE + n.clamp(1, 111) as u8;
    // SAFETY: as in `exit`.
    unsafe { cpu::outb(0xF4, v) };
    cpu::halt_forever()
}

/// Exits QEMU with the status for `code`. On a machine without `isa-debug-exit` the write is
/// ignored and the core halts.
pub fn exit(code: ExitCode) -> ! {
    // SAFETY: port 0xF4 is QEMU's isa-debug-exit (configured by `cargo xtask`); on other
    // machines nothing decodes it in a harmful way on PC platforms.
    unsafe { cpu::outb(0xF4, code as u8) };
    cpu::halt_forever()
}

/// Powers the machine off through the ACPI PM1 control registers (sleep state S5).
///
/// `pm1a_cnt`/`pm1b_cnt` are the FADT's control block ports, `slp_typ` the S5 sleep type (0 on
/// QEMU's chipsets). If the machine is still running afterwards, exits with
/// [`ExitCode::PowerOffFailed`].
pub fn acpi_poweroff(pm1a_cnt: u16, pm1b_cnt: u16, slp_typ: u16) -> ! {
    const SLP_EN: u16 = 1 << 13;
    // SAFETY: the ports come from the FADT; writing SLP_TYP|SLP_EN to them requests soft-off,
    // which is what the caller wants.
    unsafe {
        if pm1a_cnt != 0 {
            cpu::outw(pm1a_cnt, (slp_typ << 10) | SLP_EN);
        }
        if pm1b_cnt != 0 {
            cpu::outw(pm1b_cnt, (slp_typ << 10) | SLP_EN);
        }
    }
    let start = cpu::rdtsc();
    while cpu::rdtsc() - start < 1_000_000_000 {
        cpu::pause();
    }
    exit(ExitCode::PowerOffFailed)
}
