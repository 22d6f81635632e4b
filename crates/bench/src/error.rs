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
    /// Options that cannot make a run (a size of 0, an unknown workload).
    #[error("{0}")]
    Options(String),
    /// A program the benchmark drives is not installed; the message says
    /// how to get it or skip it.
    #[error("{0}")]
    Missing(String),
    /// A server or tool under test misbehaved: exited early, printed no
    /// address, sent wrong bytes, printed output that does not parse.
    #[error("{0}")]
    Peer(String),
    /// The run finished but failed one of its hard checks (a scrobble
    /// lost, a scan miscounted).
    #[error("{0}")]
    Check(String),
    /// A step of a run failed: what it was doing, and why.
    #[error("{what}: {source}")]
    Step {
        what: String,
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
}

/// Names the step an error happened in: `.at("starting nginx")?`.
pub trait Context<T> {
    fn at(self, what: impl Into<String>) -> Result<T, BenchError>;
    fn at_with(self, what: impl FnOnce() -> String) -> Result<T, BenchError>;
}

impl<T, E: std::error::Error + Send + Sync + 'static> Context<T> for Result<T, E> {
    fn at(self, what: impl Into<String>) -> Result<T, BenchError> {
        self.map_err(|e| BenchError::Step {
            what: what.into(),
            source: Box::new(e),
        })
    }

    fn at_with(self, what: impl FnOnce() -> String) -> Result<T, BenchError> {
        self.map_err(|e| BenchError::Step {
            what: what(),
            source: Box::new(e),
        })
    }
}
