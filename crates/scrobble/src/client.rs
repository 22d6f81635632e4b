//! What every service client answers, and the two protocols: the
//! Last.fm 2.0 client ([`LastFm`](crate::lastfm::LastFm), also Libre.fm and Spindle's `/2.0/`)
//! and the ListenBrainz client ([`ListenBrainz`](crate::listenbrainz::ListenBrainz), also Spindle's `/1/`).

use std::time::Duration;

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
}

impl SendError {
    /// Whether a later retry of the same request can succeed.
    pub fn is_temporary(&self) -> bool {
        matches!(
            self,
            SendError::Network(_) | SendError::Temporary { .. } | SendError::AnswerTooLarge { .. }
        )
    }
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
pub(crate) fn http_error(status: u16, body: &str) -> SendError {
    let message: String = body.chars().take(200).collect();
    match status {
        429 | 500..=599 => SendError::Temporary {
            code: status as u32,
            message,
        },
        401 | 403 => SendError::Auth {
            code: status as u32,
            message,
        },
        _ => SendError::Rejected {
            code: status as u32,
            message,
        },
    }
}

pub(crate) fn http_client(user_agent: &str) -> Result<reqwest::Client, SendError> {
    reqwest::Client::builder()
        .user_agent(user_agent)
        .connect_timeout(Duration::from_secs(10))
        .timeout(Duration::from_secs(30))
        .build()
        .map_err(|e| SendError::Network(e.to_string()))
}

pub(crate) fn net(e: reqwest::Error) -> SendError {
    SendError::Network(e.to_string())
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

    #[tokio::test]
    async fn an_endless_answer_is_cut_off_at_the_limit() {
        let (url, server) = serve_body(ENDLESS).await;
        let resp = http_client("test").unwrap().get(&url).send().await.unwrap();
        let r = read_capped(resp, MAX_ANSWER_BYTES).await;
        assert!(r.as_ref().unwrap_err().is_temporary());
        assert_cut_off(r, server).await;
    }

    #[tokio::test]
    async fn an_answer_of_exactly_the_limit_is_read_whole() {
        let (url, server) = serve_body(MAX_ANSWER_BYTES).await;
        let resp = http_client("test").unwrap().get(&url).send().await.unwrap();
        let text = read_capped(resp, MAX_ANSWER_BYTES).await.unwrap();
        assert_eq!(text.len(), MAX_ANSWER_BYTES);
        assert_eq!(server.await.unwrap(), MAX_ANSWER_BYTES);
    }
}
