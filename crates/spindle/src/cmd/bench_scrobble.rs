//! `spindle bench scrobble`: concurrent clients on loopback send
//! scrobbles in batches of 50 via track.scrobble to a fresh `spindle
//! serve`; prints accepted scrobbles/s and p99 latency. Also times top
//! artists over a history of `--chart-listens` listens.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context};

#[derive(Debug, clap::Args)]
pub struct ScrobbleArgs {
    /// Scrobbles to send in all.
    #[arg(long, default_value_t = 100_000)]
    pub scrobbles: usize,
    /// Concurrent clients.
    #[arg(long, default_value_t = 8)]
    pub clients: usize,
    /// Listens in the history the chart query runs over (0 skips it).
    #[arg(long, default_value_t = 1_000_000)]
    pub chart_listens: usize,
}

fn md5_hex(s: &str) -> String {
    spindle_server::accounts::md5_hex(s.as_bytes())
}

fn enc(s: &str) -> String {
    form_encode(s)
}

fn form_encode(s: &str) -> String {
    let mut o = String::new();
    for b in s.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' => o.push(b as char),
            _ => o.push_str(&format!("%{b:02X}")),
        }
    }
    o
}

fn signed_body(params: &[(String, String)], secret: &str) -> String {
    let mut sorted: Vec<&(String, String)> = params.iter().collect();
    sorted.sort_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
    let mut s = String::new();
    for (k, v) in &sorted {
        s.push_str(k);
        s.push_str(v);
    }
    s.push_str(secret);
    let sig = md5_hex(&s);
    let mut body: Vec<String> = params
        .iter()
        .map(|(k, v)| format!("{}={}", enc(k), enc(v)))
        .collect();
    body.push(format!("api_sig={sig}"));
    body.join("&")
}

/// One keep-alive HTTP/1.1 POST; returns the body.
fn post(
    conn: &mut BufReader<TcpStream>,
    host: &str,
    path: &str,
    body: &str,
) -> anyhow::Result<String> {
    let req = format!(
        "POST {path} HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    conn.get_mut().write_all(req.as_bytes())?;
    let mut len = 0usize;
    let mut line = String::new();
    loop {
        line.clear();
        if conn.read_line(&mut line)? == 0 {
            bail!("connection closed");
        }
        let l = line.trim_end();
        if l.is_empty() {
            break;
        }
        if let Some(v) = l.to_ascii_lowercase().strip_prefix("content-length:") {
            len = v.trim().parse()?;
        }
    }
    let mut buf = vec![0u8; len];
    conn.read_exact(&mut buf)?;
    Ok(String::from_utf8_lossy(&buf).into_owned())
}

pub fn run(args: &ScrobbleArgs) -> anyhow::Result<()> {
    let exe = std::env::current_exe().context("finding the spindle binary")?;
    let dir = std::env::temp_dir().join(format!("spindle-bench-scrobble-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let d = dir.to_string_lossy().into_owned();
    let mut child = Command::new(&exe)
        .args(["--data-dir", &d, "serve", "--listen", "127.0.0.1:0"])
        .stdout(Stdio::piped())
        .spawn()
        .context("starting spindle serve")?;
    let result = (|| -> anyhow::Result<()> {
        let mut first = String::new();
        BufReader::new(child.stdout.take().context("no stdout")?).read_line(&mut first)?;
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
        let mut conn = BufReader::new(TcpStream::connect(&host)?);
        let params = vec![
            ("method".to_owned(), "auth.getMobileSession".to_owned()),
            ("api_key".into(), key.clone()),
            ("username".into(), "bench".into()),
            ("password".into(), "benchpw".into()),
        ];
        let resp = post(&mut conn, &host, "/2.0/", &signed_body(&params, &secret))?;
        let sk = resp
            .split("<key>")
            .nth(1)
            .and_then(|r| r.split('<').next())
            .context("no session key")?
            .to_owned();
        let (rate, p99, accepted) = drive(&host, &key, &secret, &sk, args)?;
        println!("| contestant | scrobbles accepted | scrobbles/s | p99 latency per batch of 50 |");
        println!("|---|---|---|---|");
        println!(
            "| Spindle ({} clients, fsync per group commit) | {accepted} | {rate:.0} | {:.1} ms |",
            args.clients,
            p99.as_secs_f64() * 1e3
        );
        println!(
            "| Maloja | not run: start it beside this run and compare by hand (see README) | | |"
        );
        println!(
            "\ntarget >20,000 scrobbles/s: {}",
            if rate > 20_000.0 { "PASS" } else { "MISS" }
        );
        Ok(())
    })();
    let _ = child.kill();
    let _ = child.wait();
    let _ = std::fs::remove_dir_all(&dir);
    result?;
    if args.chart_listens > 0 {
        chart(args.chart_listens)?;
    }
    Ok(())
}

fn drive(
    host: &str,
    key: &str,
    secret: &str,
    sk: &str,
    args: &ScrobbleArgs,
) -> anyhow::Result<(f64, Duration, usize)> {
    let batches = args.scrobbles.div_ceil(50);
    let now = spindle_server::SystemClock.now_secs();
    let start = Instant::now();
    let results: Vec<anyhow::Result<(Vec<Duration>, usize)>> = std::thread::scope(|s| {
        let hs: Vec<_> = (0..args.clients)
            .map(|c| {
                s.spawn(move || -> anyhow::Result<(Vec<Duration>, usize)> {
                    let mut conn = BufReader::new(TcpStream::connect(host)?);
                    let mut lat = Vec::new();
                    let mut accepted = 0;
                    for b in (c..batches).step_by(args.clients) {
                        let mut p = vec![
                            ("method".to_owned(), "track.scrobble".to_owned()),
                            ("api_key".into(), key.to_owned()),
                            ("sk".into(), sk.to_owned()),
                        ];
                        for i in 0..50 {
                            let n = b * 50 + i;
                            p.push((format!("artist[{i}]"), format!("Artist {}", n % 997)));
                            p.push((format!("track[{i}]"), format!("Track {}", n % 5003)));
                            p.push((format!("album[{i}]"), format!("Album {}", n % 1999)));
                            p.push((
                                format!("timestamp[{i}]"),
                                (now - 3_000_000 + n as i64 * 20).to_string(),
                            ));
                        }
                        let body = signed_body(&p, secret);
                        let t = Instant::now();
                        let r = post(&mut conn, host, "/2.0/", &body)?;
                        lat.push(t.elapsed());
                        accepted += r
                            .split("accepted=\"")
                            .nth(1)
                            .and_then(|x| x.split('"').next())
                            .and_then(|x| x.parse::<usize>().ok())
                            .unwrap_or(0);
                    }
                    Ok((lat, accepted))
                })
            })
            .collect();
        hs.into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(anyhow::anyhow!("client panicked")))
            })
            .collect()
    });
    let secs = start.elapsed().as_secs_f64();
    let mut lat = Vec::new();
    let mut accepted = 0;
    for r in results {
        let (l, a) = r?;
        lat.extend(l);
        accepted += a;
    }
    lat.sort();
    let p99 = lat
        .get((lat.len() * 99 / 100).min(lat.len().saturating_sub(1)))
        .copied()
        .unwrap_or_default();
    Ok((accepted as f64 / secs, p99, accepted))
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
        store.submit(ls)?;
    }
    let load = t.elapsed();
    println!("\n| top artists over {n} listens | time |\n|---|---|");
    println!(
        "| loading the history (log + indexes) | {:.1} s |",
        load.as_secs_f64()
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
            "| {label} ({} artists) | {:.2} ms ({}) |",
            c.total,
            el.as_secs_f64() * 1e3,
            if el.as_millis() < 50 {
                "PASS <50 ms"
            } else {
                "MISS"
            }
        );
    }
    drop(store);
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}
