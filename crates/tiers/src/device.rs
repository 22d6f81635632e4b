//! Devices: where copies of tracks live. A [`Backend`] opens a track by
//! its key at a byte offset, stores, probes and deletes copies. Two real
//! kinds — [`Folder`] (a local folder: a music folder, an archive disk,
//! the hot folder) and [`S3Device`] (a bucket) — and [`Throttled`], a
//! wrapper that models a busy disk for the device-choice benchmark and
//! the failover tests (it counts its own busy time, [`BusyClock`], which
//! no real back end does).
//!
//! A key is a relative path with `/` separators (the track's path below
//! its music folder); keys with `..`, a leading `/` or NUL are refused.
//! A [`Folder`] opens through [`spindle_io::beneath::MusicRoot`], so a
//! symlink in the folder that leads out of it is refused as well.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use bytes::Bytes;
use futures_util::future::BoxFuture;
use spindle_io::beneath::{MusicRoot, OpenRefused};
use tokio::io::AsyncReadExt;

use crate::s3::{S3Client, S3Error};

/// Bytes per chunk read from a file.
pub const CHUNK: usize = 64 * 1024;

/// Why a device could not serve or store a copy.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DeviceError {
    #[error("{device}: {key}: no such copy")]
    NotFound { device: String, key: String },
    #[error("{device}: {key}: {source}")]
    Io {
        device: String,
        key: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{device}: {source}")]
    S3 {
        device: String,
        #[source]
        source: S3Error,
    },
    #[error("{device}: refused key {key:?} (not a relative path)")]
    BadKey { device: String, key: String },
    /// The folder refused to open the key: a symlink leading out of it,
    /// or not a regular file.
    #[error("{device}: {key}: {source}")]
    Refused {
        device: String,
        key: String,
        #[source]
        source: OpenRefused,
    },
    #[error("{device}: device is read-only")]
    ReadOnly { device: String },
    /// No data within the stall timeout (`[tiers] stall_timeout_ms`).
    #[error("{device}: {key}: no data within the stall timeout")]
    Stalled { device: String, key: String },
    /// The copy's length differs from the one the stream or the replica
    /// index expects: a stale or damaged copy.
    #[error("{device}: {key}: this copy has {len} bytes, {want} were expected")]
    WrongLength {
        device: String,
        key: String,
        len: u64,
        want: u64,
    },
}

impl DeviceError {
    /// A missing copy, as opposed to a device that misbehaves.
    pub fn is_not_found(&self) -> bool {
        matches!(self, DeviceError::NotFound { .. })
            || matches!(
                self,
                DeviceError::S3 {
                    source: S3Error::NotFound { .. },
                    ..
                }
            )
    }
}

/// What a device is, as status shows it (`folder`, `s3`, `hot`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum DeviceKind {
    /// A local folder: a music folder or another cold folder.
    Folder,
    /// An S3 bucket.
    S3,
    /// The hot folder.
    Hot,
}

impl DeviceKind {
    /// The name status and logs show.
    pub fn as_str(self) -> &'static str {
        match self {
            DeviceKind::Folder => "folder",
            DeviceKind::S3 => "s3",
            DeviceKind::Hot => "hot",
        }
    }
}

impl std::fmt::Display for DeviceKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Whether `key` is a safe relative path.
pub fn key_is_safe(key: &str) -> bool {
    !key.is_empty()
        && !key.starts_with('/')
        && !key.contains('\0')
        && !key.contains('\\')
        && key
            .split('/')
            .all(|c| !c.is_empty() && c != "." && c != "..")
}

/// An open copy: the total length of the object and a reader positioned
/// at the requested offset.
pub struct Opened {
    pub len: u64,
    pub reader: Reader,
}

impl Opened {
    /// The file this copy reads, when it is a plain local file (see
    /// [`Reader::local_file`]).
    pub fn local_file(&self) -> Option<Arc<std::fs::File>> {
        self.reader.local_file()
    }
}

impl std::fmt::Debug for Opened {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Opened")
            .field("len", &self.len)
            .finish_non_exhaustive()
    }
}

/// Reads a copy chunk by chunk.
pub enum Reader {
    File {
        file: tokio::fs::File,
        left: u64,
    },
    /// A file of a local folder, as its checked open gave it, read at an
    /// offset of its own (`pread`): the descriptor's position is never
    /// used, so others may send from the same descriptor
    /// ([`Reader::local_file`]).
    Local {
        file: Arc<std::fs::File>,
        offset: u64,
        left: u64,
    },
    Http {
        response: reqwest::Response,
        client: Arc<S3Client>,
        endpoint: usize,
    },
    /// Fault injection: the inner reader, failing once `left` more bytes
    /// have been returned.
    FailAfter {
        inner: Box<Reader>,
        left: u64,
    },
    /// Fault injection: the inner reader, waiting `delay` before each chunk.
    Slow {
        inner: Box<Reader>,
        delay: Duration,
    },
}

impl Reader {
    /// The file a [`Reader::Local`] reads: a copy that can be sent by
    /// other means (the server's `sendfile`) from its offset on. `None`
    /// for anything else, fault-injecting wrappers included, whose
    /// failures must go through their reader.
    pub fn local_file(&self) -> Option<Arc<std::fs::File>> {
        match self {
            Reader::Local { file, .. } => Some(file.clone()),
            _ => None,
        }
    }

    /// The next chunk, `None` at the end.
    pub fn next_chunk(&mut self) -> BoxFuture<'_, std::io::Result<Option<Bytes>>> {
        Box::pin(async move {
            match self {
                Reader::File { file, left } => {
                    if *left == 0 {
                        return Ok(None);
                    }
                    let want = (*left).min(CHUNK as u64) as usize;
                    let mut buf = vec![0u8; want];
                    let n = file.read(&mut buf).await?;
                    if n == 0 {
                        return Err(std::io::Error::new(
                            std::io::ErrorKind::UnexpectedEof,
                            "the file is shorter than it was",
                        ));
                    }
                    buf.truncate(n);
                    *left -= n as u64;
                    Ok(Some(Bytes::from(buf)))
                }
                Reader::Local { file, offset, left } => {
                    if *left == 0 {
                        return Ok(None);
                    }
                    let want = (*left).min(CHUNK as u64) as usize;
                    let (f, at) = (file.clone(), *offset);
                    let buf = tokio::task::spawn_blocking(move || read_at(&f, want, at))
                        .await
                        .map_err(std::io::Error::other)??;
                    if buf.is_empty() {
                        return Err(std::io::Error::new(
                            std::io::ErrorKind::UnexpectedEof,
                            "the file is shorter than it was",
                        ));
                    }
                    *offset += buf.len() as u64;
                    *left -= buf.len() as u64;
                    Ok(Some(Bytes::from(buf)))
                }
                Reader::Http {
                    response,
                    client,
                    endpoint,
                } => match response.chunk().await {
                    Ok(c) => Ok(c),
                    Err(e) => {
                        client.mark_down(*endpoint);
                        Err(std::io::Error::other(e))
                    }
                },
                Reader::FailAfter { inner, left } => {
                    if *left == 0 {
                        return Err(std::io::Error::other("injected failure"));
                    }
                    match inner.next_chunk().await? {
                        Some(mut c) => {
                            if c.len() as u64 > *left {
                                c.truncate(*left as usize);
                            }
                            *left -= c.len() as u64;
                            Ok(Some(c))
                        }
                        None => Ok(None),
                    }
                }
                Reader::Slow { inner, delay } => {
                    tokio::time::sleep(*delay).await;
                    inner.next_chunk().await
                }
            }
        })
    }
}

/// Up to `want` bytes of `file` from `offset` (blocking; fewer at its end).
fn read_at(file: &std::fs::File, want: usize, offset: u64) -> std::io::Result<Vec<u8>> {
    use std::os::unix::fs::FileExt;
    let mut buf = vec![0u8; want];
    let n = loop {
        match file.read_at(&mut buf, offset) {
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            r => break r?,
        }
    };
    buf.truncate(n);
    Ok(buf)
}

/// A device's storage back end.
pub trait Backend: Send + Sync + 'static {
    /// What the device is.
    fn kind(&self) -> DeviceKind;
    /// The folder, for a local device (to find its block device).
    fn local_path(&self) -> Option<&Path> {
        None
    }
    /// Opens the copy of `key` at `offset`.
    fn open<'a>(&'a self, key: &'a str, offset: u64) -> BoxFuture<'a, Result<Opened, DeviceError>>;
    /// Stores the file at `src` as `key`; returns its length.
    fn put<'a>(&'a self, key: &'a str, src: &'a Path) -> BoxFuture<'a, Result<u64, DeviceError>>;
    /// The length of the copy of `key`, `None` when there is none.
    fn head<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<Option<u64>, DeviceError>>;
    /// Removes the copy of `key`.
    fn delete<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<(), DeviceError>>;
    /// Whether the device can be used at all right now (an S3 device with
    /// every endpoint marked down cannot).
    fn reachable(&self) -> bool {
        true
    }
    /// Checks that the device is there at all (its folder exists, its
    /// bucket answers): the health probe behind re-replication. The
    /// default says yes.
    fn probe(&self) -> BoxFuture<'_, Result<(), DeviceError>> {
        Box::pin(async { Ok(()) })
    }
}

/// A device that counts the time it has had a request in service, as a
/// disk's `%util` would (the simulated devices of the device-choice
/// benchmark, [`Throttled`]). Real devices do not: their `%util` comes
/// from `/proc/diskstats`. Given to the tiers with
/// [`crate::Tiers::sample_busy_from`].
pub trait BusyClock: Send + Sync + 'static {
    /// Total time with at least one request in service.
    fn busy(&self) -> Duration;
}

/// A local folder. Reads open through a [`MusicRoot`] made on first use
/// (the folder may not exist yet when the device is set up).
pub struct Folder {
    name: String,
    root: PathBuf,
    writable: bool,
    beneath: OnceLock<MusicRoot>,
}

impl Folder {
    pub fn new(name: &str, root: PathBuf, writable: bool) -> Folder {
        Folder {
            name: name.to_owned(),
            root,
            writable,
            beneath: OnceLock::new(),
        }
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    fn path_of(&self, key: &str) -> Result<PathBuf, DeviceError> {
        if !key_is_safe(key) {
            return Err(DeviceError::BadKey {
                device: self.name.clone(),
                key: key.to_owned(),
            });
        }
        Ok(self.root.join(key))
    }

    /// Why `key` could not be opened, as a device error: a missing file
    /// (or folder) is [`DeviceError::NotFound`], a refusal is
    /// [`DeviceError::Refused`].
    fn refused(&self, key: &str, source: OpenRefused) -> DeviceError {
        match source {
            OpenRefused::Root { source, .. } | OpenRefused::Io { source, .. } => {
                self.io(key, source)
            }
            source => DeviceError::Refused {
                device: self.name.clone(),
                key: key.to_owned(),
                source,
            },
        }
    }

    fn io(&self, key: &str, source: std::io::Error) -> DeviceError {
        if source.kind() == std::io::ErrorKind::NotFound {
            DeviceError::NotFound {
                device: self.name.clone(),
                key: key.to_owned(),
            }
        } else {
            DeviceError::Io {
                device: self.name.clone(),
                key: key.to_owned(),
                source,
            }
        }
    }
}

impl Backend for Folder {
    fn kind(&self) -> DeviceKind {
        DeviceKind::Folder
    }

    fn local_path(&self) -> Option<&Path> {
        Some(&self.root)
    }

    /// One blocking hop: the checked open (and, the first time, the
    /// folder's [`MusicRoot`]) and its `fstat`. The copy is a
    /// [`Reader::Local`]: the server may send the very descriptor the
    /// check gave by `sendfile` ([`Opened::local_file`]).
    fn open<'a>(&'a self, key: &'a str, offset: u64) -> BoxFuture<'a, Result<Opened, DeviceError>> {
        Box::pin(async move {
            self.path_of(key)?;
            let known = self.beneath.get().cloned();
            let root = self.root.clone();
            let rel = PathBuf::from(key);
            let (file, len, beneath) = tokio::task::spawn_blocking(move || {
                let beneath = match known {
                    Some(b) => b,
                    None => MusicRoot::new(&root)?,
                };
                let (file, meta) = beneath.open(&rel)?;
                Ok((file, meta.len(), beneath))
            })
            .await
            .map_err(|e| self.io(key, std::io::Error::other(e)))?
            .map_err(|e| self.refused(key, e))?;
            let _ = self.beneath.set(beneath);
            Ok(Opened {
                len,
                reader: Reader::Local {
                    file: Arc::new(file),
                    offset,
                    left: len.saturating_sub(offset),
                },
            })
        })
    }

    fn put<'a>(&'a self, key: &'a str, src: &'a Path) -> BoxFuture<'a, Result<u64, DeviceError>> {
        Box::pin(async move {
            if !self.writable {
                return Err(DeviceError::ReadOnly {
                    device: self.name.clone(),
                });
            }
            let dst = self.path_of(key)?;
            if let Some(p) = dst.parent() {
                tokio::fs::create_dir_all(p)
                    .await
                    .map_err(|e| self.io(key, e))?;
            }
            // A temporary name, fsynced, then renamed: a crash leaves no
            // partial copy under the key.
            let tmp = dst.with_file_name(format!(
                ".{}.spindle-tmp",
                dst.file_name()
                    .map_or_else(String::new, |n| n.to_string_lossy().into_owned())
            ));
            let n = tokio::fs::copy(src, &tmp)
                .await
                .map_err(|e| self.io(key, e))?;
            let f = tokio::fs::File::open(&tmp)
                .await
                .map_err(|e| self.io(key, e))?;
            f.sync_all().await.map_err(|e| self.io(key, e))?;
            tokio::fs::rename(&tmp, &dst)
                .await
                .map_err(|e| self.io(key, e))?;
            Ok(n)
        })
    }

    fn head<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<Option<u64>, DeviceError>> {
        Box::pin(async move {
            let path = self.path_of(key)?;
            match tokio::fs::metadata(&path).await {
                Ok(m) if m.is_file() => Ok(Some(m.len())),
                Ok(_) => Ok(None),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
                Err(e) => Err(self.io(key, e)),
            }
        })
    }

    fn delete<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<(), DeviceError>> {
        Box::pin(async move {
            if !self.writable {
                return Err(DeviceError::ReadOnly {
                    device: self.name.clone(),
                });
            }
            let path = self.path_of(key)?;
            match tokio::fs::remove_file(&path).await {
                Ok(()) => Ok(()),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
                Err(e) => Err(self.io(key, e)),
            }
        })
    }

    /// The folder exists and is a folder (a disk that was unmounted or
    /// removed fails).
    fn probe(&self) -> BoxFuture<'_, Result<(), DeviceError>> {
        Box::pin(async move {
            let io = |source| DeviceError::Io {
                device: self.name.clone(),
                key: String::new(),
                source,
            };
            let m = tokio::fs::metadata(&self.root).await.map_err(io)?;
            if m.is_dir() {
                Ok(())
            } else {
                Err(io(std::io::Error::other(format!(
                    "{} is not a folder",
                    self.root.display()
                ))))
            }
        })
    }
}

/// An S3 bucket.
pub struct S3Device {
    name: String,
    client: Arc<S3Client>,
}

impl S3Device {
    pub fn new(name: &str, client: S3Client) -> S3Device {
        S3Device {
            name: name.to_owned(),
            client: Arc::new(client),
        }
    }

    pub fn client(&self) -> &S3Client {
        &self.client
    }

    fn err(&self, source: S3Error) -> DeviceError {
        DeviceError::S3 {
            device: self.name.clone(),
            source,
        }
    }

    fn check(&self, key: &str) -> Result<(), DeviceError> {
        if key_is_safe(key) {
            Ok(())
        } else {
            Err(DeviceError::BadKey {
                device: self.name.clone(),
                key: key.to_owned(),
            })
        }
    }
}

impl Backend for S3Device {
    fn kind(&self) -> DeviceKind {
        DeviceKind::S3
    }

    fn open<'a>(&'a self, key: &'a str, offset: u64) -> BoxFuture<'a, Result<Opened, DeviceError>> {
        Box::pin(async move {
            self.check(key)?;
            let got = self
                .client
                .get(key, offset)
                .await
                .map_err(|e| self.err(e))?;
            Ok(Opened {
                len: got.total,
                reader: Reader::Http {
                    response: got.response,
                    client: self.client.clone(),
                    endpoint: got.endpoint,
                },
            })
        })
    }

    fn put<'a>(&'a self, key: &'a str, src: &'a Path) -> BoxFuture<'a, Result<u64, DeviceError>> {
        Box::pin(async move {
            self.check(key)?;
            let data = tokio::fs::read(src)
                .await
                .map_err(|source| DeviceError::Io {
                    device: self.name.clone(),
                    key: key.to_owned(),
                    source,
                })?;
            let n = data.len() as u64;
            self.client.put(key, data).await.map_err(|e| self.err(e))?;
            Ok(n)
        })
    }

    fn head<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<Option<u64>, DeviceError>> {
        Box::pin(async move {
            self.check(key)?;
            self.client.head(key).await.map_err(|e| self.err(e))
        })
    }

    fn delete<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<(), DeviceError>> {
        Box::pin(async move {
            self.check(key)?;
            self.client.delete(key).await.map_err(|e| self.err(e))
        })
    }

    fn reachable(&self) -> bool {
        self.client.any_up()
    }

    /// A HEAD of a key nobody stores: any answer from the bucket (404
    /// included) means it is there.
    fn probe(&self) -> BoxFuture<'_, Result<(), DeviceError>> {
        Box::pin(async move {
            self.client
                .head(".spindle-probe")
                .await
                .map(|_| ())
                .map_err(|e| self.err(e))
        })
    }
}

/// How a [`Throttled`] device delays reads.
#[derive(Debug, Clone, Copy)]
pub struct Throttle {
    /// Requests the device serves at once (a disk: 1; an SSD: many).
    pub parallel: usize,
    /// Time one request holds a slot before its first byte.
    pub service: Duration,
    /// After this many bytes, reads fail (fault injection); `None`: never.
    pub fail_after: Option<u64>,
    /// A pause before each chunk (a slow link).
    pub per_chunk: Duration,
}

/// A device that queues its requests behind `parallel` slots, each held
/// for `service` before the first byte: a busy spinning disk (one slot,
/// 8 ms) or an SSD (32 slots, 0.2 ms). It keeps the busy-time counter a
/// `%util` reading would come from.
pub struct Throttled {
    inner: Arc<dyn Backend>,
    throttle: Throttle,
    slots: tokio::sync::Semaphore,
    in_flight: AtomicUsize,
    /// Nanoseconds during which at least one request was in service.
    busy_ns: AtomicU64,
    busy_since: std::sync::Mutex<Option<std::time::Instant>>,
}

impl Throttled {
    pub fn new(inner: Arc<dyn Backend>, throttle: Throttle) -> Throttled {
        Throttled {
            inner,
            slots: tokio::sync::Semaphore::new(throttle.parallel.max(1)),
            throttle,
            in_flight: AtomicUsize::new(0),
            busy_ns: AtomicU64::new(0),
            busy_since: std::sync::Mutex::new(None),
        }
    }

    /// Total time the device had a request in service (as iostat's
    /// `%util` counts: any request, however parallel the device).
    pub fn busy(&self) -> Duration {
        let extra = self
            .busy_since
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .map_or(0, |t| t.elapsed().as_nanos() as u64);
        Duration::from_nanos(self.busy_ns.load(Ordering::Relaxed) + extra)
    }

    fn enter(&self) {
        if self.in_flight.fetch_add(1, Ordering::SeqCst) == 0 {
            *self.busy_since.lock().unwrap_or_else(|e| e.into_inner()) =
                Some(std::time::Instant::now());
        }
    }

    fn leave(&self) {
        let mut b = self.busy_since.lock().unwrap_or_else(|e| e.into_inner());
        if self.in_flight.fetch_sub(1, Ordering::SeqCst) == 1 {
            if let Some(t) = b.take() {
                self.busy_ns
                    .fetch_add(t.elapsed().as_nanos() as u64, Ordering::Relaxed);
            }
        }
    }
}

impl Backend for Throttled {
    fn kind(&self) -> DeviceKind {
        self.inner.kind()
    }

    fn local_path(&self) -> Option<&Path> {
        self.inner.local_path()
    }

    fn open<'a>(&'a self, key: &'a str, offset: u64) -> BoxFuture<'a, Result<Opened, DeviceError>> {
        Box::pin(async move {
            self.enter();
            let r = async {
                let _slot = self.slots.acquire().await;
                tokio::time::sleep(self.throttle.service).await;
                self.inner.open(key, offset).await
            }
            .await;
            self.leave();
            let mut o = r?;
            if let Some(n) = self.throttle.fail_after {
                o.reader = Reader::FailAfter {
                    inner: Box::new(o.reader),
                    left: n.saturating_sub(offset),
                };
            }
            if !self.throttle.per_chunk.is_zero() {
                o.reader = Reader::Slow {
                    inner: Box::new(o.reader),
                    delay: self.throttle.per_chunk,
                };
            }
            Ok(o)
        })
    }

    fn put<'a>(&'a self, key: &'a str, src: &'a Path) -> BoxFuture<'a, Result<u64, DeviceError>> {
        self.inner.put(key, src)
    }

    fn head<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<Option<u64>, DeviceError>> {
        self.inner.head(key)
    }

    fn delete<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<(), DeviceError>> {
        self.inner.delete(key)
    }

    fn probe(&self) -> BoxFuture<'_, Result<(), DeviceError>> {
        self.inner.probe()
    }
}

impl BusyClock for Throttled {
    fn busy(&self) -> Duration {
        Throttled::busy(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unsafe_keys_are_refused() {
        for k in ["a/b.flac", "x.mp3", "A B/c d.ogg"] {
            assert!(key_is_safe(k), "{k}");
        }
        for k in [
            "",
            "/etc/passwd",
            "../x",
            "a/../../b",
            "a//b",
            "a/./b",
            "a\0b",
            "a\\b",
        ] {
            assert!(!key_is_safe(k), "{k:?}");
        }
    }

    #[tokio::test]
    async fn folders_read_from_an_offset_and_store_by_rename() {
        let d = tempfile::tempdir().unwrap();
        let src = d.path().join("src.bin");
        let data: Vec<u8> = (0..200_000u32).map(|i| (i % 253) as u8).collect();
        std::fs::write(&src, &data).unwrap();
        let f = Folder::new("f", d.path().join("dev"), true);
        assert_eq!(f.put("a/b.bin", &src).await.unwrap(), 200_000);
        assert_eq!(f.head("a/b.bin").await.unwrap(), Some(200_000));
        assert_eq!(f.head("a/c.bin").await.unwrap(), None);
        let mut o = f.open("a/b.bin", 150_000).await.unwrap();
        assert_eq!(o.len, 200_000);
        let mut got = Vec::new();
        while let Some(c) = o.reader.next_chunk().await.unwrap() {
            got.extend_from_slice(&c);
        }
        assert_eq!(got, &data[150_000..]);
        assert!(f.open("nope", 0).await.unwrap_err().is_not_found());
        assert!(matches!(
            f.open("../x", 0).await,
            Err(DeviceError::BadKey { .. })
        ));
        let ro = Folder::new("ro", d.path().join("dev"), false);
        assert!(matches!(
            ro.put("z", &src).await,
            Err(DeviceError::ReadOnly { .. })
        ));
    }

    #[tokio::test]
    async fn a_folder_copy_hands_out_the_file_it_opened_and_a_faulty_one_does_not() {
        use std::io::Seek;
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(d.path().join("dev/a")).unwrap();
        let data: Vec<u8> = (0..150_000u32).map(|i| (i % 251) as u8).collect();
        std::fs::write(d.path().join("dev/a/t.bin"), &data).unwrap();
        let f = Arc::new(Folder::new("f", d.path().join("dev"), false));
        let mut o = f.open("a/t.bin", 10_000).await.unwrap();
        let file = o.local_file().unwrap();
        // The copy reads at offsets of its own: whoever else holds the
        // file may move its position between chunks.
        let mut got = Vec::new();
        while let Some(c) = o.reader.next_chunk().await.unwrap() {
            got.extend_from_slice(&c);
            (&*file).seek(std::io::SeekFrom::Start(7)).unwrap();
        }
        assert_eq!(got, &data[10_000..]);
        let throttle = |fail_after, per_chunk| Throttle {
            parallel: 1,
            service: Duration::ZERO,
            fail_after,
            per_chunk,
        };
        // A busy disk is still a local file; injected faults are not.
        let busy = Throttled::new(f.clone(), throttle(None, Duration::ZERO));
        assert!(busy
            .open("a/t.bin", 0)
            .await
            .unwrap()
            .local_file()
            .is_some());
        let failing = Throttled::new(f.clone(), throttle(Some(10), Duration::ZERO));
        assert!(failing
            .open("a/t.bin", 0)
            .await
            .unwrap()
            .local_file()
            .is_none());
        let slow = Throttled::new(f, throttle(None, Duration::from_millis(1)));
        assert!(slow
            .open("a/t.bin", 0)
            .await
            .unwrap()
            .local_file()
            .is_none());
    }

    async fn read_key(f: &Folder, key: &str) -> Result<Vec<u8>, DeviceError> {
        let mut o = f.open(key, 0).await?;
        let mut got = Vec::new();
        while let Some(c) = o.reader.next_chunk().await.unwrap() {
            got.extend_from_slice(&c);
        }
        Ok(got)
    }

    #[tokio::test]
    async fn a_folder_follows_symlinks_inside_it_and_refuses_ones_that_lead_out() {
        use std::os::unix::fs::symlink;
        let d = tempfile::tempdir().unwrap();
        // Made before the folder exists: its checked opener comes later.
        let f = Folder::new("f", d.path().join("dev"), false);
        assert!(f.open("a/t.flac", 0).await.unwrap_err().is_not_found());
        std::fs::create_dir_all(d.path().join("dev/a")).unwrap();
        std::fs::write(d.path().join("dev/a/t.flac"), b"inside").unwrap();
        std::fs::write(d.path().join("secret.flac"), b"outside").unwrap();
        symlink("a/t.flac", d.path().join("dev/in.flac")).unwrap();
        symlink("a", d.path().join("dev/b")).unwrap();
        symlink("../secret.flac", d.path().join("dev/out.flac")).unwrap();
        symlink(
            d.path().join("secret.flac"),
            d.path().join("dev/a/abs.flac"),
        )
        .unwrap();
        symlink(d.path(), d.path().join("dev/up")).unwrap();
        for key in ["a/t.flac", "in.flac", "b/t.flac"] {
            assert_eq!(read_key(&f, key).await.unwrap(), b"inside", "{key}");
        }
        for key in ["out.flac", "a/abs.flac", "up/secret.flac"] {
            match read_key(&f, key).await {
                Err(e @ DeviceError::Refused { .. }) => {
                    assert!(!e.is_not_found());
                    assert!(e.to_string().contains("outside"), "{key}: {e}");
                }
                other => panic!("{key}: {other:?}"),
            }
        }
        // A directory is not a copy.
        assert!(matches!(
            f.open("a", 0).await,
            Err(DeviceError::Refused { .. })
        ));
    }
}
