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
pub fn has_input() -> bool {
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
