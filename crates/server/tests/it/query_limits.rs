//! Searches from the network are bounded: a query over the network's parse
//! limits (a 60,000-term AND once grew to 16 GB) is refused at once by
//! Subsonic `search3` and the web search, each with its API's error; a
//! query over its time budget is stopped with the budget's message; and a
//! shutdown stops a running search within milliseconds.

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::common::{send, session, Setup};
use axum::body::Body;
use axum::http::{header, Request, StatusCode};
use spindle_server::{AppState, Config, SystemClock};
use spindle_store::Op;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const PW: &str = "pw";

struct Fixture {
    app: axum::Router,
    state: AppState,
    api_key: String,
    _setup: Setup,
}

/// The demo music, plus `extra` library entries without files whose
/// titles are `title(n)`: a query visits them all, so they make it heavy.
fn fixture(config: Config, extra: u32, title: impl Fn(u32) -> String) -> Fixture {
    let d = Setup::demo();
    let mut ops = Vec::new();
    for n in 0..extra {
        let id = d.db.reserve_id();
        ops.push(Op::CreateEntry(id));
        ops.push(Op::AddProp {
            entry: id,
            key: "title".into(),
            source: "plugin/id3v2".into(),
            value: title(n).into(),
        });
    }
    d.db.commit(ops).unwrap();
    let d = d.user("ann", PW);
    let api_key = d.token("ann");
    let state = d.state(config, Arc::new(SystemClock));
    Fixture {
        app: spindle_server::router(state.clone()),
        state,
        api_key,
        _setup: d,
    }
}

fn enc(s: &str) -> String {
    form_urlencoded::byte_serialize(s.as_bytes()).collect()
}

/// search3's error (code, message), or None for an answer. The query
/// goes in a form body (a URI holds at most 64 KiB).
async fn search3(f: &Fixture, query: &str) -> Option<(i64, String)> {
    let uri = format!("/rest/search3?f=json&v=1.16.1&c=test&apiKey={}", f.api_key);
    let req = Request::post(uri)
        .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
        .body(Body::from(format!("query={}", enc(query))))
        .unwrap();
    let (_, _, body) = send(&f.app, req).await;
    let v: serde_json::Value = serde_json::from_slice(&body).unwrap();
    let e = &v["subsonic-response"]["error"];
    e["code"]
        .as_i64()
        .map(|c| (c, e["message"].as_str().unwrap_or("").to_owned()))
}

async fn web_search(f: &Fixture, cookie: &str, q: &str) -> (StatusCode, serde_json::Value) {
    let req = Request::get(format!("/ui/api/search?q={}", enc(q)))
        .header(header::COOKIE, cookie)
        .body(Body::empty())
        .unwrap();
    let (s, _, body) = send(&f.app, req).await;
    (s, serde_json::from_slice(&body).unwrap())
}

fn terms(n: usize, term: &str, sep: &str) -> String {
    vec![term; n].join(sep)
}

#[tokio::test]
async fn a_60000_term_query_is_refused_by_search3_and_the_web_search_within_its_budget() {
    let f = fixture(Config::default(), 2000, |n| format!("a title {n}"));
    let cookie = session(&f.app, "ann", PW).await;
    let budget = f.state.config.query_time;
    for q in [
        terms(60_000, "title~a*", " AND "),
        terms(40_000, "title~a*", " OR "),
        terms(60_000, "title~a*", " "),
        format!("{}a", "(".repeat(100_000)),
        terms(60_000, "a", " "),
    ] {
        let short = &q[..20];
        let t = Instant::now();
        let (code, msg) = search3(&f, &q).await.expect("an error");
        assert_eq!(code, 0, "{short}: {msg}");
        assert!(msg.contains("at most"), "{short}: {msg}");
        assert!(t.elapsed() < budget, "{short}: {:?}", t.elapsed());
    }
    // The web search is a GET: its URI holds at most 64 KiB.
    for q in [
        terms(4_000, "title~a*", " AND "),
        terms(4_000, "title~a*", " OR "),
        format!("{}a", "(".repeat(20_000)),
    ] {
        let short = &q[..20];
        let t = Instant::now();
        let (s, v) = web_search(&f, &cookie, &q).await;
        assert_eq!(s, StatusCode::BAD_REQUEST, "{short}: {v}");
        let msg = v["error"].as_str().unwrap();
        assert!(msg.contains("at most"), "{short}: {msg}");
        assert!(t.elapsed() < budget, "{short}: {:?}", t.elapsed());
    }
    // Over the term limit but under the length limit: the parser says
    // which limit and what to do.
    let (_, msg) = search3(&f, &terms(65, "title~a*", " ")).await.unwrap();
    assert!(
        msg.contains("more than 64 terms") && msg.contains("from the network"),
        "{msg}"
    );
    // Within the limits, a search still answers.
    assert_eq!(search3(&f, &terms(64, "title~a*", " ")).await, None);
    let (s, v) = web_search(&f, &cookie, &terms(64, "title~a*", " ")).await;
    assert_eq!(s, StatusCode::OK, "{v}");
    assert!(v["total"].as_u64().unwrap() > 0, "{v}");
}

#[tokio::test]
async fn a_query_over_its_time_budget_is_stopped_with_the_apis_error() {
    let config = Config {
        query_time: Duration::ZERO,
        ..Config::default()
    };
    let f = fixture(config, 10, |n| format!("t{n}"));
    let (code, msg) = search3(&f, "title~a*").await.expect("an error");
    assert_eq!(code, 0);
    assert!(msg.contains("time limit"), "{msg}");
    let cookie = session(&f.app, "ann", PW).await;
    let (s, v) = web_search(&f, &cookie, "title~a*").await;
    assert_eq!(s, StatusCode::BAD_REQUEST);
    assert!(v["error"].as_str().unwrap().contains("time limit"), "{v}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_stops_a_running_search_within_milliseconds() {
    // Globs that backtrack over every title: legal (64 terms, under
    // 4 KiB) and slow, minutes of work without the budget.
    let config = Config {
        query_time: Duration::from_secs(120),
        ..Config::default()
    };
    let f = fixture(config, 20_000, |n| format!("{} {n}", "a".repeat(200)));
    let glob = format!("title~*{}b", "a".repeat(50));
    let q = terms(64, &glob, " OR ");
    assert!(q.len() <= 4096);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(spindle_server::serve(
        listener,
        f.state.clone(),
        async move {
            let _ = stop_rx.await;
        },
    ));
    let request = format!(
        "GET /rest/search3?f=json&v=1.16.1&c=t&apiKey={}&query={} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
        f.api_key,
        enc(&q)
    );
    let client = tokio::spawn(async move {
        let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
        s.write_all(request.as_bytes()).await.unwrap();
        let mut out = String::new();
        s.read_to_string(&mut out).await.unwrap();
        out
    });
    // Let the search start, then stop the server.
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(!client.is_finished(), "the search ended by itself");
    let t = Instant::now();
    let _ = stop_tx.send(());
    let answer = tokio::time::timeout(Duration::from_secs(10), client)
        .await
        .expect("the search still runs after the shutdown")
        .unwrap();
    let answered = t.elapsed();
    tokio::time::timeout(Duration::from_secs(10), server)
        .await
        .expect("the server still runs")
        .unwrap()
        .unwrap();
    let stopped = t.elapsed();
    assert!(answer.contains("shutting down"), "{answer}");
    assert!(answered < Duration::from_secs(2), "{answered:?}");
    assert!(stopped < Duration::from_secs(1), "{stopped:?}");
    eprintln!("answered {answered:?} after the shutdown; server stopped after {stopped:?}");
}
