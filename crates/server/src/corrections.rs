//! Corrections of a user's listening history from the command line and
//! the web UI's forms (docs/scrobble-hub.md, "Corrections"). The core
//! makes them ([`spindle_app::corrections`]: the history appends and
//! applies the correction, then what it changed moves the library's
//! `timesplayed`, the user's plays and the hot tier's popularity). Here
//! are the forms' and commands' arguments ([`EditArgs`], [`DeleteArgs`],
//! [`MergeArgs`]) and the commands: `spindle listens edit|delete|merge|undo`
//! calls [`correct`], which makes it here on a stopped server's data dir
//! and hands it to a running server through the [`CorrectionSpool`];
//! `spindle listens corrections` reads the history without writing
//! ([`corrections_offline`]), the server running or not. They stay in
//! the server because they open a data dir under the server's settings
//! ([`crate::offline`]).

use std::path::{Path, PathBuf};

use spindle_listens::{Changes, Corrected, Correction, CorrectionError, CorrectionInfo, Target};

use spindle_listens::Listens;

use crate::correction_spool::{CorrectionSpool, Request, Requested};
use crate::offline::{open_state, server_config, user_accounts, StateError, UserError};
pub use spindle_app::corrections::Action;

use crate::{AppState, SystemClock};

/// `spindle listens edit`'s arguments after `--user`, and the web UI's
/// edit form: which listens get which new names.
#[derive(Debug, Clone, PartialEq, Eq, clap::Args, serde::Serialize, serde::Deserialize)]
pub struct EditArgs {
    /// The listen's start time, UNIX seconds (see `corrections` or the
    /// web UI's recent listens).
    #[arg(long, required_unless_present = "all", conflicts_with = "all")]
    pub at: Option<i64>,
    /// Every listen of the track instead of one.
    #[arg(long)]
    #[serde(default)]
    pub all: bool,
    /// The artist as it shows now.
    #[arg(long)]
    pub artist: String,
    /// The title as it shows now.
    #[arg(long)]
    pub title: String,
    /// The new artist.
    #[arg(long, value_name = "ARTIST")]
    pub new_artist: Option<String>,
    /// The new title.
    #[arg(long, value_name = "TITLE")]
    pub new_title: Option<String>,
    /// The new album ("" to clear it).
    #[arg(long, value_name = "ALBUM")]
    pub new_album: Option<String>,
}

impl From<EditArgs> for Correction {
    /// The edit: of the listen at `at`, or without it of every listen of
    /// the track.
    fn from(a: EditArgs) -> Correction {
        let (artist, title) = (a.artist, a.title);
        let target = match a.at {
            Some(timestamp) => Target::Listen {
                timestamp,
                artist,
                title,
            },
            None => Target::Track { artist, title },
        };
        let changes = Changes {
            artist: a.new_artist,
            title: a.new_title,
            album: a.new_album,
        };
        Correction::Edit { target, changes }
    }
}

/// `spindle listens delete`'s arguments after `--user`, and the web UI's
/// delete form: the listen that no longer counts.
#[derive(Debug, Clone, PartialEq, Eq, clap::Args, serde::Serialize, serde::Deserialize)]
pub struct DeleteArgs {
    /// The listen's start time, UNIX seconds.
    #[arg(long)]
    pub at: i64,
    /// Its artist as it shows now.
    #[arg(long)]
    pub artist: String,
    /// Its title as it shows now.
    #[arg(long)]
    pub title: String,
}

impl From<DeleteArgs> for Correction {
    fn from(a: DeleteArgs) -> Correction {
        Correction::Delete {
            timestamp: a.at,
            artist: a.artist,
            title: a.title,
        }
    }
}

/// `spindle listens merge`'s arguments after `--user`, and the web UI's
/// merge form: the artist name that counts as another.
#[derive(Debug, Clone, PartialEq, Eq, clap::Args, serde::Serialize, serde::Deserialize)]
pub struct MergeArgs {
    /// The artist name to count as another (e.g. a misspelling).
    #[arg(long)]
    pub from: String,
    /// The name it counts as.
    #[arg(long)]
    pub to: String,
}

impl From<MergeArgs> for Correction {
    fn from(a: MergeArgs) -> Correction {
        Correction::MergeArtist {
            from: a.from,
            to: a.to,
        }
    }
}

/// Why a correction from the command line did not run.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OfflineError {
    #[error(transparent)]
    User(#[from] UserError),
    /// The library is locked while `spindle serve` runs ([`correct`]
    /// hands the correction to it then).
    #[error("the library in {} is in use (is `spindle serve` running?)", path.display())]
    Running {
        path: PathBuf,
        #[source]
        source: spindle_store::OpenError,
    },
    #[error(transparent)]
    State(StateError),
    #[error(transparent)]
    Correction(#[from] CorrectionError),
    /// The history could not be read.
    #[error(transparent)]
    Read(#[from] spindle_listens::OpenError),
    /// The corrections spool could not be written.
    #[error("the corrections spool in {}", path.display())]
    Spool {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// Where a correction was made.
#[derive(Debug)]
pub enum Made {
    /// Here, the server being stopped.
    Here(Corrected),
    /// Handed to the running server: its answer comes in the spool
    /// ([`CorrectionSpool::answered`]).
    Handed(Request),
}

/// The state of a stopped server's data dir, for one command: the user
/// checked, the library opened (and so locked against a server starting).
fn open_offline(data_dir: &Path, user: &str) -> Result<AppState, OfflineError> {
    let accounts = user_accounts(data_dir, user)?;
    open_state(data_dir, accounts).map_err(|e| match e {
        StateError::Running { path, source } => OfflineError::Running { path, source },
        e => OfflineError::State(e),
    })
}

/// Makes `what` on `user`'s history in `data_dir`: here when the server
/// is stopped, with the library's play counts following; else handed to
/// the running server through the [`CorrectionSpool`], which makes it the
/// same way.
pub fn correct(data_dir: &Path, user: &str, what: Requested) -> Result<Made, OfflineError> {
    match correct_offline(data_dir, user, what.clone().into()) {
        Err(OfflineError::Running { .. }) => {
            let req = Request::new(user, what, SystemClock.now_secs());
            let spool = CorrectionSpool::new(data_dir);
            spool.hand_in(&req).map_err(|source| OfflineError::Spool {
                path: spool.incoming(),
                source,
            })?;
            Ok(Made::Handed(req))
        }
        done => done.map(Made::Here),
    }
}

/// Makes `action` on `user`'s history in the data dir of a stopped
/// server, with the library's play counts following; refused with
/// [`OfflineError::Running`] while the server runs.
pub fn correct_offline(
    data_dir: &Path,
    user: &str,
    action: Action,
) -> Result<Corrected, OfflineError> {
    let state = open_offline(data_dir, user)?;
    let done = state.correct_history(user, action)?;
    state.flush_library_links();
    state.stop_background();
    Ok(done)
}

/// `user`'s corrections in `data_dir`, oldest first, whether the server
/// runs or not: the history is read without being opened for writing
/// ([`Listens::open_read_only`]; the log is append-only, so reading it
/// beside the server's writes is safe).
pub fn corrections_offline(
    data_dir: &Path,
    user: &str,
) -> Result<Vec<CorrectionInfo>, OfflineError> {
    user_accounts(data_dir, user)?;
    let options = server_config(data_dir)
        .map_err(OfflineError::State)?
        .listens_options();
    match Listens::open_read_only(&data_dir.join("listens"), options) {
        Ok((listens, _)) => Ok(listens.corrections(user)),
        Err(spindle_listens::OpenError::Io { source, .. })
            if source.kind() == std::io::ErrorKind::NotFound =>
        {
            Ok(Vec::new())
        }
        Err(e) => Err(e.into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::accounts::Accounts;
    use spindle_listens::Listens;
    use spindle_listens::{Listen, Target};
    use spindle_store::Db;

    #[test]
    fn an_offline_delete_and_undo_change_the_history_and_beside_a_running_server_the_list_reads_and_a_correction_is_handed_in(
    ) {
        let dir = tempfile::tempdir().unwrap();
        let acc = Accounts::open(&dir.path().join("accounts")).unwrap();
        acc.add_user_cheaply("ann", "secret-password");
        drop(acc);
        {
            let (l, _) = Listens::open(&dir.path().join("listens")).unwrap();
            l.submit(&[
                Listen::new("ann", 1_700_000_000, "A", "x"),
                Listen::new("ann", 1_700_000_500, "A", "y"),
            ])
            .unwrap();
        }
        let del = Action::Correct(Correction::Delete {
            timestamp: 1_700_000_000,
            artist: "a".into(),
            title: "X".into(),
        });
        let done = correct_offline(dir.path(), "ann", del).unwrap();
        assert_eq!(done.removed.len(), 1);
        let list = corrections_offline(dir.path(), "ann").unwrap();
        assert_eq!(list.len(), 1);
        assert!(!list[0].undone);
        let e = correct_offline(
            dir.path(),
            "bob",
            Action::Correct(Correction::Edit {
                target: Target::Track {
                    artist: "A".into(),
                    title: "y".into(),
                },
                changes: Default::default(),
            }),
        )
        .unwrap_err();
        assert!(
            matches!(e, OfflineError::User(UserError::NoUser { .. })),
            "{e}"
        );
        let undone = correct_offline(dir.path(), "ann", Action::Undo(done.id)).unwrap();
        assert_eq!(undone.added.len(), 1);
        // A running server holds the library's lock: the list is read
        // all the same, and a correction is handed to the server.
        let db = Db::open(dir.path()).unwrap();
        let list = corrections_offline(dir.path(), "ann").unwrap();
        assert_eq!(list.len(), 1);
        assert!(list[0].undone);
        let merge = Requested::Merge(MergeArgs {
            from: "A".into(),
            to: "B".into(),
        });
        let Made::Handed(req) = correct(dir.path(), "ann", merge).unwrap() else {
            panic!("made beside a running server");
        };
        let spool = CorrectionSpool::new(dir.path());
        assert!(spool.incoming().join(format!("{}.json", req.id)).is_file());
        drop(db);
        let (l, _) = Listens::open(&dir.path().join("listens")).unwrap();
        assert_eq!(l.summary("ann").playcount, 2);
    }

    #[test]
    fn an_edit_without_a_time_targets_every_listen_of_the_track() {
        use clap::Parser;
        #[derive(clap::Parser)]
        struct Cli {
            #[command(flatten)]
            edit: EditArgs,
        }
        let parse = |args: &[&str]| {
            let base = ["edit", "--artist", "Abba", "--title", "SOS"];
            Cli::try_parse_from(base.iter().chain(args)).map(|c| Correction::from(c.edit))
        };
        let Ok(Correction::Edit { target, changes }) = parse(&["--all", "--new-album", ""]) else {
            panic!("--all is an edit");
        };
        assert_eq!(
            target,
            Target::Track {
                artist: "Abba".into(),
                title: "SOS".into()
            }
        );
        assert_eq!(changes.album.as_deref(), Some(""));
        let Ok(Correction::Edit { target, .. }) = parse(&["--at", "5"]) else {
            panic!("--at is an edit");
        };
        assert!(matches!(target, Target::Listen { timestamp: 5, .. }));
        assert!(parse(&[]).is_err(), "neither --at nor --all");
        assert!(parse(&["--at", "5", "--all"]).is_err(), "both");
    }
}
