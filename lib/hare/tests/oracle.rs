//! Hare against NR-FS: random operations by several clients over 1-4 servers, messages
//! delivered in random orders, every answer compared with NR-FS's sequential `FileSystem`
//! given the same operations.
//!
//! Allowed differences, as the client documents them: inode numbers (mapped one to one as
//! they appear), and a distributed directory's size and times.

mod common;

use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::rc::Rc;

use abi::Errno;
use common::{run, run_all, world, HClient, Rng, ROOT_ATTRS};
use hare::{Attrs, Fd, Ino, Kind, OpenFlags, Stat, Techniques, Timespec, ROOT_INO};
use nrfs::{CreateFlags, FileSystem};
use proptest::prelude::*;

#[derive(Clone, Debug)]
enum Op {
    Open {
        path: String,
        flags: OpenFlags,
    },
    Close {
        slot: usize,
    },
    Read {
        slot: usize,
        len: usize,
    },
    Write {
        slot: usize,
        len: usize,
        byte: u8,
    },
    Pwrite {
        slot: usize,
        off: u64,
        len: usize,
        byte: u8,
    },
    Pread {
        slot: usize,
        off: u64,
        len: usize,
    },
    Ftruncate {
        slot: usize,
        size: u64,
    },
    Fstat {
        slot: usize,
    },
    Lseek {
        slot: usize,
        offset: i64,
        whence: u32,
    },
    /// Gives client `to` a descriptor of the same open file description (a fork).
    Share {
        slot: usize,
        to: usize,
    },
    Mkdir {
        path: String,
    },
    Rmdir {
        path: String,
    },
    Unlink {
        path: String,
    },
    Rename {
        from: String,
        to: String,
        /// `renameat2` flags: NOREPLACE (1), EXCHANGE (2), both (EINVAL).
        flags: u32,
    },
    Symlink {
        target: String,
        path: String,
    },
    Mkfifo {
        path: String,
    },
    Readlink {
        path: String,
    },
    Stat {
        path: String,
        follow: bool,
    },
    Chmod {
        path: String,
        mode: u32,
    },
    Truncate {
        path: String,
        size: u64,
    },
    Chown {
        path: String,
        follow: bool,
        uid: Option<u32>,
        gid: Option<u32>,
    },
    Utimens {
        path: String,
        follow: bool,
        atime: Option<i64>,
        mtime: Option<i64>,
    },
    List {
        path: String,
    },
    Link {
        from: String,
        to: String,
        follow: bool,
    },
}

/// One answer, in a form both sides produce.
#[derive(Clone, Debug, PartialEq)]
enum Answer {
    Unit(Result<(), Errno>),
    Count(Result<usize, Errno>),
    Data(Result<Vec<u8>, Errno>),
    Stat(Result<Stat, Errno>),
    List(Result<Vec<(Vec<u8>, Ino, Kind)>, Errno>),
    Target(Result<Vec<u8>, Errno>),
    Offset(Result<u64, Errno>),
    /// No open descriptor to act on (both sides agree on which are open).
    Skip,
}

fn path_strategy(names: &'static [&'static str]) -> impl Strategy<Value = String> {
    let depth = prop_oneof![5 => Just(1usize), 4 => Just(2usize), 1 => Just(3usize)];
    (
        depth.prop_flat_map(move |d| prop::collection::vec(prop::sample::select(names), d)),
        0..8u8,
    )
        .prop_map(|(parts, trailing)| {
            let mut p = format!("/{}", parts.join("/"));
            if trailing == 0 {
                p.push('/');
            }
            p
        })
}

const NAMES: &[&str] = &["a", "b", "a", "b", "c", "..", "a", "b", "."];

fn op_strategy(names: &'static [&'static str]) -> impl Strategy<Value = Op> {
    let path = move || path_strategy(names);
    let flags = (
        0..4u8,
        any::<bool>(),
        any::<bool>(),
        any::<bool>(),
        0..4u8,
        any::<bool>(),
        0..3u8,
    )
        .prop_map(
            |(create, exclusive, truncate, append, nofollow, list, read_only)| OpenFlags {
                create: create != 0,
                exclusive: exclusive && create != 0,
                truncate: truncate && create != 0,
                append,
                nofollow: nofollow == 0,
                list,
                read_only: read_only == 0,
            },
        );
    let slot = 0..4usize;
    prop_oneof![
        4 => (path(), flags).prop_map(|(path, flags)| Op::Open { path, flags }),
        2 => slot.clone().prop_map(|slot| Op::Close { slot }),
        2 => (slot.clone(), 0..9000usize).prop_map(|(slot, len)| Op::Read { slot, len }),
        3 => (slot.clone(), 0..9000usize, any::<u8>()).prop_map(|(slot, len, byte)| Op::Write { slot, len, byte }),
        2 => (slot.clone(), 0..20000u64, 0..9000usize, any::<u8>())
            .prop_map(|(slot, off, len, byte)| Op::Pwrite { slot, off, len, byte }),
        2 => (slot.clone(), 0..20000u64, 0..9000usize).prop_map(|(slot, off, len)| Op::Pread { slot, off, len }),
        1 => (slot.clone(), 0..20000u64).prop_map(|(slot, size)| Op::Ftruncate { slot, size }),
        1 => slot.clone().prop_map(|slot| Op::Fstat { slot }),
        1 => (slot.clone(), -5000..20000i64, 0..4u32).prop_map(|(slot, offset, whence)| Op::Lseek { slot, offset, whence }),
        2 => (slot, 0..3usize).prop_map(|(slot, to)| Op::Share { slot, to }),
        3 => path().prop_map(|path| Op::Mkdir { path }),
        2 => path().prop_map(|path| Op::Rmdir { path }),
        2 => path().prop_map(|path| Op::Unlink { path }),
        2 => (path(), path(), 0..4u32).prop_map(|(from, to, flags)| Op::Rename { from, to, flags }),
        1 => (path(), path()).prop_map(|(target, path)| Op::Symlink { target, path }),
        1 => path().prop_map(|path| Op::Mkfifo { path }),
        1 => (path(), path(), any::<bool>()).prop_map(|(from, to, follow)| Op::Link { from, to, follow }),
        1 => path().prop_map(|path| Op::Readlink { path }),
        2 => (path(), any::<bool>()).prop_map(|(path, follow)| Op::Stat { path, follow }),
        1 => (path(), prop::sample::select(&[0o755u32, 0o700, 0o644, 0o600][..]))
            .prop_map(|(path, mode)| Op::Chmod { path, mode }),
        1 => (path(), 0..20000u64).prop_map(|(path, size)| Op::Truncate { path, size }),
        1 => (path(), any::<bool>(), prop::option::of(0..3u32), prop::option::of(0..3u32))
            .prop_map(|(path, follow, uid, gid)| Op::Chown { path, follow, uid, gid }),
        1 => (path(), any::<bool>(), prop::option::of(0..100i64), prop::option::of(0..100i64))
            .prop_map(|(path, follow, atime, mtime)| Op::Utimens { path, follow, atime, mtime }),
        5 => path().prop_map(|path| Op::List { path }),
    ]
}

const FILE_ATTRS: Attrs = Attrs::new(0o644, 1000, 1000);
const DIR_ATTRS: Attrs = Attrs::new(0o755, 1000, 1000);

/// The oracle's open file description.
#[derive(Clone, Debug)]
struct OFile {
    ino: Ino,
    kind: Kind,
    /// Shared by the descriptors of one description.
    offset: Rc<Cell<u64>>,
    append: bool,
    /// `O_RDONLY`: writes are `EBADF` (the Hare client's check; NR-FS leaves it to the
    /// kernel).
    read_only: bool,
}

/// NR-FS and the inode numbers the test gives it: `FileSystem::unused_ino` reuses the
/// number of a freed last inode, Hare never reuses one, so the oracle counts upwards, as the
/// kernel does.
struct Oracle {
    fs: FileSystem,
    last: Ino,
}

impl Oracle {
    fn new() -> Self {
        Self {
            fs: FileSystem::new(ROOT_ATTRS, Timespec::new(0, 0)),
            last: ROOT_INO,
        }
    }

    /// A number never used before.
    fn fresh(&mut self) -> Ino {
        self.last += 1;
        self.last
    }
}

/// Applies `op` to NR-FS; `fds` are the oracle's descriptors in open order.
fn oracle(o: &mut Oracle, fds: &mut Vec<OFile>, op: &Op, now: Timespec) -> Answer {
    let ino = o.fresh();
    let fs = &mut o.fs;
    let pick = |fds: &Vec<OFile>, slot: usize| (!fds.is_empty()).then(|| slot % fds.len());
    match op {
        Op::Open { path, flags } => {
            let p = path.as_bytes();
            let r = if flags.create {
                let cf = CreateFlags {
                    exclusive: flags.exclusive,
                    open: true,
                };
                fs.create(ROOT_INO, p, ino, FILE_ATTRS, cf, now)
                    .map(|c| c.ino)
            } else {
                fs.open_path(ROOT_INO, p, !flags.nofollow)
            };
            Answer::Unit(r.map(|ino| {
                let kind = fs.stat(ino).expect("open inode").kind;
                if flags.truncate && kind == Kind::File {
                    fs.truncate(ino, 0, now).expect("truncate");
                }
                fds.push(OFile {
                    ino,
                    kind,
                    offset: Rc::new(Cell::new(0)),
                    append: flags.append,
                    read_only: flags.read_only,
                });
            }))
        }
        Op::Close { slot } => match pick(fds, *slot) {
            None => Answer::Skip,
            Some(i) => {
                let f = fds.remove(i);
                // The description closes with its last descriptor.
                Answer::Unit(if Rc::strong_count(&f.offset) == 1 {
                    fs.close(f.ino)
                } else {
                    Ok(())
                })
            }
        },
        Op::Read { slot, len } => match pick(fds, *slot) {
            None => Answer::Skip,
            Some(i) => {
                let mut buf = vec![0; *len];
                let f = &fds[i];
                let r = fs.read(f.ino, f.offset.get(), &mut buf).map(|n| {
                    f.offset.set(f.offset.get() + n as u64);
                    buf.truncate(n);
                    buf
                });
                Answer::Data(r)
            }
        },
        Op::Pread { slot, off, len } => match pick(fds, *slot) {
            None => Answer::Skip,
            Some(i) => {
                let mut buf = vec![0; *len];
                Answer::Data(fs.read(fds[i].ino, *off, &mut buf).map(|n| {
                    buf.truncate(n);
                    buf
                }))
            }
        },
        Op::Write { slot, len, byte } => match pick(fds, *slot) {
            None => Answer::Skip,
            Some(i) if fds[i].read_only && fds[i].kind != Kind::Dir => {
                Answer::Count(Err(Errno::EBADF))
            }
            Some(i) => {
                let data = vec![*byte; *len];
                let f = &fds[i];
                let r = if f.append {
                    fs.append(f.ino, &data, now).map(|at| (at, data.len()))
                } else {
                    fs.write(f.ino, f.offset.get(), &data, now)
                        .map(|n| (f.offset.get(), n))
                };
                Answer::Count(r.map(|(at, n)| {
                    // Linux moves the offset (to the end, with O_APPEND) only if it wrote.
                    if n > 0 {
                        f.offset.set(at + n as u64);
                    }
                    n
                }))
            }
        },
        Op::Pwrite {
            slot,
            off,
            len,
            byte,
        } => match pick(fds, *slot) {
            None => Answer::Skip,
            Some(i) if fds[i].read_only && fds[i].kind != Kind::Dir => {
                Answer::Count(Err(Errno::EBADF))
            }
            Some(i) => Answer::Count(fs.write(fds[i].ino, *off, &vec![*byte; *len], now)),
        },
        Op::Ftruncate { slot, size } => match pick(fds, *slot) {
            None => Answer::Skip,
            Some(i) => Answer::Unit(if fds[i].kind == Kind::Dir {
                Err(Errno::EISDIR)
            } else {
                fs.truncate(fds[i].ino, *size, now)
            }),
        },
        Op::Fstat { slot } => match pick(fds, *slot) {
            None => Answer::Skip,
            Some(i) => Answer::Stat(fs.stat(fds[i].ino)),
        },
        Op::Lseek {
            slot,
            offset,
            whence,
        } => match pick(fds, *slot) {
            None => Answer::Skip,
            Some(i) => {
                let f = &fds[i];
                let base = match whence {
                    0 => Some(0),
                    1 => Some(f.offset.get() as i64),
                    // tmpfs: no SEEK_END in a directory.
                    2 if f.kind != Kind::Dir => {
                        Some(fs.stat(f.ino).expect("open inode").size as i64)
                    }
                    _ => None,
                };
                Answer::Offset(match base.map(|b| b + offset) {
                    Some(new) if new >= 0 => {
                        f.offset.set(new as u64);
                        Ok(new as u64)
                    }
                    _ => Err(Errno::EINVAL),
                })
            }
        },
        Op::Share { .. } => unreachable!("two clients: check_sequence does it"),
        Op::Mkdir { path } => Answer::Unit(
            fs.mkdir(ROOT_INO, path.as_bytes(), ino, DIR_ATTRS, now)
                .map(|_| ()),
        ),
        Op::Rmdir { path } => Answer::Unit(fs.rmdir(ROOT_INO, path.as_bytes(), now)),
        Op::Unlink { path } => Answer::Unit(fs.unlink(ROOT_INO, path.as_bytes(), now)),
        Op::Rename { from, to, flags } => Answer::Unit(fs.rename(
            ROOT_INO,
            from.as_bytes(),
            ROOT_INO,
            to.as_bytes(),
            *flags,
            now,
        )),
        Op::Symlink { target, path } => Answer::Unit(
            fs.symlink(
                target.as_bytes(),
                ROOT_INO,
                path.as_bytes(),
                ino,
                FILE_ATTRS,
                now,
            )
            .map(|_| ()),
        ),
        Op::Mkfifo { path } => Answer::Unit(
            fs.mkfifo(ROOT_INO, path.as_bytes(), ino, FILE_ATTRS, now)
                .map(|_| ()),
        ),
        Op::Link { from, to, follow } => Answer::Unit(fs.link(
            ROOT_INO,
            from.as_bytes(),
            ROOT_INO,
            to.as_bytes(),
            *follow,
            now,
        )),
        Op::Readlink { path } => Answer::Target(
            fs.resolve(ROOT_INO, path.as_bytes(), false)
                .and_then(|ino| fs.readlink(ino)),
        ),
        Op::Stat { path, follow } => Answer::Stat(
            fs.resolve(ROOT_INO, path.as_bytes(), *follow)
                .and_then(|ino| fs.stat(ino)),
        ),
        Op::Chmod { path, mode } => Answer::Unit(
            fs.resolve(ROOT_INO, path.as_bytes(), true)
                .and_then(|ino| fs.chmod(ino, *mode, now)),
        ),
        Op::Truncate { path, size } => Answer::Unit(
            fs.resolve(ROOT_INO, path.as_bytes(), true)
                .and_then(|ino| fs.truncate(ino, *size, now)),
        ),
        Op::Chown {
            path,
            follow,
            uid,
            gid,
        } => Answer::Unit(
            fs.resolve(ROOT_INO, path.as_bytes(), *follow)
                .and_then(|ino| fs.chown(ino, *uid, *gid, now)),
        ),
        Op::Utimens {
            path,
            follow,
            atime,
            mtime,
        } => Answer::Unit(
            fs.resolve(ROOT_INO, path.as_bytes(), *follow)
                .and_then(|ino| {
                    let t = |s: &Option<i64>| s.map(|s| Timespec::new(s, 0));
                    fs.set_times(ino, t(atime), t(mtime), now)
                }),
        ),
        Op::List { path } => Answer::List(
            fs.resolve(ROOT_INO, path.as_bytes(), true)
                .and_then(|ino| fs.read_dir(ino, 0, usize::MAX))
                .map(|v| {
                    let mut v: Vec<_> = v
                        .into_iter()
                        .filter(|e| e.name != b"." && e.name != b"..")
                        .map(|e| (e.name, e.ino, e.kind))
                        .collect();
                    v.sort();
                    v
                }),
        ),
    }
}

/// A client's open file descriptions, in open order (so slots match the oracle's).
#[derive(Default)]
struct HFiles(Vec<(Fd, Kind)>);

/// Applies `op` through Hare client `c`.
async fn apply(c: &mut HClient, fds: &mut HFiles, op: &Op, now: Timespec) -> Answer {
    let pick = |fds: &HFiles, slot: usize| (!fds.0.is_empty()).then(|| slot % fds.0.len());
    match op {
        Op::Open { path, flags } => {
            let r = c
                .open(ROOT_INO, path.as_bytes(), *flags, FILE_ATTRS, now)
                .await;
            let r = match r {
                Ok(fd) => match c.fstat(fd).await {
                    Ok(st) => {
                        fds.0.push((fd, st.kind));
                        Ok(())
                    }
                    Err(e) => panic!("fstat of a new descriptor: {e:?}"),
                },
                Err(e) => Err(e),
            };
            Answer::Unit(r)
        }
        Op::Close { slot } => match pick(fds, *slot) {
            None => Answer::Skip,
            Some(i) => {
                let (fd, _) = fds.0.remove(i);
                Answer::Unit(c.close(fd).await)
            }
        },
        Op::Read { slot, len } => match pick(fds, *slot) {
            None => Answer::Skip,
            Some(i) => {
                let mut buf = vec![0; *len];
                Answer::Data(c.read(fds.0[i].0, &mut buf).await.map(|n| {
                    buf.truncate(n);
                    buf
                }))
            }
        },
        Op::Pread { slot, off, len } => match pick(fds, *slot) {
            None => Answer::Skip,
            Some(i) => {
                let mut buf = vec![0; *len];
                Answer::Data(c.pread(fds.0[i].0, &mut buf, *off).await.map(|n| {
                    buf.truncate(n);
                    buf
                }))
            }
        },
        Op::Write { slot, len, byte } => match pick(fds, *slot) {
            None => Answer::Skip,
            Some(i) => Answer::Count(c.write(fds.0[i].0, &vec![*byte; *len], now).await),
        },
        Op::Pwrite {
            slot,
            off,
            len,
            byte,
        } => match pick(fds, *slot) {
            None => Answer::Skip,
            Some(i) => Answer::Count(c.pwrite(fds.0[i].0, &vec![*byte; *len], *off, now).await),
        },
        Op::Ftruncate { slot, size } => match pick(fds, *slot) {
            None => Answer::Skip,
            Some(i) => Answer::Unit(c.ftruncate(fds.0[i].0, *size, now).await),
        },
        Op::Fstat { slot } => match pick(fds, *slot) {
            None => Answer::Skip,
            Some(i) => Answer::Stat(c.fstat(fds.0[i].0).await),
        },
        Op::Lseek {
            slot,
            offset,
            whence,
        } => match pick(fds, *slot) {
            None => Answer::Skip,
            Some(i) => Answer::Offset(c.lseek(fds.0[i].0, *offset, *whence).await),
        },
        Op::Share { .. } => unreachable!("two clients: check_sequence does it"),
        Op::Mkdir { path } => {
            let flag = MKDIR_FLAG.with(|f| f.get());
            Answer::Unit(
                c.mkdir(ROOT_INO, path.as_bytes(), DIR_ATTRS, flag, now)
                    .await,
            )
        }
        Op::Rmdir { path } => Answer::Unit(c.rmdir(ROOT_INO, path.as_bytes(), now).await),
        Op::Unlink { path } => Answer::Unit(c.unlink(ROOT_INO, path.as_bytes(), now).await),
        Op::Rename { from, to, flags } => Answer::Unit(
            c.rename(
                ROOT_INO,
                from.as_bytes(),
                ROOT_INO,
                to.as_bytes(),
                *flags,
                now,
            )
            .await,
        ),
        Op::Symlink { target, path } => Answer::Unit(
            c.symlink(
                target.as_bytes(),
                ROOT_INO,
                path.as_bytes(),
                FILE_ATTRS,
                now,
            )
            .await,
        ),
        Op::Mkfifo { path } => {
            Answer::Unit(c.mkfifo(ROOT_INO, path.as_bytes(), FILE_ATTRS, now).await)
        }
        Op::Link { from, to, follow } => Answer::Unit(
            c.link(
                (ROOT_INO, from.as_bytes()),
                (ROOT_INO, to.as_bytes()),
                *follow,
                now,
            )
            .await,
        ),
        Op::Readlink { path } => Answer::Target(c.readlink(ROOT_INO, path.as_bytes()).await),
        Op::Stat { path, follow } => Answer::Stat(c.stat(ROOT_INO, path.as_bytes(), *follow).await),
        Op::Chmod { path, mode } => {
            Answer::Unit(c.chmod(ROOT_INO, path.as_bytes(), *mode, now).await)
        }
        Op::Truncate { path, size } => {
            Answer::Unit(c.truncate(ROOT_INO, path.as_bytes(), *size, now).await)
        }
        Op::Chown {
            path,
            follow,
            uid,
            gid,
        } => Answer::Unit(
            c.chown(ROOT_INO, path.as_bytes(), *follow, (*uid, *gid), now)
                .await,
        ),
        Op::Utimens {
            path,
            follow,
            atime,
            mtime,
        } => {
            let t = |s: &Option<i64>| s.map(|s| Timespec::new(s, 0));
            Answer::Unit(
                c.utimens(
                    ROOT_INO,
                    path.as_bytes(),
                    *follow,
                    (t(atime), t(mtime)),
                    now,
                )
                .await,
            )
        }
        Op::List { path } => {
            // As `opendir` opens: an ordinary directory's first entries come with the open.
            let flags = OpenFlags {
                list: true,
                ..OpenFlags::default()
            };
            let r = match c
                .open(ROOT_INO, path.as_bytes(), flags, FILE_ATTRS, now)
                .await
            {
                Ok(fd) => {
                    let r = c.read_dir(fd).await;
                    c.close(fd).await.expect("close a listed directory");
                    r.map(|v| v.iter().map(|(n, e)| (n.to_vec(), e.ino, e.kind)).collect())
                }
                Err(e) => Err(e),
            };
            Answer::List(r)
        }
    }
}

/// Inode numbers of Hare and of the oracle, matched one to one as they appear.
#[derive(Default)]
struct InoMap {
    to_oracle: BTreeMap<Ino, Ino>,
    to_hare: BTreeMap<Ino, Ino>,
}

impl InoMap {
    fn same(&mut self, h: Ino, o: Ino) -> bool {
        match (self.to_oracle.get(&h), self.to_hare.get(&o)) {
            (None, None) => {
                self.to_oracle.insert(h, o);
                self.to_hare.insert(o, h);
                true
            }
            (Some(&x), Some(&y)) => x == o && y == h,
            _ => false,
        }
    }
}

/// Whether Hare's answer `h` is the oracle's `o` (see the allowed differences above).
fn agree(h: &Answer, o: &Answer, map: &mut InoMap, distributed: bool) -> bool {
    match (h, o) {
        (Answer::Stat(Ok(a)), Answer::Stat(Ok(b))) => {
            let loose = distributed && a.kind == Kind::Dir;
            map.same(a.ino, b.ino)
                && Stat {
                    ino: b.ino,
                    size: if loose { b.size } else { a.size },
                    mtime: if loose { b.mtime } else { a.mtime },
                    ctime: if loose { b.ctime } else { a.ctime },
                    ..*a
                } == *b
        }
        (Answer::List(Ok(a)), Answer::List(Ok(b))) => {
            a.len() == b.len()
                && a.iter()
                    .zip(b)
                    .all(|(x, y)| x.0 == y.0 && x.2 == y.2 && map.same(x.1, y.1))
        }
        _ => h == o,
    }
}

/// `Op::Share` on both sides: client `who`'s descriptor in `slot` gets a twin at client `to`.
fn share(
    net: &Rc<RefCell<common::Net>>,
    clients: &mut [HClient],
    hfds: &mut [HFiles],
    ofds: &mut [Vec<OFile>],
    (who, slot, to): (usize, usize, usize),
    rng: &mut Rng,
) -> (Answer, Answer) {
    if ofds[who].is_empty() {
        return (Answer::Skip, Answer::Skip);
    }
    let twin = ofds[who][slot % ofds[who].len()].clone();
    ofds[to].push(twin);
    let (fd, kind) = hfds[who].0[slot % hfds[who].0.len()];
    let got = match run(net, clients[who].share(fd), rng) {
        Ok(s) => {
            let fd = clients[to].adopt(s);
            hfds[to].0.push((fd, kind));
            Answer::Unit(Ok(()))
        }
        Err(e) => Answer::Unit(Err(e)),
    };
    (Answer::Unit(Ok(())), got)
}

thread_local! {
    /// The flag `Op::Mkdir` passes to `Client::mkdir` (ask for a distributed directory).
    static MKDIR_FLAG: Cell<bool> = const { Cell::new(false) };
}

/// Any mix of §5.4's techniques on and off.
fn techniques_strategy() -> impl Strategy<Value = Techniques> {
    (
        any::<bool>(),
        any::<bool>(),
        any::<bool>(),
        any::<bool>(),
        any::<bool>(),
    )
        .prop_map(
            |(distribution, broadcast, lookup_cache, affinity, direct)| Techniques {
                distribution,
                broadcast,
                lookup_cache,
                affinity,
                direct,
            },
        )
}

fn check_sequence(
    servers: usize,
    distribute: bool,
    near_all: bool,
    ops: &[(usize, Op)],
    seed: u64,
) {
    check_resized_sequence(servers, distribute, near_all, ops, seed, None);
}

/// [`check_sequence`], the fleet resized to `resize.1` servers before step `resize.0` (while no
/// request is in flight, `common::resize`).
fn check_resized_sequence(
    servers: usize,
    distribute: bool,
    near_all: bool,
    ops: &[(usize, Op)],
    seed: u64,
    resize: Option<(usize, usize)>,
) {
    const CLIENTS: usize = 3;
    let (net, mut clients) = world(servers, CLIENTS, distribute, near_all);
    let mut fs = Oracle::new();
    let mut ofds: Vec<Vec<OFile>> = vec![Vec::new(); CLIENTS];
    let mut hfds: Vec<HFiles> = (0..CLIENTS).map(|_| HFiles::default()).collect();
    let mut map = InoMap::default();
    let mut rng = Rng::new(seed);
    // A starting tree, so that most random operations find something: /a, /b, /a/a,
    // /b/b, /b/a/ and the symlink /c -> a.
    let create = OpenFlags {
        create: true,
        ..OpenFlags::default()
    };
    let mut prelude: Vec<(usize, Op)> = vec![
        (0, Op::Mkdir { path: "/a".into() }),
        (1, Op::Mkdir { path: "/b".into() }),
        (
            2,
            Op::Open {
                path: "/a/a".into(),
                flags: create,
            },
        ),
        (
            0,
            Op::Open {
                path: "/b/b".into(),
                flags: create,
            },
        ),
        (
            1,
            Op::Mkdir {
                path: "/b/a".into(),
            },
        ),
        (
            2,
            Op::Symlink {
                target: "a".into(),
                path: "/c".into(),
            },
        ),
        (
            0,
            Op::Write {
                slot: 1,
                len: 5000,
                byte: 7,
            },
        ),
        (1, Op::Close { slot: 0 }),
        (2, Op::Close { slot: 0 }),
    ];
    prelude.extend_from_slice(ops);
    for (step, (who, op)) in prelude.iter().enumerate() {
        if let Some((at, count)) = resize {
            if at == step {
                common::resize(&net, &mut clients, count);
            }
        }
        let now = Timespec::new(step as i64 + 1, 0);
        let (want, got) = if let Op::Share { slot, to } = op {
            share(
                &net,
                &mut clients,
                &mut hfds,
                &mut ofds,
                (*who, *slot, *to),
                &mut rng,
            )
        } else {
            let want = oracle(&mut fs, &mut ofds[*who], op, now);
            let got = run(
                &net,
                apply(&mut clients[*who], &mut hfds[*who], op, now),
                &mut rng,
            );
            (want, got)
        };
        let loose = distribute || MKDIR_FLAG.with(|f| f.get());
        assert!(
            agree(&got, &want, &mut map, loose),
            "step {step}: client {who} {op:?}\n  hare:  {got:?}\n  nrfs:  {want:?}"
        );
    }
    // Close everything: every inode and block that is not named must be gone.
    for who in 0..CLIENTS {
        for (fd, _) in std::mem::take(&mut hfds[who].0) {
            run(&net, clients[who].close(fd), &mut rng).expect("close");
        }
        for f in std::mem::take(&mut ofds[who]) {
            if Rc::strong_count(&f.offset) == 1 {
                fs.fs.close(f.ino).expect("oracle close");
            }
        }
    }
    // The closes were posted: the servers have them once everything is delivered.
    net.borrow_mut().settle();
    let n = net.borrow();
    let inodes: usize = n.servers.iter().map(|s| s.inodes()).sum();
    assert_eq!(
        inodes as u64,
        fs.fs.statfs().inodes,
        "inodes held after closing all"
    );
    let free: u64 = n.servers.iter().map(|s| s.stats().free_blocks).sum();
    let held = servers as u64 * common::BLOCKS_PER_SERVER as u64 - free;
    assert_eq!(held, fs.fs.statfs().pages, "blocks held after closing all");
}

/// Cases per test: 256, or `PROPTEST_CASES` (a longer campaign: `PROPTEST_CASES=40000 cargo
/// test --release -p hare --test oracle`, about a minute).
fn cases() -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(256)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(), ..ProptestConfig::default() })]

    /// One operation at a time, by any of three clients (so lookup caches must be
    /// invalidated), over 1-4 servers, with ordinary or distributed directories (all, or
    /// those made with mkdir's flag), lookup caches large or of 1-3 entries, and any of
    /// §5.4's techniques switched off: the answers never change.
    #[test]
    fn sequential_operations_agree_with_nrfs(
        servers in 1..5usize,
        distribute in any::<bool>(),
        flag in any::<bool>(),
        near_all in any::<bool>(),
        cache in prop_oneof![Just(1024usize), 1..4usize],
        techniques in techniques_strategy(),
        ops in prop::collection::vec((0..3usize, op_strategy(NAMES)), 1..60),
        seed in any::<u64>(),
    ) {
        common::CACHE_ENTRIES.with(|c| c.set(cache));
        common::TECHNIQUES.with(|t| t.set(techniques));
        MKDIR_FLAG.with(|f| f.set(flag));
        check_sequence(servers, distribute, near_all, &ops, seed);
    }

    /// The same with the number of servers changed in the middle (§6.1.1: shards and their
    /// inodes, entries, shared descriptions and free blocks move to their new owners; caches
    /// and open descriptors stay): the answers still never change, and nothing is lost or
    /// left.
    #[test]
    fn operations_agree_with_nrfs_across_a_resize(
        servers in 1..5usize,
        after in 1..6usize,
        distribute in any::<bool>(),
        flag in any::<bool>(),
        near_all in any::<bool>(),
        techniques in techniques_strategy(),
        ops in prop::collection::vec((0..3usize, op_strategy(NAMES)), 1..60),
        at in 0..70usize,
        seed in any::<u64>(),
    ) {
        common::CACHE_ENTRIES.with(|c| c.set(1024));
        common::TECHNIQUES.with(|t| t.set(techniques));
        MKDIR_FLAG.with(|f| f.set(flag));
        check_resized_sequence(servers, distribute, near_all, &ops, seed, Some((at, after)));
    }

    /// Clients working at the same time in their own directories, messages interleaved at
    /// random: each client's answers are those of NR-FS given its operations.
    #[test]
    fn concurrent_clients_agree_with_nrfs(
        servers in 1..5usize,
        distribute in any::<bool>(),
        scripts in prop::collection::vec(prop::collection::vec(op_strategy(&["a", "b", "c"]), 1..25), 2..4),
        seed in any::<u64>(),
    ) {
        let (net, mut clients) = world(servers, scripts.len(), distribute, true);
        let mut rng = Rng::new(seed);
        let mut fs = Oracle::new();
        let t0 = Timespec::new(0, 0);
        // Each client's directory, made by client 0 first, on both sides.
        for k in 0..scripts.len() {
            let dir = format!("/c{k}");
            run(&net, clients[0].mkdir(ROOT_INO, dir.as_bytes(), DIR_ATTRS, false, t0), &mut rng).expect("mkdir");
            let ino = fs.fresh();
            fs.fs.mkdir(ROOT_INO, dir.as_bytes(), ino, DIR_ATTRS, t0).expect("oracle mkdir");
        }
        // Confine every path to the client's directory (".." stays inside: the names are
        // one level deep at most once rewritten).
        let confine = |k: usize, p: &str| format!("/c{k}{}", p.replace("..", "x"));
        let scripts: Vec<Vec<Op>> = scripts
            .into_iter()
            .enumerate()
            .map(|(k, ops)| {
                let create = OpenFlags { create: true, ..OpenFlags::default() };
                let prelude = vec![
                    Op::Mkdir { path: "/a".into() },
                    Op::Open { path: "/a/b".into(), flags: create },
                    Op::Write { slot: 0, len: 5000, byte: k as u8 },
                    Op::Symlink { target: "a".into(), path: "/c".into() },
                ];
                prelude.into_iter().chain(ops)
                    .map(|op| match op {
                        Op::Open { path, flags } => Op::Open { path: confine(k, &path), flags },
                        Op::Mkdir { path } => Op::Mkdir { path: confine(k, &path) },
                        Op::Rmdir { path } => Op::Rmdir { path: confine(k, &path) },
                        Op::Unlink { path } => Op::Unlink { path: confine(k, &path) },
                        Op::Rename { from, to, flags } => Op::Rename {
                            from: confine(k, &from),
                            to: confine(k, &to),
                            flags,
                        },
                        Op::Link { from, to, follow } => Op::Link {
                            from: confine(k, &from),
                            to: confine(k, &to),
                            follow,
                        },
                        Op::Symlink { target, path } => Op::Symlink {
                            target: target.trim_start_matches('/').replace("..", "x"),
                            path: confine(k, &path),
                        },
                        Op::Readlink { path } => Op::Readlink { path: confine(k, &path) },
                        Op::Mkfifo { path } => Op::Mkfifo { path: confine(k, &path) },
                        Op::Stat { path, follow } => Op::Stat { path: confine(k, &path), follow },
                        Op::Chmod { path, mode } => Op::Chmod { path: confine(k, &path), mode },
                        Op::Truncate { path, size } => Op::Truncate { path: confine(k, &path), size },
                        Op::List { path } => Op::List { path: confine(k, &path) },
                        Op::Chown { path, follow, uid, gid } => Op::Chown {
                            path: confine(k, &path),
                            follow,
                            uid,
                            gid,
                        },
                        Op::Utimens { path, follow, atime, mtime } => Op::Utimens {
                            path: confine(k, &path),
                            follow,
                            atime,
                            mtime,
                        },
                        Op::Share { slot, .. } => Op::Fstat { slot },
                        other => other,
                    })
                    .collect()
            })
            .collect();
        let answers = {
            let futs: Vec<std::pin::Pin<Box<dyn std::future::Future<Output = Vec<Answer>> + '_>>> = clients
                .iter_mut()
                .zip(&scripts)
                .map(|(c, ops)| {
                    Box::pin(async move {
                        let mut fds = HFiles::default();
                        let mut out = Vec::new();
                        for (i, op) in ops.iter().enumerate() {
                            out.push(apply(c, &mut fds, op, Timespec::new(i as i64 + 1, 0)).await);
                        }
                        out
                    }) as _
                })
                .collect();
            run_all(&net, futs, &mut rng)
        };
        let mut map = InoMap::default();
        for (k, (ops, got)) in scripts.iter().zip(&answers).enumerate() {
            let mut fds = Vec::new();
            for (i, (op, got)) in ops.iter().zip(got).enumerate() {
                let want = oracle(&mut fs, &mut fds, op, Timespec::new(i as i64 + 1, 0));
                prop_assert!(
                    agree(got, &want, &mut map, distribute),
                    "client {k} step {i}: {op:?}\n  hare:  {got:?}\n  nrfs:  {want:?}"
                );
            }
        }
    }
}
