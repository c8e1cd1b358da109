//! Calls on descriptors: reading and writing, offsets, duplication, descriptor flags, `fstat`,
//! directory listing, pipes and `sendfile`.

use super::SysResult;
use crate::arch::idt::InterruptFrame;
use crate::fd::{KStat, Node, OpenFile, MAX_FDS, O_APPEND, O_NONBLOCK, O_RDONLY, O_RDWR, O_WRONLY};
use crate::fs::flags::{O_CLOEXEC, O_DIRECT, O_NOATIME};
use crate::fs::pipe::Pipe;
use crate::fs::procfs;
use crate::proc::signal::{self, SigInfo};
use crate::proc::{sched, Thread};
use crate::uaccess::{self, read_user, write_user};
use abi::Errno;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::sync::atomic::Ordering;

/// Largest transfer of one read (a longer request reads less, as POSIX allows) and the chunk
/// size of writes.
pub(super) const MAX_IO: usize = 1 << 20;
/// Most iovec entries (`IOV_MAX`).
pub(super) const IOV_MAX: u64 = 1024;

/// The open file of descriptor `fd`.
pub fn file(me: &Thread, fd: u64) -> Result<Arc<OpenFile>, Errno> {
    me.process.files.lock().get(fd as i32)
}

/// `fgetxattr`, `fsetxattr`, `flistxattr`, `fremovexattr`: as [`super::path::xattr`] on the
/// open file (`EBADF` for a bad descriptor).
pub fn fxattr(me: &Arc<Thread>, f: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    file(me, a[0])?;
    super::path::no_xattrs(f.rax as usize)
}

/// `write` to a pipe without readers raises SIGPIPE, as on Linux.
pub(super) fn sigpipe(me: &Arc<Thread>, r: Result<usize, Errno>) -> Result<usize, Errno> {
    if r == Err(Errno::EPIPE) {
        signal::send_thread(me, signal::SIGPIPE, SigInfo::user(me.process.pid));
    }
    r
}

/// Writes `len` bytes of user memory at `addr` to `f`, a chunk at a time, at the file offset
/// (`at == None`) or at a position; returns the bytes written (short only if a later chunk
/// failed after an earlier one went through, as Linux reports).
fn write_user_data(
    me: &Arc<Thread>,
    f: &OpenFile,
    addr: u64,
    len: usize,
    at: Option<u64>,
) -> Result<usize, Errno> {
    uaccess::check_range(addr, len)?;
    let mut done = 0;
    loop {
        if done > 0 && !sched::keep_going(me) {
            return Ok(done);
        }
        let n = (len - done).min(MAX_IO);
        let mut buf = crate::mm::zeroed_buffer(n)?;
        let r = uaccess::copy_from_user(addr + done as u64, &mut buf).and_then(|()| match at {
            None => f.write(buf),
            Some(off) => f.pwrite(buf, off + done as u64),
        });
        match sigpipe(me, r) {
            Ok(w) => {
                done += w;
                if w < n || done == len {
                    return Ok(done);
                }
            }
            Err(e) if done == 0 => return Err(e),
            Err(_) => return Ok(done),
        }
    }
}

/// `read(fd, buf, count)`: reads at most [`MAX_IO`] bytes at the file offset; if copying them
/// out faults, the offset is moved back and the fault returned.
pub fn read(me: &Arc<Thread>, _: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    let f = file(me, a[0])?;
    let len = (a[2] as usize).min(MAX_IO);
    uaccess::check_range(a[1], len)?;
    let data = f.read_vec(len)?;
    if let Err(e) = uaccess::copy_to_user(a[1], &data) {
        f.unread(data.len());
        return Err(e);
    }
    Ok(data.len() as u64)
}

/// `write(fd, buf, count)`: writes at the file offset (at the end under `O_APPEND`), a chunk
/// at a time; `EPIPE` with SIGPIPE for a pipe without readers.
pub fn write(me: &Arc<Thread>, _: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    let f = file(me, a[0])?;
    Ok(write_user_data(me, &f, a[1], a[2] as usize, None)? as u64)
}

/// A position argument: negative is EINVAL.
fn position(v: u64) -> Result<u64, Errno> {
    if (v as i64) < 0 {
        Err(Errno::EINVAL)
    } else {
        Ok(v)
    }
}

/// `pread64(fd, buf, count, offset)`: reads at most [`MAX_IO`] bytes at `offset` without
/// moving the file offset; `EINVAL` for a negative `offset`.
pub fn pread64(me: &Arc<Thread>, _: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    let f = file(me, a[0])?;
    let off = position(a[3])?;
    let len = (a[2] as usize).min(MAX_IO);
    uaccess::check_range(a[1], len)?;
    let data = f.pread_vec(len, off)?;
    uaccess::copy_to_user(a[1], &data)?;
    Ok(data.len() as u64)
}

/// `pwrite64(fd, buf, count, offset)`: writes at `offset` without moving the file offset;
/// `EINVAL` for a negative `offset`.
pub fn pwrite64(me: &Arc<Thread>, _: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    let f = file(me, a[0])?;
    let off = position(a[3])?;
    Ok(write_user_data(me, &f, a[1], a[2] as usize, Some(off))? as u64)
}

/// Reads `count` `struct iovec`s (base, length) from `addr` and checks each buffer; `EINVAL`
/// for more than [`IOV_MAX`] entries or a total length beyond `isize::MAX`.
pub(super) fn iovecs(addr: u64, count: u64) -> Result<Vec<[u64; 2]>, Errno> {
    if count > IOV_MAX {
        return Err(Errno::EINVAL);
    }
    let v: Vec<[u64; 2]> = (0..count)
        .map(|i| read_user::<[u64; 2]>(addr + 16 * i))
        .collect::<Result<_, _>>()?;
    let mut total: u64 = 0;
    for [base, len] in &v {
        uaccess::check_range(*base, *len as usize)?;
        total = total.checked_add(*len).ok_or(Errno::EINVAL)?;
    }
    if total > isize::MAX as u64 {
        return Err(Errno::EINVAL);
    }
    Ok(v)
}

/// `writev`/`pwritev`: the buffers gathered into one write (so one `O_APPEND` record or one
/// atomic pipe write), at most [`MAX_IO`] bytes.
fn gather_write(me: &Arc<Thread>, a: [u64; 6], at: Option<u64>) -> SysResult {
    let f = file(me, a[0])?;
    let mut data = Vec::new();
    for [base, len] in iovecs(a[1], a[2])? {
        let len = (len as usize).min(MAX_IO - data.len());
        let start = data.len();
        data.try_reserve(len).map_err(|_| Errno::ENOMEM)?;
        data.resize(start + len, 0);
        uaccess::copy_from_user(base, &mut data[start..])?;
    }
    let r = match at {
        None => f.write(data),
        Some(off) => f.pwrite(data, off),
    };
    Ok(sigpipe(me, r)? as u64)
}

/// `readv`/`preadv`: one read scattered over the buffers.
fn scatter_read(me: &Arc<Thread>, a: [u64; 6], at: Option<u64>) -> SysResult {
    let f = file(me, a[0])?;
    let vecs = iovecs(a[1], a[2])?;
    let total: usize = vecs
        .iter()
        .map(|v| v[1] as usize)
        .sum::<usize>()
        .min(MAX_IO);
    let mut buf = crate::mm::zeroed_buffer(total)?;
    let n = match at {
        None => f.read(&mut buf)?,
        Some(off) => f.pread(&mut buf, off)?,
    };
    let mut done = 0;
    for [base, len] in vecs {
        if done == n {
            break;
        }
        let take = (len as usize).min(n - done);
        if let Err(e) = uaccess::copy_to_user(base, &buf[done..done + take]) {
            if at.is_none() {
                f.unread(n - done);
            }
            return if done > 0 { Ok(done as u64) } else { Err(e) };
        }
        done += take;
    }
    Ok(n as u64)
}

/// `writev(fd, iov, iovcnt)`: one write of the gathered buffers at the file offset.
pub fn writev(me: &Arc<Thread>, _: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    gather_write(me, a, None)
}

/// `readv(fd, iov, iovcnt)`: one read at the file offset, scattered over the buffers.
pub fn readv(me: &Arc<Thread>, _: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    scatter_read(me, a, None)
}

/// `pwritev(fd, iov, iovcnt, offset)`: `writev` at `offset`, without moving the file offset;
/// `EINVAL` for a negative `offset`.
pub fn pwritev(me: &Arc<Thread>, _: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    let off = position(a[3])?;
    gather_write(me, a, Some(off))
}

/// `preadv(fd, iov, iovcnt, offset)`: `readv` at `offset`, without moving the file offset;
/// `EINVAL` for a negative `offset`.
pub fn preadv(me: &Arc<Thread>, _: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    let off = position(a[3])?;
    scatter_read(me, a, Some(off))
}

/// `lseek(fd, offset, whence)`: moves the file offset ([`OpenFile::seek`]); `EINVAL` for a
/// `whence` out of range.
pub fn lseek(me: &Arc<Thread>, _: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    let whence = u32::try_from(a[2]).map_err(|_| Errno::EINVAL)?;
    file(me, a[0])?.seek(a[1] as i64, whence)
}

/// `close(fd)`: removes the descriptor and lets go of its description; `EBADF` if `fd` is not
/// open.
pub fn close(me: &Arc<Thread>, _: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    let closed = me.process.files.lock().close(a[0] as i32)?;
    crate::fs::descriptors_closed(me.process.pid, [closed.file]);
    Ok(0)
}

/// `close_range(first, last, flags)`: closes the descriptors `first..=last` (those open), or
/// with `CLOSE_RANGE_CLOEXEC` marks them close-on-exec. `CLOSE_RANGE_UNSHARE` (give the
/// thread its own table first) is what Linux's call does anyway for a process of one thread;
/// a process's threads share one table in Reef, so with several it is `EINVAL` rather than
/// closing the other threads' descriptors. `EINVAL` for other flags or `first > last`.
pub fn close_range(me: &Arc<Thread>, _: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    const CLOSE_RANGE_UNSHARE: u64 = 2;
    const CLOSE_RANGE_CLOEXEC: u64 = 4;
    let (first, last, flags) = (a[0] as u32, a[1] as u32, a[2]);
    if flags & !(CLOSE_RANGE_UNSHARE | CLOSE_RANGE_CLOEXEC) != 0
        || first > last
        || flags & CLOSE_RANGE_UNSHARE != 0 && me.process.threads.lock().len() > 1
    {
        return Err(Errno::EINVAL);
    }
    let closed = me.process.files.lock().close_range(
        first as usize,
        last as usize,
        flags & CLOSE_RANGE_CLOEXEC != 0,
    )?;
    crate::fs::descriptors_closed(me.process.pid, closed.into_iter().map(|f| f.file));
    Ok(0)
}

/// `dup(oldfd)`: a copy of `oldfd` at the lowest free descriptor, without close-on-exec.
pub fn dup(me: &Arc<Thread>, _: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    let mut files = me.process.files.lock();
    let f = files.get(a[0] as i32)?;
    Ok(files.insert(f, false, 0)? as u64)
}

/// `dup2(oldfd, newfd)`: makes `newfd` a copy of `oldfd` without close-on-exec, closing what
/// `newfd` held; nothing to do when `newfd` is `oldfd` (if open).
pub fn dup2(me: &Arc<Thread>, _: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    let replaced = {
        let mut files = me.process.files.lock();
        let f = files.get(a[0] as i32)?;
        if a[0] == a[1] {
            return Ok(a[1]);
        }
        files.insert_at(a[1] as i32, f, false)?
    };
    crate::fs::descriptors_closed(me.process.pid, replaced.map(|r| r.file));
    Ok(a[1])
}

/// `dup3(oldfd, newfd, flags)`: `dup2` with `O_CLOEXEC` the only flag; `EINVAL` for another
/// flag or for `newfd` equal to `oldfd`.
pub fn dup3(me: &Arc<Thread>, _: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    let cloexec = u64::from(O_CLOEXEC);
    if a[2] & !cloexec != 0 {
        return Err(Errno::EINVAL);
    }
    let replaced = {
        let mut files = me.process.files.lock();
        let f = files.get(a[0] as i32)?;
        if a[0] == a[1] {
            return Err(Errno::EINVAL);
        }
        files.insert_at(a[1] as i32, f, a[2] & cloexec != 0)?
    };
    crate::fs::descriptors_closed(me.process.pid, replaced.map(|r| r.file));
    Ok(a[1])
}

/// A record-lock command of `fcntl`.
#[derive(Clone, Copy, PartialEq, Eq)]
struct RecordCmd {
    /// `F_GETLK` or `F_OFD_GETLK` (else a set).
    get: bool,
    /// An open file description lock (`F_OFD_*`), else a process's.
    ofd: bool,
    /// Wait while another owner's lock conflicts (`F_SETLKW`, `F_OFD_SETLKW`).
    wait: bool,
}

impl RecordCmd {
    /// The record-lock command `cmd` is, if it is one.
    fn of(cmd: u64) -> Option<RecordCmd> {
        let (get, ofd, wait) = match cmd {
            5 => (true, false, false),
            6 => (false, false, false),
            7 => (false, false, true),
            36 => (true, true, false),
            37 => (false, true, false),
            38 => (false, true, true),
            _ => return None,
        };
        Some(RecordCmd { get, ofd, wait })
    }
}

/// The record-lock commands of `fcntl` with the `struct flock` at `arg` (`crate::fs::lock`):
/// the range from `l_whence` (`SEEK_SET`, `SEEK_CUR`, `SEEK_END`), `l_start` and `l_len` (0: to
/// the end, negative: before `l_start`); `F_RDLCK` needs a readable and `F_WRLCK` a writable
/// descriptor (`EBADF`); `F_GETLK` answers the first conflicting lock (`l_pid` -1 for an OFD
/// lock) or `F_UNLCK`; `EAGAIN` for a conflict without waiting, `EINTR` for a wait a signal
/// ends; `EINVAL` for a bad type, whence or range, an OFD request with `l_pid` set, or a file
/// Reef keeps no locks for.
fn record_lock(me: &Arc<Thread>, f: &Arc<OpenFile>, cmd: RecordCmd, arg: u64) -> SysResult {
    const F_RDLCK: i16 = 0;
    const F_WRLCK: i16 = 1;
    const F_UNLCK: i16 = 2;
    let mut fl = [0u8; 32];
    uaccess::copy_from_user(arg, &mut fl)?;
    let short = |at: usize| i16::from_le_bytes([fl[at], fl[at + 1]]);
    let long = |at: usize| i64::from_le_bytes(fl[at..at + 8].try_into().expect("8 bytes"));
    let (ty, whence, start, len) = (short(0), short(2), long(8), long(16));
    let pid = i32::from_le_bytes(fl[24..28].try_into().expect("4 bytes"));
    let ofd = cmd.ofd;
    if ofd && pid != 0 {
        return Err(Errno::EINVAL);
    }
    let kind = match ty {
        F_RDLCK => Some(locks::Kind::Read),
        F_WRLCK => Some(locks::Kind::Write),
        F_UNLCK => None,
        _ => return Err(Errno::EINVAL),
    };
    let base = match whence {
        0 => 0,
        1 => *f.pos.lock() as i64,
        2 => f.stat()?.size as i64,
        _ => return Err(Errno::EINVAL),
    };
    let from = base.checked_add(start).ok_or(Errno::EOVERFLOW)?;
    let (lo, hi) = match len {
        0 => (from, None),
        l if l > 0 => (from, Some(from.checked_add(l).ok_or(Errno::EOVERFLOW)?)),
        l => (from.checked_add(l).ok_or(Errno::EINVAL)?, Some(from)),
    };
    if lo < 0 {
        return Err(Errno::EINVAL);
    }
    let range = (lo as u64, hi.map_or(locks::EOF, |h| h as u64));
    let key = (crate::fs::lock::file_key(f)?, locks::Family::Record);
    let owner = if ofd {
        crate::fs::lock::description(f)
    } else {
        locks::Owner::Process(me.process.pid)
    };
    if cmd.get {
        let want = kind.ok_or(Errno::EINVAL)?;
        match crate::fs::lock::conflict(key, owner, want, range) {
            None => fl[0..2].copy_from_slice(&F_UNLCK.to_le_bytes()),
            Some(l) => {
                let ty = if l.kind == locks::Kind::Write {
                    F_WRLCK
                } else {
                    F_RDLCK
                };
                let len = if l.end == locks::EOF {
                    0
                } else {
                    l.end - l.start
                };
                let pid = match l.owner {
                    locks::Owner::Process(p) => p as i32,
                    locks::Owner::Description(_) => -1,
                };
                fl[0..2].copy_from_slice(&ty.to_le_bytes());
                fl[2..4].copy_from_slice(&0i16.to_le_bytes());
                fl[8..16].copy_from_slice(&l.start.to_le_bytes());
                fl[16..24].copy_from_slice(&len.to_le_bytes());
                fl[24..28].copy_from_slice(&pid.to_le_bytes());
            }
        }
        uaccess::copy_to_user(arg, &fl)?;
        return Ok(0);
    }
    match kind {
        Some(locks::Kind::Read) if !f.readable() => return Err(Errno::EBADF),
        Some(locks::Kind::Write) if !f.writable() => return Err(Errno::EBADF),
        _ => {}
    }
    crate::fs::lock::set(key, owner, kind, range, cmd.wait)?;
    Ok(0)
}

/// `flock(fd, op)`: `LOCK_SH`, `LOCK_EX` (converting a lock the description holds) or
/// `LOCK_UN`, with `LOCK_NB` not to wait (`EWOULDBLOCK`); whole-file locks of the open file
/// description, apart from record locks. `EINVAL` for another op or a file Reef keeps no locks
/// for, `EINTR` for a wait a signal ends.
pub fn flock(me: &Arc<Thread>, _: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    const LOCK_SH: u64 = 1;
    const LOCK_EX: u64 = 2;
    const LOCK_NB: u64 = 4;
    const LOCK_UN: u64 = 8;
    let f = file(me, a[0])?;
    let kind = match a[1] & !LOCK_NB {
        LOCK_SH => Some(locks::Kind::Read),
        LOCK_EX => Some(locks::Kind::Write),
        LOCK_UN => None,
        _ => return Err(Errno::EINVAL),
    };
    let key = (crate::fs::lock::file_key(&f)?, locks::Family::Flock);
    let owner = crate::fs::lock::description(&f);
    crate::fs::lock::set(key, owner, kind, (0, locks::EOF), a[1] & LOCK_NB == 0)?;
    Ok(0)
}

/// `fcntl(fd, cmd, arg)`: `F_DUPFD`/`F_DUPFD_CLOEXEC` (`EINVAL` for `arg` past the descriptor
/// limit), `F_GETFD`/`F_SETFD` (close-on-exec), `F_GETFL`/`F_SETFL` (only `O_APPEND`,
/// `O_NONBLOCK`, `O_DIRECT` and `O_NOATIME` change), `F_GETPIPE_SZ` (`EBADF` for anything
/// but a pipe) and the record locks ([`record_lock`]); any other `cmd` is `EINVAL`.
pub fn fcntl(me: &Arc<Thread>, _: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    const F_DUPFD: u64 = 0;
    const F_GETFD: u64 = 1;
    const F_SETFD: u64 = 2;
    const F_GETFL: u64 = 3;
    const F_SETFL: u64 = 4;
    const F_DUPFD_CLOEXEC: u64 = 1030;
    const F_GETPIPE_SZ: u64 = 1032;
    const SETTABLE: u32 = O_APPEND | O_NONBLOCK | O_DIRECT | O_NOATIME;
    if let Some(lock) = RecordCmd::of(a[1]) {
        let f = file(me, a[0])?;
        return record_lock(me, &f, lock, a[2]);
    }
    let mut files = me.process.files.lock();
    let fd = a[0] as i32;
    match a[1] {
        F_DUPFD | F_DUPFD_CLOEXEC => {
            let f = files.get(fd)?;
            let min = usize::try_from(a[2]).map_err(|_| Errno::EINVAL)?;
            if min >= MAX_FDS {
                return Err(Errno::EINVAL);
            }
            Ok(files.insert(f, a[1] == F_DUPFD_CLOEXEC, min)? as u64)
        }
        F_GETFD => Ok(files.entry_mut(fd)?.cloexec as u64),
        F_SETFD => {
            files.entry_mut(fd)?.cloexec = a[2] & 1 != 0;
            Ok(0)
        }
        F_GETFL => Ok(files.get(fd)?.flags() as u64),
        F_SETFL => {
            let f = files.get(fd)?;
            let old = f.flags();
            f.flags.store(
                (old & !SETTABLE) | (a[2] as u32 & SETTABLE),
                Ordering::Relaxed,
            );
            Ok(0)
        }
        F_GETPIPE_SZ => match files.get(fd)?.node {
            Node::PipeRead(_) | Node::PipeWrite(_) | Node::Fifo(_) => {
                Ok(crate::fs::pipe::CAPACITY as u64)
            }
            _ => Err(Errno::EBADF),
        },
        _ => Err(Errno::EINVAL),
    }
}

/// `ioctl(fd, request, arg)`: `FIOCLEX`, `FIONCLEX` and `FIONBIO` on any descriptor; a
/// terminal's requests go to [`crate::tty::ioctl`]; `FIONREAD` on a pipe's read end, a socket
/// or an NR-FS file (the bytes after the offset); the interface and route requests
/// (`SIOCGIF*`, ...) on a socket go to [`super::socket::interface_ioctl`]; anything else is
/// `ENOTTY`.
pub fn ioctl(me: &Arc<Thread>, _: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    const FIONREAD: u64 = 0x541b;
    const FIONBIO: u64 = 0x5421;
    const FIONCLEX: u64 = 0x5450;
    const FIOCLEX: u64 = 0x5451;
    let fd = a[0] as i32;
    let f = file(me, a[0])?;
    match a[1] {
        FIOCLEX | FIONCLEX => {
            me.process.files.lock().entry_mut(fd)?.cloexec = a[1] == FIOCLEX;
            return Ok(0);
        }
        FIONBIO => {
            let on: i32 = read_user(a[2])?;
            let old = f.flags();
            let new = if on != 0 {
                old | O_NONBLOCK
            } else {
                old & !O_NONBLOCK
            };
            f.flags.store(new, Ordering::Relaxed);
            return Ok(0);
        }
        _ => {}
    }
    if f.is_tty() {
        return crate::tty::ioctl(me, a[1], a[2]);
    }
    match (&f.node, a[1]) {
        (Node::Inet(_) | Node::Socket(_) | Node::Netlink(_), cmd)
            if super::socket::is_interface_request(cmd) =>
        {
            let inet = matches!(f.node, Node::Inet(_));
            super::socket::interface_ioctl(me, inet, cmd, a[2])
        }
        (Node::PipeRead(p), FIONREAD) => {
            write_user(a[2], &(p.available() as i32))?;
            Ok(0)
        }
        (Node::Fifo(f), FIONREAD) => {
            write_user(a[2], &(f.pipe.available() as i32))?;
            Ok(0)
        }
        (Node::Socket(e), FIONREAD) => {
            write_user(a[2], &(e.available() as i32))?;
            Ok(0)
        }
        (Node::Inet(s), FIONREAD) => {
            write_user(a[2], &(s.available() as i32))?;
            Ok(0)
        }
        (Node::File(_), FIONREAD) => {
            let size = f.stat()?.size;
            let pos = *f.pos.lock();
            write_user(
                a[2],
                &(size.saturating_sub(pos).min(i32::MAX as u64) as i32),
            )?;
            Ok(0)
        }
        _ => Err(Errno::ENOTTY),
    }
}

/// Writes `s` as the kernel's `struct stat` (144 bytes) to `addr`.
pub fn write_stat(addr: u64, s: &KStat) -> Result<(), Errno> {
    let words: [u64; 18] = [
        s.dev,
        s.ino,
        u64::from(s.nlink),
        u64::from(s.mode) | (u64::from(s.uid) << 32),
        u64::from(s.gid),
        s.rdev,
        s.size,
        4096,
        s.blocks,
        s.atime.sec as u64,
        u64::from(s.atime.nsec),
        s.mtime.sec as u64,
        u64::from(s.mtime.nsec),
        s.ctime.sec as u64,
        u64::from(s.ctime.nsec),
        0,
        0,
        0,
    ];
    write_user(addr, &words)
}

/// `fstat(fd, statbuf)`: writes the descriptor's `struct stat` to `statbuf`.
pub fn fstat(me: &Arc<Thread>, _: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    let st = file(me, a[0])?.stat()?;
    write_stat(a[1], &st)?;
    Ok(0)
}

/// `ftruncate(fd, length)`: sets the file's size ([`OpenFile::truncate`]; mappings lose the
/// pages past the new end, [`crate::filemap::truncated`]); `EINVAL` for a negative `length`.
pub fn ftruncate(me: &Arc<Thread>, _: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    let size = position(a[1])?;
    let f = file(me, a[0])?;
    f.truncate(size)?;
    if let Node::File(ino) = f.node {
        crate::filemap::truncated(ino, size);
    }
    Ok(0)
}

/// `fallocate(fd, mode, offset, len)`. NR-FS keeps files in memory and gives a page its frame
/// when it is written, so to allocate is to make the size: mode 0 extends a shorter file to
/// `offset + len` (the new bytes read as zeros), `FALLOC_FL_KEEP_SIZE` alone changes nothing,
/// `FALLOC_FL_PUNCH_HOLE` (which needs `KEEP_SIZE`) writes zeros over the part of the range
/// inside the file, `FALLOC_FL_ZERO_RANGE` over the whole range (extending the file unless
/// `KEEP_SIZE`); collapsing, inserting and unsharing ranges answer `EOPNOTSUPP`, as does a
/// file in Hare. Linux's errors otherwise: `EINVAL` for a negative offset, a length of 0 or
/// less, or a collapse or insert with other flags; `EOPNOTSUPP` for unknown mode bits, a hole
/// without `KEEP_SIZE`, a hole and a zero range at once; `EBADF` unless open for writing,
/// `ESPIPE` for a pipe, `EISDIR`, `ENODEV` for anything else not a regular file, `EFBIG` past
/// the largest file size.
pub fn fallocate(me: &Arc<Thread>, _: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    const KEEP_SIZE: u64 = 0x01;
    const PUNCH_HOLE: u64 = 0x02;
    const COLLAPSE_RANGE: u64 = 0x08;
    const ZERO_RANGE: u64 = 0x10;
    const INSERT_RANGE: u64 = 0x20;
    const UNSHARE_RANGE: u64 = 0x40;
    let mode = a[1] & 0xffff_ffff;
    let (off, len) = (a[2] as i64, a[3] as i64);
    if off < 0 || len <= 0 {
        return Err(Errno::EINVAL);
    }
    let known = KEEP_SIZE | PUNCH_HOLE | COLLAPSE_RANGE | ZERO_RANGE | INSERT_RANGE | UNSHARE_RANGE;
    if mode & !known != 0
        || mode & PUNCH_HOLE != 0 && mode & KEEP_SIZE == 0
        || mode & (PUNCH_HOLE | ZERO_RANGE) == PUNCH_HOLE | ZERO_RANGE
    {
        return Err(Errno::EOPNOTSUPP);
    }
    if mode & (COLLAPSE_RANGE | INSERT_RANGE) != 0 && mode & !(COLLAPSE_RANGE | INSERT_RANGE) != 0 {
        return Err(Errno::EINVAL);
    }
    let f = file(me, a[0])?;
    if !f.writable() {
        return Err(Errno::EBADF);
    }
    let ino = match f.node {
        Node::File(ino) => ino,
        Node::PipeRead(_) | Node::PipeWrite(_) | Node::Fifo(_) => return Err(Errno::ESPIPE),
        Node::Dir(_) | Node::ProcDir(_) => return Err(Errno::EISDIR),
        Node::Hare(_) => return Err(Errno::EOPNOTSUPP),
        _ => return Err(Errno::ENODEV),
    };
    let end = off.checked_add(len).ok_or(Errno::EFBIG)? as u64;
    if mode & (COLLAPSE_RANGE | INSERT_RANGE | UNSHARE_RANGE) != 0 {
        return Err(Errno::EOPNOTSUPP);
    }
    let size = crate::fs::with_client(|c| c.stat(ino))?.size;
    if mode & (PUNCH_HOLE | ZERO_RANGE) != 0 {
        let zero_end = if mode & KEEP_SIZE != 0 {
            end.min(size)
        } else {
            end
        };
        let zeros = crate::mm::zeroed_buffer(64 * 1024)?;
        let mut at = off as u64;
        while at < zero_end {
            let n = (zero_end - at).min(zeros.len() as u64) as usize;
            crate::fs::admit(n)?;
            let t = crate::fs::now();
            crate::fs::with_client(|c| c.write(ino, at, &zeros[..n], t))?;
            at += n as u64;
            if !sched::keep_going(me) {
                return Err(Errno::EINTR);
            }
        }
    }
    if mode & KEEP_SIZE == 0 && end > size {
        crate::fs::admit_truncate(end)?;
        let t = crate::fs::now();
        crate::fs::with_client(|c| c.truncate(ino, end, t))?;
    }
    Ok(0)
}

/// `fsync`, `fdatasync`, `syncfs`: NR-FS is in memory, so there is nothing to write back;
/// the descriptor is checked.
pub fn fsync(me: &Arc<Thread>, _: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    file(me, a[0])?;
    Ok(0)
}

/// `getdents64`: `struct linux_dirent64` records (inode, next offset, record length, type,
/// NUL-terminated name, padded to 8 bytes) for as many entries as fit.
pub fn getdents64(me: &Arc<Thread>, _: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    let f = file(me, a[0])?;
    let count = (a[2] as usize).min(MAX_IO);
    uaccess::check_range(a[1], count)?;
    let mut out = Vec::new();
    out.try_reserve_exact(count).map_err(|_| Errno::ENOMEM)?;
    // Hare's listing comes from its servers (the thread sleeps): taken before the position's
    // lock.
    let hare_entries = match &f.node {
        Node::Hare(h) => {
            let at = *f.pos.lock();
            Some(h.entries(at).map(|e| (at, e))?)
        }
        _ => None,
    };
    let mut pos = f.pos.lock();
    let push = |out: &mut Vec<u8>, ino: u64, next: u64, kind: u8, name: &[u8]| -> bool {
        let reclen = (19 + name.len() + 1).next_multiple_of(8);
        if out.len() + reclen > count {
            return false;
        }
        out.extend_from_slice(&ino.to_le_bytes());
        out.extend_from_slice(&next.to_le_bytes());
        out.extend_from_slice(&(reclen as u16).to_le_bytes());
        out.push(kind);
        out.extend_from_slice(name);
        out.resize(out.len() + reclen - 19 - name.len(), 0);
        true
    };
    // Whether an entry was left out because it did not fit (EINVAL if it was the first).
    let mut left_out = false;
    match &f.node {
        Node::Dir(ino) => {
            let max = count / 24 + 1;
            let entries = crate::fs::with_client(|c| c.read_dir(*ino, *pos, max))?;
            for e in entries {
                if !push(
                    &mut out,
                    e.ino,
                    e.next_cookie,
                    e.kind.dirent_type(),
                    &e.name,
                ) {
                    left_out = true;
                    break;
                }
                *pos = e.next_cookie;
            }
        }
        Node::ProcDir(place) => {
            let entries = procfs::list(*place)?;
            for (i, (ino, kind, name)) in entries.iter().enumerate().skip(*pos as usize) {
                if !push(&mut out, *ino, i as u64 + 1, *kind, name) {
                    left_out = true;
                    break;
                }
                *pos = i as u64 + 1;
            }
        }
        Node::Hare(_) => {
            let (at, entries) = hare_entries.ok_or(Errno::EIO)?;
            for (i, (ino, kind, name)) in entries.iter().enumerate() {
                let next = at + i as u64 + 1;
                if !push(&mut out, ino, next, kind.dirent_type(), name) {
                    left_out = true;
                    break;
                }
                *pos = next;
            }
        }
        _ => return Err(Errno::ENOTDIR),
    }
    drop(pos);
    if out.is_empty() && left_out {
        return Err(Errno::EINVAL);
    }
    uaccess::copy_to_user(a[1], &out)?;
    Ok(out.len() as u64)
}

/// `pipe2(pipefd, flags)`: a new pipe, its read and write ends stored at `pipefd`; `EINVAL`
/// for a flag other than `O_CLOEXEC` and `O_NONBLOCK`.
pub fn pipe2(me: &Arc<Thread>, _: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    let allowed = u64::from(O_CLOEXEC | O_NONBLOCK);
    if a[1] & !allowed != 0 {
        return Err(Errno::EINVAL);
    }
    uaccess::check_range(a[0], 8)?;
    let nonblock = a[1] as u32 & O_NONBLOCK;
    let cloexec = a[1] & u64::from(O_CLOEXEC) != 0;
    let p = Pipe::new();
    let name = alloc::format!("pipe:[{}]", p.id).into_bytes();
    let r = OpenFile::new(Node::PipeRead(p.clone()), O_RDONLY | nonblock, name.clone());
    let w = OpenFile::new(Node::PipeWrite(p), O_WRONLY | nonblock, name);
    install_pair(me, [r, w], cloexec, a[0])
}

/// `memfd_create(name, flags)`: an anonymous file, open for reading and writing, that lives in
/// memory until its last descriptor closes and its last mapping goes (Reef: an NR-FS file
/// without a name, [`crate::fs::unnamed`], so `ftruncate`, `mmap(MAP_SHARED)` across `fork`,
/// `/proc/<pid>/fd/<n>` (`/memfd:NAME (deleted)`) and everything else behave as for a file).
/// Flags `MFD_CLOEXEC` and `MFD_ALLOW_SEALING`; Reef keeps no seals, so `F_ADD_SEALS` answers
/// EINVAL as for a file that cannot be sealed. EINVAL for other flags or a name of more than
/// 249 bytes.
pub fn memfd_create(me: &Arc<Thread>, _: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    const MFD_CLOEXEC: u64 = 1;
    const MFD_ALLOW_SEALING: u64 = 2;
    const NAME_MAX: usize = 249;
    if a[1] & !(MFD_CLOEXEC | MFD_ALLOW_SEALING) != 0 {
        return Err(Errno::EINVAL);
    }
    let name = uaccess::read_cstring(a[0], NAME_MAX).map_err(|e| match e {
        Errno::ENAMETOOLONG => Errno::EINVAL,
        e => e,
    })?;
    let mut shown = Vec::new();
    shown
        .try_reserve_exact(name.len() + 20)
        .map_err(|_| Errno::ENOMEM)?;
    shown.extend_from_slice(b"/memfd:");
    shown.extend_from_slice(&name);
    shown.extend_from_slice(b" (deleted)");
    let ino = crate::fs::unnamed(&me.process, nrfs::ROOT_INO, b"/", 0o777)?;
    let f = OpenFile::new(Node::File(ino), O_RDWR, shown);
    let fd = me
        .process
        .files
        .lock()
        .insert(f, a[1] & MFD_CLOEXEC != 0, 0)?;
    Ok(fd as u64)
}

/// Gives `pair` the two lowest free descriptors and writes them to `addr` as `int[2]` (`pipe2`,
/// `socketpair`); on failure neither stays open.
pub(super) fn install_pair(
    me: &Arc<Thread>,
    pair: [Arc<OpenFile>; 2],
    cloexec: bool,
    addr: u64,
) -> SysResult {
    let [first, second] = pair;
    let fds = {
        let mut files = me.process.files.lock();
        let a = files.insert(first, cloexec, 0)?;
        match files.insert(second, cloexec, 0) {
            Ok(b) => [a, b],
            Err(e) => {
                let undone = files.close(a);
                drop(files);
                drop(undone);
                return Err(e);
            }
        }
    };
    if let Err(e) = write_user(addr, &fds) {
        let undone = {
            let mut files = me.process.files.lock();
            [files.close(fds[0]), files.close(fds[1])]
        };
        drop(undone);
        return Err(e);
    }
    Ok(0)
}

/// `pipe(pipefd)`: `pipe2` with no flags.
pub fn pipe(me: &Arc<Thread>, f: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    pipe2(me, f, [a[0], 0, 0, 0, 0, 0])
}

/// `sendfile(out, in, offset, count)`: copies from a file (at `*offset`, which is advanced,
/// or at its file offset) to any writable descriptor, 64 KiB at a time.
pub fn sendfile(me: &Arc<Thread>, _: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    let out = file(me, a[0])?;
    if !out.writable() {
        return Err(Errno::EBADF);
    }
    let input = file(me, a[1])?;
    let regular = match &input.node {
        Node::File(_) | Node::Device(..) => true,
        Node::Hare(h) => !h.is_dir(),
        _ => false,
    };
    if !regular || input.is_tty() {
        return Err(Errno::EINVAL);
    }
    let mut off = match a[2] {
        0 => None,
        p => Some(position(read_user::<u64>(p)?)?),
    };
    let done = copy(me, (&input, &mut off), (&out, &mut None), a[3] as usize)?;
    if let Some(o) = off {
        write_user(a[2], &o)?;
    }
    Ok(done as u64)
}

/// `fadvise64(fd, offset, len, advice)`: a hint Reef's in-memory files have no use for, so
/// after Linux's checks (`EBADF`, `ESPIPE` for a pipe or socket, `EINVAL` for an unknown advice or a
/// negative length) it does nothing.
pub fn fadvise64(me: &Arc<Thread>, _: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    /// `POSIX_FADV_NOREUSE`, the last advice.
    const LAST: u64 = 5;
    let f = file(me, a[0])?;
    if matches!(
        f.node,
        Node::PipeRead(_)
            | Node::PipeWrite(_)
            | Node::Fifo(_)
            | Node::Socket(_)
            | Node::Inet(_)
            | Node::Netlink(_)
    ) {
        return Err(Errno::ESPIPE);
    }
    if a[3] > LAST || (a[2] as i64) < 0 {
        return Err(Errno::EINVAL);
    }
    Ok(0)
}

/// `copy_file_range(in, off_in, out, off_out, len, flags)`: copies between two regular files,
/// each at `*off` (advanced) or at its file offset. `EINVAL` for flags, a file that is not
/// regular, or overlapping ranges of one file; `EBADF` unless `in` is readable and `out`
/// writable without `O_APPEND`; `EISDIR` for a directory.
pub fn copy_file_range(me: &Arc<Thread>, _: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    let (input, out) = (file(me, a[0])?, file(me, a[2])?);
    if a[5] != 0 {
        return Err(Errno::EINVAL);
    }
    if !input.readable() || !out.writable() || out.flags() & O_APPEND != 0 {
        return Err(Errno::EBADF);
    }
    let kind = |f: &OpenFile| match &f.node {
        Node::File(ino) => Ok(Some(*ino)),
        Node::Hare(h) if !h.is_dir() => Ok(None),
        Node::Dir(_) | Node::Hare(_) => Err(Errno::EISDIR),
        _ => Err(Errno::EINVAL),
    };
    let (from, to) = (kind(&input)?, kind(&out)?);
    let read_off = |p: u64| match p {
        0 => Ok(None),
        p => position(read_user::<u64>(p)?).map(Some),
    };
    let (mut off_in, mut off_out) = (read_off(a[1])?, read_off(a[3])?);
    let len = a[4] as usize;
    if from.is_some() && from == to {
        // One at a time: both may be the same description.
        let i = off_in.unwrap_or_else(|| *input.pos.lock());
        let o = off_out.unwrap_or_else(|| *out.pos.lock());
        if i < o.saturating_add(len as u64) && o < i.saturating_add(len as u64) {
            return Err(Errno::EINVAL);
        }
    }
    let done = copy(me, (&input, &mut off_in), (&out, &mut off_out), len)?;
    for (p, off) in [(a[1], off_in), (a[3], off_out)] {
        if let (true, Some(o)) = (p != 0, off) {
            write_user(p, &o)?;
        }
    }
    Ok(done as u64)
}

/// Copies up to `count` bytes (at most `0x7fff_f000`, as Linux) from `input` to `out`, 64 KiB at
/// a time, each at its position if given (advanced) or at its file offset; stops early at the
/// end of the input, a short write, a signal, or an error after some bytes went through.
fn copy(
    me: &Arc<Thread>,
    (input, in_at): (&OpenFile, &mut Option<u64>),
    (out, out_at): (&OpenFile, &mut Option<u64>),
    count: usize,
) -> Result<usize, Errno> {
    const CHUNK: usize = 64 * 1024;
    let count = count.min(0x7fff_f000);
    let mut done = 0;
    let mut buf = crate::mm::zeroed_buffer(CHUNK.min(count))?;
    while done < count {
        if done > 0 && !sched::keep_going(me) {
            break;
        }
        let want = (count - done).min(CHUNK);
        let n = match *in_at {
            Some(o) => input.pread(&mut buf[..want], o)?,
            None => input.read(&mut buf[..want])?,
        };
        if n == 0 {
            break;
        }
        let mut chunk = Vec::new();
        chunk.try_reserve_exact(n).map_err(|_| Errno::ENOMEM)?;
        chunk.extend_from_slice(&buf[..n]);
        let r = sigpipe(
            me,
            match *out_at {
                Some(o) => out.pwrite(chunk, o),
                None => out.write(chunk),
            },
        );
        let w = match r {
            Ok(w) => w,
            Err(e) if done == 0 => return Err(e),
            Err(_) => break,
        };
        done += w;
        if let Some(o) = in_at.as_mut() {
            *o += w as u64;
        }
        if let Some(o) = out_at.as_mut() {
            *o += w as u64;
        }
        if w < n {
            if in_at.is_none() {
                // The input's offset moved past what was written: give the rest back.
                const SEEK_CUR: u32 = 1;
                input.seek(-((n - w) as i64), SEEK_CUR)?;
            }
            break;
        }
    }
    Ok(done)
}
