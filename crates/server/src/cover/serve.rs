//! A cover as an HTTP answer, for every API that sends one: the lookup,
//! the 304 and a cover that needs no resize through the state's blocking
//! facade ([`AppState::call`]), a
//! resize on the covers' own pool ([`super::Covers::make`]), then the
//! body with its validators
//! through [`crate::stream::conditional`] (so covers answer ranges and
//! conditional requests exactly as streams do), with a
//! [`super::COVER_MAX_AGE`] `Cache-Control`.

use std::ops::ControlFlow;

use axum::body::Body;
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::Response;

use super::{Cover, CoverError, COVER_MAX_AGE};
use crate::state::AppState;
use crate::stream::conditional::{self, Validators};

/// Answers `user`'s request (headers `req`) for the cover of `id` at
/// `size` pixels (`None`: as it is): 200 with the image, 304 when the
/// client's `If-None-Match` names it, or why there is none.
pub(crate) async fn answer(
    st: &AppState,
    id: String,
    size: Option<u32>,
    req: &HeaderMap,
    user: &str,
) -> Result<Response, CoverError> {
    let if_none_match = req
        .get(header::IF_NONE_MATCH)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let (etag, found) = st
        .call(move |st| {
            let cat = st.music.catalog(&st.db);
            let l = st.covers.lookup(&st.music, &cat, &id, size)?;
            let v = validators(l.etag());
            if if_none_match.is_some_and(|inm| v.none_match(&inm)) {
                return Ok::<_, CoverError>((v.etag, Found::NotModified));
            }
            Ok(match st.covers.ready(&l)? {
                Some(cover) => (v.etag, Found::Ready(cover)),
                None => (v.etag, Found::ToMake(l)),
            })
        })
        .await
        .map_err(|_| CoverError::Task)??;
    let v = validators(etag);
    Ok(match found {
        Found::NotModified => not_modified(&v),
        Found::Ready(cover) => send(req, &v, cover),
        Found::ToMake(l) => send(req, &v, st.covers.make(l, user).await?),
    })
}

/// What the blocking step found.
enum Found {
    NotModified,
    Ready(Cover),
    ToMake(super::Lookup),
}

/// The answer to [`CoverError::Busy`] outside the Subsonic API's body:
/// 503 with `Retry-After`.
pub(crate) fn busy_headers(r: &mut Response) {
    *r.status_mut() = StatusCode::SERVICE_UNAVAILABLE;
    r.headers_mut().insert(
        header::RETRY_AFTER,
        HeaderValue::from(super::COVER_RETRY_AFTER_SECS),
    );
}

fn validators(etag: String) -> Validators {
    Validators {
        etag,
        modified: None,
    }
}

fn cache_control() -> HeaderValue {
    HeaderValue::from_str(&format!("private, max-age={COVER_MAX_AGE}"))
        .unwrap_or(HeaderValue::from_static("private"))
}

fn not_modified(v: &Validators) -> Response {
    Response::builder()
        .status(StatusCode::NOT_MODIFIED)
        .header(header::ETAG, &v.etag)
        .header(header::CACHE_CONTROL, cache_control())
        .body(Body::empty())
        .unwrap_or_default()
}

fn send(req: &HeaderMap, v: &Validators, cover: Cover) -> Response {
    let len = cover.data.len() as u64;
    let b = Response::builder().header(header::X_CONTENT_TYPE_OPTIONS, "nosniff");
    let mut r = match conditional::head(b, req, v, len, cover.mime) {
        ControlFlow::Break((r, _)) => r,
        ControlFlow::Continue(plan) => {
            let start = usize::try_from(plan.start).unwrap_or(usize::MAX);
            let end = usize::try_from(plan.start + plan.count).unwrap_or(usize::MAX);
            let mut data = cover.data;
            data.truncate(end);
            let body = data.get(start..).map(<[u8]>::to_vec).unwrap_or_default();
            plan.builder.body(Body::from(body)).unwrap_or_default()
        }
    };
    r.headers_mut()
        .insert(header::CACHE_CONTROL, cache_control());
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    fn body_of(r: Response) -> Vec<u8> {
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        rt.block_on(async {
            http_body_util::BodyExt::collect(r.into_body())
                .await
                .unwrap()
                .to_bytes()
                .to_vec()
        })
    }

    fn cover() -> Cover {
        Cover {
            data: b"0123456789".to_vec(),
            mime: "image/jpeg",
        }
    }

    #[test]
    fn a_cover_carries_its_tag_type_and_cache_control_and_answers_ranges() {
        let v = validators("\"k\"".into());
        let r = send(&HeaderMap::new(), &v, cover());
        assert_eq!(r.status(), StatusCode::OK);
        assert_eq!(r.headers()[header::ETAG], "\"k\"");
        assert_eq!(r.headers()[header::CONTENT_TYPE], "image/jpeg");
        assert_eq!(
            r.headers()[header::CACHE_CONTROL],
            format!("private, max-age={COVER_MAX_AGE}").as_str()
        );
        assert_eq!(body_of(r), b"0123456789");
        let mut h = HeaderMap::new();
        h.insert(header::RANGE, HeaderValue::from_static("bytes=2-4"));
        let r = send(&h, &v, cover());
        assert_eq!(r.status(), StatusCode::PARTIAL_CONTENT);
        assert_eq!(body_of(r), b"234");
    }

    #[test]
    fn a_matching_if_none_match_is_a_304_with_the_same_tag() {
        let v = validators("\"k\"".into());
        let r = not_modified(&v);
        assert_eq!(r.status(), StatusCode::NOT_MODIFIED);
        assert_eq!(r.headers()[header::ETAG], "\"k\"");
        let mut h = HeaderMap::new();
        h.insert(header::IF_NONE_MATCH, HeaderValue::from_static("\"k\""));
        assert_eq!(send(&h, &v, cover()).status(), StatusCode::NOT_MODIFIED);
    }
}
