//! Hare's protocol points, one at a time: invalidations reach the clients that cache an
//! entry, rmdir's three phases against a concurrent create, transfers larger than one reply,
//! blocks of a truncated open file held back until its last close, a full buffer cache.

mod common;

use abi::Errno;
use common::{requests, run, run_all, world, world_with, HClient, Net, Rng, BLOCKS_PER_SERVER};
use hare::proto::MAX_IO_BLOCKS;
use hare::{
    Attrs, BufferCache, Courier, Kind, OpenFlags, Reply, Request, Server, ServerId, Space, Target,
    Techniques, Timespec, BLOCK_SIZE, READ_AHEAD, ROOT_INO,
};
use proptest::prelude::*;
use std::cell::RefCell;
use std::rc::Rc;

const T: Timespec = Timespec::new(1, 0);
const FILE: Attrs = Attrs::new(0o644, 0, 0);
const DIR: Attrs = Attrs::new(0o755, 0, 0);
const CREATE: OpenFlags = OpenFlags {
    create: true,
    exclusive: false,
    truncate: false,
    append: false,
    nofollow: false,
    list: false,
    read_only: false,
};

/// Makes an empty file at `path` through client `c`: created, opened and closed.
fn touch(net: &Rc<RefCell<Net>>, c: &mut HClient, path: &[u8], rng: &mut Rng) {
    let fd = run(net, c.open(ROOT_INO, path, CREATE, FILE, T), rng).unwrap();
    run(net, c.close(fd), rng).unwrap();
}

#[test]
fn a_removed_entry_is_invalidated_at_the_clients_that_cached_it() {
    let (net, mut c) = world(3, 2, true, true);
    let mut rng = Rng::new(7);
    touch(&net, &mut c[0], b"/f", &mut rng);
    // Client 1 looks the name up (and caches it), client 0 removes it.
    run(&net, c[1].stat(ROOT_INO, b"/f", true), &mut rng).unwrap();
    assert_eq!(c[1].cached_entries(), 1);
    let sent_before: u64 = net
        .borrow()
        .servers
        .iter()
        .map(|s| s.stats().invalidations)
        .sum();
    run(&net, c[0].unlink(ROOT_INO, b"/f", T), &mut rng).unwrap();
    let sent: u64 = net
        .borrow()
        .servers
        .iter()
        .map(|s| s.stats().invalidations)
        .sum();
    assert_eq!(sent - sent_before, 1, "one invalidation, to client 1 only");
    assert_eq!(
        run(&net, c[1].stat(ROOT_INO, b"/f", true), &mut rng),
        Err(Errno::ENOENT)
    );
    assert_eq!(c[1].stats().invalidations, 1);
    assert_eq!(c[1].cached_entries(), 0);
}

#[test]
fn absolute_symlinks_resolve_under_the_mount_point() {
    let (net, mut c) = world(2, 2, false, true);
    let mut rng = Rng::new(3);
    c[0].set_mount_point(b"/mnt/hare");
    run(&net, c[0].mkdir(ROOT_INO, b"/d", DIR, false, T), &mut rng).unwrap();
    touch(&net, &mut c[0], b"/d/f", &mut rng);
    let links: [(&[u8], &[u8]); 5] = [
        (b"/mnt/hare/d/f", b"/in"),
        (b"/mnt/hare", b"/root"),
        (b"/mnt/harem/d/f", b"/beside"),
        (b"/etc/passwd", b"/out"),
        (b"/d/f", b"/bare"),
    ];
    for (target, path) in links {
        run(
            &net,
            c[0].symlink(target, ROOT_INO, path, FILE, T),
            &mut rng,
        )
        .unwrap();
    }
    let stat = |c: &mut hare::Client<_, _>, p: &[u8], rng: &mut Rng| {
        run(&net, c.stat(ROOT_INO, p, true), rng)
    };
    let f = stat(&mut c[0], b"/d/f", &mut rng).unwrap();
    assert_eq!(stat(&mut c[0], b"/in", &mut rng).unwrap().ino, f.ino);
    assert_eq!(stat(&mut c[0], b"/root/d/f", &mut rng).unwrap().ino, f.ino);
    assert_eq!(stat(&mut c[0], b"/beside", &mut rng), Err(Errno::EXDEV));
    assert_eq!(stat(&mut c[0], b"/out", &mut rng), Err(Errno::EXDEV));
    assert_eq!(stat(&mut c[0], b"/bare", &mut rng), Err(Errno::EXDEV));
    // Where those leave Hare: each target as written, with the rest of the path; a `..` of
    // the root goes to the mount point's parent.
    run(
        &net,
        c[0].symlink(b"../../etc", ROOT_INO, b"/up", FILE, T),
        &mut rng,
    )
    .unwrap();
    let mut exit = |p: &[u8], parent_only: bool| {
        run(&net, c[0].exit(ROOT_INO, p, true, parent_only), &mut rng)
    };
    assert_eq!(exit(b"/out", false), Ok(Some(b"/etc/passwd".to_vec())));
    assert_eq!(exit(b"/out", true), Ok(None));
    assert_eq!(
        exit(b"/beside/x/", true),
        Ok(Some(b"/mnt/harem/d/f/x/".to_vec()))
    );
    assert_eq!(
        exit(b"/up/passwd", false),
        Ok(Some(b"/mnt/hare/../../etc/passwd".to_vec()))
    );
    assert_eq!(exit(b"/in", false), Ok(None));
    assert_eq!(exit(b"/root/d/f", false), Ok(None));
    // The target reads back as written; a client mounted as the root takes it as it is.
    assert_eq!(
        run(&net, c[0].readlink(ROOT_INO, b"/in"), &mut rng).unwrap(),
        b"/mnt/hare/d/f"
    );
    assert_eq!(stat(&mut c[1], b"/bare", &mut rng).unwrap().ino, f.ino);
    assert_eq!(stat(&mut c[1], b"/in", &mut rng), Err(Errno::ENOENT));
}

/// With Hare as the root, its own `/proc` is covered by the kernel's: a relative symlink
/// into it leaves Hare there (Debian's `/etc/mtab -> ../proc/self/mounts`), by name it is
/// Hare's directory still (the kernel places such paths elsewhere before Hare sees them).
#[test]
fn covered_directories_end_walks_through_symlinks() {
    let (net, mut c) = world(2, 2, false, true);
    let mut rng = Rng::new(5);
    run(
        &net,
        c[0].mkdir(ROOT_INO, b"/proc", DIR, false, T),
        &mut rng,
    )
    .unwrap();
    run(&net, c[0].mkdir(ROOT_INO, b"/etc", DIR, false, T), &mut rng).unwrap();
    let proc_ino = run(&net, c[0].stat(ROOT_INO, b"/proc", true), &mut rng)
        .unwrap()
        .ino;
    let mtab: &[u8] = b"../proc/self/mounts";
    let made = c[0].symlink(mtab, ROOT_INO, b"/etc/mtab", FILE, T);
    run(&net, made, &mut rng).unwrap();
    c[0].set_covered(vec![(proc_ino, b"/proc".to_vec())]);
    let stat = run(&net, c[0].stat(ROOT_INO, b"/etc/mtab", true), &mut rng);
    assert_eq!(stat.err(), Some(Errno::EXDEV));
    let exit = run(
        &net,
        c[0].exit(ROOT_INO, b"/etc/mtab", true, false),
        &mut rng,
    );
    assert_eq!(exit, Ok(Some(b"/proc/self/mounts".to_vec())));
    let by_name = run(&net, c[0].stat(ROOT_INO, b"/proc", true), &mut rng);
    assert_eq!(by_name.unwrap().ino, proc_ino);
    // A client not told of the cover walks into Hare's own directory.
    let other = run(&net, c[1].stat(ROOT_INO, b"/etc/mtab", true), &mut rng);
    assert_eq!(other.err(), Some(Errno::ENOENT));
}

#[test]
fn a_directory_path_follows_renames_of_its_parents() {
    let (net, mut c) = world(3, 2, true, true);
    let mut rng = Rng::new(11);
    for d in [&b"/a"[..], b"/a/b", b"/a/b/c"] {
        run(&net, c[0].mkdir(ROOT_INO, d, DIR, false, T), &mut rng).unwrap();
    }
    let ino = run(&net, c[0].stat(ROOT_INO, b"/a/b/c", true), &mut rng)
        .unwrap()
        .ino;
    assert_eq!(run(&net, c[1].dir_path(ino), &mut rng).unwrap(), b"/a/b/c");
    assert_eq!(run(&net, c[1].dir_path(ROOT_INO), &mut rng).unwrap(), b"/");
    // Again: the three parents' listings are kept; each directory's parent is asked (it is
    // not cached: a rename elsewhere changes it).
    let before = (requests(&net), c[1].stats().listing_hits);
    assert_eq!(run(&net, c[1].dir_path(ino), &mut rng).unwrap(), b"/a/b/c");
    let after = (requests(&net), c[1].stats().listing_hits);
    assert_eq!((after.0 - before.0, after.1 - before.1), (3, 3));
    run(
        &net,
        c[0].rename(ROOT_INO, b"/a/b", ROOT_INO, b"/moved", 0, T),
        &mut rng,
    )
    .unwrap();
    assert_eq!(
        run(&net, c[1].dir_path(ino), &mut rng).unwrap(),
        b"/moved/c"
    );
    run(&net, c[0].rmdir(ROOT_INO, b"/moved/c", T), &mut rng).unwrap();
    assert_eq!(run(&net, c[1].dir_path(ino), &mut rng), Err(Errno::ENOENT));
}

#[test]
fn a_name_too_long_for_an_invalidation_message_invalidates_its_directory() {
    let (net, mut c) = world(3, 2, false, true);
    let mut rng = Rng::new(5);
    let long = format!("/d/{}", "l".repeat(hare::wire::INVALIDATION_NAME_MAX + 1)).into_bytes();
    run(&net, c[0].mkdir(ROOT_INO, b"/d", DIR, false, T), &mut rng).unwrap();
    for path in [&long[..], b"/d/short"] {
        let fd = run(&net, c[0].open(ROOT_INO, path, CREATE, FILE, T), &mut rng).unwrap();
        run(&net, c[0].close(fd), &mut rng).unwrap();
        run(&net, c[1].stat(ROOT_INO, path, true), &mut rng).unwrap();
    }
    assert_eq!(c[1].cached_entries(), 3, "d, its long name and short");
    run(&net, c[0].unlink(ROOT_INO, &long, T), &mut rng).unwrap();
    assert_eq!(
        run(&net, c[1].stat(ROOT_INO, &long, true), &mut rng),
        Err(Errno::ENOENT)
    );
    assert_eq!(c[1].stats().invalidations, 1);
    assert_eq!(
        c[1].cached_entries(),
        1,
        "only d: both entries of d forgotten"
    );
    run(&net, c[1].stat(ROOT_INO, b"/d/short", true), &mut rng).unwrap();
    assert_eq!(c[1].cached_entries(), 2, "short looked up again");
}

#[test]
fn an_rmdir_whose_directory_and_entry_share_a_server_is_one_message() {
    // One server holds the entry, the directory and its entries: rmdir is one Rmdir, where
    // Hold, RmdirMark, RmMap and RmdirCommit would be four; a non-empty one stays.
    let (net, mut c) = world(1, 2, false, true);
    let mut rng = Rng::new(5);
    run(&net, c[0].mkdir(ROOT_INO, b"/d", DIR, false, T), &mut rng).unwrap();
    run(&net, c[0].mkdir(ROOT_INO, b"/d/e", DIR, false, T), &mut rng).unwrap();
    run(&net, c[1].stat(ROOT_INO, b"/d/e", true), &mut rng).unwrap();
    assert_eq!(
        run(&net, c[0].rmdir(ROOT_INO, b"/d", T), &mut rng),
        Err(Errno::ENOTEMPTY)
    );
    let before = requests(&net);
    run(&net, c[0].rmdir(ROOT_INO, b"/d/e", T), &mut rng).unwrap();
    assert_eq!(requests(&net) - before, 1, "one Rmdir");
    assert_eq!(c[1].stats().invalidations, 0, "applied at c[1]'s next walk");
    assert_eq!(
        run(&net, c[1].stat(ROOT_INO, b"/d/e", true), &mut rng).map(|_| ()),
        Err(Errno::ENOENT),
        "the other client's cached entry was invalidated"
    );
    let st = run(&net, c[0].stat(ROOT_INO, b"/d", true), &mut rng).unwrap();
    assert_eq!(st.nlink, 2, "the removed directory's .. uncounted");
    run(&net, c[0].rmdir(ROOT_INO, b"/d", T), &mut rng).unwrap();
    assert_eq!(net.borrow().servers[0].inodes(), 1, "only the root left");
}

#[test]
fn forged_rmdirs_and_listing_opens_change_nothing() {
    // Two servers: /d (ordinary) and a distributed /s, a file /d/f, an empty /d/e.
    let (net, mut c) = world(2, 1, false, true);
    let mut rng = Rng::new(8);
    run(&net, c[0].mkdir(ROOT_INO, b"/d", DIR, false, T), &mut rng).unwrap();
    run(&net, c[0].mkdir(ROOT_INO, b"/d/e", DIR, false, T), &mut rng).unwrap();
    run(&net, c[0].mkdir(ROOT_INO, b"/s", DIR, true, T), &mut rng).unwrap();
    touch(&net, &mut c[0], b"/d/f", &mut rng);
    net.borrow_mut().settle();
    let ino = |c: &mut common::HClient, p: &[u8], rng: &mut Rng| {
        run(&net, c.stat(ROOT_INO, p, true), rng).unwrap().ino
    };
    let (d, e, s, f) = (
        ino(&mut c[0], b"/d", &mut rng),
        ino(&mut c[0], b"/d/e", &mut rng),
        ino(&mut c[0], b"/s", &mut rng),
        ino(&mut c[0], b"/d/f", &mut rng),
    );
    let table = net.borrow().servers[0].table().clone();
    let home = |i| usize::from(table.inode_server(i));
    let rmdir = |dir, name: &[u8], ino| hare::Request::Rmdir {
        dir,
        name: name.to_vec(),
        ino,
        now: T,
    };
    let mut n = net.borrow_mut();
    let other = 1 - home(e);
    let h = n.servers[other].handle(7, rmdir(d, b"e", e));
    assert_eq!(
        h.reply,
        Reply::Err(Errno::EINVAL),
        "not the directory's server"
    );
    let h = n.servers[home(e)].handle(7, rmdir(d, b"f", e));
    assert_eq!(h.reply, Reply::Stale, "f does not name e");
    let h = n.servers[home(f)].handle(7, rmdir(d, b"f", f));
    assert_eq!(h.reply, Reply::Err(Errno::ENOTDIR), "a file");
    let h = n.servers[home(s)].handle(7, rmdir(ROOT_INO, b"s", s));
    assert_eq!(
        h.reply,
        Reply::Err(Errno::EINVAL),
        "a distributed directory"
    );
    let h = n.servers[home(d)].handle(7, rmdir(ROOT_INO, b"d", d));
    assert_eq!(h.reply, Reply::Err(Errno::ENOTEMPTY));
    let h = n.servers[0].handle(7, rmdir(ROOT_INO, b"d", ROOT_INO));
    assert!(
        matches!(h.reply, Reply::Err(_) | Reply::Stale),
        "the root: {:?}",
        h.reply
    );
    let h = n.servers[home(e)].handle(7, rmdir(d, b"e", 1 << 40));
    assert!(matches!(h.reply, Reply::Err(_)), "no such inode");
    // A listing open of a distributed directory answers its home's share, saying so; of a
    // file, no listing: its attributes and blocks.
    for i in [s, f] {
        let open = hare::Request::Open {
            ino: i,
            trunc: false,
            list: true,
            write: false,
            now: T,
        };
        let h = n.servers[home(i)].handle(7, open);
        assert!(
            match h.reply {
                Reply::Listed { distributed, .. } => i == s && distributed,
                Reply::Opened { .. } => i == f,
                _ => false,
            },
            "{:?}",
            h.reply
        );
        let close = hare::Request::Close {
            ino: i,
            write: false,
        };
        n.servers[home(i)].handle(7, close);
    }
    drop(n);
    for p in [&b"/d"[..], b"/d/e", b"/d/f", b"/s"] {
        run(&net, c[0].stat(ROOT_INO, p, true), &mut rng).expect("still there");
    }
    run(&net, c[0].rmdir(ROOT_INO, b"/d/e", T), &mut rng).unwrap();
}

#[test]
fn a_create_whose_inode_and_entry_share_a_server_is_one_message() {
    // One server: every inode and entry is there, so open(O_CREAT) of a name the cache does
    // not know is one CreateNamed (§3.7.4), where Create and AddMap would be two, and it is
    // not looked up first; mkdir is one too. A taken name costs more only when it is not
    // cached: the refused create, the lookup, the open. A cached one is refused (mkdir) or
    // opened (O_CREAT) without the create.
    let (net, mut c) = world(1, 2, false, true);
    let mut rng = Rng::new(9);
    // Opens /d/f with O_CREAT through `c`: the descriptor and the requests it took.
    let create_f = |c: &mut HClient, rng: &mut Rng| {
        let before = requests(&net);
        let fd = run(&net, c.open(ROOT_INO, b"/d/f", CREATE, FILE, T), rng).unwrap();
        (fd, requests(&net) - before)
    };
    run(&net, c[0].mkdir(ROOT_INO, b"/d", DIR, false, T), &mut rng).unwrap();
    run(&net, c[0].stat(ROOT_INO, b"/d", true), &mut rng).unwrap();
    let (fd, asked) = create_f(&mut c[0], &mut rng);
    assert_eq!(asked, 1, "create-and-map, no lookup");
    run(&net, c[0].close(fd), &mut rng).unwrap();
    net.borrow_mut().settle();
    let before = requests(&net);
    run(&net, c[0].mkdir(ROOT_INO, b"/d/e", DIR, false, T), &mut rng).unwrap();
    assert_eq!(requests(&net) - before, 1, "create-and-map");
    let st = run(&net, c[0].stat(ROOT_INO, b"/d", true), &mut rng).unwrap();
    assert_eq!(st.nlink, 3, "the new directory's .. counted");
    let before = requests(&net);
    assert_eq!(
        run(&net, c[0].mkdir(ROOT_INO, b"/d/e", DIR, false, T), &mut rng),
        Err(Errno::EEXIST)
    );
    assert_eq!(
        requests(&net) - before,
        0,
        "a cached name is refused without asking"
    );
    // Client 1 knows /d but not f: the create is refused, then f is looked up and opened,
    // and what client 0 wrote is there.
    let (fd, _) = create_f(&mut c[0], &mut rng);
    assert_eq!(run(&net, c[0].write(fd, b"kept", T), &mut rng), Ok(4));
    run(&net, c[0].close(fd), &mut rng).unwrap();
    net.borrow_mut().settle();
    run(&net, c[1].stat(ROOT_INO, b"/d", true), &mut rng).unwrap();
    let (fd, asked) = create_f(&mut c[1], &mut rng);
    assert_eq!(asked, 3, "refused create, lookup, open");
    let mut buf = [0; 8];
    assert_eq!(run(&net, c[1].read(fd, &mut buf), &mut rng), Ok(4));
    assert_eq!(&buf[..4], b"kept");
    run(&net, c[1].close(fd), &mut rng).unwrap();
    net.borrow_mut().settle();
    let (fd, asked) = create_f(&mut c[1], &mut rng);
    assert_eq!(asked, 1, "cached: the open alone");
    run(&net, c[1].close(fd), &mut rng).unwrap();
    // Through a symlink not cached, the create is refused and the link followed: its
    // target is made.
    run(
        &net,
        c[0].symlink(b"t", ROOT_INO, b"/d/l", FILE, T),
        &mut rng,
    )
    .unwrap();
    let fd = run(
        &net,
        c[1].open(ROOT_INO, b"/d/l", CREATE, FILE, T),
        &mut rng,
    )
    .unwrap();
    run(&net, c[1].close(fd), &mut rng).unwrap();
    assert_eq!(
        run(&net, c[1].stat(ROOT_INO, b"/d/t", false), &mut rng).map(|s| s.kind),
        Ok(Kind::File)
    );
    // O_CREAT of a directory not cached: refused, looked up, EISDIR.
    let fd = run(
        &net,
        c[1].open(ROOT_INO, b"/d/e", CREATE, FILE, T),
        &mut rng,
    );
    assert_eq!(fd.err(), Some(Errno::EISDIR));
    net.borrow_mut().settle();
    assert_eq!(
        net.borrow().servers[0].inodes(),
        6,
        "/, d, f, e, l, t: nothing left behind"
    );
}

#[test]
fn a_rename_or_unlink_on_one_server_is_one_message_and_forged_renames_are_refused() {
    // Both names and the file on one server: one Rename (§3.7.4), where Link, AddMap, RmMap
    // and Unlink would be four, and the new name, not cached, is not looked up first.
    let (net, mut c) = world(1, 2, false, true);
    let mut rng = Rng::new(5);
    run(&net, c[0].mkdir(ROOT_INO, b"/d", DIR, false, T), &mut rng).unwrap();
    for f in [&b"/d/a"[..], b"/d/x"] {
        let fd = run(&net, c[0].open(ROOT_INO, f, CREATE, FILE, T), &mut rng).unwrap();
        run(&net, c[0].close(fd), &mut rng).unwrap();
    }
    let ino = |c: &mut common::HClient, p: &[u8], rng: &mut Rng| {
        run(&net, c.stat(ROOT_INO, p, true), rng).unwrap().ino
    };
    let (a, x) = (
        ino(&mut c[1], b"/d/a", &mut rng),
        ino(&mut c[0], b"/d/x", &mut rng),
    );
    let before = requests(&net);
    run(
        &net,
        c[0].rename(ROOT_INO, b"/d/a", ROOT_INO, b"/d/b", 0, T),
        &mut rng,
    )
    .unwrap();
    assert_eq!(requests(&net) - before, 1, "one rename, no lookup");
    // Client 1 cached /d/a: invalidated, it is gone there too.
    let gone = run(&net, c[1].stat(ROOT_INO, b"/d/a", true), &mut rng);
    assert_eq!(gone.map(|s| s.ino), Err(Errno::ENOENT));
    assert_eq!(ino(&mut c[1], b"/d/b", &mut rng), a);
    // Over an existing file client 1 has not looked up: the server replaces it, in one
    // message; that file loses its only name and goes.
    let before = requests(&net);
    run(
        &net,
        c[1].rename(ROOT_INO, b"/d/b", ROOT_INO, b"/d/x", 0, T),
        &mut rng,
    )
    .unwrap();
    assert_eq!(
        requests(&net) - before,
        1,
        "one rename over a file, no lookup"
    );
    assert_eq!(ino(&mut c[1], b"/d/x", &mut rng), a);
    assert_eq!(
        net.borrow().servers[0].inodes(),
        3,
        "/, d, the renamed file"
    );
    // Forged: a name that does not name the inode, a directory, a stale replacement, a
    // blind rename over a directory (the client then looks the name up: EISDIR).
    let d = ino(&mut c[0], b"/d", &mut rng);
    let forged = |old: &[u8], new: &[u8], ino, target| hare::Request::Rename {
        old_dir: d,
        old_name: old.to_vec(),
        new_dir: d,
        new_name: new.to_vec(),
        ino,
        target,
        now: T,
    };
    let mut n = net.borrow_mut();
    let h = n.servers[0].handle(1, forged(b"x", b"y", x, Target::Absent));
    assert_eq!(h.reply, hare::Reply::Stale, "x names another inode");
    let h = n.servers[0].handle(1, forged(b"x", b"y", a, Target::File(x)));
    assert_eq!(h.reply, hare::Reply::Stale, "y does not name x");
    drop(n);
    run(&net, c[0].mkdir(ROOT_INO, b"/d/e", DIR, false, T), &mut rng).unwrap();
    let e = ino(&mut c[0], b"/d/e", &mut rng);
    let mut n = net.borrow_mut();
    let h = n.servers[0].handle(1, forged(b"e", b"y", e, Target::Absent));
    assert_eq!(h.reply, hare::Reply::Err(Errno::EINVAL), "a directory");
    let h = n.servers[0].handle(1, forged(b"x", b"e", a, Target::Any));
    assert_eq!(h.reply, hare::Reply::Stale, "over a directory: look it up");
    // Forged AddMap touches (a rename's ctime coalesced): an inode not here, a directory, a
    // taken name; each refused before it changes anything.
    let later = Timespec::new(9, 0);
    let add = |name: &[u8], ino, kind| hare::Request::AddMap {
        dir: d,
        name: name.to_vec(),
        entry: hare::proto::Entry {
            ino,
            kind,
            distributed: false,
        },
        replace: None,
        touch: true,
        now: later,
    };
    let h = n.servers[0].handle(1, add(b"y", 0x7777_7777, Kind::File));
    assert_eq!(h.reply, hare::Reply::Stale, "no such inode here");
    let h = n.servers[0].handle(1, add(b"y", e, Kind::File));
    assert_eq!(h.reply, hare::Reply::Stale, "a directory is not touched");
    let h = n.servers[0].handle(1, add(b"x", a, Kind::File));
    assert_eq!(
        h.reply,
        hare::Reply::Err(Errno::EEXIST),
        "a taken name touches nothing"
    );
    // Forged Touches and a forged RmMap touch: no such inode, a directory, a name that does
    // not name the inode given.
    let touch = |ino| hare::Request::Touch { ino, now: later };
    let h = n.servers[0].handle(1, touch(0x7777_7777));
    assert_eq!(h.reply, hare::Reply::Err(Errno::ENOENT), "no such inode");
    let h = n.servers[0].handle(1, touch(e));
    assert_eq!(h.reply, hare::Reply::Err(Errno::EINVAL), "a directory");
    let rm = hare::Request::RmMap {
        dir: d,
        name: b"x".to_vec(),
        expect: hare::proto::Expect::Ino(e),
        unlink: false,
        touch: true,
        now: later,
    };
    assert_eq!(
        n.servers[0].handle(1, rm).reply,
        hare::Reply::Stale,
        "x is not e"
    );
    drop(n);
    let x_now = run(&net, c[1].stat(ROOT_INO, b"/d/x", true), &mut rng).unwrap();
    assert_eq!(x_now.nlink, 1, "no forged AddMap changed the links");
    assert_eq!(x_now.ctime, T, "no forged request changed the ctime");
    let e_now = run(&net, c[1].stat(ROOT_INO, b"/d/e", true), &mut rng).unwrap();
    assert_eq!(e_now.ctime, T, "nor the directory's");
    let gone = run(&net, c[1].stat(ROOT_INO, b"/d/y", true), &mut rng);
    assert_eq!(gone.map(|s| s.ino), Err(Errno::ENOENT), "no entry made");
    assert_eq!(
        run(
            &net,
            c[1].rename(ROOT_INO, b"/d/x", ROOT_INO, b"/d/e", 0, T),
            &mut rng
        ),
        Err(Errno::EISDIR)
    );
    assert_eq!(ino(&mut c[1], b"/d/x", &mut rng), a, "nothing changed");
    assert_eq!(ino(&mut c[0], b"/d/e", &mut rng), e, "nothing changed");
    // unlink: the entry's server drops the inode's link in the same message.
    let before = requests(&net);
    run(&net, c[1].unlink(ROOT_INO, b"/d/x", T), &mut rng).unwrap();
    assert_eq!(requests(&net) - before, 1, "rm-map that unlinks");
    assert_eq!(net.borrow().servers[0].inodes(), 3, "/, d, e");
}

/// The inodes every server holds.
fn all_inodes(net: &Rc<RefCell<Net>>) -> usize {
    net.borrow().servers.iter().map(|s| s.inodes()).sum()
}

/// A file renamed across servers (its new entry, then its old one: two messages, its link
/// count untouched) while another client unlinks its old name, or its new one: whatever the
/// interleaving, the outcome is one of the two orders, never both calls succeeding on the
/// old name, and never a name left on a freed inode.
#[test]
fn a_rename_across_servers_racing_an_unlink_ends_as_one_of_the_two_orders() {
    let (net, mut c) = world(3, 3, true, false);
    let mut rng = Rng::new(11);
    let mut seen = [[0; 2]; 2];
    for k in 0..120 {
        let (a, b) = (format!("/a{k}"), format!("/b{k}"));
        touch(&net, &mut c[2], a.as_bytes(), &mut rng);
        let inodes = all_inodes(&net);
        let victim = if k % 2 == 0 { &a } else { &b };
        let [c0, c1, c2] = &mut c[..] else {
            unreachable!()
        };
        let r = run_all(
            &net,
            vec![
                Box::pin(c0.rename(ROOT_INO, a.as_bytes(), ROOT_INO, b.as_bytes(), 0, T)),
                Box::pin(c1.unlink(ROOT_INO, victim.as_bytes(), T)),
            ],
            &mut rng,
        );
        let stat = |c: &mut HClient, p: &str, rng: &mut Rng| {
            run(&net, c.stat(ROOT_INO, p.as_bytes(), true), rng).map(|s| s.nlink)
        };
        let (at_a, at_b) = (stat(c2, &a, &mut rng), stat(c2, &b, &mut rng));
        let after = all_inodes(&net);
        assert_eq!(at_a, Err(Errno::ENOENT), "{k}: the old name is gone");
        let first = match (k % 2, &r[..]) {
            // Unlinking the old name: after the rename it finds nothing; before, the rename
            // does.
            (0, [Ok(()), Err(Errno::ENOENT)]) => {
                assert_eq!(at_b, Ok(1), "{k}: renamed, one link");
                0
            }
            (0, [Err(Errno::ENOENT), Ok(())]) => {
                assert_eq!(at_b, Err(Errno::ENOENT), "{k}: unlinked, no new name");
                assert_eq!(after, inodes - 1, "{k}: the file is gone");
                1
            }
            // Unlinking the new name: after the rename it removes the file; before, it finds
            // nothing.
            (1, [Ok(()), Ok(())]) => {
                assert_eq!(at_b, Err(Errno::ENOENT), "{k}: renamed, then unlinked");
                assert_eq!(after, inodes - 1, "{k}: the file is gone");
                0
            }
            (1, [Ok(()), Err(Errno::ENOENT)]) => {
                assert_eq!(at_b, Ok(1), "{k}: renamed after the unlink found nothing");
                1
            }
            _ => panic!("{k}: rename and unlink of {victim} answered {r:?}"),
        };
        seen[k % 2][first] += 1;
    }
    // Both orders happened for each victim, so the interleavings reached the race.
    assert!(
        seen.iter().flatten().all(|&n| n > 0),
        "orders seen: {seen:?}"
    );
}

#[test]
fn only_its_creator_destroys_an_inode() {
    let (net, mut c) = world(1, 2, false, true);
    let mut rng = Rng::new(3);
    touch(&net, &mut c[0], b"/f", &mut rng);
    let ino = run(&net, c[0].stat(ROOT_INO, b"/f", true), &mut rng)
        .unwrap()
        .ino;
    let mut n = net.borrow_mut();
    for (from, victim) in [(1, ino), (0, ROOT_INO), (1, ROOT_INO)] {
        let h = n.servers[0].handle(from, hare::Request::Destroy { ino: victim });
        assert_eq!(
            h.reply,
            hare::Reply::Err(Errno::EPERM),
            "client {from}, inode {victim}"
        );
    }
    drop(n);
    run(&net, c[1].stat(ROOT_INO, b"/f", true), &mut rng).unwrap();
}

/// Hare §6.1.1, resizing: two clients create files in a distributed and an ordinary
/// directory, one descriptor open throughout, while the fleet grows and shrinks between their
/// calls (1, 3, 2, 4, 1 servers): nothing is lost, every file is found by name and listed once,
/// the open file reads back, and the inodes and blocks add up.
#[test]
fn growing_and_shrinking_the_fleet_loses_nothing() {
    let (net, mut c) = world(1, 2, false, true);
    let mut rng = Rng::new(13);
    run(
        &net,
        c[0].mkdir(ROOT_INO, b"/spread", DIR, true, T),
        &mut rng,
    )
    .unwrap();
    run(
        &net,
        c[1].mkdir(ROOT_INO, b"/plain", DIR, false, T),
        &mut rng,
    )
    .unwrap();
    let kept = run(
        &net,
        c[0].open(ROOT_INO, b"/kept", CREATE, FILE, T),
        &mut rng,
    )
    .unwrap();
    let data = vec![9u8; BLOCK_SIZE * 3];
    run(&net, c[0].write(kept, &data, T), &mut rng).unwrap();
    run(&net, c[0].mkfifo(ROOT_INO, b"/fifo", FILE, T), &mut rng).unwrap();
    let mut made = Vec::new();
    for (round, servers) in [3, 2, 4, 1].into_iter().enumerate() {
        for i in 0..25 {
            for (who, dir) in [(0usize, "spread"), (1, "plain")] {
                let p = format!("/{dir}/r{round}f{i}");
                let fd = run(
                    &net,
                    c[who].open(ROOT_INO, p.as_bytes(), CREATE, FILE, T),
                    &mut rng,
                )
                .unwrap();
                run(&net, c[who].write(fd, p.as_bytes(), T), &mut rng).unwrap();
                run(&net, c[who].close(fd), &mut rng).unwrap();
                made.push(p);
            }
        }
        common::resize(&net, &mut c, servers);
        let fifo = run(&net, c[1].stat(ROOT_INO, b"/fifo", false), &mut rng);
        assert_eq!(
            fifo.map(|s| s.kind),
            Ok(hare::Kind::Fifo),
            "after resizing to {servers}"
        );
        for p in &made {
            let st = run(&net, c[1].stat(ROOT_INO, p.as_bytes(), true), &mut rng);
            assert_eq!(
                st.map(|s| s.size),
                Ok(p.len() as u64),
                "{p} after resizing to {servers}"
            );
        }
    }
    for dir in ["spread", "plain"] {
        let path = format!("/{dir}");
        let fd = run(
            &net,
            c[0].open(ROOT_INO, path.as_bytes(), OpenFlags::default(), FILE, T),
            &mut rng,
        )
        .unwrap();
        let listed = run(&net, c[0].read_dir(fd), &mut rng).unwrap();
        assert_eq!(listed.len(), 100, "{dir} lists every file once");
        run(&net, c[0].close(fd), &mut rng).unwrap();
    }
    let mut back = vec![0; data.len()];
    assert_eq!(
        run(&net, c[0].pread(kept, &mut back, 0), &mut rng),
        Ok(data.len())
    );
    assert_eq!(back, data);
    run(&net, c[0].close(kept), &mut rng).unwrap();
    let n = net.borrow();
    let inodes: usize = n.servers.iter().map(|s| s.inodes()).sum();
    assert_eq!(
        inodes,
        1 + 2 + 1 + 1 + 200,
        "the root, two directories, /kept, /fifo and the files"
    );
    let free: u64 = n.servers.iter().map(|s| s.stats().free_blocks).sum();
    assert_eq!(
        u64::from(BLOCKS_PER_SERVER) - free,
        3 + 200,
        "/kept's three blocks and one per file"
    );
    assert!(
        n.servers[1..].iter().all(|s| s.inodes() == 0),
        "after shrinking to one server, the others hold nothing"
    );
}

/// A courier that refuses the `n`-th shard's first import part at its new owner, as a
/// server that ran out of memory would.
struct Failing<'a> {
    inner: common::Manager<'a>,
    imports_left: usize,
}

impl Courier for Failing<'_> {
    fn call(&mut self, server: ServerId, req: &Request) -> Reply {
        if let Request::Import { offset: 0, .. } = req {
            if self.imports_left == 0 {
                return Reply::Err(Errno::ENOMEM);
            }
            self.imports_left -= 1;
        }
        self.inner.call(server, req)
    }
}

#[test]
fn a_resize_that_fails_half_way_loses_nothing() {
    let (net, mut c) = world(2, 1, true, true);
    let mut rng = Rng::new(5);
    let mut made = Vec::new();
    for i in 0..60 {
        let p = format!("/f{i}");
        let fd = run(
            &net,
            c[0].open(ROOT_INO, p.as_bytes(), CREATE, FILE, T),
            &mut rng,
        )
        .unwrap();
        run(&net, c[0].write(fd, p.as_bytes(), T), &mut rng).unwrap();
        run(&net, c[0].close(fd), &mut rng).unwrap();
        made.push(p);
    }
    let old = net.borrow().servers[0].table().clone();
    net.borrow_mut()
        .servers
        .push(Server::joining(2, T).unwrap());
    let (now, err) = {
        let mut n = net.borrow_mut();
        let mut courier = Failing {
            inner: common::Manager(&mut n),
            imports_left: 10,
        };
        let (now, done) = hare::resize::resize(&mut courier, &old, &[0, 1, 2]);
        (now, done.unwrap_err())
    };
    assert_eq!(err, Errno::ENOMEM);
    assert_eq!(now.version(), old.version() + 1);
    assert_eq!(
        now.shards_of(2).len(),
        10,
        "the ten shards that moved, and no more"
    );
    for s in &net.borrow().servers {
        assert_eq!(
            s.table(),
            &now,
            "every server answers by the table in force"
        );
    }
    for client in c.iter_mut() {
        client.set_table(now.clone());
    }
    let check = |c: &mut common::HClient, rng: &mut Rng| {
        for p in &made {
            let st = run(&net, c.stat(ROOT_INO, p.as_bytes(), true), rng);
            assert_eq!(st.map(|s| s.size), Ok(p.len() as u64), "{p}");
        }
        let fd = run(
            &net,
            c.open(ROOT_INO, b"/", OpenFlags::default(), FILE, T),
            rng,
        )
        .unwrap();
        assert_eq!(run(&net, c.read_dir(fd), rng).unwrap().len(), made.len());
        run(&net, c.close(fd), rng).unwrap();
    };
    check(&mut c[0], &mut rng);
    // Done again, the resize finishes.
    common::resize(&net, &mut c, 3);
    check(&mut c[0], &mut rng);
    let n = net.borrow();
    assert_eq!(n.servers.iter().map(|s| s.inodes()).sum::<usize>(), 61);
}

#[test]
fn hostile_resize_messages_change_nothing() {
    let (net, mut c) = world(2, 1, true, true);
    let mut rng = Rng::new(7);
    for i in 0..20 {
        let p = format!("/f{i}");
        let fd = run(
            &net,
            c[0].open(ROOT_INO, p.as_bytes(), CREATE, FILE, T),
            &mut rng,
        )
        .unwrap();
        run(&net, c[0].close(fd), &mut rng).unwrap();
    }
    let shard = net.borrow().servers[0].table().shards_of(0)[0] as u16;
    let mut n = net.borrow_mut();
    let mut m = common::Manager(&mut n);
    let einval = Reply::Err(Errno::EINVAL);
    // Parts out of order, a state that does not decode, a part past the total.
    let part = |offset, total, data: &[u8]| Request::Import {
        offset,
        total,
        data: data.to_vec(),
    };
    assert_eq!(m.call(1, &part(5, 10, b"xx")), einval);
    assert_eq!(m.call(1, &part(0, 4, b"garbage")), einval);
    assert_eq!(m.call(1, &part(0, 7, b"garbage")), einval);
    assert_eq!(m.call(1, &part(0, 8, b"1234")), Reply::Done);
    assert_eq!(m.call(1, &part(2, 8, b"1234")), einval, "a part that skips");
    // A resize step with nothing exported.
    let exported = |restore| Request::Exported { shard, restore };
    assert_eq!(m.call(0, &exported(false)), einval);
    assert_eq!(m.call(0, &Request::Export { shard, offset: 8 }), einval);
    // One shard out at a time; no table while it is out; taken back whole.
    let Reply::Part { total, data } = m.call(0, &Request::Export { shard, offset: 0 }) else {
        panic!("a part");
    };
    assert_eq!(
        data.len() as u64,
        total,
        "a shard of a few entries is one part"
    );
    let other = shard + 2;
    assert_eq!(
        m.call(
            0,
            &Request::Export {
                shard: other,
                offset: 0
            }
        ),
        Reply::Err(Errno::EBUSY)
    );
    let table = m.0.servers[0].table().clone();
    assert_eq!(
        m.call(0, &Request::SetTable(Box::new(table))),
        Reply::Err(Errno::EBUSY)
    );
    // Every prefix of a real state is refused.
    let state = data;
    for cut in 0..state.len() {
        assert!(
            hare::ShardState::decode(&state[..cut]).is_err(),
            "{cut} bytes"
        );
    }
    assert!(hare::ShardState::decode(&state).is_ok());
    assert_eq!(m.call(0, &exported(true)), Reply::Done);
    drop(n);
    for i in 0..20 {
        let p = format!("/f{i}");
        assert!(
            run(&net, c[0].stat(ROOT_INO, p.as_bytes(), true), &mut rng).is_ok(),
            "{p}"
        );
    }
}

#[test]
fn a_directory_distributed_while_in_use_loses_nothing() {
    let (net, mut c) = world(3, 2, false, true);
    let mut rng = Rng::new(11);
    run(&net, c[0].mkdir(ROOT_INO, b"/d", DIR, false, T), &mut rng).unwrap();
    let mut made = Vec::new();
    let create = |c: &mut common::HClient, p: String, rng: &mut Rng| {
        let fd = run(&net, c.open(ROOT_INO, p.as_bytes(), CREATE, FILE, T), rng).unwrap();
        run(&net, c.write(fd, p.as_bytes(), T), rng).unwrap();
        run(&net, c.close(fd), rng).unwrap();
        p
    };
    for i in 0..60 {
        made.push(create(&mut c[i % 2], format!("/d/f{i}"), &mut rng));
    }
    run(
        &net,
        c[1].mkdir(ROOT_INO, b"/d/sub", DIR, false, T),
        &mut rng,
    )
    .unwrap();
    let kept = run(
        &net,
        c[1].open(ROOT_INO, b"/d/f7", OpenFlags::default(), FILE, T),
        &mut rng,
    )
    .unwrap();
    let dir = run(&net, c[0].stat(ROOT_INO, b"/d", true), &mut rng)
        .unwrap()
        .ino;
    // What a policy of dynamic distribution watches: each create's directory and its size.
    let seen = c[0].take_creates();
    assert_eq!(seen.len(), 31, "mkdir /d and 30 files");
    assert_eq!(
        seen.last(),
        Some(&(dir, 59)),
        "f0..f58 after c[0]'s last create"
    );
    // A descriptor of the directory, open across the change: its listing walks nothing, so
    // the client must forget at once what it knew (`forget_cache`, as Reef's kernel does).
    let flags = OpenFlags::default();
    let dfd = run(&net, c[1].open(ROOT_INO, b"/d", flags, DIR, T), &mut rng).unwrap();
    assert_eq!(run(&net, c[1].read_dir(dfd), &mut rng).unwrap().len(), 61);
    let home = net.borrow().servers[0].table().inode_server(dir);
    let holding = |net: &std::rc::Rc<std::cell::RefCell<common::Net>>| {
        let n = net.borrow();
        n.servers.iter().filter(|s| s.entries_of(dir) > 0).count()
    };
    assert_eq!(
        holding(&net),
        1,
        "an ordinary directory's entries are on its home server"
    );
    assert_eq!(common::distribute(&net, 2, dir), Ok(true));
    assert_eq!(
        holding(&net),
        3,
        "distributed, its entries are on every server"
    );
    c[1].forget_cache();
    assert_eq!(run(&net, c[1].read_dir(dfd), &mut rng).unwrap().len(), 61);
    run(&net, c[1].close(dfd), &mut rng).unwrap();
    assert_eq!(
        common::distribute(&net, 2, dir),
        Ok(false),
        "twice is nothing to do"
    );
    {
        let mut n = net.borrow_mut();
        let mut m = common::Manager(&mut n);
        let r = m.call(home, &Request::Scatter { dir, offset: 0 });
        assert_eq!(r, Reply::Err(Errno::EEXIST));
        let r = m.call(
            home,
            &Request::Scattered {
                dir,
                restore: false,
            },
        );
        assert_eq!(r, Reply::Err(Errno::EINVAL));
    }
    // A client that knew the directory as ordinary and creates from it (relative to it,
    // with no lookup of its entry) places the new entries where the others look for them.
    for i in 0..10 {
        let name = format!("r{i}");
        let fd = run(
            &net,
            c[1].open(dir, name.as_bytes(), CREATE, FILE, T),
            &mut rng,
        )
        .unwrap();
        run(&net, c[1].close(fd), &mut rng).unwrap();
        let abs = format!("/d/{name}");
        assert!(
            run(&net, c[0].stat(ROOT_INO, abs.as_bytes(), true), &mut rng).is_ok(),
            "{abs}"
        );
    }
    // Both clients find every file, the new entries spread, and the directory behaves.
    for i in 60..90 {
        made.push(create(&mut c[i % 2], format!("/d/f{i}"), &mut rng));
    }
    for client in c.iter_mut() {
        for p in &made {
            let st = run(&net, client.stat(ROOT_INO, p.as_bytes(), true), &mut rng);
            assert_eq!(st.map(|s| s.size), Ok(p.len() as u64), "{p}");
        }
        let flags = OpenFlags::default();
        let fd = run(&net, client.open(ROOT_INO, b"/d", flags, DIR, T), &mut rng).unwrap();
        let listed = run(&net, client.read_dir(fd), &mut rng).unwrap();
        assert_eq!(listed.len(), 101, "100 files and sub, each once");
        run(&net, client.close(fd), &mut rng).unwrap();
    }
    let mut back = [0u8; 16];
    assert_eq!(run(&net, c[1].pread(kept, &mut back, 0), &mut rng), Ok(5));
    assert_eq!(&back[..5], b"/d/f7");
    assert_eq!(
        run(&net, c[0].rmdir(ROOT_INO, b"/d", T), &mut rng),
        Err(Errno::ENOTEMPTY)
    );
    run(&net, c[1].unlink(ROOT_INO, b"/d/f3", T), &mut rng).unwrap();
    run(
        &net,
        c[0].rename(ROOT_INO, b"/d/f4", ROOT_INO, b"/d/g4", 0, T),
        &mut rng,
    )
    .unwrap();
    assert_eq!(
        run(&net, c[1].stat(ROOT_INO, b"/d/f4", true), &mut rng).map(|s| s.ino),
        Err(Errno::ENOENT)
    );
    run(&net, c[1].stat(ROOT_INO, b"/d/g4", true), &mut rng).unwrap();
    // The parent's entry says so, for clients that meet the directory from now on.
    let mut n = net.borrow_mut();
    let at = n.servers[0].table().entry_server(ROOT_INO, b"d", false);
    let lookup = Request::Lookup {
        dir: ROOT_INO,
        name: b"d".to_vec(),
    };
    match common::Manager(&mut n).call(at, &lookup) {
        Reply::Entry(e) => assert!(e.distributed && e.ino == dir),
        other => panic!("{other:?}"),
    }
}

#[test]
fn hostile_distribution_messages_change_nothing() {
    let (net, mut c) = world(2, 1, false, true);
    let mut rng = Rng::new(3);
    touch(&net, &mut c[0], b"/file", &mut rng);
    let file = run(&net, c[0].stat(ROOT_INO, b"/file", true), &mut rng)
        .unwrap()
        .ino;
    let at = net.borrow().servers[0].table().inode_server(file);
    let mut n = net.borrow_mut();
    let mut m = common::Manager(&mut n);
    let scatter = |dir| Request::Scatter { dir, offset: 0 };
    assert_eq!(m.call(at, &scatter(file)), Reply::Err(Errno::ENOTDIR));
    assert_eq!(m.call(at, &scatter(12345)), Reply::Err(Errno::ENOENT));
    assert_eq!(
        m.call(
            at,
            &Request::Scatter {
                dir: file,
                offset: 9
            }
        ),
        Reply::Err(Errno::EINVAL)
    );
    drop(n);
    assert!(run(&net, c[0].stat(ROOT_INO, b"/file", true), &mut rng).is_ok());
}

#[test]
fn a_large_distributed_directory_is_listed_in_batches() {
    let (net, mut c) = world(3, 1, true, true);
    let mut rng = Rng::new(11);
    let mut names: Vec<Vec<u8>> = (0..300)
        .map(|i| format!("{i:03}-{}", "n".repeat(200)).into_bytes())
        .collect();
    for n in &names {
        let mut p = b"/".to_vec();
        p.extend(n);
        let fd = run(&net, c[0].open(ROOT_INO, &p, CREATE, FILE, T), &mut rng).unwrap();
        run(&net, c[0].close(fd), &mut rng).unwrap();
    }
    let dir = run(
        &net,
        c[0].open(ROOT_INO, b"/", OpenFlags::default(), FILE, T),
        &mut rng,
    )
    .unwrap();
    let asked = requests(&net);
    let listed = run(&net, c[0].read_dir(dir), &mut rng).unwrap();
    let after = requests(&net);
    names.sort();
    let got: Vec<Vec<u8>> = listed.iter().map(|(n, _)| n.to_vec()).collect();
    assert_eq!(got, names, "every name once, in order");
    // 300 names of 204 bytes are about 64 KiB: at least 16 one-page batches.
    assert!(after - asked >= 16, "{} requests", after - asked);
}

#[test]
fn opening_an_ordinary_directory_to_list_it_brings_its_first_entries() {
    // Open and the first Dirents in one message (§3.7.4); a listing longer than the open's
    // reply goes on from its last name; a second read_dir lists afresh.
    let (net, mut c) = world(2, 1, false, true);
    let mut rng = Rng::new(3);
    run(&net, c[0].mkdir(ROOT_INO, b"/d", DIR, false, T), &mut rng).unwrap();
    let long = "n".repeat(200);
    let mut names = Vec::new();
    for i in 0..30 {
        let name = format!("{long}{i:02}");
        let path = format!("/d/{name}");
        let fd = run(
            &net,
            c[0].open(ROOT_INO, path.as_bytes(), CREATE, FILE, T),
            &mut rng,
        );
        run(&net, c[0].close(fd.unwrap()), &mut rng).unwrap();
        names.push(name.into_bytes());
    }
    run(
        &net,
        c[0].mkdir(ROOT_INO, b"/d/small", DIR, false, T),
        &mut rng,
    )
    .unwrap();
    net.borrow_mut().settle();
    let list = OpenFlags {
        list: true,
        ..OpenFlags::default()
    };
    let before = requests(&net);
    let fd = run(
        &net,
        c[0].open(ROOT_INO, b"/d/small", list, FILE, T),
        &mut rng,
    )
    .unwrap();
    assert!(run(&net, c[0].read_dir(fd), &mut rng).unwrap().is_empty());
    assert_eq!(
        requests(&net) - before,
        1,
        "the open brought the whole listing"
    );
    let fd2 = run(&net, c[0].open(ROOT_INO, b"/d", list, FILE, T), &mut rng).unwrap();
    names.push(b"small".to_vec());
    names.sort();
    let listed =
        |v: std::sync::Arc<hare::Listing>| v.iter().map(|(n, _)| n.to_vec()).collect::<Vec<_>>();
    let before = requests(&net);
    let first = listed(run(&net, c[0].read_dir(fd2), &mut rng).unwrap());
    assert_eq!(first, names, "every name once, in order");
    assert_eq!(
        requests(&net) - before,
        1,
        "6 KiB of names: one Dirents after the open's"
    );
    let again = listed(run(&net, c[0].read_dir(fd2), &mut rng).unwrap());
    assert_eq!(again, names);
    assert_eq!(requests(&net) - before, 3, "listed afresh: two Dirents");
}

#[test]
fn a_full_lookup_cache_keeps_the_top_of_the_tree() {
    // Eight entries: the path's two directories and six of the files made below them. Each
    // new file then pushes out a newer entry, never the directories every walk crosses.
    common::CACHE_ENTRIES.with(|c| c.set(8));
    let (net, mut c) = world(1, 1, false, true);
    common::CACHE_ENTRIES.with(|c| c.set(1024));
    let mut rng = Rng::new(21);
    run(&net, c[0].mkdir(ROOT_INO, b"/a", DIR, false, T), &mut rng).unwrap();
    run(&net, c[0].mkdir(ROOT_INO, b"/a/b", DIR, false, T), &mut rng).unwrap();
    for i in 0..20 {
        let path = format!("/a/b/f{i}");
        let fd = run(
            &net,
            c[0].open(ROOT_INO, path.as_bytes(), CREATE, FILE, T),
            &mut rng,
        );
        run(&net, c[0].close(fd.unwrap()), &mut rng).unwrap();
    }
    net.borrow_mut().settle();
    let before = requests(&net);
    run(&net, c[0].stat(ROOT_INO, b"/a/b", true), &mut rng).unwrap();
    assert_eq!(
        requests(&net) - before,
        1,
        "the Stat alone: /a and /a/b are still cached"
    );
    assert_eq!(c[0].cached_entries(), 8);
}

#[test]
fn a_lookup_cache_of_two_entries_still_resolves_and_invalidates() {
    common::CACHE_ENTRIES.with(|c| c.set(2));
    let (net, mut c) = world(2, 2, false, true);
    common::CACHE_ENTRIES.with(|c| c.set(1024));
    let mut rng = Rng::new(13);
    let dir = Attrs::new(0o755, 0, 0);
    // A path of five directories and a symlink: more than the cache holds in one walk.
    run(&net, c[0].mkdir(ROOT_INO, b"/a", dir, false, T), &mut rng).unwrap();
    run(&net, c[0].mkdir(ROOT_INO, b"/a/b", dir, false, T), &mut rng).unwrap();
    run(
        &net,
        c[0].mkdir(ROOT_INO, b"/a/b/c", dir, false, T),
        &mut rng,
    )
    .unwrap();
    run(
        &net,
        c[0].symlink(b"b/c", ROOT_INO, b"/a/l", FILE, T),
        &mut rng,
    )
    .unwrap();
    run(
        &net,
        c[0].mkdir(ROOT_INO, b"/a/l/d", dir, false, T),
        &mut rng,
    )
    .unwrap();
    touch(&net, &mut c[0], b"/a/l/d/f", &mut rng);
    assert!(c[0].cached_entries() <= 2);
    let st = run(&net, c[1].stat(ROOT_INO, b"/a/b/c/d/f", true), &mut rng).unwrap();
    assert!(c[1].cached_entries() <= 2);
    run(&net, c[0].unlink(ROOT_INO, b"/a/b/c/d/f", T), &mut rng).unwrap();
    assert_eq!(
        run(&net, c[1].stat(ROOT_INO, b"/a/l/d/f", true), &mut rng),
        Err(Errno::ENOENT)
    );
    assert_eq!(st.kind, hare::Kind::File);
}

#[test]
fn transfers_larger_than_one_reply_are_split() {
    let (net, mut c) = world(2, 1, false, true);
    let mut rng = Rng::new(3);
    let fd = run(
        &net,
        c[0].open(ROOT_INO, b"/big", CREATE, FILE, T),
        &mut rng,
    )
    .unwrap();
    let data: Vec<u8> = (0..(BLOCK_SIZE * 300 + 123))
        .map(|i| (i % 251) as u8)
        .collect();
    assert_eq!(
        run(&net, c[0].pwrite(fd, &data, 777, T), &mut rng),
        Ok(data.len())
    );
    let mut back = vec![0; data.len() + 777 + 10];
    assert_eq!(
        run(&net, c[0].pread(fd, &mut back, 0), &mut rng),
        Ok(data.len() + 777)
    );
    assert!(
        back[..777].iter().all(|&b| b == 0),
        "the hole before the data reads as zeros"
    );
    assert_eq!(&back[777..777 + data.len()], &data[..]);
    // Opened again, the client knows the size but not the blocks: it asks for them.
    run(&net, c[0].close(fd), &mut rng).unwrap();
    let fd = run(
        &net,
        c[0].open(ROOT_INO, b"/big", OpenFlags::default(), FILE, T),
        &mut rng,
    )
    .unwrap();
    let before = c[0].stats().requests;
    run(&net, c[0].pread(fd, &mut back, 0), &mut rng).unwrap();
    assert_eq!(
        c[0].stats().requests - before,
        2,
        "302 pages take two reads of at most 256"
    );
}

/// §5.4's ablation of direct access: a client whose data travels through the server
/// (`ReadData`, `WriteData`, a page per message) and a client that reads and writes the cache
/// directly see the same bytes, holes, appends and end of file.
#[test]
fn data_through_the_server_is_the_data_in_the_cache() {
    let off = Techniques {
        direct: false,
        ..Techniques::default()
    };
    let (net, mut c) = world_with(2, &[off, Techniques::default()], false, true);
    let (through, direct) = c.split_at_mut(1);
    let direct = &mut direct[0];
    let mut rng = Rng::new(5);
    let fd = run(
        &net,
        through[0].open(ROOT_INO, b"/f", CREATE, FILE, T),
        &mut rng,
    )
    .unwrap();
    let data: Vec<u8> = (0..(BLOCK_SIZE * 3 + 100))
        .map(|i| (i % 253) as u8)
        .collect();
    assert_eq!(
        run(&net, through[0].pwrite(fd, &data, 5000, T), &mut rng),
        Ok(data.len())
    );
    let before = through[0].stats().requests;
    let mut back = vec![0xaa; data.len() + 5000 + 7];
    assert_eq!(
        run(&net, through[0].pread(fd, &mut back, 0), &mut rng),
        Ok(data.len() + 5000),
        "a short read at the end of the file"
    );
    assert_eq!(
        through[0].stats().requests - before,
        5,
        "17388 bytes take five data replies of at most a page"
    );
    assert!(
        back[..5000].iter().all(|&b| b == 0),
        "the hole reads as zeros"
    );
    assert_eq!(&back[5000..5000 + data.len()], &data[..]);
    // A client with direct access reads the same bytes from the cache, and its append is
    // read back through the server.
    let d = run(
        &net,
        direct.open(ROOT_INO, b"/f", OpenFlags::default(), FILE, T),
        &mut rng,
    )
    .unwrap();
    let mut seen = vec![0; data.len()];
    assert_eq!(
        run(&net, direct.pread(d, &mut seen, 5000), &mut rng),
        Ok(data.len())
    );
    assert_eq!(seen, data);
    direct.set_append(d, true).unwrap();
    assert_eq!(run(&net, direct.write(d, b"tail", T), &mut rng), Ok(4));
    let mut tail = [0; 8];
    assert_eq!(
        run(
            &net,
            through[0].pread(fd, &mut tail, (5000 + data.len()) as u64),
            &mut rng
        ),
        Ok(4)
    );
    assert_eq!(&tail[..4], b"tail");
}

/// `statfs` sums every server's free blocks, blocks held back and inodes: a write takes
/// blocks, a truncation of an open file holds them back until its last close, an unlink of a
/// closed file gives them back.
#[test]
fn statfs_counts_the_servers_free_and_held_blocks() {
    let (net, mut c) = world(3, 2, false, false);
    let mut rng = Rng::new(11);
    let total = 3 * u64::from(BLOCKS_PER_SERVER);
    let empty = run(&net, c[0].statfs(), &mut rng).unwrap();
    assert_eq!(
        empty,
        Space {
            free_blocks: total,
            deferred_blocks: 0,
            inodes: 1
        },
        "only the root"
    );
    let fd = run(&net, c[0].open(ROOT_INO, b"/f", CREATE, FILE, T), &mut rng).unwrap();
    let data = vec![7u8; BLOCK_SIZE * 5];
    run(&net, c[0].write(fd, &data, T), &mut rng).unwrap();
    let other = run(
        &net,
        c[1].open(ROOT_INO, b"/f", OpenFlags::default(), FILE, T),
        &mut rng,
    )
    .unwrap();
    let written = run(&net, c[1].statfs(), &mut rng).unwrap();
    assert_eq!((written.free_blocks, written.inodes), (total - 5, 2));
    run(&net, c[1].ftruncate(other, 0, T), &mut rng).unwrap();
    let held = run(&net, c[0].statfs(), &mut rng).unwrap();
    assert_eq!((held.free_blocks, held.deferred_blocks), (total - 5, 5));
    run(&net, c[1].close(other), &mut rng).unwrap();
    let still = run(&net, c[0].statfs(), &mut rng).unwrap();
    assert_eq!(still.deferred_blocks, 5, "one descriptor is still open");
    run(&net, c[0].close(fd), &mut rng).unwrap();
    let back = run(&net, c[0].statfs(), &mut rng).unwrap();
    assert_eq!((back.free_blocks, back.deferred_blocks), (total, 0));
    let fd = run(
        &net,
        c[0].open(ROOT_INO, b"/f", OpenFlags::default(), FILE, T),
        &mut rng,
    )
    .unwrap();
    run(&net, c[0].pwrite(fd, &data, 0, T), &mut rng).unwrap();
    run(&net, c[0].close(fd), &mut rng).unwrap();
    run(&net, c[0].unlink(ROOT_INO, b"/f", T), &mut rng).unwrap();
    assert_eq!(run(&net, c[1].statfs(), &mut rng).unwrap(), empty);
}

#[test]
fn blocks_of_a_truncated_open_file_are_reused_only_after_its_last_close() {
    // One server, so every block comes from one free list.
    let (net, mut c) = world(1, 2, false, true);
    let mut rng = Rng::new(5);
    let a = run(&net, c[0].open(ROOT_INO, b"/a", CREATE, FILE, T), &mut rng).unwrap();
    let old = run(
        &net,
        c[1].open(ROOT_INO, b"/a", OpenFlags::default(), FILE, T),
        &mut rng,
    )
    .unwrap();
    run(&net, c[0].pwrite(a, &[1; 4 * BLOCK_SIZE], 0, T), &mut rng).unwrap();
    let free = |net: &common::Net| net.servers[0].stats().free_blocks;
    let held = BLOCKS_PER_SERVER as u64 - free(&net.borrow());
    assert_eq!(held, 4);
    run(&net, c[0].ftruncate(a, 0, T), &mut rng).unwrap();
    assert_eq!(net.borrow().servers[0].stats().deferred_blocks, 4);
    assert_eq!(
        BLOCKS_PER_SERVER as u64 - free(&net.borrow()),
        4,
        "not free while open"
    );
    // Another file written now cannot get those blocks, so the old descriptor's client
    // (which may still hold the old block list) cannot corrupt it.
    let b = run(&net, c[0].open(ROOT_INO, b"/b", CREATE, FILE, T), &mut rng).unwrap();
    run(&net, c[0].pwrite(b, &[2; BLOCK_SIZE], 0, T), &mut rng).unwrap();
    run(&net, c[0].close(a), &mut rng).unwrap();
    net.borrow_mut().settle();
    assert_eq!(
        net.borrow().servers[0].stats().deferred_blocks,
        4,
        "one description left"
    );
    run(&net, c[1].close(old), &mut rng).unwrap();
    net.borrow_mut().settle();
    assert_eq!(net.borrow().servers[0].stats().deferred_blocks, 0);
    assert_eq!(
        BLOCKS_PER_SERVER as u64 - free(&net.borrow()),
        1,
        "only /b's block"
    );
}

#[test]
fn a_full_buffer_cache_is_enospc_and_a_short_write() {
    let (net, mut c) = world(1, 1, false, true);
    let mut rng = Rng::new(9);
    let fd = run(&net, c[0].open(ROOT_INO, b"/f", CREATE, FILE, T), &mut rng).unwrap();
    let all = BLOCKS_PER_SERVER as usize * BLOCK_SIZE;
    // More than fits: the first 256-block piece lands, the next does not.
    assert_eq!(
        run(
            &net,
            c[0].pwrite(fd, &vec![3; all + BLOCK_SIZE], 0, T),
            &mut rng
        ),
        Ok(all)
    );
    assert_eq!(
        run(&net, c[0].pwrite(fd, &[3; 10], all as u64, T), &mut rng),
        Err(Errno::ENOSPC)
    );
    // Freeing the file gives every block back.
    run(&net, c[0].close(fd), &mut rng).unwrap();
    run(&net, c[0].unlink(ROOT_INO, b"/f", T), &mut rng).unwrap();
    assert_eq!(
        net.borrow().servers[0].stats().free_blocks,
        BLOCKS_PER_SERVER as u64
    );
}

proptest! {
    /// `rmdir` of a distributed directory racing a create in it, under every delivery
    /// order: exactly one wins, and what is left is consistent (§3.4.1).
    #[test]
    fn rmdir_and_create_in_the_same_directory_never_both_succeed(
        servers in 1..5usize,
        distribute in any::<bool>(),
        seed in any::<u64>(),
    ) {
        let (net, mut c) = world(servers, 2, distribute, true);
        let mut rng = Rng::new(seed);
        run(&net, c[0].mkdir(ROOT_INO, b"/d", Attrs::new(0o755, 0, 0), false, T), &mut rng).unwrap();
        // Both clients know /d before they race.
        run(&net, c[1].stat(ROOT_INO, b"/d", true), &mut rng).unwrap();
        let (a, b) = c.split_at_mut(1);
        let (a, b) = (&mut a[0], &mut b[0]);
        let results = run_all(
            &net,
            vec![
                Box::pin(async move { a.rmdir(ROOT_INO, b"/d", T).await.map(|_| None) }),
                Box::pin(async move { b.open(ROOT_INO, b"/d/x", CREATE, FILE, T).await.map(Some) }),
            ],
            &mut rng,
        );
        match (&results[0], &results[1]) {
            (Ok(_), Err(Errno::ENOENT)) => {
                prop_assert_eq!(run(&net, c[0].stat(ROOT_INO, b"/d", true), &mut rng).err(), Some(Errno::ENOENT));
                let inodes = all_inodes(&net);
                prop_assert_eq!(inodes, 1, "only the root is left");
            }
            (Err(Errno::ENOTEMPTY), Ok(Some(fd))) => {
                let fd = *fd;
                run(&net, c[1].close(fd), &mut rng).unwrap();
                let dir = run(&net, c[0].open(ROOT_INO, b"/d", OpenFlags::default(), FILE, T), &mut rng).unwrap();
                let names: Vec<Vec<u8>> = run(&net, c[0].read_dir(dir), &mut rng).unwrap().iter().map(|(n, _)| n.to_vec()).collect();
                prop_assert_eq!(names, vec![b"x".to_vec()]);
            }
            other => prop_assert!(false, "impossible outcome {:?}", other),
        }
    }

    /// Two renames of directories into each other, at once: one wins (or both fail), never a
    /// cycle; every directory is still reachable from the root.
    #[test]
    fn crossing_directory_renames_make_no_cycle(servers in 1..4usize, seed in any::<u64>()) {
        let (net, mut c) = world(servers, 2, true, true);
        let mut rng = Rng::new(seed);
        let dir = Attrs::new(0o755, 0, 0);
        run(&net, c[0].mkdir(ROOT_INO, b"/p", dir, false, T), &mut rng).unwrap();
        run(&net, c[0].mkdir(ROOT_INO, b"/q", dir, false, T), &mut rng).unwrap();
        let (a, b) = c.split_at_mut(1);
        let (a, b) = (&mut a[0], &mut b[0]);
        let r = run_all(
            &net,
            vec![
                Box::pin(async move { a.rename(ROOT_INO, b"/p", ROOT_INO, b"/q/p", 0, T).await }),
                Box::pin(async move { b.rename(ROOT_INO, b"/q", ROOT_INO, b"/p/q", 0, T).await }),
            ],
            &mut rng,
        );
        // Both directories are still reachable from the root, once each.
        let mut found = Vec::new();
        let mut todo = vec![b"/".to_vec()];
        while let Some(path) = todo.pop() {
            let fd = run(&net, c[0].open(ROOT_INO, &path, OpenFlags::default(), FILE, T), &mut rng).unwrap();
            for (name, _) in run(&net, c[0].read_dir(fd), &mut rng).unwrap().iter() {
                let mut p = path.clone();
                if p != b"/" {
                    p.push(b'/');
                }
                p.extend(name);
                found.push(name.to_vec());
                todo.push(p);
            }
            run(&net, c[0].close(fd), &mut rng).unwrap();
        }
        found.sort();
        prop_assert_eq!(found, vec![b"p".to_vec(), b"q".to_vec()], "after {:?}", r);
        prop_assert!(r.iter().any(|x| x.is_err()), "both renames succeeded: a cycle");
    }
}

proptest! {
    /// A description shared by two clients (a fork, §3.5.1): their writes through it, at
    /// once, never overlap, and their reads never return the same bytes twice.
    #[test]
    fn a_shared_description_has_one_offset(servers in 1..4usize, seed in any::<u64>()) {
        let (net, mut c) = world(servers, 2, false, true);
        let mut rng = Rng::new(seed);
        let fd = run(&net, c[0].open(ROOT_INO, b"/log", CREATE, FILE, T), &mut rng).unwrap();
        let shared = run(&net, c[0].share(fd), &mut rng).unwrap();
        let twin = c[1].adopt(shared);
        let (a, b) = c.split_at_mut(1);
        let (a, b) = (&mut a[0], &mut b[0]);
        run_all(
            &net,
            vec![
                Box::pin(async move {
                    for _ in 0..10 {
                        assert_eq!(a.write(fd, &[b'a'; 100], T).await, Ok(100));
                    }
                }),
                Box::pin(async move {
                    for _ in 0..10 {
                        assert_eq!(b.write(twin, &[b'b'; 100], T).await, Ok(100));
                    }
                }),
            ],
            &mut rng,
        );
        prop_assert_eq!(run(&net, c[1].lseek(twin, 0, 1), &mut rng), Ok(2000));
        let mut all = vec![0; 2100];
        prop_assert_eq!(run(&net, c[0].pread(fd, &mut all, 0), &mut rng), Ok(2000));
        for rec in all[..2000].chunks(100) {
            prop_assert!(rec.iter().all(|&x| x == rec[0]), "a torn record");
        }
        prop_assert_eq!(all[..2000].iter().filter(|&&x| x == b'a').count(), 1000);
        // Reads through the two descriptors, at once, split the file between them.
        run(&net, c[0].lseek(fd, 0, 0), &mut rng).unwrap();
        let (a, b) = c.split_at_mut(1);
        let (a, b) = (&mut a[0], &mut b[0]);
        let got = run_all(
            &net,
            vec![
                Box::pin(async move {
                    let mut n = 0;
                    let mut buf = [0; 100];
                    while a.read(fd, &mut buf).await.unwrap() == 100 {
                        n += 100;
                    }
                    n
                }),
                Box::pin(async move {
                    let mut n = 0;
                    let mut buf = [0; 100];
                    while b.read(twin, &mut buf).await.unwrap() == 100 {
                        n += 100;
                    }
                    n
                }),
            ],
            &mut rng,
        );
        prop_assert_eq!(got[0] + got[1], 2000);
        // The description closes with its last descriptor: then the unlinked file goes.
        run(&net, c[0].unlink(ROOT_INO, b"/log", T), &mut rng).unwrap();
        run(&net, c[0].close(fd), &mut rng).unwrap();
        net.borrow_mut().settle();
        let inodes = |net: &common::Net| net.servers.iter().map(|s| s.inodes()).sum::<usize>();
        prop_assert_eq!(inodes(&net.borrow()), 2, "the root and the open file");
        run(&net, c[1].close(twin), &mut rng).unwrap();
        net.borrow_mut().settle();
        prop_assert_eq!(inodes(&net.borrow()), 1);
    }
}

/// A client keeps the size and blocks of the files it has open (§3.3): reading them and
/// writing into blocks it knows asks no server (the write is posted), until another client
/// changes the file, whose server then tells it to forget them (before that client's
/// answer, so its next read sees the change).
#[test]
fn known_blocks_are_read_and_written_without_asking_until_another_client_changes_them() {
    let (net, mut c) = world(2, 2, false, true);
    let mut rng = Rng::new(21);
    let fd = run(&net, c[0].open(ROOT_INO, b"/f", CREATE, FILE, T), &mut rng).unwrap();
    run(&net, c[0].write(fd, &[b'a'; BLOCK_SIZE], T), &mut rng).unwrap();
    // Extending a file with blocks allocates two more pages ahead of the writes to come.
    run(&net, c[0].write(fd, &[b'a'; 100], T), &mut rng).unwrap();
    let (asked, posted) = (c[0].stats().requests, c[0].stats().posted);
    run(&net, c[0].write(fd, &[b'c'; 8000], T), &mut rng).unwrap();
    assert_eq!(c[0].stats().posted - posted, 1, "one posted Wrote");
    assert_eq!(c[0].stats().requests - asked, 1, "and nothing else");
    let size = BLOCK_SIZE + 100 + 8000;
    let mut back = vec![0; size];
    let asked = c[0].stats().requests;
    assert_eq!(run(&net, c[0].pread(fd, &mut back, 0), &mut rng), Ok(size));
    assert_eq!(c[0].stats().requests, asked, "read from the known blocks");
    back.resize(size + 10, 0);
    assert!(back[..BLOCK_SIZE + 100].iter().all(|&b| b == b'a'));
    assert!(back[BLOCK_SIZE + 100..size].iter().all(|&b| b == b'c'));
    // Another client sees the posted write at once, and its own write is seen by the first.
    let other = run(
        &net,
        c[1].open(ROOT_INO, b"/f", OpenFlags::default(), FILE, T),
        &mut rng,
    )
    .unwrap();
    assert_eq!(
        run(&net, c[1].fstat(other), &mut rng).unwrap().size,
        size as u64
    );
    run(&net, c[1].pwrite(other, b"bbbb", 0, T), &mut rng).unwrap();
    let mut head = [0; 6];
    assert_eq!(run(&net, c[0].pread(fd, &mut head, 0), &mut rng), Ok(6));
    assert_eq!(&head, b"bbbbaa");
    run(&net, c[1].ftruncate(other, 5000, T), &mut rng).unwrap();
    assert_eq!(run(&net, c[0].pread(fd, &mut back, 0), &mut rng), Ok(5000));
    assert!(
        c[0].stats().invalidations >= 1,
        "told to forget /f's blocks"
    );
    // Client 1 knows the first page's block (its open brought it): it reads it without
    // asking. The page holding the new end it forgot with its truncation (another writer
    // had the file open: the server moved that page to a new block); a read reaching the end
    // asks, and so sees client 0's posted write past it.
    let asked = c[1].stats().requests;
    let mut first = vec![0; BLOCK_SIZE];
    assert_eq!(
        run(&net, c[1].pread(other, &mut first, 0), &mut rng),
        Ok(BLOCK_SIZE)
    );
    assert_eq!(c[1].stats().requests, asked, "below the end it knows");
    let mut rest = vec![0; 5000 - BLOCK_SIZE];
    assert_eq!(
        run(
            &net,
            c[1].pread(other, &mut rest, BLOCK_SIZE as u64),
            &mut rng
        ),
        Ok(rest.len())
    );
    assert_eq!(c[1].stats().requests, asked + 1, "the page holding the end");
    assert_eq!(&first[..4], b"bbbb");
    assert!(first[4..].iter().chain(&rest[..100]).all(|&x| x == b'a'));
    assert!(rest[100..].iter().all(|&x| x == b'c'));
    run(&net, c[0].pwrite(fd, &[b'd'; 100], 5000, T), &mut rng).unwrap();
    let mut tail = vec![0; 1000];
    assert_eq!(
        run(&net, c[1].pread(other, &mut tail, 4990), &mut rng),
        Ok(110)
    );
    assert_eq!(&tail[10..110], &[b'd'; 100][..]);
    // At the last close, the blocks allocated ahead and never written are free again.
    run(&net, c[0].close(fd), &mut rng).unwrap();
    run(&net, c[1].close(other), &mut rng).unwrap();
    net.borrow_mut().settle();
    let free: u64 = net
        .borrow()
        .servers
        .iter()
        .map(|s| s.stats().free_blocks)
        .sum();
    assert_eq!(
        2 * u64::from(BLOCKS_PER_SERVER) - free,
        2,
        "5100 bytes' two blocks"
    );
}

/// A posted write into a block that another client's truncation took from the file after
/// the writer looked at its blocks (two cores at once): the server copies what was written
/// into the page's block now, and refuses a block the file never had.
#[test]
fn a_posted_write_into_a_block_truncated_since_lands_in_the_file() {
    let (net, mut c) = world(1, 2, false, true);
    let mut rng = Rng::new(22);
    let fd = run(&net, c[0].open(ROOT_INO, b"/f", CREATE, FILE, T), &mut rng).unwrap();
    let ino = run(&net, c[0].fstat(fd), &mut rng).unwrap().ino;
    let write = Request::Write {
        ino,
        offset: 0,
        len: 2 * BLOCK_SIZE as u32,
        append: false,
        desc: None,
        now: T,
    };
    let Reply::Written { blocks, .. } = net.borrow_mut().direct(0, 0, write) else {
        panic!("a write");
    };
    let other = run(
        &net,
        c[1].open(ROOT_INO, b"/f", OpenFlags::default(), FILE, T),
        &mut rng,
    )
    .unwrap();
    run(&net, c[1].ftruncate(other, 0, T), &mut rng).unwrap();
    // Client 0 writes into the second block it knew, then tells the server.
    net.borrow().cache().write(blocks[1], 10, b"hello");
    let wrote = |blocks| Request::Wrote {
        ino,
        offset: BLOCK_SIZE as u64 + 10,
        len: 5,
        blocks,
        now: T,
    };
    let forged = net.borrow_mut().direct(0, 0, wrote(vec![blocks[1] + 100]));
    assert_eq!(forged, Reply::Err(Errno::EINVAL), "not a block of the file");
    assert_eq!(run(&net, c[1].fstat(other), &mut rng).unwrap().size, 0);
    assert_eq!(
        net.borrow_mut().direct(0, 0, wrote(vec![blocks[1]])),
        Reply::Done
    );
    let mut back = vec![1; 2 * BLOCK_SIZE];
    let n = BLOCK_SIZE + 15;
    assert_eq!(run(&net, c[1].pread(other, &mut back, 0), &mut rng), Ok(n));
    assert!(
        back[..BLOCK_SIZE + 10].iter().all(|&b| b == 0),
        "a hole before it"
    );
    assert_eq!(&back[BLOCK_SIZE + 10..n], b"hello");
    run(&net, c[0].close(fd), &mut rng).unwrap();
    run(&net, c[1].close(other), &mut rng).unwrap();
    net.borrow_mut().settle();
    let free = net.borrow().servers[0].stats().free_blocks;
    assert_eq!(u64::from(BLOCKS_PER_SERVER) - free, 1, "the page written");
}

/// A file read a page at a time (as `execve` loads a program) asks for its blocks once per
/// [`READ_AHEAD`] past the first [`MAX_IO_BLOCKS`] (which its open brought), not once per
/// page, and reads every byte right.
#[test]
fn a_file_read_a_page_at_a_time_asks_once_per_read_ahead() {
    let (net, mut c) = world(1, 2, false, true);
    let mut rng = Rng::new(24);
    let pages = MAX_IO_BLOCKS + 100;
    let data: Vec<u8> = (0..pages * BLOCK_SIZE).map(|i| (i % 251) as u8).collect();
    let fd = run(
        &net,
        c[0].open(ROOT_INO, b"/prog", CREATE, FILE, T),
        &mut rng,
    )
    .unwrap();
    run(&net, c[0].write(fd, &data, T), &mut rng).unwrap();
    run(&net, c[0].close(fd), &mut rng).unwrap();
    let fd = run(
        &net,
        c[1].open(ROOT_INO, b"/prog", OpenFlags::default(), FILE, T),
        &mut rng,
    )
    .unwrap();
    let asked = c[1].stats().requests;
    let mut page = vec![0; BLOCK_SIZE];
    for p in 0..pages {
        let at = (p * BLOCK_SIZE) as u64;
        assert_eq!(
            run(&net, c[1].pread(fd, &mut page, at), &mut rng),
            Ok(BLOCK_SIZE)
        );
        assert_eq!(page, data[p * BLOCK_SIZE..][..BLOCK_SIZE], "page {p}");
    }
    let per_ask = READ_AHEAD / BLOCK_SIZE;
    assert!(
        c[1].stats().requests - asked <= 100u64.div_ceil(per_ask as u64),
        "{} requests for {pages} pages",
        c[1].stats().requests - asked
    );
    run(&net, c[1].close(fd), &mut rng).unwrap();
}

/// A write into the page holding a new end, racing another client's truncation to the
/// middle of that page: copied into the block before the truncation and posted after it, it
/// ends as if the truncation came first (zeros up to it, then its bytes), not as zeros; and
/// the bytes before the new end stay.
#[test]
fn a_write_racing_a_truncation_into_the_same_page_keeps_its_bytes() {
    for copied_before in [true, false] {
        let (net, mut c) = world(1, 2, false, true);
        let mut rng = Rng::new(23);
        let fd = run(&net, c[0].open(ROOT_INO, b"/f", CREATE, FILE, T), &mut rng).unwrap();
        run(&net, c[0].write(fd, &[b'a'; BLOCK_SIZE], T), &mut rng).unwrap();
        let ino = run(&net, c[0].fstat(fd), &mut rng).unwrap().ino;
        let Reply::Extent { blocks, .. } = net.borrow_mut().direct(
            0,
            0,
            Request::Read {
                ino,
                offset: 0,
                len: 1,
                desc: None,
            },
        ) else {
            panic!("a read");
        };
        let b = blocks[0].expect("the page's block");
        let other = run(
            &net,
            c[1].open(ROOT_INO, b"/f", OpenFlags::default(), FILE, T),
            &mut rng,
        )
        .unwrap();
        if copied_before {
            net.borrow().cache().write(b, 200, b"hello");
        }
        run(&net, c[1].ftruncate(other, 100, T), &mut rng).unwrap();
        if !copied_before {
            net.borrow().cache().write(b, 200, b"hello");
        }
        let wrote = Request::Wrote {
            ino,
            offset: 200,
            len: 5,
            blocks: vec![b],
            now: T,
        };
        assert_eq!(net.borrow_mut().direct(0, 0, wrote), Reply::Done);
        let mut back = vec![1; BLOCK_SIZE];
        assert_eq!(
            run(&net, c[1].pread(other, &mut back, 0), &mut rng),
            Ok(205)
        );
        assert!(back[..100].iter().all(|&x| x == b'a'), "the head kept");
        assert!(
            back[100..200].iter().all(|&x| x == 0),
            "zeros after the cut"
        );
        assert_eq!(&back[200..205], b"hello", "copied before: {copied_before}");
        // The truncating client reads the same through what it knows.
        let mut again = vec![1; BLOCK_SIZE];
        assert_eq!(
            run(&net, c[1].pread(other, &mut again, 0), &mut rng),
            Ok(205)
        );
        assert_eq!(again[..205], back[..205]);
        run(&net, c[0].close(fd), &mut rng).unwrap();
        run(&net, c[1].close(other), &mut rng).unwrap();
        net.borrow_mut().settle();
        let free = net.borrow().servers[0].stats().free_blocks;
        assert_eq!(
            u64::from(BLOCKS_PER_SERVER) - free,
            1,
            "the page's one block"
        );
    }
}

/// Appends by two clients at once, each knowing the file's last block: every record lands
/// whole at the end (an append asks the server, which alone orders the ends; written into
/// known blocks and posted, both would land at the same end).
#[test]
fn appends_of_two_clients_that_know_the_blocks_keep_every_record() {
    for seed in 0..16 {
        let (net, mut c) = world(1, 2, false, true);
        let mut rng = Rng::new(seed);
        let append = OpenFlags {
            append: true,
            ..OpenFlags::default()
        };
        let fd0 = run(
            &net,
            c[0].open(ROOT_INO, b"/log", CREATE, FILE, T),
            &mut rng,
        )
        .unwrap();
        run(
            &net,
            c[0].write(fd0, &[b'x'; BLOCK_SIZE + 100], T),
            &mut rng,
        )
        .unwrap();
        run(&net, c[0].close(fd0), &mut rng).unwrap();
        let mut fds = Vec::new();
        for cl in c.iter_mut() {
            let fd = run(&net, cl.open(ROOT_INO, b"/log", append, FILE, T), &mut rng).unwrap();
            let mut all = vec![0; 2 * BLOCK_SIZE];
            run(&net, cl.pread(fd, &mut all, 0), &mut rng).unwrap();
            fds.push(fd);
        }
        let futs: Vec<std::pin::Pin<Box<dyn std::future::Future<Output = ()> + '_>>> = c
            .iter_mut()
            .zip(&fds)
            .enumerate()
            .map(|(k, (cl, &fd))| {
                Box::pin(async move {
                    for _ in 0..5 {
                        let record = [b'a' + k as u8; 50];
                        assert_eq!(cl.write(fd, &record, T).await, Ok(50));
                    }
                }) as _
            })
            .collect();
        run_all(&net, futs, &mut rng);
        let mut back = vec![0; 2 * BLOCK_SIZE];
        let n = run(&net, c[0].pread(fds[0], &mut back, 0), &mut rng).unwrap();
        assert_eq!(n, BLOCK_SIZE + 100 + 10 * 50, "seed {seed}: ten records");
        let records = back[BLOCK_SIZE + 100..n].chunks(50);
        let mut counts = [0; 2];
        for r in records {
            assert!(r.iter().all(|&b| b == r[0]), "seed {seed}: a torn record");
            counts[usize::from(r[0] - b'a')] += 1;
        }
        assert_eq!(counts, [5, 5], "seed {seed}");
    }
}

/// A client that no other client writes beside (`alone`) answers a read reaching the end
/// of a file from the size it knows; another client opening the file to write makes it
/// forget the size before that open returns, so that writer's posted writes are seen.
#[test]
fn a_reader_alone_stops_at_the_end_it_knows_until_another_client_opens_to_write() {
    let (net, mut c) = world(2, 2, false, true);
    let mut rng = Rng::new(23);
    let read_only = OpenFlags {
        read_only: true,
        ..OpenFlags::default()
    };
    let fd = run(&net, c[0].open(ROOT_INO, b"/f", CREATE, FILE, T), &mut rng).unwrap();
    run(&net, c[0].write(fd, &[b'a'; 100], T), &mut rng).unwrap();
    run(&net, c[0].close(fd), &mut rng).unwrap();
    let r = run(
        &net,
        c[1].open(ROOT_INO, b"/f", read_only, FILE, T),
        &mut rng,
    )
    .unwrap();
    let mut buf = vec![0; 1000];
    let asked = c[1].stats().requests;
    assert_eq!(run(&net, c[1].pread(r, &mut buf, 0), &mut rng), Ok(100));
    assert_eq!(run(&net, c[1].pread(r, &mut buf, 100), &mut rng), Ok(0));
    assert_eq!(c[1].stats().requests, asked, "the open's blocks and size");
    assert!(buf[..100].iter().all(|&b| b == b'a'));
    assert_eq!(
        run(&net, c[1].write(r, b"x", T), &mut rng),
        Err(Errno::EBADF),
        "opened to read"
    );
    // A writer opens it and posts a write past the end: the reader asks, and sees it.
    let w = run(
        &net,
        c[0].open(ROOT_INO, b"/f", OpenFlags::default(), FILE, T),
        &mut rng,
    )
    .unwrap();
    let posted = c[0].stats().posted;
    run(&net, c[0].pwrite(w, &[b'b'; 50], 100, T), &mut rng).unwrap();
    assert_eq!(c[0].stats().posted - posted, 1, "a posted Wrote");
    assert_eq!(run(&net, c[1].pread(r, &mut buf, 0), &mut rng), Ok(150));
    assert!(buf[100..150].iter().all(|&b| b == b'b'));
    // While it is open to write elsewhere, every read reaching the end asks.
    let asked = c[1].stats().requests;
    assert_eq!(run(&net, c[1].pread(r, &mut buf, 150), &mut rng), Ok(0));
    assert_eq!(c[1].stats().requests - asked, 1);
    // Once the writer closed, a new open is alone again.
    run(&net, c[0].close(w), &mut rng).unwrap();
    run(&net, c[1].close(r), &mut rng).unwrap();
    let r = run(
        &net,
        c[1].open(ROOT_INO, b"/f", read_only, FILE, T),
        &mut rng,
    )
    .unwrap();
    let asked = c[1].stats().requests;
    assert_eq!(run(&net, c[1].pread(r, &mut buf, 0), &mut rng), Ok(150));
    assert_eq!(c[1].stats().requests, asked);
    run(&net, c[1].close(r), &mut rng).unwrap();
}

/// A new file opened to write comes with its first page's block (allocated ahead): its
/// first write is posted, and another client reads it. A posted write from a client that
/// has the file open only to read is refused, changing nothing.
#[test]
fn a_new_file_is_written_without_asking_and_only_writers_post() {
    let (net, mut c) = world(1, 2, false, true);
    let mut rng = Rng::new(24);
    let fd = run(&net, c[0].open(ROOT_INO, b"/f", CREATE, FILE, T), &mut rng).unwrap();
    let (asked, posted) = (c[0].stats().requests, c[0].stats().posted);
    run(&net, c[0].write(fd, &[b'm'; 700], T), &mut rng).unwrap();
    assert_eq!(c[0].stats().posted - posted, 1, "a posted Wrote");
    assert_eq!(c[0].stats().requests - asked, 1, "and nothing else");
    let read_only = OpenFlags {
        read_only: true,
        ..OpenFlags::default()
    };
    let r = run(
        &net,
        c[1].open(ROOT_INO, b"/f", read_only, FILE, T),
        &mut rng,
    )
    .unwrap();
    let st = run(&net, c[1].fstat(r), &mut rng).unwrap();
    assert_eq!((st.size, st.blocks), (700, 8));
    let mut buf = vec![0; 1000];
    assert_eq!(run(&net, c[1].pread(r, &mut buf, 0), &mut rng), Ok(700));
    assert!(buf[..700].iter().all(|&b| b == b'm'));
    let Reply::Extent { blocks, .. } = net.borrow_mut().direct(
        1,
        0,
        Request::Read {
            ino: st.ino,
            offset: 0,
            len: 700,
            desc: None,
        },
    ) else {
        panic!("an extent");
    };
    let wrote = Request::Wrote {
        ino: st.ino,
        offset: 700,
        len: 10,
        blocks: vec![blocks[0].expect("written")],
        now: T,
    };
    assert_eq!(
        net.borrow_mut().direct(1, 0, wrote),
        Reply::Err(Errno::EINVAL),
        "client 1 has it open only to read"
    );
    assert_eq!(run(&net, c[0].fstat(fd), &mut rng).unwrap().size, 700);
    run(&net, c[0].close(fd), &mut rng).unwrap();
    run(&net, c[1].close(r), &mut rng).unwrap();
    net.borrow_mut().settle();
    let free = net.borrow().servers[0].stats().free_blocks;
    assert_eq!(u64::from(BLOCKS_PER_SERVER) - free, 1, "the page written");
}

/// An ordinary directory whose open brought the first batch of its listing, and which
/// distributes itself before the listing goes on (another core's create crossed the
/// threshold): the rest of the listing comes from every server, so every entry is listed
/// once (asking its home alone missed those that moved).
#[test]
fn a_listing_begun_before_its_directory_distributes_itself_lists_every_entry() {
    let (net, mut c) = world(3, 2, false, true);
    let mut rng = Rng::new(25);
    run(&net, c[0].mkdir(ROOT_INO, b"/d", DIR, false, T), &mut rng).unwrap();
    let mut names = Vec::new();
    for i in 0..300 {
        let name = format!("a-rather-long-name-so-that-a-page-holds-few-{i:03}");
        let path = format!("/d/{name}");
        let fd = run(
            &net,
            c[0].open(ROOT_INO, path.as_bytes(), CREATE, FILE, T),
            &mut rng,
        );
        run(&net, c[0].close(fd.unwrap()), &mut rng).unwrap();
        names.push(name.into_bytes());
    }
    names.sort();
    let dir = run(&net, c[1].stat(ROOT_INO, b"/d", true), &mut rng)
        .unwrap()
        .ino;
    let list = OpenFlags {
        list: true,
        ..OpenFlags::default()
    };
    let fd = run(&net, c[1].open(ROOT_INO, b"/d", list, DIR, T), &mut rng).unwrap();
    assert_eq!(common::distribute(&net, 2, dir), Ok(true));
    c[1].forget_cache();
    let listed: Vec<_> = run(&net, c[1].read_dir(fd), &mut rng)
        .unwrap()
        .iter()
        .map(|(n, _)| n.to_vec())
        .collect();
    assert_eq!(listed.len(), names.len(), "every name");
    assert!(listed == names, "each once, in order");
    run(&net, c[1].close(fd), &mut rng).unwrap();
}

/// Opening a distributed directory to list it asks every server at once: its home for the
/// open and the first batch of its share, each other server for its first batch (§3.7.3,
/// §3.7.4); the first `read_dir` asks only for what did not fit. A client that saw a
/// directory ordinary before it distributed itself lists it whole too.
#[test]
fn opening_a_distributed_directory_to_list_it_asks_every_server_at_once() {
    let (net, mut c) = world(3, 2, false, true);
    let mut rng = Rng::new(27);
    let mut made = |c: &mut HClient, dir: &str, n: usize, distributed: bool| {
        let path = format!("/{dir}");
        run(
            &net,
            c.mkdir(ROOT_INO, path.as_bytes(), DIR, distributed, T),
            &mut rng,
        )
        .unwrap();
        let mut names: Vec<Vec<u8>> = (0..n)
            .map(|i| format!("a-rather-long-name-so-that-a-page-holds-few-{i:03}").into_bytes())
            .collect();
        for name in &names {
            let mut p = format!("{path}/").into_bytes();
            p.extend(name);
            touch(&net, c, &p, &mut rng);
        }
        names.sort();
        names
    };
    let small = made(&mut c[0], "small", 6, true);
    let big = made(&mut c[0], "big", 300, true);
    let grown = made(&mut c[0], "grown", 40, false);
    net.borrow_mut().settle();
    let list = OpenFlags {
        list: true,
        ..OpenFlags::default()
    };
    let mut rng = Rng::new(28);
    let names =
        |v: std::sync::Arc<hare::Listing>| v.iter().map(|(n, _)| n.to_vec()).collect::<Vec<_>>();
    let before = requests(&net);
    let fd = run(&net, c[0].open(ROOT_INO, b"/small", list, DIR, T), &mut rng).unwrap();
    assert_eq!(requests(&net) - before, 3, "the open and two Dirents");
    let listed = names(run(&net, c[0].read_dir(fd), &mut rng).unwrap());
    assert_eq!(listed, small, "every name once, in order");
    assert_eq!(requests(&net) - before, 3, "nothing more asked");
    run(&net, c[0].close(fd), &mut rng).unwrap();
    net.borrow_mut().settle();
    let before = requests(&net);
    let fd = run(&net, c[0].open(ROOT_INO, b"/big", list, DIR, T), &mut rng).unwrap();
    assert_eq!(requests(&net) - before, 3);
    let listed = names(run(&net, c[0].read_dir(fd), &mut rng).unwrap());
    assert_eq!(listed, big, "every name once, in order");
    assert!(requests(&net) - before > 3, "what did not fit asked for");
    run(&net, c[0].close(fd), &mut rng).unwrap();
    let dir = run(&net, c[1].stat(ROOT_INO, b"/grown", true), &mut rng)
        .unwrap()
        .ino;
    assert_eq!(common::distribute(&net, 2, dir), Ok(true));
    let fd = run(&net, c[1].open(ROOT_INO, b"/grown", list, DIR, T), &mut rng).unwrap();
    let listed = names(run(&net, c[1].read_dir(fd), &mut rng).unwrap());
    assert_eq!(listed, grown, "every name once, in order");
    run(&net, c[1].close(fd), &mut rng).unwrap();
}

/// A listing kept since an earlier `read_dir` answers the next open of its directory to
/// list it with nothing waited for (the open is posted, to be counted); a change to the
/// directory by any client, this one too, makes it forgotten before the next open: a create,
/// an unlink, a rename in and one out, a mkdir and an rmdir, in an ordinary and in a
/// distributed directory. A directory removed while opened from a kept listing keeps its
/// attributes until the close, as it does when its open was waited for.
#[test]
fn a_kept_listing_is_forgotten_when_its_directory_changes() {
    let (net, mut c) = world(3, 2, false, true);
    let mut rng = Rng::new(29);
    let list = OpenFlags {
        list: true,
        ..OpenFlags::default()
    };
    // Lists `dir` through `c`: the names, and whether the listing was kept from before
    // (then the client waited for no reply).
    let listed = |c: &mut HClient, dir: &str, rng: &mut Rng| {
        let before = c.stats();
        let fd = run(&net, c.open(ROOT_INO, dir.as_bytes(), list, DIR, T), rng).unwrap();
        let names: Vec<String> = run(&net, c.read_dir(fd), rng)
            .unwrap()
            .iter()
            .map(|(n, _)| String::from_utf8(n.to_vec()).unwrap())
            .collect();
        run(&net, c.close(fd), rng).unwrap();
        let after = c.stats();
        let kept = after.listing_hits - before.listing_hits == 1;
        let waited = (after.requests - after.posted) - (before.requests - before.posted);
        assert!(
            !kept || waited == 0,
            "{dir}: a kept listing waited for {waited} replies"
        );
        (names, kept)
    };
    run(&net, c[0].mkdir(ROOT_INO, b"/o", DIR, false, T), &mut rng).unwrap();
    run(&net, c[0].mkdir(ROOT_INO, b"/d", DIR, true, T), &mut rng).unwrap();
    run(
        &net,
        c[0].mkdir(ROOT_INO, b"/away", DIR, false, T),
        &mut rng,
    )
    .unwrap();
    for dir in ["/o", "/d"] {
        let p = |name: &str| format!("{dir}/{name}").into_bytes();
        touch(&net, &mut c[1], &p("a"), &mut rng);
        assert_eq!(listed(&mut c[0], dir, &mut rng), (vec!["a".into()], false));
        assert_eq!(listed(&mut c[0], dir, &mut rng), (vec!["a".into()], true));
        // Which client changes the directory, how, and the names it then holds.
        type Change<'a> = (usize, &'a dyn Fn(&mut HClient, &mut Rng), &'a [&'a str]);
        let changes: [Change; 7] = [
            (1, &|c, rng| touch(&net, c, &p("b"), rng), &["a", "b"]),
            (
                1,
                &|c, rng| run(&net, c.unlink(ROOT_INO, &p("b"), T), rng).unwrap(),
                &["a"],
            ),
            (
                1,
                &|c, rng| {
                    touch(&net, c, b"/away/x", rng);
                    let to = p("x");
                    run(
                        &net,
                        c.rename(ROOT_INO, b"/away/x", ROOT_INO, &to, 0, T),
                        rng,
                    )
                    .unwrap()
                },
                &["a", "x"],
            ),
            (
                1,
                &|c, rng| {
                    let from = p("x");
                    run(
                        &net,
                        c.rename(ROOT_INO, &from, ROOT_INO, b"/away/y", 0, T),
                        rng,
                    )
                    .unwrap()
                },
                &["a"],
            ),
            (
                1,
                &|c, rng| run(&net, c.mkdir(ROOT_INO, &p("s"), DIR, false, T), rng).unwrap(),
                &["a", "s"],
            ),
            (
                1,
                &|c, rng| run(&net, c.rmdir(ROOT_INO, &p("s"), T), rng).unwrap(),
                &["a"],
            ),
            (0, &|c, rng| touch(&net, c, &p("m"), rng), &["a", "m"]),
        ];
        for (k, (by, change, want)) in changes.iter().enumerate() {
            change(&mut c[*by], &mut rng);
            let want: Vec<String> = want.iter().map(|w| w.to_string()).collect();
            assert_eq!(
                listed(&mut c[0], dir, &mut rng),
                (want.clone(), false),
                "change {k}"
            );
            assert_eq!(
                listed(&mut c[0], dir, &mut rng),
                (want, true),
                "change {k}, again"
            );
        }
    }
    run(&net, c[0].mkdir(ROOT_INO, b"/e", DIR, false, T), &mut rng).unwrap();
    listed(&mut c[0], "/e", &mut rng);
    let hits = c[0].stats().listing_hits;
    let fd = run(&net, c[0].open(ROOT_INO, b"/e", list, DIR, T), &mut rng).unwrap();
    assert_eq!(
        c[0].stats().listing_hits,
        hits + 1,
        "opened from the kept listing"
    );
    run(&net, c[1].rmdir(ROOT_INO, b"/e", T), &mut rng).unwrap();
    let st = run(&net, c[0].fstat(fd), &mut rng).expect("the open was counted before the rmdir");
    assert_eq!(st.nlink, 0);
    run(&net, c[0].close(fd), &mut rng).unwrap();
}

/// A kept listing answers the lookups of names in its directory, there or not, with no
/// message until the directory changes: a stat of a name not in it is `ENOENT` and of one
/// in it asks for the attributes alone, a mkdir of a name in it is `EEXIST`; a name another
/// client makes then is found.
#[test]
fn a_kept_listing_answers_lookups_in_its_directory() {
    let (net, mut c) = world(3, 2, false, true);
    let mut rng = Rng::new(33);
    run(&net, c[1].mkdir(ROOT_INO, b"/d", DIR, true, T), &mut rng).unwrap();
    touch(&net, &mut c[1], b"/d/a", &mut rng);
    let list = OpenFlags {
        list: true,
        ..OpenFlags::default()
    };
    let fd = run(&net, c[0].open(ROOT_INO, b"/d", list, DIR, T), &mut rng).unwrap();
    assert_eq!(run(&net, c[0].read_dir(fd), &mut rng).unwrap().len(), 1);
    run(&net, c[0].close(fd), &mut rng).unwrap();
    let waited = |c: &HClient| c.stats().requests - c.stats().posted;
    let before = waited(&c[0]);
    let absent = run(&net, c[0].stat(ROOT_INO, b"/d/nothing", true), &mut rng);
    assert_eq!(absent.err(), Some(Errno::ENOENT));
    assert_eq!(waited(&c[0]), before, "not in the listing: nothing asked");
    let st = run(&net, c[0].stat(ROOT_INO, b"/d/a", true), &mut rng).unwrap();
    assert_eq!(st.kind, Kind::File);
    assert_eq!(
        waited(&c[0]),
        before + 1,
        "in it: its attributes alone asked"
    );
    let made = run(&net, c[0].mkdir(ROOT_INO, b"/d/a", DIR, false, T), &mut rng);
    assert_eq!(made, Err(Errno::EEXIST));
    assert_eq!(
        waited(&c[0]),
        before + 1,
        "a listed name is taken: nothing asked"
    );
    touch(&net, &mut c[1], b"/d/nothing", &mut rng);
    run(&net, c[0].stat(ROOT_INO, b"/d/nothing", true), &mut rng).expect("made since");
}

/// A server counts at most `LISTERS_MAX` listers: a client listing made-up directories
/// (which a server that is not their home cannot tell from directories with no entries
/// there) makes every lister forget its listing, and then the kept listings are gathered
/// afresh, right.
#[test]
fn listing_made_up_directories_makes_every_kept_listing_forgotten() {
    let (net, mut c) = world(2, 1, false, true);
    let mut rng = Rng::new(31);
    let list = OpenFlags {
        list: true,
        ..OpenFlags::default()
    };
    run(&net, c[0].mkdir(ROOT_INO, b"/d", DIR, true, T), &mut rng).unwrap();
    touch(&net, &mut c[0], b"/d/a", &mut rng);
    let names = |c: &mut hare::Client<_, _>, rng: &mut Rng| {
        let fd = run(&net, c.open(ROOT_INO, b"/d", list, DIR, T), rng).unwrap();
        let l = run(&net, c.read_dir(fd), rng).unwrap();
        run(&net, c.close(fd), rng).unwrap();
        l.len()
    };
    names(&mut c[0], &mut rng);
    let hits = c[0].stats().listing_hits;
    assert_eq!(names(&mut c[0], &mut rng), 1);
    assert_eq!(c[0].stats().listing_hits, hits + 1, "kept");
    let table = net.borrow().servers[0].table().clone();
    for s in table.servers() {
        let made_up = (1_000_000u64..).filter(|&d| table.inode_server(d) != s);
        for dir in made_up.take(hare::LISTERS_MAX + 1) {
            let r = net
                .borrow_mut()
                .direct(9, s, Request::Dirents { dir, after: None });
            assert!(matches!(r, Reply::Dirents { .. }), "{r:?}");
        }
    }
    let hits = c[0].stats().listing_hits;
    assert_eq!(names(&mut c[0], &mut rng), 1);
    assert_eq!(c[0].stats().listing_hits, hits, "forgotten, listed again");
    touch(&net, &mut c[0], b"/d/b", &mut rng);
    assert_eq!(names(&mut c[0], &mut rng), 2, "counted as a lister again");
}

/// What the kernel's client lets a fatal signal cut short: only requests that change
/// nothing at the server (a lookup, a listing, a stat, a read at its own offset).
#[test]
fn only_requests_that_change_nothing_may_be_abandoned() {
    let queries = [
        Request::Lookup {
            dir: ROOT_INO,
            name: b"a".to_vec(),
        },
        Request::Stat { ino: ROOT_INO },
        Request::Statfs,
        Request::GetTable,
        Request::Read {
            ino: 5,
            offset: 0,
            len: 1,
            desc: None,
        },
    ];
    assert!(queries.iter().all(|r| !r.changes()), "{queries:?}");
    let changes = [
        Request::Read {
            ino: 5,
            offset: 0,
            len: 1,
            desc: Some(1),
        },
        Request::Touch { ino: 5, now: T },
        Request::Unlink { ino: 5, now: T },
        Request::Hold { dir: ROOT_INO },
    ];
    assert!(changes.iter().all(Request::changes), "{changes:?}");
}
