//! Why an import stopped.
//!
//! Batches committed before the error stay in the library; because an
//! import is idempotent, running it again finishes the job.

use std::path::PathBuf;

/// An import that could not start or could not finish.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ImportError {
    /// The foreign database could not be opened or is not SQLite.
    #[error("{path}: cannot open as an SQLite database: {source}")]
    Open {
        path: PathBuf,
        #[source]
        source: rusqlite::Error,
    },
    /// An SQLite file, but not the kind of library this importer reads.
    #[error("{path}: not an XMMS2 medialib ({detail})")]
    NotMedialib { path: PathBuf, detail: String },
    /// A medialib of a schema version this importer does not read.
    #[error(
        "{path}: XMMS2 medialib schema version {found} is not supported (this importer reads version {supported}); \
         let an XMMS2 release with the SQLite medialib start on it once, which upgrades older schemas to {supported}"
    )]
    UnsupportedVersion {
        path: PathBuf,
        found: i64,
        supported: i64,
    },
    /// Reading the foreign database failed part-way.
    #[error("{path}: reading failed: {source}")]
    Read {
        path: PathBuf,
        #[source]
        source: rusqlite::Error,
    },
    /// The origin name cannot form a source (`import/ORIGIN`).
    #[error("invalid import origin '{0}': use letters, digits, '-' and '_' only")]
    BadOrigin(String),
    /// The library refused a batch; earlier batches are committed.
    #[error("committing an import batch failed: {0}")]
    Commit(#[from] spindle_store::CommitError),
    /// Looking up earlier imports in the library failed.
    #[error("reading the library failed: {0}")]
    Query(#[from] spindle_store::QueryError),
}
