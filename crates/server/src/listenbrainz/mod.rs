//! The ListenBrainz API at the host root (`/1/…`), where liblistenbrainz
//! expects it: submit-listens (single, playing_now, import, with
//! ListenBrainz's limits), validate-token, a user's listens, listen count
//! and playing-now, the user statistics (`stats.rs`) and recording
//! feedback, a user's loves (`feedback.rs`). Every response carries
//! `X-RateLimit-*` headers.
//!
//! A user's listens, listen count, playing-now and statistics are private unless the
//! user made them public (`spindle user privacy NAME public`, or the web
//! UI): the owner reads them with their token in `Authorization: Token …`.
//! Anyone else gets 401 with [`PRIVATE`], the same answer as for a user
//! that does not exist, so user names cannot be told apart.

use std::net::SocketAddr;

use axum::body::Body;
use axum::extract::{ConnectInfo, Path, Request, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::Response;
use axum::routing::{get, post};
use axum::Router;
use serde_json::{json, Map, Value};
use spindle_listens::{Listen, Page, RecentQuery};

use crate::auth_guard::{http_refusal, Denied};
use crate::music::history_readable;
use crate::params::Params;
use crate::scrobble;
use crate::state::{AppState, RateInfo};

mod feedback;
mod range;
mod stats;

/// Most listens in one submission.
pub const MAX_LISTENS_PER_REQUEST: usize = 1000;
/// Largest listen, in bytes of JSON.
pub const MAX_LISTEN_SIZE: usize = 10_240;
/// Most listens one GET returns.
pub const MAX_ITEMS_PER_GET: usize = 1000;

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/1/submit-listens", post(submit))
        .route("/1/validate-token", get(validate))
        .route("/1/user/{name}/listens", get(listens))
        .route("/1/user/{name}/playing-now", get(playing_now))
        .route("/1/user/{name}/listen-count", get(listen_count))
        .route("/1/stats/user/{name}/{stat}", get(stats::user_stat))
        .route("/1/feedback/recording-feedback", post(feedback::submit))
        .route("/1/feedback/user/{name}/get-feedback", get(feedback::get))
        .route(
            "/1/feedback/user/{name}/get-feedback-for-recordings",
            get(feedback::for_recordings),
        )
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

fn error(status: StatusCode, msg: &str, rate: &RateInfo) -> Response {
    reply(
        status,
        json!({ "code": status.as_u16(), "error": msg }),
        rate,
    )
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
/// wait, whose token is not checked ([`refused`] answers it).
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

/// A guard's refusal: 429 with `Retry-After`.
fn refused(d: Denied, rate: &RateInfo) -> Response {
    http_refusal(d, "", |status, msg| error(status, msg, rate))
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

/// The checks of every read of `name`'s history: the rate limit, then
/// [`may_read`]; the refusal as the answer to send.
#[allow(
    clippy::result_large_err,
    reason = "the refusal is the answer, sent at once by the caller"
)]
fn history_read(st: &AppState, req: &Request, name: &str) -> Result<RateInfo, Response> {
    let rate = rate_of(st, req);
    if !rate.allowed {
        return Err(error(StatusCode::TOO_MANY_REQUESTS, TOO_MANY, &rate));
    }
    if !may_read(st, req, name) {
        return Err(error(StatusCode::UNAUTHORIZED, PRIVATE, &rate));
    }
    Ok(rate)
}

async fn validate(State(st): State<AppState>, req: Request) -> Response {
    let rate = rate_of(&st, &req);
    if !rate.allowed {
        return error(StatusCode::TOO_MANY_REQUESTS, TOO_MANY, &rate);
    }
    let q = Params::parse(req.uri().query(), b"");
    let Some(tok) = header_token(req.headers()).or_else(|| q.get("token").map(str::to_owned))
    else {
        return error(
            StatusCode::BAD_REQUEST,
            "You need to provide an Authorization token.",
            &rate,
        );
    };
    match token_owner(&st, &req, &tok) {
        Err(d) => refused(d, &rate),
        Ok(Some(user)) => reply(
            StatusCode::OK,
            json!({"code": 200, "message": "Token valid.", "valid": true, "user_name": user}),
            &rate,
        ),
        Ok(None) => reply(
            StatusCode::OK,
            json!({"code": 200, "message": "Token invalid.", "valid": false}),
            &rate,
        ),
    }
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

/// A token-authenticated JSON POST: the rate limit, the token (checked
/// before the body is read, so a client without one is answered before
/// it has sent its body), the body within `[limits] max_body`, and
/// its JSON (parsed whatever the Content-Type says: liblistenbrainz sends
/// none). Either the user, the document and the rate, or the answer.
pub(super) async fn authed_json(
    st: &AppState,
    req: Request,
) -> Result<(String, Value, RateInfo), Response> {
    let rate = rate_of(st, &req);
    if !rate.allowed {
        return Err(error(StatusCode::TOO_MANY_REQUESTS, TOO_MANY, &rate));
    }
    let owner = match header_token(req.headers()) {
        Some(t) => token_owner(st, &req, &t),
        None => Ok(None),
    };
    let user = match owner {
        Ok(Some(user)) => user,
        Ok(None) => {
            return Err(error(
                StatusCode::UNAUTHORIZED,
                "You need to provide a valid Authorization header.",
                &rate,
            ))
        }
        Err(d) => return Err(refused(d, &rate)),
    };
    let limit = st.config.max_body;
    let body = match crate::body::read_body(req.into_body(), limit, &st.bodies).await {
        Ok(b) => b,
        Err(e) => return Err(e.decorate(error(e.status(), &e.to_string(), &rate))),
    };
    match serde_json::from_slice(&body) {
        Ok(doc) => Ok((user, doc, rate)),
        Err(e) => Err(error(
            StatusCode::BAD_REQUEST,
            &format!("Cannot parse JSON document: {e}"),
            &rate,
        )),
    }
}

async fn submit(State(st): State<AppState>, req: Request) -> Response {
    let (user, doc, rate) = match authed_json(&st, req).await {
        Ok(v) => v,
        Err(answer) => return answer,
    };
    let listen_type = doc.get("listen_type").and_then(Value::as_str).unwrap_or("");
    if !matches!(listen_type, "single" | "playing_now" | "import") {
        return error(
            StatusCode::BAD_REQUEST,
            "JSON document must have listen_type single, playing_now or import.",
            &rate,
        );
    }
    let Some(payload) = doc.get("payload").and_then(Value::as_array) else {
        return error(
            StatusCode::BAD_REQUEST,
            "JSON document must contain a payload list.",
            &rate,
        );
    };
    if payload.is_empty() {
        return error(
            StatusCode::BAD_REQUEST,
            "JSON document has an empty payload.",
            &rate,
        );
    }
    if listen_type != "import" && payload.len() != 1 {
        return error(
            StatusCode::BAD_REQUEST,
            &format!("JSON document of type {listen_type} must contain exactly one listen."),
            &rate,
        );
    }
    if payload.len() > MAX_LISTENS_PER_REQUEST {
        return error(
            StatusCode::BAD_REQUEST,
            &format!("Too many listens: at most {MAX_LISTENS_PER_REQUEST} per request."),
            &rate,
        );
    }
    let mut listens = Vec::with_capacity(payload.len());
    for (i, v) in payload.iter().enumerate() {
        let l = match parse_listen(v, &user, listen_type) {
            Ok(l) => l,
            Err(m) => return error(StatusCode::BAD_REQUEST, &format!("listen {i}: {m}"), &rate),
        };
        if let Err(ig) = scrobble::check(&st, &l, listen_type != "playing_now") {
            let msg = match ig {
                scrobble::Ignored::TooOld => format!(
                    "listen {i}: listened_at is before the earliest accepted time ({})",
                    st.config.min_timestamp
                ),
                scrobble::Ignored::TooNew => {
                    format!("listen {i}: listened_at is too far in the future")
                }
                scrobble::Ignored::TooLong { .. } => format!("listen {i}: {}", ig.message()),
                _ => format!("listen {i}: a field is empty or holds a NUL byte"),
            };
            return error(StatusCode::BAD_REQUEST, &msg, &rate);
        }
        listens.push(l);
    }
    if listen_type == "playing_now" {
        if let Some(mut l) = listens.pop() {
            l.timestamp = st.now();
            st.set_now_playing(l);
        }
    } else if let Err(e) = scrobble::store(&st, listens).await {
        if e.is_refusal() {
            return error(StatusCode::BAD_REQUEST, &e.to_string(), &rate);
        }
        return error(
            StatusCode::SERVICE_UNAVAILABLE,
            &format!("Could not store the listens, retry: {e}"),
            &rate,
        );
    }
    reply(StatusCode::OK, json!({"status": "ok"}), &rate)
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

async fn listens(State(st): State<AppState>, Path(name): Path<String>, req: Request) -> Response {
    let rate = match history_read(&st, &req, &name) {
        Ok(rate) => rate,
        Err(refused) => return refused,
    };
    let q = Params::parse(req.uri().query(), b"");
    let num = |k: &str| q.get(k).map(|v| v.parse::<i64>());
    let (max_ts, min_ts, count) = match (num("max_ts"), num("min_ts"), num("count")) {
        (Some(Err(_)), _, _) | (_, Some(Err(_)), _) | (_, _, Some(Err(_))) => {
            return error(
                StatusCode::BAD_REQUEST,
                "max_ts, min_ts and count must be integers.",
                &rate,
            )
        }
        (a, b, c) => (
            a.and_then(Result::ok),
            b.and_then(Result::ok),
            c.and_then(Result::ok),
        ),
    };
    if max_ts.is_some() && min_ts.is_some() {
        return error(
            StatusCode::BAD_REQUEST,
            "You may only specify max_ts or min_ts, not both.",
            &rate,
        );
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
    reply(
        StatusCode::OK,
        json!({"payload": {
            "count": listens.len(),
            "user_id": name,
            "latest_listen_ts": latest,
            "oldest_listen_ts": st.listens.summary(&name).first_listen.unwrap_or(0),
            "listens": listens,
        }}),
        &rate,
    )
}

async fn playing_now(
    State(st): State<AppState>,
    Path(name): Path<String>,
    req: Request,
) -> Response {
    let rate = match history_read(&st, &req, &name) {
        Ok(rate) => rate,
        Err(refused) => return refused,
    };
    let np: Vec<Value> = st
        .now_playing(&name)
        .iter()
        .map(|l| listen_json(l, true))
        .collect();
    reply(
        StatusCode::OK,
        json!({"payload": {
            "count": np.len(),
            "user_id": name,
            "playing_now": !np.is_empty(),
            "listens": np,
        }}),
        &rate,
    )
}

/// `GET /1/user/NAME/listen-count`: `{"payload": {"count": N}}`, every
/// listen of the user's history; read as their listens are.
async fn listen_count(
    State(st): State<AppState>,
    Path(name): Path<String>,
    req: Request,
) -> Response {
    let rate = match history_read(&st, &req, &name) {
        Ok(rate) => rate,
        Err(refused) => return refused,
    };
    let count = st.listens.summary(&name).playcount;
    reply(StatusCode::OK, json!({"payload": {"count": count}}), &rate)
}
