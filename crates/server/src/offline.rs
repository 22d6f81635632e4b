//! Commands on a stopped server's data dir (`spindle listens
//! import|pull|edit|…`, [`crate::import`], [`crate::corrections`]) begin
//! the same way: the accounts opened and the user they name checked
//! ([`user_accounts`]), then the library and the history opened, which
//! locks the library against a server starting ([`open_state`]), under
//! the settings `spindle serve` would run with ([`server_config`]): a
//! command on a stopped server keeps the history as the server does (its
//! dedupe window, its time window).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use spindle_listens::Listens;
use spindle_store::Db;

use crate::accounts::{AccountError, Accounts};
use crate::{AppState, Config, SystemClock};

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
    Settings(#[source] crate::settings::SettingsError),
}

/// The server's settings as `spindle serve` over `data_dir` without
/// flags resolves them (environment, settings file, defaults).
pub fn server_config(data_dir: &Path) -> Result<Config, StateError> {
    crate::settings::Flags::default()
        .settings(Some(data_dir))
        .map(|s| s.http)
        .map_err(StateError::Settings)
}

/// The server's state over `data_dir` for one command, under the
/// server's settings ([`server_config`]); [`StateError::Running`] while
/// the server holds it.
pub fn open_state(data_dir: &Path, accounts: Accounts) -> Result<AppState, StateError> {
    let config = server_config(data_dir)?;
    let path = data_dir.to_owned();
    let db = Db::open(data_dir).map_err(|source| match source {
        spindle_store::OpenError::Locked { .. } => StateError::Running { path, source },
        source => StateError::Library { path, source },
    })?;
    let (store, _) = Listens::open_with(&data_dir.join("listens"), config.listens_options())?;
    Ok(AppState::new(
        Arc::new(db),
        Arc::new(accounts),
        Arc::new(store),
        config,
        Arc::new(SystemClock),
    ))
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
        let accounts = || Accounts::open(&dir.path().join("accounts")).unwrap();
        let _server = Db::open(dir.path()).unwrap();
        let e = open_state(dir.path(), accounts()).err().unwrap();
        assert!(matches!(e, StateError::Running { .. }), "{e}");
        drop(_server);
        let st = open_state(dir.path(), accounts()).unwrap();
        st.stop_background();
    }
}
