//! Scanning music folders into the library.
//!
//! [`scan`] walks the folders, and for every audio file keeps one entry
//! whose scanner-written properties (sources `plugin/*`) mirror the file:
//!
//! - **New files** get a new entry: their tags (source named by the tag
//!   format, see [`crate::tags`]) and the file facts `url` (a
//!   percent-encoded `file://` URL), `size`, `lmod` (mtime, seconds),
//!   `mime`, `fingerprint`, `added` (source `plugin/scan`).
//! - **Unchanged files** (same size and mtime as the library says) are not
//!   opened at all, so a rescan costs one stat per file.
//! - **Changed files** are read again; every `plugin/*` value of their
//!   entry except `added` is replaced. Values of other sources — a user's
//!   `client/…` edits, ratings, play counts, imports — are never touched,
//!   so they survive every rescan and still win by source preference.
//! - **Moved files**: a new path whose content fingerprint
//!   ([`fingerprint()`]) equals that of an entry whose file is gone takes
//!   over that entry (its id, play counts and ratings) instead of making a
//!   new one.
//! - **Deleted files**: an entry holding only `plugin/*` values is removed;
//!   an entry holding anything else (user data) is kept and marked
//!   `status = 3` (XMMS2's "not available", source `plugin/scan`), and is
//!   revived when the file comes back or turns up elsewhere.
//!
//! Only entries whose url lies under one of the scanned folders are
//! considered deleted, so scanning one folder never touches another's.
//! Files that cannot be read are reported with their reason and counted;
//! they never stop the scan. Tags are read in parallel (rayon) and
//! committed in batches of [`ScanOptions::batch_size`] files.

pub mod fingerprint;
pub mod progress;
pub mod state;
pub mod url;
pub mod walk;

use std::collections::{BTreeSet, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use rayon::prelude::*;
use spindle_query::Value;
use spindle_store::{CommitError, Db, Op};

use crate::beneath::MusicRoot;
use crate::tags::{read_opened, FileTags, SCAN_SOURCE};
pub use fingerprint::{fingerprint, fingerprint_opened};
pub use progress::{Phase, Quiet, ScanObserver};
pub use state::STATUS_MISSING;
pub use url::{file_url, url_path};

/// How to scan.
#[derive(Debug, Clone)]
pub struct ScanOptions {
    /// Files per transaction.
    pub batch_size: usize,
    /// The time recorded as `added` for new entries (seconds since the
    /// epoch); the current time when `None`.
    pub now: Option<i64>,
}

impl Default for ScanOptions {
    fn default() -> Self {
        ScanOptions {
            batch_size: 500,
            now: None,
        }
    }
}

/// What a scan did.
#[derive(Debug, Default, Clone)]
pub struct ScanReport {
    /// Audio files found (by extension).
    pub files: u64,
    /// New entries.
    pub added: u64,
    /// Entries whose file changed and was read again.
    pub updated: u64,
    /// Files skipped because size and mtime were unchanged.
    pub unchanged: u64,
    /// Entries that followed their file to a new path.
    pub moved: u64,
    /// Entries kept but marked missing (they hold user data).
    pub marked_missing: u64,
    /// Entries removed because their file is gone.
    pub removed: u64,
    /// Files or folders that could not be read, with the reason.
    pub failed: Vec<(PathBuf, String)>,
    pub elapsed: Duration,
}

/// Why a scan stopped. (Unreadable files do not stop it.)
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ScanError {
    #[error("cannot scan {}: {source}", path.display())]
    Root {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot scan {}: not a directory", .0.display())]
    NotADirectory(PathBuf),
    #[error("writing the library failed: {0}")]
    Commit(#[from] CommitError),
}

/// One file to read.
struct Job {
    found: walk::Found,
    url: String,
    existing: Option<u32>,
}

type ReadResult = Result<(FileTags, String), String>;

/// Scans `roots` into `db`. See the module documentation for the rules.
pub fn scan(
    db: &Db,
    roots: &[PathBuf],
    opts: &ScanOptions,
    obs: &mut dyn ScanObserver,
) -> Result<ScanReport, ScanError> {
    let start = Instant::now();
    let mut report = ScanReport::default();
    let roots = canonical_roots(roots)?;
    let now = opts.now.unwrap_or_else(|| {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
    });

    obs.phase(Phase::Walking);
    let state = state::State::load(&db.read());
    let walked = walk::walk(&roots);
    for (path, reason) in walked.errors {
        obs.failed(&path, &reason);
        report.failed.push((path, reason));
    }
    report.files = walked.files.len() as u64;

    let mut seen = HashSet::with_capacity(walked.files.len());
    let mut jobs = Vec::new();
    for found in walked.files {
        let url = file_url(&found.path);
        match state.by_url.get(&url) {
            Some(k) if !k.missing && k.size == Some(found.size) && k.lmod == Some(found.lmod) => {
                report.unchanged += 1;
            }
            known => jobs.push(Job {
                existing: known.map(|k| k.id),
                found,
                url: url.clone(),
            }),
        }
        seen.insert(url);
    }

    // Entries under the scanned roots whose file was not seen: deleted or
    // moved. Their fingerprints let a new path take them over.
    let prefixes: Vec<String> = roots
        .iter()
        .map(|r| format!("{}/", file_url(r.path()).trim_end_matches('/')))
        .collect();
    let gone: Vec<&state::Known> = state
        .by_url
        .iter()
        .filter(|(url, _)| !seen.contains(*url) && prefixes.iter().any(|p| url.starts_with(p)))
        .map(|(_, k)| k)
        .collect();
    let mut movable: HashMap<&str, Vec<u32>> = HashMap::new();
    for k in &gone {
        if let Some(fp) = &k.fingerprint {
            movable.entry(fp.as_str()).or_default().push(k.id);
        }
    }
    let mut moved_ids = HashSet::new();

    obs.phase(Phase::Reading {
        total: jobs.len() as u64,
    });
    let batch = opts.batch_size.max(1);
    for chunk in jobs.chunks(batch) {
        let results: Vec<ReadResult> = chunk
            .par_iter()
            .map(|job| {
                // Through the checked open: a link swapped in since the
                // walk cannot lead the read out of the folder.
                let (file, _) = roots[job.found.folder]
                    .open(&job.found.path)
                    .map_err(|e| e.to_string())?;
                let (_, tags) = read_opened(&file, &job.found.path).map_err(|e| e.to_string())?;
                let fp = fingerprint_opened(&file).map_err(|e| e.to_string())?;
                Ok((tags, fp))
            })
            .collect();
        let mut ops = Vec::new();
        {
            let lib = db.read();
            for (job, result) in chunk.iter().zip(results) {
                let (tags, fp) = match result {
                    Ok(r) => r,
                    Err(reason) => {
                        obs.failed(&job.found.path, &reason);
                        report.failed.push((job.found.path.clone(), reason));
                        continue;
                    }
                };
                let reuse = job.existing.or_else(|| {
                    let id = movable.get_mut(fp.as_str()).and_then(Vec::pop)?;
                    moved_ids.insert(id);
                    report.moved += 1;
                    Some(id)
                });
                let id = match reuse {
                    Some(id) => {
                        if job.existing.is_some() {
                            report.updated += 1;
                        }
                        let stale: BTreeSet<(&str, &str)> = lib
                            .properties(id)
                            .into_iter()
                            .filter(|(key, _, src)| src.starts_with("plugin/") && *key != "added")
                            .map(|(key, _, src)| (key, src))
                            .collect();
                        ops.extend(stale.into_iter().map(|(key, src)| Op::DelKey {
                            entry: id,
                            key: key.to_owned(),
                            source: Some(src.to_owned()),
                        }));
                        id
                    }
                    None => {
                        let id = db.reserve_id();
                        report.added += 1;
                        ops.push(Op::CreateEntry(id));
                        ops.push(add(id, "added", Value::Int(now), SCAN_SOURCE));
                        id
                    }
                };
                ops.extend(
                    tags.props
                        .into_iter()
                        .map(|p| add(id, p.key, p.value, p.source)),
                );
                ops.push(add(id, "url", Value::Str(job.url.clone()), SCAN_SOURCE));
                ops.push(add(id, "size", Value::Int(job.found.size), SCAN_SOURCE));
                ops.push(add(id, "lmod", Value::Int(job.found.lmod), SCAN_SOURCE));
                ops.push(add(id, "fingerprint", Value::Str(fp), SCAN_SOURCE));
            }
        }
        if !ops.is_empty() {
            db.commit(ops)?;
        }
        obs.advance(chunk.len() as u64);
    }

    obs.phase(Phase::Finishing);
    let mut ops = Vec::new();
    {
        let lib = db.read();
        for k in gone {
            if moved_ids.contains(&k.id) {
                continue;
            }
            if k.missing {
                report.marked_missing += 1;
                continue;
            }
            let user_data = lib
                .properties(k.id)
                .iter()
                .any(|(_, _, src)| !src.starts_with("plugin/"));
            if user_data {
                report.marked_missing += 1;
                ops.push(Op::DelKey {
                    entry: k.id,
                    key: "status".into(),
                    source: Some(SCAN_SOURCE.into()),
                });
                ops.push(add(k.id, "status", Value::Int(STATUS_MISSING), SCAN_SOURCE));
            } else {
                report.removed += 1;
                ops.push(Op::DeleteEntry(k.id));
            }
        }
    }
    for chunk in ops.chunks(batch * 4) {
        db.commit(chunk.to_vec())?;
    }
    report.elapsed = start.elapsed();
    Ok(report)
}

fn add(entry: u32, key: &str, value: Value, source: &str) -> Op {
    Op::AddProp {
        entry,
        key: key.to_owned(),
        source: source.to_owned(),
        value,
    }
}

fn canonical_roots(roots: &[PathBuf]) -> Result<Vec<MusicRoot>, ScanError> {
    let mut out = Vec::with_capacity(roots.len());
    for r in roots {
        let c = std::fs::canonicalize(r).map_err(|source| ScanError::Root {
            path: r.clone(),
            source,
        })?;
        if !c.is_dir() {
            return Err(ScanError::NotADirectory(r.clone()));
        }
        out.push(MusicRoot::new(&c).map_err(|e| ScanError::Root {
            path: r.clone(),
            source: std::io::Error::other(e),
        })?);
    }
    Ok(out)
}

/// Whether `path` lies under one of `roots` (used by the watcher to pick
/// the folder to rescan).
pub fn under_any(path: &Path, roots: &[PathBuf]) -> bool {
    roots.iter().any(|r| path.starts_with(r))
}
