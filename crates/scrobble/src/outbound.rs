//! Requests to addresses someone else chose: the one HTTP client a
//! server uses for every URL a user gives it (forwarding links, pulls of
//! a history). A [`Policy`] says where such a request may go; an
//! [`Outbound`] is a client that keeps to it.
//!
//! A guarded policy refuses every address that is not on the public
//! internet — loopback, private (RFC 1918), shared (CGNAT, 100.64/10),
//! link-local, unique-local (fc00::/7), site-local, multicast,
//! unspecified, reserved, the IPv4-mapped, -compatible and NAT64 forms of
//! those — and every address of the machine itself (so the server's own
//! ports), unless an administrator allows the host name or its address
//! range. The check is made where the address is known:
//!
//! - a host name is resolved by the client's own resolver, which returns
//!   only the addresses allowed, so the connection goes to an address
//!   that was checked (a name that resolves differently the second time
//!   cannot pass: there is no second time);
//! - an address written in the URL never reaches a resolver, so it is
//!   checked before the request is sent ([`Outbound::request`]);
//! - every redirect's target is checked the same way before it is
//!   followed (at most [`MAX_REDIRECTS`]);
//! - proxies from the environment are not used (the proxy would make
//!   the connection the check is about).
//!
//! The desktop scrobbler sends to the services its owner configured, on
//! their own machine: it uses [`Policy::open`], no checks.

use std::future::Future;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use reqwest::dns::{Addrs, Name, Resolve, Resolving};

use crate::client::SendError;

/// The most redirects a guarded request follows.
pub const MAX_REDIRECTS: usize = 5;

/// Why a request was not sent: its address is one a user may not make
/// the server ask.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "{host} is {class}: the server does not send requests there for a user (an administrator \
     may allow it with [outbound] allow in the settings file)"
)]
pub struct Blocked {
    /// The host (or address) as the URL named it.
    pub host: String,
    /// What kind of address it is (`a loopback address`, …).
    pub class: &'static str,
}

/// An address range of the allow-list: an address and a prefix length.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Net {
    addr: IpAddr,
    prefix: u8,
}

impl Net {
    fn parse(s: &str) -> Option<Net> {
        let (a, p) = match s.split_once('/') {
            Some((a, p)) => (a, Some(p)),
            None => (s, None),
        };
        let addr: IpAddr = a
            .trim_start_matches('[')
            .trim_end_matches(']')
            .parse()
            .ok()?;
        let max = if addr.is_ipv4() { 32 } else { 128 };
        let prefix = match p {
            Some(p) => p.parse().ok().filter(|p| *p <= max)?,
            None => max,
        };
        Some(Net { addr, prefix })
    }

    fn contains(&self, ip: IpAddr) -> bool {
        match (self.addr, ip) {
            (IpAddr::V4(n), IpAddr::V4(a)) => {
                let mask = u32::MAX
                    .checked_shl(32 - u32::from(self.prefix))
                    .unwrap_or(0);
                u32::from(n) & mask == u32::from(a) & mask
            }
            (IpAddr::V6(n), IpAddr::V6(a)) => {
                let mask = u128::MAX
                    .checked_shl(128 - u32::from(self.prefix))
                    .unwrap_or(0);
                u128::from(n) & mask == u128::from(a) & mask
            }
            _ => false,
        }
    }
}

#[derive(Debug, Default)]
struct Allow {
    /// Host names allowed (lower case, without a final dot).
    hosts: Vec<String>,
    nets: Vec<Net>,
}

/// Where requests for users may go: anywhere ([`Policy::open`]) or to
/// the public internet and what an administrator allowed
/// ([`Policy::guarded`]). Cheap to clone.
#[derive(Debug, Clone)]
pub struct Policy {
    /// `None`: open.
    allow: Option<Arc<Allow>>,
}

impl Default for Policy {
    /// Guarded, nothing allowed beyond the public internet.
    fn default() -> Self {
        Policy {
            allow: Some(Arc::new(Allow::default())),
        }
    }
}

impl PartialEq for Policy {
    fn eq(&self, other: &Self) -> bool {
        match (&self.allow, &other.allow) {
            (None, None) => true,
            (Some(a), Some(b)) => a.hosts == b.hosts && a.nets == b.nets,
            _ => false,
        }
    }
}

fn host_key(h: &str) -> String {
    h.trim_end_matches('.').to_ascii_lowercase()
}

impl Policy {
    /// No checks: the desktop scrobbler's.
    pub fn open() -> Policy {
        Policy { allow: None }
    }

    /// Guarded, with `allow`: host names (`maloja.lan`), addresses
    /// (`192.168.1.20`) and ranges (`192.168.1.0/24`, `fd00::/8`) that
    /// may be asked although they are not public. An entry that is
    /// neither a range nor a host name is refused.
    pub fn guarded<S: AsRef<str>>(allow: &[S]) -> Result<Policy, String> {
        let mut a = Allow::default();
        for e in allow {
            let e = e.as_ref().trim();
            if let Some(n) = Net::parse(e) {
                a.nets.push(n);
            } else if !e.is_empty()
                && e.trim_end_matches('.').split('.').all(|l| {
                    !l.is_empty()
                        && l.len() <= 63
                        && l.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
                })
            {
                a.hosts.push(host_key(e));
            } else {
                return Err(format!(
                    "{e:?} is neither a host name nor an address range (ADDRESS/PREFIX)"
                ));
            }
        }
        Ok(Policy {
            allow: Some(Arc::new(a)),
        })
    }

    /// The allow-list's entries, as [`Policy::guarded`] takes them
    /// (empty when open).
    pub fn allowed(&self) -> Vec<String> {
        let Some(a) = &self.allow else {
            return Vec::new();
        };
        let nets = a.nets.iter().map(|n| {
            let full = if n.addr.is_ipv4() { 32 } else { 128 };
            if n.prefix == full {
                n.addr.to_string()
            } else {
                format!("{}/{}", n.addr, n.prefix)
            }
        });
        a.hosts.iter().cloned().chain(nets).collect()
    }

    /// Whether requests are checked at all.
    pub fn is_guarded(&self) -> bool {
        self.allow.is_some()
    }

    fn host_allowed(&self, host: &str) -> bool {
        self.allow
            .as_ref()
            .is_none_or(|a| a.hosts.iter().any(|h| *h == host_key(host)))
    }

    /// Whether a request may connect to `ip` (reached by `host`).
    pub fn check_ip(&self, host: &str, ip: IpAddr) -> Result<(), Blocked> {
        let Some(allow) = &self.allow else {
            return Ok(());
        };
        let ip = canonical(ip);
        if allow.nets.iter().any(|n| n.contains(ip)) {
            return Ok(());
        }
        let class = refused_class(ip).or_else(|| own_address(ip).then_some(OWN));
        match class {
            Some(class) => Err(Blocked {
                host: host.to_owned(),
                class,
            }),
            None => Ok(()),
        }
    }

    /// Checks what can be checked of `url` before it is sent: an http or
    /// https URL, and its address when it names one. A host name is
    /// checked when it is resolved.
    pub fn check_url(&self, url: &reqwest::Url) -> Result<(), Blocked> {
        if self.allow.is_none() {
            return Ok(());
        }
        let refuse = |class| Blocked {
            host: url.host_str().unwrap_or("").to_owned(),
            class,
        };
        if !matches!(url.scheme(), "http" | "https") {
            return Err(refuse("not an http:// or https:// URL"));
        }
        // The URL parser has written an address host in its one form
        // (`http://0x7f.1/` is `127.0.0.1`, IPv6 in brackets).
        let Some(host) = url.host_str() else {
            return Err(refuse("not a URL with a host"));
        };
        match host.trim_start_matches('[').trim_end_matches(']').parse() {
            Ok(ip) => self.check_ip(host, ip),
            Err(_) => Ok(()),
        }
    }

    /// A client that keeps to this policy.
    pub fn client(
        &self,
        user_agent: &str,
        connect_timeout: Duration,
        timeout: Duration,
    ) -> Result<Outbound, SendError> {
        let mut b = reqwest::Client::builder()
            .user_agent(user_agent)
            .connect_timeout(connect_timeout)
            .timeout(timeout);
        if self.is_guarded() {
            let for_redirects = self.clone();
            b = b
                .no_proxy()
                .dns_resolver(Arc::new(Resolver {
                    policy: self.clone(),
                }))
                .redirect(reqwest::redirect::Policy::custom(move |attempt| {
                    if attempt.previous().len() >= MAX_REDIRECTS {
                        return attempt.error(format!("more than {MAX_REDIRECTS} redirects"));
                    }
                    match for_redirects.check_url(attempt.url()) {
                        Ok(()) => attempt.follow(),
                        Err(b) => attempt.error(b),
                    }
                }));
        }
        let http = b.build().map_err(|e| SendError::Network(e.to_string()))?;
        Ok(Outbound {
            http,
            policy: self.clone(),
        })
    }
}

const OWN: &str = "an address of this server's own machine";

/// An IPv4 address written as IPv6 (mapped `::ffff:a.b.c.d`) as the IPv4
/// address it is.
fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => ip,
        },
        v4 => v4,
    }
}

/// What kind of non-public address `ip` is, if it is one.
pub fn refused_class(ip: IpAddr) -> Option<&'static str> {
    match canonical(ip) {
        IpAddr::V4(v4) => v4_class(v4),
        IpAddr::V6(v6) => v6_class(v6),
    }
}

fn v4_class(ip: Ipv4Addr) -> Option<&'static str> {
    let o = ip.octets();
    let class = if ip.is_unspecified() || o[0] == 0 {
        "an unspecified address"
    } else if ip.is_loopback() {
        "a loopback address"
    } else if ip.is_private() {
        "a private address"
    } else if o[0] == 100 && (o[1] & 0xc0) == 64 {
        "a shared (CGNAT) address"
    } else if ip.is_link_local() {
        "a link-local address"
    } else if ip.is_multicast() {
        "a multicast address"
    } else if ip.is_broadcast() || o[0] >= 240 || (o[0] == 192 && o[1] == 0 && o[2] == 0) {
        "a reserved address"
    } else {
        return None;
    };
    Some(class)
}

fn v6_class(ip: Ipv6Addr) -> Option<&'static str> {
    let s = ip.segments();
    let class = if ip.is_unspecified() {
        "an unspecified address"
    } else if ip.is_loopback() {
        "a loopback address"
    } else if (s[0] & 0xfe00) == 0xfc00 {
        "a unique-local address"
    } else if (s[0] & 0xffc0) == 0xfe80 {
        "a link-local address"
    } else if (s[0] & 0xffc0) == 0xfec0 {
        "a site-local address"
    } else if ip.is_multicast() {
        "a multicast address"
    } else if s[..6] == [0; 6] || (s[0] == 0x64 && s[1] == 0xff9b && s[2..6] == [0; 4]) {
        // IPv4-compatible (::a.b.c.d) or NAT64 (64:ff9b::a.b.c.d): the
        // IPv4 address inside decides.
        let v4 = Ipv4Addr::new((s[6] >> 8) as u8, s[6] as u8, (s[7] >> 8) as u8, s[7] as u8);
        return v4_class(v4);
    } else {
        return None;
    };
    Some(class)
}

/// Whether `ip` is an address of this machine: one a socket can be bound
/// to (the kernel refuses an address no interface has).
fn own_address(ip: IpAddr) -> bool {
    std::net::UdpSocket::bind(SocketAddr::new(ip, 0)).is_ok()
}

/// The guarded client's resolver: resolves a name and keeps only the
/// addresses the policy allows (all of them for a host name it allows).
struct Resolver {
    policy: Policy,
}

impl Resolve for Resolver {
    fn resolve(&self, name: Name) -> Resolving {
        let policy = self.policy.clone();
        let host = name.as_str().to_owned();
        let fut: Pin<Box<dyn Future<Output = _> + Send>> = Box::pin(async move {
            let found: Vec<SocketAddr> =
                tokio::net::lookup_host((host.as_str(), 0)).await?.collect();
            if policy.host_allowed(&host) {
                let addrs: Addrs = Box::new(found.into_iter());
                return Ok(addrs);
            }
            let mut refused = None;
            let mut kept = Vec::new();
            for a in found {
                match policy.check_ip(&host, a.ip()) {
                    Ok(()) => kept.push(a),
                    Err(b) => refused = Some(b),
                }
            }
            match refused {
                // One address refused: refuse the name (a name that
                // points inside as well as outside is not a service's).
                Some(b) => Err(Box::new(b) as Box<dyn std::error::Error + Send + Sync>),
                None => {
                    let addrs: Addrs = Box::new(kept.into_iter());
                    Ok(addrs)
                }
            }
        });
        fut
    }
}

/// An HTTP client with its [`Policy`]: every request is made through
/// [`Outbound::request`], which checks the URL first.
#[derive(Debug, Clone)]
pub struct Outbound {
    http: reqwest::Client,
    policy: Policy,
}

impl Outbound {
    /// A request to `url` after [`Policy::check_url`].
    pub fn request(
        &self,
        method: reqwest::Method,
        url: &str,
    ) -> Result<reqwest::RequestBuilder, SendError> {
        let u = reqwest::Url::parse(url).map_err(|e| SendError::Rejected {
            code: 0,
            message: format!("not a URL: {e}"),
        })?;
        self.policy.check_url(&u).map_err(SendError::Blocked)?;
        Ok(self.http.request(method, u))
    }

    pub fn get(&self, url: &str) -> Result<reqwest::RequestBuilder, SendError> {
        self.request(reqwest::Method::GET, url)
    }

    pub fn post(&self, url: &str) -> Result<reqwest::RequestBuilder, SendError> {
        self.request(reqwest::Method::POST, url)
    }
}

/// The [`Blocked`] a failed request carries somewhere in its causes (a
/// refused name or redirect), if any.
pub fn blocked_in(e: &(dyn std::error::Error + 'static)) -> Option<Blocked> {
    let mut cur = Some(e);
    while let Some(c) = cur {
        if let Some(b) = c.downcast_ref::<Blocked>() {
            return Some(b.clone());
        }
        cur = c.source();
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn internal_addresses_and_their_ipv6_forms_are_refused() {
        for a in [
            "127.0.0.1",
            "127.0.0.2",
            "10.1.2.3",
            "172.16.0.1",
            "192.168.1.1",
            "100.64.0.1",
            "100.127.255.255",
            "169.254.169.254",
            "224.0.0.1",
            "0.0.0.0",
            "255.255.255.255",
            "::1",
            "::",
            "fc00::1",
            "fd12::1",
            "fe80::1",
            "ff02::1",
            "::ffff:127.0.0.1",
            "::ffff:10.0.0.1",
            "::127.0.0.1",
            "64:ff9b::10.0.0.1",
        ] {
            assert!(refused_class(ip(a)).is_some(), "{a}");
        }
        for a in ["93.184.216.34", "100.128.0.1", "2606:4700::1111", "8.8.8.8"] {
            assert_eq!(refused_class(ip(a)), None, "{a}");
        }
    }

    #[test]
    fn an_allowed_range_or_name_lets_an_internal_address_through() {
        let p = Policy::guarded(&["192.168.1.0/24", "Maloja.lan."]).unwrap();
        assert!(p.check_ip("x", ip("192.168.1.20")).is_ok());
        assert!(p.check_ip("x", ip("::ffff:192.168.1.20")).is_ok());
        assert!(p.check_ip("x", ip("192.168.2.20")).is_err());
        assert!(p.host_allowed("maloja.lan"));
        assert!(!p.host_allowed("other.lan"));
        assert!(Policy::guarded(&["not a host"]).is_err());
        assert!(Policy::guarded(&["10.0.0.0/33"]).is_err());
        let e = Policy::default()
            .check_url(&reqwest::Url::parse("http://127.0.0.2:9/x").unwrap())
            .unwrap_err();
        assert_eq!(e.class, "a loopback address");
        assert!(e.to_string().contains("[outbound] allow"), "{e}");
        assert!(Policy::open()
            .check_url(&reqwest::Url::parse("http://127.0.0.2:9/x").unwrap())
            .is_ok());
    }

    #[tokio::test]
    async fn a_name_that_resolves_to_loopback_is_refused_at_connect_time() {
        let c = Policy::default()
            .client("test", Duration::from_secs(5), Duration::from_secs(5))
            .unwrap();
        let e = c
            .get("http://localhost:9/")
            .unwrap()
            .send()
            .await
            .unwrap_err();
        let b = blocked_in(&e).expect("refused by the resolver");
        assert_eq!(b.class, "a loopback address");
    }
}
