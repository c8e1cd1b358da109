//! The System Resource Affinity Table (SRAT) and System Locality Information Table (SLIT).

use alloc::vec::Vec;

use crate::bytes::{Table, HEADER_LEN};
use crate::AcpiError;

/// NUMA affinity from the SRAT, entries in table order (disabled ones included).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Srat {
    /// Processor affinity: Local APIC (type 0) and Local x2APIC (type 2) entries.
    pub processors: Vec<ProcessorAffinity>,
    /// Memory affinity (type 1) entries.
    pub memory: Vec<MemoryAffinity>,
}

/// The proximity domain of one processor (SRAT type 0 or type 2 entry).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProcessorAffinity {
    /// The processor's local APIC ID (x2APIC ID for type 2 entries).
    pub apic_id: u32,
    /// Its proximity domain. For type 0 entries the upper 24 bits are only used when the
    /// SRAT's revision is 2 or later (they were reserved before).
    pub domain: u32,
    /// The entry is in use (flags bit 0); disabled entries must be ignored.
    pub enabled: bool,
}

/// The proximity domain of one physical memory range (SRAT type 1 entry).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MemoryAffinity {
    /// First physical address of the range.
    pub base: u64,
    /// Length in bytes. For enabled entries, `base + length` does not overflow.
    pub length: u64,
    /// Its proximity domain.
    pub domain: u32,
    /// The entry is in use (flags bit 0); disabled entries must be ignored.
    pub enabled: bool,
    /// The range may be hot-added or removed (flags bit 1).
    pub hot_pluggable: bool,
    /// The range is non-volatile memory (flags bit 2).
    pub non_volatile: bool,
}

impl Srat {
    /// Header and 12 reserved bytes.
    pub(crate) const MIN_LEN: usize = 48;

    /// Decodes a checksummed SRAT.
    pub(crate) fn parse(table: &Table) -> Result<Self, AcpiError> {
        let mut srat = Self {
            processors: Vec::new(),
            memory: Vec::new(),
        };
        let wide_domains = table.revision() >= 2;
        for entry in table.entries(Self::MIN_LEN) {
            let entry = entry?;
            match entry.kind {
                0 => {
                    let high = if wide_domains {
                        u32::from(entry.u8(9)?)
                            | u32::from(entry.u8(10)?) << 8
                            | u32::from(entry.u8(11)?) << 16
                    } else {
                        0
                    };
                    srat.processors.push(ProcessorAffinity {
                        apic_id: entry.u8(3)?.into(),
                        domain: u32::from(entry.u8(2)?) | high << 8,
                        enabled: entry.u32(4)? & 1 != 0,
                    });
                }
                1 => {
                    let flags = entry.u32(28)?;
                    let range = MemoryAffinity {
                        base: entry.u64(8)?,
                        length: entry.u64(16)?,
                        domain: entry.u32(2)?,
                        enabled: flags & 1 != 0,
                        hot_pluggable: flags & 2 != 0,
                        non_volatile: flags & 4 != 0,
                    };
                    if range.enabled && range.base.checked_add(range.length).is_none() {
                        return Err(entry.malformed());
                    }
                    srat.memory.push(range);
                }
                2 => srat.processors.push(ProcessorAffinity {
                    apic_id: entry.u32(8)?,
                    domain: entry.u32(4)?,
                    enabled: entry.u32(12)? & 1 != 0,
                }),
                _ => {}
            }
        }
        Ok(srat)
    }
}

/// The SLIT's matrix of relative distances between proximity domains.
///
/// Entry `(i, j)` is the distance from domain `i` to domain `j`, normalised so that the
/// local distance is 10; 255 means unreachable.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Slit {
    /// Number of localities (proximity domains): the matrix is `localities × localities`.
    pub localities: usize,
    /// The matrix in row-major order.
    pub distances: Vec<u8>,
}

impl Slit {
    /// Header and the locality count.
    pub(crate) const MIN_LEN: usize = HEADER_LEN + 8;

    /// Decodes a checksummed SLIT.
    pub(crate) fn parse(table: &Table) -> Result<Self, AcpiError> {
        let localities = usize::try_from(table.u64(HEADER_LEN)?).map_err(|_| table.bad_length())?;
        let distances = localities
            .checked_mul(localities)
            .and_then(|cells| {
                table
                    .data
                    .get(Self::MIN_LEN..Self::MIN_LEN.checked_add(cells)?)
            })
            .ok_or_else(|| table.bad_length())?;
        Ok(Self {
            localities,
            distances: distances.to_vec(),
        })
    }

    /// Distance from proximity domain `from` to domain `to`, or `None` when either is not
    /// below [`localities`](Self::localities).
    #[must_use]
    pub fn distance(&self, from: usize, to: usize) -> Option<u8> {
        if from >= self.localities || to >= self.localities {
            return None;
        }
        let index = from.checked_mul(self.localities)?.checked_add(to)?;
        self.distances.get(index).copied()
    }
}
