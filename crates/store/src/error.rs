//! The store's errors, one enum per kind of operation callers react to.

use std::path::PathBuf;

/// Bytes on disk that do not decode.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct FormatError(pub String);

impl FormatError {
    pub fn new(msg: impl Into<String>) -> Self {
        FormatError(msg.into())
    }
}

/// Opening a database failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OpenError {
    #[error("database is locked by PID {pid} ({path}); stop that process or open read-only")]
    Locked { pid: String, path: PathBuf },
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path}: not a Spindle {what} (bad magic)")]
    BadMagic { path: PathBuf, what: &'static str },
    #[error(
        "{path}: format version {found} is not supported (this Spindle reads version {supported})"
    )]
    Version {
        path: PathBuf,
        found: u32,
        supported: u32,
    },
    #[error("{path}: corrupt: {detail}")]
    Corrupt { path: PathBuf, detail: String },
    /// A bad log record with good records after it: damage, not a commit
    /// cut short by a crash. Nothing on disk was changed.
    #[error(
        "{path} is damaged at byte {offset} ({detail}), and complete commits follow it, so it is \
         not an unfinished write that could be cut off safely; nothing was changed. Keep a copy \
         of the file, then either restore the library directory from a backup, or truncate the \
         log to {offset} bytes (for example `truncate -s {offset} {path}`) to drop the damaged \
         commit and every commit after it, and open the library again"
    )]
    Damaged {
        path: PathBuf,
        /// Where the bad record starts, in bytes from the file's start.
        offset: u64,
        detail: String,
    },
}

/// A transaction that could not be committed. Nothing of it was applied.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CommitError {
    #[error("the database is open read-only")]
    ReadOnly,
    #[error("no entry with id {0}")]
    NoSuchEntry(u32),
    #[error("entry id {id} is too far beyond the last id (the next free id is {next}; ids are dense, so an entry may be at most {gap} past it)")]
    IdOutOfRange { id: u32, next: u32, gap: u32 },
    #[error("entry {0} already exists")]
    EntryExists(u32),
    #[error("the key '{0}' is reserved for the entry id")]
    ReservedKey(String),
    #[error("too many distinct sources (the limit is 65535)")]
    TooManySources,
    #[error("the transaction encodes to {0} bytes, more than a log record holds (4 GiB); commit it in parts")]
    TooLarge(u64),
    #[error("writing the log failed: {0}; the database refuses further writes until reopened")]
    Io(#[from] std::io::Error),
    #[error("an earlier write failed; reopen the database")]
    Poisoned,
}

/// Compaction failed; the old data file and log are untouched.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CompactError {
    #[error("the database is open read-only")]
    ReadOnly,
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// A query that could not run.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum QueryError {
    #[error("no saved collection named '{0}'")]
    NoSuchCollection(String),
    #[error("saved collection '{0}' refers to itself")]
    RecursiveReference(String),
    #[error("saved collection '{name}' is unreadable: {detail}")]
    BadCollection { name: String, detail: String },
    /// The query ran past its [`Budget`](crate::Budget)'s time.
    #[error(
        "the query was stopped after {:.2} s, its time limit being {:.2} s: use fewer or narrower filters (a longer text before '*', or an indexed key)",
        .ran.as_secs_f64(),
        .limit.as_secs_f64()
    )]
    OverTime {
        limit: std::time::Duration,
        ran: std::time::Duration,
    },
    /// The query needed more steps (entries gathered, values tested) than
    /// its [`Budget`](crate::Budget) allows.
    #[error(
        "the query was stopped after {limit} steps (entries gathered or values tested), its limit: use fewer or narrower filters"
    )]
    OverSteps { limit: u64 },
    /// The query's cancellation flag was raised while it ran.
    #[error("the query was cancelled before it finished")]
    Cancelled,
}
