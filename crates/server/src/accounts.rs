//! The accounts store: users, Last.fm-style session keys and API key
//! pairs, ListenBrainz-style user tokens. One JSON file in
//! `DATA_DIR/accounts/`, rewritten atomically on every change, plus the
//! key that seals stored passwords. Format: `docs/accounts-format.md`.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{RwLock, RwLockReadGuard, RwLockWriteGuard};

use argon2::password_hash::rand_core::{OsRng, RngCore};
use argon2::password_hash::{PasswordHash, PasswordHasher, PasswordVerifier, SaltString};
use argon2::Argon2;
use chacha20poly1305::aead::{Aead, KeyInit};
use chacha20poly1305::{ChaCha20Poly1305, Key, Nonce};
use serde::{Deserialize, Serialize};

pub const ACCOUNTS_FILE: &str = "accounts.json";
pub const KEY_FILE: &str = "secret.key";

/// An accounts operation failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AccountError {
    #[error("accounts store in {path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("accounts file {path} is damaged: {msg}")]
    Corrupt { path: PathBuf, msg: String },
    #[error("user '{0}' already exists")]
    UserExists(String),
    #[error("no user named '{0}'")]
    NoSuchUser(String),
    #[error("invalid user name '{0}': use 1-64 letters, digits, '.', '_' or '-'")]
    InvalidName(String),
    #[error("the password must not be empty")]
    EmptyPassword,
    #[error("hashing the password failed: {0}")]
    Hash(String),
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct User {
    /// Argon2id PHC string, for logins with the password itself.
    password_hash: String,
    /// The password sealed with ChaCha20-Poly1305 under `secret.key`
    /// (hex of nonce ‖ ciphertext), for schemes that need it:
    /// Last.fm's authToken and Subsonic's md5(password + salt).
    password_sealed: String,
    /// ListenBrainz-style token, once made.
    #[serde(default)]
    token: Option<String>,
    created: i64,
}

/// A Last.fm session key.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Session {
    pub user: String,
    pub api_key: String,
    pub created: i64,
}

/// An API key and its shared secret.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ApiKey {
    pub secret: String,
    #[serde(default)]
    pub name: String,
    pub created: i64,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
struct Data {
    version: u32,
    users: BTreeMap<String, User>,
    sessions: BTreeMap<String, Session>,
    api_keys: BTreeMap<String, ApiKey>,
}

/// The accounts store.
pub struct Accounts {
    dir: PathBuf,
    cipher: ChaCha20Poly1305,
    data: RwLock<Data>,
    /// (mtime, length) of the file as last read, to notice another
    /// process's changes (`spindle user add` beside a running server).
    seen: std::sync::Mutex<Option<(std::time::SystemTime, u64)>>,
}

/// 32 random bytes as lowercase hex.
pub fn random_hex() -> String {
    let mut b = [0u8; 16];
    OsRng.fill_bytes(&mut b);
    hex(&b)
}

pub fn hex(b: &[u8]) -> String {
    const H: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(b.len() * 2);
    for &x in b {
        s.push(H[(x >> 4) as usize] as char);
        s.push(H[(x & 15) as usize] as char);
    }
    s
}

fn unhex(s: &str) -> Option<Vec<u8>> {
    if !s.len().is_multiple_of(2) {
        return None;
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok())
        .collect()
}

/// md5 as lowercase hex.
pub fn md5_hex(data: &[u8]) -> String {
    use md5::{Digest, Md5};
    hex(&Md5::digest(data))
}

fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
}

impl Accounts {
    /// Opens (creating) the store in `dir`.
    pub fn open(dir: &Path) -> Result<Accounts, AccountError> {
        let io = |source| AccountError::Io {
            path: dir.to_owned(),
            source,
        };
        // Private whatever the umask: the folder holds every password.
        std::os::unix::fs::DirBuilderExt::mode(std::fs::DirBuilder::new().recursive(true), 0o700)
            .create(dir)
            .map_err(io)?;
        let key_path = dir.join(KEY_FILE);
        let key = match std::fs::read(&key_path) {
            Ok(k) if k.len() == 32 => k,
            Ok(_) => {
                return Err(AccountError::Corrupt {
                    path: key_path,
                    msg: "the key is not 32 bytes".into(),
                })
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                let mut k = vec![0u8; 32];
                OsRng.fill_bytes(&mut k);
                write_private(&key_path, &k).map_err(io)?;
                k
            }
            Err(e) => return Err(io(e)),
        };
        let path = dir.join(ACCOUNTS_FILE);
        let data = match std::fs::read(&path) {
            Ok(b) => serde_json::from_slice(&b).map_err(|e| AccountError::Corrupt {
                path: path.clone(),
                msg: e.to_string(),
            })?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Data {
                version: 1,
                ..Data::default()
            },
            Err(e) => return Err(io(e)),
        };
        let acc = Accounts {
            dir: dir.to_owned(),
            cipher: ChaCha20Poly1305::new(Key::from_slice(&key)),
            data: RwLock::new(data),
            seen: std::sync::Mutex::new(None),
        };
        *acc.seen.lock().unwrap_or_else(|e| e.into_inner()) = acc.stamp();
        Ok(acc)
    }

    fn stamp(&self) -> Option<(std::time::SystemTime, u64)> {
        let m = std::fs::metadata(self.dir.join(ACCOUNTS_FILE)).ok()?;
        Some((m.modified().ok()?, m.len()))
    }

    /// Re-reads the file if another process changed it.
    pub fn refresh(&self) {
        let now = self.stamp();
        let mut seen = self.seen.lock().unwrap_or_else(|e| e.into_inner());
        if now == *seen {
            return;
        }
        let path = self.dir.join(ACCOUNTS_FILE);
        if let Ok(d) = std::fs::read(&path)
            .map_err(|_| ())
            .and_then(|b| serde_json::from_slice::<Data>(&b).map_err(|_| ()))
        {
            *self.write() = d;
            *seen = now;
        }
    }

    /// Runs a lookup; on a miss, re-reads the file once and retries.
    fn lookup<T>(&self, f: impl Fn(&Data) -> Option<T>) -> Option<T> {
        if let Some(x) = f(&self.read()) {
            return Some(x);
        }
        self.refresh();
        f(&self.read())
    }

    fn read(&self) -> RwLockReadGuard<'_, Data> {
        self.data.read().unwrap_or_else(|e| e.into_inner())
    }

    fn write(&self) -> RwLockWriteGuard<'_, Data> {
        self.data.write().unwrap_or_else(|e| e.into_inner())
    }

    /// Applies a change and persists it; the change is kept in memory only
    /// if it reached the disk.
    fn change<T>(
        &self,
        f: impl FnOnce(&mut Data) -> Result<T, AccountError>,
    ) -> Result<T, AccountError> {
        self.refresh();
        let mut d = self.write();
        let mut next = d.clone();
        let out = f(&mut next)?;
        let bytes = serde_json::to_vec_pretty(&next).map_err(|e| AccountError::Corrupt {
            path: self.dir.join(ACCOUNTS_FILE),
            msg: e.to_string(),
        })?;
        let path = self.dir.join(ACCOUNTS_FILE);
        let tmp = self.dir.join(format!("{ACCOUNTS_FILE}.tmp"));
        let io = |source| AccountError::Io {
            path: path.clone(),
            source,
        };
        write_private(&tmp, &bytes).map_err(io)?;
        std::fs::rename(&tmp, &path).map_err(io)?;
        if let Ok(dir) = std::fs::File::open(&self.dir) {
            let _ = dir.sync_all();
        }
        *d = next;
        drop(d);
        *self.seen.lock().unwrap_or_else(|e| e.into_inner()) = self.stamp();
        Ok(out)
    }

    /// Adds a user with a password.
    pub fn add_user(&self, name: &str, password: &str, now: i64) -> Result<(), AccountError> {
        self.add_user_hashed_by(name, password, now, &Argon2::default())
    }

    /// [`Accounts::add_user`] with cheap Argon2 parameters (64 KiB, one
    /// pass), for tests that run many logins.
    #[cfg(test)]
    pub(crate) fn add_user_cheaply(&self, name: &str, password: &str) {
        let params = argon2::Params::new(64, 1, 1, None).expect("valid parameters");
        let argon = Argon2::new(argon2::Algorithm::Argon2id, argon2::Version::V0x13, params);
        self.add_user_hashed_by(name, password, 0, &argon)
            .expect("a test user");
    }

    fn add_user_hashed_by(
        &self,
        name: &str,
        password: &str,
        now: i64,
        argon: &Argon2<'_>,
    ) -> Result<(), AccountError> {
        if !valid_name(name) {
            return Err(AccountError::InvalidName(name.into()));
        }
        if password.is_empty() {
            return Err(AccountError::EmptyPassword);
        }
        let salt = SaltString::generate(&mut OsRng);
        let password_hash = argon
            .hash_password(password.as_bytes(), &salt)
            .map_err(|e| AccountError::Hash(e.to_string()))?
            .to_string();
        let mut nonce = [0u8; 12];
        OsRng.fill_bytes(&mut nonce);
        let ct = self
            .cipher
            .encrypt(Nonce::from_slice(&nonce), password.as_bytes())
            .map_err(|e| AccountError::Hash(e.to_string()))?;
        let mut sealed = nonce.to_vec();
        sealed.extend_from_slice(&ct);
        self.change(|d| {
            if d.users.contains_key(name) {
                return Err(AccountError::UserExists(name.into()));
            }
            d.users.insert(
                name.into(),
                User {
                    password_hash,
                    password_sealed: hex(&sealed),
                    token: None,
                    created: now,
                },
            );
            Ok(())
        })
    }

    pub fn user_exists(&self, name: &str) -> bool {
        self.lookup(|d| d.users.contains_key(name).then_some(()))
            .is_some()
    }

    pub fn user_names(&self) -> Vec<String> {
        self.read().users.keys().cloned().collect()
    }

    /// When the user was created.
    pub fn user_created(&self, name: &str) -> Option<i64> {
        self.lookup(|d| d.users.get(name).map(|u| u.created))
    }

    /// The user's Argon2 hash (PHC string), for the server's hashing pool
    /// ([`crate::auth_guard`]), which checks it with bounded memory.
    pub fn password_hash(&self, name: &str) -> Option<String> {
        self.lookup(|d| d.users.get(name).map(|u| u.password_hash.clone()))
    }

    /// Checks a password against the Argon2 hash, on the caller's thread
    /// (for the command line; the server goes through
    /// [`crate::auth_guard::AuthGuard::password`]).
    pub fn check_password(&self, name: &str, password: &str) -> bool {
        let Some(hash) = self.lookup(|d| d.users.get(name).map(|u| u.password_hash.clone())) else {
            return false;
        };
        let Ok(parsed) = PasswordHash::new(&hash) else {
            return false;
        };
        Argon2::default()
            .verify_password(password.as_bytes(), &parsed)
            .is_ok()
    }

    /// The stored password, unsealed (for token schemes that hash it with
    /// something the client chose).
    pub fn password(&self, name: &str) -> Option<String> {
        let sealed = unhex(&self.lookup(|d| Some(d.users.get(name)?.password_sealed.clone()))?)?;
        let (nonce, ct) = (sealed.get(..12)?, sealed.get(12..)?);
        let pt = self.cipher.decrypt(Nonce::from_slice(nonce), ct).ok()?;
        String::from_utf8(pt).ok()
    }

    /// Last.fm's mobile authToken: md5(name + md5(password)).
    pub fn check_auth_token(&self, name: &str, token: &str) -> bool {
        let Some(pw) = self.password(name) else {
            return false;
        };
        let want = md5_hex(format!("{name}{}", md5_hex(pw.as_bytes())).as_bytes());
        constant_eq(want.as_bytes(), token.to_ascii_lowercase().as_bytes())
    }

    /// Subsonic's token check: t = md5(password + salt).
    pub fn check_salted_token(&self, name: &str, token: &str, salt: &str) -> bool {
        let Some(pw) = self.password(name) else {
            return false;
        };
        let want = md5_hex(format!("{pw}{salt}").as_bytes());
        constant_eq(want.as_bytes(), token.to_ascii_lowercase().as_bytes())
    }

    /// The user's ListenBrainz token, made (and stored) on first call.
    pub fn user_token(&self, name: &str) -> Result<String, AccountError> {
        if let Some(t) = self.read().users.get(name).and_then(|u| u.token.clone()) {
            return Ok(t);
        }
        let fresh = random_hex();
        self.change(|d| {
            let u = d
                .users
                .get_mut(name)
                .ok_or_else(|| AccountError::NoSuchUser(name.into()))?;
            Ok(u.token.get_or_insert(fresh).clone())
        })
    }

    /// Who owns a ListenBrainz token.
    pub fn user_by_token(&self, token: &str) -> Option<String> {
        self.lookup(|d| {
            d.users
                .iter()
                .find(|(_, u)| {
                    u.token
                        .as_deref()
                        .is_some_and(|t| constant_eq(t.as_bytes(), token.as_bytes()))
                })
                .map(|(n, _)| n.clone())
        })
    }

    /// Makes an API key and secret.
    pub fn add_api_key(&self, name: &str, now: i64) -> Result<(String, String), AccountError> {
        let (key, secret) = (random_hex(), random_hex());
        self.change(|d| {
            d.api_keys.insert(
                key.clone(),
                ApiKey {
                    secret: secret.clone(),
                    name: name.into(),
                    created: now,
                },
            );
            Ok(())
        })?;
        Ok((key, secret))
    }

    /// The secret of an API key.
    pub fn api_secret(&self, key: &str) -> Option<String> {
        self.lookup(|d| d.api_keys.get(key).map(|k| k.secret.clone()))
    }

    /// A new session key for a user, valid until revoked.
    pub fn new_session(&self, user: &str, api_key: &str, now: i64) -> Result<String, AccountError> {
        let sk = random_hex();
        self.change(|d| {
            if !d.users.contains_key(user) {
                return Err(AccountError::NoSuchUser(user.into()));
            }
            d.sessions.insert(
                sk.clone(),
                Session {
                    user: user.into(),
                    api_key: api_key.into(),
                    created: now,
                },
            );
            Ok(())
        })?;
        Ok(sk)
    }

    /// The session behind a key.
    pub fn session(&self, sk: &str) -> Option<Session> {
        self.lookup(|d| d.sessions.get(sk).cloned())
    }

    /// Revokes a session key; false if there was none.
    pub fn revoke_session(&self, sk: &str) -> Result<bool, AccountError> {
        self.change(|d| Ok(d.sessions.remove(sk).is_some()))
    }
}

/// Compares in time that depends on the lengths only.
pub(crate) fn constant_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// Writes a file readable by its owner only, fsynced.
fn write_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let mut opts = std::fs::OpenOptions::new();
    opts.write(true).create(true).truncate(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        opts.mode(0o600);
    }
    let mut f = opts.open(path)?;
    f.write_all(bytes)?;
    f.sync_all()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_accounts_folder_is_made_private_whatever_the_umask() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let sub = dir.path().join("data").join("accounts");
        Accounts::open(&sub).unwrap();
        let mode = std::fs::metadata(&sub).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o700, "{mode:o}");
    }

    #[test]
    fn passwords_sessions_and_tokens_survive_reopen() {
        let dir = tempfile::tempdir().unwrap();
        let sk;
        let tok;
        {
            let a = Accounts::open(dir.path()).unwrap();
            a.add_user("ann", "s3cret", 1).unwrap();
            assert!(matches!(
                a.add_user("ann", "x", 1),
                Err(AccountError::UserExists(_))
            ));
            assert!(matches!(
                a.add_user("a/b", "x", 1),
                Err(AccountError::InvalidName(_))
            ));
            sk = a.new_session("ann", "k", 1).unwrap();
            tok = a.user_token("ann").unwrap();
            assert_eq!(a.user_token("ann").unwrap(), tok);
        }
        let a = Accounts::open(dir.path()).unwrap();
        assert!(a.check_password("ann", "s3cret"));
        assert!(!a.check_password("ann", "s3cre"));
        assert!(!a.check_password("bob", "s3cret"));
        assert_eq!(a.session(&sk).unwrap().user, "ann");
        assert_eq!(a.user_by_token(&tok).as_deref(), Some("ann"));
        let at = md5_hex(format!("ann{}", md5_hex(b"s3cret")).as_bytes());
        assert!(a.check_auth_token("ann", &at));
        assert!(!a.check_auth_token("ann", &md5_hex(b"x")));
        assert!(a.check_salted_token("ann", &md5_hex(b"s3cretabc"), "abc"));
        assert!(a.revoke_session(&sk).unwrap());
        assert!(a.session(&sk).is_none());
        // The password is not in the file in the clear.
        let text = std::fs::read_to_string(dir.path().join(ACCOUNTS_FILE)).unwrap();
        assert!(!text.contains("s3cret"));
    }
}
