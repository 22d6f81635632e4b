//! `bench subsonic`: the latency of the Subsonic browsing and search
//! methods over a large generated library, on loopback.
//!
//! The library of [`crate::gen`] (N tracks) is loaded into a fresh store
//! whose entries point into a music folder of empty files laid out as the
//! generator names them (`Artist/Album/NN Title.ext`), so the folder
//! methods walk a real tree; no scan runs, the entries are the tags. The
//! server runs in this process (the same [`spindle_server::serve`] as
//! `spindle serve`) on a loopback port; requests go over HTTP one at a
//! time, each on a new connection ([`crate::scrobble::load::once`]), with
//! an API key and `f=json`. One untimed round warms the catalog and its
//! views; then every method gets `requests` timed requests, and the
//! report gives p50, p99 and the largest time of each against the target
//! (p99 under [`TARGET_P99`]).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use spindle_query::Value;
use spindle_server::{Accounts, AppState, Config, Music, SystemClock};
use spindle_store::{Db, Op};

use crate::error::{BenchError, Context};
use crate::gen::Generator;
use crate::scrobble::load::once;

/// The p99 each method should stay under.
pub const TARGET_P99: Duration = Duration::from_millis(5);
/// Tracks committed to the store at once while loading.
const LOAD_BATCH: usize = 5000;
/// The user the benchmark asks as.
const USER: &str = "bench";

/// What to run: the options of `spindle bench subsonic`.
#[derive(Debug, Clone, clap::Args)]
pub struct SubsonicOptions {
    /// Tracks in the generated library.
    #[arg(long, default_value_t = 100_000)]
    pub tracks: u32,
    /// Timed requests per method.
    #[arg(long, default_value_t = 500)]
    pub requests: usize,
    /// Seed of the generated library.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Keep the library and its music folder in DIR and reuse them next
    /// time (default: a temporary folder, removed afterwards).
    #[arg(long, value_name = "DIR")]
    pub keep: Option<PathBuf>,
}

/// One method's times.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Row {
    pub method: String,
    pub requests: usize,
    pub p50_ms: f64,
    pub p99_ms: f64,
    pub max_ms: f64,
}

/// What the run measured.
#[derive(Debug, Clone, serde::Serialize)]
pub struct SubsonicReport {
    pub tracks: u32,
    pub artists: usize,
    /// Seconds to generate and load the library and lay out its files.
    pub load_secs: f64,
    /// Seconds of the first request (the catalog built from the store).
    pub first_request_secs: f64,
    pub rows: Vec<Row>,
}

impl SubsonicReport {
    /// The report as Markdown.
    pub fn render(&self) -> String {
        let mut s = format!(
            "## bench subsonic: {} tracks, {} artists\n\n\
             Library loaded in {:.1} s; first request (catalog build) {:.2} s.\n\n\
             | method | requests | p50 ms | p99 ms | max ms | p99 < {} ms |\n|---|---:|---:|---:|---:|---|\n",
            self.tracks,
            self.artists,
            self.load_secs,
            self.first_request_secs,
            TARGET_P99.as_millis()
        );
        for r in &self.rows {
            let ok = r.p99_ms < TARGET_P99.as_secs_f64() * 1000.0;
            s.push_str(&format!(
                "| {} | {} | {:.2} | {:.2} | {:.2} | {} |\n",
                r.method,
                r.requests,
                r.p50_ms,
                r.p99_ms,
                r.max_ms,
                if ok { "PASS" } else { "MISS" }
            ));
        }
        s
    }
}

/// The path below the music folder of a generated `file:///…` URL.
fn rel_of(url: &str) -> Option<String> {
    let p = spindle_media::scan::url_path(url)?;
    let s = p.to_string_lossy();
    s.strip_prefix("/home/user/Music/")
        .map(str::to_owned)
        .or_else(|| s.strip_prefix('/').map(str::to_owned))
}

/// Loads the generated library into `db`, its files into `music`.
fn load(opts: &SubsonicOptions, db: &Db, music: &Path) -> Result<(), BenchError> {
    let g = Generator::new(opts.tracks, opts.seed);
    let mut ops = Vec::new();
    let mut n = 0usize;
    for t in g.tracks() {
        ops.push(Op::CreateEntry(t.id));
        for p in t.props {
            let value = match (p.key, &p.value) {
                ("url", Value::Str(u)) => {
                    let rel = rel_of(u).ok_or_else(|| {
                        BenchError::Check(format!("a generated URL is not a file URL: {u}"))
                    })?;
                    let file = music.join(&rel);
                    if let Some(dir) = file.parent() {
                        std::fs::create_dir_all(dir)
                            .at_with(|| format!("creating {}", dir.display()))?;
                    }
                    if !file.exists() {
                        std::fs::File::create(&file)
                            .at_with(|| format!("creating {}", file.display()))?;
                    }
                    Value::Str(spindle_media::scan::file_url(&file))
                }
                // The scanner stores the year of a date tag as `year`.
                ("date", Value::Str(d)) => {
                    if let Ok(y) = d.get(..4).unwrap_or("").parse::<i64>() {
                        ops.push(Op::AddProp {
                            entry: t.id,
                            key: "year".to_owned(),
                            source: p.source.to_owned(),
                            value: Value::Int(y),
                        });
                    }
                    p.value
                }
                _ => p.value,
            };
            ops.push(Op::AddProp {
                entry: t.id,
                key: p.key.to_owned(),
                source: p.source.to_owned(),
                value,
            });
        }
        n += 1;
        if n.is_multiple_of(LOAD_BATCH) {
            db.commit(std::mem::take(&mut ops))?;
        }
    }
    if !ops.is_empty() {
        db.commit(ops)?;
    }
    Ok(())
}

/// One GET of `/rest/METHOD?QUERY`; its JSON must say `ok`.
fn get(host: &str, key: &str, method: &str, query: &str) -> Result<String, BenchError> {
    let req = format!(
        "GET /rest/{method}?apiKey={key}&f=json&v=1.16.1&c=bench{query} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n"
    );
    let r = once(host, req.as_bytes())?;
    if r.status != 200 || !r.body.contains(r#""status":"ok""#) {
        return Err(BenchError::Check(format!(
            "{method}{query}: HTTP {}: {}",
            r.status,
            r.body.chars().take(300).collect::<String>()
        )));
    }
    Ok(r.body)
}

/// Every string value of `field` in a JSON text (a small scan, no parse
/// of the whole tree needed for ids).
fn values(body: &str, field: &str) -> Vec<String> {
    let Ok(v) = serde_json::from_str::<serde_json::Value>(body) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    let mut stack = vec![&v];
    while let Some(x) = stack.pop() {
        match x {
            serde_json::Value::Object(m) => {
                for (k, y) in m {
                    match y {
                        serde_json::Value::String(s) if k == field => out.push(s.clone()),
                        _ => stack.push(y),
                    }
                }
            }
            serde_json::Value::Array(a) => stack.extend(a.iter().rev()),
            _ => {}
        }
    }
    out
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn percentile(sorted: &[Duration], p: usize) -> Duration {
    sorted
        .get((sorted.len() * p / 100).min(sorted.len().saturating_sub(1)))
        .copied()
        .unwrap_or_default()
}

/// Times `requests` calls of `query(i)` for request `i`.
fn measure(
    host: &str,
    key: &str,
    label: &str,
    method: &str,
    requests: usize,
    query: &dyn Fn(usize) -> String,
) -> Result<Row, BenchError> {
    let mut lat = Vec::with_capacity(requests);
    for i in 0..requests {
        let q = query(i);
        let t = Instant::now();
        get(host, key, method, &q)?;
        lat.push(t.elapsed());
    }
    lat.sort();
    Ok(Row {
        method: label.to_owned(),
        requests,
        p50_ms: ms(percentile(&lat, 50)),
        p99_ms: ms(percentile(&lat, 99)),
        max_ms: ms(lat.last().copied().unwrap_or_default()),
    })
}

/// `s` percent-encoded for a query string.
fn percent(s: &str) -> String {
    s.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
                char::from(b).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

/// The album list types, with the parameters each needs.
fn album_types(genre: &str) -> Vec<(String, String)> {
    let g = percent(genre);
    [
        ("random", String::new()),
        ("newest", String::new()),
        ("highest", String::new()),
        ("frequent", String::new()),
        ("recent", String::new()),
        ("alphabeticalByName", String::new()),
        ("alphabeticalByArtist", String::new()),
        ("starred", String::new()),
        ("byYear", "&fromYear=1990&toYear=2000".to_owned()),
        ("byGenre", format!("&genre={g}")),
    ]
    .into_iter()
    .map(|(t, q)| (t.to_owned(), q))
    .collect()
}

/// Runs the benchmark; `log` gets progress lines.
pub fn run_subsonic(
    opts: &SubsonicOptions,
    log: &mut dyn FnMut(&str),
) -> Result<SubsonicReport, BenchError> {
    if opts.tracks == 0 || opts.requests == 0 {
        return Err(BenchError::Options(
            "--tracks and --requests must be at least 1".into(),
        ));
    }
    let tmp;
    let dir = match &opts.keep {
        Some(d) => d.clone(),
        None => {
            tmp = tempfile_dir()?;
            tmp.0.clone()
        }
    };
    let (data, music) = (dir.join("data"), dir.join("music"));
    std::fs::create_dir_all(&music).at("creating the music folder")?;
    std::fs::create_dir_all(&data).at("creating the data folder")?;
    let t0 = Instant::now();
    let db = Arc::new(Db::open(data.join("library"))?);
    if db.stats().entries == 0 {
        log(&format!("generating and loading {} tracks", opts.tracks));
        load(opts, &db, &music)?;
    } else {
        log("reusing the library loaded before");
    }
    let load_secs = t0.elapsed().as_secs_f64();
    let accounts = Arc::new(
        Accounts::open(&data.join("accounts"))
            .map_err(|e| BenchError::Peer(format!("accounts: {e}")))?,
    );
    if !accounts.user_exists(USER) {
        accounts
            .add_user(USER, "bench password", 0)
            .map_err(|e| BenchError::Peer(format!("adding the user: {e}")))?;
    }
    let key = accounts
        .user_token(USER)
        .map_err(|e| BenchError::Peer(format!("the user's token: {e}")))?;
    let (listens, _) = spindle_listens::Listens::open(&data.join("listens"))
        .at("opening the listening history")?;
    let config = Config {
        rate_limit: u32::MAX,
        ..Config::default()
    };
    let music_side = Music::new(std::slice::from_ref(&music), &data)
        .map_err(|e| BenchError::Peer(format!("music folder: {e}")))?;
    let state = AppState::new(
        db,
        accounts,
        Arc::new(listens),
        config,
        Arc::new(SystemClock),
    )
    .with_music(music_side)
    .started();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let listener = rt.block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))?;
    let host = listener.local_addr()?.to_string();
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let st = state.clone();
    let server = rt.spawn(async move {
        let _ = spindle_server::serve(listener, st, async {
            let _ = stop_rx.await;
        })
        .await;
    });
    let result = measure_all(&host, &key, opts, load_secs, log);
    let _ = stop_tx.send(());
    let _ = rt.block_on(server);
    state.stop_background();
    rt.shutdown_timeout(Duration::from_secs(1));
    result
}

fn measure_all(
    host: &str,
    key: &str,
    opts: &SubsonicOptions,
    load_secs: f64,
    log: &mut dyn FnMut(&str),
) -> Result<SubsonicReport, BenchError> {
    let t = Instant::now();
    let artists_body = get(host, key, "getArtists", "")?;
    let first_request_secs = t.elapsed().as_secs_f64();
    let with = |v: Vec<String>, prefix: &str| -> Vec<String> {
        v.into_iter().filter(|i| i.starts_with(prefix)).collect()
    };
    let artist_ids = with(values(&artists_body, "id"), "ar-");
    let albums_body = get(
        host,
        key,
        "getAlbumList2",
        "&type=alphabeticalByName&size=500",
    )?;
    let album_ids = with(values(&albums_body, "id"), "al-");
    let genres = get(host, key, "getGenres", "")?;
    let genre = values(&genres, "value")
        .into_iter()
        .next()
        .unwrap_or_default();
    let indexes = get(host, key, "getIndexes", "")?;
    let mut dir_ids = with(values(&indexes, "id"), "fo-");
    // A few levels down too: artists' folders hold album folders.
    for id in dir_ids.clone().iter().take(50) {
        let d = get(host, key, "getMusicDirectory", &format!("&id={id}"))?;
        dir_ids.extend(
            values(&d, "id")
                .into_iter()
                .filter(|i| i.starts_with("fo-")),
        );
    }
    let all = get(
        host,
        key,
        "search3",
        "&query=&songCount=1&artistCount=0&albumCount=0",
    )?;
    drop(all);
    if artist_ids.is_empty() || album_ids.is_empty() || dir_ids.is_empty() {
        return Err(BenchError::Check(
            "the warm-up found no artists, albums or folders".into(),
        ));
    }
    let mut rows = Vec::new();
    let n = opts.requests;
    let mut run =
        |label: &str, method: &str, q: &dyn Fn(usize) -> String| -> Result<(), BenchError> {
            let r = measure(host, key, label, method, n, q)?;
            log(&format!(
                "{label}: p50 {:.2} ms, p99 {:.2} ms",
                r.p50_ms, r.p99_ms
            ));
            rows.push(r);
            Ok(())
        };
    for (ty, extra) in album_types(&genre) {
        // Warm each type once (its order is built on first use).
        get(
            host,
            key,
            "getAlbumList2",
            &format!("&type={ty}&size=50{extra}"),
        )?;
        let label = format!("getAlbumList2 {ty}");
        let q = move |i: usize| format!("&type={ty}&size=50&offset={}{extra}", (i % 10) * 50);
        run(&label, "getAlbumList2", &q)?;
    }
    run("search3 \"one\"", "search3", &|_| "&query=one".to_owned())?;
    let songs = opts.tracks as usize;
    run("search3 \"\" (500 per page)", "search3", &|i| {
        let pages = songs.div_ceil(500).max(1);
        format!(
            "&query=%22%22&artistCount=0&albumCount=0&songCount=500&songOffset={}",
            (i % pages) * 500
        )
    })?;
    run("getArtists", "getArtists", &|_| String::new())?;
    run("getArtist", "getArtist", &|i| {
        format!("&id={}", artist_ids[i * 7919 % artist_ids.len()])
    })?;
    run("getAlbum", "getAlbum", &|i| {
        format!("&id={}", album_ids[i * 7919 % album_ids.len()])
    })?;
    run("getMusicDirectory", "getMusicDirectory", &|i| {
        format!("&id={}", dir_ids[i * 7919 % dir_ids.len()])
    })?;
    Ok(SubsonicReport {
        tracks: opts.tracks,
        artists: artist_ids.len(),
        load_secs,
        first_request_secs,
        rows,
    })
}

/// A temporary folder, removed when dropped.
struct TempDir(PathBuf);

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn tempfile_dir() -> Result<TempDir, BenchError> {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let p = std::env::temp_dir().join(format!(
        "spindle-bench-subsonic-{}-{nanos}",
        std::process::id()
    ));
    std::fs::create_dir_all(&p).at("creating a temporary folder")?;
    Ok(TempDir(p))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_urls_land_below_the_music_folder() {
        assert_eq!(
            rel_of("file:///home/user/Music/A/B/01%20x.mp3").as_deref(),
            Some("A/B/01 x.mp3")
        );
    }

    #[test]
    fn ids_are_found_at_any_depth_of_a_reply() {
        let body = r#"{"subsonic-response":{"artists":{"index":[{"artist":[{"id":"ar-1"},{"id":"ar-2"}]}]}}}"#;
        assert_eq!(values(body, "id"), ["ar-1", "ar-2"]);
    }
}
