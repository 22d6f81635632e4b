//! The links on disk: `DATA_DIR/forward/USER/NAME/` (mode 0700) holds
//! `link.json` (0600: kind, API root, credentials), the scrobbler's
//! journal (`journal`, `acked`), `cursor` (the listens-log offset fed up
//! to), `needs-auth` (0600, while the service refuses the credential) and
//! `status.json` (0600, the last counters the server saw, for `spindle
//! forward status` with the server stopped). Layout in
//! `docs/scrobble-hub.md`.

use std::fs;
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// The folder under the data dir that holds every link.
pub const FORWARD_DIR: &str = "forward";
/// The longest link name.
pub const MAX_NAME: usize = 64;
/// The most links one user may have: each link is a feeder, a queue and
/// a journal on the server. Linking an existing name again does not
/// count.
pub const MAX_LINKS_PER_USER: usize = 8;

const LINK_FILE: &str = "link.json";
const CURSOR_FILE: &str = "cursor";
const NEEDS_AUTH_FILE: &str = "needs-auth";
const STATUS_FILE: &str = "status.json";

/// Why a link could not be made, read or removed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ForwardError {
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{}: not a link file ({message}); link the service again", path.display())]
    Corrupt { path: PathBuf, message: String },
    #[error(
        "link name {0:?}: use 1 to {MAX_NAME} letters, digits, '-', '_' or '.' (not starting with '.')"
    )]
    BadName(String),
    #[error("user {0:?} does not exist")]
    NoUser(String),
    #[error("{user} has no link named {name:?} (see `spindle forward status {user}`)")]
    NoLink { user: String, name: String },
    #[error(
        "{user} already has {MAX_LINKS_PER_USER} links, the most one user may have: unlink one \
         first (on the settings page or with `spindle forward unlink {user} NAME`), or link one \
         of them again under its name"
    )]
    TooManyLinks { user: String },
    #[error(
        "no Last.fm API key: give one and its secret (`spindle forward link`: --api-key and \
         --api-secret), or set [forward] lastfm_api_key and lastfm_api_secret (for a Spindle server, make a pair there with `spindle apikey add`)"
    )]
    NoApiKey,
    #[error("a ListenBrainz link needs --token (the user token from the service's settings page)")]
    NoToken,
    /// The service refused the credential (a wrong token, a session key
    /// revoked there).
    #[error("{what}: the service refused the credential ({code}): {message}")]
    Refused {
        what: &'static str,
        code: u32,
        message: String,
    },
    #[error("{what}: {source}")]
    Service {
        what: &'static str,
        #[source]
        source: spindle_scrobble::SendError,
    },
    #[error("reading the listens log: {0}")]
    Log(#[from] spindle_listens::TailError),
    #[error("writing the forwarding journal: {0}")]
    Journal(#[from] spindle_scrobble::JournalError),
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> ForwardError + '_ {
    move |source| ForwardError::Io {
        path: path.to_owned(),
        source,
    }
}

/// The protocol a link speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum LinkKind {
    /// Last.fm, Libre.fm or another Last.fm 2.0 API (a Spindle's /2.0/).
    Lastfm,
    /// ListenBrainz or another ListenBrainz API (a Spindle's root).
    Listenbrainz,
}

impl LinkKind {
    pub fn as_str(self) -> &'static str {
        match self {
            LinkKind::Lastfm => "lastfm",
            LinkKind::Listenbrainz => "listenbrainz",
        }
    }
}

/// `link.json`: one linked service of one user.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Link {
    pub kind: LinkKind,
    /// The API root: `…/2.0/` for Last.fm, the root for ListenBrainz.
    pub url: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub api_key: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub api_secret: String,
    /// The Last.fm session key or the ListenBrainz token.
    pub secret: String,
    /// The user name at the service.
    #[serde(default)]
    pub remote_user: String,
    /// When it was linked, UNIX seconds.
    pub linked_at: i64,
}

/// The counters the server last saw of a link (`status.json`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SavedStatus {
    pub sent: u64,
    pub now_playing_sent: u64,
    /// Loves and unloves the service acknowledged.
    #[serde(default)]
    pub loves_sent: u64,
    /// Loves the service cannot take (ListenBrainz: no recording MBID).
    #[serde(default)]
    pub loves_skipped: u64,
    pub last_error: Option<String>,
}

/// A link name: what `check_name` accepts, so it is a safe folder name.
pub fn check_name(name: &str) -> Result<(), ForwardError> {
    let ok = !name.is_empty()
        && name.len() <= MAX_NAME
        && !name.starts_with('.')
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    if ok {
        Ok(())
    } else {
        Err(ForwardError::BadName(name.to_owned()))
    }
}

/// The folder of `user`'s links under `root` (`DATA_DIR/forward`). User
/// names may hold any character: the folder is the name hex-encoded when
/// it is not a plain one.
pub fn user_dir(root: &Path, user: &str) -> PathBuf {
    if check_name(user).is_ok() {
        root.join(user)
    } else {
        let hex: String = user.bytes().map(|b| format!("{b:02x}")).collect();
        root.join(format!("~{hex}"))
    }
}

fn user_of_dir(name: &str) -> Option<String> {
    match name.strip_prefix('~') {
        Some(hex) => {
            let bytes: Option<Vec<u8>> = (0..hex.len())
                .step_by(2)
                .map(|i| u8::from_str_radix(hex.get(i..i + 2)?, 16).ok())
                .collect();
            String::from_utf8(bytes?).ok()
        }
        None => check_name(name).is_ok().then(|| name.to_owned()),
    }
}

/// The folder of one link.
pub fn link_dir(root: &Path, user: &str, name: &str) -> PathBuf {
    user_dir(root, user).join(name)
}

fn mkdir(dir: &Path) -> Result<(), ForwardError> {
    fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(io(dir))
}

/// Whether [`write_atomic`] syncs the file and its folder.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Durability {
    /// Synced: it must survive a crash (a link, a cursor).
    Durable,
    /// Not synced: a snapshot written again soon (counters).
    Snapshot,
}

/// Writes `bytes` to `dir/name` atomically (temporary file, sync,
/// rename, sync of the folder; no syncs for a [`Durability::Snapshot`]), mode
/// 0600.
fn write_atomic(
    dir: &Path,
    name: &str,
    bytes: &[u8],
    sync: Durability,
) -> Result<(), ForwardError> {
    let tmp = dir.join(format!("{name}.tmp"));
    let mut f = fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&tmp)
        .map_err(io(&tmp))?;
    f.write_all(bytes).map_err(io(&tmp))?;
    if sync == Durability::Snapshot {
        let dst = dir.join(name);
        return fs::rename(&tmp, &dst).map_err(io(&dst));
    }
    f.sync_all().map_err(io(&tmp))?;
    let dst = dir.join(name);
    fs::rename(&tmp, &dst).map_err(io(&dst))?;
    fs::File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(io(dir))
}

/// Reads a link's `link.json`.
pub fn load(dir: &Path) -> Result<Link, ForwardError> {
    let path = dir.join(LINK_FILE);
    let bytes = fs::read(&path).map_err(io(&path))?;
    serde_json::from_slice(&bytes).map_err(|e| ForwardError::Corrupt {
        path,
        message: e.to_string(),
    })
}

/// Saves a link (new or re-linked): `link.json`, a cursor at `cursor`
/// unless it has one (a re-link goes on where it was), and no
/// `needs-auth` any more.
pub fn save(dir: &Path, link: &Link, cursor: u64) -> Result<(), ForwardError> {
    mkdir(dir)?;
    let json = serde_json::to_vec_pretty(link).unwrap_or_default();
    if read_cursor(dir)?.is_none() {
        write_cursor(dir, cursor)?;
    }
    write_atomic(dir, LINK_FILE, &json, Durability::Durable)?;
    set_needs_auth(dir, false)
}

/// Removes a link: its folder, journal and all.
pub fn remove(root: &Path, user: &str, name: &str) -> Result<(), ForwardError> {
    check_name(name)?;
    let dir = link_dir(root, user, name);
    if !dir.join(LINK_FILE).is_file() {
        return Err(ForwardError::NoLink {
            user: user.to_owned(),
            name: name.to_owned(),
        });
    }
    // Out of sight first, in one rename: the link is gone for the
    // registry's next look, and its forwarder, which may still be writing
    // its status or cursor into the folder, writes into a folder no list
    // shows. A removal that then races such a write ("directory not
    // empty") is tried again; what is left is a hidden folder, removed at
    // the next unlink or ignored (names starting with '.' are never links).
    let stamp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let grave = dir.with_file_name(format!(".unlinked-{name}-{stamp}"));
    fs::rename(&dir, &grave).map_err(io(&dir))?;
    for attempt in 0..5u64 {
        match fs::remove_dir_all(&grave) {
            Ok(()) => return Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(e) if attempt == 4 => {
                tracing::warn!(
                    "forward: the removed link's folder {} stays behind: {e}",
                    grave.display()
                );
            }
            Err(_) => std::thread::sleep(std::time::Duration::from_millis(20 << attempt)),
        }
    }
    Ok(())
}

/// Every link under `root`: (user, name, folder), sorted.
pub fn list(root: &Path) -> Vec<(String, String, PathBuf)> {
    let mut out = Vec::new();
    let Ok(users) = fs::read_dir(root) else {
        return out;
    };
    for u in users.flatten() {
        let Some(user) = u.file_name().to_str().and_then(user_of_dir) else {
            continue;
        };
        let Ok(links) = fs::read_dir(u.path()) else {
            continue;
        };
        for l in links.flatten() {
            let Some(name) = l.file_name().to_str().map(str::to_owned) else {
                continue;
            };
            if check_name(&name).is_ok() && l.path().join(LINK_FILE).is_file() {
                out.push((user.clone(), name, l.path()));
            }
        }
    }
    out.sort();
    out
}

/// The names of `user`'s links under `root`, sorted.
pub fn names(root: &Path, user: &str) -> Vec<String> {
    let Ok(links) = fs::read_dir(user_dir(root, user)) else {
        return Vec::new();
    };
    let mut out: Vec<String> = links
        .flatten()
        .filter_map(|l| {
            let name = l.file_name().to_str()?.to_owned();
            (check_name(&name).is_ok() && l.path().join(LINK_FILE).is_file()).then_some(name)
        })
        .collect();
    out.sort();
    out
}

/// Whether `user` may save a link `name`: a name they have already, or
/// a new one while they have fewer than [`MAX_LINKS_PER_USER`].
pub fn check_room(root: &Path, user: &str, name: &str) -> Result<(), ForwardError> {
    let have = names(root, user);
    if have.len() < MAX_LINKS_PER_USER || have.iter().any(|n| n == name) {
        Ok(())
    } else {
        Err(ForwardError::TooManyLinks {
            user: user.to_owned(),
        })
    }
}

/// The cursor: 8 bytes little-endian and their CRC-32. `None` when there
/// is none yet; a damaged one is an error.
pub fn read_cursor(dir: &Path) -> Result<Option<u64>, ForwardError> {
    let path = dir.join(CURSOR_FILE);
    let b = match fs::read(&path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(io(&path)(e)),
    };
    let bad = || ForwardError::Corrupt {
        path: path.clone(),
        message: "a cursor is 12 bytes with a matching checksum".into(),
    };
    if b.len() != 12 {
        return Err(bad());
    }
    let crc = u32::from_le_bytes([b[8], b[9], b[10], b[11]]);
    if crc32fast::hash(&b[..8]) != crc {
        return Err(bad());
    }
    let mut v = [0u8; 8];
    v.copy_from_slice(&b[..8]);
    Ok(Some(u64::from_le_bytes(v)))
}

/// Replaces the cursor atomically.
pub fn write_cursor(dir: &Path, offset: u64) -> Result<(), ForwardError> {
    let mut b = offset.to_le_bytes().to_vec();
    let crc = crc32fast::hash(&b);
    b.extend_from_slice(&crc.to_le_bytes());
    write_atomic(dir, CURSOR_FILE, &b, Durability::Durable)
}

pub fn needs_auth(dir: &Path) -> bool {
    dir.join(NEEDS_AUTH_FILE).exists()
}

/// Marks (or unmarks) the link as refused by its service.
pub fn set_needs_auth(dir: &Path, v: bool) -> Result<(), ForwardError> {
    let path = dir.join(NEEDS_AUTH_FILE);
    if v {
        write_atomic(
            dir,
            NEEDS_AUTH_FILE,
            b"the service refused the credential: link it again\n",
            Durability::Durable,
        )
    } else {
        match fs::remove_file(&path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(io(&path)(e)),
            _ => Ok(()),
        }
    }
}

pub fn read_status(dir: &Path) -> SavedStatus {
    fs::read(dir.join(STATUS_FILE))
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or_default()
}

pub fn write_status(dir: &Path, s: &SavedStatus) -> Result<(), ForwardError> {
    let json = serde_json::to_vec(s).unwrap_or_default();
    write_atomic(dir, STATUS_FILE, &json, Durability::Snapshot)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn link() -> Link {
        Link {
            kind: LinkKind::Listenbrainz,
            url: "http://127.0.0.1:1".into(),
            api_key: String::new(),
            api_secret: String::new(),
            secret: "tok".into(),
            remote_user: "bob".into(),
            linked_at: 1,
        }
    }

    #[test]
    fn a_saved_link_lists_reads_back_and_a_relink_keeps_its_cursor() {
        let d = tempfile::tempdir().unwrap();
        let root = d.path();
        let dir = link_dir(root, "ann lee", "lb");
        save(&dir, &link(), 100).unwrap();
        assert_eq!(load(&dir).unwrap(), link());
        assert_eq!(
            list(root),
            vec![("ann lee".into(), "lb".into(), dir.clone())]
        );
        write_cursor(&dir, 500).unwrap();
        set_needs_auth(&dir, true).unwrap();
        save(&dir, &link(), 100).unwrap();
        assert_eq!(read_cursor(&dir).unwrap(), Some(500));
        assert!(!needs_auth(&dir));
        use std::os::unix::fs::PermissionsExt;
        let mode = fs::metadata(dir.join(LINK_FILE))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
        remove(root, "ann lee", "lb").unwrap();
        assert!(list(root).is_empty());
        assert!(matches!(
            remove(root, "ann lee", "lb"),
            Err(ForwardError::NoLink { .. })
        ));
    }

    /// The link's forwarder may write its status into the folder while
    /// it is removed; the removal still succeeds and leaves no link.
    #[test]
    fn a_link_is_removed_while_its_forwarder_keeps_writing_into_its_folder() {
        let d = tempfile::tempdir().unwrap();
        let root = d.path().to_owned();
        for round in 0..20 {
            let dir = link_dir(&root, "ann", "lb");
            save(&dir, &link(), 100).unwrap();
            for n in 0..200 {
                fs::write(dir.join(format!("old-{n}")), b"x").unwrap();
            }
            let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
            let writer = {
                let (dir, stop) = (dir.clone(), stop.clone());
                std::thread::spawn(move || {
                    let mut n = 0u64;
                    while !stop.load(std::sync::atomic::Ordering::SeqCst) {
                        let _ = fs::write(dir.join(format!("status-{n}")), b"{}");
                        n += 1;
                    }
                })
            };
            let removed = remove(&root, "ann", "lb");
            stop.store(true, std::sync::atomic::Ordering::SeqCst);
            writer.join().unwrap();
            removed.unwrap_or_else(|e| panic!("round {round}: {e}"));
            assert!(list(&root).is_empty());
            assert!(names(&root, "ann").is_empty());
        }
    }

    #[test]
    fn needs_auth_and_status_files_are_private_to_the_owner() {
        use std::os::unix::fs::PermissionsExt;
        let d = tempfile::tempdir().unwrap();
        let dir = d.path();
        // A status.json left by an older version with the umask's mode.
        fs::write(dir.join(STATUS_FILE), b"{}").unwrap();
        fs::set_permissions(dir.join(STATUS_FILE), fs::Permissions::from_mode(0o644)).unwrap();
        set_needs_auth(dir, true).unwrap();
        let s = SavedStatus {
            sent: 3,
            now_playing_sent: 1,
            loves_sent: 2,
            loves_skipped: 1,
            last_error: Some("refused".into()),
        };
        write_status(dir, &s).unwrap();
        assert_eq!(read_status(dir), s);
        assert!(needs_auth(dir));
        for f in [NEEDS_AUTH_FILE, STATUS_FILE] {
            let mode = fs::metadata(dir.join(f)).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600, "{f}");
        }
    }

    #[test]
    fn a_user_may_relink_but_not_add_a_link_beyond_the_limit() {
        let d = tempfile::tempdir().unwrap();
        let root = d.path();
        for i in 0..MAX_LINKS_PER_USER {
            let name = format!("l{i}");
            check_room(root, "ann", &name).unwrap();
            save(&link_dir(root, "ann", &name), &link(), 0).unwrap();
        }
        assert_eq!(names(root, "ann").len(), MAX_LINKS_PER_USER);
        let e = check_room(root, "ann", "one-more").unwrap_err();
        assert!(matches!(e, ForwardError::TooManyLinks { .. }), "{e}");
        let msg = e.to_string();
        assert!(msg.contains(&MAX_LINKS_PER_USER.to_string()), "{msg}");
        assert!(msg.contains("spindle forward unlink ann"), "{msg}");
        check_room(root, "ann", "l0").unwrap();
        // Another user's links do not count.
        check_room(root, "bob", "one-more").unwrap();
        remove(root, "ann", "l3").unwrap();
        check_room(root, "ann", "one-more").unwrap();
    }

    #[test]
    fn a_damaged_cursor_is_an_error_not_a_restart() {
        let d = tempfile::tempdir().unwrap();
        write_cursor(d.path(), 42).unwrap();
        let p = d.path().join(CURSOR_FILE);
        let mut b = fs::read(&p).unwrap();
        b[0] ^= 1;
        fs::write(&p, b).unwrap();
        assert!(matches!(
            read_cursor(d.path()),
            Err(ForwardError::Corrupt { .. })
        ));
    }

    #[test]
    fn names_that_could_escape_the_folder_are_refused() {
        for bad in ["", "..", ".x", "a/b", "a b", &"x".repeat(65)] {
            assert!(check_name(bad).is_err(), "{bad:?}");
        }
        for good in ["lastfm", "libre.fm", "lb_2", "B-server"] {
            assert!(check_name(good).is_ok(), "{good}");
        }
    }
}
