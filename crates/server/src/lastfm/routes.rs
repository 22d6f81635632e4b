//! Every route of the Last.fm side, one row each: its path (and, for
//! the Audioscrobbler 1.2 handshake at `/`, the query parameter that
//! makes a request one), how a cluster serves it, and what serves it.
//! The router ([`router`]) and the cluster's routing of these paths
//! ([`crate::cluster::route::classify`], through [`class_of`]) are read
//! from this table. The 2.0 API's own methods are in [`super::methods`].

use axum::http::Method;
use axum::routing::{any, get, post, MethodRouter};
use axum::Router;

use super::{as12, auth_page, methods};
use crate::cluster::route::Class::{self, Memory, Write};
use crate::params::Params;
use crate::state::AppState;
use Serves::{Api2, Is};

/// How a cluster serves a route, whatever the HTTP method (one the
/// route does not take is answered 405 where it is sent).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Serves {
    /// This way.
    Is(Class),
    /// The 2.0 API: a POST is a write (its method is in the body, unread
    /// here); a GET as its `method` says ([`methods::class_of`]).
    Api2,
}

/// One route: a row of `ROUTES`.
pub struct Route {
    pub path: &'static str,
    /// A query parameter the request must have to be this route's (the
    /// web UI's index page answers `/` without it, before routing).
    pub query: Option<&'static str>,
    pub serves: Serves,
    /// The HTTP methods it takes and their handlers.
    pub(crate) handler: fn() -> MethodRouter<AppState>,
}

const fn route(
    path: &'static str,
    query: Option<&'static str>,
    serves: Serves,
    handler: fn() -> MethodRouter<AppState>,
) -> Route {
    Route {
        path,
        query,
        serves,
        handler,
    }
}

/// The table. Memory: desktop-auth tokens, 1.2 sessions and now playing,
/// which the primary keeps; writes: 1.2 submissions.
#[rustfmt::skip]
pub(crate) static ROUTES: &[Route] = &[
    route("/2.0/", None, Api2, || any(super::handle)),
    route("/2.0", None, Api2, || any(super::handle)),
    route("/api/auth/", None, Is(Memory), || get(auth_page::page).post(auth_page::grant)),
    route("/api/auth", None, Is(Memory), || get(auth_page::page).post(auth_page::grant)),
    route("/", Some("hs"), Is(Memory), || get(as12::handshake)),
    route("/as12/nowplaying", None, Is(Memory), || post(as12::now_playing)),
    route("/as12/submissions", None, Is(Write), || post(as12::submissions)),
];

/// One route per row of `ROUTES`.
pub fn router() -> Router<AppState> {
    ROUTES
        .iter()
        .fold(Router::new(), |r, row| r.route(row.path, (row.handler)()))
}

/// Whether the raw query names the parameter `key` (`key` or `key=…`).
fn has(query: Option<&str>, key: &str) -> bool {
    query.is_some_and(|q| {
        q.split('&').any(|kv| {
            kv.strip_prefix(key)
                .is_some_and(|rest| rest.is_empty() || rest.starts_with('='))
        })
    })
}

/// The row of a request (its path without the base path), if any.
pub fn find(path: &str, query: Option<&str>) -> Option<&'static Route> {
    ROUTES
        .iter()
        .find(|r| r.path == path && r.query.is_none_or(|k| has(query, k)))
}

/// How a cluster serves a request of the Last.fm side; `None` for a
/// path that is not one of its routes.
pub fn class_of(method: &Method, path: &str, query: Option<&str>) -> Option<Class> {
    let row = find(path, query)?;
    Some(match row.serves {
        Is(class) => class,
        Api2 if *method != Method::GET && *method != Method::HEAD => Write,
        Api2 => methods::class_of(Params::parse(query, b"").get("method").unwrap_or("")),
    })
}

#[cfg(test)]
mod tests {
    use axum::body::Body;
    use axum::http::StatusCode;
    use tower::ServiceExt;

    use super::*;
    use crate::cluster::route::Class::Local;

    #[test]
    fn each_route_has_the_class_it_had_before_the_table() {
        let (get, post, head) = (Method::GET, Method::POST, Method::HEAD);
        let cases: &[(&Method, &str, Option<&str>, Option<Class>)] = &[
            (&get, "/2.0/", Some("method=track.scrobble"), Some(Write)),
            (&get, "/2.0", Some("method=Auth.GetToken"), Some(Memory)),
            (&head, "/2.0/", Some("method=user.getInfo"), Some(Local)),
            (&get, "/2.0/", None, Some(Local)),
            (&post, "/2.0/", Some("method=user.getInfo"), Some(Write)),
            (&Method::PUT, "/2.0", None, Some(Write)),
            (&get, "/api/auth/", None, Some(Memory)),
            (&post, "/api/auth", None, Some(Memory)),
            (&get, "/", Some("hs=true&u=a"), Some(Memory)),
            (&get, "/", Some("p=1.2&hs"), Some(Memory)),
            (&post, "/", Some("hs=true"), Some(Memory)),
            (&get, "/", Some("ths=1&hsx=2"), None),
            (&get, "/", None, None),
            (&post, "/as12/nowplaying", None, Some(Memory)),
            (&get, "/as12/nowplaying", None, Some(Memory)),
            (&post, "/as12/submissions", None, Some(Write)),
            (&get, "/as12/", None, None),
            (&get, "/2.0/x", None, None),
        ];
        for (m, path, q, want) in cases {
            assert_eq!(class_of(m, path, *q), *want, "{m} {path} {q:?}");
            let whole = crate::cluster::route::classify(m, path, *q);
            assert_eq!(whole, want.unwrap_or(Local), "{m} {path} {q:?}");
        }
    }

    #[tokio::test]
    async fn the_router_serves_every_route_of_the_table() {
        let dir = tempfile::tempdir().unwrap();
        let app = router().with_state(AppState::in_dir(dir.path(), 1_750_000_000));
        for row in ROUTES {
            let uri = match row.query {
                Some(k) => format!("{}?{k}=true", row.path),
                None => row.path.to_owned(),
            };
            let mut served = 0;
            for m in [Method::GET, Method::POST] {
                let req = axum::http::Request::builder()
                    .method(m)
                    .uri(&uri)
                    .body(Body::empty())
                    .unwrap();
                let r = app.clone().oneshot(req).await.unwrap();
                assert_ne!(r.status(), StatusCode::NOT_FOUND, "{uri}");
                served += usize::from(r.status() != StatusCode::METHOD_NOT_ALLOWED);
            }
            assert!(served > 0, "{uri}");
        }
    }
}
