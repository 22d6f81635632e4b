//! The load generator of `bench scrobble`: keep-alive HTTP/1.1 clients on
//! loopback, each sending requests built before the clock starts (so the
//! clients spend their CPU on the wire, not on formatting), timing each
//! round trip; and the CPU time a server process used meanwhile.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use crate::error::BenchError;
use crate::proc::cpu_secs;

/// One HTTP request, ready to write.
pub fn request(host: &str, path: &str, headers: &str, content_type: &str, body: &str) -> Vec<u8> {
    format!(
        "POST {path} HTTP/1.1\r\nHost: {host}\r\n{headers}Content-Type: {content_type}\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

/// A response: status and body.
#[derive(Debug, Clone)]
pub struct Reply {
    pub status: u16,
    pub body: String,
}

/// Reads one response (Content-Length or chunked).
fn read_reply(conn: &mut BufReader<TcpStream>) -> Result<Reply, BenchError> {
    let bad = |what: &str| BenchError::Peer(what.to_owned());
    let mut line = String::new();
    let mut status = 0u16;
    let mut len = 0usize;
    let mut chunked = false;
    loop {
        line.clear();
        if conn.read_line(&mut line)? == 0 {
            return Err(BenchError::Peer("connection closed".into()));
        }
        let l = line.trim_end();
        if l.is_empty() {
            if status == 100 {
                status = 0;
                continue;
            }
            break;
        }
        if status == 0 {
            status = l
                .split(' ')
                .nth(1)
                .and_then(|s| s.parse().ok())
                .ok_or_else(|| bad("bad status line"))?;
            continue;
        }
        let lower = l.to_ascii_lowercase();
        if let Some(v) = lower.strip_prefix("content-length:") {
            len = v.trim().parse().map_err(|_| bad("bad Content-Length"))?;
        } else if lower.starts_with("transfer-encoding:") && lower.contains("chunked") {
            chunked = true;
        }
    }
    let mut body = Vec::new();
    if chunked {
        loop {
            line.clear();
            conn.read_line(&mut line)?;
            let n = usize::from_str_radix(line.trim().split(';').next().unwrap_or(""), 16)
                .map_err(|_| bad("bad chunk size"))?;
            let mut chunk = vec![0u8; n + 2];
            conn.read_exact(&mut chunk)?;
            if n == 0 {
                break;
            }
            body.extend_from_slice(&chunk[..n]);
        }
    } else {
        body.resize(len, 0);
        conn.read_exact(&mut body)?;
    }
    Ok(Reply {
        status,
        body: String::from_utf8_lossy(&body).into_owned(),
    })
}

/// Sends one request on a new connection.
pub fn once(host: &str, req: &[u8]) -> Result<Reply, BenchError> {
    let mut conn = BufReader::new(TcpStream::connect(host)?);
    conn.get_mut().write_all(req)?;
    read_reply(&mut conn)
}

/// What a run of the clients measured.
#[derive(Debug, Clone)]
pub struct Outcome {
    pub accepted: usize,
    pub failed_requests: usize,
    pub first_failure: Option<String>,
    pub secs: f64,
    pub p99: Duration,
    /// CPU seconds the server process used during the run.
    pub server_cpu: Option<f64>,
}

impl Outcome {
    pub fn rate(&self) -> f64 {
        self.accepted as f64 / self.secs
    }
}

/// Sends `per_client[c]` from client `c`, all clients at once; `accepted`
/// counts the scrobbles a reply accepted.
pub fn drive(
    host: &str,
    per_client: Vec<Vec<Vec<u8>>>,
    server_pid: u32,
    accepted: &(dyn Fn(&Reply) -> usize + Sync),
) -> Result<Outcome, BenchError> {
    let cpu0 = cpu_secs(server_pid);
    let start = Instant::now();
    type ClientResult = Result<(Vec<Duration>, usize, usize, Option<String>), BenchError>;
    let results: Vec<ClientResult> = std::thread::scope(|s| {
        let hs: Vec<_> = per_client
            .into_iter()
            .map(|reqs| {
                s.spawn(move || -> ClientResult {
                    let mut conn = BufReader::new(TcpStream::connect(host)?);
                    conn.get_ref().set_nodelay(true)?;
                    let mut lat = Vec::with_capacity(reqs.len());
                    let (mut ok, mut failed, mut first) = (0, 0, None);
                    for req in &reqs {
                        let t = Instant::now();
                        conn.get_mut().write_all(req)?;
                        let r = read_reply(&mut conn)?;
                        lat.push(t.elapsed());
                        let n = accepted(&r);
                        if n == 0 {
                            failed += 1;
                            first.get_or_insert_with(|| {
                                format!("HTTP {}: {}", r.status, r.body.trim())
                            });
                        }
                        ok += n;
                    }
                    Ok((lat, ok, failed, first))
                })
            })
            .collect();
        hs.into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(BenchError::Peer("a client panicked".into())))
            })
            .collect()
    });
    let secs = start.elapsed().as_secs_f64();
    let server_cpu = match (cpu0, cpu_secs(server_pid)) {
        (Some(a), Some(b)) => Some(b - a),
        _ => None,
    };
    let mut lat = Vec::new();
    let (mut ok, mut failed, mut first_failure) = (0, 0, None);
    for r in results {
        let (l, a, f, first) = r?;
        lat.extend(l);
        ok += a;
        failed += f;
        first_failure = first_failure.or(first);
    }
    lat.sort();
    let p99 = lat
        .get((lat.len() * 99 / 100).min(lat.len().saturating_sub(1)))
        .copied()
        .unwrap_or_default();
    Ok(Outcome {
        accepted: ok,
        failed_requests: failed,
        first_failure,
        secs,
        p99,
        server_cpu,
    })
}
