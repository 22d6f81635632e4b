//! The beets importer: a beets `library.db` (SQLite) into entries with
//! source `import/beets`, through the shared idempotent import path
//! ([`crate::import_records`], external id = the beets item id).
//!
//! One entry per beets *item*. Its columns map to Spindle keys (`path` →
//! a `file://` url, `artists`/`artist` → artist with several values,
//! `genres`/`genre`, `track` → tracknr, `length` → duration in ms,
//! `year-month-day` → date, `mb_*` → `musicbrainz_*`, …); the item's
//! flexible attributes (`item_attributes`: play counts, ratings from
//! plugins) come over under their own names, integers as integers; the
//! flexible attributes of its album (`album_attributes`) too, unless the
//! item has the same key. Both beets 1.x (`genre`, `composer`) and 2.x
//! (`genres`, `composers`, multi-valued with beets' `\␀` separator)
//! schemas are read.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use rusqlite::types::ValueRef as Sql;
use rusqlite::{Connection, OpenFlags};
use spindle_query::Value;
use spindle_store::Db;

use crate::import::{import_records, ImportOptions, ImportReport, Progress, Record};
use crate::scan::url::file_url;
use crate::ImportError;

/// The source of imported values.
pub const BEETS_SOURCE: &str = "import/beets";

/// beets' separator of multi-valued fields.
const MULTI_SEP: &str = "\\\u{2400}";

/// Why a beets import failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BeetsError {
    #[error("{}: not a beets library ({detail})", path.display())]
    NotBeets { path: PathBuf, detail: String },
    #[error(transparent)]
    Import(#[from] ImportError),
}

/// (beets column, Spindle key) for plain one-value columns.
const PLAIN: &[(&str, &str)] = &[
    ("title", "title"),
    ("album", "album"),
    ("albumartist", "album_artist"),
    ("comments", "comment"),
    ("mb_trackid", "musicbrainz_trackid"),
    ("mb_albumid", "musicbrainz_albumid"),
    ("mb_artistid", "musicbrainz_artistid"),
    ("mb_albumartistid", "musicbrainz_album_artistid"),
    ("bitrate", "bitrate"),
    ("samplerate", "samplerate"),
    ("channels", "channels"),
    ("track", "tracknr"),
    ("tracktotal", "totaltracks"),
    ("disc", "partofset"),
    ("bpm", "bpm"),
    ("label", "label"),
];

/// (multi-valued column, older one-value column, Spindle key).
const MULTI: &[(&str, &str, &str)] = &[
    ("artists", "artist", "artist"),
    ("genres", "genre", "genre"),
    ("composers", "composer", "composer"),
];

fn sql_value(v: Sql<'_>) -> Option<Value> {
    match v {
        Sql::Integer(i) => Some(Value::Int(i)),
        Sql::Real(f) => Some(Value::Int(f as i64)),
        Sql::Text(t) => {
            let s = String::from_utf8_lossy(t).trim().to_owned();
            (!s.is_empty()).then_some(Value::Str(s))
        }
        Sql::Blob(_) | Sql::Null => None,
    }
}

fn flex_value(s: &str) -> Value {
    s.parse::<i64>()
        .map(Value::Int)
        .unwrap_or_else(|_| Value::Str(s.to_owned()))
}

fn date(y: Option<i64>, m: Option<i64>, d: Option<i64>) -> Option<String> {
    let y = y.filter(|y| *y > 0)?;
    Some(match (m.filter(|m| *m > 0), d.filter(|d| *d > 0)) {
        (Some(m), Some(d)) => format!("{y:04}-{m:02}-{d:02}"),
        (Some(m), None) => format!("{y:04}-{m:02}"),
        _ => format!("{y:04}"),
    })
}

fn mime_for_format(f: &str) -> Option<&'static str> {
    Some(match f.to_ascii_lowercase().as_str() {
        "mp3" => "audio/mpeg",
        "flac" => "audio/flac",
        "ogg" => "audio/ogg",
        "opus" => "audio/opus",
        "aac" | "alac" => "audio/mp4",
        "wave" | "wav" => "audio/wav",
        "aiff" => "audio/aiff",
        _ => return None,
    })
}

fn read_err(path: &Path) -> impl Fn(rusqlite::Error) -> ImportError + '_ {
    move |source| ImportError::Read {
        path: path.to_path_buf(),
        source,
    }
}

fn flex(
    conn: &Connection,
    table: &str,
    path: &Path,
) -> Result<HashMap<i64, Vec<(String, String)>>, ImportError> {
    let mut out: HashMap<i64, Vec<(String, String)>> = HashMap::new();
    let mut st = conn
        .prepare(&format!(
            "SELECT entity_id, key, value FROM {table} ORDER BY id"
        ))
        .map_err(read_err(path))?;
    let rows = st
        .query_map([], |r| {
            Ok((
                r.get::<_, i64>(0)?,
                r.get::<_, Option<String>>(1)?,
                r.get::<_, Option<String>>(2)?,
            ))
        })
        .map_err(read_err(path))?;
    for row in rows {
        if let (id, Some(k), Some(v)) = row.map_err(read_err(path))? {
            if !k.is_empty() && !v.is_empty() {
                out.entry(id).or_default().push((k, v));
            }
        }
    }
    Ok(out)
}

/// Reads every item of the beets library at `path` into records.
pub fn beets_records(path: &Path) -> Result<Vec<Record>, BeetsError> {
    let conn =
        Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_ONLY).map_err(|source| {
            ImportError::Open {
                path: path.to_path_buf(),
                source,
            }
        })?;
    let has = |t: &str| -> bool {
        conn.query_row(
            "SELECT count(*) FROM sqlite_master WHERE type='table' AND name=?1",
            [t],
            |r| r.get::<_, i64>(0),
        )
        .map(|n| n > 0)
        .unwrap_or(false)
    };
    for t in ["items", "albums", "item_attributes", "album_attributes"] {
        if !has(t) {
            return Err(BeetsError::NotBeets {
                path: path.to_path_buf(),
                detail: format!("no table '{t}'"),
            });
        }
    }
    let item_flex = flex(&conn, "item_attributes", path)?;
    let album_flex = flex(&conn, "album_attributes", path)?;

    let mut st = conn
        .prepare("SELECT * FROM items ORDER BY id")
        .map_err(read_err(path))?;
    let cols: Vec<String> = st.column_names().into_iter().map(str::to_owned).collect();
    let col = |name: &str| cols.iter().position(|c| c == name);
    let mut records = Vec::new();
    let mut rows = st.query([]).map_err(read_err(path))?;
    while let Some(row) = rows.next().map_err(read_err(path))? {
        let get = |name: &str| {
            col(name)
                .and_then(|i| row.get_ref(i).ok())
                .and_then(sql_value)
        };
        let int = |name: &str| match get(name) {
            Some(Value::Int(i)) => Some(i),
            _ => None,
        };
        let Some(id) = int("id") else { continue };
        let mut push =
            |key: &str, value: Value| records.push(Record::new(id, key, value, BEETS_SOURCE));
        if let Some(Sql::Blob(p) | Sql::Text(p)) = col("path").and_then(|i| row.get_ref(i).ok()) {
            use std::os::unix::ffi::OsStrExt;
            push(
                "url",
                Value::Str(file_url(Path::new(std::ffi::OsStr::from_bytes(p)))),
            );
        }
        for (c, key) in PLAIN {
            match get(c) {
                Some(Value::Int(0))
                    if matches!(
                        *key,
                        "tracknr"
                            | "totaltracks"
                            | "partofset"
                            | "bpm"
                            | "bitrate"
                            | "samplerate"
                            | "channels"
                    ) => {}
                Some(v) => push(key, v),
                None => {}
            }
        }
        for (multi, single, key) in MULTI {
            let values: Vec<String> = match get(multi).or_else(|| get(single)) {
                Some(Value::Str(s)) => s
                    .split(MULTI_SEP)
                    .map(str::trim)
                    .filter(|s| !s.is_empty())
                    .map(str::to_owned)
                    .collect(),
                _ => Vec::new(),
            };
            for v in values {
                push(key, Value::Str(v));
            }
        }
        if let Some(d) = date(int("year"), int("month"), int("day")) {
            push("date", Value::Str(d));
            if let Some(y) = int("year").filter(|y| *y > 0) {
                push("year", Value::Int(y));
            }
        }
        if let Some(d) = date(
            int("original_year"),
            int("original_month"),
            int("original_day"),
        ) {
            push("originaldate", Value::Str(d));
        }
        if let Some(Sql::Real(len)) = col("length").and_then(|i| row.get_ref(i).ok()) {
            if len > 0.0 {
                push("duration", Value::Int((len * 1000.0).round() as i64));
            }
        }
        if let Some(Value::Str(f)) = get("format") {
            if let Some(m) = mime_for_format(&f) {
                push("mime", Value::Str(m.to_owned()));
            }
        }
        if let Some(t) = int("mtime").filter(|t| *t > 0) {
            push("lmod", Value::Int(t));
        }
        if let Some(t) = int("added").filter(|t| *t > 0) {
            push("added", Value::Int(t));
        }
        let mine = item_flex.get(&id).map(Vec::as_slice).unwrap_or(&[]);
        for (k, v) in mine {
            push(k, flex_value(v));
        }
        if let Some(album) = int("album_id") {
            for (k, v) in album_flex.get(&album).map(Vec::as_slice).unwrap_or(&[]) {
                if !mine.iter().any(|(mk, _)| mk == k) {
                    push(k, flex_value(v));
                }
            }
        }
    }
    Ok(records)
}

/// Imports the beets library at `path` into `db` (idempotent).
pub fn import_beets(
    db: &Db,
    path: impl AsRef<Path>,
    opts: &ImportOptions,
    progress: &mut dyn FnMut(&Progress),
) -> Result<ImportReport, BeetsError> {
    let records = beets_records(path.as_ref())?;
    let items = records
        .iter()
        .map(|r| r.external_id)
        .collect::<std::collections::HashSet<_>>()
        .len();
    Ok(import_records(
        db,
        records.into_iter().map(Ok),
        Some(items as u64),
        opts,
        progress,
    )?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_have_as_many_parts_as_beets_knows() {
        assert_eq!(
            date(Some(2001), Some(8), Some(27)).as_deref(),
            Some("2001-08-27")
        );
        assert_eq!(date(Some(1999), Some(0), Some(0)).as_deref(), Some("1999"));
        assert_eq!(date(Some(0), Some(1), Some(1)), None);
    }

    #[test]
    fn a_non_beets_database_is_refused_by_name() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("x.db");
        let c = Connection::open(&p).unwrap();
        c.execute_batch("CREATE TABLE items (id INTEGER)").unwrap();
        drop(c);
        let err = beets_records(&p).unwrap_err();
        assert!(err.to_string().contains("not a beets library"), "{err}");
    }
}
