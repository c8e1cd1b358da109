//! `poll`, `ppoll`, `select`, `pselect6` and the `epoll` calls: waiting until descriptors
//! are ready.
//!
//! Readiness comes from [`crate::fd::OpenFile::poll`]. A waiter scans its descriptors and, if
//! none is ready, sleeps on [`crate::fd::POLL_WAKE`] watching the keys of what it polls
//! ([`crate::fd::OpenFile::poll_keys`]: a pipe, the terminal, the frames of a connection's
//! channels or of a mailbox's eventcount), so only a change of one of them wakes it; it
//! registers before it scans again, so no change after that scan is lost. Regular files,
//! directories and memory devices are always ready. The sleep is also capped at one timer tick
//! (10 ms) as a safety net for readiness sources that do not notify.

use super::file::file;
use super::SysResult;
use crate::arch::idt::InterruptFrame;
use crate::fd::{Node, OpenFile, MAX_FDS, O_RDWR, POLL_WAKE};
use crate::fs::epoll::Epoll;
use crate::proc::signal;
use crate::proc::wait::{PollKey, Wake};
use crate::proc::Thread;
use crate::uaccess::{read_user, write_user};
use abi::poll::*;
use abi::Errno;
use alloc::sync::Arc;
use alloc::vec::Vec;

/// The events of `fd` among `wanted` (plus the always-reported error conditions).
/// With `keys`, also adds the keys whose change may change the answer.
fn events_of(
    me: &Thread,
    fd: i32,
    wanted: u16,
    keys: Option<&mut Vec<PollKey>>,
) -> Result<u16, Errno> {
    let Ok(f) = file(me, fd as u32 as u64) else {
        return Ok(POLLNVAL);
    };
    if let Some(keys) = keys {
        f.poll_keys(keys)?;
    }
    let mut ready = f.poll();
    if ready & POLLIN != 0 {
        ready |= POLLRDNORM;
    }
    if ready & POLLOUT != 0 {
        ready |= POLLWRNORM;
    }
    Ok(ready & (wanted | POLLERR | POLLHUP))
}

/// Scans with `scan` until it reports something ready, the deadline passes (`None`: never),
/// or a signal arrives (EINTR). `scan` counts what is ready and, given a vector, adds the
/// keys to watch.
fn wait_ready(
    me: &Arc<Thread>,
    deadline: Option<u64>,
    mut scan: impl FnMut(Option<&mut Vec<PollKey>>) -> Result<usize, Errno>,
) -> Result<usize, Errno> {
    loop {
        let mut keys = Vec::new();
        let n = scan(Some(&mut keys))?;
        let now = crate::time::now_ns();
        if n > 0 || deadline.is_some_and(|d| now >= d) {
            return Ok(n);
        }
        let tick = now + 10_000_000;
        let wake = deadline.map_or(tick, |d| d.min(tick));
        let mut again = Ok(0);
        let outcome = POLL_WAKE.wait(keys, Some(wake), || {
            again = scan(None);
            again != Ok(0)
        })?;
        match again? {
            0 if outcome == Wake::Interrupted || me.signal_pending() => return Err(Errno::EINTR),
            0 => {}
            n => return Ok(n),
        }
    }
}

/// Runs `body` with the signal mask `mask_addr` points to (if not 0), restoring the old mask
/// afterwards, or after the handler of the signal that interrupted it (`ppoll`, `pselect6`).
fn with_mask(
    me: &Arc<Thread>,
    mask_addr: u64,
    size: u64,
    body: impl FnOnce() -> SysResult,
) -> SysResult {
    if mask_addr == 0 {
        return body();
    }
    if size != 8 {
        return Err(Errno::EINVAL);
    }
    let mask: u64 = read_user(mask_addr)?;
    let old = signal::set_mask(me, 2, Some(mask))?;
    let r = body();
    if r == Err(Errno::EINTR) {
        // The handler runs with the call's mask; the old one comes back with its sigreturn
        // (as for rt_sigsuspend).
        me.signals.lock().saved = Some(old);
    } else {
        signal::set_mask(me, 2, Some(old))?;
    }
    r
}

/// A relative `struct timespec` timeout as an absolute deadline (`None` for a NULL pointer).
fn timespec_deadline(addr: u64) -> Result<Option<u64>, Errno> {
    if addr == 0 {
        return Ok(None);
    }
    let [sec, nsec]: [i64; 2] = read_user(addr)?;
    if sec < 0 || !(0..1_000_000_000).contains(&nsec) {
        return Err(Errno::EINVAL);
    }
    let ns = (sec as u64)
        .saturating_mul(1_000_000_000)
        .saturating_add(nsec as u64);
    Ok(Some(crate::time::now_ns().saturating_add(ns)))
}

/// `poll` and `ppoll`: reads `nfds` `struct pollfd` entries at `fds`, waits until one is ready or
/// the deadline passes, and writes each `revents`; returns how many are ready. `EINVAL` for more
/// than `MAX_FDS` entries; a negative fd is skipped.
fn poll_common(me: &Arc<Thread>, fds: u64, nfds: u64, deadline: Option<u64>) -> SysResult {
    if nfds > MAX_FDS as u64 {
        return Err(Errno::EINVAL);
    }
    let mut entries: Vec<[u16; 4]> = (0..nfds)
        .map(|i| read_user::<[u16; 4]>(fds + 8 * i))
        .collect::<Result<_, _>>()?;
    let n = wait_ready(me, deadline, |mut keys| {
        let mut ready = 0;
        for e in entries.iter_mut() {
            let fd = (u32::from(e[0]) | (u32::from(e[1]) << 16)) as i32;
            e[3] = if fd < 0 {
                0
            } else {
                events_of(me, fd, e[2], keys.as_deref_mut())?
            };
            if e[3] != 0 {
                ready += 1;
            }
        }
        Ok(ready)
    })?;
    for (i, e) in entries.iter().enumerate() {
        write_user(fds + 8 * i as u64 + 6, &e[3])?;
    }
    Ok(n as u64)
}

/// `poll(fds, nfds, timeout)`: `timeout` in milliseconds, negative to wait forever.
pub fn poll(me: &Arc<Thread>, _: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    let timeout_ms = a[2] as i32;
    let deadline = (timeout_ms >= 0).then(|| crate::time::now_ns() + timeout_ms as u64 * 1_000_000);
    poll_common(me, a[0], a[1], deadline)
}

/// `ppoll(fds, nfds, tmo_p, sigmask, sigsetsize)`: `poll` with a `struct timespec` timeout (NULL:
/// forever) and `sigmask` as the signal mask while it waits.
pub fn ppoll(me: &Arc<Thread>, _: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    let deadline = timespec_deadline(a[2])?;
    with_mask(me, a[3], a[4], || poll_common(me, a[0], a[1], deadline))
}

/// Reads an `fd_set` of `nfds` bits (all clear for a NULL pointer).
fn read_set(addr: u64, words: usize) -> Result<Vec<u64>, Errno> {
    if addr == 0 {
        return Ok(alloc::vec![0; words]);
    }
    (0..words)
        .map(|i| read_user::<u64>(addr + 8 * i as u64))
        .collect()
}

/// `select` and `pselect6`: waits until a descriptor of the read, write or except set at `sets` is
/// ready or the deadline passes, and rewrites the sets given with the ready ones; returns how many
/// bits are set. `EINVAL` for a bad `nfds`, `EBADF` for a set bit naming no open descriptor.
fn select_common(me: &Arc<Thread>, nfds: u64, sets: [u64; 3], deadline: Option<u64>) -> SysResult {
    let nfds = usize::try_from(nfds as i32).map_err(|_| Errno::EINVAL)?;
    if nfds > MAX_FDS {
        return Err(Errno::EINVAL);
    }
    let words = nfds.div_ceil(64);
    let wanted = [
        read_set(sets[0], words)?,
        read_set(sets[1], words)?,
        read_set(sets[2], words)?,
    ];
    for fd in 0..nfds {
        let bit = 1u64 << (fd % 64);
        if wanted.iter().any(|s| s[fd / 64] & bit != 0) && file(me, fd as u64).is_err() {
            return Err(Errno::EBADF);
        }
    }
    let mut got = [
        alloc::vec![0u64; words],
        alloc::vec![0u64; words],
        alloc::vec![0u64; words],
    ];
    let n = wait_ready(me, deadline, |mut keys| {
        let mut count = 0;
        for fd in 0..nfds {
            let (w, bit) = (fd / 64, 1u64 << (fd % 64));
            let any = wanted.iter().any(|s| s[w] & bit != 0);
            if !any {
                continue;
            }
            let ev = events_of(
                me,
                fd as i32,
                POLLIN | POLLOUT | POLLPRI,
                keys.as_deref_mut(),
            )?;
            let hits = [
                ev & (POLLIN | POLLHUP | POLLERR) != 0,
                ev & (POLLOUT | POLLERR) != 0,
                ev & POLLPRI != 0,
            ];
            for k in 0..3 {
                if wanted[k][w] & bit != 0 && hits[k] {
                    got[k][w] |= bit;
                    count += 1;
                } else {
                    got[k][w] &= !bit;
                }
            }
        }
        Ok(count)
    })?;
    for k in 0..3 {
        if sets[k] != 0 {
            for (i, word) in got[k].iter().enumerate() {
                write_user(sets[k] + 8 * i as u64, word)?;
            }
        }
    }
    Ok(n as u64)
}

/// `select(nfds, readfds, writefds, exceptfds, timeout)`: `timeout` is a `struct timeval` (NULL:
/// forever, `EINVAL` if invalid).
pub fn select(me: &Arc<Thread>, _: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    let deadline = if a[4] == 0 {
        None
    } else {
        let [sec, usec]: [i64; 2] = read_user(a[4])?;
        if sec < 0 || !(0..1_000_000).contains(&usec) {
            return Err(Errno::EINVAL);
        }
        let ns = (sec as u64)
            .saturating_mul(1_000_000_000)
            .saturating_add(usec as u64 * 1000);
        Some(crate::time::now_ns().saturating_add(ns))
    };
    select_common(me, a[0], [a[1], a[2], a[3]], deadline)
}

/// `pselect6(nfds, readfds, writefds, exceptfds, timeout, sigmask)`: `select` with a
/// `struct timespec` timeout and, if the sixth argument names one, a signal mask for the wait.
pub fn pselect6(me: &Arc<Thread>, _: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    let deadline = timespec_deadline(a[4])?;
    // The sixth argument points at { const sigset_t *ss; size_t ss_len; }.
    let (mask, size) = if a[5] == 0 {
        (0, 0)
    } else {
        let [p, len]: [u64; 2] = read_user(a[5])?;
        (p, len)
    };
    with_mask(me, mask, size, || {
        select_common(me, a[0], [a[1], a[2], a[3]], deadline)
    })
}

/// `EPOLL_CLOEXEC` (`O_CLOEXEC`).
const EPOLL_CLOEXEC: u64 = 0o2000000;
/// `EPOLL_CTL_ADD`.
const EPOLL_CTL_ADD: u64 = 1;
/// `EPOLL_CTL_DEL`.
const EPOLL_CTL_DEL: u64 = 2;
/// `EPOLL_CTL_MOD`.
const EPOLL_CTL_MOD: u64 = 3;
/// Size of `struct epoll_event` (packed on x86-64: 32-bit events, 64-bit data).
const EPOLL_EVENT: u64 = 12;

/// A new epoll instance's descriptor.
fn epoll_new(me: &Arc<Thread>, cloexec: bool) -> SysResult {
    let f = OpenFile::new(
        Node::Epoll(Epoll::new()),
        O_RDWR,
        b"anon_inode:[eventpoll]".to_vec(),
    );
    let fd = me.process.files.lock().insert(f, cloexec, 0)?;
    Ok(fd as u64)
}

/// `epoll_create(size)`: `EINVAL` unless `size` is positive (it is otherwise ignored).
pub fn epoll_create(me: &Arc<Thread>, _: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    if a[0] as i32 <= 0 {
        return Err(Errno::EINVAL);
    }
    epoll_new(me, false)
}

/// `epoll_create1(flags)`: `EPOLL_CLOEXEC` or nothing.
pub fn epoll_create1(me: &Arc<Thread>, _: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    if a[0] & !EPOLL_CLOEXEC != 0 {
        return Err(Errno::EINVAL);
    }
    epoll_new(me, a[0] & EPOLL_CLOEXEC != 0)
}

/// The epoll instance `epfd` names: `EBADF`, or `EINVAL` for another kind of file.
fn epoll_of(me: &Thread, epfd: u64) -> Result<(Arc<OpenFile>, Arc<Epoll>), Errno> {
    let f = file(me, epfd)?;
    let e = match &f.node {
        Node::Epoll(e) => e.clone(),
        _ => return Err(Errno::EINVAL),
    };
    Ok((f, e))
}

/// `epoll_ctl(epfd, op, fd, event)`: adds, changes or removes the interest in `fd`.
pub fn epoll_ctl(me: &Arc<Thread>, _: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    let event = match a[1] {
        EPOLL_CTL_ADD | EPOLL_CTL_MOD => {
            let w: [u32; 3] = read_user(a[3])?;
            Some((w[0], u64::from(w[1]) | u64::from(w[2]) << 32))
        }
        _ => None,
    };
    let (ep_file, ep) = epoll_of(me, a[0])?;
    let target = file(me, a[2])?;
    if Arc::ptr_eq(&ep_file, &target) {
        return Err(Errno::EINVAL);
    }
    Epoll::watchable(&target)?;
    let fd = a[2] as i32;
    match (a[1], event) {
        (EPOLL_CTL_ADD, Some((events, data))) => ep.add(fd, &target, events, data)?,
        (EPOLL_CTL_MOD, Some((events, data))) => ep.modify(fd, &target, events, data)?,
        (EPOLL_CTL_DEL, _) => ep.delete(fd, &target)?,
        _ => return Err(Errno::EINVAL),
    }
    Ok(0)
}

/// Waits until an interest of `epfd` is ready or the deadline passes and writes up to
/// `max` events to `out`; returns how many.
fn epoll_wait_common(
    me: &Arc<Thread>,
    epfd: u64,
    out: u64,
    max: u64,
    deadline: Option<u64>,
) -> SysResult {
    let max = max as i32;
    if max <= 0 || max as u64 > i32::MAX as u64 / EPOLL_EVENT {
        return Err(Errno::EINVAL);
    }
    crate::uaccess::check_range(out, (max as u64 * EPOLL_EVENT) as usize)?;
    let (_, ep) = epoll_of(me, epfd)?;
    let max = max as usize;
    let got = loop {
        let mut keys = Vec::new();
        let got = ep.collect(max, Some(&mut keys))?;
        let now = crate::time::now_ns();
        if !got.is_empty() || deadline.is_some_and(|d| now >= d) {
            break got;
        }
        let tick = now + 10_000_000;
        let wake = deadline.map_or(tick, |d| d.min(tick));
        let mut again = Ok(Vec::new());
        let outcome = POLL_WAKE.wait(keys, Some(wake), || {
            again = ep.collect(max, None);
            again.as_ref().map_or(true, |g| !g.is_empty())
        })?;
        let again = again?;
        if !again.is_empty() {
            break again;
        }
        if outcome == Wake::Interrupted || me.signal_pending() {
            return Err(Errno::EINTR);
        }
    };
    for (i, (events, data)) in got.iter().enumerate() {
        let raw = [*events, *data as u32, (*data >> 32) as u32];
        write_user(out + EPOLL_EVENT * i as u64, &raw)?;
    }
    Ok(got.len() as u64)
}

/// `epoll_wait(epfd, events, maxevents, timeout)`: `timeout` in milliseconds, negative to
/// wait forever.
pub fn epoll_wait(me: &Arc<Thread>, _: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    let timeout_ms = a[3] as i32;
    let deadline = (timeout_ms >= 0).then(|| crate::time::now_ns() + timeout_ms as u64 * 1_000_000);
    epoll_wait_common(me, a[0], a[1], a[2], deadline)
}

/// `epoll_pwait(epfd, events, maxevents, timeout, sigmask, sigsetsize)`: `epoll_wait` with
/// `sigmask` as the signal mask while it waits.
pub fn epoll_pwait(me: &Arc<Thread>, _: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    let timeout_ms = a[3] as i32;
    let deadline = (timeout_ms >= 0).then(|| crate::time::now_ns() + timeout_ms as u64 * 1_000_000);
    with_mask(me, a[4], a[5], || {
        epoll_wait_common(me, a[0], a[1], a[2], deadline)
    })
}

/// `epoll_pwait2(epfd, events, maxevents, timeout, sigmask, sigsetsize)`: `epoll_pwait` with a
/// `struct timespec` timeout (NULL: forever).
pub fn epoll_pwait2(me: &Arc<Thread>, _: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    let deadline = timespec_deadline(a[3])?;
    with_mask(me, a[4], a[5], || {
        epoll_wait_common(me, a[0], a[1], a[2], deadline)
    })
}
