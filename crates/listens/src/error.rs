//! Errors of opening the history and of appending to it.

use std::path::PathBuf;

/// Opening the listens directory failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OpenError {
    #[error("cannot open the listening history in {path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path} is not a Spindle listens log (bad magic or unknown version {version})")]
    BadHeader { path: PathBuf, version: u32 },
}

/// Writing listens to disk failed; nothing of the call was acknowledged.
#[derive(Debug, thiserror::Error, Clone)]
#[non_exhaustive]
pub enum AppendError {
    #[error("writing the listens log failed: {0}")]
    Io(String),
    #[error("the listens log failed earlier and refuses writes until restart: {0}")]
    Poisoned(String),
}
