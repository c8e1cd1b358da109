//! A terminal line discipline with Linux's N_TTY semantics, as a pure state machine.
//!
//! [`LineDiscipline`] sits between a serial line and the programs that read and write a
//! terminal. It owns no device: the caller hands it each received byte
//! ([`LineDiscipline::receive`]) and gets back the bytes to echo and, for the signal
//! characters, which signal to send to the terminal's foreground process group; a `read` takes
//! bytes out of its input queue ([`LineDiscipline::read`], [`LineDiscipline::read_attempt`]);
//! a `write` goes through its output processing ([`LineDiscipline::write`]). Blocking, timers
//! and signal delivery are the caller's (the kernel's) business; this crate only says when a
//! read is complete and how long it may wait ([`ReadWait`]).
//!
//! # What it implements (the subset a shell and ordinary programs use)
//!
//! - Input: `ISTRIP`, `IUCLC` (with `IEXTEN`), `IGNCR`/`ICRNL`/`INLCR`, `IXON`/`IXANY`
//!   (VSTOP stops output, VSTART or, with `IXANY`, any byte restarts it; the caller makes
//!   writers wait while [`LineDiscipline::output_stopped`]), `CREAD` (off: input is dropped).
//! - `ISIG`: VINTR, VQUIT, VSUSP give [`Signal::Interrupt`], [`Signal::Quit`],
//!   [`Signal::Suspend`]; the input queue is flushed unless `NOFLSH`, the character is echoed
//!   (`^C`) under `ECHO`, and stopped output restarts.
//! - `ICANON`: VERASE (with `ECHOE` echoed as `"\b \b"`, without as the erase character; tabs
//!   and `^X` echoes are erased by their width; with `IUTF8` a whole UTF-8 sequence goes),
//!   VKILL (`ECHOK`, `ECHOKE`), VWERASE (Linux's rule: trailing non-word characters, then the
//!   word), VLNEXT, VREPRINT; a line ends at NL, VEOL, VEOL2 (with `IEXTEN`) or VEOF, and VEOF is
//!   not part of the data, so VEOF on an empty line makes `read` return 0. A read returns at
//!   most one line.
//! - Echo: `ECHO`, `ECHONL`, `ECHOCTL` (control characters as `^X`, DEL as `^?`), all through
//!   the output processing.
//! - Non-canonical mode: everything received is readable at once; `VMIN`/`VTIME` as Linux
//!   (see [`ReadWait`]).
//! - Output: `OPOST` with `ONLCR`, `OCRNL`, `ONOCR`, `ONLRET`, `OLCUC` and `XTABS`; the
//!   output column is tracked for tab stops and for erasing tabs.
//!
//! A control character set to 0 (`_POSIX_VDISABLE`) is disabled. Not implemented: parity and
//! break handling (`IGNBRK`, `BRKINT`, `PARMRK`, `INPCK`: a serial console reports neither),
//! `ECHOPRT`, `XCASE`, `PENDIN`, `FLUSHO`/VDISCARD, `IXOFF`, `EXTPROC`, output delays.
//!
//! # Input queue bound
//!
//! The input queue holds [`INPUT_CAPACITY`] (4096) bytes, like Linux's. A byte that arrives
//! when it is full is dropped. In canonical mode one place is kept for the line's terminator,
//! so a line holds at most 4095 bytes plus its terminator and can always be ended; a byte
//! dropped there rings the bell (BEL is echoed), as Linux does (it acts as if `IMAXBEL` were
//! always set).

#![no_std]
#![forbid(unsafe_code)]
#![deny(missing_docs)]

extern crate alloc;

mod termios;

pub use termios::{cc, cflag, iflag, lflag, oflag, Termios, NCCS, TERMIOS_SIZE};

use alloc::collections::VecDeque;
use alloc::vec::Vec;

/// Capacity of the input queue in bytes.
pub const INPUT_CAPACITY: usize = 4096;

/// Queue entry flag: this byte ends a canonical line (NL, VEOL, VEOL2).
const LINE_END: u16 = 0x100;
/// Queue entry: a VEOF that ended a line; it ends the line but is not data.
const EOF_MARK: u16 = 0x200;

/// Nanoseconds per unit of `VTIME` (a tenth of a second).
pub const VTIME_UNIT_NS: u64 = 100_000_000;

/// A signal that a received character asks for (to the foreground process group).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Signal {
    /// VINTR: SIGINT.
    Interrupt,
    /// VQUIT: SIGQUIT.
    Quit,
    /// VSUSP: SIGTSTP.
    Suspend,
}

impl Signal {
    /// The Linux signal number.
    pub fn number(self) -> u32 {
        match self {
            Signal::Interrupt => 2,
            Signal::Quit => 3,
            Signal::Suspend => 20,
        }
    }
}

/// What a `read` does after copying what it could ([`LineDiscipline::read_attempt`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReadWait {
    /// The read is complete: return what was copied (0 at end of file, or in non-canonical
    /// mode with `VMIN` = 0 when nothing came).
    Done,
    /// Wait for more input, without a time limit (unless the file is non-blocking).
    Block,
    /// Wait for more input for at most this many nanoseconds, counted from when the read last
    /// copied data, or from its start if it copied nothing yet; when they pass, return what was
    /// copied. (`VTIME`: with `VMIN` = 0 the read's whole timeout, with `VMIN` > 0 the timeout
    /// between bytes, which starts once the first byte came.)
    Timeout(u64),
}

/// How much an erase character removes.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Erase {
    Char,
    Word,
    Line,
}

/// The line discipline of one terminal.
pub struct LineDiscipline {
    termios: Termios,
    /// Received bytes (with the `LINE_END`/`EOF_MARK` flags) not read yet.
    queue: VecDeque<u16>,
    /// Entries at the front that a read may take: complete lines in canonical mode, every
    /// entry in non-canonical mode. The rest is the line being edited.
    committed: usize,
    /// Output column (for tab stops, `ONOCR` and erasing tabs).
    column: usize,
    /// Output column where the line being edited started.
    canon_column: usize,
    /// VLNEXT was received: the next byte is taken literally.
    lnext: bool,
    /// Output is stopped (VSTOP under `IXON`, or `tcflow(TCOOFF)`).
    stopped: bool,
}

fn is_control(c: u8) -> bool {
    c < 0x20 || c == 0x7f
}

fn is_continuation(c: u8) -> bool {
    c & 0xc0 == 0x80
}

impl LineDiscipline {
    /// A line discipline with Linux's default settings ([`Termios::linux_default`]) and nothing
    /// queued.
    pub const fn new() -> Self {
        LineDiscipline {
            termios: Termios::linux_default(),
            queue: VecDeque::new(),
            committed: 0,
            column: 0,
            canon_column: 0,
            lnext: false,
            stopped: false,
        }
    }

    /// The current settings (`TCGETS`).
    pub fn termios(&self) -> &Termios {
        &self.termios
    }

    /// Changes the settings (`TCSETS`). Switching canonical mode on or off makes everything
    /// queued readable, as Linux does: a partial line becomes data in non-canonical mode, and
    /// raw input already queued counts as one complete line in canonical mode. Turning `IXON`
    /// off restarts stopped output.
    pub fn set_termios(&mut self, termios: Termios) {
        let old = self.termios;
        self.termios = termios;
        if (old.c_lflag ^ termios.c_lflag) & lflag::ICANON != 0 {
            self.committed = self.queue.len();
            self.canon_column = self.column;
        }
        if !termios.i(iflag::IXON) {
            self.stopped = false;
        }
    }

    /// Whether canonical mode is on.
    fn canonical(&self) -> bool {
        self.termios.l(lflag::ICANON)
    }

    /// Bytes of the line being edited (canonical mode).
    fn uncommitted(&self) -> usize {
        self.queue.len() - self.committed
    }

    /// Discards all input, read or not yet complete (`TCFLSH`, and signal characters).
    pub fn flush_input(&mut self) {
        self.queue.clear();
        self.committed = 0;
        self.lnext = false;
    }

    /// Whether output is stopped (VSTOP under `IXON`, or [`LineDiscipline::set_output_stopped`]);
    /// writers wait until it is not.
    pub fn output_stopped(&self) -> bool {
        self.stopped
    }

    /// Stops or restarts output (`tcflow` with `TCOOFF`/`TCOON`).
    pub fn set_output_stopped(&mut self, stopped: bool) {
        self.stopped = stopped;
    }

    /// Processes one byte received from the line. Echo (already output-processed) is appended
    /// to `out`; a signal character returns the signal for the foreground process group.
    pub fn receive(&mut self, byte: u8, out: &mut Vec<u8>) -> Option<Signal> {
        let t = self.termios;
        if t.c_cflag & cflag::CREAD == 0 {
            return None;
        }
        let mut c = if t.i(iflag::ISTRIP) {
            byte & 0x7f
        } else {
            byte
        };
        if self.lnext {
            self.lnext = false;
            self.insert(c, out);
            return None;
        }
        if t.i(iflag::IUCLC) && t.l(lflag::IEXTEN) {
            c = c.to_ascii_lowercase();
        }
        if t.i(iflag::IXON) {
            let (start, stop) = (t.is(cc::VSTART, c), t.is(cc::VSTOP, c));
            if start || stop {
                self.stopped = if start && stop { !self.stopped } else { stop };
                return None;
            }
            if t.i(iflag::IXANY) {
                self.stopped = false;
            }
        }
        if t.l(lflag::ISIG) {
            let signal = if t.is(cc::VINTR, c) {
                Some(Signal::Interrupt)
            } else if t.is(cc::VQUIT, c) {
                Some(Signal::Quit)
            } else if t.is(cc::VSUSP, c) {
                Some(Signal::Suspend)
            } else {
                None
            };
            if let Some(signal) = signal {
                if !t.l(lflag::NOFLSH) {
                    self.flush_input();
                }
                if t.i(iflag::IXON) {
                    self.stopped = false;
                }
                if t.l(lflag::ECHO) {
                    self.echo_char(c, out);
                }
                return Some(signal);
            }
        }
        if c == b'\r' {
            if t.i(iflag::IGNCR) {
                return None;
            }
            if t.i(iflag::ICRNL) {
                c = b'\n';
            }
        } else if c == b'\n' && t.i(iflag::INLCR) {
            c = b'\r';
        }
        if t.l(lflag::ICANON) {
            let iexten = t.l(lflag::IEXTEN);
            if t.is(cc::VERASE, c) {
                self.erase(Erase::Char, out);
                return None;
            }
            if t.is(cc::VKILL, c) {
                self.erase(Erase::Line, out);
                return None;
            }
            if iexten && t.is(cc::VWERASE, c) {
                self.erase(Erase::Word, out);
                return None;
            }
            if iexten && t.is(cc::VLNEXT, c) {
                self.lnext = true;
                if t.l(lflag::ECHO | lflag::ECHOCTL) {
                    self.output(b'^', out);
                    self.output(0x08, out);
                }
                return None;
            }
            if iexten && t.l(lflag::ECHO) && t.is(cc::VREPRINT, c) {
                self.reprint(c, out);
                return None;
            }
            if c == b'\n' {
                if t.l(lflag::ECHO) || t.l(lflag::ECHONL) {
                    self.output(b'\n', out);
                }
                self.end_line(u16::from(c) | LINE_END);
                return None;
            }
            if t.is(cc::VEOF, c) {
                self.end_line(EOF_MARK);
                return None;
            }
            if t.is(cc::VEOL, c) || (iexten && t.is(cc::VEOL2, c)) {
                if t.l(lflag::ECHO) {
                    self.echo_char(c, out);
                }
                self.end_line(u16::from(c) | LINE_END);
                return None;
            }
        }
        self.insert(c, out);
        None
    }

    /// Queues an ordinary byte, echoing it.
    fn insert(&mut self, c: u8, out: &mut Vec<u8>) {
        let canonical = self.canonical();
        let limit = if canonical {
            INPUT_CAPACITY - 1
        } else {
            INPUT_CAPACITY
        };
        if self.queue.len() >= limit {
            if canonical {
                self.output(0x07, out);
            }
            return;
        }
        if canonical && self.uncommitted() == 0 {
            self.canon_column = self.column;
        }
        if self.termios.l(lflag::ECHO) {
            if c == b'\n' {
                self.output(c, out);
            } else {
                self.echo_char(c, out);
            }
        }
        self.queue.push_back(u16::from(c));
        if !canonical {
            self.committed = self.queue.len();
        }
    }

    /// Ends the canonical line being edited with `entry` (a terminator or `EOF_MARK`).
    fn end_line(&mut self, entry: u16) {
        if self.queue.len() < INPUT_CAPACITY {
            self.queue.push_back(entry);
        }
        self.committed = self.queue.len();
    }

    /// Echoes `c`, as `^X` if it is a control character (other than tab) under `ECHOCTL`.
    fn echo_char(&mut self, c: u8, out: &mut Vec<u8>) {
        if self.termios.l(lflag::ECHOCTL) && is_control(c) && c != b'\t' {
            self.output(b'^', out);
            self.output(c ^ 0x40, out);
        } else {
            self.output(c, out);
        }
    }

    /// Output column after echoing the line being edited, from where it started.
    fn line_column(&self) -> usize {
        let t = &self.termios;
        let mut col = self.canon_column;
        for &e in self.queue.iter().skip(self.committed) {
            let b = e as u8;
            if b == b'\t' {
                col = (col | 7) + 1;
            } else if is_control(b) {
                if t.l(lflag::ECHOCTL) {
                    col += 2;
                }
            } else if !(t.i(iflag::IUTF8) && is_continuation(b)) {
                col += 1;
            }
        }
        col
    }

    fn erase(&mut self, kind: Erase, out: &mut Vec<u8>) {
        let t = self.termios;
        if self.uncommitted() == 0 {
            return;
        }
        let echo = t.l(lflag::ECHO);
        if kind == Erase::Line && !(echo && t.l(lflag::ECHOK | lflag::ECHOKE | lflag::ECHOE)) {
            self.queue.truncate(self.committed);
            if echo {
                self.echo_char(t.c_cc[cc::VKILL], out);
                if t.l(lflag::ECHOK) {
                    self.output(b'\n', out);
                }
            }
            return;
        }
        let mut seen_word = false;
        while self.uncommitted() > 0 {
            let last = self.queue.back().map_or(0, |&e| e as u8);
            if kind == Erase::Word {
                if last.is_ascii_alphanumeric() || last == b'_' {
                    seen_word = true;
                } else if seen_word {
                    break;
                }
            }
            // Remove one character: with IUTF8, a lead byte and its continuation bytes.
            let mut first = last;
            while let Some(e) = self.queue.pop_back() {
                first = e as u8;
                if !(t.i(iflag::IUTF8) && is_continuation(first)) || self.uncommitted() == 0 {
                    break;
                }
            }
            if echo {
                if kind == Erase::Char && !t.l(lflag::ECHOE) {
                    self.echo_char(t.c_cc[cc::VERASE], out);
                } else if first == b'\t' {
                    let col = self.line_column();
                    for _ in col..self.column {
                        self.output(0x08, out);
                    }
                } else if !is_control(first) {
                    self.rub_out(out);
                } else if t.l(lflag::ECHOCTL) {
                    self.rub_out(out);
                    self.rub_out(out);
                }
            }
            if kind == Erase::Char {
                break;
            }
        }
    }

    /// Erases one column on the screen.
    fn rub_out(&mut self, out: &mut Vec<u8>) {
        for b in [0x08, b' ', 0x08] {
            self.output(b, out);
        }
    }

    /// VREPRINT: echoes the character, a newline and the line being edited again.
    fn reprint(&mut self, c: u8, out: &mut Vec<u8>) {
        self.echo_char(c, out);
        self.output(b'\n', out);
        self.canon_column = self.column;
        let line: Vec<u8> = self
            .queue
            .iter()
            .skip(self.committed)
            .map(|&e| e as u8)
            .collect();
        for b in line {
            if b == b'\n' {
                self.output(b, out);
            } else {
                self.echo_char(b, out);
            }
        }
    }

    /// Copies readable input into `buf`: in canonical mode at most one line (its terminator
    /// included, VEOF left out; a line longer than `buf` is continued by the next read), in
    /// non-canonical mode whatever is queued. Returns the bytes copied; 0 in canonical mode
    /// with [`LineDiscipline::readable`] true means end of file.
    pub fn read(&mut self, buf: &mut [u8]) -> usize {
        let canonical = self.canonical();
        let mut n = 0;
        while n < buf.len() && self.committed > 0 {
            let Some(e) = self.queue.pop_front() else {
                break;
            };
            self.committed -= 1;
            if e & EOF_MARK != 0 {
                if canonical {
                    break;
                }
                continue;
            }
            buf[n] = e as u8;
            n += 1;
            if canonical && e & LINE_END != 0 {
                break;
            }
        }
        n
    }

    /// One step of a `read` call that has copied `*got` bytes into `buf` so far: copies what it
    /// may now into `buf[*got..]`, adds that to `*got`, and says whether the call is complete
    /// or how it waits. In canonical mode a read completes as soon as a line (or an end of
    /// file) is there. In non-canonical mode (Linux's `VMIN`/`VTIME` rules, `VMIN` capped at
    /// `buf.len()`): `VMIN` = 0, `VTIME` = 0 completes at once; `VMIN` = 0, `VTIME` > 0 waits
    /// up to `VTIME` for the first byte; `VMIN` > 0, `VTIME` = 0 waits for `VMIN` bytes;
    /// `VMIN` > 0, `VTIME` > 0 waits for the first byte, then for `VMIN` bytes as long as no
    /// gap between bytes is longer than `VTIME`.
    pub fn read_attempt(&mut self, buf: &mut [u8], got: &mut usize) -> ReadWait {
        let Some(rest) = buf.get_mut(*got..) else {
            return ReadWait::Done;
        };
        if self.canonical() {
            if !self.readable() {
                return ReadWait::Block;
            }
            *got += self.read(rest);
            return ReadWait::Done;
        }
        *got += self.read(rest);
        let min = usize::from(self.termios.c_cc[cc::VMIN]);
        let time = u64::from(self.termios.c_cc[cc::VTIME]) * VTIME_UNIT_NS;
        if min == 0 {
            if *got > 0 || time == 0 {
                ReadWait::Done
            } else {
                ReadWait::Timeout(time)
            }
        } else if *got >= min.min(buf.len()) {
            ReadWait::Done
        } else if time == 0 || *got == 0 {
            ReadWait::Block
        } else {
            ReadWait::Timeout(time)
        }
    }

    /// Whether input is ready for `poll`: in canonical mode a complete line or an end of file;
    /// in non-canonical mode at least `VMIN` bytes when `VTIME` is 0 and `VMIN` > 0, else at
    /// least one byte (Linux's rule).
    pub fn readable(&self) -> bool {
        if self.canonical() {
            return self.committed > 0;
        }
        let t = &self.termios;
        let need = match (t.c_cc[cc::VMIN], t.c_cc[cc::VTIME]) {
            (min, 0) if min > 0 => usize::from(min),
            _ => 1,
        };
        self.input_len() >= need
    }

    /// Bytes a read could take now (`FIONREAD`): the complete lines in canonical mode,
    /// everything in non-canonical mode.
    pub fn input_len(&self) -> usize {
        self.queue
            .iter()
            .take(self.committed)
            .filter(|&&e| e & EOF_MARK == 0)
            .count()
    }

    /// Output processing of `data` written to the terminal; the bytes for the line are
    /// appended to `out`.
    pub fn write(&mut self, data: &[u8], out: &mut Vec<u8>) {
        out.reserve(data.len());
        for &b in data {
            self.output(b, out);
        }
    }

    /// Output processing of one byte (`OPOST` and the flags under it).
    fn output(&mut self, c: u8, out: &mut Vec<u8>) {
        let t = self.termios;
        if !t.o(oflag::OPOST) {
            out.push(c);
            return;
        }
        match c {
            b'\n' => {
                if t.o(oflag::ONLRET) {
                    self.column = 0;
                }
                if t.o(oflag::ONLCR) {
                    self.column = 0;
                    out.push(b'\r');
                }
                out.push(b'\n');
            }
            b'\r' => {
                if t.o(oflag::ONOCR) && self.column == 0 {
                    return;
                }
                if t.o(oflag::OCRNL) {
                    if t.o(oflag::ONLRET) {
                        self.column = 0;
                    }
                    out.push(b'\n');
                } else {
                    self.column = 0;
                    out.push(b'\r');
                }
            }
            b'\t' => {
                let spaces = 8 - (self.column & 7);
                self.column += spaces;
                if t.c_oflag & oflag::TABDLY == oflag::XTABS {
                    out.extend(core::iter::repeat_n(b' ', spaces));
                } else {
                    out.push(b'\t');
                }
            }
            0x08 => {
                self.column = self.column.saturating_sub(1);
                out.push(c);
            }
            _ => {
                let c = if t.o(oflag::OLCUC) {
                    c.to_ascii_uppercase()
                } else {
                    c
                };
                let zero_width = is_control(c) || (t.i(iflag::IUTF8) && is_continuation(c));
                if !zero_width {
                    self.column += 1;
                }
                out.push(c);
            }
        }
    }
}

impl Default for LineDiscipline {
    fn default() -> Self {
        Self::new()
    }
}
