//! The storage tiers inside `spindle serve`: the `[tiers]` section of the
//! server config (`$SPINDLE_SERVER_CONFIG`, else
//! `$XDG_CONFIG_HOME/spindle/server.toml` when it exists), the tracks
//! pinned by saved queries, the listening history fed to the hot tier's
//! policy, and the background work.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use anyhow::Context;
use spindle_query::SourcePref;
use spindle_server::AppState;
use spindle_store::{Db, ValueRef};
use spindle_tiers::{Tiers, TiersConfig, TrackRef};

/// The server config file to read: `$SPINDLE_SERVER_CONFIG`, else the
/// default path if that file exists.
pub fn config_path() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("SPINDLE_SERVER_CONFIG").filter(|p| !p.is_empty()) {
        return Some(PathBuf::from(p));
    }
    spindle_tiers::config::default_config_path().filter(|p| p.is_file())
}

/// The `[tiers]` section of the server config, if there is one.
pub fn load_config(path: Option<&Path>) -> anyhow::Result<Option<TiersConfig>> {
    let Some(path) = path.map(Path::to_owned).or_else(config_path) else {
        return Ok(None);
    };
    Ok(TiersConfig::load(&path)?)
}

/// The hot-tier policy the server runs: Spindle's (decayed frequencies
/// at several time scales, size-aware admission; docs/tiers-policy.md).
pub fn policy(cfg: &TiersConfig) -> Box<dyn spindle_tiers::placement::HotPolicy> {
    let budget = cfg.hot.as_ref().map_or(0, |h| h.budget);
    Box::new(spindle_tiers::placement::FromPolicy(
        spindle_tiers::policy::Spindle::new(budget),
    ))
}

/// Sets the tiers up over the music folders, when configured. Checks the
/// hot folder (reads each hot copy once).
pub fn load(data_dir: &Path, roots: &[PathBuf]) -> anyhow::Result<Option<Arc<Tiers>>> {
    let Some(cfg) = load_config(None)? else {
        return Ok(None);
    };
    let p = policy(&cfg);
    let tiers = Tiers::new(cfg, roots, data_dir, p).context("setting up the storage tiers")?;
    let st = tiers.status();
    if let Some(h) = &st.hot {
        eprintln!(
            "spindle: tiers: hot folder {} holds {} copies ({} of {} bytes); {} unfinished or damaged copies removed",
            h.path, h.files, h.used, h.budget, h.recovered_dropped
        );
    }
    let names: Vec<String> = st
        .devices
        .iter()
        .map(|d| format!("{} ({}, {})", d.name, d.kind, d.state))
        .collect();
    eprintln!("spindle: tiers: devices {}", names.join(", "));
    Ok(Some(Arc::new(tiers)))
}

/// Fills the hot tier's free space from the popularity just replayed.
fn prefill(t: &Tiers) {
    let n = t.prefill_hot();
    if n > 0 {
        eprintln!("spindle: tiers: promoting {n} tracks the history plays most into the hot tier's free space");
    }
}

/// Starts the background work, feeds every accepted scrobble to the
/// policy, replays the recent listening history into it once, and
/// watches the pins; call inside the runtime.
pub fn start(tiers: &Arc<Tiers>, state: &AppState, roots: Vec<PathBuf>, data_dir: &Path) {
    tiers.start_background();
    state.feed_tiers(tiers.clone(), roots.clone());
    let db = state.db.clone();
    // The listening history so far: the recent listens, decayed; the
    // library's play counts only when there are none (a library imported
    // with counts from another player, no scrobbles yet).
    {
        let (t, db, roots, state) = (tiers.clone(), db.clone(), roots.clone(), state.clone());
        tokio::task::spawn_blocking(move || {
            let r = state.replay_history_into(&t, &roots);
            if r.listens > 0 {
                eprintln!(
                    "spindle: tiers: replayed {} listens of the last {} days into the hot tier's policy ({} tracks)",
                    r.listens,
                    spindle_server::scrobble::REPLAY_DAYS,
                    r.tracks
                );
                prefill(&t);
                return;
            }
            let lib = db.read();
            let ids: Vec<u32> = lib.ids().collect();
            let pref = SourcePref::default();
            let rows = lib.fetch_rows(&ids, &["url", "timesplayed"], &pref);
            for r in rows.iter() {
                let plays = match r.get(1) {
                    Some(Some(ValueRef::Int(n))) if *n > 0 => *n as f64,
                    _ => continue,
                };
                if let Some(track) = track_of_url(r.first().and_then(Option::as_ref), &roots) {
                    t.record_listen(&track, plays);
                }
            }
            prefill(&t);
        });
    }
    let pins = spindle_tiers::pins::pins_path(data_dir);
    let t = Arc::downgrade(tiers);
    tokio::spawn(async move {
        let mut seen: Option<(Option<SystemTime>, usize)> = None;
        loop {
            let Some(tiers) = t.upgrade() else { break };
            let mtime = std::fs::metadata(&pins).and_then(|m| m.modified()).ok();
            let entries = db.read().len();
            if seen != Some((mtime, entries)) {
                seen = Some((mtime, entries));
                let (db, pins, roots, t) = (db.clone(), pins.clone(), roots.clone(), tiers.clone());
                // set_pinned reads each pinned track's length: blocking.
                let r = tokio::task::spawn_blocking(move || {
                    pinned_tracks(&db, &pins, &roots).map(|tracks| t.set_pinned(tracks))
                })
                .await;
                if let Ok(Err(e)) = r {
                    eprintln!("spindle: tiers: pins: {e:#}");
                }
            }
            drop(tiers);
            tokio::time::sleep(Duration::from_secs(5)).await;
        }
    });
}

/// The tracks the saved pins select.
pub fn pinned_tracks(db: &Db, pins: &Path, roots: &[PathBuf]) -> anyhow::Result<Vec<TrackRef>> {
    let patterns =
        spindle_tiers::pins::load(pins).with_context(|| format!("reading {}", pins.display()))?;
    let lib = db.read();
    let pref = SourcePref::default();
    let mut out = Vec::new();
    for p in patterns {
        let parsed = match spindle_query::parse(&p) {
            Ok(x) => x,
            Err(e) => {
                eprintln!("spindle: tiers: pin {p:?} does not parse: {e}");
                continue;
            }
        };
        let ids = lib.query_ids(&parsed.coll, &pref)?;
        let rows = lib.fetch_rows(&ids.ids, &["url"], &pref);
        for r in rows.iter() {
            if let Some(t) = r.first().and_then(|v| track_of_url(v.as_ref(), roots)) {
                if !out.contains(&t) {
                    out.push(t);
                }
            }
        }
    }
    Ok(out)
}

/// The track of a library `url` under one of `roots` (canonical).
pub fn track_of_url(url: Option<&ValueRef<'_>>, roots: &[PathBuf]) -> Option<TrackRef> {
    let url = url?.to_string();
    let file = spindle_media::scan::url_path(&url)?;
    roots.iter().enumerate().find_map(|(i, root)| {
        let rel = file.strip_prefix(root).ok()?;
        Some(TrackRef {
            key: rel.to_str()?.to_owned(),
            folder: Some(i),
        })
    })
}
