//! `spindle serve` ends promptly on SIGTERM while heavy searches run: the
//! shutdown cancels them, and the process does not wait on the blocking
//! threads they ran on. (A 40,000-term search once kept the server alive
//! for minutes after its signal.)

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "see clippy.toml")]
#![allow(clippy::panic, reason = "see clippy.toml")]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_spindle");

fn spindle(data: &Path, args: &[&str], stdin: &str) -> String {
    let mut child = Command::new(BIN)
        .arg("--data-dir")
        .arg(data)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(stdin.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "spindle {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

fn enc(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'*' | b'-' | b'.' | b'_' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// Sends a search3 with `query` in a form body; the answer is not
/// awaited past the shutdown.
fn search(addr: &str, key: &str, query: &str) -> std::thread::JoinHandle<()> {
    let addr = addr.to_owned();
    let body = format!("query={}", enc(query));
    let head = format!(
        "POST /rest/search3?f=json&v=1.16.1&c=t&apiKey={key} HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    std::thread::spawn(move || {
        if let Ok(mut s) = TcpStream::connect(&addr) {
            let _ = s.set_read_timeout(Some(Duration::from_secs(30)));
            let _ = s.write_all(head.as_bytes());
            let _ = s.write_all(body.as_bytes());
            let mut out = Vec::new();
            let _ = s.read_to_end(&mut out);
        }
    })
}

/// A fresh folder under the system's temp dir, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new(name: &str) -> TempDir {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let dir =
            std::env::temp_dir().join(format!("spindle-{name}-{}-{nanos}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }

    fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn sigterm_ends_the_server_within_seconds_while_heavy_searches_run() {
    let data = TempDir::new("sigterm-data");
    let music = TempDir::new("sigterm-music");
    // 20,000 entries whose titles make a backtracking glob slow.
    let entries: Vec<serde_json::Value> = (0..20_000)
        .map(|n| serde_json::json!({ "title": format!("{} {n}", "a".repeat(200)) }))
        .collect();
    let file = data.path().join("entries.json");
    std::fs::write(&file, serde_json::to_vec(&entries).unwrap()).unwrap();
    spindle(
        data.path(),
        &["db", "import-json", file.to_str().unwrap()],
        "",
    );
    spindle(data.path(), &["user", "add", "ann"], "pw\n");
    let key = spindle(data.path(), &["user", "token", "ann"], "")
        .trim()
        .to_owned();

    let mut server = Server(
        Command::new(BIN)
            .arg("--data-dir")
            .arg(data.path())
            .args(["serve", "--listen", "127.0.0.1:0", "--music"])
            .arg(music.path())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    // Kept open: the server prints "stopped" on its way out.
    let mut stdout = BufReader::new(server.0.stdout.take().unwrap());
    let mut line = String::new();
    stdout.read_line(&mut line).unwrap();
    let addr = line
        .split("http://")
        .nth(1)
        .and_then(|r| r.split('/').next())
        .unwrap_or_else(|| panic!("no URL in {line:?}"))
        .to_owned();

    // Heavy but within the network's limits (64 terms, under 4 KiB): each
    // glob backtracks over every title. And the 60,000-term AND of the
    // report, which is now refused at once.
    let glob = format!("title~*{}b", "a".repeat(50));
    let heavy = vec![glob.as_str(); 64].join(" OR ");
    let huge = vec!["title~a*"; 60_000].join(" AND ");
    let clients: Vec<_> = (0..3)
        .map(|_| search(&addr, &key, &heavy))
        .chain([search(&addr, &key, &huge)])
        .collect();
    std::thread::sleep(Duration::from_millis(700));

    let t = Instant::now();
    let killed = Command::new("kill")
        .args(["-TERM", &server.0.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let status = loop {
        if let Some(s) = server.0.try_wait().unwrap() {
            break Some(s);
        }
        if t.elapsed() > Duration::from_secs(10) {
            break None;
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let took = t.elapsed();
    let status = status.unwrap_or_else(|| panic!("still running {took:?} after SIGTERM"));
    eprintln!("the server exited {took:?} after SIGTERM ({status})");
    assert!(took < Duration::from_secs(3), "{took:?}");
    assert!(status.success(), "{status}");
    let mut rest = String::new();
    stdout.read_to_string(&mut rest).unwrap();
    assert!(rest.contains("spindle: stopped"), "{rest:?}");
    for c in clients {
        c.join().unwrap();
    }
}
