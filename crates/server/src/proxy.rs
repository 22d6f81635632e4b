//! Trusted reverse proxies: who the client is when a proxy stands in
//! front of the server.
//!
//! The headers a proxy sets (`X-Forwarded-For`, `-Proto`, `-Host`, and
//! RFC 7239's `Forwarded`) are believed only when the connection's peer is
//! in [`ProxyConfig::trusted`]; from anyone else they are ignored, so a
//! client cannot pick the address it is throttled and rate-limited under.
//! The client is the rightmost address of the chain that is not itself a
//! trusted proxy (each proxy appends the address it saw), so a client that
//! sends its own `X-Forwarded-For` gets nothing from it. `Forwarded` wins
//! over the `X-Forwarded-*` headers when both are present.
//!
//! [`resolve`] runs once per request ([`crate::front`]); its [`Origin`]
//! says the client's address, whether it used HTTPS, and the host it
//! asked for. The trusted-header login ([`ProxyConfig::user_header`]) is
//! passed on as [`PROXY_USER`], a header the server sets itself and
//! removes from every request that arrives with it.

use std::fmt;
use std::net::IpAddr;
use std::str::FromStr;

use axum::http::{HeaderMap, HeaderName};

/// An address block: `10.0.0.0/8`, `2001:db8::/32`, or one address.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cidr {
    addr: IpAddr,
    len: u8,
}

impl Cidr {
    /// Whether `ip` is in the block (an IPv4-mapped IPv6 address counts
    /// as its IPv4 address).
    pub fn contains(&self, ip: IpAddr) -> bool {
        match (self.addr, ip.to_canonical()) {
            (IpAddr::V4(net), IpAddr::V4(ip)) => {
                let mask = u32::MAX.checked_shl(32 - u32::from(self.len)).unwrap_or(0);
                u32::from(net) & mask == u32::from(ip) & mask
            }
            (IpAddr::V6(net), IpAddr::V6(ip)) => {
                let mask = u128::MAX
                    .checked_shl(128 - u32::from(self.len))
                    .unwrap_or(0);
                u128::from(net) & mask == u128::from(ip) & mask
            }
            _ => false,
        }
    }
}

impl FromStr for Cidr {
    type Err = String;
    fn from_str(s: &str) -> Result<Cidr, String> {
        let t = s.trim();
        let bad =
            || format!("{s:?} is not an address or CIDR block (e.g. \"10.0.0.0/8\", \"::1\")");
        let (a, len) = match t.split_once('/') {
            Some((a, l)) => (a, Some(l.parse::<u8>().map_err(|_| bad())?)),
            None => (t, None),
        };
        let addr: IpAddr = a.parse().map_err(|_| bad())?;
        let addr = addr.to_canonical();
        let max = if addr.is_ipv4() { 32 } else { 128 };
        let len = len.unwrap_or(max);
        if len > max {
            return Err(format!("{s:?}: the prefix length is at most {max}"));
        }
        Ok(Cidr { addr, len })
    }
}

impl fmt::Display for Cidr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let max = if self.addr.is_ipv4() { 32 } else { 128 };
        if self.len == max {
            write!(f, "{}", self.addr)
        } else {
            write!(f, "{}/{}", self.addr, self.len)
        }
    }
}

/// Which proxies are trusted, and the trusted-header login (part of
/// [`crate::Config`]).
#[derive(Debug, Clone, Default)]
pub struct ProxyConfig {
    /// Peers whose forwarding headers are believed.
    pub trusted: Vec<Cidr>,
    /// The header such a peer names the logged-in user in
    /// (`Remote-User`); `None`: no trusted-header login.
    pub user_header: Option<HeaderName>,
}

impl ProxyConfig {
    pub fn trusts(&self, ip: IpAddr) -> bool {
        self.trusted.iter().any(|c| c.contains(ip))
    }
}

/// The header the server itself sets to the user a trusted proxy named;
/// one that arrives from the network is removed first.
pub const PROXY_USER: &str = "x-spindle-proxy-user";

/// Who sent a request and how, as [`resolve`] found it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Origin {
    /// The client: the peer, or what a trusted proxy said.
    pub client: IpAddr,
    /// Whether the client's connection is HTTPS (TLS here, or a trusted
    /// proxy's `proto=https`).
    pub https: bool,
    /// The host the client asked for, when a trusted proxy said it.
    pub host: Option<String>,
    /// The user a trusted proxy logged in (its user header).
    pub user: Option<String>,
}

/// Who sent a request that came from `peer` (over TLS when `tls`) with
/// `headers`.
pub fn resolve(cfg: &ProxyConfig, peer: IpAddr, tls: bool, headers: &HeaderMap) -> Origin {
    let mut o = Origin {
        client: peer,
        https: tls,
        host: None,
        user: None,
    };
    if !cfg.trusts(peer) {
        return o;
    }
    if let Some(h) = &cfg.user_header {
        o.user = headers
            .get(h)
            .and_then(|v| v.to_str().ok())
            .map(str::trim)
            .filter(|u| !u.is_empty())
            .map(str::to_owned);
    }
    let elements = forwarded_elements(headers);
    let hops: Vec<Hop> = if elements.is_empty() {
        x_forwarded(headers)
    } else {
        elements
    };
    // The rightmost hop that is not a trusted proxy is the client.
    let mut chosen = None;
    for hop in hops.iter().rev() {
        chosen = Some(hop);
        match hop.addr {
            Some(ip) if cfg.trusts(ip) => continue,
            _ => break,
        }
    }
    if let Some(hop) = chosen {
        if let Some(ip) = hop.addr {
            o.client = ip;
        }
        if let Some(p) = &hop.proto {
            o.https = p.eq_ignore_ascii_case("https");
        }
        o.host.clone_from(&hop.host);
    }
    o
}

/// One hop of a forwarding chain.
#[derive(Debug, Default)]
struct Hop {
    /// `None` for `unknown` or an obfuscated identifier.
    addr: Option<IpAddr>,
    proto: Option<String>,
    host: Option<String>,
}

/// The elements of every `Forwarded` header, in order.
fn forwarded_elements(headers: &HeaderMap) -> Vec<Hop> {
    let mut out = Vec::new();
    for v in headers.get_all("forwarded") {
        let Ok(v) = v.to_str() else { continue };
        for element in split_outside_quotes(v, ',') {
            let mut hop = Hop::default();
            for pair in split_outside_quotes(element, ';') {
                let Some((k, val)) = pair.split_once('=') else {
                    continue;
                };
                let val = val.trim().trim_matches('"');
                match k.trim().to_ascii_lowercase().as_str() {
                    "for" => hop.addr = node_addr(val),
                    "proto" => hop.proto = Some(val.to_owned()),
                    "host" => hop.host = Some(val.to_owned()),
                    _ => {}
                }
            }
            out.push(hop);
        }
    }
    out
}

/// The hops of `X-Forwarded-For`, the last one with `X-Forwarded-Proto`
/// and `-Host` (the values the adjacent proxy set).
fn x_forwarded(headers: &HeaderMap) -> Vec<Hop> {
    let last = |name: &str| {
        headers
            .get_all(name)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(','))
            .map(str::trim)
            .rfind(|s| !s.is_empty())
            .map(str::to_owned)
    };
    let mut hops: Vec<Hop> = headers
        .get_all("x-forwarded-for")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(|s| Hop {
            addr: node_addr(s.trim()),
            ..Hop::default()
        })
        .collect();
    let (proto, host) = (last("x-forwarded-proto"), last("x-forwarded-host"));
    if hops.is_empty() && (proto.is_some() || host.is_some()) {
        hops.push(Hop::default());
    }
    if let Some(h) = hops.last_mut() {
        h.proto = proto;
        h.host = host;
    }
    hops
}

/// `192.0.2.1`, `192.0.2.1:80`, `[2001:db8::1]:443`, `2001:db8::1`.
fn node_addr(s: &str) -> Option<IpAddr> {
    if let Ok(ip) = s.parse::<IpAddr>() {
        return Some(ip.to_canonical());
    }
    if let Some(rest) = s.strip_prefix('[') {
        return rest.split_once(']')?.0.parse::<IpAddr>().ok();
    }
    let (a, _port) = s.rsplit_once(':')?;
    a.parse::<std::net::Ipv4Addr>().ok().map(IpAddr::V4)
}

/// Splits on `sep` where it is not inside double quotes.
fn split_outside_quotes(s: &str, sep: char) -> Vec<&str> {
    let mut out = Vec::new();
    let (mut start, mut quoted) = (0, false);
    for (i, c) in s.char_indices() {
        if c == '"' {
            quoted = !quoted;
        } else if c == sep && !quoted {
            out.push(&s[start..i]);
            start = i + c.len_utf8();
        }
    }
    out.push(&s[start..]);
    out
}

/// The user a trusted proxy logged in, if it exists here: what the web UI
/// and the Subsonic API take in place of a session or credentials.
pub fn proxy_user(st: &crate::AppState, headers: &HeaderMap) -> Option<String> {
    let user = headers.get(PROXY_USER)?.to_str().ok()?;
    st.accounts.user_exists(user).then(|| user.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(trusted: &[&str]) -> ProxyConfig {
        ProxyConfig {
            trusted: trusted.iter().map(|s| s.parse().unwrap()).collect(),
            user_header: Some(HeaderName::from_static("remote-user")),
        }
    }

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.append(*k, v.parse().unwrap());
        }
        h
    }

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn blocks_contain_their_addresses_and_no_others() {
        let c: Cidr = "10.1.0.0/16".parse().unwrap();
        assert!(c.contains(ip("10.1.200.3")));
        assert!(!c.contains(ip("10.2.0.1")));
        assert!(c.contains(ip("::ffff:10.1.0.9")), "IPv4-mapped");
        let v6: Cidr = "2001:db8::/32".parse().unwrap();
        assert!(v6.contains(ip("2001:db8:1::5")));
        assert!(!v6.contains(ip("2001:db9::5")));
        assert!(!v6.contains(ip("10.1.0.1")));
        let all: Cidr = "0.0.0.0/0".parse().unwrap();
        assert!(all.contains(ip("203.0.113.5")));
        assert_eq!("::1".parse::<Cidr>().unwrap().to_string(), "::1");
        assert!("10.0.0.0/33".parse::<Cidr>().is_err());
        assert!("ten".parse::<Cidr>().is_err());
    }

    #[test]
    fn forwarding_headers_from_an_untrusted_peer_are_ignored() {
        let h = headers(&[
            ("x-forwarded-for", "198.51.100.7"),
            ("x-forwarded-proto", "https"),
            ("remote-user", "admin"),
        ]);
        let o = resolve(&cfg(&["127.0.0.1"]), ip("203.0.113.9"), false, &h);
        assert_eq!(o.client, ip("203.0.113.9"));
        assert!(!o.https);
        assert_eq!(o.user, None);
    }

    #[test]
    fn the_client_is_the_rightmost_untrusted_address() {
        // The client forged the first entry; the proxy appended the real one.
        let h = headers(&[
            ("x-forwarded-for", "1.2.3.4, 198.51.100.7"),
            ("x-forwarded-proto", "https"),
            ("x-forwarded-host", "music.example"),
        ]);
        let o = resolve(&cfg(&["127.0.0.1"]), ip("127.0.0.1"), false, &h);
        assert_eq!(o.client, ip("198.51.100.7"));
        assert!(o.https);
        assert_eq!(o.host.as_deref(), Some("music.example"));
        // Two trusted proxies in a row.
        let h = headers(&[("x-forwarded-for", "198.51.100.7, 10.0.0.2")]);
        let o = resolve(
            &cfg(&["127.0.0.1", "10.0.0.0/8"]),
            ip("127.0.0.1"),
            false,
            &h,
        );
        assert_eq!(o.client, ip("198.51.100.7"));
    }

    #[test]
    fn rfc_7239_forwarded_is_read_and_wins_over_x_forwarded() {
        let h = headers(&[
            (
                "forwarded",
                "for=1.2.3.4, for=\"[2001:db8:cafe::17]:4711\";proto=https;host=\"m.example:8443\"",
            ),
            ("x-forwarded-for", "198.51.100.7"),
        ]);
        let o = resolve(&cfg(&["::1"]), ip("::1"), false, &h);
        assert_eq!(o.client, ip("2001:db8:cafe::17"));
        assert!(o.https);
        assert_eq!(o.host.as_deref(), Some("m.example:8443"));
        let h = headers(&[("forwarded", "for=\"192.0.2.60:80\";proto=http")]);
        let o = resolve(&cfg(&["::1"]), ip("::1"), true, &h);
        assert_eq!(o.client, ip("192.0.2.60"));
        assert!(!o.https, "the proxy's word on the client's scheme");
    }

    #[test]
    fn a_trusted_proxy_names_the_user_in_its_header() {
        let h = headers(&[("remote-user", " ann ")]);
        let o = resolve(&cfg(&["127.0.0.1"]), ip("127.0.0.1"), false, &h);
        assert_eq!(o.user.as_deref(), Some("ann"));
        assert_eq!(o.client, ip("127.0.0.1"), "no chain: the peer");
    }
}
