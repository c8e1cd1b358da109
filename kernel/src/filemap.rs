//! File pages in address spaces: a program's segments for `execve` ([`crate::exec`]) and
//! file mappings for `mmap` ([`map_file`]), brought back on demand ([`fault_in`]) and taken
//! away past a file's new end when it is truncated ([`truncated`]).
//!
//! A page whose bytes are one whole page of an NR-FS file at a page-aligned offset is the
//! file's own page, lent by NR-FS (this node's replica's copy, see `nrfs::PageSharing`) and
//! mapped copy-on-write, as Linux maps its page cache: nothing is copied or zeroed, every
//! process mapping the file maps the same frames (so QEMU's translated code for a program's
//! pages is reused from one `execve` to the next), and a write through the mapping gives the
//! process its own copy. NR-FS never changes a lent page in place (a write to the file gives
//! the file a new page), so a private mapping keeps the bytes it mapped. Any other page (a
//! page shared by two segments, partly `.bss`, a hole of the file, a file in Hare) is a private
//! frame filled from the file and zeroed where the file gives nothing.

use crate::arch::paging;
use crate::fs::MappedFile;
use crate::mm::{self, FrameSize};
use crate::proc;
use crate::vm::{PageMap, VSpace, PAGE_SIZE};
use abi::Errno;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicU64, Ordering};
use nrfs::Ino;
use vspace::{Mapping, PageSize, Prot, RegionKind};

/// Most pages lent or filled before they are mapped.
const BATCH: usize = 256;

/// The pages of one `execve` or `mmap` on their way into an address space.
pub struct FilePages {
    /// Private frames.
    private: Vec<PageMap>,
    /// Lent file pages, each with the share NR-FS gave it for this address space.
    lent: Vec<Mapping>,
    /// A page of scratch space for filling private frames from the file.
    buf: Vec<u8>,
}

impl FilePages {
    /// Nothing made yet.
    pub fn new() -> Result<Self, Errno> {
        Ok(FilePages {
            private: Vec::new(),
            lent: Vec::new(),
            buf: crate::mm::zeroed_buffer(PAGE_SIZE as usize)?,
        })
    }

    /// Lends the `n` (at most [`BATCH`]) whole file pages from page index `first` for the
    /// pages from `va` up, mapped with `prot`: copy-on-write, except a shared page (one frame
    /// for all replicas) in a `shared` mapping; a page NR-FS cannot lend (a hole, past the
    /// end, a file in Hare) goes to `other` with its address.
    fn lend(
        &mut self,
        vm: &VSpace,
        file: &MappedFile,
        (va, first, n): (u64, u64, usize),
        (prot, shared): (Prot, bool),
        mut other: impl FnMut(&mut Self, u64) -> Result<(), Errno>,
    ) -> Result<(), Errno> {
        if self.private.len() + self.lent.len() + n > BATCH {
            self.map(vm)?;
        }
        self.lent.try_reserve(n).map_err(|_| Errno::ENOMEM)?;
        for (i, frame) in file.lend_pages(first, n)?.into_iter().enumerate() {
            let page = va + i as u64 * PAGE_SIZE;
            match frame {
                Some((phys, in_place)) => {
                    let cow = !(shared && in_place);
                    self.lent.push(Mapping {
                        vaddr: page,
                        phys,
                        size: PageSize::Base4K,
                        prot: Prot {
                            write: prot.write && !cow,
                            ..prot
                        },
                        cow,
                    })
                }
                None => other(self, page)?,
            }
        }
        Ok(())
    }

    /// Adds a private frame for the page at `va`, mapped with `prot`: the file's bytes
    /// `parts` gives as (file offset, from address, to address), zero elsewhere (a page the
    /// file fills whole is not zeroed first).
    fn fill(
        &mut self,
        vm: &VSpace,
        file: &MappedFile,
        va: u64,
        prot: Prot,
        parts: impl Iterator<Item = (u64, u64, u64)> + Clone,
    ) -> Result<(), Errno> {
        if self.private.len() + self.lent.len() >= BATCH {
            self.map(vm)?;
        }
        self.private.try_reserve(1).map_err(|_| Errno::ENOMEM)?;
        let frame = mm::allocate_user(FrameSize::Base)
            .map_err(|_| Errno::ENOMEM)?
            .base();
        // Recorded at once, so that an error below still frees it.
        self.private.push((va, frame, PageSize::Base4K, prot));
        if !parts
            .clone()
            .any(|(_, from, to)| from == va && to == va + PAGE_SIZE)
        {
            paging::zero_phys(frame, PAGE_SIZE);
        }
        for (off, from, to) in parts {
            let chunk = &mut self.buf[..(to - from) as usize];
            match file.read_at(off, chunk)? {
                n if n == chunk.len() => paging::write_phys(frame + (from - va), chunk),
                _ => return Err(Errno::EIO),
            }
        }
        Ok(())
    }

    /// Maps the pages made so far into `vm`; `ENOMEM` if some could not be (no memory for a
    /// page table: the page would read as zeros instead of the file's bytes). Called last by
    /// every user, also after an error, so that what was made is mapped and the address
    /// space's teardown or unmap frees it.
    pub fn map(&mut self, vm: &VSpace) -> Result<(), Errno> {
        let (private, lent) = (self.private.len(), self.lent.len());
        let mapped = vm.map_frames(core::mem::take(&mut self.private))
            + vm.map_copies(core::mem::take(&mut self.lent));
        if mapped == private + lent {
            Ok(())
        } else {
            Err(Errno::ENOMEM)
        }
    }

    /// Makes the pages of `[start, end)` of a program's mapping: `whole(va)` names the file
    /// page that is the page at `va` byte for byte, if any, and `parts(va)` the file's bytes
    /// in any other page (see [`fill`](Self::fill)).
    pub fn load_image<P>(
        &mut self,
        vm: &VSpace,
        file: &MappedFile,
        (start, end): (u64, u64),
        prot: Prot,
        whole: impl Fn(u64) -> Option<u64>,
        parts: impl Fn(u64) -> P,
    ) -> Result<(), Errno>
    where
        P: Iterator<Item = (u64, u64, u64)> + Clone,
    {
        let mut va = start;
        while va < end {
            if let Some(first) = whole(va) {
                // A run of consecutive file pages, lent in one read of the replica.
                let mut n = 1;
                while n < BATCH
                    && va + n as u64 * PAGE_SIZE < end
                    && whole(va + n as u64 * PAGE_SIZE) == Some(first + n as u64)
                {
                    n += 1;
                }
                self.lend(vm, file, (va, first, n), (prot, false), |me, page| {
                    me.fill(vm, file, page, prot, parts(page))
                })?;
                va += n as u64 * PAGE_SIZE;
            } else {
                self.fill(vm, file, va, prot, parts(va))?;
                va += PAGE_SIZE;
            }
        }
        Ok(())
    }
}

/// The parts of the page at `va` a file mapping of `file` at `start` from offset `off` takes
/// from the file: none past the end of the file.
fn file_part(
    file: &MappedFile,
    start: u64,
    off: u64,
    va: u64,
) -> impl Iterator<Item = (u64, u64, u64)> + Clone {
    let at = off + (va - start);
    let to = va + file.size.saturating_sub(at).min(PAGE_SIZE);
    (to > va).then_some((at, va, to)).into_iter()
}

/// `mmap` of `len` bytes of `file` from offset `off` (page-aligned) at `start`, where the
/// caller made a [`RegionKind::File`] region: maps every page that holds bytes of the file; the
/// pages past the end of the file stay unmapped, and an access to them raises SIGBUS, as on
/// Linux. Protection `PROT_NONE` maps the pages too, so that a later `mprotect` finds them.
///
/// A private mapping (`shared` false) maps NR-FS's pages copy-on-write, or private frames
/// filled from the file (see the module's note). A shared one first makes the pages frames
/// every replica of the file shares (`MappedFile::share_pages`: NR-FS changes them in place
/// for every write, and every mapping of them sees every other's stores) and maps those
/// writable; `ENODEV` for a file in Hare.
pub fn map_file(
    vm: &VSpace,
    file: &MappedFile,
    (start, len): (u64, u64),
    off: u64,
    (prot, shared): (Prot, bool),
) -> Result<(), Errno> {
    debug_assert!(vm
        .resolve(start)
        .1
        .is_some_and(|r| matches!(r.kind, RegionKind::File { shared: s, .. } if s == shared)));
    if let Some(ino) = file.nrfs_ino() {
        MAPPED[mapped_slot(ino).0].fetch_or(mapped_slot(ino).1, Ordering::Relaxed);
    }
    let in_file = file.size.saturating_sub(off).min(len);
    let end = start + in_file.div_ceil(PAGE_SIZE) * PAGE_SIZE;
    let mut pages = FilePages::new()?;
    let mut va = start;
    let made = (|| {
        while va < end {
            let n = ((end - va) / PAGE_SIZE).min(BATCH as u64) as usize;
            let first = (off + (va - start)) / PAGE_SIZE;
            if shared {
                file.share_pages(first, n)?;
            }
            pages.lend(vm, file, (va, first, n), (prot, shared), |me, page| {
                me.fill(vm, file, page, prot, file_part(file, start, off, page))
            })?;
            va += n as u64 * PAGE_SIZE;
        }
        Ok(())
    })();
    let mapped = pages.map(vm);
    made.and(mapped)
}

/// Which NR-FS files have ever been mapped, as bits by inode number modulo 4096 (a file that
/// shares its bit with a mapped one costs its truncation a needless search; nothing is lost).
static MAPPED: [AtomicU64; 64] = [const { AtomicU64::new(0) }; 64];

/// The word of [`MAPPED`] and the bit in it for `ino`.
fn mapped_slot(ino: Ino) -> (usize, u64) {
    let n = (ino % 4096) as usize;
    (n / 64, 1 << (n % 64))
}

/// Brings back the page at `addr` of a file mapping that has none (the access found no
/// page: [`crate::vm::Fault::PastEnd`]): a page the file holds now (it grew, or `madvise`
/// or a truncation took the page away and the file was written again) is mapped as
/// [`map_file`] maps it. False when the page lies past the end of the file (the access
/// raises SIGBUS, as on Linux), the file is gone, in Hare, or memory ran out.
pub fn fault_in(vm: &VSpace, addr: u64) -> bool {
    let page = addr & !(PAGE_SIZE - 1);
    let Some(region) = vm.resolve(page).1 else {
        return false;
    };
    let RegionKind::File { shared, file, .. } = region.kind else {
        return false;
    };
    let RegionKind::File { page: index, .. } = region.kind.advanced(page - region.start) else {
        return false;
    };
    let Ok(mapped) = MappedFile::by_ino(file) else {
        return false;
    };
    let off = index * PAGE_SIZE;
    if off >= mapped.size {
        return false;
    }
    let _ = map_file(vm, &mapped, (page, PAGE_SIZE), off, (region.prot, shared));
    vm.resolve(page).0.is_some()
}

/// After NR-FS file `ino` was truncated to `size` bytes: removes the pages wholly past its
/// new end from every mapping of it in every address space (Linux's `unmap_mapping_range`,
/// private copies included), keeping the regions, so that an access there raises SIGBUS and
/// one after the file grew again maps the new page ([`fault_in`]). Reef keeps no list of
/// the mappings of a file page: this searches the regions of every process, and only for a
/// file that has been mapped ([`MAPPED`]); each address space is changed under its
/// process's `mm`, as by `mmap`.
pub fn truncated(ino: Ino, size: u64) {
    let (word, bit) = mapped_slot(ino);
    if MAPPED[word].load(Ordering::Relaxed) & bit == 0 {
        return;
    }
    let first = size.div_ceil(PAGE_SIZE);
    for pid in proc::all_pids() {
        let Some(entry) = proc::lookup(pid) else {
            continue;
        };
        let p = entry.process;
        let _mm = p.mm.lock();
        let vm = p.vm();
        // Without memory for the list of regions, this address space keeps its pages.
        let _ = vm.each_region(|r| {
            let RegionKind::File { file, page, .. } = r.kind else {
                return Ok(());
            };
            let pages = r.len() / PAGE_SIZE;
            if file != ino || page + pages <= first {
                return Ok(());
            }
            let cut = r.start + first.saturating_sub(page) * PAGE_SIZE;
            let kind = r.kind.advanced(cut - r.start);
            // Made again over itself: the same region, its pages gone. Only a page table
            // could be missing (ENOMEM), and then no page is left mapped either.
            let _ = vm.map_fixed(cut, r.end - cut, r.prot, kind, true);
            Ok(())
        });
    }
}
