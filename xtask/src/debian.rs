//! Debian's own programs for Reef (issue 16): [`PACKAGES`] are fetched once with
//! `apt-get download` into `out/debian/`, unpacked with `dpkg-deb -x`, and packed (without
//! their documentation, manual pages, locales and character-set modules) into
//! `out/debian.cpio`. The kernel unpacks concatenated archives as Linux does, so
//! `out/initramfs-debian.cpio`, Reef's initramfs followed by that archive, is the image
//! `cargo xtask run` boots and the `qemu::debian-*` cases use; every other case keeps the lean
//! image.
//!
//! Debian 12 installs its programs in `/bin` and `/usr/bin` alike and makes `/bin` a link to
//! `/usr/bin`; Reef's `/bin` holds busybox's applets, so a package's `/bin` and `/sbin` go to
//! `/usr/bin` and `/usr/sbin` (found by `PATH`, which names `/usr/bin` after `/bin`), and its
//! libraries stay where Debian's dynamic loader looks for them (`/lib/x86_64-linux-gnu`,
//! `/usr/lib/x86_64-linux-gnu`, `/lib64/ld-linux-x86-64.so.2`).

use crate::cpio::{self, Entry};
use crate::{build, usr};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The packages in the image: the C library, GNU coreutils, Python 3.11 (its standard library
/// without the modules that need libraries left out: `bz2`, `lzma`, `dbm`, `curses`, ...),
/// SQLite's shell, GNU make and gawk, with the libraries they need. Python's `libssl3` is left
/// out (only its `ssl` and `_hashlib` modules use it; `hashlib` falls back to its own digests).
pub const PACKAGES: &[&str] = &[
    "libc6",
    "libselinux1",
    "libpcre2-8-0",
    "libacl1",
    "libattr1",
    "coreutils",
    "zlib1g",
    "libexpat1",
    "libpython3.11-minimal",
    "libpython3.11-stdlib",
    "libffi8",
    "python3.11-minimal",
    "python3-minimal",
    "libtinfo6",
    "libreadline8",
    "libsqlite3-0",
    "sqlite3",
    "make",
    "gawk",
    "libgmp10",
    "libmpfr6",
    "libsigsegv2",
];

/// The test scripts run with Debian's programs (`/test/debian/<name>.sh` in the image, the
/// `qemu::debian-*` cases), what they share (`check.sh`) and the Python programs they run
/// (`<name>.py`).
pub const SCRIPTS_DIR: &str = "usr/debian";

/// Parts of the packages left out of the image (what no program needs to run).
const SKIP: &[&str] = &[
    "usr/share",
    "usr/lib/x86_64-linux-gnu/gconv",
    "usr/libexec",
    "etc",
];

/// `out/debian/`, where the packages are downloaded and unpacked.
fn dir() -> PathBuf {
    build::root().join("out/debian")
}

/// Runs `cmd`, which `what` names in errors.
pub fn run(cmd: &mut Command, what: &str) -> Result<String, String> {
    let out = cmd
        .stderr(Stdio::inherit())
        .output()
        .map_err(|e| format!("cannot run {what}: {e}"))?;
    if !out.status.success() {
        return Err(format!("`{what}` failed ({})", out.status));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// The `.deb` of `package` in `dir`, downloaded with `apt-get download` unless one is there.
pub fn download(package: &str, dir: &Path) -> Result<PathBuf, String> {
    let find = || {
        std::fs::read_dir(dir).ok()?.find_map(|e| {
            let p = e.ok()?.path();
            let name = p.file_name()?.to_str()?;
            (name.starts_with(&format!("{package}_")) && name.ends_with(".deb")).then_some(p)
        })
    };
    if let Some(deb) = find() {
        return Ok(deb);
    }
    std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    eprintln!(
        "xtask: downloading the Debian package {package} (once) into {}",
        dir.display()
    );
    run(
        Command::new("apt-get")
            .args(["download", "-q"])
            .arg(package)
            .current_dir(dir),
        &format!("apt-get download {package}"),
    )
    .map_err(|e| format!("{e}: no network, or no package lists (`apt-get update`)?"))?;
    find().ok_or_else(|| {
        format!(
            "apt-get download left no {package}_*.deb in {}",
            dir.display()
        )
    })
}

/// Where a path of a package goes in Reef's image (`None`: left out).
fn image_path(path: &str) -> Option<String> {
    if SKIP
        .iter()
        .any(|s| path == *s || path.starts_with(&format!("{s}/")))
    {
        return None;
    }
    for (from, to) in [("bin", "usr/bin"), ("sbin", "usr/sbin")] {
        if path == from {
            return Some(to.into());
        }
        if let Some(rest) = path.strip_prefix(&format!("{from}/")) {
            return Some(format!("{to}/{rest}"));
        }
    }
    Some(path.into())
}

/// Adds the tree under `root` to `entries` (relative path -> entry), by [`image_path`].
fn collect(root: &Path, at: &Path, entries: &mut BTreeMap<String, Entry>) -> Result<(), String> {
    let list = std::fs::read_dir(at).map_err(|e| format!("cannot read {}: {e}", at.display()))?;
    for e in list {
        let e = e.map_err(|e| format!("cannot read {}: {e}", at.display()))?;
        let path = e.path();
        let rel = path
            .strip_prefix(root)
            .map_err(|e| e.to_string())?
            .to_string_lossy()
            .into_owned();
        let Some(name) = image_path(&rel) else {
            continue;
        };
        let meta = std::fs::symlink_metadata(&path)
            .map_err(|e| format!("cannot stat {}: {e}", path.display()))?;
        use std::os::unix::fs::PermissionsExt;
        let perm = meta.permissions().mode() & 0o7777;
        let entry = if meta.file_type().is_symlink() {
            let target = std::fs::read_link(&path)
                .map_err(|e| format!("cannot read link {}: {e}", path.display()))?;
            Entry::symlink(&name, &target.to_string_lossy())
        } else if meta.is_dir() {
            collect(root, &path, entries)?;
            Entry::dir(&name, perm)
        } else {
            let data =
                std::fs::read(&path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
            Entry::file(&name, perm, data)
        };
        entries.insert(name, entry);
    }
    Ok(())
}

/// Downloads and unpacks [`PACKAGES`] (once) and returns their image entries, every directory
/// before what it holds (the kernel leaves a directory Reef's own initramfs made as it is).
fn entries() -> Result<Vec<Entry>, String> {
    let dir = dir();
    let root = dir.join("root");
    for package in PACKAGES {
        let deb = download(package, &dir)?;
        let stamp = root.join(format!(".{package}.unpacked"));
        if !stamp.exists() {
            run(
                Command::new("dpkg-deb").arg("-x").arg(&deb).arg(&root),
                &format!("dpkg-deb -x {}", deb.display()),
            )?;
            std::fs::write(&stamp, deb.to_string_lossy().as_bytes())
                .map_err(|e| format!("cannot write {}: {e}", stamp.display()))?;
        }
    }
    let mut entries = BTreeMap::new();
    collect(&root, &root, &mut entries)?;
    entries.retain(|name, _| !name.starts_with('.'));
    let scripts = build::root().join(SCRIPTS_DIR);
    let list = std::fs::read_dir(&scripts)
        .map_err(|e| format!("cannot read {}: {e}", scripts.display()))?;
    for e in list {
        let path = e.map_err(|e| e.to_string())?.path();
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        let perm = match name.rsplit_once('.') {
            Some((_, "sh")) => 0o755,
            Some((_, "py")) => 0o644,
            _ => continue,
        };
        let data =
            std::fs::read(&path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        let name = format!("test/debian/{name}");
        entries.insert(name.clone(), Entry::file(&name, perm, data));
    }
    // A moved directory's parent (`usr` for a package's `bin`) may be in no package, nor
    // `test` for the scripts.
    let names: Vec<String> = entries.keys().cloned().collect();
    for name in names {
        let mut at = name.as_str();
        while let Some((parent, _)) = at.rsplit_once('/') {
            entries
                .entry(parent.to_string())
                .or_insert_with(|| Entry::dir(parent, 0o755));
            at = parent;
        }
    }
    // Sorted by name, a directory comes before what it holds.
    Ok(entries.into_values().collect())
}

/// Builds Reef's initramfs and writes `out/initramfs-debian.cpio`, that image followed by the
/// Debian archive; returns its absolute path.
pub fn initramfs() -> Result<PathBuf, String> {
    with_packages(&usr::initramfs()?, "initramfs-debian.cpio")
}

/// Writes `out/NAME`: the archive `base` followed by the Debian archive (Linux unpacks
/// concatenated archives too, so the Linux guest's initramfs takes them the same way); returns
/// its absolute path.
pub fn with_packages(base: &Path, name: &str) -> Result<PathBuf, String> {
    let mut image =
        std::fs::read(base).map_err(|e| format!("cannot read {}: {e}", base.display()))?;
    let debian = cpio::write(&entries()?)?;
    image.extend_from_slice(&debian);
    let path = build::root().join("out").join(name);
    usr::write_archive(&path, &image)?;
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn programs_move_to_usr_and_documentation_stays_out() {
        assert_eq!(image_path("bin/ls").as_deref(), Some("usr/bin/ls"));
        assert_eq!(image_path("bin").as_deref(), Some("usr/bin"));
        assert_eq!(image_path("sbin/x").as_deref(), Some("usr/sbin/x"));
        assert_eq!(image_path("binutils").as_deref(), Some("binutils"));
        assert_eq!(
            image_path("lib/x86_64-linux-gnu/libc.so.6").as_deref(),
            Some("lib/x86_64-linux-gnu/libc.so.6")
        );
        assert_eq!(image_path("usr/share/doc/libc6/copyright"), None);
        assert_eq!(image_path("usr/share"), None);
        assert_eq!(image_path("usr/lib/x86_64-linux-gnu/gconv/UTF-16.so"), None);
        assert_eq!(image_path("etc/ld.so.conf.d/x86_64-linux-gnu.conf"), None);
        assert_eq!(
            image_path("usr/lib/x86_64-linux-gnu/libacl.so.1").as_deref(),
            Some("usr/lib/x86_64-linux-gnu/libacl.so.1")
        );
    }
}
