//! The I/O engines' integration tests, one binary: each module is a group
//! of tests about one thing (`cargo test -p spindle-io --test it
//! doorbells::` runs one group). One binary links the crate once, where a
//! binary per file linked it once per file.
//!
//! The tests share one process and run in parallel: a test must not change
//! the process's environment or other global state another test reads.
//! `tests/uring_env.rs`, which sets `SPINDLE_IO_URING`, stays a binary of
//! its own for that reason.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "see clippy.toml")]
#![allow(clippy::panic, reason = "see clippy.toml")]

mod common;

mod doorbells;
mod engine_matches_pread;
mod fio_json;
mod remove_file;
mod requests_refused;
mod sweep;
mod uring_disabled;
