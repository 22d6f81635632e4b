//! The servers under test of `bench stream`: a fresh `spindle serve` per
//! IO engine over the corpus (with a user `bench` and its API key, the
//! Subsonic `stream` URL of every track) and nginx over the same folder,
//! and the check that each sends the right bytes.

use std::ffi::OsStr;
use std::io::{Read, Write};
use std::path::Path;
use std::process::Stdio;

use super::corpus::Track;
use super::nginx::Nginx;
use super::tables::ServerLabel;
use crate::error::{BenchError, Context};
use crate::spindle;

enum Process {
    Spindle(spindle::Serve),
    Nginx(Nginx),
}

/// A running server with the URL path of every corpus track, in order.
pub struct Contestant {
    pub label: ServerLabel,
    pub paths: Vec<String>,
    process: Process,
}

impl Contestant {
    /// A fresh `spindle serve --io-engine ENGINE --music CORPUS` under
    /// `prefix`, with a user `bench`.
    pub fn spindle(
        exe: &Path,
        data: &Path,
        corpus: &Path,
        engine: &str,
        prefix: &[String],
        tracks: &[Track],
    ) -> Result<Contestant, BenchError> {
        std::fs::create_dir_all(data)?;
        spindle::cli(exe, data, &["user", "add", "bench"], "benchpw\n")?;
        let key = spindle::cli(exe, data, &["user", "token", "bench"], "")?
            .trim()
            .to_owned();
        let args: [&OsStr; 4] = [
            "--music".as_ref(),
            corpus.as_os_str(),
            "--io-engine".as_ref(),
            engine.as_ref(),
        ];
        let serve = spindle::Serve::start(exe, data, &args, prefix, Stdio::null())
            .at_with(|| format!("spindle serve --io-engine {engine}"))?;
        // Song ids by file: the library entry id is the Subsonic song id.
        let json = spindle::cli(
            exe,
            data,
            &["query", "*", "--fetch", "id,url", "--format", "json"],
            "",
        )?;
        let rows: Vec<serde_json::Value> =
            serde_json::from_str(&json).at("reading the output of spindle query")?;
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
                    .ok_or_else(|| {
                        BenchError::Peer(format!("spindle serve did not scan {}", t.rel))
                    })
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Contestant {
            label: ServerLabel {
                name: format!("Spindle ({engine})"),
                engine: Some(engine.to_owned()),
            },
            paths,
            process: Process::Spindle(serve),
        })
    }

    /// nginx over the corpus, its config in `work`.
    pub fn nginx(
        exe: &Path,
        work: &Path,
        corpus: &Path,
        prefix: &[String],
        tracks: &[Track],
    ) -> Result<Contestant, BenchError> {
        let n = Nginx::start(exe, work, corpus, prefix)?;
        Ok(Contestant {
            label: ServerLabel {
                name: "nginx".into(),
                engine: None,
            },
            paths: tracks.iter().map(|t| format!("/{}", t.rel)).collect(),
            process: Process::Nginx(n),
        })
    }

    pub fn port(&self) -> u16 {
        match &self.process {
            Process::Spindle(s) => s.port,
            Process::Nginx(n) => n.port,
        }
    }

    /// The server's processes (nginx: the master and its workers).
    pub fn pids(&self) -> Vec<u32> {
        match &self.process {
            Process::Spindle(s) => vec![s.pid()],
            Process::Nginx(n) => n.pids(),
        }
    }
}

/// GETs a whole file and a range over one connection each and compares
/// them with the file.
pub fn check_bytes(port: u16, path: &str, file: &Path) -> Result<(), BenchError> {
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
            .ok_or_else(|| BenchError::Peer("no end of headers".into()))?;
        let head = String::from_utf8_lossy(&all[..split]);
        let code = if range.is_some() { " 206 " } else { " 200 " };
        if !head.contains(code) {
            return Err(BenchError::Peer(format!("wanted{code}status, got: {head}")));
        }
        if all[split + 4..] != *expect {
            return Err(BenchError::Peer("body differs from the file".into()));
        }
    }
    Ok(())
}
