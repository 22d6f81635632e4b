//! `spindle listens import FILE` and `spindle listens pull`: an export,
//! or a user's history on a Last.fm- or ListenBrainz-compatible service,
//! into the listening history, idempotently (what is there already
//! dedupes). With the server stopped they run here; while it runs they
//! hand the job to it and print its progress until it is done (the
//! imports are `spindle_server::import`, the pull `spindle_server::pull`).

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::Context;
use clap::Subcommand;
use spindle_server::import::{Api, Job, JobState, Pull, Spool, Started};

/// How often a handed-in job's progress is read.
const FOLLOW_EVERY: Duration = Duration::from_millis(500);

/// How long a job may wait in the spool before the command says that
/// the server does not seem to take it.
const NOT_TAKEN_AFTER: Duration = Duration::from_secs(10);

#[derive(Debug, Subcommand)]
pub enum ListensCommand {
    /// Import an export: Last.fm (CSV or JSON), ListenBrainz (JSON or
    /// JSON lines), a Rockbox .scrobbler.log, Spotify's extended
    /// streaming history (JSON) or a Maloja export (JSON). While
    /// `spindle serve` runs, the server imports it and this prints its
    /// progress.
    Import {
        file: PathBuf,
        /// The user the listens belong to.
        #[arg(long)]
        user: String,
    },
    /// Pull a user's whole history from a Last.fm-compatible API
    /// (user.getRecentTracks) or a ListenBrainz-compatible one. While
    /// `spindle serve` runs, the server pulls it (resuming after a
    /// restart) and this prints its progress.
    Pull {
        /// The user the listens go to here.
        #[arg(long)]
        user: String,
        /// A Last.fm-compatible API endpoint, as
        /// `https://ws.audioscrobbler.com/2.0/` or `https://libre.fm/2.0/`.
        #[arg(
            long,
            value_name = "URL",
            required_unless_present = "listenbrainz",
            conflicts_with = "listenbrainz",
            requires = "api_key"
        )]
        lastfm: Option<String>,
        /// The application's API key there (--lastfm).
        #[arg(long, value_name = "KEY")]
        api_key: Option<String>,
        /// A ListenBrainz-compatible API root, as
        /// `https://api.listenbrainz.org`.
        #[arg(long, value_name = "URL")]
        listenbrainz: Option<String>,
        /// A user token there, to read a private history (--listenbrainz).
        #[arg(long, value_name = "TOKEN", requires = "listenbrainz")]
        token: Option<String>,
        /// The user whose history is read there.
        #[arg(long, value_name = "NAME")]
        remote_user: String,
    },
    /// Corrections: edit, delete, merge, undo, corrections.
    #[command(flatten)]
    Correct(super::corrections::CorrectionCommand),
}

pub fn run(cmd: &ListensCommand, data_dir: &Path) -> anyhow::Result<()> {
    match cmd {
        ListensCommand::Correct(c) => super::corrections::run(c, data_dir)?,
        ListensCommand::Import { file, user } => {
            match spindle_server::import::import_file(data_dir, file, user)? {
                Started::Here(done) => {
                    for n in &done.notes {
                        println!("note: {n}");
                    }
                    println!(
                        "{} of {} listens added ({} already there)",
                        done.added,
                        done.total,
                        done.total - done.added
                    );
                }
                Started::Spooled(job) => {
                    println!(
                        "the server is running: it imports {} as job {}",
                        file.display(),
                        job.id
                    );
                    summary(follow(data_dir, &job.id)?)?;
                }
            }
        }
        ListensCommand::Pull {
            user,
            lastfm,
            api_key,
            listenbrainz,
            token,
            remote_user,
        } => {
            let (api, url, key) = match (lastfm, listenbrainz) {
                (Some(url), _) => (Api::Lastfm, url, api_key.clone()),
                (None, Some(url)) => (Api::Listenbrainz, url, token.clone()),
                (None, None) => anyhow::bail!("say where from: --lastfm URL or --listenbrainz URL"),
            };
            let pull = Pull {
                api,
                url: url.clone(),
                remote_user: remote_user.clone(),
                key,
                cursor: None,
                pages: 0,
            };
            match spindle_server::import::start_pull(data_dir, user, pull)? {
                Started::Here((state, job)) => {
                    let spool = Spool::new(data_dir);
                    spool
                        .save(&job)
                        .with_context(|| format!("writing to {}", spool.incoming().display()))?;
                    let rt = tokio::runtime::Builder::new_multi_thread()
                        .enable_all()
                        .build()
                        .context("starting the async runtime")?;
                    let id = job.id.clone();
                    let pulling = std::thread::spawn(move || {
                        rt.block_on(spindle_server::import::run_here(state, job))
                    });
                    let followed = follow(data_dir, &id);
                    let _ = pulling.join();
                    summary(followed?)?;
                }
                Started::Spooled(job) => {
                    println!(
                        "the server is running: it pulls {remote_user}'s history as job {}",
                        job.id
                    );
                    summary(follow(data_dir, &job.id)?)?;
                }
            }
        }
    }
    Ok(())
}

/// Prints `id`'s progress whenever it changes, until it is done or
/// failed; returns it then.
fn follow(data_dir: &Path, id: &str) -> anyhow::Result<Job> {
    let spool = Spool::new(data_dir);
    let start = Instant::now();
    let (mut last, mut warned) = (String::new(), false);
    loop {
        let job = spool
            .read(id)
            .with_context(|| format!("reading the import job {id}"))?
            .with_context(|| format!("the import job {id} is gone from the spool"))?;
        let line = job.progress_line();
        if line != last {
            println!("{line}");
            last = line;
        }
        if job.state.finished() {
            return Ok(job);
        }
        if job.state == JobState::Queued && !warned && start.elapsed() > NOT_TAKEN_AFTER {
            warned = true;
            eprintln!(
                "the server has not taken the job yet; it waits in {} (Ctrl-C leaves it there)",
                spool.incoming().display()
            );
        }
        std::thread::sleep(FOLLOW_EVERY);
    }
}

/// The end of a job: its notes and totals, or its error.
fn summary(job: Job) -> anyhow::Result<()> {
    for n in &job.notes {
        println!("note: {n}");
    }
    if job.state == JobState::Failed {
        anyhow::bail!(
            "the import failed: {}",
            job.error.as_deref().unwrap_or("no reason given")
        );
    }
    println!(
        "{} of {} listens added ({} already there)",
        job.added, job.total, job.duplicates
    );
    Ok(())
}
