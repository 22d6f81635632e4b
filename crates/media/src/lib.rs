//! Spindle's media crate: getting music *into* the library and keeping it
//! current.
//!
//! It owns three ways in, all writing entries through `spindle-store`:
//!
//! - **Scanning** music folders ([`scan`](crate::scan())): walks the
//!   folders, reads tags and audio properties with lofty ([`tags`]), and
//!   keeps one entry per audio file, incrementally (an unchanged file costs
//!   one `stat`), following moved files by content fingerprint and keeping
//!   user data when a file disappears. The module doc of [`mod@scan`] has
//!   the exact rules.
//! - **Watching** ([`Watcher`]): file notifications plus a periodic rescan
//!   run the incremental scan while `spindle serve` is up.
//! - **Importing** other players' libraries (XMMS2's `medialib.db`, a beets
//!   `library.db`): every importer is a reader that turns its foreign
//!   database into a stream of [`Record`]s — (external id, key, value,
//!   source) — and hands the stream to one shared path,
//!   [`import_records`], which groups records into entries, remembers each
//!   entry's external id (key [`IMPORT_ID_KEY`], source `import/ORIGIN`)
//!   and commits in batches. Running an import twice adds nothing; running
//!   it after the foreign library changed brings the changed values over
//!   (see [`import`] for the exact rule).
//!
//! Main types: [`ScanOptions`], [`ScanReport`], [`ScanObserver`],
//! [`FileTags`], [`Watcher`], [`Xmms2Medialib`] (schema version 36),
//! [`ImportOptions`], [`ImportReport`], [`Progress`]; errors
//! [`ScanError`], [`TagError`], [`WatchError`], [`ImportError`],
//! [`BeetsError`]. Also here: a demo library of synthesised tones for a
//! fresh machine ([`demo`]) and the test files of `spindle bench scan`
//! ([`mod@bench`]).
//!
//! It is *not* the store (entries, properties and queries are
//! `spindle-store`), not the reader of files for streaming (the server
//! opens them through `spindle-io`'s `beneath`, which is re-exported here
//! because the scanner walks the same folders), and not a CLI.
//!
//! ```
//! use spindle_media::{import_records, ImportOptions, Record};
//! use spindle_store::Db;
//!
//! let dir = tempfile::tempdir().unwrap();
//! let db = Db::open(dir.path()).unwrap();
//! let records = || {
//!     vec![
//!         Ok(Record::new(7, "artist", "Weezer", "plugin/id3v2")),
//!         Ok(Record::new(7, "tracknr", 4i64, "plugin/id3v2")),
//!     ]
//! };
//! let opts = ImportOptions::new("example");
//! let report = import_records(&db, records(), Some(1), &opts, &mut |_| {}).unwrap();
//! assert_eq!(report.created, 1);
//! // The same records again change nothing.
//! let again = import_records(&db, records(), Some(1), &opts, &mut |_| {}).unwrap();
//! assert_eq!((again.created, again.updated, again.unchanged), (0, 0, 1));
//! ```
#![forbid(unsafe_code)]

mod error;
pub mod import;
pub mod xmms2;

pub use error::ImportError;
pub use import::{import_records, ImportOptions, ImportReport, Progress, Record, IMPORT_ID_KEY};
pub use xmms2::{import_xmms2, Xmms2Medialib, XMMS2_SCHEMA_VERSION};

// Scanning music folders (tags read with lofty; see `scan` for the rules).
pub mod scan;
pub mod tags;

pub use scan::{scan, ScanError, ScanObserver, ScanOptions, ScanReport};
pub use tags::{read_file, FileTags, TagError};

// The beets importer, on the shared import path.
pub mod beets;

pub use beets::{import_beets, BeetsError, BEETS_SOURCE};

// Either importer, by name.
mod foreign;

pub use foreign::{Foreign, ForeignError};

// Test files for `spindle bench scan`.
pub mod bench;

// Keeping the library current while serving, and a demo library for a
// fresh machine.
pub mod demo;
pub mod watch;

pub use watch::{WatchError, WatchOptions, Watcher};

// Opening files under a music folder: the one checked way, which lives in
// `spindle-io` (the storage tiers' folder devices use it too).
pub use spindle_io::beneath;

pub use beneath::{MusicRoot, OpenRefused, COVER_CAP, SIDECAR_CAP};
