//! Who is asking: Subsonic's `u`+`p` (plain or `enc:` hex), `u`+`t`+`s`
//! (t = md5(password + salt)) and OpenSubsonic's `apiKey` (a user's token,
//! the one `spindle user token NAME` prints).

use crate::accounts::Accounts;
use crate::params::Params;

/// A refusal, as a Subsonic error code and message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    pub code: u32,
    pub message: &'static str,
}

const fn refuse(code: u32, message: &'static str) -> Refusal {
    Refusal { code, message }
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
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

/// The user a request authenticates as.
pub fn authenticate(p: &Params, accounts: &Accounts) -> Result<String, Refusal> {
    if let Some(key) = p.get("apiKey") {
        if p.get("u").is_some() {
            return Err(refuse(
                43,
                "Multiple conflicting authentication mechanisms provided",
            ));
        }
        return accounts
            .user_by_token(key)
            .ok_or(refuse(44, "Invalid API key"));
    }
    let Some(user) = p.nonempty("u") else {
        return Err(refuse(10, "Required parameter is missing: u"));
    };
    let wrong = refuse(40, "Wrong username or password");
    if let Some(pw) = p.get("p") {
        let pw = match pw.strip_prefix("enc:") {
            Some(hex) => unhex(hex).ok_or(wrong.clone())?,
            None => pw.to_owned(),
        };
        // The sealed password compares in constant time and costs no
        // Argon2 run per request; the hash is the fallback.
        let good = match accounts.password(user) {
            Some(stored) => constant_time_eq(stored.as_bytes(), pw.as_bytes()),
            None => accounts.check_password(user, &pw),
        };
        return if good {
            Ok(user.to_owned())
        } else {
            Err(wrong)
        };
    }
    match (p.get("t"), p.get("s")) {
        (Some(t), Some(s)) => {
            if accounts.user_exists(user) && accounts.password(user).is_none() {
                return Err(refuse(
                    41,
                    "Token authentication not supported for this user; send the password",
                ));
            }
            if accounts.check_salted_token(user, t, s) {
                Ok(user.to_owned())
            } else {
                Err(wrong)
            }
        }
        _ => Err(refuse(10, "Required parameter is missing: p, or t and s")),
    }
}
