//! The one error type of this crate, shared by ELF parsing and stack building so the kernel's
//! `execve` path has a single `?` target.

use abi::Errno;
use core::fmt;

/// Why an executable cannot be loaded or its initial stack cannot be built.
///
/// Every variant carries the values needed to explain the problem; [`ExecError::to_errno`] gives
/// the Linux error number `execve` returns for it.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ExecError {
    /// A structure the file header describes lies (partly) past the end of the file.
    Truncated {
        /// Which structure: "ELF header" or "program header table".
        what: &'static str,
        /// Its byte offset in the file.
        offset: u64,
        /// Its length in bytes.
        len: u64,
        /// The length of the file.
        file_len: u64,
    },
    /// The file does not start with `\x7fELF`.
    BadMagic,
    /// `EI_CLASS` is not `ELFCLASS64` (2).
    BadClass(u8),
    /// `EI_DATA` is not `ELFDATA2LSB` (1, little-endian).
    BadDataEncoding(u8),
    /// `EI_VERSION` is not `EV_CURRENT` (1).
    BadIdentVersion(u8),
    /// `e_version` is not `EV_CURRENT` (1).
    BadVersion(u32),
    /// `e_type` is neither `ET_EXEC` (2) nor `ET_DYN` (3).
    BadType(u16),
    /// `e_machine` is not `EM_X86_64` (62).
    BadMachine(u16),
    /// `e_phentsize` is not the size of an ELF64 program header (56).
    BadPhentsize(u16),
    /// `e_phnum` is 0.
    NoProgramHeaders,
    /// `e_phnum` exceeds the limit (Linux allows one page of program headers).
    TooManyProgramHeaders {
        /// The value of `e_phnum`.
        phnum: u16,
        /// The largest accepted value, [`crate::MAX_PHNUM`].
        max: u16,
    },
    /// The `PT_INTERP` segment is not a path: shorter than two bytes, longer than 4096, or not
    /// ending with its only NUL.
    BadInterpreter {
        /// Index of the program header.
        index: usize,
    },
    /// No `PT_LOAD` segment with a non-zero memory size.
    NoLoadSegment,
    /// A segment's `p_align` is neither 0 nor a power of two.
    BadAlignment {
        /// Index of the program header.
        index: usize,
        /// Its `p_align`.
        align: u64,
    },
    /// `p_vaddr % p_align != p_offset % p_align`.
    MisalignedSegment {
        /// Index of the program header.
        index: usize,
        /// Its `p_vaddr`.
        vaddr: u64,
        /// Its `p_offset`.
        offset: u64,
        /// Its `p_align`.
        align: u64,
    },
    /// A segment's `p_filesz` exceeds its `p_memsz`.
    FileSizeExceedsMemSize {
        /// Index of the program header.
        index: usize,
        /// Its `p_filesz`.
        filesz: u64,
        /// Its `p_memsz`.
        memsz: u64,
    },
    /// A segment's file bytes (`p_offset .. p_offset + p_filesz`) lie past the end of the file.
    SegmentBeyondFile {
        /// Index of the program header.
        index: usize,
        /// Its `p_offset`.
        offset: u64,
        /// Its `p_filesz`.
        filesz: u64,
        /// The length of the file.
        file_len: u64,
    },
    /// A segment's memory (after applying the load bias) wraps around, starts below
    /// [`crate::MIN_USER_ADDR`] or ends above [`crate::USER_END`].
    SegmentOutOfRange {
        /// Index of the program header.
        index: usize,
        /// Its start address, with the load bias applied (wrapping).
        vaddr: u64,
        /// Its `p_memsz`.
        memsz: u64,
    },
    /// The memory of two `PT_LOAD` segments overlaps.
    OverlappingSegments {
        /// Index of the program header of the lower segment.
        first: usize,
        /// Index of the program header of the higher segment.
        second: usize,
    },
    /// The entry point (after applying the load bias) is not a user address.
    EntryOutOfRange {
        /// The entry point, with the load bias applied (wrapping).
        entry: u64,
    },
    /// The base address given for a position-independent executable is not page-aligned, or
    /// lies below the lowest address the executable was linked for.
    BadBase {
        /// The base address the caller passed.
        base: u64,
    },
    /// The argument and environment strings together exceed [`crate::MAX_ARG_BYTES`].
    ArgumentsTooLong {
        /// Their size in bytes, each string counted with its terminating NUL.
        size: usize,
        /// The limit.
        max: usize,
    },
    /// The name passed for `AT_EXECFN` is longer than [`crate::MAX_EXECFN_LEN`].
    ExecfnTooLong {
        /// Its length in bytes.
        len: usize,
    },
    /// An argument, environment string or the `AT_EXECFN` name contains a NUL byte.
    NulInString {
        /// "argument", "environment string" or "execfn".
        what: &'static str,
        /// Index of the string in its list (0 for execfn).
        index: usize,
    },
    /// The stack top is not 16-byte aligned, lies above [`crate::USER_END`], or is too low to
    /// hold the initial stack.
    BadStackTop {
        /// The stack top the caller passed.
        top: u64,
    },
    /// No memory for the initial stack's image.
    OutOfMemory {
        /// The bytes asked for.
        bytes: usize,
    },
}

impl ExecError {
    /// The Linux error number `execve` returns for this error.
    ///
    /// Malformed or unsupported files give `ENOEXEC`. Bad addresses give `EINVAL` as Linux's `BAD_ADDR` checks
    /// do, oversized arguments `E2BIG`, an oversized file name `ENAMETOOLONG`, no memory
    /// `ENOMEM`.
    pub fn to_errno(&self) -> Errno {
        match self {
            ExecError::SegmentOutOfRange { .. }
            | ExecError::EntryOutOfRange { .. }
            | ExecError::BadBase { .. }
            | ExecError::NulInString { .. }
            | ExecError::BadStackTop { .. } => Errno::EINVAL,
            ExecError::ArgumentsTooLong { .. } => Errno::E2BIG,
            ExecError::ExecfnTooLong { .. } => Errno::ENAMETOOLONG,
            ExecError::OutOfMemory { .. } => Errno::ENOMEM,
            _ => Errno::ENOEXEC,
        }
    }
}

impl fmt::Display for ExecError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ExecError::Truncated {
                what,
                offset,
                len,
                file_len,
            } => write!(
                f,
                "{what} at offset {offset:#x} ({len} bytes) extends past the end of the \
                 {file_len}-byte file"
            ),
            ExecError::BadMagic => f.write_str("not an ELF file (bad magic)"),
            ExecError::BadClass(c) => {
                write!(f, "ELF class {c} is not supported (only 64-bit, class 2)")
            }
            ExecError::BadDataEncoding(d) => {
                write!(
                    f,
                    "ELF data encoding {d} is not supported (only little-endian, 1)"
                )
            }
            ExecError::BadIdentVersion(v) => write!(f, "ELF identification version {v} is not 1"),
            ExecError::BadVersion(v) => write!(f, "ELF version {v} is not 1"),
            ExecError::BadType(t) => write!(
                f,
                "ELF type {t} is not an executable (only ET_EXEC 2 and ET_DYN 3)"
            ),
            ExecError::BadMachine(m) => {
                write!(f, "ELF machine {m} is not x86-64 (62)")
            }
            ExecError::BadPhentsize(s) => {
                write!(f, "program header size {s} is not 56 bytes")
            }
            ExecError::NoProgramHeaders => f.write_str("the file has no program headers"),
            ExecError::TooManyProgramHeaders { phnum, max } => {
                write!(f, "{phnum} program headers exceed the limit of {max}")
            }
            ExecError::BadInterpreter { index } => write!(
                f,
                "segment {index}: the PT_INTERP path is empty, longer than 4096 bytes or not \
                 NUL-terminated"
            ),
            ExecError::NoLoadSegment => f.write_str("the file has no loadable segment"),
            ExecError::BadAlignment { index, align } => write!(
                f,
                "segment {index}: alignment {align:#x} is not a power of two"
            ),
            ExecError::MisalignedSegment {
                index,
                vaddr,
                offset,
                align,
            } => write!(
                f,
                "segment {index}: address {vaddr:#x} and file offset {offset:#x} are not \
                 congruent modulo the alignment {align:#x}"
            ),
            ExecError::FileSizeExceedsMemSize {
                index,
                filesz,
                memsz,
            } => write!(
                f,
                "segment {index}: file size {filesz:#x} exceeds memory size {memsz:#x}"
            ),
            ExecError::SegmentBeyondFile {
                index,
                offset,
                filesz,
                file_len,
            } => write!(
                f,
                "segment {index}: file bytes {offset:#x}+{filesz:#x} extend past the end of \
                 the {file_len}-byte file"
            ),
            ExecError::SegmentOutOfRange {
                index,
                vaddr,
                memsz,
            } => write!(
                f,
                "segment {index}: memory {vaddr:#x}+{memsz:#x} is outside the user address \
                 range {:#x}..{:#x}",
                crate::MIN_USER_ADDR,
                crate::USER_END
            ),
            ExecError::OverlappingSegments { first, second } => {
                write!(f, "segments {first} and {second} overlap in memory")
            }
            ExecError::EntryOutOfRange { entry } => {
                write!(f, "entry point {entry:#x} is not a user address")
            }
            ExecError::BadBase { base } => write!(
                f,
                "load base {base:#x} is not page-aligned or lies below the executable's lowest \
                 address"
            ),
            ExecError::ArgumentsTooLong { size, max } => write!(
                f,
                "arguments and environment take {size} bytes, more than the limit of {max}"
            ),
            ExecError::ExecfnTooLong { len } => write!(
                f,
                "executable name of {len} bytes exceeds the limit of {}",
                crate::MAX_EXECFN_LEN
            ),
            ExecError::NulInString { what, index } => {
                write!(f, "{what} {index} contains a NUL byte")
            }
            ExecError::BadStackTop { top } => write!(
                f,
                "stack top {top:#x} is not 16-byte aligned, not a user address, or too low for \
                 the initial stack"
            ),

            ExecError::OutOfMemory { bytes } => {
                write!(f, "no memory for the {bytes}-byte initial stack")
            }
        }
    }
}
