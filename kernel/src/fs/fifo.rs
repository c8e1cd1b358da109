//! FIFOs (named pipes): an NR-FS or Hare inode of [`nrfs::Kind::Fifo`] names a pipe that
//! exists while the FIFO is open.
//!
//! The pipes live in one table for the whole machine ([`FIFOS`]), not in the file systems: an
//! NR-FS inode is replicated on every NUMA node and a Hare inode lives in a server process, but
//! a pipe's bytes and wait queues must be one object that every core's opens reach. The table
//! maps (file system, inode) to the pipe; an entry is made by the first open and removed when
//! the last end closes (or the last blocked open gives up), which drops whatever data was left,
//! as on Linux.
//!
//! Opening follows Linux's `fifo_open`:
//! - `O_RDONLY` counts a reader, then, unless a writer is open, waits until a writer opens
//!   (one that opened and closed meanwhile counts); with `O_NONBLOCK` it returns at once and
//!   reads give end of file while no writer is open, and `poll` shows no `POLLHUP` until a
//!   writer has come and gone (Linux keeps the writer count the open saw, `f_version`);
//! - `O_WRONLY` answers `ENXIO` with `O_NONBLOCK` and no reader, else counts a writer and waits
//!   until a reader opens;
//! - `O_RDWR` counts both and never waits;
//! - a waiting open ends with `EINTR` when a signal is pending (the signal code restarts it
//!   under `SA_RESTART`), and its counted end is dropped again.
//!
//! After that an end behaves as an anonymous pipe's ([`crate::fs::pipe`]). Each open end also
//! holds an open of the inode ([`FifoFile`]), so `fstat` works and the inode number is not
//! reused while the pipe lives, even if the FIFO's last name is removed.

use crate::fd::{DEV_NRFS, O_ACCMODE, O_NONBLOCK, O_RDONLY, O_RDWR, O_WRONLY};
use crate::fs::hare::{HareNode, DEV_HARE};
use crate::fs::pipe::Pipe;
use crate::sync::IrqMutex;
use abi::Errno;
use alloc::sync::Arc;
use alloc::vec::Vec;
use nrfs::Ino;

/// A FIFO's identity: the file system's device number (`st_dev`) and the inode.
type Key = (u64, Ino);

/// The pipe of every FIFO open somewhere (or being opened), sorted by key. Its lock is taken
/// before a pipe's state lock (counting ends and removing an entry are one step under it) and
/// never held across an NR-FS operation or a wake-up. It keeps its largest length's capacity
/// (24 bytes an entry).
static FIFOS: IrqMutex<Vec<(Key, Arc<Pipe>)>> = IrqMutex::new(Vec::new());

/// The FIFO inode an end holds open.
pub enum FifoFile {
    /// An NR-FS inode, opened (its `OpenFile`'s drop closes it).
    Nrfs(Ino),
    /// A Hare file, whose drop queues its close.
    Hare(HareNode),
}

impl FifoFile {
    /// The key of its pipe.
    fn key(&self) -> Key {
        match self {
            FifoFile::Nrfs(ino) => (DEV_NRFS, *ino),
            FifoFile::Hare(h) => (DEV_HARE, h.ino()),
        }
    }
}

/// One open description's hold on a FIFO's pipe: its read end, write end or both
/// (`O_RDWR`), given back when it is dropped.
pub struct FifoEnd {
    /// The pipe.
    pub pipe: Arc<Pipe>,
    /// The FIFO's inode.
    pub file: FifoFile,
    /// It is a read end.
    read: bool,
    /// It is a write end.
    write: bool,
    /// For a read end opened with `O_NONBLOCK` while no writer was open: the count of write
    /// opens then; `poll` shows no hang-up until a writer has opened since.
    quiet_until: Option<u64>,
}

impl FifoEnd {
    /// Whether `poll` shows `POLLHUP`: a read end with no writer left, unless no writer has
    /// opened since this end opened without one.
    pub fn hung_up(&self) -> bool {
        if !self.read {
            return false;
        }
        let ends = self.pipe.ends();
        ends.writers == 0 && self.quiet_until != Some(ends.write_opens)
    }
}

impl Drop for FifoEnd {
    fn drop(&mut self) {
        release(self.file.key(), &self.pipe, self.read, self.write);
    }
}

/// Drops the ends `read` and `write` of `pipe`, the pipe of FIFO `key`, and the table's entry
/// with the last end (its data goes with it).
fn release(key: Key, pipe: &Arc<Pipe>, read: bool, write: bool) {
    let gone = {
        let mut table = FIFOS.lock();
        if pipe.close_ends(read, write) {
            match table.binary_search_by_key(&key, |e| e.0) {
                Ok(i) if Arc::ptr_eq(&table[i].1, pipe) => Some(table.remove(i)),
                _ => None,
            }
        } else {
            None
        }
    };
    pipe.changed();
    // The entry (and with it, perhaps, the pipe and its bytes) is freed with the lock let go.
    drop(gone);
}

/// Opens the pipe of FIFO `file` with the `open` flags `flags` (access mode and
/// `O_NONBLOCK` count), waiting for a peer as Linux does (see the module documentation).
/// `EINVAL` for access mode 3, `ENXIO` for a non-blocking writer without reader, `EINTR`, or
/// `ENOMEM` if the table cannot grow.
pub fn open(file: FifoFile, flags: u32) -> Result<FifoEnd, Errno> {
    let (read, write) = match flags & O_ACCMODE {
        O_RDONLY => (true, false),
        O_WRONLY => (false, true),
        O_RDWR => (true, true),
        _ => return Err(Errno::EINVAL),
    };
    let nonblock = flags & O_NONBLOCK != 0;
    let key = file.key();
    let (pipe, ends) = {
        let mut table = FIFOS.lock();
        let pipe = match table.binary_search_by_key(&key, |e| e.0) {
            Ok(i) => table[i].1.clone(),
            // No end at all, so no reader: a non-blocking writer makes nothing.
            Err(_) if write && !read && nonblock => return Err(Errno::ENXIO),
            Err(i) => {
                table.try_reserve(1).map_err(|_| Errno::ENOMEM)?;
                let p = Pipe::unopened();
                table.insert(i, (key, p.clone()));
                p
            }
        };
        if write && !read && nonblock && pipe.ends().readers == 0 {
            // The entry has other ends (writers), which keep it.
            return Err(Errno::ENXIO);
        }
        let ends = pipe.open_ends(read, write);
        (pipe, ends)
    };
    pipe.changed();
    let end = FifoEnd {
        pipe,
        file,
        read,
        write,
        quiet_until: (read && !write && nonblock && ends.writers == 0).then_some(ends.write_opens),
    };
    if !nonblock {
        // An interrupted wait drops `end`, which takes its end back out.
        if read && !write && ends.writers == 0 {
            end.pipe.wait_for_peer(true, ends.write_opens)?;
        } else if write && !read && ends.readers == 0 {
            end.pipe.wait_for_peer(false, ends.read_opens)?;
        }
    }
    Ok(end)
}
