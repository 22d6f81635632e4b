//! The other players' libraries Spindle imports, by name: one entry point
//! for a caller that lets its user pick one (`spindle db import-xmms2`,
//! `import-beets`).

use std::path::Path;

use spindle_store::Db;

use crate::{import_beets, import_xmms2, BeetsError, ImportError, ImportOptions};
use crate::{ImportReport, Progress};

/// A foreign library format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Foreign {
    /// XMMS2's `medialib.db` ([`crate::xmms2`]).
    Xmms2,
    /// A beets `library.db` ([`crate::beets`]).
    Beets,
}

/// Why importing a foreign library failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ForeignError {
    #[error(transparent)]
    Xmms2(#[from] ImportError),
    #[error(transparent)]
    Beets(#[from] BeetsError),
}

impl Foreign {
    /// The import's origin: its markers' source is `import/ORIGIN`.
    pub fn origin(self) -> &'static str {
        match self {
            Foreign::Xmms2 => "xmms2",
            Foreign::Beets => "beets",
        }
    }

    /// What the format calls its tracks, plural, for reports.
    pub fn tracks(self) -> &'static str {
        match self {
            Foreign::Xmms2 => "XMMS2 entries",
            Foreign::Beets => "beets items",
        }
    }

    /// Imports the library at `path` into `db` under [`Foreign::origin`]
    /// (idempotent; see [`crate::import`]), reporting progress after each
    /// committed batch.
    pub fn import(
        self,
        db: &Db,
        path: &Path,
        progress: &mut dyn FnMut(&Progress),
    ) -> Result<ImportReport, ForeignError> {
        let opts = ImportOptions::new(self.origin());
        Ok(match self {
            Foreign::Xmms2 => import_xmms2(db, path, &opts, progress)?,
            Foreign::Beets => import_beets(db, path, &opts, progress)?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_of_neither_format_is_refused_and_adds_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let db = Db::open(dir.path().join("lib")).unwrap();
        let junk = dir.path().join("junk.db");
        std::fs::write(&junk, b"not a database").unwrap();
        for f in [Foreign::Xmms2, Foreign::Beets] {
            let err = f.import(&db, &junk, &mut |_| {}).unwrap_err();
            assert!(!err.to_string().is_empty(), "{f:?}");
            assert_eq!(db.read().len(), 0, "{f:?}");
        }
        assert_ne!(Foreign::Xmms2.origin(), Foreign::Beets.origin());
    }
}
