//! A sparse physical memory for tests: byte blobs at physical addresses.

use std::path::PathBuf;

use acpi::{AcpiError, PhysMemory};

/// Physical memory made of blobs; a read must lie entirely inside one blob, anything else is
/// [`AcpiError::Unreadable`].
#[derive(Default, Clone)]
pub struct Memory {
    blobs: Vec<(u64, Vec<u8>)>,
}

/// One file of a captured configuration: its name's label, its address and its bytes.
pub struct Blob {
    /// The part of the file name before `@`: a table signature, `rsdp`, `bios`, `bda`...
    pub label: String,
    /// The physical address the bytes were captured from.
    pub phys: u64,
    /// The bytes.
    pub bytes: Vec<u8>,
}

/// The `<label>@<hexaddr>.bin` files of `tests/data/<config>/`, sorted by address.
pub fn captured_blobs(config: &str) -> Vec<Blob> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(config);
    let mut blobs = Vec::new();
    for entry in std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_str().unwrap().to_owned();
        let Some((label, rest)) = name.split_once('@') else {
            continue;
        };
        let hex = rest
            .strip_suffix(".bin")
            .expect("captured files end in .bin");
        blobs.push(Blob {
            label: label.to_owned(),
            phys: u64::from_str_radix(hex, 16).expect("hex address in file name"),
            bytes: std::fs::read(&path).unwrap(),
        });
    }
    blobs.sort_by_key(|blob| blob.phys);
    blobs
}

impl Memory {
    /// Memory holding every blob captured for `config`.
    pub fn captured(config: &str) -> Self {
        let mut memory = Self::default();
        for blob in captured_blobs(config) {
            memory.put(blob.phys, blob.bytes);
        }
        memory
    }

    /// Places `bytes` at `phys`, replacing what overlapping earlier blobs held for reads.
    pub fn put(&mut self, phys: u64, bytes: impl Into<Vec<u8>>) {
        self.blobs.insert(0, (phys, bytes.into()));
    }
}

impl PhysMemory for Memory {
    fn read(&self, phys: u64, buf: &mut [u8]) -> Result<(), AcpiError> {
        let start = u128::from(phys);
        let end = start + buf.len() as u128;
        for (base, bytes) in &self.blobs {
            let base = u128::from(*base);
            if base <= start && end <= base + bytes.len() as u128 {
                let offset = (start - base) as usize;
                buf.copy_from_slice(&bytes[offset..offset + buf.len()]);
                return Ok(());
            }
        }
        Err(AcpiError::Unreadable {
            phys,
            len: buf.len(),
        })
    }
}
