//! Turning a [`BenchReport`] into text: the table, and what the numbers
//! suggest about the device's settings and the engines.

use std::fmt::Write as _;

use super::{BenchReport, Point, Rw};
use crate::engine::EngineKind;

/// What `spindle iobench` prints: the [`table`], its [`legend`] and the
/// [`advice`].
pub fn text(r: &BenchReport) -> String {
    format!("{}\n{}\n\n{}", table(r), legend(r), advice(r))
}

/// The results table, one row per point (medians of the rounds).
pub fn table(r: &BenchReport) -> String {
    let fio = r.points.iter().any(|p| p.fio.is_some());
    let mut out = String::new();
    let _ = write!(
        out,
        "{:<8} {:<12} {:>5} {:>9} {:>9} {:>8} {:>8} {:>8} {:>8} {:>8} {:>7} {:>7} {:>6}",
        "rw",
        "engine",
        "depth",
        "read/s",
        "write/s",
        "MiB/s",
        "mean_us",
        "p50_us",
        "p99_us",
        "p999_us",
        "cpu_us",
        "sys/io",
        "spread"
    );
    if fio {
        let _ = write!(out, " {:>9} {:>8} {:>6}", "fio_iops", "fio_p99", "ratio");
    }
    out.push('\n');
    for p in &r.points {
        let m = &p.spindle.median;
        let _ = write!(
            out,
            "{:<8} {:<12} {:>5} {:>9.0} {:>9.0} {:>8.1} {:>8.1} {:>8.1} {:>8.1} {:>8.1} {:>7.1} {:>7.2} {:>5.1}%",
            p.rw.name(),
            p.engine.name(),
            p.depth,
            m.read_iops,
            m.write_iops,
            (m.read_bw + m.write_bw) / (1 << 20) as f64,
            m.lat_mean_us,
            m.lat_p50_us,
            m.lat_p99_us,
            m.lat_p999_us,
            m.cpu_us_per_io,
            m.syscalls_per_io,
            p.spindle.spread_pct,
        );
        if let Some(f) = &p.fio {
            let _ = write!(
                out,
                " {:>9.0} {:>8.1} {:>6.2}",
                f.median.iops(),
                f.median.lat_p99_us,
                p.ratio.unwrap_or(0.0)
            );
        }
        out.push('\n');
    }
    out
}

/// A one-paragraph legend for the table.
pub fn legend(r: &BenchReport) -> String {
    let mut s = String::from(
        "read/s, write/s: IOPS; latencies are of reads, from submission to completion; \
         cpu_us: process CPU time per IO (all threads, SQPOLL's kernel thread included); \
         sys/io: kernel entries per IO; spread: (max-min)/median of IOPS over the rounds. \
         psync at depth N is N threads, one IO each (fio: psync, numjobs=N).",
    );
    if r.points.iter().any(|p| p.fio.is_some()) {
        s.push_str(" ratio: Spindle IOPS / fio IOPS at the same point.");
    }
    s
}

fn best(points: &[&Point]) -> Option<(usize, f64)> {
    points
        .iter()
        .map(|p| (p.depth, p.spindle.median.iops()))
        .max_by(|a, b| a.1.total_cmp(&b.1))
}

/// The depth where IOPS stops growing: the smallest depth that reaches 90%
/// of the best IOPS of the curve.
pub fn knee(points: &[&Point]) -> Option<(usize, f64)> {
    let (_, top) = best(points)?;
    points
        .iter()
        .filter(|p| p.spindle.median.iops() >= 0.9 * top)
        .map(|p| (p.depth, p.spindle.median.iops()))
        .min_by_key(|(d, _)| *d)
}

fn curve(r: &BenchReport, rw: Rw, engine: EngineKind) -> Vec<&Point> {
    let mut v: Vec<&Point> = r
        .points
        .iter()
        .filter(|p| p.rw == rw && p.engine == engine)
        .collect();
    v.sort_by_key(|p| p.depth);
    v
}

/// SQPOLL's IOPS over plain io_uring's at each depth both ran.
pub fn sqpoll_ratios(r: &BenchReport, rw: Rw) -> Vec<(usize, f64)> {
    let plain = curve(r, rw, EngineKind::Uring);
    curve(r, rw, EngineKind::UringSqpoll)
        .iter()
        .filter_map(|s| {
            let p = plain.iter().find(|p| p.depth == s.depth)?;
            let base = p.spindle.median.iops();
            (base > 0.0).then(|| (s.depth, s.spindle.median.iops() / base))
        })
        .collect()
}

/// The device section and what the measurements suggest.
pub fn advice(r: &BenchReport) -> String {
    let mut o = String::new();
    let _ = writeln!(o, "Device");
    match &r.device {
        None => {
            let _ = writeln!(
                o,
                "  no block device found behind the target (tmpfs or a network filesystem?)"
            );
        }
        Some(d) => {
            let opt = |v: Option<u64>| v.map_or("n/a".to_string(), |v| v.to_string());
            let _ = writeln!(
                o,
                "  {}{}{}: rotational {}, scheduler {} (of {}), nr_requests {}, read_ahead_kb {}, device/queue_depth {}, hw queues {} x {} tags",
                d.name,
                d.partition.as_ref().map_or(String::new(), |p| format!(" (partition {p})")),
                d.model.as_ref().map_or(String::new(), |m| format!(" [{m}]")),
                d.rotational.map_or("n/a", |r| if r { "1" } else { "0" }),
                d.scheduler.as_deref().unwrap_or("n/a"),
                if d.schedulers.is_empty() { "n/a".to_string() } else { d.schedulers.join(" ") },
                opt(d.nr_requests),
                opt(d.read_ahead_kb),
                opt(d.queue_depth),
                d.hw_queues,
                opt(d.hw_tags),
            );
            if !d.slaves.is_empty() {
                let _ = writeln!(o, "  built on: {}", d.slaves.join(", "));
            }
        }
    }
    if r.cpu_pressure_pct.is_some() || r.io_pressure_pct.is_some() {
        let pct = |v: Option<f64>| v.map_or("n/a".to_string(), |v| format!("{v:.0}%"));
        let _ = writeln!(
            o,
            "  machine load during the run (Linux PSI, some tasks stalled): CPU {}, IO {}{}",
            pct(r.cpu_pressure_pct),
            pct(r.io_pressure_pct),
            if r.cpu_pressure_pct.unwrap_or(0.0) > 20.0 || r.io_pressure_pct.unwrap_or(0.0) > 20.0 {
                " — other work competed with the benchmark; compare ratios, not absolute figures"
            } else {
                ""
            }
        );
    }
    let _ = writeln!(o, "\nWhat the numbers suggest");
    let mut kinds: Vec<(Rw, EngineKind)> = r.points.iter().map(|p| (p.rw, p.engine)).collect();
    kinds.dedup();
    for &(rw, engine) in &kinds {
        let c = curve(r, rw, engine);
        let (Some((kd, ki)), Some((bd, bi))) = (knee(&c), best(&c)) else {
            continue;
        };
        let mut line = format!(
            "  {} {}: IOPS stops growing at depth {kd} ({ki:.0}/s; best {bi:.0}/s at depth {bd})",
            engine.name(),
            rw.name()
        );
        let at = |d: usize| {
            c.iter()
                .find(|p| p.depth == d)
                .map(|p| p.spindle.median.iops())
        };
        if let (Some(q1), Some(q32)) = (at(1), at(32)) {
            if q1 > 0.0 {
                let _ = write!(line, "; depth 32 gives {:.1}x depth 1", q32 / q1);
            }
        }
        let _ = writeln!(o, "{line}.");
    }
    let qd1_p50 = r
        .points
        .iter()
        .filter(|p| p.depth == 1 && p.rw == Rw::RandRead)
        .map(|p| p.spindle.median.lat_p50_us)
        .fold(f64::INFINITY, f64::min);
    if let Some(d) = &r.device {
        let fast = qd1_p50.is_finite() && qd1_p50 < 1000.0 && r.direct;
        if d.rotational == Some(true) && fast {
            let _ = writeln!(
                o,
                "  sysfs says rotational, but a single read takes {qd1_p50:.0} us at depth 1 — far below a disk seek \
                 (4-8 ms): this is flash or a virtual disk reporting rotational by default, so treat it as an SSD."
            );
        }
        let ssd_like = d.rotational == Some(false) || fast;
        match d.scheduler.as_deref() {
            Some("none") | Some("noop") => {
                let _ = writeln!(
                    o,
                    "  scheduler '{}' suits small random streaming reads on flash (Last.fm's SSD streaming servers ran noop, whose multi-queue successor is none).",
                    d.scheduler.as_deref().unwrap_or("")
                );
            }
            Some(s) if ssd_like => {
                let _ = writeln!(
                    o,
                    "  scheduler '{s}' sorts and merges requests for a seeking disk; for small random reads on flash, 'none' \
                     (noop's multi-queue successor; Last.fm's SSD streaming servers ran noop) saves that work: echo none > {}/scheduler",
                    d.queue_dir().display()
                );
            }
            Some(s) => {
                let _ = writeln!(
                    o,
                    "  scheduler '{s}' on a rotational disk: reasonable; 'none' pays off only on flash."
                );
            }
            None => {}
        }
        if let Some(ra) = d.read_ahead_kb {
            let direct_note = if r.direct {
                "this run used O_DIRECT, which bypasses read-ahead"
            } else {
                "this run was buffered, so read-ahead shaped its numbers"
            };
            if ra > 32 {
                let _ = writeln!(
                    o,
                    "  read_ahead_kb {ra}: each buffered random read may pull {ra} KiB from the device; 32 KiB (Last.fm's SSD \
                     streaming servers) suits small random streaming reads: echo 32 > {}/read_ahead_kb ({direct_note}).",
                    d.queue_dir().display()
                );
            } else {
                let _ = writeln!(
                    o,
                    "  read_ahead_kb {ra}: small enough for random streaming reads (Last.fm's SSD streaming servers used 32) ({direct_note})."
                );
            }
        }
        let max_depth = r.points.iter().map(|p| p.depth).max().unwrap_or(0) as u64;
        let hw = d.queue_depth.or(d.hw_tags);
        if let Some(hw) = hw.filter(|&hw| hw < max_depth) {
            let _ = writeln!(
                o,
                "  the device queue holds {hw} requests, so depths beyond {hw} wait in the kernel, not in the device."
            );
        }
    }
    for rw in [Rw::RandRead, Rw::RandRw] {
        let ratios = sqpoll_ratios(r, rw);
        if ratios.is_empty() {
            continue;
        }
        let min = ratios
            .iter()
            .cloned()
            .min_by(|a, b| a.1.total_cmp(&b.1))
            .unwrap_or((0, 0.0));
        let max = ratios
            .iter()
            .cloned()
            .max_by(|a, b| a.1.total_cmp(&b.1))
            .unwrap_or((0, 0.0));
        let mean = ratios.iter().map(|x| x.1).sum::<f64>() / ratios.len() as f64;
        let verdict = if r.sqpoll_polled == Some(false) {
            "uring-sqpoll had no poller (no spare core), so this compares plain io_uring with itself"
        } else if mean >= 1.05 {
            "SQPOLL paid off"
        } else if mean >= 0.95 {
            "SQPOLL neither paid off nor hurt"
        } else {
            "SQPOLL did not pay off"
        };
        let cpu = |e: EngineKind| {
            let c = curve(r, rw, e);
            c.iter()
                .map(|p| p.spindle.median.cpu_us_per_io)
                .sum::<f64>()
                / c.len().max(1) as f64
        };
        let _ = writeln!(
            o,
            "  {verdict} for {} on {} CPUs: SQPOLL/plain io_uring IOPS {:.2}x on average ({:.2}x at depth {}, {:.2}x at depth {}); \
             CPU per IO {:.1} us vs {:.1} us. {}",
            rw.name(),
            r.cpus,
            mean,
            min.1,
            min.0,
            max.1,
            max.0,
            cpu(EngineKind::UringSqpoll),
            cpu(EngineKind::Uring),
            {
                let below: Vec<String> = ratios
                    .iter()
                    .filter(|x| x.1 < 0.9)
                    .map(|x| format!("{} ({:.2}x)", x.0, x.1))
                    .collect();
                match (below.is_empty(), r.cpus <= 2) {
                    (false, true) => format!(
                        "Below 0.9x plain io_uring at depth {}: with 2 CPUs the polling kernel thread takes the core the application or the interrupts need.",
                        below.join(", ")
                    ),
                    (false, false) => format!("Below 0.9x plain io_uring at depth {}.", below.join(", ")),
                    (true, true) => "At or above 0.9x plain io_uring at every depth, for a kernel thread's CPU time.".to_owned(),
                    (true, false) => {
                        "A spare core lets the kernel thread poll without taking the application's.".to_owned()
                    }
                }
            }
        );
        let handed: Vec<String> = curve(r, rw, EngineKind::UringSqpoll)
            .iter()
            .filter(|p| p.spindle.median.sqpoll_plain_share >= 0.01)
            .map(|p| {
                format!(
                    "{} ({:.0}%)",
                    p.depth,
                    p.spindle.median.sqpoll_plain_share * 100.0
                )
            })
            .collect();
        if !handed.is_empty() {
            let _ = writeln!(
                o,
                "  uring-sqpoll sent deep queues by a plain ring (share of IOs) at depth {}: past a few requests in flight the saved system calls no longer pay for the poller's core.",
                handed.join(", ")
            );
        }
    }
    let ratios: Vec<&Point> = r.points.iter().filter(|p| p.ratio.is_some()).collect();
    if !ratios.is_empty() {
        let low: Vec<String> = ratios
            .iter()
            .filter(|p| p.ratio.unwrap_or(0.0) < 0.95)
            .map(|p| {
                format!(
                    "{} {} depth {} ({:.2})",
                    p.engine.name(),
                    p.rw.name(),
                    p.depth,
                    p.ratio.unwrap_or(0.0)
                )
            })
            .collect();
        let min = ratios
            .iter()
            .filter_map(|p| p.ratio)
            .fold(f64::INFINITY, f64::min);
        if low.is_empty() {
            let _ = writeln!(
                o,
                "  Spindle reached at least 0.95x fio's IOPS at every point (lowest {min:.2}x)."
            );
        } else {
            let _ = writeln!(o, "  Below 0.95x fio's IOPS: {}.", low.join(", "));
        }
    }
    for n in &r.notes {
        let _ = writeln!(o, "  Note: {n}.");
    }
    if !r.skipped.is_empty() {
        let _ = writeln!(o, "  Skipped: {}.", r.skipped.join("; "));
    }
    o
}
