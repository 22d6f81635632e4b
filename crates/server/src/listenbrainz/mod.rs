//! The ListenBrainz API at the host root (`/1/…`), where liblistenbrainz
//! expects it: submit-listens (single, playing_now, import, with
//! ListenBrainz's limits), validate-token, a user's listens, listen count
//! and playing-now, the user statistics (`stats.rs`) and recording
//! feedback, a user's loves (`feedback.rs`). Every response carries
//! `X-RateLimit-*` headers. The endpoints are the rows of
//! `methods::TABLE`, which also runs them: the rate limit, the token
//! where one is required, the handler, and an error as ListenBrainz's
//! document (`error::LbError`).
//!
//! A user's listens, listen count, playing-now and statistics are private unless the
//! user made them public (`spindle user privacy NAME public`, or the web
//! UI): the owner reads them with their token in `Authorization: Token …`.
//! Anyone else gets 401 with [`PRIVATE`], the same answer as for a user
//! that does not exist, so user names cannot be told apart.

use std::collections::HashMap;
use std::net::SocketAddr;

use axum::body::Body;
use axum::extract::{ConnectInfo, Request};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::Response;
use axum::Router;
use serde_json::{json, Map, Value};
use spindle_listens::{Listen, Page, RecentQuery};

use crate::auth_guard::Denied;
use crate::music::history_readable;
use crate::params::Params;
use crate::scrobble;
use crate::state::{AppState, RateInfo};
use error::LbError;

mod error;
mod feedback;
pub mod methods;
mod range;
mod stats;

/// Most listens in one submission.
pub const MAX_LISTENS_PER_REQUEST: usize = 1000;
/// Largest listen, in bytes of JSON.
pub const MAX_LISTEN_SIZE: usize = 10_240;
/// Most listens one GET returns.
pub const MAX_ITEMS_PER_GET: usize = 1000;

/// Every endpoint of the table (`methods::TABLE`).
pub fn router() -> Router<AppState> {
    methods::router()
}

/// What a handler gets ([`methods::dispatch`]): the state, the request
/// and the route's path parameters.
pub(crate) struct Call {
    pub st: AppState,
    pub req: Request,
    params: HashMap<String, String>,
}

impl Call {
    /// The path parameter `name` of the route (`{name}`), percent-decoded.
    fn param(&self, name: &str) -> String {
        self.params.get(name).cloned().unwrap_or_default()
    }
}

/// A handler's answer, 200 unless said.
#[derive(Debug)]
pub(crate) enum Reply {
    /// This JSON document.
    Json(Value),
    /// `204 No Content`: no body, no `Content-Type`.
    NoContent,
}

impl Reply {
    /// The answer, with the rate-limit headers of `rate`.
    fn render(self, rate: &RateInfo) -> Response {
        match self {
            Reply::Json(v) => reply(StatusCode::OK, v, rate),
            Reply::NoContent => {
                let mut r = reply(StatusCode::NO_CONTENT, Value::Null, rate);
                *r.body_mut() = Body::empty();
                r.headers_mut().remove(header::CONTENT_TYPE);
                r
            }
        }
    }
}

/// `{"status": "ok"}`, the answer to a write.
fn status_ok() -> Reply {
    Reply::Json(json!({"status": "ok"}))
}

fn reply(status: StatusCode, body: Value, rate: &RateInfo) -> Response {
    let mut r = Response::new(Body::from(body.to_string()));
    *r.status_mut() = status;
    let h = r.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    for (k, v) in [
        ("x-ratelimit-limit", rate.limit.to_string()),
        ("x-ratelimit-remaining", rate.remaining.to_string()),
        ("x-ratelimit-reset-in", rate.reset_in.to_string()),
        ("x-ratelimit-reset", rate.reset_at.to_string()),
    ] {
        if let Ok(v) = HeaderValue::from_str(&v) {
            h.insert(k, v);
        }
    }
    r
}

fn rate_of(st: &AppState, req: &Request) -> RateInfo {
    st.rate(
        req.extensions()
            .get::<ConnectInfo<SocketAddr>>()
            .map(|c| c.0.ip()),
    )
}

fn header_token(h: &HeaderMap) -> Option<String> {
    let v = h.get(header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, tok) = v.trim().split_once(' ')?;
    scheme
        .eq_ignore_ascii_case("token")
        .then(|| tok.trim().to_owned())
}

const TOO_MANY: &str = "Too many requests; wait for X-RateLimit-Reset-In seconds";

/// The API's name in log lines.
const VIA: &str = "listenbrainz";

/// Whose token `tok` is, through the guard: a wrong token counts as a
/// failed login of the client's address; `Err` for an address that must
/// wait, whose token is not checked.
fn token_owner(st: &AppState, req: &Request, tok: &str) -> Result<Option<String>, Denied> {
    let ip = crate::auth_guard::client_ip(req.extensions());
    match st
        .guard
        .check(ip, None, VIA, || st.accounts.user_by_token(tok))
    {
        Ok(user) => Ok(Some(user)),
        Err(Denied::Wrong) => Ok(None),
        Err(d) => Err(d),
    }
}

/// The user of the token in the `Authorization` header, for an endpoint
/// that needs one ([`methods::Auth::Token`]).
fn token_user(st: &AppState, req: &Request) -> Result<String, LbError> {
    let tok = header_token(req.headers()).ok_or_else(no_token)?;
    token_owner(st, req, &tok)?.ok_or_else(no_token)
}

/// The 401 of an endpoint that needs a token, without a valid one.
fn no_token() -> LbError {
    LbError::new(
        StatusCode::UNAUTHORIZED,
        "You need to provide a valid Authorization header.",
    )
}

/// The 401 message of a history read the caller may not make, for a
/// private user and a user that does not exist alike.
pub const PRIVATE: &str = "The listens of this user are private, or there is no such user; \
the user reads their own with their token in an Authorization header.";

/// Whether the caller may read `name`'s history: the owner by token, or
/// anyone when it is public (`crate::music::history_readable`).
fn may_read(st: &AppState, req: &Request, name: &str) -> bool {
    // Through the guard: a token that is wrong (or must wait) reads as
    // no viewer.
    let ip = crate::auth_guard::client_ip(req.extensions());
    let viewer = header_token(req.headers()).and_then(|t| {
        st.guard
            .check(ip, None, VIA, || st.accounts.user_by_token(&t))
            .ok()
    });
    history_readable(&st.accounts, Some(&st.music), name, viewer.as_deref())
}

/// The check of every read of `name`'s history ([`methods::Auth::MaybeToken`]):
/// [`may_read`], else 401 with [`PRIVATE`].
fn history_read(c: &Call, name: &str) -> Result<(), LbError> {
    if may_read(&c.st, &c.req, name) {
        Ok(())
    } else {
        Err(LbError::new(StatusCode::UNAUTHORIZED, PRIVATE))
    }
}

/// `GET /1/validate-token`: whether the token (header or `token`
/// parameter) is valid, and whose.
async fn validate(c: Call) -> Result<Reply, LbError> {
    let q = Params::parse(c.req.uri().query(), b"");
    let tok = header_token(c.req.headers())
        .or_else(|| q.get("token").map(str::to_owned))
        .ok_or_else(|| LbError::bad_request("You need to provide an Authorization token."))?;
    Ok(Reply::Json(match token_owner(&c.st, &c.req, &tok)? {
        Some(user) => {
            json!({"code": 200, "message": "Token valid.", "valid": true, "user_name": user})
        }
        None => json!({"code": 200, "message": "Token invalid.", "valid": false}),
    }))
}

/// One listen of a submission, checked the way ListenBrainz does.
fn parse_listen(v: &Value, user: &str, listen_type: &str) -> Result<Listen, String> {
    let size = v.to_string().len();
    if size > MAX_LISTEN_SIZE {
        return Err(format!(
            "Listen is too large ({size} bytes; at most {MAX_LISTEN_SIZE})"
        ));
    }
    let o = v.as_object().ok_or("A listen must be a JSON object.")?;
    let md = o
        .get("track_metadata")
        .and_then(Value::as_object)
        .ok_or("JSON document must contain track_metadata.")?;
    let text =
        |m: &Map<String, Value>, k: &str| m.get(k).and_then(Value::as_str).map(str::to_owned);
    let artist = text(md, "artist_name").unwrap_or_default();
    let title = text(md, "track_name").unwrap_or_default();
    if artist.trim().is_empty() {
        return Err("JSON document must contain non-empty artist_name.".into());
    }
    if title.trim().is_empty() {
        return Err("JSON document must contain non-empty track_name.".into());
    }
    let mut l = Listen::new(user, 0, &artist, &title);
    l.album = text(md, "release_name").unwrap_or_default();
    l.client = "listenbrainz".into();
    if let Some(ai) = md.get("additional_info").and_then(Value::as_object) {
        spindle_listens::import::listenbrainz::additional_info(ai, &mut l);
        l.album_artist = text(ai, "release_artist_name").unwrap_or_default();
        if let Some(c) = text(ai, "submission_client").or_else(|| text(ai, "media_player")) {
            l.client = format!("listenbrainz/{c}");
        }
    }
    match (listen_type, o.get("listened_at")) {
        ("playing_now", Some(_)) => {
            return Err("Listens of type playing_now must not have listened_at.".into())
        }
        ("playing_now", None) => {}
        (_, Some(ts)) => {
            l.timestamp = ts
                .as_i64()
                .ok_or("listened_at must be an integer UNIX timestamp.")?;
        }
        (_, None) => return Err("JSON document must contain the key listened_at.".into()),
    }
    Ok(l)
}

/// The JSON document of a POST whose token [`methods::dispatch`] has
/// checked (so a client without one was answered before it sent its
/// body): the body within `[limits] max_body`, parsed whatever the
/// Content-Type says (liblistenbrainz sends none).
pub(super) async fn json_body(st: &AppState, req: Request) -> Result<Value, LbError> {
    let limit = st.config.max_body;
    let body = crate::body::read_body(req.into_body(), limit, &st.bodies).await?;
    serde_json::from_slice(&body)
        .map_err(|e| LbError::bad_request(format!("Cannot parse JSON document: {e}")))
}

/// `POST /1/submit-listens`: listens (`single`, `import`) or what the
/// user is playing now (`playing_now`).
async fn submit(c: Call, user: String) -> Result<Reply, LbError> {
    let st = c.st;
    let doc = json_body(&st, c.req).await?;
    let listen_type = doc.get("listen_type").and_then(Value::as_str).unwrap_or("");
    if !matches!(listen_type, "single" | "playing_now" | "import") {
        return Err(LbError::bad_request(
            "JSON document must have listen_type single, playing_now or import.",
        ));
    }
    let payload = doc
        .get("payload")
        .and_then(Value::as_array)
        .ok_or_else(|| LbError::bad_request("JSON document must contain a payload list."))?;
    if payload.is_empty() {
        return Err(LbError::bad_request("JSON document has an empty payload."));
    }
    if listen_type != "import" && payload.len() != 1 {
        return Err(LbError::bad_request(format!(
            "JSON document of type {listen_type} must contain exactly one listen."
        )));
    }
    if payload.len() > MAX_LISTENS_PER_REQUEST {
        return Err(LbError::bad_request(format!(
            "Too many listens: at most {MAX_LISTENS_PER_REQUEST} per request."
        )));
    }
    let mut listens = Vec::with_capacity(payload.len());
    for (i, v) in payload.iter().enumerate() {
        let l = parse_listen(v, &user, listen_type)
            .map_err(|m| LbError::bad_request(format!("listen {i}: {m}")))?;
        if let Err(ig) = scrobble::check(&st, &l, listen_type != "playing_now") {
            return Err(LbError::bad_request(match ig {
                scrobble::Ignored::TooOld => format!(
                    "listen {i}: listened_at is before the earliest accepted time ({})",
                    st.config.min_timestamp
                ),
                scrobble::Ignored::TooNew => {
                    format!("listen {i}: listened_at is too far in the future")
                }
                scrobble::Ignored::TooLong { .. } => format!("listen {i}: {}", ig.message()),
                _ => format!("listen {i}: a field is empty or holds a NUL byte"),
            }));
        }
        listens.push(l);
    }
    if listen_type == "playing_now" {
        if let Some(mut l) = listens.pop() {
            l.timestamp = st.now();
            st.set_now_playing(l);
        }
    } else {
        scrobble::store(&st, listens).await.map_err(|e| {
            if e.is_refusal() {
                LbError::bad_request(e.to_string())
            } else {
                LbError::new(
                    StatusCode::SERVICE_UNAVAILABLE,
                    format!("Could not store the listens, retry: {e}"),
                )
            }
        })?;
    }
    Ok(status_ok())
}

fn listen_json(l: &Listen, playing_now: bool) -> Value {
    let mut ai = Map::new();
    if !l.mbid.is_empty() {
        ai.insert("recording_mbid".into(), json!(l.mbid));
    }
    // The track's id for feedback (`feedback.rs`), the same for every
    // user: ListenBrainz's MessyBrainz id, as Spindle makes it.
    let msid = crate::loves::msid(&l.artist, &l.title);
    ai.insert("recording_msid".into(), json!(msid));
    if let Some(d) = l.duration {
        ai.insert("duration_ms".into(), json!(u64::from(d) * 1000));
    }
    if let Some(n) = l.track_number {
        ai.insert("tracknumber".into(), json!(n));
    }
    if !l.album_artist.is_empty() {
        ai.insert("release_artist_name".into(), json!(l.album_artist));
    }
    if !l.artists.is_empty() {
        ai.insert("artist_names".into(), json!(l.artists));
    }
    let mut md = json!({
        "artist_name": l.artist,
        "track_name": l.title,
        "additional_info": ai,
    });
    if !l.album.is_empty() {
        md["release_name"] = json!(l.album);
    }
    if playing_now {
        json!({"playing_now": true, "track_metadata": md})
    } else {
        json!({
            "listened_at": l.timestamp,
            "user_name": l.user,
            "inserted_at": l.timestamp,
            "recording_msid": msid,
            "track_metadata": md,
        })
    }
}

/// `GET /1/user/NAME/listens` (`max_ts` or `min_ts`, `count`).
async fn listens(c: Call) -> Result<Reply, LbError> {
    let name = c.param("name");
    history_read(&c, &name)?;
    let st = &c.st;
    let q = Params::parse(c.req.uri().query(), b"");
    let num = |k: &str| q.get(k).map(|v| v.parse::<i64>());
    let (max_ts, min_ts, count) = match (num("max_ts"), num("min_ts"), num("count")) {
        (Some(Err(_)), _, _) | (_, Some(Err(_)), _) | (_, _, Some(Err(_))) => {
            return Err(LbError::bad_request(
                "max_ts, min_ts and count must be integers.",
            ))
        }
        (a, b, c) => (
            a.and_then(Result::ok),
            b.and_then(Result::ok),
            c.and_then(Result::ok),
        ),
    };
    if max_ts.is_some() && min_ts.is_some() {
        return Err(LbError::bad_request(
            "You may only specify max_ts or min_ts, not both.",
        ));
    }
    let count = count.unwrap_or(25).clamp(0, MAX_ITEMS_PER_GET as i64) as usize;
    // max_ts and min_ts are exclusive in ListenBrainz: nothing is after
    // i64::MAX or before i64::MIN.
    let (from, to) = (
        min_ts.map(|t| t.checked_add(1)),
        max_ts.map(|t| t.checked_sub(1)),
    );
    let page = if matches!(from, Some(None)) || matches!(to, Some(None)) {
        Page {
            listens: Vec::new(),
            total: 0,
        }
    } else {
        st.listens.recent(
            &name,
            &RecentQuery {
                from: from.flatten(),
                to: to.flatten(),
                limit: count,
                page: 1,
            },
        )
    };
    let all = st.listens.recent(
        &name,
        &RecentQuery {
            limit: 1,
            page: 1,
            ..RecentQuery::default()
        },
    );
    let latest = all.listens.first().map_or(0, |l| l.timestamp);
    let listens: Vec<Value> = page.listens.iter().map(|l| listen_json(l, false)).collect();
    Ok(Reply::Json(json!({"payload": {
        "count": listens.len(),
        "user_id": name,
        "latest_listen_ts": latest,
        "oldest_listen_ts": st.listens.summary(&name).first_listen.unwrap_or(0),
        "listens": listens,
    }})))
}

/// `GET /1/user/NAME/playing-now`.
async fn playing_now(c: Call) -> Result<Reply, LbError> {
    let name = c.param("name");
    history_read(&c, &name)?;
    let np: Vec<Value> =
        c.st.now_playing(&name)
            .iter()
            .map(|l| listen_json(l, true))
            .collect();
    Ok(Reply::Json(json!({"payload": {
        "count": np.len(),
        "user_id": name,
        "playing_now": !np.is_empty(),
        "listens": np,
    }})))
}

/// `GET /1/user/NAME/listen-count`: `{"payload": {"count": N}}`, every
/// listen of the user's history; read as their listens are.
async fn listen_count(c: Call) -> Result<Reply, LbError> {
    let name = c.param("name");
    history_read(&c, &name)?;
    let count = c.st.listens.summary(&name).playcount;
    Ok(Reply::Json(json!({"payload": {"count": count}})))
}
