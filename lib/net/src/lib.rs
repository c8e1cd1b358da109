//! LibrettOS's network pieces that touch no hardware (Nikolaev et al., VEE 2020, §3).
//!
//! - [`Stack`]: one application's own TCP/IP stack instance (smoltcp's interface and sockets
//!   behind Linux socket semantics: listen backlogs, `connect` outcomes, `ECONNRESET`/`EPIPE`,
//!   half-close, `poll` events, socket options). It exchanges Ethernet frames through two
//!   queues and shares nothing with another application's instance.
//! - [`PortMap`]: which instance holds each TCP and UDP port (§3.2's portmap). The kernel keeps
//!   it, outside whatever routes frames, so a router can restart without losing the map.
//! - [`switch`]: where a frame an instance sent goes: to the instance holding the destination
//!   port, to the rejecting instance (nobody holds the port: it answers RST or nothing), or out
//!   of the machine; ARP for local addresses is answered by the switch itself (proxy ARP), so
//!   every instance can own the same addresses (127.0.0.1 and the guest's address) and frames
//!   are told apart by port, as LibrettOS's network server does.
//! - [`packet`]: packet sockets (`AF_PACKET`), whole Ethernet frames a program sends and
//!   receives on its own instance (and only its own: it sees its instance's frames, not the
//!   machine's).
//! - [`dhcp`]: the two narrow exceptions that let a DHCP client behind the switch ask for a
//!   lease (its request from 0.0.0.0 passes the source check, the reply reaches the instance
//!   that asked).
//! - [`netlink`]: route netlink's answers (`ip addr`, `ip link`, `ip route`), read-only, from
//!   the machine's interfaces, addresses and routes.
//! - [`ring`] and [`server`]: the network server of server mode (§3.2), a process that owns the
//!   NIC and switches the frames of the instances in server mode, which reach it through rings
//!   in shared pages; it checks that every frame's source is its sender's and routes by the
//!   port map, which the kernel alone writes.
//!
//! Host tests drive several instances through a switch and check the Linux answers.

#![no_std]
#![deny(missing_docs)]

extern crate alloc;

pub mod dhcp;
pub mod netlink;
pub mod packet;
pub mod portmap;
pub mod ring;
pub mod server;
pub mod stack;
pub mod switch;

pub use portmap::{Owners, PortMap, PortMirror, Proto, StackId};
pub use stack::{Connection, Owner, SockId, Stack};

pub use smoltcp::time::{Duration, Instant};
pub use smoltcp::wire::{EthernetAddress, Ipv4Address, Ipv4Cidr};

/// The switch's own MAC address: every local address resolves to it (proxy ARP).
pub const SWITCH_MAC: EthernetAddress = EthernetAddress([0x02, 0x52, 0x45, 0x45, 0x46, 0xff]);

/// The MAC address of instance `id` (locally administered, `02:52:45:45:xx:xx`).
pub fn stack_mac(id: StackId) -> EthernetAddress {
    let b = (id as u16).to_be_bytes();
    EthernetAddress([0x02, 0x52, 0x45, 0x45, b[0], b[1]])
}

/// The loopback network every instance has (127.0.0.1/8).
pub const LOOPBACK: Ipv4Cidr = Ipv4Cidr::new(Ipv4Address::new(127, 0, 0, 1), 8);
