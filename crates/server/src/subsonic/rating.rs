//! `setRating`, and every user's ratings for whoever shows them: the one
//! implementation of ratings, which the web UI (`crate::web`) calls too.
//!
//! A song's rating lives in the library, as the property `rating` with
//! the source `client/spindle-USER` (what `spindle db set ID rating 5
//! --source client/spindle-ann` writes), so Spindle's query language sees
//! it: `rating>=4`. Several users' ratings of one song are several
//! sources of one key; [`query_pref`] is the source preference under
//! which a user's own rating wins. Albums and artists are not library
//! entries: their ratings live in the user data
//! ([`crate::userdata::UserData::set_rating`]).

use spindle_query::{SourcePref, Value, DEFAULT_SOURCEPREF};
use spindle_store::ValueRef;

use super::{Ctx, SubsonicError, SyncResult};
use crate::catalog::Catalog;
use crate::state::AppState;

/// The key of a rating in the library.
pub const RATING_KEY: &str = "rating";

/// The highest rating (Subsonic's five stars).
pub const MAX_RATING: i64 = 5;

/// The library source of `user`'s ratings.
pub fn rating_source(user: &str) -> String {
    format!("client/spindle-{user}")
}

/// The source preference of `user`'s queries: the server's own values,
/// then the user's own ratings and edits, then every other client's
/// (another user's rating counts only where the user has none), then the
/// tags, as in the default ([`DEFAULT_SOURCEPREF`]).
pub fn query_pref(user: &str) -> SourcePref {
    let rest = DEFAULT_SOURCEPREF
        .split(':')
        .filter(|p| *p != "server")
        .collect::<Vec<_>>()
        .join(":");
    SourcePref::parse(&format!("server:{}:{rest}", rating_source(user)))
}

/// The user's rating (1..=5) of a song, album or artist id as a client
/// sends it; `None` when unrated or when there is no such thing. For a
/// song, one read of the library (call on a blocking thread); browsing
/// code adds it as `userRating` to every song, album and artist it shows.
pub fn user_rating(state: &AppState, user: &str, id: &str) -> Option<i64> {
    if id.starts_with("al-") || id.starts_with("ar-") {
        return state.music.userdata.rating(user, id).map(i64::from);
    }
    let entry: u32 = id.parse().ok()?;
    song_rating(&state.db.read(), user, entry)
}

/// [`user_rating`] of a song by entry id, under a read lock the caller
/// holds already (to rate many songs in one go).
pub(crate) fn song_rating(lib: &spindle_store::Library, user: &str, entry: u32) -> Option<i64> {
    rating_under(
        lib,
        &SourcePref::from_patterns([rating_source(user)]),
        entry,
    )
}

/// One user's song ratings for the songs of one answer: the source
/// preference is made once per answer, not once per song.
pub(crate) struct SongRatings {
    db: std::sync::Arc<spindle_store::Db>,
    pref: SourcePref,
}

impl SongRatings {
    pub(crate) fn read(state: &AppState, user: &str) -> SongRatings {
        SongRatings {
            db: state.db.clone(),
            pref: SourcePref::from_patterns([rating_source(user)]),
        }
    }

    /// Whether any value in the library comes from a source these ratings
    /// are read from: when none does, every song is unrated. One read of
    /// every entry, so callers keep the answer per catalog
    /// ([`super::views::Views::has_song_ratings`]).
    pub(crate) fn any(&self) -> bool {
        self.db
            .read()
            .source_names()
            .iter()
            .any(|name| self.pref.priority(name).is_some())
    }

    /// The rating of one song (one short read lock).
    pub(crate) fn get(&self, entry: u32) -> Option<i64> {
        rating_under(&self.db.read(), &self.pref, entry)
    }
}

/// The rating of `entry` from the best source of `pref`, if it is 1–5.
fn rating_under(lib: &spindle_store::Library, pref: &SourcePref, entry: u32) -> Option<i64> {
    lib.get(entry, RATING_KEY, pref)
        .into_iter()
        .find_map(|v| match v {
            ValueRef::Int(i) if (1..=MAX_RATING).contains(&i) => Some(i),
            ValueRef::Str(s) => s
                .trim()
                .parse()
                .ok()
                .filter(|i| (1..=MAX_RATING).contains(i)),
            _ => None,
        })
}

/// Why a rating was not saved.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub(crate) enum RateError {
    #[error("you may not rate: ask an administrator for the comment role")]
    NotAllowed,
    #[error("a rating is 0 (none) to {MAX_RATING}, not {0}")]
    OutOfRange(i64),
    #[error("no such song, album or artist")]
    NotFound,
    #[error("could not save the rating: {0}")]
    Save(String),
}

/// Rates a song, album or artist (`id` as a client sends it) for `user`:
/// 1 to 5, 0 removes. The user needs the comment role. A song's rating
/// goes to the library, an album's or artist's to the user data. Blocking.
pub(crate) fn rate(
    state: &AppState,
    cat: &Catalog,
    user: &str,
    id: &str,
    rating: i64,
) -> Result<(), RateError> {
    if !(0..=MAX_RATING).contains(&rating) {
        return Err(RateError::OutOfRange(rating));
    }
    if !state.accounts.roles(user).is_some_and(|r| r.comment) {
        return Err(RateError::NotAllowed);
    }
    if cat.album(id).is_some() || cat.artist(id).is_some() {
        let r = u8::try_from(rating).unwrap_or(0);
        return state
            .music
            .userdata
            .set_rating(user, id, r)
            .map_err(|e| RateError::Save(e.to_string()));
    }
    let song = cat.song(id).ok_or(RateError::NotFound)?;
    let source = rating_source(user);
    let done = if rating == 0 {
        state.db.delete(song.id, Some(RATING_KEY), Some(&source))
    } else {
        state
            .db
            .replace_prop(song.id, RATING_KEY, Value::Int(rating), &source)
    };
    done.map(|_| ()).map_err(|e| RateError::Save(e.to_string()))
}

/// The `rating` parameter: 0 (none) to 5.
fn rating_param(c: &Ctx) -> Result<i64, SubsonicError> {
    let r = c.req("rating")?;
    let n: i64 = r.trim().parse().map_err(|_| {
        SubsonicError::BadValue(format!(
            "The rating must be a whole number from 0 (none) to {MAX_RATING}, not {r:?}"
        ))
    })?;
    if !(0..=MAX_RATING).contains(&n) {
        return Err(SubsonicError::BadValue(format!(
            "The rating must be from 0 (none) to {MAX_RATING}, not {n}"
        )));
    }
    Ok(n)
}

/// `setRating`: `id` (song, album or artist), `rating` 0..=5, 0 removes.
pub(crate) fn set_rating(c: &mut Ctx) -> SyncResult {
    let id =
        c.p.nonempty("id")
            .ok_or(SubsonicError::Missing("id"))?
            .to_owned();
    let rating = rating_param(c)?;
    let cat = c.cat();
    // What the user may not see is as unknown as what does not exist.
    if c.access().hides(&cat, &id) {
        return Err(SubsonicError::NotFound("Song, album or artist"));
    }
    rate(&c.state, &cat, &c.user, &id, rating).map_err(|e| match e {
        RateError::NotAllowed => SubsonicError::NotAuthorized(
            "You may not rate: ask an administrator for the comment role".into(),
        ),
        RateError::NotFound => SubsonicError::NotFound("Song, album or artist"),
        RateError::OutOfRange(_) => SubsonicError::BadValue(capitalised(&e.to_string())),
        RateError::Save(_) => SubsonicError::Internal(capitalised(&e.to_string())),
    })?;
    Ok(None)
}

/// A message with its first letter in upper case, as Subsonic's are.
fn capitalised(s: &str) -> String {
    let mut c = s.chars();
    c.next()
        .map(|f| f.to_uppercase().chain(c).collect())
        .unwrap_or_default()
}

/// Removes every song rating of a deleted user from the library.
pub(crate) fn forget_ratings(state: &AppState, user: &str) -> Result<(), String> {
    let source = rating_source(user);
    let ids: Vec<u32> = {
        let lib = state.db.read();
        let pref = SourcePref::from_patterns([source.clone()]);
        lib.ids()
            .filter(|&id| !lib.get(id, RATING_KEY, &pref).is_empty())
            .collect()
    };
    for id in ids {
        state
            .db
            .delete(id, Some(RATING_KEY), Some(&source))
            .map_err(|e| format!("could not remove the user's ratings: {e}"))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_users_own_rating_wins_over_another_users() {
        let p = query_pref("ann");
        let own = p.priority("client/spindle-ann").unwrap();
        let other = p.priority("client/spindle-bob").unwrap();
        let tags = p.priority("plugin/id3v2").unwrap();
        assert!(p.priority("server").unwrap() < own);
        assert!(own < other && other < tags);
    }

    #[test]
    fn song_ratings_are_read_from_the_users_source_only() {
        let dir = tempfile::tempdir().unwrap();
        let db = spindle_store::Db::open(dir.path()).unwrap();
        let id = db
            .add_props(
                None,
                vec![("title".into(), Value::Str("x".into()))],
                "plugin/id3v2",
            )
            .unwrap();
        db.replace_prop(id, RATING_KEY, Value::Int(4), "client/spindle-ann")
            .unwrap();
        db.replace_prop(id, RATING_KEY, Value::Int(9), "client/spindle-bob")
            .unwrap();
        let lib = db.read();
        assert_eq!(song_rating(&lib, "ann", id), Some(4));
        assert_eq!(song_rating(&lib, "bob", id), None, "9 is no rating");
        assert_eq!(song_rating(&lib, "cy", id), None);
    }

    #[tokio::test]
    async fn a_song_rating_is_a_library_value_the_query_language_sees() {
        let k = crate::subsonic::testkit::Kit::new();
        let (a, b) = (k.songs[0].clone(), k.songs[1].clone());
        k.ok("ann", "setRating", &[("id", &a), ("rating", "5")])
            .await;
        k.ok("ann", "setRating", &[("id", &b), ("rating", "2")])
            .await;
        k.ok("bob", "setRating", &[("id", &b), ("rating", "4")])
            .await;
        assert_eq!(user_rating(&k.state, "ann", &a), Some(5));
        assert_eq!(user_rating(&k.state, "bob", &a), None, "per user");
        let id: u32 = a.parse().unwrap();
        {
            let lib = k.state.db.read();
            let values = lib.get(id, RATING_KEY, &SourcePref::parse("client/*"));
            assert_eq!(values.len(), 1);
            let q = spindle_query::parse("rating>=4").unwrap().coll;
            let own = lib.query_ids(&q, &query_pref("ann")).unwrap();
            assert_eq!(own.ids, [id], "ann's own 2 wins over bob's 4");
            let bobs = lib.query_ids(&q, &query_pref("bob")).unwrap();
            assert!(bobs.ids.contains(&b.parse().unwrap()));
        }
        k.ok("ann", "setRating", &[("id", &a), ("rating", "0")])
            .await;
        assert_eq!(user_rating(&k.state, "ann", &a), None, "0 removes");
    }

    #[test]
    fn one_rate_for_every_api_checks_the_range_the_role_and_the_id() {
        let k = crate::subsonic::testkit::Kit::new();
        let cat = k.state.music.catalog(&k.state.db);
        let song = k.songs[0].clone();
        assert_eq!(
            rate(&k.state, &cat, "bob", &song, 6),
            Err(RateError::OutOfRange(6))
        );
        assert_eq!(
            rate(&k.state, &cat, "bob", "no-such-id", 3),
            Err(RateError::NotFound)
        );
        rate(&k.state, &cat, "bob", &song, 4).unwrap();
        assert_eq!(user_rating(&k.state, "bob", &song), Some(4));
        let mut p = k.state.accounts.profile("bob").unwrap();
        p.roles.comment = false;
        k.state.accounts.set_profile("bob", p).unwrap();
        assert_eq!(
            rate(&k.state, &cat, "bob", &song, 1),
            Err(RateError::NotAllowed)
        );
        assert_eq!(user_rating(&k.state, "bob", &song), Some(4));
        forget_ratings(&k.state, "bob").unwrap();
        assert_eq!(user_rating(&k.state, "bob", &song), None);
    }

    #[tokio::test]
    async fn albums_and_artists_are_rated_and_bad_ratings_refused() {
        let k = crate::subsonic::testkit::Kit::new();
        let cat = k.state.music.catalog(&k.state.db);
        let (album, artist) = (cat.albums[0].id.clone(), cat.artists[0].id.clone());
        k.ok("ann", "setRating", &[("id", &album), ("rating", "3")])
            .await;
        k.ok("ann", "setRating", &[("id", &artist), ("rating", "1")])
            .await;
        assert_eq!(user_rating(&k.state, "ann", &album), Some(3));
        assert_eq!(user_rating(&k.state, "ann", &artist), Some(1));
        let song = k.songs[0].as_str();
        for bad in ["6", "-1", "four", "2.5"] {
            let r = k
                .api("ann", "setRating", &[("id", song), ("rating", bad)])
                .await;
            assert_eq!(r["error"]["code"], 0, "{bad}");
            assert!(r["error"]["message"].as_str().unwrap().contains("0 (none)"));
        }
        assert_eq!(k.code("ann", "setRating", &[("id", song)]).await, 10);
        assert_eq!(k.code("ann", "setRating", &[("rating", "3")]).await, 10);
        assert_eq!(
            k.code("ann", "setRating", &[("id", "al-none"), ("rating", "3")])
                .await,
            70
        );
    }
}
