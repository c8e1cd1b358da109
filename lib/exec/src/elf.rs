//! ELF64 header and program-header parsing, and the load layout derived from them.

use crate::{ExecError, MAX_PHNUM, MIN_USER_ADDR, PAGE_SIZE, USER_END};
use alloc::vec::Vec;
use core::ops::Range;

/// Size of the ELF64 file header.
const EHDR_SIZE: usize = 64;
/// Size of one ELF64 program header.
const PHDR_SIZE: u16 = 56;

const ELFCLASS64: u8 = 2;
const ELFDATA2LSB: u8 = 1;
const EV_CURRENT: u8 = 1;
const ET_EXEC: u16 = 2;
const ET_DYN: u16 = 3;
const EM_X86_64: u16 = 62;

const PT_LOAD: u32 = 1;
const PT_INTERP: u32 = 3;
const PT_PHDR: u32 = 6;
const PT_TLS: u32 = 7;
const PT_GNU_STACK: u32 = 0x6474_e551;

const PF_X: u32 = 1;
const PF_W: u32 = 2;
const PF_R: u32 = 4;

/// The base at which Linux (x86-64, without address-space randomisation) places a
/// position-independent executable: two thirds of the user address space, page-aligned.
pub const DEFAULT_PIE_BASE: u64 = 0x5555_5555_4000;

/// Which of the two supported ELF types an executable is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ElfKind {
    /// `ET_EXEC`: linked at fixed addresses; the load bias is 0.
    Exec,
    /// `ET_DYN`: position-independent, loaded at the base the caller chooses: a static-PIE or
    /// a dynamic loader (which relocate themselves), or a PIE whose `PT_INTERP` loader
    /// relocates it.
    Dyn,
}

/// The longest `PT_INTERP` segment accepted, with its NUL (Linux's `PATH_MAX`).
const MAX_INTERP: u64 = 4096;

/// One loadable (`PT_LOAD`) segment, with the load bias applied.
///
/// To load it: map [`Segment::map_range`] with its permissions (see [`Executable::mappings`]
/// for pages shared with a neighbouring segment), copy the file bytes [`Segment::file_range`]
/// to address [`Segment::vaddr`], and make sure [`Segment::zero_range`] reads as zero (it
/// already does when the frames were freshly zeroed).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Segment {
    /// First byte of the segment in memory (`p_vaddr` plus the load bias).
    pub vaddr: u64,
    /// Size in memory (`p_memsz`), never 0.
    pub memsz: u64,
    /// Offset of the segment's bytes in the file (`p_offset`).
    pub file_offset: u64,
    /// Number of bytes to copy from the file (`p_filesz`, at most `memsz`).
    pub filesz: u64,
    /// `PF_R`.
    pub readable: bool,
    /// `PF_W`.
    pub writable: bool,
    /// `PF_X`.
    pub executable: bool,
}

impl Segment {
    /// The page-aligned address range to map: from the page containing [`Segment::vaddr`] to
    /// the end of the page containing the segment's last byte.
    pub fn map_range(&self) -> Range<u64> {
        // Parsing guarantees vaddr + memsz <= USER_END, which is page-aligned, so rounding up
        // cannot overflow.
        page_down(self.vaddr)..page_up(self.vaddr + self.memsz)
    }

    /// The file bytes to copy to [`Segment::vaddr`]: `file_offset .. file_offset + filesz`.
    /// Parsing checked that this range lies inside the file.
    pub fn file_range(&self) -> Range<usize> {
        // Both ends are <= the file's length, which is a usize.
        self.file_offset as usize..(self.file_offset + self.filesz) as usize
    }

    /// The memory that must read as zero: `vaddr + filesz .. vaddr + memsz` (the `.bss`).
    pub fn zero_range(&self) -> Range<u64> {
        self.vaddr + self.filesz..self.vaddr + self.memsz
    }
}

/// A page-aligned, non-overlapping range of memory to map, with the permissions it needs.
///
/// [`Executable::mappings`] merges the segments' map ranges: a page holding the end of one
/// segment and the start of the next is mapped once, with the union of both segments'
/// permissions, and both segments' file bytes are copied into it. (Current linkers start every
/// segment on a fresh page, but older layouts and hand-made files share pages.)
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Mapping {
    /// Start address, page-aligned.
    pub start: u64,
    /// End address (exclusive), page-aligned, greater than `start`.
    pub end: u64,
    /// Readable.
    pub readable: bool,
    /// Writable.
    pub writable: bool,
    /// Executable.
    pub executable: bool,
}

/// The `PT_TLS` segment: the initial image of thread-local storage (reported for diagnostics;
/// the C library sets up TLS itself from the program headers).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Tls {
    /// Address of the TLS initialisation image (`p_vaddr` plus the load bias).
    pub vaddr: u64,
    /// Size of the initialised part (`p_filesz`).
    pub filesz: u64,
    /// Total size of a thread's TLS block (`p_memsz`).
    pub memsz: u64,
    /// Required alignment (`p_align`).
    pub align: u64,
}

/// A validated static x86-64 Linux executable: everything the kernel needs to load it.
///
/// All addresses include the load bias.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Executable {
    kind: ElfKind,
    entry: u64,
    load_bias: u64,
    segments: Vec<Segment>,
    phdr_addr: Option<u64>,
    phnum: u16,
    phent: u16,
    executable_stack: bool,
    tls: Option<Tls>,
    brk: u64,
    interpreter: Option<Vec<u8>>,
}

/// One program header, as read from the file.
#[derive(Clone, Copy)]
struct Phdr {
    index: usize,
    p_type: u32,
    flags: u32,
    offset: u64,
    vaddr: u64,
    filesz: u64,
    memsz: u64,
    align: u64,
}

fn u16_at(b: &[u8], off: usize) -> u16 {
    u16::from_le_bytes([b[off], b[off + 1]])
}

fn u32_at(b: &[u8], off: usize) -> u32 {
    let mut a = [0u8; 4];
    a.copy_from_slice(&b[off..off + 4]);
    u32::from_le_bytes(a)
}

fn u64_at(b: &[u8], off: usize) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[off..off + 8]);
    u64::from_le_bytes(a)
}

pub(crate) fn page_down(a: u64) -> u64 {
    a & !(PAGE_SIZE - 1)
}

/// Rounds up to a page boundary; only called with `a <= USER_END`, so it cannot overflow.
pub(crate) fn page_up(a: u64) -> u64 {
    (a + PAGE_SIZE - 1) & !(PAGE_SIZE - 1)
}

impl Executable {
    /// Parses and validates an executable, placing a static-PIE at [`DEFAULT_PIE_BASE`] (an
    /// `ET_EXEC` file is always placed at its link addresses).
    pub fn parse(file: &[u8]) -> Result<Executable, ExecError> {
        Executable::parse_at(file, DEFAULT_PIE_BASE)
    }

    /// Parses and validates an executable, placing a static-PIE so that its lowest page lands
    /// at `pie_base` (rounded down to the largest power-of-two `p_align` of its `PT_LOAD`
    /// segments, as Linux does). `pie_base` is ignored for `ET_EXEC` files.
    pub fn parse_at(file: &[u8], pie_base: u64) -> Result<Executable, ExecError> {
        Executable::parse_prefix(file, file.len() as u64, pie_base)
    }

    /// As [`Executable::parse_at`], from the first bytes of a file of `file_len` bytes, so a
    /// kernel need not hold a large program in one buffer. `prefix` must hold the ELF header,
    /// the program header table and the `PT_INTERP` string, if any (in practice the first page
    /// or two: `Truncated` otherwise); segment bounds are checked against `file_len`.
    pub fn parse_prefix(
        file: &[u8],
        file_len: u64,
        pie_base: u64,
    ) -> Result<Executable, ExecError> {
        if (file.len() as u64) > file_len {
            return Err(ExecError::Truncated {
                what: "file (prefix longer than the file)",
                offset: 0,
                len: file.len() as u64,
                file_len,
            });
        }
        // A short non-ELF file (a script, say) is "not ELF" rather than "truncated".
        if !file.starts_with(b"\x7fELF") {
            return Err(ExecError::BadMagic);
        }
        let header = file.get(..EHDR_SIZE).ok_or(ExecError::Truncated {
            what: "ELF header",
            offset: 0,
            len: EHDR_SIZE as u64,
            file_len,
        })?;
        if header[4] != ELFCLASS64 {
            return Err(ExecError::BadClass(header[4]));
        }
        if header[5] != ELFDATA2LSB {
            return Err(ExecError::BadDataEncoding(header[5]));
        }
        if header[6] != EV_CURRENT {
            return Err(ExecError::BadIdentVersion(header[6]));
        }
        let e_type = u16_at(header, 16);
        let kind = match e_type {
            ET_EXEC => ElfKind::Exec,
            ET_DYN => ElfKind::Dyn,
            other => return Err(ExecError::BadType(other)),
        };
        let machine = u16_at(header, 18);
        if machine != EM_X86_64 {
            return Err(ExecError::BadMachine(machine));
        }
        let version = u32_at(header, 20);
        if version != u32::from(EV_CURRENT) {
            return Err(ExecError::BadVersion(version));
        }
        let entry = u64_at(header, 24);
        let phoff = u64_at(header, 32);
        let phent = u16_at(header, 54);
        let phnum = u16_at(header, 56);
        if phent != PHDR_SIZE {
            return Err(ExecError::BadPhentsize(phent));
        }
        if phnum == 0 {
            return Err(ExecError::NoProgramHeaders);
        }
        if phnum > MAX_PHNUM {
            return Err(ExecError::TooManyProgramHeaders {
                phnum,
                max: MAX_PHNUM,
            });
        }
        let table_len = u64::from(phnum) * u64::from(PHDR_SIZE);
        let table = phoff
            .checked_add(table_len)
            .filter(|&end| end <= file_len)
            .and_then(|end| file.get(usize::try_from(phoff).ok()?..usize::try_from(end).ok()?))
            .ok_or(ExecError::Truncated {
                what: "program header table",
                offset: phoff,
                len: table_len,
                file_len,
            })?;
        let phdrs: Vec<Phdr> = table
            .chunks_exact(usize::from(PHDR_SIZE))
            .enumerate()
            .map(|(index, p)| Phdr {
                index,
                p_type: u32_at(p, 0),
                flags: u32_at(p, 4),
                offset: u64_at(p, 8),
                vaddr: u64_at(p, 16),
                filesz: u64_at(p, 32),
                memsz: u64_at(p, 40),
                align: u64_at(p, 48),
            })
            .collect();

        let interpreter = match phdrs.iter().find(|p| p.p_type == PT_INTERP) {
            Some(p) => Some(interpreter(file, file_len, p)?),
            None => None,
        };

        // Per-segment checks of the file image.
        let mut max_align = PAGE_SIZE;
        for p in phdrs.iter().filter(|p| p.p_type == PT_LOAD) {
            if p.align > 1 {
                if !p.align.is_power_of_two() {
                    return Err(ExecError::BadAlignment {
                        index: p.index,
                        align: p.align,
                    });
                }
                if p.vaddr % p.align != p.offset % p.align {
                    return Err(ExecError::MisalignedSegment {
                        index: p.index,
                        vaddr: p.vaddr,
                        offset: p.offset,
                        align: p.align,
                    });
                }
                max_align = max_align.max(p.align);
            }
            if p.filesz > p.memsz {
                return Err(ExecError::FileSizeExceedsMemSize {
                    index: p.index,
                    filesz: p.filesz,
                    memsz: p.memsz,
                });
            }
            check_in_file(file_len, p)?;
        }
        // Zero-sized segments map nothing (as in Linux).
        let loads: Vec<&Phdr> = phdrs
            .iter()
            .filter(|p| p.p_type == PT_LOAD && p.memsz != 0)
            .collect();
        if loads.is_empty() {
            return Err(ExecError::NoLoadSegment);
        }

        let load_bias = match kind {
            ElfKind::Exec => 0,
            ElfKind::Dyn => {
                let lowest = loads.iter().map(|p| page_down(p.vaddr)).min().unwrap_or(0);
                if pie_base % PAGE_SIZE != 0 || pie_base < lowest {
                    return Err(ExecError::BadBase { base: pie_base });
                }
                (pie_base - lowest) & !(max_align - 1)
            }
        };

        let mut segments: Vec<(usize, Segment)> = Vec::with_capacity(loads.len());
        for p in &loads {
            let vaddr = checked_range(p, load_bias)?;
            segments.push((
                p.index,
                Segment {
                    vaddr,
                    memsz: p.memsz,
                    file_offset: p.offset,
                    filesz: p.filesz,
                    readable: p.flags & PF_R != 0,
                    writable: p.flags & PF_W != 0,
                    executable: p.flags & PF_X != 0,
                },
            ));
        }
        segments.sort_by_key(|(_, s)| s.vaddr);
        for pair in segments.windows(2) {
            let ((first, low), (second, high)) = (pair[0], pair[1]);
            if low.vaddr + low.memsz > high.vaddr {
                return Err(ExecError::OverlappingSegments { first, second });
            }
        }
        let segments: Vec<Segment> = segments.into_iter().map(|(_, s)| s).collect();

        let entry = entry.wrapping_add(load_bias);
        if !(MIN_USER_ADDR..USER_END).contains(&entry) {
            return Err(ExecError::EntryOutOfRange { entry });
        }

        let phdr_addr = match phdrs.iter().find(|p| p.p_type == PT_PHDR) {
            Some(p) => Some(checked_range(p, load_bias)?),
            None => loads
                .iter()
                .find(|p| p.offset <= phoff && phoff + table_len <= p.offset + p.filesz)
                .map(|p| phoff - p.offset + p.vaddr + load_bias),
        };

        let executable_stack = phdrs
            .iter()
            .find(|p| p.p_type == PT_GNU_STACK)
            .is_some_and(|p| p.flags & PF_X != 0);

        let tls = match phdrs.iter().find(|p| p.p_type == PT_TLS) {
            Some(p) => {
                if p.filesz > p.memsz {
                    return Err(ExecError::FileSizeExceedsMemSize {
                        index: p.index,
                        filesz: p.filesz,
                        memsz: p.memsz,
                    });
                }
                Some(Tls {
                    vaddr: checked_range(p, load_bias)?,
                    filesz: p.filesz,
                    memsz: p.memsz,
                    align: p.align,
                })
            }
            None => None,
        };

        let brk = segments
            .iter()
            .map(|s| page_up(s.vaddr + s.memsz))
            .max()
            .unwrap_or(0);

        Ok(Executable {
            kind,
            entry,
            load_bias,
            segments,
            phdr_addr,
            phnum,
            phent,
            executable_stack,
            tls,
            brk,
            interpreter,
        })
    }

    /// Whether the file is a fixed-address or a position-independent executable.
    pub fn kind(&self) -> ElfKind {
        self.kind
    }

    /// The entry point (`e_entry` plus the load bias): where the first user instruction is.
    pub fn entry(&self) -> u64 {
        self.entry
    }

    /// The amount added to every link-time address: 0 for `ET_EXEC`.
    pub fn load_bias(&self) -> u64 {
        self.load_bias
    }

    /// The loadable segments, sorted by address, none empty, none overlapping.
    pub fn segments(&self) -> &[Segment] {
        &self.segments
    }

    /// The page ranges to map, sorted and non-overlapping, each with the union of the
    /// permissions of the segments that touch it (see [`Mapping`]).
    pub fn mappings(&self) -> Vec<Mapping> {
        let mut out: Vec<Mapping> = Vec::with_capacity(self.segments.len());
        for s in &self.segments {
            let range = s.map_range();
            let mut start = range.start;
            if let Some(last) = out.last_mut() {
                // Segments are sorted and disjoint, so only the page holding `s.vaddr` can
                // already be mapped, and it is the last page of `last`.
                if last.end > start {
                    let shared = Mapping {
                        start,
                        end: start + PAGE_SIZE,
                        readable: last.readable || s.readable,
                        writable: last.writable || s.writable,
                        executable: last.executable || s.executable,
                    };
                    if last.start == start {
                        *last = shared;
                    } else {
                        last.end = start;
                        out.push(shared);
                    }
                    start += PAGE_SIZE;
                }
            }
            if start < range.end {
                out.push(Mapping {
                    start,
                    end: range.end,
                    readable: s.readable,
                    writable: s.writable,
                    executable: s.executable,
                });
            }
        }
        out
    }

    /// Where the program headers are in the loaded image (`AT_PHDR`): from `PT_PHDR` if
    /// present, else inside the `PT_LOAD` segment whose file bytes contain the whole table.
    /// `None` when no segment loads them (Linux then passes 0).
    pub fn phdr_addr(&self) -> Option<u64> {
        self.phdr_addr
    }

    /// Number of program headers (`AT_PHNUM`).
    pub fn phnum(&self) -> u16 {
        self.phnum
    }

    /// Size of one program header (`AT_PHENT`), always 56.
    pub fn phent(&self) -> u16 {
        self.phent
    }

    /// Whether `PT_GNU_STACK` asks for an executable stack. Without `PT_GNU_STACK` this is
    /// `false`: Linux on x86-64 does not make the stack of a 64-bit program executable then.
    pub fn executable_stack(&self) -> bool {
        self.executable_stack
    }

    /// The `PT_TLS` segment, if any.
    pub fn tls(&self) -> Option<Tls> {
        self.tls
    }

    /// The initial program break: the end of the highest segment, rounded up to a page.
    pub fn brk(&self) -> u64 {
        self.brk
    }

    /// The bytes of address space the image spans, from its lowest page to [`brk`](Self::brk)
    /// (what a caller placing it below some address must leave free).
    pub fn span(&self) -> u64 {
        self.brk
            - self
                .segments
                .first()
                .map_or(self.brk, |s| page_down(s.vaddr))
    }

    /// The path `PT_INTERP` names (without its NUL): the dynamic loader the kernel loads
    /// beside the program and starts instead of it. `None` for a static program.
    pub fn interpreter(&self) -> Option<&[u8]> {
        self.interpreter.as_deref()
    }
}

/// The path a `PT_INTERP` segment names, checked as Linux's `load_elf_binary` checks it: at
/// least one byte and a NUL, at most [`MAX_INTERP`] bytes, ending with its only NUL, inside
/// the file and inside the bytes read.
fn interpreter(file: &[u8], file_len: u64, p: &Phdr) -> Result<Vec<u8>, ExecError> {
    check_in_file(file_len, p)?;
    let bad = ExecError::BadInterpreter { index: p.index };
    if !(2..=MAX_INTERP).contains(&p.filesz) {
        return Err(bad);
    }
    let bytes = file_bytes(file, p).ok_or(ExecError::Truncated {
        what: "PT_INTERP path",
        offset: p.offset,
        len: p.filesz,
        file_len,
    })?;
    match bytes.split_last() {
        Some((0, path)) if !path.contains(&0) => {
            let mut out = Vec::new();
            out.try_reserve_exact(path.len())
                .map_err(|_| ExecError::OutOfMemory { bytes: path.len() })?;
            out.extend_from_slice(path);
            Ok(out)
        }
        _ => Err(bad),
    }
}

/// The file bytes of a segment, if they lie in `file` (the bytes read).
fn file_bytes<'f>(file: &'f [u8], p: &Phdr) -> Option<&'f [u8]> {
    p.offset
        .checked_add(p.filesz)
        .and_then(|end| file.get(usize::try_from(p.offset).ok()?..usize::try_from(end).ok()?))
}

/// `SegmentBeyondFile` unless the segment's file bytes lie inside a file of `file_len` bytes.
fn check_in_file(file_len: u64, p: &Phdr) -> Result<(), ExecError> {
    match p.offset.checked_add(p.filesz) {
        Some(end) if end <= file_len && usize::try_from(end).is_ok() => Ok(()),
        _ => Err(ExecError::SegmentBeyondFile {
            index: p.index,
            offset: p.offset,
            filesz: p.filesz,
            file_len,
        }),
    }
}

/// The biased start address of a segment, checked to lie with its whole memory size in the
/// user range.
fn checked_range(p: &Phdr, bias: u64) -> Result<u64, ExecError> {
    let start = p.vaddr.checked_add(bias);
    let end = start.and_then(|s| s.checked_add(p.memsz));
    match (start, end) {
        (Some(s), Some(e)) if s >= MIN_USER_ADDR && e <= USER_END => Ok(s),
        _ => Err(ExecError::SegmentOutOfRange {
            index: p.index,
            vaddr: p.vaddr.wrapping_add(bias),
            memsz: p.memsz,
        }),
    }
}
