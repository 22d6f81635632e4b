//! Why a Subsonic request failed, as the API says it: an error code and
//! a message in the `error` element of a `failed` answer (HTTP 200).
//!
//! Each cause is a variant; [`SubsonicError::code`] is its code in the
//! API's list (0 generic, 10 a required parameter missing, 40 wrong user
//! name or password, 41 token authentication not supported, 43 and 44
//! OpenSubsonic's conflicting mechanisms and invalid API key, 50 not
//! authorized, 70 not found) and `Display` its message. Handlers return
//! one with `?`; the dispatcher renders it ([`SubsonicError::render`]).

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::Response;

use super::response::{self, Format};

/// Why a request failed; see the module doc.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum SubsonicError {
    /// A required parameter is absent or empty (10).
    #[error("Required parameter is missing: {0}")]
    Missing(&'static str),
    /// A parameter's value is not one the method takes: not a number,
    /// out of range, too long (0). The message says which and why.
    #[error("{0}")]
    BadValue(String),
    /// No method has this name (0).
    #[error("Unknown method: {0}")]
    UnknownMethod(String),
    /// A wrong password or token, or an unknown user, told apart from
    /// nothing (40).
    #[error("Wrong username or password")]
    WrongCredentials,
    /// A salted token for a user with no sealed password to check it
    /// against (41).
    #[error("Token authentication not supported for this user; send the password")]
    TokenNotSupported,
    /// `apiKey` together with `u` (43).
    #[error("Multiple conflicting authentication mechanisms provided")]
    ConflictingAuth,
    /// An unknown or revoked API key (44).
    #[error("Invalid API key")]
    InvalidApiKey,
    /// Too many failed logins: nothing was checked (40, or 44 for an
    /// API key, the code its wrong credential has).
    #[error("Too many failed logins; try again in {retry_after} s")]
    LoginsThrottled { api_key: bool, retry_after: i64 },
    /// The password hashing pool is full: nothing was checked (0).
    #[error("The server is busy; try again shortly")]
    HashingBusy,
    /// The user lacks the role, or the thing is another user's (50).
    #[error("{0}")]
    NotAuthorized(String),
    /// A method the server does not carry out (50, as for a role none
    /// has).
    #[error("{0}")]
    Unsupported(String),
    /// Unknown, or hidden from the user, which is the same (70).
    #[error("{0} not found")]
    NotFound(&'static str),
    /// A well-formed request the server declines: a rule of the accounts,
    /// a query over its budget, a scan while shutting down (0).
    #[error("{0}")]
    Refused(String),
    /// The server has no time for this now: every encode slot or resize
    /// turn is taken (0, with HTTP 503 and `Retry-After` in seconds).
    #[error("{message}")]
    Busy { message: String, retry_after: u64 },
    /// The request's body was not read: too large, too slow, broken, or
    /// too many at once (0, with the body error's HTTP status).
    #[error(transparent)]
    Body(#[from] crate::body::BodyError),
    /// A store did not save (0).
    #[error("Could not save: {0}")]
    NotSaved(String),
    /// Something failed inside the server: a file, a picture, a store
    /// (0). The message says what.
    #[error("{0}")]
    Internal(String),
    /// The work on the blocking pool did not finish: it panicked, or the
    /// runtime is shutting down (0).
    #[error("The request failed inside the server")]
    Interrupted,
}

impl SubsonicError {
    /// The error code of the API.
    pub(crate) fn code(&self) -> u32 {
        use SubsonicError as E;
        match self {
            E::Missing(_) => 10,
            E::WrongCredentials => 40,
            E::LoginsThrottled { api_key: false, .. } => 40,
            E::TokenNotSupported => 41,
            E::ConflictingAuth => 43,
            E::InvalidApiKey => 44,
            E::LoginsThrottled { api_key: true, .. } => 44,
            E::NotAuthorized(_) | E::Unsupported(_) => 50,
            E::NotFound(_) => 70,
            E::BadValue(_)
            | E::UnknownMethod(_)
            | E::HashingBusy
            | E::Busy { .. }
            | E::Body(_)
            | E::Refused(_)
            | E::NotSaved(_)
            | E::Internal(_)
            | E::Interrupted => 0,
        }
    }

    /// A store's failure to save, with its reason.
    pub(crate) fn not_saved(e: impl std::fmt::Display) -> Self {
        SubsonicError::NotSaved(e.to_string())
    }

    /// The `failed` answer in `fmt`: HTTP 200, but 503 with
    /// `Retry-After` for [`SubsonicError::Busy`] and the body error's
    /// status for [`SubsonicError::Body`].
    pub(crate) fn render(&self, fmt: &Format) -> Response {
        let mut r = response::error(self.code(), &self.to_string(), fmt);
        match self {
            SubsonicError::Busy { retry_after, .. } => {
                *r.status_mut() = StatusCode::SERVICE_UNAVAILABLE;
                r.headers_mut()
                    .insert(header::RETRY_AFTER, HeaderValue::from(*retry_after));
                r
            }
            SubsonicError::Body(e) => e.decorate(r),
            _ => r,
        }
    }
}

impl From<spindle_app::offload::Interrupted> for SubsonicError {
    fn from(_: spindle_app::offload::Interrupted) -> Self {
        SubsonicError::Interrupted
    }
}

#[cfg(test)]
mod tests {
    use super::SubsonicError as E;
    use super::*;

    #[test]
    fn every_cause_has_its_code_and_message() {
        let s = |v: &str| v.to_owned();
        let cases = [
            (E::Missing("id"), 10, s("Required parameter is missing: id")),
            (
                E::BadValue(s("Parameter x is bad")),
                0,
                s("Parameter x is bad"),
            ),
            (E::UnknownMethod(s("nope")), 0, s("Unknown method: nope")),
            (E::WrongCredentials, 40, s("Wrong username or password")),
            (
                E::TokenNotSupported,
                41,
                s("Token authentication not supported for this user; send the password"),
            ),
            (
                E::ConflictingAuth,
                43,
                s("Multiple conflicting authentication mechanisms provided"),
            ),
            (E::InvalidApiKey, 44, s("Invalid API key")),
            (
                E::LoginsThrottled {
                    api_key: false,
                    retry_after: 7,
                },
                40,
                s("Too many failed logins; try again in 7 s"),
            ),
            (
                E::LoginsThrottled {
                    api_key: true,
                    retry_after: 3,
                },
                44,
                s("Too many failed logins; try again in 3 s"),
            ),
            (
                E::HashingBusy,
                0,
                s("The server is busy; try again shortly"),
            ),
            (E::NotAuthorized(s("Only an admin")), 50, s("Only an admin")),
            (E::Unsupported(s("hls is not")), 50, s("hls is not")),
            (E::NotFound("Song"), 70, s("Song not found")),
            (E::Refused(s("no")), 0, s("no")),
            (
                E::Busy {
                    message: s("All 2 encode slots are busy"),
                    retry_after: 5,
                },
                0,
                s("All 2 encode slots are busy"),
            ),
            (
                E::Body(crate::body::BodyError::TimedOut),
                0,
                s("the request body did not arrive in time; send it again without pausing"),
            ),
            (E::not_saved("disk full"), 0, s("Could not save: disk full")),
            (E::Internal(s("broke")), 0, s("broke")),
            (E::Interrupted, 0, s("The request failed inside the server")),
        ];
        for (e, code, message) in cases {
            assert_eq!(e.code(), code, "{e:?}");
            assert_eq!(e.to_string(), message, "{e:?}");
        }
    }

    #[test]
    fn an_interrupted_offload_is_the_generic_inside_error() {
        let e: SubsonicError = spindle_app::offload::Interrupted.into();
        assert_eq!(
            (e.code(), e.to_string().as_str()),
            (0, "The request failed inside the server")
        );
    }

    #[tokio::test]
    async fn an_error_renders_as_a_failed_answer_with_its_code_and_message() {
        let r = E::NotFound("Playlist").render(&Format::Json);
        assert_eq!(r.status(), 200);
        let body = axum::body::to_bytes(r.into_body(), 1 << 16).await.unwrap();
        let v: serde_json::Value = serde_json::from_slice(&body).unwrap();
        let r = &v["subsonic-response"];
        assert_eq!(r["status"], "failed");
        assert_eq!(r["error"]["code"], 70);
        assert_eq!(r["error"]["message"], "Playlist not found");
        let x = E::Missing("u").render(&Format::Xml);
        let body = axum::body::to_bytes(x.into_body(), 1 << 16).await.unwrap();
        let x = String::from_utf8(body.to_vec()).unwrap();
        assert!(
            x.contains(r#"<error code="10" message="Required parameter is missing: u"/>"#),
            "{x}"
        );
    }

    #[test]
    fn only_a_busy_server_or_a_body_not_read_answers_other_than_200() {
        let busy = E::Busy {
            message: "busy".into(),
            retry_after: 5,
        }
        .render(&Format::Json);
        assert_eq!(busy.status(), 503);
        assert_eq!(busy.headers()["retry-after"], "5");
        let body = E::Body(crate::body::BodyError::TooLarge { limit: 9 }).render(&Format::Json);
        assert_eq!(body.status(), 413);
        let other = E::HashingBusy.render(&Format::Json);
        assert_eq!(other.status(), 200);
        assert!(other.headers().get("retry-after").is_none());
    }
}
