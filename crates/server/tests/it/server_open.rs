//! The server as `spindle serve` runs it, through `Server::open` and
//! `Server::run` (no binary): the listening history fills the hot tier
//! at start, pins saved while it runs reach the hot tier, and a shutdown
//! stops every background task before `run` returns.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use spindle_listens::{Listen, Listens};
use spindle_server::{Accounts, Server, ServerConfig};
use spindle_tiers::config::HotConfig;
use spindle_tiers::TiersConfig;

/// A demo track: artist, album, title, path below the music folder.
type Track = (&'static str, &'static str, &'static str, &'static str);

const HUM: Track = (
    "Björk Generator",
    "Oscillator Suite",
    "Hum",
    "Björk Generator/Oscillator Suite/01 Hum.wav",
);
const CHIME: Track = (
    "Björk Generator",
    "Oscillator Suite",
    "Chime",
    "Björk Generator/Oscillator Suite/03 Chime.wav",
);
const LOW_G: Track = (
    "The Sine Waves",
    "Overtones",
    "Low G",
    "The Sine Waves/Overtones/01 Low G.wav",
);

struct Dirs {
    _tmp: tempfile::TempDir,
    data: PathBuf,
    music: PathBuf,
    hot: PathBuf,
}

fn dirs() -> Dirs {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let music = tmp.path().join("music");
    spindle_media::demo::generate_demo(&music).unwrap();
    let music = std::fs::canonicalize(&music).unwrap();
    let hot = tmp.path().join("hot");
    Dirs {
        _tmp: tmp,
        data,
        music,
        hot,
    }
}

fn size(d: &Dirs, track: Track) -> u64 {
    std::fs::metadata(d.music.join(track.3)).unwrap().len()
}

fn config(d: &Dirs, hot_budget: u64) -> ServerConfig {
    ServerConfig {
        music: vec![d.music.clone()],
        tiers: Some(TiersConfig {
            mindevcount: 1,
            hot: Some(HotConfig {
                path: d.hot.clone(),
                budget: hot_budget,
            }),
            ..TiersConfig::default()
        }),
        pin_poll: Duration::from_millis(50),
        ..ServerConfig::new(&d.data)
    }
}

/// The keys the hot folder holds, sorted.
fn hot_keys(server: &Server) -> Vec<String> {
    let tiers = server.state().tiers().expect("tiers are configured");
    let mut keys = tiers.hot().expect("a hot folder").keys();
    keys.sort();
    keys
}

/// Waits up to 30 s until the hot folder holds `want` (sorted), then a
/// moment more for anything that should not come.
async fn wait_for_hot(server: &Server, want: &[&str]) -> Vec<String> {
    let deadline = Instant::now() + Duration::from_secs(30);
    while Instant::now() < deadline && hot_keys(server).len() < want.len() {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    hot_keys(server)
}

/// `ann` with `plays` listens of each track, the last hours, written
/// before the server starts (as `spindle listens import` leaves them).
fn import_history(data: &Path, plays: &[(Track, usize)]) {
    let accounts = Accounts::open(&data.join("accounts")).unwrap();
    accounts.add_user("ann", "a password", 0).unwrap();
    let (listens, _) = Listens::open(&data.join("listens")).unwrap();
    let now = spindle_server::SystemClock.now_secs();
    let mut all = Vec::new();
    for (n, &((artist, album, title, _), count)) in plays.iter().enumerate() {
        for k in 0..count {
            let ts = now - 3600 * (k as i64 + 1) - n as i64;
            let mut l = Listen::new("ann", ts, artist, title);
            l.album = album.to_owned();
            all.push(l);
        }
    }
    listens.submit(&all).unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_history_imported_before_start_fills_the_hot_tier_with_the_most_played_tracks() {
    let d = dirs();
    std::fs::create_dir_all(&d.data).unwrap();
    // Hum played 8 times, Low G 6, Chime 3: room for two of them.
    import_history(&d.data, &[(HUM, 8), (LOW_G, 6), (CHIME, 3)]);
    let budget = size(&d, HUM) + size(&d, LOW_G) + size(&d, CHIME) / 2;
    let server = Server::open(config(&d, budget)).await.unwrap();
    assert_eq!(server.opened().listens, 17);

    // No request is made: the start-up replay alone fills the hot folder.
    let got = wait_for_hot(&server, &[HUM.3, LOW_G.3]).await;
    let mut want = vec![HUM.3.to_owned(), LOW_G.3.to_owned()];
    want.sort();
    assert_eq!(got, want);
    for t in [HUM, LOW_G] {
        let tiers = server.state().tiers().unwrap();
        let copy = tiers.hot().unwrap().contains(t.3);
        assert_eq!(copy, Some(size(&d, t)), "{}", t.3);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_track_pinned_while_the_server_runs_is_copied_to_the_hot_tier() {
    let d = dirs();
    // No history: nothing is promoted until the pin.
    let server = Server::open(config(&d, 1 << 30)).await.unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(hot_keys(&server).is_empty(), "{:?}", hot_keys(&server));

    let pins = spindle_tiers::pins::pins_path(&d.data);
    assert!(spindle_tiers::pins::add(&pins, "title:Chime").unwrap());
    let got = wait_for_hot(&server, &[CHIME.3]).await;
    assert_eq!(got, vec![CHIME.3.to_owned()]);
    let status = server.state().tiers().unwrap().status();
    assert_eq!(status.hot.map(|h| h.pinned), Some(1));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_returns_promptly_after_shutdown_with_every_background_task_stopped() {
    let d = dirs();
    std::fs::create_dir_all(&d.data).unwrap();
    import_history(&d.data, &[(HUM, 2)]);
    let server = Server::open(config(&d, 1 << 30)).await.unwrap();
    // Every background task holds the library or the tiers: once both
    // are gone, no task is left.
    let db = Arc::downgrade(&server.state().db);
    let tiers = Arc::downgrade(server.state().tiers().unwrap());
    let _ = wait_for_hot(&server, &[HUM.3]).await;

    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let run = tokio::spawn(server.run(listener, async move {
        let _ = stopped.await;
    }));
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(db.upgrade().is_some() && tiers.upgrade().is_some());

    let asked = Instant::now();
    stop.send(()).unwrap();
    tokio::time::timeout(Duration::from_secs(10), run)
        .await
        .expect("run returns after the shutdown")
        .unwrap()
        .unwrap();
    assert!(
        asked.elapsed() < Duration::from_secs(3),
        "{:?}",
        asked.elapsed()
    );
    assert!(db.upgrade().is_none(), "a task still holds the library");
    assert!(tiers.upgrade().is_none(), "a task still holds the tiers");
}

/// The history's checkpoint: a server that stopped after taking listens
/// leaves one, and the next start opens the history from it instead of
/// replaying the whole log.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restarted_server_opens_the_history_from_the_checkpoint_the_last_one_left() {
    let d = dirs();
    std::fs::create_dir_all(&d.data).unwrap();
    import_history(&d.data, &[(HUM, 3), (CHIME, 2)]);
    let cfg = ServerConfig {
        music: vec![d.music.clone()],
        ..ServerConfig::new(&d.data)
    };
    let first = Server::open(cfg.clone()).await.unwrap();
    assert_eq!(
        first.opened().history_checkpoint,
        spindle_listens::CheckpointUse::Absent
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    first.run(listener, async {}).await.unwrap();
    assert!(d
        .data
        .join("listens")
        .join(spindle_listens::CHECKPOINT_FILE)
        .is_file());

    let second = Server::open(cfg).await.unwrap();
    assert!(
        matches!(
            second.opened().history_checkpoint,
            spindle_listens::CheckpointUse::Loaded { .. }
        ),
        "{:?}",
        second.opened().history_checkpoint
    );
    assert_eq!(second.opened().listens, 5);
    assert!(
        second.opened().warnings.is_empty(),
        "{:?}",
        second.opened().warnings
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    second.run(listener, async {}).await.unwrap();
}
