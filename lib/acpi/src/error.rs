//! The error type.

use core::fmt;

/// Why ACPI tables could not be found or parsed.
///
/// Table signatures are the raw four bytes from the header (for example `*b"APIC"` for the
/// MADT); `phys` is the physical address of the table's first byte.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AcpiError {
    /// The [`PhysMemory`](crate::PhysMemory) could not provide `len` bytes at `phys`.
    Unreadable {
        /// First physical address of the failed read.
        phys: u64,
        /// Number of bytes requested.
        len: usize,
    },
    /// [`find_rsdp`](crate::find_rsdp) found no valid RSDP in the EBDA or the BIOS area.
    RsdpNotFound,
    /// The structure at `phys` given to [`parse`](crate::parse) is not a valid RSDP.
    InvalidRsdp {
        /// Address that was passed as the RSDP.
        phys: u64,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// A table pointed to by a typed pointer (RSDT, XSDT, DSDT, FACS) has the wrong signature.
    BadSignature {
        /// Address of the table.
        phys: u64,
        /// The signature the pointer promised.
        expected: [u8; 4],
        /// The signature found there.
        found: [u8; 4],
    },
    /// The bytes of a table do not sum to zero.
    BadChecksum {
        /// Signature of the table.
        signature: [u8; 4],
        /// Address of the table.
        phys: u64,
    },
    /// A table's length field is impossible: shorter than the table's fixed fields (or, for
    /// the SLIT, than its matrix; for the RSDT/XSDT, not a whole number of entries), longer
    /// than [`MAX_TABLE_LENGTH`](crate::MAX_TABLE_LENGTH), or running past the end of the
    /// physical address space.
    BadLength {
        /// Signature of the table.
        signature: [u8; 4],
        /// Address of the table.
        phys: u64,
        /// The length field.
        length: u32,
    },
    /// A variable-length entry (a MADT or SRAT structure) has a length smaller than two or
    /// than its type requires, runs past the end of the table, or holds impossible values
    /// (a memory range that wraps around the address space).
    BadEntry {
        /// Signature of the table containing the entry.
        signature: [u8; 4],
        /// Address of the table.
        phys: u64,
        /// Offset of the entry from the start of the table.
        offset: usize,
    },
}

/// Displays a table signature, escaping bytes that are not printable ASCII.
pub(crate) struct Signature<'a>(pub &'a [u8]);

impl fmt::Display for Signature<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for &b in self.0 {
            if b.is_ascii_graphic() || b == b' ' {
                write!(f, "{}", char::from(b))?;
            } else {
                write!(f, "\\x{b:02x}")?;
            }
        }
        Ok(())
    }
}

impl fmt::Display for AcpiError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Self::Unreadable { phys, len } => {
                write!(f, "cannot read {len} bytes of physical memory at {phys:#x}")
            }
            Self::RsdpNotFound => f.write_str("no ACPI RSDP in the EBDA or 0xe0000..0x100000"),
            Self::InvalidRsdp { phys, reason } => {
                write!(f, "invalid ACPI RSDP at {phys:#x}: {reason}")
            }
            Self::BadSignature {
                phys,
                expected,
                found,
            } => write!(
                f,
                "ACPI table at {phys:#x} has signature \"{}\", expected \"{}\"",
                Signature(&found),
                Signature(&expected)
            ),
            Self::BadChecksum { signature, phys } => write!(
                f,
                "ACPI table \"{}\" at {phys:#x} has a bad checksum",
                Signature(&signature)
            ),
            Self::BadLength {
                signature,
                phys,
                length,
            } => write!(
                f,
                "ACPI table \"{}\" at {phys:#x} has an invalid length {length}",
                Signature(&signature)
            ),
            Self::BadEntry {
                signature,
                phys,
                offset,
            } => write!(
                f,
                "ACPI table \"{}\" at {phys:#x} has a malformed entry at offset {offset:#x}",
                Signature(&signature)
            ),
        }
    }
}
