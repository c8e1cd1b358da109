//! ACPI table parsing for Reef: from the RSDP to a machine topology.
//!
//! The kernel hands this crate a [`PhysMemory`] (a reader over physical memory, backed by its
//! direct map) and gets back plain data: which tables the firmware published, what they say
//! about processors, interrupt controllers, NUMA affinity and power management, and a
//! [`Topology`] (cores, nodes, memory ranges, distances) built from that.
//!
//! # What is parsed
//!
//! - **RSDP**: found by [`find_rsdp`] in the first KiB of the EBDA or in `0xE0000..0x100000`;
//!   validated with the ACPI 1.0 checksum and, for revision 2 and later, the extended one.
//! - **RSDT / XSDT**: [`parse`] walks the XSDT when the RSDP has revision 2 or later and a
//!   non-zero XSDT address, and the RSDT otherwise. Every table they list, plus the DSDT and
//!   FACS the FADT points to, is recorded in [`Acpi::tables`] (for an acpidump-style listing).
//! - **MADT** (`APIC`): local APIC address (with the 64-bit override), processors (Local APIC
//!   and Local x2APIC entries), I/O APICs and interrupt source overrides. See [`Madt`].
//! - **SRAT**: processor (APIC and x2APIC) and memory affinity. See [`Srat`].
//! - **SLIT**: the locality distance matrix. See [`Slit`].
//! - **FADT** (`FACP`): PM1a/PM1b control ports, the PM timer, the reset register, the SCI
//!   and the DSDT/FACS addresses. See [`Fadt`].
//! - **HPET**: the base address of the event timer block. See [`Hpet`].
//!
//! # What is not parsed
//!
//! AML (the DSDT and SSDTs are checksummed and listed, not interpreted), so nothing that needs
//! the namespace: sleep-state values such as `\_S5` (the kernel must supply SLP_TYPa itself),
//! PCI routing, `_PXM` of devices. Also not parsed: MCFG, DMAR, MADT NMI entries (types 3, 4
//! and 10) and all MADT entry types other than 0, 1, 2, 5 and 9, which are skipped.
//!
//! # Validation
//!
//! Every table is checksummed (except the FACS, which has no checksum). A bad checksum is an
//! error ([`AcpiError::BadChecksum`]) naming the table and its address rather than a warning:
//! the kernel should not build its topology on tables it cannot trust, and a clear error at
//! boot is easier to act on than a silently smaller machine. Malformed input (truncated
//! tables, lengths that overflow, zero-length entries, unreadable memory) is reported as an
//! [`AcpiError`]; nothing in this crate panics on firmware data. When a signature appears more
//! than once in the RSDT/XSDT, all copies are checksummed and listed, and the first is parsed.
//!
//! The crate is `no_std` and needs `alloc`; it contains no `unsafe` code.

#![no_std]
#![forbid(unsafe_code)]
#![warn(missing_docs)]

extern crate alloc;

mod bytes;
mod error;
mod fadt;
mod madt;
mod numa;
mod rsdp;
mod tables;
mod topology;

pub use error::AcpiError;
pub use fadt::{AddressSpace, Fadt, GenericAddress, Hpet, PmTimer, ResetRegister};
pub use madt::{InterruptOverride, IoApic, Madt, Polarity, Processor, Trigger};
pub use numa::{MemoryAffinity, ProcessorAffinity, Slit, Srat};
pub use rsdp::find_rsdp;
pub use tables::{parse, Acpi, TableInfo, MAX_TABLE_LENGTH};
pub use topology::{Core, MemoryRange, NodeSpan, Topology};

/// Read access to physical memory, implemented by the caller.
///
/// The kernel implements it over its direct map; the tests implement it over bytes captured
/// from QEMU. The parser only ever reads: ACPI tables are not modified.
pub trait PhysMemory {
    /// Fills `buf` with the bytes at physical addresses `phys..phys + buf.len()`.
    ///
    /// Returns an error (normally [`AcpiError::Unreadable`]) when any part of that range
    /// cannot be read, for example because it is not mapped or would wrap around the
    /// address space. The parser propagates the error unchanged.
    fn read(&self, phys: u64, buf: &mut [u8]) -> Result<(), AcpiError>;
}
