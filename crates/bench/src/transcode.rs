//! `spindle bench transcode`: Spindle's transcoding against the same
//! ffmpeg command run directly (the limit: Spindle runs that command), in
//! one run over the same generated FLAC files.
//!
//! - Throughput: every file transcoded once, `parallel` at a time, by
//!   ffmpeg directly and through `stream?format=…&maxBitRate=…` of a
//!   fresh `spindle serve` (cold: nothing cached). Transcodes per second
//!   and CPU seconds per minute of audio (ffmpeg's own CPU, and Spindle's
//!   server plus the ffmpeg children it reaped).
//! - Time to first byte: one request at a time, cold (a bitrate not yet
//!   cached) and hot (the same again, served from the cache), beside
//!   ffmpeg's own time to its first output byte.
//! - Memory per concurrent transcode: the peak resident memory of the
//!   server and its ffmpeg children during the throughput run, less the
//!   idle server's, per running encode.

use std::ffi::OsStr;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use spindle_server::transcode::{ffmpeg, Format, Target};

use crate::error::{BenchError, Context};
use crate::proc;
use crate::spindle::{cli, Serve};

/// The run's settings: the options of `spindle bench transcode`.
#[derive(Debug, Clone, clap::Args)]
pub struct TranscodeOptions {
    /// The `spindle` binary (the caller's own path).
    #[arg(skip)]
    pub spindle: PathBuf,
    /// Files in the corpus (each transcoded once per side).
    #[arg(long, default_value_t = 16)]
    pub tracks: usize,
    /// Seconds of audio per file.
    #[arg(long, default_value_t = 60)]
    pub seconds: u32,
    /// Output format: mp3, opus, aac, m4a, ogg, flac.
    #[arg(long, default_value = "opus", value_parser = parse_format)]
    pub format: Format,
    /// Output bitrate, kbit/s.
    #[arg(long, default_value_t = 128)]
    pub bitrate: u32,
    /// Encodes at once (default: the number of cores).
    #[arg(long, default_value_t = cores(), hide_default_value = true)]
    pub parallel: usize,
    /// Requests of each time-to-first-byte measurement.
    #[arg(long, default_value_t = 8)]
    pub ttfb_rounds: usize,
    /// The ffmpeg binary.
    #[arg(long, default_value = "ffmpeg")]
    pub ffmpeg: PathBuf,
    /// Where to make the corpus (default: the system's temp dir).
    #[arg(long, default_value_os_t = std::env::temp_dir(), hide_default_value = true)]
    pub dir: PathBuf,
}

/// `--format`: a format to transcode to (`raw` is none).
fn parse_format(s: &str) -> Result<Format, String> {
    match Format::parse(s) {
        Ok(Some(f)) => Ok(f),
        Ok(None) => Err("raw is no transcode: name a format to transcode to".into()),
        Err(e) => Err(e.to_string()),
    }
}

/// The default of `--parallel`: the number of cores (2 where unknown).
fn cores() -> usize {
    std::thread::available_parallelism().map_or(2, |n| n.get())
}

/// One side's throughput.
#[derive(Debug, Clone, Copy, Default, serde::Serialize)]
pub struct Side {
    pub transcodes_per_sec: f64,
    /// CPU seconds per minute of audio transcoded.
    pub cpu_per_audio_min: f64,
}

/// What a run measured.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct TranscodeReport {
    pub tracks: usize,
    pub secs: u32,
    pub format: String,
    pub bitrate: u32,
    pub parallel: usize,
    pub ffmpeg: Side,
    pub spindle: Side,
    /// Medians, ms.
    pub ffmpeg_first_byte_ms: f64,
    pub cold_first_byte_ms: f64,
    pub hot_first_byte_ms: f64,
    /// Peak MiB per running encode: Spindle's (the server's growth over
    /// idle, shared among its encodes, plus each ffmpeg), and ffmpeg's
    /// alone.
    pub mib_per_transcode: f64,
    pub ffmpeg_mib_per_transcode: f64,
}

impl TranscodeReport {
    /// Spindle's throughput over ffmpeg's.
    pub fn ratio(&self) -> f64 {
        self.spindle.transcodes_per_sec / self.ffmpeg.transcodes_per_sec.max(f64::MIN_POSITIVE)
    }

    /// The Markdown `spindle bench transcode` prints.
    pub fn render(&self) -> String {
        let pass = |ok: bool| if ok { "PASS" } else { "MISS" };
        let mut s = format!(
            "## Transcoding: {} files of {} s FLAC to {} {} kbit/s, {} at a time\n\n",
            self.tracks, self.secs, self.format, self.bitrate, self.parallel
        );
        s.push_str("| | ffmpeg alone | Spindle | Spindle / ffmpeg |\n|---|---|---|---|\n");
        s.push_str(&format!(
            "| transcodes per second | {:.2} | {:.2} | {:.3} |\n",
            self.ffmpeg.transcodes_per_sec,
            self.spindle.transcodes_per_sec,
            self.ratio()
        ));
        s.push_str(&format!(
            "| CPU seconds per minute of audio | {:.3} | {:.3} | {:.3} |\n",
            self.ffmpeg.cpu_per_audio_min,
            self.spindle.cpu_per_audio_min,
            self.spindle.cpu_per_audio_min / self.ffmpeg.cpu_per_audio_min.max(f64::MIN_POSITIVE)
        ));
        s.push_str(&format!(
            "| time to first byte, cold (median) | {:.1} ms | {:.1} ms | |\n",
            self.ffmpeg_first_byte_ms, self.cold_first_byte_ms
        ));
        s.push_str(&format!(
            "| time to first byte, cached (median) | | {:.2} ms | |\n",
            self.hot_first_byte_ms
        ));
        s.push_str(&format!(
            "| memory per concurrent transcode (peak RSS) | {:.1} MiB | {:.1} MiB | {:.3} |\n\n",
            self.ffmpeg_mib_per_transcode,
            self.mib_per_transcode,
            self.mib_per_transcode / self.ffmpeg_mib_per_transcode.max(f64::MIN_POSITIVE)
        ));
        s.push_str(&format!(
            "- {}: throughput at least 0.95× ffmpeg's ({:.3}×)\n",
            pass(self.ratio() >= 0.95),
            self.ratio()
        ));
        s.push_str(&format!(
            "- {}: time to first byte under 150 ms cold ({:.1} ms)\n",
            pass(self.cold_first_byte_ms < 150.0),
            self.cold_first_byte_ms
        ));
        s.push_str(&format!(
            "- {}: time to first byte under 5 ms cached ({:.2} ms)\n",
            pass(self.hot_first_byte_ms < 5.0),
            self.hot_first_byte_ms
        ));
        s
    }
}

/// Runs the benchmark; `log` hears progress.
pub fn run_transcode(
    o: &TranscodeOptions,
    log: &mut dyn FnMut(&str),
) -> Result<TranscodeReport, BenchError> {
    if o.tracks == 0 || o.seconds == 0 || o.parallel == 0 {
        return Err(BenchError::Options(
            "tracks, seconds and parallel must be at least 1".into(),
        ));
    }
    let root = o
        .dir
        .join(format!("spindle-bench-transcode-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    let music = root.join("music/Bench/Noise");
    std::fs::create_dir_all(&music).at("creating the corpus folder")?;
    let r = run_in(o, &root, &music, log);
    let _ = std::fs::remove_dir_all(&root);
    r
}

fn run_in(
    o: &TranscodeOptions,
    root: &Path,
    music: &Path,
    log: &mut dyn FnMut(&str),
) -> Result<TranscodeReport, BenchError> {
    log(&format!(
        "making {} FLAC files of {} s",
        o.tracks, o.seconds
    ));
    let files: Vec<PathBuf> = (0..o.tracks)
        .map(|n| music.join(format!("t{n:03}.flac")))
        .collect();
    for (n, f) in files.iter().enumerate() {
        let src = format!(
            "anoisesrc=d={}:c=pink:r=44100:a=0.3:seed={}",
            o.seconds,
            n + 1
        );
        let st = Command::new(&o.ffmpeg)
            .args([
                "-nostdin", "-v", "error", "-y", "-f", "lavfi", "-i", &src, "-ac", "2",
            ])
            .args(["-sample_fmt", "s16", "-c:a", "flac"])
            // An album each: no request prepares the next file ahead
            // (crate docs of spindle_app::transcode::prepare).
            .args(["-metadata", &format!("album=Noise {n}"), "-metadata"])
            .arg(format!("title=t{n:03}"))
            .arg(f)
            .status()
            .map_err(|e| {
                BenchError::Missing(format!(
                    "cannot run {} ({e}); install ffmpeg (Debian: apt install ffmpeg)",
                    o.ffmpeg.display()
                ))
            })?;
        if !st.success() {
            return Err(BenchError::Peer(format!(
                "ffmpeg could not make {}",
                f.display()
            )));
        }
    }
    let target = Target {
        format: o.format,
        bitrate: o.bitrate,
        offset: 0.0,
    };
    let mut rep = TranscodeReport {
        tracks: o.tracks,
        secs: o.seconds,
        format: o.format.name().to_owned(),
        bitrate: o.bitrate,
        parallel: o.parallel,
        ..TranscodeReport::default()
    };
    let audio_min = (o.tracks as f64) * f64::from(o.seconds) / 60.0;

    log("ffmpeg alone");
    let me = std::process::id();
    let sampler = Sampler::start(me, 0);
    let cpu0 = children_cpu(me).unwrap_or(0.0);
    let t0 = Instant::now();
    parallel(o.parallel, files.len(), |i| {
        let mut c = direct(o, &target, &files[i])?;
        let mut out = c
            .stdout
            .take()
            .ok_or_else(|| BenchError::Peer("no stdout".into()))?;
        std::io::copy(&mut out, &mut std::io::sink())?;
        let st = c.wait()?;
        if !st.success() {
            return Err(BenchError::Peer(format!(
                "ffmpeg failed on {}",
                files[i].display()
            )));
        }
        Ok(())
    })?;
    let wall = t0.elapsed().as_secs_f64();
    let cpu = children_cpu(me).unwrap_or(0.0) - cpu0;
    rep.ffmpeg = Side {
        transcodes_per_sec: o.tracks as f64 / wall,
        cpu_per_audio_min: cpu / audio_min,
    };
    rep.ffmpeg_mib_per_transcode = sampler.stop();

    log("spindle serve");
    let data = root.join("data");
    std::fs::create_dir_all(&data)?;
    let cfg = root.join("server.toml");
    std::fs::write(
        &cfg,
        format!(
            "[transcode]\nffmpeg = {:?}\nmax_concurrent = {}\nqueue = 100000\n",
            o.ffmpeg.display().to_string(),
            o.parallel
        ),
    )?;
    let music_root = root.join("music");
    let args: [&OsStr; 4] = [
        OsStr::new("--music"),
        music_root.as_os_str(),
        OsStr::new("--config"),
        cfg.as_os_str(),
    ];
    let serve = Serve::start(&o.spindle, &data, &args, &[], Stdio::null())?;
    cli(
        &o.spindle,
        &data,
        &["user", "add", "bench"],
        "bench password\n",
    )?;
    let key = cli(&o.spindle, &data, &["user", "token", "bench"], "")?
        .trim()
        .to_owned();
    let addr = format!(
        "{}:{}",
        serve.host.rsplit_once(':').map_or("127.0.0.1", |h| h.0),
        serve.port
    );
    let ids = song_ids(&addr, &key, o.tracks)?;
    let path = |id: &str, kbps: u32| {
        format!(
            "/rest/stream?apiKey={key}&v=1.16.1&c=bench&id={id}&format={}&maxBitRate={kbps}",
            o.format.name()
        )
    };

    let pid = serve.pid();
    std::thread::sleep(Duration::from_millis(300));
    let sampler = Sampler::start(pid, proc::rss_kib(&[pid]));
    let cpu0 = proc::cpu_secs(pid).unwrap_or(0.0) + children_cpu(pid).unwrap_or(0.0);
    let t0 = Instant::now();
    let fetched = parallel(o.parallel, ids.len(), |i| {
        let (status, _, body, _) = get(&addr, &path(&ids[i], o.bitrate))?;
        if status != 200 || body < 1000 {
            return Err(BenchError::Peer(format!(
                "stream answered {status} with {body} bytes"
            )));
        }
        Ok(())
    });
    let wall = t0.elapsed().as_secs_f64();
    let cpu = proc::cpu_secs(pid).unwrap_or(0.0) + children_cpu(pid).unwrap_or(0.0) - cpu0;
    rep.mib_per_transcode = sampler.stop();
    fetched?;
    rep.spindle = Side {
        transcodes_per_sec: o.tracks as f64 / wall,
        cpu_per_audio_min: cpu / audio_min,
    };

    log("time to first byte");
    let rounds = o.ttfb_rounds.min(ids.len()).max(1);
    let cold_kbps = o.format.clamp(o.bitrate.saturating_sub(32).max(32));
    let mut ff = Vec::new();
    for f in files.iter().take(rounds) {
        let t = Instant::now();
        let mut c = direct(
            o,
            &Target {
                bitrate: cold_kbps,
                ..target
            },
            f,
        )?;
        let mut out = c
            .stdout
            .take()
            .ok_or_else(|| BenchError::Peer("no stdout".into()))?;
        let mut b = [0u8; 1];
        out.read_exact(&mut b)?;
        ff.push(t.elapsed().as_secs_f64() * 1000.0);
        std::io::copy(&mut out, &mut std::io::sink())?;
        c.wait()?;
    }
    rep.ffmpeg_first_byte_ms = median(ff);
    let mut cold = Vec::new();
    for id in ids.iter().take(rounds) {
        let (status, _, _, first) = get(&addr, &path(id, cold_kbps))?;
        if status != 200 {
            return Err(BenchError::Peer(format!("cold stream answered {status}")));
        }
        cold.push(first);
    }
    rep.cold_first_byte_ms = median(cold);
    std::thread::sleep(Duration::from_millis(500));
    let mut hot = Vec::new();
    for id in ids.iter().take(rounds) {
        let (status, cached, _, first) = get(&addr, &path(id, cold_kbps))?;
        if status != 200 || !cached {
            return Err(BenchError::Check(format!(
                "the second request of a transcode was not served from the cache (status {status})"
            )));
        }
        hot.push(first);
    }
    rep.hot_first_byte_ms = median(hot);
    drop(serve);
    Ok(rep)
}

/// Samples the resident memory of a process (less `base` KiB, what it
/// holds idle; 0 to count only its children) and its children every
/// 10 ms, keeping the peak per running child.
struct Sampler {
    stop: Arc<AtomicBool>,
    thread: std::thread::JoinHandle<f64>,
}

impl Sampler {
    fn start(pid: u32, base: u64) -> Sampler {
        let stop = Arc::new(AtomicBool::new(false));
        let s = stop.clone();
        let thread = std::thread::spawn(move || {
            let mut peak = 0.0f64;
            while !s.load(Ordering::Relaxed) {
                let kids = proc::children_of(pid);
                if !kids.is_empty() {
                    let mut kib = proc::rss_kib(&kids);
                    if base > 0 {
                        kib += proc::rss_kib(&[pid]).saturating_sub(base);
                    }
                    peak = peak.max(kib as f64 / 1024.0 / kids.len() as f64);
                }
                std::thread::sleep(Duration::from_millis(10));
            }
            peak
        });
        Sampler { stop, thread }
    }

    /// Peak MiB per running child.
    fn stop(self) -> f64 {
        self.stop.store(true, Ordering::Relaxed);
        self.thread.join().unwrap_or(0.0)
    }
}

/// The ffmpeg command Spindle runs for `t`, reading `file` directly.
fn direct(
    o: &TranscodeOptions,
    t: &Target,
    file: &Path,
) -> Result<std::process::Child, BenchError> {
    let input = file.to_string_lossy();
    Command::new(&o.ffmpeg)
        .args(ffmpeg::args(t, &input))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .at("running ffmpeg")
}

/// Runs `job(0..n)` on `threads` threads; the first error wins.
fn parallel(
    threads: usize,
    n: usize,
    job: impl Fn(usize) -> Result<(), BenchError> + Sync,
) -> Result<(), BenchError> {
    let next = AtomicUsize::new(0);
    std::thread::scope(|s| {
        let hs: Vec<_> = (0..threads)
            .map(|_| {
                s.spawn(|| loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    if i >= n {
                        return Ok(());
                    }
                    job(i)?;
                })
            })
            .collect();
        let mut r = Ok(());
        for h in hs {
            match h.join() {
                Ok(Err(e)) if r.is_ok() => r = Err(e),
                Err(_) if r.is_ok() => r = Err(BenchError::Peer("a client thread panicked".into())),
                _ => {}
            }
        }
        r
    })
}

/// CPU seconds of the reaped children of `pid` (`cutime + cstime`).
fn children_cpu(pid: u32) -> Option<f64> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = &s[s.rfind(')')? + 2..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    let cu: f64 = f.get(13)?.parse().ok()?;
    let cs: f64 = f.get(14)?.parse().ok()?;
    Some((cu + cs) / 100.0)
}

/// `GET path` on a connection of its own: (status, served from the cache
/// (`Accept-Ranges: bytes`), bytes after the head, ms to the first byte).
fn get(addr: &str, path: &str) -> Result<(u16, bool, usize, f64), BenchError> {
    let t = Instant::now();
    let mut s = TcpStream::connect(addr).at("connecting to spindle serve")?;
    s.set_nodelay(true)?;
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )?;
    let mut buf = vec![0u8; 64 * 1024];
    let n = s.read(&mut buf)?;
    let first = t.elapsed().as_secs_f64() * 1000.0;
    let mut all = buf[..n].to_vec();
    s.read_to_end(&mut all)?;
    let head_end = all
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .unwrap_or(all.len());
    let head = String::from_utf8_lossy(&all[..head_end]).to_ascii_lowercase();
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    let cached = head.contains("accept-ranges: bytes");
    Ok((
        status,
        cached,
        all.len().saturating_sub(head_end + 4),
        first,
    ))
}

/// The song ids of the corpus, once the server has scanned it all.
fn song_ids(addr: &str, key: &str, want: usize) -> Result<Vec<String>, BenchError> {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let path =
            format!("/rest/search3?apiKey={key}&v=1.16.1&c=bench&f=json&query=&songCount=100000");
        let mut s = TcpStream::connect(addr)?;
        write!(
            s,
            "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
        )?;
        let mut all = Vec::new();
        s.read_to_end(&mut all)?;
        let body = all
            .windows(4)
            .position(|w| w == b"\r\n\r\n")
            .map_or(&all[..0], |i| &all[i + 4..]);
        let v: serde_json::Value = serde_json::from_slice(body).unwrap_or_default();
        let mut ids: Vec<(String, String)> = v["subsonic-response"]["searchResult3"]["song"]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|x| {
                        Some((
                            x["path"].as_str().or(x["title"].as_str())?.to_owned(),
                            x["id"].as_str()?.to_owned(),
                        ))
                    })
                    .collect()
            })
            .unwrap_or_default();
        if ids.len() >= want {
            ids.sort();
            return Ok(ids.into_iter().map(|(_, id)| id).collect());
        }
        if Instant::now() > deadline {
            return Err(BenchError::Peer(format!(
                "spindle serve lists {} of the {want} files after 60 s",
                ids.len()
            )));
        }
        std::thread::sleep(Duration::from_millis(300));
    }
}

fn median(mut v: Vec<f64>) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_format_flag_takes_a_format_and_refuses_raw_and_unknown_names() {
        assert_eq!(parse_format("Opus"), Ok(Format::Opus));
        assert_eq!(
            parse_format("raw"),
            Err("raw is no transcode: name a format to transcode to".to_owned())
        );
        assert!(parse_format("wav").unwrap_err().contains("unknown format"));
    }
}
