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
//! by the first; docs/architecture.md says so.
//!
//! Hare's files are checked the same way with what its servers keep (owner, group, mode): the
//! `hare_*` functions ask Hare's client for the attributes of the start directory and of every
//! directory on the path (search permission: one `stat` each, for callers other than root only),
//! then apply the operation's own check. A symlink in the middle of a Hare path is followed
//! by those `stat`s, so the directories on the way to its target are not checked.

use super::hare::{self as harefs, HarePath};
use super::with_client;
use crate::fd::{KStat, OpenFile};
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

    fn covered(&self, dir: Ino) -> bool {
        self.c.covered(dir)
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
    use crate::fd::O_PATH;
    let Some(cred) = checked(me)? else {
        return Ok(());
    };
    let want = open_want(open_flags);
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

/// The permission `open` with `open_flags` needs of an existing file: read and/or write as
/// the access mode asks, write for `O_TRUNC` too.
fn open_want(open_flags: u32) -> u32 {
    use super::flags::O_TRUNC;
    use crate::fd::{O_ACCMODE, O_RDONLY, O_WRONLY};
    let access = match open_flags & O_ACCMODE {
        O_RDONLY => MAY_READ,
        O_WRONLY => MAY_WRITE,
        _ => MAY_READ | MAY_WRITE,
    };
    access
        | if open_flags & O_TRUNC != 0 {
            MAY_WRITE
        } else {
            0
        }
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
    let file = owner_of(st);
    let c = me.creds.lock();
    if effective {
        c.may(file, mode)
    } else {
        c.may_real(file, mode)
    }
}

/// Checks that the caller may use the file open as `f` as `want` asks (a mask of
/// `creds::MAY_*`): what a Hare directory's `chdir` asks of it. Its attributes are asked for
/// only if the caller is checked.
pub fn may_file(me: &Process, f: &OpenFile, want: u32) -> Result<(), Errno> {
    match checked(me)? {
        Some(cred) => cred.may(owner_of(&f.stat()?), want),
        None => Ok(()),
    }
}

/// What a permission check needs of attributes `st` (as `stat` reports them).
pub fn owner_of(st: &KStat) -> Owner {
    Owner {
        uid: st.uid,
        gid: st.gid,
        mode: st.mode & 0o7777,
        dir: st.is_dir(),
    }
}

/// The directory part of `path` (`.` if it has none), and whether there is a last component.
fn parent_of(path: &[u8]) -> (&[u8], bool) {
    let trimmed = match path.iter().rposition(|&b| b != b'/') {
        Some(end) => &path[..=end],
        None => return (path, false),
    };
    match trimmed.iter().rposition(|&b| b == b'/') {
        Some(0) => (b"/", true),
        Some(at) => (&trimmed[..at], true),
        None => (b".", trimmed != b"." && trimmed != b".."),
    }
}

/// Checks that `cred` may search the start directory of `p` and every directory before its
/// last component (the `stat` of each prefix, following symlinks). A prefix that does not
/// resolve ends the check: the operation meets that error itself.
fn hare_search(cred: &Credentials, p: &HarePath) -> Result<(), Errno> {
    let mut prefix: Vec<u8> = if p.path.starts_with(b"/") {
        b"/".to_vec()
    } else {
        b".".to_vec()
    };
    let comps: Vec<&[u8]> = p
        .path
        .split(|&b| b == b'/')
        .filter(|c| !c.is_empty())
        .collect();
    for i in 0..comps.len() {
        match harefs::stat_at(p, &prefix, true) {
            Ok(st) if st.is_dir() => cred.may(owner_of(&st), MAY_EXEC)?,
            _ => return Ok(()),
        }
        if i + 1 == comps.len() {
            break;
        }
        if prefix == b"." {
            prefix.clear();
        } else if prefix != b"/" {
            prefix.push(b'/');
        }
        prefix.extend_from_slice(comps[i]);
    }
    Ok(())
}

/// EACCES unless `cred` may search the way to `p`'s directory and write to that directory.
fn hare_parent_writable(cred: &Credentials, p: &HarePath) -> Result<Option<Owner>, Errno> {
    hare_search(cred, p)?;
    let (parent, _) = parent_of(&p.path);
    match harefs::stat_at(p, parent, true) {
        Ok(st) => {
            let dir = owner_of(&st);
            cred.may(dir, MAY_WRITE | MAY_EXEC)?;
            Ok(Some(dir))
        }
        Err(_) => Ok(None),
    }
}

/// [`lookup`] of a Hare path: search permission on the way.
pub fn hare_lookup(me: &Process, p: &HarePath) -> Result<(), Errno> {
    match checked(me)? {
        Some(cred) => hare_search(&cred, p),
        None => Ok(()),
    }
}

/// [`may`] of a Hare path.
pub fn hare_may(me: &Process, p: &HarePath, follow: bool, want: u32) -> Result<(), Errno> {
    let Some(cred) = checked(me)? else {
        return Ok(());
    };
    hare_search(&cred, p)?;
    match harefs::stat_at(p, &p.path, follow) {
        Ok(st) => cred.may(owner_of(&st), want),
        Err(_) => Ok(()),
    }
}

/// [`open`] of a Hare path.
pub fn hare_open(me: &Process, p: &HarePath, open_flags: u32) -> Result<(), Errno> {
    use super::flags::*;
    use crate::fd::O_PATH;
    let Some(cred) = checked(me)? else {
        return Ok(());
    };
    let want = open_want(open_flags);
    hare_search(&cred, p)?;
    match harefs::stat_at(p, &p.path, open_flags & O_NOFOLLOW == 0) {
        Ok(_) if open_flags & O_PATH != 0 => Ok(()),
        Ok(st) => cred.may(owner_of(&st), want),
        Err(Errno::ENOENT) if open_flags & O_CREAT != 0 => hare_parent_writable(&cred, p).map(drop),
        Err(_) => Ok(()),
    }
}

/// [`create`] of a Hare path.
pub fn hare_create(me: &Process, p: &HarePath) -> Result<(), Errno> {
    match checked(me)? {
        Some(cred) => hare_parent_writable(&cred, p).map(drop),
        None => Ok(()),
    }
}

/// [`remove`] of a Hare path: write and search permission on its directory, and the sticky
/// rule.
pub fn hare_remove(me: &Process, p: &HarePath) -> Result<(), Errno> {
    let Some(cred) = checked(me)? else {
        return Ok(());
    };
    let Some(dir) = hare_parent_writable(&cred, p)? else {
        return Ok(());
    };
    match harefs::stat_at(p, &p.path, false) {
        Ok(victim) if parent_of(&p.path).1 => cred.may_delete(dir, owner_of(&victim)),
        _ => Ok(()),
    }
}

/// What an attribute change in Hare names.
pub enum HareTarget<'a> {
    /// A path, and whether a last symlink is followed.
    Path(&'a HarePath, bool),
    /// A file open there.
    File(&'a OpenFile),
}

/// The caller's credentials and the attributes of `t` (after checking search permission on
/// the way to a path), or `None` for a caller the file system does not check.
fn hare_owner(me: &Process, t: HareTarget<'_>) -> Result<Option<(Credentials, Owner)>, Errno> {
    let Some(cred) = checked(me)? else {
        return Ok(None);
    };
    let st = match t {
        HareTarget::Path(p, follow) => {
            hare_search(&cred, p)?;
            harefs::stat_at(p, &p.path, follow)?
        }
        HareTarget::File(f) => f.stat()?,
    };
    Ok(Some((cred, owner_of(&st))))
}

/// [`chmod_mode`] in Hare.
pub fn hare_chmod_mode(me: &Process, t: HareTarget<'_>, mode: u32) -> Result<u32, Errno> {
    match hare_owner(me, t)? {
        Some((cred, file)) => {
            cred.owns(file)?;
            Ok(cred.chmod_mode(file, mode))
        }
        None => Ok(mode),
    }
}

/// [`chown`] in Hare.
pub fn hare_chown(me: &Process, t: HareTarget<'_>, uid: u32, gid: u32) -> Result<(), Errno> {
    match hare_owner(me, t)? {
        Some((cred, file)) => cred.may_chown(file, uid, gid),
        None => Ok(()),
    }
}

/// [`owns`] (`now_only`: [`touch`]) in Hare: setting times.
pub fn hare_times(me: &Process, t: HareTarget<'_>, now_only: bool) -> Result<(), Errno> {
    match hare_owner(me, t)? {
        Some((cred, file)) => match cred.owns(file) {
            Err(_) if now_only => cred.may(file, MAY_WRITE),
            r => r,
        },
        None => Ok(()),
    }
}
