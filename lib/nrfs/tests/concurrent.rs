//! Several threads on three replicas create, write, rename (within and across directories,
//! files and directories), unlink and list concurrently on small logs that wrap around many
//! times. Checks: every update is visible at once on another replica (linearizability),
//! listings never repeat a name and never miss an entry that existed throughout, and in the
//! end all replicas are identical and hold exactly what the threads left.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::{Arc, Barrier};
use std::thread;

use abi::Errno;
use nrfs::*;

const REPLICAS: usize = 3;
const WORKERS: usize = 4;
const LISTERS: usize = 2;
const KEEP: usize = 12;

static CLOCK: AtomicI64 = AtomicI64::new(1);

fn now() -> Timespec {
    Timespec::new(CLOCK.fetch_add(1, Ordering::Relaxed), 0)
}

const FILE: Attrs = Attrs::new(0o644, 0, 0);
const DIR: Attrs = Attrs::new(0o755, 0, 0);

fn excl() -> CreateFlags {
    CreateFlags {
        exclusive: true,
        open: false,
    }
}

fn contents(i: usize, w: usize) -> Vec<u8> {
    (0..(100 + 37 * i)).map(|k| (k + w * 7 + i) as u8).collect()
}

fn worker(w: usize, rounds: usize, local: FsClient, remote: FsClient) -> Vec<(String, Vec<u8>)> {
    let mut kept = Vec::new();
    for i in 0..rounds {
        let name = format!("/d/t{w}_{i}");
        let ino = local
            .create(ROOT_INO, name.as_bytes(), FILE, excl(), now())
            .unwrap()
            .ino;
        // Linearizable: another replica sees the new name and the data right away.
        assert_eq!(remote.resolve(ROOT_INO, name.as_bytes(), true), Ok(ino));
        let data = contents(i, w);
        assert_eq!(local.write(ino, 0, &data, now()), Ok(data.len()));
        let mut buf = vec![0u8; data.len() + 5];
        assert_eq!(remote.read(ino, 0, &mut buf), Ok(data.len()));
        assert_eq!(&buf[..data.len()], &data[..]);

        // Rename within /d, then (sometimes) across to /x.
        let renamed = format!("/d/r{w}_{i}");
        local
            .rename(
                ROOT_INO,
                name.as_bytes(),
                ROOT_INO,
                renamed.as_bytes(),
                0,
                now(),
            )
            .unwrap();
        assert_eq!(
            remote.resolve(ROOT_INO, name.as_bytes(), true),
            Err(Errno::ENOENT)
        );
        let path = if i % 3 == 0 {
            let moved = format!("/x/m{w}_{i}");
            remote
                .rename(
                    ROOT_INO,
                    renamed.as_bytes(),
                    ROOT_INO,
                    moved.as_bytes(),
                    0,
                    now(),
                )
                .unwrap();
            moved
        } else {
            renamed
        };
        assert_eq!(local.resolve(ROOT_INO, path.as_bytes(), true), Ok(ino));

        // Shared files: O_APPEND writes from every worker.
        let shared = format!("/d/keep{}", i % KEEP);
        let sino = remote.resolve(ROOT_INO, shared.as_bytes(), true).unwrap();
        local.append(sino, &[w as u8; 3], now()).unwrap();

        // A directory built in /w and moved to /x (a scan over all logs), then removed.
        if i % 5 == 0 {
            let dir = format!("/w/dir{w}_{i}");
            let dino = local.mkdir(ROOT_INO, dir.as_bytes(), DIR, now()).unwrap();
            local.create(dino, b"inner", FILE, excl(), now()).unwrap();
            let moved = format!("/x/dir{w}_{i}");
            local
                .rename(
                    ROOT_INO,
                    dir.as_bytes(),
                    ROOT_INO,
                    moved.as_bytes(),
                    0,
                    now(),
                )
                .unwrap();
            assert_eq!(
                remote.lookup(dino, b".."),
                remote.resolve(ROOT_INO, b"/x", true)
            );
            assert_eq!(
                remote.rmdir(ROOT_INO, moved.as_bytes(), now()),
                Err(Errno::ENOTEMPTY)
            );
            remote.unlink(dino, b"inner", now()).unwrap();
            remote.rmdir(ROOT_INO, moved.as_bytes(), now()).unwrap();
        }

        // Remove most files; sometimes while open, reading it after the unlink.
        if i % 7 == 3 {
            kept.push((path, data));
        } else if i % 2 == 0 {
            local.open(ino).unwrap();
            remote.unlink(ROOT_INO, path.as_bytes(), now()).unwrap();
            assert_eq!(local.read(ino, 0, &mut buf), Ok(data.len()));
            local.close(ino).unwrap();
            assert_eq!(remote.stat(ino), Err(Errno::ENOENT));
        } else {
            local.unlink(ROOT_INO, path.as_bytes(), now()).unwrap();
        }
    }
    kept
}

/// Lists /d in chunks of three, alternating replicas between chunks; returns the listings.
fn lister(a: FsClient, b: FsClient, stop: &AtomicBool) -> usize {
    let d = a.resolve(ROOT_INO, b"/d", true).unwrap();
    let mut listings = 0;
    while !stop.load(Ordering::Relaxed) || listings < 3 {
        let mut seen = BTreeSet::new();
        let mut cookie = 0;
        let mut turn = 0;
        loop {
            let c = if turn % 2 == 0 { &a } else { &b };
            turn += 1;
            let chunk = c.read_dir(d, cookie, 3).unwrap();
            let Some(last) = chunk.last() else { break };
            cookie = last.next_cookie;
            for e in chunk {
                let name = String::from_utf8(e.name).unwrap();
                assert!(seen.insert(name.clone()), "{name} listed twice");
            }
        }
        for k in 0..KEEP {
            assert!(
                seen.contains(&format!("keep{k}")),
                "keep{k} missing from a listing"
            );
        }
        assert!(seen.contains(".") && seen.contains(".."));
        listings += 1;
    }
    listings
}

#[test]
fn concurrent_operations_four_logs() {
    // 16-entry logs: thousands of operations wrap them many times.
    run(4, 16, 150);
}

#[test]
fn concurrent_operations_two_tiny_logs() {
    // 8-entry logs shared by many threads: appends keep waiting for lagging replicas.
    run(2, 8, 80);
}

fn run(nlogs: usize, entries: usize, rounds: usize) {
    nr::set_spin_hook(thread::yield_now);
    let (fs, replicas) = NrFs::new(nlogs, entries, REPLICAS).unwrap();
    let main = fs.client(&replicas[0]).unwrap();
    for dir in ["/d", "/w", "/x"] {
        main.mkdir(ROOT_INO, dir.as_bytes(), DIR, now()).unwrap();
    }
    for k in 0..KEEP {
        main.create(
            ROOT_INO,
            format!("/d/keep{k}").as_bytes(),
            FILE,
            excl(),
            now(),
        )
        .unwrap();
    }

    let stop = Arc::new(AtomicBool::new(false));
    let start = Arc::new(Barrier::new(WORKERS + LISTERS));
    let mut workers = Vec::new();
    for w in 0..WORKERS {
        let local = fs.client(&replicas[w % REPLICAS]).unwrap();
        let remote = fs.client(&replicas[(w + 1) % REPLICAS]).unwrap();
        let start = start.clone();
        workers.push(thread::spawn(move || {
            start.wait();
            worker(w, rounds, local, remote)
        }));
    }
    let mut listers = Vec::new();
    for l in 0..LISTERS {
        let a = fs.client(&replicas[(l + 1) % REPLICAS]).unwrap();
        let b = fs.client(&replicas[(l + 2) % REPLICAS]).unwrap();
        let (stop, start) = (stop.clone(), start.clone());
        listers.push(thread::spawn(move || {
            start.wait();
            lister(a, b, &stop)
        }));
    }
    let kept: Vec<(String, Vec<u8>)> = workers
        .into_iter()
        .flat_map(|h| h.join().expect("worker failed"))
        .collect();
    stop.store(true, Ordering::Relaxed);
    for h in listers {
        assert!(h.join().expect("lister failed") >= 3);
    }

    // Every replica caught up and identical.
    let clients: Vec<FsClient> = replicas.iter().map(|r| fs.client(r).unwrap()).collect();
    let snaps: Vec<FileSystem> = clients
        .iter()
        .map(|c| c.replica().verify(c.token(), |d| d.snapshot()))
        .collect();
    for s in &snaps[1..] {
        assert!(s == &snaps[0], "replicas differ");
    }
    for s in fs.log_stats() {
        assert_eq!(s.applied, vec![s.submitted; REPLICAS], "log {}", s.log);
    }
    // What is left is what the workers kept, with their contents.
    let c = &clients[2];
    let mut expected_names = BTreeSet::new();
    for (path, data) in &kept {
        let ino = c.resolve(ROOT_INO, path.as_bytes(), true).unwrap();
        let mut buf = vec![0u8; data.len() + 1];
        assert_eq!(c.read(ino, 0, &mut buf), Ok(data.len()));
        assert_eq!(&buf[..data.len()], &data[..]);
        assert_eq!(c.stat(ino).unwrap().nlink, 1);
        expected_names.insert(path.clone());
    }
    let mut names = BTreeSet::new();
    for dir in ["/d", "/x"] {
        let d = c.resolve(ROOT_INO, dir.as_bytes(), true).unwrap();
        for e in c.read_dir(d, 0, usize::MAX).unwrap() {
            let n = String::from_utf8(e.name).unwrap();
            if n != "." && n != ".." && !n.starts_with("keep") {
                names.insert(format!("{dir}/{n}"));
            }
        }
    }
    assert_eq!(names, expected_names);
    let w = c.resolve(ROOT_INO, b"/w", true).unwrap();
    assert_eq!(c.read_dir(w, 2, 10).unwrap(), vec![]);
    assert_eq!(c.stat(ROOT_INO).unwrap().nlink, 5);
    // Each shared file got 3 bytes per append, from rounds i with i % KEEP == k.
    for k in 0..KEEP {
        let appends = (0..rounds).filter(|i| i % KEEP == k).count() * WORKERS;
        let ino = c
            .resolve(ROOT_INO, format!("/d/keep{k}").as_bytes(), true)
            .unwrap();
        assert_eq!(c.stat(ino).unwrap().size, 3 * appends as u64);
    }
    // Root, three directories, the shared files and the kept files.
    let stats = c.statfs().unwrap();
    assert_eq!(stats.inodes, 1 + 3 + KEEP as u64 + kept.len() as u64);
    check_invariants(c);
}

/// Checks what any state must satisfy: link counts match the entries that name each inode
/// (directories: 2 plus subdirectories), `..` points back, and every inode is reachable (none
/// leaked: the test closes everything it opens).
fn check_invariants(c: &FsClient) {
    use std::collections::BTreeMap;
    let mut names: BTreeMap<Ino, u32> = BTreeMap::new();
    let mut stack = vec![ROOT_INO];
    let mut dirs = 0;
    while let Some(dir) = stack.pop() {
        dirs += 1;
        let entries = c.read_dir(dir, 0, usize::MAX).unwrap();
        let subdirs = entries
            .iter()
            .skip(2)
            .filter(|e| e.kind == Kind::Dir)
            .count();
        assert_eq!(c.stat(dir).unwrap().nlink as usize, 2 + subdirs);
        for e in entries.into_iter().skip(2) {
            if e.kind == Kind::Dir {
                assert_eq!(c.lookup(e.ino, b".."), Ok(dir));
                stack.push(e.ino);
            } else {
                *names.entry(e.ino).or_default() += 1;
            }
        }
    }
    for (&ino, &n) in &names {
        assert_eq!(c.stat(ino).unwrap().nlink, n, "inode {ino}");
    }
    assert_eq!(c.statfs().unwrap().inodes, dirs + names.len() as u64);
}

/// Threads fight over a handful of names: renames over each other, links, unlinks, opens of
/// unlinked files, directories replacing directories. Any Linux error may come back (the
/// names change under everyone's feet), but never EIO, and the state stays consistent.
#[test]
fn contended_names_stay_consistent() {
    nr::set_spin_hook(thread::yield_now);
    let (fs, replicas) = NrFs::new(4, 16, 2).unwrap();
    let main = fs.client(&replicas[0]).unwrap();
    let c = main.mkdir(ROOT_INO, b"c", DIR, now()).unwrap();
    let start = Arc::new(Barrier::new(4));
    let threads: Vec<_> = (0..4)
        .map(|t| {
            let cl = fs.client(&replicas[t % 2]).unwrap();
            let start = start.clone();
            thread::spawn(move || {
                start.wait();
                let mut rng = 0x9e37_79b9_7f4a_7c15u64 ^ (t as u64) << 32;
                let mut next = move |n: u64| {
                    rng ^= rng << 13;
                    rng ^= rng >> 7;
                    rng ^= rng << 17;
                    rng % n
                };
                let name = |i: u64| format!("n{i}").into_bytes();
                for _ in 0..300 {
                    let (a, b) = (name(next(4)), name(next(4)));
                    let r = match next(9) {
                        0 => cl
                            .create(
                                c,
                                &a,
                                FILE,
                                CreateFlags {
                                    exclusive: false,
                                    open: true,
                                },
                                now(),
                            )
                            .and_then(|f| {
                                cl.write(f.ino, 0, b"x", now())?;
                                cl.close(f.ino)
                            }),
                        1 => cl.rename(c, &a, c, &b, 0, now()),
                        2 => cl.rename(c, &a, c, &b, RENAME_EXCHANGE, now()),
                        3 => cl.rename(c, &a, c, &b, RENAME_NOREPLACE, now()),
                        4 => cl.unlink(c, &a, now()),
                        5 => cl.link(c, &a, c, &b, false, now()),
                        6 => cl.mkdir(c, &a, DIR, now()).map(drop),
                        7 => cl.rmdir(c, &a, now()),
                        _ => cl.open_path(c, &a, false).and_then(|ino| {
                            let _ = cl.unlink(c, &a, now());
                            cl.close(ino)
                        }),
                    };
                    assert_ne!(r, Err(Errno::EIO));
                }
            })
        })
        .collect();
    for h in threads {
        h.join().expect("thread failed");
    }
    let snaps: Vec<FileSystem> = replicas
        .iter()
        .map(|r| {
            let c = fs.client(r).unwrap();
            r.verify(c.token(), |d| d.snapshot())
        })
        .collect();
    assert!(snaps[0] == snaps[1], "replicas differ");
    check_invariants(&main);
    let other = fs.client(&replicas[1]).unwrap();
    check_invariants(&other);
    println!("stale retries: {}", fs.stale_retries());
}

/// `rename` over a name is atomic for `open`: one thread replaces `t` (directly, and through
/// symlink `l`) by a new file as fast as it can while three others, on both replicas, open
/// it; no open may fail, however often the inode it resolved is freed before its open.
#[test]
fn open_never_misses_a_name_renamed_over() {
    nr::set_spin_hook(thread::yield_now);
    let (fs, replicas) = NrFs::new(4, 16, 2).unwrap();
    let main = fs.client(&replicas[0]).unwrap();
    let d = main.mkdir(ROOT_INO, b"d", DIR, now()).unwrap();
    main.create(d, b"t", FILE, excl(), now()).unwrap();
    main.symlink(b"t", d, b"l", FILE, now()).unwrap();
    let done = Arc::new(AtomicBool::new(false));
    let start = Arc::new(Barrier::new(4));
    let renamer = {
        let (done, start) = (done.clone(), start.clone());
        thread::spawn(move || {
            start.wait();
            for _ in 0..2000 {
                main.create(d, b"tmp", FILE, excl(), now()).unwrap();
                main.rename(d, b"tmp", d, b"t", 0, now()).unwrap();
            }
            done.store(true, Ordering::Relaxed);
            main
        })
    };
    let openers: Vec<_> = (0..3)
        .map(|o| {
            let cl = fs.client(&replicas[(o + 1) % 2]).unwrap();
            let (done, start) = (done.clone(), start.clone());
            thread::spawn(move || {
                start.wait();
                let mut opens = 0u64;
                while !done.load(Ordering::Relaxed) {
                    let path: &[u8] = if opens % 2 == 0 { b"t" } else { b"l" };
                    let ino = cl.open_path(d, path, true).unwrap_or_else(|e| {
                        panic!("opener {o}: open of {path:?} failed with {e:?} after {opens}")
                    });
                    assert_eq!(cl.stat(ino).map(|s| s.kind), Ok(Kind::File));
                    cl.close(ino).unwrap();
                    opens += 1;
                }
                opens
            })
        })
        .collect();
    let main = renamer.join().expect("renamer failed");
    for h in openers {
        assert!(h.join().expect("opener failed") > 0);
    }
    check_invariants(&main);
}
