//! Request bodies through the real server (`spindle_server::serve` on a
//! loopback port, raw HTTP/1.1 from the client side): a body over its
//! limit is refused before it is sent, a trickled body is cut at its
//! deadline, bodies beyond the server's byte budget get 503 instead of
//! being buffered, and ListenBrainz and Subsonic refuse bad credentials
//! before the body arrives.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::common::Setup;
use spindle_server::{Config, SystemClock};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

struct Server {
    addr: SocketAddr,
    token: String,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    _data: Setup,
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
    }
}

/// The whole server with `config`, one user `ann` (password `pw`).
async fn server(config: Config) -> Server {
    let d = Setup::empty().user("ann", "pw");
    let token = d.token("ann");
    let state = d.state(config, Arc::new(SystemClock));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(spindle_server::serve(listener, state, async move {
        let _ = stopped.await;
    }));
    Server {
        addr,
        token,
        stop: Some(stop),
        _data: d,
    }
}

/// Opens a connection and sends a request head only.
async fn head(addr: SocketAddr, head: &str) -> TcpStream {
    let mut s = TcpStream::connect(addr).await.unwrap();
    s.write_all(head.as_bytes()).await.unwrap();
    s
}

/// The status line and headers of the response on `s`, or `None` when
/// none arrives within `limit`.
async fn answer(s: &mut TcpStream, limit: Duration) -> Option<String> {
    let mut got = Vec::new();
    let mut chunk = [0u8; 4096];
    tokio::time::timeout(limit, async {
        loop {
            if let Some(end) = got.windows(4).position(|w| w == b"\r\n\r\n") {
                return Some(String::from_utf8_lossy(&got[..end]).into_owned());
            }
            match s.read(&mut chunk).await {
                Ok(0) | Err(_) => return None,
                Ok(n) => got.extend_from_slice(&chunk[..n]),
            }
        }
    })
    .await
    .ok()
    .flatten()
}

fn status(head: &str) -> u16 {
    head.get(9..12).and_then(|s| s.parse().ok()).unwrap_or(0)
}

#[tokio::test]
async fn a_declared_length_over_the_limit_is_refused_before_the_body_is_sent() {
    let srv = server(Config::default()).await;
    // 1 GiB declared to Last.fm, nothing sent after the head.
    let mut s = head(
        srv.addr,
        "POST /2.0/ HTTP/1.1\r\nHost: t\r\nContent-Type: application/x-www-form-urlencoded\r\n\
         Content-Length: 1073741824\r\n\r\n",
    )
    .await;
    let h = answer(&mut s, Duration::from_secs(2))
        .await
        .expect("an answer without the body");
    assert_eq!(status(&h), 413, "{h}");
    // ListenBrainz, with a valid token, over its 4 MiB.
    let mut s = head(
        srv.addr,
        &format!(
            "POST /1/submit-listens HTTP/1.1\r\nHost: t\r\nAuthorization: Token {}\r\n\
             Content-Length: 5000000\r\n\r\n",
            srv.token
        ),
    )
    .await;
    let h = answer(&mut s, Duration::from_secs(2))
        .await
        .expect("an answer");
    assert_eq!(status(&h), 413, "{h}");
    // Subsonic, credentials in the body: the pre-authentication cap.
    let mut s = head(
        srv.addr,
        "POST /rest/ping HTTP/1.1\r\nHost: t\r\nContent-Length: 200000\r\n\r\n",
    )
    .await;
    let h = answer(&mut s, Duration::from_secs(2))
        .await
        .expect("an answer");
    assert_eq!(status(&h), 413, "{h}");
}

#[tokio::test]
async fn a_body_trickled_a_byte_at_a_time_is_cut_at_the_deadline() {
    let srv = server(Config {
        body_timeout: Duration::from_millis(800),
        body_idle_timeout: Duration::from_millis(400),
        ..Config::default()
    })
    .await;
    let started = Instant::now();
    let mut s = head(
        srv.addr,
        "POST /2.0/ HTTP/1.1\r\nHost: t\r\nContent-Length: 100000\r\n\r\n",
    )
    .await;
    let (mut rd, mut wr) = s.split();
    let trickle = async {
        // One byte every 100 ms: never idle long, never done.
        for _ in 0..100 {
            if wr.write_all(b"a").await.is_err() {
                return;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    };
    let read = async {
        let mut got = Vec::new();
        let mut chunk = [0u8; 4096];
        let r = tokio::time::timeout(Duration::from_secs(4), async {
            loop {
                if let Some(end) = got.windows(4).position(|w| w == b"\r\n\r\n") {
                    return String::from_utf8_lossy(&got[..end]).into_owned();
                }
                match rd.read(&mut chunk).await {
                    Ok(0) | Err(_) => return String::new(),
                    Ok(n) => got.extend_from_slice(&chunk[..n]),
                }
            }
        })
        .await;
        r.expect("the trickle was held past its deadline")
    };
    let h = tokio::select! {
        h = read => h,
        () = trickle => panic!("the server read the whole trickle"),
    };
    assert_eq!(status(&h), 408, "{h}");
    let took = started.elapsed();
    assert!(
        took >= Duration::from_millis(700) && took < Duration::from_millis(2500),
        "{took:?}"
    );
}

#[tokio::test]
async fn bodies_beyond_the_byte_budget_get_503_instead_of_being_buffered() {
    // Room for two bodies of 400 KB at once.
    let srv = server(Config {
        body_budget: 1 << 20,
        body_timeout: Duration::from_secs(10),
        body_idle_timeout: Duration::from_secs(10),
        ..Config::default()
    })
    .await;
    let mut conns = Vec::new();
    for _ in 0..8 {
        let mut s = head(
            srv.addr,
            "POST /2.0/ HTTP/1.1\r\nHost: t\r\nContent-Length: 400000\r\n\r\n",
        )
        .await;
        s.write_all(&[b'a'; 1000]).await.unwrap();
        conns.push(s);
    }
    let mut busy = 0;
    let mut waiting = 0;
    for s in &mut conns {
        match answer(s, Duration::from_millis(1500)).await {
            Some(h) => {
                assert_eq!(status(&h), 503, "{h}");
                assert!(h.to_ascii_lowercase().contains("retry-after:"), "{h}");
                busy += 1;
            }
            None => waiting += 1,
        }
    }
    assert_eq!((busy, waiting), (6, 2));
}

#[tokio::test]
async fn a_listenbrainz_submit_without_a_valid_token_is_refused_before_its_body() {
    let srv = server(Config::default()).await;
    for auth in ["", "Authorization: Token not-a-token\r\n"] {
        let mut s = head(
            srv.addr,
            &format!(
                "POST /1/submit-listens HTTP/1.1\r\nHost: t\r\n{auth}Content-Length: 1000000\r\n\r\n"
            ),
        )
        .await;
        let h = answer(&mut s, Duration::from_secs(2))
            .await
            .expect("an answer before the body");
        assert_eq!(status(&h), 401, "{h}");
    }
}

#[tokio::test]
async fn a_subsonic_post_with_wrong_credentials_in_the_query_is_refused_before_its_body() {
    let srv = server(Config::default()).await;
    let mut s = head(
        srv.addr,
        "POST /rest/createPlaylist?u=ann&p=wrong&f=json HTTP/1.1\r\nHost: t\r\n\
         Content-Type: application/x-www-form-urlencoded\r\nContent-Length: 500000\r\n\r\n",
    )
    .await;
    let mut got = Vec::new();
    let r = tokio::time::timeout(Duration::from_secs(3), s.read_to_end(&mut got)).await;
    assert!(r.is_ok(), "the server waited for the body");
    let text = String::from_utf8_lossy(&got);
    assert!(text.contains("\"code\":40"), "{text}");
}
