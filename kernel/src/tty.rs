//! The console terminal: the serial port behind descriptors 0-2 of process 1, with a line
//! discipline (`lib/tty`, Linux N_TTY semantics), a session, a foreground process group and a
//! window size.
//!
//! **Input.** The UART raises no interrupt here: the boot core's timer tick (every 10 ms)
//! drains the receive FIFO into the line discipline ([`receive_input`]), whether or not anyone
//! reads, so Ctrl-C works while a program computes. Echo goes straight back to the serial port.
//! Every tick that received something bumps the input wait queue, which readers sleep
//! on: a read never polls.
//!
//! **Signals.** A signal character (VINTR, VQUIT, VSUSP under `ISIG`) is recorded with the
//! foreground group of that moment; the send itself happens outside the interrupt handler, on
//! the next return to user mode or pass of the idle loop on any core ([`send_signals`]),
//! because it looks the group up in the replicated process table. SIGTSTP (Ctrl-Z) stops the
//! foreground job by default (`proc::job`).
//!
//! **Job control.** The console's session is process 1's (set when init is spawned); a process
//! has the console as controlling terminal exactly when it is in that session (Reef keeps no
//! per-process controlling terminal, so `TIOCNOTTY` by a process that is not the session leader
//! has no effect). `TIOCSPGRP` moves the foreground group within the session. A *read* by a
//! process of the session that is not in the foreground group sends SIGTTIN to its group, which
//! by default stops it (`proc::job`), and runs again once it is continued (`fg`); if SIGTTIN
//! is ignored or blocked, or the group is orphaned (`proc::job`), the read fails with `EIO`,
//! as on Linux. *Writes* from the background
//! are allowed (Linux's behaviour without `TOSTOP`; `TOSTOP` is stored but not enforced), and
//! so are `TCSETS` and `TIOCSPGRP` from the background (Linux would raise SIGTTOU, which shells ignore anyway). Processes outside the
//! session (after `setsid`) read and write without checks, as on Linux.

use crate::proc::job::signal_group;
use crate::proc::signal;
use crate::proc::table::Life;
use crate::proc::wait::{WaitQueue, Wake};
use crate::proc::{self, sched, Pid, Thread};
use crate::sync::IrqMutex;
use crate::uaccess::{self, read_user, write_user};
use abi::Errno;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicBool, Ordering};
use tty::{LineDiscipline, ReadWait, Termios, TERMIOS_SIZE};

/// `ioctl` request `TCGETS`: reads the terminal settings (`struct termios`, `tcgetattr`).
const TCGETS: u64 = 0x5401;
/// `ioctl` request `TCSETS`: sets the terminal settings now (`tcsetattr` with `TCSANOW`).
const TCSETS: u64 = 0x5402;
/// `ioctl` request `TCSETSW`: sets the terminal settings once output has drained (`TCSADRAIN`).
const TCSETSW: u64 = 0x5403;
/// `ioctl` request `TCSETSF`: sets the terminal settings once output has drained and discards
/// pending input (`TCSAFLUSH`).
const TCSETSF: u64 = 0x5404;
/// `ioctl` request `TCSBRK`: `tcdrain`, or `tcsendbreak` with a zero argument.
const TCSBRK: u64 = 0x5409;
/// `ioctl` request `TCXONC` (`tcflow`): suspends or restarts output or input.
const TCXONC: u64 = 0x540a;
/// `ioctl` request `TCFLSH` (`tcflush`): discards pending input, output or both.
const TCFLSH: u64 = 0x540b;
/// `ioctl` request `TIOCSCTTY`: makes the terminal the controlling terminal of the caller's
/// session.
const TIOCSCTTY: u64 = 0x540e;
/// `ioctl` request `TIOCGPGRP` (`tcgetpgrp`): reads the foreground process group.
const TIOCGPGRP: u64 = 0x540f;
/// `ioctl` request `TIOCSPGRP` (`tcsetpgrp`): sets the foreground process group.
const TIOCSPGRP: u64 = 0x5410;
/// `ioctl` request `TIOCOUTQ`: reads the number of bytes in the output queue.
const TIOCOUTQ: u64 = 0x5411;
/// `ioctl` request `TIOCGWINSZ`: reads the window size (`struct winsize`).
const TIOCGWINSZ: u64 = 0x5413;
/// `ioctl` request `TIOCSWINSZ`: sets the window size.
const TIOCSWINSZ: u64 = 0x5414;
/// `ioctl` request `FIONREAD`: reads the number of input bytes waiting to be read.
const FIONREAD: u64 = 0x541b;
/// `ioctl` request `TIOCNOTTY`: gives up the controlling terminal.
const TIOCNOTTY: u64 = 0x5422;
/// `ioctl` request `TCSBRKP`: `tcsendbreak` with a duration argument.
const TCSBRKP: u64 = 0x5425;
/// `ioctl` request `TIOCGSID` (`tcgetsid`): reads the session of the terminal.
const TIOCGSID: u64 = 0x5429;

/// `TCFLSH` arguments.
const TCIFLUSH: u64 = 0;
/// `TCFLSH` argument: discards data written but not yet transmitted.
const TCOFLUSH: u64 = 1;
/// `TCFLSH` argument: discards both pending input and pending output.
const TCIOFLUSH: u64 = 2;
/// `TCXONC` arguments.
const TCOOFF: u64 = 0;
/// `TCXONC` argument: restarts suspended output.
const TCOON: u64 = 1;
/// `TCXONC` argument: sends a STOP character (`VSTOP`), asking the other end to stop sending
/// input.
const TCIOFF: u64 = 2;
/// `TCXONC` argument: sends a START character (`VSTART`), asking the other end to resume
/// sending input.
const TCION: u64 = 3;

/// Bytes of a write processed per hold of the terminal lock.
const WRITE_CHUNK: usize = 4096;
/// Most bytes taken from the UART per timer tick (its FIFO holds 16).
const INPUT_PER_TICK: usize = 64;

/// The console terminal's state.
struct Console {
    /// The line discipline: terminal settings, input queue and output processing.
    ld: LineDiscipline,
    /// The session whose controlling terminal this is.
    session: Option<Pid>,
    /// The foreground process group.
    foreground: Option<Pid>,
    /// `struct winsize`: rows, columns, x and y pixels.
    winsize: [u16; 4],
    /// Signals from signal characters not sent yet: (process group, signal).
    signals: Vec<(Pid, u32)>,
}

/// The console terminal; an [`IrqMutex`] because the timer interrupt feeds it.
static CONSOLE: IrqMutex<Console> = IrqMutex::new(Console {
    ld: LineDiscipline::new(),
    session: None,
    foreground: None,
    winsize: [24, 80, 0, 0],
    signals: Vec::new(),
});

/// Bumped on every input event (bytes received, settings changed, output restarted).
static INPUT: WaitQueue = WaitQueue::new();

/// `CONSOLE.signals` is not empty.
static SIGNALS_PENDING: AtomicBool = AtomicBool::new(false);

/// Makes the console the controlling terminal of process `pid`'s session, with its group in
/// the foreground (process 1, which leads session 1 and group 1, when it is spawned).
pub fn attach_init(pid: Pid) {
    let mut c = CONSOLE.lock();
    c.session = Some(pid);
    c.foreground = Some(pid);
}

/// Wakes readers and pollers ([`crate::fd::POLL_WAKE`]) after an input event.
fn input_event() {
    INPUT.notify_all();
    crate::fd::POLL_WAKE.notify(crate::proc::wait::PollKey::Console);
}

/// Whether input is ready for `read` (a complete line in canonical mode, or the `VMIN` rule in
/// non-canonical mode: Linux's `poll` rule).
pub fn readable() -> bool {
    CONSOLE.lock().ld.readable()
}

/// Drains the UART into the line discipline, echoes, records signals and wakes readers. Called
/// by the boot core's timer interrupt.
pub fn receive_input() {
    let mut bytes = [0u8; INPUT_PER_TICK];
    let mut n = 0;
    while n < bytes.len() {
        match crate::console::read_byte() {
            Some(b) => bytes[n] = b,
            None => break,
        }
        n += 1;
    }
    if n == 0 {
        return;
    }
    let mut echo = Vec::new();
    {
        let mut c = CONSOLE.lock();
        for &b in &bytes[..n] {
            if let Some(sig) = c.ld.receive(b, &mut echo) {
                if let Some(group) = c.foreground {
                    c.signals.push((group, sig.number()));
                    SIGNALS_PENDING.store(true, Ordering::Release);
                }
            }
        }
    }
    crate::console::write_raw(&echo);
    input_event();
}

/// Whether signal characters are waiting for [`send_signals`].
pub fn signals_pending() -> bool {
    SIGNALS_PENDING.load(Ordering::Acquire)
}

/// Sends the signals of signal characters received since the last call to their foreground
/// groups. Runs with interrupts enabled (it reads the replicated process table).
pub fn send_signals() {
    if !SIGNALS_PENDING.swap(false, Ordering::AcqRel) {
        return;
    }
    let pending = core::mem::take(&mut CONSOLE.lock().signals);
    for (group, sig) in pending {
        signal_group(group, sig);
    }
}

/// The caller's table entry if the console is its controlling terminal (it is in the
/// console's session), else `ENOTTY`.
fn controlling(me: &Thread) -> Result<proc::table::Entry, Errno> {
    let e = proc::lookup(me.process.pid).ok_or(Errno::ESRCH)?;
    if CONSOLE.lock().session == Some(e.sid) {
        Ok(e)
    } else {
        Err(Errno::ENOTTY)
    }
}

/// The process group of `me` if it belongs to the console's session but not to its
/// foreground group.
fn in_background(me: &Thread) -> Option<Pid> {
    let e = proc::lookup(me.process.pid)?;
    let c = CONSOLE.lock();
    (c.session == Some(e.sid) && c.foreground.is_some_and(|g| g != e.pgid)).then_some(e.pgid)
}

/// Reads from the console: in canonical mode one line (0 at end of file), in non-canonical
/// mode by the `VMIN`/`VTIME` rules. Blocks on the input wait queue unless `nonblock` (then
/// `EAGAIN` when a read would block); `EINTR` when a signal arrives before any data. A
/// background process's group gets SIGTTIN (by default it stops, and the read runs again once
/// it is continued), or the read fails with `EIO` if SIGTTIN is ignored or blocked (see the
/// module documentation).
pub fn read(buf: &mut [u8], nonblock: bool) -> Result<usize, Errno> {
    if buf.is_empty() {
        return Ok(0);
    }
    let me = sched::current_thread();
    if let Some(group) = in_background(&me) {
        // An orphaned group would never be continued: EIO, as on Linux (`proc::job`).
        if signal::ignores_or_blocks(&me.process, signal::SIGTTIN)
            || proc::job::group_orphaned(group)
        {
            return Err(Errno::EIO);
        }
        signal_group(group, signal::SIGTTIN);
        return Err(Errno::EINTR);
    }
    let mut got = 0;
    // When the read last copied data, or started: VTIME counts from there.
    let mut since = crate::time::now_ns();
    loop {
        let seq = INPUT.seq();
        let step = {
            let mut c = CONSOLE.lock();
            let before = got;
            let step = c.ld.read_attempt(buf, &mut got);
            if got > before {
                since = crate::time::now_ns();
            }
            step
        };
        let deadline = match step {
            ReadWait::Done => return Ok(got),
            _ if nonblock => return if got > 0 { Ok(got) } else { Err(Errno::EAGAIN) },
            ReadWait::Block => None,
            ReadWait::Timeout(ns) => Some(since + ns),
        };
        match INPUT.wait(seq, deadline) {
            Wake::Event => {}
            Wake::Timeout => return Ok(got),
            Wake::Interrupted if got > 0 => return Ok(got),
            Wake::Interrupted => return Err(Errno::EINTR),
        }
    }
}

/// Writes to the console through the output processing (`OPOST`, `ONLCR`, ...), waiting while
/// output is stopped (Ctrl-S under `IXON`); `EINTR` if a signal comes before anything was
/// written.
pub fn write(data: &[u8]) -> Result<usize, Errno> {
    let mut done = 0;
    let mut out = Vec::new();
    for chunk in data.chunks(WRITE_CHUNK) {
        loop {
            let seq = INPUT.seq();
            if !CONSOLE.lock().ld.output_stopped() {
                break;
            }
            if INPUT.wait(seq, None) == Wake::Interrupted {
                return if done > 0 {
                    Ok(done)
                } else {
                    Err(Errno::EINTR)
                };
            }
        }
        out.clear();
        CONSOLE.lock().ld.write(chunk, &mut out);
        crate::console::write_raw(&out);
        done += chunk.len();
        // The serial port is slow: let other threads run between chunks, and stop for a
        // killed writer.
        if let Some(me) = sched::current() {
            if !sched::keep_going(&me) {
                return Ok(done);
            }
        }
    }
    Ok(done)
}

/// Terminal `ioctl`s on the console: `TCGETS`, `TCSETS`/`TCSETSW` (output is never queued, so
/// no wait), `TCSETSF` (flushes input), `TIOCGWINSZ`, `TIOCSWINSZ` (SIGWINCH to the foreground
/// group on a change), `TIOCGPGRP`, `TIOCSPGRP`, `TIOCGSID`, `TIOCSCTTY`, `TIOCNOTTY`,
/// `FIONREAD`, `TIOCOUTQ` (always 0), `TCFLSH`, `TCXONC`, `TCSBRK`/`TCSBRKP` (`tcdrain`; no
/// break is sent). Anything else is `ENOTTY`.
pub fn ioctl(me: &Arc<Thread>, cmd: u64, arg: u64) -> Result<u64, Errno> {
    match cmd {
        TCGETS => {
            let t = CONSOLE.lock().ld.termios().to_bytes();
            uaccess::copy_to_user(arg, &t)?;
        }
        TCSETS | TCSETSW | TCSETSF => {
            let mut b = [0u8; TERMIOS_SIZE];
            uaccess::copy_from_user(arg, &mut b)?;
            {
                let mut c = CONSOLE.lock();
                if cmd == TCSETSF {
                    c.ld.flush_input();
                }
                c.ld.set_termios(Termios::from_bytes(&b));
            }
            // A mode switch can make input readable, or restart output.
            input_event();
        }
        TIOCGWINSZ => {
            let ws = CONSOLE.lock().winsize;
            write_user(arg, &ws)?;
        }
        TIOCSWINSZ => {
            let ws: [u16; 4] = read_user(arg)?;
            let notify = {
                let mut c = CONSOLE.lock();
                let changed = c.winsize != ws;
                c.winsize = ws;
                c.foreground.filter(|_| changed)
            };
            if let Some(group) = notify {
                signal_group(group, signal::SIGWINCH);
            }
        }
        TIOCGPGRP => {
            controlling(me)?;
            let group = CONSOLE.lock().foreground.unwrap_or(0);
            write_user(arg, &(group as i32))?;
        }
        TIOCSPGRP => {
            let caller = controlling(me)?;
            let group: i32 = read_user(arg)?;
            if group < 0 {
                return Err(Errno::EINVAL);
            }
            let group = group as Pid;
            let member = crate::syscall::process::members(Some(group))
                .first()
                .and_then(|&pid| proc::lookup(pid))
                .ok_or(Errno::ESRCH)?;
            if member.sid != caller.sid {
                return Err(Errno::EPERM);
            }
            CONSOLE.lock().foreground = Some(group);
        }
        TIOCGSID => {
            controlling(me)?;
            let session = CONSOLE.lock().session.ok_or(Errno::ENOTTY)?;
            write_user(arg, &(session as i32))?;
        }
        TIOCSCTTY => set_controlling(me, arg)?,
        TIOCNOTTY => {
            let caller = controlling(me)?;
            if caller.sid == me.process.pid {
                let group = {
                    let mut c = CONSOLE.lock();
                    c.session = None;
                    c.foreground.take()
                };
                if let Some(group) = group {
                    signal_group(group, signal::SIGHUP);
                    signal_group(group, signal::SIGCONT);
                }
            }
        }
        FIONREAD => {
            let n = CONSOLE.lock().ld.input_len();
            write_user(arg, &(n as i32))?;
        }
        TIOCOUTQ => write_user(arg, &0i32)?,
        TCFLSH => match arg {
            TCIFLUSH | TCIOFLUSH => CONSOLE.lock().ld.flush_input(),
            TCOFLUSH => {}
            _ => return Err(Errno::EINVAL),
        },
        TCXONC => match arg {
            TCOOFF | TCOON => {
                CONSOLE.lock().ld.set_output_stopped(arg == TCOOFF);
                input_event();
            }
            TCIOFF | TCION => {
                let index = if arg == TCIOFF {
                    tty::cc::VSTOP
                } else {
                    tty::cc::VSTART
                };
                if let Some(c) = CONSOLE.lock().ld.termios().special(index) {
                    crate::console::write_raw(&[c]);
                }
            }
            _ => return Err(Errno::EINVAL),
        },
        TCSBRK | TCSBRKP => {}
        _ => return Err(Errno::ENOTTY),
    }
    Ok(0)
}

/// `TIOCSCTTY`: a session leader takes the console as its controlling terminal. It is `EPERM`
/// for a process that does not lead its session, and while another session that is still
/// alive (its leader lives) has the console, unless `steal` is 1 (every Reef process is root).
fn set_controlling(me: &Thread, steal: u64) -> Result<(), Errno> {
    let caller = proc::lookup(me.process.pid).ok_or(Errno::ESRCH)?;
    if caller.sid != me.process.pid {
        return Err(Errno::EPERM);
    }
    let owner = CONSOLE.lock().session;
    if owner == Some(caller.sid) {
        return Ok(());
    }
    let owner_alive =
        owner.is_some_and(|s| proc::lookup(s).is_some_and(|e| e.life == Life::Alive && e.sid == s));
    if owner_alive && steal != 1 {
        return Err(Errno::EPERM);
    }
    let mut c = CONSOLE.lock();
    c.session = Some(caller.sid);
    c.foreground = Some(caller.pgid);
    Ok(())
}
