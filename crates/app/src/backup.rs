//! `spindle backup` and `spindle restore`: a consistent copy of a data
//! dir's state (the library, the listening history, the accounts, the
//! per-user data, the tiers' pins and replica index) taken while a server
//! runs on it, and its return into an empty data dir. The design, and
//! why a copy is consistent without stopping the server: `docs/backup.md`.
//!
//! In short: every file Spindle keeps is either replaced whole by a rename
//! (accounts, user data, the library's data file) or only ever appended
//! to (the logs). A file opened once is therefore a consistent version of
//! itself: a renamed-over file stays whole behind its descriptor, and an
//! append-only log read to any length is a prefix of committed records
//! plus at most one torn record, which the copy's reopen cuts. The one
//! pair that must match, the library's data file and its log, is checked:
//! a compaction between opening the two is seen (the data file's inode
//! changed) and the pair is taken again. Every copy is then opened with
//! the same code that opens a data dir, so a backup that finishes is one
//! Spindle opens.

use std::fs::File;
use std::io::{Read, Write};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use spindle_listens::Listens;
use spindle_store::{Db, DATA_FILE, LOG_FILE};

use crate::accounts::{Accounts, ACCOUNTS_FILE, KEY_FILE};
use crate::userdata::{UserData, USERDATA_DIR};

/// The file that makes a folder a finished backup: written last.
pub const MANIFEST: &str = "spindle-backup.json";
/// The manifest's format version this Spindle writes and reads.
pub const BACKUP_VERSION: u32 = 1;
/// How many times the library's data file and log are taken again when a
/// compaction replaced the data file between the two opens: 20 (a
/// compaction takes the server seconds at most; twenty in a row means
/// something else rewrites the folder).
pub const MAX_LIBRARY_ATTEMPTS: u32 = 20;

/// The folders under a data dir that hold state, besides the library
/// files at its top.
const ACCOUNTS_DIR: &str = "accounts";
const LISTENS_DIR: &str = "listens";
const TIERS_DIR: &str = "tiers";
/// The tiers' files that are state, not cache: the pins (patterns a user
/// saved) and the replica index (which cold device holds which track).
const TIERS_PINS: &str = "pins";
const TIERS_REPLICAS: &str = "replicas.log";

const DIR_MODE: u32 = 0o700;
const FILE_MODE: u32 = 0o600;

/// A backup or restore failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BackupError {
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{} is not empty; give a new or empty folder", path.display())]
    NotEmpty { path: PathBuf },
    #[error("{} is not a Spindle backup (no {MANIFEST}); a backup that stopped half-way has none either", path.display())]
    NotABackup { path: PathBuf },
    #[error("{}: backup format {found}, this Spindle reads {BACKUP_VERSION}; restore it with a newer Spindle", path.display())]
    Version { path: PathBuf, found: u32 },
    #[error("{}: {msg}", path.display())]
    Manifest { path: PathBuf, msg: String },
    #[error("{} has no library files (library.spdb or library.splog): is it a data dir?", path.display())]
    NoLibrary { path: PathBuf },
    #[error("the library in {} was compacted {MAX_LIBRARY_ATTEMPTS} times while it was being copied; try again", path.display())]
    KeptCompacting { path: PathBuf },
    #[error("the copy of the library does not open")]
    Library(#[source] spindle_store::OpenError),
    #[error("compacting the copy of the library")]
    Compact(#[source] spindle_store::CompactError),
    #[error("the copy of the library has problems: {}", .0.join("; "))]
    LibraryCheck(Vec<String>),
    #[error("the copy of the listening history does not open")]
    Listens(#[source] spindle_listens::OpenError),
    #[error("the copy of the accounts does not open")]
    Accounts(#[source] crate::accounts::AccountError),
    #[error("the copy of the user data does not open")]
    UserData(#[source] crate::userdata::UserDataError),
    #[error("the restored {what} count is {got}, the backup says {want}")]
    Count {
        what: &'static str,
        got: usize,
        want: usize,
    },
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> BackupError + '_ {
    move |source| BackupError::Io {
        path: path.to_owned(),
        source,
    }
}

/// What a backup holds: the manifest, `spindle-backup.json`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct Manifest {
    pub version: u32,
    /// When the backup finished, UNIX seconds.
    pub created: i64,
    /// The Spindle that wrote it.
    pub spindle: String,
    /// Library entries.
    pub entries: usize,
    /// Listens in the history.
    pub listens: usize,
    /// Accounts.
    pub users: usize,
    /// Every file of the backup (relative, `/`-separated) and its length.
    pub files: Vec<(String, u64)>,
}

/// Copies the state of `data_dir` into `dest` (new, or an empty folder),
/// while a server may be running on it; see the module doc. Returns the
/// manifest it wrote.
pub fn backup(data_dir: &Path, dest: &Path, now: i64) -> Result<Manifest, BackupError> {
    if !data_dir.join(DATA_FILE).exists() && !data_dir.join(LOG_FILE).exists() {
        return Err(BackupError::NoLibrary {
            path: data_dir.to_owned(),
        });
    }
    make_empty_dir(dest)?;
    // Small files replaced whole: a read is one version of each.
    let acc_dir = dest.join(ACCOUNTS_DIR);
    for name in [KEY_FILE, ACCOUNTS_FILE] {
        copy_if_exists(&data_dir.join(ACCOUNTS_DIR).join(name), &acc_dir, name)?;
    }
    let ud = data_dir.join(USERDATA_DIR);
    if ud.is_dir() {
        for e in std::fs::read_dir(&ud).map_err(io(&ud))? {
            let e = e.map_err(io(&ud))?;
            let name = e.file_name().to_string_lossy().into_owned();
            if e.file_type().map_err(io(&ud))?.is_file() && !name.ends_with(".tmp") {
                copy_if_exists(&e.path(), &dest.join(USERDATA_DIR), &name)?;
            }
        }
    }
    let tiers = data_dir.join(TIERS_DIR);
    copy_if_exists(&tiers.join(TIERS_PINS), &dest.join(TIERS_DIR), TIERS_PINS)?;
    if let Some(bytes) = read_prefix(&tiers.join(TIERS_REPLICAS))? {
        // Whole lines only: a line being appended is not a record yet.
        let end = bytes.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
        write_new(&dest.join(TIERS_DIR), TIERS_REPLICAS, &bytes[..end])?;
    }
    // The append-only history: whatever length it has when opened.
    if let Some(bytes) = read_prefix(&data_dir.join(LISTENS_DIR).join(spindle_listens::LOG_FILE))? {
        write_new(&dest.join(LISTENS_DIR), spindle_listens::LOG_FILE, &bytes)?;
    }
    copy_library(data_dir, dest, &mut || {})?;
    let (entries, listens, users) = open_copy(dest, true)?;
    let manifest = Manifest {
        version: BACKUP_VERSION,
        created: now,
        spindle: env!("CARGO_PKG_VERSION").to_owned(),
        entries,
        listens,
        users,
        files: list_files(dest)?,
    };
    let bytes = serde_json::to_vec_pretty(&manifest).map_err(|e| BackupError::Manifest {
        path: dest.join(MANIFEST),
        msg: e.to_string(),
    })?;
    write_new(dest, MANIFEST, &bytes)?;
    sync_dir(dest)?;
    Ok(manifest)
}

/// Reads the manifest of the backup in `src`.
pub fn read_manifest(src: &Path) -> Result<Manifest, BackupError> {
    let path = src.join(MANIFEST);
    let bytes = match std::fs::read(&path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(BackupError::NotABackup {
                path: src.to_owned(),
            })
        }
        Err(e) => return Err(io(&path)(e)),
    };
    #[derive(Deserialize)]
    struct Version {
        version: u32,
    }
    let v: Version = serde_json::from_slice(&bytes).map_err(|e| BackupError::Manifest {
        path: path.clone(),
        msg: e.to_string(),
    })?;
    if v.version > BACKUP_VERSION {
        return Err(BackupError::Version {
            path,
            found: v.version,
        });
    }
    serde_json::from_slice(&bytes).map_err(|e| BackupError::Manifest {
        path,
        msg: e.to_string(),
    })
}

/// Brings the backup in `src` back into `data_dir`, which must be new or
/// empty: the files go to a folder beside it, are opened and counted,
/// and that folder is then renamed to `data_dir`, so a restore that fails
/// leaves `data_dir` as it was. Returns the backup's manifest.
pub fn restore(src: &Path, data_dir: &Path) -> Result<Manifest, BackupError> {
    let manifest = read_manifest(src)?;
    if data_dir.exists() && !is_empty_dir(data_dir)? {
        return Err(BackupError::NotEmpty {
            path: data_dir.to_owned(),
        });
    }
    let parent = data_dir
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    create_private_dir(parent)?;
    let name = data_dir
        .file_name()
        .map_or_else(|| "data".into(), |n| n.to_string_lossy().into_owned());
    let staging = parent.join(format!(".{name}.restoring-{}", std::process::id()));
    if staging.exists() {
        std::fs::remove_dir_all(&staging).map_err(io(&staging))?;
    }
    let done = (|| {
        make_empty_dir(&staging)?;
        for (rel, _) in &manifest.files {
            let from = src.join(rel);
            let (dir, file) = split_rel(&staging, rel);
            let bytes = std::fs::read(&from).map_err(io(&from))?;
            write_new(&dir, &file, &bytes)?;
        }
        let (entries, listens, users) = open_copy(&staging, false)?;
        for (what, got, want) in [
            ("library entry", entries, manifest.entries),
            ("listen", listens, manifest.listens),
            ("user", users, manifest.users),
        ] {
            if got != want {
                return Err(BackupError::Count { what, got, want });
            }
        }
        sync_dir(&staging)?;
        if data_dir.exists() {
            // Empty (checked above): rename(2) replaces an empty folder.
            std::fs::remove_dir(data_dir).map_err(io(data_dir))?;
        }
        std::fs::rename(&staging, data_dir).map_err(io(data_dir))?;
        sync_dir(parent)
    })();
    if done.is_err() && staging.exists() {
        let _ = std::fs::remove_dir_all(&staging);
    }
    done.map(|()| manifest)
}

/// Copies the library's data file and log as one consistent pair (see
/// the module doc), retrying when a compaction replaced the data file in
/// between. `between` runs between the two opens (tests compact there).
fn copy_library(
    data_dir: &Path,
    dest: &Path,
    between: &mut dyn FnMut(),
) -> Result<(), BackupError> {
    let data_path = data_dir.join(DATA_FILE);
    for _ in 0..MAX_LIBRARY_ATTEMPTS {
        let data = open_if_exists(&data_path)?;
        let before = data
            .as_ref()
            .map(|f| f.metadata().map(|m| m.ino()))
            .transpose()
            .map_err(io(&data_path))?;
        between();
        let log = open_if_exists(&data_dir.join(LOG_FILE))?;
        let after = match std::fs::metadata(&data_path) {
            Ok(m) => Some(m.ino()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => return Err(io(&data_path)(e)),
        };
        if before != after {
            continue;
        }
        if let Some(f) = data {
            write_new(dest, DATA_FILE, &read_all(f, &data_path)?)?;
        }
        if let Some(f) = log {
            write_new(dest, LOG_FILE, &read_all(f, &data_dir.join(LOG_FILE))?)?;
        }
        return Ok(());
    }
    Err(BackupError::KeptCompacting {
        path: data_dir.to_owned(),
    })
}

/// Opens the copy in `dir` as a server would and counts it. With
/// `settle`, first makes it clean: the library's log replayed into a
/// fresh data file and a torn tail of the history cut, so the backup
/// opens without a warning.
fn open_copy(dir: &Path, settle: bool) -> Result<(usize, usize, usize), BackupError> {
    let entries = {
        let db = if settle {
            let db = Db::open(dir).map_err(BackupError::Library)?;
            db.compact().map_err(BackupError::Compact)?;
            db
        } else {
            Db::open_read_only(dir).map_err(BackupError::Library)?
        };
        let problems = db.read().check();
        if !problems.is_empty() {
            return Err(BackupError::LibraryCheck(
                problems.iter().map(ToString::to_string).collect(),
            ));
        }
        let n = db.stats().entries;
        let _ = db.close();
        n
    };
    // The lock belongs to the running copy, not to the backup.
    let lock = dir.join(spindle_store::LOCK_FILE);
    if settle && lock.exists() {
        std::fs::remove_file(&lock).map_err(io(&lock))?;
    }
    let (_, report) = Listens::open(&dir.join(LISTENS_DIR)).map_err(BackupError::Listens)?;
    let users = Accounts::open(&dir.join(ACCOUNTS_DIR))
        .map_err(BackupError::Accounts)?
        .user_names()
        .len();
    UserData::open(Some(&dir.join(USERDATA_DIR))).map_err(BackupError::UserData)?;
    Ok((entries, report.listens, users))
}

fn open_if_exists(path: &Path) -> Result<Option<File>, BackupError> {
    match File::open(path) {
        Ok(f) => Ok(Some(f)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(io(path)(e)),
    }
}

/// Everything an open file holds up to the length it had when asked.
fn read_all(f: File, path: &Path) -> Result<Vec<u8>, BackupError> {
    let len = f.metadata().map_err(io(path))?.len();
    let mut bytes = Vec::with_capacity(usize::try_from(len).unwrap_or(0));
    f.take(len).read_to_end(&mut bytes).map_err(io(path))?;
    Ok(bytes)
}

/// The bytes of `path` up to its length now, if it exists.
fn read_prefix(path: &Path) -> Result<Option<Vec<u8>>, BackupError> {
    open_if_exists(path)?.map(|f| read_all(f, path)).transpose()
}

fn copy_if_exists(from: &Path, dir: &Path, name: &str) -> Result<(), BackupError> {
    match read_prefix(from)? {
        Some(bytes) => write_new(dir, name, &bytes),
        None => Ok(()),
    }
}

fn split_rel(root: &Path, rel: &str) -> (PathBuf, String) {
    let mut dir = root.to_owned();
    let mut parts: Vec<&str> = rel
        .split('/')
        .filter(|p| !p.is_empty() && *p != "..")
        .collect();
    let file = parts.pop().unwrap_or_default().to_owned();
    for p in parts {
        dir.push(p);
    }
    (dir, file)
}

/// Writes `dir/name` (creating `dir`, mode 0700) with mode 0600, fsynced.
fn write_new(dir: &Path, name: &str, bytes: &[u8]) -> Result<(), BackupError> {
    create_private_dir(dir)?;
    let path = dir.join(name);
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(FILE_MODE)
        .open(&path)
        .map_err(io(&path))?;
    f.write_all(bytes).map_err(io(&path))?;
    f.sync_all().map_err(io(&path))
}

fn create_private_dir(dir: &Path) -> Result<(), BackupError> {
    if dir.is_dir() {
        return Ok(());
    }
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(DIR_MODE)
        .create(dir)
        .map_err(io(dir))
}

fn is_empty_dir(dir: &Path) -> Result<bool, BackupError> {
    let mut it = std::fs::read_dir(dir).map_err(io(dir))?;
    Ok(it.next().is_none())
}

/// Creates `dir` (mode 0700), or accepts an existing empty one.
fn make_empty_dir(dir: &Path) -> Result<(), BackupError> {
    if dir.exists() {
        if !is_empty_dir(dir)? {
            return Err(BackupError::NotEmpty {
                path: dir.to_owned(),
            });
        }
        return Ok(());
    }
    create_private_dir(dir)
}

fn sync_dir(dir: &Path) -> Result<(), BackupError> {
    File::open(dir).and_then(|d| d.sync_all()).map_err(io(dir))
}

/// Every regular file under `root`, relative and `/`-separated, sorted,
/// with its length.
fn list_files(root: &Path) -> Result<Vec<(String, u64)>, BackupError> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_owned()];
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).map_err(io(&dir))? {
            let e = e.map_err(io(&dir))?;
            let path = e.path();
            let meta = e.metadata().map_err(io(&path))?;
            if meta.is_dir() {
                stack.push(path);
            } else if meta.is_file() {
                if let Ok(rel) = path.strip_prefix(root) {
                    let rel: Vec<String> = rel
                        .components()
                        .map(|c| c.as_os_str().to_string_lossy().into_owned())
                        .collect();
                    out.push((rel.join("/"), meta.len()));
                }
            }
        }
    }
    out.sort();
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use spindle_listens::Listen;
    use spindle_store::Op;

    fn add_entry(db: &Db, artist: &str) {
        let id = db.reserve_id();
        db.commit(vec![
            Op::CreateEntry(id),
            Op::AddProp {
                entry: id,
                key: "artist".into(),
                source: "plugin/test".into(),
                value: artist.into(),
            },
        ])
        .unwrap();
    }

    /// A data dir with `n` entries, `n` listens and one user.
    fn data_dir(n: usize) -> (tempfile::TempDir, Db, Listens) {
        let dir = tempfile::tempdir().unwrap();
        let db = Db::open(dir.path()).unwrap();
        for i in 0..n {
            add_entry(&db, &format!("a{i}"));
        }
        let (ls, _) = Listens::open(&dir.path().join(LISTENS_DIR)).unwrap();
        for i in 0..n {
            ls.submit(&[Listen::new("ann", 1_700_000_000 + i as i64, "A", "T")])
                .unwrap();
        }
        let acc = Accounts::open(&dir.path().join(ACCOUNTS_DIR)).unwrap();
        acc.add_user_cheaply("ann", "pw");
        (dir, db, ls)
    }

    #[test]
    fn a_backup_of_a_live_data_dir_restores_with_the_same_counts() {
        let (src, db, ls) = data_dir(5);
        let out = tempfile::tempdir().unwrap();
        let dest = out.path().join("b");
        let m = backup(src.path(), &dest, 42).unwrap();
        assert_eq!((m.entries, m.listens, m.users), (5, 5, 1));
        assert!(m.files.iter().any(|(f, _)| f == "accounts/accounts.json"));
        assert!(!m.files.iter().any(|(f, _)| f.ends_with(".lock")), "{m:?}");
        // Writes after the backup are not in it.
        add_entry(&db, "later");
        ls.submit(&[Listen::new("ann", 1_800_000_000, "B", "U")])
            .unwrap();
        let restored = out.path().join("new-data");
        let r = restore(&dest, &restored).unwrap();
        assert_eq!(r, m);
        let db2 = Db::open_read_only(&restored).unwrap();
        assert_eq!(db2.stats().entries, 5);
        assert!(db2.open_report().warnings.is_empty());
        let acc = Accounts::open(&restored.join(ACCOUNTS_DIR)).unwrap();
        assert!(
            acc.check_password("ann", "pw"),
            "the sealing key came along"
        );
    }

    #[test]
    fn a_torn_listens_tail_and_a_torn_library_log_tail_are_cut_from_the_copy() {
        let (src, db, ls) = data_dir(3);
        drop((db, ls));
        for f in [
            src.path().join(LOG_FILE),
            src.path().join(LISTENS_DIR).join(spindle_listens::LOG_FILE),
        ] {
            let mut h = std::fs::OpenOptions::new().append(true).open(f).unwrap();
            h.write_all(&[7, 0, 0, 0, 1, 2]).unwrap();
        }
        let out = tempfile::tempdir().unwrap();
        let m = backup(src.path(), &out.path().join("b"), 1).unwrap();
        assert_eq!((m.entries, m.listens), (3, 3));
        let db = Db::open_read_only(out.path().join("b")).unwrap();
        assert!(
            db.open_report().warnings.is_empty(),
            "clean: {:?}",
            db.open_report().warnings
        );
    }

    #[test]
    fn a_compaction_between_opening_the_data_file_and_the_log_is_taken_again() {
        let (src, db, _ls) = data_dir(2);
        db.compact().unwrap();
        add_entry(&db, "in the old log");
        let out = tempfile::tempdir().unwrap();
        let mut compactions = 0;
        copy_library(src.path(), out.path(), &mut || {
            // Once: the first attempt sees an old data file and a new log.
            if compactions == 0 {
                add_entry(&db, "in the new data file");
                db.compact().unwrap();
            }
            compactions += 1;
        })
        .unwrap();
        assert_eq!(compactions, 2, "the pair was taken a second time");
        let copy = Db::open(out.path()).unwrap();
        assert_eq!(copy.stats().entries, 4);
    }

    #[test]
    fn backups_taken_while_the_library_commits_and_compacts_hold_every_earlier_commit() {
        let (src, db, _ls) = data_dir(0);
        let stop = std::sync::atomic::AtomicBool::new(false);
        let out = tempfile::tempdir().unwrap();
        std::thread::scope(|s| {
            s.spawn(|| {
                let mut i = 0;
                while !stop.load(std::sync::atomic::Ordering::SeqCst) {
                    add_entry(&db, &format!("x{i}"));
                    if i % 3 == 0 {
                        db.compact().unwrap();
                    }
                    i += 1;
                }
            });
            for k in 0..10 {
                let before = db.stats().entries;
                let m = backup(src.path(), &out.path().join(format!("b{k}")), 1).unwrap();
                assert!(m.entries >= before, "{} < {before}", m.entries);
            }
            stop.store(true, std::sync::atomic::Ordering::SeqCst);
        });
    }

    #[test]
    fn restore_refuses_a_data_dir_that_is_not_empty_and_a_folder_that_is_no_backup() {
        let (src, _db, _ls) = data_dir(1);
        let out = tempfile::tempdir().unwrap();
        backup(src.path(), &out.path().join("b"), 1).unwrap();
        assert!(matches!(
            restore(&out.path().join("b"), src.path()),
            Err(BackupError::NotEmpty { .. })
        ));
        assert!(matches!(
            restore(src.path(), &out.path().join("x")),
            Err(BackupError::NotABackup { .. })
        ));
        assert!(matches!(
            backup(src.path(), &out.path().join("b"), 1),
            Err(BackupError::NotEmpty { .. })
        ));
        assert!(!out.path().join("x").exists());
    }
}
