//! Where a system call's path leads: the directory it starts from (the root, the working
//! directory, or a directory descriptor) and the file system it lies in (NR-FS, `/proc`, or the
//! mounted Hare: an absolute path under the mount point, `.` and `..` applied by name, or a path
//! relative to a directory there; see [`hare`] for `..` at its root).
//!
//! NR-FS resolves its own paths (components, symlinks, `..`, Linux's errors; see the `nrfs`
//! crate). `/proc` and `/sys` ([`super::procfs`]) are recognised here, before NR-FS sees the
//! path: an absolute path whose first component is `proc` or `sys` (after `.` and `..` are
//! applied, as long as they stay inside), and any path relative to a directory inside them.
//!
//! A symlink can lead from one file system into another. NR-FS's directories that `/proc`,
//! `/sys` and Hare's mount point cover are marked (`NrFs::cover`), and a walk that reaches one
//! through a symlink, or follows a Hare symlink whose absolute target lies outside Hare, ends
//! with `EXDEV`; [`at`] then asks the file system where the walk left (`nrfs::walk::exit`) and
//! runs the call again on the rest of the path, placed afresh, as Linux's walk crosses a
//! mount point.

use super::hare::{self, HarePath};
use crate::fd::{Node, OpenFile};
use crate::proc::Process;
use abi::Errno;
use alloc::sync::Arc;
use alloc::vec::Vec;
use nrfs::{Ino, ROOT_INO};

/// `AT_FDCWD`: relative to the working directory.
pub const AT_FDCWD: i32 = -100;

/// How a call walks its path's last component, which [`at`] needs to find where a walk left
/// its file system.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Last {
    /// Followed if it is a symlink (`stat`, `open`, `open(O_CREAT)`, `truncate`...).
    Follow,
    /// Not followed (`lstat`, `readlink`, `O_NOFOLLOW`...).
    NoFollow,
    /// Not walked: the call acts on a name in the directory the rest leads to (`mkdir`,
    /// `unlink`, `rename`, `symlink`...).
    Name,
}

impl Last {
    /// [`Last::Follow`] if `follow`, else [`Last::NoFollow`].
    pub fn follow(follow: bool) -> Self {
        if follow {
            Last::Follow
        } else {
            Last::NoFollow
        }
    }
}

/// Runs `op` on the place of `path` (relative to `dirfd`); if its walk left the file system
/// it began in (`op` answers `EXDEV`, and the file system says where the walk left), runs it
/// again on where the path goes on from there, and so on, at most [`nrfs::SYMLOOP_MAX`]
/// times (then `ELOOP`: each crossing follows a symlink). `EXDEV` with no such exit is the
/// call's own answer (a rename between file systems).
pub fn at<T>(
    me: &Process,
    dirfd: i32,
    path: &[u8],
    last: Last,
    mut op: impl FnMut(&Place) -> Result<T, Errno>,
) -> Result<T, Errno> {
    let mut place = locate(me, dirfd, path)?;
    for _ in 0..=nrfs::SYMLOOP_MAX {
        match op(&place) {
            Err(Errno::EXDEV) => match exit(me, &place, last)? {
                Some(on) => place = absolute(&on),
                None => return Err(Errno::EXDEV),
            },
            r => return r,
        }
    }
    Err(Errno::ELOOP)
}

/// [`at`] for the calls with two paths (`rename`, `link`): when `op` answers `EXDEV`, each
/// path whose walk left its file system is placed again.
pub fn at2<T>(
    me: &Process,
    (dir1, path1, last1): (i32, &[u8], Last),
    (dir2, path2, last2): (i32, &[u8], Last),
    mut op: impl FnMut(&Place, &Place) -> Result<T, Errno>,
) -> Result<T, Errno> {
    let mut a = locate(me, dir1, path1)?;
    let mut b = locate(me, dir2, path2)?;
    for _ in 0..=nrfs::SYMLOOP_MAX {
        match op(&a, &b) {
            Err(Errno::EXDEV) => {
                let (on_a, on_b) = (exit(me, &a, last1)?, exit(me, &b, last2)?);
                if on_a.is_none() && on_b.is_none() {
                    return Err(Errno::EXDEV);
                }
                if let Some(on) = on_a {
                    a = absolute(&on);
                }
                if let Some(on) = on_b {
                    b = absolute(&on);
                }
            }
            r => return r,
        }
    }
    Err(Errno::ELOOP)
}

/// Where a walk of `place` leaves its file system, as the absolute path to go on with: at an
/// NR-FS directory covered by a mount, the directory's path and the rest; out of Hare, the
/// symlink's target and the rest; out of `/proc`, the target of a followed link to a file
/// elsewhere (`/proc/self/exe`, `/proc/self/cwd`, ...).
fn exit(me: &Process, place: &Place, last: Last) -> Result<Option<Vec<u8>>, Errno> {
    let (follow, parent_only) = (last == Last::Follow, last == Last::Name);
    match place {
        Place::Fs { start, path } => {
            let exit =
                super::with_client(|c| nrfs::walk::exit(c, *start, path, follow, parent_only))?;
            match exit {
                Some(nrfs::walk::Exit::Covered { dir, rest }) => Ok(Some(
                    nrfs::walk::Exit::continued(&super::dir_path(dir)?, &rest),
                )),
                // NR-FS follows its own symlinks and its root is the root.
                Some(nrfs::walk::Exit::Link { .. } | nrfs::walk::Exit::Up { .. }) | None => {
                    Ok(None)
                }
            }
        }
        Place::Hare(h) => hare::exit(h, follow, parent_only),
        Place::Proc(comps) if follow => {
            let comps: Vec<&[u8]> = comps.iter().map(Vec::as_slice).collect();
            match super::procfs::resolve(me, &comps, true)? {
                super::procfs::Resolved::Outside(target) => Ok(Some(target)),
                _ => Ok(None),
            }
        }
        Place::Proc(_) => Ok(None),
    }
}

/// Where a path lies.
pub enum Place {
    /// In NR-FS: `path` relative to directory `start` (or absolute).
    Fs {
        /// Directory a relative path starts from.
        start: Ino,
        /// The path.
        path: Vec<u8>,
    },
    /// In the generated trees, `/proc` or `/sys`: the components from `proc` or `sys` on.
    Proc(Vec<Vec<u8>>),
    /// In the mounted Hare.
    Hare(HarePath),
}

impl Place {
    /// The NR-FS part, or `err` for a path in `/proc`.
    pub fn fs(&self, err: Errno) -> Result<(Ino, &[u8]), Errno> {
        match self {
            Place::Fs { start, path } => Ok((*start, path)),
            Place::Proc(_) | Place::Hare(_) => Err(err),
        }
    }
}

/// The directory a relative path starts from: `dirfd`'s, or the working directory's for
/// [`AT_FDCWD`]. ENOTDIR if `dirfd` is not a directory.
pub fn start_dir(me: &Process, dirfd: i32) -> Result<Arc<OpenFile>, Errno> {
    let f = if dirfd == AT_FDCWD {
        me.cwd.lock().clone()
    } else {
        me.files.lock().get(dirfd)?
    };
    match &f.node {
        Node::Dir(_) | Node::ProcDir(_) => Ok(f),
        Node::Hare(h) if h.is_dir() => Ok(f),
        _ => Err(Errno::ENOTDIR),
    }
}

/// Locates `path` relative to `dirfd` (ENOENT for an empty path).
pub fn locate(me: &Process, dirfd: i32, path: &[u8]) -> Result<Place, Errno> {
    if path.is_empty() {
        return Err(Errno::ENOENT);
    }
    if path[0] == b'/' {
        return Ok(absolute(path));
    }
    let base = start_dir(me, dirfd)?;
    match &base.node {
        // A relative path that climbs with `..` is taken by name from the directory's path,
        // so that it may leave the mount.
        Node::Hare(h) if !path.split(|&b| b == b'/').any(|c| c == b"..") => {
            Ok(Place::Hare(hare::relative(h, path)))
        }
        Node::Dir(ino) => {
            if hare::is_mounted() {
                if let Place::Hare(p) = absolute(&join(&base.path, path)) {
                    return Ok(Place::Hare(p));
                }
            }
            Ok(Place::Fs {
                start: *ino,
                path: path.to_vec(),
            })
        }
        // From a Hare directory with `..`: by name from where the directory is now.
        Node::Hare(h) => Ok(absolute(&join(&h.path()?, path))),
        _ => Ok(absolute(&join(&base.path, path))),
    }
}

/// An absolute path's place, its `..` applied by name first (`/tmp/../proc/self` is in
/// `/proc`, as a path from a walk that left a mount, `MOUNT/../REST`, often is).
fn absolute(path: &[u8]) -> Place {
    if hare::is_mounted() {
        if let Some(p) = hare::place_of(join(b"/", path)) {
            return Place::Hare(p);
        }
    }
    let normal;
    let by_name = if path.split(|&b| b == b'/').any(|c| c == b"..") {
        normal = join(b"/", path);
        &normal[..]
    } else {
        path
    };
    let mut comps = by_name.split(|&b| b == b'/').filter(|c| !c.is_empty());
    if let Some(top @ (b"proc" | b"sys")) = comps.next() {
        let inside = core::iter::once(top).chain(comps.filter(|&c| c != b"."));
        return Place::Proc(inside.map(<[u8]>::to_vec).collect());
    }
    Place::Fs {
        start: ROOT_INO,
        path: path.to_vec(),
    }
}

/// `base` (absolute) joined with `path`, for display: `.` and `..` applied by name, repeated
/// slashes removed. An absolute `path` replaces `base`.
pub fn join(base: &[u8], path: &[u8]) -> Vec<u8> {
    let base = if path.first() == Some(&b'/') {
        b""
    } else {
        base
    };
    let mut out = Vec::with_capacity(base.len() + path.len() + 2);
    for c in base.split(|&b| b == b'/').chain(path.split(|&b| b == b'/')) {
        match c {
            b"" | b"." => {}
            b".." => {
                let parent = out.iter().rposition(|&b| b == b'/').unwrap_or(0);
                out.truncate(parent);
            }
            _ => {
                out.push(b'/');
                out.extend_from_slice(c);
            }
        }
    }
    if out.is_empty() {
        out.push(b'/');
    }
    out
}

/// The absolute path shown for a file opened by `path` relative to `dirfd`.
pub fn display(me: &Process, dirfd: i32, path: &[u8]) -> Vec<u8> {
    if path.first() == Some(&b'/') {
        return join(b"/", path);
    }
    match start_dir(me, dirfd) {
        Ok(base) => join(&base.path, path),
        Err(_) => path.to_vec(),
    }
}
