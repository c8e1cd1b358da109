//! Variant kernel images (Barrelfish/DC §4.5: a core restarted in another kernel while the
//! others run on): the kernel built with a cargo feature and linked against the boot image's
//! statics, so that both images work on one kernel state; `/boot/NAME` in the initramfs, loaded
//! by `corectl update N /boot/NAME`.
//!
//! The boot image is linked with a map (`kernel/target/reef.map`). Each static is an input
//! section of its own there (`.data.<symbol>`, `.bss.<symbol>`), so the variant's linker script
//! places the variant's section of the same static, whose symbol differs at most in the crate
//! hash and LLVM's `.llvm.N` suffix, at the boot image's address, `NOLOAD`: the variant's code
//! reads and writes the running kernel's statics and carries no copy of them. Its code,
//! constants and the statics that must be its own (sections `.data.image.*`, such as the IDT
//! that holds its handlers' addresses) lie at its own base in the kernel's top 2 GiB. After the
//! link every symbol the variant has in the boot image's data or boot section must sit where
//! the boot image has the same name, and every writable static of the variant must be shared
//! or its own by name; anything else fails the build, naming the static.
//!
//! A `.reef_image` section (`exec::kimage::ImageInfo`'s layout) records the boot image's
//! identity (FNV-1a of its text and read-only data as loaded, which the running kernel computes
//! over its own), the KCB layout, the variant's range and its name; the kernel refuses an image
//! made for another boot image or KCB layout.

use crate::build::{self, Kernel};
use std::path::{Path, PathBuf};
use std::process::Command;

/// A variant image.
pub struct Variant {
    /// Its name, and its file's in `/boot`.
    pub name: &'static str,
    /// The kernel's cargo feature that makes it.
    pub feature: &'static str,
    /// Where its own part starts.
    pub base: u64,
    /// Its cores have no periodic tick (`exec::kimage::IMAGE_TICKLESS`).
    pub tickless: bool,
}

/// The size of the range each variant's own part must fit in.
const SPAN: u64 = 0x1000_0000;

/// The variant images xtask builds.
pub const VARIANTS: &[Variant] = &[
    Variant {
        name: "reef-trace",
        feature: "trace",
        base: 0xffff_ffff_c000_0000,
        tickless: false,
    },
    Variant {
        name: "reef-rt",
        feature: "rt",
        base: 0xffff_ffff_d000_0000,
        tickless: true,
    },
];

/// Where the kernel image is linked (`linker.ld`'s `KERNEL_BASE`).
const KERNEL_BASE: u64 = 0xffff_ffff_8000_0000;
/// The boot image's physical load address (the flat image starts there).
const LOAD_PHYS: u64 = 0x10_0000;

/// One input section of a link map.
struct MapSection {
    /// The output section it went to.
    out: String,
    /// Its address.
    addr: u64,
    /// Its size.
    size: u64,
    /// Its name.
    name: String,
}

/// The input sections of an `ld.lld -Map` file (columns: VMA, LMA, size, alignment, then the
/// output section, or `file:(input section)`, or a symbol, each indented further).
fn parse_map(path: &Path) -> Result<Vec<MapSection>, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let mut out = String::new();
    let mut sections = Vec::new();
    for line in text.lines().skip(1) {
        let Some((numbers, rest)) = split_after_fields(line, 4) else {
            continue;
        };
        let fields: Vec<&str> = numbers.split_whitespace().collect();
        let (Ok(addr), Ok(size)) = (
            u64::from_str_radix(fields[0], 16),
            u64::from_str_radix(fields[2], 16),
        ) else {
            continue;
        };
        let depth = rest.len() - rest.trim_start().len();
        let rest = rest.trim();
        if depth == 1 {
            out = rest.to_string();
        } else if let Some(open) = rest.rfind(":(") {
            sections.push(MapSection {
                out: out.clone(),
                addr,
                size,
                name: rest[open + 2..].trim_end_matches(')').to_string(),
            });
        }
    }
    if sections.is_empty() {
        return Err(format!("{} lists no input sections", path.display()));
    }
    Ok(sections)
}

/// `line` cut after its first `n` whitespace-separated fields (`None` if it has fewer).
fn split_after_fields(line: &str, n: usize) -> Option<(&str, &str)> {
    let mut end = 0;
    for _ in 0..n {
        let start = end + (line[end..].len() - line[end..].trim_start().len());
        let len = line[start..].find(char::is_whitespace)?;
        end = start + len;
    }
    Some(line.split_at(end))
}

/// Whether an input section holds a writable static (not a constant, not the unwinder's
/// personality reference): one both images must share unless it is an image's own.
fn is_static(name: &str) -> bool {
    (name.starts_with(".data.") || name.starts_with(".bss."))
        && !name.starts_with(".data.rel.ro")
        && !name.starts_with(".data.DW.ref.")
}

/// Whether a static belongs to each image on its own (`#[link_section = ".data.image.*"]`).
fn is_image_own(name: &str) -> bool {
    name.starts_with(".data.image.") || name.starts_with(".bss.image.")
}

/// `name` with the legacy mangling's hash (`17h` and 16 hex digits) and LLVM's `.llvm.N`
/// suffix taken out: what names one static in both images.
fn normalize(name: &str) -> String {
    let mut s = strip_llvm(name).to_string();
    while let Some(at) = find_hash(&s) {
        s.replace_range(at..at + 20, "");
    }
    s
}

/// `name` without a trailing `.llvm.<digits>`.
fn strip_llvm(name: &str) -> &str {
    match name.rfind(".llvm.") {
        Some(at) if name[at + 6..].bytes().all(|b| b.is_ascii_digit()) => &name[..at],
        _ => name,
    }
}

/// The offset of a `17h<16 hex>E` hash in a legacy-mangled name.
fn find_hash(s: &str) -> Option<usize> {
    let b = s.as_bytes();
    (0..b.len().saturating_sub(19)).find(|&i| {
        &b[i..i + 3] == b"17h"
            && b[i + 3..i + 19].iter().all(u8::is_ascii_hexdigit)
            && b[i + 19] == b'E'
    })
}

/// A linker-script pattern matching the variant's section of the boot image's `name`: the
/// whole static, or its part at offset 0 when LLVM's global SRA split it in the variant and
/// not in the boot image (`X.0`, which lies where `X` starts; another part of it would be a
/// static of the variant's own, which fails the build).
fn pattern(name: &str) -> String {
    let mut p = strip_llvm(name).to_string();
    if let Some(at) = find_hash(&p) {
        p.replace_range(at + 3..at + 19, "????????????????");
    }
    format!("{p} {p}.llvm.* {p}.0 {p}.0.llvm.*")
}

/// The static that `name` is the first part of, if it names one that LLVM's global SRA split
/// (`X.0`, at `X`'s address).
fn split_from(name: &str) -> Option<&str> {
    strip_llvm(name).strip_suffix(".0")
}

/// The variant's linker script: the boot section and every shared static at the boot image's
/// addresses (`NOLOAD`), then the variant's own image at `base`.
fn script(v: &Variant, boot: &[MapSection]) -> String {
    let mut shared: Vec<&MapSection> = boot
        .iter()
        .filter(|s| s.size > 0 && is_static(&s.name) && !is_image_own(&s.name))
        .collect();
    shared.sort_by_key(|s| s.addr);
    let mut out = format!(
        "/* The variant image {name}, made by xtask/src/variant.rs from the boot image's map. */\n\
         ENTRY(reef_image_entry)\n\
         SECTIONS\n{{\n    \
         .boot 0x100000 (NOLOAD) : {{ KEEP(*(.multiboot)) *(.boot.text) . = ALIGN(4096); \
         *(.boot.data) }}\n",
        name = v.name
    );
    for (i, s) in shared.iter().enumerate() {
        out.push_str(&format!(
            "    .reef.shared.{i} {:#x} (NOLOAD) : {{ *({}) }}\n",
            s.addr,
            pattern(&s.name)
        ));
    }
    out.push_str(&format!(
        "    . = {base:#x};\n    \
         __text_start = .;\n    \
         .text : {{ *(.text .text.*) }}\n    \
         . = ALIGN(4096);\n    \
         __text_end = .;\n    \
         __rodata_start = .;\n    \
         .rodata : {{ *(.rodata .rodata.*) *(.gcc_except_table .gcc_except_table.*) }}\n    \
         . = ALIGN(4096);\n    \
         __rodata_end = .;\n    \
         __data_start = .;\n    \
         .data : {{ *(.data .data.*) *(.got .got.*) }}\n    \
         __load_end_phys = .;\n    \
         . = ALIGN(4096);\n    \
         .bss : {{ *(.bss .bss.*) *(COMMON) }}\n    \
         . = ALIGN(4096);\n    \
         __data_end = .;\n    \
         __image_end_phys = .;\n    \
         __image_start_phys = {base:#x};\n    \
         /DISCARD/ : {{ *(.eh_frame .eh_frame_hdr .eh_frame.*) *(.note .note.*) *(.comment) }}\n\
         }}\n",
        base = v.base
    ));
    out
}

/// A symbol of an ELF file.
struct Symbol {
    value: u64,
    size: u64,
    name: String,
}

/// The symbols of `elf` (`readelf -sW`).
fn symbols(elf: &Path) -> Result<Vec<Symbol>, String> {
    let out = Command::new("readelf")
        .arg("-sW")
        .arg(elf)
        .output()
        .map_err(|e| format!("cannot run readelf: {e}"))?;
    if !out.status.success() {
        return Err(format!("readelf -s {} failed", elf.display()));
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let mut syms = Vec::new();
    for line in text.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() < 8 || !f[0].ends_with(':') {
            continue;
        }
        let (Ok(value), Ok(size)) = (u64::from_str_radix(f[1], 16), parse_size(f[2])) else {
            continue;
        };
        syms.push(Symbol {
            value,
            size,
            name: f[7].to_string(),
        });
    }
    Ok(syms)
}

/// A `readelf` size column: decimal, or hexadecimal with `0x`.
fn parse_size(s: &str) -> Result<u64, std::num::ParseIntError> {
    match s.strip_prefix("0x") {
        Some(hex) => u64::from_str_radix(hex, 16),
        None => s.parse(),
    }
}

/// The value of symbol `name` in `syms`.
fn symbol(syms: &[Symbol], name: &str) -> Result<u64, String> {
    syms.iter()
        .find(|s| s.name == name)
        .map(|s| s.value)
        .ok_or(format!("the boot image has no symbol {name}"))
}

/// Checks the linked variant: every symbol in the boot image's boot section or data lies at the
/// boot image's address for its name, with its size; every writable static left in the
/// variant's own data is an image's own.
fn verify(
    v: &Variant,
    boot: &[Symbol],
    variant: &[Symbol],
    map: &[MapSection],
) -> Result<(), String> {
    let boot_data = symbol(boot, "__data_start")?..symbol(boot, "__data_end")?;
    let boot_section = LOAD_PHYS..symbol(boot, "__text_start")? - KERNEL_BASE;
    let mut by_name: std::collections::HashMap<String, Vec<&Symbol>> = Default::default();
    for s in boot {
        by_name.entry(normalize(&s.name)).or_default().push(s);
    }
    let mut wrong = Vec::new();
    for s in variant {
        if !(boot_data.contains(&s.value) || boot_section.contains(&s.value)) {
            continue;
        }
        let same = by_name.get(&normalize(&s.name)).is_some_and(|b| {
            b.iter()
                .any(|b| b.value == s.value && (b.size == s.size || s.size == 0))
        }) || split_from(&s.name).is_some_and(|whole| {
            by_name
                .get(&normalize(whole))
                .is_some_and(|b| b.iter().any(|b| b.value == s.value && s.size <= b.size))
        });
        if !same {
            wrong.push(format!("{} at {:#x}", s.name, s.value));
        }
    }
    let own: Vec<String> = map
        .iter()
        .filter(|s| (s.out == ".data" || s.out == ".bss") && s.addr >= v.base && s.size > 0)
        .filter(|s| is_static(&s.name) && !is_image_own(&s.name))
        .map(|s| s.name.clone())
        .collect();
    if !wrong.is_empty() {
        return Err(format!(
            "{}: these statics are not where the boot image has them: {}",
            v.name,
            wrong.join(", ")
        ));
    }
    if !own.is_empty() {
        return Err(format!(
            "{}: these statics have no counterpart in the boot image, so the variant would run \
             on a copy of its own (give them a `.data.image.*` section if that is meant, or make \
             both images have them alike): {}",
            v.name,
            own.join(", ")
        ));
    }
    Ok(())
}

/// The boot image's identity: FNV-1a of its text and read-only data, as loaded (from the flat
/// image, which QEMU loads at 1 MiB).
fn boot_identity(kernel: &Kernel, boot: &[Symbol]) -> Result<u64, String> {
    let flat = std::fs::read(&kernel.image)
        .map_err(|e| format!("cannot read {}: {e}", kernel.image.display()))?;
    let offset = |sym: &str| -> Result<usize, String> {
        Ok((symbol(boot, sym)? - KERNEL_BASE - LOAD_PHYS) as usize)
    };
    let range = offset("__text_start")?..offset("__rodata_end")?;
    let bytes = flat
        .get(range)
        .ok_or("the flat image is shorter than its read-only part")?;
    Ok(exec_fnv1a(bytes))
}

/// FNV-1a (64-bit), as `exec::kimage::fnv1a` computes it in the kernel.
fn exec_fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

/// The KCB layout version in the kernel's source (`kcb::KCB_LAYOUT_VERSION`).
fn kcb_layout() -> Result<u32, String> {
    let path = build::root().join("kernel/src/kcb.rs");
    let text = std::fs::read_to_string(&path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    text.lines()
        .find_map(|l| {
            l.trim()
                .strip_prefix("pub const KCB_LAYOUT_VERSION: u32 = ")
                .and_then(|v| v.trim_end_matches(';').parse().ok())
        })
        .ok_or(format!("{} defines no KCB_LAYOUT_VERSION", path.display()))
}

/// The `.reef_image` section's bytes (`exec::kimage::ImageInfo::to_bytes`).
fn info_bytes(v: &Variant, boot_id: u64, kcb_layout: u32) -> Vec<u8> {
    let mut b = vec![0u8; 64];
    b[..8].copy_from_slice(b"REEFIMG1");
    b[8..16].copy_from_slice(&boot_id.to_le_bytes());
    b[16..20].copy_from_slice(&kcb_layout.to_le_bytes());
    b[20..24].copy_from_slice(&u32::from(v.tickless).to_le_bytes());
    b[24..32].copy_from_slice(&v.base.to_le_bytes());
    b[32..40].copy_from_slice(&SPAN.to_le_bytes());
    b[40..40 + v.name.len()].copy_from_slice(v.name.as_bytes());
    b
}

/// Writes `text` to `path` unless it holds it already (cargo rebuilds the variant when its
/// script changes), through a file of this process's renamed into place.
fn write_if_changed(path: &Path, text: &str) -> Result<(), String> {
    if std::fs::read_to_string(path).is_ok_and(|old| old == text) {
        return Ok(());
    }
    let tmp = path.with_extension(format!("{}.tmp", std::process::id()));
    std::fs::write(&tmp, text).map_err(|e| format!("cannot write {}: {e}", tmp.display()))?;
    std::fs::rename(&tmp, path).map_err(|e| format!("cannot rename {}: {e}", tmp.display()))
}

/// The directory the variant images go to (`/boot` in the initramfs).
pub fn boot_dir() -> PathBuf {
    build::root().join("out/boot")
}

/// Builds every variant image against the boot image `kernel` (just built, with its map) into
/// [`boot_dir`] (`NAME`, and `NAME.elf` with its debug information).
pub fn build_all(kernel: &Kernel, boot_map: &Path) -> Result<(), String> {
    let kernel_dir = build::root().join("kernel");
    let boot_map_sections = parse_map(boot_map)?;
    let boot_syms = symbols(&kernel.elf)?;
    let boot_id = boot_identity(kernel, &boot_syms)?;
    let layout = kcb_layout()?;
    let dir = boot_dir();
    std::fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    // Another xtask process may build and install the same files meanwhile: each is written
    // under a name of this process's and renamed into place.
    let mine = |path: PathBuf| {
        let mut name = path.into_os_string();
        name.push(format!(".{}.tmp", std::process::id()));
        PathBuf::from(name)
    };
    for v in VARIANTS {
        eprintln!("xtask: building the variant image {}", v.name);
        let target = kernel_dir.join(format!("target/variant-{}", v.name));
        std::fs::create_dir_all(&target)
            .map_err(|e| format!("cannot create {}: {e}", target.display()))?;
        let ld = target.join("variant.ld");
        let map = target.join("variant.map");
        write_if_changed(&ld, &script(v, &boot_map_sections))?;
        let built = build::cargo_kernel(&kernel_dir, Some(v.feature), &ld, (&target, &map))
            .map_err(|e| format!("variant image {} failed to build: {e}", v.name))?;
        verify(v, &boot_syms, &symbols(&built)?, &parse_map(&map)?)?;
        let elf = dir.join(format!("{}.elf", v.name));
        let elf_tmp = mine(elf.clone());
        std::fs::copy(&built, &elf_tmp)
            .map_err(|e| format!("cannot copy {}: {e}", built.display()))?;
        let info = mine(dir.join(format!("{}.info", v.name)));
        std::fs::write(&info, info_bytes(v, boot_id, layout))
            .map_err(|e| format!("cannot write {}: {e}", info.display()))?;
        let out = dir.join(v.name);
        let out_tmp = mine(out.clone());
        let status = Command::new("objcopy")
            .arg("--strip-debug")
            .arg(format!("--add-section=.reef_image={}", info.display()))
            .arg(&elf_tmp)
            .arg(&out_tmp)
            .status()
            .map_err(|e| format!("cannot run objcopy: {e}"))?;
        let _ = std::fs::remove_file(&info);
        if !status.success() {
            return Err(format!("objcopy failed to make {}", v.name));
        }
        for (from, to) in [(&elf_tmp, &elf), (&out_tmp, &out)] {
            std::fs::rename(from, to)
                .map_err(|e| format!("cannot rename {}: {e}", from.display()))?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_match_across_builds_without_hash_or_llvm_suffix() {
        let boot = ".bss._ZN4reef2mm5NODES17h4cd1850affc2291fE.llvm.2025430915437027233";
        let variant = ".bss._ZN4reef2mm5NODES17h3a61234567890abcE";
        assert_eq!(normalize(boot), normalize(variant));
        assert_eq!(normalize(variant), ".bss._ZN4reef2mm5NODES");
        assert_ne!(
            normalize(".bss._ZN4reef4time8SYNC_TSC17hf84d07a5ea257911E.0"),
            normalize(".bss._ZN4reef4time8SYNC_TSC17hf84d07a5ea257911E"),
            "a static split by LLVM is not the whole one"
        );
        assert_eq!(
            pattern(boot),
            ".bss._ZN4reef2mm5NODES17h????????????????E .bss._ZN4reef2mm5NODES17h????????????????E.llvm.* \
             .bss._ZN4reef2mm5NODES17h????????????????E.0 .bss._ZN4reef2mm5NODES17h????????????????E.0.llvm.*"
        );
    }

    #[test]
    fn a_static_split_in_the_variant_is_found_by_its_first_part() {
        let part = "_ZN4reef4time8BOOT_TSC17h082340200ecfba45E.0.llvm.9544400512736060326";
        assert_eq!(
            split_from(part).map(normalize),
            Some(normalize(
                "_ZN4reef4time8BOOT_TSC17hd45c92d3b485633fE.llvm.1"
            ))
        );
        assert_eq!(
            split_from("_ZN4reef4time8BOOT_TSC17hd45c92d3b485633fE.8"),
            None
        );
        assert_eq!(
            split_from("_ZN4reef4time8BOOT_TSC17hd45c92d3b485633fE"),
            None
        );
    }

    #[test]
    fn writable_statics_are_told_from_constants_and_image_own_ones() {
        assert!(is_static(".data._ZN4reef3tty5INPUT17h4e81f9675a1e8e72E"));
        assert!(is_static(".bss.boot_stack"));
        assert!(is_static(".data.rel._ZN3foo3BAR17h4e81f9675a1e8e72E"));
        assert!(!is_static(".data.rel.ro..Lanon.3b83.3"));
        assert!(!is_static(".data.DW.ref.rust_eh_personality"));
        assert!(!is_static(".rodata.x"));
        assert!(is_image_own(".data.image.idt"));
    }

    #[test]
    fn the_map_gives_input_sections_under_their_output_section() {
        let dir = std::env::temp_dir().join(format!("xtask-map-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("t.map");
        std::fs::write(
            &path,
            "             VMA              LMA     Size Align Out     In      Symbol\n\
             ffffffff80283000           283000    124a0    16 .data\n\
             ffffffff80283000           283000       48     8         /t/reef.o:(.data._ZN4reef2fd9POLL_WAKE17hc62b219f5a8df229E)\n\
             ffffffff80283000           283000        0     1                 reef::fd::POLL_WAKE::hc62b\n\
             ffffffff80296000           296000   51e2c0  4096 .bss\n\
             ffffffff80296000           296000       20     8         /t/lib.rlib(x.o):(.bss._ZN4reef2mm5NODES17h4cd1850affc2291fE.llvm.1)\n",
        )
        .unwrap();
        let m = parse_map(&path).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(m.len(), 2);
        assert_eq!(
            (m[0].out.as_str(), m[0].addr, m[0].size),
            (".data", 0xffffffff80283000, 0x48)
        );
        assert_eq!(m[1].out, ".bss");
        assert_eq!(
            m[1].name,
            ".bss._ZN4reef2mm5NODES17h4cd1850affc2291fE.llvm.1"
        );
    }
}
