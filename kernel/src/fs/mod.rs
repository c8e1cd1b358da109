//! The root file system: NR-FS (NrOS §4.3), one CNR replica per NUMA node, filled from the
//! initramfs at boot, with devices ([`dev`]), pipes ([`pipe`]) and `/proc` ([`procfs`]) beside
//! it.
//!
//! The file-system logic and its CNR operations are the host-tested `nrfs` crate; this module
//! creates one replica per node, gives every core a client handle registered with its node's
//! replica (registered lazily, kept per core, used with interrupts off like every NR call in
//! the kernel), unpacks the cpio archive the loader passed as a boot module, and opens files
//! for the system calls ([`open`]).

pub mod dev;
pub mod epoll;
pub mod eventfd;
pub mod fifo;
pub mod hare;
pub mod lock;
pub mod path;
pub mod perm;
pub mod pipe;
pub mod procfs;
pub mod signalfd;
pub mod unix;

use crate::arch::paging::virt_to_phys;
use crate::fd::{Node, OpenFile, O_ACCMODE, O_PATH, O_RDONLY};
use crate::kcb;
use crate::proc::Process;
use crate::sync::IrqMutex;
use abi::Errno;
use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::fmt::Write;
use core::sync::atomic::{AtomicU64, Ordering};
use nrfs::{Attrs, CreateFlags, FsClient, FsReplica, Ino, Kind, NrFs, Timespec, ROOT_INO};
use path::{Last, Place};
use vspace::PageSize;

/// `open` flags beyond the access mode and status flags of [`crate::fd`].
pub mod flags {
    /// Create the file if it does not exist.
    pub const O_CREAT: u32 = 0o100;
    /// With `O_CREAT`: fail if it exists.
    pub const O_EXCL: u32 = 0o200;
    /// Do not make a terminal the controlling terminal (accepted; nothing to do).
    pub const O_NOCTTY: u32 = 0o400;
    /// Truncate a regular file opened for writing.
    pub const O_TRUNC: u32 = 0o1000;
    /// Direct I/O (accepted, no effect).
    pub const O_DIRECT: u32 = 0o40000;
    /// Fail unless a directory.
    pub const O_DIRECTORY: u32 = 0o200000;
    /// Do not follow a symlink in the last component.
    pub const O_NOFOLLOW: u32 = 0o400000;
    /// Do not update access times (accepted).
    pub const O_NOATIME: u32 = 0o1000000;
    /// Close on `execve`.
    pub const O_CLOEXEC: u32 = 0o2000000;
    /// An unnamed temporary file in the directory the path names (includes `O_DIRECTORY`).
    pub const O_TMPFILE: u32 = 0o20200000;
}

/// Number of CNR logs (operations on different inodes use different logs).
const LOGS: usize = 8;
/// Entries per log.
const LOG_ENTRIES: usize = 512;

/// NR-FS and everything the kernel keeps to reach it.
struct Root {
    /// The file system: its logs and the means to make replicas and clients.
    fs: NrFs,
    /// The replicas, one per NUMA node, indexed by node.
    replicas: Vec<Arc<FsReplica>>,
    /// `clients[core * nodes + node]`: that core's handle on `node`'s replica (a core works on
    /// its own node's replica and may bring the others up to date).
    clients: Vec<IrqMutex<Option<FsClient>>>,
}

/// The root file system, set up once by [`init`].
static ROOT: spin::Once<Root> = spin::Once::new();

/// What unpacking the initramfs found.
#[derive(Default, Debug)]
pub struct Unpacked {
    /// Regular files.
    pub files: usize,
    /// Directories.
    pub dirs: usize,
    /// Symbolic links.
    pub links: usize,
    /// Bytes of file data.
    pub bytes: u64,
}

/// Creates NR-FS with one replica per node (each made on the calling core; see the note in
/// docs/architecture.md about replica placement).
///
/// File pages are whole frames (`mm::heap`), and NR-FS lends them to `execve` and `mmap` by
/// their frame's share count: lending a page adds a share for the address space that maps it,
/// NR-FS gives the file a copy instead of writing a page that is shared, and the heap frees a
/// page NR-FS drops only when no address space maps it any more. A page a `MAP_SHARED`
/// mapping maps is one user frame all replicas share ([`MappedFile::share_pages`]), which
/// NR-FS reads and writes through the direct map and gives back like a mapping
/// (`vm::free_frame`: the last holder frees it).
pub fn init(nodes: usize, cores: usize) -> Result<(), Errno> {
    use crate::arch::paging::{read_phys, write_phys};
    nrfs::set_page_sharing(nrfs::PageSharing {
        share: |addr| crate::mm::share(virt_to_phys(addr as u64)),
        is_shared: |addr| crate::mm::is_shared(virt_to_phys(addr as u64)),
        release: |addr| crate::vm::free_frame(virt_to_phys(addr as u64), PageSize::Base4K),
        read: |addr, at, buf| read_phys(virt_to_phys(addr as u64) + at as u64, buf),
        write: |addr, at, data| write_phys(virt_to_phys(addr as u64) + at as u64, data),
    });

    let logs = nr::cnr::Logs::with_capacity(LOGS, LOG_ENTRIES)
        .with_lag_callback(crate::replicated::lagging_replica);
    let fs = NrFs::with_logs(logs, nodes, Attrs::new(0o755, 0, 0), now())?;
    let mut replicas = Vec::with_capacity(nodes);
    for _ in 0..nodes {
        replicas.push(fs.new_replica(cores.min(LOG_ENTRIES))?);
    }
    ROOT.call_once(|| Root {
        fs,
        replicas,
        clients: (0..kcb::MAX_CORES * nodes)
            .map(|_| IrqMutex::new(None))
            .collect(),
    });
    Ok(())
}

/// Descriptors of process `pid` were closed (`close`, `dup2` over one, `execve`'s
/// close-on-exec): its POSIX record locks on their files go ([`lock::closed`]), and Hare sends
/// the closes of its files ([`hare::release`]). The caller holds no lock.
pub fn descriptors_closed(pid: u32, files: impl IntoIterator<Item = Arc<OpenFile>>) {
    hare::release(files.into_iter().inspect(|f| lock::closed(pid, f)));
}

/// Admits a write of `len` bytes of file data, before it enters the log (NrOS §4.1: every
/// replica then applies it alike): every node's replica will copy the data into pages of its
/// own node, so every node must have that much free above its kernel reserve. `ENOSPC`
/// otherwise: NR-FS lives in memory, so a full memory is a full file system.
///
/// Write data waits in the log (in the kernel heap) until the last replica has applied it, and
/// an idle node applies only once per tick; so that a fast writer cannot fill the heap with
/// data in flight, every [`SYNC_EVERY`] bytes admitted bring all replicas up to date first.
pub fn admit(len: usize) -> Result<(), Errno> {
    let before = UNSYNCED.fetch_add(len as u64, Ordering::Relaxed);
    if before + len as u64 > SYNC_EVERY {
        UNSYNCED.store(0, Ordering::Relaxed);
        sync_all();
    }
    let pages = (len as u64).div_ceil(PAGE_BYTES) + 1;
    if crate::mm::every_node_has(pages * PAGE_BYTES) {
        Ok(())
    } else {
        Err(Errno::ENOSPC)
    }
}

/// Admits a truncation to `size`: one that ends inside a page zeroes that page's tail, and if
/// the page is lent to a program (`execve`) NR-FS gives the file a copy, one page on every
/// node. `ENOSPC` if a node cannot spare it.
pub fn admit_truncate(size: u64) -> Result<(), Errno> {
    if size.is_multiple_of(PAGE_BYTES) {
        return Ok(());
    }
    admit(0)
}

/// Bytes of one NR-FS data page.
const PAGE_BYTES: u64 = 4096;
/// Bytes of writes admitted between two syncs of every replica (see [`admit`]).
const SYNC_EVERY: u64 = 4 << 20;
/// Bytes admitted since the last such sync.
static UNSYNCED: AtomicU64 = AtomicU64::new(0);

/// The current time as NR-FS records it (realtime clock).
pub fn now() -> Timespec {
    let ns = crate::time::now_ns() + crate::time::realtime_offset_ns();
    Timespec {
        sec: (ns / 1_000_000_000) as i64,
        nsec: (ns % 1_000_000_000) as u32,
    }
}

/// Runs `f` with this core's client of `node`'s replica.
fn with_client_of<R>(
    root: &Root,
    node: usize,
    f: impl FnOnce(&FsClient) -> Result<R, Errno>,
) -> Result<R, Errno> {
    let core = kcb::current().core_id;
    let node = node.min(root.replicas.len() - 1);
    let mut slot = root.clients[core * root.replicas.len() + node].lock();
    if slot.is_none() {
        *slot = Some(root.fs.client(&root.replicas[node]).ok_or(Errno::EAGAIN)?);
    }
    f(slot.as_ref().expect("registered above"))
}

/// Runs `f` with this core's NR-FS client (of its own node's replica).
pub fn with_client<R>(f: impl FnOnce(&FsClient) -> Result<R, Errno>) -> Result<R, Errno> {
    let root = ROOT.get().ok_or(Errno::ENOENT)?;
    with_client_of(root, kcb::current().node_id, f)
}

/// Brings this node's NR-FS replica up to date (idle cores, and the `NrSync` IPI of a log
/// that found this node lagging; NrOS §4.5).
pub fn sync_local() {
    let _ = with_client(|c| {
        c.replica().sync(c.token());
        Ok(())
    });
}

/// Brings every node's NR-FS replica up to date from this core. Used after an operation that
/// frees file data (the last close of an unlinked file, the unlink of a file's last name):
/// each replica frees its copy of the pages when it applies the operation, and this makes
/// the memory come back at once instead of when each node next uses NR-FS.
pub fn sync_all() {
    let Some(root) = ROOT.get() else {
        return;
    };
    for node in 0..root.replicas.len() {
        let _ = with_client_of(root, node, |c| {
            c.replica().sync(c.token());
            Ok(())
        });
    }
}

/// The one executable the kernel trusts with a capability: the fleet manager (`/bin/fleet` of
/// the initramfs, [`trust_exe`]), whose processes may bind cores and register `fleet/` names.
/// Nothing may rewrite it: opening it for writing and truncating it answer `ETXTBSY`. 0 for
/// none.
static TRUSTED_EXE: AtomicU64 = AtomicU64::new(0);

/// The absolute path of the trusted executable in NR-FS, once [`trust_exe`] made it so.
static TRUSTED_PATH: spin::Once<&'static [u8]> = spin::Once::new();

/// Makes the regular file at absolute `path` the trusted executable ([`TRUSTED_EXE`]).
pub fn trust_exe(path: &'static [u8]) -> Result<(), Errno> {
    let ino = with_client(|c| {
        let ino = c.resolve(ROOT_INO, path, true)?;
        match c.stat(ino)?.kind {
            Kind::File => Ok(ino),
            _ => Err(Errno::EACCES),
        }
    })?;
    TRUSTED_EXE.store(ino, Ordering::Release);
    TRUSTED_PATH.call_once(|| path);
    Ok(())
}

/// Whether `normal` (absolute, its `.` and `..` applied) names the trusted executable's place
/// in NR-FS: a file system mounted over `/` leaves that one path to NR-FS, so that the
/// trusted manager is still the one executed there (`hare::place_of`).
pub fn is_trusted_path(normal: &[u8]) -> bool {
    TRUSTED_PATH.get().is_some_and(|&p| p == normal)
}

/// Whether `ino` is the trusted executable ([`TRUSTED_EXE`]).
pub fn is_trusted_exe(ino: Ino) -> bool {
    ino != 0 && TRUSTED_EXE.load(Ordering::Acquire) == ino
}

/// `ETXTBSY` if `ino` is the trusted executable, which nothing may write.
pub fn check_writable(ino: Ino) -> Result<(), Errno> {
    if is_trusted_exe(ino) {
        Err(Errno::ETXTBSY)
    } else {
        Ok(())
    }
}

/// A regular file whose pages go into an address space (a program for `execve`, a file for
/// `mmap`, [`crate::filemap`]): read piece by piece, so a large file never needs one large
/// kernel buffer, or lent page by page.
pub struct MappedFile {
    /// The file behind it.
    source: FileSource,
    /// Size in bytes.
    pub size: u64,
    /// Its owner, group and mode (for a set-user-ID or set-group-ID program).
    pub owner: creds::Owner,
}

/// Where an [`MappedFile`] lives.
enum FileSource {
    /// An NR-FS inode.
    Nrfs(Ino),
    /// A file open in Hare (§3.6's exec of a program on the file servers; its pages are
    /// copied, never lent).
    Hare(Arc<OpenFile>),
}

impl MappedFile {
    /// Opens `path` for execution: it must be a regular file the caller may execute (root:
    /// one with an execute bit; EACCES). Relative to `me`'s working directory, or to the root
    /// for the first process (`None`). A path in
    /// `/proc` counts if it is a link out of `/proc` (`/proc/self/exe`, which busybox execs to
    /// run its applets).
    pub fn open(me: Option<&Process>, path: &[u8]) -> Result<MappedFile, Errno> {
        match me {
            Some(p) => path::at(p, path::AT_FDCWD, path, Last::Follow, |place| {
                Self::open_at(me, place)
            }),
            None => Self::open_at(None, &Place::Fs {
                start: ROOT_INO,
                path: path.to_vec(),
            }),
        }
    }

    /// [`MappedFile::open`] of `place`.
    fn open_at(me: Option<&Process>, place: &Place) -> Result<MappedFile, Errno> {
        let (start, path) = match place {
            Place::Fs { start, path } => (*start, &path[..]),
            Place::Proc(comps) => {
                let comps: Vec<&[u8]> = comps.iter().map(Vec::as_slice).collect();
                return match me.map(|p| procfs::resolve(p, &comps, true)).transpose()? {
                    // Placed again by `path::at`.
                    Some(procfs::Resolved::Outside(_)) => Err(Errno::EXDEV),
                    _ => Err(Errno::EACCES),
                };
            }
            Place::Hare(h) => {
                if let Some(p) = me {
                    perm::hare_lookup(p, h)?;
                }
                // Non-blocking, so that a FIFO is refused below rather than waited on for a
                // writer (Linux refuses it before opening).
                let how = (O_RDONLY | crate::fd::O_NONBLOCK, 0, 0);
                let f = hare::open(h, how, (0, 0), O_RDONLY, h.path.clone())?;
                let st = f.stat()?;
                if st.mode & 0o170000 != 0o100000 {
                    return Err(Errno::EACCES);
                }
                let owner = perm::owner_of(&st);
                perm::may_execute(me, owner)?;
                return Ok(MappedFile {
                    source: FileSource::Hare(f),
                    size: st.size,
                    owner,
                });
            }
        };
        if let Some(p) = me {
            perm::lookup(p, start, path, true)?;
        }
        let (ino, st) = with_client(|c| c.stat_path(start, path, true))?;
        let owner = perm::owner(&st);
        if st.kind != nrfs::Kind::File {
            return Err(Errno::EACCES);
        }
        perm::may_execute(me, owner)?;
        Ok(MappedFile {
            source: FileSource::Nrfs(ino),
            size: st.size,
            owner,
        })
    }

    /// The regular file open as `f`, for `mmap`: `EBADF` for an `O_PATH` descriptor, `EACCES`
    /// unless it was opened for reading, `ENODEV` unless it is a regular file (NR-FS or Hare).
    pub fn of(f: &Arc<OpenFile>) -> Result<MappedFile, Errno> {
        if f.flags() & O_PATH != 0 {
            return Err(Errno::EBADF);
        }
        let source = match &f.node {
            Node::File(ino) => FileSource::Nrfs(*ino),
            Node::Hare(_) => FileSource::Hare(f.clone()),
            _ => return Err(Errno::ENODEV),
        };
        let st = f.stat()?;
        if st.mode & 0o170000 != 0o100000 {
            return Err(Errno::ENODEV);
        }
        if !f.readable() {
            return Err(Errno::EACCES);
        }
        Ok(MappedFile {
            source,
            size: st.size,
            owner: creds::Owner {
                uid: st.uid,
                gid: st.gid,
                mode: st.mode & 0o7777,
                dir: false,
            },
        })
    }

    /// NR-FS file `ino`, for bringing a page of a mapping of it back
    /// ([`crate::filemap::fault_in`]): ENOENT if it is gone, EACCES unless a regular file.
    pub fn by_ino(ino: Ino) -> Result<MappedFile, Errno> {
        let st = with_client(|c| c.stat(ino))?;
        if st.kind != nrfs::Kind::File {
            return Err(Errno::EACCES);
        }
        Ok(MappedFile {
            source: FileSource::Nrfs(ino),
            size: st.size,
            owner: perm::owner(&st),
        })
    }

    /// The file's NR-FS inode (`None` in Hare).
    pub fn nrfs_ino(&self) -> Option<Ino> {
        match self.source {
            FileSource::Nrfs(ino) => Some(ino),
            FileSource::Hare(_) => None,
        }
    }

    /// Lends `count` pages of the file from page index `first` (this node's replica's copies,
    /// or the frames all replicas share): the physical frame of each and whether it is shared
    /// (a `MAP_SHARED` mapping may write it), `None` for a hole, a page past the end or a file
    /// in Hare (the caller copies those). Each frame lent carries one share (see [`init`]) that
    /// the caller must map or give back (`vm::free_frame`'s rule: unshare, free if none is
    /// left).
    pub fn lend_pages(&self, first: u64, count: usize) -> Result<Vec<Option<(u64, bool)>>, Errno> {
        let FileSource::Nrfs(ino) = self.source else {
            let mut none = Vec::new();
            none.try_reserve_exact(count).map_err(|_| Errno::ENOMEM)?;
            none.resize(count, None);
            return Ok(none);
        };
        let pages = with_client(|c| c.lend_pages(ino, first, count))?;
        Ok(pages
            .into_iter()
            .map(|p| p.map(|l| (virt_to_phys(l.addr as u64), l.shared)))
            .collect())
    }

    /// Makes `count` pages of the file from page index `first` (as far as the file goes) frames
    /// that every replica shares, for a `MAP_SHARED` mapping: allocates a frame per page,
    /// which NR-FS fills with the page's bytes unless the page is shared already, and gives
    /// back this allocation's share of each once every replica has adopted them (the
    /// replicas hold the ones they took). `ENOMEM` without frames, `ENODEV` for a file in
    /// Hare.
    pub fn share_pages(&self, first: u64, count: usize) -> Result<(), Errno> {
        let FileSource::Nrfs(ino) = self.source else {
            return Err(Errno::ENODEV);
        };
        let mut frames = Vec::new();
        frames.try_reserve_exact(count).map_err(|_| Errno::ENOMEM)?;
        let made = (0..count).try_for_each(|_| {
            let f = crate::vm::allocate_user_frame()?;
            frames.push(crate::arch::paging::phys_to_virt(f) as usize);
            Ok(())
        });
        let shared = made.and_then(|()| {
            let mut list = Vec::new();
            list.try_reserve_exact(frames.len())
                .map_err(|_| Errno::ENOMEM)?;
            list.extend_from_slice(&frames);
            let (taken, offer) = with_client(|c| Ok(c.share_pages(ino, first, list)))?;
            // A replica of another node adopts the frames when it catches up, perhaps after a
            // truncation and an `munmap` that made this node let them go: this allocation's
            // share must keep them until then (`nrfs::Offer`), so that replica cannot adopt a
            // frame freed and reused meanwhile. It is brought up to date here rather than
            // waited for.
            if !offer.adopted() {
                sync_all();
            }
            if !offer.adopted() {
                crate::kprintln!(
                    "reef: fs: {} frames kept for good: a replica could not be brought up to date",
                    frames.len()
                );
                frames.clear();
            }
            taken
        });
        for f in frames {
            crate::vm::free_frame(virt_to_phys(f as u64), PageSize::Base4K);
        }
        shared.map(drop)
    }

    /// Fills `buf` from offset `off` (short only at the end of the file).
    pub fn read_at(&self, off: u64, buf: &mut [u8]) -> Result<usize, Errno> {
        let mut done = 0;
        while done < buf.len() {
            let at = off + done as u64;
            let n = match &self.source {
                FileSource::Nrfs(ino) => with_client(|c| c.read(*ino, at, &mut buf[done..]))?,
                FileSource::Hare(f) => f.pread(&mut buf[done..], at)?,
            };
            if n == 0 {
                break;
            }
            done += n;
        }
        Ok(done)
    }
}

/// Unpacks a cpio (newc) archive into the root file system.
pub fn unpack_initramfs(archive: &[u8]) -> Result<Unpacked, cpio::CpioError> {
    let mut out = Unpacked::default();
    let t = now();
    for entry in cpio::Archive::new(archive) {
        let e = entry?;
        let name = e.name;
        if name.is_empty() || name == b"." {
            continue;
        }
        let attrs = Attrs::new(e.permissions(), e.uid, e.gid);
        let result = with_client(|c| {
            if e.is_dir() {
                match c.mkdir(ROOT_INO, name, attrs, t) {
                    Ok(_) | Err(Errno::EEXIST) => {}
                    Err(err) => return Err(err),
                }
                out.dirs += 1;
            } else if e.is_symlink() {
                c.symlink(e.data, ROOT_INO, name, attrs, t)?;
                out.links += 1;
            } else if e.is_file() {
                let flags = CreateFlags {
                    exclusive: false,
                    open: false,
                };
                let created = c.create(ROOT_INO, name, attrs, flags, t)?;
                c.truncate(created.ino, 0, t)?;
                let mut off = 0;
                for chunk in e.data.chunks(64 * 1024) {
                    c.write(created.ino, off, chunk, t)?;
                    off += chunk.len() as u64;
                }
                out.files += 1;
                out.bytes += e.data.len() as u64;
            } else if e.is_char_device() {
                let rdev = ((e.rdev_major as u64) << 8) | e.rdev_minor as u64;
                c.mknod(ROOT_INO, name, attrs, rdev, t)?;
            }
            Ok(())
        });
        if let Err(err) = result {
            crate::kprintln!(
                "reef: initramfs: cannot create '{}': {err}",
                core::str::from_utf8(name).unwrap_or("?")
            );
        }
    }
    Ok(out)
}

/// Marks NR-FS directory `dir` as covered by another file system (Hare's mount point,
/// `/proc`, `/sys`): a symlink in NR-FS that leads into it leads into that file system
/// ([`path::at`]). EBUSY if it is covered already.
pub fn cover(dir: Ino) -> Result<(), Errno> {
    ROOT.get().ok_or(Errno::ENOENT)?.fs.cover(dir)
}

/// Makes NR-FS's `/proc` and `/sys` if the initramfs had none, and covers them with the
/// generated trees ([`procfs`]), so that an NR-FS symlink into them (`/dev/fd` to
/// `/proc/self/fd`) leads there.
pub fn cover_generated() -> Result<(), Errno> {
    for dir in [&b"/proc"[..], b"/sys"] {
        let ino = with_client(|c| match c.mkdir(ROOT_INO, dir, Attrs::new(0o555, 0, 0), now()) {
            Err(Errno::EEXIST) => c.resolve(ROOT_INO, dir, false),
            made => made,
        })?;
        cover(ino)?;
    }
    Ok(())
}

/// Undoes [`cover`].
pub fn uncover(dir: Ino) {
    if let Some(r) = ROOT.get() {
        r.fs.uncover(dir);
    }
}

/// The text of `/proc/reef/nrfs`: NR-FS's logs, what was appended to each, and how far each
/// replica (one per NUMA node) has applied it.
pub fn report() -> String {
    let mut s = String::new();
    let Some(root) = ROOT.get() else {
        return s;
    };
    let _ = writeln!(
        s,
        "nrfs: logs={} replicas={} stale_retries={}",
        root.fs.nlogs(),
        root.fs.replicas(),
        root.fs.stale_retries()
    );
    for l in root.fs.log_stats() {
        let applied: Vec<String> = l.applied.iter().map(|a| alloc::format!("{a}")).collect();
        let _ = writeln!(
            s,
            "log {}: submitted={} applied={}",
            l.log,
            l.submitted,
            applied.join(",")
        );
    }
    s
}

/// Drops an open of NR-FS inode `ino` taken on behalf of a description that was not made.
fn close_ino(ino: Ino) {
    let _ = with_client(|c| c.close(ino));
}

/// Opens `path` relative to `dirfd` with `open` flags `flags` and creation mode `mode` (the
/// caller's umask applied here), as `openat` does.
pub fn open(
    me: &Process,
    dirfd: i32,
    path: &[u8],
    flags: u32,
    mode: u32,
) -> Result<Arc<OpenFile>, Errno> {
    use flags::*;
    if flags & O_CREAT != 0 && flags & O_DIRECTORY != 0 {
        return Err(Errno::EINVAL);
    }
    // Flags a description keeps (the creation flags are spent here).
    let kept = flags & !(O_CREAT | O_EXCL | O_NOCTTY | O_TRUNC | O_CLOEXEC);
    if flags & O_TMPFILE & !O_DIRECTORY != 0 {
        if flags & O_DIRECTORY == 0 || flags & O_ACCMODE == O_RDONLY {
            return Err(Errno::EINVAL);
        }
        return path::at(me, dirfd, path, Last::Follow, |place| match place {
            Place::Fs { start, path } => {
                let (start, path) = (*start, &path[..]);
                perm::may(me, start, path, true, creds::MAY_WRITE | creds::MAY_EXEC)?;
                let umask = me.umask.load(core::sync::atomic::Ordering::Relaxed);
                let ino = unnamed(me, start, path, mode & !umask)?;
                let mut shown = path::join(&dir_path(start)?, path);
                if shown.last() != Some(&b'/') {
                    shown.push(b'/');
                }
                shown.extend_from_slice(alloc::format!("#{ino} (deleted)").as_bytes());
                Ok(OpenFile::new(Node::File(ino), kept & !O_TMPFILE, shown))
            }
            Place::Hare(_) | Place::Proc(_) => Err(Errno::EOPNOTSUPP),
        });
    }
    let last = Last::follow(flags & O_NOFOLLOW == 0);
    // The path shown for the description: the caller's (again if a walk that took it left
    // its file system).
    let mut shown = Some(path::display(me, dirfd, path));
    path::at(me, dirfd, path, last, |place| {
        let shown = shown
            .take()
            .unwrap_or_else(|| path::display(me, dirfd, path));
        open_at(me, place, (flags, mode, kept), shown)
    })
}

/// [`open`] of `place`, keeping flags `kept`.
fn open_at(
    me: &Process,
    place: &Place,
    (flags, mode, kept): (u32, u32, u32),
    shown: Vec<u8>,
) -> Result<Arc<OpenFile>, Errno> {
    use flags::*;
    match place {
        Place::Fs { start, path } => open_nrfs(me, *start, path, flags, mode, kept, shown),
        Place::Hare(p) => {
            perm::hare_open(me, p, flags)?;
            let umask = me.umask.load(core::sync::atomic::Ordering::Relaxed);
            let owner = perm::new_owner(me);
            hare::open(p, (flags, mode, umask), owner, kept, shown)
        }
        Place::Proc(comps) => {
            let comps: Vec<&[u8]> = comps.iter().map(Vec::as_slice).collect();
            let follow = flags & O_NOFOLLOW == 0;
            let resolved = match procfs::resolve(me, &comps, follow) {
                Err(Errno::ENOENT) if flags & O_CREAT != 0 => return Err(Errno::EACCES),
                r => r?,
            };
            if flags & (O_CREAT | O_EXCL) == O_CREAT | O_EXCL {
                return Err(Errno::EEXIST);
            }
            match resolved {
                procfs::Resolved::Proc(place) => {
                    if flags & O_DIRECTORY != 0 && !procfs::stat_of(place, 0).is_dir() {
                        return Err(Errno::ENOTDIR);
                    }
                    procfs::open(me, place, kept, shown)
                }
                // Placed again by `path::at`.
                procfs::Resolved::Outside(_) => Err(Errno::EXDEV),
                procfs::Resolved::Open(f) => reopen(&f, kept),
            }
        }
    }
}

/// A new regular file with no name, beside NR-FS directory `path` (from `start`), with
/// permissions `perm`, of the caller's file-system IDs, counted open once for the description
/// the caller makes (`Node::File`): `open(O_TMPFILE)` (shown in `/proc/<pid>/fd/` as Linux
/// does, `DIR/#INO (deleted)`) and `memfd_create`. It lives until that description closes.
pub fn unnamed(me: &Process, start: Ino, path: &[u8], perm: u32) -> Result<Ino, Errno> {
    let (uid, gid) = perm::new_owner(me);
    let attrs = Attrs::new(perm & 0o7777, uid, gid);
    with_client(|c| c.tmpfile(start, path, attrs, now()))
}

/// A new description of what `f` names (`/proc/<pid>/fd/<n>`): NR-FS files and directories
/// are opened afresh with their own offset; pipes, devices and `/proc` files share `f`.
fn reopen(f: &Arc<OpenFile>, flags: u32) -> Result<Arc<OpenFile>, Errno> {
    let node = match &f.node {
        Node::File(ino) => Node::File(*ino),
        Node::Dir(ino) => Node::Dir(*ino),
        _ => return Ok(f.clone()),
    };
    let ino = f.ino().ok_or(Errno::EIO)?;
    with_client(|c| c.open(ino))?;
    Ok(OpenFile::new(node, flags, f.path.clone()))
}

/// Opens `path` in NR-FS relative to directory `start` for [`open`], creating it under
/// `O_CREAT` (permissions `mode` less the umask); the description keeps the flags `kept` and
/// shows `shown` as its path. `EISDIR` for a directory opened for writing or with `O_CREAT`,
/// `ENOTDIR` for a non-directory under `O_DIRECTORY`, `ELOOP` for a symlink without `O_PATH`,
/// `ETXTBSY` for writing the trusted executable; `O_TRUNC` empties a regular file opened for
/// writing (and is ignored on anything else). A FIFO gives its pipe ([`fifo::open`], which
/// may wait for a peer); with `O_PATH` it is only named.
fn open_nrfs(
    me: &Process,
    start: Ino,
    path: &[u8],
    flags: u32,
    mode: u32,
    kept: u32,
    shown: Vec<u8>,
) -> Result<Arc<OpenFile>, Errno> {
    use flags::*;
    perm::open(me, start, path, flags)?;
    let (uid, gid) = perm::new_owner(me);
    let t = now();
    let follow = flags & O_NOFOLLOW == 0;
    let (ino, st) = with_client(|c| {
        let ino = if flags & O_CREAT != 0 {
            let perm = mode & 0o7777 & !me.umask.load(core::sync::atomic::Ordering::Relaxed);
            let create = CreateFlags {
                exclusive: flags & O_EXCL != 0,
                open: true,
            };
            c.create(start, path, Attrs::new(perm, uid, gid), create, t)?
                .ino
        } else {
            c.open_path(start, path, follow)?
        };
        match c.stat(ino) {
            Ok(st) => Ok((ino, st)),
            Err(e) => {
                let _ = c.close(ino);
                Err(e)
            }
        }
    })?;
    let writing = flags & O_ACCMODE != O_RDONLY;
    let refuse = |e: Errno| {
        close_ino(ino);
        Err(e)
    };
    let node = match st.kind {
        Kind::Dir if writing || flags & O_CREAT != 0 => return refuse(Errno::EISDIR),
        Kind::Dir => Node::Dir(ino),
        _ if flags & O_DIRECTORY != 0 => return refuse(Errno::ENOTDIR),
        Kind::Symlink if flags & O_PATH == 0 => return refuse(Errno::ELOOP),
        Kind::File if writing && is_trusted_exe(ino) => return refuse(Errno::ETXTBSY),
        Kind::Symlink | Kind::File => Node::File(ino),
        Kind::CharDev => match dev::from_rdev(st.rdev) {
            Ok(d) => Node::Device(d, Some(ino)),
            Err(e) => return refuse(e),
        },
        Kind::Fifo if flags & O_PATH != 0 => Node::File(ino),
        Kind::Fifo => match fifo::open(fifo::FifoFile::Nrfs(ino), flags) {
            Ok(end) => Node::Fifo(end),
            Err(e) => return refuse(e),
        },
    };
    let file = OpenFile::new(node, kept, shown);
    if flags & O_TRUNC != 0 && writing && st.kind == Kind::File && flags & O_PATH == 0 {
        with_client(|c| c.truncate(ino, 0, t))?;
    }
    Ok(file)
}

/// The absolute path of NR-FS directory `dir`, found by walking `..` to the root and looking
/// each directory up in its parent. ENOENT if a directory on the way was removed.
pub fn dir_path(dir: Ino) -> Result<Vec<u8>, Errno> {
    let mut names: Vec<Vec<u8>> = Vec::new();
    let mut at = dir;
    with_client(|c| {
        while at != ROOT_INO {
            let parent = c.lookup(at, b"..")?;
            let mut cookie = 0;
            let name = 'found: loop {
                let entries = c.read_dir(parent, cookie, 64)?;
                if entries.is_empty() {
                    return Err(Errno::ENOENT);
                }
                for e in &entries {
                    if e.ino == at && e.name != b"." && e.name != b".." {
                        break 'found e.name.clone();
                    }
                }
                cookie = entries.last().map_or(cookie, |e| e.next_cookie);
            };
            names.push(name);
            at = parent;
        }
        Ok(())
    })?;
    let mut out = Vec::new();
    for n in names.iter().rev() {
        out.push(b'/');
        out.extend_from_slice(n);
    }
    if out.is_empty() {
        out.push(b'/');
    }
    Ok(out)
}

/// The root directory's description, made once: every process that starts or ends in `/`
/// shares it, and it is never dropped (so no NR-FS close ever runs on its account).
static ROOT_DIR: spin::Once<Arc<OpenFile>> = spin::Once::new();

/// A description of the root directory (the first process's working directory, and the one an
/// exiting process leaves its own for).
pub fn root_dir() -> Result<Arc<OpenFile>, Errno> {
    if let Some(d) = ROOT_DIR.get() {
        return Ok(d.clone());
    }
    with_client(|c| c.open(ROOT_INO))?;
    let made = OpenFile::new(Node::Dir(ROOT_INO), O_RDONLY, b"/".to_vec());
    let kept = ROOT_DIR.call_once(|| made.clone()).clone();
    // Another core may have made it first; then this one's open is dropped here.
    drop(made);
    Ok(kept)
}
