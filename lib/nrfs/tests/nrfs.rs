//! Tests of the replicated NR-FS on one thread: construction, replication between replicas,
//! write payloads, scans, stale operations and statistics.

use std::sync::Arc;

use abi::Errno;
use nr::Payload;
use nrfs::*;

fn t(sec: i64) -> Timespec {
    Timespec::new(sec, 0)
}

const FILE: Attrs = Attrs::new(0o644, 1, 1);
const NEW: CreateFlags = CreateFlags {
    exclusive: false,
    open: false,
};

fn setup(
    nlogs: usize,
    entries: usize,
    nreplicas: usize,
) -> (NrFs, Vec<Arc<FsReplica>>, Vec<FsClient>) {
    let (fs, replicas) = NrFs::new(nlogs, entries, nreplicas).unwrap();
    let clients = replicas.iter().map(|r| fs.client(r).unwrap()).collect();
    (fs, replicas, clients)
}

fn snapshot(c: &FsClient) -> FileSystem {
    c.replica().verify(c.token(), |d| d.snapshot())
}

#[test]
fn construction_errors() {
    assert_eq!(NrFs::new(0, 64, 2).unwrap_err(), Errno::EINVAL);
    assert_eq!(NrFs::new(65, 64, 2).unwrap_err(), Errno::EINVAL);
    assert_eq!(NrFs::new(2, 63, 2).unwrap_err(), Errno::EINVAL);
    assert_eq!(NrFs::new(2, 1, 2).unwrap_err(), Errno::EINVAL);
    assert_eq!(NrFs::new(2, 64, 0).unwrap_err(), Errno::EINVAL);
    assert_eq!(NrFs::new(2, 64, 17).unwrap_err(), Errno::EINVAL);
    let (fs, replicas) = NrFs::new(2, 64, 2).unwrap();
    assert_eq!((fs.nlogs(), fs.replicas(), replicas.len()), (2, 2, 2));
    assert_eq!(fs.new_replica(4).unwrap_err(), Errno::ENOSPC);
    assert_eq!(fs.new_replica(0).unwrap_err(), Errno::EINVAL);
    assert_eq!(fs.new_replica(65).unwrap_err(), Errno::EINVAL);
}

#[test]
fn with_logs_and_new_replica() {
    let logs = nr::cnr::Logs::with_capacity(3, 16);
    let fs = NrFs::with_logs(logs, 2, Attrs::new(0o700, 5, 6), t(42)).unwrap();
    let r0 = fs.new_replica(2).unwrap();
    let r1 = fs.new_replica(2).unwrap();
    let c0 = fs.client(&r0).unwrap();
    let c1 = fs.client(&r1).unwrap();
    let _c0b = fs.client(&r0).unwrap();
    assert!(fs.client(&r0).is_none(), "two threads per replica");
    let st = c1.stat(ROOT_INO).unwrap();
    assert_eq!((st.mode, st.uid, st.gid, st.mtime), (0o700, 5, 6, t(42)));
    c0.mkdir(ROOT_INO, b"d", FILE, t(43)).unwrap();
    assert_eq!(c1.stat(ROOT_INO).unwrap().nlink, 3);
}

#[test]
fn updates_on_one_replica_are_seen_on_another() {
    let (_fs, _r, c) = setup(4, 64, 3);
    let d = c[0]
        .mkdir(ROOT_INO, b"d", Attrs::new(0o755, 0, 0), t(1))
        .unwrap();
    let f = c[1].create(ROOT_INO, b"d/f", FILE, NEW, t(2)).unwrap();
    assert!(f.created);
    assert_eq!(c[2].resolve(ROOT_INO, b"/d/f", true), Ok(f.ino));
    assert_eq!(c[2].write(f.ino, 3, b"xyz", t(3)), Ok(3));
    let mut buf = [1u8; 10];
    assert_eq!(c[0].read(f.ino, 0, &mut buf), Ok(6));
    assert_eq!(&buf[..6], b"\0\0\0xyz");
    assert_eq!(c[1].append(f.ino, b"!", t(4)), Ok(6));
    assert_eq!(c[0].stat(f.ino).unwrap().size, 7);
    c[0].symlink(b"d/f", ROOT_INO, b"l", FILE, t(5)).unwrap();
    assert_eq!(c[1].resolve(ROOT_INO, b"l", true), Ok(f.ino));
    let l = c[2].resolve(ROOT_INO, b"l", false).unwrap();
    assert_eq!(c[2].readlink(l).unwrap(), b"d/f");
    c[2].link(ROOT_INO, b"d/f", ROOT_INO, b"hard", false, t(6))
        .unwrap();
    assert_eq!(c[0].stat(f.ino).unwrap().nlink, 2);
    c[1].rename(ROOT_INO, b"hard", d, b"moved", 0, t(7))
        .unwrap();
    let names: Vec<_> = c[0]
        .read_dir(d, 0, 10)
        .unwrap()
        .into_iter()
        .map(|e| e.name)
        .collect();
    assert_eq!(
        names,
        vec![
            b".".to_vec(),
            b"..".to_vec(),
            b"f".to_vec(),
            b"moved".to_vec()
        ]
    );
    c[0].unlink(d, b"moved", t(8)).unwrap();
    c[0].unlink(ROOT_INO, b"d/f", t(8)).unwrap();
    assert_eq!(c[2].stat(f.ino), Err(Errno::ENOENT));
    c[1].rmdir(ROOT_INO, b"d", t(9)).unwrap();
    assert_eq!(c[2].lookup(ROOT_INO, b"d"), Err(Errno::ENOENT));
    let dev = c[2].mknod(ROOT_INO, b"tty", FILE, 0x400, t(10)).unwrap();
    assert_eq!(c[0].stat(dev).unwrap().rdev, 0x400);
    c[0].chmod(dev, 0o600, t(11)).unwrap();
    c[1].chown(dev, Some(9), None, t(12)).unwrap();
    c[2].set_times(dev, Some(t(1)), Some(t(2)), t(13)).unwrap();
    let st = c[0].stat(dev).unwrap();
    assert_eq!(
        (st.mode, st.uid, st.atime, st.mtime, st.ctime),
        (0o600, 9, t(1), t(2), t(13))
    );
    let fifo = c[1].mkfifo(ROOT_INO, b"pipe", FILE, t(14)).unwrap();
    let st = c[2].stat(fifo).unwrap();
    assert_eq!((st.kind, st.st_mode()), (Kind::Fifo, 0o010644));
    assert_eq!(c[0].lookup(ROOT_INO, b"pipe"), Ok(fifo));
    assert_eq!(c[0].read(fifo, 0, &mut [0; 4]), Err(Errno::EINVAL));
    assert_eq!(
        c[2].mkfifo(ROOT_INO, b"pipe", FILE, t(14)),
        Err(Errno::EEXIST)
    );
    c[2].rename(ROOT_INO, b"pipe", ROOT_INO, b"fifo", 0, t(15))
        .unwrap();
    assert_eq!(c[1].resolve(ROOT_INO, b"fifo", true), Ok(fifo));
    assert_eq!(c[1].statfs().unwrap().inodes, 4);
    let a = snapshot(&c[0]);
    assert_eq!(a, snapshot(&c[1]));
    assert_eq!(a, snapshot(&c[2]));
}

#[test]
fn errors_are_the_sequential_ones() {
    let (_fs, _r, c) = setup(3, 32, 2);
    assert_eq!(c[0].unlink(ROOT_INO, b"missing", t(1)), Err(Errno::ENOENT));
    assert_eq!(c[0].rmdir(ROOT_INO, b"/", t(1)), Err(Errno::EBUSY));
    assert_eq!(
        c[0].rename(ROOT_INO, b"a", ROOT_INO, b"b", 3, t(1)),
        Err(Errno::EINVAL)
    );
    c[0].mkdir(ROOT_INO, b"a", FILE, t(1)).unwrap();
    c[1].mkdir(ROOT_INO, b"a/b", FILE, t(1)).unwrap();
    assert_eq!(
        c[1].rename(ROOT_INO, b"a", ROOT_INO, b"a/b/c", 0, t(1)),
        Err(Errno::EINVAL)
    );
    assert_eq!(
        c[0].rename(ROOT_INO, b"a/b", ROOT_INO, b"a", 0, t(1)),
        Err(Errno::ENOTEMPTY)
    );
    assert_eq!(
        c[0].create(ROOT_INO, b"a", FILE, NEW, t(1)),
        Err(Errno::EISDIR)
    );
    assert_eq!(c[0].mkdir(ROOT_INO, b"a", FILE, t(1)), Err(Errno::EEXIST));
    assert_eq!(
        c[0].symlink(b"", ROOT_INO, b"s", FILE, t(1)),
        Err(Errno::ENOENT)
    );
    assert_eq!(
        c[0].link(ROOT_INO, b"a", ROOT_INO, b"x", false, t(1)),
        Err(Errno::EPERM)
    );
    assert_eq!(c[0].read(ROOT_INO, 0, &mut [0; 3]), Err(Errno::EISDIR));
    assert_eq!(c[0].close(ROOT_INO), Err(Errno::EBADF));
    assert_eq!(c[0].open_path(ROOT_INO, b"nope", true), Err(Errno::ENOENT));
    assert_eq!(c[0].lookup(ROOT_INO, b".."), Ok(ROOT_INO));
    assert_eq!(
        c[0].resolve_parent(ROOT_INO, b"a/b/c").unwrap().last,
        Last::Name(b"c".to_vec())
    );
}

#[test]
fn tmpfile_across_replicas() {
    let (_fs, _r, c) = setup(2, 16, 2);
    let f = c[0].tmpfile(ROOT_INO, b"/", FILE, t(1)).unwrap();
    c[1].write(f, 0, b"data", t(2)).unwrap();
    let mut buf = [0; 4];
    assert_eq!(c[0].read(f, 0, &mut buf), Ok(4));
    assert_eq!(c[1].stat(f).unwrap().nlink, 0);
    assert_eq!(c[1].read_dir(ROOT_INO, 0, usize::MAX).unwrap().len(), 2);
    c[1].close(f).unwrap();
    assert_eq!(c[0].stat(f), Err(Errno::ENOENT));
    assert_eq!(c[0].statfs().unwrap().inodes, 1);
}

#[test]
fn unlinked_open_file_across_replicas() {
    let (_fs, _r, c) = setup(2, 16, 2);
    let f = c[0]
        .create(
            ROOT_INO,
            b"f",
            FILE,
            CreateFlags {
                exclusive: true,
                open: true,
            },
            t(1),
        )
        .unwrap()
        .ino;
    c[1].write(f, 0, b"data", t(2)).unwrap();
    c[1].unlink(ROOT_INO, b"f", t(3)).unwrap();
    let mut buf = [0; 4];
    assert_eq!(c[0].read(f, 0, &mut buf), Ok(4));
    assert_eq!(c[1].open_path(ROOT_INO, b"f", true), Err(Errno::ENOENT));
    c[0].close(f).unwrap();
    assert_eq!(c[1].stat(f), Err(Errno::ENOENT));
    assert_eq!(
        c[1].statfs().unwrap(),
        FsStats {
            inodes: 1,
            pages: 0,
            bytes: 0
        }
    );
}

#[test]
fn write_payload_is_freed_when_every_replica_applied_it() {
    let (_fs, _r, c) = setup(2, 64, 2);
    let f = c[0].create(ROOT_INO, b"f", FILE, NEW, t(1)).unwrap().ino;
    // Bring replica 1 up to date, then write on replica 0 only.
    c[1].stat(f).unwrap();
    let data = Payload::new(vec![5u8; 10_000], 2);
    let resp = c[0].update_op(FsUpdate::Write {
        ino: f,
        offset: 0,
        data: data.clone(),
        now: t(2),
    });
    assert_eq!(resp, Ok(FsValue::Len(10_000)));
    assert!(
        !data.is_released(),
        "replica 1 has not applied the write yet"
    );
    // A read on replica 1 catches up with the file's log and applies the write.
    let mut buf = vec![0u8; 10_000];
    assert_eq!(c[1].read(f, 0, &mut buf), Ok(10_000));
    assert!(buf.iter().all(|&b| b == 5));
    assert!(data.is_released());
    // A failing write also releases its payload.
    let data = Payload::new(vec![1u8; 3], 2);
    let resp = c[0].update_op(FsUpdate::Write {
        ino: ROOT_INO,
        offset: 0,
        data: data.clone(),
        now: t(2),
    });
    assert_eq!(resp, Err(FsError::Errno(Errno::EISDIR)));
    c[1].stat(ROOT_INO).unwrap();
    assert!(data.is_released());
}

/// An inode number whose log is `log` (inode numbers are hashed modulo the log count).
fn ino_in_log(fs: &NrFs, log: usize) -> Ino {
    loop {
        let ino = fs.alloc_ino();
        if ino % fs.nlogs() as u64 == log as u64 {
            return ino;
        }
    }
}

#[test]
fn namespace_operations_are_scans_over_their_inodes_logs() {
    let (fs, _r, c) = setup(4, 64, 2);
    // Root is inode 1 (log 1). A new file in log 3: the create is a scan over logs 1 and 3.
    let ino = ino_in_log(&fs, 3);
    let before = fs.log_stats();
    let op = FsUpdate::Namespace {
        op: NamespaceOp::Create {
            dir: ROOT_INO,
            name: b"f".to_vec(),
            ino,
            attrs: FILE,
            flags: NEW,
        },
        scope: Scope::Also([None, None]),
        now: t(1),
    };
    assert_eq!(
        c[0].update_op(op),
        Ok(FsValue::Created(Created { ino, created: true }))
    );
    let after = fs.log_stats();
    let grew: Vec<usize> = (0..4)
        .filter(|&j| after[j].submitted > before[j].submitted)
        .collect();
    assert_eq!(grew, vec![1, 3]);
    // A write to the file only uses log 3.
    c[0].write(ino, 0, b"x", t(2)).unwrap();
    let last = fs.log_stats();
    assert_eq!(last[3].submitted, after[3].submitted + 1);
    assert_eq!(last[1].submitted, after[1].submitted);
    // Once both replicas caught up, each applied exactly what was submitted.
    c[1].replica().sync(c[1].token());
    c[0].replica().sync(c[0].token());
    for s in fs.log_stats() {
        assert_eq!(s.applied, vec![s.submitted, s.submitted], "log {}", s.log);
    }
}

#[test]
fn stale_operations_change_nothing() {
    let (fs, _r, c) = setup(4, 64, 2);
    let f = c[0].create(ROOT_INO, b"f", FILE, NEW, t(1)).unwrap().ino;
    assert_ne!(
        f % 4,
        ROOT_INO % 4,
        "the file's log differs from the root's"
    );
    let before = snapshot(&c[0]);
    // An unlink that does not declare the victim cannot reach it: stale, on every replica.
    let op = FsUpdate::Namespace {
        op: NamespaceOp::Unlink {
            dir: ROOT_INO,
            name: b"f".to_vec(),
            trailing: false,
        },
        scope: Scope::Also([None, None]),
        now: t(2),
    };
    assert_eq!(c[1].update_op(op.clone()), Err(FsError::Stale));
    assert_eq!(snapshot(&c[0]), before);
    assert_eq!(snapshot(&c[1]), before);
    // The same with the victim declared, or over all logs, works.
    let declared = FsUpdate::Namespace {
        op: NamespaceOp::Unlink {
            dir: ROOT_INO,
            name: b"f".to_vec(),
            trailing: false,
        },
        scope: Scope::Also([Some(f), None]),
        now: t(2),
    };
    assert_eq!(c[1].update_op(declared), Ok(FsValue::Done));
    let g = c[0].create(ROOT_INO, b"g", FILE, NEW, t(3)).unwrap().ino;
    let all = FsUpdate::Namespace {
        op: NamespaceOp::Rename {
            old_dir: ROOT_INO,
            old_name: b"g".to_vec(),
            old_trailing: false,
            new_dir: ROOT_INO,
            new_name: b"h".to_vec(),
            new_trailing: false,
            flags: 0,
        },
        scope: Scope::All,
        now: t(4),
    };
    assert_eq!(c[0].update_op(all), Ok(FsValue::Done));
    assert_eq!(c[1].lookup(ROOT_INO, b"h"), Ok(g));
    // A create that finds a symlink where it planned a new file is stale too (the client
    // follows the link and retries).
    c[0].symlink(b"target", ROOT_INO, b"s", FILE, t(5)).unwrap();
    let ino = ino_in_log(&fs, 0);
    let op = FsUpdate::Namespace {
        op: NamespaceOp::Create {
            dir: ROOT_INO,
            name: b"s".to_vec(),
            ino,
            attrs: FILE,
            flags: NEW,
        },
        scope: Scope::Also([None, None]),
        now: t(6),
    };
    assert_eq!(c[0].update_op(op), Err(FsError::Stale));
    let made = c[0].create(ROOT_INO, b"s", FILE, NEW, t(6)).unwrap();
    assert!(made.created);
    assert_eq!(c[1].resolve(ROOT_INO, b"target", false), Ok(made.ino));
    assert_eq!(snapshot(&c[0]), snapshot(&c[1]));
}

#[test]
fn directory_moves_between_directories() {
    let (_fs, _r, c) = setup(4, 32, 2);
    let a = c[0].mkdir(ROOT_INO, b"a", FILE, t(1)).unwrap();
    let b = c[1].mkdir(ROOT_INO, b"b", FILE, t(1)).unwrap();
    let x = c[0].mkdir(a, b"x", FILE, t(1)).unwrap();
    c[0].create(x, b"f", FILE, NEW, t(1)).unwrap();
    c[1].rename(a, b"x", b, b"y", 0, t(2)).unwrap();
    assert_eq!(c[0].resolve(ROOT_INO, b"b/y/..", true), Ok(b));
    assert_eq!(
        (c[0].stat(a).unwrap().nlink, c[0].stat(b).unwrap().nlink),
        (2, 3)
    );
    assert_eq!(
        c[1].rename(ROOT_INO, b"b", b, b"y/z", 0, t(3)),
        Err(Errno::EINVAL)
    );
    c[0].rename(ROOT_INO, b"a", b, b"y", RENAME_EXCHANGE, t(4))
        .unwrap();
    assert!(c[1].resolve(ROOT_INO, b"a/f", true).is_ok());
    assert_eq!(snapshot(&c[0]), snapshot(&c[1]));
}

#[test]
fn small_logs_wrap_around() {
    // 2-entry logs: every few operations the log is full and the other replica must catch up.
    let (fs, _r, c) = setup(2, 2, 2);
    for i in 0..50u64 {
        let name = format!("f{i}");
        let f = c[(i % 2) as usize]
            .create(ROOT_INO, name.as_bytes(), FILE, NEW, t(1))
            .unwrap();
        c[((i + 1) % 2) as usize]
            .write(f.ino, i, b"z", t(2))
            .unwrap();
        if i % 3 == 0 {
            c[0].unlink(ROOT_INO, name.as_bytes(), t(3)).unwrap();
        }
    }
    assert_eq!(c[1].read_dir(ROOT_INO, 0, 100).unwrap().len(), 2 + 33);
    assert_eq!(snapshot(&c[0]), snapshot(&c[1]));
    let total: u64 = fs.log_stats().iter().map(|s| s.submitted).sum();
    assert!(total >= 150);
    assert!(format!("{:?}", fs.logs()).contains("tail"));
}

#[test]
fn open_of_an_entry_opens_what_it_names_when_applied() {
    let (_fs, _r, c) = setup(4, 64, 2);
    let open_op =
        |name: &[u8], follow: bool, must_be_dir: bool, scope: Scope| FsUpdate::Namespace {
            op: NamespaceOp::Open {
                dir: ROOT_INO,
                name: name.to_vec(),
                follow,
                must_be_dir,
            },
            scope,
            now: t(1),
        };
    // Planned for inode `a`, applied after `b` was renamed over the name: `b` is opened when
    // its log is in the scope, else the open is stale and changes nothing.
    let a = c[0].create(ROOT_INO, b"f", FILE, NEW, t(1)).unwrap().ino;
    let b = loop {
        let b = c[0].create(ROOT_INO, b"g", FILE, NEW, t(1)).unwrap().ino;
        if b % 4 != a % 4 && b % 4 != ROOT_INO % 4 {
            break b;
        }
        c[0].unlink(ROOT_INO, b"g", t(1)).unwrap();
    };
    c[0].rename(ROOT_INO, b"g", ROOT_INO, b"f", 0, t(2))
        .unwrap();
    let before = snapshot(&c[1]);
    assert_eq!(
        c[1].update_op(open_op(b"f", true, false, Scope::Also([Some(a), None]))),
        Err(FsError::Stale)
    );
    assert_eq!(snapshot(&c[1]), before);
    assert_eq!(
        c[1].update_op(open_op(b"f", true, false, Scope::Also([Some(b), None]))),
        Ok(FsValue::Ino(b))
    );
    // Opened once: an unlink leaves it, the close frees it.
    c[0].unlink(ROOT_INO, b"f", t(3)).unwrap();
    assert_eq!(c[1].stat(b).map(|s| s.nlink), Ok(0));
    c[1].close(b).unwrap();
    assert_eq!(c[0].stat(b), Err(Errno::ENOENT));
    // A missing entry is ENOENT; a symlink to follow is stale (the client follows it); a
    // trailing slash wants a directory.
    assert_eq!(
        c[0].update_op(open_op(b"f", true, false, Scope::All)),
        Err(FsError::Errno(Errno::ENOENT))
    );
    c[0].symlink(b"d", ROOT_INO, b"s", FILE, t(4)).unwrap();
    assert_eq!(
        c[0].update_op(open_op(b"s", true, false, Scope::All)),
        Err(FsError::Stale)
    );
    c[0].create(ROOT_INO, b"h", FILE, NEW, t(4)).unwrap();
    assert_eq!(
        c[0].update_op(open_op(b"h", true, true, Scope::All)),
        Err(FsError::Errno(Errno::ENOTDIR))
    );
    let d = c[0].mkdir(ROOT_INO, b"d", FILE, t(5)).unwrap();
    assert_eq!(c[1].open_path(ROOT_INO, b"s/", false), Ok(d));
    assert_eq!(c[1].open_path(ROOT_INO, b"d/..", false), Ok(ROOT_INO));
    assert_eq!(c[1].open_path(ROOT_INO, b"h/", true), Err(Errno::ENOTDIR));
    c[1].close(d).unwrap();
    c[1].close(ROOT_INO).unwrap();
    assert_eq!(snapshot(&c[0]), snapshot(&c[1]));
}

/// A directory covered by another file system: walks that reach it through a symlink end
/// with EXDEV, and `walk::exit` says where they left and what was left of the path; walks by
/// name alone are not stopped (their caller places them).
#[test]
fn covered_directories_end_walks_through_symlinks() {
    use nrfs::walk::{self, Exit};
    let (fs, _r, c) = setup(2, 256, 1);
    let c = &c[0];
    let mnt = c.mkdir(ROOT_INO, b"mnt", FILE, t(1)).unwrap();
    let home = c.mkdir(ROOT_INO, b"home", FILE, t(1)).unwrap();
    c.symlink(b"/mnt/a/b", home, b"abs", FILE, t(2)).unwrap();
    c.symlink(b"../mnt", home, b"rel", FILE, t(2)).unwrap();
    c.symlink(b"/home", ROOT_INO, b"h", FILE, t(2)).unwrap();
    fs.cover(mnt).unwrap();
    assert_eq!(fs.cover(mnt), Err(Errno::EBUSY));

    // By name: the shadowed directory, as before.
    assert_eq!(c.resolve(ROOT_INO, b"/mnt", true), Ok(mnt));
    // Through symlinks: EXDEV, for every kind of walk.
    assert_eq!(c.resolve(ROOT_INO, b"/home/abs", true), Err(Errno::EXDEV));
    assert_eq!(c.resolve(ROOT_INO, b"/home/rel/x", true), Err(Errno::EXDEV));
    assert_eq!(c.resolve(ROOT_INO, b"/home/rel", true), Err(Errno::EXDEV));
    assert_eq!(
        c.resolve(ROOT_INO, b"/h/rel/y/z/", false),
        Err(Errno::EXDEV)
    );
    let made = c.mkdir(ROOT_INO, b"/home/rel/new", FILE, t(3));
    assert_eq!(made, Err(Errno::EXDEV));
    let created = c.create(ROOT_INO, b"/home/abs", FILE, NEW, t(3));
    assert_eq!(created.unwrap_err(), Errno::EXDEV);
    // A last symlink not followed stays here.
    assert!(c.resolve(ROOT_INO, b"/home/abs", false).is_ok());
    assert!(c.unlink(ROOT_INO, b"/home/h-none", t(3)).is_err());
    // A covered directory reached as the last name: busy, as a mount point is on Linux.
    c.symlink(b"/", home, b"root", FILE, t(3)).unwrap();
    assert_eq!(
        c.rmdir(ROOT_INO, b"/home/root/mnt", t(3)),
        Err(Errno::EBUSY)
    );
    let away = c.rename(ROOT_INO, b"/home/root/mnt", ROOT_INO, b"/gone", 0, t(3));
    assert_eq!(away, Err(Errno::EBUSY));
    c.mkdir(ROOT_INO, b"/spare", FILE, t(3)).unwrap();
    let over = c.rename(ROOT_INO, b"/spare", ROOT_INO, b"/home/root/mnt", 0, t(3));
    assert_eq!(over, Err(Errno::EBUSY));
    c.rmdir(ROOT_INO, b"/spare", t(3)).unwrap();

    // Where each left, and what was left of its path.
    let exit = |p: &[u8], follow: bool, parent: bool| walk::exit(c, ROOT_INO, p, follow, parent);
    let at = |rest: &[u8]| {
        Ok(Some(Exit::Covered {
            dir: mnt,
            rest: rest.to_vec(),
        }))
    };
    assert_eq!(exit(b"/home/abs", true, false), at(b"a/b"));
    assert_eq!(exit(b"/home/abs", false, true), Ok(None));
    assert_eq!(exit(b"/home/abs/c", false, true), at(b"a/b/c"));
    assert_eq!(exit(b"/home/rel", true, false), at(b""));
    assert_eq!(exit(b"/h/rel/y/z/", false, false), at(b"y/z/"));
    assert_eq!(exit(b"/home/rel/new", false, true), at(b"new"));
    assert_eq!(exit(b"/mnt", true, false), Ok(None));
    assert_eq!(exit(b"/nowhere/x", true, false), Err(Errno::ENOENT));
    assert_eq!(
        Exit::continued(b"/hare", b"y/z/"),
        b"/hare/y/z/".to_vec(),
        "the caller's path to go on with"
    );

    fs.uncover(mnt);
    assert!(!fs.covered(mnt));
    assert!(c.resolve(ROOT_INO, b"/home/rel", true).is_ok());
}
