//! Streaming a track through the storage tiers (`spindle-tiers`): the
//! copy is chosen by measured latency among the hot folder, the music
//! folder and the cold replicas, and a copy that fails mid-stream is
//! replaced by another at the byte already sent, inside one response.
//!
//! A copy that is a local file (the hot folder, a folder device) is sent
//! as a file without tiers is: through the server's IO engine, cached
//! ranges by `sendfile` ([`crate::stream::pool::FileBody`]), from the very
//! descriptor the folder's checked open gave. Such a copy no longer fails
//! over mid-stream: a local read error ends the response, and the
//! client's retry with a `Range` lands on another copy, as after a node's
//! death. Failover mid-stream is for S3 copies (and, with tokio's reads,
//! `--io-engine tokio`, for every copy).
//!
//! Ranges and conditions are [`crate::stream::conditional`]'s, as for a
//! file: the validator is a strong `ETag` from the track's length and key
//! (the same on every copy, so a client resuming on another copy sees the
//! same tag). The copies' dates differ, so there is no `Last-Modified`:
//! `If-Modified-Since` sends the body and an `If-Range` date the whole
//! body.

use std::ops::ControlFlow;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use axum::body::{Body, Bytes};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::Response;
use spindle_tiers::{TierStream, Tiers, TrackRef};

use crate::stream::conditional::{self, parse_range, Plan, RangeReq, Validators};
use crate::stream::{plain, Reader, Sent};

fn etag_of(t: &TrackRef, len: u64) -> String {
    format!(
        "\"t{:x}-{:x}\"",
        len,
        spindle_tiers::placement::key_id(&t.key)
    )
}

/// Answers a `GET` (or `HEAD`) for track `t` through `tiers`. A `GET`
/// that starts at byte 0 counts as one access for the hot tier. A local
/// copy is sent by `reader`'s IO engine (see the module doc: it does not
/// fail over mid-stream); other copies, or every copy with tokio's reads,
/// stream through a [`TierStream`], which does.
pub async fn serve_track(
    tiers: &Arc<Tiers>,
    reader: &Reader,
    t: &TrackRef,
    content_type: &str,
    req: &HeaderMap,
    head: bool,
) -> (Response, Sent) {
    let hv = |n: header::HeaderName| req.get(n).and_then(|v| v.to_str().ok());
    // The length decides the range; when no copy's length is known
    // without opening one, open at 0 (and reopen at a range's start).
    let known = tiers.known_len(t);
    let start_hint = match (known, hv(header::RANGE)) {
        (Some(len), Some(r)) => match parse_range(r, len) {
            RangeReq::Partial { start, .. } => start,
            _ => 0,
        },
        _ => 0,
    };
    let probe = match tiers.open(t, start_hint).await {
        Ok(s) => s,
        Err(e) => return plain(StatusCode::SERVICE_UNAVAILABLE, e.to_string()),
    };
    let len = probe.len();
    let v = Validators {
        etag: etag_of(t, len),
        modified: None,
    };
    let b = Response::builder().header("x-spindle-device", probe.device());
    let Plan {
        builder: b,
        status,
        start,
        count,
    } = match conditional::head(b, req, &v, len, content_type) {
        ControlFlow::Continue(plan) => plan,
        ControlFlow::Break(done) => return done,
    };
    if !head && start == 0 {
        tiers.record_access(t, len);
    }
    let body = if head || count == 0 {
        Body::empty()
    } else if let Some(b) = local_body(reader, &probe, start, count) {
        b
    } else {
        let s = if start == start_hint {
            probe
        } else {
            drop(probe);
            match tiers.open(t, start).await {
                Ok(s) => s,
                Err(e) => return plain(StatusCode::SERVICE_UNAVAILABLE, e.to_string()),
            }
        };
        Body::from_stream(s.limit(start + count).into_stream())
    };
    let sent = Sent {
        status: status.as_u16(),
        bytes: if head { 0 } else { count },
    };
    (b.body(body).unwrap_or_default(), sent)
}

/// `count` bytes from `start` of the copy `s` reads, sent by `reader`'s
/// IO engine, when that copy is a local file and `reader` has an engine.
/// The bytes count for the copy's device as the stream's own would.
fn local_body(reader: &Reader, s: &TierStream, start: u64, count: u64) -> Option<Body> {
    let file = s.local_file()?;
    let inner = reader.file_body(file, start, count)?;
    Some(Body::new(Metered {
        inner,
        meter: s.meter(),
    }))
}

/// A body whose data frames are counted by `meter` as they go out.
struct Metered<B, F> {
    inner: B,
    meter: F,
}

impl<B, F> http_body::Body for Metered<B, F>
where
    B: http_body::Body<Data = Bytes> + Unpin,
    F: Fn(u64) + Unpin,
{
    type Data = Bytes;
    type Error = B::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Bytes>, B::Error>>> {
        let this = &mut *self;
        let got = Pin::new(&mut this.inner).poll_frame(cx);
        if let Poll::Ready(Some(Ok(f))) = &got {
            if let Some(d) = f.data_ref() {
                (this.meter)(d.len() as u64);
            }
        }
        got
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.inner.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;
    use http_body::Body as _;
    use spindle_tiers::device::{Backend, Folder, Throttle, Throttled};
    use spindle_tiers::placement::DecayedLfu;

    use crate::stream::ReadEngine;

    async fn body_of(r: Response) -> Vec<u8> {
        use http_body_util::BodyExt;
        r.into_body().collect().await.unwrap().to_bytes().to_vec()
    }

    fn headers(h: &[(&'static str, &str)]) -> HeaderMap {
        let mut m = HeaderMap::new();
        for (k, v) in h {
            m.insert(*k, HeaderValue::from_str(v).unwrap());
        }
        m
    }

    /// tokio's reads, and an IO engine (psync: no io_uring needed).
    fn readers() -> [Reader; 2] {
        let (pool, _) = Reader::start(ReadEngine::Io(spindle_io::EngineKind::Psync)).unwrap();
        [Reader::default(), pool]
    }

    /// A folder device `name` below `d`, throttled as told.
    fn throttled(
        d: &std::path::Path,
        name: &str,
        fail_after: Option<u64>,
        per_chunk: std::time::Duration,
    ) -> Arc<dyn Backend> {
        Arc::new(Throttled::new(
            Arc::new(Folder::new(name, d.join(name), false)),
            Throttle {
                parallel: 4,
                service: std::time::Duration::ZERO,
                fail_after,
                per_chunk,
            },
        ))
    }

    /// A track of 300,000 bytes stored as `x/t.flac` in each of `devs`
    /// below `d`; its bytes.
    fn store(d: &std::path::Path, devs: &[&str]) -> Vec<u8> {
        let data: Vec<u8> = (0..300_000u32).map(|i| (i * 13 % 241) as u8).collect();
        for dev in devs {
            std::fs::create_dir_all(d.join(dev).join("x")).unwrap();
            std::fs::write(d.join(dev).join("x/t.flac"), &data).unwrap();
        }
        data
    }

    fn track() -> TrackRef {
        TrackRef {
            key: "x/t.flac".into(),
            folder: None,
        }
    }

    /// Tiers over `devs`, each recorded as holding the track.
    fn tiers_of(
        d: &std::path::Path,
        data: &str,
        devs: Vec<(&str, Arc<dyn Backend>)>,
    ) -> Arc<Tiers> {
        let names: Vec<String> = devs.iter().map(|(n, _)| (*n).to_owned()).collect();
        let devs = devs.into_iter().map(|(n, b)| (n.to_owned(), b)).collect();
        let tiers = Arc::new(
            Tiers::with_devices(devs, &d.join(data), Box::new(DecayedLfu::new(0))).unwrap(),
        );
        for name in names {
            tiers.index().add("x/t.flac", &name, 300_000).unwrap();
        }
        tiers
    }

    #[tokio::test]
    async fn ranges_and_failover_reach_the_client_as_one_byte_exact_body() {
        let d = tempfile::tempdir().unwrap();
        let data = store(d.path(), &["a", "b"]);
        let t = track();
        let zero = std::time::Duration::ZERO;
        for (k, reader) in readers().iter().enumerate() {
            let mut failovers = 0;
            for round in 0..6 {
                // Copy a fails after 100,000 bytes: with either reader, a
                // stream that starts on it moves to b inside the response.
                let tiers = tiers_of(
                    d.path(),
                    &format!("data{k}-{round}"),
                    vec![
                        ("a", throttled(d.path(), "a", Some(100_000), zero)),
                        ("b", throttled(d.path(), "b", None, zero)),
                    ],
                );
                let serve = |h: HeaderMap, head: bool| {
                    let tiers = tiers.clone();
                    let t = t.clone();
                    async move { serve_track(&tiers, reader, &t, "audio/flac", &h, head).await }
                };
                let (r, sent) = serve(HeaderMap::new(), false).await;
                assert_eq!((r.status(), sent.bytes), (StatusCode::OK, 300_000));
                let etag = r.headers()[header::ETAG].to_str().unwrap().to_owned();
                assert_eq!(body_of(r).await, data, "reader {k} round {round}");

                let h = headers(&[("range", "bytes=90000-209999")]);
                let (r, _) = serve(h, false).await;
                assert_eq!(r.status(), StatusCode::PARTIAL_CONTENT);
                assert_eq!(
                    r.headers()[header::CONTENT_RANGE],
                    "bytes 90000-209999/300000"
                );
                assert_eq!(body_of(r).await, &data[90_000..210_000], "round {round}");

                let (r, _) = serve(headers(&[("range", "bytes=-10")]), false).await;
                assert_eq!(body_of(r).await, &data[299_990..]);

                let (r, _) = serve(headers(&[("range", "bytes=400000-")]), false).await;
                assert_eq!(r.status(), StatusCode::RANGE_NOT_SATISFIABLE);

                let (r, _) = serve(headers(&[("if-none-match", etag.as_str())]), false).await;
                assert_eq!(r.status(), StatusCode::NOT_MODIFIED);

                let h = headers(&[("range", "bytes=0-0"), ("if-range", "\"stale\"")]);
                let (r, _) = serve(h, false).await;
                assert_eq!(r.status(), StatusCode::OK);
                let h = headers(&[("range", "bytes=0-0"), ("if-range", etag.as_str())]);
                let (r, _) = serve(h, false).await;
                assert_eq!(r.status(), StatusCode::PARTIAL_CONTENT);
                // No copy's date stands for the track: a date never matches.
                let date = "Tue, 14 Nov 2023 22:13:20 GMT";
                let h = headers(&[("range", "bytes=0-0"), ("if-range", date)]);
                let (r, _) = serve(h, false).await;
                assert_eq!(r.status(), StatusCode::OK);
                assert!(!r.headers().contains_key(header::LAST_MODIFIED));

                let (r, _) = serve(HeaderMap::new(), true).await;
                assert_eq!(r.headers()[header::CONTENT_LENGTH], "300000");
                assert!(body_of(r).await.is_empty());
                failovers += tiers.status().failovers;
            }
            // A new device is tried first, so a is chosen in most rounds.
            assert!(failovers > 0, "reader {k}: no stream failed over");
        }
        let tiers = tiers_of(d.path(), "empty", vec![]);
        let missing = TrackRef {
            key: "nope.flac".into(),
            folder: None,
        };
        let (r, _) = serve_track(
            &tiers,
            &Reader::default(),
            &missing,
            "audio/flac",
            &HeaderMap::new(),
            false,
        )
        .await;
        assert_eq!(r.status(), StatusCode::SERVICE_UNAVAILABLE);
    }

    #[tokio::test]
    async fn a_local_copy_goes_through_the_io_engine_byte_exact_and_counted_for_its_device() {
        let d = tempfile::tempdir().unwrap();
        let data = store(d.path(), &["a"]);
        let t = track();
        let local: Arc<dyn Backend> = Arc::new(Folder::new("a", d.path().join("a"), false));
        let tiers = tiers_of(d.path(), "data", vec![("a", local)]);
        let [tokio_reads, engine] = readers();
        let cases = [
            (None, 200, 0..300_000),
            (Some("bytes=90000-209999"), 206, 90_000..210_000),
            (Some("bytes=-10"), 206, 299_990..300_000),
            (Some("bytes=299999-"), 206, 299_999..300_000),
        ];
        let mut sent = 0;
        for (range, status, want) in cases {
            let h = range.map_or_else(HeaderMap::new, |r| headers(&[("range", r)]));
            let (r, _) = serve_track(&tiers, &engine, &t, "audio/flac", &h, false).await;
            assert_eq!(r.status().as_u16(), status, "{range:?}");
            assert_eq!(r.headers()["x-spindle-device"], "a");
            // A body of known length is the engine's file body (what
            // `sendfile` sends from); the tiers' stream has none.
            let n = want.len() as u64;
            assert_eq!(r.body().size_hint().exact(), Some(n), "{range:?}");
            assert_eq!(body_of(r).await, &data[want], "{range:?}");
            sent += n;
            let st = tiers.status();
            assert_eq!(st.devices[0].bytes_read, sent, "{range:?}");
        }
        // tokio's reads: the tiers' stream, as before.
        let (r, _) =
            serve_track(&tiers, &tokio_reads, &t, "audio/flac", &headers(&[]), false).await;
        assert_eq!(r.body().size_hint().exact(), None);
        assert_eq!(body_of(r).await, data);
        assert_eq!(tiers.status().devices[0].bytes_read, sent + 300_000);
    }

    /// Through the real connection loop: a local copy's bytes leave by
    /// `sendfile` (the count `/metrics` shows), whole and as a range.
    #[tokio::test]
    async fn through_the_connection_loop_a_local_copy_goes_out_by_sendfile() {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let d = tempfile::tempdir().unwrap();
        let data = store(d.path(), &["a"]);
        let local: Arc<dyn Backend> = Arc::new(Folder::new("a", d.path().join("a"), false));
        let tiers = tiers_of(d.path(), "data", vec![("a", local)]);
        let [_, engine] = readers();
        let engine = Arc::new(engine);
        let app = axum::Router::new().route(
            "/t",
            axum::routing::get(move |h: HeaderMap| {
                let (tiers, engine) = (tiers.clone(), engine.clone());
                async move {
                    serve_track(&tiers, &engine, &track(), "audio/flac", &h, false)
                        .await
                        .0
                }
            }),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let sent = crate::stream::sendfile::SentBytes::default();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let server = tokio::spawn(crate::http::serve_connections(
            listener,
            app,
            crate::http::ConnSettings::from(&crate::Config::default()),
            sent.clone(),
            async move {
                let _ = stopped.await;
            },
        ));
        for (range, want) in [
            (None, 0..300_000),
            (Some("bytes=1000-250999"), 1000..251_000),
        ] {
            let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
            let range = range.map_or(String::new(), |r| format!("Range: {r}\r\n"));
            let req = format!("GET /t HTTP/1.1\r\nHost: t\r\nConnection: close\r\n{range}\r\n");
            s.write_all(req.as_bytes()).await.unwrap();
            let mut got = Vec::new();
            s.read_to_end(&mut got).await.unwrap();
            let end = got.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4;
            assert!(got[end..] == data[want.clone()], "{range}: bytes differ");
        }
        // Warm copies: the page cache holds them, so all of it went by
        // sendfile.
        assert_eq!(sent.get(), 300_000 + 250_000);
        let _ = stop.send(());
        server.await.unwrap().unwrap();
    }

    #[tokio::test]
    async fn a_copy_behind_a_slow_link_still_streams_through_the_tiers_with_an_io_engine() {
        let d = tempfile::tempdir().unwrap();
        let data = store(d.path(), &["s"]);
        let t = track();
        let slow = throttled(d.path(), "s", None, std::time::Duration::from_millis(1));
        let tiers = tiers_of(d.path(), "data", vec![("s", slow)]);
        let [_, engine] = readers();
        let h = headers(&[("range", "bytes=1000-")]);
        let (r, sent) = serve_track(&tiers, &engine, &t, "audio/flac", &h, false).await;
        assert_eq!(
            (r.status(), sent.bytes),
            (StatusCode::PARTIAL_CONTENT, 299_000)
        );
        assert_eq!(r.body().size_hint().exact(), None);
        assert_eq!(body_of(r).await, &data[1000..]);
        assert_eq!(tiers.status().devices[0].bytes_read, 299_000);
    }
}
