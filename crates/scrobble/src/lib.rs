//! Spindle's scrobbler: it watches every MPRIS2 player on the session
//! bus and sends "now playing" and scrobbles to Last.fm-compatible,
//! ListenBrainz-compatible and Spindle servers, losing no play.
//!
//! The crate owns, from the pure core outwards:
//! - [`session`]: the play-session rules as a pure state machine with an
//!   injected [`clock`] ([`Session`], [`Players`] for several players);
//! - [`track`]: what a player plays ([`Track`]) and what is sent ([`Scrobble`]);
//! - [`journal`]: the per-service queue on disk (format in `crates/scrobble/docs/journal.md`);
//! - [`client`], [`lastfm`], [`listenbrainz`]: the service protocols;
//! - [`sender`]: one task per service sending its journal with backoff;
//! - [`config`]: `scrobble.toml`, the player lists, clean-up rules, paths;
//! - [`mpris`] and [`daemon`]: the D-Bus side (zbus, tokio) tying it together;
//! - [`control`]: the daemon from another process (pid file, SIGUSR1,
//!   status) and the one-off `auth`, `status`, `flush` and `love`.
//!
//! It is *not* the CLI: the `spindle` binary parses arguments, builds the
//! runtime, calls [`control`] and prints what it returns.
//!
//! ```
//! use spindle_scrobble::{Action, Event, Now, Rules, Session, Status, Track};
//! use std::time::Duration;
//!
//! let mut s = Session::new(Rules::default());
//! let t0 = Now { mono: Duration::ZERO, unix: 1_700_000_000.0 };
//! let track = Track {
//!     title: "Song".into(),
//!     artists: vec!["Band".into()],
//!     length: Some(Duration::from_secs(200)),
//!     ..Track::default()
//! };
//! s.handle(Event::Status(Status::Playing), t0);
//! let out = s.handle(Event::Metadata(Some(track.clone())), t0);
//! assert_eq!(out, vec![Action::NowPlaying(track.clone())]);
//! // 100 s later (half of 200 s), the play is scrobbled with its start
//! // time (and now playing, due every minute, is sent again).
//! let out = s.poll(t0.plus(100.0));
//! assert!(out.contains(&Action::Scrobble { track, started: 1_700_000_000 }));
//! ```
#![forbid(unsafe_code)]

pub mod client;
pub mod clock;
pub mod config;
pub mod control;
pub mod daemon;
pub mod journal;
pub mod lastfm;
pub mod listenbrainz;
pub mod mpris;
pub mod outbound;
pub mod players;
pub mod sender;
pub mod session;
pub mod track;

pub use client::{Client, Outcome, SendError};
pub use clock::{Clock, ManualClock, Now, SystemClock};
pub use config::{Config, ConfigError, Endpoint, Paths, PlayerFilter, Service};
pub use journal::{Journal, JournalError, OpenReport};
pub use players::Players;
pub use sender::{Backoff, Msg, ServiceQueue, ServiceState};
pub use session::{Action, Event, LoopStatus, NoLength, PlayView, Rules, Session, Status};
pub use track::{ArtistStyle, Scrobble, Track};
