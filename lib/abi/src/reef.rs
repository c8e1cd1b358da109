//! Reef's own system calls, numbered above Linux's range, and their arguments (the C side is
//! in `usr/reef-test.h` and `usr/reef_msg.h`).

/// First number of Reef's own system calls.
pub const REEF_BASE: usize = 1024;
/// `reef_free_bytes()`: free physical memory in bytes.
pub const REEF_FREE_BYTES: usize = REEF_BASE;
/// `reef_name_register(name, len, mailbox)`: registers the caller's `mailbox` (an id of its
/// choosing until kernel mailboxes exist) under `name` in the name directory (fos §3.2.1).
pub const REEF_NAME_REGISTER: usize = REEF_BASE + 1;
/// `reef_name_unregister(name, len, mailbox)`: removes that registration.
pub const REEF_NAME_UNREGISTER: usize = REEF_BASE + 2;
/// `reef_name_lookup(name, len, how, out)`: one member of `name`, chosen as `how` says, into
/// `out` (a [`NameMember`]).
pub const REEF_NAME_LOOKUP: usize = REEF_BASE + 3;
/// The last Reef call.
pub const REEF_LAST: usize = REEF_NAME_LOOKUP;

/// `reef_name_lookup`'s `how`: the member nearest the caller (its core, then its node, then
/// any; equally near ones in turn).
pub const REEF_NAME_NEAREST: u64 = 0;
/// `reef_name_lookup`'s `how`: every member in turn.
pub const REEF_NAME_ROUND_ROBIN: u64 = 1;

/// Size of what `reef_name_lookup` writes: `struct reef_name_member { u64 mailbox; u32 pid,
/// core, node, pad; }`.
pub const NAME_MEMBER_SIZE: usize = 24;
