//! The multiboot (v1) information the loader hands over: memory map, command line, modules.
//!
//! It is read once, early, through the boot identity map (the loader places it below 1 GiB), and
//! copied into [`BootInfo`], so nothing refers to loader memory afterwards.

use core::fmt;

/// Magic value in EAX on entry from a multiboot loader.
pub const LOADER_MAGIC: u32 = 0x2BAD_B002;

/// Most memory-map entries Reef accepts.
pub const MAX_MEMORY_REGIONS: usize = 128;
/// Longest kernel command line Reef accepts, in bytes.
pub const MAX_CMDLINE: usize = 4096;
/// Most boot modules Reef accepts.
pub const MAX_MODULES: usize = 8;

/// Kind of a memory-map entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RegionKind {
    /// Usable RAM.
    Available,
    /// RAM holding ACPI tables, reclaimable after they are parsed.
    AcpiReclaimable,
    /// Anything else (reserved, ACPI NVS, bad memory).
    Reserved,
}

/// One entry of the firmware memory map.
#[derive(Clone, Copy, Debug)]
pub struct MemoryRegion {
    /// First physical address.
    pub base: u64,
    /// Length in bytes.
    pub length: u64,
    /// What the memory is.
    pub kind: RegionKind,
}

/// A boot module (the initramfs, later).
#[derive(Clone, Copy, Debug)]
pub struct Module {
    /// First physical address.
    pub start: u64,
    /// One past the last physical address.
    pub end: u64,
}

/// What Reef keeps of the multiboot information.
pub struct BootInfo {
    /// The memory map; the first `region_count` entries are valid.
    regions: [MemoryRegion; MAX_MEMORY_REGIONS],
    /// Number of valid entries in `regions`.
    region_count: usize,
    /// The command line as the loader gave it; the first `cmdline_len` bytes are valid.
    cmdline: [u8; MAX_CMDLINE],
    /// Length of the command line in bytes.
    cmdline_len: usize,
    /// The boot modules; the first `module_count` entries are valid.
    modules: [Module; MAX_MODULES],
    /// Number of valid entries in `modules`.
    module_count: usize,
}

/// Why the multiboot information was rejected.
#[derive(Debug)]
pub enum BootInfoError {
    /// Not started by a multiboot loader.
    BadMagic(u32),
    /// The loader gave no memory map.
    NoMemoryMap,
    /// The information lies where the boot identity map does not reach.
    OutOfReach(u64),
    /// More memory-map entries than [`MAX_MEMORY_REGIONS`].
    TooManyRegions,
    /// Command line longer than [`MAX_CMDLINE`].
    CmdlineTooLong(usize),
    /// More modules than [`MAX_MODULES`].
    TooManyModules(u32),
    /// The command line is not UTF-8.
    CmdlineNotUtf8,
}

impl fmt::Display for BootInfoError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BootInfoError::BadMagic(m) => write!(f, "not a multiboot boot (EAX={m:#x})"),
            BootInfoError::NoMemoryMap => write!(f, "the boot loader gave no memory map"),
            BootInfoError::OutOfReach(a) => {
                write!(
                    f,
                    "multiboot data at {a:#x} is above the 1 GiB boot mapping"
                )
            }
            BootInfoError::TooManyRegions => {
                write!(f, "memory map has more than {MAX_MEMORY_REGIONS} entries")
            }
            BootInfoError::CmdlineTooLong(n) => {
                write!(
                    f,
                    "kernel command line is {n} bytes, the limit is {MAX_CMDLINE}"
                )
            }
            BootInfoError::CmdlineNotUtf8 => write!(f, "kernel command line is not UTF-8"),
            BootInfoError::TooManyModules(n) => {
                write!(f, "{n} boot modules given, the limit is {MAX_MODULES}")
            }
        }
    }
}

/// End of the boot identity map: the first GiB of physical memory.
const IDENTITY_LIMIT: u64 = 1 << 30;

/// Returns the bytes at physical `[phys, phys + len)` through the boot identity map.
fn early_bytes(phys: u64, len: usize) -> Result<&'static [u8], BootInfoError> {
    let end = phys
        .checked_add(len as u64)
        .ok_or(BootInfoError::OutOfReach(phys))?;
    if phys == 0 || end > IDENTITY_LIMIT {
        return Err(BootInfoError::OutOfReach(phys));
    }
    // SAFETY: called only before the kernel page tables replace the boot tables, which
    // identity-map the first GiB; the range was checked to lie inside it and the loader's data
    // is not modified while we read it.
    Ok(unsafe { core::slice::from_raw_parts(phys as *const u8, len) })
}

/// The little-endian `u32` at byte offset `off` of `b`.
fn u32_at(b: &[u8], off: usize) -> u32 {
    u32::from_le_bytes(b[off..off + 4].try_into().expect("4 bytes"))
}

/// The little-endian `u64` at byte offset `off` of `b`.
fn u64_at(b: &[u8], off: usize) -> u64 {
    u64::from_le_bytes(b[off..off + 8].try_into().expect("8 bytes"))
}

impl BootInfo {
    /// An empty value (for static storage).
    pub const fn empty() -> BootInfo {
        BootInfo {
            regions: [MemoryRegion {
                base: 0,
                length: 0,
                kind: RegionKind::Reserved,
            }; MAX_MEMORY_REGIONS],
            region_count: 0,
            cmdline: [0; MAX_CMDLINE],
            cmdline_len: 0,
            modules: [Module { start: 0, end: 0 }; MAX_MODULES],
            module_count: 0,
        }
    }

    /// Reads the multiboot information at `mbi_phys`. Must run while the boot identity map is
    /// active.
    pub fn read(&mut self, magic: u32, mbi_phys: u64) -> Result<(), BootInfoError> {
        if magic != LOADER_MAGIC {
            return Err(BootInfoError::BadMagic(magic));
        }
        let mbi = early_bytes(mbi_phys, 88)?;
        let flags = u32_at(mbi, 0);
        if flags & (1 << 6) == 0 {
            return Err(BootInfoError::NoMemoryMap);
        }
        let mmap_len = u32_at(mbi, 44) as usize;
        let mmap = early_bytes(u32_at(mbi, 48) as u64, mmap_len)?;
        let mut off = 0;
        while off + 24 <= mmap_len {
            let size = u32_at(mmap, off) as usize;
            let kind = match u32_at(mmap, off + 20) {
                1 => RegionKind::Available,
                3 => RegionKind::AcpiReclaimable,
                _ => RegionKind::Reserved,
            };
            if self.region_count == MAX_MEMORY_REGIONS {
                return Err(BootInfoError::TooManyRegions);
            }
            self.regions[self.region_count] = MemoryRegion {
                base: u64_at(mmap, off + 4),
                length: u64_at(mmap, off + 12),
                kind,
            };
            self.region_count += 1;
            off += size + 4;
        }
        if flags & (1 << 2) != 0 {
            let addr = u32_at(mbi, 16) as u64;
            let mut len = 0;
            loop {
                let b = early_bytes(addr + len as u64, 1)?[0];
                if b == 0 {
                    break;
                }
                if len == MAX_CMDLINE {
                    let mut total = len;
                    while early_bytes(addr + total as u64, 1)?[0] != 0 {
                        total += 1;
                    }
                    return Err(BootInfoError::CmdlineTooLong(total));
                }
                self.cmdline[len] = b;
                len += 1;
            }
            core::str::from_utf8(&self.cmdline[..len])
                .map_err(|_| BootInfoError::CmdlineNotUtf8)?;
            self.cmdline_len = len;
        }
        if flags & (1 << 3) != 0 {
            let count = u32_at(mbi, 20);
            if count as usize > MAX_MODULES {
                return Err(BootInfoError::TooManyModules(count));
            }
            let mods = early_bytes(u32_at(mbi, 24) as u64, count as usize * 16)?;
            for i in 0..count as usize {
                self.modules[i] = Module {
                    start: u32_at(mods, i * 16) as u64,
                    end: u32_at(mods, i * 16 + 4) as u64,
                };
            }
            self.module_count = count as usize;
        }
        Ok(())
    }

    /// The firmware memory map.
    pub fn regions(&self) -> &[MemoryRegion] {
        &self.regions[..self.region_count]
    }

    /// The boot modules.
    pub fn modules(&self) -> &[Module] {
        &self.modules[..self.module_count]
    }

    /// The kernel command line without the kernel image path that multiboot loaders put first.
    pub fn cmdline(&self) -> &str {
        // `read` accepted only UTF-8.
        let raw = core::str::from_utf8(&self.cmdline[..self.cmdline_len]).unwrap_or_default();
        match raw.trim_start().split_once(' ') {
            Some((_path, rest)) => rest.trim(),
            None => "",
        }
    }

    /// One past the highest physical address in the memory map.
    pub fn max_phys(&self) -> u64 {
        self.regions()
            .iter()
            .map(|r| r.base.saturating_add(r.length))
            .max()
            .unwrap_or(0)
    }
}
