//! Requests and replies as fos channel messages: one 64-byte slot each, with a page beside it
//! for what does not fit.
//!
//! A client's connection to a server is a `msg` connection (a request ring and a reply ring)
//! plus a pool of [`PAGE_SIZE`] pages the client granted the server when it connected. A
//! request in flight owns one page of the pool: its name, symlink target or resume name goes
//! there, and the server writes the variable part of its reply (a `Stat`, block numbers, a
//! symlink target, a batch of directory entries) into the same page. Nothing variable is ever
//! copied through the slots, and the page is the client's again when the reply arrives.
//!
//! A message's tag holds the operation (low byte) and the page's index in the pool (high
//! byte); payload word 0 holds the request's id in its low 47 bits ([`ID_MASK`]), which the
//! reply repeats (the kernel matches replies to sleeping threads by it), in bit 47 whether
//! the request is posted ([`POSTED`]: nobody waits for its reply), and in its top 16
//! bits how many bytes at the start of the page the message uses ([`page_len`]), so that each
//! side copies only those between its own memory and the shared page. Words 1-6 hold the fixed
//! fields, little-endian.
//!
//! A server's [`Invalidation`]s travel on the same reply ring, as messages of their own
//! ([`encode_invalidation`], [`is_invalidation`]): the directory and, when it fits in the
//! slot ([`INVALIDATION_NAME_MAX`] bytes), the name; a longer name becomes "every entry of
//! the directory", which costs the client a few lookups and never a stale entry.
//!
//! Decoding checks everything a hostile peer controls: unknown operations, lengths past the
//! page, names that are empty, too long or contain `/` or NUL (or are `.`/`..`), nanoseconds
//! of a second or more, unknown kinds. A request that fails is answered EINVAL by the server's
//! runtime; nothing panics.

use alloc::boxed::Box;
use alloc::vec::Vec;

use abi::Errno;
use msg::{Message, PAYLOAD};

use crate::proto::{
    Entry, Expect, Invalidation, Listing, Name, NewInode, Reply, Request, Target, DIRENTS_BYTES,
    LISTED_BYTES, MAX_DATA, MAX_IO_BLOCKS, MAX_MOVED_BLOCKS, MAX_PART, MAX_POSTED_BLOCKS,
};
use crate::{Attrs, Block, Ino, Kind, ShardTable, Stat, Timespec, NAME_MAX, SHARDS};

/// Size of a page of the pool.
pub const PAGE_SIZE: usize = 4096;

/// The bits of payload word 0 that hold a request's id (ids wrap within them).
pub const ID_MASK: u64 = POSTED - 1;

/// The bit of a request's word 0 that says it is posted ([`crate::Transport::post`]): its
/// client waits for no reply, and what it changes must be seen by any request sent after
/// it returned, whichever client sends that. A server therefore handles the posted requests
/// at the head of every client's ring before a request someone waits for ([`is_posted`]).
pub const POSTED: u64 = 1 << 47;

/// Requests one client may have unanswered at one server: the one it awaits and the rest
/// posted ([`crate::Transport::post`]). A server keeps that many slots of the client's reply
/// ring for replies; invalidations use the others.
pub const IN_FLIGHT: usize = 8;

/// [`Target::Any`] in a rename's target word (no server numbers an inode so: `new_ino` stops
/// before it); 0 is [`Target::Absent`], anything else [`Target::File`].
pub const ANY_INO: Ino = u64::MAX;

/// Pages a connection's pool may have (the tag's high byte).
pub const MAX_PAGES: usize = 256;

/// Most bytes a `Read` or `Write` covers.
const MAX_IO: usize = MAX_IO_BLOCKS * crate::BLOCK_SIZE;

/// A block number that means a hole in an `Extent` page.
const HOLE: u32 = u32::MAX;

/// Longest symlink target (`PATH_MAX` less its NUL).
const TARGET_MAX: usize = nrfs::PATH_MAX - 1;

/// Bytes of a `Stat` in a page.
const STAT_BYTES: usize = 8 * 12;

/// Why a message could not be decoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WireError {
    /// An operation or reply code this side does not know.
    UnknownOp(u8),
    /// A field out of its range (a length past the page, a bad name, a bad kind...).
    Bad(&'static str),
}

/// The fixed words of a message (after the id) and the variable bytes of its page.
struct Out<'p> {
    words: [u64; 6],
    n: usize,
    page: &'p mut [u8],
    used: usize,
}

impl<'p> Out<'p> {
    fn new(page: &'p mut [u8]) -> Self {
        Self {
            words: [0; 6],
            n: 0,
            page,
            used: 0,
        }
    }

    fn w(&mut self, v: u64) -> &mut Self {
        self.words[self.n] = v;
        self.n += 1;
        self
    }

    fn time(&mut self, t: Timespec) -> &mut Self {
        self.w(t.sec as u64).w(u64::from(t.nsec))
    }

    /// A read's or write's words (what [`In::io`] reads): the inode, the offset, the length
    /// with the append flag in bit 32, the shared description (0: none).
    fn io(
        &mut self,
        ino: Ino,
        offset: u64,
        len: u32,
        append: bool,
        desc: Option<u64>,
    ) -> &mut Self {
        self.w(ino)
            .w(offset)
            .w(u64::from(len) | u64::from(append) << 32)
            .w(desc.unwrap_or(0))
    }

    fn bytes(&mut self, b: &[u8]) -> Result<&mut Self, WireError> {
        let end = self.used + b.len();
        self.page
            .get_mut(self.used..end)
            .ok_or(WireError::Bad("page overflow"))?
            .copy_from_slice(b);
        self.used = end;
        Ok(self)
    }

    /// A length-prefixed byte string in the page.
    fn var(&mut self, b: &[u8]) -> Result<&mut Self, WireError> {
        let len = u16::try_from(b.len()).map_err(|_| WireError::Bad("too long"))?;
        self.bytes(&len.to_le_bytes())?.bytes(b)
    }

    /// A new inode's words (`Create`, `CreateNamed`): its parent (directories), mode and uid,
    /// gid with kind (1 file, 2 directory, 3 symlink, 4 FIFO) and flags, time. A symlink's
    /// target goes in the page, written by the caller.
    /// A new inode's words: `open` and `write` are the flags of [`Request::Create`].
    fn new_inode(
        &mut self,
        new: &NewInode,
        attrs: &Attrs,
        (open, write): (bool, bool),
        now: Timespec,
    ) -> &mut Self {
        let (kind, parent, dist) = match new {
            NewInode::File => (1u64, 0, false),
            NewInode::Dir {
                parent,
                distributed,
            } => (2, *parent, *distributed),
            NewInode::Symlink(_) => (3, 0, false),
            NewInode::Fifo => (4, 0, false),
        };
        self.w(parent)
            .w(u64::from(attrs.mode) | u64::from(attrs.uid) << 32)
            .w(u64::from(attrs.gid)
                | kind << 32
                | u64::from(dist) << 40
                | u64::from(open) << 41
                | u64::from(write) << 42)
            .time(now)
    }

    fn message(&self, op: u8, page: u8, id: u64) -> Message {
        let mut all = [0u64; 7];
        // `used` is at most PAGE_SIZE: the page slice bounds every write.
        all[0] = id & (ID_MASK | POSTED) | (self.used as u64) << 48;
        all[1..=self.n].copy_from_slice(&self.words[..self.n]);
        Message::from_words(u16::from(op) | u16::from(page) << 8, &all[..=self.n])
            .expect("at most 7 words")
    }
}

/// Reading a message's words and its page.
struct In<'p> {
    m: &'p Message,
    next: usize,
    page: &'p [u8],
    pos: usize,
}

impl<'p> In<'p> {
    fn new(m: &'p Message, page: &'p [u8]) -> Self {
        Self {
            m,
            next: 1,
            page,
            pos: 0,
        }
    }

    fn w(&mut self) -> u64 {
        let v = self.m.word(self.next);
        self.next += 1;
        v
    }

    fn time(&mut self) -> Result<Timespec, WireError> {
        let sec = self.w() as i64;
        match self.w() {
            nsec if nsec < 1_000_000_000 => Ok(Timespec::new(sec, nsec as u32)),
            _ => Err(WireError::Bad("nanoseconds")),
        }
    }

    fn bytes(&mut self, n: usize) -> Result<&'p [u8], WireError> {
        let b = self
            .page
            .get(self.pos..self.pos + n)
            .ok_or(WireError::Bad("past the page"))?;
        self.pos += n;
        Ok(b)
    }

    fn var(&mut self) -> Result<Vec<u8>, WireError> {
        Ok(self.var_ref()?.to_vec())
    }

    /// A length-prefixed byte string in the page, not copied.
    fn var_ref(&mut self) -> Result<&'p [u8], WireError> {
        let len = u16::from_le_bytes(self.bytes(2)?.try_into().expect("2 bytes"));
        self.bytes(usize::from(len))
    }

    /// What [`Out::new_inode`] wrote, with a symlink's target from the page; a symlink is
    /// refused unless `symlinks`.
    fn new_inode(
        &mut self,
        symlinks: bool,
    ) -> Result<(NewInode, Attrs, (bool, bool), Timespec), WireError> {
        let parent = self.w();
        let a = self.w();
        let b = self.w();
        let now = self.time()?;
        let new = match b >> 32 & 0xff {
            1 => NewInode::File,
            2 => NewInode::Dir {
                parent,
                distributed: b >> 40 & 1 != 0,
            },
            3 if symlinks => {
                let t = self.var()?;
                if t.is_empty() || t.len() > TARGET_MAX || t.contains(&0) {
                    return Err(WireError::Bad("symlink target"));
                }
                NewInode::Symlink(t)
            }
            4 => NewInode::Fifo,
            _ => return Err(WireError::Bad("kind")),
        };
        if b >> 43 != 0 {
            return Err(WireError::Bad("create flags"));
        }
        let attrs = Attrs::new(a as u32, (a >> 32) as u32, b as u32);
        Ok((new, attrs, (b >> 41 & 1 != 0, b >> 42 & 1 != 0), now))
    }

    /// A read's or write's words (what `encode_request` writes for them): the inode, the
    /// offset, the length (at most `max`) with the append flag in bit 32, the shared
    /// description (0: none).
    fn io(&mut self, max: usize) -> Result<(Ino, u64, u32, bool, Option<u64>), WireError> {
        let ino = self.w();
        let offset = self.w();
        let l = self.w();
        let len = l & 0xffff_ffff;
        if len > max as u64 || l >> 33 != 0 {
            return Err(WireError::Bad("length"));
        }
        let desc = Some(self.w()).filter(|&d| d != 0);
        Ok((ino, offset, len as u32, l >> 32 & 1 != 0, desc))
    }

    fn u32(&mut self) -> Result<u32, WireError> {
        Ok(u32::from_le_bytes(
            self.bytes(4)?.try_into().expect("4 bytes"),
        ))
    }

    fn u64(&mut self) -> Result<u64, WireError> {
        Ok(u64::from_le_bytes(
            self.bytes(8)?.try_into().expect("8 bytes"),
        ))
    }

    /// A directory entry's name: one valid component.
    fn name(&mut self) -> Result<Name, WireError> {
        Ok(self.name_ref()?.to_vec())
    }

    /// A name in the page, not copied.
    fn name_ref(&mut self) -> Result<&'p [u8], WireError> {
        let n = self.var_ref()?;
        if !valid_name(n) {
            return Err(WireError::Bad("name"));
        }
        Ok(n)
    }

    /// Bytes of the page not read yet.
    fn left(&self) -> usize {
        self.page.len().saturating_sub(self.pos)
    }
}

/// Whether `n` may name a directory entry: one component, not `.` or `..`.
pub(crate) fn valid_name(n: &[u8]) -> bool {
    !n.is_empty()
        && n.len() <= NAME_MAX
        && n != b"."
        && n != b".."
        && !n.iter().any(|&b| b == b'/' || b == 0)
}

pub(crate) fn kind_code(k: Kind) -> u64 {
    match k {
        Kind::File => 1,
        Kind::Dir => 2,
        Kind::Symlink => 3,
        Kind::CharDev => 4,
        Kind::Fifo => 5,
    }
}

pub(crate) fn kind_of(c: u64) -> Result<Kind, WireError> {
    Ok(match c {
        1 => Kind::File,
        2 => Kind::Dir,
        3 => Kind::Symlink,
        4 => Kind::CharDev,
        5 => Kind::Fifo,
        _ => return Err(WireError::Bad("kind")),
    })
}

/// The bit of `AddMap`'s entry word that carries its `touch`.
const TOUCH_BIT: u32 = 16;

/// An entry as one word: kind in bits 0-7, distributed in bit 8 (the inode goes separately).
fn entry_bits(e: &Entry) -> u64 {
    kind_code(e.kind) | u64::from(e.distributed) << 8
}

fn entry_of(ino: Ino, bits: u64) -> Result<Entry, WireError> {
    Ok(Entry {
        ino,
        kind: kind_of(bits & 0xff)?,
        distributed: bits >> 8 & 1 != 0,
    })
}

/// The bit of a block count that carries [`Reply::Extent`]'s and [`Reply::Opened`]'s `alone`.
const ALONE_BIT: u32 = 32;

/// A block count with `alone` in [`ALONE_BIT`]: the count (at most [`MAX_IO_BLOCKS`]) and
/// the flag.
fn blocks_and_alone(w: u64) -> Result<(usize, bool), WireError> {
    let n = (w & 0xffff_ffff) as usize;
    if w >> (ALONE_BIT + 1) != 0 || n > MAX_IO_BLOCKS {
        return Err(WireError::Bad("count"));
    }
    Ok((n, w >> ALONE_BIT != 0))
}

/// The count word of a list of blocks or holes ([`blocks_and_alone`]): at most
/// [`MAX_IO_BLOCKS`].
fn count_and_alone(blocks: &[Option<Block>], alone: bool) -> Result<u64, WireError> {
    if blocks.len() > MAX_IO_BLOCKS {
        return Err(WireError::Bad("blocks"));
    }
    Ok(blocks.len() as u64 | u64::from(alone) << ALONE_BIT)
}

/// Blocks or holes ([`HOLE`]), four bytes each, in the page.
fn put_blocks_or_holes(o: &mut Out<'_>, blocks: &[Option<Block>]) -> Result<(), WireError> {
    for b in blocks {
        o.bytes(&b.unwrap_or(HOLE).to_le_bytes())?;
    }
    Ok(())
}

/// `n` blocks or holes that [`put_blocks_or_holes`] wrote.
fn get_blocks_or_holes(i: &mut In<'_>, n: usize) -> Result<Vec<Option<Block>>, WireError> {
    (0..n)
        .map(|_| Ok(Some(i.u32()?).filter(|&b| b != HOLE)))
        .collect()
}

/// A word that must be a flag, 0 or 1.
fn flag(w: u64) -> Result<bool, WireError> {
    match w {
        0 | 1 => Ok(w == 1),
        _ => Err(WireError::Bad("flag")),
    }
}

/// An optional `u32` as a word: bit 32 says it is there.
fn opt32(v: Option<u32>) -> u64 {
    v.map_or(0, |v| 1 << 32 | u64::from(v))
}

fn of_opt32(w: u64) -> Option<u32> {
    (w >> 32 & 1 != 0).then_some(w as u32)
}

/// The message for request `req` with id `id`, using page `page` of the pool (whose bytes are
/// in `buf`).
pub fn encode_request(
    id: u64,
    page: u8,
    req: &Request,
    buf: &mut [u8],
) -> Result<Message, WireError> {
    let mut o = Out::new(buf);
    let op = match req {
        Request::Lookup { dir, name } => {
            o.w(*dir).var(name)?;
            1
        }
        Request::AddMap {
            dir,
            name,
            entry,
            replace,
            touch,
            now,
        } => {
            o.w(*dir)
                .w(entry.ino)
                .w(entry_bits(entry) | u64::from(*touch) << TOUCH_BIT)
                .w(replace.unwrap_or(0))
                .time(*now)
                .var(name)?;
            2
        }
        Request::RmMap {
            dir,
            name,
            expect,
            unlink,
            touch,
            now,
        } => {
            let e = match expect {
                Expect::NotDir { trailing } => u64::from(*trailing),
                Expect::Ino(i) if *i >> 56 == 0 => 2 | i << 8,
                Expect::Ino(_) => return Err(WireError::Bad("inode number")),
            };
            o.w(*dir)
                .w(e | u64::from(*unlink) << 2 | u64::from(*touch) << 3)
                .time(*now)
                .var(name)?;
            3
        }
        Request::Create {
            new,
            attrs,
            open,
            write,
            now,
        } => {
            if let NewInode::Symlink(t) = new {
                o.var(t)?;
            }
            o.new_inode(new, attrs, (*open, *write), *now);
            4
        }
        Request::CreateNamed {
            dir,
            name,
            new,
            attrs,
            open,
            write,
            now,
        } => {
            if let NewInode::Symlink(_) = new {
                return Err(WireError::Bad("a symlink in CreateNamed"));
            }
            o.var(name)?;
            o.w(*dir).new_inode(new, attrs, (*open, *write), *now);
            31
        }
        Request::Destroy { ino } => {
            o.w(*ino);
            5
        }
        Request::Link { ino, now } => {
            o.w(*ino).time(*now);
            6
        }
        Request::Unlink { ino, now } => {
            o.w(*ino).time(*now);
            7
        }
        Request::Touch { ino, now } => {
            o.w(*ino).time(*now);
            48
        }
        Request::Nlink { dir, delta, now } => {
            o.w(*dir).w(i64::from(*delta) as u64).time(*now);
            8
        }
        Request::Move { dir, parent, now } => {
            o.w(*dir).w(*parent).time(*now);
            9
        }
        Request::DirInfo { dir } => {
            o.w(*dir);
            10
        }
        Request::Open {
            ino,
            trunc,
            list,
            write,
            now,
        } => {
            o.w(*ino)
                .w(u64::from(*trunc) | u64::from(*list) << 1 | u64::from(*write) << 2)
                .time(*now);
            11
        }
        Request::Close { ino, write } => {
            o.w(*ino).w(u64::from(*write));
            12
        }
        Request::Read {
            ino,
            offset,
            len,
            desc,
        } => {
            o.io(*ino, *offset, *len, false, *desc);
            13
        }
        Request::Write {
            ino,
            offset,
            len,
            append,
            desc,
            now,
        } => {
            o.io(*ino, *offset, *len, *append, *desc).time(*now);
            14
        }
        Request::Wrote {
            ino,
            offset,
            len,
            blocks,
            now,
        } => {
            // All in the slot (a posted request has no page): the blocks two to a word.
            if blocks.is_empty() || blocks.len() > MAX_POSTED_BLOCKS {
                return Err(WireError::Bad("blocks"));
            }
            let b = |k: usize| u64::from(blocks.get(k).copied().unwrap_or(HOLE));
            o.w(*ino)
                .w(*offset)
                .w(u64::from(*len) | u64::from(now.nsec) << 32)
                .w(now.sec as u64)
                .w(b(0) | b(1) << 32)
                .w(b(2) | b(3) << 32);
            47
        }
        Request::ReadData {
            ino,
            offset,
            len,
            desc,
        } => {
            o.io(*ino, *offset, *len, false, *desc);
            33
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
                return Err(WireError::Bad("data"));
            }
            o.io(*ino, *offset, data.len() as u32, *append, *desc)
                .time(*now)
                .bytes(data)?;
            34
        }
        Request::Share { ino, offset, write } => {
            o.w(*ino).w(*offset).w(u64::from(*write));
            15
        }
        Request::DupShared { desc } => {
            o.w(*desc);
            16
        }
        Request::CloseShared { desc } => {
            o.w(*desc);
            17
        }
        Request::Seek {
            desc,
            offset,
            whence,
        } => {
            o.w(*desc).w(*offset as u64).w(u64::from(*whence));
            18
        }
        Request::Trunc { ino, size, now } => {
            o.w(*ino).w(*size).time(*now);
            19
        }
        Request::Stat { ino } => {
            o.w(*ino);
            20
        }
        Request::Statfs => 35,
        Request::Chmod { ino, mode, now } => {
            o.w(*ino).w(u64::from(*mode)).time(*now);
            21
        }
        Request::Chown { ino, uid, gid, now } => {
            o.w(*ino).w(opt32(*uid)).w(opt32(*gid)).time(*now);
            22
        }
        Request::Utimens {
            ino,
            atime,
            mtime,
            now,
        } => {
            // The two optional times go in the page, the ctime in the words.
            o.w(*ino).time(*now);
            for t in [atime, mtime] {
                let (sec, nsec) = t.map_or((0, u32::MAX), |t| (t.sec, t.nsec));
                o.bytes(&sec.to_le_bytes())?.bytes(&nsec.to_le_bytes())?;
            }
            23
        }
        Request::Readlink { ino } => {
            o.w(*ino);
            24
        }
        Request::Dirents { dir, after } => {
            o.w(*dir).w(u64::from(after.is_some()));
            if let Some(a) = after {
                o.var(a)?;
            }
            25
        }
        Request::Hold { dir } => {
            o.w(*dir);
            26
        }
        Request::Release { dir } => {
            o.w(*dir);
            27
        }
        Request::RmdirMark { dir } => {
            o.w(*dir);
            28
        }
        Request::RmdirCommit { dir, now } => {
            o.w(*dir).time(*now);
            29
        }
        Request::RmdirAbort { dir } => {
            o.w(*dir);
            30
        }
        Request::Rename {
            old_dir,
            old_name,
            new_dir,
            new_name,
            ino,
            target,
            now,
        } => {
            let t = match target {
                Target::Absent => 0,
                Target::File(r) => *r,
                Target::Any => ANY_INO,
            };
            o.w(*old_dir)
                .w(*new_dir)
                .w(*ino)
                .w(t)
                .time(*now)
                .var(old_name)?
                .var(new_name)?;
            32
        }
        Request::Export { shard, offset } => {
            o.w(u64::from(*shard)).w(*offset);
            36
        }
        Request::Exported { shard, restore } => {
            o.w(u64::from(*shard)).w(u64::from(*restore));
            37
        }
        Request::Import {
            offset,
            total,
            data,
        } => {
            if data.len() > MAX_PART {
                return Err(WireError::Bad("part"));
            }
            o.w(*offset).w(*total).w(data.len() as u64).bytes(data)?;
            38
        }
        Request::TakeBlocks { count } => {
            o.w(u64::from(*count));
            39
        }
        Request::GiveBlocks { blocks } => {
            put_blocks(&mut o, blocks)?;
            40
        }
        Request::SetTable(t) => {
            put_table(&mut o, t)?;
            41
        }
        Request::GetTable => 42,
        Request::Scatter { dir, offset } => {
            o.w(*dir).w(*offset);
            43
        }
        Request::Scattered { dir, restore } => {
            o.w(*dir).w(u64::from(*restore));
            44
        }
        Request::MarkDistributed { parent, dir } => {
            o.w(*parent).w(*dir);
            45
        }
        Request::Rmdir {
            dir,
            name,
            ino,
            now,
        } => {
            o.w(*dir).w(*ino).time(*now).var(name)?;
            46
        }
    };
    Ok(o.message(op, page, id))
}

/// A request's id and pool page (from the message alone, so that a server can answer even a
/// request it cannot decode).
pub fn request_id(m: &Message) -> (u64, u8) {
    (m.word(0) & ID_MASK, (m.tag >> 8) as u8)
}

/// Whether a request is posted: encoded with an id carrying [`POSTED`].
pub fn is_posted(m: &Message) -> bool {
    m.word(0) & POSTED != 0
}

/// What a server answers a posted request that it handled with `reply`: `Done`, or the
/// error. Nobody reads more of it, and nothing may go into its page: the client's next
/// request may be there already (a posted request carries nothing in it).
pub fn posted_reply(reply: Reply) -> Reply {
    match reply {
        Reply::Err(e) => Reply::Err(e),
        _ => Reply::Done,
    }
}

/// How many bytes at the start of its page a request or reply uses: all its receiver needs
/// to copy (never more than [`PAGE_SIZE`], whatever a peer claims; a peer that claims fewer
/// bytes than it wrote only makes its own message undecodable).
pub fn page_len(m: &Message) -> usize {
    ((m.word(0) >> 48) as usize).min(PAGE_SIZE)
}

/// Decodes a request; `page` is the bytes of the pool page the message names.
pub fn decode_request(m: &Message, page: &[u8]) -> Result<Request, WireError> {
    let mut i = In::new(m, page);
    let op = (m.tag & 0xff) as u8;
    Ok(match op {
        1 => {
            let dir = i.w();
            Request::Lookup {
                dir,
                name: i.name()?,
            }
        }
        2 => {
            let dir = i.w();
            let ino = i.w();
            let bits = i.w();
            let entry = entry_of(ino, bits & !(1 << TOUCH_BIT))?;
            let replace = Some(i.w()).filter(|&r| r != 0);
            let now = i.time()?;
            Request::AddMap {
                dir,
                name: i.name()?,
                entry,
                replace,
                touch: bits >> TOUCH_BIT & 1 != 0,
                now,
            }
        }
        3 => {
            let dir = i.w();
            let e = i.w();
            let unlink = e & 4 != 0;
            let touch = e & 8 != 0;
            let expect = match e & 0xf3 {
                0 | 1 => Expect::NotDir {
                    trailing: e & 1 == 1,
                },
                2 => Expect::Ino(e >> 8),
                _ => return Err(WireError::Bad("expect")),
            };
            let now = i.time()?;
            Request::RmMap {
                dir,
                name: i.name()?,
                expect,
                unlink,
                touch,
                now,
            }
        }
        4 => {
            let (new, attrs, (open, write), now) = i.new_inode(true)?;
            Request::Create {
                new,
                attrs,
                open,
                write,
                now,
            }
        }
        31 => {
            let name = i.name()?;
            let dir = i.w();
            let (new, attrs, (open, write), now) = i.new_inode(false)?;
            Request::CreateNamed {
                dir,
                name,
                new,
                attrs,
                open,
                write,
                now,
            }
        }
        5 => Request::Destroy { ino: i.w() },
        6 => Request::Link {
            ino: i.w(),
            now: i.time()?,
        },
        7 => Request::Unlink {
            ino: i.w(),
            now: i.time()?,
        },
        48 => Request::Touch {
            ino: i.w(),
            now: i.time()?,
        },
        8 => {
            let dir = i.w();
            let delta = i.w() as i64;
            if delta != 1 && delta != -1 {
                return Err(WireError::Bad("link delta"));
            }
            Request::Nlink {
                dir,
                delta: delta as i32,
                now: i.time()?,
            }
        }
        9 => Request::Move {
            dir: i.w(),
            parent: i.w(),
            now: i.time()?,
        },
        10 => Request::DirInfo { dir: i.w() },
        11 => {
            let ino = i.w();
            let flags = i.w();
            if flags > 7 {
                return Err(WireError::Bad("open flags"));
            }
            Request::Open {
                ino,
                trunc: flags & 1 != 0,
                list: flags & 2 != 0,
                write: flags & 4 != 0,
                now: i.time()?,
            }
        }
        12 => Request::Close {
            ino: i.w(),
            write: flag(i.w())?,
        },
        13 | 33 => {
            let max = if op == 13 { MAX_IO } else { MAX_DATA };
            let (ino, offset, len, append, desc) = i.io(max)?;
            if append {
                return Err(WireError::Bad("append on a read"));
            }
            if op == 13 {
                Request::Read {
                    ino,
                    offset,
                    len,
                    desc,
                }
            } else {
                Request::ReadData {
                    ino,
                    offset,
                    len,
                    desc,
                }
            }
        }
        14 => {
            let (ino, offset, len, append, desc) = i.io(MAX_IO)?;
            Request::Write {
                ino,
                offset,
                len,
                append,
                desc,
                now: i.time()?,
            }
        }
        47 => {
            let ino = i.w();
            let offset = i.w();
            let w = i.w();
            let (len, nsec) = (w as u32, (w >> 32) as u32);
            let sec = i.w() as i64;
            if nsec >= 1_000_000_000 {
                return Err(WireError::Bad("nanoseconds"));
            }
            let (a, b) = (i.w(), i.w());
            let pages = posted_pages(offset, len).ok_or(WireError::Bad("range"))?;
            let blocks: Vec<Block> = [a, a >> 32, b, b >> 32]
                .into_iter()
                .take(pages)
                .map(|w| w as u32)
                .collect();
            if blocks.contains(&HOLE) {
                return Err(WireError::Bad("blocks"));
            }
            Request::Wrote {
                ino,
                offset,
                len,
                blocks,
                now: Timespec::new(sec, nsec),
            }
        }
        34 => {
            let (ino, offset, len, append, desc) = i.io(MAX_DATA)?;
            let now = i.time()?;
            Request::WriteData {
                ino,
                offset,
                data: i.bytes(len as usize)?.to_vec(),
                append,
                desc,
                now,
            }
        }
        15 => Request::Share {
            ino: i.w(),
            offset: i.w(),
            write: flag(i.w())?,
        },
        16 => Request::DupShared { desc: i.w() },
        17 => Request::CloseShared { desc: i.w() },
        18 => Request::Seek {
            desc: i.w(),
            offset: i.w() as i64,
            whence: i.w() as u32,
        },
        19 => Request::Trunc {
            ino: i.w(),
            size: i.w(),
            now: i.time()?,
        },
        20 => Request::Stat { ino: i.w() },
        35 => Request::Statfs,
        21 => Request::Chmod {
            ino: i.w(),
            mode: i.w() as u32,
            now: i.time()?,
        },
        22 => Request::Chown {
            ino: i.w(),
            uid: of_opt32(i.w()),
            gid: of_opt32(i.w()),
            now: i.time()?,
        },
        23 => {
            let ino = i.w();
            let now = i.time()?;
            let mut t = [None; 2];
            for slot in &mut t {
                let sec = i.u64()? as i64;
                let nsec = i.u32()?;
                *slot = match nsec {
                    u32::MAX => None,
                    n if n < 1_000_000_000 => Some(Timespec::new(sec, n)),
                    _ => return Err(WireError::Bad("nanoseconds")),
                };
            }
            Request::Utimens {
                ino,
                atime: t[0],
                mtime: t[1],
                now,
            }
        }
        24 => Request::Readlink { ino: i.w() },
        25 => {
            let dir = i.w();
            let after = if i.w() != 0 { Some(i.name()?) } else { None };
            Request::Dirents { dir, after }
        }
        26 => Request::Hold { dir: i.w() },
        27 => Request::Release { dir: i.w() },
        28 => Request::RmdirMark { dir: i.w() },
        29 => Request::RmdirCommit {
            dir: i.w(),
            now: i.time()?,
        },
        30 => Request::RmdirAbort { dir: i.w() },
        32 => {
            let old_dir = i.w();
            let new_dir = i.w();
            let ino = i.w();
            let target = match i.w() {
                0 => Target::Absent,
                ANY_INO => Target::Any,
                r => Target::File(r),
            };
            let now = i.time()?;
            Request::Rename {
                old_dir,
                old_name: i.name()?,
                new_dir,
                new_name: i.name()?,
                ino,
                target,
                now,
            }
        }
        36 | 37 => {
            let shard = u16::try_from(i.w())
                .ok()
                .filter(|&s| usize::from(s) < SHARDS)
                .ok_or(WireError::Bad("shard"))?;
            let w = i.w();
            if op == 36 {
                Request::Export { shard, offset: w }
            } else {
                Request::Exported {
                    shard,
                    restore: w != 0,
                }
            }
        }
        38 => {
            let offset = i.w();
            let total = i.w();
            let n = usize::try_from(i.w())
                .ok()
                .filter(|&n| n <= MAX_PART)
                .ok_or(WireError::Bad("part"))?;
            Request::Import {
                offset,
                total,
                data: i.bytes(n)?.to_vec(),
            }
        }
        39 => Request::TakeBlocks {
            count: u32::try_from(i.w()).map_err(|_| WireError::Bad("count"))?,
        },
        40 => Request::GiveBlocks {
            blocks: get_blocks(&mut i)?,
        },
        41 => Request::SetTable(Box::new(get_table(&mut i)?)),
        42 => Request::GetTable,
        43 => Request::Scatter {
            dir: i.w(),
            offset: i.w(),
        },
        44 => Request::Scattered {
            dir: i.w(),
            restore: i.w() != 0,
        },
        45 => Request::MarkDistributed {
            parent: i.w(),
            dir: i.w(),
        },
        46 => {
            let dir = i.w();
            let ino = i.w();
            let now = i.time()?;
            Request::Rmdir {
                dir,
                name: i.name()?,
                ino,
                now,
            }
        }
        _ => return Err(WireError::UnknownOp(op)),
    })
}

/// The pages a [`Request::Wrote`] of `len` bytes at `offset` covers, if it covers at least
/// one and at most [`MAX_POSTED_BLOCKS`].
pub fn posted_pages(offset: u64, len: u32) -> Option<usize> {
    offset.checked_add(u64::from(len))?;
    let pages = crate::pages_of(offset, u64::from(len)).count();
    (len > 0 && pages <= MAX_POSTED_BLOCKS).then_some(pages)
}

/// Up to [`MAX_MOVED_BLOCKS`] block numbers: their count, then each in the page.
fn put_blocks(o: &mut Out<'_>, blocks: &[Block]) -> Result<(), WireError> {
    if blocks.len() > MAX_MOVED_BLOCKS {
        return Err(WireError::Bad("blocks"));
    }
    o.w(blocks.len() as u64);
    for b in blocks {
        o.bytes(&b.to_le_bytes())?;
    }
    Ok(())
}

fn get_blocks(i: &mut In<'_>) -> Result<Vec<Block>, WireError> {
    let n = usize::try_from(i.w())
        .ok()
        .filter(|&n| n <= MAX_MOVED_BLOCKS)
        .ok_or(WireError::Bad("blocks"))?;
    (0..n).map(|_| i.u32()).collect()
}

/// A shard table: its version, then each shard's owner in the page.
fn put_table(o: &mut Out<'_>, t: &ShardTable) -> Result<(), WireError> {
    o.w(t.version());
    for s in t.owners() {
        o.bytes(&s.to_le_bytes())?;
    }
    Ok(())
}

fn get_table(i: &mut In<'_>) -> Result<ShardTable, WireError> {
    let version = i.w();
    let mut owners = [0; SHARDS];
    for s in &mut owners {
        *s = u16::from_le_bytes(i.bytes(2)?.try_into().expect("2 bytes"));
    }
    Ok(ShardTable::from_owners(version, owners))
}

/// A listing's entries, in the page.
fn put_dirents(o: &mut Out<'_>, entries: &Listing) -> Result<(), WireError> {
    for (name, e) in entries.iter() {
        o.bytes(&e.ino.to_le_bytes())?
            .bytes(&(entry_bits(&e) as u16).to_le_bytes())?
            .var(name)?;
    }
    Ok(())
}

/// The `n` entries [`put_dirents`] wrote, their names copied into one buffer.
fn get_dirents(i: &mut In<'_>, n: usize) -> Result<Listing, WireError> {
    let mut entries = Listing::with_capacity(n, i.left());
    for _ in 0..n {
        let ino = i.u64()?;
        let bits = u16::from_le_bytes(i.bytes(2)?.try_into().expect("2 bytes"));
        let e = entry_of(ino, u64::from(bits))?;
        entries.push(i.name_ref()?, e);
    }
    Ok(entries)
}

fn put_stat(o: &mut Out<'_>, s: &Stat) -> Result<(), WireError> {
    for w in [
        s.ino,
        kind_code(s.kind) | u64::from(s.mode) << 8,
        u64::from(s.nlink) | u64::from(s.uid) << 32,
        u64::from(s.gid),
        s.size,
        s.blocks,
        s.rdev,
        s.atime.sec as u64,
        s.mtime.sec as u64,
        s.ctime.sec as u64,
        u64::from(s.atime.nsec) | u64::from(s.mtime.nsec) << 32,
        u64::from(s.ctime.nsec),
    ] {
        o.bytes(&w.to_le_bytes())?;
    }
    Ok(())
}

fn get_stat(i: &mut In<'_>) -> Result<Stat, WireError> {
    let mut w = [0u64; STAT_BYTES / 8];
    for x in &mut w {
        *x = i.u64()?;
    }
    let t = |sec: u64, nsec: u64| {
        let nsec = nsec & 0xffff_ffff;
        if nsec >= 1_000_000_000 {
            return Err(WireError::Bad("nanoseconds"));
        }
        Ok(Timespec::new(sec as i64, nsec as u32))
    };
    Ok(Stat {
        ino: w[0],
        kind: kind_of(w[1] & 0xff)?,
        mode: (w[1] >> 8) as u32,
        nlink: w[2] as u32,
        uid: (w[2] >> 32) as u32,
        gid: w[3] as u32,
        size: w[4],
        blocks: w[5],
        rdev: w[6],
        atime: t(w[7], w[10])?,
        mtime: t(w[8], w[10] >> 32)?,
        ctime: t(w[9], w[11])?,
    })
}

/// The message for reply `r` to request `id`, which used page `page` of the pool (whose
/// bytes are in `buf`).
pub fn encode_reply(id: u64, page: u8, r: &Reply, buf: &mut [u8]) -> Result<Message, WireError> {
    let mut o = Out::new(buf);
    let code = match r {
        Reply::Done => 1,
        Reply::Err(e) => {
            o.w(u64::from(e.0.unsigned_abs()));
            2
        }
        Reply::Busy => 3,
        Reply::Stale => 4,
        Reply::Entry(e) => {
            o.w(e.ino).w(entry_bits(e));
            5
        }
        Reply::Mapped { old, home, entries } => {
            let bits = old.as_ref().map_or(0, |e| 1 << 16 | entry_bits(e));
            o.w(old.map_or(0, |e| e.ino))
                .w(bits | u64::from(*home) << 17 | u64::from(*entries) << 32);
            6
        }
        Reply::Created(ino) => {
            o.w(*ino);
            7
        }
        Reply::Made {
            ino,
            home,
            entries,
            first,
        } => {
            o.w(*ino)
                .w(u64::from(*home) | u64::from(*entries) << 32)
                .w(opt32(*first));
            17
        }
        Reply::Stat(s) => {
            put_stat(&mut o, s)?;
            8
        }
        Reply::Dir {
            parent,
            distributed,
        } => {
            o.w(*parent).w(u64::from(*distributed));
            9
        }
        Reply::Extent {
            size,
            offset,
            blocks,
            alone,
        } => {
            o.w(*size).w(*offset).w(count_and_alone(blocks, *alone)?);
            put_blocks_or_holes(&mut o, blocks)?;
            10
        }
        Reply::Written {
            offset,
            size,
            blocks,
        } => {
            if blocks.len() > MAX_IO_BLOCKS {
                return Err(WireError::Bad("blocks"));
            }
            o.w(*offset).w(*size).w(blocks.len() as u64);
            for b in blocks {
                o.bytes(&b.to_le_bytes())?;
            }
            11
        }
        Reply::Data { size, offset, data } => {
            if data.len() > MAX_DATA {
                return Err(WireError::Bad("data"));
            }
            o.w(*size).w(*offset).w(data.len() as u64).bytes(data)?;
            18
        }
        Reply::Space {
            free_blocks,
            deferred_blocks,
            inodes,
        } => {
            o.w(*free_blocks).w(*deferred_blocks).w(*inodes);
            19
        }
        Reply::Target(t) => {
            o.var(t)?;
            12
        }
        Reply::Dirents { entries, more } => {
            o.w(entries.len() as u64).w(u64::from(*more));
            put_dirents(&mut o, entries)?;
            13
        }
        Reply::Opened {
            stat,
            blocks,
            alone,
        } => {
            o.w(count_and_alone(blocks, *alone)?);
            put_stat(&mut o, stat)?;
            put_blocks_or_holes(&mut o, blocks)?;
            24
        }
        Reply::Listed {
            stat,
            entries,
            more,
            distributed,
        } => {
            o.w(entries.len() as u64)
                .w(u64::from(*more) | u64::from(*distributed) << 1);
            put_stat(&mut o, stat)?;
            put_dirents(&mut o, entries)?;
            23
        }
        Reply::Shared(d) => {
            o.w(*d);
            14
        }
        Reply::Offset(off) => {
            o.w(*off);
            15
        }
        Reply::Part { total, data } => {
            if data.len() > MAX_PART {
                return Err(WireError::Bad("part"));
            }
            o.w(*total).w(data.len() as u64).bytes(data)?;
            20
        }
        Reply::Blocks(blocks) => {
            put_blocks(&mut o, blocks)?;
            21
        }
        Reply::Table(t) => {
            put_table(&mut o, t)?;
            22
        }
    };
    Ok(o.message(code, page, id))
}

/// Decodes a reply (the id is [`request_id`]'s); `page` is the bytes of the pool page.
pub fn decode_reply(m: &Message, page: &[u8]) -> Result<Reply, WireError> {
    let mut i = In::new(m, page);
    let code = (m.tag & 0xff) as u8;
    let count = |n: u64, max: usize| {
        usize::try_from(n)
            .ok()
            .filter(|&n| n <= max)
            .ok_or(WireError::Bad("count"))
    };
    Ok(match code {
        1 => Reply::Done,
        2 => {
            let e = i.w();
            if e == 0 || e > 4095 {
                return Err(WireError::Bad("errno"));
            }
            Reply::Err(Errno(e as i32))
        }
        3 => Reply::Busy,
        4 => Reply::Stale,
        5 => {
            let ino = i.w();
            Reply::Entry(entry_of(ino, i.w())?)
        }
        6 => {
            let ino = i.w();
            let bits = i.w();
            let old = if bits >> 16 & 1 != 0 {
                Some(entry_of(ino, bits & 0xffff)?)
            } else {
                None
            };
            Reply::Mapped {
                old,
                home: bits >> 17 & 1 != 0,
                entries: (bits >> 32) as u32,
            }
        }
        7 => Reply::Created(i.w()),
        17 => {
            let ino = i.w();
            let w = i.w();
            Reply::Made {
                ino,
                home: w & 1 != 0,
                entries: (w >> 32) as u32,
                first: of_opt32(i.w()),
            }
        }
        8 => Reply::Stat(get_stat(&mut i)?),
        9 => Reply::Dir {
            parent: i.w(),
            distributed: i.w() != 0,
        },
        10 => {
            let size = i.w();
            let offset = i.w();
            let (n, alone) = blocks_and_alone(i.w())?;
            let blocks = get_blocks_or_holes(&mut i, n)?;
            Reply::Extent {
                size,
                offset,
                blocks,
                alone,
            }
        }
        11 => {
            let offset = i.w();
            let size = i.w();
            let n = count(i.w(), MAX_IO_BLOCKS)?;
            let mut blocks: Vec<Block> = Vec::with_capacity(n);
            for _ in 0..n {
                blocks.push(i.u32()?);
            }
            Reply::Written {
                offset,
                size,
                blocks,
            }
        }
        18 => {
            let size = i.w();
            let offset = i.w();
            let n = count(i.w(), MAX_DATA)?;
            Reply::Data {
                size,
                offset,
                data: i.bytes(n)?.to_vec(),
            }
        }
        19 => Reply::Space {
            free_blocks: i.w(),
            deferred_blocks: i.w(),
            inodes: i.w(),
        },
        12 => Reply::Target(i.var()?),
        13 => {
            let n = count(i.w(), DIRENTS_BYTES)?;
            let more = i.w() != 0;
            let entries = get_dirents(&mut i, n)?;
            Reply::Dirents { entries, more }
        }
        24 => {
            let (n, alone) = blocks_and_alone(i.w())?;
            let stat = get_stat(&mut i)?;
            let blocks = get_blocks_or_holes(&mut i, n)?;
            Reply::Opened {
                stat,
                blocks,
                alone,
            }
        }
        23 => {
            let n = count(i.w(), LISTED_BYTES)?;
            let (more, distributed) = match i.w() {
                f @ 0..=3 => (f & 1 != 0, f & 2 != 0),
                _ => return Err(WireError::Bad("listing flags")),
            };
            let stat = get_stat(&mut i)?;
            let entries = get_dirents(&mut i, n)?;
            Reply::Listed {
                stat,
                entries,
                more,
                distributed,
            }
        }
        14 => Reply::Shared(i.w()),
        15 => Reply::Offset(i.w()),
        20 => {
            let total = i.w();
            let n = count(i.w(), MAX_PART)?;
            Reply::Part {
                total,
                data: i.bytes(n)?.to_vec(),
            }
        }
        21 => Reply::Blocks(get_blocks(&mut i)?),
        22 => Reply::Table(Box::new(get_table(&mut i)?)),
        _ => return Err(WireError::UnknownOp(code)),
    })
}

/// The reply code of an invalidation (after the codes of [`Reply`]).
const INVALIDATE: u8 = 16;

/// Longest name an invalidation message carries (the slot less the id, the directory and a
/// length byte).
pub const INVALIDATION_NAME_MAX: usize = PAYLOAD - 17;

/// Whether a message on a reply ring is an invalidation rather than a reply.
pub fn is_invalidation(m: &Message) -> bool {
    m.tag == u16::from(INVALIDATE)
}

/// What an invalidation's length byte holds for [`Invalidation::Extent`] (no name is that
/// long).
const EXTENT: u8 = u8::MAX - 1;

/// What an invalidation's length byte holds for [`Invalidation::Listing`].
const LISTING: u8 = u8::MAX - 2;

/// The message for invalidation `i` (no page: it answers no request): the directory or file
/// in word 1, then a length byte and the name. A name longer than [`INVALIDATION_NAME_MAX`]
/// is left out, so the client forgets the whole directory.
pub fn encode_invalidation(i: &Invalidation) -> Message {
    let mut b = [0u8; PAYLOAD];
    match i {
        Invalidation::Entries { dir, name } => {
            b[8..16].copy_from_slice(&dir.to_le_bytes());
            match name {
                Some(n) if n.len() <= INVALIDATION_NAME_MAX => {
                    b[16] = n.len() as u8;
                    b[17..17 + n.len()].copy_from_slice(n);
                }
                _ => b[16] = u8::MAX,
            }
        }
        Invalidation::Extent(ino) => {
            b[8..16].copy_from_slice(&ino.to_le_bytes());
            b[16] = EXTENT;
        }
        Invalidation::Listing(dir) => {
            b[8..16].copy_from_slice(&dir.to_le_bytes());
            b[16] = LISTING;
        }
    }
    Message::new(u16::from(INVALIDATE), &b).expect("one slot")
}

/// Decodes an invalidation ([`is_invalidation`] said it is one).
pub fn decode_invalidation(m: &Message) -> Result<Invalidation, WireError> {
    if !is_invalidation(m) {
        return Err(WireError::UnknownOp((m.tag & 0xff) as u8));
    }
    let b = m.bytes();
    if b.len() != PAYLOAD {
        return Err(WireError::Bad("invalidation length"));
    }
    let dir = u64::from_le_bytes(b[8..16].try_into().expect("8 bytes"));
    let name = match b[16] {
        u8::MAX => None,
        EXTENT => return Ok(Invalidation::Extent(dir)),
        LISTING => return Ok(Invalidation::Listing(dir)),
        len if usize::from(len) <= INVALIDATION_NAME_MAX => {
            let n = &b[17..17 + usize::from(len)];
            if n.is_empty() || n == b"." || n == b".." || n.iter().any(|&c| c == b'/' || c == 0) {
                return Err(WireError::Bad("name"));
            }
            Some(n.to_vec())
        }
        _ => return Err(WireError::Bad("name length")),
    };
    Ok(Invalidation::Entries { dir, name })
}

/// The tag of a hello, both ways (no operation uses it): the first message on a connection.
/// The client sends words [client id, pool grant, pool pages, cache grant, cache blocks,
/// join] ([`hello`]); the server answers [its id, a number every server id is below, 0 or
/// the errno that refused the hello] ([`Welcome`]). `usr/hare.h` has the same for C.
pub const HELLO: u16 = 0xffff;

/// A client's hello: its id, the grant of its pool of `pool_pages` pages, and the grant of the
/// buffer cache of `cache_blocks` blocks (grant 0 and 0 blocks: the server has the cache
/// already, from another client's hello); `join`, to a server joining a running fleet (a
/// resize, [`crate::resize`]), the id it takes.
pub fn hello(
    client: u32,
    pool: u64,
    pool_pages: u64,
    (cache, cache_blocks): (u64, u64),
    join: Option<u16>,
) -> Message {
    let join = join.map_or(0, |id| u64::from(id) + 1);
    let words = [
        u64::from(client),
        pool,
        pool_pages,
        cache,
        cache_blocks,
        join,
    ];
    Message::from_words(HELLO, &words).expect("six words fit a slot")
}

/// A server's answer to a hello.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Welcome {
    /// The server's id.
    pub server: u16,
    /// A number every server id of the fleet is below (the fleet's size as it started).
    pub servers: u16,
}

/// Decodes the answer to a hello: the errno the server refused it with, or `Bad` for a
/// message that is not a welcome (or names itself outside the fleet it reports).
pub fn decode_welcome(m: &Message) -> Result<Result<Welcome, Errno>, WireError> {
    if m.tag != HELLO || m.bytes().len() < 24 {
        return Err(WireError::Bad("welcome"));
    }
    let (id, servers, err) = (m.word(0), m.word(1), m.word(2));
    if err != 0 {
        return Ok(Err(Errno(i32::try_from(err).unwrap_or(Errno::EIO.0))));
    }
    match (u16::try_from(id), u16::try_from(servers)) {
        (Ok(server), Ok(servers)) if server < servers => Ok(Ok(Welcome { server, servers })),
        _ => Err(WireError::Bad("welcome")),
    }
}

/// Words of payload a message may carry ([`PAYLOAD`] bytes).
const _: () = assert!(PAYLOAD / 8 == 7);
