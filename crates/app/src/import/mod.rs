//! Imports into a user's listening history, with the same checks and
//! library links as the listens a client scrobbles: an export file
//! (`spindle_listens::import` reads Last.fm, ListenBrainz, Rockbox,
//! Spotify and Maloja exports) or a live pull of a remote user's history
//! ([`crate::pull`]).
//!
//! A job lives in the [`Spool`] (`DATA_DIR/imports/`), whose task
//! ([`worker::run`]) imports it in steps and saves its progress after
//! each, so that a restarted server resumes it; a command on a stopped
//! server runs the same job through the same steps ([`worker::run_job`];
//! the server's `import` module has those commands). The design is
//! section 2 of `docs/scrobble-hub.md`.

pub mod job;
pub mod spool;
pub mod worker;

pub use job::{Api, Job, JobState, Pull, Source, Tally};
pub use spool::Spool;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::offline::{StateError, UserError};
use crate::App;

/// Why an import did not run, or stopped.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ImportError {
    #[error(transparent)]
    User(#[from] UserError),
    #[error("reading {}", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("reading {}", path.display())]
    Parse {
        path: PathBuf,
        #[source]
        source: spindle_listens::ImportError,
    },
    /// The library or the history did not open (a library locked by
    /// `spindle serve` is how an import finds out that the server runs:
    /// it hands the job over then).
    #[error(transparent)]
    State(#[from] StateError),
    #[error(transparent)]
    Append(#[from] spindle_listens::AppendError),
    /// The spool's folder could not be written or read.
    #[error("the import spool in {}", path.display())]
    Spool {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(transparent)]
    Pull(#[from] crate::pull::PullError),
    #[error("the import task failed: {0}")]
    Task(String),
}

/// The job's note on `n` listens skipped by the time window.
pub(crate) fn window_note(app: &App, n: u64) -> String {
    format!(
        "{n} {} (before {} or more than {} s ahead) were skipped",
        job::WINDOW_NOTE_MARK,
        app.config.min_timestamp,
        app.config.max_future
    )
}

impl App {
    /// Takes import jobs from `DATA_DIR/imports/` ([`worker::run`] runs
    /// them). Call before the core is shared.
    pub fn set_import_spool(&mut self, data_dir: &Path) {
        self.imports = Some(Arc::new(Spool::new(data_dir)));
    }

    /// The import spool, when the server takes jobs.
    pub fn import_spool(&self) -> Option<&Spool> {
        self.imports.as_deref()
    }
}
