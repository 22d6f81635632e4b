//! Transcoding over HTTP: the core's transcoder
//! ([`spindle_app::transcode`], re-exported here under the paths the
//! adapters have always used) and its answers: [`serve`] (a cached copy
//! served like any file, with ranges and conditional requests, by
//! [`crate::stream`]; else a live encode's body, chunked or with an
//! estimated length, ending only once ffmpeg exited 0) and
//! [`error_response`].

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use axum::body::{Body, Bytes};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::Response;
use tokio::sync::mpsc;

pub use spindle_app::transcode::*;

use crate::state::AppState;
use crate::stream::Sent;

/// `http` with the transcode cache in `data_dir/`[`CACHE_DIR`] unless
/// the config names a folder (used when there is no hot tier).
pub fn with_cache_under(mut http: crate::Config, data_dir: &std::path::Path) -> crate::Config {
    if http.transcode.cache_dir.is_none() {
        http.transcode.cache_dir = Some(data_dir.join(CACHE_DIR));
    }
    http
}

/// Answers a request for `p` transcoded to `t`: the cached copy when
/// there is one (ranges, `ETag`, 304 — as any file), else a live encode
/// (`200`, chunked; with `estimate`, a `Content-Length` of duration ×
/// bitrate, the body cut or zero-padded to it). `user` queues fairly.
/// Then, with spare encode slots, `next` (the album's next track, if
/// given) is transcoded the same way into the cache ([`prepare`]).
#[allow(
    clippy::too_many_arguments,
    reason = "what the request asks, and one track to prepare"
)]
pub async fn serve(
    st: &AppState,
    p: Prepared,
    t: Target,
    req: &HeaderMap,
    head: bool,
    estimate: bool,
    user: &str,
    next: Option<Prepared>,
) -> Result<(Response, Sent), TranscodeError> {
    // Prepared only once this request holds what it needs (a cached
    // copy, or an encode slot): a preparation never delays it.
    let mut next = next.filter(|_| !head && t.offset == 0.0);
    let tc = &st.transcoder;
    let estimated = p.estimate(&t);
    // Without a duration there is nothing to estimate from.
    let estimate = estimate && estimated > 0;
    let cache = if t.offset > 0.0 {
        None
    } else {
        tc.cache(st.tiers()).await
    };
    let key = p.key(&t);
    let mut keep = false;
    if let Some(c) = &cache {
        let a = c.access(&key, estimated);
        keep = a.keep;
        if a.hit.is_some() {
            let (dir, name) = c.object(&key);
            if let Ok(root) = spindle_media::MusicRoot::new(&dir) {
                if let Ok(f) = st.reader.open(&root, &name) {
                    let ct = t.format.content_type();
                    if let Some(n) = next.take() {
                        prepare::spawn(tc, st.tiers().cloned(), n, t);
                    }
                    return Ok(crate::stream::serve_opened(&st.reader, f, ct, req, head).await);
                }
            }
        }
    }
    let mut b = Response::builder()
        .header(header::CONTENT_TYPE, t.format.content_type())
        .header(header::ACCEPT_RANGES, "none")
        .header("x-spindle-transcode", t.variant());
    if estimate {
        b = b.header(header::CONTENT_LENGTH, estimated);
    }
    if head {
        let sent = Sent {
            status: 200,
            bytes: 0,
        };
        return Ok((b.body(Body::empty()).unwrap_or_default(), sent));
    }
    let copy_to = cache.as_ref().filter(|_| keep);
    let live = tc.encode(st.tiers(), p, &t, user, copy_to).await?;
    if let Some(n) = next {
        prepare::spawn(tc, st.tiers().cloned(), n, t);
    }
    let body = Body::new(Live {
        rx: live.rx,
        limit: estimate.then_some(estimated),
        sent: 0,
        progress: live.progress,
    });
    let sent = Sent {
        status: 200,
        bytes: if estimate { estimated } else { 0 },
    };
    Ok((b.body(body).unwrap_or_default(), sent))
}

/// The answer to a [`TranscodeError`] outside the Subsonic API: 503 with
/// `Retry-After` when busy, else 500; the message in plain text.
pub fn error_response(e: &TranscodeError) -> Response {
    let status = match e {
        TranscodeError::Busy(_) => StatusCode::SERVICE_UNAVAILABLE,
        _ => StatusCode::INTERNAL_SERVER_ERROR,
    };
    let (mut r, _) = crate::stream::plain(status, e.to_string());
    if matches!(e, TranscodeError::Busy(_)) {
        r.headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from(RETRY_AFTER_SECS));
    }
    r
}

/// A live transcode's body: ffmpeg's output as the pump sends it; an
/// error from the pump aborts the connection. With a `limit` (the
/// estimated length) the body is exactly that long: cut, or padded with
/// zeros once ffmpeg finished. What it hands on is the client's
/// progress ([`pace`]); once the pump cut the client off, the body ends
/// with an error.
struct Live {
    rx: mpsc::Receiver<std::io::Result<Bytes>>,
    limit: Option<u64>,
    sent: u64,
    progress: Arc<pace::Progress>,
}

impl http_body::Body for Live {
    type Data = Bytes;
    type Error = std::io::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Bytes>, std::io::Error>>> {
        if self.progress.is_cut() {
            return Poll::Ready(Some(Err(std::io::Error::other(
                "the client read too slowly: the transcode was stopped",
            ))));
        }
        let left = self.limit.map(|l| l.saturating_sub(self.sent));
        if left == Some(0) {
            return Poll::Ready(None);
        }
        match self.rx.poll_recv(cx) {
            Poll::Pending => Poll::Pending,
            Poll::Ready(Some(Err(e))) => Poll::Ready(Some(Err(e))),
            Poll::Ready(Some(Ok(mut chunk))) => {
                if let Some(left) = left {
                    chunk.truncate(usize::try_from(left).unwrap_or(usize::MAX));
                }
                self.sent += chunk.len() as u64;
                self.progress.took(chunk.len() as u64);
                Poll::Ready(Some(Ok(http_body::Frame::data(chunk))))
            }
            Poll::Ready(None) => match left {
                None => Poll::Ready(None),
                Some(left) => {
                    let n = left.min(ffmpeg::CHUNK as u64) as usize;
                    self.sent += n as u64;
                    Poll::Ready(Some(Ok(http_body::Frame::data(Bytes::from(vec![0u8; n])))))
                }
            },
        }
    }
}
