//! `execve`: loading a static Linux ELF executable (or a `#!` script) into a fresh replicated
//! address space and starting it with the Linux initial stack.
//!
//! The `exec` crate validates the file and computes what to map and copy; this module reads the
//! file from the file system, allocates frames (before the mapping operations enter the log, as
//! NR-vMem requires), fills them through the direct map, and maps them.

use crate::arch::idt::InterruptFrame;
use crate::arch::{paging, user};
use crate::fs::ExecFile;
use crate::mm::{self, FrameSize};
use crate::proc::Process;
use crate::proc::Thread;
use crate::vm::{self, PageMap, UserLayout, VSpace, PAGE_SIZE};
use abi::Errno;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::sync::atomic::Ordering;
use exec::{AuxInfo, Executable, InitialStack};
use nrfs::Ino;
use vspace::{Mapping, PageSize, Prot, RegionKind};

/// Bytes read before parsing: the ELF header, program headers and `#!` line must fit.
const PREFIX: usize = 16 * 1024;
/// Most `#!` interpreter levels followed.
const MAX_SCRIPT_DEPTH: usize = 4;

/// A program ready to run: its address space and the registers to start it with.
pub struct Image {
    /// The new address space.
    pub vm: Arc<VSpace>,
    /// Entry point.
    pub entry: u64,
    /// Initial stack pointer.
    pub rsp: u64,
    /// Initial program break.
    pub brk: u64,
    /// The path of the program that runs (after `#!` resolution).
    pub path: Vec<u8>,
    /// Its NR-FS inode (`None` for a program in Hare).
    pub ino: Option<Ino>,
    /// The arguments, each followed by a NUL (`/proc/<pid>/cmdline`).
    pub cmdline: Vec<u8>,
}

/// Loads `path` (relative to `me`'s working directory, or to the root for the first process)
/// with `argv` and `envp`, following `#!` interpreters.
pub fn load(
    me: Option<&Process>,
    path: &[u8],
    argv: Vec<Vec<u8>>,
    envp: &[Vec<u8>],
) -> Result<Image, Errno> {
    let mut path = path.to_vec();
    let mut argv = argv;
    for _ in 0..=MAX_SCRIPT_DEPTH {
        let file = ExecFile::open(me, &path)?;
        let mut data = Vec::new();
        let want = (file.size as usize).min(PREFIX);
        data.try_reserve_exact(want).map_err(|_| Errno::ENOMEM)?;
        data.resize(want, 0);
        let n = file.read_at(0, &mut data)?;
        data.truncate(n);
        if data.starts_with(b"#!") {
            let line_end = data.iter().position(|&b| b == b'\n').unwrap_or(data.len());
            let line = &data[2..line_end.min(256)];
            let mut words = line
                .split(|&b| b == b' ' || b == b'\t')
                .filter(|w| !w.is_empty());
            let interp = words.next().ok_or(Errno::ENOEXEC)?.to_vec();
            let rest: Vec<u8> = words.collect::<Vec<_>>().join(&b' ');
            let mut new_argv = Vec::new();
            new_argv
                .try_reserve_exact(argv.len() + 2)
                .map_err(|_| Errno::ENOMEM)?;
            new_argv.push(interp.clone());
            if !rest.is_empty() {
                new_argv.push(rest);
            }
            new_argv.push(path.clone());
            new_argv.extend(argv.into_iter().skip(1));
            argv = new_argv;
            path = interp;
            continue;
        }
        return load_elf(&path, &file, &data, &argv, envp, layout_for(me));
    }
    Err(Errno::ELOOP)
}

/// The layout of `me`'s next image: random unless the kernel was booted with `norandmaps` or
/// the process asked for none (`personality(ADDR_NO_RANDOMIZE)`).
fn layout_for(me: Option<&Process>) -> UserLayout {
    let asked = me.is_some_and(|p| {
        p.personality.load(Ordering::Relaxed) & crate::proc::ADDR_NO_RANDOMIZE != 0
    });
    if asked || crate::cmdline::get().norandmaps {
        UserLayout::FIXED
    } else {
        UserLayout::random()
    }
}

/// Loads an ELF executable (`prefix`: the file's first bytes, with its headers) into a new
/// address space laid out as `layout`: maps its segments and builds the initial stack with
/// `argv`, `envp`, `path` and the auxiliary vector. The address space is torn down if a segment
/// cannot be loaded.
fn load_elf(
    path: &[u8],
    file: &ExecFile,
    prefix: &[u8],
    argv: &[Vec<u8>],
    envp: &[Vec<u8>],
    layout: UserLayout,
) -> Result<Image, Errno> {
    let exe =
        Executable::parse_prefix(prefix, file.size, layout.pie_base).map_err(|e| e.to_errno())?;
    let vm = VSpace::new(layout)?;
    let mut image = ImagePages::new()?;
    for m in exe.mappings() {
        let prot = Prot {
            read: m.readable,
            write: m.writable,
            exec: m.executable,
        };
        vm.map_fixed(m.start, m.end - m.start, prot, RegionKind::Image, false)?;
        if let Err(e) = image
            .load(&vm, &exe, file, m.start, m.end, prot)
            .and_then(|()| image.map(&vm))
        {
            // What was made gets mapped, so the teardown frees it.
            let _ = image.map(&vm);
            vm.teardown();
            return Err(e);
        }
    }

    let mut random = [0u8; 16];
    crate::random::fill(&mut random);
    let mut aux = AuxInfo::new(&exe, random);
    aux.hwcap = crate::arch::cpu::cpuid(1, 0).3 as u64;
    let argv_refs = slices(argv)?;
    let envp_refs = slices(envp)?;
    let top = layout.stack_top;
    let stack =
        InitialStack::build(top, &argv_refs, &envp_refs, path, &aux).map_err(|e| e.to_errno())?;
    let stack_bottom = top - vm::STACK_SIZE;
    vm.map_fixed(
        stack_bottom,
        vm::STACK_SIZE,
        Prot::RW,
        RegionKind::Stack,
        false,
    )?;
    let first_page = stack.rsp & !(PAGE_SIZE - 1);
    vm.populate(first_page, top, Prot::RW, || true)?;
    let mut va = first_page;
    while va < top {
        let t = vm.resolve(va).0.ok_or(Errno::ENOMEM)?;
        let from = va.max(stack.rsp);
        let to = (va + PAGE_SIZE).min(top);
        let off = (from - stack.rsp) as usize;
        paging::write_phys(
            t.frame + (from - va),
            &stack.bytes[off..off + (to - from) as usize],
        );
        va += PAGE_SIZE;
    }
    Ok(Image {
        vm,
        entry: exe.entry(),
        rsp: stack.rsp,
        brk: exe.brk(),
        path: path.to_vec(),
        ino: file.nrfs_ino(),
        cmdline: cmdline(argv)?,
    })
}

/// The strings of `list` as slices (an argument list may be large: allocated fallibly).
fn slices(list: &[Vec<u8>]) -> Result<Vec<&[u8]>, Errno> {
    let mut out = Vec::new();
    out.try_reserve_exact(list.len())
        .map_err(|_| Errno::ENOMEM)?;
    out.extend(list.iter().map(Vec::as_slice));
    Ok(out)
}

/// The arguments, each followed by a NUL.
fn cmdline(argv: &[Vec<u8>]) -> Result<Vec<u8>, Errno> {
    let mut out = Vec::new();
    out.try_reserve_exact(argv.iter().map(|a| a.len() + 1).sum())
        .map_err(|_| Errno::ENOMEM)?;
    for a in argv {
        out.extend_from_slice(a);
        out.push(0);
    }
    Ok(out)
}

/// Most pages lent or filled before they are mapped.
const BATCH: usize = 256;

/// The pages of one mapping of a program image on their way into its address space.
///
/// A page that one segment fills from a page-aligned file offset is the file's own page,
/// lent by NR-FS (this node's replica's copy) and mapped copy-on-write, as Linux maps its
/// page cache: nothing is copied or zeroed, and every process running the program maps the
/// same frames, so QEMU's translated code for them is reused from one `execve` to the next.
/// Any other page (shared with a neighbouring segment, partly `.bss`, or a hole of the file)
/// is a private frame filled from the file and zeroed where the file gives nothing.
struct ImagePages {
    /// Private frames.
    private: Vec<PageMap>,
    /// Lent file pages, each with the share NR-FS gave it for this address space.
    lent: Vec<Mapping>,
    /// A page of scratch space for filling private frames from the file.
    buf: Vec<u8>,
}

impl ImagePages {
    /// Nothing made yet (one per `execve`, for all its mappings).
    fn new() -> Result<Self, Errno> {
        Ok(ImagePages {
            private: Vec::new(),
            lent: Vec::new(),
            buf: crate::mm::zeroed_buffer(PAGE_SIZE as usize)?,
        })
    }

    /// Makes the pages of `[start, end)` and maps them into `vm` about [`BATCH`] at a time; on
    /// error the pages made since the last batch are left for [`ImagePages::map`] (so that the
    /// teardown frees them).
    fn load(
        &mut self,
        vm: &VSpace,
        exe: &Executable,
        file: &ExecFile,
        start: u64,
        end: u64,
        prot: Prot,
    ) -> Result<(), Errno> {
        let mut va = start;
        while va < end {
            if self.private.len() + self.lent.len() >= BATCH {
                self.map(vm)?;
            }
            if let Some(first) = file_page(exe, va) {
                // A run of consecutive file pages, lent in one read of the replica.
                let mut n = 1;
                while n < BATCH
                    && va + n as u64 * PAGE_SIZE < end
                    && file_page(exe, va + n as u64 * PAGE_SIZE) == Some(first + n as u64)
                {
                    n += 1;
                }
                self.lent.try_reserve(n).map_err(|_| Errno::ENOMEM)?;
                let frames = file.lend_pages(first, n)?;
                for (i, frame) in frames.into_iter().enumerate() {
                    let page = va + i as u64 * PAGE_SIZE;
                    match frame {
                        Some(phys) => self.lent.push(Mapping {
                            vaddr: page,
                            phys,
                            size: PageSize::Base4K,
                            prot: Prot {
                                write: false,
                                ..prot
                            },
                            cow: true,
                        }),
                        None => self.fill(exe, file, page, prot)?,
                    }
                }
                va += n as u64 * PAGE_SIZE;
            } else {
                self.fill(exe, file, va, prot)?;
                va += PAGE_SIZE;
            }
        }
        Ok(())
    }

    /// Adds a private frame for the page at `va`: what the file provides, zero elsewhere (a
    /// page the file fills is not zeroed first).
    fn fill(
        &mut self,
        exe: &Executable,
        file: &ExecFile,
        va: u64,
        prot: Prot,
    ) -> Result<(), Errno> {
        self.private.try_reserve(1).map_err(|_| Errno::ENOMEM)?;
        let frame = mm::allocate_user(FrameSize::Base)
            .map_err(|_| Errno::ENOMEM)?
            .base();
        // Recorded at once, so that an error below still frees it.
        self.private.push((va, frame, PageSize::Base4K, prot));
        if !page_parts(exe, va).any(|(_, from, to)| from == va && to == va + PAGE_SIZE) {
            paging::zero_phys(frame, PAGE_SIZE);
        }
        for (off, from, to) in page_parts(exe, va) {
            let chunk = &mut self.buf[..(to - from) as usize];
            file_read(file, off, chunk)?;
            paging::write_phys(frame + (from - va), chunk);
        }
        Ok(())
    }

    /// Maps the pages made so far into `vm`; `ENOMEM` if some could not be (no memory for a
    /// page table: the page would read as zeros instead of the program's bytes).
    fn map(&mut self, vm: &VSpace) -> Result<(), Errno> {
        let (private, lent) = (self.private.len(), self.lent.len());
        let mapped = vm.map_frames(core::mem::take(&mut self.private))
            + vm.map_copies(core::mem::take(&mut self.lent));
        if mapped == private + lent {
            Ok(())
        } else {
            Err(Errno::ENOMEM)
        }
    }
}

/// The parts of the page at `va` that the file provides: (file offset, from, to).
fn page_parts(exe: &Executable, va: u64) -> impl Iterator<Item = (u64, u64, u64)> + '_ {
    exe.segments().iter().filter_map(move |s| {
        let (from, to) = (s.vaddr.max(va), (s.vaddr + s.filesz).min(va + PAGE_SIZE));
        (from < to).then(|| (s.file_range().start as u64 + (from - s.vaddr), from, to))
    })
}

/// The index of the file page that is, byte for byte, the page at `va`: one segment provides
/// the whole page from a page-aligned file offset.
fn file_page(exe: &Executable, va: u64) -> Option<u64> {
    let mut parts = page_parts(exe, va);
    match (parts.next(), parts.next()) {
        (Some((off, from, to)), None)
            if from == va && to == va + PAGE_SIZE && off.is_multiple_of(PAGE_SIZE) =>
        {
            Some(off / PAGE_SIZE)
        }
        _ => None,
    }
}

/// Reads exactly `buf.len()` bytes of `file` at `off`.
fn file_read(file: &ExecFile, off: u64, buf: &mut [u8]) -> Result<(), Errno> {
    match file.read_at(off, buf)? {
        n if n == buf.len() => Ok(()),
        _ => Err(Errno::EIO),
    }
}

/// The user registers a new program starts with.
pub fn initial_frame(entry: u64, rsp: u64) -> InterruptFrame {
    InterruptFrame {
        r15: 0,
        r14: 0,
        r13: 0,
        r12: 0,
        r11: 0,
        r10: 0,
        r9: 0,
        r8: 0,
        rbp: 0,
        rdi: 0,
        rsi: 0,
        rdx: 0,
        rcx: 0,
        rbx: 0,
        rax: 0,
        vector: 0,
        error_code: 0,
        rip: entry,
        cs: user::USER_CS,
        rflags: 0x202,
        rsp,
        ss: user::USER_SS,
    }
}

/// Replaces the calling thread's program with `image` (the point of no return of `execve`);
/// `exe` is the program's absolute path.
pub fn commit(me: &Arc<Thread>, frame: &mut InterruptFrame, image: Image, exe: &[u8]) {
    let p = &me.process;
    let k = crate::kcb::current();
    image.vm.activate(k);
    let old = p.replace_vm(image.vm);
    // A vfork child gives its parent's address space back instead of tearing it down.
    if !p.end_vfork() {
        old.teardown();
    }
    drop(old);
    *p.mm.lock() = (image.brk, image.brk);
    *p.exe.lock() = alloc::string::String::from_utf8_lossy(exe).into_owned();
    *p.cmdline.lock() = image.cmdline;
    p.signals.lock().exec();
    me.signals.lock().alt_stack = None;
    let closed = p.files.lock().take_cloexec();
    crate::fs::hare::release(closed.into_iter().map(|e| e.file));
    *frame = initial_frame(image.entry, image.rsp);
    *me.fpu() = user::initial_fpu_state();
    me.fs_base.store(0, core::sync::atomic::Ordering::Relaxed);
    user::set_fs_base(0);
}
