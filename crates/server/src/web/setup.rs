//! First run: while no user exists, the page offers to create the first
//! user, an administrator, instead of the login form.
//!
//! Who may: a browser on this machine (a loopback peer that came through
//! no proxy: a request carrying `X-Forwarded-For`, `X-Real-IP` or
//! `Forwarded` is treated as remote, since a proxy on this host makes
//! every visitor look local), or anyone who gives the one-time *setup
//! code* that the server makes at start when there are no users and that
//! `spindle serve` prints. The code is compared in constant time and
//! consumed by the first success; one claim runs at a time, so two
//! browsers racing cannot both become the first administrator. Once a
//! user exists (made here, or with `spindle user add`), setup answers
//! `409` and the page shows the login form.

use std::net::IpAddr;
use std::sync::Mutex;

use argon2::password_hash::rand_core::{OsRng, RngCore};
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::IntoResponse;
use axum::Json;
use serde::Deserialize;
use serde_json::json;

use super::extract::{Csrf, SmallJson};
use super::{WebError, WebResult};
use crate::accounts::{constant_eq, Accounts, Profile, Roles};
use crate::auth_guard::ClientIp;
use crate::state::{lock, AppState};

/// Characters of a setup code: Crockford's base 32 (no I, L, O or U), so
/// a code read off a terminal is typed right; an `O` typed is read as
/// `0`, an `I` or `L` as `1`.
const ALPHABET: &[u8; 32] = b"0123456789ABCDEFGHJKMNPQRSTVWXYZ";
/// Groups of four characters in a code, and so its strength: three
/// groups of four 5-bit symbols, 60 bits.
pub const SETUP_CODE_GROUPS: usize = 3;

/// The first-run state of a server: the setup code while there is no
/// user, and the lock one claim holds.
pub struct FirstRun {
    code: Mutex<Option<String>>,
    claim: Mutex<()>,
}

impl FirstRun {
    /// A setup code if `accounts` holds no user, else none.
    pub fn new(accounts: &Accounts) -> FirstRun {
        let code = accounts.user_names().is_empty().then(new_code);
        FirstRun {
            code: Mutex::new(code),
            claim: Mutex::new(()),
        }
    }

    /// Whether `given` is the code (constant time); false once consumed.
    fn matches(&self, given: &str) -> bool {
        let given = normalise(given);
        lock(&self.code)
            .as_deref()
            .is_some_and(|c| constant_eq(normalise(c).as_bytes(), given.as_bytes()))
    }
}

/// A fresh code, e.g. `K7QM-3XWD-PA9F`.
fn new_code() -> String {
    let mut bytes = [0u8; 4 * SETUP_CODE_GROUPS];
    OsRng.fill_bytes(&mut bytes);
    let chars: Vec<char> = bytes
        .iter()
        .map(|b| char::from(ALPHABET[usize::from(*b & 31)]))
        .collect();
    chars
        .chunks(4)
        .map(|c| c.iter().collect::<String>())
        .collect::<Vec<_>>()
        .join("-")
}

/// Upper case without dashes or spaces, O as 0 and I, L as 1: how a
/// code is compared.
fn normalise(code: &str) -> String {
    code.chars()
        .filter(|c| c.is_ascii_alphanumeric())
        .map(|c| match c.to_ascii_uppercase() {
            'O' => '0',
            'I' | 'L' => '1',
            c => c,
        })
        .collect()
}

impl AppState {
    /// The setup code, while no user exists (for `spindle serve` to
    /// print); `None` once there is a user.
    pub fn setup_code(&self) -> Option<String> {
        if !self.accounts.user_names().is_empty() {
            return None;
        }
        lock(&self.web.first_run.code).clone()
    }
}

/// Whether the request comes from this machine without a proxy: a
/// loopback peer with no forwarding header, on a server with no trusted
/// proxy configured. Where `[proxy] trusted` names one, a proxy on this
/// machine that sets no header would make every visitor look local, so
/// everyone gives the setup code.
fn is_local(st: &AppState, ip: Option<IpAddr>, h: &HeaderMap) -> bool {
    st.config.proxy.trusted.is_empty() && is_local_peer(ip, h)
}

/// A loopback peer with no forwarding header.
fn is_local_peer(ip: Option<IpAddr>, h: &HeaderMap) -> bool {
    let proxied = ["x-forwarded-for", "x-real-ip", "forwarded"]
        .iter()
        .any(|n| h.contains_key(*n));
    !proxied && ip.is_some_and(|ip| ip.is_loopback())
}

fn no_users(st: &AppState) -> bool {
    st.accounts.refresh();
    st.accounts.user_names().is_empty()
}

/// `GET /ui/api/setup`: `{"needed": bool, "local": bool}` — whether the
/// server has no user yet, and whether this browser may create the first
/// one without the setup code.
pub(super) async fn status(
    State(st): State<AppState>,
    ClientIp(ip): ClientIp,
    h: HeaderMap,
) -> WebResult {
    // Whether there are users is read from the accounts file.
    let needed = st.call(no_users).await?;
    Ok(Json(json!({ "needed": needed, "local": is_local(&st, ip, &h) })).into_response())
}

#[derive(Deserialize)]
pub(super) struct SetupForm {
    user: String,
    password: String,
    #[serde(default)]
    code: String,
}

/// `POST /ui/setup` `{"user", "password", "code"}`: creates the first
/// user as an administrator and logs the browser in.
pub(super) async fn create(
    State(st): State<AppState>,
    ClientIp(ip): ClientIp,
    h: HeaderMap,
    _: Csrf,
    SmallJson(form): SmallJson<SetupForm>,
) -> WebResult {
    let local = is_local(&st, ip, &h);
    let user = st.call(move |st| claim(st, local, ip, form)).await??;
    Ok(super::logged_in(&st, &user, true, &h, ip))
}

/// Makes the first user from `form`, if there is none and this browser
/// may (`local`, or the setup code); one claim at a time. Blocking.
fn claim(st: &AppState, local: bool, ip: Option<IpAddr>, form: SetupForm) -> WebResult<String> {
    let first_run = &st.web.first_run;
    let _one = lock(&first_run.claim);
    if !no_users(st) {
        return Err(WebError::new(
            StatusCode::CONFLICT,
            "this server already has users: log in instead",
        ));
    }
    if !local && !first_run.matches(&form.code) {
        tracing::warn!(client = ?ip, "first-user setup refused: wrong or missing setup code");
        return Err(WebError::new(
            StatusCode::FORBIDDEN,
            "from another machine, enter the setup code that `spindle serve` printed",
        ));
    }
    let profile = Profile {
        roles: Roles::ALL,
        ..Profile::default()
    };
    st.accounts
        .add_user_with(&form.user, &form.password, st.now(), profile)
        .map_err(|e| WebError::bad_request(e.to_string()))?;
    *lock(&first_run.code) = None;
    tracing::info!(user = %form.user, "first user created, as administrator");
    Ok(form.user)
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    #[test]
    fn a_code_has_three_groups_of_four_unambiguous_characters() {
        let c = new_code();
        let groups: Vec<&str> = c.split('-').collect();
        assert_eq!(groups.len(), SETUP_CODE_GROUPS, "{c}");
        for g in groups {
            assert_eq!(g.len(), 4, "{c}");
            assert!(g.bytes().all(|b| ALPHABET.contains(&b)), "{c}");
        }
        assert_ne!(new_code(), c, "random");
    }

    #[test]
    fn a_code_matches_typed_in_lower_case_or_without_dashes_and_not_once_consumed() {
        let dir = tempfile::tempdir().unwrap();
        let acc = Accounts::open(dir.path()).unwrap();
        let fr = FirstRun::new(&acc);
        let code = lock(&fr.code).clone().unwrap();
        assert!(fr.matches(&code));
        assert!(fr.matches(&code.to_lowercase().replace('-', " ")));
        assert!(!fr.matches(""));
        assert!(!fr.matches(&code[..code.len() - 1]));
        *lock(&fr.code) = None;
        assert!(!fr.matches(&code));
    }

    #[test]
    fn no_code_is_made_when_a_user_exists() {
        let dir = tempfile::tempdir().unwrap();
        let acc = Accounts::open(dir.path()).unwrap();
        acc.add_user_cheaply("ann", "pw");
        assert!(lock(&FirstRun::new(&acc).code).is_none());
    }

    #[test]
    fn only_a_loopback_peer_without_forwarding_headers_is_local() {
        let lo: Option<IpAddr> = Some("127.0.0.1".parse().unwrap());
        let v6: Option<IpAddr> = Some("::1".parse().unwrap());
        let lan: Option<IpAddr> = Some("192.168.1.9".parse().unwrap());
        let none = HeaderMap::new();
        let mut fwd = HeaderMap::new();
        fwd.insert("x-forwarded-for", HeaderValue::from_static("203.0.113.5"));
        assert!(is_local_peer(lo, &none) && is_local_peer(v6, &none));
        assert!(!is_local_peer(lan, &none));
        assert!(!is_local_peer(lo, &fwd), "a local proxy forwards strangers");
        assert!(!is_local_peer(None, &none));
    }

    #[test]
    fn with_a_trusted_proxy_configured_no_peer_is_local() {
        let dir = tempfile::tempdir().unwrap();
        let mut st = AppState::in_dir(dir.path(), 0);
        let lo: Option<IpAddr> = Some("127.0.0.1".parse().unwrap());
        let none = HeaderMap::new();
        assert!(is_local(&st, lo, &none));
        let mut cfg = (*st.config).clone();
        cfg.proxy.trusted = vec!["127.0.0.1".parse().unwrap()];
        st.config = std::sync::Arc::new(cfg);
        assert!(
            !is_local(&st, lo, &none),
            "a proxy on this machine that sets no header would make everyone local"
        );
    }
}
