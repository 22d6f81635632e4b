//! A whole `spindle tiers simulate` run as plain data: [`SimOptions`]
//! (what was asked) becomes a checked [`Plan`] (the traces, policies and
//! sizes), [`Plan::run`] gives an [`Outcome`], and the outcome writes its
//! charts and JSON and renders its tables. The CLI only converts
//! arguments and prints.

use std::fmt;
use std::io::BufReader;
use std::path::{Path, PathBuf};
use std::time::Instant;

use super::replay::{self, ReplayError};
use super::{chart, report, targets, workload, Cell, PolicyKind, Progress, Synthetic, Trace};

/// What a run asks for (the arguments of `spindle tiers simulate`);
/// [`Plan::prepare`] checks it.
#[derive(Debug, Clone, PartialEq, clap::Args)]
pub struct SimOptions {
    /// Tracks in the synthetic catalogue.
    #[arg(long, default_value_t = 100_000)]
    pub tracks: usize,
    /// Requests per synthetic trace.
    #[arg(long, default_value_t = 5_000_000)]
    pub requests: usize,
    /// Seed of the synthetic catalogue and traces.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Plays of listening history before each synthetic trace, drawn from
    /// the popularity of that time and replayed into the policies that
    /// count popularity, as `spindle serve` replays its listens at start
    /// [default: a fifth of --requests; 0: a cold start with no history].
    #[arg(long, value_name = "PLAYS")]
    pub history: Option<usize>,
    /// Zipf exponents of the synthetic traces.
    #[arg(long, value_delimiter = ',', default_value = "0.6,0.8,1.0,1.2")]
    pub exponents: Vec<f64>,
    /// Hot-tier sizes, in percent of the catalogue's bytes.
    #[arg(
        long = "capacities",
        value_name = "CAPACITIES",
        value_delimiter = ',',
        default_value = "1,5,10,20"
    )]
    pub capacities_percent: Vec<f64>,
    /// Synthetic workloads: stationary, shifting [default: both, or none
    /// with --replay].
    #[arg(long, value_delimiter = ',')]
    pub workloads: Option<Vec<String>>,
    /// Policies to compare [default: all].
    #[arg(long, value_delimiter = ',', value_parser = PolicyKind::parse)]
    pub policies: Option<Vec<PolicyKind>>,
    /// Replay the server's access log (`unix_ms<TAB>track_id<TAB>bytes`
    /// lines; see docs/tiers-policy.md).
    #[arg(long, value_name = "FILE")]
    pub replay: Option<PathBuf>,
    /// A small run for smoke tests: 10,000 tracks, 300,000 requests.
    #[arg(long)]
    pub quick: bool,
    /// Worker threads [default: the number of cores].
    #[arg(long)]
    pub threads: Option<usize>,
}

/// Why a run cannot start or its results cannot be written.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SimError {
    #[error("--tracks must be at least 10")]
    TooFewTracks,
    #[error("--requests must be at least 1")]
    NoRequests,
    #[error("--requests must be below 2^32")]
    TooManyRequests,
    #[error("hot-tier sizes are percentages in (0, 100], not {0}")]
    Capacity(f64),
    #[error("Zipf exponents must be in (0, 10), not {0}")]
    Exponent(f64),
    #[error("unknown workload {0:?}; expected stationary or shifting")]
    Workload(String),
    #[error("opening the access log {path}: {source}")]
    OpenLog {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("replaying {path}: {source}")]
    Replay { path: PathBuf, source: ReplayError },
    #[error("writing the chart {path}: {source}")]
    Chart {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("writing {path}: {source}")]
    Json {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// A synthetic workload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Workload {
    Stationary,
    Shifting,
}

/// A checked run: what [`Plan::run`] simulates.
#[derive(Debug)]
pub struct Plan {
    pub tracks: usize,
    pub requests: usize,
    pub seed: u64,
    pub history: usize,
    /// The synthetic traces, in order.
    pub jobs: Vec<(Workload, f64)>,
    /// The replayed log, read by [`Plan::prepare`].
    pub replayed: Option<Trace>,
    pub policies: Vec<PolicyKind>,
    /// Hot-tier sizes as shares of the catalogue's bytes.
    pub capacities: Vec<f64>,
    pub threads: usize,
}

impl Plan {
    /// Checks the options and reads the replayed log, if any.
    pub fn prepare(o: &SimOptions) -> Result<Plan, SimError> {
        let (tracks, requests) = if o.quick {
            (10_000, 300_000)
        } else {
            (o.tracks, o.requests)
        };
        if tracks < 10 {
            return Err(SimError::TooFewTracks);
        }
        if requests < 1 {
            return Err(SimError::NoRequests);
        }
        if requests > u32::MAX as usize {
            return Err(SimError::TooManyRequests);
        }
        if let Some(&c) = o
            .capacities_percent
            .iter()
            .find(|&&c| !(c > 0.0 && c <= 100.0))
        {
            return Err(SimError::Capacity(c));
        }
        if let Some(&s) = o.exponents.iter().find(|&&s| !(s > 0.0 && s < 10.0)) {
            return Err(SimError::Exponent(s));
        }
        let workloads = match (&o.workloads, &o.replay) {
            (Some(w), _) => w.clone(),
            (None, Some(_)) => Vec::new(),
            (None, None) => vec!["stationary".into(), "shifting".into()],
        };
        let workloads = workloads
            .into_iter()
            .map(|w| match w.as_str() {
                "stationary" => Ok(Workload::Stationary),
                "shifting" => Ok(Workload::Shifting),
                _ => Err(SimError::Workload(w)),
            })
            .collect::<Result<Vec<_>, _>>()?;
        let replayed = o.replay.as_deref().map(read_replay).transpose()?;
        let jobs = workloads
            .iter()
            .flat_map(|&w| o.exponents.iter().map(move |&s| (w, s)))
            .collect();
        Ok(Plan {
            tracks,
            requests,
            seed: o.seed,
            history: o.history.unwrap_or(requests / 5),
            jobs,
            replayed,
            policies: o
                .policies
                .clone()
                .unwrap_or_else(|| PolicyKind::ALL.to_vec()),
            capacities: o.capacities_percent.iter().map(|c| c / 100.0).collect(),
            threads: o
                .threads
                .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get())),
        })
    }

    /// The traces to simulate.
    pub fn traces(&self) -> usize {
        self.jobs.len() + usize::from(self.replayed.is_some())
    }

    /// Runs of one trace (one per policy and size).
    pub fn runs_per_trace(&self) -> usize {
        self.capacities.len() * self.policies.len()
    }

    /// Runs the grid; `progress` hears of every trace and finished run.
    /// Consumes the replayed trace.
    pub fn run(&mut self, progress: &(dyn Fn(Progress) + Sync)) -> Outcome {
        let started = Instant::now();
        let (tracks, requests, seed, history) =
            (self.tracks, self.requests, self.seed, self.history);
        let traces = self
            .jobs
            .iter()
            .map(move |&(w, exponent)| {
                let p = Synthetic {
                    tracks,
                    requests,
                    exponent,
                    seed,
                    history,
                };
                match w {
                    Workload::Stationary => workload::stationary(p),
                    Workload::Shifting => workload::shifting(p),
                }
            })
            .chain(self.replayed.take());
        let expected = self.traces();
        let cells = super::run(
            traces,
            expected,
            &self.capacities,
            &self.policies,
            self.threads,
            progress,
        );
        let checks = targets::check(&cells);
        Outcome {
            tracks,
            requests,
            seed,
            history,
            policies: self.policies.clone(),
            seconds: started.elapsed().as_secs_f64(),
            cells,
            checks,
        }
    }
}

/// The line announcing a run, before it starts.
impl fmt::Display for Plan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "simulating {} policies × {} hot-tier sizes × {} traces",
            self.policies.len(),
            self.capacities.len(),
            self.traces()
        )?;
        // A replayed log has no history of its own.
        if !self.jobs.is_empty() {
            write!(
                f,
                " ({} tracks, {} requests each after {} plays of listening history, seed {})",
                self.tracks, self.requests, self.history, self.seed
            )?;
        }
        write!(f, " on {} threads", self.threads)
    }
}

fn read_replay(path: &Path) -> Result<Trace, SimError> {
    let f = std::fs::File::open(path).map_err(|source| SimError::OpenLog {
        path: path.to_owned(),
        source,
    })?;
    replay::read(BufReader::new(f)).map_err(|source| SimError::Replay {
        path: path.to_owned(),
        source,
    })
}

/// The results of [`Plan::run`].
#[derive(Debug)]
pub struct Outcome {
    pub tracks: usize,
    pub requests: usize,
    pub seed: u64,
    pub history: usize,
    pub policies: Vec<PolicyKind>,
    pub seconds: f64,
    pub cells: Vec<Cell>,
    pub checks: Vec<targets::Check>,
}

impl Outcome {
    /// Writes one SVG chart per workload with results, named
    /// `PREFIX-WORKLOAD.svg`; `written` hears of each file.
    pub fn write_charts(
        &self,
        prefix: &Path,
        written: &mut dyn FnMut(&Path),
    ) -> Result<(), SimError> {
        for w in ["stationary", "shifting", "replay"] {
            let title = if w == "replay" {
                format!("Hot-tier policies, {w} workload")
            } else {
                format!(
                    "Hot-tier policies, {w} workload ({} tracks, {} requests after {} plays of history, seed {})",
                    self.tracks, self.requests, self.history, self.seed
                )
            };
            if let Some(svg) = chart::svg(&self.cells, w, &title) {
                let path = chart_path(prefix, w);
                std::fs::write(&path, svg).map_err(|source| SimError::Chart {
                    path: path.clone(),
                    source,
                })?;
                written(&path);
            }
        }
        Ok(())
    }

    /// The results as JSON: the run's parameters, every cell, the targets.
    pub fn json(&self) -> String {
        let v = serde_json::json!({
            "tracks": self.tracks,
            "requests": self.requests,
            "history": self.history,
            "seed": self.seed,
            "seconds": self.seconds,
            "cells": self.cells,
            "targets": self.checks,
        });
        serde_json::to_string_pretty(&v).unwrap_or_default()
    }

    /// Writes [`Outcome::json`] to `path`.
    pub fn write_json(&self, path: &Path) -> Result<(), SimError> {
        std::fs::write(path, self.json() + "\n").map_err(|source| SimError::Json {
            path: path.to_owned(),
            source,
        })
    }
}

/// The tables of hit ratios, a blank line, and the targets.
impl fmt::Display for Outcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&report::tables(&self.cells, &self.policies))?;
        f.write_str("\n")?;
        f.write_str(&report::target_lines(&self.checks))
    }
}

fn chart_path(prefix: &Path, workload: &str) -> PathBuf {
    let mut s = prefix.as_os_str().to_owned();
    s.push(format!("-{workload}.svg"));
    PathBuf::from(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn options() -> SimOptions {
        SimOptions {
            tracks: 200,
            requests: 2_000,
            seed: 3,
            history: None,
            exponents: vec![0.8],
            capacities_percent: vec![10.0],
            workloads: None,
            policies: Some(vec![PolicyKind::Lru, PolicyKind::Spindle]),
            replay: None,
            quick: false,
            threads: Some(2),
        }
    }

    #[test]
    fn bad_options_are_refused_with_the_flag_to_fix() {
        let bad = |f: fn(&mut SimOptions)| {
            let mut o = options();
            f(&mut o);
            Plan::prepare(&o).err().map(|e| e.to_string())
        };
        assert_eq!(
            bad(|o| o.tracks = 9).as_deref(),
            Some("--tracks must be at least 10")
        );
        assert_eq!(
            bad(|o| o.requests = 0).as_deref(),
            Some("--requests must be at least 1")
        );
        assert_eq!(
            bad(|o| o.capacities_percent = vec![5.0, 101.0]).as_deref(),
            Some("hot-tier sizes are percentages in (0, 100], not 101")
        );
        assert_eq!(
            bad(|o| o.exponents = vec![0.0]).as_deref(),
            Some("Zipf exponents must be in (0, 10), not 0")
        );
        assert_eq!(
            bad(|o| o.workloads = Some(vec!["bursty".into()])).as_deref(),
            Some("unknown workload \"bursty\"; expected stationary or shifting")
        );
        let missing = bad(|o| o.replay = Some(PathBuf::from("/nonexistent/access.log")));
        assert!(missing
            .is_some_and(|m| m.starts_with("opening the access log /nonexistent/access.log: ")));
        // --quick overrides the sizes, and so their checks.
        assert!(bad(|o| {
            o.tracks = 0;
            o.quick = true;
        })
        .is_none());
    }

    #[test]
    fn a_plan_announces_itself_and_runs_every_cell() {
        let mut plan = Plan::prepare(&options()).unwrap();
        assert_eq!(plan.history, 400);
        assert_eq!((plan.traces(), plan.runs_per_trace()), (2, 2));
        assert_eq!(
            plan.to_string(),
            "simulating 2 policies × 1 hot-tier sizes × 2 traces (200 tracks, 2000 requests each \
             after 400 plays of listening history, seed 3) on 2 threads"
        );
        let done = std::sync::atomic::AtomicUsize::new(0);
        let out = plan.run(&|p| {
            if let Progress::Done { .. } = p {
                done.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            }
        });
        assert_eq!(out.cells.len(), 4);
        assert_eq!(done.into_inner(), 4);
        let json: serde_json::Value = serde_json::from_str(&out.json()).unwrap();
        assert_eq!(json["tracks"], 200);
        assert_eq!(json["cells"].as_array().map(Vec::len), Some(4));
        assert!(out
            .to_string()
            .contains("stationary workload, byte hit ratio"));

        let dir = tempfile::tempdir().unwrap();
        let mut charts = Vec::new();
        out.write_charts(&dir.path().join("sim"), &mut |p| charts.push(p.to_owned()))
            .unwrap();
        assert_eq!(
            charts,
            [
                dir.path().join("sim-stationary.svg"),
                dir.path().join("sim-shifting.svg")
            ]
        );
    }

    #[test]
    fn a_replay_alone_runs_no_synthetic_trace() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("access.log");
        let lines: String = (0..200)
            .map(|i| format!("{}\t{}\t1000\n", 1_000 + i, i % 7))
            .collect();
        std::fs::write(&log, lines).unwrap();
        let plan = Plan::prepare(&SimOptions {
            replay: Some(log),
            ..options()
        })
        .unwrap();
        assert!(plan.jobs.is_empty());
        assert_eq!(plan.traces(), 1);
        assert!(!plan.to_string().contains("tracks"));
    }
}
