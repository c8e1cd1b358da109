//! Advisory file locks as Linux keeps them, without touching memory or sleeping: the kernel
//! keeps one [`LockTable`], asks it, and sleeps and retries itself when a blocking request
//! ([`Refused`]) must wait.
//!
//! Three kinds, which never conflict with one another's kind (as on Linux, where `flock` and
//! `fcntl` locks are separate, and POSIX and open-file-description locks do conflict):
//!
//! - **POSIX record locks** (`fcntl(F_SETLK)`): byte ranges owned by a process; a process's
//!   own locks never conflict with each other, a new lock replaces what it overlaps of the
//!   same owner's (splitting and merging ranges), and all of a process's locks on a file go
//!   when it closes *any* descriptor of that file (the POSIX rule).
//! - **Open file description locks** (`F_OFD_SETLK`): the same ranges, owned by an open file
//!   description and released when it goes. They conflict with POSIX locks of other owners.
//! - **`flock`**: a whole-file shared or exclusive lock per description, converted in place.
//!
//! A process that waits for a POSIX lock is recorded with the process it waits for
//! ([`LockTable::wait_for`]), so that a request closing a cycle of such waits is refused
//! (`EDEADLK`), as Linux's `posix_locks_deadlock` does (for POSIX locks only).
//!
//! Owners are numbers the kernel chooses ([`Owner`]); files are keys (`u64`, an inode).
//! Ranges are `start..end` with `end` exclusive and [`EOF`] for "to the end of the file,
//! however long it grows".
#![no_std]
#![forbid(unsafe_code)]
#![warn(missing_docs)]

extern crate alloc;

use alloc::collections::BTreeMap;
use alloc::vec::Vec;

/// The end of a range that runs to the end of the file, however long.
pub const EOF: u64 = u64::MAX;

/// Who holds a lock.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Owner {
    /// A process (POSIX record locks), by its id.
    Process(u32),
    /// An open file description (OFD and `flock` locks), by a number unique while it lives.
    Description(u64),
}

/// A lock's kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Kind {
    /// Shared (`F_RDLCK`, `LOCK_SH`).
    Read,
    /// Exclusive (`F_WRLCK`, `LOCK_EX`).
    Write,
}

/// Which family a lock belongs to: record locks (POSIX and OFD, which conflict with each
/// other) or `flock` locks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Family {
    /// `fcntl` record locks.
    Record,
    /// `flock` locks.
    Flock,
}

/// One held lock.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Lock {
    /// Its holder.
    pub owner: Owner,
    /// Shared or exclusive.
    pub kind: Kind,
    /// First byte.
    pub start: u64,
    /// End, exclusive ([`EOF`]: to the end of the file).
    pub end: u64,
}

impl Lock {
    fn overlaps(&self, start: u64, end: u64) -> bool {
        self.start < end && start < self.end
    }
}

/// Why a request was not granted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refused {
    /// Another owner holds a conflicting lock (the first one found): `EAGAIN`, or wait and
    /// retry for a blocking request.
    Conflict(Lock),
    /// No memory to record the lock: `ENOLCK`.
    NoMemory,
    /// Waiting would close a cycle of processes waiting for each other's POSIX locks:
    /// `EDEADLK`.
    Deadlock,
}

/// How many waits [`LockTable::wait_for`] follows looking for a cycle (Linux's
/// `MAX_DEADLK_ITERATIONS`); a longer chain is not called a deadlock.
pub const MAX_DEADLOCK_STEPS: usize = 10;

/// Every lock held, by file and family.
#[derive(Debug, Default)]
pub struct LockTable {
    files: BTreeMap<(u64, Family), Vec<Lock>>,
    /// Processes waiting for a POSIX lock, each with the process holding the lock it waits
    /// for.
    waiting: Vec<(Owner, Owner)>,
}

impl LockTable {
    /// An empty table.
    pub const fn new() -> Self {
        LockTable {
            files: BTreeMap::new(),
            waiting: Vec::new(),
        }
    }

    /// Records that `waiter` is about to wait for a lock `holder` holds, or (`None`) that it
    /// no longer waits. Only POSIX waits between processes are recorded (an open file
    /// description's are not, as on Linux). `Deadlock` if `holder` waits, directly or through
    /// at most [`MAX_DEADLOCK_STEPS`] others, for `waiter`; `NoMemory` if the wait cannot be
    /// recorded. Either way `waiter` is then recorded as not waiting.
    pub fn wait_for(&mut self, waiter: Owner, holder: Option<Owner>) -> Result<(), Refused> {
        self.waiting.retain(|&(w, _)| w != waiter);
        let Some(holder) = holder else {
            return Ok(());
        };
        if !matches!((waiter, holder), (Owner::Process(_), Owner::Process(_))) {
            return Ok(());
        }
        let mut at = holder;
        for _ in 0..MAX_DEADLOCK_STEPS {
            if at == waiter {
                return Err(Refused::Deadlock);
            }
            match self.waiting.iter().find(|&&(w, _)| w == at) {
                Some(&(_, next)) => at = next,
                None => break,
            }
        }
        if at == waiter {
            return Err(Refused::Deadlock);
        }
        self.waiting.try_reserve(1).map_err(|_| Refused::NoMemory)?;
        self.waiting.push((waiter, holder));
        Ok(())
    }

    /// The first lock of another owner that a `kind` lock of `owner` on `start..end` of `file`
    /// would conflict with (`F_GETLK`): an overlapping lock of another owner where either is
    /// exclusive.
    pub fn conflict(
        &self,
        (file, family): (u64, Family),
        owner: Owner,
        kind: Kind,
        (start, end): (u64, u64),
    ) -> Option<Lock> {
        self.files.get(&(file, family))?.iter().copied().find(|l| {
            l.owner != owner
                && l.overlaps(start, end)
                && (kind == Kind::Write || l.kind == Kind::Write)
        })
    }

    /// Takes a `kind` lock (`Some`) or unlocks (`None`) `start..end` of `file` for `owner`:
    /// what `owner` held there is replaced (the rest of its ranges split off and kept), and
    /// neighbouring ranges of the same kind merge. Changes nothing when refused.
    pub fn set(
        &mut self,
        (file, family): (u64, Family),
        owner: Owner,
        kind: Option<Kind>,
        (start, end): (u64, u64),
    ) -> Result<(), Refused> {
        if start >= end {
            return Ok(());
        }
        if let Some(k) = kind {
            if let Some(l) = self.conflict((file, family), owner, k, (start, end)) {
                return Err(Refused::Conflict(l));
            }
        }
        let key = (file, family);
        let held = self.files.get(&key).map_or(&[][..], Vec::as_slice);
        // The new list: others' locks as they are, the owner's outside the range (cut at its
        // edges), the new lock, then merged.
        let mut next: Vec<Lock> = Vec::new();
        next.try_reserve_exact(held.len() + 2)
            .map_err(|_| Refused::NoMemory)?;
        for l in held {
            if l.owner != owner || !l.overlaps(start, end) {
                next.push(*l);
                continue;
            }
            if l.start < start {
                next.push(Lock { end: start, ..*l });
            }
            if l.end > end {
                next.push(Lock { start: end, ..*l });
            }
        }
        if let Some(kind) = kind {
            next.push(Lock {
                owner,
                kind,
                start,
                end,
            });
        }
        next.sort_by_key(|l| (l.owner, l.start));
        next.dedup_by(|later, earlier| {
            let merge = later.owner == earlier.owner
                && later.kind == earlier.kind
                && later.start <= earlier.end;
            if merge {
                earlier.end = earlier.end.max(later.end);
            }
            merge
        });
        if next.is_empty() {
            self.files.remove(&key);
        } else {
            self.files.insert(key, next);
        }
        Ok(())
    }

    /// Drops every lock `owner` holds on `file` in `family` (a process closing a descriptor of
    /// the file: its POSIX locks; a description going: its OFD and `flock` locks).
    pub fn release(&mut self, (file, family): (u64, Family), owner: Owner) {
        if let Some(list) = self.files.get_mut(&(file, family)) {
            list.retain(|l| l.owner != owner);
            if list.is_empty() {
                self.files.remove(&(file, family));
            }
        }
    }

    /// Drops every lock `owner` holds on any file (a process exiting, a description going).
    pub fn release_all(&mut self, owner: Owner) {
        self.files.retain(|_, list| {
            list.retain(|l| l.owner != owner);
            !list.is_empty()
        });
    }

    /// The locks held on `file` in `family`, ordered by owner and start.
    pub fn locks(&self, file: u64, family: Family) -> &[Lock] {
        self.files.get(&(file, family)).map_or(&[], Vec::as_slice)
    }

    /// Whether any lock is held.
    pub fn is_empty(&self) -> bool {
        self.files.is_empty()
    }

    /// Whether `owner` is recorded as waiting ([`LockTable::wait_for`]).
    pub fn is_waiting(&self, owner: Owner) -> bool {
        self.waiting.iter().any(|&(w, _)| w == owner)
    }
}
