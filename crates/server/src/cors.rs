//! CORS for the APIs that carry their own credentials — Subsonic
//! (`/rest/…`, `.view` URLs included), ListenBrainz (`/1/…`) and Last.fm
//! (`/2.0/`) — so a web client served from another origin can use them.
//! Never for the web UI (`/ui/…`), whose session is a cookie: a page of
//! another origin gets no CORS answer from it, and no answer here allows
//! credentials (cookies), since these APIs take theirs in the request.
//!
//! - A preflight (`OPTIONS` with `Access-Control-Request-Method`) is
//!   answered here, before routing and without authentication: `204` with
//!   the methods, the headers asked for and `Access-Control-Max-Age`.
//! - Every other answer of these APIs (errors and streams alike) gets
//!   `Access-Control-Allow-Origin` and `Access-Control-Expose-Headers`
//!   naming what a media client reads (`Content-Range`, `Accept-Ranges`,
//!   `Content-Length`, …).
//!
//! Which origins: [`crate::Config::cors_origins`] (`[server]
//! cors_origins`): `["*"]` (the default) any origin, a list only those,
//! `[]` none. It runs after the base path is taken off, so it answers
//! under a base path too.

use axum::extract::Request;
use axum::http::{header, HeaderMap, HeaderValue, Method, StatusCode};
use axum::middleware::Next;
use axum::response::Response;

/// How long a browser may keep a preflight's answer: a day.
pub const MAX_AGE_SECS: u32 = 86_400;

/// The methods the APIs answer.
const METHODS: &str = "GET, POST, HEAD, OPTIONS";

/// The request headers allowed when a preflight names none.
const HEADERS: &str =
    "Authorization, Content-Type, Range, If-Range, If-None-Match, If-Modified-Since";

/// What a cross-origin script may read of an answer besides the basic
/// headers.
const EXPOSE: &str = "Content-Range, Accept-Ranges, Content-Length, Content-Disposition, ETag, \
Last-Modified, Retry-After, X-RateLimit-Limit, X-RateLimit-Remaining, X-RateLimit-Reset-In, \
X-RateLimit-Reset";

/// The origins allowed, from the settings.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum CorsOrigins {
    /// Any origin (`["*"]`).
    #[default]
    Any,
    /// Only these (`[]`: none), each `scheme://host[:port]` in lower case.
    Only(Vec<String>),
}

impl CorsOrigins {
    /// The settings' list: `"*"` anywhere in it allows any origin.
    pub fn from_list(list: &[String]) -> CorsOrigins {
        if list.iter().any(|o| o == "*") {
            return CorsOrigins::Any;
        }
        CorsOrigins::Only(list.iter().map(|o| o.to_ascii_lowercase()).collect())
    }

    /// The list again, for the settings file.
    pub fn to_list(&self) -> Vec<String> {
        match self {
            CorsOrigins::Any => vec!["*".to_owned()],
            CorsOrigins::Only(v) => v.clone(),
        }
    }

    /// The `Access-Control-Allow-Origin` value for a request from
    /// `origin`, if it is allowed.
    fn allow(&self, origin: &str) -> Option<HeaderValue> {
        match self {
            CorsOrigins::Any => Some(HeaderValue::from_static("*")),
            CorsOrigins::Only(v) => v
                .iter()
                .any(|o| o.eq_ignore_ascii_case(origin))
                .then(|| HeaderValue::from_str(origin).ok())
                .flatten(),
        }
    }
}

/// Whether a setting's origin is one: `*`, or `http(s)://host[:port]`
/// with no path; `Err` says why not.
pub fn check_origin(o: &str) -> Result<(), String> {
    if o == "*" {
        return Ok(());
    }
    let rest = o
        .strip_prefix("https://")
        .or_else(|| o.strip_prefix("http://"))
        .ok_or_else(|| format!("{o:?}: an origin is \"*\" or scheme://host[:port], e.g. \"https://app.example.org\""))?;
    if rest.is_empty() || rest.contains(['/', '?', '#', ' ', '*']) {
        return Err(format!(
            "{o:?}: an origin has no path and no trailing '/', e.g. \"https://app.example.org\""
        ));
    }
    Ok(())
}

/// Whether `path` (without the base path) is one of the APIs with their
/// own credentials.
pub fn is_api_path(path: &str) -> bool {
    path.starts_with("/rest/")
        || path.starts_with("/1/")
        || path == "/2.0"
        || path.starts_with("/2.0/")
}

/// The middleware: see the module doc.
pub async fn layer(origins: std::sync::Arc<CorsOrigins>, req: Request, next: Next) -> Response {
    if !is_api_path(req.uri().path()) {
        return next.run(req).await;
    }
    let allowed = req
        .headers()
        .get(header::ORIGIN)
        .and_then(|o| o.to_str().ok())
        .and_then(|o| origins.allow(o));
    let preflight = req.method() == Method::OPTIONS
        && req
            .headers()
            .contains_key(header::ACCESS_CONTROL_REQUEST_METHOD);
    if preflight {
        return preflight_answer(req.headers(), allowed, &origins);
    }
    let mut resp = next.run(req).await;
    if let Some(allow) = allowed {
        let h = resp.headers_mut();
        decorate(h, allow, &origins);
        h.insert(
            header::ACCESS_CONTROL_EXPOSE_HEADERS,
            HeaderValue::from_static(EXPOSE),
        );
    }
    resp
}

fn decorate(h: &mut HeaderMap, allow: HeaderValue, origins: &CorsOrigins) {
    h.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, allow);
    if matches!(origins, CorsOrigins::Only(_)) {
        h.append(header::VARY, HeaderValue::from_static("Origin"));
    }
}

fn preflight_answer(
    req: &HeaderMap,
    allowed: Option<HeaderValue>,
    origins: &CorsOrigins,
) -> Response {
    let mut resp = Response::new(axum::body::Body::empty());
    *resp.status_mut() = StatusCode::NO_CONTENT;
    let Some(allow) = allowed else {
        // Not an allowed origin: an answer without CORS headers, which
        // the browser refuses.
        return resp;
    };
    let h = resp.headers_mut();
    decorate(h, allow, origins);
    h.insert(
        header::ACCESS_CONTROL_ALLOW_METHODS,
        HeaderValue::from_static(METHODS),
    );
    // The headers asked for (any: the credentials are not cookies);
    // a preflight that names none gets the usual ones.
    let asked = req
        .get(header::ACCESS_CONTROL_REQUEST_HEADERS)
        .filter(|v| !v.is_empty() && v.len() <= 1024)
        .cloned()
        .unwrap_or(HeaderValue::from_static(HEADERS));
    h.insert(header::ACCESS_CONTROL_ALLOW_HEADERS, asked);
    h.insert(
        header::ACCESS_CONTROL_MAX_AGE,
        HeaderValue::from(MAX_AGE_SECS),
    );
    resp
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_apis_with_their_own_credentials_are_cors_paths() {
        for p in [
            "/rest/ping",
            "/rest/ping.view",
            "/1/submit-listens",
            "/2.0/",
            "/2.0",
        ] {
            assert!(is_api_path(p), "{p}");
        }
        for p in [
            "/ui/api/star",
            "/",
            "/metrics",
            "/share/x",
            "/restx",
            "/2.00",
            "/10/x",
        ] {
            assert!(!is_api_path(p), "{p}");
        }
    }

    #[test]
    fn an_origin_setting_is_a_star_or_a_scheme_and_host() {
        assert!(check_origin("*").is_ok());
        assert!(check_origin("https://app.example.org").is_ok());
        assert!(check_origin("http://127.0.0.1:8080").is_ok());
        for bad in [
            "app.example.org",
            "https://app.example.org/",
            "https://",
            "ftp://x",
            "https://*.x",
        ] {
            assert!(check_origin(bad).is_err(), "{bad}");
        }
        let only = CorsOrigins::from_list(&["https://A.example".into()]);
        assert!(only.allow("https://a.example").is_some());
        assert!(only.allow("https://b.example").is_none());
        assert_eq!(CorsOrigins::from_list(&["*".into()]), CorsOrigins::Any);
    }
}
