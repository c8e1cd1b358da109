//! A fake `TableMemory` for the tests: tables in a map at made-up physical addresses.

#![allow(dead_code)]

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;
use vspace::{AddressSpace, TableMemory};

/// The shared state of a [`FakeMemory`], kept by the test to look at after the address space
/// is dropped.
#[derive(Default)]
pub struct Inner {
    /// Live tables by physical address.
    pub tables: HashMap<u64, [u64; 512]>,
    /// The next physical address handed out.
    pub next: u64,
    /// Distance between handed-out addresses.
    pub stride: u64,
    /// Freed addresses, reused last-in first-out (so reuse after free is exercised).
    pub free: Vec<u64>,
    /// How many more tables may be live at once (`None`: unlimited).
    pub budget: Option<usize>,
    /// Tables ever allocated.
    pub allocations: usize,
}

/// A `TableMemory` over a map; clones share the same state.
#[derive(Clone)]
pub struct FakeMemory(pub Rc<RefCell<Inner>>);

impl FakeMemory {
    /// A memory handing out tables at `base`, `base + stride`, ...
    pub fn new(base: u64, stride: u64) -> Self {
        FakeMemory(Rc::new(RefCell::new(Inner {
            next: base,
            stride,
            ..Inner::default()
        })))
    }

    /// Tables currently allocated.
    pub fn live(&self) -> usize {
        self.0.borrow().tables.len()
    }

    /// Allows only `n` more live tables than now (`None`: unlimited).
    pub fn set_budget(&self, n: Option<usize>) {
        self.0.borrow_mut().budget = n;
    }
}

impl TableMemory for FakeMemory {
    fn allocate_table(&mut self) -> Option<u64> {
        let mut m = self.0.borrow_mut();
        if let Some(b) = m.budget.as_mut() {
            if *b == 0 {
                return None;
            }
            *b -= 1;
        }
        let phys = match m.free.pop() {
            Some(p) => p,
            None => {
                let p = m.next;
                m.next += m.stride;
                p
            }
        };
        assert!(
            m.tables.insert(phys, [0; 512]).is_none(),
            "table {phys:#x} handed out twice"
        );
        m.allocations += 1;
        Some(phys)
    }

    fn free_table(&mut self, phys: u64) {
        let mut m = self.0.borrow_mut();
        let t = m
            .tables
            .remove(&phys)
            .unwrap_or_else(|| panic!("freeing unknown table {phys:#x}"));
        // (Not while unwinding from another failure: a panic in `Drop` would abort.)
        if !std::thread::panicking() {
            assert!(
                t.iter().all(|&e| e == 0),
                "freeing non-empty table {phys:#x}"
            );
        }
        m.free.push(phys);
        if let Some(b) = m.budget.as_mut() {
            *b += 1;
        }
    }

    fn read(&self, table: u64, index: usize) -> u64 {
        let m = self.0.borrow();
        m.tables
            .get(&table)
            .unwrap_or_else(|| panic!("reading unknown table {table:#x}"))[index]
    }

    fn write(&mut self, table: u64, index: usize, entry: u64) {
        let mut m = self.0.borrow_mut();
        m.tables
            .get_mut(&table)
            .unwrap_or_else(|| panic!("writing unknown table {table:#x}"))[index] = entry;
    }
}

/// Kernel-half entries that look like pointers to kernel PDPTs (never walked by the tests).
pub fn kernel_entries() -> [u64; 256] {
    let mut k = [0u64; 256];
    for (i, e) in k.iter_mut().enumerate() {
        if i % 3 != 1 {
            *e = (0xdead_0000_0000 + (i as u64) * 0x1000) | vspace::TABLE_FLAGS;
        }
    }
    k
}

/// A fresh address space over a fresh fake memory with tables at `base`.
pub fn space_at(base: u64) -> (AddressSpace<FakeMemory>, FakeMemory) {
    let mem = FakeMemory::new(base, 0x1000);
    let space = AddressSpace::new(mem.clone(), &kernel_entries()).expect("new");
    (space, mem)
}

/// A fresh address space with tables at 16 MiB.
pub fn space() -> (AddressSpace<FakeMemory>, FakeMemory) {
    space_at(0x100_0000)
}
