//! `struct termios` as the Linux x86-64 kernel passes it to `TCGETS`/`TCSETS` (36 bytes: four
//! flag words, the line discipline number and 19 control characters), its flag bits, and the
//! defaults a fresh Linux terminal has.

/// Number of control characters in the kernel's `struct termios`.
pub const NCCS: usize = 19;

/// Size of the kernel's `struct termios` in bytes.
pub const TERMIOS_SIZE: usize = 36;

/// Input flags (`c_iflag`).
pub mod iflag {
    /// Ignore a break condition.
    pub const IGNBRK: u32 = 0o1;
    /// A break raises SIGINT.
    pub const BRKINT: u32 = 0o2;
    /// Ignore bytes with parity errors.
    pub const IGNPAR: u32 = 0o4;
    /// Mark parity errors.
    pub const PARMRK: u32 = 0o10;
    /// Check input parity.
    pub const INPCK: u32 = 0o20;
    /// Strip the eighth bit of every input byte.
    pub const ISTRIP: u32 = 0o40;
    /// Translate NL to CR on input.
    pub const INLCR: u32 = 0o100;
    /// Ignore CR on input.
    pub const IGNCR: u32 = 0o200;
    /// Translate CR to NL on input.
    pub const ICRNL: u32 = 0o400;
    /// Map upper case to lower case on input (with `IEXTEN`).
    pub const IUCLC: u32 = 0o1000;
    /// XON/XOFF flow control of output: VSTOP stops output, VSTART restarts it.
    pub const IXON: u32 = 0o2000;
    /// Any input byte restarts stopped output.
    pub const IXANY: u32 = 0o4000;
    /// XON/XOFF flow control of input (accepted, no effect: the input queue never asks the
    /// sender to pause).
    pub const IXOFF: u32 = 0o10000;
    /// Ring the bell (echo BEL) when a canonical line is full.
    pub const IMAXBEL: u32 = 0o20000;
    /// Input is UTF-8: erasing removes a whole character.
    pub const IUTF8: u32 = 0o40000;
}

/// Output flags (`c_oflag`).
pub mod oflag {
    /// Process output (everything below needs it).
    pub const OPOST: u32 = 0o1;
    /// Map lower case to upper case on output.
    pub const OLCUC: u32 = 0o2;
    /// Map NL to CR NL on output.
    pub const ONLCR: u32 = 0o4;
    /// Map CR to NL on output.
    pub const OCRNL: u32 = 0o10;
    /// Output no CR at column 0.
    pub const ONOCR: u32 = 0o20;
    /// NL also returns the carriage (column 0).
    pub const ONLRET: u32 = 0o40;
    /// Horizontal tab delay mask.
    pub const TABDLY: u32 = 0o14000;
    /// `TABDLY` value that expands tabs to spaces.
    pub const XTABS: u32 = 0o14000;
}

/// Control flags (`c_cflag`); the serial line's settings are reported, not applied.
pub mod cflag {
    /// Baud rate mask.
    pub const CBAUD: u32 = 0o10017;
    /// 38400 baud.
    pub const B38400: u32 = 0o17;
    /// Character size mask.
    pub const CSIZE: u32 = 0o60;
    /// Eight data bits.
    pub const CS8: u32 = 0o60;
    /// Two stop bits.
    pub const CSTOPB: u32 = 0o100;
    /// The receiver is on; without it input is dropped.
    pub const CREAD: u32 = 0o200;
    /// Parity on.
    pub const PARENB: u32 = 0o400;
    /// Hang up when the last process closes the terminal.
    pub const HUPCL: u32 = 0o2000;
    /// Ignore modem control lines.
    pub const CLOCAL: u32 = 0o4000;
}

/// Local flags (`c_lflag`).
pub mod lflag {
    /// VINTR, VQUIT and VSUSP send signals.
    pub const ISIG: u32 = 0o1;
    /// Canonical mode: input is edited and read a line at a time.
    pub const ICANON: u32 = 0o2;
    /// Echo input.
    pub const ECHO: u32 = 0o10;
    /// VERASE and VWERASE erase the character visually ("\b \b").
    pub const ECHOE: u32 = 0o20;
    /// VKILL echoes a newline (without `ECHOKE`).
    pub const ECHOK: u32 = 0o40;
    /// Echo NL in canonical mode even without `ECHO`.
    pub const ECHONL: u32 = 0o100;
    /// Do not flush the input queue when a signal character arrives.
    pub const NOFLSH: u32 = 0o200;
    /// Background processes may not write (see the kernel's terminal for what Reef does).
    pub const TOSTOP: u32 = 0o400;
    /// Echo control characters as `^X`.
    pub const ECHOCTL: u32 = 0o1000;
    /// VKILL erases the line visually, character by character.
    pub const ECHOKE: u32 = 0o4000;
    /// Extended input processing: VWERASE, VREPRINT, VLNEXT, VEOL2, `IUCLC`.
    pub const IEXTEN: u32 = 0o100000;
}

/// Indices into `c_cc`. A control character whose value is 0 (`_POSIX_VDISABLE`) is disabled.
pub mod cc {
    /// Interrupt (SIGINT).
    pub const VINTR: usize = 0;
    /// Quit (SIGQUIT).
    pub const VQUIT: usize = 1;
    /// Erase the last character.
    pub const VERASE: usize = 2;
    /// Erase the line.
    pub const VKILL: usize = 3;
    /// End of file: ends the line without a terminator; on an empty line `read` returns 0.
    pub const VEOF: usize = 4;
    /// Non-canonical read timeout in tenths of a second.
    pub const VTIME: usize = 5;
    /// Non-canonical read minimum byte count.
    pub const VMIN: usize = 6;
    /// Switch character (unused on Linux).
    pub const VSWTC: usize = 7;
    /// Restart output (`IXON`).
    pub const VSTART: usize = 8;
    /// Stop output (`IXON`).
    pub const VSTOP: usize = 9;
    /// Suspend (SIGTSTP).
    pub const VSUSP: usize = 10;
    /// Additional end of line.
    pub const VEOL: usize = 11;
    /// Reprint the line being edited.
    pub const VREPRINT: usize = 12;
    /// Discard output (accepted, no effect).
    pub const VDISCARD: usize = 13;
    /// Erase the last word.
    pub const VWERASE: usize = 14;
    /// Take the next character literally.
    pub const VLNEXT: usize = 15;
    /// Second additional end of line (`IEXTEN`).
    pub const VEOL2: usize = 16;
}

/// The kernel's `struct termios`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Termios {
    /// Input flags ([`iflag`]).
    pub c_iflag: u32,
    /// Output flags ([`oflag`]).
    pub c_oflag: u32,
    /// Control flags ([`cflag`]).
    pub c_cflag: u32,
    /// Local flags ([`lflag`]).
    pub c_lflag: u32,
    /// Line discipline number (0: N_TTY).
    pub c_line: u8,
    /// Control characters, indexed by [`cc`].
    pub c_cc: [u8; NCCS],
}

impl Termios {
    /// What a fresh Linux terminal has (`stty -a`): `icrnl ixon`, `opost onlcr`,
    /// `cs8 cread hupcl` at 38400 baud, `isig icanon echo echoe echok echoctl echoke iexten`,
    /// and intr `^C`, quit `^\`, erase `^?`, kill `^U`, eof `^D`, start `^Q`, stop `^S`,
    /// susp `^Z`, rprnt `^R`, werase `^W`, lnext `^V`, discard `^O`, min 1, time 0.
    pub const fn linux_default() -> Termios {
        let mut c_cc = [0u8; NCCS];
        c_cc[cc::VINTR] = 0x03;
        c_cc[cc::VQUIT] = 0x1c;
        c_cc[cc::VERASE] = 0x7f;
        c_cc[cc::VKILL] = 0x15;
        c_cc[cc::VEOF] = 0x04;
        c_cc[cc::VTIME] = 0;
        c_cc[cc::VMIN] = 1;
        c_cc[cc::VSTART] = 0x11;
        c_cc[cc::VSTOP] = 0x13;
        c_cc[cc::VSUSP] = 0x1a;
        c_cc[cc::VREPRINT] = 0x12;
        c_cc[cc::VDISCARD] = 0x0f;
        c_cc[cc::VWERASE] = 0x17;
        c_cc[cc::VLNEXT] = 0x16;
        Termios {
            c_iflag: iflag::ICRNL | iflag::IXON,
            c_oflag: oflag::OPOST | oflag::ONLCR,
            c_cflag: cflag::B38400 | cflag::CS8 | cflag::CREAD | cflag::HUPCL,
            c_lflag: lflag::ISIG
                | lflag::ICANON
                | lflag::ECHO
                | lflag::ECHOE
                | lflag::ECHOK
                | lflag::ECHOCTL
                | lflag::ECHOKE
                | lflag::IEXTEN,
            c_line: 0,
            c_cc,
        }
    }

    /// The structure as the kernel lays it out (little-endian flag words).
    pub fn to_bytes(&self) -> [u8; TERMIOS_SIZE] {
        let mut b = [0u8; TERMIOS_SIZE];
        b[0..4].copy_from_slice(&self.c_iflag.to_le_bytes());
        b[4..8].copy_from_slice(&self.c_oflag.to_le_bytes());
        b[8..12].copy_from_slice(&self.c_cflag.to_le_bytes());
        b[12..16].copy_from_slice(&self.c_lflag.to_le_bytes());
        b[16] = self.c_line;
        b[17..].copy_from_slice(&self.c_cc);
        b
    }

    /// Reads the kernel layout (the inverse of [`Termios::to_bytes`]).
    pub fn from_bytes(b: &[u8; TERMIOS_SIZE]) -> Termios {
        let word = |i: usize| u32::from_le_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]);
        let mut c_cc = [0u8; NCCS];
        c_cc.copy_from_slice(&b[17..]);
        Termios {
            c_iflag: word(0),
            c_oflag: word(4),
            c_cflag: word(8),
            c_lflag: word(12),
            c_line: b[16],
            c_cc,
        }
    }

    /// Control character `index` ([`cc`]), or `None` when it is disabled (0).
    pub fn special(&self, index: usize) -> Option<u8> {
        Some(self.c_cc[index]).filter(|&c| c != 0)
    }

    /// Whether `c` is the enabled control character `index`.
    pub fn is(&self, index: usize, c: u8) -> bool {
        self.special(index) == Some(c)
    }

    /// Whether every bit of `flags` is set in `c_iflag`.
    pub fn i(&self, flags: u32) -> bool {
        self.c_iflag & flags == flags
    }

    /// Whether every bit of `flags` is set in `c_oflag`.
    pub fn o(&self, flags: u32) -> bool {
        self.c_oflag & flags == flags
    }

    /// Whether every bit of `flags` is set in `c_lflag`.
    pub fn l(&self, flags: u32) -> bool {
        self.c_lflag & flags == flags
    }
}

impl Default for Termios {
    fn default() -> Self {
        Termios::linux_default()
    }
}
