//! Behaviour of the line discipline, one property per test.

use tty::{cc, cflag, iflag, lflag, oflag, LineDiscipline, ReadWait, Signal, Termios};

/// Feeds `input` byte by byte; returns the echo and the signals raised.
fn feed(ld: &mut LineDiscipline, input: &[u8]) -> (Vec<u8>, Vec<Signal>) {
    let mut echo = Vec::new();
    let mut signals = Vec::new();
    for &b in input {
        if let Some(s) = ld.receive(b, &mut echo) {
            signals.push(s);
        }
    }
    (echo, signals)
}

/// One read with a buffer of `len` bytes.
fn read(ld: &mut LineDiscipline, len: usize) -> Vec<u8> {
    let mut buf = vec![0u8; len];
    let n = ld.read(&mut buf);
    buf.truncate(n);
    buf
}

fn with(ld: &mut LineDiscipline, change: impl FnOnce(&mut Termios)) {
    let mut t = *ld.termios();
    change(&mut t);
    ld.set_termios(t);
}

fn raw() -> LineDiscipline {
    let mut ld = LineDiscipline::new();
    with(&mut ld, |t| t.c_lflag &= !(lflag::ICANON | lflag::ECHO));
    ld
}

#[test]
fn defaults_are_linux_stty_sane() {
    let t = Termios::default();
    assert_eq!(t.c_iflag, iflag::ICRNL | iflag::IXON);
    assert_eq!(t.c_iflag, 0o2400);
    assert_eq!(t.c_oflag, 0o5);
    assert_eq!(
        t.c_cflag,
        cflag::B38400 | cflag::CS8 | cflag::CREAD | cflag::HUPCL
    );
    assert_eq!(t.c_cflag, 0x4bf);
    assert_eq!(t.c_lflag, 0x8a3b);
    assert_eq!(t.c_line, 0);
    assert_eq!(
        &t.c_cc[..17],
        b"\x03\x1c\x7f\x15\x04\x00\x01\x00\x11\x13\x1a\x00\x12\x0f\x17\x16\x00"
    );
    assert_eq!(t.c_cc[cc::VMIN], 1);
    assert_eq!(t.c_cc[cc::VTIME], 0);
}

#[test]
fn termios_bytes_have_the_kernel_layout() {
    let mut t = Termios {
        c_lflag: 0x1234_5678,
        c_line: 9,
        ..Termios::default()
    };
    t.c_cc[cc::VMIN] = 42;
    let b = t.to_bytes();
    assert_eq!(b.len(), 36);
    assert_eq!(&b[0..4], &0o2400u32.to_le_bytes());
    assert_eq!(&b[12..16], &0x1234_5678u32.to_le_bytes());
    assert_eq!(b[16], 9);
    assert_eq!(b[17 + cc::VMIN], 42);
    assert_eq!(b[17], 0x03);
    assert_eq!(Termios::from_bytes(&b), t);
}

#[test]
fn canonical_line_is_readable_only_when_complete() {
    let mut ld = LineDiscipline::new();
    let (echo, signals) = feed(&mut ld, b"hello");
    assert_eq!(echo, b"hello");
    assert!(signals.is_empty());
    assert!(!ld.readable());
    assert_eq!(ld.input_len(), 0);
    assert_eq!(read(&mut ld, 64), b"");
    let (echo, _) = feed(&mut ld, b"\r");
    assert_eq!(
        echo, b"\r\n",
        "CR becomes NL (ICRNL), echoed as CR NL (ONLCR)"
    );
    assert!(ld.readable());
    assert_eq!(ld.input_len(), 6);
    assert_eq!(read(&mut ld, 64), b"hello\n");
    assert!(!ld.readable());
}

#[test]
fn canonical_read_returns_one_line_at_a_time() {
    let mut ld = LineDiscipline::new();
    feed(&mut ld, b"one\ntwo\nthr");
    assert_eq!(ld.input_len(), 8);
    assert_eq!(read(&mut ld, 64), b"one\n");
    assert_eq!(read(&mut ld, 64), b"two\n");
    assert!(!ld.readable());
    assert_eq!(read(&mut ld, 64), b"");
}

#[test]
fn long_line_continues_in_the_next_read() {
    let mut ld = LineDiscipline::new();
    feed(&mut ld, b"abcdef\n");
    assert_eq!(read(&mut ld, 4), b"abcd");
    assert!(ld.readable());
    assert_eq!(read(&mut ld, 4), b"ef\n");
    assert!(!ld.readable());
}

#[test]
fn erase_removes_the_last_character_and_echoes_rubout() {
    let mut ld = LineDiscipline::new();
    let (echo, _) = feed(&mut ld, b"abX\x7fc\n");
    assert_eq!(echo, b"abX\x08 \x08c\r\n");
    assert_eq!(read(&mut ld, 64), b"abc\n");
}

#[test]
fn erase_on_an_empty_line_does_nothing() {
    let mut ld = LineDiscipline::new();
    feed(&mut ld, b"ok\n");
    let (echo, _) = feed(&mut ld, b"\x7f\x7f");
    assert_eq!(echo, b"");
    assert_eq!(
        read(&mut ld, 64),
        b"ok\n",
        "a complete line is never erased"
    );
}

#[test]
fn erase_without_echoe_echoes_the_erase_character() {
    let mut ld = LineDiscipline::new();
    with(&mut ld, |t| t.c_lflag &= !lflag::ECHOE);
    let (echo, _) = feed(&mut ld, b"ab\x7f\n");
    assert_eq!(echo, b"ab^?\r\n");
    assert_eq!(read(&mut ld, 64), b"a\n");
}

#[test]
fn erasing_a_control_echo_removes_two_columns() {
    let mut ld = LineDiscipline::new();
    let (echo, _) = feed(&mut ld, b"a\x01\x7f");
    assert_eq!(echo, b"a^A\x08 \x08\x08 \x08");
}

#[test]
fn erasing_a_tab_backs_up_to_where_it_started() {
    let mut ld = LineDiscipline::new();
    let (echo, _) = feed(&mut ld, b"ab\t\x7f");
    assert_eq!(echo, b"ab\t\x08\x08\x08\x08\x08\x08");
    feed(&mut ld, b"c\n");
    assert_eq!(read(&mut ld, 64), b"abc\n");
}

#[test]
fn erase_removes_a_whole_utf8_character_with_iutf8() {
    let mut ld = LineDiscipline::new();
    with(&mut ld, |t| t.c_iflag |= iflag::IUTF8);
    let (echo, _) = feed(&mut ld, "aé\x7f\n".as_bytes());
    assert_eq!(echo, "aé\x08 \x08\r\n".as_bytes());
    assert_eq!(read(&mut ld, 64), b"a\n");
}

#[test]
fn kill_erases_the_line_visually_with_echoke() {
    let mut ld = LineDiscipline::new();
    let (echo, _) = feed(&mut ld, b"abc\x15d\n");
    assert_eq!(echo, b"abc\x08 \x08\x08 \x08\x08 \x08d\r\n");
    assert_eq!(read(&mut ld, 64), b"d\n");
}

#[test]
fn kill_without_echoke_echoes_the_kill_character_and_a_newline() {
    let mut ld = LineDiscipline::new();
    with(&mut ld, |t| t.c_lflag &= !lflag::ECHOKE);
    let (echo, _) = feed(&mut ld, b"abc\x15");
    assert_eq!(echo, b"abc^U\r\n");
    feed(&mut ld, b"x\n");
    assert_eq!(read(&mut ld, 64), b"x\n");
}

#[test]
fn word_erase_removes_trailing_blanks_and_the_word() {
    let mut ld = LineDiscipline::new();
    feed(&mut ld, b"foo bar  \x17baz\n");
    assert_eq!(read(&mut ld, 64), b"foo baz\n");
    feed(&mut ld, b"foo/bar\x17x\n");
    assert_eq!(read(&mut ld, 64), b"foo/x\n");
}

#[test]
fn word_erase_needs_iexten() {
    let mut ld = LineDiscipline::new();
    with(&mut ld, |t| t.c_lflag &= !lflag::IEXTEN);
    feed(&mut ld, b"ab\x17\n");
    assert_eq!(read(&mut ld, 64), b"ab\x17\n");
}

#[test]
fn eof_on_an_empty_line_reads_as_zero() {
    let mut ld = LineDiscipline::new();
    let (echo, _) = feed(&mut ld, b"\x04");
    assert_eq!(echo, b"", "VEOF is not echoed");
    assert!(ld.readable());
    assert_eq!(ld.input_len(), 0);
    let mut buf = [0u8; 8];
    let mut got = 0;
    assert_eq!(ld.read_attempt(&mut buf, &mut got), ReadWait::Done);
    assert_eq!(got, 0, "end of file");
    assert!(!ld.readable());
    assert_eq!(ld.read_attempt(&mut buf, &mut got), ReadWait::Block);
}

#[test]
fn eof_after_text_ends_the_line_without_a_terminator() {
    let mut ld = LineDiscipline::new();
    feed(&mut ld, b"abc\x04");
    assert!(ld.readable());
    assert_eq!(read(&mut ld, 64), b"abc");
    assert!(!ld.readable(), "the VEOF pushed the line and is gone");
}

#[test]
fn veol_ends_a_line_and_is_part_of_it() {
    let mut ld = LineDiscipline::new();
    with(&mut ld, |t| t.c_cc[cc::VEOL] = b';');
    feed(&mut ld, b"ab;cd");
    assert_eq!(read(&mut ld, 64), b"ab;");
    assert!(!ld.readable());
}

#[test]
fn disabled_control_characters_are_data() {
    let mut ld = LineDiscipline::new();
    with(&mut ld, |t| t.c_cc[cc::VERASE] = 0);
    feed(&mut ld, b"a\x00\x7f\n");
    assert_eq!(read(&mut ld, 64), b"a\x00\x7f\n");
}

#[test]
fn signal_characters_raise_signals_flush_and_echo() {
    let mut ld = LineDiscipline::new();
    feed(&mut ld, b"done\n");
    let (echo, signals) = feed(&mut ld, b"abc\x03");
    assert_eq!(echo, b"abc^C");
    assert_eq!(signals, [Signal::Interrupt]);
    assert!(!ld.readable(), "the input queue was flushed");
    assert_eq!(ld.input_len(), 0);
    let (_, signals) = feed(&mut ld, b"\x1c\x1a");
    assert_eq!(signals, [Signal::Quit, Signal::Suspend]);
    assert_eq!(Signal::Interrupt.number(), 2);
    assert_eq!(Signal::Quit.number(), 3);
    assert_eq!(Signal::Suspend.number(), 20);
}

#[test]
fn noflsh_keeps_input_on_a_signal() {
    let mut ld = LineDiscipline::new();
    with(&mut ld, |t| t.c_lflag |= lflag::NOFLSH);
    let (_, signals) = feed(&mut ld, b"ab\n\x03");
    assert_eq!(signals, [Signal::Interrupt]);
    assert_eq!(read(&mut ld, 64), b"ab\n");
}

#[test]
fn without_isig_signal_characters_are_data() {
    let mut ld = raw();
    with(&mut ld, |t| t.c_lflag &= !lflag::ISIG);
    let (_, signals) = feed(&mut ld, b"\x03\x1a");
    assert!(signals.is_empty());
    assert_eq!(read(&mut ld, 64), b"\x03\x1a");
}

#[test]
fn echoctl_controls_how_control_characters_echo() {
    let mut ld = LineDiscipline::new();
    with(&mut ld, |t| t.c_lflag &= !lflag::ICANON);
    let (echo, _) = feed(&mut ld, b"a\x01\x7f\t");
    assert_eq!(echo, b"a^A^?\t");
    with(&mut ld, |t| t.c_lflag &= !lflag::ECHOCTL);
    let (echo, _) = feed(&mut ld, b"\x01");
    assert_eq!(echo, b"\x01");
}

#[test]
fn echo_off_is_silent_but_echonl_echoes_newlines() {
    let mut ld = LineDiscipline::new();
    with(&mut ld, |t| t.c_lflag &= !lflag::ECHO);
    let (echo, _) = feed(&mut ld, b"secret\n");
    assert_eq!(echo, b"");
    assert_eq!(read(&mut ld, 64), b"secret\n");
    with(&mut ld, |t| t.c_lflag |= lflag::ECHONL);
    let (echo, _) = feed(&mut ld, b"pw\n");
    assert_eq!(echo, b"\r\n");
}

#[test]
fn cr_and_nl_translation() {
    let mut ld = raw();
    feed(&mut ld, b"\r");
    assert_eq!(read(&mut ld, 8), b"\n", "ICRNL");
    with(&mut ld, |t| t.c_iflag &= !iflag::ICRNL);
    feed(&mut ld, b"\r");
    assert_eq!(read(&mut ld, 8), b"\r");
    with(&mut ld, |t| t.c_iflag |= iflag::IGNCR);
    feed(&mut ld, b"a\rb");
    assert_eq!(read(&mut ld, 8), b"ab");
    with(&mut ld, |t| t.c_iflag |= iflag::INLCR);
    feed(&mut ld, b"\n");
    assert_eq!(read(&mut ld, 8), b"\r");
}

#[test]
fn istrip_and_iuclc() {
    let mut ld = raw();
    with(&mut ld, |t| t.c_iflag |= iflag::ISTRIP | iflag::IUCLC);
    with(&mut ld, |t| t.c_lflag |= lflag::IEXTEN);
    feed(&mut ld, &[0xc1, b'B']);
    assert_eq!(read(&mut ld, 8), b"ab");
}

#[test]
fn noncanonical_input_is_available_at_once() {
    let mut ld = raw();
    feed(&mut ld, b"x");
    assert!(ld.readable());
    assert_eq!(ld.input_len(), 1);
    assert_eq!(read(&mut ld, 8), b"x");
    feed(&mut ld, b"\x7f\x15\x04");
    assert_eq!(read(&mut ld, 8), b"\x7f\x15\x04", "no editing characters");
}

#[test]
fn vmin_1_vtime_0_blocks_until_a_byte() {
    let mut ld = raw();
    let mut buf = [0u8; 8];
    let mut got = 0;
    assert_eq!(ld.read_attempt(&mut buf, &mut got), ReadWait::Block);
    feed(&mut ld, b"ab");
    assert_eq!(ld.read_attempt(&mut buf, &mut got), ReadWait::Done);
    assert_eq!(&buf[..got], b"ab");
}

#[test]
fn vmin_0_vtime_0_is_a_poll() {
    let mut ld = raw();
    with(&mut ld, |t| t.c_cc[cc::VMIN] = 0);
    let mut buf = [0u8; 8];
    let mut got = 0;
    assert_eq!(ld.read_attempt(&mut buf, &mut got), ReadWait::Done);
    assert_eq!(got, 0);
}

#[test]
fn vmin_0_vtime_gives_a_read_timeout() {
    let mut ld = raw();
    with(&mut ld, |t| {
        t.c_cc[cc::VMIN] = 0;
        t.c_cc[cc::VTIME] = 5;
    });
    let mut buf = [0u8; 8];
    let mut got = 0;
    assert_eq!(
        ld.read_attempt(&mut buf, &mut got),
        ReadWait::Timeout(500_000_000)
    );
    feed(&mut ld, b"z");
    assert_eq!(ld.read_attempt(&mut buf, &mut got), ReadWait::Done);
    assert_eq!(&buf[..got], b"z");
}

#[test]
fn vmin_and_vtime_give_an_interbyte_timeout() {
    let mut ld = raw();
    with(&mut ld, |t| {
        t.c_cc[cc::VMIN] = 3;
        t.c_cc[cc::VTIME] = 2;
    });
    let mut buf = [0u8; 8];
    let mut got = 0;
    assert_eq!(
        ld.read_attempt(&mut buf, &mut got),
        ReadWait::Block,
        "no timer before the first byte"
    );
    feed(&mut ld, b"a");
    assert_eq!(
        ld.read_attempt(&mut buf, &mut got),
        ReadWait::Timeout(200_000_000)
    );
    assert_eq!(got, 1);
    feed(&mut ld, b"bc");
    assert_eq!(ld.read_attempt(&mut buf, &mut got), ReadWait::Done);
    assert_eq!(&buf[..got], b"abc");
}

#[test]
fn vmin_waits_for_that_many_bytes_but_not_more_than_the_buffer() {
    let mut ld = raw();
    with(&mut ld, |t| t.c_cc[cc::VMIN] = 3);
    feed(&mut ld, b"ab");
    assert!(!ld.readable(), "poll waits for VMIN bytes when VTIME is 0");
    let mut buf = [0u8; 8];
    let mut got = 0;
    assert_eq!(ld.read_attempt(&mut buf, &mut got), ReadWait::Block);
    assert_eq!(got, 2);
    feed(&mut ld, b"c");
    assert_eq!(ld.read_attempt(&mut buf, &mut got), ReadWait::Done);
    assert_eq!(&buf[..got], b"abc");
    feed(&mut ld, b"d");
    let mut small = [0u8; 1];
    let mut got = 0;
    assert_eq!(ld.read_attempt(&mut small, &mut got), ReadWait::Done);
    assert_eq!(small, *b"d");
}

#[test]
fn canonical_line_length_is_bounded() {
    let mut ld = LineDiscipline::new();
    with(&mut ld, |t| t.c_lflag &= !lflag::ECHO);
    let (echo, _) = feed(&mut ld, &[b'a'; 5000]);
    assert_eq!(
        echo,
        vec![0x07; 5000 - 4095],
        "a dropped byte rings the bell"
    );
    feed(&mut ld, b"\n");
    let line = read(&mut ld, 8192);
    assert_eq!(line.len(), 4096);
    assert!(line[..4095].iter().all(|&b| b == b'a'));
    assert_eq!(line[4095], b'\n');
}

#[test]
fn noncanonical_queue_is_bounded() {
    let mut ld = raw();
    feed(&mut ld, &[b'x'; 5000]);
    assert_eq!(ld.input_len(), tty::INPUT_CAPACITY);
    assert_eq!(read(&mut ld, 8192).len(), 4096);
}

#[test]
fn switching_to_noncanonical_makes_the_partial_line_readable() {
    let mut ld = LineDiscipline::new();
    feed(&mut ld, b"abc");
    assert!(!ld.readable());
    with(&mut ld, |t| t.c_lflag &= !lflag::ICANON);
    assert!(ld.readable());
    assert_eq!(read(&mut ld, 64), b"abc");
}

#[test]
fn switching_to_canonical_pushes_queued_raw_input() {
    let mut ld = raw();
    feed(&mut ld, b"xy");
    with(&mut ld, |t| t.c_lflag |= lflag::ICANON);
    assert!(ld.readable());
    assert_eq!(read(&mut ld, 64), b"xy");
    feed(&mut ld, b"z");
    assert!(!ld.readable());
}

#[test]
fn input_len_counts_complete_lines_in_canonical_mode() {
    let mut ld = LineDiscipline::new();
    feed(&mut ld, b"ab\ncd\x04ef");
    assert_eq!(ld.input_len(), 5, "'ab\\n' and 'cd', not the VEOF or 'ef'");
    ld.flush_input();
    assert_eq!(ld.input_len(), 0);
    assert!(!ld.readable());
}

#[test]
fn lnext_takes_the_next_character_literally() {
    let mut ld = LineDiscipline::new();
    let (echo, signals) = feed(&mut ld, b"\x16\x03\x16\x7f\n");
    assert!(signals.is_empty());
    assert_eq!(echo, b"^\x08^C^\x08^?\r\n");
    assert_eq!(read(&mut ld, 64), b"\x03\x7f\n");
}

#[test]
fn reprint_echoes_the_line_again() {
    let mut ld = LineDiscipline::new();
    let (echo, _) = feed(&mut ld, b"ab\x12");
    assert_eq!(echo, b"ab^R\r\nab");
    feed(&mut ld, b"\n");
    assert_eq!(read(&mut ld, 64), b"ab\n");
}

#[test]
fn ixon_stops_and_restarts_output() {
    let mut ld = LineDiscipline::new();
    feed(&mut ld, b"\x13");
    assert!(ld.output_stopped());
    feed(&mut ld, b"a");
    assert!(ld.output_stopped(), "only VSTART restarts without IXANY");
    feed(&mut ld, b"\x11");
    assert!(!ld.output_stopped());
    feed(&mut ld, b"\n");
    assert_eq!(read(&mut ld, 64), b"a\n", "VSTOP and VSTART are not input");
    with(&mut ld, |t| t.c_iflag |= iflag::IXANY);
    feed(&mut ld, b"\x13b");
    assert!(!ld.output_stopped());
    feed(&mut ld, b"\x13");
    with(&mut ld, |t| t.c_iflag &= !iflag::IXON);
    assert!(!ld.output_stopped(), "turning IXON off restarts output");
    ld.set_output_stopped(true);
    assert!(ld.output_stopped());
}

#[test]
fn cread_off_drops_input() {
    let mut ld = raw();
    with(&mut ld, |t| t.c_cflag &= !cflag::CREAD);
    feed(&mut ld, b"abc");
    assert!(!ld.readable());
    assert_eq!(ld.input_len(), 0);
}

fn output(ld: &mut LineDiscipline, data: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    ld.write(data, &mut out);
    out
}

#[test]
fn onlcr_turns_newline_into_cr_nl() {
    let mut ld = LineDiscipline::new();
    assert_eq!(output(&mut ld, b"a\nb\n"), b"a\r\nb\r\n");
    with(&mut ld, |t| t.c_oflag &= !oflag::ONLCR);
    assert_eq!(output(&mut ld, b"a\n"), b"a\n");
    with(&mut ld, |t| t.c_oflag = oflag::ONLCR);
    assert_eq!(output(&mut ld, b"a\n"), b"a\n", "nothing without OPOST");
}

#[test]
fn ocrnl_onocr_olcuc_and_xtabs() {
    let mut ld = LineDiscipline::new();
    with(&mut ld, |t| t.c_oflag = oflag::OPOST | oflag::OCRNL);
    assert_eq!(output(&mut ld, b"a\r"), b"a\n");
    with(&mut ld, |t| t.c_oflag = oflag::OPOST | oflag::ONOCR);
    // The column is 1 after "a\r" under OCRNL: the first CR goes out, the second is at 0.
    assert_eq!(
        output(&mut ld, b"\r\rab\r\r"),
        b"\rab\r",
        "no CR at column 0"
    );
    with(&mut ld, |t| t.c_oflag = oflag::OPOST | oflag::OLCUC);
    assert_eq!(output(&mut ld, b"Ab1"), b"AB1");
    with(&mut ld, |t| {
        t.c_oflag = oflag::OPOST | oflag::XTABS | oflag::ONLCR
    });
    assert_eq!(output(&mut ld, b"\nab\tc\t"), b"\r\nab      c       ");
}

#[test]
fn echo_goes_through_output_processing() {
    let mut ld = LineDiscipline::new();
    with(&mut ld, |t| t.c_oflag |= oflag::OLCUC);
    let (echo, _) = feed(&mut ld, b"hi\r");
    assert_eq!(echo, b"HI\r\n");
}
