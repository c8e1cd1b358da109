//! `AF_UNIX` stream socket pairs (`fs::unix`): `socketpair`, `shutdown`, `sendto`, `recvfrom`.
//! `socket`, `bind`, `connect` and the rest answer `ENOSYS` (counted) until the networking
//! issue's socket layer exists; `read`, `write`, `poll` and `close` work on the ends as on any
//! descriptor.

use super::file::{file, install_pair, sigpipe, MAX_IO};
use super::SysResult;
use crate::arch::idt::InterruptFrame;
use crate::fd::{Node, OpenFile, O_NONBLOCK, O_RDWR};
use crate::fs::unix;
use crate::proc::Thread;
use crate::uaccess::{self, read_user, write_user};
use abi::Errno;
use alloc::sync::Arc;

/// `AF_UNIX` (also `PF_UNIX`, the one protocol a pair may name).
const AF_UNIX: u64 = 1;
/// `AF_INET`: a domain without pairs on Linux.
const AF_INET: u64 = 2;
/// `AF_INET6`: a domain without pairs on Linux.
const AF_INET6: u64 = 10;
/// A byte stream: the one type Reef's pairs have.
const SOCK_STREAM: u64 = 1;
/// Datagrams: not built.
const SOCK_DGRAM: u64 = 2;
/// Sequenced packets: not built.
const SOCK_SEQPACKET: u64 = 5;
/// `socketpair`'s type flag: both ends `O_NONBLOCK`.
const SOCK_NONBLOCK: u64 = 0o4000;
/// `socketpair`'s type flag: both descriptors close-on-exec.
const SOCK_CLOEXEC: u64 = 0o2000000;
/// `send`/`recv` flag: this call does not block.
const MSG_DONTWAIT: u64 = 0x40;
/// `send` flag: `EPIPE` without SIGPIPE.
const MSG_NOSIGNAL: u64 = 0x4000;
/// `send` flag: more data follows (a hint; a pair sends at once anyway).
const MSG_MORE: u64 = 0x8000;

/// `socketpair(domain, type, protocol, sv)`: `AF_UNIX` stream pairs only. As Linux:
/// `EOPNOTSUPP` for `AF_INET` and `AF_INET6` (no pairs there), `EAFNOSUPPORT` for another
/// domain, `EINVAL` for an unknown type or flag, `EPROTONOSUPPORT` for a protocol other than 0
/// or `PF_UNIX`; and `EOPNOTSUPP` for datagram and seqpacket pairs, which Reef does not have.
pub fn socketpair(me: &Arc<Thread>, _: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    match a[0] {
        AF_UNIX => {}
        AF_INET | AF_INET6 => return Err(Errno::EOPNOTSUPP),
        _ => return Err(Errno::EAFNOSUPPORT),
    }
    let flags = a[1] & !0xf;
    if flags & !(SOCK_NONBLOCK | SOCK_CLOEXEC) != 0 {
        return Err(Errno::EINVAL);
    }
    match a[1] & 0xf {
        SOCK_STREAM => {}
        SOCK_DGRAM | SOCK_SEQPACKET => return Err(Errno::EOPNOTSUPP),
        _ => return Err(Errno::EINVAL),
    }
    if a[2] != 0 && a[2] != AF_UNIX {
        return Err(Errno::EPROTONOSUPPORT);
    }
    uaccess::check_range(a[3], 8)?;
    let nonblock = if flags & SOCK_NONBLOCK != 0 {
        O_NONBLOCK
    } else {
        0
    };
    let cloexec = flags & SOCK_CLOEXEC != 0;
    let (x, y) = unix::pair();
    let open = |e: Arc<unix::SocketEnd>| {
        let name = alloc::format!("socket:[{}]", e.id).into_bytes();
        OpenFile::new(Node::Socket(e), O_RDWR | nonblock, name)
    };
    install_pair(me, [open(x), open(y)], cloexec, a[3])
}

/// The socket end descriptor `fd` names: `EBADF`, or `ENOTSOCK` for another kind of file.
fn socket_of(me: &Thread, fd: u64) -> Result<(Arc<OpenFile>, Arc<unix::SocketEnd>), Errno> {
    let f = file(me, fd)?;
    let end = f.socket().cloned().ok_or(Errno::ENOTSOCK)?;
    Ok((f, end))
}

/// `shutdown(fd, how)`: `SHUT_RD`, `SHUT_WR` or `SHUT_RDWR`, else `EINVAL`.
pub fn shutdown(me: &Arc<Thread>, _: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    let (_, end) = socket_of(me, a[0])?;
    end.shutdown(a[1])?;
    Ok(0)
}

/// `sendto(fd, buf, len, flags, addr, addrlen)`: writes up to 1 MiB of `buf`. `EISCONN` with
/// an address (the pair is connected), `EOPNOTSUPP` for flags other than `MSG_DONTWAIT`,
/// `MSG_NOSIGNAL` (no SIGPIPE with `EPIPE`) and `MSG_MORE` (accepted, nothing to gather).
pub fn sendto(me: &Arc<Thread>, _: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    let (f, end) = socket_of(me, a[0])?;
    let flags = a[3];
    if flags & !(MSG_DONTWAIT | MSG_NOSIGNAL | MSG_MORE) != 0 {
        return Err(Errno::EOPNOTSUPP);
    }
    if a[4] != 0 {
        return Err(Errno::EISCONN);
    }
    let len = (a[2] as usize).min(MAX_IO);
    uaccess::check_range(a[1], len)?;
    let mut buf = crate::mm::zeroed_buffer(len)?;
    uaccess::copy_from_user(a[1], &mut buf)?;
    let r = end.write(&buf, f.nonblock() || flags & MSG_DONTWAIT != 0);
    if flags & MSG_NOSIGNAL != 0 {
        r.map(|n| n as u64)
    } else {
        sigpipe(me, r).map(|n| n as u64)
    }
}

/// `recvfrom(fd, buf, len, flags, addr, addrlen)`: reads up to 1 MiB into `buf`; the source
/// address is the peer's, which a pair's ends do not have, so `*addrlen` becomes 0 as on Linux
/// (`EINVAL` for a negative one). `EOPNOTSUPP` for
/// flags other than `MSG_DONTWAIT` (`MSG_PEEK` and `MSG_WAITALL` are not built).
pub fn recvfrom(me: &Arc<Thread>, _: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    let (f, end) = socket_of(me, a[0])?;
    let flags = a[3];
    if flags & !MSG_DONTWAIT != 0 {
        return Err(Errno::EOPNOTSUPP);
    }
    let len = (a[2] as usize).min(MAX_IO);
    uaccess::check_range(a[1], len)?;
    let named = a[4] != 0;
    if named {
        let room: u32 = read_user(a[5])?;
        if (room as i32) < 0 {
            return Err(Errno::EINVAL);
        }
    }
    let mut buf = crate::mm::zeroed_buffer(len)?;
    let n = end.read(&mut buf, f.nonblock() || flags & MSG_DONTWAIT != 0)?;
    uaccess::copy_to_user(a[1], &buf[..n])?;
    if named {
        write_user(a[5], &0u32)?;
    }
    Ok(n as u64)
}
