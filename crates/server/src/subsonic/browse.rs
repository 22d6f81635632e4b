//! Browsing by tags: music folders, artists, albums, songs, genres, and
//! the OpenSubsonic extensions list; and the song, album and artist nodes
//! every method shows, with the OpenSubsonic fields (`replayGain`,
//! `genres`, `artists`, `albumArtists`, `displayArtist`, `isCompilation`,
//! `sortName`, `musicBrainzId`, `bitDepth`, `samplingRate`,
//! `channelCount`, `played`, `userRating`, `originalReleaseDate`,
//! `recordLabels`, `moods`, `discTitles`; see
//! <https://opensubsonic.netlify.app/docs/responses/child/>).

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, OnceLock};

use super::access::Access;
use super::response::Node;
use super::views::ArtistGroups;
use super::{Ctx, SubsonicError, SyncResult};
use crate::catalog::{artist_id, date_parts, Album, Artist, Catalog, Song};
use crate::loves::LovedSet;
use crate::plays::{Played, SharedPlays, UserPlays};
use crate::state::AppState;
use crate::time::iso8601;

pub(crate) type Starred = BTreeMap<String, i64>;

/// What a node shows of the user asking: when they starred an id, and
/// their rating of it. A bare [`Starred`] map has stars only; [`marks`]
/// has both.
pub(crate) trait Marks {
    /// When the user starred `id` (UNIX seconds).
    fn starred(&self, id: &str) -> Option<i64>;
    /// The user's rating (1–5) of `id`.
    fn rating(&self, _id: &str) -> Option<i64> {
        None
    }
    /// The user's plays of a song (its entry id): their own listens only.
    fn plays(&self, _song: u32) -> Played {
        Played::default()
    }
    /// The user's plays of an album's songs, summed (the last the latest).
    fn album_plays(&self, _album: &Album) -> Played {
        Played::default()
    }
}

impl Marks for Starred {
    fn starred(&self, id: &str) -> Option<i64> {
        self.get(id).copied()
    }
}

/// The stars and ratings of one user, for the nodes of one answer.
pub(crate) struct UserMarks {
    starred: Starred,
    state: AppState,
    user: String,
    /// The request's catalog, if it has one yet: whether the user rated
    /// any song is known per catalog.
    cat: Option<Arc<Catalog>>,
    /// The user's song ratings, set up on the first song asked about;
    /// `None` when the user has rated no song.
    songs: OnceLock<Option<super::rating::SongRatings>>,
    /// The user's plays; `None` when they played nothing yet.
    plays: Option<SharedPlays>,
    /// The user's loves, read on the first song asked about: a song is
    /// starred when its track is loved ([`crate::loves`]).
    loved: OnceLock<LovedSet>,
}

impl Marks for UserMarks {
    fn starred(&self, id: &str) -> Option<i64> {
        if let Some(t) = self.starred.get(id) {
            return Some(*t);
        }
        let entry: u32 = id.parse().ok()?;
        let loved = self.loved();
        if loved.is_empty() {
            return None;
        }
        let cat = self.catalog();
        loved.song(cat.song_by_entry(entry)?)
    }
    fn rating(&self, id: &str) -> Option<i64> {
        if id.starts_with("al-") || id.starts_with("ar-") {
            return super::rating::user_rating(&self.state, &self.user, id);
        }
        let entry: u32 = id.parse().ok()?;
        self.songs
            .get_or_init(|| {
                let r = super::rating::SongRatings::read(&self.state, &self.user);
                let any = match &self.cat {
                    Some(cat) => self
                        .state
                        .subsonic
                        .views
                        .of(cat)
                        .has_song_ratings(&self.user, || r.any()),
                    None => true,
                };
                any.then_some(r)
            })
            .as_ref()?
            .get(entry)
    }

    fn plays(&self, song: u32) -> Played {
        self.plays
            .as_ref()
            .map_or_else(Played::default, |p| read_plays(p).get(song))
    }

    fn album_plays(&self, album: &Album) -> Played {
        let Some(p) = &self.plays else {
            return Played::default();
        };
        let cat = match &self.cat {
            Some(c) => c.clone(),
            None => self.state.music.catalog(&self.state.db),
        };
        let ids = album
            .songs
            .iter()
            .filter_map(|&n| cat.songs.get(n).map(|s| s.id));
        read_plays(p).sum(ids)
    }
}

fn read_plays(p: &SharedPlays) -> std::sync::RwLockReadGuard<'_, UserPlays> {
    p.read().unwrap_or_else(|e| e.into_inner())
}

impl UserMarks {
    fn loved(&self) -> &LovedSet {
        self.loved
            .get_or_init(|| LovedSet::of(&self.state.listens, &self.user))
    }

    fn catalog(&self) -> Arc<Catalog> {
        match &self.cat {
            Some(c) => c.clone(),
            None => self.state.music.catalog(&self.state.db),
        }
    }

    /// The songs of `cat` the user starred (loved), with when.
    pub(crate) fn starred_songs<'c>(&self, cat: &'c Catalog) -> Vec<(&'c Song, i64)> {
        self.loved().songs(cat)
    }

    /// The user's albums by their plays, as indexes into `cat`: the most
    /// played first (`frequent`) and the latest played first (`recent`).
    /// One pass over the songs the user played.
    pub(crate) fn album_orders(&self, cat: &Catalog) -> (Vec<usize>, Vec<usize>) {
        let Some(p) = &self.plays else {
            return (Vec::new(), Vec::new());
        };
        let mut albums: HashMap<usize, Played> = HashMap::new();
        for (entry, played) in read_plays(p).iter() {
            let Some(n) = cat.song_index(entry) else {
                continue;
            };
            if let Some(a) = cat.album_index(&cat.songs[n].album_id) {
                let e = albums.entry(a).or_default();
                e.count += played.count;
                e.last = e.last.max(played.last);
            }
        }
        let mut frequent: Vec<(usize, Played)> = albums.into_iter().collect();
        let mut recent = frequent.clone();
        frequent.sort_by_key(|&(n, p)| (std::cmp::Reverse(p.count), n));
        recent.sort_by_key(|&(n, p)| (std::cmp::Reverse(p.last), n));
        (
            frequent.into_iter().map(|(n, _)| n).collect(),
            recent.into_iter().map(|(n, _)| n).collect(),
        )
    }
}

impl std::ops::Deref for UserMarks {
    type Target = Starred;
    fn deref(&self) -> &Starred {
        &self.starred
    }
}

/// The asking user's stars and ratings (call on a blocking thread: a
/// rating is a library read).
pub(crate) fn marks(c: &Ctx) -> UserMarks {
    UserMarks {
        starred: c.state.music.userdata.starred(&c.user),
        state: c.state.clone(),
        user: c.user.clone(),
        cat: c.cat.clone(),
        songs: OnceLock::new(),
        plays: c.state.plays.of(&c.user),
        loved: OnceLock::new(),
    }
}

/// `starred` and `userRating` of `id`, as the user has them.
fn user_attrs(n: Node, id: &str, marks: &impl Marks) -> Node {
    let n = match marks.starred(id) {
        Some(t) => n.s("starred", iso8601(t)),
        None => n,
    };
    n.opt_i("userRating", marks.rating(id))
}

/// OpenSubsonic `ArtistID3` references (id and name) of `names`;
/// `known` is a name whose id is at hand (a song's album artist and its
/// [`Song::artist_id`]), which saves hashing it again.
fn artist_refs(names: &[String], known: Option<(&str, &str)>) -> Vec<Node> {
    names
        .iter()
        .map(|name| {
            let id = match known {
                Some((k, id)) if k == name => id.to_owned(),
                _ => artist_id(name),
            };
            Node::sized("artist", 2)
                .s("id", id)
                .s("name", name.as_str())
        })
        .collect()
}

/// OpenSubsonic `ItemGenre`s.
fn genre_nodes(genres: &[String]) -> Vec<Node> {
    genres
        .iter()
        .map(|g| Node::new("genre").s("name", g.clone()))
        .collect()
}

/// An OpenSubsonic `ItemDate` of a tagged date.
fn item_date(name: &'static str, date: &str) -> Option<Node> {
    let (y, m, d) = date_parts(date)?;
    Some(
        Node::new(name)
            .i("year", y)
            .opt_i("month", m)
            .opt_i("day", d),
    )
}

/// Attributes and lists of a song node at most, so it is allocated once.
const SONG_FIELDS: usize = 48;
/// Attributes and lists of an album node at most.
const ALBUM_FIELDS: usize = 28;
/// Attributes and lists of an artist node at most (its albums included).
const ARTIST_FIELDS: usize = 8;

/// A song as a Subsonic `Child`, with the OpenSubsonic fields.
pub(crate) fn song_node(s: &Song, marks: &impl Marks) -> Node {
    let id = s.id.to_string();
    let played = marks.plays(s.id);
    let n = Node::sized("song", SONG_FIELDS)
        .s("id", id.clone())
        .s("parent", s.album_id.clone())
        .b("isDir", false)
        .s("title", s.title.clone())
        .s("album", s.album.clone())
        .s("artist", s.display_artist.clone())
        .opt_i("track", s.track)
        .opt_i("year", s.year)
        .opt_s("genre", s.genre.clone())
        .s("coverArt", s.album_id.clone())
        .opt_i("size", s.size)
        .s("contentType", s.content_type.clone())
        .s("suffix", s.suffix.clone())
        .opt_i("duration", s.duration)
        .opt_i("bitRate", s.bitrate)
        .opt_i("bitDepth", s.bit_depth)
        .opt_i("samplingRate", s.sample_rate)
        .opt_i("channelCount", s.channels)
        .s("path", s.path.clone())
        .i("playCount", played.count)
        .opt_i("discNumber", s.disc)
        .s("created", iso8601(s.added))
        .s("albumId", s.album_id.clone())
        .s("artistId", s.artist_id.clone())
        .s("type", "music")
        .s("mediaType", "song")
        .b("isVideo", false);
    let n = if played.last > 0 {
        n.s("played", iso8601(played.last))
    } else {
        n
    };
    let n = user_attrs(n, &id, marks)
        .opt_i("bpm", s.bpm)
        .opt_s("comment", s.comment.clone())
        .s("sortName", s.sort_title.clone())
        .opt_s("musicBrainzId", s.mbid.clone())
        .s("displayArtist", s.display_artist.clone())
        .s("displayAlbumArtist", s.display_album_artist.clone())
        .opt_s(
            "displayComposer",
            (!s.composers.is_empty()).then(|| s.composers.join(", ")),
        );
    let rg = &s.replay_gain;
    let known = Some((s.album_artist.as_str(), s.artist_id.as_str()));
    let contributors = s
        .composers
        .iter()
        .map(|c| {
            Node::new("contributor").s("role", "composer").child(
                Node::new("artist")
                    .s("id", artist_id(c))
                    .s("name", c.clone()),
            )
        })
        .collect();
    n.strs("isrc", s.isrc.clone())
        .list("genres", genre_nodes(&s.genres))
        .list("artists", artist_refs(&s.artists, known))
        .list("albumArtists", artist_refs(&s.album_artists, known))
        .list("contributors", contributors)
        .strs("moods", s.moods.clone())
        .child(
            Node::new("replayGain")
                .opt_f("trackGain", rg.track_gain)
                .opt_f("albumGain", rg.album_gain)
                .opt_f("trackPeak", rg.track_peak)
                .opt_f("albumPeak", rg.album_peak),
        )
}

/// An album as a Subsonic `AlbumID3`, with the OpenSubsonic fields.
pub(crate) fn album_node(a: &Album, marks: &impl Marks) -> Node {
    let played = marks.album_plays(a);
    let n = Node::sized("album", ALBUM_FIELDS)
        .s("id", a.id.clone())
        .s("name", a.name.clone())
        .s("title", a.name.clone())
        .s("artist", a.artist.clone())
        .s("artistId", a.artist_id.clone())
        .s("coverArt", a.id.clone())
        .i("songCount", a.songs.len() as i64)
        .i("duration", a.duration)
        .i("playCount", played.count)
        .s("created", iso8601(a.created))
        .opt_i("year", a.year)
        .opt_s("genre", a.genre.clone());
    let n = if played.last > 0 {
        n.s("played", iso8601(played.last))
    } else {
        n
    };
    let n = user_attrs(n, &a.id, marks)
        .s("displayArtist", a.artist.clone())
        .b("isCompilation", a.compilation)
        .s("sortName", a.sort_name.clone())
        .opt_s("musicBrainzId", a.mbid.clone());
    let n = match a
        .original_date
        .as_deref()
        .and_then(|d| item_date("originalReleaseDate", d))
    {
        Some(d) => n.child(d),
        None => n,
    };
    let labels = a
        .labels
        .iter()
        .map(|l| Node::new("label").s("name", l.clone()))
        .collect();
    let discs = a
        .disc_titles
        .iter()
        .map(|(disc, title)| Node::new("disc").i("disc", *disc).s("title", title.clone()))
        .collect();
    n.list("genres", genre_nodes(&a.genres))
        .list("artists", artist_refs(&a.artists, None))
        .list("recordLabels", labels)
        .strs("moods", a.moods.clone())
        .strs("releaseTypes", a.release_types.clone())
        .list("discTitles", discs)
}

/// An artist as a Subsonic `ArtistID3`, with the OpenSubsonic fields.
pub(crate) fn artist_node(cat: &Catalog, a: &Artist, marks: &impl Marks) -> Node {
    let n = Node::sized("artist", ARTIST_FIELDS)
        .s("id", a.id.clone())
        .s("name", a.name.clone())
        .i("albumCount", a.albums.len() as i64);
    let n = match a.albums.first() {
        Some(&al) => n.s("coverArt", cat.albums[al].id.clone()),
        None => n,
    };
    user_attrs(n, &a.id, marks)
        .s("sortName", a.sort_name.clone())
        .opt_s("musicBrainzId", a.mbid.clone())
}

/// The OpenSubsonic extensions this server honours, with their versions
/// (names as https://opensubsonic.netlify.app/docs/extensions/ spells
/// them).
pub const EXTENSIONS: &[(&str, i64)] = &[
    ("apiKeyAuthentication", 1),
    ("formPost", 1),
    ("songLyrics", 1),
    ("indexBasedQueue", 1),
    ("transcodeOffset", 1),
];

pub(crate) fn extensions() -> Node {
    Node::new("").list(
        "openSubsonicExtensions",
        EXTENSIONS
            .iter()
            .map(|(name, v)| Node::new("e").s("name", *name).ints("versions", vec![*v]))
            .collect(),
    )
}

/// The music folders the user is granted.
pub(crate) fn music_folders(c: &mut Ctx) -> SyncResult {
    let access = c.access();
    let folders = c
        .state
        .music
        .roots()
        .iter()
        .enumerate()
        .filter(|(n, _)| access.folder(*n))
        .map(|(n, r)| {
            let name = r
                .file_name()
                .map_or_else(|| r.to_string_lossy(), |f| f.to_string_lossy())
                .into_owned();
            Node::new("musicFolder")
                .i("id", n as i64 + 1)
                .s("name", name)
        })
        .collect();
    Ok(Some(Node::new("musicFolders").list("musicFolder", folders)))
}

pub(crate) fn index_letter(name: &str) -> String {
    match name.chars().next() {
        Some(ch) if ch.is_alphabetic() => ch.to_uppercase().collect(),
        _ => "#".into(),
    }
}

/// The artists `scope` sees under their index letters, cached per
/// catalog and access ([`super::views::Views::artist_groups`]).
fn grouped(c: &mut Ctx) -> Result<(Arc<Catalog>, Access, Arc<ArtistGroups>), SubsonicError> {
    let scope = c.scope()?;
    let cat = c.cat();
    let groups = c
        .state
        .subsonic
        .views
        .of(&cat)
        .artist_groups(&scope, |cat| group_artists(cat, &scope));
    Ok((cat, scope, groups))
}

/// The artists `scope` sees, in catalog order, under their index letters.
fn group_artists(cat: &Catalog, scope: &Access) -> ArtistGroups {
    let mut groups: ArtistGroups = Vec::new();
    for (n, a) in cat.artists.iter().enumerate() {
        if !scope.sees_artist(cat, a) {
            continue;
        }
        let l = index_letter(&a.sort_name);
        match groups.last_mut() {
            Some((g, v)) if *g == l => v.push(n),
            _ => groups.push((l, vec![n])),
        }
    }
    groups
}

/// The `index` nodes of `groups`, each artist drawn by `artist`.
fn index_nodes(
    cat: &Catalog,
    groups: &ArtistGroups,
    artist: impl Fn(&Artist) -> Node,
) -> Vec<Node> {
    groups
        .iter()
        .map(|(l, v)| {
            let artists = v.iter().map(|&n| artist(&cat.artists[n])).collect();
            Node::new("index")
                .s("name", l.as_str())
                .list("artist", artists)
        })
        .collect()
}

pub(crate) fn artists(c: &mut Ctx) -> SyncResult {
    let (cat, scope, groups) = grouped(c)?;
    let marks = marks(c);
    let idx = index_nodes(&cat, &groups, |a| {
        artist_node(&cat, &scope.artist_view(&cat, a), &marks)
    });
    Ok(Some(
        Node::new("artists")
            .s("ignoredArticles", cat.ignored_articles.join(" "))
            .list("index", idx),
    ))
}

/// What a lookup by `id` needs: the id, the catalog, what the user may
/// see, the user's stars and ratings.
fn by_id(c: &mut Ctx) -> Result<(String, Arc<Catalog>, Access, UserMarks), SubsonicError> {
    let id = c.req("id")?.to_owned();
    let cat = c.cat();
    Ok((id, cat, c.access(), marks(c)))
}

/// An album's songs as Subsonic `Child`ren (of an album view: the
/// visible ones).
fn song_nodes(cat: &Catalog, a: &Album, starred: &impl Marks) -> Vec<Node> {
    a.songs
        .iter()
        .map(|&n| song_node(&cat.songs[n], starred))
        .collect()
}

pub(crate) fn artist(c: &mut Ctx) -> SyncResult {
    let (id, cat, access, starred) = by_id(c)?;
    let a = access.artist_view(&cat, access.artist(&cat, &id)?);
    let albums = a
        .albums
        .iter()
        .map(|&n| album_node(&access.album_view(&cat, &cat.albums[n]), &starred))
        .collect();
    Ok(Some(artist_node(&cat, &a, &starred).list("album", albums)))
}

pub(crate) fn album(c: &mut Ctx) -> SyncResult {
    let (id, cat, access, starred) = by_id(c)?;
    let a = access.album_view(&cat, access.album(&cat, &id)?);
    let songs = song_nodes(&cat, &a, &starred);
    Ok(Some(album_node(&a, &starred).list("song", songs)))
}

pub(crate) fn song(c: &mut Ctx) -> SyncResult {
    let (id, cat, access, starred) = by_id(c)?;
    let s = access.song(&cat, &id)?;
    Ok(Some(song_node(s, &starred)))
}

/// The genres of the songs the user may see, with their counts.
pub(crate) fn genres(c: &mut Ctx) -> SyncResult {
    let access = c.access();
    let cat = c.cat();
    let mut g: HashMap<&str, (i64, std::collections::HashSet<&str>)> = HashMap::new();
    for s in cat.songs.iter().filter(|s| access.sees_song(s)) {
        for name in &s.genres {
            let e = g.entry(name).or_default();
            e.0 += 1;
            e.1.insert(&s.album_id);
        }
    }
    let mut v: Vec<_> = g.into_iter().collect();
    v.sort_by(|a, b| a.0.cmp(b.0));
    let nodes = v
        .into_iter()
        .map(|(name, (songs, albums))| {
            // The name is the element's text (`value` in JSON).
            Node::new("genre")
                .i("songCount", songs)
                .i("albumCount", albums.len() as i64)
                .text(name)
        })
        .collect();
    Ok(Some(Node::new("genres").list("genre", nodes)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::ReplayGain;
    use spindle_app::testlib;

    fn song() -> Song {
        let cat = testlib::catalog(&[("A/x.flac", "Ann", "Both", "Duet", "Rock", 0)]);
        let mut s = (*cat.songs[0]).clone();
        s.artists = vec!["Ann".into(), "Bob".into()];
        s.display_artist = "Ann & Bob".into();
        s.genres = vec!["Rock".into(), "Jazz".into()];
        s.moods = vec!["Calm".into()];
        s.replay_gain = ReplayGain {
            track_gain: Some(-6.5),
            album_peak: Some(0.9),
            ..ReplayGain::default()
        };
        s.bit_depth = Some(16);
        s.sample_rate = Some(44100);
        s.channels = Some(2);
        s
    }

    struct Rated;
    impl Marks for Rated {
        fn starred(&self, _: &str) -> Option<i64> {
            None
        }
        fn rating(&self, _: &str) -> Option<i64> {
            Some(4)
        }
    }

    #[test]
    fn a_song_shows_every_artist_and_genre_and_its_replay_gain() {
        let j = song_node(&song(), &Starred::new()).to_json();
        assert_eq!(j["artist"], "Ann & Bob");
        assert_eq!(j["displayArtist"], "Ann & Bob");
        let names = |k: &str| -> Vec<String> {
            j[k].as_array()
                .unwrap()
                .iter()
                .map(|a| a["name"].as_str().unwrap().to_owned())
                .collect()
        };
        assert_eq!(names("artists"), ["Ann", "Bob"]);
        assert_eq!(j["artists"][1]["id"], artist_id("Bob"));
        assert_eq!(names("genres"), ["Rock", "Jazz"]);
        assert_eq!(names("albumArtists"), ["Ann"]);
        assert_eq!(j["moods"], serde_json::json!(["Calm"]));
        assert_eq!(
            j["replayGain"],
            serde_json::json!({"trackGain": -6.5, "albumPeak": 0.9})
        );
        assert_eq!(
            (&j["bitDepth"], &j["samplingRate"], &j["channelCount"]),
            (
                &serde_json::json!(16),
                &serde_json::json!(44100),
                &serde_json::json!(2)
            )
        );
        assert_eq!(j["mediaType"], "song");
        assert!(j.get("userRating").is_none());
        let x = song_node(&song(), &Rated).to_xml();
        assert!(x.contains(r#"userRating="4""#), "{x}");
        assert!(x.contains(r#"<artists id=""#), "{x}");
        assert!(
            x.contains(r#"<replayGain trackGain="-6.5" albumPeak="0.9"/>"#),
            "{x}"
        );
    }

    #[test]
    fn an_album_shows_compilation_dates_labels_and_disc_titles() {
        let cat = testlib::catalog(&[("A/x.flac", "Ann", "Both", "Duet", "Rock", 0)]);
        let mut a = cat.albums[0].clone();
        a.compilation = true;
        a.original_date = Some("1999-05".into());
        a.labels = vec!["Label One".into()];
        a.disc_titles = vec![(1, "First".into())];
        let j = album_node(&a, &Rated).to_json();
        assert_eq!(j["isCompilation"], true);
        assert_eq!(
            j["originalReleaseDate"],
            serde_json::json!({"year": 1999, "month": 5})
        );
        assert_eq!(
            j["recordLabels"],
            serde_json::json!([{"name": "Label One"}])
        );
        assert_eq!(
            j["discTitles"],
            serde_json::json!([{"disc": 1, "title": "First"}])
        );
        assert_eq!(j["genres"], serde_json::json!([{"name": "Rock"}]));
        assert_eq!(j["userRating"], 4);
        assert_eq!(j["sortName"], "Both");
    }

    #[tokio::test]
    async fn a_first_song_rating_shows_in_the_next_answer_after_an_unrated_one() {
        let k = crate::subsonic::testkit::Kit::new();
        let (a, b) = (k.songs[0].clone(), k.songs[1].clone());
        // The catalog's views now remember that ann rated no song.
        let r = k.api("ann", "getSong", &[("id", &a)]).await;
        assert!(r["song"].get("userRating").is_none(), "{r}");
        k.ok("ann", "setRating", &[("id", &a), ("rating", "4")])
            .await;
        let r = k.api("ann", "getSong", &[("id", &a)]).await;
        assert_eq!(r["song"]["userRating"], 4, "{r}");
        // A changed value keeps the library's size: still read live.
        k.ok("ann", "setRating", &[("id", &a), ("rating", "2")])
            .await;
        k.ok("ann", "setRating", &[("id", &b), ("rating", "5")])
            .await;
        let r = k.api("ann", "getSong", &[("id", &a)]).await;
        assert_eq!(r["song"]["userRating"], 2, "{r}");
        let r = k.api("bob", "getSong", &[("id", &b)]).await;
        assert!(r["song"].get("userRating").is_none(), "per user: {r}");
        k.ok("ann", "setRating", &[("id", &a), ("rating", "0")])
            .await;
        let r = k.api("ann", "getSong", &[("id", &a)]).await;
        assert!(r["song"].get("userRating").is_none(), "0 removes: {r}");
    }

    #[test]
    fn the_extensions_list_names_what_the_server_honours() {
        let j = extensions().to_json();
        let names: Vec<&str> = j["openSubsonicExtensions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["name"].as_str().unwrap())
            .collect();
        for name in [
            "apiKeyAuthentication",
            "formPost",
            "songLyrics",
            "indexBasedQueue",
            "transcodeOffset",
        ] {
            assert!(names.contains(&name), "{name} missing from {names:?}");
        }
    }
}
