//! File pages lent to mappings outside the file system.
//!
//! Reef's `execve` maps a program's file pages into the new address space instead of copying
//! them (as Linux maps its page cache), copy-on-write. The file system only has to know two
//! things, which the embedder answers by the page's address: lend a page (count one more
//! mapping of it) and whether a page is still lent. A lent page is never changed in place: a
//! write or a truncation that would change it gives the file a private copy first, so every
//! mapping keeps seeing the bytes it mapped. Dropping a lent page is the embedder's business
//! too: its allocator must keep the memory until the last mapping is gone (Reef's kernel heap
//! serves file pages with whole frames and frees one only when its share count says so).

use spin::Once;

/// How the embedder counts the mappings of a file page, by the page's address.
#[derive(Clone, Copy, Debug)]
pub struct PageSharing {
    /// Records one more mapping of the page at this address. Called under the read lock of the
    /// page's shard, so the page is neither changed nor freed meanwhile.
    pub share: fn(usize),
    /// Whether a mapping still holds the page at this address.
    pub is_shared: fn(usize) -> bool,
}

static SHARING: Once<PageSharing> = Once::new();

/// Installs the embedder's page sharing; only the first call counts. Without it,
/// [`FsRead::LendPages`](crate::FsRead::LendPages) answers `EOPNOTSUPP`.
pub fn set_page_sharing(sharing: PageSharing) {
    SHARING.call_once(|| sharing);
}

/// The installed page sharing, if any.
pub(crate) fn sharing() -> Option<&'static PageSharing> {
    SHARING.get()
}
