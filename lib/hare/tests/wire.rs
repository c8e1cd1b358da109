//! The wire encoding: every request and reply comes back as it went in, and no message (any
//! tag, any words, any page) makes the decoders panic.

use abi::Errno;
use hare::proto::{
    Entry, Expect, Listing, NewInode, Reply, Request, Target, DIRENTS_BYTES, DIRENT_OVERHEAD,
    LISTED_BYTES, MAX_DATA, MAX_IO_BLOCKS, MAX_MOVED_BLOCKS, MAX_PART, MAX_POSTED_BLOCKS,
};
use hare::wire::{
    decode_invalidation, decode_reply, decode_request, encode_invalidation, encode_reply,
    encode_request, is_invalidation, page_len, posted_pages, posted_reply, request_id, ID_MASK,
    INVALIDATION_NAME_MAX, PAGE_SIZE,
};
use hare::Invalidation;
use hare::{Attrs, Kind, ShardTable, Stat, Timespec, BLOCK_SIZE, SHARDS};
use msg::Message;
use proptest::prelude::*;

fn name() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        "[a-z0-9._-]{1,12}"
            .prop_filter("not . or ..", |s| s != "." && s != "..")
            .prop_map(String::into_bytes),
        Just(vec![b'x'; 255]),
    ]
}

fn time() -> impl Strategy<Value = Timespec> {
    (any::<i64>(), 0..1_000_000_000u32).prop_map(|(s, n)| Timespec::new(s, n))
}

fn kind() -> impl Strategy<Value = Kind> {
    prop::sample::select(vec![
        Kind::File,
        Kind::Dir,
        Kind::Symlink,
        Kind::CharDev,
        Kind::Fifo,
    ])
}

fn entry() -> impl Strategy<Value = Entry> {
    (any::<u64>(), kind(), any::<bool>()).prop_map(|(ino, kind, distributed)| Entry {
        ino,
        kind,
        distributed,
    })
}

fn request() -> impl Strategy<Value = Request> {
    let ino = any::<u64>;
    prop_oneof![
        (ino(), name()).prop_map(|(dir, name)| Request::Lookup { dir, name }),
        (
            ino(),
            name(),
            entry(),
            prop::option::of(1..u64::MAX),
            any::<bool>(),
            time()
        )
            .prop_map(|(dir, name, entry, replace, touch, now)| Request::AddMap {
                dir,
                name,
                entry,
                replace,
                touch,
                now
            }),
        (
            ino(),
            name(),
            prop_oneof![
                any::<bool>().prop_map(|trailing| Expect::NotDir { trailing }),
                (0..1u64 << 56).prop_map(Expect::Ino)
            ],
            any::<bool>(),
            any::<bool>(),
            time()
        )
            .prop_map(|(dir, name, expect, unlink, touch, now)| Request::RmMap {
                dir,
                name,
                expect,
                unlink,
                touch,
                now
            }),
        (
            prop_oneof![
                Just(NewInode::File),
                (ino(), any::<bool>()).prop_map(|(parent, distributed)| NewInode::Dir {
                    parent,
                    distributed
                }),
                prop::collection::vec(1..=255u8, 1..4095).prop_map(NewInode::Symlink),
                Just(NewInode::Fifo),
            ],
            any::<(u32, u32, u32)>(),
            any::<(bool, bool)>(),
            time()
        )
            .prop_map(|(new, (m, u, g), (open, write), now)| Request::Create {
                new,
                attrs: Attrs::new(m, u, g),
                open,
                write,
                now
            }),
        (
            ino(),
            name(),
            prop_oneof![
                Just(NewInode::File),
                (ino(), any::<bool>()).prop_map(|(parent, distributed)| NewInode::Dir {
                    parent,
                    distributed
                }),
                Just(NewInode::Fifo),
            ],
            any::<(u32, u32, u32)>(),
            any::<(bool, bool)>(),
            time()
        )
            .prop_map(|(dir, name, new, (m, u, g), (open, write), now)| {
                Request::CreateNamed {
                    dir,
                    name,
                    new,
                    attrs: Attrs::new(m, u, g),
                    open,
                    write,
                    now,
                }
            }),
        ino().prop_map(|ino| Request::Destroy { ino }),
        (ino(), time()).prop_map(|(ino, now)| Request::Link { ino, now }),
        (ino(), time()).prop_map(|(ino, now)| Request::Unlink { ino, now }),
        (ino(), time()).prop_map(|(ino, now)| Request::Touch { ino, now }),
        (ino(), prop::sample::select(vec![1, -1]), time())
            .prop_map(|(dir, delta, now)| Request::Nlink { dir, delta, now }),
        (ino(), ino(), time()).prop_map(|(dir, parent, now)| Request::Move { dir, parent, now }),
        ino().prop_map(|dir| Request::DirInfo { dir }),
        (ino(), any::<(bool, bool, bool)>(), time()).prop_map(
            |(ino, (trunc, list, write), now)| Request::Open {
                ino,
                trunc,
                list,
                write,
                now,
            }
        ),
        (ino(), any::<bool>()).prop_map(|(ino, write)| Request::Close { ino, write }),
        (
            ino(),
            any::<u64>(),
            0..=(MAX_IO_BLOCKS * 4096) as u32,
            prop::option::of(1..u64::MAX)
        )
            .prop_map(|(ino, offset, len, desc)| Request::Read {
                ino,
                offset,
                len,
                desc
            }),
        (
            ino(),
            any::<u64>(),
            0..=(MAX_IO_BLOCKS * 4096) as u32,
            any::<bool>(),
            prop::option::of(1..u64::MAX),
            time()
        )
            .prop_map(|(ino, offset, len, append, desc, now)| Request::Write {
                ino,
                offset,
                len,
                append,
                desc,
                now
            }),
        (
            ino(),
            0..u64::MAX / 2,
            1..=(MAX_POSTED_BLOCKS * BLOCK_SIZE) as u32,
            prop::collection::vec(0..u32::MAX, MAX_POSTED_BLOCKS),
            time()
        )
            .prop_map(|(ino, offset, len, mut blocks, now)| {
                // Within the pages one message covers, one block for each.
                let len = len.min(
                    (MAX_POSTED_BLOCKS * BLOCK_SIZE) as u32 - (offset % BLOCK_SIZE as u64) as u32,
                );
                blocks.truncate(posted_pages(offset, len).unwrap());
                Request::Wrote {
                    ino,
                    offset,
                    len,
                    blocks,
                    now,
                }
            }),
        (
            ino(),
            any::<u64>(),
            0..=MAX_DATA as u32,
            prop::option::of(1..u64::MAX)
        )
            .prop_map(|(ino, offset, len, desc)| Request::ReadData {
                ino,
                offset,
                len,
                desc
            }),
        (
            ino(),
            any::<u64>(),
            prop::collection::vec(any::<u8>(), 0..=MAX_DATA),
            any::<bool>(),
            prop::option::of(1..u64::MAX),
            time()
        )
            .prop_map(
                |(ino, offset, data, append, desc, now)| Request::WriteData {
                    ino,
                    offset,
                    data,
                    append,
                    desc,
                    now
                }
            ),
        Just(Request::Statfs),
        (0..SHARDS as u16, any::<u64>())
            .prop_map(|(shard, offset)| Request::Export { shard, offset }),
        (0..SHARDS as u16, any::<bool>())
            .prop_map(|(shard, restore)| Request::Exported { shard, restore }),
        (
            any::<u64>(),
            any::<u64>(),
            prop::collection::vec(any::<u8>(), 0..=MAX_PART)
        )
            .prop_map(|(offset, total, data)| Request::Import {
                offset,
                total,
                data
            }),
        any::<u32>().prop_map(|count| Request::TakeBlocks { count }),
        prop::collection::vec(any::<u32>(), 0..=MAX_MOVED_BLOCKS)
            .prop_map(|blocks| Request::GiveBlocks { blocks }),
        table().prop_map(|t| Request::SetTable(Box::new(t))),
        Just(Request::GetTable),
        (ino(), any::<u64>()).prop_map(|(dir, offset)| Request::Scatter { dir, offset }),
        (ino(), any::<bool>()).prop_map(|(dir, restore)| Request::Scattered { dir, restore }),
        (ino(), ino()).prop_map(|(parent, dir)| Request::MarkDistributed { parent, dir }),
        (ino(), name(), ino(), time()).prop_map(|(dir, name, ino, now)| Request::Rmdir {
            dir,
            name,
            ino,
            now
        }),
        (ino(), any::<u64>(), any::<bool>()).prop_map(|(ino, offset, write)| Request::Share {
            ino,
            offset,
            write
        }),
        any::<u64>().prop_map(|desc| Request::DupShared { desc }),
        any::<u64>().prop_map(|desc| Request::CloseShared { desc }),
        (any::<u64>(), any::<i64>(), any::<u32>()).prop_map(|(desc, offset, whence)| {
            Request::Seek {
                desc,
                offset,
                whence,
            }
        }),
        (ino(), any::<u64>(), time()).prop_map(|(ino, size, now)| Request::Trunc {
            ino,
            size,
            now
        }),
        ino().prop_map(|ino| Request::Stat { ino }),
        (ino(), any::<u32>(), time()).prop_map(|(ino, mode, now)| Request::Chmod {
            ino,
            mode,
            now
        }),
        (ino(), any::<Option<u32>>(), any::<Option<u32>>(), time())
            .prop_map(|(ino, uid, gid, now)| Request::Chown { ino, uid, gid, now }),
        (
            ino(),
            prop::option::of(time()),
            prop::option::of(time()),
            time()
        )
            .prop_map(|(ino, atime, mtime, now)| Request::Utimens {
                ino,
                atime,
                mtime,
                now
            }),
        ino().prop_map(|ino| Request::Readlink { ino }),
        (ino(), prop::option::of(name())).prop_map(|(dir, after)| Request::Dirents { dir, after }),
        ino().prop_map(|dir| Request::Hold { dir }),
        ino().prop_map(|dir| Request::Release { dir }),
        ino().prop_map(|dir| Request::RmdirMark { dir }),
        (ino(), time()).prop_map(|(dir, now)| Request::RmdirCommit { dir, now }),
        ino().prop_map(|dir| Request::RmdirAbort { dir }),
        (
            ino(),
            name(),
            ino(),
            name(),
            ino(),
            prop_oneof![
                Just(Target::Absent),
                Just(Target::Any),
                (1..u64::MAX).prop_map(Target::File)
            ],
            time()
        )
            .prop_map(|(old_dir, old_name, new_dir, new_name, ino, target, now)| {
                Request::Rename {
                    old_dir,
                    old_name,
                    new_dir,
                    new_name,
                    ino,
                    target,
                    now,
                }
            }),
    ]
}

fn stat() -> impl Strategy<Value = Stat> {
    (
        any::<u64>(),
        kind(),
        any::<(u32, u32, u32, u32)>(),
        any::<(u64, u64, u64)>(),
        time(),
        time(),
        time(),
    )
        .prop_map(
            |(ino, kind, (mode, nlink, uid, gid), (size, blocks, rdev), atime, mtime, ctime)| {
                Stat {
                    ino,
                    kind,
                    mode: mode & 0xff_ffff,
                    nlink,
                    uid,
                    gid,
                    size,
                    blocks,
                    rdev,
                    atime,
                    mtime,
                    ctime,
                }
            },
        )
}

/// A batch of entries that fits one page, as a server makes it.
/// The entries as a [`Listing`], in their order.
fn listing(entries: Vec<(Vec<u8>, Entry)>) -> Listing {
    let mut l = Listing::new();
    for (n, e) in &entries {
        l.push(n, *e);
    }
    l
}

fn dirents() -> impl Strategy<Value = Vec<(Vec<u8>, Entry)>> {
    prop::collection::vec((name(), entry()), 0..40).prop_map(|mut v| {
        let mut bytes = 0;
        v.retain(|(n, _)| {
            bytes += n.len() + DIRENT_OVERHEAD;
            bytes <= DIRENTS_BYTES
        });
        v
    })
}

fn reply() -> impl Strategy<Value = Reply> {
    prop_oneof![
        Just(Reply::Done),
        (1..4096i32).prop_map(|e| Reply::Err(Errno(e))),
        Just(Reply::Busy),
        Just(Reply::Stale),
        entry().prop_map(Reply::Entry),
        (prop::option::of(entry()), any::<bool>(), any::<u32>())
            .prop_map(|(old, home, entries)| Reply::Mapped { old, home, entries }),
        any::<u64>().prop_map(Reply::Created),
        (
            any::<u64>(),
            any::<bool>(),
            any::<u32>(),
            prop::option::of(any::<u32>())
        )
            .prop_map(|(ino, home, entries, first)| Reply::Made {
                ino,
                home,
                entries,
                first
            }),
        stat().prop_map(Reply::Stat),
        (any::<u64>(), any::<bool>()).prop_map(|(parent, distributed)| Reply::Dir {
            parent,
            distributed
        }),
        (
            any::<u64>(),
            any::<u64>(),
            prop::collection::vec(prop::option::of(0..u32::MAX), 0..=MAX_IO_BLOCKS),
            any::<bool>()
        )
            .prop_map(|(size, offset, blocks, alone)| Reply::Extent {
                size,
                offset,
                blocks,
                alone
            }),
        (
            (any::<u64>(), any::<u64>()),
            prop::collection::vec(0..u32::MAX, 0..=MAX_IO_BLOCKS)
        )
            .prop_map(|((offset, size), blocks)| Reply::Written {
                offset,
                size,
                blocks
            }),
        (
            any::<u64>(),
            any::<u64>(),
            prop::collection::vec(any::<u8>(), 0..=MAX_DATA)
        )
            .prop_map(|(size, offset, data)| Reply::Data { size, offset, data }),
        (any::<u64>(), any::<u64>(), any::<u64>()).prop_map(
            |(free_blocks, deferred_blocks, inodes)| Reply::Space {
                free_blocks,
                deferred_blocks,
                inodes
            }
        ),
        prop::collection::vec(1..=255u8, 1..4095).prop_map(Reply::Target),
        (dirents(), any::<bool>()).prop_map(|(entries, more)| Reply::Dirents {
            entries: listing(entries),
            more
        }),
        (stat(), dirents(), any::<bool>(), any::<bool>()).prop_map(
            |(stat, mut entries, more, distributed)| {
                let mut bytes = 0;
                entries.retain(|(n, _)| {
                    bytes += n.len() + DIRENT_OVERHEAD;
                    bytes <= LISTED_BYTES
                });
                Reply::Listed {
                    stat,
                    entries: listing(entries),
                    more,
                    distributed,
                }
            }
        ),
        (
            stat(),
            prop::collection::vec(prop::option::of(0..u32::MAX), 0..=MAX_IO_BLOCKS),
            any::<bool>()
        )
            .prop_map(|(stat, blocks, alone)| Reply::Opened {
                stat,
                blocks,
                alone
            }),
        any::<u64>().prop_map(Reply::Shared),
        any::<u64>().prop_map(Reply::Offset),
        (
            any::<u64>(),
            prop::collection::vec(any::<u8>(), 0..=MAX_PART)
        )
            .prop_map(|(total, data)| Reply::Part { total, data }),
        prop::collection::vec(any::<u32>(), 0..=MAX_MOVED_BLOCKS).prop_map(Reply::Blocks),
        table().prop_map(|t| Reply::Table(Box::new(t))),
    ]
}

fn table() -> impl Strategy<Value = ShardTable> {
    (any::<u64>(), prop::collection::vec(any::<u16>(), SHARDS)).prop_map(|(version, owners)| {
        ShardTable::from_owners(version, owners.try_into().expect("SHARDS owners"))
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 1000, ..ProptestConfig::default() })]

    /// A listing built from batches in any order, then sorted, has each name with its entry,
    /// in name order, and `iter_from` starts where it says.
    #[test]
    fn a_listing_keeps_each_name_with_its_entry(
        batches in prop::collection::vec(dirents(), 0..4),
        from in 0usize..50,
    ) {
        let mut all: Vec<(Vec<u8>, Entry)> = Vec::new();
        let mut merged = Listing::new();
        for b in &batches {
            merged.append(&listing(b.clone()));
            all.extend(b.iter().cloned());
        }
        prop_assert_eq!(merged.len(), all.len());
        let got: Vec<(Vec<u8>, Entry)> = merged.iter().map(|(n, e)| (n.to_vec(), e)).collect();
        prop_assert_eq!(&got, &all);
        merged.sort_by_name();
        all.sort_by(|a, b| a.0.cmp(&b.0));
        let names: Vec<Vec<u8>> = merged.iter_from(from).map(|(n, _)| n.to_vec()).collect();
        let want: Vec<Vec<u8>> = all.iter().skip(from).map(|(n, _)| n.clone()).collect();
        prop_assert_eq!(names, want);
        for (n, e) in merged.iter() {
            prop_assert!(all.iter().any(|(m, f)| m.as_slice() == n && *f == e));
        }
        let last = all.last().map(|(n, _)| n.clone());
        prop_assert_eq!(merged.last_name().map(<[u8]>::to_vec), last);
    }

    /// A request comes back from its message and the `page_len` bytes it says it uses (the
    /// rest of the page is not looked at), with its id cut to 48 bits.
    #[test]
    fn requests_round_trip(req in request(), id in any::<u64>(), page in any::<u8>()) {
        let mut buf = vec![0xee; PAGE_SIZE];
        let m = encode_request(id, page, &req, &mut buf).unwrap();
        prop_assert_eq!(request_id(&m), (id & ID_MASK, page));
        let used = page_len(&m);
        prop_assert!(buf[used..].iter().all(|&b| b == 0xee));
        prop_assert_eq!(decode_request(&m, &buf[..used]).unwrap(), req);
    }

    #[test]
    fn replies_round_trip(r in reply(), id in any::<u64>(), page in any::<u8>()) {
        let mut buf = vec![0xee; PAGE_SIZE];
        let m = encode_reply(id, page, &r, &mut buf).unwrap();
        prop_assert_eq!(request_id(&m), (id & ID_MASK, page));
        let used = page_len(&m);
        prop_assert!(buf[used..].iter().all(|&b| b == 0xee));
        prop_assert_eq!(decode_reply(&m, &buf[..used]).unwrap(), r);
    }

    /// A posted request's answer puts nothing in the page (the client's next request may be
    /// there) and says only whether it failed.
    #[test]
    fn a_posted_requests_answer_needs_no_page(r in reply(), id in any::<u64>(), page in any::<u8>()) {
        let failed = matches!(r, Reply::Err(_));
        let m = encode_reply(id, page, &posted_reply(r), &mut []).expect("no page needed");
        prop_assert_eq!(page_len(&m), 0);
        let back = decode_reply(&m, &[]).unwrap();
        prop_assert_eq!(matches!(back, Reply::Err(_)), failed);
        prop_assert!(failed || back == Reply::Done);
    }

    /// An invalidation comes back with its name when the name fits in the slot, and as "the
    /// whole directory" when it does not; no reply is taken for one.
    #[test]
    fn invalidations_round_trip(dir in any::<u64>(), name in name(), r in reply(), id in any::<u64>(), page in any::<u8>()) {
        let i = Invalidation::Entries { dir, name: Some(name.clone()) };
        let m = encode_invalidation(&i);
        prop_assert!(is_invalidation(&m));
        let want = Invalidation::Entries {
            dir,
            name: (name.len() <= INVALIDATION_NAME_MAX).then_some(name),
        };
        prop_assert_eq!(decode_invalidation(&m).unwrap(), want);
        let extent = encode_invalidation(&Invalidation::Extent(dir));
        prop_assert!(is_invalidation(&extent));
        prop_assert_eq!(decode_invalidation(&extent).unwrap(), Invalidation::Extent(dir));
        let listing = encode_invalidation(&Invalidation::Listing(dir));
        prop_assert!(is_invalidation(&listing));
        prop_assert_eq!(decode_invalidation(&listing).unwrap(), Invalidation::Listing(dir));
        let mut buf = vec![0; PAGE_SIZE];
        prop_assert!(!is_invalidation(&encode_reply(id, page, &r, &mut buf).unwrap()));
    }

    /// Whatever a hostile peer sends, decoding answers (an error or a value) without panicking.
    #[test]
    fn garbage_never_panics(tag in prop_oneof![any::<u16>(), 0..32u16], words in prop::collection::vec(any::<u64>(), 0..=7), page in prop::collection::vec(any::<u8>(), 0..PAGE_SIZE)) {
        let m = Message::from_words(tag, &words).unwrap();
        let _ = decode_request(&m, &page);
        let _ = decode_reply(&m, &page);
        let _ = decode_invalidation(&m);
    }
}

#[test]
fn a_bad_name_is_refused() {
    let mut buf = vec![0; PAGE_SIZE];
    for bad in [&b""[..], b".", b"..", b"a/b", b"a\0b", &[b'x'; 256][..]] {
        let mut m = encode_invalidation(&Invalidation::Entries {
            dir: 1,
            name: Some(b"ok".to_vec()),
        });
        if bad.len() <= INVALIDATION_NAME_MAX {
            let mut b = m.bytes().to_vec();
            b[16] = bad.len() as u8;
            b[17..17 + bad.len()].copy_from_slice(bad);
            m = Message::new(m.tag, &b).unwrap();
            assert!(decode_invalidation(&m).is_err(), "{bad:?} accepted");
        }
        let req = Request::Lookup {
            dir: 1,
            name: bad.to_vec(),
        };
        let m = encode_request(7, 0, &req, &mut buf).unwrap();
        assert!(decode_request(&m, &buf).is_err(), "{bad:?} accepted");
    }
}

#[test]
fn a_welcome_is_checked() {
    let h = hare::wire::hello(7, 11, 1, (12, 4096), None);
    assert_eq!(h.tag, hare::wire::HELLO);
    assert_eq!(
        [
            h.word(0),
            h.word(1),
            h.word(2),
            h.word(3),
            h.word(4),
            h.word(5)
        ],
        [7, 11, 1, 12, 4096, 0]
    );
    assert_eq!(hare::wire::hello(7, 11, 1, (12, 4096), Some(4)).word(5), 5);
    let welcome = |words: &[u64]| Message::from_words(hare::wire::HELLO, words).unwrap();
    let ok = hare::wire::decode_welcome(&welcome(&[2, 3, 0]))
        .unwrap()
        .unwrap();
    assert_eq!((ok.server, ok.servers), (2, 3));
    assert_eq!(
        hare::wire::decode_welcome(&welcome(&[0, 3, Errno::EPERM.0 as u64])).unwrap(),
        Err(Errno::EPERM)
    );
    for bad in [&[3u64, 3, 0][..], &[0, 1 << 16, 0], &[0, 3]] {
        assert!(
            hare::wire::decode_welcome(&welcome(bad)).is_err(),
            "{bad:?} accepted"
        );
    }
    let reply = Message::from_words(5, &[2, 3, 0]).unwrap();
    assert!(hare::wire::decode_welcome(&reply).is_err());
}
