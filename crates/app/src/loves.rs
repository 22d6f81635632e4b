//! Loves: one per-user "loved" fact per track, whichever API set it.
//!
//! The one record of it is the listens log's love and unlove records
//! (`docs/listens-format.md`, kinds 2 and 3: user, artist, title). Last.fm
//! `track.love`, ListenBrainz feedback, a Subsonic `star` of a song and
//! the web UI's star of a song all write one; a song is *starred* for
//! Subsonic and the web UI exactly when its track is loved, derived here
//! and never stored beside it. So star and love cannot disagree, the
//! history's replication carries them to a cluster's replicas, and the
//! forwarding feeders read them from the same log as listens.
//!
//! A track is its artist and title compared as the history compares names
//! ([`normalise`]: caselessly, whitespace collapsed); a song matches a
//! love of its first artist or of its artist credit as shown, with its
//! title. Every song of that track is starred (the same recording on two
//! albums, say). A love of a track the library does not have is still a
//! love (Last.fm shows it); it stars nothing.
//!
//! Album and artist stars stay in the user data file
//! ([`crate::userdata`]). Song stars kept there by an older Spindle are
//! moved into the log when a primary opens ([`move_song_stars`]).

use std::collections::{HashMap, HashSet};

use sha2::{Digest, Sha256};
use spindle_listens::{normalise, AppendError, Listens, Loved};

use crate::catalog::{Catalog, Song};
use crate::App;

/// A track as loves compare it: artist and title, normalised.
pub type Key = (String, String);

/// The key of a track.
pub fn key(artist: &str, title: &str) -> Key {
    (normalise(artist), normalise(title))
}

/// The keys a song is loved under: its first artist's, and its shown
/// artist credit's when that differs.
fn song_keys(s: &Song) -> impl Iterator<Item = Key> + '_ {
    let title = normalise(&s.title);
    let first = normalise(&s.artist);
    let shown = (!s.display_artist.is_empty())
        .then(|| normalise(&s.display_artist))
        .filter(|d| *d != first);
    std::iter::once(first)
        .chain(shown)
        .map(move |a| (a, title.clone()))
}

/// A track's ListenBrainz "MessyBrainz" id as Spindle gives it out: a
/// UUID-shaped name of its normalised artist and title (a SHA-256, with
/// the version nibble 8 of a name-based UUID of one's own), so the same
/// track has the same id for every user and across restarts, and a
/// client can send it back in a feedback.
pub fn msid(artist: &str, title: &str) -> String {
    let (a, t) = key(artist, title);
    let mut h = Sha256::new();
    h.update(b"spindle-msid\0");
    h.update(a.as_bytes());
    h.update(b"\0");
    h.update(t.as_bytes());
    let d = h.finalize();
    let mut b = [0u8; 16];
    b.copy_from_slice(&d[..16]);
    b[6] = (b[6] & 0x0f) | 0x80;
    b[8] = (b[8] & 0x3f) | 0x80;
    let hex: String = b.iter().map(|x| format!("{x:02x}")).collect();
    format!(
        "{}-{}-{}-{}-{}",
        &hex[..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..]
    )
}

/// One user's loves, by track, for telling which songs are starred.
#[derive(Debug, Default)]
pub struct LovedSet {
    /// Track → (when loved, the names as loved).
    by_key: HashMap<Key, (i64, Loved)>,
}

impl LovedSet {
    /// `user`'s loves as they are now.
    pub fn of(listens: &Listens, user: &str) -> LovedSet {
        let by_key = listens
            .loved(user)
            .into_iter()
            .map(|l| (key(&l.artist, &l.title), (l.timestamp, l)))
            .collect();
        LovedSet { by_key }
    }

    pub fn is_empty(&self) -> bool {
        self.by_key.is_empty()
    }

    /// When the song's track was loved (its star's time), if it is.
    pub fn song(&self, s: &Song) -> Option<i64> {
        if self.by_key.is_empty() {
            return None;
        }
        song_keys(s).find_map(|k| self.by_key.get(&k).map(|(t, _)| *t))
    }

    /// The loves (as recorded) that star `s`.
    fn of_song(&self, s: &Song) -> Vec<Loved> {
        song_keys(s)
            .filter_map(|k| self.by_key.get(&k).map(|(_, l)| l.clone()))
            .collect()
    }

    /// The starred songs of `cat`, in catalog order.
    pub fn songs<'c>(&self, cat: &'c Catalog) -> Vec<(&'c Song, i64)> {
        if self.by_key.is_empty() {
            return Vec::new();
        }
        cat.songs
            .iter()
            .filter_map(|s| self.song(s).map(|t| (&**s, t)))
            .collect()
    }
}

/// Loves (or unloves) a track, durably, and wakes the forwarding feeders
/// (a love goes to the user's linked services like a listen). Blocking.
pub fn set(st: &App, user: &str, artist: &str, title: &str, on: bool) -> Result<(), AppendError> {
    st.listens.love(user, artist, title, st.now(), on)?;
    st.forwarding.wake();
    Ok(())
}

/// Stars (loves) or unstars (unloves) a library song for `user`. A star
/// of a song already loved writes nothing; an unstar takes back every
/// love that stars it. Blocking.
pub fn star_song(st: &App, user: &str, s: &Song, on: bool) -> Result<(), AppendError> {
    let loved = LovedSet::of(&st.listens, user);
    if on {
        if loved.song(s).is_none() {
            set(st, user, &s.artist, &s.title, true)?;
        }
        return Ok(());
    }
    for l in loved.of_song(s) {
        set(st, user, &l.artist, &l.title, false)?;
    }
    Ok(())
}

/// The MusicBrainz recording id of a track: a library song's, else one
/// of `user`'s listens of it. Blocking (a catalog read).
pub fn mbid_of(st: &App, user: &str, artist: &str, title: &str) -> Option<String> {
    let k = key(artist, title);
    let cat = st.music.catalog(&st.db);
    let from_library = cat
        .songs
        .iter()
        .filter(|s| song_keys(s).any(|x| x == k))
        .find_map(|s| s.mbid.clone().filter(|m| !m.is_empty()));
    from_library.or_else(|| {
        st.listens
            .track_tallies(user)
            .into_iter()
            .find(|t| !t.mbid.is_empty() && key(&t.artist, &t.title) == k)
            .map(|t| t.mbid)
    })
}

/// MusicBrainz recording ids of the tracks of `keys`, from the library,
/// else from `user`'s listens. Blocking.
pub fn mbids_of(st: &App, user: &str, keys: &HashSet<Key>) -> HashMap<Key, String> {
    let mut out = HashMap::new();
    if keys.is_empty() {
        return out;
    }
    let cat = st.music.catalog(&st.db);
    for s in &cat.songs {
        let Some(m) = s.mbid.as_ref().filter(|m| !m.is_empty()) else {
            continue;
        };
        for k in song_keys(s) {
            if keys.contains(&k) {
                out.entry(k).or_insert_with(|| m.clone());
            }
        }
    }
    for t in st.listens.track_tallies(user) {
        if t.mbid.is_empty() {
            continue;
        }
        let k = key(&t.artist, &t.title);
        if keys.contains(&k) {
            out.entry(k).or_insert(t.mbid);
        }
    }
    out
}

/// The track (artist, title) of a recording MBID: a library song's names,
/// else those of `user`'s listens with it. Blocking.
pub fn track_of_mbid(st: &App, user: &str, mbid: &str) -> Option<(String, String)> {
    let cat = st.music.catalog(&st.db);
    let song = cat.songs.iter().find(|s| {
        s.mbid
            .as_deref()
            .is_some_and(|m| m.eq_ignore_ascii_case(mbid))
    });
    if let Some(s) = song {
        return Some((s.artist.clone(), s.title.clone()));
    }
    st.listens
        .track_tallies(user)
        .into_iter()
        .find(|t| t.mbid.eq_ignore_ascii_case(mbid))
        .map(|t| (t.artist, t.title))
}

/// The track of an [`msid`]: among `user`'s loves, listens and the
/// library's songs. Blocking.
pub fn track_of_msid(st: &App, user: &str, id: &str) -> Option<(String, String)> {
    let id = id.to_ascii_lowercase();
    let hit = |a: &str, t: &str| msid(a, t) == id;
    if let Some(l) = st
        .listens
        .loved(user)
        .into_iter()
        .find(|l| hit(&l.artist, &l.title))
    {
        return Some((l.artist, l.title));
    }
    if let Some(t) = st
        .listens
        .track_tallies(user)
        .into_iter()
        .find(|t| hit(&t.artist, &t.title))
    {
        return Some((t.artist, t.title));
    }
    let cat = st.music.catalog(&st.db);
    let s = cat.songs.iter().find(|s| hit(&s.artist, &s.title))?;
    Some((s.artist.clone(), s.title.clone()))
}

/// Moves the song stars an older Spindle kept in the user data files
/// into the listens log as loves (at the time they were starred), then
/// drops them there; stars of songs no longer in the library stay. Run
/// by a primary when it opens; a crash half-way repeats nothing (a song
/// already loved is not loved again). Returns warnings.
pub fn move_song_stars(st: &App) -> Vec<String> {
    let mut warnings = Vec::new();
    let mut cat = None;
    for (user, _) in st.accounts.list_users() {
        let songs: Vec<(String, i64)> = st
            .music
            .userdata
            .starred(&user)
            .into_iter()
            .filter(|(id, _)| id.parse::<u32>().is_ok())
            .collect();
        if songs.is_empty() {
            continue;
        }
        let cat = cat.get_or_insert_with(|| st.music.catalog(&st.db));
        let loved = LovedSet::of(&st.listens, &user);
        let mut moved = Vec::new();
        for (id, when) in songs {
            let Some(s) = cat.song(&id) else {
                continue;
            };
            if loved.song(s).is_none() {
                if let Err(e) = st.listens.love(&user, &s.artist, &s.title, when, true) {
                    warnings.push(format!("could not move {user}'s star of song {id}: {e}"));
                    continue;
                }
            }
            moved.push(id);
        }
        if let Err(e) = st.music.userdata.star(&user, &moved, false, 0) {
            warnings.push(format!("could not drop {user}'s moved song stars: {e}"));
        }
    }
    warnings
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_msid_is_a_uuid_of_the_normalised_names() {
        let a = msid("The  Band", "Song");
        assert_eq!(a, msid("the band", " SONG "));
        assert_ne!(a, msid("The Band", "Other"));
        assert_eq!(a.len(), 36);
        let parts: Vec<usize> = a.split('-').map(str::len).collect();
        assert_eq!(parts, [8, 4, 4, 4, 12]);
        assert_eq!(&a[14..15], "8");
    }

    #[test]
    fn song_stars_of_an_older_spindle_become_loves_once_and_leave_album_stars() {
        let kit = crate::testlib::Demo::new();
        let st = &kit.app;
        let song = kit.songs[0].clone();
        let ids = [song.clone(), "al-x".to_owned(), "999999".to_owned()];
        st.music.userdata.star("bob", &ids, true, 100).unwrap();
        assert!(move_song_stars(st).is_empty());
        let loved = st.listens.loved("bob");
        assert_eq!(loved.len(), 1);
        assert_eq!(loved[0].timestamp, 100, "loved when it was starred");
        let left: Vec<String> = st.music.userdata.starred("bob").into_keys().collect();
        assert_eq!(left, ["999999", "al-x"], "a gone song's star stays");
        // Run again (as after a crash before the drop): nothing doubles.
        st.music.userdata.star("bob", &[song], true, 100).unwrap();
        assert!(move_song_stars(st).is_empty());
        assert_eq!(st.listens.loved("bob").len(), 1);
        assert!(st.listens.loved("ann").is_empty());
    }
}
