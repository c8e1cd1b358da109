//! System calls: the Linux x86-64 numbers and semantics.
//!
//! [`dispatch`] (reached from the `syscall` entry in `arch::x86_64::user`) looks the number up
//! in [`handler`], runs it with the six argument registers, and stores the result (or `-errno`)
//! in RAX. A number Reef does not implement returns `-ENOSYS` and is counted; the counts are
//! printed at power-off (`reef: unimplemented syscalls: ...`). Reef's own calls use numbers from
//! [`REEF_BASE`] up.
//!
//! Handlers are grouped by subject: [`process`] (fork, clone, execve, exit, wait, process
//! ids, scheduling), [`cred`] (user and group IDs), [`memory`] (mmap family, brk), [`signal`],
//! [`time`], [`file`] (descriptors, pipes), [`eventfd`] (event counters and timers as
//! descriptors), [`path`] (open, stat, names, directories),
//! [`poll`] (poll, select), [`misc`] (uname, getrandom, limits, reboot), [`msg`] (Reef's names
//! and mailboxes), [`socket`] (`AF_INET` sockets over each process's stack instance, `AF_UNIX`
//! socket pairs).

mod cred;
mod eventfd;
mod file;
mod memory;
mod misc;
mod msg;
mod path;
pub mod poll;
pub mod process;
mod sched;
mod signal;
mod socket;
mod time;

use crate::arch::idt::InterruptFrame;
use crate::kcb;
use crate::proc::{self, Thread};
use abi::reef::*;
use abi::syscalls::*;
use abi::Errno;
use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::fmt::Write;
use core::sync::atomic::{AtomicU64, Ordering};

/// The result of a handler: a value for RAX or an error number.
pub type SysResult = Result<u64, Errno>;
/// A handler: the calling thread, its user registers, and the six arguments.
type Handler = fn(&Arc<Thread>, &mut InterruptFrame, [u64; 6]) -> SysResult;

/// Calls answered with ENOSYS, by number (numbers past Linux's range share the last slot).
static UNIMPLEMENTED: [AtomicU64; SYSCALL_LIMIT + 1] =
    [const { AtomicU64::new(0) }; SYSCALL_LIMIT + 1];

/// The handler of system call `nr`, or `None` for a number Reef does not implement.
fn handler(nr: usize) -> Option<Handler> {
    Some(match nr {
        SYS_READ => file::read,
        SYS_WRITE => file::write,
        SYS_PREAD64 => file::pread64,
        SYS_PWRITE64 => file::pwrite64,
        SYS_READV => file::readv,
        SYS_WRITEV => file::writev,
        SYS_PREADV => file::preadv,
        SYS_PWRITEV => file::pwritev,
        SYS_CLOSE => file::close,
        SYS_DUP => file::dup,
        SYS_DUP2 => file::dup2,
        SYS_DUP3 => file::dup3,
        SYS_FCNTL => file::fcntl,
        SYS_IOCTL => file::ioctl,
        SYS_LSEEK => file::lseek,
        SYS_FSTAT => file::fstat,
        SYS_FTRUNCATE => file::ftruncate,
        SYS_FSYNC | SYS_FDATASYNC | SYS_SYNCFS => file::fsync,
        SYS_GETDENTS64 => file::getdents64,
        SYS_PIPE => file::pipe,
        SYS_PIPE2 => file::pipe2,
        SYS_MEMFD_CREATE => file::memfd_create,
        SYS_SOCKET => socket::socket,
        SYS_BIND => socket::bind,
        SYS_LISTEN => socket::listen,
        SYS_CONNECT => socket::connect,
        SYS_ACCEPT => socket::accept,
        SYS_ACCEPT4 => socket::accept4,
        SYS_GETSOCKNAME => socket::getsockname,
        SYS_GETPEERNAME => socket::getpeername,
        SYS_SETSOCKOPT => socket::setsockopt,
        SYS_GETSOCKOPT => socket::getsockopt,
        SYS_SOCKETPAIR => socket::socketpair,
        SYS_SHUTDOWN => socket::shutdown,
        SYS_SENDTO => socket::sendto,
        SYS_RECVFROM => socket::recvfrom,
        SYS_SENDMSG => socket::sendmsg,
        SYS_RECVMSG => socket::recvmsg,
        SYS_SENDFILE => file::sendfile,
        SYS_SYSLOG => misc::syslog,
        SYS_FLOCK => file::flock,
        SYS_GETRUSAGE => process::getrusage,
        SYS_TIMES => process::times,
        SYS_CLOSE_RANGE => file::close_range,
        SYS_COPY_FILE_RANGE => file::copy_file_range,
        SYS_FALLOCATE => file::fallocate,
        SYS_FADVISE64 => file::fadvise64,
        SYS_EVENTFD => eventfd::eventfd,
        SYS_EVENTFD2 => eventfd::eventfd2,
        SYS_TIMERFD_CREATE => eventfd::timerfd_create,
        SYS_TIMERFD_SETTIME => eventfd::timerfd_settime,
        SYS_TIMERFD_GETTIME => eventfd::timerfd_gettime,
        SYS_POLL => poll::poll,
        SYS_EPOLL_CREATE => poll::epoll_create,
        SYS_EPOLL_CREATE1 => poll::epoll_create1,
        SYS_EPOLL_CTL => poll::epoll_ctl,
        SYS_EPOLL_WAIT => poll::epoll_wait,
        SYS_EPOLL_PWAIT => poll::epoll_pwait,
        SYS_EPOLL_PWAIT2 => poll::epoll_pwait2,
        SYS_PPOLL => poll::ppoll,
        SYS_SELECT => poll::select,
        SYS_PSELECT6 => poll::pselect6,
        SYS_OPEN => path::open,
        SYS_OPENAT => path::openat,
        SYS_CREAT => path::creat,
        SYS_STAT => path::stat,
        SYS_LSTAT => path::lstat,
        SYS_NEWFSTATAT => path::newfstatat,
        SYS_STATX => path::statx,
        SYS_MKDIR => path::mkdir,
        SYS_MKDIRAT => path::mkdirat,
        SYS_MKNOD => path::mknod,
        SYS_MKNODAT => path::mknodat,
        SYS_RMDIR => path::rmdir,
        SYS_UNLINK => path::unlink,
        SYS_UNLINKAT => path::unlinkat,
        SYS_RENAME => path::rename,
        SYS_RENAMEAT => path::renameat,
        SYS_RENAMEAT2 => path::renameat2,
        SYS_LINK => path::link,
        SYS_LINKAT => path::linkat,
        SYS_SYMLINK => path::symlink,
        SYS_SYMLINKAT => path::symlinkat,
        SYS_READLINK => path::readlink,
        SYS_READLINKAT => path::readlinkat,
        SYS_TRUNCATE => path::truncate,
        SYS_CHDIR => path::chdir,
        SYS_FCHDIR => path::fchdir,
        SYS_GETCWD => path::getcwd,
        SYS_ACCESS => path::access,
        SYS_FACCESSAT => path::faccessat,
        SYS_FACCESSAT2 => path::faccessat2,
        SYS_GETXATTR | SYS_SETXATTR | SYS_LISTXATTR | SYS_REMOVEXATTR => path::xattr::<true>,
        SYS_LGETXATTR | SYS_LSETXATTR | SYS_LLISTXATTR | SYS_LREMOVEXATTR => path::xattr::<false>,
        SYS_FGETXATTR | SYS_FSETXATTR | SYS_FLISTXATTR | SYS_FREMOVEXATTR => file::fxattr,
        SYS_CHMOD => path::chmod,
        SYS_FCHMOD => path::fchmod,
        SYS_FCHMODAT => path::fchmodat,
        SYS_CHOWN => path::chown,
        SYS_LCHOWN => path::lchown,
        SYS_FCHOWN => path::fchown,
        SYS_FCHOWNAT => path::fchownat,
        SYS_UTIMENSAT => path::utimensat,
        SYS_STATFS => path::statfs,
        SYS_FSTATFS => path::fstatfs,
        SYS_SYNC => path::sync,
        SYS_MOUNT => path::mount,
        SYS_UMOUNT2 => path::umount2,
        SYS_REBOOT => misc::reboot,
        SYS_PRCTL => misc::prctl,
        SYS_SYSINFO => misc::sysinfo,
        SYS_TIME => time::time,
        SYS_MMAP => memory::mmap,
        SYS_MUNMAP => memory::munmap,
        SYS_MPROTECT => memory::mprotect,
        SYS_MADVISE => memory::madvise,
        SYS_MREMAP => memory::mremap,
        SYS_MLOCK | SYS_MLOCK2 => memory::mlock,
        SYS_MUNLOCK => memory::munlock,
        SYS_MLOCKALL => memory::mlockall,
        SYS_MUNLOCKALL => memory::munlockall,
        SYS_MEMBARRIER => memory::membarrier,
        SYS_MSYNC => memory::msync,
        SYS_BRK => memory::brk,
        SYS_RT_SIGACTION => signal::rt_sigaction,
        SYS_RT_SIGPROCMASK => signal::rt_sigprocmask,
        SYS_RT_SIGRETURN => signal::rt_sigreturn,
        SYS_RT_SIGPENDING => signal::rt_sigpending,
        SYS_RT_SIGSUSPEND => signal::rt_sigsuspend,
        SYS_PAUSE => signal::pause,
        SYS_SIGALTSTACK => signal::sigaltstack,
        SYS_KILL => signal::kill,
        SYS_TKILL => signal::tkill,
        SYS_TGKILL => signal::tgkill,
        SYS_RT_SIGQUEUEINFO => signal::rt_sigqueueinfo,
        SYS_RT_TGSIGQUEUEINFO => signal::rt_tgsigqueueinfo,
        SYS_RT_SIGTIMEDWAIT => signal::rt_sigtimedwait,
        SYS_SIGNALFD4 => signal::signalfd4,
        SYS_SIGNALFD => signal::signalfd,
        SYS_SCHED_YIELD => sched::sched_yield,
        SYS_GETPID => process::getpid,
        SYS_GETTID => process::gettid,
        SYS_GETPPID => process::getppid,
        SYS_CLONE => process::clone,
        SYS_FORK => process::fork,
        SYS_VFORK => process::vfork,
        SYS_EXECVE => process::execve,
        SYS_EXIT => process::exit,
        SYS_EXIT_GROUP => process::exit_group,
        SYS_WAIT4 => process::wait4,
        SYS_WAITID => process::waitid,
        SYS_SET_TID_ADDRESS => process::set_tid_address,
        SYS_SET_ROBUST_LIST => process::set_robust_list,
        SYS_ARCH_PRCTL => process::arch_prctl,
        SYS_FUTEX => process::futex,
        SYS_SCHED_GETAFFINITY => sched::sched_getaffinity,
        SYS_SCHED_SETAFFINITY => sched::sched_setaffinity,
        SYS_GETCPU => sched::getcpu,
        SYS_GETPRIORITY => sched::getpriority,
        SYS_SETPRIORITY => sched::setpriority,
        SYS_SCHED_SETSCHEDULER => sched::sched_setscheduler,
        SYS_SCHED_GETSCHEDULER => sched::sched_getscheduler,
        SYS_SCHED_SETPARAM => sched::sched_setparam,
        SYS_SCHED_GETPARAM => sched::sched_getparam,
        SYS_SCHED_GET_PRIORITY_MAX => sched::sched_get_priority_max,
        SYS_SCHED_GET_PRIORITY_MIN => sched::sched_get_priority_min,
        SYS_SCHED_RR_GET_INTERVAL => sched::sched_rr_get_interval,
        SYS_SETPGID => process::setpgid,
        SYS_GETPGID => process::getpgid,
        SYS_GETPGRP => process::getpgrp,
        SYS_SETSID => process::setsid,
        SYS_GETSID => process::getsid,
        SYS_CLOCK_GETTIME => time::clock_gettime,
        SYS_CLOCK_GETRES => time::clock_getres,
        SYS_GETTIMEOFDAY => time::gettimeofday,
        SYS_NANOSLEEP => time::nanosleep,
        SYS_ALARM => time::alarm,
        SYS_SETITIMER => time::setitimer,
        SYS_GETITIMER => time::getitimer,
        SYS_TIMER_CREATE => time::timer_create,
        SYS_TIMER_SETTIME => time::timer_settime,
        SYS_TIMER_GETTIME => time::timer_gettime,
        SYS_TIMER_GETOVERRUN => time::timer_getoverrun,
        SYS_TIMER_DELETE => time::timer_delete,
        SYS_CLOCK_NANOSLEEP => time::clock_nanosleep,
        SYS_UNAME => misc::uname,
        SYS_GETRANDOM => misc::getrandom,
        SYS_PRLIMIT64 => misc::prlimit64,
        SYS_GETRLIMIT => misc::getrlimit,
        SYS_SETRLIMIT => misc::setrlimit,
        SYS_GETUID => cred::getuid,
        SYS_GETEUID => cred::geteuid,
        SYS_GETGID => cred::getgid,
        SYS_GETEGID => cred::getegid,
        SYS_SETUID => cred::setuid,
        SYS_SETGID => cred::setgid,
        SYS_SETREUID => cred::setreuid,
        SYS_SETREGID => cred::setregid,
        SYS_SETRESUID => cred::setresuid,
        SYS_SETRESGID => cred::setresgid,
        SYS_GETRESUID => cred::getresuid,
        SYS_GETRESGID => cred::getresgid,
        SYS_SETFSUID => cred::setfsuid,
        SYS_SETFSGID => cred::setfsgid,
        SYS_GETGROUPS => cred::getgroups,
        SYS_SETGROUPS => cred::setgroups,
        SYS_CAPGET => cred::capget,
        SYS_CAPSET => cred::capset,
        SYS_UMASK => misc::umask,
        SYS_PERSONALITY => misc::personality,
        REEF_FREE_BYTES => misc::reef_free_bytes,
        REEF_NAME_REGISTER => msg::register,
        REEF_NAME_UNREGISTER => msg::unregister,
        REEF_NAME_LOOKUP => msg::lookup,
        REEF_MBOX_CREATE => msg::create,
        REEF_MBOX_CONNECT => msg::connect,
        REEF_MBOX_ACCEPT => msg::accept,
        REEF_MBOX_NOTIFY => msg::notify,
        REEF_GRANT => msg::grant,
        REEF_GRANT_MAP => msg::grant_map,
        REEF_GRANT_REVOKE => msg::grant_revoke,
        REEF_FLEET_BIND => msg::fleet_bind,
        REEF_FLEET_RESIZE => msg::fleet_resize,
        REEF_CORE_INFO => misc::reef_core_info,
        REEF_CORE_CTL => misc::reef_core_ctl,
        REEF_NETD => socket::reef_netd,
        REEF_NET_MODE => socket::reef_net_mode,
        _ => return None,
    })
}

/// Runs the system call in `frame` (entered with `syscall`, on the calling thread's kernel stack)
/// and stores its result in RAX. The caller then returns to user mode.
pub fn dispatch(frame: &mut InterruptFrame) {
    // SAFETY: the IDT and local APIC of every core that runs user code are set up; system
    // calls run with interrupts on, as the interrupted user code had them.
    unsafe { crate::arch::cpu::enable_interrupts() };
    let nr = frame.rax as usize;
    let args = [
        frame.rdi, frame.rsi, frame.rdx, frame.r10, frame.r8, frame.r9,
    ];
    let start = crate::time::now_ns();
    let result = proc::sched::with_current(|me| match handler(nr) {
        Some(h) => h(me, frame, args),
        None => {
            UNIMPLEMENTED[nr.min(SYSCALL_LIMIT)].fetch_add(1, Ordering::Relaxed);
            Err(Errno::ENOSYS)
        }
    });
    // The thread may have moved to another core while it slept: count it where it ends.
    kcb::current()
        .syscalls
        .record(nr, crate::time::now_ns().saturating_sub(start));
    #[cfg(feature = "trace")]
    trace(nr, &args, &result);
    // rt_sigreturn and execve replace every register themselves.
    if !matches!(nr, SYS_RT_SIGRETURN | SYS_EXECVE) || result.is_err() {
        frame.rax = match result {
            Ok(v) => v,
            Err(e) => e.to_return() as u64,
        };
    }
}

/// The `reef-trace` image's line for each system call its cores run (Barrelfish/DC §4.5's
/// kernel with a distinguishing feature): core, process, call, first three arguments, result.
#[cfg(feature = "trace")]
fn trace(nr: usize, args: &[u64; 6], result: &SysResult) {
    let pid = proc::sched::with_current(|me| me.process.pid);
    let name = abi::syscalls::name(nr).unwrap_or("?");
    let (a, b, c) = (args[0], args[1], args[2]);
    match result {
        Ok(v) => crate::kprintln!(
            "reef-trace: core {} pid {pid} {name}({a:#x}, {b:#x}, {c:#x}) = {v}",
            kcb::current().core_id
        ),
        Err(e) => crate::kprintln!(
            "reef-trace: core {} pid {pid} {name}({a:#x}, {b:#x}, {c:#x}) = -{}",
            kcb::current().core_id,
            e.name().unwrap_or("?")
        ),
    }
}

/// The unimplemented-call report printed at power-off.
pub fn unimplemented_report() -> String {
    let mut out = String::new();
    for (nr, count) in UNIMPLEMENTED.iter().enumerate() {
        let n = count.load(Ordering::Relaxed);
        if n == 0 {
            continue;
        }
        let _ = match abi::syscalls::name(nr) {
            Some(name) => write!(out, " {name}={n}"),
            None if nr == SYSCALL_LIMIT => write!(out, " beyond-linux-range={n}"),
            None => write!(out, " unknown-{nr}={n}"),
        };
    }
    if out.is_empty() {
        out.push_str(" none");
    }
    out
}

/// The text of `/proc/reef/syscalls`: every system call made since boot on any core, with its
/// count and the time spent in it (sleeps included), most time first.
pub fn accounting_report() -> String {
    let mut rows: Vec<(u64, u64, usize)> = Vec::new();
    for nr in 0..=SYSCALL_LIMIT {
        let (mut count, mut ns) = (0, 0);
        for k in (0..kcb::MAX_CORES).filter_map(kcb::get) {
            count += k.syscalls.count[nr].load(Ordering::Relaxed);
            ns += k.syscalls.ns[nr].load(Ordering::Relaxed);
        }
        if count > 0 {
            rows.push((ns, count, nr));
        }
    }
    rows.sort_unstable_by(|a, b| b.cmp(a));
    let mut out = String::from("syscall count total_us avg_ns\n");
    for (ns, count, nr) in rows {
        let name = match abi::syscalls::name(nr) {
            Some(n) => alloc::borrow::Cow::Borrowed(n),
            None if nr == SYSCALL_LIMIT => "beyond-linux-range".into(),
            None => alloc::format!("unknown-{nr}").into(),
        };
        let _ = writeln!(out, "{name} {count} {} {}", ns / 1000, ns / count);
    }
    out
}
