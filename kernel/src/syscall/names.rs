//! Reef's name-directory calls (fos §3.2.1; see `crate::names`): `reef_name_register`,
//! `reef_name_unregister`, `reef_name_lookup`.

use super::SysResult;
use crate::arch::idt::InterruptFrame;
use crate::names::{self, Name};
use crate::proc::Thread;
use crate::uaccess;
use abi::reef::{NAME_MEMBER_SIZE, REEF_NAME_NEAREST, REEF_NAME_ROUND_ROBIN};
use abi::Errno;
use alloc::sync::Arc;
use msg::names::{Pick, NAME_MAX};

/// The name at `addr`, `len` bytes: `EINVAL` for an empty or too long one.
fn name_arg(addr: u64, len: u64) -> Result<Name, Errno> {
    if len == 0 || len > NAME_MAX as u64 {
        return Err(Errno::EINVAL);
    }
    let mut buf = [0u8; NAME_MAX];
    uaccess::copy_from_user(addr, &mut buf[..len as usize])?;
    Name::new(&buf[..len as usize])
}

/// `reef_name_register(name, len, mailbox)`: `EINVAL` (a bad name), `EPERM` (under `fleet/`),
/// `EEXIST` (registered already), `ENOSPC` (the directory or the name is full).
pub fn register(me: &Arc<Thread>, _: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    let name = name_arg(a[0], a[1])?;
    me.process.note_named();
    names::register(name, me.process.pid, a[2])?;
    Ok(0)
}

/// `reef_name_unregister(name, len, mailbox)`: `ENOENT` if the caller has not registered
/// `mailbox` under `name`.
pub fn unregister(me: &Arc<Thread>, _: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    let name = name_arg(a[0], a[1])?;
    names::unregister(name, me.process.pid, a[2])?;
    Ok(0)
}

/// `reef_name_lookup(name, len, how, out)`: `ENOENT` for a name nobody registered, `EINVAL`
/// for another `how` than `REEF_NAME_NEAREST` or `REEF_NAME_ROUND_ROBIN`.
pub fn lookup(_: &Arc<Thread>, _: &mut InterruptFrame, a: [u64; 6]) -> SysResult {
    let name = name_arg(a[0], a[1])?;
    let pick = match a[2] {
        REEF_NAME_NEAREST => Pick::Nearest,
        REEF_NAME_ROUND_ROBIN => Pick::RoundRobin,
        _ => return Err(Errno::EINVAL),
    };
    uaccess::check_range(a[3], NAME_MEMBER_SIZE)?;
    let m = names::lookup(name, pick)?;
    let mut out = [0u8; NAME_MEMBER_SIZE];
    out[..8].copy_from_slice(&m.mailbox.to_le_bytes());
    out[8..12].copy_from_slice(&m.pid.to_le_bytes());
    out[12..16].copy_from_slice(&m.core.to_le_bytes());
    out[16..20].copy_from_slice(&m.node.to_le_bytes());
    uaccess::copy_to_user(a[3], &out)?;
    Ok(0)
}
