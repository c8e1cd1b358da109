//! Time: a monotonic clock in nanoseconds, consistent across cores, and the calibrated local
//! APIC timer.
//!
//! The clock is the TSC, calibrated once on the boot core against the ACPI PM timer (a fixed
//! 3.579545 MHz counter). Each core's TSC may differ from the boot core's by a constant; the
//! BootDriver measures that difference when it starts the core and stores it in the core's KCB
//! (`tsc_offset`), and [`now_ns`] subtracts it. A measured offset smaller than the measurement's
//! own uncertainty (half the round trip) is taken as zero: the TSCs are synchronized, as they
//! are under QEMU.

use crate::arch::{apic, cpu};
use crate::kcb;
use core::sync::atomic::{AtomicU64, Ordering};

/// Frequency of the ACPI PM timer.
const PM_TIMER_HZ: u64 = 3_579_545;
/// How long calibration measures.
const CALIBRATION_MS: u64 = 20;
/// Vector of the local APIC timer.
pub const TIMER_VECTOR: u8 = 0x30;
/// Local APIC timer frequency.
pub const TIMER_HZ: u64 = 100;

/// TSC value taken by the first kernel instruction: clock zero.
static BOOT_TSC: AtomicU64 = AtomicU64::new(0);
/// Calibrated TSC frequency in Hz.
static TSC_HZ: AtomicU64 = AtomicU64::new(0);
/// `2^32 * 1e9 / TSC_HZ`: nanoseconds per TSC tick in 32.32 fixed point.
static NS_PER_TICK_FP: AtomicU64 = AtomicU64::new(0);
/// Local APIC timer ticks per second (bus clock divided by 16).
static APIC_TIMER_HZ: AtomicU64 = AtomicU64::new(0);

/// Why calibration failed.
#[derive(Debug)]
pub enum CalibrationError {
    /// The FADT names no PM timer.
    NoPmTimer,
    /// A counter did not advance.
    Stuck(&'static str),
}

impl core::fmt::Display for CalibrationError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            CalibrationError::NoPmTimer => {
                write!(
                    f,
                    "no ACPI PM timer in the FADT; Reef needs it to calibrate its clocks"
                )
            }
            CalibrationError::Stuck(what) => write!(f, "{what} does not advance"),
        }
    }
}

/// Records the TSC value taken by the first kernel instruction.
pub fn set_boot_tsc(tsc: u64) {
    BOOT_TSC.store(tsc, Ordering::Relaxed);
}

/// Measures the TSC and local APIC timer frequencies against the ACPI PM timer at `port`
/// (`bits32`: whether the counter is 32 bits wide rather than 24).
pub fn calibrate(port: u16, bits32: bool) -> Result<(), CalibrationError> {
    if port == 0 {
        return Err(CalibrationError::NoPmTimer);
    }
    let mask: u64 = if bits32 { 0xffff_ffff } else { 0xff_ffff };
    // SAFETY: `port` is the PM timer block from the FADT; reading it has no side effects.
    let read_pm = || unsafe { cpu::inl(port) } as u64 & mask;
    let wanted = PM_TIMER_HZ * CALIBRATION_MS / 1000;
    let start_pm = read_pm();
    apic::timer_start_oneshot_masked(u32::MAX);
    let start_tsc = cpu::rdtsc();
    let mut elapsed = 0;
    let mut spins = 0u64;
    while elapsed < wanted {
        elapsed = (read_pm().wrapping_sub(start_pm)) & mask;
        spins += 1;
        if spins > 100_000_000 {
            return Err(CalibrationError::Stuck("the ACPI PM timer"));
        }
    }
    let tsc = cpu::rdtsc() - start_tsc;
    let apic_ticks = (u32::MAX - apic::timer_current()) as u64;
    apic::timer_stop();
    if tsc == 0 {
        return Err(CalibrationError::Stuck("the TSC"));
    }
    if apic_ticks == 0 {
        return Err(CalibrationError::Stuck("the local APIC timer"));
    }
    let tsc_hz = tsc * PM_TIMER_HZ / elapsed;
    TSC_HZ.store(tsc_hz, Ordering::Relaxed);
    NS_PER_TICK_FP.store(
        ((1_000_000_000u128 << 32) / tsc_hz as u128) as u64,
        Ordering::Relaxed,
    );
    APIC_TIMER_HZ.store(apic_ticks * PM_TIMER_HZ / elapsed, Ordering::Relaxed);
    Ok(())
}

/// Calibrated TSC frequency in Hz.
pub fn tsc_hz() -> u64 {
    TSC_HZ.load(Ordering::Relaxed)
}

/// Calibrated local APIC timer frequency in Hz (after its divide-by-16).
pub fn apic_timer_hz() -> u64 {
    APIC_TIMER_HZ.load(Ordering::Relaxed)
}

/// Converts TSC ticks to nanoseconds with [`NS_PER_TICK_FP`].
fn ticks_to_ns(ticks: u64) -> u64 {
    ((ticks as u128 * NS_PER_TICK_FP.load(Ordering::Relaxed) as u128) >> 32) as u64
}

/// Nanoseconds since the first kernel instruction, on the boot core's time base. Monotonic on
/// each core, and consistent across cores within the offset measurement's precision.
pub fn now_ns() -> u64 {
    let offset = kcb::try_current()
        .map(|k| k.tsc_offset.load(Ordering::Relaxed))
        .unwrap_or(0);
    clock_with(offset)
}

/// The clock of KCB `k` read on this core: [`now_ns`] with `k`'s offset (for a KCB that this
/// core runs, its own or one parked on it, without making it the current one).
pub fn now_ns_of(k: &crate::kcb::Kcb) -> u64 {
    clock_with(k.tsc_offset.load(Ordering::Relaxed))
}

/// This core's TSC with `offset` subtracted, in nanoseconds since clock zero.
fn clock_with(offset: i64) -> u64 {
    let tsc = cpu::rdtsc().wrapping_sub(offset as u64);
    ticks_to_ns(tsc.saturating_sub(BOOT_TSC.load(Ordering::Relaxed)))
}

/// Keeps a restarted core's clock monotonic (Barrelfish/DC §4.7). The core keeps the TSC offset
/// measured at its first start (INIT leaves the TSC running); should its clock read less than
/// when it stopped (a TSC reset), the offset moves so that it reads that time. Runs on the
/// restarted core, or on the host of a KCB being parked, whose TSC the KCB's clock then reads.
pub fn resume_clock(k: &crate::kcb::Kcb) {
    let stopped_at = k.shutdown_ns.load(Ordering::Acquire);
    let now = now_ns_of(k);
    if now < stopped_at {
        let ticks = u128::from(stopped_at - now) * u128::from(tsc_hz()) / 1_000_000_000;
        let ticks = i64::try_from(ticks).unwrap_or(i64::MAX);
        k.tsc_offset.fetch_sub(ticks, Ordering::AcqRel);
    }
}

/// Busy-waits for `ns` nanoseconds.
pub fn spin_ns(ns: u64) {
    let end = now_ns() + ns;
    while now_ns() < end {
        cpu::pause();
    }
}

/// Times [`start_timer`] writes the timer before it gives up on a timer that does not read back
/// what it wrote.
const TIMER_WRITES: u32 = 3;

/// Starts this core's periodic timer interrupt at [`TIMER_HZ`], and reads it back: a core whose
/// timer stays masked takes no tick, and its sleepers never wake (seen about once in 350 boots
/// under QEMU's TCG: a core whose timer read masked with no count a minute after boot). A timer
/// that reads otherwise is written again, with a line on the console; should it stop later, the
/// boot core's tick watch notices (`proc::sched::watch_ticks`).
pub fn start_timer() {
    let initial = (apic_timer_hz() / TIMER_HZ).clamp(1, u32::MAX as u64) as u32;
    let wanted = (apic::periodic_entry(TIMER_VECTOR), initial);
    for write in 1..=TIMER_WRITES {
        apic::timer_start_periodic(TIMER_VECTOR, initial);
        let (entry, count) = apic::timer_setting();
        if (entry, count) == wanted {
            return;
        }
        crate::kprintln!(
            "reef: timer: core {} wrote entry {:#x} count {} and read back {entry:#x} {count} \
             (write {write} of {TIMER_WRITES})",
            kcb::try_current().map_or(0, |k| k.core_id),
            wanted.0,
            wanted.1
        );
    }
}

/// Has this core's timer interrupt once at `deadline_ns` (its clock), or stops it (`None`): the
/// `reef-rt` image's cores have no periodic tick, only the wake-ups their sleepers need.
pub fn arm_oneshot(deadline_ns: Option<u64>) {
    let Some(deadline) = deadline_ns else {
        apic::timer_stop();
        return;
    };
    let wait_ns = deadline.saturating_sub(now_ns()).max(1);
    let ticks = (u128::from(wait_ns) * u128::from(apic_timer_hz()) / 1_000_000_000)
        .clamp(1, u128::from(u32::MAX)) as u32;
    apic::timer_start_oneshot(TIMER_VECTOR, ticks);
}

/// Rounds of the TSC offset measurement.
const SYNC_ROUNDS: u64 = 16;
/// Step of the TSC offset measurement: odd when the boot core asks the starting core for its
/// TSC, even when the starting core has answered (0 when no measurement runs).
static SYNC_STEP: AtomicU64 = AtomicU64::new(0);
/// The starting core's TSC reading of the current round.
static SYNC_TSC: AtomicU64 = AtomicU64::new(0);

/// Boot-core side of the TSC offset measurement with a starting core, which runs
/// [`tsc_sync_target`] at the same time. Returns the offset to store in the core's KCB.
pub fn tsc_sync_source() -> i64 {
    let mut best_rtt = u64::MAX;
    let mut best_offset = 0i64;
    for round in 0..SYNC_ROUNDS {
        let t0 = cpu::rdtsc();
        SYNC_STEP.store(2 * round + 1, Ordering::SeqCst);
        while SYNC_STEP.load(Ordering::SeqCst) != 2 * round + 2 {
            cpu::pause();
        }
        let t1 = cpu::rdtsc();
        let remote = SYNC_TSC.load(Ordering::SeqCst);
        let rtt = t1 - t0;
        if rtt < best_rtt {
            best_rtt = rtt;
            best_offset = remote as i64 - (t0 + rtt / 2) as i64;
        }
    }
    SYNC_STEP.store(0, Ordering::SeqCst);
    if best_offset.unsigned_abs() <= best_rtt / 2 {
        0
    } else {
        best_offset
    }
}

/// Starting-core side of the TSC offset measurement.
pub fn tsc_sync_target() {
    for round in 0..SYNC_ROUNDS {
        while SYNC_STEP.load(Ordering::SeqCst) != 2 * round + 1 {
            cpu::pause();
        }
        SYNC_TSC.store(cpu::rdtsc(), Ordering::SeqCst);
        SYNC_STEP.store(2 * round + 2, Ordering::SeqCst);
    }
}

/// Wall-clock time at clock zero, in ns since the Unix epoch (set from the RTC at boot).
static REALTIME_OFFSET: AtomicU64 = AtomicU64::new(0);

/// Days from 1970-01-01 to the given civil date (proleptic Gregorian).
fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m as i64 + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d as i64 - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// Reads the RTC and sets the realtime clock from it.
pub fn init_realtime() {
    let (y, mo, d, h, mi, s) = crate::arch::rtc::read();
    let days = days_from_civil(y as i64, mo.clamp(1, 12), d.clamp(1, 31));
    let secs = days * 86_400 + (h * 3600 + mi * 60 + s) as i64;
    let unix_ns = (secs.max(0) as u64) * 1_000_000_000;
    REALTIME_OFFSET.store(unix_ns.saturating_sub(now_ns()), Ordering::Relaxed);
}

/// Add to [`now_ns`] for the wall-clock time (ns since the Unix epoch).
pub fn realtime_offset_ns() -> u64 {
    REALTIME_OFFSET.load(Ordering::Relaxed)
}
