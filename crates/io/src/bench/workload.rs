//! Running one point of the sweep on Spindle's engines: random aligned
//! blocks, a read/write mix, a fixed depth, for a fixed time.

use std::path::Path;
use std::sync::Barrier;
use std::time::{Duration, Instant};

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use super::hist::Histogram;
use super::{Measurement, Rw};
use crate::engine::{
    open_file, Access, Completion, EngineConfig, EngineKind, FileId, IoEngine, Op, Request, Slot,
    UringPolicy,
};
use crate::error::BenchError;
use crate::sys::cpu_time;

/// What one point runs.
#[derive(Debug, Clone)]
pub(crate) struct PointSpec<'a> {
    pub path: &'a Path,
    pub readonly: bool,
    pub direct: bool,
    pub engine: EngineKind,
    pub depth: usize,
    pub rw: Rw,
    pub mix: u8,
    pub bs: usize,
    pub blocks: u64,
    pub runtime: Duration,
    pub seed: u64,
    pub sqpoll_idle_ms: u32,
    /// SQPOLL: pin the kernel thread and the application.
    pub sqpoll: Option<super::SqpollPlacement>,
    pub sqpoll_policy: crate::SqpollPolicy,
    /// See [`crate::EngineConfig::sqpoll_plain_above`].
    pub sqpoll_plain_above: u32,
    /// See [`crate::EngineConfig::sqpoll_spin_us`].
    pub sqpoll_spin_us: u32,
    pub uring: UringPolicy,
}

/// What a driver loop counted.
#[derive(Debug, Default)]
struct Tally {
    reads: u64,
    writes: u64,
    read_lat: Histogram,
    syscalls: u64,
    wakeups: u64,
    plain: u64,
    /// Requests submitted, the drain after the deadline included: what
    /// `plain` is a share of.
    submitted: u64,
}

impl Tally {
    fn merge(&mut self, o: Tally) {
        self.reads += o.reads;
        self.writes += o.writes;
        self.read_lat.merge(&o.read_lat);
        self.syscalls += o.syscalls;
        self.wakeups += o.wakeups;
        self.plain += o.plain;
        self.submitted += o.submitted;
    }
}

/// Runs the point and measures it.
pub(crate) fn run_point(spec: &PointSpec<'_>) -> Result<Measurement, BenchError> {
    match spec.engine {
        EngineKind::Psync => run_threads(spec),
        EngineKind::Uring | EngineKind::UringSqpoll => run_ring(spec),
    }
}

fn engine_for(
    spec: &PointSpec<'_>,
    depth: usize,
) -> Result<(Box<dyn IoEngine>, FileId), BenchError> {
    let name = spec.engine.name();
    let setup = |source| BenchError::Setup {
        engine: name,
        source,
    };
    let mut config = EngineConfig::new(spec.engine, depth);
    config.buf_size = spec.bs;
    config.direct = spec.direct;
    config.max_files = 1;
    config.sqpoll_idle_ms = spec.sqpoll_idle_ms;
    config.sqpoll_cpu = spec.sqpoll.as_ref().map(|p| p.sq_cpu);
    config.sqpoll_policy = spec.sqpoll_policy;
    config.sqpoll_plain_above = spec.sqpoll_plain_above;
    config.sqpoll_spin_us = spec.sqpoll_spin_us;
    config.uring = spec.uring.clone();
    let mut engine = crate::engine::open(&config).map_err(setup)?;
    let access = if spec.readonly {
        Access::ReadOnly
    } else {
        Access::ReadWrite
    };
    let file = open_file(spec.path, access, spec.direct).map_err(setup)?;
    let id = engine.add_file(file, access).map_err(setup)?;
    Ok((engine, id))
}

/// io_uring: one thread, `depth` requests in flight. It runs on a thread
/// of its own, so that pinning it for SQPOLL leaves the caller's alone.
fn run_ring(spec: &PointSpec<'_>) -> Result<Measurement, BenchError> {
    std::thread::scope(|s| {
        s.spawn(|| {
            if let Some(p) = &spec.sqpoll {
                crate::sys::pin_current_thread(&p.app_cpus).map_err(|source| {
                    BenchError::Other {
                        context: format!("pinning the application to CPUs {:?}", p.app_cpus),
                        source,
                    }
                })?;
            }
            run_ring_here(spec)
        })
        .join()
        .unwrap_or_else(|_| {
            Err(BenchError::Config(
                "the io_uring driver thread panicked".into(),
            ))
        })
    })
}

fn run_ring_here(spec: &PointSpec<'_>) -> Result<Measurement, BenchError> {
    let (mut engine, file) = engine_for(spec, spec.depth)?;
    let cpu0 = cpu_time();
    let start = Instant::now();
    let tally = drive(engine.as_mut(), file, spec, start + spec.runtime, spec.seed)?;
    let elapsed = start.elapsed().min(spec.runtime);
    let cpu = cpu_time().saturating_sub(cpu0);
    drop(engine);
    Ok(measure(spec, tally, elapsed, cpu))
}

/// psync: `depth` threads, one request each, like fio's psync with
/// `numjobs=depth`.
fn run_threads(spec: &PointSpec<'_>) -> Result<Measurement, BenchError> {
    let barrier = Barrier::new(spec.depth + 1);
    let (tally, elapsed, cpu) = std::thread::scope(|s| {
        let handles: Vec<_> = (0..spec.depth)
            .map(|t| {
                let barrier = &barrier;
                s.spawn(move || {
                    let made = engine_for(spec, 1);
                    barrier.wait();
                    let (mut engine, file) = made?;
                    // Every thread reads the same start time through the
                    // barrier; each computes its own deadline right after.
                    let deadline = Instant::now() + spec.runtime;
                    drive(
                        engine.as_mut(),
                        file,
                        spec,
                        deadline,
                        spec.seed ^ (t as u64 + 1),
                    )
                })
            })
            .collect();
        barrier.wait();
        let cpu0 = cpu_time();
        let start = Instant::now();
        let mut total = Tally::default();
        let mut first_err = None;
        for h in handles {
            match h.join() {
                Ok(Ok(t)) => total.merge(t),
                Ok(Err(e)) => {
                    first_err.get_or_insert(e);
                }
                Err(_) => {
                    first_err
                        .get_or_insert(BenchError::Config("a psync worker thread panicked".into()));
                }
            }
        }
        let elapsed = start.elapsed().min(spec.runtime);
        let cpu = cpu_time().saturating_sub(cpu0);
        match first_err {
            Some(e) => Err(e),
            None => Ok((total, elapsed, cpu)),
        }
    })?;
    Ok(measure(spec, tally, elapsed, cpu))
}

fn measure(spec: &PointSpec<'_>, t: Tally, elapsed: Duration, cpu: Duration) -> Measurement {
    let secs = elapsed.as_secs_f64().max(1e-9);
    let ios = t.reads + t.writes;
    let us = |ns: f64| ns / 1000.0;
    Measurement {
        read_iops: t.reads as f64 / secs,
        write_iops: t.writes as f64 / secs,
        read_bw: (t.reads * spec.bs as u64) as f64 / secs,
        write_bw: (t.writes * spec.bs as u64) as f64 / secs,
        lat_mean_us: us(t.read_lat.mean_ns()),
        lat_p50_us: us(t.read_lat.quantile_ns(0.50) as f64),
        lat_p99_us: us(t.read_lat.quantile_ns(0.99) as f64),
        lat_p999_us: us(t.read_lat.quantile_ns(0.999) as f64),
        cpu_us_per_io: if ios == 0 {
            0.0
        } else {
            cpu.as_secs_f64() * 1e6 / ios as f64
        },
        ios,
        seconds: secs,
        syscalls_per_io: if ios == 0 {
            0.0
        } else {
            t.syscalls as f64 / ios as f64
        },
        sqpoll_wakeups: t.wakeups,
        sqpoll_plain_share: if t.submitted == 0 {
            0.0
        } else {
            t.plain as f64 / t.submitted as f64
        },
    }
}

/// The closed loop: keep every slot busy until the deadline, then drain.
fn drive(
    engine: &mut dyn IoEngine,
    file: FileId,
    spec: &PointSpec<'_>,
    deadline: Instant,
    seed: u64,
) -> Result<Tally, BenchError> {
    let name = spec.engine.name();
    let mut rng = SmallRng::seed_from_u64(seed);
    let depth = engine.depth();
    for s in 0..depth {
        if let Some(buf) = engine.buf_mut(Slot(s)) {
            buf.fill(0x5A ^ s as u8);
        }
    }
    let mut started = vec![Instant::now(); depth];
    let mut tally = Tally::default();
    let next = |slot: usize, rng: &mut SmallRng| {
        let op = match spec.rw {
            Rw::RandRead => Op::Read,
            Rw::RandRw if rng.gen_range(0..100u8) < spec.mix => Op::Read,
            Rw::RandRw => Op::Write,
        };
        Request {
            file,
            op,
            offset: rng.gen_range(0..spec.blocks) * spec.bs as u64,
            len: spec.bs,
            slot: Slot(slot),
        }
    };
    let submit = |engine: &mut dyn IoEngine, req: Request| {
        engine.submit(req).map_err(|source| BenchError::Submit {
            engine: name,
            source,
        })
    };
    let now = Instant::now();
    for (slot, t) in started.iter_mut().enumerate() {
        submit(engine, next(slot, &mut rng))?;
        *t = now;
    }
    let mut done: Vec<Completion> = Vec::with_capacity(depth);
    let mut open = true;
    while engine.in_flight() > 0 {
        done.clear();
        engine
            .wait(1, &mut done)
            .map_err(|source| BenchError::Wait {
                engine: name,
                source,
            })?;
        let now = Instant::now();
        if now >= deadline {
            open = false;
        }
        for c in &done {
            check(name, c)?;
            if !open {
                continue;
            }
            let slot = c.req.slot.0;
            match c.req.op {
                Op::Read => {
                    tally.reads += 1;
                    let ns = now.duration_since(started[slot]).as_nanos();
                    tally.read_lat.record(ns.min(u64::MAX as u128) as u64);
                }
                Op::Write => tally.writes += 1,
            }
            submit(engine, next(slot, &mut rng))?;
            started[slot] = now;
        }
    }
    let stats = engine.stats();
    tally.syscalls = stats.syscalls;
    tally.wakeups = stats.sqpoll_wakeups;
    tally.plain = stats.sqpoll_plain;
    tally.submitted = stats.submitted;
    Ok(tally)
}

fn check(engine: &'static str, c: &Completion) -> Result<(), BenchError> {
    let what = match c.result {
        Ok(n) if n == c.req.len => return Ok(()),
        Ok(n) => format!("came back short: {n} bytes (is the file shorter than --size?)"),
        Err(errno) => format!("failed: {}", std::io::Error::from_raw_os_error(errno)),
    };
    Err(BenchError::Io {
        engine,
        op: c.req.op.name(),
        offset: c.req.offset,
        len: c.req.len,
        what,
    })
}
