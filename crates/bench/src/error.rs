//! Why a benchmark run stopped.

/// A benchmark that could not run, or whose contestants disagreed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BenchError {
    #[error("I/O: {0}")]
    Io(#[from] std::io::Error),
    #[error("SQLite: {0}")]
    Sqlite(#[from] rusqlite::Error),
    #[error("opening the Spindle store: {0}")]
    Open(#[from] spindle_store::OpenError),
    #[error("committing to the Spindle store: {0}")]
    Commit(#[from] spindle_store::CommitError),
    #[error("compacting the Spindle store: {0}")]
    Compact(#[from] spindle_store::CompactError),
    #[error("Spindle query: {0}")]
    Query(#[from] spindle_store::QueryError),
    #[error("query pattern '{pattern}': {message}")]
    Parse { pattern: String, message: String },
    #[error("the SQL translation does not cover {0}")]
    Unsupported(String),
    #[error("a benchmark worker failed: {0}")]
    Worker(String),
    /// The contestants returned different results: the comparison would
    /// be meaningless.
    #[error("results differ between contestants:\n{0}")]
    Mismatch(String),
}
