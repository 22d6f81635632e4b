//! The HTTP method of a route in an adapter's table (ListenBrainz's
//! endpoints, the web UI's and the shares' routes): one definition, so
//! the tables agree on what a `GET` row takes.

use axum::http::Method;
use axum::routing::MethodFilter;

/// The method of a route. A `GET` route answers `HEAD` too.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Verb {
    Get,
    Post,
}

impl Verb {
    pub fn as_str(self) -> &'static str {
        match self {
            Verb::Get => "GET",
            Verb::Post => "POST",
        }
    }

    /// Whether a request of `method` is one of this route's.
    pub fn allows(self, method: &Method) -> bool {
        match self {
            Verb::Get => *method == Method::GET || *method == Method::HEAD,
            Verb::Post => *method == Method::POST,
        }
    }

    pub(crate) fn filter(self) -> MethodFilter {
        match self {
            Verb::Get => MethodFilter::GET,
            Verb::Post => MethodFilter::POST,
        }
    }
}
