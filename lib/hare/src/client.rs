//! The client library: Linux's file calls turned into messages to the file servers (§3.2,
//! fos Figure 5), with data copied straight to and from the shared buffer cache (§3.3).
//!
//! Each operation is an `async fn`: it sends requests through a [`Transport`] and awaits
//! the replies, so the same code runs under the kernel (which sleeps the calling thread until
//! a reply with its tag arrives: each pending operation is one fos *continuation*) and under
//! the host tests (which deliver messages in an order they choose).
//!
//! # Lookups
//!
//! Paths are resolved with NR-FS's walker ([`nrfs::walk`]), so the rules are Linux's, against
//! the client's lookup cache. A walk that needs something the cache does not hold stops, the
//! client asks the server holding it (`Lookup`, `DirInfo`, `Readlink`), and the walk runs
//! again. Before every walk the client applies the invalidations its transport has queued
//! (§3.7.2), and a lookup makes the server remember that this client caches the entry.
//!
//! A directory's whole listing is kept too (Reef's addition): each server that gave a batch of
//! it remembers the client as a lister and tells it to forget the listing at the next change
//! ([`Invalidation::Listing`]). Until then, listing the directory again asks nothing, and the
//! listing answers the walk's lookups in it, of names there and of names not there.
//!
//! # Operations that touch several servers
//!
//! A name and its inode can be on different servers (creation affinity, §3.7.5, picks the
//! inode's), so an operation is a sequence of requests, ordered so that no entry ever names a
//! missing inode: `create` makes the inode, then adds its entry (and destroys the inode if the
//! name appeared meanwhile); `unlink` removes the entry, then the name's link; `rename` links
//! the inode, adds the new entry and removes the old one (§5.4's `ADD_MAP` then `RM_MAP`);
//! `rmdir` is the three-phase protocol of §3.4.1. A reply saying an entry changed since the
//! client looked ([`Reply::Stale`]) restarts the operation from its path. Where one server
//! holds everything an operation changes, its messages travel as one (§3.7.4):
//! `CreateNamed`, an `RmMap` that also unlinks, `Rename`.
//!
//! # Differences from NR-FS's answers
//!
//! These follow from distributing the state, and the tests allow exactly these:
//! a distributed directory's size and times count only the entries on its home server; a new
//! inode does not inherit a set-group-ID directory's group.
//!
//! # Techniques that can be switched off
//!
//! [`Techniques`] turns each of the thesis's techniques off for the §5.4 ablations: directory
//! distribution (every directory keeps its entries on its home server), directory broadcast
//! (a request for every server goes to one after the other), the lookup cache (no entry and
//! no listing is remembered between operations) and creation affinity (an inode goes to its entry's
//! server). The answers stay the same; only the messages change.

use alloc::boxed::Box;
use alloc::collections::{BTreeMap, BTreeSet};
use alloc::sync::Arc;
use alloc::vec;
use alloc::vec::Vec;
use core::cell::{Cell, RefCell};
use core::future::{poll_fn, Future};
use core::pin::Pin;
use core::task::Poll;

use abi::Errno;
use nrfs::walk::{self, Exit, Namespace};
use nrfs::Last;

use crate::proto::{
    seek, Entry, Expect, Invalidation, Listing, Name, NewInode, Reply, Request, Target, MAX_DATA,
    MAX_IO_BLOCKS, MAX_POSTED_BLOCKS,
};
use crate::shard::ShardTable;
use crate::{Attrs, Block, Ino, Kind, ServerId, Stat, Timespec, BLOCK_SIZE, NAME_MAX, ROOT_INO};

/// How a client reaches the servers.
pub trait Transport {
    /// Sends `req` to `server`; completes with its reply.
    fn call(&self, server: ServerId, req: Request) -> impl Future<Output = Reply>;
    /// Sends `req`, whose reply the client does not need (`close`), to `server`, before any
    /// request sent to it later; may return before the server has it. At most
    /// [`crate::wire::IN_FLIGHT`] requests stay unanswered at a server.
    fn post(&self, server: ServerId, req: Request);
    /// Moves the invalidations delivered to this client so far into `out`.
    fn invalidations(&self, out: &mut Vec<Invalidation>);
}

/// The shared buffer cache: blocks of [`BLOCK_SIZE`] bytes that every client reads and writes
/// directly (in Reef, kernel frames reached through the direct map).
pub trait BufferCache {
    /// Copies `buf.len()` bytes of block `block` from byte `offset`.
    fn read(&self, block: Block, offset: usize, buf: &mut [u8]);
    /// Copies `data` into block `block` at byte `offset`.
    fn write(&self, block: Block, offset: usize, data: &[u8]);
}

/// Where the client creates inodes and directories.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Policy {
    /// This client's designated nearby server (§3.7.5).
    pub local: ServerId,
    /// Servers close to this client (same NUMA node): a new inode goes to its entry's server
    /// if that is one of them, else to `local`.
    pub near: BTreeSet<ServerId>,
    /// Every new directory spreads its entries over all servers (§3.4's flag for all, as the
    /// thesis's environment variable); else only those made with [`Client::mkdir`]'s flag.
    pub distribute_dirs: bool,
    /// Most entries the lookup cache holds (and most directories and symlink targets it
    /// remembers); past it the client forgets some (a server may still send invalidations
    /// for them, which do nothing).
    pub cache_entries: usize,
    /// The techniques in use (all, unless an ablation turns one off).
    pub techniques: Techniques,
}

/// Hare's techniques that §5.4 switches off one at a time to measure each; all on by default.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Techniques {
    /// Directory distribution (§3.4): off, every directory is made undistributed, whatever
    /// the flag or the policy asks.
    pub distribution: bool,
    /// Directory broadcast (§3.7.3): off, a request for several servers goes to one after
    /// the other, each sent when the previous reply has come.
    pub broadcast: bool,
    /// The lookup cache (§3.7.1): off, the client remembers no directory entry from one
    /// operation to the next (what never changes, whether an inode is a distributed
    /// directory and a symlink's target, is still remembered).
    pub lookup_cache: bool,
    /// Creation affinity (§3.7.5): off, a new inode goes to the server of its entry.
    pub affinity: bool,
    /// Direct access to the buffer cache (§3.3): off, file data travels in the messages
    /// (`ReadData`, `WriteData`, a page at a time) and the server copies it between them and
    /// the cache.
    pub direct: bool,
}

impl Default for Techniques {
    fn default() -> Self {
        Self {
            distribution: true,
            broadcast: true,
            lookup_cache: true,
            affinity: true,
            direct: true,
        }
    }
}

/// Flags of [`Client::open`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct OpenFlags {
    /// `O_CREAT`.
    pub create: bool,
    /// `O_EXCL`.
    pub exclusive: bool,
    /// `O_TRUNC`.
    pub truncate: bool,
    /// `O_APPEND`.
    pub append: bool,
    /// `O_NOFOLLOW`: a symlink in the last component is not followed.
    pub nofollow: bool,
    /// The caller lists the directory next (`O_DIRECTORY`, as `opendir` opens): a
    /// directory's open brings the first entries of its listing, which the first
    /// [`Client::read_dir`] takes; a distributed one's, every server's first batch, asked
    /// at once.
    pub list: bool,
    /// `O_RDONLY`: the description only reads. One that may write makes its client a
    /// writer of the file for the servers (`Request::Open`'s `write`): the others then ask
    /// the server at the end of the file, where a writer's posted writes may have moved it.
    pub read_only: bool,
}

/// An attribute change of an open file ([`Client::fset`]): `fchmod`, `fchown`, `futimens`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SetAttr {
    /// The permission bits.
    Mode(u32),
    /// The owner and group (`None` leaves one).
    Owner(Option<u32>, Option<u32>),
    /// The access and modification times (`None` leaves one).
    Times(Option<Timespec>, Option<Timespec>),
}

/// A client's open file description.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fd(pub u32);

#[derive(Clone, Copy, Debug)]
struct OpenFile {
    ino: Ino,
    kind: Kind,
    /// The offset while the description is this client's alone.
    offset: u64,
    append: bool,
    /// The server's description once it is shared (§3.5.1), which then holds the offset.
    shared: Option<u64>,
    /// Opened `O_RDONLY`: a write is `EBADF`.
    read_only: bool,
}

impl OpenFile {
    /// The server counts this description as a writer's: opened to write, and not shared
    /// (a shared description's writes go through the server).
    fn writer(&self) -> bool {
        !self.read_only && self.shared.is_none()
    }
}

/// An open file description shared with another client (a forked process on another core):
/// [`Client::share`] makes one, [`Client::adopt`] turns it into a descriptor there.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SharedFd {
    ino: Ino,
    kind: Kind,
    append: bool,
    read_only: bool,
    desc: u64,
}

/// Whether a read or write of an inode of kind `kind` reaches data: a regular file's, as
/// NR-FS's `read` and `write` answer (`EISDIR` for a directory, `EINVAL` for the rest, even
/// for no bytes).
fn data_kind(kind: Kind) -> Result<(), Errno> {
    match kind {
        Kind::File => Ok(()),
        Kind::Dir => Err(Errno::EISDIR),
        _ => Err(Errno::EINVAL),
    }
}

/// What a client counts.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ClientStats {
    /// Requests sent.
    pub requests: u64,
    /// Lookups answered from the cache.
    pub cache_hits: u64,
    /// Invalidations applied.
    pub invalidations: u64,
    /// Operations restarted after a stale entry.
    pub restarts: u64,
    /// Requests sent again after [`Reply::Busy`].
    pub busy_retries: u64,
    /// Requests sent without waiting for their replies ([`Transport::post`]; counted in
    /// `requests` too).
    pub posted: u64,
    /// Opens of a directory to list it that found its listing kept ([`Client::read_dir`]).
    pub listing_hits: u64,
}

/// What [`Client::statfs`] finds, over every server.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Space {
    /// Buffer-cache blocks free.
    pub free_blocks: u64,
    /// Blocks held back from reuse until their file's last close (§3.5).
    pub deferred_blocks: u64,
    /// Inodes in use.
    pub inodes: u64,
}

/// Why an operation stopped: an error for the caller, or a restart from the path.
enum Fail {
    Errno(Errno),
    Restart,
}

impl From<Errno> for Fail {
    fn from(e: Errno) -> Self {
        Fail::Errno(e)
    }
}

type Res<T> = Result<T, Fail>;

/// Runs an operation (an expression giving a `Res`) again while it asks for a restart.
macro_rules! retry {
    ($client:ident, $op:expr) => {{
        let mut restarts = 0;
        loop {
            match $op {
                Ok(r) => break Ok(r),
                Err(Fail::Errno(e)) => break Err(e),
                Err(Fail::Restart) if restarts < MAX_RESTARTS => {
                    restarts += 1;
                    $client.stats.restarts += 1;
                }
                Err(Fail::Restart) => break Err(Errno::EIO),
            }
        }
    }};
}

/// How many times one operation restarts before it answers EIO: restarts come from
/// concurrent changes to the names it uses, and each one means another operation finished.
const MAX_RESTARTS: u32 = 1000;

/// What a walk was missing.
#[derive(Clone, Debug)]
enum Need {
    Lookup(Ino, Name),
    Dir(Ino),
    Link(Ino),
}

/// A directory entry's key, `(directory, name)`, owned or borrowed: the maps keyed by
/// `(Ino, Name)` are searched through `&dyn EntryKey`, so a look-up with a name
/// slice allocates nothing (a walk looks up every component, and the kernel heap is not free
/// under emulation).
trait EntryKey {
    fn parts(&self) -> (Ino, &[u8]);
}

impl EntryKey for (Ino, Name) {
    fn parts(&self) -> (Ino, &[u8]) {
        (self.0, &self.1)
    }
}

impl EntryKey for (Ino, &[u8]) {
    fn parts(&self) -> (Ino, &[u8]) {
        *self
    }
}

impl PartialEq for dyn EntryKey + '_ {
    fn eq(&self, other: &Self) -> bool {
        self.parts() == other.parts()
    }
}

impl Eq for dyn EntryKey + '_ {}

impl PartialOrd for dyn EntryKey + '_ {
    fn partial_cmp(&self, other: &Self) -> Option<core::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

/// The order of `(Ino, Name)` itself (the number, then the name's bytes), as `Borrow`
/// requires.
impl Ord for dyn EntryKey + '_ {
    fn cmp(&self, other: &Self) -> core::cmp::Ordering {
        self.parts().cmp(&other.parts())
    }
}

impl<'a> core::borrow::Borrow<dyn EntryKey + 'a> for (Ino, Name) {
    fn borrow(&self) -> &(dyn EntryKey + 'a) {
        self
    }
}

/// What one resolution learnt: absent names, parents and errors, which are not cached, and
/// what it fetched, which the cache may already have forgotten to stay in its bound.
#[derive(Default)]
struct Scratch {
    found: BTreeMap<(Ino, Name), Entry>,
    dirs: BTreeMap<Ino, bool>,
    links: BTreeMap<Ino, Vec<u8>>,
    absent: BTreeSet<(Ino, Name)>,
    lookup_errors: BTreeMap<(Ino, Name), Errno>,
    parents: BTreeMap<Ino, Ino>,
    not_dirs: BTreeMap<Ino, Errno>,
}

/// The cache and scratch as a [`Namespace`] for the walker; a miss records what is needed
/// and fails the walk.
struct View<'a> {
    mount_point: &'a [u8],
    covered: &'a [(Ino, Vec<u8>)],
    entries: &'a BTreeMap<(Ino, Name), Entry>,
    /// The kept listings: a directory's whole listing answers for any name in it, there or
    /// not, as fresh as the lookup cache.
    listings: &'a BTreeMap<Ino, Arc<Listing>>,
    dirs: &'a BTreeMap<Ino, bool>,
    links: &'a BTreeMap<Ino, Vec<u8>>,
    scratch: &'a Scratch,
    need: RefCell<Option<Need>>,
    hits: Cell<u64>,
}

impl View<'_> {
    fn miss<T>(&self, need: Need) -> Result<T, Errno> {
        *self.need.borrow_mut() = Some(need);
        Err(Errno::EAGAIN)
    }

    /// Symlink `ino`'s target as written (`readlink`).
    fn target(&self, ino: Ino) -> Result<Vec<u8>, Errno> {
        match self
            .links
            .get(&ino)
            .or_else(|| self.scratch.links.get(&ino))
        {
            Some(t) => Ok(t.clone()),
            None => self.miss(Need::Link(ino)),
        }
    }

    /// Whether the cache (or this walk) holds entry `name` of `dir`, without asking for it.
    fn holds(&self, dir: Ino, name: &[u8]) -> bool {
        let key: &dyn EntryKey = &(dir, name);
        self.entries.contains_key(key)
            || self.scratch.found.contains_key(key)
            || self.kept(dir, name).is_some_and(|e| e.is_some())
    }

    /// What `dir`'s kept listing says of `name`: its entry or none (`None` if no listing of
    /// `dir` is kept).
    fn kept(&self, dir: Ino, name: &[u8]) -> Option<Option<Entry>> {
        self.listings.get(&dir).map(|l| l.find(name))
    }
}

impl Namespace for View<'_> {
    fn kind(&self, ino: Ino) -> Result<Kind, Errno> {
        if self.dirs.contains_key(&ino) || self.scratch.dirs.contains_key(&ino) {
            return Ok(Kind::Dir);
        }
        if let Some(&e) = self.scratch.not_dirs.get(&ino) {
            return Err(e);
        }
        self.miss(Need::Dir(ino))
    }

    fn lookup(&self, dir: Ino, name: &[u8]) -> Result<Option<(Ino, Kind)>, Errno> {
        let key: &dyn EntryKey = &(dir, name);
        if let Some(e) = self.entries.get(key) {
            self.hits.set(self.hits.get() + 1);
            return Ok(Some((e.ino, e.kind)));
        }
        if let Some(e) = self.scratch.found.get(key) {
            return Ok(Some((e.ino, e.kind)));
        }
        if self.scratch.absent.contains(key) {
            return Ok(None);
        }
        if let Some(&e) = self.scratch.lookup_errors.get(key) {
            return Err(e);
        }
        if let Some(kept) = self.kept(dir, name) {
            self.hits.set(self.hits.get() + 1);
            return Ok(kept.map(|e| (e.ino, e.kind)));
        }
        self.miss(Need::Lookup(dir, name.to_vec()))
    }

    fn parent(&self, dir: Ino) -> Result<Ino, Errno> {
        if dir == ROOT_INO {
            // Mounted below the root, `..` of Hare's root is outside (a path's own `..` are
            // applied by name before Hare sees it: only a symlink's meet this).
            return match self.mount_point.is_empty() {
                true => Ok(ROOT_INO),
                false => Err(Errno::EXDEV),
            };
        }
        if let Some(&e) = self.scratch.not_dirs.get(&dir) {
            return Err(e);
        }
        match self.scratch.parents.get(&dir) {
            Some(&p) => Ok(p),
            None => self.miss(Need::Dir(dir)),
        }
    }

    fn link_target(&self, ino: Ino) -> Result<Vec<u8>, Errno> {
        in_mount(self.mount_point, &self.target(ino)?)
    }

    /// The directories [`Client::set_covered`] named.
    fn covered(&self, dir: Ino) -> bool {
        self.covered.iter().any(|&(d, _)| d == dir)
    }
}

/// Symlink target `t` as Hare resolves it under mount point `mount` (empty: Hare is the
/// root): an absolute target under the mount point is taken from Hare's root; one outside it
/// leads out of Hare, which a walk inside Hare cannot follow (`EXDEV`; [`Client::exit`] gives
/// the path to go on with).
fn in_mount(mount: &[u8], t: &[u8]) -> Result<Vec<u8>, Errno> {
    if mount.is_empty() || t.first() != Some(&b'/') {
        return Ok(t.to_vec());
    }
    match t.strip_prefix(mount) {
        Some([]) => Ok(b"/".to_vec()),
        Some(rest) if rest[0] == b'/' => Ok(rest.to_vec()),
        _ => Err(Errno::EXDEV),
    }
}

/// A listing an open of a directory began ([`OpenFlags::list`]), which the first
/// [`Client::read_dir`] finishes.
enum Begun {
    /// A listing kept since an earlier `read_dir`, whole.
    Kept(Arc<Listing>),
    /// An ordinary directory's first batch, from its home, and whether more follow.
    Ordinary(Listing, bool),
    /// A distributed directory's shares as far as they came.
    Shares(Batches),
}

/// A listing being gathered from servers' batches.
struct Batches {
    /// The entries so far, in no order.
    entries: Listing,
    /// The servers still to ask, each with the name its share goes on after (`None`: from
    /// its start).
    asking: Vec<(ServerId, Option<Name>)>,
}

impl Batches {
    fn new() -> Batches {
        Batches {
            entries: Listing::new(),
            asking: Vec::new(),
        }
    }

    /// Takes server `s`'s batch, after which more of its share follow if `more`. (A batch
    /// followed by more holds at least one name, as one page holds any name.)
    fn take(&mut self, s: ServerId, entries: Listing, more: bool) {
        if let (true, Some(last)) = (more, entries.last_name()) {
            self.asking.push((s, Some(last.to_vec())));
        }
        match self.entries.is_empty() {
            true => self.entries = entries,
            false => self.entries.append(&entries),
        }
    }
}

/// A client library instance. See the module documentation.
pub struct Client<T, B> {
    table: ShardTable,
    transport: T,
    cache: B,
    policy: Policy,
    /// The lookup cache (§3.7.1).
    entries: BTreeMap<(Ino, Name), Entry>,
    /// Directories seen, and whether each is distributed (never changes).
    dirs: BTreeMap<Ino, bool>,
    /// Symlink targets seen (never change; inode numbers are not reused).
    links: BTreeMap<Ino, Vec<u8>>,
    files: BTreeMap<u32, OpenFile>,
    /// What the client knows of the regular files it has open: size and blocks (§3.3).
    extents: BTreeMap<Ino, Extent>,
    /// The listings the opens of directories began ([`OpenFlags::list`]), until the first
    /// `read_dir`.
    listed: BTreeMap<u32, Begun>,
    /// Whole listings of directories, kept while no server that gave a part of one says it
    /// changed ([`Invalidation::Listing`]): Reef's addition to the lookup cache (§3.7.1),
    /// so that listing a directory again asks nothing, as Linux's dentry cache does.
    listings: BTreeMap<Ino, Arc<Listing>>,
    /// The bytes of `listings`, at most [`LISTING_BYTES_KEPT`].
    listing_bytes: usize,
    next_fd: u32,
    /// Where the kernel mounted Hare (empty: as the root), for absolute symlink targets.
    mount_point: Vec<u8>,
    /// Hare's directories another file system covers, each with its path
    /// ([`Client::set_covered`]).
    covered: Vec<(Ino, Vec<u8>)>,
    /// The ordinary directories this client made an entry in since [`Client::take_creates`],
    /// each with its size after the entry (at most [`CREATES_KEPT`]).
    creates: Vec<(Ino, u32)>,
    stats: ClientStats,
}

/// What a client knows of a regular file it has open (§3.3: the block list a client keeps,
/// so that it reads and writes the file's blocks without asking its server): its size and
/// blocks as its own operations left them, while no invalidation said another client changed
/// them ([`Invalidation::Extent`], applied before every read and write as lookups apply
/// theirs). A read of known blocks asks nothing; a write into known blocks posts
/// [`Request::Wrote`] and waits for nothing.
#[derive(Debug, Default)]
struct Extent {
    /// Descriptors of the client open on the file (the entry goes with the last, or stays
    /// forgotten: [`EXTENTS_KEPT`]).
    opens: u32,
    /// The size, if known.
    size: Option<u64>,
    /// Known pages: a block, or a hole (below the size).
    blocks: BTreeMap<u64, Option<Block>>,
    /// No other client has the file open to write (`Reply::Opened`'s `alone`): a read that
    /// reaches the known size may stop there without asking.
    alone: bool,
}

impl Extent {
    /// Forgets the size and blocks (another client changed them).
    fn forget(&mut self) {
        self.size = None;
        self.alone = false;
        self.blocks.clear();
    }

    /// The blocks of pages `pages`, if every one is known.
    fn known(&self, pages: core::ops::Range<u64>) -> Option<Vec<Option<Block>>> {
        pages.map(|p| self.blocks.get(&p).copied()).collect()
    }

    /// Learns what a server answered: the size, whether the client is alone, and `blocks`
    /// from the page holding byte `at`.
    fn answered(
        &mut self,
        size: u64,
        alone: bool,
        at: u64,
        blocks: impl IntoIterator<Item = Option<Block>>,
    ) {
        self.size = Some(size);
        self.alone = alone;
        self.learn(at, blocks);
    }

    /// Learns `blocks`, from the page holding byte `at`.
    fn learn(&mut self, at: u64, blocks: impl IntoIterator<Item = Option<Block>>) {
        let first = at / BLOCK_SIZE as u64;
        for (p, b) in (first..).zip(blocks) {
            self.blocks.insert(p, b);
        }
    }

    /// The client truncated the file to `size` (pages from the one holding the new end are
    /// forgotten: the server may have moved that page to another block). A size not known
    /// stays unknown: the server tells only clients it knows to know it.
    fn cut(&mut self, size: u64) {
        if let Some(old) = self.size {
            if size < old {
                self.blocks.split_off(&(size / BLOCK_SIZE as u64));
            }
            self.size = Some(size);
        }
    }
}

/// Entries of files no longer open a client keeps in its map of extents (forgotten).
const EXTENTS_KEPT: usize = 8;

/// Most bytes the listings a client keeps hold together ([`Listing::bytes`]; a larger
/// listing is not kept; past it, others are forgotten).
pub const LISTING_BYTES_KEPT: usize = 512 * 1024;

/// Bytes whose blocks a read asks for at least, when the client keeps what it learns (Linux's
/// default read-ahead is as long): a read of a page at a time (`execve` loading a program
/// from Hare) then asks once per 32 pages, not once per page.
pub const READ_AHEAD: usize = 32 * BLOCK_SIZE;

/// Most creates [`Client::take_creates`] reports at once (more are not counted).
pub const CREATES_KEPT: usize = 1024;

impl<T: Transport, B: BufferCache> Client<T, B> {
    /// A client of the servers of `table`, reached through `transport`, sharing the buffer
    /// cache `cache`; `root_distributed` says how the root directory was made.
    pub fn new(
        table: ShardTable,
        transport: T,
        cache: B,
        policy: Policy,
        root_distributed: bool,
    ) -> Self {
        let mut dirs = BTreeMap::new();
        dirs.insert(ROOT_INO, root_distributed);
        Self {
            table,
            transport,
            cache,
            policy,
            entries: BTreeMap::new(),
            dirs,
            links: BTreeMap::new(),
            files: BTreeMap::new(),
            extents: BTreeMap::new(),
            listed: BTreeMap::new(),
            listings: BTreeMap::new(),
            listing_bytes: 0,
            next_fd: 0,
            mount_point: Vec::new(),
            covered: Vec::new(),
            creates: Vec::new(),
            stats: ClientStats::default(),
        }
    }

    /// Forgets every cached entry and which directories are distributed, at once (not at
    /// the next walk, as an [`Invalidation::everything`] would: a descriptor's operations do
    /// not walk): what a client does after a resize or a distribution it was held back for.
    pub fn forget_cache(&mut self) {
        self.entries.clear();
        self.dirs.clear();
        self.forget_listings();
        self.extents.values_mut().for_each(Extent::forget);
    }

    /// The ordinary directories the client made an entry in since the last call, each with
    /// its number of entries just after (its home server's count): what a policy of dynamic
    /// distribution (§6.1.2) watches (`crate::resize::distribute`). Nothing while
    /// distribution is switched off.
    pub fn take_creates(&mut self) -> Vec<(Ino, u32)> {
        core::mem::take(&mut self.creates)
    }

    /// Notes an entry made in directory `dir` (`distributed` or not), whose server holds
    /// `entries` of it now.
    fn created_in(&mut self, dir: Ino, distributed: bool, entries: u32) {
        if !distributed && self.policy.techniques.distribution && self.creates.len() < CREATES_KEPT
        {
            self.creates.push((dir, entries));
        }
    }

    /// Says that Hare is mounted at absolute path `path` (no trailing slash; empty: Hare
    /// is the root): an absolute symlink target under it resolves inside Hare, one outside
    /// it fails with `EXDEV` (a walk inside Hare cannot leave it; [`Client::exit`] says where
    /// it goes on).
    pub fn set_mount_point(&mut self, path: &[u8]) {
        self.mount_point = path.to_vec();
    }

    /// Says that Hare's directories `dirs` are covered by other file systems, each at its
    /// absolute path (with Hare as the root, the kernel's `/dev`, `/proc` and `/sys` over
    /// Hare's own): a walk that reaches one through a symlink fails with `EXDEV`, and
    /// [`Client::exit`] gives the path to go on with there.
    pub fn set_covered(&mut self, dirs: Vec<(Ino, Vec<u8>)>) {
        self.covered = dirs;
    }

    /// What the client has counted.
    pub fn stats(&self) -> ClientStats {
        self.stats
    }

    /// Entries in the lookup cache.
    pub fn cached_entries(&self) -> usize {
        self.entries.len()
    }

    /// The transport (for what it counts).
    pub fn transport(&self) -> &T {
        &self.transport
    }

    /// The transport, to change (a resize adds and removes servers' connections).
    pub fn transport_mut(&mut self) -> &mut T {
        &mut self.transport
    }

    /// Takes a new policy (a resize changes which servers are near).
    pub fn set_policy(&mut self, policy: Policy) {
        self.policy = policy;
    }

    /// The buffer cache (for what it counts).
    pub fn buffer_cache(&self) -> &B {
        &self.cache
    }

    /// Sends one request; retries while the server says [`Reply::Busy`]; an error reply
    /// becomes `Err`.
    async fn rpc(&mut self, server: ServerId, req: Request) -> Res<Reply> {
        loop {
            self.stats.requests += 1;
            match self.transport.call(server, req.clone()).await {
                Reply::Busy => self.stats.busy_retries += 1,
                Reply::Err(e) => return Err(e.into()),
                r => return Ok(r),
            }
        }
    }

    /// Sends `req` to the server holding inode `ino`.
    async fn at_inode(&mut self, ino: Ino, req: Request) -> Res<Reply> {
        let s = self.table.inode_server(ino);
        self.rpc(s, req).await
    }

    /// Sends `req` to each of `servers` at once and collects the replies (directory
    /// broadcast, §3.7.3).
    async fn broadcast(&mut self, servers: &[ServerId], req: &Request) -> Vec<Reply> {
        let reqs = servers.iter().map(|_| req.clone()).collect();
        self.broadcast_each(servers, reqs).await
    }

    /// Sends `reqs[i]` to `servers[i]`, all at once, and collects the replies in order
    /// (without broadcast, one after the other).
    async fn broadcast_each(&mut self, servers: &[ServerId], reqs: Vec<Request>) -> Vec<Reply> {
        self.stats.requests += servers.len() as u64;
        let t = &self.transport;
        if !self.policy.techniques.broadcast {
            let mut out = Vec::with_capacity(servers.len());
            for (&s, r) in servers.iter().zip(reqs) {
                out.push(t.call(s, r).await);
            }
            return out;
        }
        let mut pending: Vec<Pin<Box<dyn Future<Output = Reply> + '_>>> = servers
            .iter()
            .zip(reqs)
            .map(|(&s, r)| Box::pin(t.call(s, r)) as Pin<Box<dyn Future<Output = Reply>>>)
            .collect();
        let mut out: Vec<Option<Reply>> = vec![None; servers.len()];
        poll_fn(|cx| {
            let mut done = true;
            for (f, slot) in pending.iter_mut().zip(out.iter_mut()) {
                if slot.is_none() {
                    match f.as_mut().poll(cx) {
                        Poll::Ready(r) => *slot = Some(r),
                        Poll::Pending => done = false,
                    }
                }
            }
            if done {
                Poll::Ready(())
            } else {
                Poll::Pending
            }
        })
        .await;
        out.into_iter().flatten().collect()
    }

    /// Applies the queued invalidations (before every walk, §3.7.2).
    fn apply_invalidations(&mut self, scratch: &mut Scratch) {
        let mut inval = Vec::new();
        self.transport.invalidations(&mut inval);
        self.stats.invalidations += inval.len() as u64;
        for i in inval {
            let (dir, name) = match i {
                Invalidation::Extent(ino) => {
                    if let Some(e) = self.extents.get_mut(&ino) {
                        e.forget();
                    }
                    continue;
                }
                Invalidation::Listing(dir) => {
                    self.forget_listing(dir);
                    continue;
                }
                Invalidation::Entries { dir, name } => (dir, name),
            };
            if dir == 0 && name.is_none() {
                // Everything. Whether a directory is distributed is forgotten too: one may
                // have become distributed (`crate::resize::distribute`).
                scratch.found.clear();
                scratch.dirs.clear();
                self.forget_cache();
                continue;
            }
            match name {
                Some(name) => {
                    let key = (dir, name);
                    scratch.found.remove(&key);
                    self.entries.remove(&key);
                }
                None => {
                    scratch.found.retain(|(d, _), _| *d != dir);
                    self.entries.retain(|(d, _), _| *d != dir);
                }
            }
        }
    }

    /// Runs `f` (a walk over the cache) until it has everything it needs.
    async fn walk<R>(&mut self, f: impl Fn(&View<'_>) -> Result<R, Errno>) -> Res<R> {
        let mut scratch = Scratch::default();
        loop {
            self.apply_invalidations(&mut scratch);
            let (r, need, hits) = {
                let view = View {
                    mount_point: &self.mount_point,
                    covered: &self.covered,
                    entries: &self.entries,
                    listings: &self.listings,
                    dirs: &self.dirs,
                    links: &self.links,
                    scratch: &scratch,
                    need: RefCell::new(None),
                    hits: Cell::new(0),
                };
                let r = f(&view);
                (r, view.need.into_inner(), view.hits.get())
            };
            self.stats.cache_hits += hits;
            match need {
                None => return r.map_err(Fail::Errno),
                Some(need) => self.fetch(need, &mut scratch).await?,
            }
        }
    }

    /// Asks for what a walk missed.
    async fn fetch(&mut self, need: Need, scratch: &mut Scratch) -> Res<()> {
        match need {
            Need::Lookup(dir, name) => {
                let dist = self.distributed(dir).await?;
                let s = self.table.entry_server(dir, &name, dist);
                match self
                    .rpc(
                        s,
                        Request::Lookup {
                            dir,
                            name: name.clone(),
                        },
                    )
                    .await
                {
                    Ok(Reply::Entry(e)) => {
                        if e.kind == Kind::Dir {
                            scratch.dirs.insert(e.ino, e.distributed);
                        }
                        scratch.found.insert((dir, name.clone()), e);
                        self.remember(dir, name, e);
                    }
                    Ok(_) => return Err(Errno::EIO.into()),
                    Err(Fail::Errno(Errno::ENOENT)) => {
                        scratch.absent.insert((dir, name));
                    }
                    Err(Fail::Errno(e)) => {
                        scratch.lookup_errors.insert((dir, name), e);
                    }
                    Err(Fail::Restart) => return Err(Fail::Restart),
                }
            }
            Need::Dir(dir) => match self.at_inode(dir, Request::DirInfo { dir }).await {
                Ok(Reply::Dir {
                    parent,
                    distributed,
                }) => {
                    self.remember_dir(dir, distributed);
                    scratch.dirs.insert(dir, distributed);
                    scratch.parents.insert(dir, parent);
                }
                Ok(_) => return Err(Errno::EIO.into()),
                Err(Fail::Errno(e)) => {
                    scratch.not_dirs.insert(dir, e);
                }
                Err(Fail::Restart) => return Err(Fail::Restart),
            },
            Need::Link(ino) => match self.at_inode(ino, Request::Readlink { ino }).await? {
                Reply::Target(t) => {
                    let cap = self.policy.cache_entries;
                    scratch.links.insert(ino, t.clone());
                    bounded_insert(&mut self.links, ino, t, cap);
                }
                _ => return Err(Errno::EIO.into()),
            },
        }
        Ok(())
    }

    /// Caches entry `name` of `dir`.
    fn remember(&mut self, dir: Ino, name: Name, e: Entry) {
        if e.kind == Kind::Dir {
            self.remember_dir(e.ino, e.distributed);
        }
        if self.policy.techniques.lookup_cache {
            let cap = self.policy.cache_entries;
            bounded_insert(&mut self.entries, (dir, name), e, cap);
        }
    }

    /// Forgets entry `name` of `dir` (the lookup cache's, if it has it).
    fn forget(&mut self, dir: Ino, name: &[u8]) {
        self.entries.remove(&(dir, name) as &dyn EntryKey);
    }

    /// Keeps `listing`, directory `dir`'s whole listing just gathered, if the lookup cache is
    /// on and it fits in [`LISTING_BYTES_KEPT`] with others forgotten. Every server that
    /// gave a batch of it counted this client as a lister, so it says when its part changes;
    /// an invalidation queued while the listing was gathered only makes it forgotten.
    fn keep_listing(&mut self, dir: Ino, listing: &Arc<Listing>) {
        let n = listing.bytes();
        if !self.policy.techniques.lookup_cache || n > LISTING_BYTES_KEPT {
            return;
        }
        self.forget_listing(dir);
        while self.listing_bytes + n > LISTING_BYTES_KEPT {
            match self.listings.pop_first() {
                Some((_, l)) => self.listing_bytes -= l.bytes(),
                None => break,
            }
        }
        self.listing_bytes += n;
        self.listings.insert(dir, listing.clone());
        // A walk through a directory the listing names needs to know whether it is
        // distributed, as a lookup's answer would have said.
        for (_, e) in listing.iter().filter(|(_, e)| e.kind == Kind::Dir) {
            self.remember_dir(e.ino, e.distributed);
        }
    }

    /// Forgets every kept listing.
    fn forget_listings(&mut self) {
        self.listings.clear();
        self.listing_bytes = 0;
    }

    /// Forgets directory `dir`'s kept listing.
    fn forget_listing(&mut self, dir: Ino) {
        if let Some(l) = self.listings.remove(&dir) {
            self.listing_bytes -= l.bytes();
        }
    }

    /// Remembers that `dir` is a directory, distributed or not.
    fn remember_dir(&mut self, dir: Ino, distributed: bool) {
        let cap = self.policy.cache_entries;
        bounded_insert(&mut self.dirs, dir, distributed, cap);
    }

    /// Whether directory `dir` is distributed (asks its server the first time).
    async fn distributed(&mut self, dir: Ino) -> Res<bool> {
        if let Some(&d) = self.dirs.get(&dir) {
            return Ok(d);
        }
        match self.at_inode(dir, Request::DirInfo { dir }).await? {
            Reply::Dir { distributed, .. } => {
                self.remember_dir(dir, distributed);
                Ok(distributed)
            }
            _ => Err(Errno::EIO.into()),
        }
    }

    /// The server holding entry `name` of `dir`.
    async fn entry_server(&mut self, dir: Ino, name: &[u8]) -> Res<ServerId> {
        let dist = self.distributed(dir).await?;
        Ok(self.table.entry_server(dir, name, dist))
    }

    /// Creation affinity (§3.7.5): the entry's server if it is near, else the local one
    /// (without affinity, the entry's server).
    fn inode_server_for(&self, entry_server: ServerId) -> ServerId {
        if !self.policy.techniques.affinity || self.policy.near.contains(&entry_server) {
            entry_server
        } else {
            self.policy.local
        }
    }

    /// Makes inode `new` on the server chosen for entry `name` of `dir` and adds the entry;
    /// destroys the inode again if the entry cannot be added. Returns the inode.
    async fn make_named(
        &mut self,
        dir: Ino,
        name: &[u8],
        new: NewInode,
        attrs: Attrs,
        (open, write): (bool, bool),
        now: Timespec,
    ) -> Res<Entry> {
        // A name the lookup cache holds, or `dir`'s kept listing, exists: the cache is as
        // fresh as the walk that found `dir` (its invalidations applied first), so the name is
        // refused without asking, as Linux's dentry cache refuses it (busybox `unzip` makes
        // each file's directory again).
        let key: &dyn EntryKey = &(dir, name);
        let listed = self
            .listings
            .get(&dir)
            .is_some_and(|l| l.find(name).is_some());
        if self.entries.contains_key(key) || listed {
            self.stats.cache_hits += 1;
            return Err(Errno::EEXIST.into());
        }
        let dist = self.distributed(dir).await?;
        let es = self.table.entry_server(dir, name, dist);
        let is = self.inode_server_for(es);
        let (kind, distributed) = match &new {
            NewInode::File => (Kind::File, false),
            NewInode::Dir { distributed, .. } => (Kind::Dir, *distributed),
            NewInode::Symlink(_) => (Kind::Symlink, false),
            NewInode::Fifo => (Kind::Fifo, false),
        };
        if is == es && kind != Kind::Symlink {
            // One server makes the inode and holds the entry: one message (§3.7.4).
            let req = Request::CreateNamed {
                dir,
                name: name.to_vec(),
                new,
                attrs,
                open,
                write,
                now,
            };
            let Reply::Made {
                ino,
                home,
                entries,
                first,
            } = self.rpc(es, req).await?
            else {
                return Err(Errno::EIO.into());
            };
            self.created_in(dir, dist, entries);
            if kind == Kind::File && open && write {
                // The server knows the creator caches the new file's size (and its first
                // block, allocated ahead): nobody else has it open yet.
                let x = self.extents.entry(ino).or_default();
                x.forget();
                x.answered(0, true, 0, first.map(Some));
            }
            let entry = Entry {
                ino,
                kind,
                distributed,
            };
            self.remember(dir, name.to_vec(), entry);
            if kind == Kind::Dir && !home {
                self.at_inode(dir, Request::Nlink { dir, delta: 1, now })
                    .await?;
            }
            return Ok(entry);
        }
        let ino = match self
            .rpc(
                is,
                Request::Create {
                    new,
                    attrs,
                    open,
                    write,
                    now,
                },
            )
            .await?
        {
            Reply::Created(ino) => ino,
            _ => return Err(Errno::EIO.into()),
        };
        let entry = Entry {
            ino,
            kind,
            distributed,
        };
        let add = Request::AddMap {
            dir,
            name: name.to_vec(),
            entry,
            replace: None,
            touch: false,
            now,
        };
        match self.rpc(es, add).await {
            Ok(Reply::Mapped { home, entries, .. }) => {
                self.created_in(dir, dist, entries);
                self.remember(dir, name.to_vec(), entry);
                if kind == Kind::Dir && !home {
                    self.at_inode(dir, Request::Nlink { dir, delta: 1, now })
                        .await?;
                }
                Ok(entry)
            }
            other => {
                self.rpc(is, Request::Destroy { ino }).await?;
                match other {
                    Err(e) => Err(e),
                    Ok(_) => Err(Fail::Restart),
                }
            }
        }
    }

    fn new_fd(&mut self, f: OpenFile) -> Fd {
        if f.kind == Kind::File {
            self.extents.entry(f.ino).or_default().opens += 1;
        }
        let fd = self.next_fd;
        self.next_fd = self.next_fd.wrapping_add(1);
        self.files.insert(fd, f);
        Fd(fd)
    }

    /// The inode and kind of open file `fd` (asks no server): `EBADF` if not open.
    pub fn inode(&self, fd: Fd) -> Result<(Ino, Kind), Errno> {
        self.file(fd).map(|f| (f.ino, f.kind))
    }

    fn file(&self, fd: Fd) -> Result<OpenFile, Errno> {
        self.files.get(&fd.0).copied().ok_or(Errno::EBADF)
    }

    /// Makes the caller the only `rmdir` or `rename` of directory `dir` (phase one of
    /// §3.4.1). Another holder is a restart, not a wait, so that no operation waits while it
    /// holds something.
    async fn hold(&mut self, dir: Ino) -> Res<()> {
        self.stats.requests += 1;
        let s = self.table.inode_server(dir);
        match self.transport.call(s, Request::Hold { dir }).await {
            Reply::Done => Ok(()),
            Reply::Busy => {
                self.stats.busy_retries += 1;
                Err(Fail::Restart)
            }
            // Removed since the caller looked it up: its entry is gone already.
            Reply::Err(Errno::ENOENT) => Err(Fail::Restart),
            Reply::Err(e) => Err(e.into()),
            _ => Err(Errno::EIO.into()),
        }
    }

    /// Gives up [`Client::hold`].
    async fn unhold(&mut self, dir: Ino) -> Res<()> {
        self.at_inode(dir, Request::Release { dir }).await?;
        Ok(())
    }

    /// The servers holding a share of directory `e` (all for a distributed one).
    fn shares(&self, e: &Entry) -> Vec<ServerId> {
        if e.distributed {
            self.table.servers()
        } else {
            vec![self.table.inode_server(e.ino)]
        }
    }

    /// Phases one and two of `rmdir` (§3.4.1) on directory `e`: holds it at its home, then
    /// marks it on every server with a share; ENOTEMPTY (after undoing both) if any holds an
    /// entry of it.
    async fn hold_and_mark(&mut self, e: &Entry) -> Res<()> {
        let dir = e.ino;
        self.hold(dir).await?;
        let shares = self.shares(e);
        let replies = self.broadcast(&shares, &Request::RmdirMark { dir }).await;
        let failed = replies.iter().find_map(|r| match r {
            Reply::Done => None,
            Reply::Err(e) => Some(*e),
            _ => Some(Errno::EIO),
        });
        if let Some(err) = failed {
            self.release_marks(e).await?;
            return Err(err.into());
        }
        Ok(())
    }

    /// Undoes [`Client::hold_and_mark`].
    async fn release_marks(&mut self, e: &Entry) -> Res<()> {
        let dir = e.ino;
        let shares = self.shares(e);
        self.broadcast(&shares, &Request::RmdirAbort { dir }).await;
        self.unhold(dir).await
    }

    /// Phase three: directory `e` is gone everywhere (its entry was removed already).
    async fn commit_rmdir(&mut self, e: &Entry, now: Timespec) -> Res<()> {
        let shares = self.shares(e);
        let dir = e.ino;
        for r in self
            .broadcast(&shares, &Request::RmdirCommit { dir, now })
            .await
        {
            if let Reply::Err(err) = r {
                return Err(err.into());
            }
        }
        Ok(())
    }

    /// Removes entry `name` of `dir` if it is `expect`; forgets it; does `at` to a file's
    /// inode. The removed entry and whether `dir`'s home did the directory's bookkeeping.
    async fn rm_map(
        &mut self,
        dir: Ino,
        name: &[u8],
        expect: Expect,
        at: AtInode,
        now: Timespec,
    ) -> Res<(Entry, bool)> {
        let es = self.entry_server(dir, name).await?;
        let unlink = at == AtInode::Unlink;
        // A ctime for an inode elsewhere goes to its server at the same time (§3.7.3).
        let beside = match (at, expect) {
            (AtInode::Touch, Expect::Ino(ino)) if self.table.inode_server(ino) != es => {
                Some((self.table.inode_server(ino), Request::Touch { ino, now }))
            }
            _ => None,
        };
        let req = Request::RmMap {
            dir,
            name: name.to_vec(),
            expect,
            unlink,
            touch: at == AtInode::Touch && beside.is_none(),
            now,
        };
        let r = match beside {
            None => self.rpc(es, req).await,
            Some((s, touch)) => {
                // The `Touch`'s reply is not needed: a file gone meanwhile (ENOENT) was
                // unlinked by another name after this change.
                let replies = self
                    .broadcast_each(&[es, s], vec![req.clone(), touch])
                    .await;
                match replies.into_iter().next() {
                    Some(Reply::Busy) => self.rpc(es, req).await,
                    Some(Reply::Err(e)) => Err(e.into()),
                    Some(r) => Ok(r),
                    None => Err(Errno::EIO.into()),
                }
            }
        };
        self.forget(dir, name);
        let (e, home) = match r? {
            Reply::Mapped {
                old: Some(e), home, ..
            } => (e, home),
            Reply::Stale => return Err(Fail::Restart),
            _ => return Err(Errno::EIO.into()),
        };
        if unlink && e.kind != Kind::Dir && self.table.inode_server(e.ino) != es {
            self.unlink_inodes(&[e.ino], now).await?;
        }
        Ok((e, home))
    }

    /// Tells `dir`'s home about a subdirectory added or removed elsewhere (`home` false).
    async fn nlink(&mut self, dir: Ino, delta: i32, home: bool, now: Timespec) -> Res<()> {
        if !home && delta != 0 {
            self.at_inode(dir, Request::Nlink { dir, delta, now })
                .await?;
        }
        Ok(())
    }

    /// An inode request after a walk found the inode: if the inode is gone, its entry went
    /// first, so the operation starts again from the path.
    async fn after_walk(&mut self, ino: Ino, req: Request) -> Res<Reply> {
        match self.at_inode(ino, req).await {
            Err(Fail::Errno(Errno::ENOENT)) => Err(Fail::Restart),
            r => r,
        }
    }

    /// `openat(start, path, flags, mode)`: an open file description of a file, directory or
    /// symlink target. `attrs` are a new file's mode (umask applied) and owner.
    pub async fn open(
        &mut self,
        start: Ino,
        path: &[u8],
        flags: OpenFlags,
        attrs: Attrs,
        now: Timespec,
    ) -> Result<Fd, Errno> {
        retry!(self, self.try_open(start, path, flags, attrs, now).await)
    }

    async fn try_open(
        &mut self,
        start: Ino,
        path: &[u8],
        flags: OpenFlags,
        attrs: Attrs,
        now: Timespec,
    ) -> Res<Fd> {
        let ino = if flags.create {
            // A name the cache does not hold is first created without looking it up: most
            // `O_CREAT` opens make a new file, and the server refuses a taken name.
            let mut hopeful = !flags.exclusive;
            loop {
                let (t, looked_up) = match (flags.exclusive, hopeful) {
                    (true, _) => (self.walk(|v| plan_exclusive(v, start, path)).await?, false),
                    (false, true) => self.walk(|v| plan_create_hoping(v, start, path)).await?,
                    (false, false) => {
                        let t = self.walk(|v| walk::plan_create(v, start, path, false));
                        (t.await?, true)
                    }
                };
                if let Some(ino) = t.existing {
                    break ino;
                }
                let opening = (true, !flags.read_only);
                let e = match self
                    .make_named(t.dir, &t.name, NewInode::File, attrs, opening, now)
                    .await
                {
                    // Taken, and not looked up: look it up (a file to open, a symlink to
                    // follow, a directory).
                    Err(Fail::Errno(Errno::EEXIST)) if !flags.exclusive && !looked_up => {
                        hopeful = false;
                        continue;
                    }
                    // Created by someone else since the walk: open that one.
                    Err(Fail::Errno(Errno::EEXIST)) if !flags.exclusive => {
                        return Err(Fail::Restart)
                    }
                    r => r?,
                };
                // Made in one message, the file's size is known from now on (and its first
                // block); made in two, from its first write's reply.
                return Ok(self.new_fd(OpenFile {
                    ino: e.ino,
                    kind: Kind::File,
                    offset: 0,
                    append: flags.append,
                    shared: None,
                    read_only: flags.read_only,
                }));
            }
        } else {
            self.walk(|v| walk::resolve(v, start, path, !flags.nofollow))
                .await?
                .0
        };
        let req = Request::Open {
            ino,
            trunc: flags.truncate,
            list: flags.list,
            write: !flags.read_only,
            now,
        };
        let home = self.table.inode_server(ino);
        let file = |kind| OpenFile {
            ino,
            kind,
            offset: 0,
            append: flags.append,
            shared: None,
            read_only: flags.read_only,
        };
        // A directory listed whole before and unchanged since (the walk applied every
        // invalidation queued): the open is counted at its server, and waited for by nothing.
        if let (true, Some(l)) = (flags.list, self.listings.get(&ino)) {
            let begun = Begun::Kept(l.clone());
            self.stats.listing_hits += 1;
            self.stats.requests += 1;
            self.stats.posted += 1;
            let counted = Request::Open {
                ino,
                trunc: flags.truncate,
                list: false,
                write: !flags.read_only,
                now,
            };
            self.transport.post(home, counted);
            let fd = self.new_fd(file(Kind::Dir));
            self.listed.insert(fd.0, begun);
            return Ok(fd);
        }
        // A directory known distributed: the other servers' shares are asked with the open.
        let others: Vec<ServerId> = match self.dirs.get(&ino) {
            Some(true) if flags.list => self
                .table
                .servers()
                .into_iter()
                .filter(|&s| s != home)
                .collect(),
            _ => Vec::new(),
        };
        let (reply, shares) = match others.is_empty() {
            true => (self.after_walk(ino, req).await?, Vec::new()),
            false => self.open_and_list(ino, home, req, others).await?,
        };
        match reply {
            Reply::Stat(st) => Ok(self.new_fd(file(st.kind))),
            Reply::Opened {
                stat,
                blocks,
                alone,
            } if stat.kind == Kind::File => {
                let fd = self.new_fd(file(stat.kind));
                if let Some(x) = self.extents.get_mut(&ino) {
                    // An `O_TRUNC` took the blocks; the size is the server's now.
                    if flags.truncate {
                        x.blocks.clear();
                    }
                    x.answered(stat.size, alone, 0, blocks);
                }
                Ok(fd)
            }
            Reply::Listed {
                stat,
                entries,
                more,
                distributed,
            } => {
                self.remember_dir(ino, distributed);
                let begun = match distributed {
                    false => Begun::Ordinary(entries, more),
                    true => {
                        let mut b = Batches::new();
                        b.take(home, entries, more);
                        // The shares not asked with the open (the directory was not known
                        // distributed), or refused, are asked by the first read_dir.
                        let mut shares = shares.into_iter();
                        for s in self.table.servers().into_iter().filter(|&s| s != home) {
                            match shares.next() {
                                Some(Reply::Dirents { entries, more }) => b.take(s, entries, more),
                                _ => b.asking.push((s, None)),
                            }
                        }
                        Begun::Shares(b)
                    }
                };
                let fd = self.new_fd(file(stat.kind));
                self.listed.insert(fd.0, begun);
                Ok(fd)
            }
            _ => Err(Errno::EIO.into()),
        }
    }

    /// [`Client::after_walk`]'s `open` (`req`) of distributed directory `dir` at its home,
    /// with the first batch of each of `others`' shares asked at the same time (§3.7.3,
    /// §3.7.4): the open's reply, and the others' in their order.
    async fn open_and_list(
        &mut self,
        dir: Ino,
        home: ServerId,
        req: Request,
        others: Vec<ServerId>,
    ) -> Res<(Reply, Vec<Reply>)> {
        let mut servers = Vec::with_capacity(others.len() + 1);
        servers.push(home);
        servers.extend(&others);
        let mut reqs = Vec::with_capacity(servers.len());
        reqs.push(req);
        reqs.extend(others.iter().map(|_| Request::Dirents { dir, after: None }));
        let mut replies = self.broadcast_each(&servers, reqs).await;
        let shares = replies.split_off(1);
        match replies.pop() {
            Some(Reply::Err(Errno::ENOENT)) => Err(Fail::Restart),
            Some(Reply::Err(e)) => Err(e.into()),
            Some(Reply::Busy) | None => Err(Fail::Restart),
            Some(r) => Ok((r, shares)),
        }
    }

    /// `close`.
    pub async fn close(&mut self, fd: Fd) -> Result<(), Errno> {
        let f = self.file(fd)?;
        self.files.remove(&fd.0);
        self.listed.remove(&fd.0);
        let many = self.extents.len() > EXTENTS_KEPT;
        if let Some(x) = self.extents.get_mut(&f.ino) {
            x.opens -= 1;
            // A few entries stay, forgotten, so that opening and closing one file after
            // another allocates nothing.
            if x.opens == 0 && many {
                self.extents.remove(&f.ino);
            } else if x.opens == 0 {
                x.forget();
            }
        }
        let req = match f.shared {
            Some(desc) => Request::CloseShared { desc },
            None => Request::Close {
                ino: f.ino,
                write: f.writer(),
            },
        };
        // Nothing waits for the answer: the server has it before any later request to it.
        self.stats.requests += 1;
        self.stats.posted += 1;
        self.transport.post(self.table.inode_server(f.ino), req);
        Ok(())
    }

    /// Another descriptor for `fd`'s open file description, for another client (§3.5.1: a
    /// process forked to another core): the first time, the offset moves to the inode's
    /// server, and reads and writes through either descriptor go through it from then on.
    pub async fn share(&mut self, fd: Fd) -> Result<SharedFd, Errno> {
        let f = self.file(fd)?;
        let desc = match f.shared {
            Some(desc) => {
                self.at_inode(f.ino, Request::DupShared { desc })
                    .await
                    .map_err(errno)?;
                desc
            }
            None => {
                let req = Request::Share {
                    ino: f.ino,
                    offset: f.offset,
                    write: f.writer(),
                };
                match self.at_inode(f.ino, req).await.map_err(errno)? {
                    Reply::Shared(desc) => desc,
                    _ => return Err(Errno::EIO),
                }
            }
        };
        if let Some(f) = self.files.get_mut(&fd.0) {
            f.shared = Some(desc);
        }
        Ok(SharedFd {
            ino: f.ino,
            kind: f.kind,
            append: f.append,
            read_only: f.read_only,
            desc,
        })
    }

    /// A descriptor for a description another client shared.
    pub fn adopt(&mut self, s: SharedFd) -> Fd {
        self.new_fd(OpenFile {
            ino: s.ino,
            kind: s.kind,
            offset: 0,
            append: s.append,
            shared: Some(s.desc),
            read_only: s.read_only,
        })
    }

    /// `lseek`: `whence` is `SEEK_SET` (0), `SEEK_CUR` (1) or `SEEK_END` (2).
    pub async fn lseek(&mut self, fd: Fd, offset: i64, whence: u32) -> Result<u64, Errno> {
        let f = self.file(fd)?;
        if let Some(desc) = f.shared {
            let req = Request::Seek {
                desc,
                offset,
                whence,
            };
            return match self.at_inode(f.ino, req).await.map_err(errno)? {
                Reply::Offset(o) => Ok(o),
                _ => Err(Errno::EIO),
            };
        }
        let dir = f.kind == Kind::Dir;
        let size = if whence == 2 && !dir {
            self.fstat(fd).await?.size
        } else {
            0
        };
        let new = seek(f.offset, size, offset, whence, dir)?;
        if let Some(f) = self.files.get_mut(&fd.0) {
            f.offset = new;
        }
        Ok(new)
    }

    /// `fstat`.
    pub async fn fstat(&mut self, fd: Fd) -> Result<Stat, Errno> {
        let f = self.file(fd)?;
        match self.at_inode(f.ino, Request::Stat { ino: f.ino }).await {
            Ok(Reply::Stat(s)) => Ok(s),
            Ok(_) => Err(Errno::EIO),
            Err(f) => Err(errno(f)),
        }
    }

    /// `statfs`: the buffer-cache blocks free and held back from reuse, and the inodes in
    /// use, summed over every server (asked at once, §3.7.3).
    pub async fn statfs(&mut self) -> Result<Space, Errno> {
        let servers = self.table.servers();
        let mut sum = Space::default();
        for r in self.broadcast(&servers, &Request::Statfs).await {
            let Reply::Space {
                free_blocks,
                deferred_blocks,
                inodes,
            } = r
            else {
                return Err(match r {
                    Reply::Err(e) => e,
                    _ => Errno::EIO,
                });
            };
            sum.free_blocks += free_blocks;
            sum.deferred_blocks += deferred_blocks;
            sum.inodes += inodes;
        }
        Ok(sum)
    }

    /// Takes the table of a resize (§6.1.1): requests go where it says from now on. What the
    /// lookup cache holds stays true (an entry names an inode, wherever it is kept); the kept
    /// listings are forgotten (a directory's entries may be on other servers now, which have
    /// not counted this client as a lister); a designated or near server that left is
    /// replaced by the first that stays. The caller resizes only while this client has no
    /// request in flight.
    pub fn set_table(&mut self, table: ShardTable) {
        self.forget_listings();
        let servers = table.servers();
        self.policy.near.retain(|s| servers.contains(s));
        if !servers.contains(&self.policy.local) {
            self.policy.local = servers[0];
        }
        self.table = table;
    }

    /// Where a walk of `path` from `start` leads out of Hare (`walk::exit`: a symlink whose
    /// absolute target lies outside the mount point, a symlink's `..` of Hare's root, or a
    /// covered directory reached through a symlink), as the absolute path to go on with, if
    /// it does; `parent_only` for the calls that walk only to the last component's
    /// directory.
    pub async fn exit(
        &mut self,
        start: Ino,
        path: &[u8],
        follow_last: bool,
        parent_only: bool,
    ) -> Result<Option<Vec<u8>>, Errno> {
        retry!(
            self,
            self.walk(|v| {
                Ok(
                    match walk::exit(v, start, path, follow_last, parent_only)? {
                        Some(Exit::Link { link, rest }) => {
                            Some(Exit::continued(&v.target(link)?, &rest))
                        }
                        Some(Exit::Up { rest }) => {
                            let up = Exit::continued(v.mount_point, b"..");
                            Some(Exit::continued(&up, &rest))
                        }
                        Some(Exit::Covered { dir, rest }) => v
                            .covered
                            .iter()
                            .find(|&&(d, _)| d == dir)
                            .map(|(_, at)| Exit::continued(at, &rest)),
                        None => None,
                    },
                )
            })
            .await
        )
    }

    /// `fstatat(start, path)`, following a last symlink if `follow`.
    pub async fn stat(&mut self, start: Ino, path: &[u8], follow: bool) -> Result<Stat, Errno> {
        retry!(self, self.try_stat(start, path, follow).await)
    }

    async fn try_stat(&mut self, start: Ino, path: &[u8], follow: bool) -> Res<Stat> {
        let (ino, _) = self.walk(|v| walk::resolve(v, start, path, follow)).await?;
        match self.after_walk(ino, Request::Stat { ino }).await? {
            Reply::Stat(s) => Ok(s),
            _ => Err(Errno::EIO.into()),
        }
    }

    /// `read`: from the description's offset, which advances (at the server, for a shared
    /// description).
    pub async fn read(&mut self, fd: Fd, buf: &mut [u8]) -> Result<usize, Errno> {
        let f = self.file(fd)?;
        let (_, n) = self.read_at(f, buf, f.offset, f.shared).await?;
        if let Some(f) = self.files.get_mut(&fd.0) {
            f.offset += n as u64;
        }
        Ok(n)
    }

    /// `pread`: reads at `offset`.
    pub async fn pread(&mut self, fd: Fd, buf: &mut [u8], offset: u64) -> Result<usize, Errno> {
        let f = self.file(fd)?;
        Ok(self.read_at(f, buf, offset, None).await?.1)
    }

    /// Reads at `offset`, or at shared description `desc`'s offset; the data comes straight
    /// from the buffer cache (holes read as zeros), or without direct access in the server's
    /// replies, [`MAX_DATA`] bytes at a time. Where it started and how much.
    async fn read_at(
        &mut self,
        f: OpenFile,
        buf: &mut [u8],
        offset: u64,
        desc: Option<u64>,
    ) -> Result<(u64, usize), Errno> {
        data_kind(f.kind)?;
        let direct = self.policy.techniques.direct;
        let kept = direct && desc.is_none();
        if kept && self.knows_size(f.ino) {
            self.apply_invalidations(&mut Scratch::default());
        }
        let mut done = 0;
        let mut start = offset;
        let mut at = offset;
        while done < buf.len() {
            let known = if kept {
                self.read_known(f.ino, at, &mut buf[done..])
            } else {
                None
            };
            if let Some(n) = known {
                done += n;
                break;
            }
            // A shared offset may be anywhere in a page: leave room for the misalignment.
            let room = match desc {
                _ if !direct => MAX_DATA,
                Some(_) => (MAX_IO_BLOCKS - 1) * BLOCK_SIZE,
                None => MAX_IO_BLOCKS * BLOCK_SIZE - (at % BLOCK_SIZE as u64) as usize,
            };
            let want = (buf.len() - done).min(room);
            // Blocks the client keeps are asked for ahead of the read, so that the reads that
            // follow (a program's pages, one at a time) find them known.
            let asked = if kept {
                want.max(READ_AHEAD).min(room)
            } else {
                want
            };
            let (ino, len) = (f.ino, asked as u32);
            let req = if direct {
                Request::Read {
                    ino,
                    offset: at,
                    len,
                    desc,
                }
            } else {
                Request::ReadData {
                    ino,
                    offset: at,
                    len,
                    desc,
                }
            };
            let (r, n) = match self.at_inode(f.ino, req).await.map_err(errno)? {
                Reply::Extent {
                    size,
                    offset,
                    blocks,
                    alone,
                } if direct => {
                    let n = want.min(size.saturating_sub(offset) as usize);
                    copy_out(&self.cache, &blocks, offset, &mut buf[done..done + n]);
                    if let Some(x) = self.extents.get_mut(&f.ino).filter(|_| kept) {
                        x.answered(size, alone, offset, blocks);
                    }
                    (offset, n)
                }
                Reply::Data { offset, data, .. } if !direct && data.len() <= want => {
                    buf[done..done + data.len()].copy_from_slice(&data);
                    (offset, data.len())
                }
                _ => return Err(Errno::EIO),
            };
            if done == 0 {
                start = r;
            }
            done += n;
            at = r + n as u64;
            if n < want {
                break;
            }
        }
        Ok((start, done))
    }

    /// Whether the client knows `ino`'s size: only then may queued invalidations change what
    /// a read or write does (otherwise it asks the server, and a later invalidation only
    /// makes the client forget what the answer taught it).
    fn knows_size(&self, ino: Ino) -> bool {
        self.extents.get(&ino).is_some_and(|x| x.size.is_some())
    }

    /// Reads up to `buf.len()` bytes at `at` from the file's known blocks, asking nothing,
    /// if they all lie below the size the client knows and every page is known: how many;
    /// `None` otherwise. A read reaching the end asks the server: another client's write into
    /// blocks it knows (posted) may have moved the end, and only the server has seen every
    /// posted write (before it answers, `wire::POSTED`), where the bytes below the known end
    /// are in the shared blocks already. Unless the client is alone: no other client has the
    /// file open to write, and one that opens it makes this one forget the size before its
    /// open returns, so the read stops at the size (the thesis's client reads to the end of
    /// the block list it has, §3.3).
    fn read_known(&self, ino: Ino, at: u64, buf: &mut [u8]) -> Option<usize> {
        let x = self.extents.get(&ino)?;
        let size = x.size?;
        let end = at.checked_add(buf.len() as u64)?;
        let n = if buf.is_empty() {
            return None;
        } else if end <= size {
            buf.len()
        } else if x.alone {
            size.saturating_sub(at) as usize
        } else {
            return None;
        };
        let blocks = x.known(crate::pages_of(at, n as u64))?;
        copy_out(&self.cache, &blocks, at, &mut buf[..n]);
        Some(n)
    }

    /// Writes into the file's known blocks at `at` as much of `data` as one
    /// [`Request::Wrote`] covers, and posts it: how much, or `None` if a page is not known or
    /// has no block.
    fn write_known(&mut self, ino: Ino, at: u64, data: &[u8], now: Timespec) -> Option<usize> {
        let x = self.extents.get_mut(&ino)?;
        let size = x.size?;
        let page = BLOCK_SIZE as u64;
        let room = (MAX_POSTED_BLOCKS as u64 * page - at % page) as usize;
        let n = data.len().min(room);
        let end = at.checked_add(n as u64).filter(|&e| e <= i64::MAX as u64)?;
        let blocks = x
            .known(crate::pages_of(at, n as u64))?
            .into_iter()
            .collect::<Option<Vec<Block>>>()?;
        copy_in(&self.cache, &blocks, at, &data[..n]);
        x.size = Some(size.max(end));
        let req = Request::Wrote {
            ino,
            offset: at,
            len: n as u32,
            blocks,
            now,
        };
        self.stats.requests += 1;
        self.stats.posted += 1;
        self.transport.post(self.table.inode_server(ino), req);
        Some(n)
    }

    /// `fcntl(F_SETFL)` of `O_APPEND`: whether `fd`'s writes go to the end of the file.
    pub fn set_append(&mut self, fd: Fd, append: bool) -> Result<(), Errno> {
        let f = self.files.get_mut(&fd.0).ok_or(Errno::EBADF)?;
        f.append = append;
        Ok(())
    }

    /// `write`: at the description's offset (at the end with `O_APPEND`), which advances.
    pub async fn write(&mut self, fd: Fd, data: &[u8], now: Timespec) -> Result<usize, Errno> {
        let f = self.file(fd)?;
        let (at, n) = self
            .write_at(f, data, f.offset, f.append, f.shared, now)
            .await?;
        if let Some(f) = self.files.get_mut(&fd.0) {
            f.offset = at + n as u64;
        }
        Ok(n)
    }

    /// `pwrite`.
    pub async fn pwrite(
        &mut self,
        fd: Fd,
        data: &[u8],
        offset: u64,
        now: Timespec,
    ) -> Result<usize, Errno> {
        let f = self.file(fd)?;
        Ok(self.write_at(f, data, offset, false, None, now).await?.1)
    }

    /// Writes `data` at `offset` (or at the end, or at shared description `desc`'s offset):
    /// the server allocates blocks and moves the size, the data goes straight into the buffer
    /// cache. Where it started and how much; a failure after some data was written is a short
    /// write.
    async fn write_at(
        &mut self,
        f: OpenFile,
        data: &[u8],
        offset: u64,
        append: bool,
        desc: Option<u64>,
        now: Timespec,
    ) -> Result<(u64, usize), Errno> {
        // Posted writes are a writer's only (`Request::Wrote`).
        if f.read_only && f.kind != Kind::Dir {
            return Err(Errno::EBADF);
        }
        data_kind(f.kind)?;
        // An empty write writes nothing and moves nothing, not even an append's offset.
        if data.is_empty() {
            return Ok((offset, 0));
        }
        let direct = self.policy.techniques.direct;
        // Only a writer posts (a `pwrite` through a shared description asks the server).
        let kept = direct && f.writer();
        if kept && self.knows_size(f.ino) {
            self.apply_invalidations(&mut Scratch::default());
        }
        let mut done = 0;
        let mut start = offset;
        let mut at = offset;
        while done < data.len() {
            // An append asks the server, which alone knows where the end is while other
            // clients append too (the data goes into the blocks before the server orders it).
            if kept && !append {
                if let Some(n) = self.write_known(f.ino, at, &data[done..], now) {
                    done += n;
                    at += n as u64;
                    continue;
                }
            }
            // An append or a shared offset lands anywhere in a page: leave room for the
            // misalignment.
            let room = if append || desc.is_some() {
                (MAX_IO_BLOCKS - 1) * BLOCK_SIZE
            } else {
                MAX_IO_BLOCKS * BLOCK_SIZE - (at % BLOCK_SIZE as u64) as usize
            };
            let n = (data.len() - done).min(if direct { room } else { MAX_DATA });
            let req = if direct {
                Request::Write {
                    ino: f.ino,
                    offset: at,
                    len: n as u32,
                    append,
                    desc,
                    now,
                }
            } else {
                // Without direct access the data travels in the request and the server
                // writes it into the blocks.
                Request::WriteData {
                    ino: f.ino,
                    offset: at,
                    data: data[done..done + n].to_vec(),
                    append,
                    desc,
                    now,
                }
            };
            let (w, size, blocks) = match self.at_inode(f.ino, req).await {
                Ok(Reply::Written {
                    offset,
                    size,
                    blocks,
                }) => (offset, size, blocks),
                Ok(_) => return Err(Errno::EIO),
                Err(_) if done > 0 => break,
                Err(e) => return Err(errno(e)),
            };
            if done == 0 {
                start = w;
            }
            if direct {
                copy_in(&self.cache, &blocks, w, &data[done..done + n]);
            }
            if let Some(x) = self.extents.get_mut(&f.ino) {
                if kept {
                    x.size = Some(size);
                    x.learn(w, blocks.into_iter().map(Some));
                } else {
                    // Through a shared description: the blocks are not learnt (this client
                    // does not post writes for it), the size moved.
                    x.forget();
                }
            }
            done += n;
            at = w + n as u64;
        }
        Ok((start, done))
    }

    /// `ftruncate`.
    pub async fn ftruncate(&mut self, fd: Fd, size: u64, now: Timespec) -> Result<(), Errno> {
        let f = self.file(fd)?;
        if f.kind == Kind::Dir {
            return Err(Errno::EISDIR);
        }
        self.truncate_ino(f.ino, size, now).await.map_err(errno)
    }

    async fn truncate_ino(&mut self, ino: Ino, size: u64, now: Timespec) -> Res<()> {
        match self
            .after_walk(ino, Request::Trunc { ino, size, now })
            .await?
        {
            Reply::Done => {
                if let Some(x) = self.extents.get_mut(&ino) {
                    x.cut(size);
                }
                Ok(())
            }
            _ => Err(Errno::EIO.into()),
        }
    }

    /// `truncate(path, size)`.
    pub async fn truncate(
        &mut self,
        start: Ino,
        path: &[u8],
        size: u64,
        now: Timespec,
    ) -> Result<(), Errno> {
        retry!(self, self.try_truncate(start, path, size, now).await)
    }

    async fn try_truncate(&mut self, start: Ino, path: &[u8], size: u64, now: Timespec) -> Res<()> {
        let (ino, _) = self.walk(|v| walk::resolve(v, start, path, true)).await?;
        self.truncate_ino(ino, size, now).await
    }

    /// `getdents64` of an open directory, all at once: every server's share of a distributed
    /// directory, asked in parallel (§3.7.3), merged in name order. `.` and `..` are the
    /// caller's.
    pub async fn read_dir(&mut self, fd: Fd) -> Result<Arc<Listing>, Errno> {
        let f = self.file(fd)?;
        if f.kind != Kind::Dir {
            return Err(Errno::ENOTDIR);
        }
        let listing = Arc::new(match self.listed.remove(&fd.0) {
            Some(Begun::Kept(l)) => return Ok(l),
            Some(begun) => self.list_from(f.ino, Some(begun)).await?,
            None => self.list(f.ino).await?,
        });
        self.keep_listing(f.ino, &listing);
        Ok(listing)
    }

    /// The path of directory `dir` from Hare's root (`getcwd`): up through `..`, each name
    /// found in its parent's listing (a kept one: the walk to the parent applied the
    /// invalidations queued). `ENOENT` if a directory on the way was removed.
    pub async fn dir_path(&mut self, dir: Ino) -> Result<Vec<u8>, Errno> {
        let mut names: Vec<Name> = Vec::new();
        let mut at = dir;
        while at != ROOT_INO {
            let parent = self.walk(|v| v.parent(at)).await.map_err(errno)?;
            let entries = match self.listings.get(&parent) {
                Some(l) => {
                    self.stats.listing_hits += 1;
                    l.clone()
                }
                None => {
                    let l = Arc::new(self.list(parent).await?);
                    self.keep_listing(parent, &l);
                    l
                }
            };
            let e = entries.iter().find(|(_, e)| e.ino == at);
            names.push(e.ok_or(Errno::ENOENT)?.0.to_vec());
            at = parent;
        }
        if names.is_empty() {
            return Ok(b"/".to_vec());
        }
        let mut path = Vec::new();
        for n in names.iter().rev() {
            path.push(b'/');
            path.extend_from_slice(n);
        }
        Ok(path)
    }

    /// Every entry of directory `dir` (not `.` and `..`), in name order.
    async fn list(&mut self, dir: Ino) -> Result<Listing, Errno> {
        self.list_from(dir, None).await
    }

    /// The servers holding directory `dir`'s entries: every one if it is distributed, else
    /// its home.
    async fn listing_servers(&mut self, dir: Ino) -> Result<Vec<ServerId>, Errno> {
        Ok(if self.distributed(dir).await.map_err(errno)? {
            self.table.servers()
        } else {
            vec![self.table.inode_server(dir)]
        })
    }

    /// [`Client::list`], from what `dir`'s open began, if it did.
    async fn list_from(&mut self, dir: Ino, begun: Option<Begun>) -> Result<Listing, Errno> {
        let mut b = match begun {
            Some(Begun::Kept(l)) => return Ok(Listing::clone(&l)),
            Some(Begun::Shares(b)) => b,
            Some(Begun::Ordinary(entries, false)) => Batches {
                entries,
                asking: Vec::new(),
            },
            // The first batch came from an ordinary directory's home when it was opened; if
            // the directory has distributed itself since (§6.1.2), the entries after it are
            // on every server now.
            Some(Begun::Ordinary(entries, true)) => {
                let last = entries.last_name().map(<[u8]>::to_vec);
                let servers = self.listing_servers(dir).await?;
                let asking = servers.into_iter().map(|s| (s, last.clone())).collect();
                Batches { entries, asking }
            }
            None => {
                let servers = self.listing_servers(dir).await?;
                let asking = servers.into_iter().map(|s| (s, None)).collect();
                Batches {
                    entries: Listing::new(),
                    asking,
                }
            }
        };
        while !b.asking.is_empty() {
            let (servers, reqs): (Vec<ServerId>, Vec<Request>) = core::mem::take(&mut b.asking)
                .into_iter()
                .map(|(s, after)| (s, Request::Dirents { dir, after }))
                .unzip();
            let replies = self.broadcast_each(&servers, reqs).await;
            for (s, r) in servers.into_iter().zip(replies) {
                match r {
                    Reply::Dirents { entries, more } => b.take(s, entries, more),
                    Reply::Err(e) => return Err(e),
                    _ => return Err(Errno::EIO),
                }
            }
        }
        b.entries.sort_by_name();
        Ok(b.entries)
    }

    /// `mkdirat`; `distribute` asks for a distributed directory (§3.4's flag at creation),
    /// which it is if the distribution technique is on, as is every new directory when the
    /// policy distributes all.
    pub async fn mkdir(
        &mut self,
        start: Ino,
        path: &[u8],
        attrs: Attrs,
        distribute: bool,
        now: Timespec,
    ) -> Result<(), Errno> {
        let distributed =
            self.policy.techniques.distribution && (distribute || self.policy.distribute_dirs);
        retry!(
            self,
            self.try_mkdir(start, path, attrs, distributed, now).await
        )
    }

    async fn try_mkdir(
        &mut self,
        start: Ino,
        path: &[u8],
        attrs: Attrs,
        distributed: bool,
        now: Timespec,
    ) -> Res<()> {
        let (dir, name, _) = self.walk(|v| walk::plan_new_name(v, start, path)).await?;
        check_name(&name)?;
        let new = NewInode::Dir {
            parent: dir,
            distributed,
        };
        self.make_named(dir, &name, new, attrs, (false, false), now)
            .await?;
        Ok(())
    }

    /// `symlinkat(target, start, path)`.
    pub async fn symlink(
        &mut self,
        target: &[u8],
        start: Ino,
        path: &[u8],
        attrs: Attrs,
        now: Timespec,
    ) -> Result<(), Errno> {
        walk::check_path(target)?;
        retry!(
            self,
            self.try_symlink(target, start, path, attrs, now).await
        )
    }

    async fn try_symlink(
        &mut self,
        target: &[u8],
        start: Ino,
        path: &[u8],
        attrs: Attrs,
        now: Timespec,
    ) -> Res<()> {
        let new = NewInode::Symlink(target.to_vec());
        self.try_mknod(start, path, new, attrs, now).await
    }

    /// Makes `new` (a symlink or FIFO) at `path`, which must not exist.
    async fn try_mknod(
        &mut self,
        start: Ino,
        path: &[u8],
        new: NewInode,
        attrs: Attrs,
        now: Timespec,
    ) -> Res<()> {
        let (dir, name, trailing) = self.walk(|v| walk::plan_new_name(v, start, path)).await?;
        check_name(&name)?;
        if trailing {
            // Linux: EEXIST if the name exists, else ENOENT.
            let exists = self.walk(|v| v.lookup(dir, &name)).await?.is_some();
            return Err(if exists { Errno::EEXIST } else { Errno::ENOENT }.into());
        }
        self.make_named(dir, &name, new, attrs, (false, false), now)
            .await?;
        Ok(())
    }

    /// `mknodat(start, path, S_IFIFO)`: a FIFO (its pipe is the embedder's business).
    pub async fn mkfifo(
        &mut self,
        start: Ino,
        path: &[u8],
        attrs: Attrs,
        now: Timespec,
    ) -> Result<(), Errno> {
        retry!(
            self,
            self.try_mknod(start, path, NewInode::Fifo, attrs, now)
                .await
        )
    }

    /// `linkat(old_start, old, new_start, new, follow)`: another name for a file (`EPERM`
    /// for a directory). The inode's link count goes up first, then the entry goes in; if it
    /// cannot, the count goes down again.
    pub async fn link(
        &mut self,
        (old_start, old): (Ino, &[u8]),
        (new_start, new): (Ino, &[u8]),
        follow: bool,
        now: Timespec,
    ) -> Result<(), Errno> {
        retry!(
            self,
            self.try_link((old_start, old), (new_start, new), follow, now)
                .await
        )
    }

    async fn try_link(
        &mut self,
        (old_start, old): (Ino, &[u8]),
        (new_start, new): (Ino, &[u8]),
        follow: bool,
        now: Timespec,
    ) -> Res<()> {
        let (ino, kind) = self
            .walk(|v| walk::resolve(v, old_start, old, follow))
            .await?;
        let (dir, name, trailing) = self
            .walk(|v| walk::plan_new_name(v, new_start, new))
            .await?;
        check_name(&name)?;
        // NR-FS's order of errors.
        if self.walk(|v| v.lookup(dir, &name)).await?.is_some() {
            return Err(Errno::EEXIST.into());
        }
        if trailing {
            return Err(Errno::ENOENT.into());
        }
        if kind == Kind::Dir {
            return Err(Errno::EPERM.into());
        }
        match self.link_inode(ino, now).await {
            Err(Fail::Errno(Errno::ENOENT)) => return Err(Fail::Restart),
            r => r?,
        };
        let entry = Entry {
            ino,
            kind,
            distributed: false,
        };
        let es = self.entry_server(dir, &name).await?;
        let add = Request::AddMap {
            dir,
            name: name.clone(),
            entry,
            replace: None,
            touch: false,
            now,
        };
        match self.rpc(es, add).await {
            Ok(Reply::Mapped { .. }) => {
                self.remember(dir, name, entry);
                Ok(())
            }
            other => {
                self.unlink_inodes(&[ino], now).await?;
                match other {
                    Err(e) => Err(e),
                    Ok(_) => Err(Fail::Restart),
                }
            }
        }
    }

    /// `readlinkat`.
    pub async fn readlink(&mut self, start: Ino, path: &[u8]) -> Result<Vec<u8>, Errno> {
        retry!(self, self.try_readlink(start, path).await)
    }

    async fn try_readlink(&mut self, start: Ino, path: &[u8]) -> Res<Vec<u8>> {
        let (ino, kind) = self.walk(|v| walk::resolve(v, start, path, false)).await?;
        if kind != Kind::Symlink {
            return Err(Errno::EINVAL.into());
        }
        self.walk(|v| v.target(ino)).await
    }

    /// `fchmodat` (following a last symlink).
    pub async fn chmod(
        &mut self,
        start: Ino,
        path: &[u8],
        mode: u32,
        now: Timespec,
    ) -> Result<(), Errno> {
        retry!(self, self.try_chmod(start, path, mode, now).await)
    }

    async fn try_chmod(&mut self, start: Ino, path: &[u8], mode: u32, now: Timespec) -> Res<()> {
        let (ino, _) = self.walk(|v| walk::resolve(v, start, path, true)).await?;
        self.after_walk(ino, Request::Chmod { ino, mode, now })
            .await?;
        Ok(())
    }

    /// `fchownat` (following a last symlink if `follow`): `None` leaves the owner or group.
    pub async fn chown(
        &mut self,
        start: Ino,
        path: &[u8],
        follow: bool,
        (uid, gid): (Option<u32>, Option<u32>),
        now: Timespec,
    ) -> Result<(), Errno> {
        let req = |ino| Request::Chown { ino, uid, gid, now };
        retry!(self, self.try_set(start, path, follow, &req).await)
    }

    /// `utimensat` (following a last symlink if `follow`): `None` leaves a time (`UTIME_OMIT`;
    /// the caller turns `UTIME_NOW` into `now`).
    pub async fn utimens(
        &mut self,
        start: Ino,
        path: &[u8],
        follow: bool,
        (atime, mtime): (Option<Timespec>, Option<Timespec>),
        now: Timespec,
    ) -> Result<(), Errno> {
        let req = |ino| Request::Utimens {
            ino,
            atime,
            mtime,
            now,
        };
        retry!(self, self.try_set(start, path, follow, &req).await)
    }

    /// Changes an attribute of open file `fd`'s inode.
    pub async fn fset(&mut self, fd: Fd, attr: SetAttr, now: Timespec) -> Result<(), Errno> {
        let ino = self.file(fd)?.ino;
        let req = match attr {
            SetAttr::Mode(mode) => Request::Chmod { ino, mode, now },
            SetAttr::Owner(uid, gid) => Request::Chown { ino, uid, gid, now },
            SetAttr::Times(atime, mtime) => Request::Utimens {
                ino,
                atime,
                mtime,
                now,
            },
        };
        self.at_inode(ino, req).await.map_err(errno)?;
        Ok(())
    }

    /// Resolves `path` and sends the inode's server the request `req` makes for it.
    async fn try_set(
        &mut self,
        start: Ino,
        path: &[u8],
        follow: bool,
        req: &impl Fn(Ino) -> Request,
    ) -> Res<()> {
        let (ino, _) = self.walk(|v| walk::resolve(v, start, path, follow)).await?;
        self.after_walk(ino, req(ino)).await?;
        Ok(())
    }

    /// `unlinkat(start, path, 0)`.
    pub async fn unlink(&mut self, start: Ino, path: &[u8], now: Timespec) -> Result<(), Errno> {
        retry!(self, self.try_unlink(start, path, now).await)
    }

    async fn try_unlink(&mut self, start: Ino, path: &[u8], now: Timespec) -> Res<()> {
        let p = self.walk(|v| walk::resolve_parent(v, start, path)).await?;
        let Last::Name(name) = p.last else {
            return Err(Errno::EISDIR.into());
        };
        check_name(&name)?;
        let expect = Expect::NotDir {
            trailing: p.trailing_slash,
        };
        self.rm_map(p.dir, &name, expect, AtInode::Unlink, now)
            .await?;
        Ok(())
    }

    /// `rmdir`.
    pub async fn rmdir(&mut self, start: Ino, path: &[u8], now: Timespec) -> Result<(), Errno> {
        retry!(self, self.try_rmdir(start, path, now).await)
    }

    async fn try_rmdir(&mut self, start: Ino, path: &[u8], now: Timespec) -> Res<()> {
        let p = self.walk(|v| walk::resolve_parent(v, start, path)).await?;
        let name = walk::rmdir_name(p.last)?;
        check_name(&name)?;
        let (ino, kind) = self
            .walk(|v| v.lookup(p.dir, &name))
            .await?
            .ok_or(Errno::ENOENT)?;
        if kind != Kind::Dir {
            return Err(Errno::ENOTDIR.into());
        }
        let e = Entry {
            ino,
            kind,
            distributed: self.distributed(ino).await?,
        };
        let es = self.entry_server(p.dir, &name).await?;
        if !e.distributed && self.table.inode_server(ino) == es {
            // The entry, the directory and all its entries on one server: one message.
            let req = Request::Rmdir {
                dir: p.dir,
                name: name.clone(),
                ino,
                now,
            };
            // A refusal (ENOTEMPTY) leaves the entry, and the cache, as they were.
            return match self.rpc(es, req).await? {
                Reply::Mapped { home, .. } => {
                    self.forget(p.dir, &name);
                    self.dirs.remove(&ino);
                    self.nlink(p.dir, -1, home, now).await
                }
                Reply::Stale => {
                    self.forget(p.dir, &name);
                    Err(Fail::Restart)
                }
                _ => Err(Errno::EIO.into()),
            };
        }
        self.hold_and_mark(&e).await?;
        let home = match self
            .rm_map(p.dir, &name, Expect::Ino(ino), AtInode::Leave, now)
            .await
        {
            Ok((_, home)) => home,
            Err(f) => {
                self.release_marks(&e).await?;
                return Err(f);
            }
        };
        self.nlink(p.dir, -1, home, now).await?;
        self.commit_rmdir(&e, now).await?;
        self.dirs.remove(&ino);
        Ok(())
    }

    /// Whether directory `a` is `d` or one of its ancestors (asking each directory's server
    /// for its parent, up to the root).
    async fn is_ancestor_or_self(&mut self, a: Ino, mut d: Ino) -> Res<bool> {
        loop {
            if d == a {
                return Ok(true);
            }
            if d == ROOT_INO {
                return Ok(false);
            }
            let parent = match self.at_inode(d, Request::DirInfo { dir: d }).await {
                Ok(Reply::Dir { parent, .. }) => parent,
                _ => return Ok(false),
            };
            if parent == d {
                return Ok(false);
            }
            d = parent;
        }
    }

    /// `renameat2(old, new, flags)` with flags 0, `RENAME_NOREPLACE` or `RENAME_EXCHANGE`,
    /// with Linux's checks in NR-FS's order.
    pub async fn rename(
        &mut self,
        old_start: Ino,
        old_path: &[u8],
        new_start: Ino,
        new_path: &[u8],
        flags: u32,
        now: Timespec,
    ) -> Result<(), Errno> {
        // NR-FS's flags: no RENAME_WHITEOUT, and NOREPLACE and EXCHANGE exclude each other.
        let known = nrfs::RENAME_NOREPLACE | nrfs::RENAME_EXCHANGE;
        if flags & !known != 0 || flags == known {
            return Err(Errno::EINVAL);
        }
        if flags & nrfs::RENAME_EXCHANGE != 0 {
            return retry!(
                self,
                self.try_exchange((old_start, old_path), (new_start, new_path), now)
                    .await
            );
        }
        retry!(
            self,
            self.try_rename(old_start, old_path, new_start, new_path, flags, now)
                .await
        )
    }

    async fn try_rename(
        &mut self,
        old_start: Ino,
        old_path: &[u8],
        new_start: Ino,
        new_path: &[u8],
        flags: u32,
        now: Timespec,
    ) -> Res<()> {
        let (old, mut on, new, mut nn) = self
            .rename_ends((old_start, old_path), (new_start, new_path), flags)
            .await?;
        let (oi, ok) = self
            .walk(|v| v.lookup(old.dir, &on))
            .await?
            .ok_or(Errno::ENOENT)?;
        check_name(&nn)?;
        let plain = ok != Kind::Dir && !old.trailing_slash && !new.trailing_slash;
        if plain
            && !self
                .entries
                .contains_key(&(new.dir, &nn[..]) as &dyn EntryKey)
        {
            let noreplace = flags & nrfs::RENAME_NOREPLACE != 0;
            let file = Entry {
                ino: oi,
                kind: ok,
                distributed: false,
            };
            if self
                .blind_rename((old.dir, &on), (new.dir, &nn), file, noreplace, now)
                .await?
            {
                return Ok(());
            }
            // Several servers: moved as if the new name were free, which its server checks
            // (`AddMap` with no name to replace answers `EEXIST`, and the move gives back the
            // link it took, leaving the file as it was): the lookup this saves would most
            // often find nothing.
            let m = Move {
                old_dir: old.dir,
                old_name: on,
                new_dir: new.dir,
                new_name: nn,
                source: file,
                replaced: None,
            };
            match self.move_entry(&m, now).await {
                Err(Fail::Errno(Errno::EEXIST)) if !noreplace => {}
                r => return r,
            }
            (on, nn) = (m.old_name, m.new_name);
        }
        let target = self.walk(|v| v.lookup(new.dir, &nn)).await?;
        if flags & nrfs::RENAME_NOREPLACE != 0 && target.is_some() {
            return Err(Errno::EEXIST.into());
        }
        if ok != Kind::Dir && (old.trailing_slash || new.trailing_slash) {
            return Err(Errno::ENOTDIR.into());
        }
        // A directory moving to another parent: under the rename lock, checked and moved.
        let relocking = ok == Kind::Dir && old.dir != new.dir;
        if relocking {
            self.hold(ROOT_INO).await?;
        }
        let r = self
            .checked_rename(&old, on, &new, nn, (oi, ok), target, now)
            .await;
        if relocking {
            self.unhold(ROOT_INO).await?;
        }
        r
    }

    /// The parents and last names of a rename's two paths (the old name checked).
    async fn rename_ends(
        &mut self,
        (old_start, old_path): (Ino, &[u8]),
        (new_start, new_path): (Ino, &[u8]),
        flags: u32,
    ) -> Res<(nrfs::ParentPath, Name, nrfs::ParentPath, Name)> {
        let mut old = self
            .walk(|v| walk::resolve_parent(v, old_start, old_path))
            .await?;
        let mut new = self
            .walk(|v| walk::resolve_parent(v, new_start, new_path))
            .await?;
        // The names are taken out (`last` is not looked at again).
        let (on, nn) = walk::rename_names(
            core::mem::replace(&mut old.last, nrfs::Last::Dot),
            core::mem::replace(&mut new.last, nrfs::Last::Dot),
            flags,
        )?;
        check_name(&on)?;
        Ok((old, on, new, nn))
    }

    /// `renameat2(RENAME_EXCHANGE)`: the two names swap their inodes, with NR-FS's checks.
    /// The entry at the new name is replaced first, then the one at the old name, then
    /// directories that changed parent get their `..` and the parents their link counts.
    /// Directories involved are held (neither can be removed meanwhile), and a directory
    /// changing parent takes the rename lock as `rename` does. Files are not held: if the old
    /// name is unlinked or replaced between the two replacements, the new name's former inode
    /// goes back under the old name if it is free and is dropped if not (the exchange then
    /// counts as done before that unlink).
    async fn try_exchange(
        &mut self,
        (old_start, old_path): (Ino, &[u8]),
        (new_start, new_path): (Ino, &[u8]),
        now: Timespec,
    ) -> Res<()> {
        let (old, on, new, nn) = self
            .rename_ends((old_start, old_path), (new_start, new_path), 0)
            .await?;
        check_name(&nn)?;
        let (ai, ak) = self
            .walk(|v| v.lookup(old.dir, &on))
            .await?
            .ok_or(Errno::ENOENT)?;
        let (bi, bk) = self
            .walk(|v| v.lookup(new.dir, &nn))
            .await?
            .ok_or(Errno::ENOENT)?;
        if (bk != Kind::Dir && new.trailing_slash) || (ak != Kind::Dir && old.trailing_slash) {
            return Err(Errno::ENOTDIR.into());
        }
        let moved = old.dir != new.dir;
        let relocking = moved && (ak == Kind::Dir || bk == Kind::Dir);
        if relocking {
            self.hold(ROOT_INO).await?;
        }
        let r = self
            .held_exchange((&old, on, (ai, ak)), (&new, nn, (bi, bk)), now)
            .await;
        if relocking {
            self.unhold(ROOT_INO).await?;
        }
        r
    }

    /// [`Client::try_exchange`] under the rename lock: the checks, the holds, the swap.
    async fn held_exchange(
        &mut self,
        (old, on, (ai, ak)): (&nrfs::ParentPath, Name, (Ino, Kind)),
        (new, nn, (bi, bk)): (&nrfs::ParentPath, Name, (Ino, Kind)),
        now: Timespec,
    ) -> Res<()> {
        if old.dir != new.dir {
            for (ino, kind, dir) in [(ai, ak, new.dir), (bi, bk, old.dir)] {
                if kind == Kind::Dir && self.is_ancestor_or_self(ino, dir).await? {
                    return Err(Errno::EINVAL.into());
                }
            }
        }
        if ai == bi {
            return Ok(());
        }
        let mut a = Entry {
            ino: ai,
            kind: ak,
            distributed: false,
        };
        let mut b = Entry {
            ino: bi,
            kind: bk,
            distributed: false,
        };
        for e in [&mut a, &mut b] {
            if e.kind == Kind::Dir {
                e.distributed = self.distributed(e.ino).await?;
            }
        }
        let dirs: Vec<Ino> = [a, b]
            .iter()
            .filter(|e| e.kind == Kind::Dir)
            .map(|e| e.ino)
            .collect();
        for (i, &d) in dirs.iter().enumerate() {
            if let Err(f) = self.hold(d).await {
                for &h in &dirs[..i] {
                    self.unhold(h).await?;
                }
                return Err(f);
            }
        }
        let r = self
            .swap_entries((old.dir, on), a, (new.dir, nn), b, now)
            .await;
        for &d in &dirs {
            self.unhold(d).await?;
        }
        r
    }

    /// The two replacements of an exchange and what follows them (see
    /// [`Client::try_exchange`]). A file or symlink gets a link for its new name first (so
    /// that it is never without one) and loses it at the end; a directory gets its `..`.
    /// Both ways their ctime moves.
    async fn swap_entries(
        &mut self,
        (od, on): (Ino, Name),
        a: Entry,
        (nd, nn): (Ino, Name),
        b: Entry,
        now: Timespec,
    ) -> Res<()> {
        let files: Vec<Ino> = [a, b]
            .iter()
            .filter(|e| e.kind != Kind::Dir)
            .map(|e| e.ino)
            .collect();
        for (i, &f) in files.iter().enumerate() {
            if let Err(e) = self.link_inode(f, now).await {
                self.unlink_inodes(&files[..i], now).await?;
                return Err(match e {
                    Fail::Errno(Errno::ENOENT) => Fail::Restart,
                    e => e,
                });
            }
        }
        let is_dir = |e: Entry| i32::from(e.kind == Kind::Dir);
        let replace = |dir, name: &Name, entry: Entry, old: Option<Ino>| Request::AddMap {
            dir,
            name: name.clone(),
            entry,
            replace: old,
            touch: false,
            now,
        };
        let ns = self.entry_server(nd, &nn).await?;
        let new_home = match self.rpc(ns, replace(nd, &nn, a, Some(b.ino))).await {
            Ok(Reply::Mapped { home, .. }) => home,
            other => {
                self.entries.remove(&(nd, nn));
                self.unlink_inodes(&files, now).await?;
                return Err(other.err().unwrap_or(Fail::Restart));
            }
        };
        self.remember(nd, nn, a);
        self.nlink(nd, is_dir(a) - is_dir(b), new_home, now).await?;
        let os = self.entry_server(od, &on).await?;
        let old_home = match self.rpc(os, replace(od, &on, b, Some(a.ino))).await {
            Ok(Reply::Mapped { home, .. }) => Some(home),
            other => {
                // The old name changed under a file `a`: `b` goes back there if it is free.
                self.forget(od, &on);
                let back = match other {
                    Ok(Reply::Stale) => self.rpc(os, replace(od, &on, b, None)).await,
                    other => other,
                };
                match back {
                    Ok(Reply::Mapped { home, .. }) => Some(home),
                    _ if b.kind == Kind::Dir => return Err(Errno::EIO.into()),
                    // Nameless: its lost name's link goes too.
                    _ => {
                        self.unlink_inodes(&[b.ino], now).await?;
                        None
                    }
                }
            }
        };
        if let Some(home) = old_home {
            self.remember(od, on, b);
            self.nlink(od, is_dir(b) - is_dir(a), home, now).await?;
        }
        self.unlink_inodes(&files, now).await?;
        for (e, parent) in [(a, nd), (b, od)] {
            if e.kind == Kind::Dir {
                let req = Request::Move {
                    dir: e.ino,
                    parent,
                    now,
                };
                self.at_inode(e.ino, req).await?;
            }
        }
        Ok(())
    }

    /// One link more for file `ino`, setting its ctime to `now`.
    async fn link_inode(&mut self, ino: Ino, now: Timespec) -> Res<Reply> {
        self.at_inode(ino, Request::Link { ino, now }).await
    }

    /// One link fewer for each of `inodes`, setting their ctime to `now`.
    async fn unlink_inodes(&mut self, inodes: &[Ino], now: Timespec) -> Res<()> {
        for &ino in inodes {
            self.at_inode(ino, Request::Unlink { ino, now }).await?;
        }
        Ok(())
    }

    /// The rest of `rename` once the names are found: the ancestry and kind checks, then the
    /// move.
    #[allow(clippy::too_many_arguments)]
    async fn checked_rename(
        &mut self,
        old: &nrfs::ParentPath,
        on: Name,
        new: &nrfs::ParentPath,
        nn: Name,
        (oi, ok): (Ino, Kind),
        target: Option<(Ino, Kind)>,
        now: Timespec,
    ) -> Res<()> {
        if old.dir != new.dir {
            if ok == Kind::Dir && self.is_ancestor_or_self(oi, new.dir).await? {
                return Err(Errno::EINVAL.into());
            }
            if let Some((ni, Kind::Dir)) = target {
                if self.is_ancestor_or_self(ni, old.dir).await? {
                    return Err(Errno::ENOTEMPTY.into());
                }
            }
        }
        if target.map(|t| t.0) == Some(oi) {
            return Ok(());
        }
        let replaced = match target {
            Some((_, nk)) if ok == Kind::Dir && nk != Kind::Dir => {
                return Err(Errno::ENOTDIR.into())
            }
            Some((_, nk)) if ok != Kind::Dir && nk == Kind::Dir => return Err(Errno::EISDIR.into()),
            Some((ni, nk)) => Some(Entry {
                ino: ni,
                kind: nk,
                distributed: nk == Kind::Dir && self.distributed(ni).await?,
            }),
            None => None,
        };
        let source = Entry {
            ino: oi,
            kind: ok,
            distributed: ok == Kind::Dir && self.distributed(oi).await?,
        };
        let moving = Move {
            old_dir: old.dir,
            old_name: on,
            new_dir: new.dir,
            new_name: nn,
            source,
            replaced,
        };
        self.hold_move(&moving).await?;
        let r = self.move_entry(&moving, now).await;
        if r.is_err() {
            self.release_move(&moving).await?;
        }
        r
    }

    /// The rename of `file` to a name not in the cache, without looking that name up (one
    /// message instead of two: the lookup would most often find nothing), when one server
    /// holds both names and the file's inode: it renames over whatever the new name holds
    /// ([`Target::Any`], or [`Target::Absent`] for `RENAME_NOREPLACE`). `false` if that
    /// server cannot decide alone (the new name holds a directory or a file whose inode is
    /// elsewhere, or the old name changed) or another server is involved: the caller then
    /// looks the new name up and goes the general way, which checks everything again.
    async fn blind_rename(
        &mut self,
        (old_dir, old_name): (Ino, &Name),
        (new_dir, new_name): (Ino, &Name),
        file: Entry,
        noreplace: bool,
        now: Timespec,
    ) -> Res<bool> {
        let s = self.table.inode_server(file.ino);
        if self.entry_server(old_dir, old_name).await? != s
            || self.entry_server(new_dir, new_name).await? != s
        {
            return Ok(false);
        }
        let req = Request::Rename {
            old_dir,
            old_name: old_name.clone(),
            new_dir,
            new_name: new_name.clone(),
            ino: file.ino,
            target: if noreplace {
                Target::Absent
            } else {
                Target::Any
            },
            now,
        };
        match self.rpc(s, req).await? {
            Reply::Done => {
                self.forget(old_dir, old_name);
                if (old_dir, old_name) != (new_dir, new_name) {
                    self.remember(new_dir, new_name.clone(), file);
                }
                Ok(true)
            }
            Reply::Stale => Ok(false),
            _ => Err(Errno::EIO.into()),
        }
    }

    /// The server that can do rename `m` in one message ([`Request::Rename`], §3.7.4's
    /// coalescing): a file (not a directory) whose inode, old entry, new entry and replaced
    /// file all live on one server.
    async fn one_server_rename(&mut self, m: &Move) -> Res<Option<ServerId>> {
        if m.source.kind == Kind::Dir || m.replaced.is_some_and(|r| r.kind == Kind::Dir) {
            return Ok(None);
        }
        let s = self.table.inode_server(m.source.ino);
        let same = self.entry_server(m.old_dir, &m.old_name).await? == s
            && self.entry_server(m.new_dir, &m.new_name).await? == s
            && m.replaced
                .is_none_or(|r| self.table.inode_server(r.ino) == s);
        Ok(same.then_some(s))
    }

    /// Holds what a rename changes: a moving directory (as `rmdir` holds one, so neither
    /// removes it under the other) and a directory it replaces (held and marked: it must be
    /// empty).
    async fn hold_move(&mut self, m: &Move) -> Res<()> {
        if m.source.kind == Kind::Dir {
            self.hold(m.source.ino).await?;
        }
        if let Some(r) = m.replaced.filter(|r| r.kind == Kind::Dir) {
            if let Err(f) = self.hold_and_mark(&r).await {
                if m.source.kind == Kind::Dir {
                    self.unhold(m.source.ino).await?;
                }
                return Err(f);
            }
        }
        Ok(())
    }

    /// Undoes [`Client::hold_move`].
    async fn release_move(&mut self, m: &Move) -> Res<()> {
        if let Some(r) = m.replaced.filter(|r| r.kind == Kind::Dir) {
            self.release_marks(&r).await?;
        }
        if m.source.kind == Kind::Dir {
            self.unhold(m.source.ino).await?;
        }
        Ok(())
    }

    /// The changes of a checked and held rename: a file gets a link for its new name first,
    /// the new entry goes in (replacing the target's), the old entry goes, then the link
    /// counts, the replaced inode and a moved directory's `..` follow. On an error nothing
    /// has changed (the caller releases the holds); after the new entry is in, it finishes.
    async fn move_entry(&mut self, m: &Move, now: Timespec) -> Res<()> {
        let src = m.source;
        let is_dir = src.kind == Kind::Dir;
        if let Some(s) = self.one_server_rename(m).await? {
            let req = Request::Rename {
                old_dir: m.old_dir,
                old_name: m.old_name.clone(),
                new_dir: m.new_dir,
                new_name: m.new_name.clone(),
                ino: src.ino,
                target: m.replaced.map_or(Target::Absent, |r| Target::File(r.ino)),
                now,
            };
            let r = self.rpc(s, req).await;
            self.forget(m.old_dir, &m.old_name);
            return match r? {
                Reply::Done => {
                    self.remember(m.new_dir, m.new_name.clone(), src);
                    Ok(())
                }
                Reply::Stale => {
                    self.forget(m.new_dir, &m.new_name);
                    Err(Fail::Restart)
                }
                _ => Err(Errno::EIO.into()),
            };
        }
        // The new entry goes in, then the old one goes: Hare's two messages (§3.4). A file
        // keeps its one link throughout; its ctime is set by whichever of the two servers
        // holds its inode, else by a third message sent with the second.
        let ns = self.entry_server(m.new_dir, &m.new_name).await?;
        let is = self.table.inode_server(src.ino);
        let add = Request::AddMap {
            dir: m.new_dir,
            name: m.new_name.clone(),
            entry: src,
            replace: m.replaced.map(|r| r.ino),
            touch: !is_dir && is == ns,
            now,
        };
        let added_home = match self.rpc(ns, add).await {
            Ok(Reply::Mapped { home, .. }) => home,
            other => {
                self.forget(m.new_dir, &m.new_name);
                return match other {
                    Err(f) => Err(f),
                    Ok(_) => Err(Fail::Restart),
                };
            }
        };
        self.remember(m.new_dir, m.new_name.clone(), src);
        let at = if !is_dir && is != ns {
            AtInode::Touch
        } else {
            AtInode::Leave
        };
        match self
            .rm_map(m.old_dir, &m.old_name, Expect::Ino(src.ino), at, now)
            .await
        {
            Ok((_, removed_home)) => {
                if is_dir {
                    let added = 1 - i32::from(m.replaced.is_some());
                    self.nlink(m.new_dir, added, added_home, now).await?;
                    self.nlink(m.old_dir, -1, removed_home, now).await?;
                }
            }
            // The old name went meanwhile (a racing `unlink`, which may have freed the inode
            // the new name now names, or `rename`): the new name is taken back, and the rename
            // starts again, to fail with ENOENT as if the other call came first. Until then
            // the new name answers ENOENT, as that order would, since a server never reuses
            // an inode number. A held directory cannot go.
            Err(Fail::Restart) if !is_dir => {
                self.take_back(m, now).await?;
                return Err(Fail::Restart);
            }
            Err(Fail::Restart) => return Err(Errno::EIO.into()),
            Err(f) => return Err(f),
        }
        match m.replaced {
            Some(r) if r.kind == Kind::Dir => self.commit_rmdir(&r, now).await?,
            Some(r) => self.unlink_inodes(&[r.ino], now).await?,
            None => {}
        }
        if is_dir {
            let dir = src.ino;
            let req = Request::Move {
                dir,
                parent: m.new_dir,
                now,
            };
            self.at_inode(dir, req).await?;
            self.unhold(dir).await?;
        }
        Ok(())
    }

    /// Takes rename `m`'s new entry back after its old name went meanwhile: the name names
    /// the file it replaced again, or goes. If another call changed the name meanwhile, it
    /// stays as that call left it, and a replaced file that cannot have it back loses the
    /// link that name held. A ctime the rename set stays (the file, if it has names left,
    /// shows a change a little after the call that took its old name).
    async fn take_back(&mut self, m: &Move, now: Timespec) -> Res<()> {
        let src = m.source;
        let Some(r) = m.replaced else {
            let removed = self
                .rm_map(
                    m.new_dir,
                    &m.new_name,
                    Expect::Ino(src.ino),
                    AtInode::Leave,
                    now,
                )
                .await;
            return match removed {
                Ok(_) | Err(Fail::Restart) => Ok(()),
                Err(f) => Err(f),
            };
        };
        let ns = self.entry_server(m.new_dir, &m.new_name).await?;
        let back = Request::AddMap {
            dir: m.new_dir,
            name: m.new_name.clone(),
            entry: r,
            replace: Some(src.ino),
            touch: false,
            now,
        };
        let back = self.rpc(ns, back).await;
        self.forget(m.new_dir, &m.new_name);
        match back? {
            Reply::Mapped { .. } => Ok(()),
            Reply::Stale => self.unlink_inodes(&[r.ino], now).await,
            _ => Err(Errno::EIO.into()),
        }
    }
}

/// What [`Client::rm_map`] does to a file's (or symlink's) inode besides removing its entry.
#[derive(Clone, Copy, PartialEq, Eq)]
enum AtInode {
    /// Nothing (a directory, or a renamed file whose ctime another message sets).
    Leave,
    /// Drops the name's link (`unlink`): at the entry's server in the same message if the
    /// inode lives there (§3.7.4), else by `Unlink` to its own.
    Unlink,
    /// Sets its ctime (a rename's; the expected entry's inode): at the entry's server if the
    /// inode lives there, else by a `Touch` to its own sent at the same time.
    Touch,
}

/// A checked rename.
struct Move {
    old_dir: Ino,
    old_name: Name,
    new_dir: Ino,
    new_name: Name,
    source: Entry,
    replaced: Option<Entry>,
}

/// Inserts into a cache of at most `cap` (at least one) items, forgetting others first.
/// Copies from `blocks` of `cache` (the first holding byte `at` of the file) into `buf`; a
/// hole reads as zeros.
pub(crate) fn copy_out(
    cache: &impl BufferCache,
    blocks: &[Option<Block>],
    at: u64,
    buf: &mut [u8],
) {
    let mut pos = 0;
    let mut off = (at % BLOCK_SIZE as u64) as usize;
    for b in blocks {
        if pos == buf.len() {
            break;
        }
        let n = (BLOCK_SIZE - off).min(buf.len() - pos);
        match b {
            Some(b) => cache.read(*b, off, &mut buf[pos..pos + n]),
            None => buf[pos..pos + n].fill(0),
        }
        pos += n;
        off = 0;
    }
}

/// Copies `data` into `blocks` of `cache` (the first holding byte `at` of the file).
pub(crate) fn copy_in(cache: &impl BufferCache, blocks: &[Block], at: u64, data: &[u8]) {
    let mut pos = 0;
    let mut off = (at % BLOCK_SIZE as u64) as usize;
    for &b in blocks {
        if pos == data.len() {
            break;
        }
        let n = (BLOCK_SIZE - off).min(data.len() - pos);
        cache.write(b, off, &data[pos..pos + n]);
        pos += n;
        off = 0;
    }
}

/// Inserts `k` into a cache of at most `cap` entries, dropping others to make room.
///
/// What goes is the largest key: keys begin with an inode number, and a server numbers its
/// inodes in the order it makes them, so the directories every path crosses (made first,
/// the smallest numbers) stay, and the newest go (dropping the smallest instead made every
/// walk ask for the top of the tree again once the cache was full).
fn bounded_insert<K: Ord, V>(map: &mut BTreeMap<K, V>, k: K, v: V, cap: usize) {
    while map.len() >= cap.max(1) {
        map.pop_last();
    }
    map.insert(k, v);
}

/// The caller's error for a failed step (a restart that cannot be retried is EIO).
fn errno(f: Fail) -> Errno {
    match f {
        Fail::Errno(e) => e,
        Fail::Restart => Errno::EIO,
    }
}

/// Plans `open(O_CREAT | O_EXCL)` as [`walk::plan_create`] does, but without looking the
/// last name up: an existing name is EEXIST, which the server that would make the entry
/// answers anyway, so a new name (the common case) costs no lookup message.
fn plan_exclusive(v: &View<'_>, start: Ino, path: &[u8]) -> Result<walk::CreateTarget, Errno> {
    let (dir, name, trailing) = walk::plan_new_name(v, start, path)?;
    if trailing {
        return Err(Errno::EISDIR);
    }
    if name.len() > NAME_MAX {
        return Err(Errno::ENAMETOOLONG);
    }
    Ok(walk::CreateTarget {
        dir,
        name,
        existing: None,
    })
}

/// Where a non-exclusive `O_CREAT` open of `path` makes or finds its file, and whether the
/// last name was looked up: a name the cache does not know is not (the create finds out);
/// a known one, `.`, `..`, `/` or a trailing slash are planned by [`walk::plan_create`].
fn plan_create_hoping(
    v: &View<'_>,
    start: Ino,
    path: &[u8],
) -> Result<(walk::CreateTarget, bool), Errno> {
    let p = walk::resolve_parent(v, start, path)?;
    match p.last {
        Last::Name(name)
            if !p.trailing_slash && name.len() <= NAME_MAX && !v.holds(p.dir, &name) =>
        {
            let t = walk::CreateTarget {
                dir: p.dir,
                name,
                existing: None,
            };
            Ok((t, false))
        }
        _ => Ok((walk::plan_create(v, start, path, false)?, true)),
    }
}

/// Checks a name's length as NR-FS does before it looks at the entry.
fn check_name(name: &[u8]) -> Res<()> {
    if name.len() > NAME_MAX {
        return Err(Errno::ENAMETOOLONG.into());
    }
    Ok(())
}
