//! The kernel console: the serial port, shared by all cores one line at a time, and the
//! kernel log (the last [`LOG_SIZE`] bytes the kernel printed, which `syslog`/`dmesg` read).

use crate::arch::serial::Serial;
use crate::sync::IrqMutex;
use core::fmt::Write;

/// Bytes of kernel messages kept for `syslog` (Linux's default `log_buf_len` is 128 KiB).
pub const LOG_SIZE: usize = 64 * 1024;

/// The serial port, once [`init`] has set it up.
static CONSOLE: IrqMutex<Option<Serial>> = IrqMutex::new(None);

/// The kernel log.
static LOG: IrqMutex<Log> = IrqMutex::new(Log {
    buf: [0; LOG_SIZE],
    written: 0,
    cleared: 0,
    read: 0,
    line_start: true,
});

/// A ring of the last [`LOG_SIZE`] bytes of kernel messages, each line as Linux's
/// `syslog(SYSLOG_ACTION_READ_ALL)` gives it: `<6>[seconds.micros] text`.
struct Log {
    /// The ring.
    buf: [u8; LOG_SIZE],
    /// Bytes ever written (the ring holds the last `LOG_SIZE` of them).
    written: u64,
    /// Where the last clear left the readable part.
    cleared: u64,
    /// How far `SYSLOG_ACTION_READ` read.
    read: u64,
    /// The next byte starts a line (gets the level and time stamp).
    line_start: bool,
}

impl Log {
    /// Appends a byte, overwriting the oldest once the ring is full.
    fn push(&mut self, b: u8) {
        self.buf[(self.written % LOG_SIZE as u64) as usize] = b;
        self.written += 1;
    }

    /// The oldest byte still held at or after `from`.
    fn held_from(&self, from: u64) -> u64 {
        from.max(self.written.saturating_sub(LOG_SIZE as u64))
    }

    /// Copies the bytes from `from` (at most `out.len()`, the latest ones if `latest`);
    /// returns how many and where they ended.
    fn copy(&self, from: u64, out: &mut [u8], latest: bool) -> (usize, u64) {
        let from = self.held_from(from);
        let n = ((self.written - from) as usize).min(out.len());
        let start = if latest {
            self.written - n as u64
        } else {
            from
        };
        for (i, o) in out[..n].iter_mut().enumerate() {
            *o = self.buf[((start + i as u64) % LOG_SIZE as u64) as usize];
        }
        (n, start + n as u64)
    }
}

impl Write for Log {
    fn write_str(&mut self, text: &str) -> core::fmt::Result {
        for &b in text.as_bytes() {
            if self.line_start {
                let ns = crate::time::now_ns();
                let mut stamp = [0u8; 32];
                let mut w = StampWriter(&mut stamp, 0);
                let _ = write!(
                    w,
                    "<6>[{:5}.{:06}] ",
                    ns / 1_000_000_000,
                    ns / 1000 % 1_000_000
                );
                let len = w.1;
                stamp[..len].iter().for_each(|&c| self.push(c));
            }
            self.push(b);
            self.line_start = b == b'\n';
        }
        Ok(())
    }
}

/// Formats a time stamp into a fixed buffer (the log must not allocate).
struct StampWriter<'a>(&'a mut [u8; 32], usize);

impl Write for StampWriter<'_> {
    fn write_str(&mut self, s: &str) -> core::fmt::Result {
        let end = (self.1 + s.len()).min(self.0.len());
        self.0[self.1..end].copy_from_slice(&s.as_bytes()[..end - self.1]);
        self.1 = end;
        Ok(())
    }
}

/// What `syslog` asks of the kernel log.
pub enum LogRead {
    /// The unread bytes, marking them read (`SYSLOG_ACTION_READ`).
    Unread,
    /// The latest bytes held (`SYSLOG_ACTION_READ_ALL`), then forgetting them if `clear`
    /// (`SYSLOG_ACTION_READ_CLEAR`).
    All {
        /// Forget them after.
        clear: bool,
    },
}

/// Copies kernel log bytes into `out` as `how` says; returns how many.
pub fn read_log(how: LogRead, out: &mut [u8]) -> usize {
    let mut log = LOG.lock();
    match how {
        LogRead::Unread => {
            let (n, end) = log.copy(log.read.max(log.cleared), out, false);
            log.read = end;
            n
        }
        LogRead::All { clear } => {
            let (n, _) = log.copy(log.cleared, out, true);
            if clear {
                log.cleared = log.written;
            }
            n
        }
    }
}

/// Forgets the kernel log's bytes (`SYSLOG_ACTION_CLEAR`).
pub fn clear_log() {
    let mut log = LOG.lock();
    log.cleared = log.written;
}

/// Bytes of the kernel log not read yet (`SYSLOG_ACTION_SIZE_UNREAD`).
pub fn unread_log() -> usize {
    let log = LOG.lock();
    let from = log.held_from(log.read.max(log.cleared));
    (log.written - from) as usize
}

/// Initializes the serial port. Output before this call is dropped.
pub fn init() {
    *CONSOLE.lock() = Some(Serial::init());
}

/// Writes formatted text to the console atomically with respect to other cores, and to the
/// kernel log.
pub fn print(args: core::fmt::Arguments<'_>) {
    if let Some(serial) = CONSOLE.lock().as_mut() {
        let _ = serial.write_fmt(args);
    }
    let _ = LOG.lock().write_fmt(args);
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
