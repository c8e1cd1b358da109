//! The root file system: NR-FS (NrOS §4.3), one CNR replica per NUMA node, filled from the
//! initramfs at boot.
//!
//! The file-system logic and its CNR operations are the host-tested `nrfs` crate; this module
//! creates one replica per node, gives every core a client handle registered with its node's
//! replica (registered lazily, kept per core, used with interrupts off like every NR call in
//! the kernel), and unpacks the cpio archive the loader passed as a boot module.

use crate::kcb;
use crate::sync::IrqMutex;
use abi::Errno;
use alloc::sync::Arc;
use alloc::vec::Vec;
use nrfs::{Attrs, CreateFlags, FsClient, FsReplica, Ino, NrFs, Timespec, ROOT_INO};

/// Number of CNR logs (operations on different inodes use different logs).
const LOGS: usize = 8;
/// Entries per log.
const LOG_ENTRIES: usize = 512;

struct Root {
    fs: NrFs,
    replicas: Vec<Arc<FsReplica>>,
    /// `clients[core]`: that core's handle on its node's replica.
    clients: Vec<IrqMutex<Option<FsClient>>>,
}

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
pub fn init(nodes: usize, cores: usize) -> Result<(), Errno> {
    let logs = nr::cnr::Logs::with_capacity(LOGS, LOG_ENTRIES);
    let fs = NrFs::with_logs(logs, nodes, Attrs::new(0o755, 0, 0), now())?;
    let mut replicas = Vec::with_capacity(nodes);
    for _ in 0..nodes {
        replicas.push(fs.new_replica(cores.min(LOG_ENTRIES))?);
    }
    ROOT.call_once(|| Root {
        fs,
        replicas,
        clients: (0..kcb::MAX_CORES).map(|_| IrqMutex::new(None)).collect(),
    });
    Ok(())
}

/// The current time as NR-FS records it (realtime clock).
pub fn now() -> Timespec {
    let ns = crate::time::now_ns() + crate::time::realtime_offset_ns();
    Timespec {
        sec: (ns / 1_000_000_000) as i64,
        nsec: (ns % 1_000_000_000) as u32,
    }
}

/// Runs `f` with this core's NR-FS client.
pub fn with_client<R>(f: impl FnOnce(&FsClient) -> Result<R, Errno>) -> Result<R, Errno> {
    let root = ROOT.get().ok_or(Errno::ENOENT)?;
    let k = kcb::current();
    let mut slot = root.clients[k.core_id].lock();
    if slot.is_none() {
        let replica = &root.replicas[k.node_id.min(root.replicas.len() - 1)];
        *slot = Some(root.fs.client(replica).ok_or(Errno::EAGAIN)?);
    }
    f(slot.as_ref().expect("registered above"))
}

/// A regular file opened for `execve`: read piece by piece, so a large program never needs
/// one large kernel buffer.
pub struct ExecFile {
    ino: Ino,
    /// Size in bytes.
    pub size: u64,
}

impl ExecFile {
    /// Opens `path` for execution: it must be a regular file with an execute bit.
    pub fn open(path: &[u8]) -> Result<ExecFile, Errno> {
        with_client(|c| {
            let ino = c.resolve(ROOT_INO, path, true)?;
            let st = c.stat(ino)?;
            if st.kind != nrfs::Kind::File || st.mode & 0o111 == 0 {
                return Err(Errno::EACCES);
            }
            Ok(ExecFile { ino, size: st.size })
        })
    }

    /// Fills `buf` from offset `off` (short only at the end of the file).
    pub fn read_at(&self, off: u64, buf: &mut [u8]) -> Result<usize, Errno> {
        with_client(|c| {
            let mut done = 0;
            while done < buf.len() {
                let n = c.read(self.ino, off + done as u64, &mut buf[done..])?;
                if n == 0 {
                    break;
                }
                done += n;
            }
            Ok(done)
        })
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
