//! File descriptors and open file descriptions.
//!
//! An [`OpenFile`] is a Linux "open file description": what was opened ([`Node`]), the file
//! offset and the status flags. `dup` and `fork` share it (one offset), so it is reference
//! counted; an [`FdTable`] maps descriptor numbers to open files plus the per-descriptor
//! close-on-exec flag.
//!
//! File offsets live here, outside the replicated file system (NrOS §4.3: NR-FS offers
//! positional reads and writes only). A read or write on a shared description holds the
//! description's offset lock across the NR-FS operation, so two processes sharing one offset
//! never read or write the same bytes twice. `O_APPEND` writes are one NR-FS `Append` update,
//! atomic however many cores append at once.
//!
//! A description of an NR-FS inode counts as an open of that inode (NR-FS keeps an unlinked
//! file alive while it is open); dropping the last reference to the description closes it.

use crate::fs::dev::{self, Device};
use crate::fs::fifo::{FifoEnd, FifoFile};
use crate::fs::hare::HareNode;
use crate::fs::pipe::Pipe;
use crate::fs::procfs;
use crate::fs::unix::SocketEnd;
use crate::mailbox::{self, Conn, Mailbox};
use crate::proc::wait::{PollKey, PollQueue};
use crate::sync::IrqMutex;
use abi::Errno;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicU32, Ordering};
use nrfs::{Ino, Kind, Timespec};

/// Most descriptors a process may hold (`RLIMIT_NOFILE`).
pub const MAX_FDS: usize = 1024;

/// Access mode bits of the flags.
pub const O_ACCMODE: u32 = 3;
/// Read only.
pub const O_RDONLY: u32 = 0;
/// Write only.
pub const O_WRONLY: u32 = 1;
/// Read and write.
pub const O_RDWR: u32 = 2;
/// `O_APPEND`.
pub const O_APPEND: u32 = 0o2000;
/// `O_NONBLOCK`.
pub const O_NONBLOCK: u32 = 0o4000;
/// `O_PATH`: a descriptor that only names a file.
pub const O_PATH: u32 = 0o10000000;

/// Where `poll` and `select` sleep; whatever they may wait for (a pipe, the terminal, a
/// message channel or mailbox) notifies it with its own [`PollKey`] when it changes.
pub static POLL_WAKE: PollQueue = PollQueue::new();

/// Device numbers (`st_dev`) of Reef's file systems.
pub const DEV_NRFS: u64 = 1;
/// `st_dev` of pipes.
pub const DEV_PIPE: u64 = 2;
/// `st_dev` of `/proc`.
pub const DEV_PROC: u64 = 3;
/// `st_dev` of mailboxes and connections.
pub const DEV_MSG: u64 = 4;
/// `st_dev` of `AF_INET` sockets.
pub const DEV_NET: u64 = 5;
/// `st_dev` of anonymous objects (epoll instances). Hare's files have 7
/// (`crate::fs::hare::DEV_HARE`).
pub const DEV_ANON: u64 = 6;

/// What an open file refers to.
pub enum Node {
    /// A regular NR-FS file.
    File(Ino),
    /// An NR-FS directory; the offset is the `read_dir` cookie.
    Dir(Ino),
    /// A character device (its NR-FS inode, if it was opened by name).
    Device(Device, Option<Ino>),
    /// The read end of a pipe.
    PipeRead(Arc<Pipe>),
    /// The write end of a pipe.
    PipeWrite(Arc<Pipe>),
    /// An NR-FS FIFO opened for reading, writing or both: its pipe ([`crate::fs::fifo`]).
    Fifo(FifoEnd),
    /// One end of an `AF_UNIX` stream socket pair.
    Socket(Arc<SocketEnd>),
    /// An `AF_INET` socket (its instance closes it when the last description goes).
    Inet(Arc<crate::net::socket::Socket>),
    /// A route netlink socket (`AF_NETLINK`).
    Netlink(Arc<crate::net::socket::netlink::Netlink>),
    /// An epoll instance.
    Epoll(Arc<crate::fs::epoll::Epoll>),
    /// An event counter (`eventfd2`).
    EventFd(Arc<crate::fs::eventfd::EventFd>),
    /// A timer (`timerfd_create`).
    TimerFd(Arc<crate::fs::eventfd::TimerFd>),
    /// A signal descriptor (`signalfd4`).
    SignalFd(Arc<crate::fs::signalfd::SignalFd>),
    /// A `/proc` file, its contents generated when it was opened.
    ProcFile(procfs::Place, Vec<u8>),
    /// A `/proc` directory; the offset counts entries.
    ProcDir(procfs::Place),
    /// A receive mailbox (`reef_mbox_create`).
    Mailbox(Arc<Mailbox>),
    /// One end of a connection to a mailbox.
    Conn(Arc<Conn>, mailbox::End),
    /// A file or directory of the mounted Hare (`crate::fs::hare`).
    Hare(HareNode),
}

/// File attributes as `stat` reports them.
#[derive(Clone, Copy, Debug, Default)]
pub struct KStat {
    /// `st_dev`.
    pub dev: u64,
    /// `st_ino`.
    pub ino: u64,
    /// `st_mode` (type and permission bits).
    pub mode: u32,
    /// `st_nlink`.
    pub nlink: u32,
    /// `st_uid`.
    pub uid: u32,
    /// `st_gid`.
    pub gid: u32,
    /// `st_rdev`.
    pub rdev: u64,
    /// `st_size`.
    pub size: u64,
    /// `st_blocks` (512-byte units).
    pub blocks: u64,
    /// Access time.
    pub atime: Timespec,
    /// Modification time.
    pub mtime: Timespec,
    /// Status change time.
    pub ctime: Timespec,
}

impl KStat {
    /// Attributes of an NR-FS inode.
    pub fn from_nrfs(s: &nrfs::Stat) -> KStat {
        KStat {
            dev: DEV_NRFS,
            ino: s.ino,
            mode: s.st_mode(),
            nlink: s.nlink,
            uid: s.uid,
            gid: s.gid,
            rdev: s.rdev,
            size: s.size,
            blocks: s.blocks,
            atime: s.atime,
            mtime: s.mtime,
            ctime: s.ctime,
        }
    }

    /// Attributes of an object outside NR-FS: `mode` on device `dev`, times now.
    pub fn synthetic(dev: u64, ino: u64, mode: u32, size: u64) -> KStat {
        let t = crate::fs::now();
        KStat {
            dev,
            ino,
            mode,
            nlink: 1,
            size,
            atime: t,
            mtime: t,
            ctime: t,
            ..KStat::default()
        }
    }

    /// Whether this is a directory.
    pub fn is_dir(&self) -> bool {
        self.mode & 0o170000 == Kind::Dir.mode_bits()
    }
}

/// An open file description.
pub struct OpenFile {
    /// What is open.
    pub node: Node,
    /// Access mode and status flags (`O_APPEND`, `O_NONBLOCK`, ...).
    pub flags: AtomicU32,
    /// The file offset (directories: the listing position).
    pub pos: IrqMutex<u64>,
    /// The absolute path it was opened by (shown in `/proc/<pid>/fd`).
    pub path: Vec<u8>,
}

impl Drop for OpenFile {
    fn drop(&mut self) {
        crate::fs::lock::description_gone(self);
        match &self.node {
            Node::File(ino) | Node::Dir(ino) | Node::Device(_, Some(ino)) => {
                let ino = *ino;
                let closed = crate::fs::with_client(|c| {
                    let orphan = c.stat(ino).is_ok_and(|s| s.nlink == 0 && s.blocks > 0);
                    c.close(ino).map(|()| orphan)
                });
                match closed {
                    Ok(true) => crate::fs::sync_all(),
                    Ok(false) => {}
                    Err(e) => crate::kprintln!("reef: nrfs: closing inode {ino} failed: {e}"),
                }
            }
            Node::PipeRead(p) => p.close_reader(),
            Node::PipeWrite(p) => p.close_writer(),
            // The NR-FS open goes here; the pipe's end with the `FifoEnd` (its drop).
            Node::Fifo(f) => {
                if let FifoFile::Nrfs(ino) = f.file {
                    if let Err(e) = crate::fs::with_client(|c| c.close(ino)) {
                        crate::kprintln!("reef: nrfs: closing FIFO inode {ino} failed: {e}");
                    }
                }
            }
            Node::Socket(e) => e.close(),
            Node::Mailbox(m) => m.close(),
            Node::Conn(c, end) => c.close(*end),
            // A Hare descriptor queues its own close (`HareNode`'s drop).
            Node::Device(_, None)
            | Node::ProcFile(..)
            | Node::ProcDir(_)
            | Node::Hare(_)
            | Node::Inet(_)
            | Node::Netlink(_)
            | Node::Epoll(_)
            | Node::EventFd(_)
            | Node::TimerFd(_)
            | Node::SignalFd(_) => {}
        }
    }
}

/// Copies from `data` at `off` into `buf`.
fn read_from(data: &[u8], off: u64, buf: &mut [u8]) -> usize {
    let start = (off as usize).min(data.len());
    let n = buf.len().min(data.len() - start);
    buf[..n].copy_from_slice(&data[start..start + n]);
    n
}

impl OpenFile {
    /// A new description.
    pub fn new(node: Node, flags: u32, path: Vec<u8>) -> Arc<OpenFile> {
        Arc::new(OpenFile {
            node,
            flags: AtomicU32::new(flags),
            pos: IrqMutex::new(0),
            path,
        })
    }

    /// The status flags.
    pub fn flags(&self) -> u32 {
        self.flags.load(Ordering::Relaxed)
    }

    /// Whether its operations answer `EAGAIN` rather than block (`O_NONBLOCK`).
    pub fn nonblock(&self) -> bool {
        self.flags() & O_NONBLOCK != 0
    }

    /// Whether the description allows reading (not `O_PATH`, not write-only).
    pub fn readable(&self) -> bool {
        let f = self.flags();
        f & O_PATH == 0 && f & O_ACCMODE != O_WRONLY
    }

    /// Whether the description allows writing.
    pub fn writable(&self) -> bool {
        let f = self.flags();
        f & O_PATH == 0 && matches!(f & O_ACCMODE, O_WRONLY | O_RDWR)
    }

    /// Reads into `buf` (a kernel buffer) at the current offset.
    pub fn read(&self, buf: &mut [u8]) -> Result<usize, Errno> {
        if !self.readable() {
            return Err(Errno::EBADF);
        }
        match &self.node {
            Node::File(ino) => {
                let mut pos = self.pos.lock();
                let n = crate::fs::with_client(|c| c.read(*ino, *pos, buf))?;
                *pos += n as u64;
                Ok(n)
            }
            Node::ProcFile(_, data) => {
                let mut pos = self.pos.lock();
                let n = read_from(data, *pos, buf);
                *pos += n as u64;
                Ok(n)
            }
            Node::Dir(_) | Node::ProcDir(_) => Err(Errno::EISDIR),
            Node::Hare(h) => h.read(buf),
            Node::Device(Device::Console, _) => crate::tty::read(buf, self.nonblock()),
            Node::Device(d, _) => Ok(dev::read(*d, buf)),
            Node::PipeRead(p) => p.read(buf, self.nonblock()),
            Node::Fifo(f) => f.pipe.read(buf, self.nonblock()),
            Node::PipeWrite(_) => Err(Errno::EBADF),
            Node::EventFd(e) => e.read(buf, self.nonblock()),
            Node::TimerFd(t) => t.read(buf, self.nonblock()),
            Node::SignalFd(s) => s.read(buf, self.nonblock()),
            Node::Socket(e) => e.read(buf, self.nonblock()),
            Node::Inet(s) => s.read(buf, self.nonblock()),
            Node::Netlink(s) => s.recv(buf, false, self.nonblock()).map(|r| r.0),
            // Messages go through the mapped channels, not read and write; epoll through its
            // calls.
            Node::Mailbox(_) | Node::Conn(..) | Node::Epoll(_) => Err(Errno::EINVAL),
        }
    }

    /// Reads at most `len` bytes at the current offset into a new buffer. A regular file's
    /// bytes come straight from NR-FS (no zeroed buffer, one copy fewer than [`OpenFile::read`]).
    pub fn read_vec(&self, len: usize) -> Result<Vec<u8>, Errno> {
        match &self.node {
            Node::File(ino) if self.readable() => {
                let mut pos = self.pos.lock();
                let data = crate::fs::with_client(|c| c.read_vec(*ino, *pos, len))?;
                *pos += data.len() as u64;
                Ok(data)
            }
            _ => {
                let mut buf = crate::mm::zeroed_buffer(len)?;
                let n = self.read(&mut buf)?;
                buf.truncate(n);
                Ok(buf)
            }
        }
    }

    /// [`OpenFile::pread`] into a new buffer of at most `len` bytes (see [`OpenFile::read_vec`]).
    pub fn pread_vec(&self, len: usize, off: u64) -> Result<Vec<u8>, Errno> {
        match &self.node {
            Node::File(ino) if self.readable() => {
                crate::fs::with_client(|c| c.read_vec(*ino, off, len))
            }
            _ => {
                let mut buf = crate::mm::zeroed_buffer(len)?;
                let n = self.pread(&mut buf, off)?;
                buf.truncate(n);
                Ok(buf)
            }
        }
    }

    /// Gives back `n` bytes a [`OpenFile::read`] consumed but could not deliver (the user
    /// buffer faulted), so the offset is where it was, as on Linux.
    pub fn unread(&self, n: usize) {
        match &self.node {
            Node::File(_) | Node::ProcFile(..) => {
                let mut pos = self.pos.lock();
                *pos = pos.saturating_sub(n as u64);
            }
            Node::Hare(h) => {
                // The offset lives in Hare's client: moved back by as much (it was moved
                // forward by that just now, so this cannot fail but for a server gone).
                let _ = h.seek(-(n.min(i64::MAX as usize) as i64), 1);
            }
            _ => {}
        }
    }

    /// Reads at offset `off` without moving the file offset (`pread64`).
    pub fn pread(&self, buf: &mut [u8], off: u64) -> Result<usize, Errno> {
        if !self.readable() {
            return Err(Errno::EBADF);
        }
        match &self.node {
            Node::File(ino) => crate::fs::with_client(|c| c.read(*ino, off, buf)),
            Node::Hare(h) => h.pread(buf, off),
            Node::ProcFile(_, data) => Ok(read_from(data, off, buf)),
            Node::Dir(_) | Node::ProcDir(_) => Err(Errno::EISDIR),
            Node::Device(Device::Console, _)
            | Node::PipeRead(_)
            | Node::PipeWrite(_)
            | Node::Fifo(_)
            | Node::Socket(_)
            | Node::Inet(_)
            | Node::Netlink(_)
            | Node::Epoll(_)
            | Node::EventFd(_)
            | Node::TimerFd(_)
            | Node::SignalFd(_)
            | Node::Mailbox(_)
            | Node::Conn(..) => Err(Errno::ESPIPE),
            Node::Device(d, _) => Ok(dev::read(*d, buf)),
        }
    }

    /// Writes `data` at the current offset (or at the end, with `O_APPEND`).
    pub fn write(&self, data: Vec<u8>) -> Result<usize, Errno> {
        if !self.writable() {
            return Err(Errno::EBADF);
        }
        match &self.node {
            Node::File(ino) => {
                crate::fs::admit(data.len())?;
                let t = crate::fs::now();
                let len = data.len();
                if self.flags() & O_APPEND != 0 {
                    let at = crate::fs::with_client(|c| c.append(*ino, &data, t))?;
                    // As Linux: the offset moves to the end only if something was written.
                    if len > 0 {
                        *self.pos.lock() = at + len as u64;
                    }
                    return Ok(len);
                }
                let mut pos = self.pos.lock();
                let n = crate::fs::with_client(|c| c.write_owned(*ino, *pos, data, t))?;
                *pos += n as u64;
                Ok(n)
            }
            Node::Hare(h) => h.write(&data, self.flags() & O_APPEND != 0),
            Node::Dir(_) | Node::ProcDir(_) => Err(Errno::EISDIR),
            Node::ProcFile(place, _) => procfs::write(*place, &data),
            Node::PipeRead(_) => Err(Errno::EBADF),
            Node::Device(Device::Console, _) => crate::tty::write(&data),
            Node::Device(d, _) => dev::write(*d, &data),
            Node::PipeWrite(p) => p.write(&data, self.nonblock()),
            Node::Fifo(f) => f.pipe.write(&data, self.nonblock()),
            Node::EventFd(e) => e.write(&data, self.nonblock()),
            Node::TimerFd(_) | Node::SignalFd(_) => Err(Errno::EINVAL),
            Node::Socket(e) => e.write(&data, self.nonblock()),
            Node::Inet(s) => s.write(&data, self.nonblock()),
            Node::Netlink(s) => {
                let me = crate::proc::sched::current_thread();
                let privileged = me.process.creds.lock().is_privileged();
                s.send(&data, privileged, me.process.pid)
            }
            Node::Mailbox(_) | Node::Conn(..) | Node::Epoll(_) => Err(Errno::EINVAL),
        }
    }

    /// Writes at offset `off` without moving the file offset (`pwrite64`; with `O_APPEND` it
    /// appends, as on Linux).
    pub fn pwrite(&self, data: Vec<u8>, off: u64) -> Result<usize, Errno> {
        if !self.writable() {
            return Err(Errno::EBADF);
        }
        match &self.node {
            Node::File(ino) => {
                crate::fs::admit(data.len())?;
                let t = crate::fs::now();
                if self.flags() & O_APPEND != 0 {
                    let len = data.len();
                    crate::fs::with_client(|c| c.append(*ino, &data, t))?;
                    return Ok(len);
                }
                crate::fs::with_client(|c| c.write_owned(*ino, off, data, t))
            }
            Node::Hare(h) => h.pwrite(&data, off),
            Node::Dir(_) | Node::ProcDir(_) => Err(Errno::EISDIR),
            // A `comm` write ignores the offset, as Linux's.
            Node::ProcFile(place, _) => procfs::write(*place, &data),
            Node::Device(Device::Console, _)
            | Node::PipeRead(_)
            | Node::PipeWrite(_)
            | Node::Fifo(_)
            | Node::Socket(_)
            | Node::Inet(_)
            | Node::Netlink(_)
            | Node::Epoll(_)
            | Node::EventFd(_)
            | Node::TimerFd(_)
            | Node::SignalFd(_)
            | Node::Mailbox(_)
            | Node::Conn(..) => Err(Errno::ESPIPE),
            Node::Device(d, _) => dev::write(*d, &data),
        }
    }

    /// `lseek`.
    pub fn seek(&self, off: i64, whence: u32) -> Result<u64, Errno> {
        const SEEK_SET: u32 = 0;
        const SEEK_CUR: u32 = 1;
        const SEEK_END: u32 = 2;
        const SEEK_DATA: u32 = 3;
        const SEEK_HOLE: u32 = 4;
        let size = match &self.node {
            Node::Hare(h) if !h.is_dir() => return h.seek(off, whence),
            Node::File(_) | Node::ProcFile(..) => self.stat()?.size,
            Node::Dir(_) | Node::ProcDir(_) | Node::Hare(_) => {
                // A directory offset is a listing position: only absolute positions mean
                // anything (0 rewinds).
                if whence != SEEK_SET || off < 0 {
                    return Err(Errno::EINVAL);
                }
                *self.pos.lock() = off as u64;
                return Ok(off as u64);
            }
            Node::Device(Device::Console, _)
            | Node::PipeRead(_)
            | Node::PipeWrite(_)
            | Node::Fifo(_)
            | Node::Socket(_)
            | Node::Inet(_)
            | Node::Netlink(_)
            | Node::Epoll(_)
            | Node::EventFd(_)
            | Node::TimerFd(_)
            | Node::SignalFd(_)
            | Node::Mailbox(_)
            | Node::Conn(..) => return Err(Errno::ESPIPE),
            Node::Device(..) => return Ok(0),
        };
        let mut pos = self.pos.lock();
        let new = match whence {
            SEEK_SET => off,
            SEEK_CUR => (*pos as i64).checked_add(off).ok_or(Errno::EOVERFLOW)?,
            SEEK_END => (size as i64).checked_add(off).ok_or(Errno::EOVERFLOW)?,
            // The whole file counts as data (holes read as zeros; NR-FS does not report them).
            SEEK_DATA if off >= 0 && (off as u64) < size => off,
            SEEK_HOLE if off >= 0 && (off as u64) < size => size as i64,
            SEEK_DATA | SEEK_HOLE => return Err(Errno::ENXIO),
            _ => return Err(Errno::EINVAL),
        };
        if new < 0 {
            return Err(Errno::EINVAL);
        }
        *pos = new as u64;
        Ok(new as u64)
    }

    /// `fstat`.
    pub fn stat(&self) -> Result<KStat, Errno> {
        match &self.node {
            Node::File(ino) | Node::Dir(ino) | Node::Device(_, Some(ino)) => {
                let s = crate::fs::with_client(|c| c.stat(*ino))?;
                Ok(KStat::from_nrfs(&s))
            }
            Node::Fifo(f) => match &f.file {
                FifoFile::Nrfs(ino) => {
                    let s = crate::fs::with_client(|c| c.stat(*ino))?;
                    Ok(KStat::from_nrfs(&s))
                }
                FifoFile::Hare(h) => h.stat(),
            },
            Node::Device(_, None) => {
                let mut s = KStat::synthetic(DEV_NRFS, 0, Kind::CharDev.mode_bits() | 0o620, 0);
                s.rdev = dev::makedev(5, 1);
                Ok(s)
            }
            Node::PipeRead(p) | Node::PipeWrite(p) => {
                Ok(KStat::synthetic(DEV_PIPE, p.id, 0o010600, 0))
            }
            Node::Socket(e) => Ok(KStat::synthetic(DEV_PIPE, e.id, 0o140777, 0)),
            Node::Inet(s) => Ok(KStat::synthetic(DEV_NET, s.ino, 0o140777, 0)),
            Node::Netlink(s) => Ok(KStat::synthetic(DEV_NET, s.ino, 0o140777, 0)),
            Node::Epoll(e) => Ok(KStat::synthetic(DEV_ANON, e.id, 0o600, 0)),
            Node::EventFd(e) => Ok(KStat::synthetic(DEV_ANON, e.id, 0o600, 0)),
            Node::TimerFd(t) => Ok(KStat::synthetic(DEV_ANON, t.id, 0o600, 0)),
            Node::SignalFd(s) => Ok(KStat::synthetic(DEV_ANON, s.id, 0o600, 0)),
            Node::ProcFile(place, data) => Ok(procfs::stat_of(*place, data.len() as u64)),
            Node::ProcDir(place) => Ok(procfs::stat_of(*place, 0)),
            Node::Mailbox(m) => Ok(KStat::synthetic(DEV_MSG, m.id, 0o140600, 0)),
            Node::Conn(c, _) => Ok(KStat::synthetic(DEV_MSG, c.mailbox(), 0o140600, 0)),
            Node::Hare(h) => h.stat(),
        }
    }

    /// `ftruncate`.
    pub fn truncate(&self, size: u64) -> Result<(), Errno> {
        match &self.node {
            Node::File(ino) if self.writable() => {
                crate::fs::admit_truncate(size)?;
                let t = crate::fs::now();
                crate::fs::with_client(|c| c.truncate(*ino, size, t))
            }
            Node::Hare(h) if self.writable() => h.truncate(size),
            // Linux answers EINVAL (not EBADF) for a descriptor not open for writing.
            _ => Err(Errno::EINVAL),
        }
    }

    /// The NR-FS inode this description names, if any.
    pub fn ino(&self) -> Option<Ino> {
        match &self.node {
            Node::File(i) | Node::Dir(i) | Node::Device(_, Some(i)) => Some(*i),
            Node::Fifo(FifoEnd {
                file: FifoFile::Nrfs(ino),
                ..
            }) => Some(*ino),
            _ => None,
        }
    }

    /// Whether a `fork` child leaves it behind: mailboxes and connection ends belong to one
    /// process (see `crate::mailbox`).
    pub fn stays_with_process(&self) -> bool {
        matches!(self.node, Node::Mailbox(_) | Node::Conn(..))
    }

    /// Whether it is in Hare (dropping it queues a close: see `crate::fs::hare::flush`).
    pub fn is_hare(&self) -> bool {
        self.hare().is_some()
    }

    /// Its Hare file (a Hare FIFO's too), if it is in Hare.
    pub fn hare(&self) -> Option<&HareNode> {
        match &self.node {
            Node::Hare(h)
            | Node::Fifo(FifoEnd {
                file: FifoFile::Hare(h),
                ..
            }) => Some(h),
            _ => None,
        }
    }

    /// Whether this is a terminal.
    pub fn is_tty(&self) -> bool {
        matches!(self.node, Node::Device(Device::Console, _))
    }

    /// [`OpenFile::poll`] and, for a file that counts what arrives to it (an internet socket),
    /// how many changes brought it something `wanted` asks for, read together: what an
    /// edge-triggered `epoll` interest compares (`None`: it goes by the file's announcements).
    pub fn poll_counted(&self, wanted: u16) -> (u16, Option<u64>) {
        match &self.node {
            Node::Inet(s) => s.poll_counted(wanted),
            _ => (self.poll(), None),
        }
    }

    /// The `poll` events (`POLLIN`, `POLLOUT`, `POLLHUP`, `POLLERR`) that hold now.
    pub fn poll(&self) -> u16 {
        use abi::poll::{POLLERR, POLLHUP, POLLIN, POLLOUT};
        match &self.node {
            Node::PipeRead(p) => {
                let (readable, _, hup, _) = p.poll_state();
                (if readable { POLLIN } else { 0 }) | if hup { POLLHUP } else { 0 }
            }
            Node::PipeWrite(p) => {
                let (_, writable, _, broken) = p.poll_state();
                (if writable { POLLOUT } else { 0 }) | if broken { POLLERR } else { 0 }
            }
            Node::Fifo(f) => {
                let (readable, writable, _, broken) = f.pipe.poll_state();
                let mut events = 0;
                if self.readable() {
                    events |= if readable { POLLIN } else { 0 };
                    events |= if f.hung_up() { POLLHUP } else { 0 };
                }
                if self.writable() {
                    events |= if writable { POLLOUT } else { 0 };
                    events |= if broken { POLLERR } else { 0 };
                }
                events
            }
            Node::Device(Device::Console, _) => {
                POLLOUT | if crate::tty::readable() { POLLIN } else { 0 }
            }
            Node::Mailbox(m) => {
                if m.has_pending() {
                    POLLIN
                } else {
                    0
                }
            }
            Node::Conn(c, end) => c.poll(*end),
            Node::Socket(e) => e.poll(),
            Node::Inet(s) => s.poll(),
            Node::Netlink(s) => s.poll(),
            Node::Epoll(e) => e.poll(),
            Node::EventFd(e) => e.poll(),
            Node::TimerFd(t) => t.poll(),
            Node::SignalFd(s) => s.poll(),
            _ => POLLIN | POLLOUT,
        }
    }

    /// Adds to `out` the keys whose change may change [`OpenFile::poll`]'s answer (none for
    /// a file that is always ready); `ENOMEM` if `out` cannot grow.
    pub fn poll_keys(&self, out: &mut Vec<PollKey>) -> Result<(), Errno> {
        let keys = match &self.node {
            Node::PipeRead(p) | Node::PipeWrite(p) => [Some(PollKey::Pipe(p.id)), None],
            Node::Fifo(f) => [Some(PollKey::Pipe(f.pipe.id)), None],
            Node::Device(Device::Console, _) => [Some(PollKey::Console), None],
            Node::Mailbox(m) => [Some(m.poll_key()), None],
            Node::Conn(c, _) => c.poll_keys().map(Some),
            Node::Socket(e) => e.poll_keys().map(Some),
            Node::Inet(s) => [Some(s.poll_key()), None],
            Node::Netlink(s) => [Some(s.poll_key()), None],
            Node::Epoll(e) => return e.poll_keys(out),
            Node::EventFd(e) => [Some(PollKey::Event(e.id)), None],
            Node::TimerFd(t) => [Some(PollKey::Event(t.id)), None],
            Node::SignalFd(s) => [s.poll_key(), None],
            _ => [None, None],
        };
        out.try_reserve(2).map_err(|_| Errno::ENOMEM)?;
        out.extend(keys.into_iter().flatten());
        Ok(())
    }
}

/// One descriptor.
#[derive(Clone)]
pub struct Fd {
    /// The open file.
    pub file: Arc<OpenFile>,
    /// `FD_CLOEXEC`.
    pub cloexec: bool,
}

/// A process's descriptors.
#[derive(Clone, Default)]
pub struct FdTable {
    /// The descriptors by number; `None` for a free slot.
    entries: Vec<Option<Fd>>,
}

impl FdTable {
    /// Descriptors 0, 1 and 2 on the console (the first process).
    pub fn console() -> FdTable {
        let tty = OpenFile::new(
            Node::Device(Device::Console, None),
            O_RDWR,
            b"/dev/console".to_vec(),
        );
        let fd = Fd {
            file: tty,
            cloexec: false,
        };
        FdTable {
            entries: alloc::vec![Some(fd.clone()), Some(fd.clone()), Some(fd)],
        }
    }

    /// The open file of `fd`.
    pub fn get(&self, fd: i32) -> Result<Arc<OpenFile>, Errno> {
        usize::try_from(fd)
            .ok()
            .and_then(|i| self.entries.get(i))
            .and_then(|e| e.as_ref())
            .map(|e| e.file.clone())
            .ok_or(Errno::EBADF)
    }

    /// The descriptor entry of `fd`.
    pub fn entry_mut(&mut self, fd: i32) -> Result<&mut Fd, Errno> {
        usize::try_from(fd)
            .ok()
            .and_then(|i| self.entries.get_mut(i))
            .and_then(|e| e.as_mut())
            .ok_or(Errno::EBADF)
    }

    /// Makes room for descriptor `slot` (a program picks it, up to [`MAX_FDS`]: `ENOMEM` if
    /// the table cannot grow that far).
    fn grow_to(&mut self, slot: usize) -> Result<(), Errno> {
        if slot >= self.entries.len() {
            self.entries
                .try_reserve(slot + 1 - self.entries.len())
                .map_err(|_| Errno::ENOMEM)?;
            self.entries.resize(slot + 1, None);
        }
        Ok(())
    }

    /// Installs `file` at the lowest free descriptor `>= min`.
    pub fn insert(&mut self, file: Arc<OpenFile>, cloexec: bool, min: usize) -> Result<i32, Errno> {
        let slot = (min..MAX_FDS)
            .find(|&i| self.entries.get(i).is_none_or(|e| e.is_none()))
            .ok_or(Errno::EMFILE)?;
        self.grow_to(slot)?;
        self.entries[slot] = Some(Fd { file, cloexec });
        Ok(slot as i32)
    }

    /// Whether a descriptor is free (`insert` would not answer `EMFILE`).
    pub fn has_room(&self) -> bool {
        self.entries.len() < MAX_FDS || self.entries.iter().any(|e| e.is_none())
    }

    /// Installs `file` at exactly `fd`, returning what was there (`dup2`; the caller drops it
    /// after releasing the table, since closing may call into the file system).
    pub fn insert_at(
        &mut self,
        fd: i32,
        file: Arc<OpenFile>,
        cloexec: bool,
    ) -> Result<Option<Fd>, Errno> {
        let slot = usize::try_from(fd)
            .ok()
            .filter(|&i| i < MAX_FDS)
            .ok_or(Errno::EBADF)?;
        self.grow_to(slot)?;
        Ok(self.entries[slot].replace(Fd { file, cloexec }))
    }

    /// Removes `fd` and returns it (the caller drops it after releasing the table).
    pub fn close(&mut self, fd: i32) -> Result<Fd, Errno> {
        let slot = usize::try_from(fd)
            .ok()
            .and_then(|i| self.entries.get_mut(i))
            .ok_or(Errno::EBADF)?;
        slot.take().ok_or(Errno::EBADF)
    }

    /// `close_range`: removes the descriptors `first..=last` and returns them (the caller drops
    /// them after releasing the table), or with `cloexec` marks them close-on-exec instead.
    pub fn close_range(
        &mut self,
        first: usize,
        last: usize,
        cloexec: bool,
    ) -> Result<Vec<Fd>, Errno> {
        let end = last.saturating_add(1).min(self.entries.len());
        let range = self
            .entries
            .get_mut(first.min(end)..end)
            .unwrap_or_default();
        let mut out = Vec::new();
        if cloexec {
            range.iter_mut().flatten().for_each(|f| f.cloexec = true);
        } else {
            out.try_reserve_exact(range.iter().flatten().count())
                .map_err(|_| Errno::ENOMEM)?;
            out.extend(range.iter_mut().filter_map(Option::take));
        }
        Ok(out)
    }

    /// The table a `fork` child gets: the same open files, less those that stay with their
    /// process ([`OpenFile::stays_with_process`]).
    pub fn for_child(&self) -> FdTable {
        let entries = self
            .entries
            .iter()
            .map(|e| e.clone().filter(|f| !f.file.stays_with_process()))
            .collect();
        FdTable { entries }
    }

    /// Removes every descriptor (process exit) and returns them.
    pub fn take_all(&mut self) -> Vec<Option<Fd>> {
        core::mem::take(&mut self.entries)
    }

    /// Removes the close-on-exec descriptors (`execve`) and returns them.
    pub fn take_cloexec(&mut self) -> Vec<Fd> {
        let mut out = Vec::new();
        for e in self.entries.iter_mut() {
            if e.as_ref().is_some_and(|f| f.cloexec) {
                out.extend(e.take());
            }
        }
        out
    }

    /// The open descriptors, in order.
    pub fn iter(&self) -> impl Iterator<Item = (i32, &Fd)> {
        self.entries
            .iter()
            .enumerate()
            .filter_map(|(i, e)| e.as_ref().map(|f| (i as i32, f)))
    }
}
