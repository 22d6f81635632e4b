//! The server's import task: every [`SPOOL_POLL`] it takes the jobs
//! handed in to the [`Spool`] and runs them one at a time ([`MAX_RUNNING`];
//! the others wait, `queued`), an export in steps of [`IMPORT_CHUNK`]
//! listens and a pull page by page ([`crate::pull`]), saving the job's
//! progress after every step. At start it removes the partial uploads a
//! crash left and resumes the jobs a shutdown left running. It stops at
//! the server's shutdown signal: each job stops after its current step
//! (its file still says `running`, so the next start resumes it), and the
//! task returns once every job has. A job that fails keeps its file, with
//! the error; its export is removed.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use spindle_listens::Listen;
use spindle_scrobble::outbound::Policy;
use tokio::sync::{watch, Semaphore};
use tokio::task::JoinSet;

use super::{ImportError, Job, JobState, Source, Spool};
use crate::offline::UserError;
use crate::App;

/// How often the spool's `incoming/` folder is looked at: 1 s, so that
/// `spindle listens import` beside a running server starts at once.
pub const SPOOL_POLL: Duration = Duration::from_secs(1);

/// Listens stored per step of an export; the job is saved after each.
/// 2,000 listens are one group commit of the log and about 0.2 s of
/// work, so a shutdown waits little for the step in hand.
pub const IMPORT_CHUNK: usize = 2_000;

/// Jobs run at once: 1. An export is parsed in memory whole, so two big
/// ones side by side would double the memory an import takes; and the
/// history's writer is one anyway.
pub const MAX_RUNNING: usize = 1;

/// How a job's run ended, short of failing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Outcome {
    Finished,
    /// The shutdown signal came: resume at the next start.
    Stopped,
}

/// Runs the spool of `app` until `stop` turns true (or its sender is
/// dropped), then waits for the jobs in hand to stop. Pulls keep to
/// `outbound` (the `[outbound] allow` setting).
pub async fn run(app: App, outbound: Policy, mut stop: watch::Receiver<bool>) {
    let Some(spool) = app.import_spool().cloned() else {
        return;
    };
    let mut jobs = JoinSet::new();
    let mut running = HashSet::new();
    let gate = Arc::new(Semaphore::new(MAX_RUNNING));
    let sp = spool.clone();
    match crate::offload::run(move || sp.remove_stale_parts()).await {
        Ok(Ok(0)) => {}
        Ok(Ok(n)) => tracing::info!("removed {n} partial uploads left in the import spool"),
        Ok(Err(e)) => tracing::warn!("removing partial uploads from the import spool: {e}"),
        Err(e) => tracing::warn!("removing partial uploads from the import spool: {e}"),
    }
    let sp = spool.clone();
    match crate::offload::run(move || sp.unfinished()).await {
        Ok(Ok(list)) => {
            for job in list {
                tracing::info!(job = %job.id, "resuming the import for {}", job.user);
                running.insert(job.id.clone());
                let (st, sp, g) = (app.clone(), spool.clone(), gate.clone());
                jobs.spawn(run_gated(g, st, outbound.clone(), sp, job, stop.clone()));
            }
        }
        Ok(Err(e)) => tracing::warn!("reading the import jobs: {e}"),
        Err(e) => tracing::warn!("reading the import jobs: {e}"),
    }
    let mut tick = tokio::time::interval(SPOOL_POLL);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        if *stop.borrow() {
            break;
        }
        tokio::select! {
            changed = stop.changed() => if changed.is_err() { break },
            _ = tick.tick() => {
                let sp = spool.clone();
                let taken = match crate::offload::run(move || sp.take_incoming()).await {
                    Ok(Ok(t)) => t,
                    Ok(Err(e)) => {
                        tracing::warn!("taking import jobs from the spool: {e}");
                        Vec::new()
                    }
                    Err(e) => {
                        tracing::warn!("taking import jobs from the spool: {e}");
                        Vec::new()
                    }
                };
                for job in taken {
                    if running.insert(job.id.clone()) {
                        tracing::info!(job = %job.id, "import for {} handed in", job.user);
                        let (st, sp, g) = (app.clone(), spool.clone(), gate.clone());
                        jobs.spawn(run_gated(g, st, outbound.clone(), sp, job, stop.clone()));
                    }
                }
            }
            Some(done) = jobs.join_next(), if !jobs.is_empty() => {
                if let Ok(job) = done {
                    running.remove(&job.id);
                }
            }
        }
    }
    while jobs.join_next().await.is_some() {}
}

/// Waits for a turn at `gate` (the job stays `queued`, or as a shutdown
/// left it), then [`run_job`]; returns the job untouched if `stop` comes
/// first.
async fn run_gated(
    gate: Arc<Semaphore>,
    app: App,
    outbound: Policy,
    spool: Spool,
    job: Job,
    stop: watch::Receiver<bool>,
) -> Job {
    let mut stopping = stop.clone();
    let permit = tokio::select! {
        p = gate.acquire_owned() => p,
        _ = stopping.wait_for(|s| *s) => return job,
    };
    let Ok(_permit) = permit else {
        return job;
    };
    if *stop.borrow() {
        return job;
    }
    run_job(app, outbound, spool, job, stop).await
}

/// Runs one job to its end, or until `stop`; returns it as last saved.
/// A pull's requests keep to `outbound`.
pub async fn run_job(
    app: App,
    outbound: Policy,
    spool: Spool,
    mut job: Job,
    stop: watch::Receiver<bool>,
) -> Job {
    if !app.accounts.user_exists(&job.user) {
        let e = ImportError::User(UserError::NoUser {
            user: job.user.clone(),
        });
        return fail(&app, &spool, job, &e).await;
    }
    job.state = JobState::Running;
    save(&app, &spool, &mut job).await;
    let res = match &job.source {
        Source::File { .. } => run_file(&app, &spool, &mut job, &stop).await,
        Source::Pull(_) => crate::pull::run(&app, &outbound, &spool, &mut job, &stop).await,
    };
    match res {
        Ok(Outcome::Finished) => {
            job.state = JobState::Done;
            save(&app, &spool, &mut job).await;
            spool.remove_data(&job.id);
            tracing::info!(job = %job.id, "import for {} {}", job.user, job.progress_line());
            job
        }
        Ok(Outcome::Stopped) => job,
        Err(e) => fail(&app, &spool, job, &e).await,
    }
}

/// Marks `job` failed with `e`'s text (keys redacted, [`error_text`]),
/// saves it and removes its export.
pub(crate) async fn fail(app: &App, spool: &Spool, mut job: Job, e: &ImportError) -> Job {
    let msg = error_text(e);
    tracing::warn!(job = %job.id, "import for {} failed: {msg}", job.user);
    job.state = JobState::Failed;
    job.error = Some(msg);
    save(app, spool, &mut job).await;
    spool.remove_data(&job.id);
    job
}

/// `e` and its sources, joined by `: `, with the value of any
/// `api_key=` or `token=` in it replaced by `REDACTED` (the pull's own
/// errors carry no URL query, but a source might).
pub(crate) fn error_text(e: &ImportError) -> String {
    let mut msg = e.to_string();
    let mut src = std::error::Error::source(e);
    while let Some(s) = src {
        msg.push_str(": ");
        msg.push_str(&s.to_string());
        src = s.source();
    }
    redact_keys(&msg)
}

/// `text` with the values of `api_key=…`, `token=…` and `sk=…` query
/// parameters replaced by `REDACTED`.
fn redact_keys(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    'outer: while !rest.is_empty() {
        for name in ["api_key=", "token=", "sk="] {
            let at_start = out
                .chars()
                .last()
                .is_none_or(|c| matches!(c, '?' | '&' | ' ' | '(' | '"' | '\''));
            if at_start
                && rest
                    .get(..name.len())
                    .is_some_and(|p| p.eq_ignore_ascii_case(name))
            {
                out.push_str(&rest[..name.len()]);
                out.push_str("REDACTED");
                rest = &rest[name.len()..];
                let end = rest
                    .find(['&', ' ', ')', '"', '\'', '#'])
                    .unwrap_or(rest.len());
                rest = &rest[end..];
                continue 'outer;
            }
        }
        let Some(c) = rest.chars().next() else { break };
        out.push(c);
        rest = &rest[c.len_utf8()..];
    }
    out
}

/// Saves `job`'s progress; a failure is logged (the job goes on, and
/// resumes from an older step after a restart).
pub(crate) async fn save(app: &App, spool: &Spool, job: &mut Job) {
    job.updated = app.now();
    let (sp, j) = (spool.clone(), job.clone());
    match crate::offload::run(move || sp.save(&j)).await {
        Ok(Ok(())) => {}
        Ok(Err(e)) => tracing::warn!(job = %job.id, "saving the import's progress: {e}"),
        Err(e) => tracing::warn!(job = %job.id, "saving the import's progress: {e}"),
    }
}

/// Stores `listens` as an import ([`App::import`]) on a blocking
/// thread and counts them into `job` (`added`, `duplicates`,
/// `outside_window` and its note).
pub(crate) async fn store(
    app: &App,
    job: &mut Job,
    listens: Vec<Listen>,
) -> Result<(), ImportError> {
    let st = app.clone();
    let counts = crate::offload::run(move || st.import(listens))
        .await
        .map_err(|e| ImportError::Task(e.to_string()))??;
    job.added += counts.added;
    job.duplicates += counts.already;
    if counts.outside_window > 0 {
        job.outside_window += counts.outside_window;
        job.set_window_note(super::window_note(app, job.outside_window));
    }
    Ok(())
}

/// Imports the export beside `job`, from the listen it got to.
async fn run_file(
    app: &App,
    spool: &Spool,
    job: &mut Job,
    stop: &watch::Receiver<bool>,
) -> Result<Outcome, ImportError> {
    let path = spool.data_path(&job.id);
    let user = job.user.clone();
    let p = path.clone();
    let export = crate::offload::run(move || {
        let text = std::fs::read_to_string(&p).map_err(|source| ImportError::Read {
            path: p.clone(),
            source,
        })?;
        spindle_listens::import::read_export(&text, &user)
            .map_err(|source| ImportError::Parse { path: p, source })
    })
    .await
    .map_err(|e| ImportError::Task(e.to_string()))??;
    job.format = Some(export.format.name().to_owned());
    job.notes = export.notes;
    if job.outside_window > 0 {
        job.set_window_note(super::window_note(app, job.outside_window));
    }
    job.total = export.listens.len() as u64;
    save(app, spool, job).await;
    let from = (job.done as usize).min(export.listens.len());
    for chunk in export.listens[from..].chunks(IMPORT_CHUNK) {
        if *stop.borrow() {
            return Ok(Outcome::Stopped);
        }
        store(app, job, chunk.to_vec()).await?;
        job.done += chunk.len() as u64;
        save(app, spool, job).await;
    }
    Ok(Outcome::Finished)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::accounts::Accounts;
    use crate::clock::ManualClock;
    use crate::CoreConfig;
    use spindle_store::Db;

    const LOG: &str = "#AUDIOSCROBBLER/1.1\n#TZ/UNKNOWN\n#CLIENT/Rockbox ipodvideo $Revision$\n\
Metallica\tMetallica\tEnter Sandman\t1\t365\tL\t1700000000\t\n\
Portishead\tDummy\tCowboys\t2\t279\tS\t1700000400\t\n\
Portishead\tDummy\tRoads\t3\t305\tL\t1700000700\t\n";

    fn state(dir: &std::path::Path) -> App {
        let acc = Accounts::open(&dir.join("accounts")).unwrap();
        acc.add_user_cheaply("ann", "secret-password");
        let (listens, _) = spindle_listens::Listens::open(&dir.join("listens")).unwrap();
        let mut app = App::new(
            Arc::new(Db::open(dir.join("lib")).unwrap()),
            Arc::new(acc),
            Arc::new(listens),
            CoreConfig::default(),
            Arc::new(ManualClock::new(1_750_000_000)),
        );
        app.set_import_spool(dir);
        app.started()
    }

    /// Polls the job's file until it is finished.
    async fn finished(spool: &Spool, id: &str) -> Job {
        for _ in 0..100 {
            if let Some(j) = spool.read(id).unwrap() {
                if j.state.finished() {
                    return j;
                }
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        panic!("job {id} did not finish");
    }

    #[tokio::test]
    async fn a_log_handed_in_to_the_running_spool_is_imported_once_with_its_progress() {
        let dir = tempfile::tempdir().unwrap();
        let st = state(dir.path());
        let spool = st.import_spool().unwrap().clone();
        let (stop, stopped) = watch::channel(false);
        let task = tokio::spawn(run(st.clone(), Policy::default(), stopped));
        let file = dir.path().join(".scrobbler.log");
        std::fs::write(&file, LOG).unwrap();
        let job = Job::new(
            "ann",
            Source::File {
                name: ".scrobbler.log".into(),
            },
            1,
        );
        spool.hand_in_file(&job, &file).unwrap();
        let done = finished(&spool, &job.id).await;
        assert_eq!(done.state, JobState::Done, "{:?}", done.error);
        assert_eq!((done.total, done.added, done.duplicates), (2, 2, 0));
        assert_eq!(done.format.as_deref(), Some("rockbox"));
        assert!(done.notes.iter().any(|n| n.contains("#TZ/UNKNOWN")));
        assert!(
            !spool.data_path(&job.id).exists(),
            "the export is removed once imported"
        );
        let recent = st.listens.recent(
            "ann",
            &spindle_listens::RecentQuery {
                limit: 10,
                page: 1,
                ..Default::default()
            },
        );
        assert_eq!(recent.listens.len(), 2);
        assert_eq!(recent.listens[0].client, "import/rockbox");
        // The same log again: nothing doubles.
        let again = Job::new(
            "ann",
            Source::File {
                name: "again".into(),
            },
            2,
        );
        spool.hand_in_file(&again, &file).unwrap();
        let done = finished(&spool, &again.id).await;
        assert_eq!((done.added, done.duplicates), (0, 2));
        stop.send(true).unwrap();
        tokio::time::timeout(Duration::from_secs(5), task)
            .await
            .unwrap()
            .unwrap();
    }

    #[tokio::test]
    async fn a_job_left_running_is_resumed_from_its_step_at_start() {
        let dir = tempfile::tempdir().unwrap();
        let st = state(dir.path());
        let spool = st.import_spool().unwrap().clone();
        // As a shutdown leaves it: taken, running, one listen done.
        let mut job = Job::new("ann", Source::File { name: "log".into() }, 1);
        job.state = JobState::Running;
        job.done = 1;
        spool.save(&job).unwrap();
        std::fs::write(spool.data_path(&job.id), LOG).unwrap();
        let (stop, stopped) = watch::channel(false);
        let task = tokio::spawn(run(st.clone(), Policy::default(), stopped));
        let done = finished(&spool, &job.id).await;
        // Only the listen after the first was stored.
        assert_eq!((done.state, done.done, done.added), (JobState::Done, 2, 1));
        stop.send(true).unwrap();
        task.await.unwrap();
    }

    #[tokio::test]
    async fn a_failed_job_keeps_its_file_and_error_but_not_its_export() {
        let dir = tempfile::tempdir().unwrap();
        let st = state(dir.path());
        let spool = st.import_spool().unwrap().clone();
        let job = Job::new("ann", Source::File { name: "x".into() }, 1);
        spool.save(&job).unwrap();
        std::fs::write(spool.data_path(&job.id), "not an export").unwrap();
        let done = run_job(
            st,
            Policy::default(),
            spool.clone(),
            job.clone(),
            watch::channel(false).1,
        )
        .await;
        assert_eq!(done.state, JobState::Failed);
        assert!(!spool.data_path(&job.id).exists(), "the export is removed");
        let saved = spool.read(&job.id).unwrap().unwrap();
        assert_eq!(saved.state, JobState::Failed);
        assert!(saved.error.is_some());
    }

    #[tokio::test]
    async fn a_job_error_never_shows_an_api_key() {
        let dir = tempfile::tempdir().unwrap();
        let st = state(dir.path());
        let spool = st.import_spool().unwrap().clone();
        let job = Job::new("ann", Source::File { name: "x".into() }, 1);
        let e = ImportError::Task(
            "error sending request for url (http://x/2.0/?method=m&api_key=SECRET&token=S2 x)"
                .into(),
        );
        let done = fail(&st, &spool, job, &e).await;
        let text = done.error.unwrap();
        assert!(!text.contains("SECRET") && !text.contains("S2"), "{text}");
        assert!(
            text.contains("api_key=REDACTED&token=REDACTED x)"),
            "{text}"
        );
    }

    #[tokio::test]
    async fn a_job_counts_and_notes_listens_outside_the_time_window() {
        let dir = tempfile::tempdir().unwrap();
        let st = state(dir.path());
        let spool = st.import_spool().unwrap().clone();
        let job = Job::new("ann", Source::File { name: "x".into() }, 1);
        spool.save(&job).unwrap();
        let export = r#"[{"listened_at": 5, "track_metadata": {"artist_name": "A", "track_name": "Old"}},
            {"listened_at": 1700000000, "track_metadata": {"artist_name": "A", "track_name": "Fine"}}]"#;
        std::fs::write(spool.data_path(&job.id), export).unwrap();
        let done = run_job(st, Policy::default(), spool, job, watch::channel(false).1).await;
        assert_eq!(done.state, JobState::Done, "{:?}", done.error);
        assert_eq!(
            (done.total, done.added, done.duplicates, done.outside_window),
            (2, 1, 0, 1),
            "outside the window is not counted as there already"
        );
        assert!(
            done.notes
                .iter()
                .any(|n| n.starts_with("1 listens outside")),
            "{:?}",
            done.notes
        );
    }

    #[tokio::test]
    async fn a_job_waits_queued_while_another_runs() {
        let dir = tempfile::tempdir().unwrap();
        let st = state(dir.path());
        let spool = st.import_spool().unwrap().clone();
        let gate = Arc::new(Semaphore::new(MAX_RUNNING));
        let busy = gate.clone().acquire_owned().await.unwrap();
        let job = Job::new("ann", Source::File { name: "log".into() }, 1);
        spool.save(&job).unwrap();
        std::fs::write(spool.data_path(&job.id), LOG).unwrap();
        let (_stop, stopped) = watch::channel(false);
        let task = tokio::spawn(run_gated(
            gate,
            st,
            Policy::default(),
            spool.clone(),
            job.clone(),
            stopped,
        ));
        tokio::time::sleep(Duration::from_millis(300)).await;
        assert_eq!(
            spool.read(&job.id).unwrap().unwrap().state,
            JobState::Queued
        );
        drop(busy);
        let done = tokio::time::timeout(Duration::from_secs(10), task)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(done.state, JobState::Done, "{:?}", done.error);
    }

    #[tokio::test]
    async fn the_task_removes_partial_uploads_left_by_a_crash() {
        let dir = tempfile::tempdir().unwrap();
        let st = state(dir.path());
        let part = st.import_spool().unwrap().part_path("1-abc").unwrap();
        std::fs::write(&part, "half an upload").unwrap();
        let (stop, stopped) = watch::channel(false);
        let task = tokio::spawn(run(st, Policy::default(), stopped));
        for _ in 0..50 {
            if !part.exists() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        assert!(!part.exists());
        stop.send(true).unwrap();
        task.await.unwrap();
    }

    #[tokio::test]
    async fn a_job_for_a_user_that_is_gone_fails_saying_so() {
        let dir = tempfile::tempdir().unwrap();
        let st = state(dir.path());
        let spool = st.import_spool().unwrap().clone();
        let job = Job::new("zed", Source::File { name: "log".into() }, 1);
        let done = run_job(st, Policy::default(), spool, job, watch::channel(false).1).await;
        assert_eq!(done.state, JobState::Failed);
        assert_eq!(
            done.error.as_deref(),
            Some("no user named 'zed' (spindle user add zed)")
        );
    }
}
