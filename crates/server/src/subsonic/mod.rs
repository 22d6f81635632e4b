//! The Subsonic API (v1.16.1) with OpenSubsonic extensions at
//! `/rest/METHOD` (and `/rest/METHOD.view`), GET or form POST, answering
//! XML or, with `f=json`, JSON.
//!
//! Every method needs a user (`u`+`p`, `u`+`t`+`s`, or `apiKey`; see
//! [`auth`]) except `getOpenSubsonicExtensions`. Songs are library entries
//! with a file under a music folder; albums and artists are derived (see
//! [`crate::catalog`]). `stream` and `download` send the file as it is
//! (transcoded by [`crate::transcode`] when asked) through
//! [`crate::stream`]; neither counts a play: only `scrobble` does, into
//! the listening history every API shares.

pub(crate) mod access;
mod admin;
pub mod auth;
mod browse;
mod chat;
mod cover;
mod error;
mod file_playlists;
mod folders;
mod info;
mod lists;
mod lyrics;
mod media;
pub mod methods;
mod misc;
#[cfg(test)]
mod play_counts;
mod podcast;
mod privacy;
mod queue;
mod radio;
pub mod rating;
pub mod response;
pub(crate) mod scan;
mod shares;
#[cfg(test)]
pub(crate) mod testkit;
mod user;
mod views;

use std::sync::Arc;
use std::time::Instant;

use axum::extract::{Path, Request, State};
use axum::http::Method;
use axum::response::Response;
use axum::routing::get;
use axum::Router;

use crate::catalog::Catalog;
use crate::params::Params;
use crate::state::AppState;
pub(crate) use error::SubsonicError;
use methods::{Grant, Run};
use response::{Format, Node};

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/rest/{method}", get(handle).post(handle))
        .route(info::IMAGE_ROUTE, get(info::signed_image))
}

/// What the Subsonic adapter keeps for itself: one field of
/// [`crate::state::StateParts`], which the core never names.
#[derive(Default)]
pub(crate) struct SubsonicState {
    /// The lists' orders, search text and folder tree, per catalog.
    pub views: views::ViewCache,
    /// The rescan `startScan` runs, and its count; stopped and joined in
    /// [`AppState::stop_background`].
    pub scans: scan::Scans,
    /// The chat room of `addChatMessage`, in memory only.
    pub chat: chat::Chat,
}

/// What every handler gets.
pub(crate) struct Ctx {
    pub state: AppState,
    /// The method's name, as its row of [`methods::TABLE`] spells it.
    pub method: &'static str,
    pub user: String,
    pub p: Params,
    /// The request's Host header, for URLs back to this server.
    pub host: Option<String>,
    cat: Option<Arc<Catalog>>,
}

impl Ctx {
    /// The catalog (built on first use; call on a blocking thread).
    pub fn cat(&mut self) -> Arc<Catalog> {
        if let Some(c) = &self.cat {
            return c.clone();
        }
        let c = self.state.music.catalog(&self.state.db);
        self.cat = Some(c.clone());
        c
    }

    pub fn req(&self, name: &'static str) -> Result<&str, SubsonicError> {
        self.p.nonempty(name).ok_or(SubsonicError::Missing(name))
    }

    /// Every value of a repeated parameter.
    pub fn all(&self, name: &str) -> Vec<&str> {
        self.p
            .0
            .iter()
            .filter(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
            .collect()
    }

    /// An integer parameter; error 0 when it is not one.
    pub fn int(&self, name: &str) -> Result<Option<i64>, SubsonicError> {
        match self.p.nonempty(name) {
            None => Ok(None),
            Some(v) => v.parse().map(Some).map_err(|_| {
                SubsonicError::BadValue(format!("Parameter {name} is not an integer: {v:?}"))
            }),
        }
    }

    /// A boolean parameter, the one reading of every boolean of the API
    /// ([`parse_flag`]): `None` when absent or empty, error 0 for a
    /// value that is not a boolean (never a guess).
    pub fn flag(&self, name: &str) -> Result<Option<bool>, SubsonicError> {
        match self.p.nonempty(name) {
            None => Ok(None),
            Some(v) => parse_flag(v).map(Some).ok_or_else(|| {
                SubsonicError::BadValue(format!(
                    "Parameter {name} must be true or false, not {v:?}"
                ))
            }),
        }
    }

    pub fn now(&self) -> i64 {
        self.state.now()
    }
}

/// A Subsonic boolean as clients send it: `true`/`false` in any case
/// (Python's `True`), `1`/`0`, `yes`/`no`; anything else is `None`.
pub(crate) fn parse_flag(v: &str) -> Option<bool> {
    let v = v.trim();
    let is = |w: &str| v.eq_ignore_ascii_case(w);
    if is("true") || is("1") || is("yes") {
        Some(true)
    } else if is("false") || is("0") || is("no") {
        Some(false)
    } else {
        None
    }
}

/// What a synchronous method answers: its element (`None`: an empty
/// `ok`), or why it failed.
type SyncResult = Result<Option<Node>, SubsonicError>;

/// Where a request stands after authentication and the folder gate.
enum Next {
    /// Answered: this element (or an empty `ok`).
    Done(Option<Node>),
    /// To be run on the executor (it answers a stream or a picture).
    Async(methods::Async, Ctx),
}

async fn handle(
    State(state): State<AppState>,
    Path(method): Path<String>,
    req: Request,
) -> Response {
    let started = Instant::now();
    let resp = answer(&state, method, req).await;
    let failed = !resp.status().is_success();
    state.metrics.request(started.elapsed(), failed);
    resp
}

/// The answer to `/rest/METHOD`.
async fn answer(state: &AppState, method: String, req: Request) -> Response {
    let (parts, body) = req.into_parts();
    let ip = crate::auth_guard::client_ip(&parts.extensions);
    // A POST with its credentials in the query string is authenticated
    // before its body is read; one with them in the body (OpenSubsonic
    // formPost) may send only a small body before it is authenticated
    // (crate::body::SUBSONIC_PRE_AUTH_MAX_BODY).
    let mut early_user = None;
    let body = if parts.method == Method::POST {
        let query = Params::parse(parts.uri.query(), b"");
        let fmt = Format::from_params(query.get("f"), query.get("callback"));
        let limit = if has_credentials(&query) {
            match auth::authenticate(&query, state, ip).await {
                Ok(user) => early_user = Some(user),
                Err(e) => return e.render(&fmt),
            }
            crate::body::SUBSONIC_MAX_BODY
        } else {
            crate::body::SUBSONIC_PRE_AUTH_MAX_BODY
        };
        match crate::body::read_body(body, limit, &state.bodies).await {
            Ok(b) => b,
            Err(e) => return SubsonicError::from(e).render(&fmt),
        }
    } else {
        crate::body::BodyBytes::empty()
    };
    let p = Params::parse(parts.uri.query(), &body);
    let fmt = Format::from_params(p.get("f"), p.get("callback"));
    let method = method.strip_suffix(".view").unwrap_or(&method).to_owned();
    let head = parts.method == Method::HEAD;

    // An unknown method is answered so after authentication, as before.
    let m = methods::find(&method);
    if let Some(Run::Open(answer)) = m.map(|m| m.run) {
        return response::ok(Some(answer()), &fmt);
    }
    // Authentication here (throttled; an Argon2 run waits on the hashing
    // pool), then the method on the blocking pool: the store is
    // synchronous. A stream authenticated by apiKey or salted token skips
    // that hop (it was a saving when the check ran there too).
    let quick = matches!(
        m.map(|m| m.run),
        Some(Run::Async(methods::Async::Stream { .. }))
    ) && (p.get("apiKey").is_some()
        || (p.nonempty("t").is_some() && p.nonempty("s").is_some()));
    let authed = match early_user {
        Some(u) => Ok(u),
        // Logged in by a trusted single-sign-on proxy (crate::proxy).
        None => match crate::proxy::proxy_user(state, &parts.headers) {
            Some(u) => Ok(u),
            None => auth::authenticate(&p, state, ip).await,
        },
    };
    let host = parts
        .headers
        .get(axum::http::header::HOST)
        .and_then(|h| h.to_str().ok())
        .map(str::to_owned);
    // A user granted some music folders only is checked against the
    // catalog first (access::gate), which may need building: never on
    // this thread.
    let quick = quick
        && authed.as_ref().is_ok_and(|u| {
            state.accounts.folders_of(u).is_none() || state.music.recent_catalog().is_some()
        });
    let st = state.clone();
    let run = move || -> Result<Next, SubsonicError> {
        let user = authed?;
        let m = m.ok_or(SubsonicError::UnknownMethod(method))?;
        let mut ctx = Ctx {
            state: st,
            method: m.name,
            user,
            p,
            host,
            cat: None,
        };
        if let Grant::Gate(ids) = m.grant {
            access::gate(&mut ctx, ids)?;
        }
        match m.run {
            Run::Open(answer) => Ok(Next::Done(Some(answer()))),
            Run::Sync(f) => f(&mut ctx).map(Next::Done),
            Run::Async(a) => Ok(Next::Async(a, ctx)),
        }
    };
    let next = if quick {
        run()
    } else {
        spindle_app::offload::run(run)
            .await
            .unwrap_or_else(|e| Err(e.into()))
    };
    let answered = match next {
        Ok(Next::Done(body)) => return response::ok(body, &fmt),
        Ok(Next::Async(a, ctx)) => a.run(ctx, &parts.headers, head).await,
        Err(e) => Err(e),
    };
    answered.unwrap_or_else(|e| e.render(&fmt))
}

/// Whether `p` holds a whole set of credentials (`u`+`p`, `u`+`t`+`s` or
/// `apiKey`), so the request can be authenticated from it alone.
fn has_credentials(p: &Params) -> bool {
    p.get("apiKey").is_some()
        || (p.get("u").is_some()
            && (p.nonempty("p").is_some()
                || (p.nonempty("t").is_some() && p.nonempty("s").is_some())))
}

#[cfg(test)]
mod tests {
    use super::*;
    use testkit::Kit;

    /// The code and message of a failed answer.
    fn failure(r: &serde_json::Value) -> (i64, &str) {
        assert_eq!(r["status"], "failed", "{r}");
        let e = &r["error"];
        (e["code"].as_i64().unwrap(), e["message"].as_str().unwrap())
    }

    #[tokio::test]
    async fn each_failure_answers_its_code_and_message_through_the_dispatcher() {
        let k = Kit::new();
        /// A method, its parameters, and the code and message it fails with.
        type Case = (
            &'static str,
            &'static [(&'static str, &'static str)],
            i64,
            &'static str,
        );
        let cases: [Case; 6] = [
            ("noSuchMethod", &[], 0, "Unknown method: noSuchMethod"),
            ("getSong", &[], 10, "Required parameter is missing: id"),
            ("getSong", &[("id", "999999")], 70, "Song not found"),
            (
                "getAlbumList2",
                &[("type", "newest"), ("size", "ten")],
                0,
                "Parameter size is not an integer: \"ten\"",
            ),
            (
                "getUsers",
                &[],
                50,
                "Only an administrator may list the users",
            ),
            // Gated by the table before the method runs.
            ("stream", &[("id", "999999")], 70, "Song not found"),
        ];
        for (method, params, code, message) in cases {
            let user = if method == "getUsers" { "bob" } else { "ann" };
            let r = k.api(user, method, params).await;
            assert_eq!(failure(&r), (code, message), "{method} {params:?}");
        }
        // Credentials are checked before the method is looked up.
        let (_, _, body) = k.get("/rest/noSuchMethod?u=ann&p=wrong&f=json").await;
        let v: serde_json::Value = serde_json::from_slice(&body).unwrap();
        let r = &v["subsonic-response"];
        assert_eq!(failure(r), (40, "Wrong username or password"));
        let (_, _, body) = k.get("/rest/ping?u=ann&f=json").await;
        let v: serde_json::Value = serde_json::from_slice(&body).unwrap();
        let r = &v["subsonic-response"];
        assert_eq!(
            failure(r),
            (10, "Required parameter is missing: p, or t and s")
        );
    }

    #[test]
    fn a_boolean_is_read_in_any_case_and_as_1_0_yes_no_and_nothing_else_is_guessed() {
        for t in ["true", "True", "TRUE", "1", "yes", "Yes", " true "] {
            assert_eq!(parse_flag(t), Some(true), "{t:?}");
        }
        for f in ["false", "False", "FALSE", "0", "no", "NO"] {
            assert_eq!(parse_flag(f), Some(false), "{f:?}");
        }
        for bad in ["", "t", "f", "on", "off", "2", "falsey", "nope"] {
            assert_eq!(parse_flag(bad), None, "{bad:?}");
        }
    }
}
