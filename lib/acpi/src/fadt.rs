//! The Fixed ACPI Description Table (`FACP`) and the HPET table.

use crate::bytes::{u64_at, Table};
use crate::AcpiError;

/// The address space of a [`GenericAddress`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AddressSpace {
    /// Physical memory (space ID 0).
    SystemMemory,
    /// I/O ports (space ID 1).
    SystemIo,
    /// PCI configuration space (space ID 2); the address encodes device, function and offset.
    PciConfig,
    /// Any other space ID.
    Other(u8),
}

/// An ACPI Generic Address Structure: a register somewhere in an address space.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GenericAddress {
    /// The address space the register lives in.
    pub space: AddressSpace,
    /// Width of the register in bits.
    pub bit_width: u8,
    /// Offset of the register within the addressed location, in bits.
    pub bit_offset: u8,
    /// Access size: 0 undefined, 1 byte, 2 word, 3 dword, 4 qword.
    pub access_size: u8,
    /// The address within `space`.
    pub address: u64,
}

impl GenericAddress {
    /// Size of the structure.
    const LEN: usize = 12;

    /// Decodes the structure at `offset` of `table`.
    fn parse(table: &Table, offset: usize) -> Result<Self, AcpiError> {
        Ok(Self {
            space: match table.u8(offset)? {
                0 => AddressSpace::SystemMemory,
                1 => AddressSpace::SystemIo,
                2 => AddressSpace::PciConfig,
                other => AddressSpace::Other(other),
            },
            bit_width: table.u8(offset + 1)?,
            bit_offset: table.u8(offset + 2)?,
            access_size: table.u8(offset + 3)?,
            address: table.u64(offset + 4)?,
        })
    }
}

/// The ACPI power management timer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PmTimer {
    /// I/O port of the counter; it counts at 3.579545 MHz.
    pub port: u16,
    /// The counter is 32 bits wide (FADT flag TMR_VAL_EXT); otherwise it is 24 bits wide.
    pub extended: bool,
}

/// The reset register, written with [`value`](Self::value) to reset the machine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ResetRegister {
    /// Where the register is (often I/O port 0xCF9).
    pub register: GenericAddress,
    /// The value to write.
    pub value: u8,
}

/// Fixed hardware information from the FADT.
///
/// I/O port fields come from the 64-bit `X_` generic address when the table is long enough
/// and that address is not zero (as ACPI requires), else from the 32-bit legacy field. A block
/// that is absent, not in I/O space, or beyond port 0xFFFF is `None`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fadt {
    /// Physical address of the DSDT (`X_DSDT` when present and not zero, else `DSDT`), or
    /// `None` when both are zero.
    pub dsdt: Option<u64>,
    /// Physical address of the FACS (`X_FIRMWARE_CTRL` when present and not zero, else
    /// `FIRMWARE_CTRL`), or `None` when both are zero (hardware-reduced machines).
    pub facs: Option<u64>,
    /// The interrupt (8259 IRQ, or GSI on APIC systems) the SCI is wired to.
    pub sci_interrupt: u16,
    /// I/O port of the PM1a control block; writing SLP_TYP | SLP_EN here enters a sleep state.
    pub pm1a_control: Option<u16>,
    /// I/O port of the PM1b control block, if the machine has one.
    pub pm1b_control: Option<u16>,
    /// The power management timer, if present.
    pub pm_timer: Option<PmTimer>,
    /// The reset register, if the FADT is long enough to hold it, its RESET_REG_SUP flag is
    /// set, and its address is not zero.
    pub reset: Option<ResetRegister>,
    /// The HW_REDUCED_ACPI flag: no fixed hardware (PM1 blocks, PM timer) is present.
    pub hardware_reduced: bool,
}

impl Fadt {
    /// The ACPI 1.0 FADT, up to and including the flags.
    pub(crate) const MIN_LEN: usize = 116;

    /// Decodes a checksummed FADT.
    pub(crate) fn parse(table: &Table) -> Result<Self, AcpiError> {
        let flags = table.u32(112)?;
        // A 64-bit field is used when the table reaches it and it is not zero.
        let wide = |offset: usize| u64_at(&table.data, offset).filter(|&value| value != 0);
        let pointer = |legacy, extended| -> Result<Option<u64>, AcpiError> {
            let legacy = table.u32(legacy)?;
            Ok(wide(extended).or((legacy != 0).then_some(legacy.into())))
        };
        let port = |legacy, extended: usize| -> Result<Option<u16>, AcpiError> {
            if table.data.len() >= extended + GenericAddress::LEN {
                let gas = GenericAddress::parse(table, extended)?;
                if gas.address != 0 {
                    return Ok(match gas.space {
                        AddressSpace::SystemIo => u16::try_from(gas.address).ok(),
                        _ => None,
                    });
                }
            }
            Ok(u16::try_from(table.u32(legacy)?)
                .ok()
                .filter(|&port| port != 0))
        };
        let reset = if flags & (1 << 10) != 0 && table.data.len() > 128 {
            Some(ResetRegister {
                register: GenericAddress::parse(table, 116)?,
                value: table.u8(128)?,
            })
            .filter(|reset| reset.register.address != 0)
        } else {
            None
        };
        Ok(Self {
            dsdt: pointer(40, 140)?,
            facs: pointer(36, 132)?,
            sci_interrupt: table.u16(46)?,
            pm1a_control: port(64, 172)?,
            pm1b_control: port(68, 184)?,
            pm_timer: port(76, 208)?.map(|port| PmTimer {
                port,
                extended: flags & (1 << 8) != 0,
            }),
            reset,
            hardware_reduced: flags & (1 << 20) != 0,
        })
    }
}

/// The High Precision Event Timer description (HPET table).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Hpet {
    /// Physical address of the timer block's registers.
    pub address: u64,
    /// The event timer block ID: the low 32 bits of the capabilities register.
    pub block_id: u32,
    /// Sequence number of this HPET.
    pub number: u8,
    /// Minimum tick in periodic mode, in counter ticks.
    pub min_tick: u16,
}

impl Hpet {
    /// The whole ACPI HPET table.
    pub(crate) const MIN_LEN: usize = 56;

    /// Decodes a checksummed HPET table.
    pub(crate) fn parse(table: &Table) -> Result<Self, AcpiError> {
        Ok(Self {
            address: GenericAddress::parse(table, 40)?.address,
            block_id: table.u32(36)?,
            number: table.u8(52)?,
            min_tick: table.u16(53)?,
        })
    }
}
