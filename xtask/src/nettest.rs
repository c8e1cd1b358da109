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

use crate::deps;
use crate::tests::{expect, Case, Step, LIMIT};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::time::Duration;

/// How long the host waits for the guest's side of one transfer.
const TRANSFER_LIMIT: Duration = Duration::from_secs(60);

/// The file both directions carry: the busybox in the initramfs.
fn payload() -> Result<Vec<u8>, String> {
    std::fs::read(deps::BUSYBOX.program)
        .map_err(|e| format!("cannot read {}: {e}", deps::BUSYBOX.program))
}

/// A free TCP port on the host's 127.0.0.1 (free when asked: QEMU binds it a moment later).
fn free_port() -> Result<u16, String> {
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
            forwards: vec![(free_port()?, 80)],
            debian: false,
        });
    }
    Ok(cases)
}
