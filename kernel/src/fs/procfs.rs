//! `/proc` and `/sys`: files generated from kernel state when they are opened.
//!
//! ```text
//! /proc/cpuinfo  meminfo  mounts  uptime  version  loadavg  stat   system information
//! /proc/self -> <pid>                                the caller's directory
//! /proc/thread-self -> <pid>/task/<tid>              the calling thread's directory
//! /proc/net/dev  route  tcp  udp  tcp6  udp6         interfaces, routes, sockets (`net::ifaces`);
//!             `/proc/<pid>/net` is the same directory (one network name space)
//! /proc/<pid>/exe -> program path, fd/<n> -> open file, status, stat, cmdline, environ,
//!             maps, mounts, mountinfo, comm (the main thread's name, writable)
//! /proc/<pid>/task/<tid>/stat  status  comm  cmdline  environ  maps   one thread
//! /proc/reef/hare                                    the mounted Hare: servers, cores' clients
//! /proc/reef/fleets                                  cores that fleets own: node, member, fleet
//! /proc/reef/memory                                  per node: free frames, reserve, heap
//! /proc/reef/names                                   the name directory, per-core name caches
//! /proc/reef/nrfs                                    NR-FS log tails and replica progress
//! /proc/reef/syscalls                                system calls: count and time, all cores
//! /proc/reef/tlb                                     TLB shootdowns; IPIs and steal time per core
//! /sys/devices/system/cpu/online  possible  present  cores as lists (`0-3`), as Linux's sysfs
//! ```
//!
//! Of sysfs, Reef has the files glibc's `sysconf(_SC_NPROCESSORS_ONLN)` and `nproc` read:
//! `online` lists the cores that run now (`corectl stop` removes one), `possible` and
//! `present` every core the machine has.
//!
//! `/proc` is reached by absolute paths, by paths relative to a working directory inside it,
//! and by directory descriptors opened in it ([`super::path`]); the NR-FS directory `/proc` is
//! only its mount point. Contents are generated once per open, so a reader sees one consistent
//! snapshot. Only the `comm` files are writable (by the process itself, as on Linux: glibc's
//! and musl's `pthread_setname_np` name another thread so); the rest answers EACCES.

use crate::fd::{KStat, Node, OpenFile, DEV_PROC, O_ACCMODE, O_RDONLY};
use crate::proc::{self, Comm, Pid, Process, Thread};
use abi::Errno;
use alloc::format;
use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::fmt::Write;
use nrfs::Kind;

/// A generated file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum File {
    /// `/proc/cpuinfo`.
    CpuInfo,
    /// `/proc/meminfo`.
    MemInfo,
    /// `/proc/mounts`.
    Mounts,
    /// `/proc/uptime`.
    Uptime,
    /// `/proc/version`.
    Version,
    /// `/proc/loadavg`.
    LoadAvg,
    /// `/proc/stat`.
    SysStat,
    /// `/proc/reef/memory`.
    Memory,
    /// `/proc/reef/names`.
    Names,
    /// `/proc/reef/fleets`.
    Fleets,
    /// `/proc/reef/nrfs`.
    Nrfs,
    /// `/proc/reef/syscalls`.
    Syscalls,
    /// `/proc/reef/hare`.
    Hare,
    /// `/proc/reef/net`.
    Net,
    /// `/proc/reef/tlb`.
    Tlb,
    /// `/proc/net/dev`.
    NetDev,
    /// `/proc/net/route`.
    NetRoute,
    /// `/proc/net/tcp`.
    NetTcp,
    /// `/proc/net/udp`.
    NetUdp,
    /// `/proc/net/tcp6`.
    NetTcp6,
    /// `/proc/net/udp6`.
    NetUdp6,
    /// `/proc/<pid>/status`.
    Status(Pid),
    /// `/proc/<pid>/stat`.
    Stat(Pid),
    /// `/proc/<pid>/cmdline`.
    Cmdline(Pid),
    /// `/proc/<pid>/maps`.
    Maps(Pid),
    /// `/proc/<pid>/environ` (only for its user and root: [`creds::Credentials::may_inspect`]).
    Environ(Pid),
    /// `/proc/<pid>/mountinfo`.
    MountInfo(Pid),
    /// `/proc/<pid>/task/<tid>/comm` (`/proc/<pid>/comm` is the main thread's, tid = pid).
    Comm(Pid, Pid),
    /// `/proc/<pid>/task/<tid>/stat`.
    TaskStat(Pid, Pid),
    /// `/proc/<pid>/task/<tid>/status`.
    TaskStatus(Pid, Pid),
    /// `/sys/devices/system/cpu/online`.
    CpuOnline,
    /// `/sys/devices/system/cpu/possible` and `present` (the same list here).
    CpuPresent,
}

/// A directory of `/sys`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SysDir {
    /// `/sys`.
    Root,
    /// `/sys/devices`.
    Devices,
    /// `/sys/devices/system`.
    System,
    /// `/sys/devices/system/cpu`.
    Cpu,
}

/// A place in `/proc`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Place {
    /// `/proc`.
    Root,
    /// `/proc/reef`.
    Reef,
    /// `/proc/net` (also reached as `/proc/<pid>/net`).
    Net,
    /// `/proc/<pid>`.
    Pid(Pid),
    /// `/proc/<pid>/fd`.
    Fds(Pid),
    /// A file.
    File(File),
    /// `/proc/self`.
    SelfLink(Pid),
    /// `/proc/thread-self` (process, thread).
    ThreadSelf(Pid, Pid),
    /// `/proc/<pid>/task`.
    Tasks(Pid),
    /// `/proc/<pid>/task/<tid>`.
    Task(Pid, Pid),
    /// `/proc/<pid>/exe`.
    Exe(Pid),
    /// `/proc/<pid>/fd/<n>`.
    Fd(Pid, i32),
    /// A directory of `/sys`.
    Sys(SysDir),
}

/// What a path in `/proc` leads to.
pub enum Resolved {
    /// A place in `/proc`.
    Proc(Place),
    /// A symlink followed out of `/proc`: resolve this absolute path instead.
    Outside(Vec<u8>),
    /// `/proc/<pid>/fd/<n>` followed: that open file.
    Open(Arc<OpenFile>),
}

/// The files directly in `/proc`, by name.
const ROOT_FILES: &[(&[u8], File)] = &[
    (b"cpuinfo", File::CpuInfo),
    (b"meminfo", File::MemInfo),
    (b"mounts", File::Mounts),
    (b"uptime", File::Uptime),
    (b"version", File::Version),
    (b"loadavg", File::LoadAvg),
    (b"stat", File::SysStat),
];

/// The files of `/proc/net`, by name.
const NET_FILES: &[(&[u8], File)] = &[
    (b"dev", File::NetDev),
    (b"route", File::NetRoute),
    (b"tcp", File::NetTcp),
    (b"udp", File::NetUdp),
    (b"tcp6", File::NetTcp6),
    (b"udp6", File::NetUdp6),
];

/// The entries of `/sys`'s directories: directory, name, place.
const SYS_ENTRIES: &[(SysDir, &[u8], Place)] = &[
    (SysDir::Root, b"devices", Place::Sys(SysDir::Devices)),
    (SysDir::Devices, b"system", Place::Sys(SysDir::System)),
    (SysDir::System, b"cpu", Place::Sys(SysDir::Cpu)),
    (SysDir::Cpu, b"online", Place::File(File::CpuOnline)),
    (SysDir::Cpu, b"possible", Place::File(File::CpuPresent)),
    (SysDir::Cpu, b"present", Place::File(File::CpuPresent)),
];

/// The process `pid`, `ENOENT` if there is none.
fn process(pid: Pid) -> Result<Arc<Process>, Errno> {
    proc::lookup(pid).map(|e| e.process).ok_or(Errno::ENOENT)
}

/// Thread `tid` of process `pid`, `ENOENT` if there is none.
fn thread(pid: Pid, tid: Pid) -> Result<Arc<Thread>, Errno> {
    process(pid)?
        .threads
        .lock()
        .iter()
        .find(|t| t.tid == tid)
        .cloned()
        .ok_or(Errno::ENOENT)
}

/// The entries of `/proc/<pid>/task/<tid>/`.
fn task_files(pid: Pid, tid: Pid) -> [(&'static [u8], File); 6] {
    [
        (b"stat", File::TaskStat(pid, tid)),
        (b"status", File::TaskStatus(pid, tid)),
        (b"comm", File::Comm(pid, tid)),
        (b"cmdline", File::Cmdline(pid)),
        (b"environ", File::Environ(pid)),
        (b"maps", File::Maps(pid)),
    ]
}

/// Parses a process id or descriptor number: decimal, at most 9 digits, no leading zero;
/// `None` for anything else.
fn parse_num(s: &[u8]) -> Option<u32> {
    if s.is_empty()
        || s.len() > 9
        || !s.iter().all(u8::is_ascii_digit)
        || s[0] == b'0' && s.len() > 1
    {
        return None;
    }
    Some(s.iter().fold(0u32, |n, d| n * 10 + u32::from(d - b'0')))
}

/// Looks `name` up in directory `dir`.
fn child(me: &Process, dir: Place, name: &[u8]) -> Result<Place, Errno> {
    match dir {
        Place::Root => {
            if let Some((_, f)) = ROOT_FILES.iter().find(|(n, _)| *n == name) {
                return Ok(Place::File(*f));
            }
            match name {
                b"self" => Ok(Place::SelfLink(me.pid)),
                b"thread-self" => {
                    let tid = proc::sched::current().map_or(me.pid, |t| t.tid);
                    Ok(Place::ThreadSelf(me.pid, tid))
                }
                b"reef" => Ok(Place::Reef),
                b"net" => Ok(Place::Net),
                _ => {
                    let pid = parse_num(name).ok_or(Errno::ENOENT)?;
                    process(pid)?;
                    Ok(Place::Pid(pid))
                }
            }
        }
        Place::Reef => match name {
            b"memory" => Ok(Place::File(File::Memory)),
            b"names" => Ok(Place::File(File::Names)),
            b"fleets" => Ok(Place::File(File::Fleets)),
            b"nrfs" => Ok(Place::File(File::Nrfs)),
            b"syscalls" => Ok(Place::File(File::Syscalls)),
            b"tlb" => Ok(Place::File(File::Tlb)),
            b"hare" => Ok(Place::File(File::Hare)),
            b"net" => Ok(Place::File(File::Net)),
            _ => Err(Errno::ENOENT),
        },
        Place::Net => NET_FILES
            .iter()
            .find(|(n, _)| *n == name)
            .map(|&(_, f)| Place::File(f))
            .ok_or(Errno::ENOENT),
        Place::Pid(pid) => match name {
            b"exe" => Ok(Place::Exe(pid)),
            b"fd" => Ok(Place::Fds(pid)),
            b"status" => Ok(Place::File(File::Status(pid))),
            b"stat" => Ok(Place::File(File::Stat(pid))),
            b"cmdline" => Ok(Place::File(File::Cmdline(pid))),
            b"maps" => Ok(Place::File(File::Maps(pid))),
            b"environ" => Ok(Place::File(File::Environ(pid))),
            b"mounts" => Ok(Place::File(File::Mounts)),
            b"mountinfo" => Ok(Place::File(File::MountInfo(pid))),
            b"comm" => Ok(Place::File(File::Comm(pid, pid))),
            b"task" => Ok(Place::Tasks(pid)),
            b"net" => Ok(Place::Net),
            _ => Err(Errno::ENOENT),
        },
        Place::Tasks(pid) => {
            let tid = parse_num(name).ok_or(Errno::ENOENT)?;
            thread(pid, tid)?;
            Ok(Place::Task(pid, tid))
        }
        Place::Task(pid, tid) => task_files(pid, tid)
            .iter()
            .find(|(n, _)| *n == name)
            .map(|&(_, f)| Place::File(f))
            .ok_or(Errno::ENOENT),
        Place::Sys(d) => SYS_ENTRIES
            .iter()
            .find(|(at, n, _)| *at == d && *n == name)
            .map(|&(_, _, place)| place)
            .ok_or(Errno::ENOENT),
        Place::Fds(pid) => {
            let fd = parse_num(name).ok_or(Errno::ENOENT)? as i32;
            process(pid)?
                .files
                .lock()
                .get(fd)
                .map_err(|_| Errno::ENOENT)?;
            Ok(Place::Fd(pid, fd))
        }
        Place::File(_) | Place::Exe(_) | Place::Fd(..) => Err(Errno::ENOTDIR),
        Place::SelfLink(pid) => child(me, Place::Pid(pid), name),
        Place::ThreadSelf(pid, tid) => child(me, Place::Task(pid, tid), name),
    }
}

/// Resolves the components of a path in `/proc` or `/sys`, the first being `proc` or `sys`
/// (already free of `.` and `..`: [`super::path`]).
pub fn resolve(me: &Process, comps: &[&[u8]], follow_last: bool) -> Result<Resolved, Errno> {
    let (mut at, comps) = match comps.split_first() {
        Some((&b"sys", below)) => (Place::Sys(SysDir::Root), below),
        Some((_, below)) => (Place::Root, below),
        None => (Place::Root, comps),
    };
    for (i, c) in comps.iter().enumerate() {
        let last = i + 1 == comps.len();
        at = child(me, at, c)?;
        if last && !follow_last {
            break;
        }
        match at {
            Place::SelfLink(pid) => at = Place::Pid(pid),
            Place::ThreadSelf(pid, tid) => at = Place::Task(pid, tid),
            Place::Exe(pid) if last => {
                return Ok(Resolved::Outside(
                    process(pid)?.exe.lock().as_bytes().to_vec(),
                ))
            }
            Place::Fd(pid, fd) if last => {
                return Ok(Resolved::Open(process(pid)?.files.lock().get(fd)?))
            }
            Place::Exe(_) | Place::Fd(..) if !last => return Err(Errno::ENOTDIR),
            _ => {}
        }
    }
    Ok(Resolved::Proc(at))
}

/// A symlink's target (`readlink`); EINVAL for anything else.
pub fn readlink(place: Place) -> Result<Vec<u8>, Errno> {
    match place {
        Place::SelfLink(pid) => Ok(format!("{pid}").into_bytes()),
        Place::ThreadSelf(pid, tid) => Ok(format!("{pid}/task/{tid}").into_bytes()),
        Place::Exe(pid) => Ok(process(pid)?.exe.lock().as_bytes().to_vec()),
        Place::Fd(pid, fd) => {
            let f = process(pid)?.files.lock().get(fd)?;
            Ok(match &f.node {
                Node::PipeRead(p) | Node::PipeWrite(p) => format!("pipe:[{}]", p.id).into_bytes(),
                Node::Socket(e) => format!("socket:[{}]", e.id).into_bytes(),
                Node::Inet(s) => format!("socket:[{}]", s.ino).into_bytes(),
                Node::Netlink(s) => format!("socket:[{}]", s.ino).into_bytes(),
                Node::Epoll(_) => b"anon_inode:[eventpoll]".to_vec(),
                Node::EventFd(_) => b"anon_inode:[eventfd]".to_vec(),
                Node::TimerFd(_) => b"anon_inode:[timerfd]".to_vec(),
                _ => f.path.clone(),
            })
        }
        _ => Err(Errno::EINVAL),
    }
}

/// Whether `place` is a directory (`/proc`, `/proc/reef`, `/proc/<pid>`, `/proc/<pid>/fd`,
/// `/proc/<pid>/task` and its threads', those of `/sys`).
fn is_dir(place: Place) -> bool {
    matches!(
        place,
        Place::Root
            | Place::Reef
            | Place::Net
            | Place::Pid(_)
            | Place::Fds(_)
            | Place::Tasks(_)
            | Place::Task(..)
            | Place::Sys(_)
    )
}

/// A synthetic inode number, distinct per place.
fn ino_of(place: Place) -> u64 {
    let (kind, pid, n) = match place {
        Place::Root => (1, 0, 0),
        Place::Reef => (2, 0, 0),
        Place::Net => (2, 0, 1),
        Place::Pid(p) => (3, p, 0),
        Place::Fds(p) => (4, p, 0),
        Place::SelfLink(_) => (5, 0, 0),
        Place::Exe(p) => (6, p, 0),
        Place::Fd(p, fd) => (7, p, fd as u32),
        Place::Sys(d) => (10, 0, d as u32),
        Place::ThreadSelf(..) => (5, 0, 1),
        // Thread ids are unique among processes too.
        Place::Tasks(p) => (11, p, 1),
        Place::Task(_, t) => (11, t, 0),
        Place::File(f) => match f {
            File::CpuInfo => (8, 0, 0),
            File::MemInfo => (8, 0, 1),
            File::Mounts => (8, 0, 2),
            File::Uptime => (8, 0, 3),
            File::Version => (8, 0, 4),
            File::Nrfs => (8, 0, 5),
            File::LoadAvg => (8, 0, 6),
            File::Syscalls => (8, 0, 7),
            File::Tlb => (8, 0, 8),
            File::Memory => (8, 0, 9),
            File::Names => (8, 0, 10),
            File::Fleets => (8, 0, 11),
            File::Hare => (8, 0, 12),
            File::Net => (8, 0, 13),
            File::SysStat => (8, 0, 14),
            File::CpuOnline => (8, 0, 15),
            File::CpuPresent => (8, 0, 16),
            File::NetDev => (8, 0, 17),
            File::NetRoute => (8, 0, 18),
            File::NetTcp => (8, 0, 19),
            File::NetUdp => (8, 0, 20),
            File::NetTcp6 => (8, 0, 21),
            File::NetUdp6 => (8, 0, 22),
            File::Environ(p) => (9, p, 4),
            File::MountInfo(p) => (9, p, 5),
            File::Status(p) => (9, p, 0),
            File::Stat(p) => (9, p, 1),
            File::Cmdline(p) => (9, p, 2),
            File::Maps(p) => (9, p, 3),
            File::Comm(_, t) => (12, t, 0),
            File::TaskStat(_, t) => (12, t, 1),
            File::TaskStatus(_, t) => (12, t, 2),
        },
    };
    (kind << 56) | (u64::from(pid) << 16) | u64::from(n)
}

/// Attributes of `place` (`size` for a file whose contents were generated).
pub fn stat_of(place: Place, size: u64) -> KStat {
    let mode = if is_dir(place) {
        Kind::Dir.mode_bits() | 0o555
    } else if matches!(place, Place::File(File::Environ(_))) {
        Kind::File.mode_bits() | 0o400
    } else if matches!(place, Place::File(File::Comm(..))) {
        Kind::File.mode_bits() | 0o644
    } else if matches!(place, Place::File(_)) {
        Kind::File.mode_bits() | 0o444
    } else {
        Kind::Symlink.mode_bits() | 0o777
    };
    let mut s = KStat::synthetic(DEV_PROC, ino_of(place), mode, size);
    if is_dir(place) {
        s.nlink = 2;
    }
    s
}

/// Opens a place for `me`: read-only but for `comm`, which its process's user (and root)
/// may open for writing, as Linux's mode 0644 says; `environ` only for them.
pub fn open(me: &Process, place: Place, flags: u32, path: Vec<u8>) -> Result<Arc<OpenFile>, Errno> {
    let writes = flags & O_ACCMODE != O_RDONLY;
    let owner_only = match place {
        Place::File(File::Comm(pid, _)) if writes => Some(pid),
        _ if writes => return Err(Errno::EACCES),
        Place::File(File::Environ(pid)) => Some(pid),
        _ => None,
    };
    if let Some(pid) = owner_only {
        let p = process(pid)?;
        let (uid, gid) = {
            let c = p.creds.lock();
            (c.uid, c.gid)
        };
        me.creds.lock().may_inspect(uid, gid)?;
    }
    match place {
        Place::File(f) => Ok(OpenFile::new(
            Node::ProcFile(place, generate(f)?),
            flags,
            path,
        )),
        p if is_dir(p) => Ok(OpenFile::new(Node::ProcDir(place), flags, path)),
        // Only reached with O_NOFOLLOW on a link.
        _ => Err(Errno::ELOOP),
    }
}

/// One directory entry: inode, `d_type`, name.
pub type Entry = (u64, u8, Vec<u8>);

/// The entries of directory `dir` (`.` and `..` first).
pub fn list(dir: Place) -> Result<Vec<Entry>, Errno> {
    let d = Kind::Dir.dirent_type();
    let f = Kind::File.dirent_type();
    let l = Kind::Symlink.dirent_type();
    let up = match dir {
        Place::Sys(SysDir::Devices) => Place::Sys(SysDir::Root),
        Place::Sys(SysDir::System) => Place::Sys(SysDir::Devices),
        Place::Sys(SysDir::Cpu) => Place::Sys(SysDir::System),
        Place::Tasks(pid) => Place::Pid(pid),
        Place::Task(pid, _) => Place::Tasks(pid),
        _ => Place::Root,
    };
    let mut out: Vec<Entry> = alloc::vec![
        (ino_of(dir), d, b".".to_vec()),
        (ino_of(up), d, b"..".to_vec())
    ];
    match dir {
        Place::Sys(at) => {
            for &(_, name, place) in SYS_ENTRIES.iter().filter(|(d, ..)| *d == at) {
                let kind = if is_dir(place) { d } else { f };
                out.push((ino_of(place), kind, name.to_vec()));
            }
        }
        Place::Root => {
            for (name, file) in ROOT_FILES {
                out.push((ino_of(Place::File(*file)), f, name.to_vec()));
            }
            out.push((ino_of(Place::Reef), d, b"reef".to_vec()));
            out.push((ino_of(Place::Net), d, b"net".to_vec()));
            out.push((ino_of(Place::SelfLink(0)), l, b"self".to_vec()));
            out.push((ino_of(Place::ThreadSelf(0, 0)), l, b"thread-self".to_vec()));
            for pid in proc::all_pids() {
                out.push((ino_of(Place::Pid(pid)), d, format!("{pid}").into_bytes()));
            }
        }
        Place::Reef => {
            out.push((ino_of(Place::File(File::Memory)), f, b"memory".to_vec()));
            out.push((ino_of(Place::File(File::Fleets)), f, b"fleets".to_vec()));
            out.push((ino_of(Place::File(File::Names)), f, b"names".to_vec()));
            out.push((ino_of(Place::File(File::Nrfs)), f, b"nrfs".to_vec()));
            out.push((ino_of(Place::File(File::Syscalls)), f, b"syscalls".to_vec()));
            out.push((ino_of(Place::File(File::Tlb)), f, b"tlb".to_vec()));
            out.push((ino_of(Place::File(File::Hare)), f, b"hare".to_vec()));
            out.push((ino_of(Place::File(File::Net)), f, b"net".to_vec()));
        }
        Place::Net => {
            for (name, file) in NET_FILES {
                out.push((ino_of(Place::File(*file)), f, name.to_vec()));
            }
        }
        Place::Pid(pid) => {
            process(pid)?;
            out.push((ino_of(Place::Exe(pid)), l, b"exe".to_vec()));
            out.push((ino_of(Place::Net), d, b"net".to_vec()));
            out.push((ino_of(Place::Fds(pid)), d, b"fd".to_vec()));
            out.push((ino_of(Place::Tasks(pid)), d, b"task".to_vec()));
            for (name, file) in [
                (&b"status"[..], File::Status(pid)),
                (b"stat", File::Stat(pid)),
                (b"cmdline", File::Cmdline(pid)),
                (b"maps", File::Maps(pid)),
                (b"environ", File::Environ(pid)),
                (b"mounts", File::Mounts),
                (b"mountinfo", File::MountInfo(pid)),
                (b"comm", File::Comm(pid, pid)),
            ] {
                out.push((ino_of(Place::File(file)), f, name.to_vec()));
            }
        }
        Place::Tasks(pid) => {
            let p = process(pid)?;
            let tids: Vec<Pid> = p.threads.lock().iter().map(|t| t.tid).collect();
            for tid in tids {
                let name = format!("{tid}").into_bytes();
                out.push((ino_of(Place::Task(pid, tid)), d, name));
            }
        }
        Place::Task(pid, tid) => {
            thread(pid, tid)?;
            for (name, file) in task_files(pid, tid) {
                out.push((ino_of(Place::File(file)), f, name.to_vec()));
            }
        }
        Place::Fds(pid) => {
            let p = process(pid)?;
            let fds: Vec<i32> = p.files.lock().iter().map(|(n, _)| n).collect();
            for fd in fds {
                out.push((ino_of(Place::Fd(pid, fd)), l, format!("{fd}").into_bytes()));
            }
        }
        _ => return Err(Errno::ENOTDIR),
    }
    Ok(out)
}

/// The contents of a file, now.
fn generate(f: File) -> Result<Vec<u8>, Errno> {
    let mut s = String::new();
    match f {
        File::CpuInfo => {
            let mhz = crate::time::tsc_hz() / 1_000_000;
            for core in crate::kcb::online_cores() {
                let k = crate::kcb::get(core).ok_or(Errno::EIO)?;
                let _ = write!(
                    s,
                    "processor\t: {core}\nvendor_id\t: {}\nmodel name\t: Reef virtual CPU\n\
                     cpu MHz\t\t: {mhz}.000\nphysical id\t: {}\ncore id\t\t: {core}\n\
                     apicid\t\t: {}\nnuma node\t: {}\n\n",
                    vendor(),
                    k.node_id,
                    k.apic_id,
                    k.node_id
                );
            }
        }
        File::MemInfo => {
            let total = crate::mm::total_bytes();
            let free = crate::mm::free_bytes();
            let _ = write!(
                s,
                "MemTotal:       {:8} kB\nMemFree:        {:8} kB\nMemAvailable:   {:8} kB\n\
                 Shmem:          {:8} kB\n",
                total / 1024,
                free / 1024,
                free / 1024,
                crate::mm::heap::page_bytes() / 1024
            );
        }
        File::Mounts => {
            // Hare over `/` comes first, so that `df /` (busybox takes the first mount of a
            // path) shows it rather than the NR-FS it covers.
            let hare = super::hare::mounted()
                .map(|m| alloc::format!("hare {} hare rw,{} 0 0\n", m.point(), m.options_text()));
            let (first, last) = match hare {
                Some(h) if h.starts_with("hare / ") => (h, String::new()),
                Some(h) => (String::new(), h),
                None => (String::new(), String::new()),
            };
            s.push_str(&first);
            s.push_str("nrfs / nrfs rw 0 0\nproc /proc proc rw 0 0\nsysfs /sys sysfs rw 0 0\n");
            s.push_str(&last);
        }
        File::Uptime => {
            let ns = crate::time::now_ns();
            let _ = writeln!(
                s,
                "{}.{:02} 0.00",
                ns / 1_000_000_000,
                (ns / 10_000_000) % 100
            );
        }
        File::Version => {
            s.push_str(concat!(
                "Linux version 6.1.0-reef (Reef ",
                env!("CARGO_PKG_VERSION"),
                ") #1 SMP\n"
            ));
        }
        File::SysStat => {
            // Linux's first four columns (user, nice, system, idle) from the timer ticks each
            // core counted (100 Hz, Linux's USER_HZ), and `ctxt`, the context switches of
            // every core; Reef tells no other kind of time apart and counts no interrupts, so
            // those columns and lines are left out.
            let cores = crate::kcb::online_cores();
            let ticks = |core: usize| {
                crate::kcb::get(core).map_or([0; 3], |k| {
                    k.cpu_ticks
                        .each_ref()
                        .map(|t| t.load(core::sync::atomic::Ordering::Relaxed))
                })
            };
            let line = |s: &mut String, name: &str, [u, sys, idle]: [u64; 3]| {
                let _ = writeln!(s, "{name} {u} 0 {sys} {idle} 0 0 0 0 0 0");
            };
            let total = cores.iter().fold([0; 3], |acc, &c| {
                let t = ticks(c);
                [acc[0] + t[0], acc[1] + t[1], acc[2] + t[2]]
            });
            line(&mut s, "cpu ", total);
            for &c in &cores {
                line(&mut s, &alloc::format!("cpu{c}"), ticks(c));
            }
            let switches: u64 = cores
                .iter()
                .filter_map(|&c| crate::kcb::get(c))
                .map(|k| k.sched.switches.load(core::sync::atomic::Ordering::Relaxed))
                .sum();
            let _ = writeln!(s, "ctxt {switches}");
            let boot = crate::time::realtime_offset_ns() / 1_000_000_000;
            let _ = writeln!(s, "btime {boot}");
        }
        File::LoadAvg => {
            // Reef keeps no load averages: 0, with the process count and the last pid.
            let pids = proc::all_pids();
            let _ = writeln!(
                s,
                "0.00 0.00 0.00 1/{} {}",
                pids.len(),
                pids.last().copied().unwrap_or(0)
            );
        }
        File::Memory => s = crate::mm::report(),
        File::Names => s = crate::names::report(),
        File::Fleets => s = crate::fleet::report(),
        File::Nrfs => s = crate::fs::report(),
        File::Syscalls => s = crate::syscall::accounting_report(),
        File::Tlb => s = crate::ipi::shootdown_report(),
        File::Hare => s = super::hare::report(),
        File::Net => s = crate::net::report(),
        File::NetDev => s = crate::net::ifaces::dev(),
        File::NetRoute => s = crate::net::ifaces::route(),
        File::NetTcp => s = crate::net::ifaces::sockets(net::Proto::Tcp),
        File::NetUdp => s = crate::net::ifaces::sockets(net::Proto::Udp),
        File::NetTcp6 => s = crate::net::ifaces::sockets6(false),
        File::NetUdp6 => s = crate::net::ifaces::sockets6(true),
        File::Status(pid) => {
            let e = proc::lookup(pid).ok_or(Errno::ENOENT)?;
            status(&mut s, &e, pid, e.process.comm(), state_letter(&e).1)?;
        }
        File::Stat(pid) => {
            let e = proc::lookup(pid).ok_or(Errno::ENOENT)?;
            let ticks = e
                .process
                .cpu_ticks
                .each_ref()
                .map(|t| t.load(core::sync::atomic::Ordering::Relaxed));
            let state = state_letter(&e).0;
            // The process's nice value is its main thread's (0 once that thread is gone).
            let nice =
                thread(pid, pid).map_or(0, |t| t.nice.load(core::sync::atomic::Ordering::Relaxed));
            stat(&mut s, &e, (pid, nice), e.process.comm(), state, ticks)?;
        }
        File::TaskStatus(pid, tid) => {
            let e = proc::lookup(pid).ok_or(Errno::ENOENT)?;
            let t = thread(pid, tid)?;
            status(&mut s, &e, tid, t.comm(), thread_state(&e, &t).1)?;
        }
        File::TaskStat(pid, tid) => {
            let e = proc::lookup(pid).ok_or(Errno::ENOENT)?;
            let t = thread(pid, tid)?;
            let ticks = t
                .cpu_ticks
                .each_ref()
                .map(|t| t.load(core::sync::atomic::Ordering::Relaxed));
            let nice = t.nice.load(core::sync::atomic::Ordering::Relaxed);
            stat(
                &mut s,
                &e,
                (tid, nice),
                t.comm(),
                thread_state(&e, &t).0,
                ticks,
            )?;
        }
        File::Comm(pid, tid) => {
            // The main thread's name is its process's, which stays when that thread ends.
            let name = if tid == pid {
                process(pid)?.comm()
            } else {
                thread(pid, tid)?.comm()
            };
            let _ = writeln!(s, "{name}");
        }
        File::Cmdline(pid) => return copy(&process(pid)?.args.lock().cmdline),
        File::Environ(pid) => return copy(&process(pid)?.args.lock().environ),
        File::MountInfo(pid) => {
            // Linux's columns: mount id, parent id, device, root, mount point, options, an
            // empty list of optional fields, type, source, super-block options.
            process(pid)?;
            // The device numbers are those `stat` gives (`st_dev`).
            s.push_str("1 1 0:1 / / rw - nrfs nrfs rw\n2 1 0:3 / /proc rw - proc proc rw\n");
            s.push_str("3 1 0:3 / /sys rw - sysfs sysfs rw\n");
            if let Some(m) = super::hare::mounted() {
                let at = m.point();
                let dev = super::hare::DEV_HARE;
                let _ = writeln!(
                    s,
                    "4 1 0:{dev} / {at} rw - hare hare rw,{}",
                    m.options_text()
                );
            }
        }
        File::CpuOnline => cpu_list(&mut s, crate::kcb::online_cores()),
        File::CpuPresent => cpu_list(
            &mut s,
            (0..crate::kcb::MAX_CORES)
                .filter(|&c| crate::kcb::get(c).is_some())
                .collect(),
        ),
        File::Maps(pid) => {
            // Linux's columns; a file mapping shows its offset and NR-FS inode but no path
            // (Reef keeps no name with an inode); the program's own segments show its path.
            let p = process(pid)?;
            let vm = p.vm();
            let exe = p.exe.lock().clone();
            vm.each_region(|r| {
                let name = match r.kind {
                    vspace::RegionKind::Image => exe.as_str(),
                    vspace::RegionKind::Stack => "[stack]",
                    vspace::RegionKind::Heap => "[heap]",
                    _ => "",
                };
                let c = |on: bool, ch: char| if on { ch } else { '-' };
                let (off, dev, ino) = match r.kind {
                    vspace::RegionKind::File { file, page, .. } if file != 0 => {
                        (page * crate::vm::PAGE_SIZE, "00:01", file)
                    }
                    _ => (0, "00:00", 0),
                };
                let _ = writeln!(
                    s,
                    "{:08x}-{:08x} {}{}{}{} {off:08x} {dev} {ino} {name}",
                    r.start,
                    r.end,
                    c(r.prot.read, 'r'),
                    c(r.prot.write, 'w'),
                    c(r.prot.exec, 'x'),
                    if r.kind.is_shared() { 's' } else { 'p' },
                );
                Ok(())
            })?;
        }
    }
    Ok(s.into_bytes())
}

/// Writes `/proc/<pid>/status` (or a thread's, `id` being its tid) of process `e` for a
/// task named `name` in state `state` (`state_letter`'s or `thread_state`'s long form).
fn status(
    s: &mut String,
    e: &proc::table::Entry,
    id: Pid,
    name: Comm,
    state: &str,
) -> Result<(), Errno> {
    let threads = e.process.threads.lock().len();
    let (vsize, rss) = sizes(&e.process)?;
    let _ = write!(
        s,
        "Name:\t{name}\nState:\t{state}\nTgid:\t{}\nPid:\t{id}\nPPid:\t{}\n\
         VmSize:\t{:8} kB\nVmRSS:\t{:8} kB\nThreads:\t{threads}\n",
        e.process.pid,
        e.ppid,
        vsize / 1024,
        rss * 4
    );
    Ok(())
}

/// Writes `/proc/<pid>/stat` (or a thread's, `id` being its tid) of process `e` for a task
/// with nice value `nice`, named `name`, in state `state`, that ran `ticks` (user, system).
fn stat(
    s: &mut String,
    e: &proc::table::Entry,
    (id, nice): (Pid, i32),
    name: Comm,
    state: char,
    [utime, stime]: [u64; 2],
) -> Result<(), Errno> {
    let threads = e.process.threads.lock().len();
    // CPU times and the start time in ticks of 10 ms (Linux's USER_HZ), CPU times sampled by
    // the timer; the sizes of the address space in bytes and of what is resident in pages;
    // the fields after `rss` are left out (Linux has 28 more). A thread's start time is its
    // process's (no other is kept).
    let start = e.process.started_ns / 10_000_000;
    let (vsize, rss) = sizes(&e.process)?;
    let _ = writeln!(
        s,
        "{id} ({name}) {state} {} {} {} 0 -1 0 0 0 0 0 {utime} {stime} 0 0 {} {nice} {threads} 0 \
         {start} {vsize} {rss}",
        e.ppid,
        e.pgid,
        e.sid,
        20 + nice
    );
    Ok(())
}

/// Names thread `tid` of process `pid` (a write of its `comm`): only a thread of the
/// writer's own process, as Linux allows (`EINVAL` otherwise); the first 15 bytes, up to a
/// NUL, as `PR_SET_NAME` takes them. Returns the whole length, as Linux does.
pub fn write(place: Place, data: &[u8]) -> Result<usize, Errno> {
    let Place::File(File::Comm(pid, tid)) = place else {
        return Err(Errno::EBADF);
    };
    let me = proc::sched::current_thread();
    if me.process.pid != pid {
        return Err(Errno::EINVAL);
    }
    let name = Comm::new(&data[..data.len().min(15)]);
    if tid == pid {
        // The main thread's name, which is the process's even after that thread ended.
        me.process.set_comm(name);
    }
    if let Ok(t) = thread(pid, tid) {
        t.set_comm(name);
    } else if tid != pid {
        return Err(Errno::ESRCH);
    }
    Ok(data.len())
}

/// The size of `p`'s address space in bytes (its regions) and its resident pages (4 KiB; as
/// `VSpace::resident_pages` counts them); both 0 for a process that exited.
fn sizes(p: &Process) -> Result<(u64, u64), Errno> {
    let vm = p.vm();
    let mut vsize = 0;
    vm.each_region(|r| {
        vsize += r.len();
        Ok(())
    })?;
    Ok((vsize, vm.resident_pages()))
}

/// A copy of `bytes`, or ENOMEM.
fn copy(bytes: &[u8]) -> Result<Vec<u8>, Errno> {
    let mut v = Vec::new();
    v.try_reserve_exact(bytes.len())
        .map_err(|_| Errno::ENOMEM)?;
    v.extend_from_slice(bytes);
    Ok(v)
}

/// Writes `cores` (ascending) as Linux's CPU lists: ranges joined by commas (`0-2,5`).
fn cpu_list(s: &mut String, cores: Vec<usize>) {
    let mut i = 0;
    while i < cores.len() {
        let mut j = i;
        while j + 1 < cores.len() && cores[j + 1] == cores[j] + 1 {
            j += 1;
        }
        let sep = if i == 0 { "" } else { "," };
        let _ = if i == j {
            write!(s, "{sep}{}", cores[i])
        } else {
            write!(s, "{sep}{}-{}", cores[i], cores[j])
        };
        i = j + 1;
    }
    s.push('\n');
}

/// The CPU vendor string (CPUID leaf 0).
fn vendor() -> String {
    let (_, b, c, d) = crate::arch::cpu::cpuid(0, 0);
    let bytes: Vec<u8> = [b, d, c].iter().flat_map(|r| r.to_le_bytes()).collect();
    String::from_utf8_lossy(&bytes).into_owned()
}

/// A thread's state for `/proc/<pid>/task/<tid>/stat` and `status`, as [`state_letter`]
/// gives a process's: stopped with its process, running or ready, sleeping, or zombie once
/// its process exited.
fn thread_state(e: &proc::table::Entry, t: &Thread) -> (char, &'static str) {
    use proc::ThreadState::{Blocked, Exited};
    match e.life {
        proc::table::Life::Alive if proc::job::is_stopped(&e.process) => ('T', "T (stopped)"),
        proc::table::Life::Alive => match t.state() {
            Blocked => ('S', "S (sleeping)"),
            Exited => ('Z', "Z (zombie)"),
            _ => ('R', "R (running)"),
        },
        _ => ('Z', "Z (zombie)"),
    }
}

/// A process's state for `/proc/<pid>/stat` (the letter) and `/proc/<pid>/status` (the
/// letter and name): stopped (`proc::job`), running while a thread runs or is ready to,
/// sleeping while all wait, zombie once it exited.
fn state_letter(e: &proc::table::Entry) -> (char, &'static str) {
    use proc::ThreadState::{Ready, Running};
    match e.life {
        proc::table::Life::Alive if proc::job::is_stopped(&e.process) => ('T', "T (stopped)"),
        proc::table::Life::Alive => {
            let threads = e.process.threads.lock();
            if threads.iter().any(|t| matches!(t.state(), Running | Ready)) {
                ('R', "R (running)")
            } else {
                ('S', "S (sleeping)")
            }
        }
        _ => ('Z', "Z (zombie)"),
    }
}
