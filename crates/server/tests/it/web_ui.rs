//! The web UI: the page at `/` (the Audioscrobbler handshake still
//! answers `/?hs=true`), login with a session cookie, refusals without a
//! session, with a wrong or ended one, and for cross-site POSTs; search
//! with query-language errors at their column, streaming with the
//! session, artists and an artist page, now playing and recent listens,
//! the SVG charts over each period, and `/metrics` for a user only.

use std::sync::Arc;

use crate::common::{get, send, session, Setup};
use axum::body::Body;
use axum::http::{header, Request, StatusCode};
use spindle_server::{AppState, Config, SystemClock};
use tower::ServiceExt;

fn app() -> (axum::Router, Setup) {
    let (app, _, d) = app_with_state();
    (app, d)
}

fn app_with_state() -> (axum::Router, AppState, Setup) {
    let d = Setup::demo().user("ann", "pw").user("bob", "pw2");
    let state = d.state(Config::default(), Arc::new(SystemClock));
    (spindle_server::router(state.clone()), state, d)
}

fn login(csrf: bool, origin: Option<&str>, pw: &str) -> Request<Body> {
    login_as("ann", csrf, origin, pw)
}

fn login_as(user: &str, csrf: bool, origin: Option<&str>, pw: &str) -> Request<Body> {
    let mut b = Request::post("/ui/login")
        .header(header::HOST, "127.0.0.1:4533")
        .header(header::CONTENT_TYPE, "application/json");
    if csrf {
        b = b.header("x-spindle-csrf", "1");
    }
    if let Some(o) = origin {
        b = b.header(header::ORIGIN, o);
    }
    b.body(Body::from(format!(
        r#"{{"user":"{user}","password":"{pw}"}}"#
    )))
    .unwrap()
}

#[tokio::test]
async fn the_page_logs_in_searches_and_streams_with_a_session() {
    let (app, _d) = app();
    let (s, _, body) = send(&app, get("/")).await;
    assert_eq!(s, StatusCode::OK);
    assert!(String::from_utf8_lossy(&body).contains("<audio"));
    // The AS 1.2 handshake keeps its URL.
    let (_, _, body) = send(&app, get("/?hs=true&p=1.2&u=ann&t=1&a=x&c=tst&v=1")).await;
    assert!(!String::from_utf8_lossy(&body).contains("<html"));

    // No session: refused.
    for path in [
        "/ui/api/me",
        "/ui/api/search?q=",
        "/ui/api/recent",
        "/ui/stream/1",
    ] {
        let (s, _, _) = send(&app, get(path)).await;
        assert_eq!(s, StatusCode::UNAUTHORIZED, "{path}");
    }
    // Cross-site: no token, or a foreign Origin.
    let (s, c, _) = send(&app, login(false, None, "pw")).await;
    assert_eq!((s, c), (StatusCode::FORBIDDEN, None));
    let (s, c, _) = send(&app, login(true, Some("https://evil.example"), "pw")).await;
    assert_eq!((s, c), (StatusCode::FORBIDDEN, None));
    let (s, c, _) = send(&app, login(true, None, "wrong")).await;
    assert_eq!((s, c), (StatusCode::UNAUTHORIZED, None));

    let (s, c, _) = send(&app, login(true, Some("http://127.0.0.1:4533"), "pw")).await;
    assert_eq!(s, StatusCode::OK);
    let c = c.unwrap();
    assert!(
        c.contains("HttpOnly") && c.contains("SameSite=Strict"),
        "{c}"
    );
    let session = c.split(';').next().unwrap().to_owned();
    let get = |p: &str| get_as(p, &session);
    let (s, _, body) = send(&app, get("/ui/api/search?q=artist~sine%20AND%20tracknr:2")).await;
    assert_eq!(s, StatusCode::OK);
    let v: serde_json::Value = serde_json::from_slice(&body).unwrap();
    let titles: Vec<&str> = v["songs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["title"].as_str().unwrap())
        .collect();
    assert_eq!(titles.len(), 2, "{v}");
    let (s, _, body) = send(&app, get("/ui/api/search?q=artist:")).await;
    assert_eq!(s, StatusCode::BAD_REQUEST);
    let v: serde_json::Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(v["column"], 8, "{v}");

    let id = {
        let (_, _, body) = send(&app, get("/ui/api/search?q=")).await;
        let v: serde_json::Value = serde_json::from_slice(&body).unwrap();
        v["songs"][0]["id"].as_u64().unwrap()
    };
    let (s, _, body) = send(&app, get(&format!("/ui/stream/{id}"))).await;
    assert_eq!(s, StatusCode::OK);
    assert_eq!(&body[..4], b"RIFF");
    let (s, _, _) = send(&app, get("/ui/stream/..%2F..%2Fetc%2Fpasswd")).await;
    assert_eq!(s, StatusCode::NOT_FOUND);
}

/// A `GET` of `path` with the session `cookie`.
fn get_as(path: &str, cookie: &str) -> Request<Body> {
    Request::get(path)
        .header(header::COOKIE, cookie)
        .body(Body::empty())
        .unwrap()
}

async fn json_of(app: &axum::Router, req: Request<Body>) -> serde_json::Value {
    let (s, _, body) = send(app, req).await;
    assert_eq!(s, StatusCode::OK, "{}", String::from_utf8_lossy(&body));
    serde_json::from_slice(&body).unwrap()
}

/// A report of the web player, as the page sends it.
fn playing(cookie: Option<&str>, csrf: bool, origin: Option<&str>, body: &str) -> Request<Body> {
    let mut b = Request::post("/ui/api/playing")
        .header(header::HOST, "127.0.0.1:4533")
        .header(header::CONTENT_TYPE, "application/json");
    if let Some(c) = cookie {
        b = b.header(header::COOKIE, c);
    }
    if csrf {
        b = b.header("x-spindle-csrf", "1");
    }
    if let Some(o) = origin {
        b = b.header(header::ORIGIN, o);
    }
    b.body(Body::from(body.to_owned())).unwrap()
}

fn now() -> i64 {
    spindle_server::SystemClock.now_secs()
}

fn listen(user: &str, ts: i64, artist: &str, title: &str, album: &str) -> spindle_listens::Listen {
    let mut l = spindle_listens::Listen::new(user, ts, artist, title);
    l.album = album.to_owned();
    l
}

#[tokio::test]
async fn artists_list_and_an_artist_page_with_albums_and_top_tracks_by_listens() {
    let (app, state, _d) = app_with_state();
    let ann = session(&app, "ann", "pw").await;
    let t = now() - 3600;
    // Hum three times, Chime once, and a track the library lacks twice.
    let mut ls = Vec::new();
    for (i, title) in ["Hum", "Hum", "Hum", "Chime", "Lost Song", "Lost Song"]
        .iter()
        .enumerate()
    {
        ls.push(listen(
            "ann",
            t + i as i64 * 60,
            "Björk Generator",
            title,
            "Oscillator Suite",
        ));
    }
    // bob's listens count for bob only.
    ls.push(listen(
        "bob",
        t,
        "Björk Generator",
        "Whistle",
        "Oscillator Suite",
    ));
    state.listens.submit(&ls).unwrap();

    let v = json_of(&app, get_as("/ui/api/artists", &ann)).await;
    let artists = v["artists"].as_array().unwrap();
    let names: Vec<&str> = artists
        .iter()
        .map(|a| a["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["Björk Generator", "The Sine Waves"], "{v}");
    assert_eq!(artists[0]["listens"], 6);
    assert_eq!(artists[0]["albums"], 1);
    assert_eq!(artists[1]["albums"], 2);
    assert_eq!(artists[1]["songs"], 5);
    assert_eq!(artists[1]["listens"], 0);

    let id = artists[0]["id"].as_str().unwrap();
    let a = json_of(&app, get_as(&format!("/ui/api/artist/{id}"), &ann)).await;
    assert_eq!(a["name"], "Björk Generator");
    assert_eq!(a["listens"], 6);
    assert_eq!(a["albums"][0]["name"], "Oscillator Suite");
    assert_eq!(a["albums"][0]["tracks"].as_array().unwrap().len(), 3);
    let top: Vec<(String, u64, bool)> = a["top_tracks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            (
                t["title"].as_str().unwrap().to_owned(),
                t["listens"].as_u64().unwrap(),
                t["song"].is_object(),
            )
        })
        .collect();
    assert_eq!(
        top,
        [
            ("Hum".to_owned(), 3, true),
            ("Lost Song".to_owned(), 2, false),
            ("Chime".to_owned(), 1, true)
        ]
    );
    // The library's song, playable from the page.
    let song = &a["top_tracks"][0]["song"];
    let (s, _, body) = send(&app, get_as(&format!("/ui/stream/{}", song["id"]), &ann)).await;
    assert_eq!((s, &body[..4]), (StatusCode::OK, &b"RIFF"[..]));

    let bob = session(&app, "bob", "pw2").await;
    let b = json_of(&app, get_as(&format!("/ui/api/artist/{id}"), &bob)).await;
    assert_eq!(b["listens"], 1);
    assert_eq!(b["top_tracks"][0]["title"], "Whistle");

    let (s, _, _) = send(&app, get_as("/ui/api/artist/ar-0000000000000000", &ann)).await;
    assert_eq!(s, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn now_playing_and_recent_listens_follow_every_players_reports() {
    let (app, state, _d) = app_with_state();
    let ann = session(&app, "ann", "pw").await;
    let v = json_of(&app, get_as("/ui/api/now", &ann)).await;
    assert!(v["now_playing"].is_null(), "{v}");
    let songs = json_of(&app, get_as("/ui/api/search?q=title:hum", &ann)).await;
    let hum = songs["songs"][0]["id"].as_u64().unwrap();

    // The web player says it started a track.
    let (s, _, _) = send(
        &app,
        playing(Some(&ann), true, None, &format!(r#"{{"id":{hum}}}"#)),
    )
    .await;
    assert_eq!(s, StatusCode::OK);
    let v = json_of(&app, get_as("/ui/api/now", &ann)).await;
    assert_eq!(v["now_playing"]["title"], "Hum", "{v}");
    assert_eq!(v["now_playing"]["client"], "Spindle web");
    // Not bob's.
    let bob = session(&app, "bob", "pw2").await;
    let v = json_of(&app, get_as("/ui/api/now", &bob)).await;
    assert!(v["now_playing"].is_null(), "{v}");

    // Another client's now playing (Subsonic) replaces it.
    let chime = json_of(&app, get_as("/ui/api/search?q=title:chime", &ann)).await["songs"][0]["id"]
        .as_u64()
        .unwrap();
    let (s, _, _) = send(
        &app,
        get(format!(
            "/rest/scrobble?u=ann&p=pw&v=1.16.1&c=feishin&f=json&id={chime}&submission=false"
        )),
    )
    .await;
    assert_eq!(s, StatusCode::OK);
    let v = json_of(&app, get_as("/ui/api/now", &ann)).await;
    assert_eq!(v["now_playing"]["title"], "Chime", "{v}");
    assert_eq!(v["now_playing"]["client"], "feishin");

    // A scrobble from the web player, then one through the Subsonic API.
    let at = now() - 100;
    let (s, _, body) = send(
        &app,
        playing(
            Some(&ann),
            true,
            Some("http://127.0.0.1:4533"),
            &format!(r#"{{"id":{hum},"scrobble":true,"at":{at}}}"#),
        ),
    )
    .await;
    assert_eq!(s, StatusCode::OK, "{}", String::from_utf8_lossy(&body));
    let (s, _, _) = send(
        &app,
        get(format!(
            "/rest/scrobble?u=ann&p=pw&v=1.16.1&c=feishin&f=json&id={chime}"
        )),
    )
    .await;
    assert_eq!(s, StatusCode::OK);
    let v = json_of(&app, get_as("/ui/api/recent", &ann)).await;
    let titles: Vec<&str> = v["listens"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["title"].as_str().unwrap())
        .collect();
    assert_eq!(titles, ["Chime", "Hum"], "{v}");
    assert_eq!(v["total"], 2);
    assert_eq!(v["listens"][1]["at"], at);
    // The scrobble of the track playing ends its now playing.
    let v = json_of(&app, get_as("/ui/api/now", &ann)).await;
    assert!(v["now_playing"].is_null(), "{v}");
    // bob sees none of it.
    let v = json_of(&app, get_as("/ui/api/recent", &bob)).await;
    assert_eq!(v["total"], 0, "{v}");
    assert_eq!(state.listens.summary("ann").playcount, 2);

    // A listen too far in the future or for an unknown song is refused.
    let (s, _, _) = send(
        &app,
        playing(
            Some(&ann),
            true,
            None,
            &format!(r#"{{"id":{hum},"scrobble":true,"at":{}}}"#, now() + 86_400),
        ),
    )
    .await;
    assert_eq!(s, StatusCode::BAD_REQUEST);
    let (s, _, _) = send(&app, playing(Some(&ann), true, None, r#"{"id":999999}"#)).await;
    assert_eq!(s, StatusCode::NOT_FOUND);
    let (s, _, _) = send(&app, playing(Some(&ann), true, None, "not json")).await;
    assert_eq!(s, StatusCode::BAD_REQUEST);
    // A huge body is refused, not read into memory.
    let big = format!(r#"{{"id":{hum},"pad":"{}"}}"#, "x".repeat(1 << 20));
    let (s, _, _) = send(&app, playing(Some(&ann), true, None, &big)).await;
    assert_eq!(s, StatusCode::PAYLOAD_TOO_LARGE);
    assert_eq!(state.listens.summary("ann").playcount, 2);
}

fn svg_of(body: &[u8]) -> String {
    let s = String::from_utf8(body.to_vec()).unwrap();
    assert!(
        s.starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\""),
        "{s}"
    );
    assert!(s.ends_with("</svg>"));
    s
}

#[tokio::test]
async fn charts_are_svg_pictures_with_titles_and_a_bar_per_count_over_each_period() {
    let (app, state, _d) = app_with_state();
    let ann = session(&app, "ann", "pw").await;
    let day = 86_400;
    let n = now();
    let today = n - n % day;
    // Listens on 3 days of the last week, 2 more 20 days ago, 1 a
    // over two years ago; an artist name that needs escaping.
    let mut ls = Vec::new();
    for (i, &(ago, artist, title)) in [
        (0, "AC/DC & <Friends>", "T1"),
        (0, "AC/DC & <Friends>", "T2"),
        (1, "AC/DC & <Friends>", "T1"),
        (3, "The Sine Waves", "Middle C"),
        (20, "The Sine Waves", "Middle C"),
        (20, "Björk Generator", "Hum"),
        (800, "Björk Generator", "Hum"),
    ]
    .iter()
    .enumerate()
    {
        let album = if artist == "The Sine Waves" {
            "Pure Tones"
        } else {
            "X"
        };
        ls.push(listen(
            "ann",
            today - ago * day + 60 + i as i64,
            artist,
            title,
            album,
        ));
    }
    state.listens.submit(&ls).unwrap();
    let chart = |path: &str| get_as(path, &ann);

    let (s, _, body) = send(&app, chart("/ui/chart/listens.svg?period=7day")).await;
    assert_eq!(s, StatusCode::OK);
    let svg = svg_of(&body);
    assert!(
        svg.contains(r#"<title id="chart-listens-title">Listens per day, the last 7 days</title>"#),
        "{svg}"
    );
    assert!(svg.contains(r#"role="img""#));
    // One bar per day with listens: today (2 listens), yesterday, 3 days ago.
    assert_eq!(svg.matches(r#"class="bar""#).count(), 3, "{svg}");
    assert!(svg.contains(": 2 listens</title>"), "{svg}");

    let (_, _, body) = send(&app, chart("/ui/chart/listens.svg?period=30day")).await;
    assert_eq!(svg_of(&body).matches(r#"class="bar""#).count(), 4);
    // Over all time the columns are months, so two years fit.
    let (_, _, body) = send(&app, chart("/ui/chart/listens.svg?period=overall")).await;
    let svg = svg_of(&body);
    assert!(svg.contains("Listens per month, all time"), "{svg}");
    assert!(svg.contains("7 listens in"), "{svg}");

    let (_, _, body) = send(&app, chart("/ui/chart/artists.svg?period=30day")).await;
    let svg = svg_of(&body);
    assert!(svg.contains("Top artists, the last 30 days"));
    assert_eq!(svg.matches(r#"class="bar""#).count(), 3, "{svg}");
    assert!(svg.contains("AC/DC &amp; &lt;Friends&gt;"), "{svg}");
    assert!(!svg.contains("<Friends>"));
    assert!(
        svg.contains("<title>#1 AC/DC &amp; &lt;Friends&gt;: 3 listens</title>"),
        "{svg}"
    );
    // Artists of the library link to their page.
    assert!(svg.contains(r##"<a href="#/artist/ar-"##), "{svg}");
    let (_, _, body) = send(&app, chart("/ui/chart/artists.svg?period=overall&limit=1")).await;
    assert_eq!(svg_of(&body).matches(r#"class="bar""#).count(), 1);

    // A from/to range: 20 days ago only.
    let date = |ago: i64| spindle_server::time::date_of_day((today - ago * day) / day).to_string();
    let path = format!(
        "/ui/chart/albums.svg?period=range&from={}&to={}",
        date(20),
        date(20)
    );
    let (_, _, body) = send(&app, chart(&path)).await;
    let svg = svg_of(&body);
    assert_eq!(svg.matches(r#"class="bar""#).count(), 2, "{svg}");
    assert!(svg.contains(r##"<a href="#/album/al-"##), "{svg}");
    let path = format!(
        "/ui/chart/listens.svg?period=range&from={}&to={}",
        date(25),
        date(2)
    );
    let (_, _, body) = send(&app, chart(&path)).await;
    let svg = svg_of(&body);
    assert_eq!(svg.matches(r#"class="bar""#).count(), 2, "{svg}");
    assert!(svg.contains("3 listens in 24 columns"), "{svg}");

    // An empty period says so and draws no bars.
    let (_, _, body) = send(
        &app,
        chart("/ui/chart/tracks.svg?period=range&from=2010-01-01&to=2010-12-31"),
    )
    .await;
    let svg = svg_of(&body);
    assert!(svg.contains("No listens in this period"));
    assert_eq!(svg.matches(r#"class="bar""#).count(), 0);

    for bad in [
        "/ui/chart/listens.svg?period=fortnight",
        "/ui/chart/listens.svg?period=range&from=2024-01-01",
        "/ui/chart/listens.svg?period=range&from=2024-02-30&to=2024-03-01",
        "/ui/chart/listens.svg?period=range&from=2024-03-02&to=2024-03-01",
    ] {
        let (s, _, _) = send(&app, chart(bad)).await;
        assert_eq!(s, StatusCode::BAD_REQUEST, "{bad}");
    }
    let (s, _, _) = send(&app, chart("/ui/chart/passwords.svg")).await;
    assert_eq!(s, StatusCode::NOT_FOUND);
    // bob's charts are his: empty.
    let bob = session(&app, "bob", "pw2").await;
    let (_, _, body) = send(&app, get_as("/ui/chart/artists.svg?period=overall", &bob)).await;
    assert_eq!(svg_of(&body).matches(r#"class="bar""#).count(), 0);
}

#[tokio::test]
async fn every_ui_route_refuses_no_session_a_wrong_one_and_an_ended_one() {
    let (app, _state, _d) = app_with_state();
    let gets = [
        "/ui/api/me",
        "/ui/api/search?q=",
        "/ui/api/album/al-0",
        "/ui/api/artists",
        "/ui/api/artist/ar-0",
        "/ui/api/recent",
        "/ui/api/now",
        "/ui/chart/listens.svg",
        "/ui/chart/artists.svg?period=overall",
        "/ui/chart/albums.svg",
        "/ui/chart/tracks.svg",
        "/ui/stream/1",
    ];
    let ann = session(&app, "ann", "pw").await;
    // Log a second session out: its cookie no longer works.
    let ended = session(&app, "ann", "pw").await;
    let (s, _, _) = send(
        &app,
        Request::post("/ui/logout")
            .header(header::COOKIE, ended.as_str())
            .header("x-spindle-csrf", "1")
            .body(Body::empty())
            .unwrap(),
    )
    .await;
    assert_eq!(s, StatusCode::OK);
    for path in gets {
        let (s, _, _) = send(&app, get(path)).await;
        assert_eq!(s, StatusCode::UNAUTHORIZED, "no session: {path}");
        let (s, _, _) = send(
            &app,
            get_as(path, "spindle_session=0123456789abcdef0123456789abcdef"),
        )
        .await;
        assert_eq!(s, StatusCode::UNAUTHORIZED, "made-up session: {path}");
        let (s, _, _) = send(&app, get_as(path, &ended)).await;
        assert_eq!(s, StatusCode::UNAUTHORIZED, "ended session: {path}");
        let (s, _, _) = send(&app, get_as(path, &ann)).await;
        assert_ne!(s, StatusCode::UNAUTHORIZED, "good session: {path}");
    }
    // The player's reports: the CSRF header and a same-origin Origin, then
    // a session.
    let body = r#"{"id":1,"scrobble":true}"#;
    let (s, _, _) = send(&app, playing(Some(&ann), false, None, body)).await;
    assert_eq!(s, StatusCode::FORBIDDEN);
    let (s, _, _) = send(
        &app,
        playing(Some(&ann), true, Some("https://evil.example"), body),
    )
    .await;
    assert_eq!(s, StatusCode::FORBIDDEN);
    let (s, _, _) = send(&app, playing(None, true, None, body)).await;
    assert_eq!(s, StatusCode::UNAUTHORIZED);
    let (s, _, _) = send(&app, playing(Some(&ended), true, None, body)).await;
    assert_eq!(s, StatusCode::UNAUTHORIZED);
    // A login body larger than a login is refused before it is parsed.
    let (s, c, _) = send(
        &app,
        Request::post("/ui/login")
            .header("x-spindle-csrf", "1")
            .body(Body::from(vec![b' '; 1 << 20]))
            .unwrap(),
    )
    .await;
    assert_eq!((s, c), (StatusCode::PAYLOAD_TOO_LARGE, None));
    // Logout is a POST with the token too: without it the session stays.
    let (s, _, _) = send(
        &app,
        Request::post("/ui/logout")
            .header(header::COOKIE, ann.as_str())
            .body(Body::empty())
            .unwrap(),
    )
    .await;
    assert_eq!(s, StatusCode::FORBIDDEN);
    let (s, _, _) = send(&app, get_as("/ui/api/me", &ann)).await;
    assert_eq!(s, StatusCode::OK);
}

fn metrics_req(auth: Option<&str>, cookie: Option<&str>) -> Request<Body> {
    let mut b = Request::get("/metrics");
    if let Some(a) = auth {
        b = b.header(header::AUTHORIZATION, a);
    }
    if let Some(c) = cookie {
        b = b.header(header::COOKIE, c);
    }
    b.body(Body::empty()).unwrap()
}

#[tokio::test]
async fn metrics_answer_a_user_by_basic_bearer_or_session_and_refuse_others() {
    let (app, state, _d) = app_with_state();
    let r = app.clone().oneshot(metrics_req(None, None)).await.unwrap();
    assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
    assert!(r.headers()[header::WWW_AUTHENTICATE]
        .to_str()
        .unwrap()
        .starts_with("Basic realm="));
    // "ann:pw", "ann:nope", "nobody:pw" in base64.
    let token = state.accounts.user_token("ann").unwrap();
    for (auth, want) in [
        ("Basic YW5uOnB3", StatusCode::OK),
        ("basic YW5uOnB3", StatusCode::OK),
        ("Basic YW5uOm5vcGU=", StatusCode::UNAUTHORIZED),
        ("Basic bm9ib2R5OnB3", StatusCode::UNAUTHORIZED),
        ("Basic !!!", StatusCode::UNAUTHORIZED),
        (&format!("Bearer {token}"), StatusCode::OK),
        (
            "Bearer 00000000000000000000000000000000",
            StatusCode::UNAUTHORIZED,
        ),
        ("Digest x", StatusCode::UNAUTHORIZED),
    ] {
        let (s, _, body) = send(&app, metrics_req(Some(auth), None)).await;
        assert_eq!(s, want, "{auth}");
        if s == StatusCode::OK {
            let text = String::from_utf8(body).unwrap();
            assert!(text.contains("spindle_library_songs 8"), "{text}");
            // The refusals before this one were counted, under their API.
            assert!(
                text.contains(r#"spindle_api_request_errors_total{api="metrics"} "#)
                    && !text.contains(r#"spindle_api_request_errors_total{api="metrics"} 0"#),
                "{text}"
            );
        }
    }
    let ann = session(&app, "ann", "pw").await;
    let (s, _, _) = send(&app, metrics_req(None, Some(&ann))).await;
    assert_eq!(s, StatusCode::OK);
    let (s, _, _) = send(
        &app,
        metrics_req(None, Some("spindle_session=0123456789abcdef")),
    )
    .await;
    assert_eq!(s, StatusCode::UNAUTHORIZED);
    // What the Subsonic and OpenSubsonic specs leave public stays public
    // (OpenSubsonic: getOpenSubsonicExtensions); the rest asks for a user.
    for (path, want) in [
        ("/rest/getOpenSubsonicExtensions?f=json", "ok"),
        ("/rest/ping?f=json", "failed"),
        ("/rest/getArtists?f=json", "failed"),
    ] {
        let (s, _, body) = send(&app, get(path)).await;
        let v: serde_json::Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(
            (s, v["subsonic-response"]["status"].as_str()),
            (StatusCode::OK, Some(want)),
            "{path}"
        );
    }
}

#[tokio::test]
async fn the_web_player_gets_the_transcode_rules_of_its_user_and_client_name() {
    let d = Setup::demo().user("ann", "pw").user("bob", "pw2");
    let rule = "[[transcode.rule]]\nuser = \"ann\"\nclient = \"Spindle web\"\n\
                format = \"opus\"\nbitrate = 96\n";
    let config = Config {
        transcode: spindle_server::transcode::TranscodeConfig::parse(
            rule,
            std::path::Path::new("server.toml"),
        )
        .unwrap(),
        ..Config::default()
    };
    let app = spindle_server::router(d.state(config, Arc::new(SystemClock)));
    let ann = session(&app, "ann", "pw").await;
    let bob = session(&app, "bob", "pw2").await;
    let id = {
        let (_, _, body) = send(&app, get_as("/ui/api/search?q=", &ann)).await;
        let v: serde_json::Value = serde_json::from_slice(&body).unwrap();
        v["songs"][0]["id"].as_u64().unwrap()
    };
    // HEAD: the answer's headers say what a GET would send, with no
    // encode started.
    let head = |uri: String, cookie: Option<&str>| {
        let mut b = Request::head(uri).header(header::HOST, "127.0.0.1:4533");
        if let Some(c) = cookie {
            b = b.header(header::COOKIE, c);
        }
        let app = app.clone();
        async move {
            let r = app.oneshot(b.body(Body::empty()).unwrap()).await.unwrap();
            assert_eq!(r.status(), StatusCode::OK);
            r.headers()
                .get("x-spindle-transcode")
                .map(|v| v.to_str().unwrap().to_owned())
        }
    };
    let web = format!("/ui/stream/{id}");
    assert_eq!(
        head(web.clone(), Some(&ann)).await.as_deref(),
        Some("opus-96")
    );
    assert_eq!(head(web, Some(&bob)).await, None, "no rule covers bob");
    // The Subsonic API applies the same rule to the same client name, and
    // not to another.
    let rest = |c: &str| format!("/rest/stream?u=ann&p=pw&v=1.16.1&c={c}&id={id}");
    assert_eq!(
        head(rest("Spindle%20web"), None).await.as_deref(),
        Some("opus-96")
    );
    assert_eq!(head(rest("DSub"), None).await, None);
}
