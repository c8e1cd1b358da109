//! The machine topology the kernel schedules and allocates by.

use alloc::vec::Vec;

use crate::Acpi;

/// Distance of a node to itself when there is no SLIT (the ACPI normalised local distance).
const LOCAL: u8 = 10;
/// Distance between different nodes when there is no SLIT.
const REMOTE: u8 = 20;
/// What [`Topology::distance`] answers for node ids out of range (the SLIT's "unreachable").
const UNREACHABLE: u8 = 255;

/// A usable processor core.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Core {
    /// Its local APIC ID (x2APIC ID for processors described by x2APIC entries).
    pub apic_id: u32,
    /// The node it belongs to, below [`Topology::nodes`].
    pub node: usize,
}

/// A physical memory range and the node it belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MemoryRange {
    /// First physical address.
    pub base: u64,
    /// Length in bytes (not zero).
    pub length: u64,
    /// The node, below [`Topology::nodes`].
    pub node: usize,
}

/// A piece of a physical range given to [`Topology::split_by_node`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NodeSpan {
    /// First physical address.
    pub base: u64,
    /// Length in bytes (not zero).
    pub length: u64,
    /// The node the whole piece belongs to, or `None` when no SRAT memory range covers it.
    pub node: Option<usize>,
}

/// Cores, NUMA nodes, node memory and distances, as the kernel uses them.
///
/// Node ids are dense, `0..nodes`. With an SRAT, proximity domains are numbered in order of
/// first appearance among the SRAT's enabled processor entries (in table order), then its
/// enabled, non-hot-pluggable, non-empty memory entries; so node 0 is normally the boot
/// processor's. A domain that appears only in disabled or hot-pluggable entries gets no node.
///
/// Without an SRAT (or with one that has no usable entries) the machine is one node: every
/// core is on node 0, [`memory`](Self::memory) is empty, and the kernel takes its memory from
/// the boot loader's memory map, where [`node_of`](Self::node_of) puts everything on node 0.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Topology {
    /// Enabled processors (MADT Local APIC and x2APIC entries with the enabled flag; not the
    /// merely online-capable ones), in MADT order, the boot processor included. An APIC ID
    /// listed twice (some firmware describes a processor by both entry types) is kept once.
    /// A core the SRAT does not mention is put on node 0. Empty when there is no MADT.
    pub cores: Vec<Core>,
    /// Number of nodes, at least 1.
    pub nodes: usize,
    /// Memory present at boot, by node: the SRAT's enabled memory ranges that are not
    /// hot-pluggable and not empty, in SRAT order. Empty without an SRAT.
    pub memory: Vec<MemoryRange>,
    /// `nodes × nodes` distances, row-major.
    distances: Vec<u8>,
}

impl Acpi {
    /// Builds the [`Topology`] from the MADT, SRAT and SLIT.
    #[must_use]
    pub fn topology(&self) -> Topology {
        // Proximity domain of each node id.
        let mut domains: Vec<u32> = Vec::new();
        let mut node_of_domain = |domain| match domains.iter().position(|&d| d == domain) {
            Some(node) => node,
            None => {
                domains.push(domain);
                domains.len() - 1
            }
        };
        let mut cpu_nodes = Vec::new();
        let mut memory = Vec::new();
        if let Some(srat) = &self.srat {
            for cpu in srat.processors.iter().filter(|cpu| cpu.enabled) {
                cpu_nodes.push((cpu.apic_id, node_of_domain(cpu.domain)));
            }
            for range in &srat.memory {
                if range.enabled && !range.hot_pluggable && range.length != 0 {
                    memory.push(MemoryRange {
                        base: range.base,
                        length: range.length,
                        node: node_of_domain(range.domain),
                    });
                }
            }
        }

        let mut cores: Vec<Core> = Vec::new();
        let processors = self.madt.iter().flat_map(|madt| &madt.processors);
        for cpu in processors.filter(|cpu| cpu.enabled) {
            if cores.iter().any(|core| core.apic_id == cpu.apic_id) {
                continue;
            }
            let node = cpu_nodes
                .iter()
                .find(|&&(apic_id, _)| apic_id == cpu.apic_id)
                .map_or(0, |&(_, node)| node);
            cores.push(Core {
                apic_id: cpu.apic_id,
                node,
            });
        }

        let nodes = domains.len().max(1);
        let mut distances = Vec::with_capacity(nodes * nodes);
        for from in 0..nodes {
            for to in 0..nodes {
                let default = if from == to { LOCAL } else { REMOTE };
                let slit = match (&self.slit, domains.get(from), domains.get(to)) {
                    (Some(slit), Some(&a), Some(&b)) => slit.distance(a as usize, b as usize),
                    _ => None,
                };
                distances.push(slit.unwrap_or(default));
            }
        }
        Topology {
            cores,
            nodes,
            memory,
            distances,
        }
    }
}

impl Topology {
    /// Relative distance from node `from` to node `to`: the SLIT entry for their proximity
    /// domains, or 10 when `from == to` and 20 otherwise when there is no SLIT or it does not
    /// cover those domains. 255 when either node id is not below [`nodes`](Self::nodes).
    #[must_use]
    pub fn distance(&self, from: usize, to: usize) -> u8 {
        if from >= self.nodes || to >= self.nodes {
            return UNREACHABLE;
        }
        self.distances
            .get(from * self.nodes + to)
            .copied()
            .unwrap_or(UNREACHABLE)
    }

    /// The node of physical address `phys`: the node of the first [`memory`](Self::memory)
    /// range containing it, or `None` when no range does. When there are no memory ranges
    /// (no SRAT), every address is on node 0.
    #[must_use]
    pub fn node_of(&self, phys: u64) -> Option<usize> {
        if self.memory.is_empty() {
            return Some(0);
        }
        self.memory
            .iter()
            .find(|range| phys >= range.base && phys - range.base < range.length)
            .map(|range| range.node)
    }

    /// Cuts the physical range `base..base + length` (clamped to the end of the address space)
    /// into maximal pieces that each lie on one node (or on none), in address order, so that
    /// the kernel can split a boot loader memory map entry across nodes. Consecutive SRAT
    /// ranges of the same node give one piece; gaps between SRAT ranges give pieces with
    /// `node: None`. Without memory ranges (no SRAT) the whole range is one piece on node 0.
    #[must_use]
    pub fn split_by_node(&self, base: u64, length: u64) -> Vec<NodeSpan> {
        let end = u128::from(base) + u128::from(length);
        let end = end.min(1 << 64);
        let range_end = |range: &MemoryRange| u128::from(range.base) + u128::from(range.length);
        let mut spans: Vec<NodeSpan> = Vec::new();
        let mut at = u128::from(base);
        while at < end {
            let (stop, node) = if self.memory.is_empty() {
                (end, Some(0))
            } else if let Some(range) = self
                .memory
                .iter()
                .find(|range| u128::from(range.base) <= at && at < range_end(range))
            {
                (range_end(range).min(end), Some(range.node))
            } else {
                let next = self
                    .memory
                    .iter()
                    .map(|range| u128::from(range.base))
                    .filter(|&start| start > at)
                    .min();
                (next.map_or(end, |next| next.min(end)), None)
            };
            // `at < stop <= 2^64`, so both fit in u64 once `stop - at` is taken.
            let piece = NodeSpan {
                base: at as u64,
                length: (stop - at) as u64,
                node,
            };
            match spans.last_mut() {
                Some(last)
                    if last.node == node
                        && u128::from(last.base) + u128::from(last.length) == at =>
                {
                    last.length += piece.length;
                }
                _ => spans.push(piece),
            }
            at = stop;
        }
        spans
    }
}
