//! What the server's integration tests share: a data dir with a library
//! and accounts, the demo music scanned into it, the state over them, and
//! one way to send a request to a router.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use axum::body::Body;
use axum::http::{header, Request, StatusCode};
use http_body_util::BodyExt;
use spindle_media::scan::{scan, Quiet, ScanOptions};
use spindle_server::{Accounts, AppState, Clock, Config, Music};
use spindle_store::Db;
use tower::ServiceExt;

/// A data dir (library, accounts) and, for [`Setup::demo`], the demo
/// music scanned into its library. The folders are removed when it drops.
pub struct Setup {
    pub db: Arc<Db>,
    pub accounts: Arc<Accounts>,
    /// The music folder (canonical), when there is music.
    pub root: Option<PathBuf>,
    /// The demo music's files, as generated.
    pub files: Vec<PathBuf>,
    data: tempfile::TempDir,
    _music: Option<tempfile::TempDir>,
}

impl Setup {
    /// An empty library and no users.
    pub fn empty() -> Setup {
        let data = tempfile::tempdir().unwrap();
        Setup {
            db: Arc::new(Db::open(data.path().join("lib")).unwrap()),
            accounts: Arc::new(Accounts::open(&data.path().join("accounts")).unwrap()),
            root: None,
            files: Vec::new(),
            data,
            _music: None,
        }
    }

    /// The demo music (`spindle_media::demo`) in a folder of its own,
    /// scanned into the library; no users.
    pub fn demo() -> Setup {
        let music = tempfile::tempdir().unwrap();
        let files = spindle_media::demo::generate_demo(music.path()).unwrap();
        let root = std::fs::canonicalize(music.path()).unwrap();
        let s = Setup::empty();
        scan_folder(&s.db, &root);
        Setup {
            root: Some(root),
            files,
            _music: Some(music),
            ..s
        }
    }

    /// With the user `name`, password `password`.
    pub fn user(self, name: &str, password: &str) -> Setup {
        self.accounts.add_user(name, password, 0).unwrap();
        self
    }

    /// `name`'s token (ListenBrainz, the OpenSubsonic `apiKey`).
    pub fn token(&self, name: &str) -> String {
        self.accounts.user_token(name).unwrap()
    }

    /// The data dir.
    pub fn path(&self) -> &Path {
        self.data.path()
    }

    /// The state over it with `config` and `clock`: the listens opened
    /// from the data dir and, when there is music, the music folder.
    pub fn state(&self, config: Config, clock: Arc<dyn Clock>) -> AppState {
        let roots: Option<&[PathBuf]> = self.root.as_ref().map(std::slice::from_ref);
        state(
            self.path(),
            self.db.clone(),
            self.accounts.clone(),
            config,
            clock,
            roots,
        )
    }
}

/// The library id of the song whose file is `file` (as the scan saw it:
/// below the canonical music folder).
pub fn id_of(db: &Db, file: &Path) -> Option<u32> {
    let url = spindle_media::scan::file_url(file);
    let lib = db.read();
    let pref = spindle_query::SourcePref::default();
    let found = lib.ids().find(|&id| {
        lib.get(id, "url", &pref)
            .first()
            .is_some_and(|v| v.to_string() == url)
    });
    found
}

/// Scans the music folder `root` into `db`.
pub fn scan_folder(db: &Db, root: &Path) {
    scan(
        db,
        std::slice::from_ref(&root.to_path_buf()),
        &ScanOptions::default(),
        &mut Quiet,
    )
    .unwrap();
}

/// The state over a data dir's library and accounts with `config` and
/// `clock`, its listens opened from `data`, serving the music folders
/// `roots` when given (user data kept in `data`).
pub fn state(
    data: &Path,
    db: Arc<Db>,
    accounts: Arc<Accounts>,
    config: Config,
    clock: Arc<dyn Clock>,
    roots: Option<&[PathBuf]>,
) -> AppState {
    let (listens, _) = spindle_listens::Listens::open(&data.join("listens")).unwrap();
    let state = AppState::new(db, accounts, Arc::new(listens), config, clock);
    match roots {
        Some(roots) => state.with_music(Music::new(roots, data).unwrap()),
        None => state,
    }
    .started()
}

/// Sends `req` to `app`: the status, the `Set-Cookie` header, the body.
pub async fn send(app: &axum::Router, req: Request<Body>) -> (StatusCode, Option<String>, Vec<u8>) {
    let r = app.clone().oneshot(req).await.unwrap();
    let status = r.status();
    let cookie = r
        .headers()
        .get(header::SET_COOKIE)
        .map(|v| v.to_str().unwrap().to_owned());
    let body = r.into_body().collect().await.unwrap().to_bytes().to_vec();
    (status, cookie, body)
}

/// A web UI login of `user` with `password`, with the CSRF header.
pub fn login(user: &str, password: &str) -> Request<Body> {
    Request::post("/ui/login")
        .header(header::HOST, "127.0.0.1:4533")
        .header(header::CONTENT_TYPE, "application/json")
        .header("x-spindle-csrf", "1")
        .body(Body::from(format!(
            r#"{{"user":"{user}","password":"{password}"}}"#
        )))
        .unwrap()
}

/// A logged-in web UI session of `user`: its cookie.
pub async fn session(app: &axum::Router, user: &str, password: &str) -> String {
    let (s, c, _) = send(app, login(user, password)).await;
    assert_eq!(s, StatusCode::OK);
    c.unwrap().split(';').next().unwrap().to_owned()
}

/// A `GET` of `uri`.
pub fn get(uri: impl AsRef<str>) -> Request<Body> {
    Request::get(uri.as_ref()).body(Body::empty()).unwrap()
}
