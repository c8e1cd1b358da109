//! The process table, replicated per NUMA node with NR (NrOS §4.4, NR-Scheduler).
//!
//! [`ProcessTable`] is a sequential structure: the parent/child tree, process groups and
//! sessions, and each process's life state (alive, or a zombie with its wait status). Every
//! change (`Spawn`, `Exit`, `Reap`, `SetPgid`, `SetSid`) goes through the log; lookups (`kill`
//! targets, `wait4` candidates, `getppid`) run on the local replica. Process ids are drawn
//! before an operation enters the log, so every replica records the same ids.
//!
//! Each entry also holds an `Arc` of the process's kernel object (threads, address space,
//! files), shared by all replicas; it is dropped when the last replica has applied the `Reap`.
//! `Spawn` carries it as an `nr::Payload` (§4.5), so the log entry, which lives until the log
//! wraps, does not keep a reaped process alive.

use super::{Pid, Process};
use alloc::collections::{BTreeMap, BTreeSet};
use alloc::sync::Arc;
use alloc::vec::Vec;

/// What a process is in the table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Life {
    /// Running (some thread alive).
    Alive,
    /// Exited; the wait status (Linux encoding) waits for the parent.
    Zombie(i32),
}

/// One process in the table.
#[derive(Clone)]
pub struct Entry {
    /// Parent process id (0 for init).
    pub ppid: Pid,
    /// Process group id.
    pub pgid: Pid,
    /// Session id.
    pub sid: Pid,
    /// Life state.
    pub life: Life,
    /// The kernel object.
    pub process: Arc<Process>,
}

/// Which children a wait accepts (`wait4`'s pid argument).
#[derive(Clone, Copy, Debug)]
pub enum WaitFor {
    /// Any child.
    Any,
    /// The child with this id.
    Pid(Pid),
    /// Any child in this process group.
    Group(Pid),
}

/// The replicated table.
#[derive(Default)]
pub struct ProcessTable {
    /// Every process (alive or zombie), by pid.
    entries: BTreeMap<Pid, Entry>,
    /// The children of each parent, by the parent's pid.
    children: BTreeMap<Pid, BTreeSet<Pid>>,
}

/// Read operations.
pub enum ReadOp {
    /// The entry of a process.
    Get(Pid),
    /// A zombie child of `parent` matching the selector, and whether any child matches at all.
    FindZombie(Pid, WaitFor),
    /// The live children of `parent` matching the selector (for stopped and continued
    /// children, `job::take_report`).
    LiveChildren(Pid, WaitFor),
    /// The processes of a group (for `kill(-pgid)`), or all processes but init for `kill(-1)`.
    Members(Option<Pid>),
    /// Every process id in the table (`/proc`).
    Pids,
    /// Whether a process group is orphaned: no live member has a parent in another group of
    /// the same session (Linux's `will_become_orphaned_pgrp`; a parent that is init counts
    /// too, see [`super::job`]).
    Orphaned(Pid),
}

/// Update operations.
#[derive(Clone)]
pub enum UpdateOp {
    /// A new process (fork or the first process).
    Spawn {
        /// Its id (drawn before logging).
        pid: Pid,
        /// Its parent.
        ppid: Pid,
        /// The kernel object, held outside the log entry (a `Payload`), so that the entry does
        /// not keep the process alive after every replica has taken its reference.
        process: nr::Payload<Arc<Process>>,
    },
    /// A process exited with a wait status; its children go to init (pid 1).
    Exit {
        /// Who exited.
        pid: Pid,
        /// Its wait status.
        status: i32,
    },
    /// The parent collected a zombie.
    Reap {
        /// The zombie.
        pid: Pid,
    },
    /// `setpgid(pid, pgid)` on behalf of `caller`.
    SetPgid {
        /// Calling process.
        caller: Pid,
        /// Target (0 = caller).
        pid: Pid,
        /// New group (0 = target's pid).
        pgid: Pid,
    },
    /// `setsid()` by `pid`.
    SetSid {
        /// Calling process.
        pid: Pid,
    },
}

/// Responses.
pub enum Resp {
    /// An entry, if present.
    Entry(Option<Entry>),
    /// `FindZombie`: a zombie (pid, status) if any; whether any matching child exists.
    Zombie(Option<(Pid, i32)>, bool),
    /// Process ids.
    Pids(Vec<Pid>),
    /// Success or an errno.
    Done(Result<Pid, abi::Errno>),
    /// `Orphaned`: the answer.
    Flag(bool),
    /// `Exit`: the parent to notify, if it is alive, and the children init adopted.
    Exited(Option<Arc<Process>>, Vec<Arc<Process>>),
}

impl ProcessTable {
    /// Whether process `pid`, with entry `e`, is a child that `w` accepts.
    fn matches(&self, pid: Pid, e: &Entry, w: WaitFor) -> bool {
        match w {
            WaitFor::Any => true,
            WaitFor::Pid(p) => p == pid,
            WaitFor::Group(g) => e.pgid == g,
        }
    }
}

impl nr::Dispatch for ProcessTable {
    type ReadOp = ReadOp;
    type UpdateOp = UpdateOp;
    type Resp = Resp;

    fn dispatch(&self, op: ReadOp) -> Resp {
        match op {
            ReadOp::Get(pid) => Resp::Entry(self.entries.get(&pid).cloned()),
            ReadOp::FindZombie(parent, w) => {
                let mut any = false;
                for &c in self.children.get(&parent).into_iter().flatten() {
                    let Some(e) = self.entries.get(&c) else {
                        continue;
                    };
                    if !self.matches(c, e, w) {
                        continue;
                    }
                    any = true;
                    if let Life::Zombie(status) = e.life {
                        return Resp::Zombie(Some((c, status)), true);
                    }
                }
                Resp::Zombie(None, any)
            }
            ReadOp::LiveChildren(parent, w) => Resp::Pids(
                self.children
                    .get(&parent)
                    .into_iter()
                    .flatten()
                    .filter(|&&c| {
                        self.entries
                            .get(&c)
                            .is_some_and(|e| e.life == Life::Alive && self.matches(c, e, w))
                    })
                    .copied()
                    .collect(),
            ),
            ReadOp::Pids => Resp::Pids(self.entries.keys().copied().collect()),
            ReadOp::Orphaned(group) => Resp::Flag(
                self.entries
                    .values()
                    .filter(|e| e.pgid == group && e.life == Life::Alive)
                    .all(|e| {
                        self.entries
                            .get(&e.ppid)
                            .is_none_or(|parent| parent.pgid == group || parent.sid != e.sid)
                    }),
            ),
            ReadOp::Members(group) => Resp::Pids(
                self.entries
                    .iter()
                    .filter(|(pid, e)| match group {
                        Some(g) => e.pgid == g,
                        None => **pid != 1,
                    })
                    .filter(|(_, e)| e.life == Life::Alive)
                    .map(|(pid, _)| *pid)
                    .collect(),
            ),
        }
    }

    fn dispatch_mut(&mut self, op: UpdateOp) -> Resp {
        match op {
            UpdateOp::Spawn { pid, ppid, process } => {
                let Some(process) = process.apply().map(|p| p.clone()) else {
                    return Resp::Done(Err(abi::Errno::EINVAL));
                };
                let (pgid, sid) = self
                    .entries
                    .get(&ppid)
                    .map(|p| (p.pgid, p.sid))
                    .unwrap_or((pid, pid));
                self.entries.insert(
                    pid,
                    Entry {
                        ppid,
                        pgid,
                        sid,
                        life: Life::Alive,
                        process,
                    },
                );
                self.children.entry(ppid).or_default().insert(pid);
                Resp::Done(Ok(pid))
            }
            UpdateOp::Exit { pid, status } => {
                let Some(e) = self.entries.get_mut(&pid) else {
                    return Resp::Exited(None, Vec::new());
                };
                e.life = Life::Zombie(status);
                let ppid = e.ppid;
                let mut adopted = Vec::new();
                if let Some(orphans) = self.children.remove(&pid) {
                    for c in &orphans {
                        if let Some(ce) = self.entries.get_mut(c) {
                            ce.ppid = 1;
                            adopted.push(ce.process.clone());
                        }
                    }
                    self.children.entry(1).or_default().extend(orphans);
                }
                let parent = self
                    .entries
                    .get(&ppid)
                    .filter(|p| p.life == Life::Alive)
                    .map(|p| p.process.clone());
                Resp::Exited(parent, adopted)
            }
            UpdateOp::Reap { pid } => match self.entries.get(&pid) {
                Some(e) if matches!(e.life, Life::Zombie(_)) => {
                    let ppid = e.ppid;
                    self.entries.remove(&pid);
                    if let Some(set) = self.children.get_mut(&ppid) {
                        set.remove(&pid);
                    }
                    Resp::Done(Ok(pid))
                }
                _ => Resp::Done(Err(abi::Errno::ECHILD)),
            },
            UpdateOp::SetPgid { caller, pid, pgid } => {
                let target = if pid == 0 { caller } else { pid };
                let pgid = if pgid == 0 { target } else { pgid };
                let allowed =
                    target == caller || self.entries.get(&target).is_some_and(|e| e.ppid == caller);
                if !allowed {
                    return Resp::Done(Err(abi::Errno::ESRCH));
                }
                let Some(sid) = self.entries.get(&target).map(|e| e.sid) else {
                    return Resp::Done(Err(abi::Errno::ESRCH));
                };
                // As on Linux: not a session leader, not a child in another session, and a
                // group other than its own id must exist in the target's session.
                let caller_sid = self.entries.get(&caller).map(|e| e.sid);
                let group_exists = pgid == target
                    || self
                        .entries
                        .values()
                        .any(|e| e.pgid == pgid && e.sid == sid);
                if sid == target || caller_sid != Some(sid) || !group_exists {
                    return Resp::Done(Err(abi::Errno::EPERM));
                }
                if let Some(e) = self.entries.get_mut(&target) {
                    e.pgid = pgid;
                }
                Resp::Done(Ok(0))
            }
            UpdateOp::SetSid { pid } => {
                let leader = self.entries.values().any(|e| e.pgid == pid);
                match self.entries.get_mut(&pid) {
                    Some(e) if e.pgid == pid || leader => Resp::Done(Err(abi::Errno::EPERM)),
                    Some(e) => {
                        e.pgid = pid;
                        e.sid = pid;
                        Resp::Done(Ok(pid))
                    }
                    None => Resp::Done(Err(abi::Errno::ESRCH)),
                }
            }
        }
    }
}
