//! The listeners test of `bench stream`: N concurrent connections, each
//! playing a track at 320 kbit/s (40,000 bytes a second after a small
//! start buffer) for a set time. Each socket has a small receive buffer,
//! so TCP backpressure paces the server rather than the client's memory.
//! A *stall* is a wait of more than a second for bytes the player wanted.
//! Meanwhile the server's resident memory is sampled; the growth over its
//! idle RSS divided by the connections is its memory per listener.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};

use crate::error::{BenchError, Context};
use crate::proc::rss_kib;

/// Bytes a second of a 320 kbit/s stream.
pub const RATE: u64 = 40_000;
/// What a player buffers before it starts (two seconds).
const PREBUFFER: u64 = 2 * RATE;
/// The client's socket receive buffer (the kernel doubles it): small next
/// to a track, so the server is paced by TCP, yet above loopback's MSS
/// (64 KiB), below which window updates wait for the persist timer and
/// every server would seem to stall.
const RCVBUF: u32 = 64 * 1024;
/// The player reads in blocks of this size (ffmpeg's HTTP reader, under
/// mpv and most players, asks for 32 KiB at a time; 16 KiB keeps the
/// pacing fine-grained while 5,000 players cost the client a quarter of
/// the wake-ups 4 KiB did).
const BLOCK: u64 = 16 * 1024;
/// No bytes for this long while the player wants some: a stall.
const STALL: Duration = Duration::from_secs(1);

/// What the listeners saw and what the server used.
#[derive(Debug, Clone, Default)]
pub struct Outcome {
    pub listeners: usize,
    /// Listeners that connected and got a first byte.
    pub connected: usize,
    pub stalls: u64,
    /// Of `stalls`, those waiting for a track's first byte after asking.
    pub start_stalls: u64,
    /// Connections that failed (connect, status, read errors).
    pub failures: u64,
    pub bytes: u64,
    pub secs: f64,
    /// The server's RSS before the listeners came, and the most seen while
    /// they listened, in KiB.
    pub rss_idle_kib: u64,
    pub rss_peak_kib: u64,
    /// The longest wait for a wanted byte, in ms.
    pub worst_wait_ms: u64,
}

impl Outcome {
    /// Server memory per listener in KiB.
    pub fn kib_per_listener(&self) -> f64 {
        self.rss_peak_kib.saturating_sub(self.rss_idle_kib) as f64 / self.listeners.max(1) as f64
    }
}

#[derive(Default)]
struct Counters {
    connected: AtomicU64,
    stalls: AtomicU64,
    start_stalls: AtomicU64,
    failures: AtomicU64,
    bytes: AtomicU64,
    worst_wait_ms: AtomicU64,
}

/// Runs `listeners` paced clients against `127.0.0.1:port`, each taking
/// the paths in turn from `paths` (offset by its number), for `secs`;
/// `pids` gives the server's processes to sample. `cpus`: the CPUs the
/// client's threads run on (empty: anywhere).
pub fn run(
    port: u16,
    paths: &[String],
    listeners: usize,
    secs: u64,
    pids: &dyn Fn() -> Vec<u32>,
    cpus: &[usize],
) -> Result<Outcome, BenchError> {
    let threads = cpus.len().clamp(1, 4);
    let pin = cpus.to_vec();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(threads)
        .enable_all()
        .on_thread_start(move || {
            if !pin.is_empty() {
                let _ = spindle_io::pin_current_thread(&pin);
            }
        })
        .build()
        .at("starting the listeners' runtime")?;
    let rss_idle_kib = rss_kib(&pids());
    let counters = Arc::new(Counters::default());
    let paths: Arc<Vec<String>> = Arc::new(paths.to_vec());
    let started = Instant::now();
    let listen = Duration::from_secs(secs);
    let mut rss_peak_kib = rss_idle_kib;
    rt.block_on(async {
        let mut tasks = Vec::with_capacity(listeners);
        for n in 0..listeners {
            let (c, p) = (counters.clone(), paths.clone());
            tasks.push(tokio::spawn(async move {
                if listener(port, &p, n, listen, &c).await.is_err() {
                    c.failures.fetch_add(1, Ordering::Relaxed);
                }
            }));
            // Ramp up: 500 new connections per 50 ms, so the accept
            // backlog is never the bottleneck being measured.
            if n % 500 == 499 {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
        // Sample the server's memory while they listen.
        let sampling = async {
            loop {
                tokio::time::sleep(Duration::from_millis(500)).await;
                rss_peak_kib = rss_peak_kib.max(rss_kib(&pids()));
            }
        };
        let all = async {
            for t in tasks {
                let _ = t.await;
            }
        };
        tokio::select! {
            () = all => {}
            () = sampling => {}
        }
    });
    rt.shutdown_timeout(Duration::from_secs(1));
    Ok(Outcome {
        listeners,
        connected: counters.connected.load(Ordering::Relaxed) as usize,
        stalls: counters.stalls.load(Ordering::Relaxed),
        start_stalls: counters.start_stalls.load(Ordering::Relaxed),
        failures: counters.failures.load(Ordering::Relaxed),
        bytes: counters.bytes.load(Ordering::Relaxed),
        secs: started.elapsed().as_secs_f64(),
        rss_idle_kib,
        rss_peak_kib,
        worst_wait_ms: counters.worst_wait_ms.load(Ordering::Relaxed),
    })
}

/// One listener: plays tracks back to back over one keep-alive
/// connection until `listen` has passed since its first byte.
async fn listener(
    port: u16,
    paths: &[String],
    n: usize,
    listen: Duration,
    c: &Counters,
) -> std::io::Result<()> {
    // Any failure only counts: the listener is one of the failures.
    let fail = |what: String| std::io::Error::other(what);
    let sock = tokio::net::TcpSocket::new_v4()?;
    sock.set_recv_buffer_size(RCVBUF)?;
    let stream = sock
        .connect(std::net::SocketAddr::from(([127, 0, 0, 1], port)))
        .await?;
    let (rd, mut wr) = stream.into_split();
    let mut rd = BufReader::with_capacity(4096, rd);
    let mut buf = vec![0u8; BLOCK as usize];
    let mut first: Option<Instant> = None;
    let mut track = n;
    loop {
        let path = &paths[track % paths.len()];
        track += 1;
        wr.write_all(format!("GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n").as_bytes())
            .await?;
        let asked = Instant::now();
        let mut len: Option<u64> = None;
        let mut status = 0u16;
        let mut line = String::new();
        loop {
            line.clear();
            if rd.read_line(&mut line).await? == 0 {
                return Err(fail("connection closed".into()));
            }
            let l = line.trim_end();
            if l.is_empty() {
                break;
            }
            if status == 0 {
                status = l
                    .split(' ')
                    .nth(1)
                    .and_then(|s| s.parse().ok())
                    .unwrap_or(0);
            } else if let Some((k, v)) = l.split_once(':') {
                if k.eq_ignore_ascii_case("content-length") {
                    len = v.trim().parse().ok();
                }
            }
        }
        if status != 200 {
            return Err(fail(format!("status {status} for {path}")));
        }
        let len = len.ok_or_else(|| fail("no Content-Length".into()))?;
        if first.is_none() {
            first = Some(Instant::now());
            c.connected.fetch_add(1, Ordering::Relaxed);
        }
        let play_start = Instant::now();
        let mut got = 0u64;
        // Since when the player has wanted a block it does not have (from
        // the request, for the first one: the time to first byte counts).
        let mut hungry_since = Some(asked);
        while got < len {
            if first.is_some_and(|f| f.elapsed() >= listen) {
                return Ok(());
            }
            // The player wants PREBUFFER ahead of what it has played.
            let wanted = PREBUFFER + play_start.elapsed().as_millis() as u64 * RATE / 1000;
            // Read a block at a time, as a player does (and so that
            // 5,000 listeners do not cost the client a read per byte).
            let block = BLOCK.min(len - got);
            if got + block > wanted {
                let ahead = got + block - wanted;
                tokio::time::sleep(Duration::from_micros(ahead * 1_000_000 / RATE)).await;
                continue;
            }
            let since = *hungry_since.get_or_insert_with(Instant::now);
            let want = ((wanted - got).min(len - got) as usize).min(buf.len());
            let k = rd.read(&mut buf[..want]).await?;
            if k == 0 {
                return Err(fail("connection closed mid-track".into()));
            }
            let waited = since.elapsed();
            if waited > STALL {
                c.stalls.fetch_add(1, Ordering::Relaxed);
                if got == 0 {
                    c.start_stalls.fetch_add(1, Ordering::Relaxed);
                }
            }
            c.worst_wait_ms
                .fetch_max(waited.as_millis() as u64, Ordering::Relaxed);
            hungry_since = None;
            got += k as u64;
            c.bytes.fetch_add(k as u64, Ordering::Relaxed);
        }
    }
}
