//! Every ListenBrainz endpoint this server answers, one row each: its
//! HTTP method, its path (axum's pattern, `{name}` one segment), how a
//! cluster serves it, and its auth rule with the handler that runs under
//! it. The router ([`router`]: one route per row, each through
//! `dispatch`) and the cluster's routing of `/1/…`
//! ([`crate::cluster::route::classify`], through [`class_of`]) are read
//! from this table, so adding an endpoint is a row and its handler.

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;

use axum::extract::{FromRequestParts, Path, Request, State};
use axum::http::{Method, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::on;
use axum::Router;

use super::error::LbError;
use super::{feedback, stats, Call, Reply};
use crate::cluster::route::Class::{self, Local, Memory, Write};
use crate::state::AppState;
pub use crate::verb::Verb;
use Auth::{MaybeToken, NoToken, Token};
use Verb::{Get, Post};

/// What a handler answers: a document, or the error to render.
pub(crate) type Answer = Pin<Box<dyn Future<Output = Result<Reply, LbError>> + Send>>;

/// Who may call an endpoint, with the handler that runs once the rule
/// holds. Every answer is rate-limited first ([`dispatch`]).
#[derive(Clone, Copy)]
pub(crate) enum Auth {
    /// The user's token in `Authorization: Token …`, checked before the
    /// handler runs (and so before a body is read); without a valid one,
    /// 401. The handler gets the token's user.
    Token(fn(Call, String) -> Answer),
    /// A read of a user's history: private ones by their owner's token,
    /// public ones by anyone; the handler checks (`super::history_read`)
    /// once its parameters are known, 401 with [`super::PRIVATE`].
    MaybeToken(fn(Call) -> Answer),
    /// No credentials (validate-token judges the token it is given).
    NoToken(fn(Call) -> Answer),
}

/// One endpoint: a row of `TABLE`.
pub struct Endpoint {
    pub verb: Verb,
    /// axum's path pattern: `{x}` is one non-empty segment.
    pub path: &'static str,
    /// How a cluster serves it.
    pub class: Class,
    pub(crate) auth: Auth,
}

const fn row(verb: Verb, path: &'static str, class: Class, auth: Auth) -> Endpoint {
    Endpoint {
        verb,
        path,
        class,
        auth,
    }
}

/// The table. Writes: listens and feedback; memory: playing-now, kept by
/// the primary (a `playing_now` submission is a POST, so a write too).
#[rustfmt::skip]
pub(crate) static TABLE: &[Endpoint] = &[
    row(Post, "/1/submit-listens", Write, Token(|c, user| Box::pin(super::submit(c, user)))),
    row(Get, "/1/validate-token", Local, NoToken(|c| Box::pin(super::validate(c)))),
    row(Get, "/1/user/{name}/listens", Local, MaybeToken(|c| Box::pin(super::listens(c)))),
    row(Get, "/1/user/{name}/playing-now", Memory, MaybeToken(|c| Box::pin(super::playing_now(c)))),
    row(Get, "/1/user/{name}/listen-count", Local, MaybeToken(|c| Box::pin(super::listen_count(c)))),
    row(Get, "/1/stats/user/{name}/{stat}", Local, MaybeToken(|c| Box::pin(stats::user_stat(c)))),
    row(Post, "/1/feedback/recording-feedback", Write, Token(|c, user| Box::pin(feedback::submit(c, user)))),
    row(Get, "/1/feedback/user/{name}/get-feedback", Local, MaybeToken(|c| Box::pin(feedback::get(c)))),
    row(Get, "/1/feedback/user/{name}/get-feedback-for-recordings", Local,
        MaybeToken(|c| Box::pin(feedback::for_recordings(c)))),
];

/// One route per row of `TABLE`.
pub fn router() -> Router<AppState> {
    TABLE.iter().fold(Router::new(), |r, e| {
        r.route(
            e.path,
            on(e.verb.filter(), move |State(st): State<AppState>, req| {
                dispatch(e, st, req)
            }),
        )
    })
}

/// Runs the endpoint `e`: its path parameters (a bad one is axum's own
/// answer, as an extractor's), the rate limit, its auth rule, its
/// handler; the answer, or the error as ListenBrainz's document, carries
/// the `X-RateLimit-*` headers.
async fn dispatch(e: &'static Endpoint, st: AppState, req: Request) -> Response {
    let (mut parts, body) = req.into_parts();
    let params = if e.path.contains('{') {
        match Path::<HashMap<String, String>>::from_request_parts(&mut parts, &st).await {
            Ok(Path(p)) => p,
            Err(rejection) => return rejection.into_response(),
        }
    } else {
        HashMap::new()
    };
    let req = Request::from_parts(parts, body);
    let rate = super::rate_of(&st, &req);
    let answer = if !rate.allowed {
        Err(LbError::new(StatusCode::TOO_MANY_REQUESTS, super::TOO_MANY))
    } else {
        match e.auth {
            Token(run) => match super::token_user(&st, &req) {
                Ok(user) => run(Call { st, req, params }, user).await,
                Err(refused) => Err(refused),
            },
            MaybeToken(run) | NoToken(run) => run(Call { st, req, params }).await,
        }
    };
    match answer {
        Ok(reply) => reply.render(&rate),
        Err(e) => e.render(&rate),
    }
}

/// The row for a request, if any: its method and its path (without the
/// base path).
pub fn find(method: &Method, path: &str) -> Option<&'static Endpoint> {
    TABLE
        .iter()
        .find(|e| e.verb.allows(method) && matches(e.path, path))
}

/// Whether `path` is one of `pattern`'s.
fn matches(pattern: &str, path: &str) -> bool {
    let (mut want, mut got) = (pattern.split('/'), path.split('/'));
    loop {
        match (want.next(), got.next()) {
            (None, None) => return true,
            (Some(w), Some(g)) if w.starts_with('{') && !g.is_empty() => {}
            (Some(w), Some(g)) if w == g => {}
            _ => return false,
        }
    }
}

/// How a cluster serves a request under `/1/`: its row's class; one no
/// row has (an unknown path, or a method the path does not take, which
/// is answered 404 or 405) by its method, as before the table: any but
/// GET and HEAD goes to the primary, and so does a read of a
/// `…/playing-now`.
pub fn class_of(method: &Method, path: &str) -> Class {
    if let Some(e) = find(method, path) {
        return e.class;
    }
    if !Get.allows(method) {
        Write
    } else if path.ends_with("/playing-now") {
        Memory
    } else {
        Local
    }
}

#[cfg(test)]
mod tests {
    use axum::body::Body;
    use axum::http::header;
    use tower::ServiceExt;

    use super::*;

    /// The row's path with every parameter filled in.
    fn concrete(e: &Endpoint, name: &str) -> String {
        e.path.replace("{name}", name).replace("{stat}", "artists")
    }

    fn method(v: Verb) -> Method {
        match v {
            Get => Method::GET,
            Post => Method::POST,
        }
    }

    #[test]
    fn each_endpoint_has_the_class_it_had_before_the_table() {
        let want: &[(Verb, &str, Class)] = &[
            (Post, "/1/submit-listens", Write),
            (Get, "/1/validate-token", Local),
            (Get, "/1/user/{name}/listens", Local),
            (Get, "/1/user/{name}/playing-now", Memory),
            (Get, "/1/user/{name}/listen-count", Local),
            (Get, "/1/stats/user/{name}/{stat}", Local),
            (Post, "/1/feedback/recording-feedback", Write),
            (Get, "/1/feedback/user/{name}/get-feedback", Local),
            (
                Get,
                "/1/feedback/user/{name}/get-feedback-for-recordings",
                Local,
            ),
        ];
        let rows: Vec<(Verb, &str, Class)> =
            TABLE.iter().map(|e| (e.verb, e.path, e.class)).collect();
        assert_eq!(rows, want);
        for e in TABLE {
            let path = concrete(e, "a");
            assert!(find(&method(e.verb), &path).is_some_and(|f| std::ptr::eq(f, e)));
            assert_eq!(class_of(&method(e.verb), &path), e.class, "{path}");
            assert_eq!(
                crate::cluster::route::classify(&method(e.verb), &path, None),
                e.class,
                "{path}"
            );
        }
        assert_eq!(class_of(&Method::HEAD, "/1/user/a/playing-now"), Memory);
    }

    #[test]
    fn a_request_no_row_has_is_classed_by_its_method_as_before() {
        let cases: &[(Method, &str, Class)] = &[
            (Method::POST, "/1/nope", Write),
            (Method::GET, "/1/nope", Local),
            (Method::GET, "/1/user/a/b/playing-now", Memory),
            (Method::GET, "/1/user//listens", Local),
            (Method::GET, "/1/submit-listens", Local),
            (Method::POST, "/1/user/a/listens", Write),
            (Method::OPTIONS, "/1/validate-token", Write),
            (Method::GET, "/1/validate-token/", Local),
        ];
        for (m, path, class) in cases {
            assert!(find(m, path).is_none(), "{m} {path}");
            assert_eq!(class_of(m, path), *class, "{m} {path}");
        }
    }

    async fn send(app: &Router, m: Method, uri: &str) -> Response {
        let req = axum::http::Request::builder()
            .method(m)
            .uri(uri)
            .body(Body::from("{}"))
            .unwrap();
        app.clone().oneshot(req).await.unwrap()
    }

    async fn text(r: Response) -> String {
        let body = axum::body::to_bytes(r.into_body(), 1 << 20).await.unwrap();
        String::from_utf8(body.to_vec()).unwrap()
    }

    /// A table's answer carries the rate headers; axum's 404 and 405 do not.
    fn by_a_row(r: &Response) -> bool {
        r.headers().contains_key("x-ratelimit-limit")
    }

    #[tokio::test]
    async fn the_router_serves_each_row_with_its_method_and_nothing_else() {
        let dir = tempfile::tempdir().unwrap();
        let app = router().with_state(AppState::in_dir(dir.path(), 1_750_000_000));
        for e in TABLE {
            let path = concrete(e, "nobody");
            let r = send(&app, method(e.verb), &path).await;
            assert!(by_a_row(&r), "{path}: {}", r.status());
            let other = match e.verb {
                Get => Method::POST,
                Post => Method::GET,
            };
            let r = send(&app, other, &path).await;
            assert_eq!(r.status(), StatusCode::METHOD_NOT_ALLOWED, "{path}");
            assert!(!by_a_row(&r));
        }
        for path in [
            "/1/nope",
            "/1/user/nobody/nope",
            "/1/stats/user/nobody",
            "/1/",
        ] {
            let r = send(&app, Method::GET, path).await;
            assert_eq!(r.status(), StatusCode::NOT_FOUND, "{path}");
            assert!(!by_a_row(&r));
        }
    }

    #[tokio::test]
    async fn each_row_keeps_its_auth_rule() {
        let dir = tempfile::tempdir().unwrap();
        let app = router().with_state(AppState::in_dir(dir.path(), 1_750_000_000));
        for e in TABLE {
            // No user exists: every history is unreadable, every token wrong.
            let path = concrete(e, "nobody");
            let r = send(&app, method(e.verb), &path).await;
            let (status, body) = (r.status(), text(r).await);
            match e.auth {
                Token(_) => {
                    assert_eq!(status, StatusCode::UNAUTHORIZED, "{path}");
                    assert!(body.contains("a valid Authorization header"), "{body}");
                }
                MaybeToken(_) => {
                    assert_eq!(status, StatusCode::UNAUTHORIZED, "{path}");
                    assert!(body.contains(super::super::PRIVATE), "{body}");
                }
                NoToken(_) => assert_ne!(status, StatusCode::UNAUTHORIZED, "{path}"),
            }
        }
        let r = send(&app, Method::GET, "/1/validate-token?token=nope").await;
        assert_eq!(r.status(), StatusCode::OK);
        assert_eq!(r.headers()[header::CONTENT_TYPE], "application/json");
        assert!(text(r).await.contains("\"valid\":false"));
    }
}
