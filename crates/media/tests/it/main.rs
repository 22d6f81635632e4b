//! The media crate's integration tests, one binary: each module is a
//! group of tests about one thing (`cargo test -p spindle-media --test it
//! scan_symlinks::` runs one group). One binary links the crate once,
//! where a binary per file linked it once per file.
//!
//! The tests share one process and run in parallel: a test must not change
//! the process's environment or other global state another test reads.
//! The corpus tests are `#[ignore]`d without the encoders; CI's media
//! stage runs them with `--include-ignored`.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "see clippy.toml")]
#![allow(clippy::panic, reason = "see clippy.toml")]

mod corpus;

mod beets_import;
mod scan_corpus;
mod scan_symlinks;
