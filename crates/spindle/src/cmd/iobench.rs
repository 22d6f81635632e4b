//! `spindle iobench`: IOPS and latency against queue depth, per IO engine,
//! optionally beside fio. The sweep lives in `spindle_io::bench`; this file
//! only turns the command line into a `BenchConfig` and prints the results.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Context;
use spindle_io::bench::{self, BenchConfig, Rw, Target};
use spindle_io::{units, EngineKind, UringPolicy};

/// Arguments of `spindle iobench`.
#[derive(Debug, clap::Args)]
pub struct IobenchArgs {
    /// Directory to create the test file in (default: the current
    /// directory); with --device-readonly, the file or block device to read.
    pub path: Option<PathBuf>,
    /// Test-file size (with --device-readonly: how much of the target to
    /// use, default all of it).
    #[arg(long, value_parser = parse_size, value_name = "SIZE", help = "Test-file size, e.g. 64M, 1G [default: 1G]")]
    pub size: Option<u64>,
    /// Queue depths to measure.
    #[arg(long, value_delimiter = ',', default_value = "1,2,4,8,16,32,64,128")]
    pub depths: Vec<usize>,
    /// Engines: psync (depth N = N threads), uring, uring-sqpoll.
    #[arg(long, value_delimiter = ',', value_parser = EngineKind::parse, default_value = "psync,uring,uring-sqpoll")]
    pub engines: Vec<EngineKind>,
    /// Access patterns: randread, randrw.
    #[arg(long, value_delimiter = ',', value_parser = Rw::parse, default_value = "randread,randrw")]
    pub rw: Vec<Rw>,
    /// Percentage of reads in randrw.
    #[arg(long, default_value_t = 70, value_parser = clap::value_parser!(u8).range(0..=100))]
    pub mix: u8,
    /// Block size.
    #[arg(long, default_value = "4k", value_parser = parse_size)]
    pub bs: u64,
    /// Time per point and round.
    #[arg(long, default_value = "5s", value_parser = units::parse_duration)]
    pub runtime: Duration,
    /// Bypass the page cache (O_DIRECT).
    #[arg(long)]
    pub direct: bool,
    /// Rounds per point; the table shows the median and the spread.
    #[arg(long, default_value_t = 3)]
    pub rounds: usize,
    /// Also run fio at every point and print Spindle/fio ratios.
    #[arg(long)]
    pub fio: bool,
    /// The fio program.
    #[arg(long, default_value = "fio", value_name = "PROGRAM")]
    pub fio_bin: PathBuf,
    /// Print the results as JSON (to FILE, or to stdout instead of the table).
    #[arg(long, value_name = "FILE", num_args = 0..=1, default_missing_value = "-")]
    pub json: Option<PathBuf>,
    /// Write the chart as SVG to FILE and as PNG next to it.
    #[arg(long, value_name = "FILE.svg", default_value = "iobench.svg")]
    pub chart: PathBuf,
    /// Write no chart.
    #[arg(long)]
    pub no_chart: bool,
    /// Read PATH (an existing file or block device) without writing to it.
    #[arg(long)]
    pub device_readonly: bool,
    /// Never use io_uring (as SPINDLE_IO_URING=0 does); its engines are skipped.
    #[arg(long)]
    pub no_uring: bool,
    /// Milliseconds the SQPOLL kernel thread polls an idle ring before it sleeps.
    #[arg(long, default_value_t = 2, value_name = "MS")]
    pub sqpoll_idle: u32,
    /// Give the SQPOLL kernel thread a CPU of its own (the last one allowed,
    /// or --sqpoll-cpu) and keep the application off it; fio gets the same.
    #[arg(long)]
    pub sqpoll_pin: bool,
    /// Run SQPOLL points as engines do by default: poll only with a spare
    /// core (3+ CPUs), else submit plainly. Without it SQPOLL always polls.
    #[arg(long)]
    pub sqpoll_auto: bool,
    /// The CPU for the SQPOLL kernel thread (implies --sqpoll-pin).
    #[arg(long, value_name = "CPU")]
    pub sqpoll_cpu: Option<u32>,
    /// SQPOLL: microseconds a wait watches the completion ring before it
    /// sleeps in the kernel (0: sleep at once).
    #[arg(long, value_name = "US", default_value_t = spindle_io::DEFAULT_SQPOLL_SPIN_US)]
    pub sqpoll_spin_us: u32,
    /// SQPOLL: with this many reads in flight, send new ones by a plain
    /// ring and let the poller sleep (0: always the poller, as fio does).
    #[arg(long, value_name = "N", default_value_t = spindle_io::DEFAULT_SQPOLL_PLAIN_ABOVE)]
    pub sqpoll_plain_above: u32,
}

fn parse_size(s: &str) -> Result<u64, String> {
    units::parse_size(s)
}

/// Turns the arguments into the library's config.
fn config(args: &IobenchArgs) -> anyhow::Result<BenchConfig> {
    let target = match (&args.path, args.device_readonly) {
        (Some(p), true) => Target::ReadOnly(p.clone()),
        (None, true) => anyhow::bail!("--device-readonly needs a PATH: the file or device to read"),
        (Some(p), false) => Target::TempFileIn(p.clone()),
        (None, false) => Target::TempFileIn(PathBuf::from(".")),
    };
    let mut cfg = BenchConfig::new(target);
    cfg.size = args.size;
    cfg.bs = usize::try_from(args.bs).context("--bs is too large")?;
    cfg.depths = args.depths.clone();
    cfg.engines = args.engines.clone();
    cfg.rws = args.rw.clone();
    cfg.mix = args.mix;
    cfg.runtime = args.runtime;
    cfg.direct = args.direct;
    cfg.rounds = args.rounds;
    cfg.fio = args.fio;
    cfg.fio_program = args.fio_bin.clone();
    cfg.sqpoll_idle_ms = args.sqpoll_idle;
    cfg.sqpoll_cpu = args.sqpoll_cpu;
    cfg.sqpoll_plain_above = args.sqpoll_plain_above;
    cfg.sqpoll_spin_us = args.sqpoll_spin_us;
    if args.sqpoll_auto {
        cfg.sqpoll_policy = spindle_io::SqpollPolicy::IfSpareCore;
    }
    cfg.sqpoll_pin = args.sqpoll_pin || args.sqpoll_cpu.is_some();
    if args.no_uring {
        cfg.uring = UringPolicy::Deny("--no-uring".into());
    }
    Ok(cfg)
}

pub fn run(args: &IobenchArgs) -> anyhow::Result<()> {
    let cfg = config(args)?;
    let json_stdout = args.json.as_deref() == Some(Path::new("-"));
    let report = bench::run(&cfg, &mut |p| eprintln!("iobench: {p}"))?;
    let text = bench::report::text(&report);
    if json_stdout {
        eprintln!("{text}");
    } else {
        println!("{text}");
    }
    if let Some(path) = &args.json {
        let json = serde_json::to_string_pretty(&report).context("serialising the report")?;
        if json_stdout {
            println!("{json}");
        } else {
            std::fs::write(path, json + "\n")
                .with_context(|| format!("writing {}", path.display()))?;
            eprintln!("iobench: wrote {}", path.display());
        }
    }
    if !args.no_chart {
        let (svg, png) = bench::chart::write(&report, &args.chart)?;
        eprintln!("iobench: wrote {} and {}", svg.display(), png.display());
    }
    Ok(())
}
