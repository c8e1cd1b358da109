//! Walking the RSDT/XSDT: checksums, the table list, and dispatch to the table parsers.

use alloc::vec;
use alloc::vec::Vec;

use crate::bytes::{sum, u32_at, u64_at, Table, HEADER_LEN};
use crate::fadt::{Fadt, Hpet};
use crate::madt::Madt;
use crate::numa::{Slit, Srat};
use crate::rsdp::Rsdp;
use crate::{AcpiError, PhysMemory};

/// Largest table length accepted (16 MiB).
///
/// Real tables are far smaller (large DSDTs are a few hundred KiB); a bigger length field is
/// taken as corruption ([`AcpiError::BadLength`]) instead of being read.
pub const MAX_TABLE_LENGTH: u32 = 16 << 20;

/// Smallest FACS: its layout is 64 bytes in every revision.
const FACS_MIN_LEN: u32 = 64;

/// One table found while walking the RSDT/XSDT, for an acpidump-style listing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TableInfo {
    /// The table's signature, for example `*b"APIC"`.
    pub signature: [u8; 4],
    /// Physical address of the table's first byte.
    pub phys: u64,
    /// The table's length field, in bytes, header included.
    pub length: u32,
}

/// Everything [`parse`] extracted from the firmware's ACPI tables.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Acpi {
    /// Physical address of the RSDP that was parsed.
    pub rsdp: u64,
    /// The RSDP's revision: 0 for ACPI 1.0 (RSDT only), 2 or more for ACPI 2.0 and later.
    pub revision: u8,
    /// The RSDP's OEM identifier.
    pub oem_id: [u8; 6],
    /// Every table, in the order found: the RSDT or XSDT first, then the tables it lists in
    /// its order, then the DSDT and FACS named by the FADT. All but the FACS (which has no
    /// checksum) had a valid checksum.
    pub tables: Vec<TableInfo>,
    /// The first MADT (`APIC`), if any.
    pub madt: Option<Madt>,
    /// The first SRAT, if any.
    pub srat: Option<Srat>,
    /// The first SLIT, if any.
    pub slit: Option<Slit>,
    /// The first FADT (`FACP`), if any.
    pub fadt: Option<Fadt>,
    /// The first HPET table, if any.
    pub hpet: Option<Hpet>,
}

/// Parses the ACPI tables reachable from the RSDP at physical address `rsdp`.
///
/// Walks the XSDT when the RSDP has revision 2 or later and a non-zero XSDT address, and the
/// RSDT otherwise (null entries are skipped). Every listed table, and the DSDT the FADT names,
/// must have a valid checksum and a plausible length; the FACS is checked for its signature and
/// length only. The MADT, SRAT, SLIT, FADT and HPET tables are decoded; other tables are only
/// listed in [`Acpi::tables`].
///
/// # Errors
///
/// [`AcpiError::InvalidRsdp`] if `rsdp` does not hold a valid RSDP; [`AcpiError::BadChecksum`],
/// [`AcpiError::BadLength`], [`AcpiError::BadSignature`] or [`AcpiError::BadEntry`] naming the
/// first malformed table; or the error of `mem` when a table cannot be read. Nothing is
/// returned for the other tables when one is bad.
pub fn parse(mem: &impl PhysMemory, rsdp: u64) -> Result<Acpi, AcpiError> {
    let pointer = Rsdp::read(mem, rsdp)?;
    let (root_signature, root_phys, width) = match pointer.xsdt {
        Some(xsdt) => (*b"XSDT", xsdt, 8),
        None => (*b"RSDT", u64::from(pointer.rsdt), 4),
    };
    let root_info = check(mem, root_phys, Some(root_signature))?;
    let root = load(mem, &root_info, HEADER_LEN)?;
    let body = root.data.get(HEADER_LEN..).unwrap_or_default();
    if body.len() % width != 0 {
        return Err(root.bad_length());
    }

    let mut acpi = Acpi {
        rsdp,
        revision: pointer.revision,
        oem_id: pointer.oem_id,
        tables: vec![root_info],
        madt: None,
        srat: None,
        slit: None,
        fadt: None,
        hpet: None,
    };
    for index in 0..body.len() / width {
        let entry = match width {
            8 => u64_at(body, index * 8),
            _ => u32_at(body, index * 4).map(u64::from),
        };
        match entry.ok_or_else(|| root.bad_length())? {
            0 => {}
            phys => acpi.add(mem, phys)?,
        }
    }

    if let Some(fadt) = &acpi.fadt {
        let (dsdt, facs) = (fadt.dsdt, fadt.facs);
        if let Some(phys) = dsdt {
            acpi.tables.push(check(mem, phys, Some(*b"DSDT"))?);
        }
        if let Some(phys) = facs {
            acpi.tables.push(check_facs(mem, phys)?);
        }
    }
    Ok(acpi)
}

impl Acpi {
    /// Validates the table at `phys`, lists it, and decodes it if it is one this crate parses
    /// and the first of its signature.
    fn add(&mut self, mem: &impl PhysMemory, phys: u64) -> Result<(), AcpiError> {
        let info = check(mem, phys, None)?;
        self.tables.push(info);
        match &info.signature {
            b"APIC" if self.madt.is_none() => {
                self.madt = Some(Madt::parse(&load(mem, &info, Madt::MIN_LEN)?)?);
            }
            b"SRAT" if self.srat.is_none() => {
                self.srat = Some(Srat::parse(&load(mem, &info, Srat::MIN_LEN)?)?);
            }
            b"SLIT" if self.slit.is_none() => {
                self.slit = Some(Slit::parse(&load(mem, &info, Slit::MIN_LEN)?)?);
            }
            b"FACP" if self.fadt.is_none() => {
                self.fadt = Some(Fadt::parse(&load(mem, &info, Fadt::MIN_LEN)?)?);
            }
            b"HPET" if self.hpet.is_none() => {
                self.hpet = Some(Hpet::parse(&load(mem, &info, Hpet::MIN_LEN)?)?);
            }
            _ => {}
        }
        Ok(())
    }
}

/// Reads a table's signature and length field.
fn read_head(mem: &impl PhysMemory, phys: u64) -> Result<([u8; 4], u32), AcpiError> {
    let mut head = [0; 8];
    mem.read(phys, &mut head)?;
    let mut signature = [0; 4];
    signature.copy_from_slice(&head[..4]);
    Ok((signature, u32_at(&head, 4).unwrap_or(0)))
}

/// Checks that a length field is at least `min`, at most [`MAX_TABLE_LENGTH`], and that the
/// table does not run past the end of the address space.
fn check_length(signature: [u8; 4], phys: u64, length: u32, min: u32) -> Result<(), AcpiError> {
    if length < min || length > MAX_TABLE_LENGTH || phys.checked_add(length.into()).is_none() {
        return Err(AcpiError::BadLength {
            signature,
            phys,
            length,
        });
    }
    Ok(())
}

/// Sum modulo 256 of the `length` bytes at `phys`, read in pieces without allocating.
pub(crate) fn checksum(mem: &impl PhysMemory, phys: u64, length: u32) -> Result<u8, AcpiError> {
    let mut buf = [0; 256];
    let mut total = 0u8;
    let mut done = 0u64;
    let length = u64::from(length);
    while done < length {
        let n = buf
            .len()
            .min(usize::try_from(length - done).unwrap_or(buf.len()));
        let piece = &mut buf[..n];
        mem.read(phys + done, piece)?;
        total = total.wrapping_add(sum(piece));
        done += n as u64;
    }
    Ok(total)
}

/// Validates the header, length and checksum of the table at `phys` (and its signature when
/// `expected` is given) without reading it into memory.
fn check(
    mem: &impl PhysMemory,
    phys: u64,
    expected: Option<[u8; 4]>,
) -> Result<TableInfo, AcpiError> {
    let (signature, length) = read_head(mem, phys)?;
    if let Some(expected) = expected.filter(|&expected| expected != signature) {
        return Err(AcpiError::BadSignature {
            phys,
            expected,
            found: signature,
        });
    }
    check_length(signature, phys, length, HEADER_LEN as u32)?;
    if checksum(mem, phys, length)? != 0 {
        return Err(AcpiError::BadChecksum { signature, phys });
    }
    Ok(TableInfo {
        signature,
        phys,
        length,
    })
}

/// Validates the signature and length of the FACS at `phys` (it has no checksum).
fn check_facs(mem: &impl PhysMemory, phys: u64) -> Result<TableInfo, AcpiError> {
    let (signature, length) = read_head(mem, phys)?;
    if signature != *b"FACS" {
        return Err(AcpiError::BadSignature {
            phys,
            expected: *b"FACS",
            found: signature,
        });
    }
    check_length(signature, phys, length, FACS_MIN_LEN)?;
    Ok(TableInfo {
        signature,
        phys,
        length,
    })
}

/// Reads a table that [`check`] accepted into memory, requiring at least `min_len` bytes.
fn load(mem: &impl PhysMemory, info: &TableInfo, min_len: usize) -> Result<Table, AcpiError> {
    let length = info.length as usize;
    if length < min_len {
        return Err(AcpiError::BadLength {
            signature: info.signature,
            phys: info.phys,
            length: info.length,
        });
    }
    let mut data = vec![0; length];
    mem.read(info.phys, &mut data)?;
    Ok(Table {
        signature: info.signature,
        phys: info.phys,
        data,
    })
}
