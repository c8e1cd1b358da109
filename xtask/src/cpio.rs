//! cpio "newc" archives (the initramfs format Linux and Reef read), written and read here so the
//! build does not depend on the host's `cpio`.
//!
//! An entry is a 110-byte ASCII header (`070701` and thirteen 8-digit hex fields: inode, mode,
//! uid, gid, nlink, mtime, file size, device major/minor, rdev major/minor, name size including
//! its NUL, checksum 0), the name and a NUL padded to a multiple of 4 bytes, then the data padded
//! to a multiple of 4. A symlink's data is its target. The archive ends with an entry named
//! `TRAILER!!!`. Names are relative (`bin/busybox`, no leading `/`).
//!
//! [`write`] gives every entry uid 0, gid 0 and mtime 0 and numbers inodes in order, so the same
//! entries always give the same bytes. It refuses an entry whose directory has not come before it.

use std::collections::HashSet;

/// Directory type bits of a mode.
pub const S_IFDIR: u32 = 0o040000;
/// Regular-file type bits of a mode.
pub const S_IFREG: u32 = 0o100000;
/// Symbolic-link type bits of a mode.
pub const S_IFLNK: u32 = 0o120000;
/// Mask of the type bits.
pub const S_IFMT: u32 = 0o170000;

const MAGIC: &[u8; 6] = b"070701";
const TRAILER: &str = "TRAILER!!!";
const HEADER_LEN: usize = 110;

/// One archive entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    /// Path inside the archive, relative (`bin/busybox`).
    pub name: String,
    /// Type and permission bits (`S_IFREG | 0o755`).
    pub mode: u32,
    /// File contents, or a symlink's target; empty for directories.
    pub data: Vec<u8>,
}

impl Entry {
    /// A directory with permission bits `perm`.
    pub fn dir(name: &str, perm: u32) -> Entry {
        Entry {
            name: name.into(),
            mode: S_IFDIR | perm,
            data: Vec::new(),
        }
    }

    /// A regular file with permission bits `perm`.
    pub fn file(name: &str, perm: u32, data: Vec<u8>) -> Entry {
        Entry {
            name: name.into(),
            mode: S_IFREG | perm,
            data,
        }
    }

    /// A symbolic link to `target`.
    pub fn symlink(name: &str, target: &str) -> Entry {
        Entry {
            name: name.into(),
            mode: S_IFLNK | 0o777,
            data: target.as_bytes().to_vec(),
        }
    }
}

fn pad4(out: &mut Vec<u8>) {
    while !out.len().is_multiple_of(4) {
        out.push(0);
    }
}

fn header(out: &mut Vec<u8>, fields: [u32; 13]) {
    out.extend_from_slice(MAGIC);
    for f in fields {
        out.extend_from_slice(format!("{f:08x}").as_bytes());
    }
}

fn parent(name: &str) -> Option<&str> {
    name.rsplit_once('/').map(|(dir, _)| dir)
}

/// The archive holding `entries` in the given order, with the trailer.
pub fn write(entries: &[Entry]) -> Result<Vec<u8>, String> {
    let mut out = Vec::new();
    let mut dirs: HashSet<&str> = HashSet::new();
    let mut names: HashSet<&str> = HashSet::new();
    for (i, e) in entries.iter().enumerate() {
        let bad = e.name.is_empty()
            || e.name.starts_with('/')
            || e.name.ends_with('/')
            || e.name.contains('\0')
            || e.name == TRAILER
            || e.name
                .split('/')
                .any(|c| c.is_empty() || c == "." || c == "..");
        if bad {
            return Err(format!("cpio: bad entry name {:?}", e.name));
        }
        if !names.insert(&e.name) {
            return Err(format!("cpio: {} appears twice", e.name));
        }
        if let Some(dir) = parent(&e.name) {
            if !dirs.contains(dir) {
                return Err(format!("cpio: {} comes before its directory {dir}", e.name));
            }
        }
        let kind = e.mode & S_IFMT;
        if kind == S_IFDIR {
            dirs.insert(&e.name);
            if !e.data.is_empty() {
                return Err(format!("cpio: directory {} has data", e.name));
            }
        } else if kind != S_IFREG && kind != S_IFLNK {
            return Err(format!(
                "cpio: {} has unsupported mode {:o}",
                e.name, e.mode
            ));
        }
        let size = u32::try_from(e.data.len())
            .map_err(|_| format!("cpio: {} is larger than 4 GiB", e.name))?;
        let nlink = if kind == S_IFDIR { 2 } else { 1 };
        let ino = u32::try_from(i + 1).map_err(|_| "cpio: too many entries".to_string())?;
        let namesize = e.name.len() as u32 + 1;
        header(
            &mut out,
            [ino, e.mode, 0, 0, nlink, 0, size, 0, 0, 0, 0, namesize, 0],
        );
        out.extend_from_slice(e.name.as_bytes());
        out.push(0);
        pad4(&mut out);
        out.extend_from_slice(&e.data);
        pad4(&mut out);
    }
    header(
        &mut out,
        [0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, TRAILER.len() as u32 + 1, 0],
    );
    out.extend_from_slice(TRAILER.as_bytes());
    out.push(0);
    pad4(&mut out);
    Ok(out)
}

/// An entry as read back, with the header fields [`Entry`] does not carry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReadEntry {
    /// Name, type, permissions and data.
    pub entry: Entry,
    /// Inode number.
    pub ino: u32,
    /// Owner.
    pub uid: u32,
    /// Group.
    pub gid: u32,
    /// Link count.
    pub nlink: u32,
    /// Modification time (seconds since 1970).
    pub mtime: u32,
}

fn field(archive: &[u8], at: usize, index: usize) -> Result<u32, String> {
    let start = at + 6 + index * 8;
    let text = std::str::from_utf8(&archive[start..start + 8])
        .map_err(|_| format!("cpio: non-ASCII header field at byte {start}"))?;
    u32::from_str_radix(text, 16)
        .map_err(|_| format!("cpio: header field {text:?} at byte {start} is not hex"))
}

fn align4(n: usize) -> usize {
    n.div_ceil(4) * 4
}

/// Reads a newc archive up to its trailer, checking its structure.
pub fn read(archive: &[u8]) -> Result<Vec<ReadEntry>, String> {
    let mut entries = Vec::new();
    let mut at = 0;
    loop {
        if at + HEADER_LEN > archive.len() {
            return Err(format!("cpio: truncated header at byte {at} (no trailer)"));
        }
        if &archive[at..at + 6] != MAGIC {
            return Err(format!("cpio: bad magic at byte {at}"));
        }
        let f = |i| field(archive, at, i);
        let (ino, mode, uid, gid, nlink, mtime) = (f(0)?, f(1)?, f(2)?, f(3)?, f(4)?, f(5)?);
        let size = f(6)? as usize;
        let namesize = f(11)? as usize;
        if f(12)? != 0 {
            return Err(format!("cpio: nonzero checksum field at byte {at}"));
        }
        let name_at = at + HEADER_LEN;
        if namesize == 0 || name_at + namesize > archive.len() {
            return Err(format!("cpio: bad name size {namesize} at byte {at}"));
        }
        if archive[name_at + namesize - 1] != 0 {
            return Err(format!(
                "cpio: name at byte {name_at} is not NUL-terminated"
            ));
        }
        let name = std::str::from_utf8(&archive[name_at..name_at + namesize - 1])
            .map_err(|_| format!("cpio: name at byte {name_at} is not UTF-8"))?
            .to_string();
        let data_at = align4(name_at + namesize);
        if archive[name_at + namesize..data_at.min(archive.len())]
            .iter()
            .any(|&b| b != 0)
        {
            return Err(format!("cpio: nonzero padding after the name {name}"));
        }
        if data_at + size > archive.len() {
            return Err(format!("cpio: data of {name} runs past the end"));
        }
        let data = archive[data_at..data_at + size].to_vec();
        at = align4(data_at + size);
        if name == TRAILER {
            if archive[data_at + size..].iter().any(|&b| b != 0) {
                return Err("cpio: data after the trailer".into());
            }
            return Ok(entries);
        }
        entries.push(ReadEntry {
            entry: Entry { name, mode, data },
            ino,
            uid,
            gid,
            nlink,
            mtime,
        });
    }
}

/// `ls -l`-style type and permission letters of `mode` (`drwxr-xr-x`, `lrwxrwxrwx`).
pub fn mode_string(mode: u32) -> String {
    let kind = match mode & S_IFMT {
        S_IFDIR => 'd',
        S_IFLNK => 'l',
        S_IFREG => '-',
        _ => '?',
    };
    let mut s = String::from(kind);
    for (shift, special, set_char) in [(6, 0o4000, 's'), (3, 0o2000, 's'), (0, 0o1000, 't')] {
        let bits = (mode >> shift) & 7;
        s.push(if bits & 4 != 0 { 'r' } else { '-' });
        s.push(if bits & 2 != 0 { 'w' } else { '-' });
        let x = bits & 1 != 0;
        s.push(match (mode & special != 0, x) {
            (true, true) => set_char,
            (true, false) => set_char.to_ascii_uppercase(),
            (false, true) => 'x',
            (false, false) => '-',
        });
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Vec<Entry> {
        vec![
            Entry::dir("bin", 0o755),
            Entry::file("bin/busybox", 0o755, b"\x7fELF...".to_vec()),
            Entry::symlink("bin/sh", "busybox"),
            Entry::dir("tmp", 0o1777),
            Entry::file("etc-file", 0o644, Vec::new()),
        ]
    }

    #[test]
    fn header_layout_matches_newc() {
        let bytes = write(&[Entry::file("ab", 0o644, b"xyz".to_vec())]).unwrap();
        let expected_header = [
            "070701", "00000001", "000081a4", "00000000", "00000000", "00000001", "00000000",
            "00000003", "00000000", "00000000", "00000000", "00000000", "00000003", "00000000",
        ]
        .concat();
        assert_eq!(&bytes[..110], expected_header.as_bytes());
        // name "ab\0" ends at 113, padded to 116; data "xyz" padded to 120.
        assert_eq!(&bytes[110..116], b"ab\0\0\0\0");
        assert_eq!(&bytes[116..120], b"xyz\0");
        assert_eq!(&bytes[120..126], b"070701");
        assert_eq!(bytes.len() % 4, 0);
    }

    #[test]
    fn round_trip_keeps_entries_in_order() {
        let entries = sample();
        let bytes = write(&entries).unwrap();
        let back = read(&bytes).unwrap();
        let names: Vec<&Entry> = back.iter().map(|r| &r.entry).collect();
        assert_eq!(names, entries.iter().collect::<Vec<_>>());
        for (i, r) in back.iter().enumerate() {
            assert_eq!((r.uid, r.gid, r.mtime), (0, 0, 0));
            assert_eq!(r.ino as usize, i + 1);
            let dir = r.entry.mode & S_IFMT == S_IFDIR;
            assert_eq!(r.nlink, if dir { 2 } else { 1 });
        }
        assert_eq!(write(&entries).unwrap(), bytes, "not reproducible");
    }

    #[test]
    fn entries_must_follow_their_directory() {
        let err = write(&[Entry::file("bin/x", 0o755, vec![1])]).unwrap_err();
        assert!(err.contains("before its directory bin"), "{err}");
        let err = write(&[Entry::dir("a", 0o755), Entry::dir("a", 0o755)]).unwrap_err();
        assert!(err.contains("twice"), "{err}");
        for bad in ["/abs", "a//b", "./a", "", "a/"] {
            assert!(
                write(&[Entry::dir(bad, 0o755)]).is_err(),
                "{bad:?} accepted"
            );
        }
    }

    #[test]
    fn reader_rejects_damage() {
        let bytes = write(&sample()).unwrap();
        let mut bad_magic = bytes.clone();
        bad_magic[5] = b'2';
        assert!(read(&bad_magic).unwrap_err().contains("bad magic"));
        let truncated = &bytes[..bytes.len() - 8];
        assert!(read(truncated).is_err());
        let mut bad_hex = bytes.clone();
        bad_hex[6] = b'g';
        assert!(read(&bad_hex).unwrap_err().contains("not hex"));
    }

    #[test]
    fn mode_strings() {
        assert_eq!(mode_string(S_IFDIR | 0o755), "drwxr-xr-x");
        assert_eq!(mode_string(S_IFDIR | 0o1777), "drwxrwxrwt");
        assert_eq!(mode_string(S_IFLNK | 0o777), "lrwxrwxrwx");
        assert_eq!(mode_string(S_IFREG | 0o644), "-rw-r--r--");
    }
}
