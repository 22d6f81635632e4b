//! The library as `spindle query` and `spindle db` print it: fetched
//! [`Rows`] as a table or JSON, [`Stats`], one entry's properties.

use std::fmt::Write as _;
use std::io::{self, Write};
use std::path::Path;
use std::time::Duration;

use crate::db::Stats;
use crate::model::{Library, ValueRef};
use crate::query::Rows;

/// The widest a table cell is shown; longer ones end in `…`.
pub const MAX_CELL_WIDTH: usize = 40;

impl Rows<'_> {
    /// A JSON array with an object per row: each field that has a value.
    pub fn to_json(&self, fields: &[&str]) -> serde_json::Value {
        let arr = self
            .iter()
            .map(|row| {
                let mut m = serde_json::Map::new();
                for (f, v) in fields.iter().zip(row) {
                    if let Some(v) = v {
                        m.insert((*f).to_owned(), v.to_json());
                    }
                }
                serde_json::Value::Object(m)
            })
            .collect();
        serde_json::Value::Array(arr)
    }

    /// Aligned columns under a header of `fields`, then `(N entries)`.
    /// Newlines and tabs in values show as spaces; cells are cut at
    /// [`MAX_CELL_WIDTH`] characters.
    pub fn write_table(&self, fields: &[&str], out: &mut dyn Write) -> io::Result<()> {
        let cells: Vec<Vec<String>> = self
            .iter()
            .map(|row| {
                row.iter()
                    .map(|v| v.map(|v| v.to_string()).unwrap_or_default())
                    .map(|s| s.replace(['\n', '\t'], " "))
                    .collect()
            })
            .collect();
        let mut widths: Vec<usize> = fields.iter().map(|f| f.chars().count()).collect();
        for row in &cells {
            for (w, c) in widths.iter_mut().zip(row) {
                *w = (*w).max(c.chars().count().min(MAX_CELL_WIDTH));
            }
        }
        let line = |out: &mut dyn Write, row: &[String]| -> io::Result<()> {
            let mut s = String::new();
            for (i, (c, w)) in row.iter().zip(&widths).enumerate() {
                if i > 0 {
                    s.push_str("  ");
                }
                let shown: String = if c.chars().count() > MAX_CELL_WIDTH {
                    c.chars().take(MAX_CELL_WIDTH - 1).chain(['…']).collect()
                } else {
                    c.clone()
                };
                let pad = w.saturating_sub(shown.chars().count());
                s.push_str(&shown);
                if i + 1 < row.len() {
                    s.push_str(&" ".repeat(pad));
                }
            }
            writeln!(out, "{s}")
        };
        let header: Vec<String> = fields.iter().map(|f| (*f).to_owned()).collect();
        line(out, &header)?;
        for row in &cells {
            line(out, row)?;
        }
        match cells.len() {
            1 => writeln!(out, "(1 entry)"),
            n => writeln!(out, "({n} entries)"),
        }
    }
}

impl Stats {
    /// The `spindle db stats` block for the library in `dir`, opened in
    /// `opened`.
    pub fn render(&self, dir: &Path, opened: Duration) -> String {
        let mib = |b: u64| b as f64 / (1024.0 * 1024.0);
        let indexes = if self.indexes.is_empty() {
            "-".to_owned()
        } else {
            self.indexes.join(", ")
        };
        let mut s = String::new();
        let _ = writeln!(s, "library      {}", dir.display());
        let _ = writeln!(s, "entries      {}", self.entries);
        let _ = writeln!(s, "properties   {}", self.properties);
        let _ = writeln!(
            s,
            "sources      {} ({})",
            self.sources.len(),
            self.sources.join(", ")
        );
        let _ = writeln!(s, "indexes      {indexes}");
        let _ = writeln!(s, "collections  {}", self.collections);
        let _ = writeln!(s, "data file    {:.2} MiB", mib(self.data_file_bytes));
        let _ = writeln!(s, "log          {:.2} MiB", mib(self.log_bytes));
        let _ = writeln!(
            s,
            "memory       {:.2} MiB (approximate heap)",
            mib(self.heap_bytes as u64)
        );
        let _ = writeln!(s, "opened in    {:.1} ms", opened.as_secs_f64() * 1000.0);
        s
    }
}

impl Library {
    /// Every property of entry `id` with its source, a line each after
    /// `song_id = ID` (strings quoted); `None` without such an entry.
    pub fn describe_entry(&self, id: u32) -> Option<String> {
        if !self.contains(id) {
            return None;
        }
        let mut s = format!("song_id = {id}\n");
        for (k, v, src) in self.properties(id) {
            let _ = match v {
                ValueRef::Int(i) => writeln!(s, "{k} = {i}  [{src}]"),
                ValueRef::Str(t) => writeln!(s, "{k} = {t:?}  [{src}]"),
            };
        }
        Some(s)
    }
}

#[cfg(test)]
mod tests {
    use crate::{Db, Op, Value};
    use spindle_query::SourcePref;

    fn db() -> (tempfile::TempDir, Db) {
        let dir = tempfile::tempdir().unwrap();
        let db = Db::open(dir.path()).unwrap();
        let mut ops = Vec::new();
        for (id, artist, title) in [(1, "Foo", "A\tsong"), (2, "Bar", &*"x".repeat(50))] {
            ops.push(Op::CreateEntry(id));
            for (k, v) in [("artist", artist), ("title", title)] {
                ops.push(Op::AddProp {
                    entry: id,
                    key: k.into(),
                    source: "plugin/test".into(),
                    value: Value::Str(v.into()),
                });
            }
        }
        ops.push(Op::AddProp {
            entry: 1,
            key: "tracknr".into(),
            source: "client/cli".into(),
            value: Value::Int(3),
        });
        db.commit(ops).unwrap();
        (dir, db)
    }

    #[test]
    fn a_table_aligns_cuts_and_counts() {
        let (_dir, db) = db();
        let lib = db.read();
        let fields = ["id", "artist", "tracknr", "title"];
        let rows = lib.fetch_rows(&[1, 2], &fields, &SourcePref::default());
        let mut out = Vec::new();
        rows.write_table(&fields, &mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        let cut = format!("{}…", "x".repeat(39));
        assert_eq!(
            text,
            format!(
                "id  artist  tracknr  title\n\
                 1   Foo     3        A song\n\
                 2   Bar              {cut}\n\
                 (2 entries)\n"
            )
        );
        let one = lib.fetch_rows(&[1], &fields, &SourcePref::default());
        let mut out = Vec::new();
        one.write_table(&fields, &mut out).unwrap();
        assert!(String::from_utf8(out).unwrap().ends_with("(1 entry)\n"));
    }

    #[test]
    fn json_rows_leave_out_missing_values() {
        let (_dir, db) = db();
        let lib = db.read();
        let fields = ["id", "tracknr"];
        let rows = lib.fetch_rows(&[1, 2], &fields, &SourcePref::default());
        assert_eq!(
            rows.to_json(&fields),
            serde_json::json!([{"id": 1, "tracknr": 3}, {"id": 2}])
        );
    }

    #[test]
    fn an_entry_shows_each_property_with_its_source() {
        let (_dir, db) = db();
        let lib = db.read();
        let text = lib.describe_entry(1).unwrap();
        assert!(text.starts_with("song_id = 1\n"), "{text}");
        assert!(text.contains("artist = \"Foo\"  [plugin/test]\n"), "{text}");
        assert!(text.contains("tracknr = 3  [client/cli]\n"), "{text}");
        assert_eq!(lib.describe_entry(9), None);
    }

    #[test]
    fn stats_name_the_library_and_its_sizes() {
        let (dir, db) = db();
        let text = db
            .stats()
            .render(dir.path(), std::time::Duration::from_micros(1500));
        assert!(text.contains("entries      2\n"), "{text}");
        assert!(text.contains("indexes      -\n"), "{text}");
        assert!(text.ends_with("opened in    1.5 ms\n"), "{text}");
    }
}
