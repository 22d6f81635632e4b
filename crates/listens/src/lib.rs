//! Spindle's listening history.
//!
//! This crate owns every play a user reported: an append-only log of
//! listens and love/unlove events (length + CRC32 framed records, see
//! `docs/listens-format.md`) that is fsynced before a submission is
//! acknowledged, with *group commit* so that many concurrent submitters
//! share one fsync; and the in-memory indexes rebuilt from it on open
//! (or loaded from a checkpoint, [`Listens::checkpoint`], and brought up
//! to date from the log after it):
//! recent listens per user by time, chart counters (overall totals and
//! 30-day buckets for top artists, albums and tracks), listens per day,
//! loved tracks, and the dedupe rule that makes a repeated
//! (user, artist, title, timestamp) count once whichever API it came by
//! (with [`Options::dedupe_window`], any two starts of one track or
//! MusicBrainz recording within the window). Corrections — an edit, a
//! delete, an artist merge, an undo ([`Listens::correct`],
//! [`Correction`]) — are records of the log too, so the history stays
//! append-only and replayable, and the indexes follow them.
//!
//! Main types: [`Listens`] (the store), [`Listen`] (one play),
//! [`ChartKind`]/[`Chart`] (top lists) and [`RecentQuery`]/[`Page`].
//! [`limits`] holds the largest value each field may have; the store
//! refuses anything larger before it writes, so the log never holds a
//! record its reader would take for damage. A cluster's primary ships
//! its log with [`Listens::read_log_range`], and a replica appends the
//! same bytes with [`Listens::apply_shipped`] (`docs/cluster.md`).
//!
//! It is *not* an HTTP API, an account store or the media library: the
//! server links listens to library entries. It is synchronous; async
//! callers run it on a blocking thread.
//!
//! ```
//! use spindle_listens::{Listens, Listen, ChartKind, Submitted};
//! let dir = tempfile::tempdir().unwrap();
//! let (store, _report) = Listens::open(dir.path()).unwrap();
//! let l = Listen::new("ann", 1_700_000_000, "Björk", "Joga");
//! let out = store.submit(&[l.clone(), l]).unwrap();
//! assert_eq!(out, vec![Submitted::Accepted, Submitted::Duplicate]);
//! let top = store.top("ann", ChartKind::Artists, None, 10, 1);
//! assert_eq!(top.rows[0].name, "Björk");
//! ```
#![forbid(unsafe_code)]

mod batch;
mod checkpoint;
mod checkpointer;
mod correction;
mod corrections;
mod error;
#[doc(hidden)]
pub mod fuzzing;
pub mod import;
mod index;
pub mod limits;
mod log;
mod model;
mod normalise;
mod ship;
mod siphash;
mod store;
pub mod tail;

pub use batch::MAX_DEDUPE_TRACK_SECS;
pub use checkpoint::{CheckpointUse, CHECKPOINT_FILE, CHECKPOINT_TEMP};
pub use checkpointer::{CheckpointPolicy, Checkpointer};
pub use correction::{
    Changes, Corrected, Correction, CorrectionInfo, Target, MAX_CORRECTION_PAYLOAD,
};
pub use error::{AppendError, CorrectionError, OpenError};
pub use import::{parse_export, ImportError};
pub use index::{
    Chart, ChartKind, ChartQuery, ChartRow, Loved, Page, RecentQuery, TrackTally, UserSummary,
};
pub use limits::{check_love_limits, LimitError};
pub use model::{Event, Listen};
pub use normalise::normalise;
pub use ship::{Applied, ApplyError};
pub use store::{Listens, OpenReport, Options, Submitted, DEFAULT_DEDUPE_WINDOW, LOG_FILE};
pub use tail::{TailError, TailLove, TailRead};
