//! `poll` event bits (Linux's `<poll.h>` values).

/// Data to read.
pub const POLLIN: u16 = 0x001;
/// Urgent data (never reported by Reef).
pub const POLLPRI: u16 = 0x002;
/// Room to write.
pub const POLLOUT: u16 = 0x004;
/// An error (a pipe without readers).
pub const POLLERR: u16 = 0x008;
/// Hung up (a pipe without writers).
pub const POLLHUP: u16 = 0x010;
/// Not an open descriptor.
pub const POLLNVAL: u16 = 0x020;
/// Same as `POLLIN` for the cases Reef has.
pub const POLLRDNORM: u16 = 0x040;
/// Same as `POLLOUT` for the cases Reef has.
pub const POLLWRNORM: u16 = 0x100;
/// The peer shut its writing down (a stream socket; Linux's `POLLRDHUP`, also `EPOLLRDHUP`).
pub const POLLRDHUP: u16 = 0x2000;
