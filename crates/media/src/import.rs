//! The import path every importer shares.
//!
//! A reader turns a foreign library into [`Record`]s, each one property of
//! one track: (external id, key, value, source). [`import_records`] groups
//! consecutive records of the same external id into one Spindle entry and
//! commits entries in batches.
//!
//! # How an import stays idempotent
//!
//! Every entry an import creates gets one extra property: key
//! [`IMPORT_ID_KEY`] (`import_id`), source `import/ORIGIN` (`import/xmms2`,
//! later `import/beets`), value the external id as an integer. Before it
//! starts, an import reads those markers back, so a record whose external
//! id was imported before goes to the same entry, not a new one.
//!
//! For such an entry, the values of each (key, source) pair the foreign
//! library holds *replace* the entry's values of that pair when they differ,
//! and are left alone when they are equal. So running an import twice adds
//! and removes nothing, and running it after the foreign library changed
//! (a play count went up) brings the new value over instead of adding a
//! second one. Keys and sources the foreign library does not mention on
//! that track — a rating given in Spindle — are never touched.
//!
//! Why an id and not the `url`: not every track has a url (streams, CD
//! tracks before XMMS2 resolved them), a url changes when files move while
//! the foreign id does not, and ids are what the foreign database itself
//! uses as identity. The marker's source carries the origin, so two
//! different kinds of library never mix ids. Two different databases of the
//! *same* kind do share the id space: import the second one with another
//! origin name (`ImportOptions::new("xmms2-laptop")`).
//!
//! Entries get fresh Spindle ids; the foreign id is only the marker.

use std::collections::{BTreeMap, HashMap, HashSet};

use spindle_query::{Coll, Field, Filter, FilterOp, SourcePref, Value};
use spindle_store::{Db, Library, Op, ValueRef, PARENT_KEY};

use crate::error::ImportError;

/// The key under which an imported entry remembers its external id.
pub const IMPORT_ID_KEY: &str = "import_id";

/// One property of one track of a foreign library.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record {
    /// The track's id in the foreign library.
    pub external_id: i64,
    pub key: String,
    pub value: Value,
    pub source: String,
}

impl Record {
    pub fn new(
        external_id: i64,
        key: impl Into<String>,
        value: impl Into<Value>,
        source: impl Into<String>,
    ) -> Record {
        Record {
            external_id,
            key: key.into(),
            value: value.into(),
            source: source.into(),
        }
    }
}

/// How an import runs.
#[derive(Debug, Clone)]
pub struct ImportOptions {
    origin: String,
    /// Entries per committed transaction (each commit is one fsync).
    pub batch_entries: usize,
}

impl ImportOptions {
    /// Options for importing from `origin` (`xmms2`, `beets`, …); the
    /// marker source is `import/ORIGIN`.
    pub fn new(origin: impl Into<String>) -> ImportOptions {
        ImportOptions {
            origin: origin.into(),
            batch_entries: 1000,
        }
    }

    pub fn origin(&self) -> &str {
        &self.origin
    }

    /// The source of the `import_id` markers: `import/ORIGIN`.
    pub fn marker_source(&self) -> String {
        format!("import/{}", self.origin)
    }

    fn validate(&self) -> Result<(), ImportError> {
        let ok = !self.origin.is_empty()
            && self
                .origin
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
        if ok {
            Ok(())
        } else {
            Err(ImportError::BadOrigin(self.origin.clone()))
        }
    }
}

/// Where a running import is; passed to the progress callback after each
/// committed batch and once at the end.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Progress {
    /// Foreign tracks read so far (committed).
    pub entries: u64,
    /// Foreign tracks in all, when the reader knows.
    pub total: Option<u64>,
    pub created: u64,
    pub updated: u64,
}

/// What an import did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ImportReport {
    /// Foreign tracks read.
    pub entries: u64,
    /// New Spindle entries.
    pub created: u64,
    /// Entries imported before whose values changed.
    pub updated: u64,
    /// Entries imported before with nothing new.
    pub unchanged: u64,
    /// Property values added (markers not counted).
    pub values_added: u64,
    /// Property values replaced away.
    pub values_removed: u64,
    /// Records left out (see `notes`).
    pub skipped: u64,
    /// Things the user should hear about: skipped records, parts of the
    /// foreign library that are not imported.
    pub notes: Vec<String>,
}

/// Import a stream of records into `db`.
///
/// Records of one track should come together (readers sort by external
/// id); a track whose records are split still lands in one entry.
/// `expected_entries` is only for progress reports. On error, batches
/// committed so far stay; run the import again to finish it.
pub fn import_records<I>(
    db: &Db,
    records: I,
    expected_entries: Option<u64>,
    opts: &ImportOptions,
    progress: &mut dyn FnMut(&Progress),
) -> Result<ImportReport, ImportError>
where
    I: IntoIterator<Item = Result<Record, ImportError>>,
{
    opts.validate()?;
    let marker = opts.marker_source();
    let mut run = Run {
        db,
        marker: marker.clone(),
        known: known_ids(&db.read(), &marker)?,
        pending: Vec::new(),
        pending_ids: HashSet::new(),
        batch: opts.batch_entries.max(1),
        report: ImportReport::default(),
        progress: Progress {
            total: expected_entries,
            ..Progress::default()
        },
        skipped_keys: BTreeMap::new(),
        reported: None,
    };
    let mut group: Vec<Record> = Vec::new();
    for rec in records {
        let rec = rec?;
        if group
            .first()
            .is_some_and(|g| g.external_id != rec.external_id)
        {
            run.entry(std::mem::take(&mut group), progress)?;
        }
        group.push(rec);
    }
    if !group.is_empty() {
        run.entry(group, progress)?;
    }
    if run.pending.is_empty() {
        run.report_progress(progress);
    } else {
        run.flush(progress)?;
    }
    for (key, n) in &run.skipped_keys {
        run.report.notes.push(format!(
            "{n} value(s) of key '{key}' skipped: the key is reserved in Spindle"
        ));
    }
    Ok(run.report)
}

/// External id → entry, from the markers of earlier imports.
fn known_ids(lib: &Library, marker: &str) -> Result<HashMap<i64, u32>, ImportError> {
    let pref = SourcePref::from_patterns([marker]);
    let has = Coll::filter(Filter {
        field: Field::Key(IMPORT_ID_KEY.to_owned()),
        op: FilterOp::Has,
        case_sensitive: false,
        sourcepref: Some(pref.clone()),
    });
    let mut known = HashMap::new();
    for id in lib.query_ids(&has, &pref)?.ids {
        for v in lib.get(id, IMPORT_ID_KEY, &pref) {
            if let ValueRef::Int(ext) = v {
                // Should two entries claim one id, the older one wins.
                known.entry(ext).or_insert(id);
            }
        }
    }
    Ok(known)
}

struct Run<'d> {
    db: &'d Db,
    marker: String,
    known: HashMap<i64, u32>,
    pending: Vec<Op>,
    /// Entries with uncommitted ops (read from the library only after a flush).
    pending_ids: HashSet<u32>,
    batch: usize,
    report: ImportReport,
    progress: Progress,
    skipped_keys: BTreeMap<String, u64>,
    /// The entry count of the last progress report.
    reported: Option<u64>,
}

impl Run<'_> {
    fn entry(
        &mut self,
        group: Vec<Record>,
        progress: &mut dyn FnMut(&Progress),
    ) -> Result<(), ImportError> {
        let ext = group[0].external_id;
        // The incoming values per (key, source), duplicates dropped.
        let mut incoming: BTreeMap<(String, String), Vec<Value>> = BTreeMap::new();
        for r in group {
            if r.key == PARENT_KEY || (r.key == IMPORT_ID_KEY && r.source == self.marker) {
                self.report.skipped += 1;
                *self.skipped_keys.entry(r.key).or_insert(0) += 1;
                continue;
            }
            let vals = incoming.entry((r.key, r.source)).or_default();
            if !vals.contains(&r.value) {
                vals.push(r.value);
            }
        }
        self.report.entries += 1;
        self.progress.entries += 1;

        match self.known.get(&ext).copied() {
            None => {
                let id = self.db.reserve_id();
                self.known.insert(ext, id);
                self.pending.push(Op::CreateEntry(id));
                self.pending.push(Op::AddProp {
                    entry: id,
                    key: IMPORT_ID_KEY.to_owned(),
                    source: self.marker.clone(),
                    value: Value::Int(ext),
                });
                for ((key, source), vals) in incoming {
                    for value in vals {
                        self.report.values_added += 1;
                        self.pending.push(Op::AddProp {
                            entry: id,
                            key: key.clone(),
                            source: source.clone(),
                            value,
                        });
                    }
                }
                self.report.created += 1;
                self.progress.created += 1;
                self.pending_ids.insert(id);
            }
            Some(id) => {
                if self.pending_ids.contains(&id) {
                    // Its first records are not in the library yet.
                    self.flush(progress)?;
                }
                let ops = self.changes(id, incoming);
                if ops.is_empty() {
                    self.report.unchanged += 1;
                } else {
                    self.report.updated += 1;
                    self.progress.updated += 1;
                    self.pending.extend(ops);
                    self.pending_ids.insert(id);
                }
            }
        }
        if self.pending_ids.len() >= self.batch {
            self.flush(progress)?;
        }
        Ok(())
    }

    /// The ops that make entry `id` hold exactly `incoming` for each of
    /// its (key, source) pairs.
    fn changes(&mut self, id: u32, incoming: BTreeMap<(String, String), Vec<Value>>) -> Vec<Op> {
        let db = self.db;
        let lib = db.read();
        let mut have: HashMap<(&str, &str), Vec<ValueRef<'_>>> = HashMap::new();
        for (key, value, source) in lib.properties(id) {
            have.entry((key, source)).or_default().push(value);
        }
        let mut ops = Vec::new();
        for ((key, source), vals) in incoming {
            let old = have
                .get(&(key.as_str(), source.as_str()))
                .map_or(&[][..], Vec::as_slice);
            let same = old.len() == vals.len()
                && vals.iter().all(|v| old.iter().any(|o| o.to_value() == *v));
            if same {
                continue;
            }
            if !old.is_empty() {
                self.report.values_removed += old.len() as u64;
                ops.push(Op::DelKey {
                    entry: id,
                    key: key.clone(),
                    source: Some(source.clone()),
                });
            }
            for value in vals {
                self.report.values_added += 1;
                ops.push(Op::AddProp {
                    entry: id,
                    key: key.clone(),
                    source: source.clone(),
                    value,
                });
            }
        }
        ops
    }

    fn flush(&mut self, progress: &mut dyn FnMut(&Progress)) -> Result<(), ImportError> {
        if self.pending.is_empty() {
            return Ok(());
        }
        self.db.commit(std::mem::take(&mut self.pending))?;
        self.pending_ids.clear();
        self.report_progress(progress);
        Ok(())
    }

    fn report_progress(&mut self, progress: &mut dyn FnMut(&Progress)) {
        if self.reported != Some(self.progress.entries) {
            self.reported = Some(self.progress.entries);
            progress(&self.progress);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(
        ext: i64,
        key: &str,
        value: impl Into<Value>,
        source: &str,
    ) -> Result<Record, ImportError> {
        Ok(Record::new(ext, key, value.into(), source))
    }

    fn values(db: &Db, id: u32, key: &str) -> Vec<Value> {
        let lib = db.read();
        lib.properties(id)
            .into_iter()
            .filter(|(k, _, _)| *k == key)
            .map(|(_, v, _)| v.to_value())
            .collect()
    }

    #[test]
    fn second_run_changes_nothing_and_changed_values_replace_old_ones() {
        let dir = tempfile::tempdir().unwrap();
        let db = Db::open(dir.path()).unwrap();
        let opts = ImportOptions::new("test");
        let first = || {
            vec![
                rec(1, "artist", "Weezer", "plugin/id3v2"),
                rec(1, "timesplayed", 3, "server"),
                rec(2, "artist", "Metallica", "plugin/id3v2"),
            ]
        };
        let r = import_records(&db, first(), Some(2), &opts, &mut |_| {}).unwrap();
        assert_eq!((r.entries, r.created, r.values_added), (2, 2, 3));
        let props = db.read().prop_count();

        let r = import_records(&db, first(), Some(2), &opts, &mut |_| {}).unwrap();
        assert_eq!((r.created, r.updated, r.unchanged), (0, 0, 2));
        assert_eq!(db.read().prop_count(), props);

        // A rating set in Spindle meanwhile, then the play count changes.
        let ids: Vec<u32> = db.read().ids().collect();
        db.commit(vec![Op::AddProp {
            entry: ids[0],
            key: "rating".into(),
            source: "client/spindle".into(),
            value: Value::Int(5),
        }])
        .unwrap();
        let changed = vec![
            rec(1, "artist", "Weezer", "plugin/id3v2"),
            rec(1, "timesplayed", 4, "server"),
        ];
        let r = import_records(&db, changed, None, &opts, &mut |_| {}).unwrap();
        assert_eq!((r.updated, r.values_added, r.values_removed), (1, 1, 1));
        assert_eq!(values(&db, ids[0], "timesplayed"), vec![Value::Int(4)]);
        assert_eq!(values(&db, ids[0], "rating"), vec![Value::Int(5)]);
        assert_eq!(values(&db, ids[0], IMPORT_ID_KEY), vec![Value::Int(1)]);
    }

    #[test]
    fn split_records_of_one_track_land_in_one_entry() {
        let dir = tempfile::tempdir().unwrap();
        let db = Db::open(dir.path()).unwrap();
        let mut opts = ImportOptions::new("test");
        opts.batch_entries = 1000;
        let recs = vec![
            rec(9, "artist", "A", "s"),
            rec(8, "artist", "B", "s"),
            rec(9, "title", "T", "s"),
        ];
        let r = import_records(&db, recs, None, &opts, &mut |_| {}).unwrap();
        assert_eq!(r.created, 2);
        assert_eq!(db.read().len(), 2);
        let id = db
            .read()
            .ids()
            .find(|&id| values(&db, id, "artist") == vec![Value::from("A")])
            .unwrap();
        assert_eq!(values(&db, id, "title"), vec![Value::from("T")]);
    }

    #[test]
    fn reserved_keys_are_skipped_with_a_note() {
        let dir = tempfile::tempdir().unwrap();
        let db = Db::open(dir.path()).unwrap();
        let recs = vec![rec(1, PARENT_KEY, 5, "server"), rec(1, "title", "T", "s")];
        let r = import_records(&db, recs, None, &ImportOptions::new("t"), &mut |_| {}).unwrap();
        assert_eq!((r.created, r.skipped), (1, 1));
        assert!(r.notes[0].contains("song_id"), "{:?}", r.notes);
    }

    #[test]
    fn progress_reports_batches_and_the_end() {
        let dir = tempfile::tempdir().unwrap();
        let db = Db::open(dir.path()).unwrap();
        let mut opts = ImportOptions::new("t");
        opts.batch_entries = 2;
        let recs: Vec<_> = (1..=5).map(|i| rec(i, "title", "x", "s")).collect();
        let mut seen = Vec::new();
        import_records(&db, recs, Some(5), &opts, &mut |p| seen.push(p.entries)).unwrap();
        assert_eq!(seen, vec![2, 4, 5]);
    }

    #[test]
    fn origin_must_be_a_plain_name() {
        let dir = tempfile::tempdir().unwrap();
        let db = Db::open(dir.path()).unwrap();
        let err = import_records(
            &db,
            Vec::new(),
            None,
            &ImportOptions::new("a/*"),
            &mut |_| {},
        )
        .unwrap_err();
        assert!(matches!(err, ImportError::BadOrigin(_)), "{err}");
    }
}
