//! Building the kernel and its boot image.

use std::path::{Path, PathBuf};
use std::process::Command;

/// Repository root (the parent of `xtask/`).
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("xtask lives in the repository")
        .to_path_buf()
}

/// Paths of a built kernel.
pub struct Kernel {
    /// The ELF with symbols (for gdb).
    pub elf: PathBuf,
    /// The flat multiboot image QEMU boots.
    pub image: PathBuf,
}

/// `cargo build --release` in `dir`, a workspace of its own (the kernel's, `usr/hare`'s)
/// whose `.cargo/config.toml` and profiles apply, not this tool's environment.
pub fn cargo_release(dir: &Path) -> Result<(), String> {
    let status = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
        .current_dir(dir)
        .args(["build", "--release", "--quiet"])
        .env_remove("RUSTFLAGS")
        .env_remove("CARGO_TARGET_DIR")
        .env_remove("CARGO_BUILD_TARGET")
        .status()
        .map_err(|e| format!("cannot run cargo: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("cargo build in {} failed", dir.display()))
    }
}

/// `cargo build --release` of the kernel with `feature` (a variant image's, or none for the
/// boot image) in the target directory `target`, linked by `script`, writing the link map to
/// `map` (see `kernel/build.rs`); returns the ELF's path. Each image has a target directory of
/// its own, so that builds of several xtask processes at once never mix them up.
pub fn cargo_kernel(
    dir: &Path,
    feature: Option<&str>,
    script: &Path,
    (target, map): (&Path, &Path),
) -> Result<PathBuf, String> {
    let mut cmd = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
    cmd.current_dir(dir)
        .args(["build", "--release", "--quiet"])
        .env_remove("RUSTFLAGS")
        .env("CARGO_TARGET_DIR", target)
        .env_remove("CARGO_BUILD_TARGET")
        .env("REEF_LINKER_SCRIPT", script)
        .env("REEF_LINK_MAP", map);
    if let Some(f) = feature {
        cmd.args(["--features", f]);
    }
    let status = cmd.status().map_err(|e| format!("cannot run cargo: {e}"))?;
    if status.success() {
        Ok(target.join("x86_64-unknown-linux-gnu/release/reef"))
    } else {
        Err(format!("cargo build in {} failed", dir.display()))
    }
}

/// Builds the kernel (release profile, with debug info), its flat boot image and the variant
/// images linked against it (`variant`).
pub fn kernel() -> Result<Kernel, String> {
    let root = root();
    let kernel_dir = root.join("kernel");
    eprintln!("xtask: building the kernel");
    let map = kernel_dir.join("target/reef.map");
    let target = kernel_dir.join("target");
    let elf = cargo_kernel(
        &kernel_dir,
        None,
        &kernel_dir.join("linker.ld"),
        (&target, &map),
    )
    .map_err(|e| format!("kernel build failed: {e}"))?;
    let out = root.join("out");
    std::fs::create_dir_all(&out).map_err(|e| format!("cannot create {}: {e}", out.display()))?;
    let image = out.join("reef.bin");
    let tmp = image.with_extension(format!("bin.{}.tmp", std::process::id()));
    let status = Command::new("objcopy")
        .args(["-O", "binary"])
        .arg(&elf)
        .arg(&tmp)
        .status()
        .map_err(|e| format!("cannot run objcopy: {e}"))?;
    if !status.success() {
        return Err("objcopy failed to make the boot image".into());
    }
    std::fs::rename(&tmp, &image).map_err(|e| format!("cannot rename {}: {e}", tmp.display()))?;
    let kernel = Kernel { elf, image };
    crate::variant::build_all(&kernel, &map)?;
    Ok(kernel)
}
