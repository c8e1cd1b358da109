//! The user test programs in `usr/` (static musl binaries, built into `out/usr/`), the shell
//! suite in `usr/sh/` (busybox scripts with their expected output) and the initramfs that
//! carries them and busybox (`out/initramfs.cpio`, passed to QEMU with `-initrd`).
//!
//! Initramfs contents, directories before their contents, uid/gid 0, mtime 0:
//!
//! | path | what |
//! |---|---|
//! | `/bin/busybox` (0755) | Debian `busybox-static`'s `/bin/busybox` |
//! | `/bin/<applet>` | a symlink to `busybox` for every applet `busybox --list` prints |
//! | `/bin/fleet` (0755) | the fleet manager (`usr/fleet.c`, [`SYSTEM`]) |
//! | `/bin/hared` (0755) | Hare's file server, a fleet member (`usr/hared.c` with lib/hare, [`SYSTEM`]) |
//! | `/bin/hareroot` (0755) | makes Hare the root: the kernel's init launcher for `root=hare` (`usr/hareroot.c`, [`SYSTEM`]) |
//! | `/bin/corectl` (0755) | core management: list, stop, start, park and unpark cores (`usr/corectl.c`, [`SYSTEM`]) |
//! | `/bin/netd` (0755) | the network server, a fleet member (`usr/netd.c` with lib/net, [`SYSTEM`]) |
//! | `/bin/netctl` (0755) | network modes of stack instances (`usr/netctl.c`, [`SYSTEM`]) |
//! | `/dev`, `/proc`, `/etc`, `/root`, `/test`, `/test/sh` (0755), `/tmp` (01777) | directories |
//! | `/etc/passwd`, `/etc/group` (0644) | root only |
//! | `/test/<name>` (0755) | the test programs |
//! | `/test/sh/<name>.sh` (0755), `/test/sh/<name>.expected` (0644) | the shell suite: every file of `usr/sh/`, run by `/test/sh/run.sh` |
//! | `/test/punzip.zip` (0644) | the archive of fsload's `punzip` workload (100 man-page-sized files, [`crate::zip`]) |

use crate::cpio::{self, Entry};
use crate::{build, deps};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::SystemTime;

/// A user test program: `usr/<name>.c`, or another program's source built another way.
pub struct Program {
    /// Name in `out/usr/` and `/test/` (and in its `PASS <name>` line).
    pub name: &'static str,
    /// Source file in `usr/`.
    pub source: &'static str,
    /// Linked as a static PIE (ET_DYN, loaded at a bias) instead of a fixed-address executable.
    pub pie: bool,
    /// Linked with a library crate's C ABI ([`HARE_LIB`], [`NET_LIB`]).
    pub lib: Option<&'static RustLib>,
}

/// Every test program, in the order they go into `/test`.
pub const PROGRAMS: &[Program] = &[
    Program {
        name: "hello",
        source: "hello.c",
        pie: false,
        lib: None,
    },
    Program {
        name: "args",
        source: "args.c",
        pie: false,
        lib: None,
    },
    Program {
        name: "args-pie",
        source: "args.c",
        pie: true,
        lib: None,
    },
    Program {
        name: "filemap",
        source: "filemap.c",
        pie: false,
        lib: None,
    },
    Program {
        name: "locks",
        source: "locks.c",
        pie: false,
        lib: None,
    },
    Program {
        name: "creds",
        source: "creds.c",
        pie: false,
        lib: None,
    },
    Program {
        name: "jobs",
        source: "jobs.c",
        pie: false,
        lib: None,
    },
    Program {
        name: "tasks",
        source: "tasks.c",
        pie: false,
        lib: None,
    },
    Program {
        name: "eventfd",
        source: "eventfd.c",
        pie: false,
        lib: None,
    },
    Program {
        name: "timers",
        source: "timers.c",
        pie: false,
        lib: None,
    },
    Program {
        name: "sched",
        source: "sched.c",
        pie: false,
        lib: None,
    },
    Program {
        name: "mappings",
        source: "mappings.c",
        pie: false,
        lib: None,
    },
    Program {
        name: "fifo",
        source: "fifo.c",
        pie: false,
        lib: None,
    },
    Program {
        name: "sigqueue",
        source: "sigqueue.c",
        pie: false,
        lib: None,
    },
    Program {
        name: "reap",
        source: "reap.c",
        pie: false,
        lib: None,
    },
    Program {
        name: "threads",
        source: "threads.c",
        pie: false,
        lib: None,
    },
    Program {
        name: "forkexec",
        source: "forkexec.c",
        pie: false,
        lib: None,
    },
    Program {
        name: "mman",
        source: "mman.c",
        pie: false,
        lib: None,
    },
    Program {
        name: "shootdown",
        source: "shootdown.c",
        pie: false,
        lib: None,
    },
    Program {
        name: "cow",
        source: "cow.c",
        pie: false,
        lib: None,
    },
    Program {
        name: "execmap",
        source: "execmap.c",
        pie: false,
        lib: None,
    },
    Program {
        name: "layout",
        source: "layout.c",
        pie: false,
        lib: None,
    },
    Program {
        name: "signals",
        source: "signals.c",
        pie: false,
        lib: None,
    },
    Program {
        name: "msgring",
        source: "msgring.c",
        pie: false,
        lib: None,
    },
    Program {
        name: "twotier",
        source: "twotier.c",
        pie: false,
        lib: None,
    },
    Program {
        name: "names",
        source: "names.c",
        pie: false,
        lib: None,
    },
    Program {
        name: "mailbox",
        source: "mailbox.c",
        pie: false,
        lib: None,
    },
    Program {
        name: "spawnloop",
        source: "spawnloop.c",
        pie: false,
        lib: None,
    },
    Program {
        name: "fsshare",
        source: "fsshare.c",
        pie: false,
        lib: None,
    },
    Program {
        name: "pipes",
        source: "pipes.c",
        pie: false,
        lib: None,
    },
    Program {
        name: "compat",
        source: "compat.c",
        pie: false,
        lib: None,
    },
    Program {
        name: "net",
        source: "net.c",
        pie: false,
        lib: None,
    },
    Program {
        name: "epoll",
        source: "epoll.c",
        pie: false,
        lib: None,
    },
    Program {
        name: "spoof",
        source: "spoof.c",
        pie: false,
        lib: None,
    },
    Program {
        name: "fileio",
        source: "fileio.c",
        pie: false,
        lib: None,
    },
    Program {
        name: "devproc",
        source: "devproc.c",
        pie: false,
        lib: None,
    },
    Program {
        name: "robust",
        source: "robust.c",
        pie: false,
        lib: None,
    },
    Program {
        name: "fleets",
        source: "fleets.c",
        pie: false,
        lib: None,
    },
    Program {
        name: "corestop",
        source: "corestop.c",
        pie: false,
        lib: None,
    },
    Program {
        name: "corepark",
        source: "corepark.c",
        pie: false,
        lib: None,
    },
    Program {
        name: "coreupdate",
        source: "coreupdate.c",
        pie: false,
        lib: None,
    },
    Program {
        name: "haretest",
        source: "haretest.c",
        pie: false,
        lib: Some(&HARE_LIB),
    },
    Program {
        name: "haremount",
        source: "haremount.c",
        pie: false,
        lib: None,
    },
    Program {
        name: "hareexec",
        source: "hareexec.c",
        pie: false,
        lib: None,
    },
    Program {
        name: "harekill",
        source: "harekill.c",
        pie: false,
        lib: None,
    },
    Program {
        name: "hareresize",
        source: "hareresize.c",
        pie: false,
        lib: None,
    },
];

/// Programs that are not tests (measurement programs, which print numbers, and helpers the
/// tests start): built and put into `/test` like [`PROGRAMS`], after them, but with no `PASS`
/// line, so `cargo xtask test` makes no cases for them.
pub const TOOLS: &[Program] = &[
    Program {
        name: "uperf",
        source: "uperf.c",
        pie: false,
        lib: None,
    },
    Program {
        name: "fsbench",
        source: "fsbench.c",
        pie: false,
        lib: None,
    },
    Program {
        name: "fuzz",
        source: "fuzz.c",
        pie: false,
        lib: None,
    },
    Program {
        name: "fleetecho",
        source: "fleetecho.c",
        pie: false,
        lib: None,
    },
    Program {
        name: "onhare",
        source: "onhare.c",
        pie: false,
        lib: None,
    },
    Program {
        name: "fsload",
        source: "fsload.c",
        pie: false,
        lib: None,
    },
];

/// Reef's own system programs, installed in `/bin`: the fleet manager, the one executable the
/// kernel trusts to bind cores to fleets (kernel `fleet.rs`), Hare's file server, a fleet
/// member (`fleet start hare --cores LIST /bin/hared LIST`), and `corectl`, which lists, stops,
/// starts, parks and unparks cores (kernel `corectl.rs`), the network server `netd` (`fleet start net
/// --cores C /bin/netd`) and `netctl`, which moves stack instances between it and the kernel's
/// switch.
pub const SYSTEM: &[Program] = &[
    Program {
        name: "fleet",
        source: "fleet.c",
        pie: false,
        lib: None,
    },
    Program {
        name: "hared",
        source: "hared.c",
        pie: false,
        lib: Some(&HARE_LIB),
    },
    Program {
        name: "hareroot",
        source: "hareroot.c",
        pie: false,
        lib: None,
    },
    Program {
        name: "corectl",
        source: "corectl.c",
        pie: false,
        lib: None,
    },
    Program {
        name: "netd",
        source: "netd.c",
        pie: false,
        lib: Some(&NET_LIB),
    },
    Program {
        name: "netctl",
        source: "netctl.c",
        pie: false,
        lib: None,
    },
];

/// A library crate behind a C ABI: a crate of its own workspace in `usr/`, built as the static
/// library the programs with [`Program::lib`] link.
pub struct RustLib {
    /// Its crate's directory.
    pub dir: &'static str,
    /// The static library cargo builds there.
    pub archive: &'static str,
}

/// lib/hare behind a C ABI (`usr/hare/`, `usr/hare.h`).
pub const HARE_LIB: RustLib = RustLib {
    dir: "usr/hare",
    archive: "usr/hare/target/release/libhare_c.a",
};

/// lib/net's network server behind a C ABI (`usr/netd/`, for `usr/netd.c`).
pub const NET_LIB: RustLib = RustLib {
    dir: "usr/netd",
    archive: "usr/netd/target/release/libnetd_c.a",
};

/// The shared headers in `usr/` (a change rebuilds every program).
const HEADERS: &[&str] = &[
    "reef-test.h",
    "reef_msg.h",
    "reef_server.h",
    "reef_core.h",
    "core_test.h",
    "hare.h",
    "hare_fleet.h",
];

/// The shell suite's directory, relative to the repository root, and in the initramfs.
pub const SHELL_SUITE_DIR: &str = "usr/sh";
/// The shell suite's runner in the initramfs (see `usr/sh/run.sh`).
pub const SHELL_SUITE_RUNNER: &str = "/test/sh/run.sh";

/// Directories of the initramfs, with their permissions, in archive order.
const DIRS: &[(&str, u32)] = &[
    ("bin", 0o755),
    ("dev", 0o755),
    ("dev/shm", 0o1777),
    ("etc", 0o755),
    ("proc", 0o755),
    ("root", 0o755),
    ("sys", 0o755),
    ("test", 0o755),
    ("test/sh", 0o755),
    ("tmp", 0o1777),
];

const PASSWD: &str = "root:x:0:0:root:/root:/bin/sh\n";
const GROUP: &str = "root:x:0:\n";

/// Where the programs are built.
pub fn out_dir() -> PathBuf {
    build::root().join("out/usr")
}

/// Path of the built program `name`.
pub fn program_path(name: &str) -> PathBuf {
    out_dir().join(name)
}

fn mtime(path: &Path) -> Option<SystemTime> {
    std::fs::metadata(path).and_then(|m| m.modified()).ok()
}

/// Whether `output` is missing or older than any of `inputs` (a missing input counts as new).
fn stale(output: &Path, inputs: &[PathBuf]) -> bool {
    let Some(out) = mtime(output) else {
        return true;
    };
    inputs.iter().any(|i| mtime(i).is_none_or(|t| t > out))
}

/// musl's library directory (crt files, libc.a), from the `-specs` file the musl-gcc wrapper
/// passes to gcc. Needed to link a static PIE, which the wrapper's specs cannot do.
fn musl_lib_dir() -> Result<PathBuf, String> {
    let wrapper = std::env::var_os("PATH")
        .and_then(|paths| {
            std::env::split_paths(&paths)
                .map(|d| d.join("musl-gcc"))
                .find(|p| p.is_file())
        })
        .ok_or("musl-gcc is not on PATH")?;
    let text = std::fs::read_to_string(&wrapper)
        .map_err(|e| format!("cannot read {}: {e}", wrapper.display()))?;
    let specs = text
        .split("-specs")
        .nth(1)
        .and_then(|rest| rest.split('"').nth(1))
        .ok_or_else(|| {
            format!(
                "{} does not name a -specs file; cannot find musl's crt files for static PIE",
                wrapper.display()
            )
        })?;
    let dir = Path::new(specs)
        .parent()
        .ok_or_else(|| format!("musl specs path {specs} has no directory"))?;
    if !dir.join("rcrt1.o").is_file() {
        return Err(format!(
            "{} has no rcrt1.o: this musl cannot link static PIE programs",
            dir.display()
        ));
    }
    Ok(dir.to_path_buf())
}

/// What the build checks about an ELF executable.
#[derive(Debug, PartialEq, Eq)]
pub struct ElfInfo {
    /// `e_type`: 2 (ET_EXEC) or 3 (ET_DYN).
    pub e_type: u16,
    /// Whether it asks for a program interpreter (PT_INTERP): a dynamically linked program.
    pub interp: bool,
}

/// Reads the header and program headers of a 64-bit little-endian x86-64 ELF file.
pub fn elf_info(bytes: &[u8]) -> Result<ElfInfo, String> {
    let u16_at = |o: usize| {
        bytes
            .get(o..o + 2)
            .map(|b| u16::from_le_bytes([b[0], b[1]]))
    };
    let u32_at = |o: usize| {
        bytes
            .get(o..o + 4)
            .map(|b| u32::from_le_bytes(b.try_into().expect("4 bytes")))
    };
    let u64_at = |o: usize| {
        bytes
            .get(o..o + 8)
            .map(|b| u64::from_le_bytes(b.try_into().expect("8 bytes")))
    };
    if bytes.get(..4) != Some(b"\x7fELF") {
        return Err("not an ELF file".into());
    }
    if bytes.len() < 64 {
        return Err("truncated ELF header".into());
    }
    if bytes[4] != 2 || bytes[5] != 1 || u16_at(18) != Some(62) {
        return Err("not a 64-bit little-endian x86-64 ELF file".into());
    }
    let e_type = u16_at(16).ok_or("truncated ELF header")?;
    let phoff = u64_at(32).ok_or("truncated ELF header")? as usize;
    let phentsize = u16_at(54).ok_or("truncated ELF header")? as usize;
    let phnum = u16_at(56).ok_or("truncated ELF header")? as usize;
    let mut interp = false;
    for i in 0..phnum {
        let p_type = u32_at(phoff + i * phentsize).ok_or("truncated program headers")?;
        interp |= p_type == 3;
    }
    Ok(ElfInfo { e_type, interp })
}

fn check_static(path: &Path, want_type: u16) -> Result<(), String> {
    let bytes = std::fs::read(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let info = elf_info(&bytes).map_err(|e| format!("{}: {e}", path.display()))?;
    if info.interp {
        return Err(format!(
            "{} is dynamically linked (it has a program interpreter); Reef runs static binaries",
            path.display()
        ));
    }
    if info.e_type != want_type {
        return Err(format!(
            "{} has ELF type {}, expected {want_type}",
            path.display(),
            info.e_type
        ));
    }
    Ok(())
}

/// Builds every test, tool and system program that is out of date (older than its source, the shared header or
/// this tool) with `musl-gcc -static`, installing musl-tools when missing. Returns their paths.
pub fn build_programs() -> Result<Vec<(&'static str, PathBuf)>, String> {
    deps::ensure(&[deps::MUSL_GCC])?;
    let root = build::root();
    let src = root.join("usr");
    let out = out_dir();
    std::fs::create_dir_all(&out).map_err(|e| format!("cannot create {}: {e}", out.display()))?;
    let tool = std::env::current_exe().ok();
    let mut libs: Vec<(&str, PathBuf)> = Vec::new();
    for lib in [&HARE_LIB, &NET_LIB] {
        libs.push((lib.dir, build_lib(lib)?));
    }
    let archive = |p: &Program| {
        p.lib
            .and_then(|l| libs.iter().find(|(dir, _)| *dir == l.dir))
            .map(|(_, path)| path.clone())
    };
    let mut built = Vec::new();
    let mut musl = None;
    for p in PROGRAMS.iter().chain(TOOLS).chain(SYSTEM) {
        let source = src.join(p.source);
        // Relative to the repository root (the compiler's directory), so FAIL lines name
        // `usr/FILE.c`.
        let relative = Path::new("usr").join(p.source);
        let target = out.join(p.name);
        let mut inputs = vec![source.clone()];
        inputs.extend(HEADERS.iter().map(|h| src.join(h)));
        inputs.extend(tool.clone());
        inputs.extend(archive(p));
        if stale(&target, &inputs) {
            eprintln!("xtask: building usr/{} -> out/usr/{}", p.source, p.name);
            // A name of its own, as other xtask processes may build at the same time.
            let tmp = out.join(format!(".{}.{}.tmp", p.name, std::process::id()));
            let mut cc = Command::new("musl-gcc");
            cc.current_dir(&root)
                .args([
                    "-O2",
                    "-g",
                    "-Wall",
                    "-Wextra",
                    "-std=gnu11",
                    "-pthread",
                    "-Iusr",
                ])
                .arg("-o")
                .arg(&tmp);
            if p.pie {
                // The wrapper's specs link a PIE against libc.so with an interpreter; name the
                // self-relocating start file (rcrt1.o) and link statically by hand instead.
                let lib: &PathBuf = match &musl {
                    Some(dir) => dir,
                    None => musl.insert(musl_lib_dir()?),
                };
                cc.args(["-fPIE", "-nostartfiles", "-static"])
                    .arg("-Wl,-pie,--no-dynamic-linker,-z,text")
                    .arg(lib.join("rcrt1.o"))
                    .arg(lib.join("crti.o"))
                    .arg(&relative)
                    .arg(lib.join("crtn.o"));
            } else {
                cc.args(["-static", "-no-pie"]).arg(&relative);
            }
            if let Some(lib) = archive(p) {
                cc.arg(lib);
            }
            let status = cc
                .status()
                .map_err(|e| format!("cannot run musl-gcc: {e}"))?;
            if !status.success() {
                let _ = std::fs::remove_file(&tmp);
                return Err(format!("musl-gcc failed to build usr/{}", p.source));
            }
            check_static(&tmp, if p.pie { 3 } else { 2 })?;
            std::fs::rename(&tmp, &target)
                .map_err(|e| format!("cannot rename {}: {e}", tmp.display()))?;
        }
        built.push((p.name, target));
    }
    // fsload's punzip archive beside the programs, where a native run finds it (fsload looks
    // next to itself, as it finds /test/punzip.zip on Reef and Linux in QEMU).
    let zip = out.join("punzip.zip");
    let bytes = crate::zip::archive();
    if std::fs::read(&zip).ok().as_deref() != Some(&bytes[..]) {
        let tmp = out.join(format!(".punzip.zip.{}.tmp", std::process::id()));
        std::fs::write(&tmp, &bytes).map_err(|e| format!("cannot write {}: {e}", tmp.display()))?;
        std::fs::rename(&tmp, &zip).map_err(|e| format!("cannot rename {}: {e}", tmp.display()))?;
    }
    Ok(built)
}

/// Builds `lib` (cargo decides whether anything changed); its archive's path.
fn build_lib(lib: &RustLib) -> Result<PathBuf, String> {
    let root = build::root();
    build::cargo_release(&root.join(lib.dir))
        .map_err(|e| format!("the C ABI crate {}: {e}", lib.dir))?;
    Ok(root.join(lib.archive))
}

/// A file of the shell suite: its name in `usr/sh/` and `/test/sh/`, and its bytes.
pub type SuiteFile = (String, Vec<u8>);

/// Checks the names of the shell suite's files: `run.sh`, and for every other `NAME.sh` a
/// `NAME.expected` (and no `.expected` without its script); plain names only.
pub fn check_suite_names(names: &[&str]) -> Result<(), String> {
    let has = |n: &str| names.contains(&n);
    if !has("run.sh") {
        return Err(format!("{SHELL_SUITE_DIR}/run.sh is missing"));
    }
    for n in names {
        if n.is_empty()
            || n.starts_with('.')
            || !n
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b))
        {
            return Err(format!("{SHELL_SUITE_DIR}/{n:?}: not a plain file name"));
        }
        if let Some(stem) = n.strip_suffix(".sh") {
            if *n != "run.sh" && !has(&format!("{stem}.expected")) {
                return Err(format!("{SHELL_SUITE_DIR}/{n} has no {stem}.expected"));
            }
        } else if let Some(stem) = n.strip_suffix(".expected") {
            if !has(&format!("{stem}.sh")) || stem == "run" {
                return Err(format!("{SHELL_SUITE_DIR}/{n} belongs to no script"));
            }
        } else {
            return Err(format!(
                "{SHELL_SUITE_DIR}/{n}: neither a script (.sh) nor an expected output (.expected)"
            ));
        }
    }
    Ok(())
}

/// Reads every file of the shell suite (`usr/sh/`), sorted by name, and checks it is complete.
pub fn shell_suite() -> Result<Vec<SuiteFile>, String> {
    let dir = build::root().join(SHELL_SUITE_DIR);
    let mut files = Vec::new();
    for entry in
        std::fs::read_dir(&dir).map_err(|e| format!("cannot read {}: {e}", dir.display()))?
    {
        let entry = entry.map_err(|e| format!("cannot read {}: {e}", dir.display()))?;
        let path = entry.path();
        let name = entry
            .file_name()
            .into_string()
            .map_err(|n| format!("{SHELL_SUITE_DIR}/{n:?}: not a UTF-8 name"))?;
        if !path.is_file() {
            return Err(format!("{}: not a regular file", path.display()));
        }
        let bytes =
            std::fs::read(&path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        files.push((name, bytes));
    }
    files.sort();
    let names: Vec<&str> = files.iter().map(|(n, _)| n.as_str()).collect();
    check_suite_names(&names)?;
    Ok(files)
}

/// Busybox's applet names, from `busybox --list`.
pub fn applets(busybox: &Path) -> Result<Vec<String>, String> {
    let out = Command::new(busybox)
        .arg("--list")
        .output()
        .map_err(|e| format!("cannot run {} --list: {e}", busybox.display()))?;
    if !out.status.success() {
        return Err(format!("{} --list failed", busybox.display()));
    }
    let text = String::from_utf8(out.stdout)
        .map_err(|_| format!("{} --list printed non-UTF-8 names", busybox.display()))?;
    let mut names: Vec<String> = Vec::new();
    for name in text.lines().map(str::trim).filter(|n| !n.is_empty()) {
        if name.contains('/') || name == "." || name == ".." {
            return Err(format!("busybox lists a strange applet name {name:?}"));
        }
        if name != "busybox" {
            names.push(name.to_string());
        }
    }
    names.sort();
    names.dedup();
    if !names.iter().any(|n| n == "sh") {
        return Err(format!("{} has no sh applet", busybox.display()));
    }
    Ok(names)
}

/// The initramfs entries for `busybox` (its bytes and applets), the built `programs` (in `/bin`
/// for [`SYSTEM`], else in `/test`), the shell `suite`'s files (scripts executable) and the
/// punzip workload's archive.
pub fn entries(
    busybox: Vec<u8>,
    applets: &[String],
    programs: &[(&str, Vec<u8>)],
    suite: &[SuiteFile],
) -> Vec<Entry> {
    let mut e: Vec<Entry> = DIRS.iter().map(|&(d, perm)| Entry::dir(d, perm)).collect();
    e.push(Entry::file("bin/busybox", 0o755, busybox));
    for a in applets {
        e.push(Entry::symlink(&format!("bin/{a}"), "busybox"));
    }
    e.push(Entry::file("etc/group", 0o644, GROUP.into()));
    e.push(Entry::file("etc/passwd", 0o644, PASSWD.into()));
    for (name, bytes) in programs {
        let dir = if SYSTEM.iter().any(|p| p.name == *name) {
            "bin"
        } else {
            "test"
        };
        e.push(Entry::file(&format!("{dir}/{name}"), 0o755, bytes.clone()));
    }
    for (name, bytes) in suite {
        let perm = if name.ends_with(".sh") { 0o755 } else { 0o644 };
        e.push(Entry::file(&format!("test/sh/{name}"), perm, bytes.clone()));
    }
    e.push(Entry::file(crate::zip::PATH, 0o644, crate::zip::archive()));
    e
}

/// What every initramfs holds: Debian's static busybox, its applet names and the built programs.
pub struct Contents {
    /// `/bin/busybox`'s bytes.
    pub busybox: Vec<u8>,
    /// Its applets (`/bin/<applet>` links).
    pub applets: Vec<String>,
    /// The test programs and tools (`/test/<name>`) and the system programs (`/bin/<name>`).
    pub programs: Vec<(&'static str, Vec<u8>)>,
}

/// Builds the test programs and reads them and busybox, installing musl-tools and
/// busybox-static when missing.
pub fn contents() -> Result<Contents, String> {
    deps::ensure(&[deps::MUSL_GCC, deps::BUSYBOX])?;
    let built = build_programs()?;
    let busybox = Path::new(deps::BUSYBOX.program);
    check_static(busybox, 2).map_err(|e| {
        format!(
            "{e}\n(Debian's `busybox` package installs a dynamic /bin/busybox; \
             `apt-get install busybox-static` replaces it with the static one)"
        )
    })?;
    let busybox_bytes =
        std::fs::read(busybox).map_err(|e| format!("cannot read {}: {e}", busybox.display()))?;
    let applets = applets(busybox)?;
    let mut programs = Vec::new();
    for (name, path) in &built {
        let bytes =
            std::fs::read(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        programs.push((*name, bytes));
    }
    Ok(Contents {
        busybox: busybox_bytes,
        applets,
        programs,
    })
}

/// Writes `archive` to `path` (through a temporary file, as other xtask processes may read it),
/// refusing a path QEMU's `-initrd` cannot carry.
pub fn write_archive(path: &Path, archive: &[u8]) -> Result<(), String> {
    let text = path.to_string_lossy();
    if text.contains(',') || text.contains(' ') {
        return Err(format!(
            "the initramfs path {text} holds a comma or space, which QEMU's -initrd cannot \
             carry for a multiboot kernel: use a checkout path without them"
        ));
    }
    let tmp = path.with_extension(format!("cpio.{}.tmp", std::process::id()));
    std::fs::write(&tmp, archive).map_err(|e| format!("cannot write {}: {e}", tmp.display()))?;
    std::fs::rename(&tmp, path).map_err(|e| format!("cannot rename {}: {e}", tmp.display()))
}

/// The variant kernel images under `/boot` (`variant`), as the last kernel build left them in
/// `out/boot`: none if no kernel was built yet.
fn boot_images() -> Result<Vec<Entry>, String> {
    let dir = crate::variant::boot_dir();
    let mut e = vec![Entry::dir("boot", 0o755)];
    for v in crate::variant::VARIANTS {
        let path = dir.join(v.name);
        match std::fs::read(&path) {
            Ok(bytes) => e.push(Entry::file(&format!("boot/{}", v.name), 0o644, bytes)),
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => {}
            Err(err) => return Err(format!("cannot read {}: {err}", path.display())),
        }
    }
    Ok(e)
}

/// Builds the test programs and writes `out/initramfs.cpio` (with the variant kernel images the
/// last kernel build made); returns its absolute path.
pub fn initramfs() -> Result<PathBuf, String> {
    let c = contents()?;
    let suite = shell_suite()?;
    let mut all = entries(c.busybox, &c.applets, &c.programs, &suite);
    all.extend(boot_images()?);
    let archive = cpio::write(&all)?;
    let path = build::root().join("out/initramfs.cpio");
    write_archive(&path, &archive)?;
    Ok(path)
}

/// `cargo xtask initramfs [--list]`: builds the programs and the initramfs, reads the archive
/// back to check it, and prints a summary (or every entry, like `cpio -tv`).
pub fn main(args: &[String]) -> Result<u8, String> {
    let list = match args {
        [] => false,
        [flag] if flag == "--list" => true,
        _ => return Err("usage: cargo xtask initramfs [--list]".into()),
    };
    let path = initramfs()?;
    let bytes = std::fs::read(&path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let entries = cpio::read(&bytes)?;
    if list {
        for r in &entries {
            let e = &r.entry;
            let target = if e.mode & cpio::S_IFMT == cpio::S_IFLNK {
                format!(" -> {}", String::from_utf8_lossy(&e.data))
            } else {
                String::new()
            };
            println!(
                "{} {}/{} {:>8} /{}{target}",
                cpio::mode_string(e.mode),
                r.uid,
                r.gid,
                e.data.len(),
                e.name
            );
        }
    }
    println!(
        "{}: {} entries, {} KiB",
        path.display(),
        entries.len(),
        bytes.len() / 1024
    );
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout_has_directories_first_and_sane_modes() {
        let applets = vec!["echo".to_string(), "sh".to_string()];
        let suite = vec![
            ("run.sh".to_string(), b"echo PASS\n".to_vec()),
            ("x.expected".to_string(), b"x\n".to_vec()),
            ("x.sh".to_string(), b"echo x\n".to_vec()),
        ];
        let e = entries(vec![1, 2, 3], &applets, &[("hello", vec![4, 5])], &suite);
        let archive = cpio::write(&e).expect("valid layout");
        let back = cpio::read(&archive).unwrap();
        let find = |n: &str| {
            back.iter()
                .find(|r| r.entry.name == n)
                .unwrap_or_else(|| panic!("{n} missing"))
        };
        assert_eq!(find("tmp").entry.mode, cpio::S_IFDIR | 0o1777);
        assert_eq!(find("bin").entry.mode, cpio::S_IFDIR | 0o755);
        assert_eq!(find("bin/busybox").entry.mode, cpio::S_IFREG | 0o755);
        assert_eq!(find("bin/sh").entry.mode, cpio::S_IFLNK | 0o777);
        assert_eq!(find("bin/sh").entry.data, b"busybox");
        assert_eq!(find("etc/passwd").entry.mode, cpio::S_IFREG | 0o644);
        assert!(String::from_utf8_lossy(&find("etc/passwd").entry.data).starts_with("root:x:0:0:"));
        assert_eq!(find("test/hello").entry.data, vec![4, 5]);
        assert_eq!(find("test/sh/run.sh").entry.mode, cpio::S_IFREG | 0o755);
        assert_eq!(find("test/sh/x.sh").entry.data, b"echo x\n");
        assert_eq!(find("test/sh/x.expected").entry.mode, cpio::S_IFREG | 0o644);
        for d in ["dev", "proc", "root", "sys", "etc", "test", "test/sh"] {
            assert_eq!(find(d).entry.mode & cpio::S_IFMT, cpio::S_IFDIR);
        }
    }

    #[test]
    fn shell_suite_names() {
        assert!(check_suite_names(&["a.expected", "a.sh", "run.sh"]).is_ok());
        assert!(check_suite_names(&["a.expected", "a.sh"]).is_err());
        assert!(check_suite_names(&["a.sh", "run.sh"]).is_err());
        assert!(check_suite_names(&["b.expected", "run.sh"]).is_err());
        assert!(check_suite_names(&["run.expected", "run.sh"]).is_err());
        assert!(check_suite_names(&["notes.txt", "run.sh"]).is_err());
        assert!(check_suite_names(&["a b.sh", "a b.expected", "run.sh"]).is_err());
    }

    #[test]
    fn the_shell_suite_is_complete() {
        let suite = shell_suite().unwrap();
        let names: Vec<&str> = suite.iter().map(|(n, _)| n.as_str()).collect();
        for script in [
            "files", "dirs", "pipes", "find", "tar", "text", "xargs", "copy", "jobs",
        ] {
            assert!(
                names.contains(&format!("{script}.sh").as_str()),
                "{script}.sh"
            );
        }
        let runner = &suite.iter().find(|(n, _)| n == "run.sh").unwrap().1;
        let runner = String::from_utf8_lossy(runner);
        assert!(runner.contains("PASS shell-suite"));
        assert!(runner.contains("FAIL shell-suite: "));
    }

    #[test]
    fn elf_info_reads_type_and_interpreter() {
        // A minimal ELF64 header with one PT_INTERP program header right after it.
        let mut elf = vec![0u8; 64 + 56];
        elf[..4].copy_from_slice(b"\x7fELF");
        elf[4] = 2;
        elf[5] = 1;
        elf[16] = 3; // ET_DYN
        elf[18] = 62; // x86-64
        elf[32] = 64; // e_phoff
        elf[54] = 56; // e_phentsize
        elf[56] = 1; // e_phnum
        elf[64] = 3; // PT_INTERP
        assert_eq!(
            elf_info(&elf).unwrap(),
            ElfInfo {
                e_type: 3,
                interp: true
            }
        );
        elf[64] = 1; // PT_LOAD
        assert_eq!(
            elf_info(&elf).unwrap(),
            ElfInfo {
                e_type: 3,
                interp: false
            }
        );
        assert!(elf_info(&elf[..60]).is_err());
        assert!(elf_info(b"#!/bin/sh\n").is_err());
    }
}
