//! Spindle's media crate: getting music *into* the library.
//!
//! Today it owns the importers of other players' libraries. Every importer
//! is a reader that turns its foreign database into a stream of
//! [`Record`]s — (external id, key, value, source) — and hands the stream
//! to one shared path, [`import_records`], which groups records into
//! entries, remembers each entry's external id (key [`IMPORT_ID_KEY`],
//! source `import/ORIGIN`) and commits in batches. Running an import twice
//! adds nothing; running it after the foreign library changed brings the
//! changed values over (see [`import`] for the exact rule).
//!
//! Main types: [`Xmms2Medialib`] (reads XMMS2's SQLite `medialib.db`,
//! schema version 36), [`ImportOptions`], [`Progress`], [`ImportReport`],
//! [`ImportError`].
//!
//! It is *not* the store (that is `spindle-store`) and not a CLI. Tag
//! reading and folder scanning will live here too; they do not yet.
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

// Test files for `spindle bench scan`.
pub mod bench;

// Keeping the library current while serving, and a demo library for a
// fresh machine.
pub mod demo;
pub mod watch;

pub use watch::{WatchError, WatchOptions, Watcher};

// Opening files under a music folder: the one checked way.
pub mod beneath;

pub use beneath::{MusicRoot, OpenRefused, COVER_CAP, SIDECAR_CAP};
