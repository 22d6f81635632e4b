//! Counters for `/metrics` (Prometheus text format): requests, bytes
//! streamed, streams started, request latency, library size, requests and
//! errors per API (a middleware over every route); and the page
//! itself, which answers only a Spindle user: a web UI session cookie,
//! HTTP Basic with the user's name and password (Prometheus'
//! `basic_auth`), or `Authorization: Bearer TOKEN` with the user's token
//! from `spindle user token NAME` (Prometheus' `authorization`, the same
//! token that is the OpenSubsonic `apiKey`). Wrong credentials are
//! throttled like every login ([`crate::throttle`]).

use std::fmt::Write;
use std::net::IpAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use axum::body::Body;
use axum::extract::State;
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::Response;

use crate::auth_guard::{http_refusal, ClientIp, Denied};
use crate::state::AppState;
use crate::stream::sendfile::SentBytes;

/// Upper bounds of the latency histogram, seconds.
const BUCKETS: [f64; 10] = [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 5.0];

/// The APIs counted apart, by path.
const APIS: [&str; 7] = [
    "subsonic",
    "lastfm",
    "listenbrainz",
    "audioscrobbler",
    "web",
    "metrics",
    "other",
];

fn api_of(path: &str, query: Option<&str>) -> usize {
    let p = |prefix: &str| path.starts_with(prefix);
    if p("/rest/") {
        0
    } else if let Some(r) = crate::lastfm::routes::find(path, query) {
        // The Last.fm side's route table says which of its protocols.
        if r.path == "/" || r.path.starts_with("/as12/") {
            3
        } else {
            1
        }
    } else if p("/2.0") || p("/api/auth") {
        1
    } else if p("/1/") {
        2
    } else if p("/as12/") {
        3
    } else if p("/ui/") || path == "/" {
        4
    } else if path == "/metrics" {
        5
    } else {
        6
    }
}

#[derive(Default)]
pub struct Metrics {
    by_api: [AtomicU64; APIS.len()],
    errors_by_api: [AtomicU64; APIS.len()],
    requests: AtomicU64,
    errors: AtomicU64,
    streams: AtomicU64,
    bytes: AtomicU64,
    buckets: [AtomicU64; BUCKETS.len()],
    latency_sum_us: AtomicU64,
    /// Bytes of streams the connections sent by `sendfile` (the
    /// connection loop counts them, [`Metrics::sendfile`]).
    sendfile: SentBytes,
}

impl Metrics {
    /// One Subsonic or streaming request answered after `took`.
    pub fn request(&self, took: Duration, failed: bool) {
        self.requests.fetch_add(1, Ordering::Relaxed);
        if failed {
            self.errors.fetch_add(1, Ordering::Relaxed);
        }
        let secs = took.as_secs_f64();
        for (b, le) in self.buckets.iter().zip(BUCKETS) {
            if secs <= le {
                b.fetch_add(1, Ordering::Relaxed);
            }
        }
        self.latency_sum_us
            .fetch_add(took.as_micros() as u64, Ordering::Relaxed);
    }

    /// A stream started that will send `bytes`.
    pub fn stream(&self, bytes: u64) {
        self.streams.fetch_add(1, Ordering::Relaxed);
        self.bytes.fetch_add(bytes, Ordering::Relaxed);
    }

    /// A request to any API answered with `status`.
    pub fn api_request(&self, api: usize, status: u16) {
        if let Some(c) = self.by_api.get(api) {
            c.fetch_add(1, Ordering::Relaxed);
        }
        if status >= 400 {
            if let Some(c) = self.errors_by_api.get(api) {
                c.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    /// Where the connection loop counts the bytes it sends by `sendfile`.
    pub fn sendfile(&self) -> SentBytes {
        self.sendfile.clone()
    }

    /// The text exposition, with the library's size.
    pub fn render(&self, entries: usize, songs: usize, albums: usize, artists: usize) -> String {
        let g = |a: &AtomicU64| a.load(Ordering::Relaxed);
        let mut s = String::new();
        let _ = writeln!(s, "# HELP spindle_http_requests_total Subsonic and streaming requests answered.\n# TYPE spindle_http_requests_total counter\nspindle_http_requests_total {}", g(&self.requests));
        let _ = writeln!(s, "# HELP spindle_http_request_errors_total Requests answered with an error.\n# TYPE spindle_http_request_errors_total counter\nspindle_http_request_errors_total {}", g(&self.errors));
        let _ = writeln!(s, "# HELP spindle_streams_total Audio streams started.\n# TYPE spindle_streams_total counter\nspindle_streams_total {}", g(&self.streams));
        let _ = writeln!(s, "# HELP spindle_stream_bytes_total Bytes of audio streams started (ranges counted by length).\n# TYPE spindle_stream_bytes_total counter\nspindle_stream_bytes_total {}", g(&self.bytes));
        let _ = writeln!(s, "# HELP spindle_stream_sendfile_bytes_total Bytes of streams sent by sendfile from the page cache (no copy through the server).\n# TYPE spindle_stream_sendfile_bytes_total counter\nspindle_stream_sendfile_bytes_total {}", self.sendfile.get());
        let _ = writeln!(s, "# HELP spindle_request_duration_seconds Time to answer a request (to the first byte of a stream).\n# TYPE spindle_request_duration_seconds histogram");
        for (b, le) in self.buckets.iter().zip(BUCKETS) {
            let _ = writeln!(
                s,
                "spindle_request_duration_seconds_bucket{{le=\"{le}\"}} {}",
                g(b)
            );
        }
        let n = g(&self.requests);
        let _ = writeln!(
            s,
            "spindle_request_duration_seconds_bucket{{le=\"+Inf\"}} {n}"
        );
        let _ = writeln!(
            s,
            "spindle_request_duration_seconds_sum {}",
            g(&self.latency_sum_us) as f64 / 1e6
        );
        let _ = writeln!(s, "spindle_request_duration_seconds_count {n}");
        let _ = writeln!(s, "# HELP spindle_api_requests_total Requests by API (HTTP status of any kind).\n# TYPE spindle_api_requests_total counter");
        for (name, c) in APIS.iter().zip(&self.by_api) {
            let _ = writeln!(s, "spindle_api_requests_total{{api=\"{name}\"}} {}", g(c));
        }
        let _ = writeln!(s, "# HELP spindle_api_request_errors_total Requests by API answered with an HTTP status of 400 or more (Subsonic errors travel in 200 answers and are counted in spindle_http_request_errors_total).\n# TYPE spindle_api_request_errors_total counter");
        for (name, c) in APIS.iter().zip(&self.errors_by_api) {
            let _ = writeln!(
                s,
                "spindle_api_request_errors_total{{api=\"{name}\"}} {}",
                g(c)
            );
        }
        let _ = writeln!(s, "# HELP spindle_library_entries Entries in the library.\n# TYPE spindle_library_entries gauge\nspindle_library_entries {entries}");
        let _ = writeln!(s, "# HELP spindle_library_songs Playable songs under the music folders.\n# TYPE spindle_library_songs gauge\nspindle_library_songs {songs}");
        let _ = writeln!(
            s,
            "# TYPE spindle_library_albums gauge\nspindle_library_albums {albums}"
        );
        let _ = writeln!(
            s,
            "# TYPE spindle_library_artists gauge\nspindle_library_artists {artists}"
        );
        s
    }
}

/// Middleware over every route: counts each request under its API, and
/// answers the page at `/` ([`crate::web::index_page`]; one middleware
/// for both, as each layer costs a request a clone of the services
/// under it and two boxes).
pub async fn count(
    State(st): State<AppState>,
    req: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    let api = api_of(req.uri().path(), req.uri().query());
    let r = match crate::web::index_page(&req) {
        Some(page) => page,
        None => next.run(req).await,
    };
    st.metrics.api_request(api, r.status().as_u16());
    r
}

/// The API's name in log lines.
const VIA: &str = "metrics";

const WHO_TEXT: &str = "/metrics needs a Spindle user: HTTP Basic (name and password), \
     Authorization: Bearer TOKEN (spindle user token NAME), or a web UI session";

/// Who a `/metrics` request from `ip` is: `Ok(user)`, or why not (`None`
/// when it sent no credentials). Basic's password runs on the hashing
/// pool; every credential is throttled.
async fn scraper(
    st: &AppState,
    h: &HeaderMap,
    ip: Option<IpAddr>,
) -> Result<String, Option<Denied>> {
    let Some(auth) = h.get(header::AUTHORIZATION) else {
        return crate::web::session_user(st, h).ok_or(None);
    };
    let wrong = Err(Some(Denied::Wrong));
    let Some((scheme, cred)) = auth.to_str().ok().and_then(|a| a.trim().split_once(' ')) else {
        return wrong;
    };
    let cred = cred.trim();
    if scheme.eq_ignore_ascii_case("bearer") {
        return st
            .guard
            .check(ip, None, VIA, || st.accounts.user_by_token(cred))
            .map_err(Some);
    }
    if !scheme.eq_ignore_ascii_case("basic") {
        return wrong;
    }
    let Some(text) = base64_decode(cred).and_then(|b| String::from_utf8(b).ok()) else {
        return wrong;
    };
    let Some((user, pw)) = text.split_once(':') else {
        return wrong;
    };
    st.guard
        .password(&st.accounts, ip, user, pw, VIA)
        .await
        .map(|()| user.to_owned())
        .map_err(Some)
}

/// `GET /metrics`.
pub(crate) async fn page(
    State(state): State<AppState>,
    ClientIp(ip): ClientIp,
    h: HeaderMap,
) -> Response {
    if let Err(refused) = scraper(&state, &h, ip).await {
        return http_refusal(refused.unwrap_or(Denied::Wrong), WHO_TEXT, |status, msg| {
            let mut r = Response::new(Body::from(format!("{msg}\n")));
            *r.status_mut() = status;
            if status == StatusCode::UNAUTHORIZED {
                r.headers_mut().insert(
                    header::WWW_AUTHENTICATE,
                    HeaderValue::from_static("Basic realm=\"spindle\", charset=\"UTF-8\""),
                );
            }
            r
        });
    }
    let text = spindle_app::offload::run(move || {
        let cat = state.music.catalog(&state.db);
        let entries = state.db.read().len();
        let mut text = state.metrics.render(
            entries,
            cat.songs.len(),
            cat.albums.len(),
            cat.artists.len(),
        );
        // Forwarding to linked services (crate::forward).
        text.push_str(&state.forward.metrics());
        // The cluster (crate::cluster): role, generation, lag, shipping.
        state.cluster.metrics(&mut text);
        text
    })
    .await
    .unwrap_or_default();
    let mut r = Response::new(Body::from(text));
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; version=0.0.4"),
    );
    r
}

/// Standard base64 (RFC 4648) as HTTP Basic credentials carry it, with or
/// without padding (clients differ).
fn base64_decode(s: &str) -> Option<Vec<u8>> {
    use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};
    use base64::Engine;
    const BASIC: GeneralPurpose = GeneralPurpose::new(
        &base64::alphabet::STANDARD,
        GeneralPurposeConfig::new()
            .with_decode_padding_mode(DecodePaddingMode::Indifferent)
            .with_decode_allow_trailing_bits(true),
    );
    BASIC.decode(s).ok()
}

#[cfg(test)]
mod tests {
    use super::{api_of, base64_decode, APIS};

    #[test]
    fn requests_are_counted_under_their_api() {
        let cases = [
            ("/rest/ping.view", None, "subsonic"),
            ("/2.0/", Some("method=auth.getToken"), "lastfm"),
            ("/api/auth/", None, "lastfm"),
            ("/1/submit-listens", None, "listenbrainz"),
            ("/", Some("hs=true&p=1.2"), "audioscrobbler"),
            ("/", Some("p=1.2&hs"), "audioscrobbler"),
            // Not a handshake (the route table's rule, as the cluster's).
            ("/", Some("ths=1"), "web"),
            ("/as12/submissions", None, "audioscrobbler"),
            ("/", None, "web"),
            ("/ui/chart/listens.svg", Some("period=7day"), "web"),
            ("/metrics", None, "metrics"),
            ("/favicon.ico", None, "other"),
        ];
        for (path, q, want) in cases {
            assert_eq!(APIS[api_of(path, q)], want, "{path}?{q:?}");
        }
    }

    #[test]
    fn base64_of_basic_credentials() {
        let cases: &[(&str, Option<&[u8]>)] = &[
            ("YW5uOnB3", Some(b"ann:pw")),
            ("YW5uOmNvcnJlY3QgaG9yc2U=", Some(b"ann:correct horse")),
            ("YQ==", Some(b"a")),
            ("YWI", Some(b"ab")),
            ("", Some(b"")),
            ("Y", None),
            ("YW5u*nB3", None),
        ];
        for (input, want) in cases {
            assert_eq!(base64_decode(input).as_deref(), *want, "{input}");
        }
    }
}
