//! XMMS2's SQLite media library (`medialib.db`), schema version 36.
//!
//! The parts that matter here (XMMS2's `src/xmms/sqlite.c`,
//! <https://github.com/xmms2/xmms2-devel>):
//!
//! * `Media(id INTEGER, key, value, source INTEGER, intval INTEGER DEFAULT
//!   NULL)`, unique on `(id, key, source)`: one row per property; `id` is
//!   the track, `source` an id into `Sources`. Since version 36 an integer
//!   is written twice: as text in `value` and as the number in `intval`, so
//!   a value is an integer exactly when `intval` holds one.
//! * `Sources(id INTEGER PRIMARY KEY AUTOINCREMENT, source)`: `server`,
//!   `plugin/id3v2`, `client/…`.
//! * `Collection*` tables: saved collections and playlists. Spindle
//!   imports media only; the report says how many were left behind.
//!
//! The file is opened read-only and never changed. Tracks are read in
//! chunks of ids in id order, so memory stays flat on large libraries.

use std::collections::{HashMap, VecDeque};
use std::path::{Path, PathBuf};

use rusqlite::types::ValueRef as SqlValue;
use rusqlite::{Connection, OpenFlags, OptionalExtension};
use spindle_query::Value;
use spindle_store::Db;

use crate::error::ImportError;
use crate::import::{import_records, ImportOptions, ImportReport, Progress, Record};

/// The only `PRAGMA user_version` this importer reads.
pub const XMMS2_SCHEMA_VERSION: i64 = 36;

/// Tracks read per chunk.
const CHUNK_IDS: i64 = 512;

/// An open XMMS2 `medialib.db`, checked to be schema version 36.
pub struct Xmms2Medialib {
    conn: Connection,
    path: PathBuf,
    sources: HashMap<i64, String>,
    entries: u64,
    notes: Vec<String>,
}

impl std::fmt::Debug for Xmms2Medialib {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Xmms2Medialib")
            .field("path", &self.path)
            .field("entries", &self.entries)
            .finish_non_exhaustive()
    }
}

impl Xmms2Medialib {
    /// Open `path` read-only and check that it is a version-36 medialib.
    pub fn open(path: impl AsRef<Path>) -> Result<Xmms2Medialib, ImportError> {
        let path = path.as_ref().to_owned();
        let conn = Connection::open_with_flags(
            &path,
            OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
        .map_err(|source| ImportError::Open {
            path: path.clone(),
            source,
        })?;
        // The first read is where SQLite notices a file that is not a
        // database at all.
        let version: i64 = conn
            .query_row("PRAGMA user_version", [], |r| r.get(0))
            .map_err(|source| ImportError::Open {
                path: path.clone(),
                source,
            })?;
        let read = |source| ImportError::Read {
            path: path.clone(),
            source,
        };
        let has_table = |name: &str| -> Result<bool, ImportError> {
            conn.query_row(
                "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?1",
                [name],
                |_| Ok(()),
            )
            .optional()
            .map(|o| o.is_some())
            .map_err(read)
        };
        for table in ["Media", "Sources"] {
            if !has_table(table)? {
                return Err(ImportError::NotMedialib {
                    path,
                    detail: format!("it has no table '{table}'"),
                });
            }
        }
        if version != XMMS2_SCHEMA_VERSION {
            return Err(ImportError::UnsupportedVersion {
                path,
                found: version,
                supported: XMMS2_SCHEMA_VERSION,
            });
        }

        let mut sources = HashMap::new();
        {
            let mut stmt = conn
                .prepare("SELECT id, source FROM Sources")
                .map_err(read)?;
            let mut rows = stmt.query([]).map_err(read)?;
            while let Some(row) = rows.next().map_err(read)? {
                let id: i64 = row.get(0).map_err(read)?;
                if let Some(name) = text(row.get_ref(1).map_err(read)?) {
                    sources.insert(id, name);
                }
            }
        }
        let entries: i64 = conn
            .query_row("SELECT count(DISTINCT id) FROM Media", [], |r| r.get(0))
            .map_err(read)?;

        let mut notes = Vec::new();
        if has_table("CollectionLabels")? {
            let saved: i64 = conn
                .query_row("SELECT count(*) FROM CollectionLabels", [], |r| r.get(0))
                .map_err(read)?;
            if saved > 0 {
                notes.push(format!(
                    "{saved} saved collection and playlist name(s) in the Collection* tables were not imported: \
                     this importer brings media over, not XMMS2's collections"
                ));
            }
        }
        Ok(Xmms2Medialib {
            conn,
            path,
            sources,
            entries: u64::try_from(entries).unwrap_or(0),
            notes,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Number of tracks (distinct ids in `Media`).
    pub fn entries(&self) -> u64 {
        self.entries
    }

    /// What the import leaves behind (saved collections).
    pub fn notes(&self) -> &[String] {
        &self.notes
    }

    /// Every property, tracks in id order, as import records.
    pub fn records(&self) -> Records<'_> {
        Records {
            lib: self,
            after: None,
            done: false,
            buf: VecDeque::new(),
            skipped_no_source: 0,
            skipped_no_value: 0,
        }
    }
}

/// A text cell as an owned string; invalid UTF-8 is replaced, not dropped.
fn text(v: SqlValue<'_>) -> Option<String> {
    match v {
        SqlValue::Text(t) | SqlValue::Blob(t) => Some(String::from_utf8_lossy(t).into_owned()),
        SqlValue::Integer(i) => Some(i.to_string()),
        SqlValue::Real(f) => Some(f.to_string()),
        SqlValue::Null => None,
    }
}

/// The value of one `Media` row: the integer in `intval` if there is
/// one, else the string in `value`.
fn media_value(value: SqlValue<'_>, intval: SqlValue<'_>) -> Option<Value> {
    match intval {
        SqlValue::Integer(i) => return Some(Value::Int(i)),
        SqlValue::Text(t) => {
            if let Some(i) = std::str::from_utf8(t).ok().and_then(|s| s.parse().ok()) {
                return Some(Value::Int(i));
            }
        }
        _ => {}
    }
    match value {
        // Rows written before version 36 kept integers in `value`.
        SqlValue::Integer(i) => Some(Value::Int(i)),
        other => text(other).map(Value::Str),
    }
}

/// The records of a medialib, read a chunk of tracks at a time.
pub struct Records<'a> {
    lib: &'a Xmms2Medialib,
    /// The last track id read.
    after: Option<i64>,
    done: bool,
    buf: VecDeque<Record>,
    skipped_no_source: u64,
    skipped_no_value: u64,
}

impl Records<'_> {
    /// Rows left out so far: (unknown source id, no value at all).
    pub fn skipped(&self) -> (u64, u64) {
        (self.skipped_no_source, self.skipped_no_value)
    }

    fn fill(&mut self) -> Result<(), rusqlite::Error> {
        let conn = &self.lib.conn;
        let after = self.after.unwrap_or(i64::MIN);
        // The last id of the next chunk; the id index answers both queries.
        let last: Option<i64> = conn
            .prepare_cached(
                "SELECT max(id) FROM (SELECT DISTINCT id FROM Media WHERE id > ?1 ORDER BY id LIMIT ?2)",
            )?
            .query_row([after, CHUNK_IDS], |r| r.get(0))?;
        let Some(last) = last else {
            self.done = true;
            return Ok(());
        };
        let mut stmt = conn.prepare_cached(
            "SELECT id, key, value, intval, source FROM Media WHERE id > ?1 AND id <= ?2 ORDER BY id",
        )?;
        let mut rows = stmt.query([after, last])?;
        while let Some(row) = rows.next()? {
            let id: i64 = row.get(0)?;
            let Some(key) = text(row.get_ref(1)?) else {
                self.skipped_no_value += 1;
                continue;
            };
            let Some(value) = media_value(row.get_ref(2)?, row.get_ref(3)?) else {
                self.skipped_no_value += 1;
                continue;
            };
            let source = match row.get_ref(4)? {
                SqlValue::Integer(s) => self.lib.sources.get(&s),
                _ => None,
            };
            let Some(source) = source else {
                self.skipped_no_source += 1;
                continue;
            };
            self.buf.push_back(Record {
                external_id: id,
                key,
                value,
                source: source.clone(),
            });
        }
        self.after = Some(last);
        Ok(())
    }
}

impl Iterator for Records<'_> {
    type Item = Result<Record, ImportError>;

    fn next(&mut self) -> Option<Self::Item> {
        while self.buf.is_empty() && !self.done {
            if let Err(source) = self.fill() {
                self.done = true;
                return Some(Err(ImportError::Read {
                    path: self.lib.path.clone(),
                    source,
                }));
            }
        }
        self.buf.pop_front().map(Ok)
    }
}

/// Import the XMMS2 medialib at `path` into `db` (origin `opts.origin()`,
/// normally `xmms2`). See [`crate::import`] for what a second run does.
pub fn import_xmms2(
    db: &Db,
    path: impl AsRef<Path>,
    opts: &ImportOptions,
    progress: &mut dyn FnMut(&Progress),
) -> Result<ImportReport, ImportError> {
    let medialib = Xmms2Medialib::open(path)?;
    let mut records = medialib.records();
    let mut report = import_records(
        db,
        records.by_ref(),
        Some(medialib.entries()),
        opts,
        progress,
    )?;
    let (no_source, no_value) = records.skipped();
    if no_source > 0 {
        report.notes.push(format!(
            "{no_source} value(s) skipped: their source id is not in the Sources table"
        ));
    }
    if no_value > 0 {
        report.notes.push(format!(
            "{no_value} row(s) skipped: no key or no value (both value and intval NULL)"
        ));
    }
    report.skipped += no_source + no_value;
    report.notes.extend(medialib.notes().iter().cloned());
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;
    use spindle_query::SourcePref;
    use spindle_store::ValueRef;

    /// XMMS2's medialib schema, version 36, as its `sqlite.c` creates it
    /// (tables, unique constraints and the four Media indexes).
    const SCHEMA: &str = "
        CREATE TABLE Media (id INTEGER, key, value, source INTEGER, intval INTEGER DEFAULT NULL);
        CREATE UNIQUE INDEX key_idx ON Media (id, key, source);
        CREATE TABLE Sources (id INTEGER PRIMARY KEY AUTOINCREMENT, source);
        CREATE TABLE CollectionAttributes (collid INTEGER, key TEXT, value TEXT);
        CREATE UNIQUE INDEX collectionattributes_idx ON CollectionAttributes (collid, key);
        CREATE TABLE CollectionConnections (from_id INTEGER, to_id INTEGER);
        CREATE UNIQUE INDEX collectionconnections_idx ON CollectionConnections (from_id, to_id);
        CREATE TABLE CollectionIdlists (collid INTEGER, position INTEGER, mid INTEGER);
        CREATE UNIQUE INDEX collectionidlists_idx ON CollectionIdlists (collid, position);
        CREATE TABLE CollectionLabels (collid INTEGER, namespace INTEGER, name TEXT);
        CREATE TABLE CollectionOperators (id INTEGER PRIMARY KEY AUTOINCREMENT, type INTEGER);
        CREATE INDEX id_key_value_1x ON Media (id, key, value COLLATE BINARY);
        CREATE INDEX id_key_value_2x ON Media (id, key, value COLLATE NOCASE);
        CREATE INDEX key_value_1x ON Media (key, value COLLATE BINARY);
        CREATE INDEX key_value_2x ON Media (key, value COLLATE NOCASE);
        CREATE INDEX collectionlabels_idx ON CollectionLabels (collid);
    ";

    /// A medialib as XMMS2 writes one: integers as text in `value` plus
    /// the number in `intval`; strings with `intval` NULL.
    fn medialib(path: &Path, version: i64) {
        let conn = Connection::open(path).unwrap();
        conn.execute_batch(SCHEMA).unwrap();
        for s in ["server", "plugin/id3v2", "plugin/mad", "client/generic"] {
            conn.execute("INSERT INTO Sources (source) VALUES (?1)", [s])
                .unwrap();
        }
        let add = |id: i64, key: &str, value: Value, source: i64| {
            let (text, int) = match value {
                Value::Int(i) => (i.to_string(), Some(i)),
                Value::Str(s) => (s, None),
            };
            conn.execute(
                "INSERT INTO Media (id, key, value, source, intval) VALUES (?1, ?2, ?3, ?4, ?5)",
                rusqlite::params![id, key, text, source, int],
            )
            .unwrap();
        };
        add(
            1,
            "url",
            "file:///music/Weezer/01%20My%20Name%20Is%20Jonas.mp3".into(),
            1,
        );
        add(1, "artist", "Weezer".into(), 2);
        add(1, "title", "My Name Is Jonas".into(), 2);
        add(1, "tracknr", Value::Int(1), 2);
        add(1, "duration", Value::Int(204_000), 3);
        add(1, "timesplayed", Value::Int(12), 1);
        add(2, "url", "file:///music/Metallica/One.mp3".into(), 1);
        add(2, "artist", "Metallica".into(), 2);
        add(2, "title", "one".into(), 2);
        add(2, "title", "One".into(), 4);
        // A tag that holds digits as a string stays a string.
        add(2, "tracknr", "04".into(), 2);
        // A track whose id leaves a gap, and a dangling source id.
        add(700, "url", "file:///music/x.ogg".into(), 1);
        add(700, "comment", "lost source".into(), 99);
        conn.execute(
            "INSERT INTO CollectionLabels (collid, namespace, name) VALUES (1, 2, 'Default')",
            [],
        )
        .unwrap();
        conn.pragma_update(None, "user_version", version).unwrap();
    }

    fn entry_by_url(db: &Db, url: &str) -> u32 {
        let lib = db.read();
        let pref = SourcePref::default();
        let id = lib
            .ids()
            .find(|&id| lib.get(id, "url", &pref) == vec![ValueRef::Str(url)])
            .unwrap_or_else(|| panic!("no entry with url {url}"));
        id
    }

    #[test]
    fn imports_entries_values_and_sources_of_a_real_medialib() {
        let tmp = tempfile::tempdir().unwrap();
        let ml = tmp.path().join("medialib.db");
        medialib(&ml, 36);
        let db = Db::open(tmp.path().join("lib")).unwrap();
        let mut reports = Vec::new();
        let report = import_xmms2(&db, &ml, &ImportOptions::new("xmms2"), &mut |p| {
            reports.push(*p)
        })
        .unwrap();
        assert_eq!((report.entries, report.created), (3, 3));
        assert_eq!(report.skipped, 1);
        assert!(
            report.notes.iter().any(|n| n.contains("Sources")),
            "{:?}",
            report.notes
        );
        assert!(
            report.notes.iter().any(|n| n.contains("collection")),
            "{:?}",
            report.notes
        );
        assert_eq!(
            reports.last().map(|p| (p.entries, p.total)),
            Some((3, Some(3)))
        );

        let jonas = entry_by_url(&db, "file:///music/Weezer/01%20My%20Name%20Is%20Jonas.mp3");
        let one = entry_by_url(&db, "file:///music/Metallica/One.mp3");
        let lib = db.read();
        let mut props = lib.properties(jonas);
        props.sort_by_key(|(k, _, _)| *k);
        assert_eq!(
            props,
            vec![
                ("artist", ValueRef::Str("Weezer"), "plugin/id3v2"),
                ("duration", ValueRef::Int(204_000), "plugin/mad"),
                ("import_id", ValueRef::Int(1), "import/xmms2"),
                ("timesplayed", ValueRef::Int(12), "server"),
                ("title", ValueRef::Str("My Name Is Jonas"), "plugin/id3v2"),
                ("tracknr", ValueRef::Int(1), "plugin/id3v2"),
                (
                    "url",
                    ValueRef::Str("file:///music/Weezer/01%20My%20Name%20Is%20Jonas.mp3"),
                    "server"
                ),
            ]
        );
        let pref = SourcePref::default();
        // The client's title wins over the tag's under XMMS2's preference.
        assert_eq!(lib.get(one, "title", &pref), vec![ValueRef::Str("One")]);
        assert_eq!(lib.get(one, "tracknr", &pref), vec![ValueRef::Str("04")]);
        assert_eq!(
            lib.get(one, "title", &SourcePref::parse("plugin/*")),
            vec![ValueRef::Str("one")]
        );
    }

    #[test]
    fn importing_twice_adds_nothing() {
        let tmp = tempfile::tempdir().unwrap();
        let ml = tmp.path().join("medialib.db");
        medialib(&ml, 36);
        let db = Db::open(tmp.path().join("lib")).unwrap();
        let opts = ImportOptions::new("xmms2");
        import_xmms2(&db, &ml, &opts, &mut |_| {}).unwrap();
        let (entries, props) = (db.read().len(), db.read().prop_count());

        let again = import_xmms2(&db, &ml, &opts, &mut |_| {}).unwrap();
        assert_eq!((again.created, again.updated, again.unchanged), (0, 0, 3));
        assert_eq!((again.values_added, again.values_removed), (0, 0));
        assert_eq!((db.read().len(), db.read().prop_count()), (entries, props));

        // And after a reopen (markers come back from disk).
        drop(db);
        let db = Db::open(tmp.path().join("lib")).unwrap();
        let third = import_xmms2(&db, &ml, &opts, &mut |_| {}).unwrap();
        assert_eq!(third.created, 0);
        assert_eq!((db.read().len(), db.read().prop_count()), (entries, props));
    }

    #[test]
    fn a_changed_medialib_updates_values_in_place() {
        let tmp = tempfile::tempdir().unwrap();
        let ml = tmp.path().join("medialib.db");
        medialib(&ml, 36);
        let db = Db::open(tmp.path().join("lib")).unwrap();
        let opts = ImportOptions::new("xmms2");
        import_xmms2(&db, &ml, &opts, &mut |_| {}).unwrap();
        let conn = Connection::open(&ml).unwrap();
        conn.execute(
            "UPDATE Media SET value = '13', intval = 13 WHERE id = 1 AND key = 'timesplayed'",
            [],
        )
        .unwrap();
        drop(conn);
        let r = import_xmms2(&db, &ml, &opts, &mut |_| {}).unwrap();
        assert_eq!((r.created, r.updated, r.unchanged), (0, 1, 2));
        let id = entry_by_url(&db, "file:///music/Weezer/01%20My%20Name%20Is%20Jonas.mp3");
        assert_eq!(
            db.read().get(id, "timesplayed", &SourcePref::default()),
            vec![ValueRef::Int(13)]
        );
    }

    #[test]
    fn other_schema_versions_are_refused_by_number() {
        let tmp = tempfile::tempdir().unwrap();
        let ml = tmp.path().join("medialib.db");
        medialib(&ml, 35);
        let err = Xmms2Medialib::open(&ml).unwrap_err();
        assert!(
            matches!(
                err,
                ImportError::UnsupportedVersion {
                    found: 35,
                    supported: 36,
                    ..
                }
            ),
            "{err:?}"
        );
        let msg = err.to_string();
        assert!(
            msg.contains("version 35") && msg.contains("version 36"),
            "{msg}"
        );
    }

    #[test]
    fn files_that_are_not_medialibs_are_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let other = tmp.path().join("other.db");
        Connection::open(&other)
            .unwrap()
            .execute_batch("CREATE TABLE t (x); PRAGMA user_version = 36;")
            .unwrap();
        let err = Xmms2Medialib::open(&other).unwrap_err();
        assert!(matches!(err, ImportError::NotMedialib { .. }), "{err:?}");
        assert!(err.to_string().contains("Media"), "{err}");

        let text = tmp.path().join("notes.txt");
        std::fs::write(&text, "not a database, just some text that is long enough").unwrap();
        let err = Xmms2Medialib::open(&text).unwrap_err();
        assert!(matches!(err, ImportError::Open { .. }), "{err:?}");

        let missing = tmp.path().join("missing.db");
        assert!(matches!(
            Xmms2Medialib::open(&missing).unwrap_err(),
            ImportError::Open { .. }
        ));
    }

    #[test]
    fn many_tracks_are_read_across_chunks_in_order() {
        let tmp = tempfile::tempdir().unwrap();
        let ml = tmp.path().join("medialib.db");
        let conn = Connection::open(&ml).unwrap();
        conn.execute_batch(SCHEMA).unwrap();
        conn.execute("INSERT INTO Sources (source) VALUES ('server')", [])
            .unwrap();
        let n = CHUNK_IDS * 2 + 7;
        let tx = conn.unchecked_transaction().unwrap();
        for id in 1..=n {
            for key in ["url", "title"] {
                tx.execute(
                    "INSERT INTO Media (id, key, value, source) VALUES (?1, ?2, ?3, 1)",
                    rusqlite::params![id * 3, key, format!("{key}{id}")],
                )
                .unwrap();
            }
        }
        tx.commit().unwrap();
        conn.pragma_update(None, "user_version", 36).unwrap();
        drop(conn);
        let ml = Xmms2Medialib::open(&ml).unwrap();
        assert_eq!(ml.entries(), n as u64);
        let ids: Vec<i64> = ml.records().map(|r| r.unwrap().external_id).collect();
        assert_eq!(ids.len() as i64, n * 2);
        assert!(ids.windows(2).all(|w| w[0] <= w[1]));
        assert_eq!(ids.last(), Some(&(n * 3)));
    }
}
