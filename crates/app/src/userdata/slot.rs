//! One JSON file of the user data and its contents in memory: changed
//! under a short lock, written outside it (temporary file, fsync, rename,
//! folder fsync) under a writer lock of this file alone, so a slow disk
//! makes only this file's writers wait, never a reader or another
//! user's change.

use std::io::Write;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde::de::DeserializeOwned;
use serde::Serialize;

use super::UserDataError;
use crate::sync::lock;

/// A file's mode: its owner's only, whatever the umask.
pub(super) const FILE_MODE: u32 = 0o600;

pub(super) type Stamp = Option<(std::time::SystemTime, u64)>;

pub(super) fn stamp(path: &Path) -> Stamp {
    let m = std::fs::metadata(path).ok()?;
    Some((m.modified().ok()?, m.len()))
}

pub(super) fn io(path: &Path) -> impl FnOnce(std::io::Error) -> UserDataError + '_ {
    move |source| UserDataError::Io {
        path: path.to_owned(),
        source,
    }
}

/// Narrows a file an older Spindle left readable by others to 0600.
pub(super) fn make_private(path: &Path) -> std::io::Result<()> {
    match std::fs::metadata(path) {
        Ok(m) if m.permissions().mode() & 0o777 != FILE_MODE => {
            std::fs::set_permissions(path, std::fs::Permissions::from_mode(FILE_MODE))
        }
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e),
        _ => Ok(()),
    }
}

/// Reads and parses `path`; `None` when there is no such file.
pub(super) fn read_json<T: DeserializeOwned>(path: &Path) -> Result<Option<T>, UserDataError> {
    match std::fs::read(path) {
        Ok(b) => serde_json::from_slice(&b)
            .map(Some)
            .map_err(|source| UserDataError::Format {
                path: path.to_owned(),
                source,
            }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(io(path)(e)),
    }
}

/// Writes `bytes` to `path` whole: a crash leaves the old or the new
/// file, never a mix.
pub(super) fn write_file(path: &Path, bytes: &[u8]) -> Result<(), UserDataError> {
    let mut name = path.file_name().unwrap_or_default().to_owned();
    name.push(".tmp");
    let tmp = path.with_file_name(name);
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(FILE_MODE)
        .open(&tmp)
        .map_err(io(&tmp))?;
    f.set_permissions(std::fs::Permissions::from_mode(FILE_MODE))
        .map_err(io(&tmp))?;
    f.write_all(bytes).map_err(io(&tmp))?;
    f.sync_all().map_err(io(&tmp))?;
    std::fs::rename(&tmp, path).map_err(io(path))?;
    sync_dir(path);
    Ok(())
}

fn sync_dir(path: &Path) {
    if let Some(dir) = path.parent() {
        if let Ok(d) = std::fs::File::open(dir) {
            let _ = d.sync_all();
        }
    }
}

/// Removes `path` (no file is fine).
pub(super) fn remove_file(path: &Path) -> Result<(), UserDataError> {
    match std::fs::remove_file(path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(io(path)(e)),
        _ => {
            sync_dir(path);
            Ok(())
        }
    }
}

struct State<T> {
    data: T,
    /// The file as last read or written by this process.
    seen: Stamp,
    /// Versions changed in memory (counted up on each change).
    version: u64,
    /// Versions serialized and not yet on disk: while any is, a file
    /// that differs from `seen` is this process's write in flight, not
    /// another process's change.
    pending: u64,
}

/// One file and its data.
pub(super) struct Slot<T> {
    path: Option<PathBuf>,
    state: Mutex<State<T>>,
    /// Held while this file is written; the version on disk.
    writer: Mutex<u64>,
}

impl<T: Serialize + DeserializeOwned + Default> Slot<T> {
    pub(super) fn new(path: Option<PathBuf>, data: T) -> Self {
        let seen = path.as_deref().and_then(stamp);
        Slot {
            path,
            state: Mutex::new(State {
                data,
                seen,
                version: 0,
                pending: 0,
            }),
            writer: Mutex::new(0),
        }
    }

    /// Re-reads the file if another process changed it since this one
    /// last read or wrote it; a file that cannot be read or parsed leaves
    /// the data as it is (the next write replaces it). A file that is gone
    /// (`spindle user delete` removed it) empties the data.
    fn refresh(&self, s: &mut State<T>) {
        let Some(path) = &self.path else {
            return;
        };
        if s.pending > 0 {
            return;
        }
        let now = stamp(path);
        if now == s.seen {
            return;
        }
        match read_json::<T>(path) {
            Ok(Some(fresh)) => s.data = fresh,
            Ok(None) => s.data = T::default(),
            Err(_) => return,
        }
        s.seen = now;
    }

    /// Reads the data (as another process may have changed it when
    /// `fresh`).
    pub(super) fn read<R>(&self, fresh: bool, f: impl FnOnce(&T) -> R) -> R {
        let mut s = lock(&self.state);
        if fresh {
            self.refresh(&mut s);
        }
        f(&s.data)
    }

    /// Changes the data with `f`, which checks before it changes anything
    /// (a refusal writes nothing), then writes the file. Returns once the
    /// change is on disk; the data lock is held only while `f` runs and
    /// the data is serialized.
    pub(super) fn change<R>(
        &self,
        f: impl FnOnce(&mut T) -> Result<R, UserDataError>,
    ) -> Result<R, UserDataError> {
        let (out, bytes, version) = {
            let mut s = lock(&self.state);
            self.refresh(&mut s);
            let out = f(&mut s.data)?;
            s.version += 1;
            let bytes =
                match &self.path {
                    Some(path) => Some(serde_json::to_vec(&s.data).map_err(|source| {
                        UserDataError::Format {
                            path: path.clone(),
                            source,
                        }
                    })?),
                    None => None,
                };
            if bytes.is_some() {
                s.pending += 1;
            }
            (out, bytes, s.version)
        };
        if let (Some(path), Some(bytes)) = (&self.path, bytes) {
            let res = self.write(path, &bytes, version);
            let mut s = lock(&self.state);
            s.pending = s.pending.saturating_sub(1);
            res?;
        }
        Ok(out)
    }

    /// Writes version `version` unless a newer one is on disk already.
    fn write(&self, path: &Path, bytes: &[u8], version: u64) -> Result<(), UserDataError> {
        let mut on_disk = lock(&self.writer);
        if *on_disk >= version {
            return Ok(());
        }
        write_file(path, bytes)?;
        *on_disk = version;
        lock(&self.state).seen = stamp(path);
        Ok(())
    }

    /// Changes the data in memory only; the next write takes it along.
    pub(super) fn mutate<R>(&self, f: impl FnOnce(&mut T) -> R) -> R {
        f(&mut lock(&self.state).data)
    }

    /// Writes the data as it is now (a change made without a write, such
    /// as a share's visits).
    pub(super) fn flush(&self) -> Result<(), UserDataError> {
        self.change(|_| Ok(()))
    }
}
