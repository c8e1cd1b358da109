//! The value types of the interface: protections, page sizes, regions, results and errors.

use abi::Errno;
use core::fmt;

/// The size of a base page (4 KiB).
pub const PAGE_SIZE: u64 = 4096;
/// The size of a large page (2 MiB).
pub const LARGE_PAGE_SIZE: u64 = 2 << 20;
/// The end (exclusive) of the user half: addresses at or above it are the kernel half or
/// non-canonical, and no operation of this crate touches them.
pub const USER_END: u64 = 0x0000_8000_0000_0000;

/// The access rights of a region or a page, like Linux's `PROT_READ | PROT_WRITE | PROT_EXEC`.
///
/// A region keeps the protection exactly as requested. The hardware cannot express every
/// combination: on x86-64 a present page is always readable, so a page's *effective*
/// protection ([`Prot::effective`]) has `read` set whenever `write` or `exec` is.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Prot {
    /// Loads are allowed.
    pub read: bool,
    /// Stores are allowed.
    pub write: bool,
    /// Instruction fetches are allowed.
    pub exec: bool,
}

impl Prot {
    /// `PROT_NONE`: no access at all.
    pub const NONE: Prot = Prot {
        read: false,
        write: false,
        exec: false,
    };
    /// `PROT_READ`.
    pub const READ: Prot = Prot {
        read: true,
        write: false,
        exec: false,
    };
    /// `PROT_READ | PROT_WRITE`.
    pub const RW: Prot = Prot {
        read: true,
        write: true,
        exec: false,
    };
    /// `PROT_READ | PROT_EXEC`.
    pub const RX: Prot = Prot {
        read: true,
        write: false,
        exec: true,
    };
    /// `PROT_READ | PROT_WRITE | PROT_EXEC`.
    pub const RWX: Prot = Prot {
        read: true,
        write: true,
        exec: true,
    };

    /// Whether this is `PROT_NONE`.
    pub const fn is_none(self) -> bool {
        !self.read && !self.write && !self.exec
    }

    /// What the hardware grants for a page of this protection: write or exec imply read.
    pub const fn effective(self) -> Prot {
        Prot {
            read: !self.is_none(),
            write: self.write,
            exec: self.exec,
        }
    }

    /// Converts Linux's `prot` argument (`PROT_READ` = 1, `PROT_WRITE` = 2, `PROT_EXEC` = 4);
    /// `None` if other bits are set (the kernel strips `PROT_GROWSDOWN`/`PROT_GROWSUP` first).
    pub const fn from_linux(bits: u64) -> Option<Prot> {
        if bits & !7 != 0 {
            return None;
        }
        Some(Prot {
            read: bits & 1 != 0,
            write: bits & 2 != 0,
            exec: bits & 4 != 0,
        })
    }

    /// The Linux `prot` bits of this protection.
    pub const fn to_linux(self) -> u64 {
        self.read as u64 | (self.write as u64) << 1 | (self.exec as u64) << 2
    }
}

impl fmt::Display for Prot {
    /// Formats like `/proc/PID/maps`: `rw-`, `r-x`, `---`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let c = |set: bool, ch: char| if set { ch } else { '-' };
        write!(
            f,
            "{}{}{}",
            c(self.read, 'r'),
            c(self.write, 'w'),
            c(self.exec, 'x')
        )
    }
}

/// The size of one hardware mapping.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum PageSize {
    /// A 4 KiB page (a page-table entry).
    Base4K,
    /// A 2 MiB page (a page-directory entry with [`HUGE`](crate::HUGE) set).
    Large2M,
}

impl PageSize {
    /// The size in bytes.
    pub const fn bytes(self) -> u64 {
        match self {
            PageSize::Base4K => PAGE_SIZE,
            PageSize::Large2M => LARGE_PAGE_SIZE,
        }
    }
}

/// What a region holds; the kernel uses it for `fork`, `brk`, stack growth and `/proc` output.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RegionKind {
    /// Anonymous memory from `mmap`; `shared` (`MAP_SHARED`) regions keep sharing their frames
    /// with the child after `fork`, private ones are copied.
    Anonymous {
        /// Mapped with `MAP_SHARED`.
        shared: bool,
    },
    /// The main thread's stack.
    Stack,
    /// The program break (`brk`).
    Heap,
    /// A loaded ELF segment.
    Image,
    /// A mapping of a file (`mmap` with a descriptor). A private one maps its pages
    /// copy-on-write; a shared one (`MAP_SHARED`) maps the file's shared frames, which `fork`
    /// keeps sharing. The kernel maps the pages when the region is made and brings a missing
    /// one back from the file (or raises SIGBUS past its end, as Linux).
    File {
        /// Mapped with `MAP_SHARED`.
        shared: bool,
        /// The kernel's number for the file (an NR-FS inode; 0 for a file it cannot find again
        /// by number).
        file: u64,
        /// The file's page (offset / 4096) at the region's start; a region split in two keeps
        /// each part's, and only regions continuing each other in the file merge.
        page: u64,
    },
    /// Frames the kernel shares between processes (a message connection's two channels, a
    /// mailbox's eventcount, a grant): all mapped when the region is made, never demand-paged,
    /// and not copied into a `fork` child (Linux's `VM_DONTCOPY`): the kernel object they
    /// belong to stays with the process that holds its descriptor.
    Channel {
        /// Whether the region may be made writable (a read-only grant may not: Linux's
        /// `VM_MAYWRITE`).
        writable: bool,
    },
}

impl RegionKind {
    /// Whether the region's frames are seen by other address spaces as they are (never copied
    /// on write): `MAP_SHARED` memory and files, and channels. Their futexes are keyed by frame.
    pub fn is_shared(self) -> bool {
        matches!(
            self,
            RegionKind::Anonymous { shared: true }
                | RegionKind::File { shared: true, .. }
                | RegionKind::Channel { .. }
        )
    }

    /// The kind of the part of a region of this kind that starts `offset` bytes (a multiple
    /// of the page size) after the region: the same, with a file region's page moved on.
    pub fn advanced(self, offset: u64) -> RegionKind {
        match self {
            RegionKind::File { shared, file, page } => RegionKind::File {
                shared,
                file,
                page: page + offset / PAGE_SIZE,
            },
            k => k,
        }
    }
}

/// One entry of the mapping database: a page-aligned range `[start, end)` of virtual addresses
/// with one protection and kind (like a Linux VMA).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Region {
    /// The first address (page-aligned).
    pub start: u64,
    /// The end address, exclusive (page-aligned, greater than `start`).
    pub end: u64,
    /// The protection requested for the region.
    pub prot: Prot,
    /// What the region holds.
    pub kind: RegionKind,
}

impl Region {
    /// The length in bytes.
    pub const fn len(&self) -> u64 {
        self.end - self.start
    }

    /// Always false: regions are never empty (present for API completeness next to `len`).
    pub const fn is_empty(&self) -> bool {
        self.start == self.end
    }

    /// Whether `va` lies inside the region.
    pub const fn contains(&self, va: u64) -> bool {
        self.start <= va && va < self.end
    }

    /// Whether `next`, starting where `self` ends, can be merged into `self`: same protection
    /// and kind, and for a file the next pages of the same file.
    pub(crate) fn merges_with(&self, next: &Region) -> bool {
        self.end == next.start
            && self.prot == next.prot
            && self.kind.advanced(self.len()) == next.kind
    }
}

/// A page mapping removed by `unmap`, `map_region(.., replace)` or `clear`: the kernel frees
/// (or drops its reference to) `phys` after the TLB shootdown.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Unmapped {
    /// The virtual address of the page.
    pub vaddr: u64,
    /// The physical address of its frame.
    pub phys: u64,
    /// The page size.
    pub size: PageSize,
}

/// One page mapping, as listed by [`AddressSpace::pages`](crate::AddressSpace::pages).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Mapping {
    /// The virtual address of the page.
    pub vaddr: u64,
    /// The physical address of its frame.
    pub phys: u64,
    /// The page size.
    pub size: PageSize,
    /// The page's effective protection ([`Prot::NONE`] for a `PROT_NONE` page; never `write`
    /// for a copy-on-write page).
    pub prot: Prot,
    /// The frame is shared copy-on-write (the entry carries [`COW`](crate::COW)).
    pub cow: bool,
}

/// The result of [`AddressSpace::resolve`](crate::AddressSpace::resolve).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Translation {
    /// The physical address of the byte at the resolved virtual address.
    pub phys: u64,
    /// The physical address of the frame (the page's first byte).
    pub frame: u64,
    /// The page size.
    pub size: PageSize,
    /// The page's effective protection ([`Prot::NONE`] for a `PROT_NONE` page, whose entry is not
    /// present; never `write` for a copy-on-write page).
    pub prot: Prot,
    /// The frame is shared copy-on-write: a write must first break the sharing
    /// ([`AddressSpace::break_cow`](crate::AddressSpace::break_cow)).
    pub cow: bool,
}

/// The entries a page walk passed through, for fault reports (see
/// [`AddressSpace::walk`](crate::AddressSpace::walk)).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Walk {
    /// The PML4, PDPT, PD and PT entries in that order; `None` for the levels the walk did not
    /// reach (below an empty entry or a 2 MiB leaf).
    pub entries: [Option<u64>; 4],
}

/// Why an address-space operation failed. A failed operation changes nothing.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MapError {
    /// `TableMemory` had no frame for a page table.
    OutOfMemory,
    /// The new region overlaps an existing one (and `replace` was not given).
    Overlap,
    /// A page is already mapped at (part of) the address.
    AlreadyMapped,
    /// (Part of) the page lies outside every region.
    NotInRegion,
    /// (Part of) the range is not covered by regions.
    NotMapped,
    /// An address or length is unaligned, zero, overflows, is non-canonical or touches the
    /// kernel half, or a frame address is unaligned or wider than 52 bits.
    BadAddress,
    /// A `PROT_NONE` page cannot be mapped: the protection or the region's protection is none.
    ProtNone,
    /// The region may not be given that protection (a read-only grant made writable).
    Denied,
}

impl MapError {
    /// The Linux error number for the syscall that failed: `ENOMEM` for `OutOfMemory` and
    /// `NotMapped` (as `mprotect`/`mmap` return), `EEXIST` for `Overlap` and `AlreadyMapped`
    /// (as `MAP_FIXED_NOREPLACE` returns), `EFAULT` for `NotInRegion` and `ProtNone` (a fault
    /// on such an address is a bad access), `EINVAL` for `BadAddress`, `EACCES` for `Denied`
    /// (as `mprotect` answers for a mapping that may not be written).
    pub const fn to_errno(self) -> Errno {
        match self {
            MapError::OutOfMemory | MapError::NotMapped => Errno::ENOMEM,
            MapError::Overlap | MapError::AlreadyMapped => Errno::EEXIST,
            MapError::NotInRegion | MapError::ProtNone => Errno::EFAULT,
            MapError::BadAddress => Errno::EINVAL,
            MapError::Denied => Errno::EACCES,
        }
    }
}

impl fmt::Display for MapError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            MapError::OutOfMemory => "out of memory for page tables",
            MapError::Overlap => "the range overlaps an existing region",
            MapError::AlreadyMapped => "a page is already mapped at this address",
            MapError::NotInRegion => "the page lies outside every region",
            MapError::NotMapped => "part of the range is not mapped by any region",
            MapError::BadAddress => {
                "bad address or length (unaligned, empty, overflowing, or outside the user half)"
            }
            MapError::ProtNone => "a PROT_NONE page cannot be mapped",
            MapError::Denied => "the region may not be given that protection",
        })
    }
}
