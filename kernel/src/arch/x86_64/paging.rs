//! The kernel's own page tables.
//!
//! Layout of the kernel half of every address space:
//! - `PHYS_OFFSET + p` maps physical address `p` for all of physical memory (the direct map),
//!   with 1 GiB pages where the CPU supports them and 2 MiB pages otherwise; not executable.
//! - `KERNEL_BASE + p` maps the kernel image with 4 KiB pages: text read-only and executable,
//!   rodata read-only, data and bss writable, neither executable.
//!
//! Nothing is identity-mapped once the kernel tables are loaded. The boot page tables in
//! `boot.S` (identity and higher-half map of the first 1 GiB) stay in place because the AP
//! trampoline uses them to reach long mode.
//!
//! The tables are built by the boot core from a static pool inside the kernel image, before the
//! frame allocator exists. Memory types: everything is mapped write-back; device MMIO ranges are
//! made uncached by the firmware's MTRRs on real hardware, and QEMU ignores memory types.

use super::cpu;

/// Virtual address of physical address 0 in the direct map.
pub const PHYS_OFFSET: u64 = 0xffff_8000_0000_0000;
/// Virtual address at which the kernel image is linked (plus its physical address).
pub const KERNEL_BASE: u64 = 0xffff_ffff_8000_0000;

/// Present (P) bit of a page-table entry.
const PRESENT: u64 = 1;
/// Read/write (R/W) bit: writes are allowed.
const WRITABLE: u64 = 1 << 1;
/// Page size (PS) bit: the entry maps a 1 GiB or 2 MiB page instead of referencing a table.
const HUGE: u64 = 1 << 7;
/// Global (G) bit: the translation is kept across CR3 loads (with CR4.PGE).
const GLOBAL: u64 = 1 << 8;
/// Execute-disable (XD) bit: no instruction fetches (with IA32_EFER.NXE).
const NO_EXECUTE: u64 = 1 << 63;
/// Physical-address bits (51:12) of a page-table entry.
const ADDR_MASK: u64 = 0x000f_ffff_ffff_f000;

/// One GiB.
const GIB: u64 = 1 << 30;
/// Two MiB (the size of a large page).
const MIB2: u64 = 2 << 20;
/// Size of a 4 KiB page.
const PAGE: u64 = 4096;

/// Number of 4 KiB pages reserved in the kernel image for the boot-time page tables. With 2 MiB
/// pages each GiB of direct map needs one page, so this covers about 250 GiB.
const POOL_PAGES: usize = 256;

/// The pool's pages, each a page-aligned table of 512 entries.
#[repr(C, align(4096))]
struct Pool([[u64; 512]; POOL_PAGES]);

/// The pages the boot core builds the kernel page tables from (handed out by `Builder`).
static mut POOL: Pool = Pool([[0; 512]; POOL_PAGES]);

/// Why the kernel page tables could not be built.
#[derive(Debug)]
pub enum PagingError {
    /// The direct map needs more page-table pages than the static pool holds.
    PoolExhausted {
        /// Bytes of physical memory the direct map was to cover (0 when the pool ran out outside
        /// the direct map).
        max_phys: u64,
    },
}

impl core::fmt::Display for PagingError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            PagingError::PoolExhausted { max_phys } => write!(
                f,
                "page-table pool ({POOL_PAGES} pages) too small to map {} GiB of physical memory",
                max_phys / GIB
            ),
        }
    }
}

/// Hands out pool pages and links them into the tables being built.
struct Builder {
    /// Number of pool pages handed out so far.
    used: usize,
}

impl Builder {
    /// Returns (kernel-image virtual address, physical address) of a zeroed pool page.
    fn page(&mut self) -> Result<(*mut [u64; 512], u64), PagingError> {
        if self.used == POOL_PAGES {
            return Err(PagingError::PoolExhausted { max_phys: 0 });
        }
        // SAFETY: the pool is only touched by `build`, which runs once on the boot core; each
        // page is handed out once.
        let ptr = unsafe { &raw mut POOL.0[self.used] };
        self.used += 1;
        Ok((ptr, ptr as u64 - KERNEL_BASE))
    }

    /// Returns the table that `table[index]` points to, creating it if absent.
    fn child(
        &mut self,
        table: *mut [u64; 512],
        index: usize,
    ) -> Result<*mut [u64; 512], PagingError> {
        // SAFETY: `table` is a pool page (see `page`), accessed only by this builder.
        let entry = unsafe { (*table)[index] };
        if entry & PRESENT != 0 {
            return Ok(((entry & ADDR_MASK) + KERNEL_BASE) as *mut [u64; 512]);
        }
        let (ptr, phys) = self.page()?;
        // SAFETY: as above.
        unsafe { (*table)[index] = phys | PRESENT | WRITABLE };
        Ok(ptr)
    }
}

/// Index of the entry that translates `vaddr` in a table of `level` (0: page table, 3: PML4).
fn index(vaddr: u64, level: u32) -> usize {
    ((vaddr >> (12 + 9 * level)) & 0x1ff) as usize
}

extern "C" {
    static __text_start: u8;
    static __text_end: u8;
    static __rodata_end: u8;
    static __data_end: u8;
}

/// Builds the kernel page tables for physical memory up to `max_phys` and switches to them.
/// Returns the physical address of the new top-level table.
pub fn init(max_phys: u64) -> Result<u64, PagingError> {
    let huge_1g = cpu::cpuid(0x8000_0001, 0).3 & (1 << 26) != 0;
    let mut b = Builder { used: 0 };
    let (pml4, pml4_phys) = b.page()?;
    let direct = PRESENT | WRITABLE | GLOBAL | NO_EXECUTE | HUGE;
    let end = max_phys.div_ceil(GIB) * GIB;
    let exhausted = |_| PagingError::PoolExhausted { max_phys };
    let mut p = 0;
    while p < end {
        let v = PHYS_OFFSET + p;
        let pdpt = b.child(pml4, index(v, 3)).map_err(exhausted)?;
        if huge_1g {
            // SAFETY: pool page owned by the builder.
            unsafe { (*pdpt)[index(v, 2)] = p | direct };
        } else {
            let pd = b.child(pdpt, index(v, 2)).map_err(exhausted)?;
            for i in 0..512 {
                // SAFETY: pool page owned by the builder.
                unsafe { (*pd)[i] = (p + i as u64 * MIB2) | direct };
            }
        }
        p += GIB;
    }

    let (text_start, text_end, rodata_end, image_end) = (
        &raw const __text_start as u64,
        &raw const __text_end as u64,
        &raw const __rodata_end as u64,
        &raw const __data_end as u64,
    );
    let mut v = KERNEL_BASE + 0x10_0000;
    while v < image_end {
        let flags = if (text_start..text_end).contains(&v) {
            PRESENT | GLOBAL
        } else if v < rodata_end {
            PRESENT | GLOBAL | NO_EXECUTE
        } else {
            PRESENT | WRITABLE | GLOBAL | NO_EXECUTE
        };
        let pdpt = b.child(pml4, index(v, 3))?;
        let pd = b.child(pdpt, index(v, 2))?;
        let pt = b.child(pd, index(v, 1))?;
        // SAFETY: pool page owned by the builder.
        unsafe { (*pt)[index(v, 0)] = (v - KERNEL_BASE) | flags };
        v += PAGE;
    }
    // SAFETY: the new tables map the kernel image (code, stack in bss, data) at the same virtual
    // addresses as the boot tables, so execution continues; nothing identity-mapped is in use
    // any more (the multiboot information was copied before this call).
    unsafe { cpu::write_cr3(pml4_phys) };
    Ok(pml4_phys)
}

/// Converts a physical address to its direct-map virtual address.
#[inline]
pub fn phys_to_virt(phys: u64) -> u64 {
    phys + PHYS_OFFSET
}

/// Converts a direct-map virtual address back to its physical address.
#[inline]
pub fn virt_to_phys(virt: u64) -> u64 {
    if virt >= KERNEL_BASE {
        virt - KERNEL_BASE
    } else {
        virt - PHYS_OFFSET
    }
}

/// Reads entry `index` of the page table at physical address `table`.
///
/// # Panics
/// If `index` is not below 512.
pub fn read_entry(table: u64, index: usize) -> u64 {
    assert!(index < 512, "page-table index {index} out of range");
    // SAFETY: page tables are 4 KiB-aligned RAM frames, mapped by the direct map; an aligned
    // 8-byte read of one of their 512 entries is valid.
    unsafe { ((phys_to_virt(table) as *const u64).add(index)).read_volatile() }
}

/// Writes entry `index` of the page table at physical address `table`.
///
/// # Panics
/// If `index` is not below 512.
pub fn write_entry(table: u64, index: usize, entry: u64) {
    assert!(index < 512, "page-table index {index} out of range");
    // SAFETY: as for `read_entry`; the caller (an address space's `TableMemory`) owns the table.
    unsafe { ((phys_to_virt(table) as *mut u64).add(index)).write_volatile(entry) }
}

/// Fills `len` bytes of physical memory at `phys` with zeros.
///
/// # Panics
/// If the range is not inside the direct map's reach (a frame from the allocator always is).
pub fn zero_phys(phys: u64, len: u64) {
    let v = phys_to_virt(phys);
    assert!(
        v.checked_add(len).is_some() && v < KERNEL_BASE,
        "bad physical range"
    );
    // SAFETY: the caller owns the frames (freshly allocated), which the direct map covers.
    unsafe { core::ptr::write_bytes(v as *mut u8, 0, len as usize) }
}

/// Copies `data` to physical memory at `phys`.
pub fn write_phys(phys: u64, data: &[u8]) {
    let v = phys_to_virt(phys);
    // SAFETY: the caller owns the destination frames (allocated for a mapping it builds), which
    // the direct map covers, and `data` is a separate kernel buffer.
    unsafe { core::ptr::copy_nonoverlapping(data.as_ptr(), v as *mut u8, data.len()) }
}

/// Copies `buf.len()` bytes of physical memory at `phys` into `buf`: a file page that every
/// replica and mapping shares, which a program may store into at the same time (the copy then
/// sees some mix of old and new bytes, as Linux's `read` of a page being written does).
pub fn read_phys(phys: u64, buf: &mut [u8]) {
    let v = phys_to_virt(phys);
    // SAFETY: the frame is held (a share the caller keeps) and the direct map covers it; `buf`
    // is a separate kernel buffer. Concurrent stores from user mode only change byte values.
    unsafe { core::ptr::copy_nonoverlapping(v as *const u8, buf.as_mut_ptr(), buf.len()) }
}

/// Copies `len` bytes of physical memory from `src` to `dst` (frames of two address spaces).
pub fn copy_phys(dst: u64, src: u64, len: u64) {
    // SAFETY: both ranges are whole frames owned by address spaces of the caller (fork copies a
    // parent's frame into the child's fresh one); they never overlap.
    unsafe {
        core::ptr::copy_nonoverlapping(
            phys_to_virt(src) as *const u8,
            phys_to_virt(dst) as *mut u8,
            len as usize,
        )
    }
}

/// The bytes of a boot module (the initramfs) at physical `[start, start + len)`.
///
/// # Panics
/// If the range wraps.
pub fn phys_slice(start: u64, len: u64) -> &'static [u8] {
    assert!(start.checked_add(len).is_some(), "boot module range wraps");
    // SAFETY: boot modules lie in RAM the machine description keeps out of the frame allocator
    // (`Machine::discover` reserves them), mapped by the direct map, and nothing writes them.
    unsafe { core::slice::from_raw_parts(phys_to_virt(start) as *const u8, len as usize) }
}

/// Maps the 4 KiB page at `vaddr` to the frame at `phys` in the kernel's tables (`pml4`), global,
/// writable or executable as asked and never both: the part of a kernel image `update` loads
/// (Barrelfish/DC §4.5), which every core and address space sees (each address space's kernel
/// half points to the kernel's own lower-level tables). A missing table is taken from `table`
/// (a zeroed frame's physical address); `Err` if it gives none, or if `vaddr` is mapped
/// already or is not in the kernel image's 2 GiB above [`KERNEL_BASE`].
pub fn map_kernel_page(
    pml4: u64,
    vaddr: u64,
    phys: u64,
    (writable, executable): (bool, bool),
    table: &mut dyn FnMut() -> Option<u64>,
) -> Result<(), ()> {
    if vaddr < KERNEL_BASE
        || !vaddr.is_multiple_of(PAGE)
        || !phys.is_multiple_of(PAGE)
        || (writable && executable)
    {
        return Err(());
    }
    let mut t = pml4;
    for level in (1..=3).rev() {
        let i = index(vaddr, level);
        let entry = read_entry(t, i);
        if entry & HUGE != 0 {
            return Err(());
        }
        t = if entry & PRESENT != 0 {
            entry & ADDR_MASK
        } else {
            let new = table().ok_or(())?;
            write_entry(t, i, new | PRESENT | WRITABLE);
            new
        };
    }
    let i = index(vaddr, 0);
    if read_entry(t, i) & PRESENT != 0 {
        return Err(());
    }
    let mut flags = PRESENT | GLOBAL;
    if writable {
        flags |= WRITABLE;
    }
    if !executable {
        flags |= NO_EXECUTE;
    }
    write_entry(t, i, phys | flags);
    Ok(())
}

/// Unmaps the page at `vaddr` that [`map_kernel_page`] mapped (the page tables stay). No TLB is
/// flushed: for a page no core has accessed since it was mapped.
pub fn unmap_kernel_page(pml4: u64, vaddr: u64) {
    let mut t = pml4;
    for level in (1..=3).rev() {
        let entry = read_entry(t, index(vaddr, level));
        if entry & PRESENT == 0 || entry & HUGE != 0 {
            return;
        }
        t = entry & ADDR_MASK;
    }
    write_entry(t, index(vaddr, 0), 0);
}

/// The bytes of the running kernel image at `[start, end)` (addresses of its text and
/// read-only data, which nothing writes).
///
/// # Panics
/// If the range is not inside the kernel image's mapping.
pub fn kernel_bytes(start: u64, end: u64) -> &'static [u8] {
    assert!(
        KERNEL_BASE <= start && start <= end,
        "not kernel image addresses"
    );
    // SAFETY: the range lies in the kernel image's text and read-only data, mapped for the
    // kernel's lifetime and never written (their pages are mapped read-only).
    unsafe { core::slice::from_raw_parts(start as *const u8, (end - start) as usize) }
}
