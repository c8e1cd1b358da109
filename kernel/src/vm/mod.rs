//! NR-vMem (NrOS §4.2): each process's address space replicated per NUMA node.
//!
//! The mapping database and the hardware page tables of one address space are the sequential
//! [`vspace::AddressSpace`]; a [`VSpace`] replicates it once per node with NR, and each replica
//! builds its page tables from frames of its own node. Cores load their node's replica's root
//! table. Update operations (`MapRegion`, `MapAnywhere`, `MapFrames`, `Unmap`, `Protect`,
//! `Clear`) go through the log; `Resolve` and `Snapshot` read the local replica.
//!
//! Frames for user memory are allocated *before* an operation enters the log, so every replica
//! maps the same frames. A page fault on a core whose replica has not applied a mapping yet is
//! resolved by the `Resolve` read (which first brings the replica up to date); a fault inside a
//! region with no page yet allocates one (demand paging); anything else is SIGSEGV.
//!
//! `munmap` and `mprotect` shoot down TLBs: after the update, the initiating core brings every
//! replica up to date (so no node's tables still map the frames), sends a `TlbFlush` IPI to
//! every core that has this address space loaded, waits for all acknowledgements (each target
//! flushes before acknowledging), and only then frees the frames.
//!
//! Anonymous `MAP_SHARED` memory is populated at `mmap` time and its frames are reference
//! counted ([`SHARED_FRAMES`]) so that a forked child maps the same frames; private memory is
//! copied at `fork` (no copy-on-write yet, see docs/architecture.md).

use crate::arch::{cpu, paging};
use crate::ipi::{self, IpiKind};
use crate::kcb::{self, Kcb};
use crate::mm::{self, Frame, FrameSize};
use crate::replicated::NodeReplicated;
use crate::sync::IrqMutex;
use abi::Errno;
use alloc::collections::BTreeMap;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use vspace::{AddressSpace, MapError, Mapping, PageSize, Prot, Region, RegionKind, TableMemory};

pub use vspace::{Translation, PAGE_SIZE};

/// Entries of each address space's operation log.
const LOG_ENTRIES: usize = 256;

/// Lowest address `mmap` hands out without a hint.
pub const MMAP_FLOOR: u64 = 0x10_0000;
/// Top of the area where `mmap` places mappings (below the stack).
pub const MMAP_CEILING: u64 = 0x7f00_0000_0000;
/// Top of the main thread's stack.
pub const STACK_TOP: u64 = 0x7fff_ffff_f000;
/// Size reserved for the main thread's stack.
pub const STACK_SIZE: u64 = 8 << 20;

/// Page-table memory of one replica: frames of its node, written through the direct map.
///
/// A table the address space stops using may still sit in other cores' paging-structure
/// caches until the next TLB shootdown, so it is not freed at once: it waits in `retired`
/// until [`VSpace::shootdown`] has flushed every core that runs the address space.
pub struct NodeTables {
    node: usize,
    retired: IrqMutex<Vec<u64>>,
}

impl NodeTables {
    fn release_retired(&self) {
        let retired = core::mem::take(&mut *self.retired.lock());
        for phys in retired {
            if let Some(f) = Frame::new(phys, FrameSize::Base, self.node) {
                let _ = mm::release(f);
            }
        }
    }
}

impl Drop for NodeTables {
    fn drop(&mut self) {
        self.release_retired();
    }
}

impl TableMemory for NodeTables {
    fn allocate_table(&mut self) -> Option<u64> {
        let frame = mm::allocate_on(self.node, FrameSize::Base).ok()?;
        paging::zero_phys(frame.base(), PAGE_SIZE);
        Some(frame.base())
    }

    fn free_table(&mut self, phys: u64) {
        self.retired.lock().push(phys);
    }

    fn read(&self, table: u64, index: usize) -> u64 {
        paging::read_entry(table, index)
    }

    fn write(&mut self, table: u64, index: usize, entry: u64) {
        paging::write_entry(table, index, entry)
    }
}

/// One replica of an address space.
pub struct Replica {
    space: AddressSpace<NodeTables>,
}

/// A page to map: (virtual address, frame, size, protection).
pub type PageMap = (u64, u64, PageSize, Prot);

/// Read operations.
pub enum ReadOp {
    /// The translation of an address and the region around it.
    Resolve(u64),
    /// All regions and pages (for `fork`).
    Snapshot,
}

/// Update operations.
#[derive(Clone)]
pub enum UpdateOp {
    /// Adds a region at a fixed address (`replace`: MAP_FIXED semantics).
    MapRegion {
        /// Start.
        start: u64,
        /// Length.
        len: u64,
        /// Protection.
        prot: Prot,
        /// Kind.
        kind: RegionKind,
        /// Remove what overlaps first.
        replace: bool,
    },
    /// Adds a region wherever it fits (deterministic choice, see `find_free`).
    MapAnywhere {
        /// Length.
        len: u64,
        /// Preferred address (0: none).
        hint: u64,
        /// Protection.
        prot: Prot,
        /// Kind.
        kind: RegionKind,
    },
    /// Maps frames that were allocated before the operation was logged.
    MapFrames(Arc<Vec<PageMap>>),
    /// Removes regions and pages in a range.
    Unmap {
        /// Start.
        start: u64,
        /// Length.
        len: u64,
    },
    /// Changes protection in a range.
    Protect {
        /// Start.
        start: u64,
        /// Length.
        len: u64,
        /// New protection.
        prot: Prot,
    },
    /// Removes everything (process exit, exec).
    Clear,
}

/// Responses.
pub enum Resp {
    /// `Resolve`.
    Resolved(Option<Translation>, Option<Region>),
    /// `Snapshot`.
    Snapshot(Vec<Region>, Vec<Mapping>),
    /// A region was added at this address; these pages were removed.
    Mapped(Result<(u64, Vec<vspace::Unmapped>), MapError>),
    /// `MapFrames`: which pages could not be mapped (their frames stay the caller's).
    Frames(Vec<usize>),
    /// Pages removed.
    Unmapped(Result<Vec<vspace::Unmapped>, MapError>),
    /// `Protect`.
    Protected(Result<(), MapError>),
}

impl nr::Dispatch for Replica {
    type ReadOp = ReadOp;
    type UpdateOp = UpdateOp;
    type Resp = Resp;

    fn dispatch(&self, op: ReadOp) -> Resp {
        match op {
            ReadOp::Resolve(va) => {
                Resp::Resolved(self.space.resolve(va), self.space.region_at(va).copied())
            }
            ReadOp::Snapshot => Resp::Snapshot(
                self.space.regions().copied().collect(),
                self.space.pages().collect(),
            ),
        }
    }

    fn dispatch_mut(&mut self, op: UpdateOp) -> Resp {
        match op {
            UpdateOp::MapRegion {
                start,
                len,
                prot,
                kind,
                replace,
            } => Resp::Mapped(
                self.space
                    .map_region(start, len, prot, kind, replace)
                    .map(|removed| (start, removed)),
            ),
            UpdateOp::MapAnywhere {
                len,
                hint,
                prot,
                kind,
            } => Resp::Mapped(
                match self.space.find_free(len, hint, MMAP_FLOOR, MMAP_CEILING) {
                    Some(start) => self
                        .space
                        .map_region(start, len, prot, kind, false)
                        .map(|removed| (start, removed)),
                    None => Err(MapError::OutOfMemory),
                },
            ),
            UpdateOp::MapFrames(pages) => Resp::Frames(
                pages
                    .iter()
                    .enumerate()
                    .filter(|(_, (va, phys, size, prot))| {
                        self.space.map_frame(*va, *phys, *size, *prot).is_err()
                    })
                    .map(|(i, _)| i)
                    .collect(),
            ),
            UpdateOp::Unmap { start, len } => Resp::Unmapped(self.space.unmap(start, len)),
            UpdateOp::Protect { start, len, prot } => {
                Resp::Protected(self.space.protect(start, len, prot).map(|_| ()))
            }
            UpdateOp::Clear => Resp::Unmapped(Ok(self.space.clear())),
        }
    }
}

/// Frames of `MAP_SHARED` memory mapped by more than one address space, with their counts.
static SHARED_FRAMES: IrqMutex<BTreeMap<u64, u32>> = IrqMutex::new(BTreeMap::new());
static NEXT_VSPACE: AtomicUsize = AtomicUsize::new(1);
/// TLB shootdowns done (for reports).
pub static SHOOTDOWNS: AtomicU64 = AtomicU64::new(0);

/// A replicated address space.
pub struct VSpace {
    id: usize,
    nr: Arc<NodeReplicated<Replica>>,
    roots: Vec<u64>,
}

fn kernel_entries() -> [u64; 256] {
    let pml4 = crate::smp::kernel_pml4();
    core::array::from_fn(|i| paging::read_entry(pml4, 256 + i))
}

fn size_of(size: PageSize) -> FrameSize {
    match size {
        PageSize::Base4K => FrameSize::Base,
        PageSize::Large2M => FrameSize::Large,
    }
}

/// Frees a frame that left an address space, unless another address space still shares it.
fn free_frame(phys: u64, size: PageSize) {
    {
        let mut shared = SHARED_FRAMES.lock();
        if let Some(count) = shared.get_mut(&phys) {
            *count -= 1;
            if *count > 0 {
                return;
            }
            shared.remove(&phys);
        }
    }
    if let Some(node) = mm::node_of(phys) {
        if let Some(f) = Frame::new(phys, size_of(size), node) {
            if let Err(e) = mm::release(f) {
                crate::kprintln!("reef: vm: could not free frame {phys:#x}: {e}");
            }
        }
    }
}

/// Allocates a zeroed frame for user memory on this core's node.
pub fn allocate_user_frame() -> Result<u64, Errno> {
    let f = mm::allocate(FrameSize::Base).map_err(|_| Errno::ENOMEM)?;
    paging::zero_phys(f.base(), PAGE_SIZE);
    Ok(f.base())
}

impl VSpace {
    /// An empty address space (only the kernel half mapped).
    pub fn new() -> Result<Arc<VSpace>, Errno> {
        let kernel = kernel_entries();
        let nr = NodeReplicated::try_new(LOG_ENTRIES, |node| {
            let tables = NodeTables {
                node,
                retired: IrqMutex::new(Vec::new()),
            };
            AddressSpace::new(tables, &kernel)
                .map(|space| Replica { space })
                .map_err(|_| Errno::ENOMEM)
        })?;
        let roots = (0..nr.replica_count())
            .map(|node| nr.verify(node, |r| r.space.root()))
            .collect();
        Ok(Arc::new(VSpace {
            id: NEXT_VSPACE.fetch_add(1, Ordering::Relaxed),
            nr,
            roots,
        }))
    }

    /// Loads this address space's page tables (this core's node replica) on core `k`.
    pub fn activate(&self, k: &Kcb) {
        k.sched.active_vspace.store(self.id, Ordering::SeqCst);
        let root = self.roots[k.node_id.min(self.roots.len() - 1)];
        if cpu::read_cr3() != root {
            // SAFETY: every replica's root table maps the kernel half exactly like the kernel's
            // own tables (copied at creation), so kernel code, stacks and data stay mapped.
            unsafe { cpu::write_cr3(root) };
        }
    }

    /// Adds a region at `start` (MAP_FIXED when `replace`); frees what it replaced.
    pub fn map_fixed(
        &self,
        start: u64,
        len: u64,
        prot: Prot,
        kind: RegionKind,
        replace: bool,
    ) -> Result<u64, Errno> {
        let op = UpdateOp::MapRegion {
            start,
            len,
            prot,
            kind,
            replace,
        };
        self.finish_map(op)
    }

    /// Adds a region wherever it fits, near `hint` if that is free.
    pub fn map_anywhere(
        &self,
        len: u64,
        hint: u64,
        prot: Prot,
        kind: RegionKind,
    ) -> Result<u64, Errno> {
        self.finish_map(UpdateOp::MapAnywhere {
            len,
            hint,
            prot,
            kind,
        })
    }

    fn finish_map(&self, op: UpdateOp) -> Result<u64, Errno> {
        match self.nr.execute_mut(op) {
            Resp::Mapped(Ok((start, removed))) => {
                if !removed.is_empty() {
                    self.shootdown();
                    for u in removed {
                        free_frame(u.phys, u.size);
                    }
                }
                Ok(start)
            }
            Resp::Mapped(Err(e)) => Err(e.to_errno()),
            _ => unreachable!("map operations answer Mapped"),
        }
    }

    /// Maps frames the caller allocated; frames that could not be mapped (a racing fault
    /// mapped the page first) are freed. Returns how many were mapped.
    pub fn map_frames(&self, pages: Vec<PageMap>) -> usize {
        let pages = Arc::new(pages);
        let failed = match self.nr.execute_mut(UpdateOp::MapFrames(pages.clone())) {
            Resp::Frames(failed) => failed,
            _ => unreachable!("MapFrames answers Frames"),
        };
        for &i in &failed {
            let (_, phys, size, _) = pages[i];
            free_frame(phys, size);
        }
        pages.len() - failed.len()
    }

    /// Allocates and maps zeroed frames for every page of `[start, end)` not yet mapped (for
    /// MAP_POPULATE and shared memory); `shared` frames are reference counted.
    pub fn populate(&self, start: u64, end: u64, prot: Prot, shared: bool) -> Result<(), Errno> {
        let mut pages = Vec::new();
        let mut va = start;
        while va < end {
            if self.resolve(va).0.is_none() {
                let phys = match allocate_user_frame() {
                    Ok(p) => p,
                    Err(e) => {
                        for (_, phys, size, _) in pages {
                            free_frame(phys, size);
                        }
                        return Err(e);
                    }
                };
                if shared {
                    SHARED_FRAMES.lock().insert(phys, 1);
                }
                pages.push((va, phys, PageSize::Base4K, prot));
            }
            va += PAGE_SIZE;
        }
        if !prot.is_none() {
            self.map_frames(pages);
        }
        Ok(())
    }

    /// Removes mappings in `[start, start + len)`; frees their frames after the shootdown.
    pub fn unmap(&self, start: u64, len: u64) -> Result<(), Errno> {
        match self.nr.execute_mut(UpdateOp::Unmap { start, len }) {
            Resp::Unmapped(Ok(removed)) => {
                self.shootdown();
                for u in removed {
                    free_frame(u.phys, u.size);
                }
                Ok(())
            }
            Resp::Unmapped(Err(e)) => Err(e.to_errno()),
            _ => unreachable!("Unmap answers Unmapped"),
        }
    }

    /// Changes the protection of `[start, start + len)`.
    pub fn protect(&self, start: u64, len: u64, prot: Prot) -> Result<(), Errno> {
        match self.nr.execute_mut(UpdateOp::Protect { start, len, prot }) {
            Resp::Protected(Ok(())) => {
                self.shootdown();
                Ok(())
            }
            Resp::Protected(Err(e)) => Err(e.to_errno()),
            _ => unreachable!("Protect answers Protected"),
        }
    }

    /// The translation of `va` and the region containing it, on this node's replica.
    pub fn resolve(&self, va: u64) -> (Option<Translation>, Option<Region>) {
        match self.nr.execute(ReadOp::Resolve(va)) {
            Resp::Resolved(t, r) => (t, r),
            _ => unreachable!("Resolve answers Resolved"),
        }
    }

    /// Removes everything and frees all frames (process exit). The caller no longer runs on
    /// these page tables' user half.
    pub fn teardown(&self) {
        if let Resp::Unmapped(Ok(removed)) = self.nr.execute_mut(UpdateOp::Clear) {
            self.shootdown();
            for u in removed {
                free_frame(u.phys, u.size);
            }
        }
    }

    /// Makes every replica apply all logged operations, then flushes the TLB of every core
    /// that has this address space loaded and waits until they all did.
    fn shootdown(&self) {
        self.nr.sync_all();
        SHOOTDOWNS.fetch_add(1, Ordering::Relaxed);
        let me = kcb::current();
        if me.sched.active_vspace.load(Ordering::SeqCst) == self.id {
            cpu::flush_tlb();
        }
        let mut tickets = Vec::new();
        for core in crate::online_cores() {
            if core == me.core_id {
                continue;
            }
            let k = kcb::get(core).expect("online core has a KCB");
            if k.sched.active_vspace.load(Ordering::SeqCst) == self.id {
                if let Ok(t) = ipi::send(core, IpiKind::TlbFlush) {
                    tickets.push(t);
                }
            }
        }
        for t in tickets {
            if let Err(e) = ipi::wait(&t, 5_000_000_000) {
                panic!("TLB shootdown not acknowledged: {e}");
            }
        }
        for node in 0..self.roots.len() {
            self.nr.verify(node, |r| r.space.memory().release_retired());
        }
    }

    /// A copy for `fork`: the same regions; private pages copied into fresh frames, shared
    /// pages mapped to the same frames (reference counted).
    pub fn fork(&self) -> Result<Arc<VSpace>, Errno> {
        let child = VSpace::new()?;
        let (regions, pages) = match self.nr.execute(ReadOp::Snapshot) {
            Resp::Snapshot(r, p) => (r, p),
            _ => unreachable!("Snapshot answers Snapshot"),
        };
        for r in &regions {
            child.map_fixed(r.start, r.end - r.start, r.prot, r.kind, false)?;
        }
        let mut maps = Vec::with_capacity(pages.len());
        for m in pages {
            if m.prot.is_none() {
                continue;
            }
            let shared = regions
                .iter()
                .find(|r| r.contains(m.vaddr))
                .is_some_and(|r| matches!(r.kind, RegionKind::Anonymous { shared: true }));
            if shared {
                *SHARED_FRAMES.lock().entry(m.phys).or_insert(1) += 1;
                maps.push((m.vaddr, m.phys, m.size, m.prot));
                continue;
            }
            let frame = match mm::allocate(size_of(m.size)) {
                Ok(f) => f.base(),
                Err(_) => {
                    for (_, phys, size, _) in maps {
                        free_frame(phys, size);
                    }
                    child.teardown();
                    return Err(Errno::ENOMEM);
                }
            };
            paging::copy_phys(frame, m.phys, m.size.bytes());
            maps.push((m.vaddr, frame, m.size, m.prot));
        }
        child.map_frames(maps);
        Ok(child)
    }

    /// Handles a page fault at `addr` by a thread of this address space. `write`/`exec` say
    /// what the access was. Returns `Err(si_code)` (SEGV_MAPERR or SEGV_ACCERR) when the access
    /// is not allowed.
    pub fn fault(&self, addr: u64, write: bool, exec: bool) -> Result<(), i32> {
        use crate::proc::signal::{SEGV_ACCERR, SEGV_MAPERR};
        if addr >= vspace::USER_END {
            return Err(SEGV_MAPERR);
        }
        let allowed = |p: Prot| (!write || p.write) && (!exec || p.exec) && !p.is_none();
        let (translation, region) = self.resolve(addr);
        if let Some(t) = translation {
            if allowed(t.prot) {
                // The replica was behind (the read brought it up to date) or the TLB held a
                // stale entry; the retried access sees the current tables.
                cpu::invlpg(addr);
                return Ok(());
            }
            return Err(SEGV_ACCERR);
        }
        let Some(region) = region else {
            return Err(SEGV_MAPERR);
        };
        if !allowed(region.prot.effective()) {
            return Err(SEGV_ACCERR);
        }
        let page = addr & !(PAGE_SIZE - 1);
        let shared = matches!(region.kind, RegionKind::Anonymous { shared: true });
        self.populate(page, page + PAGE_SIZE, region.prot, shared)
            .map_err(|_| SEGV_MAPERR)
    }

    /// Writes `data` at `addr` in this address space (which need not be the running one), as
    /// a user write would: the pages must be writable and are populated on demand.
    pub fn write_bytes(&self, addr: u64, data: &[u8]) -> Result<(), Errno> {
        let mut done = 0;
        while done < data.len() {
            let va = addr.checked_add(done as u64).ok_or(Errno::EFAULT)?;
            let t = match self.resolve(va).0 {
                Some(t) => t,
                None => {
                    self.fault(va, true, false).map_err(|_| Errno::EFAULT)?;
                    self.resolve(va).0.ok_or(Errno::EFAULT)?
                }
            };
            if !t.prot.write {
                return Err(Errno::EFAULT);
            }
            let in_page = (t.frame + t.size.bytes() - t.phys) as usize;
            let n = in_page.min(data.len() - done);
            paging::write_phys(t.phys, &data[done..done + n]);
            done += n;
        }
        Ok(())
    }
}

/// Loads the kernel's own page tables on core `k` (idle, or a process that is going away).
pub fn activate_kernel(k: &Kcb) {
    k.sched.active_vspace.store(0, Ordering::SeqCst);
    let root = crate::smp::kernel_pml4();
    if cpu::read_cr3() != root {
        // SAFETY: the kernel's tables map the whole kernel half, identical in every address
        // space; no user memory is in use by the caller.
        unsafe { cpu::write_cr3(root) };
    }
}
