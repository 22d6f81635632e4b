//! What the unit tests of the user data, admin and share methods share: a
//! server state over the demo music (scanned), a manual clock, the users
//! `ann` (made first: the administrator) and `bob`, and requests through
//! the whole router.

use std::sync::Arc;

use axum::body::{Body, Bytes};
use axum::http::{HeaderMap, Request, StatusCode};
use http_body_util::BodyExt;
use serde_json::Value;
use tower::ServiceExt;

use crate::{Accounts, AppState, Config, ManualClock, Music};

/// The test users' password.
pub(crate) const PASSWORD: &str = "pw";

pub(crate) struct Kit {
    pub state: AppState,
    pub clock: Arc<ManualClock>,
    /// The demo songs' ids, in scan order.
    pub songs: Vec<String>,
    _data: tempfile::TempDir,
    _music: tempfile::TempDir,
}

impl Kit {
    pub fn new() -> Kit {
        let data = tempfile::tempdir().unwrap();
        let music = tempfile::tempdir().unwrap();
        spindle_media::demo::generate_demo(music.path()).unwrap();
        let db = Arc::new(spindle_store::Db::open(data.path().join("lib")).unwrap());
        spindle_media::scan(
            &db,
            &[music.path().to_owned()],
            &spindle_media::ScanOptions::default(),
            &mut spindle_media::scan::Quiet,
        )
        .unwrap();
        let accounts = Accounts::open(&data.path().join("accounts")).unwrap();
        accounts.add_user_cheaply("ann", PASSWORD);
        accounts.add_user_cheaply("bob", PASSWORD);
        let (listens, _) = spindle_listens::Listens::open(&data.path().join("listens")).unwrap();
        let clock = Arc::new(ManualClock::new(1_750_000_000));
        let state = AppState::new(
            db,
            Arc::new(accounts),
            Arc::new(listens),
            Config::default(),
            clock.clone(),
        )
        .with_music(Music::new(&[music.path().to_owned()], data.path()).unwrap())
        .started();
        let cat = state.music.catalog(&state.db);
        let songs = cat.songs.iter().map(|s| s.id.to_string()).collect();
        Kit {
            state,
            clock,
            songs,
            _data: data,
            _music: music,
        }
    }

    /// The clock's time.
    pub fn now(&self) -> i64 {
        crate::Clock::now(&*self.clock)
    }

    /// A GET of `uri` through the whole router.
    pub async fn get(&self, uri: &str) -> (StatusCode, HeaderMap, Bytes) {
        let app = crate::router(self.state.clone());
        let req = Request::get(uri)
            .header("host", "music.example:4533")
            .body(Body::empty())
            .unwrap();
        let r = app.oneshot(req).await.unwrap();
        let (parts, body) = r.into_parts();
        let bytes = body.collect().await.unwrap().to_bytes();
        (parts.status, parts.headers, bytes)
    }

    /// A Subsonic call as `user` in JSON: the `subsonic-response` object.
    pub async fn api(&self, user: &str, method: &str, params: &[(&str, &str)]) -> Value {
        let mut q = url_encode(&[("u", user), ("p", PASSWORD), ("f", "json"), ("c", "kit")]);
        if !params.is_empty() {
            q.push('&');
            q.push_str(&url_encode(params));
        }
        let (status, _, body) = self.get(&format!("/rest/{method}?{q}")).await;
        assert_eq!(status, StatusCode::OK);
        let v: Value = serde_json::from_slice(&body).unwrap();
        v["subsonic-response"].clone()
    }

    /// A Subsonic call as `user` in XML: the document.
    pub async fn xml(&self, user: &str, method: &str, params: &[(&str, &str)]) -> String {
        let mut q = url_encode(&[("u", user), ("p", PASSWORD), ("c", "kit")]);
        if !params.is_empty() {
            q.push('&');
            q.push_str(&url_encode(params));
        }
        let (_, _, body) = self.get(&format!("/rest/{method}.view?{q}")).await;
        String::from_utf8(body.to_vec()).unwrap()
    }

    /// [`Kit::api`] that must succeed.
    pub async fn ok(&self, user: &str, method: &str, params: &[(&str, &str)]) -> Value {
        let r = self.api(user, method, params).await;
        assert_eq!(r["status"], "ok", "{method}: {r}");
        r
    }

    /// [`Kit::api`] that must fail: its error code.
    pub async fn code(&self, user: &str, method: &str, params: &[(&str, &str)]) -> i64 {
        let r = self.api(user, method, params).await;
        assert_eq!(r["status"], "failed", "{method} should fail: {r}");
        r["error"]["code"].as_i64().unwrap()
    }
}

fn url_encode(params: &[(&str, &str)]) -> String {
    params
        .iter()
        .map(|(k, v)| format!("{k}={}", enc(v)))
        .collect::<Vec<_>>()
        .join("&")
}

fn enc(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}
