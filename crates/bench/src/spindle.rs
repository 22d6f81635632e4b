//! The `spindle` binary as a contestant: its commands run against a data
//! folder (`user add`, `apikey add`, `query`), and `spindle serve` started
//! on a free loopback port, read for the address it prints first.
//!
//! The harnesses get the binary's path from their caller (the binary
//! passes its own), so this crate never assumes where it is installed.

use std::ffi::OsStr;
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, Stdio};

use crate::error::{BenchError, Context};
use crate::proc;

/// Runs `spindle --data-dir DATA ARGS…` with `stdin`, returning its
/// standard output; a failure carries its standard error.
pub fn cli(exe: &Path, data: &Path, args: &[&str], stdin: &str) -> Result<String, BenchError> {
    let mut c = std::process::Command::new(exe)
        .arg("--data-dir")
        .arg(data)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .at_with(|| format!("running spindle {}", args.join(" ")))?;
    if let Some(mut input) = c.stdin.take() {
        input.write_all(stdin.as_bytes())?;
    }
    let out = c.wait_with_output()?;
    if !out.status.success() {
        return Err(BenchError::Peer(format!(
            "spindle {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr)
        )));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// A running `spindle serve`; stopped by SIGTERM on drop.
pub struct Serve {
    child: Child,
    /// `127.0.0.1:PORT`, from the URL it printed.
    pub host: String,
    pub port: u16,
}

impl Serve {
    /// Starts `PREFIX… spindle --data-dir DATA serve --listen
    /// 127.0.0.1:0 ARGS…` and waits for the `serving http://…` line.
    /// `stderr`: where the server's log goes.
    pub fn start(
        exe: &Path,
        data: &Path,
        args: &[&OsStr],
        prefix: &[String],
        stderr: Stdio,
    ) -> Result<Serve, BenchError> {
        let mut cmd = proc::command(prefix, exe);
        cmd.arg("--data-dir")
            .arg(data)
            .args(["serve", "--listen", "127.0.0.1:0"])
            .args(args);
        let mut child = cmd
            .stdout(Stdio::piped())
            .stderr(stderr)
            .spawn()
            .at("starting spindle serve")?;
        let first = match read_url_line(&mut child) {
            Ok(line) => line,
            Err(e) => {
                proc::terminate(&mut child);
                return Err(e);
            }
        };
        let host = first
            .split("http://")
            .nth(1)
            .and_then(|r| r.split('/').next())
            .map(str::to_owned);
        let port = host
            .as_deref()
            .and_then(|h| h.rsplit(':').next())
            .and_then(|p| p.parse::<u16>().ok());
        let mut serve = Serve {
            child,
            host: host.unwrap_or_default(),
            port: port.unwrap_or(0),
        };
        if port.is_none() {
            proc::terminate(&mut serve.child);
            return Err(BenchError::Peer(format!(
                "no port in the URL spindle serve printed: {}",
                first.trim_end()
            )));
        }
        Ok(serve)
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }
}

/// Reads the child's stdout up to the `serving http://` line, then keeps
/// draining it on a thread, so the server never blocks on a full pipe.
fn read_url_line(child: &mut Child) -> Result<String, BenchError> {
    let stdout = child
        .stdout
        .take()
        .ok_or_else(|| BenchError::Peer("spindle serve has no stdout".into()))?;
    let mut out = BufReader::new(stdout);
    let mut first = String::new();
    while !first.contains("serving http://") {
        first.clear();
        if out.read_line(&mut first)? == 0 {
            return Err(BenchError::Peer(
                "spindle serve exited without printing its URL".into(),
            ));
        }
    }
    std::thread::spawn(move || std::io::copy(&mut out, &mut std::io::sink()));
    Ok(first)
}

impl Drop for Serve {
    fn drop(&mut self) {
        proc::terminate(&mut self.child);
    }
}
