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

use super::{Frame, FrameSize, MAX_NODES};
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

#[repr(C, align(4096))]
struct BootArena([u8; BOOT_ARENA_SIZE]);

static mut BOOT_ARENA: BootArena = BootArena([0; BOOT_ARENA_SIZE]);

/// Largest request (size plus alignment) a 4 KiB frame can serve once the allocator's
/// bookkeeping in it is counted.
const SMALL_GROWTH_LIMIT: usize = 3 * 1024;

/// Grows a node's heap with 2 MiB frames of that node (4 KiB frames for small requests when no
/// 2 MiB frame is left).
#[derive(Debug)]
pub struct NodeSource {
    node: usize,
}

// SAFETY: `acquire` never touches the heap it grows except through the `talc` reference it is
// given, and never allocates: it takes a frame from the NCache (which stores its free lists in
// the frames themselves) and claims it.
unsafe impl Source for NodeSource {
    fn acquire<B: Binning>(talc: &mut Talc<Self, B>, layout: Layout) -> Result<(), ()> {
        if layout.size() > frames::LARGE_PAGE_SIZE as usize / 2 {
            return Err(());
        }
        // A 2 MiB frame if the node still has one; when user memory has split them all, a small
        // request still grows the heap by a 4 KiB frame.
        let node = talc.source.node;
        let frame = match super::allocate_on(node, FrameSize::Large) {
            Ok(f) => f,
            Err(_) if layout.size() + layout.align() <= SMALL_GROWTH_LIMIT => {
                super::allocate_on(node, FrameSize::Base).map_err(|_| ())?
            }
            Err(_) => return Err(()),
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
}

type NodeHeap = IrqMutex<Talc<NodeSource, talc::base::binning::DefaultBinning>>;

static HEAPS: [NodeHeap; MAX_NODES] = {
    let mut heaps = [const { IrqMutex::new(Talc::new(NodeSource { node: 0 })) }; MAX_NODES];
    let mut i = 0;
    while i < MAX_NODES {
        heaps[i] = IrqMutex::new(Talc::new(NodeSource { node: i }));
        i += 1;
    }
    heaps
};

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
            let frame =
                Frame::new(phys, FrameSize::Base, node).expect("page allocation is a frame");
            PAGE_FRAMES.fetch_sub(1, Ordering::Relaxed);
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

#[global_allocator]
static GLOBAL: KernelHeap = KernelHeap;
