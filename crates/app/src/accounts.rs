//! The accounts store: users (with their Subsonic roles and music folder
//! grants), Last.fm-style session keys and API key pairs,
//! ListenBrainz-style user tokens. One JSON file in `DATA_DIR/accounts/`,
//! rewritten atomically on every change, plus the key that seals stored
//! passwords. Format: `docs/accounts-format.md`.
//!
//! There is always an administrator once there is a user: when no user
//! holds the admin role (a store written before roles existed, or a fresh
//! one), the user created first (ties: by name) is the administrator, and
//! the next change writes that down. A change that would leave no
//! administrator is refused ([`AccountError::LastAdmin`]).
//!
//! Beside the users: the credentials each user holds besides the password
//! (`keys`: OpenSubsonic API keys per app, Last.fm session keys, the
//! ListenBrainz token; listed and revoked) and per-user settings
//! (`zone`: the time zone of "today" and daily charts).

mod keys;
mod zone;

pub use keys::{handle, AppKey, Revoked, APP_KEY_PREFIX, MAX_APP_KEYS_PER_USER, MAX_APP_LABEL};
pub use zone::{parse_time_zone, DEFAULT_TIME_ZONE};

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
    #[error("'{0}' is the last administrator: make another user an administrator first")]
    LastAdmin(String),
    #[error("an app's name must be 1-{max} characters without control characters", max = MAX_APP_LABEL)]
    InvalidAppLabel,
    #[error("'{0}' has {max} API keys already: revoke one first (`spindle user sessions {0}`)", max = MAX_APP_KEYS_PER_USER)]
    TooManyAppKeys(String),
    #[error("'{0}' names more than one key or session: give more of it")]
    Ambiguous(String),
    #[error(
        "unknown time zone '{0}': use an IANA name such as Europe/Paris, America/New_York or UTC"
    )]
    UnknownTimeZone(String),
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
    /// The Subsonic roles; absent: [`Roles::default`] (admin only by the
    /// first-user rule of the module doc).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    roles: Option<Roles>,
    /// The music folders (Subsonic ids, 1-based) the user may see; empty:
    /// every folder.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    folders: Vec<u32>,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    email: String,
    /// The most kbit/s the user's streams should have; 0: no limit.
    #[serde(default, skip_serializing_if = "is_zero")]
    max_bit_rate: u32,
    /// The user's IANA time zone (`zone`); empty: UTC.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    timezone: String,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

/// What a user may do, as Subsonic's roles name it. Podcasts, the
/// jukebox and video conversion are not built, so their roles are
/// always false and not stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Roles {
    /// Manages users, internet radio stations and scans; has every other
    /// role too.
    pub admin: bool,
    /// Changes their own password and settings.
    pub settings: bool,
    pub download: bool,
    pub upload: bool,
    pub playlist: bool,
    pub cover_art: bool,
    /// Rates and comments.
    pub comment: bool,
    pub stream: bool,
    /// Makes public share links.
    pub share: bool,
}

impl Default for Roles {
    /// A new user's roles: everything a listener needs, no administration
    /// and no public share links.
    fn default() -> Self {
        Roles {
            admin: false,
            settings: true,
            download: true,
            upload: false,
            playlist: true,
            cover_art: true,
            comment: true,
            stream: true,
            share: false,
        }
    }
}

impl Roles {
    /// Every role: what an administrator may do.
    pub const ALL: Roles = Roles {
        admin: true,
        settings: true,
        download: true,
        upload: true,
        playlist: true,
        cover_art: true,
        comment: true,
        stream: true,
        share: true,
    };

    /// The roles in force: an administrator has them all.
    pub fn effective(self) -> Roles {
        if self.admin {
            Roles::ALL
        } else {
            self
        }
    }

    /// The roles in force in a few words, as `spindle user list` shows
    /// them: `admin`, or `user (stream, download, …)`.
    pub fn summary(self) -> String {
        let r = self.effective();
        if r.admin {
            return "admin".into();
        }
        let named = [
            ("stream", r.stream),
            ("download", r.download),
            ("playlist", r.playlist),
            ("rate", r.comment),
            ("share", r.share),
            ("upload", r.upload),
            ("settings", r.settings),
            ("covers", r.cover_art),
        ];
        let on: Vec<&str> = named.iter().filter(|(_, b)| *b).map(|(n, _)| *n).collect();
        format!("user ({})", on.join(", "))
    }
}

/// A user as the admin API reads and writes it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Profile {
    /// The roles as stored, with `admin` as in force (the first-user rule
    /// of the module doc applied).
    pub roles: Roles,
    /// The music folders (Subsonic ids, 1-based) granted; empty: all.
    pub folders: Vec<u32>,
    pub email: String,
    /// 0: no limit.
    pub max_bit_rate: u32,
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
    /// OpenSubsonic API keys by the hex SHA-256 of the key (`keys`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    app_keys: BTreeMap<String, AppKey>,
}

/// The accounts store.
pub struct Accounts {
    dir: PathBuf,
    cipher: ChaCha20Poly1305,
    /// A hash of `secret.key`, the secret every node of a cluster shares
    /// ([`Accounts::cluster_secret`]).
    cluster_secret: [u8; 32],
    /// The key of [`Accounts::url_signature`], derived from `secret.key`.
    url_key: [u8; 32],
    data: RwLock<Data>,
    /// (mtime, length) of the file as last read, to notice another
    /// process's changes (`spindle user add` beside a running server).
    seen: std::sync::Mutex<Option<(std::time::SystemTime, u64)>>,
    /// When the store was opened, and the milliseconds since then at
    /// which a lookup last looked at the file ([`REFRESH_INTERVAL`]).
    opened: std::time::Instant,
    checked_ms: std::sync::atomic::AtomicU64,
}

/// How stale a lookup may be: at most once a second, a lookup checks the
/// file's size and mtime (one `stat`), so a change another process made
/// — `spindle user revoke`, `user delete`, `token --reset` beside the
/// running server — takes effect within a second even for a credential
/// the server still holds. (A miss re-reads at once: a new user or key
/// works on its first use.)
pub const REFRESH_INTERVAL: std::time::Duration = std::time::Duration::from_secs(1);

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

pub fn unhex(s: &str) -> Option<Vec<u8>> {
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

/// The administrators: those holding the role, else the user created
/// first (ties: by name).
fn admins(d: &Data) -> Vec<&str> {
    let explicit: Vec<&str> = d
        .users
        .iter()
        .filter(|(_, u)| u.roles.is_some_and(|r| r.admin))
        .map(|(n, _)| n.as_str())
        .collect();
    if !explicit.is_empty() {
        return explicit;
    }
    d.users
        .iter()
        .min_by_key(|(n, u)| (u.created, n.as_str()))
        .map(|(n, _)| vec![n.as_str()])
        .unwrap_or_default()
}

/// Writes the first-user rule down: with no user holding the admin role,
/// the first user gets it.
fn ensure_admin(d: &mut Data) {
    let Some(first) = admins(d).first().map(|n| (*n).to_owned()) else {
        return;
    };
    if let Some(u) = d.users.get_mut(&first) {
        let mut r = u.roles.unwrap_or_default();
        r.admin = true;
        u.roles = Some(r);
    }
}

/// Refuses a change after which `name` would be no administrator and
/// nobody else one either.
fn keep_an_admin(d: &Data, name: &str, still_admin: bool) -> Result<(), AccountError> {
    if !still_admin && admins(d).iter().all(|a| *a == name) && admins(d).contains(&name) {
        return Err(AccountError::LastAdmin(name.into()));
    }
    Ok(())
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
            cluster_secret: {
                use sha2::Digest;
                sha2::Sha256::digest(&key).into()
            },
            url_key: {
                use sha2::Digest;
                let mut h = sha2::Sha256::new();
                h.update(b"spindle signed URLs\0");
                h.update(&key);
                h.finalize().into()
            },
            data: RwLock::new(data),
            seen: std::sync::Mutex::new(None),
            opened: std::time::Instant::now(),
            checked_ms: std::sync::atomic::AtomicU64::new(0),
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

    /// [`Accounts::refresh`] if the last look at the file was
    /// [`REFRESH_INTERVAL`] ago or more (one thread does it; the others
    /// go on with what they have).
    fn refresh_if_due(&self) {
        use std::sync::atomic::Ordering;
        let now = u64::try_from(self.opened.elapsed().as_millis()).unwrap_or(u64::MAX);
        let last = self.checked_ms.load(Ordering::Relaxed);
        let due = u64::try_from(REFRESH_INTERVAL.as_millis()).unwrap_or(u64::MAX);
        if now.saturating_sub(last) < due {
            return;
        }
        if self
            .checked_ms
            .compare_exchange(last, now, Ordering::Relaxed, Ordering::Relaxed)
            .is_ok()
        {
            self.refresh();
        }
    }

    /// Runs a lookup; on a miss, re-reads the file once and retries.
    fn lookup<T>(&self, f: impl Fn(&Data) -> Option<T>) -> Option<T> {
        self.refresh_if_due();
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
        // The first-user rule is written down before the change, so a
        // change that names a new administrator keeps the old one.
        ensure_admin(&mut next);
        let out = f(&mut next)?;
        ensure_admin(&mut next);
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
    /// pass), for tests that run many logins (here and, with the
    /// `testkit` feature, in other crates).
    #[cfg(any(test, feature = "testkit"))]
    #[allow(
        clippy::expect_used,
        reason = "a test fixture: a failure is the test's failure"
    )]
    pub fn add_user_cheaply(&self, name: &str, password: &str) {
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
        self.add_user_full(name, password, now, argon, None)
    }

    /// Adds a user with a password and a profile (the Subsonic
    /// `createUser`). The folders are not checked against the music
    /// folders: the caller knows them.
    pub fn add_user_with(
        &self,
        name: &str,
        password: &str,
        now: i64,
        profile: Profile,
    ) -> Result<(), AccountError> {
        self.add_user_full(name, password, now, &Argon2::default(), Some(profile))
    }

    fn add_user_full(
        &self,
        name: &str,
        password: &str,
        now: i64,
        argon: &Argon2<'_>,
        profile: Option<Profile>,
    ) -> Result<(), AccountError> {
        if !valid_name(name) {
            return Err(AccountError::InvalidName(name.into()));
        }
        let (password_hash, password_sealed) = self.hash_and_seal(password, argon)?;
        self.change(|d| {
            if d.users.contains_key(name) {
                return Err(AccountError::UserExists(name.into()));
            }
            let mut u = User {
                password_hash,
                password_sealed,
                token: None,
                created: now,
                roles: None,
                folders: Vec::new(),
                email: String::new(),
                max_bit_rate: 0,
                timezone: String::new(),
            };
            if let Some(p) = profile {
                apply(&mut u, p);
            }
            d.users.insert(name.into(), u);
            Ok(())
        })
    }

    /// The Argon2 hash and the sealed copy of a password.
    fn hash_and_seal(
        &self,
        password: &str,
        argon: &Argon2<'_>,
    ) -> Result<(String, String), AccountError> {
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
        Ok((password_hash, hex(&sealed)))
    }

    /// Gives a user a new password; their token, sessions and data stay.
    pub fn set_password(&self, name: &str, password: &str) -> Result<(), AccountError> {
        let (hash, sealed) = self.hash_and_seal(password, &Argon2::default())?;
        self.change(|d| {
            let u = d
                .users
                .get_mut(name)
                .ok_or_else(|| AccountError::NoSuchUser(name.into()))?;
            u.password_hash = hash;
            u.password_sealed = sealed;
            Ok(())
        })
    }

    /// Removes a user with their token, session keys and API keys. The
    /// last administrator cannot be removed.
    pub fn delete_user(&self, name: &str) -> Result<(), AccountError> {
        self.change(|d| {
            if !d.users.contains_key(name) {
                return Err(AccountError::NoSuchUser(name.into()));
            }
            keep_an_admin(d, name, false)?;
            d.users.remove(name);
            d.sessions.retain(|_, s| s.user != name);
            d.app_keys.retain(|_, k| k.user != name);
            Ok(())
        })
    }

    /// Whether the user is an administrator (false for no such user).
    pub fn is_admin(&self, name: &str) -> bool {
        self.lookup(|d| admins(d).contains(&name).then_some(()))
            .is_some()
    }

    /// The roles in force for a user ([`Roles::effective`]); `None` for
    /// no such user.
    pub fn roles(&self, name: &str) -> Option<Roles> {
        self.profile(name).map(|p| p.roles.effective())
    }

    /// Sets a user's roles (`admin` included). Taking the admin role from
    /// the last administrator is refused.
    pub fn set_roles(&self, name: &str, roles: Roles) -> Result<(), AccountError> {
        let Some(mut p) = self.profile(name) else {
            return Err(AccountError::NoSuchUser(name.into()));
        };
        p.roles = roles;
        self.set_profile(name, p)
    }

    /// The music folders (Subsonic ids, 1-based) a user may see: `None`
    /// for every folder, `Some(ids)` for only those; `Some(vec![])` (none)
    /// for no such user.
    pub fn folders_of(&self, name: &str) -> Option<Vec<u32>> {
        match self.lookup(|d| d.users.get(name).map(|u| u.folders.clone())) {
            None => Some(Vec::new()),
            Some(f) if f.is_empty() => None,
            Some(f) => Some(f),
        }
    }

    /// A user's roles, folders, email and bit rate limit.
    pub fn profile(&self, name: &str) -> Option<Profile> {
        self.lookup(|d| {
            let u = d.users.get(name)?;
            let mut roles = u.roles.unwrap_or_default();
            roles.admin = admins(d).contains(&name);
            Some(Profile {
                roles,
                folders: u.folders.clone(),
                email: u.email.clone(),
                max_bit_rate: u.max_bit_rate,
            })
        })
    }

    /// Replaces a user's profile. Taking the admin role from the last
    /// administrator is refused.
    pub fn set_profile(&self, name: &str, profile: Profile) -> Result<(), AccountError> {
        self.change(|d| {
            if !d.users.contains_key(name) {
                return Err(AccountError::NoSuchUser(name.into()));
            }
            keep_an_admin(d, name, profile.roles.admin)?;
            if let Some(u) = d.users.get_mut(name) {
                apply(u, profile);
            }
            Ok(())
        })
    }

    /// Every user with their profile, by name.
    pub fn list_users(&self) -> Vec<(String, Profile)> {
        self.refresh();
        self.user_names()
            .into_iter()
            .filter_map(|n| self.profile(&n).map(|p| (n, p)))
            .collect()
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
    /// (the server's login guard), which checks it with bounded memory.
    pub fn password_hash(&self, name: &str) -> Option<String> {
        self.lookup(|d| d.users.get(name).map(|u| u.password_hash.clone()))
    }

    /// Checks a password against the Argon2 hash, on the caller's thread
    /// (for the command line; the server goes through
    /// the server's `AuthGuard::password`).
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

    /// A secret every node of a cluster shares (each has the primary's
    /// `secret.key`): a SHA-256 of the key, not the key, from which the
    /// cluster derives what it signs with.
    pub fn cluster_secret(&self) -> [u8; 32] {
        self.cluster_secret
    }

    /// Whether this node's `secret.key` opens the sealed passwords (a
    /// cluster replica's key must be the primary's): `None` while no user
    /// has one.
    pub fn key_opens_sealed(&self) -> Option<bool> {
        let name = self.lookup(|d| {
            d.users
                .iter()
                .find(|(_, u)| !u.password_sealed.is_empty())
                .map(|(n, _)| n.clone())
        })?;
        Some(self.password(&name).is_some())
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
    /// A signature of `msg` for a URL this server hands out in place of
    /// credentials (the cover images of `getArtistInfo`): HMAC-SHA256
    /// under a key derived from `secret.key`, 32 hex digits. Stable
    /// across restarts; [`Accounts::url_signature_ok`] checks it.
    pub fn url_signature(&self, msg: &str) -> String {
        use hmac::Mac;
        let Ok(mut mac) = <hmac::Hmac<sha2::Sha256> as Mac>::new_from_slice(&self.url_key) else {
            return String::new();
        };
        mac.update(msg.as_bytes());
        let tag = mac.finalize().into_bytes();
        tag.iter().take(16).map(|b| format!("{b:02x}")).collect()
    }

    /// Whether `sig` is [`Accounts::url_signature`] of `msg`.
    pub fn url_signature_ok(&self, msg: &str, sig: &str) -> bool {
        let want = self.url_signature(msg);
        !want.is_empty() && constant_eq(want.as_bytes(), sig.as_bytes())
    }

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
        self.change_user(name, |u| u.token.get_or_insert(fresh).clone())
    }

    /// [`Accounts::change`] of one user's record: `f`'s answer, or
    /// [`AccountError::NoSuchUser`] when there is no such user.
    fn change_user<T>(
        &self,
        name: &str,
        f: impl FnOnce(&mut User) -> T,
    ) -> Result<T, AccountError> {
        self.change(|d| {
            let u = d
                .users
                .get_mut(name)
                .ok_or_else(|| AccountError::NoSuchUser(name.into()))?;
            Ok(f(u))
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

/// Writes a profile into a stored user.
fn apply(u: &mut User, p: Profile) {
    u.roles = Some(p.roles);
    u.folders = p.folders;
    u.folders.sort_unstable();
    u.folders.dedup();
    u.email = p.email;
    u.max_bit_rate = p.max_bit_rate;
}

/// Compares in time that depends on the lengths only.
pub fn constant_eq(a: &[u8], b: &[u8]) -> bool {
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
    fn a_roles_summary_names_the_roles_in_force() {
        assert_eq!(
            Roles::default().summary(),
            "user (stream, download, playlist, rate, settings, covers)"
        );
        let admin = Roles {
            admin: true,
            ..Roles::default()
        };
        assert_eq!(admin.summary(), "admin");
        let none = Roles {
            settings: false,
            download: false,
            playlist: false,
            cover_art: false,
            comment: false,
            stream: false,
            ..Roles::default()
        };
        assert_eq!(none.summary(), "user ()");
    }

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
    fn a_revocation_by_another_process_takes_effect_within_the_refresh_interval() {
        let dir = tempfile::tempdir().unwrap();
        let server = Accounts::open(dir.path()).unwrap();
        let cli = Accounts::open(dir.path()).unwrap();
        cli.add_user_cheaply("ann", "pw");
        let (key, id) = cli.add_app_key("ann", "app", 0).unwrap();
        let old = cli.user_token("ann").unwrap();
        // A miss re-reads at once: the new key and token work first time.
        assert_eq!(server.user_by_app_key(&key).as_deref(), Some("ann"));
        assert_eq!(server.user_by_token(&old).as_deref(), Some("ann"));
        cli.revoke("ann", &id).unwrap().unwrap();
        cli.reset_token("ann").unwrap();
        std::thread::sleep(REFRESH_INTERVAL + std::time::Duration::from_millis(100));
        assert_eq!(server.user_by_app_key(&key), None, "revoked elsewhere");
        assert_eq!(server.user_by_token(&old), None, "replaced elsewhere");
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

    /// A store as Spindle wrote it before roles existed.
    fn legacy_store(dir: &Path) {
        let user = |created: i64| {
            serde_json::json!({"password_hash": "x", "password_sealed": "00",
                               "token": null, "created": created})
        };
        let doc = serde_json::json!({"version": 1,
            "users": {"zed": user(5), "bob": user(9), "amy": user(5)},
            "sessions": {}, "api_keys": {}});
        std::fs::create_dir_all(dir).unwrap();
        std::fs::write(dir.join(ACCOUNTS_FILE), doc.to_string()).unwrap();
    }

    #[test]
    fn an_old_store_loads_with_its_first_user_as_the_administrator() {
        let dir = tempfile::tempdir().unwrap();
        legacy_store(dir.path());
        let a = Accounts::open(dir.path()).unwrap();
        // amy and zed were made in the same second: the name decides.
        assert!(a.is_admin("amy"));
        assert!(!a.is_admin("zed") && !a.is_admin("bob"));
        assert_eq!(a.roles("bob"), Some(Roles::default()));
        assert_eq!(a.roles("amy"), Some(Roles::ALL));
        assert_eq!(a.folders_of("bob"), None, "no list: every folder");
        // Naming a second administrator keeps the first.
        a.set_roles("bob", Roles::ALL).unwrap();
        assert!(a.is_admin("amy") && a.is_admin("bob"));
        let text = std::fs::read_to_string(dir.path().join(ACCOUNTS_FILE)).unwrap();
        assert!(text.contains("\"roles\""), "{text}");
    }

    #[test]
    fn the_last_administrator_can_be_neither_demoted_nor_deleted() {
        let dir = tempfile::tempdir().unwrap();
        let a = Accounts::open(dir.path()).unwrap();
        a.add_user_cheaply("ann", "pw");
        a.add_user_cheaply("bob", "pw");
        assert!(a.is_admin("ann"), "the first user administers");
        assert!(matches!(
            a.set_roles("ann", Roles::default()),
            Err(AccountError::LastAdmin(_))
        ));
        assert!(matches!(
            a.delete_user("ann"),
            Err(AccountError::LastAdmin(_))
        ));
        a.set_roles("bob", Roles::ALL).unwrap();
        a.set_roles("ann", Roles::default()).unwrap();
        assert!(!a.is_admin("ann") && a.is_admin("bob"));
        a.delete_user("ann").unwrap();
        assert!(!a.user_exists("ann"));
        assert!(matches!(
            a.delete_user("ann"),
            Err(AccountError::NoSuchUser(_))
        ));
    }

    #[test]
    fn profiles_and_new_passwords_survive_a_reopen() {
        let dir = tempfile::tempdir().unwrap();
        let sk;
        {
            let a = Accounts::open(dir.path()).unwrap();
            a.add_user_cheaply("ann", "old");
            let p = Profile {
                roles: Roles {
                    share: true,
                    download: false,
                    ..Roles::default()
                },
                folders: vec![2, 1, 2],
                email: "cy@example.org".into(),
                max_bit_rate: 192,
            };
            a.add_user_with("cy", "pw", 7, p).unwrap();
            sk = a.new_session("cy", "k", 1).unwrap();
            a.set_password("ann", "new").unwrap();
        }
        let a = Accounts::open(dir.path()).unwrap();
        assert!(a.check_password("ann", "new") && !a.check_password("ann", "old"));
        assert!(a.check_salted_token("ann", &md5_hex(b"newsalt"), "salt"));
        let p = a.profile("cy").unwrap();
        assert_eq!(p.folders, [1, 2]);
        assert_eq!((p.email.as_str(), p.max_bit_rate), ("cy@example.org", 192));
        assert!(p.roles.share && !p.roles.download && !p.roles.admin);
        assert_eq!(a.folders_of("cy"), Some(vec![1, 2]));
        assert_eq!(
            a.folders_of("nobody"),
            Some(vec![]),
            "no such user sees nothing"
        );
        let names: Vec<String> = a.list_users().into_iter().map(|(n, _)| n).collect();
        assert_eq!(names, ["ann", "cy"]);
        a.delete_user("cy").unwrap();
        assert!(a.session(&sk).is_none(), "a deleted user's sessions end");
    }

    #[test]
    fn only_the_key_that_sealed_the_passwords_opens_them() {
        let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let primary = Accounts::open(a.path()).unwrap();
        assert_eq!(primary.key_opens_sealed(), None, "no user yet");
        primary.add_user_cheaply("ann", "pw");
        assert_eq!(primary.key_opens_sealed(), Some(true));
        // A replica given the shipped document but a key of its own.
        std::fs::copy(a.path().join(ACCOUNTS_FILE), b.path().join(ACCOUNTS_FILE)).unwrap();
        assert_eq!(
            Accounts::open(b.path()).unwrap().key_opens_sealed(),
            Some(false)
        );
        std::fs::copy(a.path().join(KEY_FILE), b.path().join(KEY_FILE)).unwrap();
        assert_eq!(
            Accounts::open(b.path()).unwrap().key_opens_sealed(),
            Some(true)
        );
    }
}
