//! The update operations, written once against [`Store`] and used by both layers.
//!
//! Every operation here works on inodes that the caller has already found: a directory and a
//! name, or an inode number (path resolution happens before, in [`crate::walk`]). The
//! sequential [`crate::FileSystem`] runs them on its whole inode table; each replica of
//! [`crate::NrFs`] runs them on the shards it locked for the operation's logs. An access to an
//! inode outside those shards returns [`FsError::Stale`], so each operation first reads every
//! inode it will touch and only then changes anything: a stale operation changes nothing.

use abi::Errno;

use crate::inode::{check_name, Body, Dir, Inode, Slot};
use crate::{
    Attrs, CreateFlags, Created, FsError, Ino, Kind, Timespec, NAME_MAX, RENAME_EXCHANGE,
    RENAME_NOREPLACE, RENAME_WHITEOUT, ROOT_INO, S_ISGID, S_ISUID, S_IXGRP,
};

/// Inode storage as seen by one operation.
pub(crate) trait Store {
    /// The inode `ino`, `None` if it does not exist, or `Stale` if it is not accessible.
    fn get(&self, ino: Ino) -> Result<Option<&Inode>, FsError>;
    /// Mutable access to `ino`; see [`Store::get`].
    fn get_mut(&mut self, ino: Ino) -> Result<Option<&mut Inode>, FsError>;
    /// Adds inode `ino` (absent).
    fn insert(&mut self, ino: Ino, inode: Inode) -> Result<(), FsError>;
    /// Removes inode `ino`.
    fn remove(&mut self, ino: Ino) -> Result<(), FsError>;

    /// The inode `ino` (ENOENT if absent).
    fn inode(&self, ino: Ino) -> Result<&Inode, FsError> {
        self.get(ino)?.ok_or(FsError::Errno(Errno::ENOENT))
    }

    /// Mutable access to `ino` (ENOENT if absent).
    fn inode_mut(&mut self, ino: Ino) -> Result<&mut Inode, FsError> {
        self.get_mut(ino)?.ok_or(FsError::Errno(Errno::ENOENT))
    }

    /// The directory `ino` (ENOENT, ENOTDIR).
    fn dir(&self, ino: Ino) -> Result<&Dir, FsError> {
        Ok(self.inode(ino)?.dir()?)
    }
}

/// What [`make`] creates.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum NewKind<'a> {
    Dir,
    Symlink(&'a [u8]),
    CharDev(u64),
    Fifo,
}

/// Looks up `name` in directory `dir` for an operation on that entry.
fn entry(s: &impl Store, dir: Ino, name: &[u8]) -> Result<Option<Slot>, FsError> {
    let d = s.dir(dir)?;
    check_name(name)?;
    Ok(d.get(name))
}

/// Frees `ino` if it has neither names nor opens.
fn release(s: &mut impl Store, ino: Ino) -> Result<(), FsError> {
    if s.inode(ino)?.is_unused() {
        s.remove(ino)?;
    }
    Ok(())
}

/// Checks that a caller-chosen inode number is free.
fn check_new_ino(s: &impl Store, ino: Ino) -> Result<(), FsError> {
    if s.get(ino)?.is_some() {
        return Err(Errno::EINVAL.into());
    }
    Ok(())
}

/// `open(O_CREAT)` of `name` in `dir`: creates regular file `ino`, or finds the existing one.
///
/// An existing symlink is `Stale` (the caller follows it and retries); an existing directory
/// is EISDIR; with `exclusive`, any existing entry is EEXIST.
pub(crate) fn create(
    s: &mut impl Store,
    dir: Ino,
    name: &[u8],
    ino: Ino,
    attrs: &Attrs,
    flags: CreateFlags,
    now: Timespec,
) -> Result<Created, FsError> {
    match entry(s, dir, name)? {
        Some(_) if flags.exclusive => Err(Errno::EEXIST.into()),
        Some(e) if e.kind == Kind::Dir => Err(Errno::EISDIR.into()),
        Some(e) if e.kind == Kind::Symlink => Err(FsError::Stale),
        Some(e) => {
            if flags.open {
                s.inode_mut(e.ino)?.opens += 1;
            }
            Ok(Created {
                ino: e.ino,
                created: false,
            })
        }
        None => {
            let parent = s.inode(dir)?;
            if parent.is_dead_dir() {
                return Err(Errno::ENOENT.into());
            }
            check_new_ino(s, ino)?;
            let attrs = s.inode(dir)?.inherit(attrs, Kind::File);
            let mut inode = Inode::new(Kind::File, &attrs, now, Body::File(Default::default()));
            inode.opens = u32::from(flags.open);
            s.insert(ino, inode)?;
            let parent = s.inode_mut(dir)?;
            parent.dir_mut()?.insert(name, ino, Kind::File);
            parent.touch_dir(now);
            Ok(Created { ino, created: true })
        }
    }
}

/// `open(O_TMPFILE)` in `dir`: regular file `ino` without a name, open once (it lives until
/// that description's last close). ENOTDIR if `dir` is not a directory, ENOENT if it was
/// removed.
pub(crate) fn tmpfile(
    s: &mut impl Store,
    dir: Ino,
    ino: Ino,
    attrs: &Attrs,
    now: Timespec,
) -> Result<(), FsError> {
    let parent = s.inode(dir)?;
    if parent.kind != Kind::Dir {
        return Err(Errno::ENOTDIR.into());
    }
    if parent.is_dead_dir() {
        return Err(Errno::ENOENT.into());
    }
    check_new_ino(s, ino)?;
    let attrs = parent.inherit(attrs, Kind::File);
    let mut inode = Inode::new(Kind::File, &attrs, now, Body::File(Default::default()));
    inode.nlink = 0;
    inode.opens = 1;
    s.insert(ino, inode)
}

/// `mkdir`, `symlink` or `mknod` (character device or FIFO) of `name` in `dir` as inode `ino`.
///
/// `trailing` says the path ended in `/`, which only `mkdir` accepts for a new name.
#[allow(clippy::too_many_arguments)]
pub(crate) fn make(
    s: &mut impl Store,
    dir: Ino,
    name: &[u8],
    trailing: bool,
    ino: Ino,
    attrs: &Attrs,
    what: NewKind<'_>,
    now: Timespec,
) -> Result<Ino, FsError> {
    if let NewKind::Symlink(target) = what {
        crate::walk::check_path(target)?;
    }
    if entry(s, dir, name)?.is_some() {
        return Err(Errno::EEXIST.into());
    }
    let parent = s.inode(dir)?;
    if parent.is_dead_dir() || (trailing && what != NewKind::Dir) {
        return Err(Errno::ENOENT.into());
    }
    check_new_ino(s, ino)?;
    let (kind, body, mode_mask) = match what {
        NewKind::Dir => (Kind::Dir, Body::Dir(Dir::new(dir)), 0o1777),
        NewKind::Symlink(t) => (Kind::Symlink, Body::Symlink(t.to_vec()), 0),
        NewKind::CharDev(_) => (Kind::CharDev, Body::Device, 0o7777),
        NewKind::Fifo => (Kind::Fifo, Body::Device, 0o7777),
    };
    let mut attrs = *attrs;
    attrs.mode &= mode_mask;
    if kind == Kind::Symlink {
        attrs.mode = 0o777;
    }
    let attrs = parent.inherit(&attrs, kind);
    let mut inode = Inode::new(kind, &attrs, now, body);
    match what {
        NewKind::Dir => inode.nlink = 2,
        NewKind::CharDev(rdev) => inode.rdev = rdev,
        NewKind::Symlink(_) | NewKind::Fifo => {}
    }
    s.insert(ino, inode)?;
    let parent = s.inode_mut(dir)?;
    parent.dir_mut()?.insert(name, ino, kind);
    if kind == Kind::Dir {
        parent.nlink += 1;
    }
    parent.touch_dir(now);
    Ok(ino)
}

/// `link`: adds `name` in `dir` for the existing inode `ino`.
pub(crate) fn link(
    s: &mut impl Store,
    ino: Ino,
    dir: Ino,
    name: &[u8],
    trailing: bool,
    now: Timespec,
) -> Result<(), FsError> {
    if entry(s, dir, name)?.is_some() {
        return Err(Errno::EEXIST.into());
    }
    if trailing || s.inode(dir)?.is_dead_dir() {
        return Err(Errno::ENOENT.into());
    }
    let target = s.inode(ino)?;
    if target.kind == Kind::Dir {
        return Err(Errno::EPERM.into());
    }
    if target.nlink == 0 {
        return Err(Errno::ENOENT.into());
    }
    if target.nlink == u32::MAX {
        return Err(Errno::EMLINK.into());
    }
    let kind = target.kind;
    let target = s.inode_mut(ino)?;
    target.nlink += 1;
    target.ctime = now;
    let parent = s.inode_mut(dir)?;
    parent.dir_mut()?.insert(name, ino, kind);
    parent.touch_dir(now);
    Ok(())
}

/// `unlink` of `name` in `dir`; `trailing` says the path ended in `/`.
pub(crate) fn unlink(
    s: &mut impl Store,
    dir: Ino,
    name: &[u8],
    trailing: bool,
    now: Timespec,
) -> Result<(), FsError> {
    let e = entry(s, dir, name)?.ok_or(FsError::Errno(Errno::ENOENT))?;
    if e.kind == Kind::Dir {
        return Err(Errno::EISDIR.into());
    }
    if trailing {
        return Err(Errno::ENOTDIR.into());
    }
    s.inode(e.ino)?;
    let parent = s.inode_mut(dir)?;
    parent.dir_mut()?.remove(name);
    parent.touch_dir(now);
    let victim = s.inode_mut(e.ino)?;
    victim.nlink -= 1;
    victim.ctime = now;
    release(s, e.ino)
}

/// `rmdir` of `name` in `dir` (the caller handles `.`, `..` and `/`).
pub(crate) fn rmdir(
    s: &mut impl Store,
    dir: Ino,
    name: &[u8],
    now: Timespec,
) -> Result<(), FsError> {
    let e = entry(s, dir, name)?.ok_or(FsError::Errno(Errno::ENOENT))?;
    if e.kind != Kind::Dir {
        return Err(Errno::ENOTDIR.into());
    }
    if !s.dir(e.ino)?.is_empty() {
        return Err(Errno::ENOTEMPTY.into());
    }
    let parent = s.inode_mut(dir)?;
    parent.dir_mut()?.remove(name);
    parent.nlink -= 1;
    parent.touch_dir(now);
    let victim = s.inode_mut(e.ino)?;
    victim.nlink = 0;
    victim.ctime = now;
    release(s, e.ino)
}

/// Whether directory `a` is `d` or one of its ancestors (following `..` up to the root).
fn is_ancestor_or_self(s: &impl Store, a: Ino, mut d: Ino) -> Result<bool, FsError> {
    loop {
        if d == a {
            return Ok(true);
        }
        if d == ROOT_INO {
            return Ok(false);
        }
        let parent = match s.get(d)? {
            Some(inode) => match inode.dir() {
                Ok(dir) => dir.parent,
                Err(_) => return Ok(false),
            },
            None => return Ok(false),
        };
        if parent == d {
            return Ok(false);
        }
        d = parent;
    }
}

/// Arguments of [`rename`]: both sides are a directory and a name already resolved, plus
/// whether the path ended in `/`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RenameArgs<'a> {
    pub(crate) old_dir: Ino,
    pub(crate) old_name: &'a [u8],
    pub(crate) old_trailing: bool,
    pub(crate) new_dir: Ino,
    pub(crate) new_name: &'a [u8],
    pub(crate) new_trailing: bool,
    pub(crate) flags: u32,
    pub(crate) now: Timespec,
}

/// Checks the `renameat2` flags (EINVAL for unknown bits, `NOREPLACE|EXCHANGE` and
/// `WHITEOUT`, which NR-FS does not implement).
pub(crate) fn check_rename_flags(flags: u32) -> Result<(), Errno> {
    if flags & !(RENAME_NOREPLACE | RENAME_EXCHANGE | RENAME_WHITEOUT) != 0
        || (flags & RENAME_EXCHANGE != 0 && flags & (RENAME_NOREPLACE | RENAME_WHITEOUT) != 0)
        || flags & RENAME_WHITEOUT != 0
    {
        return Err(Errno::EINVAL);
    }
    Ok(())
}

/// `renameat2` with Linux's checks, in Linux's order (`do_renameat2`, `vfs_rename`).
pub(crate) fn rename(s: &mut impl Store, a: &RenameArgs<'_>) -> Result<(), FsError> {
    check_rename_flags(a.flags)?;
    let exchange = a.flags & RENAME_EXCHANGE != 0;
    let old = entry(s, a.old_dir, a.old_name)?.ok_or(FsError::Errno(Errno::ENOENT))?;
    let new = entry(s, a.new_dir, a.new_name)?;
    if a.flags & RENAME_NOREPLACE != 0 && new.is_some() {
        return Err(Errno::EEXIST.into());
    }
    if exchange {
        match new {
            None => return Err(Errno::ENOENT.into()),
            Some(n) if n.kind != Kind::Dir && a.new_trailing => return Err(Errno::ENOTDIR.into()),
            Some(_) => {}
        }
    }
    if old.kind != Kind::Dir && (a.old_trailing || (!exchange && a.new_trailing)) {
        return Err(Errno::ENOTDIR.into());
    }
    if a.old_dir != a.new_dir {
        // lock_rename's "trap": one parent is an ancestor of the other through this entry.
        if old.kind == Kind::Dir && is_ancestor_or_self(s, old.ino, a.new_dir)? {
            return Err(Errno::EINVAL.into());
        }
        if let Some(n) = new {
            if n.kind == Kind::Dir && is_ancestor_or_self(s, n.ino, a.old_dir)? {
                return Err(if exchange {
                    Errno::EINVAL
                } else {
                    Errno::ENOTEMPTY
                }
                .into());
            }
        }
    }
    if new.map(|n| n.ino) == Some(old.ino) {
        return Ok(());
    }
    s.inode(old.ino)?;
    match new {
        Some(n) => {
            let target = s.inode(n.ino)?;
            if !exchange {
                if old.kind == Kind::Dir && n.kind != Kind::Dir {
                    return Err(Errno::ENOTDIR.into());
                }
                if old.kind != Kind::Dir && n.kind == Kind::Dir {
                    return Err(Errno::EISDIR.into());
                }
                if n.kind == Kind::Dir && !target.dir()?.is_empty() {
                    return Err(Errno::ENOTEMPTY.into());
                }
            }
        }
        None => {
            if s.inode(a.new_dir)?.is_dead_dir() {
                return Err(Errno::ENOENT.into());
            }
        }
    }
    // Every inode involved has been read: from here on nothing can be stale.
    let moved_parent = a.old_dir != a.new_dir;
    if let (true, Some(n)) = (exchange, new) {
        s.inode_mut(a.old_dir)?
            .dir_mut()?
            .replace(a.old_name, n.ino, n.kind);
        s.inode_mut(a.new_dir)?
            .dir_mut()?
            .replace(a.new_name, old.ino, old.kind);
        if moved_parent {
            for (slot, from, to) in [(old, a.old_dir, a.new_dir), (n, a.new_dir, a.old_dir)] {
                if slot.kind == Kind::Dir {
                    s.inode_mut(slot.ino)?.dir_mut()?.parent = to;
                    s.inode_mut(from)?.nlink -= 1;
                    s.inode_mut(to)?.nlink += 1;
                }
            }
        }
        s.inode_mut(n.ino)?.ctime = a.now;
    } else {
        s.inode_mut(a.old_dir)?.dir_mut()?.remove(a.old_name);
        if let Some(n) = new {
            let nd = s.inode_mut(a.new_dir)?;
            nd.dir_mut()?.remove(a.new_name);
            let target = s.inode_mut(n.ino)?;
            target.ctime = a.now;
            if n.kind == Kind::Dir {
                target.nlink = 0;
                s.inode_mut(a.new_dir)?.nlink -= 1;
            } else {
                target.nlink -= 1;
            }
        }
        s.inode_mut(a.new_dir)?
            .dir_mut()?
            .insert(a.new_name, old.ino, old.kind);
        if moved_parent && old.kind == Kind::Dir {
            s.inode_mut(old.ino)?.dir_mut()?.parent = a.new_dir;
            s.inode_mut(a.old_dir)?.nlink -= 1;
            s.inode_mut(a.new_dir)?.nlink += 1;
        }
    }
    s.inode_mut(old.ino)?.ctime = a.now;
    s.inode_mut(a.old_dir)?.touch_dir(a.now);
    s.inode_mut(a.new_dir)?.touch_dir(a.now);
    if let (false, Some(n)) = (exchange, new) {
        release(s, n.ino)?;
    }
    Ok(())
}

/// `pwrite` on inode `ino`; `claim` says whether this application writes shared pages (see
/// `Pages::write`).
pub(crate) fn write(
    s: &mut impl Store,
    ino: Ino,
    offset: u64,
    data: &[u8],
    now: Timespec,
    claim: &dyn Fn() -> bool,
) -> Result<usize, FsError> {
    Ok(s.inode_mut(ino)?.write(offset, data, now, claim)?)
}

/// `write` with `O_APPEND`: writes at the end of the file, atomically; returns the offset.
pub(crate) fn append(
    s: &mut impl Store,
    ino: Ino,
    data: &[u8],
    now: Timespec,
    claim: &dyn Fn() -> bool,
) -> Result<(u64, usize), FsError> {
    let inode = s.inode_mut(ino)?;
    let at = inode.size;
    let n = inode.write(at, data, now, claim)?;
    Ok((at, n))
}

/// Makes pages of file `ino` shared (see [`crate::FileSystem::share_pages`]); `claim` says
/// whether this application fills the frames.
pub(crate) fn share_pages(
    s: &mut impl Store,
    ino: Ino,
    first: u64,
    frames: &[usize],
    claim: &dyn Fn() -> bool,
) -> Result<usize, FsError> {
    Ok(s.inode_mut(ino)?.share_pages(first, frames, claim)?)
}

/// `ftruncate` on inode `ino`.
pub(crate) fn truncate(
    s: &mut impl Store,
    ino: Ino,
    size: u64,
    now: Timespec,
    claim: &dyn Fn() -> bool,
) -> Result<(), FsError> {
    Ok(s.inode_mut(ino)?.truncate(size, now, claim)?)
}

/// `chmod`: sets the permission bits (EOPNOTSUPP on a symlink, as `fchmodat(AT_SYMLINK_NOFOLLOW)`).
pub(crate) fn chmod(s: &mut impl Store, ino: Ino, mode: u32, now: Timespec) -> Result<(), FsError> {
    let inode = s.inode_mut(ino)?;
    if inode.kind == Kind::Symlink {
        return Err(Errno::EOPNOTSUPP.into());
    }
    inode.mode = mode & 0o7777;
    inode.ctime = now;
    Ok(())
}

/// `chown`: sets the owner and/or group; like Linux, clears set-user-ID and (if group-
/// executable) set-group-ID on everything but directories.
pub(crate) fn chown(
    s: &mut impl Store,
    ino: Ino,
    uid: Option<u32>,
    gid: Option<u32>,
    now: Timespec,
) -> Result<(), FsError> {
    let inode = s.inode_mut(ino)?;
    if let Some(uid) = uid {
        inode.uid = uid;
    }
    if let Some(gid) = gid {
        inode.gid = gid;
    }
    if inode.kind != Kind::Dir {
        inode.mode &= !S_ISUID;
        if inode.mode & S_IXGRP != 0 {
            inode.mode &= !S_ISGID;
        }
    }
    inode.ctime = now;
    Ok(())
}

/// `utimensat`: sets the given times (`None` is `UTIME_OMIT`); changes ctime unless both are
/// omitted.
pub(crate) fn set_times(
    s: &mut impl Store,
    ino: Ino,
    atime: Option<Timespec>,
    mtime: Option<Timespec>,
    now: Timespec,
) -> Result<(), FsError> {
    let inode = s.inode_mut(ino)?;
    if atime.is_none() && mtime.is_none() {
        return Ok(());
    }
    if let Some(t) = atime {
        inode.atime = t;
    }
    if let Some(t) = mtime {
        inode.mtime = t;
    }
    inode.ctime = now;
    Ok(())
}

/// Counts one more open file description of `ino`.
pub(crate) fn open(s: &mut impl Store, ino: Ino) -> Result<(), FsError> {
    let inode = s.inode_mut(ino)?;
    inode.opens = inode.opens.checked_add(1).ok_or(Errno::ENFILE)?;
    Ok(())
}

/// `open` of entry `name` in `dir` (planned by [`crate::walk::plan_open`]): counts one more
/// open of the inode the entry names now, and returns it. ENOENT if the entry is gone; a
/// symlink to follow is `Stale` (it replaced what was planned; the caller follows it and
/// retries); ENOTDIR if `must_be_dir` and it is not a directory.
pub(crate) fn open_entry(
    s: &mut impl Store,
    dir: Ino,
    name: &[u8],
    follow: bool,
    must_be_dir: bool,
) -> Result<Ino, FsError> {
    let e = entry(s, dir, name)?.ok_or(Errno::ENOENT)?;
    if e.kind == Kind::Symlink && (follow || must_be_dir) {
        return Err(FsError::Stale);
    }
    if must_be_dir && e.kind != Kind::Dir {
        return Err(Errno::ENOTDIR.into());
    }
    open(s, e.ino)?;
    Ok(e.ino)
}

/// Drops one open file description of `ino`, freeing the inode if it was its last reference.
pub(crate) fn close(s: &mut impl Store, ino: Ino) -> Result<(), FsError> {
    let inode = s.inode_mut(ino)?;
    if inode.opens == 0 {
        return Err(Errno::EBADF.into());
    }
    inode.opens -= 1;
    release(s, ino)
}

/// Upper bound used by callers that check a last component before looking it up.
pub(crate) const fn name_too_long(name: &[u8]) -> bool {
    name.len() > NAME_MAX
}
