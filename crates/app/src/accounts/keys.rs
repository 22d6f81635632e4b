//! The credentials a user holds besides the password, listed and revoked:
//!
//! - **OpenSubsonic API keys**, one per app (`apiKey=` on `/rest/…`):
//!   made by `spindle user apikey add NAME --app LABEL` or the web UI's
//!   settings, shown once, stored as the hex SHA-256 of the key. A key is
//!   160 random bits, so a fast hash is enough: nobody can search that
//!   space, and the accounts file alone does not let anyone log in. The
//!   first 12 hex digits of the hash are the key's public **id**, which
//!   names it in listings and revocations.
//! - **Last.fm session keys** (`sk`): stored as they are (the Last.fm
//!   protocol signs requests with them); a listing names each by its
//!   [`handle`], never by the key.
//! - **The ListenBrainz token**: one per user, replaced by
//!   [`Accounts::reset_token`] (the old one stops working at once).
//!
//! Format: `docs/accounts-format.md`.

use argon2::password_hash::rand_core::{OsRng, RngCore};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::{hex, random_hex, AccountError, Accounts, ApiKey, Data, Session};

/// What every OpenSubsonic API key starts with, so a person (or a secret
/// scanner) can tell one from a password or a ListenBrainz token.
pub const APP_KEY_PREFIX: &str = "spk_";

/// Most OpenSubsonic API keys one user may hold: 100 (an app per key; a
/// user with more is making them by script and should revoke some).
pub const MAX_APP_KEYS_PER_USER: usize = 100;

/// Longest name of the app a key is for: 64 characters.
pub const MAX_APP_LABEL: usize = 64;

/// Hex digits of a hash that name a key or session in listings: 12
/// (48 bits: no two of a user's keys share them by chance).
const HANDLE_LEN: usize = 12;

/// Fewest hex digits of a handle that a revocation accepts: 8.
const MIN_HANDLE_LEN: usize = 8;

/// An OpenSubsonic API key as stored (the key itself is not).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AppKey {
    /// Who the key logs in as.
    pub user: String,
    /// The app it was made for, as its user named it.
    pub app: String,
    pub created: i64,
}

/// What a revocation ended.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Revoked {
    /// A Last.fm session key (the client gets error 9 from then on).
    SessionKey { handle: String },
    /// An OpenSubsonic API key (error 44 from then on).
    AppKey { id: String, app: String },
}

fn sha256_hex(secret: &str) -> String {
    hex(&Sha256::digest(secret.as_bytes()))
}

/// The public name of a secret in listings: the first 12 hex digits of
/// its SHA-256. Knowing it does not help to guess the secret.
pub fn handle(secret: &str) -> String {
    let mut h = sha256_hex(secret);
    h.truncate(HANDLE_LEN);
    h
}

/// Whether `s` could be (part of) a handle: 8 or more hex digits.
fn handle_like(s: &str) -> bool {
    s.len() >= MIN_HANDLE_LEN && s.bytes().all(|b| b.is_ascii_hexdigit())
}

fn valid_label(app: &str) -> bool {
    let n = app.chars().count();
    (1..=MAX_APP_LABEL).contains(&n) && !app.chars().any(char::is_control)
}

/// The one entry of `items` that `what` names — the secret itself, or a
/// handle prefix of at least [`MIN_HANDLE_LEN`] digits — as (map key,
/// handle). `items` are (map key, hex hash of the secret).
fn find_one<'a>(
    what: &str,
    items: impl Iterator<Item = (&'a String, String)>,
) -> Result<Option<(String, String)>, AccountError> {
    let lower = what.to_ascii_lowercase();
    let mut found: Option<(String, String)> = None;
    for (key, hash) in items {
        let exact = key == what;
        let by_handle = handle_like(what) && hash.starts_with(&lower);
        if exact {
            let mut h = hash;
            h.truncate(HANDLE_LEN);
            return Ok(Some((key.clone(), h)));
        }
        if by_handle {
            if found.is_some() {
                return Err(AccountError::Ambiguous(what.into()));
            }
            let mut h = hash;
            h.truncate(HANDLE_LEN);
            found = Some((key.clone(), h));
        }
    }
    Ok(found)
}

/// Removes the session key `what` names (of `user` only, if given).
fn revoke_session_in(
    d: &mut Data,
    user: Option<&str>,
    what: &str,
) -> Result<Option<Revoked>, AccountError> {
    let hit = find_one(
        what,
        d.sessions
            .iter()
            .filter(|(_, s)| user.is_none_or(|u| s.user == u))
            .map(|(k, _)| (k, sha256_hex(k))),
    )?;
    Ok(hit.map(|(sk, h)| {
        d.sessions.remove(&sk);
        Revoked::SessionKey { handle: h }
    }))
}

/// Removes the API key `what` names — the key, or its id — (of `user`
/// only, if given).
fn revoke_app_key_in(
    d: &mut Data,
    user: Option<&str>,
    what: &str,
) -> Result<Option<Revoked>, AccountError> {
    let hashed = sha256_hex(what);
    let exact = d
        .app_keys
        .get(&hashed)
        .filter(|k| user.is_none_or(|u| k.user == u))
        .is_some();
    let hash = if exact {
        Some(hashed)
    } else {
        // The map key is the hash: match ids against it.
        find_one(
            what,
            d.app_keys
                .iter()
                .filter(|(_, k)| user.is_none_or(|u| k.user == u))
                .map(|(h, _)| (h, h.clone())),
        )?
        .map(|(h, _)| h)
    };
    Ok(hash.and_then(|h| {
        let k = d.app_keys.remove(&h)?;
        let mut id = h;
        id.truncate(HANDLE_LEN);
        Some(Revoked::AppKey { id, app: k.app })
    }))
}

impl Accounts {
    /// Makes an OpenSubsonic API key for `user`'s app `app`: the key
    /// (shown once: only its hash is kept) and its id.
    pub fn add_app_key(
        &self,
        user: &str,
        app: &str,
        now: i64,
    ) -> Result<(String, String), AccountError> {
        let app = app.trim();
        if !valid_label(app) {
            return Err(AccountError::InvalidAppLabel);
        }
        let mut bits = [0u8; 20];
        OsRng.fill_bytes(&mut bits);
        let key = format!("{APP_KEY_PREFIX}{}", hex(&bits));
        let hash = sha256_hex(&key);
        self.change(|d| {
            if !d.users.contains_key(user) {
                return Err(AccountError::NoSuchUser(user.into()));
            }
            if d.app_keys.values().filter(|k| k.user == user).count() >= MAX_APP_KEYS_PER_USER {
                return Err(AccountError::TooManyAppKeys(user.into()));
            }
            d.app_keys.insert(
                hash.clone(),
                AppKey {
                    user: user.into(),
                    app: app.into(),
                    created: now,
                },
            );
            Ok(())
        })?;
        let id = handle(&key);
        Ok((key, id))
    }

    /// Who an OpenSubsonic API key logs in as: one hash and one map
    /// lookup, so a stream authenticated by key costs microseconds.
    pub fn user_by_app_key(&self, key: &str) -> Option<String> {
        if !key.starts_with(APP_KEY_PREFIX) {
            return None;
        }
        let hash = sha256_hex(key);
        self.lookup(|d| d.app_keys.get(&hash).map(|k| k.user.clone()))
    }

    /// The OpenSubsonic API keys, as (id, key), by user then age; of
    /// `user` only when given.
    pub fn app_keys(&self, user: Option<&str>) -> Vec<(String, AppKey)> {
        self.refresh();
        let mut v: Vec<(String, AppKey)> = self
            .read()
            .app_keys
            .iter()
            .filter(|(_, k)| user.is_none_or(|u| k.user == u))
            .map(|(h, k)| (h[..HANDLE_LEN.min(h.len())].to_owned(), k.clone()))
            .collect();
        v.sort_by(|a, b| (&a.1.user, a.1.created).cmp(&(&b.1.user, b.1.created)));
        v
    }

    /// A user's Last.fm session keys, as (key, session), oldest first.
    /// The keys are credentials: show their [`handle`] instead.
    pub fn sessions_of(&self, user: &str) -> Vec<(String, Session)> {
        self.refresh();
        let mut v: Vec<(String, Session)> = self
            .read()
            .sessions
            .iter()
            .filter(|(_, s)| s.user == user)
            .map(|(k, s)| (k.clone(), s.clone()))
            .collect();
        v.sort_by_key(|(_, s)| s.created);
        v
    }

    /// Every user's Last.fm session keys, as (key, session), by user then
    /// age.
    pub fn all_sessions(&self) -> Vec<(String, Session)> {
        self.refresh();
        let mut v: Vec<(String, Session)> = self
            .read()
            .sessions
            .iter()
            .map(|(k, s)| (k.clone(), s.clone()))
            .collect();
        v.sort_by(|a, b| (&a.1.user, a.1.created).cmp(&(&b.1.user, b.1.created)));
        v
    }

    /// The Last.fm API keys (key, its secret and note), oldest first.
    pub fn api_keys(&self) -> Vec<(String, ApiKey)> {
        self.refresh();
        let mut v: Vec<(String, ApiKey)> = self
            .read()
            .api_keys
            .iter()
            .map(|(k, a)| (k.clone(), a.clone()))
            .collect();
        v.sort_by_key(|(_, a)| a.created);
        v
    }

    /// Removes a Last.fm API key and the session keys issued under it
    /// (they could no longer sign a request); false if there was none.
    pub fn delete_api_key(&self, key: &str) -> Result<bool, AccountError> {
        self.change(|d| {
            let had = d.api_keys.remove(key).is_some();
            if had {
                d.sessions.retain(|_, s| s.api_key != key);
            }
            Ok(had)
        })
    }

    /// Gives a user a new ListenBrainz token (the one that is also an
    /// OpenSubsonic `apiKey` and a `/metrics` bearer); the old one stops
    /// working at once.
    pub fn reset_token(&self, name: &str) -> Result<String, AccountError> {
        let fresh = random_hex();
        self.change_user(name, |u| u.token = Some(fresh.clone()))?;
        Ok(fresh)
    }

    /// Whether the user has a ListenBrainz token yet.
    pub fn has_token(&self, name: &str) -> bool {
        self.lookup(|d| d.users.get(name)?.token.as_ref().map(|_| ()))
            .is_some()
    }

    /// Revokes one of `user`'s credentials: a Last.fm session key or an
    /// OpenSubsonic API key, named by the secret itself or by (a prefix
    /// of at least 8 digits of) its handle or id. `Ok(None)`: nothing of
    /// the user's matched.
    pub fn revoke(&self, user: &str, what: &str) -> Result<Option<Revoked>, AccountError> {
        self.revoke_as(Some(user), what, true, true)
    }

    /// [`Accounts::revoke`] over every user's credentials.
    pub fn revoke_any(&self, what: &str) -> Result<Option<Revoked>, AccountError> {
        self.revoke_as(None, what, true, true)
    }

    /// Revokes any user's Last.fm session key, named by key or handle.
    pub fn revoke_session_key(&self, what: &str) -> Result<Option<Revoked>, AccountError> {
        self.revoke_as(None, what, true, false)
    }

    /// Revokes any user's OpenSubsonic API key, named by key or id.
    pub fn revoke_app_key(&self, what: &str) -> Result<Option<Revoked>, AccountError> {
        self.revoke_as(None, what, false, true)
    }

    fn revoke_as(
        &self,
        user: Option<&str>,
        what: &str,
        sessions: bool,
        apps: bool,
    ) -> Result<Option<Revoked>, AccountError> {
        let what = what.trim();
        if what.is_empty() {
            return Ok(None);
        }
        self.change(|d| {
            if let Some(u) = user {
                if !d.users.contains_key(u) {
                    return Err(AccountError::NoSuchUser(u.into()));
                }
            }
            if apps {
                if let Some(r) = revoke_app_key_in(d, user, what)? {
                    return Ok(Some(r));
                }
            }
            if sessions {
                return revoke_session_in(d, user, what);
            }
            Ok(None)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn store() -> (tempfile::TempDir, Accounts) {
        let dir = tempfile::tempdir().unwrap();
        let a = Accounts::open(dir.path()).unwrap();
        a.add_user_cheaply("ann", "pw");
        a.add_user_cheaply("bob", "pw");
        (dir, a)
    }

    #[test]
    fn an_app_key_logs_in_as_its_user_only_and_is_stored_hashed() {
        let (dir, a) = store();
        let (key, id) = a.add_app_key("ann", "Symfonium", 5).unwrap();
        assert!(key.starts_with(APP_KEY_PREFIX) && key.len() > 40, "{key}");
        assert_eq!(a.user_by_app_key(&key).as_deref(), Some("ann"));
        assert_eq!(a.user_by_app_key(&format!("{key}x")), None);
        assert_eq!(a.user_by_app_key(&id), None, "the id is no credential");
        let text = std::fs::read_to_string(dir.path().join(super::super::ACCOUNTS_FILE)).unwrap();
        assert!(!text.contains(&key), "the key itself is not stored");
        assert!(text.contains(&sha256_hex(&key)));
        let listed = a.app_keys(Some("ann"));
        assert_eq!(listed.len(), 1);
        assert_eq!(listed[0].0, id);
        assert_eq!(listed[0].1.app, "Symfonium");
        assert!(a.app_keys(Some("bob")).is_empty());
        // Survives a reopen.
        let b = Accounts::open(dir.path()).unwrap();
        assert_eq!(b.user_by_app_key(&key).as_deref(), Some("ann"));
    }

    #[test]
    fn bad_app_names_and_unknown_users_get_no_key() {
        let (_dir, a) = store();
        for bad in ["", "   ", "tab\there", &"x".repeat(MAX_APP_LABEL + 1)] {
            assert!(
                matches!(
                    a.add_app_key("ann", bad, 0),
                    Err(AccountError::InvalidAppLabel)
                ),
                "{bad:?}"
            );
        }
        assert!(matches!(
            a.add_app_key("nobody", "app", 0),
            Err(AccountError::NoSuchUser(_))
        ));
    }

    #[test]
    fn a_user_may_hold_at_most_the_limit_of_app_keys() {
        let (_dir, a) = store();
        for i in 0..MAX_APP_KEYS_PER_USER {
            a.add_app_key("ann", &format!("app {i}"), 0).unwrap();
        }
        assert!(matches!(
            a.add_app_key("ann", "one more", 0),
            Err(AccountError::TooManyAppKeys(_))
        ));
        a.add_app_key("bob", "his own", 0).unwrap();
    }

    #[test]
    fn revoking_by_key_or_id_ends_only_that_key_and_only_for_its_owner() {
        let (_dir, a) = store();
        let (k1, id1) = a.add_app_key("ann", "phone", 0).unwrap();
        let (k2, _id2) = a.add_app_key("ann", "desktop", 1).unwrap();
        // bob cannot revoke ann's key, even knowing it.
        assert_eq!(a.revoke("bob", &k1).unwrap(), None);
        assert_eq!(
            a.revoke("ann", &id1[..8]).unwrap(),
            Some(Revoked::AppKey {
                id: id1.clone(),
                app: "phone".into()
            })
        );
        assert_eq!(a.user_by_app_key(&k1), None);
        assert_eq!(a.user_by_app_key(&k2).as_deref(), Some("ann"));
        assert_eq!(
            a.revoke_session_key(&k2).unwrap(),
            None,
            "not a session key"
        );
        assert!(matches!(
            a.revoke_app_key(&k2).unwrap(),
            Some(Revoked::AppKey { .. })
        ));
        assert_eq!(a.user_by_app_key(&k2), None);
        assert_eq!(a.revoke("ann", "").unwrap(), None);
        assert!(matches!(
            a.revoke("nobody", "abc"),
            Err(AccountError::NoSuchUser(_))
        ));
    }

    #[test]
    fn session_keys_are_listed_per_user_and_revoked_by_key_or_handle() {
        let (_dir, a) = store();
        let s1 = a.new_session("ann", "k", 1).unwrap();
        let s2 = a.new_session("ann", "k", 2).unwrap();
        let s3 = a.new_session("bob", "k", 3).unwrap();
        let ann: Vec<String> = a.sessions_of("ann").into_iter().map(|(k, _)| k).collect();
        assert_eq!(ann, [s1.clone(), s2.clone()]);
        assert_eq!(a.all_sessions().len(), 3);
        assert_eq!(a.revoke("bob", &handle(&s1)).unwrap(), None, "not his");
        assert_eq!(
            a.revoke("ann", &handle(&s1)).unwrap(),
            Some(Revoked::SessionKey {
                handle: handle(&s1)
            })
        );
        assert!(a.session(&s1).is_none());
        assert!(matches!(
            a.revoke("ann", &s2).unwrap(),
            Some(Revoked::SessionKey { .. })
        ));
        assert!(a.session(&s2).is_none() && a.session(&s3).is_some());
        // A handle shorter than 8 digits names nothing.
        assert_eq!(a.revoke_any(&handle(&s3)[..6]).unwrap(), None);
    }

    #[test]
    fn deleting_an_api_key_ends_the_sessions_issued_under_it() {
        let (_dir, a) = store();
        let (k1, _) = a.add_api_key("scrobbler", 1).unwrap();
        let (k2, _) = a.add_api_key("other", 2).unwrap();
        let s1 = a.new_session("ann", &k1, 1).unwrap();
        let s2 = a.new_session("ann", &k2, 1).unwrap();
        let keys: Vec<String> = a.api_keys().into_iter().map(|(k, _)| k).collect();
        assert_eq!(keys, [k1.clone(), k2.clone()]);
        assert!(a.delete_api_key(&k1).unwrap());
        assert!(!a.delete_api_key(&k1).unwrap());
        assert!(a.api_secret(&k1).is_none());
        assert!(a.session(&s1).is_none() && a.session(&s2).is_some());
    }

    #[test]
    fn a_reset_token_replaces_the_old_one() {
        let (_dir, a) = store();
        assert!(!a.has_token("ann"));
        let old = a.user_token("ann").unwrap();
        assert!(a.has_token("ann"));
        let new = a.reset_token("ann").unwrap();
        assert_ne!(old, new);
        assert_eq!(a.user_by_token(&old), None);
        assert_eq!(a.user_by_token(&new).as_deref(), Some("ann"));
        assert_eq!(a.user_token("ann").unwrap(), new);
        assert!(matches!(
            a.reset_token("nobody"),
            Err(AccountError::NoSuchUser(_))
        ));
    }

    #[test]
    fn a_deleted_users_app_keys_stop_working() {
        let (_dir, a) = store();
        let (key, _) = a.add_app_key("bob", "app", 0).unwrap();
        a.delete_user("bob").unwrap();
        assert_eq!(a.user_by_app_key(&key), None);
        assert!(a.app_keys(None).is_empty());
    }
}
