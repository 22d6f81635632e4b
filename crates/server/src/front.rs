//! What every request passes before routing: the base path and the
//! trusted proxies ([`crate::proxy`]).
//!
//! - **Base path** ([`crate::Config::base_path`], e.g. `/music`): every
//!   route answers under it — `/music/rest/…`, `/music/2.0/`, `/music/1/…`,
//!   `/music/ui/…`, `/music/metrics`, the page at `/music/`. The prefix is
//!   taken off before routing, so the APIs are unchanged. `/music` and `/`
//!   redirect to `/music/`; other paths are 404.
//! - **Proxies**: from a trusted peer, the client's address replaces the
//!   peer's as the request's `ConnectInfo` (so throttling, rate limits
//!   and logs see the client; the peer stays as [`Peer`]), a forwarded host
//!   replaces `Host` (same-origin checks and generated URLs use what the
//!   browser asked for), and a trusted-header login is passed on as
//!   [`crate::proxy::PROXY_USER`].
//! - **Cookies**: a response's cookies get `Secure` when the client's
//!   connection is HTTPS (TLS here, or a trusted proxy's word), and
//!   `Path=` the base path.
//! - **The page** (`/`, HTML) carries `<meta name="spindle-base"
//!   content="/music">` (empty content without a base path) right after
//!   `<head>`, and its root-relative `href="/…"` and `src="/…"` attributes
//!   point under the base path. The page's script reads the meta tag and
//!   puts its value before every URL it fetches.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::body::Body;
use axum::extract::{ConnectInfo, Request};
use axum::http::{header, HeaderValue, Method, StatusCode, Uri};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::proxy::{ProxyConfig, PROXY_USER};

/// Marks a request that arrived over TLS (set by the connection loop).
#[derive(Debug, Clone, Copy)]
pub struct Tls;

/// The connection's peer, when a trusted proxy named another client.
#[derive(Debug, Clone, Copy)]
pub struct Peer(pub SocketAddr);

/// Whether the client's connection is HTTPS, as resolved here (a cluster
/// replica tells the primary).
#[derive(Debug, Clone, Copy)]
pub struct Scheme {
    pub https: bool,
}

/// The largest page the base-path rewrite reads: 1 MiB (it is ~5 KiB).
pub const MAX_PAGE: usize = 1 << 20;

struct Front {
    base: String,
    proxy: ProxyConfig,
    /// The node's cluster, whose replicas' signed word is believed
    /// ([`crate::cluster::sign`]).
    cluster: Option<Arc<crate::cluster::Cluster>>,
}

/// `app` behind the base path and proxy handling of `config` (and, on a
/// cluster node, the check of what replicas forward).
pub fn wrap(
    app: axum::Router,
    config: &crate::Config,
    cluster: Option<Arc<crate::cluster::Cluster>>,
) -> axum::Router {
    let front = Arc::new(Front {
        base: config.base_path.clone(),
        proxy: config.proxy.clone(),
        cluster: cluster.filter(|c| c.is_on()),
    });
    axum::Router::new()
        .fallback_service(app)
        .layer(axum::middleware::from_fn(
            move |req: Request, next: Next| {
                let front = front.clone();
                async move { front.handle(req, next).await }
            },
        ))
}

impl Front {
    async fn handle(&self, mut req: Request, next: Next) -> Response {
        req.headers_mut().remove(PROXY_USER);
        let tls = req.extensions().get::<Tls>().is_some();
        let mut https = tls;
        let peer = req
            .extensions()
            .get::<ConnectInfo<SocketAddr>>()
            .map(|c| c.0);
        let replica = match &self.cluster {
            Some(c) if crate::cluster::sign::claims_a_replica(req.headers()) => {
                Some(self.replica(c, &mut req, peer, tls))
            }
            _ => None,
        };
        if let Some(h) = replica {
            https = h;
        } else if let (Some(peer), false) = (peer, self.proxy.trusted.is_empty()) {
            let o = crate::proxy::resolve(&self.proxy, peer.ip(), tls, req.headers());
            https = o.https;
            if o.client != peer.ip() {
                let ext = req.extensions_mut();
                ext.insert(Peer(peer));
                ext.insert(ConnectInfo(SocketAddr::new(o.client, 0)));
            }
            if let Some(v) = o.host.and_then(|h| HeaderValue::from_str(&h).ok()) {
                req.headers_mut().insert(header::HOST, v);
            }
            if let Some(v) = o.user.and_then(|u| HeaderValue::from_str(&u).ok()) {
                req.headers_mut().insert(PROXY_USER, v);
            }
        }
        req.extensions_mut().insert(Scheme { https });
        if !self.base.is_empty() {
            match self.strip(req.uri()) {
                Ok(uri) => *req.uri_mut() = uri,
                Err(r) => return *r,
            }
        }
        let page = req.uri().path() == "/"
            && (req.method() == Method::GET || req.method() == Method::HEAD);
        let mut resp = next.run(req).await;
        self.cookies(&mut resp, https);
        if page && is_html(&resp) {
            resp = self.page(resp).await;
        }
        resp
    }

    /// A request that says it comes from a replica of this cluster: with
    /// a valid signature, the replica's word on the client (its address,
    /// HTTPS, the user a proxy it trusts logged in) is taken; without
    /// one, every such header is dropped and the peer is the client.
    /// Returns whether the client's connection is HTTPS.
    fn replica(
        &self,
        c: &crate::cluster::Cluster,
        req: &mut Request,
        peer: Option<SocketAddr>,
        tls: bool,
    ) -> bool {
        use crate::cluster::sign;
        let path = req.uri().path_and_query().map_or("/", |p| p.as_str());
        let signed = c.signing_key().is_some_and(|k| {
            sign::verify(
                k,
                req.method().as_str(),
                path,
                sign::unix_now(),
                req.headers(),
            )
        });
        if !signed {
            tracing::warn!(
                peer = ?peer,
                "a request with a replica's headers but no valid signature: its forwarding and user headers are ignored"
            );
            sign::strip_client_claims(req.headers_mut(), self.proxy.user_header.as_ref());
            return tls;
        }
        let h = req.headers();
        let client = h
            .get("x-forwarded-for")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<std::net::IpAddr>().ok());
        let https = h
            .get("x-forwarded-proto")
            .is_some_and(|v| v.as_bytes().eq_ignore_ascii_case(b"https"));
        let user = h
            .get(sign::USER_HEADER)
            .filter(|_| self.proxy.user_header.is_some())
            .cloned();
        if let (Some(peer), Some(client)) = (peer, client) {
            let ext = req.extensions_mut();
            ext.insert(Peer(peer));
            ext.insert(ConnectInfo(SocketAddr::new(client, 0)));
        }
        if let Some(u) = user {
            req.headers_mut().insert(PROXY_USER, u);
        }
        https
    }

    /// The request's URI without the base path, or the redirect or 404
    /// for one outside it.
    fn strip(&self, uri: &Uri) -> Result<Uri, Box<Response>> {
        let path = uri.path();
        let query = uri.query().map_or(String::new(), |q| format!("?{q}"));
        if path == self.base || (path == "/" && uri.query().is_none()) {
            let to = format!("{}/{query}", self.base);
            return Err(Box::new(
                (StatusCode::PERMANENT_REDIRECT, [(header::LOCATION, to)], "").into_response(),
            ));
        }
        let Some(rest) = path.strip_prefix(&self.base).filter(|r| r.starts_with('/')) else {
            return Err(Box::new(
                (
                    StatusCode::NOT_FOUND,
                    format!("Spindle is served under {}/\n", self.base),
                )
                    .into_response(),
            ));
        };
        format!("{rest}{query}")
            .parse()
            .map_err(|_| Box::new((StatusCode::BAD_REQUEST, "bad request path\n").into_response()))
    }

    /// `Secure` over HTTPS, `Path=` the base path.
    fn cookies(&self, resp: &mut Response, https: bool) {
        if !https && self.base.is_empty() {
            return;
        }
        let old: Vec<HeaderValue> = resp
            .headers()
            .get_all(header::SET_COOKIE)
            .iter()
            .cloned()
            .collect();
        if old.is_empty() {
            return;
        }
        resp.headers_mut().remove(header::SET_COOKIE);
        for v in old {
            let fixed = v.to_str().ok().map(|c| self.cookie(c, https));
            let v = fixed
                .and_then(|c| HeaderValue::from_str(&c).ok())
                .unwrap_or(v);
            resp.headers_mut().append(header::SET_COOKIE, v);
        }
    }

    fn cookie(&self, c: &str, https: bool) -> String {
        let mut secure = false;
        let mut parts: Vec<String> = c
            .split(';')
            .map(|a| {
                let t = a.trim();
                secure |= t.eq_ignore_ascii_case("secure");
                if !self.base.is_empty() && t.eq_ignore_ascii_case("path=/") {
                    format!("Path={}", self.base)
                } else {
                    t.to_owned()
                }
            })
            .collect();
        if https && !secure {
            parts.push("Secure".into());
        }
        parts.join("; ")
    }

    /// The page with the base path in its meta tag and root-relative
    /// links.
    async fn page(&self, resp: Response) -> Response {
        let (mut parts, body) = resp.into_parts();
        let Ok(bytes) = axum::body::to_bytes(body, MAX_PAGE).await else {
            return (StatusCode::INTERNAL_SERVER_ERROR, "the page is too large").into_response();
        };
        let html = String::from_utf8_lossy(&bytes);
        let html = rewrite_page(&html, &self.base);
        parts.headers.remove(header::CONTENT_LENGTH);
        Response::from_parts(parts, Body::from(html))
    }
}

fn is_html(resp: &Response) -> bool {
    resp.headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("text/html"))
}

/// Adds the `spindle-base` meta tag after `<head>` and points `href="/…"`
/// and `src="/…"` under `base`.
pub fn rewrite_page(html: &str, base: &str) -> String {
    let attr = html_attr(base);
    let meta = format!("<meta name=\"spindle-base\" content=\"{attr}\">");
    let mut out = match html.find("<head>") {
        Some(i) => format!("{}{meta}{}", &html[..i + 6], &html[i + 6..]),
        None => format!("{meta}{html}"),
    };
    if !base.is_empty() {
        for a in ["href", "src", "action"] {
            out = out.replace(&format!("{a}=\"/"), &format!("{a}=\"{attr}/"));
        }
    }
    out
}

fn html_attr(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('"', "&quot;")
        .replace('<', "&lt;")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_page_gets_the_base_in_a_meta_tag_and_in_its_root_links() {
        let html = "<html><head><link href=\"/ui/style.css\"></head><a href=\"#/x\">\
                    <script src=\"/ui/app.js\"></script>";
        let out = rewrite_page(html, "/music");
        assert!(out.contains("<head><meta name=\"spindle-base\" content=\"/music\">"));
        assert!(out.contains("href=\"/music/ui/style.css\""));
        assert!(out.contains("src=\"/music/ui/app.js\""));
        assert!(out.contains("href=\"#/x\""), "fragment links stay");
        let out = rewrite_page(html, "");
        assert!(out.contains("content=\"\""));
        assert!(out.contains("href=\"/ui/style.css\""));
    }

    #[test]
    fn cookies_get_secure_over_https_and_the_base_as_path() {
        let f = Front {
            base: "/music".into(),
            proxy: ProxyConfig::default(),
            cluster: None,
        };
        let c = "s=1; HttpOnly; SameSite=Strict; Path=/; Max-Age=9";
        assert_eq!(
            f.cookie(c, true),
            "s=1; HttpOnly; SameSite=Strict; Path=/music; Max-Age=9; Secure"
        );
        assert_eq!(
            f.cookie("s=1; Path=/; Secure", true),
            "s=1; Path=/music; Secure"
        );
        assert_eq!(f.cookie("s=1; Path=/", false), "s=1; Path=/music");
    }
}
