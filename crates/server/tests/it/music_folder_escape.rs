//! Files under a music folder reach the network only through the checked
//! open: a cover image or a song that is a symlink out of the folder is
//! refused (and a song linked out is not even listed), a cover linked to
//! a device is refused at once, an oversized cover is skipped, and links
//! that stay inside the folder work.

use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::body::Body;
use axum::http::{header, Request, StatusCode};
use http_body_util::BodyExt;
use lofty::prelude::{Accessor, TagExt};
use spindle_server::{Accounts, Config, SystemClock};
use tower::ServiceExt;

use crate::common;

const PW: &str = "pw for tests";
const ALBUM: &str = "Artist 000/Album 000";
const TRACK: &str = "Artist 000/Album 000/01 Track 0.mp3";

struct Fixture {
    app: axum::Router,
    db: Arc<spindle_store::Db>,
    data: PathBuf,
    music: PathBuf,
    _tmp: tempfile::TempDir,
}

/// A music folder of two generated songs, a song outside it titled
/// "Escaped Song", and a data dir with accounts. `links` runs before the
/// scan, to place symlinks.
fn fixture(links: impl FnOnce(&Path, &Path, &Path)) -> Fixture {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let music = tmp.path().join("music");
    let elsewhere = tmp.path().join("elsewhere");
    spindle_media::bench::generate_mp3s(&music, 2).unwrap();
    spindle_media::bench::generate_mp3s(&elsewhere, 1).unwrap();
    let mut tag = lofty::tag::Tag::new(lofty::tag::TagType::Id3v2);
    tag.set_title("Escaped Song".into());
    tag.set_album("Escaped Album".into());
    tag.set_artist("Escaped Artist".into());
    tag.save_to_path(elsewhere.join(TRACK), Default::default())
        .unwrap();
    let accounts = Accounts::open(&data.join("accounts")).unwrap();
    accounts.add_user("ann", PW, 0).unwrap();
    links(&music, &elsewhere, &data);
    let db = Arc::new(spindle_store::Db::open(data.join("lib")).unwrap());
    let root = std::fs::canonicalize(&music).unwrap();
    common::scan_folder(&db, &root);
    let state = common::state(
        &data,
        db.clone(),
        Arc::new(accounts),
        Config::default(),
        Arc::new(SystemClock),
        Some(std::slice::from_ref(&root)),
    );
    Fixture {
        app: spindle_server::router(state),
        db,
        data,
        music: root,
        _tmp: tmp,
    }
}

impl Fixture {
    /// The library id of the song at `rel` below the music folder.
    fn id_of(&self, rel: &str) -> Option<String> {
        common::id_of(&self.db, &self.music.join(rel)).map(|id| id.to_string())
    }

    /// `GET /ui/stream/ID` with a web UI session of ann's.
    async fn ui_stream(&self, id: &str) -> (StatusCode, Vec<u8>) {
        let cookie = common::session(&self.app, "ann", PW).await;
        let req = Request::get(format!("/ui/stream/{id}"))
            .header(header::COOKIE, cookie)
            .body(Body::empty())
            .unwrap();
        let resp = self.app.clone().oneshot(req).await.unwrap();
        let status = resp.status();
        let body = resp.into_body().collect().await.unwrap().to_bytes();
        (status, body.to_vec())
    }

    async fn get(&self, method: &str, query: &str) -> (StatusCode, Vec<u8>) {
        let pw = PW.replace(' ', "%20");
        let uri = format!("/rest/{method}?u=ann&p={pw}&f=json&{query}");
        let resp = self
            .app
            .clone()
            .oneshot(Request::get(uri).body(Body::empty()).unwrap())
            .await
            .unwrap();
        let status = resp.status();
        let body = resp.into_body().collect().await.unwrap().to_bytes();
        (status, body.to_vec())
    }
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    !needle.is_empty() && hay.windows(needle.len()).any(|w| w == needle)
}

/// Whether a Subsonic answer is an error (a JSON body with `error`).
fn is_error(body: &[u8]) -> bool {
    serde_json::from_slice::<serde_json::Value>(body)
        .is_ok_and(|v| v["subsonic-response"]["error"].is_object())
}

#[tokio::test]
async fn a_cover_linked_to_the_accounts_or_the_key_is_refused_and_not_sent() {
    for secret in ["accounts.json", "secret.key"] {
        let f = fixture(|music, _, data| {
            symlink(
                data.join("accounts").join(secret),
                music.join(ALBUM).join("cover.jpg"),
            )
            .unwrap();
        });
        let bytes = std::fs::read(f.data.join("accounts").join(secret)).unwrap();
        let id = f.id_of(TRACK).unwrap();
        let (status, body) = f.get("getCoverArt", &format!("id={id}")).await;
        assert!(
            !contains(&body, &bytes[..bytes.len().min(32)]),
            "{secret} was served as a cover"
        );
        assert!(
            status != StatusCode::OK || is_error(&body),
            "{secret}: {status}"
        );
    }
}

#[tokio::test]
async fn a_cover_linked_to_dev_zero_is_refused_at_once_and_the_next_image_is_served() {
    let f = fixture(|music, _, _| {
        symlink("/dev/zero", music.join(ALBUM).join("cover.jpg")).unwrap();
        std::fs::write(music.join(ALBUM).join("folder.jpg"), b"\xff\xd8a real jpeg").unwrap();
    });
    let id = f.id_of(TRACK).unwrap();
    let started = Instant::now();
    let answer = tokio::time::timeout(
        Duration::from_secs(1),
        f.get("getCoverArt", &format!("id={id}")),
    )
    .await;
    let (status, body) = answer.expect("getCoverArt took over a second");
    assert!(started.elapsed() < Duration::from_secs(1));
    assert_eq!(status, StatusCode::OK);
    assert!(body == b"\xff\xd8a real jpeg", "{} other bytes", body.len());
}

#[tokio::test]
async fn a_cover_over_the_cap_is_skipped_for_the_next_one() {
    let f = fixture(|music, _, _| {
        let big = std::fs::File::create(music.join(ALBUM).join("cover.jpg")).unwrap();
        big.set_len(spindle_media::COVER_CAP + 1).unwrap();
        std::fs::write(music.join(ALBUM).join("front.png"), b"\x89PNG small").unwrap();
    });
    let id = f.id_of(TRACK).unwrap();
    let (status, body) = f.get("getCoverArt", &format!("id={id}")).await;
    assert_eq!(status, StatusCode::OK);
    assert!(body == b"\x89PNG small", "{} other bytes", body.len());
}

#[tokio::test]
async fn a_song_linked_from_outside_is_neither_listed_nor_streamed() {
    let f = fixture(|music, elsewhere, _| {
        symlink(elsewhere.join(TRACK), music.join("escaped.mp3")).unwrap();
    });
    assert_eq!(f.id_of("escaped.mp3"), None);
    for (method, query) in [
        (
            "search3",
            "query=&songCount=500&albumCount=500&artistCount=500",
        ),
        ("search3", "query=Escaped"),
        ("getAlbumList2", "type=alphabeticalByName&size=500"),
        ("getRandomSongs", "size=500"),
    ] {
        let (status, body) = f.get(method, query).await;
        assert_eq!(status, StatusCode::OK);
        assert!(
            !is_error(&body),
            "{method}: {}",
            String::from_utf8_lossy(&body)
        );
        assert!(
            !contains(&body, b"Escaped"),
            "{method} lists the song linked from outside: {}",
            String::from_utf8_lossy(&body)
        );
    }
}

#[tokio::test]
async fn a_listed_song_relinked_outside_is_not_streamed_and_one_linked_inside_is() {
    let f = fixture(|music, _, _| {
        symlink(TRACK, music.join("inside.mp3")).unwrap();
        symlink(TRACK, music.join("later.mp3")).unwrap();
    });
    let inside = f
        .id_of("inside.mp3")
        .expect("a link inside the folder is listed");
    let want = std::fs::read(f.music.join(TRACK)).unwrap();
    let (status, body) = f.get("stream", &format!("id={inside}")).await;
    assert_eq!(status, StatusCode::OK);
    assert!(body == want, "the linked song streamed other bytes");
    let (status, body) = f.ui_stream(&inside).await;
    assert_eq!(status, StatusCode::OK);
    assert!(body == want, "the web UI streamed other bytes");

    // Listed while it pointed inside; now it points at the key.
    let later = f.id_of("later.mp3").unwrap();
    std::fs::remove_file(f.music.join("later.mp3")).unwrap();
    symlink(
        f.data.join("accounts/secret.key"),
        f.music.join("later.mp3"),
    )
    .unwrap();
    let key = std::fs::read(f.data.join("accounts/secret.key")).unwrap();
    for method in ["stream", "download", "getCoverArt"] {
        let (status, body) = f.get(method, &format!("id={later}")).await;
        assert!(!contains(&body, &key), "{method} sent the key");
        assert!(
            status != StatusCode::OK || is_error(&body),
            "{method}: {status}"
        );
    }
    let (status, body) = f.ui_stream(&later).await;
    assert!(!contains(&body, &key), "the web UI sent the key");
    assert_eq!(status, StatusCode::NOT_FOUND);
}
