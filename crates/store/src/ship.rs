//! Shipping the library to another node (`docs/cluster.md`). A primary
//! reads its durable log ([`Db::log_position`], [`Db::read_log_from`]) and,
//! when a replica starts or the log was compacted away, a consistent copy
//! of both files ([`Db::base`]). A replica starts from a base
//! ([`write_base`] before opening, [`Db::install_base`] while open) and
//! commits the shipped transactions to its own `Db`
//! ([`Db::apply_shipped`]), each as the primary committed it.
//!
//! A replica's log keeps the primary's sequence numbers (when they follow
//! its own), so between two bases its log holds the same records at the
//! same offsets as the primary's. Its generation is its own: a base is
//! installed as a new generation, like a compaction, at least the
//! primary's.

use std::fs::{self, File};
use std::io::{self, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;

use crate::db::{load, sync_dir, Db, Loaded, DATA_FILE, LOG_FILE};
use crate::error::CommitError;
use crate::log::{self, LOG_MAGIC};
use crate::model::Library;
use crate::perms;
use crate::snapshot::{self, DATA_MAGIC};

/// The length of the log's header: its first record starts here.
pub const LOG_HEADER_LEN: u64 = log::LOG_HEADER_LEN;

/// How many times [`Db::base`] copies the files again when a compaction
/// replaced them while it copied.
pub const BASE_ATTEMPTS: usize = 20;

/// Where [`Db::install_base`] stages the files it checks before moving
/// them into place (a leftover is removed by the next install).
const STAGING_DIR: &str = "library.install";

/// The durable part of the current library log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LogPosition {
    /// The log's generation (the data file's it continues).
    pub generation: u64,
    /// Bytes durable so far: a record boundary.
    pub end: u64,
}

/// What [`Db::read_log_from`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LogRead {
    /// Whole records `[from, end)` of the generation asked for.
    Records { bytes: Vec<u8>, end: u64 },
    /// The log moved on to `generation` (a compaction): what was asked
    /// for is gone; ship a [`Db::base`].
    Compacted { generation: u64 },
}

/// A consistent copy of a library's files: what a replica starts from.
#[derive(Clone, PartialEq, Eq)]
pub struct Base {
    /// The generation of both files.
    pub generation: u64,
    /// `library.spdb`; empty when the library was never compacted (an
    /// empty library of generation 0).
    pub data: Vec<u8>,
    /// `library.splog`, header included, up to a record boundary.
    pub log: Vec<u8>,
}

impl std::fmt::Debug for Base {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Base")
            .field("generation", &self.generation)
            .field("data_bytes", &self.data.len())
            .field("log_bytes", &self.log.len())
            .finish()
    }
}

/// Why a base could not be installed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum InstallError {
    #[error("the database is open read-only")]
    ReadOnly,
    /// The base does not open as a library; nothing was changed.
    #[error("the library base of generation {generation} is not valid ({detail}); nothing was changed; fetch it again")]
    Invalid { generation: u64, detail: String },
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    /// Installing failed after the new data file was in place; the `Db`
    /// refuses writes, and reopening it opens what is on disk.
    #[error("installing the library base failed half-way ({path}: {source}); restart to open what is on disk, then install the base again")]
    Partial {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("an earlier write failed; reopen the database")]
    Poisoned,
}

/// Why shipped log bytes could not be applied.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ApplyError {
    #[error("the database is open read-only")]
    ReadOnly,
    /// The bytes do not continue this log where it ends
    /// ([`Db::apply_shipped_at`]); nothing was applied.
    #[error("the shipped library log starts at byte {at}, but this log ends at byte {expected}; apply the segments in order, from the one starting at byte {expected}; nothing was applied")]
    NotAtEnd { expected: u64, at: u64 },
    /// A record is incomplete, fails its checksum or does not decode;
    /// nothing was applied.
    #[error("the shipped library log is damaged at byte {offset} of the bytes shipped ({detail}); nothing was applied; fetch the segment again")]
    Damaged { offset: u64, detail: String },
    /// A transaction does not fit this library: it is not the library
    /// the primary committed it to. The ones before it were committed.
    #[error("shipped transaction {index} (sequence {seq}) does not fit this library ({source}); the {index} before it were applied; this replica differs from the primary: install a base again")]
    Rejected {
        /// Its place among the shipped transactions, from 0.
        index: usize,
        seq: u64,
        #[source]
        source: CommitError,
    },
    /// Writing the log failed (the `Db` refuses writes from now on).
    #[error(transparent)]
    Commit(CommitError),
}

fn invalid_input(msg: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, msg)
}

fn read_only() -> io::Error {
    io::Error::new(
        io::ErrorKind::Unsupported,
        "the library is open read-only; ship it from the process that writes it",
    )
}

impl Db {
    /// The durable part of the current log.
    ///
    /// For a read-only `Db`, the log file's length, which may end inside
    /// a record another process is writing.
    pub fn log_position(&self) -> LogPosition {
        match &self.log {
            Some(log) => log.durable(|_, end| LogPosition {
                generation: self.generation.load(Ordering::SeqCst),
                end,
            }),
            None => LogPosition {
                generation: self.generation.load(Ordering::SeqCst),
                end: fs::metadata(self.dir.join(LOG_FILE)).map_or(0, |m| m.len()),
            },
        }
    }

    /// A handle on the current log, its generation and its durable end,
    /// all of one moment.
    fn durable_log(&self) -> io::Result<(u64, File, u64)> {
        let log = self.log.as_ref().ok_or_else(read_only)?;
        log.durable(|file, end| {
            Ok((
                self.generation.load(Ordering::SeqCst),
                file.try_clone()?,
                end,
            ))
        })
    }

    /// The bytes of the log of `generation` from `from` (a record
    /// boundary; the first record is at [`LOG_HEADER_LEN`]) to its
    /// durable end: whole records only. [`LogRead::Compacted`] if the
    /// log has moved on to a later generation.
    pub fn read_log_from(&self, generation: u64, from: u64) -> io::Result<LogRead> {
        let (current, file, end) = self.durable_log()?;
        if generation < current {
            return Ok(LogRead::Compacted {
                generation: current,
            });
        }
        if generation > current {
            return Err(invalid_input(format!(
                "the library log is of generation {current}, not {generation}: a log position \
                 from another library?"
            )));
        }
        if from < LOG_HEADER_LEN || from > end {
            return Err(invalid_input(format!(
                "byte {from} is outside the library log's records ({LOG_HEADER_LEN}..{end})"
            )));
        }
        let mut bytes = vec![0u8; usize::try_from(end - from).map_err(io::Error::other)?];
        file.read_exact_at(&mut bytes, from)?;
        if let Err((offset, why)) = log::read_records(&bytes) {
            return Err(invalid_input(format!(
                "byte {from} of the library log is not a record boundary ({why} at byte {})",
                from + offset as u64
            )));
        }
        Ok(LogRead::Records { bytes, end })
    }

    /// A consistent copy of the data file and the log: the log is
    /// flushed (under the read lock), then both files are read up to the
    /// log's durable end; copied again if a compaction replaced them
    /// meanwhile.
    pub fn base(&self) -> io::Result<Base> {
        let log = self.log.as_ref().ok_or_else(read_only)?;
        for _ in 0..BASE_ATTEMPTS {
            {
                let _lib = self.read();
                log.flush()?;
            }
            let (generation, file, end) = self.durable_log()?;
            let mut log_bytes = vec![0u8; usize::try_from(end).map_err(io::Error::other)?];
            file.read_exact_at(&mut log_bytes, 0)?;
            let data = match fs::read(self.dir.join(DATA_FILE)) {
                Ok(data) => data,
                Err(e) if e.kind() == io::ErrorKind::NotFound => Vec::new(),
                Err(e) => return Err(e),
            };
            let data_generation = if data.is_empty() {
                Some(0)
            } else {
                header_generation(&data, DATA_MAGIC).ok()
            };
            if data_generation == Some(generation) {
                return Ok(Base {
                    generation,
                    data,
                    log: log_bytes,
                });
            }
        }
        Err(io::Error::other(format!(
            "the library was compacted {BASE_ATTEMPTS} times while its files were copied; try again"
        )))
    }

    /// Replaces this open, writable `Db`'s whole contents with `base`:
    /// checks it opens (in a staging directory), then, under the write
    /// lock, moves the data file and the log into place (each fsynced,
    /// the data file first, as a compaction does) and swaps in the
    /// library, sequence number, next id and log. Readers keep going and
    /// see the old library or the new one.
    ///
    /// The files get a new generation, the larger of this `Db`'s next one
    /// and the base's, so a crash between the two renames leaves the new
    /// data file with a stale log, which opening ignores.
    pub fn install_base(&self, base: &Base) -> Result<(), InstallError> {
        let log = self.log.as_ref().ok_or(InstallError::ReadOnly)?;
        if self.poisoned.load(Ordering::SeqCst) {
            return Err(InstallError::Poisoned);
        }
        let generation = (self.generation.load(Ordering::SeqCst) + 1).max(base.generation);
        let invalid = |detail: String| InstallError::Invalid {
            generation: base.generation,
            detail,
        };
        let staging = self.dir.join(STAGING_DIR);
        let io_at = |path: &Path| {
            let path = path.to_owned();
            move |source| InstallError::Io { path, source }
        };
        match fs::remove_dir_all(&staging) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(io_at(&staging)(e)),
            _ => {}
        }
        perms::create_dir(&staging).map_err(io_at(&staging))?;
        let renumbered = with_generation(base, generation).map_err(invalid)?;
        write_files(&staging, &renumbered).map_err(io_at(&staging))?;
        let state = match load(&staging) {
            Ok(Loaded::Ok(state)) => state,
            Ok(Loaded::Raced(e)) | Err(e) => return Err(invalid(e.to_string())),
        };
        if state.good_len != Some(renumbered.log.len() as u64) {
            return Err(invalid("its log ends inside a record".into()));
        }

        let mut lib = self.lib.write().unwrap_or_else(|p| p.into_inner());
        log.flush().map_err(io_at(&self.dir.join(LOG_FILE)))?;
        let data_path = self.dir.join(DATA_FILE);
        fs::rename(staging.join(DATA_FILE), &data_path).map_err(io_at(&data_path))?;
        // The data file on disk is the base's now: a failure from here on
        // leaves the old log stale, so no more commits may go to it.
        let log_path = self.dir.join(LOG_FILE);
        let moved = sync_dir(&self.dir)
            .and_then(|()| fs::rename(staging.join(LOG_FILE), &log_path))
            .and_then(|()| sync_dir(&self.dir))
            .and_then(|()| {
                fs::OpenOptions::new()
                    .read(true)
                    .append(true)
                    .open(&log_path)
            });
        let file = match moved {
            Ok(file) => file,
            Err(source) => {
                self.poisoned.store(true, Ordering::SeqCst);
                return Err(InstallError::Partial {
                    path: log_path,
                    source,
                });
            }
        };
        log.replace(file, renumbered.log.len() as u64, || {
            self.generation.store(generation, Ordering::SeqCst)
        });
        *self.seq.lock().unwrap_or_else(|p| p.into_inner()) = state.seq;
        self.next_id.store(state.lib.next_id(), Ordering::SeqCst);
        *lib = state.lib;
        drop(lib);
        // Only the empty staging directory is left; a failure to remove
        // it is harmless (the next install removes it).
        let _ = fs::remove_dir(&staging);
        Ok(())
    }

    /// Commits, in order, the transactions a primary's log bytes hold
    /// (whole records, as [`Db::read_log_from`] returns them), each with
    /// the primary's ops and, when it follows this log's, its sequence
    /// number. Every record is checked before any is committed; each
    /// transaction is validated as [`Db::commit`] validates. Returns how
    /// many transactions were committed, once they are durable.
    pub fn apply_shipped(&self, bytes: &[u8]) -> Result<usize, ApplyError> {
        let log = self.log.as_ref().ok_or(ApplyError::ReadOnly)?;
        if self.poisoned.load(Ordering::SeqCst) {
            return Err(ApplyError::Commit(CommitError::Poisoned));
        }
        let txns = log::read_records(bytes).map_err(|(offset, detail)| ApplyError::Damaged {
            offset: offset as u64,
            detail,
        })?;
        let mut last = None;
        let mut failed = None;
        for (index, (seq, ops)) in txns.iter().enumerate() {
            let mut lib = self.lib.write().unwrap_or_else(|p| p.into_inner());
            match self.enqueue_locked(log, &mut lib, ops, *seq) {
                Ok(ticket) => last = Some(ticket),
                Err(e @ (CommitError::Io(_) | CommitError::Poisoned)) => {
                    failed = Some(ApplyError::Commit(e));
                    break;
                }
                Err(source) => {
                    failed = Some(ApplyError::Rejected {
                        index,
                        seq: *seq,
                        source,
                    });
                    break;
                }
            }
        }
        if let Some(ticket) = last {
            self.wait_durable(log, ticket).map_err(ApplyError::Commit)?;
        }
        match failed {
            Some(e) => Err(e),
            None => Ok(txns.len()),
        }
    }

    /// [`Db::apply_shipped`], only if this log ends at `at`, the offset
    /// in the primary's log where `bytes` start. A replica's log holds
    /// the same records at the same offsets as the primary's log of the
    /// same generation (the base's, then the shipped ones, with their
    /// sequence numbers), so this refuses bytes already applied (say
    /// before a crash, by a replica whose own record of its position was
    /// older) instead of committing them twice.
    pub fn apply_shipped_at(&self, at: u64, bytes: &[u8]) -> Result<usize, ApplyError> {
        let log = self.log.as_ref().ok_or(ApplyError::ReadOnly)?;
        log.flush()
            .map_err(|e| ApplyError::Commit(CommitError::Io(e)))?;
        let expected = log.durable(|_, end| end);
        if expected != at {
            return Err(ApplyError::NotAtEnd { expected, at });
        }
        self.apply_shipped(bytes)
    }
}

/// Writes a base into a directory without a library (created if
/// missing) as `library.spdb` and `library.splog`, each via a temporary
/// name and fsynced, so [`Db::open`] opens it: a replica's start before
/// its `Db` is opened. Refuses ([`io::ErrorKind::AlreadyExists`]) if
/// either file is there.
pub fn write_base(dir: &Path, base: &Base) -> io::Result<()> {
    for name in [DATA_FILE, LOG_FILE] {
        if dir.join(name).exists() {
            return Err(io::Error::new(
                io::ErrorKind::AlreadyExists,
                format!(
                    "{} exists: a base is written only where there is no library",
                    dir.join(name).display()
                ),
            ));
        }
    }
    let checked = with_generation(base, base.generation).map_err(|detail| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!("the library base is not valid: {detail}"),
        )
    })?;
    if !dir.is_dir() {
        perms::create_dir(dir)?;
    }
    write_files(dir, &checked)
}

/// Writes `base`'s two files into `dir`, each through a temporary name,
/// fsynced; an empty data file is written as an empty library.
fn write_files(dir: &Path, base: &Base) -> io::Result<()> {
    let data_tmp = dir.join(format!("{DATA_FILE}.tmp"));
    if base.data.is_empty() {
        snapshot::write(&Library::new(), base.generation, &data_tmp)?;
    } else {
        let mut f = perms::create_file(&data_tmp)?;
        f.write_all(&base.data)?;
        f.sync_all()?;
    }
    fs::rename(&data_tmp, dir.join(DATA_FILE))?;
    sync_dir(dir)?;
    let log_tmp = dir.join(format!("{LOG_FILE}.tmp"));
    let mut f = perms::create_file(&log_tmp)?;
    f.write_all(&base.log)?;
    f.sync_all()?;
    fs::rename(&log_tmp, dir.join(LOG_FILE))?;
    sync_dir(dir)
}

/// The generation in a file header (magic, version `u32`, generation
/// `u64`, CRC-32 of the 20 bytes before it), if it is intact.
fn header_generation(bytes: &[u8], magic: &[u8; 8]) -> Result<u64, String> {
    let head = bytes
        .get(..LOG_HEADER_LEN as usize)
        .ok_or("its header is cut short")?;
    if &head[..8] != magic {
        return Err("bad magic".into());
    }
    let crc = u32::from_le_bytes([head[20], head[21], head[22], head[23]]);
    if crc != crc32fast::hash(&head[..20]) {
        return Err("header checksum mismatch".into());
    }
    let mut g = [0u8; 8];
    g.copy_from_slice(&head[12..20]);
    Ok(u64::from_le_bytes(g))
}

/// `bytes` with another generation in its (checked) header.
fn set_generation(bytes: &[u8], generation: u64) -> Vec<u8> {
    let mut out = bytes.to_vec();
    out[12..20].copy_from_slice(&generation.to_le_bytes());
    let crc = crc32fast::hash(&out[..20]);
    out[20..24].copy_from_slice(&crc.to_le_bytes());
    out
}

/// `base` with both headers checked to say its generation, then set to
/// `generation`.
fn with_generation(base: &Base, generation: u64) -> Result<Base, String> {
    let log_gen = header_generation(&base.log, LOG_MAGIC).map_err(|e| format!("log: {e}"))?;
    let data_gen = if base.data.is_empty() {
        base.generation
    } else {
        header_generation(&base.data, DATA_MAGIC).map_err(|e| format!("data file: {e}"))?
    };
    if log_gen != base.generation || data_gen != base.generation {
        return Err(format!(
            "it says generation {}, but its data file is of generation {data_gen} and its log of {log_gen}",
            base.generation
        ));
    }
    Ok(Base {
        generation,
        data: if base.data.is_empty() {
            Vec::new()
        } else {
            set_generation(&base.data, generation)
        },
        log: set_generation(&base.log, generation),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::op::Op;
    use spindle_query::{Coll, SourcePref, Value};

    const SRC: &str = "plugin/test";

    fn add(entry: u32, key: &str, value: impl Into<Value>) -> Op {
        Op::AddProp {
            entry,
            key: key.into(),
            source: SRC.into(),
            value: value.into(),
        }
    }

    /// Every entry with every property, as the public read API shows it.
    fn contents(db: &Db) -> String {
        let lib = db.read();
        let ids = lib
            .query_ids(&Coll::Universe, &SourcePref::default())
            .unwrap()
            .ids;
        let mut out = format!("{} entries\n", ids.len());
        for id in ids {
            out += &lib.describe_entry(id).unwrap();
        }
        out += &format!(
            "indexes {:?}, collections {:?}\n",
            lib.indexed_keys(),
            lib.collections()
        );
        out
    }

    /// Ships what A has that B lacks; returns false when a base is needed.
    fn ship(a: &Db, b: &Db, at: &mut LogPosition) -> bool {
        match a.read_log_from(at.generation, at.end).unwrap() {
            LogRead::Records { bytes, end } => {
                b.apply_shipped_at(at.end, &bytes).unwrap();
                at.end = end;
                true
            }
            LogRead::Compacted { .. } => false,
        }
    }

    #[test]
    fn a_replica_fed_the_log_and_a_base_after_compaction_equals_the_primary() {
        let (da, dbd) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let a = Db::open(da.path()).unwrap();
        a.commit(vec![Op::CreateIndex("artist".into())]).unwrap();
        let base = a.base().unwrap();
        write_base(dbd.path(), &base).unwrap();
        let b = Db::open(dbd.path()).unwrap();
        let mut at = a.log_position();
        assert_eq!(
            b.log_position(),
            at,
            "a fresh replica is where the primary was"
        );

        let (x, y) = (a.reserve_id(), a.reserve_id());
        a.commit(vec![
            Op::CreateEntry(x),
            add(x, "artist", "Abba"),
            add(x, "year", 1975i64),
        ])
        .unwrap();
        a.commit(vec![Op::CreateEntry(y), add(y, "artist", "Cher")])
            .unwrap();
        assert!(ship(&a, &b, &mut at));
        assert_eq!(contents(&a), contents(&b));
        assert!(contents(&b).contains("Cher"));

        a.commit(vec![Op::DelKey {
            entry: x,
            key: "year".into(),
            source: None,
        }])
        .unwrap();
        a.commit(vec![Op::DeleteEntry(y)]).unwrap();
        assert!(ship(&a, &b, &mut at));
        assert_eq!(contents(&a), contents(&b));
        // Same records, same sequence numbers: the same log, byte for byte.
        assert_eq!(
            fs::read(da.path().join(LOG_FILE)).unwrap(),
            fs::read(dbd.path().join(LOG_FILE)).unwrap()
        );

        // A compaction in the middle: the old log is gone, a base follows.
        let z = a.reserve_id();
        a.commit(vec![Op::CreateEntry(z), add(z, "artist", "Dido")])
            .unwrap();
        a.compact().unwrap();
        a.commit(vec![add(z, "title", "Thank You")]).unwrap();
        assert!(
            !ship(&a, &b, &mut at),
            "the old generation is compacted away"
        );
        let base = a.base().unwrap();
        b.install_base(&base).unwrap();
        at = LogPosition {
            generation: base.generation,
            end: base.log.len() as u64,
        };
        assert_eq!(contents(&a), contents(&b));
        a.commit(vec![add(x, "title", "SOS")]).unwrap();
        assert!(ship(&a, &b, &mut at));
        assert_eq!(contents(&a), contents(&b));
        assert!(contents(&b).contains("Thank You") && contents(&b).contains("SOS"));
        assert_eq!(b.log_position().generation, a.log_position().generation);

        // The replica's own files say the same after a reopen, and it
        // hands out fresh ids after the primary's.
        drop(b);
        let b = Db::open(dbd.path()).unwrap();
        assert_eq!(contents(&a), contents(&b));
        assert!(b.reserve_id() > z);
    }

    #[test]
    fn reading_a_compacted_generation_says_compacted() {
        let dir = tempfile::tempdir().unwrap();
        let a = Db::open(dir.path()).unwrap();
        let id = a.reserve_id();
        a.commit(vec![Op::CreateEntry(id)]).unwrap();
        let before = a.log_position();
        assert_eq!(before.generation, 0);
        match a.read_log_from(0, LOG_HEADER_LEN).unwrap() {
            LogRead::Records { bytes, end } => {
                assert_eq!(end, before.end);
                assert_eq!(bytes.len() as u64, end - LOG_HEADER_LEN);
            }
            other => panic!("{other:?}"),
        }
        a.compact().unwrap();
        assert_eq!(
            a.read_log_from(0, LOG_HEADER_LEN).unwrap(),
            LogRead::Compacted { generation: 1 }
        );
        assert_eq!(
            a.log_position(),
            LogPosition {
                generation: 1,
                end: LOG_HEADER_LEN
            }
        );
        // An offset inside a record, or a generation to come, is refused.
        a.commit(vec![Op::CreateIndex("k".into())]).unwrap();
        let e = a.read_log_from(1, LOG_HEADER_LEN + 1).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::InvalidInput, "{e}");
        assert!(a.read_log_from(2, LOG_HEADER_LEN).is_err());
    }

    #[test]
    fn a_damaged_record_applies_nothing() {
        let (da, dbd) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let a = Db::open(da.path()).unwrap();
        let b = Db::open(dbd.path()).unwrap();
        for _ in 0..3 {
            let id = a.reserve_id();
            a.commit(vec![Op::CreateEntry(id), add(id, "artist", "Abba")])
                .unwrap();
        }
        let LogRead::Records { bytes, .. } = a.read_log_from(0, LOG_HEADER_LEN).unwrap() else {
            panic!("compacted");
        };
        let before = fs::read(dbd.path().join(LOG_FILE)).unwrap();
        // A flip in the last record: the first two must not be applied.
        let last = bytes.len() - 3;
        for at in [0, 5, 12, last] {
            let mut bad = bytes.clone();
            bad[at] ^= 0x04;
            let e = b.apply_shipped(&bad).unwrap_err();
            assert!(matches!(e, ApplyError::Damaged { .. }), "byte {at}: {e}");
        }
        let e = b.apply_shipped(&bytes[..bytes.len() - 1]).unwrap_err();
        assert!(matches!(e, ApplyError::Damaged { .. }), "{e}");
        assert_eq!(b.read().len(), 0);
        assert_eq!(fs::read(dbd.path().join(LOG_FILE)).unwrap(), before);
        assert_eq!(b.apply_shipped(&bytes).unwrap(), 3);
        assert_eq!(contents(&a), contents(&b));
    }

    #[test]
    fn bytes_applied_already_are_refused_not_committed_twice() {
        let (da, dbd) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let a = Db::open(da.path()).unwrap();
        let b = Db::open(dbd.path()).unwrap();
        let id = a.reserve_id();
        a.commit(vec![Op::CreateEntry(id), add(id, "artist", "Abba")])
            .unwrap();
        let LogRead::Records { bytes, end } = a.read_log_from(0, LOG_HEADER_LEN).unwrap() else {
            panic!("compacted");
        };
        assert_eq!(b.apply_shipped_at(LOG_HEADER_LEN, &bytes).unwrap(), 1);
        assert_eq!(
            b.log_position().end,
            end,
            "the replica's offsets are the primary's"
        );
        let before = fs::read(dbd.path().join(LOG_FILE)).unwrap();
        let e = b.apply_shipped_at(LOG_HEADER_LEN, &bytes).unwrap_err();
        assert!(
            matches!(e, ApplyError::NotAtEnd { expected, at } if expected == end && at == LOG_HEADER_LEN),
            "{e}"
        );
        assert_eq!(fs::read(dbd.path().join(LOG_FILE)).unwrap(), before);
        assert_eq!(contents(&a), contents(&b));
    }

    #[test]
    fn a_transaction_that_does_not_fit_is_refused_after_those_before_it() {
        let (da, dbd) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let a = Db::open(da.path()).unwrap();
        let b = Db::open(dbd.path()).unwrap();
        let (x, y) = (a.reserve_id(), a.reserve_id());
        a.commit(vec![Op::CreateEntry(x)]).unwrap();
        let mid = a.log_position().end;
        a.commit(vec![Op::CreateEntry(y)]).unwrap();
        a.commit(vec![add(x, "artist", "Abba")]).unwrap();
        // B lacks the entry x the third transaction names: it takes the
        // second and refuses the third.
        let LogRead::Records { bytes, .. } = a.read_log_from(0, mid).unwrap() else {
            panic!("compacted");
        };
        let e = b.apply_shipped(&bytes).unwrap_err();
        assert!(
            matches!(
                e,
                ApplyError::Rejected {
                    index: 1,
                    source: CommitError::NoSuchEntry(id),
                    ..
                } if id == x
            ),
            "{e}"
        );
        assert!(e.to_string().contains("install a base"), "{e}");
        let lib = b.read();
        assert!(lib.contains(y) && !lib.contains(x));
    }

    #[test]
    fn installing_a_base_while_another_thread_reads_is_safe() {
        let (da, dbd) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let a = Db::open(da.path()).unwrap();
        let b = Db::open(dbd.path()).unwrap();
        let stop = std::sync::atomic::AtomicBool::new(false);
        std::thread::scope(|s| {
            let reader = s.spawn(|| {
                let mut seen = std::collections::BTreeSet::new();
                while !stop.load(Ordering::SeqCst) {
                    seen.insert(b.read().len());
                }
                seen
            });
            for round in 0..20u32 {
                let id = a.reserve_id();
                a.commit(vec![Op::CreateEntry(id), add(id, "n", i64::from(round))])
                    .unwrap();
                if round % 2 == 0 {
                    a.compact().unwrap();
                }
                b.install_base(&a.base().unwrap()).unwrap();
                assert_eq!(b.read().len(), round as usize + 1);
            }
            stop.store(true, Ordering::SeqCst);
            let seen = reader.join().unwrap();
            assert!(seen.iter().all(|&n| n <= 20), "{seen:?}");
        });
        assert_eq!(contents(&a), contents(&b));
        drop(b);
        let b = Db::open(dbd.path()).unwrap();
        assert_eq!(contents(&a), contents(&b));
        assert!(!dbd.path().join(STAGING_DIR).exists());
    }

    #[test]
    fn a_damaged_base_is_refused_and_changes_nothing() {
        let (da, dbd) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let a = Db::open(da.path()).unwrap();
        let id = a.reserve_id();
        a.commit(vec![Op::CreateEntry(id), add(id, "artist", "Abba")])
            .unwrap();
        a.compact().unwrap();
        let b = Db::open(dbd.path()).unwrap();
        let other = b.reserve_id();
        b.commit(vec![Op::CreateEntry(other)]).unwrap();
        let before = contents(&b);
        let good = a.base().unwrap();
        let mut bad = good.clone();
        let n = bad.data.len();
        bad.data[n - 10] ^= 1;
        let e = b.install_base(&bad).unwrap_err();
        assert!(matches!(e, InstallError::Invalid { .. }), "{e}");
        let mut torn = good.clone();
        torn.log.truncate(torn.log.len() - 1);
        torn.log.extend_from_slice(&[1, 2, 3]);
        assert!(b.install_base(&torn).is_err());
        assert_eq!(contents(&b), before);
        // It still commits, and a good base still installs.
        b.commit(vec![add(other, "artist", "Cher")]).unwrap();
        b.install_base(&good).unwrap();
        assert_eq!(contents(&a), contents(&b));
        // write_base refuses a directory that holds a library.
        let e = write_base(dbd.path(), &good).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::AlreadyExists);
    }
}
