//! Tests of the `acpi` crate: on tables captured from QEMU (`qemu`) and on synthesized tables,
//! well-formed and malformed (`synthetic`).

mod memory;
mod qemu;
mod synthetic;
