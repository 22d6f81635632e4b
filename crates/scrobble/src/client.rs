//! What every service client answers, and the two protocols: the
//! Last.fm 2.0 client ([`LastFm`](crate::lastfm::LastFm), also Libre.fm and Spindle's `/2.0/`)
//! and the ListenBrainz client ([`ListenBrainz`](crate::listenbrainz::ListenBrainz), also Spindle's `/1/`).

use crate::track::Scrobble;

/// Why a call to a service failed, and so what to do next.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SendError {
    /// The service could not be reached; retry later.
    #[error("network error: {0}")]
    Network(String),
    /// The service is busy or down (Last.fm 11, 16, 29; HTTP 429, 5xx);
    /// retry later.
    #[error("temporary failure ({code}): {message}")]
    Temporary { code: u32, message: String },
    /// The session key or token is no longer valid (Last.fm 9, HTTP 401):
    /// run `spindle scrobble auth` again.
    #[error("the service refused the credentials ({code}): {message}; run `spindle scrobble auth` for it")]
    Auth { code: u32, message: String },
    /// The request itself was refused; retrying it will not help.
    #[error("refused ({code}): {message}")]
    Rejected { code: u32, message: String },
    /// The service's answer went on past [`MAX_ANSWER_BYTES`] (`max`):
    /// not a Last.fm or ListenBrainz API, or one misbehaving. Retried
    /// later, as an unreadable answer is; check the link's URL.
    #[error(
        "the service's answer is larger than {max} bytes, more than any Last.fm or ListenBrainz \
         answer: check that the URL is the service's API root"
    )]
    AnswerTooLarge { max: usize },
    /// The URL's address is one the server does not ask for a user
    /// ([`crate::outbound`]). Kept and retried later, as an administrator
    /// may allow it.
    #[error("{0}")]
    Blocked(crate::outbound::Blocked),
}

impl SendError {
    /// Whether a later retry of the same request can succeed.
    pub fn is_temporary(&self) -> bool {
        matches!(
            self,
            SendError::Network(_)
                | SendError::Temporary { .. }
                | SendError::AnswerTooLarge { .. }
                | SendError::Blocked(_)
        )
    }
}

/// What to do after a service's error: the one classification of
/// Last.fm error codes and HTTP statuses, for the scrobbler, the
/// server's forwarding and its pulls.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorClass {
    /// Passing: try the same request again later, with backoff.
    Retry,
    /// The credential (session key, token, API key) is refused: link or
    /// sign in again.
    Relink,
    /// The request itself is refused: retrying it will not help.
    Refused,
}

/// Classifies an error answer: its Last.fm error `code`, if it had one,
/// and its HTTP `status`. Last.fm 8 (operation failed), 11 (service
/// offline), 16 (temporarily unavailable) and 29 (rate limit) are worth a
/// retry; 4 (authentication failed), 9 (invalid session key), 10 (invalid
/// API key) and 26 (suspended API key) need a new link; any other code
/// is refused, unless the status says the server failed (5xx) or is busy
/// (429), which are retried, as they are without a code; 401 and 403
/// without a code need a new link.
pub fn classify(code: Option<u32>, status: u16) -> ErrorClass {
    let passing_status = status == 429 || (500..=599).contains(&status);
    match code {
        Some(4 | 9 | 10 | 26) => ErrorClass::Relink,
        Some(8 | 11 | 16 | 29) => ErrorClass::Retry,
        Some(_) if passing_status => ErrorClass::Retry,
        Some(_) => ErrorClass::Refused,
        None if passing_status => ErrorClass::Retry,
        None if status == 401 || status == 403 => ErrorClass::Relink,
        None => ErrorClass::Refused,
    }
}

/// What a Last.fm error code means, in Spindle's words: an error shows
/// this, not what the service wrote (a service's answer is not repeated
/// to whoever gave its URL).
pub fn lastfm_meaning(code: u32) -> &'static str {
    match code {
        2 => "invalid service",
        3 => "invalid method",
        4 => "authentication failed",
        5 => "invalid format",
        6 => "invalid parameters",
        7 => "invalid resource",
        8 => "operation failed, try again",
        9 => "invalid session key",
        10 => "invalid API key",
        11 => "service offline",
        13 => "invalid method signature",
        14 => "token not authorised yet",
        15 => "token expired",
        16 => "temporarily unavailable",
        17 => "login required",
        26 => "suspended API key",
        29 => "rate limit exceeded",
        _ => "error",
    }
}

/// The error of an answer with Last.fm error `code` (if any) and HTTP
/// `status`, classified by [`classify`]. The message is Spindle's (the
/// code's meaning or the status's name), never the service's body.
pub fn service_error(code: Option<u32>, status: u16) -> SendError {
    let message = match code {
        Some(c) if status >= 400 => format!("{} (HTTP {status})", lastfm_meaning(c)),
        Some(c) => lastfm_meaning(c).to_owned(),
        None => format!("HTTP {status} {}", reason(status)),
    };
    let class = classify(code, status);
    let code = code.unwrap_or(u32::from(status));
    match class {
        ErrorClass::Retry => SendError::Temporary { code, message },
        ErrorClass::Relink => SendError::Auth { code, message },
        ErrorClass::Refused => SendError::Rejected { code, message },
    }
}

fn reason(status: u16) -> &'static str {
    reqwest::StatusCode::from_u16(status)
        .ok()
        .and_then(|s| s.canonical_reason())
        .unwrap_or("")
}

/// What the service did with one scrobble of an accepted batch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    Accepted,
    /// Filtered by the service (Last.fm ignoredMessage codes 1–5).
    Ignored {
        code: u32,
        message: String,
    },
}

/// Maps an HTTP status with no usable body to an error.
pub(crate) fn http_error(status: u16) -> SendError {
    service_error(None, status)
}

/// A failed request: [`SendError::Blocked`] when the outbound policy
/// refused its address (a name or a redirect), else a network error.
pub(crate) fn net(e: reqwest::Error) -> SendError {
    match crate::outbound::blocked_in(&e) {
        Some(b) => SendError::Blocked(b),
        None => SendError::Network(network_failure(&e)),
    }
}

/// What went wrong with a request that got no answer, in words naming
/// the failure (`timed out`, `could not connect: Connection refused`).
pub fn network_failure(e: &reqwest::Error) -> String {
    let what = if e.is_timeout() {
        "timed out"
    } else if e.is_connect() {
        "could not connect"
    } else if e.is_redirect() {
        "a redirect was not followed"
    } else if e.is_body() || e.is_decode() {
        "the answer broke off"
    } else {
        "the request failed"
    };
    let mut root: &dyn std::error::Error = e;
    while let Some(s) = root.source() {
        root = s;
    }
    if std::ptr::addr_eq(root, e as &dyn std::error::Error) {
        what.to_owned()
    } else {
        format!("{what}: {root}")
    }
}

/// The largest answer a client reads from a service. Last.fm and
/// ListenBrainz answer a few kilobytes at most; the URL of a forwarding
/// target is the user's choice, so an answer that never ends must not
/// fill the server's memory.
pub const MAX_ANSWER_BYTES: usize = 1024 * 1024;

/// Reads `resp`'s body, at most `max` bytes of it, as text (invalid
/// UTF-8 replaced): [`SendError::AnswerTooLarge`] as soon as it is
/// longer (or announces it will be), without reading the rest.
pub(crate) async fn read_capped(
    mut resp: reqwest::Response,
    max: usize,
) -> Result<String, SendError> {
    let too_large = SendError::AnswerTooLarge { max };
    if resp
        .content_length()
        .is_some_and(|n| usize::try_from(n).map_or(true, |n| n > max))
    {
        return Err(too_large);
    }
    let mut body = Vec::new();
    while let Some(chunk) = resp.chunk().await.map_err(net)? {
        if body.len() + chunk.len() > max {
            return Err(too_large);
        }
        body.extend_from_slice(&chunk);
    }
    Ok(String::from_utf8_lossy(&body).into_owned())
}

/// A client of one of the protocols.
#[derive(Debug, Clone)]
pub enum Client {
    LastFm(crate::lastfm::LastFm),
    ListenBrainz(crate::listenbrainz::ListenBrainz),
}

impl Client {
    pub async fn now_playing(&self, s: &Scrobble) -> Result<(), SendError> {
        match self {
            Client::LastFm(c) => c.now_playing(s).await,
            Client::ListenBrainz(c) => c.now_playing(s).await,
        }
    }

    /// Sends up to 50 scrobbles; one [`Outcome`] per scrobble.
    pub async fn scrobble(&self, batch: &[Scrobble]) -> Result<Vec<Outcome>, SendError> {
        match self {
            Client::LastFm(c) => c.scrobble(batch).await,
            Client::ListenBrainz(c) => c.scrobble(batch).await,
        }
    }

    /// Whether this service can take a love of `s`: Last.fm-type
    /// services love by names, ListenBrainz-type ones only by recording
    /// MBID.
    pub fn takes_love(&self, s: &Scrobble) -> bool {
        match self {
            Client::LastFm(_) => true,
            Client::ListenBrainz(_) => !s.mbid.is_empty(),
        }
    }

    /// Loves (or unloves) a track. ListenBrainz needs a recording MBID.
    pub async fn love(&self, s: &Scrobble, love: bool) -> Result<(), SendError> {
        match self {
            Client::LastFm(c) => c.love(&s.artist, &s.track, love).await,
            Client::ListenBrainz(c) => c.love(s, love).await,
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use std::time::Duration;

    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    use super::*;

    /// How much the endless test server writes at most (so a client
    /// without a limit fails the test instead of hanging it).
    pub(crate) const ENDLESS: usize = 64 * MAX_ANSWER_BYTES;

    /// A server on 127.0.0.1 that answers one request with `200` and
    /// `len` `x`s without a length, or fewer if the client hangs up: its
    /// URL, and the task that returns how many body bytes it wrote.
    pub(crate) async fn serve_body(len: usize) -> (String, tokio::task::JoinHandle<usize>) {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let task = tokio::spawn(async move {
            let (mut sock, _) = listener.accept().await.unwrap();
            // Read the request head (and whatever body came with it).
            let mut buf = [0u8; 8192];
            let _ = sock.read(&mut buf).await;
            let head =
                b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nconnection: close\r\n\r\n";
            if sock.write_all(head).await.is_err() {
                return 0;
            }
            let chunk = vec![b'x'; 64 * 1024];
            let mut written = 0;
            while written < len {
                let n = chunk.len().min(len - written);
                if sock.write_all(&chunk[..n]).await.is_err() {
                    break;
                }
                written += n;
            }
            written
        });
        (url, task)
    }

    /// A server on 127.0.0.1 that answers one request with `status` and
    /// the JSON `body`: its URL.
    pub(crate) async fn serve_answer(status: u16, body: &'static str) -> String {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(async move {
            let (mut sock, _) = listener.accept().await.unwrap();
            let mut buf = [0u8; 8192];
            let _ = sock.read(&mut buf).await;
            let head = format!(
                "HTTP/1.1 {status} X\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
                body.len()
            );
            let _ = sock.write_all(head.as_bytes()).await;
            let _ = sock.write_all(body.as_bytes()).await;
        });
        url
    }

    /// Asserts that a call to the endless server failed with the limit
    /// and that the server was cut off before it was done.
    pub(crate) async fn assert_cut_off<T: std::fmt::Debug>(
        r: Result<T, SendError>,
        server: tokio::task::JoinHandle<usize>,
    ) {
        assert_eq!(
            r.unwrap_err(),
            SendError::AnswerTooLarge {
                max: MAX_ANSWER_BYTES
            }
        );
        let written = server.await.unwrap();
        assert!(
            written < ENDLESS,
            "the whole answer was read ({written} bytes)"
        );
    }

    fn test_client() -> crate::outbound::Outbound {
        crate::outbound::Policy::open()
            .client("test", Duration::from_secs(5), Duration::from_secs(30))
            .unwrap()
    }

    #[tokio::test]
    async fn an_endless_answer_is_cut_off_at_the_limit() {
        let (url, server) = serve_body(ENDLESS).await;
        let resp = test_client().get(&url).unwrap().send().await.unwrap();
        let r = read_capped(resp, MAX_ANSWER_BYTES).await;
        assert!(r.as_ref().unwrap_err().is_temporary());
        assert_cut_off(r, server).await;
    }

    #[tokio::test]
    async fn an_answer_of_exactly_the_limit_is_read_whole() {
        let (url, server) = serve_body(MAX_ANSWER_BYTES).await;
        let resp = test_client().get(&url).unwrap().send().await.unwrap();
        let text = read_capped(resp, MAX_ANSWER_BYTES).await.unwrap();
        assert_eq!(text.len(), MAX_ANSWER_BYTES);
        assert_eq!(server.await.unwrap(), MAX_ANSWER_BYTES);
    }
}
