//! The Linux guest `cargo xtask bench` compares Reef with: Debian 12's Linux 6.1 kernel
//! (`linux-image-6.1.*-amd64`) and an initramfs with the same busybox and programs as Reef's.
//!
//! The kernel package is fetched once with `apt-get download` into `out/linux/` and only its
//! `/boot/vmlinuz-*` and the modules of the virtio-net NIC ([`NET_MODULES`]) are unpacked
//! (`dpkg-deb --fsys-tarfile | tar -x`: `dpkg -x` would also unpack some 400 MB of modules the
//! guest does not need; serial (8250), the initramfs and tmpfs are built in). Later runs reuse
//! them without asking apt.
//!
//! The initramfs (`out/linux/initramfs.cpio`) has Reef's layout (`/bin/busybox` and its applets,
//! `/test/<program>`, `/etc`, `/tmp`, ...; see `usr.rs`) plus `/sys` and [`INIT`], which the
//! kernel runs as `rdinit=/init` with the benchmark command after `--` on its command line.

use crate::cpio::{self, Entry};
use crate::{build, cmdline, usr};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The first line `/init` prints: the moment init runs.
pub const INIT_MARKER: &str = "bench: linux init";

/// The line `/init` prints after the command, before powering off.
pub const STATUS_PREFIX: &str = "bench: exit status ";

/// `/init`: mounts proc, sysfs and a tmpfs on `/tmp` (where the file benchmarks write, as on
/// Reef's NR-FS), brings the loopback interface up and the NIC up with Reef's address (QEMU
/// user networking: 10.0.2.15/24, gateway 10.0.2.2), reports the clock source (it decides what
/// `clock_gettime` costs), runs its arguments (the benchmark command) with Reef's init
/// environment, prints the exit status and powers off.
pub const INIT: &str = r#"#!/bin/sh
echo "bench: linux init"
export HOME=/ TERM=linux PATH=/bin:/usr/local/bin:/usr/bin:/test
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t tmpfs tmpfs /tmp
ip link set lo up
for m in virtio_ring virtio virtio_pci_legacy_dev virtio_pci_modern_dev virtio_pci failover net_failover virtio_net; do
    insmod /lib/net/$m.ko || echo "bench: insmod $m failed"
done
ip link set eth0 up && ip addr add 10.0.2.15/24 dev eth0 && ip route add default via 10.0.2.2 ||
    echo "bench: no network on eth0"
echo "bench: clocksource $(cat /sys/devices/system/clocksource/clocksource0/current_clocksource)"
"$@"
echo "bench: exit status $?"
poweroff -f
"#;

/// Kernel options before the command: serial console, no boot chatter, an immediate reboot (so
/// QEMU exits, as it runs with `-no-reboot`) on a panic, and `/init` from the initramfs. Linux's
/// other defaults (mitigations included) are left alone.
const OPTIONS: &str = "console=ttyS0 quiet panic=-1 rdinit=/init";

/// The modules the virtio-net NIC needs, in load order, under `lib/modules/<version>/kernel/`.
pub const NET_MODULES: [&str; 8] = [
    "drivers/virtio/virtio_ring.ko",
    "drivers/virtio/virtio.ko",
    "drivers/virtio/virtio_pci_legacy_dev.ko",
    "drivers/virtio/virtio_pci_modern_dev.ko",
    "drivers/virtio/virtio_pci.ko",
    "net/core/failover.ko",
    "drivers/net/net_failover.ko",
    "drivers/net/virtio_net.ko",
];

/// The unpacked [`NET_MODULES`] (name, contents), if all are there.
fn net_modules() -> Option<Vec<(String, Vec<u8>)>> {
    let base = dir().join("lib/modules");
    let version = std::fs::read_dir(&base)
        .ok()?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .find(|p| p.join("kernel").is_dir())?;
    NET_MODULES
        .iter()
        .map(|m| {
            let name = Path::new(m).file_name()?.to_str()?.to_string();
            Some((name, std::fs::read(version.join("kernel").join(m)).ok()?))
        })
        .collect()
}

/// The directory of the kernel package and the unpacked kernel.
fn dir() -> PathBuf {
    build::root().join("out/linux")
}

/// The kernel command line running `argv` as the benchmark command.
pub fn cmdline(argv: &[String]) -> Result<String, String> {
    Ok(format!("{OPTIONS} -- {}", cmdline::join(argv)?))
}

/// The Debian package `apt-cache depends linux-image-amd64` names (`linux-image-6.1.0-N-amd64`).
pub fn image_package(depends: &str) -> Option<String> {
    depends
        .lines()
        .filter_map(|l| l.trim().strip_prefix("Depends:"))
        .map(str::trim)
        .find(|p| p.starts_with("linux-image-6.1.") && p.ends_with("-amd64"))
        .map(str::to_string)
}

/// An unpacked `out/linux/boot/vmlinuz-6.1.*` (the newest by name), if any.
fn cached_kernel() -> Option<PathBuf> {
    let boot = dir().join("boot");
    let mut found: Vec<PathBuf> = std::fs::read_dir(boot)
        .ok()?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("vmlinuz-6.1."))
        })
        .collect();
    found.sort();
    found.pop()
}

/// Unpacks `./boot/vmlinuz-*` and the [`NET_MODULES`] of the package `deb` into `into`.
fn unpack_boot(deb: &Path, into: &Path) -> Result<(), String> {
    let mut dpkg = Command::new("dpkg-deb")
        .arg("--fsys-tarfile")
        .arg(deb)
        .stdout(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot run dpkg-deb (package dpkg): {e}"))?;
    let tar = Command::new("tar")
        .arg("-x")
        .arg("-C")
        .arg(into)
        .args(["--wildcards", "./boot/vmlinuz-*"])
        .args(
            NET_MODULES
                .iter()
                .map(|m| format!("./lib/modules/*/kernel/{m}")),
        )
        .stdin(dpkg.stdout.take().expect("piped"))
        .status()
        .map_err(|e| format!("cannot run tar: {e}"))?;
    let dpkg = dpkg.wait().map_err(|e| e.to_string())?;
    if !dpkg.success() || !tar.success() {
        return Err(format!(
            "unpacking /boot/vmlinuz-* and the virtio-net modules from {} failed",
            deb.display()
        ));
    }
    Ok(())
}

/// The Linux kernel image, downloaded and unpacked into `out/linux/` the first time.
pub fn kernel() -> Result<PathBuf, String> {
    if let Some(k) = cached_kernel().filter(|_| net_modules().is_some()) {
        return Ok(k);
    }
    let dir = dir();
    std::fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let depends = crate::debian::run(
        Command::new("apt-cache").args(["depends", "linux-image-amd64"]),
        "apt-cache depends linux-image-amd64",
    )
    .map_err(|e| format!("{e}: the Linux guest needs Debian 12's package lists"))?;
    let package = image_package(&depends).ok_or(
        "`apt-cache depends linux-image-amd64` names no linux-image-6.1.*-amd64 package: the \
         Linux guest needs Debian 12 (bookworm) package lists (run `apt-get update`)",
    )?;
    let deb = crate::debian::download(&package, &dir)?;
    eprintln!(
        "xtask: unpacking /boot/vmlinuz-* and the virtio-net modules from {}",
        deb.display()
    );
    unpack_boot(&deb, &dir)?;
    cached_kernel().ok_or_else(|| format!("{} holds no boot/vmlinuz-6.1.*", deb.display()))
}

/// The initramfs entries: Reef's layout (without the shell suite; its `/sys` is where Linux's
/// sysfs is mounted), `/init` and the NIC's modules in `/lib/net/`.
pub fn entries(c: usr::Contents, modules: Vec<(String, Vec<u8>)>) -> Vec<Entry> {
    let mut e = usr::entries(c.busybox, &c.applets, &c.programs, &[]);
    e.push(Entry::file("init", 0o755, INIT.into()));
    e.push(Entry::dir("lib", 0o755));
    e.push(Entry::dir("lib/net", 0o755));
    for (name, data) in modules {
        e.push(Entry::file(&format!("lib/net/{name}"), 0o644, data));
    }
    e
}

/// Writes `out/linux/initramfs.cpio` with the programs as built now; returns its path.
pub fn initramfs() -> Result<PathBuf, String> {
    let modules = net_modules().ok_or(
        "the virtio-net modules are not unpacked in out/linux/lib/modules (linux::kernel() \
         unpacks them)",
    )?;
    let archive = cpio::write(&entries(usr::contents()?, modules))?;
    let dir = dir();
    std::fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let path = dir.join("initramfs.cpio");
    usr::write_archive(&path, &archive)?;
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn package_from_apt_cache_depends() {
        let text = "linux-image-amd64\n  Depends: linux-image-6.1.0-56-amd64\n";
        assert_eq!(
            image_package(text).as_deref(),
            Some("linux-image-6.1.0-56-amd64")
        );
        assert_eq!(
            image_package("linux-image-amd64\n  Depends: linux-image-6.12.1-amd64\n"),
            None
        );
        assert_eq!(image_package(""), None);
    }

    #[test]
    fn command_follows_the_double_dash() {
        let argv = vec!["/test/uperf".to_string(), "null".to_string()];
        let line = cmdline(&argv).unwrap();
        assert_eq!(
            line,
            "console=ttyS0 quiet panic=-1 rdinit=/init -- /test/uperf null"
        );
        assert!(!line.contains("mitigations"));
    }

    #[test]
    fn initramfs_has_init_and_sys() {
        let c = usr::Contents {
            busybox: vec![1],
            applets: vec!["sh".into()],
            programs: vec![("uperf", vec![2])],
        };
        let modules = vec![("virtio.ko".to_string(), vec![3])];
        let archive = cpio::write(&entries(c, modules)).expect("valid layout");
        let back = cpio::read(&archive).unwrap();
        let find = |n: &str| back.iter().find(|r| r.entry.name == n).map(|r| &r.entry);
        let init = find("init").expect("/init");
        assert_eq!(init.mode, cpio::S_IFREG | 0o755);
        assert!(init
            .data
            .starts_with(b"#!/bin/sh\necho \"bench: linux init\"\n"));
        assert!(String::from_utf8_lossy(&init.data).contains("mount -t tmpfs tmpfs /tmp"));
        assert!(String::from_utf8_lossy(&init.data).contains(STATUS_PREFIX));
        assert_eq!(find("sys").unwrap().mode, cpio::S_IFDIR | 0o755);
        assert_eq!(find("test/uperf").unwrap().data, vec![2]);
        assert_eq!(find("bin/sh").unwrap().data, b"busybox");
        assert_eq!(find("lib/net/virtio.ko").unwrap().data, vec![3]);
        assert!(String::from_utf8_lossy(&init.data).contains("insmod /lib/net/$m.ko"));
    }
}
