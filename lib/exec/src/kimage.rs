//! Variant kernel images (Barrelfish/DC §4.5): what `corectl update` loads into a core.
//!
//! A variant image is an ELF64 x86-64 executable that `cargo xtask` links against the boot
//! image's statics (see `xtask/src/variant.rs`): its own code, constants and private data lie in
//! `base..base + span` in the kernel's top 2 GiB, and its other allocated sections, the boot
//! image's statics, are `NOBITS` at the boot image's addresses and never loaded. A
//! `.reef_image` section says what it is and which boot image it was linked against
//! ([`ImageInfo`]). [`KernelImage::parse`] checks all of that, reading only the file's headers, and
//! returns the segments to copy; whether the image fits the running kernel (its boot image and
//! KCB layout) is the kernel's check.

use alloc::vec::Vec;
use core::fmt;
use core::ops::Range;

/// The first bytes of a `.reef_image` section.
pub const IMAGE_MAGIC: [u8; 8] = *b"REEFIMG1";

/// [`ImageInfo::flags`]: the image's cores have no periodic timer tick, so no time slices and
/// no turns of parked KCBs (the real-time image).
pub const IMAGE_TICKLESS: u32 = 1;

/// Size of a `.reef_image` section's contents ([`ImageInfo::to_bytes`]).
pub const INFO_SIZE: usize = 64;

/// The most program headers a kernel image may have.
pub const MAX_IMAGE_PHNUM: usize = 64;

/// The lowest address a variant image's own part may start at: the kernel's top 2 GiB, which
/// the kernel's code model addresses.
pub const KERNEL_TOP: u64 = 0xffff_ffff_8000_0000;

/// What a `.reef_image` section says about its image.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ImageInfo {
    /// The identity of the boot image this one was linked against: FNV-1a of the boot image's
    /// text and read-only data as loaded ([`fnv1a`]).
    pub boot_id: u64,
    /// The KCB layout version the image's code was built with.
    pub kcb_layout: u32,
    /// What sets the image apart ([`IMAGE_TICKLESS`]).
    pub flags: u32,
    /// The start of the image's own part (page-aligned).
    pub base: u64,
    /// The size of the range its own part must lie in.
    pub span: u64,
    /// Its name (`reef-trace`), NUL-padded.
    pub name: [u8; 16],
}

impl ImageInfo {
    /// The section's bytes: magic, `boot_id`, `kcb_layout`, `flags`, `base`, `span`, `name`,
    /// zero padding; little-endian.
    pub fn to_bytes(&self) -> [u8; INFO_SIZE] {
        let mut b = [0u8; INFO_SIZE];
        b[..8].copy_from_slice(&IMAGE_MAGIC);
        b[8..16].copy_from_slice(&self.boot_id.to_le_bytes());
        b[16..20].copy_from_slice(&self.kcb_layout.to_le_bytes());
        b[20..24].copy_from_slice(&self.flags.to_le_bytes());
        b[24..32].copy_from_slice(&self.base.to_le_bytes());
        b[32..40].copy_from_slice(&self.span.to_le_bytes());
        b[40..56].copy_from_slice(&self.name);
        b
    }

    /// Reads a section's bytes ([`ImageInfo::to_bytes`]); `None` if they are not one.
    pub fn from_bytes(b: &[u8]) -> Option<ImageInfo> {
        if b.len() < INFO_SIZE || b[..8] != IMAGE_MAGIC {
            return None;
        }
        let mut name = [0u8; 16];
        name.copy_from_slice(&b[40..56]);
        Some(ImageInfo {
            boot_id: u64_at(b, 8)?,
            kcb_layout: u32_at(b, 16)?,
            flags: u32_at(b, 20)?,
            base: u64_at(b, 24)?,
            span: u64_at(b, 32)?,
            name,
        })
    }

    /// The name without its padding.
    pub fn name(&self) -> &[u8] {
        let end = self.name.iter().position(|&c| c == 0).unwrap_or(16);
        &self.name[..end]
    }
}

/// FNV-1a (64-bit) of `bytes`, continuing from `hash` (start with [`FNV_OFFSET`]): the boot
/// image's identity.
pub fn fnv1a(mut hash: u64, bytes: &[u8]) -> u64 {
    for &b in bytes {
        hash ^= u64::from(b);
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    hash
}

/// FNV-1a's starting value.
pub const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;

/// One part of the image to load: `memsz` bytes at `vaddr`, the first of them the file's bytes
/// in `file`, the rest zero.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ImageSegment {
    /// Where it goes.
    pub vaddr: u64,
    /// Its size in memory.
    pub memsz: u64,
    /// Its bytes' offsets in the file.
    pub file: Range<u64>,
    /// Whether it is mapped writable.
    pub writable: bool,
    /// Whether it is mapped executable.
    pub executable: bool,
}

/// A checked variant kernel image.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KernelImage {
    /// What it says about itself.
    pub info: ImageInfo,
    /// Its entry point (inside an executable segment).
    pub entry: u64,
    /// Its own segments, in address order, none sharing a page with another.
    pub segments: Vec<ImageSegment>,
}

/// Why a file is not a kernel image that can be loaded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ImageError {
    /// Not an ELF64 little-endian x86-64 executable (`ET_EXEC`).
    NotElf,
    /// A header table or section lies outside the file, or has entries of the wrong size.
    Truncated,
    /// No `.reef_image` section, or one without the magic.
    NotReefImage,
    /// The image's own range is not page-aligned or not in the kernel's top 2 GiB.
    BadRange,
    /// More program headers than [`MAX_IMAGE_PHNUM`].
    TooManySegments,
    /// Program header `index` loads bytes outside the image's own range, or is malformed.
    BadSegment {
        /// Index of the program header.
        index: usize,
    },
    /// Two segments share a page.
    Overlap,
    /// The entry point is not in an executable segment.
    BadEntry,
    /// The allocation of the segment list failed.
    NoMemory,
}

impl fmt::Display for ImageError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ImageError::NotElf => write!(f, "not an x86-64 ELF executable"),
            ImageError::Truncated => write!(f, "a header table or section lies outside the file"),
            ImageError::NotReefImage => write!(f, "no .reef_image section: not a Reef kernel"),
            ImageError::BadRange => write!(f, "its own range is not in the kernel's top 2 GiB"),
            ImageError::TooManySegments => write!(f, "too many program headers"),
            ImageError::BadSegment { index } => {
                write!(
                    f,
                    "program header {index} loads bytes outside the image's range"
                )
            }
            ImageError::Overlap => write!(f, "two segments share a page"),
            ImageError::BadEntry => write!(f, "the entry point is not in its code"),
            ImageError::NoMemory => write!(f, "no memory for the segment list"),
        }
    }
}

fn u16_at(b: &[u8], off: usize) -> Option<u16> {
    Some(u16::from_le_bytes(b.get(off..off + 2)?.try_into().ok()?))
}

fn u32_at(b: &[u8], off: usize) -> Option<u32> {
    Some(u32::from_le_bytes(b.get(off..off + 4)?.try_into().ok()?))
}

fn u64_at(b: &[u8], off: usize) -> Option<u64> {
    Some(u64::from_le_bytes(b.get(off..off + 8)?.try_into().ok()?))
}

/// Reads bytes of the image file: `read(offset, buf)` fills `buf` from `offset`, or fails
/// (past the end of the file, or an I/O error).
pub type Read<'a> = &'a mut dyn FnMut(u64, &mut [u8]) -> Result<(), ()>;

/// `count` entries of `size` bytes at `offset` of the file (`len` bytes long), or
/// [`ImageError::Truncated`] if they do not fit.
fn table(
    read: Read<'_>,
    len: u64,
    offset: u64,
    size: usize,
    count: usize,
) -> Result<Vec<u8>, ImageError> {
    let t = ImageError::Truncated;
    let bytes = size.checked_mul(count).ok_or(t)?;
    if offset.checked_add(bytes as u64).is_none_or(|end| end > len) {
        return Err(t);
    }
    let mut buf = Vec::new();
    buf.try_reserve_exact(bytes)
        .map_err(|_| ImageError::NoMemory)?;
    buf.resize(bytes, 0);
    read(offset, &mut buf).map_err(|()| t)?;
    Ok(buf)
}

/// The largest section-header string table read.
const MAX_NAMES: u64 = 1 << 20;

/// The bytes of the section named `want` (at most `max` of them), if the file has one.
fn section(
    read: Read<'_>,
    len: u64,
    header: &[u8],
    want: &[u8],
    max: usize,
) -> Result<Option<Vec<u8>>, ImageError> {
    let t = ImageError::Truncated;
    let shoff = u64_at(header, 0x28).ok_or(t)?;
    let shentsize = usize::from(u16_at(header, 0x3a).ok_or(t)?);
    let shnum = usize::from(u16_at(header, 0x3c).ok_or(t)?);
    let shstrndx = usize::from(u16_at(header, 0x3e).ok_or(t)?);
    if shnum == 0 {
        return Ok(None);
    }
    if shentsize != 64 || shstrndx >= shnum {
        return Err(t);
    }
    let headers = table(read, len, shoff, 64, shnum)?;
    let place = |i: usize| -> Result<(u32, u32, u64, u64), ImageError> {
        let h = &headers[64 * i..64 * i + 64];
        Ok((
            u32_at(h, 0).ok_or(t)?,
            u32_at(h, 4).ok_or(t)?,
            u64_at(h, 0x18).ok_or(t)?,
            u64_at(h, 0x20).ok_or(t)?,
        ))
    };
    let (_, _, names_at, names_len) = place(shstrndx)?;
    if names_len > MAX_NAMES {
        return Err(t);
    }
    let names = table(read, len, names_at, names_len as usize, 1)?;
    for i in 0..shnum {
        let (name_at, kind, off, size) = place(i)?;
        let name = names
            .get(name_at as usize..)
            .and_then(|n| n.split(|&c| c == 0).next())
            .ok_or(t)?;
        // NOBITS (8) sections have no bytes in the file.
        if name == want && kind != 8 {
            let size = usize::try_from(size).map_err(|_| t)?.min(max);
            return table(read, len, off, size, 1).map(Some);
        }
    }
    Ok(None)
}

impl KernelImage {
    /// Checks the file of `len` bytes that `read` reads as a variant kernel image, reading only
    /// its headers and `.reef_image` section: an ELF64 little-endian x86-64 `ET_EXEC` with a
    /// `.reef_image` section whose range `base..base + span` is page-aligned inside the
    /// kernel's top 2 GiB; every `PT_LOAD` with bytes in the file lies inside that range (one
    /// outside with none is a boot image's static, left alone), with `p_filesz <= p_memsz` and
    /// its bytes inside the file; no two of them share a page; the entry point lies in an
    /// executable one.
    pub fn parse(read: Read<'_>, len: u64) -> Result<KernelImage, ImageError> {
        let header = table(read, len, 0, 64, 1).map_err(|_| ImageError::NotElf)?;
        let elf = header[..4] == *b"\x7fELF"
            && header[4] == 2
            && header[5] == 1
            && u16_at(&header, 0x10) == Some(2)
            && u16_at(&header, 0x12) == Some(62);
        if !elf {
            return Err(ImageError::NotElf);
        }
        let info = section(read, len, &header, b".reef_image", INFO_SIZE)?
            .and_then(|b| ImageInfo::from_bytes(&b))
            .ok_or(ImageError::NotReefImage)?;
        let end = info.base.checked_add(info.span);
        if info.base < KERNEL_TOP || info.base % 4096 != 0 || info.span % 4096 != 0 || end.is_none()
        {
            return Err(ImageError::BadRange);
        }
        let own = info.base..end.unwrap_or(u64::MAX);
        let t = ImageError::Truncated;
        let entry = u64_at(&header, 0x18).ok_or(t)?;
        let phoff = u64_at(&header, 0x20).ok_or(t)?;
        let phentsize = usize::from(u16_at(&header, 0x36).ok_or(t)?);
        let phnum = usize::from(u16_at(&header, 0x38).ok_or(t)?);
        if phnum > MAX_IMAGE_PHNUM {
            return Err(ImageError::TooManySegments);
        }
        if phentsize != 56 && phnum != 0 {
            return Err(t);
        }
        let headers = table(read, len, phoff, 56, phnum)?;
        let mut segments = Vec::new();
        segments
            .try_reserve_exact(phnum)
            .map_err(|_| ImageError::NoMemory)?;
        for index in 0..phnum {
            let h = &headers[56 * index..56 * index + 56];
            let bad = ImageError::BadSegment { index };
            if u32_at(h, 0) != Some(1) {
                continue; // not PT_LOAD
            }
            let flags = u32_at(h, 4).ok_or(t)?;
            let (offset, vaddr) = (u64_at(h, 8).ok_or(t)?, u64_at(h, 0x10).ok_or(t)?);
            let (filesz, memsz) = (u64_at(h, 0x20).ok_or(t)?, u64_at(h, 0x28).ok_or(t)?);
            let last = vaddr.checked_add(memsz).ok_or(bad)?;
            let inside = own.start <= vaddr && last <= own.end;
            if !inside {
                if filesz == 0 {
                    continue; // the boot image's statics
                }
                return Err(bad);
            }
            if filesz > memsz || memsz == 0 {
                return Err(bad);
            }
            let stop = offset
                .checked_add(filesz)
                .filter(|&e| e <= len)
                .ok_or(bad)?;
            segments.push(ImageSegment {
                vaddr,
                memsz,
                file: offset..stop,
                writable: flags & 2 != 0,
                executable: flags & 1 != 0,
            });
        }
        segments.sort_by_key(|s| s.vaddr);
        let pages = |s: &ImageSegment| s.vaddr / 4096..(s.vaddr + s.memsz).div_ceil(4096);
        if segments
            .windows(2)
            .any(|w| pages(&w[0]).end > pages(&w[1]).start)
        {
            return Err(ImageError::Overlap);
        }
        let in_code =
            |s: &ImageSegment| s.executable && (s.vaddr..s.vaddr + s.memsz).contains(&entry);
        if !segments.iter().any(in_code) {
            return Err(ImageError::BadEntry);
        }
        Ok(KernelImage {
            info,
            entry,
            segments,
        })
    }
}
