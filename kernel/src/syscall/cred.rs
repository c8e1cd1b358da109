//! User and group IDs: the `get*id` and `set*id` families, `setfsuid`/`setfsgid` and the
//! supplementary groups, with Linux's rules (the `creds` crate). A process starts as root
//! (init) and may give its privilege up; once its file-system user ID is not 0, the file
//! system checks its permission bits (`fs::perm`), and once its effective user ID is not 0,
//! `kill` checks whom it may signal.

use super::SysResult;
use crate::arch::idt::InterruptFrame;
use crate::proc::Thread;
use crate::uaccess::{copy_from_user, copy_to_user, write_user};
use abi::Errno;
use alloc::sync::Arc;
use alloc::vec::Vec;
use creds::{Credentials, Id, NGROUPS_MAX};

/// An ID argument (`uid_t` is 32 bits; the upper half of the register is ignored, as on Linux).
fn id(v: u64) -> Id {
    v as u32
}

/// Runs `f` on the caller's credentials.
fn with<R>(me: &Arc<Thread>, f: impl FnOnce(&mut Credentials) -> R) -> R {
    f(&mut me.process.creds.lock())
}

/// EPERM unless the caller is privileged (effective user ID 0): for what Linux reserves to
/// `CAP_SYS_ADMIN`, `CAP_SYS_BOOT` and the like (`mount`, `reboot`, stopping cores).
pub fn privileged(me: &Arc<Thread>) -> Result<(), Errno> {
    if with(me, |c| c.is_privileged()) {
        Ok(())
    } else {
        Err(Errno::EPERM)
    }
}

/// `getuid()`.
pub fn getuid(me: &Arc<Thread>, _: &mut InterruptFrame, _: [u64; 6]) -> SysResult {
    Ok(with(me, |c| c.uid.real).into())
}

/// `geteuid()`.
pub fn geteuid(me: &Arc<Thread>, _: &mut InterruptFrame, _: [u64; 6]) -> SysResult {
    Ok(with(me, |c| c.uid.effective).into())
}

/// `getgid()`.
pub fn getgid(me: &Arc<Thread>, _: &mut InterruptFrame, _: [u64; 6]) -> SysResult {
    Ok(with(me, |c| c.gid.real).into())
}

/// `getegid()`.
pub fn getegid(me: &Arc<Thread>, _: &mut InterruptFrame, _: [u64; 6]) -> SysResult {
    Ok(with(me, |c| c.gid.effective).into())
}

/// `setuid(uid)`.
pub fn setuid(me: &Arc<Thread>, _: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    with(me, |c| c.setuid(id(a[0]))).map(|()| 0)
}

/// `setgid(gid)`.
pub fn setgid(me: &Arc<Thread>, _: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    with(me, |c| c.setgid(id(a[0]))).map(|()| 0)
}

/// `setreuid(ruid, euid)`.
pub fn setreuid(me: &Arc<Thread>, _: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    with(me, |c| c.setreuid(id(a[0]), id(a[1]))).map(|()| 0)
}

/// `setregid(rgid, egid)`.
pub fn setregid(me: &Arc<Thread>, _: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    with(me, |c| c.setregid(id(a[0]), id(a[1]))).map(|()| 0)
}

/// `setresuid(ruid, euid, suid)`.
pub fn setresuid(me: &Arc<Thread>, _: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    with(me, |c| c.setresuid(id(a[0]), id(a[1]), id(a[2]))).map(|()| 0)
}

/// `setresgid(rgid, egid, sgid)`.
pub fn setresgid(me: &Arc<Thread>, _: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    with(me, |c| c.setresgid(id(a[0]), id(a[1]), id(a[2]))).map(|()| 0)
}

/// Writes three IDs to the three addresses in `a` (EFAULT for a bad one; the ones before it
/// are written, as on Linux).
fn put_three(a: [u64; 6], ids: [Id; 3]) -> SysResult {
    for (addr, v) in a.iter().zip(ids) {
        write_user(*addr, &v)?;
    }
    Ok(0)
}

/// `getresuid(&ruid, &euid, &suid)`.
pub fn getresuid(me: &Arc<Thread>, _: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    let u = with(me, |c| c.uid);
    put_three(a, [u.real, u.effective, u.saved])
}

/// `getresgid(&rgid, &egid, &sgid)`.
pub fn getresgid(me: &Arc<Thread>, _: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    let g = with(me, |c| c.gid);
    put_three(a, [g.real, g.effective, g.saved])
}

/// `setfsuid(fsuid)`: the previous file-system user ID, changed or not.
pub fn setfsuid(me: &Arc<Thread>, _: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    Ok(with(me, |c| c.setfsuid(id(a[0]))).into())
}

/// `setfsgid(fsgid)`: the previous file-system group ID, changed or not.
pub fn setfsgid(me: &Arc<Thread>, _: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    Ok(with(me, |c| c.setfsgid(id(a[0]))).into())
}

/// `getgroups(size, list)`: the number of supplementary groups for size 0, else they are
/// written to `list`; EINVAL for a negative size or one too small.
pub fn getgroups(me: &Arc<Thread>, _: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    let size = a[0] as i32;
    if size < 0 {
        return Err(Errno::EINVAL);
    }
    let bytes: Vec<u8> = {
        let c = me.process.creds.lock();
        let groups = c.groups();
        if size == 0 {
            return Ok(groups.len() as u64);
        }
        if (size as usize) < groups.len() {
            return Err(Errno::EINVAL);
        }
        let mut b = Vec::new();
        b.try_reserve_exact(groups.len() * 4)
            .map_err(|_| Errno::ENOMEM)?;
        groups
            .iter()
            .for_each(|g| b.extend_from_slice(&g.to_le_bytes()));
        b
    };
    copy_to_user(a[1], &bytes)?;
    Ok((bytes.len() / 4) as u64)
}

/// `setgroups(size, list)`: privileged only; EINVAL for more than `NGROUPS_MAX` groups.
pub fn setgroups(me: &Arc<Thread>, _: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    let size = a[0] as i32;
    if size < 0 || size as usize > NGROUPS_MAX {
        return Err(Errno::EINVAL);
    }
    if !with(me, |c| c.is_privileged()) {
        return Err(Errno::EPERM);
    }
    let mut bytes = Vec::new();
    bytes
        .try_reserve_exact(size as usize * 4)
        .map_err(|_| Errno::ENOMEM)?;
    bytes.resize(size as usize * 4, 0);
    copy_from_user(a[1], &mut bytes)?;
    let groups: Vec<Id> = bytes
        .chunks_exact(4)
        .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect();
    with(me, |c| c.setgroups(&groups)).map(|()| 0)
}

/// `_LINUX_CAPABILITY_VERSION_1`: one 32-bit word per set.
const CAP_V1: u32 = 0x1998_0330;
/// `_LINUX_CAPABILITY_VERSION_2` (deprecated, read as version 3).
const CAP_V2: u32 = 0x2007_1026;
/// `_LINUX_CAPABILITY_VERSION_3`: two 32-bit words per set.
const CAP_V3: u32 = 0x2008_0522;

/// The capability header at `hdr`: its version's number of data words and the process it
/// names. An unknown version is EINVAL, and the header's version becomes version 3 (how a
/// program asks which version the kernel speaks); a `pid` below 0 is EINVAL.
fn cap_header(hdr: u64) -> Result<(usize, i32), Errno> {
    let mut raw = [0u8; 8];
    copy_from_user(hdr, &mut raw)?;
    let version = u32::from_ne_bytes([raw[0], raw[1], raw[2], raw[3]]);
    let pid = i32::from_ne_bytes([raw[4], raw[5], raw[6], raw[7]]);
    let words = match version {
        CAP_V1 => 1,
        CAP_V2 | CAP_V3 => 2,
        _ => {
            write_user(hdr, &CAP_V3)?;
            return Err(Errno::EINVAL);
        }
    };
    if pid < 0 {
        return Err(Errno::EINVAL);
    }
    Ok((words, pid))
}

/// `capget(hdr, data)`: the capability sets of process `hdr->pid` (0: the caller), which Reef
/// derives from the user IDs as Linux has them for a process that never changed its sets
/// ([`Credentials::capabilities`]); `data` may be NULL to ask only whether the version is
/// known. ESRCH for no such process.
pub fn capget(me: &Arc<Thread>, _: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    let (words, pid) = cap_header(a[0])?;
    let target = if pid == 0 {
        me.process.clone()
    } else {
        crate::proc::lookup(pid as u32).ok_or(Errno::ESRCH)?.process
    };
    let caps = target.creds.lock().capabilities();
    if a[1] == 0 {
        return Ok(0);
    }
    let mut out = [0u8; 24];
    for w in 0..words {
        for (i, set) in [caps.effective, caps.permitted, caps.inheritable]
            .into_iter()
            .enumerate()
        {
            let word = (set >> (32 * w)) as u32;
            out[w * 12 + i * 4..w * 12 + i * 4 + 4].copy_from_slice(&word.to_ne_bytes());
        }
    }
    copy_to_user(a[1], &out[..words * 12])?;
    Ok(0)
}

/// `capset(hdr, data)`: Reef keeps no capability sets apart from the user IDs, so the only
/// change it can make is none: sets equal to the current ones (of the caller: `hdr->pid` 0 or
/// its own) succeed, anything else is EPERM. That is Linux's answer for raising the permitted
/// set; where Linux would allow the change (dropping a capability, making a permitted one
/// effective) Reef refuses it too, and a program must change its user IDs instead.
pub fn capset(me: &Arc<Thread>, _: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    let (words, pid) = cap_header(a[0])?;
    if pid != 0 && pid as u32 != me.process.pid {
        return Err(Errno::EPERM);
    }
    let mut raw = [0u8; 24];
    copy_from_user(a[1], &mut raw[..words * 12])?;
    let word = |w: usize, i: usize| {
        let b = &raw[w * 12 + i * 4..w * 12 + i * 4 + 4];
        u64::from(u32::from_ne_bytes([b[0], b[1], b[2], b[3]])) << (32 * w)
    };
    let set = |i: usize| (0..words).map(|w| word(w, i)).fold(0, |acc, x| acc | x);
    let mask = if words == 1 {
        u64::from(u32::MAX)
    } else {
        u64::MAX
    };
    let now = with(me, |c| c.capabilities());
    let same = [now.effective, now.permitted, now.inheritable]
        .iter()
        .enumerate()
        .all(|(i, &cur)| set(i) == cur & mask);
    if same {
        Ok(0)
    } else {
        Err(Errno::EPERM)
    }
}
