//! Imports into a user's listening history from the command line: an
//! export file or a live pull of a remote user's history. The import
//! itself is the core's ([`spindle_app::import`]: the jobs, the spool,
//! its task, and [`spindle_app::pull`]); here are the commands.
//!
//! With the server stopped, `spindle listens import` and `spindle
//! listens pull` run here, through an [`AppState`] over the data dir
//! under the server's settings. While it runs (the library is locked),
//! they hand the job to it through the [`Spool`] (`DATA_DIR/imports/`),
//! whose task ([`worker::run`]) imports it in steps and saves its
//! progress after each, so that a restarted server resumes it. The design
//! is section 2 of `docs/scrobble-hub.md`.

pub use spindle_app::import::{
    job, spool, worker, Api, ImportError, Job, JobState, Pull, Source, Spool, Tally,
};

use std::path::Path;
use std::sync::Arc;

use crate::accounts::Accounts;
use crate::offline::{open_state, user_accounts, StateError};
use crate::{AppState, SystemClock};

/// Where an import or pull runs.
#[allow(
    clippy::large_enum_variant,
    reason = "one is made per command; boxing buys nothing"
)]
pub enum Started<T> {
    /// Here, the server being stopped.
    Here(T),
    /// Handed to the running server: follow the job in the spool.
    Spooled(Job),
}

impl AppState {
    /// Takes import jobs from `DATA_DIR/imports/` ([`worker::run`] runs
    /// them). Call before the state is shared.
    pub fn with_import_spool(mut self, data_dir: &Path) -> Self {
        std::sync::Arc::make_mut(&mut self.app).set_import_spool(data_dir);
        self
    }
}

/// `spindle listens pull`'s options after `--user`: where the history is
/// read from.
#[derive(Debug, Clone, PartialEq, Eq, clap::Args)]
pub struct PullArgs {
    /// A Last.fm-compatible API endpoint, as
    /// `https://ws.audioscrobbler.com/2.0/` or `https://libre.fm/2.0/`.
    #[arg(
        long,
        value_name = "URL",
        required_unless_present = "listenbrainz",
        conflicts_with = "listenbrainz",
        requires = "api_key"
    )]
    pub lastfm: Option<String>,
    /// The application's API key there (--lastfm).
    #[arg(long, value_name = "KEY")]
    pub api_key: Option<String>,
    /// A ListenBrainz-compatible API root, as
    /// `https://api.listenbrainz.org`.
    #[arg(long, value_name = "URL")]
    pub listenbrainz: Option<String>,
    /// A user token there, to read a private history (--listenbrainz).
    #[arg(long, value_name = "TOKEN", requires = "listenbrainz")]
    pub token: Option<String>,
    /// The user whose history is read there.
    #[arg(long, value_name = "NAME")]
    pub remote_user: String,
}

impl PullArgs {
    /// The pull from its first page; `None` without an API's URL.
    pub fn pull(&self) -> Option<Pull> {
        let (api, url, key) = match (&self.lastfm, &self.listenbrainz) {
            (Some(url), _) => (Api::Lastfm, url, &self.api_key),
            (None, Some(url)) => (Api::Listenbrainz, url, &self.token),
            (None, None) => return None,
        };
        Some(Pull {
            api,
            url: url.clone(),
            remote_user: self.remote_user.clone(),
            key: key.clone(),
            cursor: None,
            pages: 0,
        })
    }
}

/// The state over `data_dir` to import here, or `None` when the server
/// holds the library (it is running).
fn open_here(data_dir: &Path, accounts: Accounts) -> Result<Option<AppState>, ImportError> {
    match open_state(data_dir, accounts) {
        Ok(state) => Ok(Some(state.with_import_spool(data_dir))),
        Err(StateError::Running { .. }) => Ok(None),
        Err(e) => Err(e.into()),
    }
}

/// Imports the export `file` as `user`'s listens into the history of
/// `data_dir`, idempotently (listens already there are not added again):
/// handed to the server when it runs, else run here as the server would
/// run it — the same job, through the same steps and the same
/// [`crate::App::import`], under the server's settings (its dedupe and
/// time windows) — so the result does not depend on whether the server
/// runs. The file is read first either way, so one that is not an export
/// is refused at once. Here, the finished job is returned.
pub fn import_file(data_dir: &Path, file: &Path, user: &str) -> Result<Started<Job>, ImportError> {
    let accounts = user_accounts(data_dir, user)?;
    let text = std::fs::read_to_string(file).map_err(|source| ImportError::Read {
        path: file.to_owned(),
        source,
    })?;
    spindle_listens::import::read_export(&text, user).map_err(|source| ImportError::Parse {
        path: file.to_owned(),
        source,
    })?;
    drop(text);
    let name = file
        .file_name()
        .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
    let job = Job::new(user, Source::File { name }, SystemClock.now_secs());
    let spool = Spool::new(data_dir);
    let spool_error = |source| ImportError::Spool {
        path: spool.incoming(),
        source,
    };
    let Some(state) = open_here(data_dir, accounts)? else {
        spool.hand_in_file(&job, file).map_err(spool_error)?;
        return Ok(Started::Spooled(job));
    };
    spool.place_file(&job, file).map_err(spool_error)?;
    let running = spawn_here(state, job)?;
    let job = running
        .join()
        .map_err(|_| ImportError::Task("the import thread panicked".into()))?;
    Ok(Started::Here(job))
}

/// Starts pulling `pull` into `user`'s history: the job to run here
/// ([`run_here`]) when the server is stopped, else handed to it.
pub fn start_pull(
    data_dir: &Path,
    user: &str,
    pull: Pull,
) -> Result<Started<(AppState, Job)>, ImportError> {
    let accounts = user_accounts(data_dir, user)?;
    let job = Job::new(user, Source::Pull(pull), SystemClock.now_secs());
    match open_here(data_dir, accounts)? {
        Some(mut state) => {
            // Pulled here, the requests keep to the settings file's
            // outbound rule as the server's would.
            let forward = crate::forward::ForwardConfig::from_settings()
                .map_err(|e| ImportError::Task(format!("reading the settings: {e}")))?;
            let mut config = (*state.config).clone();
            config.forward.outbound = forward.outbound;
            state.config = Arc::new(config);
            Ok(Started::Here((state, job)))
        }
        None => {
            let spool = Spool::new(data_dir);
            spool.hand_in(&job).map_err(|source| ImportError::Spool {
                path: spool.incoming(),
                source,
            })?;
            Ok(Started::Spooled(job))
        }
    }
}

/// Runs `job` here, saving its progress in the spool as the server
/// would (so a pull cut short here resumes when the server starts), and
/// returns it finished.
pub async fn run_here(state: AppState, job: Job) -> Job {
    let Some(spool) = state.import_spool().cloned() else {
        return job;
    };
    let (_stop, stopped) = tokio::sync::watch::channel(false);
    let outbound = state.config.forward.outbound.clone();
    let job = worker::run_job(state.app.as_ref().clone(), outbound, spool, job, stopped).await;
    let _ = spindle_app::offload::run(move || state.stop_background()).await;
    job
}

/// [`run_here`] on a thread of its own: the job is in the spool when
/// this returns, so its progress can be followed there (as a job the
/// server runs is) while the thread runs it.
pub fn spawn_here(state: AppState, job: Job) -> Result<std::thread::JoinHandle<Job>, ImportError> {
    if let Some(spool) = state.import_spool() {
        spool.save(&job).map_err(|source| ImportError::Spool {
            path: spool.incoming(),
            source,
        })?;
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| ImportError::Task(format!("starting the async runtime: {e}")))?;
    Ok(std::thread::spawn(move || {
        rt.block_on(run_here(state, job))
    }))
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;
    use spindle_store::Db;

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

    fn here(s: Started<Job>) -> Job {
        match s {
            Started::Here(i) => i,
            Started::Spooled(j) => panic!("handed in as {}", j.id),
        }
    }

    #[test]
    fn an_export_imported_twice_adds_its_listens_once() {
        let (dir, file) = data_dir_with_ann();
        let first = here(import_file(dir.path(), &file, "ann").unwrap());
        assert_eq!(
            (first.format.as_deref(), first.total, first.added),
            (Some("listenbrainz"), 2, 2)
        );
        let again = here(import_file(dir.path(), &file, "ann").unwrap());
        assert_eq!((again.total, again.added), (2, 0));
    }

    #[test]
    fn listens_outside_the_time_window_are_skipped_and_noted() {
        let (dir, file) = data_dir_with_ann();
        // One before the earliest accepted time, one centuries ahead,
        // one as i64::MAX, and one that is fine.
        let export = r#"[{"listened_at": 5, "track_metadata": {"artist_name": "A", "track_name": "Old"}},
            {"listened_at": 99999999999, "track_metadata": {"artist_name": "A", "track_name": "Far"}},
            {"listened_at": 9223372036854775807, "track_metadata": {"artist_name": "A", "track_name": "Max"}},
            {"listened_at": 1700000000, "track_metadata": {"artist_name": "A", "track_name": "Fine"}}]"#;
        std::fs::write(&file, export).unwrap();
        let done = here(import_file(dir.path(), &file, "ann").unwrap());
        assert_eq!((done.total, done.added), (4, 1));
        // Skipped for the time window, not counted as there already.
        assert_eq!((done.tally().already, done.tally().outside_window), (0, 3));
        assert_eq!(
            done.tally().to_string(),
            "1 of 4 listens added (0 already there, 3 outside the time window)"
        );
        assert!(
            done.notes
                .iter()
                .any(|n| n.starts_with("3 listens outside the accepted time window")),
            "{:?}",
            done.notes
        );
    }

    /// The same play sent by two players, 10 s apart: one listen, with
    /// the server stopped as with it running (its dedupe window).
    const TWICE: &str = r#"[{"listened_at": 1700000000, "track_metadata": {"artist_name": "Weezer", "track_name": "Buddy Holly"}},
        {"listened_at": 1700000010, "track_metadata": {"artist_name": "Weezer", "track_name": "Buddy Holly"}},
        {"listened_at": 1700000300, "track_metadata": {"artist_name": "Weezer", "track_name": "Say It Ain't So"}}]"#;

    #[test]
    fn a_stopped_server_imports_with_the_same_dedupe_window_as_a_running_one() {
        let (dir, file) = data_dir_with_ann();
        std::fs::write(&file, TWICE).unwrap();
        let here = here(import_file(dir.path(), &file, "ann").unwrap());
        assert_eq!((here.total, here.added, here.duplicates), (3, 2, 1));
        // The running server's path: the job handed in, taken by the
        // worker over a state opened as `spindle serve` opens it.
        let (dir2, file2) = data_dir_with_ann();
        std::fs::write(&file2, TWICE).unwrap();
        let server = Db::open(dir2.path()).unwrap();
        let Started::Spooled(job) = import_file(dir2.path(), &file2, "ann").unwrap() else {
            panic!("imported beside a running server");
        };
        drop(server);
        let state =
            crate::offline::open_state(dir2.path(), user_accounts(dir2.path(), "ann").unwrap())
                .unwrap()
                .with_import_spool(dir2.path());
        let spool = Spool::new(dir2.path());
        let taken = spool.take_incoming().unwrap();
        assert_eq!(taken.len(), 1);
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let online = rt.block_on(run_here(state, taken.into_iter().next().unwrap()));
        assert_eq!(online.id, job.id);
        assert_eq!(
            (online.total, online.added, online.duplicates),
            (here.total, here.added, here.duplicates)
        );
    }

    #[test]
    fn an_unknown_user_is_told_how_to_add_one() {
        let (dir, file) = data_dir_with_ann();
        let err = import_file(dir.path(), &file, "bob").err().unwrap();
        assert_eq!(
            err.to_string(),
            "no user named 'bob' (spindle user add bob)"
        );
    }

    #[test]
    fn with_the_library_in_use_the_export_is_handed_to_the_server() {
        let (dir, file) = data_dir_with_ann();
        let _server = Db::open(dir.path()).unwrap();
        let Started::Spooled(job) = import_file(dir.path(), &file, "ann").unwrap() else {
            panic!("imported beside a running server");
        };
        let spool = Spool::new(dir.path());
        assert_eq!(
            spool.read(&job.id).unwrap().unwrap().state,
            JobState::Queued
        );
        assert_eq!(
            std::fs::read_to_string(spool.incoming().join(format!("{}.data", job.id))).unwrap(),
            EXPORT
        );
    }

    #[test]
    fn pull_arguments_take_the_key_of_the_api_they_name() {
        let mut a = PullArgs {
            lastfm: None,
            api_key: Some("k".into()),
            listenbrainz: None,
            token: Some("t".into()),
            remote_user: "bob".into(),
        };
        assert_eq!(a.pull(), None);
        a.listenbrainz = Some("http://lb".into());
        let p = a.pull().unwrap();
        assert_eq!(
            (p.api, p.url.as_str(), p.key.as_deref()),
            (Api::Listenbrainz, "http://lb", Some("t"))
        );
        a.lastfm = Some("http://x/2.0/".into());
        let p = a.pull().unwrap();
        assert_eq!(
            (p.api, p.key.as_deref(), p.pages),
            (Api::Lastfm, Some("k"), 0)
        );
    }
}
