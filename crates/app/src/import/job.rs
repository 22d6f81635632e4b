//! One import job as its file `DATA_DIR/imports/ID.json` holds it: what
//! to import (an export file, or a live pull from a remote API), for
//! which user, and how far it got. The file is rewritten whole (a
//! temporary file renamed over it) after every step, so a reader — the
//! CLI printing progress, the admin page — always sees a complete job,
//! and a restarted server resumes a job from its last saved step.

use serde::{Deserialize, Serialize};

/// The words that mark the note on listens outside the time window.
pub(crate) const WINDOW_NOTE_MARK: &str = "listens outside the accepted time window";

/// Where a job stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum JobState {
    /// Handed in, not picked up yet.
    Queued,
    /// Being imported (or stopped by a shutdown, to resume at the next
    /// start).
    Running,
    Done,
    Failed,
}

impl std::fmt::Display for JobState {
    /// `queued`, `running`, `done` or `failed`, as the job file spells it.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            JobState::Queued => "queued",
            JobState::Running => "running",
            JobState::Done => "done",
            JobState::Failed => "failed",
        })
    }
}

/// How many of the listens an import read it added: what the CLI prints
/// at the end, `1500 of 2000 listens added (499 already there, 1
/// outside the time window)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tally {
    pub added: u64,
    pub total: u64,
    /// Not added: there already (or refused, with an empty name).
    pub already: u64,
    /// Not added: outside the server's time window.
    pub outside_window: u64,
}

impl std::fmt::Display for Tally {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} of {} listens added ({})",
            self.added,
            self.total,
            not_added(self.already, self.outside_window)
        )
    }
}

/// `499 already there`, and `, 1 outside the time window` when any were.
fn not_added(already: u64, outside_window: u64) -> String {
    if outside_window == 0 {
        format!("{already} already there")
    } else {
        format!("{already} already there, {outside_window} outside the time window")
    }
}

impl JobState {
    /// Done or failed: nothing more will happen to it.
    pub fn finished(self) -> bool {
        matches!(self, JobState::Done | JobState::Failed)
    }
}

/// The kinds of remote API a pull reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Api {
    /// A Last.fm-compatible `user.getRecentTracks` (Last.fm, Libre.fm,
    /// another Spindle's `/2.0/`).
    Lastfm,
    /// A ListenBrainz-compatible `/1/user/NAME/listens`.
    Listenbrainz,
}

impl Api {
    pub fn name(self) -> &'static str {
        match self {
            Api::Lastfm => "lastfm",
            Api::Listenbrainz => "listenbrainz",
        }
    }
}

/// A live pull of a remote user's history, newest first.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Pull {
    pub api: Api,
    /// The API's URL: the Last.fm endpoint (`https://ws.audioscrobbler.com/2.0/`)
    /// or the ListenBrainz root (`https://api.listenbrainz.org`).
    pub url: String,
    /// The user whose history is read there.
    pub remote_user: String,
    /// The Last.fm API key, or the ListenBrainz token (optional there).
    /// Never shown by the admin page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
    /// The oldest listen time fetched so far: the next page is read from
    /// here back. `None` before the first page.
    #[serde(default)]
    pub cursor: Option<i64>,
    /// Pages fetched so far.
    #[serde(default)]
    pub pages: u64,
}

/// What a job imports.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum Source {
    /// An export file, kept beside the job as `ID.data` until it is done;
    /// `name` is the name it was handed in under.
    File {
        name: String,
    },
    Pull(Pull),
}

/// A job and its progress (the content of `imports/ID.json`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Job {
    pub id: String,
    /// The Spindle user the listens go to.
    pub user: String,
    pub source: Source,
    pub state: JobState,
    /// The export's format (`rockbox`, `spotify`, …), once read.
    #[serde(default)]
    pub format: Option<String>,
    /// Listens read so far (the export's whole count once it is parsed;
    /// for a pull, the rows fetched).
    #[serde(default)]
    pub total: u64,
    /// Listens added to the history.
    #[serde(default)]
    pub added: u64,
    /// Listens not added: there already (or refused, with an empty name).
    #[serde(default)]
    pub duplicates: u64,
    /// Listens of an export handled so far (a resumed job skips them).
    #[serde(default)]
    pub done: u64,
    /// Listens skipped for being outside the server's time window (not
    /// counted in `duplicates`; a note says why).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub outside_window: u64,
    /// What the reader assumed or left out (a Rockbox log in local time).
    #[serde(default)]
    pub notes: Vec<String>,
    /// Why it failed.
    #[serde(default)]
    pub error: Option<String>,
    /// When it was handed in and last saved, UNIX seconds.
    pub created: i64,
    pub updated: i64,
}

impl Job {
    /// A queued job with a fresh id.
    pub fn new(user: &str, source: Source, now: i64) -> Job {
        let rnd: String = crate::accounts::random_hex().chars().take(8).collect();
        Job {
            id: format!("{now}-{rnd}"),
            user: user.to_owned(),
            source,
            state: JobState::Queued,
            format: None,
            total: 0,
            added: 0,
            duplicates: 0,
            done: 0,
            outside_window: 0,
            notes: Vec::new(),
            error: None,
            created: now,
            updated: now,
        }
    }

    /// The job without its secret (a pull's API key or token), for the
    /// admin page.
    pub fn public(&self) -> Job {
        let mut j = self.clone();
        if let Source::Pull(p) = &mut j.source {
            p.key = None;
        }
        j
    }

    /// Sets the note on the listens outside the time window, `note`,
    /// replacing the one before (it starts with the same words after the
    /// count).
    pub fn set_window_note(&mut self, note: String) {
        self.notes.retain(|n| !n.contains(WINDOW_NOTE_MARK));
        self.notes.push(note);
    }

    /// What it added of what it read, so far.
    pub fn tally(&self) -> Tally {
        Tally {
            added: self.added,
            total: self.total,
            already: self.duplicates,
            outside_window: self.outside_window,
        }
    }

    /// One line on its progress: `running: 2000 of 9000 listens (1500
    /// added, 500 already there)`.
    pub fn progress_line(&self) -> String {
        let state = self.state;
        let rest = not_added(self.duplicates, self.outside_window);
        let mut s = match &self.source {
            Source::Pull(p) => format!(
                "{state}: {} pages, {} listens fetched ({} added, {rest})",
                p.pages, self.total, self.added
            ),
            Source::File { .. } => format!(
                "{state}: {} of {} listens ({} added, {rest})",
                self.done, self.total, self.added
            ),
        };
        if let Some(e) = &self.error {
            s.push_str(": ");
            s.push_str(e);
        }
        s
    }
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// Whether `id` can name a job's files: letters, digits and `-`, as
/// [`Job::new`] makes them.
pub fn valid_id(id: &str) -> bool {
    !id.is_empty() && id.len() <= 64 && id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pull_job_round_trips_and_its_public_form_has_no_key() {
        let j = Job::new(
            "ann",
            Source::Pull(Pull {
                api: Api::Lastfm,
                url: "http://x/2.0/".into(),
                remote_user: "bob".into(),
                key: Some("k3y".into()),
                cursor: Some(5),
                pages: 2,
            }),
            1_700_000_000,
        );
        assert!(valid_id(&j.id), "{}", j.id);
        let text = serde_json::to_string(&j).unwrap();
        assert!(text.contains(r#""kind":"pull""#), "{text}");
        assert_eq!(serde_json::from_str::<Job>(&text).unwrap(), j);
        assert!(!serde_json::to_string(&j.public()).unwrap().contains("k3y"));
    }

    #[test]
    fn ids_that_could_leave_the_folder_are_not_valid() {
        for bad in ["", "../x", "a/b", "a.json", &"a".repeat(65)] {
            assert!(!valid_id(bad), "{bad}");
        }
    }

    #[test]
    fn progress_and_tally_lines_read_as_the_cli_prints_them() {
        let mut j = Job::new(
            "ann",
            Source::File {
                name: "x.json".into(),
            },
            1,
        );
        (j.state, j.done, j.total, j.added, j.duplicates) = (JobState::Running, 20, 90, 15, 5);
        assert_eq!(
            j.progress_line(),
            "running: 20 of 90 listens (15 added, 5 already there)"
        );
        assert_eq!(
            j.tally().to_string(),
            "15 of 90 listens added (5 already there)"
        );
        j.outside_window = 2;
        assert_eq!(
            j.tally().to_string(),
            "15 of 90 listens added (5 already there, 2 outside the time window)"
        );
        j.outside_window = 0;
        j.state = JobState::Failed;
        j.error = Some("disk full".into());
        assert_eq!(
            j.progress_line(),
            "failed: 20 of 90 listens (15 added, 5 already there): disk full"
        );
    }
}
