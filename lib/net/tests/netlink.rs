//! Route netlink's answers: dumps of links, addresses and routes packed into datagrams and
//! ended by `NLMSG_DONE`, one link by index or name, errors and acknowledgements as Linux
//! sends them, malformed sends ignored, and the bound on what one send queues.

use net::netlink::*;

const LO: Link = Link {
    index: 1,
    name: "lo",
    hw_type: 772,
    flags: 0x10049,
    mtu: 1500,
    txqlen: 256,
    mac: [0; 6],
    broadcast: [0; 6],
    operstate: 0,
    counts: [10, 1, 10, 1, 0],
};
const ETH: Link = Link {
    index: 2,
    name: "eth0",
    hw_type: 1,
    flags: 0x11043,
    mtu: 1500,
    txqlen: 64,
    mac: [0x52, 0x54, 0, 0x12, 0x34, 0x56],
    broadcast: [0xff; 6],
    operstate: 6,
    counts: [0; 5],
};
const ADDRS: [Addr; 2] = [
    Addr {
        index: 1,
        label: "lo",
        local: [127, 0, 0, 1],
        prefix_len: 8,
        broadcast: None,
        scope: RT_SCOPE_HOST,
    },
    Addr {
        index: 2,
        label: "eth0",
        local: [10, 0, 2, 15],
        prefix_len: 24,
        broadcast: Some([10, 0, 2, 255]),
        scope: RT_SCOPE_UNIVERSE,
    },
];
const ROUTES: [Route; 2] = [
    Route {
        dst: [0; 4],
        dst_len: 0,
        gateway: Some([10, 0, 2, 2]),
        prefsrc: None,
        oif: 2,
        scope: RT_SCOPE_UNIVERSE,
        protocol: RTPROT_BOOT,
    },
    Route {
        dst: [10, 0, 2, 0],
        dst_len: 24,
        gateway: None,
        prefsrc: Some([10, 0, 2, 15]),
        oif: 2,
        scope: RT_SCOPE_LINK,
        protocol: RTPROT_KERNEL,
    },
];
const LINKS: [Link; 2] = [LO, ETH];
const TABLES: Tables = Tables {
    links: &LINKS,
    addrs: &ADDRS,
    routes: &ROUTES,
};
const ME: Sender = Sender {
    pid: 77,
    privileged: false,
    cap_ack: false,
};

/// A request of `kind` with `flags`, sequence `seq` and `payload`.
fn req(kind: u16, flags: u16, seq: u32, payload: &[u8]) -> Vec<u8> {
    let mut v = Vec::new();
    v.extend_from_slice(&((16 + payload.len()) as u32).to_ne_bytes());
    v.extend_from_slice(&kind.to_ne_bytes());
    v.extend_from_slice(&flags.to_ne_bytes());
    v.extend_from_slice(&seq.to_ne_bytes());
    v.extend_from_slice(&0u32.to_ne_bytes());
    v.extend_from_slice(payload);
    while v.len() % 4 != 0 {
        v.push(0);
    }
    v
}

/// The messages of a datagram: type, flags, seq, pid, payload.
fn messages(d: &[u8]) -> Vec<(u16, u16, u32, u32, Vec<u8>)> {
    let mut out = Vec::new();
    let mut at = 0;
    while at + 16 <= d.len() {
        let len = u32::from_ne_bytes(d[at..at + 4].try_into().unwrap()) as usize;
        assert!(len >= 16 && at + len <= d.len(), "message length {len}");
        let kind = u16::from_ne_bytes(d[at + 4..at + 6].try_into().unwrap());
        let flags = u16::from_ne_bytes(d[at + 6..at + 8].try_into().unwrap());
        let seq = u32::from_ne_bytes(d[at + 8..at + 12].try_into().unwrap());
        let pid = u32::from_ne_bytes(d[at + 12..at + 16].try_into().unwrap());
        out.push((kind, flags, seq, pid, d[at + 16..at + len].to_vec()));
        at += (len + 3) & !3;
    }
    assert_eq!(at, d.len());
    out
}

/// The attributes after a fixed header of `fixed` bytes.
fn attrs(p: &[u8], fixed: usize) -> Vec<(u16, Vec<u8>)> {
    let mut out = Vec::new();
    let mut at = fixed;
    while at + 4 <= p.len() {
        let len = u16::from_ne_bytes(p[at..at + 2].try_into().unwrap()) as usize;
        let kind = u16::from_ne_bytes(p[at + 2..at + 4].try_into().unwrap());
        out.push((kind, p[at + 4..at + len].to_vec()));
        at += (len + 3) & !3;
    }
    out
}

fn attr(a: &[(u16, Vec<u8>)], kind: u16) -> Vec<u8> {
    a.iter().find(|x| x.0 == kind).expect("attribute").1.clone()
}

#[test]
fn link_dump() {
    let a = answer(
        &req(RTM_GETLINK, NLM_F_REQUEST | NLM_F_DUMP, 5, &[0; 16]),
        &TABLES,
        &ME,
        1 << 20,
    );
    assert!(!a.overrun);
    assert_eq!(a.datagrams.len(), 1);
    let m = messages(&a.datagrams[0]);
    assert_eq!(m.len(), 3);
    for (i, l) in LINKS.iter().enumerate() {
        let (kind, flags, seq, pid, p) = &m[i];
        assert_eq!(
            (*kind, *flags, *seq, *pid),
            (RTM_NEWLINK, NLM_F_MULTI, 5, 77)
        );
        assert_eq!(u16::from_ne_bytes([p[2], p[3]]), l.hw_type);
        assert_eq!(i32::from_ne_bytes(p[4..8].try_into().unwrap()), l.index);
        assert_eq!(u32::from_ne_bytes(p[8..12].try_into().unwrap()), l.flags);
        let at = attrs(p, 16);
        assert_eq!(attr(&at, IFLA_IFNAME), [l.name.as_bytes(), &[0]].concat());
        assert_eq!(attr(&at, IFLA_MTU), 1500u32.to_ne_bytes());
        assert_eq!(attr(&at, IFLA_ADDRESS), l.mac);
        assert_eq!(attr(&at, IFLA_STATS64).len(), 192);
    }
    assert_eq!(m[2].0, NLMSG_DONE);
    assert_eq!(m[2].4, 0i32.to_ne_bytes());
}

#[test]
fn addr_and_route_dumps() {
    let a = answer(
        &req(RTM_GETADDR, NLM_F_REQUEST | NLM_F_DUMP, 6, &[2]),
        &TABLES,
        &ME,
        1 << 20,
    );
    let m = messages(&a.datagrams[0]);
    assert_eq!(m.len(), 3);
    let p = &m[0].4;
    assert_eq!(&p[..4], &[2, 8, IFA_F_PERMANENT as u8, RT_SCOPE_HOST]);
    let at = attrs(p, 8);
    assert_eq!(attr(&at, IFA_LOCAL), [127, 0, 0, 1]);
    assert_eq!(attr(&at, IFA_LABEL), b"lo\0");
    assert!(at.iter().all(|x| x.0 != IFA_BROADCAST));
    let at = attrs(&m[1].4, 8);
    assert_eq!(attr(&at, IFA_BROADCAST), [10, 0, 2, 255]);
    assert_eq!(m[2].0, NLMSG_DONE);
    // IPv6 only: an empty dump.
    let a = answer(
        &req(RTM_GETADDR, NLM_F_REQUEST | NLM_F_DUMP, 6, &[10]),
        &TABLES,
        &ME,
        1 << 20,
    );
    let m = messages(&a.datagrams[0]);
    assert_eq!(m.len(), 1);
    assert_eq!(m[0].0, NLMSG_DONE);

    let a = answer(
        &req(RTM_GETROUTE, NLM_F_REQUEST | NLM_F_DUMP, 7, &[0; 12]),
        &TABLES,
        &ME,
        1 << 20,
    );
    let m = messages(&a.datagrams[0]);
    assert_eq!(m.len(), 3);
    assert_eq!(m[0].0, RTM_NEWROUTE);
    assert_eq!(m[0].4[..8], [2, 0, 0, 0, RT_TABLE_MAIN, RTPROT_BOOT, 0, 1]);
    let at = attrs(&m[0].4, 12);
    assert_eq!(attr(&at, RTA_GATEWAY), [10, 0, 2, 2]);
    assert!(at.iter().all(|x| x.0 != RTA_DST));
    let at = attrs(&m[1].4, 12);
    assert_eq!(attr(&at, RTA_DST), [10, 0, 2, 0]);
    assert_eq!(attr(&at, RTA_PREFSRC), [10, 0, 2, 15]);
    assert_eq!(attr(&at, RTA_OIF), 2i32.to_ne_bytes());
}

#[test]
fn one_link_by_index_or_name() {
    let mut info = [0u8; 16];
    info[4..8].copy_from_slice(&2i32.to_ne_bytes());
    let a = answer(
        &req(RTM_GETLINK, NLM_F_REQUEST | NLM_F_ACK, 9, &info),
        &TABLES,
        &ME,
        1 << 20,
    );
    assert_eq!(a.datagrams.len(), 2);
    let m = messages(&a.datagrams[0]);
    assert_eq!((m[0].0, m[0].1), (RTM_NEWLINK, 0));
    assert_eq!(attr(&attrs(&m[0].4, 16), IFLA_IFNAME), b"eth0\0");
    let ack = messages(&a.datagrams[1]);
    assert_eq!(
        (ack[0].0, ack[0].1, ack[0].2),
        (NLMSG_ERROR, NLM_F_CAPPED, 9)
    );
    assert_eq!(ack[0].4.len(), 4 + 16);
    assert_eq!(ack[0].4[..4], 0i32.to_ne_bytes());

    let mut p = vec![0u8; 16];
    p.extend_from_slice(&7u16.to_ne_bytes());
    p.extend_from_slice(&IFLA_IFNAME.to_ne_bytes());
    p.extend_from_slice(b"lo\0\0");
    let a = answer(
        &req(RTM_GETLINK, NLM_F_REQUEST, 9, &p),
        &TABLES,
        &ME,
        1 << 20,
    );
    let m = messages(&a.datagrams[0]);
    assert_eq!(attr(&attrs(&m[0].4, 16), IFLA_IFNAME), b"lo\0");

    info[4..8].copy_from_slice(&9i32.to_ne_bytes());
    let a = answer(
        &req(RTM_GETLINK, NLM_F_REQUEST, 9, &info),
        &TABLES,
        &ME,
        1 << 20,
    );
    let m = messages(&a.datagrams[0]);
    assert_eq!(m[0].0, NLMSG_ERROR);
    assert_eq!(m[0].4[..4], (-19i32).to_ne_bytes());
}

#[test]
fn changes_refused() {
    let r = req(
        RTM_NEWADDR,
        NLM_F_REQUEST | NLM_F_ACK,
        3,
        &[2, 24, 0, 0, 2, 0, 0, 0],
    );
    let a = answer(&r, &TABLES, &ME, 1 << 20);
    let m = messages(&a.datagrams[0]);
    assert_eq!((m[0].0, m[0].1), (NLMSG_ERROR, 0));
    assert_eq!(m[0].4[..4], (-1i32).to_ne_bytes());
    // The whole request comes back with an error.
    assert_eq!(m[0].4[4..], r[..]);
    let root = Sender {
        privileged: true,
        cap_ack: true,
        ..ME
    };
    let a = answer(&r, &TABLES, &root, 1 << 20);
    let m = messages(&a.datagrams[0]);
    assert_eq!((m[0].0, m[0].1), (NLMSG_ERROR, NLM_F_CAPPED));
    assert_eq!(m[0].4[..4], (-95i32).to_ne_bytes());
    assert_eq!(m[0].4.len(), 20);
    // A type past RTM_MAX, from anyone.
    let a = answer(&req(500, NLM_F_REQUEST, 3, &[0]), &TABLES, &ME, 1 << 20);
    assert_eq!(messages(&a.datagrams[0])[0].4[..4], (-95i32).to_ne_bytes());
}

#[test]
fn malformed_and_bounded() {
    // Short, lying lengths and control messages: no answer, no panic.
    let mut lying = req(RTM_GETLINK, NLM_F_REQUEST | NLM_F_DUMP, 1, &[0; 16]);
    lying[..4].copy_from_slice(&4000u32.to_ne_bytes());
    for bad in [vec![1, 2, 3], lying, req(RTM_GETLINK, NLM_F_DUMP, 1, &[])] {
        let a = answer(&bad, &TABLES, &ME, 1 << 20);
        assert!(a.datagrams.is_empty() && !a.overrun);
    }
    let mut short = req(RTM_GETLINK, NLM_F_REQUEST, 1, &[]);
    short[..4].copy_from_slice(&8u32.to_ne_bytes());
    assert!(answer(&short, &TABLES, &ME, 1 << 20).datagrams.is_empty());
    // A short GETLINK is EINVAL; a no-op with an ACK gets 0.
    let a = answer(
        &req(RTM_GETLINK, NLM_F_REQUEST, 1, &[0; 4]),
        &TABLES,
        &ME,
        1 << 20,
    );
    assert_eq!(messages(&a.datagrams[0])[0].4[..4], (-22i32).to_ne_bytes());
    let a = answer(
        &req(1, NLM_F_REQUEST | NLM_F_ACK, 1, &[]),
        &TABLES,
        &ME,
        1 << 20,
    );
    assert_eq!(messages(&a.datagrams[0])[0].4[..4], 0i32.to_ne_bytes());
    // Many requests in one send: answered in order until the room runs out.
    let one = req(RTM_GETLINK, NLM_F_REQUEST | NLM_F_DUMP, 1, &[0; 16]);
    let many: Vec<u8> = (0..100).flat_map(|_| one.clone()).collect();
    let a = answer(&many, &TABLES, &ME, 8192);
    assert!(a.overrun);
    assert!(a.bytes <= 8192 && !a.datagrams.is_empty());
    assert!(a.datagrams.iter().all(|d| d.len() <= DATAGRAM));
}
