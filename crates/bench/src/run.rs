//! Orchestrating a run: generate and load once, measure each contestant
//! in a child process, check that they agree, report.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::error::BenchError;
use crate::gen::Generator;
use crate::load::{load, Sink, SpindleSink, TunedSink, Xmms2Sink};
use crate::report::LibraryReport;
use crate::worker::{run_worker, Side, SideReport, WorkerRequest, QUERIES};

/// Bump when the generator or a layout changes, so kept data is rebuilt.
pub const DATA_VERSION: u32 = 1;

const MANIFEST: &str = "manifest.json";

/// One run at one size.
#[derive(Debug, Clone)]
pub struct LibraryConfig {
    pub entries: u32,
    pub rounds: usize,
    pub seed: u64,
    pub sides: Vec<Side>,
    /// Where the loaded data lives. Data of an earlier run with the same
    /// entries, seed and data version is reused.
    pub work_dir: PathBuf,
    /// Tracks per committed batch while loading.
    pub batch: usize,
}

impl LibraryConfig {
    pub fn new(entries: u32, work_dir: PathBuf) -> LibraryConfig {
        LibraryConfig {
            entries,
            rounds: 10,
            seed: 1,
            sides: Side::ALL.to_vec(),
            work_dir,
            batch: 1000,
        }
    }
}

#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
struct Manifest {
    version: u32,
    entries: u32,
    seed: u64,
    properties: u64,
    sides: Vec<Side>,
    load_secs: Vec<(Side, f64)>,
    /// The store's data-file header when Spindle's copy was written.
    #[serde(default)]
    store_stamp: Vec<u8>,
}

/// Runs a worker for a request, normally in a child process
/// ([`spawn_worker`]); tests may run it in-process ([`run_worker`]).
pub type Spawn<'a> = dyn FnMut(&WorkerRequest) -> Result<SideReport, BenchError> + 'a;

/// Generate (or reuse), measure, cross-check, report.
pub fn run_library(
    cfg: &LibraryConfig,
    spawn: &mut Spawn<'_>,
    log: &mut dyn FnMut(&str),
) -> Result<LibraryReport, BenchError> {
    let manifest = prepare(cfg, log)?;
    let disk_bytes = cfg
        .sides
        .iter()
        .map(|s| Ok((*s, disk_usage(&cfg.work_dir, *s)?)))
        .collect::<Result<Vec<_>, BenchError>>()?;

    let mut sides = Vec::new();
    for side in &cfg.sides {
        log(&format!(
            "measuring {} ({} rounds of {} queries)",
            side.label(),
            cfg.rounds,
            QUERIES.len()
        ));
        sides.push(spawn(&WorkerRequest {
            side: *side,
            work_dir: cfg.work_dir.clone(),
            rounds: cfg.rounds,
            dump: None,
        })?);
    }
    check_agreement(cfg, &sides, spawn)?;
    Ok(LibraryReport {
        entries: cfg.entries,
        properties: manifest.properties,
        rounds: cfg.rounds,
        seed: cfg.seed,
        sides,
        disk_bytes,
        load_secs: manifest
            .load_secs
            .into_iter()
            .filter(|(s, _)| cfg.sides.contains(s))
            .collect(),
    })
}

/// Files this benchmark owns in a work dir.
fn owned_paths(work: &Path) -> Vec<PathBuf> {
    let mut v = vec![work.join(MANIFEST), work.join("mismatch")];
    for s in Side::ALL {
        let p = s.path(work);
        v.push(PathBuf::from(format!("{}-wal", p.display())));
        v.push(PathBuf::from(format!("{}-shm", p.display())));
        v.push(PathBuf::from(format!("{}-journal", p.display())));
        v.push(p);
    }
    v
}

/// The header (magic and format version) of a data file this build of
/// the store writes, so that kept Spindle data from another build is
/// reloaded rather than misread.
fn store_stamp(work: &Path) -> Result<Vec<u8>, BenchError> {
    let dir = work.join(".stamp");
    if dir.exists() {
        fs::remove_dir_all(&dir)?;
    }
    {
        let db = spindle_store::Db::open(&dir)?;
        db.commit(vec![spindle_store::Op::CreateEntry(1)])?;
        db.compact()?;
    }
    let bytes = fs::read(dir.join(spindle_store::DATA_FILE))?;
    fs::remove_dir_all(&dir)?;
    Ok(bytes[..bytes.len().min(12)].to_vec())
}

fn remove_side(work: &Path, side: Side) -> Result<(), BenchError> {
    let p = side.path(work);
    if p.is_dir() {
        fs::remove_dir_all(&p)?;
    }
    for suffix in ["", "-wal", "-shm", "-journal"] {
        let f = PathBuf::from(format!("{}{suffix}", p.display()));
        if f.is_file() {
            fs::remove_file(&f)?;
        }
    }
    Ok(())
}

/// Load the generated library into the requested contestants that the
/// work dir does not hold yet (same size, seed and formats).
fn prepare(cfg: &LibraryConfig, log: &mut dyn FnMut(&str)) -> Result<Manifest, BenchError> {
    let work = &cfg.work_dir;
    let kept = fs::read_to_string(work.join(MANIFEST))
        .ok()
        .and_then(|t| serde_json::from_str::<Manifest>(&t).ok())
        .filter(|m| m.version == DATA_VERSION && m.entries == cfg.entries && m.seed == cfg.seed);
    if kept.is_none() && work.exists() {
        let owned = owned_paths(work);
        let foreign = fs::read_dir(work)?
            .filter_map(Result::ok)
            .any(|e| !owned.contains(&e.path()) && e.file_name() != ".stamp");
        if foreign {
            return Err(BenchError::Io(std::io::Error::other(format!(
                "{} holds files that are not this benchmark's; give an empty or new directory",
                work.display()
            ))));
        }
        for p in owned_paths(work) {
            if p.is_dir() {
                fs::remove_dir_all(&p)?;
            } else if p.exists() {
                fs::remove_file(&p)?;
            }
        }
    }
    fs::create_dir_all(work)?;
    let stamp = store_stamp(work)?;
    let mut m = kept.unwrap_or(Manifest {
        version: DATA_VERSION,
        entries: cfg.entries,
        seed: cfg.seed,
        properties: 0,
        sides: Vec::new(),
        load_secs: Vec::new(),
        store_stamp: Vec::new(),
    });
    let need: Vec<Side> = cfg
        .sides
        .iter()
        .copied()
        .filter(|s| !m.sides.contains(s) || (*s == Side::Spindle && m.store_stamp != stamp))
        .collect();
    if need.is_empty() {
        log(&format!("reusing the library loaded in {}", work.display()));
        return Ok(m);
    }
    for s in &need {
        remove_side(work, *s)?;
        m.sides.retain(|x| x != s);
        m.load_secs.retain(|(x, _)| x != s);
    }

    let gen = Generator::new(cfg.entries, cfg.seed);
    let properties: u64 = gen.tracks().map(|t| t.props.len() as u64).sum();
    log(&format!(
        "loading {} entries ({} properties) into {}",
        cfg.entries,
        properties,
        need.iter()
            .map(|s| s.label())
            .collect::<Vec<_>>()
            .join(", ")
    ));
    let mut sinks: Vec<(String, Box<dyn Sink>)> = Vec::new();
    for s in &need {
        let path = s.path(work);
        let sink: Box<dyn Sink> = match s {
            Side::Spindle => Box::new(SpindleSink::create(&path)?),
            Side::Tuned => Box::new(TunedSink::create(&path)?),
            Side::Xmms2 => Box::new(Xmms2Sink::create(&path)?),
        };
        sinks.push((s.name().to_owned(), sink));
    }
    let total = cfg.entries as usize;
    let mut next_report = total / 10;
    let times = load(gen.tracks(), sinks, cfg.batch, &mut |done| {
        if done >= next_report && done < total {
            log(&format!("  loaded {done} of {total}"));
            next_report += total / 10;
        }
    })?;
    m.load_secs.extend(
        times
            .into_iter()
            .filter_map(|(name, t)| Side::parse(&name).map(|s| (s, t.as_secs_f64()))),
    );
    m.sides.extend(need);
    m.properties = properties;
    m.store_stamp = stamp;
    let json = serde_json::to_string_pretty(&m).map_err(|e| BenchError::Worker(e.to_string()))?;
    fs::write(work.join(MANIFEST), json)?;
    Ok(m)
}

/// Bytes of a contestant's files (a directory is summed).
fn disk_usage(work: &Path, side: Side) -> Result<u64, BenchError> {
    let p = side.path(work);
    let mut total = 0;
    if p.is_dir() {
        for e in fs::read_dir(&p)? {
            let e = e?;
            if e.file_name() != spindle_store::LOCK_FILE {
                total += e.metadata()?.len();
            }
        }
    } else {
        for suffix in ["", "-wal", "-shm"] {
            if let Ok(m) = fs::metadata(format!("{}{suffix}", p.display())) {
                total += m.len();
            }
        }
    }
    Ok(total)
}

/// Every contestant must return the same rows; if not, dump them and say
/// where they first differ.
fn check_agreement(
    cfg: &LibraryConfig,
    sides: &[SideReport],
    spawn: &mut Spawn<'_>,
) -> Result<(), BenchError> {
    let Some(first) = sides.first() else {
        return Ok(());
    };
    let mut bad: Vec<usize> = Vec::new();
    for qi in 0..QUERIES.len() {
        let q0 = &first.queries[qi];
        if sides
            .iter()
            .any(|s| s.queries[qi].rows != q0.rows || s.queries[qi].hash != q0.hash)
        {
            bad.push(qi);
        }
    }
    if bad.is_empty() {
        return Ok(());
    }
    let dir = cfg.work_dir.join("mismatch");
    fs::create_dir_all(&dir)?;
    for s in sides {
        spawn(&WorkerRequest {
            side: s.side,
            work_dir: cfg.work_dir.clone(),
            rounds: 0,
            dump: Some(dir.clone()),
        })?;
    }
    let mut msg = String::new();
    for qi in bad {
        msg.push_str(&format!("query `{}`:\n", QUERIES[qi]));
        for s in sides {
            msg.push_str(&format!(
                "  {:<14} {} rows, hash {:016x}\n",
                s.side.label(),
                s.queries[qi].rows,
                s.queries[qi].hash
            ));
        }
        let read = |s: Side| fs::read_to_string(dir.join(format!("{}-{qi}.txt", s.name())));
        let base = read(first.side)?;
        for s in &sides[1..] {
            let other = read(s.side)?;
            if let Some((a, b)) = first_difference(&base, &other) {
                msg.push_str(&format!(
                    "  first difference, {} vs {}:\n    {a}\n    {b}\n",
                    first.side.label(),
                    s.side.label()
                ));
            }
        }
    }
    msg.push_str(&format!("(all rows in {})", dir.display()));
    Err(BenchError::Mismatch(msg))
}

fn first_difference(a: &str, b: &str) -> Option<(String, String)> {
    let mut la = a.lines();
    let mut lb = b.lines();
    loop {
        match (la.next(), lb.next()) {
            (None, None) => return None,
            (x, y) if x == y => continue,
            (x, y) => {
                return Some((
                    x.unwrap_or("(end)").to_owned(),
                    y.unwrap_or("(end)").to_owned(),
                ))
            }
        }
    }
}

/// Run a worker in a child process: `program ARGS… REQUEST-JSON`, which
/// must print [`worker_main`]'s output.
pub fn spawn_worker(
    program: &Path,
    args: &[&str],
    req: &WorkerRequest,
) -> Result<SideReport, BenchError> {
    let json = serde_json::to_string(req).map_err(|e| BenchError::Worker(e.to_string()))?;
    let out = Command::new(program)
        .args(args)
        .arg(json)
        .stdin(Stdio::null())
        .stderr(Stdio::inherit())
        .output()?;
    if !out.status.success() {
        return Err(BenchError::Worker(format!(
            "{} worker exited with {}",
            req.side.label(),
            out.status
        )));
    }
    serde_json::from_slice(&out.stdout).map_err(|e| {
        BenchError::Worker(format!(
            "{} worker printed something that is not a report: {e}",
            req.side.label()
        ))
    })
}

/// The child's side of [`spawn_worker`]: a request in, a report out.
pub fn worker_main(request_json: &str) -> Result<String, BenchError> {
    let req: WorkerRequest = serde_json::from_str(request_json)
        .map_err(|e| BenchError::Worker(format!("bad worker request: {e}")))?;
    let report = run_worker(&req)?;
    serde_json::to_string(&report).map_err(|e| BenchError::Worker(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn three_contestants_agree_on_a_small_library() {
        let dir = tempfile::tempdir().unwrap();
        let mut cfg = LibraryConfig::new(3000, dir.path().join("work"));
        cfg.rounds = 1;
        let mut logs = Vec::new();
        let report = run_library(&cfg, &mut |r| run_worker(r), &mut |l| {
            logs.push(l.to_owned())
        })
        .unwrap();
        assert_eq!(report.sides.len(), 3);
        let rows: Vec<usize> = report.sides[0].queries.iter().map(|q| q.rows).collect();
        assert_eq!(rows[1], 3000, "`*` selects everything");
        assert!(
            rows[0] > 0 && rows[2] > 0 && rows[3] > rows[4] && rows[5] > 0 && rows[6] > 0,
            "{rows:?}"
        );
        let text = report.render();
        assert!(
            text.contains("artist:metallica") && text.contains("PASS") || text.contains("MISS")
        );

        // A second run reuses the loaded data.
        let again = run_library(&cfg, &mut |r| run_worker(r), &mut |l| {
            logs.push(l.to_owned())
        })
        .unwrap();
        assert!(logs.iter().any(|l| l.starts_with("reusing")), "{logs:?}");
        assert_eq!(again.properties, report.properties);
    }

    #[test]
    fn a_wrong_result_fails_loudly_with_the_first_difference() {
        let dir = tempfile::tempdir().unwrap();
        let mut cfg = LibraryConfig::new(500, dir.path().join("work"));
        cfg.rounds = 0;
        cfg.sides = vec![Side::Spindle, Side::Tuned];
        // Corrupt one title in the tuned SQLite file after loading.
        run_library(&cfg, &mut |r| run_worker(r), &mut |_| {}).unwrap();
        let conn = rusqlite::Connection::open(Side::Tuned.path(&cfg.work_dir)).unwrap();
        conn.execute(
            "UPDATE prop SET value = 'Wrong', folded = 'wrong' WHERE entry = 1 AND key = (SELECT id FROM key WHERE name = 'album')",
            [],
        )
        .unwrap();
        drop(conn);
        let err = run_library(&cfg, &mut |r| run_worker(r), &mut |_| {}).unwrap_err();
        let msg = err.to_string();
        assert!(matches!(err, BenchError::Mismatch(_)), "{msg}");
        assert!(msg.contains("query `*`") && msg.contains("Wrong"), "{msg}");
    }

    #[test]
    fn a_directory_with_other_files_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join("precious.txt"), "x").unwrap();
        let cfg = LibraryConfig::new(100, dir.path().to_owned());
        let err = run_library(&cfg, &mut |r| run_worker(r), &mut |_| {}).unwrap_err();
        assert!(err.to_string().contains("not this benchmark's"), "{err}");
        assert!(dir.path().join("precious.txt").exists());
    }
}
