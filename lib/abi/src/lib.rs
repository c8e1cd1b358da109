//! The Linux x86-64 user ABI as Reef implements it: error numbers and syscall numbers, and
//! Reef's own calls above Linux's range.
//!
//! Shared by the kernel and the host-tested library crates (file system, ELF loading) so they
//! all speak Linux's numbers.

#![no_std]
#![forbid(unsafe_code)]

pub mod errno;
pub mod poll;
pub mod reef;
pub mod syscalls;

pub use errno::Errno;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errno_names_and_returns() {
        assert_eq!(Errno::ENOENT.0, 2);
        assert_eq!(Errno::ENOENT.name(), Some("ENOENT"));
        assert_eq!(Errno::ENOSYS.to_return(), -38);
        assert_eq!(Errno(4095).name(), None);
        // EWOULDBLOCK aliases EAGAIN; the first name wins.
        assert_eq!(Errno::EWOULDBLOCK, Errno::EAGAIN);
        assert_eq!(Errno(11).name(), Some("EAGAIN"));
    }

    #[test]
    fn syscall_numbers_and_names() {
        assert_eq!(syscalls::SYS_READ, 0);
        assert_eq!(syscalls::SYS_GETPPID, 110);
        assert_eq!(syscalls::name(231), Some("exit_group"));
        assert_eq!(syscalls::name(335), None);
        assert_eq!(syscalls::name(435), Some("clone3"));
        const { assert!(syscalls::SYSCALL_LIMIT > 435) };
    }
}
