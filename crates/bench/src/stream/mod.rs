//! `bench stream`: Spindle's streaming against nginx over the same folder
//! in one run. A corpus of WAV files (see [`corpus`]) is served by a fresh
//! `spindle serve --music CORPUS` per IO engine (through the Subsonic
//! `stream` endpoint with an `apiKey`) and by nginx with its static-file
//! settings (see [`nginx`]); wrk then fetches whole files and random
//! 64 KiB ranges at each connection count, the servers taking turns within
//! each round (see [`wrk`]). Last, the listeners test (see [`listeners`])
//! holds N paced 320 kbit/s streams against each server, counting stalls
//! and the server's memory per listener. [`tables`] holds what it reports.
//!
//! On a small machine the load generator competes with the server, so by
//! default the servers run on the first half of the CPUs and wrk and the
//! listeners on the other half (`no_pin` turns that off).

pub mod corpus;
pub mod listeners;
pub mod nginx;
mod servers;
pub mod tables;
pub mod wrk;

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::error::{BenchError, Context};
use crate::proc;
use servers::Contestant;
pub use tables::{
    Cell, Header, ListenersReport, ListenersRow, ServerLabel, StreamSection, ThroughputReport,
    ThroughputRow,
};

/// What to run: the options of `spindle bench stream`
/// (docs/bench-stream.md).
#[derive(Debug, Clone, clap::Args)]
pub struct StreamOptions {
    /// The `spindle` binary to start as the server (the caller's own path).
    #[arg(skip)]
    pub spindle: PathBuf,
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

impl StreamOptions {
    fn check(&self) -> Result<(), BenchError> {
        for w in &self.workloads {
            if w != "whole" && w != "range" {
                return Err(BenchError::Options(format!(
                    "unknown workload '{w}' (whole, range)"
                )));
            }
        }
        for e in &self.io_engines {
            spindle_server::stream::ReadEngine::parse(e).map_err(BenchError::Options)?;
        }
        if self.files == 0 {
            return Err(BenchError::Options("--files must be at least 1".into()));
        }
        if self.min_mb < 1 || self.max_mb < self.min_mb {
            return Err(BenchError::Options(
                "--min-mb must be at least 1 and at most --max-mb".into(),
            ));
        }
        Ok(())
    }
}

/// Runs the benchmark. `log` gets progress lines; `report` gets each part
/// of the report as it is done (the header, the throughput tables, the
/// listeners table).
pub fn run_stream(
    opts: &StreamOptions,
    log: &mut dyn FnMut(&str),
    report: &mut dyn FnMut(StreamSection),
) -> Result<(), BenchError> {
    opts.check()?;
    // 5,000 listeners need 5,000 sockets here; children inherit the limit.
    if let Err(e) = spindle_io::raise_nofile_limit() {
        log(&format!(
            "spindle: warning: could not raise the open-files limit: {e}"
        ));
    }
    let wrk = if opts.no_throughput {
        None
    } else {
        Some(wrk::find(opts.wrk.as_deref())?)
    };
    let nginx = if opts.no_nginx {
        None
    } else {
        Some(nginx::find(opts.nginx.as_deref())?)
    };
    let work = std::env::temp_dir().join(format!("spindle-bench-stream-{}", std::process::id()));
    std::fs::create_dir_all(&work)?;
    let corpus = opts.corpus.clone().unwrap_or_else(|| work.join("corpus"));
    let setup = Setup {
        opts,
        nginx: nginx.as_deref(),
        work: &work,
        corpus: &corpus,
        tracks: Vec::new(),
        server_cpus: Vec::new(),
        client_cpus: Vec::new(),
    };
    let result = run_in(setup, wrk.as_deref(), log, report);
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

/// Where a run puts things and on which CPUs.
struct Setup<'a> {
    opts: &'a StreamOptions,
    nginx: Option<&'a Path>,
    work: &'a Path,
    corpus: &'a Path,
    tracks: Vec<corpus::Track>,
    server_cpus: Vec<usize>,
    client_cpus: Vec<usize>,
}

fn run_in(
    mut setup: Setup<'_>,
    wrk_exe: Option<&Path>,
    log: &mut dyn FnMut(&str),
    report: &mut dyn FnMut(StreamSection),
) -> Result<(), BenchError> {
    let (opts, corpus_dir) = (setup.opts, setup.corpus);
    let mb = 1_000_000;
    let tracks = corpus::plan(opts.files, opts.min_mb * mb, opts.max_mb * mb, opts.seed);
    std::fs::create_dir_all(corpus_dir)?;
    let t0 = std::time::Instant::now();
    let written = corpus::build(corpus_dir, &tracks, opts.seed).at("writing the corpus")?;
    let total: u64 = tracks.iter().map(|t| t.size).sum();
    log(&format!(
        "== corpus: {} WAV files, {:.0} MB in all ({} written in {:.1}s)",
        tracks.len(),
        total as f64 / 1e6,
        written,
        t0.elapsed().as_secs_f64()
    ));
    // Both servers read from the page cache: read every file once.
    for t in &tracks {
        std::io::copy(
            &mut std::fs::File::open(corpus_dir.join(&t.rel))?,
            &mut std::io::sink(),
        )?;
    }
    let (server_cpus, client_cpus) = placement(opts.no_pin);
    if server_cpus.is_empty() {
        log("== not pinned: servers and load generator share every CPU");
    } else {
        log(&format!(
            "== servers on CPU {:?}, load generator on CPU {:?}",
            server_cpus, client_cpus
        ));
    }
    report(StreamSection::Header(Header {
        files: tracks.len(),
        min_mb: opts.min_mb,
        max_mb: opts.max_mb,
        total_bytes: total,
        server_cpus: server_cpus.clone(),
        client_cpus: client_cpus.clone(),
        duration_secs: opts.duration,
        rounds: opts.rounds,
    }));
    setup.tracks = tracks;
    setup.server_cpus = server_cpus;
    setup.client_cpus = client_cpus;
    if let Some(wrk_exe) = wrk_exe {
        let servers = setup.start_all(0, log)?;
        let t = throughput(&setup, wrk_exe, &servers, log)?;
        report(StreamSection::Throughput(t));
    }
    if opts.listeners > 0 {
        // Fresh servers, so "memory before" is a server that has served one
        // file, not one whose allocator still holds the throughput runs'.
        let servers = setup.start_all(1, log)?;
        let l = listeners_test(&setup, &servers, log)?;
        report(StreamSection::Listeners(l));
    }
    Ok(())
}

impl Setup<'_> {
    /// Fresh servers: one `spindle serve` per engine and nginx, each
    /// checked for the right bytes. `gen` keeps data dirs apart between
    /// the throughput servers and the listeners' fresh ones.
    fn start_all(
        &self,
        gen: usize,
        log: &mut dyn FnMut(&str),
    ) -> Result<Vec<Contestant>, BenchError> {
        let prefix = proc::taskset(&self.server_cpus);
        let mut servers = Vec::new();
        for engine in &self.opts.io_engines {
            let data = self.work.join(format!("spindle-{engine}-{gen}"));
            let s = Contestant::spindle(
                &self.opts.spindle,
                &data,
                self.corpus,
                engine,
                &prefix,
                &self.tracks,
            )?;
            log(&format!("== {} on port {}", s.label.name, s.port()));
            servers.push(s);
        }
        if let Some(nx) = self.nginx {
            let s = Contestant::nginx(
                nx,
                &self.work.join(format!("nginx-{gen}")),
                self.corpus,
                &prefix,
                &self.tracks,
            )?;
            log(&format!(
                "== nginx on port {} (pids {:?})",
                s.port(),
                s.pids()
            ));
            servers.push(s);
        }
        // Every server answers a whole file and a range with the right bytes.
        for s in &servers {
            servers::check_bytes(
                s.port(),
                &s.paths[0],
                &self.corpus.join(&self.tracks[0].rel),
            )
            .at_with(|| format!("{} sent wrong bytes", s.label.name))?;
        }
        Ok(servers)
    }
}

fn throughput(
    setup: &Setup<'_>,
    wrk_exe: &Path,
    servers: &[Contestant],
    log: &mut dyn FnMut(&str),
) -> Result<ThroughputReport, BenchError> {
    let opts = setup.opts;
    let client_prefix = proc::taskset(&setup.client_cpus);
    let threads = if setup.client_cpus.is_empty() {
        std::thread::available_parallelism().map_or(2, |n| n.get())
    } else {
        setup.client_cpus.len()
    };
    // Scripts per server and workload, over the same files in the same
    // order.
    let mut scripts = Vec::new();
    for (i, s) in servers.iter().enumerate() {
        let sized: Vec<(String, u64)> = s
            .paths
            .iter()
            .cloned()
            .zip(setup.tracks.iter().map(|t| t.size))
            .collect();
        let mut per = Vec::new();
        for w in &opts.workloads {
            per.push(wrk::write_script(setup.work, &format!("s{i}"), w, &sized)?);
        }
        scripts.push(per);
    }
    let run = |si: usize, script: &Path, conns: usize, secs: u64| {
        let s = &servers[si];
        wrk::run(
            wrk_exe,
            &client_prefix,
            threads,
            s.port(),
            script,
            conns,
            secs,
        )
    };
    // Warm-up: two seconds of ranges against each.
    for (i, s) in servers.iter().enumerate() {
        let last = scripts[i].len() - 1;
        run(i, &scripts[i][last], 64, 2).at_with(|| format!("warming up {}", s.label.name))?;
    }
    // results[workload][conns][server] = runs
    let mut results =
        vec![
            vec![vec![Vec::<wrk::Outcome>::new(); servers.len()]; opts.connections.len()];
            opts.workloads.len()
        ];
    for round in 0..opts.rounds {
        for (wi, w) in opts.workloads.iter().enumerate() {
            for (ci, &conns) in opts.connections.iter().enumerate() {
                for k in 0..servers.len() {
                    let si = (k + round) % servers.len();
                    let s = &servers[si];
                    let cpu_before = proc::cpu_secs_of(&s.pids());
                    let mut o = run(si, &scripts[si][wi], conns, opts.duration)
                        .at_with(|| format!("wrk against {}", s.label.name))?;
                    o.server_cpu_s = proc::cpu_secs_of(&s.pids()) - cpu_before;
                    log(&format!(
                        "   round {} {w} c={conns} {}: {:.0} req/s, {:.0} MB/s, p50 {:.1} ms, p99 {:.1} ms, {} errors, {:.1} µs CPU/request",
                        round + 1,
                        s.label.name,
                        o.rps(),
                        o.mbps(),
                        o.p50_us as f64 / 1000.0,
                        o.p99_us as f64 / 1000.0,
                        o.errors,
                        o.cpu_us_per_req()
                    ));
                    results[wi][ci][si].push(o);
                }
            }
        }
    }
    let mut rows = Vec::new();
    for (wi, w) in opts.workloads.iter().enumerate() {
        for (ci, &conns) in opts.connections.iter().enumerate() {
            rows.push(ThroughputRow {
                workload: w.clone(),
                connections: conns,
                cells: results[wi][ci].iter().map(|r| Cell::of(r)).collect(),
            });
        }
    }
    Ok(ThroughputReport {
        servers: servers.iter().map(|s| s.label.clone()).collect(),
        rows,
    })
}

fn listeners_test(
    setup: &Setup<'_>,
    servers: &[Contestant],
    log: &mut dyn FnMut(&str),
) -> Result<ListenersReport, BenchError> {
    let opts = setup.opts;
    // Unpinned, either side may use every CPU.
    let all = spindle_io::allowed_cpus().map_or(1, |c| c.len());
    let ncpus = |c: &[usize]| if c.is_empty() { all } else { c.len() };
    let me = [std::process::id()];
    let mut rows = Vec::new();
    for s in servers {
        log(&format!(
            "== listeners: {} × 320 kbit/s for {} s against {}",
            opts.listeners, opts.listen_seconds, s.label.name
        ));
        let cpu_before = (proc::cpu_secs_of(&me), proc::cpu_secs_of(&s.pids()));
        let o = listeners::run(
            s.port(),
            &s.paths,
            opts.listeners,
            opts.listen_seconds,
            &|| s.pids(),
            &setup.client_cpus,
        )?;
        // CPU used over the run, as a share of the CPUs each side runs on:
        // a client near 100 % counts its own lateness as stalls.
        let share = |secs: f64, cpus: usize| 100.0 * secs / o.secs.max(1e-9) / cpus.max(1) as f64;
        let client_pct = share(
            proc::cpu_secs_of(&me) - cpu_before.0,
            ncpus(&setup.client_cpus),
        );
        let server_pct = share(
            proc::cpu_secs_of(&s.pids()) - cpu_before.1,
            ncpus(&setup.server_cpus),
        );
        log(&format!(
            "   {} connected, {} stalls ({} at a track's start), {} failures, worst wait {} ms, {:.1} KiB per listener, CPU: server {server_pct:.0} %, client {client_pct:.0} %",
            o.connected,
            o.stalls,
            o.start_stalls,
            o.failures,
            o.worst_wait_ms,
            o.kib_per_listener()
        ));
        rows.push(ListenersRow {
            server: s.label.clone(),
            outcome: o,
            server_pct,
            client_pct,
        });
        // Let the server settle (closed connections, freed buffers).
        std::thread::sleep(std::time::Duration::from_secs(2));
    }
    Ok(ListenersReport {
        listeners: opts.listeners,
        seconds: opts.listen_seconds,
        rows,
    })
}
