//! `spindle listens import FILE`: a Last.fm or ListenBrainz export into
//! the listening history, idempotently (what is there already dedupes;
//! the import is `spindle_server::import`).

use std::path::{Path, PathBuf};

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
            let done = spindle_server::import::import_listens(data_dir, file, user)?;
            println!(
                "{} of {} listens added ({} already there)",
                done.added,
                done.total,
                done.total - done.added
            );
        }
    }
    Ok(())
}
