//! Opening a stopped server's data dir for one command (`spindle listens
//! import|pull|edit|…`): the accounts opened and the user they name
//! checked ([`user_accounts`]), then the library and the history opened,
//! which locks the library against a server starting ([`open_data`]),
//! under the core's settings as `spindle serve` would read them (the
//! server resolves those from its settings file and passes them in).

use std::path::{Path, PathBuf};

use spindle_listens::Listens;
use spindle_store::Db;

use crate::accounts::{AccountError, Accounts};
use crate::CoreConfig;

/// Why a command on a data dir found no such user.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum UserError {
    #[error("opening the accounts in {}", path.display())]
    Accounts {
        path: PathBuf,
        #[source]
        source: AccountError,
    },
    #[error("no user named '{user}' (spindle user add {user})")]
    NoUser { user: String },
}

/// The accounts of `data_dir`, once `user` is found among them.
pub fn user_accounts(data_dir: &Path, user: &str) -> Result<Accounts, UserError> {
    let path = data_dir.join("accounts");
    let accounts = Accounts::open(&path).map_err(|source| UserError::Accounts { path, source })?;
    if !accounts.user_exists(user) {
        return Err(UserError::NoUser {
            user: user.to_owned(),
        });
    }
    Ok(accounts)
}

/// Why a stopped server's library or history did not open.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StateError {
    /// The library is locked: `spindle serve` runs.
    #[error("the library in {} is in use (is `spindle serve` running?)", path.display())]
    Running {
        path: PathBuf,
        #[source]
        source: spindle_store::OpenError,
    },
    #[error("opening the library in {}", path.display())]
    Library {
        path: PathBuf,
        #[source]
        source: spindle_store::OpenError,
    },
    #[error(transparent)]
    Listens(#[from] spindle_listens::OpenError),
    /// The server's settings (file, environment) do not load.
    #[error("reading the server's settings")]
    Settings(#[source] Box<dyn std::error::Error + Send + Sync>),
}

/// The library and the history of `data_dir`, the history under
/// `config`'s dedupe window; [`StateError::Running`] while a server
/// holds the library.
pub fn open_data(data_dir: &Path, config: &CoreConfig) -> Result<(Db, Listens), StateError> {
    let path = data_dir.to_owned();
    let db = Db::open(data_dir).map_err(|source| match source {
        spindle_store::OpenError::Locked { .. } => StateError::Running { path, source },
        source => StateError::Library { path, source },
    })?;
    let (store, _) = Listens::open_with(&data_dir.join("listens"), config.listens_options())?;
    Ok((db, store))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unknown_user_is_told_how_to_add_one() {
        let dir = tempfile::tempdir().unwrap();
        Accounts::open(&dir.path().join("accounts"))
            .unwrap()
            .add_user_cheaply("ann", "secret-password");
        assert!(user_accounts(dir.path(), "ann").is_ok());
        let e = user_accounts(dir.path(), "bob").err().unwrap();
        assert_eq!(e.to_string(), "no user named 'bob' (spindle user add bob)");
    }

    #[test]
    fn a_library_held_by_a_running_server_is_refused_as_running() {
        let dir = tempfile::tempdir().unwrap();
        let config = CoreConfig::default();
        let _server = Db::open(dir.path()).unwrap();
        let e = open_data(dir.path(), &config).err().unwrap();
        assert!(matches!(e, StateError::Running { .. }), "{e}");
        drop(_server);
        assert!(open_data(dir.path(), &config).is_ok());
    }
}
