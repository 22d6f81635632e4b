//! Importing a Last.fm or ListenBrainz export into a user's listening
//! history while the server is stopped (`spindle listens import`): the
//! same checks and library links as listens a client scrobbles, through
//! an [`AppState`] over the data dir.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use spindle_listens::Listens;
use spindle_store::Db;

use crate::accounts::{AccountError, Accounts};
use crate::{AppState, Config, SystemClock};

/// Why an import did not run, or stopped.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ImportError {
    #[error("opening the accounts in {}", path.display())]
    Accounts {
        path: PathBuf,
        #[source]
        source: AccountError,
    },
    #[error("no user named '{user}' (spindle user add {user})")]
    NoUser { user: String },
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
    /// The library is locked while `spindle serve` runs, which is also
    /// how an import finds out that the server is running.
    #[error("opening the library in {} (is `spindle serve` running?)", path.display())]
    Library {
        path: PathBuf,
        #[source]
        source: spindle_store::OpenError,
    },
    #[error(transparent)]
    Listens(#[from] spindle_listens::OpenError),
    #[error(transparent)]
    Append(#[from] spindle_listens::AppendError),
}

/// What an import did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Imported {
    /// Listens in the file.
    pub total: usize,
    /// Listens added to the history; the rest were there already.
    pub added: usize,
}

/// Imports the export `file` as `user`'s listens into the history of
/// `data_dir`, idempotently: listens already there are not added again.
pub fn import_listens(data_dir: &Path, file: &Path, user: &str) -> Result<Imported, ImportError> {
    let path = data_dir.join("accounts");
    let accounts =
        Accounts::open(&path).map_err(|source| ImportError::Accounts { path, source })?;
    if !accounts.user_exists(user) {
        return Err(ImportError::NoUser {
            user: user.to_owned(),
        });
    }
    let text = std::fs::read_to_string(file).map_err(|source| ImportError::Read {
        path: file.to_owned(),
        source,
    })?;
    let listens =
        spindle_listens::parse_export(&text, user).map_err(|source| ImportError::Parse {
            path: file.to_owned(),
            source,
        })?;
    let db = Db::open(data_dir).map_err(|source| ImportError::Library {
        path: data_dir.to_owned(),
        source,
    })?;
    let (store, _) = Listens::open(&data_dir.join("listens"))?;
    let total = listens.len();
    let state = AppState::new(
        Arc::new(db),
        Arc::new(accounts),
        Arc::new(store),
        Config::default(),
        Arc::new(SystemClock),
    );
    let added = state.import(listens)?;
    Ok(Imported { total, added })
}

#[cfg(test)]
mod tests {
    use super::*;

    const EXPORT: &str = r#"[{"listened_at": 1700000000, "track_metadata": {"artist_name": "Weezer", "track_name": "Buddy Holly"}},
        {"listened_at": 1700000300, "track_metadata": {"artist_name": "Weezer", "track_name": "Say It Ain't So"}}]"#;

    /// A data dir with the user `ann`, and [`EXPORT`] in a file.
    fn data_dir_with_ann() -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let acc = Accounts::open(&dir.path().join("accounts")).unwrap();
        acc.add_user_cheaply("ann", "secret-password");
        let file = dir.path().join("export.json");
        std::fs::write(&file, EXPORT).unwrap();
        (dir, file)
    }

    #[test]
    fn an_export_imported_twice_adds_its_listens_once() {
        let (dir, file) = data_dir_with_ann();
        let first = import_listens(dir.path(), &file, "ann").unwrap();
        assert_eq!(first, Imported { total: 2, added: 2 });
        let again = import_listens(dir.path(), &file, "ann").unwrap();
        assert_eq!(again, Imported { total: 2, added: 0 });
    }

    #[test]
    fn an_unknown_user_is_told_how_to_add_one() {
        let (dir, file) = data_dir_with_ann();
        let err = import_listens(dir.path(), &file, "bob").unwrap_err();
        assert_eq!(
            err.to_string(),
            "no user named 'bob' (spindle user add bob)"
        );
    }
}
