//! `spindle bench scrobble`: concurrent keep-alive clients on loopback
//! send scrobbles in batches of 50 via `track.scrobble` to a fresh
//! `spindle serve`, then the same load to a fresh Maloja (see `maloja`),
//! and print both rates, p99 latencies, server CPU per scrobble and the
//! ratio. Also times reopening a history of `--chart-listens` listens and
//! top artists over it.

mod load;
mod maloja;

use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Instant;

use anyhow::{bail, Context};

use load::{Outcome, Reply};

#[derive(Debug, clap::Args)]
pub struct ScrobbleArgs {
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

/// Scrobbles per request: Last.fm's `track.scrobble` maximum.
const BATCH: usize = 50;

fn md5_hex(s: &str) -> String {
    spindle_server::accounts::md5_hex(s.as_bytes())
}

fn enc(s: &str) -> String {
    let mut o = String::new();
    for b in s.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' => o.push(b as char),
            _ => o.push_str(&format!("%{b:02X}")),
        }
    }
    o
}

/// A form body, signed the Last.fm way when `secret` is given.
fn form_body(params: &[(String, String)], secret: Option<&str>) -> String {
    let mut body: Vec<String> = params
        .iter()
        .map(|(k, v)| format!("{}={}", enc(k), enc(v)))
        .collect();
    if let Some(secret) = secret {
        let mut sorted: Vec<&(String, String)> = params.iter().collect();
        sorted.sort_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
        let mut s = String::new();
        for (k, v) in &sorted {
            s.push_str(k);
            s.push_str(v);
        }
        s.push_str(secret);
        body.push(format!("api_sig={}", md5_hex(&s)));
    }
    body.join("&")
}

/// The n-th generated scrobble: artist, track, album, timestamp (distinct
/// timestamps: Maloja keys scrobbles by time).
fn nth(n: usize, base: i64) -> (String, String, String, i64) {
    (
        format!("Artist {}", n % 997),
        format!("Track {}", n % 5003),
        format!("Album {}", n % 1999),
        base + n as i64 * 20,
    )
}

/// `track.scrobble` parameters for scrobbles `from..to`: indexed names,
/// or plain ones for a single scrobble when `indexed` is false.
fn scrobble_params(from: usize, to: usize, base: i64, indexed: bool) -> Vec<(String, String)> {
    let mut p = Vec::new();
    for (i, n) in (from..to).enumerate() {
        let (artist, track, album, ts) = nth(n, base);
        let name = |f: &str| {
            if indexed {
                format!("{f}[{i}]")
            } else {
                f.to_owned()
            }
        };
        p.push((name("artist"), artist));
        p.push((name("track"), track));
        p.push((name("album"), album));
        p.push((name("timestamp"), ts.to_string()));
    }
    p
}

/// Splits requests `0..count` (of `per` scrobbles each) over the clients.
fn spread(
    count: usize,
    per: usize,
    clients: usize,
    mut make: impl FnMut(usize, usize) -> Vec<u8>,
) -> Vec<Vec<Vec<u8>>> {
    let mut out = vec![Vec::new(); clients.max(1)];
    for (r, from) in (0..count).step_by(per).enumerate() {
        let n = out.len();
        out[r % n].push(make(from, (from + per).min(count)));
    }
    out
}

/// A row of the results.
struct Row {
    contestant: String,
    outcome: Outcome,
    per_request: usize,
}

fn print_rows(rows: &[Row]) {
    println!("| contestant | scrobbles accepted | scrobbles/s | p99 per request | server CPU per scrobble |");
    println!("|---|---|---|---|---|");
    for r in rows {
        let o = &r.outcome;
        let cpu = o.server_cpu.map_or("?".to_owned(), |c| {
            format!("{:.1} µs", c / o.accepted.max(1) as f64 * 1e6)
        });
        println!(
            "| {} | {} | {:.0} | {:.1} ms ({} per request) | {cpu} |",
            r.contestant,
            o.accepted,
            o.rate(),
            o.p99.as_secs_f64() * 1e3,
            r.per_request,
        );
    }
    for r in rows {
        if let Some(f) = &r.outcome.first_failure {
            println!(
                "\n{}: {} requests accepted nothing; the first answer: {f}",
                r.contestant, r.outcome.failed_requests
            );
        }
    }
}

pub fn run(args: &ScrobbleArgs) -> anyhow::Result<()> {
    let maloja_exe = if args.no_maloja {
        None
    } else {
        Some(maloja::find(args.maloja.as_deref()).context(
            "malojaserver not found: install it (pip install malojaserver, e.g. into .venv), pass --maloja PATH, or skip it with --no-maloja",
        )?)
    };
    let spindle = spindle_side(args)?;
    let mut rows = vec![spindle];
    if let Some(exe) = &maloja_exe {
        rows.extend(maloja_side(args, exe)?);
    }
    println!();
    print_rows(&rows);
    let rate = rows[0].outcome.rate();
    println!(
        "\ntarget >20,000 scrobbles/s: {}",
        if rate > 20_000.0 { "PASS" } else { "MISS" }
    );
    let best = rows[1..]
        .iter()
        .map(|r| r.outcome.rate())
        .fold(0.0f64, f64::max);
    if best > 0.0 {
        println!(
            "Spindle / Maloja's best rate: {:.0}× (target ≥20×: {})",
            rate / best,
            if rate / best >= 20.0 { "PASS" } else { "MISS" }
        );
    }
    let lost = args.scrobbles - rows[0].outcome.accepted.min(args.scrobbles);
    anyhow::ensure!(
        lost == 0,
        "Spindle did not accept {lost} of the scrobbles sent"
    );
    if args.chart_listens > 0 {
        chart(args.chart_listens)?;
    }
    Ok(())
}

/// A fresh `spindle serve`, an API key and a session, then the load.
fn spindle_side(args: &ScrobbleArgs) -> anyhow::Result<Row> {
    let exe = std::env::current_exe().context("finding the spindle binary")?;
    let dir = std::env::temp_dir().join(format!("spindle-bench-scrobble-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let d = dir.to_string_lossy().into_owned();
    let mut child = Command::new(&exe)
        .args(["--data-dir", &d, "serve", "--listen", "127.0.0.1:0"])
        .stdout(Stdio::piped())
        .spawn()
        .context("starting spindle serve")?;
    let result = (|| -> anyhow::Result<Row> {
        let mut out = BufReader::new(child.stdout.take().context("no stdout")?);
        let mut first = String::new();
        while !first.contains("serving http://") {
            first.clear();
            if out.read_line(&mut first)? == 0 {
                bail!("spindle serve exited without printing its URL");
            }
        }
        // Keep draining what serve prints, so it never blocks on a full pipe.
        std::thread::spawn(move || std::io::copy(&mut out, &mut std::io::sink()));
        let host = first
            .split("http://")
            .nth(1)
            .and_then(|r| r.split('/').next())
            .context("no URL printed by spindle serve")?
            .to_owned();
        let cli = |a: &[&str], stdin: &str| -> anyhow::Result<String> {
            let mut c = Command::new(&exe)
                .args(["--data-dir", &d])
                .args(a)
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .spawn()?;
            c.stdin
                .take()
                .context("stdin")?
                .write_all(stdin.as_bytes())?;
            let out = c.wait_with_output()?;
            Ok(String::from_utf8_lossy(&out.stdout).into_owned())
        };
        cli(&["user", "add", "bench"], "benchpw\n")?;
        let keys = cli(&["apikey", "add"], "")?;
        let field = |name: &str| {
            keys.lines()
                .find_map(|l| l.strip_prefix(name).map(|v| v.trim().to_owned()))
                .context("no api key printed")
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
            .context("no session key")?
            .to_owned();
        let base = spindle_server::SystemClock.now_secs() - 3_000_000;
        let reqs = spread(args.scrobbles, BATCH, args.clients, |from, to| {
            let mut p = vec![
                ("method".to_owned(), "track.scrobble".to_owned()),
                ("api_key".into(), key.clone()),
                ("sk".into(), sk.clone()),
            ];
            p.extend(scrobble_params(from, to, base, true));
            lastfm(&form_body(&p, Some(&secret)))
        });
        eprintln!(
            "== Spindle: {} scrobbles from {} clients",
            args.scrobbles, args.clients
        );
        let outcome = load::drive(&host, reqs, child.id(), &|r: &Reply| {
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
                args.clients
            ),
            outcome,
            per_request: BATCH,
        })
    })();
    let _ = child.kill();
    let _ = child.wait();
    let _ = std::fs::remove_dir_all(&dir);
    result
}

/// Maloja through its Last.fm-compatible API (batches if it takes them,
/// else one scrobble per call) and through its ListenBrainz API in
/// batches of 50 (its fastest way in), each on a fresh range of times.
fn maloja_side(args: &ScrobbleArgs, exe: &std::path::Path) -> anyhow::Result<Vec<Row>> {
    eprintln!("== Maloja: starting {}", exe.display());
    let m = maloja::Maloja::start(exe)?;
    let sk = m.session()?;
    let now = spindle_server::SystemClock.now_secs();
    let n = args.maloja_scrobbles;
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
    let reqs = spread(n, per, args.clients, |from, to| {
        let mut p = vec![
            ("method".to_owned(), "track.scrobble".to_owned()),
            ("sk".into(), sk.clone()),
        ];
        p.extend(scrobble_params(from, to, lastfm_base, batches));
        m.lastfm_request(&form_body(&p, None))
    });
    eprintln!(
        "== Maloja, Last.fm API: {n} scrobbles, {per} per call{}",
        if batches {
            ""
        } else {
            " (a batch gets error 8 from this Maloja)"
        }
    );
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
    let reqs = spread(n, BATCH, args.clients, |from, to| {
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
    eprintln!("== Maloja, ListenBrainz API: {n} scrobbles, {BATCH} per call");
    let lb = load::drive(&m.host, reqs, m.pid(), &ok(BATCH))?;
    let claimed = lastfm.accepted + lb.accepted;
    if let Some(stored) = m.stored(exe) {
        let extra = usize::from(batches) * 2;
        if stored != claimed + extra {
            eprintln!("warning: maloja acknowledged {claimed} scrobbles but stored {stored}");
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
                args.clients
            ),
            outcome: lastfm,
            per_request: per,
        },
        Row {
            contestant: format!(
                "Maloja, ListenBrainz API (import), {} clients, SQLite commit per scrobble",
                args.clients
            ),
            outcome: lb,
            per_request: BATCH,
        },
    ])
}

fn chart(n: usize) -> anyhow::Result<()> {
    use spindle_listens::{ChartKind, Listen, Listens};
    let dir = std::env::temp_dir().join(format!("spindle-bench-chart-{}", std::process::id()));
    let (store, _) = Listens::open(&dir)?;
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
        store.submit(&ls)?;
    }
    let load = t.elapsed();
    drop(store);
    // Opening replays the whole log into the indexes: what a restart costs.
    let (t, cpu) = (Instant::now(), load::cpu_secs(std::process::id()));
    let (store, report) = Listens::open(&dir)?;
    let reopen = t.elapsed();
    let cpu = load::cpu_secs(std::process::id())
        .zip(cpu)
        .map_or(String::new(), |(b, a)| format!(", {:.2} s CPU", b - a));
    anyhow::ensure!(
        report.listens == n,
        "reopening found {} listens, not {n}",
        report.listens
    );
    println!("\n| {n} listens (5,000 artists) | time |\n|---|---|");
    println!(
        "| storing them (submits of 20,000, one fsync each) | {:.1} s |",
        load.as_secs_f64()
    );
    println!(
        "| opening the history (replaying the log into the indexes) | {:.2} s{cpu} ({}) |",
        reopen.as_secs_f64(),
        match (n >= 1_000_000, reopen.as_secs_f64() < 2.0) {
            (false, _) => "target <2 s is for 1,000,000",
            (true, true) => "PASS <2 s",
            (true, false) => "MISS <2 s",
        }
    );
    for (label, since) in [
        ("overall", None),
        ("7day", Some(now - 7 * 86_400)),
        ("12month", Some(now - 365 * 86_400)),
    ] {
        let t = Instant::now();
        let c = store.top("bench", ChartKind::Artists, since, 50, 1);
        let el = t.elapsed();
        println!(
            "| top artists, {label} ({} artists) | {:.2} ms ({}) |",
            c.total,
            el.as_secs_f64() * 1e3,
            if el.as_millis() < 50 {
                "PASS <50 ms"
            } else {
                "MISS"
            }
        );
    }
    // What the web UI's charts page asks for: a from/to range (whole days
    // from the buckets, the edges from the time index) and the listens of
    // 12 months drawn as SVG.
    let day = 86_400;
    let t = Instant::now();
    let c = store.chart(
        "bench",
        ChartKind::Albums,
        &spindle_listens::ChartQuery {
            from: Some(now - 200 * day + 4_321),
            to: Some(now - 20 * day - 1_234),
            artist: None,
            limit: 10,
            page: 1,
        },
    );
    let el = t.elapsed();
    println!(
        "| top albums, a 180-day from/to range ({} albums) | {:.2} ms ({}) |",
        c.total,
        el.as_secs_f64() * 1e3,
        if el.as_millis() < 50 {
            "PASS <50 ms"
        } else {
            "MISS"
        }
    );
    let t = Instant::now();
    let from = now - 365 * day;
    let (_, cols) = spindle_server::charts::columns(&store.per_day("bench", Some(from)), from, now);
    let svg = spindle_server::charts::time_svg("bench", "Listens per week", "listen", &cols);
    let el = t.elapsed();
    println!(
        "| listens per week over 12 months, drawn as SVG ({} KiB) | {:.2} ms ({}) |",
        svg.len() / 1024,
        el.as_secs_f64() * 1e3,
        if el.as_millis() < 50 {
            "PASS <50 ms"
        } else {
            "MISS"
        }
    );
    drop(store);
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}
