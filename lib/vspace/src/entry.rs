//! The x86-64 page-table entry layout used by Reef, and [`decode`] for fault reports.

use core::fmt;

/// Bit 0: the entry maps something (a table or a page) the hardware may use.
pub const PRESENT: u64 = 1 << 0;
/// Bit 1: writes are allowed (in a leaf; intermediate entries always set it).
pub const WRITABLE: u64 = 1 << 1;
/// Bit 2: user mode may access (set in every entry of the user half).
pub const USER: u64 = 1 << 2;
/// Bit 5: set by the hardware when the entry was used for a translation.
pub const ACCESSED: u64 = 1 << 5;
/// Bit 6: set by the hardware when a leaf's page was written.
pub const DIRTY: u64 = 1 << 6;
/// Bit 7 (PS) in a page-directory entry: the entry maps a 2 MiB page instead of a table.
pub const HUGE: u64 = 1 << 7;
/// Bit 9, ignored by the hardware: Reef's marker for a leaf whose frame is mapped but whose
/// protection is `PROT_NONE`. Such an entry has [`PRESENT`] clear (so every access faults) but
/// keeps its frame address, so a later `mprotect` back to an accessible protection restores it.
pub const PROT_NONE: u64 = 1 << 9;
/// Bit 10, ignored by the hardware: Reef's marker for a leaf whose frame is shared copy-on-write
/// (after `fork`, or the shared zero page). Such an entry is never [`WRITABLE`]; a write fault
/// on it gives the address space its own copy of the frame (or the frame itself, once no one
/// else shares it). `protect` keeps the marker, so a copy-on-write page stays read-only whatever
/// protection its region gets.
pub const COW: u64 = 1 << 10;
/// Bit 63: instruction fetches are not allowed (requires `EFER.NXE`).
pub const NX: u64 = 1 << 63;
/// The physical-address bits 12..52 of an entry (a table or a 4 KiB frame).
pub const ADDR_MASK: u64 = 0x000F_FFFF_FFFF_F000;
/// The physical-address bits 21..52 of a 2 MiB leaf (bit 12 of such an entry is PAT, which Reef
/// never sets).
pub const LARGE_ADDR_MASK: u64 = 0x000F_FFFF_FFE0_0000;
/// The flags of an entry that points to a lower-level table: present, writable and user, so that
/// the leaf alone decides the access rights.
pub const TABLE_FLAGS: u64 = PRESENT | WRITABLE | USER;

/// The fields of one page-table entry, as [`decode`] reads them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EntryInfo {
    /// The raw entry.
    pub raw: u64,
    /// The physical address in the entry (`raw & ADDR_MASK`).
    pub addr: u64,
    /// [`PRESENT`] is set.
    pub present: bool,
    /// [`WRITABLE`] is set.
    pub writable: bool,
    /// [`USER`] is set.
    pub user: bool,
    /// [`ACCESSED`] is set.
    pub accessed: bool,
    /// [`DIRTY`] is set.
    pub dirty: bool,
    /// [`HUGE`] is set (a 2 MiB leaf when the entry is in a page directory).
    pub huge: bool,
    /// Reef's software [`PROT_NONE`] marker is set.
    pub prot_none: bool,
    /// Reef's software [`COW`] marker is set.
    pub cow: bool,
    /// [`NX`] is set.
    pub no_exec: bool,
}

/// Splits a page-table entry into its fields (for the page-fault handler's reports).
///
/// The entry's level is not known here, so `addr` is always `raw & ADDR_MASK`; for a 2 MiB leaf
/// that is the frame address, since Reef never sets the PAT bit.
pub const fn decode(entry: u64) -> EntryInfo {
    EntryInfo {
        raw: entry,
        addr: entry & ADDR_MASK,
        present: entry & PRESENT != 0,
        writable: entry & WRITABLE != 0,
        user: entry & USER != 0,
        accessed: entry & ACCESSED != 0,
        dirty: entry & DIRTY != 0,
        huge: entry & HUGE != 0,
        prot_none: entry & PROT_NONE != 0,
        cow: entry & COW != 0,
        no_exec: entry & NX != 0,
    }
}

impl fmt::Display for EntryInfo {
    /// Formats as `0x<raw> -> 0x<addr> [flags]`, e.g. `0x8000000000001007 -> 0x1000 [P W U NX]`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:#x} -> {:#x} [", self.raw, self.addr)?;
        let flags = [
            (self.present, "P"),
            (self.writable, "W"),
            (self.user, "U"),
            (self.accessed, "A"),
            (self.dirty, "D"),
            (self.huge, "PS"),
            (self.prot_none, "PROT_NONE"),
            (self.cow, "COW"),
            (self.no_exec, "NX"),
        ];
        let mut first = true;
        for (set, name) in flags {
            if set {
                if !first {
                    f.write_str(" ")?;
                }
                f.write_str(name)?;
                first = false;
            }
        }
        f.write_str("]")
    }
}
