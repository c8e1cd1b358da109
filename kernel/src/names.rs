//! The name directory of fos §3.2.1 in the kernel: `msg::names::NameServer`, replicated per
//! NUMA node with NR (fos's name server fleet and NrOS's replication meet here), and each
//! core's `NameCache` in its KCB.
//!
//! A lookup on a core first asks the core's cache, which is valid while [`GENERATION`] (bumped
//! after every change that took effect) is the value it was filled at; on a miss it reads the
//! local replica and fills the cache. A member that leaves, dies (its process exits:
//! [`process_gone`]) or moves (pinned to another core: [`process_moved`]) changes the
//! generation, so no cache answers with it again. The directory allocates nothing once
//! created, so every replica gives every operation the same answer.
//!
//! A member is a kernel mailbox (`crate::mailbox`), recorded by its id with its owner's pid
//! and place; closing the mailbox removes its registrations ([`mailbox_gone`]). Names under
//! `fleet/` are the fleet manager's and its members' (`fleet::may_register`).

use crate::kcb;
use crate::replicated::NodeReplicated;
use abi::Errno;
use alloc::format;
use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::fmt::Write;
use core::sync::atomic::{AtomicU64, Ordering};
use msg::names::{choose, Member, NameError, NameServer, Pick, Place, CACHE_MEMBERS, NAME_MAX};
use spin::Once;

/// Counts changes to the directory: a cache filled at another value is stale.
static GENERATION: AtomicU64 = AtomicU64::new(0);
/// Round-robin and tie-breaking tickets.
static TICKETS: AtomicU64 = AtomicU64::new(0);
/// The replicated directory, created by [`init`].
static DIRECTORY: Once<Arc<NodeReplicated<Directory>>> = Once::new();

/// A name, copied out of the caller (operations in the log hold no pointers).
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Name {
    /// The name's bytes, zero after `len`.
    bytes: [u8; NAME_MAX],
    /// Length of the name in bytes.
    len: u8,
}

impl Name {
    /// `bytes` as a name: `EINVAL` if empty or longer than [`NAME_MAX`] (the directory checks
    /// the characters).
    pub fn new(bytes: &[u8]) -> Result<Name, Errno> {
        if bytes.is_empty() || bytes.len() > NAME_MAX {
            return Err(Errno::EINVAL);
        }
        let mut n = Name {
            bytes: [0; NAME_MAX],
            len: bytes.len() as u8,
        };
        n.bytes[..bytes.len()].copy_from_slice(bytes);
        Ok(n)
    }

    /// The name's bytes.
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes[..self.len as usize]
    }
}

/// The replicated structure.
pub struct Directory(NameServer);

/// Read operations.
#[derive(Clone, Copy)]
pub enum ReadOp {
    /// One member of a name, and the members if few enough to cache.
    Lookup(Name, Place, Pick, u64),
    /// The directory as text (`/proc/reef/names`).
    List,
    /// Every member of a name.
    Members(Name),
}

/// Update operations.
#[derive(Clone, Copy)]
pub enum UpdateOp {
    /// Registers a member under a name; whether it may use `fleet/`.
    Register(Name, Member, bool),
    /// Removes a process's registration of a mailbox under a name.
    Unregister(Name, u32, u64),
    /// Removes every registration of a process.
    RemovePid(u32),
    /// Removes every registration of a mailbox.
    RemoveMailbox(u64),
    /// A process now runs on another core and node.
    Moved(u32, u32, u32),
}

/// Responses (a lookup's is the large one, and the common one: no allocation for it).
#[allow(clippy::large_enum_variant)]
pub enum Resp {
    /// `Lookup`: the member, and the name's members if at most [`CACHE_MEMBERS`].
    Found(Option<Member>, Option<([Member; CACHE_MEMBERS], usize)>),
    /// `List`.
    Listing(String),
    /// `Members` (`ENOMEM` if the list could not be made).
    Members(Result<Vec<Member>, Errno>),
    /// An update: registrations changed, or why none did.
    Done(Result<usize, NameError>),
}

impl nr::Dispatch for Directory {
    type ReadOp = ReadOp;
    type UpdateOp = UpdateOp;
    type Resp = Resp;

    fn dispatch(&self, op: ReadOp) -> Resp {
        match op {
            ReadOp::Lookup(name, from, pick, ticket) => {
                let Some(members) = self.0.members(name.as_bytes()) else {
                    return Resp::Found(None, None);
                };
                let few = (members.len() <= CACHE_MEMBERS).then(|| {
                    let mut a = [members[0]; CACHE_MEMBERS];
                    a[..members.len()].copy_from_slice(members);
                    (a, members.len())
                });
                Resp::Found(choose(members, from, pick, ticket), few)
            }
            ReadOp::List => {
                let mut s = String::new();
                for (name, members) in self.0.iter() {
                    let _ = write!(s, "{}:", String::from_utf8_lossy(name));
                    for m in members {
                        let _ = write!(
                            s,
                            " mailbox={:#x} pid={} core={} node={}",
                            m.mailbox, m.pid, m.core, m.node
                        );
                    }
                    s.push('\n');
                }
                Resp::Listing(s)
            }
            ReadOp::Members(name) => {
                let members = self.0.members(name.as_bytes()).unwrap_or_default();
                let mut v = Vec::new();
                Resp::Members(match v.try_reserve_exact(members.len()) {
                    Ok(()) => {
                        v.extend_from_slice(members);
                        Ok(v)
                    }
                    Err(_) => Err(Errno::ENOMEM),
                })
            }
        }
    }

    fn dispatch_mut(&mut self, op: UpdateOp) -> Resp {
        Resp::Done(match op {
            UpdateOp::Register(name, member, reserved) => self
                .0
                .register(name.as_bytes(), member, reserved)
                .map(|()| 1),
            UpdateOp::Unregister(name, pid, mailbox) => {
                self.0.unregister(name.as_bytes(), pid, mailbox).map(|()| 1)
            }
            UpdateOp::RemovePid(pid) => Ok(self.0.remove_where(|m| m.pid == pid)),
            UpdateOp::RemoveMailbox(id) => Ok(self.0.remove_where(|m| m.mailbox == id)),
            UpdateOp::Moved(pid, core, node) => Ok(self.0.moved(pid, core, node)),
        })
    }
}

/// Creates the directory (one replica per node, each with its room taken on its node).
pub fn init() -> Result<(), Errno> {
    let d = NodeReplicated::try_new(256, |_| {
        NameServer::try_new().map(Directory).ok_or(Errno::ENOMEM)
    })?;
    DIRECTORY.call_once(|| d);
    Ok(())
}

/// The replicated directory (after [`init`]).
fn directory() -> &'static NodeReplicated<Directory> {
    DIRECTORY.get().expect("names::init runs at boot")
}

/// The errno for a directory error (`EINVAL`, `EPERM`, `EEXIST`, `ENOSPC`, `EDQUOT` or
/// `ENOENT`).
fn errno(e: NameError) -> Errno {
    match e {
        NameError::Invalid => Errno::EINVAL,
        NameError::Reserved => Errno::EPERM,
        NameError::Exists => Errno::EEXIST,
        NameError::Full => Errno::ENOSPC,
        NameError::Quota => Errno::EDQUOT,
        NameError::NotFound => Errno::ENOENT,
    }
}

/// Runs an update; bumps the generation if it changed anything.
fn update(op: UpdateOp) -> Result<usize, Errno> {
    let Resp::Done(r) = directory().execute_mut(op) else {
        unreachable!("updates answer Done")
    };
    let changed = r.map_err(errno)?;
    if changed > 0 {
        GENERATION.fetch_add(1, Ordering::AcqRel);
    }
    Ok(changed)
}

/// Where the calling core is.
fn here() -> Place {
    let k = kcb::current();
    Place {
        core: k.core_id as u32,
        node: k.node_id as u32,
    }
}

/// Registers process `pid`'s `mailbox` under `name`, on the calling core; names under
/// `fleet/` only if `reserved` (the caller may use them, `fleet::may_register`).
pub fn register(name: Name, pid: u32, mailbox: u64, reserved: bool) -> Result<(), Errno> {
    let at = here();
    let member = Member {
        mailbox,
        pid,
        core: at.core,
        node: at.node,
    };
    update(UpdateOp::Register(name, member, reserved)).map(|_| ())
}

/// Removes process `pid`'s registration of `mailbox` under `name`.
pub fn unregister(name: Name, pid: u32, mailbox: u64) -> Result<(), Errno> {
    update(UpdateOp::Unregister(name, pid, mailbox)).map(|_| ())
}

/// A member of `name` as `pick` chooses for the calling core: from the core's cache if it
/// holds the name at the current generation, else from the local replica (then cached).
pub fn lookup(name: Name, pick: Pick) -> Result<Member, Errno> {
    let from = here();
    let ticket = TICKETS.fetch_add(1, Ordering::Relaxed);
    let generation = GENERATION.load(Ordering::Acquire);
    let k = kcb::current();
    if let Some(m) = k
        .names
        .lock()
        .cached(name.as_bytes(), generation, from, pick, ticket)
    {
        return Ok(m);
    }
    let Resp::Found(member, few) = directory().execute(ReadOp::Lookup(name, from, pick, ticket))
    else {
        unreachable!("Lookup answers Found")
    };
    if let Some((members, n)) = few {
        k.names
            .lock()
            .fill(name.as_bytes(), &members[..n], generation);
    }
    member.ok_or(Errno::ENOENT)
}

/// Every member of `name` (none: an empty list), from the local replica.
pub fn members(name: Name) -> Result<Vec<Member>, Errno> {
    let Resp::Members(m) = directory().execute(ReadOp::Members(name)) else {
        unreachable!("Members answers Members")
    };
    m
}

/// Process `pid` exited: its registrations go.
pub fn process_gone(pid: u32) {
    // An update of a removal allocates nothing and cannot fail.
    let _ = update(UpdateOp::RemovePid(pid));
}

/// Mailbox `id` closed: its registrations go.
pub fn mailbox_gone(id: u64) {
    let _ = update(UpdateOp::RemoveMailbox(id));
}

/// Process `pid` was pinned to `core`: its registrations follow.
pub fn process_moved(pid: u32, core: usize) {
    let node = kcb::get(core).map_or(0, |k| k.node_id) as u32;
    let _ = update(UpdateOp::Moved(pid, core as u32, node));
}

/// `/proc/reef/names`: every name and member, then each core's cache statistics.
pub fn report() -> String {
    let Resp::Listing(mut s) = directory().execute(ReadOp::List) else {
        unreachable!("List answers Listing")
    };
    let _ = writeln!(s, "generation {}", GENERATION.load(Ordering::Acquire));
    for core in crate::kcb::online_cores() {
        if let Some(k) = kcb::get(core) {
            let c = k.names.lock();
            s.push_str(&format!(
                "core {core} cache: hits={} misses={} invalidations={}\n",
                c.hits, c.misses, c.invalidations
            ));
        }
    }
    s
}
