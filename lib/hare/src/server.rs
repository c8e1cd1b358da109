//! The file server: a sequential state machine, one per server process (§3.2).
//!
//! A server holds the inodes of its shards, its share of every directory's entries, the
//! open-file reference counts of its inodes (§3.5.1), its part of the buffer cache's free
//! blocks (§3.3), the rmdir holds and marks (§3.4.1), and which clients cache which of its
//! entries (§3.7.1). [`Server::handle`] runs one request to completion, without waiting for
//! anyone: the messages the client sends around it make up the distributed operations.
//! It never reads or writes file data: it hands out block numbers, and clients copy the data
//! (or, for a client without direct access to the cache, its runtime: [`Handled::copy`]).

use alloc::boxed::Box;
use alloc::collections::{BTreeMap, BTreeSet};
use alloc::vec::Vec;

use abi::Errno;

use core::ops::Bound;

use nrfs::{S_ISGID, S_ISUID, S_IXGRP};

use crate::proto::{
    seek, Entry, Expect, Invalidation, Listing, Name, NewInode, Reply, Request, Target,
    DIRENTS_BYTES, DIRENT_OVERHEAD, LISTED_BYTES, MAX_DATA, MAX_IO_BLOCKS, MAX_MOVED_BLOCKS,
    MAX_PART,
};
use crate::resize::ShardState;
use crate::shard::{inode_shard, Shard, ShardTable, SHARDS};
use crate::{
    Attrs, Block, BufferCache, ClientId, Ino, Kind, ServerId, Stat, Timespec, BLOCK_SIZE, ROOT_INO,
};

/// Largest file size (`MAX_LFS_FILESIZE`).
const MAX_FILE_SIZE: u64 = i64::MAX as u64;

/// `st_size` per directory entry (tmpfs's, as NR-FS reports).
const DIRENT_SIZE: u64 = 20;

/// Most (directory, client) pairs a server counts as listers of directories' entries; past
/// it, every lister is told to forget its listing.
pub const LISTERS_MAX: usize = 1 << 14;

/// What the server counts (`/proc/reef/hare`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ServerStats {
    /// Requests handled.
    pub requests: u64,
    /// Invalidations sent.
    pub invalidations: u64,
    /// Requests answered [`Reply::Busy`].
    pub busy: u64,
    /// Blocks free.
    pub free_blocks: u64,
    /// Blocks held back from reuse until their file's last close.
    pub deferred_blocks: u64,
}

#[derive(Debug)]
pub(crate) enum Body {
    File {
        /// Page index to block.
        blocks: BTreeMap<u64, Block>,
        /// Blocks a truncation took from the file while it was open (§3.5).
        deferred: Vec<Block>,
        /// Pages whose blocks a `Write` allocated ahead of the writes to come and nothing
        /// wrote yet: holes to everyone but the client that writes them ([`Server::write`]),
        /// free again at the last close.
        ahead: BTreeSet<u64>,
        /// The clients with descriptions open to write, and how many each: only they may
        /// post writes ([`Request::Wrote`]), which move the end without this server's
        /// answer. A client that is the only one, or one of none, is told it is alone
        /// ([`Reply::Opened`]), and is told to forget the size when another client opens the
        /// file to write ([`Server::count_writer`]).
        writers: Vec<(ClientId, u32)>,
    },
    Dir {
        parent: Ino,
        distributed: bool,
        /// Removed by `rmdir` (still open somewhere).
        dead: bool,
    },
    Symlink(Vec<u8>),
    /// A FIFO: no data here (its pipe is the client's embedder's).
    Fifo,
}

#[derive(Debug)]
pub(crate) struct Inode {
    pub(crate) kind: Kind,
    pub(crate) mode: u32,
    pub(crate) uid: u32,
    pub(crate) gid: u32,
    pub(crate) nlink: u32,
    pub(crate) size: u64,
    pub(crate) atime: Timespec,
    pub(crate) mtime: Timespec,
    pub(crate) ctime: Timespec,
    pub(crate) opens: u32,
    /// The client whose `Create` made it, the only one that may `Destroy` it (none for the
    /// root).
    pub(crate) creator: Option<ClientId>,
    pub(crate) body: Body,
}

impl Inode {
    fn new(kind: Kind, attrs: &Attrs, now: Timespec, body: Body) -> Self {
        Self {
            kind,
            mode: attrs.mode & 0o7777,
            uid: attrs.uid,
            gid: attrs.gid,
            nlink: if kind == Kind::Dir { 2 } else { 1 },
            size: 0,
            atime: now,
            mtime: now,
            ctime: now,
            opens: 0,
            creator: None,
            body,
        }
    }

    fn touch(&mut self, now: Timespec) {
        self.mtime = now;
        self.ctime = now;
    }
}

/// What handling one request produced. The server's runtime zeroes `zero` in the buffer
/// cache and queues `invalidations` at their clients, then sends `reply`: a new block is
/// zero before any client learns of it, and a truncated block's tail before any client can
/// write past the new end, so no client's zeroing can race another client's data.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Handled {
    /// The answer to the request.
    pub reply: Reply,
    /// Invalidations for the clients caching an entry this request removed or replaced.
    pub invalidations: Vec<(ClientId, Invalidation)>,
    /// Byte ranges to zero: each block from the given offset to its end.
    pub zero: Vec<(Block, u32)>,
    /// Data to copy between the buffer cache and the messages (a request of a client
    /// without direct access to it: §5.4's ablation), after the zeroing.
    pub copy: DataCopy,
}

/// Data a request moves through the server rather than the client copying it: the runtime
/// carries it out with [`Handled::copy_data`] after zeroing and before the reply goes out.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum DataCopy {
    /// Nothing.
    #[default]
    None,
    /// `len` bytes of the file from byte `at` of the first of `blocks` (a hole reads as
    /// zeros) into the reply's [`Reply::Data`].
    Out {
        /// The blocks from the page holding the first byte.
        blocks: Vec<Option<Block>>,
        /// The first byte's offset in the file.
        at: u64,
        /// How many bytes.
        len: usize,
    },
    /// Bytes a client wrote into blocks a truncation took from the file since it learnt
    /// them ([`Request::Wrote`]), into the blocks that hold those pages now: each is `(from,
    /// to, offset in the block, length)`.
    Blocks(Vec<(Block, Block, u32, u32)>),
    /// The request's data into `blocks`, from byte `at` of the first.
    In {
        /// The blocks from the page holding the first byte.
        blocks: Vec<Block>,
        /// The first byte's offset in the file.
        at: u64,
        /// The bytes.
        data: Vec<u8>,
    },
}

impl Handled {
    /// Carries out [`Handled::copy`] on `cache`: fills the reply's data, or writes the
    /// request's into the file's blocks.
    pub fn copy_data(&mut self, cache: &impl BufferCache) {
        match core::mem::take(&mut self.copy) {
            DataCopy::None => {}
            DataCopy::Out { blocks, at, len } => {
                if let Reply::Data { data, .. } = &mut self.reply {
                    data.resize(len, 0);
                    crate::client::copy_out(cache, &blocks, at, data);
                }
            }
            DataCopy::In { blocks, at, data } => crate::client::copy_in(cache, &blocks, at, &data),
            DataCopy::Blocks(moves) => {
                // A small buffer: this runs in the server's request path, whose frame stays
                // small without it.
                let mut buf = [0u8; 256];
                for (from, to, at, len) in moves {
                    let (mut at, end) = (at as usize, (at + len) as usize);
                    while at < end {
                        let n = (end - at).min(buf.len());
                        cache.read(from, at, &mut buf[..n]);
                        cache.write(to, at, &buf[..n]);
                        at += n;
                    }
                }
            }
        }
    }
}

/// An open file description shared by descriptors of several clients (§3.5.1).
#[derive(Debug)]
pub(crate) struct Desc {
    pub(crate) ino: Ino,
    pub(crate) offset: u64,
    pub(crate) refs: u32,
}

/// What a server keeps taken out while a resizer moves it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Outgoing {
    /// A shard ([`Request::Export`]).
    Shard(Shard),
    /// The entries of a directory being distributed ([`Request::Scatter`]).
    Entries(Ino),
}

/// One file server's state. See the module documentation.
#[derive(Debug)]
pub struct Server {
    id: ServerId,
    table: ShardTable,
    /// The shards this server creates inodes in, and the next one to use.
    shards: Vec<Shard>,
    next_shard: usize,
    /// Inode numbers are `counter * SHARDS + shard`; the counter only grows.
    counter: u64,
    inodes: BTreeMap<Ino, Inode>,
    /// This server's share of each directory's entries.
    entries: BTreeMap<Ino, BTreeMap<Name, Entry>>,
    /// Clients caching each entry (§3.7.1).
    cachers: BTreeMap<(Ino, Name), BTreeSet<ClientId>>,
    /// Clients that listed each directory's entries here (a batch of `Dirents` or
    /// `Listed`) and may keep the listing: each is told to forget it at the next change.
    listers: BTreeMap<Ino, BTreeSet<ClientId>>,
    /// The pairs in `listers`, at most [`LISTERS_MAX`].
    lister_pairs: usize,
    /// Clients caching each file's size and blocks (those that opened, read or wrote it).
    extents: BTreeMap<Ino, BTreeSet<ClientId>>,
    /// Directories an `rmdir` holds (at their home server), and by whom.
    holds: BTreeMap<Ino, ClientId>,
    /// Directories marked by `RmdirMark`.
    marks: BTreeSet<Ino>,
    /// Distributed directories of other homes that were removed.
    removed: BTreeSet<Ino>,
    free: Vec<Block>,
    /// What the request being handled needs zeroed (see [`Handled`]).
    zero: Vec<(Block, u32)>,
    /// What it moves through the server (see [`Handled`]).
    copy: DataCopy,
    /// Shared open file descriptions, by number.
    descs: BTreeMap<u64, Desc>,
    next_desc: u64,
    /// A shard taken out by [`Request::Export`] or a directory's entries taken out by
    /// [`Request::Scatter`], encoded, until [`Request::Exported`] or [`Request::Scattered`].
    outgoing: Option<(Outgoing, Vec<u8>)>,
    /// The parts of a shard [`Request::Import`] has received so far.
    incoming: Vec<u8>,
    stats: ServerStats,
}

/// Most pages a [`Request::Write`] that extends a file allocates past it.
pub const PREALLOC_MAX: usize = 32;

impl Server {
    /// Server `id` of `table`, owning buffer-cache blocks `blocks`. The server holding the
    /// root's shard makes the root directory (mode and owner `root`, entries `distributed`
    /// over all servers or not).
    pub fn new(
        id: ServerId,
        table: ShardTable,
        blocks: core::ops::Range<Block>,
        root: Attrs,
        root_distributed: bool,
        now: Timespec,
    ) -> Self {
        let shards = table.shards_of(id);
        let mut s = Self {
            id,
            table,
            shards,
            next_shard: 0,
            counter: 1,
            inodes: BTreeMap::new(),
            entries: BTreeMap::new(),
            cachers: BTreeMap::new(),
            listers: BTreeMap::new(),
            lister_pairs: 0,
            extents: BTreeMap::new(),
            holds: BTreeMap::new(),
            marks: BTreeSet::new(),
            removed: BTreeSet::new(),
            free: blocks.rev().collect(),
            zero: Vec::new(),
            copy: DataCopy::None,
            descs: BTreeMap::new(),
            // Unique across servers, so that a description can move with its inode.
            next_desc: u64::from(id) << 40 | 1,
            outgoing: None,
            incoming: Vec::new(),
            stats: ServerStats::default(),
        };
        if s.table.inode_server(ROOT_INO) == id {
            let body = Body::Dir {
                parent: ROOT_INO,
                distributed: root_distributed,
                dead: false,
            };
            s.inodes
                .insert(ROOT_INO, Inode::new(Kind::Dir, &root, now, body));
        }
        s
    }

    /// Server `id` joining a fleet that is being resized (§6.1.1): it holds no shard and no
    /// block until the resize gives it some ([`crate::resize`]). `None` for the id no server
    /// may have ([`ServerId::MAX`], which the table it starts with names).
    pub fn joining(id: ServerId, now: Timespec) -> Option<Self> {
        if id == ServerId::MAX {
            return None;
        }
        let nobody = ShardTable::from_owners(0, [ServerId::MAX; SHARDS]);
        Some(Self::new(id, nobody, 0..0, Attrs::new(0, 0, 0), false, now))
    }

    /// This server's id.
    pub const fn id(&self) -> ServerId {
        self.id
    }

    /// The table it answers by.
    pub fn table(&self) -> &ShardTable {
        &self.table
    }

    /// What it has counted.
    pub fn stats(&self) -> ServerStats {
        ServerStats {
            free_blocks: self.free.len() as u64,
            deferred_blocks: self
                .inodes
                .values()
                .map(|i| match &i.body {
                    Body::File { deferred, .. } => deferred.len() as u64,
                    _ => 0,
                })
                .sum(),
            ..self.stats
        }
    }

    /// Entries of directory `dir` held here.
    pub fn entries_of(&self, dir: Ino) -> usize {
        self.entries.get(&dir).map_or(0, BTreeMap::len)
    }

    /// [`Server::entries_of`] as a reply says it.
    fn entries_held(&self, dir: Ino) -> u32 {
        u32::try_from(self.entries_of(dir)).unwrap_or(u32::MAX)
    }

    /// Inodes held.
    pub fn inodes(&self) -> usize {
        self.inodes.len()
    }

    /// Takes out everything shard `shard` holds here, for [`Server::import_shard`] at its new
    /// owner, and queues invalidations for the clients other than `from` that cached one of
    /// its entries (this server no longer answers for them). The caller moves shards only
    /// while no request is in flight; `EBUSY` while an `rmdir` holds or marks a directory
    /// here (try again once it finished).
    fn export_shard(
        &mut self,
        from: ClientId,
        shard: Shard,
        inval: &mut Vec<(ClientId, Invalidation)>,
    ) -> Result<ShardState, Errno> {
        if !self.holds.is_empty() || !self.marks.is_empty() {
            return Err(Errno::EBUSY);
        }
        // Where each directory's entries here belong: a directory whose inode is here says
        // whether it is distributed; entries of a directory whose inode is elsewhere are
        // here only because it is distributed.
        let distributed = |inodes: &BTreeMap<Ino, Inode>, dir: Ino| match inodes.get(&dir) {
            Some(Inode {
                body: Body::Dir { distributed, .. },
                ..
            }) => *distributed,
            _ => true,
        };
        let mut entries = Vec::new();
        for (&dir, names) in self.entries.iter_mut() {
            let dist = distributed(&self.inodes, dir);
            let moving: Vec<Name> = names
                .keys()
                .filter(|n| {
                    if dist {
                        crate::shard::entry_shard(dir, n) == shard
                    } else {
                        inode_shard(dir) == shard
                    }
                })
                .cloned()
                .collect();
            for n in moving {
                let e = names.remove(&n).expect("listed above");
                entries.push((dir, n, e));
            }
        }
        self.entries.retain(|_, names| !names.is_empty());
        for (dir, name, _) in &entries {
            self.invalidate(from, *dir, name, inval);
            self.listing_changed(*dir, inval);
        }
        let inos: Vec<Ino> = self
            .inodes
            .keys()
            .copied()
            .filter(|&i| inode_shard(i) == shard)
            .collect();
        for ino in &inos {
            for c in self.extents.remove(ino).into_iter().flatten() {
                inval.push((c, Invalidation::Extent(*ino)));
            }
        }
        let inodes: Vec<(Ino, Inode)> = inos
            .iter()
            .map(|i| (*i, self.inodes.remove(i).expect("listed above")))
            .collect();
        let descs_moving: Vec<u64> = self
            .descs
            .iter()
            .filter(|(_, d)| inode_shard(d.ino) == shard)
            .map(|(&k, _)| k)
            .collect();
        let descs = descs_moving
            .into_iter()
            .map(|k| (k, self.descs.remove(&k).expect("listed above")))
            .collect();
        Ok(ShardState {
            inodes,
            entries,
            descs,
            removed: self.removed.clone(),
            counter: self.counter,
        })
    }

    /// Takes in a shard another server exported ([`Server::export_shard`]).
    fn import_shard(&mut self, state: ShardState) {
        self.inodes.extend(state.inodes);
        for (dir, name, e) in state.entries {
            self.entries.entry(dir).or_default().insert(name, e);
        }
        self.descs.extend(state.descs);
        self.removed.extend(state.removed);
        self.counter = self.counter.max(state.counter + 1);
    }

    /// Installs the table of a resize (after every shard moved): from now on this server
    /// answers for the shards it gives this server, and numbers new inodes in them.
    fn set_table(&mut self, table: ShardTable) {
        self.shards = table.shards_of(self.id);
        self.next_shard = 0;
        self.counter += 1;
        self.table = table;
    }

    /// Gives up to `n` free blocks of the buffer cache (for a new server).
    fn take_free_blocks(&mut self, n: usize) -> Vec<Block> {
        let keep = self.free.len().saturating_sub(n);
        self.free.split_off(keep)
    }

    /// Takes free blocks another server gave up.
    fn give_free_blocks(&mut self, blocks: Vec<Block>) {
        self.free.extend(blocks);
    }

    /// [`Request::Export`]: at offset 0 takes shard `shard` out (queueing its cachers'
    /// invalidations) and keeps it encoded; the part from `offset`.
    fn export(
        &mut self,
        from: ClientId,
        (shard, offset): (Shard, u64),
        inval: &mut Vec<(ClientId, Invalidation)>,
    ) -> Result<Reply, Errno> {
        match &self.outgoing {
            Some((Outgoing::Shard(s), _)) if *s == shard => {}
            Some(_) => return Err(Errno::EBUSY),
            None if offset == 0 => {
                let state = self.export_shard(from, shard, inval)?;
                self.outgoing = Some((Outgoing::Shard(shard), state.encode()));
            }
            None => return Err(Errno::EINVAL),
        }
        self.part(offset)
    }

    /// [`Request::Scatter`]: at offset 0 takes out the entries of ordinary directory `dir`
    /// (whose home this is) that belong on other servers once it is distributed, marks it
    /// distributed and keeps them encoded; the part from `offset`.
    fn scatter(
        &mut self,
        from: ClientId,
        (dir, offset): (Ino, u64),
        inval: &mut Vec<(ClientId, Invalidation)>,
    ) -> Result<Reply, Errno> {
        match &self.outgoing {
            Some((Outgoing::Entries(d), _)) if *d == dir => return self.part(offset),
            Some(_) => return Err(Errno::EBUSY),
            None if offset == 0 => {}
            None => return Err(Errno::EINVAL),
        }
        if !self.holds.is_empty() || !self.marks.is_empty() {
            return Err(Errno::EBUSY);
        }
        match self.inodes.get_mut(&dir).map(|i| &mut i.body) {
            Some(Body::Dir {
                distributed: true, ..
            }) => return Err(Errno::EEXIST),
            Some(Body::Dir {
                distributed,
                dead: false,
                ..
            }) => *distributed = true,
            Some(_) => return Err(Errno::ENOTDIR),
            None => return Err(Errno::ENOENT),
        }
        let (table, me) = (&self.table, self.id);
        let moving: Vec<Name> = self
            .entries
            .get(&dir)
            .into_iter()
            .flatten()
            .map(|(n, _)| n)
            .filter(|n| table.entry_server(dir, n, true) != me)
            .cloned()
            .collect();
        let mut entries = Vec::new();
        for name in moving {
            let e = self
                .entries
                .get_mut(&dir)
                .and_then(|m| m.remove(&name))
                .expect("listed above");
            self.invalidate(from, dir, &name, inval);
            entries.push((dir, name, e));
        }
        self.listing_changed(dir, inval);
        self.entries.retain(|_, names| !names.is_empty());
        let state = ShardState::of_entries(entries);
        self.outgoing = Some((Outgoing::Entries(dir), state.encode()));
        self.part(offset)
    }

    /// The part of what is kept taken out from byte `offset`.
    fn part(&self, offset: u64) -> Result<Reply, Errno> {
        let (_, state) = self.outgoing.as_ref().ok_or(Errno::EINVAL)?;
        let from = usize::try_from(offset)
            .ok()
            .filter(|&o| o <= state.len())
            .ok_or(Errno::EINVAL)?;
        let to = state.len().min(from + MAX_PART);
        Ok(Reply::Part {
            total: state.len() as u64,
            data: state[from..to].to_vec(),
        })
    }

    /// [`Request::Exported`], [`Request::Scattered`]: forgets what was taken out as `what`,
    /// or takes it back.
    fn put_back(&mut self, what: Outgoing, restore: bool) -> Result<Reply, Errno> {
        match self.outgoing.take() {
            Some((w, state)) if w == what => {
                if restore {
                    let state = ShardState::decode(&state).expect("encoded here");
                    self.import_shard(state);
                }
                Ok(Reply::Done)
            }
            other => {
                self.outgoing = other;
                Err(Errno::EINVAL)
            }
        }
    }

    /// [`Request::Import`]: keeps the part; with the last, decodes the state and takes it in.
    fn import_part(&mut self, offset: u64, total: u64, data: &[u8]) -> Result<Reply, Errno> {
        if offset == 0 {
            self.incoming.clear();
        }
        let fits = match offset.checked_add(data.len() as u64) {
            Some(end) => end <= total,
            None => false,
        };
        if offset != self.incoming.len() as u64 || !fits {
            self.incoming = Vec::new();
            return Err(Errno::EINVAL);
        }
        if offset == 0 {
            let total = usize::try_from(total).map_err(|_| Errno::ENOMEM)?;
            self.incoming
                .try_reserve_exact(total)
                .map_err(|_| Errno::ENOMEM)?;
        }
        self.incoming.extend_from_slice(data);
        if (self.incoming.len() as u64) < total {
            return Ok(Reply::Done);
        }
        let bytes = core::mem::take(&mut self.incoming);
        let state = ShardState::decode(&bytes).map_err(|_| Errno::EINVAL)?;
        self.import_shard(state);
        Ok(Reply::Done)
    }

    /// Handles one request from client `from`: the reply, the invalidations to deliver and
    /// the bytes to zero, both before the reply goes out.
    pub fn handle(&mut self, from: ClientId, req: Request) -> Handled {
        self.stats.requests += 1;
        let mut inval = Vec::new();
        let reply = match self.dispatch(from, req, &mut inval) {
            Ok(r) => r,
            Err(e) => Reply::Err(e),
        };
        if reply == Reply::Busy {
            self.stats.busy += 1;
        }
        self.stats.invalidations += inval.len() as u64;
        Handled {
            reply,
            invalidations: inval,
            zero: core::mem::take(&mut self.zero),
            copy: core::mem::take(&mut self.copy),
        }
    }

    fn dispatch(
        &mut self,
        from: ClientId,
        req: Request,
        inval: &mut Vec<(ClientId, Invalidation)>,
    ) -> Result<Reply, Errno> {
        match req {
            Request::Lookup { dir, name } => self.lookup(from, dir, name),
            Request::AddMap {
                dir,
                name,
                entry,
                replace,
                touch,
                now,
            } => self.add_map(from, dir, name, (entry, touch), replace, now, inval),
            Request::RmMap {
                dir,
                name,
                expect,
                unlink,
                touch,
                now,
            } => self.rm_map(from, (dir, name), expect, (unlink, touch), now, inval),
            Request::Rename {
                old_dir,
                old_name,
                new_dir,
                new_name,
                ino,
                target,
                now,
            } => {
                let old = (old_dir, old_name);
                let new = (new_dir, new_name);
                self.rename(from, old, new, (ino, target), now, inval)
            }
            Request::Create {
                new,
                attrs,
                open,
                write,
                now,
            } => self.create(from, new, &attrs, (open, write), now),
            Request::CreateNamed {
                dir,
                name,
                new,
                attrs,
                open,
                write,
                now,
            } => {
                let opening = (open, write);
                self.create_named(from, dir, name, new, &attrs, opening, now, inval)
            }
            Request::Destroy { ino } => {
                // Only the creator undoes a create (a forged inode number from another client
                // cannot remove a file); whether the name was added elsewhere this server
                // cannot know, so a client can still remove what it made (docs: trust).
                if self.inode(ino)?.creator != Some(from) {
                    return Err(Errno::EPERM);
                }
                self.free_inode(ino);
                Ok(Reply::Done)
            }
            Request::Link { ino, now } => {
                let inode = self.inode_mut(ino)?;
                if inode.kind == Kind::Dir {
                    return Err(Errno::EPERM);
                }
                if inode.nlink == 0 {
                    return Err(Errno::ENOENT);
                }
                inode.nlink = inode.nlink.checked_add(1).ok_or(Errno::EMLINK)?;
                inode.ctime = now;
                Ok(Reply::Done)
            }
            Request::Unlink { ino, now } => {
                let inode = self.inode_mut(ino)?;
                if inode.kind == Kind::Dir || inode.nlink == 0 {
                    return Err(Errno::EINVAL);
                }
                inode.nlink -= 1;
                inode.ctime = now;
                self.release(ino);
                Ok(Reply::Done)
            }
            Request::Touch { ino, now } => {
                let inode = self.inode_mut(ino)?;
                if inode.kind == Kind::Dir {
                    return Err(Errno::EINVAL);
                }
                inode.ctime = now;
                Ok(Reply::Done)
            }
            Request::Nlink { dir, delta, now } => {
                let inode = self.dir_inode_mut(dir)?;
                inode.nlink = inode.nlink.saturating_add_signed(delta);
                inode.touch(now);
                Ok(Reply::Done)
            }
            Request::Move { dir, parent, now } => {
                let inode = self.dir_inode_mut(dir)?;
                if let Body::Dir { parent: p, .. } = &mut inode.body {
                    *p = parent;
                }
                inode.ctime = now;
                Ok(Reply::Done)
            }
            Request::DirInfo { dir } => match &self.inode(dir)?.body {
                Body::Dir {
                    parent,
                    distributed,
                    ..
                } => Ok(Reply::Dir {
                    parent: *parent,
                    distributed: *distributed,
                }),
                _ => Err(Errno::ENOTDIR),
            },
            Request::Open {
                ino,
                trunc,
                list,
                write,
                now,
            } => {
                let inode = self.inode(ino)?;
                inode.opens.checked_add(1).ok_or(Errno::ENFILE)?;
                let file = inode.kind == Kind::File;
                if trunc && file {
                    self.truncate(from, ino, 0, now, inval)?;
                }
                let inode = self.inode_mut(ino)?;
                inode.opens += 1;
                if file {
                    if write {
                        self.count_writer(from, ino, true, inval);
                    }
                    self.extents.entry(ino).or_default().insert(from);
                }
                let stat = self.stat(ino)?;
                if let Body::File { blocks, ahead, .. } = &self.inode(ino)?.body {
                    let pages = stat
                        .size
                        .div_ceil(BLOCK_SIZE as u64)
                        .min(MAX_IO_BLOCKS as u64);
                    let blocks = (0..pages)
                        .map(|p| blocks.get(&p).copied().filter(|_| !ahead.contains(&p)))
                        .collect();
                    let alone = self.alone(from, ino);
                    return Ok(Reply::Opened {
                        stat,
                        blocks,
                        alone,
                    });
                }
                let distributed = match self.inode(ino)?.body {
                    Body::Dir {
                        distributed,
                        dead: false,
                        ..
                    } if list => distributed,
                    _ => return Ok(Reply::Stat(stat)),
                };
                self.add_lister(ino, from, inval);
                let (entries, more) = self.dirents(ino, None, LISTED_BYTES);
                Ok(Reply::Listed {
                    stat,
                    entries,
                    more,
                    distributed,
                })
            }
            Request::Close { ino, write } => self.close(from, ino, write, inval),
            Request::Read {
                ino,
                offset,
                len,
                desc,
            } => {
                let (size, offset, blocks) = self.read(ino, offset, len, desc)?;
                self.extents.entry(ino).or_default().insert(from);
                Ok(Reply::Extent {
                    size,
                    offset,
                    blocks,
                    alone: self.alone(from, ino),
                })
            }
            Request::Write {
                ino,
                offset,
                len,
                append,
                desc,
                now,
            } => {
                let (offset, blocks) =
                    self.write(from, ino, (offset, len, append, desc), now, inval)?;
                self.extents.entry(ino).or_default().insert(from);
                let size = self.inode(ino)?.size;
                Ok(Reply::Written {
                    offset,
                    size,
                    blocks,
                })
            }
            Request::Wrote {
                ino,
                offset,
                len,
                blocks,
                now,
            } => self.wrote(from, ino, (offset, len), &blocks, now, inval),
            Request::ReadData {
                ino,
                offset,
                len,
                desc,
            } => {
                let len = len.min(MAX_DATA as u32);
                let (size, offset, blocks) = self.read(ino, offset, len, desc)?;
                let len = u64::from(len).min(size.saturating_sub(offset)) as usize;
                self.copy = DataCopy::Out {
                    blocks,
                    at: offset,
                    len,
                };
                Ok(Reply::Data {
                    size,
                    offset,
                    data: Vec::new(),
                })
            }
            Request::WriteData {
                ino,
                offset,
                data,
                append,
                desc,
                now,
            } => {
                if data.len() > MAX_DATA {
                    return Err(Errno::EINVAL);
                }
                let len = data.len() as u32;
                let (offset, mut blocks) =
                    self.write(from, ino, (offset, len, append, desc), now, inval)?;
                // No blocks in the reply: they are for a client that writes them itself.
                blocks.truncate(crate::pages_of(offset, u64::from(len)).count());
                self.copy = DataCopy::In {
                    blocks,
                    at: offset,
                    data,
                };
                let size = self.inode(ino)?.size;
                Ok(Reply::Written {
                    offset,
                    size,
                    blocks: Vec::new(),
                })
            }
            Request::Share { ino, offset, write } => {
                self.inode(ino)?;
                if write {
                    self.count_writer(from, ino, false, inval);
                }
                let desc = self.next_desc;
                self.next_desc += 1;
                self.descs.insert(
                    desc,
                    Desc {
                        ino,
                        offset,
                        refs: 2,
                    },
                );
                Ok(Reply::Shared(desc))
            }
            Request::DupShared { desc } => {
                let d = self.descs.get_mut(&desc).ok_or(Errno::EBADF)?;
                d.refs = d.refs.checked_add(1).ok_or(Errno::EMFILE)?;
                Ok(Reply::Done)
            }
            Request::CloseShared { desc } => {
                let d = self.descs.get_mut(&desc).ok_or(Errno::EBADF)?;
                d.refs -= 1;
                if d.refs > 0 {
                    return Ok(Reply::Done);
                }
                let ino = d.ino;
                self.descs.remove(&desc);
                // Its writer was counted off when it became shared.
                self.close(from, ino, false, inval)
            }
            Request::Seek {
                desc,
                offset,
                whence,
            } => {
                let d = self.descs.get(&desc).ok_or(Errno::EBADF)?;
                let st = self.stat(d.ino)?;
                let new = seek(d.offset, st.size, offset, whence, st.kind == Kind::Dir)?;
                if let Some(d) = self.descs.get_mut(&desc) {
                    d.offset = new;
                }
                Ok(Reply::Offset(new))
            }
            Request::Trunc { ino, size, now } => self.truncate(from, ino, size, now, inval),
            Request::Stat { ino } => Ok(Reply::Stat(self.stat(ino)?)),
            Request::Export { shard, offset } => self.export(from, (shard.into(), offset), inval),
            Request::Exported { shard, restore } => {
                self.put_back(Outgoing::Shard(shard.into()), restore)
            }
            Request::Scatter { dir, offset } => self.scatter(from, (dir, offset), inval),
            Request::Scattered { dir, restore } => {
                let r = self.put_back(Outgoing::Entries(dir), restore)?;
                if restore {
                    if let Some(Body::Dir { distributed, .. }) =
                        self.inodes.get_mut(&dir).map(|i| &mut i.body)
                    {
                        *distributed = false;
                    }
                }
                Ok(r)
            }
            Request::MarkDistributed { parent, dir } => {
                let names: Vec<Name> = self
                    .entries
                    .get(&parent)
                    .into_iter()
                    .flatten()
                    .filter(|(_, e)| e.ino == dir && e.kind == Kind::Dir)
                    .map(|(n, _)| n.clone())
                    .collect();
                for name in names {
                    if let Some(e) = self.entries.get_mut(&parent).and_then(|m| m.get_mut(&name)) {
                        e.distributed = true;
                    }
                    self.invalidate(from, parent, &name, inval);
                    self.listing_changed(parent, inval);
                }
                Ok(Reply::Done)
            }
            Request::Import {
                offset,
                total,
                data,
            } => self.import_part(offset, total, &data),
            Request::TakeBlocks { count } => Ok(Reply::Blocks(
                self.take_free_blocks((count as usize).min(MAX_MOVED_BLOCKS)),
            )),
            Request::GiveBlocks { blocks } => {
                self.give_free_blocks(blocks);
                Ok(Reply::Done)
            }
            Request::SetTable(table) => {
                if self.outgoing.is_some() || !self.incoming.is_empty() {
                    return Err(Errno::EBUSY);
                }
                self.set_table(*table);
                Ok(Reply::Done)
            }
            Request::GetTable => Ok(Reply::Table(Box::new(self.table.clone()))),
            Request::Statfs => {
                let st = self.stats();
                Ok(Reply::Space {
                    free_blocks: st.free_blocks,
                    deferred_blocks: st.deferred_blocks,
                    inodes: self.inodes.len() as u64,
                })
            }
            Request::Chmod { ino, mode, now } => {
                let inode = self.inode_mut(ino)?;
                if inode.kind == Kind::Symlink {
                    return Err(Errno::EOPNOTSUPP);
                }
                inode.mode = mode & 0o7777;
                inode.ctime = now;
                Ok(Reply::Done)
            }
            Request::Chown { ino, uid, gid, now } => {
                let inode = self.inode_mut(ino)?;
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
                Ok(Reply::Done)
            }
            Request::Utimens {
                ino,
                atime,
                mtime,
                now,
            } => {
                let inode = self.inode_mut(ino)?;
                if atime.is_none() && mtime.is_none() {
                    return Ok(Reply::Done);
                }
                if let Some(t) = atime {
                    inode.atime = t;
                }
                if let Some(t) = mtime {
                    inode.mtime = t;
                }
                inode.ctime = now;
                Ok(Reply::Done)
            }
            Request::Readlink { ino } => match &self.inode(ino)?.body {
                Body::Symlink(t) => Ok(Reply::Target(t.clone())),
                _ => Err(Errno::EINVAL),
            },
            Request::Dirents { dir, after } => {
                self.check_dir_alive(dir)?;
                self.add_lister(dir, from, inval);
                let (entries, more) = self.dirents(dir, after.as_ref(), DIRENTS_BYTES);
                Ok(Reply::Dirents { entries, more })
            }
            Request::Hold { dir } => {
                self.dir_inode_mut(dir)?;
                match self.holds.get(&dir) {
                    Some(&c) if c != from => Ok(Reply::Busy),
                    _ => {
                        self.holds.insert(dir, from);
                        Ok(Reply::Done)
                    }
                }
            }
            Request::Release { dir } => {
                if self.holds.get(&dir) == Some(&from) {
                    self.holds.remove(&dir);
                }
                Ok(Reply::Done)
            }
            Request::RmdirMark { dir } => {
                if self.entries.get(&dir).is_some_and(|m| !m.is_empty()) {
                    return Err(Errno::ENOTEMPTY);
                }
                self.marks.insert(dir);
                Ok(Reply::Done)
            }
            Request::RmdirAbort { dir } => {
                self.marks.remove(&dir);
                Ok(Reply::Done)
            }
            Request::RmdirCommit { dir, now } => {
                self.marks.remove(&dir);
                self.entries.remove(&dir);
                self.listing_changed(dir, inval);
                if self.table.inode_server(dir) != self.id {
                    self.removed.insert(dir);
                    return Ok(Reply::Done);
                }
                self.bury(dir, now)?;
                Ok(Reply::Done)
            }
            Request::Rmdir {
                dir,
                name,
                ino,
                now,
            } => self.rmdir(from, (dir, name), ino, now, inval),
        }
    }

    fn inode(&self, ino: Ino) -> Result<&Inode, Errno> {
        self.inodes.get(&ino).ok_or(Errno::ENOENT)
    }

    fn inode_mut(&mut self, ino: Ino) -> Result<&mut Inode, Errno> {
        self.inodes.get_mut(&ino).ok_or(Errno::ENOENT)
    }

    fn dir_inode_mut(&mut self, dir: Ino) -> Result<&mut Inode, Errno> {
        let inode = self.inode_mut(dir)?;
        match inode.body {
            Body::Dir { .. } => Ok(inode),
            _ => Err(Errno::ENOTDIR),
        }
    }

    /// Whether this server holds `dir`'s inode.
    fn is_home(&self, dir: Ino) -> bool {
        self.table.inode_server(dir) == self.id
    }

    /// ENOENT if `dir` was removed (or, at its home, does not exist), ENOTDIR if it is not a
    /// directory. Another server cannot tell whether a directory it never heard of exists:
    /// the client found it through an entry, which an `rmdir` removes before it commits.
    fn check_dir_alive(&self, dir: Ino) -> Result<(), Errno> {
        if !self.is_home(dir) {
            return if self.removed.contains(&dir) {
                Err(Errno::ENOENT)
            } else {
                Ok(())
            };
        }
        match &self.inode(dir)?.body {
            Body::Dir { dead: true, .. } => Err(Errno::ENOENT),
            Body::Dir { .. } => Ok(()),
            _ => Err(Errno::ENOTDIR),
        }
    }

    fn lookup(&mut self, from: ClientId, dir: Ino, name: Name) -> Result<Reply, Errno> {
        if self.is_home(dir) {
            match &self.inode(dir)?.body {
                Body::Dir { .. } => {}
                _ => return Err(Errno::ENOTDIR),
            }
        }
        let e = *self
            .entries
            .get(&dir)
            .and_then(|m| m.get(&name))
            .ok_or(Errno::ENOENT)?;
        self.cachers.entry((dir, name)).or_default().insert(from);
        Ok(Reply::Entry(e))
    }

    /// Tells every client but `from` that caches `(dir, name)` to forget it.
    fn invalidate(
        &mut self,
        from: ClientId,
        dir: Ino,
        name: &Name,
        inval: &mut Vec<(ClientId, Invalidation)>,
    ) {
        if let Some(set) = self.cachers.remove(&(dir, name.clone())) {
            for c in set.into_iter().filter(|&c| c != from) {
                inval.push((
                    c,
                    Invalidation::Entries {
                        dir,
                        name: Some(name.clone()),
                    },
                ));
            }
        }
    }

    /// `dir`'s entries here changed: every client that listed them forgets its listing
    /// (`from` too: its listing does not have the change either).
    fn listing_changed(&mut self, dir: Ino, inval: &mut Vec<(ClientId, Invalidation)>) {
        if let Some(set) = self.listers.remove(&dir) {
            self.lister_pairs -= set.len();
            inval.extend(set.into_iter().map(|c| (c, Invalidation::Listing(dir))));
        }
    }

    /// Counts `from` as a lister of `dir`'s entries here. A server that is not `dir`'s home
    /// cannot tell a directory with no entries here from no directory, so past
    /// [`LISTERS_MAX`] pairs (a client listing made-up directories) every lister is told to
    /// forget its listing and none is counted any more.
    fn add_lister(&mut self, dir: Ino, from: ClientId, inval: &mut Vec<(ClientId, Invalidation)>) {
        if self.lister_pairs >= LISTERS_MAX {
            let dirs: Vec<Ino> = self.listers.keys().copied().collect();
            for d in dirs {
                self.listing_changed(d, inval);
            }
        }
        if self.listers.entry(dir).or_default().insert(from) {
            self.lister_pairs += 1;
        }
    }

    /// Updates `dir`'s link count (by `delta` subdirectories) and times, if it is here.
    fn touch_home(&mut self, dir: Ino, delta: i32, now: Timespec) -> bool {
        if !self.is_home(dir) {
            return false;
        }
        if let Some(inode) = self.inodes.get_mut(&dir) {
            inode.nlink = inode.nlink.saturating_add_signed(delta);
            inode.touch(now);
        }
        true
    }

    #[allow(clippy::too_many_arguments)]
    fn add_map(
        &mut self,
        from: ClientId,
        dir: Ino,
        name: Name,
        (entry, touch): (Entry, bool),
        replace: Option<Ino>,
        now: Timespec,
        inval: &mut Vec<(ClientId, Invalidation)>,
    ) -> Result<Reply, Errno> {
        if self.marks.contains(&dir) {
            return Ok(Reply::Busy);
        }
        let old = self.entries.get(&dir).and_then(|m| m.get(&name)).copied();
        match (old, replace) {
            (Some(o), Some(r)) if o.ino == r => {}
            (Some(_), None) => return Err(Errno::EEXIST),
            (None, None) => self.check_dir_alive(dir)?,
            _ => return Ok(Reply::Stale),
        }
        if touch {
            match self.inode_mut(entry.ino) {
                Ok(inode) if inode.kind != Kind::Dir && inode.nlink > 0 => inode.ctime = now,
                _ => return Ok(Reply::Stale),
            }
        }
        if old.is_some() {
            self.invalidate(from, dir, &name, inval);
        }
        let delta = i32::from(entry.kind == Kind::Dir)
            - i32::from(old.is_some_and(|o| o.kind == Kind::Dir));
        self.entries
            .entry(dir)
            .or_default()
            .insert(name.clone(), entry);
        self.cachers.entry((dir, name)).or_default().insert(from);
        self.listing_changed(dir, inval);
        let home = self.touch_home(dir, delta, now);
        let entries = self.entries_held(dir);
        Ok(Reply::Mapped { old, home, entries })
    }

    /// [`Request::Rename`]: everything checked first, then done.
    fn rename(
        &mut self,
        from: ClientId,
        (old_dir, old_name): (Ino, Name),
        (new_dir, new_name): (Ino, Name),
        (ino, want): (Ino, Target),
        now: Timespec,
        inval: &mut Vec<(ClientId, Invalidation)>,
    ) -> Result<Reply, Errno> {
        if self.marks.contains(&new_dir) {
            return Ok(Reply::Busy);
        }
        let entry = |s: &Self, d: Ino, n: &Name| s.entries.get(&d).and_then(|m| m.get(n)).copied();
        let source = match entry(self, old_dir, &old_name) {
            Some(e) if e.ino == ino => e,
            _ => return Ok(Reply::Stale),
        };
        let non_dir = |s: &Self, i: Ino| s.inode(i).is_ok_and(|n| n.kind != Kind::Dir);
        let target = entry(self, new_dir, &new_name);
        let replace = match (target, want) {
            (Some(t), Target::File(r)) if t.ino == r => Some(r),
            (Some(_), Target::Absent) => return Err(Errno::EEXIST),
            (None, Target::Absent | Target::Any) => {
                self.check_dir_alive(new_dir)?;
                None
            }
            // Two names of one file: POSIX renames nothing.
            (Some(t), Target::Any) if t.ino == ino => return Ok(Reply::Done),
            (Some(t), Target::Any) if non_dir(self, t.ino) => Some(t.ino),
            _ => return Ok(Reply::Stale),
        };
        if !non_dir(self, ino) || replace.is_some_and(|r| !non_dir(self, r)) {
            return Err(Errno::EINVAL);
        }
        if (old_dir, &old_name) == (new_dir, &new_name) {
            return Ok(Reply::Done);
        }
        if target.is_some() {
            self.invalidate(from, new_dir, &new_name, inval);
        }
        self.entries
            .entry(new_dir)
            .or_default()
            .insert(new_name.clone(), source);
        self.cachers
            .entry((new_dir, new_name))
            .or_default()
            .insert(from);
        self.touch_home(new_dir, 0, now);
        if let Some(m) = self.entries.get_mut(&old_dir) {
            m.remove(&old_name);
            if m.is_empty() {
                self.entries.remove(&old_dir);
            }
        }
        self.invalidate(from, old_dir, &old_name, inval);
        self.listing_changed(old_dir, inval);
        self.listing_changed(new_dir, inval);
        self.touch_home(old_dir, 0, now);
        if let Ok(inode) = self.inode_mut(ino) {
            inode.ctime = now;
        }
        if let Some(r) = replace {
            if let Ok(inode) = self.inode_mut(r) {
                inode.nlink = inode.nlink.saturating_sub(1);
                inode.ctime = now;
            }
            self.release(r);
        }
        Ok(Reply::Done)
    }

    /// The entries of `dir` held here from the first name after `after`, in name order, as
    /// many as `budget` bytes hold (each its name and [`DIRENT_OVERHEAD`]); whether more
    /// follow.
    fn dirents(&self, dir: Ino, after: Option<&Name>, budget: usize) -> (Listing, bool) {
        let mut entries = Listing::with_capacity(budget / (DIRENT_OVERHEAD + 16), budget);
        let mut bytes = 0;
        if let Some(m) = self.entries.get(&dir) {
            let from = match after {
                Some(a) => Bound::Excluded(a),
                None => Bound::Unbounded,
            };
            for (n, e) in m.range::<Name, _>((from, Bound::Unbounded)) {
                bytes += n.len() + DIRENT_OVERHEAD;
                if bytes > budget {
                    return (entries, true);
                }
                entries.push(n, *e);
            }
        }
        (entries, false)
    }

    /// [`Request::Rmdir`]: the checks of all three phases, then the entry's removal and the
    /// commit.
    fn rmdir(
        &mut self,
        from: ClientId,
        (dir, name): (Ino, Name),
        ino: Ino,
        now: Timespec,
        inval: &mut Vec<(ClientId, Invalidation)>,
    ) -> Result<Reply, Errno> {
        // Asked only of the server whose table gives it the directory's inode.
        if self.table.inode_server(ino) != self.id {
            return Err(Errno::EINVAL);
        }
        match &self.dir_inode_mut(ino)?.body {
            Body::Dir {
                distributed: true, ..
            } => return Err(Errno::EINVAL),
            Body::Dir { dead: true, .. } => return Ok(Reply::Stale),
            _ => {}
        }
        if self.holds.get(&ino).is_some_and(|&c| c != from) || self.marks.contains(&ino) {
            return Ok(Reply::Busy);
        }
        if self.entries.get(&ino).is_some_and(|m| !m.is_empty()) {
            return Err(Errno::ENOTEMPTY);
        }
        let reply = self.rm_map(
            from,
            (dir, name),
            Expect::Ino(ino),
            (false, false),
            now,
            inval,
        )?;
        if matches!(reply, Reply::Mapped { .. }) {
            self.entries.remove(&ino);
            self.listing_changed(ino, inval);
            self.bury(ino, now)?;
        }
        Ok(reply)
    }

    /// Directory `ino`, held here, is removed: no links, dead, freed once not open.
    fn bury(&mut self, ino: Ino, now: Timespec) -> Result<(), Errno> {
        self.holds.remove(&ino);
        let inode = self.dir_inode_mut(ino)?;
        inode.nlink = 0;
        inode.ctime = now;
        if let Body::Dir { dead, .. } = &mut inode.body {
            *dead = true;
        }
        self.release(ino);
        Ok(())
    }

    fn rm_map(
        &mut self,
        from: ClientId,
        (dir, name): (Ino, Name),
        expect: Expect,
        (unlink, touch): (bool, bool),
        now: Timespec,
        inval: &mut Vec<(ClientId, Invalidation)>,
    ) -> Result<Reply, Errno> {
        let found = self.entries.get(&dir).and_then(|m| m.get(&name)).copied();
        let e = match (found, expect) {
            (None, Expect::NotDir { .. }) => {
                self.check_dir_alive(dir)?;
                return Err(Errno::ENOENT);
            }
            (None, Expect::Ino(_)) => return Ok(Reply::Stale),
            (Some(e), Expect::NotDir { .. }) if e.kind == Kind::Dir => return Err(Errno::EISDIR),
            (Some(_), Expect::NotDir { trailing: true }) => return Err(Errno::ENOTDIR),
            (Some(e), Expect::Ino(i)) if e.ino != i => return Ok(Reply::Stale),
            (Some(e), _) => e,
        };
        if let Some(m) = self.entries.get_mut(&dir) {
            m.remove(&name);
            if m.is_empty() {
                self.entries.remove(&dir);
            }
        }
        self.invalidate(from, dir, &name, inval);
        self.listing_changed(dir, inval);
        let home = self.touch_home(dir, -i32::from(e.kind == Kind::Dir), now);
        if (unlink || touch) && e.kind != Kind::Dir {
            if let Ok(inode) = self.inode_mut(e.ino) {
                inode.ctime = now;
                if unlink {
                    inode.nlink = inode.nlink.saturating_sub(1);
                    self.release(e.ino);
                }
            }
        }
        let entries = self.entries_held(dir);
        Ok(Reply::Mapped {
            old: Some(e),
            home,
            entries,
        })
    }

    /// A new inode number in this server's next shard (round robin over its shards); never
    /// [`wire::ANY_INO`](crate::wire::ANY_INO).
    fn new_ino(&mut self) -> Result<Ino, Errno> {
        if self.shards.is_empty() {
            return Err(Errno::ENOSPC);
        }
        let shard = self.shards[self.next_shard % self.shards.len()];
        self.next_shard += 1;
        if self.next_shard == self.shards.len() {
            self.next_shard = 0;
            self.counter += 1;
        }
        let ino = self
            .counter
            .checked_mul(SHARDS as u64)
            .and_then(|n| n.checked_add(shard as u64))
            .filter(|&i| i != crate::wire::ANY_INO)
            .ok_or(Errno::ENOSPC)?;
        debug_assert_eq!(inode_shard(ino), shard);
        Ok(ino)
    }

    fn create(
        &mut self,
        from: ClientId,
        new: NewInode,
        attrs: &Attrs,
        (open, write): (bool, bool),
        now: Timespec,
    ) -> Result<Reply, Errno> {
        let ino = self.new_ino()?;
        let (kind, body) = match new {
            NewInode::File => (
                Kind::File,
                Body::File {
                    blocks: BTreeMap::new(),
                    deferred: Vec::new(),
                    ahead: BTreeSet::new(),
                    writers: if open && write {
                        alloc::vec![(from, 1)]
                    } else {
                        Vec::new()
                    },
                },
            ),
            NewInode::Dir {
                parent,
                distributed,
            } => (
                Kind::Dir,
                Body::Dir {
                    parent,
                    distributed,
                    dead: false,
                },
            ),
            NewInode::Symlink(t) => (Kind::Symlink, Body::Symlink(t)),
            NewInode::Fifo => (Kind::Fifo, Body::Fifo),
        };
        let mut attrs = *attrs;
        match kind {
            Kind::Dir => attrs.mode &= 0o1777,
            Kind::Symlink => attrs.mode = 0o777,
            _ => {}
        }
        let mut inode = Inode::new(kind, &attrs, now, body);
        if let Body::Symlink(t) = &inode.body {
            inode.size = t.len() as u64;
        }
        inode.opens = u32::from(open);
        inode.creator = Some(from);

        self.inodes.insert(ino, inode);
        Ok(Reply::Created(ino))
    }

    /// `CreateNamed`: `add_map`'s refusals first, so that a refused request makes nothing. A
    /// new file opened to write gets its first page's block allocated ahead, if the free
    /// list is long enough (as [`Server::write`]'s): the creator knows its size and blocks
    /// from the reply, and its first write asks nothing.
    #[allow(clippy::too_many_arguments)]
    fn create_named(
        &mut self,
        from: ClientId,
        dir: Ino,
        name: Name,
        new: NewInode,
        attrs: &Attrs,
        opening: (bool, bool),
        now: Timespec,
        inval: &mut Vec<(ClientId, Invalidation)>,
    ) -> Result<Reply, Errno> {
        if self.marks.contains(&dir) {
            return Ok(Reply::Busy);
        }
        if self
            .entries
            .get(&dir)
            .is_some_and(|m| m.contains_key(&name))
        {
            return Err(Errno::EEXIST);
        }
        self.check_dir_alive(dir)?;
        let (kind, distributed) = match &new {
            NewInode::File => (Kind::File, false),
            NewInode::Dir { distributed, .. } => (Kind::Dir, *distributed),
            NewInode::Fifo => (Kind::Fifo, false),
            NewInode::Symlink(_) => return Err(Errno::EINVAL),
        };
        let Reply::Created(ino) = self.create(from, new, attrs, opening, now)? else {
            return Err(Errno::EIO);
        };
        let entry = Entry {
            ino,
            kind,
            distributed,
        };
        let (home, entries) = match self.add_map(from, dir, name, (entry, false), None, now, inval)
        {
            Ok(Reply::Mapped { home, entries, .. }) => (home, entries),
            other => {
                self.free_inode(ino);
                return other;
            }
        };
        let writing = kind == Kind::File && opening == (true, true);
        let first = if writing && self.free.len() >= 8 {
            self.blocks_for(ino, 0..1, 0, 0)?.first().copied()
        } else {
            None
        };
        if writing {
            self.extents.entry(ino).or_default().insert(from);
        }
        Ok(Reply::Made {
            ino,
            home,
            entries,
            first,
        })
    }

    /// Frees `ino` if it has neither names nor open file descriptions.
    fn release(&mut self, ino: Ino) {
        if self
            .inodes
            .get(&ino)
            .is_some_and(|i| i.nlink == 0 && i.opens == 0)
        {
            self.free_inode(ino);
        }
    }

    fn free_inode(&mut self, ino: Ino) {
        if let Some(inode) = self.inodes.remove(&ino) {
            if let Body::File {
                blocks, deferred, ..
            } = inode.body
            {
                self.free.extend(blocks.into_values());
                self.free.extend(deferred);
            }
        }
        self.extents.remove(&ino);
        self.entries.remove(&ino);
        if let Some(set) = self.listers.remove(&ino) {
            self.lister_pairs -= set.len();
        }
    }

    fn stat(&self, ino: Ino) -> Result<Stat, Errno> {
        let i = self.inode(ino)?;
        let (size, blocks) = match &i.body {
            // Blocks allocated past the size for writes to come are not counted.
            Body::File { blocks, ahead, .. } => {
                let end = i.size.div_ceil(BLOCK_SIZE as u64);
                let held = blocks.range(..end).count() - ahead.range(..end).count();
                (i.size, held as u64 * (BLOCK_SIZE as u64 / 512))
            }
            Body::Dir { .. } => {
                let n = self.entries.get(&ino).map_or(0, BTreeMap::len) as u64;
                ((n + 2) * DIRENT_SIZE, 0)
            }
            Body::Symlink(_) | Body::Fifo => (i.size, 0),
        };
        Ok(Stat {
            ino,
            kind: i.kind,
            mode: i.mode,
            nlink: i.nlink,
            uid: i.uid,
            gid: i.gid,
            size,
            blocks,
            rdev: 0,
            atime: i.atime,
            mtime: i.mtime,
            ctime: i.ctime,
        })
    }

    fn file(&self, ino: Ino) -> Result<(&Inode, &BTreeMap<u64, Block>), Errno> {
        let i = self.inode(ino)?;
        match &i.body {
            Body::File { blocks, .. } => Ok((i, blocks)),
            Body::Dir { .. } => Err(Errno::EISDIR),
            Body::Symlink(_) | Body::Fifo => Err(Errno::EINVAL),
        }
    }

    /// The offset of shared description `desc` of `ino` (EBADF if it is not one).
    fn desc_offset(&self, ino: Ino, desc: u64) -> Result<u64, Errno> {
        match self.descs.get(&desc) {
            Some(d) if d.ino == ino => Ok(d.offset),
            _ => Err(Errno::EBADF),
        }
    }

    /// One open file description of `ino` fewer. At the last, blocks a truncation kept from
    /// reuse are free again, and so are those allocated past the size for writes that did
    /// not come (the clients caching them are told to forget them).
    fn close(
        &mut self,
        from: ClientId,
        ino: Ino,
        write: bool,
        inval: &mut Vec<(ClientId, Invalidation)>,
    ) -> Result<Reply, Errno> {
        if self.inode(ino)?.opens == 0 {
            return Err(Errno::EBADF);
        }
        if write {
            self.count_writer(from, ino, false, inval);
        }
        let inode = self.inodes.get_mut(&ino).ok_or(Errno::ENOENT)?;
        inode.opens -= 1;
        if inode.opens == 0 {
            if let Body::File {
                deferred,
                blocks,
                ahead,
                ..
            } = &mut inode.body
            {
                self.free.append(deferred);
                if !ahead.is_empty() {
                    for p in core::mem::take(ahead) {
                        self.free.extend(blocks.remove(&p));
                    }
                    // The closer forgot the blocks with its last description; a client that
                    // still caches them must not write there.
                    self.extent_changed(Some(from), ino, inval);
                }
            }
        }
        self.release(ino);
        Ok(Reply::Done)
    }

    /// Client `from` opened (`opened`) or closed a description of file `ino` that may write.
    /// A client that becomes a writer makes the others forget the size they cache: they may
    /// have been told they were alone, and its writes into blocks it knows are posted.
    fn count_writer(
        &mut self,
        from: ClientId,
        ino: Ino,
        opened: bool,
        inval: &mut Vec<(ClientId, Invalidation)>,
    ) {
        let Some(Inode {
            body: Body::File { writers, .. },
            ..
        }) = self.inodes.get_mut(&ino)
        else {
            return;
        };
        let at = writers.iter().position(|&(c, _)| c == from);
        match (at, opened) {
            (Some(i), true) => writers[i].1 = writers[i].1.saturating_add(1),
            (None, true) => {
                writers.push((from, 1));
                self.extent_changed(Some(from), ino, inval);
            }
            (Some(i), false) if writers[i].1 > 1 => writers[i].1 -= 1,
            (Some(i), false) => {
                writers.swap_remove(i);
            }
            // A close the server never counted as a writer's (a confused client): only that
            // client's own posts could be refused for it.
            (None, false) => {}
        }
    }

    /// Whether no client but `from` has file `ino` open to write.
    fn alone(&self, from: ClientId, ino: Ino) -> bool {
        match self.inodes.get(&ino) {
            Some(Inode {
                body: Body::File { writers, .. },
                ..
            }) => writers.iter().all(|&(c, _)| c == from),
            _ => false,
        }
    }

    /// Tells every client caching `ino`'s size and blocks but `by` (which changed them and
    /// knows how) to forget them.
    fn extent_changed(
        &mut self,
        by: Option<ClientId>,
        ino: Ino,
        inval: &mut Vec<(ClientId, Invalidation)>,
    ) {
        if let Some(set) = self.extents.get_mut(&ino) {
            for &c in set.iter().filter(|&&c| Some(c) != by) {
                inval.push((c, Invalidation::Extent(ino)));
            }
            set.retain(|&c| Some(c) == by);
        }
    }

    /// `Read`: the file's size, the offset read at and the blocks (or holes) from the page
    /// holding it.
    fn read(
        &mut self,
        ino: Ino,
        offset: u64,
        len: u32,
        desc: Option<u64>,
    ) -> Result<(u64, u64, Vec<Option<Block>>), Errno> {
        let offset = match desc {
            Some(d) => self.desc_offset(ino, d)?,
            None => offset,
        };
        let (i, blocks) = self.file(ino)?;
        let Body::File { ahead, .. } = &i.body else {
            return Err(Errno::EINVAL);
        };
        let len = u64::from(len).min((MAX_IO_BLOCKS * BLOCK_SIZE) as u64);
        let end = offset.saturating_add(len).min(i.size);
        let mut out = Vec::new();
        if offset < end {
            let page = BLOCK_SIZE as u64;
            for p in offset / page..end.div_ceil(page) {
                out.push(blocks.get(&p).copied().filter(|_| !ahead.contains(&p)));
            }
        }
        let size = i.size;
        if let Some(d) = desc.and_then(|d| self.descs.get_mut(&d)) {
            d.offset = end.max(offset);
        }
        Ok((size, offset, out))
    }

    /// `Write`: the offset written at and the blocks from the page holding it. A write that
    /// extends a file that had blocks written already is likely followed by more, so it also
    /// allocates as many pages again past it (up to [`PREALLOC_MAX`], from a free list at
    /// least eight times that long), whose blocks the reply carries after the range's: the
    /// client's next writes there need no request to wait for ([`Request::Wrote`]).
    fn write(
        &mut self,
        from: ClientId,
        ino: Ino,
        (offset, len, append, desc): (u64, u32, bool, Option<u64>),
        now: Timespec,
        inval: &mut Vec<(ClientId, Invalidation)>,
    ) -> Result<(u64, Vec<Block>), Errno> {
        let offset = match desc {
            Some(d) => self.desc_offset(ino, d)?,
            None => offset,
        };
        let (i, blocks) = self.file(ino)?;
        let offset = if append { i.size } else { offset };
        let len = u64::from(len);
        if len == 0 {
            return Ok((offset, Vec::new()));
        }
        if len > (MAX_IO_BLOCKS * BLOCK_SIZE) as u64 {
            return Err(Errno::EINVAL);
        }
        if offset >= MAX_FILE_SIZE || MAX_FILE_SIZE - offset < len {
            return Err(Errno::EFBIG);
        }
        let pages = crate::pages_of(offset, len);
        let missing = pages.clone().filter(|p| !blocks.contains_key(p)).count();
        if missing > self.free.len() {
            return Err(Errno::ENOSPC);
        }
        let extends = offset + len >= i.size && desc.is_none();
        // Blocks allocated ahead and not written yet (a new file's first) do not count.
        let written = matches!(&i.body, Body::File { ahead, .. } if blocks.len() > ahead.len());
        let extra = if missing > 0 && written && extends {
            let room = MAX_IO_BLOCKS - pages.clone().count();
            let last = MAX_FILE_SIZE.div_ceil(BLOCK_SIZE as u64);
            (pages.end as usize)
                .min(PREALLOC_MAX)
                .min(room)
                .min((self.free.len() - missing) / 8)
                .min((last - pages.end) as usize)
        } else {
            0
        };
        let out = self.blocks_for(
            ino,
            pages.start..pages.end + extra as u64,
            pages.end,
            offset + len,
        )?;
        let inode = self.inode_mut(ino)?;
        inode.touch(now);
        if let Some(d) = desc.and_then(|d| self.descs.get_mut(&d)) {
            d.offset = offset + len;
        }
        self.extent_changed(Some(from), ino, inval);
        Ok((offset, out))
    }

    /// Regular file `ino`'s blocks for `pages`, each allocated (queued to be zeroed) if the
    /// page has none: those from page `ahead_from` on that get one are allocated ahead of the
    /// writes to come ([`Body::File`]'s `ahead`), the others are written now. Moves the size
    /// to at least `end`.
    fn blocks_for(
        &mut self,
        ino: Ino,
        pages: core::ops::Range<u64>,
        ahead_from: u64,
        end: u64,
    ) -> Result<Vec<Block>, Errno> {
        let Some(Inode {
            body: Body::File { blocks, ahead, .. },
            size,
            ..
        }) = self.inodes.get_mut(&ino)
        else {
            return Err(Errno::ENOENT);
        };
        let mut out = Vec::with_capacity(pages.clone().count());
        for p in pages {
            let b = match blocks.get(&p) {
                Some(&b) => b,
                None => {
                    let b = self.free.pop().ok_or(Errno::ENOSPC)?;
                    blocks.insert(p, b);
                    self.zero.push((b, 0));
                    if p >= ahead_from {
                        ahead.insert(p);
                    }
                    b
                }
            };
            if p < ahead_from {
                ahead.remove(&p);
            }
            out.push(b);
        }
        *size = (*size).max(end);
        Ok(out)
    }

    /// [`Request::Wrote`]: moves the size and times for a write the client made into
    /// `blocks`, copying what it wrote into a block a truncation took since into the block
    /// that holds that page now (allocated, zeroed, if none does).
    fn wrote(
        &mut self,
        from: ClientId,
        ino: Ino,
        (offset, len): (u64, u32),
        written: &[Block],
        now: Timespec,
        inval: &mut Vec<(ClientId, Invalidation)>,
    ) -> Result<Reply, Errno> {
        let (_, blocks) = self.file(ino)?;
        let end = offset.checked_add(u64::from(len)).ok_or(Errno::EFBIG)?;
        if end > MAX_FILE_SIZE {
            return Err(Errno::EFBIG);
        }
        let pages = crate::pages_of(offset, u64::from(len));
        if len == 0 || pages.clone().count() != written.len() {
            return Err(Errno::EINVAL);
        }
        let Some(Inode {
            body: Body::File {
                deferred, writers, ..
            },
            ..
        }) = self.inodes.get(&ino)
        else {
            return Err(Errno::ENOENT);
        };
        if !writers.iter().any(|&(c, _)| c == from) {
            return Err(Errno::EINVAL);
        }
        // Every block is the page's, or one a truncation took from this file; count the
        // pages that need a block before changing anything.
        let mut holes = 0;
        for (p, b) in pages.clone().zip(written) {
            match blocks.get(&p) {
                Some(now_there) if now_there == b => {}
                _ if !deferred.contains(b) => return Err(Errno::EINVAL),
                Some(_) => {}
                None => holes += 1,
            }
        }
        if holes > self.free.len() {
            return Err(Errno::ENOSPC);
        }
        let now_there = self.blocks_for(ino, pages.clone(), pages.end, end)?;
        let mut moves = Vec::new();
        let page = BLOCK_SIZE as u64;
        for ((p, &b), to) in pages.zip(written).zip(now_there) {
            if to != b {
                let from_byte = offset.max(p * page);
                let to_byte = end.min((p + 1) * page);
                let at = (from_byte - p * page) as u32;
                moves.push((b, to, at, (to_byte - from_byte) as u32));
            }
        }
        if !moves.is_empty() {
            self.copy = DataCopy::Blocks(moves);
        }
        self.inode_mut(ino)?.touch(now);
        self.extent_changed(Some(from), ino, inval);
        Ok(Reply::Done)
    }

    /// `Trunc` (and `Open`'s `O_TRUNC`) by client `from`.
    fn truncate(
        &mut self,
        from: ClientId,
        ino: Ino,
        size: u64,
        now: Timespec,
        inval: &mut Vec<(ClientId, Invalidation)>,
    ) -> Result<Reply, Errno> {
        let old = self.file(ino)?.0.size;
        if size > MAX_FILE_SIZE {
            return Err(Errno::EFBIG);
        }
        if size == old {
            return Ok(Reply::Done);
        }
        self.extent_changed(Some(from), ino, inval);
        let shrink = size < old;
        let Some(inode) = self.inodes.get_mut(&ino) else {
            return Err(Errno::ENOENT);
        };
        let open = inode.opens > 0;
        inode.size = size;
        inode.touch(now);
        if let Body::File {
            blocks,
            deferred,
            ahead,
            writers,
        } = &mut inode.body
        {
            if shrink {
                let page = BLOCK_SIZE as u64;
                let mut cut = blocks.split_off(&size.div_ceil(page));
                ahead.split_off(&size.div_ceil(page));
                let tail = (size % page) as u32;
                if let Some(b) = blocks.get_mut(&(size / page)).filter(|_| tail != 0) {
                    // Another writer may be copying into this block past the new end (a
                    // write it began knowing the block): zeroed in place, its bytes would
                    // read as zeros once its `Wrote` moved the end over them. The page
                    // moves to a new block instead (the head copied, the tail zero) and the
                    // old one is held back with the cut ones, where [`Server::wrote`] finds
                    // what was written. Without a free block, the tail is zeroed in place.
                    let others = writers.iter().any(|&(c, _)| c != from);
                    match if others { self.free.pop() } else { None } {
                        Some(new) => {
                            self.zero.push((new, tail));
                            self.copy = DataCopy::Blocks(alloc::vec![(*b, new, 0, tail)]);
                            cut.insert(size / page, core::mem::replace(b, new));
                        }
                        None => self.zero.push((*b, tail)),
                    }
                }
                if open {
                    deferred.extend(cut.into_values());
                } else {
                    self.free.extend(cut.into_values());
                }
            }
        }
        Ok(Reply::Done)
    }
}
