//! Profile one query on a kept library: `qprof DIR PATTERN [N]` opens
//! the library read-only, runs the pattern (select + fetch of artist,
//! album, title, tracknr, duration) N times in `run_queries` (a
//! function to point callgrind's --toggle-collect at), and prints the
//! mean time.

use std::error::Error;
use std::time::Instant;

use spindle_query::{parse, SourcePref};
use spindle_store::{Db, Library};

#[inline(never)]
fn run_queries(lib: &Library, pattern: &str, n: usize) -> Result<usize, Box<dyn Error>> {
    let pref = SourcePref::default();
    let fields = ["artist", "album", "title", "tracknr", "duration"];
    let mut rows = 0;
    for _ in 0..n {
        let coll = parse(pattern)?.coll;
        let ids = lib.query_ids(&coll, &pref)?;
        rows += lib.fetch_rows(&ids.ids, &fields, &pref).len();
    }
    Ok(rows)
}

fn main() -> Result<(), Box<dyn Error>> {
    const USAGE: &str = "usage: qprof DIR PATTERN [N]";
    let mut args = std::env::args().skip(1);
    let dir = args.next().ok_or(USAGE)?;
    let pattern = args.next().ok_or(USAGE)?;
    let n: usize = args.next().and_then(|s| s.parse().ok()).unwrap_or(100);
    let t = Instant::now();
    let db = Db::open_read_only(&dir)?;
    eprintln!("open: {:.0} ms", t.elapsed().as_secs_f64() * 1e3);
    let lib = db.read();
    // Warm up (builds the columns).
    run_queries(&lib, "*", 1)?;
    run_queries(&lib, &pattern, 1)?;
    let t = Instant::now();
    let rows = run_queries(&lib, &pattern, n)?;
    eprintln!(
        "{pattern}: {} rows, {:.1} µs per query (warm caches)",
        rows / n.max(1),
        t.elapsed().as_secs_f64() * 1e6 / n.max(1) as f64
    );
    // Cold: the whole library is fetched between two runs, as in
    // `bench library`, where the seven queries take turns.
    let mut sel = Vec::new();
    let mut all = Vec::new();
    for _ in 0..n.min(50) {
        run_queries(&lib, "*", 1)?;
        let pref = SourcePref::default();
        let t = Instant::now();
        let coll = parse(&pattern)?.coll;
        let ids = lib.query_ids(&coll, &pref)?;
        let t1 = t.elapsed();
        let fields = ["artist", "album", "title", "tracknr", "duration"];
        std::hint::black_box(lib.fetch_rows(&ids.ids, &fields, &pref));
        sel.push(t1.as_secs_f64() * 1e6);
        all.push(t.elapsed().as_secs_f64() * 1e6);
    }
    sel.sort_by(f64::total_cmp);
    all.sort_by(f64::total_cmp);
    eprintln!(
        "{pattern}: {:.1} µs per query after a full fetch (select {:.1} µs), medians",
        all[all.len() / 2],
        sel[sel.len() / 2]
    );
    Ok(())
}
