//! What `bench stream` reports, and its Markdown: the header, the wrk
//! throughput table with the Spindle / nginx ratios, and the listeners
//! table. Plain data, so the format is tested without a server.

use super::{listeners, wrk};

/// A part of the report, in the order a run produces them.
#[derive(Debug, Clone)]
pub enum StreamSection {
    Header(Header),
    Throughput(ThroughputReport),
    Listeners(ListenersReport),
}

impl StreamSection {
    /// The Markdown of the part, ending with a blank line.
    pub fn render(&self) -> String {
        match self {
            StreamSection::Header(h) => h.render(),
            StreamSection::Throughput(t) => t.render(),
            StreamSection::Listeners(l) => l.render(),
        }
    }
}

/// The corpus and the run's settings.
#[derive(Debug, Clone)]
pub struct Header {
    pub files: usize,
    pub min_mb: u64,
    pub max_mb: u64,
    pub total_bytes: u64,
    /// Empty: not pinned.
    pub server_cpus: Vec<usize>,
    pub client_cpus: Vec<usize>,
    pub duration_secs: u64,
    pub rounds: usize,
}

fn cpu_list(c: &[usize]) -> String {
    if c.is_empty() {
        "all".into()
    } else {
        c.iter().map(usize::to_string).collect::<Vec<_>>().join(",")
    }
}

impl Header {
    pub fn render(&self) -> String {
        format!(
            "# spindle bench stream\n\n{} files of {}-{} MB ({:.0} MB); servers on CPUs {}, load generator on CPUs {}; {} s per run, {} round(s), medians\n\n",
            self.files,
            self.min_mb,
            self.max_mb,
            self.total_bytes as f64 / 1e6,
            cpu_list(&self.server_cpus),
            cpu_list(&self.client_cpus),
            self.duration_secs,
            self.rounds
        )
    }
}

/// A server under test, as the tables name it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerLabel {
    pub name: String,
    /// Spindle's IO engine; `None` for nginx.
    pub engine: Option<String>,
}

/// Medians of one (workload, connections, server) cell over the rounds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Cell {
    pub rps: f64,
    pub mbps: f64,
    pub p99_ms: f64,
    pub errors: u64,
    pub cpu_us: f64,
}

fn median(mut v: Vec<f64>) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

impl Cell {
    /// The medians of the rounds' runs (errors summed).
    pub fn of(runs: &[wrk::Outcome]) -> Cell {
        Cell {
            rps: median(runs.iter().map(wrk::Outcome::rps).collect()),
            mbps: median(runs.iter().map(wrk::Outcome::mbps).collect()),
            p99_ms: median(runs.iter().map(|o| o.p99_us as f64 / 1000.0).collect()),
            errors: runs.iter().map(|o| o.errors).sum(),
            cpu_us: median(runs.iter().map(wrk::Outcome::cpu_us_per_req).collect()),
        }
    }
}

/// One row group: a workload at a connection count, a cell per server.
#[derive(Debug, Clone)]
pub struct ThroughputRow {
    /// `whole` or `range`.
    pub workload: String,
    pub connections: usize,
    pub cells: Vec<Cell>,
}

/// The wrk runs' medians.
#[derive(Debug, Clone)]
pub struct ThroughputReport {
    pub servers: Vec<ServerLabel>,
    pub rows: Vec<ThroughputRow>,
}

/// How the tables name a workload.
pub fn workload_name(w: &str) -> &'static str {
    if w == "whole" {
        "whole files"
    } else {
        "64 KiB ranges"
    }
}

fn fmt_ratio(x: f64) -> String {
    if x.is_finite() {
        format!("{x:.2}×")
    } else {
        "–".into()
    }
}

impl ThroughputReport {
    pub fn render(&self) -> String {
        let mut s = String::from("## Throughput (wrk)\n\n");
        s.push_str("| workload | connections | server | requests/s | MB/s | p99 latency | errors | server CPU per request |\n");
        s.push_str("|---|---|---|---|---|---|---|---|\n");
        for r in &self.rows {
            for (label, c) in self.servers.iter().zip(&r.cells) {
                s.push_str(&format!(
                    "| {} | {} | {} | {:.0} | {:.0} | {:.1} ms | {} | {:.1} µs |\n",
                    workload_name(&r.workload),
                    r.connections,
                    label.name,
                    c.rps,
                    c.mbps,
                    c.p99_ms,
                    c.errors,
                    c.cpu_us
                ));
            }
        }
        s.push('\n');
        let Some(ni) = self.servers.iter().position(|l| l.engine.is_none()) else {
            return s;
        };
        s.push_str("## Spindle / nginx\n\n");
        s.push_str("| workload | connections | engine | requests/s | MB/s | p99 (nginx / Spindle) | CPU per request (nginx / Spindle) | target ≥ 0.9× |\n");
        s.push_str("|---|---|---|---|---|---|---|---|\n");
        for r in &self.rows {
            let n = r.cells[ni];
            for (label, c) in self.servers.iter().zip(&r.cells) {
                let Some(engine) = &label.engine else {
                    continue;
                };
                let ratio = c.rps / n.rps;
                s.push_str(&format!(
                    "| {} | {} | {engine} | {} | {} | {} | {} | {} |\n",
                    workload_name(&r.workload),
                    r.connections,
                    fmt_ratio(ratio),
                    fmt_ratio(c.mbps / n.mbps),
                    fmt_ratio(n.p99_ms / c.p99_ms),
                    fmt_ratio(n.cpu_us / c.cpu_us),
                    if ratio >= 0.9 { "PASS" } else { "MISS" }
                ));
            }
        }
        s.push('\n');
        s
    }
}

/// One server's listeners test.
#[derive(Debug, Clone)]
pub struct ListenersRow {
    pub server: ServerLabel,
    pub outcome: listeners::Outcome,
    /// CPU busy over the run, percent of the CPUs each side runs on.
    pub server_pct: f64,
    pub client_pct: f64,
}

/// The listeners test against every server.
#[derive(Debug, Clone)]
pub struct ListenersReport {
    pub listeners: usize,
    pub seconds: u64,
    pub rows: Vec<ListenersRow>,
}

impl ListenersReport {
    pub fn render(&self) -> String {
        let mut s = format!(
            "## Listeners: {} × 320 kbit/s for {} s\n\n",
            self.listeners, self.seconds
        );
        s.push_str("| server | listening | stalls (>1 s without bytes) | failures | worst wait | MB/s delivered | RSS idle → peak | memory per listener | CPU busy: server, client | targets |\n");
        s.push_str("|---|---|---|---|---|---|---|---|---|---|\n");
        for r in &self.rows {
            let o = &r.outcome;
            let target = if r.server.engine.is_some() {
                let ok = o.stalls == 0 && o.failures == 0 && o.kib_per_listener() < 64.0;
                if ok {
                    "PASS"
                } else {
                    "MISS"
                }
            } else {
                "–"
            };
            s.push_str(&format!(
                "| {} | {} | {} | {} | {} ms | {:.1} | {:.1} → {:.1} MiB | {:.1} KiB | {:.0} %, {:.0} % | {target} |\n",
                r.server.name,
                o.connected,
                o.stalls,
                o.failures,
                o.worst_wait_ms,
                o.bytes as f64 / 1e6 / o.secs.max(1e-9),
                o.rss_idle_kib as f64 / 1024.0,
                o.rss_peak_kib as f64 / 1024.0,
                o.kib_per_listener(),
                r.server_pct,
                r.client_pct,
            ));
        }
        s.push('\n');
        s.push_str("Targets for Spindle: zero stalls, no failures, under 64 KiB of server memory per listener.\n");
        if self.rows.iter().any(|r| r.client_pct > 90.0) {
            s.push_str("The client was busy over 90 % of its CPUs: some stalls may be its own lateness, not the server's.\n");
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spindle() -> ServerLabel {
        ServerLabel {
            name: "Spindle (uring)".into(),
            engine: Some("uring".into()),
        }
    }

    fn nginx() -> ServerLabel {
        ServerLabel {
            name: "nginx".into(),
            engine: None,
        }
    }

    #[test]
    fn throughput_rows_and_ratios_are_the_lines_ci_greps() {
        let cell = |rps: f64| Cell {
            rps,
            mbps: rps / 10.0,
            p99_ms: 2.0,
            errors: 0,
            cpu_us: 50.0,
        };
        let t = ThroughputReport {
            servers: vec![spindle(), nginx()],
            rows: vec![ThroughputRow {
                workload: "whole".into(),
                connections: 32,
                cells: vec![cell(900.0), cell(1000.0)],
            }],
        };
        let text = t.render();
        assert!(text.starts_with("## Throughput (wrk)\n\n| workload |"));
        assert!(text.contains(
            "\n| whole files | 32 | Spindle (uring) | 900 | 90 | 2.0 ms | 0 | 50.0 µs |\n"
        ));
        assert!(text.contains("\n| whole files | 32 | nginx | 1000 | "));
        assert!(text
            .contains("\n| whole files | 32 | uring | 0.90× | 0.90× | 1.00× | 1.00× | PASS |\n\n"));
        let alone = ThroughputReport {
            servers: vec![spindle()],
            rows: vec![],
        };
        assert!(!alone.render().contains("Spindle / nginx"));
    }

    #[test]
    fn the_listeners_table_judges_spindle_only() {
        let o = listeners::Outcome {
            listeners: 200,
            connected: 200,
            bytes: 40_000_000,
            secs: 5.0,
            rss_idle_kib: 10_240,
            rss_peak_kib: 20_480,
            ..listeners::Outcome::default()
        };
        let row = |server, client_pct| ListenersRow {
            server,
            outcome: o.clone(),
            server_pct: 12.0,
            client_pct,
        };
        let l = ListenersReport {
            listeners: 200,
            seconds: 5,
            rows: vec![row(spindle(), 40.0), row(nginx(), 95.0)],
        };
        let text = l.render();
        assert!(text.contains(
            "\n| Spindle (uring) | 200 | 0 | 0 | 0 ms | 8.0 | 10.0 → 20.0 MiB | 51.2 KiB | 12 %, 40 % | PASS |\n"
        ));
        assert!(text.contains("| 12 %, 95 % | – |\n"));
        assert!(text.ends_with("not the server's.\n"));
    }

    #[test]
    fn the_header_names_unpinned_cpus_all() {
        let h = Header {
            files: 8,
            min_mb: 1,
            max_mb: 3,
            total_bytes: 16_000_000,
            server_cpus: vec![],
            client_cpus: vec![1],
            duration_secs: 2,
            rounds: 1,
        };
        assert_eq!(
            h.render(),
            "# spindle bench stream\n\n8 files of 1-3 MB (16 MB); servers on CPUs all, load generator on CPUs 1; 2 s per run, 1 round(s), medians\n\n"
        );
    }
}
