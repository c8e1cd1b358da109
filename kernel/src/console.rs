//! The kernel console: the serial port, shared by all cores one line at a time.

use crate::arch::serial::Serial;
use crate::sync::IrqMutex;
use core::fmt::Write;

/// The serial port, once [`init`] has set it up.
static CONSOLE: IrqMutex<Option<Serial>> = IrqMutex::new(None);

/// Initializes the serial port. Output before this call is dropped.
pub fn init() {
    *CONSOLE.lock() = Some(Serial::init());
}

/// Writes formatted text to the console atomically with respect to other cores.
pub fn print(args: core::fmt::Arguments<'_>) {
    if let Some(serial) = CONSOLE.lock().as_mut() {
        let _ = serial.write_fmt(args);
    }
}

/// Writes formatted text even if the console lock is held (for panic and exception reports:
/// the holder may be the failing code). Waits a while for the lock first so reports from several
/// cores do not interleave.
pub fn print_emergency(args: core::fmt::Arguments<'_>) {
    match CONSOLE.try_lock_for(10_000_000) {
        Some(mut guard) => {
            if let Some(serial) = guard.as_mut() {
                let _ = serial.write_fmt(args);
            }
        }
        None => {
            let _ = Serial::init().write_fmt(args);
        }
    }
}

/// Writes bytes as they are (the terminal's output processing, `crate::tty`, already turned
/// newlines into CR LF), atomically with respect to other writers.
pub fn write_raw(data: &[u8]) {
    if let Some(serial) = CONSOLE.lock().as_mut() {
        for &b in data {
            serial.write_byte(b);
        }
    }
}

/// Takes one byte of keyboard input from the serial port, if any arrived.
pub fn read_byte() -> Option<u8> {
    CONSOLE.lock().as_mut().and_then(|s| s.read_byte())
}

/// Prints to the console.
#[macro_export]
macro_rules! kprint {
    ($($arg:tt)*) => { $crate::console::print(format_args!($($arg)*)) };
}

/// Prints a line to the console.
#[macro_export]
macro_rules! kprintln {
    () => { $crate::console::print(format_args!("\n")) };
    ($($arg:tt)*) => { $crate::console::print(format_args!("{}\n", format_args!($($arg)*))) };
}
