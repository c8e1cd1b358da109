//! Physical memory (NrOS §4.1): one NCache per NUMA node holding that node's free frames, one
//! TCache per core (in its KCB) refilling from its own node's NCache, and a kernel heap that
//! serves each core from its own node ([`heap`]).
//!
//! The allocation logic is the host-tested `frames` crate; this module gives it memory access
//! (free lists are stored in the free frames, written through the direct map) and locking.
//!
//! Each node also keeps a share count per base frame of its RAM ([`share`], [`unshare`]),
//! allocated at boot on the node (0.1% of its memory), so that counting the address spaces
//! that map a frame never allocates, whatever a program maps.

pub mod heap;

use crate::arch::paging::phys_to_virt;
use crate::kcb;
use crate::sync::IrqMutex;
use alloc::boxed::Box;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicU32, Ordering};
pub use frames::{AllocError, Frame, FrameSize, PhysRange};
use frames::{FrameLinks, NCache};
use spin::Once;

/// Most NUMA nodes Reef manages.
pub const MAX_NODES: usize = 16;

/// Free-list links stored in the first word of each free frame, through the direct map.
pub struct DirectMapLinks;

impl FrameLinks for DirectMapLinks {
    fn write_next(&mut self, frame_base: u64, next: u64) {
        // SAFETY: the `frames` crate only writes links into free frames it owns (FrameLinks
        // contract); free frames are RAM from the firmware map, mapped by the direct map, and
        // nothing else uses them.
        unsafe { (phys_to_virt(frame_base) as *mut u64).write_volatile(next) }
    }

    fn read_next(&self, frame_base: u64) -> u64 {
        // SAFETY: as for `write_next`: only free frames, whose link was written before.
        unsafe { (phys_to_virt(frame_base) as *const u64).read_volatile() }
    }
}

/// The memory of one NUMA node.
pub struct NodeMemory {
    /// The node's free frames.
    pub ncache: IrqMutex<NCache>,
    /// All RAM of the node (including what the kernel image and boot arena occupy, which the
    /// NCache never sees).
    pub ranges: Vec<PhysRange>,
    /// Free memory kept for the kernel (its heap, page tables, KCBs): user pages and file data
    /// are refused when the node's NCache would fall below it, so that a program filling
    /// memory meets `ENOMEM` (or `ENOSPC`) and the kernel's own allocations still succeed. As
    /// many 2 MiB frames are kept whole ([`NCache::set_kept_large`]), so the heap can still grow
    /// for a large request after user memory split every other 2 MiB frame.
    pub reserve: u64,
}

/// Share counts: per node, per range of its `ranges`, blocks of [`COUNTS_PER_BLOCK`] frames.
static COUNTS: Once<Vec<Vec<Vec<Box<CountBlock>>>>> = Once::new();

/// Base frames whose share counts one block holds (one 4 KiB page of counters).
const COUNTS_PER_BLOCK: usize = 1024;
/// One block of share counts, one counter per base frame.
type CountBlock = [AtomicU32; COUNTS_PER_BLOCK];

/// Zeroed share-count blocks covering every base frame of `r`.
fn count_blocks(r: &PhysRange) -> Vec<Box<CountBlock>> {
    let frames = (r.end - r.base).div_ceil(frames::BASE_PAGE_SIZE) as usize;
    (0..frames.div_ceil(COUNTS_PER_BLOCK))
        .map(|_| Box::new([const { AtomicU32::new(0) }; COUNTS_PER_BLOCK]))
        .collect()
}

/// The share count of the base frame at `phys`, if it is RAM.
fn count_of(phys: u64) -> Option<&'static AtomicU32> {
    let counts = COUNTS.get()?;
    nodes().iter().zip(counts).find_map(|(n, node_counts)| {
        n.ranges.iter().zip(node_counts).find_map(|(r, blocks)| {
            let i = r
                .contains(phys)
                .then(|| ((phys - r.base) / frames::BASE_PAGE_SIZE) as usize)?;
            Some(&blocks[i / COUNTS_PER_BLOCK][i % COUNTS_PER_BLOCK])
        })
    })
}

/// Records one more address space mapping the frame at `phys` (a `fork` child sharing it):
/// a frame with no count yet has one owner, so it goes to 2.
pub fn share(phys: u64) {
    if let Some(c) = count_of(phys) {
        let _ = c.fetch_update(Ordering::AcqRel, Ordering::Acquire, |v| {
            Some(v.max(1).saturating_add(1))
        });
    }
}

/// Gives the frame at `phys` a share that is never dropped (the zero page): [`unshare`] never
/// says to free it and [`is_shared`] always holds, however many address spaces map it.
pub fn share_forever(phys: u64) {
    if let Some(c) = count_of(phys) {
        c.store(u32::MAX / 2, Ordering::Release);
    }
}

/// Whether more than one address space maps the frame at `phys` (its share count is above 1):
/// a copy-on-write fault must copy it rather than take it over.
pub fn is_shared(phys: u64) -> bool {
    count_of(phys).is_some_and(|c| c.load(Ordering::Acquire) > 1)
}

/// Records one address space fewer mapping the frame at `phys`; true if none is left and the
/// caller must free it.
pub fn unshare(phys: u64) -> bool {
    count_of(phys).is_none_or(|c| {
        let before = c
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |v| {
                Some(v.saturating_sub(1))
            })
            .unwrap_or(0);
        before <= 1
    })
}

/// The kernel reserve of a node with `bytes` of RAM: 1/32 of it, between 4 and 32 MiB.
pub const fn reserve_for(bytes: u64) -> u64 {
    let r = bytes / 32;
    if r < 4 << 20 {
        4 << 20
    } else if r > 32 << 20 {
        32 << 20
    } else {
        r
    }
}

/// Every node's memory, indexed by node id (set by [`init`]).
static NODES: Once<Vec<NodeMemory>> = Once::new();

/// Sets up the NCaches: `free[n]` are the RAM ranges node `n`'s NCache may hand out, `all[n]`
/// all RAM ranges of node `n`.
pub fn init(free: Vec<Vec<PhysRange>>, all: Vec<Vec<PhysRange>>) {
    NODES.call_once(|| {
        free.into_iter()
            .zip(all)
            .enumerate()
            .map(|(node, (free, ranges))| {
                let mut ncache = NCache::new(node);
                for r in free {
                    ncache.add_range(&mut DirectMapLinks, r);
                }
                let reserve = reserve_for(ranges.iter().map(|r| r.len()).sum());
                ncache.set_kept_large((reserve / frames::LARGE_PAGE_SIZE) as usize);
                NodeMemory {
                    ncache: IrqMutex::new(ncache),
                    ranges,
                    reserve,
                }
            })
            .collect()
    });
    // From the heap, once the NCaches can grow it: the boot core's node (the counts are
    // touched only when frames are shared, unshared or freed).
    COUNTS.call_once(|| {
        nodes()
            .iter()
            .map(|n| n.ranges.iter().map(count_blocks).collect())
            .collect()
    });
}

/// All nodes' memory (empty before [`init`]).
pub fn nodes() -> &'static [NodeMemory] {
    NODES.get().map(|v| v.as_slice()).unwrap_or(&[])
}

/// The node whose RAM contains `phys`.
pub fn node_of(phys: u64) -> Option<usize> {
    nodes()
        .iter()
        .position(|n| n.ranges.iter().any(|r| r.contains(phys)))
}

/// Allocates a frame for the kernel itself from `node`'s NCache directly (memory that must
/// live on a particular node: another core's KCB, heap growth, page tables). It may use the
/// node's reserve, including the 2 MiB frames kept whole for the heap.
pub fn allocate_on(node: usize, size: FrameSize) -> Result<Frame, AllocError> {
    let n = nodes()
        .get(node)
        .ok_or(AllocError::OutOfMemory { node, size })?;
    let mut ncache = n.ncache.lock();
    match size {
        FrameSize::Base => ncache.allocate_base_any(&mut DirectMapLinks),
        FrameSize::Large => ncache.allocate_large(&mut DirectMapLinks),
    }
}

/// Allocates a frame through the current core's TCache (its own node's memory). A frame the
/// TCache holds is taken without the node's NCache lock (NrOS §4.1's fast path); the NCache is
/// locked only to refill.
pub fn allocate(size: FrameSize) -> Result<Frame, AllocError> {
    match kcb::try_current() {
        Some(kcb) => {
            let mut tcache = kcb.tcache.lock();
            if let Some(frame) = tcache.take(size) {
                return Ok(frame);
            }
            let mut ncache = nodes()[kcb.node_id].ncache.lock();
            tcache.allocate(&mut ncache, &mut DirectMapLinks, size)
        }
        None => allocate_on(0, size),
    }
}

/// Allocates a frame for memory a program asked for (user pages, file data): from this core's
/// node while it has more than its [`NodeMemory::reserve`] free, else from the first other
/// node that has; `OutOfMemory` when none has.
pub fn allocate_user(size: FrameSize) -> Result<Frame, AllocError> {
    let all = nodes();
    let Some(kcb) = kcb::try_current() else {
        return allocate_on(0, size);
    };
    let own = kcb.node_id;
    // The fast path: a frame this core already cached is not counted as free by its node, so
    // taking it leaves the node's reserve as it was.
    if let Some(frame) = kcb.tcache.lock().take(size) {
        return Ok(frame);
    }
    for i in 0..all.len() {
        let node = (own + i) % all.len();
        let n = &all[node];
        // Lock order: TCache before NCache (as in `allocate` and `release`).
        let mut tcache = (node == own).then(|| kcb.tcache.lock());
        let mut ncache = n.ncache.lock();
        if ncache.free_bytes() < n.reserve + size.bytes() {
            continue;
        }
        let got = match tcache.as_mut() {
            Some(t) => t.allocate(&mut ncache, &mut DirectMapLinks, size),
            None => ncache.allocate(&mut DirectMapLinks, size),
        };
        if got.is_ok() {
            return got;
        }
    }
    Err(AllocError::OutOfMemory { node: own, size })
}

/// Whether every node has `bytes` free above its reserve (file data that every node's NR-FS
/// replica will copy is admitted only then; see `fs::admit`).
pub fn every_node_has(bytes: u64) -> bool {
    nodes()
        .iter()
        .all(|n| n.ncache.lock().free_bytes() >= n.reserve + bytes)
}

/// Returns a frame: to the current core's TCache if it is of this core's node, else to its
/// node's NCache.
pub fn release(frame: Frame) -> Result<(), AllocError> {
    let node = nodes()
        .get(frame.node())
        .ok_or(AllocError::ForeignFrame { node: 0, frame })?;
    match kcb::try_current() {
        Some(kcb) if kcb.node_id == frame.node() => {
            let mut tcache = kcb.tcache.lock();
            let Err(frame) = tcache.keep(frame) else {
                return Ok(());
            };
            let mut ncache = node.ncache.lock();
            tcache.release(&mut ncache, &mut DirectMapLinks, frame)
        }
        _ => node.ncache.lock().release(&mut DirectMapLinks, frame),
    }
}

/// All RAM of all nodes, in bytes (what `/proc/meminfo` and `sysinfo` call total).
pub fn total_bytes() -> u64 {
    nodes()
        .iter()
        .flat_map(|n| n.ranges.iter())
        .map(|r| r.len())
        .sum()
}

/// Free bytes in all NCaches and TCaches.
pub fn free_bytes() -> u64 {
    let cached: u64 = (0..kcb::MAX_CORES)
        .filter_map(kcb::get)
        .map(|k| k.tcache.lock().cached_bytes())
        .sum();
    nodes()
        .iter()
        .map(|n| n.ncache.lock().free_bytes())
        .sum::<u64>()
        + cached
}

/// A zeroed kernel buffer of `len` bytes whose size a program chose (data on its way to or
/// from user memory): `ENOMEM` instead of a panic when the heap cannot provide it.
pub fn zeroed_buffer(len: usize) -> Result<Vec<u8>, abi::Errno> {
    let mut v = Vec::new();
    v.try_reserve_exact(len).map_err(|_| abi::Errno::ENOMEM)?;
    v.resize(len, 0);
    Ok(v)
}

/// `/proc/reef/memory`: per node, free frames (NCache), the kernel reserve, page frames that
/// hold NR-FS file data, and the heap (arenas held, bytes and allocations live, arenas given
/// back since boot, the spare arena); all sizes in KiB.
pub fn report() -> alloc::string::String {
    use core::fmt::Write;
    let mut s = alloc::string::String::new();
    let _ = writeln!(
        s,
        "node       free    reserve  heap-held  heap-used  allocations  arenas  released  spare"
    );
    for (node, n) in nodes().iter().enumerate() {
        let free = n.ncache.lock().free_bytes();
        let h = heap::stats(node);
        let _ = writeln!(
            s,
            "{node:4} {:10} {:10} {:10} {:10} {:12} {:7} {:9} {:6}",
            free >> 10,
            n.reserve >> 10,
            h.claimed >> 10,
            h.allocated >> 10,
            h.allocations,
            h.arenas,
            h.released >> 10,
            h.spare >> 10
        );
    }
    let _ = writeln!(
        s,
        "file data pages: {} KiB; heap allocations served by another node: {}",
        heap::page_bytes() >> 10,
        heap::remote_fallbacks()
    );
    s
}
