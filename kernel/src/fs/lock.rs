//! Advisory file locks (`fcntl` record locks, open file description locks, `flock`): the
//! `locks` crate's table, one for the machine, and the waits of blocking requests.
//!
//! Locks are kept for NR-FS files and directories (keyed by inode); other descriptors answer
//! `EINVAL`. A POSIX record lock belongs to the process and goes when it closes any descriptor
//! of the file ([`closed`]) or exits ([`process_gone`]); OFD and `flock` locks belong to the
//! open file description and go with it ([`description_gone`]). A blocking request sleeps on
//! [`RELEASED`], which every unlock and release wakes, and tries again. A process about to wait
//! for another process's POSIX lock is recorded as waiting for it, and refused with `EDEADLK`
//! if that closes a cycle of waiting processes (`LockTable::wait_for`, Linux's rule).

use crate::fd::{Node, OpenFile};
use crate::fs::fifo::{FifoEnd, FifoFile};
use crate::proc::wait::{WaitQueue, Wake};
use crate::sync::IrqMutex;
use abi::Errno;
use locks::{Family, Kind, Lock, LockTable, Owner, Refused};

/// Every lock held.
static LOCKS: IrqMutex<LockTable> = IrqMutex::new(LockTable::new());

/// Woken whenever locks are let go.
static RELEASED: WaitQueue = WaitQueue::new();

/// The key of `f`'s file in the table: its NR-FS inode (a FIFO's too, as Linux locks them);
/// `EINVAL` for other files.
pub fn file_key(f: &OpenFile) -> Result<u64, Errno> {
    match f.node {
        Node::File(ino) | Node::Dir(ino) | Node::Device(_, Some(ino)) => Ok(ino),
        Node::Fifo(FifoEnd {
            file: FifoFile::Nrfs(ino),
            ..
        }) => Ok(ino),
        _ => Err(Errno::EINVAL),
    }
}

/// The owner of `f`'s OFD and `flock` locks.
pub fn description(f: &OpenFile) -> Owner {
    Owner::Description(f as *const OpenFile as u64)
}

/// The lock of another owner that a `kind` lock on `range` would wait for (`F_GETLK`).
pub fn conflict(file: (u64, Family), owner: Owner, kind: Kind, range: (u64, u64)) -> Option<Lock> {
    LOCKS.lock().conflict(file, owner, kind, range)
}

/// Takes (`Some`) or lets go of (`None`) a lock; waits while another owner's lock conflicts
/// if `wait` (`EINTR` if a signal ends the wait, `EDEADLK` if the other owner waits, in turn,
/// for this one), else `EAGAIN`; `ENOLCK` without memory.
pub fn set(
    file: (u64, Family),
    owner: Owner,
    kind: Option<Kind>,
    range: (u64, u64),
    wait: bool,
) -> Result<(), Errno> {
    let r = set_waiting(file, owner, kind, range, wait);
    if wait {
        let mut t = LOCKS.lock();
        if t.is_waiting(owner) {
            let _ = t.wait_for(owner, None);
        }
    }
    r
}

/// [`set`], leaving `owner` recorded as waiting if it last waited for another owner.
fn set_waiting(
    file: (u64, Family),
    owner: Owner,
    kind: Option<Kind>,
    range: (u64, u64),
    wait: bool,
) -> Result<(), Errno> {
    loop {
        let seq = RELEASED.seq();
        let mut t = LOCKS.lock();
        match t.set(file, owner, kind, range) {
            Ok(()) => {
                drop(t);
                if kind != Some(Kind::Write) {
                    RELEASED.notify_all();
                }
                return Ok(());
            }
            Err(Refused::Conflict(_)) if !wait => return Err(Errno::EAGAIN),
            Err(Refused::Conflict(held)) => match t.wait_for(owner, Some(held.owner)) {
                Ok(()) => {
                    drop(t);
                    if RELEASED.wait(seq, None) == Wake::Interrupted {
                        return Err(Errno::EINTR);
                    }
                }
                Err(Refused::Deadlock) => return Err(Errno::EDEADLK),
                Err(_) => return Err(Errno::ENOLCK),
            },
            Err(Refused::Deadlock) => return Err(Errno::EDEADLK),
            Err(Refused::NoMemory) => return Err(Errno::ENOLCK),
        }
    }
}

/// A process closed a descriptor of `f`'s file: its POSIX locks on the file go.
pub fn closed(pid: u32, f: &OpenFile) {
    if let Ok(key) = file_key(f) {
        let mut t = LOCKS.lock();
        if t.is_empty() {
            return;
        }
        t.release((key, Family::Record), Owner::Process(pid));
        drop(t);
        RELEASED.notify_all();
    }
}

/// A process exited: its POSIX locks go.
pub fn process_gone(pid: u32) {
    release(Owner::Process(pid));
}

/// An open file description went: its OFD and `flock` locks go.
pub fn description_gone(f: &OpenFile) {
    release(description(f));
}

/// Drops every lock of `owner` and wakes the waiters, if it held any.
fn release(owner: Owner) {
    let mut t = LOCKS.lock();
    if t.is_empty() {
        return;
    }
    t.release_all(owner);
    drop(t);
    RELEASED.notify_all();
}
