//! The process table, replicated per NUMA node with NR (NrOS §4.4, NR-Scheduler).
//!
//! [`ProcessTable`] is a sequential structure: the parent/child tree, process groups and
//! sessions, and each process's life state (alive, or a zombie with its wait status). Every
//! change (`Spawn`, `Exit`, `Reap`, `SetPgid`, `SetSid`, `SetChildExit`) goes through the log;
//! lookups (`kill` targets, `wait4` candidates, `getppid`) run on the local replica. Process ids
//! are drawn before an operation enters the log, so every replica records the same ids.
//!
//! Whether an exiting child becomes a zombie or is reaped at once (its parent's `SIGCHLD`
//! action is `SIG_IGN` or has `SA_NOCLDWAIT`, Linux's `do_notify_parent`) is decided inside
//! `Exit`, from the parent's [`OnChildExit`] as the table records it: every replica decides
//! alike, and a wait, which reads the table, never sees a zombie that is to be reaped.
//! `rt_sigaction` (every new `SIGCHLD` action) and `execve` (a change of it) record it with
//! `SetChildExit` before they return (`signal::set_action`), numbered under the signal lock so
//! that the last one set is the one the table keeps whatever order two threads' operations
//! reach the log in.
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

/// What a process's `SIGCHLD` action makes of its children's exits (Linux's
/// `do_notify_parent`; [`super::signal::SignalState::on_child_exit`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OnChildExit {
    /// A child becomes a zombie until waited for (`SIG_DFL`, or a handler, without
    /// `SA_NOCLDWAIT`).
    Zombie,
    /// A child is reaped at once and `SIGCHLD` is still sent (`SA_NOCLDWAIT`).
    Reap,
    /// A child is reaped at once and no `SIGCHLD` is sent (`SIG_IGN`).
    ReapQuietly,
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
    /// What its `SIGCHLD` action makes of its children's exits.
    pub on_child_exit: OnChildExit,
    /// The number of the change that set `on_child_exit` (0: inherited at `Spawn`); an older
    /// change that reaches the log later is ignored.
    pub on_child_exit_seq: u64,
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
        /// What its `SIGCHLD` action (inherited from its parent) makes of its children's
        /// exits.
        on_child_exit: OnChildExit,
    },
    /// A process exited with a wait status: it becomes a zombie, or is removed at once if its
    /// parent's `on_child_exit` says so; its children go to init (pid 1), and those of them
    /// that are zombies are removed if init's says so.
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
    /// A process's `SIGCHLD` action changed what it makes of its children's exits.
    SetChildExit {
        /// The process.
        pid: Pid,
        /// The change's number (`SignalState`'s count of them).
        seq: u64,
        /// What its action now makes of them.
        on_child_exit: OnChildExit,
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
    /// `Exit`: what happened.
    Exited(Exited),
}

/// What an `Exit` did.
pub struct Exited {
    /// The parent to notify, if it is alive.
    pub parent: Option<Arc<Process>>,
    /// What became of the process: a zombie, or removed at once (its parent's action;
    /// `Zombie` without a live parent).
    pub outcome: OnChildExit,
    /// The children init adopted (those of them that were zombies init may have reaped).
    pub adopted: Vec<Arc<Process>>,
    /// The adopted children that were zombies and of which init is to be told with
    /// `SIGCHLD` (all of them unless init's action is `SIG_IGN`), with their wait statuses,
    /// as Linux's `reparent_leader` notifies the new parent.
    pub adopted_zombies: Vec<(Pid, i32)>,
}

impl Exited {
    /// An `Exit` of a process not in the table: nothing happened.
    fn nothing() -> Exited {
        Exited {
            parent: None,
            outcome: OnChildExit::Zombie,
            adopted: Vec::new(),
            adopted_zombies: Vec::new(),
        }
    }
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

    /// Removes process `pid` (a reaped zombie, or a child reaped at its exit) from the table
    /// and from its parent's children.
    fn remove(&mut self, pid: Pid) {
        if let Some(e) = self.entries.remove(&pid) {
            if let Some(set) = self.children.get_mut(&e.ppid) {
                set.remove(&pid);
            }
        }
    }

    /// What a live process `pid` makes of its children's exits (`Zombie` if it is not alive).
    fn on_child_exit(&self, pid: Pid) -> (Option<Arc<Process>>, OnChildExit) {
        match self.entries.get(&pid) {
            Some(e) if e.life == Life::Alive => (Some(e.process.clone()), e.on_child_exit),
            _ => (None, OnChildExit::Zombie),
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
            UpdateOp::Spawn {
                pid,
                ppid,
                process,
                on_child_exit,
            } => {
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
                        on_child_exit,
                        on_child_exit_seq: 0,
                        process,
                    },
                );
                self.children.entry(ppid).or_default().insert(pid);
                Resp::Done(Ok(pid))
            }
            UpdateOp::Exit { pid, status } => {
                let Some(ppid) = self.entries.get(&pid).map(|e| e.ppid) else {
                    return Resp::Exited(Exited::nothing());
                };
                let (parent, outcome) = self.on_child_exit(ppid);
                if outcome == OnChildExit::Zombie {
                    if let Some(e) = self.entries.get_mut(&pid) {
                        e.life = Life::Zombie(status);
                    }
                } else {
                    self.remove(pid);
                }
                // After the exit: init exiting keeps its zombie children.
                let (_, init) = self.on_child_exit(1);
                let mut adopted = Vec::new();
                let mut adopted_zombies = Vec::new();
                for c in self.children.remove(&pid).unwrap_or_default() {
                    let Some(ce) = self.entries.get_mut(&c) else {
                        continue;
                    };
                    ce.ppid = 1;
                    adopted.push(ce.process.clone());
                    if let Life::Zombie(status) = ce.life {
                        if init != OnChildExit::ReapQuietly {
                            adopted_zombies.push((c, status));
                        }
                        if init != OnChildExit::Zombie {
                            self.entries.remove(&c);
                            continue;
                        }
                    }
                    self.children.entry(1).or_default().insert(c);
                }
                Resp::Exited(Exited {
                    parent,
                    outcome,
                    adopted,
                    adopted_zombies,
                })
            }
            UpdateOp::Reap { pid } => match self.entries.get(&pid) {
                Some(e) if matches!(e.life, Life::Zombie(_)) => {
                    self.remove(pid);
                    Resp::Done(Ok(pid))
                }
                _ => Resp::Done(Err(abi::Errno::ECHILD)),
            },
            UpdateOp::SetChildExit {
                pid,
                seq,
                on_child_exit,
            } => match self.entries.get_mut(&pid) {
                Some(e) if seq > e.on_child_exit_seq => {
                    e.on_child_exit = on_child_exit;
                    e.on_child_exit_seq = seq;
                    Resp::Done(Ok(pid))
                }
                Some(_) => Resp::Done(Ok(pid)),
                None => Resp::Done(Err(abi::Errno::ESRCH)),
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
