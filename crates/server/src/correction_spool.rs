//! Corrections handed to a running server: `spindle listens
//! edit|delete|merge|undo` while `spindle serve` holds the library write
//! a request into `DATA_DIR/corrections/incoming/`, the server's task
//! ([`run`]) makes it ([`crate::App::correct_history`], as the web UI's
//! routes do, so the library's play counts and the hot tier follow) and
//! writes the answer beside it; the command waits for the answer, prints
//! it and removes it. The shape is the import spool's
//! ([`crate::import::spool`]):
//!
//! | path under `DATA_DIR/corrections/` | what |
//! |---|---|
//! | `incoming/ID.json` | a request handed in (written under a `.` name and renamed into place) |
//! | `ID.json` | the request with its answer: the correction's id and how many listens changed, or why it was refused |
//!
//! A request is answered once: the answer is written before the request
//! is removed from `incoming/`. If the server stops in between, the next
//! start makes it again, and the history refuses it then as changing
//! nothing. The folders are mode 0700 and the files 0600.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tokio::sync::watch;

use crate::corrections::{Action, DeleteArgs, EditArgs, MergeArgs};
use crate::import::job::valid_id;
use crate::import::spool::{json_ids, make_dir, write_json};
use crate::AppState;

/// The spool's folder under the data dir.
pub const CORRECTIONS_DIR: &str = "corrections";

/// How often `incoming/` is looked at: 1 s, as the import spool.
pub const POLL: Duration = Duration::from_secs(1);

/// What a command asks for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum Requested {
    Edit(EditArgs),
    Delete(DeleteArgs),
    Merge(MergeArgs),
    Undo { id: u64 },
}

impl From<Requested> for Action {
    fn from(r: Requested) -> Action {
        match r {
            Requested::Edit(a) => Action::Correct(a.into()),
            Requested::Delete(a) => Action::Correct(a.into()),
            Requested::Merge(a) => Action::Correct(a.into()),
            Requested::Undo { id } => Action::Undo(id),
        }
    }
}

/// How a request ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "lowercase")]
pub enum Answer {
    /// Made: the correction's id and how many listens it changed.
    Done { correction: u64, changed: usize },
    /// Refused (nothing was written), or it failed.
    Failed { error: String },
}

/// A request and, once the server made it, its answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Request {
    pub id: String,
    pub user: String,
    pub what: Requested,
    /// When it was handed in, UNIX seconds.
    pub created: i64,
    #[serde(default)]
    pub answer: Option<Answer>,
}

impl Request {
    /// A request with a fresh id.
    pub fn new(user: &str, what: Requested, now: i64) -> Request {
        let rnd: String = crate::accounts::random_hex().chars().take(8).collect();
        Request {
            id: format!("{now}-{rnd}"),
            user: user.to_owned(),
            what,
            created: now,
            answer: None,
        }
    }
}

/// The corrections spool of one data dir. Cheap to clone.
#[derive(Debug, Clone)]
pub struct CorrectionSpool {
    root: PathBuf,
}

impl CorrectionSpool {
    /// The spool of `data_dir` (nothing is created yet).
    pub fn new(data_dir: &Path) -> CorrectionSpool {
        CorrectionSpool {
            root: data_dir.join(CORRECTIONS_DIR),
        }
    }

    /// `DATA_DIR/corrections/incoming`.
    pub fn incoming(&self) -> PathBuf {
        self.root.join("incoming")
    }

    /// Hands `req` in.
    pub fn hand_in(&self, req: &Request) -> std::io::Result<()> {
        let dir = self.incoming();
        make_dir(&dir)?;
        write_json(&dir, &format!("{}.json", req.id), req)
    }

    /// The answered request `id`; `None` while it has no answer.
    pub fn answered(&self, id: &str) -> std::io::Result<Option<Request>> {
        if !valid_id(id) {
            return Ok(None);
        }
        match std::fs::read(self.root.join(format!("{id}.json"))) {
            Ok(b) => serde_json::from_slice(&b)
                .map(Some)
                .map_err(std::io::Error::other),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Removes the answer to `id` once the command has read it.
    pub fn remove(&self, id: &str) -> std::io::Result<()> {
        if valid_id(id) {
            std::fs::remove_file(self.root.join(format!("{id}.json")))?;
        }
        Ok(())
    }

    /// Makes every request handed in, oldest first, on `state`; returns
    /// how many. A request that does not parse is renamed `ID.json.bad`.
    pub fn answer_incoming(&self, state: &AppState) -> std::io::Result<usize> {
        let dir = self.incoming();
        let mut n = 0;
        for id in json_ids(&dir)? {
            let path = dir.join(format!("{id}.json"));
            let parsed = std::fs::read(&path)
                .and_then(|b| serde_json::from_slice::<Request>(&b).map_err(std::io::Error::other));
            let mut req = match parsed {
                Ok(r) => r,
                Err(e) => {
                    tracing::warn!("correction request {}: {e}; renamed .bad", path.display());
                    std::fs::rename(&path, path.with_extension("json.bad"))?;
                    continue;
                }
            };
            req.id = id;
            let answer = if state.accounts.user_exists(&req.user) {
                match state.correct_history(&req.user, req.what.clone().into()) {
                    Ok(done) => Answer::Done {
                        correction: done.id,
                        changed: done.changed(),
                    },
                    Err(e) => Answer::Failed {
                        error: e.to_string(),
                    },
                }
            } else {
                Answer::Failed {
                    error: format!("no user named '{}'", req.user),
                }
            };
            tracing::info!(request = %req.id, "correction for {}: {answer:?}", req.user);
            req.answer = Some(answer);
            make_dir(&self.root)?;
            write_json(&self.root, &format!("{}.json", req.id), &req)?;
            std::fs::remove_file(&path)?;
            n += 1;
        }
        if n > 0 {
            state.flush_library_links();
        }
        Ok(n)
    }
}

/// The server's task: answers the requests handed in every [`POLL`],
/// until `stop` turns true (or its sender is dropped).
pub async fn run(state: AppState, spool: CorrectionSpool, mut stop: watch::Receiver<bool>) {
    let mut tick = tokio::time::interval(POLL);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        if *stop.borrow() {
            break;
        }
        tokio::select! {
            changed = stop.changed() => if changed.is_err() { break },
            _ = tick.tick() => {
                let (st, sp) = (state.clone(), spool.clone());
                match spindle_app::offload::run(move || sp.answer_incoming(&st)).await {
                    Ok(Ok(_)) => {}
                    Ok(Err(e)) => tracing::warn!("answering correction requests: {e}"),
                    Err(e) => tracing::warn!("answering correction requests: {e}"),
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use spindle_listens::Listen;

    #[test]
    fn a_request_handed_in_is_made_once_and_answered() {
        let dir = tempfile::tempdir().unwrap();
        let st = AppState::in_dir(dir.path(), 1_750_000_000);
        st.accounts.add_user_cheaply("ann", "secret-password");
        st.listens
            .submit(&[
                Listen::new("ann", 1_700_000_000, "Daft Punk", "One More Time"),
                Listen::new("ann", 1_700_000_500, "Daft Punk", "Aerodynamic"),
            ])
            .unwrap();
        let spool = CorrectionSpool::new(dir.path());
        let merge = Request::new(
            "ann",
            Requested::Merge(MergeArgs {
                from: "Daft Punk".into(),
                to: "Daft Punk & Co".into(),
            }),
            1,
        );
        spool.hand_in(&merge).unwrap();
        assert_eq!(spool.answered(&merge.id).unwrap(), None);
        assert_eq!(spool.answer_incoming(&st).unwrap(), 1);
        let got = spool.answered(&merge.id).unwrap().unwrap();
        let Some(Answer::Done {
            correction,
            changed,
        }) = got.answer
        else {
            panic!("{got:?}");
        };
        assert_eq!(changed, 2);
        assert_eq!(st.listens.corrections("ann").len(), 1);
        // Answered once: nothing is left to make.
        assert_eq!(spool.answer_incoming(&st).unwrap(), 0);
        spool.remove(&merge.id).unwrap();
        // An undo of it, and one of an id that is no correction.
        let undo = Request::new("ann", Requested::Undo { id: correction }, 2);
        let bad = Request::new("ann", Requested::Undo { id: 12345 }, 3);
        spool.hand_in(&undo).unwrap();
        spool.hand_in(&bad).unwrap();
        assert_eq!(spool.answer_incoming(&st).unwrap(), 2);
        assert!(matches!(
            spool.answered(&undo.id).unwrap().unwrap().answer,
            Some(Answer::Done { .. })
        ));
        assert!(matches!(
            spool.answered(&bad.id).unwrap().unwrap().answer,
            Some(Answer::Failed { .. })
        ));
        st.stop_background();
    }
}
