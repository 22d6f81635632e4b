//! What every `/ui/` handler checks before its own work, as axum
//! extractors: the CSRF header ([`Csrf`]), the session's user and a role
//! they must hold ([`User`]), and a small JSON body ([`SmallJson`]).
//!
//! axum runs a handler's extractors in the order of its arguments, the
//! body last, so a handler written `(State, Path, User<Admin>,
//! SmallJson<Form>)` refuses in this order: a bad path, a cross-site POST
//! (403), no session (401), a missing role (403), then a body too large,
//! too slow or not the form (413, 408, 503, 400).

use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::request::Parts;
use axum::http::StatusCode;
use serde::de::DeserializeOwned;

use super::{csrf_ok, session_user, small_json, WebError};
use crate::state::AppState;

/// The answer to a state-changing request without the CSRF header (or
/// from another origin).
fn cross_site() -> WebError {
    WebError::new(StatusCode::FORBIDDEN, "cross-site request refused")
}

/// A request that passed the CSRF check ([`csrf_ok`]): for the POSTs that
/// need no session (logging in, logging out, the first-run setup).
pub(super) struct Csrf;

impl<S: Send + Sync> FromRequestParts<S> for Csrf {
    type Rejection = WebError;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, WebError> {
        if csrf_ok(&parts.headers) {
            Ok(Csrf)
        } else {
            Err(cross_site())
        }
    }
}

/// A role a route needs beyond a session, named by a marker type.
pub(super) trait Role: Default + Send + Sync {
    /// What the `403` says to a user without it.
    const REFUSAL: &'static str;

    /// Whether `user` holds it.
    fn held(st: &AppState, user: &str) -> bool;
}

/// No role: any logged-in user.
#[derive(Default)]
pub(super) struct Anyone;

impl Role for Anyone {
    const REFUSAL: &'static str = "";

    fn held(_: &AppState, _: &str) -> bool {
        true
    }
}

/// An administrator: what every `/ui/api/admin/` route needs.
#[derive(Default)]
pub(super) struct Admin;

impl Role for Admin {
    const REFUSAL: &'static str = "only an administrator may do this";

    fn held(st: &AppState, user: &str) -> bool {
        st.accounts.is_admin(user)
    }
}

/// The logged-in user behind a request, holding role `R` (written
/// `User(name, Admin): User<Admin>`, or `User(name, _): User` for any
/// user). Refused: a POST (any method but GET and HEAD) without the CSRF
/// header, 403; no session, 401; without the role, 403 with
/// [`Role::REFUSAL`].
pub(super) struct User<R: Role = Anyone>(pub String, pub R);

impl<R: Role> FromRequestParts<AppState> for User<R> {
    type Rejection = WebError;

    async fn from_request_parts(parts: &mut Parts, st: &AppState) -> Result<Self, WebError> {
        if !parts.method.is_safe() && !csrf_ok(&parts.headers) {
            return Err(cross_site());
        }
        let user = session_user(st, &parts.headers)
            .ok_or_else(|| WebError::new(StatusCode::UNAUTHORIZED, "not logged in"))?;
        if !R::held(st, &user) {
            return Err(WebError::new(StatusCode::FORBIDDEN, R::REFUSAL));
        }
        Ok(User(user, R::default()))
    }
}

/// A JSON body of at most [`super::MAX_UI_BODY`] bytes, read by
/// [`small_json`]: 413, 408 or 503 for the body, 400 for what it says.
pub(super) struct SmallJson<T>(pub T);

impl<T: DeserializeOwned> FromRequest<AppState> for SmallJson<T> {
    type Rejection = WebError;

    async fn from_request(req: Request, st: &AppState) -> Result<Self, WebError> {
        small_json(st, req.into_body()).await.map(SmallJson)
    }
}

#[cfg(test)]
mod tests {
    use axum::body::Body;
    use axum::http::{Method, Request};
    use axum::routing::any;
    use axum::Router;
    use http_body_util::BodyExt;
    use serde::Deserialize;
    use tower::ServiceExt;

    use super::*;

    /// A role nobody holds.
    #[derive(Default)]
    struct Nobody;

    impl Role for Nobody {
        const REFUSAL: &'static str = "nobody may";

        fn held(_: &AppState, _: &str) -> bool {
            false
        }
    }

    #[derive(Deserialize)]
    struct Form {
        #[allow(dead_code, reason = "only parsed")]
        n: u32,
    }

    /// A server state with the user `ann` logged in: the state, the
    /// session cookie, and the guard of its folder.
    fn state() -> (AppState, String, tempfile::TempDir) {
        let data = tempfile::tempdir().unwrap();
        let st = AppState::in_dir(data.path(), 1_750_000_000);
        st.accounts.add_user_cheaply("ann", "pw");
        let id = st.web.sessions.start("ann", st.now(), "test", None);
        (st, format!("{}={id}", super::super::COOKIE), data)
    }

    /// The status and error message of `method /any` and `/nobody`
    /// (`which`) with the CSRF header or not, the cookie or not, `body`.
    async fn ask(
        which: &str,
        method: Method,
        csrf: bool,
        cookie: bool,
        body: &str,
    ) -> (u16, String) {
        let (st, session, _data) = state();
        let app = Router::new()
            .route("/any", any(|_: User, _: SmallJson<Form>| async { "done" }))
            .route(
                "/nobody",
                any(|_: User<Nobody>, _: SmallJson<Form>| async { "done" }),
            )
            .with_state(st);
        let mut req = Request::builder().method(method).uri(which);
        if csrf {
            req = req.header("x-spindle-csrf", "1");
        }
        if cookie {
            req = req.header("cookie", session);
        }
        let r = app
            .oneshot(req.body(Body::from(body.to_owned())).unwrap())
            .await
            .unwrap();
        let status = r.status().as_u16();
        let bytes = r.into_body().collect().await.unwrap().to_bytes();
        let v: serde_json::Value = serde_json::from_slice(&bytes).unwrap_or_default();
        (status, v["error"].as_str().unwrap_or("").to_owned())
    }

    #[tokio::test]
    async fn a_post_without_the_csrf_header_is_refused_before_its_session_is_asked_for() {
        let (s, e) = ask("/any", Method::POST, false, false, "{}").await;
        assert_eq!((s, e.as_str()), (403, "cross-site request refused"));
        let (s, e) = ask("/any", Method::POST, true, false, "{}").await;
        assert_eq!((s, e.as_str()), (401, "not logged in"));
    }

    #[tokio::test]
    async fn a_get_needs_a_session_but_no_csrf_header() {
        assert_eq!(ask("/any", Method::GET, false, false, "").await.0, 401);
        assert_eq!(
            ask("/any", Method::GET, false, true, r#"{"n": 1}"#).await.0,
            200
        );
    }

    #[tokio::test]
    async fn a_missing_role_is_refused_before_the_body_is_read() {
        let (s, e) = ask("/nobody", Method::POST, true, true, "not json").await;
        assert_eq!((s, e.as_str()), (403, "nobody may"));
        let (s, e) = ask("/any", Method::POST, true, true, "not json").await;
        assert_eq!(s, 400, "{e}");
        assert!(e.starts_with("bad request body"), "{e}");
        assert_eq!(
            ask("/any", Method::POST, true, true, r#"{"n": 1}"#).await.0,
            200
        );
    }
}
