//! `execve`: loading a Linux ELF executable (or a `#!` script) into a fresh replicated address
//! space, with the dynamic loader a dynamically linked program names, and starting it with the
//! Linux initial stack.
//!
//! The `exec` crate validates the files and computes what to map and copy; this module reads
//! them from the file system and maps their pages ([`crate::filemap`]: lent by NR-FS or filled
//! into frames allocated before the mapping operations enter the log, as NR-vMem requires).

use crate::arch::idt::InterruptFrame;
use crate::arch::{paging, user};
use crate::filemap::FilePages;
use crate::fs::MappedFile;
use crate::proc::Process;
use crate::proc::Thread;
use crate::vm::{self, UserLayout, VSpace, PAGE_SIZE};
use abi::Errno;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::sync::atomic::Ordering;
use exec::{AuxInfo, ElfKind, ExecError, Executable, InitialStack};
use nrfs::Ino;
use vspace::{Prot, RegionKind};

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
    /// Its arguments and environment as `/proc/<pid>/` shows them.
    pub args: ExecArgs,
    /// The program file's owner, group and mode (a set-ID program changes the IDs).
    pub owner: creds::Owner,
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
        let file = MappedFile::open(me, &path)?;
        let data = prefix(&file)?;
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
        return load_elf(me, &path, (&file, &data), &argv, envp, layout_for(me));
    }
    Err(Errno::ELOOP)
}

/// The first [`PREFIX`] bytes of `file` (all of a smaller one).
fn prefix(file: &MappedFile) -> Result<Vec<u8>, Errno> {
    let mut data = Vec::new();
    let want = (file.size as usize).min(PREFIX);
    data.try_reserve_exact(want).map_err(|_| Errno::ENOMEM)?;
    data.resize(want, 0);
    let n = file.read_at(0, &mut data)?;
    data.truncate(n);
    Ok(data)
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
/// address space laid out as `layout`: maps its segments, and its dynamic loader's if it names
/// one (`PT_INTERP`), and builds the initial stack with `argv`, `envp`, `path` and the
/// auxiliary vector. The address space is torn down if a segment cannot be loaded.
fn load_elf(
    me: Option<&Process>,
    path: &[u8],
    (file, prefix): (&MappedFile, &[u8]),
    argv: &[Vec<u8>],
    envp: &[Vec<u8>],
    layout: UserLayout,
) -> Result<Image, Errno> {
    let exe =
        Executable::parse_prefix(prefix, file.size, layout.pie_base).map_err(|e| e.to_errno())?;
    let loader = match exe.interpreter() {
        Some(name) => Some(open_loader(me, name, layout)?),
        None => None,
    };
    let vm = VSpace::new(layout)?;
    let loaded = map_image(&vm, &exe, file).and_then(|()| match &loader {
        Some((ld, ld_file)) => map_image(&vm, ld, ld_file),
        None => Ok(()),
    });
    if let Err(e) = loaded {
        vm.teardown();
        return Err(e);
    }

    let mut random = [0u8; 16];
    crate::random::fill(&mut random);
    let mut aux = AuxInfo::new(&exe, random);
    aux.hwcap = crate::arch::cpu::cpuid(1, 0).3 as u64;
    aux.minsigstksz = Some(crate::proc::signal::FRAME_BYTES as u64);
    let mut entry = exe.entry();
    if let Some((ld, _)) = &loader {
        aux.base = ld.segments()[0].map_range().start;
        entry = ld.entry();
    }
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
        entry,
        rsp: stack.rsp,
        brk: exe.brk(),
        path: path.to_vec(),
        ino: file.nrfs_ino(),
        args: ExecArgs {
            cmdline: nul_joined(argv)?,
            environ: nul_joined(envp)?,
        },
        owner: file.owner,
    })
}

/// Opens and parses the dynamic loader a program names, placed just below the top of the
/// `mmap` area (where Linux's `mmap` would put it). `ELIBBAD` if it is not an ELF file or
/// wants a loader itself, as Linux answers.
fn open_loader(
    me: Option<&Process>,
    name: &[u8],
    layout: UserLayout,
) -> Result<(Executable, MappedFile), Errno> {
    let file = MappedFile::open(me, name)?;
    let head = prefix(&file)?;
    let parse = |base| Executable::parse_prefix(&head, file.size, base);
    let bad = |e: ExecError| match e {
        ExecError::OutOfMemory { .. } => Errno::ENOMEM,
        _ => Errno::ELIBBAD,
    };
    let span = parse(layout.pie_base).map_err(bad)?.span();
    let base = layout.mmap_ceiling.checked_sub(span).ok_or(Errno::ENOMEM)?;
    let ld = parse(base).map_err(bad)?;
    if ld.interpreter().is_some() || ld.kind() != ElfKind::Dyn {
        return Err(Errno::ELIBBAD);
    }
    Ok((ld, file))
}

/// Maps the segments of `exe`, whose bytes are `file`, into `vm`.
fn map_image(vm: &VSpace, exe: &Executable, file: &MappedFile) -> Result<(), Errno> {
    let mut pages = FilePages::new()?;
    for m in exe.mappings() {
        let prot = Prot {
            read: m.readable,
            write: m.writable,
            exec: m.executable,
        };
        vm.map_fixed(m.start, m.end - m.start, prot, RegionKind::Image, false)?;
        let made = pages.load_image(
            vm,
            file,
            (m.start, m.end),
            prot,
            |va| file_page(exe, va),
            |va| page_parts(exe, va),
        );
        // What was made gets mapped, so the teardown frees it.
        let mapped = pages.map(vm);
        made.and(mapped)?;
    }
    Ok(())
}

/// The strings of `list` as slices (an argument list may be large: allocated fallibly).
fn slices(list: &[Vec<u8>]) -> Result<Vec<&[u8]>, Errno> {
    let mut out = Vec::new();
    out.try_reserve_exact(list.len())
        .map_err(|_| Errno::ENOMEM)?;
    out.extend(list.iter().map(Vec::as_slice));
    Ok(out)
}

/// The arguments and environment a program was started with, as `/proc/<pid>/cmdline` and
/// `/proc/<pid>/environ` show them: each string followed by a NUL. Linux reads them from the
/// process's memory; Reef keeps the strings `execve` was given (a program that rewrites its
/// `argv` in place does not change them), shared by `fork` and replaced by `execve`.
#[derive(Default)]
pub struct ExecArgs {
    /// The arguments.
    pub cmdline: Vec<u8>,
    /// The environment.
    pub environ: Vec<u8>,
}

/// The strings, each followed by a NUL.
fn nul_joined(strings: &[Vec<u8>]) -> Result<Vec<u8>, Errno> {
    let mut out = Vec::new();
    out.try_reserve_exact(strings.iter().map(|a| a.len() + 1).sum())
        .map_err(|_| Errno::ENOMEM)?;
    for a in strings {
        out.extend_from_slice(a);
        out.push(0);
    }
    Ok(out)
}

/// The parts of the page at `va` that the file provides: (file offset, from, to).
fn page_parts(exe: &Executable, va: u64) -> impl Iterator<Item = (u64, u64, u64)> + Clone + '_ {
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

/// Hare §3.6's remote execution: while a Hare mount asks for it (`exec=rr`, `exec=random`;
/// [`crate::fs::hare::ExecPlacement`]), moves the calling thread, before it loads a program,
/// to the core the policy picks among those it may run on (online, allowed by its affinity,
/// owned by no other process's fleet), so that the program is loaded and runs there, as Linux's
/// `sched_exec` balances at the same point. Hare sends the exec to a scheduling server on that
/// core and leaves a proxy process behind to relay the exit status, signals and the old core's
/// descriptors; Reef's process table, signals and descriptors are the same on every core, so
/// the process itself moves and needs no proxy (docs/architecture.md).
pub fn place(me: &Arc<Thread>) {
    use crate::fs::hare::ExecPlacement;
    let pick = match crate::fs::hare::exec_placement() {
        ExecPlacement::Local => return,
        ExecPlacement::RoundRobin => me.process.exec_turn.fetch_add(1, Ordering::Relaxed),
        ExecPlacement::Random => {
            let mut bytes = [0u8; 8];
            crate::random::fill(&mut bytes);
            u64::from_le_bytes(bytes) as usize
        }
    };
    let cores = crate::proc::sched::placeable_cores(me);
    if let Some(&core) = cores.get(pick % cores.len().max(1)) {
        crate::proc::sched::move_current(core);
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
    *p.args.lock() = Arc::new(image.args);
    crate::proc::itimer::exec(p);
    crate::proc::signal::exec(p);
    // `mlockall(MCL_FUTURE)` does not outlive the program, as on Linux.
    p.lock_future.store(false, Ordering::Relaxed);
    me.signals.lock().alt_stack = None;
    let closed = p.files.lock().take_cloexec();
    crate::fs::descriptors_closed(p.pid, closed.into_iter().map(|e| e.file));
    *frame = initial_frame(image.entry, image.rsp);
    *me.fpu() = user::initial_fpu_state();
    me.fs_base.store(0, core::sync::atomic::Ordering::Relaxed);
    user::set_fs_base(0);
}
