//! Commands on a stopped server's data dir (`spindle listens
//! import|pull|edit|…`, [`crate::import`], [`crate::corrections`]) begin
//! the same way: the accounts opened and the user they name checked
//! ([`user_accounts`]), then the library and the history opened, which
//! locks the library against a server starting ([`open_state`]), under
//! the settings `spindle serve` would run with ([`server_config`]): a
//! command on a stopped server keeps the history as the server does (its
//! dedupe window, its time window). The opening is the core's
//! ([`spindle_app::offline`]); reading the settings is the server's.

use std::path::Path;
use std::sync::Arc;

pub use spindle_app::offline::{user_accounts, StateError, UserError};

use crate::accounts::Accounts;
use crate::{AppState, Config, SystemClock};

/// The server's settings as `spindle serve` over `data_dir` without
/// flags resolves them (environment, settings file, defaults).
pub fn server_config(data_dir: &Path) -> Result<Config, StateError> {
    crate::settings::Flags::default()
        .settings(Some(data_dir))
        .map(|s| s.http)
        .map_err(|e| StateError::Settings(Box::new(e)))
}

/// The server's state over `data_dir` for one command, under the
/// server's settings ([`server_config`]); [`StateError::Running`] while
/// the server holds it.
pub fn open_state(data_dir: &Path, accounts: Accounts) -> Result<AppState, StateError> {
    let config = server_config(data_dir)?;
    let (db, store) = spindle_app::offline::open_data(data_dir, &config)?;
    Ok(AppState::new(
        Arc::new(db),
        Arc::new(accounts),
        Arc::new(store),
        config,
        Arc::new(SystemClock),
    )
    .started())
}

#[cfg(test)]
mod tests {
    use super::*;
    use spindle_store::Db;

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
