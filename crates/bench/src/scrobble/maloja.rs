//! The Maloja side of `bench scrobble`: malojaserver (from PyPI) as a
//! child process on a free loopback port, its data in a temporary folder,
//! an API key written to its `apikeys.yml` before it starts (Maloja's
//! setup creates one only when asked interactively), and its own
//! settings for an unattended start: `MALOJA_SKIP_SETUP`,
//! `MALOJA_FORCE_PASSWORD`, `MALOJA_HOST`, `MALOJA_PORT`. File logging is
//! off (`MALOJA_LOGGING=false`) as its fastest configuration.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::load;
use crate::error::{BenchError, Context};
use crate::proc::free_port;

/// A running Maloja.
pub struct Maloja {
    child: Child,
    dir: PathBuf,
    pub host: String,
    pub api_key: String,
}

/// The `maloja` executable: the flag, else `.venv/bin/maloja` in this
/// directory or one above it, else `maloja` on PATH.
pub fn find(flag: Option<&Path>) -> Option<PathBuf> {
    if let Some(p) = flag {
        return Some(p.to_owned());
    }
    let mut dir = std::env::current_dir().ok();
    while let Some(d) = dir {
        let p = d.join(".venv/bin/maloja");
        if p.is_file() {
            return Some(p);
        }
        dir = d.parent().map(Path::to_owned);
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join("maloja"))
        .find(|p| p.is_file())
}

impl Maloja {
    /// Starts Maloja and waits until its API answers.
    pub fn start(exe: &Path) -> Result<Maloja, BenchError> {
        let dir = std::env::temp_dir().join(format!("spindle-bench-maloja-{}", std::process::id()));
        std::fs::create_dir_all(&dir)?;
        let api_key = spindle_server::accounts::random_hex();
        std::fs::write(dir.join("apikeys.yml"), format!("bench: {api_key}\n"))?;
        let port = free_port()?;
        let host = format!("127.0.0.1:{port}");
        let log = std::fs::File::create(dir.join("maloja.out"))?;
        let child = Command::new(exe)
            .arg("run")
            .current_dir(&dir)
            .env("MALOJA_DATA_DIRECTORY", &dir)
            .env("MALOJA_HOST", "127.0.0.1")
            .env("MALOJA_PORT", port.to_string())
            .env("MALOJA_SKIP_SETUP", "yes")
            .env(
                "MALOJA_FORCE_PASSWORD",
                spindle_server::accounts::random_hex(),
            )
            .env("MALOJA_LOGGING", "false")
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log)
            .spawn()
            .at_with(|| format!("starting {}", exe.display()))?;
        let mut m = Maloja {
            child,
            dir,
            host,
            api_key,
        };
        let t = Instant::now();
        loop {
            let probe = format!(
                "GET /apis/mlj_1/serverinfo HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n\r\n",
                m.host
            );
            if let Ok(r) = load::once(&m.host, probe.as_bytes()) {
                if r.status == 200 {
                    return Ok(m);
                }
            }
            if let Some(st) = m.child.try_wait()? {
                return Err(BenchError::Peer(format!(
                    "maloja exited ({st}) before answering; see its output:\n{}",
                    m.output()
                )));
            }
            if t.elapsed() > Duration::from_secs(120) {
                return Err(BenchError::Peer(format!(
                    "maloja did not answer within 120 s:\n{}",
                    m.output()
                )));
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    fn output(&self) -> String {
        let s = std::fs::read_to_string(self.dir.join("maloja.out")).unwrap_or_default();
        let lines: Vec<&str> = s.lines().collect();
        lines[lines.len().saturating_sub(20)..].join("\n")
    }

    /// A Last.fm session key: Maloja takes its API key as the password of
    /// `auth.getMobileSession`.
    pub fn session(&self) -> Result<String, BenchError> {
        let body = format!(
            "method=auth.getMobileSession&username=bench&password={}",
            self.api_key
        );
        let r = load::once(&self.host, &self.lastfm_request(&body))?;
        r.body
            .split("<key>")
            .nth(1)
            .and_then(|r| r.split('<').next())
            .map(str::to_owned)
            .ok_or_else(|| BenchError::Peer(format!("no session key from maloja: {}", r.body)))
    }

    pub fn lastfm_request(&self, body: &str) -> Vec<u8> {
        load::request(
            &self.host,
            "/apis/audioscrobbler/2.0/",
            "",
            "application/x-www-form-urlencoded",
            body,
        )
    }

    pub fn listenbrainz_request(&self, body: &str) -> Vec<u8> {
        load::request(
            &self.host,
            "/apis/listenbrainz/1/submit-listens",
            &format!("Authorization: Token {}\r\n", self.api_key),
            "application/json",
            body,
        )
    }

    /// Scrobbles in Maloja's database, counted with its own Python (its
    /// API counts only a default time range).
    pub fn stored(&self, exe: &Path) -> Option<usize> {
        let python = exe.parent()?.join("python");
        let db = self.dir.join("malojadb.sqlite");
        let out = Command::new(python)
            .args([
                "-c",
                "import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute('select count(*) from scrobbles').fetchone()[0])",
            ])
            .arg(db)
            .output()
            .ok()?;
        String::from_utf8_lossy(&out.stdout).trim().parse().ok()
    }
}

impl Drop for Maloja {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
