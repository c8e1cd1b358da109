//! PCI configuration space through the PC's port mechanism (an address written to 0xCF8, the
//! data at 0xCFC), which QEMU's `pc` machine and real PCs have. The two steps run under one
//! lock so that cores do not interleave them. Also the writes of device registers in memory
//! BARs (MSI-X tables, virtio's configuration) that drivers above this layer make.

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

/// Writes a 32-bit device register at physical address `phys`.
///
/// # Safety
/// `phys` must be a register inside a memory BAR of a device the caller drives, below the
/// direct map's end, and the write must be one the device expects.
pub unsafe fn mmio_write32(phys: u64, value: u32) {
    // SAFETY: per the caller's contract the address is a device register the direct map
    // covers; a volatile store keeps the access as written.
    unsafe { core::ptr::write_volatile(super::paging::phys_to_virt(phys) as *mut u32, value) };
}

/// Writes a 16-bit device register at physical address `phys`.
///
/// # Safety
/// As for [`mmio_write32`].
pub unsafe fn mmio_write16(phys: u64, value: u16) {
    // SAFETY: as for `mmio_write32`.
    unsafe { core::ptr::write_volatile(super::paging::phys_to_virt(phys) as *mut u16, value) };
}

/// Reads a 16-bit device register at physical address `phys`.
///
/// # Safety
/// As for [`mmio_write32`], and the read must have no effect the device's driver does not
/// expect.
pub unsafe fn mmio_read16(phys: u64) -> u16 {
    // SAFETY: as for `mmio_write32`.
    unsafe { core::ptr::read_volatile(super::paging::phys_to_virt(phys) as *const u16) }
}
