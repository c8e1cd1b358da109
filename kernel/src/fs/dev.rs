//! Character devices: `/dev` entries are NR-FS device inodes (made at boot, see
//! [`populate`]); opening one gives the device its number names.

use super::{now, with_client};
use abi::Errno;
use nrfs::{Attrs, ROOT_INO};

/// A device Reef implements.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Device {
    /// `/dev/null` (1,3): reads end of file, writes vanish.
    Null,
    /// `/dev/zero` (1,5): reads zeros, writes vanish.
    Zero,
    /// `/dev/full` (1,7): reads zeros, writes fail with ENOSPC.
    Full,
    /// `/dev/random` (1,8) and `/dev/urandom` (1,9): random bytes (RDRAND), writes vanish.
    Random,
    /// `/dev/tty` (5,0) and `/dev/console` (5,1): the console terminal.
    Console,
}

/// `makedev(major, minor)` as Linux encodes small numbers (what `stat` shows in `st_rdev`).
pub const fn makedev(major: u64, minor: u64) -> u64 {
    (major << 8) | minor
}

/// The device behind device number `rdev`; ENXIO for one Reef does not have.
pub fn from_rdev(rdev: u64) -> Result<Device, Errno> {
    match (rdev >> 8, rdev & 0xff) {
        (1, 3) => Ok(Device::Null),
        (1, 5) => Ok(Device::Zero),
        (1, 7) => Ok(Device::Full),
        (1, 8) | (1, 9) => Ok(Device::Random),
        (5, 0) | (5, 1) => Ok(Device::Console),
        _ => Err(Errno::ENXIO),
    }
}

/// The entries of `/dev`: name, mode, device number.
const NODES: &[(&[u8], u32, u64)] = &[
    (b"null", 0o666, makedev(1, 3)),
    (b"zero", 0o666, makedev(1, 5)),
    (b"full", 0o666, makedev(1, 7)),
    (b"random", 0o666, makedev(1, 8)),
    (b"urandom", 0o666, makedev(1, 9)),
    (b"tty", 0o666, makedev(5, 0)),
    (b"console", 0o600, makedev(5, 1)),
];

/// Creates `/dev` and its device nodes (an entry the initramfs already has is kept).
pub fn populate() -> Result<(), Errno> {
    let t = now();
    with_client(|c| {
        match c.mkdir(ROOT_INO, b"/dev", Attrs::new(0o755, 0, 0), t) {
            Ok(_) | Err(Errno::EEXIST) => {}
            Err(e) => return Err(e),
        }
        let dev = c.resolve(ROOT_INO, b"/dev", true)?;
        for &(name, mode, rdev) in NODES {
            match c.mknod(dev, name, Attrs::new(mode, 0, 0), rdev, t) {
                Ok(_) | Err(Errno::EEXIST) => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    })
}

/// Reads from a memory device (not the console).
pub fn read(d: Device, buf: &mut [u8]) -> usize {
    match d {
        Device::Null => 0,
        Device::Zero | Device::Full => {
            buf.fill(0);
            buf.len()
        }
        Device::Random => {
            crate::random::fill(buf);
            buf.len()
        }
        Device::Console => 0,
    }
}

/// Writes to a memory device (not the console).
pub fn write(d: Device, data: &[u8]) -> Result<usize, Errno> {
    match d {
        Device::Full => Err(Errno::ENOSPC),
        _ => Ok(data.len()),
    }
}
