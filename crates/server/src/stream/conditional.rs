//! Range and conditional requests, for every streaming path (a file under
//! a music folder, [`crate::stream`]; a track through the storage tiers,
//! [`crate::tiered`]): one `Range` (RFC 9110 §14.2; suffix and open-ended
//! ranges; 206 and 416), `If-Range` with an entity tag or a date (§13.1.5),
//! and the 304s of `If-None-Match` and `If-Modified-Since` (§13.1.2,
//! §13.1.3), evaluated in the order of §13.2.2.
//!
//! A path describes its body by its [`Validators`] and length; [`head`]
//! answers with the status, the headers, and which bytes to send.

use std::ops::ControlFlow;
use std::time::{SystemTime, UNIX_EPOCH};

use axum::body::Body;
use axum::http::{header, response, HeaderMap, StatusCode};
use axum::response::Response;

use super::Sent;

/// What a `Range` header asks of a body of a given length.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RangeReq {
    /// No range, or one we do not serve (malformed, several ranges, a unit
    /// other than bytes): send the whole body with 200.
    Full,
    /// Bytes `start..=end` (inclusive), with 206.
    Partial { start: u64, end: u64 },
    /// A well-formed range entirely past the end: 416.
    Unsatisfiable,
}

/// Parses a `Range` header value against a body of `len` bytes (RFC 9110
/// §14.1.2). Several ranges are treated as unsupported: the whole body is
/// sent, which the RFC allows and every player copes with.
pub fn parse_range(value: &str, len: u64) -> RangeReq {
    let Some(spec) = value.trim().strip_prefix("bytes=") else {
        return RangeReq::Full;
    };
    let spec = spec.trim();
    if spec.contains(',') {
        return RangeReq::Full;
    }
    let Some((a, b)) = spec.split_once('-') else {
        return RangeReq::Full;
    };
    let (a, b) = (a.trim(), b.trim());
    let num = |s: &str| -> Option<u64> {
        if s.is_empty() || !s.bytes().all(|c| c.is_ascii_digit()) {
            return None;
        }
        s.parse().ok()
    };
    if a.is_empty() {
        // Suffix: the last N bytes.
        let Some(n) = num(b) else {
            return RangeReq::Full;
        };
        if n == 0 || len == 0 {
            return RangeReq::Unsatisfiable;
        }
        return RangeReq::Partial {
            start: len.saturating_sub(n),
            end: len - 1,
        };
    }
    let Some(start) = num(a) else {
        return RangeReq::Full;
    };
    let end = if b.is_empty() {
        None
    } else {
        match num(b) {
            Some(e) if e >= start => Some(e),
            _ => return RangeReq::Full,
        }
    };
    if start >= len {
        return RangeReq::Unsatisfiable;
    }
    RangeReq::Partial {
        start,
        end: end.map_or(len - 1, |e| e.min(len - 1)),
    }
}

/// What tells one version of a body from another: a strong entity tag
/// and, where the body has one, its modification time (sent as
/// `Last-Modified`, compared at the second).
#[derive(Debug, Clone)]
pub struct Validators {
    /// A strong tag, quotes included: `"…"`.
    pub etag: String,
    pub modified: Option<SystemTime>,
}

impl Validators {
    /// A file's: the tag from its size and modification time in
    /// nanoseconds, so a rewrite of the file changes it.
    pub fn of_file(meta: &std::fs::Metadata) -> Validators {
        let modified = meta.modified().unwrap_or(UNIX_EPOCH);
        let nanos = modified
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        Validators {
            etag: format!("\"{:x}-{:x}\"", meta.len(), nanos),
            modified: Some(modified),
        }
    }

    fn modified_secs(&self) -> Option<u64> {
        self.modified
            .map(|m| m.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs()))
    }

    /// `If-None-Match`: `*`, or any listed tag equal to ours by the weak
    /// comparison (§8.8.3.2).
    pub fn none_match(&self, value: &str) -> bool {
        let mine = self.etag.trim_start_matches("W/");
        value
            .split(',')
            .map(str::trim)
            .any(|t| t == "*" || t.trim_start_matches("W/") == mine)
    }

    /// `If-Modified-Since`: our date is not after the given one. Without
    /// a date of ours the condition is false (the body is sent).
    pub fn not_modified_since(&self, value: &str) -> bool {
        let (Some(mine), Ok(since)) = (self.modified_secs(), httpdate::parse_http_date(value))
        else {
            return false;
        };
        since
            .duration_since(UNIX_EPOCH)
            .is_ok_and(|d| mine <= d.as_secs())
    }

    /// `If-Range`: a strong tag equal to ours, or exactly our date; a
    /// weak tag, another tag or date, or a date when we have none, fail.
    pub fn if_range_holds(&self, value: &str) -> bool {
        let v = value.trim();
        if v.starts_with('"') {
            return v == self.etag;
        }
        if v.starts_with("W/") {
            return false;
        }
        let Some(mine) = self.modified_secs() else {
            return false;
        };
        httpdate::parse_http_date(v).is_ok_and(|d| {
            d.duration_since(UNIX_EPOCH)
                .is_ok_and(|d| d.as_secs() == mine)
        })
    }
}

/// What a request asks of a body, once its conditions are evaluated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answer {
    /// 304: the client's copy is current.
    NotModified,
    /// 416: the range lies past the end.
    Unsatisfiable,
    /// 200 (the whole body) or 206 (`Content-Range`): `count` bytes
    /// from `start`.
    Send {
        partial: bool,
        start: u64,
        count: u64,
    },
}

fn header_str(h: &HeaderMap, name: header::HeaderName) -> Option<&str> {
    h.get(name).and_then(|v| v.to_str().ok())
}

/// Evaluates the conditions and the range of a `GET` or `HEAD` for a
/// body of `len` bytes: `If-None-Match` (else `If-Modified-Since`), then
/// `Range`, which a failing `If-Range` turns into the whole body.
pub fn evaluate(req: &HeaderMap, v: &Validators, len: u64) -> Answer {
    let not_modified = match header_str(req, header::IF_NONE_MATCH) {
        Some(inm) => v.none_match(inm),
        None => header_str(req, header::IF_MODIFIED_SINCE).is_some_and(|d| v.not_modified_since(d)),
    };
    if not_modified {
        return Answer::NotModified;
    }
    let mut range = header_str(req, header::RANGE).map_or(RangeReq::Full, |r| parse_range(r, len));
    if header_str(req, header::IF_RANGE).is_some_and(|ir| !v.if_range_holds(ir)) {
        range = RangeReq::Full;
    }
    match range {
        RangeReq::Full => Answer::Send {
            partial: false,
            start: 0,
            count: len,
        },
        RangeReq::Partial { start, end } => Answer::Send {
            partial: true,
            start,
            count: end - start + 1,
        },
        RangeReq::Unsatisfiable => Answer::Unsatisfiable,
    }
}

/// A streaming answer whose head is decided: send `count` bytes from
/// `start` as the body of `builder`, whose status and headers are set.
pub struct Plan {
    pub builder: response::Builder,
    pub status: StatusCode,
    pub start: u64,
    pub count: u64,
}

/// Answers a `GET` or `HEAD` for a body of `len` bytes of `content_type`
/// with validators `v`: `Accept-Ranges`, `ETag`, `Last-Modified` (when
/// known) and `Cache-Control` on every answer, added to `b` (which may
/// carry headers of the caller's own), then the status of [`evaluate`]
/// with `Content-Range`, `Content-Type` and `Content-Length` as it needs.
/// An answer without a body (304, 416) comes back finished, as `Break`.
pub fn head(
    b: response::Builder,
    req: &HeaderMap,
    v: &Validators,
    len: u64,
    content_type: &str,
) -> ControlFlow<(Response, Sent), Plan> {
    let mut b = b
        .header(header::ACCEPT_RANGES, "bytes")
        .header(header::ETAG, &v.etag)
        .header(header::CACHE_CONTROL, "private, max-age=0");
    if let Some(m) = v.modified {
        b = b.header(header::LAST_MODIFIED, httpdate::fmt_http_date(m));
    }
    match evaluate(req, v, len) {
        Answer::NotModified => {
            let r = b
                .status(StatusCode::NOT_MODIFIED)
                .body(Body::empty())
                .unwrap_or_default();
            ControlFlow::Break((
                r,
                Sent {
                    status: 304,
                    bytes: 0,
                },
            ))
        }
        Answer::Unsatisfiable => {
            let r = b
                .status(StatusCode::RANGE_NOT_SATISFIABLE)
                .header(header::CONTENT_RANGE, format!("bytes */{len}"))
                .header(header::CONTENT_LENGTH, "0")
                .body(Body::empty())
                .unwrap_or_default();
            ControlFlow::Break((
                r,
                Sent {
                    status: 416,
                    bytes: 0,
                },
            ))
        }
        Answer::Send {
            partial,
            start,
            count,
        } => {
            let status = if partial {
                let end = start + count - 1;
                b = b.header(header::CONTENT_RANGE, format!("bytes {start}-{end}/{len}"));
                StatusCode::PARTIAL_CONTENT
            } else {
                StatusCode::OK
            };
            ControlFlow::Continue(Plan {
                builder: b
                    .status(status)
                    .header(header::CONTENT_TYPE, content_type)
                    .header(header::CONTENT_LENGTH, count),
                status,
                start,
                count,
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use axum::http::HeaderValue;

    use super::*;

    #[test]
    fn range_headers_are_parsed_as_rfc_9110_says() {
        use RangeReq::*;
        let p = |start, end| Partial { start, end };
        let len = 1000;
        let cases: &[(&str, RangeReq)] = &[
            ("bytes=0-99", p(0, 99)),
            ("bytes=100-", p(100, 999)),
            ("bytes=-100", p(900, 999)),
            ("bytes=-5000", p(0, 999)),
            ("bytes=990-5000", p(990, 999)),
            ("bytes=999-999", p(999, 999)),
            (" bytes= 5 - 9 ", p(5, 9)),
            ("bytes=1000-", Unsatisfiable),
            ("bytes=5000-6000", Unsatisfiable),
            ("bytes=-0", Unsatisfiable),
            // Malformed: ignored, the whole body is sent.
            ("bytes=9-5", Full),
            ("bytes=abc", Full),
            ("bytes=-", Full),
            ("bytes=1-2-3", Full),
            ("bytes=+1-2", Full),
            ("bytes=0x10-", Full),
            ("items=0-5", Full),
            ("", Full),
            ("bytes=99999999999999999999999-", Full),
            // Several or overlapping ranges: unsupported, whole body.
            ("bytes=0-1,5-6", Full),
            ("bytes=0-500,100-600", Full),
        ];
        for (h, want) in cases {
            assert_eq!(parse_range(h, len), *want, "Range: {h}");
        }
        assert_eq!(parse_range("bytes=0-", 0), Unsatisfiable);
        assert_eq!(parse_range("bytes=-1", 0), Unsatisfiable);
    }

    #[test]
    fn random_range_headers_never_panic_and_stay_in_bounds() {
        use rand::{Rng, SeedableRng};
        let seed: u64 = rand::random();
        let mut rng = rand::rngs::SmallRng::seed_from_u64(seed);
        let alphabet = b"bytes=-0123456789, x";
        for _ in 0..20_000 {
            let n = rng.gen_range(0..16);
            let h: String = (0..n)
                .map(|_| alphabet[rng.gen_range(0..alphabet.len())] as char)
                .collect();
            let h = if rng.gen_bool(0.7) {
                format!("bytes={h}")
            } else {
                h
            };
            let len = rng.gen_range(0..2000u64);
            if let RangeReq::Partial { start, end } = parse_range(&h, len) {
                assert!(start <= end && end < len, "seed {seed}: {h:?} len {len}");
            }
        }
    }

    fn headers(h: &[(&'static str, &str)]) -> HeaderMap {
        let mut m = HeaderMap::new();
        for (k, v) in h {
            m.insert(*k, HeaderValue::from_str(v).unwrap());
        }
        m
    }

    const DATE: &str = "Tue, 14 Nov 2023 22:13:20 GMT";

    fn dated() -> Validators {
        Validators {
            etag: "\"abc\"".into(),
            // 1_700_000_000.5: the half second is below a date's precision.
            modified: Some(UNIX_EPOCH + Duration::from_millis(1_700_000_000_500)),
        }
    }

    fn undated() -> Validators {
        Validators {
            etag: "\"abc\"".into(),
            modified: None,
        }
    }

    fn send(partial: bool, start: u64, count: u64) -> Answer {
        Answer::Send {
            partial,
            start,
            count,
        }
    }

    #[test]
    fn if_range_holds_for_our_strong_tag_or_exactly_our_date() {
        let range = |v: &Validators, ir: &str| {
            evaluate(
                &headers(&[("range", "bytes=10-19"), ("if-range", ir)]),
                v,
                100,
            )
        };
        let v = dated();
        assert_eq!(range(&v, "\"abc\""), send(true, 10, 10));
        assert_eq!(range(&v, DATE), send(true, 10, 10));
        // The obsolete date forms of RFC 9110 §5.6.7 are dates too.
        assert_eq!(
            range(&v, "Tuesday, 14-Nov-23 22:13:20 GMT"),
            send(true, 10, 10)
        );
        // Another tag, a weak tag, another date, or no date at all: the
        // whole body.
        for ir in [
            "\"stale\"",
            "W/\"abc\"",
            "Tue, 14 Nov 2023 22:13:21 GMT",
            "Tue, 14 Nov 2023 22:13:19 GMT",
            "yesterday",
        ] {
            assert_eq!(range(&v, ir), send(false, 0, 100), "If-Range: {ir}");
        }
        // A body without a date (a track through the tiers) never matches
        // a date, only its tag.
        let v = undated();
        assert_eq!(range(&v, DATE), send(false, 0, 100));
        assert_eq!(range(&v, "\"abc\""), send(true, 10, 10));
        // If-Range without Range changes nothing.
        assert_eq!(
            evaluate(&headers(&[("if-range", "\"stale\"")]), &v, 100),
            send(false, 0, 100)
        );
    }

    #[test]
    fn none_match_comes_before_modified_since_and_before_the_range() {
        let v = dated();
        let eval = |h: &[(&'static str, &str)]| evaluate(&headers(h), &v, 100);
        assert_eq!(eval(&[("if-none-match", "\"abc\"")]), Answer::NotModified);
        assert_eq!(eval(&[("if-none-match", "W/\"abc\"")]), Answer::NotModified);
        assert_eq!(
            eval(&[("if-none-match", "\"x\", \"abc\"")]),
            Answer::NotModified
        );
        assert_eq!(eval(&[("if-none-match", "*")]), Answer::NotModified);
        assert_eq!(
            eval(&[("if-none-match", "\"x\""), ("range", "bytes=0-0")]),
            send(true, 0, 1)
        );
        assert_eq!(eval(&[("if-modified-since", DATE)]), Answer::NotModified);
        assert_eq!(
            eval(&[("if-modified-since", "Tue, 14 Nov 2023 22:13:19 GMT")]),
            send(false, 0, 100)
        );
        // A failing If-None-Match wins over a matching If-Modified-Since.
        assert_eq!(
            eval(&[("if-none-match", "\"x\""), ("if-modified-since", DATE)]),
            send(false, 0, 100)
        );
        assert_eq!(eval(&[("range", "bytes=100-")]), Answer::Unsatisfiable);
        // No date of ours: If-Modified-Since is no reason for a 304.
        let v = undated();
        assert_eq!(
            evaluate(&headers(&[("if-modified-since", DATE)]), &v, 100),
            send(false, 0, 100)
        );
    }

    #[test]
    fn heads_carry_the_validators_and_the_range() {
        let v = dated();
        let h = headers(&[("range", "bytes=-10")]);
        let ControlFlow::Continue(Plan {
            builder,
            status,
            start,
            count,
        }) = head(Response::builder(), &h, &v, 100, "audio/flac")
        else {
            panic!("a body was expected");
        };
        assert_eq!(
            (status, start, count),
            (StatusCode::PARTIAL_CONTENT, 90, 10)
        );
        let r = builder.body(Body::empty()).unwrap();
        let hv = |n: header::HeaderName| r.headers()[n].to_str().unwrap().to_owned();
        assert_eq!(hv(header::CONTENT_RANGE), "bytes 90-99/100");
        assert_eq!(hv(header::CONTENT_LENGTH), "10");
        assert_eq!(hv(header::ETAG), "\"abc\"");
        assert_eq!(hv(header::LAST_MODIFIED), DATE);
        assert_eq!(hv(header::ACCEPT_RANGES), "bytes");

        let ControlFlow::Break((r, sent)) = head(
            Response::builder(),
            &headers(&[("range", "bytes=200-")]),
            &undated(),
            100,
            "audio/flac",
        ) else {
            panic!("a 416 was expected");
        };
        assert_eq!((r.status().as_u16(), sent.status), (416, 416));
        assert_eq!(r.headers()[header::CONTENT_RANGE], "bytes */100");
        assert!(!r.headers().contains_key(header::LAST_MODIFIED));
    }
}
