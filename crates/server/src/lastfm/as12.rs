//! Audioscrobbler 1.2 / 1.2.1 for older clients: the handshake at
//! `/?hs=true&p=1.2[.1]&c&v&u&t&a` (a = md5(md5(password) + t), or the
//! 1.2.1 form with `api_key` and `sk`), then `/as12/nowplaying` and
//! `/as12/submissions` with `s=<session id>`. Answers are plain text:
//! `OK`, `BADAUTH`, `BADTIME`, `BADSESSION`, `FAILED <reason>`.

use axum::extract::{Request, State};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use spindle_listens::Listen;

use crate::accounts::{md5_hex, random_hex};
use crate::auth_guard::Denied;
use crate::body::BodyError;
use crate::params::Params;
use crate::scrobble;
use crate::state::AppState;

/// How far the client's clock may be off, seconds.
pub const MAX_SKEW: i64 = 3600;

/// A session id ends after this long without a submission or now-playing
/// report: 24 hours. Players hand-shake again when told `BADSESSION`, so
/// a short life costs them one request, and an abandoned id is not kept.
pub const SESSION_IDLE: i64 = 24 * 3600;

/// Most live session ids per user: 16, one per player with room to
/// spare; a new handshake past it ends that user's oldest session. With
/// only authenticated users holding sessions, the table stays under 16 ×
/// the number of accounts, however often clients hand-shake.
pub const MAX_SESSIONS_PER_USER: usize = 16;

/// The live session ids (see [`SESSION_IDLE`], [`MAX_SESSIONS_PER_USER`]).
pub(crate) type Sessions = crate::expiry::IdleSessions<SESSION_IDLE, MAX_SESSIONS_PER_USER>;

/// A 1.2 failure, as the protocol's plain-text answer (status 200, but
/// for a body that could not be read).
#[derive(Debug)]
pub(crate) enum As12Error {
    /// `BADAUTH`: wrong credentials; players ask the user again.
    BadAuth,
    /// `BADTIME`: the client's clock is off by more than [`MAX_SKEW`].
    BadTime,
    /// `BADSESSION`: no such session (or it ended); players hand-shake
    /// again.
    BadSession,
    /// `FAILED <reason>`: players retry later.
    Failed(String),
    /// A body that could not be read: `FAILED <why>`, with the body's
    /// status (413, 408, …).
    Body(BodyError),
}

impl IntoResponse for As12Error {
    fn into_response(self) -> Response {
        match self {
            As12Error::BadAuth => text("BADAUTH\n".into()),
            As12Error::BadTime => text("BADTIME\n".into()),
            As12Error::BadSession => text("BADSESSION\n".into()),
            As12Error::Failed(why) => text(format!("FAILED {why}\n")),
            As12Error::Body(e) => e.decorate(text(format!("FAILED {e}\n"))),
        }
    }
}

/// A login the guard refused. A wait is a `FAILED`, which players retry
/// later, not a `BADAUTH`, which makes them drop credentials that may be
/// right.
impl From<Denied> for As12Error {
    fn from(d: Denied) -> As12Error {
        match d {
            Denied::Wrong => As12Error::BadAuth,
            Denied::Wait { retry_after } => As12Error::Failed(format!(
                "too many failed logins; try again in {retry_after} s"
            )),
            Denied::Busy => As12Error::Failed("the server is busy; try again later".into()),
        }
    }
}

impl From<BodyError> for As12Error {
    fn from(e: BodyError) -> As12Error {
        As12Error::Body(e)
    }
}

fn failed(why: &str) -> As12Error {
    As12Error::Failed(why.to_owned())
}

fn text(s: String) -> Response {
    (
        StatusCode::OK,
        [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
        s,
    )
        .into_response()
}

/// `GET /?hs=true&…`: a new session id and the URLs to use it at.
pub(super) async fn handshake(
    State(st): State<AppState>,
    req: Request,
) -> Result<Response, As12Error> {
    let p = Params::parse(req.uri().query(), b"");
    if p.get("hs") != Some("true") {
        return Ok((StatusCode::NOT_FOUND, "Spindle: nothing here yet").into_response());
    }
    let base = st.config.public_url.clone().unwrap_or_else(|| {
        let host = req
            .headers()
            .get(header::HOST)
            .and_then(|h| h.to_str().ok())
            .unwrap_or("127.0.0.1");
        format!("http://{host}")
    });
    let (Some(user), Some(t)) = (p.nonempty("u"), p.nonempty("t")) else {
        return Err(failed("missing u or t"));
    };
    let ts = t
        .parse::<i64>()
        .map_err(|_| failed("t is not a timestamp"))?;
    // abs_diff: any i64 the client sends, without overflow.
    if ts.abs_diff(st.now()) > MAX_SKEW.unsigned_abs() {
        return Err(As12Error::BadTime);
    }
    let ok = || match (p.get("a"), p.get("sk"), p.get("api_key")) {
        (Some(a), Some(sk), Some(key)) => {
            // 1.2.1 web-service auth: a = md5(secret + t), with a session
            // key issued under the same API key.
            st.accounts
                .session(sk)
                .is_some_and(|s| s.user == user && s.api_key == key)
                && st.accounts.api_secret(key).is_some_and(|sec| {
                    md5_hex(format!("{sec}{t}").as_bytes()) == a.to_ascii_lowercase()
                })
        }
        (Some(a), _, _) => st.accounts.password(user).is_some_and(|pw| {
            md5_hex(format!("{}{t}", md5_hex(pw.as_bytes())).as_bytes()) == a.to_ascii_lowercase()
        }),
        _ => false,
    };
    // Throttled: a client that must wait is refused before `ok` runs.
    let ip = crate::auth_guard::client_ip(req.extensions());
    st.guard
        .check(ip, Some(user), "as12", || ok().then_some(()))?;
    let sid = random_hex();
    st.lastfm.add_session(sid.clone(), user, st.now());
    Ok(text(format!(
        "OK\n{sid}\n{base}/as12/nowplaying\n{base}/as12/submissions\n"
    )))
}

/// The form of a request with a session id, and the session's user.
async fn form(st: &AppState, req: Request) -> Result<(Params, String), As12Error> {
    let query = req.uri().query().map(str::to_owned);
    // The session id is in the body: its size, deadline and the body
    // budget are what bound a client without one (crate::body).
    let limit = crate::body::SCROBBLE_FORM_MAX;
    let body = crate::body::read_body(req.into_body(), limit, &st.bodies).await?;
    let p = Params::parse(query.as_deref(), &body);
    let user = p
        .get("s")
        .and_then(|s| st.lastfm.session_user(s, st.now()))
        .ok_or(As12Error::BadSession)?;
    Ok((p, user))
}

fn listen(p: &Params, user: &str, i: Option<usize>) -> Option<Listen> {
    let key = |k: &str| match i {
        Some(i) => format!("{k}[{i}]"),
        None => k.to_owned(),
    };
    let get = |k: &str| p.get(&key(k)).map(str::to_owned);
    let mut l = Listen::new(user, 0, &get("a")?, &get("t")?);
    l.album = get("b").unwrap_or_default();
    l.mbid = get("m").unwrap_or_default();
    l.duration = get("l").and_then(|v| v.parse().ok());
    l.track_number = get("n").and_then(|v| v.parse().ok());
    l.client = "as12".into();
    if i.is_some() {
        l.timestamp = get("i")?.parse().ok()?;
    }
    Some(l)
}

/// `POST /as12/nowplaying`.
pub(super) async fn now_playing(
    State(st): State<AppState>,
    req: Request,
) -> Result<Response, As12Error> {
    let (p, user) = form(&st, req).await?;
    let mut l = listen(&p, &user, None)
        .filter(|l| scrobble::check(&st, l, false).is_ok())
        .ok_or_else(|| failed("missing or bad a or t"))?;
    l.timestamp = st.now();
    st.set_now_playing(l);
    Ok(text("OK\n".into()))
}

/// `POST /as12/submissions`: up to 50 listens.
pub(super) async fn submissions(
    State(st): State<AppState>,
    req: Request,
) -> Result<Response, As12Error> {
    let (p, user) = form(&st, req).await?;
    let mut good = Vec::new();
    for i in 0..50 {
        if p.get(&format!("a[{i}]")).is_none() {
            break;
        }
        // Like Last.fm's 1.2 server: a bad entry is dropped, the rest kept.
        if let Some(l) = listen(&p, &user, Some(i)) {
            if scrobble::check(&st, &l, true).is_ok() {
                good.push(l);
            }
        }
    }
    if p.get("a[50]").is_some() {
        return Err(failed("at most 50 submissions per request"));
    }
    scrobble::store(&st, good)
        .await
        .map_err(|e| As12Error::Failed(e.to_string()))?;
    Ok(text("OK\n".into()))
}
