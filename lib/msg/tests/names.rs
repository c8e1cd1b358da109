//! Host tests of the name directory and the per-core name cache.
#![cfg(not(loom))]

use msg::names::{
    Member, NameCache, NameError, NameServer, Pick, Place, CACHE_MEMBERS, MEMBERS_MAX, NAMES_MAX,
    NAMES_PER_PROCESS, NAME_MAX,
};
use proptest::prelude::*;

fn member(mailbox: u64, core: u32, node: u32) -> Member {
    Member {
        mailbox,
        pid: 100 + mailbox as u32,
        core,
        node,
    }
}

const AT_CORE0: Place = Place { core: 0, node: 0 };

#[test]
fn names_are_checked_and_the_reserved_prefix_is_the_managers() {
    let mut ns = NameServer::try_new().unwrap();
    let m = member(1, 0, 0);
    assert_eq!(ns.register(b"", m, false), Err(NameError::Invalid));
    assert_eq!(
        ns.register(&[b'a'; NAME_MAX + 1], m, false),
        Err(NameError::Invalid)
    );
    assert_eq!(ns.register(b"has space", m, false), Err(NameError::Invalid));
    assert_eq!(ns.register(b"nul\0", m, false), Err(NameError::Invalid));
    assert_eq!(ns.register(b"fleet/fs", m, false), Err(NameError::Reserved));
    assert_eq!(ns.generation(), 0, "failed registrations change nothing");
    ns.register(b"fleet/fs", m, true).unwrap();
    ns.register(&[b'a'; NAME_MAX], m, false).unwrap();
    assert_eq!(ns.register(b"fleet/fs", m, true), Err(NameError::Exists));
    // The same mailbox value from another process is another member.
    ns.register(b"fleet/fs", Member { pid: 7, ..m }, true)
        .unwrap();
    assert_eq!(ns.generation(), 3);
}

#[test]
fn nearest_member_first_then_node_then_any() {
    let mut ns = NameServer::try_new().unwrap();
    // Members on core 5 (node 1), core 2 (node 0), core 7 (node 1).
    for (mb, core, node) in [(1, 5, 1), (2, 2, 0), (3, 7, 1)] {
        ns.register(b"fs", member(mb, core, node), true).unwrap();
    }
    let pick = |core, node, ticket| {
        ns.lookup(b"fs", Place { core, node }, Pick::Nearest, ticket)
            .unwrap()
            .mailbox
    };
    assert_eq!(pick(5, 1, 0), 1, "same core");
    assert_eq!(pick(7, 1, 9), 3, "same core");
    assert_eq!(pick(0, 0, 0), 2, "same node");
    assert_eq!(pick(0, 0, 1), 2, "same node, whatever the ticket");
    // From node 1's core 6, both node-1 members are as near: the ticket alternates them.
    assert_eq!((pick(6, 1, 0), pick(6, 1, 1), pick(6, 1, 2)), (1, 3, 1));
    // From node 2, all are as far: every member in turn.
    let far: Vec<u64> = (0..3).map(|t| pick(9, 2, t)).collect();
    assert_eq!(far, [1, 2, 3]);
    let rr: Vec<u64> = (0..4)
        .map(|t| {
            ns.lookup(b"fs", AT_CORE0, Pick::RoundRobin, t)
                .unwrap()
                .mailbox
        })
        .collect();
    assert_eq!(rr, [1, 2, 3, 1]);
    assert_eq!(ns.lookup(b"nfs", AT_CORE0, Pick::Nearest, 0), None);
}

#[test]
fn members_leave_die_and_move() {
    let mut ns = NameServer::try_new().unwrap();
    ns.register(b"a", member(1, 0, 0), false).unwrap();
    ns.register(b"a", member(2, 1, 0), false).unwrap();
    ns.register(b"b", member(2, 1, 0), false).unwrap();
    assert_eq!(ns.unregister(b"a", 101, 9), Err(NameError::NotFound));
    assert_eq!(
        ns.unregister(b"a", 999, 1),
        Err(NameError::NotFound),
        "another process's"
    );
    assert_eq!(ns.unregister(b"zz", 101, 1), Err(NameError::NotFound));
    ns.unregister(b"a", 101, 1).unwrap();
    assert_eq!(ns.members(b"a").unwrap().len(), 1);
    assert_eq!(ns.moved(102, 3, 1), 2);
    assert_eq!(ns.moved(102, 3, 1), 0, "no change, no new generation");
    assert_eq!(ns.lookup(b"b", AT_CORE0, Pick::Nearest, 0).unwrap().core, 3);
    let g = ns.generation();
    // The owner of mailbox 2 dies: both names go with their last member.
    assert_eq!(ns.remove_where(|m| m.pid == 102), 2);
    assert_eq!(ns.iter().count(), 0);
    assert_eq!(ns.generation(), g + 1);
    assert_eq!(ns.remove_where(|_| true), 0);
    assert_eq!(ns.generation(), g + 1);
}

#[test]
fn limits_answer_full() {
    let mut ns = NameServer::try_new().unwrap();
    for mb in 0..MEMBERS_MAX as u64 {
        ns.register(b"big", member(mb, 0, 0), false).unwrap();
    }
    assert_eq!(
        ns.register(b"big", member(9999, 0, 0), false),
        Err(NameError::Full)
    );
    for i in 1..NAMES_MAX {
        ns.register(format!("n{i}").as_bytes(), member(i as u64, 0, 0), false)
            .unwrap();
    }
    assert_eq!(
        ns.register(b"one-more", member(1, 0, 0), false),
        Err(NameError::Full)
    );
    assert_eq!(ns.iter().count(), NAMES_MAX);
}

#[test]
fn a_process_holds_a_quota_of_registrations() {
    let mut ns = NameServer::try_new().unwrap();
    let mine = |mailbox| Member {
        pid: 7,
        ..member(mailbox, 0, 0)
    };
    for i in 0..NAMES_PER_PROCESS as u64 {
        ns.register(format!("q{i}").as_bytes(), mine(i), false)
            .unwrap();
    }
    let g = ns.generation();
    // Neither a new name nor a new member of an existing one, and nothing changed.
    assert_eq!(
        ns.register(b"q-more", mine(99), false),
        Err(NameError::Quota)
    );
    assert_eq!(ns.register(b"q0", mine(99), false), Err(NameError::Quota));
    assert_eq!(ns.register(b"q0", mine(0), false), Err(NameError::Exists));
    assert_eq!(ns.generation(), g);
    // Others are not counted against it; giving one back makes room.
    ns.register(b"q-more", member(1, 0, 0), false).unwrap();
    ns.unregister(b"q3", 7, 3).unwrap();
    ns.register(b"q-more", mine(99), false).unwrap();
}

#[test]
fn the_cache_answers_until_the_directory_changes() {
    let mut ns = NameServer::try_new().unwrap();
    let mut cache = NameCache::new();
    ns.register(b"fs", member(1, 2, 0), false).unwrap();
    let look = |cache: &mut NameCache, ns: &NameServer| match cache.cached(
        b"fs",
        ns.generation(),
        AT_CORE0,
        Pick::Nearest,
        0,
    ) {
        Some(m) => Some(m),
        None => {
            let members = ns.members(b"fs").unwrap_or(&[]);
            cache.fill(b"fs", members, ns.generation());
            ns.lookup(b"fs", AT_CORE0, Pick::Nearest, 0)
        }
    };
    assert_eq!(look(&mut cache, &ns).unwrap().mailbox, 1);
    assert_eq!(look(&mut cache, &ns).unwrap().mailbox, 1);
    assert_eq!((cache.hits, cache.misses, cache.invalidations), (1, 1, 0));
    // A nearer member joins: the next lookup must not come from the old cache.
    ns.register(b"fs", member(2, 0, 0), false).unwrap();
    assert_eq!(look(&mut cache, &ns).unwrap().mailbox, 2);
    assert_eq!((cache.hits, cache.misses, cache.invalidations), (1, 2, 1));
    // The member dies.
    ns.remove_where(|m| m.mailbox == 2);
    assert_eq!(look(&mut cache, &ns).unwrap().mailbox, 1);
    ns.remove_where(|_| true);
    assert_eq!(look(&mut cache, &ns), None);
    assert_eq!(cache.invalidations, 3);
}

#[test]
fn the_cache_keeps_the_recently_used_and_skips_large_names() {
    let mut ns = NameServer::try_new().unwrap();
    let mut cache = NameCache::new();
    for mb in 0..=CACHE_MEMBERS as u64 {
        ns.register(b"large", member(mb, 0, 0), false).unwrap();
    }
    let g = ns.generation();
    cache.fill(b"large", ns.members(b"large").unwrap(), g);
    assert_eq!(cache.cached(b"large", g, AT_CORE0, Pick::Nearest, 0), None);
    for i in 0..40u64 {
        let name = format!("s{i}");
        cache.fill(name.as_bytes(), &[member(i, 0, 0)], g);
        // s0 stays in use, so it is never the one replaced.
        assert!(cache.cached(b"s0", g, AT_CORE0, Pick::Nearest, 0).is_some());
    }
    assert!(cache
        .cached(b"s39", g, AT_CORE0, Pick::Nearest, 0)
        .is_some());
    assert!(cache.cached(b"s1", g, AT_CORE0, Pick::Nearest, 0).is_none());
}

#[derive(Clone, Debug)]
enum Op {
    Register(u8, u64, u32),
    Unregister(u8, u64),
    Die(u64),
    Move(u64, u32),
    Lookup(u8, u32, u64, bool),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        (0..4u8, 0..6u64, 0..4u32).prop_map(|(n, m, c)| Op::Register(n, m, c)),
        (0..4u8, 0..6u64).prop_map(|(n, m)| Op::Unregister(n, m)),
        (0..6u64).prop_map(Op::Die),
        (0..6u64, 0..4u32).prop_map(|(m, c)| Op::Move(m, c)),
        (0..4u8, 0..4u32, any::<u64>(), any::<bool>())
            .prop_map(|(n, c, t, rr)| Op::Lookup(n, c, t, rr)),
    ]
}

proptest! {
    /// Lookups through a cache always agree with the directory, whatever the changes between
    /// them.
    #[test]
    fn cached_lookups_agree_with_the_directory(ops in proptest::collection::vec(op(), 0..200)) {
        let mut ns = NameServer::try_new().unwrap();
        let mut cache = NameCache::new();
        let name = |n: u8| [b'a' + n];
        for op in ops {
            match op {
                Op::Register(n, mb, core) => {
                    let _ = ns.register(&name(n), member(mb, core, core / 2), false);
                }
                Op::Unregister(n, mb) => {
                    let _ = ns.unregister(&name(n), 100 + mb as u32, mb);
                }
                Op::Die(mb) => {
                    ns.remove_where(|m| m.mailbox == mb);
                }
                Op::Move(mb, core) => {
                    ns.moved(100 + mb as u32, core, core / 2);
                }
                Op::Lookup(n, core, ticket, rr) => {
                    let from = Place { core, node: core / 2 };
                    let pick = if rr { Pick::RoundRobin } else { Pick::Nearest };
                    let want = ns.lookup(&name(n), from, pick, ticket);
                    let g = ns.generation();
                    let got = match cache.cached(&name(n), g, from, pick, ticket) {
                        Some(m) => Some(m),
                        None => {
                            cache.fill(&name(n), ns.members(&name(n)).unwrap_or(&[]), g);
                            want
                        }
                    };
                    prop_assert_eq!(got, want);
                }
            }
        }
    }
}
