//! `spindle listens edit|delete|merge|undo|corrections`: corrections of a
//! user's listening history on the data dir of a stopped server
//! (`spindle_server::corrections`); while `spindle serve` runs the
//! library is locked, and the command says to use the web UI instead.

use std::path::Path;

use clap::Subcommand;
use spindle_listens::Corrected;
use spindle_server::corrections::{
    correct_offline, corrections_offline, Action, DeleteArgs, EditArgs, MergeArgs,
};

#[derive(Debug, Subcommand)]
pub enum CorrectionCommand {
    /// Give one listen (--at) or every listen of a track (--all), those
    /// recorded later included, a new artist, title or album.
    Edit {
        #[arg(long)]
        user: String,
        #[command(flatten)]
        edit: EditArgs,
    },
    /// Delete one listen.
    Delete {
        #[arg(long)]
        user: String,
        #[command(flatten)]
        delete: DeleteArgs,
    },
    /// Count artist name FROM as TO, in the listens so far and later ones.
    Merge {
        #[arg(long)]
        user: String,
        #[command(flatten)]
        merge: MergeArgs,
    },
    /// Take back a correction (its id from `corrections`).
    Undo {
        #[arg(long)]
        user: String,
        id: u64,
    },
    /// List a user's corrections, oldest first.
    Corrections {
        #[arg(long)]
        user: String,
    },
}

fn done(what: &str, c: &Corrected) {
    println!(
        "{what} (correction {}): {} listens changed",
        c.id,
        c.changed()
    );
}

pub fn run(cmd: &CorrectionCommand, data_dir: &Path) -> anyhow::Result<()> {
    let (what, user, action) = match cmd {
        CorrectionCommand::Edit { user, edit } => {
            ("edited", user, Action::Correct(edit.clone().into()))
        }
        CorrectionCommand::Delete { user, delete } => {
            ("deleted", user, Action::Correct(delete.clone().into()))
        }
        CorrectionCommand::Merge { user, merge } => {
            ("merged", user, Action::Correct(merge.clone().into()))
        }
        CorrectionCommand::Undo { user, id } => ("undone", user, Action::Undo(*id)),
        CorrectionCommand::Corrections { user } => {
            let list = corrections_offline(data_dir, user)?;
            if list.is_empty() {
                println!("{user} has no corrections");
            }
            for c in list {
                println!("{c}");
            }
            return Ok(());
        }
    };
    done(what, &correct_offline(data_dir, user, action)?);
    Ok(())
}
