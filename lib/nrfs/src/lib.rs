//! NR-FS: Reef's in-memory POSIX file system, after §4.3 of *NrOS: Effective Replication and
//! Sharing in an Operating System* (OSDI '21).
//!
//! `no_std` + `alloc`, stable Rust, no `unsafe`.
//!
//! # Two layers
//!
//! * [`FileSystem`] is a sequential in-memory file system: `&mut self` updates, `&self`
//!   reads. As in the paper, it maps names to inode numbers (per directory) and inode numbers
//!   to in-memory inodes; each inode holds directory or file metadata and a list of 4 KiB file
//!   pages, kept sparsely (holes read as zeros). Inodes are regular files, directories,
//!   symlinks, character devices and FIFOs (a FIFO is a name with attributes and no contents:
//!   reading or writing it here is EINVAL; its pipe belongs to whoever opens it). Names are byte strings; errors are Linux's
//!   ([`abi::Errno`]) and follow Linux's order of checks (see below).
//! * [`NrFs`] is the same file system replicated with concurrent node replication
//!   ([`nr::cnr`]): one [`FsReplica`] per NUMA node, several logs, operations on different
//!   inodes appended to different logs and applied by different combiners in parallel
//!   (§4.3.1). [`FsClient`] is a thread's handle on its replica with the same operations as
//!   [`FileSystem`]; [`FsRead`], [`FsUpdate`] and [`FsValue`] are the raw operations.
//!
//! Both layers run the same code: path resolution is written once against a small set of
//! per-inode reads, and every update once against an inode store (`ops.rs`, `walk.rs`).
//!
//! # Determinism
//!
//! Replicas must reach the same state from the same operations, so nothing in an update is
//! chosen by the replica: the time (`now`) is an argument of every operation that sets times,
//! and the number, mode and owner of a new inode are arguments too. [`NrFs`] allocates inode
//! numbers from one counter shared by all replicas before the operation enters a log. Reads
//! do not change access times (they are not logged); [`FileSystem::set_times`] does.
//!
//! # Mapping to NrOS §4.3
//!
//! * *Positional reads and writes, offsets outside the file system*: there are no file
//!   offsets here; [`FileSystem::read`] and [`FileSystem::write`] take the offset, so reads
//!   are read-only operations that run on the local replica without the log. `O_APPEND`
//!   writes are one update ([`FileSystem::append`]) that returns where it wrote.
//! * *Write buffers outside the log*: [`FsUpdate::Write`] and [`FsUpdate::Append`] hold the
//!   data in an [`nr::Payload`] (copied from the user once, before the operation is logged);
//!   the log entry only references it, and it is freed as soon as every replica has applied
//!   the write, not when the log entry is reused.
//! * *CNR and the `LogMapper` (§4.3.1)*: inodes are hash-partitioned over the logs (inode
//!   number modulo the number of logs; numbers are handed out in sequence, so this spreads
//!   new files evenly). Inside a replica the inodes are split into the same
//!   number of shards, shard *i* holding the inodes of log *i*, each behind its own
//!   reader-writer lock; an operation locks exactly the shards of its logs, so combiners of
//!   different logs never touch the same shard, and a read locks the one shard it reads.
//! * *Multi-inode operations as scans*: the paper runs `rename` as a scan-update over all
//!   logs. Here every operation that changes several inodes is a scan-update over the logs
//!   of *those* inodes only: `create`/`mkdir`/`symlink`/`mknod`/`mkfifo` (the directory and the new
//!   inode), `link` (directory and target), `unlink`/`rmdir` (directory and victim),
//!   `rename` (both directories, the moved inode and a replaced target). When all of them
//!   fall in one log it is an ordinary update. A scan is applied on every replica exactly
//!   when all its logs have reached it, so it is ordered with every operation on each of
//!   its inodes. Which inode a name refers to can change between the moment the client reads
//!   it and the moment the operation is applied; each operation therefore re-reads its
//!   entries when applied and, if it would need an inode outside the shards it locked,
//!   changes nothing and answers *stale* ([`FsError::Stale`]); the client resolves again and
//!   retries, and after a few stale rounds falls back to a scan over all logs, which cannot
//!   be stale. Renaming a directory (or over one) between two different directories needs
//!   the ancestors of both directories (Linux's "directory into its own subtree" checks),
//!   which can be anywhere, so that case is always a scan over all logs, as in the paper.
//! * *Completing a scan*: a multi-log update returns only once its replica has applied it in
//!   every one of its logs, so the completed tails cover it and a read that starts afterwards
//!   on any replica sees it (`lib/nr`'s scan completion; the multi-threaded test checks this).
//! * *Reads*: `read`, `stat`, `read_dir`, `readlink` and each step of a path lookup read one
//!   inode, so each is a CNR read on that inode's log: it waits until the local replica has
//!   applied that log up to its completed tail and is linearizable, without logging. A whole
//!   path lookup is a sequence of such reads, one per component, like Linux's path walk,
//!   which is not atomic with respect to concurrent renames either. Opening by path is: when
//!   the inode found was freed before its open (a file renamed over the name), the open is
//!   made again as a namespace operation on the entry, which opens what the entry names when
//!   it is applied (Linux's `open` never fails on a name that exists throughout).
//!
//! # Linux semantics
//!
//! Path resolution: absolute paths start at the root, `..` of the root is the root, symlinks
//! are followed (ELOOP after 40), a component over 255 bytes or a path of 4096 bytes or more
//! is ENAMETOOLONG, a non-directory in the middle is ENOTDIR, and a trailing `/` makes the
//! last component follow symlinks and requires a directory (ENOTDIR otherwise) — except where
//! Linux gives a trailing `/` another meaning: `open(O_CREAT)` is EISDIR, a new name for
//! `symlink`/`mknod`/`link` is ENOENT, `unlink` is EISDIR or ENOTDIR. An inode stays alive
//! while it has a name or an open file description ([`FileSystem::open`]/[`FileSystem::close`];
//! Hare §3.5's orphan files): an unlinked open file stays readable and writable, and is freed
//! with its pages at its last close. A removed directory that is still open (for example a
//! working directory) lists as ENOENT and accepts no new entries.
//!
//! File offsets, and their sharing between processes after `fork` (Hare §3.1, §3.5), belong
//! to the kernel's open-file table: the file system offers positional I/O and an atomic
//! append, which is what a shared `O_APPEND` descriptor needs.
//!
//! Not implemented: permission checks (the caller's job), `RENAME_WHITEOUT`, block devices
//! and socket inodes, extended attributes, and a size limit (the kernel bounds memory).
//!
//! # Example
//!
//! ```
//! use nrfs::{Attrs, CreateFlags, FileSystem, NrFs, Timespec, ROOT_INO};
//!
//! let now = Timespec::new(1, 0);
//! let file = Attrs::new(0o644, 1000, 1000);
//!
//! // Sequential: the caller picks inode numbers.
//! let mut fs = FileSystem::new(Attrs::new(0o755, 0, 0), now);
//! fs.mkdir(ROOT_INO, b"etc", 2, Attrs::new(0o755, 0, 0), now).unwrap();
//! let f = fs.create(ROOT_INO, b"/etc/motd", 3, file, CreateFlags::default(), now).unwrap();
//! fs.write(f.ino, 0, b"hello\n", now).unwrap();
//! assert_eq!(fs.resolve(ROOT_INO, b"etc/../etc/motd", true), Ok(3));
//!
//! // Replicated: two replicas, four logs of 1024 entries; one client per thread.
//! let (nrfs, replicas) = NrFs::new(4, 1024, 2).unwrap();
//! let a = nrfs.client(&replicas[0]).unwrap();
//! let b = nrfs.client(&replicas[1]).unwrap();
//! let f = a.create(ROOT_INO, b"motd", file, CreateFlags::default(), now).unwrap();
//! a.write(f.ino, 0, b"hello\n", now).unwrap();
//! let mut buf = [0u8; 16];
//! assert_eq!(b.read(b.resolve(ROOT_INO, b"/motd", true).unwrap(), 0, &mut buf), Ok(6));
//! ```
//!
//! # Dependencies
//!
//! `spin` (the kernel's lock crate, `no_std`) provides the shard reader-writer locks; `abi`
//! the error numbers; `nr` the replication.
#![no_std]
#![forbid(unsafe_code)]
#![deny(missing_docs)]

extern crate alloc;

mod fs;
mod inode;
mod ops;
mod replicated;
mod sharing;
pub mod walk;

use alloc::vec::Vec;

use abi::Errno;

pub use fs::FileSystem;
pub use replicated::{
    FsClient, FsRead, FsReplica, FsUpdate, FsValue, LogStats, NamespaceOp, NrFs, Scope, ShardedFs,
    COVERED_MAX, MAX_SCOPE,
};
pub use sharing::{set_page_sharing, Lent, Offer, PageSharing};

/// An inode number.
pub type Ino = u64;

/// The root directory's inode number.
pub const ROOT_INO: Ino = 1;

/// Size of a file page.
pub const PAGE_SIZE: usize = 4096;

/// Longest name of a directory entry (`NAME_MAX`).
pub const NAME_MAX: usize = 255;

/// `PATH_MAX`: a path (with its terminating NUL) must be shorter, so at most 4095 bytes.
pub const PATH_MAX: usize = 4096;

/// Most symlinks one path resolution follows (`MAXSYMLINKS`).
pub const SYMLOOP_MAX: u32 = 40;

/// Largest file size (`MAX_LFS_FILESIZE`).
pub const MAX_FILE_SIZE: u64 = i64::MAX as u64;

/// `renameat2` flag: fail with EEXIST instead of replacing the target.
pub const RENAME_NOREPLACE: u32 = 1;
/// `renameat2` flag: atomically exchange source and target (both must exist).
pub const RENAME_EXCHANGE: u32 = 2;
/// `renameat2` flag: leave a whiteout (not supported: EINVAL).
pub const RENAME_WHITEOUT: u32 = 4;

/// Set-user-ID bit.
pub const S_ISUID: u32 = 0o4000;
/// Set-group-ID bit.
pub const S_ISGID: u32 = 0o2000;
/// Sticky bit.
pub const S_ISVTX: u32 = 0o1000;
/// Group-execute bit.
pub const S_IXGRP: u32 = 0o010;

/// A point in time: seconds and nanoseconds since the epoch.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Timespec {
    /// Seconds.
    pub sec: i64,
    /// Nanoseconds (below 10⁹).
    pub nsec: u32,
}

impl Timespec {
    /// `sec` seconds and `nsec` nanoseconds.
    pub const fn new(sec: i64, nsec: u32) -> Self {
        Self { sec, nsec }
    }
}

/// The type of an inode.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Kind {
    /// A regular file.
    File,
    /// A directory.
    Dir,
    /// A symbolic link.
    Symlink,
    /// A character device (see [`Stat::rdev`]).
    CharDev,
    /// A FIFO (named pipe): a name and attributes only; the pipe an open of it reaches is the
    /// embedder's (Reef's kernel keeps one per FIFO inode while it is open).
    Fifo,
}

impl Kind {
    /// The file-type bits of `st_mode` (`S_IFREG`, ...).
    pub const fn mode_bits(self) -> u32 {
        match self {
            Kind::File => 0o100000,
            Kind::Dir => 0o040000,
            Kind::Symlink => 0o120000,
            Kind::CharDev => 0o020000,
            Kind::Fifo => 0o010000,
        }
    }

    /// The `d_type` of `getdents64` (`DT_REG`, ...).
    pub const fn dirent_type(self) -> u8 {
        match self {
            Kind::File => 8,
            Kind::Dir => 4,
            Kind::Symlink => 10,
            Kind::CharDev => 2,
            Kind::Fifo => 1,
        }
    }
}

/// Attributes of a new inode chosen by the caller.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Attrs {
    /// Permission bits (the caller applies the umask).
    pub mode: u32,
    /// Owner.
    pub uid: u32,
    /// Group (replaced by the directory's group if it is set-group-ID, as on Linux).
    pub gid: u32,
}

impl Attrs {
    /// `mode` owned by `uid`:`gid`.
    pub const fn new(mode: u32, uid: u32, gid: u32) -> Self {
        Self { mode, uid, gid }
    }
}

/// Flags of [`FileSystem::create`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CreateFlags {
    /// `O_EXCL`: fail with EEXIST if the name exists.
    pub exclusive: bool,
    /// Also count the result as open, in the same step (see [`FileSystem::open`]).
    pub open: bool,
}

/// Result of [`FileSystem::create`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Created {
    /// The file's inode.
    pub ino: Ino,
    /// Whether it was created (false: it existed).
    pub created: bool,
}

/// File attributes (`stat`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stat {
    /// Inode number.
    pub ino: Ino,
    /// Type.
    pub kind: Kind,
    /// Permission bits (`0o7777`); see [`Stat::st_mode`].
    pub mode: u32,
    /// Number of names (directories: 2 plus subdirectories).
    pub nlink: u32,
    /// Owner.
    pub uid: u32,
    /// Group.
    pub gid: u32,
    /// Size in bytes (symlinks: target length; directories: 20 bytes per entry, like tmpfs).
    pub size: u64,
    /// 512-byte blocks allocated (file pages held).
    pub blocks: u64,
    /// Device number of a character device.
    pub rdev: u64,
    /// Last access (only set explicitly, see [`FileSystem::set_times`]).
    pub atime: Timespec,
    /// Last modification of the contents.
    pub mtime: Timespec,
    /// Last change of the inode.
    pub ctime: Timespec,
}

impl Stat {
    /// `st_mode`: file-type bits and permission bits.
    pub const fn st_mode(&self) -> u32 {
        self.kind.mode_bits() | self.mode
    }
}

/// One entry of [`FileSystem::read_dir`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DirEntry {
    /// Inode number.
    pub ino: Ino,
    /// Type.
    pub kind: Kind,
    /// Name.
    pub name: Vec<u8>,
    /// Cookie that continues the listing after this entry (`d_off`).
    pub next_cookie: u64,
}

/// The last component of a path (see [`ParentPath`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Last {
    /// A name.
    Name(Vec<u8>),
    /// `.`
    Dot,
    /// `..`
    DotDot,
    /// The path was `/` (only slashes).
    Root,
}

/// Result of [`FileSystem::resolve_parent`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParentPath {
    /// The directory holding the last component.
    pub dir: Ino,
    /// The last component.
    pub last: Last,
    /// Whether the path ended in `/`.
    pub trailing_slash: bool,
}

/// File-system totals for `statfs`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FsStats {
    /// Inodes in use.
    pub inodes: u64,
    /// File pages held.
    pub pages: u64,
    /// Bytes of file pages held.
    pub bytes: u64,
}

/// Failure of an operation as applied by a replica.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FsError {
    /// A Linux error.
    Errno(Errno),
    /// The operation would have touched an inode outside the logs it was appended to (a name
    /// changed since the client resolved it); nothing was changed, and the client retries.
    Stale,
}

impl From<Errno> for FsError {
    fn from(e: Errno) -> Self {
        FsError::Errno(e)
    }
}

impl core::fmt::Display for FsError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            FsError::Errno(e) => write!(f, "{e}"),
            FsError::Stale => f.write_str("stale: a name changed before the operation applied"),
        }
    }
}
