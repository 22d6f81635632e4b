//! The durable database: a data file, a log, a process lock, and the
//! in-memory [`Library`] they describe.

use std::fs::{self, File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Mutex, RwLock, RwLockReadGuard};

use crate::changes::Position;
use crate::error::{CommitError, CompactError, OpenError};
use crate::log::{self, LogWriter, ReadError};
use crate::model::Library;
use crate::op::Op;
use crate::perms;
use crate::snapshot;

pub const DATA_FILE: &str = "library.spdb";
pub const LOG_FILE: &str = "library.splog";
pub const LOCK_FILE: &str = "library.lock";

/// What happened while opening.
#[derive(Debug, Clone, Default)]
pub struct OpenReport {
    /// Transactions replayed from the log.
    pub replayed: usize,
    /// Things a user should hear about (a dropped log tail, say).
    pub warnings: Vec<String>,
    /// Time spent reading, replaying and indexing.
    pub elapsed: std::time::Duration,
    /// Of which: reading and decoding the data file.
    pub read_time: std::time::Duration,
    /// Of which: building the in-memory indexes.
    pub index_time: std::time::Duration,
}

/// Sizes and counts for `db stats`.
#[derive(Debug, Clone)]
pub struct Stats {
    pub entries: usize,
    pub properties: usize,
    pub sources: Vec<String>,
    pub indexes: Vec<String>,
    pub collections: usize,
    pub data_file_bytes: u64,
    pub log_bytes: u64,
    pub heap_bytes: usize,
    pub generation: u64,
}

/// A Spindle library database in a directory.
///
/// One process writes (it holds `library.lock`); any number of threads in
/// it read concurrently. Other processes may open it read-only.
pub struct Db {
    pub(crate) dir: PathBuf,
    pub(crate) lib: RwLock<Library>,
    pub(crate) log: Option<LogWriter>,
    pub(crate) generation: AtomicU64,
    pub(crate) seq: Mutex<u64>,
    pub(crate) next_id: AtomicU32,
    pub(crate) poisoned: AtomicBool,
    _lock: Option<File>,
    report: OpenReport,
    /// Where the library stood once opened.
    opened: Position,
}

fn io_err(path: &Path) -> impl FnOnce(std::io::Error) -> OpenError + '_ {
    move |source| OpenError::Io {
        path: path.to_owned(),
        source,
    }
}

pub(crate) fn sync_dir(dir: &Path) -> std::io::Result<()> {
    File::open(dir)?.sync_all()
}

impl Db {
    /// Open (creating if needed) the database in `dir` for writing.
    pub fn open(dir: impl AsRef<Path>) -> Result<Db, OpenError> {
        Self::open_inner(dir.as_ref(), false)
    }

    /// Open for reading only: no lock is taken, and the log is replayed
    /// but never written. Works while another process writes.
    pub fn open_read_only(dir: impl AsRef<Path>) -> Result<Db, OpenError> {
        Self::open_inner(dir.as_ref(), true)
    }

    fn open_inner(dir: &Path, read_only: bool) -> Result<Db, OpenError> {
        let started = std::time::Instant::now();
        if !read_only && !dir.is_dir() {
            perms::create_dir(dir).map_err(io_err(dir))?;
            // Make the new directory itself durable, or a power loss could
            // take it, and every commit in it, away.
            if let Some(parent) = dir.parent().filter(|p| !p.as_os_str().is_empty()) {
                sync_dir(parent).map_err(io_err(parent))?;
            }
        }
        let lock = if read_only {
            None
        } else {
            let data_path = dir.join(DATA_FILE);
            match File::open(&data_path) {
                Ok(f) => perms::make_private(&f).map_err(io_err(&data_path))?,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(io_err(&data_path)(e)),
            }
            Some(take_lock(&dir.join(LOCK_FILE))?)
        };
        // A reader without the lock can race a writer's compaction: it may
        // read the old data file and then the new log. That pair is never
        // on disk at rest, so read both again.
        let mut attempt = 0;
        let loaded = loop {
            match load(dir)? {
                Loaded::Raced(_) if read_only && attempt < 20 => {
                    attempt += 1;
                    std::thread::sleep(std::time::Duration::from_millis(5));
                }
                Loaded::Raced(e) => return Err(e),
                Loaded::Ok(l) => break l,
            }
        };
        let State {
            lib,
            generation,
            seq,
            good_len,
            mut report,
        } = *loaded;
        let log_path = dir.join(LOG_FILE);
        let log = if read_only {
            None
        } else {
            Some(match good_len {
                Some(len) => LogWriter::open(&log_path, len).map_err(io_err(&log_path))?,
                None => new_log(dir, generation).map_err(io_err(&log_path))?,
            })
        };
        let next_id = lib.next_id();
        let opened = Position {
            generation,
            seq,
            entries: lib.len(),
            properties: lib.prop_count(),
            changes: lib.change_stamp(),
        };
        report.elapsed = started.elapsed();
        Ok(Db {
            dir: dir.to_owned(),
            lib: RwLock::new(lib),
            log,
            generation: AtomicU64::new(generation),
            seq: Mutex::new(seq),
            next_id: AtomicU32::new(next_id),
            poisoned: AtomicBool::new(false),
            _lock: lock,
            report,
            opened,
        })
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    pub fn open_report(&self) -> &OpenReport {
        &self.report
    }

    /// Where the library stood once opened (before any commit of this
    /// process).
    pub fn opened_at(&self) -> Position {
        self.opened
    }

    /// Where the library stands now, every commit so far durable (the
    /// log is flushed first; commits wait meanwhile).
    pub fn position(&self) -> std::io::Result<Position> {
        let lib = self.read();
        if let Some(log) = &self.log {
            log.flush()?;
        }
        let seq = *self.seq.lock().unwrap_or_else(|p| p.into_inner());
        Ok(Position {
            generation: self.generation.load(Ordering::SeqCst),
            seq,
            entries: lib.len(),
            properties: lib.prop_count(),
            changes: lib.change_stamp(),
        })
    }

    pub fn is_read_only(&self) -> bool {
        self.log.is_none()
    }

    /// Read access to the library. Hold it briefly: writers wait for it.
    pub fn read(&self) -> RwLockReadGuard<'_, Library> {
        self.lib.read().unwrap_or_else(|p| p.into_inner())
    }

    /// Reserve a fresh entry id (for `Op::CreateEntry`).
    pub fn reserve_id(&self) -> u32 {
        self.next_id.fetch_add(1, Ordering::SeqCst)
    }

    /// Apply `ops` atomically and durably: when this returns `Ok`, the
    /// transaction is in the fsynced log. Readers of this `Db` may see it
    /// a moment earlier, while its log write is in flight.
    ///
    /// On a validation error nothing was applied. On
    /// [`CommitError::Io`] the transaction may be visible in memory and
    /// may or may not have reached the disk; the `Db` refuses further
    /// commits, and reopening shows what is durable.
    pub fn commit(&self, ops: Vec<Op>) -> Result<(), CommitError> {
        let log = self.log.as_ref().ok_or(CommitError::ReadOnly)?;
        if self.poisoned.load(Ordering::SeqCst) {
            return Err(CommitError::Poisoned);
        }
        if ops.is_empty() {
            return Ok(());
        }
        let ticket = {
            let mut lib = self.lib.write().unwrap_or_else(|p| p.into_inner());
            self.enqueue_locked(log, &mut lib, &ops, 0)?
        };
        self.wait_durable(log, ticket)
    }

    /// The part of a commit done under the library's write lock (held by
    /// the caller, as `lib`): validates `ops`, queues their record,
    /// numbered after the last one or `at_least` if that is higher, and
    /// applies them. Returns the ticket to [`Db::wait_durable`] for.
    pub(crate) fn enqueue_locked(
        &self,
        log: &LogWriter,
        lib: &mut Library,
        ops: &[Op],
        at_least: u64,
    ) -> Result<u64, CommitError> {
        lib.validate(ops)?;
        let mut seq = self.seq.lock().unwrap_or_else(|p| p.into_inner());
        let next = (*seq + 1).max(at_least);
        let record = log::encode_record(next, ops).map_err(CommitError::TooLarge)?;
        *seq = next;
        let ticket = log.enqueue(&record).map_err(|e| {
            self.poisoned.store(true, Ordering::SeqCst);
            CommitError::Io(std::io::Error::other(e))
        })?;
        for op in ops {
            if let Op::CreateEntry(id) = op {
                self.next_id
                    .fetch_max(id.saturating_add(1), Ordering::SeqCst);
            }
            lib.apply(op);
        }
        Ok(ticket)
    }

    /// Waits until the record of `ticket` is durable; a failure poisons
    /// the `Db`.
    pub(crate) fn wait_durable(&self, log: &LogWriter, ticket: u64) -> Result<(), CommitError> {
        log.wait(ticket).map_err(|e| {
            self.poisoned.store(true, Ordering::SeqCst);
            CommitError::Io(e)
        })
    }

    /// Rewrite the data file from memory (to `<file>.tmp`, then renamed)
    /// and start an empty log. Readers keep going meanwhile; commits wait.
    ///
    /// If it fails before the rename, the old data file and log are
    /// untouched. If it fails after (the new log could not be created),
    /// the data on disk is complete but this `Db` refuses further commits.
    pub fn compact(&self) -> Result<u64, CompactError> {
        let log = self.log.as_ref().ok_or(CompactError::ReadOnly)?;
        let data_path = self.dir.join(DATA_FILE);
        let tmp = self.dir.join(format!("{DATA_FILE}.tmp"));
        let err = |path: &Path| {
            let path = path.to_owned();
            move |source| CompactError::Io { path, source }
        };
        // Holding the read lock keeps writers out (they need the write
        // lock to enqueue), so the log can be switched safely.
        let lib = self.read();
        log.flush().map_err(err(&self.dir.join(LOG_FILE)))?;
        let generation = self.generation.load(Ordering::SeqCst) + 1;
        let bytes = snapshot::write(&lib, generation, &tmp).map_err(err(&tmp))?;
        fs::rename(&tmp, &data_path).map_err(err(&data_path))?;
        // From here on the data file on disk is of the new generation, so
        // the old log is stale: a commit appended to it now would be
        // acknowledged and then ignored on reopen. If switching logs
        // fails, refuse further commits.
        let switched = sync_dir(&self.dir)
            .map_err(err(&self.dir))
            .and_then(|()| new_log(&self.dir, generation).map_err(err(&self.dir.join(LOG_FILE))));
        let fresh = match switched {
            Ok(fresh) => fresh,
            Err(e) => {
                self.poisoned.store(true, Ordering::SeqCst);
                return Err(e);
            }
        };
        let inner = fresh.into_file();
        log.replace(inner, log::LOG_HEADER_LEN, || {
            self.generation.store(generation, Ordering::SeqCst)
        });
        drop(lib);
        Ok(bytes)
    }

    pub fn stats(&self) -> Stats {
        let lib = self.read();
        let size = |name: &str| fs::metadata(self.dir.join(name)).map_or(0, |m| m.len());
        Stats {
            entries: lib.len(),
            properties: lib.prop_count(),
            sources: lib.source_names(),
            indexes: lib.indexed_keys(),
            collections: lib.collections().len(),
            data_file_bytes: size(DATA_FILE),
            log_bytes: size(LOG_FILE),
            heap_bytes: lib.heap_bytes(),
            generation: self.generation.load(Ordering::SeqCst),
        }
    }

    /// Flush the log (for a clean shutdown; commits are durable anyway).
    pub fn close(self) -> std::io::Result<()> {
        if let Some(log) = &self.log {
            log.flush()?;
        }
        Ok(())
    }
}

impl LogWriter {
    fn into_file(self) -> File {
        self.into_inner_file()
    }
}

/// The library as the data file and the log describe it.
pub(crate) struct State {
    pub(crate) lib: Library,
    pub(crate) generation: u64,
    /// Sequence number of the last replayed record.
    pub(crate) seq: u64,
    /// Where the log's good records end, if the log is to be appended to
    /// (`None`: write a fresh log).
    pub(crate) good_len: Option<u64>,
    pub(crate) report: OpenReport,
}

pub(crate) enum Loaded {
    Ok(Box<State>),
    /// The log is of a newer generation than the data file.
    Raced(OpenError),
}

/// Read the data file, then replay the log over it.
pub(crate) fn load(dir: &Path) -> Result<Loaded, OpenError> {
    let mut report = OpenReport::default();
    let t0 = std::time::Instant::now();
    let data_path = dir.join(DATA_FILE);
    let log_path = dir.join(LOG_FILE);

    let (mut lib, generation, indexes) = match log::read_file(&data_path)
        .map_err(io_err(&data_path))?
    {
        Some(bytes) => snapshot::read(&bytes, snapshot::NO_SLOT_LIMIT).map_err(|e| match e {
            snapshot::ReadError::Magic => OpenError::BadMagic {
                path: data_path.clone(),
                what: "data file",
            },
            snapshot::ReadError::Version(v) => OpenError::Version {
                path: data_path.clone(),
                found: v,
                supported: snapshot::DATA_VERSION,
            },
            snapshot::ReadError::Corrupt(detail) => OpenError::Corrupt {
                path: data_path.clone(),
                detail,
            },
        })?,
        None => (Library::new(), 0, Vec::new()),
    };
    report.read_time = t0.elapsed();
    // Indexes first, so replayed ops maintain them incrementally.
    let t1 = std::time::Instant::now();
    snapshot::build_indexes(&mut lib, &indexes);
    report.index_time = t1.elapsed();

    let mut seq = 0u64;
    let mut good_len = None;
    if let Some(bytes) = log::read_file(&log_path).map_err(io_err(&log_path))? {
        match log::read_log(&bytes) {
            Ok(contents) if contents.generation == generation => {
                for (s, ops) in &contents.txns {
                    for op in ops {
                        lib.apply(op);
                    }
                    seq = *s;
                }
                report.replayed = contents.txns.len();
                if let Some(why) = &contents.dropped_tail {
                    report.warnings.push(format!(
                        "{}: dropped {} bytes of incomplete or corrupt log tail ({why}); the database is at its last good commit",
                        log_path.display(),
                        contents.file_len - contents.good_len
                    ));
                }
                good_len = Some(contents.good_len);
            }
            Ok(contents) if contents.generation < generation => {
                // A compaction finished its data file but not the new
                // log: everything in this log is in the data file.
                report.warnings.push(format!(
                    "{}: stale log of generation {} ignored (data file is generation {generation})",
                    log_path.display(),
                    contents.generation
                ));
            }
            Ok(contents) => {
                return Ok(Loaded::Raced(OpenError::Corrupt {
                    path: log_path.clone(),
                    detail: format!(
                        "log generation {} is newer than the data file's {generation}; the data file is missing or old",
                        contents.generation
                    ),
                }))
            }
            Err(ReadError::Magic) => {
                return Err(OpenError::BadMagic {
                    path: log_path.clone(),
                    what: "log",
                })
            }
            Err(ReadError::Version(v)) => {
                return Err(OpenError::Version {
                    path: log_path.clone(),
                    found: v,
                    supported: log::LOG_VERSION,
                })
            }
            Err(ReadError::Corrupt(detail)) if bytes.len() < log::LOG_HEADER_LEN as usize => {
                // A log whose header never made it to disk holds nothing;
                // a writer replaces it with a fresh one.
                report
                    .warnings
                    .push(format!("{}: {detail}; ignored", log_path.display()));
            }
            Err(ReadError::Corrupt(detail)) => {
                return Err(OpenError::Corrupt {
                    path: log_path.clone(),
                    detail,
                })
            }
            Err(ReadError::Damaged { offset, detail }) => {
                return Err(OpenError::Damaged {
                    path: log_path.clone(),
                    offset,
                    detail,
                })
            }
        }
    }
    Ok(Loaded::Ok(Box::new(State {
        lib,
        generation,
        seq,
        good_len,
        report,
    })))
}

/// Create an empty log for `generation` (via a temporary name).
fn new_log(dir: &Path, generation: u64) -> std::io::Result<LogWriter> {
    let tmp = dir.join(format!("{LOG_FILE}.tmp"));
    let path = dir.join(LOG_FILE);
    let mut f = perms::create_file(&tmp)?;
    f.write_all(&log::header(generation))?;
    f.sync_all()?;
    fs::rename(&tmp, &path)?;
    sync_dir(dir)?;
    let mut f = OpenOptions::new().read(true).write(true).open(&path)?;
    f.seek(SeekFrom::End(0))?;
    Ok(LogWriter::from_file(f, log::LOG_HEADER_LEN))
}

/// How long to wait for a lock that this very process seems to hold.
const OWN_LOCK_WAIT: std::time::Duration = std::time::Duration::from_secs(1);

fn take_lock(path: &Path) -> Result<File, OpenError> {
    let mut f = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(perms::FILE_MODE)
        .open(path)
        .map_err(io_err(path))?;
    perms::make_private(&f).map_err(io_err(path))?;
    let started = std::time::Instant::now();
    loop {
        match f.try_lock() {
            Ok(()) => {
                f.set_len(0).map_err(io_err(path))?;
                f.seek(SeekFrom::Start(0)).map_err(io_err(path))?;
                writeln!(f, "{}", std::process::id()).map_err(io_err(path))?;
                f.flush().map_err(io_err(path))?;
                return Ok(f);
            }
            Err(std::fs::TryLockError::WouldBlock) => {
                let mut pid = String::new();
                f.seek(SeekFrom::Start(0)).map_err(io_err(path))?;
                let _ = f.read_to_string(&mut pid);
                let pid = pid.trim();
                // The lock belongs to an open file description, which a
                // child process shares from fork until exec. So a `Db`
                // this process just closed can stay locked for a moment
                // if another thread is spawning a process: wait that out.
                // A `Db` really still open here is refused after the wait.
                if pid == std::process::id().to_string() && started.elapsed() < OWN_LOCK_WAIT {
                    std::thread::sleep(std::time::Duration::from_millis(2));
                    continue;
                }
                return Err(OpenError::Locked {
                    pid: if pid.is_empty() {
                        "unknown".into()
                    } else {
                        pid.to_owned()
                    },
                    path: path.to_owned(),
                });
            }
            Err(std::fs::TryLockError::Error(e)) => return Err(io_err(path)(e)),
        }
    }
}
