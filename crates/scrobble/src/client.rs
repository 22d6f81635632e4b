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
}

impl SendError {
    /// Whether a later retry of the same request can succeed.
    pub fn is_temporary(&self) -> bool {
        matches!(self, SendError::Network(_) | SendError::Temporary { .. })
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
