//! `epoll` instances: a set of interests (a descriptor, the events wanted, the program's
//! `epoll_data`) whose readiness `epoll_wait` collects.
//!
//! Readiness is what `poll` sees ([`OpenFile::poll`]); waiting sleeps on the same keys
//! ([`crate::fd::POLL_WAKE`]). Level-triggered interests are reported while ready.
//! Edge-triggered ones (`EPOLLET`) are reported when a wanted event appears that was not there
//! at the last report, or when something came since, so that new data on an already readable
//! pipe or socket is reported again, as Linux does:
//! - an internet socket counts the polls of its stack instance that brought it something
//!   wanted (data or a connection to take, room to send, a state change: `Stack::arrivals`),
//!   and the interest is reported when the count moved. (The instance announces its changes
//!   under one key for all its sockets: a delayed ACK on another connection is no arrival.)
//!   An empty datagram behind another unread one is not counted;
//! - any other file announces its own changes under its own key (a watch flag,
//!   [`crate::proc::wait::PollQueue::watch`]): a change that readiness does not show (a read
//!   that left data) may be reported once more than Linux would, never less.
//!
//! `EPOLLONESHOT` disables an
//! interest after one report until `EPOLL_CTL_MOD`. An interest names a descriptor and holds
//! its open file weakly: it ends when the file is released (closing a descriptor whose file
//! stays open through a `dup` keeps reporting, as on Linux).
//!
//! `EPOLLRDHUP` comes from stream sockets' readiness (the peer's FIN or a reset). Not built:
//! epoll instances inside epoll instances (`EINVAL`), `EPOLLEXCLUSIVE` and `EPOLLWAKEUP`
//! (accepted, no effect).

use crate::fd::{Node, OpenFile, POLL_WAKE};
use crate::proc::wait::PollKey;
use crate::sync::IrqMutex;
use abi::poll::{POLLERR, POLLHUP, POLLIN, POLLOUT, POLLRDNORM, POLLWRNORM};
use abi::Errno;
use alloc::sync::{Arc, Weak};
use alloc::vec::Vec;
use core::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// `EPOLLET`: edge-triggered.
pub const EPOLLET: u32 = 1 << 31;
/// `EPOLLONESHOT`: one report, then disabled.
pub const EPOLLONESHOT: u32 = 1 << 30;
/// Most interests one instance holds.
const MAX_INTERESTS: usize = 1 << 16;

/// The id of the next instance.
static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// One interest.
struct Interest {
    /// The descriptor number it was added under.
    fd: i32,
    /// The open file (released: the interest ends).
    file: Weak<OpenFile>,
    /// Events wanted, with `EPOLLET`/`EPOLLONESHOT`.
    events: u32,
    /// The program's `epoll_data`.
    data: u64,
    /// Events reported last (edge-triggered).
    last: u32,
    /// Raised when the file announces a change (edge-triggered, a file that does not count
    /// its arrivals).
    changed: Arc<AtomicBool>,
    /// The file's count of arrivals at the last look (edge-triggered, a file that counts).
    arrivals: u64,
    /// A one-shot interest already reported.
    disabled: bool,
}

/// An epoll instance.
pub struct Epoll {
    /// Number shown as `anon_inode:[eventpoll]` and in `st_ino`.
    pub id: u64,
    /// Its interests.
    interests: IrqMutex<Vec<Interest>>,
}

/// What is ready in `f` among `wanted` (plus errors and hang-ups), as epoll bits, and its
/// count of arrivals, if it keeps one ([`OpenFile::poll_counted`]).
fn readiness(f: &OpenFile, wanted: u32) -> (u32, Option<u64>) {
    // The poll bits are epoll's low 16 (`EPOLLRDHUP` among them); the flags above are not
    // events.
    let (mut ready, arrivals) = f.poll_counted((wanted & 0xffff) as u16);
    if ready & POLLIN != 0 {
        ready |= POLLRDNORM;
    }
    if ready & POLLOUT != 0 {
        ready |= POLLWRNORM;
    }
    let ready = u32::from(ready) & (wanted | u32::from(POLLERR | POLLHUP));
    (ready, arrivals)
}

/// Interest `n` if it still is `f`'s (a concurrent change may have moved the interests).
fn same<'a>(all: &'a [Interest], n: usize, f: &Arc<OpenFile>) -> Option<&'a Interest> {
    all.get(n)
        .filter(|i| core::ptr::eq(i.file.as_ptr(), Arc::as_ptr(f)))
}

impl Epoll {
    /// A new, empty instance.
    pub fn new() -> Arc<Epoll> {
        Arc::new(Epoll {
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
            interests: IrqMutex::new(Vec::new()),
        })
    }

    /// Whether `file` can be watched: `EPERM` for a file that is always ready (regular files,
    /// directories), `EINVAL` for an epoll instance (nesting is not built).
    pub fn watchable(file: &OpenFile) -> Result<(), Errno> {
        match file.node {
            Node::Epoll(_) => Err(Errno::EINVAL),
            Node::File(_) | Node::Dir(_) | Node::Hare(_) => Err(Errno::EPERM),
            _ => Ok(()),
        }
    }

    /// `EPOLL_CTL_ADD`: `EEXIST` if `fd` with this file is there.
    pub fn add(&self, fd: i32, file: &Arc<OpenFile>, events: u32, data: u64) -> Result<(), Errno> {
        let changed = Arc::new(AtomicBool::new(false));
        if file.poll_counted(0).1.is_none() {
            let mut keys = Vec::new();
            file.poll_keys(&mut keys)?;
            for k in keys {
                POLL_WAKE.watch(k, &changed)?;
            }
        }
        let mut all = self.interests.lock();
        all.retain(|i| i.file.strong_count() > 0);
        if all
            .iter()
            .any(|i| i.fd == fd && i.file.ptr_eq(&Arc::downgrade(file)))
        {
            return Err(Errno::EEXIST);
        }
        if all.len() >= MAX_INTERESTS {
            return Err(Errno::ENOSPC);
        }
        all.try_reserve(1).map_err(|_| Errno::ENOMEM)?;
        all.push(Interest {
            fd,
            file: Arc::downgrade(file),
            events,
            data,
            last: 0,
            changed,
            arrivals: 0,
            disabled: false,
        });
        Ok(())
    }

    /// `EPOLL_CTL_MOD`: new events and data (re-arms a one-shot interest); `ENOENT` if absent.
    pub fn modify(
        &self,
        fd: i32,
        file: &Arc<OpenFile>,
        events: u32,
        data: u64,
    ) -> Result<(), Errno> {
        let mut all = self.interests.lock();
        let i = all
            .iter_mut()
            .find(|i| i.fd == fd && i.file.ptr_eq(&Arc::downgrade(file)))
            .ok_or(Errno::ENOENT)?;
        i.events = events;
        i.data = data;
        i.last = 0;
        i.disabled = false;
        Ok(())
    }

    /// `EPOLL_CTL_DEL`: `ENOENT` if absent.
    pub fn delete(&self, fd: i32, file: &Arc<OpenFile>) -> Result<(), Errno> {
        let mut all = self.interests.lock();
        let before = all.len();
        all.retain(|i| !(i.fd == fd && i.file.ptr_eq(&Arc::downgrade(file))));
        if all.len() == before {
            Err(Errno::ENOENT)
        } else {
            Ok(())
        }
    }

    /// The live interests' files, with their positions (files are released outside the lock).
    fn snapshot(&self) -> Vec<(usize, Arc<OpenFile>)> {
        let all = self.interests.lock();
        all.iter()
            .enumerate()
            .filter(|(_, i)| !i.disabled)
            .filter_map(|(n, i)| i.file.upgrade().map(|f| (n, f)))
            .collect()
    }

    /// Collects at most `max` ready interests as (events, data), updating edge-triggered and
    /// one-shot state; with `keys`, adds the keys to sleep on.
    pub fn collect(
        &self,
        max: usize,
        keys: Option<&mut Vec<PollKey>>,
    ) -> Result<Vec<(u32, u64)>, Errno> {
        let files = self.snapshot();
        if let Some(keys) = keys {
            for (_, f) in &files {
                f.poll_keys(keys)?;
            }
        }
        let ready: Vec<(usize, (u32, Option<u64>))> = {
            let all = self.interests.lock();
            files
                .iter()
                .filter_map(|(n, f)| same(&all, *n, f).map(|i| (*n, readiness(f, i.events))))
                .collect()
        };
        let mut out = Vec::new();
        {
            let mut all = self.interests.lock();
            for (n, now) in ready {
                if out.len() >= max {
                    break;
                }
                let Some(i) = all.get_mut(n) else { continue };
                let (now, arrivals) = now;
                let report = if i.events & EPOLLET != 0 {
                    let changed = match arrivals {
                        Some(n) => core::mem::replace(&mut i.arrivals, n) != n,
                        None => i.changed.swap(false, Ordering::AcqRel),
                    };
                    let fresh = now & !i.last != 0;
                    i.last = now;
                    now != 0 && (fresh || changed)
                } else {
                    now != 0
                };
                if report {
                    if i.events & EPOLLONESHOT != 0 {
                        i.disabled = true;
                    }
                    out.try_reserve(1).map_err(|_| Errno::ENOMEM)?;
                    out.push((now, i.data));
                }
            }
        }
        drop(files);
        Ok(out)
    }

    /// `poll` on the instance: `POLLIN` when an interest is ready (nothing is consumed).
    pub fn poll(&self) -> u16 {
        let files = self.snapshot();
        let all = self.interests.lock();
        let ready = files
            .iter()
            .any(|(n, f)| same(&all, *n, f).is_some_and(|i| readiness(f, i.events).0 != 0));
        drop(all);
        drop(files);
        if ready {
            POLLIN
        } else {
            0
        }
    }

    /// The keys whose change may make an interest ready.
    pub fn poll_keys(&self, out: &mut Vec<PollKey>) -> Result<(), Errno> {
        for (_, f) in self.snapshot() {
            f.poll_keys(out)?;
        }
        Ok(())
    }
}
