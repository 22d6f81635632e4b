//! `spindle listens edit|delete|merge|undo|corrections`: corrections of a
//! user's listening history on the data dir of a stopped server
//! (`spindle_server::corrections`); while `spindle serve` runs the
//! library is locked, and the command says to use the web UI instead.

use std::path::Path;

use clap::Subcommand;
use spindle_listens::{Changes, Corrected, Correction, Target};
use spindle_server::corrections::{correct_offline, corrections_offline, Action};

#[derive(Debug, Subcommand)]
pub enum CorrectionCommand {
    /// Give one listen (--at) or every listen of a track (--all), those
    /// recorded later included, a new artist, title or album.
    Edit {
        #[arg(long)]
        user: String,
        /// The listen's start time, UNIX seconds (see `corrections` or the
        /// web UI's recent listens).
        #[arg(long, required_unless_present = "all", conflicts_with = "all")]
        at: Option<i64>,
        /// Every listen of the track instead of one.
        #[arg(long)]
        all: bool,
        /// The artist and title as they show now.
        #[arg(long)]
        artist: String,
        #[arg(long)]
        title: String,
        #[arg(long, value_name = "ARTIST")]
        new_artist: Option<String>,
        #[arg(long, value_name = "TITLE")]
        new_title: Option<String>,
        /// The new album ("" to clear it).
        #[arg(long, value_name = "ALBUM")]
        new_album: Option<String>,
    },
    /// Delete one listen.
    Delete {
        #[arg(long)]
        user: String,
        /// The listen's start time, UNIX seconds.
        #[arg(long)]
        at: i64,
        #[arg(long)]
        artist: String,
        #[arg(long)]
        title: String,
    },
    /// Count artist name FROM as TO, in the listens so far and later ones.
    Merge {
        #[arg(long)]
        user: String,
        #[arg(long)]
        from: String,
        #[arg(long)]
        to: String,
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
        c.removed.len().max(c.added.len())
    );
}

pub fn run(cmd: &CorrectionCommand, data_dir: &Path) -> anyhow::Result<()> {
    let correct =
        |user: &str, what: Correction| correct_offline(data_dir, user, Action::Correct(what));
    match cmd {
        CorrectionCommand::Edit {
            user,
            at,
            all: _,
            artist,
            title,
            new_artist,
            new_title,
            new_album,
        } => {
            let target = match at {
                Some(timestamp) => Target::Listen {
                    timestamp: *timestamp,
                    artist: artist.clone(),
                    title: title.clone(),
                },
                None => Target::Track {
                    artist: artist.clone(),
                    title: title.clone(),
                },
            };
            let changes = Changes {
                artist: new_artist.clone(),
                title: new_title.clone(),
                album: new_album.clone(),
            };
            done(
                "edited",
                &correct(user, Correction::Edit { target, changes })?,
            );
        }
        CorrectionCommand::Delete {
            user,
            at,
            artist,
            title,
        } => {
            let what = Correction::Delete {
                timestamp: *at,
                artist: artist.clone(),
                title: title.clone(),
            };
            done("deleted", &correct(user, what)?);
        }
        CorrectionCommand::Merge { user, from, to } => {
            let what = Correction::MergeArtist {
                from: from.clone(),
                to: to.clone(),
            };
            done("merged", &correct(user, what)?);
        }
        CorrectionCommand::Undo { user, id } => {
            done(
                "undone",
                &correct_offline(data_dir, user, Action::Undo(*id))?,
            );
        }
        CorrectionCommand::Corrections { user } => {
            let list = corrections_offline(data_dir, user)?;
            if list.is_empty() {
                println!("{user} has no corrections");
            }
            for c in list {
                let state = if c.undone { " (undone)" } else { "" };
                let what = match &c.what {
                    Correction::Edit { target, changes } => {
                        let which = match target {
                            Target::Listen {
                                timestamp,
                                artist,
                                title,
                            } => format!("the listen of {artist} – {title} at {timestamp}"),
                            Target::Track { artist, title } => {
                                format!("every listen of {artist} – {title}")
                            }
                        };
                        let mut to = Vec::new();
                        if let Some(a) = &changes.artist {
                            to.push(format!("artist {a}"));
                        }
                        if let Some(t) = &changes.title {
                            to.push(format!("title {t}"));
                        }
                        if let Some(al) = &changes.album {
                            to.push(format!("album {al:?}"));
                        }
                        format!("edit {which}: {}", to.join(", "))
                    }
                    Correction::Delete {
                        timestamp,
                        artist,
                        title,
                    } => format!("delete the listen of {artist} – {title} at {timestamp}"),
                    Correction::MergeArtist { from, to } => format!("merge {from} into {to}"),
                };
                println!("{}\tat {}\t{what}{state}", c.id, c.when);
            }
        }
    }
    Ok(())
}
