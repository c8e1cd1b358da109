//! Throughput of a replicated hash map: `nr` against `node-replication` 0.1.1,
//! `std::sync::RwLock<HashMap>` and `dashmap`, for write ratios 0/10/50/100 %, 1, 2 and all
//! cores, and 1 and 2 replicas.
//!
//! `cargo run -p nr-bench --release -- [--quick] [--out DIR] [--duration-ms N] [--runs N]`
//!
//! Every system uses the same `HashMap<u64, u64>` with the same hasher, the same prefilled key
//! range, the same operation mix and random sequence per thread, and no thread pinning.
//! Measurements of all systems are interleaved within each run, so that drift affects them
//! alike; ratios against node-replication pair measurements of the same run.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::hash::{BuildHasherDefault, Hasher};
use std::hint::black_box;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Barrier, RwLock};
use std::thread;
use std::time::{Duration, Instant};

use dashmap::DashMap;

/// Number of keys, all present before a run starts.
const KEYS: u64 = 1 << 16;
/// Log size for both NR implementations (the 2 MiB of the paper's Listing 2).
const LOG_BYTES: usize = 2 * 1024 * 1024;
/// Write ratios in percent.
const WRITE_RATIOS: [u64; 4] = [0, 10, 50, 100];

/// A Fx-style multiplicative hasher, used by every system.
#[derive(Default, Clone, Copy)]
struct FxHasher(u64);

impl Hasher for FxHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(u64::from(b));
        }
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = (self.0.rotate_left(5) ^ n).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
}

type Fx = BuildHasherDefault<FxHasher>;
type Map = HashMap<u64, u64, Fx>;

fn prefilled() -> Map {
    (0..KEYS).map(|k| (k, k)).collect()
}

/// The hash map replicated by `nr`.
struct NrMap(Map);

#[derive(Clone)]
struct Put(u64, u64);

impl nr::Dispatch for NrMap {
    type ReadOp = u64;
    type UpdateOp = Put;
    type Resp = Option<u64>;
    fn dispatch(&self, k: u64) -> Option<u64> {
        self.0.get(&k).copied()
    }
    fn dispatch_mut(&mut self, Put(k, v): Put) -> Option<u64> {
        self.0.insert(k, v)
    }
}

/// The same hash map replicated by node-replication 0.1.1.
struct NodeReplicationMap(Map);

#[derive(Clone, Debug, PartialEq)]
struct NrPut(u64, u64);

impl node_replication::Dispatch for NodeReplicationMap {
    type ReadOperation = u64;
    type WriteOperation = NrPut;
    type Response = Option<u64>;
    fn dispatch(&self, k: u64) -> Option<u64> {
        self.0.get(&k).copied()
    }
    fn dispatch_mut(&mut self, NrPut(k, v): NrPut) -> Option<u64> {
        self.0.insert(k, v)
    }
}

/// One thread's access to a system under test.
trait Worker: Send + 'static {
    fn get(&mut self, k: u64) -> Option<u64>;
    fn put(&mut self, k: u64, v: u64) -> Option<u64>;
}

struct NrWorker {
    replica: Arc<nr::Replica<NrMap>>,
    token: nr::ReplicaToken,
}

impl Worker for NrWorker {
    #[inline]
    fn get(&mut self, k: u64) -> Option<u64> {
        self.replica.execute(k, &self.token)
    }
    #[inline]
    fn put(&mut self, k: u64, v: u64) -> Option<u64> {
        self.replica.execute_mut(Put(k, v), &self.token)
    }
}

struct NodeReplicationWorker {
    replica: Arc<node_replication::Replica<'static, NodeReplicationMap>>,
    token: node_replication::ReplicaToken,
}

impl Worker for NodeReplicationWorker {
    #[inline]
    fn get(&mut self, k: u64) -> Option<u64> {
        self.replica.execute(k, self.token)
    }
    #[inline]
    fn put(&mut self, k: u64, v: u64) -> Option<u64> {
        self.replica.execute_mut(NrPut(k, v), self.token)
    }
}

struct RwLockWorker(Arc<RwLock<Map>>);

impl Worker for RwLockWorker {
    #[inline]
    fn get(&mut self, k: u64) -> Option<u64> {
        self.0.read().unwrap().get(&k).copied()
    }
    #[inline]
    fn put(&mut self, k: u64, v: u64) -> Option<u64> {
        self.0.write().unwrap().insert(k, v)
    }
}

struct DashMapWorker(Arc<DashMap<u64, u64, Fx>>);

impl Worker for DashMapWorker {
    #[inline]
    fn get(&mut self, k: u64) -> Option<u64> {
        self.0.get(&k).map(|v| *v)
    }
    #[inline]
    fn put(&mut self, k: u64, v: u64) -> Option<u64> {
        self.0.insert(k, v)
    }
}

/// The systems compared.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum System {
    Nr,
    NodeReplication,
    RwLock,
    DashMap,
}

impl System {
    const ALL: [System; 4] = [
        System::Nr,
        System::NodeReplication,
        System::RwLock,
        System::DashMap,
    ];

    fn name(self) -> &'static str {
        match self {
            System::Nr => "nr",
            System::NodeReplication => "node-replication",
            System::RwLock => "rwlock",
            System::DashMap => "dashmap",
        }
    }

    fn replicated(self) -> bool {
        matches!(self, System::Nr | System::NodeReplication)
    }

    /// Builds the system with `replicas` replicas and one worker per thread (thread `t` uses
    /// replica `t % replicas`).
    fn workers(
        self,
        threads: usize,
        replicas: usize,
        base: &Map,
    ) -> Vec<Box<dyn FnOnce(Ctx) -> u64 + Send>> {
        match self {
            System::Nr => {
                let log = Arc::new(nr::Log::<Put>::new(LOG_BYTES));
                let per_replica = threads.div_ceil(replicas);
                let rs: Vec<_> = (0..replicas)
                    .map(|_| nr::Replica::with_data(&log, NrMap(base.clone()), per_replica))
                    .collect();
                (0..threads)
                    .map(|t| {
                        let replica = rs[t % replicas].clone();
                        let token = replica.register().expect("register");
                        job(NrWorker { replica, token })
                    })
                    .collect()
            }
            System::NodeReplication => {
                let log = Arc::new(node_replication::Log::<'static, NrPut>::new(LOG_BYTES));
                let rs: Vec<_> = (0..replicas)
                    .map(|_| {
                        node_replication::Replica::with_data(&log, NodeReplicationMap(base.clone()))
                    })
                    .collect();
                (0..threads)
                    .map(|t| {
                        let replica = rs[t % replicas].clone();
                        let token = replica.register().expect("register");
                        job(NodeReplicationWorker { replica, token })
                    })
                    .collect()
            }
            System::RwLock => {
                let map = Arc::new(RwLock::new(base.clone()));
                (0..threads)
                    .map(|_| job(RwLockWorker(map.clone())))
                    .collect()
            }
            System::DashMap => {
                let map: DashMap<u64, u64, Fx> = DashMap::with_hasher(Fx::default());
                for (k, v) in base {
                    map.insert(*k, *v);
                }
                let map = Arc::new(map);
                (0..threads)
                    .map(|_| job(DashMapWorker(map.clone())))
                    .collect()
            }
        }
    }
}

/// What a benchmark thread needs besides its worker.
struct Ctx {
    thread: usize,
    write_ratio: u64,
    start: Arc<Barrier>,
    stop: Arc<AtomicBool>,
}

fn job<W: Worker>(worker: W) -> Box<dyn FnOnce(Ctx) -> u64 + Send> {
    Box::new(move |ctx| run_worker(worker, ctx))
}

/// The measured loop, monomorphized per system: uniform keys, `write_ratio` % puts.
fn run_worker<W: Worker>(mut worker: W, ctx: Ctx) -> u64 {
    let mut rng =
        0x9e37_79b9_7f4a_7c15u64 ^ (ctx.thread as u64 + 1).wrapping_mul(0xd1b5_4a32_d192_ed03);
    let mut ops = 0u64;
    ctx.start.wait();
    while !ctx.stop.load(Ordering::Relaxed) {
        for _ in 0..64 {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            let key = rng % KEYS;
            if (rng >> 40) % 100 < ctx.write_ratio {
                black_box(worker.put(key, rng));
            } else {
                black_box(worker.get(key));
            }
        }
        ops += 64;
    }
    ops
}

/// Runs one measurement and returns operations per second.
fn measure(
    system: System,
    write_ratio: u64,
    threads: usize,
    replicas: usize,
    duration: Duration,
    base: &Map,
) -> f64 {
    let jobs = system.workers(threads, replicas, base);
    let start = Arc::new(Barrier::new(threads + 1));
    let stop = Arc::new(AtomicBool::new(false));
    let handles: Vec<_> = jobs
        .into_iter()
        .enumerate()
        .map(|(thread, job)| {
            let ctx = Ctx {
                thread,
                write_ratio,
                start: start.clone(),
                stop: stop.clone(),
            };
            thread::spawn(move || job(ctx))
        })
        .collect();
    start.wait();
    let t0 = Instant::now();
    thread::sleep(duration);
    stop.store(true, Ordering::Relaxed);
    let ops: u64 = handles.into_iter().map(|h| h.join().unwrap()).sum();
    ops as f64 / t0.elapsed().as_secs_f64()
}

struct Args {
    quick: bool,
    out: PathBuf,
    duration: Duration,
    runs: usize,
}

fn parse_args() -> Args {
    let mut args = Args {
        quick: false,
        out: PathBuf::from("target/nr-bench"),
        duration: Duration::from_millis(1000),
        runs: 5,
    };
    let (mut duration, mut runs) = (None, None);
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        let mut value = |name: &str| it.next().unwrap_or_else(|| panic!("{name} needs a value"));
        match a.as_str() {
            "--quick" => args.quick = true,
            "--out" => args.out = PathBuf::from(value("--out")),
            "--duration-ms" => {
                duration = Some(value("--duration-ms").parse().expect("--duration-ms N"))
            }
            "--runs" => runs = Some(value("--runs").parse().expect("--runs N")),
            "-h" | "--help" => {
                println!("usage: nr-bench [--quick] [--out DIR] [--duration-ms N] [--runs N]");
                std::process::exit(0);
            }
            other => panic!("unknown argument {other}"),
        }
    }
    if args.quick {
        args.duration = Duration::from_millis(250);
        args.runs = 3;
    }
    if let Some(d) = duration {
        args.duration = Duration::from_millis(d);
    }
    if let Some(r) = runs {
        args.runs = r;
    }
    args
}

/// One measured point.
struct Sample {
    system: System,
    write_ratio: u64,
    threads: usize,
    replicas: usize,
    run: usize,
    ops_per_sec: f64,
}

/// (write ratio, threads, replicas) configurations of a system. Replicated systems use 1 and
/// 2 replicas, but never more replicas than threads (a replica without threads would stall
/// node-replication 0.1.1, which cannot advance lagging replicas); RwLock and dashmap have one
/// copy.
fn configs(system: System, thread_counts: &[usize]) -> Vec<(u64, usize, usize)> {
    let mut out = Vec::new();
    for &wr in &WRITE_RATIOS {
        for &t in thread_counts {
            let replica_counts: &[usize] = if system.replicated() { &[1, 2] } else { &[1] };
            for &r in replica_counts {
                if r <= t {
                    out.push((wr, t, r));
                }
            }
        }
    }
    out
}

fn stats(mut v: Vec<f64>) -> (f64, f64, f64) {
    v.sort_by(f64::total_cmp);
    let median = if v.len() % 2 == 1 {
        v[v.len() / 2]
    } else {
        (v[v.len() / 2 - 1] + v[v.len() / 2]) / 2.0
    };
    (v[0], median, v[v.len() - 1])
}

fn main() {
    let args = parse_args();
    let cores = thread::available_parallelism().map_or(1, |n| n.get());
    let mut thread_counts = vec![1, 2, cores];
    thread_counts.sort_unstable();
    thread_counts.dedup();
    let base = prefilled();
    println!(
        "nr-bench: {} keys, {} ms per point, {} runs, threads {:?} (all cores = {cores})",
        KEYS,
        args.duration.as_millis(),
        args.runs,
        thread_counts
    );

    // Systems are measured back to back for each configuration, in an order that rotates from
    // one configuration and run to the next, so that slow drifts of the machine (other tenants,
    // frequency changes) do not favour any system.
    let mut samples = Vec::new();
    for run in 0..args.runs {
        for (i, (wr, t, r)) in configs(System::Nr, &thread_counts).into_iter().enumerate() {
            let mut order: Vec<System> = System::ALL
                .into_iter()
                .filter(|s| configs(*s, &thread_counts).contains(&(wr, t, r)))
                .collect();
            let len = order.len();
            order.rotate_left((run + i) % len);
            for system in order {
                let ops_per_sec = measure(system, wr, t, r, args.duration, &base);
                samples.push(Sample {
                    system,
                    write_ratio: wr,
                    threads: t,
                    replicas: r,
                    run,
                    ops_per_sec,
                });
            }
        }
        eprintln!("run {}/{} done", run + 1, args.runs);
    }

    std::fs::create_dir_all(&args.out).expect("create output directory");
    let mut csv = String::from("system,write_ratio,threads,replicas,run,ops_per_sec\n");
    for s in &samples {
        writeln!(
            csv,
            "{},{},{},{},{},{:.0}",
            s.system.name(),
            s.write_ratio,
            s.threads,
            s.replicas,
            s.run,
            s.ops_per_sec
        )
        .unwrap();
    }
    let csv_path = args.out.join("nr-bench.csv");
    std::fs::write(&csv_path, csv).expect("write CSV");

    let find = |system: System, wr: u64, t: usize, r: usize, run: usize| {
        samples
            .iter()
            .find(|s| {
                s.system == system
                    && s.write_ratio == wr
                    && s.threads == t
                    && s.replicas == r
                    && s.run == run
            })
            .map(|s| s.ops_per_sec)
    };
    println!();
    println!(
        "Throughput ratio vs node-replication 0.1.1 (same run; min / median / max over {} runs)",
        args.runs
    );
    println!("rwlock and dashmap have a single copy (replicas = 1) and are compared with node-replication at 1 replica.");
    println!(
        "{:>3} {:>3} {:>3} | {:>14} {:>14} | {:>20} | {:>20} | {:>20}",
        "wr%", "thr", "rep", "nr Mops/s", "n-r Mops/s", "nr / n-r", "rwlock / n-r", "dashmap / n-r"
    );
    let mut worst = f64::INFINITY;
    for (wr, t, r) in configs(System::Nr, &thread_counts) {
        let ratio = |system: System, rep: usize| -> Option<(f64, f64, f64)> {
            let v: Vec<f64> = (0..args.runs)
                .filter_map(|run| {
                    Some(
                        find(system, wr, t, rep, run)?
                            / find(System::NodeReplication, wr, t, r, run)?,
                    )
                })
                .collect();
            (!v.is_empty()).then(|| stats(v))
        };
        let median_of = |system: System| {
            stats(
                (0..args.runs)
                    .filter_map(|run| find(system, wr, t, r, run))
                    .collect(),
            )
            .1
        };
        let fmt = |x: Option<(f64, f64, f64)>| {
            x.map_or_else(
                || "-".to_string(),
                |(lo, med, hi)| format!("{lo:.2} / {med:.2} / {hi:.2}"),
            )
        };
        let nr_ratio = ratio(System::Nr, r);
        worst = worst.min(nr_ratio.map_or(f64::INFINITY, |x| x.0));
        let single = if r == 1 {
            (ratio(System::RwLock, 1), ratio(System::DashMap, 1))
        } else {
            (None, None)
        };
        println!(
            "{:>3} {:>3} {:>3} | {:>14.2} {:>14.2} | {:>20} | {:>20} | {:>20}",
            wr,
            t,
            r,
            median_of(System::Nr) / 1e6,
            median_of(System::NodeReplication) / 1e6,
            fmt(nr_ratio),
            fmt(single.0),
            fmt(single.1)
        );
    }
    println!();
    println!("lowest nr / node-replication ratio of any run: {worst:.2}");

    let svg_path = args.out.join("nr-bench.svg");
    std::fs::write(&svg_path, svg(&samples, &thread_counts)).expect("write SVG");
    println!("wrote {} and {}", csv_path.display(), svg_path.display());
}

/// A grouped bar chart of median throughput: one panel per write ratio, one group per
/// (threads, replicas), one bar per system.
fn svg(samples: &[Sample], thread_counts: &[usize]) -> String {
    const PANEL_W: f64 = 330.0;
    const PANEL_H: f64 = 260.0;
    const TOP: f64 = 50.0;
    const LEFT: f64 = 60.0;
    let colors = ["#1b9e77", "#d95f02", "#7570b3", "#e7298a"];
    let groups: Vec<(usize, usize)> = configs(System::Nr, thread_counts)
        .into_iter()
        .filter(|(wr, _, _)| *wr == 0)
        .map(|(_, t, r)| (t, r))
        .collect();
    let median = |system: System, wr: u64, t: usize, r: usize| {
        let v: Vec<f64> = samples
            .iter()
            .filter(|s| {
                s.system == system && s.write_ratio == wr && s.threads == t && s.replicas == r
            })
            .map(|s| s.ops_per_sec)
            .collect();
        (!v.is_empty()).then(|| stats(v).1)
    };
    let width = LEFT + PANEL_W * WRITE_RATIOS.len() as f64 + 20.0;
    let height = TOP + PANEL_H + 90.0;
    let mut out = String::new();
    writeln!(out, r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-family="sans-serif" font-size="11">"#).unwrap();
    writeln!(out, r#"<rect width="100%" height="100%" fill="white"/>"#).unwrap();
    writeln!(out, r#"<text x="{LEFT}" y="20" font-size="14">Replicated hash map throughput (median, Mops/s) by write ratio; groups: threads/replicas</text>"#).unwrap();
    for (p, &wr) in WRITE_RATIOS.iter().enumerate() {
        let x0 = LEFT + p as f64 * PANEL_W;
        let max = System::ALL
            .iter()
            .flat_map(|&s| groups.iter().filter_map(move |&(t, r)| median(s, wr, t, r)))
            .fold(1.0, f64::max);
        let y_of = |v: f64| TOP + PANEL_H - v / max * PANEL_H;
        writeln!(
            out,
            r#"<text x="{}" y="{}" font-size="12">{wr}% writes (max {:.1})</text>"#,
            x0 + 10.0,
            TOP - 8.0,
            max / 1e6
        )
        .unwrap();
        writeln!(
            out,
            r#"<line x1="{x0}" y1="{}" x2="{}" y2="{}" stroke="black"/>"#,
            TOP + PANEL_H,
            x0 + PANEL_W - 20.0,
            TOP + PANEL_H
        )
        .unwrap();
        writeln!(
            out,
            r#"<line x1="{x0}" y1="{TOP}" x2="{x0}" y2="{}" stroke="black"/>"#,
            TOP + PANEL_H
        )
        .unwrap();
        let group_w = (PANEL_W - 30.0) / groups.len() as f64;
        let bar_w = group_w / (System::ALL.len() as f64 + 1.0);
        for (g, &(t, r)) in groups.iter().enumerate() {
            let gx = x0 + 5.0 + g as f64 * group_w;
            for (i, &system) in System::ALL.iter().enumerate() {
                if let Some(v) = median(system, wr, t, r) {
                    let y = y_of(v);
                    writeln!(
                        out,
                        r#"<rect x="{:.1}" y="{y:.1}" width="{:.1}" height="{:.1}" fill="{}"><title>{} {wr}% t={t} r={r}: {:.2} Mops/s</title></rect>"#,
                        gx + i as f64 * bar_w,
                        bar_w - 1.0,
                        TOP + PANEL_H - y,
                        colors[i],
                        system.name(),
                        v / 1e6
                    )
                    .unwrap();
                }
            }
            writeln!(
                out,
                r#"<text x="{:.1}" y="{}">{t}t/{r}r</text>"#,
                gx + 2.0,
                TOP + PANEL_H + 15.0
            )
            .unwrap();
        }
    }
    for (i, system) in System::ALL.iter().enumerate() {
        let x = LEFT + i as f64 * 160.0;
        let y = TOP + PANEL_H + 45.0;
        writeln!(
            out,
            r#"<rect x="{x}" y="{}" width="12" height="12" fill="{}"/>"#,
            y - 10.0,
            colors[i]
        )
        .unwrap();
        writeln!(
            out,
            r#"<text x="{}" y="{y}">{}</text>"#,
            x + 16.0,
            system.name()
        )
        .unwrap();
    }
    out.push_str("</svg>\n");
    out
}
