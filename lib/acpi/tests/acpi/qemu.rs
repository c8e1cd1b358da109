//! Tests on ACPI tables captured from QEMU 7.2 with qboot (`tests/capture.py`).
//!
//! QEMU's SRAT gives node 0 two ranges at the bottom of memory, `0..0xA0000` and
//! `0x100000..` (the 384 KiB legacy VGA/BIOS hole is in no node), and with more than 3.5 GiB
//! of RAM (`-machine pc`) puts everything above 3 GiB at 4 GiB instead, cutting the node
//! that straddles the PCI hole in two.

use acpi::{find_rsdp, parse, Acpi, Polarity, Topology, Trigger};

use crate::memory::{captured_blobs, Memory};

const MIB: u64 = 1 << 20;
const GIB: u64 = 1 << 30;
/// The legacy hole `0xA0000..0x100000` that QEMU leaves out of node 0.
const LEGACY_HOLE: u64 = 0x100000 - 0xA0000;

/// What a configuration must look like.
struct Expected {
    /// `(apic_id, node)` of each core.
    cores: &'static [(u32, usize)],
    nodes: usize,
    /// `(base, length, node)` of each SRAT memory range.
    memory: &'static [(u64, u64, usize)],
    /// Bytes of memory per node, from the SRAT ranges (none without an SRAT).
    node_sizes: &'static [u64],
    /// The SLIT matrix, row-major.
    slit: Option<&'static [u8]>,
}

/// Whether a captured file's label is a table signature (the others are `rsdp`, `bios`...).
fn is_table(label: &str) -> bool {
    label.len() == 4 && label.bytes().all(|b| b.is_ascii_uppercase())
}

/// Parses a configuration and checks what every QEMU configuration has in common, then the
/// configuration-specific `expected` facts.
fn check(config: &str, expected: &Expected) -> (Acpi, Topology) {
    let memory = Memory::captured(config);
    let blobs = captured_blobs(config);

    // find_rsdp finds the captured RSDP by searching the captured BIOS area.
    let rsdp = blobs.iter().find(|blob| blob.label == "rsdp").unwrap().phys;
    assert_eq!(find_rsdp(&memory), Ok(rsdp));
    let acpi = parse(&memory, rsdp).unwrap_or_else(|e| panic!("{config}: {e}"));
    assert_eq!(acpi.revision, 0, "qboot publishes an ACPI 1.0 RSDP");
    assert_eq!(&acpi.oem_id, b"BOCHS ");

    // Every captured table was found, listed with its address and length, and (apart from
    // the FACS, which has none) its checksum holds.
    let mut listed: Vec<_> = acpi
        .tables
        .iter()
        .map(|t| (t.signature.to_vec(), t.phys, t.length as usize))
        .collect();
    let mut files: Vec<_> = blobs
        .iter()
        .filter(|blob| is_table(&blob.label))
        .map(|blob| (blob.label.as_bytes().to_vec(), blob.phys, blob.bytes.len()))
        .collect();
    listed.sort();
    files.sort();
    assert_eq!(listed, files);
    for blob in blobs
        .iter()
        .filter(|blob| is_table(&blob.label) && blob.label != "FACS")
    {
        let sum = blob.bytes.iter().fold(0u8, |a, &b| a.wrapping_add(b));
        assert_eq!(sum, 0, "{config}: {} checksum", blob.label);
    }
    assert_eq!(&acpi.tables[0].signature, b"RSDT");
    let has_srat = expected.nodes > 1;
    for signature in [b"FACP", b"APIC", b"HPET", b"DSDT", b"FACS", b"WAET"] {
        assert!(acpi.tables.iter().any(|t| &t.signature == signature));
    }
    assert_eq!(acpi.srat.is_some(), has_srat);
    assert_eq!(acpi.slit.is_some(), has_srat);

    // MADT: QEMU's i440FX interrupt wiring.
    let madt = acpi.madt.as_ref().unwrap();
    assert_eq!(madt.local_apic_address, 0xFEE0_0000);
    assert!(madt.pcat_compat);
    assert_eq!(madt.processors.len(), expected.cores.len());
    assert!(madt.processors.iter().all(|p| p.enabled && !p.x2apic));
    assert_eq!(madt.io_apics.len(), 1);
    assert_eq!(madt.io_apics[0].id, 0);
    assert_eq!(madt.io_apics[0].address, 0xFEC0_0000);
    assert_eq!(madt.io_apics[0].gsi_base, 0);
    let overrides: Vec<_> = madt
        .overrides
        .iter()
        .map(|o| (o.bus, o.source, o.gsi, o.polarity, o.trigger))
        .collect();
    let level = |irq| (0, irq, u32::from(irq), Polarity::ActiveHigh, Trigger::Level);
    assert_eq!(
        overrides,
        [
            (0, 0, 2, Polarity::BusDefault, Trigger::BusDefault),
            level(5),
            level(9),
            level(10),
            level(11),
        ]
    );

    // FADT: PIIX4 power management at 0x600.
    let fadt = acpi.fadt.unwrap();
    assert_eq!(fadt.pm1a_control, Some(0x604));
    assert_eq!(fadt.pm1b_control, None);
    let timer = fadt.pm_timer.unwrap();
    assert_eq!(timer.port, 0x608);
    assert!(!timer.extended, "QEMU's PM timer is 24 bits wide");
    assert_eq!(fadt.sci_interrupt, 9);
    assert_eq!(fadt.reset, None, "a revision 1 FADT has no reset register");
    assert!(!fadt.hardware_reduced);
    assert_eq!(fadt.dsdt, Some(0xD0040));
    assert_eq!(fadt.facs, Some(0xD0000));

    let hpet = acpi.hpet.unwrap();
    assert_eq!(hpet.address, 0xFED0_0000);
    assert_eq!(hpet.block_id, 0x8086_A201);
    assert_eq!(hpet.number, 0);

    // Topology.
    let topology = acpi.topology();
    let cores: Vec<_> = topology.cores.iter().map(|c| (c.apic_id, c.node)).collect();
    assert_eq!(cores, expected.cores);
    assert_eq!(topology.nodes, expected.nodes);
    let memory: Vec<_> = topology
        .memory
        .iter()
        .map(|m| (m.base, m.length, m.node))
        .collect();
    assert_eq!(memory, expected.memory);
    let mut sizes = vec![0; if has_srat { topology.nodes } else { 0 }];
    for range in &topology.memory {
        sizes[range.node] += range.length;
    }
    assert_eq!(sizes, expected.node_sizes);
    for range in &topology.memory {
        assert_eq!(topology.node_of(range.base), Some(range.node));
        assert_eq!(
            topology.node_of(range.base + range.length - 1),
            Some(range.node)
        );
    }
    let slit: Vec<u8> = (0..topology.nodes)
        .flat_map(|a| (0..topology.nodes).map(move |b| (a, b)))
        .map(|(a, b)| topology.distance(a, b))
        .collect();
    assert_eq!(slit, expected.slit.unwrap_or(&[10]));
    if let Some(matrix) = expected.slit {
        assert_eq!(acpi.slit.as_ref().unwrap().distances, matrix);
    }
    (acpi, topology)
}

#[test]
fn c1_n1() {
    let (acpi, topology) = check(
        "c1-n1",
        &Expected {
            cores: &[(0, 0)],
            nodes: 1,
            memory: &[],
            node_sizes: &[],
            slit: None,
        },
    );
    assert!(acpi.srat.is_none());
    // Without an SRAT the kernel uses the multiboot map, all of it on node 0.
    assert_eq!(topology.node_of(0x12345678), Some(0));
    let spans = topology.split_by_node(0x100000, 127 * MIB);
    assert_eq!(spans.len(), 1);
    assert_eq!(spans[0].node, Some(0));
}

/// Memory of the 256 MiB two-node configurations: 128 MiB per node.
const TWO_NODES_256M: &[(u64, u64, usize)] = &[
    (0, 0xA0000, 0),
    (0x100000, 127 * MIB, 0),
    (128 * MIB, 128 * MIB, 1),
];

#[test]
fn c2_n2() {
    check(
        "c2-n2",
        &Expected {
            cores: &[(0, 0), (1, 1)],
            nodes: 2,
            memory: TWO_NODES_256M,
            node_sizes: &[128 * MIB - LEGACY_HOLE, 128 * MIB],
            slit: Some(&[10, 20, 20, 10]),
        },
    );
}

#[test]
fn c4_n2() {
    let (acpi, _) = check(
        "c4-n2",
        &Expected {
            cores: &[(0, 0), (1, 0), (2, 1), (3, 1)],
            nodes: 2,
            memory: TWO_NODES_256M,
            node_sizes: &[128 * MIB - LEGACY_HOLE, 128 * MIB],
            slit: Some(&[10, 20, 20, 10]),
        },
    );
    let srat = acpi.srat.unwrap();
    // QEMU also writes one disabled, empty memory entry, which the topology ignores.
    assert_eq!(srat.memory.len(), 4);
    assert!(!srat.memory[3].enabled && srat.memory[3].length == 0);
}

#[test]
fn c8_n4() {
    check(
        "c8-n4",
        &Expected {
            cores: &[
                (0, 0),
                (1, 0),
                (2, 1),
                (3, 1),
                (4, 2),
                (5, 2),
                (6, 3),
                (7, 3),
            ],
            nodes: 4,
            memory: &[
                (0, 0xA0000, 0),
                (0x100000, 127 * MIB, 0),
                (128 * MIB, 128 * MIB, 1),
                (256 * MIB, 128 * MIB, 2),
                (384 * MIB, 128 * MIB, 3),
            ],
            node_sizes: &[128 * MIB - LEGACY_HOLE, 128 * MIB, 128 * MIB, 128 * MIB],
            #[rustfmt::skip]
            slit: Some(&[
                10, 20, 30, 30,
                20, 10, 20, 30,
                30, 20, 10, 20,
                30, 30, 20, 10,
            ]),
        },
    );
}

#[test]
fn c2_n2_big() {
    let (_, topology) = check(
        "c2-n2-big",
        &Expected {
            cores: &[(0, 0), (1, 1)],
            nodes: 2,
            // Node 0 has 4 GiB: 3 GiB below the PCI hole, 1 GiB from 4 GiB; node 1 follows.
            memory: &[
                (0, 0xA0000, 0),
                (0x100000, 3 * GIB - MIB, 0),
                (4 * GIB, GIB, 0),
                (5 * GIB, 4 * GIB, 1),
            ],
            node_sizes: &[4 * GIB - LEGACY_HOLE, 4 * GIB],
            slit: Some(&[10, 20, 20, 10]),
        },
    );
    assert_eq!(topology.node_of(0xA0000), None);
    assert_eq!(topology.node_of(3 * GIB), None, "PCI hole");
    assert_eq!(topology.node_of(9 * GIB), None);
    let spans: Vec<_> = topology
        .split_by_node(0, 10 * GIB)
        .iter()
        .map(|s| (s.base, s.length, s.node))
        .collect();
    assert_eq!(
        spans,
        [
            (0, 0xA0000, Some(0)),
            (0xA0000, LEGACY_HOLE, None),
            (0x100000, 3 * GIB - MIB, Some(0)),
            (3 * GIB, GIB, None),
            (4 * GIB, GIB, Some(0)),
            (5 * GIB, 4 * GIB, Some(1)),
            (9 * GIB, GIB, None),
        ]
    );
    // A multiboot entry crossing the node boundary above 4 GiB.
    let spans: Vec<_> = topology
        .split_by_node(4 * GIB + 4096, 2 * GIB)
        .iter()
        .map(|s| (s.base, s.length, s.node))
        .collect();
    assert_eq!(
        spans,
        [
            (4 * GIB + 4096, GIB - 4096, Some(0)),
            (5 * GIB, GIB + 4096, Some(1)),
        ]
    );
}
