//! File permission checks for NR-FS paths: the caller's credentials (`creds`) against each
//! inode's owner, group and mode, as Linux checks them. A process whose file-system user ID is
//! 0 passes every check but executing a file without execute bits, and pays nothing for them:
//! every function here returns at once for it.
//!
//! For anyone else, a path is walked a second time, before the operation, by NR-FS's own
//! walker ([`nrfs::walk`]) over [`Searching`], which refuses to look anything up in a
//! directory the caller may not search (EACCES). Then the operation's own check runs: the
//! file's read or write permission for `open`, write and search permission on the directory
//! for making or removing a name (and the sticky rule for removing), ownership for `chmod`
//! and `utimensat`, and so on. The checks and the operation are separate steps (NR-FS holds
//! no lock across them): a `chmod` or `rename` by another process between the two is not seen
//! by the first; docs/architecture.md says so. Hare's files are not checked.

use super::with_client;
use crate::fd::KStat;
use crate::proc::Process;
use abi::Errno;
use alloc::vec::Vec;
use creds::{Credentials, Owner, MAY_EXEC, MAY_READ, MAY_WRITE};
use nrfs::walk::{self, Namespace};
use nrfs::FsClient;
use nrfs::{Ino, Kind, Last, Stat};

/// What a permission check needs of `st`.
pub fn owner(st: &Stat) -> Owner {
    Owner {
        uid: st.uid,
        gid: st.gid,
        mode: st.mode,
        dir: st.kind == Kind::Dir,
    }
}

/// The caller's credentials if the file system checks them (its file-system user ID is not
/// 0), else `None`.
fn checked(me: &Process) -> Result<Option<Credentials>, Errno> {
    let c = me.creds.lock();
    if c.is_fs_privileged() {
        Ok(None)
    } else {
        c.try_clone().map(Some)
    }
}

/// The owner and group a new inode of the caller gets: its file-system IDs.
pub fn new_owner(me: &Process) -> (u32, u32) {
    let c = me.creds.lock();
    (c.uid.fs, c.gid.fs)
}

/// NR-FS's namespace as seen by `cred`: a lookup in (or `..` of) a directory it may not
/// search is EACCES.
struct Searching<'a> {
    /// The client doing the reads.
    c: &'a FsClient,
    /// Whose search permission is checked.
    cred: &'a Credentials,
}

impl Searching<'_> {
    /// EACCES unless the caller may search `dir`.
    fn search(&self, dir: Ino) -> Result<(), Errno> {
        let st = self.c.stat(dir)?;
        self.cred.may(owner(&st), MAY_EXEC)
    }
}

impl Namespace for Searching<'_> {
    fn kind(&self, ino: Ino) -> Result<Kind, Errno> {
        self.c.kind(ino)
    }

    fn lookup(&self, dir: Ino, name: &[u8]) -> Result<Option<(Ino, Kind)>, Errno> {
        self.search(dir)?;
        Namespace::lookup(self.c, dir, name)
    }

    fn parent(&self, dir: Ino) -> Result<Ino, Errno> {
        self.search(dir)?;
        self.c.parent(dir)
    }

    fn link_target(&self, ino: Ino) -> Result<Vec<u8>, Errno> {
        self.c.link_target(ino)
    }
}

/// What a checking walk found: `Some` answer, `None` for an error of the walk itself
/// (ENOENT, ...), left to the operation, which meets it again; EACCES passes through.
fn searched<T>(walked: Result<T, Errno>) -> Result<Option<T>, Errno> {
    match walked {
        Ok(v) => Ok(Some(v)),
        Err(Errno::EACCES) => Err(Errno::EACCES),
        Err(_) => Ok(None),
    }
}

/// Checks that the caller may reach `path` from `start` (search permission on every directory
/// on the way); `follow` follows a final symlink. Errors of the walk itself (ENOENT, ...) are
/// left to the operation, which meets them again.
pub fn lookup(me: &Process, start: Ino, path: &[u8], follow: bool) -> Result<(), Errno> {
    let Some(cred) = checked(me)? else {
        return Ok(());
    };
    with_client(|c| {
        let ns = Searching { c, cred: &cred };
        searched(walk::resolve(&ns, start, path, follow)).map(drop)
    })
}

/// Checks that the caller may reach `path` and use the inode it names as `want` asks (a mask
/// of `creds::MAY_*`).
pub fn may(me: &Process, start: Ino, path: &[u8], follow: bool, want: u32) -> Result<(), Errno> {
    let Some(cred) = checked(me)? else {
        return Ok(());
    };
    with_client(|c| {
        let ns = Searching { c, cred: &cred };
        match searched(walk::resolve(&ns, start, path, follow))? {
            Some((ino, _)) => cred.may(owner(&c.stat(ino)?), want),
            None => Ok(()),
        }
    })
}

/// The checks of `open(path, flags)`: an existing file needs read and/or write permission
/// as the access mode asks (write for `O_TRUNC` too; nothing for `O_PATH`), a file about to be
/// made needs write and search permission on its directory.
pub fn open(me: &Process, start: Ino, path: &[u8], open_flags: u32) -> Result<(), Errno> {
    use super::flags::*;
    use crate::fd::{O_ACCMODE, O_PATH, O_RDONLY, O_WRONLY};
    let Some(cred) = checked(me)? else {
        return Ok(());
    };
    let want = match open_flags & O_ACCMODE {
        O_RDONLY => MAY_READ,
        O_WRONLY => MAY_WRITE,
        _ => MAY_READ | MAY_WRITE,
    } | if open_flags & O_TRUNC != 0 {
        MAY_WRITE
    } else {
        0
    };
    let follow = open_flags & O_NOFOLLOW == 0;
    with_client(|c| {
        let ns = Searching { c, cred: &cred };
        match walk::resolve(&ns, start, path, follow) {
            Ok(_) if open_flags & O_PATH != 0 => Ok(()),
            Ok((ino, _)) => cred.may(owner(&c.stat(ino)?), want),
            Err(Errno::ENOENT) if open_flags & O_CREAT != 0 => {
                parent_writable(c, &cred, start, path)
            }
            Err(Errno::EACCES) => Err(Errno::EACCES),
            Err(_) => Ok(()),
        }
    })
}

/// EACCES unless `cred` may search the directory that holds `path`'s last component and
/// write to it.
fn parent_writable(c: &FsClient, cred: &Credentials, start: Ino, path: &[u8]) -> Result<(), Errno> {
    let ns = Searching { c, cred };
    match searched(walk::resolve_parent(&ns, start, path))? {
        Some(p) => cred.may(owner(&c.stat(p.dir)?), MAY_WRITE | MAY_EXEC),
        None => Ok(()),
    }
}

/// The check of making a name (`mkdir`, `mknod`, `symlink`, `link`'s new name): write and
/// search permission on its directory.
pub fn create(me: &Process, start: Ino, path: &[u8]) -> Result<(), Errno> {
    let Some(cred) = checked(me)? else {
        return Ok(());
    };
    with_client(|c| parent_writable(c, &cred, start, path))
}

/// The checks of removing or replacing the name `path` (`unlink`, `rmdir`, either side of
/// `rename`): write and search permission on its directory, and in a sticky directory
/// ownership of the entry or the directory (EPERM).
pub fn remove(me: &Process, start: Ino, path: &[u8]) -> Result<(), Errno> {
    let Some(cred) = checked(me)? else {
        return Ok(());
    };
    with_client(|c| {
        let ns = Searching { c, cred: &cred };
        let Some(p) = searched(walk::resolve_parent(&ns, start, path))? else {
            return Ok(());
        };
        let dir = owner(&c.stat(p.dir)?);
        cred.may(dir, MAY_WRITE | MAY_EXEC)?;
        let Last::Name(name) = p.last else {
            return Ok(());
        };
        match Namespace::lookup(c, p.dir, &name) {
            Ok(Some((victim, _))) => cred.may_delete(dir, owner(&c.stat(victim)?)),
            _ => Ok(()),
        }
    })
}

/// Checks that the caller may use directory `ino` as `want` asks (a mask of `creds::MAY_*`;
/// root may do anything with a directory).
pub fn may_ino(me: &Process, ino: Ino, want: u32) -> Result<(), Errno> {
    let Some(cred) = checked(me)? else {
        return Ok(());
    };
    let st = with_client(|c| c.stat(ino))?;
    cred.may(owner(&st), want)
}

/// The check of executing a file with attributes `file`: execute permission, which root too
/// has only if some execute bit is set (EACCES). `None`: the first process, root.
pub fn may_execute(me: Option<&Process>, file: Owner) -> Result<(), Errno> {
    match me {
        Some(p) => p.creds.lock().may(file, MAY_EXEC),
        None => Credentials::root().may(file, MAY_EXEC),
    }
}

/// The check of changing `ino`'s mode or setting its times explicitly: the caller owns it
/// (EPERM).
pub fn owns(me: &Process, ino: Ino) -> Result<(), Errno> {
    let Some(cred) = checked(me)? else {
        return Ok(());
    };
    let st = with_client(|c| c.stat(ino))?;
    cred.owns(owner(&st))
}

/// The mode `chmod` stores for `ino` (see `creds::Credentials::chmod_mode`).
pub fn chmod_mode(me: &Process, ino: Ino, mode: u32) -> Result<u32, Errno> {
    let Some(cred) = checked(me)? else {
        return Ok(mode);
    };
    let st = with_client(|c| c.stat(ino))?;
    cred.owns(owner(&st))?;
    Ok(cred.chmod_mode(owner(&st), mode))
}

/// The check of `chown(ino, uid, gid)` (`u32::MAX` leaves one unchanged).
pub fn chown(me: &Process, ino: Ino, uid: u32, gid: u32) -> Result<(), Errno> {
    let Some(cred) = checked(me)? else {
        return Ok(());
    };
    let st = with_client(|c| c.stat(ino))?;
    cred.may_chown(owner(&st), uid, gid)
}

/// The check of setting `ino`'s times to now (`utimensat` without times): the caller owns it
/// or may write it (EACCES).
pub fn touch(me: &Process, ino: Ino) -> Result<(), Errno> {
    let Some(cred) = checked(me)? else {
        return Ok(());
    };
    let st = with_client(|c| c.stat(ino))?;
    match cred.owns(owner(&st)) {
        Ok(()) => Ok(()),
        Err(_) => cred.may(owner(&st), MAY_WRITE),
    }
}

/// `access(path, mode)`'s check of the file with attributes `st`, with the real user and
/// group IDs in place of the file-system ones (the effective ones for `AT_EACCESS`): every
/// bit of `mode` (a mask of `creds::MAY_*`) must be granted.
pub fn access(me: &Process, st: &KStat, mode: u32, effective: bool) -> Result<(), Errno> {
    let file = Owner {
        uid: st.uid,
        gid: st.gid,
        mode: st.mode & 0o7777,
        dir: st.is_dir(),
    };
    let c = me.creds.lock();
    if effective {
        c.may(file, mode)
    } else {
        c.may_real(file, mode)
    }
}
