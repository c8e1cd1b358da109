//! What Reef learns about the machine at boot: ACPI topology (cores, NUMA nodes, distances,
//! power and timer ports) combined with the firmware memory map.

use crate::arch::paging::phys_to_virt;
use crate::multiboot::{BootInfo, RegionKind};
use acpi::{Acpi, AcpiError, PhysMemory, Topology};
use alloc::vec;
use alloc::vec::Vec;
use frames::PhysRange;

/// Reads physical memory through the direct map, for the ACPI parser.
struct DirectMap {
    /// End of the physical memory the direct map covers; reads beyond it fail.
    end: u64,
}

impl PhysMemory for DirectMap {
    fn read(&self, phys: u64, buf: &mut [u8]) -> Result<(), AcpiError> {
        let end = phys.checked_add(buf.len() as u64);
        if end.is_none_or(|e| e > self.end) {
            return Err(AcpiError::Unreadable {
                phys,
                len: buf.len(),
            });
        }
        // SAFETY: the range lies below `self.end`, all of which the direct map covers; ACPI
        // tables and the BIOS areas are not written by anyone while they are parsed.
        let src =
            unsafe { core::slice::from_raw_parts(phys_to_virt(phys) as *const u8, buf.len()) };
        buf.copy_from_slice(src);
        Ok(())
    }
}

/// The machine as Reef sees it.
pub struct Machine {
    /// Parsed ACPI tables.
    pub acpi: Acpi,
    /// Cores, nodes, node memory and distances.
    pub topology: Topology,
    /// RAM of each node in bytes, as the firmware reports it (SRAT ranges intersected with the
    /// memory map's available RAM; without an SRAT, all available RAM is node 0's).
    pub node_ram: Vec<u64>,
    /// Available RAM of each node, as physical ranges.
    pub node_ranges: Vec<Vec<PhysRange>>,
    /// RAM of each node that the frame allocator may hand out: available RAM minus the first
    /// MiB, the kernel image and the boot modules.
    pub node_free: Vec<Vec<PhysRange>>,
    /// Available RAM that the SRAT assigns to no node (given to node 0).
    pub unassigned: u64,
}

/// Why the machine description could not be built.
#[derive(Debug)]
pub enum MachineError {
    /// ACPI tables missing or malformed.
    Acpi(AcpiError),
    /// The MADT lists no usable core.
    NoCores,
}

impl core::fmt::Display for MachineError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            MachineError::Acpi(e) => write!(f, "ACPI: {e}"),
            MachineError::NoCores => write!(f, "the MADT lists no enabled core"),
        }
    }
}

/// Subtracts `hole` from every range in `ranges`.
fn subtract(ranges: Vec<PhysRange>, hole: PhysRange) -> Vec<PhysRange> {
    let mut out = Vec::with_capacity(ranges.len() + 1);
    for r in ranges {
        if hole.end <= r.base || hole.base >= r.end {
            out.push(r);
            continue;
        }
        if r.base < hole.base {
            out.push(PhysRange::new(r.base, hole.base));
        }
        if hole.end < r.end {
            out.push(PhysRange::new(hole.end, r.end));
        }
    }
    out
}

impl Machine {
    /// Parses ACPI and splits the memory map by node. `direct_map_end` bounds what can be read;
    /// `image` is the kernel image's physical range.
    pub fn discover(
        boot: &BootInfo,
        direct_map_end: u64,
        image: PhysRange,
    ) -> Result<Machine, MachineError> {
        let mem = DirectMap {
            end: direct_map_end,
        };
        let rsdp = acpi::find_rsdp(&mem).map_err(MachineError::Acpi)?;
        let acpi = acpi::parse(&mem, rsdp).map_err(MachineError::Acpi)?;
        let topology = acpi.topology();
        if topology.cores.is_empty() {
            return Err(MachineError::NoCores);
        }
        let nodes = topology.nodes.max(1);
        let mut node_ram = vec![0u64; nodes];
        let mut node_free = vec![Vec::new(); nodes];
        let mut node_ranges = vec![Vec::new(); nodes];
        let mut unassigned = 0;
        for region in boot
            .regions()
            .iter()
            .filter(|r| r.kind == RegionKind::Available)
        {
            for span in topology.split_by_node(region.base, region.length) {
                let node = match span.node {
                    Some(n) if n < nodes => n,
                    _ if acpi.srat.is_none() => 0,
                    _ => {
                        unassigned += span.length;
                        0
                    }
                };
                node_ram[node] += span.length;
                let range = PhysRange::from_base_len(span.base, span.length);
                node_ranges[node].push(range);
                let mut free = vec![range];
                free = subtract(free, PhysRange::new(0, 1 << 20));
                free = subtract(free, image);
                for m in boot.modules() {
                    free = subtract(free, PhysRange::new(m.start, m.end));
                }
                node_free[node].extend(free.into_iter().filter(|r| !r.is_empty()));
            }
        }
        Ok(Machine {
            acpi,
            topology,
            node_ram,
            node_ranges,
            node_free,
            unassigned,
        })
    }

    /// PM1a and PM1b control ports (for ACPI power-off).
    pub fn pm1_control(&self) -> (u16, u16) {
        let fadt = self.acpi.fadt.as_ref();
        (
            fadt.and_then(|f| f.pm1a_control).unwrap_or(0),
            fadt.and_then(|f| f.pm1b_control).unwrap_or(0),
        )
    }

    /// ACPI PM timer port and whether it is 32 bits wide.
    pub fn pm_timer(&self) -> (u16, bool) {
        match self.acpi.fadt.as_ref().and_then(|f| f.pm_timer) {
            Some(t) => (t.port, t.extended),
            None => (0, false),
        }
    }
}
