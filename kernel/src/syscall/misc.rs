//! System information, random bytes, resource limits, and Reef's own calls.

use super::SysResult;
use crate::arch::idt::InterruptFrame;
use crate::proc::Thread;
use crate::uaccess::{self, read_user, write_user};
use abi::Errno;
use alloc::sync::Arc;
use core::sync::atomic::Ordering;

/// The `uname` fields: sysname, nodename, release, version, machine, domainname.
const UTSNAME: [&str; 6] = [
    "Linux",
    "reef",
    "6.1.0-reef",
    concat!("#1 SMP Reef ", env!("CARGO_PKG_VERSION")),
    "x86_64",
    "(none)",
];

/// `uname(buf)`: writes the six 65-byte `struct utsname` fields of [`UTSNAME`], NUL-padded.
pub fn uname(_: &Arc<Thread>, _: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    let mut buf = [0u8; 6 * 65];
    for (i, field) in UTSNAME.iter().enumerate() {
        buf[i * 65..i * 65 + field.len()].copy_from_slice(field.as_bytes());
    }
    uaccess::copy_to_user(a[0], &buf)?;
    Ok(0)
}

/// `syslog(type, buf, len)` (glibc's `klogctl`): the kernel log (`console::read_log`), as
/// Linux's actions: 0 close and 1 open (nothing to do), 2 read what was not read yet (without
/// waiting: 0 when nothing is new, where Linux would sleep), 3 read the latest `len` bytes,
/// 4 the same and clear, 5 clear, 6-8 console levels (accepted; the console prints
/// everything), 9 unread size, 10 buffer size. `EINVAL` for another type, a negative length,
/// a null buffer or a level outside 1..=8.
pub fn syslog(_: &Arc<Thread>, _: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    use crate::console::{self, LogRead};
    let (kind, buf, len) = (a[0] as i32, a[1], a[2] as i32);
    let read = match kind {
        0 | 1 | 6 | 7 => return Ok(0),
        5 => {
            console::clear_log();
            return Ok(0);
        }
        8 if (1..=8).contains(&len) => return Ok(0),
        9 => return Ok(console::unread_log() as u64),
        10 => return Ok(console::LOG_SIZE as u64),
        2 => LogRead::Unread,
        3 => LogRead::All { clear: false },
        4 => LogRead::All { clear: true },
        _ => return Err(Errno::EINVAL),
    };
    if buf == 0 || len < 0 {
        return Err(Errno::EINVAL);
    }
    let mut out = crate::mm::zeroed_buffer((len as usize).min(console::LOG_SIZE))?;
    let n = console::read_log(read, &mut out);
    uaccess::copy_to_user(buf, &out[..n])?;
    Ok(n as u64)
}

/// `getrandom(buf, buflen, flags)`: fills `buf` with random bytes (at most 32 MiB a call); `EINVAL`
/// for unknown flags. A long request stops early, returning the bytes written so far, once the
/// caller is dying.
pub fn getrandom(me: &Arc<Thread>, _: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    const GRND_NONBLOCK: u64 = 1;
    const GRND_RANDOM: u64 = 2;
    const GRND_INSECURE: u64 = 4;
    if a[2] & !(GRND_NONBLOCK | GRND_RANDOM | GRND_INSECURE) != 0 {
        return Err(Errno::EINVAL);
    }
    let len = (a[1] as usize).min(32 << 20);
    let mut done = 0;
    let mut chunk = [0u8; 256];
    while done < len {
        if done % (64 << 10) == 0 && done > 0 && !crate::proc::sched::keep_going(me) {
            return Ok(done as u64);
        }
        let n = chunk.len().min(len - done);
        crate::random::fill(&mut chunk[..n]);
        uaccess::copy_to_user(a[0] + done as u64, &chunk[..n])?;
        done += n;
    }
    Ok(len as u64)
}

/// `RLIM_INFINITY`: no limit.
const RLIM_INFINITY: u64 = u64::MAX;
/// `RLIMIT_SIGPENDING`: real-time signals queued for the process.
const RLIMIT_SIGPENDING: u64 = 11;

/// The limits Reef reports: the stack size it reserves, the descriptor table size,
/// `RLIMIT_SIGPENDING` as the process has it (see [`set_limit`]), and no limit for the rest.
fn limit(me: &Thread, resource: u64) -> Result<[u64; 2], Errno> {
    match resource {
        3 => Ok([crate::vm::STACK_SIZE, RLIM_INFINITY]),
        7 => Ok([crate::fd::MAX_FDS as u64, crate::fd::MAX_FDS as u64]),
        RLIMIT_SIGPENDING => Ok(me.process.signals.lock().limit),
        0..=15 => Ok([RLIM_INFINITY, RLIM_INFINITY]),
        _ => Err(Errno::EINVAL),
    }
}

/// Sets limit `resource` to `new` (soft, hard): `EINVAL` if the soft limit exceeds the hard
/// one. `RLIMIT_SIGPENDING` is kept (raising its hard limit needs privilege, `EPERM`, as
/// Linux's `CAP_SYS_RESOURCE`); the others are accepted and have no effect (documented).
fn set_limit(me: &Arc<Thread>, resource: u64, new: [u64; 2]) -> Result<(), Errno> {
    let old = limit(me, resource)?;
    if new[0] > new[1] {
        return Err(Errno::EINVAL);
    }
    if resource == RLIMIT_SIGPENDING {
        if new[1] > old[1] {
            super::cred::privileged(me)?;
        }
        me.process.signals.lock().limit = new;
    }
    Ok(())
}

/// `prlimit64(pid, resource, new_limit, old_limit)`: for the caller only (`pid` 0 or its own, else
/// `ESRCH`); writes the limit [`limit`] reports to `old_limit` if given, then sets the new one
/// ([`set_limit`]).
pub fn prlimit64(me: &Arc<Thread>, _: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    if a[0] != 0 && a[0] as u32 != me.process.pid {
        return Err(Errno::ESRCH);
    }
    let new: Option<[u64; 2]> = if a[2] != 0 {
        Some(read_user(a[2])?)
    } else {
        None
    };
    let old = limit(me, a[1])?;
    if let Some(new) = new {
        set_limit(me, a[1], new)?;
    }
    if a[3] != 0 {
        write_user(a[3], &old)?;
    }
    Ok(0)
}

/// `getrlimit(resource, rlim)`: writes the limit [`limit`] reports; `EINVAL` for an unknown
/// resource.
pub fn getrlimit(me: &Arc<Thread>, _: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    write_user(a[1], &limit(me, a[0])?)?;
    Ok(0)
}

/// `setrlimit(resource, rlim)`: [`set_limit`]; `EINVAL` for an unknown resource.
pub fn setrlimit(me: &Arc<Thread>, _: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    limit(me, a[0])?;
    let new: [u64; 2] = read_user(a[1])?;
    set_limit(me, a[0], new)?;
    Ok(0)
}

/// `umask(mask)`: sets the process's file mode creation mask (its permission bits) and returns the
/// old one.
pub fn umask(me: &Arc<Thread>, _: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    Ok(me
        .process
        .umask
        .swap(a[0] as u32 & 0o777, Ordering::Relaxed) as u64)
}

/// `reef_free_bytes()`: free physical memory (NCaches and TCaches) in bytes, once every replica
/// of every replicated structure has applied its log: an NR-FS replica that lags (its node used
/// no file call since) takes frames for the file data it has still to copy, and the figure
/// would drop later with no program doing anything (a test comparing two figures saw a lagging
/// replica's 12 MiB of the initramfs as a leak); a process-table replica that lags still holds
/// the processes reaped since (`replicated::sync_all_nodes`).
pub fn reef_free_bytes(_: &Arc<Thread>, _: &mut InterruptFrame, _: [u64; 6]) -> SysResult {
    crate::replicated::sync_all_nodes();
    Ok(crate::mm::free_bytes())
}

/// `reef_core_info(core, out)`: see `abi::reef::REEF_CORE_INFO` and [`crate::corectl::info`].
pub fn reef_core_info(_: &Arc<Thread>, _: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    let info = crate::corectl::info(a[0])?;
    uaccess::copy_to_user(a[1], &info)?;
    Ok(0)
}

/// `reef_core_ctl(op, core, arg)`: see `abi::reef::REEF_CORE_CTL`, [`crate::corectl::stop`],
/// [`crate::corectl::start`], [`crate::corectl::park`], [`crate::corectl::unpark`],
/// [`crate::corectl::update`] and [`crate::corectl::rt`];
/// `EINVAL` for an unknown `op`.
pub fn reef_core_ctl(me: &Arc<Thread>, _: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    super::cred::privileged(me)?;
    match a[0] {
        abi::reef::REEF_CORE_STOP => crate::corectl::stop(me, a[1])?,
        abi::reef::REEF_CORE_START => crate::corectl::start(a[1])?,
        abi::reef::REEF_CORE_PARK => crate::corectl::park(me, a[1], a[2])?,
        abi::reef::REEF_CORE_UNPARK => crate::corectl::unpark(a[1])?,
        abi::reef::REEF_CORE_UPDATE => crate::corectl::update(me, a[1], &path_arg(a[2])?)?,
        abi::reef::REEF_CORE_RT => crate::corectl::rt(me, a[1], &path_arg(a[2])?)?,
        _ => return Err(Errno::EINVAL),
    }
    Ok(0)
}

/// The kernel image path `reef_core_ctl`'s update and rt take.
fn path_arg(addr: u64) -> Result<alloc::vec::Vec<u8>, Errno> {
    uaccess::read_cstring(addr, nrfs::PATH_MAX - 1)
}

/// `reboot(magic1, magic2, cmd, arg)`: POWER_OFF, HALT and RESTART all power the machine off
/// (under QEMU there is nothing to restart into); CAD_ON/CAD_OFF are accepted. EPERM unless
/// root.
pub fn reboot(me: &Arc<Thread>, _: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    const MAGIC1: u32 = 0xfee1_dead;
    const MAGIC2: [u32; 4] = [672_274_793, 85_072_278, 369_367_448, 537_993_216];
    const CMD_RESTART: u32 = 0x0123_4567;
    const CMD_HALT: u32 = 0xcdef_0123;
    const CMD_POWER_OFF: u32 = 0x4321_fedc;
    const CMD_CAD_ON: u32 = 0x89ab_cdef;
    const CMD_CAD_OFF: u32 = 0;
    super::cred::privileged(me)?;
    if a[0] as u32 != MAGIC1 || !MAGIC2.contains(&(a[1] as u32)) {
        return Err(Errno::EINVAL);
    }
    match a[2] as u32 {
        CMD_RESTART | CMD_HALT | CMD_POWER_OFF => crate::power_off_by(me.process.pid),
        CMD_CAD_ON | CMD_CAD_OFF => Ok(0),
        _ => Err(Errno::EINVAL),
    }
}

/// `personality(persona)`: with 0xffffffff reads the process's personality, otherwise sets
/// it; returns the old one. Reef runs Linux programs only, so the execution domain (the low
/// byte) must be PER_LINUX (0): `EINVAL` otherwise, nothing changed. The flags are kept and
/// reported; only `ADDR_NO_RANDOMIZE` has an effect (on the next `execve`, see
/// [`crate::vm::UserLayout`]).
pub fn personality(me: &Arc<Thread>, _: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    const QUERY: u32 = 0xffff_ffff;
    const PER_MASK: u32 = 0xff;
    let persona = a[0] as u32;
    let current = &me.process.personality;
    if persona == QUERY {
        return Ok(u64::from(current.load(Ordering::Relaxed)));
    }
    if persona & PER_MASK != 0 {
        return Err(Errno::EINVAL);
    }
    Ok(u64::from(current.swap(persona, Ordering::Relaxed)))
}

/// `prctl`: the calling thread's name (`PR_SET_NAME`, `PR_GET_NAME`; the main thread's is
/// its process's, as `ps` and `/proc/<pid>/stat` show it), and the flags Reef has no use for
/// (parent-death signal, dumpable, no new privileges) accepted or answered with their
/// defaults. Other options: EINVAL.
pub fn prctl(me: &Arc<Thread>, _: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    const PR_SET_PDEATHSIG: u64 = 1;
    const PR_GET_PDEATHSIG: u64 = 2;
    const PR_GET_DUMPABLE: u64 = 3;
    const PR_SET_DUMPABLE: u64 = 4;
    const PR_SET_NAME: u64 = 15;
    const PR_GET_NAME: u64 = 16;
    const PR_SET_NO_NEW_PRIVS: u64 = 38;
    const PR_GET_NO_NEW_PRIVS: u64 = 39;
    match a[0] {
        PR_SET_PDEATHSIG => crate::proc::signal::check(a[1]).map(|_| 0),
        PR_GET_PDEATHSIG => {
            write_user(a[1], &0i32)?;
            Ok(0)
        }
        PR_GET_DUMPABLE => Ok(1),
        PR_SET_DUMPABLE if a[1] <= 1 => Ok(0),
        PR_SET_NAME => {
            let mut name = [0u8; 16];
            uaccess::copy_from_user(a[1], &mut name)?;
            // The calling thread's name (the main thread's is the process's too).
            me.set_comm(crate::proc::Comm::new(&name));
            Ok(0)
        }
        PR_GET_NAME => {
            uaccess::copy_to_user(a[1], &me.comm().padded())?;
            Ok(0)
        }
        PR_SET_NO_NEW_PRIVS if a[1] == 1 => Ok(0),
        PR_GET_NO_NEW_PRIVS => Ok(0),
        _ => Err(Errno::EINVAL),
    }
}

/// `sysinfo`: uptime, memory totals (`mem_unit` 1), and the number of processes; load averages
/// and swap are 0.
pub fn sysinfo(_: &Arc<Thread>, _: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    let total = crate::mm::total_bytes();
    let procs = crate::proc::all_pids().len().min(u16::MAX as usize) as u64;
    let mut words = [0u64; 14];
    words[0] = crate::time::now_ns() / 1_000_000_000;
    words[4] = total;
    words[5] = crate::mm::free_bytes();
    words[10] = procs;
    words[13] = 1;
    write_user(a[0], &words)?;
    Ok(0)
}
