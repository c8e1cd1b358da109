//! Where things live: a fixed number of shards, and a versioned table mapping shards to
//! servers.
//!
//! Hare places a directory entry with `hash(dir, name) % NSERVERS` (§3.4), which moves almost
//! every entry when the number of servers changes. Reef hashes entries and inodes to one of
//! [`SHARDS`] shards instead, and a [`ShardTable`] maps shards to servers, so a resize moves
//! whole shards (§6.1.1's open problem; the moving itself is not built yet, see
//! docs/plans.md).
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
