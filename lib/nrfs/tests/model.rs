//! Random operation sequences run against a simple model (a map from path to contents) and
//! against both the sequential file system and the replicated one (two replicas, small logs,
//! alternating between replicas call by call). Every result and every error must agree.

use std::collections::BTreeMap;
use std::sync::Arc;

use abi::Errno;
use nrfs::*;
use proptest::prelude::*;

const NAMES: [&str; 3] = ["a", "b", "c"];

/// A path: components, and whether it is written absolute.
#[derive(Clone, Debug)]
struct P {
    parts: Vec<&'static str>,
    absolute: bool,
}

impl P {
    fn bytes(&self) -> Vec<u8> {
        let s = self.parts.join("/");
        if self.absolute {
            format!("/{s}").into_bytes()
        } else {
            s.into_bytes()
        }
    }
}

#[derive(Clone, Debug)]
enum Op {
    Create(P, bool),
    Mkdir(P),
    Unlink(P),
    Rmdir(P),
    Rename(P, P, u32),
    Write(P, u64, usize, u8),
    Append(P, usize, u8),
    Read(P, u64, usize),
    Truncate(P, u64),
    Stat(P),
    List(P),
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Out {
    Err(Errno),
    Unit,
    Created(bool),
    Len(usize),
    Offset(u64),
    Data(Vec<u8>),
    Stat(Kind, u64, u32),
    Names(Vec<Vec<u8>>),
}

fn out<T>(r: Result<T, Errno>, f: impl FnOnce(T) -> Out) -> Out {
    match r {
        Ok(v) => f(v),
        Err(e) => Out::Err(e),
    }
}

// ------------------------------------------------------------------------------- the model

#[derive(Clone, Debug)]
enum Node {
    File(Vec<u8>),
    Dir,
}

/// Every file and directory by its path (the root, `[]`, is implicit).
#[derive(Default)]
struct Model {
    nodes: BTreeMap<Vec<&'static str>, Node>,
}

type Path = Vec<&'static str>;

impl Model {
    fn is_dir(&self, p: &[&'static str]) -> Option<bool> {
        if p.is_empty() {
            return Some(true);
        }
        self.nodes.get(p).map(|n| matches!(n, Node::Dir))
    }

    /// Every directory leading to the last component must exist and be a directory.
    fn parent_ok(&self, p: &[&'static str]) -> Result<(), Errno> {
        for i in 1..p.len() {
            match self.is_dir(&p[..i]) {
                None => return Err(Errno::ENOENT),
                Some(false) => return Err(Errno::ENOTDIR),
                Some(true) => {}
            }
        }
        Ok(())
    }

    fn children(&self, p: &[&'static str]) -> Vec<Path> {
        self.nodes
            .keys()
            .filter(|k| k.len() == p.len() + 1 && k.starts_with(p))
            .cloned()
            .collect()
    }

    fn file(&mut self, p: &P) -> Result<&mut Vec<u8>, Errno> {
        self.parent_ok(&p.parts)?;
        match self.nodes.get_mut(&p.parts) {
            None => Err(Errno::ENOENT),
            Some(Node::Dir) => Err(Errno::EISDIR),
            Some(Node::File(d)) => Ok(d),
        }
    }

    fn take_subtree(&mut self, p: &[&'static str]) -> Vec<(Path, Node)> {
        let keys: Vec<Path> = self
            .nodes
            .keys()
            .filter(|k| k.starts_with(p))
            .cloned()
            .collect();
        keys.into_iter()
            .map(|k| {
                let n = self.nodes.remove(&k).unwrap();
                (k[p.len()..].to_vec(), n)
            })
            .collect()
    }

    fn put_subtree(&mut self, p: &[&'static str], nodes: Vec<(Path, Node)>) {
        for (rel, n) in nodes {
            let mut k = p.to_vec();
            k.extend(rel);
            self.nodes.insert(k, n);
        }
    }

    fn rename(&mut self, from: &P, to: &P, flags: u32) -> Result<(), Errno> {
        let (f, t) = (&from.parts, &to.parts);
        self.parent_ok(f)?;
        self.parent_ok(t)?;
        let src_dir = self.is_dir(f).ok_or(Errno::ENOENT)?;
        let dst_dir = self.is_dir(t);
        let exchange = flags & RENAME_EXCHANGE != 0;
        if flags & RENAME_NOREPLACE != 0 && dst_dir.is_some() {
            return Err(Errno::EEXIST);
        }
        if exchange && dst_dir.is_none() {
            return Err(Errno::ENOENT);
        }
        let (p1, p2) = (&f[..f.len() - 1], &t[..t.len() - 1]);
        if p1 != p2 {
            if src_dir && p2.starts_with(f) {
                return Err(Errno::EINVAL);
            }
            if dst_dir == Some(true) && p1.starts_with(t) {
                return Err(if exchange {
                    Errno::EINVAL
                } else {
                    Errno::ENOTEMPTY
                });
            }
        }
        if f == t {
            return Ok(());
        }
        if let (false, Some(dst_dir)) = (exchange, dst_dir) {
            if src_dir && !dst_dir {
                return Err(Errno::ENOTDIR);
            }
            if !src_dir && dst_dir {
                return Err(Errno::EISDIR);
            }
            if dst_dir && !self.children(t).is_empty() {
                return Err(Errno::ENOTEMPTY);
            }
        }
        let src = self.take_subtree(f);
        let dst = self.take_subtree(t);
        self.put_subtree(t, src);
        if exchange {
            self.put_subtree(f, dst);
        }
        Ok(())
    }

    fn apply(&mut self, op: &Op) -> Out {
        match op {
            Op::Create(p, excl) => out(
                self.parent_ok(&p.parts)
                    .and_then(|()| match self.nodes.get(&p.parts) {
                        Some(_) if *excl => Err(Errno::EEXIST),
                        Some(Node::Dir) => Err(Errno::EISDIR),
                        Some(Node::File(_)) => Ok(false),
                        None => {
                            self.nodes.insert(p.parts.clone(), Node::File(vec![]));
                            Ok(true)
                        }
                    }),
                Out::Created,
            ),
            Op::Mkdir(p) => out(
                self.parent_ok(&p.parts).and_then(|()| {
                    if self.nodes.contains_key(&p.parts) {
                        return Err(Errno::EEXIST);
                    }
                    self.nodes.insert(p.parts.clone(), Node::Dir);
                    Ok(())
                }),
                |()| Out::Unit,
            ),
            Op::Unlink(p) => out(
                self.parent_ok(&p.parts)
                    .and_then(|()| match self.nodes.get(&p.parts) {
                        None => Err(Errno::ENOENT),
                        Some(Node::Dir) => Err(Errno::EISDIR),
                        Some(Node::File(_)) => {
                            self.nodes.remove(&p.parts);
                            Ok(())
                        }
                    }),
                |()| Out::Unit,
            ),
            Op::Rmdir(p) => out(
                self.parent_ok(&p.parts)
                    .and_then(|()| match self.nodes.get(&p.parts) {
                        None => Err(Errno::ENOENT),
                        Some(Node::File(_)) => Err(Errno::ENOTDIR),
                        Some(Node::Dir) if !self.children(&p.parts).is_empty() => {
                            Err(Errno::ENOTEMPTY)
                        }
                        Some(Node::Dir) => {
                            self.nodes.remove(&p.parts);
                            Ok(())
                        }
                    }),
                |()| Out::Unit,
            ),
            Op::Rename(a, b, flags) => out(self.rename(a, b, *flags), |()| Out::Unit),
            Op::Write(p, off, len, byte) => out(
                self.file(p).map(|d| {
                    if *len > 0 {
                        let end = *off as usize + len;
                        if d.len() < end {
                            d.resize(end, 0);
                        }
                        d[*off as usize..end].fill(*byte);
                    }
                    *len
                }),
                Out::Len,
            ),
            Op::Append(p, len, byte) => out(
                self.file(p).map(|d| {
                    let at = d.len() as u64;
                    d.extend(std::iter::repeat_n(*byte, *len));
                    at
                }),
                Out::Offset,
            ),
            Op::Read(p, off, len) => out(
                self.file(p).map(|d| {
                    let start = (*off as usize).min(d.len());
                    let end = (start + len).min(d.len());
                    d[start..end].to_vec()
                }),
                Out::Data,
            ),
            Op::Truncate(p, size) => out(self.file(p).map(|d| d.resize(*size as usize, 0)), |()| {
                Out::Unit
            }),
            Op::Stat(p) => out(
                self.parent_ok(&p.parts)
                    .and_then(|()| match self.nodes.get(&p.parts) {
                        None => Err(Errno::ENOENT),
                        Some(Node::File(d)) => Ok(Out::Stat(Kind::File, d.len() as u64, 1)),
                        Some(Node::Dir) => {
                            let kids = self.children(&p.parts);
                            let subdirs = kids
                                .iter()
                                .filter(|k| matches!(self.nodes[*k], Node::Dir))
                                .count();
                            Ok(Out::Stat(
                                Kind::Dir,
                                40 + 20 * kids.len() as u64,
                                2 + subdirs as u32,
                            ))
                        }
                    }),
                |o| o,
            ),
            Op::List(p) => out(
                self.parent_ok(&p.parts)
                    .and_then(|()| match self.nodes.get(&p.parts) {
                        None => Err(Errno::ENOENT),
                        Some(Node::File(_)) => Err(Errno::ENOTDIR),
                        Some(Node::Dir) => {
                            let mut names: Vec<Vec<u8>> = self
                                .children(&p.parts)
                                .iter()
                                .map(|k| k.last().unwrap().as_bytes().to_vec())
                                .collect();
                            names.push(b".".to_vec());
                            names.push(b"..".to_vec());
                            names.sort();
                            Ok(names)
                        }
                    }),
                Out::Names,
            ),
        }
    }
}

// ------------------------------------------------------------------- the systems under test

/// The operations both file systems offer, with paths from the root.
trait Sut {
    fn create(&mut self, p: &[u8], excl: bool, now: Timespec) -> Result<bool, Errno>;
    fn mkdir(&mut self, p: &[u8], now: Timespec) -> Result<(), Errno>;
    fn unlink(&mut self, p: &[u8], now: Timespec) -> Result<(), Errno>;
    fn rmdir(&mut self, p: &[u8], now: Timespec) -> Result<(), Errno>;
    fn rename(&mut self, a: &[u8], b: &[u8], flags: u32, now: Timespec) -> Result<(), Errno>;
    fn resolve(&mut self, p: &[u8]) -> Result<Ino, Errno>;
    fn write(&mut self, ino: Ino, off: u64, data: &[u8], now: Timespec) -> Result<usize, Errno>;
    fn append(&mut self, ino: Ino, data: &[u8], now: Timespec) -> Result<u64, Errno>;
    fn read(&mut self, ino: Ino, off: u64, len: usize) -> Result<Vec<u8>, Errno>;
    fn truncate(&mut self, ino: Ino, size: u64, now: Timespec) -> Result<(), Errno>;
    fn stat(&mut self, ino: Ino) -> Result<Stat, Errno>;
    fn read_dir(&mut self, dir: Ino, cookie: u64, max: usize) -> Result<Vec<DirEntry>, Errno>;
}

const FILE: Attrs = Attrs::new(0o644, 0, 0);

fn flags(excl: bool) -> CreateFlags {
    CreateFlags {
        exclusive: excl,
        open: false,
    }
}

impl Sut for FileSystem {
    fn create(&mut self, p: &[u8], excl: bool, now: Timespec) -> Result<bool, Errno> {
        let ino = self.unused_ino();
        FileSystem::create(self, ROOT_INO, p, ino, FILE, flags(excl), now).map(|c| c.created)
    }
    fn mkdir(&mut self, p: &[u8], now: Timespec) -> Result<(), Errno> {
        let ino = self.unused_ino();
        FileSystem::mkdir(self, ROOT_INO, p, ino, FILE, now).map(drop)
    }
    fn unlink(&mut self, p: &[u8], now: Timespec) -> Result<(), Errno> {
        FileSystem::unlink(self, ROOT_INO, p, now)
    }
    fn rmdir(&mut self, p: &[u8], now: Timespec) -> Result<(), Errno> {
        FileSystem::rmdir(self, ROOT_INO, p, now)
    }
    fn rename(&mut self, a: &[u8], b: &[u8], flags: u32, now: Timespec) -> Result<(), Errno> {
        FileSystem::rename(self, ROOT_INO, a, ROOT_INO, b, flags, now)
    }
    fn resolve(&mut self, p: &[u8]) -> Result<Ino, Errno> {
        FileSystem::resolve(self, ROOT_INO, p, true)
    }
    fn write(&mut self, ino: Ino, off: u64, data: &[u8], now: Timespec) -> Result<usize, Errno> {
        FileSystem::write(self, ino, off, data, now)
    }
    fn append(&mut self, ino: Ino, data: &[u8], now: Timespec) -> Result<u64, Errno> {
        FileSystem::append(self, ino, data, now)
    }
    fn read(&mut self, ino: Ino, off: u64, len: usize) -> Result<Vec<u8>, Errno> {
        let mut buf = vec![0; len];
        let n = FileSystem::read(self, ino, off, &mut buf)?;
        buf.truncate(n);
        Ok(buf)
    }
    fn truncate(&mut self, ino: Ino, size: u64, now: Timespec) -> Result<(), Errno> {
        FileSystem::truncate(self, ino, size, now)
    }
    fn stat(&mut self, ino: Ino) -> Result<Stat, Errno> {
        FileSystem::stat(self, ino)
    }
    fn read_dir(&mut self, dir: Ino, cookie: u64, max: usize) -> Result<Vec<DirEntry>, Errno> {
        FileSystem::read_dir(self, dir, cookie, max)
    }
}

/// NR-FS with one client per replica; each call goes to the next replica.
struct Replicated {
    fs: NrFs,
    clients: Vec<FsClient>,
    turn: usize,
    _replicas: Vec<Arc<FsReplica>>,
}

impl Replicated {
    fn new(nlogs: usize, entries: usize, replicas: usize) -> Self {
        let (fs, reps) = NrFs::new(nlogs, entries, replicas).unwrap();
        let clients = reps.iter().map(|r| fs.client(r).unwrap()).collect();
        Self {
            fs,
            clients,
            turn: 0,
            _replicas: reps,
        }
    }

    fn c(&mut self) -> &FsClient {
        self.turn += 1;
        &self.clients[self.turn % self.clients.len()]
    }
}

impl Sut for Replicated {
    fn create(&mut self, p: &[u8], excl: bool, now: Timespec) -> Result<bool, Errno> {
        self.c()
            .create(ROOT_INO, p, FILE, flags(excl), now)
            .map(|c| c.created)
    }
    fn mkdir(&mut self, p: &[u8], now: Timespec) -> Result<(), Errno> {
        self.c().mkdir(ROOT_INO, p, FILE, now).map(drop)
    }
    fn unlink(&mut self, p: &[u8], now: Timespec) -> Result<(), Errno> {
        self.c().unlink(ROOT_INO, p, now)
    }
    fn rmdir(&mut self, p: &[u8], now: Timespec) -> Result<(), Errno> {
        self.c().rmdir(ROOT_INO, p, now)
    }
    fn rename(&mut self, a: &[u8], b: &[u8], flags: u32, now: Timespec) -> Result<(), Errno> {
        self.c().rename(ROOT_INO, a, ROOT_INO, b, flags, now)
    }
    fn resolve(&mut self, p: &[u8]) -> Result<Ino, Errno> {
        self.c().resolve(ROOT_INO, p, true)
    }
    fn write(&mut self, ino: Ino, off: u64, data: &[u8], now: Timespec) -> Result<usize, Errno> {
        self.c().write(ino, off, data, now)
    }
    fn append(&mut self, ino: Ino, data: &[u8], now: Timespec) -> Result<u64, Errno> {
        self.c().append(ino, data, now)
    }
    fn read(&mut self, ino: Ino, off: u64, len: usize) -> Result<Vec<u8>, Errno> {
        let mut buf = vec![0; len];
        let n = self.c().read(ino, off, &mut buf)?;
        buf.truncate(n);
        Ok(buf)
    }
    fn truncate(&mut self, ino: Ino, size: u64, now: Timespec) -> Result<(), Errno> {
        self.c().truncate(ino, size, now)
    }
    fn stat(&mut self, ino: Ino) -> Result<Stat, Errno> {
        self.c().stat(ino)
    }
    fn read_dir(&mut self, dir: Ino, cookie: u64, max: usize) -> Result<Vec<DirEntry>, Errno> {
        self.c().read_dir(dir, cookie, max)
    }
}

fn run(s: &mut impl Sut, op: &Op, now: Timespec) -> Out {
    match op {
        Op::Create(p, excl) => out(s.create(&p.bytes(), *excl, now), Out::Created),
        Op::Mkdir(p) => out(s.mkdir(&p.bytes(), now), |()| Out::Unit),
        Op::Unlink(p) => out(s.unlink(&p.bytes(), now), |()| Out::Unit),
        Op::Rmdir(p) => out(s.rmdir(&p.bytes(), now), |()| Out::Unit),
        Op::Rename(a, b, f) => out(s.rename(&a.bytes(), &b.bytes(), *f, now), |()| Out::Unit),
        Op::Write(p, off, len, byte) => out(
            s.resolve(&p.bytes())
                .and_then(|ino| s.write(ino, *off, &vec![*byte; *len], now)),
            Out::Len,
        ),
        Op::Append(p, len, byte) => out(
            s.resolve(&p.bytes())
                .and_then(|ino| s.append(ino, &vec![*byte; *len], now)),
            Out::Offset,
        ),
        Op::Read(p, off, len) => out(
            s.resolve(&p.bytes())
                .and_then(|ino| s.read(ino, *off, *len)),
            Out::Data,
        ),
        Op::Truncate(p, size) => out(
            s.resolve(&p.bytes())
                .and_then(|ino| s.truncate(ino, *size, now)),
            |()| Out::Unit,
        ),
        Op::Stat(p) => out(s.resolve(&p.bytes()).and_then(|ino| s.stat(ino)), |st| {
            Out::Stat(st.kind, st.size, st.nlink)
        }),
        Op::List(p) => out(
            s.resolve(&p.bytes()).and_then(|dir| {
                // Two entries per call, continuing by cookie.
                let mut names = Vec::new();
                let mut cookie = 0;
                loop {
                    let chunk = s.read_dir(dir, cookie, 2)?;
                    let Some(last) = chunk.last() else { break };
                    cookie = last.next_cookie;
                    names.extend(chunk.into_iter().map(|e| e.name));
                }
                names.sort();
                Ok(names)
            }),
            Out::Names,
        ),
    }
}

// ------------------------------------------------------------------------------ strategies

/// Paths over few names and shallow depths (short ones more often), so that operations
/// often meet each other's files.
fn path() -> impl Strategy<Value = P> {
    let depth = prop_oneof![5 => Just(1usize), 4 => Just(2usize), 2 => Just(3usize)];
    (depth, any::<bool>())
        .prop_flat_map(|(depth, absolute)| {
            let first = prop::sample::select(NAMES.to_vec());
            let rest = prop::collection::vec(prop::sample::select(NAMES[..2].to_vec()), depth - 1);
            (first, rest, Just(absolute))
        })
        .prop_map(|(first, rest, absolute)| {
            let mut parts = vec![first];
            parts.extend(rest);
            P { parts, absolute }
        })
}

fn op() -> impl Strategy<Value = Op> {
    let flags = prop::sample::select(vec![0, RENAME_NOREPLACE, RENAME_EXCHANGE]);
    prop_oneof![
        4 => (path(), any::<bool>()).prop_map(|(p, e)| Op::Create(p, e)),
        5 => path().prop_map(Op::Mkdir),
        2 => path().prop_map(Op::Unlink),
        2 => path().prop_map(Op::Rmdir),
        6 => (path(), path(), flags.clone()).prop_map(|(a, b, f)| Op::Rename(a, b, f)),
        // Between a path and one of its ancestors, both ways.
        3 => (path(), any::<prop::sample::Index>(), any::<bool>(), flags).prop_map(|(a, i, up, f)| {
            let b = P { parts: a.parts[..=i.index(a.parts.len())].to_vec(), absolute: a.absolute };
            if up { Op::Rename(a, b, f) } else { Op::Rename(b, a, f) }
        }),
        3 => (path(), 0..12_000u64, 0..6_000usize, any::<u8>())
            .prop_map(|(p, o, l, b)| Op::Write(p, o, l, b)),
        1 => (path(), 0..3_000usize, any::<u8>()).prop_map(|(p, l, b)| Op::Append(p, l, b)),
        2 => (path(), 0..12_000u64, 0..9_000usize).prop_map(|(p, o, l)| Op::Read(p, o, l)),
        2 => (path(), 0..10_000u64).prop_map(|(p, s)| Op::Truncate(p, s)),
        2 => path().prop_map(Op::Stat),
        2 => path().prop_map(Op::List),
    ]
}

/// A starting tree (most cases start with it, so that more operations succeed).
fn seed() -> Vec<Op> {
    let p = |s: &'static str| P {
        parts: s.split('/').collect(),
        absolute: false,
    };
    let mut ops: Vec<Op> = ["a", "b", "a/a", "a/b", "b/b"]
        .into_iter()
        .map(|d| Op::Mkdir(p(d)))
        .collect();
    ops.extend(
        ["c", "a/a/a", "b/a"]
            .into_iter()
            .map(|f| Op::Create(p(f), true)),
    );
    ops.push(Op::Write(p("a/a/a"), 4000, 200, 7));
    ops
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 600, ..ProptestConfig::default() })]

    #[test]
    fn file_systems_agree_with_the_model(
        seeded in any::<bool>(),
        random in prop::collection::vec(op(), 1..80),
    ) {
        let ops: Vec<Op> = if seeded { seed().into_iter().chain(random).collect() } else { random };
        let mut model = Model::default();
        let mut seq = FileSystem::new(FILE, Timespec::default());
        // Three logs of eight entries: scans and log wrap-around happen all the time.
        let mut rep = Replicated::new(3, 8, 2);
        for (i, op) in ops.iter().enumerate() {
            let now = Timespec::new(i as i64 + 1, 0);
            let want = model.apply(op);
            let got_seq = run(&mut seq, op, now);
            prop_assert_eq!(&got_seq, &want, "sequential, op {} {:?}", i, op);
            let got_rep = run(&mut rep, op, now);
            prop_assert_eq!(&got_rep, &want, "replicated, op {} {:?}", i, op);
        }
        let a = rep.clients[0].replica().verify(rep.clients[0].token(), |d| d.snapshot());
        let b = rep.clients[1].replica().verify(rep.clients[1].token(), |d| d.snapshot());
        prop_assert!(a == b, "replicas differ");
        let stats = rep.clients[0].statfs().unwrap();
        prop_assert_eq!(stats, seq.statfs());
        prop_assert_eq!(stats.inodes, model.nodes.len() as u64 + 1);
        prop_assert!(rep.fs.log_stats().iter().all(|s| s.applied[0] == s.applied[1]));
    }
}

/// One file: writes, appends, truncates and reads against a byte vector.
#[derive(Clone, Debug)]
enum DataOp {
    Write(u64, usize, u8),
    Append(usize, u8),
    Truncate(u64),
    Read(u64, usize),
}

fn data_op() -> impl Strategy<Value = DataOp> {
    prop_oneof![
        3 => (0..20_000u64, 0..9_000usize, any::<u8>()).prop_map(|(o, l, b)| DataOp::Write(o, l, b)),
        1 => (0..5_000usize, any::<u8>()).prop_map(|(l, b)| DataOp::Append(l, b)),
        2 => (0..24_000u64).prop_map(DataOp::Truncate),
        3 => (0..24_000u64, 0..12_000usize).prop_map(|(o, l)| DataOp::Read(o, l)),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    #[test]
    fn file_data_agrees_with_a_vector(ops in prop::collection::vec(data_op(), 1..40)) {
        let mut want: Vec<u8> = Vec::new();
        let mut seq = FileSystem::new(FILE, Timespec::default());
        let mut rep = Replicated::new(2, 4, 2);
        Sut::create(&mut seq, b"f", true, Timespec::default()).unwrap();
        let f1 = Sut::resolve(&mut seq, b"f").unwrap();
        rep.create(b"f", true, Timespec::default()).unwrap();
        let f2 = rep.resolve(b"f").unwrap();
        for op in &ops {
            let now = Timespec::new(1, 0);
            let (a, b, expected) = match *op {
                DataOp::Write(o, l, byte) => {
                    let data = vec![byte; l];
                    if l > 0 {
                        let end = o as usize + l;
                        if want.len() < end { want.resize(end, 0); }
                        want[o as usize..end].fill(byte);
                    }
                    (out(Sut::write(&mut seq, f1, o, &data, now), Out::Len),
                     out(rep.write(f2, o, &data, now), Out::Len), Out::Len(l))
                }
                DataOp::Append(l, byte) => {
                    let at = want.len() as u64;
                    want.extend(std::iter::repeat_n(byte, l));
                    let data = vec![byte; l];
                    (out(Sut::append(&mut seq, f1, &data, now), Out::Offset),
                     out(rep.append(f2, &data, now), Out::Offset), Out::Offset(at))
                }
                DataOp::Truncate(size) => {
                    want.resize(size as usize, 0);
                    (out(Sut::truncate(&mut seq, f1, size, now), |()| Out::Unit),
                     out(rep.truncate(f2, size, now), |()| Out::Unit), Out::Unit)
                }
                DataOp::Read(o, l) => {
                    let start = (o as usize).min(want.len());
                    let end = (start + l).min(want.len());
                    (out(Sut::read(&mut seq, f1, o, l), Out::Data),
                     out(rep.read(f2, o, l), Out::Data), Out::Data(want[start..end].to_vec()))
                }
            };
            prop_assert_eq!(&a, &expected, "sequential {:?}", op);
            prop_assert_eq!(&b, &expected, "replicated {:?}", op);
        }
        let size = want.len() as u64;
        prop_assert_eq!(Sut::stat(&mut seq, f1).unwrap().size, size);
        prop_assert_eq!(rep.stat(f2).unwrap().size, size);
        // Exactly the pages holding data written since the last cut are held.
        let stats = rep.clients[0].statfs().unwrap();
        prop_assert_eq!(stats, seq.statfs());
        prop_assert!(stats.pages <= size.div_ceil(PAGE_SIZE as u64));
    }
}
