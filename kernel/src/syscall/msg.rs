//! Reef's message calls (fos §3.2.1): the name directory (`crate::names`) and mailboxes
//! (`crate::mailbox`): `reef_name_register`, `reef_name_unregister`, `reef_name_lookup`,
//! `reef_mbox_create`, `reef_mbox_connect`, `reef_mbox_accept`, `reef_mbox_notify`, and grants
//! over connections: `reef_grant`, `reef_grant_map`, `reef_grant_revoke`.

use super::SysResult;
use crate::arch::idt::InterruptFrame;
use crate::fd::{Node, OpenFile, O_NONBLOCK, O_RDWR};
use crate::fs::flags::O_CLOEXEC;
use crate::fs::hare;
use crate::mailbox::{self, Conn, End, Granted, Mailbox};
use crate::names::{self, Name};
use crate::proc::{self, Thread};
use crate::uaccess;
use crate::vm;
use abi::reef::{
    CONN_INFO_SIZE, NAME_MEMBER_SIZE, REEF_GRANT_WRITE, REEF_NAME_NEAREST, REEF_NAME_ROUND_ROBIN,
};
use abi::Errno;
use alloc::string::String;
use alloc::sync::Arc;
use msg::names::{Pick, NAME_MAX};
use msg::PAGE_SLOTS;

/// The name at `addr`, `len` bytes: `EINVAL` for an empty or too long one.
fn name_arg(addr: u64, len: u64) -> Result<Name, Errno> {
    if len == 0 || len > NAME_MAX as u64 {
        return Err(Errno::EINVAL);
    }
    let mut buf = [0u8; NAME_MAX];
    uaccess::copy_from_user(addr, &mut buf[..len as usize])?;
    Name::new(&buf[..len as usize])
}

/// How a lookup picks a member: `EINVAL` for another value than `REEF_NAME_NEAREST` or
/// `REEF_NAME_ROUND_ROBIN`.
fn pick_arg(how: u64) -> Result<Pick, Errno> {
    match how {
        REEF_NAME_NEAREST => Ok(Pick::Nearest),
        REEF_NAME_ROUND_ROBIN => Ok(Pick::RoundRobin),
        _ => Err(Errno::EINVAL),
    }
}

/// The flags of a call that makes a descriptor: `EINVAL` for any outside `allowed`.
fn flags_arg(flags: u64, allowed: u32) -> Result<(bool, bool), Errno> {
    if flags & !u64::from(allowed) != 0 {
        return Err(Errno::EINVAL);
    }
    let flags = flags as u32;
    Ok((flags & O_CLOEXEC != 0, flags & O_NONBLOCK != 0))
}

/// The caller's mailbox behind descriptor `fd`: `EBADF` for no descriptor, `ENOTSOCK` for
/// one that is not a mailbox.
fn mailbox_arg(me: &Thread, fd: u64) -> Result<Arc<Mailbox>, Errno> {
    let file = me.process.files.lock().get(fd as i32)?;
    match &file.node {
        Node::Mailbox(m) => Ok(m.clone()),
        _ => Err(Errno::ENOTSOCK),
    }
}

/// Installs `node` as a new descriptor. When none is left (`EMFILE`) the new file is dropped,
/// closing what it holds, after the table's lock is released.
fn install(me: &Thread, node: Node, path: String, flags: u32, cloexec: bool) -> Result<i32, Errno> {
    let file = OpenFile::new(node, O_RDWR | flags, path.into_bytes());
    let installed = me.process.files.lock().insert(file.clone(), cloexec, 0);
    drop(file);
    installed
}

/// Writes `data` to `out`; if that faults, closes `fd` again (its drop runs outside the table
/// lock) and answers `EFAULT`.
fn hand_out(me: &Thread, fd: i32, out: u64, data: &[u8]) -> SysResult {
    if let Err(e) = uaccess::copy_to_user(out, data) {
        let undone = me.process.files.lock().close(fd);
        drop(undone);
        return Err(e);
    }
    Ok(fd as u64)
}

/// `reef_name_register(name, len, mailbox_fd)`: `EINVAL` (a bad name), `ENOTSOCK` (not a
/// mailbox), `EPERM` (under `fleet/`, unless the caller is the fleet manager or registers its
/// own fleet's name), `EEXIST` (registered already), `ENOSPC` (the directory or the name is
/// full), `EDQUOT` (the caller holds `msg::names::NAMES_PER_PROCESS` registrations).
pub fn register(me: &Arc<Thread>, _: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    let name = name_arg(a[0], a[1])?;
    let mailbox = mailbox_arg(me, a[2])?;
    me.process.note_named();
    let reserved = crate::fleet::may_register(&me.process, &name);
    names::register(name, me.process.pid, mailbox.id, reserved)?;
    Ok(0)
}

/// `reef_name_unregister(name, len, mailbox_fd)`: `ENOENT` if the caller has not registered
/// that mailbox under `name`.
pub fn unregister(me: &Arc<Thread>, _: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    let name = name_arg(a[0], a[1])?;
    let mailbox = mailbox_arg(me, a[2])?;
    names::unregister(name, me.process.pid, mailbox.id)?;
    Ok(0)
}

/// `reef_name_lookup(name, len, how, out)`: `ENOENT` for a name nobody registered, `EINVAL`
/// for a bad `how`.
pub fn lookup(_: &Arc<Thread>, _: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    let name = name_arg(a[0], a[1])?;
    let pick = pick_arg(a[2])?;
    uaccess::check_range(a[3], NAME_MEMBER_SIZE)?;
    let m = names::lookup(name, pick)?;
    let mut out = [0u8; NAME_MEMBER_SIZE];
    out[..8].copy_from_slice(&m.mailbox.to_le_bytes());
    out[8..12].copy_from_slice(&m.pid.to_le_bytes());
    out[12..16].copy_from_slice(&m.core.to_le_bytes());
    out[16..20].copy_from_slice(&m.node.to_le_bytes());
    uaccess::copy_to_user(a[3], &out)?;
    Ok(0)
}

/// `reef_mbox_create(flags, events_out)`: `EINVAL` (flags), `ENOMEM`, `EMFILE`, `EFAULT`.
pub fn create(me: &Arc<Thread>, _: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    let (cloexec, nonblock) = flags_arg(a[0], O_CLOEXEC | O_NONBLOCK)?;
    uaccess::check_range(a[1], 8)?;
    let mailbox = Mailbox::new()?;
    let vm = me.process.vm();
    let events = mailbox.map_events(&vm)?;
    let path = alloc::format!("mailbox:[{}]", mailbox.id);
    let flags = if nonblock { O_NONBLOCK } else { 0 };
    let fd = match install(me, Node::Mailbox(mailbox), path, flags, cloexec) {
        Ok(fd) => fd,
        Err(e) => {
            vm.unmap(events, vm::PAGE_SIZE)?;
            return Err(e);
        }
    };
    hand_out(me, fd, a[1], &events.to_le_bytes())
}

/// What `connect` and `accept` write: the mapping's address, the mailbox, the slots, the
/// client's pid (0: the kernel).
fn conn_info(addr: u64, conn: &Conn) -> [u8; CONN_INFO_SIZE] {
    let mut out = [0u8; CONN_INFO_SIZE];
    out[..8].copy_from_slice(&addr.to_le_bytes());
    out[8..16].copy_from_slice(&conn.mailbox().to_le_bytes());
    out[16..20].copy_from_slice(&(PAGE_SLOTS as u32).to_le_bytes());
    out[20..24].copy_from_slice(&conn.client_pid().to_le_bytes());
    out
}

/// Maps `conn` into the caller, writes where to `out` and installs a descriptor for `end`;
/// returns the descriptor and the address.
/// On failure nothing is left mapped or installed and `conn` comes back with the error, its
/// end still open unless no descriptor was left (`EMFILE`).
fn open_end(
    me: &Thread,
    conn: Arc<Conn>,
    end: End,
    cloexec: bool,
    out: u64,
) -> Result<(i32, u64), (Errno, Arc<Conn>)> {
    let vm = me.process.vm();
    let addr = match conn.map(&vm) {
        Ok(addr) => addr,
        Err(e) => return Err((e, conn)),
    };
    let undo = |e: Errno, conn: Arc<Conn>| {
        let _ = vm.unmap(addr, 2 * vm::PAGE_SIZE);
        Err((e, conn))
    };
    if let Err(e) = uaccess::copy_to_user(out, &conn_info(addr, &conn)) {
        return undo(e, conn);
    }
    let path = alloc::format!("conn:[{}]", conn.mailbox());
    let file = OpenFile::new(Node::Conn(conn.clone(), end), O_RDWR, path.into_bytes());
    let installed = me.process.files.lock().insert(file.clone(), cloexec, 0);
    drop(file);
    match installed {
        Ok(fd) => Ok((fd, addr)),
        // Dropping the description closed the end (see `accept`).
        Err(e) => undo(e, conn),
    }
}

/// `reef_mbox_connect(name, len, how, out, flags)`: `EINVAL` (name, `how`, flags), `ENOENT`
/// (no such name), `ECONNREFUSED` (its mailbox is closing), `EAGAIN` (its backlog is full),
/// `ENOMEM`, `EMFILE`, `EFAULT`. The connection is offered to the owner only once the caller
/// has it, so a failed call leaves nothing behind.
pub fn connect(me: &Arc<Thread>, _: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    let name = name_arg(a[0], a[1])?;
    let pick = pick_arg(a[2])?;
    let (cloexec, _) = flags_arg(a[4], O_CLOEXEC)?;
    uaccess::check_range(a[3], CONN_INFO_SIZE)?;
    let member = names::lookup(name, pick)?;
    let mailbox = mailbox::find(member.pid, member.mailbox).ok_or(Errno::ECONNREFUSED)?;
    let conn = mailbox.new_connection(me.process.pid)?;
    let (fd, addr) = open_end(me, conn.clone(), End::Client, cloexec, a[3]).map_err(|(e, _)| e)?;
    if let Err(e) = mailbox.offer(conn) {
        let undone = me.process.files.lock().close(fd);
        drop(undone);
        me.process.vm().unmap(addr, 2 * vm::PAGE_SIZE)?;
        return Err(e);
    }
    Ok(fd as u64)
}

/// `reef_mbox_accept(mailbox_fd, flags, out)`: `EBADF`, `ENOTSOCK` (not a mailbox), `EINVAL`
/// (flags), `EAGAIN` (none waits, non-blocking), `EINTR`, `ENOMEM`, `EMFILE`, `EFAULT`. A
/// connection the caller could not take stays first in line.
pub fn accept(me: &Arc<Thread>, _: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    let (cloexec, nonblock) = flags_arg(a[1], O_CLOEXEC | O_NONBLOCK)?;
    let file = me.process.files.lock().get(a[0] as i32)?;
    let Node::Mailbox(mailbox) = &file.node else {
        return Err(Errno::ENOTSOCK);
    };
    uaccess::check_range(a[2], CONN_INFO_SIZE)?;
    // Linux's `accept` also looks for a free descriptor before it takes a connection; another
    // thread taking the last one meanwhile costs that connection (its client sees it end).
    if !me.process.files.lock().has_room() {
        return Err(Errno::EMFILE);
    }
    let conn = mailbox.accept(nonblock || file.flags() & O_NONBLOCK != 0)?;
    match open_end(me, conn, End::Server, cloexec, a[2]) {
        Ok((fd, _)) => Ok(fd as u64),
        Err((e, conn)) => {
            mailbox.put_back(conn);
            Err(e)
        }
    }
}

/// `reef_mbox_notify(conn_fd)`: `EBADF`, `ENOTSOCK` (not a connection), `EINVAL` (the
/// mailbox's own end: its owner wakes a client through the reply channel's futex).
pub fn notify(me: &Arc<Thread>, _: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    let file = me.process.files.lock().get(a[0] as i32)?;
    match &file.node {
        Node::Conn(c, End::Client) => {
            c.notify();
            Ok(0)
        }
        Node::Conn(_, End::Server) => Err(Errno::EINVAL),
        _ => Err(Errno::ENOTSOCK),
    }
}

/// The caller's connection end behind descriptor `fd`: `EBADF` for no descriptor, `ENOTSOCK`
/// for another kind of file.
fn conn_arg(me: &Thread, fd: u64) -> Result<(Arc<Conn>, End), Errno> {
    match &me.process.files.lock().get(fd as i32)?.node {
        Node::Conn(c, end) => Ok((c.clone(), *end)),
        _ => Err(Errno::ENOTSOCK),
    }
}

/// `reef_grant(conn_fd, addr, len, flags)`: `EBADF`, `ENOTSOCK`, `EINVAL` (flags; `addr` not
/// page-aligned; `len` 0; the range not within one `MAP_SHARED` or message mapping), `EFAULT`
/// (`addr` not mapped), `EACCES` (the mapping does not allow reading, or writing for
/// `REEF_GRANT_WRITE`), `ENOMEM` (memory, or the caller's granted pages would pass
/// `GRANT_PAGES_MAX`), `ENOSPC` (the connection holds `GRANTS_PER_CONN` grants), `EPIPE`
/// (the connection is closing), `EINTR`. `len` is rounded up to whole pages.
pub fn grant(me: &Arc<Thread>, _: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    if a[3] & !REEF_GRANT_WRITE != 0 || a[2] == 0 {
        return Err(Errno::EINVAL);
    }
    let (conn, end) = conn_arg(me, a[0])?;
    let len = a[2]
        .checked_next_multiple_of(vm::PAGE_SIZE)
        .ok_or(Errno::EINVAL)?;
    let pages = len / vm::PAGE_SIZE;
    let writable = a[3] & REEF_GRANT_WRITE != 0;
    let budget = me.process.grants.clone();
    budget.charge(pages)?;
    let frames = {
        let _mm = me.process.mm.lock();
        me.process
            .vm()
            .share_range(a[1], len, writable, || proc::sched::keep_going(me))
    };
    match frames {
        Ok(frames) => conn.grant(Granted::new(end, writable, frames, budget)),
        Err(e) => {
            budget.refund(pages);
            Err(e)
        }
    }
}

/// `reef_grant_map(conn_fd, id, len_out)`: `EBADF`, `ENOTSOCK`, `EPERM` (no grant `id` made
/// to the caller on this connection), `ENOMEM`, `EFAULT` (`len_out`: the mapping is undone).
pub fn grant_map(me: &Arc<Thread>, _: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    let (conn, end) = conn_arg(me, a[0])?;
    if a[2] != 0 {
        uaccess::check_range(a[2], 8)?;
    }
    let granted = conn.granted_to(end, a[1])?;
    let vm = me.process.vm();
    let (addr, len) = granted.map(&vm)?;
    if a[2] != 0 {
        if let Err(e) = uaccess::copy_to_user(a[2], &len.to_le_bytes()) {
            vm.unmap(addr, len)?;
            return Err(e);
        }
    }
    Ok(addr)
}

/// `reef_grant_revoke(conn_fd, id)`: `EBADF`, `ENOTSOCK`, `ENOENT` (the connection holds no
/// grant `id`), `EPERM` (the other end made it).
pub fn grant_revoke(me: &Arc<Thread>, _: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    let (conn, end) = conn_arg(me, a[0])?;
    conn.revoke(end, a[1])?;
    Ok(0)
}

/// `reef_fleet_resize(pid, name, len, op)`: the fleet manager tells the kernel that member
/// `pid` of fleet `name` joined or is to leave; for Hare's fleet the mount moves shards onto
/// the members that stay (`fs::hare::resize`, whose errors it returns: `EAGAIN` for a
/// member not registered yet, `EBUSY`, `EIO`, `ENOMEM`...). `EPERM` (not the manager),
/// `EINVAL` (op, name), `EFAULT`; 0 for any other fleet.
pub fn fleet_resize(me: &Arc<Thread>, _: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    let name = name_arg(a[1], a[2])?;
    msg::names::valid_name(name.as_bytes()).map_err(|_| Errno::EINVAL)?;
    crate::fleet::manager(&me.process)?;
    let pid = u32::try_from(a[0]).map_err(|_| Errno::ESRCH)?;
    let change = match a[3] {
        abi::reef::REEF_FLEET_JOIN => hare::Change::Join(pid),
        abi::reef::REEF_FLEET_LEAVE => hare::Change::Leave(pid),
        _ => return Err(Errno::EINVAL),
    };
    if name.as_bytes() == hare::FLEET {
        hare::resize(change)?;
    }
    Ok(0)
}

/// `reef_fleet_bind(pid, core, name, len, flags)`: the fleet manager makes process `pid` a
/// member of fleet `name` on `core`, owning it unless `REEF_FLEET_SHARED` (`fleet::bind`):
/// `EPERM` (the caller is not the manager), `EINVAL` (flags; core offline or out of range; a
/// name not under `fleet/` or not printable ASCII),
/// `EFAULT`, `ESRCH`, `EBUSY`.
pub fn fleet_bind(me: &Arc<Thread>, _: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    let name = name_arg(a[2], a[3])?;
    msg::names::valid_name(name.as_bytes()).map_err(|_| Errno::EINVAL)?;
    let pid = u32::try_from(a[0]).map_err(|_| Errno::ESRCH)?;
    if a[4] & !abi::reef::REEF_FLEET_SHARED != 0 {
        return Err(Errno::EINVAL);
    }
    let shared = a[4] & abi::reef::REEF_FLEET_SHARED != 0;
    crate::fleet::bind(&me.process, pid, a[1], name, shared)?;
    Ok(0)
}
