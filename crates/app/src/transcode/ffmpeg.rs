//! One encode: ffmpeg as a child process reading the source file (or a
//! tiers stream on its stdin) and writing the transcode to its stdout,
//! which a pump task sends to the client and, when the cache keeps it,
//! tees into a hot-folder copy.
//!
//! - The first bytes are awaited before anything is answered: an ffmpeg
//!   that cannot read the file fails with a clear error and nothing sent.
//! - The body ends only once ffmpeg has exited 0. A failure later (a
//!   non-zero exit, a read error) ends the body with an error, which
//!   aborts the connection: the client never sees a truncated stream
//!   that looks complete.
//! - A client that leaves (the body dropped) kills ffmpeg at once and the
//!   pump reaps it: no zombie, no orphan, and its copy is discarded.
//! - A client that falls behind the minimum pace ([`super::pace`]) is
//!   cut off the same way, its body ending with an error.
//! - The slot ([`super::gate::Permit`]) is held until ffmpeg is reaped.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::process::{Child, Command};
use tokio::sync::mpsc;

use super::cache::Cache;
use super::gate::Permit;
use super::pace::{Pace, Progress};
use super::plan::Target;
use spindle_tiers::hot::HotWriter;

/// Bytes read from ffmpeg per chunk.
pub const CHUNK: usize = 64 * 1024;
/// Chunks queued between ffmpeg and a slow client (ffmpeg then waits:
/// an encode runs at the pace its client reads).
pub const QUEUED_CHUNKS: usize = 4;
/// The tail of ffmpeg's stderr kept for error messages.
pub const STDERR_TAIL: usize = 2048;
/// Bytes of output awaited before a response starts (or the end of
/// the output, whichever comes first): enough that a file ffmpeg cannot
/// decode fails before anything was sent.
pub const FIRST_BYTES: usize = 8192;

/// What ffmpeg reads.
pub(crate) enum Input {
    /// The file, opened through its music folder's checked open; ffmpeg
    /// reads it as `/dev/stdin` (seekable: a new description of the same
    /// file, no path of the request ever reaches ffmpeg).
    File(std::fs::File),
    /// A stream of the file's bytes (the storage tiers' failover reader),
    /// written to ffmpeg's stdin.
    Stream(Box<spindle_tiers::TierStream>),
}

/// Why an encode did not start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EncodeError {
    #[error("cannot run ffmpeg ({}): {source}; install ffmpeg or set `ffmpeg` in the [transcode] section of the server config", ffmpeg.display())]
    Spawn {
        ffmpeg: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("ffmpeg could not transcode {name} to {format}: {reason}")]
    Failed {
        name: String,
        format: &'static str,
        reason: String,
    },
}

/// The ffmpeg arguments of an encode of `target` reading `input` (a path
/// or `pipe:0`).
pub fn args(target: &Target, input: &str) -> Vec<String> {
    // `-progress` reports the audio time encoded (to stderr, read at the
    // end): a file that decodes to nothing is told from a quiet one.
    let mut a: Vec<String> = [
        "-nostdin",
        "-hide_banner",
        "-loglevel",
        "error",
        "-nostats",
        "-progress",
        "pipe:2",
    ]
    .iter()
    .map(|s| (*s).to_owned())
    .collect();
    if target.offset > 0.0 {
        a.push("-ss".into());
        a.push(format!("{:.3}", target.offset));
    }
    for s in ["-i", input, "-map", "0:a:0", "-vn"] {
        a.push(s.to_owned());
    }
    a.extend(target.format.ffmpeg_args(target.bitrate));
    a.push("pipe:1".into());
    a
}

/// An encode that has produced its first bytes.
pub(crate) struct Started {
    pub first: Bytes,
    child: Child,
    stdout: tokio::process::ChildStdout,
    stderr: tokio::task::JoinHandle<String>,
    feeder: Option<tokio::task::JoinHandle<()>>,
    permit: Permit,
    /// For logs: the file and the format.
    path: PathBuf,
    format: &'static str,
    /// Seconds of audio the output should hold (0: unknown).
    expected: f64,
}

/// Starts ffmpeg on `input` for `target` and waits for its first bytes;
/// `expected` is the seconds of audio the output should hold (0:
/// unknown).
pub(crate) async fn start(
    ffmpeg: &Path,
    input: Input,
    target: &Target,
    permit: Permit,
    path: &Path,
    expected: f64,
) -> Result<Started, EncodeError> {
    let arg = match &input {
        Input::File(_) => "/dev/stdin",
        Input::Stream(_) => "pipe:0",
    };
    let mut cmd = Command::new(ffmpeg);
    cmd.args(args(target, arg))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    let mut stream = None;
    match input {
        Input::File(f) => {
            cmd.stdin(Stdio::from(f));
        }
        Input::Stream(s) => {
            stream = Some(s);
            cmd.stdin(Stdio::piped());
        }
    }
    let mut child = cmd.spawn().map_err(|source| EncodeError::Spawn {
        ffmpeg: ffmpeg.to_owned(),
        source,
    })?;
    let feeder = match (stream, child.stdin.take()) {
        (Some(s), Some(mut w)) => Some(tokio::spawn(async move {
            use futures_core::Stream;
            let mut s = std::pin::pin!(s.into_stream());
            while let Some(Ok(chunk)) = std::future::poll_fn(|cx| s.as_mut().poll_next(cx)).await {
                if w.write_all(&chunk).await.is_err() {
                    break;
                }
            }
        })),
        _ => None,
    };
    let stderr = match child.stderr.take() {
        Some(e) => tokio::spawn(tail(e)),
        None => tokio::spawn(async { String::new() }),
    };
    let Some(mut stdout) = child.stdout.take() else {
        return Err(failed(path, target, "no output pipe".into()));
    };
    // The first bytes: a container header alone is not yet proof that
    // the file decodes, so up to FIRST_BYTES, or the end.
    let mut buf = vec![0u8; CHUNK];
    let mut n = 0;
    while n < FIRST_BYTES {
        match stdout.read(&mut buf[n..]).await {
            Ok(0) | Err(_) => break,
            Ok(k) => n += k,
        }
    }
    let ended = n < FIRST_BYTES;
    if ended {
        // All of it is here: answer only once ffmpeg says how it went.
        let status = child.wait().await;
        let err = stderr.await.unwrap_or_default();
        let reason = match status {
            // Next to no audio of a track that lasts: not a stream.
            Ok(s) if s.success() && (n == 0 || decoded_nothing(&err, expected)) => {
                Some(nothing(&err, expected))
            }
            Ok(s) if s.success() => None,
            Ok(s) => Some(format!("{s}: {}", last_line(&err))),
            Err(e) => Some(e.to_string()),
        };
        if let Some(f) = &feeder {
            f.abort();
        }
        let Some(reason) = reason else {
            buf.truncate(n);
            return Ok(Started {
                first: Bytes::from(buf),
                child,
                stdout,
                stderr: tokio::spawn(async { String::new() }),
                feeder,
                permit,
                path: path.to_owned(),
                format: target.format.name(),
                expected,
            });
        };
        tracing::warn!(path = %path.display(), "transcode of {} to {} failed: {reason}", path.display(), target.format.name());
        return Err(failed(path, target, reason));
    }
    buf.truncate(n);
    Ok(Started {
        first: Bytes::from(buf),
        child,
        stdout,
        stderr,
        feeder,
        permit,
        path: path.to_owned(),
        format: target.format.name(),
        expected,
    })
}

fn failed(path: &Path, target: &Target, reason: String) -> EncodeError {
    EncodeError::Failed {
        name: path.file_name().map_or_else(
            || path.display().to_string(),
            |n| n.to_string_lossy().into_owned(),
        ),
        format: target.format.name(),
        reason,
    }
}

/// The last [`STDERR_TAIL`] bytes of `r`.
async fn tail(mut r: impl AsyncRead + Unpin) -> String {
    let mut kept: Vec<u8> = Vec::new();
    let mut buf = [0u8; 1024];
    while let Ok(n) = r.read(&mut buf).await {
        if n == 0 {
            break;
        }
        kept.extend_from_slice(&buf[..n]);
        if kept.len() > STDERR_TAIL {
            kept.drain(..kept.len() - STDERR_TAIL);
        }
    }
    String::from_utf8_lossy(&kept).into_owned()
}

/// Whether a line is one of `-progress`'s `key=value` lines.
fn is_progress(l: &str) -> bool {
    l.split_once('=').is_some_and(|(k, _)| {
        !k.is_empty() && k.bytes().all(|b| b.is_ascii_lowercase() || b == b'_')
    })
}

/// ffmpeg's last error line (progress lines skipped).
fn last_line(s: &str) -> &str {
    s.lines()
        .rev()
        .map(str::trim)
        .find(|l| !l.is_empty() && !is_progress(l))
        .unwrap_or("no message")
}

/// The audio seconds ffmpeg says it encoded (its last `out_time_us`).
fn encoded_secs(err: &str) -> Option<f64> {
    err.lines()
        .rev()
        .find_map(|l| l.trim().strip_prefix("out_time_us="))
        .and_then(|v| v.parse::<f64>().ok())
        .map(|us| us / 1e6)
}

/// Whether ffmpeg, exiting 0, encoded next to no audio of a track that
/// should last `expected` seconds (2 s or more): a file it cannot decode.
fn decoded_nothing(err: &str, expected: f64) -> bool {
    expected >= 2.0 && encoded_secs(err).is_some_and(|s| s < 0.5)
}

/// The message of [`decoded_nothing`], with ffmpeg's last error if any.
fn nothing(err: &str, expected: f64) -> String {
    let got = encoded_secs(err).unwrap_or(0.0);
    let last = last_line(err);
    if last != "no message" {
        return format!(
            "it decoded {got:.1} s of the {expected:.0} s the track lasts ({last}); the file may be damaged"
        );
    }
    format!("it decoded {got:.1} s of the {expected:.0} s the track lasts; the file may be damaged")
}

/// Sends `s` to the returned channel (first chunk included), teeing it
/// into `copy` (kept through `cache` only after ffmpeg exited 0), until
/// ffmpeg is done or the receiver is dropped.
pub(crate) fn pump(
    s: Started,
    copy: Option<(Arc<Cache>, HotWriter)>,
    pace: Option<(Pace, Arc<Progress>)>,
) -> mpsc::Receiver<std::io::Result<Bytes>> {
    let (tx, rx) = mpsc::channel(QUEUED_CHUNKS);
    tokio::spawn(run_pump(s, copy, tx, pace));
    rx
}

/// Sends `chunk` to the client, judging its pace meanwhile: `Err` with
/// the reason when it fell behind, `Ok(false)` when it left.
async fn send_paced(
    tx: &mpsc::Sender<std::io::Result<Bytes>>,
    chunk: Bytes,
    pace: &mut Option<(Pace, Arc<Progress>)>,
    tick: &mut tokio::time::Interval,
    permit: &Permit,
) -> Result<bool, String> {
    let Some((judge, progress)) = pace.as_mut() else {
        return Ok(tx.send(Ok(chunk)).await.is_ok());
    };
    let send = tx.send(Ok(chunk));
    tokio::pin!(send);
    loop {
        tokio::select! {
            r = &mut send => return Ok(r.is_ok()),
            now = tick.tick() => {
                // A paused player keeps its encode while nobody else
                // needs the slot.
                if judge.too_slow(now.into_std(), progress.taken()) && permit.others_wait() {
                    progress.cut();
                    return Err(format!(
                        "the client took less than {} bytes in {:?}: cut off to free the slot",
                        judge.min_bytes(),
                        tick.period() * 4,
                    ));
                }
            }
        }
    }
}

async fn run_pump(
    s: Started,
    mut copy: Option<(Arc<Cache>, HotWriter)>,
    tx: mpsc::Sender<std::io::Result<Bytes>>,
    mut pace: Option<(Pace, Arc<Progress>)>,
) {
    let Started {
        first,
        mut child,
        mut stdout,
        stderr,
        feeder,
        permit,
        path,
        format,
        expected,
    } = s;
    let mut next = Some(first);
    let period = pace
        .as_ref()
        .map_or(Duration::from_secs(3600), |(p, _)| p.tick());
    let mut tick = tokio::time::interval_at(tokio::time::Instant::now() + period, period);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut slow = false;
    let outcome: Result<(), String> = loop {
        if let Some(chunk) = next.take() {
            if let Some((_, w)) = copy.as_mut() {
                if let Err(e) = w.write(&chunk) {
                    tracing::info!("transcode cache: {e}");
                    copy = None;
                }
            }
            match send_paced(&tx, chunk, &mut pace, &mut tick, &permit).await {
                Ok(true) => {}
                Ok(false) => break Err(String::new()),
                Err(e) => {
                    slow = true;
                    break Err(e);
                }
            }
        }
        let mut buf = vec![0u8; CHUNK];
        tokio::select! {
            () = tx.closed() => break Err(String::new()),
            // Waiting for ffmpeg is not the client's fault: only noted.
            now = tick.tick() => {
                if let Some((judge, progress)) = pace.as_mut() {
                    judge.too_slow(now.into_std(), progress.taken());
                }
            }
            r = stdout.read(&mut buf) => match r {
                Ok(0) => break Ok(()),
                Ok(n) => {
                    buf.truncate(n);
                    next = Some(Bytes::from(buf));
                }
                Err(e) => break Err(format!("reading ffmpeg's output: {e}")),
            },
        }
    };
    let left = matches!(&outcome, Err(e) if e.is_empty());
    if outcome.is_err() {
        // The client left, or the output failed: stop ffmpeg now.
        let _ = child.start_kill();
    }
    let status = child.wait().await;
    if let Some(f) = feeder {
        f.abort();
    }
    let err = stderr.await.unwrap_or_default();
    drop(permit);
    if left {
        tracing::debug!(path = %path.display(), "transcode to {format} stopped: the client left");
        return;
    }
    if slow {
        // The client reads too little to take an error frame: the body
        // sees the cut when it is next polled, or the connection closes.
        tracing::info!(path = %path.display(), "transcode of {} to {format} stopped: {}", path.display(), outcome.err().unwrap_or_default());
        return;
    }
    let failure = match (outcome, status) {
        (Err(e), _) => Some(e),
        // Headers and next to no audio: a file ffmpeg could not decode.
        (Ok(()), Ok(st)) if st.success() && decoded_nothing(&err, expected) => {
            Some(nothing(&err, expected))
        }
        (Ok(()), Ok(st)) if st.success() => None,
        (Ok(()), Ok(st)) => Some(format!("ffmpeg {st}: {}", last_line(&err))),
        (Ok(()), Err(e)) => Some(format!("waiting for ffmpeg: {e}")),
    };
    match failure {
        None => {
            if let Some((cache, w)) = copy {
                let _ = crate::offload::run(move || super::cache::finish(&cache, w)).await;
            }
            // Dropping the sender ends the body: complete.
        }
        Some(reason) => {
            tracing::warn!(path = %path.display(), "transcode of {} to {format} failed mid-stream: {reason}", path.display());
            let _ = tx.send(Err(std::io::Error::other(reason))).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transcode::format::Format;

    #[test]
    fn progress_tells_a_file_that_decodes_to_nothing_from_a_quiet_one() {
        let broken = "[flac @ 0x1] invalid sync code\nout_time_us=0\nspeed=   0x\nprogress=end\n";
        let quiet = "out_time_us=9000000\nprogress=continue\nout_time_us=19990000\nprogress=end\n";
        assert!(decoded_nothing(broken, 20.0));
        assert!(!decoded_nothing(quiet, 20.0));
        assert!(
            !decoded_nothing(broken, 1.0),
            "a track under 2 s may be that short"
        );
        assert_eq!(last_line(broken), "[flac @ 0x1] invalid sync code");
        assert!(nothing(broken, 20.0).contains("0.0 s of the 20 s"));
    }

    #[test]
    fn a_seek_goes_before_the_input_and_the_output_is_stdout() {
        let t = Target {
            format: Format::Opus,
            bitrate: 96,
            offset: 12.5,
        };
        let a = args(&t, "/dev/stdin");
        let pos = |s: &str| a.iter().position(|x| x == s).unwrap();
        assert!(pos("-ss") < pos("-i"));
        assert_eq!(a[pos("-ss") + 1], "12.500");
        assert_eq!(a.last().unwrap(), "pipe:1");
        assert!(a.contains(&"libopus".to_owned()) && a.contains(&"96k".to_owned()));
        assert!(a.contains(&"-progress".to_owned()));
        let no_seek = args(&Target { offset: 0.0, ..t }, "pipe:0");
        assert!(!no_seek.contains(&"-ss".to_owned()));
    }
}
