//! The request a fuzz input describes, sent through the whole router:
//! the first byte picks a route, the second whether valid credentials are
//! attached, the rest is a query string and (after a 0xff byte) a body.
//! Shared by the `http_request` fuzz target and the main test suite's
//! seeded random requests (crates/server/tests/it/any_request.rs), so both
//! exercise the same code.

use std::sync::{Arc, OnceLock};

use axum::body::Body;
use axum::http::Request;
use spindle_server::params::Params;
use spindle_server::{Accounts, AppState, Config, SystemClock};
use tower::ServiceExt;

const PW: &str = "pw";

struct Fixture {
    rt: tokio::runtime::Runtime,
    app: axum::Router,
    token: String,
    api_key: String,
    secret: String,
    sk: String,
    _dir: tempfile::TempDir,
}

fn fixture() -> &'static Fixture {
    static F: OnceLock<Fixture> = OnceLock::new();
    F.get_or_init(|| {
        let dir = tempfile::tempdir().expect("a temp dir");
        let db = Arc::new(spindle_store::Db::open(dir.path().join("lib")).expect("a library"));
        let accounts = Accounts::open(&dir.path().join("accounts")).expect("accounts");
        accounts.add_user("ann", PW, 0).expect("a user");
        let token = accounts.user_token("ann").expect("a token");
        let (api_key, secret) = accounts.add_api_key("fuzz", 0).expect("an api key");
        let sk = accounts.new_session("ann", &api_key, 0).expect("a session");
        let (listens, _) =
            spindle_listens::Listens::open(&dir.path().join("listens")).expect("listens");
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .expect("a runtime");
        let app = rt.block_on(async {
            let state = AppState::new(
                db,
                Arc::new(accounts),
                Arc::new(listens),
                Config::default(),
                Arc::new(SystemClock),
            );
            spindle_server::router(state)
        });
        Fixture {
            rt,
            app,
            token,
            api_key,
            secret,
            sk,
            _dir: dir,
        }
    })
}

const ROUTES: &[(&str, &str)] = &[
    ("POST", "/2.0/"),
    ("GET", "/2.0/"),
    ("GET", "/"),
    ("POST", "/as12/nowplaying"),
    ("POST", "/as12/submissions"),
    ("POST", "/1/submit-listens"),
    ("GET", "/1/validate-token"),
    ("GET", "/1/user/ann/listens"),
    ("GET", "/1/user/ann/playing-now"),
    ("GET", "/rest/ping"),
    ("POST", "/rest/scrobble"),
    ("GET", "/rest/search3"),
    ("GET", "/rest/getAlbum"),
    ("GET", "/rest/getSong"),
    ("GET", "/rest/stream"),
    ("GET", "/rest/getCoverArt"),
    ("GET", "/rest/getAlbumList2"),
    ("GET", "/rest/getMusicDirectory"),
    ("POST", "/rest/createPlaylist"),
    ("GET", "/rest/star"),
    ("POST", "/ui/login"),
    ("GET", "/ui/api/search"),
    ("GET", "/ui/chart/artists"),
    ("GET", "/metrics"),
    ("POST", "/api/auth/"),
];

/// Sends the request `data` describes through the router; panics on a
/// 500 (an input reached a path that does not check it).
pub fn one_request(data: &[u8]) {
    if data.len() < 2 {
        return;
    }
    let f = fixture();
    let (method, path) = ROUTES[data[0] as usize % ROUTES.len()];
    let creds = data[1] & 1 == 1;
    let rest = &data[2..];
    let (query, body) = match rest.iter().position(|&b| b == 0xff) {
        Some(i) => (&rest[..i], &rest[i + 1..]),
        None => (rest, &[][..]),
    };
    // The query must be URI-safe: percent-encode whatever is not.
    let mut q: String = form_urlencoded::byte_serialize(query)
        .collect::<String>()
        .replace("%3D", "=")
        .replace("%26", "&");
    let mut body = body.to_vec();
    let mut req = Request::builder().method(method);
    if creds {
        match path {
            p if p.starts_with("/rest/") => q.push_str(&format!("&u=ann&p={PW}")),
            p if p.starts_with("/1/") => {
                req = req.header("authorization", format!("Token {}", f.token));
            }
            "/2.0/" => {
                // A signed request as the user's session.
                let mut extra = format!("&api_key={}&sk={}", f.api_key, f.sk);
                let mut all = body.clone();
                all.extend_from_slice(extra.as_bytes());
                let sig = Params::parse(Some(&q), &all).signature(&f.secret);
                extra.push_str(&format!("&api_sig={sig}"));
                body.extend_from_slice(extra.as_bytes());
            }
            _ => {}
        }
    }
    let uri = if q.is_empty() {
        path.to_owned()
    } else {
        format!("{path}?{q}")
    };
    let Ok(req) = req
        .uri(uri.as_str())
        .header("content-type", "application/x-www-form-urlencoded")
        .body(Body::from(body))
    else {
        return;
    };
    let status = f.rt.block_on(async {
        f.app
            .clone()
            .oneshot(req)
            .await
            .map(|r| r.status())
            .expect("the router is infallible")
    });
    assert!(
        status.as_u16() != 500,
        "{method} {uri}: answered 500 (an unchecked input)"
    );
}
