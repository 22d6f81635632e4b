//! Password guessing is throttled on every authentication path: a burst
//! from one address gets only its free tries checked, a guesser is locked
//! and then refused even with the right credential while another address
//! still gets in, every API answers a waiting client in its own words;
//! and an unknown user name gets the same answer, as slowly, as a known
//! one with a wrong password.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::common::Setup;
use axum::body::Body;
use axum::extract::ConnectInfo;
use axum::http::{header, Request, StatusCode};
use http_body_util::BodyExt;
use spindle_server::accounts::md5_hex;
use spindle_server::params::Params;
use spindle_server::throttle::{Limits, Rule, ACCOUNT_MAX_DELAY, LOCK_SECS, MAX_DELAY};
use spindle_server::{Config, ManualClock};
use tower::ServiceExt;

const NOW: i64 = 1_700_000_000;
const PW: &str = "the right one";

struct Fixture {
    app: axum::Router,
    clock: Arc<ManualClock>,
    key: String,
    secret: String,
    _data: Setup,
}

fn fixture(limits: Limits) -> Fixture {
    let d = Setup::empty().user("ann", PW);
    let (key, secret) = d.accounts.add_api_key("tests", 0).unwrap();
    let clock = Arc::new(ManualClock::new(NOW));
    let mut config = Config::default();
    config.auth.throttle = limits;
    let state = d.state(config, clock.clone());
    Fixture {
        app: spindle_server::router(state),
        clock,
        key,
        secret,
        _data: d,
    }
}

struct Answer {
    status: StatusCode,
    retry_after: Option<String>,
    body: String,
}

async fn send(f: &Fixture, from: &str, mut req: Request<Body>) -> Answer {
    let ip: std::net::IpAddr = from.parse().unwrap();
    req.extensions_mut()
        .insert(ConnectInfo(SocketAddr::new(ip, 40000)));
    let r = f.app.clone().oneshot(req).await.unwrap();
    let status = r.status();
    let retry_after = r
        .headers()
        .get(header::RETRY_AFTER)
        .map(|v| v.to_str().unwrap().to_owned());
    let body = r.into_body().collect().await.unwrap().to_bytes();
    Answer {
        status,
        retry_after,
        body: String::from_utf8_lossy(&body).into_owned(),
    }
}

fn get(uri: &str) -> Request<Body> {
    Request::get(uri).body(Body::empty()).unwrap()
}

fn enc(s: &str) -> String {
    form_urlencoded::byte_serialize(s.as_bytes()).collect()
}

/// A Subsonic `ping` with `u`+`t`+`s`.
fn ping_token(user: &str, password: &str) -> Request<Body> {
    let salt = "c19b2d";
    let t = md5_hex(format!("{password}{salt}").as_bytes());
    get(&format!(
        "/rest/ping?f=json&v=1.16.1&c=t&u={user}&t={t}&s={salt}"
    ))
}

/// The Subsonic error of an answer: (code, message), or None for ok.
fn subsonic_error(a: &Answer) -> Option<(i64, String)> {
    let v: serde_json::Value = serde_json::from_str(&a.body).unwrap();
    let e = &v["subsonic-response"]["error"];
    Some((e["code"].as_i64()?, e["message"].as_str()?.to_owned()))
}

const TOO_MANY: &str = "Too many failed logins";

/// A signed Last.fm POST.
fn lastfm(f: &Fixture, params: &[(&str, &str)]) -> Request<Body> {
    let mut pairs: Vec<(String, String)> = params
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    pairs.push(("api_key".into(), f.key.clone()));
    let query: String = pairs
        .iter()
        .map(|(k, v)| format!("{k}={}", enc(v)))
        .collect::<Vec<_>>()
        .join("&");
    let sig = Params::parse(Some(&query), b"").signature(&f.secret);
    Request::post("/2.0/")
        .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
        .body(Body::from(format!("{query}&api_sig={sig}&format=json")))
        .unwrap()
}

fn mobile_session(f: &Fixture, user: &str, password: &str) -> Request<Body> {
    lastfm(
        f,
        &[
            ("method", "auth.getMobileSession"),
            ("username", user),
            ("password", password),
        ],
    )
}

fn mobile_session_token(f: &Fixture, user: &str, password: &str) -> Request<Body> {
    let token = md5_hex(format!("{user}{}", md5_hex(password.as_bytes())).as_bytes());
    lastfm(
        f,
        &[
            ("method", "auth.getMobileSession"),
            ("username", user),
            ("authToken", &token),
        ],
    )
}

fn web_login(user: &str, password: &str) -> Request<Body> {
    Request::post("/ui/login")
        .header("x-spindle-csrf", "1")
        .header(header::CONTENT_TYPE, "application/json")
        .body(Body::from(
            serde_json::json!({ "user": user, "password": password }).to_string(),
        ))
        .unwrap()
}

fn basic(user: &str, password: &str) -> Request<Body> {
    Request::get("/metrics")
        .header(
            header::AUTHORIZATION,
            format!("Basic {}", base64(format!("{user}:{password}").as_bytes())),
        )
        .body(Body::empty())
        .unwrap()
}

fn base64(b: &[u8]) -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(b)
}

/// A pending `auth.getToken` token for the `/api/auth/` page.
async fn desktop_token(f: &Fixture) -> String {
    let a = send(f, "192.0.2.250", lastfm(f, &[("method", "auth.getToken")])).await;
    let v: serde_json::Value = serde_json::from_str(&a.body).unwrap();
    v["token"].as_str().unwrap().to_owned()
}

fn grant(f: &Fixture, token: &str, user: &str, password: &str) -> Request<Body> {
    Request::post("/api/auth/")
        .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
        .body(Body::from(format!(
            "api_key={}&token={token}&username={user}&password={}",
            f.key,
            enc(password)
        )))
        .unwrap()
}

fn handshake(user: &str, password: &str) -> Request<Body> {
    let a = md5_hex(format!("{}{NOW}", md5_hex(password.as_bytes())).as_bytes());
    get(&format!(
        "/?hs=true&p=1.2.1&c=tst&v=1.0&u={user}&t={NOW}&a={a}"
    ))
}

#[tokio::test]
async fn a_subsonic_token_guesser_is_locked_and_refused_even_when_right_while_another_address_gets_in(
) {
    let f = fixture(Limits::default());
    let (guesser, owner) = ("192.0.2.7", "198.51.100.9");
    // Twenty wrong guesses, each after the wait the last one earned.
    for i in 0..spindle_server::throttle::PAIR_LOCK_AFTER {
        let a = send(&f, guesser, ping_token("ann", &format!("guess {i}"))).await;
        assert_eq!(
            subsonic_error(&a),
            Some((40, "Wrong username or password".into())),
            "guess {i}"
        );
        f.clock.advance(MAX_DELAY);
    }
    f.clock.advance(-MAX_DELAY);
    // Locked: the right password is refused without being checked.
    let a = send(&f, guesser, ping_token("ann", PW)).await;
    let (code, msg) = subsonic_error(&a).unwrap();
    assert_eq!(code, 40);
    assert!(msg.starts_with(TOO_MANY), "{msg}");
    // The account itself is only slowed: after its short wait the owner,
    // from their own address, gets in; the guesser is still locked.
    f.clock.advance(ACCOUNT_MAX_DELAY);
    assert_eq!(
        subsonic_error(&send(&f, owner, ping_token("ann", PW)).await),
        None
    );
    let a = send(&f, guesser, ping_token("ann", PW)).await;
    assert!(subsonic_error(&a).unwrap().1.starts_with(TOO_MANY));
    // The lock ends.
    f.clock.advance(LOCK_SECS);
    assert_eq!(
        subsonic_error(&send(&f, guesser, ping_token("ann", PW)).await),
        None
    );
}

#[tokio::test]
async fn an_empty_password_beside_a_valid_token_is_no_password_and_no_failed_login() {
    let f = fixture(Limits::default());
    let salt = "c19b2d";
    let t = md5_hex(format!("{PW}{salt}").as_bytes());
    // More than the free tries: none of them may count as a failure.
    for i in 0..12 {
        let uri = format!("/rest/ping.view?f=json&v=1.16.1&c=t&u=ann&t={t}&s={salt}&p=");
        let a = send(&f, "192.0.2.8", get(&uri)).await;
        assert_eq!(subsonic_error(&a), None, "ping {i}: {}", a.body);
    }
    // An empty token and salt are missing, not wrong: error 10.
    let a = send(&f, "192.0.2.8", get("/rest/ping?f=json&u=ann&t=&s=&p=")).await;
    assert_eq!(subsonic_error(&a).map(|e| e.0), Some(10), "{}", a.body);
}

#[tokio::test]
async fn a_burst_of_guesses_from_one_address_gets_only_its_free_tries_checked() {
    let f = fixture(Limits::default());
    let mut checked = 0;
    for i in 0..100 {
        let a = send(&f, "192.0.2.7", ping_token("ann", &format!("guess {i}"))).await;
        match subsonic_error(&a) {
            Some((40, m)) if m == "Wrong username or password" => checked += 1,
            Some((40, m)) if m.starts_with(TOO_MANY) => {}
            other => panic!("{other:?}"),
        }
    }
    // Five free failures, and the sixth, which starts the first wait.
    assert_eq!(checked, spindle_server::throttle::PAIR_FREE_FAILURES + 1);
}

#[tokio::test]
async fn every_authentication_path_makes_a_guesser_wait_in_its_own_words() {
    // One free failure per address, so each path shows its wait answer
    // on the third try; the account is never slowed here.
    let mut limits = Limits::default();
    limits.pair.free = 1;
    limits.address.free = 1;
    limits.account = Rule {
        free: u32::MAX,
        ..limits.account
    };
    let f = fixture(limits);
    let token = desktop_token(&f).await;
    type Make<'a> = Box<dyn Fn() -> Request<Body> + 'a>;
    type Waits = Box<dyn Fn(&Answer) -> bool>;
    let paths: Vec<(&str, Make, Waits)> = vec![
        (
            "web login",
            Box::new(|| web_login("ann", "x")),
            Box::new(|a| a.status == StatusCode::TOO_MANY_REQUESTS && a.retry_after.is_some()),
        ),
        (
            "/api/auth/",
            Box::new(|| grant(&f, &token, "ann", "x")),
            Box::new(|a| a.status == StatusCode::TOO_MANY_REQUESTS && a.retry_after.is_some()),
        ),
        (
            "metrics basic",
            Box::new(|| basic("ann", "x")),
            Box::new(|a| a.status == StatusCode::TOO_MANY_REQUESTS && a.retry_after.is_some()),
        ),
        (
            "metrics bearer",
            Box::new(|| {
                Request::get("/metrics")
                    .header(header::AUTHORIZATION, "Bearer 0123")
                    .body(Body::empty())
                    .unwrap()
            }),
            Box::new(|a| a.status == StatusCode::TOO_MANY_REQUESTS),
        ),
        (
            "lastfm password",
            Box::new(|| mobile_session(&f, "ann", "x")),
            Box::new(|a| a.body.contains("\"error\":29")),
        ),
        (
            "lastfm authToken",
            Box::new(|| mobile_session_token(&f, "ann", "x")),
            Box::new(|a| a.body.contains("\"error\":29")),
        ),
        (
            "lastfm session key",
            Box::new(|| {
                lastfm(
                    &f,
                    &[
                        ("method", "track.updateNowPlaying"),
                        ("artist", "a"),
                        ("track", "t"),
                        ("sk", "0123"),
                    ],
                )
            }),
            Box::new(|a| a.body.contains("\"error\":29")),
        ),
        (
            "as12 handshake",
            Box::new(|| handshake("ann", "x")),
            Box::new(|a| a.body.starts_with("FAILED too many failed logins")),
        ),
        (
            "listenbrainz validate-token",
            Box::new(|| {
                Request::get("/1/validate-token")
                    .header(header::AUTHORIZATION, "Token 0123")
                    .body(Body::empty())
                    .unwrap()
            }),
            Box::new(|a| a.status == StatusCode::TOO_MANY_REQUESTS && a.retry_after.is_some()),
        ),
        (
            "listenbrainz submit",
            Box::new(|| {
                Request::post("/1/submit-listens")
                    .header(header::AUTHORIZATION, "Token 0123")
                    .body(Body::from("{}"))
                    .unwrap()
            }),
            Box::new(|a| a.status == StatusCode::TOO_MANY_REQUESTS && a.retry_after.is_some()),
        ),
        (
            "subsonic password",
            Box::new(|| get("/rest/ping?f=json&u=ann&p=x")),
            Box::new(|a| {
                subsonic_error(a).is_some_and(|(c, m)| c == 40 && m.starts_with(TOO_MANY))
            }),
        ),
        (
            "subsonic token",
            Box::new(|| ping_token("ann", "x")),
            Box::new(|a| {
                subsonic_error(a).is_some_and(|(c, m)| c == 40 && m.starts_with(TOO_MANY))
            }),
        ),
        (
            "subsonic apiKey",
            Box::new(|| get("/rest/ping?f=json&apiKey=0123")),
            Box::new(|a| {
                subsonic_error(a).is_some_and(|(c, m)| c == 44 && m.starts_with(TOO_MANY))
            }),
        ),
    ];
    for (i, (name, make, waits)) in paths.iter().enumerate() {
        let from = format!("203.0.113.{}", i + 1);
        let first = send(&f, &from, make()).await;
        assert!(
            !waits(&first),
            "{name}: the first try waited: {}",
            first.body
        );
        send(&f, &from, make()).await;
        let third = send(&f, &from, make()).await;
        assert!(
            waits(&third),
            "{name}: no wait: {} {}",
            third.status,
            third.body
        );
    }
}

#[tokio::test]
async fn an_unknown_user_gets_the_same_answer_as_a_wrong_password_on_every_path() {
    let f = fixture(Limits::default());
    let token = desktop_token(&f).await;
    let mut n = 0;
    // "nobody" tries ann's right password; ann a wrong one.
    for (name, known, unknown) in [
        ("web login", web_login("ann", "x"), web_login("nobody", PW)),
        (
            "/api/auth/",
            grant(&f, &token, "ann", "x"),
            grant(&f, &token, "nobody", PW),
        ),
        ("metrics basic", basic("ann", "x"), basic("nobody", PW)),
        (
            "lastfm password",
            mobile_session(&f, "ann", "x"),
            mobile_session(&f, "nobody", PW),
        ),
        (
            "lastfm authToken",
            mobile_session_token(&f, "ann", "x"),
            mobile_session_token(&f, "nobody", PW),
        ),
        (
            "subsonic password",
            get("/rest/ping?f=json&u=ann&p=x"),
            get(&format!("/rest/ping?f=json&u=nobody&p={}", enc(PW))),
        ),
        (
            "subsonic token",
            ping_token("ann", "x"),
            ping_token("nobody", PW),
        ),
        (
            "as12 handshake",
            handshake("ann", "x"),
            handshake("nobody", PW),
        ),
    ] {
        n += 2;
        let k = send(&f, &format!("203.0.113.{n}"), known).await;
        let u = send(&f, &format!("203.0.113.{}", n + 1), unknown).await;
        assert_eq!(
            (k.status, &k.body),
            (u.status, &u.body),
            "{name}: a known and an unknown user are told apart"
        );
        assert!(
            !k.status.is_success() || k.body.contains("error") || k.body.contains("BADAUTH"),
            "{name}: {}",
            k.body
        );
    }
}

#[tokio::test]
async fn an_unknown_user_takes_as_long_as_a_known_one() {
    let f = fixture(Limits::default());
    let token = desktop_token(&f).await;
    let mut known = Duration::MAX;
    let mut unknown = Duration::MAX;
    for i in 0..2 {
        let t = Instant::now();
        send(
            &f,
            &format!("203.0.113.{}", 10 + i),
            grant(&f, &token, "ann", "x"),
        )
        .await;
        known = known.min(t.elapsed());
        let t = Instant::now();
        send(
            &f,
            &format!("203.0.113.{}", 20 + i),
            grant(&f, &token, "nobody", "x"),
        )
        .await;
        unknown = unknown.min(t.elapsed());
    }
    // Both run one Argon2 check with the same parameters.
    assert!(
        unknown * 3 >= known && known * 3 >= unknown,
        "known user {known:?}, unknown user {unknown:?}"
    );
}
