//! Behind a reverse proxy: every API answers under the base path (and
//! nothing outside it), the page points its links under it; the
//! forwarding headers count only from a trusted proxy's address, and so
//! does a single-sign-on proxy's user header; cookies are `Secure` when
//! the client's connection is HTTPS and scoped to the base path.

use std::net::SocketAddr;
use std::sync::Arc;

use crate::common::Setup;
use axum::body::Body;
use axum::extract::ConnectInfo;
use axum::http::{header, HeaderMap, Request, StatusCode};
use http_body_util::BodyExt;
use spindle_server::proxy::ProxyConfig;
use spindle_server::{Config, SystemClock};
use tower::ServiceExt;

use crate::common;

const PROXY: &str = "127.0.0.1";

struct Fixture {
    app: axum::Router,
    token: String,
    _data: Setup,
}

fn fixture(base: &str, trusted: &[&str]) -> Fixture {
    let d = Setup::empty().user("ann", "s3cret");
    let token = d.token("ann");
    let config = Config {
        base_path: base.to_owned(),
        proxy: ProxyConfig {
            trusted: trusted.iter().map(|t| t.parse().unwrap()).collect(),
            user_header: (!trusted.is_empty())
                .then(|| axum::http::HeaderName::from_static("remote-user")),
        },
        ..Config::default()
    };
    let state = d.state(config, Arc::new(SystemClock));
    Fixture {
        app: spindle_server::router(state),
        token,
        _data: d,
    }
}

struct Answer {
    status: StatusCode,
    headers: HeaderMap,
    body: String,
}

async fn send(f: &Fixture, from: &str, mut req: Request<Body>) -> Answer {
    req.extensions_mut()
        .insert(ConnectInfo(SocketAddr::new(from.parse().unwrap(), 40000)));
    let r = f.app.clone().oneshot(req).await.unwrap();
    let status = r.status();
    let headers = r.headers().clone();
    let body = r.into_body().collect().await.unwrap().to_bytes();
    Answer {
        status,
        headers,
        body: String::from_utf8_lossy(&body).into_owned(),
    }
}

fn get(uri: &str, headers: &[(&str, &str)]) -> Request<Body> {
    let mut r = Request::get(uri);
    for (k, v) in headers {
        r = r.header(*k, *v);
    }
    r.body(Body::empty()).unwrap()
}

const PING: &str = "rest/ping?u=ann&p=s3cret&v=1.16.1&c=test&f=json";

#[tokio::test]
async fn every_api_answers_under_the_base_path_and_nothing_outside_it() {
    let f = fixture("/music", &[]);
    let a = send(&f, "192.0.2.1", get(&format!("/music/{PING}"), &[])).await;
    assert_eq!(a.status, StatusCode::OK);
    assert!(a.body.contains("\"status\":\"ok\""), "{}", a.body);
    let auth = format!("Token {}", f.token);
    let a = send(
        &f,
        "192.0.2.1",
        get("/music/1/validate-token", &[("authorization", &auth)]),
    )
    .await;
    assert!(a.body.contains("\"valid\":true"), "{}", a.body);
    let a = send(
        &f,
        "192.0.2.1",
        get("/music/2.0/?method=auth.getToken", &[]),
    )
    .await;
    assert!(a.body.contains("lfm"), "Last.fm answers: {}", a.body);
    let a = send(&f, "192.0.2.1", get("/music/metrics", &[])).await;
    assert_eq!(
        a.status,
        StatusCode::UNAUTHORIZED,
        "/metrics is there, behind a login"
    );
    let a = send(&f, "192.0.2.1", get("/music/ui/app.js", &[])).await;
    assert_eq!(a.status, StatusCode::OK);
    // The page: the base path in its meta tag and its links.
    let a = send(&f, "192.0.2.1", get("/music/", &[])).await;
    assert_eq!(a.status, StatusCode::OK);
    assert!(
        a.body
            .contains("<meta name=\"spindle-base\" content=\"/music\">"),
        "{}",
        a.body
    );
    // Its links: relative, or root-relative ones put under the base path.
    for attr in ["src=\"/", "href=\"/"] {
        for (i, _) in a.body.match_indices(attr) {
            let rest = &a.body[i + attr.len() - 1..];
            assert!(
                rest.starts_with("/music/"),
                "{}",
                &rest[..40.min(rest.len())]
            );
        }
    }
    // Outside the base path: redirects to it, or nothing.
    for (path, to) in [("/music", "/music/"), ("/", "/music/")] {
        let a = send(&f, "192.0.2.1", get(path, &[])).await;
        assert_eq!(a.status, StatusCode::PERMANENT_REDIRECT, "{path}");
        assert_eq!(a.headers[header::LOCATION], to, "{path}");
    }
    for path in [
        format!("/{PING}"),
        "/ui/app.js".into(),
        "/metrics".into(),
        "/musicx/rest/ping".into(),
    ] {
        let a = send(&f, "192.0.2.1", get(&path, &[])).await;
        assert_eq!(a.status, StatusCode::NOT_FOUND, "{path}");
    }
}

#[tokio::test]
async fn without_a_base_path_the_page_says_so_and_routes_stay_at_the_root() {
    let f = fixture("", &[]);
    let a = send(&f, "192.0.2.1", get(&format!("/{PING}"), &[])).await;
    assert!(a.body.contains("\"status\":\"ok\""), "{}", a.body);
    let a = send(&f, "192.0.2.1", get("/", &[])).await;
    assert!(a.body.contains("<meta name=\"spindle-base\" content=\"\">"));
    assert!(!a.body.contains("=\"/music/"));
}

/// The rate limit's count of the client's address, from ListenBrainz's
/// `X-RateLimit-Remaining`, as seen by a request from `peer` with
/// `headers`.
async fn remaining(f: &Fixture, peer: &str, headers: &[(&str, &str)]) -> u32 {
    let auth = format!("Token {}", f.token);
    let mut h = headers.to_vec();
    h.push(("authorization", &auth));
    let a = send(f, peer, get("/1/validate-token", &h)).await;
    a.headers["x-ratelimit-remaining"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap()
}

#[tokio::test]
async fn forwarded_addresses_count_only_from_a_trusted_proxy() {
    let f = fixture("", &[PROXY]);
    // Through the proxy, each client has its own window.
    let a1 = remaining(&f, PROXY, &[("x-forwarded-for", "198.51.100.1")]).await;
    let a2 = remaining(&f, PROXY, &[("x-forwarded-for", "198.51.100.1")]).await;
    let b1 = remaining(&f, PROXY, &[("x-forwarded-for", "198.51.100.2")]).await;
    assert_eq!(a2, a1 - 1);
    assert_eq!(b1, a1, "another client, another window");
    let c = remaining(&f, PROXY, &[("forwarded", "for=198.51.100.2")]).await;
    assert_eq!(c, b1 - 1, "RFC 7239 names the same client");
    // A client that forges the header from outside counts as itself,
    // whatever address it names.
    let x1 = remaining(&f, "203.0.113.7", &[("x-forwarded-for", "198.51.100.9")]).await;
    let x2 = remaining(&f, "203.0.113.7", &[("x-forwarded-for", "198.51.100.10")]).await;
    assert_eq!(x2, x1 - 1);
    // Nor can it put a forged address first in front of the proxy.
    let y = remaining(
        &f,
        PROXY,
        &[("x-forwarded-for", "198.51.100.1, 198.51.100.3")],
    )
    .await;
    assert_eq!(y, a1, "the rightmost untrusted address is the client");
}

#[tokio::test]
async fn a_trusted_proxy_logs_users_in_by_header_and_no_one_else_can() {
    let f = fixture("", &[PROXY]);
    let me = |peer: &'static str, h: &'static [(&'static str, &'static str)]| {
        let f = &f;
        async move { send(f, peer, get("/ui/api/me", h)).await }
    };
    let a = me(PROXY, &[("remote-user", "ann")]).await;
    assert_eq!(a.status, StatusCode::OK);
    assert!(a.body.contains("\"ann\""), "{}", a.body);
    for (peer, h) in [
        ("203.0.113.7", &[("remote-user", "ann")][..]),
        ("203.0.113.7", &[("x-spindle-proxy-user", "ann")][..]),
        (PROXY, &[("x-spindle-proxy-user", "ann")][..]),
        (PROXY, &[("remote-user", "nobody")][..]),
    ] {
        let a = me(peer, h).await;
        assert_eq!(a.status, StatusCode::UNAUTHORIZED, "{peer} {h:?}");
    }
    // Subsonic: no credentials in the request, the proxy's word.
    let ping = "/rest/ping?v=1.16.1&c=test&f=json";
    let a = send(&f, PROXY, get(ping, &[("remote-user", "ann")])).await;
    assert!(a.body.contains("\"status\":\"ok\""), "{}", a.body);
    let a = send(&f, "203.0.113.7", get(ping, &[("remote-user", "ann")])).await;
    assert!(a.body.contains("\"status\":\"failed\""), "{}", a.body);
}

#[tokio::test]
async fn cookies_are_secure_behind_https_and_scoped_to_the_base_path() {
    let f = fixture("/music", &[PROXY]);
    let login = |proto: &'static str| {
        let mut r = common::login("ann", "s3cret");
        *r.uri_mut() = "/music/ui/login".parse().unwrap();
        r.headers_mut()
            .insert("x-forwarded-proto", proto.parse().unwrap());
        r.headers_mut()
            .insert("x-forwarded-for", "198.51.100.1".parse().unwrap());
        r
    };
    let a = send(&f, PROXY, login("https")).await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.body);
    let c = a.headers[header::SET_COOKIE].to_str().unwrap();
    assert!(c.contains("; Secure"), "{c}");
    assert!(c.contains("Path=/music"), "{c}");
    let a = send(&f, PROXY, login("http")).await;
    let c = a.headers[header::SET_COOKIE].to_str().unwrap();
    assert!(!c.contains("Secure"), "{c}");
    // The same header from a stranger does not make the cookie Secure.
    let mut r = login("https");
    r.headers_mut().remove("x-forwarded-for");
    let a = send(&f, "203.0.113.7", r).await;
    let c = a.headers[header::SET_COOKIE].to_str().unwrap();
    assert!(!c.contains("Secure"), "{c}");
}
