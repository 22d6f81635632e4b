//! Reading request bodies: the one reader every API uses, with its limits.
//!
//! A body costs memory for as long as it is being read and parsed, and
//! on most APIs it is read before anyone is authenticated (Last.fm 2.0 and
//! Audioscrobbler 1.2 carry their credentials in it). So [`read_body`]
//! bounds each body three ways:
//!
//! - **size**: a per-request limit, checked against `Content-Length`
//!   before a byte is read (so an oversized body is refused unread) and
//!   again while reading (chunked bodies);
//! - **time**: a deadline for the whole body ([`Config::body_timeout`])
//!   and a longest pause between two pieces of it
//!   ([`Config::body_idle_timeout`]), so a client trickling a byte a second
//!   holds its connection for seconds, not for as long as it likes;
//! - **all connections together**: every buffered body byte is charged to
//!   one budget ([`Config::body_budget`]) before it is buffered — the
//!   declared length up front, or each chunk as it comes — and given back
//!   when the [`BodyBytes`] are dropped. A body that does not fit is
//!   refused at once with 503 and `Retry-After` ([`BodyError::Busy`]);
//!   nothing waits for room.
//!
//! Each API turns a [`BodyError`] into its own error format (Last.fm
//! error 6 or 16, Subsonic error 0, ListenBrainz's JSON, AS 1.2's
//! `FAILED`, the web UI's JSON) and [`BodyError::decorate`] gives that
//! response its HTTP status and `Retry-After`.
//!
//! The per-API limits live here too, so they can be read in one place.

use std::ops::Deref;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::Response;
use http_body::Body as _;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::state::Config;

/// [`Config::body_timeout`]'s default: 30 s for a whole body. The largest
/// body any API takes (4 MiB, a ListenBrainz import) arrives in 30 s at
/// 1.1 Mbit/s; scrobble forms are a few KiB. A trickle is cut here.
pub const BODY_TIMEOUT: Duration = Duration::from_secs(30);

/// [`Config::body_idle_timeout`]'s default: 10 s, the longest a body may
/// pause (no bytes at all) before it is given up. A client that is sending
/// a body sends it without thinking; 10 s covers a mobile network's stall.
pub const BODY_IDLE_TIMEOUT: Duration = Duration::from_secs(10);

/// [`Config::body_budget`]'s default: 64 MiB, the most bytes of request
/// bodies buffered at once across all connections. It holds 64 Last.fm
/// batches at their 1 MiB cap or 16 ListenBrainz imports at 4 MiB at the
/// same moment, far more than a personal server sees, while 50 connections
/// each declaring 4 MiB (which once held 207 MB) now get 503.
/// Must be at least the largest per-request limit.
pub const BODY_BUDGET: usize = 64 << 20;

/// `Retry-After` of a 503 for a full [`BODY_BUDGET`]: 5 s, long enough for
/// the bodies in flight to finish (or hit [`BODY_TIMEOUT`]'s next step).
pub const BUSY_RETRY_AFTER_SECS: u32 = 5;

/// The largest Last.fm 2.0 (`/2.0/`) and Audioscrobbler 1.2 (`/as12/…`)
/// form body: 1 MiB. Their credentials are in the body, so it is read
/// before authentication and must stay small. The biggest form either
/// takes is a 50-scrobble batch: per scrobble at most four names of 1 KiB
/// (`spindle_listens::limits`), a 64-byte MBID and a few numbers, about
/// 4.3 KiB, or 13 KiB percent-encoded at worst (3 bytes per byte), so
/// 50 of them with their `artist[49]=` names come to about 650 KiB.
pub const SCROBBLE_FORM_MAX: usize = 1 << 20;

/// The largest Subsonic form body once the request is authenticated
/// (credentials in the query string, checked before the body is read):
/// 1 MiB, room for 40,000 song ids in one `createPlaylist`.
pub const SUBSONIC_MAX_BODY: usize = 1 << 20;

/// The largest Subsonic form body read before authentication, when the
/// credentials are in the body (OpenSubsonic `formPost`): 128 KiB. The
/// largest form a client posts is a playlist edit: an id is at most 10
/// digits, so `songIdToAdd=4294967295&` is 23 bytes and 5,000 of them are
/// 115,000 bytes, leaving 16 KiB for the credentials, name and comment.
/// A bigger edit sends its credentials in the query string.
pub const SUBSONIC_PRE_AUTH_MAX_BODY: usize = 128 << 10;

/// Why a body was not read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum BodyError {
    /// Declared or sent longer than the request's limit.
    #[error("the request body is larger than {limit} bytes; send a smaller one")]
    TooLarge { limit: usize },
    /// Not all there by the deadline, or paused too long.
    #[error("the request body did not arrive in time; send it again without pausing")]
    TimedOut,
    /// The budget for buffered bodies is spent.
    #[error(
        "the server is reading too many request bodies at once; try again in {BUSY_RETRY_AFTER_SECS} s"
    )]
    Busy,
    /// The client closed the connection or sent a malformed body.
    #[error("the request body could not be read: {0}")]
    Broken(String),
}

impl BodyError {
    /// The HTTP status for this error: 413, 408, 503 or 400.
    pub fn status(&self) -> StatusCode {
        match self {
            BodyError::TooLarge { .. } => StatusCode::PAYLOAD_TOO_LARGE,
            BodyError::TimedOut => StatusCode::REQUEST_TIMEOUT,
            BodyError::Busy => StatusCode::SERVICE_UNAVAILABLE,
            BodyError::Broken(_) => StatusCode::BAD_REQUEST,
        }
    }

    /// `r` (an API's own error document) with this error's status, and
    /// `Retry-After` when the server is busy.
    pub fn decorate(&self, mut r: Response) -> Response {
        *r.status_mut() = self.status();
        if *self == BodyError::Busy {
            r.headers_mut().insert(
                header::RETRY_AFTER,
                HeaderValue::from(BUSY_RETRY_AFTER_SECS),
            );
        }
        r
    }
}

/// The bounds every body read shares: the byte budget and the timeouts.
/// One per server ([`crate::AppState`] holds it).
#[derive(Debug, Clone)]
pub struct Bodies {
    budget: Arc<Semaphore>,
    timeout: Duration,
    idle: Duration,
}

impl Bodies {
    pub fn new(config: &Config) -> Bodies {
        Bodies {
            budget: Arc::new(Semaphore::new(
                config.body_budget.min(Semaphore::MAX_PERMITS),
            )),
            timeout: config.body_timeout,
            idle: config.body_idle_timeout,
        }
    }

    /// Bytes of the budget not held by a body now.
    pub fn available(&self) -> usize {
        self.budget.available_permits()
    }

    /// Charges `n` bytes to the budget, adding them to `held`.
    fn charge(&self, held: &mut Option<OwnedSemaphorePermit>, n: usize) -> Result<(), BodyError> {
        if n == 0 {
            return Ok(());
        }
        let n = u32::try_from(n).map_err(|_| BodyError::Busy)?;
        let p = self
            .budget
            .clone()
            .try_acquire_many_owned(n)
            .map_err(|_| BodyError::Busy)?;
        match held {
            Some(h) => h.merge(p),
            None => *held = Some(p),
        }
        Ok(())
    }
}

/// A body read whole. Its bytes stay charged to the budget until this is
/// dropped, so keep it until what was parsed out of it is done with.
#[derive(Debug)]
pub struct BodyBytes {
    bytes: Bytes,
    _charge: Option<OwnedSemaphorePermit>,
}

impl BodyBytes {
    /// No body (a GET's).
    pub fn empty() -> BodyBytes {
        BodyBytes {
            bytes: Bytes::new(),
            _charge: None,
        }
    }
}

impl Deref for BodyBytes {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        &self.bytes
    }
}

/// Reads `body` whole: at most `limit` bytes, within the deadlines of
/// `bodies`, each byte charged to its budget before it is buffered.
pub async fn read_body(
    mut body: Body,
    limit: usize,
    bodies: &Bodies,
) -> Result<BodyBytes, BodyError> {
    let hint = body.size_hint();
    if hint.lower() > limit as u64 {
        return Err(BodyError::TooLarge { limit });
    }
    let declared = hint.exact();
    let mut charge = None;
    if let Some(len) = declared {
        if len == 0 {
            return Ok(BodyBytes::empty());
        }
        bodies.charge(&mut charge, len as usize)?;
    }
    let deadline = tokio::time::Instant::now() + bodies.timeout;
    let mut first: Option<Bytes> = None;
    let mut rest: Vec<u8> = Vec::new();
    let mut total = 0usize;
    loop {
        let wake = (tokio::time::Instant::now() + bodies.idle).min(deadline);
        let frame = std::future::poll_fn(|cx| Pin::new(&mut body).poll_frame(cx));
        let frame = match tokio::time::timeout_at(wake, frame).await {
            Err(_) => return Err(BodyError::TimedOut),
            Ok(None) => break,
            Ok(Some(Err(e))) => return Err(BodyError::Broken(e.to_string())),
            Ok(Some(Ok(f))) => f,
        };
        let Ok(data) = frame.into_data() else {
            continue; // trailers
        };
        if data.is_empty() {
            continue;
        }
        total += data.len();
        if total > limit {
            return Err(BodyError::TooLarge { limit });
        }
        if declared.is_none() {
            bodies.charge(&mut charge, data.len())?;
        }
        // One piece (the usual case) is kept as it came, uncopied.
        match first.take() {
            None if rest.is_empty() => first = Some(data),
            None => rest.extend_from_slice(&data),
            Some(f) => {
                rest.reserve(declared.map_or(f.len() + data.len(), |d| d as usize));
                rest.extend_from_slice(&f);
                rest.extend_from_slice(&data);
            }
        }
    }
    let bytes = match first {
        Some(f) => f,
        None => Bytes::from(rest),
    };
    Ok(BodyBytes {
        bytes,
        _charge: charge,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bodies(budget: usize, timeout_ms: u64, idle_ms: u64) -> Bodies {
        let config = Config {
            body_budget: budget,
            body_timeout: Duration::from_millis(timeout_ms),
            body_idle_timeout: Duration::from_millis(idle_ms),
            ..Config::default()
        };
        Bodies::new(&config)
    }

    /// A body of unknown length (as a chunked request) sent in `pieces`,
    /// each after a pause of `pause_ms`.
    fn trickle(pieces: Vec<&'static [u8]>, pause_ms: u64) -> Body {
        struct Pieces(tokio::sync::mpsc::Receiver<Bytes>);
        impl futures_core::Stream for Pieces {
            type Item = Result<Bytes, std::io::Error>;
            fn poll_next(
                mut self: Pin<&mut Self>,
                cx: &mut std::task::Context<'_>,
            ) -> std::task::Poll<Option<Self::Item>> {
                self.0.poll_recv(cx).map(|b| b.map(Ok))
            }
        }
        let (tx, rx) = tokio::sync::mpsc::channel(1);
        tokio::spawn(async move {
            for p in pieces {
                tokio::time::sleep(Duration::from_millis(pause_ms)).await;
                if tx.send(Bytes::from_static(p)).await.is_err() {
                    return;
                }
            }
        });
        Body::from_stream(Pieces(rx))
    }

    #[tokio::test]
    async fn a_body_within_its_limit_is_read_whole_and_charged_until_dropped() {
        let b = bodies(1000, 1000, 1000);
        let got = read_body(Body::from("hello"), 5, &b).await.unwrap();
        assert_eq!(&*got, b"hello");
        assert_eq!(b.available(), 995);
        drop(got);
        assert_eq!(b.available(), 1000);
        let got = read_body(trickle(vec![b"ab", b"cd", b"e"], 1), 5, &b)
            .await
            .unwrap();
        assert_eq!(&*got, b"abcde");
        assert_eq!(b.available(), 995);
    }

    #[tokio::test]
    async fn a_body_over_its_limit_is_refused_declared_or_streamed() {
        let b = bodies(1000, 1000, 1000);
        let r = read_body(Body::from("hello!"), 5, &b).await;
        assert_eq!(r.unwrap_err(), BodyError::TooLarge { limit: 5 });
        let r = read_body(trickle(vec![b"abc", b"def"], 1), 5, &b).await;
        assert_eq!(r.unwrap_err(), BodyError::TooLarge { limit: 5 });
        assert_eq!(b.available(), 1000, "a refused body gives its bytes back");
    }

    #[tokio::test]
    async fn a_body_that_pauses_too_long_or_trickles_past_the_deadline_is_cut() {
        let b = bodies(1000, 200, 50);
        let r = read_body(trickle(vec![b"a", b"b"], 100), 100, &b).await;
        assert_eq!(r.unwrap_err(), BodyError::TimedOut);
        let started = std::time::Instant::now();
        let r = read_body(trickle(vec![b"a"; 100], 20), 100, &b).await;
        assert_eq!(r.unwrap_err(), BodyError::TimedOut);
        assert!(started.elapsed() < Duration::from_millis(1000));
    }

    #[tokio::test]
    async fn bodies_beyond_the_budget_are_refused_as_busy_with_retry_after() {
        let b = bodies(10, 1000, 1000);
        let held = read_body(Body::from("12345678"), 100, &b).await.unwrap();
        let r = read_body(Body::from("123"), 100, &b).await;
        assert_eq!(r.as_ref().unwrap_err(), &BodyError::Busy);
        let resp = r.unwrap_err().decorate(Response::new(Body::empty()));
        assert_eq!(resp.status(), StatusCode::SERVICE_UNAVAILABLE);
        assert!(resp.headers().contains_key(header::RETRY_AFTER));
        // Chunk by chunk for a body of unknown length.
        let r = read_body(trickle(vec![b"1", b"23"], 1), 100, &b).await;
        assert_eq!(r.unwrap_err(), BodyError::Busy);
        drop(held);
        assert!(read_body(Body::from("123"), 100, &b).await.is_ok());
    }
}
