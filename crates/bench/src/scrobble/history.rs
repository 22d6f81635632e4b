//! The history half of `bench scrobble`: store N listens, time reopening
//! the history (the log replayed into the indexes, what a restart costs),
//! the charts over it, and the listens-per-week SVG of the web UI.

use std::path::Path;
use std::time::Instant;

use spindle_listens::{ChartKind, ChartQuery, Listen, Listens};

use crate::error::{BenchError, Context};
use crate::proc::cpu_secs;

/// The target of every chart query.
const QUERY_TARGET_MS: f64 = 50.0;

/// What the history half measured.
#[derive(Debug, Clone, PartialEq)]
pub struct HistoryReport {
    pub listens: usize,
    /// Storing them in submits of 20,000 (one fsync each).
    pub store_secs: f64,
    /// Opening the history again.
    pub reopen_secs: f64,
    pub reopen_cpu_secs: Option<f64>,
    /// Each chart query: what it was (with what it found) and its time.
    pub queries: Vec<(String, f64)>,
}

impl HistoryReport {
    /// The Markdown table, after a blank line.
    pub fn render(&self) -> String {
        let n = self.listens;
        let mut s = format!("\n| {n} listens (5,000 artists) | time |\n|---|---|\n");
        s.push_str(&format!(
            "| storing them (submits of 20,000, one fsync each) | {:.1} s |\n",
            self.store_secs
        ));
        let cpu = self
            .reopen_cpu_secs
            .map_or(String::new(), |c| format!(", {c:.2} s CPU"));
        s.push_str(&format!(
            "| opening the history (replaying the log into the indexes) | {:.2} s{cpu} ({}) |\n",
            self.reopen_secs,
            match (n >= 1_000_000, self.reopen_secs < 2.0) {
                (false, _) => "target <2 s is for 1,000,000",
                (true, true) => "PASS <2 s",
                (true, false) => "MISS <2 s",
            }
        ));
        for (what, ms) in &self.queries {
            let verdict = if *ms < QUERY_TARGET_MS {
                "PASS <50 ms"
            } else {
                "MISS"
            };
            s.push_str(&format!("| {what} | {ms:.2} ms ({verdict}) |\n"));
        }
        s
    }
}

/// Stores `n` listens in a temporary history (removed afterwards),
/// reopens it and runs the charts over it.
pub fn run_history(n: usize) -> Result<HistoryReport, BenchError> {
    let dir = std::env::temp_dir().join(format!("spindle-bench-chart-{}", std::process::id()));
    let result = run_in(n, &dir);
    let _ = std::fs::remove_dir_all(&dir);
    result
}

fn run_in(n: usize, dir: &Path) -> Result<HistoryReport, BenchError> {
    let (store, _) = Listens::open(dir).at("opening the history")?;
    let now = spindle_server::SystemClock.now_secs();
    let t = Instant::now();
    for chunk in (0..n).collect::<Vec<_>>().chunks(20_000) {
        let ls: Vec<Listen> = chunk
            .iter()
            .map(|&i| {
                let mut l = Listen::new(
                    "bench",
                    now - (i as i64 * 37) % (400 * 86_400) - i as i64 % 7,
                    &format!("Artist {}", (i * 7919) % 5000),
                    &format!("Track {}", i % 50_000),
                );
                l.album = format!("Album {}", i % 10_000);
                l
            })
            .collect();
        store.submit(&ls).at("storing listens")?;
    }
    let store_secs = t.elapsed().as_secs_f64();
    drop(store);
    // Opening replays the whole log into the indexes: what a restart costs.
    let (t, cpu) = (Instant::now(), cpu_secs(std::process::id()));
    let (store, report) = Listens::open(dir).at("reopening the history")?;
    let reopen_secs = t.elapsed().as_secs_f64();
    let reopen_cpu_secs = cpu_secs(std::process::id()).zip(cpu).map(|(b, a)| b - a);
    if report.listens != n {
        return Err(BenchError::Check(format!(
            "reopening found {} listens, not {n}",
            report.listens
        )));
    }
    let mut queries = Vec::new();
    let ms = |t: Instant| t.elapsed().as_secs_f64() * 1e3;
    for (label, since) in [
        ("overall", None),
        ("7day", Some(now - 7 * 86_400)),
        ("12month", Some(now - 365 * 86_400)),
    ] {
        let t = Instant::now();
        let c = store.top("bench", ChartKind::Artists, since, 50, 1);
        let el = ms(t);
        queries.push((format!("top artists, {label} ({} artists)", c.total), el));
    }
    // What the web UI's charts page asks for: a from/to range (whole days
    // from the buckets, the edges from the time index) and the listens of
    // 12 months drawn as SVG.
    let day = 86_400;
    let t = Instant::now();
    let c = store.chart(
        "bench",
        ChartKind::Albums,
        &ChartQuery {
            from: Some(now - 200 * day + 4_321),
            to: Some(now - 20 * day - 1_234),
            artist: None,
            limit: 10,
            page: 1,
        },
    );
    let el = ms(t);
    queries.push((
        format!("top albums, a 180-day from/to range ({} albums)", c.total),
        el,
    ));
    let t = Instant::now();
    let from = now - 365 * day;
    let (_, cols) =
        spindle_server::chart_svg::columns(&store.per_day("bench", Some(from)), from, now);
    let svg = spindle_server::chart_svg::time_svg("bench", "Listens per week", "listen", &cols);
    let el = ms(t);
    queries.push((
        format!(
            "listens per week over 12 months, drawn as SVG ({} KiB)",
            svg.len() / 1024
        ),
        el,
    ));
    Ok(HistoryReport {
        listens: n,
        store_secs,
        reopen_secs,
        reopen_cpu_secs,
        queries,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_small_history_is_stored_reopened_and_charted() {
        let r = run_history(500).unwrap();
        assert_eq!(r.listens, 500);
        assert_eq!(r.queries.len(), 5);
        let text = r.render();
        assert!(text.starts_with("\n| 500 listens (5,000 artists) | time |\n|---|---|\n"));
        assert!(text.contains("| opening the history (replaying the log into the indexes) | "));
        assert!(text.contains("(target <2 s is for 1,000,000) |\n"));
        assert_eq!(text.lines().count(), 10);
    }
}
