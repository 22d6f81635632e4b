//! Streaming a track through the storage tiers (`spindle-tiers`): the
//! copy is chosen by measured latency among the hot folder, the music
//! folder and the cold replicas, and a copy that fails mid-stream is
//! replaced by another at the byte already sent, inside one response.
//!
//! Ranges and conditions are [`crate::stream::conditional`]'s, as for a
//! file: the validator is a strong `ETag` from the track's length and key
//! (the same on every copy, so a client resuming on another copy sees the
//! same tag). The copies' dates differ, so there is no `Last-Modified`:
//! `If-Modified-Since` sends the body and an `If-Range` date the whole
//! body.

use std::ops::ControlFlow;
use std::sync::Arc;

use axum::body::Body;
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::Response;
use spindle_tiers::{Tiers, TrackRef};

use crate::stream::conditional::{self, parse_range, Plan, RangeReq, Validators};
use crate::stream::{plain, Sent};

fn etag_of(t: &TrackRef, len: u64) -> String {
    format!(
        "\"t{:x}-{:x}\"",
        len,
        spindle_tiers::placement::key_id(&t.key)
    )
}

/// Answers a `GET` (or `HEAD`) for track `t` through `tiers`. A `GET`
/// that starts at byte 0 counts as one access for the hot tier.
pub async fn serve_track(
    tiers: &Arc<Tiers>,
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

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;
    use spindle_tiers::device::{Backend, Folder, Throttle, Throttled};
    use spindle_tiers::placement::DecayedLfu;

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

    #[tokio::test]
    async fn ranges_and_failover_reach_the_client_as_one_byte_exact_body() {
        let d = tempfile::tempdir().unwrap();
        let data: Vec<u8> = (0..300_000u32).map(|i| (i * 13 % 241) as u8).collect();
        for dev in ["a", "b"] {
            std::fs::create_dir_all(d.path().join(dev).join("x")).unwrap();
            std::fs::write(d.path().join(dev).join("x/t.flac"), &data).unwrap();
        }
        let dev = |name: &str, fail_after| -> Arc<dyn Backend> {
            Arc::new(Throttled::new(
                Arc::new(Folder::new(name, d.path().join(name), false)),
                Throttle {
                    parallel: 4,
                    service: std::time::Duration::ZERO,
                    fail_after,
                    per_chunk: std::time::Duration::ZERO,
                },
            ))
        };
        let t = TrackRef {
            key: "x/t.flac".into(),
            folder: None,
        };
        for round in 0..6 {
            let tiers = Arc::new(
                Tiers::with_devices(
                    vec![
                        ("a".into(), dev("a", Some(100_000))),
                        ("b".into(), dev("b", None)),
                    ],
                    &d.path().join(format!("data{round}")),
                    Box::new(DecayedLfu::new(0)),
                )
                .unwrap(),
            );
            for name in ["a", "b"] {
                tiers.index().add("x/t.flac", name, 300_000).unwrap();
            }
            let (r, sent) = serve_track(&tiers, &t, "audio/flac", &HeaderMap::new(), false).await;
            assert_eq!((r.status(), sent.bytes), (StatusCode::OK, 300_000));
            let etag = r.headers()[header::ETAG].to_str().unwrap().to_owned();
            assert_eq!(body_of(r).await, data, "round {round}");

            let h = headers(&[("range", "bytes=90000-209999")]);
            let (r, _) = serve_track(&tiers, &t, "audio/flac", &h, false).await;
            assert_eq!(r.status(), StatusCode::PARTIAL_CONTENT);
            assert_eq!(
                r.headers()[header::CONTENT_RANGE],
                "bytes 90000-209999/300000"
            );
            assert_eq!(body_of(r).await, &data[90_000..210_000], "round {round}");

            let h = headers(&[("range", "bytes=-10")]);
            let (r, _) = serve_track(&tiers, &t, "audio/flac", &h, false).await;
            assert_eq!(body_of(r).await, &data[299_990..]);

            let h = headers(&[("range", "bytes=400000-")]);
            let (r, _) = serve_track(&tiers, &t, "audio/flac", &h, false).await;
            assert_eq!(r.status(), StatusCode::RANGE_NOT_SATISFIABLE);

            let h = headers(&[("if-none-match", etag.as_str())]);
            let (r, _) = serve_track(&tiers, &t, "audio/flac", &h, false).await;
            assert_eq!(r.status(), StatusCode::NOT_MODIFIED);

            let h = headers(&[("range", "bytes=0-0"), ("if-range", "\"stale\"")]);
            let (r, _) = serve_track(&tiers, &t, "audio/flac", &h, false).await;
            assert_eq!(r.status(), StatusCode::OK);
            let h = headers(&[("range", "bytes=0-0"), ("if-range", etag.as_str())]);
            let (r, _) = serve_track(&tiers, &t, "audio/flac", &h, false).await;
            assert_eq!(r.status(), StatusCode::PARTIAL_CONTENT);
            // No copy's date stands for the track: a date never matches.
            let date = "Tue, 14 Nov 2023 22:13:20 GMT";
            let h = headers(&[("range", "bytes=0-0"), ("if-range", date)]);
            let (r, _) = serve_track(&tiers, &t, "audio/flac", &h, false).await;
            assert_eq!(r.status(), StatusCode::OK);
            assert!(!r.headers().contains_key(header::LAST_MODIFIED));

            let (r, _) = serve_track(&tiers, &t, "audio/flac", &HeaderMap::new(), true).await;
            assert_eq!(r.headers()[header::CONTENT_LENGTH], "300000");
            assert!(body_of(r).await.is_empty());
        }
        let missing = TrackRef {
            key: "nope.flac".into(),
            folder: None,
        };
        let tiers = Arc::new(
            Tiers::with_devices(
                vec![],
                &d.path().join("empty"),
                Box::new(DecayedLfu::new(0)),
            )
            .unwrap(),
        );
        let (r, _) = serve_track(&tiers, &missing, "audio/flac", &HeaderMap::new(), false).await;
        assert_eq!(r.status(), StatusCode::SERVICE_UNAVAILABLE);
    }
}
