//! ListenBrainz's error answer, `{"code": N, "error": "…"}` with the
//! HTTP status N, as [`LbError`]: handlers return it with `?`, and the
//! dispatcher (`super::methods`) renders it with the rate-limit headers
//! every answer carries.

use axum::http::StatusCode;
use axum::response::Response;
use serde_json::json;

use crate::auth_guard::{http_refusal, Denied};
use crate::body::BodyError;
use crate::state::RateInfo;

/// Why a ListenBrainz request was refused.
#[derive(Debug)]
pub(crate) enum LbError {
    /// This status, with this message.
    Status(StatusCode, String),
    /// The guard did not check a token: the client's address must wait
    /// (429), or the server is busy (503); with `Retry-After`.
    Refused(Denied),
    /// The body could not be read (too large, too slow, no budget).
    Body(BodyError),
}

impl LbError {
    pub(crate) fn new(status: StatusCode, message: impl Into<String>) -> LbError {
        LbError::Status(status, message.into())
    }

    /// 400 with `message`.
    pub(crate) fn bad_request(message: impl Into<String>) -> LbError {
        LbError::new(StatusCode::BAD_REQUEST, message)
    }

    /// The answer, with the rate-limit headers of `rate`.
    pub(crate) fn render(self, rate: &RateInfo) -> Response {
        match self {
            LbError::Status(status, message) => document(status, &message, rate),
            LbError::Refused(d) => {
                http_refusal(d, "", |status, message| document(status, message, rate))
            }
            LbError::Body(e) => e.decorate(document(e.status(), &e.to_string(), rate)),
        }
    }
}

impl From<Denied> for LbError {
    fn from(d: Denied) -> LbError {
        LbError::Refused(d)
    }
}

impl From<BodyError> for LbError {
    fn from(e: BodyError) -> LbError {
        LbError::Body(e)
    }
}

/// The error document itself.
fn document(status: StatusCode, message: &str, rate: &RateInfo) -> Response {
    super::reply(
        status,
        json!({ "code": status.as_u16(), "error": message }),
        rate,
    )
}

#[cfg(test)]
mod tests {
    use axum::http::header;

    use super::*;

    fn rate() -> RateInfo {
        RateInfo {
            allowed: true,
            limit: 10,
            remaining: 9,
            reset_in: 5,
            reset_at: 105,
        }
    }

    async fn text(r: Response) -> String {
        let body = axum::body::to_bytes(r.into_body(), 1 << 16).await.unwrap();
        String::from_utf8(body.to_vec()).unwrap()
    }

    #[tokio::test]
    async fn every_error_is_listenbrainz_s_document_with_its_status_and_the_rate_headers() {
        let r = LbError::bad_request("no \"payload\"").render(&rate());
        assert_eq!(r.status(), StatusCode::BAD_REQUEST);
        let names: Vec<&str> = r.headers().keys().map(|k| k.as_str()).collect();
        assert_eq!(
            names,
            [
                "content-type",
                "x-ratelimit-limit",
                "x-ratelimit-remaining",
                "x-ratelimit-reset-in",
                "x-ratelimit-reset"
            ]
        );
        assert_eq!(r.headers()[header::CONTENT_TYPE], "application/json");
        assert_eq!(text(r).await, r#"{"code":400,"error":"no \"payload\""}"#);

        let r = LbError::from(Denied::Wait { retry_after: 7 }).render(&rate());
        assert_eq!(r.status(), StatusCode::TOO_MANY_REQUESTS);
        assert_eq!(r.headers()[header::RETRY_AFTER], "7");
        assert_eq!(r.headers()["x-ratelimit-remaining"], "9");
        assert_eq!(
            text(r).await,
            r#"{"code":429,"error":"too many failed logins; try again in 7 s"}"#
        );

        let r = LbError::from(BodyError::TooLarge { limit: 10 }).render(&rate());
        assert_eq!(r.status(), StatusCode::PAYLOAD_TOO_LARGE);
        assert_eq!(
            text(r).await,
            r#"{"code":413,"error":"the request body is larger than 10 bytes; send a smaller one"}"#
        );
    }
}
