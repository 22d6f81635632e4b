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
    /// A bad record with good records after it: damage, not a write cut
    /// short by a crash. The file was left as it was.
    #[error(
        "{path} is damaged at byte {offset} ({reason}), and complete listens follow it, so it \
         is not an unfinished write that could be cut off safely; the file was not changed. \
         Keep a copy of it, then either restore it from a backup, or truncate it to {offset} \
         bytes (for example `truncate -s {offset} {path}`) to drop the damaged record and \
         every listen after it, and start again"
    )]
    Damaged {
        path: PathBuf,
        /// Where the bad record starts, in bytes from the file's start.
        offset: u64,
        reason: &'static str,
    },
}

/// Writing listens to disk failed, or was refused; nothing of the call
/// was acknowledged.
#[derive(Debug, thiserror::Error, Clone)]
#[non_exhaustive]
pub enum AppendError {
    #[error("writing the listens log failed: {0}")]
    Io(String),
    #[error("the listens log failed earlier and refuses writes until restart: {0}")]
    Poisoned(String),
    /// A field over its limit (see [`crate::limits`]); nothing of the
    /// call was written. Sending the same thing again fails again.
    #[error("refused: {}; shorten it and send it again (nothing of this submission was stored)", crate::limits::describe(.field, *.len, *.max))]
    TooLarge {
        field: &'static str,
        len: usize,
        max: usize,
    },
}

impl AppendError {
    /// Whether the request itself is at fault (an API answers it as bad
    /// parameters), rather than the disk (retry later).
    pub fn is_refusal(&self) -> bool {
        matches!(self, AppendError::TooLarge { .. })
    }
}

impl From<crate::limits::LimitError> for AppendError {
    fn from(e: crate::limits::LimitError) -> Self {
        AppendError::TooLarge {
            field: e.field,
            len: e.len,
            max: e.max,
        }
    }
}

/// A correction ([`crate::Listens::edit`], `delete`, `merge_artist`,
/// `undo`) was refused or could not be written; nothing was written
/// unless the error is [`CorrectionError::Append`] of a failed write.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CorrectionError {
    #[error("{user} has no listen of '{artist}' – '{title}' starting at {timestamp} (UNIX seconds); list the listens to find its start time")]
    NoSuchListen {
        user: String,
        timestamp: i64,
        artist: String,
        title: String,
    },
    #[error("{user} has no listens of '{artist}' – '{title}'; names are compared ignoring case and extra spaces")]
    NoSuchTrack {
        user: String,
        artist: String,
        title: String,
    },
    #[error("{user} has no listens of the artist '{artist}'; names are compared ignoring case and extra spaces")]
    NoSuchArtist { user: String, artist: String },
    #[error("{user} has no correction {id}; list them to see their ids")]
    NoSuchCorrection { user: String, id: u64 },
    #[error("correction {id} was already undone")]
    AlreadyUndone { id: u64 },
    #[error("{reason}")]
    Invalid { reason: &'static str },
    #[error(transparent)]
    Append(#[from] AppendError),
}

impl CorrectionError {
    /// Whether the request is at fault (an API answers 400 or 404), not
    /// the disk.
    pub fn is_refusal(&self) -> bool {
        match self {
            CorrectionError::Append(e) => e.is_refusal(),
            _ => true,
        }
    }

    /// Whether what it names does not exist (an API answers 404).
    pub fn is_not_found(&self) -> bool {
        matches!(
            self,
            CorrectionError::NoSuchListen { .. }
                | CorrectionError::NoSuchTrack { .. }
                | CorrectionError::NoSuchArtist { .. }
                | CorrectionError::NoSuchCorrection { .. }
        )
    }
}
