//! File descriptors and open file descriptions.
//!
//! An [`OpenFile`] is a Linux "open file description": what was opened, the file offset and the
//! status flags. `dup` and `fork` share it (one offset), so it is reference counted; an
//! [`FdTable`] maps descriptor numbers to open files plus the per-descriptor close-on-exec flag.

use abi::Errno;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicU32, Ordering};

/// Most descriptors a process may hold (`RLIMIT_NOFILE`).
pub const MAX_FDS: usize = 1024;

/// `O_NONBLOCK`.
pub const O_NONBLOCK: u32 = 0o4000;
/// `O_APPEND`.
pub const O_APPEND: u32 = 0o2000;

/// What an open file refers to.
pub enum Node {
    /// The serial console (terminal).
    Console,
}

/// An open file description.
pub struct OpenFile {
    /// What is open.
    pub node: Node,
    /// Status flags (`O_APPEND`, `O_NONBLOCK`, access mode).
    pub flags: AtomicU32,
}

impl OpenFile {
    /// A new description.
    pub fn new(node: Node, flags: u32) -> Arc<OpenFile> {
        Arc::new(OpenFile {
            node,
            flags: AtomicU32::new(flags),
        })
    }

    /// Reads into `buf` (a kernel buffer) at the current offset.
    pub fn read(&self, buf: &mut [u8]) -> Result<usize, Errno> {
        match &self.node {
            Node::Console => {
                crate::tty::read(buf, self.flags.load(Ordering::Relaxed) & O_NONBLOCK != 0)
            }
        }
    }

    /// Writes `data` at the current offset (or the end, with `O_APPEND`).
    pub fn write(&self, data: &[u8]) -> Result<usize, Errno> {
        match &self.node {
            Node::Console => crate::tty::write(data),
        }
    }

    /// Whether this is a terminal.
    pub fn is_tty(&self) -> bool {
        matches!(self.node, Node::Console)
    }
}

/// One descriptor.
#[derive(Clone)]
pub struct Fd {
    /// The open file.
    pub file: Arc<OpenFile>,
    /// `FD_CLOEXEC`.
    pub cloexec: bool,
}

/// A process's descriptors.
#[derive(Clone, Default)]
pub struct FdTable {
    entries: Vec<Option<Fd>>,
}

impl FdTable {
    /// Descriptors 0, 1 and 2 on the console (the first process).
    pub fn console() -> FdTable {
        let tty = OpenFile::new(Node::Console, 2);
        let fd = Fd {
            file: tty,
            cloexec: false,
        };
        FdTable {
            entries: alloc::vec![Some(fd.clone()), Some(fd.clone()), Some(fd)],
        }
    }

    /// The open file of `fd`.
    pub fn get(&self, fd: i32) -> Result<Arc<OpenFile>, Errno> {
        usize::try_from(fd)
            .ok()
            .and_then(|i| self.entries.get(i))
            .and_then(|e| e.as_ref())
            .map(|e| e.file.clone())
            .ok_or(Errno::EBADF)
    }

    /// The descriptor entry of `fd`.
    pub fn entry_mut(&mut self, fd: i32) -> Result<&mut Fd, Errno> {
        usize::try_from(fd)
            .ok()
            .and_then(|i| self.entries.get_mut(i))
            .and_then(|e| e.as_mut())
            .ok_or(Errno::EBADF)
    }

    /// Installs `file` at the lowest free descriptor `>= min`.
    pub fn insert(&mut self, file: Arc<OpenFile>, cloexec: bool, min: usize) -> Result<i32, Errno> {
        let slot = (min..MAX_FDS)
            .find(|&i| self.entries.get(i).is_none_or(|e| e.is_none()))
            .ok_or(Errno::EMFILE)?;
        if slot >= self.entries.len() {
            self.entries.resize(slot + 1, None);
        }
        self.entries[slot] = Some(Fd { file, cloexec });
        Ok(slot as i32)
    }

    /// Installs `file` at exactly `fd`, closing what was there (`dup2`).
    pub fn insert_at(&mut self, fd: i32, file: Arc<OpenFile>, cloexec: bool) -> Result<(), Errno> {
        let slot = usize::try_from(fd)
            .ok()
            .filter(|&i| i < MAX_FDS)
            .ok_or(Errno::EBADF)?;
        if slot >= self.entries.len() {
            self.entries.resize(slot + 1, None);
        }
        self.entries[slot] = Some(Fd { file, cloexec });
        Ok(())
    }

    /// Closes `fd`.
    pub fn close(&mut self, fd: i32) -> Result<(), Errno> {
        let slot = usize::try_from(fd)
            .ok()
            .and_then(|i| self.entries.get_mut(i))
            .ok_or(Errno::EBADF)?;
        slot.take().map(|_| ()).ok_or(Errno::EBADF)
    }

    /// Closes every descriptor (process exit).
    pub fn close_all(&mut self) {
        self.entries.clear();
    }

    /// Closes the close-on-exec descriptors (`execve`).
    pub fn close_on_exec(&mut self) {
        for e in self.entries.iter_mut() {
            if e.as_ref().is_some_and(|f| f.cloexec) {
                *e = None;
            }
        }
    }
}
