//! The send queue against a scripted HTTP server on a loopback port:
//! outages, retries, error 9, restarts. Nothing is lost or sent twice.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "see clippy.toml")]
#![allow(clippy::panic, reason = "see clippy.toml")]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use spindle_scrobble::lastfm::LastFm;
use spindle_scrobble::{Backoff, Client, Journal, Msg, Scrobble, ServiceQueue};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use tokio::sync::mpsc;

/// A server that answers each request with the next (status, body) of
/// its script (the last one repeats) and records the request bodies.
struct Fake {
    url: String,
    bodies: Arc<Mutex<Vec<String>>>,
}

async fn fake(script: Vec<(u16, &'static str)>) -> Fake {
    let l = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let url = format!("http://{}/2.0/", l.local_addr().expect("addr"));
    let bodies = Arc::new(Mutex::new(Vec::new()));
    let b2 = bodies.clone();
    tokio::spawn(async move {
        let mut i = 0;
        loop {
            let Ok((mut sock, _)) = l.accept().await else {
                return;
            };
            let mut buf = Vec::new();
            let mut tmp = [0u8; 8192];
            let body = loop {
                let Ok(n) = sock.read(&mut tmp).await else {
                    break None;
                };
                if n == 0 {
                    break None;
                }
                buf.extend_from_slice(&tmp[..n]);
                let text = String::from_utf8_lossy(&buf).to_string();
                if let Some(h) = text.find("\r\n\r\n") {
                    let len = text[..h]
                        .lines()
                        .find_map(|l| {
                            l.to_ascii_lowercase()
                                .strip_prefix("content-length:")
                                .map(|v| v.trim().parse::<usize>().unwrap_or(0))
                        })
                        .unwrap_or(0);
                    if buf.len() >= h + 4 + len {
                        break Some(String::from_utf8_lossy(&buf[h + 4..h + 4 + len]).to_string());
                    }
                }
            };
            let Some(body) = body else { continue };
            let (status, reply) = script[i.min(script.len() - 1)];
            i += 1;
            b2.lock().expect("lock").push(body);
            let resp = format!(
                "HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{reply}",
                reply.len()
            );
            let _ = sock.write_all(resp.as_bytes()).await;
        }
    });
    Fake { url, bodies }
}

const OK: (u16, &str) = (200, r#"{"scrobbles":{"@attr":{"accepted":1,"ignored":0}}}"#);

fn client(url: &str) -> Client {
    Client::LastFm(LastFm::new(url, "key", "secret", "sk", "test").expect("client"))
}

fn s(i: i64) -> Scrobble {
    Scrobble {
        artist: "Artist".into(),
        track: format!("T{i}"),
        timestamp: 1_700_000_000 + i,
        ..Scrobble::default()
    }
}

fn fast() -> Backoff {
    Backoff {
        first: Duration::from_millis(20),
        max: Duration::from_millis(100),
        daily_limit: Duration::from_secs(3600),
    }
}

fn queue(c: Option<Client>, dir: &std::path::Path) -> ServiceQueue {
    let (j, _) = Journal::open(dir).expect("journal");
    ServiceQueue::new("test", c, j, fast(), Box::new(|_| {}))
}

/// The tracks of every scrobble request, in the order received.
fn sent_tracks(bodies: &[String]) -> Vec<Vec<String>> {
    bodies
        .iter()
        .filter(|b| b.contains("method=track.scrobble"))
        .map(|b| {
            let mut v: Vec<(usize, String)> = b
                .split('&')
                .filter_map(|kv| {
                    let (k, v) = kv.split_once('=')?;
                    let idx = k
                        .strip_prefix("track%5B")?
                        .strip_suffix("%5D")?
                        .parse()
                        .ok()?;
                    Some((idx, v.to_owned()))
                })
                .collect();
            v.sort();
            v.into_iter().map(|(_, t)| t).collect()
        })
        .collect()
}

async fn until(mut f: impl FnMut() -> bool) {
    for _ in 0..500 {
        if f() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("condition not met in 5 s");
}

#[tokio::test]
async fn scrobbles_wait_out_an_outage_and_arrive_once_in_order() {
    let d = tempfile::tempdir().expect("tempdir");
    let srv = fake(vec![
        (503, "busy"),
        (200, r#"{"error":16,"message":"try later"}"#),
        (429, ""),
        OK,
    ])
    .await;
    let q = queue(Some(client(&srv.url)), d.path());
    let state = q.state.clone();
    let (tx, rx) = mpsc::channel(16);
    let task = tokio::spawn(q.run(rx, Duration::ZERO));
    for i in 0..3 {
        tx.send(Msg::Scrobble(s(i))).await.expect("send");
    }
    until(|| state.lock().expect("lock").sent == 3).await;
    let sent = sent_tracks(&srv.bodies.lock().expect("lock"));
    // Three refused attempts, then everything once, oldest first.
    assert_eq!(sent.last().expect("a request"), &["T0", "T1", "T2"]);
    let accepted = sent.len() - 3;
    assert_eq!(accepted, 1, "{sent:?}");
    drop(tx);
    task.await.expect("task");
    assert!(Journal::peek(d.path()).expect("peek").is_empty());
}

#[tokio::test]
async fn scrobble_survives_restart_while_offline() {
    let d = tempfile::tempdir().expect("tempdir");
    // Offline: nothing listens on this port.
    let dead = {
        let l = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        format!("http://{}/2.0/", l.local_addr().expect("addr"))
    };
    let q = queue(Some(client(&dead)), d.path());
    let (tx, rx) = mpsc::channel(16);
    let task = tokio::spawn(q.run(rx, Duration::from_millis(50)));
    for i in 0..60 {
        tx.send(Msg::Scrobble(s(i))).await.expect("send");
    }
    drop(tx);
    task.await.expect("task");
    assert_eq!(Journal::peek(d.path()).expect("peek").len(), 60);
    // The daemon starts again, and the service is back.
    let srv = fake(vec![OK]).await;
    let q = queue(Some(client(&srv.url)), d.path());
    let state = q.state.clone();
    let (tx, rx) = mpsc::channel(16);
    let task = tokio::spawn(q.run(rx, Duration::ZERO));
    until(|| state.lock().expect("lock").pending == 0).await;
    drop(tx);
    task.await.expect("task");
    let sent = sent_tracks(&srv.bodies.lock().expect("lock"));
    let all: Vec<String> = sent.iter().flatten().cloned().collect();
    let want: Vec<String> = (0..60).map(|i| format!("T{i}")).collect();
    assert_eq!(all, want, "every scrobble once, in order");
    assert_eq!(sent.iter().map(Vec::len).collect::<Vec<_>>(), [50, 10]);
    // A third start sends nothing again.
    let srv2 = fake(vec![OK]).await;
    let q = queue(Some(client(&srv2.url)), d.path());
    let (tx, rx) = mpsc::channel(16);
    drop(tx);
    q.run(rx, Duration::from_millis(50)).await;
    assert!(srv2.bodies.lock().expect("lock").is_empty());
}

#[tokio::test]
async fn error_9_keeps_the_queue_until_new_credentials() {
    let d = tempfile::tempdir().expect("tempdir");
    let srv = fake(vec![
        (403, r#"{"error":9,"message":"Invalid session key"}"#),
        OK,
    ])
    .await;
    let flag = Arc::new(Mutex::new(Vec::new()));
    let f2 = flag.clone();
    let (j, _) = Journal::open(d.path()).expect("journal");
    let q = ServiceQueue::new(
        "test",
        Some(client(&srv.url)),
        j,
        fast(),
        Box::new(move |v| f2.lock().expect("lock").push(v)),
    );
    let state = q.state.clone();
    let (tx, rx) = mpsc::channel(16);
    let task = tokio::spawn(q.run(rx, Duration::ZERO));
    tx.send(Msg::Scrobble(s(0))).await.expect("send");
    until(|| state.lock().expect("lock").needs_auth).await;
    tx.send(Msg::Scrobble(s(1))).await.expect("send");
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(state.lock().expect("lock").pending, 2, "kept, not sent");
    assert_eq!(
        srv.bodies.lock().expect("lock").len(),
        1,
        "no retries while unauthorised"
    );
    // `spindle scrobble auth` stored a new key and flushed.
    tx.send(Msg::Flush(Some(client(&srv.url))))
        .await
        .expect("send");
    until(|| state.lock().expect("lock").pending == 0).await;
    assert_eq!(*flag.lock().expect("lock"), [true, false]);
    let sent = sent_tracks(&srv.bodies.lock().expect("lock"));
    assert_eq!(sent.last().expect("sent"), &["T0", "T1"]);
    drop(tx);
    task.await.expect("task");
}

#[tokio::test]
async fn a_refused_single_scrobble_is_dropped_and_the_rest_go_on() {
    let d = tempfile::tempdir().expect("tempdir");
    let bad = (400, r#"{"error":6,"message":"Invalid parameters"}"#);
    // 2 in a batch refused → batches of 1: T0 refused, T1 accepted.
    let srv = fake(vec![bad, bad, OK]).await;
    {
        let (mut j, _) = Journal::open(d.path()).expect("journal");
        j.append(&s(0)).expect("append");
        j.append(&s(1)).expect("append");
    }
    let q = queue(Some(client(&srv.url)), d.path());
    let state = q.state.clone();
    let (tx, rx) = mpsc::channel(16);
    let task = tokio::spawn(q.run(rx, Duration::ZERO));
    until(|| {
        srv.bodies.lock().expect("lock").len() == 3 && state.lock().expect("lock").pending == 0
    })
    .await;
    let sent = sent_tracks(&srv.bodies.lock().expect("lock"));
    assert_eq!(sent, [vec!["T0", "T1"], vec!["T0"], vec!["T1"]]);
    drop(tx);
    task.await.expect("task");
}

/// A love (or unlove) of `track` as the server's forwarding journals it.
fn love(track: &str, on: bool) -> Scrobble {
    Scrobble {
        artist: "Artist".into(),
        track: track.into(),
        timestamp: 1_700_000_100,
        love: Some(on),
        ..Scrobble::default()
    }
}

#[tokio::test]
async fn loves_in_the_journal_wait_out_an_outage_and_go_alone_in_their_place() {
    let d = tempfile::tempdir().expect("tempdir");
    let srv = fake(vec![(503, "busy"), OK]).await;
    let q = queue(Some(client(&srv.url)), d.path());
    let state = q.state.clone();
    let journal = q.journal.clone();
    let (tx, rx) = mpsc::channel(16);
    let task = tokio::spawn(q.run(rx, Duration::ZERO));
    for entry in [s(0), love("T0", true), s(1), love("T0", false)] {
        ServiceQueue::append_shared(&journal, &entry).expect("append");
    }
    tx.send(Msg::Wake).await.expect("send");
    until(|| {
        let st = state.lock().expect("lock");
        st.sent == 2 && st.loves_sent == 2 && st.pending == 0
    })
    .await;
    let methods: Vec<String> = srv
        .bodies
        .lock()
        .expect("lock")
        .iter()
        .filter_map(|b| {
            b.split('&')
                .find_map(|kv| kv.strip_prefix("method=").map(str::to_owned))
        })
        .collect();
    // The refused first try, then each in its place: the loves alone.
    assert_eq!(
        methods,
        [
            "track.scrobble",
            "track.scrobble",
            "track.love",
            "track.scrobble",
            "track.unlove"
        ]
    );
    drop(tx);
    task.await.expect("task");
    assert!(Journal::peek(d.path()).expect("peek").is_empty());
}

#[tokio::test]
async fn a_listenbrainz_love_without_a_recording_mbid_is_skipped_and_counted() {
    let d = tempfile::tempdir().expect("tempdir");
    let srv = fake(vec![(200, r#"{"status":"ok"}"#)]).await;
    let url = srv.url.trim_end_matches("/2.0/");
    let lb = spindle_scrobble::listenbrainz::ListenBrainz::new(url, "tok", "test").expect("lb");
    let q = queue(Some(Client::ListenBrainz(lb)), d.path());
    let state = q.state.clone();
    let journal = q.journal.clone();
    let (tx, rx) = mpsc::channel(16);
    let task = tokio::spawn(q.run(rx, Duration::ZERO));
    let mut with_mbid = love("T1", true);
    with_mbid.mbid = "0f6c1a8e-1111-4222-8333-444455556666".into();
    for entry in [love("T0", true), with_mbid] {
        ServiceQueue::append_shared(&journal, &entry).expect("append");
    }
    tx.send(Msg::Wake).await.expect("send");
    until(|| {
        let st = state.lock().expect("lock");
        st.loves_sent == 1 && st.loves_skipped == 1 && st.pending == 0
    })
    .await;
    let st = state.lock().expect("lock").clone();
    assert_eq!(st.last_error, None, "a skip is no error");
    let bodies = srv.bodies.lock().expect("lock").clone();
    assert_eq!(bodies.len(), 1, "{bodies:?}");
    assert!(bodies[0].contains("\"score\":1") && bodies[0].contains("444455556666"));
    drop(tx);
    task.await.expect("task");
}
