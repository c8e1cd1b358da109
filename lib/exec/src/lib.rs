//! Loading static x86-64 Linux ELF executables, without touching memory (and, in [`kimage`],
//! checking the variant kernel images `corectl update` loads).
//!
//! The kernel's `execve` reads the file, calls [`Executable::parse`] (or
//! [`Executable::parse_at`] with a randomised base for a static-PIE), and gets back a
//! validated description of what to do: which page ranges to map with which permissions
//! ([`Executable::mappings`]), which file bytes to copy where and which bytes must read as zero
//! ([`Segment`]), the entry point, the initial program break, and the values the auxiliary
//! vector needs. [`InitialStack::build`] then lays out the initial process stack (argc, argv,
//! envp, auxv and the strings they point to) as Linux does, returning the bytes to copy below
//! the stack top and the initial `rsp`.
//!
//! `ET_EXEC` and `ET_DYN` files are supported. A dynamically linked program names its loader in
//! `PT_INTERP` ([`Executable::interpreter`]): the kernel parses the loader the same way (an
//! `ET_DYN` placed where the kernel chooses, [`Executable::span`] telling how much room it
//! needs), maps both, starts the loader and tells it where the program is through the
//! auxiliary vector (`AT_BASE`, `AT_PHDR`, `AT_ENTRY`: [`AuxInfo`]).
//!
//! # Why a hand-written parser
//!
//! The crate reads two fixed-layout structures (the 64-byte file header and 56-byte program
//! headers) with a dozen fields between them, so the parser is a few dozen lines of bounds-checked
//! little-endian reads. The candidate crates were not a better fit: `xmas-elf` 0.10 slices the
//! input with unchecked indices derived from header fields (`&input[start..end]` on `e_phoff`),
//! so a corrupt file panics instead of returning an error, and returns `&'static str` errors;
//! `goblin` 0.10 needs Rust 1.85 (this workspace supports 1.80), pulls in `scroll` and `log`,
//! and its `alloc` mode parses far more (sections, symbols, relocations) than a loader needs.
//! Neither would spare us the checks that matter here (overlap, alignment, user address range),
//! which are specific to loading.
//!
//! # Checks
//!
//! Following Linux's `load_elf_binary`, with stricter checks where Linux would fail later (at
//! `mmap` time) or not at all: ELF64, little-endian, version 1, x86-64, `e_phentsize` 56, at
//! most [`MAX_PHNUM`] program headers inside the file; for every `PT_LOAD`: `p_align` 0 or a
//! power of two, `p_vaddr ≡ p_offset (mod p_align)`, `p_filesz <= p_memsz`, file bytes inside
//! the file, memory (with the load bias) inside `MIN_USER_ADDR..USER_END` without wrapping, no
//! two segments overlapping; the entry point inside the user range. All arithmetic on file
//! values is checked, so no input makes the parser panic.
//!
//! Errors are [`ExecError`] values with a `Display` text and an [`ExecError::to_errno`] for the
//! syscall's return value.
//!
//! # Example
//!
//! ```
//! use exec::{AuxInfo, ExecError, Executable, InitialStack};
//!
//! /// What `execve` does with the file's bytes (mapping and copying left to the kernel).
//! fn prepare(file: &[u8], random: [u8; 16]) -> Result<(u64, InitialStack), ExecError> {
//!     let exe = Executable::parse(file)?;
//!     for m in exe.mappings() {
//!         // map m.start..m.end with m.readable / m.writable / m.executable, zero-filled
//!     }
//!     for s in exe.segments() {
//!         // copy file[s.file_range()] to s.vaddr
//!     }
//!     let aux = AuxInfo::new(&exe, random);
//!     let stack = InitialStack::build(0x7fff_ffff_f000, &[b"/bin/prog"], &[b"HOME=/"],
//!                                     b"/bin/prog", &aux)?;
//!     // copy stack.bytes to stack.rsp, set the program break to exe.brk(), and enter user
//!     // mode at exe.entry() with rsp = stack.rsp
//!     Ok((exe.entry(), stack))
//! }
//! assert_eq!(prepare(b"#!/bin/sh\n", [0; 16]).unwrap_err(), ExecError::BadMagic);
//! ```

#![no_std]
#![forbid(unsafe_code)]
#![warn(missing_docs)]

extern crate alloc;

mod elf;
mod error;
pub mod kimage;
mod stack;

pub use elf::{ElfKind, Executable, Mapping, Segment, Tls, DEFAULT_PIE_BASE};
pub use error::ExecError;
pub use stack::{auxv, AuxInfo, InitialStack};

/// The page size of x86-64 (`AT_PAGESZ`).
pub const PAGE_SIZE: u64 = 4096;

/// End (exclusive) of the addresses a program may use: Linux's `TASK_SIZE_MAX` on x86-64 with
/// 4-level paging, one page below the end of the canonical lower half (0x8000_0000_0000). The
/// last page stays unmapped because a `syscall` instruction at its very end would make `sysret`
/// return to a non-canonical address, which faults in ring 0 on Intel CPUs.
pub const USER_END: u64 = 0x0000_7fff_ffff_f000;

/// Lowest address a segment may occupy: Linux's default `vm.mmap_min_addr` (64 KiB), which
/// keeps kernel NULL-pointer dereferences from reaching user memory.
pub const MIN_USER_ADDR: u64 = 0x1_0000;

/// Most program headers accepted: as many as fit in one page, Linux's limit.
pub const MAX_PHNUM: u16 = (PAGE_SIZE / 56) as u16;

/// Most bytes the argument and environment strings may take together, NUL terminators
/// included (`E2BIG` beyond).
pub const MAX_ARG_BYTES: usize = 128 * 1024;

/// Longest `AT_EXECFN` name accepted (Linux's `PATH_MAX` less the terminating NUL).
pub const MAX_EXECFN_LEN: usize = 4095;
