//! The kernel heap: one allocator per NUMA node, each growing by 2 MiB frames of its own node.
//!
//! An allocation is served by the heap of the calling core's node (the node in its KCB; node 0
//! on the boot core before its KCB exists), or, while the core applies operations to another
//! node's replica, by that node's heap (`Kcb::with_heap_node`), so a replica grows on its own
//! node. If that node is out of memory, the other nodes are
//! tried in turn (starting with the next node id), so a core can still make progress; the fallback is counted
//! ([`remote_fallbacks`]). A free goes back to the heap that owns the address: the boot arena
//! belongs to node 0, every other heap chunk to the node whose RAM holds it.
//!
//! Each per-node heap is a `talc` allocator (a well-kept `no_std` dlmalloc-style allocator that
//! builds on stable and accepts any number of discontiguous arenas, which is what growing by
//! frames needs). Allocations larger than a 2 MiB frame fail (callers needing that much take
//! frames directly).
//!
//! The heap shrinks too: when a free leaves a whole arena (one frame) unused, talc hands the
//! arena back ([`NodeSource::resize`]). Each node keeps one such 2 MiB frame aside as its
//! spare, which the next growth takes first, so a heap that breathes around an arena boundary
//! does not take and return a frame on every allocation; every other empty arena goes back to
//! its node's NCache at once.

use super::{DirectMapLinks, Frame, FrameSize, MAX_NODES};
use crate::arch::paging::{phys_to_virt, virt_to_phys};
use crate::kcb;
use crate::sync::IrqMutex;
use core::alloc::{GlobalAlloc, Layout};
use core::ptr::null_mut;
use core::sync::atomic::{AtomicU64, Ordering};
use talc::base::binning::Binning;
use talc::base::Talc;
use talc::source::Source;

/// Size of the boot arena (inside the kernel image) that serves allocations before the frame
/// allocator is set up.
const BOOT_ARENA_SIZE: usize = 4 << 20;

/// The boot arena's memory, page-aligned.
#[repr(C, align(4096))]
struct BootArena([u8; BOOT_ARENA_SIZE]);

/// The boot arena, claimed by node 0's heap in [`init_boot_arena`].
static mut BOOT_ARENA: BootArena = BootArena([0; BOOT_ARENA_SIZE]);

/// Largest request (size plus alignment) a 4 KiB frame can serve once the allocator's
/// bookkeeping in it is counted.
const SMALL_GROWTH_LIMIT: usize = 3 * 1024;

/// Grows a node's heap with 2 MiB frames of that node (4 KiB frames for small requests when no
/// 2 MiB frame is left), and takes back arenas the heap no longer uses.
#[derive(Debug)]
pub struct NodeSource {
    /// The node whose frames this heap grows with.
    node: usize,
    /// An emptied 2 MiB arena kept for the next growth (see the module documentation).
    spare: Option<Frame>,
}

impl NodeSource {
    /// The source of `node`'s heap, with no spare.
    const fn new(node: usize) -> NodeSource {
        NodeSource { node, spare: None }
    }

    /// Takes an emptied arena's frame: kept as the spare if it is a 2 MiB frame and there is
    /// none, else returned to the node's NCache (directly: a 2 MiB frame belongs there, where
    /// the heap and huge mappings find it whole). False if the NCache refused it; the arena then
    /// stays in the heap.
    fn take_back(&mut self, frame: Frame) -> bool {
        if frame.size() == FrameSize::Large && self.spare.is_none() {
            self.spare = Some(frame);
            return true;
        }
        super::nodes()
            .get(self.node)
            .is_some_and(|n| n.ncache.lock().release(&mut DirectMapLinks, frame).is_ok())
    }
}

// SAFETY: `acquire` and `resize` never touch the heap they manage except through the `talc`
// reference `acquire` is given, and never allocate: they take frames from and give them back to
// the NCache (which stores its free lists in the frames themselves). `resize` releases an arena
// only when talc reports it wholly free (`is_heap_base` with nothing allocated above).
unsafe impl Source for NodeSource {
    const TRACK_HEAP_END: bool = true;

    fn acquire<B: Binning>(talc: &mut Talc<Self, B>, layout: Layout) -> Result<(), ()> {
        if layout.size() > frames::LARGE_PAGE_SIZE as usize / 2 {
            return Err(());
        }
        // The spare arena, else a 2 MiB frame if the node still has one; when user memory has
        // split them all, a small request still grows the heap by a 4 KiB frame.
        let node = talc.source.node;
        let frame = match talc.source.spare.take() {
            Some(f) => f,
            None => match super::allocate_on(node, FrameSize::Large) {
                Ok(f) => f,
                Err(_) if layout.size() + layout.align() <= SMALL_GROWTH_LIMIT => {
                    super::allocate_on(node, FrameSize::Base).map_err(|_| ())?
                }
                Err(_) => return Err(()),
            },
        };
        // SAFETY: the frame was just allocated for this heap alone and is mapped by the direct
        // map for its whole size.
        let claimed = unsafe {
            talc.claim(
                phys_to_virt(frame.base()) as *mut u8,
                frame.size().bytes() as usize,
            )
        };
        claimed.map(|_| ()).ok_or(())
    }

    unsafe fn resize(
        &mut self,
        chunk_base: *mut u8,
        heap_end: *mut u8,
        is_heap_base: bool,
    ) -> *mut u8 {
        if !is_heap_base {
            return heap_end;
        }
        // The whole arena is free. Arenas are frames claimed whole (see `acquire`), so the
        // arena starts at the page below `chunk_base` (talc puts the base tag within its first
        // CHUNK_UNIT bytes) and its length says which frame size it was. The boot arena and
        // anything else are left alone.
        let base = (chunk_base as u64 - 1) & !(frames::BASE_PAGE_SIZE - 1);
        let size = match heap_end as u64 - base {
            frames::BASE_PAGE_SIZE => FrameSize::Base,
            frames::LARGE_PAGE_SIZE => FrameSize::Large,
            _ => return heap_end,
        };
        let boot = &raw const BOOT_ARENA as u64;
        if (boot..boot + BOOT_ARENA_SIZE as u64).contains(&base) {
            return heap_end;
        }
        match Frame::new(virt_to_phys(base), size, self.node) {
            Some(frame) if self.take_back(frame) => chunk_base,
            _ => heap_end,
        }
    }
}

/// One node's heap: a `talc` allocator growing from that node's frames, behind an IRQ-safe lock.
type NodeHeap = IrqMutex<Talc<NodeSource, talc::base::binning::DefaultBinning>>;

/// The per-node heaps, indexed by node id.
static HEAPS: [NodeHeap; MAX_NODES] = {
    let mut heaps = [const { IrqMutex::new(Talc::new(NodeSource::new(0))) }; MAX_NODES];
    let mut i = 0;
    while i < MAX_NODES {
        heaps[i] = IrqMutex::new(Talc::new(NodeSource::new(i)));
        i += 1;
    }
    heaps
};

/// Allocations served by another node's heap because the caller's node was full (see
/// [`remote_fallbacks`]).
static REMOTE_FALLBACKS: AtomicU64 = AtomicU64::new(0);

/// Gives node 0's heap the boot arena. Called once, first thing on the boot core.
pub fn init_boot_arena() {
    let mut heap = HEAPS[0].lock();
    // SAFETY: the arena is a static used by nothing else; called once, so it is claimed once.
    let claimed = unsafe { heap.claim((&raw mut BOOT_ARENA).cast(), BOOT_ARENA_SIZE) };
    assert!(
        claimed.is_some(),
        "boot arena too small for the allocator's metadata"
    );
}

/// One node's heap, as `/proc/reef/memory` shows it.
pub struct HeapStats {
    /// Bytes of the arenas the heap holds (including the boot arena on node 0).
    pub claimed: u64,
    /// Bytes allocated (as requested).
    pub allocated: u64,
    /// Live allocations.
    pub allocations: u64,
    /// Arenas the heap holds.
    pub arenas: u64,
    /// Bytes of arenas given back since boot (including to the spare).
    pub released: u64,
    /// Bytes kept aside as the spare arena.
    pub spare: u64,
}

/// Statistics of `node`'s heap.
pub fn stats(node: usize) -> HeapStats {
    let heap = HEAPS[node].lock();
    let c = heap.counters();
    HeapStats {
        claimed: c.claimed_bytes as u64,
        allocated: c.allocated_bytes as u64,
        allocations: c.allocation_count as u64,
        arenas: c.heap_count as u64,
        released: c.total_released_bytes(),
        spare: heap.source.spare.map_or(0, |f| f.size().bytes()),
    }
}

/// Number of allocations served by another node's heap because the caller's node was full.
pub fn remote_fallbacks() -> u64 {
    REMOTE_FALLBACKS.load(Ordering::Relaxed)
}

/// Allocations of exactly one page, page-aligned, are served by whole frames (never by the
/// heap, so a free of such a layout is always a frame's).
fn is_page(layout: Layout) -> bool {
    layout.size() == frames::BASE_PAGE_SIZE as usize && layout.align() == layout.size()
}

/// Frames handed out for page allocations and not yet freed.
static PAGE_FRAMES: AtomicU64 = AtomicU64::new(0);

/// Bytes of page allocations served by whole frames (NR-FS file data).
pub fn page_bytes() -> u64 {
    PAGE_FRAMES.load(Ordering::Relaxed) * frames::BASE_PAGE_SIZE
}

/// The node whose heap owns `ptr`: node 0 for the boot arena, else the node whose RAM holds it.
fn home_node(ptr: *mut u8) -> usize {
    let addr = ptr as u64;
    let arena = &raw const BOOT_ARENA as u64;
    if (arena..arena + BOOT_ARENA_SIZE as u64).contains(&addr) {
        0
    } else {
        super::node_of(virt_to_phys(addr)).expect("heap pointer outside every node's RAM")
    }
}

/// The global allocator.
pub struct KernelHeap;

// SAFETY: allocations come from `talc` heaps, each behind its own lock; a pointer is always
// returned to the heap it came from (`home_node`), with the layout it was allocated with.
unsafe impl GlobalAlloc for KernelHeap {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if is_page(layout) {
            // A whole frame, of this core's node if it has one (NR-FS file pages): no heap
            // space, and the memory goes straight back to the frame allocator when freed.
            let nodes = super::nodes().len();
            let frame = super::allocate(FrameSize::Base).or_else(|_| {
                (0..nodes)
                    .find_map(|n| super::allocate_on(n, FrameSize::Base).ok())
                    .ok_or(())
            });
            return match frame {
                Ok(f) => {
                    PAGE_FRAMES.fetch_add(1, Ordering::Relaxed);
                    phys_to_virt(f.base()) as *mut u8
                }
                Err(()) => null_mut(),
            };
        }
        let own = kcb::try_current().map(|k| k.heap_node()).unwrap_or(0);
        let nodes = super::nodes().len().max(1);
        for i in 0..nodes {
            let node = (own + i) % nodes;
            // SAFETY: `layout` has non-zero size (GlobalAlloc contract).
            if let Some(p) = unsafe { HEAPS[node].lock().allocate(layout) } {
                if i > 0 {
                    REMOTE_FALLBACKS.fetch_add(1, Ordering::Relaxed);
                }
                return p.as_ptr();
            }
        }
        null_mut()
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        let node = home_node(ptr);
        if is_page(layout) {
            let phys = virt_to_phys(ptr as u64);
            PAGE_FRAMES.fetch_sub(1, Ordering::Relaxed);
            // A file page NR-FS lent to address spaces (`fs::init`) stays theirs: the last
            // one to unmap it frees the frame.
            if !super::unshare(phys) {
                return;
            }
            let frame =
                Frame::new(phys, FrameSize::Base, node).expect("page allocation is a frame");
            if let Err(e) = super::release(frame) {
                crate::kprintln!("reef: heap: could not free page frame {phys:#x}: {e}");
            }
            return;
        }
        // SAFETY: `ptr` was allocated with `layout` from this node's heap (see `alloc` and
        // `home_node`).
        unsafe { HEAPS[node].lock().deallocate(ptr, layout) };
    }
}

/// The kernel's global allocator instance.
#[global_allocator]
static GLOBAL: KernelHeap = KernelHeap;
