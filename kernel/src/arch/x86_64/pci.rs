//! PCI configuration space through the PC's port mechanism (an address written to 0xCF8, the
//! data at 0xCFC), which QEMU's `pc` machine and real PCs have. The two steps run under one
//! lock so that cores do not interleave them.

use super::cpu;

/// The configuration address port.
const CONFIG_ADDRESS: u16 = 0xcf8;
/// The configuration data port.
const CONFIG_DATA: u16 = 0xcfc;

/// Serializes the address-then-data pairs.
static LOCK: spin::Mutex<()> = spin::Mutex::new(());

/// The configuration address of dword `offset` (rounded down to 4) of a function.
fn address(bus: u8, device: u8, function: u8, offset: u8) -> u32 {
    1 << 31
        | u32::from(bus) << 16
        | u32::from(device & 0x1f) << 11
        | u32::from(function & 7) << 8
        | u32::from(offset & 0xfc)
}

/// Reads the dword at `offset` of the configuration space of `bus:device.function`.
pub fn read32(bus: u8, device: u8, function: u8, offset: u8) -> u32 {
    let _g = LOCK.lock();
    // SAFETY: 0xCF8/0xCFC are the PCI configuration mechanism #1 ports of every PC; writing an
    // address and reading the data has no other effect.
    unsafe {
        cpu::outl(CONFIG_ADDRESS, address(bus, device, function, offset));
        cpu::inl(CONFIG_DATA)
    }
}

/// Writes the dword at `offset` of the configuration space of `bus:device.function`.
pub fn write32(bus: u8, device: u8, function: u8, offset: u8, value: u32) {
    let _g = LOCK.lock();
    // SAFETY: as for `read32`; the caller (a driver) owns the function it configures.
    unsafe {
        cpu::outl(CONFIG_ADDRESS, address(bus, device, function, offset));
        cpu::outl(CONFIG_DATA, value);
    }
}
