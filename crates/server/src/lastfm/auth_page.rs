//! The desktop-auth approval page at `/api/auth/?api_key=…&token=…`: a
//! user logs in and grants the application access, after which
//! `auth.getSession` hands out a session key. A plain form for now (the
//! web UI will restyle it).

use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::response::{Html, IntoResponse, Redirect, Response};

use crate::auth_guard::{http_refusal, Denied};
use crate::params::Params;
use crate::state::AppState;
use crate::xml::escape;

fn form(api_key: &str, token: &str, cb: &str, note: &str) -> String {
    format!(
        "<!doctype html><html><head><meta charset=\"utf-8\"><title>Spindle: grant access</title></head>\
<body><h1>Grant access to your Spindle account</h1><p>{}</p>\
<form method=\"post\" action=\"/api/auth/\">\
<input type=\"hidden\" name=\"api_key\" value=\"{}\"><input type=\"hidden\" name=\"token\" value=\"{}\">\
<input type=\"hidden\" name=\"cb\" value=\"{}\">\
<label>User <input name=\"username\" autocomplete=\"username\"></label> \
<label>Password <input name=\"password\" type=\"password\" autocomplete=\"current-password\"></label> \
<button type=\"submit\">Log in and allow access</button></form></body></html>",
        escape(note),
        escape(api_key),
        escape(token),
        escape(cb)
    )
}

pub(super) async fn page(State(st): State<AppState>, req: Request) -> Response {
    let p = Params::parse(req.uri().query(), b"");
    let (key, token) = (p.get("api_key").unwrap_or(""), p.get("token").unwrap_or(""));
    if !st.lastfm.pending(key, token, st.now()) {
        return (
            StatusCode::BAD_REQUEST,
            Html(
                "<!doctype html><p>This authorisation link is invalid or has expired.</p>"
                    .to_owned(),
            ),
        )
            .into_response();
    }
    let cb = p.get("cb").unwrap_or("");
    Html(form(
        key,
        token,
        cb,
        "An application asks to scrobble to your account.",
    ))
    .into_response()
}

pub(super) async fn grant(State(st): State<AppState>, req: Request) -> Response {
    let ip = crate::auth_guard::client_ip(req.extensions());
    let query = req.uri().query().map(str::to_owned);
    let body = match crate::body::read_body(req.into_body(), 64 * 1024, &st.bodies).await {
        Ok(b) => b,
        Err(e) => return e.decorate(e.to_string().into_response()),
    };
    let p = Params::parse(query.as_deref(), &body);
    let get = |n: &str| p.get(n).unwrap_or("").to_owned();
    let (key, token, user, pw, cb) = (
        get("api_key"),
        get("token"),
        get("username"),
        get("password"),
        get("cb"),
    );
    let invalid = || {
        (
            StatusCode::BAD_REQUEST,
            Html(
                "<!doctype html><p>This authorisation link is invalid or has expired.</p>"
                    .to_owned(),
            ),
        )
            .into_response()
    };
    // A password is checked only for a link that can still be approved.
    if !st.lastfm.pending(&key, &token, st.now()) {
        return invalid();
    }
    let checked = st
        .guard
        .password(&st.accounts, ip, &user, &pw, "lastfm-auth-page")
        .await;
    match checked {
        Ok(()) => {}
        Err(Denied::Wrong) => {
            return (
                StatusCode::FORBIDDEN,
                Html(form(&key, &token, &cb, "Wrong user name or password.")),
            )
                .into_response()
        }
        Err(denied) => {
            return http_refusal(denied, "", |status, msg| {
                let mut note = format!("{msg}.");
                if let Some(first) = note.get_mut(..1) {
                    first.make_ascii_uppercase();
                }
                (status, Html(form(&key, &token, &cb, &note))).into_response()
            })
        }
    }
    if !st.lastfm.approve(&key, &token, &user, st.now()) {
        return invalid();
    }
    if cb.starts_with("http://") || cb.starts_with("https://") {
        let sep = if cb.contains('?') { '&' } else { '?' };
        return Redirect::to(&format!("{cb}{sep}token={token}")).into_response();
    }
    Html(format!(
        "<!doctype html><p>Access granted for {}. You can close this page and return to the application.</p>",
        escape(&user)
    ))
    .into_response()
}
