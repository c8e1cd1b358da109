//! Memory calls: `mmap`, `munmap`, `mremap`, `mprotect`, `madvise`, `msync`, `brk`, the `mlock`
//! family (NR-vMem, see `crate::vm`;
//! file pages through `crate::filemap`).

use super::SysResult;
use crate::arch::idt::InterruptFrame;
use crate::fd::Node;
use crate::filemap;
use crate::fs::dev::Device;
use crate::fs::MappedFile;
use crate::proc::{sched, Thread};
use crate::vm::VSpace;
use crate::vm::PAGE_SIZE;
use abi::Errno;
use alloc::sync::Arc;
use alloc::vec::Vec;
use vspace::{Mapping, PageSize, Prot, RegionKind};

/// `mmap` protection bit `PROT_WRITE`.
const PROT_WRITE: u64 = 0x2;
/// `mmap` flag `MAP_SHARED`: the mapping is shared with the other processes that map it.
const MAP_SHARED: u64 = 0x01;
/// `mmap` flag `MAP_PRIVATE`: a private copy-on-write mapping.
const MAP_PRIVATE: u64 = 0x02;
/// `mmap` flag `MAP_SHARED_VALIDATE`: `MAP_SHARED` with strict flag checking; also the mask of
/// the mapping-type bits.
const MAP_SHARED_VALIDATE: u64 = 0x03;
/// `mmap` flag `MAP_FIXED`: map exactly at `addr`, replacing whatever is mapped there.
const MAP_FIXED: u64 = 0x10;
/// `mmap` flag `MAP_ANONYMOUS`: memory backed by no file, zero-filled.
const MAP_ANONYMOUS: u64 = 0x20;
/// `mmap` flag `MAP_GROWSDOWN` (a stack that grows downwards on Linux); accepted and ignored.
const MAP_GROWSDOWN: u64 = 0x100;
/// `mmap` flag `MAP_DENYWRITE` (ignored by Linux too); accepted and ignored.
const MAP_DENYWRITE: u64 = 0x800;
/// `mmap` flag `MAP_EXECUTABLE` (ignored by Linux too); accepted and ignored.
const MAP_EXECUTABLE: u64 = 0x1000;
/// `mmap` flag `MAP_LOCKED` (lock the pages in memory on Linux); accepted and ignored.
const MAP_LOCKED: u64 = 0x2000;
/// `mmap` flag `MAP_NORESERVE` (reserve no swap space on Linux); accepted and ignored.
const MAP_NORESERVE: u64 = 0x4000;
/// `mmap` flag `MAP_POPULATE`: fill in the pages at `mmap` time instead of on first access.
const MAP_POPULATE: u64 = 0x8000;
/// `mmap` flag `MAP_NONBLOCK` (with `MAP_POPULATE`, no read-ahead on Linux); accepted and
/// ignored.
const MAP_NONBLOCK: u64 = 0x10000;
/// `mmap` flag `MAP_STACK` (the mapping is a thread stack); accepted and ignored.
const MAP_STACK: u64 = 0x20000;
/// `mmap` flag `MAP_FIXED_NOREPLACE`: map exactly at `addr` like `MAP_FIXED`, but without
/// replacing an existing mapping.
const MAP_FIXED_NOREPLACE: u64 = 0x100000;
/// Every `mmap` flag Reef accepts; any other bit is `EINVAL`.
const KNOWN_FLAGS: u64 = MAP_SHARED
    | MAP_PRIVATE
    | MAP_FIXED
    | MAP_ANONYMOUS
    | MAP_GROWSDOWN
    | MAP_DENYWRITE
    | MAP_EXECUTABLE
    | MAP_LOCKED
    | MAP_NORESERVE
    | MAP_POPULATE
    | MAP_NONBLOCK
    | MAP_STACK
    | MAP_FIXED_NOREPLACE;

/// Rounds `len` up to a whole number of pages; `ENOMEM` on overflow.
fn page_up(len: u64) -> Result<u64, Errno> {
    len.checked_add(PAGE_SIZE - 1)
        .map(|l| l & !(PAGE_SIZE - 1))
        .ok_or(Errno::ENOMEM)
}

/// Converts a Linux `prot` argument to a [`Prot`] (ignoring `PROT_GROWSDOWN`/`PROT_GROWSUP`);
/// `EINVAL` for other unknown bits.
fn prot_arg(p: u64) -> Result<Prot, Errno> {
    // PROT_GROWSDOWN/PROT_GROWSUP only matter for stack regions; Reef ignores them.
    Prot::from_linux(p & !0x0300_0000).ok_or(Errno::EINVAL)
}

/// `mmap`: anonymous private and shared memory (also of `/dev/zero`), and private and shared
/// mappings of regular files ([`filemap::map_file`]; a shared mapping of a file in Hare answers
/// `ENODEV`).
pub fn mmap(me: &Arc<Thread>, _: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    let (addr, len, prot, flags, off) = (a[0], a[1], a[2], a[3], a[5]);
    if len == 0 || flags & !KNOWN_FLAGS != 0 || addr % PAGE_SIZE != 0 && flags & MAP_FIXED != 0 {
        return Err(Errno::EINVAL);
    }
    let shared = match flags & MAP_SHARED_VALIDATE {
        MAP_SHARED | MAP_SHARED_VALIDATE => true,
        MAP_PRIVATE => false,
        _ => return Err(Errno::EINVAL),
    };
    // As Linux: an unaligned offset, then the descriptor, then the file.
    let file = if flags & MAP_ANONYMOUS != 0 {
        None
    } else {
        if off % PAGE_SIZE != 0 {
            return Err(Errno::EINVAL);
        }
        let f = super::file::file(me, a[4])?;
        if matches!(f.node, Node::Device(Device::Zero, _)) {
            None
        } else {
            // Linux's `file_mmap_ok`: the range must lie below the largest file size.
            const MAX_FILE: u64 = i64::MAX as u64;
            if off > MAX_FILE || len > MAX_FILE - off {
                return Err(Errno::EOVERFLOW);
            }
            let mapped = MappedFile::of(&f)?;
            // A shared writable mapping writes the file: the descriptor must allow it.
            if shared && prot & PROT_WRITE != 0 && !f.writable() {
                return Err(Errno::EACCES);
            }
            Some(mapped)
        }
    };
    let prot = prot_arg(prot)?;
    let len = page_up(len)?;
    let kind = match &file {
        Some(f) => RegionKind::File {
            shared,
            file: f.nrfs_ino().unwrap_or(0),
            page: off / PAGE_SIZE,
        },
        None => RegionKind::Anonymous { shared },
    };
    let _mm = me.process.mm.lock();
    let vm = me.process.vm();
    let start = if flags & (MAP_FIXED | MAP_FIXED_NOREPLACE) != 0 {
        vm.map_fixed(addr, len, prot, kind, flags & MAP_FIXED_NOREPLACE == 0)?
    } else {
        vm.map_anywhere(len, addr & !(PAGE_SIZE - 1), prot, kind)?
    };
    let made = match file {
        Some(file) => filemap::map_file(&vm, &file, (start, len), off, (prot, shared)),
        None if shared
            || flags & MAP_POPULATE != 0
            || me
                .process
                .lock_future
                .load(core::sync::atomic::Ordering::Relaxed) =>
        {
            vm.populate(start, start + len, prot, || sched::keep_going(me))
        }
        None => Ok(()),
    };
    if let Err(e) = made {
        let _ = vm.unmap(start, len);
        return Err(e);
    }
    Ok(start)
}

/// `munmap(addr, len)`: unmaps the whole pages covering the range; `EINVAL` for an unaligned
/// `addr` or a zero `len`.
pub fn munmap(me: &Arc<Thread>, _: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    if !a[0].is_multiple_of(PAGE_SIZE) || a[1] == 0 {
        return Err(Errno::EINVAL);
    }
    let _mm = me.process.mm.lock();
    me.process.vm().unmap(a[0], page_up(a[1])?)?;
    Ok(0)
}

/// `mprotect(addr, len, prot)`: changes the protection of the whole pages covering the range;
/// `EINVAL` for an unaligned `addr` or an unknown `prot` bit, nothing to do for a zero `len`.
pub fn mprotect(me: &Arc<Thread>, _: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    if !a[0].is_multiple_of(PAGE_SIZE) {
        return Err(Errno::EINVAL);
    }
    if a[1] == 0 {
        return Ok(0);
    }
    let prot = prot_arg(a[2])?;
    let _mm = me.process.mm.lock();
    me.process.vm().protect(a[0], page_up(a[1])?, prot)?;
    Ok(0)
}

/// `madvise`: every advice is accepted; `MADV_DONTNEED` and `MADV_FREE` drop pages as Linux
/// does, the rest are hints Reef does not act on. Dropped pages of private anonymous memory,
/// the heap and the stack read as zero afterwards; those of a file mapping are the file's
/// again at the next access (a private mapping loses its own copies; [`filemap::fault_in`]).
/// Shared anonymous memory keeps its contents (its frames are the memory itself) and so do a
/// program's loaded segments (Reef does not read them from the file again). `MADV_FREE` is
/// only for private anonymous memory (EINVAL on a file), as on Linux; `EINVAL` for a message
/// region, `ENOMEM` if part of the range is not mapped.
pub fn madvise(me: &Arc<Thread>, _: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    const MADV_DONTNEED: u64 = 4;
    const MADV_FREE: u64 = 8;
    if !a[0].is_multiple_of(PAGE_SIZE) {
        return Err(Errno::EINVAL);
    }
    if a[1] == 0 {
        return Ok(0);
    }
    let len = page_up(a[1])?;
    if !matches!(a[2], MADV_DONTNEED | MADV_FREE) {
        return Ok(0);
    }
    let _mm = me.process.mm.lock();
    let vm = me.process.vm();
    let end = a[0].checked_add(len).ok_or(Errno::EINVAL)?;
    // Checked whole first, so that an error changes nothing.
    let mut parts = Vec::new();
    let mut va = a[0];
    while va < end {
        let r = vm.resolve(va).1.ok_or(Errno::ENOMEM)?;
        let part_end = r.end.min(end);
        match r.kind {
            RegionKind::Channel { .. } => return Err(Errno::EINVAL),
            RegionKind::File { .. } if a[2] == MADV_FREE => return Err(Errno::EINVAL),
            RegionKind::Anonymous { shared: false }
            | RegionKind::Heap
            | RegionKind::Stack
            | RegionKind::File { .. } => {
                parts.try_reserve(1).map_err(|_| Errno::ENOMEM)?;
                parts.push((va, part_end - va, r.prot, r.kind.advanced(va - r.start)));
            }
            RegionKind::Anonymous { shared: true } | RegionKind::Image => {}
        }
        va = part_end;
    }
    for (start, len, prot, kind) in parts {
        // The region made again over itself: the same region, without its pages.
        vm.map_fixed(start, len, prot, kind, true)?;
    }
    Ok(0)
}

/// `mremap(old, old_size, new_size, flags, new_addr)`: shrinks a mapping in place, grows it in
/// place when the pages after it are free, or (`MREMAP_MAYMOVE`) moves it where it fits or
/// (`MREMAP_FIXED`) to `new_addr`, replacing what was there. A moved mapping keeps its pages,
/// frames and all (shared pages stay shared, copy-on-write ones copy-on-write: each frame
/// gets a share for the new place before the old one is unmapped); `MREMAP_DONTUNMAP` leaves
/// the old range mapped and empty (private anonymous memory only). The new part of a grown
/// mapping is what the region holds: zero-filled memory, or the file's next pages (SIGBUS
/// past its end). Linux's errors: `EINVAL` for unknown or inconsistent flags, unaligned
/// addresses, a zero or impossible new size, a new range outside the user half or overlapping
/// the old one; `EFAULT` unless the old range
/// lies in one mapping (a message region cannot move); `ENOMEM` when it cannot grow in place
/// and may not move. An `old_size` of 0 (Linux: a second mapping of shared memory) is
/// `EINVAL` here. The caller's other threads must not touch the range meanwhile (Linux holds
/// them off; Reef's move reads each page's frame and then maps it, so a write racing with it
/// may be lost).
pub fn mremap(me: &Arc<Thread>, _: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    const MREMAP_MAYMOVE: u64 = 1;
    const MREMAP_FIXED: u64 = 2;
    const MREMAP_DONTUNMAP: u64 = 4;
    let (old, flags, new_addr) = (a[0], a[3], a[4]);
    let may_move = flags & MREMAP_MAYMOVE != 0;
    let fixed = flags & MREMAP_FIXED != 0;
    let keep_old = flags & MREMAP_DONTUNMAP != 0;
    if flags & !(MREMAP_MAYMOVE | MREMAP_FIXED | MREMAP_DONTUNMAP) != 0
        || !old.is_multiple_of(PAGE_SIZE)
        || (fixed || keep_old) && !may_move
        || keep_old && a[1] != a[2]
    {
        return Err(Errno::EINVAL);
    }
    let (old_size, new_size) = (page_up(a[1])?, page_up(a[2])?);
    if new_size == 0 || old_size == 0 || new_size > vspace::USER_END {
        return Err(Errno::EINVAL);
    }
    let old_end = old.checked_add(old_size).ok_or(Errno::EINVAL)?;
    if fixed {
        let new_end = new_addr.checked_add(new_size).ok_or(Errno::EINVAL)?;
        if !new_addr.is_multiple_of(PAGE_SIZE)
            || new_end > vspace::USER_END
            || new_addr < old_end && old < new_end
        {
            return Err(Errno::EINVAL);
        }
    }
    let _mm = me.process.mm.lock();
    let vm = me.process.vm();
    let region = vm.resolve(old).1.ok_or(Errno::EFAULT)?;
    if old_end > region.end || matches!(region.kind, RegionKind::Channel { .. }) {
        return Err(Errno::EFAULT);
    }
    if keep_old && region.kind != (RegionKind::Anonymous { shared: false }) {
        return Err(Errno::EINVAL);
    }
    let kind = region.kind.advanced(old - region.start);
    if !fixed {
        if new_size <= old_size {
            if new_size < old_size {
                vm.unmap(old + new_size, old_size - new_size)?;
            }
            return Ok(old);
        }
        let more = new_size - old_size;
        if old_end == region.end
            && vm
                .map_fixed(old_end, more, region.prot, kind.advanced(old_size), false)
                .is_ok()
        {
            if let Err(e) = fill_grown(me, &vm, (old_end, more), kind.advanced(old_size)) {
                let _ = vm.unmap(old_end, more);
                return Err(e);
            }
            return Ok(old);
        }
        if !may_move {
            return Err(Errno::ENOMEM);
        }
    }
    let to = if fixed {
        vm.map_fixed(new_addr, new_size, region.prot, kind, true)?
    } else {
        vm.map_anywhere(new_size, 0, region.prot, kind)?
    };
    let kept = old_size.min(new_size);
    let moved = move_pages(&vm, old, to, kept).and_then(|()| {
        if new_size > kept {
            fill_grown(me, &vm, (to + kept, new_size - kept), kind.advanced(kept))
        } else {
            Ok(())
        }
    });
    if let Err(e) = moved {
        let _ = vm.unmap(to, new_size);
        return Err(e);
    }
    if keep_old {
        vm.map_fixed(old, old_size, region.prot, kind, true)?;
    } else {
        vm.unmap(old, old_size)?;
    }
    Ok(to)
}

/// Maps the pages of `[from, from + len)` again at `to`, each with a share of its frame for
/// the new place, as they are (protection, copy-on-write); the old pages stay until the
/// caller unmaps them. `ENOMEM` if a page could not be mapped; `EINVAL` for a 2 MiB page.
fn move_pages(vm: &VSpace, from: u64, to: u64, len: u64) -> Result<(), Errno> {
    const BATCH: usize = 256;
    let mut batch: Vec<Mapping> = Vec::new();
    batch.try_reserve(BATCH).map_err(|_| Errno::ENOMEM)?;
    let flush = |batch: &mut Vec<Mapping>| {
        let n = batch.len();
        if vm.map_copies(core::mem::take(batch)) == n {
            batch.try_reserve(BATCH).map_err(|_| Errno::ENOMEM)
        } else {
            Err(Errno::ENOMEM)
        }
    };
    for va in (from..from + len).step_by(PAGE_SIZE as usize) {
        let Some(t) = vm.resolve(va).0 else { continue };
        if t.size != PageSize::Base4K {
            for m in batch {
                crate::vm::free_frame(m.phys, m.size);
            }
            return Err(Errno::EINVAL);
        }
        crate::mm::share(t.frame);
        batch.push(Mapping {
            vaddr: to + (va - from),
            phys: t.frame,
            size: PageSize::Base4K,
            prot: t.prot,
            cow: t.cow,
        });
        if batch.len() == BATCH {
            flush(&mut batch)?;
        }
    }
    flush(&mut batch)
}

/// Fills the part `[start, start + len)` a grown mapping gained, of region kind `kind`: shared
/// anonymous memory is populated (as `mmap` does), a file's pages are mapped from the file
/// (past its end they stay missing: SIGBUS), the rest comes on demand.
fn fill_grown(
    me: &Arc<Thread>,
    vm: &VSpace,
    (start, len): (u64, u64),
    kind: RegionKind,
) -> Result<(), Errno> {
    let prot = vm.resolve(start).1.ok_or(Errno::EFAULT)?.prot;
    match kind {
        RegionKind::Anonymous { shared: true } => {
            vm.populate(start, start + len, prot, || sched::keep_going(me))
        }
        RegionKind::File { shared, file, page } if file != 0 => match MappedFile::by_ino(file) {
            Ok(f) => filemap::map_file(vm, &f, (start, len), page * PAGE_SIZE, (prot, shared)),
            Err(_) => Ok(()),
        },
        _ => Ok(()),
    }
}

/// `msync(addr, len, flags)`: a shared file mapping's frames are the file's pages (NR-FS keeps
/// files in memory), so there is nothing to write back; Linux's checks: `EINVAL` for an
/// unaligned `addr`, unknown flags or both `MS_ASYNC` and `MS_SYNC`, `ENOMEM` if part of the
/// range is not mapped.
pub fn msync(me: &Arc<Thread>, _: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    const MS_ASYNC: u64 = 1;
    const MS_INVALIDATE: u64 = 2;
    const MS_SYNC: u64 = 4;
    let flags = a[2];
    if !a[0].is_multiple_of(PAGE_SIZE)
        || flags & !(MS_ASYNC | MS_INVALIDATE | MS_SYNC) != 0
        || flags & (MS_ASYNC | MS_SYNC) == MS_ASYNC | MS_SYNC
    {
        return Err(Errno::EINVAL);
    }
    let end = a[0].checked_add(page_up(a[1])?).ok_or(Errno::ENOMEM)?;
    let vm = me.process.vm();
    let mut va = a[0];
    while va < end {
        va = vm.resolve(va).1.ok_or(Errno::ENOMEM)?.end;
    }
    Ok(0)
}

/// `brk`: grows or shrinks the heap region; returns the (possibly unchanged) break.
pub fn brk(me: &Arc<Thread>, _: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    let p = &me.process;
    let mut brk = p.mm.lock();
    let (start, current) = *brk;
    let want = a[0];
    let vm = p.vm();
    if want < start || want >= vm.layout().mmap_ceiling {
        return Ok(current);
    }
    let old_end = page_up(current)?;
    let new_end = page_up(want)?;
    if new_end > old_end {
        if vm
            .map_fixed(
                old_end,
                new_end - old_end,
                Prot::RW,
                RegionKind::Heap,
                false,
            )
            .is_err()
        {
            return Ok(current);
        }
    } else if new_end < old_end {
        vm.unmap(new_end, old_end - new_end)?;
    }
    brk.1 = want;
    Ok(want)
}

/// Makes the pages of every region in `[start, end)` present: what `mlock` promises (the
/// pages stay in memory; Reef never pages out, so present is locked). Anonymous memory, the
/// heap and the stack are populated; file mappings, a program's segments and message regions
/// were mapped when made. `ENOMEM` if part of the range is not mapped (checked first) or
/// memory runs out.
fn lock_range(me: &Arc<Thread>, vm: &VSpace, start: u64, end: u64) -> Result<(), Errno> {
    let mut va = start;
    while va < end {
        va = vm.resolve(va).1.ok_or(Errno::ENOMEM)?.end;
    }
    let mut va = start;
    while va < end {
        let r = vm.resolve(va).1.ok_or(Errno::ENOMEM)?;
        let part_end = r.end.min(end);
        if matches!(
            r.kind,
            RegionKind::Anonymous { .. } | RegionKind::Heap | RegionKind::Stack
        ) {
            vm.populate(va, part_end, r.prot, || sched::keep_going(me))?;
        }
        va = part_end;
    }
    Ok(())
}

/// The page-aligned range `mlock` and `munlock` act on: `addr` rounded down, `addr + len`
/// rounded up (as Linux rounds them); `ENOMEM` past the end of the address space.
fn lock_bounds(addr: u64, len: u64) -> Result<(u64, u64), Errno> {
    let start = addr & !(PAGE_SIZE - 1);
    let end = page_up(addr.checked_add(len).ok_or(Errno::ENOMEM)?)?;
    if end > vspace::USER_END {
        return Err(Errno::ENOMEM);
    }
    Ok((start, end))
}

/// `mlock(addr, len)` and `mlock2(addr, len, flags)`: the pages of the range are made present
/// ([`lock_range`]; with `MLOCK_ONFAULT`, as they are touched, which is what Reef does anyway)
/// and stay so, since Reef never pages out. `EINVAL` for unknown flags, `ENOMEM` for a range
/// not wholly mapped. Locked memory is not counted against `RLIMIT_MEMLOCK`.
pub fn mlock(me: &Arc<Thread>, f: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    const MLOCK_ONFAULT: u64 = 1;
    let flags = if f.error_code == abi::syscalls::SYS_MLOCK2 as u64 {
        a[2]
    } else {
        0
    };
    if flags & !MLOCK_ONFAULT != 0 {
        return Err(Errno::EINVAL);
    }
    let (start, end) = lock_bounds(a[0], a[1])?;
    let _mm = me.process.mm.lock();
    let vm = me.process.vm();
    if flags & MLOCK_ONFAULT != 0 {
        let mut va = start;
        while va < end {
            va = vm.resolve(va).1.ok_or(Errno::ENOMEM)?.end;
        }
        return Ok(0);
    }
    lock_range(me, &vm, start, end).map(|()| 0)
}

/// `munlock(addr, len)`: nothing to undo (the pages were in memory before and stay there);
/// `ENOMEM` for a range not wholly mapped, as Linux answers.
pub fn munlock(me: &Arc<Thread>, _: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    let (start, end) = lock_bounds(a[0], a[1])?;
    let _mm = me.process.mm.lock();
    let vm = me.process.vm();
    let mut va = start;
    while va < end {
        va = vm.resolve(va).1.ok_or(Errno::ENOMEM)?.end;
    }
    Ok(0)
}

/// `mlockall(flags)`: `MCL_CURRENT` makes every page of the address space present
/// ([`lock_range`]); `MCL_FUTURE` makes later anonymous mappings populated when made, as
/// `MAP_POPULATE` does (`Process::lock_future`, until `munlockall`); `MCL_ONFAULT` leaves
/// pages to be touched. `EINVAL` for no flag, unknown ones, or `MCL_ONFAULT` alone.
pub fn mlockall(me: &Arc<Thread>, _: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    const MCL_CURRENT: u64 = 1;
    const MCL_FUTURE: u64 = 2;
    const MCL_ONFAULT: u64 = 4;
    let flags = a[0];
    if flags & !(MCL_CURRENT | MCL_FUTURE | MCL_ONFAULT) != 0
        || flags & (MCL_CURRENT | MCL_FUTURE) == 0
    {
        return Err(Errno::EINVAL);
    }
    let _mm = me.process.mm.lock();
    let vm = me.process.vm();
    if flags & MCL_FUTURE != 0 {
        me.process.lock_future.store(
            flags & MCL_ONFAULT == 0,
            core::sync::atomic::Ordering::Relaxed,
        );
    }
    if flags & MCL_CURRENT != 0 && flags & MCL_ONFAULT == 0 {
        vm.each_region(|r| lock_range(me, &vm, r.start, r.end))?;
    }
    Ok(0)
}

/// `munlockall()`: later mappings are no longer populated when made.
pub fn munlockall(me: &Arc<Thread>, _: &mut InterruptFrame, _: [u64; 6]) -> SysResult {
    me.process
        .lock_future
        .store(false, core::sync::atomic::Ordering::Relaxed);
    Ok(0)
}

/// `MEMBARRIER_CMD_GLOBAL`: a barrier on every thread of every process.
const MEMBARRIER_GLOBAL: u64 = 1 << 0;
/// `MEMBARRIER_CMD_GLOBAL_EXPEDITED`: the same, for processes that registered (all here).
const MEMBARRIER_GLOBAL_EXPEDITED: u64 = 1 << 1;
/// `MEMBARRIER_CMD_REGISTER_GLOBAL_EXPEDITED`.
const MEMBARRIER_REGISTER_GLOBAL_EXPEDITED: u64 = 1 << 2;
/// `MEMBARRIER_CMD_PRIVATE_EXPEDITED`: a barrier on every running thread of the caller's
/// process (registration first).
const MEMBARRIER_PRIVATE_EXPEDITED: u64 = 1 << 3;
/// `MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED`.
const MEMBARRIER_REGISTER_PRIVATE_EXPEDITED: u64 = 1 << 4;
/// `MEMBARRIER_CMD_PRIVATE_EXPEDITED_SYNC_CORE`: also a serializing instruction on each core.
const MEMBARRIER_PRIVATE_EXPEDITED_SYNC_CORE: u64 = 1 << 5;
/// `MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED_SYNC_CORE`.
const MEMBARRIER_REGISTER_PRIVATE_EXPEDITED_SYNC_CORE: u64 = 1 << 6;

/// `membarrier(cmd, flags, cpu_id)`. A barrier interrupts every other core running the kernel
/// (an IPI, `IpiKind::Ping`) and waits until each has taken it: taking an interrupt and
/// returning with `iretq` is a full barrier and serializes the core, so every thread running
/// anywhere has passed one (the global commands, and the private ones for the caller's
/// threads, which Reef does not tell apart), and the `SYNC_CORE` variant holds too. The
/// private commands need their registration first (`EPERM`), as on Linux;
/// `MEMBARRIER_CMD_QUERY` lists the commands; the `RSEQ` ones (no `rseq`) and other flags
/// answer `EINVAL`.
pub fn membarrier(me: &Arc<Thread>, _: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    const QUERY: u64 = 0;
    let supported = MEMBARRIER_GLOBAL
        | MEMBARRIER_GLOBAL_EXPEDITED
        | MEMBARRIER_REGISTER_GLOBAL_EXPEDITED
        | MEMBARRIER_PRIVATE_EXPEDITED
        | MEMBARRIER_REGISTER_PRIVATE_EXPEDITED
        | MEMBARRIER_PRIVATE_EXPEDITED_SYNC_CORE
        | MEMBARRIER_REGISTER_PRIVATE_EXPEDITED_SYNC_CORE;
    let (cmd, flags) = (a[0], a[1]);
    if flags != 0 {
        return Err(Errno::EINVAL);
    }
    let registered = &me.process.membarrier;
    match cmd {
        QUERY => Ok(supported),
        MEMBARRIER_REGISTER_GLOBAL_EXPEDITED
        | MEMBARRIER_REGISTER_PRIVATE_EXPEDITED
        | MEMBARRIER_REGISTER_PRIVATE_EXPEDITED_SYNC_CORE => {
            registered.fetch_or(cmd as u32, core::sync::atomic::Ordering::SeqCst);
            Ok(0)
        }
        MEMBARRIER_PRIVATE_EXPEDITED | MEMBARRIER_PRIVATE_EXPEDITED_SYNC_CORE => {
            // Each private command's registration is the next bit up.
            let needs = (cmd << 1) as u32;
            if registered.load(core::sync::atomic::Ordering::SeqCst) & needs == 0 {
                return Err(Errno::EPERM);
            }
            barrier_everywhere(me)
        }
        MEMBARRIER_GLOBAL | MEMBARRIER_GLOBAL_EXPEDITED => barrier_everywhere(me),
        _ => Err(Errno::EINVAL),
    }
}

/// Interrupts every other core running the kernel and waits until each has taken the
/// interrupt (see [`membarrier`]); `EINTR` if the caller is killed meanwhile.
fn barrier_everywhere(me: &Arc<Thread>) -> SysResult {
    core::sync::atomic::fence(core::sync::atomic::Ordering::SeqCst);
    let mut tickets = Vec::new();
    tickets
        .try_reserve(crate::kcb::MAX_CORES)
        .map_err(|_| Errno::ENOMEM)?;
    crate::ipi::broadcast(crate::ipi::IpiKind::Ping, &mut tickets);
    for t in &tickets {
        while !crate::ipi::acknowledged(t) {
            if me.dying() {
                return Err(Errno::EINTR);
            }
            crate::arch::cpu::pause();
        }
    }
    Ok(0)
}
