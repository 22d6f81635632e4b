//! Times opening a large listening history: `open_history gen DIR N`
//! writes N listens (a few hundred users, a skewed choice of 20,000
//! artists over five years) into a new history in DIR; `open_history
//! open DIR` opens it and prints the time, the CPU, the resident memory
//! and the open report; `open_history checkpoint DIR` opens it and writes
//! a checkpoint.

use std::path::Path;
use std::time::Instant;

use spindle_listens::{ChartKind, ChartQuery, Listen, Listens, Options, RecentQuery};

fn status(field: &str) -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with(field))
                .and_then(|l| l.split_whitespace().nth(1).and_then(|n| n.parse().ok()))
        })
        .unwrap_or(0)
}

fn cpu_secs() -> f64 {
    let s = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let after = s.rsplit(')').next().unwrap_or("");
    let f: Vec<f64> = after
        .split_whitespace()
        .map(|x| x.parse().unwrap_or(0.0))
        .collect();
    // utime and stime are fields 14 and 15 (11 and 12 after the name).
    (f.get(11).unwrap_or(&0.0) + f.get(12).unwrap_or(&0.0)) / 100.0
}

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    /// Skewed towards 0: the square of a uniform draw.
    fn skewed(&mut self, n: u64) -> u64 {
        let u = (self.next() % 1_000_000) as f64 / 1e6;
        ((u * u) * n as f64) as u64
    }
}

type Res<T> = Result<T, Box<dyn std::error::Error>>;

fn generate(dir: &Path, n: usize) -> Res<()> {
    let (store, _) = Listens::open_with(dir, Options::default())?;
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let mut hearts = Rng(7);
    let start = 1_600_000_000i64;
    let span = 5 * 365 * 86_400i64;
    let mut done = 0;
    while done < n {
        let batch: Vec<Listen> = (done..(done + 20_000).min(n))
            .map(|i| {
                let user = rng.skewed(300);
                let artist = rng.skewed(20_000);
                let track = rng.next() % 12;
                let ts = start + (i as i64 * span) / n as i64;
                let mut l = Listen::new(
                    &format!("user{user}"),
                    ts,
                    &format!("Artist {artist}"),
                    &format!("Song {track} of {artist}"),
                );
                l.album = format!("Album {} of {artist}", track / 4);
                l.duration = Some(150 + (rng.next() % 200) as u32);
                l.client = "bench".into();
                if i % 3 == 0 {
                    l.mbid = format!("00000000-0000-4000-8000-{:012}", artist * 12 + track);
                }
                l
            })
            .collect();
        store.submit(&batch)?;
        // Now and then a love, an edit and a delete, as people do.
        let l = &batch[(hearts.next() % batch.len() as u64) as usize];
        store.love(&l.user, &l.artist, &l.title, l.timestamp, true)?;
        if done % 200_000 == 0 {
            let l = &batch[(hearts.next() % batch.len() as u64) as usize];
            store.delete(&l.user, l.timestamp, &l.artist, &l.title, l.timestamp)?;
        }
        done += batch.len();
    }
    Ok(())
}

fn main() -> Res<()> {
    let args: Vec<String> = std::env::args().collect();
    let dir = Path::new(args.get(2).map_or("history", String::as_str));
    match args.get(1).map(String::as_str) {
        Some("gen") => {
            let n = args
                .get(3)
                .and_then(|n| n.parse().ok())
                .unwrap_or(1_000_000);
            let t = Instant::now();
            generate(dir, n)?;
            let secs = t.elapsed().as_secs_f64();
            println!(
                "gen: {n} listens in {secs:.1} s, {:.0} listens/s",
                n as f64 / secs
            );
        }
        Some(what @ ("open" | "checkpoint")) => {
            let rss0 = status("VmRSS:");
            let (t, c) = (Instant::now(), cpu_secs());
            let (store, report) = Listens::open_with(dir, Options::default())?;
            let secs = t.elapsed().as_secs_f64();
            let cpu = cpu_secs() - c;
            let (rss, hwm) = (status("VmRSS:"), status("VmHWM:"));
            println!(
                "open: {secs:.2} s, {cpu:.2} s CPU, RSS {} MiB ({:.0} B/listen), peak {} MiB; {report:?}",
                rss / 1024,
                (rss.saturating_sub(rss0) * 1024) as f64 / report.listens.max(1) as f64,
                hwm / 1024
            );
            queries(&store);
            if what == "checkpoint" {
                checkpoint(&store)?;
            }
        }
        _ => eprintln!("usage: open_history gen|open|checkpoint DIR [N]"),
    }
    Ok(())
}

/// Times the charts of the largest user over 580 days and over all
/// five years (every kind), and a page of their recent listens.
fn queries(store: &Listens) {
    let ms = |t: Instant| t.elapsed().as_secs_f64() * 1e3;
    for (what, from, to) in [
        ("580 days", Some(1_650_000_000), Some(1_700_000_000)),
        ("five years", Some(1_600_000_001), Some(1_757_000_000)),
        ("all time", None, None),
    ] {
        for kind in [ChartKind::Artists, ChartKind::Albums, ChartKind::Tracks] {
            let t = Instant::now();
            let c = store.chart(
                "user0",
                kind,
                &ChartQuery {
                    from,
                    to,
                    limit: 50,
                    page: 1,
                    ..ChartQuery::default()
                },
            );
            println!(
                "chart of user0's {kind:?} over {what}: {:.1} ms ({} rows)",
                ms(t),
                c.total
            );
        }
    }
    for page in [1, 1000] {
        let t = Instant::now();
        let p = store.recent(
            "user0",
            &RecentQuery {
                limit: 50,
                page,
                ..RecentQuery::default()
            },
        );
        println!(
            "user0's recent listens, page {page} of 50: {:.3} ms ({} in all)",
            ms(t),
            p.total
        );
    }
}

fn checkpoint(store: &Listens) -> Res<()> {
    let t = Instant::now();
    let covers = store.checkpoint()?;
    let size = std::fs::metadata(store_dir_checkpoint())
        .map(|m| m.len())
        .unwrap_or(0);
    println!(
        "checkpoint: {:.2} s, covers {covers} bytes of log, {} MiB",
        t.elapsed().as_secs_f64(),
        size >> 20
    );
    Ok(())
}

fn store_dir_checkpoint() -> std::path::PathBuf {
    let dir = std::env::args().nth(2).unwrap_or_else(|| "history".into());
    Path::new(&dir).join(spindle_listens::CHECKPOINT_FILE)
}
