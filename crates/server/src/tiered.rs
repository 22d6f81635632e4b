//! Streaming a track through the storage tiers (`spindle-tiers`): the
//! copy is chosen by measured latency among the hot folder, the music
//! folder and the cold replicas, and a copy that fails mid-stream is
//! replaced by another at the byte already sent, inside one response.
//!
//! HTTP semantics follow [`crate::stream`]: one `Range` (206/416),
//! `Accept-Ranges`, and a strong `ETag` from the track's length and key
//! (the same on every copy, so a client resuming on another copy sees the
//! same tag); `If-None-Match` gives 304 and `If-Range` with another tag
//! sends the whole body.

use std::sync::Arc;

use axum::body::Body;
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::Response;
use spindle_tiers::{Tiers, TrackRef};

use crate::stream::{parse_range, RangeReq, Sent};

fn etag_of(t: &TrackRef, len: u64) -> String {
    format!(
        "\"t{:x}-{:x}\"",
        len,
        spindle_tiers::placement::key_id(&t.key)
    )
}

fn plain(status: StatusCode, msg: String) -> (Response, Sent) {
    let mut r = Response::new(Body::from(msg));
    *r.status_mut() = status;
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    (
        r,
        Sent {
            status: status.as_u16(),
            bytes: 0,
        },
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
    // Open at 0 first to learn the length; a range reopens at its start
    // (cheap: the copy with the best latency answers).
    let probe = match tiers.open(t, 0).await {
        Ok(s) => s,
        Err(e) => return plain(StatusCode::SERVICE_UNAVAILABLE, e.to_string()),
    };
    let len = probe.len();
    let etag = etag_of(t, len);
    let mut b = Response::builder()
        .header(header::ACCEPT_RANGES, "bytes")
        .header(header::ETAG, &etag)
        .header(header::CACHE_CONTROL, "private, max-age=0")
        .header("x-spindle-device", probe.device());
    if let Some(inm) = hv(header::IF_NONE_MATCH) {
        if inm
            .split(',')
            .any(|x| x.trim() == "*" || x.trim().trim_start_matches("W/") == etag)
        {
            let r = b
                .status(StatusCode::NOT_MODIFIED)
                .body(Body::empty())
                .unwrap_or_default();
            return (
                r,
                Sent {
                    status: 304,
                    bytes: 0,
                },
            );
        }
    }
    let mut range = hv(header::RANGE).map_or(RangeReq::Full, |r| parse_range(r, len));
    if let Some(ir) = hv(header::IF_RANGE) {
        if ir.trim() != etag {
            range = RangeReq::Full;
        }
    }
    let (status, start, count) = match range {
        RangeReq::Full => (StatusCode::OK, 0, len),
        RangeReq::Partial { start, end } => {
            b = b.header(header::CONTENT_RANGE, format!("bytes {start}-{end}/{len}"));
            (StatusCode::PARTIAL_CONTENT, start, end - start + 1)
        }
        RangeReq::Unsatisfiable => {
            let r = b
                .status(StatusCode::RANGE_NOT_SATISFIABLE)
                .header(header::CONTENT_RANGE, format!("bytes */{len}"))
                .header(header::CONTENT_LENGTH, "0")
                .body(Body::empty())
                .unwrap_or_default();
            return (
                r,
                Sent {
                    status: 416,
                    bytes: 0,
                },
            );
        }
    };
    if !head && start == 0 {
        tiers.record_access(t, len);
    }
    b = b
        .status(status)
        .header(header::CONTENT_TYPE, content_type)
        .header(header::CONTENT_LENGTH, count);
    let body = if head || count == 0 {
        Body::empty()
    } else {
        let s = if start == 0 {
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
