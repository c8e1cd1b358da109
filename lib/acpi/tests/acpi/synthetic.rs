//! Tests on synthesized tables: RSDT versus XSDT, the MADT/SRAT/SLIT/FADT features QEMU's
//! tables do not exercise, and every malformed input the parser guards against.

use acpi::{
    find_rsdp, parse, AcpiError, AddressSpace, GenericAddress, Polarity, ResetRegister, TableInfo,
    Trigger, MAX_TABLE_LENGTH,
};

use crate::memory::Memory;

/// Where [`Machine`] puts the RSDP.
const RSDP: u64 = 0x1000;

/// Sets `bytes[at]` so that `bytes` sums to zero.
fn fix_checksum(bytes: &mut [u8], at: usize) {
    bytes[at] = 0;
    let sum = bytes.iter().fold(0u8, |a, &b| a.wrapping_add(b));
    bytes[at] = sum.wrapping_neg();
}

/// A table with a standard header around `body`, checksummed.
fn sdt(signature: &[u8; 4], revision: u8, body: &[u8]) -> Vec<u8> {
    let mut t = Vec::new();
    t.extend_from_slice(signature);
    t.extend_from_slice(&(36 + body.len() as u32).to_le_bytes());
    t.push(revision);
    t.push(0);
    t.extend_from_slice(b"REEFOS");
    t.extend_from_slice(b"TESTTABL");
    t.extend_from_slice(&1u32.to_le_bytes());
    t.extend_from_slice(b"REEF");
    t.extend_from_slice(&1u32.to_le_bytes());
    t.extend_from_slice(body);
    fix_checksum(&mut t, 9);
    t
}

/// An RSDP: 20 bytes for revision 0, 36 with the XSDT address otherwise.
fn rsdp(revision: u8, rsdt: u32, xsdt: u64) -> Vec<u8> {
    let mut r = Vec::new();
    r.extend_from_slice(b"RSD PTR ");
    r.push(0);
    r.extend_from_slice(b"REEFOS");
    r.push(revision);
    r.extend_from_slice(&rsdt.to_le_bytes());
    if revision >= 2 {
        r.extend_from_slice(&36u32.to_le_bytes());
        r.extend_from_slice(&xsdt.to_le_bytes());
        r.extend_from_slice(&[0; 4]);
        fix_checksum(&mut r[..20], 8);
        fix_checksum(&mut r, 32);
    } else {
        fix_checksum(&mut r, 8);
    }
    r
}

/// MADT body: local APIC address 0xFEE00000, PCAT_COMPAT, then `entries`.
fn madt(revision: u8, entries: &[&[u8]]) -> Vec<u8> {
    let mut body = Vec::new();
    body.extend_from_slice(&0xFEE0_0000u32.to_le_bytes());
    body.extend_from_slice(&1u32.to_le_bytes());
    for entry in entries {
        body.extend_from_slice(entry);
    }
    sdt(b"APIC", revision, &body)
}

/// MADT type 0 entry.
fn lapic(uid: u8, apic_id: u8, flags: u32) -> Vec<u8> {
    let mut e = vec![0, 8, uid, apic_id];
    e.extend_from_slice(&flags.to_le_bytes());
    e
}

/// MADT type 9 entry.
fn x2apic(uid: u32, apic_id: u32, flags: u32) -> Vec<u8> {
    let mut e = vec![9, 16, 0, 0];
    e.extend_from_slice(&apic_id.to_le_bytes());
    e.extend_from_slice(&flags.to_le_bytes());
    e.extend_from_slice(&uid.to_le_bytes());
    e
}

/// SRAT body: 12 reserved bytes, then `entries`.
fn srat(revision: u8, entries: &[&[u8]]) -> Vec<u8> {
    let mut body = vec![1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0];
    for entry in entries {
        body.extend_from_slice(entry);
    }
    sdt(b"SRAT", revision, &body)
}

/// SRAT type 0 entry; `domain_high` fills bits 8..32 of the domain.
fn cpu_affinity(apic_id: u8, domain: u8, domain_high: [u8; 3], enabled: bool) -> Vec<u8> {
    let mut e = vec![0, 16, domain, apic_id];
    e.extend_from_slice(&u32::from(enabled).to_le_bytes());
    e.push(0);
    e.extend_from_slice(&domain_high);
    e.extend_from_slice(&[0; 4]);
    e
}

/// SRAT type 2 entry.
fn x2apic_affinity(apic_id: u32, domain: u32, enabled: bool) -> Vec<u8> {
    let mut e = vec![2, 24, 0, 0];
    e.extend_from_slice(&domain.to_le_bytes());
    e.extend_from_slice(&apic_id.to_le_bytes());
    e.extend_from_slice(&u32::from(enabled).to_le_bytes());
    e.extend_from_slice(&[0; 8]);
    e
}

/// SRAT type 1 entry.
fn mem_affinity(base: u64, length: u64, domain: u32, flags: u32) -> Vec<u8> {
    let mut e = vec![1, 40];
    e.extend_from_slice(&domain.to_le_bytes());
    e.extend_from_slice(&[0; 2]);
    e.extend_from_slice(&base.to_le_bytes());
    e.extend_from_slice(&length.to_le_bytes());
    e.extend_from_slice(&[0; 4]);
    e.extend_from_slice(&flags.to_le_bytes());
    e.extend_from_slice(&[0; 8]);
    e
}

/// A SLIT for `n` localities.
fn slit(n: u64, matrix: &[u8]) -> Vec<u8> {
    let mut body = n.to_le_bytes().to_vec();
    body.extend_from_slice(matrix);
    sdt(b"SLIT", 1, &body)
}

/// A FADT of `length` bytes (at least 116) with `set` applied to its zeroed body, where
/// offsets are from the start of the table.
fn fadt(length: usize, set: &[(usize, &[u8])]) -> Vec<u8> {
    let mut body = vec![0; length - 36];
    for (offset, bytes) in set {
        body[offset - 36..offset - 36 + bytes.len()].copy_from_slice(bytes);
    }
    sdt(b"FACP", if length > 116 { 6 } else { 1 }, &body)
}

/// A Generic Address Structure.
fn gas(space: u8, width: u8, address: u64) -> Vec<u8> {
    let mut g = vec![space, width, 0, 1];
    g.extend_from_slice(&address.to_le_bytes());
    g
}

/// Builds a memory image: tables at increasing addresses, listed by an RSDT (and an XSDT for
/// revision 2), and an RSDP at [`RSDP`].
struct Machine {
    memory: Memory,
    next: u64,
    entries: Vec<u64>,
}

impl Machine {
    fn new() -> Self {
        Self {
            memory: Memory::default(),
            next: 0x10_0000,
            entries: Vec::new(),
        }
    }

    /// Places `bytes` at the next free address without listing them; returns the address.
    fn place(&mut self, bytes: Vec<u8>) -> u64 {
        let phys = self.next;
        self.next += (bytes.len() as u64 + 15) & !15;
        self.memory.put(phys, bytes);
        phys
    }

    /// Places a table and lists it in the root table.
    fn table(mut self, bytes: Vec<u8>) -> Self {
        let phys = self.place(bytes);
        self.entries.push(phys);
        self
    }

    /// Lists an address in the root table without placing anything there.
    fn entry(mut self, phys: u64) -> Self {
        self.entries.push(phys);
        self
    }

    fn rsdt_body(&self) -> Vec<u8> {
        self.entries
            .iter()
            .flat_map(|&p| u32::try_from(p).unwrap().to_le_bytes())
            .collect()
    }

    /// An ACPI 1.0 machine: RSDP revision 0 and an RSDT.
    fn rsdt(mut self) -> Memory {
        let rsdt = sdt(b"RSDT", 1, &self.rsdt_body());
        let rsdt = self.place(rsdt);
        self.memory.put(RSDP, rsdp(0, rsdt as u32, 0));
        self.memory
    }

    /// An ACPI 2.0+ machine: RSDP revision 2 and an XSDT (the RSDT is left empty).
    fn xsdt(mut self) -> Memory {
        let body: Vec<u8> = self.entries.iter().flat_map(|p| p.to_le_bytes()).collect();
        let xsdt = sdt(b"XSDT", 1, &body);
        let xsdt = self.place(xsdt);
        let rsdt = sdt(b"RSDT", 1, &[]);
        let rsdt = self.place(rsdt);
        self.memory.put(RSDP, rsdp(2, rsdt as u32, xsdt));
        self.memory
    }
}

/// `parse` of a machine whose root table lists `tables`, expecting an error.
fn parse_err(tables: Vec<Vec<u8>>) -> AcpiError {
    let mut machine = Machine::new();
    for table in tables {
        machine = machine.table(table);
    }
    parse(&machine.rsdt(), RSDP).unwrap_err()
}

// --- RSDT versus XSDT --------------------------------------------------------------------

#[test]
fn revision_0_walks_the_rsdt() {
    let memory = Machine::new()
        .table(madt(1, &[&lapic(0, 0, 1), &lapic(1, 1, 1)]))
        .rsdt();
    let acpi = parse(&memory, RSDP).unwrap();
    assert_eq!(acpi.revision, 0);
    assert_eq!(acpi.rsdp, RSDP);
    assert_eq!(&acpi.oem_id, b"REEFOS");
    assert_eq!(&acpi.tables[0].signature, b"RSDT");
    assert_eq!(acpi.madt.unwrap().processors.len(), 2);
    // No SRAT: one node, everything on it.
    let topology = Machine::new().table(madt(1, &[&lapic(0, 0, 1)])).rsdt();
    let topology = parse(&topology, RSDP).unwrap().topology();
    assert_eq!(topology.nodes, 1);
    assert!(topology.memory.is_empty());
    assert_eq!(topology.distance(0, 0), 10);
    assert_eq!(topology.distance(0, 1), 255);
}

#[test]
fn revision_2_prefers_the_xsdt() {
    // The RSDT lists a one-processor MADT; the XSDT a two-processor one above 4 GiB.
    let mut machine = Machine::new();
    let old = machine.place(madt(1, &[&lapic(0, 0, 1)]));
    let rsdt = machine.place(sdt(b"RSDT", 1, &u32::try_from(old).unwrap().to_le_bytes()));
    let new = madt(3, &[&lapic(0, 0, 1), &lapic(1, 1, 1)]);
    let new_len = new.len() as u32;
    machine.memory.put(0x1_2345_0000, new);
    let xsdt = machine.place(sdt(b"XSDT", 1, &0x1_2345_0000u64.to_le_bytes()));
    machine.memory.put(RSDP, rsdp(2, rsdt as u32, xsdt));

    let acpi = parse(&machine.memory, RSDP).unwrap();
    assert_eq!(acpi.revision, 2);
    assert_eq!(&acpi.tables[0].signature, b"XSDT");
    assert_eq!(
        acpi.tables[1],
        TableInfo {
            signature: *b"APIC",
            phys: 0x1_2345_0000,
            length: new_len,
        }
    );
    assert_eq!(acpi.madt.unwrap().processors.len(), 2);
}

#[test]
fn revision_2_without_xsdt_walks_the_rsdt() {
    let mut machine = Machine::new().table(madt(1, &[&lapic(0, 0, 1)]));
    let rsdt = sdt(b"RSDT", 1, &machine.rsdt_body());
    let rsdt = machine.place(rsdt);
    machine.memory.put(RSDP, rsdp(2, rsdt as u32, 0));
    let acpi = parse(&machine.memory, RSDP).unwrap();
    assert_eq!(&acpi.tables[0].signature, b"RSDT");
    assert!(acpi.madt.is_some());
}

#[test]
fn null_entries_are_skipped_and_unknown_tables_listed() {
    let acpi = parse(
        &Machine::new()
            .entry(0)
            .table(sdt(b"SSDT", 2, &[0x10, 0x20]))
            .rsdt(),
        RSDP,
    )
    .unwrap();
    let signatures: Vec<_> = acpi.tables.iter().map(|t| t.signature).collect();
    assert_eq!(signatures, [*b"RSDT", *b"SSDT"]);
    assert!(acpi.madt.is_none() && acpi.fadt.is_none());
    assert!(acpi.topology().cores.is_empty());
}

// --- MADT ------------------------------------------------------------------------------

#[test]
fn madt_x2apic_online_capable_override_and_duplicates() {
    let mut lapic_override = vec![5, 12, 0, 0];
    lapic_override.extend_from_slice(&0x1_FEE0_0000u64.to_le_bytes());
    let mut iso = vec![2, 10, 0, 9];
    iso.extend_from_slice(&9u32.to_le_bytes());
    iso.extend_from_slice(&0b1111u16.to_le_bytes());
    let acpi = parse(
        &Machine::new()
            .table(madt(
                5,
                &[
                    &lapic(0, 0, 1),
                    &x2apic(1, 300, 1),
                    &lapic(2, 2, 0b10),
                    &x2apic(3, 301, 0),
                    &x2apic(4, 0, 1),
                    &lapic_override,
                    &iso,
                    &[0x7F, 3, 0],
                ],
            ))
            .rsdt(),
        RSDP,
    )
    .unwrap();
    let madt = acpi.madt.as_ref().unwrap();
    assert_eq!(madt.local_apic_address, 0x1_FEE0_0000);
    let processors: Vec<_> = madt
        .processors
        .iter()
        .map(|p| (p.uid, p.apic_id, p.enabled, p.online_capable, p.x2apic))
        .collect();
    assert_eq!(
        processors,
        [
            (0, 0, true, false, false),
            (1, 300, true, false, true),
            (2, 2, false, true, false),
            (3, 301, false, false, true),
            (4, 0, true, false, true),
        ]
    );
    assert_eq!(madt.overrides[0].polarity, Polarity::ActiveLow);
    assert_eq!(madt.overrides[0].trigger, Trigger::Level);
    // Enabled cores only, each APIC ID once, all on node 0 without an SRAT.
    let cores: Vec<_> = acpi
        .topology()
        .cores
        .iter()
        .map(|c| (c.apic_id, c.node))
        .collect();
    assert_eq!(cores, [(0, 0), (300, 0)]);
}

#[test]
fn online_capable_needs_madt_revision_5() {
    let acpi = parse(
        &Machine::new().table(madt(4, &[&lapic(0, 0, 0b10)])).rsdt(),
        RSDP,
    )
    .unwrap();
    assert!(!acpi.madt.unwrap().processors[0].online_capable);
}

// --- SRAT and SLIT ------------------------------------------------------------------------

#[test]
fn srat_domains_are_renumbered_in_order_of_appearance() {
    const HOTPLUG: u32 = 0b11;
    #[rustfmt::skip]
    let matrix = [
        10, 11, 12, 13,
        21, 10, 22, 23,
        31, 32, 10, 33,
        41, 42, 43, 10,
    ];
    let acpi = parse(
        &Machine::new()
            .table(madt(
                5,
                &[
                    &lapic(0, 0, 1),
                    &lapic(1, 1, 1),
                    &x2apic(2, 500, 1),
                    &lapic(3, 3, 1),
                ],
            ))
            .table(srat(
                3,
                &[
                    &cpu_affinity(0, 3, [0; 3], true),
                    &cpu_affinity(1, 1, [0; 3], true),
                    &x2apic_affinity(500, 3, true),
                    &cpu_affinity(9, 2, [0; 3], false),
                    &mem_affinity(0x10_0000, 0x100_0000, 1, 1),
                    &mem_affinity(0, 0x9_F000, 3, 1),
                    &mem_affinity(0x200_0000, 0x100_0000, 2, 0),
                    &mem_affinity(0x300_0000, 0x100_0000, 2, HOTPLUG),
                    &mem_affinity(0x400_0000, 0, 2, 1),
                    &mem_affinity(0x500_0000, 0x100_0000, 0, 1),
                ],
            ))
            .table(slit(4, &matrix))
            .rsdt(),
        RSDP,
    )
    .unwrap();
    let srat = acpi.srat.as_ref().unwrap();
    assert_eq!(srat.processors.len(), 4);
    assert_eq!(srat.memory.len(), 6);
    assert!(srat.memory[3].hot_pluggable);

    let topology = acpi.topology();
    // Domain 3 -> node 0, 1 -> node 1, 0 -> node 2; domain 2 has only a disabled processor,
    // a disabled range, a hot-pluggable range and an empty range, so it gets no node.
    assert_eq!(topology.nodes, 3);
    let cores: Vec<_> = topology.cores.iter().map(|c| (c.apic_id, c.node)).collect();
    // APIC 3 has no affinity entry: node 0.
    assert_eq!(cores, [(0, 0), (1, 1), (500, 0), (3, 0)]);
    let memory: Vec<_> = topology
        .memory
        .iter()
        .map(|m| (m.base, m.length, m.node))
        .collect();
    assert_eq!(
        memory,
        [
            (0x10_0000, 0x100_0000, 1),
            (0, 0x9_F000, 0),
            (0x500_0000, 0x100_0000, 2),
        ]
    );
    // Distances follow the domains: node 0 is domain 3, node 1 domain 1, node 2 domain 0.
    assert_eq!(topology.distance(0, 0), 10);
    assert_eq!(topology.distance(0, 1), 42);
    assert_eq!(topology.distance(1, 0), 23);
    assert_eq!(topology.distance(2, 0), 13);
    assert_eq!(topology.distance(0, 2), 41);
    assert_eq!(topology.distance(3, 0), 255);
    assert_eq!(topology.node_of(0x9_EFFF), Some(0));
    assert_eq!(topology.node_of(0x9_F000), None);
    assert_eq!(topology.node_of(0x110_0000), None);
    assert_eq!(topology.node_of(u64::MAX), None);
    let spans: Vec<_> = topology
        .split_by_node(0x9_0000, u64::MAX)
        .iter()
        .map(|s| (s.base, s.length, s.node))
        .collect();
    assert_eq!(
        spans,
        [
            (0x9_0000, 0xF000, Some(0)),
            (0x9_F000, 0x10_0000 - 0x9_F000, None),
            (0x10_0000, 0x100_0000, Some(1)),
            (0x110_0000, 0x500_0000 - 0x110_0000, None),
            (0x500_0000, 0x100_0000, Some(2)),
            (0x600_0000, u64::MAX - 0x600_0000 + 1, None),
        ]
    );
    assert!(topology.split_by_node(0x1234, 0).is_empty());
}

#[test]
fn srat_upper_domain_bits_need_revision_2() {
    let tables = |revision| {
        Machine::new()
            .table(madt(1, &[&lapic(0, 0, 1), &lapic(1, 1, 1)]))
            .table(srat(
                revision,
                &[
                    &cpu_affinity(0, 0, [1, 0, 0], true),
                    &cpu_affinity(1, 0, [0; 3], true),
                ],
            ))
            .rsdt()
    };
    let old = parse(&tables(1), RSDP).unwrap();
    assert_eq!(old.srat.as_ref().unwrap().processors[0].domain, 0);
    assert_eq!(old.topology().nodes, 1);
    let new = parse(&tables(2), RSDP).unwrap();
    assert_eq!(new.srat.as_ref().unwrap().processors[0].domain, 0x100);
    let topology = new.topology();
    assert_eq!(topology.nodes, 2);
    // No SLIT: 10 local, 20 remote.
    assert_eq!(topology.distance(0, 1), 20);
    assert_eq!(topology.distance(1, 1), 10);
}

#[test]
fn slit_smaller_than_the_domains_falls_back_to_defaults() {
    let acpi = parse(
        &Machine::new()
            .table(srat(
                3,
                &[&x2apic_affinity(0, 0, true), &x2apic_affinity(1, 5, true)],
            ))
            .table(slit(2, &[10, 15, 15, 10]))
            .rsdt(),
        RSDP,
    )
    .unwrap();
    let slit = acpi.slit.as_ref().unwrap();
    assert_eq!(slit.distance(0, 1), Some(15));
    assert_eq!(slit.distance(0, 2), None);
    let topology = acpi.topology();
    assert_eq!(topology.distance(0, 0), 10);
    assert_eq!(topology.distance(0, 1), 20);
    assert_eq!(topology.distance(1, 1), 10);
}

// --- FADT and HPET ------------------------------------------------------------------------

#[test]
fn fadt_prefers_extended_fields() {
    let mut machine = Machine::new();
    let dsdt = machine.place(sdt(b"DSDT", 2, &[0x5B, 0x80]));
    let mut facs = b"FACS".to_vec();
    facs.extend_from_slice(&64u32.to_le_bytes());
    facs.resize(64, 0);
    let facs = machine.place(facs);
    let flags: u32 = 1 << 8 | 1 << 10;
    let memory = machine
        .table(fadt(
            276,
            &[
                (36, &u32::try_from(facs).unwrap().to_le_bytes()),
                (40, &0xDEAD_0000u32.to_le_bytes()),
                (46, &9u16.to_le_bytes()),
                (64, &0x404u32.to_le_bytes()),
                (68, &0x4404u32.to_le_bytes()),
                (76, &0x408u32.to_le_bytes()),
                (112, &flags.to_le_bytes()),
                (116, &gas(1, 8, 0xCF9)),
                (128, &[6]),
                (140, &dsdt.to_le_bytes()),
                (172, &gas(1, 16, 0x1004)),
                (208, &gas(0, 32, 0xFED0_1000)),
            ],
        ))
        .rsdt();
    let acpi = parse(&memory, RSDP).unwrap();
    let fadt = acpi.fadt.unwrap();
    assert_eq!(fadt.dsdt, Some(dsdt), "X_DSDT wins over DSDT");
    assert_eq!(fadt.facs, Some(facs));
    assert_eq!(fadt.sci_interrupt, 9);
    assert_eq!(fadt.pm1a_control, Some(0x1004), "X_PM1a_CNT_BLK wins");
    assert_eq!(
        fadt.pm1b_control,
        Some(0x4404),
        "zero X_ field: legacy field"
    );
    assert_eq!(
        fadt.pm_timer, None,
        "a PM timer in memory space is not a port"
    );
    assert_eq!(
        fadt.reset,
        Some(ResetRegister {
            register: GenericAddress {
                space: AddressSpace::SystemIo,
                bit_width: 8,
                bit_offset: 0,
                access_size: 1,
                address: 0xCF9,
            },
            value: 6,
        })
    );
    let signatures: Vec<_> = acpi.tables.iter().map(|t| t.signature).collect();
    assert_eq!(signatures, [*b"RSDT", *b"FACP", *b"DSDT", *b"FACS"]);
}

#[test]
fn fadt_legacy_fields_and_missing_blocks() {
    let acpi = parse(
        &Machine::new()
            .table(fadt(
                116,
                &[
                    (64, &0xB004u32.to_le_bytes()),
                    (68, &0x1_0000u32.to_le_bytes()),
                    (76, &0xB008u32.to_le_bytes()),
                    (112, &(1u32 << 8 | 1 << 10 | 1 << 20).to_le_bytes()),
                ],
            ))
            .rsdt(),
        RSDP,
    )
    .unwrap();
    let fadt = acpi.fadt.unwrap();
    assert_eq!(fadt.pm1a_control, Some(0xB004));
    assert_eq!(fadt.pm1b_control, None, "beyond port 0xFFFF");
    let timer = fadt.pm_timer.unwrap();
    assert_eq!((timer.port, timer.extended), (0xB008, true));
    assert_eq!(fadt.reset, None, "RESET_REG_SUP but the table is too short");
    assert!(fadt.hardware_reduced);
    assert_eq!((fadt.dsdt, fadt.facs), (None, None));
    assert_eq!(acpi.tables.len(), 2);
}

#[test]
fn hpet_table() {
    let mut body = 0x8086_A201u32.to_le_bytes().to_vec();
    body.extend_from_slice(&gas(0, 64, 0xFED0_0000));
    body.extend_from_slice(&[1, 0x80, 0, 0]);
    let acpi = parse(&Machine::new().table(sdt(b"HPET", 1, &body)).rsdt(), RSDP).unwrap();
    let hpet = acpi.hpet.unwrap();
    assert_eq!(hpet.address, 0xFED0_0000);
    assert_eq!(hpet.block_id, 0x8086_A201);
    assert_eq!(hpet.number, 1);
    assert_eq!(hpet.min_tick, 0x80);
}

// --- RSDP discovery -----------------------------------------------------------------------

/// A memory with the BDA's EBDA word set to `ebda_segment` and a zeroed BIOS area.
fn bios_memory(ebda_segment: u16) -> (Memory, Vec<u8>) {
    let mut memory = Memory::default();
    memory.put(0x40E, ebda_segment.to_le_bytes());
    (memory, vec![0; 0x20000])
}

#[test]
fn find_rsdp_skips_invalid_candidates() {
    let (mut memory, mut area) = bios_memory(0);
    let good = rsdp(2, 0x1234, 0x5678);
    // Misaligned, bad checksum, bad extended checksum, then a good one.
    area[0x104..0x104 + 20].copy_from_slice(&rsdp(0, 1, 0));
    let mut bad = rsdp(0, 2, 0);
    bad[16] ^= 1;
    area[0x200..0x200 + 20].copy_from_slice(&bad);
    let mut bad_ext = good.clone();
    bad_ext[35] ^= 1;
    area[0x300..0x300 + 36].copy_from_slice(&bad_ext);
    area[0x1_FFE0..].copy_from_slice(&[&good[..], &[0; 28]].concat()[..32]);
    area[0x1_0010..0x1_0010 + 36].copy_from_slice(&good);
    memory.put(0xE0000, area);
    assert_eq!(find_rsdp(&memory), Ok(0xF0010));
}

#[test]
fn find_rsdp_searches_the_ebda_first() {
    let (mut memory, mut area) = bios_memory(0x9FC0);
    area[0x1_0000..0x1_0000 + 20].copy_from_slice(&rsdp(0, 1, 0));
    memory.put(0xE0000, area);
    let mut ebda = vec![0; 1024];
    ebda[0x3F0..].copy_from_slice(&rsdp(0, 2, 0)[..16]);
    ebda[0x20..0x20 + 20].copy_from_slice(&rsdp(0, 2, 0));
    memory.put(0x9FC00, ebda);
    assert_eq!(find_rsdp(&memory), Ok(0x9FC20));
}

#[test]
fn find_rsdp_reports_absence_and_unreadable_areas() {
    let (mut memory, area) = bios_memory(0);
    assert_eq!(
        find_rsdp(&memory),
        Err(AcpiError::Unreadable {
            phys: 0xE0000,
            len: 1024
        })
    );
    memory.put(0xE0000, area);
    assert_eq!(find_rsdp(&memory), Err(AcpiError::RsdpNotFound));
    // An EBDA segment outside conventional memory is not searched (nor read).
    memory.put(0x40E, 0xF000u16.to_le_bytes());
    assert_eq!(find_rsdp(&memory), Err(AcpiError::RsdpNotFound));
}

// --- Malformed input ------------------------------------------------------------------

#[test]
fn rsdp_errors() {
    let mut memory = Memory::default();
    let invalid = |memory: &Memory| match parse(memory, RSDP) {
        Err(AcpiError::InvalidRsdp { phys: RSDP, reason }) => reason,
        other => panic!("{other:?}"),
    };
    memory.put(RSDP, b"RSD PTX \0\0\0\0\0\0\0\0\0\0\0\0".to_vec());
    assert_eq!(invalid(&memory), "no \"RSD PTR \" signature");
    let mut bad = rsdp(0, 0x2000, 0);
    bad[19] ^= 0x80;
    memory.put(RSDP, bad);
    assert_eq!(invalid(&memory), "bad checksum");
    let mut bad = rsdp(2, 0x2000, 0x3000);
    bad[24] ^= 0x80;
    memory.put(RSDP, bad);
    assert_eq!(invalid(&memory), "bad extended checksum");
    let mut short = rsdp(2, 0x2000, 0x3000);
    short[20] = 20;
    fix_checksum(&mut short, 32);
    memory.put(RSDP, short);
    assert_eq!(invalid(&memory), "extended length out of range");
    assert_eq!(
        parse(&Memory::default(), RSDP),
        Err(AcpiError::Unreadable {
            phys: RSDP,
            len: 20
        })
    );
}

#[test]
fn bad_checksum_names_the_table() {
    let mut table = madt(1, &[&lapic(0, 0, 1)]);
    table[40] ^= 1;
    let error = parse_err(vec![table]);
    assert_eq!(
        error,
        AcpiError::BadChecksum {
            signature: *b"APIC",
            phys: 0x10_0000
        }
    );
    assert_eq!(
        error.to_string(),
        "ACPI table \"APIC\" at 0x100000 has a bad checksum"
    );
}

#[test]
fn table_lengths_out_of_range() {
    let mut short = sdt(b"SSDT", 1, &[]);
    short[4] = 35;
    fix_checksum(&mut short, 9);
    assert!(matches!(
        parse_err(vec![short]),
        AcpiError::BadLength { length: 35, .. }
    ));

    let mut huge = sdt(b"SSDT", 1, &[]);
    huge[4..8].copy_from_slice(&(MAX_TABLE_LENGTH + 1).to_le_bytes());
    assert!(matches!(parse_err(vec![huge]), AcpiError::BadLength { .. }));

    // A table whose length runs past the end of the address space.
    let mut machine = Machine::new();
    machine
        .memory
        .put(u64::MAX - 7, sdt(b"SSDT", 1, &[])[..8].to_vec());
    let memory = machine.entry(u64::MAX - 7).xsdt();
    assert_eq!(
        parse(&memory, RSDP),
        Err(AcpiError::BadLength {
            signature: *b"SSDT",
            phys: u64::MAX - 7,
            length: 36
        })
    );
}

#[test]
fn truncated_tables_are_unreadable() {
    let mut table = madt(1, &[&lapic(0, 0, 1)]);
    table.truncate(40);
    let error = parse_err(vec![table]);
    assert!(matches!(error, AcpiError::Unreadable { .. }), "{error:?}");
    // A pointer to nothing.
    let error = parse(&Machine::new().entry(0x7000_0000).rsdt(), RSDP).unwrap_err();
    assert_eq!(
        error,
        AcpiError::Unreadable {
            phys: 0x7000_0000,
            len: 8
        }
    );
}

#[test]
fn root_table_errors() {
    // An RSDT whose entry array is not a whole number of entries.
    let mut machine = Machine::new();
    let rsdt = machine.place(sdt(b"RSDT", 1, &[0, 0, 1, 0, 0, 0]));
    machine.memory.put(RSDP, rsdp(0, rsdt as u32, 0));
    assert_eq!(
        parse(&machine.memory, RSDP),
        Err(AcpiError::BadLength {
            signature: *b"RSDT",
            phys: rsdt,
            length: 42
        })
    );
    // An XSDT pointer to something else.
    let mut machine = Machine::new();
    let not_xsdt = machine.place(sdt(b"RSDT", 1, &[]));
    machine.memory.put(RSDP, rsdp(2, 0, not_xsdt));
    let error = parse(&machine.memory, RSDP).unwrap_err();
    assert_eq!(
        error,
        AcpiError::BadSignature {
            phys: not_xsdt,
            expected: *b"XSDT",
            found: *b"RSDT"
        }
    );
    assert_eq!(
        error.to_string(),
        "ACPI table at 0x100000 has signature \"RSDT\", expected \"XSDT\""
    );
}

#[test]
fn fadt_pointers_to_the_wrong_tables() {
    let mut machine = Machine::new();
    let ssdt = machine.place(sdt(b"SSDT", 1, &[]));
    let memory = machine
        .table(fadt(
            116,
            &[(40, &u32::try_from(ssdt).unwrap().to_le_bytes())],
        ))
        .rsdt();
    assert_eq!(
        parse(&memory, RSDP),
        Err(AcpiError::BadSignature {
            phys: ssdt,
            expected: *b"DSDT",
            found: *b"SSDT"
        })
    );
    let mut machine = Machine::new();
    let mut facs = b"FACS".to_vec();
    facs.extend_from_slice(&32u32.to_le_bytes());
    let facs = machine.place(facs);
    let memory = machine
        .table(fadt(
            116,
            &[(36, &u32::try_from(facs).unwrap().to_le_bytes())],
        ))
        .rsdt();
    assert!(matches!(
        parse(&memory, RSDP),
        Err(AcpiError::BadLength { signature, length: 32, .. }) if &signature == b"FACS"
    ));
}

#[test]
fn tables_shorter_than_their_fixed_fields() {
    for (table, length) in [
        (sdt(b"APIC", 1, &[0; 7]), 43),
        (sdt(b"SRAT", 1, &[0; 11]), 47),
        (sdt(b"SLIT", 1, &[0; 7]), 43),
        (sdt(b"FACP", 1, &[0; 64]), 100),
        (sdt(b"HPET", 1, &[0; 19]), 55),
    ] {
        let signature = [table[0], table[1], table[2], table[3]];
        assert_eq!(
            parse_err(vec![table]),
            AcpiError::BadLength {
                signature,
                phys: 0x10_0000,
                length
            }
        );
    }
}

/// The error for an entry at `offset` of the first table [`parse_err`] places.
fn bad_entry(signature: &[u8; 4], offset: usize) -> AcpiError {
    AcpiError::BadEntry {
        signature: *signature,
        phys: 0x10_0000,
        offset,
    }
}

#[test]
fn madt_entries_that_would_loop_or_overrun() {
    // Length 0 and 1 would never advance.
    assert_eq!(
        parse_err(vec![madt(1, &[&lapic(0, 0, 1), &[0, 0]])]),
        bad_entry(b"APIC", 52)
    );
    assert_eq!(
        parse_err(vec![madt(1, &[&[9, 1, 0, 0]])]),
        bad_entry(b"APIC", 44)
    );
    // Running past the end of the table.
    assert_eq!(
        parse_err(vec![madt(1, &[&[0, 8, 0, 0]])]),
        bad_entry(b"APIC", 44)
    );
    // A lone trailing byte: no room for a length.
    assert_eq!(parse_err(vec![madt(1, &[&[1]])]), bad_entry(b"APIC", 44));
    // Shorter than its type: a Local APIC entry needs 8 bytes, an x2APIC one 16.
    assert_eq!(
        parse_err(vec![madt(1, &[&[0, 4, 0, 0]])]),
        bad_entry(b"APIC", 44)
    );
    let short_x2apic = &x2apic(0, 1, 1)[..12];
    let mut entry = short_x2apic.to_vec();
    entry[1] = 12;
    assert_eq!(parse_err(vec![madt(1, &[&entry])]), bad_entry(b"APIC", 44));
    let error = bad_entry(b"APIC", 44).to_string();
    assert_eq!(
        error,
        "ACPI table \"APIC\" at 0x100000 has a malformed entry at offset 0x2c"
    );
}

#[test]
fn srat_malformed_entries() {
    assert_eq!(parse_err(vec![srat(1, &[&[1, 0]])]), bad_entry(b"SRAT", 48));
    let mut short = mem_affinity(0, 0x1000, 0, 1);
    short.truncate(24);
    short[1] = 24;
    assert_eq!(parse_err(vec![srat(1, &[&short])]), bad_entry(b"SRAT", 48));
    // An enabled memory range that wraps around the address space.
    let wraps = mem_affinity(u64::MAX - 0xFFF, 0x2000, 0, 1);
    assert_eq!(
        parse_err(vec![srat(1, &[&cpu_affinity(0, 0, [0; 3], true), &wraps])]),
        bad_entry(b"SRAT", 64)
    );
    // The same range disabled is ignored.
    let disabled = mem_affinity(u64::MAX - 0xFFF, 0x2000, 0, 0);
    let memory = Machine::new().table(srat(1, &[&disabled])).rsdt();
    assert!(parse(&memory, RSDP).unwrap().topology().memory.is_empty());
}

#[test]
fn slit_locality_count_does_not_fit() {
    let error = |n: u64, cells: usize| parse_err(vec![slit(n, &vec![10; cells])]);
    let bad_length = |length| AcpiError::BadLength {
        signature: *b"SLIT",
        phys: 0x10_0000,
        length,
    };
    assert_eq!(error(3, 8), bad_length(44 + 8));
    assert_eq!(error(u64::MAX, 4), bad_length(48));
    assert_eq!(error(1 << 32, 4), bad_length(48));
}

#[test]
fn signatures_are_escaped_in_messages() {
    let error = AcpiError::BadChecksum {
        signature: [b'A', 0, 0xFF, b'"'],
        phys: 0x10,
    };
    assert_eq!(
        error.to_string(),
        "ACPI table \"A\\x00\\xff\"\" at 0x10 has a bad checksum"
    );
}
