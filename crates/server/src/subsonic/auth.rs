//! Who is asking: Subsonic's `u`+`p` (plain or `enc:` hex), `u`+`t`+`s`
//! (t = md5(password + salt)) and OpenSubsonic's `apiKey`
//! (`apiKeyAuthentication`): a per-app key (`spindle user apikey add NAME
//! --app LABEL`, or the web UI's settings; see [`crate::accounts::AppKey`])
//! or, as before per-app keys existed, the user's token (the one
//! `spindle user token NAME` prints). A key logs in as its user only;
//! `apiKey` with `u` is error 43, an unknown or revoked key error 44.
//! `tokenInfo` names the user behind the key. Every check goes through
//! the server's [`crate::auth_guard::AuthGuard`]: throttled per address
//! and account, an unknown user answered as a wrong password.

use std::net::IpAddr;

use super::response::Node;
use super::{Ctx, SubsonicError, SyncResult};
use crate::accounts::constant_eq;
use crate::auth_guard::Denied;
use crate::params::Params;
use crate::state::AppState;

/// The API's name in log lines.
const VIA: &str = "subsonic";

/// A guard's refusal in Subsonic's words: a wrong credential (and a wait,
/// which has no code of its own) under the code of a wrong password or,
/// for an API key (`api_key`), of a wrong key; a full hashing pool as a
/// generic error.
fn denied(d: Denied, api_key: bool) -> SubsonicError {
    match d {
        Denied::Wrong if api_key => SubsonicError::InvalidApiKey,
        Denied::Wrong => SubsonicError::WrongCredentials,
        Denied::Wait { retry_after } => SubsonicError::LoginsThrottled {
            api_key,
            retry_after,
        },
        Denied::Busy => SubsonicError::HashingBusy,
    }
}

fn unhex(s: &str) -> Option<String> {
    if s.len() & 1 == 1 {
        return None;
    }
    let bytes: Option<Vec<u8>> = (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok())
        .collect();
    String::from_utf8(bytes?).ok()
}

/// The user a request from `ip` authenticates as.
pub(crate) async fn authenticate(
    p: &Params,
    st: &AppState,
    ip: Option<IpAddr>,
) -> Result<String, SubsonicError> {
    let (accounts, guard) = (&st.accounts, &st.guard);
    if let Some(key) = p.get("apiKey") {
        if p.get("u").is_some() {
            return Err(SubsonicError::ConflictingAuth);
        }
        return guard
            .check(ip, None, VIA, || {
                accounts
                    .user_by_app_key(key)
                    .or_else(|| accounts.user_by_token(key))
            })
            .map_err(|d| denied(d, true));
    }
    let Some(user) = p.nonempty("u") else {
        return Err(SubsonicError::Missing("u"));
    };
    // An empty `p` beside a token is a client filling in a field it does
    // not use: absent, not a wrong password.
    if let Some(pw) = p.nonempty("p") {
        let pw = match pw.strip_prefix("enc:") {
            Some(hex) => unhex(hex),
            None => Some(pw.to_owned()),
        };
        // A user without a sealed copy has only the Argon2 hash.
        if let Some(pw) = &pw {
            if accounts.user_exists(user) && accounts.password(user).is_none() {
                return guard
                    .password(accounts, ip, user, pw, VIA)
                    .await
                    .map(|()| user.to_owned())
                    .map_err(|d| denied(d, false));
            }
        }
        // The sealed password compares in constant time and costs no
        // Argon2 run; an unknown user fails the same way, as fast.
        return guard
            .check(ip, Some(user), VIA, || {
                let stored = accounts.password(user)?;
                constant_eq(stored.as_bytes(), pw?.as_bytes()).then(|| user.to_owned())
            })
            .map_err(|d| denied(d, false));
    }
    match (p.nonempty("t"), p.nonempty("s")) {
        (Some(t), Some(s)) => {
            if accounts.user_exists(user) && accounts.password(user).is_none() {
                return Err(SubsonicError::TokenNotSupported);
            }
            guard
                .check(ip, Some(user), VIA, || {
                    accounts
                        .check_salted_token(user, t, s)
                        .then(|| user.to_owned())
                })
                .map_err(|d| denied(d, false))
        }
        _ => Err(SubsonicError::Missing("p, or t and s")),
    }
}

/// `tokenInfo` (OpenSubsonic `apiKeyAuthentication`): the user the
/// request's key (or other credentials) logged in as.
pub(crate) fn token_info(c: &mut Ctx) -> SyncResult {
    Ok(Some(Node::new("tokenInfo").s("username", &c.user)))
}

#[cfg(test)]
mod tests {
    use crate::subsonic::testkit::Kit;

    /// `method` with an `apiKey` (and `extra`, plain ASCII), as JSON.
    async fn with_key(
        k: &Kit,
        method: &str,
        key: &str,
        extra: &[(&str, &str)],
    ) -> serde_json::Value {
        let mut uri = format!("/rest/{method}?apiKey={key}&v=1.16.1&c=t&f=json");
        for (n, v) in extra {
            uri.push_str(&format!("&{n}={v}"));
        }
        let (_, _, body) = k.get(&uri).await;
        serde_json::from_slice(&body).unwrap()
    }

    #[tokio::test]
    async fn a_per_app_key_logs_in_as_its_user_until_it_is_revoked() {
        let k = Kit::new();
        let (key, id) = k.state.accounts.add_app_key("bob", "Feishin", 0).unwrap();
        let r = with_key(&k, "tokenInfo", &key, &[]).await;
        assert_eq!(r["subsonic-response"]["status"], "ok", "{r}");
        assert_eq!(r["subsonic-response"]["tokenInfo"]["username"], "bob");
        // bob's key does not make him an administrator or anyone else.
        let r = with_key(&k, "startScan", &key, &[]).await;
        assert_eq!(r["subsonic-response"]["error"]["code"], 50);
        k.state.accounts.revoke("bob", &id).unwrap().unwrap();
        let r = with_key(&k, "ping", &key, &[]).await;
        assert_eq!(r["subsonic-response"]["error"]["code"], 44, "{r}");
    }

    #[tokio::test]
    async fn the_token_still_works_as_an_api_key_until_it_is_reset() {
        let k = Kit::new();
        let old = k.state.accounts.user_token("ann").unwrap();
        let r = with_key(&k, "tokenInfo", &old, &[]).await;
        assert_eq!(
            r["subsonic-response"]["tokenInfo"]["username"], "ann",
            "{r}"
        );
        let new = k.state.accounts.reset_token("ann").unwrap();
        let r = with_key(&k, "ping", &old, &[]).await;
        assert_eq!(r["subsonic-response"]["error"]["code"], 44);
        let r = with_key(&k, "ping", &new, &[]).await;
        assert_eq!(r["subsonic-response"]["status"], "ok");
    }

    #[tokio::test]
    async fn an_api_key_with_a_user_name_is_error_43_and_a_wrong_key_44() {
        let k = Kit::new();
        let (key, _) = k.state.accounts.add_app_key("ann", "app", 0).unwrap();
        let r = with_key(&k, "ping", &key, &[("u", "ann")]).await;
        assert_eq!(r["subsonic-response"]["error"]["code"], 43);
        let r = with_key(&k, "ping", "spk_0000", &[]).await;
        assert_eq!(r["subsonic-response"]["error"]["code"], 44);
    }
}
