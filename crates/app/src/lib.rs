//! Spindle's application core: the services behind every protocol.
//!
//! `spindle-server` holds the HTTP infrastructure and one adapter per
//! protocol (Subsonic, Last.fm 2.0, Audioscrobbler 1.2, ListenBrainz, the
//! web UI, shares); this crate holds what those adapters share and never
//! names an adapter (the dependency runs one way, so the compiler keeps it
//! so). Its state is one [`App`]; every service takes an `&App` or the
//! part of it it needs (the cover art and transcoding services are
//! objects of their own, which the server holds, taking those parts). What the core must tell an adapter goes through a
//! trait the adapter implements ([`Forwarding`]).
//!
//! - [`App`], [`CoreConfig`], [`NowPlaying`]: the core's state, its
//!   settings, and what each user plays now;
//! - [`accounts`]: users, passwords, tokens, API keys, grants, time zones;
//! - [`userdata`]: each user's stars, ratings, playlists, play queues and
//!   bookmarks;
//! - [`catalog`]: songs, albums and artists derived from the library;
//! - [`music`]: the music folders, the catalog's refresh, a song's file;
//! - [`scrobble`]: the submit path every API shares (checks, the durable
//!   write, the hand-offs after it) and imports' listens;
//! - [`plays`]: play counts and last plays per user;
//! - [`link`]: the library linker (listens to entries, `timesplayed`),
//!   on a [`worker`] thread;
//! - [`hot`]: what the storage tiers' hot tier hears (every listen, the
//!   history replayed at start, the pins);
//! - [`loves`]: one loved fact per user and track, and songs' stars;
//! - [`corrections`]: edits, deletes and merges of a user's history;
//! - [`import`]: import jobs, their spool and its task; [`pull`]: live
//!   pulls of another service's history;
//! - [`offload`]: the async facade handlers reach the synchronous
//!   stores through (no blocking work on the executor);
//! - [`offline`]: opening a stopped server's data dir for one command;
//! - [`pins`], [`upload`]: `spindle tiers pin` and `spindle tiers
//!   upload`, the hot tier's pins and copies to the cold devices;
//! - [`similar`]: similar artists from co-listening;
//! - [`cover`]: cover art ([`cover::Covers`]: where a cover comes from,
//!   its resizes and their disk cache), over the music folders and the
//!   catalog;
//! - [`transcode`]: the transcoder ([`transcode::Transcoder`]: the
//!   `[transcode]` rules and plans, the encode slots, ffmpeg, pacing, the
//!   cache of finished transcodes, the next track prepared ahead);
//! - [`fair`]: the fair per-user queue and the thread pool the two above
//!   queue on;
//! - [`backup`]: consistent backups and restores of the data directory;
//! - [`hash_pool`]: the bounded pool that runs password hashes;
//! - [`tasks`]: the one set of background tasks and its one stop;
//! - [`clock`], [`time`], [`sync`]: small shared helpers;
//! - `testlib` (the `testkit` feature): fixtures for other crates' tests.

pub mod accounts;
mod app;
pub mod backup;
pub mod catalog;
pub mod clock;
pub mod corrections;
pub mod cover;
pub mod fair;
pub mod hash_pool;
pub mod hot;
pub mod import;
pub mod link;
pub mod loves;
pub mod music;
pub mod offline;
pub mod offload;
pub mod pins;
pub mod plays;
pub mod pull;
pub mod scrobble;
pub mod similar;
pub mod sync;
pub mod tasks;
#[cfg(any(test, feature = "testkit"))]
pub mod testlib;
pub mod time;
pub mod transcode;
pub mod upload;
pub mod userdata;
pub mod worker;

pub use app::{App, CoreConfig, Forwarding, NoForwarding, NowPlaying};
