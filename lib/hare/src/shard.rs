//! Where things live: a fixed number of shards, and a versioned table mapping shards to
//! servers.
//!
//! Hare places a directory entry with `hash(dir, name) % NSERVERS` (§3.4), which moves almost
//! every entry when the number of servers changes. Reef hashes entries and inodes to one of
//! [`SHARDS`] shards instead, and a [`ShardTable`] maps shards to servers, so a resize moves
//! whole shards (§6.1.1's open problem; [`crate::resize`] moves them, and
//! docs/plans.md says what is left).
//!
//! * An inode's shard is its number modulo [`SHARDS`]: a server creates inodes only in the
//!   shards it owns ([`ShardTable::shards_of`]), so the number says where the inode is.
//! * An entry of a *distributed* directory is in the shard of `hash(dir, name)`; every entry
//!   of an ordinary directory is in its directory's shard, on the directory's *home* server,
//!   which also holds the directory's inode.

use alloc::vec::Vec;

use crate::{Ino, ServerId};

/// Number of shards of inodes and directory entries.
pub const SHARDS: usize = 256;

/// A shard number, below [`SHARDS`].
pub type Shard = usize;

/// The shard of inode `ino`.
pub const fn inode_shard(ino: Ino) -> Shard {
    (ino % SHARDS as u64) as Shard
}

/// The shard of entry `name` in distributed directory `dir` (FNV-1a over both).
pub fn entry_shard(dir: Ino, name: &[u8]) -> Shard {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in dir.to_le_bytes().iter().chain(name) {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    (h % SHARDS as u64) as Shard
}

/// Which server holds each shard, with a version that changes with every resize.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ShardTable {
    version: u64,
    owner: [ServerId; SHARDS],
}

impl ShardTable {
    /// `servers` servers (1 to [`SHARDS`]), shard `s` on server `s % servers`. None for 0 or
    /// more than [`SHARDS`] servers.
    pub fn spread(servers: usize) -> Option<Self> {
        if servers == 0 || servers > SHARDS {
            return None;
        }
        let mut owner = [0; SHARDS];
        for (s, o) in owner.iter_mut().enumerate() {
            *o = (s % servers) as ServerId;
        }
        Some(Self { version: 1, owner })
    }

    /// The table of version `version` whose shard `s` is on server `owner[s]` (a table
    /// received from a server).
    pub const fn from_owners(version: u64, owner: [ServerId; SHARDS]) -> Self {
        Self { version, owner }
    }

    /// Each shard's server, by shard.
    pub const fn owners(&self) -> &[ServerId; SHARDS] {
        &self.owner
    }

    /// The table's version.
    pub const fn version(&self) -> u64 {
        self.version
    }

    /// The server holding shard `shard`.
    pub const fn server(&self, shard: Shard) -> ServerId {
        self.owner[shard % SHARDS]
    }

    /// The server holding inode `ino`.
    pub const fn inode_server(&self, ino: Ino) -> ServerId {
        self.server(inode_shard(ino))
    }

    /// The server holding entry `name` of directory `dir` (`distributed` says how `dir`'s
    /// entries are placed).
    pub fn entry_server(&self, dir: Ino, name: &[u8], distributed: bool) -> ServerId {
        if distributed {
            self.server(entry_shard(dir, name))
        } else {
            self.inode_server(dir)
        }
    }

    /// The table after a resize to `servers` (distinct ids): the next version, each server
    /// holding `SHARDS / servers.len()` shards or one more, and as few shards moved as that
    /// allows (a shard stays with its owner while the owner is kept and under its share).
    /// `None` for no servers or more than [`SHARDS`].
    pub fn resized(&self, servers: &[ServerId]) -> Option<Self> {
        let n = servers.len();
        if n == 0 || n > SHARDS {
            return None;
        }
        let quota = |i: usize| SHARDS / n + usize::from(i < SHARDS % n);
        let mut held = alloc::vec![0usize; n];
        let mut owner = [ServerId::MAX; SHARDS];
        let place = |s: ServerId| servers.iter().position(|&x| x == s);
        for (shard, o) in owner.iter_mut().enumerate() {
            if let Some(i) = place(self.owner[shard]) {
                if held[i] < quota(i) {
                    held[i] += 1;
                    *o = self.owner[shard];
                }
            }
        }
        for o in owner.iter_mut().filter(|o| **o == ServerId::MAX) {
            let i = (0..n)
                .find(|&i| held[i] < quota(i))
                .expect("room for every shard");
            held[i] += 1;
            *o = servers[i];
        }
        Some(Self {
            version: self.version + 1,
            owner,
        })
    }

    /// The shards that change owner from this table to `to`: (shard, old owner, new owner).
    pub fn moves(&self, to: &ShardTable) -> Vec<(Shard, ServerId, ServerId)> {
        (0..SHARDS)
            .filter(|&s| self.owner[s] != to.owner[s])
            .map(|s| (s, self.owner[s], to.owner[s]))
            .collect()
    }

    /// The servers holding some shard, in increasing order.
    pub fn servers(&self) -> Vec<ServerId> {
        let mut v: Vec<ServerId> = self.owner.to_vec();
        v.sort_unstable();
        v.dedup();
        v
    }

    /// The shards server `server` holds, in increasing order.
    pub fn shards_of(&self, server: ServerId) -> Vec<Shard> {
        (0..SHARDS).filter(|&s| self.owner[s] == server).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn counts(t: &ShardTable, n: ServerId) -> Vec<usize> {
        (0..n).map(|s| t.shards_of(s).len()).collect()
    }

    #[test]
    fn a_resize_balances_the_shards_and_moves_no_more_than_it_must() {
        let two = ShardTable::spread(2).unwrap();
        let three = two.resized(&[0, 1, 2]).unwrap();
        assert_eq!(three.version(), two.version() + 1);
        assert_eq!(counts(&three, 3), [86, 85, 85]);
        // The new server's 85 shards, all from the two old ones, and nothing else.
        let moves = two.moves(&three);
        assert_eq!(moves.len(), 85);
        assert!(moves.iter().all(|&(_, from, to)| from < 2 && to == 2));
        // Back to two: the leaving server's 85 shards go, nothing else moves.
        let back = three.resized(&[0, 1]).unwrap();
        assert_eq!(counts(&back, 2), [128, 128]);
        let moves = three.moves(&back);
        assert_eq!(moves.len(), 85);
        assert!(moves.iter().all(|&(_, from, _)| from == 2));
        // Any other set of ids, and the limits.
        let odd = back.resized(&[7, 3]).unwrap();
        assert_eq!(odd.servers(), [3, 7]);
        assert_eq!(back.resized(&[]), None);
    }
}
