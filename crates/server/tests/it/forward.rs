//! Forwarding between two servers in this process, as `spindle serve`
//! runs them (`Server::open`, `Server::run`): alice's listens on A reach
//! bob on B through B's Last.fm 2.0 API and carol on B through B's
//! ListenBrainz API, in order, imports excepted; now playing reaches B;
//! her loves reach both (ListenBrainz only with a recording MBID); and a
//! shutdown of A joins the forwarding tasks.

use std::time::{Duration, Instant};

use crate::common;

use spindle_listens::{Listen, RecentQuery};
use spindle_scrobble::outbound::Policy;
use spindle_server::forward::{linking, ForwardConfig, Link, LinkKind};
use spindle_server::{AppState, Server, ServerConfig};

const NOW: i64 = 1_750_000_000;

struct Running {
    state: AppState,
    base: String,
    stop: tokio::sync::oneshot::Sender<()>,
    run: tokio::task::JoinHandle<std::io::Result<()>>,
}

/// What these tests link to: the other server, on 127.0.0.1, allowed as
/// an administrator would allow a service of the household's LAN.
fn allow_loopback() -> ForwardConfig {
    ForwardConfig {
        outbound: Policy::guarded(&["127.0.0.1"]).unwrap(),
        ..ForwardConfig::default()
    }
}

async fn start(data: &std::path::Path) -> Running {
    start_with(data, allow_loopback()).await
}

async fn start_with(data: &std::path::Path, forward: ForwardConfig) -> Running {
    let mut config = ServerConfig::new(data);
    config.http.forward = forward;
    let server = Server::open(config).await.unwrap();
    let state = server.state().clone();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let run = tokio::spawn(server.run(listener, async move {
        let _ = stopped.await;
    }));
    Running {
        state,
        base,
        stop,
        run,
    }
}

fn titles(st: &AppState, user: &str) -> Vec<String> {
    titles_and(st, user).into_iter().map(|l| l.title).collect()
}

/// `user`'s listens on `st`, oldest first.
fn titles_and(st: &AppState, user: &str) -> Vec<Listen> {
    let mut p = st
        .listens
        .recent(
            user,
            &RecentQuery {
                from: None,
                to: None,
                limit: 100,
                page: 1,
            },
        )
        .listens;
    p.reverse();
    p
}

async fn wait_until(what: &str, mut ok: impl FnMut() -> bool) {
    let end = Instant::now() + Duration::from_secs(30);
    while !ok() {
        assert!(Instant::now() < end, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// `l` credited to two artists, shown as one.
fn credited(mut l: Listen) -> Listen {
    l.artist = "Forwarded feat. Guest".into();
    l.credit(["Forwarded", "Guest"]);
    l
}

fn listen(title: &str, ts: i64, client: &str) -> Listen {
    let mut l = Listen::new("alice", ts, "Forwarded", title);
    l.client = client.into();
    l
}

/// Server B with bob (a Last.fm session under an API key for A) and
/// carol (a ListenBrainz token), and server A, in `dir`, whose alice links
/// both: `b-lastfm` as bob and `b-lb` as carol (checked by B). Returns A,
/// B, carol's token and the ListenBrainz link's remote user.
async fn alice_linked_to_b(dir: &std::path::Path) -> (Running, Running, String, String) {
    let b = start(&dir.join("b")).await;
    b.state
        .accounts
        .add_user("bob", "pw-bob-1234", NOW)
        .unwrap();
    b.state
        .accounts
        .add_user("carol", "pw-carol-1234", NOW)
        .unwrap();
    let (api_key, api_secret) = b.state.accounts.add_api_key("spindle A", NOW).unwrap();
    let session = b.state.accounts.new_session("bob", &api_key, NOW).unwrap();
    let carol_token = b.state.accounts.user_token("carol").unwrap();

    let a_dir = dir.join("a");
    let a = start(&a_dir).await;
    a.state
        .accounts
        .add_user("alice", "pw-alice-1234", NOW)
        .unwrap();
    let root = linking::root(&a_dir);
    let end = a.state.listens.committed_end();
    let lastfm = Link {
        kind: LinkKind::Lastfm,
        url: format!("{}/2.0/", b.base),
        api_key,
        api_secret,
        secret: session,
        remote_user: "bob".into(),
        linked_at: NOW,
    };
    linking::save(&root, "alice", "b-lastfm", &lastfm, end).unwrap();
    let lb = linking::listenbrainz(Some(&b.base), &carol_token, &allow_loopback(), NOW)
        .await
        .unwrap();
    linking::save(&root, "alice", "b-lb", &lb, end).unwrap();
    (a, b, carol_token, lb.remote_user)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn alices_listens_reach_both_services_of_another_server_in_order_but_not_her_imports() {
    let tmp = tempfile::tempdir().unwrap();
    let (a, b, carol_token, lb_user) = alice_linked_to_b(tmp.path()).await;
    assert_eq!(lb_user, "carol");

    let now = a.state.now();
    for (i, batch) in [
        vec![listen("one", now - 500, "web")],
        vec![
            listen("two", now - 400, "subsonic"),
            listen("imported", now - 350, "import/lastfm"),
        ],
        vec![credited(listen("three", now - 300, "listenbrainz"))],
    ]
    .into_iter()
    .enumerate()
    {
        spindle_server::scrobble::store(&a.state, batch)
            .await
            .unwrap_or_else(|e| panic!("batch {i}: {e}"));
    }
    let want = ["one", "two", "three"];
    wait_until("bob's listens on B", || titles(&b.state, "bob") == want).await;
    wait_until("carol's listens on B", || titles(&b.state, "carol") == want).await;
    // ListenBrainz got the credited artists as `artist_names`; Last.fm,
    // with its one artist field, the artist as shown.
    let last = |user: &str| titles_and(&b.state, user).pop().unwrap();
    let carols = last("carol");
    assert_eq!(
        (carols.artist.as_str(), carols.artists.as_slice()),
        (
            "Forwarded feat. Guest",
            &["Forwarded".to_owned(), "Guest".to_owned()][..]
        )
    );
    let bobs = last("bob");
    assert_eq!(bobs.artist, "Forwarded feat. Guest");
    assert!(bobs.artists.is_empty(), "{bobs:?}");
    // The registry has started both links by now: now playing goes out.
    wait_until("both links running", || {
        a.state
            .forward
            .statuses(Some("alice"))
            .iter()
            .all(|s| s.running && s.pending == 0)
    })
    .await;
    let mut np = listen("playing", now, "web");
    np.duration = Some(200);
    spindle_server::scrobble::check(&a.state, &np, false).unwrap();
    a.state.forward.now_playing(&np);
    let app = spindle_server::router(b.state.clone());
    let bob_token = b.state.accounts.user_token("bob").unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let bob = playing_now(&app, "bob", &bob_token).await;
        let carol = playing_now(&app, "carol", &carol_token).await;
        if bob.contains("\"playing\"") && carol.contains("\"playing\"") {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "no now playing on B: {bob} {carol}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let statuses = a.state.forward.statuses(Some("alice"));
    assert_eq!(statuses.len(), 2);
    for s in &statuses {
        assert_eq!((s.sent, s.pending, s.needs_auth), (3, 0, false), "{s:?}");
    }
    let metrics = a.state.forward.metrics();
    assert!(
        metrics.contains("spindle_forward_sent_total{user=\"alice\",service=\"b-lb\"} 3"),
        "{metrics}"
    );

    // Shutdown joins the forwarding tasks: `run` returns.
    let _ = a.stop.send(());
    tokio::time::timeout(Duration::from_secs(20), a.run)
        .await
        .expect("A stops")
        .unwrap()
        .unwrap();
    let _ = b.stop.send(());
    let _ = b.run.await;
}

/// The titles `user` loves on the server of `st`, sorted.
fn loved(st: &AppState, user: &str) -> Vec<String> {
    let mut v: Vec<String> = st
        .listens
        .loved(user)
        .into_iter()
        .map(|l| l.title)
        .collect();
    v.sort();
    v
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn alices_loves_reach_a_lastfm_and_a_listenbrainz_link_and_an_unlove_takes_them_back() {
    let tmp = tempfile::tempdir().unwrap();
    let (a, b, _, _) = alice_linked_to_b(tmp.path()).await;

    // A listen of a recording with an MBID (so that B knows it too), then
    // a love of it and a love of a track without one.
    let now = a.state.now();
    let mut heard = listen("with id", now - 100, "web");
    heard.mbid = "0f6c1a8e-1111-4222-8333-444455556666".into();
    spindle_server::scrobble::store(&a.state, vec![heard])
        .await
        .unwrap();
    for title in ["with id", "without id"] {
        spindle_server::scrobble::love(
            &a.state,
            "alice".into(),
            "Forwarded".into(),
            title.into(),
            true,
        )
        .await
        .unwrap();
    }
    wait_until("bob's loves on B", || {
        loved(&b.state, "bob") == ["with id", "without id"]
    })
    .await;
    wait_until("carol's love on B", || {
        loved(&b.state, "carol") == ["with id"]
    })
    .await;
    wait_until("the counts of both links", || {
        let mut s: Vec<(String, u64, u64, usize)> = a
            .state
            .forward
            .statuses(Some("alice"))
            .into_iter()
            .map(|s| (s.name, s.loves_sent, s.loves_skipped, s.pending))
            .collect();
        s.sort();
        s == [
            ("b-lastfm".to_owned(), 2, 0, 0),
            ("b-lb".to_owned(), 1, 1, 0),
        ]
    })
    .await;
    for s in a.state.forward.statuses(Some("alice")) {
        assert_eq!(s.last_error, None, "a skipped love is no error: {s:?}");
    }

    // An unlove goes the same way.
    spindle_server::scrobble::love(
        &a.state,
        "alice".into(),
        "Forwarded".into(),
        "with id".into(),
        false,
    )
    .await
    .unwrap();
    wait_until("bob's unlove on B", || {
        loved(&b.state, "bob") == ["without id"]
    })
    .await;
    wait_until("carol's unlove on B", || {
        loved(&b.state, "carol").is_empty()
    })
    .await;

    let _ = a.stop.send(());
    let _ = a.run.await;
    let _ = b.stop.send(());
    let _ = b.run.await;
}

/// B's ListenBrainz `playing-now` of `user`, as text.
async fn playing_now(app: &axum::Router, user: &str, token: &str) -> String {
    use tower::ServiceExt;
    let req = axum::http::Request::get(format!("/1/user/{user}/playing-now"))
        .header("authorization", format!("Token {token}"))
        .body(axum::body::Body::empty())
        .unwrap();
    let r = app.clone().oneshot(req).await.unwrap();
    let b = http_body_util::BodyExt::collect(r.into_body())
        .await
        .unwrap()
        .to_bytes();
    String::from_utf8_lossy(&b).into_owned()
}

/// A web UI POST with the session `cookie`.
fn post(uri: &str, cookie: &str, body: serde_json::Value) -> axum::http::Request<axum::body::Body> {
    axum::http::Request::post(uri)
        .header("host", "127.0.0.1:4533")
        .header("content-type", "application/json")
        .header("x-spindle-csrf", "1")
        .header("cookie", cookie)
        .body(axum::body::Body::from(body.to_string()))
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_link_made_on_the_settings_page_forwards_until_it_is_unlinked() {
    let tmp = tempfile::tempdir().unwrap();
    let b = start(&tmp.path().join("b")).await;
    b.state
        .accounts
        .add_user("carol", "pw-carol-1234", NOW)
        .unwrap();
    let carol_token = b.state.accounts.user_token("carol").unwrap();
    let a = start(&tmp.path().join("a")).await;
    a.state
        .accounts
        .add_user("alice", "pw-alice-1234", NOW)
        .unwrap();
    let app = spindle_server::router(a.state.clone());
    let cookie = common::session(&app, "alice", "pw-alice-1234").await;

    // A wrong token is checked at B and refused before anything is kept.
    let (status, _, body) = common::send(
        &app,
        post(
            "/ui/api/forward/listenbrainz",
            &cookie,
            serde_json::json!({"token": "wrong", "url": b.base, "name": "b"}),
        ),
    )
    .await;
    let body = String::from_utf8_lossy(&body).into_owned();
    assert_eq!(status.as_u16(), 502, "{body}");
    assert!(body.contains("refused the credential"), "{body}");
    assert!(a.state.forward.statuses(Some("alice")).is_empty());

    let (status, _, body) = common::send(
        &app,
        post(
            "/ui/api/forward/listenbrainz",
            &cookie,
            serde_json::json!({"token": carol_token, "url": b.base, "name": "b"}),
        ),
    )
    .await;
    assert!(status.is_success(), "{}", String::from_utf8_lossy(&body));
    let mut list = common::get("/ui/api/forward");
    list.headers_mut().insert("cookie", cookie.parse().unwrap());
    let (_, _, body) = common::send(&app, list).await;
    let v: serde_json::Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(v["links"][0]["remote_user"], "carol", "{v}");

    let now = a.state.now();
    spindle_server::scrobble::store(&a.state, vec![listen("kept", now - 100, "web")])
        .await
        .unwrap();
    wait_until("carol's listen on B", || {
        titles(&b.state, "carol") == ["kept"]
    })
    .await;

    let (status, _, _) = common::send(
        &app,
        post(
            "/ui/api/forward/unlink",
            &cookie,
            serde_json::json!({"name": "b"}),
        ),
    )
    .await;
    assert!(status.is_success());
    wait_until("the link to stop", || a.state.forward.totals().links == 0).await;
    spindle_server::scrobble::store(&a.state, vec![listen("not sent", now - 50, "web")])
        .await
        .unwrap();
    tokio::time::sleep(spindle_server::forward::RESCAN * 2).await;
    assert_eq!(titles(&b.state, "carol"), ["kept"]);

    let _ = a.stop.send(());
    let _ = a.run.await;
    let _ = b.stop.send(());
    let _ = b.run.await;
}

/// A ListenBrainz-compatible service that answers 503 to submissions
/// while `down` is set: its URL, the switch and the listens it took.
async fn flaky_service() -> (
    String,
    std::sync::Arc<std::sync::atomic::AtomicBool>,
    std::sync::Arc<std::sync::atomic::AtomicUsize>,
) {
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    use std::sync::Arc;
    let down = Arc::new(AtomicBool::new(true));
    let took = Arc::new(AtomicUsize::new(0));
    let (d, t) = (down.clone(), took.clone());
    let app = axum::Router::new().route(
        "/1/submit-listens",
        axum::routing::post(move |body: String| {
            let (d, t) = (d.clone(), t.clone());
            async move {
                if d.load(Ordering::SeqCst) {
                    return (axum::http::StatusCode::SERVICE_UNAVAILABLE, "{}".to_owned());
                }
                let v: serde_json::Value = serde_json::from_str(&body).unwrap();
                t.fetch_add(v["payload"].as_array().unwrap().len(), Ordering::SeqCst);
                (axum::http::StatusCode::OK, r#"{"status":"ok"}"#.to_owned())
            }
        }),
    );
    let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", l.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(l, app).await });
    (url, down, took)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retry_in_counts_down_and_a_stopped_server_saves_what_it_sent_while_stopping() {
    use spindle_server::forward::status;
    use std::sync::atomic::Ordering;
    let (url, down, took) = flaky_service().await;
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("a");
    let mut forward = allow_loopback();
    forward.backoff.first = Duration::from_secs(2);
    let a = start_with(&dir, forward).await;
    a.state
        .accounts
        .add_user("alice", "pw-alice-1234", NOW)
        .unwrap();
    let root = linking::root(&dir);
    let l = Link {
        kind: LinkKind::Listenbrainz,
        url,
        api_key: String::new(),
        api_secret: String::new(),
        secret: "tok".into(),
        remote_user: "al".into(),
        linked_at: NOW,
    };
    linking::save(&root, "alice", "flaky", &l, a.state.listens.committed_end()).unwrap();
    wait_until("the link to run", || {
        a.state
            .forward
            .statuses(Some("alice"))
            .iter()
            .any(|s| s.running)
    })
    .await;
    assert!(
        status::server_running(&dir),
        "the server runs on its data dir"
    );
    let now = a.state.now();
    spindle_server::scrobble::store(&a.state, vec![listen("late", now - 60, "web")])
        .await
        .unwrap();
    let retry_in = || a.state.forward.statuses(Some("alice"))[0].retry_in;
    wait_until("a failed send", || retry_in().is_some()).await;
    let first = retry_in().unwrap();
    // Asked again later, the wait is shorter: it is counted from the
    // moment of the request.
    wait_until("retry_in to count down", || {
        retry_in().is_some_and(|r| r < first - 0.2)
    })
    .await;
    assert_eq!(took.load(Ordering::SeqCst), 0);

    // The service is back just as the server stops: the queue's last try
    // while stopping delivers the listen, and that is saved.
    down.store(false, Ordering::SeqCst);
    let _ = a.stop.send(());
    tokio::time::timeout(Duration::from_secs(20), a.run)
        .await
        .expect("A stops")
        .unwrap()
        .unwrap();
    assert_eq!(took.load(Ordering::SeqCst), 1, "delivered while stopping");
    let saved = status::from_files(&root, Some("alice"));
    assert_eq!((saved[0].sent, saved[0].pending), (1, 0), "{saved:?}");
    assert_eq!(saved[0].last_error, None, "{saved:?}");
}
