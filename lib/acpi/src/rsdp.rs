//! Finding and validating the Root System Description Pointer.

use crate::bytes::{sum, u32_at, u64_at};
use crate::tables::checksum;
use crate::{AcpiError, PhysMemory};

const SIGNATURE: &[u8; 8] = b"RSD PTR ";
/// Length of the ACPI 1.0 structure covered by the first checksum.
const V1_LEN: usize = 20;
/// Length of the ACPI 2.0+ structure.
const V2_LEN: usize = 36;
/// Largest extended length accepted; the structure has been 36 bytes in every revision.
const MAX_LEN: u32 = 4096;
/// Physical address of the BIOS data area word holding the EBDA's real-mode segment.
const EBDA_POINTER: u64 = 0x40E;
/// How much of the EBDA is searched.
const EBDA_SEARCH_LEN: u64 = 1024;
/// The BIOS read-only area searched after the EBDA.
const BIOS_AREA: (u64, u64) = (0xE0000, 0x100000);
/// Granule of the searches, which is also the RSDP's alignment.
const ALIGN: usize = 16;
/// Bytes read from physical memory per step of a search.
const CHUNK: usize = 1024;

/// The fields of a validated RSDP.
pub(crate) struct Rsdp {
    /// 0 for ACPI 1.0, 2 or more for ACPI 2.0 and later.
    pub(crate) revision: u8,
    /// The OEM identifier.
    pub(crate) oem_id: [u8; 6],
    /// Physical address of the RSDT.
    pub(crate) rsdt: u32,
    /// Physical address of the XSDT, for revision 2 and later when it is not zero.
    pub(crate) xsdt: Option<u64>,
}

impl Rsdp {
    /// Reads and validates the RSDP at `phys`: signature, checksum, and for revision 2 and
    /// later the length and extended checksum.
    pub(crate) fn read(mem: &impl PhysMemory, phys: u64) -> Result<Self, AcpiError> {
        let invalid = |reason| AcpiError::InvalidRsdp { phys, reason };
        let mut v1 = [0; V1_LEN];
        mem.read(phys, &mut v1)?;
        if !v1.starts_with(SIGNATURE) {
            return Err(invalid("no \"RSD PTR \" signature"));
        }
        if sum(&v1) != 0 {
            return Err(invalid("bad checksum"));
        }
        let revision = v1[15];
        let mut oem_id = [0; 6];
        oem_id.copy_from_slice(&v1[9..15]);
        let rsdt = u32_at(&v1, 16).unwrap_or(0);
        if revision < 2 {
            return Ok(Self {
                revision,
                oem_id,
                rsdt,
                xsdt: None,
            });
        }
        let mut v2 = [0; V2_LEN];
        mem.read(phys, &mut v2)?;
        let length = u32_at(&v2, 20).unwrap_or(0);
        if !(V2_LEN as u32..=MAX_LEN).contains(&length) {
            return Err(invalid("extended length out of range"));
        }
        if checksum(mem, phys, length)? != 0 {
            return Err(invalid("bad extended checksum"));
        }
        Ok(Self {
            revision,
            oem_id,
            rsdt,
            xsdt: u64_at(&v2, 24).filter(|&xsdt| xsdt != 0),
        })
    }
}

/// Finds the RSDP the way ACPI specifies for legacy (BIOS) systems.
///
/// Searches the first KiB of the Extended BIOS Data Area (whose real-mode segment is the word
/// at physical `0x40E`; the EBDA is only searched when that gives an address in
/// `0x400..0xA0000`), then `0xE0000..0x100000`, on 16-byte boundaries, for `"RSD PTR "` with
/// a valid checksum (and a valid length and extended checksum for revision 2 and later).
/// Candidates that fail validation are skipped. Returns the RSDP's physical address.
///
/// On UEFI systems the RSDP comes from the EFI configuration table (or a Multiboot2 tag)
/// instead; pass that address to [`parse`](crate::parse) directly.
///
/// # Errors
///
/// [`AcpiError::RsdpNotFound`] when no valid RSDP is found, or the error of `mem` when it
/// cannot read the BDA word or a searched area.
pub fn find_rsdp(mem: &impl PhysMemory) -> Result<u64, AcpiError> {
    let mut word = [0; 2];
    mem.read(EBDA_POINTER, &mut word)?;
    let ebda = u64::from(u16::from_le_bytes(word)) << 4;
    if (0x400..0xA0000).contains(&ebda) {
        if let Some(rsdp) = search(mem, ebda, ebda + EBDA_SEARCH_LEN)? {
            return Ok(rsdp);
        }
    }
    search(mem, BIOS_AREA.0, BIOS_AREA.1)?.ok_or(AcpiError::RsdpNotFound)
}

/// The first valid RSDP in `start..end` (both multiples of [`CHUNK`] apart), if any.
fn search(mem: &impl PhysMemory, start: u64, end: u64) -> Result<Option<u64>, AcpiError> {
    let mut buf = [0; CHUNK];
    let mut base = start;
    while base < end {
        mem.read(base, &mut buf)?;
        let mut phys = base;
        for candidate in buf.chunks_exact(ALIGN) {
            if candidate.starts_with(SIGNATURE) && Rsdp::read(mem, phys).is_ok() {
                return Ok(Some(phys));
            }
            phys += ALIGN as u64;
        }
        base += CHUNK as u64;
    }
    Ok(None)
}
