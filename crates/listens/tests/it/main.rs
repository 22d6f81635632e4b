//! The listening history's integration tests, one binary: each module is
//! a group of tests about one thing (`cargo test -p spindle-listens --test
//! it kill_largest::` runs one group). One binary links the crate once,
//! where a binary per file linked it once per file.
//!
//! The tests share one process and run in parallel: a test must not change
//! the process's environment or other global state another test reads.
//! The kill test re-runs this binary filtered to one test, by its full
//! name (`kill_largest::…`).

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "see clippy.toml")]
#![allow(clippy::panic, reason = "see clippy.toml")]

mod checkpoint;
mod credited_artists;
mod dedupe;
mod kill_largest;
mod largest_listens;
