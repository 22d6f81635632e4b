//! `bench scrobble`: concurrent keep-alive clients on loopback send
//! scrobbles in batches of 50 via `track.scrobble` to a fresh `spindle
//! serve`, then the same load to a fresh Maloja (see [`maloja`]); the
//! report gives both rates, p99 latencies, server CPU per scrobble and the
//! ratio. Then [`history`] times reopening a history of N listens and the
//! charts over it.
//!
//! * [`form`]: the requests, built before the clock starts.
//! * [`load`]: the clients and what they measured.

pub mod form;
pub mod history;
pub mod load;
pub mod maloja;

use std::path::{Path, PathBuf};
use std::process::Stdio;

use crate::error::BenchError;
use crate::spindle;
use form::{form_body, nth, scrobble_params, spread, BATCH};
use load::{Outcome, Reply};

pub use history::{run_history, HistoryReport};

/// What to run: the options of `spindle bench scrobble`.
#[derive(Debug, Clone, clap::Args)]
pub struct ScrobbleOptions {
    /// The `spindle` binary to start as the server (the caller's own path).
    #[arg(skip)]
    pub spindle: PathBuf,
    /// Scrobbles to send Spindle in all.
    #[arg(long, default_value_t = 100_000)]
    pub scrobbles: usize,
    /// Concurrent clients.
    #[arg(long, default_value_t = 8)]
    pub clients: usize,
    /// Listens in the history the chart query runs over (0 skips it).
    #[arg(long, default_value_t = 1_000_000)]
    pub chart_listens: usize,
    /// Scrobbles to send Maloja through each of its APIs (it is far
    /// slower; rates are per second, so they compare across counts).
    #[arg(long, default_value_t = 2_000)]
    pub maloja_scrobbles: usize,
    /// Skip Maloja (e.g. in CI).
    #[arg(long)]
    pub no_maloja: bool,
    /// The maloja executable (default: .venv/bin/maloja here or above,
    /// else maloja on PATH).
    #[arg(long, env = "SPINDLE_MALOJA")]
    pub maloja: Option<PathBuf>,
}

/// One contestant's row of the results.
#[derive(Debug, Clone)]
pub struct Row {
    pub contestant: String,
    pub outcome: Outcome,
    pub per_request: usize,
}

/// The rates table: Spindle's row first, then Maloja's.
#[derive(Debug, Clone)]
pub struct RatesReport {
    pub rows: Vec<Row>,
    /// Scrobbles sent to Spindle.
    pub sent: usize,
}

impl RatesReport {
    /// Spindle's scrobbles per second.
    pub fn spindle_rate(&self) -> f64 {
        self.rows.first().map_or(0.0, |r| r.outcome.rate())
    }

    /// The table, the failures and the targets, after a blank line.
    pub fn render(&self) -> String {
        let mut s = String::from("\n| contestant | scrobbles accepted | scrobbles/s | p99 per request | server CPU per scrobble |\n|---|---|---|---|---|\n");
        for r in &self.rows {
            let o = &r.outcome;
            let cpu = o.server_cpu.map_or("?".to_owned(), |c| {
                format!("{:.1} µs", c / o.accepted.max(1) as f64 * 1e6)
            });
            s.push_str(&format!(
                "| {} | {} | {:.0} | {:.1} ms ({} per request) | {cpu} |\n",
                r.contestant,
                o.accepted,
                o.rate(),
                o.p99.as_secs_f64() * 1e3,
                r.per_request,
            ));
        }
        for r in &self.rows {
            if let Some(f) = &r.outcome.first_failure {
                s.push_str(&format!(
                    "\n{}: {} requests accepted nothing; the first answer: {f}\n",
                    r.contestant, r.outcome.failed_requests
                ));
            }
        }
        let rate = self.spindle_rate();
        s.push_str(&format!(
            "\ntarget >20,000 scrobbles/s: {}\n",
            if rate > 20_000.0 { "PASS" } else { "MISS" }
        ));
        let best = self
            .rows
            .iter()
            .skip(1)
            .map(|r| r.outcome.rate())
            .fold(0.0f64, f64::max);
        if best > 0.0 {
            s.push_str(&format!(
                "Spindle / Maloja's best rate: {:.0}× (target ≥20×: {})\n",
                rate / best,
                if rate / best >= 20.0 { "PASS" } else { "MISS" }
            ));
        }
        s
    }

    /// Fails when Spindle did not accept every scrobble sent.
    pub fn check(&self) -> Result<(), BenchError> {
        let accepted = self.rows.first().map_or(0, |r| r.outcome.accepted);
        let lost = self.sent - accepted.min(self.sent);
        if lost > 0 {
            return Err(BenchError::Check(format!(
                "Spindle did not accept {lost} of the scrobbles sent"
            )));
        }
        Ok(())
    }
}

/// The `maloja` executable: `given`, else `.venv/bin/maloja` in the
/// current directory or one above it, else `maloja` on PATH.
pub fn find_maloja(given: Option<&Path>) -> Result<PathBuf, BenchError> {
    maloja::find(given).ok_or_else(|| {
        BenchError::Missing(
            "malojaserver not found: install it (pip install malojaserver, e.g. into .venv), pass --maloja PATH, or skip it with --no-maloja".into(),
        )
    })
}

/// Runs the load against Spindle, then against Maloja unless
/// `no_maloja` (found first, by [`find_maloja`]). `log` gets a line as
/// each contestant starts.
pub fn run_rates(
    opts: &ScrobbleOptions,
    log: &mut dyn FnMut(&str),
) -> Result<RatesReport, BenchError> {
    let maloja = if opts.no_maloja {
        None
    } else {
        Some(find_maloja(opts.maloja.as_deref())?)
    };
    let mut rows = vec![spindle_side(opts, log)?];
    if let Some(exe) = &maloja {
        rows.extend(maloja_side(opts, exe, log)?);
    }
    Ok(RatesReport {
        rows,
        sent: opts.scrobbles,
    })
}

/// A fresh `spindle serve`, an API key and a session, then the load.
fn spindle_side(opts: &ScrobbleOptions, log: &mut dyn FnMut(&str)) -> Result<Row, BenchError> {
    let dir = std::env::temp_dir().join(format!("spindle-bench-scrobble-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let result = spindle_load(opts, &dir, log);
    let _ = std::fs::remove_dir_all(&dir);
    result
}

fn spindle_load(
    opts: &ScrobbleOptions,
    dir: &Path,
    log: &mut dyn FnMut(&str),
) -> Result<Row, BenchError> {
    let exe = &opts.spindle;
    let server = spindle::Serve::start(exe, dir, &[], &[], Stdio::inherit())?;
    let host = server.host.clone();
    spindle::cli(exe, dir, &["user", "add", "bench"], "benchpw\n")?;
    let keys = spindle::cli(exe, dir, &["apikey", "add"], "")?;
    let field = |name: &str| {
        keys.lines()
            .find_map(|l| l.strip_prefix(name).map(|v| v.trim().to_owned()))
            .ok_or_else(|| BenchError::Peer("no api key printed".into()))
    };
    let (key, secret) = (field("api_key ")?, field("secret ")?);
    let lastfm = |body: &str| {
        load::request(
            &host,
            "/2.0/",
            "",
            "application/x-www-form-urlencoded",
            body,
        )
    };
    let params = vec![
        ("method".to_owned(), "auth.getMobileSession".to_owned()),
        ("api_key".into(), key.clone()),
        ("username".into(), "bench".into()),
        ("password".into(), "benchpw".into()),
    ];
    let resp = load::once(&host, &lastfm(&form_body(&params, Some(&secret))))?;
    let sk = resp
        .body
        .split("<key>")
        .nth(1)
        .and_then(|r| r.split('<').next())
        .ok_or_else(|| BenchError::Peer("no session key".into()))?
        .to_owned();
    let base = spindle_server::SystemClock.now_secs() - 3_000_000;
    let reqs = spread(opts.scrobbles, BATCH, opts.clients, |from, to| {
        let mut p = vec![
            ("method".to_owned(), "track.scrobble".to_owned()),
            ("api_key".into(), key.clone()),
            ("sk".into(), sk.clone()),
        ];
        p.extend(scrobble_params(from, to, base, true));
        lastfm(&form_body(&p, Some(&secret)))
    });
    log(&format!(
        "== Spindle: {} scrobbles from {} clients",
        opts.scrobbles, opts.clients
    ));
    let outcome = load::drive(&host, reqs, server.pid(), &|r: &Reply| {
        r.body
            .split("accepted=\"")
            .nth(1)
            .and_then(|x| x.split('"').next())
            .and_then(|x| x.parse::<usize>().ok())
            .unwrap_or(0)
    })?;
    Ok(Row {
        contestant: format!(
            "Spindle, Last.fm API, {} clients, fsync before each acknowledgement (group commit)",
            opts.clients
        ),
        outcome,
        per_request: BATCH,
    })
}

/// Maloja through its Last.fm-compatible API (batches if it takes them,
/// else one scrobble per call) and through its ListenBrainz API in
/// batches of 50 (its fastest way in), each on a fresh range of times.
fn maloja_side(
    opts: &ScrobbleOptions,
    exe: &Path,
    log: &mut dyn FnMut(&str),
) -> Result<Vec<Row>, BenchError> {
    log(&format!("== Maloja: starting {}", exe.display()));
    let m = maloja::Maloja::start(exe)?;
    let sk = m.session()?;
    let now = spindle_server::SystemClock.now_secs();
    let n = opts.maloja_scrobbles;
    // Does its track.scrobble take a batch? (Maloja 3.2 answers error 8.)
    let probe_base = now - 12_000_000;
    let mut p = vec![
        ("method".to_owned(), "track.scrobble".to_owned()),
        ("sk".into(), sk.clone()),
    ];
    p.extend(scrobble_params(0, 2, probe_base, true));
    let probe = load::once(&m.host, &m.lastfm_request(&form_body(&p, None)))?;
    let batches = probe.status == 200;
    let per = if batches { BATCH } else { 1 };
    let lastfm_base = now - 9_000_000;
    let reqs = spread(n, per, opts.clients, |from, to| {
        let mut p = vec![
            ("method".to_owned(), "track.scrobble".to_owned()),
            ("sk".into(), sk.clone()),
        ];
        p.extend(scrobble_params(from, to, lastfm_base, batches));
        m.lastfm_request(&form_body(&p, None))
    });
    log(&format!(
        "== Maloja, Last.fm API: {n} scrobbles, {per} per call{}",
        if batches {
            ""
        } else {
            " (a batch gets error 8 from this Maloja)"
        }
    ));
    let ok = |per: usize| {
        move |r: &Reply| {
            if r.status == 200 && !r.body.contains("\"error\"") {
                per
            } else {
                0
            }
        }
    };
    let lastfm = load::drive(&m.host, reqs, m.pid(), &ok(per))?;
    let lb_base = now - 6_000_000;
    let reqs = spread(n, BATCH, opts.clients, |from, to| {
        let listens: Vec<String> = (from..to)
            .map(|k| {
                let (artist, track, album, ts) = nth(k, lb_base);
                format!(
                    r#"{{"listened_at":{ts},"track_metadata":{{"artist_name":"{artist}","track_name":"{track}","release_name":"{album}"}}}}"#
                )
            })
            .collect();
        m.listenbrainz_request(&format!(
            r#"{{"listen_type":"import","payload":[{}]}}"#,
            listens.join(",")
        ))
    });
    log(&format!(
        "== Maloja, ListenBrainz API: {n} scrobbles, {BATCH} per call"
    ));
    let lb = load::drive(&m.host, reqs, m.pid(), &ok(BATCH))?;
    let claimed = lastfm.accepted + lb.accepted;
    if let Some(stored) = m.stored(exe) {
        let extra = usize::from(batches) * 2;
        if stored != claimed + extra {
            log(&format!(
                "warning: maloja acknowledged {claimed} scrobbles but stored {stored}"
            ));
        }
    }
    let single = if batches {
        String::new()
    } else {
        ", one scrobble per call (batches get error 8)".to_owned()
    };
    Ok(vec![
        Row {
            contestant: format!(
                "Maloja, Last.fm API{single}, {} clients, SQLite commit per scrobble",
                opts.clients
            ),
            outcome: lastfm,
            per_request: per,
        },
        Row {
            contestant: format!(
                "Maloja, ListenBrainz API (import), {} clients, SQLite commit per scrobble",
                opts.clients
            ),
            outcome: lb,
            per_request: BATCH,
        },
    ])
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn row(name: &str, accepted: usize, secs: f64) -> Row {
        Row {
            contestant: name.into(),
            outcome: Outcome {
                accepted,
                failed_requests: 0,
                first_failure: None,
                secs,
                p99: Duration::from_micros(2500),
                server_cpu: Some(0.5),
            },
            per_request: 50,
        }
    }

    #[test]
    fn the_table_shows_rates_targets_and_the_ratio() {
        let r = RatesReport {
            rows: vec![row("Spindle", 50_000, 2.0), row("Maloja", 1000, 1.0)],
            sent: 50_000,
        };
        let text = r.render();
        assert!(text.starts_with("\n| contestant | scrobbles accepted |"));
        assert!(
            text.contains("\n| Spindle | 50000 | 25000 | 2.5 ms (50 per request) | 10.0 µs |\n")
        );
        assert!(text.contains("\ntarget >20,000 scrobbles/s: PASS\n"));
        assert!(text.ends_with("Spindle / Maloja's best rate: 25× (target ≥20×: PASS)\n"));
        assert!(r.check().is_ok());
        let lost = RatesReport { sent: 50_001, ..r };
        assert!(lost
            .check()
            .unwrap_err()
            .to_string()
            .contains("did not accept 1 of"));
    }
}
