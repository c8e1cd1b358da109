//! `cargo xtask bench [--quick] [--runs N] [--out DIR] [NAME...]`: Reef against Linux on the
//! same QEMU machine, and the node replication library against node-replication on the host.
//!
//! Every benchmark is a command (`/test/uperf ...`, `/test/fsbench ...`, `/test/hello`) that
//! both guests run from their initramfs, one QEMU boot per (benchmark, configuration, run,
//! system): Reef as `init=COMMAND`, Linux as `rdinit=/init -- COMMAND` (see `linux.rs`). The
//! `hare-*` benchmarks run in more variants, each a name in the results: Reef with the command
//! under a launcher (`onhare`, which mounts Hare over `/tmp`, with its placement and mount
//! options), beside NR-FS (`reef`) and Linux. All boot with the same `Machine` (accelerator,
//! `-cpu`, cores, NUMA nodes, memory, qboot). Runs
//! alternate between the systems (Reef run 1, Linux run 1, Reef run 2, ...), and run r of every
//! point comes before run r + 1 of any, so a slow phase of the host spreads over all points.
//!
//! A run gives each of its benchmark's metrics a value, or fails with a reason (time limit, an
//! exit status and the error line, a missing result line) that the CSV and the summary show.
//!
//! Results go to `DIR` (default `bench/results/latest` for a complete full run, `out/bench/quick`
//! or `out/bench/partial` otherwise): `runs.csv` (every run), `summary.md` (medians and ratios),
//! one `<metric>.svg` per metric, and `nr-bench/` (the host benchmark's own output).

use crate::linux;
use crate::nettest::free_port;
use crate::qemu::{Accel, Console, Forward, Machine};
use crate::tests::{spawn_piped, wait_for_exit, End};
use crate::{build, cmdline, deps, usr};
use std::fmt::Write as _;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const USAGE: &str = "usage: cargo xtask bench [--quick] [--runs N] [--out DIR] [--configs LIST]
                         [--variants LIST] [NAME...]
  --quick  one run per point, configurations 1c1n and 2c2n, shorter measurements
  --runs   runs per point (default 3; --quick: 1)
  --configs  only these configurations, comma-separated labels (1c1n,2c1n,2c2n,4c2n);
           what runs only at the largest (the Hare ablations) runs at the largest of them
  --variants only these systems and variants, comma-separated (reef,linux,reef-hare,
           reef-hare-split,reef-hare-nodist,...: the names of the summary's columns)
  --out    results folder (default bench/results/latest for a full run of everything,
           out/bench/quick with --quick, out/bench/partial when NAMEs are given)
  NAME     only the benchmarks named NAME or NAME-...: boot null spawn pspawn vmops vmlat
           core (core-busy core-jitter core-jitter-rt core-park core-park-busy core-update) fs (fs-shared-w0 ... fs-private-w100) msg (msg-rtt msg-tput
           msg-mbox-rtt msg-mbox-tput msg-pipe-rtt msg-sock-rtt msg-grant-rtt msg-grant-tput)
           net (net-lo-rtt net-nic-rtt-64 net-nic-rtt-1k net-nic-rtt-64k net-nic-rtt-256k,
           net-server-rtt-SIZE and net-direct-rtt-SIZE for the same sizes, net-nic-tput
           net-server-tput net-direct-tput, net-nic-http net-server-http net-direct-http
           (ab from the host; apache2-utils is installed if missing), net-switch)
           hare (hare-creates hare-writes hare-renames hare-directories hare-rm-dense
           hare-rm-sparse hare-pfind-dense hare-pfind-sparse hare-mailbench hare-fsstress
           hare-punzip hare-grow
           hare-rename-latency) nr-bench";

/// Guest memory of every configuration (MiB).
const MEMORY_MIB: u32 = 512;
/// Time limit of one QEMU boot.
const LIMIT: Duration = Duration::from_secs(150);
/// The file benchmarks' write percentages (NrOS Figure 3).
const WRITE_PCTS: [u32; 4] = [0, 10, 60, 100];

/// A machine configuration: cores and NUMA nodes (memory is [`MEMORY_MIB`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Config {
    /// Cores.
    pub cores: u32,
    /// NUMA nodes.
    pub nodes: u32,
}

impl Config {
    /// `2c1n`.
    pub fn label(&self) -> String {
        format!("{}c{}n", self.cores, self.nodes)
    }
}

const FULL_CONFIGS: [Config; 4] = [
    Config { cores: 1, nodes: 1 },
    Config { cores: 2, nodes: 1 },
    Config { cores: 2, nodes: 2 },
    Config { cores: 4, nodes: 2 },
];
const QUICK_CONFIGS: [Config; 2] = [Config { cores: 1, nodes: 1 }, Config { cores: 2, nodes: 2 }];

/// A system booted in QEMU.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum System {
    /// Reef, `cargo xtask`'s kernel and initramfs.
    Reef,
    /// Debian's Linux 6.1 with the initramfs of `linux.rs`.
    Linux,
}

impl System {
    /// Name in the CSV and the summary.
    pub fn name(self) -> &'static str {
        match self {
            System::Reef => "reef",
            System::Linux => "linux",
        }
    }

    /// The kernel command line running `argv`.
    fn cmdline(self, argv: &[String]) -> Result<String, String> {
        match self {
            System::Reef => {
                let mut words = vec![format!("init={}", argv[0])];
                words.extend_from_slice(&argv[1..]);
                cmdline::join(&words)
            }
            System::Linux => linux::cmdline(argv),
        }
    }

    /// The benchmark command's exit status, from the serial log.
    pub fn exit_status(self, log: &str) -> Option<i32> {
        let prefix = match self {
            System::Reef => "reef: init exited with status ",
            System::Linux => linux::STATUS_PREFIX,
        };
        log.lines()
            .find_map(|l| l.strip_prefix(prefix))
            .and_then(|rest| rest.split_whitespace().next())
            .and_then(|n| n.parse().ok())
    }
}

/// Where a metric's value comes from.
#[derive(Clone, Debug)]
enum Source {
    /// `key=VALUE` on the line starting with `prefix` (the program's result line).
    Result {
        prefix: &'static str,
        key: &'static str,
    },
    /// The time from QEMU's start until the serial output shows the first line init prints:
    /// Reef runs the command itself as init, Linux runs `/init`, which prints its marker first.
    InitLine { reef: &'static str },
    /// The time from QEMU's start to its exit (after the power-off).
    Exit,
    /// The host's measurement number `i` while the guest ran ([`HostLoad`]).
    Host(usize),
}

/// One measured quantity of a benchmark.
#[derive(Clone, Debug)]
struct Metric {
    name: String,
    unit: &'static str,
    higher_is_better: bool,
    source: Source,
}

/// A benchmark: a command both guests run, and the metrics its run gives.
#[derive(Clone, Debug)]
struct Bench {
    name: String,
    /// The command; the word `{cores}` becomes the configuration's number of cores, `{echo}`
    /// the host's echo server as the guest reaches it ([`echo_port`]).
    argv: Vec<String>,
    metrics: Vec<Metric>,
    /// The ways it runs (Reef and Linux for most).
    variants: Vec<Variant>,
    /// The network mode (LibrettOS) that uperf's stack instance must be in on Reef
    /// (`uperf -n MODE`, whose `uperf: net instance mode=...` line is checked), if any.
    net_mode: Option<&'static str>,
    /// What the host does while the guest runs, if anything.
    host_load: Option<HostLoad>,
}

/// The host's part of a benchmark, done while the guest waits: its figures are the metrics
/// with [`Source::Host`].
#[derive(Clone, Debug)]
enum HostLoad {
    /// `ab` (ApacheBench) against `uperf httpd HTTP_PORT` through a forwarded port, once the
    /// guest prints `uperf: httpd ready`: after 20 requests to warm up, `requests` requests at
    /// each concurrency (one metric each: requests per second; a failed or non-2xx request
    /// fails the value); then the host types `done` on the serial console.
    Http {
        requests: u32,
        concurrency: &'static [u32],
    },
}

/// The guest's port of `uperf httpd`.
const HTTP_PORT: u16 = 8080;
/// The concurrency levels of the HTTP benchmarks (busybox httpd listens with a backlog of 9:
/// beyond that both systems drop SYNs, and the clients' retries dominate).
const HTTP_CONCURRENCY: [u32; 3] = [1, 4, 8];

impl Bench {
    /// Whether it runs Debian's programs (`debian-*`: both systems boot the image with
    /// Debian's packages, `debian.rs`).
    fn debian(&self) -> bool {
        self.name.starts_with("debian-")
    }

    /// The machine's NICs, the same for both systems: library mode (and the switch to it)
    /// needs a second one.
    fn nics(&self) -> u32 {
        if self.net_mode == Some("direct") || self.name == "net-switch" {
            2
        } else {
            1
        }
    }

    /// The ports forwarded from the host for `system`: the HTTP benchmarks' server, at the
    /// guest's address (on Reef in library mode, 10.0.2.16: the address of its own that the
    /// pool gives httpd's instance, the first one; elsewhere 10.0.2.15).
    fn forwards(&self, system: System) -> Result<Vec<Forward>, String> {
        if self.host_load.is_none() {
            return Ok(Vec::new());
        }
        let addr = (system == System::Reef && self.net_mode == Some("direct"))
            .then_some(std::net::Ipv4Addr::new(10, 0, 2, 16));
        Ok(vec![Forward {
            host: free_port()?,
            addr,
            guest: HTTP_PORT,
        }])
    }
}

/// One way a benchmark runs: a system, a launcher before the command, and where it runs.
#[derive(Clone, Debug)]
struct Variant {
    /// Name in the CSV and the summary: `reef`, `linux`, `reef-hare`, ...
    name: String,
    system: System,
    /// Words before the command (`/test/onhare timeshare /tmp`).
    prefix: Vec<String>,
    /// Runs only at configurations with at least this many cores.
    min_cores: u32,
    /// Runs only at the run's largest configuration (the ablations).
    largest_only: bool,
}

impl Variant {
    /// `system` running the command as it is, at every configuration.
    fn plain(system: System) -> Self {
        Variant {
            name: system.name().into(),
            system,
            prefix: Vec::new(),
            min_cores: 1,
            largest_only: false,
        }
    }

    /// Reef with Hare mounted over `/tmp` by `onhare` (file servers placed by `placement`,
    /// mount options `options`).
    fn hare(name: &str, placement: &str, options: Option<&str>) -> Self {
        let mut prefix = vec!["/test/onhare".to_string()];
        if let Some(o) = options {
            prefix.extend(["-o".to_string(), o.to_string()]);
        }
        prefix.extend([placement.to_string(), "/tmp".to_string()]);
        Variant {
            name: name.into(),
            system: System::Reef,
            prefix,
            min_cores: if placement == "split" { 2 } else { 1 },
            largest_only: options.is_some(),
        }
    }

    /// Whether it runs at `config`, `largest` being the run's largest configuration.
    fn runs_at(&self, config: Config, largest: Config) -> bool {
        config.cores >= self.min_cores && (!self.largest_only || config == largest)
    }

    /// The command line words of `bench` at `config`.
    fn argv(&self, bench: &Bench, config: Config) -> Vec<String> {
        self.prefix
            .iter()
            .chain(&bench.argv)
            .map(|w| {
                if w == "{cores}" {
                    config.cores.to_string()
                } else if w == "{echo}" {
                    format!("10.0.2.2:{}", echo_port())
                } else if w == "{sink}" {
                    format!("10.0.2.2:{}", sink_port())
                } else {
                    w.clone()
                }
            })
            .collect()
    }
}

/// The port of the host's TCP echo server on 127.0.0.1, started at the first call (the
/// `net-nic-*` benchmarks' peer: QEMU user networking takes the guest's connections to
/// 10.0.2.2 to the host's 127.0.0.1). Each connection is echoed by a thread of its own.
fn echo_port() -> u16 {
    static PORT: std::sync::OnceLock<u16> = std::sync::OnceLock::new();
    *PORT.get_or_init(|| {
        let l =
            std::net::TcpListener::bind("127.0.0.1:0").expect("a host port for the echo server");
        let port = l.local_addr().expect("the echo server's address").port();
        std::thread::spawn(move || {
            for c in l.incoming().flatten() {
                std::thread::spawn(move || {
                    let _ = c.set_nodelay(true);
                    let mut r = &c;
                    let mut w = &c;
                    let _ = std::io::copy(&mut r, &mut w);
                });
            }
        });
        port
    })
}

/// The port of the host's TCP sink on 127.0.0.1 (the `net-*-tput` benchmarks' peer, `uperf
/// sinktput`), started at the first call: on each connection, over and over, it reads a byte
/// count (8 bytes, big-endian), reads that many bytes and answers the count.
fn sink_port() -> u16 {
    static PORT: std::sync::OnceLock<u16> = std::sync::OnceLock::new();
    *PORT.get_or_init(|| {
        let l = std::net::TcpListener::bind("127.0.0.1:0").expect("a host port for the sink");
        let port = l.local_addr().expect("the sink's address").port();
        std::thread::spawn(move || {
            for c in l.incoming().flatten() {
                std::thread::spawn(move || {
                    let _ = c.set_nodelay(true);
                    let _ = sink(&c);
                });
            }
        });
        port
    })
}

/// One connection of [`sink_port`], until the peer closes it.
fn sink(mut c: &std::net::TcpStream) -> std::io::Result<()> {
    use std::io::Write;
    let mut count = [0u8; 8];
    let mut buf = vec![0u8; 1 << 16];
    loop {
        c.read_exact(&mut count)?;
        let mut left = u64::from_be_bytes(count);
        while left > 0 {
            let n = c.read(&mut buf[..left.min(1 << 16) as usize])?;
            if n == 0 {
                return Ok(());
            }
            left -= n as u64;
        }
        c.write_all(&count)?;
    }
}

/// Reef and Linux, each running the command as it is.
fn reef_and_linux() -> Vec<Variant> {
    vec![Variant::plain(System::Reef), Variant::plain(System::Linux)]
}

/// The §5.4 ablations: the mount option that switches each technique off.
const HARE_ABLATIONS: [&str; 5] = [
    "nodist",
    "nobcast",
    "nolookupcache",
    "noaffinity",
    "nodirect",
];

/// Hare's workloads: Hare with a server time-sharing every core (§5.3.2's timeshare), Hare
/// with servers owning every odd core (split), NR-FS (`reef`) and Linux tmpfs, and at the
/// largest configuration Hare (timeshare) with each technique off.
fn hare_variants() -> Vec<Variant> {
    let mut v = vec![
        Variant::hare("reef-hare", "timeshare", None),
        Variant::hare("reef-hare-split", "split", None),
        Variant::plain(System::Reef),
        Variant::plain(System::Linux),
    ];
    for a in HARE_ABLATIONS {
        v.push(Variant::hare(
            &format!("reef-hare-{a}"),
            "timeshare",
            Some(a),
        ));
    }
    v
}

/// How long the measurements run.
#[derive(Clone, Copy, Debug)]
struct Effort {
    /// uperf's time budget for the timed repetitions of a mode (`-b`), seconds.
    uperf_budget_s: f64,
    /// fsbench's timed phase (`-d`), seconds.
    fsbench_s: f64,
    /// The file benchmarks' write percentages.
    write_pcts: &'static [u32],
    /// fsload's repeating workloads (`-d`), seconds.
    fsload_s: f64,
    /// `uperf jitter`'s busy loop, seconds.
    jitter_s: u32,
    /// Requests per concurrency level of the HTTP benchmarks.
    http_requests: u32,
    /// Park and unpark rounds of `uperf park`.
    park_rounds: u32,
}

const FULL: Effort = Effort {
    uperf_budget_s: 2.0,
    fsbench_s: 1.0,
    write_pcts: &WRITE_PCTS,
    fsload_s: 1.0,
    jitter_s: 10,
    http_requests: 1000,
    park_rounds: 10,
};
const QUICK: Effort = Effort {
    uperf_budget_s: 0.5,
    fsbench_s: 0.5,
    write_pcts: &[0, 100],
    fsload_s: 0.5,
    jitter_s: 2,
    http_requests: 300,
    park_rounds: 5,
};

fn uperf(effort: Effort, name: &str, args: &[&str], metrics: Vec<Metric>) -> Bench {
    let mut argv = vec![
        "/test/uperf".to_string(),
        "-b".into(),
        effort.uperf_budget_s.to_string(),
    ];
    argv.extend(args.iter().map(|a| a.to_string()));
    Bench {
        name: name.into(),
        argv,
        metrics,
        variants: reef_and_linux(),
        net_mode: None,
        host_load: None,
    }
}

fn result_metric(
    name: &str,
    unit: &'static str,
    higher_is_better: bool,
    prefix: &'static str,
    key: &'static str,
) -> Metric {
    Metric {
        name: name.into(),
        unit,
        higher_is_better,
        source: Source::Result { prefix, key },
    }
}

/// Every benchmark run in QEMU, in the order they run.
fn benches(effort: Effort) -> Vec<Bench> {
    let mut b = vec![
        Bench {
            name: "boot".into(),
            argv: vec!["/test/hello".into()],
            metrics: vec![
                Metric {
                    name: "boot-init".into(),
                    unit: "ms",
                    higher_is_better: false,
                    source: Source::InitLine {
                        reef: "hello from /test/hello",
                    },
                },
                Metric {
                    name: "boot-poweroff".into(),
                    unit: "ms",
                    higher_is_better: false,
                    source: Source::Exit,
                },
            ],
            variants: reef_and_linux(),
            net_mode: None,
            host_load: None,
        },
        uperf(
            effort,
            "null",
            &["null"],
            vec![result_metric(
                "null",
                "ns/call",
                false,
                "uperf null ",
                "median",
            )],
        ),
        uperf(
            effort,
            "spawn",
            &["spawn"],
            vec![result_metric(
                "spawn",
                "us/round",
                false,
                "uperf spawn ",
                "median",
            )],
        ),
        uperf(
            effort,
            "pspawn",
            &["pspawn"],
            vec![result_metric(
                "pspawn",
                "us/round",
                false,
                "uperf pspawn ",
                "median",
            )],
        ),
        uperf(
            effort,
            "vmops",
            &["vmops", "0"],
            vec![result_metric(
                "vmops",
                "ops/s",
                true,
                "uperf vmops ",
                "median",
            )],
        ),
        uperf(
            effort,
            "vmlat",
            &["vmlat", "0"],
            ["p1", "p50", "p99"]
                .into_iter()
                .map(|p| result_metric(&format!("vmlat-{p}"), "us/op", false, "uperf vmlat ", p))
                .collect(),
        ),
    ];
    // fos's transport (issue 12): lib/msg's channel in user space over MAP_SHARED pages with
    // futex wake-ups (usr/reef_msg.h), the same code on both systems, and pipes and AF_UNIX
    // socket pairs for reference; the mbox modes run the channel through a kernel mailbox connection on Reef, the grant
    // modes carry 4 KiB by reference (on Reef through a kernel grant).
    for (name, mode, unit, higher) in [
        ("msg-rtt", "msgrtt", "ns/rt", false),
        ("msg-tput", "msgtput", "msgs/s", true),
        ("msg-mbox-rtt", "mboxrtt", "ns/rt", false),
        ("msg-mbox-tput", "mboxtput", "msgs/s", true),
        ("msg-pipe-rtt", "pipertt", "ns/rt", false),
        ("msg-sock-rtt", "sockrtt", "ns/rt", false),
        ("msg-grant-rtt", "grantrtt", "ns/rt", false),
        ("msg-grant-tput", "granttput", "msgs/s", true),
        // LibrettOS (issue 15): a TCP round trip over 127.0.0.1 between two processes (on Reef
        // two stack instances joined by the kernel's switch).
        ("net-lo-rtt", "tcprtt", "ns/rt", false),
    ] {
        let prefix: &'static str = match mode {
            "msgrtt" => "uperf msgrtt ",
            "msgtput" => "uperf msgtput ",
            "mboxrtt" => "uperf mboxrtt ",
            "mboxtput" => "uperf mboxtput ",
            "pipertt" => "uperf pipertt ",
            "sockrtt" => "uperf sockrtt ",
            "tcprtt" => "uperf tcprtt ",
            "grantrtt" => "uperf grantrtt ",
            _ => "uperf granttput ",
        };
        b.push(uperf(
            effort,
            name,
            &[mode],
            vec![result_metric(name, unit, higher, prefix, "median")],
        ));
    }
    // LibrettOS (issue 15): NetPIPE's ping-pong through the NIC (virtio-net on QEMU user
    // networking) with an echo server on the host, 64 B to 256 KiB per message, and bulk
    // throughput to a sink on the host, in each of Reef's network modes: `nic` the kernel's switch, `server` through netd (which uperf
    // starts first), `direct` library mode on a second NIC (both systems get it). Linux runs
    // the same command with its one stack.
    for (kind, mode) in [
        ("nic", "kernel"),
        ("server", "server"),
        ("direct", "direct"),
    ] {
        for (size_name, size) in [
            ("64", "64"),
            ("1k", "1024"),
            ("64k", "65536"),
            ("256k", "262144"),
        ] {
            let name = format!("net-{kind}-rtt-{size_name}");
            let mut bench = uperf(
                effort,
                &name,
                &["-n", mode, "echortt", "{echo}", size],
                vec![result_metric(
                    &name,
                    "ns/rt",
                    false,
                    "uperf echortt ",
                    "median",
                )],
            );
            bench.net_mode = Some(mode);
            b.push(bench);
        }
        // Bulk throughput in the same mode: 64 KiB writes to a sink on the host.
        let name = format!("net-{kind}-tput");
        let mut bench = uperf(
            effort,
            &name,
            &["-n", mode, "sinktput", "{sink}"],
            vec![result_metric(
                &name,
                "MB/s",
                true,
                "uperf sinktput ",
                "median",
            )],
        );
        bench.net_mode = Some(mode);
        b.push(bench);
        // The request rate of busybox httpd in the same mode, under `ab` from the host.
        let name = format!("net-{kind}-http");
        b.push(Bench {
            argv: ["/test/uperf", "-n", mode, "httpd", &HTTP_PORT.to_string()]
                .map(String::from)
                .to_vec(),
            metrics: HTTP_CONCURRENCY
                .iter()
                .enumerate()
                .map(|(i, c)| Metric {
                    name: format!("{name}-c{c}"),
                    unit: "req/s",
                    higher_is_better: true,
                    source: Source::Host(i),
                })
                .collect(),
            name,
            variants: reef_and_linux(),
            net_mode: Some(mode),
            host_load: Some(HostLoad::Http {
                requests: effort.http_requests,
                concurrency: &HTTP_CONCURRENCY,
            }),
        });
    }
    // LibrettOS's dynamic switch (Reef only): a 64-byte ping-pong with the host's echo server
    // while another thread moves the instance between server and library mode.
    b.push(Bench {
        name: "net-switch".into(),
        argv: ["/test/uperf", "-n", "server", "switch", "{echo}", "20"]
            .map(String::from)
            .to_vec(),
        metrics: vec![
            result_metric(
                "net-switch-to-direct",
                "us",
                false,
                "uperf switch-to-direct ",
                "median",
            ),
            result_metric(
                "net-switch-to-server",
                "us",
                false,
                "uperf switch-to-server ",
                "median",
            ),
            result_metric(
                "net-switch-pause",
                "us",
                false,
                "uperf switch-pause ",
                "median",
            ),
            result_metric(
                "net-switch-pause-max",
                "us",
                false,
                "uperf switch-pause ",
                "max",
            ),
        ],
        variants: vec![Variant::plain(System::Reef)],
        net_mode: Some("server"),
        host_load: None,
    });
    // Barrelfish/DC (issue 14): stopping and starting a core (reef_core_ctl) against Linux
    // CPU hotplug, with the other cores idle and with each of them busy; two cores at least.
    for (name, busy) in [("core", "0"), ("core-busy", "1")] {
        let mut bench = uperf(
            effort,
            name,
            &["corectl", busy],
            vec![
                result_metric(
                    &format!("{name}-stop"),
                    "us",
                    false,
                    "uperf core-stop ",
                    "median",
                ),
                result_metric(
                    &format!("{name}-start"),
                    "us",
                    false,
                    "uperf core-start ",
                    "median",
                ),
            ],
        );
        for v in &mut bench.variants {
            v.min_cores = 2;
        }
        b.push(bench);
    }
    // Parking (Barrelfish/DC §4.6, Fig. 4b; Reef only): the last core's KCB parked on core 0
    // and unparked while a loop pinned there reads the clock, with core 0 idle and busy.
    let rounds = effort.park_rounds.to_string();
    for (name, busy) in [("core-park", "0"), ("core-park-busy", "1")] {
        let mut bench = uperf(
            effort,
            name,
            &["park", busy, &rounds],
            [
                ("call", "uperf park-call ", "median"),
                ("unpark-call", "uperf unpark-call ", "median"),
                ("pause", "uperf park-pause ", "median"),
                ("pause-max", "uperf park-pause ", "max"),
                ("unpark-pause", "uperf unpark-pause ", "median"),
                ("parked-gap", "uperf parked-gap ", "median"),
            ]
            .into_iter()
            .map(|(m, prefix, key)| result_metric(&format!("{name}-{m}"), "us", false, prefix, key))
            .collect(),
        );
        bench.variants = vec![Variant::plain(System::Reef)];
        for v in &mut bench.variants {
            v.min_cores = 2;
        }
        b.push(bench);
    }
    // Replacing a core's kernel (Barrelfish/DC §4.5; Reef only): the last core restarted in the
    // real-time image and back while a loop pinned there reads the clock.
    let mut update = uperf(
        effort,
        "core-update",
        &["update", "/boot/reef-rt", &rounds],
        [
            ("call", "uperf update-call ", "median"),
            ("pause", "uperf update-pause ", "median"),
            ("pause-max", "uperf update-pause ", "max"),
            ("back-call", "uperf update-back-call ", "median"),
            ("back-pause", "uperf update-back-pause ", "median"),
        ]
        .into_iter()
        .map(|(m, prefix, key)| {
            result_metric(&format!("core-update-{m}"), "us", false, prefix, key)
        })
        .collect(),
    );
    update.variants = vec![Variant::plain(System::Reef)];
    for v in &mut update.variants {
        v.min_cores = 2;
    }
    b.push(update);
    // The gaps a busy loop pinned to the last core sees (Barrelfish/DC §5.3), the baseline
    // for a real-time kernel image: Reef's normal kernel against Linux under SCHED_FIFO.
    let jitter_s = effort.jitter_s.to_string();
    b.push(uperf(
        effort,
        "core-jitter",
        &["jitter", &jitter_s],
        vec![
            result_metric("core-jitter-max", "us", false, "uperf jitter ", "max"),
            result_metric("core-jitter-p9999", "us", false, "uperf jitter ", "p9999"),
        ],
    ));
    // The same loop alone on the real-time image (Barrelfish/DC §5.3, Reef: the last core
    // restarted in /boot/reef-rt with the loop's process its only owner; Linux as above).
    let mut rt = uperf(
        effort,
        "core-jitter-rt",
        &["jitter", &jitter_s, "/boot/reef-rt"],
        vec![
            result_metric("core-jitter-rt-max", "us", false, "uperf jitter ", "max"),
            result_metric(
                "core-jitter-rt-p9999",
                "us",
                false,
                "uperf jitter ",
                "p9999",
            ),
        ],
    );
    for v in &mut rt.variants {
        v.min_cores = 2;
    }
    b.push(rt);
    for mode in ["shared", "private"] {
        for &w in effort.write_pcts {
            let name = format!("fs-{mode}-w{w}");
            b.push(Bench {
                name: name.clone(),
                argv: [
                    "/test/fsbench",
                    "-w",
                    &w.to_string(),
                    "-s",
                    mode,
                    "-d",
                    &effort.fsbench_s.to_string(),
                ]
                .iter()
                .map(|s| s.to_string())
                .collect(),
                metrics: vec![result_metric(
                    &name,
                    "ops/s",
                    true,
                    "fsbench ",
                    "ops_per_sec",
                )],
                variants: reef_and_linux(),
                net_mode: None,
                host_load: None,
            });
        }
    }
    // Hare (issue 13): Table 5.1's workloads (usr/fsload.c), a process per core, in /tmp:
    // Hare mounted there by onhare, NR-FS, Linux tmpfs.
    for (workload, prefix) in FSLOAD_WORKLOADS {
        let name = format!("hare-{workload}");
        b.push(Bench {
            name: name.clone(),
            argv: fsload(effort, workload, "{cores}"),
            metrics: vec![result_metric(&name, "ops/s", true, prefix, "ops_per_sec")],
            variants: hare_variants(),
            net_mode: None,
            host_load: None,
        });
    }
    // The latency of one rename by one process (the thesis's 7.2 us on one core, 4.2 us with
    // the server on another): Hare on one core (1c1n's timeshare) and split.
    b.push(Bench {
        name: "hare-rename-latency".into(),
        argv: fsload(effort, "renames", "1"),
        metrics: vec![result_metric(
            "hare-rename-latency",
            "us/op",
            false,
            "fsload renames ",
            "us_per_op",
        )],
        variants: hare_variants()
            .into_iter()
            .filter(|v| !v.largest_only)
            .collect(),
        net_mode: None,
        host_load: None,
    });
    // Debian's programs (issue 16), from the Debian image on both systems: Python's start-up,
    // an SQLite run (usr/debian/sqlite.sh: 100 000 rows in ten transactions, queries) and
    // `make -j4` of usr/debian/make.sh's shell-rule project (sixteen gawk parts, summaries).
    let run = |name: &str, iters: &str, reps: &str, cmd: &[&str], metric: &str| {
        let mut argv: Vec<String> = ["/test/uperf", "run", iters, reps]
            .iter()
            .map(|w| w.to_string())
            .collect();
        argv.extend(cmd.iter().map(|w| w.to_string()));
        Bench {
            name: name.into(),
            argv,
            metrics: vec![result_metric(
                metric,
                "ms/run",
                false,
                "uperf run ",
                "median",
            )],
            variants: reef_and_linux(),
            net_mode: None,
            host_load: None,
        }
    };
    let quick = effort.jitter_s < FULL.jitter_s;
    b.push(run(
        "debian-python",
        if quick { "2" } else { "5" },
        "3",
        &["/usr/bin/python3", "-c", "pass"],
        "python-start",
    ));
    b.push(run(
        "debian-sqlite",
        "1",
        "3",
        &["/bin/sh", "/test/debian/sqlite.sh"],
        "sqlite-run",
    ));
    b.push(run(
        "debian-make",
        if quick { "2" } else { "5" },
        "3",
        &[
            "/bin/sh",
            "/test/debian/make.sh",
            "bench",
            "/tmp/make.bench",
        ],
        "make-j4",
    ));
    b
}

/// `fsload WORKLOAD -p PROCS` in `/tmp` for the effort's duration.
fn fsload(effort: Effort, workload: &str, procs: &str) -> Vec<String> {
    let d = effort.fsload_s.to_string();
    ["/test/fsload", workload, "-p", procs, "-d", &d, "/tmp"]
        .iter()
        .map(|s| s.to_string())
        .collect()
}

/// fsload's workloads and their result lines.
const FSLOAD_WORKLOADS: [(&str, &str); 12] = [
    ("creates", "fsload creates "),
    ("writes", "fsload writes "),
    ("renames", "fsload renames "),
    ("directories", "fsload directories "),
    ("rm-dense", "fsload rm-dense "),
    ("rm-sparse", "fsload rm-sparse "),
    ("pfind-dense", "fsload pfind-dense "),
    ("pfind-sparse", "fsload pfind-sparse "),
    ("mailbench", "fsload mailbench "),
    ("fsstress", "fsload fsstress "),
    ("punzip", "fsload punzip "),
    ("grow", "fsload grow "),
];

/// The name of the host benchmark (node replication library) in NAME filters and metrics.
const NR_BENCH: &str = "nr-bench";

/// Whether benchmark `name` is selected by `filters` (empty: all): a filter selects the name
/// itself and every name that continues it with `-` (`fs` selects `fs-shared-w0`).
pub fn selected(name: &str, filters: &[String]) -> bool {
    filters.is_empty()
        || filters.iter().any(|f| {
            name == f
                || name
                    .strip_prefix(f.as_str())
                    .is_some_and(|rest| rest.starts_with('-'))
        })
}

// ---- one run ----

/// A finished QEMU run: its output with the time each piece arrived.
struct Timed {
    /// Raw stdout bytes.
    raw: Vec<u8>,
    /// (length of `raw` after a read, time since the start) for every read.
    arrivals: Vec<(usize, Duration)>,
    /// stderr.
    stderr: String,
    /// How QEMU ended.
    end: End,
    /// Time from QEMU's start to its exit.
    wall: Duration,
    /// The host's measurements ([`HostLoad`]), or why there are none.
    host: Result<Vec<Result<f64, String>>, String>,
}

/// The time at which the byte at `offset` (exclusive end) had arrived.
pub fn arrival(arrivals: &[(usize, Duration)], offset: usize) -> Option<Duration> {
    arrivals
        .iter()
        .find(|(len, _)| *len >= offset)
        .map(|&(_, t)| t)
}

impl Timed {
    /// The output, carriage returns removed, then stderr.
    fn log(&self) -> String {
        format!("{}{}", String::from_utf8_lossy(&self.raw), self.stderr).replace('\r', "")
    }

    /// When `text` first appeared on the serial output.
    fn seen(&self, text: &str) -> Option<Duration> {
        let at = self
            .raw
            .windows(text.len())
            .position(|w| w == text.as_bytes())?;
        arrival(&self.arrivals, at + text.len())
    }
}

/// What the output reader has gathered: the bytes, and (length, time) of every read.
type Output = Arc<Mutex<(Vec<u8>, Vec<(usize, Duration)>)>>;

/// Runs `cmd`, recording when each piece of its stdout arrives; with a `load`, the host runs
/// it against `port` (the forwarded port) meanwhile.
fn run_timed(
    cmd: Command,
    limit: Duration,
    load: Option<(&HostLoad, u16)>,
) -> Result<Timed, String> {
    let stdin = if load.is_some() {
        Stdio::piped()
    } else {
        Stdio::null()
    };
    let (mut child, start) = spawn_piped(cmd, stdin)?;
    let out: Output = Arc::new(Mutex::new((Vec::new(), Vec::new())));
    let mut stdout = child.stdout.take().expect("piped");
    let reader = {
        let out = Arc::clone(&out);
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n) = stdout.read(&mut buf) {
                if n == 0 {
                    break;
                }
                let t = start.elapsed();
                let mut o = out.lock().expect("output lock");
                o.0.extend_from_slice(&buf[..n]);
                let len = o.0.len();
                o.1.push((len, t));
            }
        })
    };
    let mut stderr = child.stderr.take().expect("piped");
    let err_reader = std::thread::spawn(move || {
        let mut s = Vec::new();
        let _ = stderr.read_to_end(&mut s);
        String::from_utf8_lossy(&s).into_owned()
    });
    let exited = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let driver = load.map(|(load, port)| {
        let (load, out, exited) = (load.clone(), Arc::clone(&out), Arc::clone(&exited));
        let stdin = child.stdin.take().expect("piped");
        std::thread::spawn(move || drive(&load, port, &out, &exited, stdin))
    });
    let end = wait_for_exit(&mut child, start, limit, || {});
    exited.store(true, std::sync::atomic::Ordering::Relaxed);
    let host = match driver {
        None => Ok(Vec::new()),
        Some(d) => d
            .join()
            .unwrap_or_else(|_| Err("the host's load panicked".into())),
    };
    let end = end?;
    let wall = start.elapsed();
    let _ = reader.join();
    let stderr = err_reader.join().unwrap_or_default();
    let (raw, arrivals) = std::mem::take(&mut *out.lock().expect("output lock"));
    Ok(Timed {
        raw,
        arrivals,
        stderr,
        end,
        wall,
        host,
    })
}

/// The host's side of a run with a [`HostLoad`]: waits until the guest's output shows that it
/// is ready (or QEMU has exited), measures, and types `done` on the serial console.
fn drive(
    load: &HostLoad,
    port: u16,
    out: &Output,
    exited: &std::sync::atomic::AtomicBool,
    mut stdin: std::process::ChildStdin,
) -> Result<Vec<Result<f64, String>>, String> {
    use std::io::Write;
    let HostLoad::Http {
        requests,
        concurrency,
    } = load;
    let ready = b"uperf: httpd ready";
    while !out
        .lock()
        .expect("output lock")
        .0
        .windows(ready.len())
        .any(|w| w == ready)
    {
        if exited.load(std::sync::atomic::Ordering::Relaxed) {
            return Err("the guest never said `uperf: httpd ready`".into());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let url = format!("http://127.0.0.1:{port}/index.html");
    let warm = ab(&url, 20, 1).map(|_| ());
    let values = concurrency
        .iter()
        .map(|&c| {
            warm.clone()
                .map_err(|e| format!("warm-up: {e}"))
                .and_then(|()| ab(&url, *requests, c))
        })
        .collect();
    stdin
        .write_all(b"done\r")
        .map_err(|e| format!("cannot type done on the guest's console: {e}"))?;
    Ok(values)
}

/// `ab -n requests -c concurrency url`: requests per second, an error if any request failed
/// or was not answered with a 2xx status.
fn ab(url: &str, requests: u32, concurrency: u32) -> Result<f64, String> {
    let out = Command::new(deps::AB.program)
        .args(["-q", "-s", "30", "-n", &requests.to_string()])
        .args(["-c", &concurrency.to_string(), url])
        .output()
        .map_err(|e| format!("cannot run ab: {e}"))?;
    let text = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        return Err(format!(
            "ab -c {concurrency} failed: {}",
            err.lines().last().unwrap_or("no message")
        ));
    }
    ab_rate(&text, requests).map_err(|e| format!("ab -c {concurrency}: {e}"))
}

/// Requests per second from `ab`'s report, checking that all `requests` completed, none
/// failed and none had a non-2xx status.
pub fn ab_rate(report: &str, requests: u32) -> Result<f64, String> {
    let field = |name: &str| {
        report
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.split_whitespace().next())
    };
    let complete = field("Complete requests:").ok_or("no `Complete requests` line")?;
    if complete != requests.to_string() {
        return Err(format!("{complete} of {requests} requests completed"));
    }
    if let Some(n) = field("Failed requests:").filter(|&n| n != "0") {
        return Err(format!("{n} failed requests"));
    }
    if let Some(n) = field("Non-2xx responses:") {
        return Err(format!("{n} non-2xx responses"));
    }
    field("Requests per second:")
        .ok_or("no `Requests per second` line")?
        .parse()
        .map_err(|_| "`Requests per second` is not a number".to_string())
}

/// `key=VALUE` of the first line of `log` that starts with `prefix`.
pub fn result_value(log: &str, prefix: &str, key: &str) -> Result<f64, String> {
    let line = log
        .lines()
        .find(|l| l.starts_with(prefix))
        .ok_or_else(|| format!("no result line `{}...`", prefix.trim_end()))?;
    line.split_whitespace()
        .find_map(|w| w.strip_prefix(key)?.strip_prefix('='))
        .ok_or_else(|| format!("result line has no {key}=: {line}"))?
        .parse()
        .map_err(|_| format!("{key}= is not a number in: {line}"))
}

/// The line that best says why a run failed: an error, a FAIL line, Reef's list of
/// unimplemented system calls, a panic; else the last line.
pub fn failure_line(log: &str) -> String {
    let lines: Vec<&str> = log
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    let telling = |l: &&&str| {
        l.contains("error")
            || l.starts_with("FAIL")
            || l.contains("sanity FAILED")
            || l.contains("panic")
            || (l.starts_with("reef: unimplemented syscalls:") && !l.ends_with("none"))
    };
    lines
        .iter()
        .find(telling)
        .or(lines.last())
        .map_or_else(|| "no output".to_string(), |l| l.to_string())
}

/// Whether uperf's `uperf: net instance mode=MODE...` line in `log` shows its stack instance
/// in network mode `mode` (`server` is `server/SLOT`, `direct` is `direct/NIC@ADDRESS`): a
/// run that measured another mode is a failure, not a value.
fn net_mode_shown(log: &str, mode: &str) -> Result<(), String> {
    let shown = log
        .lines()
        .find_map(|l| l.strip_prefix("uperf: net instance mode="))
        .and_then(|rest| rest.split_whitespace().next())
        .ok_or("uperf did not show its stack instance's network mode")?;
    match shown.strip_prefix(mode) {
        Some(rest) if rest.is_empty() || rest.starts_with(['/', '@']) => Ok(()),
        _ => Err(format!(
            "uperf's stack instance was in mode {shown}, not {mode}"
        )),
    }
}

/// The values of `bench`'s metrics from one run on `system` (each, or why it has none), or
/// why the run gave none.
fn values(bench: &Bench, system: System, run: &Timed) -> Result<Vec<Result<f64, String>>, String> {
    let log = run.log();
    match run.end {
        End::TimedOut => {
            return Err(format!(
                "no exit within {} s; last: {}",
                LIMIT.as_secs(),
                failure_line(&log)
            ))
        }
        End::Exited(_) | End::Signaled(_) => {}
    }
    match system.exit_status(&log) {
        Some(0) => {}
        Some(n) => return Err(format!("exit status {n}: {}", failure_line(&log))),
        None => {
            return Err(format!(
                "the command did not finish (QEMU {:?}): {}",
                run.end,
                failure_line(&log)
            ))
        }
    }
    if let (System::Reef, Some(mode)) = (system, bench.net_mode) {
        net_mode_shown(&log, mode)?;
    }
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    Ok(bench
        .metrics
        .iter()
        .map(|m| match &m.source {
            Source::Result { prefix, key } => result_value(&log, prefix, key),
            Source::InitLine { reef } => {
                let marker = match system {
                    System::Reef => reef,
                    System::Linux => linux::INIT_MARKER,
                };
                run.seen(marker)
                    .map(ms)
                    .ok_or_else(|| format!("init's first line {marker:?} never appeared"))
            }
            Source::Exit => Ok(ms(run.wall)),
            Source::Host(i) => match &run.host {
                Ok(v) => v
                    .get(*i)
                    .cloned()
                    .unwrap_or_else(|| Err("the host measured nothing".into())),
                Err(e) => Err(e.clone()),
            },
        })
        .collect())
}

// ---- results ----

/// One value of one run.
#[derive(Clone, Debug, PartialEq)]
pub struct Sample {
    /// `reef`, `linux`, or a system of the host benchmark.
    pub system: String,
    /// Metric name.
    pub bench: String,
    /// Configuration label (`2c1n`; `2t1r` for the host benchmark: threads, replicas).
    pub config: String,
    /// Run number, from 1.
    pub run: usize,
    /// The value, or why the run gave none.
    pub value: Result<f64, String>,
    /// Unit of the value.
    pub unit: String,
    /// Whether a higher value is better.
    pub higher_is_better: bool,
}

/// Minimum, median (the mean of the two middle values for an even count) and maximum.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Stats {
    /// Smallest value.
    pub min: f64,
    /// Median.
    pub median: f64,
    /// Largest value.
    pub max: f64,
}

/// The statistics of `values`, `None` when there are none.
pub fn stats(values: &[f64]) -> Option<Stats> {
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    let median = match n {
        0 => return None,
        _ if n % 2 == 1 => v[n / 2],
        _ => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    };
    Some(Stats {
        min: v[0],
        median,
        max: v[n - 1],
    })
}

/// The ratios `a / b` of the runs both systems completed, paired by run number.
pub fn paired_ratios(samples: &[Sample], bench: &str, config: &str, a: &str, b: &str) -> Vec<f64> {
    let value = |system: &str, run: usize| {
        samples
            .iter()
            .find(|s| s.system == system && s.bench == bench && s.config == config && s.run == run)
            .and_then(|s| s.value.as_ref().ok().copied())
    };
    let mut runs: Vec<usize> = samples
        .iter()
        .filter(|s| s.bench == bench && s.config == config)
        .map(|s| s.run)
        .collect();
    runs.sort_unstable();
    runs.dedup();
    runs.into_iter()
        .filter_map(|r| Some(value(a, r)? / value(b, r)?))
        .filter(|r| r.is_finite())
        .collect()
}

/// A CSV field, quoted when it holds a comma, quote or line break.
fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// Every sample as CSV: `system,benchmark,configuration,run,value,unit,note` (a failed run has
/// no value and its reason in `note`).
pub fn csv(samples: &[Sample]) -> String {
    let mut out = String::from("system,benchmark,configuration,run,value,unit,note\n");
    for s in samples {
        let (value, note) = match &s.value {
            Ok(v) => (format!("{v}"), String::new()),
            Err(why) => (String::new(), format!("failed: {why}")),
        };
        let fields = [
            s.system.clone(),
            s.bench.clone(),
            s.config.clone(),
            s.run.to_string(),
            value,
            s.unit.clone(),
            note,
        ];
        let line: Vec<String> = fields.iter().map(|f| csv_field(f)).collect();
        out.push_str(&line.join(","));
        out.push('\n');
    }
    out
}

/// The distinct values of `f` over `samples`, in order of first appearance.
fn distinct<'a>(samples: &'a [Sample], f: impl Fn(&'a Sample) -> &'a str) -> Vec<&'a str> {
    let mut out: Vec<&str> = Vec::new();
    for s in samples {
        let v = f(s);
        if !out.contains(&v) {
            out.push(v);
        }
    }
    out
}

/// A number with three significant digits (or more before the point; millions as `12.3M`).
pub fn num(v: f64) -> String {
    let a = v.abs();
    if a >= 1e6 {
        format!("{:.1}M", v / 1e6)
    } else if a >= 100.0 || a == 0.0 {
        format!("{v:.0}")
    } else if a >= 10.0 {
        format!("{v:.1}")
    } else if a >= 1.0 {
        format!("{v:.2}")
    } else {
        format!("{v:.3}")
    }
}

/// A ratio with two decimals, or two significant digits below 0.1 (a stop 1000 times faster
/// than Linux's is `0.0012`, not `0.00`).
pub fn ratio_text(v: f64) -> String {
    if v >= 0.1 || v <= 0.0 || !v.is_finite() {
        format!("{v:.2}")
    } else {
        let decimals = (-v.log10().floor()) as usize + 1;
        format!("{v:.decimals$}")
    }
}

/// `median (min–max)` of one system's runs of a point, or what failed.
fn cell(samples: &[Sample], system: &str, bench: &str, config: &str) -> String {
    let runs: Vec<&Sample> = samples
        .iter()
        .filter(|s| s.system == system && s.bench == bench && s.config == config)
        .collect();
    let ok: Vec<f64> = runs.iter().filter_map(|s| s.value.clone().ok()).collect();
    let failed: Vec<&String> = runs.iter().filter_map(|s| s.value.as_ref().err()).collect();
    let mut text = match stats(&ok) {
        Some(s) if ok.len() == 1 => num(s.median),
        Some(s) => format!("{} ({}–{})", num(s.median), num(s.min), num(s.max)),
        None => String::new(),
    };
    if let Some(why) = failed.first() {
        if !text.is_empty() {
            text.push_str("; ");
        }
        let why = why.replace('|', "\\|");
        let _ = write!(
            text,
            "**failed** {}/{} runs: {why}",
            failed.len(),
            runs.len()
        );
    }
    if runs.is_empty() {
        text.push_str("not run");
    }
    text
}

/// [`ratio_table`] of `a` against `b` at the points (metric, configuration) where `a` ran;
/// empty if it ran nowhere.
pub fn pair_table(samples: &[Sample], a: &str, b: &str) -> String {
    let ran = |s: &Sample| {
        samples
            .iter()
            .any(|x| x.system == a && x.bench == s.bench && x.config == s.config)
    };
    let pair: Vec<Sample> = samples
        .iter()
        .filter(|s| s.system == a || (s.system == b && ran(s)))
        .cloned()
        .collect();
    if pair.is_empty() {
        return String::new();
    }
    ratio_table(&pair, a, b)
}

/// A markdown table comparing system `a` with `b` for every metric and configuration of
/// `samples`: each one's median (min–max) and the ratio a/b of paired runs (median, min, max).
pub fn ratio_table(samples: &[Sample], a: &str, b: &str) -> String {
    let mut out = format!(
        "| benchmark | config | unit | better | {a} median (min–max) | {b} median (min–max) | \
         {a}/{b} median | min | max |\n|---|---|---|---|---|---|---|---|---|\n"
    );
    for bench in distinct(samples, |s| &s.bench) {
        let of_bench: Vec<Sample> = samples
            .iter()
            .filter(|s| s.bench == bench)
            .cloned()
            .collect();
        let first = &of_bench[0];
        for config in distinct(&of_bench, |s| &s.config) {
            let ratio = stats(&paired_ratios(samples, bench, config, a, b));
            let (med, lo, hi) = ratio.map_or(("–".into(), "–".into(), "–".into()), |r| {
                (ratio_text(r.median), ratio_text(r.min), ratio_text(r.max))
            });
            let _ = writeln!(
                out,
                "| {bench} | {config} | {} | {} | {} | {} | {med} | {lo} | {hi} |",
                first.unit,
                if first.higher_is_better {
                    "higher"
                } else {
                    "lower"
                },
                cell(samples, a, bench, config),
                cell(samples, b, bench, config),
            );
        }
    }
    out
}

// ---- plots ----

const COLORS: [&str; 8] = [
    "#1b9e77", "#d95f02", "#7570b3", "#e7298a", "#66a61e", "#e6ab02", "#a6761d", "#666666",
];

/// Escapes text for SVG.
fn xml(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// A "nice" upper end of an axis from 0 that holds `max`: 1, 2 or 5 times a power of ten.
pub fn axis_top(max: f64) -> f64 {
    if max <= 0.0 || !max.is_finite() {
        return 1.0;
    }
    let p = 10f64.powf(max.log10().floor());
    [1.0, 2.0, 5.0, 10.0]
        .into_iter()
        .map(|m| m * p)
        .find(|&t| t >= max)
        .unwrap_or(10.0 * p)
}

/// An SVG line plot of one metric: the value against the configuration (x, in the order of
/// `samples`), one line per system through the medians, a bar from min to max at each point,
/// and a note under the axis for every point where a system failed.
pub fn svg(samples: &[Sample], bench: &str) -> String {
    const W: f64 = 600.0;
    const H: f64 = 360.0;
    const LEFT: f64 = 70.0;
    const RIGHT: f64 = 170.0;
    const TOP: f64 = 40.0;
    const BOTTOM: f64 = 70.0;
    let of: Vec<Sample> = samples
        .iter()
        .filter(|s| s.bench == bench)
        .cloned()
        .collect();
    let configs = distinct(&of, |s| &s.config);
    let systems = distinct(&of, |s| &s.system);
    let unit = of.first().map_or("", |s| s.unit.as_str());
    let better = match of.first() {
        Some(s) if s.higher_is_better => "higher is better",
        Some(_) => "lower is better",
        None => "",
    };
    let top = axis_top(
        of.iter()
            .filter_map(|s| s.value.clone().ok())
            .fold(0.0, f64::max),
    );
    let (pw, ph) = (W - LEFT - RIGHT, H - TOP - BOTTOM);
    let x = |i: usize| LEFT + pw * (i as f64 + 0.5) / configs.len().max(1) as f64;
    let y = |v: f64| TOP + ph * (1.0 - v / top);
    let mut o = String::new();
    let _ = writeln!(
        o,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" viewBox="0 0 {W} {H}" font-family="sans-serif" font-size="12">"#
    );
    let _ = writeln!(o, r#"<rect width="{W}" height="{H}" fill="white"/>"#);
    let _ = writeln!(
        o,
        r#"<text x="{}" y="22" text-anchor="middle" font-size="14">{} ({}, {better})</text>"#,
        LEFT + pw / 2.0,
        xml(bench),
        xml(unit)
    );
    for i in 0..=4 {
        let v = top * i as f64 / 4.0;
        let _ = writeln!(
            o,
            r##"<line x1="{LEFT}" y1="{0:.1}" x2="{1}" y2="{0:.1}" stroke="#ddd"/><text x="{2}" y="{3:.1}" text-anchor="end">{4}</text>"##,
            y(v),
            LEFT + pw,
            LEFT - 6.0,
            y(v) + 4.0,
            num(v)
        );
    }
    let _ = writeln!(
        o,
        r#"<line x1="{LEFT}" y1="{TOP}" x2="{LEFT}" y2="{0}" stroke="black"/><line x1="{LEFT}" y1="{0}" x2="{1}" y2="{0}" stroke="black"/>"#,
        TOP + ph,
        LEFT + pw
    );
    for (i, c) in configs.iter().enumerate() {
        let _ = writeln!(
            o,
            r#"<text x="{:.1}" y="{}" text-anchor="middle">{}</text>"#,
            x(i),
            TOP + ph + 16.0,
            xml(c)
        );
    }
    let mut notes = Vec::new();
    for (k, system) in systems.iter().enumerate() {
        let color = COLORS[k % COLORS.len()];
        let mut points = Vec::new();
        for (i, c) in configs.iter().enumerate() {
            let runs: Vec<&Sample> = of
                .iter()
                .filter(|s| s.system == *system && s.config == *c)
                .collect();
            let ok: Vec<f64> = runs.iter().filter_map(|s| s.value.clone().ok()).collect();
            if runs.iter().any(|s| s.value.is_err()) {
                notes.push(format!("{system} failed at {c}"));
            }
            let Some(s) = stats(&ok) else { continue };
            let _ = writeln!(
                o,
                r#"<line x1="{0:.1}" y1="{1:.1}" x2="{0:.1}" y2="{2:.1}" stroke="{color}" stroke-width="2"/><line x1="{3:.1}" y1="{1:.1}" x2="{4:.1}" y2="{1:.1}" stroke="{color}"/><line x1="{3:.1}" y1="{2:.1}" x2="{4:.1}" y2="{2:.1}" stroke="{color}"/>"#,
                x(i),
                y(s.min),
                y(s.max),
                x(i) - 4.0,
                x(i) + 4.0
            );
            let _ = writeln!(
                o,
                r#"<circle cx="{:.1}" cy="{:.1}" r="3.5" fill="{color}"/>"#,
                x(i),
                y(s.median)
            );
            points.push(format!("{:.1},{:.1}", x(i), y(s.median)));
        }
        if points.len() > 1 {
            let _ = writeln!(
                o,
                r#"<polyline points="{}" fill="none" stroke="{color}" stroke-width="1.5"/>"#,
                points.join(" ")
            );
        }
        let ly = TOP + 10.0 + 18.0 * k as f64;
        let _ = writeln!(
            o,
            r#"<line x1="{0}" y1="{ly}" x2="{1}" y2="{ly}" stroke="{color}" stroke-width="3"/><text x="{2}" y="{3}">{4}</text>"#,
            W - RIGHT + 15.0,
            W - RIGHT + 35.0,
            W - RIGHT + 40.0,
            ly + 4.0,
            xml(system)
        );
    }
    let _ = writeln!(
        o,
        r##"<text x="{}" y="{}" text-anchor="middle" fill="#555">configuration; dot: median, bar: min–max</text>"##,
        LEFT + pw / 2.0,
        TOP + ph + 34.0
    );
    for (i, n) in notes.iter().enumerate() {
        let _ = writeln!(
            o,
            r##"<text x="{LEFT}" y="{}" fill="#c00">{}</text>"##,
            TOP + ph + 50.0 + 14.0 * i as f64,
            xml(n)
        );
    }
    o.push_str("</svg>\n");
    o
}

// ---- progress ----

/// The seconds the `remaining` jobs should take, from the durations of the jobs done: each job
/// is expected to take as long as the mean of the done jobs with its key (the same system,
/// benchmark and configuration), else the mean of all done jobs.
pub fn estimate_left(done: &[(String, f64)], remaining: &[String]) -> f64 {
    if done.is_empty() {
        return 0.0;
    }
    let overall = done.iter().map(|(_, t)| t).sum::<f64>() / done.len() as f64;
    remaining
        .iter()
        .map(|key| {
            let same: Vec<f64> = done
                .iter()
                .filter(|(k, _)| k == key)
                .map(|&(_, t)| t)
                .collect();
            if same.is_empty() {
                overall
            } else {
                same.iter().sum::<f64>() / same.len() as f64
            }
        })
        .sum()
}

/// `1h02m`, `3m05s`, `42s`.
pub fn duration_text(secs: f64) -> String {
    let s = secs.max(0.0).round() as u64;
    if s >= 3600 {
        format!("{}h{:02}m", s / 3600, s % 3600 / 60)
    } else if s >= 60 {
        format!("{}m{:02}s", s / 60, s % 60)
    } else {
        format!("{s}s")
    }
}

// ---- the command ----

struct Options {
    quick: bool,
    runs: usize,
    out: Option<PathBuf>,
    filters: Vec<String>,
    /// `--configs`: the labels of the configurations to run (all if empty).
    configs: Vec<String>,
    /// `--variants`: the variants to run (all if empty).
    variants: Vec<String>,
}

/// A comma-separated list option's words.
fn list(option: &str, value: Option<&String>) -> Result<Vec<String>, String> {
    let v = value.ok_or_else(|| format!("{option} needs a comma-separated list"))?;
    let words: Vec<String> = v
        .split(',')
        .filter(|w| !w.is_empty())
        .map(String::from)
        .collect();
    if words.is_empty() {
        return Err(format!("{option} needs a comma-separated list"));
    }
    Ok(words)
}

fn parse(args: &[String]) -> Result<Options, String> {
    let mut o = Options {
        quick: false,
        runs: 0,
        out: None,
        filters: Vec::new(),
        configs: Vec::new(),
        variants: Vec::new(),
    };
    let mut i = 0;
    while i < args.len() {
        match args[i].as_str() {
            "--quick" => o.quick = true,
            "--runs" => {
                o.runs = crate::number("--runs", args.get(i + 1))? as usize;
                if o.runs == 0 {
                    return Err("--runs must be at least 1".into());
                }
                i += 1;
            }
            "--out" => {
                o.out = Some(PathBuf::from(
                    args.get(i + 1).ok_or("--out needs a folder")?,
                ));
                i += 1;
            }
            "--configs" => {
                o.configs = list("--configs", args.get(i + 1))?;
                i += 1;
            }
            "--variants" => {
                o.variants = list("--variants", args.get(i + 1))?;
                i += 1;
            }
            "-h" | "--help" => return Err(USAGE.into()),
            f if f.starts_with('-') => return Err(format!("unknown option '{f}'\n{USAGE}")),
            name => o.filters.push(name.to_string()),
        }
        i += 1;
    }
    if o.runs == 0 {
        o.runs = if o.quick { 1 } else { 3 };
    }
    Ok(o)
}

/// One QEMU boot to do.
struct Job<'a> {
    bench: &'a Bench,
    config: Config,
    run: usize,
    variant: &'a Variant,
}

impl Job<'_> {
    fn key(&self) -> String {
        format!(
            "{}/{}/{}",
            self.variant.name,
            self.bench.name,
            self.config.label()
        )
    }
}

/// The host's description for the summary: CPUs, CPU model, QEMU version.
fn host_description() -> String {
    let cpus = std::thread::available_parallelism().map_or(0, |n| n.get());
    let model = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|c| {
            c.lines()
                .find_map(|l| l.strip_prefix("model name"))
                .map(|l| l.trim_start_matches([' ', '\t', ':']).to_string())
        })
        .unwrap_or_else(|| "unknown".into());
    let qemu = Command::new("qemu-system-x86_64")
        .arg("--version")
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .and_then(|s| s.lines().next().map(str::to_string))
        .unwrap_or_else(|| "unknown".into());
    format!("{cpus} CPUs (`nproc`), CPU model \"{model}\", {qemu}")
}

/// Runs the host benchmark into `dir` and reads its CSV.
fn nr_bench(dir: &Path, quick: bool, runs: usize) -> Result<Vec<Sample>, String> {
    let mut cmd = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
    cmd.current_dir(build::root())
        .args(["run", "-q", "-p", "nr-bench", "--release", "--", "--out"])
        .arg(dir);
    if quick {
        cmd.arg("--quick");
    } else {
        cmd.args(["--runs", &runs.to_string()]);
    }
    let out = cmd
        .stderr(Stdio::inherit())
        .output()
        .map_err(|e| format!("cannot run cargo: {e}"))?;
    std::fs::write(dir.join("nr-bench.txt"), &out.stdout)
        .map_err(|e| format!("cannot write nr-bench.txt: {e}"))?;
    if !out.status.success() {
        return Err(format!("nr-bench failed ({})", out.status));
    }
    let csv_path = dir.join("nr-bench.csv");
    let text = std::fs::read_to_string(&csv_path)
        .map_err(|e| format!("cannot read {}: {e}", csv_path.display()))?;
    parse_nr_csv(&text)
}

/// nr-bench's CSV (`system,write_ratio,threads,replicas,run,ops_per_sec`, runs from 0) as
/// samples: metric `nr-bench-w<ratio>`, configuration `<threads>t<replicas>r`.
pub fn parse_nr_csv(text: &str) -> Result<Vec<Sample>, String> {
    let mut lines = text.lines();
    if lines.next() != Some("system,write_ratio,threads,replicas,run,ops_per_sec") {
        return Err("nr-bench.csv: unexpected header".into());
    }
    lines
        .filter(|l| !l.is_empty())
        .map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            let [system, wr, t, r, run, ops] = f[..] else {
                return Err(format!("nr-bench.csv: bad line {l:?}"));
            };
            let n = |s: &str| {
                s.parse::<f64>()
                    .map_err(|_| format!("nr-bench.csv: {s:?} is not a number in {l:?}"))
            };
            Ok(Sample {
                system: system.into(),
                bench: format!("{NR_BENCH}-w{wr}"),
                config: format!("{t}t{r}r"),
                run: n(run)? as usize + 1,
                value: Ok(n(ops)?),
                unit: "ops/s".into(),
                higher_is_better: true,
            })
        })
        .collect()
}

/// The markdown summary.
fn summary(
    vm: &[Sample],
    host: Option<&Result<Vec<Sample>, String>>,
    command: &str,
    machine_args: &str,
    host_text: &str,
    started: &str,
) -> String {
    let mut s = format!(
        "# Reef vs Linux\n\n\
         Command: `{command}`, started {started} (UTC), host: {host_text}.\n\n\
         Both systems boot in the same QEMU machine: `qemu-system-x86_64 {machine_args}` \
         (configuration `NcMn`: `-smp N`, M NUMA nodes, {MEMORY_MIB} MiB). Under TCG absolute \
         figures mean little (every guest instruction is emulated, guest cores are host threads \
         sharing the host's CPUs); ratios of runs measured together mean more.\n\n\
         Reef/Linux: ratio of run r on Reef to run r on Linux (booted one after the other), \
         median, min and max over the runs; `better` says which way is better for the metric.\n\n"
    );
    s.push_str(&ratio_table(vm, System::Reef.name(), System::Linux.name()));
    if vm.iter().any(|x| x.system.starts_with("reef-hare")) {
        s.push_str(
            "\n## Hare: Table 5.1's workloads\n\n\
             `usr/fsload.c`, a process per core, in `/tmp`: `reef-hare` is Reef with Hare \
             mounted there (`/test/onhare timeshare /tmp ...`: a file server time-sharing every \
             core), `reef-hare-split` with servers owning the odd cores (`onhare split`), \
             `reef` NR-FS (the rows `hare-*` of the table above), `linux` tmpfs; \
             `reef-hare-noX` is Hare (timeshare) at the largest configuration with mount option \
             `noX` (§5.4's ablations).\n",
        );
        for (a, b, title) in [
            ("reef-hare", "linux", "Hare (timeshare) / Linux tmpfs"),
            ("reef-hare-split", "linux", "Hare (split) / Linux tmpfs"),
            ("reef-hare", "reef", "Hare (timeshare) / NR-FS"),
            ("reef-hare-split", "reef-hare", "Hare split / timeshare"),
        ] {
            let _ = write!(s, "\n### {title}\n\n{}", pair_table(vm, a, b));
        }
        for a in HARE_ABLATIONS {
            let name = format!("reef-hare-{a}");
            let _ = write!(
                s,
                "\n### Hare with `{a}` / Hare\n\n{}",
                pair_table(vm, &name, "reef-hare")
            );
        }
    }
    s.push_str("\n## Node replication library on the host\n\n");
    match host {
        None => s.push_str("Not run (not selected by the NAME filter).\n"),
        Some(Ok(samples)) => {
            s.push_str(
                "`nr-bench` (65 536-key hash map, natively on the host, not in QEMU): these \
                 ratios are **nr / node-replication 0.1.1**, not Reef/Linux. Configuration \
                 `TtRr`: T threads, R replicas. Full output in `nr-bench/`.\n\n",
            );
            let pair: Vec<Sample> = samples
                .iter()
                .filter(|x| x.system == "nr" || x.system == "node-replication")
                .cloned()
                .collect();
            s.push_str(&ratio_table(&pair, "nr", "node-replication"));
        }
        Some(Err(e)) => {
            let _ = writeln!(s, "**failed**: {e}");
        }
    }
    s.push_str("\n## Plots\n\n");
    for bench in distinct(vm, |x| &x.bench) {
        let _ = writeln!(s, "- [{bench}]({bench}.svg)");
    }
    if let Some(Ok(samples)) = host {
        for bench in distinct(samples, |x| &x.bench) {
            let _ = writeln!(s, "- [{bench}]({bench}.svg)");
        }
    }
    s
}

/// The current time as `YYYY-MM-DD HH:MM`, from `date`.
fn now_text() -> String {
    Command::new("date")
        .args(["-u", "+%Y-%m-%d %H:%M"])
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|| "unknown".into())
}

fn write(path: &Path, text: &str) -> Result<(), String> {
    std::fs::write(path, text).map_err(|e| format!("cannot write {}: {e}", path.display()))
}

/// `cargo xtask bench`.
pub fn main(args: &[String]) -> Result<u8, String> {
    let o = parse(args)?;
    let effort = if o.quick { QUICK } else { FULL };
    let all_configs: &[Config] = if o.quick {
        &QUICK_CONFIGS
    } else {
        &FULL_CONFIGS
    };
    let configs: Vec<Config> = all_configs
        .iter()
        .copied()
        .filter(|c| o.configs.is_empty() || o.configs.contains(&c.label()))
        .collect();
    if let Some(c) = o
        .configs
        .iter()
        .find(|c| !all_configs.iter().any(|a| a.label() == **c))
    {
        return Err(format!("no configuration {c} in this run\n{USAGE}"));
    }
    let mut benches: Vec<Bench> = benches(effort)
        .into_iter()
        .filter(|b| selected(&b.name, &o.filters))
        .collect();
    if let Some(v) = o.variants.iter().find(|v| {
        !benches
            .iter()
            .any(|b| b.variants.iter().any(|x| x.name == **v))
    }) {
        return Err(format!(
            "no selected benchmark has the variant {v}\n{USAGE}"
        ));
    }
    if !o.variants.is_empty() {
        for b in &mut benches {
            b.variants.retain(|v| o.variants.contains(&v.name));
        }
        benches.retain(|b| !b.variants.is_empty());
    }
    let with_nr = selected(NR_BENCH, &o.filters);
    if benches.is_empty() && !with_nr {
        return Err(format!("no benchmark matches {:?}\n{USAGE}", o.filters));
    }
    let root = build::root();
    let out = o.out.clone().unwrap_or_else(|| {
        root.join(match (o.quick, o.filters.is_empty()) {
            (false, true) => "bench/results/latest",
            (true, _) => "out/bench/quick",
            (false, false) => "out/bench/partial",
        })
    });
    if out.exists() {
        std::fs::remove_dir_all(&out)
            .map_err(|e| format!("cannot clear {}: {e}", out.display()))?;
    }
    std::fs::create_dir_all(&out).map_err(|e| format!("cannot create {}: {e}", out.display()))?;
    let started = now_text();
    let command = std::iter::once("cargo xtask bench".to_string())
        .chain(args.iter().cloned())
        .collect::<Vec<_>>()
        .join(" ");

    deps::ensure(&[deps::QEMU, deps::QBOOT, deps::OBJCOPY])?;
    if benches.iter().any(|b| b.host_load.is_some()) {
        deps::ensure(&[deps::AB])?;
    }
    let reef_kernel = build::kernel()?.image;
    let reef_initrd = usr::initramfs()?;
    let linux_kernel = linux::kernel()?;
    let linux_initrd = linux::initramfs()?;
    // The Debian benchmarks boot both systems' initramfs with Debian's packages after it.
    let (reef_debian, linux_debian) = if benches.iter().any(Bench::debian) {
        (
            crate::debian::with_packages(&reef_initrd, "initramfs-debian.cpio")?,
            crate::debian::with_packages(&linux_initrd, "linux/initramfs-debian.cpio")?,
        )
    } else {
        (reef_initrd.clone(), linux_initrd.clone())
    };
    eprintln!(
        "xtask: bench: Reef {} + {}, Linux {} + {}",
        reef_kernel.display(),
        reef_initrd.display(),
        linux_kernel.display(),
        linux_initrd.display()
    );

    let host = if with_nr {
        eprintln!("xtask: bench: nr-bench on the host (runs first, not in QEMU)");
        let dir = out.join(NR_BENCH);
        std::fs::create_dir_all(&dir)
            .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        let result = nr_bench(&dir, o.quick, o.runs);
        if let Err(e) = &result {
            eprintln!("xtask: bench: nr-bench FAILED: {e}");
        }
        Some(result)
    } else {
        None
    };

    let accel = Accel::detect();
    let largest = *configs.last().expect("configurations");
    let mut jobs = Vec::new();
    for run in 1..=o.runs {
        for &config in &configs {
            for bench in &benches {
                for variant in bench.variants.iter().filter(|v| v.runs_at(config, largest)) {
                    jobs.push(Job {
                        bench,
                        config,
                        run,
                        variant,
                    });
                }
            }
        }
    }
    let mut samples = Vec::new();
    let mut done: Vec<(String, f64)> = Vec::new();
    let start = Instant::now();
    for (i, job) in jobs.iter().enumerate() {
        let machine = Machine {
            cores: job.config.cores,
            nodes: job.config.nodes,
            memory_mib: MEMORY_MIB,
            accel,
            forwards: Vec::new(),
            nics: job.bench.nics(),
            pcap: None,
        };
        let system = job.variant.system;
        let (kernel, initrd) = match (system, job.bench.debian()) {
            (System::Reef, false) => (&reef_kernel, &reef_initrd),
            (System::Reef, true) => (&reef_kernel, &reef_debian),
            (System::Linux, false) => (&linux_kernel, &linux_initrd),
            (System::Linux, true) => (&linux_kernel, &linux_debian),
        };
        let line = system.cmdline(&job.variant.argv(job.bench, job.config))?;
        let t0 = Instant::now();
        let result = job.bench.forwards(system).and_then(|forwards| {
            let load = job
                .bench
                .host_load
                .as_ref()
                .zip(forwards.first().map(|f| f.host));
            let machine = Machine {
                forwards,
                ..machine
            };
            run_timed(
                machine.command(kernel, initrd, &line, Console::Piped),
                LIMIT,
                load,
            )
            .and_then(|timed| values(job.bench, system, &timed))
        });
        done.push((job.key(), t0.elapsed().as_secs_f64()));
        let shown = match &result {
            Ok(v) => v
                .iter()
                .zip(&job.bench.metrics)
                .map(|(v, m)| match v {
                    Ok(v) => format!("{} {} {}", m.name, num(*v), m.unit),
                    Err(e) => format!("{} FAILED: {e}", m.name),
                })
                .collect::<Vec<_>>()
                .join(", "),
            Err(e) => format!("FAILED: {e}"),
        };
        let remaining: Vec<String> = jobs[i + 1..].iter().map(Job::key).collect();
        eprintln!(
            "[{}/{}] {} {} {} run {}/{}: {shown} ({:.1} s; {} elapsed, about {} left)",
            i + 1,
            jobs.len(),
            job.variant.name,
            job.config.label(),
            job.bench.name,
            job.run,
            o.runs,
            t0.elapsed().as_secs_f64(),
            duration_text(start.elapsed().as_secs_f64()),
            duration_text(estimate_left(&done, &remaining))
        );
        for (k, m) in job.bench.metrics.iter().enumerate() {
            samples.push(Sample {
                system: job.variant.name.clone(),
                bench: m.name.clone(),
                config: job.config.label(),
                run: job.run,
                value: result
                    .as_ref()
                    .map_err(Clone::clone)
                    .and_then(|v| v[k].clone()),
                unit: m.unit.into(),
                higher_is_better: m.higher_is_better,
            });
        }
    }

    let mut all = samples.clone();
    if let Some(Ok(h)) = &host {
        all.extend(h.iter().cloned());
    }
    write(&out.join("runs.csv"), &csv(&all))?;
    for bench in distinct(&all, |s| &s.bench) {
        write(&out.join(format!("{bench}.svg")), &svg(&all, bench))?;
    }
    let example = Machine {
        cores: 2,
        nodes: 2,
        memory_mib: MEMORY_MIB,
        accel,
        forwards: Vec::new(),
        nics: 1,
        pcap: None,
    };
    let text = summary(
        &samples,
        host.as_ref(),
        &command,
        &example.args().join(" "),
        &host_description(),
        &started,
    );
    write(&out.join("summary.md"), &text)?;
    println!("{text}");
    eprintln!("xtask: bench: results in {}", out.display());
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(system: &str, bench: &str, config: &str, run: usize, v: Result<f64, &str>) -> Sample {
        Sample {
            system: system.into(),
            bench: bench.into(),
            config: config.into(),
            run,
            value: v.map_err(str::to_string),
            unit: "ns/call".into(),
            higher_is_better: false,
        }
    }

    #[test]
    fn result_lines() {
        let log = "uperf: null rep 1/7: 1.0 ns/call\n\
                   uperf null threads=1 1624.5 ns/call min=1599 median=1624.5 max=1721 iters=9 reps=7\n";
        assert_eq!(result_value(log, "uperf null ", "median").unwrap(), 1624.5);
        assert_eq!(result_value(log, "uperf null ", "min").unwrap(), 1599.0);
        let e = result_value(log, "uperf spawn ", "median").unwrap_err();
        assert!(e.contains("no result line `uperf spawn...`"), "{e}");
        assert!(result_value(log, "uperf null ", "p99").is_err());
        let fs = "fsbench threads=2 write_pct=10 mode=shared block=1024 file_kib=256 \
                  seconds=1.000 ops=5 ops_per_sec=4321.5 sanity=ok\n";
        assert_eq!(result_value(fs, "fsbench ", "ops_per_sec").unwrap(), 4321.5);
        // `ops=` is not `ops_per_sec=`, nor the other way round.
        assert_eq!(result_value(fs, "fsbench ", "ops").unwrap(), 5.0);
        let lat = "uperf vmlat threads=2 9.58 us/op p1=8.35 p50=9.58 p99=46.24 ops=40000\n";
        assert_eq!(result_value(lat, "uperf vmlat ", "p99").unwrap(), 46.24);
        assert!(result_value(
            "fsbench threads=1 ops_per_sec=x\n",
            "fsbench ",
            "ops_per_sec"
        )
        .is_err());
    }

    #[test]
    fn exit_statuses_of_both_systems() {
        let reef = "hello\nreef: init exited with status 3\nreef: power off\n";
        assert_eq!(System::Reef.exit_status(reef), Some(3));
        assert_eq!(
            System::Reef.exit_status("reef: init exited with status 139 (killed by SIGSEGV)"),
            Some(139)
        );
        assert_eq!(System::Linux.exit_status("bench: exit status 0\n"), Some(0));
        assert_eq!(System::Linux.exit_status(reef), None);
    }

    #[test]
    fn failure_lines() {
        let log =
            "reef: boot ok\nuperf: error: posix_spawn(/test/uperf): Function not implemented\n\
                   reef: init exited with status 1\n";
        assert!(failure_line(log).starts_with("uperf: error: posix_spawn"));
        assert_eq!(
            failure_line("a\nreef: unimplemented syscalls: none\nlast\n"),
            "last"
        );
        assert_eq!(
            failure_line("a\nreef: unimplemented syscalls: foo(1)\nlast\n"),
            "reef: unimplemented syscalls: foo(1)"
        );
        assert_eq!(failure_line(""), "no output");
    }

    #[test]
    fn command_lines_are_the_same_command() {
        let argv: Vec<String> = ["/test/uperf", "-b", "2", "null"]
            .map(String::from)
            .to_vec();
        assert_eq!(
            System::Reef.cmdline(&argv).unwrap(),
            "init=/test/uperf -b 2 null"
        );
        assert!(System::Linux
            .cmdline(&argv)
            .unwrap()
            .ends_with(" -- /test/uperf -b 2 null"));
    }

    #[test]
    fn statistics() {
        assert_eq!(stats(&[]), None);
        assert_eq!(
            stats(&[3.0, 1.0, 2.0]),
            Some(Stats {
                min: 1.0,
                median: 2.0,
                max: 3.0
            })
        );
        assert_eq!(stats(&[4.0, 1.0, 2.0, 3.0]).unwrap().median, 2.5);
        assert_eq!(stats(&[7.0]).unwrap().min, 7.0);
    }

    #[test]
    fn ratios_pair_runs_and_skip_failures() {
        let s = vec![
            sample("reef", "null", "1c1n", 1, Ok(200.0)),
            sample("linux", "null", "1c1n", 1, Ok(100.0)),
            sample("reef", "null", "1c1n", 2, Ok(300.0)),
            sample("linux", "null", "1c1n", 2, Err("timed out")),
            sample("reef", "null", "1c1n", 3, Ok(90.0)),
            sample("linux", "null", "1c1n", 3, Ok(100.0)),
            sample("reef", "null", "2c2n", 1, Ok(1.0)),
        ];
        assert_eq!(
            paired_ratios(&s, "null", "1c1n", "reef", "linux"),
            vec![2.0, 0.9]
        );
        assert!(paired_ratios(&s, "null", "2c2n", "reef", "linux").is_empty());
        let r = stats(&paired_ratios(&s, "null", "1c1n", "reef", "linux")).unwrap();
        assert!((r.median - 1.45).abs() < 1e-9);
    }

    #[test]
    fn csv_has_every_run_and_quotes_notes() {
        let s = vec![
            sample("reef", "null", "1c1n", 1, Ok(1624.5)),
            sample("linux", "null", "1c1n", 1, Err("exit status 1: a, \"b\"")),
        ];
        assert_eq!(
            csv(&s),
            "system,benchmark,configuration,run,value,unit,note\n\
             reef,null,1c1n,1,1624.5,ns/call,\n\
             linux,null,1c1n,1,,ns/call,\"failed: exit status 1: a, \"\"b\"\"\"\n"
        );
    }

    #[test]
    fn markdown_table_shows_ratios_and_failures() {
        let s = vec![
            sample("reef", "null", "1c1n", 1, Ok(200.0)),
            sample("linux", "null", "1c1n", 1, Ok(100.0)),
            sample("reef", "null", "1c1n", 2, Ok(400.0)),
            sample("linux", "null", "1c1n", 2, Ok(100.0)),
            sample(
                "reef",
                "pspawn",
                "1c1n",
                1,
                Err("exit status 1: uperf: error: x|y"),
            ),
            sample("linux", "pspawn", "1c1n", 1, Ok(5.0)),
        ];
        let t = ratio_table(&s, "reef", "linux");
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(lines.len(), 4, "{t}");
        assert!(lines[0].starts_with("| benchmark | config | unit | better | reef median"));
        assert_eq!(
            lines[2],
            "| null | 1c1n | ns/call | lower | 300 (200–400) | 100 (100–100) | 3.00 | 2.00 | 4.00 |"
        );
        assert_eq!(
            lines[3],
            "| pspawn | 1c1n | ns/call | lower | **failed** 1/1 runs: exit status 1: uperf: error: x\\|y | 5.00 | – | – | – |"
        );
    }

    #[test]
    fn svg_is_well_formed() {
        let s = vec![
            sample("reef", "null", "1c1n", 1, Ok(200.0)),
            sample("linux", "null", "1c1n", 1, Ok(100.0)),
            sample("reef", "null", "2c2n", 1, Ok(250.0)),
            sample("linux", "null", "2c2n", 1, Err("boom <&>")),
        ];
        let doc = svg(&s, "null");
        assert!(doc.starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\""));
        assert!(doc.trim_end().ends_with("</svg>"));
        assert!(doc.contains(">reef</text>") && doc.contains(">linux</text>"));
        assert!(doc.contains("linux failed at 2c2n"));
        assert!(doc.contains("<polyline"), "reef has two points: a line");
        // Every element is closed: each `<tag` has its `/>` or `</tag>`, and no stray `<&>`.
        let mut open: Vec<String> = Vec::new();
        let mut rest = doc.as_str();
        while let Some(at) = rest.find('<') {
            let end = rest[at..].find('>').expect("unterminated tag") + at;
            let tag = &rest[at + 1..end];
            if let Some(name) = tag.strip_prefix('/') {
                assert_eq!(open.pop().as_deref(), Some(name), "mismatched </{name}>");
            } else if !tag.ends_with('/') {
                open.push(tag.split_whitespace().next().unwrap().to_string());
            }
            assert!(!tag.contains('&') || tag.contains("&amp;") || !tag.contains("<"));
            rest = &rest[end + 1..];
        }
        assert!(open.is_empty(), "unclosed {open:?}");
        assert!(!doc.contains("<&>"));
    }

    #[test]
    fn numbers() {
        assert_eq!(num(62654082.0), "62.7M");
        assert_eq!(num(15053.4), "15053");
        assert_eq!(num(58.14), "58.1");
        assert_eq!(num(2.5), "2.50");
        assert_eq!(num(0.25), "0.250");
        assert_eq!(num(0.0), "0");
        assert_eq!(ratio_text(0.8349), "0.83");
        assert_eq!(ratio_text(1.0), "1.00");
        assert_eq!(ratio_text(0.0016), "0.0016");
        assert_eq!(ratio_text(0.05), "0.050");
        assert_eq!(ratio_text(0.0), "0.00");
    }

    #[test]
    fn axis_tops() {
        assert_eq!(axis_top(0.0), 1.0);
        assert_eq!(axis_top(0.7), 1.0);
        assert_eq!(axis_top(1234.0), 2000.0);
        assert_eq!(axis_top(450.0), 500.0);
        assert_eq!(axis_top(1000.0), 1000.0);
    }

    #[test]
    fn progress_estimate() {
        let done = vec![
            ("reef/null/1c1n".to_string(), 4.0),
            ("linux/null/1c1n".to_string(), 10.0),
        ];
        // Same keys: their own means; an unseen key: the mean of all (7).
        let left = estimate_left(
            &done,
            &[
                "reef/null/1c1n".into(),
                "linux/null/1c1n".into(),
                "reef/vmops/2c2n".into(),
            ],
        );
        assert_eq!(left, 4.0 + 10.0 + 7.0);
        assert_eq!(estimate_left(&[], &["x".into()]), 0.0);
        assert_eq!(duration_text(42.4), "42s");
        assert_eq!(duration_text(185.0), "3m05s");
        assert_eq!(duration_text(3720.0), "1h02m");
    }

    #[test]
    fn filters() {
        let none: Vec<String> = Vec::new();
        assert!(selected("fs-shared-w0", &none));
        assert!(selected("fs-shared-w0", &["fs".into()]));
        assert!(selected("fs-shared-w0", &["fs-shared".into()]));
        assert!(!selected("fs-shared-w0", &["fs-sh".into()]));
        assert!(selected("null", &["null".into()]));
        assert!(!selected("nr-bench", &["null".into()]));
    }

    #[test]
    fn nr_bench_csv() {
        let text = "system,write_ratio,threads,replicas,run,ops_per_sec\n\
                    nr,10,2,1,0,110351417\nnode-replication,10,2,1,0,83554340\n";
        let s = parse_nr_csv(text).unwrap();
        assert_eq!(s.len(), 2);
        assert_eq!(s[0].bench, "nr-bench-w10");
        assert_eq!(s[0].config, "2t1r");
        assert_eq!(s[0].run, 1);
        assert_eq!(s[1].value, Ok(83554340.0));
        assert!(parse_nr_csv("bad header\n").is_err());
        assert!(
            parse_nr_csv("system,write_ratio,threads,replicas,run,ops_per_sec\nnr,1\n").is_err()
        );
    }

    #[test]
    fn every_benchmark_and_configuration_is_valid() {
        for c in FULL_CONFIGS.iter().chain(&QUICK_CONFIGS) {
            let m = Machine {
                cores: c.cores,
                nodes: c.nodes,
                memory_mib: MEMORY_MIB,
                accel: Accel::Tcg,
                forwards: Vec::new(),
                nics: 1,
                pcap: None,
            };
            m.validate().unwrap();
        }
        let names: Vec<String> = benches(FULL).into_iter().map(|b| b.name).collect();
        for n in [
            "boot",
            "null",
            "spawn",
            "pspawn",
            "vmops",
            "vmlat",
            "fs-shared-w60",
            "fs-private-w100",
            "hare-creates",
            "hare-fsstress",
        ] {
            assert!(names.iter().any(|x| x == n), "{n}");
        }
        let largest = *FULL_CONFIGS.last().unwrap();
        for b in benches(FULL) {
            for v in &b.variants {
                for &c in &FULL_CONFIGS {
                    let argv = v.argv(&b, c);
                    assert!(argv[0].starts_with("/test/"));
                    assert!(!argv.iter().any(|w| w.contains('{')), "{argv:?}");
                    let line = v.system.cmdline(&argv).unwrap();
                    assert!(!line.contains('"'), "no quoting needed: {line}");
                }
            }
        }
        let hare = benches(FULL)
            .into_iter()
            .find(|b| b.name == "hare-creates")
            .unwrap();
        let at = |c: Config| -> Vec<String> {
            let v = hare.variants.iter().filter(|v| v.runs_at(c, largest));
            v.map(|v| v.name.clone()).collect()
        };
        let one = at(FULL_CONFIGS[0]);
        assert_eq!(one, ["reef-hare", "reef", "linux"], "no split on one core");
        assert_eq!(at(largest).len(), 9, "the ablations at the largest");
        let split = hare.variants.iter().find(|v| v.name == "reef-hare-split");
        let argv = split.unwrap().argv(&hare, largest);
        assert_eq!(
            argv[..5],
            ["/test/onhare", "split", "/tmp", "/test/fsload", "creates"]
        );
        assert_eq!(argv[5..7], ["-p", "4"]);
    }

    #[test]
    fn the_sink_answers_each_count() {
        use std::io::Write;
        let mut c = std::net::TcpStream::connect(("127.0.0.1", sink_port())).unwrap();
        for n in [100_000u64, 0, 3] {
            c.write_all(&n.to_be_bytes()).unwrap();
            c.write_all(&vec![7u8; n as usize]).unwrap();
            let mut got = [0u8; 8];
            c.read_exact(&mut got).unwrap();
            assert_eq!(u64::from_be_bytes(got), n);
        }
    }

    #[test]
    fn network_modes() {
        let all = benches(FULL);
        for (kind, mode, nics) in [
            ("nic", "kernel", 1),
            ("server", "server", 1),
            ("direct", "direct", 2),
        ] {
            for size in ["64", "1k", "64k", "256k"] {
                let name = format!("net-{kind}-rtt-{size}");
                let b = all.iter().find(|b| b.name == name).expect(&name);
                assert_eq!(b.net_mode, Some(mode), "{name}");
                assert_eq!(b.nics(), nics, "{name}: the same machine for both systems");
                let argv = b.variants[0].argv(b, FULL_CONFIGS[0]);
                assert_eq!(argv[3..6], ["-n", mode, "echortt"], "{name}");
            }
            let name = format!("net-{kind}-tput");
            let b = all.iter().find(|b| b.name == name).expect(&name);
            assert_eq!((b.net_mode, b.nics()), (Some(mode), nics), "{name}");
            let argv = b.variants[1].argv(b, FULL_CONFIGS[3]);
            assert_eq!(argv[3..6], ["-n", mode, "sinktput"], "{name}");
            assert!(argv[6].starts_with("10.0.2.2:"), "{argv:?}");
        }
        let lo = all.iter().find(|b| b.name == "net-lo-rtt").unwrap();
        assert_eq!((lo.net_mode, lo.nics()), (None, 1));
        let line = |m: &str| format!("uperf: x\nuperf: net instance mode={m} port=tcp/49152\n");
        assert!(net_mode_shown(&line("server/1"), "server").is_ok());
        assert!(net_mode_shown(&line("direct/1@10.0.2.16"), "direct").is_ok());
        assert!(net_mode_shown(&line("kernel"), "kernel").is_ok());
        let e = net_mode_shown(&line("kernel"), "server").unwrap_err();
        assert!(e.contains("mode kernel, not server"), "{e}");
        assert!(net_mode_shown(&line("kernelx"), "kernel").is_err());
        assert!(net_mode_shown("uperf echortt threads=1 5 ns/rt\n", "direct").is_err());
    }

    #[test]
    fn http_benchmarks_and_the_switch() {
        let all = benches(QUICK);
        for (kind, mode) in [
            ("nic", "kernel"),
            ("server", "server"),
            ("direct", "direct"),
        ] {
            let name = format!("net-{kind}-http");
            let b = all.iter().find(|b| b.name == name).expect(&name);
            assert_eq!(b.net_mode, Some(mode));
            let argv = b.variants[0].argv(b, QUICK_CONFIGS[0]);
            assert_eq!(argv, ["/test/uperf", "-n", mode, "httpd", "8080"]);
            let names: Vec<&str> = b.metrics.iter().map(|m| m.name.as_str()).collect();
            let want: Vec<String> = HTTP_CONCURRENCY
                .iter()
                .map(|c| format!("{name}-c{c}"))
                .collect();
            assert_eq!(names, want);
            let reef = b.forwards(System::Reef).unwrap();
            let linux = b.forwards(System::Linux).unwrap();
            assert_eq!((reef.len(), linux.len()), (1, 1));
            assert_eq!(reef[0].guest, HTTP_PORT);
            let own = (mode == "direct").then_some(std::net::Ipv4Addr::new(10, 0, 2, 16));
            assert_eq!(reef[0].addr, own, "{name}");
            assert_eq!(linux[0].addr, None, "{name}: Linux has one address");
        }
        let s = all.iter().find(|b| b.name == "net-switch").unwrap();
        assert_eq!((s.nics(), s.net_mode), (2, Some("server")));
        assert_eq!(s.variants.len(), 1, "Reef only");
        assert!(s.forwards(System::Reef).unwrap().is_empty());
    }

    #[test]
    fn ab_reports() {
        let report = "Concurrency Level:      4\nTime taken for tests:   1.2 seconds\n\
                      Complete requests:      300\nFailed requests:        0\n\
                      Requests per second:    250.12 [#/sec] (mean)\n";
        assert_eq!(ab_rate(report, 300), Ok(250.12));
        let e = ab_rate(report, 500).unwrap_err();
        assert!(e.contains("300 of 500"), "{e}");
        let failed = report.replace("Failed requests:        0", "Failed requests:        3");
        assert!(ab_rate(&failed, 300).unwrap_err().contains("3 failed"));
        let non2xx = format!("{report}Non-2xx responses:      300\n");
        assert!(ab_rate(&non2xx, 300).unwrap_err().contains("non-2xx"));
        assert!(ab_rate("nothing\n", 1).is_err());
    }

    #[test]
    fn pair_tables_keep_the_points_where_the_first_ran() {
        let s = vec![
            sample("a", "m", "1c1n", 1, Ok(2.0)),
            sample("b", "m", "1c1n", 1, Ok(4.0)),
            sample("b", "m", "4c2n", 1, Ok(8.0)),
        ];
        let t = pair_table(&s, "a", "b");
        assert!(t.contains("| m | 1c1n |"), "{t}");
        assert!(t.contains("| 0.50 |"), "{t}");
        assert!(!t.contains("4c2n"), "{t}");
        assert_eq!(pair_table(&s, "c", "b"), "");
    }
}
