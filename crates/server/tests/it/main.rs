//! The server's integration tests, one binary: each module is a group of
//! tests about one thing (`cargo test -p spindle-server --test it cors::`
//! runs one group). One binary links the server and its dependencies once,
//! where a binary per file linked them once per file.
//!
//! The tests share one process and run in parallel: a test must not change
//! the process's environment or other global state another test reads.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "see clippy.toml")]
#![allow(clippy::panic, reason = "see clippy.toml")]

mod common;

mod any_request;
mod auth_throttle;
mod body_limits;
mod cors;
mod credited_artists;
mod folder_access;
mod forward;
mod loves;
mod music_folder_escape;
mod outbound;
mod oversized_listens;
mod privacy;
mod proxy_prefix;
mod query_limits;
mod server_open;
mod subsonic_security;
mod web_admin;
mod web_ui;
