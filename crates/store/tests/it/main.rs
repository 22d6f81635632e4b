//! The store's integration tests, one binary: each module is a group of
//! tests about one thing (`cargo test -p spindle-store --test it crash::`
//! runs one group). One binary links the store once, where a binary per
//! file linked it once per file.
//!
//! The tests share one process and run in parallel: a test must not change
//! the process's environment or other global state another test reads.
//! The crash and lock tests re-run this binary filtered to one test, by
//! its full name (`crash::…`, `recovery::…`).

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "see clippy.toml")]
#![allow(clippy::panic, reason = "see clippy.toml")]

mod common;

mod crash;
mod differential;
mod fuzz_regressions;
mod query_budget;
mod recovery;
mod transactions;
