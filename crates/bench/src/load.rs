//! Loading the generated library into the three contestants.
//!
//! * **Spindle**: a fresh data dir; the keys the queries filter on
//!   (artist, album, title, tracknr, comment) are indexed — Spindle's
//!   counterpart of SQLite's indexes; tracks committed in batches; then
//!   compacted, so a reopen loads the data file and builds the indexes.
//! * **XMMS2's medialib** (its `src/xmms/sqlite.c`): `Media(id, key, value, source,
//!   intval)` with XMMS2's unique index and its four value indexes,
//!   `Sources`, the `Collection*` tables, `user_version` 36. Integers are
//!   written as XMMS2 0.8+ writes them: text in `value`, the number in
//!   `intval`.
//! * **Tuned SQLite**: one clustered property table with the key and
//!   source as small integers, the value (an SQLite integer or text) and a
//!   case-folded copy of text values, indexes on (key, folded) and (key,
//!   value), an `entry` table, WAL, `ANALYZE`d.
//!
//! Both SQLite files get their indexes after the data (a packed b-tree,
//! the kindest layout for SQLite's size and speed).

use std::collections::HashMap;
use std::path::Path;
use std::time::{Duration, Instant};

use rusqlite::{params, Connection};
use spindle_query::Value;
use spindle_store::{Db, Op};

use crate::error::BenchError;
use crate::gen::Track;

/// The keys Spindle indexes for the benchmark (the filters' keys).
pub const SPINDLE_INDEXES: &[&str] = &["artist", "album", "title", "tracknr", "comment"];

/// One destination of the generated tracks.
pub trait Sink {
    fn add(&mut self, tracks: &[Track]) -> Result<(), BenchError>;
    /// Compact, index, close. Returns the time spent in `finish`.
    fn finish(self: Box<Self>) -> Result<(), BenchError>;
}

/// Feed every track to every sink, batch by batch; returns the time each
/// sink took (adds plus finish).
pub fn load(
    tracks: impl Iterator<Item = Track>,
    sinks: Vec<(String, Box<dyn Sink>)>,
    batch: usize,
    progress: &mut dyn FnMut(usize),
) -> Result<Vec<(String, Duration)>, BenchError> {
    let mut sinks: Vec<(String, Box<dyn Sink>, Duration)> = sinks
        .into_iter()
        .map(|(n, s)| (n, s, Duration::ZERO))
        .collect();
    let mut buf = Vec::with_capacity(batch);
    let mut done = 0usize;
    let mut flush = |buf: &mut Vec<Track>,
                     sinks: &mut Vec<(String, Box<dyn Sink>, Duration)>|
     -> Result<(), BenchError> {
        for (_, s, t) in sinks.iter_mut() {
            let t0 = Instant::now();
            s.add(buf)?;
            *t += t0.elapsed();
        }
        done += buf.len();
        progress(done);
        buf.clear();
        Ok(())
    };
    for t in tracks {
        buf.push(t);
        if buf.len() == batch {
            flush(&mut buf, &mut sinks)?;
        }
    }
    if !buf.is_empty() {
        flush(&mut buf, &mut sinks)?;
    }
    let mut out = Vec::new();
    for (name, s, t) in sinks {
        let t0 = Instant::now();
        s.finish()?;
        out.push((name, t + t0.elapsed()));
    }
    Ok(out)
}

/// Spindle's store.
pub struct SpindleSink {
    db: Db,
}

impl SpindleSink {
    pub fn create(dir: &Path) -> Result<SpindleSink, BenchError> {
        let db = Db::open(dir)?;
        db.commit(
            SPINDLE_INDEXES
                .iter()
                .map(|k| Op::CreateIndex((*k).to_owned()))
                .collect(),
        )?;
        Ok(SpindleSink { db })
    }
}

impl Sink for SpindleSink {
    fn add(&mut self, tracks: &[Track]) -> Result<(), BenchError> {
        let mut ops = Vec::with_capacity(tracks.len() * 52);
        for t in tracks {
            ops.push(Op::CreateEntry(t.id));
            for p in &t.props {
                ops.push(Op::AddProp {
                    entry: t.id,
                    key: p.key.to_owned(),
                    source: p.source.to_owned(),
                    value: p.value.clone(),
                });
            }
        }
        self.db.commit(ops)?;
        Ok(())
    }

    fn finish(self: Box<Self>) -> Result<(), BenchError> {
        self.db.compact()?;
        self.db.close().map_err(BenchError::Io)?;
        Ok(())
    }
}

fn load_pragmas(conn: &Connection) -> Result<(), BenchError> {
    // Loading only: nothing here needs to survive a crash.
    conn.execute_batch(
        "PRAGMA synchronous = OFF; PRAGMA cache_size = -262144; PRAGMA temp_store = MEMORY;",
    )?;
    Ok(())
}

/// XMMS2's medialib schema, version 36 (tables, then indexes in `finish`).
pub struct Xmms2Sink {
    conn: Connection,
    sources: HashMap<&'static str, i64>,
}

pub const XMMS2_TABLES: &str = "
    CREATE TABLE Media (id INTEGER, key, value, source INTEGER, intval INTEGER DEFAULT NULL);
    CREATE TABLE Sources (id INTEGER PRIMARY KEY AUTOINCREMENT, source);
    CREATE TABLE CollectionAttributes (collid INTEGER, key TEXT, value TEXT);
    CREATE UNIQUE INDEX collectionattributes_idx ON CollectionAttributes (collid, key);
    CREATE TABLE CollectionConnections (from_id INTEGER, to_id INTEGER);
    CREATE UNIQUE INDEX collectionconnections_idx ON CollectionConnections (from_id, to_id);
    CREATE TABLE CollectionIdlists (collid INTEGER, position INTEGER, mid INTEGER);
    CREATE UNIQUE INDEX collectionidlists_idx ON CollectionIdlists (collid, position);
    CREATE TABLE CollectionLabels (collid INTEGER, namespace INTEGER, name TEXT);
    CREATE INDEX collectionlabels_idx ON CollectionLabels (collid);
    CREATE TABLE CollectionOperators (id INTEGER PRIMARY KEY AUTOINCREMENT, type INTEGER);
";

pub const XMMS2_INDEXES: &str = "
    CREATE UNIQUE INDEX key_idx ON Media (id, key, source);
    CREATE INDEX id_key_value_1x ON Media (id, key, value COLLATE BINARY);
    CREATE INDEX id_key_value_2x ON Media (id, key, value COLLATE NOCASE);
    CREATE INDEX key_value_1x ON Media (key, value COLLATE BINARY);
    CREATE INDEX key_value_2x ON Media (key, value COLLATE NOCASE);
";

impl Xmms2Sink {
    pub fn create(path: &Path) -> Result<Xmms2Sink, BenchError> {
        let conn = Connection::open(path)?;
        load_pragmas(&conn)?;
        conn.execute_batch(XMMS2_TABLES)?;
        conn.pragma_update(None, "user_version", 36)?;
        Ok(Xmms2Sink {
            conn,
            sources: HashMap::new(),
        })
    }
}

impl Sink for Xmms2Sink {
    fn add(&mut self, tracks: &[Track]) -> Result<(), BenchError> {
        let tx = self.conn.transaction()?;
        {
            let mut src_ins = tx.prepare_cached("INSERT INTO Sources (source) VALUES (?1)")?;
            let mut ins = tx.prepare_cached(
                "INSERT INTO Media (id, key, value, source, intval) VALUES (?1, ?2, ?3, ?4, ?5)",
            )?;
            for t in tracks {
                for p in &t.props {
                    let src = match self.sources.get(p.source) {
                        Some(&s) => s,
                        None => {
                            src_ins.execute([p.source])?;
                            let s = tx.last_insert_rowid();
                            self.sources.insert(p.source, s);
                            s
                        }
                    };
                    match &p.value {
                        Value::Int(i) => {
                            ins.execute(params![t.id, p.key, i.to_string(), src, i])?
                        }
                        Value::Str(s) => ins.execute(params![t.id, p.key, s, src, None::<i64>])?,
                    };
                }
            }
        }
        tx.commit()?;
        Ok(())
    }

    fn finish(self: Box<Self>) -> Result<(), BenchError> {
        self.conn.execute_batch(XMMS2_INDEXES)?;
        self.conn.execute_batch("ANALYZE;")?;
        self.conn.close().map_err(|(_, e)| BenchError::Sqlite(e))?;
        Ok(())
    }
}

/// The tuned layout.
pub struct TunedSink {
    conn: Connection,
    keys: HashMap<&'static str, i64>,
    sources: HashMap<&'static str, i64>,
}

pub const TUNED_TABLES: &str = "
    CREATE TABLE source (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE);
    CREATE TABLE key (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE);
    CREATE TABLE entry (id INTEGER PRIMARY KEY);
    -- value: an SQLite INTEGER or TEXT (no affinity: stored as given);
    -- folded: the case-folded text, NULL for integers;
    -- n: tells several values of one (entry, key, source) apart.
    CREATE TABLE prop (
        entry INTEGER NOT NULL,
        key INTEGER NOT NULL,
        src INTEGER NOT NULL,
        n INTEGER NOT NULL,
        value NOT NULL,
        folded TEXT,
        PRIMARY KEY (entry, key, src, n)
    ) WITHOUT ROWID;
";

pub const TUNED_INDEXES: &str = "
    CREATE INDEX prop_key_folded ON prop (key, folded);
    CREATE INDEX prop_key_value ON prop (key, value);
";

impl TunedSink {
    pub fn create(path: &Path) -> Result<TunedSink, BenchError> {
        let conn = Connection::open(path)?;
        conn.pragma_update(None, "journal_mode", "WAL")?;
        load_pragmas(&conn)?;
        conn.execute_batch(TUNED_TABLES)?;
        Ok(TunedSink {
            conn,
            keys: HashMap::new(),
            sources: HashMap::new(),
        })
    }
}

fn intern(
    tx: &rusqlite::Transaction<'_>,
    map: &mut HashMap<&'static str, i64>,
    table: &str,
    name: &'static str,
) -> Result<i64, BenchError> {
    if let Some(&id) = map.get(name) {
        return Ok(id);
    }
    tx.prepare_cached(&format!("INSERT INTO {table} (name) VALUES (?1)"))?
        .execute([name])?;
    let id = tx.last_insert_rowid();
    map.insert(name, id);
    Ok(id)
}

impl Sink for TunedSink {
    fn add(&mut self, tracks: &[Track]) -> Result<(), BenchError> {
        let tx = self.conn.transaction()?;
        {
            let mut ent = tx.prepare_cached("INSERT INTO entry (id) VALUES (?1)")?;
            let mut ins = tx.prepare_cached(
                "INSERT INTO prop (entry, key, src, n, value, folded) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            )?;
            let mut seen: HashMap<(i64, i64), i64> = HashMap::new();
            for t in tracks {
                ent.execute([t.id])?;
                seen.clear();
                for p in &t.props {
                    let k = intern(&tx, &mut self.keys, "key", p.key)?;
                    let s = intern(&tx, &mut self.sources, "source", p.source)?;
                    let n = seen.entry((k, s)).or_insert(-1);
                    *n += 1;
                    match &p.value {
                        Value::Int(i) => ins.execute(params![t.id, k, s, *n, i, None::<&str>])?,
                        Value::Str(v) => {
                            let f = spindle_store::fold::fold(v);
                            ins.execute(params![t.id, k, s, *n, v, f.as_ref()])?
                        }
                    };
                }
            }
        }
        tx.commit()?;
        Ok(())
    }

    fn finish(self: Box<Self>) -> Result<(), BenchError> {
        self.conn.execute_batch(TUNED_INDEXES)?;
        self.conn.execute_batch("ANALYZE;")?;
        self.conn
            .query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))?;
        self.conn.close().map_err(|(_, e)| BenchError::Sqlite(e))?;
        Ok(())
    }
}
