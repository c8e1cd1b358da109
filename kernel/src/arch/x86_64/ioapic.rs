//! I/O APIC redirection: routes a device's global system interrupt to a vector on one core.
//! The I/O APIC's registers sit at the physical address the MADT gives (below 4 GiB, inside
//! the direct map): an index written to IOREGSEL selects the register IOWIN then shows.

use super::paging::phys_to_virt;

/// Offset of the register-select register.
const IOREGSEL: u64 = 0x00;
/// Offset of the data window.
const IOWIN: u64 = 0x10;
/// Index of the first redirection-table register (two per input).
const REDIRECTION_BASE: u32 = 0x10;
/// Redirection entry: the input is level-triggered.
const LEVEL: u32 = 1 << 15;
/// Redirection entry: the input is active low.
const ACTIVE_LOW: u32 = 1 << 13;
/// Redirection entry: the input is masked.
const MASKED: u32 = 1 << 16;

/// Serializes the select-then-access pairs.
static LOCK: spin::Mutex<()> = spin::Mutex::new(());

/// How an input signals.
#[derive(Clone, Copy, Debug)]
pub struct Signal {
    /// Level-triggered (else edge).
    pub level: bool,
    /// Active low (else high).
    pub active_low: bool,
}

/// Writes register `index` of the I/O APIC at `base`.
fn write(base: u32, index: u32, value: u32) {
    let regs = phys_to_virt(u64::from(base));
    // SAFETY: `base` is an I/O APIC's register block from the MADT, which the direct map
    // covers (it lies below 4 GiB); IOREGSEL and IOWIN are 32-bit registers, accessed with
    // volatile 32-bit stores, under LOCK so that no other core changes the selection between.
    unsafe {
        core::ptr::write_volatile((regs + IOREGSEL) as *mut u32, index);
        core::ptr::write_volatile((regs + IOWIN) as *mut u32, value);
    }
}

/// Routes input `input` of the I/O APIC at `base` to `vector` on the core whose local APIC
/// id is `apic_id` (fixed delivery, physical destination), unmasked.
pub fn route(base: u32, input: u32, vector: u8, apic_id: u32, signal: Signal) {
    let mut low = u32::from(vector);
    if signal.level {
        low |= LEVEL;
    }
    if signal.active_low {
        low |= ACTIVE_LOW;
    }
    let index = REDIRECTION_BASE + 2 * input;
    let _g = LOCK.lock();
    // Masked while the destination changes, then the vector and unmask.
    write(base, index, MASKED);
    write(base, index + 1, apic_id << 24);
    write(base, index, low);
}
