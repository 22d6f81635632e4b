//! One contestant, measured in a process of its own: open the loaded
//! library, run the seven queries for some rounds, report times, results
//! and memory.
//!
//! Each contestant runs in a fresh child process (the same binary), so
//! its peak RSS (`VmHWM`) is its own and not the generator's or another
//! contestant's.

use std::collections::HashMap;
use std::hint::black_box;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Instant;

use rusqlite::types::ValueRef as SqlValue;
use rusqlite::Connection;
use spindle_query::SourcePref;
use spindle_store::{Db, ValueRef};

use crate::error::BenchError;
use crate::sql::{Layout, Translator, FIELDS};

/// The seed's seven queries (spec §7).
pub const QUERIES: [&str; 7] = [
    "one",
    "*",
    "artist:metallica",
    "tracknr>20",
    "tracknr>30",
    "+comment",
    "tracknr:4 OR artist~foo AND NOT artist:weezer",
];

/// The query that is a single indexed equality (target: under 1 ms).
pub const EQUALITY_QUERY: usize = 2;

/// Who is measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum Side {
    Spindle,
    /// SQLite, the tuned layout.
    Tuned,
    /// SQLite, XMMS2's medialib layout.
    Xmms2,
}

impl Side {
    pub const ALL: [Side; 3] = [Side::Spindle, Side::Tuned, Side::Xmms2];

    pub fn label(self) -> &'static str {
        match self {
            Side::Spindle => "Spindle",
            Side::Tuned => "SQLite tuned",
            Side::Xmms2 => "SQLite XMMS2",
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Side::Spindle => "spindle",
            Side::Tuned => "tuned",
            Side::Xmms2 => "xmms2",
        }
    }

    pub fn parse(s: &str) -> Option<Side> {
        Side::ALL.into_iter().find(|x| x.name() == s)
    }

    /// Where this contestant's data lives in a work dir.
    pub fn path(self, work: &Path) -> PathBuf {
        match self {
            Side::Spindle => work.join("spindle"),
            Side::Tuned => work.join("tuned.sqlite"),
            Side::Xmms2 => work.join("xmms2-medialib.db"),
        }
    }
}

/// What the parent asks a worker to do.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct WorkerRequest {
    pub side: Side,
    pub work_dir: PathBuf,
    pub rounds: usize,
    /// Write each query's rows to `DIR/SIDE-QUERY.txt` (to show a mismatch).
    pub dump: Option<PathBuf>,
}

/// One query's results and times on one side.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct QueryRun {
    pub pattern: String,
    pub rows: usize,
    /// A hash of every (id, fetched values) row in id order.
    pub hash: u64,
    /// Wall time of each round, µs (query plus fetch).
    pub times_us: Vec<f64>,
    /// Spindle only: the part spent finding the ids (parse + evaluate).
    pub select_us: Vec<f64>,
}

/// Resident memory of the worker, KiB (Linux `/proc/self/status`).
#[derive(Debug, Clone, Copy, Default, serde::Serialize, serde::Deserialize)]
pub struct Memory {
    /// Before opening anything.
    pub base_kib: u64,
    /// Just after opening (and warming, for SQLite).
    pub open_kib: u64,
    /// Peak over the whole run (VmHWM).
    pub peak_kib: u64,
}

/// What a worker reports.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct SideReport {
    pub side: Side,
    /// Spindle: `Db::open` (read data file, replay log, build indexes).
    /// SQLite: connect, pragmas, rank table, prepare the statements.
    pub open_us: f64,
    /// SQLite: reading every table and index once into its page cache.
    pub warm_us: Option<f64>,
    pub memory: Memory,
    pub queries: Vec<QueryRun>,
}

/// Run a worker request in this process.
pub fn run_worker(req: &WorkerRequest) -> Result<SideReport, BenchError> {
    let base = memory_kib("VmRSS:");
    let mut side: Box<dyn Contestant> = match req.side {
        Side::Spindle => Box::new(SpindleSide::open(&req.side.path(&req.work_dir))?),
        Side::Tuned => Box::new(SqlSide::open(&req.side.path(&req.work_dir), Layout::Tuned)?),
        Side::Xmms2 => Box::new(SqlSide::open(&req.side.path(&req.work_dir), Layout::Xmms2)?),
    };
    let (open_us, warm_us) = side.open_times();
    let open_kib = memory_kib("VmRSS:");

    let mut runs: Vec<QueryRun> = Vec::new();
    for (qi, q) in QUERIES.iter().enumerate() {
        // The first run warms up and records the result.
        let mut rows = Vec::new();
        let (hash, n) = side.check(qi, q, req.dump.as_ref().map(|_| &mut rows))?;
        if let Some(dir) = &req.dump {
            let path = dir.join(format!("{}-{qi}.txt", req.side.name()));
            let mut f = std::io::BufWriter::new(std::fs::File::create(path)?);
            for line in rows {
                writeln!(f, "{line}")?;
            }
            f.flush()?;
        }
        runs.push(QueryRun {
            pattern: (*q).to_owned(),
            rows: n,
            hash,
            times_us: Vec::with_capacity(req.rounds),
            select_us: Vec::new(),
        });
    }
    for _ in 0..req.rounds {
        for (qi, q) in QUERIES.iter().enumerate() {
            let (total, select, n) = side.time(qi, q)?;
            if n != runs[qi].rows {
                return Err(BenchError::Mismatch(format!(
                    "{}: '{q}' returned {n} rows in a timed round, {} in the first",
                    req.side.label(),
                    runs[qi].rows
                )));
            }
            runs[qi].times_us.push(total);
            if let Some(s) = select {
                runs[qi].select_us.push(s);
            }
        }
    }
    Ok(SideReport {
        side: req.side,
        open_us,
        warm_us,
        memory: Memory {
            base_kib: base,
            open_kib,
            peak_kib: memory_kib("VmHWM:"),
        },
        queries: runs,
    })
}

/// A line of `/proc/self/status`, KiB (0 where there is no procfs).
pub fn memory_kib(field: &str) -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with(field))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse().ok())
        })
        .unwrap_or(0)
}

trait Contestant {
    fn open_times(&self) -> (f64, Option<f64>);
    /// Run query `qi` once; its row count and result hash, and the rows
    /// as text if asked.
    fn check(
        &mut self,
        qi: usize,
        pattern: &str,
        dump: Option<&mut Vec<String>>,
    ) -> Result<(u64, usize), BenchError>;
    /// Run query `qi` once, timed: (total µs, select µs if known, rows).
    fn time(&mut self, qi: usize, pattern: &str) -> Result<(f64, Option<f64>, usize), BenchError>;
}

/// A fetched value, owned (SQLite hands out rows one step at a time).
#[derive(Debug, Clone, PartialEq, Eq)]
enum Val {
    Int(i64),
    Str(String),
}

/// FNV-1a over the rows, so three contestants can be compared by hash.
#[derive(Debug, Clone, Copy)]
struct RowHash(u64);

impl RowHash {
    fn new() -> Self {
        RowHash(0xcbf2_9ce4_8422_2325)
    }
    fn bytes(&mut self, b: &[u8]) {
        for &x in b {
            self.0 ^= u64::from(x);
            self.0 = self.0.wrapping_mul(0x0100_0000_01b3);
        }
    }
    fn id(&mut self, id: u32) {
        self.bytes(&id.to_le_bytes());
    }
    fn value(&mut self, v: Option<ValueRef<'_>>) {
        match v {
            None => self.bytes(&[0]),
            Some(ValueRef::Int(i)) => {
                self.bytes(&[1]);
                self.bytes(&i.to_le_bytes());
            }
            Some(ValueRef::Str(s)) => {
                self.bytes(&[2]);
                self.bytes(&(s.len() as u32).to_le_bytes());
                self.bytes(s.as_bytes());
            }
        }
    }
}

fn dump_line(id: u32, vals: &[Option<ValueRef<'_>>]) -> String {
    let mut s = id.to_string();
    for v in vals {
        s.push('\t');
        match v {
            None => s.push('-'),
            Some(ValueRef::Int(i)) => s.push_str(&format!("#{i}")),
            Some(ValueRef::Str(t)) => s.push_str(t),
        }
    }
    s
}

struct SpindleSide {
    db: Db,
    pref: SourcePref,
    open_us: f64,
}

impl SpindleSide {
    fn open(dir: &Path) -> Result<SpindleSide, BenchError> {
        let t = Instant::now();
        let db = Db::open(dir)?;
        let open_us = t.elapsed().as_secs_f64() * 1e6;
        Ok(SpindleSide {
            db,
            pref: SourcePref::default(),
            open_us,
        })
    }
}

fn parse(pattern: &str) -> Result<spindle_query::Coll, BenchError> {
    spindle_query::parse(pattern)
        .map(|p| p.coll)
        .map_err(|e| BenchError::Parse {
            pattern: pattern.to_owned(),
            message: e.to_string(),
        })
}

impl Contestant for SpindleSide {
    fn open_times(&self) -> (f64, Option<f64>) {
        (self.open_us, None)
    }

    fn check(
        &mut self,
        _qi: usize,
        pattern: &str,
        dump: Option<&mut Vec<String>>,
    ) -> Result<(u64, usize), BenchError> {
        let coll = parse(pattern)?;
        let lib = self.db.read();
        let mut ids = lib.query_ids(&coll, &self.pref)?.ids;
        ids.sort_unstable();
        let rows = lib.fetch_rows(&ids, &FIELDS, &self.pref);
        let mut h = RowHash::new();
        for (id, row) in ids.iter().zip(&rows) {
            h.id(*id);
            for v in row {
                h.value(*v);
            }
        }
        if let Some(out) = dump {
            out.extend(ids.iter().zip(&rows).map(|(id, r)| dump_line(*id, r)));
        }
        Ok((h.0, ids.len()))
    }

    fn time(&mut self, _qi: usize, pattern: &str) -> Result<(f64, Option<f64>, usize), BenchError> {
        let t0 = Instant::now();
        let coll = parse(pattern)?;
        let lib = self.db.read();
        let ids = lib.query_ids(&coll, &self.pref)?;
        let t1 = Instant::now();
        let rows = lib.fetch_rows(&ids.ids, &FIELDS, &self.pref);
        let n = black_box(&rows).len();
        drop(rows);
        drop(lib);
        let t2 = Instant::now();
        Ok((
            (t2 - t0).as_secs_f64() * 1e6,
            Some((t1 - t0).as_secs_f64() * 1e6),
            n,
        ))
    }
}

struct SqlSide {
    conn: Connection,
    layout: Layout,
    statements: Vec<String>,
    /// Tuned: key id → field position.
    field_of_key: Vec<Option<usize>>,
    open_us: f64,
    warm_us: f64,
}

/// One result row under construction: per field, (rank, value).
type SqlRow = (u32, [Option<(i64, Val)>; 5]);

impl SqlSide {
    fn open(path: &Path, layout: Layout) -> Result<SqlSide, BenchError> {
        let t = Instant::now();
        let file_kib = std::fs::metadata(path)?.len() / 1024;
        let conn = Connection::open(path)?;
        // A page cache that holds the whole file: Spindle keeps all its
        // data in memory, so SQLite may too (up to 4 GiB; beyond that the
        // kernel's page cache still holds the file).
        let cache_kib = (file_kib + file_kib / 8 + 1024).min(4 << 20);
        conn.execute_batch(&format!(
            "PRAGMA cache_size = -{cache_kib}; PRAGMA temp_store = MEMORY;"
        ))?;
        conn.set_prepared_statement_cache_capacity(32);
        conn.execute_batch(
            "CREATE TEMP TABLE rank (src INTEGER PRIMARY KEY, r INTEGER NOT NULL);",
        )?;
        let pref = SourcePref::default();
        let sources_sql = match layout {
            Layout::Tuned => "SELECT id, name FROM source",
            Layout::Xmms2 => "SELECT id, source FROM Sources",
        };
        let sources: Vec<(i64, String)> = conn
            .prepare(sources_sql)?
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
            .collect::<Result<_, _>>()?;
        for (id, name) in &sources {
            if let Some(p) = pref.priority(name) {
                conn.execute(
                    "INSERT INTO temp.rank (src, r) VALUES (?1, ?2)",
                    [*id, p as i64],
                )?;
            }
        }
        let mut keys: Vec<(i64, String)> = Vec::new();
        if layout == Layout::Tuned {
            keys = conn
                .prepare("SELECT id, name FROM key")?
                .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
                .collect::<Result<_, _>>()?;
        }
        let key_id = |name: &str| keys.iter().find(|(_, n)| n == name).map(|(id, _)| *id);
        let tr = Translator {
            layout,
            key_id: &key_id,
        };
        let mut statements = Vec::new();
        for q in QUERIES {
            let sql = tr.query(&parse(q)?)?;
            conn.prepare_cached(&sql)?;
            statements.push(sql);
        }
        let max_key = keys.iter().map(|(id, _)| *id).max().unwrap_or(0);
        let mut field_of_key = vec![None; max_key as usize + 1];
        for (i, f) in FIELDS.iter().enumerate() {
            if let Some(k) = key_id(f) {
                field_of_key[k as usize] = Some(i);
            }
        }
        let open_us = t.elapsed().as_secs_f64() * 1e6;

        // Pull every table and index through SQLite's page cache once.
        let t = Instant::now();
        let objects: Vec<(String, String, String)> = conn
            .prepare("SELECT type, name, tbl_name FROM sqlite_master WHERE type IN ('table', 'index') AND name NOT LIKE 'sqlite_%'")?
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
            .collect::<Result<_, _>>()?;
        for (kind, name, table) in objects {
            let sql = if kind == "table" {
                format!("SELECT count(*) FROM \"{name}\" NOT INDEXED")
            } else {
                format!("SELECT count(*) FROM \"{table}\" INDEXED BY \"{name}\"")
            };
            // An index the planner cannot scan alone is skipped.
            if let Ok(mut stmt) = conn.prepare(&sql) {
                stmt.query_row([], |r| r.get::<_, i64>(0))?;
            }
        }
        let warm_us = t.elapsed().as_secs_f64() * 1e6;
        Ok(SqlSide {
            conn,
            layout,
            statements,
            field_of_key,
            open_us,
            warm_us,
        })
    }

    fn run(&self, qi: usize) -> Result<Vec<SqlRow>, BenchError> {
        let mut stmt = self.conn.prepare_cached(&self.statements[qi])?;
        let mut rows = stmt.query([])?;
        let mut out: Vec<SqlRow> = Vec::new();
        // Rows come in index order, not entry order: entry → position.
        let mut at: HashMap<u32, usize> = HashMap::new();
        while let Some(row) = rows.next()? {
            let entry = row.get::<_, i64>(0)? as u32;
            let field = match self.layout {
                Layout::Tuned => {
                    let k = row.get::<_, i64>(1)?;
                    self.field_of_key.get(k as usize).copied().flatten()
                }
                Layout::Xmms2 => match row.get_ref(1)? {
                    SqlValue::Text(k) => FIELDS.iter().position(|f| f.as_bytes() == k),
                    _ => None,
                },
            };
            let Some(field) = field else { continue };
            let rank: i64 = row.get(2)?;
            let i = *at.entry(entry).or_insert_with(|| {
                out.push((entry, Default::default()));
                out.len() - 1
            });
            let slot = &mut out[i].1[field];
            if slot.as_ref().is_some_and(|(r, _)| *r <= rank) {
                continue;
            }
            let value = match self.layout {
                Layout::Tuned => row.get_ref(3)?,
                Layout::Xmms2 => match row.get_ref(4)? {
                    SqlValue::Integer(i) => SqlValue::Integer(i),
                    _ => row.get_ref(3)?,
                },
            };
            let value = match value {
                SqlValue::Integer(i) => Val::Int(i),
                SqlValue::Text(t) => Val::Str(String::from_utf8_lossy(t).into_owned()),
                other => Val::Str(format!("{other:?}")),
            };
            *slot = Some((rank, value));
        }
        out.sort_unstable_by_key(|r| r.0);
        Ok(out)
    }
}

/// The SQL a SQLite contestant runs for the seven queries, as prepared
/// against the loaded file in `work_dir`.
pub fn sql_statements(work_dir: &Path, side: Side) -> Result<Vec<String>, BenchError> {
    let layout = match side {
        Side::Spindle => return Ok(Vec::new()),
        Side::Tuned => Layout::Tuned,
        Side::Xmms2 => Layout::Xmms2,
    };
    Ok(SqlSide::open(&side.path(work_dir), layout)?.statements)
}

fn as_ref(v: &Option<(i64, Val)>) -> Option<ValueRef<'_>> {
    v.as_ref().map(|(_, v)| match v {
        Val::Int(i) => ValueRef::Int(*i),
        Val::Str(s) => ValueRef::Str(s),
    })
}

impl Contestant for SqlSide {
    fn open_times(&self) -> (f64, Option<f64>) {
        (self.open_us, Some(self.warm_us))
    }

    fn check(
        &mut self,
        qi: usize,
        _pattern: &str,
        dump: Option<&mut Vec<String>>,
    ) -> Result<(u64, usize), BenchError> {
        let rows = self.run(qi)?;
        let mut h = RowHash::new();
        for (id, vals) in &rows {
            h.id(*id);
            for v in vals {
                h.value(as_ref(v));
            }
        }
        if let Some(out) = dump {
            out.extend(rows.iter().map(|(id, vals)| {
                let refs: Vec<Option<ValueRef<'_>>> = vals.iter().map(as_ref).collect();
                dump_line(*id, &refs)
            }));
        }
        Ok((h.0, rows.len()))
    }

    fn time(&mut self, qi: usize, _pattern: &str) -> Result<(f64, Option<f64>, usize), BenchError> {
        let t0 = Instant::now();
        let rows = self.run(qi)?;
        let n = black_box(&rows).len();
        drop(rows);
        Ok((t0.elapsed().as_secs_f64() * 1e6, None, n))
    }
}
