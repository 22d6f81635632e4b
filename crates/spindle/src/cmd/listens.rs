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
use spindle_server::import::{Job, JobState, PullArgs, Spool, Started, Tally};

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
        #[command(flatten)]
        from: PullArgs,
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
                Started::Here(job) => finished(job)?,
                Started::Spooled(job) => {
                    println!(
                        "the server is running: it imports {} as job {}",
                        file.display(),
                        job.id
                    );
                    finished(follow(data_dir, &job.id)?)?;
                }
            }
        }
        ListensCommand::Pull { user, from } => {
            let Some(pull) = from.pull() else {
                anyhow::bail!("say where from: --lastfm URL or --listenbrainz URL");
            };
            let remote_user = &from.remote_user;
            match spindle_server::import::start_pull(data_dir, user, pull)? {
                Started::Here((state, job)) => {
                    let id = job.id.clone();
                    let pulling = spindle_server::import::spawn_here(state, job)?;
                    let followed = follow(data_dir, &id);
                    let _ = pulling.join();
                    finished(followed?)?;
                }
                Started::Spooled(job) => {
                    println!(
                        "the server is running: it pulls {remote_user}'s history as job {}",
                        job.id
                    );
                    finished(follow(data_dir, &job.id)?)?;
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
fn finished(job: Job) -> anyhow::Result<()> {
    if job.state == JobState::Failed {
        for n in &job.notes {
            println!("note: {n}");
        }
        anyhow::bail!(
            "the import failed: {}",
            job.error.as_deref().unwrap_or("no reason given")
        );
    }
    summary(&job.notes, job.tally());
    Ok(())
}

fn summary(notes: &[String], tally: Tally) {
    for n in notes {
        println!("note: {n}");
    }
    println!("{tally}");
}
