//! `spindle scan DIR...`: add and refresh audio files in the library.
//!
//! On a terminal a progress bar shows files/s and an ETA; otherwise one
//! log line every few seconds. Unreadable files are printed with their
//! reason as they happen and counted in the summary.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::Context;
use clap::Args;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use spindle_media::scan::{Phase, ScanObserver};
use spindle_media::{ScanOptions, ScanReport};
use spindle_store::Db;

#[derive(Debug, Args)]
pub struct ScanArgs {
    /// Music folders to scan (recursively).
    #[arg(required = true, value_name = "DIR")]
    pub dirs: Vec<PathBuf>,
    /// Files per transaction.
    #[arg(long, default_value_t = 500)]
    pub batch: usize,
    /// Print nothing but errors and the summary.
    #[arg(long, short)]
    pub quiet: bool,
}

pub fn run(args: &ScanArgs, data_dir: &Path) -> anyhow::Result<ExitCode> {
    let db = Db::open(data_dir)
        .with_context(|| format!("opening the library in {}", data_dir.display()))?;
    for w in &db.open_report().warnings {
        eprintln!("spindle: warning: {w}");
    }
    let opts = ScanOptions {
        batch_size: args.batch,
        ..ScanOptions::default()
    };
    let mut obs = Reporter::new(!args.quiet && std::io::stderr().is_terminal(), args.quiet);
    let report = spindle_media::scan(&db, &args.dirs, &opts, &mut obs)?;
    obs.finish();
    print_summary(&report);
    Ok(ExitCode::SUCCESS)
}

pub fn print_summary(r: &ScanReport) {
    let secs = r.elapsed.as_secs_f64();
    println!(
        "scanned {} files in {:.2}s: {} added, {} updated, {} unchanged, {} moved, {} removed, {} marked missing, {} unreadable",
        r.files, secs, r.added, r.updated, r.unchanged, r.moved, r.removed, r.marked_missing, r.failed.len()
    );
}

/// Draws a bar on a terminal, log lines elsewhere.
pub struct Reporter {
    bar: Option<ProgressBar>,
    quiet: bool,
    total: u64,
    done: u64,
    started: Instant,
    last_log: Instant,
}

impl Reporter {
    pub fn new(terminal: bool, quiet: bool) -> Reporter {
        let bar = terminal.then(|| {
            let bar = ProgressBar::with_draw_target(Some(0), ProgressDrawTarget::stderr());
            bar.set_style(
                ProgressStyle::with_template(
                    "{msg} [{bar:30}] {pos}/{len} files, {per_sec}, ETA {eta}",
                )
                .unwrap_or_else(|_| ProgressStyle::default_bar())
                .progress_chars("=> "),
            );
            bar
        });
        Reporter {
            bar,
            quiet,
            total: 0,
            done: 0,
            started: Instant::now(),
            last_log: Instant::now(),
        }
    }

    pub fn finish(&mut self) {
        if let Some(bar) = self.bar.take() {
            bar.finish_and_clear();
        }
    }
}

impl ScanObserver for Reporter {
    fn phase(&mut self, phase: Phase) {
        match phase {
            Phase::Walking => {
                if let Some(bar) = &self.bar {
                    bar.set_message("walking");
                }
            }
            Phase::Reading { total } => {
                self.total = total;
                self.done = 0;
                self.started = Instant::now();
                self.last_log = Instant::now();
                if let Some(bar) = &self.bar {
                    bar.set_length(total);
                    bar.set_position(0);
                    bar.reset_eta();
                    bar.set_message("reading tags");
                } else if !self.quiet && total > 0 {
                    eprintln!("scan: reading tags of {total} new or changed files");
                }
            }
            _ => {
                if let Some(bar) = &self.bar {
                    bar.set_message("finishing");
                }
            }
        }
    }

    fn advance(&mut self, n: u64) {
        self.done += n;
        if let Some(bar) = &self.bar {
            bar.inc(n);
            return;
        }
        if self.quiet || self.last_log.elapsed() < Duration::from_secs(2) {
            return;
        }
        self.last_log = Instant::now();
        let secs = self.started.elapsed().as_secs_f64().max(1e-3);
        let rate = self.done as f64 / secs;
        let eta = (self.total.saturating_sub(self.done)) as f64 / rate.max(1e-3);
        eprintln!(
            "scan: {}/{} files, {:.0} files/s, ETA {:.0}s",
            self.done, self.total, rate, eta
        );
    }

    fn failed(&mut self, path: &Path, reason: &str) {
        let line = format!("spindle: cannot read {}: {reason}", path.display());
        match &self.bar {
            Some(bar) => bar.println(line),
            None => eprintln!("{line}"),
        }
    }
}
