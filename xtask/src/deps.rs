//! System packages Reef's tooling needs, installed with apt when missing.

use std::path::Path;
use std::process::Command;

/// A program the tooling runs, and the Debian package that provides it.
pub struct Need {
    /// Path or name of the program, checked on PATH when not absolute.
    pub program: &'static str,
    /// Debian package providing it.
    pub package: &'static str,
    /// What it is needed for (printed when installing).
    pub purpose: &'static str,
}

/// QEMU for x86-64, with the qboot firmware.
pub const QEMU: Need = Need {
    program: "qemu-system-x86_64",
    package: "qemu-system-x86",
    purpose: "booting Reef",
};
/// qboot firmware (shipped with QEMU's data files).
pub const QBOOT: Need = Need {
    program: "/usr/share/qemu/qboot.rom",
    package: "qemu-system-x86",
    purpose: "fast QEMU firmware",
};
/// objcopy, to turn the kernel ELF into a multiboot image.
pub const OBJCOPY: Need = Need {
    program: "objcopy",
    package: "binutils",
    purpose: "making the kernel's boot image",
};

/// ApacheBench, the load of the HTTP request-rate benchmarks (`net-*-http`).
pub const AB: Need = Need {
    program: "ab",
    package: "apache2-utils",
    purpose: "the HTTP request-rate benchmarks (ApacheBench)",
};

/// musl-gcc, to build the user test programs in `usr/` as static musl binaries.
pub const MUSL_GCC: Need = Need {
    program: "musl-gcc",
    package: "musl-tools",
    purpose: "building the user test programs in usr/",
};
/// Debian's statically linked busybox, the initramfs's `/bin/busybox`.
pub const BUSYBOX: Need = Need {
    program: "/bin/busybox",
    package: "busybox-static",
    purpose: "the initramfs's /bin/busybox and its applets",
};

/// The host's copies of the Debian programs the `debian-*` cases run natively (the scripts in
/// `usr/debian/` name them by their Debian paths).
pub const DEBIAN_NATIVE: &[Need] = &[
    Need {
        program: "/usr/bin/python3",
        package: "python3-minimal",
        purpose: "running usr/debian/python.sh natively",
    },
    Need {
        program: "/usr/bin/sqlite3",
        package: "sqlite3",
        purpose: "running usr/debian/sqlite.sh natively",
    },
    Need {
        program: "/usr/bin/make",
        package: "make",
        purpose: "running usr/debian/make.sh natively",
    },
    Need {
        program: "/usr/bin/gawk",
        package: "gawk",
        purpose: "running usr/debian/make.sh natively",
    },
];

fn present(program: &str) -> bool {
    if program.starts_with('/') {
        return Path::new(program).exists();
    }
    std::env::var_os("PATH")
        .map(|paths| std::env::split_paths(&paths).any(|dir| dir.join(program).is_file()))
        .unwrap_or(false)
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .map(|o| o.stdout.starts_with(b"0"))
        .unwrap_or(false)
}

/// Makes sure every program in `needs` exists, installing missing packages with apt-get.
pub fn ensure(needs: &[Need]) -> Result<(), String> {
    let mut packages: Vec<&str> = Vec::new();
    for need in needs.iter().filter(|n| !present(n.program)) {
        eprintln!(
            "xtask: {} (for {}) is missing; it comes with the Debian package {}",
            need.program, need.purpose, need.package
        );
        if !packages.contains(&need.package) {
            packages.push(need.package);
        }
    }
    if packages.is_empty() {
        return Ok(());
    }
    let list = packages.join(" ");
    if !is_root() {
        return Err(format!(
            "not running as root, so cannot install them: run `sudo apt-get install {list}`"
        ));
    }
    eprintln!("xtask: installing {list} with apt-get");
    let update = Command::new("apt-get")
        .args(["update", "-qq"])
        .env("DEBIAN_FRONTEND", "noninteractive")
        .status();
    if !update.map(|s| s.success()).unwrap_or(false) {
        return Err(format!(
            "`apt-get update` failed (no network?): install {list} by hand"
        ));
    }
    let install = Command::new("apt-get")
        .args(["install", "-y", "-qq", "--no-install-recommends"])
        .args(&packages)
        .env("DEBIAN_FRONTEND", "noninteractive")
        .status();
    if !install.map(|s| s.success()).unwrap_or(false) {
        return Err(format!(
            "`apt-get install {list}` failed: install it by hand"
        ));
    }
    match needs.iter().find(|n| !present(n.program)) {
        Some(n) => Err(format!(
            "{} is still missing after installing {}",
            n.program, n.package
        )),
        None => Ok(()),
    }
}
