//! The `spindle iobench` command line ([`IobenchArgs`], a `clap::Args`)
//! and its turn into a [`BenchConfig`]. What to print (`--json`,
//! `--chart`) is the caller's; the rest is the sweep's.

use std::path::PathBuf;
use std::time::Duration;

use super::{BenchConfig, Rw, Target};
use crate::engine::{EngineKind, SqpollPolicy, UringPolicy};
use crate::error::BenchError;
use crate::units;

/// Arguments of `spindle iobench`.
#[derive(Debug, Clone, clap::Args)]
pub struct IobenchArgs {
    /// Directory to create the test file in (default: the current
    /// directory); with --device-readonly, the file or block device to read.
    pub path: Option<PathBuf>,
    /// Test-file size (with --device-readonly: how much of the target to
    /// use, default all of it).
    #[arg(long, value_parser = units::parse_size, value_name = "SIZE", help = "Test-file size, e.g. 64M, 1G [default: 1G]")]
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
    #[arg(long, default_value = "4k", value_parser = units::parse_size)]
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
    #[arg(long, value_name = "US", default_value_t = crate::DEFAULT_SQPOLL_SPIN_US)]
    pub sqpoll_spin_us: u32,
    /// SQPOLL: with this many reads in flight, send new ones by a plain
    /// ring and let the poller sleep (0: always the poller, as fio does).
    #[arg(long, value_name = "N", default_value_t = crate::DEFAULT_SQPOLL_PLAIN_ABOVE)]
    pub sqpoll_plain_above: u32,
}

impl IobenchArgs {
    /// The sweep these arguments ask for.
    pub fn config(&self) -> Result<BenchConfig, BenchError> {
        let target = match (&self.path, self.device_readonly) {
            (Some(p), true) => Target::ReadOnly(p.clone()),
            (None, true) => {
                return Err(BenchError::Config(
                    "--device-readonly needs a PATH: the file or device to read".into(),
                ))
            }
            (Some(p), false) => Target::TempFileIn(p.clone()),
            (None, false) => Target::TempFileIn(PathBuf::from(".")),
        };
        let mut cfg = BenchConfig::new(target);
        cfg.size = self.size;
        cfg.bs = usize::try_from(self.bs).map_err(|_| {
            BenchError::Config(format!("--bs {} is too large for this machine", self.bs))
        })?;
        cfg.depths = self.depths.clone();
        cfg.engines = self.engines.clone();
        cfg.rws = self.rw.clone();
        cfg.mix = self.mix;
        cfg.runtime = self.runtime;
        cfg.direct = self.direct;
        cfg.rounds = self.rounds;
        cfg.fio = self.fio;
        cfg.fio_program = self.fio_bin.clone();
        cfg.sqpoll_idle_ms = self.sqpoll_idle;
        cfg.sqpoll_cpu = self.sqpoll_cpu;
        cfg.sqpoll_plain_above = self.sqpoll_plain_above;
        cfg.sqpoll_spin_us = self.sqpoll_spin_us;
        if self.sqpoll_auto {
            cfg.sqpoll_policy = SqpollPolicy::IfSpareCore;
        }
        cfg.sqpoll_pin = self.sqpoll_pin || self.sqpoll_cpu.is_some();
        if self.no_uring {
            cfg.uring = UringPolicy::Deny("--no-uring".into());
        }
        Ok(cfg)
    }
}

#[cfg(test)]
mod tests {
    use clap::{Args, FromArgMatches};

    use super::*;

    fn parse(flags: &[&str]) -> Result<IobenchArgs, clap::Error> {
        let cmd = IobenchArgs::augment_args(clap::Command::new("iobench"));
        let m =
            cmd.try_get_matches_from(std::iter::once("iobench").chain(flags.iter().copied()))?;
        IobenchArgs::from_arg_matches(&m)
    }

    fn config(flags: &[&str]) -> Result<BenchConfig, BenchError> {
        parse(flags).unwrap().config()
    }

    #[test]
    fn device_readonly_without_a_path_is_refused_and_names_what_is_missing() {
        let e = config(&["--device-readonly"]).unwrap_err();
        assert!(matches!(e, BenchError::Config(_)), "{e:?}");
        assert_eq!(
            e.to_string(),
            "--device-readonly needs a PATH: the file or device to read"
        );
    }

    #[test]
    fn a_path_is_the_test_file_folder_or_with_device_readonly_the_target() {
        let cfg = config(&[]).unwrap();
        assert!(matches!(&cfg.target, Target::TempFileIn(p) if p == &PathBuf::from(".")));
        let cfg = config(&["/srv"]).unwrap();
        assert!(matches!(&cfg.target, Target::TempFileIn(p) if p == &PathBuf::from("/srv")));
        let cfg = config(&["--device-readonly", "/dev/sdz"]).unwrap();
        assert!(matches!(&cfg.target, Target::ReadOnly(p) if p == &PathBuf::from("/dev/sdz")));
    }

    #[test]
    fn the_command_line_defaults_are_the_configs_defaults() {
        let got = config(&[]).unwrap();
        let want = BenchConfig::new(Target::TempFileIn(PathBuf::from(".")));
        assert_eq!(got.size, want.size);
        assert_eq!(got.bs, want.bs);
        assert_eq!(got.depths, want.depths);
        assert_eq!(got.engines, want.engines);
        assert_eq!(got.rws, want.rws);
        assert_eq!(got.mix, want.mix);
        assert_eq!(got.runtime, want.runtime);
        assert_eq!((got.direct, got.fio), (want.direct, want.fio));
        assert_eq!(got.rounds, want.rounds);
        assert_eq!(got.fio_program, want.fio_program);
        assert_eq!(got.sqpoll_idle_ms, want.sqpoll_idle_ms);
        assert_eq!(got.sqpoll_cpu, want.sqpoll_cpu);
        assert_eq!(got.sqpoll_pin, want.sqpoll_pin);
        assert_eq!(got.sqpoll_policy, want.sqpoll_policy);
        assert_eq!(got.sqpoll_plain_above, want.sqpoll_plain_above);
        assert_eq!(got.sqpoll_spin_us, want.sqpoll_spin_us);
        assert_eq!(got.uring, want.uring);
    }

    #[test]
    fn sqpoll_flags_set_pinning_policy_and_uring() {
        let cfg = config(&["--sqpoll-cpu", "1", "--sqpoll-auto", "--no-uring"]).unwrap();
        assert_eq!(cfg.sqpoll_cpu, Some(1));
        assert!(cfg.sqpoll_pin, "--sqpoll-cpu implies --sqpoll-pin");
        assert_eq!(cfg.sqpoll_policy, SqpollPolicy::IfSpareCore);
        assert_eq!(cfg.uring, UringPolicy::Deny("--no-uring".into()));
    }

    #[test]
    fn sizes_units_and_lists_are_parsed() {
        let cfg = config(&[
            "--size",
            "64M",
            "--bs",
            "8k",
            "--depths",
            "1,4",
            "--engines",
            "psync",
            "--rw",
            "randrw",
            "--mix",
            "50",
            "--runtime",
            "250ms",
        ])
        .unwrap();
        assert_eq!(cfg.size, Some(64 << 20));
        assert_eq!(cfg.bs, 8192);
        assert_eq!(cfg.depths, [1, 4]);
        assert_eq!(cfg.engines, [EngineKind::Psync]);
        assert_eq!(cfg.rws, [Rw::RandRw]);
        assert_eq!(cfg.mix, 50);
        assert_eq!(cfg.runtime, Duration::from_millis(250));
    }

    #[test]
    fn out_of_range_or_unknown_values_are_refused_by_the_parser() {
        for flags in [
            &["--mix", "101"][..],
            &["--bs", "4q"],
            &["--engines", "aio"],
            &["--rw", "seqread"],
        ] {
            assert!(parse(flags).is_err(), "{flags:?} was taken");
        }
    }
}
