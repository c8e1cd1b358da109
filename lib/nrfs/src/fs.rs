//! The sequential file system (layer 1).

use alloc::collections::BTreeMap;
use alloc::vec::Vec;

use abi::Errno;

use crate::inode::{Body, Dir, Inode};
use crate::ops::{self, NewKind, RenameArgs, Store};
use crate::walk::{self, Namespace};
use crate::{
    Attrs, CreateFlags, Created, DirEntry, FsError, FsStats, Ino, Kind, Last, Lent, ParentPath,
    Stat, Timespec, PAGE_SIZE, ROOT_INO,
};

/// The whole inode table as a [`Store`]: nothing is ever stale.
impl Store for BTreeMap<Ino, Inode> {
    fn get(&self, ino: Ino) -> Result<Option<&Inode>, FsError> {
        Ok(BTreeMap::get(self, &ino))
    }

    fn get_mut(&mut self, ino: Ino) -> Result<Option<&mut Inode>, FsError> {
        Ok(BTreeMap::get_mut(self, &ino))
    }

    fn insert(&mut self, ino: Ino, inode: Inode) -> Result<(), FsError> {
        BTreeMap::insert(self, ino, inode);
        Ok(())
    }

    fn remove(&mut self, ino: Ino) -> Result<(), FsError> {
        BTreeMap::remove(self, &ino);
        Ok(())
    }
}

/// Reads of one inode table (a [`FileSystem`] or one shard of a replica).
pub(crate) fn ns_kind(t: &BTreeMap<Ino, Inode>, ino: Ino) -> Result<Kind, Errno> {
    t.get(&ino).map(|i| i.kind).ok_or(Errno::ENOENT)
}

pub(crate) fn ns_lookup(
    t: &BTreeMap<Ino, Inode>,
    dir: Ino,
    name: &[u8],
) -> Result<Option<(Ino, Kind)>, Errno> {
    let d = t.get(&dir).ok_or(Errno::ENOENT)?.dir()?;
    Ok(d.get(name).map(|s| (s.ino, s.kind)))
}

pub(crate) fn ns_parent(t: &BTreeMap<Ino, Inode>, dir: Ino) -> Result<Ino, Errno> {
    Ok(t.get(&dir).ok_or(Errno::ENOENT)?.dir()?.parent)
}

pub(crate) fn ns_link_target(t: &BTreeMap<Ino, Inode>, ino: Ino) -> Result<Vec<u8>, Errno> {
    match &t.get(&ino).ok_or(Errno::ENOENT)?.body {
        Body::Symlink(target) => Ok(target.clone()),
        _ => Err(Errno::EINVAL),
    }
}

pub(crate) fn ns_read_dir(
    t: &BTreeMap<Ino, Inode>,
    dir: Ino,
    cookie: u64,
    max: usize,
) -> Result<Vec<DirEntry>, Errno> {
    let inode = t.get(&dir).ok_or(Errno::ENOENT)?;
    let d = inode.dir()?;
    if inode.is_dead_dir() {
        return Err(Errno::ENOENT);
    }
    Ok(d.list(dir, cookie, max))
}

pub(crate) fn ns_stats(t: &BTreeMap<Ino, Inode>) -> FsStats {
    let pages: u64 = t.values().map(Inode::pages).sum();
    FsStats {
        inodes: t.len() as u64,
        pages,
        bytes: pages * PAGE_SIZE as u64,
    }
}

/// Maps the internal result of an operation on the whole table (never stale) to an errno.
pub(crate) fn errno<T>(r: Result<T, FsError>) -> Result<T, Errno> {
    r.map_err(|e| match e {
        FsError::Errno(e) => e,
        // Unreachable on a whole table; reported rather than trusted.
        FsError::Stale => Errno::EIO,
    })
}

/// A sequential in-memory POSIX file system with Linux semantics.
///
/// Updates take `&mut self`, reads `&self`. Every operation that sets times takes the time
/// (`now`) as an argument, and every operation that creates an inode takes its number and
/// attributes, so that replicas applying the same operations reach the same state. There are
/// no permission checks: the caller (the kernel's system-call layer) does them.
///
/// Paths are byte strings resolved relative to a directory inode (`start`), or from the root
/// ([`ROOT_INO`]) when absolute. See the crate documentation for the Linux rules followed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileSystem {
    inodes: BTreeMap<Ino, Inode>,
}

impl Namespace for FileSystem {
    fn kind(&self, ino: Ino) -> Result<Kind, Errno> {
        ns_kind(&self.inodes, ino)
    }

    fn lookup(&self, dir: Ino, name: &[u8]) -> Result<Option<(Ino, Kind)>, Errno> {
        ns_lookup(&self.inodes, dir, name)
    }

    fn parent(&self, dir: Ino) -> Result<Ino, Errno> {
        ns_parent(&self.inodes, dir)
    }

    fn link_target(&self, ino: Ino) -> Result<Vec<u8>, Errno> {
        ns_link_target(&self.inodes, ino)
    }

    fn covered(&self, _: Ino) -> bool {
        false
    }
}

impl FileSystem {
    /// An empty file system: a root directory (inode [`ROOT_INO`]) with `root` attributes
    /// (e.g. mode `0o755`, owner 0:0), created at `now`.
    pub fn new(root: Attrs, now: Timespec) -> Self {
        let mut inodes = BTreeMap::new();
        let mut inode = Inode::new(Kind::Dir, &root, now, Body::Dir(Dir::new(ROOT_INO)));
        inode.nlink = 2;
        inodes.insert(ROOT_INO, inode);
        Self { inodes }
    }

    /// Builds a file system from inodes (used to merge the shards of a replica).
    pub(crate) fn from_inodes(inodes: BTreeMap<Ino, Inode>) -> Self {
        Self { inodes }
    }

    /// The inode table (used to split a file system into shards).
    pub(crate) fn into_inodes(self) -> BTreeMap<Ino, Inode> {
        self.inodes
    }

    /// One more than the largest inode number in use: a number `create` and friends accept.
    pub fn unused_ino(&self) -> Ino {
        self.inodes.keys().next_back().map_or(ROOT_INO, |&i| i) + 1
    }

    /// Resolves `path` from directory `start` to an inode.
    ///
    /// Absolute paths start at the root; `.` and `..` are followed (`..` of the root is the
    /// root); symlinks in the path are followed, and one in the last component too if
    /// `follow_last` is set or the path ends in `/`. Errors: ENOENT (a missing component or
    /// an empty path), ENOTDIR (a component that is not a directory, or a trailing `/` on a
    /// non-directory), ENAMETOOLONG (a component over 255 bytes or a path over 4095), ELOOP
    /// (more than 40 symlinks followed).
    pub fn resolve(&self, start: Ino, path: &[u8], follow_last: bool) -> Result<Ino, Errno> {
        walk::resolve(self, start, path, follow_last).map(|(ino, _)| ino)
    }

    /// Resolves all but the last component of `path` (following symlinks there) and returns
    /// the directory, the last component and whether the path ended in `/`.
    pub fn resolve_parent(&self, start: Ino, path: &[u8]) -> Result<ParentPath, Errno> {
        walk::resolve_parent(self, start, path)
    }

    /// Looks up one component (`.` and `..` included) in directory `dir`.
    pub fn lookup(&self, dir: Ino, name: &[u8]) -> Result<Ino, Errno> {
        match name {
            b"." => self.kind(dir).and_then(|k| match k {
                Kind::Dir => Ok(dir),
                _ => Err(Errno::ENOTDIR),
            }),
            b".." => self.parent(dir),
            _ if ops::name_too_long(name) => Err(Errno::ENAMETOOLONG),
            _ => ns_lookup(&self.inodes, dir, name)?
                .map(|(ino, _)| ino)
                .ok_or(Errno::ENOENT),
        }
    }

    /// `open(path, O_CREAT [| O_EXCL])`: creates a regular file with inode number `ino`, or
    /// finds the existing file.
    ///
    /// A symlink in the last component is followed (and a dangling one's target created)
    /// unless `flags.exclusive`, which makes any existing name EEXIST. An existing directory,
    /// `.`, `..`, `/` or a trailing `/` is EISDIR. With `flags.open` the result is also
    /// counted as open (see [`FileSystem::open`]). EINVAL if inode `ino` already exists.
    pub fn create(
        &mut self,
        start: Ino,
        path: &[u8],
        ino: Ino,
        attrs: Attrs,
        flags: CreateFlags,
        now: Timespec,
    ) -> Result<Created, Errno> {
        let t = walk::plan_create(self, start, path, flags.exclusive)?;
        errno(ops::create(
            &mut self.inodes,
            t.dir,
            &t.name,
            ino,
            &attrs,
            flags,
            now,
        ))
    }

    /// `open(dir, O_TMPFILE)`: creates regular file `ino` with no name, counted as open once
    /// (see [`FileSystem::open`]), in the directory `path` names (which only decides the file
    /// system and the group a set-group-ID directory gives). ENOTDIR if it is not a
    /// directory, ENOENT if it was removed, EINVAL if inode `ino` already exists.
    pub fn tmpfile(
        &mut self,
        start: Ino,
        path: &[u8],
        ino: Ino,
        attrs: Attrs,
        now: Timespec,
    ) -> Result<(), Errno> {
        let dir = self.resolve(start, path, true)?;
        errno(ops::tmpfile(&mut self.inodes, dir, ino, &attrs, now))
    }

    fn make(
        &mut self,
        start: Ino,
        path: &[u8],
        ino: Ino,
        attrs: Attrs,
        what: NewKind<'_>,
        now: Timespec,
    ) -> Result<Ino, Errno> {
        if let NewKind::Symlink(target) = what {
            walk::check_path(target)?;
        }
        let (dir, name, trailing) = walk::plan_new_name(self, start, path)?;
        errno(ops::make(
            &mut self.inodes,
            dir,
            &name,
            trailing,
            ino,
            &attrs,
            what,
            now,
        ))
    }

    /// `mkdir`: creates directory `ino` (mode bits `0o1777` of `attrs.mode` kept). EEXIST if
    /// the name exists (or is `.`, `..`, `/`); ENOENT in a removed directory.
    pub fn mkdir(
        &mut self,
        start: Ino,
        path: &[u8],
        ino: Ino,
        attrs: Attrs,
        now: Timespec,
    ) -> Result<Ino, Errno> {
        self.make(start, path, ino, attrs, NewKind::Dir, now)
    }

    /// `symlink(target, path)`: creates symlink `ino` (mode `0o777`). ENOENT for an empty
    /// target, ENAMETOOLONG for one of 4096 bytes or more; EEXIST if the name exists; ENOENT
    /// if `path` ends in `/`.
    pub fn symlink(
        &mut self,
        target: &[u8],
        start: Ino,
        path: &[u8],
        ino: Ino,
        attrs: Attrs,
        now: Timespec,
    ) -> Result<Ino, Errno> {
        self.make(start, path, ino, attrs, NewKind::Symlink(target), now)
    }

    /// `mknod(path, S_IFCHR | mode, rdev)`: creates character device `ino`.
    pub fn mknod(
        &mut self,
        start: Ino,
        path: &[u8],
        ino: Ino,
        attrs: Attrs,
        rdev: u64,
        now: Timespec,
    ) -> Result<Ino, Errno> {
        self.make(start, path, ino, attrs, NewKind::CharDev(rdev), now)
    }

    /// `mknod(path, S_IFIFO | mode)` (`mkfifo`): creates FIFO `ino` (mode bits `0o7777` of
    /// `attrs.mode` kept). Errors as [`FileSystem::mknod`]: EEXIST if the name exists, ENOENT
    /// for a missing directory or a trailing `/`.
    pub fn mkfifo(
        &mut self,
        start: Ino,
        path: &[u8],
        ino: Ino,
        attrs: Attrs,
        now: Timespec,
    ) -> Result<Ino, Errno> {
        self.make(start, path, ino, attrs, NewKind::Fifo, now)
    }

    /// `linkat`: adds the name `new_path` for the inode at `old_path` (whose last symlink is
    /// followed only with `follow`, i.e. `AT_SYMLINK_FOLLOW`). EEXIST if the new name exists,
    /// EPERM for a directory.
    pub fn link(
        &mut self,
        old_start: Ino,
        old_path: &[u8],
        new_start: Ino,
        new_path: &[u8],
        follow: bool,
        now: Timespec,
    ) -> Result<(), Errno> {
        let ino = self.resolve(old_start, old_path, follow)?;
        let (dir, name, trailing) = walk::plan_new_name(self, new_start, new_path)?;
        errno(ops::link(&mut self.inodes, ino, dir, &name, trailing, now))
    }

    /// `unlink`: removes a name that is not a directory (EISDIR for a directory, `.`, `..`
    /// or `/`; ENOTDIR for a trailing `/` on a non-directory). The inode is freed when it has
    /// no names and is not open.
    pub fn unlink(&mut self, start: Ino, path: &[u8], now: Timespec) -> Result<(), Errno> {
        let p = self.resolve_parent(start, path)?;
        let Last::Name(name) = p.last else {
            return Err(Errno::EISDIR);
        };
        errno(ops::unlink(
            &mut self.inodes,
            p.dir,
            &name,
            p.trailing_slash,
            now,
        ))
    }

    /// `rmdir`: removes an empty directory. EINVAL for `.`, ENOTEMPTY for `..` or a
    /// non-empty directory, EBUSY for `/`, ENOTDIR for a non-directory.
    pub fn rmdir(&mut self, start: Ino, path: &[u8], now: Timespec) -> Result<(), Errno> {
        let p = self.resolve_parent(start, path)?;
        let name = walk::rmdir_name(p.last)?;
        errno(ops::rmdir(&mut self.inodes, p.dir, &name, now))
    }

    /// `renameat2(old, new, flags)` with `flags` a combination of [`crate::RENAME_NOREPLACE`]
    /// and [`crate::RENAME_EXCHANGE`] (others are EINVAL), with Linux's rules: EBUSY for `.`,
    /// `..` or `/` as source (EEXIST as target with NOREPLACE), EINVAL to move a directory into
    /// its own subtree, ENOTEMPTY over a non-empty directory or an ancestor of the source,
    /// ENOTDIR for a directory over a non-directory, EISDIR for the reverse, EEXIST with
    /// NOREPLACE, ENOENT for a missing side, and nothing at all when both names are the
    /// same inode.
    pub fn rename(
        &mut self,
        old_start: Ino,
        old_path: &[u8],
        new_start: Ino,
        new_path: &[u8],
        flags: u32,
        now: Timespec,
    ) -> Result<(), Errno> {
        ops::check_rename_flags(flags)?;
        let old = self.resolve_parent(old_start, old_path)?;
        let new = self.resolve_parent(new_start, new_path)?;
        let (old_name, new_name) = walk::rename_names(old.last, new.last, flags)?;
        errno(ops::rename(
            &mut self.inodes,
            &RenameArgs {
                old_dir: old.dir,
                old_name: &old_name,
                old_trailing: old.trailing_slash,
                new_dir: new.dir,
                new_name: &new_name,
                new_trailing: new.trailing_slash,
                flags,
                now,
            },
        ))
    }

    /// `pread`: reads from `offset` into `buf`; returns the number of bytes read (0 at or
    /// past the end; holes read as zeros). EISDIR for a directory, EINVAL for a symlink,
    /// device or FIFO, ENOENT for a missing inode.
    pub fn read(&self, ino: Ino, offset: u64, buf: &mut [u8]) -> Result<usize, Errno> {
        self.inode(ino)?.read(offset, buf)
    }

    /// Lends `count` pages of file `ino` from page index `first` to a mapping (see
    /// [`crate::PageSharing`]): each page's address and whether it is shared, `None` for a hole
    /// or a page past the end. Errors as [`FileSystem::read`], and EOPNOTSUPP without a page
    /// sharing installed.
    pub fn lend_pages(
        &self,
        ino: Ino,
        first: u64,
        count: usize,
    ) -> Result<Vec<Option<Lent>>, Errno> {
        self.inode(ino)?.lend_pages(first, count)
    }

    /// Makes the pages of file `ino` from index `first` shared (see [`crate::set_page_sharing`]), each page
    /// not shared yet taking the next frame of `frames` (address of a zeroed or any page: its
    /// contents become the file's page's) as far as the file goes; returns how many were taken
    /// (the caller gives back the others). Errors as [`FileSystem::write`].
    pub fn share_pages(&mut self, ino: Ino, first: u64, frames: &[usize]) -> Result<usize, Errno> {
        errno(ops::share_pages(
            &mut self.inodes,
            ino,
            first,
            frames,
            &|| true,
        ))
    }

    /// `pwrite`: writes `data` at `offset` (extending the file, leaving holes); returns the
    /// bytes written. EFBIG at or past [`crate::MAX_FILE_SIZE`]; errors as [`FileSystem::read`].
    pub fn write(
        &mut self,
        ino: Ino,
        offset: u64,
        data: &[u8],
        now: Timespec,
    ) -> Result<usize, Errno> {
        errno(ops::write(
            &mut self.inodes,
            ino,
            offset,
            data,
            now,
            &|| true,
        ))
    }

    /// `write` with `O_APPEND`: writes `data` at the end of the file in one step; returns the
    /// offset it was written at.
    pub fn append(&mut self, ino: Ino, data: &[u8], now: Timespec) -> Result<u64, Errno> {
        errno(ops::append(&mut self.inodes, ino, data, now, &|| true)).map(|(at, _)| at)
    }

    /// `ftruncate`: sets the size (freeing pages past it). EISDIR for a directory, EINVAL for
    /// other non-files, EFBIG past [`crate::MAX_FILE_SIZE`].
    pub fn truncate(&mut self, ino: Ino, size: u64, now: Timespec) -> Result<(), Errno> {
        errno(ops::truncate(&mut self.inodes, ino, size, now, &|| true))
    }

    /// `stat` of inode `ino`.
    pub fn stat(&self, ino: Ino) -> Result<Stat, Errno> {
        Ok(self.inode(ino)?.stat(ino))
    }

    /// `chmod`: sets the permission bits (`mode & 0o7777`). EOPNOTSUPP on a symlink.
    pub fn chmod(&mut self, ino: Ino, mode: u32, now: Timespec) -> Result<(), Errno> {
        errno(ops::chmod(&mut self.inodes, ino, mode, now))
    }

    /// `chown`: sets the owner and/or group (`None` is `-1`), clearing set-user-ID and
    /// set-group-ID (if group-executable) on non-directories like Linux.
    pub fn chown(
        &mut self,
        ino: Ino,
        uid: Option<u32>,
        gid: Option<u32>,
        now: Timespec,
    ) -> Result<(), Errno> {
        errno(ops::chown(&mut self.inodes, ino, uid, gid, now))
    }

    /// `utimensat`: sets access and/or modification time (`None` is `UTIME_OMIT`; the caller
    /// turns `UTIME_NOW` into `now`). Reads never change the access time (NR-FS reads are not
    /// logged), so atime changes only here.
    pub fn set_times(
        &mut self,
        ino: Ino,
        atime: Option<Timespec>,
        mtime: Option<Timespec>,
        now: Timespec,
    ) -> Result<(), Errno> {
        errno(ops::set_times(&mut self.inodes, ino, atime, mtime, now))
    }

    /// `readlink`: the target of symlink `ino` (EINVAL if it is not a symlink).
    pub fn readlink(&self, ino: Ino) -> Result<Vec<u8>, Errno> {
        ns_link_target(&self.inodes, ino)
    }

    /// Lists directory `dir` from `cookie` (0 for the start), at most `max_entries` entries,
    /// `.` and `..` first. Each entry carries the cookie to continue after it. Cookies are
    /// insertion sequence numbers: an entry that exists during the whole listing appears
    /// exactly once even if others are created, removed or renamed between calls. ENOTDIR
    /// for a non-directory, ENOENT for a removed directory.
    pub fn read_dir(
        &self,
        dir: Ino,
        cookie: u64,
        max_entries: usize,
    ) -> Result<Vec<DirEntry>, Errno> {
        ns_read_dir(&self.inodes, dir, cookie, max_entries)
    }

    /// Counts one more open file description of `ino` (ENOENT if it does not exist). An
    /// open inode outlives its last name until [`FileSystem::close`].
    pub fn open(&mut self, ino: Ino) -> Result<(), Errno> {
        errno(ops::open(&mut self.inodes, ino))
    }

    /// Resolves `path` and counts an open of the result in one step.
    pub fn open_path(&mut self, start: Ino, path: &[u8], follow_last: bool) -> Result<Ino, Errno> {
        let ino = self.resolve(start, path, follow_last)?;
        self.open(ino)?;
        Ok(ino)
    }

    /// Drops an open of `ino` (EBADF if it has none), freeing it if it has no names left.
    pub fn close(&mut self, ino: Ino) -> Result<(), Errno> {
        errno(ops::close(&mut self.inodes, ino))
    }

    /// Totals for `statfs`.
    pub fn statfs(&self) -> FsStats {
        ns_stats(&self.inodes)
    }

    /// Whether inode `ino` exists.
    pub fn exists(&self, ino: Ino) -> bool {
        self.inodes.contains_key(&ino)
    }

    fn inode(&self, ino: Ino) -> Result<&Inode, Errno> {
        self.inodes.get(&ino).ok_or(Errno::ENOENT)
    }
}
