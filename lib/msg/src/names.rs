//! The name directory of fos §3.2.1: symbolic names for mailboxes, one-to-many names for the
//! members of a fleet, lookups that pick the member nearest the caller or take turns, names
//! under a reserved prefix for the fleet manager only (§3.2.2), and a per-core cache.
//!
//! [`NameServer`] is a sequential structure: the kernel replicates it per NUMA node with NR
//! (fos's name server fleet and NrOS's replication meet here), so every operation is
//! deterministic (round-robin takes the caller's ticket instead of keeping a counter), and
//! no operation allocates: the table's room for [`NAMES_MAX`] names of [`MEMBERS_MAX`] members
//! is taken once, by [`NameServer::try_new`], so every replica gives the same answer (NrOS §4.1:
//! an allocation that failed on one replica only would make them diverge).
//! Every change bumps [`NameServer::generation`]; a [`NameCache`] (one per core, in the KCB)
//! keeps recent lookups and drops them all when the generation it saw is not the current one,
//! so a member that leaves, dies or moves is never returned from a cache.

use alloc::vec::Vec;

/// Longest name, in bytes.
pub const NAME_MAX: usize = 64;
/// Names in a directory.
pub const NAMES_MAX: usize = 256;
/// Members of one name (a fleet's servers, at most one per core).
pub const MEMBERS_MAX: usize = 64;
/// Registrations one process may hold at once, so that no process can take the whole
/// directory.
pub const NAMES_PER_PROCESS: usize = 16;
/// Names under this prefix are registered by the fleet manager only.
pub const RESERVED_PREFIX: &[u8] = b"fleet/";

/// One registration of a name: a mailbox, its owner, and where the owner runs. A process
/// registers a mailbox under a name once.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Member {
    /// The kernel's id of the mailbox.
    pub mailbox: u64,
    /// The owning process.
    pub pid: u32,
    /// The core it runs on (a fleet member is bound to one).
    pub core: u32,
    /// That core's NUMA node.
    pub node: u32,
}

/// Where a lookup comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Place {
    /// The caller's core.
    pub core: u32,
    /// The caller's NUMA node.
    pub node: u32,
}

/// How a lookup chooses among the members of a name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pick {
    /// A member on the caller's core, else on its node, else any; among members equally
    /// near, the one the caller's ticket selects.
    Nearest,
    /// Every member in turn, by the caller's ticket.
    RoundRobin,
}

/// Why a directory operation failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NameError {
    /// Empty, longer than [`NAME_MAX`], or holding a byte outside printable ASCII.
    Invalid,
    /// Under [`RESERVED_PREFIX`], and the caller is not the fleet manager.
    Reserved,
    /// The process has already registered the mailbox under the name.
    Exists,
    /// [`NAMES_MAX`] names, or [`MEMBERS_MAX`] members of the name.
    Full,
    /// The process holds [`NAMES_PER_PROCESS`] registrations already.
    Quota,
    /// No such name, or the process has not registered the mailbox under it.
    NotFound,
}

#[derive(Clone, Copy)]
struct Entry {
    name: [u8; NAME_MAX],
    name_len: u8,
    members: [Member; MEMBERS_MAX],
    count: u8,
}

impl Entry {
    fn name(&self) -> &[u8] {
        &self.name[..self.name_len as usize]
    }

    fn members(&self) -> &[Member] {
        &self.members[..self.count as usize]
    }
}

const NO_MEMBER: Member = Member {
    mailbox: 0,
    pid: 0,
    core: 0,
    node: 0,
};

/// The directory: names, sorted, each with its members in registration order, in room taken
/// once.
pub struct NameServer {
    entries: Vec<Entry>,
    generation: u64,
}

/// Checks a name.
pub fn valid_name(name: &[u8]) -> Result<(), NameError> {
    if name.is_empty() || name.len() > NAME_MAX || !name.iter().all(|b| (0x21..0x7f).contains(b)) {
        return Err(NameError::Invalid);
    }
    Ok(())
}

/// How far `m` is from `from`: 0 on its core, 1 on its node, 2 elsewhere.
fn distance(m: &Member, from: Place) -> u8 {
    if m.core == from.core {
        0
    } else if m.node == from.node {
        1
    } else {
        2
    }
}

/// The member of `members` that `pick` chooses for a caller at `from` with `ticket`.
pub fn choose(members: &[Member], from: Place, pick: Pick, ticket: u64) -> Option<Member> {
    match pick {
        Pick::RoundRobin => members
            .get((ticket % members.len().max(1) as u64) as usize)
            .copied(),
        Pick::Nearest => {
            let best = members.iter().map(|m| distance(m, from)).min()?;
            let near = members.iter().filter(|m| distance(m, from) == best);
            let count = near.clone().count() as u64;
            near.clone().nth((ticket % count) as usize).copied()
        }
    }
}

impl NameServer {
    /// An empty directory with room for [`NAMES_MAX`] names; `None` if that much memory is
    /// not to be had.
    pub fn try_new() -> Option<Self> {
        let mut entries = Vec::new();
        entries.try_reserve_exact(NAMES_MAX).ok()?;
        Some(NameServer {
            entries,
            generation: 0,
        })
    }

    fn find(&self, name: &[u8]) -> Result<usize, usize> {
        self.entries.binary_search_by(|e| e.name().cmp(name))
    }

    /// Registers `member` under `name`; `manager`: the caller is the fleet manager, which
    /// alone may use [`RESERVED_PREFIX`].
    pub fn register(
        &mut self,
        name: &[u8],
        member: Member,
        manager: bool,
    ) -> Result<(), NameError> {
        valid_name(name)?;
        if name.starts_with(RESERVED_PREFIX) && !manager {
            return Err(NameError::Reserved);
        }
        let held = self
            .entries
            .iter()
            .flat_map(|e| e.members())
            .filter(|m| m.pid == member.pid)
            .take(NAMES_PER_PROCESS)
            .count();
        match self.find(name) {
            Ok(i) => {
                let e = &mut self.entries[i];
                if e.members()
                    .iter()
                    .any(|m| (m.pid, m.mailbox) == (member.pid, member.mailbox))
                {
                    return Err(NameError::Exists);
                }
                if held == NAMES_PER_PROCESS {
                    return Err(NameError::Quota);
                }
                if e.count as usize == MEMBERS_MAX {
                    return Err(NameError::Full);
                }
                e.members[e.count as usize] = member;
                e.count += 1;
            }
            Err(i) => {
                if held == NAMES_PER_PROCESS {
                    return Err(NameError::Quota);
                }
                if self.entries.len() == NAMES_MAX {
                    return Err(NameError::Full);
                }
                let mut e = Entry {
                    name: [0; NAME_MAX],
                    name_len: name.len() as u8,
                    members: [NO_MEMBER; MEMBERS_MAX],
                    count: 1,
                };
                e.name[..name.len()].copy_from_slice(name);
                e.members[0] = member;
                // Within the capacity taken at creation: no allocation.
                self.entries.insert(i, e);
            }
        }
        self.generation += 1;
        Ok(())
    }

    /// Removes process `pid`'s `mailbox` from `name` (the name goes when its last member
    /// does).
    pub fn unregister(&mut self, name: &[u8], pid: u32, mailbox: u64) -> Result<(), NameError> {
        let i = self.find(name).map_err(|_| NameError::NotFound)?;
        let e = &mut self.entries[i];
        let at = e
            .members()
            .iter()
            .position(|m| (m.pid, m.mailbox) == (pid, mailbox))
            .ok_or(NameError::NotFound)?;
        e.members.copy_within(at + 1..e.count as usize, at);
        e.count -= 1;
        if e.count == 0 {
            self.entries.remove(i);
        }
        self.generation += 1;
        Ok(())
    }

    /// Removes every registration that `gone` selects (a closed mailbox, a dead process);
    /// returns how many.
    pub fn remove_where(&mut self, gone: impl Fn(&Member) -> bool) -> usize {
        let mut removed = 0;
        for e in &mut self.entries {
            let mut kept = 0;
            for i in 0..e.count as usize {
                if gone(&e.members[i]) {
                    removed += 1;
                } else {
                    e.members[kept] = e.members[i];
                    kept += 1;
                }
            }
            e.count = kept as u8;
        }
        self.entries.retain(|e| e.count > 0);
        if removed > 0 {
            self.generation += 1;
        }
        removed
    }

    /// Records that process `pid` now runs on `core` of `node`; returns the number of
    /// registrations changed.
    pub fn moved(&mut self, pid: u32, core: u32, node: u32) -> usize {
        let mut changed = 0;
        for e in &mut self.entries {
            for m in &mut e.members[..e.count as usize] {
                if m.pid == pid && (m.core, m.node) != (core, node) {
                    (m.core, m.node) = (core, node);
                    changed += 1;
                }
            }
        }
        if changed > 0 {
            self.generation += 1;
        }
        changed
    }

    /// The members of `name`, in registration order.
    pub fn members(&self, name: &[u8]) -> Option<&[Member]> {
        self.find(name).ok().map(|i| self.entries[i].members())
    }

    /// The member of `name` that `pick` chooses for a caller at `from` with `ticket`.
    pub fn lookup(&self, name: &[u8], from: Place, pick: Pick, ticket: u64) -> Option<Member> {
        choose(self.members(name)?, from, pick, ticket)
    }

    /// Every name with its members, in name order (for `/proc/reef/names`).
    pub fn iter(&self) -> impl Iterator<Item = (&[u8], &[Member])> {
        self.entries.iter().map(|e| (e.name(), e.members()))
    }

    /// Counts changes: a cache filled at another generation is stale.
    pub fn generation(&self) -> u64 {
        self.generation
    }
}

/// Lookups a [`NameCache`] keeps.
pub const CACHE_SLOTS: usize = 16;
/// Members of a name a cache slot holds (larger names are looked up every time).
pub const CACHE_MEMBERS: usize = 8;

#[derive(Clone, Copy)]
struct CacheSlot {
    name: [u8; NAME_MAX],
    name_len: u8,
    members: [Member; CACHE_MEMBERS],
    count: u8,
    /// When it was last used, for replacement.
    used: u64,
}

/// A core's cache of names (fos's microkernel name cache): no allocation, a fixed number of
/// slots replaced least-recently-used first, all dropped when the directory's generation
/// changes.
pub struct NameCache {
    slots: [Option<CacheSlot>; CACHE_SLOTS],
    generation: u64,
    clock: u64,
    /// Lookups answered from the cache.
    pub hits: u64,
    /// Lookups that went to the directory.
    pub misses: u64,
    /// Times the cache was emptied because the directory changed.
    pub invalidations: u64,
}

impl Default for NameCache {
    fn default() -> Self {
        Self::new()
    }
}

impl NameCache {
    /// An empty cache.
    pub const fn new() -> Self {
        NameCache {
            slots: [None; CACHE_SLOTS],
            generation: 0,
            clock: 0,
            hits: 0,
            misses: 0,
            invalidations: 0,
        }
    }

    /// Drops everything if the directory's `generation` is not the one the cache was filled
    /// at.
    fn validate(&mut self, generation: u64) {
        if generation != self.generation {
            if self.slots.iter().any(Option::is_some) {
                self.invalidations += 1;
            }
            self.slots = [None; CACHE_SLOTS];
            self.generation = generation;
        }
    }

    /// Answers a lookup of `name` from the cache if it holds the name at the directory's
    /// current `generation` (a hit); `None` is a miss: look in the directory, then [`fill`].
    ///
    /// [`fill`]: NameCache::fill
    pub fn cached(
        &mut self,
        name: &[u8],
        generation: u64,
        from: Place,
        pick: Pick,
        ticket: u64,
    ) -> Option<Member> {
        self.validate(generation);
        self.clock += 1;
        let clock = self.clock;
        let hit = self
            .slots
            .iter_mut()
            .flatten()
            .find(|s| &s.name[..s.name_len as usize] == name);
        match hit {
            Some(s) => {
                s.used = clock;
                self.hits += 1;
                choose(&s.members[..s.count as usize], from, pick, ticket)
            }
            None => {
                self.misses += 1;
                None
            }
        }
    }

    /// Keeps the `members` of `name` that the directory had at `generation` (read after a
    /// miss). Names with no members or more than [`CACHE_MEMBERS`] are not kept.
    pub fn fill(&mut self, name: &[u8], members: &[Member], generation: u64) {
        self.validate(generation);
        if members.is_empty() || members.len() > CACHE_MEMBERS || name.len() > NAME_MAX {
            return;
        }
        let mut slot = CacheSlot {
            name: [0; NAME_MAX],
            name_len: name.len() as u8,
            members: [NO_MEMBER; CACHE_MEMBERS],
            count: members.len() as u8,
            used: self.clock,
        };
        slot.name[..name.len()].copy_from_slice(name);
        slot.members[..members.len()].copy_from_slice(members);
        let same = |s: &Option<CacheSlot>| {
            s.as_ref()
                .is_some_and(|s| &s.name[..s.name_len as usize] == name)
        };
        let at = match self.slots.iter().position(same) {
            Some(i) => i,
            None => (0..CACHE_SLOTS)
                .min_by_key(|&i| self.slots[i].as_ref().map_or(0, |s| s.used))
                .expect("CACHE_SLOTS > 0"),
        };
        self.slots[at] = Some(slot);
    }
}
