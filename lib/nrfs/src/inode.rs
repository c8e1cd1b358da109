//! In-memory inodes: metadata, sparse file pages and directories with insertion-ordered cookies.

use alloc::boxed::Box;
use alloc::collections::BTreeMap;
use alloc::vec::Vec;

use abi::Errno;

use crate::sharing::Lent;
use crate::{
    Attrs, DirEntry, Ino, Kind, Stat, Timespec, MAX_FILE_SIZE, NAME_MAX, PAGE_SIZE, S_ISGID,
};

/// Size Linux's tmpfs reports per directory entry (`BOGO_DIRENT_SIZE`).
const BOGO_DIRENT_SIZE: u64 = 20;

/// Cookie of the `.` entry; `..` is 1 and the entry with sequence number `s` is `s + 2`.
const FIRST_SEQ_COOKIE: u64 = 2;

/// One inode: metadata plus the kind-specific body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Inode {
    pub(crate) kind: Kind,
    /// Permission bits (`0o7777`).
    pub(crate) mode: u32,
    pub(crate) nlink: u32,
    pub(crate) uid: u32,
    pub(crate) gid: u32,
    pub(crate) rdev: u64,
    /// File size (regular files); symlinks and directories compute theirs.
    pub(crate) size: u64,
    pub(crate) atime: Timespec,
    pub(crate) mtime: Timespec,
    pub(crate) ctime: Timespec,
    /// Open file descriptions referring to this inode.
    pub(crate) opens: u32,
    pub(crate) body: Body,
}

/// Kind-specific contents of an inode.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Body {
    File(Pages),
    Dir(Dir),
    Symlink(Vec<u8>),
    /// A character device or a FIFO: nothing stored beyond the inode's attributes.
    Device,
}

/// File contents: 4 KiB pages keyed by page index; a missing page is a hole (zeros).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Pages(BTreeMap<u64, Slot4K>);

/// A page of zeros.
static ZEROS: [u8; PAGE_SIZE] = [0; PAGE_SIZE];

/// One page of a file: the replica's own copy, or a frame every replica shares (a page some
/// `MAP_SHARED` mapping maps, [`crate::sharing`]).
#[derive(Debug)]
pub(crate) enum Slot4K {
    /// This replica's copy.
    Own(Box<Page>),
    /// The frame all replicas share, by the address the embedder knows it by; this replica
    /// holds one share of it, given back when the slot is dropped.
    Shared(usize),
}

impl Slot4K {
    /// The page's bytes.
    fn bytes(&self) -> Page {
        match self {
            Slot4K::Own(p) => (**p).clone(),
            Slot4K::Shared(addr) => {
                let mut p = Page([0; PAGE_SIZE]);
                if let Some(s) = crate::sharing::sharing() {
                    (s.read)(*addr, 0, &mut p.0);
                }
                p
            }
        }
    }
}

impl Clone for Slot4K {
    /// A copy of the bytes (a snapshot of the file system owns its pages).
    fn clone(&self) -> Self {
        Slot4K::Own(Box::new(self.bytes()))
    }
}

impl PartialEq for Slot4K {
    fn eq(&self, other: &Self) -> bool {
        self.bytes() == other.bytes()
    }
}

impl Eq for Slot4K {}

impl Drop for Slot4K {
    fn drop(&mut self) {
        if let (Slot4K::Shared(addr), Some(s)) = (self, crate::sharing::sharing()) {
            (s.release)(*addr);
        }
    }
}

/// One page of file data. Page-sized and page-aligned, so an allocator can serve it with a
/// whole frame (Reef's kernel heap does: file data then takes no heap space and its memory goes
/// back to the frame allocator as soon as the page is freed).
#[derive(Debug, Clone, PartialEq, Eq)]
#[repr(C, align(4096))]
pub(crate) struct Page([u8; PAGE_SIZE]);

/// A directory entry as stored: the inode, its kind (never changes for an inode) and the
/// entry's insertion sequence number (its `read_dir` cookie).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Slot {
    pub(crate) ino: Ino,
    pub(crate) kind: Kind,
    pub(crate) seq: u64,
}

/// A directory: entries by name and by insertion sequence number, and the parent (`..`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Dir {
    pub(crate) parent: Ino,
    by_name: BTreeMap<Vec<u8>, Slot>,
    by_seq: BTreeMap<u64, Vec<u8>>,
    next_seq: u64,
}

impl Dir {
    pub(crate) fn new(parent: Ino) -> Self {
        Self {
            parent,
            by_name: BTreeMap::new(),
            by_seq: BTreeMap::new(),
            next_seq: 0,
        }
    }

    pub(crate) fn get(&self, name: &[u8]) -> Option<Slot> {
        self.by_name.get(name).copied()
    }

    pub(crate) fn len(&self) -> usize {
        self.by_name.len()
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.by_name.is_empty()
    }

    /// Adds `name` (which must be absent) with a fresh sequence number.
    pub(crate) fn insert(&mut self, name: &[u8], ino: Ino, kind: Kind) {
        let seq = self.next_seq;
        self.next_seq += 1;
        self.by_name.insert(name.to_vec(), Slot { ino, kind, seq });
        self.by_seq.insert(seq, name.to_vec());
    }

    pub(crate) fn remove(&mut self, name: &[u8]) -> Option<Slot> {
        let slot = self.by_name.remove(name)?;
        self.by_seq.remove(&slot.seq);
        Some(slot)
    }

    /// Points an existing entry at another inode, keeping its cookie (`RENAME_EXCHANGE`).
    pub(crate) fn replace(&mut self, name: &[u8], ino: Ino, kind: Kind) {
        if let Some(slot) = self.by_name.get_mut(name) {
            slot.ino = ino;
            slot.kind = kind;
        }
    }

    /// Entries from `cookie` on, `.` and `..` first, at most `max`.
    pub(crate) fn list(&self, me: Ino, cookie: u64, max: usize) -> Vec<DirEntry> {
        let mut out = Vec::new();
        let dots = [(0, &b"."[..], me), (1, &b".."[..], self.parent)];
        for (pos, name, ino) in dots {
            if out.len() < max && cookie <= pos {
                out.push(DirEntry {
                    ino,
                    kind: Kind::Dir,
                    name: name.to_vec(),
                    next_cookie: pos + 1,
                });
            }
        }
        let from = cookie.saturating_sub(FIRST_SEQ_COOKIE);
        for (&seq, name) in self.by_seq.range(from..) {
            if out.len() >= max {
                break;
            }
            let slot = self.by_name[name];
            out.push(DirEntry {
                ino: slot.ino,
                kind: slot.kind,
                name: name.clone(),
                next_cookie: seq + FIRST_SEQ_COOKIE + 1,
            });
        }
        out
    }
}

impl Pages {
    fn count(&self) -> u64 {
        self.0.len() as u64
    }

    /// Copies `buf.len()` bytes at `offset` (which the caller keeps below the file size).
    fn read(&self, offset: u64, buf: &mut [u8]) {
        let mut done = 0;
        while done < buf.len() {
            let pos = offset + done as u64;
            let (page, within) = (pos / PAGE_SIZE as u64, (pos % PAGE_SIZE as u64) as usize);
            let n = (PAGE_SIZE - within).min(buf.len() - done);
            let out = &mut buf[done..done + n];
            match self.0.get(&page) {
                Some(Slot4K::Own(p)) => out.copy_from_slice(&p.0[within..within + n]),
                Some(Slot4K::Shared(addr)) => match crate::sharing::sharing() {
                    Some(s) => (s.read)(*addr, within, out),
                    None => out.fill(0),
                },
                None => out.fill(0),
            }
            done += n;
        }
    }

    /// Whether a page of `offset .. offset + len` is shared.
    fn any_shared(&self, offset: u64, len: usize) -> bool {
        let first = offset / PAGE_SIZE as u64;
        let last = (offset + len as u64).div_ceil(PAGE_SIZE as u64);
        self.0
            .range(first..last)
            .any(|(_, p)| matches!(p, Slot4K::Shared(_)))
    }

    /// Writes `data` at `offset`. Into a shared page only if `claim` says so: every replica
    /// applies the write, but the frame is one, and a replica applying it late would overwrite
    /// what came after (later writes, stores through mappings). The first replica to get here
    /// writes, under [`crate::sharing::write_lock`], so that the shared pages see the writes
    /// once each and in log order (every replica applies them in that order, so the first
    /// replica to apply write k+1 applied write k before, under the same lock).
    fn write(&mut self, offset: u64, data: &[u8], claim: &dyn Fn() -> bool) {
        let shared = self.any_shared(offset, data.len());
        let _lock = shared.then(crate::sharing::write_lock);
        let mine = shared && claim();
        let mut done = 0;
        while done < data.len() {
            let pos = offset + done as u64;
            let (page, within) = (pos / PAGE_SIZE as u64, (pos % PAGE_SIZE as u64) as usize);
            let n = (PAGE_SIZE - within).min(data.len() - done);
            let from = &data[done..done + n];
            match self
                .0
                .entry(page)
                .or_insert_with(|| Slot4K::Own(Box::new(Page([0; PAGE_SIZE]))))
            {
                Slot4K::Own(p) => {
                    unlend(p);
                    p.0[within..within + n].copy_from_slice(from);
                }
                Slot4K::Shared(addr) => {
                    if let (true, Some(s)) = (mine, crate::sharing::sharing()) {
                        (s.write)(*addr, within, from);
                    }
                }
            }
            done += n;
        }
    }

    /// Drops everything at and after byte `size` (pages past it, and the tail of its page).
    /// The tail of a shared page is zeroed only if `claim` says so, for the reason
    /// [`Pages::write`] writes it only then: a replica applying the truncation late would
    /// wipe what later writes and stores through mappings put there.
    fn cut(&mut self, size: u64, claim: &dyn Fn() -> bool) {
        let first_gone = size.div_ceil(PAGE_SIZE as u64);
        let _ = self.0.split_off(&first_gone);
        let within = (size % PAGE_SIZE as u64) as usize;
        if within != 0 {
            match self.0.get_mut(&(size / PAGE_SIZE as u64)) {
                Some(Slot4K::Own(p)) => {
                    unlend(p);
                    p.0[within..].fill(0);
                }
                Some(Slot4K::Shared(addr)) => {
                    let _lock = crate::sharing::write_lock();
                    if let (true, Some(s)) = (claim(), crate::sharing::sharing()) {
                        (s.write)(*addr, within, &ZEROS[within..]);
                    }
                }
                None => {}
            }
        }
    }

    /// Lends the pages `first..first + count` ([`crate::sharing`]): the address of each page
    /// the file holds below page index `end`, `None` for a hole or a page from `end` on, and
    /// whether it is shared (a mapping may write it in place) or the replica's own (mapped
    /// copy-on-write).
    fn lend(&self, first: u64, count: usize, end: u64) -> Result<Vec<Option<Lent>>, Errno> {
        let sharing = crate::sharing::sharing().ok_or(Errno::EOPNOTSUPP)?;
        let mut out = Vec::new();
        out.try_reserve_exact(count).map_err(|_| Errno::ENOMEM)?;
        for i in 0..count as u64 {
            let page = first
                .checked_add(i)
                .filter(|&p| p < end)
                .and_then(|p| self.0.get(&p));
            out.push(page.map(|p| {
                let lent = match p {
                    Slot4K::Own(p) => Lent {
                        addr: page_addr(p),
                        shared: false,
                    },
                    Slot4K::Shared(addr) => Lent {
                        addr: *addr,
                        shared: true,
                    },
                };
                (sharing.share)(lent.addr);
                lent
            }));
        }
        Ok(out)
    }

    /// Makes the pages `first..first + frames.len()` below page index `end` shared: each page
    /// not shared yet takes its frame from `frames` (the replica adds a share to it), whose
    /// contents become the page's if `claim` says this replica is the first to apply the
    /// operation (the others find them there). Returns how many frames were taken.
    fn share(&mut self, first: u64, frames: &[usize], end: u64, claim: &dyn Fn() -> bool) -> usize {
        let Some(s) = crate::sharing::sharing() else {
            return 0;
        };
        let _lock = crate::sharing::write_lock();
        let mine = claim();
        let mut taken = 0;
        for (i, &frame) in frames.iter().enumerate() {
            let index = first + i as u64;
            if index >= end {
                break;
            }
            let slot = self.0.get(&index);
            if matches!(slot, Some(Slot4K::Shared(_))) {
                continue;
            }
            if mine {
                let bytes = match slot {
                    Some(Slot4K::Own(p)) => &p.0,
                    _ => &ZEROS,
                };
                (s.write)(frame, 0, bytes);
            }
            (s.share)(frame);
            self.0.insert(index, Slot4K::Shared(frame));
            taken += 1;
        }
        taken
    }
}

/// The address by which [`crate::sharing`] knows a page.
fn page_addr(p: &Page) -> usize {
    p as *const Page as usize
}

/// Gives the file a private copy of `p` if it is lent to a mapping, so the mapping keeps its
/// bytes; the lent page itself is dropped here (its memory stays with the mappings).
// A new allocation is the point (clippy's `**p = (**p).clone()` would write into the lent
// page that mappings still use).
#[allow(clippy::replace_box)]
fn unlend(p: &mut Box<Page>) {
    if crate::sharing::sharing().is_some_and(|s| (s.is_shared)(page_addr(p))) {
        *p = Box::new((**p).clone());
    }
}

impl Inode {
    /// A fresh inode of `kind` created at `now`.
    pub(crate) fn new(kind: Kind, attrs: &Attrs, now: Timespec, body: Body) -> Self {
        Self {
            kind,
            mode: attrs.mode & 0o7777,
            nlink: 1,
            uid: attrs.uid,
            gid: attrs.gid,
            rdev: 0,
            size: 0,
            atime: now,
            mtime: now,
            ctime: now,
            opens: 0,
            body,
        }
    }

    pub(crate) fn dir(&self) -> Result<&Dir, Errno> {
        match &self.body {
            Body::Dir(d) => Ok(d),
            _ => Err(Errno::ENOTDIR),
        }
    }

    pub(crate) fn dir_mut(&mut self) -> Result<&mut Dir, Errno> {
        match &mut self.body {
            Body::Dir(d) => Ok(d),
            _ => Err(Errno::ENOTDIR),
        }
    }

    /// Whether a directory has been removed (`rmdir`) but is still referenced.
    pub(crate) fn is_dead_dir(&self) -> bool {
        self.kind == Kind::Dir && self.nlink == 0
    }

    /// Whether the inode can be freed: no names and no open file descriptions.
    pub(crate) fn is_unused(&self) -> bool {
        self.nlink == 0 && self.opens == 0
    }

    /// Sets the setgid-directory inheritance of a new child (Linux `inode_init_owner`).
    pub(crate) fn inherit(&self, attrs: &Attrs, kind: Kind) -> Attrs {
        let mut a = *attrs;
        if self.mode & S_ISGID != 0 {
            a.gid = self.gid;
            if kind == Kind::Dir {
                a.mode |= S_ISGID;
            }
        }
        a
    }

    pub(crate) fn touch_dir(&mut self, now: Timespec) {
        self.mtime = now;
        self.ctime = now;
    }

    pub(crate) fn stat(&self, ino: Ino) -> Stat {
        let (size, blocks) = match &self.body {
            Body::File(p) => (self.size, p.count() * (PAGE_SIZE as u64 / 512)),
            Body::Dir(d) => ((d.len() as u64 + 2) * BOGO_DIRENT_SIZE, 0),
            Body::Symlink(t) => (t.len() as u64, 0),
            Body::Device => (0, 0),
        };
        Stat {
            ino,
            kind: self.kind,
            mode: self.mode,
            nlink: self.nlink,
            uid: self.uid,
            gid: self.gid,
            size,
            blocks,
            rdev: self.rdev,
            atime: self.atime,
            mtime: self.mtime,
            ctime: self.ctime,
        }
    }

    /// Pages held (regular files).
    pub(crate) fn pages(&self) -> u64 {
        match &self.body {
            Body::File(p) => p.count(),
            _ => 0,
        }
    }

    fn pages_for_data(&self) -> Result<&Pages, Errno> {
        match &self.body {
            Body::File(p) => Ok(p),
            Body::Dir(_) => Err(Errno::EISDIR),
            _ => Err(Errno::EINVAL),
        }
    }

    fn pages_for_data_mut(&mut self) -> Result<&mut Pages, Errno> {
        match &mut self.body {
            Body::File(p) => Ok(p),
            Body::Dir(_) => Err(Errno::EISDIR),
            _ => Err(Errno::EINVAL),
        }
    }

    /// `pread`: reads at `offset` into `buf`; returns the bytes read (0 at or past the end).
    pub(crate) fn read(&self, offset: u64, buf: &mut [u8]) -> Result<usize, Errno> {
        let pages = self.pages_for_data()?;
        if offset >= self.size {
            return Ok(0);
        }
        let n = ((self.size - offset).min(buf.len() as u64)) as usize;
        pages.read(offset, &mut buf[..n]);
        Ok(n)
    }

    /// Lends `count` pages from page index `first` to a mapping ([`crate::sharing`]): each
    /// page's address and whether it is shared, `None` for a hole or a page past the end.
    /// EOPNOTSUPP without a [`crate::PageSharing`], ENOMEM if the answer cannot be allocated.
    pub(crate) fn lend_pages(&self, first: u64, count: usize) -> Result<Vec<Option<Lent>>, Errno> {
        let pages = self.pages_for_data()?;
        pages.lend(first, count, self.size.div_ceil(PAGE_SIZE as u64))
    }

    /// Makes the pages from index `first` shared with the `frames` given ([`Pages::share`]),
    /// as far as the file goes; returns how many frames were taken.
    pub(crate) fn share_pages(
        &mut self,
        first: u64,
        frames: &[usize],
        claim: &dyn Fn() -> bool,
    ) -> Result<usize, Errno> {
        let end = self.size.div_ceil(PAGE_SIZE as u64);
        match &mut self.body {
            Body::File(p) => Ok(p.share(first, frames, end, claim)),
            Body::Dir(_) => Err(Errno::EISDIR),
            _ => Err(Errno::EINVAL),
        }
    }

    /// `pwrite`: writes `data` at `offset`, extending the file; returns the bytes written
    /// (fewer than `data.len()` only at [`MAX_FILE_SIZE`]).
    pub(crate) fn write(
        &mut self,
        offset: u64,
        data: &[u8],
        now: Timespec,
        claim: &dyn Fn() -> bool,
    ) -> Result<usize, Errno> {
        self.pages_for_data()?;
        if data.is_empty() {
            return Ok(0);
        }
        if offset >= MAX_FILE_SIZE {
            return Err(Errno::EFBIG);
        }
        let n = (MAX_FILE_SIZE - offset).min(data.len() as u64) as usize;
        self.pages_for_data_mut()?.write(offset, &data[..n], claim);
        self.size = self.size.max(offset + n as u64);
        self.mtime = now;
        self.ctime = now;
        Ok(n)
    }

    /// Sets the size; shrinking frees pages and zeroes the tail of the last one (of a shared
    /// one only if `claim` says so, see [`Pages::cut`]).
    pub(crate) fn truncate(
        &mut self,
        size: u64,
        now: Timespec,
        claim: &dyn Fn() -> bool,
    ) -> Result<(), Errno> {
        self.pages_for_data()?;
        if size > MAX_FILE_SIZE {
            return Err(Errno::EFBIG);
        }
        if size != self.size {
            if size < self.size {
                self.pages_for_data_mut()?.cut(size, claim);
            }
            self.size = size;
            self.mtime = now;
            self.ctime = now;
        }
        Ok(())
    }
}

/// Checks a single name for a new directory entry: not empty, no `/` or NUL, not `.`/`..`
/// (EINVAL; path parsing never produces those), at most [`NAME_MAX`] bytes (ENAMETOOLONG).
pub(crate) fn check_name(name: &[u8]) -> Result<(), Errno> {
    if name.len() > NAME_MAX {
        return Err(Errno::ENAMETOOLONG);
    }
    if name.is_empty() || name == b"." || name == b".." || name.iter().any(|&b| b == b'/' || b == 0)
    {
        return Err(Errno::EINVAL);
    }
    Ok(())
}
