//! Kernel images (Barrelfish/DC §4.5, "replacing a kernel"): the boot image and the variant
//! images `corectl update` loads, and the table of them that each KCB's `image` indexes.
//!
//! A variant image (`/boot/reef-trace`) is the kernel built with a cargo feature and linked by
//! xtask against the boot image's statics (`xtask/src/variant.rs`): its code reads and writes
//! the running kernel's state where the boot image's code does, so the two images run side by
//! side on one kernel state, each core in one of them. Only what holds an image's own code
//! addresses is its own: the IDT (`arch::idt`) and the `syscall` entry a core sets up; the user
//! copy routines of all images are known to every image's fault handler (`arch::user`). Shared
//! state therefore needs no root record to be handed over: the one structure both images must
//! agree on is the boot image itself, and a variant records the boot image's identity (FNV-1a
//! of its text and read-only data) and the KCB layout it was built with, which [`load`] checks
//! against the running kernel before it maps anything (`EINVAL` if either differs). The core's
//! entry in the variant (`smp::reef_image_entry`) checks the KCB's magic and layout again
//! before adopting it.
//!
//! An image is loaded once, into frames of the first core's node that is updated to it, and
//! mapped in the kernel's tables at the address it was linked for; it is never unloaded (its
//! functions may be referenced from shared state, and threads that ran on an updated core may
//! sleep inside its code). A second `update` to the same image reuses it.

use crate::arch::paging::{self, KERNEL_BASE};
use crate::fd::OpenFile;
use crate::kcb;
use crate::mm::{self, FrameSize};
use crate::proc::Process;
use abi::Errno;
use alloc::sync::Arc;
use alloc::vec::Vec;
use exec::kimage::{fnv1a, KernelImage, FNV_OFFSET, IMAGE_TICKLESS};

/// The most images loaded at once, the boot image included.
pub const MAX_IMAGES: usize = 4;

/// A loaded kernel image.
pub struct Image {
    /// Its name (`reef` for the boot image).
    name: [u8; 16],
    /// The address a core starting in it jumps to (with its KCB's address).
    pub entry: u64,
    /// The range its own part occupies.
    range: core::ops::Range<u64>,
    /// Its cores have no periodic tick (`reef-rt`): they cannot host parked KCBs, which need
    /// the tick to take turns.
    pub tickless: bool,
    /// The size of the file it was loaded from (0 for the boot image): with the name, range and
    /// entry, what tells a second load of the same image.
    file_len: u64,
}

impl Image {
    /// Its name.
    pub fn name(&self) -> &[u8] {
        let end = self.name.iter().position(|&c| c == 0).unwrap_or(16);
        &self.name[..end]
    }
}

/// The loaded images: 0 is the boot image ([`init`]); the others in the order loaded.
static IMAGES: [spin::Once<Image>; MAX_IMAGES] = [const { spin::Once::new() }; MAX_IMAGES];

/// The boot image's identity ([`boot_id`]), computed on first use.
static BOOT_ID: spin::Once<u64> = spin::Once::new();

extern "C" {
    static __text_start: u8;
    static __rodata_end: u8;
    static __data_end: u8;
}

/// Records the boot image as image 0: called by the boot core, in the boot image's code, so
/// that its own entry point and extent are what is recorded.
pub fn init() {
    let mut name = [0u8; 16];
    name[..4].copy_from_slice(b"reef");
    IMAGES[0].call_once(|| Image {
        name,
        entry: crate::smp::core_main as *const () as u64,
        range: KERNEL_BASE..&raw const __data_end as u64,
        tickless: false,
        file_len: 0,
    });
    let start = &raw const __text_start as u64;
    let end = &raw const __rodata_end as u64;
    BOOT_ID.call_once(|| fnv1a(FNV_OFFSET, paging::kernel_bytes(start, end)));
}

/// The boot image's identity: FNV-1a of its text and read-only data as loaded (what xtask
/// records in every variant made for it).
fn boot_id() -> u64 {
    *BOOT_ID.get().expect("image::init runs at boot")
}

/// Image `index` (a KCB's `image`).
pub fn get(index: usize) -> &'static Image {
    IMAGES
        .get(index)
        .and_then(spin::Once::get)
        .unwrap_or_else(|| IMAGES[0].get().expect("image::init runs at boot"))
}

/// The index of the image `path` names for `me`, loading it into frames of `node` if it is not
/// loaded yet: `reef` is the boot image, anything else a file (a variant image, `/boot/...`).
/// Errors, which leave everything as it was: those of opening and reading the file, `EISDIR`
/// (a directory), `EACCES` (not a regular file), `ENOEXEC` (not a Reef kernel image: the
/// reason is printed), `EINVAL` (made for another boot image or KCB layout, or overlapping the
/// boot image), `EIO` (the file could not be read), `EBUSY` (it overlaps another loaded image,
/// or [`MAX_IMAGES`] are loaded), `ENOMEM`. An image loaded already (the same name, range,
/// entry and file size) is not loaded again.
pub fn load(me: &Process, path: &[u8], node: usize) -> Result<usize, Errno> {
    if path == b"reef" {
        return Ok(0);
    }
    let file = open_file(me, path)?;
    let len = file.stat()?.size;
    let img = KernelImage::parse(&mut reader(&file), len).map_err(|e| {
        crate::kprintln!("reef: corectl: {}: {e}", path.escape_ascii());
        Errno::ENOEXEC
    })?;
    let info = img.info;
    if info.boot_id != boot_id() || info.kcb_layout != kcb::KCB_LAYOUT_VERSION {
        crate::kprintln!(
            "reef: corectl: {}: made for another kernel (boot image {:#x}, KCB layout {}; this \
             one: {:#x}, {})",
            path.escape_ascii(),
            info.boot_id,
            info.kcb_layout,
            boot_id(),
            kcb::KCB_LAYOUT_VERSION
        );
        return Err(Errno::EINVAL);
    }
    let range = info.base..info.base + info.span;
    let overlaps = |r: &core::ops::Range<u64>| r.start < range.end && range.start < r.end;
    if overlaps(&get(0).range) {
        return Err(Errno::EINVAL);
    }
    for (index, slot) in IMAGES.iter().enumerate().skip(1) {
        match slot.get() {
            Some(loaded)
                if loaded.name == info.name
                    && loaded.range == range
                    && loaded.entry == img.entry
                    && loaded.file_len == len =>
            {
                return Ok(index);
            }
            Some(loaded) if overlaps(&loaded.range) => return Err(Errno::EBUSY),
            Some(_) => {}
            None => {
                map(&img, &file, node)?;
                slot.call_once(|| Image {
                    name: info.name,
                    entry: img.entry,
                    range,
                    tickless: info.flags & IMAGE_TICKLESS != 0,
                    file_len: len,
                });
                crate::kprintln!(
                    "reef: image {} loaded at {:#x} (entry {:#x}) from {}",
                    info.name().escape_ascii(),
                    info.base,
                    img.entry,
                    path.escape_ascii()
                );
                return Ok(index);
            }
        }
    }
    Err(Errno::EBUSY)
}

/// The regular file at `path`, opened for reading with `me`'s permissions: `EISDIR` for a
/// directory, `EACCES` for anything else that is not a regular file.
fn open_file(me: &Process, path: &[u8]) -> Result<Arc<OpenFile>, Errno> {
    let f = crate::fs::open(me, crate::fs::path::AT_FDCWD, path, crate::fd::O_RDONLY, 0)?;
    match f.stat()?.mode & 0o170000 {
        0o100000 => Ok(f),
        0o040000 => Err(Errno::EISDIR),
        _ => Err(Errno::EACCES),
    }
}

/// Reads `buf.len()` bytes of `file` from an offset (NR-FS copies each read through a
/// buffer of its size, so a large one is read 64 KiB at a time); `Err` at the end of the file
/// or on an error.
fn reader(file: &OpenFile) -> impl FnMut(u64, &mut [u8]) -> Result<(), ()> + '_ {
    |at, buf| {
        let mut done = 0;
        while done < buf.len() {
            let chunk = (buf.len() - done).min(64 << 10);
            match file.pread(&mut buf[done..done + chunk], at + done as u64) {
                Ok(0) | Err(_) => return Err(()),
                Ok(n) => done += n,
            }
        }
        Ok(())
    }
}

/// Copies `img`'s segments from `file` into frames of `node` and maps them at their addresses
/// in the kernel's tables. On an error the frames taken so far are given back; page tables
/// made on the way stay (empty, they are the kernel's and serve the next load).
fn map(img: &KernelImage, file: &OpenFile, node: usize) -> Result<(), Errno> {
    let page = 4096u64;
    let mut frames: Vec<(u64, u64, (bool, bool))> = Vec::new();
    let mut read = reader(file);
    let mut bytes = [0u8; 4096];
    let fill = (|| {
        for s in &img.segments {
            let mut va = s.vaddr & !(page - 1);
            while va < s.vaddr + s.memsz {
                let f = mm::allocate_on(node, FrameSize::Base).map_err(|_| Errno::ENOMEM)?;
                frames.try_reserve(1).map_err(|_| Errno::ENOMEM)?;
                paging::zero_phys(f.base(), page);
                frames.push((va, f.base(), (s.writable, s.executable)));
                // The file's bytes that fall in this page.
                let lo = va.max(s.vaddr);
                let hi = (va + page).min(s.vaddr + (s.file.end - s.file.start));
                if lo < hi {
                    let chunk = &mut bytes[..(hi - lo) as usize];
                    read(s.file.start + (lo - s.vaddr), chunk).map_err(|()| Errno::EIO)?;
                    paging::write_phys(f.base() + (lo - va), chunk);
                }
                va += page;
            }
        }
        Ok(())
    })();
    let pml4 = crate::smp::kernel_pml4();
    let mut mapped = 0;
    let done = fill.and_then(|()| {
        let mut table = || {
            let t = mm::allocate_on(node, FrameSize::Base).ok()?.base();
            paging::zero_phys(t, page);
            Some(t)
        };
        frames.iter().try_for_each(|&(va, phys, perms)| {
            paging::map_kernel_page(pml4, va, phys, perms, &mut table)
                .map_err(|()| Errno::ENOMEM)?;
            mapped += 1;
            Ok(())
        })
    });
    if done.is_err() {
        // No core has touched these pages, so no TLB holds them.
        for (i, &(va, phys, _)) in frames.iter().enumerate() {
            if i < mapped {
                paging::unmap_kernel_page(pml4, va);
            }
            if let Some(f) = mm::Frame::new(phys, FrameSize::Base, node) {
                let _ = mm::release(f);
            }
        }
    }
    done
}
