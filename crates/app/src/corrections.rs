//! Corrections of a user's listening history as the core makes them
//! (docs/scrobble-hub.md, "Corrections"): the history appends and
//! applies the correction ([`spindle_listens::Listens::correct`]), then
//! what it changed moves the library's `timesplayed` (the linker), the
//! user's plays and the hot tier's popularity (the tiers' feed), so all
//! follow the corrected counts. The web UI's history routes and the
//! command line's corrections (through a running server's correction
//! spool, or on a stopped server's data dir) make them here.

use std::time::Duration;

use spindle_listens::{Corrected, Correction, CorrectionError, Options};

use crate::{App, CoreConfig};

impl CoreConfig {
    /// How the listening history is opened under these settings.
    pub fn listens_options(&self) -> Options {
        Options {
            dedupe_window: Duration::from_secs(self.dedupe_window),
        }
    }
}

/// A change to a user's history.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// An edit, a delete or a merge.
    Correct(Correction),
    /// Take back the correction with this id.
    Undo(u64),
}

impl App {
    /// Makes `action` on `user`'s history, then moves the library's play
    /// counts and the hot tier's popularity by what it changed (queued:
    /// [`App::flush_library_links`] waits for them). Blocks on the
    /// log's fsync: call from a blocking thread.
    pub fn correct_history(
        &self,
        user: &str,
        action: Action,
    ) -> Result<Corrected, CorrectionError> {
        let now = self.now();
        let done = match action {
            Action::Correct(what) => self.listens.correct(user, what, now)?,
            Action::Undo(id) => self.listens.undo(user, id, now)?,
        };
        self.linker.send_corrected(&done);
        self.plays
            .rebuild_user(&self.listens, &self.db.read(), user);
        if let Some(feed) = &self.feed {
            feed.send_corrected(&done, now);
        }
        Ok(done)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::accounts::Accounts;
    use spindle_listens::{Changes, Listen, Listens, Target};
    use spindle_query::{SourcePref, Value};
    use spindle_store::{Db, Op};

    /// A library entry with an artist and a title; its id.
    fn song(db: &Db, artist: &str, title: &str) -> u32 {
        let id = db.reserve_id();
        let mut ops = vec![Op::CreateEntry(id)];
        for (key, value) in [("artist", artist), ("title", title)] {
            ops.push(Op::AddProp {
                entry: id,
                key: key.into(),
                source: "plugin/test".into(),
                value: Value::Str(value.into()),
            });
        }
        db.commit(ops).unwrap();
        id
    }

    fn plays(st: &App, id: u32) -> i64 {
        st.flush_library_links();
        st.db
            .read()
            .get(id, "timesplayed", &SourcePref::default())
            .into_iter()
            .filter_map(|v| v.to_value().as_int())
            .max()
            .unwrap_or(0)
    }

    #[test]
    fn the_library_play_counts_follow_an_edit_a_delete_and_their_undo() {
        let dir = tempfile::tempdir().unwrap();
        let db = Db::open(dir.path()).unwrap();
        let (x, y) = (song(&db, "Abba", "SOS"), song(&db, "Cher", "Believe"));
        let (listens, _) = Listens::open(&dir.path().join("listens")).unwrap();
        let accounts = Accounts::open(&dir.path().join("accounts")).unwrap();
        let st = App::new(
            Arc::new(db),
            Arc::new(accounts),
            Arc::new(listens),
            CoreConfig::default(),
            Arc::new(crate::clock::ManualClock::new(1_750_000_000)),
        )
        .started();
        let ls: Vec<Listen> = (0..3)
            .map(|i| Listen::new("ann", 1_749_000_000 + i * 1000, "Abba", "SOS"))
            .collect();
        let fresh = st.listens.submit(&ls).unwrap();
        assert_eq!(fresh.len(), 3);
        st.linker.send(ls);
        assert_eq!((plays(&st, x), plays(&st, y)), (3, 0));
        let edit = Action::Correct(Correction::Edit {
            target: Target::Listen {
                timestamp: 1_749_000_000,
                artist: "abba".into(),
                title: "sos".into(),
            },
            changes: Changes {
                artist: Some("Cher".into()),
                title: Some("Believe".into()),
                ..Changes::default()
            },
        });
        let edit = st.correct_history("ann", edit).unwrap();
        assert_eq!((plays(&st, x), plays(&st, y)), (2, 1));
        let del = Action::Correct(Correction::Delete {
            timestamp: 1_749_001_000,
            artist: "Abba".into(),
            title: "SOS".into(),
        });
        let del = st.correct_history("ann", del).unwrap();
        assert_eq!((plays(&st, x), plays(&st, y)), (1, 1));
        st.correct_history("ann", Action::Undo(edit.id)).unwrap();
        assert_eq!((plays(&st, x), plays(&st, y)), (2, 0));
        st.correct_history("ann", Action::Undo(del.id)).unwrap();
        assert_eq!((plays(&st, x), plays(&st, y)), (3, 0));
        st.stop_background();
    }
}
