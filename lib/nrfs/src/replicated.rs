//! The replicated file system (layer 2): NR-FS as a CNR structure.

use alloc::boxed::Box;
use alloc::collections::BTreeMap;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicU64, Ordering};

use crate::{Lent, Offer};
use abi::Errno;
use nr::cnr::{Dispatch, LogMapper, LogSet, Logs, Replica, MAX_LOGS};
use nr::{Payload, ReplicaToken, MAX_REPLICAS_PER_LOG};
use spin::{Mutex, RwLock, RwLockWriteGuard};

use crate::fs::{ns_kind, ns_link_target, ns_lookup, ns_parent, ns_read_dir, ns_stats};
use crate::inode::Inode;
use crate::ops::{self, NewKind, RenameArgs, Store};
use crate::walk::{self, Namespace, OpenTarget};
use crate::{
    Attrs, CreateFlags, Created, DirEntry, FileSystem, FsError, FsStats, Ino, Kind, Last,
    ParentPath, Stat, Timespec, NAME_MAX, ROOT_INO,
};

/// How many extra inodes (besides those it names) a namespace operation can declare.
pub const MAX_SCOPE: usize = 2;

/// Stale rounds before a namespace operation falls back to a scan over all logs.
const STALE_RETRIES: usize = 4;

/// The log (and shard) of inode `ino`.
fn log_of(ino: Ino, nlogs: usize) -> usize {
    (ino % nlogs as u64) as usize
}

/// Which logs a namespace operation is appended to, besides those of the inodes it names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scope {
    /// The logs of up to [`MAX_SCOPE`] more inodes the operation is expected to touch (the
    /// entry it removes or replaces, the file it opens, the inode it moves).
    Also([Option<Ino>; MAX_SCOPE]),
    /// Every log: the operation can touch any inode and is never stale.
    All,
}

/// An operation on names, applied to a directory and a name the client already resolved
/// (see the crate documentation). The `trailing` fields say the path ended in `/`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NamespaceOp {
    /// [`FileSystem::create`] of `name` in `dir` as inode `ino`.
    Create {
        /// Directory.
        dir: Ino,
        /// Name of the file.
        name: Vec<u8>,
        /// Number of the new inode.
        ino: Ino,
        /// Attributes of the new inode.
        attrs: Attrs,
        /// `O_EXCL` and open-in-the-same-step.
        flags: CreateFlags,
    },
    /// [`FileSystem::open_path`] of entry `name` in `dir`, as [`walk::plan_open`] found it.
    Open {
        /// Directory.
        dir: Ino,
        /// Name of the entry.
        name: Vec<u8>,
        /// A symlink there is to be followed (it makes the operation stale).
        follow: bool,
        /// The path ended in `/`.
        must_be_dir: bool,
    },
    /// [`FileSystem::open_path`] of directory `dir`, reached by `.`, `..` or `/` (no rename
    /// can put another inode in its place).
    OpenDir {
        /// Directory.
        dir: Ino,
    },
    /// [`FileSystem::mkdir`].
    Mkdir {
        /// Directory.
        dir: Ino,
        /// Name of the new directory.
        name: Vec<u8>,
        /// Whether the path ended in `/`.
        trailing: bool,
        /// Number of the new inode.
        ino: Ino,
        /// Attributes of the new inode.
        attrs: Attrs,
    },
    /// [`FileSystem::symlink`].
    Symlink {
        /// Directory.
        dir: Ino,
        /// Name of the link.
        name: Vec<u8>,
        /// Whether the path ended in `/`.
        trailing: bool,
        /// Number of the new inode.
        ino: Ino,
        /// Attributes of the new inode (mode is ignored).
        attrs: Attrs,
        /// The link's contents.
        target: Vec<u8>,
    },
    /// [`FileSystem::mknod`] of a character device.
    Mknod {
        /// Directory.
        dir: Ino,
        /// Name of the device.
        name: Vec<u8>,
        /// Whether the path ended in `/`.
        trailing: bool,
        /// Number of the new inode.
        ino: Ino,
        /// Attributes of the new inode.
        attrs: Attrs,
        /// Device number.
        rdev: u64,
    },
    /// [`FileSystem::tmpfile`]: file `ino` without a name, beside `dir`.
    Tmpfile {
        /// The directory.
        dir: Ino,
        /// Number of the new inode.
        ino: Ino,
        /// Attributes of the new inode.
        attrs: Attrs,
    },
    /// [`FileSystem::mkfifo`].
    Mkfifo {
        /// Directory.
        dir: Ino,
        /// Name of the FIFO.
        name: Vec<u8>,
        /// Whether the path ended in `/`.
        trailing: bool,
        /// Number of the new inode.
        ino: Ino,
        /// Attributes of the new inode.
        attrs: Attrs,
    },
    /// [`FileSystem::link`]: a new name `name` in `dir` for `ino`.
    Link {
        /// The existing inode.
        ino: Ino,
        /// Directory of the new name.
        dir: Ino,
        /// The new name.
        name: Vec<u8>,
        /// Whether the new path ended in `/`.
        trailing: bool,
    },
    /// [`FileSystem::unlink`].
    Unlink {
        /// Directory.
        dir: Ino,
        /// Name to remove.
        name: Vec<u8>,
        /// Whether the path ended in `/`.
        trailing: bool,
    },
    /// [`FileSystem::rmdir`].
    Rmdir {
        /// Directory.
        dir: Ino,
        /// Name of the directory to remove.
        name: Vec<u8>,
    },
    /// [`FileSystem::rename`].
    Rename {
        /// Directory of the source.
        old_dir: Ino,
        /// Name of the source.
        old_name: Vec<u8>,
        /// Whether the source path ended in `/`.
        old_trailing: bool,
        /// Directory of the target.
        new_dir: Ino,
        /// Name of the target.
        new_name: Vec<u8>,
        /// Whether the target path ended in `/`.
        new_trailing: bool,
        /// `RENAME_*` flags.
        flags: u32,
    },
}

impl NamespaceOp {
    /// The inodes the operation names.
    fn named(&self) -> [Option<Ino>; 2] {
        match *self {
            NamespaceOp::Create { dir, ino, .. }
            | NamespaceOp::Mkdir { dir, ino, .. }
            | NamespaceOp::Symlink { dir, ino, .. }
            | NamespaceOp::Mknod { dir, ino, .. }
            | NamespaceOp::Tmpfile { dir, ino, .. }
            | NamespaceOp::Mkfifo { dir, ino, .. }
            | NamespaceOp::Link { dir, ino, .. } => [Some(dir), Some(ino)],
            NamespaceOp::Open { dir, .. }
            | NamespaceOp::OpenDir { dir }
            | NamespaceOp::Unlink { dir, .. }
            | NamespaceOp::Rmdir { dir, .. } => [Some(dir), None],
            NamespaceOp::Rename {
                old_dir, new_dir, ..
            } => [Some(old_dir), Some(new_dir)],
        }
    }
}

/// The update operations of [`ShardedFs`] (stored in the logs).
#[derive(Clone, Debug)]
pub enum FsUpdate {
    /// An operation on names; a scan when its inodes are in several logs.
    Namespace {
        /// The operation.
        op: NamespaceOp,
        /// Further inodes it touches.
        scope: Scope,
        /// The time.
        now: Timespec,
    },
    /// [`FileSystem::write`]; the data lives outside the log until every replica wrote it.
    Write {
        /// File.
        ino: Ino,
        /// Position.
        offset: u64,
        /// The bytes, shared by all replicas.
        data: Payload<Vec<u8>>,
        /// The time.
        now: Timespec,
    },
    /// [`FileSystem::append`].
    Append {
        /// File.
        ino: Ino,
        /// The bytes, shared by all replicas.
        data: Payload<Vec<u8>>,
        /// The time.
        now: Timespec,
    },
    /// [`FileSystem::share_pages`]: the frames, shared by all replicas; the first replica to
    /// apply it fills them.
    SharePages {
        /// File.
        ino: Ino,
        /// First page index.
        first: u64,
        /// The frames' addresses.
        frames: Payload<Vec<usize>>,
    },
    /// [`FileSystem::truncate`].
    Truncate {
        /// File.
        ino: Ino,
        /// New size.
        size: u64,
        /// The time.
        now: Timespec,
        /// Claimed by the first replica to apply it, which alone zeroes the tail of a shared
        /// page.
        once: Payload<()>,
    },
    /// [`FileSystem::chmod`].
    Chmod {
        /// Inode.
        ino: Ino,
        /// Permission bits.
        mode: u32,
        /// The time.
        now: Timespec,
    },
    /// [`FileSystem::chown`].
    Chown {
        /// Inode.
        ino: Ino,
        /// New owner, if any.
        uid: Option<u32>,
        /// New group, if any.
        gid: Option<u32>,
        /// The time.
        now: Timespec,
    },
    /// [`FileSystem::set_times`].
    SetTimes {
        /// Inode.
        ino: Ino,
        /// New access time, if any.
        atime: Option<Timespec>,
        /// New modification time, if any.
        mtime: Option<Timespec>,
        /// The time.
        now: Timespec,
    },
    /// [`FileSystem::open`].
    Open {
        /// Inode.
        ino: Ino,
    },
    /// [`FileSystem::close`].
    Close {
        /// Inode.
        ino: Ino,
    },
}

impl LogMapper for FsUpdate {
    fn hash(&self, nlogs: usize, logs: &mut LogSet) {
        logs.clear();
        match self {
            FsUpdate::Namespace { op, scope, .. } => match scope {
                Scope::All => logs.push_all(nlogs),
                Scope::Also(also) => {
                    for ino in op.named().iter().chain(also).flatten() {
                        logs.push(log_of(*ino, nlogs));
                    }
                }
            },
            FsUpdate::Write { ino, .. }
            | FsUpdate::Append { ino, .. }
            | FsUpdate::SharePages { ino, .. }
            | FsUpdate::Truncate { ino, .. }
            | FsUpdate::Chmod { ino, .. }
            | FsUpdate::Chown { ino, .. }
            | FsUpdate::SetTimes { ino, .. }
            | FsUpdate::Open { ino }
            | FsUpdate::Close { ino } => logs.push(log_of(*ino, nlogs)),
        }
    }
}

/// The read operations of [`ShardedFs`]: each reads one inode and runs on the local replica
/// after it caught up with that inode's log, without logging.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FsRead {
    /// One component in a directory: [`FsValue::Entry`].
    Lookup {
        /// Directory.
        dir: Ino,
        /// A single name (not `.` or `..`).
        name: Vec<u8>,
    },
    /// The kind of an inode: [`FsValue::Kind`].
    Kind {
        /// Inode.
        ino: Ino,
    },
    /// The parent of a directory: [`FsValue::Ino`].
    Parent {
        /// Directory.
        dir: Ino,
    },
    /// [`FileSystem::stat`]: [`FsValue::Stat`].
    Stat {
        /// Inode.
        ino: Ino,
    },
    /// [`FileSystem::read`] of up to `len` bytes: [`FsValue::Data`].
    Read {
        /// File.
        ino: Ino,
        /// Position.
        offset: u64,
        /// Most bytes to read.
        len: usize,
    },
    /// [`FileSystem::lend_pages`]: [`FsValue::Pages`].
    LendPages {
        /// File.
        ino: Ino,
        /// First page index.
        first: u64,
        /// Pages.
        count: usize,
    },
    /// [`FileSystem::readlink`]: [`FsValue::Data`].
    ReadLink {
        /// Symlink.
        ino: Ino,
    },
    /// [`FileSystem::read_dir`]: [`FsValue::Entries`].
    ReadDir {
        /// Directory.
        dir: Ino,
        /// Where to continue.
        cookie: u64,
        /// Most entries.
        max: usize,
    },
    /// Totals of one shard: [`FsValue::Stats`].
    ShardStats {
        /// The shard (log) index.
        shard: usize,
    },
}

impl LogMapper for FsRead {
    fn hash(&self, nlogs: usize, logs: &mut LogSet) {
        logs.clear();
        let log = match *self {
            FsRead::Lookup { dir, .. } | FsRead::Parent { dir } | FsRead::ReadDir { dir, .. } => {
                log_of(dir, nlogs)
            }
            FsRead::Kind { ino }
            | FsRead::Stat { ino }
            | FsRead::Read { ino, .. }
            | FsRead::LendPages { ino, .. }
            | FsRead::ReadLink { ino } => log_of(ino, nlogs),
            FsRead::ShardStats { shard } => shard % nlogs,
        };
        logs.push(log);
    }
}

/// The successful results of [`FsRead`] and [`FsUpdate`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FsValue {
    /// Done, nothing to return.
    Done,
    /// An inode number (new inode, parent).
    Ino(Ino),
    /// Result of a create.
    Created(Created),
    /// Result of a lookup: the entry, if any.
    Entry(Option<(Ino, Kind)>),
    /// The kind of an inode.
    Kind(Kind),
    /// Bytes written.
    Len(usize),
    /// An append: where it wrote and how much.
    Appended {
        /// Offset written at.
        offset: u64,
        /// Bytes written.
        len: usize,
    },
    /// Attributes.
    Stat(Stat),
    /// Bytes read, or a symlink's target.
    Data(Vec<u8>),
    /// Lent pages ([`FsRead::LendPages`]).
    Pages(Vec<Option<Lent>>),
    /// Directory entries.
    Entries(Vec<DirEntry>),
    /// Totals.
    Stats(FsStats),
}

/// An inode shard: the inodes of one log.
type Shard = BTreeMap<Ino, Inode>;

/// The write-locked shards of one operation, as a [`Store`]; other inodes are stale.
struct Locked<'a> {
    nshards: usize,
    guards: Vec<(usize, RwLockWriteGuard<'a, Shard>)>,
}

impl Locked<'_> {
    fn shard(&self, ino: Ino) -> Result<&Shard, FsError> {
        let j = log_of(ino, self.nshards);
        self.guards
            .iter()
            .find(|(k, _)| *k == j)
            .map(|(_, g)| &**g)
            .ok_or(FsError::Stale)
    }

    fn shard_mut(&mut self, ino: Ino) -> Result<&mut Shard, FsError> {
        let j = log_of(ino, self.nshards);
        self.guards
            .iter_mut()
            .find(|(k, _)| *k == j)
            .map(|(_, g)| &mut **g)
            .ok_or(FsError::Stale)
    }
}

impl Store for Locked<'_> {
    fn get(&self, ino: Ino) -> Result<Option<&Inode>, FsError> {
        Ok(self.shard(ino)?.get(&ino))
    }

    fn get_mut(&mut self, ino: Ino) -> Result<Option<&mut Inode>, FsError> {
        Ok(self.shard_mut(ino)?.get_mut(&ino))
    }

    fn insert(&mut self, ino: Ino, inode: Inode) -> Result<(), FsError> {
        self.shard_mut(ino)?.insert(ino, inode);
        Ok(())
    }

    fn remove(&mut self, ino: Ino) -> Result<(), FsError> {
        self.shard_mut(ino)?.remove(&ino);
        Ok(())
    }
}

/// Per-log operation counters of one replica, on their own cache lines.
#[repr(align(128))]
struct Row([AtomicU64; MAX_LOGS]);

impl Row {
    fn new() -> Self {
        Self(core::array::from_fn(|_| AtomicU64::new(0)))
    }
}

/// State shared by all replicas and clients of one [`NrFs`].
struct Shared {
    nlogs: usize,
    replicas: usize,
    root: Attrs,
    created_at: Timespec,
    /// The next inode number to hand out (allocated before an operation enters a log).
    next_ino: AtomicU64,
    /// Replicas created so far (held while creating one, so indices match log registration).
    created: Mutex<usize>,
    /// Operations appended per log, by the clients of each replica.
    submitted: Box<[Row]>,
    /// Operations applied per log, by each replica.
    applied: Box<[Row]>,
    /// Namespace operations that came back stale and were planned again.
    stale: AtomicU64,
    /// Directories other file systems are mounted on ([`NrFs::cover`]; 0: a free slot).
    covered: [AtomicU64; COVERED_MAX],
}

/// How many directories may be covered by other file systems at once ([`NrFs::cover`]).
pub const COVERED_MAX: usize = 8;

/// One replica's copy of the file system: inodes in one shard per log, each behind a
/// reader-writer lock. Implements [`nr::cnr::Dispatch`].
pub struct ShardedFs {
    shards: Box<[RwLock<Shard>]>,
    /// This replica's index (creation order).
    index: usize,
    shared: Arc<Shared>,
}

impl core::fmt::Debug for ShardedFs {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("ShardedFs")
            .field("replica", &self.index)
            .field("shards", &self.shards.len())
            .finish()
    }
}

impl ShardedFs {
    fn new(shared: Arc<Shared>, index: usize) -> Self {
        let mut shards: Vec<Shard> = (0..shared.nlogs).map(|_| BTreeMap::new()).collect();
        let initial = FileSystem::new(shared.root, shared.created_at);
        for (ino, inode) in initial.into_inodes() {
            shards[log_of(ino, shared.nlogs)].insert(ino, inode);
        }
        Self {
            shards: shards.into_iter().map(RwLock::new).collect(),
            index,
            shared,
        }
    }

    /// The whole replica as one [`FileSystem`] (read-locks each shard in turn; call it on a
    /// quiescent replica, e.g. inside [`nr::cnr::Replica::verify`], for a consistent copy).
    pub fn snapshot(&self) -> FileSystem {
        let mut all = BTreeMap::new();
        for shard in self.shards.iter() {
            all.extend(shard.read().iter().map(|(&i, n)| (i, n.clone())));
        }
        FileSystem::from_inodes(all)
    }

    fn shard(&self, ino: Ino) -> &RwLock<Shard> {
        &self.shards[log_of(ino, self.shards.len())]
    }

    fn apply(&self, op: FsUpdate, logs: &LogSet) -> Result<FsValue, FsError> {
        match op {
            FsUpdate::Namespace { op, now, .. } => {
                let mut s = Locked {
                    nshards: self.shards.len(),
                    guards: logs.iter().map(|j| (j, self.shards[j].write())).collect(),
                };
                apply_namespace(&mut s, op, now)
            }
            FsUpdate::Write {
                ino,
                offset,
                data,
                now,
            } => {
                // Every replica takes its reference exactly once, even if the write fails.
                let data = data.apply().ok_or(Errno::EIO)?;
                let claim = || data.claim();
                ops::write(
                    &mut *self.shard(ino).write(),
                    ino,
                    offset,
                    &data,
                    now,
                    &claim,
                )
                .map(FsValue::Len)
            }
            FsUpdate::Append { ino, data, now } => {
                let data = data.apply().ok_or(Errno::EIO)?;
                let claim = || data.claim();
                ops::append(&mut *self.shard(ino).write(), ino, &data, now, &claim)
                    .map(|(offset, len)| FsValue::Appended { offset, len })
            }
            FsUpdate::SharePages { ino, first, frames } => {
                let frames = frames.apply().ok_or(Errno::EIO)?;
                let claim = || frames.claim();
                ops::share_pages(&mut *self.shard(ino).write(), ino, first, &frames, &claim)
                    .map(FsValue::Len)
            }
            FsUpdate::Truncate {
                ino,
                size,
                now,
                once,
            } => {
                let once = once.apply().ok_or(Errno::EIO)?;
                let claim = || once.claim();
                ops::truncate(&mut *self.shard(ino).write(), ino, size, now, &claim).map(done)
            }
            FsUpdate::Chmod { ino, mode, now } => {
                ops::chmod(&mut *self.shard(ino).write(), ino, mode, now).map(done)
            }
            FsUpdate::Chown { ino, uid, gid, now } => {
                ops::chown(&mut *self.shard(ino).write(), ino, uid, gid, now).map(done)
            }
            FsUpdate::SetTimes {
                ino,
                atime,
                mtime,
                now,
            } => ops::set_times(&mut *self.shard(ino).write(), ino, atime, mtime, now).map(done),
            FsUpdate::Open { ino } => ops::open(&mut *self.shard(ino).write(), ino).map(done),
            FsUpdate::Close { ino } => ops::close(&mut *self.shard(ino).write(), ino).map(done),
        }
    }
}

fn done(_: ()) -> FsValue {
    FsValue::Done
}

fn apply_namespace(s: &mut Locked<'_>, op: NamespaceOp, now: Timespec) -> Result<FsValue, FsError> {
    match op {
        NamespaceOp::Create {
            dir,
            name,
            ino,
            attrs,
            flags,
        } => ops::create(s, dir, &name, ino, &attrs, flags, now).map(FsValue::Created),
        NamespaceOp::Open {
            dir,
            name,
            follow,
            must_be_dir,
        } => ops::open_entry(s, dir, &name, follow, must_be_dir).map(FsValue::Ino),
        NamespaceOp::OpenDir { dir } => ops::open(s, dir).map(|()| FsValue::Ino(dir)),
        NamespaceOp::Mkdir {
            dir,
            name,
            trailing,
            ino,
            attrs,
        } => ops::make(s, dir, &name, trailing, ino, &attrs, NewKind::Dir, now).map(FsValue::Ino),
        NamespaceOp::Symlink {
            dir,
            name,
            trailing,
            ino,
            attrs,
            target,
        } => ops::make(
            s,
            dir,
            &name,
            trailing,
            ino,
            &attrs,
            NewKind::Symlink(&target),
            now,
        )
        .map(FsValue::Ino),
        NamespaceOp::Mknod {
            dir,
            name,
            trailing,
            ino,
            attrs,
            rdev,
        } => ops::make(
            s,
            dir,
            &name,
            trailing,
            ino,
            &attrs,
            NewKind::CharDev(rdev),
            now,
        )
        .map(FsValue::Ino),
        NamespaceOp::Tmpfile { dir, ino, attrs } => {
            ops::tmpfile(s, dir, ino, &attrs, now).map(|()| FsValue::Ino(ino))
        }
        NamespaceOp::Mkfifo {
            dir,
            name,
            trailing,
            ino,
            attrs,
        } => ops::make(s, dir, &name, trailing, ino, &attrs, NewKind::Fifo, now).map(FsValue::Ino),
        NamespaceOp::Link {
            ino,
            dir,
            name,
            trailing,
        } => ops::link(s, ino, dir, &name, trailing, now).map(done),
        NamespaceOp::Unlink {
            dir,
            name,
            trailing,
        } => ops::unlink(s, dir, &name, trailing, now).map(done),
        NamespaceOp::Rmdir { dir, name } => ops::rmdir(s, dir, &name, now).map(done),
        NamespaceOp::Rename {
            old_dir,
            old_name,
            old_trailing,
            new_dir,
            new_name,
            new_trailing,
            flags,
        } => ops::rename(
            s,
            &RenameArgs {
                old_dir,
                old_name: &old_name,
                old_trailing,
                new_dir,
                new_name: &new_name,
                new_trailing,
                flags,
                now,
            },
        )
        .map(done),
    }
}

impl Dispatch for ShardedFs {
    type ReadOp = FsRead;
    type UpdateOp = FsUpdate;
    type Resp = Result<FsValue, FsError>;

    fn dispatch(&self, op: FsRead) -> Self::Resp {
        let r = match op {
            FsRead::Lookup { dir, name } => {
                ns_lookup(&self.shard(dir).read(), dir, &name).map(FsValue::Entry)
            }
            FsRead::Kind { ino } => ns_kind(&self.shard(ino).read(), ino).map(FsValue::Kind),
            FsRead::Parent { dir } => ns_parent(&self.shard(dir).read(), dir).map(FsValue::Ino),
            FsRead::Stat { ino } => self
                .shard(ino)
                .read()
                .get(&ino)
                .map(|i| FsValue::Stat(i.stat(ino)))
                .ok_or(Errno::ENOENT),
            FsRead::Read { ino, offset, len } => {
                let shard = self.shard(ino).read();
                shard.get(&ino).ok_or(Errno::ENOENT).and_then(|inode| {
                    // Never allocate more than the file has past `offset`.
                    let n = inode.size.saturating_sub(offset).min(len as u64) as usize;
                    // A size the caller chose: no memory is ENOMEM, not a panic.
                    let mut buf = Vec::new();
                    buf.try_reserve_exact(n).map_err(|_| Errno::ENOMEM)?;
                    buf.resize(n, 0);
                    let got = inode.read(offset, &mut buf)?;
                    buf.truncate(got);
                    Ok(FsValue::Data(buf))
                })
            }
            FsRead::LendPages { ino, first, count } => {
                let shard = self.shard(ino).read();
                shard
                    .get(&ino)
                    .ok_or(Errno::ENOENT)
                    .and_then(|inode| inode.lend_pages(first, count))
                    .map(FsValue::Pages)
            }
            FsRead::ReadLink { ino } => {
                ns_link_target(&self.shard(ino).read(), ino).map(FsValue::Data)
            }
            FsRead::ReadDir { dir, cookie, max } => {
                ns_read_dir(&self.shard(dir).read(), dir, cookie, max).map(FsValue::Entries)
            }
            FsRead::ShardStats { shard } => Ok(FsValue::Stats(ns_stats(
                &self.shards[shard % self.shards.len()].read(),
            ))),
        };
        r.map_err(FsError::Errno)
    }

    fn dispatch_mut(&self, op: FsUpdate) -> Self::Resp {
        let mut logs = LogSet::new();
        op.hash(self.shards.len(), &mut logs);
        let r = self.apply(op, &logs);
        if let Some(row) = self.shared.applied.get(self.index) {
            for j in logs.iter() {
                row.0[j].fetch_add(1, Ordering::Relaxed);
            }
        }
        r
    }
}

/// A replica of NR-FS (one per NUMA node).
pub type FsReplica = Replica<ShardedFs>;

/// Progress of one log, for a `/proc` file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LogStats {
    /// Log index.
    pub log: usize,
    /// Operations appended to this log by [`FsClient`]s (in flight included): the log's tail
    /// as far as NR-FS knows.
    pub submitted: u64,
    /// Operations of this log applied by each replica (its local tail), by replica index.
    pub applied: Vec<u64>,
}

/// The replicated file system: its logs and the state its replicas and clients share (the
/// inode-number counter, the statistics). Cloning it is cheap.
///
/// `lib/nr` keeps a log's tails private; `format!("{:?}", fs.logs())` prints each log's
/// `tail`, `ctail` and `head`, and [`NrFs::log_stats`] gives NR-FS's own counters.
#[derive(Clone)]
pub struct NrFs {
    logs: Arc<Logs<FsUpdate>>,
    shared: Arc<Shared>,
}

impl core::fmt::Debug for NrFs {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("NrFs")
            .field("logs", &self.shared.nlogs)
            .field("replicas", &self.shared.replicas)
            .finish()
    }
}

impl NrFs {
    /// Creates NR-FS with `nlogs` logs of `log_entries` entries each (a power of two) and
    /// all `replicas` replicas (each for up to `min(64, log_entries)` threads), with a root
    /// directory of mode `0o755` owned by 0:0 at time 0.
    ///
    /// The kernel, which creates each replica on a core of its node, uses
    /// [`NrFs::with_logs`] and [`NrFs::new_replica`] instead. EINVAL for 0 or more than 64
    /// logs, a log size that is not a power of two of at least 2, or 0 or more than 16
    /// replicas.
    pub fn new(
        nlogs: usize,
        log_entries: usize,
        replicas: usize,
    ) -> Result<(Self, Vec<Arc<FsReplica>>), Errno> {
        if log_entries < 2 || !log_entries.is_power_of_two() || !(1..=MAX_LOGS).contains(&nlogs) {
            return Err(Errno::EINVAL);
        }
        let fs = Self::with_logs(
            Logs::with_capacity(nlogs, log_entries),
            replicas,
            Attrs::new(0o755, 0, 0),
            Timespec::default(),
        )?;
        let threads = nr::DEFAULT_MAX_THREADS.min(log_entries);
        let replicas = (0..replicas)
            .map(|_| fs.new_replica(threads))
            .collect::<Result<Vec<_>, _>>()?;
        Ok((fs, replicas))
    }

    /// Wraps `logs` (e.g. built with a lag callback) for `replicas` replicas, with a root
    /// directory with attributes `root` created at `now`. Then create exactly `replicas`
    /// replicas with [`NrFs::new_replica`] before the first operation: write buffers are
    /// freed when that many replicas have applied them. EINVAL for 0 or more than 16 replicas.
    pub fn with_logs(
        logs: Logs<FsUpdate>,
        replicas: usize,
        root: Attrs,
        now: Timespec,
    ) -> Result<Self, Errno> {
        if !(1..=MAX_REPLICAS_PER_LOG).contains(&replicas) {
            return Err(Errno::EINVAL);
        }
        let nlogs = logs.len();
        Ok(Self {
            logs: Arc::new(logs),
            shared: Arc::new(Shared {
                nlogs,
                replicas,
                root,
                created_at: now,
                next_ino: AtomicU64::new(ROOT_INO + 1),
                created: Mutex::new(0),
                submitted: (0..replicas).map(|_| Row::new()).collect(),
                applied: (0..replicas).map(|_| Row::new()).collect(),
                stale: AtomicU64::new(0),
                covered: Default::default(),
            }),
        })
    }

    /// Creates the next replica (allocating on the calling core) for up to `max_threads`
    /// threads. ENOSPC once all replicas exist; EINVAL if `max_threads` is 0 or larger than
    /// a log. Must be called before any operation (`lib/nr` panics otherwise).
    pub fn new_replica(&self, max_threads: usize) -> Result<Arc<FsReplica>, Errno> {
        if max_threads == 0 || max_threads > self.logs.capacity() {
            return Err(Errno::EINVAL);
        }
        let mut created = self.shared.created.lock();
        if *created >= self.shared.replicas {
            return Err(Errno::ENOSPC);
        }
        let data = ShardedFs::new(self.shared.clone(), *created);
        let replica = Replica::with_data(&self.logs, data, max_threads);
        *created += 1;
        Ok(replica)
    }

    /// Registers the calling thread with `replica` and returns its handle; `None` when the
    /// replica has as many threads as it was created for.
    pub fn client(&self, replica: &Arc<FsReplica>) -> Option<FsClient> {
        let token = replica.register()?;
        Some(FsClient {
            fs: self.clone(),
            row: replica.id().min(self.shared.replicas - 1),
            replica: replica.clone(),
            token,
        })
    }

    /// The logs.
    pub fn logs(&self) -> &Arc<Logs<FsUpdate>> {
        &self.logs
    }

    /// Number of logs (and of shards per replica).
    pub fn nlogs(&self) -> usize {
        self.shared.nlogs
    }

    /// Number of replicas.
    pub fn replicas(&self) -> usize {
        self.shared.replicas
    }

    /// Allocates an inode number (shared by all replicas, never reused).
    pub fn alloc_ino(&self) -> Ino {
        self.shared.next_ino.fetch_add(1, Ordering::Relaxed)
    }

    /// Marks directory `dir` as covered by another file system mounted on it: a walk that
    /// reaches it after a symlink ends with `EXDEV` ([`walk::exit`] says where). Not
    /// replicated: it is where the kernel mounts, read by every client. EBUSY if it is covered
    /// already, ENOSPC past [`COVERED_MAX`] directories. Covers of one directory must not race
    /// (the kernel covers at boot and under its mount lock): the EBUSY check comes first.
    pub fn cover(&self, dir: Ino) -> Result<(), Errno> {
        if self.covered(dir) {
            return Err(Errno::EBUSY);
        }
        let free = self.shared.covered.iter().find(|c| {
            c.compare_exchange(0, dir, Ordering::AcqRel, Ordering::Relaxed)
                .is_ok()
        });
        free.map(drop).ok_or(Errno::ENOSPC)
    }

    /// Undoes [`NrFs::cover`] (nothing if `dir` was not covered).
    pub fn uncover(&self, dir: Ino) {
        for c in self.shared.covered.iter() {
            let _ = c.compare_exchange(dir, 0, Ordering::AcqRel, Ordering::Relaxed);
        }
    }

    /// Whether directory `dir` is covered ([`NrFs::cover`]).
    pub fn covered(&self, dir: Ino) -> bool {
        dir != 0
            && self
                .shared
                .covered
                .iter()
                .any(|c| c.load(Ordering::Acquire) == dir)
    }

    /// Namespace operations that found a name changed since their client resolved it, and
    /// were planned again (see [`FsError::Stale`]).
    pub fn stale_retries(&self) -> u64 {
        self.shared.stale.load(Ordering::Relaxed)
    }

    /// Per-log progress: operations submitted and applied by each replica.
    pub fn log_stats(&self) -> Vec<LogStats> {
        (0..self.shared.nlogs)
            .map(|log| LogStats {
                log,
                submitted: self
                    .shared
                    .submitted
                    .iter()
                    .map(|r| r.0[log].load(Ordering::Relaxed))
                    .sum(),
                applied: self
                    .shared
                    .applied
                    .iter()
                    .map(|r| r.0[log].load(Ordering::Relaxed))
                    .collect(),
            })
            .collect()
    }
}

/// One thread's handle on its replica: the file-system operations of [`FileSystem`] without
/// the operation enums. Inode numbers are allocated internally; paths are resolved with reads
/// on the local replica (see the crate documentation).
pub struct FsClient {
    fs: NrFs,
    replica: Arc<FsReplica>,
    token: ReplicaToken,
    row: usize,
}

impl core::fmt::Debug for FsClient {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("FsClient")
            .field("replica", &self.replica.id())
            .field("token", &self.token)
            .finish()
    }
}

fn to_errno(e: FsError) -> Errno {
    match e {
        FsError::Errno(e) => e,
        FsError::Stale => Errno::EIO,
    }
}

impl Namespace for FsClient {
    fn kind(&self, ino: Ino) -> Result<Kind, Errno> {
        match self.read_op(FsRead::Kind { ino })? {
            FsValue::Kind(k) => Ok(k),
            _ => Err(Errno::EIO),
        }
    }

    fn lookup(&self, dir: Ino, name: &[u8]) -> Result<Option<(Ino, Kind)>, Errno> {
        let name = name.to_vec();
        match self.read_op(FsRead::Lookup { dir, name })? {
            FsValue::Entry(e) => Ok(e),
            _ => Err(Errno::EIO),
        }
    }

    fn parent(&self, dir: Ino) -> Result<Ino, Errno> {
        match self.read_op(FsRead::Parent { dir })? {
            FsValue::Ino(i) => Ok(i),
            _ => Err(Errno::EIO),
        }
    }

    fn link_target(&self, ino: Ino) -> Result<Vec<u8>, Errno> {
        match self.read_op(FsRead::ReadLink { ino })? {
            FsValue::Data(t) => Ok(t),
            _ => Err(Errno::EIO),
        }
    }

    fn covered(&self, dir: Ino) -> bool {
        self.fs.covered(dir)
    }
}

impl FsClient {
    /// The replica this client uses.
    pub fn replica(&self) -> &Arc<FsReplica> {
        &self.replica
    }

    /// The replicated file system.
    pub fn fs(&self) -> &NrFs {
        &self.fs
    }

    /// The thread's token with its replica.
    pub fn token(&self) -> &ReplicaToken {
        &self.token
    }

    /// Executes a raw read on the local replica.
    pub fn read_op(&self, op: FsRead) -> Result<FsValue, Errno> {
        self.replica.execute(op, &self.token).map_err(to_errno)
    }

    /// Executes a raw update (through the logs).
    pub fn update_op(&self, op: FsUpdate) -> Result<FsValue, FsError> {
        let mut logs = LogSet::new();
        op.hash(self.fs.shared.nlogs, &mut logs);
        if let Some(row) = self.fs.shared.submitted.get(self.row) {
            for j in logs.iter() {
                row.0[j].fetch_add(1, Ordering::Relaxed);
            }
        }
        self.replica.execute_mut(op, &self.token)
    }

    /// Runs a namespace operation planned by `plan`, re-planning while it is stale and
    /// falling back to a scan over all logs after [`STALE_RETRIES`] stale rounds.
    fn namespace(
        &self,
        now: Timespec,
        mut plan: impl FnMut(&Self) -> Result<(NamespaceOp, Scope), Errno>,
    ) -> Result<FsValue, Errno> {
        for attempt in 0..=STALE_RETRIES {
            let (op, scope) = plan(self)?;
            let scope = if attempt == STALE_RETRIES {
                Scope::All
            } else {
                scope
            };
            match self.update_op(FsUpdate::Namespace { op, scope, now }) {
                Err(FsError::Stale) => {
                    self.fs.shared.stale.fetch_add(1, Ordering::Relaxed);
                }
                r => return r.map_err(to_errno),
            }
        }
        // A scan over all logs cannot be stale; reported rather than trusted.
        Err(Errno::EIO)
    }

    /// See [`FileSystem::resolve`].
    pub fn resolve(&self, start: Ino, path: &[u8], follow_last: bool) -> Result<Ino, Errno> {
        walk::resolve(self, start, path, follow_last).map(|(i, _)| i)
    }

    /// See [`FileSystem::resolve_parent`].
    pub fn resolve_parent(&self, start: Ino, path: &[u8]) -> Result<ParentPath, Errno> {
        walk::resolve_parent(self, start, path)
    }

    /// See [`FileSystem::lookup`].
    pub fn lookup(&self, dir: Ino, name: &[u8]) -> Result<Ino, Errno> {
        match name {
            b"." => match Namespace::kind(self, dir)? {
                Kind::Dir => Ok(dir),
                _ => Err(Errno::ENOTDIR),
            },
            b".." => self.parent(dir),
            _ if name.len() > NAME_MAX => Err(Errno::ENAMETOOLONG),
            _ => Namespace::lookup(self, dir, name)?
                .map(|(i, _)| i)
                .ok_or(Errno::ENOENT),
        }
    }

    /// See [`FileSystem::create`]; the inode number is allocated here.
    pub fn create(
        &self,
        start: Ino,
        path: &[u8],
        attrs: Attrs,
        flags: CreateFlags,
        now: Timespec,
    ) -> Result<Created, Errno> {
        let ino = self.fs.alloc_ino();
        let r = self.namespace(now, |c| {
            let t = walk::plan_create(c, start, path, flags.exclusive)?;
            let also = if flags.open { t.existing } else { None };
            Ok((
                NamespaceOp::Create {
                    dir: t.dir,
                    name: t.name,
                    ino,
                    attrs,
                    flags,
                },
                Scope::Also([also, None]),
            ))
        })?;
        match r {
            FsValue::Created(c) => Ok(c),
            _ => Err(Errno::EIO),
        }
    }

    fn make(
        &self,
        start: Ino,
        path: &[u8],
        now: Timespec,
        op: impl Fn(Ino, Vec<u8>, bool, Ino) -> NamespaceOp,
    ) -> Result<Ino, Errno> {
        let ino = self.fs.alloc_ino();
        let r = self.namespace(now, |c| {
            let (dir, name, trailing) = walk::plan_new_name(c, start, path)?;
            Ok((op(dir, name, trailing, ino), Scope::Also([None, None])))
        })?;
        match r {
            FsValue::Ino(i) => Ok(i),
            _ => Err(Errno::EIO),
        }
    }

    /// See [`FileSystem::mkdir`]; returns the new directory's inode.
    pub fn mkdir(
        &self,
        start: Ino,
        path: &[u8],
        attrs: Attrs,
        now: Timespec,
    ) -> Result<Ino, Errno> {
        self.make(start, path, now, |dir, name, trailing, ino| {
            NamespaceOp::Mkdir {
                dir,
                name,
                trailing,
                ino,
                attrs,
            }
        })
    }

    /// See [`FileSystem::symlink`]; returns the new symlink's inode.
    pub fn symlink(
        &self,
        target: &[u8],
        start: Ino,
        path: &[u8],
        attrs: Attrs,
        now: Timespec,
    ) -> Result<Ino, Errno> {
        walk::check_path(target)?;
        self.make(start, path, now, |dir, name, trailing, ino| {
            NamespaceOp::Symlink {
                dir,
                name,
                trailing,
                ino,
                attrs,
                target: target.to_vec(),
            }
        })
    }

    /// See [`FileSystem::mknod`]; returns the new device's inode.
    pub fn mknod(
        &self,
        start: Ino,
        path: &[u8],
        attrs: Attrs,
        rdev: u64,
        now: Timespec,
    ) -> Result<Ino, Errno> {
        self.make(start, path, now, |dir, name, trailing, ino| {
            NamespaceOp::Mknod {
                dir,
                name,
                trailing,
                ino,
                attrs,
                rdev,
            }
        })
    }

    /// See [`FileSystem::tmpfile`]; returns the new file's inode, open once.
    pub fn tmpfile(
        &self,
        start: Ino,
        path: &[u8],
        attrs: Attrs,
        now: Timespec,
    ) -> Result<Ino, Errno> {
        let ino = self.fs.alloc_ino();
        let r = self.namespace(now, |c| {
            let dir = c.resolve(start, path, true)?;
            Ok((
                NamespaceOp::Tmpfile { dir, ino, attrs },
                Scope::Also([None, None]),
            ))
        })?;
        match r {
            FsValue::Ino(i) => Ok(i),
            _ => Err(Errno::EIO),
        }
    }

    /// See [`FileSystem::mkfifo`]; returns the new FIFO's inode.
    pub fn mkfifo(
        &self,
        start: Ino,
        path: &[u8],
        attrs: Attrs,
        now: Timespec,
    ) -> Result<Ino, Errno> {
        self.make(start, path, now, |dir, name, trailing, ino| {
            NamespaceOp::Mkfifo {
                dir,
                name,
                trailing,
                ino,
                attrs,
            }
        })
    }

    /// See [`FileSystem::link`].
    pub fn link(
        &self,
        old_start: Ino,
        old_path: &[u8],
        new_start: Ino,
        new_path: &[u8],
        follow: bool,
        now: Timespec,
    ) -> Result<(), Errno> {
        self.namespace(now, |c| {
            let ino = c.resolve(old_start, old_path, follow)?;
            let (dir, name, trailing) = walk::plan_new_name(c, new_start, new_path)?;
            Ok((
                NamespaceOp::Link {
                    ino,
                    dir,
                    name,
                    trailing,
                },
                Scope::Also([None, None]),
            ))
        })
        .map(drop)
    }

    /// Looks the last component up for an operation that removes or replaces it: its inode
    /// goes into the operation's scope (ENAMETOOLONG; `None` if absent).
    fn victim(&self, dir: Ino, name: &[u8]) -> Result<Option<(Ino, Kind)>, Errno> {
        if name.len() > NAME_MAX {
            return Err(Errno::ENAMETOOLONG);
        }
        Namespace::lookup(self, dir, name)
    }

    /// See [`FileSystem::unlink`].
    pub fn unlink(&self, start: Ino, path: &[u8], now: Timespec) -> Result<(), Errno> {
        self.namespace(now, |c| {
            let p = c.resolve_parent(start, path)?;
            let Last::Name(name) = p.last else {
                return Err(Errno::EISDIR);
            };
            let victim = c.victim(p.dir, &name)?.ok_or(Errno::ENOENT)?;
            Ok((
                NamespaceOp::Unlink {
                    dir: p.dir,
                    name,
                    trailing: p.trailing_slash,
                },
                Scope::Also([Some(victim.0), None]),
            ))
        })
        .map(drop)
    }

    /// See [`FileSystem::rmdir`]; `EBUSY` for a directory another file system covers
    /// ([`NrFs::cover`]), reached through a symlink (by name, the kernel places the path in
    /// the covering file system).
    pub fn rmdir(&self, start: Ino, path: &[u8], now: Timespec) -> Result<(), Errno> {
        self.namespace(now, |c| {
            let p = c.resolve_parent(start, path)?;
            let name = walk::rmdir_name(p.last)?;
            let victim = c.victim(p.dir, &name)?.ok_or(Errno::ENOENT)?;
            if c.fs.covered(victim.0) {
                return Err(Errno::EBUSY);
            }
            Ok((
                NamespaceOp::Rmdir { dir: p.dir, name },
                Scope::Also([Some(victim.0), None]),
            ))
        })
        .map(drop)
    }

    /// See [`FileSystem::rename`]. A directory moved to (or replaced in) another directory
    /// is a scan over all logs; other renames are scans over the logs of their inodes.
    /// `EBUSY` if either name is a covered directory, as for [`FsClient::rmdir`].
    pub fn rename(
        &self,
        old_start: Ino,
        old_path: &[u8],
        new_start: Ino,
        new_path: &[u8],
        flags: u32,
        now: Timespec,
    ) -> Result<(), Errno> {
        ops::check_rename_flags(flags)?;
        self.namespace(now, |c| {
            let old = c.resolve_parent(old_start, old_path)?;
            let new = c.resolve_parent(new_start, new_path)?;
            let (old_name, new_name) = walk::rename_names(old.last, new.last, flags)?;
            let source = c.victim(old.dir, &old_name)?.ok_or(Errno::ENOENT)?;
            let target = c.victim(new.dir, &new_name)?;
            if c.fs.covered(source.0) || target.is_some_and(|t| c.fs.covered(t.0)) {
                return Err(Errno::EBUSY);
            }
            let dirs_move = old.dir != new.dir
                && (source.1 == Kind::Dir || target.is_some_and(|t| t.1 == Kind::Dir));
            let scope = if dirs_move {
                Scope::All
            } else {
                Scope::Also([Some(source.0), target.map(|t| t.0)])
            };
            Ok((
                NamespaceOp::Rename {
                    old_dir: old.dir,
                    old_name,
                    old_trailing: old.trailing_slash,
                    new_dir: new.dir,
                    new_name,
                    new_trailing: new.trailing_slash,
                    flags,
                },
                scope,
            ))
        })
        .map(drop)
    }

    /// See [`FileSystem::read`]; reads on the local replica.
    pub fn read(&self, ino: Ino, offset: u64, buf: &mut [u8]) -> Result<usize, Errno> {
        let d = self.read_vec(ino, offset, buf.len())?;
        buf[..d.len()].copy_from_slice(&d);
        Ok(d.len())
    }

    /// [`FsClient::read`] into a new buffer of at most `len` bytes (short at the end of the
    /// file), without a caller's buffer to fill: the kernel copies it to the user directly.
    pub fn read_vec(&self, ino: Ino, offset: u64, len: usize) -> Result<Vec<u8>, Errno> {
        match self.read_op(FsRead::Read { ino, offset, len })? {
            FsValue::Data(d) => Ok(d),
            _ => Err(Errno::EIO),
        }
    }

    /// See [`FileSystem::lend_pages`]; lends the local replica's pages.
    pub fn lend_pages(
        &self,
        ino: Ino,
        first: u64,
        count: usize,
    ) -> Result<Vec<Option<Lent>>, Errno> {
        match self.read_op(FsRead::LendPages { ino, first, count })? {
            FsValue::Pages(p) => Ok(p),
            _ => Err(Errno::EIO),
        }
    }

    /// See [`FileSystem::share_pages`]; every replica adopts the same frames, this one before
    /// the call returns, the others when they catch up: the caller keeps its share of each
    /// frame until the [`Offer`] returned says they all have.
    pub fn share_pages(
        &self,
        ino: Ino,
        first: u64,
        frames: Vec<usize>,
    ) -> (Result<usize, Errno>, Offer) {
        let frames = Payload::new(frames, self.fs.shared.replicas);
        let offer = Offer(frames.clone());
        let taken = match self.update_op(FsUpdate::SharePages { ino, first, frames }) {
            Ok(FsValue::Len(n)) => Ok(n),
            Ok(_) => Err(Errno::EIO),
            Err(e) => Err(to_errno(e)),
        };
        (taken, offer)
    }

    /// See [`FileSystem::write`]; copies `data` once into a buffer shared by all replicas.
    pub fn write(&self, ino: Ino, offset: u64, data: &[u8], now: Timespec) -> Result<usize, Errno> {
        self.write_owned(ino, offset, copy(data)?, now)
    }

    /// [`FsClient::write`] of a buffer the caller already copied (from user memory).
    pub fn write_owned(
        &self,
        ino: Ino,
        offset: u64,
        data: Vec<u8>,
        now: Timespec,
    ) -> Result<usize, Errno> {
        let data = Payload::new(data, self.fs.shared.replicas);
        match self.update_op(FsUpdate::Write {
            ino,
            offset,
            data,
            now,
        }) {
            Ok(FsValue::Len(n)) => Ok(n),
            Ok(_) => Err(Errno::EIO),
            Err(e) => Err(to_errno(e)),
        }
    }

    /// See [`FileSystem::append`].
    pub fn append(&self, ino: Ino, data: &[u8], now: Timespec) -> Result<u64, Errno> {
        let data = Payload::new(copy(data)?, self.fs.shared.replicas);
        match self.update_op(FsUpdate::Append { ino, data, now }) {
            Ok(FsValue::Appended { offset, .. }) => Ok(offset),
            Ok(_) => Err(Errno::EIO),
            Err(e) => Err(to_errno(e)),
        }
    }

    fn simple(&self, op: FsUpdate) -> Result<(), Errno> {
        self.update_op(op).map(drop).map_err(to_errno)
    }

    /// See [`FileSystem::truncate`].
    pub fn truncate(&self, ino: Ino, size: u64, now: Timespec) -> Result<(), Errno> {
        let once = Payload::new((), self.fs.shared.replicas);
        self.simple(FsUpdate::Truncate {
            ino,
            size,
            now,
            once,
        })
    }

    /// See [`FileSystem::stat`].
    pub fn stat(&self, ino: Ino) -> Result<Stat, Errno> {
        match self.read_op(FsRead::Stat { ino })? {
            FsValue::Stat(s) => Ok(s),
            _ => Err(Errno::EIO),
        }
    }

    /// See [`FileSystem::chmod`].
    pub fn chmod(&self, ino: Ino, mode: u32, now: Timespec) -> Result<(), Errno> {
        self.simple(FsUpdate::Chmod { ino, mode, now })
    }

    /// See [`FileSystem::chown`].
    pub fn chown(
        &self,
        ino: Ino,
        uid: Option<u32>,
        gid: Option<u32>,
        now: Timespec,
    ) -> Result<(), Errno> {
        self.simple(FsUpdate::Chown { ino, uid, gid, now })
    }

    /// See [`FileSystem::set_times`].
    pub fn set_times(
        &self,
        ino: Ino,
        atime: Option<Timespec>,
        mtime: Option<Timespec>,
        now: Timespec,
    ) -> Result<(), Errno> {
        self.simple(FsUpdate::SetTimes {
            ino,
            atime,
            mtime,
            now,
        })
    }

    /// See [`FileSystem::readlink`].
    pub fn readlink(&self, ino: Ino) -> Result<Vec<u8>, Errno> {
        self.link_target(ino)
    }

    /// See [`FileSystem::read_dir`].
    pub fn read_dir(
        &self,
        dir: Ino,
        cookie: u64,
        max_entries: usize,
    ) -> Result<Vec<DirEntry>, Errno> {
        match self.read_op(FsRead::ReadDir {
            dir,
            cookie,
            max: max_entries,
        })? {
            FsValue::Entries(e) => Ok(e),
            _ => Err(Errno::EIO),
        }
    }

    /// See [`FileSystem::open`].
    pub fn open(&self, ino: Ino) -> Result<(), Errno> {
        self.simple(FsUpdate::Open { ino })
    }

    /// See [`FileSystem::open_path`]: resolves, then opens the inode found, an update on its
    /// log alone. If that inode was freed in between (renamed over or unlinked), the open is
    /// made again as a namespace operation on the entry the path ends in, which counts
    /// whatever the entry names when it is applied: a file renamed over the name is opened,
    /// never ENOENT, however fast the renames.
    pub fn open_path(&self, start: Ino, path: &[u8], follow_last: bool) -> Result<Ino, Errno> {
        let ino = self.resolve(start, path, follow_last)?;
        match self.open(ino) {
            Err(Errno::ENOENT) => {}
            r => return r.map(|()| ino),
        }
        let r = self.namespace(Timespec::default(), |c| {
            Ok(match walk::plan_open(c, start, path, follow_last)? {
                OpenTarget::Entry {
                    dir,
                    name,
                    ino,
                    must_be_dir,
                } => (
                    NamespaceOp::Open {
                        dir,
                        name,
                        follow: follow_last,
                        must_be_dir,
                    },
                    Scope::Also([Some(ino), None]),
                ),
                OpenTarget::Dir(dir) => (NamespaceOp::OpenDir { dir }, Scope::Also([None, None])),
            })
        })?;
        match r {
            FsValue::Ino(ino) => Ok(ino),
            _ => Err(Errno::EIO),
        }
    }

    /// Resolves `path` and reads the attributes of the inode found. If that inode was freed
    /// in between (renamed over or unlinked), the attributes are read through an open of the
    /// path ([`Self::open_path`]), so a file renamed over the name is seen, never ENOENT.
    pub fn stat_path(
        &self,
        start: Ino,
        path: &[u8],
        follow_last: bool,
    ) -> Result<(Ino, Stat), Errno> {
        let ino = self.resolve(start, path, follow_last)?;
        match self.stat(ino) {
            Err(Errno::ENOENT) => {}
            r => return r.map(|s| (ino, s)),
        }
        let ino = self.open_path(start, path, follow_last)?;
        let st = self.stat(ino);
        self.close(ino)?;
        st.map(|s| (ino, s))
    }

    /// See [`FileSystem::close`].
    pub fn close(&self, ino: Ino) -> Result<(), Errno> {
        self.simple(FsUpdate::Close { ino })
    }

    /// See [`FileSystem::statfs`]: the sum of per-shard totals, each current with its log
    /// (not one atomic snapshot).
    pub fn statfs(&self) -> Result<FsStats, Errno> {
        let mut total = FsStats::default();
        for shard in 0..self.fs.shared.nlogs {
            if let FsValue::Stats(s) = self.read_op(FsRead::ShardStats { shard })? {
                total.inodes += s.inodes;
                total.pages += s.pages;
                total.bytes += s.bytes;
            }
        }
        Ok(total)
    }
}

/// A copy of `data` (a program's write, of any size it asks): `ENOMEM` if there is no room.
fn copy(data: &[u8]) -> Result<Vec<u8>, Errno> {
    let mut v = Vec::new();
    v.try_reserve_exact(data.len()).map_err(|_| Errno::ENOMEM)?;
    v.extend_from_slice(data);
    Ok(v)
}
