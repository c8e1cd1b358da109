//! The machine's network interfaces and tables as Linux programs read them (issue 15): what
//! `ioctl(SIOCGIF*)` answers (`syscall::socket::interface_ioctl` decodes the calls) and the
//! files of `/proc/net` (`dev`, `route`, `tcp`, `udp`, and `tcp6` and `udp6` with no sockets),
//! so that busybox `ifconfig`, `route` and `netstat` work.
//!
//! Two interfaces, as every instance sees the same addresses: `lo` (index 1, 127.0.0.1/8) and,
//! when the machine has a NIC, `eth0` (index 2, [`super::ADDRESS`], the NIC's MAC). Their MTU
//! is 1500 for both, what the instances' frames carry ([`net::stack::FRAME_MAX`]: Reef's
//! loopback is the switch between instances, which carries Ethernet frames, not Linux's
//! 65536-byte loopback); `txqueuelen` is the queue a frame waits in: an instance's
//! ([`net::stack::QUEUE_FRAMES`]) for `lo`, the NIC's send queue ([`super::nic::QUEUE_SIZE`])
//! for `eth0`.
//!
//! Counters: `eth0`'s are the NIC's frames and bytes ([`super::nic::Counts`]); `lo`'s are the
//! frames the switch carried from one instance to another ([`looped`]; every one is sent and
//! received once, as on Linux's loopback, so both directions show the same). Frames between
//! instances in server mode go through the network server and are not counted. Errors, FIFO,
//! frame, compression and multicast counts are 0: Reef does not tell them apart.
//!
//! `/proc/net/tcp` and `udp` list every socket of every instance (`net::Stack::connections`)
//! with Linux's columns; timers and retransmissions are 0; the uid and inode are those the
//! kernel recorded when a descriptor took the socket (`net::Owner`: `socket:[inode]` in
//! `/proc/<pid>/fd`, which `netstat -p` matches), 0 for a connection no descriptor holds yet.

use super::nic;
use alloc::string::String;
use alloc::vec::Vec;
use core::fmt::Write;
use core::sync::atomic::{AtomicU64, Ordering};
use net::{EthernetAddress, Ipv4Address, Ipv4Cidr, Proto};

/// `IFF_UP`.
pub const IFF_UP: u16 = 0x1;
/// `IFF_BROADCAST`.
pub const IFF_BROADCAST: u16 = 0x2;
/// `IFF_LOOPBACK`.
pub const IFF_LOOPBACK: u16 = 0x8;
/// `IFF_RUNNING`.
pub const IFF_RUNNING: u16 = 0x40;
/// `IFF_MULTICAST`.
pub const IFF_MULTICAST: u16 = 0x1000;

/// One interface.
#[derive(Clone, Copy, Debug)]
pub struct Iface {
    /// Its name.
    pub name: &'static str,
    /// Its index (`if_nametoindex`).
    pub index: i32,
    /// Its address and network.
    pub addr: Ipv4Cidr,
    /// Its broadcast address (0.0.0.0: none, as Linux's `lo`).
    pub broadcast: Ipv4Address,
    /// Its MAC address (`None`: the loopback, `ARPHRD_LOOPBACK`).
    pub mac: Option<EthernetAddress>,
    /// `IFF_*` flags.
    pub flags: u16,
    /// Largest IP packet.
    pub mtu: i32,
    /// Frames its queue holds.
    pub txqueuelen: i32,
}

/// Frames and bytes the switch carried between instances.
static LO_PACKETS: AtomicU64 = AtomicU64::new(0);
/// See [`LO_PACKETS`].
static LO_BYTES: AtomicU64 = AtomicU64::new(0);

/// The switch carried a frame of `len` bytes from one instance to another (`lo`'s counters).
pub fn looped(len: usize) {
    LO_PACKETS.fetch_add(1, Ordering::Relaxed);
    LO_BYTES.fetch_add(len as u64, Ordering::Relaxed);
}

/// The largest IP packet of a frame.
const MTU: i32 = (net::stack::FRAME_MAX - 14) as i32;

/// The interfaces, by index: `lo`, and `eth0` with a NIC.
pub fn all() -> Vec<Iface> {
    let mut out = alloc::vec![Iface {
        name: "lo",
        index: 1,
        addr: net::LOOPBACK,
        broadcast: Ipv4Address::UNSPECIFIED,
        mac: None,
        flags: IFF_UP | IFF_LOOPBACK | IFF_RUNNING,
        mtu: MTU,
        txqueuelen: net::stack::QUEUE_FRAMES as i32,
    }];
    if let Some(mac) = nic::NIC.lock().as_ref().map(|n| n.mac) {
        out.push(Iface {
            name: "eth0",
            index: 2,
            addr: super::ADDRESS,
            broadcast: super::ADDRESS
                .broadcast()
                .unwrap_or(Ipv4Address::UNSPECIFIED),
            mac: Some(mac),
            flags: IFF_UP | IFF_BROADCAST | IFF_RUNNING | IFF_MULTICAST,
            mtu: MTU,
            txqueuelen: nic::QUEUE_SIZE as i32,
        });
    }
    out
}

/// The interface named `name`.
pub fn by_name(name: &[u8]) -> Option<Iface> {
    all().into_iter().find(|i| i.name.as_bytes() == name)
}

/// The interface numbered `index`.
pub fn by_index(index: i32) -> Option<Iface> {
    all().into_iter().find(|i| i.index == index)
}

/// An interface's counters: received bytes and frames, sent bytes, frames and drops.
pub fn counts(i: &Iface) -> [u64; 5] {
    if i.mac.is_none() {
        let (p, b) = (
            LO_PACKETS.load(Ordering::Relaxed),
            LO_BYTES.load(Ordering::Relaxed),
        );
        return [b, p, b, p, 0];
    }
    nic::NIC.lock().as_ref().map_or([0; 5], |n| {
        let c = n.counts;
        [
            c.rx_bytes,
            c.rx_packets,
            c.tx_bytes,
            c.tx_packets,
            c.tx_dropped,
        ]
    })
}

/// `/proc/net/dev`: Linux's two header lines and a line per interface.
pub fn dev() -> String {
    let mut s = String::from(concat!(
        "Inter-|   Receive                            ",
        "                    |  Transmit\n",
        " face |bytes    packets errs drop fifo frame ",
        "compressed multicast|bytes    packets errs ",
        "drop fifo colls carrier compressed\n"
    ));
    for i in all() {
        let [rb, rp, tb, tp, td] = counts(&i);
        let _ = writeln!(
            s,
            "{:>6}: {rb:>7} {rp:>7} {:>4} {:>4} {:>4} {:>5} {:>10} {:>9} {tb:>8} {tp:>7} {:>4} \
             {td:>4} {:>4} {:>5} {:>7} {:>10}",
            i.name, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0
        );
    }
    s
}

/// An address as Linux's `/proc/net` files print it: the network-order value read as a
/// little-endian number (`%08X`).
fn hex(a: Ipv4Address) -> u32 {
    u32::from_le_bytes(a.octets())
}

/// Appends `line` padded with spaces to `width` characters, and a newline (Linux's
/// `seq_pad`).
fn padded(s: &mut String, line: &str, width: usize) {
    let _ = writeln!(s, "{line:<width$}");
}

/// `RTF_UP`.
const RTF_UP: u16 = 0x1;
/// `RTF_GATEWAY`.
const RTF_GATEWAY: u16 = 0x2;

/// `/proc/net/route`: with a NIC, the default route through the gateway and the NIC's
/// network, both on `eth0` (the loopback's routes are in Linux's local table, not here).
pub fn route() -> String {
    let mut s = String::new();
    padded(
        &mut s,
        "Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT",
        127,
    );
    if let Some(eth) = all().into_iter().find(|i| i.mac.is_some()) {
        let net = eth.addr.network();
        let routes = [
            (
                Ipv4Address::UNSPECIFIED,
                super::GATEWAY,
                RTF_UP | RTF_GATEWAY,
                Ipv4Address::UNSPECIFIED,
            ),
            (
                net.address(),
                Ipv4Address::UNSPECIFIED,
                RTF_UP,
                net.netmask(),
            ),
        ];
        for (dst, gw, flags, mask) in routes {
            let line = alloc::format!(
                "{}\t{:08X}\t{:08X}\t{flags:04X}\t0\t0\t0\t{:08X}\t0\t0\t0",
                eth.name,
                hex(dst),
                hex(gw),
                hex(mask)
            );
            padded(&mut s, &line, 127);
        }
    }
    s
}

/// `/proc/net/tcp` (`proto` TCP) or `/proc/net/udp`: every socket of every instance.
pub fn sockets(proto: Proto) -> String {
    let tcp = proto == Proto::Tcp;
    let mut s = String::new();
    if tcp {
        padded(
            &mut s,
            "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  \
             timeout inode",
            149,
        );
    } else {
        padded(
            &mut s,
            "   sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  \
             timeout inode ref pointer drops",
            127,
        );
    }
    let all = super::instances();
    let lines = all.iter().flat_map(|i| i.peek(|st| st.connections(proto)));
    for (sl, c) in lines.enumerate() {
        let ((la, lp), (ra, rp)) = (c.local, c.remote);
        let common = alloc::format!(
            "{:08X}:{lp:04X} {:08X}:{rp:04X} {:02X} {:08X}:{:08X} 00:00000000 00000000 {:>5} {:>8} \
             {} 0 0000000000000000",
            hex(la),
            hex(ra),
            c.state,
            c.tx_queue,
            c.rx_queue,
            c.owner.uid,
            0,
            c.owner.inode
        );
        let line = if tcp {
            alloc::format!("{sl:>4}: {common} 0 0 0 0 0")
        } else {
            alloc::format!("{sl:>5}: {common} 0")
        };
        padded(&mut s, &line, if tcp { 149 } else { 127 });
    }
    s
}

/// `/proc/net/tcp6` (`udp` false) or `udp6`: the header alone (Reef has no IPv6 sockets).
pub fn sockets6(udp: bool) -> String {
    let mut s = String::from(
        "  sl  local_address                         remote_address                        st \
         tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode",
    );
    s.push_str(if udp { " ref pointer drops\n" } else { "\n" });
    s
}
