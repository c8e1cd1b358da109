//! Parsing real and corrupted executables.

use exec::{ElfKind, ExecError, Executable, Mapping, Segment, Tls, DEFAULT_PIE_BASE, USER_END};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

/// `musl-gcc -static -Os -s` build of `data/hello.c` (see `data/README.md`).
const FIXTURE: &[u8] = include_bytes!("data/hello-static");

fn seg(vaddr: u64, memsz: u64, file_offset: u64, filesz: u64, rwx: &str) -> Segment {
    Segment {
        vaddr,
        memsz,
        file_offset,
        filesz,
        readable: rwx.contains('r'),
        writable: rwx.contains('w'),
        executable: rwx.contains('x'),
    }
}

fn map(start: u64, end: u64, rwx: &str) -> Mapping {
    Mapping {
        start,
        end,
        readable: rwx.contains('r'),
        writable: rwx.contains('w'),
        executable: rwx.contains('x'),
    }
}

fn with(file: &[u8], offset: usize, bytes: &[u8]) -> Vec<u8> {
    let mut f = file.to_vec();
    f[offset..offset + bytes.len()].copy_from_slice(bytes);
    f
}

/// Offset of field `field` of program header `index` of the fixture.
fn ph(index: usize, field: usize) -> usize {
    64 + 56 * index + field
}
const P_TYPE: usize = 0;
const P_FLAGS: usize = 4;
const P_OFFSET: usize = 8;
const P_VADDR: usize = 16;
const P_FILESZ: usize = 32;
const P_MEMSZ: usize = 40;
const P_ALIGN: usize = 48;

fn err(file: &[u8]) -> ExecError {
    Executable::parse(file).expect_err("corrupted file must be rejected")
}

#[test]
fn fixture_matches_readelf() {
    // Values from data/readelf.txt.
    let exe = Executable::parse(FIXTURE).unwrap();
    assert_eq!(exe.kind(), ElfKind::Exec);
    assert_eq!(exe.entry(), 0x40105a);
    assert_eq!(exe.load_bias(), 0);
    assert_eq!(exe.phnum(), 7);
    assert_eq!(exe.phent(), 56);
    assert_eq!(
        exe.segments(),
        &[
            seg(0x400000, 0x1c8, 0, 0x1c8, "r"),
            seg(0x401000, 0x8f1, 0x1000, 0x8f1, "rx"),
            seg(0x402000, 0x54, 0x2000, 0x54, "r"),
            seg(0x403fcc, 0x2ac, 0x2fcc, 0x44, "rw"),
        ]
    );
    // No PT_PHDR: the table at e_phoff 64 lies in the first PT_LOAD (offset 0 at 0x400000).
    assert_eq!(exe.phdr_addr(), Some(0x400040));
    assert_eq!(
        exe.tls(),
        Some(Tls {
            vaddr: 0x403fcc,
            filesz: 4,
            memsz: 4,
            align: 4
        })
    );
    assert!(!exe.executable_stack(), "GNU_STACK is RW");
    // 0x403fcc + 0x2ac = 0x404278, rounded up.
    assert_eq!(exe.brk(), 0x405000);
    assert_eq!(
        exe.mappings(),
        vec![
            map(0x400000, 0x401000, "r"),
            map(0x401000, 0x402000, "rx"),
            map(0x402000, 0x403000, "r"),
            map(0x403000, 0x405000, "rw"),
        ]
    );
    let data = exe.segments()[3];
    assert_eq!(data.map_range(), 0x403000..0x405000);
    assert_eq!(data.file_range(), 0x2fcc..0x3010);
    assert_eq!(data.zero_range(), 0x404010..0x404278);
}

/// Loads `exe` into a sparse page map the way the kernel will, and returns it.
fn load(file: &[u8], exe: &Executable) -> BTreeMap<u64, (Vec<u8>, Mapping)> {
    let mut pages = BTreeMap::new();
    for m in exe.mappings() {
        assert_eq!(m.start % 4096, 0);
        assert_eq!(m.end % 4096, 0);
        let mut page = m.start;
        while page < m.end {
            assert!(
                pages.insert(page, (vec![0u8; 4096], m)).is_none(),
                "page mapped twice"
            );
            page += 4096;
        }
    }
    for s in exe.segments() {
        for (i, byte) in file[s.file_range()].iter().enumerate() {
            let addr = s.vaddr + i as u64;
            pages
                .get_mut(&(addr & !4095))
                .expect("copy target is mapped")
                .0[(addr & 4095) as usize] = *byte;
        }
        let zero = s.zero_range();
        assert!(zero.start >= s.map_range().start && zero.end <= s.map_range().end);
    }
    pages
}

fn read(pages: &BTreeMap<u64, (Vec<u8>, Mapping)>, addr: u64, len: usize) -> Vec<u8> {
    (addr..addr + len as u64)
        .map(|a| pages.get(&(a & !4095)).expect("address is mapped").0[(a & 4095) as usize])
        .collect()
}

#[test]
fn loading_the_fixture_puts_program_headers_and_code_in_place() {
    let exe = Executable::parse(FIXTURE).unwrap();
    let pages = load(FIXTURE, &exe);
    // AT_PHDR must point at the program header table as it is in the file.
    assert_eq!(
        read(&pages, exe.phdr_addr().unwrap(), 7 * 56),
        FIXTURE[64..64 + 7 * 56]
    );
    // The entry point is in an executable page and holds the file's bytes there.
    let (_, m) = pages.get(&(exe.entry() & !4095)).unwrap();
    assert!(m.executable);
    assert_eq!(read(&pages, exe.entry(), 4), FIXTURE[0x105a..0x105e]);
    // The .bss reads as zero, the initialised data as in the file.
    let data = exe.segments()[3];
    assert!(read(&pages, data.zero_range().start, 0x268)
        .iter()
        .all(|&b| b == 0));
    assert_eq!(read(&pages, 0x403fcc, 0x44), FIXTURE[0x2fcc..0x3010]);
}

#[test]
fn et_exec_ignores_the_base_and_et_dyn_applies_it() {
    let exe = Executable::parse_at(FIXTURE, 0x7000_0000_0000).unwrap();
    assert_eq!(exe.load_bias(), 0);
    assert_eq!(exe.entry(), 0x40105a);

    // The same image relabelled as ET_DYN is placed relative to the base.
    let pie = with(FIXTURE, 16, &3u16.to_le_bytes());
    let exe = Executable::parse_at(&pie, 0x7000_0000_0000).unwrap();
    assert_eq!(exe.kind(), ElfKind::Dyn);
    assert_eq!(exe.load_bias(), 0x7000_0000_0000 - 0x400000);
    assert_eq!(exe.span(), 0x5000);
    assert_eq!(exe.segments()[0].vaddr, 0x7000_0000_0000);
    assert_eq!(exe.entry(), 0x7000_0000_0000 + 0x105a);
    assert_eq!(exe.phdr_addr(), Some(0x7000_0000_0040));
    assert_eq!(exe.brk(), 0x7000_0000_5000);
    assert_eq!(exe.tls().unwrap().vaddr, 0x7000_0000_3fcc);
    let default = Executable::parse(&pie).unwrap();
    assert_eq!(default.segments()[0].vaddr, DEFAULT_PIE_BASE);

    assert_eq!(
        Executable::parse_at(&pie, 0x7000_0000_0010),
        Err(ExecError::BadBase {
            base: 0x7000_0000_0010
        })
    );
    assert_eq!(
        Executable::parse_at(&pie, 0x3ff000),
        Err(ExecError::BadBase { base: 0x3ff000 })
    );
    // A base so high that the image would end above the user range.
    assert!(matches!(
        Executable::parse_at(&pie, USER_END - 0x2000),
        Err(ExecError::SegmentOutOfRange { index: 2, .. })
    ));
}

#[test]
fn pie_bias_is_rounded_down_to_the_largest_alignment() {
    // Segment 0 aligned to 2 MiB (offset 0 and vaddr 0x400000 are congruent).
    let pie = with(
        &with(FIXTURE, 16, &3u16.to_le_bytes()),
        ph(0, P_ALIGN),
        &0x20_0000u64.to_le_bytes(),
    );
    let exe = Executable::parse_at(&pie, 0x7000_0012_3000).unwrap();
    assert_eq!(exe.load_bias() % 0x20_0000, 0);
    assert_eq!(exe.load_bias(), 0x7000_0000_0000 - 0x400000);
}

#[test]
fn header_identification_errors() {
    for i in 0..4 {
        let mut f = FIXTURE.to_vec();
        f[i] ^= 0x20;
        assert_eq!(err(&f), ExecError::BadMagic, "magic byte {i}");
    }
    assert_eq!(err(&with(FIXTURE, 4, &[1])), ExecError::BadClass(1));
    assert_eq!(err(&with(FIXTURE, 4, &[0])), ExecError::BadClass(0));
    assert_eq!(err(&with(FIXTURE, 5, &[2])), ExecError::BadDataEncoding(2));
    assert_eq!(err(&with(FIXTURE, 6, &[0])), ExecError::BadIdentVersion(0));
    assert_eq!(
        err(&with(FIXTURE, 16, &1u16.to_le_bytes())),
        ExecError::BadType(1)
    );
    assert_eq!(
        err(&with(FIXTURE, 16, &4u16.to_le_bytes())),
        ExecError::BadType(4)
    );
    assert_eq!(
        err(&with(FIXTURE, 18, &3u16.to_le_bytes())),
        ExecError::BadMachine(3)
    );
    assert_eq!(
        err(&with(FIXTURE, 18, &183u16.to_le_bytes())),
        ExecError::BadMachine(183)
    );
    assert_eq!(
        err(&with(FIXTURE, 20, &0u32.to_le_bytes())),
        ExecError::BadVersion(0)
    );
    assert_eq!(
        err(&with(FIXTURE, 20, &2u32.to_le_bytes())),
        ExecError::BadVersion(2)
    );
}

#[test]
fn header_entry_errors() {
    for entry in [0u64, 0xfff, USER_END, 0xffff_8000_0000_0000, u64::MAX] {
        assert_eq!(
            err(&with(FIXTURE, 24, &entry.to_le_bytes())),
            ExecError::EntryOutOfRange { entry },
            "entry {entry:#x}"
        );
    }
}

#[test]
fn header_program_table_errors() {
    let len = FIXTURE.len() as u64;
    for phoff in [len, len - 7 * 56 + 1, u64::MAX, u64::MAX - 8] {
        assert_eq!(
            err(&with(FIXTURE, 32, &phoff.to_le_bytes())),
            ExecError::Truncated {
                what: "program header table",
                offset: phoff,
                len: 7 * 56,
                file_len: len
            },
            "e_phoff {phoff:#x}"
        );
    }
    assert_eq!(
        err(&with(FIXTURE, 54, &32u16.to_le_bytes())),
        ExecError::BadPhentsize(32)
    );
    assert_eq!(
        err(&with(FIXTURE, 54, &64u16.to_le_bytes())),
        ExecError::BadPhentsize(64)
    );
    assert_eq!(
        err(&with(FIXTURE, 56, &0u16.to_le_bytes())),
        ExecError::NoProgramHeaders
    );
    assert_eq!(
        err(&with(FIXTURE, 56, &74u16.to_le_bytes())),
        ExecError::TooManyProgramHeaders { phnum: 74, max: 73 }
    );
    assert_eq!(
        err(&with(FIXTURE, 56, &u16::MAX.to_le_bytes())),
        ExecError::TooManyProgramHeaders {
            phnum: u16::MAX,
            max: 73
        }
    );
}

#[test]
fn header_fields_linux_ignores_are_ignored() {
    let good = Executable::parse(FIXTURE).unwrap();
    // EI_OSABI, EI_ABIVERSION, e_shoff, e_flags, e_ehsize, e_shentsize, e_shnum, e_shstrndx.
    for (offset, bytes) in [
        (7, &[3u8][..]),
        (8, &[1]),
        (40, &u64::MAX.to_le_bytes()[..]),
        (48, &0xffff_ffffu32.to_le_bytes()[..]),
        (52, &0u16.to_le_bytes()[..]),
        (58, &0u16.to_le_bytes()[..]),
        (60, &0xffffu16.to_le_bytes()[..]),
        (62, &0xffffu16.to_le_bytes()[..]),
    ] {
        assert_eq!(
            Executable::parse(&with(FIXTURE, offset, bytes)).as_ref(),
            Ok(&good),
            "offset {offset}"
        );
    }
}

#[test]
fn segment_alignment_errors() {
    assert_eq!(
        err(&with(FIXTURE, ph(1, P_ALIGN), &0x1001u64.to_le_bytes())),
        ExecError::BadAlignment {
            index: 1,
            align: 0x1001
        }
    );
    assert_eq!(
        err(&with(FIXTURE, ph(1, P_VADDR), &0x401008u64.to_le_bytes())),
        ExecError::MisalignedSegment {
            index: 1,
            vaddr: 0x401008,
            offset: 0x1000,
            align: 0x1000
        }
    );
    assert_eq!(
        err(&with(FIXTURE, ph(3, P_OFFSET), &0x2fc0u64.to_le_bytes())),
        ExecError::MisalignedSegment {
            index: 3,
            vaddr: 0x403fcc,
            offset: 0x2fc0,
            align: 0x1000
        }
    );
    // An alignment of 0 or 1 imposes nothing.
    for align in [0u64, 1] {
        let f = with(FIXTURE, ph(1, P_VADDR), &0x401008u64.to_le_bytes());
        let f = with(&f, ph(1, P_ALIGN), &align.to_le_bytes());
        assert_eq!(Executable::parse(&f).unwrap().segments()[1].vaddr, 0x401008);
    }
}

#[test]
fn segment_size_errors() {
    assert_eq!(
        err(&with(FIXTURE, ph(3, P_FILESZ), &0x2adu64.to_le_bytes())),
        ExecError::FileSizeExceedsMemSize {
            index: 3,
            filesz: 0x2ad,
            memsz: 0x2ac
        }
    );
    // Checked even for a PT_LOAD with no memory.
    assert_eq!(
        err(&with(FIXTURE, ph(2, P_MEMSZ), &0u64.to_le_bytes())),
        ExecError::FileSizeExceedsMemSize {
            index: 2,
            filesz: 0x54,
            memsz: 0
        }
    );
    let len = FIXTURE.len() as u64;
    for (field, value, offset, filesz) in [
        (P_FILESZ, len - 0x2fcc + 1, 0x2fcc, len - 0x2fcc + 1),
        (P_OFFSET, len + 0xfcc - 0x1000 + 0x1000, len + 0xfcc, 0x44),
        (P_OFFSET, u64::MAX - 0x33, u64::MAX - 0x33, 0x44),
    ] {
        let mut f = with(FIXTURE, ph(3, field), &value.to_le_bytes());
        if field == P_FILESZ {
            f = with(&f, ph(3, P_MEMSZ), &value.to_le_bytes());
        }
        // Keep the alignment congruence intact so the file-bounds check is what fails.
        f = with(&f, ph(3, P_ALIGN), &0u64.to_le_bytes());
        assert_eq!(
            err(&f),
            ExecError::SegmentBeyondFile {
                index: 3,
                offset,
                filesz,
                file_len: len
            },
            "{field} = {value:#x}"
        );
    }
}

#[test]
fn segment_address_errors() {
    // In the last page of the user range but too long; wrapping; below 64 KiB.
    let cases: [(u64, u64); 3] = [
        (USER_END - 0x1000 + 0xfcc, 0x2ac),
        (u64::MAX - 0xfff + 0xfcc, 0x2ac),
        (0xffcc, 0x2ac),
    ];
    for (vaddr, memsz) in cases {
        let f = with(FIXTURE, ph(3, P_VADDR), &vaddr.to_le_bytes());
        assert_eq!(
            err(&f),
            ExecError::SegmentOutOfRange {
                index: 3,
                vaddr,
                memsz
            },
            "{vaddr:#x}"
        );
    }
    let f = with(FIXTURE, ph(3, P_MEMSZ), &(u64::MAX - 0x1000).to_le_bytes());
    assert_eq!(
        err(&f),
        ExecError::SegmentOutOfRange {
            index: 3,
            vaddr: 0x403fcc,
            memsz: u64::MAX - 0x1000
        }
    );
    // Kernel half.
    let f = with(
        FIXTURE,
        ph(0, P_VADDR),
        &0xffff_ffff_8000_0000u64.to_le_bytes(),
    );
    assert!(matches!(
        err(&f),
        ExecError::SegmentOutOfRange { index: 0, .. }
    ));
}

#[test]
fn overlapping_segments() {
    // Segment 2 moved onto segment 1 (offset 0x2000 is still congruent with 0x401000).
    let f = with(FIXTURE, ph(2, P_VADDR), &0x401000u64.to_le_bytes());
    assert_eq!(
        err(&f),
        ExecError::OverlappingSegments {
            first: 1,
            second: 2
        }
    );
    // Segment 0 grown to reach one byte into segment 1.
    let f = with(FIXTURE, ph(0, P_MEMSZ), &0x1001u64.to_le_bytes());
    assert_eq!(
        err(&f),
        ExecError::OverlappingSegments {
            first: 0,
            second: 1
        }
    );
    // Exactly adjacent is fine.
    let f = with(FIXTURE, ph(0, P_MEMSZ), &0x1000u64.to_le_bytes());
    assert!(Executable::parse(&f).is_ok());
}

#[test]
fn no_load_segment() {
    let mut f = FIXTURE.to_vec();
    for i in 0..4 {
        f = with(&f, ph(i, P_TYPE), &0u32.to_le_bytes());
    }
    assert_eq!(err(&f), ExecError::NoLoadSegment);
    assert_eq!(err(&f).to_errno(), abi::Errno::ENOEXEC);
}

#[test]
fn interpreter_is_named() {
    // Turn GNU_STACK (header 5) into a PT_INTERP naming a path appended to the file.
    let mut f = FIXTURE.to_vec();
    let at = f.len() as u64;
    f.extend_from_slice(b"/lib/ld-musl-x86_64.so.1\0");
    f = with(&f, ph(5, P_TYPE), &3u32.to_le_bytes());
    f = with(&f, ph(5, P_OFFSET), &at.to_le_bytes());
    f = with(&f, ph(5, P_FILESZ), &25u64.to_le_bytes());
    let exe = Executable::parse(&f).unwrap();
    assert_eq!(exe.interpreter(), Some(&b"/lib/ld-musl-x86_64.so.1"[..]));
    assert_eq!(Executable::parse(FIXTURE).unwrap().interpreter(), None);
    // An interpreter path outside the file is a bounds error, not a panic.
    let g = with(&f, ph(5, P_FILESZ), &26u64.to_le_bytes());
    assert!(matches!(
        err(&g),
        ExecError::SegmentBeyondFile { index: 5, .. }
    ));
    // Outside the bytes read: truncated.
    let prefix = Executable::parse_prefix(&f[..f.len() - 1], f.len() as u64, DEFAULT_PIE_BASE);
    assert!(
        matches!(prefix, Err(ExecError::Truncated { .. })),
        "{prefix:?}"
    );
    // Without its NUL, with a NUL inside, empty, or longer than PATH_MAX: refused as Linux
    // refuses them (ENOEXEC).
    for (len, tail) in [(24u64, &b""[..]), (1, &b""[..]), (25, &b"\0"[..])] {
        let mut h = f.clone();
        if !tail.is_empty() {
            h[at as usize + 4] = 0;
        }
        let h = with(&h, ph(5, P_FILESZ), &len.to_le_bytes());
        let e = err(&h);
        assert_eq!(e, ExecError::BadInterpreter { index: 5 }, "{len}");
        assert_eq!(e.to_errno(), abi::Errno::ENOEXEC);
        assert!(e.to_string().contains("PT_INTERP"), "{e}");
    }
    let mut long = FIXTURE.to_vec();
    long.resize(long.len() + 4097, b'a');
    *long.last_mut().unwrap() = 0;
    let long = with(&long, ph(5, P_TYPE), &3u32.to_le_bytes());
    let long = with(&long, ph(5, P_OFFSET), &at.to_le_bytes());
    let long = with(&long, ph(5, P_FILESZ), &4097u64.to_le_bytes());
    assert_eq!(err(&long), ExecError::BadInterpreter { index: 5 });
}

#[test]
fn gnu_stack_and_pt_phdr() {
    // PF_X in GNU_STACK.
    let f = with(FIXTURE, ph(5, P_FLAGS), &7u32.to_le_bytes());
    assert!(Executable::parse(&f).unwrap().executable_stack());
    // Without GNU_STACK the stack is not executable.
    let f = with(FIXTURE, ph(5, P_TYPE), &0u32.to_le_bytes());
    assert!(!Executable::parse(&f).unwrap().executable_stack());
    // A PT_PHDR (made from GNU_RELRO, header 6) wins over the covering PT_LOAD.
    let f = with(FIXTURE, ph(6, P_TYPE), &6u32.to_le_bytes());
    assert_eq!(Executable::parse(&f).unwrap().phdr_addr(), Some(0x403fcc));
    // Program headers not covered by any PT_LOAD's file bytes: no AT_PHDR.
    let f = with(FIXTURE, ph(0, P_OFFSET), &0x1000u64.to_le_bytes());
    let f = with(&f, ph(0, P_FILESZ), &0x10u64.to_le_bytes());
    assert_eq!(Executable::parse(&f).unwrap().phdr_addr(), None);
}

#[test]
fn shared_pages_get_union_permissions() {
    // Move the R segment 2 (0x54 bytes) to the end of segment 1's last page... and segment 3
    // into the same page as segment 2.
    let f = with(FIXTURE, ph(2, P_VADDR), &0x401f00u64.to_le_bytes());
    let f = with(&f, ph(2, P_OFFSET), &0x2f00u64.to_le_bytes());
    let f = with(&f, ph(3, P_VADDR), &0x401fcc_u64.to_le_bytes());
    let f = with(&f, ph(3, P_MEMSZ), &0x1234u64.to_le_bytes());
    let exe = Executable::parse(&f).unwrap();
    assert_eq!(
        exe.mappings(),
        vec![
            map(0x400000, 0x401000, "r"),
            map(0x401000, 0x402000, "rwx"),
            map(0x402000, 0x404000, "rw"),
        ]
    );
    // The loader simulation copies all three segments without mapping a page twice.
    let pages = load(&f, &exe);
    assert_eq!(read(&pages, 0x401f00, 0x54), f[0x2f00..0x2f54]);
    assert_eq!(read(&pages, 0x401fcc, 0x44), f[0x2fcc..0x3010]);
}

#[test]
fn zero_sized_load_segments_are_skipped() {
    let f = with(FIXTURE, ph(2, P_MEMSZ), &0u64.to_le_bytes());
    let f = with(&f, ph(2, P_FILESZ), &0u64.to_le_bytes());
    let exe = Executable::parse(&f).unwrap();
    assert_eq!(exe.segments().len(), 3);
    assert!(exe.segments().iter().all(|s| s.memsz > 0));
}

#[test]
fn error_messages_and_errnos() {
    use abi::Errno;
    let cases: Vec<(ExecError, Errno, &str)> = vec![
        (ExecError::BadMagic, Errno::ENOEXEC, "not an ELF file"),
        (ExecError::BadMachine(3), Errno::ENOEXEC, "machine 3"),
        (
            ExecError::OverlappingSegments {
                first: 1,
                second: 2,
            },
            Errno::ENOEXEC,
            "segments 1 and 2 overlap",
        ),
        (
            ExecError::EntryOutOfRange { entry: 0 },
            Errno::EINVAL,
            "entry point 0x0",
        ),
        (
            ExecError::SegmentOutOfRange {
                index: 3,
                vaddr: 0x10,
                memsz: 1,
            },
            Errno::EINVAL,
            "segment 3",
        ),
        (ExecError::BadBase { base: 0x11 }, Errno::EINVAL, "0x11"),
        (
            ExecError::ArgumentsTooLong { size: 5, max: 4 },
            Errno::E2BIG,
            "5 bytes",
        ),
        (
            ExecError::ExecfnTooLong { len: 5000 },
            Errno::ENAMETOOLONG,
            "5000",
        ),
    ];
    for (e, errno, text) in cases {
        assert_eq!(e.to_errno(), errno, "{e:?}");
        assert!(e.to_string().contains(text), "{e} lacks {text:?}");
    }
}

#[test]
fn truncation_at_every_offset_never_panics() {
    let good = Executable::parse(FIXTURE).unwrap();
    for len in 0..FIXTURE.len() {
        let r = Executable::parse(&FIXTURE[..len]);
        if len < 4 {
            assert_eq!(r, Err(ExecError::BadMagic), "{len}");
        } else if len < 64 {
            assert!(
                matches!(
                    r,
                    Err(ExecError::Truncated {
                        what: "ELF header",
                        ..
                    })
                ),
                "{len}"
            );
        } else if len < 0x3010 {
            // The last segment's file bytes end at 0x3010.
            assert!(r.is_err(), "{len}");
        } else {
            // Section headers past that are not needed for loading.
            assert_eq!(r.as_ref(), Ok(&good), "{len}");
        }
    }
}

#[test]
fn corrupting_header_bytes_never_panics() {
    let table_end = 64 + 7 * 56;
    for i in 0..table_end {
        for v in [0x00, 0x01, 0x7f, 0x80, 0xff] {
            let mut f = FIXTURE.to_vec();
            f[i] = v;
            let _ = Executable::parse(&f).map(|e| e.mappings());
        }
    }
}

// ---- Real binaries, built at test time ----

/// A fresh temporary directory, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new(tag: &str) -> TempDir {
        let p = std::env::temp_dir().join(format!("reef-exec-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).unwrap();
        TempDir(p)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

const MUSL_GCC: &str = "/usr/bin/musl-gcc";
const MUSL_LIB: &str = "/usr/lib/x86_64-linux-musl";

fn have(tool: &str) -> bool {
    Command::new(tool)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Compiles `data/hello.c` with musl-gcc and `args`; None (with a message) if musl-gcc is
/// missing.
fn compile(dir: &Path, out: &str, args: &[&str]) -> Option<Vec<u8>> {
    if !Path::new(MUSL_GCC).exists() {
        println!("skipped: {MUSL_GCC} not found (install musl-tools)");
        return None;
    }
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/hello.c");
    let exe = dir.join(out);
    let status = Command::new(MUSL_GCC)
        .args(args)
        .arg("-o")
        .arg(&exe)
        .arg(&src)
        .status()
        .expect("run musl-gcc");
    assert!(status.success(), "musl-gcc {args:?} failed");
    Some(std::fs::read(exe).unwrap())
}

/// Program headers and entry point as `readelf -lhW` reports them.
struct Readelf {
    entry: u64,
    /// (type, offset, vaddr, filesz, memsz, flags, align)
    headers: Vec<(String, u64, u64, u64, u64, String, u64)>,
}

fn readelf(path: &Path) -> Option<Readelf> {
    if !have("readelf") {
        println!("skipped readelf cross-check: readelf not found");
        return None;
    }
    let out = Command::new("readelf")
        .arg("-lhW")
        .arg(path)
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    let hex = |s: &str| u64::from_str_radix(s.trim_start_matches("0x"), 16).unwrap();
    let entry = text
        .lines()
        .find_map(|l| l.trim().strip_prefix("Entry point address:"))
        .map(|v| hex(v.trim()))
        .unwrap();
    let mut headers = Vec::new();
    let mut in_table = false;
    for line in text.lines() {
        let t: Vec<&str> = line.split_whitespace().collect();
        if t.first() == Some(&"Type") {
            in_table = true;
            continue;
        }
        if in_table {
            if t.is_empty() {
                break;
            }
            if t[0].starts_with('[') {
                continue; // "[Requesting program interpreter: ...]"
            }
            let flags = t[6..t.len() - 1].concat();
            headers.push((
                t[0].to_string(),
                hex(t[1]),
                hex(t[2]),
                hex(t[4]),
                hex(t[5]),
                flags,
                hex(t[t.len() - 1]),
            ));
        }
    }
    Some(Readelf { entry, headers })
}

/// Checks a parsed executable against readelf's view of the file.
fn cross_check(path: &Path, exe: &Executable) {
    let Some(r) = readelf(path) else { return };
    assert_eq!(exe.entry(), r.entry + exe.load_bias());
    assert_eq!(usize::from(exe.phnum()), r.headers.len());
    let mut loads: Vec<Segment> = r
        .headers
        .iter()
        .filter(|h| h.0 == "LOAD" && h.4 > 0)
        .map(|h| Segment {
            vaddr: h.2 + exe.load_bias(),
            memsz: h.4,
            file_offset: h.1,
            filesz: h.3,
            readable: h.5.contains('R'),
            writable: h.5.contains('W'),
            executable: h.5.contains('E'),
        })
        .collect();
    loads.sort_by_key(|s| s.vaddr);
    assert_eq!(exe.segments(), &loads[..]);
    let top = loads.iter().map(|s| s.vaddr + s.memsz).max().unwrap();
    assert_eq!(exe.brk(), (top + 4095) & !4095);
    let tls = r.headers.iter().find(|h| h.0 == "TLS").map(|h| Tls {
        vaddr: h.2 + exe.load_bias(),
        filesz: h.3,
        memsz: h.4,
        align: h.6,
    });
    assert_eq!(exe.tls(), tls);
    let stack = r.headers.iter().find(|h| h.0 == "GNU_STACK");
    assert_eq!(
        exe.executable_stack(),
        stack.is_some_and(|h| h.5.contains('E'))
    );
    // AT_PHDR: wherever it came from, the loaded bytes there must be the program headers.
    let file = std::fs::read(path).unwrap();
    let pages = load(&file, exe);
    let phoff = u64::from_le_bytes(file[32..40].try_into().unwrap()) as usize;
    let n = usize::from(exe.phnum()) * 56;
    assert_eq!(
        read(&pages, exe.phdr_addr().unwrap(), n),
        file[phoff..phoff + n]
    );
}

#[test]
fn musl_static() {
    let dir = TempDir::new("static");
    let Some(bytes) = compile(&dir.0, "static", &["-static", "-O2"]) else {
        return;
    };
    let exe = Executable::parse(&bytes).unwrap();
    assert_eq!(exe.kind(), ElfKind::Exec);
    assert!(exe.tls().is_some(), "hello.c has a thread-local variable");
    cross_check(&dir.0.join("static"), &exe);
}

#[test]
fn musl_static_pie() {
    // Debian's musl-gcc specs link `-static-pie` against libc.so with Scrt1.o (a dynamic PIE),
    // so a real static-PIE needs rcrt1.o and a static link spelled out.
    let dir = TempDir::new("spie");
    if !Path::new(MUSL_GCC).exists() {
        println!("skipped: {MUSL_GCC} not found (install musl-tools)");
        return;
    }
    let gcc_file = |name: &str| {
        let o = Command::new("gcc")
            .arg(format!("-print-file-name={name}"))
            .output()
            .unwrap();
        String::from_utf8(o.stdout).unwrap().trim().to_string()
    };
    let (rcrt1, crti, crtn) = (
        format!("{MUSL_LIB}/rcrt1.o"),
        format!("{MUSL_LIB}/crti.o"),
        format!("{MUSL_LIB}/crtn.o"),
    );
    let (begin, end) = (gcc_file("crtbeginS.o"), gcc_file("crtendS.o"));
    let args = [
        "-fPIE",
        "-static-pie",
        "-Wl,-static",
        "-Wl,--no-dynamic-linker",
        "-nostartfiles",
        &rcrt1,
        &crti,
        &begin,
        "-Os",
        "-x",
        "c",
    ];
    // The object files must come before the source, and crtend/crtn after it.
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/hello.c");
    let out = dir.0.join("spie");
    let status = Command::new(MUSL_GCC)
        .args(args)
        .arg(&src)
        .args(["-x", "none", &end, &crtn, "-o"])
        .arg(&out)
        .status()
        .unwrap();
    assert!(status.success());
    let bytes = std::fs::read(&out).unwrap();
    let exe = Executable::parse_at(&bytes, 0x7f12_3456_7000).unwrap();
    assert_eq!(exe.kind(), ElfKind::Dyn);
    assert_eq!(exe.interpreter(), None);
    assert_eq!(exe.span(), exe.brk() - 0x7f12_3456_7000);
    // Linked at 0: the bias is the base itself.
    assert_eq!(exe.load_bias(), 0x7f12_3456_7000);
    assert_eq!(exe.segments()[0].vaddr, 0x7f12_3456_7000);
    cross_check(&out, &exe);
    // The same file at the default base.
    assert_eq!(
        Executable::parse(&bytes).unwrap().load_bias(),
        DEFAULT_PIE_BASE
    );
}

#[test]
fn musl_dynamic_pie_names_its_interpreter() {
    let dir = TempDir::new("dyn");
    let Some(bytes) = compile(&dir.0, "dyn", &["-fPIE", "-pie"]) else {
        return;
    };
    let exe = Executable::parse(&bytes).unwrap();
    assert_eq!(exe.kind(), ElfKind::Dyn);
    assert_eq!(exe.interpreter(), Some(&b"/lib/ld-musl-x86_64.so.1"[..]));
    cross_check(&dir.0.join("dyn"), &exe);
}

#[test]
fn glibc_loader_and_a_dynamic_program() {
    // The host's (Debian's) dynamic loader is itself an ET_DYN without an interpreter; a
    // dynamically linked program names it.
    let loader = Path::new("/lib64/ld-linux-x86-64.so.2");
    let (Ok(ld), Ok(ls)) = (std::fs::read(loader), std::fs::read("/bin/ls")) else {
        println!("skipped: no glibc loader or /bin/ls on this host");
        return;
    };
    let exe = Executable::parse_at(&ld, 0x7f00_0000_0000).unwrap();
    assert_eq!(exe.kind(), ElfKind::Dyn);
    assert_eq!(exe.interpreter(), None);
    cross_check(loader, &exe);
    let prog = Executable::parse(&ls).unwrap();
    assert_eq!(
        prog.interpreter(),
        Some(&b"/lib64/ld-linux-x86-64.so.2"[..])
    );
    cross_check(Path::new("/bin/ls"), &prog);
}

#[test]
fn busybox() {
    let path = Path::new("/bin/busybox");
    let Ok(bytes) = std::fs::read(path) else {
        println!("skipped: /bin/busybox not present");
        return;
    };
    match Executable::parse(&bytes) {
        Ok(exe) => cross_check(path, &exe),
        // A distribution's dynamically linked busybox is fine too, as long as we say why.
        Err(e) => panic!("busybox: {e}"),
    }
}

#[test]
fn parse_prefix_matches_whole_file_and_checks_bounds() {
    let whole = Executable::parse(FIXTURE).unwrap();
    let prefix =
        Executable::parse_prefix(&FIXTURE[..4096], FIXTURE.len() as u64, DEFAULT_PIE_BASE).unwrap();
    assert_eq!(whole, prefix);
    // A file shorter than its segments is refused even when only a prefix is given.
    let short = Executable::parse_prefix(&FIXTURE[..4096], 5000, DEFAULT_PIE_BASE);
    assert!(
        matches!(short, Err(ExecError::SegmentBeyondFile { .. })),
        "{short:?}"
    );
    // The program header table must be inside the prefix.
    let tiny = Executable::parse_prefix(&FIXTURE[..100], FIXTURE.len() as u64, DEFAULT_PIE_BASE);
    assert!(matches!(tiny, Err(ExecError::Truncated { .. })), "{tiny:?}");
}
