//! Last.fm's error answer, [`LfmError`]: a code and a message, rendered
//! as `<lfm status="failed"><error code="N">…</error></lfm>` or, for
//! `format=json`, `{"error": N, "message": "…"}` (in the callback for
//! JSONP), with the HTTP status the code stands for.

use axum::http::StatusCode;
use axum::response::Response;

use super::response::{error_body, respond, Fmt};
use crate::body::BodyError;

/// A Last.fm error: code and message.
#[derive(Debug)]
pub struct LfmError {
    pub code: u32,
    pub message: String,
    /// For a body that could not be read: the answer takes its status
    /// (413, 408, …) and, when the server is busy, `Retry-After`.
    body: Option<BodyError>,
}

/// The error `code` with `message`.
pub(crate) fn err(code: u32, message: impl Into<String>) -> LfmError {
    LfmError {
        code,
        message: message.into(),
        body: None,
    }
}

/// Error 6 for the parameter `name` that is missing.
pub(crate) fn missing(name: &str) -> LfmError {
    err(
        6,
        format!("Invalid parameters - Your request is missing a required parameter: {name}"),
    )
}

/// The HTTP status of an error code.
fn status_of(code: u32) -> StatusCode {
    match code {
        4 | 9 | 10 | 13 | 14 | 15 | 17 | 26 => StatusCode::FORBIDDEN,
        29 => StatusCode::TOO_MANY_REQUESTS,
        11 | 16 => StatusCode::SERVICE_UNAVAILABLE,
        _ => StatusCode::BAD_REQUEST,
    }
}

impl LfmError {
    /// The answer in the format `fmt` asks for.
    pub(crate) fn render(&self, fmt: &Fmt) -> Response {
        let body = error_body(self.code, &self.message, fmt.json);
        let r = respond(fmt, status_of(self.code), body);
        match &self.body {
            Some(e) => e.decorate(r),
            None => r,
        }
    }
}

/// 6 for the client's fault (too large, broken), 16 (try again later)
/// for the rest.
impl From<BodyError> for LfmError {
    fn from(e: BodyError) -> LfmError {
        let (code, message) = match e {
            BodyError::TooLarge { .. } | BodyError::Broken(_) => {
                (6, format!("Invalid parameters - {e}"))
            }
            _ => (
                16,
                format!("There was a temporary error processing your request - {e}"),
            ),
        };
        LfmError {
            code,
            message,
            body: Some(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use axum::http::header;

    use super::*;

    async fn text(r: Response) -> String {
        let body = axum::body::to_bytes(r.into_body(), 1 << 16).await.unwrap();
        String::from_utf8(body.to_vec()).unwrap()
    }

    #[tokio::test]
    async fn an_error_is_lastfm_s_document_in_the_format_asked_with_its_status() {
        let xml = Fmt::default();
        let r = missing("sk").render(&xml);
        assert_eq!(r.status(), StatusCode::BAD_REQUEST);
        assert_eq!(r.headers()[header::CONTENT_TYPE], "text/xml; charset=utf-8");
        assert_eq!(
            text(r).await,
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<lfm status=\"failed\"><error code=\"6\">\
             Invalid parameters - Your request is missing a required parameter: sk</error></lfm>"
        );
        let json = Fmt {
            json: true,
            callback: None,
        };
        let r = err(9, "Invalid session key").render(&json);
        assert_eq!(r.status(), StatusCode::FORBIDDEN);
        assert_eq!(
            text(r).await,
            r#"{"error":9,"message":"Invalid session key"}"#
        );
        let jsonp = Fmt {
            json: true,
            callback: Some("cb".into()),
        };
        let r = err(29, "Rate Limit Exceeded").render(&jsonp);
        assert_eq!(r.status(), StatusCode::TOO_MANY_REQUESTS);
        assert_eq!(
            r.headers()[header::CONTENT_TYPE],
            "text/javascript; charset=utf-8"
        );
        assert_eq!(
            text(r).await,
            r#"cb({"error":29,"message":"Rate Limit Exceeded"});"#
        );
        let r = LfmError::from(BodyError::Busy).render(&json);
        assert_eq!(r.status(), StatusCode::SERVICE_UNAVAILABLE);
        assert!(r.headers().contains_key(header::RETRY_AFTER));
        assert!(text(r).await.starts_with(r#"{"error":16,"#));
    }
}
