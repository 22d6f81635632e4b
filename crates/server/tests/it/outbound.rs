//! URLs users give the server (forwarding links, pulls) never reach an
//! internal service: a service on 127.0.0.2 stands for one (an admin
//! page, a cloud metadata endpoint) and must see no request, asked
//! directly, through a redirect from an allowed address, or by a link
//! already saved; the errors name the refusal, not a remote body. The
//! allow-list lets 127.0.0.1 through, as an administrator allows a
//! household's own service.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use spindle_scrobble::outbound::Policy;
use spindle_server::forward::{linking, ForwardConfig, Link, LinkKind};
use spindle_server::import::{Api, Job, Pull, Source};
use spindle_server::{AppState, Server, ServerConfig};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::common;

const NOW: i64 = 1_750_000_000;

/// A service answering every request with `answer`, counting the
/// connections it takes: its address and the count.
async fn service(ip: &str, answer: String) -> (String, Arc<AtomicUsize>) {
    let listener = tokio::net::TcpListener::bind((ip, 0)).await.unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let hits = Arc::new(AtomicUsize::new(0));
    let h = hits.clone();
    tokio::spawn(async move {
        while let Ok((mut sock, _)) = listener.accept().await {
            h.fetch_add(1, Ordering::SeqCst);
            let answer = answer.clone();
            tokio::spawn(async move {
                let mut buf = [0u8; 8192];
                let _ = sock.read(&mut buf).await;
                let _ = sock.write_all(answer.as_bytes()).await;
            });
        }
    });
    (addr, hits)
}

fn http_answer(status: &str, extra: &str, body: &str) -> String {
    format!(
        "HTTP/1.1 {status}\r\n{extra}content-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    )
}

/// The internal service (127.0.0.2, never to be asked) and a redirector
/// on 127.0.0.1 (allowed) pointing at it.
async fn internal_and_redirector() -> ((String, Arc<AtomicUsize>), (String, Arc<AtomicUsize>)) {
    let secret = r#"{"valid": true, "user_name": "INTERNAL-SECRET", "token": "INTERNAL-SECRET"}"#;
    let internal = service("127.0.0.2", http_answer("200 OK", "", secret)).await;
    let location = format!("location: http://{}/secret\r\n", internal.0);
    let redirector = service(
        "127.0.0.1",
        http_answer("302 Found", &location, "REDIRECTOR-BODY"),
    )
    .await;
    (internal, redirector)
}

struct Running {
    state: AppState,
    stop: tokio::sync::oneshot::Sender<()>,
    run: tokio::task::JoinHandle<std::io::Result<()>>,
}

async fn start(data: &std::path::Path) -> Running {
    let mut config = ServerConfig::new(data);
    config.http.forward = ForwardConfig {
        lastfm_api_key: "key".into(),
        lastfm_api_secret: "secret".into(),
        outbound: Policy::guarded(&["127.0.0.1"]).unwrap(),
        ..ForwardConfig::default()
    };
    let server = Server::open(config).await.unwrap();
    let state = server.state().clone();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let run = tokio::spawn(server.run(listener, async move {
        let _ = stopped.await;
    }));
    Running { state, stop, run }
}

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
async fn a_link_to_an_internal_address_is_refused_directly_and_through_a_redirect_unasked() {
    let ((internal, asked), (redirector, redirected)) = internal_and_redirector().await;
    let tmp = tempfile::tempdir().unwrap();
    let a = start(tmp.path()).await;
    a.state
        .accounts
        .add_user("alice", "pw-alice-1234", NOW)
        .unwrap();
    let app = spindle_server::router(a.state.clone());
    let cookie = common::session(&app, "alice", "pw-alice-1234").await;

    let cases = [
        (
            "/ui/api/forward/listenbrainz",
            serde_json::json!({"url": format!("http://{internal}/anything?x="), "token": "t"}),
        ),
        (
            "/ui/api/forward/lastfm/start",
            serde_json::json!({"url": format!("http://{internal}/2.0/")}),
        ),
        (
            "/ui/api/forward/listenbrainz",
            serde_json::json!({"url": format!("http://{redirector}/"), "token": "t"}),
        ),
        (
            "/ui/api/forward/lastfm/start",
            serde_json::json!({"url": format!("http://{redirector}/2.0/")}),
        ),
    ];
    for (uri, body) in cases {
        let (status, _, answer) = common::send(&app, post(uri, &cookie, body.clone())).await;
        let answer = String::from_utf8_lossy(&answer).into_owned();
        assert_eq!(status.as_u16(), 403, "{uri} {body}: {answer}");
        assert!(answer.contains("loopback"), "{answer}");
        assert!(answer.contains("[outbound] allow"), "{answer}");
        assert!(!answer.contains("INTERNAL-SECRET"), "{answer}");
        assert!(!answer.contains("REDIRECTOR-BODY"), "{answer}");
    }
    assert_eq!(
        redirected.load(Ordering::SeqCst),
        2,
        "the allowed redirector was asked"
    );
    assert!(a.state.forward.statuses(Some("alice")).is_empty());

    // A link already on disk (made before the rule, or by hand) sends
    // nothing there either: the listen stays queued, the state says why.
    let root = linking::root(tmp.path());
    let l = Link {
        kind: LinkKind::Listenbrainz,
        url: format!("http://{internal}"),
        api_key: String::new(),
        api_secret: String::new(),
        secret: "t".into(),
        remote_user: "x".into(),
        linked_at: NOW,
    };
    linking::save(
        &root,
        "alice",
        "inside",
        &l,
        a.state.listens.committed_end(),
    )
    .unwrap();
    let end = Instant::now() + Duration::from_secs(30);
    while !a
        .state
        .forward
        .statuses(Some("alice"))
        .iter()
        .any(|s| s.running)
    {
        assert!(Instant::now() < end, "the link did not start");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let mut listen = spindle_listens::Listen::new("alice", a.state.now() - 60, "A", "T");
    listen.client = "web".into();
    spindle_server::scrobble::store(&a.state, vec![listen])
        .await
        .unwrap();
    let status = loop {
        let s = a.state.forward.statuses(Some("alice")).remove(0);
        if s.last_error.is_some() {
            break s;
        }
        assert!(Instant::now() < end, "no error: {s:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert!(
        status
            .last_error
            .as_deref()
            .unwrap_or("")
            .contains("loopback"),
        "{status:?}"
    );
    assert_eq!(status.pending, 1, "{status:?}");

    // A pull from there fails the same way.
    let job = Job::new(
        "alice",
        Source::Pull(Pull {
            api: Api::Listenbrainz,
            url: format!("http://{internal}"),
            remote_user: "bob".into(),
            key: None,
            cursor: None,
            pages: 0,
        }),
        NOW,
    );
    let done =
        spindle_server::import::run_here(a.state.clone().with_import_spool(tmp.path()), job).await;
    let error = done.error.unwrap_or_default();
    assert!(error.contains("loopback"), "{error}");

    assert_eq!(
        asked.load(Ordering::SeqCst),
        0,
        "the internal service was asked"
    );
    let _ = a.stop.send(());
    let _ = a.run.await;
}
