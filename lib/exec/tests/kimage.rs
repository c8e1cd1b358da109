//! Variant kernel images (`exec::kimage`): what a well-formed one yields, and every malformed
//! file refused with its reason, never a panic.

use exec::kimage::{fnv1a, ImageError, ImageInfo, KernelImage, FNV_OFFSET};

/// Parses `file` through a reader of its bytes.
fn parse(file: &[u8]) -> Result<KernelImage, ImageError> {
    let mut read = |at: u64, buf: &mut [u8]| {
        let at = usize::try_from(at).map_err(drop)?;
        let src = file.get(at..at + buf.len()).ok_or(())?;
        buf.copy_from_slice(src);
        Ok(())
    };
    KernelImage::parse(&mut read, file.len() as u64)
}

const BASE: u64 = 0xffff_ffff_c000_0000;

fn info() -> ImageInfo {
    let mut name = [0u8; 16];
    name[..10].copy_from_slice(b"reef-trace");
    ImageInfo {
        boot_id: 0x1234_5678_9abc_def0,
        kcb_layout: 11,
        flags: 1,
        base: BASE,
        span: 0x1000_0000,
        name,
    }
}

/// A program header: (type, flags, offset, vaddr, filesz, memsz).
type Ph = (u32, u32, u64, u64, u64, u64);

/// An ELF file with `phdrs`, a section `.reef_image` holding `info` (if any) and `payload`
/// bytes at offset 0x1000.
fn image(phdrs: &[Ph], info: Option<&[u8]>, entry: u64) -> Vec<u8> {
    let mut f = vec![0u8; 0x2000];
    f[..4].copy_from_slice(b"\x7fELF");
    f[4] = 2;
    f[5] = 1;
    f[6] = 1;
    f[0x10..0x12].copy_from_slice(&2u16.to_le_bytes());
    f[0x12..0x14].copy_from_slice(&62u16.to_le_bytes());
    f[0x18..0x20].copy_from_slice(&entry.to_le_bytes());
    f[0x20..0x28].copy_from_slice(&64u64.to_le_bytes());
    f[0x36..0x38].copy_from_slice(&56u16.to_le_bytes());
    f[0x38..0x3a].copy_from_slice(&(phdrs.len() as u16).to_le_bytes());
    for (i, &(kind, flags, off, vaddr, filesz, memsz)) in phdrs.iter().enumerate() {
        let h = 64 + 56 * i;
        f[h..h + 4].copy_from_slice(&kind.to_le_bytes());
        f[h + 4..h + 8].copy_from_slice(&flags.to_le_bytes());
        f[h + 8..h + 16].copy_from_slice(&off.to_le_bytes());
        f[h + 16..h + 24].copy_from_slice(&vaddr.to_le_bytes());
        f[h + 32..h + 40].copy_from_slice(&filesz.to_le_bytes());
        f[h + 40..h + 48].copy_from_slice(&memsz.to_le_bytes());
    }
    for b in &mut f[0x1000..0x1100] {
        *b = 0xcc;
    }
    // Sections: null, .shstrtab, .reef_image; names and info after the payload.
    let names = b"\0.shstrtab\0.reef_image\0";
    let names_at = 0x1800;
    f[names_at..names_at + names.len()].copy_from_slice(names);
    let info_at = 0x1900;
    let info = info.unwrap_or(&[]);
    f[info_at..info_at + info.len()].copy_from_slice(info);
    let shoff = f.len();
    let mut section = |name: u32, kind: u32, off: usize, size: usize| {
        let mut h = [0u8; 64];
        h[..4].copy_from_slice(&name.to_le_bytes());
        h[4..8].copy_from_slice(&kind.to_le_bytes());
        h[0x18..0x20].copy_from_slice(&(off as u64).to_le_bytes());
        h[0x20..0x28].copy_from_slice(&(size as u64).to_le_bytes());
        f.extend_from_slice(&h);
    };
    section(0, 0, 0, 0);
    section(1, 3, names_at, names.len());
    section(11, 1, info_at, info.len());
    f[0x28..0x30].copy_from_slice(&(shoff as u64).to_le_bytes());
    f[0x3a..0x3c].copy_from_slice(&64u16.to_le_bytes());
    f[0x3c..0x3e].copy_from_slice(&3u16.to_le_bytes());
    f[0x3e..0x40].copy_from_slice(&1u16.to_le_bytes());
    f
}

/// Text at the base, data two pages on, and a boot image's statics (no file bytes) far below.
fn good() -> Vec<Ph> {
    vec![
        (1, 5, 0x1000, BASE, 0x100, 0x100),
        (1, 6, 0x1000, BASE + 0x2000, 0x80, 0x3000),
        (1, 6, 0x1000, 0xffff_ffff_8028_3000, 0, 0x53_0000),
        (0x6474_e551, 6, 0, 0, 0, 0),
    ]
}

#[test]
fn a_variant_image_gives_its_info_entry_and_own_segments() {
    let bytes = info().to_bytes();
    let img = parse(&image(&good(), Some(&bytes), BASE + 0x40)).unwrap();
    assert_eq!(img.info, info());
    assert_eq!(img.info.name(), b"reef-trace");
    assert_eq!(img.entry, BASE + 0x40);
    assert_eq!(
        img.segments.len(),
        2,
        "the boot image's statics are not loaded"
    );
    let (text, data) = (&img.segments[0], &img.segments[1]);
    assert_eq!(
        (text.vaddr, text.memsz, text.file.clone()),
        (BASE, 0x100, 0x1000..0x1100)
    );
    assert!(text.executable && !text.writable);
    assert_eq!(
        (data.vaddr, data.memsz, data.file.clone()),
        (BASE + 0x2000, 0x3000, 0x1000..0x1080)
    );
    assert!(data.writable && !data.executable);
}

#[test]
fn malformed_images_are_refused_with_their_reason() {
    let bytes = info().to_bytes();
    let entry = BASE + 0x40;
    let refused = |phdrs: &[Ph], info: Option<&[u8]>, entry: u64| {
        parse(&image(phdrs, info, entry)).unwrap_err()
    };
    assert_eq!(refused(&good(), None, entry), ImageError::NotReefImage);
    let mut foreign = bytes;
    foreign[0] = b'X';
    assert_eq!(
        refused(&good(), Some(&foreign), entry),
        ImageError::NotReefImage
    );
    assert_eq!(
        refused(&good(), Some(&bytes[..40]), entry),
        ImageError::NotReefImage
    );
    let mut low = info();
    low.base = 0xffff_8000_0000_0000;
    assert_eq!(
        refused(&good(), Some(&low.to_bytes()), entry),
        ImageError::BadRange
    );
    // File bytes outside the image's range (over the boot image), a segment reaching past
    // the file, more bytes than memory, two segments on one page, an entry in data.
    let mut outside = good();
    outside[2].4 = 8;
    assert_eq!(
        refused(&outside, Some(&bytes), entry),
        ImageError::BadSegment { index: 2 }
    );
    let mut past = good();
    past[0].4 = 0x10_0000;
    past[0].5 = 0x10_0000;
    assert_eq!(
        refused(&past, Some(&bytes), entry),
        ImageError::BadSegment { index: 0 }
    );
    let mut more = good();
    more[0].4 = 0x200;
    assert_eq!(
        refused(&more, Some(&bytes), entry),
        ImageError::BadSegment { index: 0 }
    );
    let mut shared_page = good();
    shared_page[1].3 = BASE + 0x800;
    assert_eq!(
        refused(&shared_page, Some(&bytes), entry),
        ImageError::Overlap
    );
    assert_eq!(
        refused(&good(), Some(&bytes), BASE + 0x2000),
        ImageError::BadEntry
    );
    // Not ELF at all, or cut short anywhere: an error, never a panic.
    assert_eq!(parse(b"#!/bin/sh\n"), Err(ImageError::NotElf));
    let whole = image(&good(), Some(&bytes), entry);
    for len in 0..whole.len() {
        assert!(parse(&whole[..len]).is_err(), "cut at {len}");
    }
}

#[test]
fn fnv1a_is_the_standard_one_and_continues() {
    assert_eq!(fnv1a(FNV_OFFSET, b""), 0xcbf2_9ce4_8422_2325);
    assert_eq!(fnv1a(FNV_OFFSET, b"a"), 0xaf63_dc4c_8601_ec8c);
    assert_eq!(
        fnv1a(fnv1a(FNV_OFFSET, b"fo"), b"o"),
        fnv1a(FNV_OFFSET, b"foo")
    );
}
