//! One task per link: tails the listens log from the link's cursor,
//! keeps the link's user's listens (not those brought in by an import),
//! appends them to the link's journal (synced), then advances the cursor.
//! A listen is in the log before it is in the journal, and in the journal
//! before the cursor passes it: a crash loses nothing, and a crash between
//! the journal write and the cursor write puts one batch in the journal
//! twice, which the services drop as repeats (same user, track and start).
//!
//! The user's loves and unloves (records of the same log) go into the
//! journal too, in their place among the listens, each with the track's
//! recording MBID when the library or the user's listens know one
//! (ListenBrainz loves by MBID only).

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use spindle_listens::{Listen, Listens, TailError, TailLove, TailRead};
use spindle_scrobble::{Journal, Msg, Scrobble};
use tokio::sync::{mpsc, watch};

use super::link::{self, ForwardError};

/// The longest a feeder sleeps without being woken by a write.
pub const FEED_POLL: Duration = Duration::from_secs(5);

/// Whether a listen of `user` is sent out by `user`'s links: theirs, and
/// not history imported from elsewhere (client `import…`).
pub fn forwarded(l: &Listen, user: &str) -> bool {
    l.user == user && !l.client.starts_with("import")
}

/// What a service is sent of a listen: its credited artists too (a
/// ListenBrainz-type service gets them as `artist_names`; a Last.fm-type
/// one, with one artist field, the artist as shown).
pub fn to_scrobble(l: &Listen) -> Scrobble {
    Scrobble {
        artist: l.artist.clone(),
        artists: l.artists.clone(),
        track: l.title.clone(),
        album: l.album.clone(),
        album_artist: l.album_artist.clone(),
        timestamp: l.timestamp,
        duration: l.duration,
        track_number: l.track_number,
        mbid: l.mbid.clone(),
        player: l.client.clone(),
        ..Scrobble::default()
    }
}

/// What a service is sent of a love or unlove: the track, when, and its
/// recording MBID if `mbid` knows one.
pub fn love_to_scrobble(l: &TailLove, mbid: Option<String>) -> Scrobble {
    Scrobble {
        artist: l.artist.clone(),
        track: l.title.clone(),
        timestamp: l.timestamp,
        mbid: mbid.unwrap_or_default(),
        love: Some(l.loved),
        ..Scrobble::default()
    }
}

/// Finds the recording MBID of a user's track (artist, title), if any.
pub type MbidOf = dyn Fn(&str, &str) -> Option<String> + Send + Sync;

/// What a feeder reads: the history, and the MBIDs of loved tracks.
pub struct Source {
    pub listens: Arc<Listens>,
    pub mbid_of: Arc<MbidOf>,
}

/// The journal entries of one read: `user`'s listens and loves, in log
/// order.
fn entries(r: &TailRead, user: &str, mbid_of: &MbidOf) -> Vec<Scrobble> {
    let mut out = Vec::with_capacity(r.listens.len());
    let mut loves = r.loves.iter().filter(|l| l.user == user).peekable();
    for (i, l) in r.listens.iter().enumerate() {
        while let Some(love) = loves.next_if(|x| x.after <= i) {
            out.push(love_to_scrobble(love, mbid_of(&love.artist, &love.title)));
        }
        out.push(to_scrobble(l));
    }
    for love in loves {
        out.push(love_to_scrobble(love, mbid_of(&love.artist, &love.title)));
    }
    out
}

/// Feeds the journal in `dir` from the log until the cursor reaches the
/// durable end; returns how many listens and loves were appended. A link
/// without a cursor starts at the end.
pub fn feed(
    listens: &Listens,
    dir: &Path,
    user: &str,
    journal: &Mutex<Journal>,
    mbid_of: &MbidOf,
) -> Result<usize, ForwardError> {
    let end = listens.committed_end();
    let Some(mut cursor) = link::read_cursor(dir)? else {
        link::write_cursor(dir, end)?;
        return Ok(0);
    };
    let mut added = 0;
    while cursor < end {
        let r = match listens.listens_between(cursor, end, |l| forwarded(l, user)) {
            Ok(r) => r,
            Err(e @ TailError::NotARecord { .. }) => {
                // A cursor from another log (a restored backup): what it
                // pointed at cannot be found, so start again at the end.
                tracing::error!(user, dir = %dir.display(), "{e}; forwarding goes on from the end of the log");
                link::write_cursor(dir, end)?;
                return Ok(added);
            }
            Err(e) => return Err(e.into()),
        };
        let batch = entries(&r, user, mbid_of);
        if !batch.is_empty() {
            journal
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .append_all(&batch)?;
            added += batch.len();
        }
        if r.end == cursor {
            break;
        }
        cursor = r.end;
        link::write_cursor(dir, cursor)?;
    }
    Ok(added)
}

/// A cursor past the durable end of the log when a link starts belongs
/// to another log (a restored backup): it starts again at the end.
pub fn check_cursor(listens: &Listens, dir: &Path) -> Result<(), ForwardError> {
    let end = listens.committed_end();
    if let Some(c) = link::read_cursor(dir)? {
        if c > end {
            tracing::warn!(dir = %dir.display(), "the forwarding cursor ({c}) is past the end of the listens log ({end}); going on from the end");
            link::write_cursor(dir, end)?;
        }
    }
    Ok(())
}

/// The feeder task of one link: feeds on every write to the log (`wake`)
/// and at least every [`FEED_POLL`], tells the queue, and stops when
/// `stop` says so or the queue is gone.
pub async fn run(
    source: Source,
    dir: std::path::PathBuf,
    user: String,
    journal: Arc<Mutex<Journal>>,
    queue: mpsc::Sender<Msg>,
    mut wake: watch::Receiver<u64>,
    mut stop: watch::Receiver<bool>,
) {
    let mut failing = false;
    loop {
        if *stop.borrow() {
            return;
        }
        wake.borrow_and_update();
        let (l, d, u, j) = (
            source.listens.clone(),
            dir.clone(),
            user.clone(),
            journal.clone(),
        );
        let m = source.mbid_of.clone();
        let r = spindle_app::offload::run(move || feed(&l, &d, &u, &j, &*m)).await;
        match r {
            Ok(Ok(n)) => {
                failing = false;
                if n > 0 && queue.send(Msg::Wake).await.is_err() {
                    return;
                }
            }
            Ok(Err(e)) => {
                // Logged once until it works again; retried every poll.
                if !failing {
                    tracing::error!(user = %user, dir = %dir.display(), "forwarding stalled: {e}");
                }
                failing = true;
            }
            Err(e) => tracing::error!(user = %user, "the forwarding feeder failed: {e}"),
        }
        tokio::select! {
            r = wake.changed() => if r.is_err() { return },
            r = stop.changed() => if r.is_err() { return },
            () = tokio::time::sleep(FEED_POLL) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn l(user: &str, ts: i64, client: &str) -> Listen {
        let mut l = Listen::new(user, ts, "A", &format!("T{ts}"));
        l.client = client.into();
        l
    }

    fn no_mbid(_: &str, _: &str) -> Option<String> {
        None
    }

    fn titles(j: &Mutex<Journal>) -> Vec<String> {
        j.lock()
            .unwrap()
            .batch(1000)
            .into_iter()
            .map(|s| s.track)
            .collect()
    }

    struct Fixture {
        _d: tempfile::TempDir,
        listens: Listens,
        dir: std::path::PathBuf,
        journal: Mutex<Journal>,
    }

    fn fixture() -> Fixture {
        let d = tempfile::tempdir().unwrap();
        let (listens, _) = Listens::open(&d.path().join("listens")).unwrap();
        let dir = d.path().join("link");
        let (j, _) = Journal::open(&dir).unwrap();
        Fixture {
            _d: d,
            listens,
            dir,
            journal: Mutex::new(j),
        }
    }

    #[test]
    fn a_new_link_starts_at_the_end_and_sends_only_its_users_live_listens_in_order() {
        let f = fixture();
        f.listens.submit(&[l("ann", 1, "lastfm")]).unwrap();
        assert_eq!(
            feed(&f.listens, &f.dir, "ann", &f.journal, &no_mbid).unwrap(),
            0
        );
        f.listens
            .submit(&[
                l("ann", 3, "subsonic"),
                l("bob", 4, "lastfm"),
                l("ann", 2, "import/lastfm"),
                l("ann", 5, "listenbrainz"),
            ])
            .unwrap();
        assert_eq!(
            feed(&f.listens, &f.dir, "ann", &f.journal, &no_mbid).unwrap(),
            2
        );
        assert_eq!(titles(&f.journal), ["T3", "T5"]);
        // Nothing new: nothing appended, however often it runs.
        assert_eq!(
            feed(&f.listens, &f.dir, "ann", &f.journal, &no_mbid).unwrap(),
            0
        );
        assert_eq!(
            link::read_cursor(&f.dir).unwrap(),
            Some(f.listens.committed_end())
        );
    }

    #[test]
    fn a_crash_between_the_journal_and_the_cursor_repeats_that_batch_and_loses_nothing() {
        let f = fixture();
        feed(&f.listens, &f.dir, "ann", &f.journal, &no_mbid).unwrap();
        let before = link::read_cursor(&f.dir).unwrap().unwrap();
        f.listens
            .submit(&[l("ann", 10, "web"), l("ann", 11, "web")])
            .unwrap();
        feed(&f.listens, &f.dir, "ann", &f.journal, &no_mbid).unwrap();
        // The cursor write never happened: the old cursor is back.
        link::write_cursor(&f.dir, before).unwrap();
        f.listens.submit(&[l("ann", 12, "web")]).unwrap();
        // Reopened, as after a restart.
        drop(f.journal);
        let (j, _) = Journal::open(&f.dir).unwrap();
        let j = Mutex::new(j);
        feed(&f.listens, &f.dir, "ann", &j, &no_mbid).unwrap();
        assert_eq!(titles(&j), ["T10", "T11", "T10", "T11", "T12"]);
    }

    #[test]
    fn a_cursor_past_the_end_of_the_log_restarts_at_the_end() {
        let f = fixture();
        f.listens.submit(&[l("ann", 1, "web")]).unwrap();
        link::write_cursor(&f.dir, 1 << 40).unwrap();
        check_cursor(&f.listens, &f.dir).unwrap();
        assert_eq!(
            link::read_cursor(&f.dir).unwrap(),
            Some(f.listens.committed_end())
        );
        f.listens.submit(&[l("ann", 2, "web")]).unwrap();
        feed(&f.listens, &f.dir, "ann", &f.journal, &no_mbid).unwrap();
        assert_eq!(titles(&f.journal), ["T2"]);
    }

    #[test]
    fn a_users_loves_go_into_the_journal_in_their_place_among_the_listens() {
        let f = fixture();
        feed(&f.listens, &f.dir, "ann", &f.journal, &no_mbid).unwrap();
        f.listens.submit(&[l("ann", 1, "web")]).unwrap();
        f.listens.love("ann", "A", "T1", 2, true).unwrap();
        f.listens.love("bob", "A", "T1", 2, true).unwrap();
        f.listens.submit(&[l("ann", 3, "web")]).unwrap();
        f.listens.love("ann", "B", "X", 4, false).unwrap();
        let mbid = |a: &str, _: &str| (a == "A").then(|| "m-1".to_owned());
        assert_eq!(
            feed(&f.listens, &f.dir, "ann", &f.journal, &mbid).unwrap(),
            4
        );
        let got: Vec<(String, Option<bool>, String)> = f
            .journal
            .lock()
            .unwrap()
            .batch(10)
            .into_iter()
            .map(|s| (s.track, s.love, s.mbid))
            .collect();
        let want = [
            ("T1", None, ""),
            ("T1", Some(true), "m-1"),
            ("T3", None, ""),
            ("X", Some(false), ""),
        ];
        let want: Vec<(String, Option<bool>, String)> = want
            .iter()
            .map(|(t, l, m)| ((*t).to_owned(), *l, (*m).to_owned()))
            .collect();
        assert_eq!(got, want);
    }

    #[test]
    fn a_listen_becomes_the_scrobble_services_take() {
        let mut x = l("ann", 7, "web");
        x.album = "Al".into();
        x.duration = Some(200);
        let s = to_scrobble(&x);
        assert_eq!(
            (s.artist.as_str(), s.track.as_str(), s.album.as_str()),
            ("A", "T7", "Al")
        );
        assert_eq!((s.timestamp, s.duration), (7, Some(200)));
    }
}
