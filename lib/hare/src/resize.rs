//! Changing the number of servers while the file system is in use (§6.1.1, the thesis's open
//! problem): whole shards move from server to server ([`ShardTable::resized`] says which),
//! carried by the one who resizes, a [`Courier`] (on Reef, the kernel, the servers' only
//! client), in messages like any request's.
//!
//! [`resize`] runs while no other request is in flight (the caller holds its clients back):
//! for each shard that changes owner, [`Request::Export`] takes it out of the old owner in
//! parts ([`ShardState`], encoded), [`Request::Import`] gives them to the new one, and
//! [`Request::Exported`] lets the old owner forget it (or take it back if the import
//! failed). Then free blocks are spread evenly over the servers that stay (a leaving server
//! keeps none: [`Request::TakeBlocks`], [`Request::GiveBlocks`]), and every server takes the
//! table that says where each shard now is ([`Request::SetTable`]). If a step fails, the
//! shards moved so far stay moved and the servers take a table that says so: nothing is
//! lost, and the caller learns the table in force and the error.

use alloc::boxed::Box;
use alloc::collections::{BTreeMap, BTreeSet};
use alloc::vec::Vec;

use abi::Errno;

use crate::proto::{Entry, Name, Reply, Request, MAX_MOVED_BLOCKS, MAX_PART};
use crate::server::{Body, Desc, Inode};
use crate::shard::{Shard, ShardTable};
use crate::wire::{kind_code, kind_of, valid_name, WireError};
use crate::{Block, Ino, Kind, ServerId, Timespec};

/// What a shard holds, taken from one server to give to another when the number of servers
/// changes: the shard's inodes (with their block maps, open counts and shared descriptions),
/// its directory entries, and what the new owner must know besides (the inode counter, so
/// that it never numbers an inode twice; the removed distributed directories).
/// A server takes it out at [`Request::Export`] and puts it in at [`Request::Import`]; in
/// between it travels encoded ([`ShardState::encode`]).
#[derive(Debug)]
pub struct ShardState {
    pub(crate) inodes: Vec<(Ino, Inode)>,
    pub(crate) entries: Vec<(Ino, Name, Entry)>,
    pub(crate) descs: Vec<(u64, Desc)>,
    pub(crate) removed: BTreeSet<Ino>,
    pub(crate) counter: u64,
}

/// Writing a state's fields, little-endian.
struct Writer(Vec<u8>);

impl Writer {
    fn u8(&mut self, v: u8) -> &mut Self {
        self.0.push(v);
        self
    }
    fn u32(&mut self, v: u32) -> &mut Self {
        self.0.extend_from_slice(&v.to_le_bytes());
        self
    }
    fn u64(&mut self, v: u64) -> &mut Self {
        self.0.extend_from_slice(&v.to_le_bytes());
        self
    }
    fn time(&mut self, t: Timespec) -> &mut Self {
        self.u64(t.sec as u64).u32(t.nsec)
    }
    fn bytes(&mut self, b: &[u8]) -> &mut Self {
        self.u32(b.len() as u32);
        self.0.extend_from_slice(b);
        self
    }
}

/// Reading them back, every length and value checked.
struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], WireError> {
        if n > self.0.len() {
            return Err(WireError::Bad("shard state too short"));
        }
        let (a, b) = self.0.split_at(n);
        self.0 = b;
        Ok(a)
    }
    fn u8(&mut self) -> Result<u8, WireError> {
        Ok(self.take(1)?[0])
    }
    fn flag(&mut self) -> Result<bool, WireError> {
        match self.u8()? {
            0 => Ok(false),
            1 => Ok(true),
            _ => Err(WireError::Bad("flag")),
        }
    }
    fn u32(&mut self) -> Result<u32, WireError> {
        Ok(u32::from_le_bytes(self.take(4)?.try_into().expect("4")))
    }
    fn u64(&mut self) -> Result<u64, WireError> {
        Ok(u64::from_le_bytes(self.take(8)?.try_into().expect("8")))
    }
    fn time(&mut self) -> Result<Timespec, WireError> {
        let sec = self.u64()? as i64;
        let nsec = self.u32()?;
        if nsec >= 1_000_000_000 {
            return Err(WireError::Bad("nanoseconds"));
        }
        Ok(Timespec::new(sec, nsec))
    }
    fn bytes(&mut self) -> Result<&'a [u8], WireError> {
        let n = self.u32()? as usize;
        self.take(n)
    }
    /// A count of items each at least `min` bytes long: never more than the bytes left
    /// could hold, so a forged count allocates nothing.
    fn count(&mut self, min: usize) -> Result<usize, WireError> {
        let n = usize::try_from(self.u64()?).map_err(|_| WireError::Bad("count"))?;
        if n > self.0.len() / min {
            return Err(WireError::Bad("count"));
        }
        Ok(n)
    }
}

impl ShardState {
    /// A state of directory entries alone (a directory's, being distributed).
    pub(crate) fn of_entries(entries: Vec<(Ino, Name, Entry)>) -> Self {
        Self {
            inodes: Vec::new(),
            entries,
            descs: Vec::new(),
            removed: BTreeSet::new(),
            counter: 0,
        }
    }

    /// The state as bytes, for [`ShardState::decode`] at the new owner.
    pub fn encode(&self) -> Vec<u8> {
        let mut w = Writer(Vec::new());
        w.u64(self.counter).u64(self.removed.len() as u64);
        for &r in &self.removed {
            w.u64(r);
        }
        w.u64(self.inodes.len() as u64);
        for (ino, i) in &self.inodes {
            w.u64(*ino)
                .u8(kind_code(i.kind) as u8)
                .u32(i.mode)
                .u32(i.uid)
                .u32(i.gid);
            w.u32(i.nlink)
                .u64(i.size)
                .time(i.atime)
                .time(i.mtime)
                .time(i.ctime);
            w.u32(i.opens).u8(u8::from(i.creator.is_some()));
            w.u32(i.creator.unwrap_or(0));
            match &i.body {
                Body::File {
                    blocks,
                    deferred,
                    ahead,
                    writers,
                } => {
                    w.u8(0).u64(blocks.len() as u64);
                    for (&page, &b) in blocks {
                        w.u64(page).u32(b);
                    }
                    w.u64(deferred.len() as u64);
                    for &b in deferred {
                        w.u32(b);
                    }
                    w.u64(ahead.len() as u64);
                    for &p in ahead {
                        w.u64(p);
                    }
                    w.u64(writers.len() as u64);
                    for &(c, n) in writers {
                        w.u32(c).u32(n);
                    }
                }
                Body::Dir {
                    parent,
                    distributed,
                    dead,
                } => {
                    w.u8(1)
                        .u64(*parent)
                        .u8(u8::from(*distributed))
                        .u8(u8::from(*dead));
                }
                Body::Symlink(t) => {
                    w.u8(2).bytes(t);
                }
                Body::Fifo => {
                    w.u8(3);
                }
            }
        }
        w.u64(self.entries.len() as u64);
        for (dir, name, e) in &self.entries {
            w.u64(*dir)
                .bytes(name)
                .u64(e.ino)
                .u8(kind_code(e.kind) as u8);
            w.u8(u8::from(e.distributed));
        }
        w.u64(self.descs.len() as u64);
        for (id, d) in &self.descs {
            w.u64(*id).u64(d.ino).u64(d.offset).u32(d.refs);
        }
        w.0
    }

    /// The state [`ShardState::encode`] wrote: `Bad` for bytes it did not write (a kind
    /// that does not match its body, a bad name, trailing bytes...).
    pub fn decode(bytes: &[u8]) -> Result<Self, WireError> {
        let mut r = Reader(bytes);
        let counter = r.u64()?;
        let mut removed = BTreeSet::new();
        for _ in 0..r.count(8)? {
            removed.insert(r.u64()?);
        }
        let mut inodes = Vec::new();
        for _ in 0..r.count(60)? {
            let ino = r.u64()?;
            let kind = kind_of(u64::from(r.u8()?))?;
            let (mode, uid, gid, nlink) = (r.u32()?, r.u32()?, r.u32()?, r.u32()?);
            let size = r.u64()?;
            let (atime, mtime, ctime) = (r.time()?, r.time()?, r.time()?);
            let opens = r.u32()?;
            let created = r.flag()?;
            let creator = Some(r.u32()?).filter(|_| created);
            let body = match (r.u8()?, kind) {
                (0, Kind::File) => {
                    let mut blocks = alloc::collections::BTreeMap::new();
                    for _ in 0..r.count(12)? {
                        let page = r.u64()?;
                        blocks.insert(page, r.u32()?);
                    }
                    let mut deferred: Vec<Block> = Vec::new();
                    for _ in 0..r.count(4)? {
                        deferred.push(r.u32()?);
                    }
                    let mut ahead = BTreeSet::new();
                    for _ in 0..r.count(8)? {
                        ahead.insert(r.u64()?);
                    }
                    let mut writers = Vec::new();
                    for _ in 0..r.count(8)? {
                        writers.push((r.u32()?, r.u32()?));
                    }
                    Body::File {
                        blocks,
                        deferred,
                        ahead,
                        writers,
                    }
                }
                (1, Kind::Dir) => Body::Dir {
                    parent: r.u64()?,
                    distributed: r.flag()?,
                    dead: r.flag()?,
                },
                (2, Kind::Symlink) => Body::Symlink(r.bytes()?.to_vec()),
                (3, Kind::Fifo) => Body::Fifo,
                _ => return Err(WireError::Bad("inode body")),
            };
            let inode = Inode {
                kind,
                mode,
                uid,
                gid,
                nlink,
                size,
                atime,
                mtime,
                ctime,
                opens,
                creator,
                body,
            };
            inodes.push((ino, inode));
        }
        let mut entries = Vec::new();
        for _ in 0..r.count(22)? {
            let dir = r.u64()?;
            let name = r.bytes()?;
            if !valid_name(name) {
                return Err(WireError::Bad("name"));
            }
            let ino = r.u64()?;
            let kind = kind_of(u64::from(r.u8()?))?;
            let distributed = r.flag()?;
            let entry = Entry {
                ino,
                kind,
                distributed,
            };
            entries.push((dir, name.to_vec(), entry));
        }
        let mut descs = Vec::new();
        for _ in 0..r.count(28)? {
            let id = r.u64()?;
            let d = Desc {
                ino: r.u64()?,
                offset: r.u64()?,
                refs: r.u32()?,
            };
            descs.push((id, d));
        }
        if !r.0.is_empty() {
            return Err(WireError::Bad("trailing bytes"));
        }
        Ok(Self {
            inodes,
            entries,
            descs,
            removed,
            counter,
        })
    }
}

/// How the one who resizes reaches the servers: one request, its reply (synchronous; the
/// caller lets no other request run meanwhile). `Reply::Err(EIO)` for a server it cannot
/// reach.
pub trait Courier {
    /// Sends `req` to `server` and waits for the reply.
    fn call(&mut self, server: ServerId, req: &Request) -> Reply;
}

/// Resizes the fleet of `table` to `servers` (distinct ids; those not in `table` join,
/// empty, and those of `table` not in `servers` leave). See the module's notes. Returns the
/// table every server answers by now, and whether every step was done: if one failed (its
/// error), the table says where each shard is after the moves that were made, and the
/// servers took it too, as far as they could be reached.
pub fn resize(
    courier: &mut impl Courier,
    table: &ShardTable,
    servers: &[ServerId],
) -> (ShardTable, Result<(), Errno>) {
    let Some(target) = table.resized(servers) else {
        return (table.clone(), Err(Errno::EINVAL));
    };
    let mut everyone: Vec<ServerId> = table.servers();
    for &s in servers {
        if !everyone.contains(&s) {
            everyone.push(s);
        }
    }
    let mut owners = *table.owners();
    let mut failed = None;
    for (shard, from, to) in table.moves(&target) {
        if let Err(e) = move_shard(courier, shard, from, to) {
            failed = Some(e);
            break;
        }
        owners[shard] = to;
    }
    let now = ShardTable::from_owners(table.version() + 1, owners);
    if failed.is_none() {
        failed = spread_blocks(courier, &everyone, servers).err();
    }
    for &s in &everyone {
        if let Err(e) = expect_done(courier.call(s, &Request::SetTable(Box::new(now.clone())))) {
            failed.get_or_insert(e);
        }
    }
    (now, failed.map_or(Ok(()), Err))
}

fn expect_done(r: Reply) -> Result<(), Errno> {
    match r {
        Reply::Done => Ok(()),
        Reply::Err(e) => Err(e),
        Reply::Busy => Err(Errno::EBUSY),
        _ => Err(Errno::EIO),
    }
}

/// Moves shard `shard` from server `from` to server `to`; on failure `from` keeps it.
fn move_shard(
    courier: &mut impl Courier,
    shard: Shard,
    from: ServerId,
    to: ServerId,
) -> Result<(), Errno> {
    let id = shard as u16;
    let mut state = Vec::new();
    let mut taken = false;
    let export = |offset| Request::Export { shard: id, offset };
    let moved = fetch(courier, from, export, &mut state, &mut taken)
        .and_then(|()| send(courier, to, &state));
    if !taken {
        return moved;
    }
    let restore = moved.is_err();
    expect_done(courier.call(from, &Request::Exported { shard: id, restore }))?;
    moved
}

/// Gives `state` to server `to` in [`Request::Import`] parts.
fn send(courier: &mut impl Courier, to: ServerId, state: &[u8]) -> Result<(), Errno> {
    let total = state.len() as u64;
    for (i, part) in state.chunks(MAX_PART).enumerate() {
        let req = Request::Import {
            offset: (i * MAX_PART) as u64,
            total,
            data: part.to_vec(),
        };
        expect_done(courier.call(to, &req))?;
    }
    Ok(())
}

/// Reads a state out of server `from` into `state` with the requests `ask` makes for each
/// offset; `taken` once the server has taken it out of its own.
fn fetch(
    courier: &mut impl Courier,
    from: ServerId,
    ask: impl Fn(u64) -> Request,
    state: &mut Vec<u8>,
    taken: &mut bool,
) -> Result<(), Errno> {
    loop {
        let offset = state.len() as u64;
        match courier.call(from, &ask(offset)) {
            Reply::Part { total, data } if offset + data.len() as u64 <= total => {
                *taken = true;
                if offset == 0 {
                    let total = usize::try_from(total).map_err(|_| Errno::ENOMEM)?;
                    state.try_reserve_exact(total).map_err(|_| Errno::ENOMEM)?;
                }
                if data.is_empty() && offset < total {
                    return Err(Errno::EIO);
                }
                state.extend_from_slice(&data);
                if state.len() as u64 == total {
                    return Ok(());
                }
            }
            Reply::Err(e) => return Err(e),
            Reply::Busy => return Err(Errno::EBUSY),
            _ => return Err(Errno::EIO),
        }
    }
}

/// Makes ordinary directory `dir` distributed (§6.1.2, the thesis's other open problem):
/// its home server takes out the entries that belong elsewhere once it is distributed and
/// marks it so ([`Request::Scatter`]), they go to their servers ([`Request::Import`]), and
/// the entry naming it in its parent says so on whichever server holds it
/// ([`Request::MarkDistributed`]). As [`resize`], it runs while no other request is in
/// flight; clients that remembered the directory as ordinary must forget it (an
/// [`crate::Invalidation::everything`] does). `Ok(true)` once it is distributed, `Ok(false)`
/// for a directory distributed already (nothing to do: two cores may both see it grow past the
/// threshold before the first has distributed it); on an error before the entries reached
/// their servers the home server takes them back and the directory stays ordinary.
pub fn distribute(courier: &mut impl Courier, table: &ShardTable, dir: Ino) -> Result<bool, Errno> {
    let home = table.inode_server(dir);
    let parent = match courier.call(home, &Request::DirInfo { dir }) {
        Reply::Dir {
            distributed: true, ..
        } => return Ok(false),
        Reply::Dir { parent, .. } => parent,
        Reply::Err(e) => return Err(e),
        _ => return Err(Errno::EIO),
    };
    let mut state = Vec::new();
    let mut taken = false;
    let scatter = |offset| Request::Scatter { dir, offset };
    let moved = fetch(courier, home, scatter, &mut state, &mut taken).and_then(|()| {
        let s = ShardState::decode(&state).map_err(|_| Errno::EIO)?;
        let mut by_server: BTreeMap<ServerId, Vec<(Ino, Name, Entry)>> = BTreeMap::new();
        for (d, n, e) in s.entries {
            let at = table.entry_server(d, &n, true);
            by_server.entry(at).or_default().push((d, n, e));
        }
        for (server, entries) in by_server {
            send(courier, server, &ShardState::of_entries(entries).encode())?;
        }
        Ok(())
    });
    if taken {
        let restore = moved.is_err();
        expect_done(courier.call(home, &Request::Scattered { dir, restore }))?;
    }
    moved?;
    if parent != dir {
        for s in table.servers() {
            expect_done(courier.call(s, &Request::MarkDistributed { parent, dir }))?;
        }
    }
    Ok(true)
}

/// Spreads the free blocks of `everyone` evenly over `servers` (the others keep none).
fn spread_blocks(
    courier: &mut impl Courier,
    everyone: &[ServerId],
    servers: &[ServerId],
) -> Result<(), Errno> {
    let mut free = Vec::new();
    free.try_reserve_exact(everyone.len())
        .map_err(|_| Errno::ENOMEM)?;
    for &s in everyone {
        match courier.call(s, &Request::Statfs) {
            Reply::Space { free_blocks, .. } => free.push(free_blocks),
            Reply::Err(e) => return Err(e),
            _ => return Err(Errno::EIO),
        }
    }
    let share = free.iter().sum::<u64>() / servers.len() as u64;
    let keeps = |s: ServerId| if servers.contains(&s) { share } else { 0 };
    // Blocks are taken from those above their share and given to those below, a message's
    // worth at a time, so that the courier holds few.
    let mut givers = everyone.iter().zip(&free).filter(|(&s, &f)| f > keeps(s));
    let mut takers = everyone.iter().zip(&free).filter(|(&s, &f)| f < keeps(s));
    let mut giver = givers.next().map(|(&s, &f)| (s, f - keeps(s)));
    let mut taker = takers.next().map(|(&s, &f)| (s, keeps(s) - f));
    while let (Some((g, spare)), Some((t, want))) = (giver, taker) {
        let n = spare.min(want).min(MAX_MOVED_BLOCKS as u64);
        let blocks = match courier.call(g, &Request::TakeBlocks { count: n as u32 }) {
            Reply::Blocks(b) if b.len() as u64 == n => b,
            Reply::Err(e) => return Err(e),
            _ => return Err(Errno::EIO),
        };
        give(courier, g, t, blocks)?;
        giver = if spare > n {
            Some((g, spare - n))
        } else {
            givers.next().map(|(&s, &f)| (s, f - keeps(s)))
        };
        taker = if want > n {
            Some((t, want - n))
        } else {
            takers.next().map(|(&s, &f)| (s, keeps(s) - f))
        };
    }
    // What the division left over (fewer blocks than servers) goes to the first that
    // stays, from every server that leaves.
    for &s in everyone.iter().filter(|s| !servers.contains(s)) {
        loop {
            let blocks = match courier.call(
                s,
                &Request::TakeBlocks {
                    count: MAX_MOVED_BLOCKS as u32,
                },
            ) {
                Reply::Blocks(b) => b,
                Reply::Err(e) => return Err(e),
                _ => return Err(Errno::EIO),
            };
            if blocks.is_empty() {
                break;
            }
            give(courier, s, servers[0], blocks)?;
        }
    }
    Ok(())
}

/// Gives `blocks`, taken from `from`, to `to`, or back to `from` if `to` refuses them.
fn give(
    courier: &mut impl Courier,
    from: ServerId,
    to: ServerId,
    blocks: Vec<Block>,
) -> Result<(), Errno> {
    let req = Request::GiveBlocks { blocks };
    expect_done(courier.call(to, &req)).inspect_err(|_| {
        let _ = courier.call(from, &req);
    })
}
