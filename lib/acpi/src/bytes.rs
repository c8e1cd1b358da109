//! Bounds-checked little-endian access to table bytes.

use alloc::vec::Vec;

use crate::AcpiError;

/// Length of the common System Description Table header.
pub(crate) const HEADER_LEN: usize = 36;

/// The `N` bytes at `offset`, or `None` when they are not all inside `bytes`.
fn le<const N: usize>(bytes: &[u8], offset: usize) -> Option<[u8; N]> {
    bytes.get(offset..offset.checked_add(N)?)?.try_into().ok()
}

/// Little-endian `u16` at `offset` of `bytes`.
pub(crate) fn u16_at(bytes: &[u8], offset: usize) -> Option<u16> {
    le(bytes, offset).map(u16::from_le_bytes)
}

/// Little-endian `u32` at `offset` of `bytes`.
pub(crate) fn u32_at(bytes: &[u8], offset: usize) -> Option<u32> {
    le(bytes, offset).map(u32::from_le_bytes)
}

/// Little-endian `u64` at `offset` of `bytes`.
pub(crate) fn u64_at(bytes: &[u8], offset: usize) -> Option<u64> {
    le(bytes, offset).map(u64::from_le_bytes)
}

/// Sum of `bytes` modulo 256; ACPI structures are valid when it is zero.
pub(crate) fn sum(bytes: &[u8]) -> u8 {
    bytes.iter().fold(0, |acc: u8, &b| acc.wrapping_add(b))
}

/// A checksummed table read into memory, with its identity for error reports.
pub(crate) struct Table {
    /// The header's signature.
    pub(crate) signature: [u8; 4],
    /// Physical address of the first byte.
    pub(crate) phys: u64,
    /// The whole table, header included (`data.len()` is the header's length field).
    pub(crate) data: Vec<u8>,
}

impl Table {
    /// The header's revision byte.
    pub(crate) fn revision(&self) -> u8 {
        self.data.get(8).copied().unwrap_or(0)
    }

    /// The error for a table too short for what it must contain.
    pub(crate) fn bad_length(&self) -> AcpiError {
        AcpiError::BadLength {
            signature: self.signature,
            phys: self.phys,
            length: u32::try_from(self.data.len()).unwrap_or(u32::MAX),
        }
    }

    /// Byte at `offset` of the table.
    pub(crate) fn u8(&self, offset: usize) -> Result<u8, AcpiError> {
        self.data
            .get(offset)
            .copied()
            .ok_or_else(|| self.bad_length())
    }

    /// Little-endian `u16` at `offset` of the table.
    pub(crate) fn u16(&self, offset: usize) -> Result<u16, AcpiError> {
        u16_at(&self.data, offset).ok_or_else(|| self.bad_length())
    }

    /// Little-endian `u32` at `offset` of the table.
    pub(crate) fn u32(&self, offset: usize) -> Result<u32, AcpiError> {
        u32_at(&self.data, offset).ok_or_else(|| self.bad_length())
    }

    /// Little-endian `u64` at `offset` of the table.
    pub(crate) fn u64(&self, offset: usize) -> Result<u64, AcpiError> {
        u64_at(&self.data, offset).ok_or_else(|| self.bad_length())
    }

    /// Iterates over the `(type, length, ...)` structures from `start` to the end of the table.
    pub(crate) fn entries(&self, start: usize) -> Entries<'_> {
        Entries {
            table: self,
            offset: start,
        }
    }
}

/// One variable-length structure inside a MADT or SRAT.
pub(crate) struct Entry<'a> {
    /// The structure's type byte.
    pub(crate) kind: u8,
    table: &'a Table,
    offset: usize,
    bytes: &'a [u8],
}

impl Entry<'_> {
    /// The error for this entry being shorter than its type requires or holding bad values.
    pub(crate) fn malformed(&self) -> AcpiError {
        AcpiError::BadEntry {
            signature: self.table.signature,
            phys: self.table.phys,
            offset: self.offset,
        }
    }

    /// Byte at `offset` of the entry.
    pub(crate) fn u8(&self, offset: usize) -> Result<u8, AcpiError> {
        self.bytes
            .get(offset)
            .copied()
            .ok_or_else(|| self.malformed())
    }

    /// Little-endian `u16` at `offset` of the entry.
    pub(crate) fn u16(&self, offset: usize) -> Result<u16, AcpiError> {
        u16_at(self.bytes, offset).ok_or_else(|| self.malformed())
    }

    /// Little-endian `u32` at `offset` of the entry.
    pub(crate) fn u32(&self, offset: usize) -> Result<u32, AcpiError> {
        u32_at(self.bytes, offset).ok_or_else(|| self.malformed())
    }

    /// Little-endian `u64` at `offset` of the entry.
    pub(crate) fn u64(&self, offset: usize) -> Result<u64, AcpiError> {
        u64_at(self.bytes, offset).ok_or_else(|| self.malformed())
    }
}

/// Iterator over the structures of a table; see [`Table::entries`].
///
/// A structure whose length is below 2 (which would never advance) or that runs past the end
/// of the table yields one error and ends the iteration.
pub(crate) struct Entries<'a> {
    table: &'a Table,
    offset: usize,
}

impl<'a> Iterator for Entries<'a> {
    type Item = Result<Entry<'a>, AcpiError>;

    fn next(&mut self) -> Option<Self::Item> {
        let data = &self.table.data;
        let offset = self.offset;
        if offset >= data.len() {
            return None;
        }
        let entry = data
            .get(offset + 1)
            .map(|&len| usize::from(len))
            .filter(|&len| len >= 2)
            .and_then(|len| data.get(offset..offset + len));
        match entry {
            Some(bytes) => {
                self.offset += bytes.len();
                Some(Ok(Entry {
                    kind: bytes[0],
                    table: self.table,
                    offset,
                    bytes,
                }))
            }
            None => {
                self.offset = data.len();
                Some(Err(AcpiError::BadEntry {
                    signature: self.table.signature,
                    phys: self.table.phys,
                    offset,
                }))
            }
        }
    }
}
