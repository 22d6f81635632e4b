//! `spindle listens import FILE`: a Last.fm or ListenBrainz export into
//! the listening history, idempotently (what is there already dedupes).

use std::path::{Path, PathBuf};

use anyhow::Context;
use clap::Subcommand;

#[derive(Debug, Subcommand)]
pub enum ListensCommand {
    /// Import a Last.fm scrobble export (CSV or JSON) or a ListenBrainz
    /// export. Run it while `spindle serve` is stopped.
    Import {
        file: PathBuf,
        /// The user the listens belong to.
        #[arg(long)]
        user: String,
    },
}

pub fn run(cmd: &ListensCommand, data_dir: &Path) -> anyhow::Result<()> {
    match cmd {
        ListensCommand::Import { file, user } => {
            let acc = super::open_accounts(data_dir)?;
            anyhow::ensure!(
                acc.user_exists(user),
                "no user named '{user}' (spindle user add {user})"
            );
            let text = std::fs::read_to_string(file)
                .with_context(|| format!("reading {}", file.display()))?;
            let listens = spindle_listens::parse_export(&text, user)
                .with_context(|| format!("reading {}", file.display()))?;
            // The library lock also tells us the server is not running.
            let db = spindle_store::Db::open(data_dir).with_context(|| {
                format!(
                    "opening the library in {} (is `spindle serve` running?)",
                    data_dir.display()
                )
            })?;
            let (store, _) = spindle_listens::Listens::open(&data_dir.join("listens"))?;
            let total = listens.len();
            let state = spindle_server::AppState::new(
                std::sync::Arc::new(db),
                std::sync::Arc::new(acc),
                std::sync::Arc::new(store),
                spindle_server::Config::default(),
                std::sync::Arc::new(spindle_server::SystemClock),
            );
            let added = state.import(listens)?;
            println!(
                "{added} of {total} listens added ({} already there)",
                total - added
            );
        }
    }
    Ok(())
}
