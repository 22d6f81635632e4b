//! Correcting the history through [`Listens`]: each correction is checked
//! (limits, and that it names something there), appended to the log as a
//! record of its own, and applied to the indexes; what it changed comes
//! back as [`Corrected`] for the server to move play counts by.

use std::sync::{Mutex, MutexGuard};

use crate::batch::{DedupeHasher, Key};
use crate::correction::{Changes, Corrected, Correction, CorrectionInfo, Target};
use crate::error::{AppendError, CorrectionError};
use crate::model::{encode_fix, encode_unfix, Listen};
use crate::normalise::normalise;
use crate::store::{Listens, Tally};

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// The dedupe key of a listen's identity as it stands (after an edit, so
/// the corrected listen sent again is a duplicate too).
pub(crate) fn key_of(h: &DedupeHasher, l: &Listen) -> Key {
    h.key_of(
        &l.user,
        l.timestamp,
        &normalise(&l.artist),
        &normalise(&l.title),
    )
}

impl Listens {
    /// Appends and applies any correction of `user`'s history, made at
    /// `when` (UNIX seconds). Refused before anything is written when a
    /// name is over its limit ([`crate::limits`]), when it names no
    /// listen, track or artist of the user, or when it would change
    /// nothing.
    pub fn correct(
        &self,
        user: &str,
        what: Correction,
        when: i64,
    ) -> Result<Corrected, CorrectionError> {
        what.check_limits(user).map_err(AppendError::from)?;
        let _change = self.changing();
        self.index().check(user, &what)?;
        self.log.upgrade(crate::log::VERSION_CORRECTIONS)?;
        let mut record = Vec::new();
        encode_fix(user, when, &what, &mut record);
        let id = self.log.append_at(&record)?;
        let mut delta = Corrected {
            id,
            ..Corrected::default()
        };
        self.in_turn(id, record.len(), || {
            self.index().correct(user, id, when, what, Some(&mut delta));
            Tally::add(&self.tally.corrections, 1);
        });
        let mut seen = lock(&self.seen);
        for l in &delta.added {
            seen.add(&key_of(&self.hasher, l));
        }
        Ok(delta)
    }

    /// Gives one listen or every listen of a track new names.
    pub fn edit(
        &self,
        user: &str,
        target: Target,
        changes: Changes,
        when: i64,
    ) -> Result<Corrected, CorrectionError> {
        self.correct(user, Correction::Edit { target, changes }, when)
    }

    /// Deletes one listen: the one of `user` that started at `timestamp`
    /// with these names (as they show now).
    pub fn delete(
        &self,
        user: &str,
        timestamp: i64,
        artist: &str,
        title: &str,
        when: i64,
    ) -> Result<Corrected, CorrectionError> {
        let what = Correction::Delete {
            timestamp,
            artist: artist.into(),
            title: title.into(),
        };
        self.correct(user, what, when)
    }

    /// Makes artist name `from` count as `to` for `user`, in the listens
    /// so far and those to come.
    pub fn merge_artist(
        &self,
        user: &str,
        from: &str,
        to: &str,
        when: i64,
    ) -> Result<Corrected, CorrectionError> {
        let what = Correction::MergeArtist {
            from: from.into(),
            to: to.into(),
        };
        self.correct(user, what, when)
    }

    /// Takes back `user`'s correction `id`: the user's indexes are
    /// rebuilt from their listens and the corrections still in force.
    pub fn undo(&self, user: &str, id: u64, when: i64) -> Result<Corrected, CorrectionError> {
        crate::limits::check_love_limits(user, "", "").map_err(AppendError::from)?;
        let _change = self.changing();
        self.index().check_undo(user, id)?;
        self.log.upgrade(crate::log::VERSION_CORRECTIONS)?;
        let mut record = Vec::new();
        encode_unfix(user, when, id, &mut record);
        let at = self.log.append_at(&record)?;
        let mut delta = Corrected {
            id,
            ..Corrected::default()
        };
        self.in_turn(at, record.len(), || {
            self.index().undo(user, id, false, Some(&mut delta));
            Tally::add(&self.tally.corrections, 1);
        });
        let mut seen = lock(&self.seen);
        for l in &delta.added {
            seen.add(&key_of(&self.hasher, l));
        }
        Ok(delta)
    }

    /// `user`'s corrections, oldest first, undone ones included.
    pub fn corrections(&self, user: &str) -> Vec<CorrectionInfo> {
        self.index().corrections(user)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{ChartKind, Options, RecentQuery, Submitted};
    use std::time::Duration;

    fn l(ts: i64, artist: &str, title: &str, album: &str) -> Listen {
        let mut l = Listen::new("u", ts, artist, title);
        l.album = album.into();
        l
    }

    fn open(dir: &std::path::Path) -> Listens {
        Listens::open(dir).unwrap().0
    }

    fn artists(s: &Listens) -> Vec<(String, u32)> {
        s.top("u", ChartKind::Artists, None, 100, 1)
            .rows
            .into_iter()
            .map(|r| (r.name, r.playcount))
            .collect()
    }

    fn tracks(s: &Listens) -> Vec<(String, String, u32)> {
        let mut v: Vec<_> = s
            .top("u", ChartKind::Tracks, None, 100, 1)
            .rows
            .into_iter()
            .map(|r| (r.artist, r.name, r.playcount))
            .collect();
        v.sort();
        v
    }

    fn recent(s: &Listens) -> Vec<(i64, String, String, String)> {
        let q = RecentQuery {
            limit: 100,
            page: 1,
            ..RecentQuery::default()
        };
        s.recent("u", &q)
            .listens
            .into_iter()
            .map(|l| (l.timestamp, l.artist, l.title, l.album))
            .collect()
    }

    fn history() -> Vec<Listen> {
        vec![
            l(1000, "Beatles", "Help", "Help!"),
            l(2000, "Beatles", "Yesterday", "Help!"),
            l(3000, "The Beatles", "Help", "Help!"),
            l(4000, "Abba", "SOS", ""),
        ]
    }

    fn s(x: &str) -> String {
        x.to_owned()
    }

    #[test]
    fn an_edit_of_one_listen_moves_it_between_charts_and_survives_a_restart() {
        let dir = tempfile::tempdir().unwrap();
        let st = open(dir.path());
        st.submit(&history()).unwrap();
        let changes = Changes {
            artist: Some("The Beatles".into()),
            album: Some("".into()),
            ..Changes::default()
        };
        let target = Target::Listen {
            timestamp: 2000,
            artist: "beatles".into(),
            title: "YESTERDAY".into(),
        };
        let d = st.edit("u", target, changes, 5).unwrap();
        assert_eq!(d.removed.len(), 1);
        assert_eq!(d.added[0].artist, "The Beatles");
        assert_eq!(d.added[0].album, "");
        let want = vec![(s("Beatles"), 1), (s("The Beatles"), 2), (s("Abba"), 1)];
        let mut got = artists(&st);
        got.sort();
        let mut w = want.clone();
        w.sort();
        assert_eq!(got, w);
        assert_eq!(
            recent(&st)[2],
            (2000, s("The Beatles"), s("Yesterday"), s(""))
        );
        assert_eq!(st.per_day("u", None).iter().map(|d| d.1).sum::<u32>(), 4);
        drop(st);
        let (st, rep) = Listens::open(dir.path()).unwrap();
        assert_eq!(rep.corrections, 1);
        let mut got = artists(&st);
        got.sort();
        assert_eq!(got, w);
        // The edited listen sent again under its new name is a duplicate.
        let again = st
            .submit(&[l(2000, "the beatles", "yesterday", "")])
            .unwrap();
        assert_eq!(again, vec![Submitted::Duplicate]);
    }

    #[test]
    fn a_track_edit_changes_every_listen_of_it_and_those_recorded_later() {
        let dir = tempfile::tempdir().unwrap();
        let st = open(dir.path());
        st.submit(&history()).unwrap();
        let target = Target::Track {
            artist: "the beatles".into(),
            title: "help".into(),
        };
        let changes = Changes {
            title: Some("Help!".into()),
            ..Changes::default()
        };
        let d = st.edit("u", target, changes, 5).unwrap();
        assert_eq!(d.added.len(), 1, "only the listen of that artist");
        st.submit(&[l(9000, "The Beatles", "Help", "")]).unwrap();
        let t = tracks(&st);
        assert!(t.contains(&(s("The Beatles"), s("Help!"), 2)), "{t:?}");
        assert!(t.contains(&(s("Beatles"), s("Help"), 1)), "{t:?}");
        drop(st);
        let st = open(dir.path());
        assert_eq!(tracks(&st), t);
    }

    #[test]
    fn a_delete_takes_one_listen_out_of_every_count() {
        let dir = tempfile::tempdir().unwrap();
        let st = open(dir.path());
        st.submit(&history()).unwrap();
        st.delete("u", 4000, "ABBA", "sos", 5).unwrap();
        assert_eq!(st.summary("u").playcount, 3);
        assert_eq!(st.summary("u").artist_count, 2);
        assert!(artists(&st).iter().all(|(a, _)| a != "Abba"));
        assert_eq!(recent(&st).len(), 3);
        // A second delete of it names nothing: refused, nothing written.
        let e = st.delete("u", 4000, "Abba", "SOS", 6).unwrap_err();
        assert!(e.is_not_found(), "{e}");
        drop(st);
        let (st, rep) = Listens::open(dir.path()).unwrap();
        assert_eq!(rep.corrections, 1);
        assert_eq!(st.summary("u").playcount, 3);
    }

    #[test]
    fn a_merge_counts_one_artist_as_another_now_and_later() {
        let dir = tempfile::tempdir().unwrap();
        let st = open(dir.path());
        st.submit(&history()).unwrap();
        st.merge_artist("u", "beatles", "The Beatles", 5).unwrap();
        st.submit(&[l(9000, "Beatles", "Let It Be", "")]).unwrap();
        let a = artists(&st);
        assert_eq!(a[0], (s("The Beatles"), 4));
        assert_eq!(a.len(), 2);
        drop(st);
        let st = open(dir.path());
        assert_eq!(artists(&st), a);
        let e = st.merge_artist("u", "Nobody", "X", 6).unwrap_err();
        assert!(e.is_not_found(), "{e}");
        let e = st.merge_artist("u", "abba", "ABBA", 6).unwrap_err();
        assert!(matches!(e, CorrectionError::Invalid { .. }), "{e}");
    }

    #[test]
    fn undo_restores_the_history_and_later_corrections_stay() {
        let dir = tempfile::tempdir().unwrap();
        let st = open(dir.path());
        st.submit(&history()).unwrap();
        let before_a = artists(&st);
        let before_r = recent(&st);
        let merge = st.merge_artist("u", "Beatles", "The Beatles", 5).unwrap();
        let del = st.delete("u", 4000, "Abba", "SOS", 6).unwrap();
        st.submit(&[l(9000, "Beatles", "Let It Be", "")]).unwrap();
        let d = st.undo("u", merge.id, 7).unwrap();
        // The three listens of "Beatles" count as "Beatles" again.
        assert_eq!(d.removed.len(), 3);
        assert!(d.added.iter().all(|l| l.artist == "Beatles"));
        let a = artists(&st);
        assert!(a.contains(&(s("Beatles"), 3)), "{a:?}");
        assert!(!a.iter().any(|(n, _)| n == "Abba"), "the delete stays");
        let info = st.corrections("u");
        assert_eq!(info.len(), 2);
        assert!(info[0].undone && !info[1].undone);
        assert_eq!(info[1].id, del.id);
        assert!(matches!(
            st.undo("u", merge.id, 8),
            Err(CorrectionError::AlreadyUndone { .. })
        ));
        assert!(st.undo("u", 3, 8).unwrap_err().is_not_found());
        drop(st);
        let st = open(dir.path());
        assert_eq!(artists(&st), a);
        st.undo("u", del.id, 9).unwrap();
        assert_eq!(st.summary("u").playcount, 5);
        let r = recent(&st);
        assert_eq!(r[1..], before_r[..]);
        assert!(before_a.contains(&(s("Abba"), 1)));
        drop(st);
        let st = open(dir.path());
        assert_eq!(recent(&st)[1..], before_r[..]);
    }

    /// Everything a user sees of their history.
    fn snapshot(st: &Listens) -> String {
        let q = RecentQuery {
            limit: 10_000,
            page: 1,
            ..RecentQuery::default()
        };
        // Rows as a set: ties of one name (two artists' "Arrival") rank
        // in no set order.
        let charts: Vec<_> = [ChartKind::Artists, ChartKind::Albums, ChartKind::Tracks]
            .into_iter()
            .map(|k| {
                let mut rows: Vec<_> = st
                    .top("u", k, None, 1000, 1)
                    .rows
                    .into_iter()
                    .map(|r| (r.name, r.artist, r.playcount))
                    .collect();
                rows.sort();
                rows
            })
            .collect();
        format!(
            "{:?}\n{:?}\n{:?}\n{:?}\n{:?}",
            st.recent("u", &q),
            charts,
            st.per_day("u", None),
            st.summary("u"),
            st.corrections("u"),
        )
    }

    /// Random listens and corrections (undos too): the history reopened
    /// from the log equals the one built live, step by step.
    #[test]
    fn replay_after_reopen_equals_the_live_history_under_random_corrections() {
        let seed = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos() as u64;
        let mut x = seed | 1;
        let mut next = move |n: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % n
        };
        let names = ["Abba", "abba ", "Beatles", "The Beatles", "Cher"];
        let titles = ["SOS", "Help", "Believe"];
        let dir = tempfile::tempdir().unwrap();
        let mut st = open(dir.path());
        let mut ts = 1_700_000_000;
        for step in 0..120 {
            let pick = |n: &mut dyn FnMut(u64) -> u64, v: &[&str]| {
                v[n(v.len() as u64) as usize].to_owned()
            };
            let all = st.recent(
                "u",
                &RecentQuery {
                    limit: 10_000,
                    page: 1,
                    ..RecentQuery::default()
                },
            );
            let some = (!all.listens.is_empty())
                .then(|| all.listens[next(all.listens.len() as u64) as usize].clone());
            match next(9) {
                0..=3 => {
                    ts += next(50_000) as i64;
                    let mut listen = l(ts, &pick(&mut next, &names), &pick(&mut next, &titles), "");
                    if next(2) == 0 {
                        listen.album = pick(&mut next, &["Arrival", "Help!"]);
                    }
                    if next(3) == 0 {
                        // Credited to several (merges reach them too).
                        let also = pick(&mut next, &names);
                        listen.credit([listen.artist.clone(), also]);
                    }
                    st.submit(&[listen]).unwrap();
                }
                4 => {
                    if let Some(v) = some {
                        st.delete("u", v.timestamp, &v.artist, &v.title, step)
                            .unwrap();
                    }
                }
                5 | 6 => {
                    if let Some(v) = some {
                        let target = if next(2) == 0 {
                            Target::Listen {
                                timestamp: v.timestamp,
                                artist: v.artist.clone(),
                                title: v.title.clone(),
                            }
                        } else {
                            Target::Track {
                                artist: v.artist.clone(),
                                title: v.title.clone(),
                            }
                        };
                        let changes = Changes {
                            artist: (next(2) == 0).then(|| pick(&mut next, &names)),
                            title: Some(pick(&mut next, &titles)),
                            album: (next(3) == 0).then(|| pick(&mut next, &["", "Arrival"])),
                        };
                        let _ = st.edit("u", target, changes, step);
                    }
                }
                7 => {
                    let _ = st.merge_artist(
                        "u",
                        &pick(&mut next, &names),
                        &pick(&mut next, &names),
                        step,
                    );
                }
                _ => {
                    let open: Vec<u64> = st
                        .corrections("u")
                        .iter()
                        .filter(|c| !c.undone)
                        .map(|c| c.id)
                        .collect();
                    if !open.is_empty() {
                        let id = open[next(open.len() as u64) as usize];
                        st.undo("u", id, step).unwrap();
                    }
                }
            }
            if step % 10 == 9 {
                let live = snapshot(&st);
                drop(st);
                st = open(dir.path());
                assert_eq!(snapshot(&st), live, "seed {seed}, step {step}");
            }
        }
    }

    #[test]
    fn corrections_are_refused_over_the_limits_or_when_they_change_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let st = open(dir.path());
        st.submit(&history()).unwrap();
        let len = std::fs::metadata(dir.path().join(crate::LOG_FILE))
            .unwrap()
            .len();
        let big = "x".repeat(crate::limits::MAX_ARTIST + 1);
        let e = st.merge_artist("u", "Abba", &big, 5).unwrap_err();
        assert!(
            matches!(e, CorrectionError::Append(AppendError::TooLarge { .. })),
            "{e}"
        );
        let target = Target::Track {
            artist: "Abba".into(),
            title: "SOS".into(),
        };
        let e = st
            .edit("u", target.clone(), Changes::default(), 5)
            .unwrap_err();
        assert!(matches!(e, CorrectionError::Invalid { .. }), "{e}");
        let blank = Changes {
            title: Some(" ".into()),
            ..Changes::default()
        };
        assert!(st.edit("u", target, blank, 5).is_err());
        let len2 = std::fs::metadata(dir.path().join(crate::LOG_FILE))
            .unwrap()
            .len();
        assert_eq!(len, len2, "nothing was written");
    }

    #[test]
    fn a_version_1_log_opens_and_becomes_version_2_at_its_first_correction() {
        let dir = tempfile::tempdir().unwrap();
        let st = open(dir.path());
        st.submit(&history()).unwrap();
        drop(st);
        let path = dir.path().join(crate::LOG_FILE);
        let version = |p: &std::path::Path| std::fs::read(p).unwrap()[8];
        assert_eq!(version(&path), 1, "no correction yet: still readable by 1");
        let st = open(dir.path());
        st.delete("u", 1000, "Beatles", "Help", 5).unwrap();
        assert_eq!(version(&path), 2);
        drop(st);
        assert_eq!(open(dir.path()).summary("u").playcount, 3);
    }

    #[test]
    fn the_same_play_from_two_sources_counts_once_within_the_window() {
        let dir = tempfile::tempdir().unwrap();
        let (st, _) = Listens::open_with(dir.path(), Options::default()).unwrap();
        let mut a = l(1000, "Abba", "SOS", "");
        a.client = "desktop".into();
        let mut b = l(1005, " abba ", "sos", "Arrival");
        b.client = "phone".into();
        assert_eq!(st.submit(&[a]).unwrap(), vec![Submitted::Accepted], "first");
        assert_eq!(st.submit(&[b]).unwrap(), vec![Submitted::Duplicate]);
        // Same recording id, other names (a translated title), 20 s later.
        let mut c = l(2000, "Björk", "Jóga", "");
        c.mbid = "ABC".into();
        let mut d = l(2020, "Bjork", "Joga", "");
        d.mbid = "abc".into();
        let out = st.submit(&[c, d]).unwrap();
        assert_eq!(out, vec![Submitted::Accepted, Submitted::Duplicate]);
        // Outside the window: another play.
        let e = l(1031, "Abba", "SOS", "");
        assert_eq!(st.submit(&[e]).unwrap(), vec![Submitted::Accepted]);
        // A long track widens the window to a tenth of its length.
        let mut f = l(5000, "Long", "Mix", "");
        f.duration = Some(1200);
        let mut g = l(5100, "Long", "Mix", "");
        g.duration = Some(1200);
        let out = st.submit(&[f, g]).unwrap();
        assert_eq!(out, vec![Submitted::Accepted, Submitted::Duplicate]);
        assert_eq!(st.summary("u").playcount, 4);
        // A 20 s track on repeat starts every 20 s: each start is a play
        // (the window stays under half the length), a twin 3 s off is not.
        let reps: Vec<Listen> = [9000, 9020, 9040, 9043]
            .iter()
            .map(|&t| {
                let mut r = l(t, "Short", "Loop", "");
                r.duration = Some(20);
                r
            })
            .collect();
        let out = st.submit(&reps).unwrap();
        let dup = Submitted::Duplicate;
        let new = Submitted::Accepted;
        assert_eq!(out, vec![new, new, new, dup]);
        assert_eq!(st.summary("u").playcount, 7);
        drop(st);
        // A narrower window: 5 s apart are two plays.
        let (st, _) = Listens::open_with(
            dir.path(),
            Options {
                dedupe_window: Duration::from_secs(2),
            },
        )
        .unwrap();
        assert_eq!(
            st.summary("u").playcount,
            7,
            "replay keeps what was counted"
        );
        let h = l(1040, "Abba", "SOS", "");
        let i = l(1045, "Abba", "SOS", "");
        let out = st.submit(&[h, i]).unwrap();
        assert_eq!(out, vec![Submitted::Accepted, Submitted::Accepted]);
        drop(st);
        // `open` keeps the exact rule: a second apart are two plays.
        let st = open(dir.path());
        let out = st.submit(&[l(1100, "Abba", "SOS", ""), l(1101, "Abba", "SOS", "")]);
        assert_eq!(out.unwrap(), vec![Submitted::Accepted, Submitted::Accepted]);
    }
}
