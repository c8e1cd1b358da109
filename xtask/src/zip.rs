//! The zip archive of Hare's *punzip* workload (thesis Table 5.1: parallel `unzip` of man
//! pages): `/test/punzip.zip` in both initramfs images, made here, the same bytes every time,
//! so that Reef and Linux unpack the same archive. It holds [`FILES`] text files of man-page
//! size in [`SECTIONS`] directories (`man1/page00.1`, ...), stored without compression, as a
//! zip of already compressed man pages is; busybox `unzip` checks each file's CRC-32.

/// Man sections, one directory each.
pub const SECTIONS: [u32; 5] = [1, 2, 3, 5, 8];
/// Files in the archive.
pub const FILES: usize = 100;
/// Its path in the initramfs images (without the leading `/`).
pub const PATH: &str = "test/punzip.zip";

/// CRC-32 (IEEE 802.3, reflected), as zip records it.
pub fn crc32(data: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &b in data {
        crc ^= u32::from(b);
        for _ in 0..8 {
            crc = if crc & 1 != 0 {
                crc >> 1 ^ 0xedb8_8320
            } else {
                crc >> 1
            };
        }
    }
    !crc
}

/// Text of file `n`: lines of words from a fixed generator, 1000 to 4000 bytes.
fn page(n: usize) -> Vec<u8> {
    const WORDS: [&str; 12] = [
        "the",
        "file",
        "server",
        "reads",
        "directory",
        "entry",
        "returns",
        "option",
        "core",
        "block",
        "process",
        "message",
    ];
    let len = 1000 + (n * 397) % 3000;
    let mut x = n as u64 * 0x9e37_79b9 + 1;
    let mut out = format!(".TH PAGE{n} {}\n", SECTIONS[n % SECTIONS.len()]).into_bytes();
    while out.len() < len {
        x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
        out.extend_from_slice(WORDS[(x >> 59) as usize % WORDS.len()].as_bytes());
        out.push(if (x >> 40).is_multiple_of(9) {
            b'\n'
        } else {
            b' '
        });
    }
    out.truncate(len);
    out
}

/// The archive's entries in order: each section's directory, then its files.
fn entries() -> Vec<(String, Option<Vec<u8>>)> {
    let mut e = Vec::new();
    for (s, sec) in SECTIONS.iter().enumerate() {
        e.push((format!("man{sec}/"), None));
        for n in (s..FILES).step_by(SECTIONS.len()) {
            e.push((format!("man{sec}/page{n:02}.{sec}"), Some(page(n))));
        }
    }
    e
}

fn u16le(out: &mut Vec<u8>, v: usize) {
    out.extend_from_slice(&u16::try_from(v).expect("fits 16 bits").to_le_bytes());
}

fn u32le(out: &mut Vec<u8>, v: usize) {
    out.extend_from_slice(&u32::try_from(v).expect("fits 32 bits").to_le_bytes());
}

/// The archive's bytes.
pub fn archive() -> Vec<u8> {
    // 1980-01-01 00:00, the earliest date zip can say.
    const DATE: usize = 1 << 5 | 1;
    let mut out = Vec::new();
    let mut central = Vec::new();
    let entries = entries();
    for (name, data) in &entries {
        let bytes = data.as_deref().unwrap_or_default();
        let crc = crc32(bytes) as usize;
        let offset = out.len();
        u32le(&mut out, 0x0403_4b50);
        for v in [10, 0, 0, 0, DATE] {
            u16le(&mut out, v);
        }
        for v in [crc, bytes.len(), bytes.len()] {
            u32le(&mut out, v);
        }
        u16le(&mut out, name.len());
        u16le(&mut out, 0);
        out.extend_from_slice(name.as_bytes());
        out.extend_from_slice(bytes);
        // Made by Unix (3) with zip 3.0: the external attributes hold the mode (and MS-DOS's
        // directory bit).
        let external = if data.is_some() {
            0o100_644 << 16
        } else {
            0o40_755 << 16 | 0x10
        };
        u32le(&mut central, 0x0201_4b50);
        for v in [0x031e, 10, 0, 0, 0, DATE] {
            u16le(&mut central, v);
        }
        for v in [crc, bytes.len(), bytes.len()] {
            u32le(&mut central, v);
        }
        for v in [name.len(), 0, 0, 0, 0] {
            u16le(&mut central, v);
        }
        u32le(&mut central, external);
        u32le(&mut central, offset);
        central.extend_from_slice(name.as_bytes());
    }
    let at = out.len();
    out.extend_from_slice(&central);
    u32le(&mut out, 0x0605_4b50);
    for v in [0, 0, entries.len(), entries.len()] {
        u16le(&mut out, v);
    }
    u32le(&mut out, central.len());
    u32le(&mut out, at);
    u16le(&mut out, 0);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn le16(b: &[u8], at: usize) -> usize {
        usize::from(u16::from_le_bytes([b[at], b[at + 1]]))
    }

    fn le32(b: &[u8], at: usize) -> usize {
        u32::from_le_bytes(b[at..at + 4].try_into().unwrap()) as usize
    }

    #[test]
    fn crc32_of_the_check_string() {
        assert_eq!(crc32(b"123456789"), 0xcbf4_3926);
    }

    #[test]
    fn the_archive_reads_back_entry_by_entry() {
        let a = archive();
        assert_eq!(a, archive(), "the same bytes every time");
        let end = a.len() - 22;
        assert_eq!(le32(&a, end), 0x0605_4b50);
        let count = le16(&a, end + 10);
        assert_eq!(count, FILES + SECTIONS.len());
        let mut at = le32(&a, end + 16);
        let mut files = 0;
        for _ in 0..count {
            assert_eq!(le32(&a, at), 0x0201_4b50);
            let (crc, size) = (le32(&a, at + 16), le32(&a, at + 24));
            let name_len = le16(&a, at + 28);
            let local = le32(&a, at + 42);
            let name = &a[at + 46..at + 46 + name_len];
            assert_eq!(le32(&a, local), 0x0403_4b50);
            assert_eq!(&a[local + 30..local + 30 + name_len], name);
            let data = &a[local + 30 + name_len..local + 30 + name_len + size];
            assert_eq!(crc32(data), crc as u32);
            if !name.ends_with(b"/") {
                files += 1;
                assert!((1000..4000).contains(&size));
            }
            at += 46 + name_len;
        }
        assert_eq!(files, FILES);
    }
}
