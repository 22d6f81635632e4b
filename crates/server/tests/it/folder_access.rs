//! Per-user music folder access: a user granted one music
//! folder of two sees nothing of the other in any Subsonic method or web
//! UI route. Every method of `spindle_server::subsonic::methods::TABLE` (the
//! table the dispatcher reads) is called, in JSON
//! and XML, and no answer may name a song, album, artist or folder of the
//! hidden folder; ids of the hidden folder answer error 70 exactly as
//! unknown ids do. A method without a case here fails the test.

use std::collections::HashSet;
use std::path::Path;
use std::sync::Arc;

use crate::common::{send, session, Setup};
use axum::body::Body;
use axum::http::{header, Request, StatusCode};
use serde_json::Value as Json;
use spindle_query::Value;
use spindle_server::{Config, ManualClock};

use crate::common;

const PW: &str = "pw";
/// Every name in the hidden folder holds it (caselessly).
const MARK: &str = "qzhidden";

struct Fx {
    app: axum::Router,
    /// Visible: a song, its album and artist, the open playlist file.
    song: String,
    album: String,
    artist: String,
    open_m3u: String,
    /// Hidden: songs, album, artist, folder ids, the playlist file.
    h_songs: Vec<String>,
    h_album: String,
    h_artist: String,
    h_dirs: Vec<String>,
    h_m3u: String,
    /// ann's public playlist and cy's own, both with a hidden song.
    ann_list: String,
    cy_list: String,
    _setup: Setup,
    _music: tempfile::TempDir,
}

impl Fx {
    fn hidden_ids(&self) -> HashSet<String> {
        let mut all: HashSet<String> = self.h_songs.iter().cloned().collect();
        all.extend([
            self.h_album.clone(),
            self.h_artist.clone(),
            self.h_m3u.clone(),
        ]);
        all.extend(self.h_dirs.iter().cloned());
        all
    }

    async fn call(
        &self,
        user: &str,
        method: &str,
        params: &[(&str, &str)],
        json: bool,
    ) -> (StatusCode, String, Vec<u8>) {
        let mut q = form_urlencoded::Serializer::new(String::new());
        q.append_pair("u", user)
            .append_pair("p", PW)
            .append_pair("c", "test")
            .append_pair("v", "1.16.1");
        if json {
            q.append_pair("f", "json");
        }
        for (k, v) in params {
            q.append_pair(k, v);
        }
        let req = Request::get(format!("/rest/{method}?{}", q.finish()))
            .header(header::HOST, "127.0.0.1:4533")
            .body(Body::empty())
            .unwrap();
        let r = tower::ServiceExt::oneshot(self.app.clone(), req)
            .await
            .unwrap();
        let status = r.status();
        let ct = r
            .headers()
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_owned();
        let body = http_body_util::BodyExt::collect(r.into_body())
            .await
            .unwrap()
            .to_bytes()
            .to_vec();
        (status, ct, body)
    }

    /// A JSON call: the `subsonic-response` object.
    async fn api(&self, user: &str, method: &str, params: &[(&str, &str)]) -> Json {
        let (_, _, body) = self.call(user, method, params, true).await;
        let v: Json = serde_json::from_slice(&body).unwrap_or_else(|e| {
            panic!(
                "{method}: not JSON ({e}): {}",
                String::from_utf8_lossy(&body)
            )
        });
        v["subsonic-response"].clone()
    }

    async fn ok(&self, user: &str, method: &str, params: &[(&str, &str)]) -> Json {
        let r = self.api(user, method, params).await;
        assert_eq!(r["status"], "ok", "{method} {params:?}: {r}");
        r
    }
}

/// Every string or number of `v` under a key naming an id.
fn ids_in(v: &Json, out: &mut Vec<String>) {
    const ID_KEYS: &[&str] = &[
        "id",
        "parent",
        "albumId",
        "artistId",
        "coverArt",
        "current",
        "album_id",
        "artist_id",
    ];
    match v {
        Json::Object(m) => {
            for (k, x) in m {
                if ID_KEYS.contains(&k.as_str()) {
                    match x {
                        Json::String(s) => out.push(s.clone()),
                        Json::Number(n) => out.push(n.to_string()),
                        _ => {}
                    }
                }
                ids_in(x, out);
            }
        }
        Json::Array(a) => a.iter().for_each(|x| ids_in(x, out)),
        _ => {}
    }
}

/// Panics when `body` (JSON or XML text) names anything hidden.
/// `echoed`: the request's own values, which an answer may repeat.
fn assert_nothing_hidden(
    fx: &Fx,
    what: &str,
    ct: &str,
    body: &[u8],
    text_too: bool,
    echoed: &[&str],
) {
    if !(ct.contains("json") || ct.contains("xml") || ct.contains("svg") || ct.is_empty()) {
        return;
    }
    let text = String::from_utf8_lossy(body);
    if text_too {
        let mut rest = text.to_lowercase();
        for e in echoed {
            rest = rest.replace(&e.to_lowercase(), "");
        }
        assert!(
            !rest.contains(MARK),
            "{what} shows something of the hidden folder: {text}"
        );
    }
    let hidden = fx.hidden_ids();
    if let Ok(v) = serde_json::from_slice::<Json>(body) {
        let mut ids = Vec::new();
        ids_in(&v, &mut ids);
        for id in ids {
            assert!(
                !hidden.contains(&id),
                "{what} names the hidden id {id}: {text}"
            );
        }
    } else {
        for id in &hidden {
            if id.contains('-') {
                assert!(
                    !text.contains(id.as_str()),
                    "{what} names the hidden id {id}: {text}"
                );
            }
        }
    }
}

/// What a call must answer.
#[derive(Clone, Copy, PartialEq, Debug)]
enum Want {
    /// Anything, so long as nothing hidden shows.
    Any,
    /// Error 70.
    NotFound,
}

type Case = (Vec<(&'static str, String)>, Want);

fn p(pairs: &[(&'static str, &str)]) -> Vec<(&'static str, String)> {
    pairs.iter().map(|(k, v)| (*k, (*v).to_owned())).collect()
}

/// The calls made of `method`: visible ids (must show nothing hidden) and
/// hidden ones (must be error 70). `None`: the test has no case for it.
fn cases(fx: &Fx, method: &str) -> Option<Vec<Case>> {
    use Want::{Any, NotFound as NF};
    let (v, h) = (fx.song.as_str(), fx.h_songs[0].as_str());
    let (ha, hr) = (fx.h_album.as_str(), fx.h_artist.as_str());
    let hd = fx.h_dirs[0].as_str();
    let hd2 = fx.h_dirs[1].as_str();
    let (al, ar) = (fx.album.as_str(), fx.artist.as_str());
    let none: Vec<Case> = vec![(vec![], Any)];
    let by_song_album_artist = |name: &'static str| {
        vec![
            (p(&[(name, v)]), Any),
            (p(&[(name, al)]), Any),
            (p(&[(name, ar)]), Any),
            (p(&[(name, h)]), NF),
            (p(&[(name, ha)]), NF),
            (p(&[(name, hr)]), NF),
        ]
    };
    let folders = || {
        vec![
            (vec![], Any),
            (p(&[("musicFolderId", "1")]), Any),
            (p(&[("musicFolderId", "2")]), NF),
        ]
    };
    Some(match method {
        "getOpenSubsonicExtensions"
        | "ping"
        | "getLicense"
        | "getMusicFolders"
        | "getGenres"
        | "getNowPlaying"
        | "getScanStatus"
        | "startScan"
        | "tokenInfo"
        | "getUsers"
        | "getInternetRadioStations"
        | "getPodcasts"
        | "getNewestPodcasts"
        | "getVideos"
        | "getChatMessages"
        | "getShares"
        | "getPlaylists"
        | "getBookmarks"
        | "getPlayQueue"
        | "getPlayQueueByIndex"
        | "refreshPodcasts"
        | "jukeboxControl" => none,
        "stream" | "download" | "scrobble" | "getSong" | "getLyricsBySongId" => vec![
            (p(&[("id", v), ("submission", "false")]), Any),
            (p(&[("id", h)]), NF),
        ],
        "getCoverArt" | "getSimilarSongs" | "getSimilarSongs2" => by_song_album_artist("id"),
        "getArtistInfo" | "getArtistInfo2" => {
            let mut c = by_song_album_artist("id");
            c.push((p(&[("id", hd)]), NF));
            c
        }
        "getAlbumInfo" | "getAlbumInfo2" => vec![
            (p(&[("id", al)]), Any),
            (p(&[("id", v)]), Any),
            (p(&[("id", ha)]), NF),
            (p(&[("id", h)]), NF),
        ],
        "getAvatar" => vec![(p(&[("username", "cy")]), Any)],
        "getIndexes" | "getArtists" | "getStarred" | "getStarred2" => folders(),
        "getArtist" => vec![(p(&[("id", ar)]), Any), (p(&[("id", hr)]), NF)],
        "getAlbum" => vec![(p(&[("id", al)]), Any), (p(&[("id", ha)]), NF)],
        "getLyrics" => vec![
            (
                p(&[("artist", "Qzhidden Artist"), ("title", "Qzhidden One")]),
                Any,
            ),
            (p(&[("title", "Qzhidden One")]), Any),
            (p(&[("artist", "The Sine Waves")]), Any),
        ],
        "getMusicDirectory" => vec![
            (p(&[("id", al)]), Any),
            (p(&[("id", ar)]), Any),
            (p(&[("id", ha)]), NF),
            (p(&[("id", hr)]), NF),
            (p(&[("id", hd)]), NF),
            (p(&[("id", hd2)]), NF),
        ],
        "getAlbumList" | "getAlbumList2" => {
            let mut c: Vec<Case> = [
                "random",
                "newest",
                "highest",
                "frequent",
                "recent",
                "alphabeticalByName",
                "alphabeticalByArtist",
                "starred",
            ]
            .iter()
            .map(|t| (p(&[("type", t), ("size", "500")]), Any))
            .collect();
            c.push((
                p(&[
                    ("type", "byYear"),
                    ("fromYear", "0"),
                    ("toYear", "3000"),
                    ("size", "500"),
                ]),
                Any,
            ));
            c.push((p(&[("type", "byGenre"), ("genre", "Qzhiddengenre")]), Any));
            c.push((
                p(&[("type", "byGenre"), ("genre", "Demo"), ("size", "500")]),
                Any,
            ));
            c.push((p(&[("type", "newest"), ("musicFolderId", "2")]), NF));
            c
        }
        "getRandomSongs" => vec![
            (p(&[("size", "500")]), Any),
            (p(&[("size", "500"), ("genre", "Qzhiddengenre")]), Any),
            (p(&[("musicFolderId", "2")]), NF),
        ],
        "getSongsByGenre" => vec![
            (p(&[("genre", "Qzhiddengenre"), ("count", "500")]), Any),
            (p(&[("genre", "Demo"), ("count", "500")]), Any),
            (p(&[("genre", "Demo"), ("musicFolderId", "2")]), NF),
        ],
        "search2" | "search3" => {
            let big = [
                ("artistCount", "500"),
                ("albumCount", "500"),
                ("songCount", "500"),
            ];
            let mut c: Vec<Case> = [
                "",
                "qzhidden",
                "Qzhidden One",
                "rating>=1",
                "genre:Qzhiddengenre",
            ]
            .iter()
            .map(|q| {
                let mut v = p(&big);
                v.push(("query", (*q).to_owned()));
                (v, Any)
            })
            .collect();
            c.push((p(&[("query", ""), ("musicFolderId", "2")]), NF));
            c
        }
        "search" => vec![
            (p(&[("count", "500")]), Any),
            (p(&[("any", "qzhidden")]), Any),
            (p(&[("title", "Qzhidden")]), Any),
        ],
        "getTopSongs" => vec![
            (p(&[("artist", "Qzhidden Artist")]), Any),
            (p(&[("artist", "The Sine Waves")]), Any),
        ],
        "star" | "unstar" => vec![
            (p(&[("id", h)]), NF),
            (p(&[("albumId", ha)]), NF),
            (p(&[("artistId", hr)]), NF),
            (p(&[("id", v)]), Any),
        ],
        "setRating" => vec![
            (p(&[("id", h), ("rating", "3")]), NF),
            (p(&[("id", ha), ("rating", "3")]), NF),
            (p(&[("id", hr), ("rating", "3")]), NF),
            (p(&[("id", v), ("rating", "4")]), Any),
        ],
        "getPlaylist" => vec![
            (p(&[("id", &fx.ann_list)]), Any),
            (p(&[("id", &fx.cy_list)]), Any),
            (p(&[("id", &fx.open_m3u)]), Any),
            (p(&[("id", &fx.h_m3u)]), NF),
        ],
        "createPlaylist" => vec![
            (p(&[("name", "mine"), ("songId", v)]), Any),
            (p(&[("name", "sneaky"), ("songId", h)]), NF),
            (p(&[("playlistId", &fx.cy_list), ("songId", h)]), NF),
        ],
        "updatePlaylist" => vec![
            (p(&[("playlistId", &fx.cy_list), ("songIdToAdd", h)]), NF),
            (p(&[("playlistId", &fx.cy_list), ("name", "renamed")]), Any),
        ],
        "deletePlaylist" => vec![(p(&[("id", "987654")]), NF)],
        "getUser" => vec![
            (p(&[("username", "cy")]), Any),
            (p(&[("username", "ann")]), Any),
        ],
        "createUser" | "updateUser" | "deleteUser" | "changePassword" => vec![(
            p(&[
                ("username", "dee"),
                ("password", "x"),
                ("email", "d@example.org"),
            ]),
            Any,
        )],
        "savePlayQueue" => vec![(p(&[("id", h)]), NF), (p(&[("id", v), ("current", h)]), NF)],
        "savePlayQueueByIndex" => vec![(p(&[("id", h), ("currentIndex", "0")]), NF)],
        "createBookmark" => vec![(p(&[("id", h), ("position", "10")]), NF)],
        "deleteBookmark" => vec![(p(&[("id", "987654")]), NF)],
        "createInternetRadioStation"
        | "updateInternetRadioStation"
        | "deleteInternetRadioStation" => {
            vec![(
                p(&[
                    ("id", "1"),
                    ("streamUrl", "http://radio.example/s"),
                    ("name", "r"),
                ]),
                Any,
            )]
        }
        "createShare" => vec![
            (p(&[("id", h)]), NF),
            (p(&[("id", ha)]), NF),
            (p(&[("id", hr)]), NF),
            (p(&[("id", al)]), Any),
        ],
        "updateShare" | "deleteShare" => vec![(p(&[("id", "nosuchshare")]), NF)],
        "getVideoInfo" | "getCaptions" | "hls.m3u8" | "hls" => vec![(p(&[("id", h)]), Any)],
        "addChatMessage" => vec![(p(&[("message", "hello")]), Any)],
        "createPodcastChannel"
        | "deletePodcastChannel"
        | "deletePodcastEpisode"
        | "downloadPodcastEpisode"
        | "getPodcastEpisode" => vec![(p(&[("id", "1"), ("url", "http://p.example/")]), Any)],
        _ => return None,
    })
}

/// Writes an untagged tone at `path`.
fn tone(path: &Path, freq: f64) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    spindle_media::demo::write_wav(path, freq, 1.0).unwrap();
}

async fn fixture() -> Fx {
    let music = tempfile::tempdir().unwrap();
    let open = music.path().join("open-root");
    let hidden = music.path().join("qzhidden-root");
    let demo = spindle_media::demo::generate_demo(&open).unwrap();
    let hdir = hidden.join("Qzhidden Artist").join("Qzhidden Album");
    let hfiles = [hdir.join("01 x.wav"), hdir.join("02 y.wav")];
    tone(&hfiles[0], 300.0);
    tone(&hfiles[1], 400.0);
    std::fs::write(hdir.join("01 x.lrc"), "[00:00.50]qzhidden words\n").unwrap();
    // A folder image (sent as it is without `size`): the web cover route
    // would answer 200 for a hidden song if it skipped the grant.
    std::fs::write(hdir.join("cover.jpg"), b"qzhidden image bytes").unwrap();
    std::fs::write(
        hidden.join("Qzhidden Artist").join("artist.txt"),
        "qzhidden bio",
    )
    .unwrap();
    std::fs::write(
        hidden.join("qzhidden list.m3u"),
        "Qzhidden Artist/Qzhidden Album/01 x.wav\n",
    )
    .unwrap();
    let rel = demo[0]
        .strip_prefix(&open)
        .unwrap()
        .to_string_lossy()
        .into_owned();
    std::fs::write(open.join("open list.m3u"), format!("{rel}\n")).unwrap();
    let (open, hidden) = (
        std::fs::canonicalize(&open).unwrap(),
        std::fs::canonicalize(&hidden).unwrap(),
    );
    let setup = Setup::empty().user("ann", PW).user("cy", PW);
    let roots = vec![open.clone(), hidden.clone()];
    spindle_media::scan(
        &setup.db,
        &roots,
        &spindle_media::ScanOptions::default(),
        &mut spindle_media::scan::Quiet,
    )
    .unwrap();
    // The hidden songs' names, each holding MARK.
    let mut h_songs = Vec::new();
    for (n, f) in hfiles.iter().enumerate() {
        let id = common::id_of(&setup.db, &std::fs::canonicalize(f).unwrap()).unwrap();
        let title = ["Qzhidden One", "Qzhidden Two"][n];
        for (k, val) in [
            ("title", title),
            ("artist", "Qzhidden Artist"),
            ("album", "Qzhidden Album"),
            ("albumartist", "Qzhidden Artist"),
            ("genre", "Qzhiddengenre"),
        ] {
            setup
                .db
                .replace_prop(id, k, Value::Str(val.into()), "server")
                .unwrap();
        }
        h_songs.push(id.to_string());
    }
    let song = common::id_of(&setup.db, &std::fs::canonicalize(&demo[0]).unwrap())
        .unwrap()
        .to_string();
    let clock = Arc::new(ManualClock::new(1_750_000_000));
    let state = common::state(
        setup.path(),
        setup.db.clone(),
        setup.accounts.clone(),
        Config::default(),
        clock,
        Some(&roots),
    );
    let accounts = setup.accounts.clone();
    let mut profile = accounts.profile("cy").unwrap();
    profile.roles.share = true;
    profile.roles.comment = true;
    accounts.set_profile("cy", profile.clone()).unwrap();
    let mut fx = Fx {
        app: spindle_server::router(state),
        song,
        album: String::new(),
        artist: String::new(),
        open_m3u: spindle_server::m3u::playlist_id(&open.join("open list.m3u")),
        h_songs,
        h_album: String::new(),
        h_artist: String::new(),
        h_dirs: Vec::new(),
        h_m3u: spindle_server::m3u::playlist_id(&hidden.join("qzhidden list.m3u")),
        ann_list: String::new(),
        cy_list: String::new(),
        _setup: setup,
        _music: music,
    };
    let s = fx.ok("ann", "getSong", &[("id", &fx.song)]).await;
    fx.album = s["song"]["albumId"].as_str().unwrap().to_owned();
    fx.artist = s["song"]["artistId"].as_str().unwrap().to_owned();
    let s = fx.ok("ann", "getSong", &[("id", &fx.h_songs[0])]).await;
    fx.h_album = s["song"]["albumId"].as_str().unwrap().to_owned();
    fx.h_artist = s["song"]["artistId"].as_str().unwrap().to_owned();
    assert_eq!(s["song"]["title"], "Qzhidden One");
    // The hidden folder's directories, from the top.
    let idx = fx.ok("ann", "getIndexes", &[("musicFolderId", "2")]).await;
    let top = idx["indexes"]["index"][0]["artist"][0]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let dir = fx.ok("ann", "getMusicDirectory", &[("id", &top)]).await;
    let below = dir["directory"]["child"][0]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    fx.h_dirs = vec![top, below];

    // Before cy is limited: cy's own data names hidden songs.
    let (h, v) = (fx.h_songs[0].clone(), fx.song.clone());
    for (m, params) in [
        ("star", vec![("id", h.as_str())]),
        ("star", vec![("albumId", fx.h_album.as_str())]),
        ("star", vec![("artistId", fx.h_artist.as_str())]),
        ("setRating", vec![("id", h.as_str()), ("rating", "5")]),
        (
            "createBookmark",
            vec![("id", h.as_str()), ("position", "5")],
        ),
        (
            "savePlayQueue",
            vec![
                ("id", v.as_str()),
                ("id", h.as_str()),
                ("current", h.as_str()),
            ],
        ),
        (
            "scrobble",
            vec![("id", h.as_str()), ("time", "1749990000000")],
        ),
        ("createShare", vec![("id", h.as_str()), ("id", v.as_str())]),
    ] {
        fx.ok("cy", m, &params).await;
    }
    let r = fx
        .ok(
            "cy",
            "createPlaylist",
            &[("name", "cy's"), ("songId", &v), ("songId", &h)],
        )
        .await;
    fx.cy_list = r["playlist"]["id"].as_str().unwrap().to_owned();
    // ann (every folder) plays hidden songs, now and in the history, and
    // shares a public playlist with one.
    let r = fx
        .ok(
            "ann",
            "createPlaylist",
            &[("name", "ann's"), ("songId", &h), ("songId", &v)],
        )
        .await;
    fx.ann_list = r["playlist"]["id"].as_str().unwrap().to_owned();
    fx.ok(
        "ann",
        "updatePlaylist",
        &[("playlistId", &fx.ann_list), ("public", "true")],
    )
    .await;
    for t in ["1749980000000", "1749981000000"] {
        fx.ok("ann", "scrobble", &[("id", &h), ("time", t)]).await;
        fx.ok("ann", "scrobble", &[("id", &fx.h_songs[1]), ("time", t)])
            .await;
        fx.ok("ann", "scrobble", &[("id", &v), ("time", t)]).await;
    }
    fx.ok("ann", "scrobble", &[("id", &h), ("submission", "false")])
        .await;
    fx.ok("ann", "setRating", &[("id", &h), ("rating", "5")])
        .await;

    // Now cy may see the first folder only.
    profile.folders = vec![1];
    accounts.set_profile("cy", profile).unwrap();
    assert_eq!(accounts.folders_of("cy"), Some(vec![1]));
    fx
}

#[tokio::test]
async fn a_user_granted_one_folder_sees_nothing_of_the_other_in_any_subsonic_method() {
    let fx = fixture().await;
    let mut missing = Vec::new();
    let mut calls = 0;
    for method in spindle_server::subsonic::methods::TABLE
        .iter()
        .map(|m| m.name)
    {
        let Some(cases) = cases(&fx, method) else {
            missing.push(method);
            continue;
        };
        for (params, want) in cases {
            let params: Vec<(&str, &str)> = params.iter().map(|(k, v)| (*k, v.as_str())).collect();
            for json in [true, false] {
                let (_, ct, body) = fx.call("cy", method, &params, json).await;
                let what = format!("{method} {params:?} (json: {json})");
                let echoed: Vec<&str> = params.iter().map(|(_, v)| *v).collect();
                assert_nothing_hidden(&fx, &what, &ct, &body, true, &echoed);
                calls += 1;
                if json && want == Want::NotFound {
                    let v: Json = serde_json::from_slice(&body).unwrap_or_else(|_| {
                        panic!("{what}: not JSON: {}", String::from_utf8_lossy(&body))
                    });
                    let r = &v["subsonic-response"];
                    assert_eq!(r["status"], "failed", "{what} should fail: {r}");
                    assert_eq!(r["error"]["code"], 70, "{what}: {r}");
                }
            }
        }
    }
    assert!(
        missing.is_empty(),
        "no case in folder_access.rs for: {missing:?}"
    );
    assert!(calls > 300, "{calls} calls");
}

#[tokio::test]
async fn a_hidden_id_answers_exactly_as_an_unknown_one() {
    let fx = fixture().await;
    let h = fx.h_songs[0].as_str();
    for method in [
        "getSong",
        "stream",
        "download",
        "scrobble",
        "getCoverArt",
        "getLyricsBySongId",
    ] {
        let hidden = fx.api("cy", method, &[("id", h)]).await;
        let unknown = fx.api("cy", method, &[("id", "987654")]).await;
        assert_eq!(hidden["error"], unknown["error"], "{method}");
        assert_eq!(hidden["error"]["code"], 70, "{method}");
        // ann sees every folder.
        if method == "getSong" {
            fx.ok("ann", method, &[("id", h)]).await;
        }
    }
    let hidden = fx.api("cy", "getAlbum", &[("id", &fx.h_album)]).await;
    let unknown = fx
        .api("cy", "getAlbum", &[("id", "al-0000000000000000")])
        .await;
    assert_eq!(hidden["error"], unknown["error"]);
}

#[tokio::test]
async fn what_a_limited_user_kept_of_hidden_songs_shows_only_its_visible_part() {
    let fx = fixture().await;
    let folders = fx.ok("cy", "getMusicFolders", &[]).await;
    let list = folders["musicFolders"]["musicFolder"].as_array().unwrap();
    assert_eq!(list.len(), 1, "{folders}");
    assert_eq!(list[0]["id"], 1);
    assert_eq!(
        fx.ok("ann", "getMusicFolders", &[]).await["musicFolders"]["musicFolder"]
            .as_array()
            .unwrap()
            .len(),
        2
    );
    // The play queue keeps its visible song; the current one was hidden.
    let q = fx.ok("cy", "getPlayQueue", &[]).await;
    let entries = q["playQueue"]["entry"].as_array().unwrap();
    assert_eq!(entries.len(), 1);
    assert_eq!(entries[0]["id"], fx.song.as_str());
    assert!(q["playQueue"].get("current").is_none(), "{q}");
    // Playlists: the visible songs, counted.
    for id in [&fx.ann_list, &fx.cy_list] {
        let pl = fx.ok("cy", "getPlaylist", &[("id", id)]).await;
        assert_eq!(pl["playlist"]["songCount"], 1, "{pl}");
        assert_eq!(pl["playlist"]["entry"][0]["id"], fx.song.as_str());
    }
    // Index 0 is the first entry as cy sees it (the visible song, second
    // in the stored list): it goes, and the hidden one stays for ann.
    fx.ok(
        "cy",
        "updatePlaylist",
        &[
            ("playlistId", &fx.cy_list),
            ("songIndexToRemove", "0"),
            ("public", "true"),
        ],
    )
    .await;
    let pl = fx.ok("cy", "getPlaylist", &[("id", &fx.cy_list)]).await;
    assert_eq!(pl["playlist"]["songCount"], 0, "{pl}");
    let pl = fx.ok("ann", "getPlaylist", &[("id", &fx.cy_list)]).await;
    assert_eq!(
        pl["playlist"]["entry"][0]["id"],
        fx.h_songs[0].as_str(),
        "{pl}"
    );
    // Bookmarks and stars of hidden things are kept but not shown.
    let b = fx.ok("cy", "getBookmarks", &[]).await;
    assert!(
        b["bookmarks"]["bookmark"].as_array().unwrap().is_empty(),
        "{b}"
    );
    let s = fx.ok("cy", "getStarred2", &[]).await;
    assert!(s["starred2"]["song"].as_array().unwrap().is_empty(), "{s}");
    // ann's now playing is a hidden song: cy does not see it, ann does.
    let np = fx.ok("cy", "getNowPlaying", &[]).await;
    assert!(
        np["nowPlaying"]["entry"].as_array().unwrap().is_empty(),
        "{np}"
    );
    let np = fx.ok("ann", "getNowPlaying", &[]).await;
    assert_eq!(
        np["nowPlaying"]["entry"].as_array().unwrap().len(),
        1,
        "{np}"
    );
    // The share cy made before keeps only its visible song.
    let sh = fx.ok("cy", "getShares", &[]).await;
    assert_eq!(
        sh["shares"]["share"][0]["entry"].as_array().unwrap().len(),
        1,
        "{sh}"
    );
    // The scan status counts the songs cy may see.
    let all = fx.ok("ann", "getScanStatus", &[]).await["scanStatus"]["count"]
        .as_i64()
        .unwrap();
    let mine = fx.ok("cy", "getScanStatus", &[]).await["scanStatus"]["count"]
        .as_i64()
        .unwrap();
    assert_eq!(mine, all - 2);
    // The genre counts are of visible songs.
    let g = fx.ok("cy", "getGenres", &[]).await;
    assert!(!g.to_string().contains("Qzhiddengenre"), "{g}");
}

#[tokio::test]
async fn search3_rating_queries_see_each_users_own_rating() {
    let fx = fixture().await;
    let v = fx.song.as_str();
    // ann rates the visible song 5, cy rates it 1.
    fx.ok("ann", "setRating", &[("id", v), ("rating", "5")])
        .await;
    fx.ok("cy", "setRating", &[("id", v), ("rating", "1")])
        .await;
    let found = |r: &Json| -> Vec<String> {
        r["searchResult3"]["song"]
            .as_array()
            .map(|a| {
                a.iter()
                    .map(|s| s["id"].as_str().unwrap().to_owned())
                    .collect()
            })
            .unwrap_or_default()
    };
    let ann = fx
        .ok(
            "ann",
            "search3",
            &[("query", "rating>=4"), ("songCount", "500")],
        )
        .await;
    assert!(found(&ann).contains(&v.to_owned()), "{ann}");
    let cy = fx
        .ok(
            "cy",
            "search3",
            &[("query", "rating>=4"), ("songCount", "500")],
        )
        .await;
    assert!(!found(&cy).contains(&v.to_owned()), "{cy}");
    let cy = fx
        .ok(
            "cy",
            "search3",
            &[("query", "rating<=1"), ("songCount", "500")],
        )
        .await;
    assert!(found(&cy).contains(&v.to_owned()), "{cy}");
    // And search2 alike.
    let cy2 = fx
        .ok(
            "cy",
            "search2",
            &[("query", "rating>=4"), ("songCount", "500")],
        )
        .await;
    assert!(
        !cy2.to_string().contains(&format!("\"id\":\"{v}\"")),
        "{cy2}"
    );
}

#[tokio::test]
async fn the_web_ui_shows_a_limited_user_nothing_of_the_hidden_folder() {
    let fx = fixture().await;
    let cookie = session(&fx.app, "cy", PW).await;
    let get = |uri: String| {
        Request::get(uri)
            .header(header::COOKIE, cookie.clone())
            .header(header::HOST, "127.0.0.1:4533")
            .body(Body::empty())
            .unwrap()
    };
    for uri in [
        "/ui/api/search?q=".to_owned(),
        "/ui/api/search?q=qzhidden".to_owned(),
        "/ui/api/search?q=title:Qzhidden".to_owned(),
        "/ui/api/artists".to_owned(),
        format!("/ui/api/artist/{}", fx.artist),
        format!("/ui/api/album/{}", fx.album),
        "/ui/api/starred".to_owned(),
        "/ui/api/playlists".to_owned(),
        format!("/ui/api/playlist/{}", fx.cy_list),
        format!("/ui/api/playlist/{}", fx.ann_list),
        "/ui/api/now".to_owned(),
    ] {
        let (status, _, body) = send(&fx.app, get(uri.clone())).await;
        assert!(
            status.is_success() || status == StatusCode::NOT_FOUND,
            "{uri}: {status}"
        );
        assert_nothing_hidden(&fx, &uri, "application/json", &body, true, &[]);
    }
    // The user's own history shows as it is (cy played a hidden song
    // before the grant changed), but never links to a hidden album or
    // artist.
    for chart in ["albums", "artists", "tracks"] {
        let uri = format!("/ui/chart/{chart}.svg?period=overall");
        let (status, _, body) = send(&fx.app, get(uri.clone())).await;
        assert_eq!(status, StatusCode::OK, "{uri}");
        let text = String::from_utf8_lossy(&body);
        assert!(
            text.to_lowercase().contains(MARK),
            "cy's own listen shows: {text}"
        );
        assert_nothing_hidden(&fx, &uri, "image/svg+xml", &body, false, &[]);
    }
    for uri in [
        format!("/ui/stream/{}", fx.h_songs[0]),
        format!("/ui/api/album/{}", fx.h_album),
        format!("/ui/api/artist/{}", fx.h_artist),
        format!("/ui/cover/{}", fx.h_songs[0]),
        format!("/ui/cover/{}", fx.h_album),
        format!("/ui/cover/{}", fx.h_artist),
    ] {
        let (status, _, _) = send(&fx.app, get(uri.clone())).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{uri}");
    }
    let (status, _, _) = send(&fx.app, get(format!("/ui/stream/{}", fx.song))).await;
    assert_eq!(status, StatusCode::OK);
    let play = Request::post("/ui/api/playing")
        .header(header::COOKIE, cookie.clone())
        .header(header::HOST, "127.0.0.1:4533")
        .header(header::CONTENT_TYPE, "application/json")
        .header("x-spindle-csrf", "1")
        .body(Body::from(format!(r#"{{"id":{}}}"#, fx.h_songs[0])))
        .unwrap();
    let (status, _, _) = send(&fx.app, play).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn a_share_stops_playing_and_listing_what_its_owner_may_no_longer_see() {
    let fx = fixture().await;
    // cy shared a song of each folder before being limited to the first.
    let sh = fx.ok("cy", "getShares", &[]).await;
    let token = sh["shares"]["share"][0]["id"].as_str().unwrap().to_owned();
    let req = |method: &str, uri: String| {
        Request::builder()
            .method(method)
            .uri(uri)
            .header(header::HOST, "127.0.0.1:4533")
            .body(Body::empty())
            .unwrap()
    };
    let visible = format!("/share/{token}/stream/{}", fx.song);
    let hidden = format!("/share/{token}/stream/{}", fx.h_songs[0]);
    let unknown = format!("/share/nosuchshare/stream/{}", fx.h_songs[0]);
    let (status, _, _) = send(&fx.app, req("GET", visible.clone())).await;
    assert_eq!(status, StatusCode::OK);
    let (_, _, gone) = send(&fx.app, req("GET", unknown)).await;
    for method in ["GET", "HEAD"] {
        let (status, _, body) = send(&fx.app, req(method, hidden.clone())).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{method}");
        if method == "GET" {
            assert_eq!(body, gone, "as a share that is gone");
        }
    }
    let (status, _, page) = send(&fx.app, req("GET", format!("/share/{token}"))).await;
    assert_eq!(status, StatusCode::OK);
    let page = String::from_utf8_lossy(&page).to_lowercase();
    assert!(!page.contains(MARK), "{page}");
    assert!(page.contains(&format!("/stream/{}", fx.song)), "{page}");
    // Granted every folder again, the unchanged share plays it again.
    let mut profile = fx._setup.accounts.profile("cy").unwrap();
    profile.folders = Vec::new();
    fx._setup.accounts.set_profile("cy", profile).unwrap();
    let (status, _, _) = send(&fx.app, req("GET", hidden)).await;
    assert_eq!(status, StatusCode::OK);
}

#[tokio::test]
async fn the_web_ui_stars_and_rates_a_hidden_id_as_an_unknown_one() {
    let fx = fixture().await;
    let cookie = session(&fx.app, "cy", PW).await;
    let post = |uri: &str, body: String| {
        Request::post(uri)
            .header(header::COOKIE, cookie.clone())
            .header(header::HOST, "127.0.0.1:4533")
            .header(header::CONTENT_TYPE, "application/json")
            .header("x-spindle-csrf", "1")
            .body(Body::from(body))
            .unwrap()
    };
    let answer = |uri: &'static str, id: &str| {
        let req = match uri {
            "/ui/api/star" => post(uri, format!(r#"{{"id":"{id}","on":true}}"#)),
            _ => post(uri, format!(r#"{{"id":"{id}","rating":4}}"#)),
        };
        let app = fx.app.clone();
        async move {
            let (status, _, body) = send(&app, req).await;
            (status, String::from_utf8_lossy(&body).into_owned())
        }
    };
    for uri in ["/ui/api/star", "/ui/api/rating"] {
        let unknown = answer(uri, "999999").await;
        assert_eq!(unknown.0, StatusCode::NOT_FOUND, "{uri}: {}", unknown.1);
        for id in [&fx.h_songs[0], &fx.h_album, &fx.h_artist] {
            assert_eq!(answer(uri, id).await, unknown, "{uri} {id}");
        }
        let visible = answer(uri, &fx.song).await;
        assert_eq!(visible.0, StatusCode::OK, "{uri}: {}", visible.1);
    }
}
