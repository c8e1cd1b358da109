//! Path resolution with Linux's rules, written once against [`Namespace`] and used by both
//! layers, and by other file systems that want the same rules (Hare's client library resolves
//! against its lookup cache through it).
//!
//! The walker is iterative (an explicit stack of symlink bodies, like Linux's `nameidata`), so
//! its stack use does not grow with the number of symlinks followed.
//!
//! A walk can lead out of its namespace: through a symlink into a directory another file
//! system is mounted on ([`Namespace::covered`]), through a symlink whose target the
//! namespace cannot follow (its [`Namespace::link_target`] answers `EXDEV`: Hare's absolute
//! targets outside its mount point), or by a `..` of a root mounted below another
//! ([`Namespace::parent`] answers `EXDEV`). The walk then ends with `EXDEV`, and [`exit`], asked
//! again with the same path, says where it left and what was left of the path there, so that
//! the caller can go on in the other file system (Linux's walk crosses mount points itself;
//! here each file system walks its own part).

use alloc::borrow::Cow;
use alloc::vec::Vec;

use abi::Errno;

use crate::{
    Ino, Kind, Last, ParentPath, NAME_MAX, PATH_MAX, RENAME_NOREPLACE, ROOT_INO, SYMLOOP_MAX,
};

/// The reads path resolution needs. Each method reads one inode, so the replicated file
/// system implements each with one read on that inode's log.
///
/// The walkers below call these and nothing else, and stop at the first error they return,
/// so an implementation may fail a read it cannot answer yet (Hare's client does, on a cache
/// miss), fetch what was missing and run the walk again.
pub trait Namespace {
    /// The kind of inode `ino` (ENOENT if it does not exist).
    fn kind(&self, ino: Ino) -> Result<Kind, Errno>;
    /// Looks `name` (a single, valid component) up in directory `dir` (ENOENT if `dir` does
    /// not exist, ENOTDIR if it is not a directory); `None` if there is no such entry.
    fn lookup(&self, dir: Ino, name: &[u8]) -> Result<Option<(Ino, Kind)>, Errno>;
    /// The parent (`..`) of directory `dir` (the root is its own parent); `EXDEV` if `dir`
    /// is the root of this namespace mounted on a directory of another ([`Exit::Up`]).
    fn parent(&self, dir: Ino) -> Result<Ino, Errno>;
    /// The target of symlink `ino`; `EXDEV` if the walk cannot follow it here (it leads out
    /// of this namespace: [`Exit::Link`]).
    fn link_target(&self, ino: Ino) -> Result<Vec<u8>, Errno>;
    /// Whether another file system is mounted on directory `dir`: a walk that reaches it
    /// after following a symlink leaves this namespace there ([`Exit::Covered`]). A path
    /// without symlinks is placed by its caller before the walk, by name, so the walker looks
    /// only after a symlink.
    fn covered(&self, dir: Ino) -> bool;
}

/// Where a walk left its namespace (see the module documentation), found by [`exit`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Exit {
    /// It reached covered directory `dir`; `rest` is what was left of the path after it
    /// (relative, possibly empty).
    Covered {
        /// The covered directory.
        dir: Ino,
        /// The path left to walk from there.
        rest: Vec<u8>,
    },
    /// Symlink `link`'s target leads out (its target as written is where to go on); `rest`
    /// is what was left of the path after the link.
    Link {
        /// The symlink.
        link: Ino,
        /// The path left to walk after the link's target.
        rest: Vec<u8>,
    },
    /// A `..` of the namespace's root (its [`Namespace::parent`] answered `EXDEV`): the walk
    /// goes on at the parent of the directory the namespace is mounted on, with `rest`.
    Up {
        /// The path left to walk from the mount point's parent.
        rest: Vec<u8>,
    },
}

impl Exit {
    /// The path to walk from `base` (the covered directory's path, or the link's target):
    /// `base/rest`, or `base` alone.
    pub fn continued(base: &[u8], rest: &[u8]) -> Vec<u8> {
        let mut out = base.to_vec();
        if !rest.is_empty() {
            if out.last() != Some(&b'/') {
                out.push(b'/');
            }
            out.extend_from_slice(rest);
        }
        out
    }
}

/// Checks a whole path: ENOENT if empty, ENAMETOOLONG if longer than `PATH_MAX - 1` bytes.
pub fn check_path(path: &[u8]) -> Result<(), Errno> {
    if path.is_empty() {
        return Err(Errno::ENOENT);
    }
    if path.len() >= PATH_MAX {
        return Err(Errno::ENAMETOOLONG);
    }
    Ok(())
}

/// One path being walked: the original, or the body of a symlink being followed.
struct Frame<'p> {
    path: Cow<'p, [u8]>,
    pos: usize,
}

impl Frame<'_> {
    /// Whether only slashes are left.
    fn exhausted(&self) -> bool {
        self.path[self.pos..].iter().all(|&b| b == b'/')
    }
}

/// A component taken from the top frame.
struct Component {
    start: usize,
    end: usize,
    /// The last component of the walk: no component follows in any frame.
    last: bool,
    /// Slashes follow it in its frame.
    trailing: bool,
}

/// Walker state: the current directory, the frames and the number of symlinks followed.
struct Walk<'p> {
    dir: Ino,
    /// The path walked (a walk without symlinks allocates nothing).
    path: Frame<'p>,
    /// The bodies of the symlinks being followed, innermost last.
    followed: Vec<Frame<'p>>,
    links: u32,
    /// Where the walk left its namespace, once it has (it then ends with `EXDEV`).
    exit: Option<Exit>,
}

impl<'p> Walk<'p> {
    /// Starts at the root for an absolute path, else at `start` (which must be a directory).
    fn new(ns: &(impl Namespace + ?Sized), start: Ino, path: &'p [u8]) -> Result<Self, Errno> {
        check_path(path)?;
        let dir = if path[0] == b'/' { ROOT_INO } else { start };
        if ns.kind(dir)? != Kind::Dir {
            return Err(Errno::ENOTDIR);
        }
        Ok(Self {
            dir,
            path: Frame {
                path: Cow::Borrowed(path),
                pos: 0,
            },
            followed: Vec::new(),
            links: 0,
            exit: None,
        })
    }

    /// What is left of the walk's path: the rest of each frame, innermost first, joined by
    /// slashes (a trailing slash of the walk's own path kept).
    fn rest(&self) -> Vec<u8> {
        let mut out = Vec::new();
        for f in self
            .followed
            .iter()
            .rev()
            .chain(core::iter::once(&self.path))
        {
            let part = &f.path[f.pos..];
            let trimmed = &part[part.iter().position(|&b| b != b'/').unwrap_or(part.len())..];
            if !trimmed.is_empty() {
                if !out.is_empty() {
                    out.push(b'/');
                }
                out.extend_from_slice(trimmed);
            }
        }
        if self.path.path.last() == Some(&b'/') && out.last() != Some(&b'/') && !out.is_empty() {
            out.push(b'/');
        }
        out
    }

    /// Ends the walk with `EXDEV`, noting where it left.
    fn leave(&mut self, exit: Exit) -> Errno {
        self.exit = Some(exit);
        Errno::EXDEV
    }

    /// The parent of directory `dir`, unless `..` leaves the namespace there.
    fn up(&mut self, ns: &(impl Namespace + ?Sized), dir: Ino) -> Result<Ino, Errno> {
        match ns.parent(dir) {
            Err(Errno::EXDEV) => {
                let rest = self.rest();
                Err(self.leave(Exit::Up { rest }))
            }
            p => p,
        }
    }

    /// Arrives at directory `dir`: it becomes the current one, unless the walk, having
    /// followed a symlink, leaves the namespace there.
    fn arrive(&mut self, ns: &(impl Namespace + ?Sized), dir: Ino) -> Result<(), Errno> {
        if self.links > 0 && ns.covered(dir) {
            let rest = self.rest();
            return Err(self.leave(Exit::Covered { dir, rest }));
        }
        self.dir = dir;
        Ok(())
    }

    /// Takes the next component, dropping finished frames; `None` when nothing is left.
    fn next(&mut self) -> Option<Component> {
        loop {
            let top = self.followed.last_mut().unwrap_or(&mut self.path);
            while top.pos < top.path.len() && top.path[top.pos] == b'/' {
                top.pos += 1;
            }
            if top.pos == top.path.len() {
                // The walk's own path done is the end.
                self.followed.pop()?;
                continue;
            }
            let start = top.pos;
            let end = top.path[start..]
                .iter()
                .position(|&b| b == b'/')
                .map_or(top.path.len(), |i| start + i);
            top.pos = end;
            let trailing = end < top.path.len();
            let last = self.path.exhausted() && self.followed.iter().all(Frame::exhausted);
            return Some(Component {
                start,
                end,
                last,
                trailing,
            });
        }
    }

    fn name(&self, c: &Component) -> &[u8] {
        let top = self.followed.last().unwrap_or(&self.path);
        &top.path[c.start..c.end]
    }

    /// Follows symlink `link` (found in the current directory): pushes its body.
    fn follow(&mut self, ns: &(impl Namespace + ?Sized), link: Ino) -> Result<(), Errno> {
        self.links += 1;
        if self.links > SYMLOOP_MAX {
            return Err(Errno::ELOOP);
        }
        let target = match ns.link_target(link) {
            Err(Errno::EXDEV) => {
                let rest = self.rest();
                return Err(self.leave(Exit::Link { link, rest }));
            }
            t => t?,
        };
        check_path(&target)?;
        let absolute = target[0] == b'/';
        self.followed.push(Frame {
            path: Cow::Owned(target),
            pos: 0,
        });
        if absolute {
            self.arrive(ns, ROOT_INO)?;
        }
        Ok(())
    }

    /// Looks a `Name` component up (ENAMETOOLONG, ENOENT).
    fn lookup(&self, ns: &(impl Namespace + ?Sized), c: &Component) -> Result<(Ino, Kind), Errno> {
        let name = self.name(c);
        if name.len() > NAME_MAX {
            return Err(Errno::ENAMETOOLONG);
        }
        ns.lookup(self.dir, name)?.ok_or(Errno::ENOENT)
    }

    /// Moves into a component that is not the last one: it must be (or lead to) a directory.
    fn step(&mut self, ns: &(impl Namespace + ?Sized), c: &Component) -> Result<(), Errno> {
        match self.name(c) {
            b"." => Ok(()),
            b".." => {
                let parent = self.up(ns, self.dir)?;
                self.arrive(ns, parent)
            }
            _ => match self.lookup(ns, c)? {
                (ino, Kind::Dir) => self.arrive(ns, ino),
                (ino, Kind::Symlink) => self.follow(ns, ino),
                _ => Err(Errno::ENOTDIR),
            },
        }
    }
}

/// Resolves `path` to an inode and its kind. See [`crate::FileSystem::resolve`].
///
/// # Errors
///
/// Linux's, as listed there, and whatever `ns` returns; `EXDEV` if the walk leads out of the
/// namespace ([`exit`]).
pub fn resolve(
    ns: &(impl Namespace + ?Sized),
    start: Ino,
    path: &[u8],
    follow_last: bool,
) -> Result<(Ino, Kind), Errno> {
    resolve_in(&mut Walk::new(ns, start, path)?, ns, follow_last)
}

/// [`resolve`] on walk `w`.
fn resolve_in(
    w: &mut Walk<'_>,
    ns: &(impl Namespace + ?Sized),
    follow_last: bool,
) -> Result<(Ino, Kind), Errno> {
    let mut follow_last = follow_last;
    let mut must_be_dir = false;
    let mut found = (w.dir, Kind::Dir);
    while let Some(c) = w.next() {
        if !c.last {
            w.step(ns, &c)?;
            found = (w.dir, Kind::Dir);
            continue;
        }
        if c.trailing {
            // Linux: a trailing slash means LOOKUP_FOLLOW | LOOKUP_DIRECTORY, and it sticks.
            must_be_dir = true;
            follow_last = true;
        }
        found = match w.name(&c) {
            b"." => (w.dir, Kind::Dir),
            b".." => (w.up(ns, w.dir)?, Kind::Dir),
            _ => match w.lookup(ns, &c)? {
                (ino, Kind::Symlink) if follow_last => {
                    w.follow(ns, ino)?;
                    continue;
                }
                other => other,
            },
        };
        if found.1 == Kind::Dir {
            w.arrive(ns, found.0)?;
        }
    }
    if must_be_dir && found.1 != Kind::Dir {
        return Err(Errno::ENOTDIR);
    }
    Ok(found)
}

/// Where a walk of `path` leaves the namespace, if it does: `Some` when [`resolve`] (or, with
/// `parent_only`, [`resolve_parent`]) would end with `EXDEV` because of it. The walks of
/// `open`, `O_CREAT` included, follow a last symlink as [`resolve`] does with `follow_last`.
///
/// # Errors
///
/// The walk's other errors, met before it leaves.
pub fn exit(
    ns: &(impl Namespace + ?Sized),
    start: Ino,
    path: &[u8],
    follow_last: bool,
    parent_only: bool,
) -> Result<Option<Exit>, Errno> {
    let mut w = Walk::new(ns, start, path)?;
    let r = if parent_only {
        parent_in(&mut w, ns).map(drop)
    } else {
        resolve_in(&mut w, ns, follow_last).map(drop)
    };
    match r {
        Err(Errno::EXDEV) if w.exit.is_some() => Ok(w.exit),
        Err(e) => Err(e),
        Ok(()) => Ok(None),
    }
}

/// Resolves all but the last component of `path`. See [`crate::FileSystem::resolve_parent`].
pub fn resolve_parent(
    ns: &(impl Namespace + ?Sized),
    start: Ino,
    path: &[u8],
) -> Result<ParentPath, Errno> {
    resolve_parent_counting(ns, start, path, &mut 0)
}

/// [`resolve_parent`] that adds the symlinks it follows to `links` (and fails with ELOOP when
/// the total passes the limit), for callers that follow a last-component symlink themselves.
pub fn resolve_parent_counting(
    ns: &(impl Namespace + ?Sized),
    start: Ino,
    path: &[u8],
    links: &mut u32,
) -> Result<ParentPath, Errno> {
    let mut w = Walk::new(ns, start, path)?;
    w.links = *links;
    if w.links > 0 {
        // The target of a last symlink its caller followed: an absolute one arrives at the
        // root.
        w.arrive(ns, w.dir)?;
    }
    let p = parent_in(&mut w, ns);
    *links = w.links;
    p
}

/// [`resolve_parent`] on walk `w`.
fn parent_in(w: &mut Walk<'_>, ns: &(impl Namespace + ?Sized)) -> Result<ParentPath, Errno> {
    while let Some(c) = w.next() {
        if !c.last {
            w.step(ns, &c)?;
            continue;
        }
        let last = match w.name(&c) {
            b"." => Last::Dot,
            b".." => Last::DotDot,
            name => Last::Name(name.to_vec()),
        };
        return Ok(ParentPath {
            dir: w.dir,
            last,
            trailing_slash: c.trailing,
        });
    }
    // Nothing but slashes: the root.
    Ok(ParentPath {
        dir: ROOT_INO,
        last: Last::Root,
        trailing_slash: false,
    })
}

/// Where `open(O_CREAT)` acts: the directory, the name, and the existing entry if any.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CreateTarget {
    /// The directory the file is (or will be) in.
    pub dir: Ino,
    /// Its name there.
    pub name: Vec<u8>,
    /// The existing regular file or device of that name, if any.
    pub existing: Option<Ino>,
}

/// The target of symlink `link`, met as the last component of a path, counted in `links`
/// (ELOOP past [`SYMLOOP_MAX`]): the path to resolve next, from the link's directory.
fn last_link_target(
    ns: &(impl Namespace + ?Sized),
    link: Ino,
    links: &mut u32,
) -> Result<Vec<u8>, Errno> {
    *links += 1;
    if *links > SYMLOOP_MAX {
        return Err(Errno::ELOOP);
    }
    let target = ns.link_target(link)?;
    check_path(&target)?;
    Ok(target)
}

/// Plans `open(O_CREAT)`: finds the parent, follows a symlink in the last component (Linux
/// creates the target of a dangling symlink unless `O_EXCL`), and reports an existing entry.
pub fn plan_create(
    ns: &(impl Namespace + ?Sized),
    start: Ino,
    path: &[u8],
    exclusive: bool,
) -> Result<CreateTarget, Errno> {
    let mut links = 0;
    let mut start = start;
    let mut path: Cow<'_, [u8]> = Cow::Borrowed(path);
    loop {
        let p = resolve_parent_counting(ns, start, &path, &mut links)?;
        let name = match p.last {
            Last::Name(n) => n,
            _ if exclusive => return Err(Errno::EEXIST),
            _ => return Err(Errno::EISDIR),
        };
        if p.trailing_slash {
            return Err(Errno::EISDIR);
        }
        if name.len() > NAME_MAX {
            return Err(Errno::ENAMETOOLONG);
        }
        match ns.lookup(p.dir, &name)? {
            None => {
                return Ok(CreateTarget {
                    dir: p.dir,
                    name,
                    existing: None,
                })
            }
            Some(_) if exclusive => return Err(Errno::EEXIST),
            Some((_, Kind::Dir)) => return Err(Errno::EISDIR),
            Some((ino, Kind::Symlink)) => {
                path = Cow::Owned(last_link_target(ns, ino, &mut links)?);
                start = p.dir;
            }
            Some((ino, _)) => {
                return Ok(CreateTarget {
                    dir: p.dir,
                    name,
                    existing: Some(ino),
                })
            }
        }
    }
}

/// Where an `open` without `O_CREAT` acts (see [`plan_open`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OpenTarget {
    /// Entry `name` of directory `dir`, which named `ino` when planned.
    Entry {
        /// The directory holding the entry.
        dir: Ino,
        /// Its name there.
        name: Vec<u8>,
        /// The inode it named when planned.
        ino: Ino,
        /// The path ended in `/` (the entry must be a directory).
        must_be_dir: bool,
    },
    /// A directory reached by `.`, `..` or `/`, which no rename can replace by another.
    Dir(Ino),
}

/// Plans `open` without `O_CREAT`: resolves all but the last component, follows symlinks in
/// the last one (when `follow_last` or the path ends in `/`), and reports the directory and
/// name the file was found under, so the open can re-read that entry when it is applied.
pub fn plan_open(
    ns: &(impl Namespace + ?Sized),
    start: Ino,
    path: &[u8],
    follow_last: bool,
) -> Result<OpenTarget, Errno> {
    let mut links = 0;
    let mut start = start;
    let mut path: Cow<'_, [u8]> = Cow::Borrowed(path);
    let mut follow_last = follow_last;
    let mut must_be_dir = false;
    loop {
        let p = resolve_parent_counting(ns, start, &path, &mut links)?;
        if p.trailing_slash {
            // As in [`resolve`]: a trailing slash means follow, and must be a directory.
            must_be_dir = true;
            follow_last = true;
        }
        let name = match p.last {
            Last::Name(n) => n,
            Last::Dot | Last::Root => return Ok(OpenTarget::Dir(p.dir)),
            Last::DotDot => return Ok(OpenTarget::Dir(ns.parent(p.dir)?)),
        };
        if name.len() > NAME_MAX {
            return Err(Errno::ENAMETOOLONG);
        }
        match ns.lookup(p.dir, &name)?.ok_or(Errno::ENOENT)? {
            (ino, Kind::Symlink) if follow_last => {
                path = Cow::Owned(last_link_target(ns, ino, &mut links)?);
                start = p.dir;
            }
            (_, kind) if must_be_dir && kind != Kind::Dir => return Err(Errno::ENOTDIR),
            (ino, _) => {
                return Ok(OpenTarget::Entry {
                    dir: p.dir,
                    name,
                    ino,
                    must_be_dir,
                })
            }
        }
    }
}

/// Plans an operation that adds a new name (`mkdir`, `symlink`, `mknod`, the new side of
/// `link`): `.`, `..` and `/` are EEXIST (Linux `filename_create`).
pub fn plan_new_name(
    ns: &(impl Namespace + ?Sized),
    start: Ino,
    path: &[u8],
) -> Result<(Ino, Vec<u8>, bool), Errno> {
    let p = resolve_parent(ns, start, path)?;
    match p.last {
        Last::Name(n) => Ok((p.dir, n, p.trailing_slash)),
        _ => Err(Errno::EEXIST),
    }
}

/// The name `rmdir` acts on: EINVAL for `.`, ENOTEMPTY for `..`, EBUSY for `/`.
pub fn rmdir_name(last: Last) -> Result<Vec<u8>, Errno> {
    match last {
        Last::Name(n) => Ok(n),
        Last::Dot => Err(Errno::EINVAL),
        Last::DotDot => Err(Errno::ENOTEMPTY),
        Last::Root => Err(Errno::EBUSY),
    }
}

/// The names `rename` acts on: EBUSY if the source is `.`, `..` or `/`; the same for the
/// target, or EEXIST with NOREPLACE.
pub fn rename_names(old: Last, new: Last, flags: u32) -> Result<(Vec<u8>, Vec<u8>), Errno> {
    let Last::Name(old) = old else {
        return Err(Errno::EBUSY);
    };
    let Last::Name(new) = new else {
        return Err(if flags & RENAME_NOREPLACE != 0 {
            Errno::EEXIST
        } else {
            Errno::EBUSY
        });
    };
    Ok((old, new))
}
