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
//! `munmap` and `mprotect` shoot down TLBs (NrOS §4.2): after the update, the initiating core
//! brings every replica up to date (so no node's tables still map the frames), asks every
//! other core that has this address space loaded to invalidate the pages (one by one when they
//! are few, see [`FlushSet`]), waits for their early acknowledgements, and only then frees the
//! frames; a target whose vCPU the host has descheduled is flushed by the host instead
//! ([`ipi::shoot_down`]).
//!
//! Frames mapped by more than one address space are reference counted ([`mm::share`]).
//! Anonymous `MAP_SHARED` memory is populated at `mmap` time and a forked child maps the same
//! frames. Private memory is shared copy-on-write at `fork` ([`VSpace::fork`]): parent and
//! child map the same frames read-only, marked [`vspace::COW`], and the first write in either
//! takes a private copy, or takes the frame over once no one else maps it
//! ([`VSpace::fault`]). A read fault on untouched private memory maps one shared zero page,
//! copy-on-write, as Linux does.

use crate::arch::{cpu, paging};
use crate::ipi;
use crate::kcb::{self, Kcb};
use crate::mm::{self, Frame, FrameSize};
use crate::replicated::{self, NodeReplicated};
use crate::sync::IrqMutex;
use abi::Errno;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::alloc::Layout;
use core::ptr::NonNull;
use core::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use nr::dalloc::{DetAllocHandle, DeterministicAlloc, ReplicaAllocator};
use spin::Once;
use step::{Step, StepRef};
use vspace::{
    AddressSpace, FlushSet, MapError, Mapping, PageSize, Prot, Region, RegionKind, TableMemory,
    Unmapped,
};

mod step;

pub use vspace::{Translation, PAGE_SIZE};

/// Entries of each address space's operation log.
const LOG_ENTRIES: usize = 256;

/// Lowest address `mmap` hands out without a hint.
pub const MMAP_FLOOR: u64 = 0x10_0000;
/// Size reserved for the main thread's stack.
pub const STACK_SIZE: u64 = 8 << 20;

/// Where a program's stack, its `mmap` area and a static-PIE image go: chosen at `execve`,
/// kept by `fork`.
///
/// Randomized as Linux does (address-space layout randomization): the stack's top by up to
/// 16 GiB, the top of the `mmap` area and a static-PIE's load address by up to 1 TiB, in
/// whole pages, so that a program can guess none of them. Besides, fixed places would put the
/// top pages of the stack and of the `mmap` area a multiple of 1 TiB apart, which a
/// direct-mapped TLB indexed by the low bits of the page number cannot hold at once: QEMU's
/// software TLB is one, and a user-level ring in a fresh mapping polled from a loop with its
/// locals on the stack ran twice as slow as on Linux (docs/results.md, "Message channels").
/// [`UserLayout::FIXED`] is the layout without randomization (`norandmaps`,
/// `personality(ADDR_NO_RANDOMIZE)`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UserLayout {
    /// Top of the main thread's stack.
    pub stack_top: u64,
    /// Top of the area where `mmap` places mappings without a fixed address.
    pub mmap_ceiling: u64,
    /// Where a static-PIE program is loaded (as Linux does for ET_DYN without an interpreter).
    pub pie_base: u64,
}

impl UserLayout {
    /// The layout without randomization.
    pub const FIXED: UserLayout = UserLayout {
        stack_top: 0x7fff_ffff_f000,
        mmap_ceiling: 0x7f00_0000_0000,
        pie_base: 0x5555_5555_4000,
    };

    /// Pages the stack's top may move down (16 GiB, Linux's `stack_maxrandom_size`).
    const STACK_PAGES: u64 = 1 << 22;
    /// Pages the `mmap` area's top may move down and a static-PIE's base up (1 TiB, Linux's
    /// 28 bits of `mmap_rnd_bits`).
    const MMAP_PAGES: u64 = 1 << 28;

    /// A random layout.
    pub fn random() -> UserLayout {
        let mut bytes = [0u8; 24];
        crate::random::fill(&mut bytes);
        let word = |i: usize| {
            let mut w = [0u8; 8];
            w.copy_from_slice(&bytes[8 * i..8 * i + 8]);
            u64::from_le_bytes(w)
        };
        let f = UserLayout::FIXED;
        UserLayout {
            stack_top: f.stack_top - word(0) % UserLayout::STACK_PAGES * PAGE_SIZE,
            mmap_ceiling: f.mmap_ceiling - word(1) % UserLayout::MMAP_PAGES * PAGE_SIZE,
            pie_base: f.pie_base + word(2) % UserLayout::MMAP_PAGES * PAGE_SIZE,
        }
    }
}

/// The layout of one page-table frame, as [`TableFrames`] serves it.
const TABLE_LAYOUT: Layout = match Layout::from_size_align(PAGE_SIZE as usize, PAGE_SIZE as usize) {
    Ok(l) => l,
    Err(_) => panic!("a page is a valid layout"),
};

/// Page-table frames for the replicas of one address space, through `nr::dalloc` (NrOS §4.1):
/// the first replica to need a table takes one frame on every replica's node at once, and the
/// others pick theirs up when they apply the same operation, so running out of memory fails
/// that operation on every replica alike and the replicas never diverge. Blocks are frames,
/// handed out as their direct-map addresses.
struct TableFrames;

impl ReplicaAllocator for TableFrames {
    fn allocate(&self, node: usize, layout: Layout) -> Option<NonNull<u8>> {
        debug_assert_eq!(layout, TABLE_LAYOUT);
        let frame = mm::allocate_on(node, FrameSize::Base).ok()?;
        NonNull::new(paging::phys_to_virt(frame.base()) as *mut u8)
    }

    unsafe fn deallocate(&self, node: usize, ptr: NonNull<u8>, _layout: Layout) {
        release_table(node, paging::virt_to_phys(ptr.as_ptr() as u64));
    }
}

/// Gives a page-table frame of `node` back to the frame allocator.
fn release_table(node: usize, phys: u64) {
    release(phys, FrameSize::Base, node);
}

/// Gives the frame of `size` at `phys`, of `node`, back to the frame allocator (saying so on
/// the console if the allocator refuses it).
fn release(phys: u64, size: FrameSize, node: usize) {
    if let Some(f) = Frame::new(phys, size, node) {
        if let Err(e) = mm::release(f) {
            crate::kprintln!("reef: vm: could not free frame {phys:#x}: {e}");
        }
    }
}

/// Page-table memory of one replica: frames of its node (through [`TableFrames`]), written
/// through the direct map.
///
/// A table the address space stops using may still sit in other cores' paging-structure
/// caches until the next TLB shootdown, so it is not freed at once: it waits in `retired`
/// until [`VSpace::shootdown`] has flushed every core that runs the address space.
pub struct NodeTables {
    /// The NUMA node whose frames hold this replica's tables.
    node: usize,
    /// This node's handle on the address space's [`TableFrames`] allocator.
    frames: DetAllocHandle<TableFrames>,
    /// Physical addresses of tables no longer used, freed after the next TLB shootdown.
    retired: IrqMutex<Vec<u64>>,
}

impl NodeTables {
    /// Whether tables wait in `retired` to be freed.
    fn has_retired(&self) -> bool {
        !self.retired.lock().is_empty()
    }

    /// Gives the tables in `retired` back to the frame allocator.
    fn release_retired(&self) {
        let retired = core::mem::take(&mut *self.retired.lock());
        for phys in retired {
            release_table(self.node, phys);
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
        let block = self.frames.allocate(TABLE_LAYOUT).ok()?;
        let phys = paging::virt_to_phys(block.as_ptr() as u64);
        paging::zero_phys(phys, PAGE_SIZE);
        Some(phys)
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
    /// The node's copy of the mapping database and its hardware page tables.
    space: AddressSpace<NodeTables>,
}

/// A page to map: (virtual address, frame, size, protection).
pub type PageMap = (u64, u64, PageSize, Prot);

/// Most pages one update removes and one read lists: bounds each response's size and the
/// time between two TLB shootdowns, whatever range a program names.
const STEP_PAGES: usize = 1024;
/// Pages per step of a teardown that could not reserve room for [`STEP_PAGES`].
const TEARDOWN_SPARE: usize = 64;
/// Most regions one read lists.
const STEP_REGIONS: usize = 1024;

/// Read operations.
pub enum ReadOp {
    /// The translation of an address and the region around it.
    Resolve(u64),
    /// At most [`STEP_REGIONS`] regions starting at or above an address (for `fork`).
    Regions(u64),
    /// The resident size in 4 KiB pages, the zero page not counted.
    Resident,
}

/// Update operations. Those that list pages fill the caller's [`StepRef`] (see [`step`]):
/// nothing inside an operation allocates more than the region database's own nodes.
#[derive(Clone)]
pub enum UpdateOp {
    /// Adds a region at a fixed address (`replace`: MAP_FIXED semantics, the removed pages
    /// listed there, done only if at most its `max` pages are mapped in the range; see
    /// [`Resp::TooManyPages`]).
    MapRegion {
        /// Start.
        start: u64,
        /// Length.
        len: u64,
        /// Protection.
        prot: Prot,
        /// Kind.
        kind: RegionKind,
        /// Remove what overlaps first, listing the pages removed.
        replace: Option<StepRef<Unmapped>>,
    },
    /// Adds a region wherever it fits below `ceiling` (deterministic choice, see `find_free`).
    MapAnywhere {
        /// Length.
        len: u64,
        /// The top of the `mmap` area ([`UserLayout::mmap_ceiling`]).
        ceiling: u64,
        /// Preferred address (0: none).
        hint: u64,
        /// Protection.
        prot: Prot,
        /// Kind.
        kind: RegionKind,
    },
    /// Maps frames that were allocated before the operation was logged; lists the indexes of
    /// those that could not be mapped.
    MapFrames(Arc<Vec<PageMap>>, StepRef<usize>),
    /// Maps pages as another address space maps them (a `fork` child's pages, the zero page):
    /// [`AddressSpace::map_copy`]; lists the indexes of those that could not be mapped.
    MapCopies(Arc<Vec<Mapping>>, StepRef<usize>),
    /// Makes at most the list's room of private pages at or above an address copy-on-write
    /// and lists them for the child (`fork`): [`AddressSpace::share_for_fork`].
    ShareForFork(u64, StepRef<(Mapping, bool)>),
    /// Ends the copy-on-write sharing of a page: [`AddressSpace::break_cow`].
    BreakCow {
        /// The page.
        vaddr: u64,
        /// The frame it must still map.
        old: u64,
        /// The frame it maps afterwards (`old` itself when no one else shares it).
        new: u64,
    },
    /// Removes the regions in a range and at most the list's room of its pages.
    Unmap {
        /// Start.
        start: u64,
        /// Length.
        len: u64,
        /// The pages removed.
        removed: StepRef<Unmapped>,
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
    /// Removes every region and at most the list's room of pages (process exit, exec).
    Clear(StepRef<Unmapped>),
}

/// Responses.
pub enum Resp {
    /// `Resolve`.
    Resolved(Option<Translation>, Option<Region>),
    /// `Regions`: `None` if there was no memory to list them in (a read runs on one replica
    /// only, so it may allocate and fail).
    Regions(Option<Vec<Region>>),
    /// `ShareForFork`: done (its list holds each page for the child, and whether its entry
    /// changed here).
    Shared,
    /// `BreakCow`: whether the page still mapped the old frame and now maps the new one.
    Broken(bool),
    /// A region was added at this address (the pages removed are in the operation's list).
    Mapped(Result<u64, MapError>),
    /// `MapRegion` with `replace` changed nothing: too many pages are mapped in the range to
    /// remove in one step.
    TooManyPages,
    /// `MapFrames`, `MapCopies`: done (the list holds the pages that could not be mapped;
    /// their frames stay the caller's).
    Frames,
    /// Pages removed (in the operation's list), and whether more remain to be removed by
    /// further steps.
    Unmapped(Result<bool, MapError>),
    /// `Protect`.
    Protected(Result<(), MapError>),
    /// `Resident`.
    Resident(u64),
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
            ReadOp::Resident => {
                let zero = ZERO_PAGE.get().copied();
                Resp::Resident(self.space.resident_pages(|phys| Some(phys) != zero))
            }
            ReadOp::Regions(from) => {
                let mut regions = Vec::new();
                Resp::Regions(regions.try_reserve_exact(STEP_REGIONS).ok().map(|()| {
                    regions.extend(self.space.regions_from(from).take(STEP_REGIONS).copied());
                    regions
                }))
            }
        }
    }

    fn dispatch_mut(&mut self, op: UpdateOp) -> Resp {
        match op {
            UpdateOp::MapRegion {
                start,
                len,
                prot,
                kind,
                replace: Some(removed),
            } => removed.fill(|out| {
                match self
                    .space
                    .replace_region(start, len, prot, kind, removed.max, &mut |u| out(u))
                {
                    Ok(true) => Resp::Mapped(Ok(start)),
                    Ok(false) => Resp::TooManyPages,
                    Err(e) => Resp::Mapped(Err(e)),
                }
            }),
            UpdateOp::MapRegion {
                start,
                len,
                prot,
                kind,
                replace: None,
            } => Resp::Mapped(
                self.space
                    .map_region(start, len, prot, kind, false)
                    .map(|_| start),
            ),
            UpdateOp::MapAnywhere {
                len,
                ceiling,
                hint,
                prot,
                kind,
            } => Resp::Mapped(match self.space.find_free(len, hint, MMAP_FLOOR, ceiling) {
                Some(start) => self
                    .space
                    .map_region(start, len, prot, kind, false)
                    .map(|_| start),
                None => Err(MapError::OutOfMemory),
            }),
            UpdateOp::MapFrames(pages, failed) => failed.fill(|out| {
                for (i, &(va, phys, size, prot)) in pages.iter().enumerate() {
                    if self.space.map_frame(va, phys, size, prot).is_err() {
                        out(i);
                    }
                }
                Resp::Frames
            }),
            UpdateOp::MapCopies(pages, failed) => failed.fill(|out| {
                for (i, m) in pages.iter().enumerate() {
                    if self.space.map_copy(m).is_err() {
                        out(i);
                    }
                }
                Resp::Frames
            }),
            UpdateOp::ShareForFork(from, shared) => shared.fill(|out| {
                self.space.share_for_fork(from, shared.max, &mut |m| out(m));
                Resp::Shared
            }),
            UpdateOp::BreakCow { vaddr, old, new } => {
                Resp::Broken(self.space.break_cow(vaddr, old, new))
            }
            UpdateOp::Unmap {
                start,
                len,
                removed,
            } => removed.fill(|out| {
                Resp::Unmapped(
                    self.space
                        .unmap_step(start, len, removed.max, &mut |u| out(u)),
                )
            }),
            UpdateOp::Protect { start, len, prot } => {
                Resp::Protected(self.space.protect(start, len, prot).map(|_| ()))
            }
            UpdateOp::Clear(removed) => removed.fill(|out| {
                Resp::Unmapped(Ok(self.space.clear_step(removed.max, &mut |u| out(u))))
            }),
        }
    }
}

/// Why a page fault could not be resolved.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fault {
    /// The access is not allowed: SIGSEGV with this `si_code` (SEGV_MAPERR or SEGV_ACCERR).
    Denied(i32),
    /// The access is allowed but no memory is left for the page.
    OutOfMemory,
    /// A file mapping has no page there: the page lies past the end of the file (SIGBUS,
    /// `BUS_ADRERR`) unless the file holds it again (`crate::filemap::fault_in`, which the
    /// fault handler asks; this layer knows address spaces, not files).
    PastEnd,
}

/// The id the next [`VSpace`] gets.
static NEXT_VSPACE: AtomicUsize = AtomicUsize::new(1);

/// Proof that the caller holds an address space's `changes` lock.
type Changes<'a> = spin::MutexGuard<'a, ()>;

/// Room for the page list of one step over a range of `len` bytes: [`STEP_PAGES`], or fewer
/// when the range cannot hold that many pages (a `munmap` of a few pages reserves a few).
fn step_pages(len: u64) -> usize {
    // An unaligned start adds a page at each end.
    (len / PAGE_SIZE).saturating_add(2).min(STEP_PAGES as u64) as usize
}

/// The pages a step removed, to invalidate.
fn flush_set(removed: &[Unmapped]) -> FlushSet {
    let mut set = FlushSet::EMPTY;
    for u in removed {
        set.add_page(u.vaddr);
    }
    set
}

/// A replicated address space.
pub struct VSpace {
    /// Unique id, stored in a core's `active_vspace` while the core has it loaded.
    id: usize,
    /// The per-node replicas and their shared log.
    nr: Arc<NodeReplicated<Replica>>,
    /// Physical address of each replica's root (PML4) table, indexed by node.
    roots: Vec<u64>,
    /// Serializes the changes to regions that take several log operations (`munmap` and
    /// `MAP_FIXED` over many pages, `fork`'s copy, teardown), like Linux's `mmap_lock`: between
    /// two steps of one change no other change may add a region to its range. Taken with
    /// interrupts on and never held while sleeping, so a waiter on another core still
    /// acknowledges the holder's TLB shootdowns (see docs/architecture.md, lock order).
    changes: spin::Mutex<()>,
    /// Where its stack, `mmap` area and static-PIE image go.
    layout: UserLayout,
    /// [`VSpace::teardown`] emptied it (process exit, exec): dropping it has nothing to free,
    /// so the drop (possibly inside a process-table operation that reaps a zombie) runs no
    /// operation of its own.
    empty: AtomicBool,
    /// Room for a teardown's steps that memory cannot be short of: reserved with the address
    /// space, used when a teardown cannot have [`STEP_PAGES`] (exit must not fail).
    spare: IrqMutex<Option<Step<Unmapped>>>,
}

/// The kernel-half entries (256..512) of the kernel's PML4, copied into every new address space.
fn kernel_entries() -> [u64; 256] {
    let pml4 = crate::smp::kernel_pml4();
    core::array::from_fn(|i| paging::read_entry(pml4, 256 + i))
}

/// The frame size of a page of `size`.
fn size_of(size: PageSize) -> FrameSize {
    match size {
        PageSize::Base4K => FrameSize::Base,
        PageSize::Large2M => FrameSize::Large,
    }
}

/// Physical address of the shared zero page, once [`zero_page`] has allocated it.
static ZERO_PAGE: Once<u64> = Once::new();

/// The shared zero page: one zeroed frame that read faults on untouched private memory map
/// copy-on-write (allocated at the first such fault). It holds a share no address space ever
/// drops ([`mm::share_forever`]), so the share counts never free it and a write always copies
/// it, with no case of its own.
fn zero_page() -> Option<u64> {
    ZERO_PAGE
        .try_call_once(|| {
            let f = mm::allocate(FrameSize::Base).map_err(|_| ())?;
            paging::zero_phys(f.base(), PAGE_SIZE);
            mm::share_forever(f.base());
            Ok::<u64, ()>(f.base())
        })
        .ok()
        .copied()
}

/// Frees a frame that left an address space (or a kernel object holding it), unless another
/// still shares it.
pub fn free_frame(phys: u64, size: PageSize) {
    if !mm::unshare(phys) {
        return;
    }
    if let Some(node) = mm::node_of(phys) {
        release(phys, size_of(size), node);
    }
}

/// Allocates a zeroed frame for user memory, on this core's node if it has memory above its
/// kernel reserve ([`mm::allocate_user`]); `ENOMEM` when no node has.
pub fn allocate_user_frame() -> Result<u64, Errno> {
    let f = mm::allocate_user(FrameSize::Base).map_err(|_| Errno::ENOMEM)?;
    paging::zero_phys(f.base(), PAGE_SIZE);
    Ok(f.base())
}

/// The address space every exited process holds while it waits to be reaped ([`retired`]).
static RETIRED: spin::Once<Arc<VSpace>> = spin::Once::new();

/// An empty address space, the same for every process that has exited: a zombie gives its own
/// back at once (its NR log and each replica's tables, about 180 KiB) instead of holding it
/// until its parent reaps it, as Linux's `exit_mm` does; what reads a zombie's memory finds
/// nothing mapped. No thread runs on it, and nothing maps into another process's space, so it
/// stays empty. `None` if it cannot be made (out of memory; tried again at the next exit).
pub fn retired() -> Option<Arc<VSpace>> {
    RETIRED
        .try_call_once(|| VSpace::new(UserLayout::FIXED))
        .ok()
        .cloned()
}

impl VSpace {
    /// An empty address space (only the kernel half mapped) laid out as `layout` says.
    pub fn new(layout: UserLayout) -> Result<Arc<VSpace>, Errno> {
        let kernel = kernel_entries();
        let frames = DeterministicAlloc::new(TableFrames, replicated::node_count());
        let nr = NodeReplicated::try_new(LOG_ENTRIES, |node| {
            let tables = NodeTables {
                node,
                frames: frames.handle(node),
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
            changes: spin::Mutex::new(()),
            layout,
            empty: AtomicBool::new(false),
            spare: IrqMutex::new(Some(Step::reserve_exact(TEARDOWN_SPARE)?)),
        }))
    }

    /// Where its stack, `mmap` area and static-PIE image go.
    pub fn layout(&self) -> UserLayout {
        self.layout
    }

    /// This address space's id (unique for the kernel's lifetime).
    pub fn id(&self) -> usize {
        self.id
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
        let changes = self.changes.lock();
        let op = |removed| UpdateOp::MapRegion {
            start,
            len,
            prot,
            kind,
            replace: removed,
        };
        if !replace {
            return self
                .map_op(&changes, op(None), None)
                .map_err(|e| e.unwrap_or(Errno::ENOMEM));
        }
        let mut removed = Step::reserve(step_pages(len))?;
        let first = self.map_op(&changes, op(Some(removed.begin())), Some(&mut removed));
        match first {
            // Too many pages to remove in one step: remove them in steps, then map (no other
            // change can come between, see `changes`).
            Err(None) => {
                self.unmap_steps(&changes, start, len, &mut removed)?;
                self.map_op(&changes, op(Some(removed.begin())), Some(&mut removed))
            }
            r => r,
        }
        .map_err(|e| e.unwrap_or(Errno::ENOMEM))
    }

    /// Adds a region wherever it fits, near `hint` if that is free.
    pub fn map_anywhere(
        &self,
        len: u64,
        hint: u64,
        prot: Prot,
        kind: RegionKind,
    ) -> Result<u64, Errno> {
        let changes = self.changes.lock();
        self.map_op(
            &changes,
            UpdateOp::MapAnywhere {
                len,
                ceiling: self.layout.mmap_ceiling,
                hint,
                prot,
                kind,
            },
            None,
        )
        .map_err(|e| e.unwrap_or(Errno::ENOMEM))
    }

    /// Runs a map operation and frees what it replaced (listed in `removed`, whose step `op`
    /// carries); `Err(None)`: too many pages to replace in one step, nothing changed.
    fn map_op(
        &self,
        changes: &Changes,
        op: UpdateOp,
        removed: Option<&mut Step<Unmapped>>,
    ) -> Result<u64, Option<Errno>> {
        let resp = self.nr.execute_mut(op);
        let removed = removed.map(Step::finish);
        match resp {
            Resp::Mapped(Ok(start)) => {
                if let Some(removed) = removed {
                    self.release(changes, removed);
                }
                Ok(start)
            }
            Resp::Mapped(Err(e)) => Err(Some(e.to_errno())),
            Resp::TooManyPages => Err(None),
            _ => unreachable!("map operations answer Mapped or TooManyPages"),
        }
    }

    /// Shoots down the pages a step removed and frees their frames.
    fn release(&self, changes: &Changes, removed: &[Unmapped]) {
        self.shootdown(changes, flush_set(removed));
        for u in removed {
            free_frame(u.phys, u.size);
        }
    }

    /// Maps frames the caller allocated; frames that could not be mapped (a racing fault
    /// mapped the page first, no memory for a page table, or none to list the failures in)
    /// are freed. Returns how many were mapped.
    pub fn map_frames(&self, pages: Vec<PageMap>) -> usize {
        self.map_batch(pages, |p| (p.1, p.2), UpdateOp::MapFrames)
    }

    /// Runs the batch update `op` over `pages` and frees the frames (`frame` gives each
    /// page's) of those that could not be mapped, or of all if there is no room to list them
    /// in. Returns how many were mapped.
    fn map_batch<P>(
        &self,
        pages: Vec<P>,
        frame: impl Fn(&P) -> (u64, PageSize),
        op: impl FnOnce(Arc<Vec<P>>, StepRef<usize>) -> UpdateOp,
    ) -> usize {
        let Ok(mut failed) = Step::reserve_exact(pages.len()) else {
            for (phys, size) in pages.iter().map(&frame) {
                free_frame(phys, size);
            }
            return 0;
        };
        let pages = Arc::new(pages);
        let Resp::Frames = self.nr.execute_mut(op(pages.clone(), failed.begin())) else {
            unreachable!("batch maps answer Frames")
        };
        let failed = failed.finish();
        for &i in failed.iter() {
            let (phys, size) = frame(&pages[i]);
            free_frame(phys, size);
        }
        pages.len() - failed.len()
    }

    /// Maps pages as another address space maps them, or as NR-FS lends them to `execve`
    /// ([`UpdateOp::MapCopies`]); each frame carries one share for this address space, which a
    /// page that could not be mapped gives back. Returns how many were mapped.
    pub fn map_copies(&self, pages: Vec<Mapping>) -> usize {
        self.map_batch(pages, |m| (m.phys, m.size), UpdateOp::MapCopies)
    }

    /// Maps `frames`, which a kernel object holds, at consecutive pages of a new
    /// [`RegionKind::Channel`] region, read-write or (not `writable`) read-only for good, each
    /// with a share for this address space; returns the region's address. `ENOMEM` (nothing
    /// left mapped) when a page could not be mapped: no page table, or another thread of the
    /// process mapped over the new region meanwhile.
    pub fn map_kernel_frames(&self, frames: &[u64], writable: bool) -> Result<u64, Errno> {
        let len = frames.len() as u64 * PAGE_SIZE;
        let prot = if writable { Prot::RW } else { Prot::READ };
        let mut pages = Vec::new();
        pages.try_reserve(frames.len()).map_err(|_| Errno::ENOMEM)?;
        let start = self.map_anywhere(len, 0, prot, RegionKind::Channel { writable })?;
        for (i, &phys) in frames.iter().enumerate() {
            mm::share(phys);
            pages.push(Mapping {
                vaddr: start + i as u64 * PAGE_SIZE,
                phys,
                size: PageSize::Base4K,
                prot,
                cow: false,
            });
        }
        if self.map_copies(pages) != frames.len() {
            self.unmap(start, len)?;
            return Err(Errno::ENOMEM);
        }
        Ok(start)
    }

    /// The frames of `[start, start + len)` for a kernel object to hold (a grant), with a share
    /// taken for it on each, in page order. The range must lie in one region whose frames
    /// other address spaces see as they are (`MAP_SHARED` or a message region, in 4 KiB pages;
    /// else `EINVAL`) and that allows reading and, if `write`, writing (else `EACCES`); pages
    /// not there yet are populated first (`ENOMEM`, `EINTR` as for [`Self::populate`]). The
    /// caller holds the process's `mm`, so the region does not change meanwhile.
    pub fn share_range(
        &self,
        start: u64,
        len: u64,
        write: bool,
        keep_going: impl Fn() -> bool,
    ) -> Result<Vec<u64>, Errno> {
        let end = start.checked_add(len).ok_or(Errno::EINVAL)?;
        if !start.is_multiple_of(PAGE_SIZE) || !len.is_multiple_of(PAGE_SIZE) || len == 0 {
            return Err(Errno::EINVAL);
        }
        let region = self.resolve(start).1.ok_or(Errno::EFAULT)?;
        if end > region.end || !region.kind.is_shared() {
            return Err(Errno::EINVAL);
        }
        if !region.prot.read || (write && !region.prot.write) {
            return Err(Errno::EACCES);
        }
        let mut frames = Vec::new();
        frames
            .try_reserve_exact((len / PAGE_SIZE) as usize)
            .map_err(|_| Errno::ENOMEM)?;
        self.populate(start, end, region.prot, keep_going)?;
        let give_back = |frames: &[u64]| {
            for &phys in frames {
                free_frame(phys, PageSize::Base4K);
            }
        };
        for va in (start..end).step_by(PAGE_SIZE as usize) {
            match self.resolve(va).0 {
                Some(t) if t.size == PageSize::Base4K => {
                    mm::share(t.frame);
                    frames.push(t.frame);
                }
                _ => {
                    give_back(&frames);
                    return Err(Errno::EINVAL);
                }
            }
        }
        Ok(frames)
    }

    /// Allocates and maps zeroed frames for every page of `[start, end)` not yet mapped (for
    /// MAP_POPULATE and shared memory), [`STEP_PAGES`] at a time, asking `keep_going` between
    /// steps. A `PROT_NONE` range gets no frames (its pages come on demand once it is made
    /// accessible). `ENOMEM` when memory runs out: the pages mapped so far stay mapped (the
    /// caller unmaps the range), none is lost.
    pub fn populate(
        &self,
        start: u64,
        end: u64,
        prot: Prot,
        keep_going: impl Fn() -> bool,
    ) -> Result<(), Errno> {
        if prot.is_none() {
            return Ok(());
        }
        let mut pages = Vec::new();
        let mut va = start;
        while va < end {
            if self.resolve(va).0.is_none() {
                let phys = match allocate_user_frame() {
                    Ok(p) => p,
                    Err(e) => {
                        // What was allocated gets mapped, so the caller's unmap frees it.
                        self.map_frames(pages);
                        return Err(e);
                    }
                };
                if pages.try_reserve(1).is_err() {
                    free_frame(phys, PageSize::Base4K);
                    self.map_frames(pages);
                    return Err(Errno::ENOMEM);
                }
                pages.push((va, phys, PageSize::Base4K, prot));
                if pages.len() == STEP_PAGES {
                    self.map_frames(core::mem::take(&mut pages));
                    // Between steps (no lock held) the caller may yield, or stop for a killed
                    // process (it then unmaps what was populated).
                    if !keep_going() {
                        return Err(Errno::EINTR);
                    }
                }
            }
            va += PAGE_SIZE;
        }
        self.map_frames(pages);
        Ok(())
    }

    /// Removes mappings in `[start, start + len)`; frees their frames after the shootdown.
    pub fn unmap(&self, start: u64, len: u64) -> Result<(), Errno> {
        let changes = self.changes.lock();
        let mut removed = Step::reserve(step_pages(len))?;
        self.unmap_steps(&changes, start, len, &mut removed)
    }

    /// Removes the regions of a range and then its pages, as many per step as `removed` has
    /// room for, each step followed by its shootdown and the freeing of its frames. The caller
    /// holds `changes`.
    fn unmap_steps(
        &self,
        changes: &Changes,
        start: u64,
        len: u64,
        removed: &mut Step<Unmapped>,
    ) -> Result<(), Errno> {
        loop {
            let op = UpdateOp::Unmap {
                start,
                len,
                removed: removed.begin(),
            };
            let resp = self.nr.execute_mut(op);
            self.release(changes, removed.finish());
            match resp {
                Resp::Unmapped(Ok(true)) => {}
                Resp::Unmapped(Ok(false)) => return Ok(()),
                Resp::Unmapped(Err(e)) => return Err(e.to_errno()),
                _ => unreachable!("Unmap answers Unmapped"),
            }
        }
    }

    /// Changes the protection of `[start, start + len)`.
    pub fn protect(&self, start: u64, len: u64, prot: Prot) -> Result<(), Errno> {
        let changes = self.changes.lock();
        match self.nr.execute_mut(UpdateOp::Protect { start, len, prot }) {
            Resp::Protected(Ok(())) => {
                let mut set = FlushSet::EMPTY;
                set.add_range(start, start.saturating_add(len));
                self.shootdown(&changes, set);
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

    /// Pages this address space maps (4 KiB units; pages shared with other address spaces
    /// copy-on-write count in each, as in Linux's RSS; the zero page does not), on this node's
    /// replica: what an out-of-memory kill would give back.
    pub fn resident_pages(&self) -> u64 {
        match self.nr.execute(ReadOp::Resident) {
            Resp::Resident(n) => n,
            _ => unreachable!("Resident answers Resident"),
        }
    }

    /// Removes everything and frees all frames (process exit, exec, or the drop of an address
    /// space a failed `fork` or `execve` built), [`STEP_PAGES`] at a time (fewer, the room
    /// reserved when this address space was made, if memory is short). The caller no longer
    /// runs on these page tables' user half.
    pub fn teardown(&self) {
        let changes = self.changes.lock();
        let (mut removed, spare) = match Step::reserve(STEP_PAGES) {
            Ok(step) => (step, false),
            // `changes` serializes teardowns, and each puts the spare back.
            Err(_) => (self.spare.lock().take().expect("the spare is back"), true),
        };
        loop {
            let resp = self.nr.execute_mut(UpdateOp::Clear(removed.begin()));
            let Resp::Unmapped(Ok(more)) = resp else {
                unreachable!("Clear answers Unmapped(Ok)")
            };
            let gone = removed.finish();
            if !gone.is_empty() {
                self.shootdown(&changes, FlushSet::all());
                for u in gone.iter() {
                    free_frame(u.phys, u.size);
                }
            }
            if !more {
                if spare {
                    *self.spare.lock() = Some(removed);
                }
                self.empty.store(true, Ordering::Release);
                return;
            }
        }
    }

    /// Makes every replica apply all logged operations, then invalidates `set` on every core
    /// that has this address space loaded ([`ipi::shoot_down`]: early acknowledgement, pages
    /// one by one when they are few, descheduled vCPUs left to the host), then frees the page
    /// tables the replicas retired. With nothing to invalidate and no table retired (a range
    /// with no page in it) no core is disturbed.
    ///
    /// Invalidating a page also drops the cached paging-structure entries above it, and a table
    /// is retired only when a step removes its last page, which is in `set`: so the retired
    /// tables are unreachable from every TLB afterwards. Every operation that retires a linked
    /// table holds `changes` until its shootdown is done, so the tables freed here were all
    /// retired by this caller's steps, never by a concurrent unmap whose shootdown has not run.
    fn shootdown(&self, _changes: &Changes, mut set: FlushSet) {
        self.nr.sync_all();
        let retired = (0..self.roots.len())
            .any(|node| self.nr.verify(node, |r| r.space.memory().has_retired()));
        if set.is_empty() {
            if !retired {
                return;
            }
            set = FlushSet::all();
        }
        let me = kcb::current();
        let running = |k: &Kcb| k.sched.active_vspace.load(Ordering::SeqCst) == self.id;
        if running(me) {
            ipi::invalidate(&set);
        }
        let others =
            (0..kcb::MAX_CORES).filter(|&c| c != me.core_id && kcb::get(c).is_some_and(running));
        ipi::shoot_down(others, &set);
        if retired {
            for node in 0..self.roots.len() {
                self.nr.verify(node, |r| r.space.memory().release_retired());
            }
        }
    }

    /// A copy for `fork`: the same regions and pages. Shared anonymous pages map the same
    /// frames; every other page becomes copy-on-write in both (see the module documentation).
    /// Works [`STEP_REGIONS`] regions and [`STEP_PAGES`] pages at a time, and shoots down the
    /// parent's entries that lost write access once at the end. On `ENOMEM` the partial child
    /// is dropped, which gives back every share it took; the parent's pages stay copy-on-write
    /// and are taken over at their next write fault.
    pub fn fork(&self) -> Result<Arc<VSpace>, Errno> {
        let child = VSpace::new(self.layout)?;
        let changes = self.changes.lock();
        let mut flush = FlushSet::EMPTY;
        let copied = self.fork_into(&child, &mut flush);
        self.shootdown(&changes, flush);
        copied.map(|()| child)
    }

    /// Up to 1024 regions starting at or above `from`, in order (`fork`, `/proc/<pid>/maps`);
    /// `ENOMEM` if the list cannot be allocated.
    pub fn regions(&self, from: u64) -> Result<Vec<Region>, Errno> {
        let Resp::Regions(regions) = self.nr.execute(ReadOp::Regions(from)) else {
            unreachable!("Regions answers Regions")
        };
        regions.ok_or(Errno::ENOMEM)
    }

    /// Calls `f` with every region in address order (copies, taken a bounded batch at a time,
    /// so `f` may change the address space); stops at `f`'s first error.
    pub fn each_region(
        &self,
        mut f: impl FnMut(&Region) -> Result<(), Errno>,
    ) -> Result<(), Errno> {
        let mut from = 0;
        loop {
            let regions = self.regions(from)?;
            let Some(last) = regions.last() else {
                return Ok(());
            };
            from = last.end;
            for r in &regions {
                f(r)?;
            }
        }
    }

    /// The steps of [`fork`](Self::fork); `flush` collects the parent's changed entries.
    fn fork_into(&self, child: &VSpace, flush: &mut FlushSet) -> Result<(), Errno> {
        // Channels stay with the process that holds their descriptors (`RegionKind::Channel`).
        let mut channels = Vec::new();
        self.each_region(|r| {
            if matches!(r.kind, RegionKind::Channel { .. }) {
                channels.try_reserve(1).map_err(|_| Errno::ENOMEM)?;
                channels.push(r.start..r.end);
                return Ok(());
            }
            child
                .map_fixed(r.start, r.end - r.start, r.prot, r.kind, false)
                .map(|_| ())
        })?;
        let mut from = 0;
        let mut shared = Step::reserve(STEP_PAGES)?;
        loop {
            let op = UpdateOp::ShareForFork(from, shared.begin());
            let Resp::Shared = self.nr.execute_mut(op) else {
                unreachable!("ShareForFork answers Shared")
            };
            let pages = shared.finish();
            let Some((last, _)) = pages.last() else { break };
            from = last.vaddr + last.size.bytes();
            let mut maps = Vec::new();
            maps.try_reserve(pages.len()).map_err(|_| Errno::ENOMEM)?;
            for &(m, changed) in pages.iter() {
                if changed {
                    flush.add_range(m.vaddr, m.vaddr + m.size.bytes());
                }
                if channels.iter().any(|c| c.contains(&m.vaddr)) {
                    continue;
                }
                mm::share(m.phys);
                maps.push(m);
            }
            child.map_copies(maps);
        }
        Ok(())
    }

    /// Handles a page fault at `addr` by a thread of this address space. `write`/`exec` say
    /// what the access was: a replica that lagged, a write to a copy-on-write page
    /// ([`break_cow`](Self::break_cow)), a read of untouched private memory (the zero page),
    /// any other access to untouched memory (a fresh frame), or a denied access.
    pub fn fault(&self, addr: u64, write: bool, exec: bool) -> Result<(), Fault> {
        // A page that could not be mapped although its region is there and nothing maps it:
        // either the region was unmapped and mapped again meanwhile (threads racing on `brk`)
        // or no memory was left for a page table. Only repeated failures count as the latter.
        const TRIES: usize = 4;
        for _ in 1..TRIES {
            match self.fault_once(addr, write, exec) {
                Ok(false) => continue,
                r => return r.map(|_| ()),
            }
        }
        match self.fault_once(addr, write, exec) {
            Ok(false) => Err(Fault::OutOfMemory),
            r => r.map(|_| ()),
        }
    }

    /// One attempt of [`fault`](Self::fault): `Ok(false)` if the page could not be mapped
    /// while its region is there and nothing maps it.
    fn fault_once(&self, addr: u64, write: bool, exec: bool) -> Result<bool, Fault> {
        use crate::proc::signal::{SEGV_ACCERR, SEGV_MAPERR};
        use Fault::Denied;
        if addr >= vspace::USER_END {
            return Err(Denied(SEGV_MAPERR));
        }
        let allowed = |p: Prot| (!write || p.write) && (!exec || p.exec) && !p.is_none();
        let (translation, region) = self.resolve(addr);
        if let Some(t) = translation {
            if allowed(t.prot) {
                // The replica was behind (the read brought it up to date) or the TLB held a
                // stale entry; the retried access sees the current tables.
                cpu::invlpg(addr);
                return Ok(true);
            }
            if t.cow && region.is_some_and(|r| allowed(r.prot.effective())) {
                return self.break_cow(addr & !(t.size.bytes() - 1)).map(|()| true);
            }
            return Err(Denied(SEGV_ACCERR));
        }
        let Some(region) = region else {
            return Err(Denied(SEGV_MAPERR));
        };
        if !allowed(region.prot.effective()) {
            return Err(Denied(SEGV_ACCERR));
        }
        match region.kind {
            // Mapped whole when made; a hole is a page the program unmapped and mapped again
            // by hand, not one to fill.
            RegionKind::Channel { .. } => return Err(Denied(SEGV_MAPERR)),
            // File pages come from the file, which the layer above reads.
            RegionKind::File { .. } => return Err(Fault::PastEnd),
            _ => {}
        }
        let page = addr & !(PAGE_SIZE - 1);
        let private = !region.kind.is_shared();
        let mapped = match zero_page().filter(|_| private && !write) {
            Some(zero) => self.map_copies(alloc::vec![Mapping {
                vaddr: page,
                phys: zero,
                size: PageSize::Base4K,
                prot: region.prot.effective(),
                cow: true,
            }]),
            None => {
                let phys = allocate_user_frame().map_err(|_| Fault::OutOfMemory)?;
                self.map_frames(alloc::vec![(page, phys, PageSize::Base4K, region.prot)])
            }
        };
        // Not mapped: a racing fault mapped the page first (fine), a racing unmap removed the
        // region (the retried access finds out), the region was removed and made again, or
        // there was no memory for a page table, which must not send the access back here
        // forever (see `fault`).
        Ok(mapped != 0 || !matches!(self.resolve(page), (None, Some(_))))
    }

    /// Ends the copy-on-write sharing of the page at `vaddr` for a write: takes the frame over
    /// when no other address space maps it (no copy, and no other core can hold a writable
    /// entry for it, so no shootdown), and otherwise maps a private copy and shoots down the old entry, so no core of this address space goes on
    /// reading the frame the others keep. Holds `changes`, so a `fork` cannot share the frame
    /// anew in between; a page that changed meanwhile is left for the retried access.
    fn break_cow(&self, vaddr: u64) -> Result<(), Fault> {
        let changes = self.changes.lock();
        let t = match self.resolve(vaddr).0 {
            Some(t) if t.cow => t,
            _ => return Ok(()),
        };
        let bytes = t.size.bytes();
        let new = if !mm::is_shared(t.frame) {
            t.frame
        } else {
            let f = mm::allocate_user(size_of(t.size))
                .map_err(|_| Fault::OutOfMemory)?
                .base();
            paging::copy_phys(f, t.frame, bytes);
            f
        };
        let op = UpdateOp::BreakCow {
            vaddr,
            old: t.frame,
            new,
        };
        let Resp::Broken(done) = self.nr.execute_mut(op) else {
            unreachable!("BreakCow answers Broken")
        };
        if new == t.frame {
            // Other cores hold at most the read-only entry: a write there faults and finds
            // the writable one.
            cpu::invlpg(vaddr);
        } else if done {
            let mut set = FlushSet::EMPTY;
            set.add_range(vaddr, vaddr + bytes);
            self.shootdown(&changes, set);
            free_frame(t.frame, t.size);
        } else {
            free_frame(new, t.size);
        }
        Ok(())
    }

    /// Writes `data` at `addr` in this address space (which need not be the running one), as
    /// a user write would: the pages must be writable and are populated on demand.
    pub fn write_bytes(&self, addr: u64, data: &[u8]) -> Result<(), Errno> {
        let mut done = 0;
        while done < data.len() {
            let va = addr.checked_add(done as u64).ok_or(Errno::EFAULT)?;
            let t = match self.resolve(va).0 {
                Some(t) if t.prot.write => t,
                _ => {
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

impl Drop for VSpace {
    /// Gives back every frame still mapped: an address space that was never torn down (a
    /// `fork` or `execve` that failed part-way) loses nothing.
    fn drop(&mut self) {
        if !self.empty.load(Ordering::Acquire) {
            self.teardown();
        }
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
