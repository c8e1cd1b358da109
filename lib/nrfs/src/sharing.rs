//! File pages lent to mappings outside the file system, and pages all replicas share.
//!
//! Reef's `execve` maps a program's file pages into the new address space instead of copying
//! them (as Linux maps its page cache), copy-on-write. The file system only has to know two
//! things, which the embedder answers by the page's address: lend a page (count one more
//! mapping of it) and whether a page is still lent. A lent page is never changed in place: a
//! write or a truncation that would change it gives the file a private copy first, so every
//! mapping keeps seeing the bytes it mapped. Dropping a lent page is the embedder's business
//! too: its allocator must keep the memory until the last mapping is gone (Reef's kernel heap
//! serves file pages with whole frames and frees one only when its share count says so).
//!
//! A `MAP_SHARED` mapping needs more: stores through it must reach every reader of the file,
//! on every node. So such pages become *shared* ([`FsUpdate::SharePages`](crate::FsUpdate)):
//! every replica's copy of the page is replaced by one frame the embedder allocated, which all
//! replicas and mappings hold a share of and which changes in place. Replicas still apply every
//! write, but only the first to apply a write puts its bytes into a shared page (see
//! `Pages::write`), so that the page sees each write once and in log order; the embedder reads
//! and writes the frame for the file system (its memory is changed by mapped stores at any
//! time, which Rust code must not hold references to).

use alloc::vec::Vec;
use nr::Payload;
use spin::{Mutex, MutexGuard, Once};

/// How the embedder counts the mappings of a file page and reaches shared frames, by address.
#[derive(Clone, Copy, Debug)]
pub struct PageSharing {
    /// Records one more holder of the page at this address (a mapping, or a replica of a
    /// shared page). Called under a lock of the page's shard, so the page is neither changed
    /// nor freed meanwhile.
    pub share: fn(usize),
    /// Whether a mapping still holds the page at this address.
    pub is_shared: fn(usize) -> bool,
    /// Drops a replica's share of a shared page (the last holder frees the frame).
    pub release: fn(usize),
    /// Copies bytes of a shared page from the given offset into the buffer.
    pub read: fn(usize, usize, &mut [u8]),
    /// Copies the bytes into a shared page at the given offset.
    pub write: fn(usize, usize, &[u8]),
}

/// A page lent to a mapping ([`FsRead::LendPages`](crate::FsRead)).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Lent {
    /// The page's address (it carries one more share, the mapping's).
    pub addr: usize,
    /// A shared page, which the mapping may write in place; otherwise the replica's own copy,
    /// to be mapped copy-on-write.
    pub shared: bool,
}

static SHARING: Once<PageSharing> = Once::new();

/// Serializes the writes into shared pages with the choice of which replica makes them.
static WRITES: Mutex<()> = Mutex::new(());

/// Holds off other replicas' writes into shared pages.
pub(crate) fn write_lock() -> MutexGuard<'static, ()> {
    WRITES.lock()
}

/// Installs the embedder's page sharing; only the first call counts. Without it,
/// [`FsRead::LendPages`](crate::FsRead::LendPages) answers `EOPNOTSUPP`.
pub fn set_page_sharing(sharing: PageSharing) {
    SHARING.call_once(|| sharing);
}

/// The frames offered to [`FsClient::share_pages`](crate::FsClient::share_pages), as long as a
/// replica may still adopt one. The offerer must hold its own share of each frame until
/// [`Offer::adopted`]: otherwise a replica lagging behind the operation and a later truncation
/// (which the leading replica and the mappings have applied, giving the frame up) would take a
/// share of a frame freed and perhaps reused meanwhile, and write the truncation's zeros into
/// it.
#[derive(Debug)]
pub struct Offer(pub(crate) Payload<Vec<usize>>);

impl Offer {
    /// Whether no replica will adopt one of the frames any more (every replica has applied the
    /// operation, or it never entered the log).
    pub fn adopted(&self) -> bool {
        self.0.is_settled()
    }
}

/// The installed page sharing, if any.
pub(crate) fn sharing() -> Option<&'static PageSharing> {
    SHARING.get()
}
