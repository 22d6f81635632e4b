//! `spindle bench stream`: Spindle's streaming against nginx over the same
//! folder in one run. A corpus of WAV files (see `corpus`) is served by a
//! fresh `spindle serve --music CORPUS` per IO engine (through the
//! Subsonic `stream` endpoint with an `apiKey`) and by nginx with its
//! static-file settings (see `nginx`); wrk then fetches whole files and
//! random 64 KiB ranges at each connection count, the servers taking turns
//! within each round (see `wrk`). Last, the listeners test (see
//! `listeners`) holds N paced 320 kbit/s streams against each server,
//! counting stalls and the server's memory per listener.
//!
//! On a small machine the load generator competes with the server, so by
//! default the servers run on the first half of the CPUs and wrk and the
//! listeners on the other half (`--no-pin` turns that off).

mod corpus;
mod listeners;
mod nginx;
mod wrk;

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use anyhow::{bail, Context};

#[derive(Debug, clap::Args)]
pub struct StreamArgs {
    /// Files in the corpus.
    #[arg(long, default_value_t = 100)]
    pub files: usize,
    /// Smallest file, in MB.
    #[arg(long, default_value_t = 3)]
    pub min_mb: u64,
    /// Largest file, in MB.
    #[arg(long, default_value_t = 10)]
    pub max_mb: u64,
    /// Keep the corpus in DIR and reuse it next time (default: a temporary
    /// folder, removed afterwards).
    #[arg(long, value_name = "DIR")]
    pub corpus: Option<PathBuf>,
    /// Seconds per wrk run.
    #[arg(long, default_value_t = 10)]
    pub duration: u64,
    /// Concurrent connections, one wrk run per count.
    #[arg(long, value_delimiter = ',', default_value = "64,1024")]
    pub connections: Vec<usize>,
    /// Workloads: whole (entire files) and range (random 64 KiB ranges).
    #[arg(long, value_delimiter = ',', default_value = "whole,range")]
    pub workloads: Vec<String>,
    /// Rounds; the servers take turns within each round, the order
    /// rotating from round to round. Medians are reported.
    #[arg(long, default_value_t = 3)]
    pub rounds: usize,
    /// Spindle's IO engines to measure, one `spindle serve --io-engine E`
    /// each: tokio, psync, uring, uring-sqpoll.
    #[arg(long, value_delimiter = ',', default_value = spindle_server::stream::DEFAULT_ENGINE)]
    pub io_engines: Vec<String>,
    /// Paced 320 kbit/s listeners held against each server (0 skips the
    /// listeners test).
    #[arg(long, default_value_t = 5000)]
    pub listeners: usize,
    /// How long each listener listens, in seconds.
    #[arg(long, default_value_t = 60)]
    pub listen_seconds: u64,
    /// Skip the wrk runs (only the listeners test).
    #[arg(long)]
    pub no_throughput: bool,
    /// Skip nginx (Spindle alone, no ratios).
    #[arg(long)]
    pub no_nginx: bool,
    /// Let servers and load generator run on any CPU.
    #[arg(long)]
    pub no_pin: bool,
    /// The nginx executable (default: nginx on PATH or /usr/sbin/nginx).
    #[arg(long)]
    pub nginx: Option<PathBuf>,
    /// The wrk executable (default: wrk on PATH).
    #[arg(long)]
    pub wrk: Option<PathBuf>,
    /// Seed of the corpus sizes.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
}

/// A free loopback port (bound, read, released).
pub(crate) fn free_port() -> anyhow::Result<u16> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port())
}

/// Whether this process runs as root (from `/proc/self/status`).
pub(crate) fn euid_is_root() -> bool {
    std::fs::read_to_string("/proc/self/status").is_ok_and(|s| {
        s.lines()
            .find_map(|l| l.strip_prefix("Uid:"))
            .and_then(|v| v.split_whitespace().nth(1))
            == Some("0")
    })
}

/// The processes whose parent is `pid`.
pub(crate) fn children_of(pid: u32) -> Vec<u32> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|p| {
            std::fs::read_to_string(format!("/proc/{p}/stat")).is_ok_and(|s| {
                // pid (comm) state ppid …; comm may hold spaces.
                s.rsplit_once(") ")
                    .and_then(|(_, rest)| rest.split_whitespace().nth(1))
                    .and_then(|pp| pp.parse::<u32>().ok())
                    == Some(pid)
            })
        })
        .collect()
}

/// A server under test.
enum Server {
    Spindle {
        engine: String,
        child: Child,
        port: u16,
    },
    Nginx(nginx::Nginx),
}

impl Server {
    fn name(&self) -> String {
        match self {
            Server::Spindle { engine, .. } => format!("Spindle ({engine})"),
            Server::Nginx(_) => "nginx".into(),
        }
    }

    fn port(&self) -> u16 {
        match self {
            Server::Spindle { port, .. } => *port,
            Server::Nginx(n) => n.port,
        }
    }

    fn pids(&self) -> Vec<u32> {
        match self {
            Server::Spindle { child, .. } => vec![child.id()],
            Server::Nginx(n) => n.pids(),
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Server::Spindle { child, .. } = self {
            let _ = Command::new("kill")
                .arg("-TERM")
                .arg(child.id().to_string())
                .status();
            let _ = child.wait();
        }
    }
}

fn with_prefix(prefix: &[String], exe: &Path) -> Command {
    match prefix.split_first() {
        Some((p, rest)) => {
            let mut c = Command::new(p);
            c.args(rest).arg(exe);
            c
        }
        None => Command::new(exe),
    }
}

/// A fresh `spindle serve --io-engine ENGINE` over the corpus with a user
/// `bench`; returns the server and its URL paths for `tracks`, in order.
fn start_spindle(
    exe: &Path,
    data: &Path,
    corpus: &Path,
    engine: &str,
    prefix: &[String],
    tracks: &[corpus::Track],
) -> anyhow::Result<(Server, Vec<String>)> {
    std::fs::create_dir_all(data)?;
    let cli = |args: &[&str], stdin: &str| -> anyhow::Result<String> {
        let mut c = Command::new(exe)
            .arg("--data-dir")
            .arg(data)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()?;
        c.stdin
            .take()
            .context("stdin")?
            .write_all(stdin.as_bytes())?;
        let out = c.wait_with_output()?;
        if !out.status.success() {
            bail!(
                "spindle {}: {}",
                args.join(" "),
                String::from_utf8_lossy(&out.stderr)
            );
        }
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    };
    cli(&["user", "add", "bench"], "benchpw\n")?;
    let key = cli(&["user", "token", "bench"], "")?.trim().to_owned();
    let mut child = with_prefix(prefix, exe)
        .arg("--data-dir")
        .arg(data)
        .arg("serve")
        .arg("--music")
        .arg(corpus)
        .args(["--listen", "127.0.0.1:0", "--io-engine", engine])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .context("starting spindle serve")?;
    let mut out = BufReader::new(child.stdout.take().context("no stdout")?);
    let mut first = String::new();
    while !first.contains("serving http://") {
        first.clear();
        if out.read_line(&mut first)? == 0 {
            let _ = child.kill();
            bail!("spindle serve --io-engine {engine} exited without printing its URL");
        }
    }
    std::thread::spawn(move || std::io::copy(&mut out, &mut std::io::sink()));
    let port = first
        .split("http://")
        .nth(1)
        .and_then(|r| r.split('/').next())
        .and_then(|h| h.rsplit(':').next())
        .and_then(|p| p.parse::<u16>().ok())
        .context("no port in the URL spindle serve printed")?;
    let server = Server::Spindle {
        engine: engine.to_owned(),
        child,
        port,
    };
    // Song ids by file: the library entry id is the Subsonic song id.
    let json = cli(&["query", "*", "--fetch", "id,url", "--format", "json"], "")?;
    let rows: Vec<serde_json::Value> = serde_json::from_str(&json).context("query output")?;
    let root = std::fs::canonicalize(corpus)?;
    let mut ids = std::collections::HashMap::new();
    for r in rows {
        if let (Some(id), Some(url)) = (r["id"].as_u64(), r["url"].as_str()) {
            let path = url.strip_prefix("file://").unwrap_or(url);
            if let Ok(rel) = Path::new(path).strip_prefix(&root) {
                ids.insert(rel.to_string_lossy().into_owned(), id);
            }
        }
    }
    let paths = tracks
        .iter()
        .map(|t| {
            ids.get(&t.rel)
                .map(|id| format!("/rest/stream?id={id}&apiKey={key}&v=1.16.1&c=bench"))
                .with_context(|| format!("spindle serve did not scan {}", t.rel))
        })
        .collect::<anyhow::Result<Vec<_>>>()?;
    Ok((server, paths))
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

/// Medians of one (workload, connections, server) cell over the rounds.
#[derive(Debug, Clone, Copy)]
struct Cell {
    rps: f64,
    mbps: f64,
    p99_ms: f64,
    errors: u64,
    cpu_us: f64,
}

fn summarize(runs: &[wrk::Outcome]) -> Cell {
    Cell {
        rps: median(runs.iter().map(wrk::Outcome::rps).collect()),
        mbps: median(runs.iter().map(wrk::Outcome::mbps).collect()),
        p99_ms: median(runs.iter().map(|o| o.p99_us as f64 / 1000.0).collect()),
        errors: runs.iter().map(|o| o.errors).sum(),
        cpu_us: median(runs.iter().map(wrk::Outcome::cpu_us_per_req).collect()),
    }
}

/// CPU time (user + system, all threads) the processes `pids` have used
/// so far, in seconds, from `/proc/PID/stat`; processes gone count 0.
fn cpu_seconds(pids: &[u32]) -> f64 {
    // sysconf(_SC_CLK_TCK): 100 on every Linux port.
    const TICKS: f64 = 100.0;
    pids.iter()
        .filter_map(|p| std::fs::read_to_string(format!("/proc/{p}/stat")).ok())
        .filter_map(|s| {
            // Fields after the command name, which may hold spaces.
            let rest = &s[s.rfind(')')? + 2..];
            let f: Vec<&str> = rest.split_whitespace().collect();
            // utime and stime are fields 14 and 15 of the line, 12 and 13 here.
            let u: f64 = f.get(11)?.parse().ok()?;
            let st: f64 = f.get(12)?.parse().ok()?;
            Some((u + st) / TICKS)
        })
        .sum()
}

pub fn run(args: &StreamArgs) -> anyhow::Result<()> {
    for w in &args.workloads {
        anyhow::ensure!(
            w == "whole" || w == "range",
            "unknown workload '{w}' (whole, range)"
        );
    }
    for e in &args.io_engines {
        spindle_server::stream::ReadEngine::parse(e).map_err(anyhow::Error::msg)?;
    }
    anyhow::ensure!(args.files > 0, "--files must be at least 1");
    anyhow::ensure!(
        args.min_mb >= 1 && args.max_mb >= args.min_mb,
        "--min-mb must be at least 1 and at most --max-mb"
    );
    raise_nofile_limit();
    let exe = std::env::current_exe().context("finding the spindle binary")?;
    let wrk_exe = if args.no_throughput {
        None
    } else {
        Some(wrk::find(args.wrk.as_deref())?)
    };
    let nginx_exe = if args.no_nginx {
        None
    } else {
        Some(nginx::find(args.nginx.as_deref())?)
    };
    let work = std::env::temp_dir().join(format!("spindle-bench-stream-{}", std::process::id()));
    std::fs::create_dir_all(&work)?;
    let corpus = args.corpus.clone().unwrap_or_else(|| work.join("corpus"));
    let result = run_in(
        args,
        &exe,
        wrk_exe.as_deref(),
        nginx_exe.as_deref(),
        &work,
        &corpus,
    );
    let _ = std::fs::remove_dir_all(&work);
    result
}

/// The CPUs for the servers and for the load generator.
fn placement(no_pin: bool) -> (Vec<usize>, Vec<usize>) {
    if no_pin || Command::new("taskset").arg("-V").output().is_err() {
        return (Vec::new(), Vec::new());
    }
    let cpus = spindle_io::allowed_cpus().unwrap_or_default();
    if cpus.len() < 2 {
        return (Vec::new(), Vec::new());
    }
    let half = cpus.len() / 2;
    (cpus[..half].to_vec(), cpus[half..].to_vec())
}

fn taskset(cpus: &[usize]) -> Vec<String> {
    if cpus.is_empty() {
        return Vec::new();
    }
    let list: Vec<String> = cpus.iter().map(usize::to_string).collect();
    vec!["taskset".into(), "-c".into(), list.join(",")]
}

fn run_in(
    args: &StreamArgs,
    exe: &Path,
    wrk_exe: Option<&Path>,
    nginx_exe: Option<&Path>,
    work: &Path,
    corpus_dir: &Path,
) -> anyhow::Result<()> {
    let mb = 1_000_000;
    let tracks = corpus::plan(args.files, args.min_mb * mb, args.max_mb * mb, args.seed);
    std::fs::create_dir_all(corpus_dir)?;
    let t0 = std::time::Instant::now();
    let written = corpus::build(corpus_dir, &tracks, args.seed)?;
    let total: u64 = tracks.iter().map(|t| t.size).sum();
    eprintln!(
        "== corpus: {} WAV files, {:.0} MB in all ({} written in {:.1}s)",
        tracks.len(),
        total as f64 / 1e6,
        written,
        t0.elapsed().as_secs_f64()
    );
    // Both servers read from the page cache: read every file once.
    for t in &tracks {
        std::io::copy(
            &mut std::fs::File::open(corpus_dir.join(&t.rel))?,
            &mut std::io::sink(),
        )?;
    }
    let (server_cpus, client_cpus) = placement(args.no_pin);
    let server_prefix = taskset(&server_cpus);
    let client_prefix = taskset(&client_cpus);
    if server_cpus.is_empty() {
        eprintln!("== not pinned: servers and load generator share every CPU");
    } else {
        eprintln!(
            "== servers on CPU {:?}, load generator on CPU {:?}",
            server_cpus, client_cpus
        );
    }

    // Fresh servers: one `spindle serve` per engine and nginx, each
    // checked for the right bytes. `gen` keeps data dirs apart between the
    // throughput servers and the listeners' fresh ones.
    let start_all = |gen: usize| -> anyhow::Result<Vec<(Server, Vec<String>)>> {
        let mut servers: Vec<(Server, Vec<String>)> = Vec::new();
        for engine in &args.io_engines {
            let data = work.join(format!("spindle-{engine}-{gen}"));
            let (s, paths) =
                start_spindle(exe, &data, corpus_dir, engine, &server_prefix, &tracks)?;
            eprintln!("== {} on port {}", s.name(), s.port());
            servers.push((s, paths));
        }
        if let Some(nx) = nginx_exe {
            let n = nginx::Nginx::start(
                nx,
                &work.join(format!("nginx-{gen}")),
                corpus_dir,
                &server_prefix,
            )?;
            eprintln!("== nginx on port {} (pids {:?})", n.port, n.pids());
            let paths = tracks.iter().map(|t| format!("/{}", t.rel)).collect();
            servers.push((Server::Nginx(n), paths));
        }
        // Every server answers a whole file and a range with the right bytes.
        for (s, paths) in &servers {
            check_bytes(s.port(), &paths[0], &corpus_dir.join(&tracks[0].rel))
                .with_context(|| format!("{} sent wrong bytes", s.name()))?;
        }
        Ok(servers)
    };

    println!("# spindle bench stream");
    println!();
    println!(
        "{} files of {}-{} MB ({:.0} MB); servers on CPUs {}, load generator on CPUs {}; {} s per run, {} round(s), medians",
        tracks.len(),
        args.min_mb,
        args.max_mb,
        total as f64 / 1e6,
        cpu_list(&server_cpus),
        cpu_list(&client_cpus),
        args.duration,
        args.rounds
    );
    println!();

    if let Some(wrk_exe) = wrk_exe {
        let servers = start_all(0)?;
        let sizes: Vec<u64> = tracks.iter().map(|t| t.size).collect();
        throughput(
            args,
            wrk_exe,
            &client_prefix,
            client_cpus.len(),
            work,
            &servers,
            &sizes,
        )?;
    }
    if args.listeners > 0 {
        // Fresh servers, so "memory before" is a server that has served one
        // file, not one whose allocator still holds the throughput runs'.
        let servers = start_all(1)?;
        listeners_test(args, &servers, &server_cpus, &client_cpus)?;
    }
    Ok(())
}

fn cpu_list(c: &[usize]) -> String {
    if c.is_empty() {
        "all".into()
    } else {
        c.iter().map(usize::to_string).collect::<Vec<_>>().join(",")
    }
}

/// GETs a whole file and a range over one connection and compares them
/// with the file.
fn check_bytes(port: u16, path: &str, file: &Path) -> anyhow::Result<()> {
    use std::io::Read;
    let want = std::fs::read(file)?;
    for (range, expect) in [
        (None, &want[..]),
        (Some((1000u64, 66_535u64)), &want[1000..=66_535]),
    ] {
        let mut s = std::net::TcpStream::connect(("127.0.0.1", port))?;
        let extra = range.map_or(String::new(), |(a, b)| format!("Range: bytes={a}-{b}\r\n"));
        write!(
            s,
            "GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n{extra}Connection: close\r\n\r\n"
        )?;
        let mut all = Vec::new();
        s.read_to_end(&mut all)?;
        let split = all
            .windows(4)
            .position(|w| w == b"\r\n\r\n")
            .context("no end of headers")?;
        let head = String::from_utf8_lossy(&all[..split]);
        let code = if range.is_some() { " 206 " } else { " 200 " };
        anyhow::ensure!(head.contains(code), "wanted{code}status, got: {head}");
        anyhow::ensure!(&all[split + 4..] == expect, "body differs from the file");
    }
    Ok(())
}

fn fmt_ratio(x: f64) -> String {
    if x.is_finite() {
        format!("{x:.2}×")
    } else {
        "–".into()
    }
}

#[allow(clippy::too_many_arguments)]
fn throughput(
    args: &StreamArgs,
    wrk_exe: &Path,
    client_prefix: &[String],
    client_threads: usize,
    work: &Path,
    servers: &[(Server, Vec<String>)],
    sizes: &[u64],
) -> anyhow::Result<()> {
    let threads = if client_threads == 0 {
        std::thread::available_parallelism().map_or(2, |n| n.get())
    } else {
        client_threads
    };
    // Scripts per server and workload, over the same files in the same
    // order.
    let mut scripts = Vec::new();
    for (i, (_, paths)) in servers.iter().enumerate() {
        let sized: Vec<(String, u64)> = paths.iter().cloned().zip(sizes.iter().copied()).collect();
        let mut per = Vec::new();
        for w in &args.workloads {
            per.push(wrk::write_script(work, &format!("s{i}"), w, &sized)?);
        }
        scripts.push(per);
    }
    // Warm-up: two seconds of ranges against each.
    for (i, (s, _)) in servers.iter().enumerate() {
        let last = scripts[i].len() - 1;
        wrk::run(
            wrk_exe,
            client_prefix,
            threads,
            s.port(),
            &scripts[i][last],
            64,
            2,
        )
        .with_context(|| format!("warming up {}", s.name()))?;
    }
    // results[workload][conns][server] = runs
    let mut results =
        vec![
            vec![vec![Vec::<wrk::Outcome>::new(); servers.len()]; args.connections.len()];
            args.workloads.len()
        ];
    for round in 0..args.rounds {
        for (wi, w) in args.workloads.iter().enumerate() {
            for (ci, &conns) in args.connections.iter().enumerate() {
                for k in 0..servers.len() {
                    let si = (k + round) % servers.len();
                    let (s, _) = &servers[si];
                    let cpu_before = cpu_seconds(&s.pids());
                    let mut o = wrk::run(
                        wrk_exe,
                        client_prefix,
                        threads,
                        s.port(),
                        &scripts[si][wi],
                        conns,
                        args.duration,
                    )
                    .with_context(|| format!("wrk against {}", s.name()))?;
                    o.server_cpu_s = cpu_seconds(&s.pids()) - cpu_before;
                    eprintln!(
                        "   round {} {w} c={conns} {}: {:.0} req/s, {:.0} MB/s, p50 {:.1} ms, p99 {:.1} ms, {} errors, {:.1} µs CPU/request",
                        round + 1,
                        s.name(),
                        o.rps(),
                        o.mbps(),
                        o.p50_us as f64 / 1000.0,
                        o.p99_us as f64 / 1000.0,
                        o.errors,
                        o.cpu_us_per_req()
                    );
                    results[wi][ci][si].push(o);
                }
            }
        }
    }
    println!("## Throughput (wrk)");
    println!();
    println!("| workload | connections | server | requests/s | MB/s | p99 latency | errors | server CPU per request |");
    println!("|---|---|---|---|---|---|---|---|");
    let mut cells = Vec::new();
    for (wi, w) in args.workloads.iter().enumerate() {
        for (ci, &conns) in args.connections.iter().enumerate() {
            let row: Vec<Cell> = results[wi][ci].iter().map(|r| summarize(r)).collect();
            for (si, c) in row.iter().enumerate() {
                println!(
                    "| {} | {conns} | {} | {:.0} | {:.0} | {:.1} ms | {} | {:.1} µs |",
                    workload_name(w),
                    servers[si].0.name(),
                    c.rps,
                    c.mbps,
                    c.p99_ms,
                    c.errors,
                    c.cpu_us
                );
            }
            cells.push((w.clone(), conns, row));
        }
    }
    println!();
    let nginx_at = servers
        .iter()
        .position(|(s, _)| matches!(s, Server::Nginx(_)));
    if let Some(ni) = nginx_at {
        println!("## Spindle / nginx");
        println!();
        println!("| workload | connections | engine | requests/s | MB/s | p99 (nginx / Spindle) | CPU per request (nginx / Spindle) | target ≥ 0.9× |");
        println!("|---|---|---|---|---|---|---|---|");
        for (w, conns, row) in &cells {
            let n = row[ni];
            for (si, c) in row.iter().enumerate() {
                let Server::Spindle { engine, .. } = &servers[si].0 else {
                    continue;
                };
                let r = c.rps / n.rps;
                println!(
                    "| {} | {conns} | {engine} | {} | {} | {} | {} | {} |",
                    workload_name(w),
                    fmt_ratio(r),
                    fmt_ratio(c.mbps / n.mbps),
                    fmt_ratio(n.p99_ms / c.p99_ms),
                    fmt_ratio(n.cpu_us / c.cpu_us),
                    if r >= 0.9 { "PASS" } else { "MISS" }
                );
            }
        }
        println!();
    }
    Ok(())
}

fn workload_name(w: &str) -> &'static str {
    if w == "whole" {
        "whole files"
    } else {
        "64 KiB ranges"
    }
}

fn listeners_test(
    args: &StreamArgs,
    servers: &[(Server, Vec<String>)],
    server_cpus: &[usize],
    client_cpus: &[usize],
) -> anyhow::Result<()> {
    // Unpinned, either side may use every CPU.
    let all = spindle_io::allowed_cpus().map_or(1, |c| c.len());
    let ncpus = |c: &[usize]| if c.is_empty() { all } else { c.len() };
    let mut rows = Vec::new();
    for (s, paths) in servers {
        eprintln!(
            "== listeners: {} × 320 kbit/s for {} s against {}",
            args.listeners,
            args.listen_seconds,
            s.name()
        );
        let cpu_before = (cpu_seconds(&[std::process::id()]), cpu_seconds(&s.pids()));
        let o = listeners::run(
            s.port(),
            paths,
            args.listeners,
            args.listen_seconds,
            &|| s.pids(),
            client_cpus,
        )?;
        // CPU used over the run, as a share of the CPUs each side runs on:
        // a client near 100 % counts its own lateness as stalls.
        let share = |secs: f64, cpus: usize| 100.0 * secs / o.secs.max(1e-9) / cpus.max(1) as f64;
        let client_pct = share(
            cpu_seconds(&[std::process::id()]) - cpu_before.0,
            ncpus(client_cpus),
        );
        let server_pct = share(cpu_seconds(&s.pids()) - cpu_before.1, ncpus(server_cpus));
        eprintln!(
            "   {} connected, {} stalls ({} at a track's start), {} failures, worst wait {} ms, {:.1} KiB per listener, CPU: server {server_pct:.0} %, client {client_pct:.0} %",
            o.connected,
            o.stalls,
            o.start_stalls,
            o.failures,
            o.worst_wait_ms,
            o.kib_per_listener()
        );
        rows.push((
            s.name(),
            matches!(s, Server::Spindle { .. }),
            o,
            server_pct,
            client_pct,
        ));
        // Let the server settle (closed connections, freed buffers).
        std::thread::sleep(std::time::Duration::from_secs(2));
    }
    println!(
        "## Listeners: {} × 320 kbit/s for {} s",
        args.listeners, args.listen_seconds
    );
    println!();
    println!("| server | listening | stalls (>1 s without bytes) | failures | worst wait | MB/s delivered | RSS idle → peak | memory per listener | CPU busy: server, client | targets |");
    println!("|---|---|---|---|---|---|---|---|---|---|");
    for (name, spindle, o, server_pct, client_pct) in &rows {
        let target = if *spindle {
            let ok = o.stalls == 0 && o.failures == 0 && o.kib_per_listener() < 64.0;
            if ok {
                "PASS"
            } else {
                "MISS"
            }
        } else {
            "–"
        };
        println!(
            "| {name} | {} | {} | {} | {} ms | {:.1} | {:.1} → {:.1} MiB | {:.1} KiB | {server_pct:.0} %, {client_pct:.0} % | {target} |",
            o.connected,
            o.stalls,
            o.failures,
            o.worst_wait_ms,
            o.bytes as f64 / 1e6 / o.secs.max(1e-9),
            o.rss_idle_kib as f64 / 1024.0,
            o.rss_peak_kib as f64 / 1024.0,
            o.kib_per_listener()
        );
    }
    println!();
    println!("Targets for Spindle: zero stalls, no failures, under 64 KiB of server memory per listener.");
    if rows.iter().any(|r| r.4 > 90.0) {
        println!("The client was busy over 90 % of its CPUs: some stalls may be its own lateness, not the server's.");
    }
    Ok(())
}

/// Raises this process's soft limit on open files to its hard limit
/// (5,000 listeners need 5,000 sockets here); children inherit it.
fn raise_nofile_limit() {
    if let Err(e) = super::serve::raise_nofile_limit() {
        eprintln!("spindle: warning: could not raise the open-files limit: {e}");
    }
}
