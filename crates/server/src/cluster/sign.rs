//! What a replica says of a request it forwards to the primary, and how
//! the primary knows the replica said it (docs/cluster.md, "Writes on a
//! replica").
//!
//! A client may send any header to a replica: `Remote-User: admin`, its
//! own `X-Forwarded-For`. The replica therefore takes out every header
//! that says who the client is ([`strip_client_claims`]: `Forwarded`,
//! `X-Forwarded-*`, `X-Real-IP`, the configured user header, Spindle's
//! own) and sets its own from what it resolved itself with its own
//! `[proxy] trusted` — the client's address, whether it used HTTPS, and
//! the user a proxy it trusts logged in ([`USER_HEADER`]) — then signs
//! them: an HMAC-SHA256 over the method, the path, a timestamp and those
//! headers, under a key derived from the accounts' `secret.key`, which
//! every node of a cluster shares. The primary believes a forwarded
//! request's headers only when the signature verifies and the timestamp
//! is within [`MAX_SKEW_SECS`] of its clock ([`verify`]); otherwise it
//! treats the request as one from an untrusted peer.

use axum::http::{HeaderMap, HeaderName, HeaderValue};
use sha2::{Digest, Sha256};

use super::route::FORWARDED_BY_HEADER;

/// When the replica signed the request, UNIX seconds.
pub const TIME_HEADER: &str = "x-spindle-cluster-time";
/// The signature, hex.
pub const SIG_HEADER: &str = "x-spindle-cluster-sig";
/// The user a proxy the replica trusts logged in (its user header).
pub const USER_HEADER: &str = "x-spindle-cluster-user";
/// How far a signature's time may be from the primary's clock.
pub const MAX_SKEW_SECS: i64 = 300;

/// The headers a signature covers, in order, after the method, the path
/// and the time.
const SIGNED: [&str; 5] = [
    FORWARDED_BY_HEADER,
    "x-forwarded-for",
    "x-forwarded-proto",
    "host",
    USER_HEADER,
];

/// Headers that say who the client is: never passed on as a client sent
/// them.
const CLAIMS: [&str; 9] = [
    "forwarded",
    "x-forwarded-for",
    "x-forwarded-proto",
    "x-forwarded-host",
    "x-forwarded-port",
    "x-real-ip",
    USER_HEADER,
    TIME_HEADER,
    SIG_HEADER,
];

/// Removes from `h` every header by which a client could claim an
/// address, a protocol, a host or a user: the forwarding headers, the
/// configured `user_header`, [`crate::proxy::PROXY_USER`] and the
/// cluster's own.
pub fn strip_client_claims(h: &mut HeaderMap, user_header: Option<&HeaderName>) {
    for n in CLAIMS {
        h.remove(n);
    }
    h.remove(crate::proxy::PROXY_USER);
    h.remove(FORWARDED_BY_HEADER);
    if let Some(u) = user_header {
        h.remove(u);
    }
}

/// The key that signs forwarded requests, derived from the accounts'
/// 32-byte `secret.key` (so the sealing key itself signs nothing).
pub fn derive_key(secret_key: &[u8]) -> [u8; 32] {
    let mut d = Sha256::new();
    d.update(b"spindle cluster: forwarded requests, v1\0");
    d.update(secret_key);
    d.finalize().into()
}

fn hmac(key: &[u8; 32], msg: &[u8]) -> [u8; 32] {
    let mut ipad = [0x36u8; 64];
    let mut opad = [0x5cu8; 64];
    for (i, k) in key.iter().enumerate() {
        ipad[i] ^= k;
        opad[i] ^= k;
    }
    let inner = Sha256::new()
        .chain_update(ipad)
        .chain_update(msg)
        .finalize();
    Sha256::new()
        .chain_update(opad)
        .chain_update(inner)
        .finalize()
        .into()
}

fn message(method: &str, path: &str, time: &str, h: &HeaderMap) -> Vec<u8> {
    let mut m = format!("{method}\n{path}\n{time}\n").into_bytes();
    for n in SIGNED {
        let v = h.get(n).map_or(&b""[..], HeaderValue::as_bytes);
        m.extend_from_slice(v);
        m.push(b'\n');
    }
    m
}

/// Now, UNIX seconds (this node's clock).
pub fn unix_now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
}

/// Whether `h` carries any of the headers only a replica sets.
pub fn claims_a_replica(h: &HeaderMap) -> bool {
    [FORWARDED_BY_HEADER, TIME_HEADER, SIG_HEADER, USER_HEADER]
        .iter()
        .any(|n| h.contains_key(*n))
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// Adds [`TIME_HEADER`] (`now`) and [`SIG_HEADER`] to `h`, the headers
/// of a request `method path` (path with its query, as the primary will
/// see it).
pub fn sign(key: &[u8; 32], method: &str, path: &str, now: i64, h: &mut HeaderMap) {
    let time = now.to_string();
    let sig = hex(&hmac(key, &message(method, path, &time, h)));
    if let (Ok(t), Ok(s)) = (HeaderValue::from_str(&time), HeaderValue::from_str(&sig)) {
        h.insert(TIME_HEADER, t);
        h.insert(SIG_HEADER, s);
    }
}

/// Whether `h` carries a signature of this request by a node holding
/// `key`, made within [`MAX_SKEW_SECS`] of `now`.
pub fn verify(key: &[u8; 32], method: &str, path: &str, now: i64, h: &HeaderMap) -> bool {
    let (Some(time), Some(sig)) = (
        h.get(TIME_HEADER).and_then(|v| v.to_str().ok()),
        h.get(SIG_HEADER).and_then(|v| v.to_str().ok()),
    ) else {
        return false;
    };
    let Ok(t) = time.parse::<i64>() else {
        return false;
    };
    if (now - t).abs() > MAX_SKEW_SECS {
        return false;
    }
    let want = hex(&hmac(key, &message(method, path, time, h)));
    // Compared in constant time: the signature is a secret's function.
    want.len() == sig.len()
        && want
            .bytes()
            .zip(sig.bytes())
            .fold(0u8, |acc, (a, b)| acc | (a ^ b))
            == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hmac_matches_a_reference_implementation() {
        // HMAC-SHA256(key = 32 bytes of 0x0b, "Hi There"), as Python's
        // hmac module computes it.
        let key = [0x0bu8; 32];
        assert_eq!(
            hex(&hmac(&key, b"Hi There")),
            "198a607eb44bfbc69903a0f1cf2bbdc5ba0aa3f3d9ae3c1c7a3b1696a0b68cf7"
        );
    }

    #[test]
    fn a_changed_header_path_or_stale_time_fails_the_signature() {
        let key = derive_key(&[7u8; 32]);
        let mut h = HeaderMap::new();
        h.insert("x-forwarded-for", HeaderValue::from_static("192.0.2.1"));
        h.insert(USER_HEADER, HeaderValue::from_static("ann"));
        sign(&key, "POST", "/rest/star?id=1", 1000, &mut h);
        assert!(verify(&key, "POST", "/rest/star?id=1", 1010, &h));
        assert!(!verify(&key, "POST", "/rest/star?id=2", 1010, &h));
        assert!(!verify(&key, "GET", "/rest/star?id=1", 1010, &h));
        assert!(!verify(
            &key,
            "POST",
            "/rest/star?id=1",
            1000 + MAX_SKEW_SECS + 1,
            &h
        ));
        assert!(!verify(
            &derive_key(&[8u8; 32]),
            "POST",
            "/rest/star?id=1",
            1010,
            &h
        ));
        let mut admin = h.clone();
        admin.insert(USER_HEADER, HeaderValue::from_static("admin"));
        assert!(!verify(&key, "POST", "/rest/star?id=1", 1010, &admin));
    }

    /// A cluster of full servers: primary `a` trusting 127.0.0.1 (its
    /// replicas, as docs/cluster.md sets it up) with the trusted-header
    /// login `Remote-User`, and a replica of it trusting the proxies
    /// `trusted`; both share `a`'s accounts (so its `secret.key`). The
    /// primary's and the replica's addresses, and the guards.
    async fn cluster(
        trusted: &[&str],
    ) -> (
        std::net::SocketAddr,
        std::net::SocketAddr,
        [tempfile::TempDir; 2],
    ) {
        use crate::cluster::route::tests::{config, serve};
        use crate::cluster::{Role, ShipMode};
        use crate::proxy::ProxyConfig;
        use crate::AppState;
        let proxy = |trusted: &[&str]| ProxyConfig {
            trusted: trusted.iter().map(|t| t.parse().unwrap()).collect(),
            user_header: Some(HeaderName::from_static("remote-user")),
        };
        let (da, db) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let base = AppState::in_dir(da.path(), 1_750_000_000);
        base.accounts.add_user_cheaply("admin", "pw-admin");
        base.accounts.add_user_cheaply("ann", "pw-ann");
        assert!(base.accounts.is_admin("admin") && !base.accounts.is_admin("ann"));
        let settings = crate::Config {
            proxy: proxy(&["127.0.0.1"]),
            ..(*base.config).clone()
        };
        let accounts = base.accounts.clone();
        let a = AppState::new(
            base.db.clone(),
            base.accounts.clone(),
            base.listens.clone(),
            settings,
            base.clock.clone(),
        )
        .with_cluster(config("a", ShipMode::Async));
        a.cluster.set_role(Role::Primary, 1, None);
        let pa = serve(crate::router(a)).await;
        let other = AppState::in_dir(db.path(), 1_750_000_000);
        let settings = crate::Config {
            proxy: proxy(trusted),
            ..(*other.config).clone()
        };
        let b = AppState::new(
            other.db.clone(),
            accounts,
            other.listens.clone(),
            settings,
            other.clock.clone(),
        )
        .with_cluster(config("b", ShipMode::Async));
        b.cluster
            .set_role(Role::Replica, 1, Some(format!("http://{pa}")));
        let pb = serve(crate::router(b)).await;
        (pa, pb, [da, db])
    }

    /// `GET /ui/api/me` at `addr` with `headers`: the status and the user.
    async fn me(addr: std::net::SocketAddr, headers: &[(&str, &str)]) -> (u16, String) {
        let mut r = reqwest::Client::new().get(format!("http://{addr}/ui/api/me"));
        for (k, v) in headers {
            r = r.header(*k, *v);
        }
        let r = r.send().await.unwrap();
        let status = r.status().as_u16();
        let v: serde_json::Value =
            serde_json::from_str(&r.text().await.unwrap()).unwrap_or_default();
        (status, v["user"].as_str().unwrap_or("").to_owned())
    }

    #[tokio::test]
    async fn a_client_s_remote_user_sent_to_a_replica_is_not_the_primary_s_user() {
        // The replica trusts no proxy: the client reached it directly.
        let (pa, pb, _dirs) = cluster(&[]).await;
        let (status, user) = me(pb, &[("remote-user", "admin")]).await;
        assert_eq!(
            (status, user.as_str()),
            (401, ""),
            "the replica forwarded the claim"
        );
        // Nor with forwarding headers of its own making.
        let (status, user) = me(
            pb,
            &[
                ("remote-user", "admin"),
                ("x-forwarded-for", "127.0.0.1"),
                (USER_HEADER, "admin"),
                ("forwarded", "for=127.0.0.1"),
            ],
        )
        .await;
        assert_eq!((status, user.as_str()), (401, ""));
        // Straight to the primary, posing as a replica without a valid
        // signature: its headers are not believed either.
        let (status, user) = me(
            pa,
            &[
                ("remote-user", "admin"),
                (FORWARDED_BY_HEADER, "b"),
                (USER_HEADER, "admin"),
                (TIME_HEADER, "1"),
                (SIG_HEADER, "00"),
            ],
        )
        .await;
        assert_eq!((status, user.as_str()), (401, ""));
    }

    #[tokio::test]
    async fn the_user_a_replica_s_trusted_proxy_logged_in_reaches_the_primary_signed() {
        // The replica trusts 127.0.0.1, where the test's "proxy" is.
        let (_pa, pb, _dirs) = cluster(&["127.0.0.1"]).await;
        let (status, user) = me(pb, &[("remote-user", "ann")]).await;
        assert_eq!((status, user.as_str()), (200, "ann"));
    }
}
