//! The protocol between client libraries and file servers: Hare's RPCs (thesis Table 4.2) as
//! typed messages.
//!
//! Every request goes to one server and gets exactly one [`Reply`]. Servers also send
//! [`Invalidation`]s to the clients that cached a directory entry when it is removed or
//! replaced (§3.7.1); a server hands them to the transport before it replies, and the transport
//! delivers them atomically (§3.7.2: once a send returns the message is in the client's queue),
//! so a client that applies its queued invalidations before every lookup never uses an entry
//! removed by an operation that completed before its lookup began.
//!
//! Names and block lists are variable-sized here; on Reef's channels (56-byte slots) they
//! travel in a page each client grants every server at connect time (see docs/plans.md), which
//! is why a reply carries at most [`MAX_IO_BLOCKS`] blocks.

use alloc::boxed::Box;
use alloc::vec::Vec;

use abi::Errno;

use crate::{Attrs, Block, Ino, Kind, ShardTable, Stat, Timespec};

/// A file or directory name (one path component, at most 255 bytes).
pub type Name = Vec<u8>;

/// Most blocks one `Read` or `Write` covers (1 MiB): a client splits larger transfers.
pub const MAX_IO_BLOCKS: usize = 256;

/// Most pages one [`Request::Wrote`] covers: its blocks travel in its message's slot.
pub const MAX_POSTED_BLOCKS: usize = 4;

/// Most bytes one `ReadData` or `WriteData` carries: one pool page.
pub const MAX_DATA: usize = 4096;

/// Bytes of entries one `Dirents` reply carries, each counted as its name plus
/// [`DIRENT_OVERHEAD`]: one page.
pub const DIRENTS_BYTES: usize = 4096;

/// What one entry of a `Dirents` reply costs besides its name (its place in the page).
pub const DIRENT_OVERHEAD: usize = 12;

/// Bytes of entries a [`Reply::Listed`] carries, counted as for `Dirents`: the page less room
/// for the attributes before them.
pub const LISTED_BYTES: usize = DIRENTS_BYTES - 128;

/// A directory entry as a server stores it: the inode it names, the inode's kind, and for a
/// directory whether its entries are distributed over all servers (§3.4).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Entry {
    /// The inode (its number also says which server holds it: [`crate::ShardTable`]).
    pub ino: Ino,
    /// Its kind.
    pub kind: Kind,
    /// A directory whose entries are spread by name hash over every server.
    pub distributed: bool,
}

/// Directory entries, their names side by side in one buffer: a listing costs two
/// allocations, not one per name (a listing's names were the kernel heap's largest caller
/// when directories are walked, and a third of `hared`'s allocations).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Listing {
    /// The names, one after the other.
    names: Vec<u8>,
    /// Each entry: where its name starts and ends in `names`, the entry.
    items: Vec<(usize, usize, Entry)>,
}

impl Listing {
    /// No entries.
    pub const fn new() -> Listing {
        Listing {
            names: Vec::new(),
            items: Vec::new(),
        }
    }

    /// No entries, with room for `entries` of `bytes` of names in all.
    pub fn with_capacity(entries: usize, bytes: usize) -> Listing {
        Listing {
            names: Vec::with_capacity(bytes),
            items: Vec::with_capacity(entries),
        }
    }

    /// Adds `name` with entry `e`.
    pub fn push(&mut self, name: &[u8], e: Entry) {
        let start = self.names.len();
        self.names.extend_from_slice(name);
        self.items.push((start, self.names.len(), e));
    }

    /// How many entries.
    pub fn len(&self) -> usize {
        self.items.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// The bytes it holds: its names and each entry's place.
    pub fn bytes(&self) -> usize {
        self.names.len() + self.items.len() * core::mem::size_of::<(usize, usize, Entry)>()
    }

    /// The name of item `(start, end, _)`.
    fn name_of(&self, &(start, end, _): &(usize, usize, Entry)) -> &[u8] {
        &self.names[start..end]
    }

    /// The entries from the `from`-th on, as (name, entry).
    pub fn iter_from(&self, from: usize) -> impl Iterator<Item = (&[u8], Entry)> + '_ {
        let items = self.items.get(from..).unwrap_or(&[]);
        items.iter().map(|it| (self.name_of(it), it.2))
    }

    /// Every entry, as (name, entry).
    pub fn iter(&self) -> impl Iterator<Item = (&[u8], Entry)> + '_ {
        self.iter_from(0)
    }

    /// The last entry's name.
    pub fn last_name(&self) -> Option<&[u8]> {
        self.items.last().map(|it| self.name_of(it))
    }

    /// Appends `other`'s entries.
    pub fn append(&mut self, other: &Listing) {
        let shift = self.names.len();
        self.names.extend_from_slice(&other.names);
        let moved = other
            .items
            .iter()
            .map(|&(s, e, x)| (s + shift, e + shift, x));
        self.items.extend(moved);
    }

    /// Puts the entries in name order (their names stay where they are).
    pub fn sort_by_name(&mut self) {
        let mut items = core::mem::take(&mut self.items);
        items.sort_unstable_by(|a, b| self.name_of(a).cmp(self.name_of(b)));
        self.items = items;
    }

    /// The entry named `name`, in a listing in name order ([`Listing::sort_by_name`]).
    pub fn find(&self, name: &[u8]) -> Option<Entry> {
        let at = self
            .items
            .binary_search_by(|it| self.name_of(it).cmp(name))
            .ok()?;
        Some(self.items[at].2)
    }
}

/// What a [`Request::Rename`] must find under the new name, or it changes nothing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target {
    /// Nothing: EEXIST if something is there.
    Absent,
    /// Exactly this file, which loses the name: [`Reply::Stale`] otherwise.
    File(Ino),
    /// Whatever is there, not looked up by the client: nothing, the file itself (nothing to
    /// do), or a file whose inode is on this server, which loses the name; [`Reply::Stale`]
    /// for anything else (a directory, an inode elsewhere), and the client looks the name up.
    Any,
}

/// What an `RmMap` must find under the name, or it changes nothing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Expect {
    /// Anything but a directory (`unlink`): EISDIR for a directory, and ENOTDIR if the path
    /// ended in `/` (`trailing`).
    NotDir {
        /// The path ended in `/`.
        trailing: bool,
    },
    /// Exactly this inode (`rmdir`, `rename`): [`Reply::Stale`] otherwise.
    Ino(Ino),
}

/// The body of a new inode.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NewInode {
    /// A regular file.
    File,
    /// A directory in `parent`.
    Dir {
        /// Its parent directory (`..`).
        parent: Ino,
        /// Its entries are spread over all servers.
        distributed: bool,
    },
    /// A symbolic link to `target`.
    Symlink(Vec<u8>),
    /// A FIFO: a name and attributes only (the pipe an open reaches is the embedder's, as
    /// NR-FS's [`Kind::Fifo`]).
    Fifo,
}

/// A request from a client library to one file server.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Request {
    /// `RESOLVE`: looks `name` up in the server's share of directory `dir`; the server
    /// remembers that the client caches the answer.
    Lookup {
        /// The directory.
        dir: Ino,
        /// The name.
        name: Name,
    },
    /// `ADD_MAP`: adds entry `name` → `entry` to `dir` (EEXIST if the name exists), or
    /// replaces the entry for inode `replace` (rename over an existing name; [`Reply::Stale`]
    /// if the name no longer names that inode). ENOENT in a removed directory; [`Reply::Busy`]
    /// while an `rmdir` holds the directory. With `touch`, a file's (or symlink's) inode that
    /// lives on this server gets `now` as its ctime (a rename's change to the inode,
    /// coalesced, §3.7.4; [`Reply::Stale`], with nothing changed, if the inode is not here,
    /// is a directory or has no name left).
    AddMap {
        /// The directory.
        dir: Ino,
        /// The new name.
        name: Name,
        /// What it names.
        entry: Entry,
        /// The inode the name must name now, which the new entry replaces.
        replace: Option<Ino>,
        /// Also set the ctime of the non-directory inode held here.
        touch: bool,
        /// The time, for the directory's times on its home server.
        now: Timespec,
    },
    /// `RM_MAP`: removes entry `name` from `dir` if it is what `expect` says; with `unlink`,
    /// a file's (or symlink's) inode that lives on this server also loses that link at once
    /// (`UNLINK` coalesced, §3.7.4: the client sends `Unlink` only for an inode elsewhere);
    /// with `touch` instead, such an inode gets `now` as its ctime (a rename's).
    RmMap {
        /// The directory.
        dir: Ino,
        /// The name.
        name: Name,
        /// What the entry must be.
        expect: Expect,
        /// Also drop the link of a non-directory inode held here.
        unlink: bool,
        /// Also set the ctime of a non-directory inode held here (without `unlink`).
        touch: bool,
        /// The time, for the directory's times on its home server.
        now: Timespec,
    },
    /// `CREATE`: makes a new inode in one of the server's shards, with one name (a directory:
    /// two), counted as open once if `open`.
    Create {
        /// What it is.
        new: NewInode,
        /// Mode and owner.
        attrs: Attrs,
        /// Count one open file description at once (`open(O_CREAT)`).
        open: bool,
        /// That description may write ([`Request::Open`]'s `write`).
        write: bool,
        /// Its times.
        now: Timespec,
    },
    /// `CREATE` and `ADD_MAP` as one message (§3.7.4, message coalescing), when the server
    /// that makes the inode also holds its entry: makes inode `new` and adds entry `name` for
    /// it to `dir`, or does neither (`EEXIST`, `ENOENT` in a removed directory, [`Reply::Busy`]
    /// under an `rmdir`). Answered [`Reply::Made`]. Not for symlinks: a target and a name
    /// need not fit one page together.
    CreateNamed {
        /// The directory.
        dir: Ino,
        /// The new name.
        name: Name,
        /// What it is (a file or a directory).
        new: NewInode,
        /// Mode and owner.
        attrs: Attrs,
        /// Count one open file description at once (`open(O_CREAT)`).
        open: bool,
        /// That description may write ([`Request::Open`]'s `write`). A new regular file
        /// opened to write gets its first page's block at once, allocated ahead
        /// ([`Reply::Made`]), so that its first write asks nothing.
        write: bool,
        /// Its times, and the directory's.
        now: Timespec,
    },
    /// `DESTROY`: removes an inode made by `Create` whose name could not be added.
    Destroy {
        /// The inode.
        ino: Ino,
    },
    /// One more name for a file (`link`).
    Link {
        /// The inode.
        ino: Ino,
        /// Its new ctime.
        now: Timespec,
    },
    /// One name fewer (`unlink`, a replaced name); the inode goes with its last name and last
    /// open file description.
    Unlink {
        /// The inode.
        ino: Ino,
        /// Its new ctime.
        now: Timespec,
    },
    /// A renamed file's (or symlink's) new ctime, when its inode lives on neither name's
    /// server (else `AddMap`'s or `RmMap`'s `touch` carries it). ENOENT if the inode is gone.
    Touch {
        /// The inode.
        ino: Ino,
        /// Its new ctime.
        now: Timespec,
    },
    /// A subdirectory of `dir` appeared (`delta` 1) or went (-1) through an entry on another
    /// server than `dir`'s home: its link count and times.
    Nlink {
        /// The directory.
        dir: Ino,
        /// +1 or -1.
        delta: i32,
        /// Its new mtime and ctime.
        now: Timespec,
    },
    /// Directory `dir` moved into `parent` (`rename`): its `..` and ctime.
    Move {
        /// The directory.
        dir: Ino,
        /// Its new parent.
        parent: Ino,
        /// Its new ctime.
        now: Timespec,
    },
    /// A directory's parent and placement ([`Reply::Dir`]); ENOTDIR for another kind.
    DirInfo {
        /// The directory.
        dir: Ino,
    },
    /// `OPEN`: counts one more open file description; truncates a regular file to 0 first
    /// with `trunc` (`O_TRUNC`). Answers the inode's attributes (a regular file's with its
    /// first blocks, [`Reply::Opened`]); with `list`, a directory answers them with the
    /// first entries of its listing held here: all of an ordinary directory's, this server's
    /// share of a distributed one's ([`Reply::Listed`], `OPEN` and `DIRENT` coalesced,
    /// §3.7.4).
    Open {
        /// The inode.
        ino: Ino,
        /// `O_TRUNC`.
        trunc: bool,
        /// The opener lists the directory next (`opendir`).
        list: bool,
        /// The description may write: its client may post writes into the file's blocks
        /// ([`Request::Wrote`]), so the server counts it as a writer of the file until its
        /// `Close` (or `Share`), and the other clients caching the file's size forget it.
        write: bool,
        /// The time, for a truncation.
        now: Timespec,
    },
    /// `CLOSE`: one open file description fewer; an unlinked inode goes with its last, and
    /// blocks a truncation freed while it was open become free again.
    Close {
        /// The inode.
        ino: Ino,
        /// The description was opened to write (one writer fewer).
        write: bool,
    },
    /// `READ`, `BLOCKS`: the file's size and the blocks holding `[offset, offset + len)`
    /// clipped to the size (`None` for a hole). Through a shared description (`desc`), the
    /// offset is the description's, which advances past what is read.
    Read {
        /// The inode.
        ino: Ino,
        /// First byte (ignored with `desc`).
        offset: u64,
        /// Bytes wanted (at most [`MAX_IO_BLOCKS`] blocks' worth).
        len: u32,
        /// A shared open file description of `ino` (§3.5.1).
        desc: Option<u64>,
    },
    /// `WRITE`: allocates the blocks for `[offset, offset + len)` (at the end with `append`),
    /// extends the size and sets the times; the client then writes the data itself. Through a
    /// shared description (`desc`), the offset is the description's, which advances.
    Write {
        /// The inode.
        ino: Ino,
        /// First byte (ignored with `append` or `desc`).
        offset: u64,
        /// Bytes (at most [`MAX_IO_BLOCKS`] blocks' worth).
        len: u32,
        /// `O_APPEND`: at the end of the file, atomically.
        append: bool,
        /// A shared open file description of `ino` (§3.5.1).
        desc: Option<u64>,
        /// The time.
        now: Timespec,
    },
    /// A write the client made itself into blocks of the file it knew (§3.3: a client that
    /// knows a file's blocks writes without asking), posted: the server moves the size past
    /// `offset + len` and sets the times. `blocks` are the blocks the client wrote, one per
    /// page of the range (at most [`MAX_POSTED_BLOCKS`]); where a truncation since took one
    /// from the file (it is kept from reuse while the file is open, §3.5), the server copies
    /// the written bytes into the page's block now. EINVAL, changing nothing, for a block
    /// that is neither, and from a client that has the file open to write no more.
    Wrote {
        /// The inode.
        ino: Ino,
        /// First byte.
        offset: u64,
        /// Bytes (at most [`MAX_POSTED_BLOCKS`] pages' worth, within them).
        len: u32,
        /// The blocks written, from the page holding `offset`.
        blocks: Vec<Block>,
        /// The time.
        now: Timespec,
    },
    /// `Read` for a client without direct access to the buffer cache (§5.4's ablation): the
    /// server copies the bytes of `[offset, offset + len)` that lie below the size into its
    /// reply ([`Reply::Data`]).
    ReadData {
        /// The inode.
        ino: Ino,
        /// First byte (ignored with `desc`).
        offset: u64,
        /// Bytes wanted (at most [`MAX_DATA`]).
        len: u32,
        /// A shared open file description of `ino` (§3.5.1).
        desc: Option<u64>,
    },
    /// `Write` for a client without direct access to the buffer cache (§5.4's ablation): the
    /// data travels in the request and the server copies it into the blocks it allocates
    /// ([`Reply::Written`] with no blocks).
    WriteData {
        /// The inode.
        ino: Ino,
        /// First byte (ignored with `append` or `desc`).
        offset: u64,
        /// The bytes (at most [`MAX_DATA`]).
        data: Vec<u8>,
        /// `O_APPEND`: at the end of the file, atomically.
        append: bool,
        /// A shared open file description of `ino` (§3.5.1).
        desc: Option<u64>,
        /// The time.
        now: Timespec,
    },
    /// Makes an open file description of `ino` (one of its opens, at `offset`) shared between
    /// two descriptors, held here from now on (§3.5.1: a process forked): [`Reply::Shared`].
    Share {
        /// The inode.
        ino: Ino,
        /// The description's offset so far.
        offset: u64,
        /// It was opened to write: its writes go through the server from now on, so its
        /// client is one writer fewer.
        write: bool,
    },
    /// One more descriptor for shared description `desc`.
    DupShared {
        /// The description.
        desc: u64,
    },
    /// One descriptor of shared description `desc` fewer; the last one closes the
    /// description (as `Close` does).
    CloseShared {
        /// The description.
        desc: u64,
    },
    /// `LSEEK` on shared description `desc`: `whence` is `SEEK_SET` (0), `SEEK_CUR` (1) or
    /// `SEEK_END` (2); answers the new offset ([`Reply::Offset`]).
    Seek {
        /// The description.
        desc: u64,
        /// The offset, relative to `whence`.
        offset: i64,
        /// `SEEK_SET`, `SEEK_CUR` or `SEEK_END`.
        whence: u32,
    },
    /// `TRUNC`: sets the size. Blocks past it are freed, or kept from reuse until the last
    /// open file description closes (§3.5).
    Trunc {
        /// The inode.
        ino: Ino,
        /// The new size.
        size: u64,
        /// The time.
        now: Timespec,
    },
    /// `STATFS`: the server's free buffer-cache blocks and inodes ([`Reply::Space`]).
    Statfs,
    /// `FSTAT`.
    Stat {
        /// The inode.
        ino: Ino,
    },
    /// `CHMOD` (EOPNOTSUPP on a symlink).
    Chmod {
        /// The inode.
        ino: Ino,
        /// The permission bits.
        mode: u32,
        /// The new ctime.
        now: Timespec,
    },
    /// `CHOWN`: sets the owner and/or group (`None` leaves it); clears set-user-ID and
    /// (group-executable) set-group-ID on anything but a directory, as Linux does.
    Chown {
        /// The inode.
        ino: Ino,
        /// The new owner.
        uid: Option<u32>,
        /// The new group.
        gid: Option<u32>,
        /// The new ctime.
        now: Timespec,
    },
    /// `UTIMENS`: sets the access and/or modification time (`None` leaves it; the client
    /// turns `UTIME_NOW` into `now`); the ctime too unless both are left.
    Utimens {
        /// The inode.
        ino: Ino,
        /// The new atime.
        atime: Option<Timespec>,
        /// The new mtime.
        mtime: Option<Timespec>,
        /// The new ctime.
        now: Timespec,
    },
    /// `READLINK`.
    Readlink {
        /// The inode.
        ino: Ino,
    },
    /// `DIRENT`: the server's share of directory `dir`, in name order, from the first name
    /// after `after`, as many entries as fit in [`DIRENTS_BYTES`] ([`Reply::Dirents`]).
    Dirents {
        /// The directory.
        dir: Ino,
        /// The last name of the previous batch.
        after: Option<Name>,
    },
    /// `RMDIR`, phase one (§3.4.1): at the directory's home server, makes the caller the only
    /// `rmdir` or `rename` acting on `dir` ([`Reply::Busy`] while another holds it). The
    /// root's hold, which no `rmdir` takes, is the file system's rename lock: a directory
    /// moves to another parent only under it, so two such moves cannot make a cycle (Linux's
    /// `s_vfs_rename_mutex`).
    Hold {
        /// The directory.
        dir: Ino,
    },
    /// Gives a hold up without removing anything.
    Release {
        /// The directory.
        dir: Ino,
    },
    /// `RMDIR`, phase two: ENOTEMPTY if the server holds an entry of `dir`, else marks it;
    /// entries cannot be added to a marked directory until `RmdirCommit` or `RmdirAbort`.
    RmdirMark {
        /// The directory.
        dir: Ino,
    },
    /// `RMDIR`, phase three: the directory is gone (the home server frees its inode when it
    /// is not open; the others remember it is gone).
    RmdirCommit {
        /// The directory.
        dir: Ino,
        /// Its ctime.
        now: Timespec,
    },
    /// Removes the mark of `RmdirMark`.
    RmdirAbort {
        /// The directory.
        dir: Ino,
    },
    /// `RMDIR` of ordinary directory `ino` when this server holds its entry `name` in `dir`
    /// and its inode, so every entry it has: §3.4.1's three phases in one message (§3.7.4),
    /// as nothing else runs here meanwhile. `ENOTEMPTY` if it holds an entry, `Busy` while
    /// another client holds or marks it, `Stale` if the name no longer names it; else
    /// `RmMap`'s reply, after which the directory is gone.
    Rmdir {
        /// The parent directory.
        dir: Ino,
        /// The directory's name there.
        name: Name,
        /// The directory.
        ino: Ino,
        /// The time, for the parent's times and the directory's ctime.
        now: Timespec,
    },
    /// A rename of a file (or symlink) when this server holds both entries and the inode (and
    /// the inode of the file it replaces): `LINK`, `ADD_MAP`, `RM_MAP` and `UNLINK` coalesced
    /// into one message (§3.7.4), done at once. [`Reply::Stale`] if `old_name` no longer names
    /// `ino` or `new_name` is not what `target` says (EEXIST if it exists and `target` is
    /// [`Target::Absent`]); EINVAL if an inode is a directory or not here; [`Reply::Busy`]
    /// while an `rmdir` holds `new_dir`; [`Reply::Done`].
    Rename {
        /// The old entry's directory.
        old_dir: Ino,
        /// The old name.
        old_name: Name,
        /// The new entry's directory.
        new_dir: Ino,
        /// The new name.
        new_name: Name,
        /// The file.
        ino: Ino,
        /// What the new name must name now (a file there loses that name).
        target: Target,
        /// The time.
        now: Timespec,
    },
    /// Resizing (§6.1.1, `crate::resize`): bytes `offset..` of shard `shard`'s state
    /// ([`Reply::Part`]). At offset 0 the server takes the shard out of its state (it answers
    /// for it no more; the clients caching its entries are told to forget them) and keeps it,
    /// encoded, until [`Request::Exported`]; EBUSY while it keeps another shard, or while an
    /// `rmdir` holds or marks a directory.
    Export {
        /// The shard.
        shard: u16,
        /// The first byte wanted.
        offset: u64,
    },
    /// Resizing: the shard kept since [`Request::Export`] was taken in by its new owner, and
    /// the server forgets it; or, with `restore`, it was not, and the server takes it back.
    Exported {
        /// The shard.
        shard: u16,
        /// Take it back.
        restore: bool,
    },
    /// Resizing: bytes `offset..offset + data.len()` of a shard's state (of `total` bytes),
    /// sent in order from offset 0; with the last, the server takes the shard in. EINVAL for
    /// a part out of order or a state that does not decode (nothing is taken in).
    Import {
        /// Where these bytes go.
        offset: u64,
        /// The state's length.
        total: u64,
        /// The bytes.
        data: Vec<u8>,
    },
    /// Resizing: up to `count` of the server's free blocks, which it gives up
    /// ([`Reply::Blocks`], at most [`MAX_MOVED_BLOCKS`]).
    TakeBlocks {
        /// How many.
        count: u32,
    },
    /// Resizing: free blocks the server takes (at most [`MAX_MOVED_BLOCKS`]).
    GiveBlocks {
        /// The blocks.
        blocks: Vec<Block>,
    },
    /// Resizing: the table the server answers by from now on (after every shard moved).
    /// EBUSY while it keeps an exported shard.
    SetTable(Box<ShardTable>),
    /// The table the server answers by ([`Reply::Table`]): what a client that connects to a
    /// resized fleet starts from.
    GetTable,
    /// Distributing a directory (§6.1.2, `crate::resize::distribute`): at ordinary directory
    /// `dir`'s home server, bytes `offset..` of its entries that belong on other servers once
    /// it is distributed ([`Reply::Part`]). At offset 0 the server takes them out and marks
    /// the directory distributed (the clients caching them are told to forget them), keeping
    /// them encoded until [`Request::Scattered`]; EBUSY while it keeps a shard or another
    /// directory's entries, or an `rmdir` holds or marks a directory; EEXIST if the directory
    /// is distributed already.
    Scatter {
        /// The directory.
        dir: Ino,
        /// The first byte wanted.
        offset: u64,
    },
    /// The entries kept since [`Request::Scatter`] reached their servers, and the home
    /// server forgets them; or, with `restore`, they did not, and it takes them back and
    /// makes the directory ordinary again.
    Scattered {
        /// The directory.
        dir: Ino,
        /// Take them back.
        restore: bool,
    },
    /// Distributing a directory: the server's entry for `dir` in `parent`, if it holds it,
    /// says `dir` is distributed from now on (its cachers are told to forget it).
    MarkDistributed {
        /// The directory's parent.
        parent: Ino,
        /// The directory.
        dir: Ino,
    },
}

impl Request {
    /// Whether the server may change anything a client would lose track of by dropping the
    /// reply: every request but a lookup, a listing, a `stat`, a `statfs`, a `readlink`, the
    /// table and a read at an offset of its own (one through a shared description moves the
    /// description's offset). An operation that has sent one must take its reply and finish:
    /// the kernel's client then waits for its replies even when the thread is killed.
    pub fn changes(&self) -> bool {
        match self {
            Request::Lookup { .. }
            | Request::DirInfo { .. }
            | Request::Statfs
            | Request::Stat { .. }
            | Request::Readlink { .. }
            | Request::Dirents { .. }
            | Request::GetTable => false,
            Request::Read { desc, .. } | Request::ReadData { desc, .. } => desc.is_some(),
            _ => true,
        }
    }
}

/// Most bytes one [`Request::Import`] or [`Reply::Part`] carries: a page.
pub const MAX_PART: usize = 4096;

/// Most blocks one [`Request::GiveBlocks`] or [`Reply::Blocks`] carries.
pub const MAX_MOVED_BLOCKS: usize = 1000;

/// A server's answer to one [`Request`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Reply {
    /// Done, nothing to say.
    Done,
    /// Failed with a Linux error; nothing changed.
    Err(Errno),
    /// An `rmdir` holds the directory; try again.
    Busy,
    /// The entry is not what the client saw: resolve again. Nothing changed.
    Stale,
    /// A lookup's answer.
    Entry(Entry),
    /// `AddMap`/`RmMap` done: the entry it replaced or removed, and whether the server is the
    /// directory's home (then it also updated the directory's link count and times).
    Mapped {
        /// The replaced or removed entry.
        old: Option<Entry>,
        /// The directory's inode is on this server and was updated.
        home: bool,
        /// The directory's entries this server holds now (all of an ordinary directory's, at
        /// its home): what a policy of dynamic distribution watches (§6.1.2).
        entries: u32,
    },
    /// The new inode of a `Create`.
    Created(Ino),
    /// `CreateNamed` done: the new inode, and whether the server is the directory's home (as
    /// in [`Reply::Mapped`]).
    Made {
        /// The new inode.
        ino: Ino,
        /// The directory's inode is on this server and was updated.
        home: bool,
        /// The directory's entries this server holds now (as in [`Reply::Mapped`]).
        entries: u32,
        /// A new regular file opened to write: its first page's block, allocated ahead
        /// (zeroed before this reply; free again at the last close if nothing was written
        /// there), if the server had blocks to spare.
        first: Option<Block>,
    },
    /// An inode's attributes.
    Stat(Stat),
    /// A directory's parent and placement.
    Dir {
        /// Its `..`.
        parent: Ino,
        /// Its entries are spread over all servers.
        distributed: bool,
    },
    /// The answer to `Read`: the size, where the range starts, and one block (or hole) per
    /// page of it.
    Extent {
        /// The file's size.
        size: u64,
        /// The offset read at (the shared description's, or the one asked for).
        offset: u64,
        /// The blocks from the page holding `offset`.
        blocks: Vec<Option<Block>>,
        /// No other client has the file open to write ([`Reply::Opened`]).
        alone: bool,
    },
    /// The answer to `Write`: where it goes, the size after it, and one block per page of
    /// the range and of the pages the server allocated past it for the writes to come (new
    /// blocks were zeroed before this reply was sent, see [`crate::Handled`]).
    Written {
        /// The offset written at (the old end of the file for an append).
        offset: u64,
        /// The file's size after the write.
        size: u64,
        /// The blocks from the page holding `offset`.
        blocks: Vec<Block>,
    },
    /// The answer to `ReadData`: the size, where the read started and the bytes read (fewer
    /// than asked at the end of the file; holes read as zeros).
    Data {
        /// The file's size.
        size: u64,
        /// The offset read at (the shared description's, or the one asked for).
        offset: u64,
        /// The bytes.
        data: Vec<u8>,
    },
    /// The answer to `Statfs`.
    Space {
        /// Buffer-cache blocks the server has free (not those held back from reuse until an
        /// open file's last close, §3.5).
        free_blocks: u64,
        /// Blocks held back from reuse until their file's last close.
        deferred_blocks: u64,
        /// Inodes it holds.
        inodes: u64,
    },
    /// A symlink's target.
    Target(Vec<u8>),
    /// A shared open file description.
    Shared(u64),
    /// A description's new offset.
    Offset(u64),
    /// A batch of a server's share of a directory, and whether more follow.
    Dirents {
        /// The entries, in name order.
        entries: Listing,
        /// More entries follow the last one.
        more: bool,
    },
    /// An open regular file's attributes and the blocks (or holes) of its first pages, at
    /// most [`MAX_IO_BLOCKS`] (§3.3: the server answers an open with the block list), which
    /// a client that reads the file next need not ask for.
    Opened {
        /// The attributes.
        stat: Stat,
        /// The blocks from page 0.
        blocks: Vec<Option<Block>>,
        /// No other client has the file open to write, so none can move its end without
        /// asking this server, which first tells this client to forget the size
        /// ([`Invalidation::Extent`]): until then a read that reaches the end may stop at
        /// the size the client knows.
        alone: bool,
    },
    /// An open directory's attributes and the first batch of its listing held at its
    /// inode's server (at most [`LISTED_BYTES`] of entries), whether more follow there.
    Listed {
        /// The attributes.
        stat: Stat,
        /// The entries, in name order.
        entries: Listing,
        /// More entries follow the last one.
        more: bool,
        /// The directory is distributed: these are the server's share of its entries, the
        /// other servers hold the rest.
        distributed: bool,
    },
    /// The answer to [`Request::Export`]: the state's length and the bytes from the offset
    /// asked for.
    Part {
        /// The state's length.
        total: u64,
        /// The bytes.
        data: Vec<u8>,
    },
    /// The answer to [`Request::TakeBlocks`].
    Blocks(Vec<Block>),
    /// The answer to [`Request::GetTable`].
    Table(Box<ShardTable>),
}

/// A message from a server to a client: forget what it caches of a directory's entries or
/// of a file's size and blocks.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Invalidation {
    /// Forget the cached entry `name` of `dir`, or every cached entry of `dir` when `name` is
    /// `None` (what a name too long for one channel message becomes on the wire:
    /// [`crate::wire::encode_invalidation`]), or every cached entry and extent at all
    /// ([`Invalidation::everything`]).
    Entries {
        /// The directory (0: every directory).
        dir: Ino,
        /// The name.
        name: Option<Name>,
    },
    /// Forget file `ino`'s size and blocks: another client changed them (§3.3's block lists
    /// kept by the client, fresh as lookups are, §3.7.2).
    Extent(Ino),
    /// Forget the listing of directory `dir`: its entries changed at the server that sends
    /// this (kept listings, Reef's addition to the lookup cache: fresh as lookups are).
    Listing(Ino),
}

impl Invalidation {
    /// Forget everything cached: what a server's runtime sends instead of invalidations that
    /// would fill the client's queue (a bounded ring), so that it never waits for a client
    /// and never drops an invalidation the client needs.
    pub const fn everything() -> Self {
        Invalidation::Entries { dir: 0, name: None }
    }
}

/// `lseek`'s arithmetic: the new offset from the current one, the file's size, `offset` and
/// `whence` (`SEEK_SET` 0, `SEEK_CUR` 1, `SEEK_END` 2). EINVAL for another `whence`, for
/// `SEEK_END` on a directory (as tmpfs), or a negative result; EOVERFLOW past `i64::MAX`.
pub fn seek(current: u64, size: u64, offset: i64, whence: u32, dir: bool) -> Result<u64, Errno> {
    let base = match whence {
        0 => 0,
        1 => current,
        2 if !dir => size,
        _ => return Err(Errno::EINVAL),
    };
    let new = i128::from(base) + i128::from(offset);
    if new < 0 {
        return Err(Errno::EINVAL);
    }
    if new > i128::from(i64::MAX) {
        return Err(Errno::EOVERFLOW);
    }
    Ok(new as u64)
}

impl From<Errno> for Reply {
    fn from(e: Errno) -> Self {
        Reply::Err(e)
    }
}
