//! Growing and shrinking Hare's fleet while it is in use (§6.1.1, the thesis's open problem):
//! the kernel, the servers' only client, is the resizer. `fleet grow hare CORE` starts a
//! member that joins, `fleet shrink hare CORE` asks for one to leave, and the fleet manager
//! tells the kernel ([`resize`], through `reef_fleet_resize`) before the member serves or
//! after it stopped holding anything:
//!
//! 1. Every core client is held back (its lock, taken in core order: no thread holds two), and
//!    waits for the replies to what it posted, so that no request is in flight; `MOUNTING`
//!    keeps mounts and other resizes out.
//! 2. The resizer connects to every server with a client of its own ([`RESIZER_CLIENT`]);
//!    a joining server's first hello gives it its id (never one used before) and the buffer
//!    cache.
//! 3. `lib/hare`'s `resize` moves each shard whose owner changes, in parts, old owner to new,
//!    spreads the free blocks, and gives every server the new table (a step that fails
//!    leaves the shards moved so far where they are, and a table that says so).
//! 4. The mount takes the new members and table; each core client catches up at its next
//!    call ([`super::Mount::client`]): connections to joined servers made, those to departed
//!    ones closed, the new table and placement taken, and its lookup cache forgotten (the
//!    servers that gave a shard away told their cachers already; a departed server's
//!    messages are not read again).
//!
//! A directory distributing itself (§6.1.2, [`distribute`]) is done the same way: clients
//! held back, `lib/hare`'s `distribute` through the resizer's links, clients catching up.

use super::{connect, CoreClient, Links, Mount, MOUNTED, MOUNTING, RESIZER_CLIENT, SERVERS};
use crate::kcb;
use crate::mailbox::GrantBudget;
use crate::names::{self, Name};
use crate::proc::wait::SleepLockGuard;
use ::hare::{Courier, Ino, Reply, Request, ServerId};
use abi::Errno;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::sync::atomic::Ordering;
use msg::names::Member;

/// A change of the fleet's members.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Change {
    /// Member `pid`, registered under the fleet's name, joins.
    Join(u32),
    /// Member `pid` leaves: what it holds moves to the others first.
    Leave(u32),
}

/// A change with its member found: the registered member that joins, or the pid that leaves.
enum Step {
    /// This member joins.
    Join(Member),
    /// The member of this pid leaves.
    Leave(u32),
}

/// The resizer's links as `lib/hare`'s courier.
struct Resizer<'a>(&'a Links);

impl Courier for Resizer<'_> {
    fn call(&mut self, server: ServerId, req: &Request) -> Reply {
        self.0.exchange(server, req)
    }
}

/// Carries out `change` (see the module's notes). `Join`: `EAGAIN` while the member has not
/// registered yet, `EINVAL` if Hare's servers never had a buffer cache (mount first: a fleet
/// that never served starts again with the cores wanted), `ENOSPC` past the last server id.
/// `Leave`: `EBUSY` for the last server (it holds every file), or while an `rmdir` is half
/// done; nothing to do for a process that is not one of the servers. Either: `EIO` if a
/// server cannot be reached, `ENOMEM`; after an error nothing is lost (a joined server that
/// holds nothing is dropped again, a leaving one that still holds shards stays).
pub fn resize(change: Change) -> Result<(), Errno> {
    let _one = MOUNTING.lock();
    let mount = MOUNTED.lock().clone();
    let known = {
        let k = SERVERS.lock();
        k.as_ref().and_then(|k| {
            let table = k.table.clone()?;
            let mut members: Vec<(ServerId, Member)> = Vec::new();
            members.try_reserve_exact(k.members.len()).ok()?;
            for (m, id) in &k.members {
                members.push(((*id)?, *m));
            }
            Some((members, table, k.next_id, k.arena.clone()))
        })
    };
    let Some((members, table, next_id, arena)) = known else {
        return match change {
            Change::Join(_) => {
                crate::kprintln!(
                    "reef: hare: a fleet grows once a mount has given it the buffer cache \
                     (before that, start it on the cores wanted)"
                );
                Err(Errno::EINVAL)
            }
            Change::Leave(_) => Ok(()),
        };
    };
    // A member that has not registered yet is told so before any client is held back (the
    // fleet manager asks again until it has).
    let step = match change {
        Change::Join(pid) if members.iter().any(|(_, m)| m.pid == pid) => return Ok(()),
        Change::Join(pid) => {
            let fleet = names::members(Name::new(super::FLEET)?)?;
            Step::Join(*fleet.iter().find(|m| m.pid == pid).ok_or(Errno::EAGAIN)?)
        }
        Change::Leave(pid) => Step::Leave(pid),
    };
    let held = match &mount {
        Some(m) => hold(m)?,
        None => Vec::new(),
    };
    let since = crate::time::now_ns();
    let mut ids = table.servers();
    let (joiner, leaver) = match step {
        Step::Join(m) => {
            if next_id == ServerId::MAX {
                return Err(Errno::ENOSPC);
            }
            ids.push(next_id);
            (Some((next_id, m)), None)
        }
        Step::Leave(pid) => {
            let Some(&(id, _)) = members.iter().find(|(_, m)| m.pid == pid) else {
                return Ok(());
            };
            ids.retain(|&i| i != id);
            if ids.is_empty() {
                crate::kprintln!(
                    "reef: hare: the last file server holds every file: it cannot leave \
                     (`fleet stop hare` once Hare is unmounted)"
                );
                return Err(Errno::EBUSY);
            }
            (None, Some(id))
        }
    };
    let budget = mount
        .as_ref()
        .map_or_else(|| Arc::new(GrantBudget::default()), |m| m.budget.clone());
    let mut links = resizer_links(&members, &budget)?;
    if let Some((id, m)) = &joiner {
        let core = kcb::current().core_id;
        let (link, w) = connect(m, (RESIZER_CLIENT, core), Some(&arena), Some(*id), &budget)?;
        if w.server != *id {
            return Err(Errno::EIO);
        }
        links.insert(*id, link)?;
    }
    let (now, done) = ::hare::resize::resize(&mut Resizer(&links), &table, &ids);
    drop(links);
    // Who the members are now: a joined server that was given nothing is dropped again, a
    // leaving one goes once it holds no shard.
    let mut after = members;
    let holds = |id: ServerId| !now.shards_of(id).is_empty();
    let outcome = match (joiner, leaver) {
        (Some((id, m)), _) if holds(id) => {
            after.try_reserve(1).map_err(|_| Errno::ENOMEM)?;
            after.push((id, m));
            report(done, "joined")
        }
        (Some(_), _) => done.and(Err(Errno::EIO)),
        (_, Some(id)) if !holds(id) => {
            after.retain(|(i, _)| *i != id);
            report(done, "left")
        }
        _ => done.and(Err(Errno::EIO)),
    };
    if let Some(k) = SERVERS.lock().as_mut() {
        k.members.clear();
        k.members
            .extend(after.iter().map(|(id, m)| (*m, Some(*id))));
        k.table = Some(now.clone());
        if joiner.is_some() {
            k.next_id = next_id + 1;
        }
    }
    if let Some(m) = &mount {
        let moved = table.moves(&now).len();
        *m.members.lock() = after;
        *m.table.lock() = now;
        let held_ns = crate::time::now_ns().saturating_sub(since);
        let mut r = m.resizes.lock();
        *r = (r.0 + 1, moved, held_ns);
        drop(r);
        m.generation.fetch_add(1, Ordering::AcqRel);
    }
    drop(held);
    outcome
}

/// Makes ordinary directory `dir` of the mounted Hare distributed (§6.1.2: `Mount::with`
/// asks once the directory has grown enough), as a resize does its work: the core
/// clients held back, the resizer's links, `lib/hare`'s `distribute`, and the core clients
/// catching up (which makes them forget which directories are distributed). Nothing to do if
/// Hare is not mounted or the directory is distributed already; its errors (`ENOENT`: the
/// directory is gone; `EBUSY`: an rmdir is half done).
pub fn distribute(dir: Ino) -> Result<(), Errno> {
    let _one = MOUNTING.lock();
    let Some(mount) = MOUNTED.lock().clone() else {
        return Ok(());
    };
    let held = hold(&mount)?;
    let members = mount.members.lock().clone();
    let table = mount.table.lock().clone();
    let links = resizer_links(&members, &mount.budget)?;
    let done = ::hare::resize::distribute(&mut Resizer(&links), &table, dir);
    drop(links);
    if done == Ok(true) {
        mount.distributions.fetch_add(1, Ordering::Relaxed);
    }
    mount.generation.fetch_add(1, Ordering::AcqRel);
    drop(held);
    done.map(drop)
}

/// Every core client of `mount`, locked in core order (no thread holds two): once this
/// returns, no request of theirs is in flight and none starts.
fn hold(mount: &Mount) -> Result<Vec<SleepLockGuard<'_, Option<CoreClient>>>, Errno> {
    let mut held = Vec::new();
    held.try_reserve_exact(mount.clients.len())
        .map_err(|_| Errno::ENOMEM)?;
    held.extend(mount.clients.iter().map(|c| c.lock()));
    // What the clients posted (closes) is handled before anything moves.
    for c in held.iter().filter_map(|c| c.as_ref()) {
        c.transport().settle()?;
    }
    Ok(held)
}

/// The resizer's links to `members`, each checked to be the server its id says.
fn resizer_links(
    members: &[(ServerId, Member)],
    budget: &Arc<GrantBudget>,
) -> Result<Links, Errno> {
    let core = kcb::current().core_id;
    let mut links = Links::new(Vec::new(), true)?;
    for (id, m) in members {
        let (link, w) = connect(m, (RESIZER_CLIENT, core), None, None, budget)?;
        if w.server != *id {
            return Err(Errno::EIO);
        }
        links.insert(*id, link)?;
    }
    Ok(links)
}

/// A member joined or left even though a later step failed (the free blocks were not all
/// spread): said on the console, not an error for the fleet manager, which would otherwise
/// undo the change.
fn report(done: Result<(), Errno>, what: &str) -> Result<(), Errno> {
    if let Err(e) = done {
        crate::kprintln!("reef: hare: a file server {what}, but the resize ended with {e:?}");
    }
    Ok(())
}
