//! Reading newc archives built by a small writer, and every kind of malformed input.

use cpio::{Archive, CpioError, Entry, S_IFBLK, S_IFCHR, S_IFDIR, S_IFIFO, S_IFLNK, S_IFREG};

/// One member to write; `check: None` means "compute it" (070702) or 0 (070701).
#[derive(Clone)]
struct Member {
    name: Vec<u8>,
    mode: u32,
    uid: u32,
    gid: u32,
    nlink: u32,
    mtime: u32,
    dev: (u32, u32),
    rdev: (u32, u32),
    ino: u32,
    data: Vec<u8>,
    check: Option<u32>,
}

fn member(name: &str, mode: u32, data: &[u8]) -> Member {
    Member {
        name: name.as_bytes().to_vec(),
        mode,
        uid: 0,
        gid: 0,
        nlink: 1,
        mtime: 0x6543_2100,
        dev: (8, 1),
        rdev: (0, 0),
        ino: 0,
        data: data.to_vec(),
        check: None,
    }
}

/// A newc writer, as GNU cpio and Linux's gen_init_cpio lay archives out.
struct Writer {
    buf: Vec<u8>,
    crc: bool,
    next_ino: u32,
}

impl Writer {
    fn new(crc: bool) -> Writer {
        Writer {
            buf: Vec::new(),
            crc,
            next_ino: 700,
        }
    }

    fn pad(&mut self) {
        while self.buf.len() % 4 != 0 {
            self.buf.push(0);
        }
    }

    fn add(&mut self, m: &Member) -> &mut Writer {
        let check = match (self.crc, m.check) {
            (_, Some(c)) => c,
            (true, None) => m.data.iter().map(|&b| u32::from(b)).sum(),
            (false, None) => 0,
        };
        let ino = if m.ino != 0 {
            m.ino
        } else {
            self.next_ino += 1;
            self.next_ino
        };
        let fields = [
            ino,
            m.mode,
            m.uid,
            m.gid,
            m.nlink,
            m.mtime,
            m.data.len() as u32,
            m.dev.0,
            m.dev.1,
            m.rdev.0,
            m.rdev.1,
            m.name.len() as u32 + 1,
            check,
        ];
        self.buf
            .extend_from_slice(if self.crc { b"070702" } else { b"070701" });
        for f in fields {
            self.buf.extend_from_slice(format!("{f:08X}").as_bytes());
        }
        self.buf.extend_from_slice(&m.name);
        self.buf.push(0);
        self.pad();
        self.buf.extend_from_slice(&m.data);
        self.pad();
        self
    }

    fn trailer(&mut self) -> &mut Writer {
        let mut t = member("TRAILER!!!", 0, b"");
        t.nlink = 1;
        t.mtime = 0;
        t.dev = (0, 0);
        t.ino = 0;
        self.add(&t)
    }

    fn bytes(&self) -> Vec<u8> {
        self.buf.clone()
    }
}

fn read_all(data: &[u8]) -> Result<Vec<Entry<'_>>, CpioError> {
    Archive::new(data).into_iter().collect()
}

fn sample() -> Vec<Member> {
    let mut console = member("dev/console", S_IFCHR | 0o600, b"");
    console.rdev = (5, 1);
    let mut sda = member("dev/sda", S_IFBLK | 0o660, b"");
    sda.rdev = (8, 0);
    sda.gid = 6;
    let mut init = member("init", S_IFREG | 0o755, b"#!/bin/sh\nexec /bin/sh\n");
    init.uid = 1000;
    init.gid = 1001;
    init.mtime = 0xffff_ffff;
    vec![
        member(".", S_IFDIR | 0o755, b""),
        member("./bin", S_IFDIR | 0o755, b""),
        member("/etc", S_IFDIR | 0o755, b""),
        member("dev", S_IFDIR | 0o755, b""),
        console,
        sda,
        member("dev/initctl", S_IFIFO | 0o600, b""),
        init,
        member("bin/sh", S_IFLNK | 0o777, b"busybox"),
        member("etc/one", S_IFREG | 0o644, b"1"),
        member("etc/two", S_IFREG | 0o644, b"22"),
        member("etc/three", S_IFREG | 0o644, b"333"),
        member("etc/four", S_IFREG | 0o4755, b"4444"),
        member("etc/empty", S_IFREG | 0o644, b""),
        member(
            "etc/binary",
            S_IFREG | 0o600,
            &(0..=255u8).collect::<Vec<_>>(),
        ),
    ]
}

fn written(crc: bool) -> Vec<u8> {
    let mut w = Writer::new(crc);
    for m in sample() {
        w.add(&m);
    }
    w.trailer().bytes()
}

#[test]
fn round_trip_of_every_kind_of_member() {
    for crc in [false, true] {
        let bytes = written(crc);
        let entries = read_all(&bytes).unwrap();
        let members = sample();
        assert_eq!(entries.len(), members.len());
        let mut expected_offset = 0;
        for (i, (e, m)) in entries.iter().zip(&members).enumerate() {
            let stripped = String::from_utf8(m.name.clone()).unwrap();
            let stripped = stripped.trim_start_matches("./").trim_start_matches('/');
            let stripped = if stripped == "." { "" } else { stripped };
            assert_eq!(e.name, stripped.as_bytes(), "member {i}");
            assert_eq!(e.mode, m.mode);
            assert_eq!(
                (e.uid, e.gid, e.nlink, e.mtime),
                (m.uid, m.gid, m.nlink, m.mtime)
            );
            assert_eq!((e.dev_major, e.dev_minor), m.dev);
            assert_eq!((e.rdev_major, e.rdev_minor), m.rdev);
            assert_eq!(e.ino, 701 + i as u32);
            assert_eq!(e.data, &m.data[..]);
            assert_eq!(e.offset, expected_offset);
            expected_offset +=
                (110 + m.name.len() + 1).next_multiple_of(4) + m.data.len().next_multiple_of(4);
        }
        let kinds: Vec<&str> = entries
            .iter()
            .map(
                |e| match (e.is_dir(), e.is_file(), e.is_symlink(), e.is_char_device()) {
                    (true, false, false, false) => "d",
                    (false, true, false, false) => "f",
                    (false, false, true, false) => "l",
                    (false, false, false, true) => "c",
                    (false, false, false, false) if e.is_block_device() => "b",
                    (false, false, false, false) if e.is_fifo() => "p",
                    _ => "?",
                },
            )
            .collect();
        assert_eq!(
            kinds,
            ["d", "d", "d", "d", "c", "b", "p", "f", "l", "f", "f", "f", "f", "f", "f"]
        );
        assert_eq!(
            entries[8].data, b"busybox",
            "a symlink's data is its target"
        );
        assert_eq!(entries[12].permissions(), 0o4755);
        assert_eq!(entries[12].file_type(), S_IFREG);
    }
}

#[test]
fn a_hand_written_archive() {
    // Written out field by field, independently of the test writer.
    let mut a = Vec::new();
    a.extend_from_slice(b"070701"); // magic
    a.extend_from_slice(b"0000002a"); // ino 42 (lower-case hex is accepted)
    a.extend_from_slice(b"000081A4"); // mode 0100644
    a.extend_from_slice(b"000003E8"); // uid 1000
    a.extend_from_slice(b"00000064"); // gid 100
    a.extend_from_slice(b"00000001"); // nlink
    a.extend_from_slice(b"5F5E1000"); // mtime
    a.extend_from_slice(b"00000003"); // filesize 3
    a.extend_from_slice(b"00000000"); // devmajor
    a.extend_from_slice(b"00000000"); // devminor
    a.extend_from_slice(b"00000000"); // rdevmajor
    a.extend_from_slice(b"00000000"); // rdevminor
    a.extend_from_slice(b"00000006"); // namesize: "./a/b" + NUL
    a.extend_from_slice(b"00000000"); // check
    assert_eq!(a.len(), 110);
    a.extend_from_slice(b"./a/b\0"); // 116: already a multiple of 4
    a.extend_from_slice(b"hi\n\0"); // data + 1 byte of padding
                                    // The trailer: nlink 1, namesize 11, everything else 0.
    a.extend_from_slice(b"070701");
    for f in [0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 11, 0] {
        a.extend_from_slice(format!("{f:08x}").as_bytes());
    }
    a.extend_from_slice(b"TRAILER!!!\0\0\0\0"); // 110 + 11 + 3 bytes of padding
    a.extend_from_slice(&[0; 512]);
    let e = read_all(&a).unwrap();
    assert_eq!(e.len(), 1);
    assert_eq!(e[0].name, b"a/b");
    assert_eq!(e[0].ino, 42);
    assert_eq!(e[0].mode, 0o100644);
    assert_eq!((e[0].uid, e[0].gid, e[0].mtime), (1000, 100, 0x5f5e_1000));
    assert_eq!(e[0].data, b"hi\n");
    assert!(e[0].is_file());
}

#[test]
fn checksums_are_verified() {
    let mut w = Writer::new(true);
    w.add(&member("ok", S_IFREG | 0o644, b"abc"));
    let mut bad = member("bad", S_IFREG | 0o644, b"abc");
    bad.check = Some(0x126 + 1);
    let bad_offset = w.buf.len();
    w.add(&bad);
    let bytes = w.trailer().bytes();
    let mut it = Archive::new(&bytes).into_iter();
    assert_eq!(it.next().unwrap().unwrap().name, b"ok");
    let e = it.next().unwrap().unwrap_err();
    assert_eq!(
        e,
        CpioError::BadChecksum {
            offset: bad_offset,
            expected: 0x127,
            actual: 0x126
        }
    );
    assert!(e.to_string().contains("0x126"), "{e}");
    assert!(it.next().is_none(), "the iterator ends after an error");

    // GNU cpio writes a 0 checksum for symlinks; a non-zero one is still checked.
    let mut link = member("l", S_IFLNK | 0o777, b"target");
    link.check = Some(0);
    let bytes = Writer::new(true).add(&link).trailer().bytes();
    assert_eq!(read_all(&bytes).unwrap()[0].data, b"target");
    link.check = Some(1);
    let bytes = Writer::new(true).add(&link).trailer().bytes();
    assert!(matches!(
        read_all(&bytes),
        Err(CpioError::BadChecksum {
            offset: 0,
            expected: 1,
            ..
        })
    ));
    // An empty regular file must have check 0.
    let mut empty = member("e", S_IFREG, b"");
    empty.check = Some(5);
    let bytes = Writer::new(true).add(&empty).trailer().bytes();
    assert!(matches!(
        read_all(&bytes),
        Err(CpioError::BadChecksum { actual: 0, .. })
    ));
    // In 070701 archives the check field is not a checksum.
    let bytes = Writer::new(false).add(&bad).trailer().bytes();
    assert_eq!(read_all(&bytes).unwrap()[0].data, b"abc");
}

#[test]
fn concatenated_archives_with_padding() {
    let mut bytes = Writer::new(false)
        .add(&member("early", S_IFREG, b"ucode"))
        .trailer()
        .bytes();
    bytes.extend_from_slice(&[0; 508]);
    bytes.extend(
        Writer::new(true)
            .add(&member("main", S_IFREG, b"xyz"))
            .trailer()
            .bytes(),
    );
    bytes.extend_from_slice(&[0; 4]);
    let names: Vec<&[u8]> = read_all(&bytes).unwrap().iter().map(|e| e.name).collect();
    assert_eq!(names, [&b"early"[..], b"main"]);
}

#[test]
fn trailer_without_padding_at_the_end_is_complete() {
    let bytes = written(false);
    // The trailer's header and name are 121 bytes; the last 3 are padding.
    assert_eq!(
        read_all(&bytes[..bytes.len() - 3]).unwrap().len(),
        sample().len()
    );
}

#[test]
fn misaligned_concatenation() {
    let mut bytes = Writer::new(false).trailer().bytes();
    let at = bytes.len() + 2;
    bytes.extend_from_slice(&[0, 0]);
    bytes.extend(Writer::new(false).trailer().bytes());
    assert_eq!(
        read_all(&bytes),
        Err(CpioError::MisalignedArchive { offset: at })
    );
}

#[test]
fn garbage_after_the_trailer() {
    let mut bytes = Writer::new(false).trailer().bytes();
    let at = bytes.len();
    bytes.extend_from_slice(b"\0\0\0\0junk");
    assert_eq!(
        read_all(&bytes),
        Err(CpioError::BadMagic { offset: at + 4 })
    );
}

#[test]
fn bad_magic() {
    // The old portable format (070707) and the old binary one are not newc.
    for magic in [
        &b"070707"[..],
        b"070700",
        b"\xc7\x71\x00\x00\x00\x00",
        b"07070",
    ] {
        let mut bytes = written(false);
        bytes[..magic.len()].copy_from_slice(magic);
        if magic.len() == 5 {
            bytes[5] = b'x';
        }
        assert_eq!(
            read_all(&bytes),
            Err(CpioError::BadMagic { offset: 0 }),
            "{magic:?}"
        );
    }
    // Also in a later header.
    let mut bytes = written(false);
    let second = read_all(&written(false)).unwrap()[1].offset;
    bytes[second + 5] = b'3';
    let mut it = Archive::new(&bytes).into_iter();
    assert!(it.next().unwrap().is_ok());
    assert_eq!(it.next(), Some(Err(CpioError::BadMagic { offset: second })));
    assert_eq!(it.next(), None);
}

#[test]
fn non_hex_digits_in_every_field() {
    let names = [
        "ino",
        "mode",
        "uid",
        "gid",
        "nlink",
        "mtime",
        "filesize",
        "devmajor",
        "devminor",
        "rdevmajor",
        "rdevminor",
        "namesize",
        "check",
    ];
    for (i, field) in names.iter().enumerate() {
        for (pos, bad) in [(0, b'g'), (7, b' '), (3, b'-'), (5, 0xff), (1, b'x')] {
            let mut bytes = written(false);
            bytes[6 + 8 * i + pos] = bad;
            let e = read_all(&bytes).unwrap_err();
            assert_eq!(
                e,
                CpioError::BadField {
                    offset: 6 + 8 * i,
                    field
                },
                "{field} {pos}"
            );
            assert!(e.to_string().contains(field));
        }
    }
}

#[test]
fn data_past_the_end() {
    let bytes = Writer::new(false)
        .add(&member("f", S_IFREG, b"abcd"))
        .trailer()
        .bytes();
    for size in ["FFFFFFFF", "000000F0", "80000000"] {
        let mut b = bytes.clone();
        b[6 + 8 * 6..6 + 8 * 7].copy_from_slice(size.as_bytes());
        assert_eq!(
            read_all(&b),
            Err(CpioError::Truncated {
                offset: 112,
                what: "data",
                len: usize::from_str_radix(size, 16).unwrap(),
                input_len: b.len()
            })
        );
    }
}

#[test]
fn name_past_the_end() {
    let bytes = Writer::new(false)
        .add(&member("f", S_IFREG, b"abcd"))
        .trailer()
        .bytes();
    for size in ["FFFFFFFF", "00001000"] {
        let mut b = bytes.clone();
        b[6 + 8 * 11..6 + 8 * 12].copy_from_slice(size.as_bytes());
        let len = usize::from_str_radix(size, 16).unwrap();
        assert_eq!(
            read_all(&b),
            Err(CpioError::Truncated {
                offset: 110,
                what: "name",
                len,
                input_len: b.len()
            })
        );
    }
}

#[test]
fn truncated_header() {
    let bytes = written(false);
    for len in [6, 50, 109] {
        assert_eq!(
            read_all(&bytes[..len]),
            Err(CpioError::Truncated {
                offset: 0,
                what: "header",
                len: 110,
                input_len: len
            })
        );
    }
    // A few bytes that are not even the start of a magic number.
    assert_eq!(read_all(b"abc"), Err(CpioError::BadMagic { offset: 0 }));
}

#[test]
fn missing_trailer() {
    assert_eq!(read_all(b""), Err(CpioError::MissingTrailer { offset: 0 }));
    let bytes = Writer::new(false)
        .add(&member("f", S_IFREG, b"abcd"))
        .bytes();
    let mut it = Archive::new(&bytes).into_iter();
    assert_eq!(it.next().unwrap().unwrap().data, b"abcd");
    let e = it.next().unwrap().unwrap_err();
    assert_eq!(
        e,
        CpioError::MissingTrailer {
            offset: bytes.len()
        }
    );
    assert!(e.to_string().contains("TRAILER!!!"));
    assert_eq!(it.next(), None);
}

#[test]
fn name_without_nul() {
    let bytes = Writer::new(false)
        .add(&member("abc", S_IFREG, b""))
        .trailer()
        .bytes();
    // Overwrite the NUL.
    let mut b = bytes.clone();
    b[113] = b'd';
    assert_eq!(read_all(&b), Err(CpioError::BadName { offset: 110 }));
    // namesize 0.
    let mut b = bytes.clone();
    b[6 + 8 * 11..6 + 8 * 12].copy_from_slice(b"00000000");
    assert_eq!(read_all(&b), Err(CpioError::BadName { offset: 110 }));
    // A NUL inside the name.
    let mut b = bytes.clone();
    b[111] = 0;
    assert_eq!(read_all(&b), Err(CpioError::BadName { offset: 110 }));
}

#[test]
fn truncation_at_every_offset_never_panics() {
    for crc in [false, true] {
        let bytes = written(crc);
        let full = read_all(&bytes).unwrap();
        let trailer_end = bytes.len() - 3;
        for len in 0..bytes.len() {
            let items: Vec<Result<Entry<'_>, CpioError>> =
                Archive::new(&bytes[..len]).into_iter().collect();
            let (last, ok) = items.split_last().expect("at least an error");
            for (e, f) in ok.iter().zip(&full) {
                assert_eq!(e.as_ref(), Ok(f));
            }
            if len < trailer_end {
                let e = (*last).expect_err("a truncated archive is an error");
                match e {
                    // The part starts at most 3 bytes (padding) past the end and really
                    // extends beyond it.
                    CpioError::Truncated {
                        offset,
                        len: part,
                        input_len,
                        ..
                    } => {
                        assert_eq!(input_len, len);
                        assert!(offset <= len + 3 && offset + part > len, "{e:?} at {len}");
                    }
                    CpioError::MissingTrailer { offset } => assert_eq!(offset, len),
                    other => panic!("truncation at {len} gave {other:?}"),
                }
            } else {
                assert_eq!(items.len(), full.len());
            }
        }
    }
}

#[test]
fn corrupting_any_byte_never_panics() {
    let bytes = written(true);
    for i in 0..bytes.len() {
        for v in [0u8, b'0', b'F', b'f', 0xff, b'7'] {
            let mut b = bytes.clone();
            b[i] = v;
            for e in Archive::new(&b).into_iter().flatten() {
                assert!(e.data.len() <= b.len());
            }
        }
    }
}
