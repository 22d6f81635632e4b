//! `iobench`: IOPS and latency against queue depth, per engine and mix,
//! optionally beside fio in the same run.
//!
//! [`run`] takes a [`BenchConfig`] and returns a [`BenchReport`]; the
//! [`report`] module turns that into a terminal table and advice, and
//! [`chart`] into an SVG or PNG chart. [`IobenchArgs`] is the `spindle
//! iobench` command line, which gives the config.

mod args;
pub mod chart;
pub mod device;
pub mod fio;
pub mod hist;
pub mod report;
mod testfile;
mod workload;

use std::path::PathBuf;
use std::time::Duration;

use serde::Serialize;

use crate::engine::{EngineKind, UringPolicy};
use crate::error::BenchError;

pub use args::IobenchArgs;

/// The access pattern.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Rw {
    /// Random reads only.
    RandRead,
    /// Random reads and writes, `mix`% reads.
    RandRw,
}

impl Rw {
    pub fn name(self) -> &'static str {
        match self {
            Rw::RandRead => "randread",
            Rw::RandRw => "randrw",
        }
    }

    /// Parses `randread` or `randrw`.
    pub fn parse(s: &str) -> Result<Rw, String> {
        match s {
            "randread" => Ok(Rw::RandRead),
            "randrw" => Ok(Rw::RandRw),
            _ => Err(format!(
                "unknown pattern '{s}'; expected randread or randrw"
            )),
        }
    }
}

/// What to measure.
#[derive(Debug, Clone)]
pub enum Target {
    /// Create a test file in this directory, and remove it afterwards.
    TempFileIn(PathBuf),
    /// Read this existing file or block device, never writing to it.
    ReadOnly(PathBuf),
}

/// The sweep's settings.
#[derive(Debug, Clone)]
pub struct BenchConfig {
    pub target: Target,
    /// Test-file size; for a read-only target, how much of it to use
    /// (`None`: all of it, or 1 GiB for a new test file).
    pub size: Option<u64>,
    pub bs: usize,
    pub depths: Vec<usize>,
    pub engines: Vec<EngineKind>,
    pub rws: Vec<Rw>,
    /// Percentage of reads in `randrw`.
    pub mix: u8,
    pub runtime: Duration,
    pub direct: bool,
    pub rounds: usize,
    /// Run fio at each point too.
    pub fio: bool,
    /// The fio program to run.
    pub fio_program: PathBuf,
    pub sqpoll_idle_ms: u32,
    /// The CPU to pin the SQPOLL kernel thread to.
    pub sqpoll_cpu: Option<u32>,
    /// For SQPOLL points, give the kernel thread a CPU of its own (the last
    /// allowed one, or `sqpoll_cpu`) and keep the application thread off it;
    /// fio gets the same placement. Off by default: on the 2-CPU machine
    /// measured it made SQPOLL slower (docs/io-engine.md).
    pub sqpoll_pin: bool,
    /// SQPOLL points: poll always (the default, to measure SQPOLL itself),
    /// or only with a spare core, as engines do by default.
    pub sqpoll_policy: crate::SqpollPolicy,
    /// SQPOLL: hand deep queues to a plain ring at this many in flight
    /// (0: never; see [`crate::EngineConfig::sqpoll_plain_above`]).
    pub sqpoll_plain_above: u32,
    /// See [`crate::EngineConfig::sqpoll_spin_us`].
    pub sqpoll_spin_us: u32,
    pub uring: UringPolicy,
    /// Base seed of the random offsets.
    pub seed: u64,
}

impl BenchConfig {
    /// The defaults of `spindle iobench`: a 1 GiB test file in `dir`, 4 KiB
    /// blocks, depths 1..128, all engines, randread and randrw 70/30, 5 s,
    /// buffered, 3 rounds, no fio.
    pub fn new(target: Target) -> BenchConfig {
        BenchConfig {
            target,
            size: None,
            bs: 4096,
            depths: vec![1, 2, 4, 8, 16, 32, 64, 128],
            engines: vec![
                EngineKind::Psync,
                EngineKind::Uring,
                EngineKind::UringSqpoll,
            ],
            rws: vec![Rw::RandRead, Rw::RandRw],
            mix: 70,
            runtime: Duration::from_secs(5),
            direct: false,
            rounds: 3,
            fio: false,
            fio_program: PathBuf::from("fio"),
            sqpoll_idle_ms: 2,
            sqpoll_cpu: None,
            sqpoll_pin: false,
            sqpoll_policy: crate::SqpollPolicy::Always,
            sqpoll_plain_above: crate::DEFAULT_SQPOLL_PLAIN_ABOVE,
            sqpoll_spin_us: crate::DEFAULT_SQPOLL_SPIN_US,
            uring: UringPolicy::from_env(),
            // A fixed seed, so two runs read the same offsets.
            seed: 0x5EED_5B1D,
        }
    }

    /// `self` with repeated engines and access patterns dropped, the
    /// first of each kept: `--engines psync,psync` measures psync once.
    fn without_repeats(&self) -> BenchConfig {
        fn dedup<T: PartialEq + Copy>(v: &[T]) -> Vec<T> {
            let firsts = v.iter().enumerate().filter(|&(i, x)| !v[..i].contains(x));
            firsts.map(|(_, &x)| x).collect()
        }
        BenchConfig {
            engines: dedup(&self.engines),
            rws: dedup(&self.rws),
            ..self.clone()
        }
    }

    fn check(&self) -> Result<(), BenchError> {
        let bad = |m: String| Err(BenchError::Config(m));
        if self.bs == 0 || !self.bs.is_multiple_of(512) || self.bs > crate::MAX_BUF_SIZE {
            return bad(format!(
                "--bs must be a multiple of 512 bytes up to 64 MiB; got {}",
                self.bs
            ));
        }
        if self.direct && !self.bs.is_multiple_of(crate::sys::ALIGN) {
            return bad(format!(
                "O_DIRECT needs --bs aligned to {} bytes; got {}",
                crate::sys::ALIGN,
                self.bs
            ));
        }
        if self.depths.is_empty() || self.depths.iter().any(|&d| d == 0 || d > 1024) {
            return bad("--depths needs depths between 1 and 1024".into());
        }
        if self.engines.is_empty() || self.rws.is_empty() {
            return bad("--engines and --rw need at least one value each".into());
        }
        if self.mix > 100 {
            return bad(format!("--mix is a percentage of reads; got {}", self.mix));
        }
        if self.rounds == 0 {
            return bad("--rounds must be at least 1".into());
        }
        if matches!(self.target, Target::ReadOnly(_)) && self.rws.contains(&Rw::RandRw) {
            return bad(
                "--device-readonly reads only: use --rw randread (randrw would write to it)".into(),
            );
        }
        Ok(())
    }
}

/// One round's figures of one point. Latencies are of reads.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Measurement {
    pub read_iops: f64,
    pub write_iops: f64,
    /// Bytes per second.
    pub read_bw: f64,
    pub write_bw: f64,
    pub lat_mean_us: f64,
    pub lat_p50_us: f64,
    pub lat_p99_us: f64,
    pub lat_p999_us: f64,
    /// Process CPU time (user + system, all threads) per IO.
    pub cpu_us_per_io: f64,
    pub ios: u64,
    pub seconds: f64,
    /// Kernel entries per IO (Spindle only).
    pub syscalls_per_io: f64,
    /// SQPOLL wake-up calls (Spindle only).
    pub sqpoll_wakeups: u64,
    /// SQPOLL: the share of IOs the plain ring sent because the queue was
    /// deep (Spindle only; 0 to 1).
    pub sqpoll_plain_share: f64,
}

impl Measurement {
    /// Read plus write IOPS.
    pub fn iops(&self) -> f64 {
        self.read_iops + self.write_iops
    }
}

/// The rounds of a point: their field-wise median and spread.
#[derive(Debug, Clone, Serialize)]
pub struct Summary {
    pub median: Measurement,
    /// (max − min) / median of total IOPS, in percent.
    pub spread_pct: f64,
    pub rounds: Vec<Measurement>,
}

impl Summary {
    pub fn of(rounds: Vec<Measurement>) -> Summary {
        let med = |f: fn(&Measurement) -> f64| median(rounds.iter().map(f).collect());
        let median_m = Measurement {
            read_iops: med(|m| m.read_iops),
            write_iops: med(|m| m.write_iops),
            read_bw: med(|m| m.read_bw),
            write_bw: med(|m| m.write_bw),
            lat_mean_us: med(|m| m.lat_mean_us),
            lat_p50_us: med(|m| m.lat_p50_us),
            lat_p99_us: med(|m| m.lat_p99_us),
            lat_p999_us: med(|m| m.lat_p999_us),
            cpu_us_per_io: med(|m| m.cpu_us_per_io),
            ios: med(|m| m.ios as f64) as u64,
            seconds: med(|m| m.seconds),
            syscalls_per_io: med(|m| m.syscalls_per_io),
            sqpoll_wakeups: med(|m| m.sqpoll_wakeups as f64) as u64,
            sqpoll_plain_share: med(|m| m.sqpoll_plain_share),
        };
        let iops: Vec<f64> = rounds.iter().map(Measurement::iops).collect();
        let lo = iops.iter().cloned().fold(f64::INFINITY, f64::min);
        let hi = iops.iter().cloned().fold(0.0, f64::max);
        let mid = median_m.iops();
        let spread_pct = if mid > 0.0 {
            (hi - lo) / mid * 100.0
        } else {
            0.0
        };
        Summary {
            median: median_m,
            spread_pct,
            rounds,
        }
    }
}

fn median(mut v: Vec<f64>) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// One point of the sweep.
#[derive(Debug, Clone, Serialize)]
pub struct Point {
    pub rw: Rw,
    pub engine: EngineKind,
    pub depth: usize,
    pub spindle: Summary,
    pub fio: Option<Summary>,
    /// Spindle's median IOPS over fio's.
    pub ratio: Option<f64>,
}

/// Everything a sweep measured.
#[derive(Debug, Clone, Serialize)]
pub struct BenchReport {
    pub target: String,
    pub readonly: bool,
    pub size: u64,
    pub bs: usize,
    pub direct: bool,
    pub mix: u8,
    pub runtime_s: f64,
    pub rounds: usize,
    pub cpus: usize,
    pub kernel: String,
    pub fio_version: Option<String>,
    pub device: Option<device::DeviceInfo>,
    /// Engines that were asked for but could not run, and why.
    pub skipped: Vec<String>,
    /// Where SQPOLL points ran their kernel thread and application.
    pub sqpoll_placement: Option<SqpollPlacement>,
    /// Whether `uring-sqpoll` points had a polling kernel thread (`None`:
    /// no such points).
    pub sqpoll_polled: Option<bool>,
    /// How the run went about things (e.g. whether SQPOLL really polled).
    pub notes: Vec<String>,
    /// Share of the run during which some task of the machine waited for a
    /// CPU (Linux PSI), in percent: other load on a shared machine.
    pub cpu_pressure_pct: Option<f64>,
    /// The same for IO: other load on the disk.
    pub io_pressure_pct: Option<f64>,
    pub points: Vec<Point>,
}

/// Progress of a sweep, for a caller that prints it.
#[derive(Debug, Clone)]
pub enum Progress<'a> {
    /// A message (test file created, engine skipped, …).
    Note(String),
    /// A measurement finished.
    Measured {
        rw: Rw,
        engine: EngineKind,
        depth: usize,
        round: usize,
        by: &'a str,
        m: &'a Measurement,
    },
}

/// A progress line as `spindle iobench` prints it: the note, or the
/// point, round and figures of a measurement.
impl std::fmt::Display for Progress<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Progress::Note(msg) => f.write_str(msg),
            Progress::Measured {
                rw,
                engine,
                depth,
                round,
                by,
                m,
            } => write!(
                f,
                "{:<8} {:<12} depth {:>3} round {} {:<7} {:>9.0} IOPS  p99 {:>8.1} us",
                rw.name(),
                engine.name(),
                depth,
                round + 1,
                by,
                m.iops(),
                m.lat_p99_us
            ),
        }
    }
}

/// Runs the sweep. Creates (and always removes) the test file, or reads the
/// read-only target. Repeated engines or patterns are measured once.
pub fn run(
    cfg: &BenchConfig,
    progress: &mut dyn FnMut(Progress<'_>),
) -> Result<BenchReport, BenchError> {
    let cfg = &cfg.without_repeats();
    cfg.check()?;
    let fio_version = if cfg.fio {
        Some(fio::version(&cfg.fio_program)?)
    } else {
        None
    };
    let file = testfile::prepare(cfg, progress)?;
    let pressure0 = device::PressureTotals::now();
    let started = std::time::Instant::now();
    let size = file.size();
    let blocks = size / cfg.bs as u64;
    let device = device::DeviceInfo::for_path(file.path());
    let mut skipped = Vec::new();
    let mut engines = Vec::new();
    for &e in &cfg.engines {
        match probe(cfg, e) {
            Ok(()) => engines.push(e),
            Err(why) => {
                progress(Progress::Note(format!("skipping {e}: {why}")));
                skipped.push(format!("{e}: {why}"));
            }
        }
    }
    let mut notes = Vec::new();
    let mut sqpoll_polled = None;
    if cfg.engines.contains(&EngineKind::UringSqpoll) {
        let cpus = crate::sys::allowed_cpus().map_or(0, |c| c.len());
        let polls =
            cfg.sqpoll_policy == crate::SqpollPolicy::Always || cpus >= crate::SPARE_CORE_CPUS;
        let note = if polls {
            format!(
                "uring-sqpoll polls with a kernel thread ({cpus} CPUs, policy {:?})",
                cfg.sqpoll_policy
            )
        } else {
            format!("uring-sqpoll: no spare core ({cpus} CPUs), so it submits as plain io_uring does (--sqpoll-auto)")
        };
        progress(Progress::Note(note.clone()));
        notes.push(note);
        sqpoll_polled = Some(polls);
    }
    let placement = sqpoll_placement(cfg);
    if let Some(p) = &placement {
        progress(Progress::Note(format!(
            "SQPOLL points: kernel thread on CPU {}, application on CPU {}",
            p.sq_cpu,
            p.app_cpus
                .iter()
                .map(|c| c.to_string())
                .collect::<Vec<_>>()
                .join(",")
        )));
    }
    // Engines are interleaved within a point (every engine's round r runs
    // before any engine's round r + 1, in an order that rotates), so the
    // engines of one depth are compared on the same minutes of a shared
    // disk: run one engine's depths after another's, and a ratio between
    // them carries whatever the disk did meanwhile.
    let mut points = Vec::new();
    for &rw in &cfg.rws {
        for &depth in &cfg.depths {
            let mut runs: Vec<(
                workload::PointSpec<'_>,
                fio::FioJob<'_>,
                Vec<Measurement>,
                Vec<Measurement>,
            )> = engines
                .iter()
                .map(|&engine| {
                    let spec = workload::PointSpec {
                        path: file.path(),
                        readonly: file.readonly(),
                        direct: cfg.direct,
                        engine,
                        depth,
                        rw,
                        mix: cfg.mix,
                        bs: cfg.bs,
                        blocks,
                        runtime: cfg.runtime,
                        seed: cfg.seed ^ depth as u64,
                        sqpoll_idle_ms: cfg.sqpoll_idle_ms,
                        sqpoll: placement
                            .clone()
                            .filter(|_| engine == EngineKind::UringSqpoll),
                        sqpoll_policy: cfg.sqpoll_policy,
                        sqpoll_plain_above: cfg.sqpoll_plain_above,
                        sqpoll_spin_us: cfg.sqpoll_spin_us,
                        uring: cfg.uring.clone(),
                    };
                    let job = fio::FioJob {
                        program: &cfg.fio_program,
                        path: file.path(),
                        size,
                        bs: cfg.bs,
                        rw,
                        mix: cfg.mix,
                        depth,
                        engine,
                        direct: cfg.direct,
                        runtime: cfg.runtime,
                        readonly: file.readonly(),
                        sqpoll: placement
                            .as_ref()
                            .filter(|_| engine == EngineKind::UringSqpoll),
                    };
                    (spec, job, Vec::new(), Vec::new())
                })
                .collect();
            for round in 0..cfg.rounds {
                let n = runs.len();
                for k in 0..n {
                    let (spec, job, ours, theirs) = &mut runs[(k + round) % n];
                    let engine = spec.engine;
                    // Alternate who goes first, so neither always runs on a
                    // disk the other just warmed or left busy.
                    let fio_first = cfg.fio && round % 2 == 1;
                    if fio_first {
                        theirs.push(fio::run(job)?);
                    }
                    let m = workload::run_point(spec)?;
                    progress(Progress::Measured {
                        rw,
                        engine,
                        depth,
                        round,
                        by: "spindle",
                        m: &m,
                    });
                    ours.push(m);
                    if cfg.fio && !fio_first {
                        theirs.push(fio::run(job)?);
                    }
                    if let Some(m) = theirs.last().filter(|_| cfg.fio) {
                        progress(Progress::Measured {
                            rw,
                            engine,
                            depth,
                            round,
                            by: "fio",
                            m,
                        });
                    }
                }
            }
            for (spec, _, ours, theirs) in runs {
                let spindle = Summary::of(ours);
                let fio = cfg.fio.then(|| Summary::of(theirs));
                let ratio = fio
                    .as_ref()
                    .filter(|f| f.median.iops() > 0.0)
                    .map(|f| spindle.median.iops() / f.median.iops());
                points.push(Point {
                    rw,
                    engine: spec.engine,
                    depth,
                    spindle,
                    fio,
                    ratio,
                });
            }
        }
    }
    // Reported engine by engine, each one's depths in order.
    points.sort_by_key(|p| {
        (
            cfg.rws.iter().position(|&r| r == p.rw),
            engines.iter().position(|&e| e == p.engine),
            cfg.depths.iter().position(|&d| d == p.depth),
        )
    });
    let (cpu_pressure_pct, io_pressure_pct) =
        device::PressureTotals::now().since(&pressure0, started.elapsed().as_micros() as u64);
    let report = BenchReport {
        cpu_pressure_pct,
        io_pressure_pct,
        target: file.describe(),
        readonly: file.readonly(),
        size,
        bs: cfg.bs,
        direct: cfg.direct,
        mix: cfg.mix,
        runtime_s: cfg.runtime.as_secs_f64(),
        rounds: cfg.rounds,
        cpus: std::thread::available_parallelism().map_or(1, |n| n.get()),
        kernel: std::fs::read_to_string("/proc/sys/kernel/osrelease")
            .map(|s| s.trim().to_string())
            .unwrap_or_default(),
        fio_version,
        device,
        skipped,
        sqpoll_placement: placement,
        sqpoll_polled,
        notes,
        points,
    };
    file.finish(progress)?;
    Ok(report)
}

/// CPUs for an SQPOLL point: the kernel thread's and the application's.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SqpollPlacement {
    pub sq_cpu: u32,
    pub app_cpus: Vec<usize>,
}

/// The kernel thread gets the last allowed CPU (or the one asked for), the
/// application the others; `None` without pinning or with a single CPU.
fn sqpoll_placement(cfg: &BenchConfig) -> Option<SqpollPlacement> {
    if !cfg.sqpoll_pin || !cfg.engines.contains(&EngineKind::UringSqpoll) {
        return None;
    }
    let allowed = crate::sys::allowed_cpus().ok()?;
    let sq = match cfg.sqpoll_cpu {
        Some(c) => c as usize,
        None => *allowed.last()?,
    };
    let app: Vec<usize> = allowed.into_iter().filter(|&c| c != sq).collect();
    if app.is_empty() {
        return None;
    }
    Some(SqpollPlacement {
        sq_cpu: sq as u32,
        app_cpus: app,
    })
}

/// Whether `engine` can be set up here.
fn probe(cfg: &BenchConfig, engine: EngineKind) -> Result<(), String> {
    let mut c = crate::EngineConfig::new(engine, 1);
    c.uring = cfg.uring.clone();
    c.sqpoll_idle_ms = cfg.sqpoll_idle_ms;
    c.sqpoll_cpu = cfg.sqpoll_cpu;
    c.sqpoll_policy = cfg.sqpoll_policy;
    crate::engine::open(&c).map(drop).map_err(|e| e.to_string())
}
