//! Where a request of a cluster node is answered (docs/cluster.md,
//! "Writes on a replica"): reads here, writes on the primary.
//!
//! [`classify`] sorts a request by its route into [`Class::Local`] (served
//! by any node from its own indexes), [`Class::Memory`] (reads or changes
//! what only the primary holds in memory: web sessions, now playing,
//! Last.fm tokens, Audioscrobbler sessions, chat, scan status) and
//! [`Class::Write`] (changes what the primary ships). [`layer`], the
//! outermost middleware inside [`crate::front::wrap`], then:
//!
//! - on a **replica** forwards every non-local request to the primary's
//!   `advertise_url` unchanged (method, path, query, headers but the
//!   hop-by-hop ones, body streamed) with `X-Spindle-Forwarded-By` and
//!   `X-Forwarded-For`, streams the primary's answer back, and, when the
//!   answer names a round (`X-Spindle-Round`), holds it until that round
//!   is applied here (at most two shipping intervals and a second), so a
//!   client reads its own write through the same replica. A primary that
//!   cannot be reached is a 503 with `Retry-After`, never a local success;
//!   a request already forwarded once is never forwarded again;
//! - on the **primary** serves the request and stamps a write's answer
//!   with the round that will ship it; with `ship = "sync"`, a successful
//!   write is answered only once that round is in the bucket;
//! - on a **deposed** primary refuses them (503).
//!
//! Every answer of a cluster node names the node (`X-Spindle-Node`).
//! Outside a cluster the layer costs one check.

use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Mutex;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::{ConnectInfo, Request, State};
use axum::http::{header, HeaderMap, HeaderName, HeaderValue, Method, StatusCode};
use axum::middleware::Next;
use axum::response::Response;
use http_body::{Frame, SizeHint};

use super::{sign, Cluster, Role, MAX_WRITE_WAIT};
use crate::state::AppState;

/// Names the node that answered, on every answer of a cluster node.
pub const NODE_HEADER: &str = "x-spindle-node";
/// Names the replica that forwarded a request (and stops a second hop).
pub const FORWARDED_BY_HEADER: &str = "x-spindle-forwarded-by";
/// The primary's shipping round that holds a write.
pub const ROUND_HEADER: &str = "x-spindle-round";

/// The largest request body a replica forwards: 64 MiB, the largest body
/// any route takes (a listening-history upload to the web UI's imports,
/// `MAX_IMPORT_UPLOAD` in `crate::web`). The body is streamed through,
/// not buffered, so this bounds the primary's work, not this node's memory.
pub const MAX_FORWARD_BODY: u64 = 64 << 20;

/// How long a replica waits for the primary's answer to begin (its status
/// and headers): 60 s, room for a 64 MiB body within the primary's own
/// body deadline (30 s) and a `sync` write's wait ([`MAX_WRITE_WAIT`]).
/// The answer's body then streams for as long as it takes.
pub const FORWARD_TIMEOUT: Duration = Duration::from_secs(60);

/// `Retry-After` of a 503 for a write this node cannot take now: 2 s.
pub const RETRY_AFTER_SECS: u32 = 2;

/// How a request is served in a cluster.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Class {
    /// Any node answers from its own indexes and hot tier.
    Local,
    /// Only the primary can answer: it reads or changes state the
    /// primary keeps in memory (not shipped).
    Memory,
    /// Changes state the primary ships; its answer names the round.
    Write,
}

/// Whether a request goes to the primary: it changes state or depends on
/// the primary's in-memory state. `path` is without the base path.
pub fn is_write(method: &Method, path: &str, query: Option<&str>) -> bool {
    classify(method, path, query) != Class::Local
}

/// See [`is_write`]; this says which kind.
pub fn classify(method: &Method, path: &str, query: Option<&str>) -> Class {
    if let Some(name) = path.strip_prefix("/rest/") {
        let name = name.strip_suffix(".view").unwrap_or(name);
        // The adapter's method table says (crate::subsonic::methods).
        return crate::subsonic::methods::class_of(name);
    }
    // Last.fm 2.0 (by its method table), its desktop-auth page and
    // Audioscrobbler 1.2: the adapter's route table says
    // (crate::lastfm::routes).
    if let Some(class) = crate::lastfm::routes::class_of(method, path, query) {
        return class;
    }
    if path.starts_with("/1/") {
        // The adapter's endpoint table says (crate::listenbrainz::methods).
        return crate::listenbrainz::methods::class_of(method, path);
    }
    if path.starts_with("/ui/") {
        // The web UI's route table says (crate::web::routes).
        return crate::web::routes::class_of(method, path);
    }
    if path.starts_with("/share/") {
        // The share links' route table says (crate::share).
        return crate::share::class_of(path);
    }
    Class::Local
}

/// Why a request was not served by the node it reached.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RouteError {
    #[error("this node ({node}) is a replica and knows no primary yet; try again")]
    NoPrimary { node: String },
    #[error("the primary ({url}) cannot be reached; try again")]
    Unreachable {
        url: String,
        #[source]
        source: reqwest::Error,
    },
    #[error("the primary ({url}) did not answer within {} s; try again", FORWARD_TIMEOUT.as_secs())]
    TimedOut { url: String },
    #[error(
        "node {from} forwarded this request to node {node}, which is a replica too: the nodes \
         disagree on which is the primary (one has not seen the newest generation yet); try again"
    )]
    Loop { from: String, node: String },
    #[error("the request body is larger than {MAX_FORWARD_BODY} bytes; send a smaller one")]
    TooLarge,
    #[error(
        "this node ({node}) is no longer the primary (generation {generation} names {primary}); \
         run `spindle cluster rejoin`"
    )]
    Deposed {
        node: String,
        generation: u32,
        primary: String,
    },
    #[error("this node ({node}) has not joined the cluster yet; try again")]
    Joining { node: String },
    #[error(
        "the write is on the primary's disk but was not shipped to the bucket within {} s, so it \
         is not acknowledged; try again",
        MAX_WRITE_WAIT.as_secs()
    )]
    NotShipped,
}

impl RouteError {
    /// The answer to the client: 413 for a body too large, else 503 with
    /// `Retry-After`.
    pub fn response(&self) -> Response {
        let mut r = Response::new(Body::from(format!("{self}\n")));
        r.headers_mut().insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("text/plain; charset=utf-8"),
        );
        if let RouteError::TooLarge = self {
            *r.status_mut() = StatusCode::PAYLOAD_TOO_LARGE;
        } else {
            *r.status_mut() = StatusCode::SERVICE_UNAVAILABLE;
            r.headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from(RETRY_AFTER_SECS));
        }
        r
    }
}

/// The middleware (see the module doc).
pub async fn layer(State(state): State<AppState>, req: Request, next: Next) -> Response {
    if !state.cluster.is_on() {
        return next.run(req).await;
    }
    let user_header = state.config.proxy.user_header.as_ref();
    route(
        &state.cluster,
        &state.config.base_path,
        user_header,
        req,
        next,
    )
    .await
}

/// [`layer`] for a node of `cluster` whose routes are under `base_path`
/// (the same on every node), its trusted-header login in `user_header`.
pub(crate) async fn route(
    cluster: &Cluster,
    base_path: &str,
    user_header: Option<&HeaderName>,
    req: Request,
    next: Next,
) -> Response {
    route_with(cluster, base_path, user_header, MAX_FORWARD_BODY, req, next).await
}

async fn route_with(
    cluster: &Cluster,
    base_path: &str,
    user_header: Option<&HeaderName>,
    limit: u64,
    req: Request,
    next: Next,
) -> Response {
    let class = classify(req.method(), req.uri().path(), req.uri().query());
    let node = cluster.node();
    let mut resp = match (class, cluster.role()) {
        (Class::Local, _) => next.run(req).await,
        (_, Role::Primary) => on_primary(cluster, class, req, next).await,
        (_, Role::Replica) => match forward(cluster, base_path, user_header, limit, req).await {
            Ok(r) => r,
            Err(e) => {
                tracing::warn!(node, "a write was not forwarded: {}", chain(&e));
                e.response()
            }
        },
        (_, Role::Deposed) => RouteError::Deposed {
            node: node.to_owned(),
            generation: cluster.generation(),
            primary: cluster
                .primary_url()
                .unwrap_or_else(|| "another node".to_owned()),
        }
        .response(),
        (_, Role::Off) => RouteError::Joining {
            node: node.to_owned(),
        }
        .response(),
    };
    if let Ok(v) = HeaderValue::from_str(node) {
        resp.headers_mut().insert(NODE_HEADER, v);
    }
    resp
}

/// The primary serves it; a write's answer names its round and, in
/// `sync` mode, waits for it to be shipped.
async fn on_primary(cluster: &Cluster, class: Class, req: Request, next: Next) -> Response {
    let mut resp = next.run(req).await;
    if class != Class::Write {
        return resp;
    }
    // After the handler: the write is committed, so this round holds it.
    let round = cluster.next_round();
    resp.headers_mut()
        .insert(ROUND_HEADER, HeaderValue::from(round));
    let done = resp.status().is_success() || resp.status().is_redirection();
    if done && cluster.is_sync() && !cluster.wait_shipped().await {
        tracing::warn!(round, "a write was not shipped in time; answered 503");
        return RouteError::NotShipped.response();
    }
    resp
}

/// Sends `req` to the primary and returns its answer (see the module doc).
async fn forward(
    cluster: &Cluster,
    base_path: &str,
    user_header: Option<&HeaderName>,
    limit: u64,
    req: Request,
) -> Result<Response, RouteError> {
    let node = cluster.node().to_owned();
    if let Some(from) = req.headers().get(FORWARDED_BY_HEADER) {
        let from = String::from_utf8_lossy(from.as_bytes()).into_owned();
        return Err(RouteError::Loop { from, node });
    }
    let primary = cluster
        .primary_url()
        .ok_or_else(|| RouteError::NoPrimary { node: node.clone() })?;
    let (parts, body) = req.into_parts();
    let path = format!(
        "{}{}",
        base_path.trim_end_matches('/'),
        parts.uri.path_and_query().map_or("/", |p| p.as_str())
    );
    let url = format!("{}{path}", primary.trim_end_matches('/'));
    let hint = http_body::Body::size_hint(&body);
    if hint.lower() > limit {
        return Err(RouteError::TooLarge);
    }
    let headers = replica_headers(cluster, &parts, &path, user_header);
    let mut out = cluster
        .http()
        .request(parts.method.clone(), &url)
        .headers(headers);
    if hint.exact() != Some(0) {
        out = out.body(reqwest::Body::wrap(Capped::new(body, limit, hint)));
    }
    let answer = match tokio::time::timeout(FORWARD_TIMEOUT, out.send()).await {
        Err(_) => return Err(RouteError::TimedOut { url: primary }),
        Ok(Err(e)) if too_large(&e) => return Err(RouteError::TooLarge),
        Ok(Err(source)) => {
            return Err(RouteError::Unreachable {
                url: primary,
                source,
            })
        }
        Ok(Ok(a)) => a,
    };
    let round = answer
        .headers()
        .get(ROUND_HEADER)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    let answer: axum::http::Response<reqwest::Body> = answer.into();
    let (mut head, body) = answer.into_parts();
    head.headers = without_hop_by_hop(&head.headers);
    let resp = Response::from_parts(head, Body::new(body));
    if let Some(round) = round {
        let max = 2 * cluster.ship_interval() + Duration::from_secs(1);
        if !cluster.wait_applied(round, max).await {
            tracing::debug!(
                round,
                "answered a forwarded write before applying its round"
            );
        }
    }
    Ok(resp)
}

/// Headers that concern one connection only (RFC 9110, section 7.6.1),
/// plus those the `Connection` header names, and `Expect`: this node
/// already answered the client's `100-continue`.
const HOP_BY_HOP: &[&str] = &[
    "expect",
    "connection",
    "keep-alive",
    "transfer-encoding",
    "te",
    "trailer",
    "upgrade",
    "proxy-connection",
    "proxy-authenticate",
    "proxy-authorization",
];

/// `h` without the hop-by-hop headers. `Host` stays: the primary builds
/// the URLs it answers with (share links, the Audioscrobbler handshake's)
/// and checks a browser's origin against it, and the client asked for
/// this host, not the primary's.
fn without_hop_by_hop(h: &HeaderMap) -> HeaderMap {
    let named: Vec<String> = h
        .get_all(header::CONNECTION)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(|t| t.trim().to_ascii_lowercase())
        .collect();
    let mut out = HeaderMap::with_capacity(h.len());
    for (k, v) in h {
        let name = k.as_str();
        if HOP_BY_HOP.contains(&name)
            || name.starts_with("proxy-")
            || named.iter().any(|n| n == name)
        {
            continue;
        }
        out.append(k.clone(), v.clone());
    }
    out
}

/// The headers a replica sends the primary for the request `parts`
/// (`path` as the primary sees it): the client's, without the hop-by-hop
/// ones and without any by which the client could claim an address, a
/// protocol or a user ([`sign::strip_client_claims`]); then this node's
/// own word, from what its front resolved with its own trusted proxies —
/// `X-Forwarded-For` (the client), `X-Forwarded-Proto`, the user a
/// trusted proxy logged in ([`sign::USER_HEADER`]) — and its signature.
fn replica_headers(
    cluster: &Cluster,
    parts: &axum::http::request::Parts,
    path: &str,
    user_header: Option<&HeaderName>,
) -> HeaderMap {
    let mut headers = without_hop_by_hop(&parts.headers);
    sign::strip_client_claims(&mut headers, user_header);
    if let Ok(v) = HeaderValue::from_str(cluster.node()) {
        headers.insert(FORWARDED_BY_HEADER, v);
    }
    if let Some(c) = parts.extensions.get::<ConnectInfo<SocketAddr>>() {
        if let Ok(v) = HeaderValue::from_str(&c.0.ip().to_string()) {
            headers.insert(HeaderName::from_static("x-forwarded-for"), v);
        }
    }
    let https = parts
        .extensions
        .get::<crate::front::Scheme>()
        .is_some_and(|s| s.https);
    headers.insert(
        HeaderName::from_static("x-forwarded-proto"),
        HeaderValue::from_static(if https { "https" } else { "http" }),
    );
    // Set by this node's front only, from a proxy this node trusts.
    if let Some(u) = parts.headers.get(crate::proxy::PROXY_USER) {
        headers.insert(sign::USER_HEADER, u.clone());
    }
    if let Some(key) = cluster.signing_key() {
        sign::sign(
            key,
            parts.method.as_str(),
            path,
            sign::unix_now(),
            &mut headers,
        );
    }
    headers
}

/// `e` and its causes, for the log.
fn chain(e: &dyn std::error::Error) -> String {
    let mut out = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        out.push_str(": ");
        out.push_str(&c.to_string());
        cause = c.source();
    }
    out
}

/// A forwarded body longer than its limit.
#[derive(Debug, thiserror::Error)]
#[error("the request body is longer than {limit} bytes")]
struct BodyTooLarge {
    limit: u64,
}

/// Whether a forward failed because the body was over its limit.
fn too_large(e: &reqwest::Error) -> bool {
    let mut cause: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(c) = cause {
        if c.is::<BodyTooLarge>() {
            return true;
        }
        cause = c.source();
    }
    false
}

/// The client's body, streamed to the primary, failing past `limit`
/// bytes. (The mutex makes it `Sync`, as reqwest asks; it is never
/// contended: only `poll_frame` touches it, through `&mut self`.)
struct Capped {
    inner: Mutex<Body>,
    seen: u64,
    limit: u64,
    hint: SizeHint,
}

impl Capped {
    fn new(body: Body, limit: u64, hint: SizeHint) -> Capped {
        Capped {
            inner: Mutex::new(body),
            seen: 0,
            limit,
            hint,
        }
    }
}

impl http_body::Body for Capped {
    type Data = Bytes;
    type Error = Box<dyn std::error::Error + Send + Sync>;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        let this = self.get_mut();
        let inner = this
            .inner
            .get_mut()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        match Pin::new(inner).poll_frame(cx) {
            Poll::Ready(Some(Ok(frame))) => {
                if let Some(data) = frame.data_ref() {
                    this.seen = this.seen.saturating_add(data.len() as u64);
                    if this.seen > this.limit {
                        let e = BodyTooLarge { limit: this.limit };
                        return Poll::Ready(Some(Err(Box::new(e))));
                    }
                }
                Poll::Ready(Some(Ok(frame)))
            }
            Poll::Ready(Some(Err(e))) => Poll::Ready(Some(Err(Box::new(e)))),
            Poll::Ready(None) => Poll::Ready(None),
            Poll::Pending => Poll::Pending,
        }
    }

    fn size_hint(&self) -> SizeHint {
        self.hint
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use std::sync::Arc;

    use axum::routing::any;
    use axum::Router;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tower::ServiceExt;

    use super::*;
    use crate::cluster::config::{ClusterConfig, InitialRole, ShipMode};

    #[test]
    fn every_api_s_writes_go_to_the_primary_and_its_reads_stay_here() {
        use Class::{Local, Memory, Write};
        let (get, post, head) = (Method::GET, Method::POST, Method::HEAD);
        let table: &[(&Method, &str, Option<&str>, Class)] = &[
            // Subsonic, with and without .view, GET or POST.
            (&get, "/rest/scrobble.view", Some("id=1&u=a"), Write),
            (&post, "/rest/star", None, Write),
            (&get, "/rest/unstar", None, Write),
            (&get, "/rest/setRating.view", None, Write),
            (&post, "/rest/createPlaylist.view", None, Write),
            (&get, "/rest/updatePlaylist", None, Write),
            (&get, "/rest/deletePlaylist", None, Write),
            (&get, "/rest/savePlayQueue", None, Write),
            (&get, "/rest/savePlayQueueByIndex", None, Write),
            (&get, "/rest/createBookmark", None, Write),
            (&get, "/rest/deleteShare", None, Write),
            (&get, "/rest/createInternetRadioStation", None, Write),
            (&get, "/rest/changePassword.view", None, Write),
            (&get, "/rest/createUser", None, Write),
            (&get, "/rest/startScan", None, Write),
            (&get, "/rest/jukeboxControl", None, Write),
            (&get, "/rest/createPodcastChannel", None, Write),
            (&get, "/rest/getNowPlaying.view", None, Memory),
            (&get, "/rest/getChatMessages", None, Memory),
            (&post, "/rest/addChatMessage", None, Memory),
            (&get, "/rest/getScanStatus", None, Memory),
            (&get, "/rest/stream.view", Some("id=7"), Local),
            (&head, "/rest/download", None, Local),
            (&get, "/rest/getAlbumList2", None, Local),
            (&post, "/rest/search3.view", None, Local),
            (&get, "/rest/ping", None, Local),
            (&get, "/rest/getPlayQueue", None, Local),
            // Last.fm 2.0: GET by method (any case), every POST.
            (&get, "/2.0/", Some("method=track.scrobble&sk=x"), Write),
            (&get, "/2.0/", Some("method=Track.Love"), Write),
            (&get, "/2.0/", Some("method=track.unlove"), Write),
            (&get, "/2.0", Some("method=auth.getSession&token=t"), Write),
            (&get, "/2.0/", Some("method=auth.getMobileSession"), Write),
            (
                &get,
                "/2.0/",
                Some("method=auth.getToken&api_key=k"),
                Memory,
            ),
            (&get, "/2.0/", Some("method=track.updateNowPlaying"), Memory),
            (
                &get,
                "/2.0/",
                Some("method=user.getRecentTracks&user=a"),
                Memory,
            ),
            (
                &get,
                "/2.0/",
                Some("method=user.getTopArtists&user=a"),
                Local,
            ),
            (&get, "/2.0/", Some("method=track.getInfo"), Local),
            (&get, "/2.0/", None, Local),
            (&post, "/2.0/", None, Write),
            (&post, "/2.0", Some("method=user.getInfo"), Write),
            (&get, "/api/auth/", Some("api_key=k&token=t"), Memory),
            (&post, "/api/auth", None, Memory),
            // Audioscrobbler 1.2.
            (&get, "/", Some("hs=true&p=1.2.1&c=tst&v=1&u=a"), Memory),
            (&get, "/", Some("p=1.2&hs"), Memory),
            (&get, "/", None, Local),
            (&get, "/", Some("ths=1"), Local),
            (&post, "/as12/nowplaying", None, Memory),
            (&post, "/as12/submissions", None, Write),
            // ListenBrainz.
            (&post, "/1/submit-listens", None, Write),
            (&get, "/1/user/a/playing-now", None, Memory),
            (&get, "/1/user/a/listens", Some("count=5"), Local),
            (&get, "/1/validate-token", None, Local),
            (&get, "/1/stats/user/a/artists", None, Local),
            (&post, "/1/feedback/recording-feedback", None, Write),
            (&get, "/1/feedback/user/a/get-feedback", None, Local),
            // The web UI: all but its assets, reads too (sessions).
            (&post, "/ui/login", None, Memory),
            (&post, "/ui/logout", None, Memory),
            (&post, "/ui/setup", None, Write),
            (&get, "/ui/api/setup", None, Memory),
            (&get, "/ui/api/me", None, Memory),
            (&get, "/ui/api/search", Some("q=x"), Memory),
            (&post, "/ui/api/star", None, Write),
            (&post, "/ui/api/playing", None, Memory),
            (&post, "/ui/api/admin/imports", Some("user=a"), Write),
            (&post, "/ui/api/admin/user/a/delete", None, Write),
            (&get, "/ui/stream/3", None, Memory),
            (&get, "/ui/cover/3", None, Memory),
            (&get, "/ui/app.js", None, Local),
            (&get, "/ui/style.css", None, Local),
            // Shares: the page counts a visit.
            (&get, "/share/abc", None, Write),
            (&get, "/share/abc/player.js", None, Local),
            (&get, "/share/abc/stream/4", None, Local),
            // The rest.
            (&get, "/metrics", None, Local),
            (&get, "/healthz", None, Local),
        ];
        for (method, path, query, want) in table {
            assert_eq!(
                classify(method, path, *query),
                *want,
                "{method} {path}?{query:?}"
            );
            assert_eq!(is_write(method, path, *query), *want != Local);
        }
    }

    /// Subsonic methods that any node answers from its own indexes.
    #[rustfmt::skip]
    const SUBSONIC_LOCAL: &[&str] = &[
        "stream", "download", "getCoverArt", "getAvatar", "ping", "getLicense",
        "getMusicFolders", "getIndexes", "getArtists", "getArtist", "getAlbum", "getSong",
        "getLyrics", "getLyricsBySongId", "getMusicDirectory", "getGenres", "getAlbumList2",
        "getRandomSongs", "search3", "getAlbumList", "search2", "getStarred",
        "getSongsByGenre", "getTopSongs", "getSimilarSongs", "getSimilarSongs2",
        "getArtistInfo", "getArtistInfo2", "getAlbumInfo", "getAlbumInfo2", "getStarred2",
        "getPlaylists", "getPlaylist", "getUser", "getUsers", "getPlayQueue",
        "getPlayQueueByIndex", "getBookmarks", "tokenInfo", "getInternetRadioStations",
        "getShares", "getPodcasts", "getNewestPodcasts", "search", "getVideos",
        "getVideoInfo", "getCaptions", "hls.m3u8", "hls", "getPodcastEpisode",
        "getOpenSubsonicExtensions",
    ];

    /// Subsonic methods that change shipped state.
    const SUBSONIC_WRITES: &[&str] = &[
        "scrobble",
        "star",
        "unstar",
        "setRating",
        "createPlaylist",
        "updatePlaylist",
        "deletePlaylist",
        "createUser",
        "updateUser",
        "deleteUser",
        "changePassword",
        "savePlayQueue",
        "savePlayQueueByIndex",
        "createBookmark",
        "deleteBookmark",
        "startScan",
        "createInternetRadioStation",
        "updateInternetRadioStation",
        "deleteInternetRadioStation",
        "createShare",
        "updateShare",
        "deleteShare",
        "createPodcastChannel",
        "deletePodcastChannel",
        "deletePodcastEpisode",
        "downloadPodcastEpisode",
        "refreshPodcasts",
        "jukeboxControl",
    ];

    /// Subsonic methods answered from the primary's memory.
    const SUBSONIC_MEMORY: &[&str] = &[
        "getNowPlaying",
        "getChatMessages",
        "addChatMessage",
        "getScanStatus",
    ];

    #[test]
    fn every_subsonic_method_is_in_the_class_it_was_given() {
        let table: Vec<&str> = crate::subsonic::methods::TABLE
            .iter()
            .map(|m| m.name)
            .collect();
        for m in &table {
            let want = if SUBSONIC_WRITES.contains(m) {
                Class::Write
            } else if SUBSONIC_MEMORY.contains(m) {
                Class::Memory
            } else {
                assert!(SUBSONIC_LOCAL.contains(m), "say how a cluster serves {m}");
                Class::Local
            };
            for path in [format!("/rest/{m}"), format!("/rest/{m}.view")] {
                assert_eq!(classify(&Method::GET, &path, None), want, "{path}");
            }
        }
        for m in SUBSONIC_WRITES
            .iter()
            .chain(SUBSONIC_MEMORY)
            .chain(SUBSONIC_LOCAL)
        {
            assert!(table.contains(m), "no Subsonic method {m}");
        }
    }

    #[test]
    fn hop_by_hop_headers_and_those_connection_names_are_not_passed_on() {
        let mut h = HeaderMap::new();
        for (k, v) in [
            ("connection", "keep-alive, x-private"),
            ("keep-alive", "timeout=5"),
            ("transfer-encoding", "chunked"),
            ("te", "trailers"),
            ("upgrade", "h2c"),
            ("expect", "100-continue"),
            ("proxy-authorization", "Basic x"),
            ("x-private", "1"),
            ("host", "music.example"),
            ("cookie", "spindle_session=s"),
            ("content-length", "3"),
        ] {
            h.append(k, HeaderValue::from_static(v));
        }
        let out = without_hop_by_hop(&h);
        let mut names: Vec<&str> = out.keys().map(HeaderName::as_str).collect();
        names.sort_unstable();
        assert_eq!(names, ["content-length", "cookie", "host"]);
    }

    pub(crate) fn config(name: &str, ship: ShipMode) -> ClusterConfig {
        let s3 = spindle_tiers::config::S3Config {
            endpoints: vec!["http://127.0.0.1:1".into()],
            region: "garage".into(),
            bucket: "spindle".into(),
            access_key: "k".into(),
            secret_key: "s".into(),
            path_style: true,
            prefix: "cluster/".into(),
        };
        ClusterConfig {
            role: InitialRole::Primary,
            node: name.into(),
            advertise_url: "http://127.0.0.1:1".into(),
            store: "garage".into(),
            s3,
            prefix: "cluster/".into(),
            ship_interval: Duration::from_millis(50),
            ship,
            snapshot_every: Duration::from_secs(3600),
            poll_interval: Duration::from_millis(50),
            lease: Duration::from_secs(10),
        }
    }

    fn node(name: &str, role: Role, primary: Option<String>, ship: ShipMode) -> Arc<Cluster> {
        let c = Cluster::new(config(name, ship));
        c.set_role(role, 1, primary);
        Arc::new(c)
    }

    /// A node whose every route echoes the request it got, behind the
    /// layer, forwarding bodies up to `limit`.
    fn app(cluster: Arc<Cluster>, limit: u64) -> Router {
        let name = cluster.node().to_owned();
        Router::new()
            .route("/ping", any(|| async { "pong" }))
            .fallback(move |req: Request| {
                let name = name.clone();
                async move {
                    let (parts, body) = req.into_parts();
                    let body = axum::body::to_bytes(body, usize::MAX).await.unwrap();
                    let h = |n: &str| {
                        parts
                            .headers
                            .get(n)
                            .map_or("-", |v| v.to_str().unwrap())
                            .to_owned()
                    };
                    let text = format!(
                        "{name} {} {} body={} by={} xff={} host={}",
                        parts.method,
                        parts.uri,
                        String::from_utf8_lossy(&body),
                        h(FORWARDED_BY_HEADER),
                        h("x-forwarded-for"),
                        h("host"),
                    );
                    (StatusCode::CREATED, [("x-echo", "yes")], text)
                }
            })
            .layer(axum::middleware::from_fn(
                move |req: Request, next: Next| {
                    let c = cluster.clone();
                    async move { route_with(&c, "", None, limit, req, next).await }
                },
            ))
    }

    pub(crate) async fn serve(app: Router) -> SocketAddr {
        let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = l.local_addr().unwrap();
        let svc = app.into_make_service_with_connect_info::<SocketAddr>();
        tokio::spawn(async move { axum::serve(l, svc).await });
        addr
    }

    /// A primary and a replica of it, both serving; their addresses.
    async fn pair(limit: u64) -> (Arc<Cluster>, Arc<Cluster>, SocketAddr, SocketAddr) {
        let a = node("a", Role::Primary, None, ShipMode::Async);
        let pa = serve(app(a.clone(), limit)).await;
        let b = node(
            "b",
            Role::Replica,
            Some(format!("http://{pa}")),
            ShipMode::Async,
        );
        let pb = serve(app(b.clone(), limit)).await;
        (a, b, pa, pb)
    }

    fn header<'a>(r: &'a reqwest::Response, name: &str) -> &'a str {
        r.headers().get(name).map_or("", |v| v.to_str().unwrap())
    }

    #[tokio::test]
    async fn a_replica_forwards_a_write_and_answers_with_the_primary_s_answer() {
        let (_a, b, _pa, pb) = pair(MAX_FORWARD_BODY).await;
        b.set_applied_round(1);
        let r = reqwest::Client::new()
            .post(format!("http://{pb}/rest/star.view?id=1&u=x"))
            .body("c=d")
            .header("content-type", "application/x-www-form-urlencoded")
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 201);
        assert_eq!(header(&r, "x-echo"), "yes");
        assert_eq!(header(&r, NODE_HEADER), "b");
        assert_eq!(header(&r, ROUND_HEADER), "1");
        let text = r.text().await.unwrap();
        assert_eq!(
            text,
            format!("a POST /rest/star.view?id=1&u=x body=c=d by=b xff=127.0.0.1 host={pb}")
        );
    }

    #[tokio::test]
    async fn a_read_on_a_replica_is_answered_by_the_replica() {
        let (_a, _b, pa, pb) = pair(MAX_FORWARD_BODY).await;
        let r = reqwest::get(format!("http://{pb}/rest/getAlbum?id=1"))
            .await
            .unwrap();
        assert_eq!(header(&r, NODE_HEADER), "b");
        assert_eq!(header(&r, ROUND_HEADER), "");
        assert!(r.text().await.unwrap().starts_with("b GET /rest/getAlbum"));
        let r = reqwest::get(format!("http://{pa}/ui/api/me"))
            .await
            .unwrap();
        assert_eq!(header(&r, NODE_HEADER), "a");
        assert_eq!(header(&r, ROUND_HEADER), "", "a read is in no round");
    }

    #[tokio::test]
    async fn a_forwarded_write_is_answered_once_the_replica_applied_its_round() {
        let (_a, b, _pa, pb) = pair(MAX_FORWARD_BODY).await;
        let b2 = b.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(400)).await;
            b2.set_applied_round(1);
        });
        let t = std::time::Instant::now();
        let r = reqwest::get(format!("http://{pb}/rest/scrobble?id=1"))
            .await
            .unwrap();
        let took = t.elapsed();
        assert_eq!(r.status(), 201);
        assert!(r.text().await.unwrap().starts_with("a GET"));
        // The wait ends when the round is applied, before its cap (1.1 s).
        assert!(took >= Duration::from_millis(400), "{took:?}");
        assert!(took < Duration::from_millis(1000), "{took:?}");
    }

    #[tokio::test]
    async fn a_replica_answers_503_when_the_primary_cannot_be_reached() {
        let gone = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", gone.local_addr().unwrap());
        drop(gone);
        let b = node("b", Role::Replica, Some(url.clone()), ShipMode::Async);
        let pb = serve(app(b, MAX_FORWARD_BODY)).await;
        let r = reqwest::Client::new()
            .post(format!("http://{pb}/1/submit-listens"))
            .body("{}")
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 503);
        assert_eq!(header(&r, "retry-after"), "2");
        assert_eq!(header(&r, NODE_HEADER), "b");
        let text = r.text().await.unwrap();
        assert_eq!(
            text,
            format!("the primary ({url}) cannot be reached; try again\n")
        );
        // No primary known at all: the same refusal.
        let c = node("c", Role::Replica, None, ShipMode::Async);
        let pc = serve(app(c, MAX_FORWARD_BODY)).await;
        let r = reqwest::get(format!("http://{pc}/rest/star"))
            .await
            .unwrap();
        assert_eq!(r.status(), 503);
        assert!(r.text().await.unwrap().contains("knows no primary"));
    }

    #[tokio::test]
    async fn a_request_forwarded_once_is_never_forwarded_again() {
        let (_a, _b, _pa, pb) = pair(MAX_FORWARD_BODY).await;
        let r = reqwest::Client::new()
            .get(format!("http://{pb}/rest/star?id=1"))
            .header(FORWARDED_BY_HEADER, "c")
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 503);
        let text = r.text().await.unwrap();
        assert!(
            text.contains("node c forwarded this request to node b"),
            "{text}"
        );
    }

    #[tokio::test]
    async fn a_deposed_primary_refuses_writes_and_still_serves_reads() {
        let d = node(
            "d",
            Role::Deposed,
            Some("http://10.0.0.2:4533".into()),
            ShipMode::Async,
        );
        let pd = serve(app(d, MAX_FORWARD_BODY)).await;
        let r = reqwest::get(format!("http://{pd}/2.0/?method=track.scrobble"))
            .await
            .unwrap();
        assert_eq!(r.status(), 503);
        let text = r.text().await.unwrap();
        assert!(
            text.contains("generation 1") && text.contains("cluster rejoin"),
            "{text}"
        );
        let r = reqwest::get(format!("http://{pd}/rest/getAlbum"))
            .await
            .unwrap();
        assert_eq!(r.status(), 201);
    }

    #[tokio::test]
    async fn a_body_over_the_limit_is_refused_declared_or_streamed() {
        let (_a, _b, _pa, pb) = pair(10).await;
        let r = reqwest::Client::new()
            .post(format!("http://{pb}/rest/createPlaylist"))
            .body("x".repeat(11))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 413);
        // Chunked, so only the bytes tell.
        let mut s = tokio::net::TcpStream::connect(pb).await.unwrap();
        let req = "POST /rest/createPlaylist HTTP/1.1\r\nhost: x\r\ntransfer-encoding: chunked\r\n\
                   connection: close\r\n\r\n6\r\nabcdef\r\n6\r\nghijkl\r\n0\r\n\r\n";
        s.write_all(req.as_bytes()).await.unwrap();
        let mut answer = String::new();
        s.read_to_string(&mut answer).await.unwrap();
        assert!(answer.starts_with("HTTP/1.1 413"), "{answer}");
        // Within the limit, chunked: forwarded whole.
        let mut s = tokio::net::TcpStream::connect(pb).await.unwrap();
        let req = "POST /rest/createPlaylist HTTP/1.1\r\nhost: x\r\ntransfer-encoding: chunked\r\n\
                   connection: close\r\n\r\n3\r\nabc\r\n3\r\ndef\r\n0\r\n\r\n";
        s.write_all(req.as_bytes()).await.unwrap();
        let mut answer = String::new();
        s.read_to_string(&mut answer).await.unwrap();
        assert!(answer.starts_with("HTTP/1.1 201"), "{answer}");
        assert!(
            answer.contains("a POST /rest/createPlaylist body=abcdef by=b"),
            "{answer}"
        );
    }

    #[tokio::test]
    async fn a_large_answer_streams_through_a_replica() {
        // A stream of the web UI goes to the primary (the session is there).
        let a = node("a", Role::Primary, None, ShipMode::Async);
        let big = Router::new()
            .route("/ui/stream/{id}", any(|| async { vec![7u8; 8 << 20] }))
            .layer(axum::middleware::from_fn(
                move |req: Request, next: Next| {
                    let c = a.clone();
                    async move { route(&c, "", None, req, next).await }
                },
            ));
        let pa = serve(big).await;
        let b = node(
            "b",
            Role::Replica,
            Some(format!("http://{pa}")),
            ShipMode::Async,
        );
        let pb = serve(app(b, MAX_FORWARD_BODY)).await;
        let r = reqwest::get(format!("http://{pb}/ui/stream/1"))
            .await
            .unwrap();
        assert_eq!(r.status(), 200);
        assert_eq!(header(&r, "content-length"), (8 << 20).to_string());
        let body = r.bytes().await.unwrap();
        assert!(body.len() == 8 << 20 && body.iter().all(|b| *b == 7));
    }

    fn write_request() -> Request {
        Request::builder()
            .uri("/rest/scrobble?id=1")
            .body(Body::empty())
            .unwrap()
    }

    #[tokio::test]
    async fn a_sync_primary_answers_a_write_once_its_round_is_shipped() {
        let a = node("a", Role::Primary, None, ShipMode::Sync);
        let shipper = a.clone();
        tokio::spawn(async move {
            loop {
                shipper.ship_now.notified().await;
                let n = shipper.round_started();
                shipper.round_done(n);
            }
        });
        let r = app(a, MAX_FORWARD_BODY)
            .oneshot(write_request())
            .await
            .unwrap();
        assert_eq!(r.status(), StatusCode::CREATED);
        assert_eq!(r.headers()[ROUND_HEADER], "1");
        assert_eq!(r.headers()[NODE_HEADER], "a");
    }

    #[tokio::test(start_paused = true)]
    async fn a_sync_primary_refuses_to_acknowledge_a_write_it_could_not_ship() {
        let a = node("a", Role::Primary, None, ShipMode::Sync);
        let r = app(a, MAX_FORWARD_BODY)
            .oneshot(write_request())
            .await
            .unwrap();
        assert_eq!(r.status(), StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(r.headers()[header::RETRY_AFTER], "2");
        let body = axum::body::to_bytes(r.into_body(), 1 << 16).await.unwrap();
        let text = String::from_utf8_lossy(&body);
        assert!(text.contains("not shipped"), "{text}");
    }

    #[tokio::test]
    async fn the_server_names_its_node_only_in_a_cluster_and_forwards_under_its_base_path() {
        let data = tempfile::tempdir().unwrap();
        let off = AppState::in_dir(data.path(), 1_750_000_000);
        let r = crate::router(off)
            .oneshot(
                Request::builder()
                    .uri("/healthz")
                    .body(Body::empty())
                    .unwrap(),
            )
            .await
            .unwrap();
        assert_eq!(r.status(), StatusCode::OK);
        assert!(r.headers().get(NODE_HEADER).is_none());

        let a = node("a", Role::Primary, None, ShipMode::Async);
        let pa = serve(app(a, MAX_FORWARD_BODY)).await;
        let data = tempfile::tempdir().unwrap();
        let base = AppState::in_dir(data.path(), 1_750_000_000);
        let settings = crate::Config {
            base_path: "/music".into(),
            ..(*base.config).clone()
        };
        let st = AppState::new(
            base.db.clone(),
            base.accounts.clone(),
            base.listens.clone(),
            settings,
            base.clock.clone(),
        )
        .with_cluster(config("b", ShipMode::Async));
        st.cluster
            .set_role(Role::Replica, 1, Some(format!("http://{pa}")));
        st.cluster.set_applied_round(1);
        let pb = serve(crate::router(st)).await;
        let r = reqwest::get(format!("http://{pb}/music/healthz"))
            .await
            .unwrap();
        assert_eq!(header(&r, NODE_HEADER), "b");
        assert_eq!(r.text().await.unwrap(), "ok\n");
        let r = reqwest::get(format!("http://{pb}/music/rest/star?id=2"))
            .await
            .unwrap();
        assert_eq!(header(&r, NODE_HEADER), "b");
        let text = r.text().await.unwrap();
        assert!(
            text.starts_with("a GET /music/rest/star?id=2 body= by=b"),
            "{text}"
        );
    }
}
