//! Reader for cpio "newc" archives (`070701`, and `070702` with checksums), the format of
//! Linux's initramfs.
//!
//! ```
//! # fn main() -> Result<(), cpio::CpioError> {
//! # let mut image = b"070701".to_vec();
//! # for f in [0u32, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 11, 0] {
//! #     image.extend_from_slice(format!("{f:08X}").as_bytes());
//! # }
//! # image.extend_from_slice(b"TRAILER!!!\0\0\0\0");
//! # let image = &image[..];
//! for entry in cpio::Archive::new(image) {
//!     let entry = entry?;
//!     if entry.is_dir() {
//!         // mkdir entry.name with entry.mode & 0o7777
//!     } else if entry.is_file() {
//!         // create entry.name with contents entry.data
//!     } else if entry.is_symlink() {
//!         // symlink entry.name -> entry.data
//!     }
//! }
//! # assert_eq!(cpio::Archive::new(image).into_iter().count(), 0);
//! # Ok(()) }
//! ```
//!
//! # Format
//!
//! Each entry is a 110-byte ASCII header: the magic `070701` (or `070702`) and 13 fields of
//! exactly 8 hexadecimal digits (`ino`, `mode`, `uid`, `gid`, `nlink`, `mtime`, `filesize`,
//! `devmajor`, `devminor`, `rdevmajor`, `rdevminor`, `namesize`, `check`), then the name of
//! `namesize` bytes including its terminating NUL, padded with zeros so the data starts at a
//! multiple of 4 from the header, then `filesize` bytes of data, padded to a multiple of 4. The
//! entry named `TRAILER!!!` ends the archive. As in Linux's initramfs, several archives may be
//! concatenated, with NUL padding (in whole 4-byte units) between them. In `070702` archives the
//! `check` field is the sum of the data bytes modulo 2³²; it is verified for regular files, and
//! for other entries when it is not 0 (GNU cpio writes 0 for them).
//!
//! Names are returned without leading `/` and `./` components; the archive root (`.`) has the
//! empty name. A hard-linked file appears several times with the same `ino` and device, its data
//! usually only in the last occurrence (the others have empty data), as GNU cpio writes it.
//!
//! Every malformed input gives a [`CpioError`] naming the byte offset where the problem is;
//! after an error the iterator ends. Nothing panics and no slice is taken without a bounds
//! check.
//!
//! # Why not `cpio_reader`
//!
//! `cpio_reader` 0.1.2 is the maintained `no_std` newc reader on crates.io, but it reports a
//! malformed entry by silently ending the iteration, so a truncated or corrupt initramfs (or one
//! without a trailer) looks like a complete one and the error has no offset; it models the file
//! type as bitflags, so `mode().contains(Mode::DIRECTORY)` also holds for sockets (0o140000
//! includes the bits of 0o040000); and it requires names to be UTF-8. The format is small enough
//! that a reader with precise errors is shorter than working around these.

#![no_std]
#![forbid(unsafe_code)]
#![warn(missing_docs)]

use core::fmt;

/// Bit mask of the file type in `mode`.
pub const S_IFMT: u32 = 0o170000;
/// File type: socket.
pub const S_IFSOCK: u32 = 0o140000;
/// File type: symbolic link.
pub const S_IFLNK: u32 = 0o120000;
/// File type: regular file.
pub const S_IFREG: u32 = 0o100000;
/// File type: block device.
pub const S_IFBLK: u32 = 0o060000;
/// File type: directory.
pub const S_IFDIR: u32 = 0o040000;
/// File type: character device.
pub const S_IFCHR: u32 = 0o020000;
/// File type: FIFO.
pub const S_IFIFO: u32 = 0o010000;

/// Length of a newc header.
const HEADER_LEN: usize = 110;
/// Name of the entry that ends an archive.
const TRAILER: &[u8] = b"TRAILER!!!";
/// Names of the 13 header fields, in order.
const FIELDS: [&str; 13] = [
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

/// Why an archive cannot be read. Every offset is from the start of the archive.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CpioError {
    /// The header at `offset` does not start with `070701` or `070702`.
    BadMagic {
        /// Offset of the header.
        offset: usize,
    },
    /// A header field is not 8 hexadecimal digits.
    BadField {
        /// Offset of the field.
        offset: usize,
        /// Its name, as in the format description ("filesize", "namesize", ...).
        field: &'static str,
    },
    /// A header, name or data extends past the end of the input.
    Truncated {
        /// Offset where the part starts.
        offset: usize,
        /// "header", "name" or "data".
        what: &'static str,
        /// Its length in bytes.
        len: usize,
        /// The length of the input.
        input_len: usize,
    },
    /// The name at `offset` is empty or does not end with a NUL byte, or has a NUL byte before
    /// its end.
    BadName {
        /// Offset of the name.
        offset: usize,
    },
    /// The data of a `070702` entry does not add up to its `check` field.
    BadChecksum {
        /// Offset of the entry's header.
        offset: usize,
        /// The `check` field.
        expected: u32,
        /// The sum of the data bytes.
        actual: u32,
    },
    /// The input ends at `offset` without a `TRAILER!!!` entry.
    MissingTrailer {
        /// Where the next header was expected.
        offset: usize,
    },
    /// After a trailer and NUL padding, the next archive starts at an offset that is not a
    /// multiple of 4.
    MisalignedArchive {
        /// Offset of the first non-NUL byte.
        offset: usize,
    },
}

impl fmt::Display for CpioError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            CpioError::BadMagic { offset } => {
                write!(
                    f,
                    "cpio: no newc magic (070701 or 070702) at offset {offset}"
                )
            }
            CpioError::BadField { offset, field } => {
                write!(
                    f,
                    "cpio: field {field} at offset {offset} is not 8 hexadecimal digits"
                )
            }
            CpioError::Truncated {
                offset,
                what,
                len,
                input_len,
            } => write!(
                f,
                "cpio: {what} of {len} bytes at offset {offset} extends past the end of the \
                 {input_len}-byte input"
            ),
            CpioError::BadName { offset } => {
                write!(
                    f,
                    "cpio: name at offset {offset} is not a single NUL-terminated string"
                )
            }
            CpioError::BadChecksum {
                offset,
                expected,
                actual,
            } => write!(
                f,
                "cpio: data of entry at offset {offset} sums to {actual:#x}, header says \
                 {expected:#x}"
            ),
            CpioError::MissingTrailer { offset } => {
                write!(
                    f,
                    "cpio: input ends at offset {offset} without a TRAILER!!! entry"
                )
            }
            CpioError::MisalignedArchive { offset } => write!(
                f,
                "cpio: concatenated archive at offset {offset} does not start at a multiple of 4"
            ),
        }
    }
}

/// One archive member. The byte slices borrow from the archive.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Entry<'a> {
    /// The path, without leading `/` or `./` (empty for the archive root `.`), without the NUL.
    pub name: &'a [u8],
    /// The full `st_mode`: file type bits ([`S_IFMT`]) and permissions.
    pub mode: u32,
    /// Owner.
    pub uid: u32,
    /// Group.
    pub gid: u32,
    /// Number of links.
    pub nlink: u32,
    /// Modification time, seconds since the epoch.
    pub mtime: u32,
    /// Major number of the device holding the file (identifies hard links with `ino`).
    pub dev_major: u32,
    /// Minor number of the device holding the file.
    pub dev_minor: u32,
    /// For a device node, the major number of the device it refers to.
    pub rdev_major: u32,
    /// For a device node, the minor number of the device it refers to.
    pub rdev_minor: u32,
    /// Inode number.
    pub ino: u32,
    /// The contents: a file's bytes, a symlink's target.
    pub data: &'a [u8],
    /// Offset of the entry's header in the archive.
    pub offset: usize,
}

impl Entry<'_> {
    /// The file type bits of `mode`.
    pub fn file_type(&self) -> u32 {
        self.mode & S_IFMT
    }

    /// The permission bits of `mode` (including set-user-ID, set-group-ID and sticky).
    pub fn permissions(&self) -> u32 {
        self.mode & 0o7777
    }

    /// A directory.
    pub fn is_dir(&self) -> bool {
        self.file_type() == S_IFDIR
    }

    /// A regular file.
    pub fn is_file(&self) -> bool {
        self.file_type() == S_IFREG
    }

    /// A symbolic link; its target is `data`.
    pub fn is_symlink(&self) -> bool {
        self.file_type() == S_IFLNK
    }

    /// A character device node (`rdev_major`, `rdev_minor`).
    pub fn is_char_device(&self) -> bool {
        self.file_type() == S_IFCHR
    }

    /// A block device node (`rdev_major`, `rdev_minor`).
    pub fn is_block_device(&self) -> bool {
        self.file_type() == S_IFBLK
    }

    /// A FIFO.
    pub fn is_fifo(&self) -> bool {
        self.file_type() == S_IFIFO
    }

    /// A socket.
    pub fn is_socket(&self) -> bool {
        self.file_type() == S_IFSOCK
    }
}

/// A newc archive in memory (possibly several concatenated, as an initramfs may be).
///
/// Iterating yields each entry, or one error and then nothing.
#[derive(Clone, Copy, Debug)]
pub struct Archive<'a> {
    data: &'a [u8],
}

impl<'a> Archive<'a> {
    /// An archive over `data`; nothing is read until iteration.
    pub fn new(data: &'a [u8]) -> Archive<'a> {
        Archive { data }
    }

    /// An iterator over the entries.
    pub fn entries(&self) -> Entries<'a> {
        Entries {
            data: self.data,
            offset: 0,
            state: State::Header,
        }
    }
}

impl<'a> IntoIterator for Archive<'a> {
    type Item = Result<Entry<'a>, CpioError>;
    type IntoIter = Entries<'a>;

    fn into_iter(self) -> Entries<'a> {
        self.entries()
    }
}

impl<'a> IntoIterator for &Archive<'a> {
    type Item = Result<Entry<'a>, CpioError>;
    type IntoIter = Entries<'a>;

    fn into_iter(self) -> Entries<'a> {
        self.entries()
    }
}

/// Where the iterator is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    /// A header is expected at `offset`.
    Header,
    /// A trailer was read; NUL padding or another archive may follow.
    AfterTrailer,
    /// The input is used up, or an error was returned.
    Done,
}

/// Iterator over the entries of an [`Archive`].
#[derive(Clone, Debug)]
pub struct Entries<'a> {
    data: &'a [u8],
    offset: usize,
    state: State,
}

/// Rounds `n` up to a multiple of 4 (`n` is at most a few GiB above a slice length, so this
/// does not overflow on 64-bit targets; `checked_add` guards the others).
fn align4(n: usize) -> Option<usize> {
    n.checked_add(3).map(|n| n & !3)
}

/// Parses 8 hexadecimal digits.
fn hex8(digits: &[u8]) -> Option<u32> {
    digits.iter().try_fold(0u32, |acc, &d| {
        let v = (d as char).to_digit(16)?;
        Some(acc << 4 | v)
    })
}

/// Strips leading `/` and `./` components; `.` alone becomes empty.
fn strip_name(mut name: &[u8]) -> &[u8] {
    loop {
        if let Some(rest) = name.strip_prefix(b"/") {
            name = rest;
        } else if let Some(rest) = name.strip_prefix(b"./") {
            name = rest;
        } else if name == b"." {
            return &[];
        } else {
            return name;
        }
    }
}

impl<'a> Entries<'a> {
    fn truncated(&self, offset: usize, what: &'static str, len: usize) -> CpioError {
        CpioError::Truncated {
            offset,
            what,
            len,
            input_len: self.data.len(),
        }
    }

    /// Reads the entry at `self.offset`; on success also returns the offset of the next one.
    fn read_entry(&self) -> Result<(Entry<'a>, bool, usize), CpioError> {
        let start = self.offset;
        let header = start
            .checked_add(HEADER_LEN)
            .and_then(|end| self.data.get(start..end))
            .ok_or_else(|| {
                // A short tail that is not even a magic number is reported as such.
                let tail = &self.data[start.min(self.data.len())..];
                let magic_len = tail.len().min(6);
                if tail[..magic_len] != b"070701"[..magic_len]
                    && tail[..magic_len] != b"070702"[..magic_len]
                {
                    CpioError::BadMagic { offset: start }
                } else {
                    self.truncated(start, "header", HEADER_LEN)
                }
            })?;
        let crc = match &header[..6] {
            b"070701" => false,
            b"070702" => true,
            _ => return Err(CpioError::BadMagic { offset: start }),
        };
        let mut fields = [0u32; 13];
        for (i, (value, digits)) in fields
            .iter_mut()
            .zip(header[6..].chunks_exact(8))
            .enumerate()
        {
            *value = hex8(digits).ok_or(CpioError::BadField {
                offset: start + 6 + 8 * i,
                field: FIELDS[i],
            })?;
        }
        let [ino, mode, uid, gid, nlink, mtime, filesize, dev_major, dev_minor, rdev_major, rdev_minor, namesize, check] =
            fields;
        let (filesize, namesize) = (filesize as usize, namesize as usize);

        let name_at = start + HEADER_LEN;
        let raw_name = name_at
            .checked_add(namesize)
            .and_then(|end| self.data.get(name_at..end))
            .ok_or_else(|| self.truncated(name_at, "name", namesize))?;
        let name = match raw_name.split_last() {
            Some((0, name)) if !name.contains(&0) => name,
            _ => return Err(CpioError::BadName { offset: name_at }),
        };

        let data_at = align4(HEADER_LEN + namesize)
            .and_then(|n| start.checked_add(n))
            .ok_or_else(|| self.truncated(name_at, "name", namesize))?;
        // Empty data needs no bytes, not even the name's padding (a trailer may end the input
        // right after its name).
        let data = match filesize {
            0 => &[][..],
            _ => data_at
                .checked_add(filesize)
                .and_then(|end| self.data.get(data_at..end))
                .ok_or_else(|| self.truncated(data_at, "data", filesize))?,
        };
        // The padding after the data may be missing at the very end of the input.
        let next = align4(data_at + filesize).unwrap_or(usize::MAX);

        if crc && (mode & S_IFMT == S_IFREG || check != 0) {
            let actual = data
                .iter()
                .fold(0u32, |sum, &b| sum.wrapping_add(u32::from(b)));
            if actual != check {
                return Err(CpioError::BadChecksum {
                    offset: start,
                    expected: check,
                    actual,
                });
            }
        }

        let entry = Entry {
            name: strip_name(name),
            mode,
            uid,
            gid,
            nlink,
            mtime,
            dev_major,
            dev_minor,
            rdev_major,
            rdev_minor,
            ino,
            data,
            offset: start,
        };
        Ok((entry, name == TRAILER, next))
    }
}

impl<'a> Iterator for Entries<'a> {
    type Item = Result<Entry<'a>, CpioError>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            match self.state {
                State::Done => return None,
                State::AfterTrailer => {
                    let rest = self.data.get(self.offset..).unwrap_or(&[]);
                    match rest.iter().position(|&b| b != 0) {
                        None => {
                            self.state = State::Done;
                            return None;
                        }
                        Some(skip) => {
                            self.offset += skip;
                            self.state = State::Header;
                            if self.offset % 4 != 0 {
                                self.state = State::Done;
                                return Some(Err(CpioError::MisalignedArchive {
                                    offset: self.offset,
                                }));
                            }
                        }
                    }
                }
                State::Header => {
                    if self.offset >= self.data.len() {
                        self.state = State::Done;
                        // (The last entry's padding may be missing: report the input's end.)
                        let offset = self.data.len();
                        return Some(Err(CpioError::MissingTrailer { offset }));
                    }
                    match self.read_entry() {
                        Err(e) => {
                            self.state = State::Done;
                            return Some(Err(e));
                        }
                        Ok((_, true, next)) => {
                            self.offset = next;
                            self.state = State::AfterTrailer;
                        }
                        Ok((entry, false, next)) => {
                            self.offset = next;
                            return Some(Ok(entry));
                        }
                    }
                }
            }
        }
    }
}

impl core::iter::FusedIterator for Entries<'_> {}
