//! `spindle tiers status|pin|upload|bench-devices`: the storage tiers of
//! a server, from the command line.
//!
//! `status` reads the state a running `spindle serve` writes every two
//! seconds to `DATA/tiers/status.json` (no admin endpoint: the file works
//! with the server stopped too, and says how old it is). `pin` edits the
//! saved pins the server re-reads. `upload` copies the library's tracks
//! to the cold devices until each has `mindevcount` copies.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::Context;
use clap::Subcommand;
use spindle_query::SourcePref;
use spindle_tiers::runtime::status_path;
use spindle_tiers::{Status, Tiers};

use super::UsageError;

/// The runtime subcommands of `spindle tiers` (flattened into it).
#[derive(Debug, Subcommand)]
pub enum TiersOps {
    /// Each device with its measured latency (EWMA of time to first byte,
    /// await), load and bytes, and the hot tier's hit ratio, as the
    /// running server last wrote them.
    Status {
        /// Print the JSON the server wrote.
        #[arg(long)]
        json: bool,
    },
    /// Pin the tracks a query selects to the hot tier ('rating>=4'); the
    /// server re-reads pins within seconds.
    Pin {
        /// The query pattern to pin.
        pattern: Option<String>,
        /// List the saved pins, numbered.
        #[arg(long, conflicts_with_all = ["pattern", "remove"])]
        list: bool,
        /// Remove a pin, by its text or its number in --list.
        #[arg(long, value_name = "PIN", conflicts_with = "pattern")]
        remove: Option<String>,
    },
    /// Copy the library's tracks to the cold devices (folders, S3 buckets)
    /// until each has mindevcount copies.
    Upload {
        /// The music folders the library was scanned from (as given to
        /// `spindle serve --music`).
        #[arg(long, value_name = "DIR", required = true)]
        music: Vec<PathBuf>,
        /// The server config (default: $SPINDLE_SERVER_CONFIG, else
        /// $XDG_CONFIG_HOME/spindle/server.toml).
        #[arg(long, value_name = "FILE")]
        config: Option<PathBuf>,
    },
    /// Benchmark device choice: a fast and a slow device (a throttled
    /// back end), reads chosen by %util (MogileFS's default) vs by
    /// measured latency; prints p50/p99 time to first byte and each
    /// device's share of the reads.
    BenchDevices(super::tiers_bench::BenchArgs),
}

pub fn run(cmd: &TiersOps, data_dir: &Path) -> anyhow::Result<()> {
    match cmd {
        TiersOps::Status { json } => status(data_dir, *json),
        TiersOps::Pin {
            pattern,
            list,
            remove,
        } => pin(data_dir, pattern.as_deref(), *list, remove.as_deref()),
        TiersOps::Upload { music, config } => upload(data_dir, music, config.as_deref()),
        TiersOps::BenchDevices(a) => super::tiers_bench::run(a),
    }
}

fn ms(v: Option<f64>) -> String {
    v.map_or_else(|| "-".into(), |x| format!("{x:.2}"))
}

fn bytes(n: u64) -> String {
    const U: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut x = n as f64;
    let mut i = 0;
    while x >= 1024.0 && i < U.len() - 1 {
        x /= 1024.0;
        i += 1;
    }
    if i == 0 {
        format!("{n} B")
    } else {
        format!("{x:.1} {}", U[i])
    }
}

/// The status table.
pub fn render_status(s: &Status, age_secs: u64) -> String {
    let mut out = String::new();
    let fresh = if age_secs <= 10 {
        format!("written {age_secs}s ago by the running server")
    } else {
        format!("written {age_secs}s ago: the server is not running or is stuck")
    };
    out.push_str(&format!(
        "tiers: {fresh}; up {}s; reads choose by {}; mindevcount {}; {} mid-stream failovers\n\n",
        s.uptime_secs, s.choice, s.mindevcount, s.failovers
    ));
    out.push_str(&format!(
        "{:<12} {:<6} {:<9} {:>6} {:>10} {:>9} {:>6} {:>8} {:>8} {:>10} {:>7} {:>7} {:>10}\n",
        "device",
        "kind",
        "state",
        "health",
        "ttfb ms",
        "await ms",
        "util",
        "in-fl",
        "reads",
        "read",
        "errors",
        "copies",
        "stored"
    ));
    for d in &s.devices {
        out.push_str(&format!(
            "{:<12} {:<6} {:<9} {:>6} {:>10} {:>9} {:>6} {:>8} {:>8} {:>10} {:>7} {:>7} {:>10}\n",
            d.name,
            d.kind,
            d.state,
            if d.lost {
                "LOST"
            } else if d.failed {
                "FAILED"
            } else {
                "ok"
            },
            ms(d.ewma_ttfb_ms),
            ms(d.await_ms),
            d.util
                .map_or_else(|| "-".into(), |u| format!("{:.0}%", u * 100.0)),
            d.in_flight,
            d.reads,
            bytes(d.bytes_read),
            d.errors,
            d.copies,
            bytes(d.bytes_stored),
        ));
    }
    if let Some(h) = &s.hot {
        let share = if h.bytes_sent == 0 {
            0.0
        } else {
            h.bytes_from_hot as f64 / h.bytes_sent as f64
        };
        out.push_str(&format!(
            "\nhot tier {}: {} of {} used ({:.0}%), {} copies, {} pinned ({})\n",
            h.path,
            bytes(h.used),
            bytes(h.budget),
            100.0 * h.used as f64 / h.budget.max(1) as f64,
            h.files,
            h.pinned,
            bytes(h.pinned_bytes)
        ));
        out.push_str(&format!(
            "hit ratio {:.1}% ({} of {} stream opens found a hot copy); {:.1}% of streamed bytes came from it\n",
            100.0 * h.hit_ratio,
            h.hits,
            h.opens,
            100.0 * share
        ));
        out.push_str(&format!(
            "promotions {} (failed {}), demotions {}; at start kept {}, removed {} unfinished or damaged\n",
            h.promotions, h.promote_failures, h.demotions, h.recovered_kept, h.recovered_dropped
        ));
    }
    out.push_str(&render_replication(&s.replication, s.mindevcount));
    out
}

/// The re-replication line(s) of the status.
fn render_replication(r: &spindle_tiers::runtime::ReplicationStatus, want: usize) -> String {
    let mut out = String::from("\nreplication: ");
    if r.below_mindevcount == 0 {
        out.push_str(&format!(
            "every indexed track has {want} live copies or more"
        ));
    } else {
        out.push_str(&format!(
            "{} tracks below mindevcount, {}",
            r.below_mindevcount,
            if r.rereplicating {
                "re-replicating"
            } else {
                "waiting to retry"
            }
        ));
    }
    out.push_str(&format!(
        "; {} copies made since start, {} tracks failed",
        r.copies_made, r.failures
    ));
    if !r.lost_devices.is_empty() {
        out.push_str(&format!("; lost: {}", r.lost_devices.join(", ")));
    }
    out.push('\n');
    if let Some(e) = r.last_error.as_ref().filter(|_| r.below_mindevcount > 0) {
        out.push_str(&format!("last error: {e}\n"));
    }
    out
}

fn status(data_dir: &Path, json: bool) -> anyhow::Result<()> {
    let p = status_path(data_dir);
    let text = std::fs::read_to_string(&p).with_context(|| {
        format!(
            "reading {} (it is written by `spindle serve` with a [tiers] section in its config)",
            p.display()
        )
    })?;
    if json {
        println!("{}", text.trim_end());
        return Ok(());
    }
    let s: Status = serde_json::from_str(&text)
        .with_context(|| format!("{} is not a tiers status", p.display()))?;
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    print!("{}", render_status(&s, now.saturating_sub(s.written)));
    Ok(())
}

fn pin(
    data_dir: &Path,
    pattern: Option<&str>,
    list: bool,
    remove: Option<&str>,
) -> anyhow::Result<()> {
    let p = spindle_tiers::pins::pins_path(data_dir);
    if let Some(r) = remove {
        match spindle_tiers::pins::remove(&p, r)? {
            Some(gone) => println!("unpinned {gone}"),
            None => {
                return Err(
                    UsageError(format!("no pin {r:?} (see `spindle tiers pin --list`)")).into(),
                )
            }
        }
        return Ok(());
    }
    let Some(pattern) = pattern.filter(|_| !list) else {
        let pins = spindle_tiers::pins::load(&p)?;
        if pins.is_empty() {
            println!("no pins");
        }
        for (i, pin) in pins.iter().enumerate() {
            println!("{:>3}  {pin}", i + 1);
        }
        return Ok(());
    };
    if let Err(e) = spindle_query::parse(pattern) {
        return Err(UsageError(format!("pin {pattern:?}: {e}")).into());
    }
    // Say what it selects now, if the library is there.
    let count = spindle_store::Db::open(data_dir).ok().and_then(|db| {
        let parsed = spindle_query::parse(pattern).ok()?;
        let n = db
            .read()
            .query_ids(&parsed.coll, &SourcePref::default())
            .ok()?
            .ids
            .len();
        Some(n)
    });
    if spindle_tiers::pins::add(&p, pattern)? {
        match count {
            Some(n) => println!("pinned {pattern} ({n} tracks now)"),
            None => println!("pinned {pattern}"),
        }
    } else {
        println!("{pattern} was already pinned");
    }
    Ok(())
}

fn upload(data_dir: &Path, music: &[PathBuf], config: Option<&Path>) -> anyhow::Result<()> {
    let cfg = super::tiers_config(config)?
        .context("no [tiers] section in the server config: nothing to upload to")?;
    let mut roots = Vec::new();
    for m in music {
        roots.push(std::fs::canonicalize(m).with_context(|| format!("--music {}", m.display()))?);
    }
    let db = spindle_store::Db::open(data_dir)
        .with_context(|| format!("opening the library in {}", data_dir.display()))?;
    let tracks: Vec<(spindle_tiers::TrackRef, PathBuf)> = {
        let lib = db.read();
        let ids: Vec<u32> = lib.ids().collect();
        let rows = lib.fetch_rows(&ids, &["url"], &SourcePref::default());
        rows.iter()
            .filter_map(|r| {
                let t =
                    spindle_server::hot::track_of_url(r.first().and_then(Option::as_ref), &roots)?;
                let path = roots[t.folder?].join(&t.key);
                Some((t, path))
            })
            .collect()
    };
    drop(db);
    let p = spindle_server::hot::policy(&cfg);
    let tiers = Arc::new(Tiers::new(cfg, &roots, data_dir, p)?);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let (mut ok, mut failed, mut copies) = (0usize, 0usize, 0usize);
    rt.block_on(async {
        for (t, path) in &tracks {
            match tiers.replicate(t, path).await {
                Ok(n) => {
                    ok += 1;
                    copies += n;
                }
                Err(e) => {
                    failed += 1;
                    eprintln!("spindle: upload: {e}");
                }
            }
        }
    });
    println!(
        "uploaded: {ok} tracks have {} copies or more ({copies} copies in all); {failed} fell short",
        tiers.config().mindevcount
    );
    anyhow::ensure!(
        failed == 0,
        "{failed} tracks have fewer than mindevcount copies"
    );
    Ok(())
}
