//! The port map (LibrettOS §3.2): which stack instance holds each TCP and UDP port.
//!
//! Ports are one name space for the whole machine, as on Linux: a port belongs to one instance
//! at a time, which may use it for several sockets (a listener and the connections it accepted
//! share its port), so an entry counts its holders and is free when the last lets go. The
//! switch routes an inbound frame to the instance holding its destination port.
//!
//! A free port remembers its last holder until another instance claims it: the checks of
//! outbound frames (`server::verify`) let that instance still send from it, since the reset of
//! an aborted connection leaves after its socket let the port go. Nobody else holds the port,
//! so such a frame can disturb no one's connection.

use abi::Errno;
use alloc::collections::{btree_map, BTreeMap};

/// A stack instance's number (the kernel gives one to each application).
pub type StackId = u32;

/// The transport protocols with ports.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Proto {
    /// TCP.
    Tcp,
    /// UDP.
    Udp,
    /// ICMP echo (the "port" is the echo identifier a raw socket's requests carried, so that
    /// the replies find it).
    Icmp,
}

/// The ports `bind` to port 0 and `connect` choose from (Linux's default
/// `ip_local_port_range`).
pub const EPHEMERAL: core::ops::RangeInclusive<u16> = 32768..=60999;

/// One port that is held, or was.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Entry {
    /// The instance holding it (or that held it last).
    owner: StackId,
    /// Its sockets using it (0: free, remembered for [`Owners::last_holder`]).
    holders: u32,
}

/// Who holds a port: the question routing asks, of the kernel's [`PortMap`] or of the copy a
/// network server reads ([`crate::server::PortTable`]).
pub trait Owners {
    /// The instance holding `port`.
    fn owner(&self, proto: Proto, port: u16) -> Option<StackId>;
    /// The instance holding `port`, or the last one that held it if it is free.
    fn last_holder(&self, proto: Proto, port: u16) -> Option<StackId>;
}

/// Where a [`PortMap`] copies every change of a port (the table a network server maps
/// read-only, LibrettOS §3.2: the portmap lives outside the server).
pub trait PortMirror: Sync {
    /// `port`'s holder (or last holder) is now `owner`, holding it or not (`held`).
    fn set(&self, proto: Proto, port: u16, owner: StackId, held: bool);
}

/// Every held port, by protocol.
#[derive(Default)]
pub struct PortMap {
    /// Held ports by (protocol, port).
    ports: BTreeMap<(Proto, u16), Entry>,
    /// Where the next search for an ephemeral port starts, per protocol.
    next: [u16; 3],
    /// Where owner changes are copied, once a network server asked for the map.
    mirror: Option<&'static dyn PortMirror>,
}

impl core::fmt::Debug for PortMap {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("PortMap")
            .field("ports", &self.ports)
            .field("mirrored", &self.mirror.is_some())
            .finish()
    }
}

impl Owners for PortMap {
    fn owner(&self, proto: Proto, port: u16) -> Option<StackId> {
        PortMap::owner(self, proto, port)
    }

    fn last_holder(&self, proto: Proto, port: u16) -> Option<StackId> {
        self.ports.get(&(proto, port)).map(|e| e.owner)
    }
}

impl PortMap {
    /// An empty map.
    pub const fn new() -> Self {
        PortMap {
            ports: BTreeMap::new(),
            next: [*EPHEMERAL.start(); 3],
            mirror: None,
        }
    }

    /// From now on, copies every change of owner to `mirror`, starting with the ports held now.
    pub fn mirror_to(&mut self, mirror: &'static dyn PortMirror) {
        for (&(proto, port), e) in &self.ports {
            mirror.set(proto, port, e.owner, e.holders > 0);
        }
        self.mirror = Some(mirror);
    }

    /// Copies a change of `port` to the mirror.
    fn mirrored(&self, proto: Proto, port: u16, owner: StackId, held: bool) {
        if let Some(m) = self.mirror {
            m.set(proto, port, owner, held);
        }
    }

    /// One more socket of `owner` uses `port`: `EADDRINUSE` if another instance holds it.
    /// Whether two sockets of one instance may share a port is the instance's question.
    pub fn claim(&mut self, proto: Proto, port: u16, owner: StackId) -> Result<(), Errno> {
        if port == 0 {
            return Err(Errno::EINVAL);
        }
        match self.ports.get_mut(&(proto, port)) {
            Some(e) if e.holders > 0 && e.owner != owner => Err(Errno::EADDRINUSE),
            Some(e) if e.holders > 0 => {
                e.holders += 1;
                Ok(())
            }
            _ => {
                self.ports
                    .insert((proto, port), Entry { owner, holders: 1 });
                self.mirrored(proto, port, owner, true);
                Ok(())
            }
        }
    }

    /// A free ephemeral port, now held by `owner` (`EADDRNOTAVAIL` when none is free).
    pub fn claim_ephemeral(&mut self, proto: Proto, owner: StackId) -> Result<u16, Errno> {
        let slot = proto as usize;
        let (lo, hi) = (*EPHEMERAL.start(), *EPHEMERAL.end());
        let span = u32::from(hi - lo) + 1;
        let start = self.next[slot].clamp(lo, hi);
        for i in 0..span {
            let port = lo + ((u32::from(start - lo) + i) % span) as u16;
            let free = match self.ports.entry((proto, port)) {
                btree_map::Entry::Vacant(v) => {
                    v.insert(Entry { owner, holders: 1 });
                    true
                }
                btree_map::Entry::Occupied(mut o) if o.get().holders == 0 => {
                    *o.get_mut() = Entry { owner, holders: 1 };
                    true
                }
                btree_map::Entry::Occupied(_) => false,
            };
            if free {
                self.mirrored(proto, port, owner, true);
                self.next[slot] = if port == hi { lo } else { port + 1 };
                return Ok(port);
            }
        }
        Err(Errno::EADDRNOTAVAIL)
    }

    /// One socket of `owner` stopped using `port` (nothing if `owner` does not hold it).
    pub fn release(&mut self, proto: Proto, port: u16, owner: StackId) {
        if let Some(e) = self.ports.get_mut(&(proto, port)) {
            if e.owner == owner && e.holders > 0 {
                e.holders -= 1;
                if e.holders == 0 {
                    self.mirrored(proto, port, owner, false);
                }
            }
        }
    }

    /// The instance holding `port`.
    pub fn owner(&self, proto: Proto, port: u16) -> Option<StackId> {
        self.ports
            .get(&(proto, port))
            .filter(|e| e.holders > 0)
            .map(|e| e.owner)
    }

    /// The ports `owner` holds, with their protocols, in order.
    pub fn ports_of(&self, owner: StackId) -> impl Iterator<Item = (Proto, u16)> + '_ {
        self.ports
            .iter()
            .filter(move |(_, e)| e.owner == owner && e.holders > 0)
            .map(|(k, _)| *k)
    }

    /// Ports held, all protocols.
    pub fn len(&self) -> usize {
        self.ports.values().filter(|e| e.holders > 0).count()
    }

    /// Nothing is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_port_belongs_to_one_instance_and_counts_its_holders() {
        let mut m = PortMap::new();
        m.claim(Proto::Tcp, 80, 1).unwrap();
        m.claim(Proto::Tcp, 80, 1).unwrap();
        assert_eq!(m.claim(Proto::Tcp, 80, 2), Err(Errno::EADDRINUSE));
        // The protocols are separate name spaces.
        m.claim(Proto::Udp, 80, 2).unwrap();
        assert_eq!(m.owner(Proto::Tcp, 80), Some(1));
        m.release(Proto::Tcp, 80, 2);
        m.release(Proto::Tcp, 80, 1);
        assert_eq!(m.owner(Proto::Tcp, 80), Some(1));
        m.release(Proto::Tcp, 80, 1);
        assert_eq!(m.owner(Proto::Tcp, 80), None);
        // Free, it remembers its last holder until someone claims it.
        assert_eq!(m.last_holder(Proto::Tcp, 80), Some(1));
        m.release(Proto::Tcp, 80, 1);
        m.claim(Proto::Tcp, 80, 3).unwrap();
        assert_eq!(m.last_holder(Proto::Tcp, 80), Some(3));
        m.release(Proto::Tcp, 80, 3);
        assert_eq!(m.claim(Proto::Tcp, 0, 1), Err(Errno::EINVAL));
    }

    #[test]
    fn ephemeral_ports_skip_held_ones_wrap_and_run_out() {
        let mut m = PortMap::new();
        m.claim(Proto::Tcp, 32768, 9).unwrap();
        assert_eq!(m.claim_ephemeral(Proto::Tcp, 1), Ok(32769));
        assert_eq!(m.claim_ephemeral(Proto::Udp, 1), Ok(32768));
        let span = usize::from(EPHEMERAL.end() - EPHEMERAL.start()) + 1;
        for _ in 2..span {
            m.claim_ephemeral(Proto::Tcp, 1).unwrap();
        }
        assert_eq!(m.claim_ephemeral(Proto::Tcp, 1), Err(Errno::EADDRNOTAVAIL));
        m.release(Proto::Tcp, 40000, 1);
        assert_eq!(m.claim_ephemeral(Proto::Tcp, 2), Ok(40000));
        assert_eq!(
            m.ports_of(2).collect::<alloc::vec::Vec<_>>(),
            [(Proto::Tcp, 40000)]
        );
    }
}
