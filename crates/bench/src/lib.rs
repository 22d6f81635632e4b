//! Spindle's comparison benchmarks: commands that run Spindle and a peer
//! in one run and print ratios (machines are noisy; ratios travel).
//!
//! Today it owns `bench library`: the seed's seven queries (spec §7) on a
//! generated, realistic library, answered by Spindle's store and by SQLite
//! in two layouts — XMMS2's own medialib schema and a tuned property table
//! — with the same semantics, and the results cross-checked row by row.
//!
//! * [`gen`]: the deterministic synthetic library.
//! * [`load`]: loading it into Spindle and both SQLite layouts.
//! * [`sql`]: the queries in SQL with Spindle's semantics.
//! * [`worker`]: one contestant measured in a process of its own.
//! * [`run`]: orchestration, agreement check; [`report`]: medians,
//!   ratios, targets, Markdown.
//!
//! It is *not* a micro-benchmark harness (Criterion benches live beside
//! the crates they measure) and it does not know the CLI: the binary
//! passes a way to start workers ([`spawn_worker`]).
//!
//! ```no_run
//! use spindle_bench::{run_library, run_worker, LibraryConfig};
//! let cfg = LibraryConfig::new(2000, std::env::temp_dir().join("spindle-bench-doc"));
//! let report = run_library(&cfg, &mut |req| run_worker(req), &mut |line| eprintln!("{line}"))?;
//! println!("{}", report.render());
//! # Ok::<(), spindle_bench::BenchError>(())
//! ```
#![forbid(unsafe_code)]

mod error;
pub mod gen;
pub mod load;
pub mod report;
mod rng;
pub mod run;
pub mod sql;
mod words;
pub mod worker;

pub use error::BenchError;
pub use report::{LibraryReport, Summary, Target};
pub use run::{run_library, spawn_worker, worker_main, LibraryConfig};
pub use worker::{run_worker, sql_statements, Side, SideReport, WorkerRequest, QUERIES};
