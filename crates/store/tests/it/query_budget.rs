//! A query with a budget stops on time: past its time or its steps, or
//! when its cancellation flag is raised, it ends with the budget's error
//! within about twice its limit, whatever the query (a 60,000-term AND
//! once grew to 16 GB); within its budget it finds what the unbudgeted
//! query finds.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use spindle_query::{parse, Coll, SourcePref};
use spindle_store::{Budget, Db, Op, QueryError};

const ENTRIES: u32 = 4000;

/// A library of `ENTRIES` tracks with distinct titles (so a glob visits
/// every one) over 40 artists; with `indexed`, title and artist have
/// indexes (the planner then gathers sets instead of testing entries).
fn library(indexed: bool) -> (tempfile::TempDir, Db) {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path()).unwrap();
    let mut ops = Vec::new();
    if indexed {
        ops.push(Op::CreateIndex("title".into()));
        ops.push(Op::CreateIndex("artist".into()));
    }
    for n in 0..ENTRIES {
        let id = db.reserve_id();
        ops.push(Op::CreateEntry(id));
        for (key, value) in [
            ("artist", format!("artist {}", n % 40)),
            ("album", format!("album {}", n % 400)),
            ("title", format!("a song called number {n} of many")),
        ] {
            ops.push(Op::AddProp {
                entry: id,
                key: key.into(),
                source: "plugin/id3v2".into(),
                value: value.into(),
            });
        }
    }
    db.commit(ops).unwrap();
    (dir, db)
}

/// `n` copies of `term` joined by `sep`, parsed (the CLI's limits allow
/// 100,000 terms).
fn heavy(n: usize, term: &str, sep: &str) -> Coll {
    parse(&vec![term; n].join(sep)).unwrap().coll
}

#[test]
fn a_query_over_its_time_stops_within_twice_the_budget() {
    let limit = Duration::from_millis(200);
    for ((what, coll), indexed) in [
        ("AND", heavy(60_000, "title~a*", " ")),
        ("OR", heavy(40_000, "title~a*", " OR ")),
        ("NOT", heavy(60_000, "NOT title~zzz*", " ")),
        ("words", heavy(60_000, "song*", " ")),
    ]
    .into_iter()
    .flat_map(|c| [(c.clone(), false), (c, true)])
    {
        let (_dir, db) = library(indexed);
        let lib = db.read();
        let what = format!("{what}, indexed: {indexed}");
        let t = Instant::now();
        let r = lib.query_ids_with_budget(
            &coll,
            &SourcePref::default(),
            Budget::default().with_time(limit),
        );
        let took = t.elapsed();
        match r {
            Err(QueryError::OverTime { limit: l, ran }) => {
                assert_eq!(l, limit);
                assert!(ran >= limit, "{what}: {ran:?}");
            }
            // The word search can short-cut to an empty result fast enough
            // in an optimised build; the glob queries cannot.
            Ok(_) if what.starts_with("words") => {}
            other => panic!("{what}: {other:?}"),
        }
        // Twice the budget, and room for a loaded CI machine to stall.
        assert!(
            took < 2 * limit + Duration::from_millis(500),
            "{what}: stopped after {took:?}"
        );
    }
}

#[test]
fn a_query_over_its_steps_stops_before_its_memory_grows() {
    let (_dir, db) = library(true);
    let lib = db.read();
    // Each operand gathers every entry: 60,000 × 4,000 ids unbounded.
    let coll = heavy(60_000, "+title", " AND ");
    let t = Instant::now();
    let r = lib.query_ids_with_budget(
        &coll,
        &SourcePref::default(),
        Budget::default().with_steps(1_000_000),
    );
    assert_eq!(r, Err(QueryError::OverSteps { limit: 1_000_000 }));
    assert!(t.elapsed() < Duration::from_secs(2), "{:?}", t.elapsed());
    let msg = QueryError::OverSteps { limit: 1_000_000 }.to_string();
    assert!(msg.contains("use fewer or narrower filters"), "{msg}");
}

#[test]
fn a_raised_cancel_flag_stops_a_running_query_within_milliseconds() {
    let (_dir, db) = library(false);
    let lib = db.read();
    let coll = heavy(60_000, "title~a*", " ");
    let flag = Arc::new(AtomicBool::new(false));
    let raiser = {
        let flag = flag.clone();
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(100));
            flag.store(true, Ordering::Relaxed);
            Instant::now()
        })
    };
    let r = lib.query_ids_with_budget(
        &coll,
        &SourcePref::default(),
        Budget::default()
            .with_time(Duration::from_secs(60))
            .with_cancel(flag),
    );
    let stopped = Instant::now();
    let raised = raiser.join().unwrap();
    assert_eq!(r, Err(QueryError::Cancelled));
    let late = stopped.saturating_duration_since(raised);
    assert!(late < Duration::from_secs(1), "stopped {late:?} late");
}

#[test]
fn within_its_budget_a_query_finds_what_the_unbudgeted_one_finds() {
    for indexed in [false, true] {
        let (_dir, db) = library(indexed);
        let lib = db.read();
        let pref = SourcePref::default();
        for pattern in [
            "title~7*",
            "artist:\"artist 3\" OR album~9",
            "NOT title~1* AND +artist",
            "#5-300 title~*2",
            "many",
            "*",
        ] {
            let coll = parse(pattern).unwrap().coll;
            let budget = Budget::default()
                .with_time(Duration::from_secs(30))
                .with_steps(u64::MAX / 2)
                .with_cancel(Arc::new(AtomicBool::new(false)));
            assert_eq!(
                lib.query_ids_with_budget(&coll, &pref, budget),
                lib.query_ids(&coll, &pref),
                "{pattern}"
            );
        }
    }
}
