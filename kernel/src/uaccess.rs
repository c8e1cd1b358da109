//! Access to user memory from system calls.
//!
//! Every user pointer is checked to lie in the user half before the copy, and the copy itself
//! runs in the arch layer's `user_copy` routine: a fault there is first offered to demand paging
//! (the page may simply not be populated yet) and otherwise turns into `EFAULT`, never a kernel
//! crash. With SMAP on, this routine is the only kernel code allowed to touch user pages.
//!
//! With interrupts off (under an `IrqMutex`) a copy does not page: a fault fails it with
//! `EFAULT` at once, because resolving one may wait for other cores (NR log space, a TLB
//! shootdown) that cannot reach a core with interrupts off. Code that must read user memory
//! under such a lock (the futex word) drops the lock, brings the page in with an ordinary copy,
//! and retries.

use crate::arch::user::{self, USER_END};
use abi::Errno;
use alloc::vec::Vec;

/// Checks that `[addr, addr + len)` lies in the user half.
pub fn check_range(addr: u64, len: usize) -> Result<(), Errno> {
    match addr.checked_add(len as u64) {
        Some(end) if end <= USER_END => Ok(()),
        _ => Err(Errno::EFAULT),
    }
}

/// Copies `buf.len()` bytes from user address `addr`.
pub fn copy_from_user(addr: u64, buf: &mut [u8]) -> Result<(), Errno> {
    check_range(addr, buf.len())?;
    // SAFETY: `buf` is a valid kernel buffer of that length; the user side was range-checked
    // and faults on it are recovered.
    unsafe { user::copy(buf.as_mut_ptr(), addr as *const u8, buf.len()) }.map_err(|_| Errno::EFAULT)
}

/// Copies `data` to user address `addr`.
pub fn copy_to_user(addr: u64, data: &[u8]) -> Result<(), Errno> {
    check_range(addr, data.len())?;
    // SAFETY: as for `copy_from_user`, in the other direction.
    unsafe { user::copy(addr as *mut u8, data.as_ptr(), data.len()) }.map_err(|_| Errno::EFAULT)
}

/// Plain data that can be copied to and from user memory byte by byte.
///
/// # Safety
/// Every bit pattern must be a valid value of the type, and it must have no padding.
pub unsafe trait Pod: Copy {}
// SAFETY: integers have no padding and accept every bit pattern.
unsafe impl Pod for u8 {}
// SAFETY: as above.
unsafe impl Pod for u16 {}
// SAFETY: as above.
unsafe impl Pod for u32 {}
// SAFETY: as above.
unsafe impl Pod for u64 {}
// SAFETY: as above.
unsafe impl Pod for i32 {}
// SAFETY: as above.
unsafe impl Pod for i64 {}
// SAFETY: arrays of Pod have no padding between elements.
unsafe impl<T: Pod, const N: usize> Pod for [T; N] {}

/// Reads a value from user memory.
pub fn read_user<T: Pod>(addr: u64) -> Result<T, Errno> {
    let mut v = core::mem::MaybeUninit::<T>::uninit();
    // SAFETY: the slice covers exactly the (uninitialized) value, which the copy fills; `T`
    // accepts any bit pattern (Pod).
    let bytes = unsafe {
        core::slice::from_raw_parts_mut(v.as_mut_ptr() as *mut u8, core::mem::size_of::<T>())
    };
    copy_from_user(addr, bytes)?;
    // SAFETY: fully written by the successful copy.
    Ok(unsafe { v.assume_init() })
}

/// Writes a value to user memory.
pub fn write_user<T: Pod>(addr: u64, value: &T) -> Result<(), Errno> {
    // SAFETY: a Pod value has no padding, so all its bytes are initialized.
    let bytes = unsafe {
        core::slice::from_raw_parts(value as *const T as *const u8, core::mem::size_of::<T>())
    };
    copy_to_user(addr, bytes)
}

/// Reads a NUL-terminated string of at most `max` bytes (without the NUL); `ENAMETOOLONG` if
/// no NUL comes within `max` bytes, `ENOMEM` if the string cannot be stored.
///
/// Copies 256 bytes at a time and never across a page boundary before looking for the NUL (a
/// string may end just before an unmapped page), so a path costs a copy of about its own
/// length rather than of the rest of its page.
pub fn read_cstring(addr: u64, max: usize) -> Result<Vec<u8>, Errno> {
    let mut out = Vec::new();
    let mut at = addr;
    let mut chunk = [0u8; 256];
    loop {
        let page_left = (4096 - (at & 4095)) as usize;
        let want = page_left.min(chunk.len()).min(max + 1 - out.len());
        copy_from_user(at, &mut chunk[..want])?;
        let nul = chunk[..want].iter().position(|&b| b == 0);
        let take = nul.unwrap_or(want);
        out.try_reserve(take).map_err(|_| Errno::ENOMEM)?;
        out.extend_from_slice(&chunk[..take]);
        if nul.is_some() {
            return Ok(out);
        }
        if out.len() > max {
            return Err(Errno::ENAMETOOLONG);
        }
        at += want as u64;
    }
}

/// Reads a NULL-terminated array of string pointers (argv, envp): at most `max_count` strings
/// and `max_bytes` bytes in all (`E2BIG` beyond).
pub fn read_string_array(
    addr: u64,
    max_count: usize,
    max_bytes: usize,
) -> Result<Vec<Vec<u8>>, Errno> {
    let mut out = Vec::new();
    if addr == 0 {
        return Ok(out);
    }
    let mut total = 0usize;
    for i in 0.. {
        if i >= max_count {
            return Err(Errno::E2BIG);
        }
        let p: u64 = read_user(addr + 8 * i as u64)?;
        if p == 0 {
            break;
        }
        let s = read_cstring(p, max_bytes - total).map_err(|e| {
            if e == Errno::ENAMETOOLONG {
                Errno::E2BIG
            } else {
                e
            }
        })?;
        total += s.len() + 1;
        out.try_reserve(1).map_err(|_| Errno::ENOMEM)?;
        out.push(s);
    }
    Ok(out)
}
