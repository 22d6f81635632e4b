//! A web client served from another origin can use the APIs that carry
//! their own credentials (Subsonic, ListenBrainz, Last.fm): preflights
//! are answered and every answer, errors and streams included, allows the
//! origin — under a base path too; the cookie-authenticated web UI never
//! answers CORS; and a list of origins allows only those.

use std::sync::Arc;

use crate::common::Setup;
use axum::body::Body;
use axum::http::{header, HeaderMap, Request, StatusCode};
use http_body_util::BodyExt;
use spindle_server::cors::CorsOrigins;
use spindle_server::{Config, SystemClock};
use tower::ServiceExt;

const PAGE: &str = "http://127.0.0.1:8123";

fn app(d: &Setup, base: &str, origins: CorsOrigins) -> axum::Router {
    let config = Config {
        base_path: base.to_owned(),
        cors_origins: origins,
        ..Config::default()
    };
    spindle_server::router(d.state(config, Arc::new(SystemClock)))
}

async fn send(app: &axum::Router, req: Request<Body>) -> (StatusCode, HeaderMap, String) {
    let r = app.clone().oneshot(req).await.unwrap();
    let (parts, body) = r.into_parts();
    let body = body.collect().await.unwrap().to_bytes();
    (
        parts.status,
        parts.headers,
        String::from_utf8_lossy(&body).into_owned(),
    )
}

fn preflight(uri: &str, origin: &str) -> Request<Body> {
    Request::options(uri)
        .header(header::ORIGIN, origin)
        .header(header::ACCESS_CONTROL_REQUEST_METHOD, "GET")
        .header(
            header::ACCESS_CONTROL_REQUEST_HEADERS,
            "range, authorization",
        )
        .body(Body::empty())
        .unwrap()
}

fn from(uri: &str, origin: &str) -> Request<Body> {
    Request::get(uri)
        .header(header::ORIGIN, origin)
        .header(header::HOST, "127.0.0.1:4533")
        .body(Body::empty())
        .unwrap()
}

fn allow(h: &HeaderMap) -> Option<&str> {
    h.get(header::ACCESS_CONTROL_ALLOW_ORIGIN)
        .map(|v| v.to_str().unwrap())
}

#[tokio::test]
async fn a_page_of_another_origin_can_call_the_token_apis_but_not_the_web_ui() {
    let d = Setup::demo().user("ann", "pw");
    for base in ["", "/music"] {
        let a = app(&d, base, CorsOrigins::default());
        for path in [
            "/rest/ping",
            "/rest/ping.view",
            "/1/validate-token",
            "/2.0/",
        ] {
            let (status, h, _) = send(&a, preflight(&format!("{base}{path}"), PAGE)).await;
            assert_eq!(status, StatusCode::NO_CONTENT, "{base}{path}");
            assert_eq!(allow(&h), Some("*"), "{base}{path}");
            let methods = h[header::ACCESS_CONTROL_ALLOW_METHODS].to_str().unwrap();
            assert!(
                methods.contains("GET") && methods.contains("POST"),
                "{methods}"
            );
            assert_eq!(
                h[header::ACCESS_CONTROL_ALLOW_HEADERS],
                "range, authorization"
            );
            assert!(h.contains_key(header::ACCESS_CONTROL_MAX_AGE));
            assert!(!h.contains_key(header::ACCESS_CONTROL_ALLOW_CREDENTIALS));
        }
        // An error answer (wrong password) allows the origin too, so the
        // page can read it.
        let (_, h, body) = send(
            &a,
            from(&format!("{base}/rest/ping?u=ann&p=no&f=json"), PAGE),
        )
        .await;
        assert!(body.contains("\"code\":40"), "{body}");
        assert_eq!(allow(&h), Some("*"));
        // A stream: its ranges are readable.
        let uri = format!("{base}/rest/stream?u=ann&p=pw&id=1");
        let mut req = from(&uri, PAGE);
        req.headers_mut()
            .insert(header::RANGE, "bytes=0-9".parse().unwrap());
        let (status, h, _) = send(&a, req).await;
        assert_eq!(status, StatusCode::PARTIAL_CONTENT, "{uri}");
        assert_eq!(allow(&h), Some("*"));
        let exposed = h[header::ACCESS_CONTROL_EXPOSE_HEADERS].to_str().unwrap();
        assert!(exposed.contains("Content-Range") && exposed.contains("Accept-Ranges"));
        // The web UI, whose session is a cookie: no CORS, ever.
        for path in ["/ui/api/me", "/ui/login", "/ui/api/star"] {
            let (status, h, _) = send(&a, preflight(&format!("{base}{path}"), PAGE)).await;
            assert_ne!(status, StatusCode::NO_CONTENT, "{base}{path}");
            assert_eq!(allow(&h), None, "{base}{path}");
            let (_, h, _) = send(&a, from(&format!("{base}{path}"), PAGE)).await;
            assert_eq!(allow(&h), None, "{base}{path}");
        }
    }
}

#[tokio::test]
async fn a_list_of_origins_allows_only_those() {
    let d = Setup::empty().user("ann", "pw");
    let a = app(&d, "", CorsOrigins::from_list(&[PAGE.to_owned()]));
    let (_, h, _) = send(&a, preflight("/rest/ping", PAGE)).await;
    assert_eq!(allow(&h), Some(PAGE));
    assert!(h[header::VARY].to_str().unwrap().contains("Origin"));
    let (_, h, _) = send(&a, from("/rest/ping?u=ann&p=pw", PAGE)).await;
    assert_eq!(allow(&h), Some(PAGE));
    let other = "https://evil.example";
    let (_, h, _) = send(&a, preflight("/rest/ping", other)).await;
    assert_eq!(allow(&h), None);
    let (_, h, _) = send(&a, from("/rest/ping?u=ann&p=pw", other)).await;
    assert_eq!(allow(&h), None);
    // None at all.
    let a = app(&d, "", CorsOrigins::from_list(&[]));
    let (_, h, _) = send(&a, from("/rest/ping?u=ann&p=pw", PAGE)).await;
    assert_eq!(allow(&h), None);
}
