//! Unit tests of the sequential file system: one or more per operation and per error case.

use abi::Errno;
use nrfs::*;

fn t(sec: i64) -> Timespec {
    Timespec::new(sec, 0)
}

const FILE: Attrs = Attrs::new(0o644, 1000, 100);
const DIR: Attrs = Attrs::new(0o755, 1000, 100);
const NEW: CreateFlags = CreateFlags {
    exclusive: false,
    open: false,
};
const EXCL: CreateFlags = CreateFlags {
    exclusive: true,
    open: false,
};

/// A file system plus helpers that pick inode numbers.
struct Fx {
    fs: FileSystem,
}

impl Fx {
    fn new() -> Self {
        Self {
            fs: FileSystem::new(Attrs::new(0o755, 0, 0), t(0)),
        }
    }

    fn create(&mut self, path: &str) -> Result<Ino, Errno> {
        let ino = self.fs.unused_ino();
        self.fs
            .create(ROOT_INO, path.as_bytes(), ino, FILE, NEW, t(1))
            .map(|c| c.ino)
    }

    fn create_x(&mut self, path: &str, flags: CreateFlags) -> Result<Created, Errno> {
        let ino = self.fs.unused_ino();
        self.fs
            .create(ROOT_INO, path.as_bytes(), ino, FILE, flags, t(1))
    }

    fn mkdir(&mut self, path: &str) -> Result<Ino, Errno> {
        let ino = self.fs.unused_ino();
        self.fs.mkdir(ROOT_INO, path.as_bytes(), ino, DIR, t(1))
    }

    fn symlink(&mut self, target: &str, path: &str) -> Result<Ino, Errno> {
        let ino = self.fs.unused_ino();
        self.fs.symlink(
            target.as_bytes(),
            ROOT_INO,
            path.as_bytes(),
            ino,
            FILE,
            t(1),
        )
    }

    fn resolve(&self, path: &str) -> Result<Ino, Errno> {
        self.fs.resolve(ROOT_INO, path.as_bytes(), true)
    }

    fn lresolve(&self, path: &str) -> Result<Ino, Errno> {
        self.fs.resolve(ROOT_INO, path.as_bytes(), false)
    }

    fn write(&mut self, path: &str, offset: u64, data: &[u8]) {
        let ino = self.resolve(path).unwrap();
        assert_eq!(self.fs.write(ino, offset, data, t(2)), Ok(data.len()));
    }

    fn contents(&self, path: &str) -> Vec<u8> {
        let ino = self.resolve(path).unwrap();
        let mut buf = vec![0u8; self.fs.stat(ino).unwrap().size as usize + 10];
        let n = self.fs.read(ino, 0, &mut buf).unwrap();
        buf.truncate(n);
        buf
    }

    fn unlink(&mut self, path: &str) -> Result<(), Errno> {
        self.fs.unlink(ROOT_INO, path.as_bytes(), t(3))
    }

    fn rmdir(&mut self, path: &str) -> Result<(), Errno> {
        self.fs.rmdir(ROOT_INO, path.as_bytes(), t(3))
    }

    fn rename(&mut self, from: &str, to: &str, flags: u32) -> Result<(), Errno> {
        self.fs.rename(
            ROOT_INO,
            from.as_bytes(),
            ROOT_INO,
            to.as_bytes(),
            flags,
            t(4),
        )
    }

    fn names(&self, path: &str) -> Vec<String> {
        let dir = self.resolve(path).unwrap();
        self.fs
            .read_dir(dir, 0, usize::MAX)
            .unwrap()
            .into_iter()
            .map(|e| String::from_utf8(e.name).unwrap())
            .collect()
    }

    fn nlink(&self, path: &str) -> u32 {
        self.fs.stat(self.lresolve(path).unwrap()).unwrap().nlink
    }
}

// ---------------------------------------------------------------- root, stat, statfs

#[test]
fn root_directory() {
    let fx = Fx::new();
    let st = fx.fs.stat(ROOT_INO).unwrap();
    assert_eq!(
        (st.ino, st.kind, st.mode, st.nlink),
        (ROOT_INO, Kind::Dir, 0o755, 2)
    );
    assert_eq!(st.st_mode(), 0o040755);
    assert_eq!(st.size, 40);
    assert_eq!(
        fx.fs.statfs(),
        FsStats {
            inodes: 1,
            pages: 0,
            bytes: 0
        }
    );
    assert_eq!(fx.resolve("/"), Ok(ROOT_INO));
    assert_eq!(fx.resolve("/.."), Ok(ROOT_INO));
    assert_eq!(fx.resolve("//..//."), Ok(ROOT_INO));
}

#[test]
fn statfs_counts_inodes_and_pages() {
    let mut fx = Fx::new();
    fx.mkdir("d").unwrap();
    fx.create("d/f").unwrap();
    fx.write("d/f", 0, &[1; 5000]);
    fx.write("d/f", 10 * 4096, &[1]);
    assert_eq!(
        fx.fs.statfs(),
        FsStats {
            inodes: 3,
            pages: 3,
            bytes: 3 * 4096
        }
    );
    let st = fx.fs.stat(fx.resolve("d/f").unwrap()).unwrap();
    assert_eq!((st.size, st.blocks), (10 * 4096 + 1, 24));
}

// ---------------------------------------------------------------- create

#[test]
fn create_new_and_existing() {
    let mut fx = Fx::new();
    let c = fx.create_x("f", NEW).unwrap();
    assert!(c.created);
    let st = fx.fs.stat(c.ino).unwrap();
    assert_eq!(
        (st.kind, st.mode, st.uid, st.gid, st.nlink, st.size),
        (Kind::File, 0o644, 1000, 100, 1, 0)
    );
    assert_eq!(st.st_mode(), 0o100644);
    assert_eq!((st.atime, st.mtime, st.ctime), (t(1), t(1), t(1)));
    let root = fx.fs.stat(ROOT_INO).unwrap();
    assert_eq!((root.mtime, root.ctime), (t(1), t(1)));
    let again = fx.create_x("f", NEW).unwrap();
    assert_eq!(
        again,
        Created {
            ino: c.ino,
            created: false
        }
    );
    assert_eq!(fx.create_x("f", EXCL), Err(Errno::EEXIST));
}

#[test]
fn create_errors() {
    let mut fx = Fx::new();
    fx.mkdir("d").unwrap();
    fx.create("file").unwrap();
    assert_eq!(fx.create("d"), Err(Errno::EISDIR));
    assert_eq!(fx.create_x("d", EXCL), Err(Errno::EEXIST));
    assert_eq!(fx.create("new/"), Err(Errno::EISDIR));
    assert_eq!(fx.create("file/"), Err(Errno::EISDIR));
    assert_eq!(fx.create("."), Err(Errno::EISDIR));
    assert_eq!(fx.create_x("..", EXCL), Err(Errno::EEXIST));
    assert_eq!(fx.create("/"), Err(Errno::EISDIR));
    assert_eq!(fx.create("missing/f"), Err(Errno::ENOENT));
    assert_eq!(fx.create("file/f"), Err(Errno::ENOTDIR));
    assert_eq!(fx.create(""), Err(Errno::ENOENT));
    assert_eq!(fx.create(&"n".repeat(256)), Err(Errno::ENAMETOOLONG));
    assert!(fx.create(&"n".repeat(255)).is_ok());
    // An inode number already in use.
    assert_eq!(
        fx.fs.create(ROOT_INO, b"g", ROOT_INO, FILE, NEW, t(1)),
        Err(Errno::EINVAL)
    );
    assert_eq!(fx.fs.lookup(ROOT_INO, b"g"), Err(Errno::ENOENT));
}

#[test]
fn create_through_symlink() {
    let mut fx = Fx::new();
    fx.mkdir("d").unwrap();
    fx.symlink("d/target", "dangling").unwrap();
    // O_CREAT without O_EXCL creates the target of a dangling symlink.
    let c = fx.create_x("dangling", NEW).unwrap();
    assert!(c.created);
    assert_eq!(fx.resolve("d/target"), Ok(c.ino));
    // And opens an existing target.
    assert_eq!(
        fx.create_x("dangling", NEW).unwrap(),
        Created {
            ino: c.ino,
            created: false
        }
    );
    // O_EXCL fails on any existing name, symlinks included.
    assert_eq!(fx.create_x("dangling", EXCL), Err(Errno::EEXIST));
    fx.symlink("nowhere/x", "bad").unwrap();
    assert_eq!(fx.create("bad"), Err(Errno::ENOENT));
    fx.symlink("loop", "loop").unwrap();
    assert_eq!(fx.create("loop"), Err(Errno::ELOOP));
}

#[test]
fn create_can_open() {
    let mut fx = Fx::new();
    let open = CreateFlags {
        exclusive: false,
        open: true,
    };
    let c = fx.create_x("f", open).unwrap();
    fx.unlink("f").unwrap();
    // Still there: created open.
    assert!(fx.fs.exists(c.ino));
    fx.fs.close(c.ino).unwrap();
    assert!(!fx.fs.exists(c.ino));
}

#[test]
fn setgid_directory_inheritance() {
    let mut fx = Fx::new();
    let d = fx.mkdir("d").unwrap();
    fx.fs.chown(d, None, Some(555), t(1)).unwrap();
    fx.fs.chmod(d, 0o2775, t(1)).unwrap();
    let f = fx.create("d/f").unwrap();
    let sub = fx.mkdir("d/sub").unwrap();
    assert_eq!(fx.fs.stat(f).unwrap().gid, 555);
    assert_eq!(fx.fs.stat(sub).unwrap().gid, 555);
    assert_eq!(fx.fs.stat(sub).unwrap().mode, 0o2755);
    assert_eq!(fx.fs.stat(f).unwrap().mode, 0o644);
}

// ---------------------------------------------------------------- mkdir, symlink, mknod

#[test]
fn mkdir_links_and_errors() {
    let mut fx = Fx::new();
    let d = fx.mkdir("d").unwrap();
    assert_eq!(fx.nlink("/"), 3);
    assert_eq!(fx.nlink("d"), 2);
    fx.mkdir("d/e/").unwrap(); // a trailing slash is fine for mkdir
    assert_eq!(fx.nlink("d"), 3);
    assert_eq!(fx.resolve("d/e/.."), Ok(d));
    assert_eq!(fx.mkdir("d"), Err(Errno::EEXIST));
    assert_eq!(fx.mkdir("."), Err(Errno::EEXIST));
    assert_eq!(fx.mkdir("d/.."), Err(Errno::EEXIST));
    assert_eq!(fx.mkdir("/"), Err(Errno::EEXIST));
    assert_eq!(fx.mkdir("x/y"), Err(Errno::ENOENT));
    fx.create("f").unwrap();
    assert_eq!(fx.mkdir("f/y"), Err(Errno::ENOTDIR));
    fx.symlink("d", "ld").unwrap();
    assert_eq!(fx.mkdir("ld"), Err(Errno::EEXIST));
    // Mode: setuid dropped, sticky kept.
    let ino = fx.fs.unused_ino();
    fx.fs
        .mkdir(ROOT_INO, b"s", ino, Attrs::new(0o5777, 0, 0), t(1))
        .unwrap();
    assert_eq!(fx.fs.stat(ino).unwrap().mode, 0o1777);
}

#[test]
fn symlink_and_readlink() {
    let mut fx = Fx::new();
    let l = fx.symlink("some/where", "l").unwrap();
    let st = fx.fs.stat(l).unwrap();
    assert_eq!((st.kind, st.mode, st.size), (Kind::Symlink, 0o777, 10));
    assert_eq!(fx.fs.readlink(l).unwrap(), b"some/where");
    assert_eq!(fx.fs.readlink(ROOT_INO), Err(Errno::EINVAL));
    assert_eq!(fx.symlink("x", "l"), Err(Errno::EEXIST));
    assert_eq!(fx.symlink("", "e"), Err(Errno::ENOENT));
    assert_eq!(fx.symlink(&"x".repeat(4096), "e"), Err(Errno::ENAMETOOLONG));
    assert!(fx.symlink(&"x".repeat(4095), "e").is_ok());
    assert_eq!(fx.symlink("x", "new/"), Err(Errno::ENOENT));
    assert_eq!(fx.symlink("x", "l/"), Err(Errno::EEXIST));
    assert_eq!(fx.symlink("x", ".."), Err(Errno::EEXIST));
}

#[test]
fn mknod_char_device() {
    let mut fx = Fx::new();
    let ino = fx.fs.unused_ino();
    fx.fs
        .mknod(
            ROOT_INO,
            b"null",
            ino,
            Attrs::new(0o666, 0, 0),
            (1 << 8) | 3,
            t(1),
        )
        .unwrap();
    let st = fx.fs.stat(ino).unwrap();
    assert_eq!(
        (st.kind, st.rdev, st.mode, st.st_mode()),
        (Kind::CharDev, 0x103, 0o666, 0o020666)
    );
    assert_eq!(fx.fs.read(ino, 0, &mut [0; 4]), Err(Errno::EINVAL));
    assert_eq!(fx.fs.write(ino, 0, b"x", t(2)), Err(Errno::EINVAL));
    assert_eq!(fx.fs.truncate(ino, 0, t(2)), Err(Errno::EINVAL));
    let list = fx.fs.read_dir(ROOT_INO, 2, 10).unwrap();
    assert_eq!(
        (list[0].kind, list[0].kind.dirent_type()),
        (Kind::CharDev, 2)
    );
    let ino2 = fx.fs.unused_ino();
    assert_eq!(
        fx.fs
            .mknod(ROOT_INO, b"null", ino2, Attrs::new(0o666, 0, 0), 0, t(1)),
        Err(Errno::EEXIST)
    );
    assert_eq!(
        fx.fs
            .mknod(ROOT_INO, b"zero/", ino2, Attrs::new(0o666, 0, 0), 0, t(1)),
        Err(Errno::ENOENT)
    );
}

#[test]
fn mkfifo_is_a_name_without_contents() {
    let mut fx = Fx::new();
    let d = fx.mkdir("d").unwrap();
    let ino = fx.fs.unused_ino();
    assert_eq!(
        fx.fs
            .mkfifo(ROOT_INO, b"d/p", ino, Attrs::new(0o4644, 7, 8), t(3)),
        Ok(ino)
    );
    let st = fx.fs.stat(ino).unwrap();
    assert_eq!(
        (
            st.kind,
            st.mode,
            st.st_mode(),
            st.nlink,
            st.uid,
            st.gid,
            st.size
        ),
        (Kind::Fifo, 0o4644, 0o014644, 1, 7, 8, 0)
    );
    assert_eq!((st.mtime, st.rdev, st.blocks), (t(3), 0, 0));
    assert_eq!(fx.fs.stat(d).unwrap().mtime, t(3));
    // Not readable, writable or truncatable as a file: its pipe is the kernel's.
    assert_eq!(fx.fs.read(ino, 0, &mut [0; 4]), Err(Errno::EINVAL));
    assert_eq!(fx.fs.write(ino, 0, b"x", t(4)), Err(Errno::EINVAL));
    assert_eq!(fx.fs.append(ino, b"x", t(4)), Err(Errno::EINVAL));
    assert_eq!(fx.fs.truncate(ino, 0, t(4)), Err(Errno::EINVAL));
    let list = fx.fs.read_dir(d, 2, 10).unwrap();
    assert_eq!(
        (list[0].kind, list[0].kind.dirent_type(), &list[0].name[..]),
        (Kind::Fifo, 1, &b"p"[..])
    );
    // Errors of a new name.
    let other = fx.fs.unused_ino();
    let mk = |fx: &mut Fx, path: &str| {
        fx.fs.mkfifo(
            ROOT_INO,
            path.as_bytes(),
            other,
            Attrs::new(0o644, 0, 0),
            t(5),
        )
    };
    assert_eq!(mk(&mut fx, "d/p"), Err(Errno::EEXIST));
    assert_eq!(mk(&mut fx, "d"), Err(Errno::EEXIST));
    assert_eq!(mk(&mut fx, "missing/p"), Err(Errno::ENOENT));
    assert_eq!(mk(&mut fx, "d/q/"), Err(Errno::ENOENT));
    assert_eq!(mk(&mut fx, "d/p/q"), Err(Errno::ENOTDIR));
    // A FIFO in the path is not a directory; with a trailing slash it is ENOTDIR.
    assert_eq!(fx.resolve("d/p/"), Err(Errno::ENOTDIR));
    // Names: link, rename, unlink; it lives while open.
    fx.fs
        .link(ROOT_INO, b"d/p", ROOT_INO, b"p2", false, t(6))
        .unwrap();
    assert_eq!(fx.fs.stat(ino).unwrap().nlink, 2);
    fx.fs
        .rename(ROOT_INO, b"p2", ROOT_INO, b"d/renamed", 0, t(7))
        .unwrap();
    assert_eq!(fx.resolve("d/renamed"), Ok(ino));
    assert_eq!(fx.resolve("p2"), Err(Errno::ENOENT));
    fx.mkdir("e").unwrap();
    assert_eq!(
        fx.fs
            .rename(ROOT_INO, b"d/renamed", ROOT_INO, b"e", 0, t(7)),
        Err(Errno::EISDIR)
    );
    assert_eq!(fx.fs.open_path(ROOT_INO, b"d/p", true), Ok(ino));
    fx.fs.unlink(ROOT_INO, b"d/p", t(8)).unwrap();
    fx.fs.unlink(ROOT_INO, b"d/renamed", t(8)).unwrap();
    assert_eq!(fx.fs.stat(ino).unwrap().nlink, 0);
    fx.fs.close(ino).unwrap();
    assert!(!fx.fs.exists(ino));
    // chmod and chown as on any inode.
    let ino = fx.fs.unused_ino();
    fx.fs
        .mkfifo(ROOT_INO, b"q", ino, Attrs::new(0o600, 0, 0), t(9))
        .unwrap();
    fx.fs.chmod(ino, 0o640, t(10)).unwrap();
    fx.fs.chown(ino, Some(5), Some(6), t(11)).unwrap();
    let st = fx.fs.stat(ino).unwrap();
    assert_eq!((st.mode, st.uid, st.gid), (0o640, 5, 6));
}

// ---------------------------------------------------------------- path resolution

#[test]
fn resolve_dots_and_absolute() {
    let mut fx = Fx::new();
    let a = fx.mkdir("a").unwrap();
    let b = fx.mkdir("a/b").unwrap();
    let f = fx.create("a/b/f").unwrap();
    assert_eq!(fx.resolve("a/b/f"), Ok(f));
    assert_eq!(fx.resolve("/a//b/./f"), Ok(f));
    assert_eq!(fx.resolve("a/b/../b/f"), Ok(f));
    assert_eq!(fx.resolve("a/b/.."), Ok(a));
    assert_eq!(fx.resolve("a/b/"), Ok(b));
    assert_eq!(fx.fs.resolve(b, b"f", true), Ok(f));
    assert_eq!(fx.fs.resolve(b, b"../..", true), Ok(ROOT_INO));
    assert_eq!(fx.fs.resolve(b, b"/a", true), Ok(a));
    assert_eq!(fx.fs.resolve(b, b".", true), Ok(b));
    assert_eq!(fx.fs.lookup(b, b".."), Ok(a));
    assert_eq!(fx.fs.lookup(b, b"."), Ok(b));
    assert_eq!(fx.fs.lookup(b, b"f"), Ok(f));
    assert_eq!(fx.fs.lookup(f, b"."), Err(Errno::ENOTDIR));
}

#[test]
fn resolve_errors() {
    let mut fx = Fx::new();
    let f = fx.create("f").unwrap();
    fx.mkdir("d").unwrap();
    assert_eq!(fx.resolve(""), Err(Errno::ENOENT));
    assert_eq!(fx.resolve("missing"), Err(Errno::ENOENT));
    assert_eq!(fx.resolve("missing/x"), Err(Errno::ENOENT));
    assert_eq!(fx.resolve("f/x"), Err(Errno::ENOTDIR));
    assert_eq!(fx.resolve("f/"), Err(Errno::ENOTDIR));
    assert_eq!(fx.resolve("f/."), Err(Errno::ENOTDIR));
    // Relative to a non-directory, or a missing inode.
    assert_eq!(fx.fs.resolve(f, b"x", true), Err(Errno::ENOTDIR));
    assert_eq!(fx.fs.resolve(f, b".", true), Err(Errno::ENOTDIR));
    assert!(fx.fs.resolve(f, b"/d", true).is_ok());
    assert_eq!(fx.fs.resolve(999, b"x", true), Err(Errno::ENOENT));
    // Name and path length limits.
    assert_eq!(fx.resolve(&"n".repeat(256)), Err(Errno::ENAMETOOLONG));
    assert_eq!(fx.resolve(&"n".repeat(255)), Err(Errno::ENOENT));
    let long = "d/".repeat(2047) + "f"; // 4095 bytes
    assert_eq!(long.len(), 4095);
    assert_eq!(fx.resolve(&long), Err(Errno::ENOENT));
    let too_long = "./".repeat(2048); // 4096 bytes
    assert_eq!(fx.resolve(&too_long), Err(Errno::ENAMETOOLONG));
    let ok = "./".repeat(2047) + "d"; // 4095 bytes of dots and slashes
    assert!(fx.resolve(&ok).is_ok());
    // The first failing component decides.
    assert_eq!(
        fx.resolve(&format!("missing/{}", "n".repeat(300))),
        Err(Errno::ENOENT)
    );
}

#[test]
fn resolve_symlinks() {
    let mut fx = Fx::new();
    let d = fx.mkdir("d").unwrap();
    let f = fx.create("d/f").unwrap();
    let ld = fx.symlink("d", "ld").unwrap();
    let lf = fx.symlink("d/f", "lf").unwrap();
    let abs = fx.symlink("/d/f", "d/abs").unwrap();
    let rel = fx.symlink("../lf", "d/rel").unwrap();
    assert_eq!(fx.resolve("ld/f"), Ok(f));
    assert_eq!(fx.resolve("ld"), Ok(d));
    assert_eq!(fx.lresolve("ld"), Ok(ld));
    assert_eq!(fx.lresolve("ld/"), Ok(d)); // a trailing slash follows
    assert_eq!(fx.lresolve("lf"), Ok(lf));
    assert_eq!(fx.resolve("lf"), Ok(f));
    assert_eq!(fx.resolve("lf/"), Err(Errno::ENOTDIR));
    assert_eq!(fx.resolve("d/abs"), Ok(f));
    assert_eq!(fx.lresolve("d/abs"), Ok(abs));
    assert_eq!(fx.resolve("d/rel"), Ok(f)); // relative to the link's directory, chained
    assert_eq!(fx.lresolve("d/rel"), Ok(rel));
    assert_eq!(fx.resolve("ld/../ld/./f"), Ok(f));
    fx.symlink("missing", "dangling").unwrap();
    assert_eq!(fx.resolve("dangling"), Err(Errno::ENOENT));
    assert!(fx.lresolve("dangling").is_ok());
    fx.symlink("d/f/", "slashy").unwrap();
    assert_eq!(fx.resolve("slashy"), Err(Errno::ENOTDIR));
    fx.symlink("lf", "lf2").unwrap();
    assert_eq!(fx.resolve("lf2/x"), Err(Errno::ENOTDIR));
}

#[test]
fn resolve_symlink_loop_limit() {
    let mut fx = Fx::new();
    let f = fx.create("f").unwrap();
    // l0 -> f, l1 -> l0, ..., l40 -> l39: resolving l39 follows 40 links, l40 follows 41.
    fx.symlink("f", "l0").unwrap();
    for i in 1..=40 {
        fx.symlink(&format!("l{}", i - 1), &format!("l{i}"))
            .unwrap();
    }
    assert_eq!(fx.resolve("l39"), Ok(f));
    assert_eq!(fx.resolve("l40"), Err(Errno::ELOOP));
    fx.symlink("self", "self").unwrap();
    assert_eq!(fx.resolve("self"), Err(Errno::ELOOP));
    assert_eq!(fx.resolve("self/x"), Err(Errno::ELOOP));
    assert!(fx.lresolve("self").is_ok());
    fx.symlink("b", "a").unwrap();
    fx.symlink("a", "b").unwrap();
    assert_eq!(fx.resolve("a"), Err(Errno::ELOOP));
}

#[test]
fn resolve_parent_reports_last_component() {
    let mut fx = Fx::new();
    let d = fx.mkdir("d").unwrap();
    fx.symlink("d", "ld").unwrap();
    let p = fx.fs.resolve_parent(ROOT_INO, b"ld/x/").unwrap();
    assert_eq!(
        p,
        ParentPath {
            dir: d,
            last: Last::Name(b"x".to_vec()),
            trailing_slash: true
        }
    );
    let p = fx.fs.resolve_parent(ROOT_INO, b"d/..").unwrap();
    assert_eq!((p.dir, p.last), (d, Last::DotDot));
    let p = fx.fs.resolve_parent(ROOT_INO, b"d/.").unwrap();
    assert_eq!((p.dir, p.last), (d, Last::Dot));
    let p = fx.fs.resolve_parent(ROOT_INO, b"///").unwrap();
    assert_eq!((p.dir, p.last), (ROOT_INO, Last::Root));
    // The last component is not looked up.
    let p = fx.fs.resolve_parent(ROOT_INO, b"d/missing").unwrap();
    assert_eq!(p.last, Last::Name(b"missing".to_vec()));
    assert_eq!(
        fx.fs.resolve_parent(ROOT_INO, b"missing/x"),
        Err(Errno::ENOENT)
    );
}

// ---------------------------------------------------------------- link

#[test]
fn hard_links() {
    let mut fx = Fx::new();
    let f = fx.create("f").unwrap();
    fx.write("f", 0, b"hello");
    fx.mkdir("d").unwrap();
    fx.fs
        .link(ROOT_INO, b"f", ROOT_INO, b"d/g", false, t(5))
        .unwrap();
    assert_eq!(fx.resolve("d/g"), Ok(f));
    assert_eq!(fx.nlink("f"), 2);
    assert_eq!(fx.fs.stat(f).unwrap().ctime, t(5));
    fx.unlink("f").unwrap();
    assert_eq!(fx.contents("d/g"), b"hello");
    assert_eq!(fx.nlink("d/g"), 1);
    // Errors.
    let l = |fx: &mut Fx, a: &str, b: &str, follow| {
        fx.fs
            .link(ROOT_INO, a.as_bytes(), ROOT_INO, b.as_bytes(), follow, t(5))
    };
    assert_eq!(l(&mut fx, "d/g", "d", false), Err(Errno::EEXIST));
    assert_eq!(l(&mut fx, "d", "d2", false), Err(Errno::EPERM));
    assert_eq!(l(&mut fx, "missing", "x", false), Err(Errno::ENOENT));
    assert_eq!(l(&mut fx, "d/g", "new/", false), Err(Errno::ENOENT));
    assert_eq!(l(&mut fx, "d/g/", "x", false), Err(Errno::ENOTDIR));
    assert_eq!(l(&mut fx, "d/g", ".", false), Err(Errno::EEXIST));
    // EEXIST is checked before EPERM, as on Linux.
    assert_eq!(l(&mut fx, "d", "d/g", false), Err(Errno::EEXIST));
    // Symlinks: the link itself, or (AT_SYMLINK_FOLLOW) its target.
    let s = fx.symlink("d/g", "s").unwrap();
    l(&mut fx, "s", "s2", false).unwrap();
    l(&mut fx, "s", "g2", true).unwrap();
    assert_eq!(fx.lresolve("s2"), Ok(s));
    assert_eq!(fx.lresolve("g2"), Ok(f));
    assert_eq!(fx.nlink("s"), 2);
}

// ---------------------------------------------------------------- unlink, rmdir, open files

#[test]
fn unlink_rules() {
    let mut fx = Fx::new();
    let f = fx.create("f").unwrap();
    fx.mkdir("d").unwrap();
    fx.symlink("d", "ld").unwrap();
    assert_eq!(fx.unlink("d"), Err(Errno::EISDIR));
    assert_eq!(fx.unlink("d/"), Err(Errno::EISDIR));
    assert_eq!(fx.unlink("f/"), Err(Errno::ENOTDIR));
    assert_eq!(fx.unlink("."), Err(Errno::EISDIR));
    assert_eq!(fx.unlink("d/.."), Err(Errno::EISDIR));
    assert_eq!(fx.unlink("/"), Err(Errno::EISDIR));
    assert_eq!(fx.unlink("missing"), Err(Errno::ENOENT));
    assert_eq!(fx.unlink("missing/"), Err(Errno::ENOENT));
    assert_eq!(fx.unlink("f/x"), Err(Errno::ENOTDIR));
    assert_eq!(fx.unlink(&"n".repeat(256)), Err(Errno::ENAMETOOLONG));
    // A symlink is removed, not its target.
    fx.unlink("ld").unwrap();
    assert!(fx.resolve("d").is_ok());
    fx.unlink("f").unwrap();
    assert!(!fx.fs.exists(f));
    assert_eq!(fx.resolve("f"), Err(Errno::ENOENT));
    assert_eq!(fx.fs.stat(ROOT_INO).unwrap().mtime, t(3));
}

#[test]
fn unlinked_open_file_lives_until_last_close() {
    let mut fx = Fx::new();
    let f = fx.create("f").unwrap();
    fx.write("f", 0, &[7; 9000]);
    assert_eq!(fx.fs.statfs().pages, 3);
    fx.fs.open(f).unwrap();
    fx.fs.open(f).unwrap();
    fx.unlink("f").unwrap();
    assert_eq!(fx.resolve("f"), Err(Errno::ENOENT));
    // Still readable and writable through the open file.
    assert_eq!(fx.fs.stat(f).unwrap().nlink, 0);
    let mut buf = [0u8; 4];
    assert_eq!(fx.fs.read(f, 8998, &mut buf), Ok(2));
    assert_eq!(fx.fs.write(f, 0, b"new", t(9)), Ok(3));
    assert_eq!(fx.fs.append(f, b"x", t(9)), Ok(9000));
    fx.fs.close(f).unwrap();
    assert!(fx.fs.exists(f));
    fx.fs.close(f).unwrap();
    assert!(!fx.fs.exists(f));
    assert_eq!(
        fx.fs.statfs(),
        FsStats {
            inodes: 1,
            pages: 0,
            bytes: 0
        }
    );
    assert_eq!(fx.fs.close(f), Err(Errno::ENOENT));
    assert_eq!(fx.fs.open(f), Err(Errno::ENOENT));
}

#[test]
fn tmpfile_has_no_name_and_lives_until_closed() {
    let mut fx = Fx::new();
    let d = fx.mkdir("d").unwrap();
    fx.create("f").unwrap();
    let before = fx.fs.read_dir(d, 0, usize::MAX).unwrap();
    let ino = fx.fs.unused_ino();
    fx.fs.tmpfile(ROOT_INO, b"d", ino, FILE, t(5)).unwrap();
    let s = fx.fs.stat(ino).unwrap();
    assert_eq!((s.nlink, s.size, s.mode & 0o7777), (0, 0, 0o644));
    assert_eq!(fx.fs.read_dir(d, 0, usize::MAX).unwrap(), before);
    assert_eq!(fx.fs.stat(d).unwrap().mtime, t(1));
    assert_eq!(fx.fs.write(ino, 0, b"anon", t(6)), Ok(4));
    let n = fx.fs.unused_ino();
    assert_eq!(
        fx.fs.tmpfile(ROOT_INO, b"f", n, FILE, t(5)),
        Err(Errno::ENOTDIR)
    );
    assert_eq!(
        fx.fs.tmpfile(ROOT_INO, b"nope", n, FILE, t(5)),
        Err(Errno::ENOENT)
    );
    assert_eq!(
        fx.fs.tmpfile(ROOT_INO, b"d", ino, FILE, t(5)),
        Err(Errno::EINVAL)
    );
    fx.fs.close(ino).unwrap();
    assert!(!fx.fs.exists(ino));
    fx.fs.rmdir(ROOT_INO, b"d", t(7)).unwrap();
    fx.fs.open(d).unwrap_err();
}

#[test]
fn open_close_counts() {
    let mut fx = Fx::new();
    let f = fx.create("f").unwrap();
    assert_eq!(fx.fs.close(f), Err(Errno::EBADF));
    assert_eq!(fx.fs.open_path(ROOT_INO, b"f", true), Ok(f));
    assert_eq!(fx.fs.open_path(ROOT_INO, b"g", true), Err(Errno::ENOENT));
    fx.fs.close(f).unwrap();
    assert_eq!(fx.fs.close(f), Err(Errno::EBADF));
    // Linked and closed: stays.
    assert!(fx.fs.exists(f));
}

#[test]
fn rmdir_rules() {
    let mut fx = Fx::new();
    let d = fx.mkdir("d").unwrap();
    fx.create("d/f").unwrap();
    fx.create("file").unwrap();
    fx.mkdir("e").unwrap();
    fx.symlink("e", "le").unwrap();
    assert_eq!(fx.nlink("/"), 4);
    assert_eq!(fx.rmdir("d"), Err(Errno::ENOTEMPTY));
    assert_eq!(fx.rmdir("d/."), Err(Errno::EINVAL));
    assert_eq!(fx.rmdir("."), Err(Errno::EINVAL));
    assert_eq!(fx.rmdir("d/.."), Err(Errno::ENOTEMPTY));
    assert_eq!(fx.rmdir("/"), Err(Errno::EBUSY));
    assert_eq!(fx.rmdir("file"), Err(Errno::ENOTDIR));
    assert_eq!(fx.rmdir("le"), Err(Errno::ENOTDIR));
    assert_eq!(fx.rmdir("le/"), Err(Errno::ENOTDIR));
    assert_eq!(fx.rmdir("missing"), Err(Errno::ENOENT));
    fx.unlink("d/f").unwrap();
    fx.rmdir("d/").unwrap();
    assert!(!fx.fs.exists(d));
    assert_eq!(fx.nlink("/"), 3);
}

#[test]
fn removed_open_directory() {
    let mut fx = Fx::new();
    let d = fx.mkdir("d").unwrap();
    fx.fs.open(d).unwrap();
    fx.rmdir("d").unwrap();
    assert!(fx.fs.exists(d));
    assert_eq!(fx.fs.stat(d).unwrap().nlink, 0);
    assert_eq!(fx.fs.read_dir(d, 0, 10), Err(Errno::ENOENT));
    let ino = fx.fs.unused_ino();
    assert_eq!(
        fx.fs.create(d, b"x", ino, FILE, NEW, t(1)),
        Err(Errno::ENOENT)
    );
    assert_eq!(fx.fs.mkdir(d, b"x", ino, DIR, t(1)), Err(Errno::ENOENT));
    assert_eq!(fx.fs.resolve(d, b".", true), Ok(d));
    assert_eq!(fx.fs.resolve(d, b"..", true), Ok(ROOT_INO));
    assert_eq!(fx.fs.resolve(d, b"x", true), Err(Errno::ENOENT));
    fx.fs.close(d).unwrap();
    assert!(!fx.fs.exists(d));
}

// ---------------------------------------------------------------- rename

#[test]
fn rename_file() {
    let mut fx = Fx::new();
    let f = fx.create("f").unwrap();
    fx.mkdir("d").unwrap();
    fx.rename("f", "d/g", 0).unwrap();
    assert_eq!(fx.resolve("d/g"), Ok(f));
    assert_eq!(fx.resolve("f"), Err(Errno::ENOENT));
    assert_eq!(fx.fs.stat(f).unwrap().ctime, t(4));
    assert_eq!(fx.fs.stat(ROOT_INO).unwrap().mtime, t(4));
    // Over an existing file: the old target loses its name and is freed.
    let h = fx.create("h").unwrap();
    fx.rename("h", "d/g", 0).unwrap();
    assert_eq!(fx.resolve("d/g"), Ok(h));
    assert!(!fx.fs.exists(f));
    // NOREPLACE.
    fx.create("i").unwrap();
    assert_eq!(fx.rename("i", "d/g", RENAME_NOREPLACE), Err(Errno::EEXIST));
    fx.rename("i", "d/j", RENAME_NOREPLACE).unwrap();
}

#[test]
fn rename_over_open_file_keeps_it() {
    let mut fx = Fx::new();
    let a = fx.create("a").unwrap();
    fx.write("a", 0, b"old");
    fx.create("b").unwrap();
    fx.fs.open(a).unwrap();
    fx.rename("b", "a", 0).unwrap();
    let mut buf = [0; 3];
    assert_eq!(fx.fs.read(a, 0, &mut buf), Ok(3));
    assert_eq!(&buf, b"old");
    fx.fs.close(a).unwrap();
    assert!(!fx.fs.exists(a));
}

#[test]
fn rename_exchange() {
    let mut fx = Fx::new();
    let p = fx.mkdir("p").unwrap();
    let q = fx.mkdir("q").unwrap();
    let f = fx.create("p/f").unwrap();
    let d = fx.mkdir("q/d").unwrap();
    assert_eq!((fx.nlink("p"), fx.nlink("q")), (2, 3));
    let cookie = fx.fs.read_dir(p, 0, 10).unwrap()[2].next_cookie;
    fx.rename("p/f", "q/d", RENAME_EXCHANGE).unwrap();
    assert_eq!(fx.resolve("p/f"), Ok(d));
    assert_eq!(fx.resolve("q/d"), Ok(f));
    assert_eq!(fx.resolve("p/f/.."), Ok(p));
    assert_eq!((fx.nlink("p"), fx.nlink("q")), (3, 2));
    // The entry keeps its place in the listing.
    let list = fx.fs.read_dir(p, 0, 10).unwrap();
    assert_eq!(
        (list[2].ino, list[2].kind, list[2].next_cookie),
        (d, Kind::Dir, cookie)
    );
    assert_eq!(
        fx.rename("p/f", "q/missing", RENAME_EXCHANGE),
        Err(Errno::ENOENT)
    );
    assert_eq!(
        fx.rename("p/f", "q/d", RENAME_EXCHANGE | RENAME_NOREPLACE),
        Err(Errno::EINVAL)
    );
    // Exchanging a directory with its own ancestor.
    fx.mkdir("p/f/x").unwrap();
    assert_eq!(fx.rename("p/f/x", "p", RENAME_EXCHANGE), Err(Errno::EINVAL));
    assert_eq!(fx.rename("p", "p/f/x", RENAME_EXCHANGE), Err(Errno::EINVAL));
    let _ = q;
}

#[test]
fn rename_directories() {
    let mut fx = Fx::new();
    let a = fx.mkdir("a").unwrap();
    let b = fx.mkdir("a/b").unwrap();
    fx.mkdir("c").unwrap();
    fx.create("a/b/f").unwrap();
    fx.create("file").unwrap();
    // Into its own subtree.
    assert_eq!(fx.rename("a", "a/b/x", 0), Err(Errno::EINVAL));
    assert_eq!(fx.rename("a", "a/x", 0), Err(Errno::EINVAL));
    assert_eq!(fx.rename("a/b", "a/b/x", 0), Err(Errno::EINVAL));
    // Over an ancestor of the source: ENOTEMPTY, even for a file source.
    assert_eq!(fx.rename("a/b", "a", 0), Err(Errno::ENOTEMPTY));
    assert_eq!(fx.rename("a/b/f", "a", 0), Err(Errno::ENOTEMPTY));
    // Directory over a file, file over a directory, over a non-empty directory.
    assert_eq!(fx.rename("a", "file", 0), Err(Errno::ENOTDIR));
    assert_eq!(fx.rename("file", "c", 0), Err(Errno::EISDIR));
    assert_eq!(fx.rename("c", "a", 0), Err(Errno::ENOTEMPTY));
    // Over an empty directory: replaces it.
    let e = fx.mkdir("e").unwrap();
    assert_eq!(fx.nlink("/"), 5);
    fx.rename("c", "e", 0).unwrap();
    assert!(!fx.fs.exists(e));
    assert_eq!(fx.nlink("/"), 4);
    // Move a directory to another parent: `..` and link counts follow.
    fx.rename("a/b", "e/b2", 0).unwrap();
    assert_eq!(fx.resolve("e/b2/.."), fx.resolve("e"));
    assert!(fx.resolve("e/b2/f").is_ok());
    assert_eq!((fx.nlink("a"), fx.nlink("e")), (2, 3));
    assert_eq!(
        fx.fs.read_dir(b, 1, 1).unwrap()[0].ino,
        fx.resolve("e").unwrap()
    );
    // A directory's path with a trailing slash is fine.
    fx.rename("e/b2/", "a/b3/", 0).unwrap();
    assert_eq!(fx.resolve("a/b3"), Ok(b));
    let _ = a;
}

#[test]
fn rename_noops_and_name_rules() {
    let mut fx = Fx::new();
    let f = fx.create("f").unwrap();
    fx.fs
        .link(ROOT_INO, b"f", ROOT_INO, b"g", false, t(1))
        .unwrap();
    // Same inode: nothing happens, both names stay.
    fx.rename("f", "g", 0).unwrap();
    assert_eq!((fx.resolve("f"), fx.resolve("g")), (Ok(f), Ok(f)));
    fx.rename("f", "f", 0).unwrap();
    assert_eq!(fx.resolve("f"), Ok(f));
    assert_eq!(fx.fs.stat(f).unwrap().ctime, t(1));
    fx.mkdir("d").unwrap();
    assert_eq!(fx.rename(".", "x", 0), Err(Errno::EBUSY));
    assert_eq!(fx.rename("d/..", "x", 0), Err(Errno::EBUSY));
    assert_eq!(fx.rename("/", "x", 0), Err(Errno::EBUSY));
    assert_eq!(fx.rename("f", "d/.", 0), Err(Errno::EBUSY));
    assert_eq!(fx.rename("f", "d/.", RENAME_NOREPLACE), Err(Errno::EEXIST));
    assert_eq!(fx.rename("missing", "x", 0), Err(Errno::ENOENT));
    assert_eq!(fx.rename("f", "missing/x", 0), Err(Errno::ENOENT));
    assert_eq!(fx.rename("f/", "x", 0), Err(Errno::ENOTDIR));
    assert_eq!(fx.rename("f", "x/", 0), Err(Errno::ENOTDIR));
    assert_eq!(fx.rename("f", "x", 8), Err(Errno::EINVAL));
    assert_eq!(fx.rename("f", "x", RENAME_WHITEOUT), Err(Errno::EINVAL));
    assert_eq!(
        fx.rename("f", &"n".repeat(256), 0),
        Err(Errno::ENAMETOOLONG)
    );
    fx.rename("d/", "e/", 0).unwrap();
}

// ---------------------------------------------------------------- data

#[test]
fn read_write_sparse() {
    let mut fx = Fx::new();
    let f = fx.create("f").unwrap();
    assert_eq!(fx.fs.write(f, 5000, b"abc", t(7)), Ok(3));
    let st = fx.fs.stat(f).unwrap();
    assert_eq!(
        (st.size, st.blocks, st.mtime, st.ctime),
        (5003, 8, t(7), t(7))
    );
    let mut buf = vec![0xffu8; 6000];
    assert_eq!(fx.fs.read(f, 0, &mut buf), Ok(5003));
    assert!(buf[..5000].iter().all(|&b| b == 0));
    assert_eq!(&buf[5000..5003], b"abc");
    assert_eq!(fx.fs.read(f, 5003, &mut buf), Ok(0));
    assert_eq!(fx.fs.read(f, u64::MAX, &mut buf), Ok(0));
    assert_eq!(fx.fs.read(f, 5001, &mut buf[..1]), Ok(1));
    assert_eq!(buf[0], b'b');
    // Across a page boundary.
    let data: Vec<u8> = (0..10000u32).map(|i| i as u8).collect();
    fx.fs.write(f, 4090, &data, t(8)).unwrap();
    let mut back = vec![0u8; 10000];
    assert_eq!(fx.fs.read(f, 4090, &mut back), Ok(10000));
    assert_eq!(back, data);
    // Empty writes change nothing.
    assert_eq!(fx.fs.write(f, 1 << 40, b"", t(99)), Ok(0));
    assert_eq!(fx.fs.stat(f).unwrap().mtime, t(8));
    assert_eq!(fx.fs.stat(f).unwrap().size, 14090);
}

#[test]
fn data_errors() {
    let mut fx = Fx::new();
    let f = fx.create("f").unwrap();
    let l = fx.symlink("f", "l").unwrap();
    let mut buf = [0u8; 4];
    assert_eq!(fx.fs.read(ROOT_INO, 0, &mut buf), Err(Errno::EISDIR));
    assert_eq!(fx.fs.write(ROOT_INO, 0, b"x", t(1)), Err(Errno::EISDIR));
    assert_eq!(fx.fs.append(ROOT_INO, b"x", t(1)), Err(Errno::EISDIR));
    assert_eq!(fx.fs.truncate(ROOT_INO, 0, t(1)), Err(Errno::EISDIR));
    assert_eq!(fx.fs.read(l, 0, &mut buf), Err(Errno::EINVAL));
    assert_eq!(fx.fs.read(999, 0, &mut buf), Err(Errno::ENOENT));
    assert_eq!(fx.fs.write(999, 0, b"x", t(1)), Err(Errno::ENOENT));
    assert_eq!(fx.fs.write(f, MAX_FILE_SIZE, b"x", t(1)), Err(Errno::EFBIG));
    assert_eq!(fx.fs.write(f, MAX_FILE_SIZE - 1, b"xyz", t(1)), Ok(1));
    assert_eq!(fx.fs.stat(f).unwrap().size, MAX_FILE_SIZE);
    assert_eq!(fx.fs.append(f, b"x", t(1)), Err(Errno::EFBIG));
    assert_eq!(
        fx.fs.truncate(f, MAX_FILE_SIZE + 1, t(1)),
        Err(Errno::EFBIG)
    );
    assert_eq!(fx.fs.statfs().pages, 1);
}

#[test]
fn append_is_positioned_at_the_end() {
    let mut fx = Fx::new();
    let f = fx.create("f").unwrap();
    assert_eq!(fx.fs.append(f, b"ab", t(1)), Ok(0));
    assert_eq!(fx.fs.append(f, b"cd", t(1)), Ok(2));
    fx.fs.truncate(f, 1, t(1)).unwrap();
    assert_eq!(fx.fs.append(f, b"Z", t(1)), Ok(1));
    assert_eq!(fx.contents("f"), b"aZ");
}

#[test]
fn truncate_shrinks_and_zeroes() {
    let mut fx = Fx::new();
    let f = fx.create("f").unwrap();
    fx.fs.write(f, 0, &[9u8; 3 * 4096], t(1)).unwrap();
    assert_eq!(fx.fs.statfs().pages, 3);
    fx.fs.truncate(f, 4100, t(2)).unwrap();
    assert_eq!(fx.fs.statfs().pages, 2);
    assert_eq!(fx.fs.stat(f).unwrap().mtime, t(2));
    // Growing again shows zeros past the cut, not the old bytes.
    fx.fs.truncate(f, 3 * 4096, t(3)).unwrap();
    let mut buf = vec![0u8; 3 * 4096];
    fx.fs.read(f, 0, &mut buf).unwrap();
    assert!(buf[..4100].iter().all(|&b| b == 9));
    assert!(buf[4100..].iter().all(|&b| b == 0));
    // Same size: times unchanged.
    fx.fs.truncate(f, 3 * 4096, t(4)).unwrap();
    assert_eq!(fx.fs.stat(f).unwrap().mtime, t(3));
    fx.fs.truncate(f, 0, t(5)).unwrap();
    assert_eq!(fx.fs.statfs().pages, 0);
    assert_eq!(fx.fs.stat(f).unwrap().size, 0);
}

// ---------------------------------------------------------------- attributes

#[test]
fn chmod_chown_times() {
    let mut fx = Fx::new();
    let f = fx.create("f").unwrap();
    let l = fx.symlink("f", "l").unwrap();
    fx.fs.chmod(f, 0o106755, t(2)).unwrap();
    let st = fx.fs.stat(f).unwrap();
    assert_eq!((st.mode, st.ctime, st.mtime), (0o6755, t(2), t(1)));
    // chown clears set-user-ID, and set-group-ID because group-executable.
    fx.fs.chown(f, Some(7), None, t(3)).unwrap();
    let st = fx.fs.stat(f).unwrap();
    assert_eq!((st.uid, st.gid, st.mode, st.ctime), (7, 100, 0o755, t(3)));
    fx.fs.chmod(f, 0o2745, t(3)).unwrap();
    fx.fs.chown(f, None, Some(8), t(3)).unwrap();
    assert_eq!(fx.fs.stat(f).unwrap().mode, 0o2745);
    // Directories keep their bits.
    fx.fs.chmod(ROOT_INO, 0o2775, t(3)).unwrap();
    fx.fs.chown(ROOT_INO, Some(1), Some(1), t(3)).unwrap();
    assert_eq!(fx.fs.stat(ROOT_INO).unwrap().mode, 0o2775);
    assert_eq!(fx.fs.chmod(l, 0o600, t(3)), Err(Errno::EOPNOTSUPP));
    fx.fs.chown(l, Some(5), Some(5), t(3)).unwrap();
    assert_eq!(fx.fs.stat(l).unwrap().uid, 5);
    // utimensat.
    fx.fs.set_times(f, Some(t(100)), None, t(4)).unwrap();
    let st = fx.fs.stat(f).unwrap();
    assert_eq!((st.atime, st.mtime, st.ctime), (t(100), t(1), t(4)));
    fx.fs
        .set_times(f, None, Some(Timespec::new(200, 5)), t(5))
        .unwrap();
    let st = fx.fs.stat(f).unwrap();
    assert_eq!(
        (st.atime, st.mtime, st.ctime),
        (t(100), Timespec::new(200, 5), t(5))
    );
    fx.fs.set_times(f, None, None, t(6)).unwrap();
    assert_eq!(fx.fs.stat(f).unwrap().ctime, t(5));
    assert_eq!(fx.fs.chmod(999, 0, t(1)), Err(Errno::ENOENT));
    assert_eq!(fx.fs.chown(999, None, None, t(1)), Err(Errno::ENOENT));
    assert_eq!(fx.fs.set_times(999, None, None, t(1)), Err(Errno::ENOENT));
    // Reads do not touch atime.
    fx.fs.read(f, 0, &mut [0; 1]).unwrap();
    assert_eq!(fx.fs.stat(f).unwrap().atime, t(100));
}

#[test]
fn sizes_of_directories_and_symlinks() {
    let mut fx = Fx::new();
    fx.create("a").unwrap();
    fx.create("b").unwrap();
    assert_eq!(fx.fs.stat(ROOT_INO).unwrap().size, 80);
    let l = fx.symlink("abcdef", "l").unwrap();
    assert_eq!(fx.fs.stat(l).unwrap().size, 6);
}

// ---------------------------------------------------------------- read_dir

#[test]
fn read_dir_lists_dots_and_entries_in_creation_order() {
    let mut fx = Fx::new();
    let d = fx.mkdir("d").unwrap();
    let b = fx.create("d/b").unwrap();
    let sub = fx.mkdir("d/a").unwrap();
    let list = fx.fs.read_dir(d, 0, 100).unwrap();
    let got: Vec<_> = list
        .iter()
        .map(|e| (e.name.clone(), e.ino, e.kind))
        .collect();
    assert_eq!(
        got,
        vec![
            (b".".to_vec(), d, Kind::Dir),
            (b"..".to_vec(), ROOT_INO, Kind::Dir),
            (b"b".to_vec(), b, Kind::File),
            (b"a".to_vec(), sub, Kind::Dir),
        ]
    );
    // Cookies continue after each entry.
    for (i, e) in list.iter().enumerate() {
        let rest = fx.fs.read_dir(d, e.next_cookie, 100).unwrap();
        assert_eq!(rest, list[i + 1..].to_vec());
    }
    assert_eq!(fx.fs.read_dir(d, 0, 0).unwrap(), vec![]);
    assert_eq!(fx.fs.read_dir(d, 1000, 10).unwrap(), vec![]);
    assert_eq!(fx.fs.read_dir(b, 0, 10), Err(Errno::ENOTDIR));
    assert_eq!(fx.fs.read_dir(999, 0, 10), Err(Errno::ENOENT));
}

#[test]
fn read_dir_is_stable_under_concurrent_changes() {
    let mut fx = Fx::new();
    let d = fx.mkdir("d").unwrap();
    for i in 0..20 {
        fx.create(&format!("d/keep{i}")).unwrap();
        fx.create(&format!("d/tmp{i}")).unwrap();
    }
    // List two entries at a time; between calls delete, create and rename others.
    let mut cookie = 0;
    let mut seen = Vec::new();
    let mut step = 0;
    loop {
        let chunk = fx.fs.read_dir(d, cookie, 2).unwrap();
        if chunk.is_empty() {
            break;
        }
        for e in &chunk {
            seen.push(String::from_utf8(e.name.clone()).unwrap());
        }
        cookie = chunk.last().unwrap().next_cookie;
        if step < 20 {
            fx.unlink(&format!("d/tmp{step}")).unwrap();
            fx.create(&format!("d/new{step}")).unwrap();
            if step % 3 == 0 {
                fx.rename(&format!("d/new{step}"), &format!("d/moved{step}"), 0)
                    .unwrap();
            }
        }
        step += 1;
    }
    let mut sorted = seen.clone();
    sorted.sort();
    sorted.dedup();
    assert_eq!(sorted.len(), seen.len(), "duplicates in {seen:?}");
    for i in 0..20 {
        assert!(
            seen.contains(&format!("keep{i}")),
            "keep{i} missing from {seen:?}"
        );
    }
    assert!(seen.contains(&".".to_string()) && seen.contains(&"..".to_string()));
    assert_eq!(fx.names("d").len(), 2 + 40);
}

#[test]
fn lend_pages_needs_a_page_sharing() {
    // This test binary never installs one (tests/sharing.rs does, in its own process).
    let mut fx = Fx::new();
    let f = fx.create("/lent").unwrap();
    fx.fs.write(f, 0, &[1; 4096], t(2)).unwrap();
    assert_eq!(fx.fs.lend_pages(f, 0, 1), Err(Errno::EOPNOTSUPP));
}
