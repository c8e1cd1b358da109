//! The console terminal: keyboard input from the serial port for `read` on descriptors 0-2.
//!
//! The serial port raises no interrupt here; a reader with no input waiting polls on every
//! timer tick (10 ms), sleeping in between.

use crate::proc::{sched, wait::Wake};
use crate::sync::IrqMutex;
use abi::Errno;

/// A byte taken from the port by [`has_input`] and not read yet.
static PEEKED: IrqMutex<Option<u8>> = IrqMutex::new(None);

fn next_byte() -> Option<u8> {
    PEEKED.lock().take().or_else(crate::console::read_byte)
}

/// Whether a `read` would return data now (for `poll`).
pub fn readable() -> bool {
    let mut peeked = PEEKED.lock();
    if peeked.is_none() {
        *peeked = crate::console::read_byte();
    }
    peeked.is_some()
}

/// Reads at least one byte (or fails with `EAGAIN` when `nonblock`), at most `buf.len()`.
pub fn read(buf: &mut [u8], nonblock: bool) -> Result<usize, Errno> {
    if buf.is_empty() {
        return Ok(0);
    }
    loop {
        let mut n = 0;
        while n < buf.len() {
            match next_byte() {
                Some(b'\r') => buf[n] = b'\n',
                Some(b) => buf[n] = b,
                None => break,
            }
            n += 1;
        }
        if n > 0 {
            return Ok(n);
        }
        if nonblock {
            return Err(Errno::EAGAIN);
        }
        let me = sched::current_thread();
        if crate::proc::wait::sleep_until(&me, crate::time::now_ns() + 10_000_000)
            == Wake::Interrupted
        {
            return Err(Errno::EINTR);
        }
    }
}

/// Writes program output to the console (a newline becomes CR LF).
pub fn write(data: &[u8]) -> Result<usize, Errno> {
    crate::console::write_bytes(data);
    Ok(data.len())
}

/// Terminal `ioctl`s: TCGETS (fixed settings) and TIOCGWINSZ (24x80); others ENOTTY.
pub fn ioctl(_: &alloc::sync::Arc<crate::proc::Thread>, cmd: u64, arg: u64) -> Result<u64, Errno> {
    const TCGETS: u64 = 0x5401;
    const TIOCGWINSZ: u64 = 0x5413;
    match cmd {
        TCGETS => {
            // The kernel's `struct termios` (36 bytes: four flag words, c_line, 19 c_cc).
            let mut termios = [0u8; 36];
            termios[0..4].copy_from_slice(&0x0500u32.to_le_bytes()); // ICRNL | IXON
            termios[4..8].copy_from_slice(&0x0005u32.to_le_bytes()); // OPOST | ONLCR
            termios[8..12].copy_from_slice(&0x00bfu32.to_le_bytes()); // CS8 | CREAD | B38400
            termios[12..16].copy_from_slice(&0x8a3bu32.to_le_bytes()); // ISIG ICANON ECHO...
            crate::uaccess::copy_to_user(arg, &termios)?;
            Ok(0)
        }
        TIOCGWINSZ => {
            crate::uaccess::write_user(arg, &[24u16, 80, 0, 0])?;
            Ok(0)
        }
        _ => Err(Errno::ENOTTY),
    }
}
