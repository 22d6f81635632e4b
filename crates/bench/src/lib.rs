//! Spindle's comparison benchmarks: harnesses that run Spindle and a peer
//! in one run and report ratios (machines are noisy; ratios travel). Each
//! takes an options struct and returns a report whose `render()` is the
//! Markdown the `spindle bench …` commands print. The options structs
//! derive `clap::Args`: their flags, defaults and help are those commands'
//! own, so the binary parses straight into them.
//!
//! * `bench library`: the seven queries of the library benchmark on a
//!   generated, realistic library, answered by Spindle's store and by
//!   SQLite in two layouts — XMMS2's own medialib schema and a tuned
//!   property table — with the same semantics, and the results
//!   cross-checked row by row ([`run_library`]; several sizes in one run:
//!   [`run_library_sizes`]).
//! * `bench scan` ([`scan`]): scanning files against `beet import`.
//! * `bench scrobble` ([`scrobble`]): scrobbles per second through
//!   `track.scrobble` against Maloja, and charts over a large history.
//! * `bench stream` ([`stream`]): streaming against nginx with wrk, and
//!   thousands of paced listeners.
//! * `bench covers` ([`covers`]): a large JPEG cover resized through
//!   the server's cover pipeline, cold and cached.
//! * `bench subsonic` ([`subsonic`]): p50/p99 of the Subsonic browsing
//!   and search methods over a generated library of 100,000 tracks.
//! * `bench transcode` ([`transcode`]): transcodes through `stream`
//!   against the same ffmpeg command run directly.
//! * `bench forward` ([`forward`]): forwarding through the journal to
//!   a local Spindle, and the drain after a one-hour outage.
//! * `tiers bench-devices` ([`devices`]): reads chosen by `%util` against
//!   by measured latency, over a fast and a slow throttled device.
//!
//! The library benchmark's parts:
//!
//! * [`gen`]: the deterministic synthetic library.
//! * [`load`]: loading it into Spindle and both SQLite layouts.
//! * [`sql`]: the queries in SQL with Spindle's semantics.
//! * [`worker`]: one contestant measured in a process of its own.
//! * [`run`]: orchestration, agreement check; [`report`]: medians,
//!   ratios, targets, Markdown.
//!
//! Shared by the harnesses: [`proc`] (ports, CPU time and memory of
//! processes) and [`spindle`] (the `spindle` binary as a contestant).
//!
//! It is *not* a micro-benchmark harness (Criterion benches live beside
//! the crates they measure), and it neither finds nor runs the binary on
//! its own: the binary passes its own path to start servers and workers
//! (the options' `spindle` field, [`spawn_worker`]), and prints.
//!
//! ```no_run
//! use spindle_bench::{run_library, run_worker, LibraryConfig};
//! let cfg = LibraryConfig::new(2000, std::env::temp_dir().join("spindle-bench-doc"));
//! let report = run_library(&cfg, &mut |req| run_worker(req), &mut |line| eprintln!("{line}"))?;
//! println!("{}", report.render());
//! # Ok::<(), spindle_bench::BenchError>(())
//! ```
#![forbid(unsafe_code)]

pub mod covers;
pub mod devices;
mod error;
pub mod forward;
pub mod gen;
pub mod load;
pub mod proc;
pub mod report;
mod rng;
pub mod run;
pub mod scan;
pub mod scrobble;
mod sizes;
pub mod spindle;
pub mod sql;
pub mod stream;
pub mod subsonic;
pub mod transcode;
mod words;
pub mod worker;

pub use covers::{run_covers, CoversOptions, CoversReport};
pub use devices::{run_devices, DevicesOptions, DevicesReport};
pub use error::{BenchError, Context};
pub use report::{LibraryReport, Summary, Target};
pub use run::{run_library, spawn_worker, worker_main, LibraryConfig};
pub use scan::{run_scan_bench, ScanBenchOptions, ScanBenchReport};
pub use scrobble::{run_history, run_rates, HistoryReport, RatesReport, ScrobbleOptions};
pub use sizes::{run_library_sizes, LibrarySizes, SizesEvent};
pub use stream::{run_stream, StreamOptions, StreamSection};
pub use subsonic::{run_subsonic, SubsonicOptions, SubsonicReport};
pub use transcode::{run_transcode, TranscodeOptions, TranscodeReport};
pub use worker::{run_worker, sql_statements, Side, SideReport, WorkerRequest, QUERIES};
