//! What other servers ask an outside service for, computed here from the
//! library and the listening history: `getTopSongs`, `getSimilarSongs`
//! and `getSimilarSongs2`, `getArtistInfo` and `getArtistInfo2`,
//! `getAlbumInfo` and `getAlbumInfo2`.
//!
//! * Top songs: the artist's songs by their plays in the history of every
//!   user (its charts, matched to the library by title, caselessly).
//! * Similar artists and songs: [`crate::similar`] (co-listening and
//!   shared genres). The songs are drawn from the artist and its similar
//!   artists, the better the likelier, shuffled by a generator seeded with
//!   the request, so the same request gets the same list.
//! * Biography and notes: a text file beside the music (`artist.txt`,
//!   `biography.txt` or `bio.txt` in the artist's folder; `notes.txt`,
//!   `album.txt` or `review.txt` in the album's), else empty.
//! * Images: URLs of this server's covers (`/img/ID/SIZE/SIGNATURE`,
//!   [`signed_image`]), for the artist (when its folder holds an `artist.*`
//!   image, see [`artist_image`]) or its first album, and for the album.
//!   They carry no credentials: each is signed by the server for that one
//!   image and size, so a client loads it as it is. The URL starts from
//!   `Config::public_url` or else the request's Host and the base path.

use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use spindle_listens::{ChartKind, ChartQuery};

use super::access::Access;
use super::browse::{artist_node, song_node};
use super::folders::artist_v1;
use super::response::Node;
use super::{Ctx, SubsonicError, SyncResult};
use crate::catalog::{artist_id, Album, Artist, Catalog, Song};
use crate::similar::key;

/// The most songs or similar artists one request returns.
pub const MAX_COUNT: usize = 500;
/// The most rows of one user's chart of an artist's tracks read for
/// `getTopSongs`.
pub const TOP_TRACKS_PER_USER: usize = 1000;
/// Names of an artist's picture in its folder (any of these extensions).
pub const ARTIST_IMAGE_STEMS: &[&str] = &["artist"];
/// Extensions of pictures looked for.
pub const IMAGE_EXTENSIONS: &[&str] = &["jpg", "jpeg", "png", "webp"];
/// Files whose text is an artist's biography.
pub const BIOGRAPHY_FILES: &[&str] = &["artist.txt", "biography.txt", "bio.txt"];
/// Files whose text is an album's notes.
pub const NOTES_FILES: &[&str] = &["notes.txt", "album.txt", "review.txt"];

fn count(c: &Ctx, name: &str, default: i64) -> Result<usize, SubsonicError> {
    Ok(c.int(name)?.unwrap_or(default).clamp(0, MAX_COUNT as i64) as usize)
}

/// `getTopSongs`: `artist` (a name), `count` (50 by default).
pub(crate) fn top_songs(c: &mut Ctx) -> SyncResult {
    let name = c.req("artist")?.to_owned();
    let count = count(c, "count", 50)?;
    let cat = c.cat();
    let access = c.access();
    let k = key(&name);
    let mut plays: std::collections::HashMap<String, u64> = std::collections::HashMap::new();
    // Only the plays the caller may know of: theirs and public users'.
    let users = c.state.accounts.user_names().into_iter();
    for u in users.filter(|u| super::privacy::sees_listening_of(c, u)) {
        let q = ChartQuery {
            artist: Some(&name),
            limit: TOP_TRACKS_PER_USER,
            page: 1,
            ..ChartQuery::default()
        };
        for r in c.state.listens.chart(&u, ChartKind::Tracks, &q).rows {
            *plays.entry(key(&r.name)).or_default() += u64::from(r.playcount);
        }
    }
    let mut songs: Vec<(u64, &Song)> = cat
        .songs
        .iter()
        .filter(|s| access.sees_song(s))
        .filter(|s| key(&s.artist) == k || key(&s.album_artist) == k)
        .filter_map(|s| plays.get(&key(&s.title)).map(|&n| (n, &**s)))
        .collect();
    songs.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.title.cmp(&b.1.title)));
    // One song per title: the same recording on several albums counts once.
    let mut seen = std::collections::HashSet::new();
    songs.retain(|(_, s)| seen.insert(key(&s.title)));
    let starred = super::browse::marks(c);
    let nodes = songs
        .into_iter()
        .take(count)
        .map(|(_, s)| song_node(s, &starred))
        .collect();
    Ok(Some(Node::new("topSongs").list("song", nodes)))
}

/// The artist an id stands for: an artist, an album's artist, a song's
/// album artist, or the album artist of a folder's first song; of what
/// `access` lets the user see.
fn artist_of<'a>(c: &Ctx, cat: &'a Arc<Catalog>, access: &Access, id: &str) -> Option<&'a Artist> {
    if access.hides(cat, id) {
        return None;
    }
    let visible = |a: &&Artist| access.sees_artist(cat, a);
    if let Some(a) = cat.artist(id) {
        return Some(a);
    }
    if let Some(al) = cat.album(id) {
        return cat.artist(&al.artist_id).filter(visible);
    }
    if let Some(s) = cat.song(id) {
        return cat.artist(&s.artist_id).filter(visible);
    }
    let views = c.state.subsonic.views.of(cat);
    let dir = views.tree(c.state.music.roots()).get(id)?;
    let song = dir.cover.filter(|_| access.sees_dir(dir))?;
    cat.artist(&cat.songs[song].artist_id).filter(visible)
}

/// The artist key an id stands for, for similarity (a song's own
/// artist); a hidden id stands for none.
fn seed_of(cat: &Catalog, access: &Access, id: &str) -> Option<String> {
    if access.hides(cat, id) {
        return None;
    }
    if let Some(a) = cat.artist(id) {
        return Some(key(&a.name));
    }
    if let Some(al) = cat.album(id) {
        return Some(key(&al.artist));
    }
    cat.song(id).map(|s| key(&s.artist))
}

/// A generator seeded with the request's parameters.
fn request_rng(parts: &[&str]) -> rand::rngs::StdRng {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    parts.hash(&mut h);
    rand::rngs::StdRng::seed_from_u64(h.finish())
}

/// `count` songs from `seed` and its similar artists, the better an
/// artist the likelier (the seed itself counts as score 1), no song
/// twice, only songs `keep` keeps.
fn draw(
    sim: &crate::similar::Similar,
    seed: &str,
    count: usize,
    keep: impl Fn(usize) -> bool,
    rng: &mut impl Rng,
) -> Vec<usize> {
    let mut pools: Vec<(f64, Vec<usize>)> = std::iter::once((seed.to_owned(), 1.0))
        .chain(sim.artists(seed, 50))
        .map(|(a, score)| {
            let mut v: Vec<usize> = sim
                .songs_of(&a)
                .iter()
                .copied()
                .filter(|&n| keep(n))
                .collect();
            v.shuffle(rng);
            (score, v)
        })
        .filter(|(_, v)| !v.is_empty())
        .collect();
    let mut out: Vec<usize> = Vec::new();
    let mut seen = std::collections::HashSet::new();
    while out.len() < count && !pools.is_empty() {
        let total: f64 = pools.iter().map(|p| p.0).sum();
        let mut x = rng.gen::<f64>() * total;
        let mut i = 0;
        while i + 1 < pools.len() && x >= pools[i].0 {
            x -= pools[i].0;
            i += 1;
        }
        if let Some(n) = pools[i].1.pop() {
            if seen.insert(n) {
                out.push(n);
            }
        }
        if pools[i].1.is_empty() {
            pools.swap_remove(i);
        }
    }
    out
}

fn similar_songs(c: &mut Ctx, v2: bool) -> SyncResult {
    let id = c.req("id")?.to_owned();
    let count = count(c, "count", 50)?;
    let cat = c.cat();
    let access = c.access();
    let seed =
        seed_of(&cat, &access, &id).ok_or(SubsonicError::NotFound("Song, album or artist"))?;
    let users = c.state.accounts.user_names();
    let sim = c.state.similar.get(&cat, &c.state.listens, &users);
    let skip = cat.song(&id).and_then(|s| cat.song_index(s.id));
    let mut rng = request_rng(&[&id, &count.to_string()]);
    let keep = |n: usize| Some(n) != skip && access.sees_song(&cat.songs[n]);
    let picked = draw(&sim, &seed, count, keep, &mut rng);
    let starred = super::browse::marks(c);
    let songs = picked
        .into_iter()
        .map(|n| song_node(&cat.songs[n], &starred))
        .collect();
    let name = if v2 { "similarSongs2" } else { "similarSongs" };
    Ok(Some(Node::new(name).list("song", songs)))
}

pub(crate) fn similar_songs1(c: &mut Ctx) -> SyncResult {
    similar_songs(c, false)
}

pub(crate) fn similar_songs2(c: &mut Ctx) -> SyncResult {
    similar_songs(c, true)
}

/// The folder below a music folder most likely the artist's own: the
/// folder holding all its songs, or the one above it when that is an
/// album's (each of the first ones that lie inside the music folder).
fn artist_dirs(cat: &Catalog, a: &Artist, roots: &[PathBuf]) -> Vec<PathBuf> {
    let mut common: Option<PathBuf> = None;
    let mut folder = None;
    for &al in &a.albums {
        for &s in &cat.albums[al].songs {
            let song = &cat.songs[s];
            let Some(dir) = song.file.parent() else {
                continue;
            };
            folder.get_or_insert(song.folder);
            common = Some(match common {
                None => dir.to_path_buf(),
                Some(c) => c
                    .ancestors()
                    .find(|p| dir.starts_with(p))
                    .map(Path::to_path_buf)
                    .unwrap_or_default(),
            });
        }
    }
    let (Some(common), Some(root)) = (common, folder.and_then(|f| roots.get(f))) else {
        return Vec::new();
    };
    common
        .ancestors()
        .take(2)
        .filter(|p| p.starts_with(root) && *p != root.as_path())
        .map(Path::to_path_buf)
        .collect()
}

/// The picture of an artist in its folder (`artist.jpg`, `artist.png`,
/// …), if there is one: what `getCoverArt` of an artist id may serve.
pub(crate) fn artist_image(cat: &Catalog, a: &Artist, roots: &[PathBuf]) -> Option<PathBuf> {
    artist_dirs(cat, a, roots).into_iter().find_map(|d| {
        ARTIST_IMAGE_STEMS.iter().find_map(|stem| {
            IMAGE_EXTENSIONS.iter().find_map(|ext| {
                let p = d.join(format!("{stem}.{ext}"));
                p.is_file().then_some(p)
            })
        })
    })
}

/// The first of `names` in `dirs` that the song's music folder lets us
/// read (capped at the sidecar limit), as text.
fn read_text(c: &Ctx, song: &Song, dirs: &[PathBuf], names: &[&str]) -> String {
    let Ok(root) = c.state.music.folder_of(song) else {
        return String::new();
    };
    for d in dirs {
        for n in names {
            if let Ok(b) = root.read_capped(&d.join(n), spindle_media::SIDECAR_CAP) {
                return String::from_utf8_lossy(&b).trim().to_owned();
            }
        }
    }
    String::new()
}

/// The URL of the cover of `id` at `size` pixels, signed for that image
/// alone ([`IMAGE_ROUTE`]): no credentials of the caller's in it.
fn image_url(c: &Ctx, id: &str, size: u32) -> String {
    let base = match &c.state.config.public_url {
        Some(u) => u.trim_end_matches('/').to_owned(),
        None => c.host.as_deref().map_or_else(String::new, |h| {
            format!("http://{h}{}", c.state.config.base_path)
        }),
    };
    let sig = c.state.accounts.url_signature(&image_message(id, size));
    let id: String = form_urlencoded::byte_serialize(id.as_bytes()).collect();
    format!("{base}/img/{id}/{size}/{sig}")
}

/// What an image URL's signature signs.
fn image_message(id: &str, size: u32) -> String {
    format!("cover\0{id}\0{size}")
}

/// The route of the signed image URLs: `/img/ID/SIZE/SIGNATURE`.
pub(crate) const IMAGE_ROUTE: &str = "/img/{id}/{size}/{sig}";

/// `GET /img/ID/SIZE/SIGNATURE`: the cover of `ID` at `SIZE` pixels,
/// without a login, when the signature is the server's for that id and
/// size (a URL `getArtistInfo` or `getAlbumInfo` handed out to a user who
/// could see the item); 404 otherwise.
pub(crate) async fn signed_image(
    axum::extract::State(st): axum::extract::State<crate::AppState>,
    axum::extract::Path((id, size, sig)): axum::extract::Path<(String, u32, String)>,
    headers: axum::http::HeaderMap,
) -> axum::response::Response {
    use axum::response::IntoResponse;
    let not_found = || (axum::http::StatusCode::NOT_FOUND, "no such image\n").into_response();
    if !st
        .accounts
        .url_signature_ok(&image_message(&id, size), &sig)
    {
        return not_found();
    }
    // Anonymous: these requests share one user's part of the resize pool
    // (at most half of it), so they cannot take every user's turn.
    crate::cover::answer(&st, id, Some(size), &headers, "(signed image)")
        .await
        .unwrap_or_else(|_| not_found())
}

fn with_images(n: Node, c: &Ctx, id: &str) -> Node {
    n.text_el("smallImageUrl", image_url(c, id, 150))
        .text_el("mediumImageUrl", image_url(c, id, 300))
        .text_el("largeImageUrl", image_url(c, id, 600))
}

fn artist_info(c: &mut Ctx, v2: bool) -> SyncResult {
    let id = c.req("id")?.to_owned();
    let count = count(c, "count", 20)?;
    let cat = c.cat();
    let access = c.access();
    let a = artist_of(c, &cat, &access, &id).ok_or(SubsonicError::NotFound("Artist"))?;
    let view = access.artist_view(&cat, a);
    let a = &*view;
    let roots = c.state.music.roots().to_vec();
    let first = a
        .albums
        .first()
        .and_then(|&al| cat.albums[al].songs.first())
        .map(|&s| &cat.songs[s]);
    let bio = match first {
        Some(s) => read_text(c, s, &artist_dirs(&cat, a, &roots), BIOGRAPHY_FILES),
        None => String::new(),
    };
    let image = if artist_image(&cat, a, &roots).is_some() {
        Some(a.id.clone())
    } else {
        a.albums.first().map(|&al| cat.albums[al].id.clone())
    };
    let users = c.state.accounts.user_names();
    let sim = c.state.similar.get(&cat, &c.state.listens, &users);
    let starred = super::browse::marks(c);
    let similar: Vec<Node> = sim
        .artists(&key(&a.name), MAX_COUNT)
        .into_iter()
        .filter_map(|(k, _)| cat.artist(&artist_id(&k)))
        .filter(|b| access.sees_artist(&cat, b))
        .take(count)
        .map(|b| {
            if v2 {
                artist_node(&cat, &access.artist_view(&cat, b), &starred)
            } else {
                artist_v1(b, &starred)
            }
        })
        .collect();
    let n = Node::new(if v2 { "artistInfo2" } else { "artistInfo" })
        .text_el("biography", bio)
        .opt_text_el("musicBrainzId", a.mbid.clone());
    let n = match image {
        Some(img) => with_images(n, c, &img),
        None => n,
    };
    Ok(Some(n.list("similarArtist", similar)))
}

pub(crate) fn artist_info1(c: &mut Ctx) -> SyncResult {
    artist_info(c, false)
}

pub(crate) fn artist_info2(c: &mut Ctx) -> SyncResult {
    artist_info(c, true)
}

fn album_info(c: &mut Ctx) -> SyncResult {
    let id = c.req("id")?.to_owned();
    let cat = c.cat();
    let access = c.access();
    let al: &Album = match access.album(&cat, &id) {
        Ok(a) => a,
        Err(_) => access
            .song(&cat, &id)
            .ok()
            .and_then(|s| cat.album(&s.album_id))
            .ok_or(SubsonicError::NotFound("Album"))?,
    };
    let view = access.album_view(&cat, al);
    let al = &*view;
    let first = al.songs.first().map(|&s| &cat.songs[s]);
    let notes = match first {
        Some(s) => {
            let dirs: Vec<PathBuf> = s.file.parent().map(Path::to_path_buf).into_iter().collect();
            read_text(c, s, &dirs, NOTES_FILES)
        }
        None => String::new(),
    };
    let n = Node::new("albumInfo")
        .text_el("notes", notes)
        .opt_text_el("musicBrainzId", al.mbid.clone());
    Ok(Some(with_images(n, c, &al.id)))
}

/// `getAlbumInfo` and `getAlbumInfo2` answer alike (`albumInfo`).
pub(crate) fn album_info1(c: &mut Ctx) -> SyncResult {
    album_info(c)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::similar::{CoListening, Similar};

    #[test]
    fn a_drawn_list_is_the_same_for_the_same_request_and_never_repeats_a_song() {
        let cat = spindle_app::testlib::catalog(&[
            ("a/1.flac", "Alpha", "A1", "t1", "Jazz", 0),
            ("a/2.flac", "Alpha", "A1", "t2", "Jazz", 0),
            ("b/1.flac", "Beta", "B1", "t3", "Jazz", 0),
            ("b/2.flac", "Beta", "B1", "t4", "Jazz", 0),
            ("c/1.flac", "Gamma", "C1", "t5", "Noise", 0),
        ]);
        let sim = Similar::new(Arc::new(CoListening::default()), &cat);
        let one = draw(&sim, "alpha", 10, |n| n != 0, &mut request_rng(&["x"]));
        let two = draw(&sim, "alpha", 10, |n| n != 0, &mut request_rng(&["x"]));
        assert_eq!(one, two);
        let mut sorted = one.clone();
        sorted.sort_unstable();
        // Alpha's other song and Beta's two; never Gamma (nothing shared),
        // never the song asked about.
        assert_eq!(sorted, vec![1, 2, 3]);
    }

    #[tokio::test]
    async fn artist_and_album_infos_carry_their_texts_as_elements_in_xml_and_strings_in_json() {
        let k = crate::subsonic::testkit::Kit::new();
        let song = k.ok("ann", "getSong", &[("id", &k.songs[0])]).await;
        let album = song["song"]["albumId"].as_str().unwrap().to_owned();
        let artist = song["song"]["artistId"].as_str().unwrap().to_owned();
        // The Subsonic schema makes these child elements (a validating or
        // JAXB client reads nothing from attributes of those names).
        let x = k.xml("ann", "getArtistInfo2", &[("id", &artist)]).await;
        assert!(x.contains("<artistInfo2><biography>"), "{x}");
        assert!(x.contains("</biography><smallImageUrl>http://"), "{x}");
        assert!(
            !x.contains(" biography=") && !x.contains(" smallImageUrl="),
            "{x}"
        );
        let x = k.xml("ann", "getAlbumInfo2", &[("id", &album)]).await;
        assert!(x.contains("<albumInfo><notes>"), "{x}");
        assert!(x.contains("</smallImageUrl><mediumImageUrl>http://"), "{x}");
        assert!(
            !x.contains(" notes=") && !x.contains(" largeImageUrl="),
            "{x}"
        );
        // JSON is unchanged: plain string fields.
        let j = k.ok("ann", "getArtistInfo2", &[("id", &artist)]).await;
        assert!(j["artistInfo2"]["biography"].is_string(), "{j}");
        assert!(
            j["artistInfo2"]["largeImageUrl"]
                .as_str()
                .unwrap()
                .contains("/600/"),
            "{j}"
        );
        let j = k.ok("ann", "getAlbumInfo", &[("id", &album)]).await;
        assert!(j["albumInfo"]["notes"].is_string(), "{j}");
        assert!(
            j["albumInfo"]["smallImageUrl"]
                .as_str()
                .unwrap()
                .contains("/150/"),
            "{j}"
        );
    }

    #[tokio::test]
    async fn image_urls_carry_no_credentials_and_load_by_their_signature_alone() {
        let k = crate::subsonic::testkit::Kit::new();
        let (key, _) = k.state.accounts.add_app_key("ann", "app", 0).unwrap();
        let album = k
            .ok("ann", "getAlbumList2", &[("type", "alphabeticalByName")])
            .await;
        let album = album["albumList2"]["album"][0].clone();
        let artist = album["artistId"].as_str().unwrap().to_owned();
        let r = k.ok("ann", "getArtistInfo2", &[("id", &artist)]).await;
        let url = r["artistInfo2"]["largeImageUrl"]
            .as_str()
            .unwrap()
            .to_owned();
        let (_, _, body) = k
            .get(&format!(
                "/rest/getArtistInfo?apiKey={key}&f=json&id={artist}"
            ))
            .await;
        let by_key = String::from_utf8_lossy(&body).into_owned();
        for secret in ["p=", "u=", "t=", "s=", "apiKey", key.as_str()] {
            assert!(!url.contains(secret), "{secret} in {url}");
        }
        assert!(
            !by_key.contains(&key) && !by_key.contains("apiKey="),
            "{by_key}"
        );
        let path = url.strip_prefix("http://music.example:4533").unwrap();
        // The artist's own image, or its first album's.
        let img_id = path.split('/').nth(2).unwrap().to_owned();
        assert!(path.starts_with(&format!("/img/{img_id}/600/")), "{path}");
        let (status, _, signed) = k.get(path).await;
        let (_, h, direct) = k
            .get(&format!(
                "/rest/getCoverArt?u=ann&p=pw&id={artist}&size=600"
            ))
            .await;
        if h["content-type"].to_str().unwrap().starts_with("image/") {
            assert_eq!(status, 200);
            assert_eq!(signed, direct);
        }
        // Another size, another id or a changed signature: nothing.
        let (status, _, _) = k.get(&path.replace("/600/", "/601/")).await;
        assert_eq!(status, 404);
        let mut bad = path.to_owned();
        let last = bad.pop().unwrap();
        bad.push(if last == '0' { '1' } else { '0' });
        assert_eq!(k.get(&bad).await.0, 404);
        let r = k
            .ok(
                "ann",
                "getAlbumInfo2",
                &[("id", album["id"].as_str().unwrap())],
            )
            .await;
        let url = r["albumInfo"]["smallImageUrl"].as_str().unwrap();
        assert!(!url.contains("p=") && !url.contains("u="), "{url}");
    }
}
