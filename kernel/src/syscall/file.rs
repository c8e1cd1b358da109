//! Descriptor calls on open files (the console for now; regular files come with NR-FS).

use super::SysResult;
use crate::arch::idt::InterruptFrame;
use crate::fd::OpenFile;
use crate::proc::Thread;
use crate::uaccess::{self, read_user, write_user};
use abi::Errno;
use alloc::sync::Arc;
use alloc::vec;
use core::sync::atomic::Ordering;

/// Largest single transfer (bigger requests are shortened, as Linux does at 2 GiB).
const MAX_IO: usize = 1 << 20;
/// Most iovec entries (`IOV_MAX`).
const IOV_MAX: u64 = 1024;

fn file(me: &Thread, fd: u64) -> Result<Arc<OpenFile>, Errno> {
    me.process.files.lock().get(fd as i32)
}

pub fn read(me: &Arc<Thread>, _: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    let f = file(me, a[0])?;
    let len = (a[2] as usize).min(MAX_IO);
    uaccess::check_range(a[1], len)?;
    let mut buf = vec![0u8; len];
    let n = f.read(&mut buf)?;
    uaccess::copy_to_user(a[1], &buf[..n])?;
    Ok(n as u64)
}

pub fn write(me: &Arc<Thread>, _: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    let f = file(me, a[0])?;
    let len = (a[2] as usize).min(MAX_IO);
    let mut buf = vec![0u8; len];
    uaccess::copy_from_user(a[1], &mut buf)?;
    Ok(f.write(&buf)? as u64)
}

fn iovecs(addr: u64, count: u64) -> Result<alloc::vec::Vec<[u64; 2]>, Errno> {
    if count > IOV_MAX {
        return Err(Errno::EINVAL);
    }
    (0..count)
        .map(|i| read_user::<[u64; 2]>(addr + 16 * i))
        .collect()
}

pub fn writev(me: &Arc<Thread>, _: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    let f = file(me, a[0])?;
    let mut data = alloc::vec::Vec::new();
    for [base, len] in iovecs(a[1], a[2])? {
        let len = (len as usize).min(MAX_IO - data.len());
        let start = data.len();
        data.resize(start + len, 0);
        uaccess::copy_from_user(base, &mut data[start..])?;
    }
    Ok(f.write(&data)? as u64)
}

pub fn readv(me: &Arc<Thread>, _: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    let f = file(me, a[0])?;
    let vecs = iovecs(a[1], a[2])?;
    let total: usize = vecs
        .iter()
        .map(|v| v[1] as usize)
        .sum::<usize>()
        .min(MAX_IO);
    let mut buf = vec![0u8; total];
    let n = f.read(&mut buf)?;
    let mut done = 0;
    for [base, len] in vecs {
        if done == n {
            break;
        }
        let take = (len as usize).min(n - done);
        uaccess::copy_to_user(base, &buf[done..done + take])?;
        done += take;
    }
    Ok(n as u64)
}

pub fn close(me: &Arc<Thread>, _: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    me.process.files.lock().close(a[0] as i32)?;
    Ok(0)
}

pub fn dup(me: &Arc<Thread>, _: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    let mut files = me.process.files.lock();
    let f = files.get(a[0] as i32)?;
    Ok(files.insert(f, false, 0)? as u64)
}

pub fn dup2(me: &Arc<Thread>, _: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    let mut files = me.process.files.lock();
    let f = files.get(a[0] as i32)?;
    if a[0] != a[1] {
        files.insert_at(a[1] as i32, f, false)?;
    }
    Ok(a[1])
}

pub fn dup3(me: &Arc<Thread>, _: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    const O_CLOEXEC: u64 = 0o2000000;
    if a[0] == a[1] || a[2] & !O_CLOEXEC != 0 {
        return Err(Errno::EINVAL);
    }
    let mut files = me.process.files.lock();
    let f = files.get(a[0] as i32)?;
    files.insert_at(a[1] as i32, f, a[2] & O_CLOEXEC != 0)?;
    Ok(a[1])
}

pub fn fcntl(me: &Arc<Thread>, _: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    const F_DUPFD: u64 = 0;
    const F_GETFD: u64 = 1;
    const F_SETFD: u64 = 2;
    const F_GETFL: u64 = 3;
    const F_SETFL: u64 = 4;
    const F_DUPFD_CLOEXEC: u64 = 1030;
    const SETTABLE: u32 = crate::fd::O_APPEND | crate::fd::O_NONBLOCK;
    let mut files = me.process.files.lock();
    let fd = a[0] as i32;
    match a[1] {
        F_DUPFD | F_DUPFD_CLOEXEC => {
            let f = files.get(fd)?;
            let min = usize::try_from(a[2]).map_err(|_| Errno::EINVAL)?;
            if min >= crate::fd::MAX_FDS {
                return Err(Errno::EINVAL);
            }
            Ok(files.insert(f, a[1] == F_DUPFD_CLOEXEC, min)? as u64)
        }
        F_GETFD => Ok(files.entry_mut(fd)?.cloexec as u64),
        F_SETFD => {
            files.entry_mut(fd)?.cloexec = a[2] & 1 != 0;
            Ok(0)
        }
        F_GETFL => Ok(files.get(fd)?.flags.load(Ordering::Relaxed) as u64),
        F_SETFL => {
            let f = files.get(fd)?;
            let old = f.flags.load(Ordering::Relaxed);
            f.flags.store(
                (old & !SETTABLE) | (a[2] as u32 & SETTABLE),
                Ordering::Relaxed,
            );
            Ok(0)
        }
        _ => Err(Errno::EINVAL),
    }
}

pub fn ioctl(me: &Arc<Thread>, _: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    let f = file(me, a[0])?;
    if !f.is_tty() {
        return Err(Errno::ENOTTY);
    }
    crate::tty::ioctl(me, a[1], a[2])
}

pub fn lseek(me: &Arc<Thread>, _: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    let f = file(me, a[0])?;
    if f.is_tty() {
        return Err(Errno::ESPIPE);
    }
    Err(Errno::EINVAL)
}

pub fn fstat(me: &Arc<Thread>, _: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    let f = file(me, a[0])?;
    let mut st = [0u8; 144];
    if f.is_tty() {
        const S_IFCHR: u32 = 0o020000;
        st[24..28].copy_from_slice(&(S_IFCHR | 0o620).to_le_bytes());
        st[16..24].copy_from_slice(&1u64.to_le_bytes());
        st[40..48].copy_from_slice(&((5u64 << 8) | 1).to_le_bytes());
        st[56..64].copy_from_slice(&1024u64.to_le_bytes());
    }
    uaccess::copy_to_user(a[1], &st)?;
    Ok(0)
}

/// `poll` on the descriptors Reef has today (the console): POLLIN when keyboard input waits,
/// POLLOUT always, POLLNVAL for a closed descriptor. Sleeps on the console's input queue
/// between checks.
pub fn poll(me: &Arc<Thread>, _: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    const POLLIN: i16 = 1;
    const POLLOUT: i16 = 4;
    const POLLNVAL: i16 = 0x20;
    let (fds, nfds, timeout_ms) = (a[0], a[1], a[2] as i32);
    if nfds > crate::fd::MAX_FDS as u64 {
        return Err(Errno::EINVAL);
    }
    let deadline = (timeout_ms >= 0).then(|| crate::time::now_ns() + timeout_ms as u64 * 1_000_000);
    loop {
        let seq = crate::tty::input_queue().seq();
        let mut ready = 0;
        for i in 0..nfds {
            let at = fds + 8 * i;
            let entry: [u16; 4] = read_user(at)?;
            let fd = (u32::from(entry[0]) | (u32::from(entry[1]) << 16)) as i32;
            let events = entry[2] as i16;
            let revents = if fd < 0 {
                0
            } else {
                match file(me, fd as u64) {
                    Err(_) => POLLNVAL,
                    Ok(f) if f.is_tty() => {
                        let mut r = events & POLLOUT;
                        if events & POLLIN != 0 && crate::tty::readable() {
                            r |= POLLIN;
                        }
                        r
                    }
                    Ok(_) => events & (POLLIN | POLLOUT),
                }
            };
            write_user(at + 6, &(revents as u16))?;
            if revents != 0 {
                ready += 1;
            }
        }
        if ready > 0 || deadline.is_some_and(|d| crate::time::now_ns() >= d) {
            return Ok(ready);
        }
        if crate::tty::input_queue().wait(seq, deadline) == crate::proc::wait::Wake::Interrupted {
            return Err(Errno::EINTR);
        }
    }
}

/// `getcwd`: Reef has no `chdir` yet, so every process works in `/`.
pub fn getcwd(_: &Arc<Thread>, _: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    if a[1] < 2 {
        return Err(Errno::ERANGE);
    }
    uaccess::copy_to_user(a[0], b"/\0")?;
    Ok(2)
}
