//! The web UI's error answer: a status and `{"error": "…"}`, which the
//! page shows as it is. Handlers return [`WebResult`] and end in `?`;
//! the few answers that carry more (a search pattern's column, a body
//! refusal's or a busy server's headers) are made whole and passed on as
//! [`WebError::Answer`].

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::json;
use spindle_app::offload::Interrupted;

/// What a web handler answers when it does not succeed.
pub(crate) enum WebError {
    /// `status` with `{"error": message}`.
    Message(StatusCode, String),
    /// An answer made elsewhere, sent as it is.
    Answer(Box<Response>),
}

/// A web handler's result: its answer, or the error it answers with.
pub(crate) type WebResult<T = Response> = Result<T, WebError>;

impl WebError {
    pub(crate) fn new(status: StatusCode, msg: impl Into<String>) -> WebError {
        WebError::Message(status, msg.into())
    }

    pub(crate) fn bad_request(msg: impl Into<String>) -> WebError {
        WebError::new(StatusCode::BAD_REQUEST, msg)
    }

    pub(crate) fn not_found(msg: impl Into<String>) -> WebError {
        WebError::new(StatusCode::NOT_FOUND, msg)
    }

    pub(crate) fn internal(msg: impl Into<String>) -> WebError {
        WebError::new(StatusCode::INTERNAL_SERVER_ERROR, msg)
    }

    /// An answer already made (its status, headers and body kept).
    pub(crate) fn answer(r: Response) -> WebError {
        WebError::Answer(Box::new(r))
    }
}

impl std::fmt::Debug for WebError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            WebError::Message(status, msg) => write!(f, "{status}: {msg}"),
            WebError::Answer(r) => write!(f, "{} (an answer made whole)", r.status()),
        }
    }
}

impl IntoResponse for WebError {
    fn into_response(self) -> Response {
        match self {
            WebError::Message(status, msg) => {
                (status, Json(json!({ "error": msg }))).into_response()
            }
            WebError::Answer(r) => *r,
        }
    }
}

/// Blocking work that did not finish (it panicked, or the server is
/// stopping): 500, "the request failed".
impl From<Interrupted> for WebError {
    fn from(_: Interrupted) -> WebError {
        WebError::internal("the request failed")
    }
}

/// `status` with `{"error": msg}`, as an answer.
pub(crate) fn err(status: StatusCode, msg: &str) -> Response {
    WebError::new(status, msg).into_response()
}

#[cfg(test)]
mod tests {
    use http_body_util::BodyExt;

    use super::*;

    async fn parts(e: WebError) -> (u16, String) {
        let r = e.into_response();
        let status = r.status().as_u16();
        let body = r.into_body().collect().await.unwrap().to_bytes();
        (status, String::from_utf8(body.to_vec()).unwrap())
    }

    #[tokio::test]
    async fn an_error_is_its_status_and_a_json_object_naming_it() {
        let (s, body) = parts(WebError::not_found("no such song")).await;
        assert_eq!((s, body.as_str()), (404, r#"{"error":"no such song"}"#));
        let (s, body) = parts(Interrupted.into()).await;
        assert_eq!(
            (s, body.as_str()),
            (500, r#"{"error":"the request failed"}"#)
        );
    }

    #[tokio::test]
    async fn an_answer_made_elsewhere_is_sent_as_it_is() {
        let r = (
            StatusCode::SERVICE_UNAVAILABLE,
            [("retry-after", "2")],
            "busy",
        )
            .into_response();
        let e = WebError::answer(r);
        let r = e.into_response();
        assert_eq!(r.status(), StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(r.headers()["retry-after"], "2");
    }
}
