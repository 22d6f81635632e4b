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
use rusqlite::{Connection, OptionalExtension};
use spindle_query::SourcePref;
use spindle_store::{Db, ValueRef};

use crate::error::BenchError;
use crate::sql::{Layout, Translator, FIELDS};

/// The seven benchmark queries (`docs/benchmarks.md`).
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

/// A fetched value, copied out of SQLite (which hands out a row only
/// until the next step): an integer, or a string in the result's text
/// buffer (offset, length) — one buffer per result, not one allocation
/// per string.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Cell {
    Int(i64),
    Str(u32, u32),
}

/// The rows of one SQLite query: per entry, the best (rank, value) of
/// each field.
/// One entry of a result: its id and, per field, the best (rank, value).
type SqlRow = (u32, [Option<(i64, Cell)>; 5]);

#[derive(Debug, Default)]
struct SqlResult {
    rows: Vec<SqlRow>,
    text: String,
    /// Positions in `rows`, in entry-id order.
    order: Vec<u32>,
}

impl SqlResult {
    fn value(&self, c: &Option<(i64, Cell)>) -> Option<ValueRef<'_>> {
        c.map(|(_, v)| match v {
            Cell::Int(i) => ValueRef::Int(i),
            Cell::Str(at, len) => ValueRef::Str(&self.text[at as usize..(at + len) as usize]),
        })
    }
}

/// A multiplicative hash for entry ids (std's SipHash is built for
/// untrusted keys; these are not).
#[derive(Default)]
struct IdHasher(u64);

impl std::hash::Hasher for IdHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(8) ^ u64::from(b)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }
    fn write_u32(&mut self, n: u32) {
        self.0 = u64::from(n).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}

type IdMap = HashMap<u32, u32, std::hash::BuildHasherDefault<IdHasher>>;

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
    /// Entry id → position in the result being built (`u32::MAX`: none);
    /// reset after each query, so it costs O(result), not O(library).
    pos: Vec<u32>,
    open_us: f64,
    warm_us: f64,
}

impl SqlSide {
    fn open(path: &Path, layout: Layout) -> Result<SqlSide, BenchError> {
        let t = Instant::now();
        let file_kib = std::fs::metadata(path)?.len() / 1024;
        let conn = Connection::open(path)?;
        // A page cache that holds the whole file: Spindle keeps all its
        // data in memory, so SQLite may too (up to 8 GiB, which holds the
        // tuned file of a million entries; beyond that the kernel's page
        // cache still holds the file).
        let cache_kib = (file_kib + file_kib / 8 + 1024).min(8 << 20);
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
            // `count(*)` may count any index of a table (SQLite picks the
            // smallest, even under INDEXED BY), so an index is read with a
            // range over its first column instead.
            let sql = if kind == "table" {
                format!("SELECT count(*) FROM \"{name}\" NOT INDEXED")
            } else {
                let first: Option<String> = conn
                    .query_row(
                        &format!(
                            "SELECT name FROM pragma_index_info('{name}') ORDER BY seqno LIMIT 1"
                        ),
                        [],
                        |r| r.get(0),
                    )
                    .optional()?
                    .flatten();
                let Some(col) = first else { continue };
                format!(
                    "SELECT sum(1) FROM \"{table}\" INDEXED BY \"{name}\" WHERE \"{col}\" IS NOT NULL"
                )
            };
            // An index the planner cannot scan this way is skipped.
            if let Ok(mut stmt) = conn.prepare(&sql) {
                stmt.query_row([], |r| r.get::<_, Option<i64>>(0))?;
            }
        }
        let warm_us = t.elapsed().as_secs_f64() * 1e6;
        let max_id: Option<i64> = conn.query_row(
            match layout {
                Layout::Tuned => "SELECT max(id) FROM entry",
                Layout::Xmms2 => "SELECT max(id) FROM Media",
            },
            [],
            |r| r.get(0),
        )?;
        let pos = vec![u32::MAX; max_id.map_or(0, |m| m.clamp(0, 1 << 28) as usize + 1)];
        Ok(SqlSide {
            conn,
            layout,
            statements,
            field_of_key,
            pos,
            open_us,
            warm_us,
        })
    }

    fn run(&mut self, qi: usize) -> Result<SqlResult, BenchError> {
        let mut stmt = self.conn.prepare_cached(&self.statements[qi])?;
        let mut rows = stmt.query([])?;
        let mut out = SqlResult::default();
        // Rows come grouped by entry (joins) or by key (`*`), not in entry
        // order: entry → position via a dense table (ids past its end, if
        // any, through a hash map).
        let pos = &mut self.pos;
        let mut far = IdMap::default();
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
            let slot: &mut u32 = match pos.get_mut(entry as usize) {
                Some(p) => p,
                None => far.entry(entry).or_insert(u32::MAX),
            };
            if *slot == u32::MAX {
                out.rows.push((entry, Default::default()));
                *slot = (out.rows.len() - 1) as u32;
            }
            let i = *slot as usize;
            if out.rows[i].1[field].is_some_and(|(r, _)| r <= rank) {
                continue;
            }
            let value = match self.layout {
                Layout::Tuned => row.get_ref(3)?,
                Layout::Xmms2 => match row.get_ref(4)? {
                    SqlValue::Integer(i) => SqlValue::Integer(i),
                    _ => row.get_ref(3)?,
                },
            };
            let cell = match value {
                SqlValue::Integer(i) => Cell::Int(i),
                SqlValue::Text(t) => {
                    let start = out.text.len() as u32;
                    match std::str::from_utf8(t) {
                        Ok(s) => out.text.push_str(s),
                        Err(_) => out.text.push_str(&String::from_utf8_lossy(t)),
                    }
                    Cell::Str(start, out.text.len() as u32 - start)
                }
                other => {
                    let start = out.text.len() as u32;
                    out.text.push_str(&format!("{other:?}"));
                    Cell::Str(start, out.text.len() as u32 - start)
                }
            };
            out.rows[i].1[field] = Some((rank, cell));
        }
        for (entry, _) in &out.rows {
            if let Some(p) = pos.get_mut(*entry as usize) {
                *p = u32::MAX;
            }
        }
        // Entry order, by sorting 8-byte keys rather than the rows.
        let mut order: Vec<(u32, u32)> = out
            .rows
            .iter()
            .enumerate()
            .map(|(i, r)| (r.0, i as u32))
            .collect();
        order.sort_unstable();
        out.order = order.into_iter().map(|(_, i)| i).collect();
        Ok(out)
    }
}

/// The SQL a SQLite contestant runs for the seven queries, as prepared
/// against the loaded file in `work_dir`, each with SQLite's plan for it
/// (`EXPLAIN QUERY PLAN`, one step per line).
pub fn sql_statements(work_dir: &Path, side: Side) -> Result<Vec<(String, String)>, BenchError> {
    let layout = match side {
        Side::Spindle => return Ok(Vec::new()),
        Side::Tuned => Layout::Tuned,
        Side::Xmms2 => Layout::Xmms2,
    };
    let s = SqlSide::open(&side.path(work_dir), layout)?;
    let mut out = Vec::new();
    for sql in &s.statements {
        let mut stmt = s.conn.prepare(&format!("EXPLAIN QUERY PLAN {sql}"))?;
        let steps: Vec<(i64, i64, String)> = stmt
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(3)?)))?
            .collect::<Result<_, _>>()?;
        // Indent each step under its parent.
        let mut depth: HashMap<i64, usize> = HashMap::new();
        let mut plan = String::new();
        for (id, parent, detail) in steps {
            let d = depth.get(&parent).map_or(0, |d| d + 1);
            depth.insert(id, d);
            plan.push_str(&format!("{}{detail}\n", "  ".repeat(d)));
        }
        out.push((sql.clone(), plan));
    }
    Ok(out)
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
        let res = self.run(qi)?;
        let sorted = || res.order.iter().map(|&i| &res.rows[i as usize]);
        let mut h = RowHash::new();
        for (id, vals) in sorted() {
            h.id(*id);
            for v in vals {
                h.value(res.value(v));
            }
        }
        if let Some(out) = dump {
            out.extend(sorted().map(|(id, vals)| {
                let refs: Vec<Option<ValueRef<'_>>> = vals.iter().map(|v| res.value(v)).collect();
                dump_line(*id, &refs)
            }));
        }
        Ok((h.0, res.rows.len()))
    }

    fn time(&mut self, qi: usize, _pattern: &str) -> Result<(f64, Option<f64>, usize), BenchError> {
        let t0 = Instant::now();
        let res = self.run(qi)?;
        let n = black_box(&res).rows.len();
        drop(res);
        Ok((t0.elapsed().as_secs_f64() * 1e6, None, n))
    }
}
