//! `kill -9` of a real writing process at random moments, then reopen:
//! every acknowledged commit is there, a commit in flight at the kill is
//! there entirely or not at all, and nothing else changed.
//!
//! The test re-runs its own binary as the writer (selected by an
//! environment variable). The writer runs a few threads, so commits are
//! grouped into shared fsyncs, and compacts now and then; it prints
//! `ACK <thread> <n>` after each commit returns. Transaction n of a thread
//! is a pure function of (thread, n), so the parent knows what the
//! database must hold without trusting the writer.
//!
//! `SPINDLE_CRASH_SEED` replays a run's random choices (kill delays and
//! modes); the moments the kills land still vary with timing.
//! `SPINDLE_CRASH_KILLS` sets the number of kills (default 240).

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use spindle_store::{Db, Op, Value};

use crate::common::{dump, Props, State};

const WRITER_ENV: &str = "SPINDLE_CRASH_WRITER";
const START_ENV: &str = "SPINDLE_CRASH_START";
const THREADS: u32 = 3;
/// Thread 0 compacts after every this many of its commits.
const COMPACT_EVERY: u32 = 20;
const SRC: &str = "plugin/crash";
const RATER: &str = "client/rater";

fn id(t: u32, n: u32) -> u32 {
    (n - 1) * THREADS + t + 1
}

fn add(entry: u32, key: &str, source: &str, value: impl Into<Value>) -> Op {
    Op::AddProp {
        entry,
        key: key.into(),
        source: source.into(),
        value: value.into(),
    }
}

/// Transaction `n` (from 1) of thread `t`, by `n % 5`:
/// 1–3 create entry (t, n) with properties (every 23rd a large one);
/// 4 retitles entry (t, n-3) and touches (t, n-2);
/// 0 deletes entry (t, n-3) and notes it on (t, n-4).
/// Each thread only touches its own entries, so threads commute.
fn txn(t: u32, n: u32) -> Vec<Op> {
    match n % 5 {
        1..=3 => {
            let e = id(t, n);
            let mut ops = vec![
                Op::CreateEntry(e),
                add(e, "title", SRC, format!("Track {n} of writer {t}")),
                add(e, "artist", SRC, format!("Artist {}", n % 17)),
                add(e, "tracknr", SRC, i64::from(n % 30)),
                add(e, "rating", RATER, i64::from(n % 5)),
            ];
            let extra = if n.is_multiple_of(23) { 300 } else { n % 7 };
            for i in 0..extra {
                ops.push(add(
                    e,
                    &format!("tag{i}"),
                    SRC,
                    format!("{n}-{i}-{}", "x".repeat((i % 9) as usize)),
                ));
            }
            ops
        }
        4 => {
            let e = id(t, n - 3);
            vec![
                Op::DelKey {
                    entry: e,
                    key: "title".into(),
                    source: Some(SRC.into()),
                },
                add(e, "title", SRC, format!("Retitled by {n}")),
                add(e, "playcount", RATER, i64::from(n)),
                add(id(t, n - 2), "touched", RATER, i64::from(n)),
            ]
        }
        _ => vec![
            Op::DeleteEntry(id(t, n - 3)),
            add(
                id(t, n - 4),
                "note",
                SRC,
                format!("entry {} deleted", id(t, n - 3)),
            ),
        ],
    }
}

/// The entries transaction (t, n) changes.
fn touched(t: u32, n: u32) -> Vec<u32> {
    match n % 5 {
        1..=3 => vec![id(t, n)],
        4 => vec![id(t, n - 3), id(t, n - 2)],
        _ => vec![id(t, n - 3), id(t, n - 4)],
    }
}

/// The reference: a plain map, changed the way the ops say.
fn apply(state: &mut State, ops: &[Op]) {
    for op in ops {
        match op {
            Op::CreateEntry(e) => {
                state.insert(*e, Props::new());
            }
            Op::DeleteEntry(e) => {
                state.remove(e);
            }
            Op::AddProp {
                entry,
                key,
                source,
                value,
            } => {
                state
                    .get_mut(entry)
                    .expect("the reference only adds to live entries")
                    .insert((key.clone(), source.clone(), value.clone()));
            }
            Op::DelKey { entry, key, source } => {
                if let Some(p) = state.get_mut(entry) {
                    p.retain(|(k, s, _)| !(k == key && source.as_ref().is_none_or(|src| src == s)));
                }
            }
            other => unreachable!("the writer does not use {other:?}"),
        }
    }
}

/// The child: commit each thread's transactions from its start onwards
/// until killed.
#[allow(
    clippy::exit,
    reason = "a crash test's child process: it must not outlive its parent, and it \
              ends without unwinding, as a killed server would"
)]
fn writer(dir: &str) {
    let starts: Vec<u32> = std::env::var(START_ENV)
        .expect("start counts")
        .split(',')
        .map(|s| s.parse().expect("a count"))
        .collect();
    // Never outlive a parent that failed to kill us.
    std::thread::spawn(|| {
        std::thread::sleep(Duration::from_secs(60));
        std::process::exit(2);
    });
    let fail = |what: String| -> ! {
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "ERR {what}");
        let _ = out.flush();
        std::process::exit(3)
    };
    let db = Arc::new(Db::open(dir).unwrap_or_else(|e| fail(format!("open: {e}"))));
    {
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "READY");
        let _ = out.flush();
    }
    let handles: Vec<_> = (0..THREADS)
        .map(|t| {
            let db = Arc::clone(&db);
            let start = starts[t as usize];
            std::thread::spawn(move || {
                for n in start + 1.. {
                    if let Err(e) = db.commit(txn(t, n)) {
                        fail(format!("commit {t} {n}: {e}"));
                    }
                    let mut out = std::io::stdout().lock();
                    let _ = writeln!(out, "ACK {t} {n}");
                    let _ = out.flush();
                    if t == 0 && n.is_multiple_of(COMPACT_EVERY) {
                        let _ = writeln!(out, "COMPACT");
                        let _ = out.flush();
                        drop(out);
                        if let Err(e) = db.compact() {
                            fail(format!("compact: {e}"));
                        }
                        let mut out = std::io::stdout().lock();
                        let _ = writeln!(out, "COMPACTED");
                        let _ = out.flush();
                    }
                }
            })
        })
        .collect();
    for h in handles {
        let _ = h.join();
    }
}

/// What one run of the writer printed before it died.
#[derive(Default)]
struct Run {
    /// Last acknowledged transaction per thread.
    acked: Vec<u32>,
    /// The kill came between "COMPACT" and "COMPACTED".
    in_compaction: bool,
    compactions: usize,
}

#[test]
fn acknowledged_commits_survive_sigkill_at_random_moments() {
    if let Ok(dir) = std::env::var(WRITER_ENV) {
        return writer(&dir);
    }
    let seed: u64 = std::env::var("SPINDLE_CRASH_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(rand::random);
    let kills: usize = std::env::var("SPINDLE_CRASH_KILLS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(240);
    println!("crash test seed {seed} (SPINDLE_CRASH_SEED={seed} to replay)");
    let mut rng = SmallRng::seed_from_u64(seed);
    let dir = tempfile::tempdir().unwrap();
    let started = Instant::now();

    // Per thread: transactions known to be in the database, and the
    // reference state they produce.
    let mut done = vec![0u32; THREADS as usize];
    let mut model = State::new();
    let mut stats = Stats::default();

    for round in 0..kills {
        let ctx = format!("seed {seed}, round {round}");
        // Mostly a random moment; sometimes right after opening; and a
        // quarter of the time just after a compaction starts.
        let mode = rng.gen_range(0..100);
        let delay = match mode {
            0..=9 => Duration::from_micros(rng.gen_range(0..2_000)),
            10..=74 => Duration::from_micros(rng.gen_range(0..40_000)),
            _ => Duration::from_micros(rng.gen_range(0..4_000)),
        };
        let wait_for_compaction = mode >= 75;
        let run = run_writer(dir.path(), &done, delay, wait_for_compaction, &ctx);
        stats.record(&run);

        // Reopen (now and then read-only) and check.
        let read_only = round % 7 == 6;
        let db = if read_only {
            Db::open_read_only(dir.path())
        } else {
            Db::open(dir.path())
        }
        .unwrap_or_else(|e| panic!("{ctx}: reopen failed: {e}"));
        if !db.open_report().warnings.is_empty() {
            stats.warnings += 1;
        }
        let actual = dump(&db);
        drop(db);
        for t in 0..THREADS {
            let ti = t as usize;
            assert!(
                run.acked[ti] >= done[ti],
                "{ctx}: thread {t} acknowledged {} but had {} before",
                run.acked[ti],
                done[ti]
            );
            // Acknowledged: must be there.
            for n in done[ti] + 1..=run.acked[ti] {
                apply(&mut model, &txn(t, n));
            }
            done[ti] = run.acked[ti];
            // In flight: all or nothing.
            let n = done[ti] + 1;
            let ids = touched(t, n);
            let pick = |s: &State| -> State {
                ids.iter()
                    .filter_map(|i| s.get(i).map(|p| (*i, p.clone())))
                    .collect()
            };
            let (got, absent) = (pick(&actual), pick(&model));
            let mut present = absent.clone();
            apply(&mut present, &txn(t, n));
            if got == present {
                apply(&mut model, &txn(t, n));
                done[ti] = n;
                stats.in_flight_present += 1;
            } else if got != absent {
                panic!(
                    "{ctx}: transaction {n} of thread {t} (acknowledged up to {}) is partly applied or wrong:\n  found   {got:?}\n  without {absent:?}\n  with    {present:?}",
                    done[ti]
                );
            }
        }
        if actual != model {
            let lost: Vec<_> = model.keys().filter(|k| !actual.contains_key(k)).collect();
            let extra: Vec<_> = actual.keys().filter(|k| !model.contains_key(k)).collect();
            let changed: Vec<_> = model
                .iter()
                .filter(|(k, v)| actual.get(k).is_some_and(|a| a != *v))
                .map(|(k, _)| k)
                .collect();
            panic!("{ctx}: the database differs from the acknowledged commits: lost entries {lost:?}, unexpected entries {extra:?}, changed entries {changed:?}");
        }
    }
    let total: u32 = done.iter().sum();
    println!(
        "{kills} kills in {:.1?}: {total} transactions, {} entries; {} kills during compaction ({} compactions started); {} reopens reported a dropped tail; {} in-flight transactions were found committed",
        started.elapsed(),
        model.len(),
        stats.in_compaction,
        stats.compactions,
        stats.warnings,
        stats.in_flight_present
    );
    assert!(total > kills as u32, "the writer hardly committed anything");
    assert!(
        stats.in_compaction > 0,
        "no kill landed during a compaction"
    );
}

#[derive(Default)]
struct Stats {
    in_compaction: usize,
    compactions: usize,
    warnings: usize,
    in_flight_present: usize,
}

impl Stats {
    fn record(&mut self, run: &Run) {
        self.in_compaction += usize::from(run.in_compaction);
        self.compactions += run.compactions;
    }
}

/// Start the writer, kill it after `delay` (counted from the next
/// compaction if `wait_for_compaction`, else from its opening), and
/// collect everything it printed.
fn run_writer(
    dir: &Path,
    done: &[u32],
    delay: Duration,
    wait_for_compaction: bool,
    ctx: &str,
) -> Run {
    let starts = done
        .iter()
        .map(u32::to_string)
        .collect::<Vec<_>>()
        .join(",");
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "crash::acknowledged_commits_survive_sigkill_at_random_moments",
            "--exact",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(WRITER_ENV, dir)
        .env(START_ENV, &starts)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = mpsc::channel::<String>();
    let reader = std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let mut lines = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(20);
    let wait_for = |want: &str, lines: &mut Vec<String>| -> bool {
        while Instant::now() < deadline {
            match rx.recv_timeout(Duration::from_millis(100)) {
                Ok(l) => {
                    let hit = l.trim_end().ends_with(want);
                    lines.push(l);
                    if hit {
                        return true;
                    }
                }
                Err(mpsc::RecvTimeoutError::Timeout) => {}
                Err(mpsc::RecvTimeoutError::Disconnected) => return false,
            }
        }
        false
    };
    let ready = wait_for("READY", &mut lines);
    if ready && wait_for_compaction {
        wait_for("COMPACT", &mut lines);
    }
    if ready {
        std::thread::sleep(delay);
    }
    // `Child::kill` is SIGKILL on Unix.
    let _ = child.kill();
    let status = child.wait().unwrap();
    reader.join().unwrap();
    lines.extend(rx.try_iter());
    let mut stderr = String::new();
    if let Some(mut e) = child.stderr.take() {
        let _ = std::io::Read::read_to_string(&mut e, &mut stderr);
    }
    assert!(
        ready
            && !lines.iter().any(|l| l.starts_with("ERR"))
            && std::os::unix::process::ExitStatusExt::signal(&status) == Some(9),
        "{ctx}: the writer failed ({status}):\n{}\n{stderr}",
        lines.join("\n")
    );
    let mut run = Run {
        acked: done.to_vec(),
        ..Run::default()
    };
    for l in &lines {
        let l = l.trim_end();
        if let Some(rest) = l.strip_prefix("ACK ") {
            let (t, n) = rest.split_once(' ').unwrap();
            let (t, n): (usize, u32) = (t.parse().unwrap(), n.parse().unwrap());
            assert_eq!(
                n,
                run.acked[t] + 1,
                "{ctx}: thread {t} acknowledged out of order"
            );
            run.acked[t] = n;
        } else if l.ends_with("COMPACTED") {
            run.in_compaction = false;
        } else if l.ends_with("COMPACT") {
            run.in_compaction = true;
            run.compactions += 1;
        }
    }
    run
}
