//! One replica of a process address space for NR-vMem: the region database and the x86-64
//! page tables.
//!
//! NrOS (Bhardwaj et al., OSDI '21, §4.2) keeps each process's mapping database and its hardware
//! page tables in one *sequential* structure and replicates it once per NUMA node with node
//! replication; `MapFrame`, `Unmap` and `Adjust` are updates, `Resolve` a read. This crate is
//! that structure: [`AddressSpace`] holds the regions (like Linux VMAs: `mmap`, `munmap`,
//! `mprotect`, `brk`) and builds the page tables of its replica from table frames that the
//! kernel supplies through [`TableMemory`] (frames of the replica's node). The kernel wraps it in
//! `nr`; this crate has no `unsafe` code and is tested on the host.
//!
//! # Determinism
//!
//! Every replica runs every update, so every result must depend only on the sequence of
//! operations, never on where a replica's tables live: [`AddressSpace::find_free`] picks
//! addresses deterministically, results never mention table addresses, and a failed operation
//! changes nothing (the tables it needs are allocated before the first write). Running out of
//! table memory on one replica but not another would make replicas diverge, so the kernel's
//! [`TableMemory`] must give every replica the same outcome for the same request (Reef's takes
//! table frames through `nr::dalloc`).
//!
//! # Hardware interplay
//!
//! * Entries use the layout in [`PRESENT`], [`WRITABLE`], [`USER`], [`HUGE`], [`NX`] and
//!   [`ADDR_MASK`]. NX needs `EFER.NXE`. Intermediate entries are present, writable and user, so
//!   leaves alone decide access. `PROT_NONE` pages are not present but keep their frame, marked
//!   with the software bit [`PROT_NONE`].
//! * The walker sets [`ACCESSED`] and [`DIRTY`] in a replica's entries; they are ignored when
//!   comparing entries and kept by `protect`.
//! * New paths are built bottom-up and linked last, and tables are unlinked before
//!   [`TableMemory::free_table`]. Other cores may still cache a freed table until the TLB
//!   shootdown that follows `unmap`, so the kernel must not reuse freed table frames before it.
//! * The kernel half of the PML4 (entries 256..512) is written once by [`AddressSpace::new`] and
//!   never touched again; the kernel should preallocate its upper-level tables so those entries
//!   never change.
//!
//! # Using it from the kernel
//!
//! * `mmap`: [`find_free`](AddressSpace::find_free) and [`map_region`](AddressSpace::map_region)
//!   run inside the same NR update; pages are mapped eagerly or on fault with
//!   [`map_frame`](AddressSpace::map_frame), with frames allocated *before* the update enters the
//!   log (NrOS §4.1) so every replica maps the same frame.
//! * `munmap`/`mprotect`: after [`unmap`](AddressSpace::unmap) or
//!   [`protect`](AddressSpace::protect) returns on the local replica, shoot down the returned
//!   ranges, then free the [`Unmapped`] frames.
//! * Page faults: [`resolve`](AddressSpace::resolve) (a read, which advances the replica) tells a
//!   fault caused by a lagging replica (mapping found, access allowed) from a bad access;
//!   [`walk`](AddressSpace::walk) and [`decode`] describe the entries for a report.
//! * `fork` (copy-on-write): copy [`regions`](AddressSpace::regions) into the child, then in
//!   bounded steps [`share_for_fork`](AddressSpace::share_for_fork) on the parent (private pages
//!   become read-only and marked [`COW`]; shoot down the entries it reports changed) and
//!   [`map_copy`](AddressSpace::map_copy) each listed page into the child. A write fault on a
//!   page whose [`Translation`] says `cow` is resolved with
//!   [`break_cow`](AddressSpace::break_cow): a private copy, or the frame itself once no one
//!   else shares it (the kernel keeps the share counts). `map_copy` also maps a shared zero page
//!   copy-on-write for read faults on untouched memory.
//! * Linux differences the syscall layer handles: `mprotect` with length 0 succeeds in Linux
//!   but is `BadAddress` here; `mmap` beyond the user half is `ENOMEM` in Linux but `BadAddress`
//!   (`EINVAL`) here; Linux never hands out the last user page (the `sysret` erratum), so pass a
//!   `ceiling` of `USER_END - PAGE_SIZE` to `find_free` and refuse `MAP_FIXED` there.
//!
//! # Example
//!
//! ```
//! use std::collections::HashMap;
//! use vspace::{AddressSpace, PageSize, Prot, RegionKind, TableMemory};
//!
//! /// Page tables in a map, at made-up physical addresses.
//! struct Tables { tables: HashMap<u64, [u64; 512]>, next: u64 }
//! impl TableMemory for Tables {
//!     fn allocate_table(&mut self) -> Option<u64> {
//!         self.next += 0x1000;
//!         self.tables.insert(self.next, [0; 512]);
//!         Some(self.next)
//!     }
//!     fn free_table(&mut self, phys: u64) { self.tables.remove(&phys); }
//!     fn read(&self, table: u64, i: usize) -> u64 { self.tables[&table][i] }
//!     fn write(&mut self, table: u64, i: usize, e: u64) { self.tables.get_mut(&table).unwrap()[i] = e; }
//! }
//!
//! let mem = Tables { tables: HashMap::new(), next: 0 };
//! let mut space = AddressSpace::new(mem, &[0; 256]).unwrap();
//! // mmap(NULL, 8 KiB, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS)
//! let va = space.find_free(0x2000, 0, 0x1_0000, 0x7000_0000_0000).unwrap();
//! space.map_region(va, 0x2000, Prot::RW, RegionKind::Anonymous { shared: false }, false).unwrap();
//! space.map_frame(va, 0x20_0000, PageSize::Base4K, Prot::RW).unwrap();
//! assert_eq!(space.resolve(va + 0x10).unwrap().phys, 0x20_0010);
//! // munmap: the frame comes back for freeing after the TLB shootdown.
//! let removed = space.unmap(va, 0x2000).unwrap();
//! assert_eq!(removed[0].phys, 0x20_0000);
//! assert_eq!(space.table_count(), 1);
//! ```
//!
//! # Dependencies
//!
//! Only `abi` (Linux errno values) and `alloc`'s `BTreeMap` for the regions: the mapping
//! database is a B-tree as in NrOS, and a crate for interval trees would add nothing needed at
//! the sizes of a process's region list.

#![no_std]
#![forbid(unsafe_code)]
#![warn(missing_docs)]

extern crate alloc;

mod entry;
mod flush;
mod space;
mod types;

pub use entry::{
    decode, EntryInfo, ACCESSED, ADDR_MASK, COW, DIRTY, HUGE, LARGE_ADDR_MASK, NX, PRESENT,
    PROT_NONE, TABLE_FLAGS, USER, WRITABLE,
};
pub use flush::{FlushSet, FLUSH_PAGES};
pub use space::{AddressSpace, Ranges, MAX_RANGES, MAX_REGIONS};
pub use types::{
    MapError, Mapping, PageSize, Prot, Region, RegionKind, Translation, Unmapped, Walk,
    LARGE_PAGE_SIZE, PAGE_SIZE, USER_END,
};

/// Where page-table pages live. The kernel implements it over its direct map of physical memory
/// (allocating from the replica's NUMA node); tests implement it over a map.
pub trait TableMemory {
    /// A zeroed 4 KiB frame for a page table: its physical address (4 KiB-aligned, below
    /// 2^52), or `None` if there is no memory.
    fn allocate_table(&mut self) -> Option<u64>;
    /// Returns a table frame that the address space no longer uses. It is all zero, but other
    /// cores may still cache it until the next TLB shootdown.
    fn free_table(&mut self, phys: u64);
    /// Entry `index` (0..512) of the table at `table`.
    fn read(&self, table: u64, index: usize) -> u64;
    /// Sets entry `index` (0..512) of the table at `table` to `entry`.
    fn write(&mut self, table: u64, index: usize, entry: u64);
}
