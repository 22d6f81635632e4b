//! A live pull of a remote user's listening history into a Spindle
//! user's, from a Last.fm-compatible `user.getRecentTracks`
//! ([`lastfm`]) or a ListenBrainz-compatible `/1/user/NAME/listens`
//! ([`listenbrainz`]), newest first, one page at a time. It runs as an
//! import job ([`crate::import::worker`]): each page is stored like an
//! import and the job is saved after it with the oldest time fetched (the
//! cursor), so a restarted server goes on from there; it ends at the first
//! page that is not full, the end of the history.
//!
//! The next page asks for listens *at or before* the cursor, so listens
//! sharing the cursor's second are not lost at a page boundary; the
//! history's dedupe drops the ones fetched twice, and a second pull adds
//! nothing. A full page all within one second moves the cursor a second
//! back (the only case where listens could be left out: more than a page
//! of them in one second). A full page with nothing older than the cursor
//! and something newer means the remote ignores the cursor: the job fails
//! rather than fetch the same page forever, as it does after
//! [`MAX_PULL_PAGES`] pages.

pub mod lastfm;
pub mod listenbrainz;

use std::time::Duration;

use serde_json::Value;
use tokio::sync::watch;

use spindle_scrobble::outbound::{Outbound, Policy};

use crate::import::job::{Api, Pull};
use crate::import::worker::{save, store, Outcome};
use crate::import::{ImportError, Job, Source, Spool};
use crate::App;

/// Listens asked for per Last.fm page: 200, the API's largest `limit`.
pub const LASTFM_PAGE: usize = 200;

/// Listens asked for per ListenBrainz page: 1,000, its `MAX_ITEMS_PER_GET`.
pub const LISTENBRAINZ_PAGE: usize = 1000;

/// The longest a connection to the remote may take to open: 10 s.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// The longest one page may take to arrive: 60 s.
pub const PAGE_TIMEOUT: Duration = Duration::from_secs(60);

/// The largest page read: 32 MiB (1,000 listens with every name at its
/// limit are under 8 MiB).
pub const MAX_PAGE_BYTES: usize = 32 << 20;

/// Tries of a page that fails for a passing reason (no connection, 5xx,
/// 429, Last.fm's "try again" errors) before the job fails: 6, waiting
/// [`RETRY_PAUSE`], then twice as long each time (about a minute in all).
pub const PAGE_TRIES: u32 = 6;

/// The most pages one pull fetches: 100,000 (20 million listens from
/// Last.fm, 100 million from ListenBrainz, far beyond a real history), so
/// a remote that never ends its history cannot keep a job running forever.
pub const MAX_PULL_PAGES: u64 = 100_000;

/// The first wait before a page is tried again: 2 s.
pub const RETRY_PAUSE: Duration = Duration::from_secs(2);

/// Why a page could not be fetched.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PullError {
    #[error("'{0}' is not an http:// or https:// URL")]
    Url(String),
    #[error("fetching {url}")]
    Http {
        url: String,
        #[source]
        source: reqwest::Error,
    },
    #[error("{url} answered HTTP {status}")]
    Status { url: String, status: u16 },
    #[error("{url} answered error {code} ({}) with HTTP {status}", spindle_scrobble::client::lastfm_meaning(*code))]
    Remote { url: String, code: u32, status: u16 },
    /// The URL's address is one the server does not ask for a user.
    #[error(transparent)]
    Blocked(#[from] spindle_scrobble::outbound::Blocked),
    #[error("{url} answered more than {MAX_PAGE_BYTES} bytes")]
    TooLarge { url: String },
    #[error("{url} answered something that is not JSON: {msg}")]
    NotJson { url: String, msg: String },
    #[error(
        "{url} answered a full page with nothing older than {cursor} and listens after it: \
         it ignores the page cursor (`to` / `max_ts`), so the history cannot be paged"
    )]
    IgnoresCursor { url: String, cursor: i64 },
    #[error("the pull stopped after {MAX_PULL_PAGES} pages; the remote history does not end")]
    TooManyPages,
    #[error("the pull's cursor ({0}) cannot move back further")]
    CursorAtStart(i64),
}

impl PullError {
    /// An HTTP failure, without the request's URL (whose query may hold
    /// an API key): `url` says where, without its query. A refusal of
    /// the outbound policy (a name or a redirect) is [`PullError::Blocked`].
    fn http(url: String, source: reqwest::Error) -> PullError {
        match spindle_scrobble::outbound::blocked_in(&source) {
            Some(b) => PullError::Blocked(b),
            None => PullError::Http {
                url,
                source: source.without_url(),
            },
        }
    }

    /// A request that could not be made: refused by the outbound policy,
    /// or not a URL.
    fn send(url: &str, e: spindle_scrobble::SendError) -> PullError {
        match e {
            spindle_scrobble::SendError::Blocked(b) => PullError::Blocked(b),
            _ => PullError::Url(url.to_owned()),
        }
    }
}

impl PullError {
    /// Whether trying again later may work: the scrobbler's one
    /// classification of Last.fm codes and HTTP statuses.
    fn passing(&self) -> bool {
        use spindle_scrobble::client::{classify, ErrorClass};
        match self {
            PullError::Http { source, .. } => !source.is_builder(),
            PullError::Status { status, .. } => classify(None, *status) == ErrorClass::Retry,
            PullError::Remote { code, status, .. } => {
                classify(Some(*code), *status) == ErrorClass::Retry
            }
            _ => false,
        }
    }
}

/// Pulls `job`'s remote history from its cursor on; see the module doc.
pub(crate) async fn run(
    app: &App,
    outbound: &Policy,
    spool: &Spool,
    job: &mut Job,
    stop: &watch::Receiver<bool>,
) -> Result<Outcome, ImportError> {
    let Source::Pull(first) = &job.source else {
        return Ok(Outcome::Finished);
    };
    let mut pull = first.clone();
    // The URL is the user's: requests keep to the outbound policy.
    let http = outbound
        .client(
            concat!("spindle/", env!("CARGO_PKG_VERSION")),
            CONNECT_TIMEOUT,
            PAGE_TIMEOUT,
        )
        .map_err(|e| PullError::send(&first.url, e))?;
    let (limit, client) = match pull.api {
        Api::Lastfm => (LASTFM_PAGE, "import/lastfm-pull"),
        Api::Listenbrainz => (LISTENBRAINZ_PAGE, "import/listenbrainz-pull"),
    };
    job.format = Some(format!("{}-pull", pull.api.name()));
    loop {
        if *stop.borrow() {
            return Ok(Outcome::Stopped);
        }
        let Some(page) = fetch_with_retries(&http, &pull, limit, stop).await? else {
            return Ok(Outcome::Stopped);
        };
        let mut listens = spindle_listens::import::read_json(&page, &job.user).listens;
        let Some(oldest) = listens.iter().map(|l| l.timestamp).min() else {
            return Ok(Outcome::Finished);
        };
        let newest = listens.iter().map(|l| l.timestamp).max().unwrap_or(oldest);
        let rows = listens.len();
        let full = rows >= limit;
        let url = redacted(&parse_url(&pull.url)?);
        next_page(&mut pull, oldest, newest, full, &url)?;
        for l in &mut listens {
            l.client = client.to_owned();
        }
        store(app, job, listens).await?;
        job.total += rows as u64;
        job.source = Source::Pull(pull.clone());
        save(app, spool, job).await;
        if rows < limit {
            return Ok(Outcome::Finished);
        }
    }
}

/// Moves `pull` past a page whose listens span `oldest..=newest` (`full`
/// when it held as many as asked for): the cursor goes to `oldest`, or a
/// second back when a full page is all at the cursor. Fails on a remote
/// that ignores the cursor, after [`MAX_PULL_PAGES`], or when the cursor
/// cannot move back.
fn next_page(
    pull: &mut Pull,
    oldest: i64,
    newest: i64,
    full: bool,
    url: &str,
) -> Result<(), PullError> {
    if pull.pages >= MAX_PULL_PAGES {
        return Err(PullError::TooManyPages);
    }
    pull.cursor = Some(match pull.cursor {
        Some(c) if full && oldest >= c && newest > c => {
            return Err(PullError::IgnoresCursor {
                url: url.to_owned(),
                cursor: c,
            })
        }
        Some(c) if oldest >= c => c.checked_sub(1).ok_or(PullError::CursorAtStart(c))?,
        _ => oldest,
    });
    pull.pages += 1;
    Ok(())
}

/// One page, tried again for passing failures; `None` if `stop` came
/// first.
async fn fetch_with_retries(
    http: &Outbound,
    pull: &Pull,
    limit: usize,
    stop: &watch::Receiver<bool>,
) -> Result<Option<Value>, PullError> {
    let mut stop = stop.clone();
    let mut pause = RETRY_PAUSE;
    for attempt in 1.. {
        let req = match pull.api {
            Api::Lastfm => lastfm::request(http, pull, limit)?,
            Api::Listenbrainz => listenbrainz::request(http, pull, limit)?,
        };
        let res = tokio::select! {
            r = fetch(req, pull.api) => r,
            _ = stop.changed() => return Ok(None),
        };
        match res {
            Ok(v) => return Ok(Some(v)),
            Err(e) if e.passing() && attempt < PAGE_TRIES => {
                tracing::info!(
                    "pulling {}'s history: {e}; trying again in {pause:?}",
                    pull.remote_user
                );
                tokio::select! {
                    _ = tokio::time::sleep(pause) => {}
                    _ = stop.changed() => return Ok(None),
                }
                pause *= 2;
            }
            Err(e) => return Err(e),
        }
    }
    Ok(None)
}

/// Sends `req` and reads its JSON answer, at most [`MAX_PAGE_BYTES`].
async fn fetch(req: reqwest::RequestBuilder, api: Api) -> Result<Value, PullError> {
    let (client, req) = req.build_split();
    let req = req.map_err(|source| PullError::http(String::new(), source))?;
    let url = redacted(req.url());
    let http = |source| PullError::http(url.clone(), source);
    let mut res = client.execute(req).await.map_err(http)?;
    let status = res.status().as_u16();
    let mut body = Vec::new();
    while let Some(chunk) = res.chunk().await.map_err(http)? {
        if body.len() + chunk.len() > MAX_PAGE_BYTES {
            return Err(PullError::TooLarge { url });
        }
        body.extend_from_slice(&chunk);
    }
    let v: Result<Value, _> = serde_json::from_slice(&body);
    if let Ok(v) = &v {
        if let Some(code) = match api {
            Api::Lastfm => lastfm::error_of(v),
            Api::Listenbrainz => None,
        } {
            return Err(PullError::Remote { url, code, status });
        }
    }
    // The body of an error answer is not repeated: it is the remote's,
    // and the URL the user's.
    if !(200..300).contains(&status) {
        return Err(PullError::Status { url, status });
    }
    v.map_err(|e| PullError::NotJson {
        url,
        msg: e.to_string(),
    })
}

/// `url` without its query (which may hold an API key), for messages.
fn redacted(url: &reqwest::Url) -> String {
    let mut u = url.clone();
    u.set_query(None);
    u.to_string()
}

/// `url` parsed, when it is http or https.
fn parse_url(url: &str) -> Result<reqwest::Url, PullError> {
    reqwest::Url::parse(url)
        .ok()
        .filter(|u| matches!(u.scheme(), "http" | "https") && u.host().is_some())
        .ok_or_else(|| PullError::Url(url.to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::import::worker::error_text;

    fn pull(cursor: Option<i64>, pages: u64) -> Pull {
        Pull {
            api: Api::Listenbrainz,
            url: "http://lb".into(),
            remote_user: "bob".into(),
            key: None,
            cursor,
            pages,
        }
    }

    #[test]
    fn a_full_page_with_nothing_older_than_the_cursor_fails_the_pull() {
        // The remote answered its newest page again, ignoring `max_ts`.
        let mut p = pull(Some(1_600_000_000), 1);
        let e = next_page(&mut p, 1_600_000_000, 1_700_000_000, true, "http://lb/").unwrap_err();
        assert!(matches!(e, PullError::IgnoresCursor { .. }), "{e}");
        assert!(e.to_string().contains("ignores the page cursor"), "{e}");
        // A full page all in the cursor's second still moves a second back.
        let mut p = pull(Some(1_600_000_000), 1);
        next_page(&mut p, 1_600_000_000, 1_600_000_000, true, "http://lb/").unwrap();
        assert_eq!((p.cursor, p.pages), (Some(1_599_999_999), 2));
        // An ordinary page moves the cursor to its oldest listen.
        next_page(&mut p, 1_500_000_000, 1_599_999_999, true, "http://lb/").unwrap();
        assert_eq!(p.cursor, Some(1_500_000_000));
    }

    #[test]
    fn a_cursor_that_cannot_move_back_fails_instead_of_overflowing() {
        let mut p = pull(Some(i64::MIN), 1);
        let e = next_page(&mut p, i64::MIN, i64::MIN, true, "http://lb/").unwrap_err();
        assert!(matches!(e, PullError::CursorAtStart(i64::MIN)), "{e}");
    }

    #[test]
    fn a_pull_stops_after_its_page_limit() {
        let mut p = pull(Some(1_600_000_000), MAX_PULL_PAGES);
        let e = next_page(&mut p, 1_500_000_000, 1_599_999_999, true, "http://lb/").unwrap_err();
        assert!(matches!(e, PullError::TooManyPages), "{e}");
        let mut p = pull(Some(1_600_000_000), MAX_PULL_PAGES - 1);
        next_page(&mut p, 1_500_000_000, 1_599_999_999, true, "http://lb/").unwrap();
    }

    #[tokio::test]
    async fn a_failed_request_does_not_put_the_api_key_in_the_job_error() {
        // Nothing listens on port 1: the request fails to connect, and
        // reqwest's error would name the whole URL.
        let req = reqwest::Client::new().get("http://127.0.0.1:1/2.0/?method=x&api_key=SECRET");
        let e = fetch(req, Api::Lastfm).await.unwrap_err();
        let PullError::Http { source, .. } = &e else {
            panic!("not an HTTP error: {e}");
        };
        assert_eq!(source.url(), None, "{source}");
        let text = error_text(&ImportError::from(e));
        assert!(!text.contains("SECRET"), "{text}");
        assert!(text.contains("http://127.0.0.1:1/2.0/"), "{text}");
    }
}
