//! The network cases of `cargo xtask test` that need the host (issue 15): the guest's NIC on
//! QEMU user networking, seen from outside.
//!
//! `net-httpd-wget-*`: busybox `httpd` in the guest serves `/bin`; the host fetches
//! `/busybox` through a forwarded port (`-netdev user,hostfwd=...`) and compares it byte for
//! byte with the busybox the initramfs was built from; then the host serves the same file on
//! a port of its own, the guest fetches it with busybox `wget` from the gateway (10.0.2.2) and
//! `cmp`s it with its `/bin/busybox`; last, busybox `ping` (a raw ICMP socket) gets one
//! answer each from 127.0.0.1, the guest's own 10.0.2.15 and the gateway (QEMU user
//! networking answers pings to its own addresses). The host's side is plain `std::net`, so
//! nothing needs installing.
//!
//! Also here, though the host takes no part, the network server's case of `usr/spoof.c`
//! (`net-spoof-server-4c2n`): packet sockets' spoofed frames refused by netd; and busybox
//! `udhcpc` with its instance in server mode (`net-udhcpc-server-2c1n`), and the NIC's
//! interrupt moving with core 3 as it stops, starts, is parked and unparked
//! (`corectl-irq-4c2n`).

use crate::deps;
use crate::qemu::Forward;
use crate::tests::{expect, Case, Step, LIMIT};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::sync::Mutex;
use std::thread::JoinHandle;
use std::time::Duration;

/// How long the host waits for the guest's side of one transfer.
const TRANSFER_LIMIT: Duration = Duration::from_secs(60);

/// The file both directions carry: the busybox in the initramfs.
fn payload() -> Result<Vec<u8>, String> {
    std::fs::read(deps::BUSYBOX.program)
        .map_err(|e| format!("cannot read {}: {e}", deps::BUSYBOX.program))
}

/// A free TCP port on the host's 127.0.0.1 (free when asked: QEMU binds it a moment later).
pub(crate) fn free_port() -> Result<u16, String> {
    let l = TcpListener::bind("127.0.0.1:0").map_err(|e| format!("no free host port: {e}"))?;
    l.local_addr().map(|a| a.port()).map_err(|e| e.to_string())
}

/// Splits an HTTP/1.0 response into its status line and body.
fn parse_response(raw: &[u8]) -> Result<(String, &[u8]), String> {
    let end = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .ok_or("no end of the response's header")?;
    let head = String::from_utf8_lossy(&raw[..end]);
    let status = head.lines().next().unwrap_or("").to_string();
    Ok((status, &raw[end + 4..]))
}

/// Host side, first step: GET `/busybox` from the guest's `httpd` through the forwarded
/// `port`; the body must be the payload.
fn fetch_from_guest(port: u16) -> Result<Option<String>, String> {
    let want = payload()?;
    let mut s = TcpStream::connect(("127.0.0.1", port))
        .map_err(|e| format!("connect to the forwarded port {port}: {e}"))?;
    s.set_read_timeout(Some(TRANSFER_LIMIT))
        .map_err(|e| e.to_string())?;
    s.write_all(b"GET /busybox HTTP/1.0\r\nHost: reef\r\n\r\n")
        .map_err(|e| format!("send the request: {e}"))?;
    let mut raw = Vec::new();
    s.read_to_end(&mut raw)
        .map_err(|e| format!("read the response ({} bytes so far): {e}", raw.len()))?;
    let (status, body) = parse_response(&raw)?;
    if !status.contains(" 200") {
        return Err(format!("the guest's httpd answered '{status}'"));
    }
    if body != want.as_slice() {
        return Err(format!(
            "the host got {} bytes from the guest, not the {} bytes of {}",
            body.len(),
            want.len(),
            deps::BUSYBOX.program
        ));
    }
    println!(
        "  host: fetched {} bytes from the guest's httpd, identical",
        body.len()
    );
    Ok(None)
}

/// Host side, second step: serves the payload to one HTTP request on a port of its own, in a
/// thread; types the port for the guest's `read`.
fn serve_to_guest(_: u16) -> Result<Option<String>, String> {
    let body = payload()?;
    let l = TcpListener::bind("127.0.0.1:0").map_err(|e| format!("no free host port: {e}"))?;
    let port = l.local_addr().map_err(|e| e.to_string())?.port();
    std::thread::spawn(move || {
        let Ok((s, _)) = l.accept() else { return };
        let _ = s.set_read_timeout(Some(TRANSFER_LIMIT));
        let mut reader = BufReader::new(&s);
        let mut line = String::new();
        // The request's header ends at an empty line.
        while reader.read_line(&mut line).is_ok_and(|n| n > 0) && line.trim_end() != "" {
            line.clear();
        }
        let mut w = &s;
        let head = format!(
            "HTTP/1.0 200 OK\r\nContent-Length: {}\r\nContent-Type: application/octet-stream\r\n\r\n",
            body.len()
        );
        let _ = w
            .write_all(head.as_bytes())
            .and_then(|()| w.write_all(&body));
    });
    Ok(Some(format!("{port}\r")))
}

/// Copies of the payload in the large file of `net-server-*` (25 busyboxes: about 50 MB).
const BIG_COPIES: usize = 25;
/// Bytes the host reads of the large file before each of the guest's disruptions.
const BIG_STAGE: usize = 10 << 20;

/// The host's reader of the large file, between steps: it reads up to the byte count the
/// gate gives it, then says how far it got.
struct BigFetch {
    /// Lets the reader go on to this many bytes (`usize::MAX`: to the end).
    gate: SyncSender<usize>,
    /// How far it got each time it stopped.
    progress: Receiver<Result<usize, String>>,
    /// The reader: the whole response.
    thread: JoinHandle<Result<Vec<u8>, String>>,
}

/// The reader of the running `net-server-*` case.
static BIG: Mutex<Option<BigFetch>> = Mutex::new(None);

/// Host side: starts fetching `/big` through the forwarded `port` and reads its first
/// [`BIG_STAGE`] bytes, then stops reading (the guest's sender stalls on a full window) and
/// tells the guest to go on.
fn big_start(port: u16) -> Result<Option<String>, String> {
    let mut s = TcpStream::connect(("127.0.0.1", port))
        .map_err(|e| format!("connect to the forwarded port {port}: {e}"))?;
    s.set_read_timeout(Some(TRANSFER_LIMIT))
        .map_err(|e| e.to_string())?;
    s.write_all(b"GET /big HTTP/1.0\r\nHost: reef\r\n\r\n")
        .map_err(|e| format!("send the request: {e}"))?;
    let (gate, open) = sync_channel::<usize>(1);
    let (tell, progress) = sync_channel(1);
    let thread = std::thread::spawn(move || {
        let mut raw = Vec::new();
        let mut buf = vec![0; 1 << 16];
        while let Ok(limit) = open.recv() {
            while raw.len() < limit {
                match s.read(&mut buf) {
                    Ok(0) => {
                        let _ = tell.send(Ok(raw.len()));
                        return Ok(raw);
                    }
                    Ok(n) => raw.extend_from_slice(&buf[..n]),
                    Err(e) => {
                        let why = format!("read the response ({} bytes so far): {e}", raw.len());
                        let _ = tell.send(Err(why.clone()));
                        return Err(why);
                    }
                }
            }
            let _ = tell.send(Ok(raw.len()));
        }
        Ok(raw)
    });
    *BIG.lock().map_err(|_| "poisoned")? = Some(BigFetch {
        gate,
        progress,
        thread,
    });
    big_advance(BIG_STAGE)
}

/// Lets the reader go on to `to` bytes and waits until it got there; tells the guest to go on.
fn big_advance(to: usize) -> Result<Option<String>, String> {
    let guard = BIG.lock().map_err(|_| "poisoned")?;
    let big = guard.as_ref().ok_or("no transfer started")?;
    big.gate.send(to).map_err(|_| "the reader ended early")?;
    let got = big
        .progress
        .recv_timeout(TRANSFER_LIMIT)
        .map_err(|_| format!("the transfer did not reach {to} bytes in time"))??;
    println!("  host: {got} bytes of /big received");
    Ok(Some("go\r".into()))
}

/// Host side: after the guest's restart of the network server.
fn big_second(_: u16) -> Result<Option<String>, String> {
    big_advance(2 * BIG_STAGE)
}

/// Host side: after the guest's move of httpd's instance to the kernel's switch.
fn big_third(_: u16) -> Result<Option<String>, String> {
    big_advance(3 * BIG_STAGE)
}

/// Host side: after the move back to the server: reads to the end and compares with
/// [`BIG_COPIES`] busyboxes.
fn big_finish(_: u16) -> Result<Option<String>, String> {
    let big = BIG
        .lock()
        .map_err(|_| "poisoned")?
        .take()
        .ok_or("no transfer started")?;
    big.gate
        .send(usize::MAX)
        .map_err(|_| "the reader ended early")?;
    let raw = big.thread.join().map_err(|_| "the reader panicked")??;
    let (status, body) = parse_response(&raw)?;
    if !status.contains(" 200") {
        return Err(format!("the guest's httpd answered '{status}'"));
    }
    let one = payload()?;
    let want_len = one.len() * BIG_COPIES;
    if body.len() != want_len || body.chunks(one.len()).any(|c| c != one.as_slice()) {
        return Err(format!(
            "the host got {} bytes of /big, not {want_len} bytes of {BIG_COPIES} busyboxes",
            body.len()
        ));
    }
    println!("  host: /big complete, {} bytes, identical", body.len());
    Ok(Some("done\r".into()))
}

/// Whether a `netctl list` in `part` shows the instance holding TCP port 80 in `mode` (its
/// column starts so).
fn holds_80(part: &str, mode: &str) -> bool {
    part.lines().any(|l| {
        let w: Vec<&str> = l.split_whitespace().collect();
        w.len() == 7 && w[1].starts_with(mode) && w[3].split(',').any(|p| p == "tcp/80")
    })
}

/// The part of `log` from `from` to the next `to`.
fn between<'a>(log: &'a str, from: &str, to: &str) -> Result<&'a str, String> {
    let start = log.find(from).ok_or(format!("no {from}"))?;
    let end = log[start..]
        .find(to)
        .ok_or(format!("no {to} after {from}"))?;
    Ok(&log[start..start + end])
}

/// `net-direct-*`'s check: httpd's instance was listed with the server and its own address
/// after `netctl address`, on its own NIC with it, then with the server, and on its NIC again
/// at the end; frames went out of its NIC.
fn check_direct(log: &str) -> Result<(), String> {
    let addressed = log.split("NET-ADDRESSED").next().unwrap_or("");
    let served_with_own = addressed.lines().any(|l| {
        let w: Vec<&str> = l.split_whitespace().collect();
        w.len() == 7
            && w[1].starts_with("server/")
            && w[1].ends_with("@10.0.2.16")
            && w[3].split(',').any(|p| p == "tcp/80")
    });
    if !served_with_own {
        return Err(
            "httpd's instance is not listed in server mode with 10.0.2.16 after \
                    `netctl address`"
                .into(),
        );
    }
    if !holds_80(log, "direct/1@10.0.2.16") {
        return Err("httpd's instance is not listed on library NIC 1 with 10.0.2.16".into());
    }
    if !holds_80(
        between(log, "NET-DIRECT-UP", "NET-MOVED-SERVER")?,
        "server/",
    ) {
        return Err("httpd's instance is not listed with the server after `netctl server`".into());
    }
    if !holds_80(
        between(log, "NET-MOVED-DIRECT", "NET-DIRECT-DONE")?,
        "direct/1@",
    ) {
        return Err("httpd's instance is not on its NIC again at the end".into());
    }
    let sent = log
        .lines()
        .filter_map(|l| l.strip_prefix("library sent "))
        .filter_map(|r| r.split_whitespace().next()?.parse::<u64>().ok())
        .max()
        .unwrap_or(0);
    if sent < 1000 {
        return Err(format!("only {sent} frames left by the library-mode NIC"));
    }
    expect(log, " spoofed 0 ")
}

/// `net-server-*`'s check: the server was restarted, every instance of the guest's programs
/// was in server mode at the end, and no frame of theirs was refused as spoofed.
fn check_server(log: &str) -> Result<(), String> {
    let started = log.matches("netd: serving on core").count();
    if started < 2 {
        return Err(format!(
            "netd attached {started} times, not twice (started, restarted)"
        ));
    }
    expect(log, " spoofed 0 ")?;
    // `netctl list` after the move to the kernel's switch, and at the end: httpd's instance
    // (the one holding port 80) in each mode.
    if !holds_80(
        between(log, "NET-SERVER-RESTARTED", "NET-SWITCHED-KERNEL")?,
        "kernel",
    ) {
        return Err("httpd's instance is not listed in kernel mode after `netctl kernel`".into());
    }
    if !holds_80(between(log, "NET-LOOP-SAME", "NET-SERVER-DONE")?, "server/") {
        return Err("httpd's instance is not listed in server mode at the end".into());
    }
    expect(log, "NET-SERVER-DONE")
}

/// A case of the large transfer on 4 cores and 2 nodes: `guest` is the shell's command line,
/// `script` the conversation, the host's forward goes to port 80 of `addr` (`None`: 10.0.2.15)
/// on a machine with `nics` NICs.
fn big_case(
    name: &str,
    guest: &str,
    script: Vec<Step>,
    check: crate::tests::Check,
    (addr, nics): (Option<std::net::Ipv4Addr>, u32),
) -> Result<Case, String> {
    let words = ["init=/bin/busybox", "sh", "-c", guest];
    Ok(Case {
        name: name.into(),
        cores: 4,
        nodes: 2,
        memory_mib: 1024,
        cmdline: crate::cmdline::join(&words)?,
        status: 0,
        limit: LIMIT,
        check,
        script,
        explain: None,
        forwards: vec![Forward {
            host: free_port()?,
            addr,
            guest: 80,
        }],
        nics,
        debian: false,
    })
}

/// The cases: one core and one node, and four cores on two nodes.
pub fn cases() -> Result<Vec<Case>, String> {
    let guest = concat!(
        "httpd -p 80 -h /bin && echo NET-HTTPD-UP; ",
        "read port; ",
        "wget -q -O /tmp/got http://10.0.2.2:$port/busybox && cmp /tmp/got /bin/busybox ",
        "&& echo NET-WGET-SAME; ",
        "ping -c 1 127.0.0.1 && ping -c 1 10.0.2.15 && ping -c 1 10.0.2.2 && echo NET-PING-OK; ",
        "cat /proc/reef/net"
    );
    let mut cases = Vec::new();
    for (cores, nodes, memory_mib) in [(1, 1, 256), (4, 2, 512)] {
        let words = ["init=/bin/busybox", "sh", "-c", guest];
        cases.push(Case {
            name: format!("net-httpd-wget-{cores}c{nodes}n"),
            cores,
            nodes,
            memory_mib,
            cmdline: crate::cmdline::join(&words)?,
            status: 0,
            limit: LIMIT,
            check: Box::new(|_, o| expect(&o.log, "forwarded ")),
            script: vec![
                Step::Expect("NET-HTTPD-UP"),
                Step::Host(fetch_from_guest),
                Step::Host(serve_to_guest),
                Step::Expect("NET-WGET-SAME"),
                Step::Expect("NET-PING-OK"),
            ],
            explain: None,
            forwards: vec![Forward {
                host: free_port()?,
                addr: None,
                guest: 80,
            }],
            nics: 1,
            debian: false,
        });
    }
    // Server mode (LibrettOS §3.2): netd owns the NIC; httpd's instance goes through it. The
    // large transfer goes on across a kill -9 of the server (the fleet restarts it) and a
    // move of httpd's instance to the kernel's switch and back.
    let guest = concat!(
        "fleet start net --restart --cores 1 /bin/netd && netctl wait 30 && ",
        "for i in $(seq 25); do cat /bin/busybox; done > /tmp/big && ",
        "httpd -p 80 -h /tmp && echo NET-SERVER-UP; ",
        "read go; old=$(pidof netd); kill -9 $old; ",
        "while [ \"$(pidof netd)\" = \"$old\" ] || [ -z \"$(pidof netd)\" ]; do sleep 0.1; done; ",
        "netctl wait 30 && echo NET-SERVER-RESTARTED; ",
        "read go; for p in $(pidof httpd); do netctl kernel $p; done; netctl list; ",
        "echo NET-SWITCHED-KERNEL; ",
        "read go; for p in $(pidof httpd); do netctl server $p; done; ",
        "echo NET-SWITCHED-SERVER; ",
        "read done; ping -c 1 10.0.2.2 && wget -q -O /tmp/got http://127.0.0.1/big ",
        "&& cmp /tmp/got /tmp/big && echo NET-LOOP-SAME; ",
        "netctl list; echo NET-SERVER-DONE"
    );
    cases.push(big_case(
        "net-server-4c2n",
        guest,
        vec![
            Step::Expect("NET-SERVER-UP"),
            Step::Host(big_start),
            Step::Expect("NET-SERVER-RESTARTED"),
            Step::Host(big_second),
            Step::Expect("NET-SWITCHED-KERNEL"),
            Step::Host(big_third),
            Step::Expect("NET-SWITCHED-SERVER"),
            Step::Host(big_finish),
            Step::Expect("NET-LOOP-SAME"),
            Step::Expect("NET-SERVER-DONE"),
        ],
        Box::new(|_, o| check_server(&o.log)),
        (None, 1),
    )?);
    // Library mode (LibrettOS §3.1, §3.3): httpd's instance gets its own address in server
    // mode (`netctl address`, the pool's first, 10.0.2.16, which the host's forward reaches),
    // then goes on a NIC of its own; the large transfer goes on across its moves to the
    // network server and back.
    let guest = concat!(
        "fleet start net --restart --cores 1 /bin/netd && netctl wait 30 && ",
        "for i in $(seq 25); do cat /bin/busybox; done > /tmp/big && ",
        "httpd -p 80 -h /tmp && for p in $(pidof httpd); do netctl address $p; done && ",
        "netctl list && echo NET-ADDRESSED && ",
        "for p in $(pidof httpd); do netctl direct $p; done && ",
        "netctl list && echo NET-DIRECT-UP; ",
        "read go; for p in $(pidof httpd); do netctl server $p; done; netctl list; ",
        "echo NET-MOVED-SERVER; ",
        "read go; for p in $(pidof httpd); do netctl direct $p; done; ",
        "echo NET-MOVED-DIRECT; ",
        "read done; netctl list; echo NET-DIRECT-DONE"
    );
    cases.push(big_case(
        "net-direct-4c2n",
        guest,
        vec![
            Step::Expect("NET-DIRECT-UP"),
            Step::Host(big_start),
            Step::Expect("NET-MOVED-SERVER"),
            Step::Host(big_second),
            Step::Expect("NET-MOVED-DIRECT"),
            Step::Host(big_finish),
            Step::Expect("NET-DIRECT-DONE"),
        ],
        Box::new(|_, o| check_direct(&o.log)),
        (Some(std::net::Ipv4Addr::new(10, 0, 2, 16)), 2),
    )?);
    // Packet sockets in server mode: the spoofed frames are refused by netd (usr/spoof.c; the
    // kernel-mode case is the user test `net-spoof-kernel-1c1n`).
    let guest = "fleet start net --cores 1 /bin/netd && netctl wait 30 && /test/spoof";
    cases.push(shell_case(
        "net-spoof-server-4c2n",
        (4, 2),
        &["init=/bin/busybox", "sh", "-c", guest],
        Box::new(|_, o| {
            expect(&o.log, "spoof: source check: instance in server/")?;
            expect(&o.log, "PASS spoof")
        }),
    )?);
    // busybox udhcpc with its instance in server mode: netd lets the request from 0.0.0.0 out
    // and routes QEMU's reply back by its transaction id (`Server`'s DHCP table).
    let guest = format!(
        "fleet start net --cores 1 /bin/netd && netctl wait 30 && {}; netctl list",
        crate::tests::UDHCPC
    );
    cases.push(shell_case(
        "net-udhcpc-server-2c1n",
        (2, 1),
        &["init=/bin/busybox", "sh", "-c", &guest],
        Box::new(|_, o| {
            expect(
                &o.log,
                "lease: ip=10.0.2.15 subnet=255.255.255.0 router=10.0.2.2 dns=10.0.2.3 \
             interface=eth0",
            )?;
            // udhcpc's instance, listed after it exited: in server mode, with the replies.
            let served = o.log.lines().any(|l| {
                let w: Vec<&str> = l.split_whitespace().collect();
                w.len() == 7
                    && w[1].starts_with("server/")
                    && w[5].parse::<u64>().is_ok_and(|n| n >= 2)
            });
            if !served {
                return Err("no instance in server mode received the DHCP replies".into());
            }
            expect(&o.log, " spoofed 0 ")
        }),
    )?);
    cases.push(irq_case()?);
    Ok(cases)
}

/// `corectl-irq-4c2n` (issue 14, Barrelfish/DC §4.8): with `nic_irq=3` the NIC interrupts core
/// 3; busybox `udhcpc` gets a lease (frames that only arrive by the NIC's interrupt) with core 3
/// online, stopped, started again, parked on core 2 and unparked. Each time the NIC's interrupt
/// count must rise (the kernel counts interrupts that arrive, never the tick's polling), and
/// the kernel must say where the interrupt moved: away from core 3 before it stops or is
/// parked (to core 2, an online core of its node, or its host), back when it comes up again.
fn irq_case() -> Result<Case, String> {
    let guest = format!(
        "count() {{ sed -n 's/^nic .* interrupts \\([0-9]*\\)$/\\1/p' /proc/reef/net; }}; \
         lease() {{ a=$(count); {} > /dev/null || exit 1; b=$(count); \
         [ \"$b\" -gt \"$a\" ] && echo \"irq: $1: interrupts rose\"; }}; \
         lease online && corectl stop 3 && lease stopped && corectl start 3 && lease started \
         && corectl park 3 2 && lease parked && corectl unpark 3 && lease unparked",
        crate::tests::UDHCPC
    );
    shell_case(
        "corectl-irq-4c2n",
        (4, 2),
        &["nic_irq=3", "init=/bin/busybox", "sh", "-c", &guest],
        Box::new(|_, o| {
            expect(
                &o.log,
                "reef: net: NIC interrupt (vector 0x40) bound to core 3 (nic_irq)",
            )?;
            for phase in ["online", "stopped", "started", "parked", "unparked"] {
                expect(&o.log, &format!("irq: {phase}: interrupts rose"))?;
            }
            let moves: Vec<&str> = o
                .log
                .lines()
                .filter(|l| l.starts_with("reef: irq: vector 0x40 moved"))
                .collect();
            let want = [
                "reef: irq: vector 0x40 moved from core 0 to core 3",
                "reef: irq: vector 0x40 moved from core 3 to core 2",
                "reef: irq: vector 0x40 moved from core 2 to core 3",
                "reef: irq: vector 0x40 moved from core 3 to core 2",
                "reef: irq: vector 0x40 moved from core 2 to core 3",
            ];
            if moves != want {
                return Err(format!(
                    "the NIC interrupt's moves were {moves:?}, not {want:?}"
                ));
            }
            Ok(())
        }),
    )
}

/// A case that boots the kernel command line `words` (a shell command as init, the host taking
/// no part) on `cores` and `nodes` with one NIC, expects init to exit 0 and checks its log.
fn shell_case(
    name: &str,
    (cores, nodes): (u32, u32),
    words: &[&str],
    check: crate::tests::Check,
) -> Result<Case, String> {
    Ok(Case {
        name: name.into(),
        cores,
        nodes,
        memory_mib: 512,
        cmdline: crate::cmdline::join(words)?,
        status: 0,
        limit: LIMIT,
        check,
        script: vec![],
        explain: None,
        forwards: vec![],
        nics: 1,
        debian: false,
    })
}
