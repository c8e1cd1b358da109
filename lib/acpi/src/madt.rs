//! The Multiple APIC Description Table (`APIC`).

use alloc::vec::Vec;

use crate::bytes::Table;
use crate::AcpiError;

/// Interrupt controller information from the MADT.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Madt {
    /// Physical address of the local APIC registers (xAPIC mode): the 64-bit Local APIC
    /// Address Override entry (type 5) when present, else the table's 32-bit field.
    pub local_apic_address: u64,
    /// The PCAT_COMPAT flag: the machine also has dual 8259 PICs, which must be masked
    /// before the I/O APICs are used.
    pub pcat_compat: bool,
    /// Processors from Local APIC (type 0) and Local x2APIC (type 9) entries, in table order,
    /// disabled ones included.
    pub processors: Vec<Processor>,
    /// I/O APICs (type 1 entries), in table order.
    pub io_apics: Vec<IoApic>,
    /// Interrupt source overrides (type 2 entries), in table order.
    pub overrides: Vec<InterruptOverride>,
}

/// A processor's local APIC, from a MADT Local APIC or Local x2APIC entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Processor {
    /// ACPI processor UID, which matches the processor's `_UID` in the namespace.
    pub uid: u32,
    /// Local APIC ID (8 bits for type 0 entries, 32 bits for x2APIC entries).
    pub apic_id: u32,
    /// The processor is usable now (flags bit 0).
    pub enabled: bool,
    /// The processor is disabled but can be brought online later (flags bit 1, only defined
    /// since MADT revision 5; always false for older tables).
    pub online_capable: bool,
    /// The entry is a Local x2APIC (type 9) entry.
    pub x2apic: bool,
}

/// An I/O APIC, from a MADT type 1 entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IoApic {
    /// The I/O APIC's ID.
    pub id: u8,
    /// Physical address of its registers.
    pub address: u32,
    /// The global system interrupt number of its first input.
    pub gsi_base: u32,
}

/// Polarity of an interrupt, from MPS INTI flags bits 0-1.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Polarity {
    /// Conforms to the bus's specification (active high for ISA).
    BusDefault,
    /// Active high.
    ActiveHigh,
    /// Active low.
    ActiveLow,
    /// The reserved encoding `0b10`.
    Reserved,
}

/// Trigger mode of an interrupt, from MPS INTI flags bits 2-3.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Trigger {
    /// Conforms to the bus's specification (edge for ISA).
    BusDefault,
    /// Edge-triggered.
    Edge,
    /// Level-triggered.
    Level,
    /// The reserved encoding `0b10`.
    Reserved,
}

/// An interrupt source override (MADT type 2): an ISA IRQ that is not identity-mapped to the
/// GSI of the same number, or that has a non-default polarity or trigger mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InterruptOverride {
    /// Bus, 0 for ISA.
    pub bus: u8,
    /// The bus-relative IRQ.
    pub source: u8,
    /// The global system interrupt it is wired to.
    pub gsi: u32,
    /// Its polarity.
    pub polarity: Polarity,
    /// Its trigger mode.
    pub trigger: Trigger,
}

impl Madt {
    /// Header, local APIC address and flags.
    pub(crate) const MIN_LEN: usize = 44;

    /// Decodes a checksummed MADT.
    pub(crate) fn parse(table: &Table) -> Result<Self, AcpiError> {
        let mut madt = Self {
            local_apic_address: table.u32(36)?.into(),
            pcat_compat: table.u32(40)? & 1 != 0,
            processors: Vec::new(),
            io_apics: Vec::new(),
            overrides: Vec::new(),
        };
        let online_capable_defined = table.revision() >= 5;
        let processor = |uid, apic_id, flags: u32, x2apic| Processor {
            uid,
            apic_id,
            enabled: flags & 1 != 0,
            online_capable: online_capable_defined && flags & 2 != 0,
            x2apic,
        };
        for entry in table.entries(Self::MIN_LEN) {
            let entry = entry?;
            match entry.kind {
                0 => madt.processors.push(processor(
                    entry.u8(2)?.into(),
                    entry.u8(3)?.into(),
                    entry.u32(4)?,
                    false,
                )),
                1 => madt.io_apics.push(IoApic {
                    id: entry.u8(2)?,
                    address: entry.u32(4)?,
                    gsi_base: entry.u32(8)?,
                }),
                2 => {
                    let flags = entry.u16(8)?;
                    madt.overrides.push(InterruptOverride {
                        bus: entry.u8(2)?,
                        source: entry.u8(3)?,
                        gsi: entry.u32(4)?,
                        polarity: match flags & 3 {
                            0 => Polarity::BusDefault,
                            1 => Polarity::ActiveHigh,
                            3 => Polarity::ActiveLow,
                            _ => Polarity::Reserved,
                        },
                        trigger: match (flags >> 2) & 3 {
                            0 => Trigger::BusDefault,
                            1 => Trigger::Edge,
                            3 => Trigger::Level,
                            _ => Trigger::Reserved,
                        },
                    });
                }
                5 => madt.local_apic_address = entry.u64(4)?,
                9 => madt.processors.push(processor(
                    entry.u32(12)?,
                    entry.u32(4)?,
                    entry.u32(8)?,
                    true,
                )),
                _ => {}
            }
        }
        Ok(madt)
    }
}
