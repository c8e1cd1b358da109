//! Calls on paths: `open`, the `stat` family, directories, names (`link`, `unlink`, `rename`,
//! `symlink`, `readlink`, `mknod`), attributes, the working directory, `statfs`.
//!
//! Each path is read from user memory once (at most `PATH_MAX - 1` bytes, else ENAMETOOLONG)
//! and located by [`crate::fs::path`]; NR-FS operations resolve it and apply Linux's checks.
//! Each call runs in [`path::at`] (or `at2`), which runs it again where a symlink leads the
//! path into another file system.
//! `/proc` is read-only: calls that would change it answer EACCES (EXDEV for a rename or link
//! between `/proc` and NR-FS). Everything runs as root, so permission bits are reported and
//! stored but only `access(X_OK)` consults them.

use super::file::{file, write_stat};
use super::SysResult;
use crate::arch::idt::InterruptFrame;
use crate::fd::{KStat, Node, OpenFile, O_PATH};
use crate::fs::flags::{O_CLOEXEC, O_CREAT, O_DIRECTORY, O_TRUNC};
use crate::fs::hare::{self, HarePath};
use crate::fs::path::{self, Last, Place, AT_FDCWD};
use crate::fs::perm::HareTarget;
use crate::fs::{perm, procfs, with_client};
use crate::proc::{Process, Thread};
use crate::uaccess::{self, read_user};
use ::hare::SetAttr;
use abi::syscalls::{SYS_FLISTXATTR, SYS_LISTXATTR, SYS_LLISTXATTR};
use abi::Errno;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::sync::atomic::Ordering;
use nrfs::{Attrs, Ino, Timespec, NAME_MAX, PATH_MAX};

/// `AT_SYMLINK_NOFOLLOW`.
const AT_SYMLINK_NOFOLLOW: u64 = 0x100;
/// `AT_REMOVEDIR`.
const AT_REMOVEDIR: u64 = 0x200;
/// `AT_SYMLINK_FOLLOW`.
const AT_SYMLINK_FOLLOW: u64 = 0x400;
/// `AT_NO_AUTOMOUNT` (accepted; Reef has no automounts).
const AT_NO_AUTOMOUNT: u64 = 0x800;
/// `AT_EMPTY_PATH`.
const AT_EMPTY_PATH: u64 = 0x1000;
/// `AT_STATX_SYNC_TYPE` bits (accepted; everything is in memory).
const AT_STATX_SYNC_TYPE: u64 = 0x6000;
/// `AT_EACCESS` for `faccessat2`.
const AT_EACCESS: u64 = 0x200;

/// Reads a path argument.
fn path_arg(addr: u64) -> Result<Vec<u8>, Errno> {
    uaccess::read_cstring(addr, PATH_MAX - 1)
}

/// A `dirfd` argument (an `int`).
fn dirfd(v: u64) -> i32 {
    v as i32
}

/// The current wall-clock time, for file timestamps.
fn now() -> Timespec {
    crate::fs::now()
}

/// Opens `path` relative to `dir` with `flags` and `mode` and installs it at the lowest free
/// descriptor (close-on-exec with `O_CLOEXEC`); returns the descriptor.
fn open_common(me: &Arc<Thread>, dir: i32, path: u64, flags: u64, mode: u64) -> SysResult {
    let path = path_arg(path)?;
    let flags = flags as u32;
    let f = crate::fs::open(&me.process, dir, &path, flags, mode as u32)?;
    if flags & O_TRUNC != 0 && f.writable() {
        if let Node::File(ino) = f.node {
            crate::filemap::truncated(ino, 0);
        }
    }
    let fd = me
        .process
        .files
        .lock()
        .insert(f, flags & O_CLOEXEC != 0, 0)?;
    Ok(fd as u64)
}

/// `open(path, flags, mode)`: relative to the working directory; returns the new descriptor.
pub fn open(me: &Arc<Thread>, _: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    open_common(me, AT_FDCWD, a[0], a[1], a[2])
}

/// `openat(dirfd, path, flags, mode)`: `open` relative to `dirfd`.
pub fn openat(me: &Arc<Thread>, _: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    open_common(me, dirfd(a[0]), a[1], a[2], a[3])
}

/// `creat(path, mode)`: `open` with `O_CREAT | O_TRUNC | O_WRONLY`.
pub fn creat(me: &Arc<Thread>, _: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    let flags = O_CREAT | O_TRUNC | crate::fd::O_WRONLY;
    open_common(me, AT_FDCWD, a[0], u64::from(flags), a[1])
}

/// Attributes of `path` relative to `dir` (following a final symlink if `follow`).
fn stat_path(p: &Process, dir: i32, path: &[u8], follow: bool) -> Result<KStat, Errno> {
    path::at(p, dir, path, Last::follow(follow), |place| match place {
        Place::Fs { start, path } => {
            perm::lookup(p, *start, path, follow)?;
            let (_, s) = with_client(|c| c.stat_path(*start, path, follow))?;
            Ok(KStat::from_nrfs(&s))
        }
        Place::Hare(h) => {
            perm::hare_lookup(p, h)?;
            hare::stat(h, follow)
        }
        Place::Proc(comps) => {
            let comps: Vec<&[u8]> = comps.iter().map(Vec::as_slice).collect();
            match procfs::resolve(p, &comps, follow)? {
                procfs::Resolved::Proc(place) => Ok(procfs::stat_of(place, 0)),
                // Placed again by `path::at`.
                procfs::Resolved::Outside(_) => Err(Errno::EXDEV),
                procfs::Resolved::Open(f) => f.stat(),
            }
        }
    })
}

/// The attributes a `*at` stat call asks for: of `dirfd` itself with `AT_EMPTY_PATH` and an
/// empty path.
fn stat_at(me: &Arc<Thread>, dir: i32, path_addr: u64, flags: u64) -> Result<KStat, Errno> {
    let path = path_arg(path_addr)?;
    if path.is_empty() && flags & AT_EMPTY_PATH != 0 {
        return if dir == AT_FDCWD {
            me.process.cwd.lock().clone().stat()
        } else {
            file(me, dir as u32 as u64)?.stat()
        };
    }
    stat_path(&me.process, dir, &path, flags & AT_SYMLINK_NOFOLLOW == 0)
}

/// `stat(path, statbuf)`: the attributes of `path`, following a final symlink.
pub fn stat(me: &Arc<Thread>, _: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    let st = stat_path(&me.process, AT_FDCWD, &path_arg(a[0])?, true)?;
    write_stat(a[1], &st)?;
    Ok(0)
}

/// `lstat(path, statbuf)`: `stat` without following a final symlink.
pub fn lstat(me: &Arc<Thread>, _: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    let st = stat_path(&me.process, AT_FDCWD, &path_arg(a[0])?, false)?;
    write_stat(a[1], &st)?;
    Ok(0)
}

/// `newfstatat(dirfd, path, statbuf, flags)`: `stat` relative to `dirfd`; flags other than
/// `AT_SYMLINK_NOFOLLOW`, `AT_EMPTY_PATH` and `AT_NO_AUTOMOUNT` are `EINVAL`.
pub fn newfstatat(me: &Arc<Thread>, _: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    if a[3] & !(AT_SYMLINK_NOFOLLOW | AT_EMPTY_PATH | AT_NO_AUTOMOUNT) != 0 {
        return Err(Errno::EINVAL);
    }
    let st = stat_at(me, dirfd(a[0]), a[1], a[3])?;
    write_stat(a[2], &st)?;
    Ok(0)
}

/// `statx(dirfd, path, flags, mask, buf)`: every basic field is filled whatever the mask asks
/// (STATX_BASIC_STATS is reported); no birth time.
pub fn statx(me: &Arc<Thread>, _: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    const STATX_BASIC_STATS: u32 = 0x7ff;
    const STATX_RESERVED: u64 = 0x8000_0000;
    if a[2] & !(AT_SYMLINK_NOFOLLOW | AT_EMPTY_PATH | AT_NO_AUTOMOUNT | AT_STATX_SYNC_TYPE) != 0
        || a[2] & AT_STATX_SYNC_TYPE == AT_STATX_SYNC_TYPE
        || a[3] & STATX_RESERVED != 0
    {
        return Err(Errno::EINVAL);
    }
    let s = stat_at(me, dirfd(a[0]), a[1], a[2])?;
    let mut b = [0u8; 256];
    let put = |b: &mut [u8; 256], at: usize, v: &[u8]| b[at..at + v.len()].copy_from_slice(v);
    put(&mut b, 0, &STATX_BASIC_STATS.to_le_bytes());
    put(&mut b, 4, &4096u32.to_le_bytes());
    put(&mut b, 16, &s.nlink.to_le_bytes());
    put(&mut b, 20, &s.uid.to_le_bytes());
    put(&mut b, 24, &s.gid.to_le_bytes());
    put(&mut b, 28, &(s.mode as u16).to_le_bytes());
    put(&mut b, 32, &s.ino.to_le_bytes());
    put(&mut b, 40, &s.size.to_le_bytes());
    put(&mut b, 48, &s.blocks.to_le_bytes());
    for (at, t) in [(64, s.atime), (96, s.ctime), (112, s.mtime)] {
        put(&mut b, at, &t.sec.to_le_bytes());
        put(&mut b, at + 8, &t.nsec.to_le_bytes());
    }
    put(&mut b, 128, &((s.rdev >> 8) as u32).to_le_bytes());
    put(&mut b, 132, &((s.rdev & 0xff) as u32).to_le_bytes());
    put(&mut b, 136, &0u32.to_le_bytes());
    put(&mut b, 140, &(s.dev as u32).to_le_bytes());
    uaccess::copy_to_user(a[4], &b)?;
    Ok(0)
}

/// Creates directory `path` relative to `dir`, its permissions `mode` less the umask (in Hare,
/// distributed with `S_DISTRIBUTED`); `EEXIST` for `/proc` and `/sys` themselves, `EACCES`
/// inside them.
fn mkdir_common(me: &Arc<Thread>, dir: i32, path: u64, mode: u64) -> SysResult {
    let path = path_arg(path)?;
    let perm = mode as u32 & 0o7777 & !me.process.umask.load(Ordering::Relaxed);
    path::at(&me.process, dir, &path, Last::Name, |place| match place {
        Place::Fs { start, path } => {
            perm::create(&me.process, *start, path)?;
            let (uid, gid) = perm::new_owner(&me.process);
            let t = now();
            with_client(|c| c.mkdir(*start, path, Attrs::new(perm, uid, gid), t))?;
            Ok(0)
        }
        Place::Hare(h) => {
            let distribute = mode as u32 & abi::reef::S_DISTRIBUTED != 0;
            perm::hare_create(&me.process, h)?;
            let owner = perm::new_owner(&me.process);
            hare::mkdir(h, perm, owner, distribute).map(|()| 0)
        }
        Place::Proc(comps) if comps.len() == 1 => Err(Errno::EEXIST),
        Place::Proc(_) => Err(Errno::EACCES),
    })
}

/// `mkdir(path, mode)`.
pub fn mkdir(me: &Arc<Thread>, _: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    mkdir_common(me, AT_FDCWD, a[0], a[1])
}

/// `mkdirat(dirfd, path, mode)`.
pub fn mkdirat(me: &Arc<Thread>, _: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    mkdir_common(me, dirfd(a[0]), a[1], a[2])
}

/// `mknod`'s file types (`S_IFMT` bits of its mode).
mod node_type {
    /// The type bits.
    pub const S_IFMT: u32 = 0o170000;
    /// A socket.
    pub const S_IFSOCK: u32 = 0o140000;
    /// A regular file (so is 0).
    pub const S_IFREG: u32 = 0o100000;
    /// A block device.
    pub const S_IFBLK: u32 = 0o060000;
    /// A directory (`mkdir`'s job: EPERM).
    pub const S_IFDIR: u32 = 0o040000;
    /// A character device.
    pub const S_IFCHR: u32 = 0o020000;
    /// A FIFO.
    pub const S_IFIFO: u32 = 0o010000;
}

/// Makes the node `path` (relative to `dir`) of the type and permissions in `mode` (a 16-bit
/// `umode_t`; the umask applied), with Linux's `mknodat` rules and order: `EPERM` for a
/// directory type, `EINVAL` for an unknown one, then the path's errors (`EFAULT`, `ENOENT`,
/// `ENOTDIR`, `EEXIST`) and the directory's permissions (`EACCES`). A regular file (type 0
/// or `S_IFREG`) is made as `open(O_CREAT | O_EXCL)` makes it (NR-FS or Hare); a FIFO is an
/// NR-FS or Hare FIFO inode ([`crate::fs::fifo`] gives its pipe when opened); a character
/// device needs root (`EPERM`, Linux's `CAP_MKNOD`) and takes `dev` as its number (opening one
/// Reef does not have is `ENXIO`). `EPERM` — mknod(2)'s answer when "the file system does not
/// support the type of node requested" — for block devices (NR-FS has no block-device inode
/// and Reef no block device) and sockets (Reef has no named `AF_UNIX` sockets a socket inode
/// could be bound to), and for devices in Hare, whose servers store only files, directories,
/// symlinks and FIFOs; after the name's own errors, as Linux's `filename_create` comes first.
/// `/proc` is `EEXIST` for itself and `EACCES` inside.
fn mknod_common(me: &Arc<Thread>, dir: i32, path: u64, mode: u64, dev: u64) -> SysResult {
    use crate::fs::flags::O_EXCL;
    use node_type::*;
    let mode = u32::from(mode as u16);
    match mode & S_IFMT {
        0 | S_IFREG | S_IFCHR | S_IFBLK | S_IFIFO | S_IFSOCK => {}
        S_IFDIR => return Err(Errno::EPERM),
        _ => return Err(Errno::EINVAL),
    }
    let path = path_arg(path)?;
    let kind = mode & S_IFMT;
    if kind == 0 || kind == S_IFREG {
        let flags = O_CREAT | O_EXCL | crate::fd::O_RDONLY;
        crate::fs::open(&me.process, dir, &path, flags, mode & 0o7777)?;
        return Ok(0);
    }
    let perm = mode & 0o7777 & !me.process.umask.load(Ordering::Relaxed);
    path::at(&me.process, dir, &path, Last::Name, |place| match place {
        Place::Fs { start, path } => {
            mknod_nrfs(me, (*start, path), kind, perm, dev)?;
            Ok(0)
        }
        Place::Hare(h) if kind == S_IFIFO => {
            perm::hare_create(&me.process, h)?;
            hare::mkfifo(h, perm, perm::new_owner(&me.process)).map(|()| 0)
        }
        Place::Hare(h) => Err(match hare::stat(h, false) {
            Ok(_) => Errno::EEXIST,
            Err(_) => Errno::EPERM,
        }),
        Place::Proc(comps) if comps.is_empty() => Err(Errno::EEXIST),
        Place::Proc(_) => Err(Errno::EACCES),
    })
}

/// [`mknod_common`] in NR-FS: node `kind` (not a regular file) at `path` from `start`.
fn mknod_nrfs(
    me: &Arc<Thread>,
    (start, path): (Ino, &[u8]),
    kind: u32,
    perm: u32,
    dev: u64,
) -> Result<(), Errno> {
    use node_type::*;
    perm::create(&me.process, start, path)?;
    let (uid, gid) = perm::new_owner(&me.process);
    let attrs = Attrs::new(perm, uid, gid);
    let t = now();
    let privileged = me.process.creds.lock().is_privileged();
    with_client(|c| match kind {
        S_IFIFO => c.mkfifo(start, path, attrs, t).map(drop),
        S_IFCHR if privileged => c
            .mknod(start, path, attrs, u64::from(dev as u32), t)
            .map(drop),
        _ => {
            let (dir, name, _) = nrfs::walk::plan_new_name(c, start, path)?;
            match nrfs::walk::Namespace::lookup(c, dir, &name)? {
                Some(_) => Err(Errno::EEXIST),
                None => Err(Errno::EPERM),
            }
        }
    })
}

/// `mknod(path, mode, dev)`.
pub fn mknod(me: &Arc<Thread>, _: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    mknod_common(me, AT_FDCWD, a[0], a[1], a[2])
}

/// `mknodat(dirfd, path, mode, dev)`: `mknod` relative to `dirfd` (glibc's and musl's `mkfifo`
/// call it).
pub fn mknodat(me: &Arc<Thread>, _: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    mknod_common(me, dirfd(a[0]), a[1], a[2], a[3])
}

/// Removes `path` relative to `dir`: a directory if `is_dir` (`rmdir`), else a name (`unlink`);
/// `EACCES` in `/proc`. Removing the last name of a file with data brings every NR-FS replica up to
/// date so its pages are freed at once.
fn remove(me: &Arc<Thread>, dir: i32, path: u64, is_dir: bool) -> SysResult {
    let path = path_arg(path)?;
    path::at(&me.process, dir, &path, Last::Name, |place| {
        let (start, path) = match place {
            Place::Hare(h) => {
                perm::hare_remove(&me.process, h)?;
                return hare::remove(h, is_dir).map(|()| 0);
            }
            place => place.fs(Errno::EACCES)?,
        };
        perm::remove(&me.process, start, path)?;
        let t = now();
        let frees_data = with_client(|c| {
            if is_dir {
                return c.rmdir(start, path, t).map(|()| false);
            }
            // A last name of a file with data: its pages go when each replica applies this.
            let last = c
                .resolve(start, path, false)
                .and_then(|ino| c.stat(ino))
                .is_ok_and(|s| s.nlink == 1 && s.blocks > 0);
            c.unlink(start, path, t).map(|()| last)
        })?;
        if frees_data {
            crate::fs::sync_all();
        }
        Ok(0)
    })
}

/// `rmdir(path)`: removes a directory.
pub fn rmdir(me: &Arc<Thread>, _: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    remove(me, AT_FDCWD, a[0], true)
}

/// `unlink(path)`: removes a name.
pub fn unlink(me: &Arc<Thread>, _: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    remove(me, AT_FDCWD, a[0], false)
}

/// `unlinkat(dirfd, path, flags)`: `unlink`, or `rmdir` with `AT_REMOVEDIR`; other flags `EINVAL`.
pub fn unlinkat(me: &Arc<Thread>, _: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    if a[2] & !AT_REMOVEDIR != 0 {
        return Err(Errno::EINVAL);
    }
    remove(me, dirfd(a[0]), a[1], a[2] & AT_REMOVEDIR != 0)
}

/// An NR-FS path and the directory it starts from.
type FsPath<'a> = (Ino, &'a [u8]);

/// Both paths of a two-path call, in one file system.
enum Pair<'a> {
    /// Both paths in NR-FS.
    Fs(FsPath<'a>, FsPath<'a>),
    /// Both paths in Hare.
    Hare(&'a HarePath, &'a HarePath),
}

/// The file system both places of a two-path call are in; EXDEV between file systems, EACCES
/// in `/proc`.
fn pair<'a>(a: &'a Place, b: &'a Place) -> Result<Pair<'a>, Errno> {
    match (a, b) {
        (Place::Hare(a), Place::Hare(b)) => Ok(Pair::Hare(a, b)),
        (
            Place::Fs {
                start: s1,
                path: p1,
            },
            Place::Fs {
                start: s2,
                path: p2,
            },
        ) => Ok(Pair::Fs((*s1, p1), (*s2, p2))),
        (Place::Proc(_), Place::Proc(_)) => Err(Errno::EACCES),
        _ => Err(Errno::EXDEV),
    }
}

/// Renames path `a[0]` (relative to `dirs.0`) to `a[1]` (relative to `dirs.1`) with `renameat2`'s
/// `flags`; `EINVAL` for flags beyond 32 bits, `EXDEV` between file systems, `EACCES` in `/proc`.
fn rename_common(me: &Arc<Thread>, a: [u64; 6], dirs: (i32, i32), flags: u64) -> SysResult {
    let (old, new) = (path_arg(a[0])?, path_arg(a[1])?);
    let flags = u32::try_from(flags).map_err(|_| Errno::EINVAL)?;
    let old = (dirs.0, &old[..], Last::Name);
    let new = (dirs.1, &new[..], Last::Name);
    path::at2(&me.process, old, new, |a, b| {
        let ((s1, p1), (s2, p2)) = match pair(a, b)? {
            Pair::Fs(a, b) => (a, b),
            Pair::Hare(a, b) => {
                perm::hare_remove(&me.process, a)?;
                perm::hare_remove(&me.process, b)?;
                return hare::rename(a, b, flags).map(|()| 0);
            }
        };
        perm::remove(&me.process, s1, p1)?;
        perm::remove(&me.process, s2, p2)?;
        let t = now();
        with_client(|c| c.rename(s1, p1, s2, p2, flags, t))?;
        Ok(0)
    })
}

/// `rename(oldpath, newpath)`.
pub fn rename(me: &Arc<Thread>, _: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    rename_common(me, [a[0], a[1], 0, 0, 0, 0], (AT_FDCWD, AT_FDCWD), 0)
}

/// `renameat(olddirfd, oldpath, newdirfd, newpath)`.
pub fn renameat(me: &Arc<Thread>, _: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    rename_common(me, [a[1], a[3], 0, 0, 0, 0], (dirfd(a[0]), dirfd(a[2])), 0)
}

/// `renameat2(olddirfd, oldpath, newdirfd, newpath, flags)`: `renameat` with `flags` passed to the
/// file system.
pub fn renameat2(me: &Arc<Thread>, _: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    rename_common(
        me,
        [a[1], a[3], 0, 0, 0, 0],
        (dirfd(a[0]), dirfd(a[2])),
        a[4],
    )
}

/// Makes path `new` (relative to `dirs.1`) a new name for `old` (relative to `dirs.0`), following a
/// final symlink of `old` with `AT_SYMLINK_FOLLOW`; `EINVAL` for flags other than it and
/// `AT_EMPTY_PATH`, `EXDEV` between file systems, `EACCES` in `/proc`.
fn link_common(me: &Arc<Thread>, dirs: (i32, i32), old: u64, new: u64, flags: u64) -> SysResult {
    if flags & !(AT_SYMLINK_FOLLOW | AT_EMPTY_PATH) != 0 {
        return Err(Errno::EINVAL);
    }
    let (old, new) = (path_arg(old)?, path_arg(new)?);
    let follow = flags & AT_SYMLINK_FOLLOW != 0;
    let old = (dirs.0, &old[..], Last::follow(follow));
    let new = (dirs.1, &new[..], Last::Name);
    path::at2(&me.process, old, new, |a, b| {
        let ((s1, p1), (s2, p2)) = match pair(a, b)? {
            Pair::Fs(a, b) => (a, b),
            Pair::Hare(a, b) => {
                perm::hare_lookup(&me.process, a)?;
                perm::hare_create(&me.process, b)?;
                return hare::link(a, b, follow).map(|()| 0);
            }
        };
        perm::lookup(&me.process, s1, p1, follow)?;
        perm::create(&me.process, s2, p2)?;
        let t = now();
        with_client(|c| c.link(s1, p1, s2, p2, follow, t))?;
        Ok(0)
    })
}

/// `link(oldpath, newpath)`: a final symlink of `oldpath` is not followed.
pub fn link(me: &Arc<Thread>, _: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    link_common(me, (AT_FDCWD, AT_FDCWD), a[0], a[1], 0)
}

/// `linkat(olddirfd, oldpath, newdirfd, newpath, flags)`.
pub fn linkat(me: &Arc<Thread>, _: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    link_common(me, (dirfd(a[0]), dirfd(a[2])), a[1], a[3], a[4])
}

/// Creates the symlink `path` (relative to `dir`) to `target`; `ENOENT` for an empty target,
/// `EACCES` in `/proc`.
fn symlink_common(me: &Arc<Thread>, target: u64, dir: i32, path: u64) -> SysResult {
    let target = path_arg(target)?;
    if target.is_empty() {
        return Err(Errno::ENOENT);
    }
    let path = path_arg(path)?;
    path::at(&me.process, dir, &path, Last::Name, |place| {
        let (start, path) = match place {
            Place::Hare(h) => {
                perm::hare_create(&me.process, h)?;
                let owner = perm::new_owner(&me.process);
                return hare::symlink(&target, h, owner).map(|()| 0);
            }
            place => place.fs(Errno::EACCES)?,
        };
        perm::create(&me.process, start, path)?;
        let (uid, gid) = perm::new_owner(&me.process);
        let t = now();
        with_client(|c| c.symlink(&target, start, path, Attrs::new(0o777, uid, gid), t))?;
        Ok(0)
    })
}

/// `symlink(target, linkpath)`.
pub fn symlink(me: &Arc<Thread>, _: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    symlink_common(me, a[0], AT_FDCWD, a[1])
}

/// `symlinkat(target, newdirfd, linkpath)`.
pub fn symlinkat(me: &Arc<Thread>, _: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    symlink_common(me, a[0], dirfd(a[1]), a[2])
}

/// Writes the target of the symlink `path` (relative to `dir`) to `buf`, cut to `size` bytes and
/// without a NUL; returns the bytes written. `EINVAL` for `size` <= 0.
fn readlink_common(me: &Arc<Thread>, dir: i32, path: u64, buf: u64, size: u64) -> SysResult {
    let size = (size as i32).max(-1);
    if size <= 0 {
        return Err(Errno::EINVAL);
    }
    let path = path_arg(path)?;
    let target = path::at(&me.process, dir, &path, Last::NoFollow, |place| match place {
        Place::Fs { start, path } => {
            perm::lookup(&me.process, *start, path, false)?;
            with_client(|c| c.readlink(c.resolve(*start, path, false)?))
        }
        Place::Hare(h) => {
            perm::hare_lookup(&me.process, h)?;
            hare::readlink(h)
        }
        Place::Proc(comps) => {
            let comps: Vec<&[u8]> = comps.iter().map(Vec::as_slice).collect();
            match procfs::resolve(&me.process, &comps, false)? {
                procfs::Resolved::Proc(place) => procfs::readlink(place),
                _ => Err(Errno::EINVAL),
            }
        }
    })?;
    // readlink(2) truncates to the buffer and does not add a NUL.
    let n = target.len().min(size as usize);
    uaccess::copy_to_user(buf, &target[..n])?;
    Ok(n as u64)
}

/// `readlink(path, buf, bufsiz)`.
pub fn readlink(me: &Arc<Thread>, _: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    readlink_common(me, AT_FDCWD, a[0], a[1], a[2])
}

/// `readlinkat(dirfd, path, buf, bufsiz)`.
pub fn readlinkat(me: &Arc<Thread>, _: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    readlink_common(me, dirfd(a[0]), a[1], a[2], a[3])
}

/// `truncate(path, length)`: sets the size of the file `path` (following symlinks); `EINVAL` for a
/// negative length or a file that is not regular, `EISDIR` for a directory, `EACCES` in `/proc`.
pub fn truncate(me: &Arc<Thread>, _: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    if (a[1] as i64) < 0 {
        return Err(Errno::EINVAL);
    }
    let path = path_arg(a[0])?;
    path::at(&me.process, AT_FDCWD, &path, Last::Follow, |place| {
        let (start, path) = match place {
            Place::Hare(h) => {
                perm::hare_may(&me.process, h, true, creds::MAY_WRITE)?;
                return hare::truncate(h, a[1]).map(|()| 0);
            }
            place => place.fs(Errno::EACCES)?,
        };
        crate::fs::admit_truncate(a[1])?;
        perm::may(&me.process, start, path, true, creds::MAY_WRITE)?;
        let t = now();
        // Held open meanwhile, so a file renamed over the name is truncated, not lost (ENOENT).
        let ino = with_client(|c| {
            let ino = c.open_path(start, path, true)?;
            let r = match c.stat(ino).map(|s| s.kind) {
                Ok(nrfs::Kind::Dir) => Err(Errno::EISDIR),
                Ok(nrfs::Kind::File) => {
                    crate::fs::check_writable(ino).and_then(|()| c.truncate(ino, a[1], t))
                }
                Ok(_) => Err(Errno::EINVAL),
                Err(e) => Err(e),
            };
            c.close(ino)?;
            r.map(|()| ino)
        })?;
        crate::filemap::truncated(ino, a[1]);
        Ok(0)
    })
}

/// Makes `f` (a directory description) the working directory.
fn set_cwd(p: &Process, f: Arc<OpenFile>) {
    let old = core::mem::replace(&mut *p.cwd.lock(), f);
    crate::fs::hare::release([old]);
}

/// `chdir(path)`: makes directory `path` the working directory, shown by its canonical path
/// (symlinks resolved).
pub fn chdir(me: &Arc<Thread>, _: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    let path = path_arg(a[0])?;
    let f = crate::fs::open(&me.process, AT_FDCWD, &path, O_DIRECTORY | O_PATH, 0)?;
    // Show the canonical path (symlinks resolved) in /proc and to getcwd.
    let f = match f.node {
        Node::Dir(ino) => {
            perm::may_ino(&me.process, ino, creds::MAY_EXEC)?;
            let canonical = crate::fs::dir_path(ino)?;
            with_client(|c| c.open(ino))?;
            OpenFile::new(Node::Dir(ino), f.flags(), canonical)
        }
        Node::Hare(_) => {
            perm::may_file(&me.process, &f, creds::MAY_EXEC)?;
            f
        }
        _ => f,
    };
    set_cwd(&me.process, f);
    Ok(0)
}

/// `fchdir(fd)`: makes the directory open as `fd` the working directory; `ENOTDIR` for another
/// file.
pub fn fchdir(me: &Arc<Thread>, _: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    let f = file(me, a[0])?;
    match &f.node {
        Node::Dir(_) | Node::ProcDir(_) => {}
        Node::Hare(h) if h.is_dir() => {}
        _ => return Err(Errno::ENOTDIR),
    }
    match f.node {
        Node::Dir(ino) => perm::may_ino(&me.process, ino, creds::MAY_EXEC)?,
        Node::Hare(_) => perm::may_file(&me.process, &f, creds::MAY_EXEC)?,
        _ => {}
    }
    set_cwd(&me.process, f);
    Ok(0)
}

/// `getcwd(buf, size)`: writes the working directory's path with its NUL, `ERANGE` if it does not
/// fit; returns the bytes written.
pub fn getcwd(me: &Arc<Thread>, _: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    let cwd = me.process.cwd.lock().clone();
    let mut path = match &cwd.node {
        Node::Dir(ino) => crate::fs::dir_path(*ino)?,
        Node::Hare(h) => h.path()?,
        _ => cwd.path.clone(),
    };
    path.push(0);
    if path.len() as u64 > a[1] {
        return Err(Errno::ERANGE);
    }
    uaccess::copy_to_user(a[0], &path)?;
    Ok(path.len() as u64)
}

/// Checks access `mode` to `path` relative to `dir` with the caller's real IDs (effective ones
/// with `AT_EACCESS`): root may read and write anything but `/proc`, execute what has an
/// execute bit and search any directory; others as the permission bits say (`fs::perm`).
/// `EINVAL` for unknown mode bits or flags other than `AT_EACCESS`, `AT_SYMLINK_NOFOLLOW` and
/// `AT_EMPTY_PATH`.
fn access_common(me: &Arc<Thread>, dir: i32, path: u64, mode: u64, flags: u64) -> SysResult {
    const W_OK: u64 = 2;
    if mode & !7 != 0 || flags & !(AT_EACCESS | AT_SYMLINK_NOFOLLOW | AT_EMPTY_PATH) != 0 {
        return Err(Errno::EINVAL);
    }
    let st = stat_at(me, dir, path, flags)?;
    if mode & W_OK != 0 && st.dev == crate::fd::DEV_PROC {
        return Err(Errno::EACCES);
    }
    perm::access(&me.process, &st, mode as u32, flags & AT_EACCESS != 0)?;
    Ok(0)
}

/// `access(path, mode)`.
pub fn access(me: &Arc<Thread>, _: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    access_common(me, AT_FDCWD, a[0], a[1], 0)
}

/// `faccessat(dirfd, path, mode)`: the system call takes no flags.
pub fn faccessat(me: &Arc<Thread>, _: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    access_common(me, dirfd(a[0]), a[1], a[2], 0)
}

/// `faccessat2(dirfd, path, mode, flags)`.
pub fn faccessat2(me: &Arc<Thread>, _: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    access_common(me, dirfd(a[0]), a[1], a[2], a[3])
}

/// `getxattr`, `setxattr`, `listxattr`, `removexattr` (`FOLLOW`) and their `l` forms (not
/// following a last symlink) on `path`: NR-FS and Hare keep no extended attributes, so once the
/// path is found a listing is empty and every other call answers `EOPNOTSUPP`, as Linux
/// answers for a file system without them (which GNU `ls` and `cp -a` take for "no ACL").
pub fn xattr<const FOLLOW: bool>(
    me: &Arc<Thread>,
    f: &mut InterruptFrame,
    a: [u64; 6],
) -> SysResult {
    stat_path(&me.process, AT_FDCWD, &path_arg(a[0])?, FOLLOW)?;
    no_xattrs(f.rax as usize)
}

/// What an extended-attribute call `nr` answers on a file found to exist (see [`xattr`]).
pub(super) fn no_xattrs(nr: usize) -> SysResult {
    match nr {
        SYS_LISTXATTR | SYS_LLISTXATTR | SYS_FLISTXATTR => Ok(0),
        _ => Err(Errno::EOPNOTSUPP),
    }
}

/// What an attribute change applies to.
enum Target<'a> {
    /// An NR-FS inode.
    Ino(Ino),
    /// A path in Hare (whose client resolves it), and whether a last symlink is followed.
    Hare(&'a HarePath, bool),
    /// An open Hare file or directory.
    HareFile(Arc<OpenFile>),
}

/// Applies attribute change `op` to what a path names (EACCES in `/proc`).
fn inode_at(
    me: &Arc<Thread>,
    (dir, path): (i32, &[u8]),
    follow: bool,
    mut op: impl FnMut(Target<'_>) -> SysResult,
) -> SysResult {
    path::at(&me.process, dir, path, Last::follow(follow), |place| match place {
        Place::Hare(h) => op(Target::Hare(h, follow)),
        place => {
            let (start, path) = place.fs(Errno::EACCES)?;
            perm::lookup(&me.process, start, path, follow)?;
            op(Target::Ino(with_client(|c| c.resolve(start, path, follow))?))
        }
    })
}

/// What a descriptor's attribute changes apply to: its NR-FS inode or Hare file (EPERM for
/// pipes and `/proc`, as Linux's read-only or attribute-less objects answer).
fn inode_of(me: &Arc<Thread>, fd: u64) -> Result<Target<'static>, Errno> {
    target_of(file(me, fd)?)
}

/// What the attribute changes of open file `f` apply to: the Hare file itself or its NR-FS inode;
/// `EPERM` for anything else.
fn target_of(f: Arc<OpenFile>) -> Result<Target<'static>, Errno> {
    if f.is_hare() {
        return Ok(Target::HareFile(f));
    }
    f.ino().map(Target::Ino).ok_or(Errno::EPERM)
}

/// `f`'s Hare file, to change an attribute.
fn hare_set(f: &OpenFile, attr: SetAttr) -> Result<(), Errno> {
    f.hare().ok_or(Errno::EPERM)?.set(attr)
}

/// Applies attribute change `op` to what an `*at` attribute call names: `dirfd` itself with
/// `AT_EMPTY_PATH` and "".
fn inode_at_flags(
    me: &Arc<Thread>,
    (dir, path): (i32, u64),
    flags: u64,
    mut op: impl FnMut(Target<'_>) -> SysResult,
) -> SysResult {
    let p = path_arg(path)?;
    if p.is_empty() && flags & AT_EMPTY_PATH != 0 {
        return op(if dir == AT_FDCWD {
            let cwd = me.process.cwd.lock().clone();
            target_of(cwd)?
        } else {
            inode_of(me, dir as u32 as u64)?
        });
    }
    inode_at(me, (dir, &p), flags & AT_SYMLINK_NOFOLLOW == 0, op)
}

/// Sets the mode bits (`mode & 0o7777`) of `target`, which the caller must own.
fn chmod_ino(me: &Arc<Thread>, target: Target<'_>, mode: u64) -> SysResult {
    let mode = mode as u32 & 0o7777;
    match target {
        Target::Ino(ino) => {
            let mode = perm::chmod_mode(&me.process, ino, mode)?;
            let t = now();
            with_client(|c| c.chmod(ino, mode, t))?;
        }
        Target::Hare(h, follow) => {
            let mode = perm::hare_chmod_mode(&me.process, HareTarget::Path(h, follow), mode)?;
            hare::chmod(h, mode)?
        }
        Target::HareFile(f) => {
            let mode = perm::hare_chmod_mode(&me.process, HareTarget::File(&f), mode)?;
            hare_set(&f, SetAttr::Mode(mode))?
        }
    }
    Ok(0)
}

/// `chmod(path, mode)`: follows a final symlink.
pub fn chmod(me: &Arc<Thread>, _: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    let path = path_arg(a[0])?;
    inode_at(me, (AT_FDCWD, &path), true, |t| chmod_ino(me, t, a[1]))
}

/// `fchmod(fd, mode)`.
pub fn fchmod(me: &Arc<Thread>, _: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    chmod_ino(me, inode_of(me, a[0])?, a[1])
}

/// `fchmodat(dirfd, path, mode, flags)`: follows a final symlink; `flags` is not used.
pub fn fchmodat(me: &Arc<Thread>, _: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    let path = path_arg(a[1])?;
    inode_at(me, (dirfd(a[0]), &path), true, |t| chmod_ino(me, t, a[2]))
}

/// Sets the owner and group of `target`; an id of -1 leaves that one unchanged. Only root
/// changes the owner; the owner may change the group to one of its own.
fn chown_ino(me: &Arc<Thread>, target: Target<'_>, uid: u64, gid: u64) -> SysResult {
    let id = |v: u64| (v as u32 != u32::MAX).then_some(v as u32);
    match target {
        Target::Ino(ino) => {
            perm::chown(&me.process, ino, uid as u32, gid as u32)?;
            let t = now();
            with_client(|c| c.chown(ino, id(uid), id(gid), t))?;
        }
        Target::Hare(h, follow) => {
            let t = HareTarget::Path(h, follow);
            perm::hare_chown(&me.process, t, uid as u32, gid as u32)?;
            hare::chown(h, follow, (id(uid), id(gid)))?
        }
        Target::HareFile(f) => {
            let t = HareTarget::File(&f);
            perm::hare_chown(&me.process, t, uid as u32, gid as u32)?;
            hare_set(&f, SetAttr::Owner(id(uid), id(gid)))?
        }
    }
    Ok(0)
}

/// `chown(path, owner, group)`: follows a final symlink.
pub fn chown(me: &Arc<Thread>, _: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    let path = path_arg(a[0])?;
    inode_at(me, (AT_FDCWD, &path), true, |t| chown_ino(me, t, a[1], a[2]))
}

/// `lchown(path, owner, group)`: does not follow a final symlink.
pub fn lchown(me: &Arc<Thread>, _: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    let path = path_arg(a[0])?;
    inode_at(me, (AT_FDCWD, &path), false, |t| chown_ino(me, t, a[1], a[2]))
}

/// `fchown(fd, owner, group)`.
pub fn fchown(me: &Arc<Thread>, _: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    chown_ino(me, inode_of(me, a[0])?, a[1], a[2])
}

/// `fchownat(dirfd, path, owner, group, flags)`: flags other than `AT_SYMLINK_NOFOLLOW` and
/// `AT_EMPTY_PATH` are `EINVAL`.
pub fn fchownat(me: &Arc<Thread>, _: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    if a[4] & !(AT_SYMLINK_NOFOLLOW | AT_EMPTY_PATH) != 0 {
        return Err(Errno::EINVAL);
    }
    inode_at_flags(me, (dirfd(a[0]), a[1]), a[4], |t| {
        chown_ino(me, t, a[2], a[3])
    })
}

/// `utimensat(dirfd, path, times, flags)`; a NULL path changes `dirfd` itself (`futimens`).
pub fn utimensat(me: &Arc<Thread>, _: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    const UTIME_NOW: u64 = (1 << 30) - 1;
    const UTIME_OMIT: u64 = (1 << 30) - 2;
    if a[3] & !(AT_SYMLINK_NOFOLLOW | AT_EMPTY_PATH) != 0 {
        return Err(Errno::EINVAL);
    }
    let t = now();
    let (atime, mtime) = if a[2] == 0 {
        (Some(t), Some(t))
    } else {
        let ts: [u64; 4] = read_user(a[2])?;
        let pick = |sec: u64, nsec: u64| -> Result<Option<Timespec>, Errno> {
            match nsec {
                UTIME_NOW => Ok(Some(t)),
                UTIME_OMIT => Ok(None),
                n if n < 1_000_000_000 => Ok(Some(Timespec::new(sec as i64, n as u32))),
                _ => Err(Errno::EINVAL),
            }
        };
        (pick(ts[0], ts[1])?, pick(ts[2], ts[3])?)
    };
    // Setting both times to now needs ownership or write permission, anything else ownership.
    let now_only = a[2] == 0 || (atime.is_none_or(|x| x == t) && mtime.is_none_or(|x| x == t));
    let set = |target: Target<'_>| -> SysResult {
        if atime.is_none() && mtime.is_none() {
            return Ok(0);
        }
        match target {
            Target::Ino(ino) => {
                if now_only {
                    perm::touch(&me.process, ino)?;
                } else {
                    perm::owns(&me.process, ino)?;
                }
                with_client(|c| c.set_times(ino, atime, mtime, t))?
            }
            Target::Hare(h, follow) => {
                perm::hare_times(&me.process, HareTarget::Path(h, follow), now_only)?;
                hare::utimens(h, follow, (atime, mtime))?
            }
            Target::HareFile(f) => {
                perm::hare_times(&me.process, HareTarget::File(&f), now_only)?;
                hare_set(&f, SetAttr::Times(atime, mtime))?
            }
        }
        Ok(0)
    };
    if a[1] == 0 {
        set(inode_of(me, a[0])?)
    } else {
        inode_at_flags(me, (dirfd(a[0]), a[1]), a[3], set)
    }
}

/// Writes a `struct statfs` (120 bytes) for the file system of `st`.
fn write_statfs(addr: u64, st: &KStat) -> SysResult {
    const TMPFS_MAGIC: u64 = 0x0102_1994;
    const PROC_SUPER_MAGIC: u64 = 0x9fa0;
    const PIPEFS_MAGIC: u64 = 0x5049_5045;
    const SOCKFS_MAGIC: u64 = 0x534f_434b;
    const ANON_INODE_FS_MAGIC: u64 = 0x0904_1934;
    const HARE_MAGIC: u64 = 0x4841_5245;
    let page = 4096u64;
    let free_pages = crate::mm::free_bytes() / page;
    let (magic, blocks, bfree, files, ffree) = match st.dev {
        crate::fd::DEV_NRFS => {
            let s = with_client(|c| c.statfs())?;
            let total = s.pages + free_pages;
            (
                TMPFS_MAGIC,
                total,
                free_pages,
                s.inodes + free_pages,
                free_pages,
            )
        }
        crate::fd::DEV_PROC => (PROC_SUPER_MAGIC, 0, 0, 0, 0),
        crate::fd::DEV_NET => (SOCKFS_MAGIC, 0, 0, 0, 0),
        crate::fd::DEV_ANON => (ANON_INODE_FS_MAGIC, 0, 0, 0, 0),
        // The cache's blocks, and what every server has free (blocks a truncation took from a
        // file still open are neither free nor the file's: Hare §3.5).
        hare::DEV_HARE => {
            let (blocks, space) = hare::statfs()?;
            (
                HARE_MAGIC,
                blocks,
                space.free_blocks,
                space.inodes + space.free_blocks,
                space.free_blocks,
            )
        }
        _ => (PIPEFS_MAGIC, 0, 0, 0, 0),
    };
    let words: [u64; 15] = [
        magic,
        page,
        blocks,
        bfree,
        bfree,
        files,
        ffree,
        st.dev,
        NAME_MAX as u64,
        page,
        0,
        0,
        0,
        0,
        0,
    ];
    crate::uaccess::write_user(addr, &words)?;
    Ok(0)
}

/// `statfs(path, buf)`: the file system of `path` (following symlinks).
pub fn statfs(me: &Arc<Thread>, _: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    let st = stat_path(&me.process, AT_FDCWD, &path_arg(a[0])?, true)?;
    write_statfs(a[1], &st)
}

/// `fstatfs(fd, buf)`: the file system of the file open as `fd`.
pub fn fstatfs(me: &Arc<Thread>, _: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    let st = file(me, a[0])?.stat()?;
    write_statfs(a[1], &st)
}

/// `sync`: nothing to write back.
pub fn sync(_: &Arc<Thread>, _: &mut InterruptFrame, _: [u64; 6]) -> SysResult {
    Ok(0)
}

/// The absolute path of `path` (relative to the working directory), as components, `.` and
/// `..` applied by name.
fn components(me: &Arc<Thread>, path: &[u8]) -> Vec<Vec<u8>> {
    path::display(&me.process, AT_FDCWD, path)
        .split(|&b| b == b'/')
        .filter(|c| !c.is_empty())
        .map(<[u8]>::to_vec)
        .collect()
}

/// `mount(source, target, type, flags, data)`: only type `hare` (`crate::fs::hare`; the
/// source is not used), on an NR-FS directory (the root only with option `root`), with
/// options in `data` (`cache=MiB`, ...); other types answer `ENODEV`, flags other than
/// `MS_SILENT` `EINVAL`; EPERM unless root.
pub fn mount(me: &Arc<Thread>, _: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    const MS_SILENT: u64 = 0x8000;
    const MS_MGC_VAL: u64 = 0xc0ed_0000;
    let target = path_arg(a[1])?;
    let fstype = uaccess::read_cstring(a[2], 64)?;
    let options = if a[4] == 0 {
        Vec::new()
    } else {
        uaccess::read_cstring(a[4], 4096)?
    };
    super::cred::privileged(me)?;
    // Old programs put a magic number in the high half of the flags (ignored, as by Linux).
    let flags = if a[3] & 0xffff_0000 == MS_MGC_VAL {
        a[3] & 0xffff
    } else {
        a[3]
    };
    if fstype != b"hare" {
        return Err(Errno::ENODEV);
    }
    if flags & !MS_SILENT != 0 {
        return Err(Errno::EINVAL);
    }
    let st = stat_path(&me.process, AT_FDCWD, &target, true)?;
    if !st.is_dir() {
        return Err(Errno::ENOTDIR);
    }
    let at = components(me, &target);
    if st.dev != crate::fd::DEV_NRFS {
        return Err(Errno::EBUSY);
    }
    hare::mount(at, &options)?;
    Ok(0)
}

/// `umount2(target, flags)`: Hare's mount point; `EINVAL` for another path or unknown flags
/// (`MNT_FORCE` and `MNT_DETACH` are refused too: a busy mount stays); EPERM unless root.
pub fn umount2(me: &Arc<Thread>, _: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    const UMOUNT_NOFOLLOW: u64 = 8;
    if a[1] & !UMOUNT_NOFOLLOW != 0 {
        return Err(Errno::EINVAL);
    }
    let target = path_arg(a[0])?;
    super::cred::privileged(me)?;
    hare::umount(&components(me, &target))?;
    Ok(0)
}
