//! `spindle listens edit|delete|merge|undo|corrections`: corrections of a
//! user's listening history (`spindle_server::corrections`). With the
//! server stopped they are made here; while `spindle serve` runs (the
//! library is locked) they are handed to it through the corrections
//! spool, and the command waits for its answer. The list is read either
//! way.

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::Context;
use clap::Subcommand;
use spindle_server::correction_spool::{Answer, CorrectionSpool, Requested};
use spindle_server::corrections::{
    correct, corrections_offline, DeleteArgs, EditArgs, Made, MergeArgs,
};

/// How often a handed-in correction's answer is looked for.
const FOLLOW_EVERY: Duration = Duration::from_millis(200);

/// How long a correction may wait before the command says that the
/// server does not seem to take it.
const NOT_TAKEN_AFTER: Duration = Duration::from_secs(10);

#[derive(Debug, Subcommand)]
pub enum CorrectionCommand {
    /// Give one listen (--at) or every listen of a track (--all), those
    /// recorded later included, a new artist, title or album.
    Edit {
        /// The user whose history it is.
        #[arg(long)]
        user: String,
        #[command(flatten)]
        edit: EditArgs,
    },
    /// Delete one listen.
    Delete {
        /// The user whose history it is.
        #[arg(long)]
        user: String,
        #[command(flatten)]
        delete: DeleteArgs,
    },
    /// Count artist name FROM as TO, in the listens so far and later ones.
    Merge {
        /// The user whose history it is.
        #[arg(long)]
        user: String,
        #[command(flatten)]
        merge: MergeArgs,
    },
    /// Take back a correction (its id from `corrections`).
    Undo {
        /// The user whose history it is.
        #[arg(long)]
        user: String,
        /// The correction's id (the first column of `corrections`).
        id: u64,
    },
    /// List a user's corrections, oldest first.
    Corrections {
        /// The user whose history it is.
        #[arg(long)]
        user: String,
    },
}

fn done(what: &str, id: u64, changed: usize) {
    println!("{what} (correction {id}): {changed} listens changed");
}

/// Waits for the running server's answer to request `id`, removes it
/// and returns it.
fn follow(data_dir: &Path, id: &str) -> anyhow::Result<Answer> {
    let spool = CorrectionSpool::new(data_dir);
    let start = Instant::now();
    let mut warned = false;
    loop {
        let req = spool
            .answered(id)
            .with_context(|| format!("reading the answer to correction request {id}"))?;
        if let Some(answer) = req.and_then(|r| r.answer) {
            let _ = spool.remove(id);
            return Ok(answer);
        }
        if !warned && start.elapsed() > NOT_TAKEN_AFTER {
            warned = true;
            eprintln!(
                "the server has not taken the correction yet; it waits in {} (Ctrl-C leaves it there)",
                spool.incoming().display()
            );
        }
        std::thread::sleep(FOLLOW_EVERY);
    }
}

pub fn run(cmd: &CorrectionCommand, data_dir: &Path) -> anyhow::Result<()> {
    let (what, user, req) = match cmd {
        CorrectionCommand::Edit { user, edit } => ("edited", user, Requested::Edit(edit.clone())),
        CorrectionCommand::Delete { user, delete } => {
            ("deleted", user, Requested::Delete(delete.clone()))
        }
        CorrectionCommand::Merge { user, merge } => {
            ("merged", user, Requested::Merge(merge.clone()))
        }
        CorrectionCommand::Undo { user, id } => ("undone", user, Requested::Undo { id: *id }),
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
    match correct(data_dir, user, req)? {
        Made::Here(c) => done(what, c.id, c.changed()),
        Made::Handed(req) => match follow(data_dir, &req.id)? {
            Answer::Done {
                correction,
                changed,
            } => done(what, correction, changed),
            Answer::Failed { error } => anyhow::bail!("the server refused it: {error}"),
        },
    }
    Ok(())
}
