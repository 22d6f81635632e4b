//! Who is asking: Subsonic's `u`+`p` (plain or `enc:` hex), `u`+`t`+`s`
//! (t = md5(password + salt)) and OpenSubsonic's `apiKey` (a user's token,
//! the one `spindle user token NAME` prints). Every check goes through
//! the server's [`crate::auth_guard::AuthGuard`]: throttled per address
//! and account, an unknown user answered as a wrong password.

use std::net::IpAddr;

use crate::accounts::constant_eq;
use crate::auth_guard::Denied;
use crate::params::Params;
use crate::state::AppState;

/// The API's name in log lines.
const VIA: &str = "subsonic";

/// A refusal, as a Subsonic error code and message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    pub code: u32,
    pub message: String,
}

fn refuse(code: u32, message: &str) -> Refusal {
    Refusal {
        code,
        message: message.to_owned(),
    }
}

const WRONG: &str = "Wrong username or password";

/// A guard's refusal in Subsonic's words: a wrong credential (and a wait,
/// which has no code of its own) under `code`, a full hashing pool as a
/// generic error.
fn denied(d: Denied, code: u32, wrong: &str) -> Refusal {
    match d {
        Denied::Wrong => refuse(code, wrong),
        Denied::Wait { retry_after } => Refusal {
            code,
            message: format!("Too many failed logins; try again in {retry_after} s"),
        },
        Denied::Busy => refuse(0, "The server is busy; try again shortly"),
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
pub async fn authenticate(
    p: &Params,
    st: &AppState,
    ip: Option<IpAddr>,
) -> Result<String, Refusal> {
    let (accounts, guard) = (&st.accounts, &st.guard);
    if let Some(key) = p.get("apiKey") {
        if p.get("u").is_some() {
            return Err(refuse(
                43,
                "Multiple conflicting authentication mechanisms provided",
            ));
        }
        return guard
            .check(ip, None, VIA, || accounts.user_by_token(key))
            .map_err(|d| denied(d, 44, "Invalid API key"));
    }
    let Some(user) = p.nonempty("u") else {
        return Err(refuse(10, "Required parameter is missing: u"));
    };
    if let Some(pw) = p.get("p") {
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
                    .map_err(|d| denied(d, 40, WRONG));
            }
        }
        // The sealed password compares in constant time and costs no
        // Argon2 run; an unknown user fails the same way, as fast.
        return guard
            .check(ip, Some(user), VIA, || {
                let stored = accounts.password(user)?;
                constant_eq(stored.as_bytes(), pw?.as_bytes()).then(|| user.to_owned())
            })
            .map_err(|d| denied(d, 40, WRONG));
    }
    match (p.get("t"), p.get("s")) {
        (Some(t), Some(s)) => {
            if accounts.user_exists(user) && accounts.password(user).is_none() {
                return Err(refuse(
                    41,
                    "Token authentication not supported for this user; send the password",
                ));
            }
            guard
                .check(ip, Some(user), VIA, || {
                    accounts
                        .check_salted_token(user, t, s)
                        .then(|| user.to_owned())
                })
                .map_err(|d| denied(d, 40, WRONG))
        }
        _ => Err(refuse(10, "Required parameter is missing: p, or t and s")),
    }
}
