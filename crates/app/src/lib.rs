//! Spindle's application core: the services behind every protocol.
//!
//! `spindle-server` holds the HTTP infrastructure and one adapter per
//! protocol (Subsonic, Last.fm 2.0, Audioscrobbler 1.2, ListenBrainz, the
//! web UI, shares); this crate holds what those adapters share and never
//! names an adapter (the dependency runs one way, so the compiler keeps it
//! so):
//!
//! - [`accounts`]: users, passwords, tokens, API keys, grants, time zones;
//! - [`userdata`]: each user's stars, ratings, playlists, play queues and
//!   bookmarks;
//! - [`catalog`]: songs, albums and artists derived from the library;
//! - [`music`]: the music folders, the catalog's refresh, a song's file;
//! - [`similar`]: similar artists from co-listening;
//! - [`backup`]: consistent backups and restores of the data directory;
//! - [`hash_pool`]: the bounded pool that runs password hashes;
//! - [`time`], [`sync`]: small shared helpers.

pub mod accounts;
mod app;
pub mod backup;
pub mod catalog;
pub mod clock;
pub mod corrections;
pub mod hash_pool;
pub mod hot;
pub mod import;
pub mod link;
pub mod loves;
pub mod music;
pub mod offline;
pub mod plays;
pub mod pull;
pub mod scrobble;
pub mod similar;
pub mod sync;
#[cfg(any(test, feature = "testkit"))]
pub mod testlib;
pub mod time;
pub mod userdata;
pub mod worker;

pub use app::{App, CoreConfig, Forwarding, NoForwarding, NowPlaying};
