//! `spindle bench forward`: forwarding (`spindle_server::forward`)
//! through the journal to a local Spindle's ListenBrainz API, in one
//! process on loopback.
//!
//! * Throughput: one user's backlog of `--plays` listens, recorded at
//!   once, fed into the journal and sent in batches of 50; plays per
//!   second from the write to the last acknowledgement.
//! * Outage: `--users` users each play `--per-user` tracks while the
//!   target is down (one hour of 10 tracks an hour each, by default
//!   1,000 users: 10,000 plays queued in 1,000 journals). The target
//!   comes back, every queue is told to retry now, and the drain time is
//!   how long until the last play is acknowledged. (Without that nudge
//!   each queue retries on its own backoff, at most 15 minutes after the
//!   target returns.)
//!
//! Every play is checked on the target afterwards: a play lost or counted
//! twice fails the run.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use spindle_listens::{Listen, Listens};
use spindle_server::forward::{linking, registry, Link, LinkKind};
use spindle_server::{Accounts, AppState, Config, SystemClock};
use spindle_store::Db;

use crate::error::{BenchError, Context};

/// `spindle bench forward`'s options.
#[derive(Debug, Clone, clap::Args)]
pub struct ForwardOptions {
    /// Plays of the throughput run (one user).
    #[arg(long, default_value_t = 10_000)]
    pub plays: usize,
    /// Users of the outage run.
    #[arg(long, default_value_t = 1_000)]
    pub users: usize,
    /// Plays per user queued during the outage.
    #[arg(long, default_value_t = 10)]
    pub per_user: usize,
    /// The longest a run may take before it fails, seconds.
    #[arg(long, default_value_t = 600)]
    pub timeout: u64,
    /// Where the temporary data dirs go.
    #[arg(long, default_value_os_t = std::env::temp_dir(), hide_default_value = true)]
    pub dir: std::path::PathBuf,
}

/// One run's figures.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Phase {
    pub links: usize,
    pub plays: usize,
    /// From the first write (throughput) or the target's return (outage)
    /// to the last acknowledgement.
    pub seconds: f64,
    pub plays_per_sec: f64,
}

/// What `spindle bench forward` prints.
#[derive(Debug, Clone, serde::Serialize)]
pub struct ForwardReport {
    pub throughput: Phase,
    pub outage: Phase,
    /// Seconds from recording the outage's plays to all of them being in
    /// their journals.
    pub outage_journaled_secs: f64,
}

impl ForwardReport {
    pub fn render(&self) -> String {
        let row = |name: &str, p: &Phase| {
            format!(
                "| {name} | {} | {} | {:.2} | {:.0} |\n",
                p.links, p.plays, p.seconds, p.plays_per_sec
            )
        };
        let mut s = String::from(
            "## Forwarding through the journal to a local Spindle (ListenBrainz API)\n\n\
             | run | links | plays | seconds | plays/s |\n|---|---:|---:|---:|---:|\n",
        );
        s.push_str(&row("throughput (one user's backlog)", &self.throughput));
        s.push_str(&row("drain after the outage", &self.outage));
        s.push_str(&format!(
            "\nThe outage's plays were all in their journals {:.2} s after they were recorded. \
             The drain starts when every queue is told to retry; on its own each queue \
             retries within its backoff (at most 15 min).\n",
            self.outage_journaled_secs
        ));
        s
    }
}

/// Runs both parts in a new tokio runtime.
pub fn run_forward(o: &ForwardOptions) -> Result<ForwardReport, BenchError> {
    if o.plays == 0 || o.users == 0 || o.per_user == 0 {
        return Err(BenchError::Options(
            "bench forward needs --plays, --users and --per-user above 0".into(),
        ));
    }
    let base = o
        .dir
        .join(format!("spindle-bench-forward-{}", std::process::id()));
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .at("starting the async runtime")?;
    let out = rt.block_on(run_in(o, &base));
    let _ = std::fs::remove_dir_all(&base);
    out
}

fn state_over(dir: &Path) -> Result<AppState, BenchError> {
    let db = Db::open(dir.join("lib"))?;
    let accounts = Accounts::open(&dir.join("accounts")).at("opening the accounts")?;
    let (listens, _) = Listens::open(&dir.join("listens")).at("opening the listens")?;
    let config = Config {
        rate_limit: u32::MAX,
        ..Config::default()
    };
    Ok(AppState::new(
        Arc::new(db),
        Arc::new(accounts),
        Arc::new(listens),
        config,
        Arc::new(SystemClock),
    )
    .started())
}

/// The target: a Spindle serving its ListenBrainz API on `listener`.
struct Target {
    stop: tokio::sync::oneshot::Sender<()>,
    task: tokio::task::JoinHandle<std::io::Result<()>>,
}

fn serve(state: AppState, listener: tokio::net::TcpListener) -> Target {
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let task = tokio::spawn(spindle_server::serve(listener, state, async move {
        let _ = stopped.await;
    }));
    Target { stop, task }
}

impl Target {
    async fn shut(self) {
        let _ = self.stop.send(());
        let _ = self.task.await;
    }
}

async fn run_in(o: &ForwardOptions, base: &Path) -> Result<ForwardReport, BenchError> {
    let deadline = Duration::from_secs(o.timeout);
    // The target's one account receives every user's plays (its dedupe is
    // per user, artist, title and time: every play here differs).
    let target = state_over(&base.join("target"))?;
    target
        .accounts
        .add_user("sink", "bench-password-1", 0)
        .at("adding the target's user")?;
    let token = target
        .accounts
        .user_token("sink")
        .at("making the target's token")?;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .at("binding the target")?;
    let addr = listener.local_addr().at("the target's address")?;
    let url = format!("http://{addr}");
    let link = Link {
        kind: LinkKind::Listenbrainz,
        url: url.clone(),
        api_key: String::new(),
        api_secret: String::new(),
        secret: token,
        remote_user: "sink".into(),
        linked_at: 0,
    };
    let now = SystemClock.now_secs();

    // Throughput: the target is up; one user's backlog.
    let t = serve(target.clone(), listener);
    let src = base.join("source");
    let source = state_over(&src)?.with_forwarding(&src);
    let root = linking::root(&src);
    linking::save(&root, "u0", "lb", &link, source.listens.committed_end())
        .at("linking the throughput user")?;
    let (stop, stopped) = tokio::sync::watch::channel(false);
    let reg = tokio::spawn(registry::run(source.clone(), stopped));
    wait(
        deadline,
        || source.forward.totals().links == 1,
        "the link to start",
    )
    .await?;
    let plays: Vec<Listen> = (0..o.plays)
        .map(|i| play("u0", now - 7200 + (i as i64 % 7000), i))
        .collect();
    let started = Instant::now();
    store(&source, plays).await?;
    let want = o.plays as u64;
    wait(
        deadline,
        || source.forward.totals().sent >= want,
        "the throughput run to be sent",
    )
    .await?;
    let throughput = phase(1, o.plays, started.elapsed());
    let _ = stop.send(true);
    let _ = reg.await;
    check(&target, o.plays)?;

    // Outage: a fresh target at the same address, down while the plays
    // are recorded.
    t.shut().await;
    let target2 = state_over(&base.join("target2"))?;
    target2
        .accounts
        .add_user("sink", "bench-password-1", 0)
        .at("adding the target's user")?;
    let token2 = target2.accounts.user_token("sink").at("the token")?;
    let src = base.join("source2");
    let source = state_over(&src)?.with_forwarding(&src);
    let root = linking::root(&src);
    let end = source.listens.committed_end();
    let l2 = Link {
        secret: token2,
        ..link
    };
    for u in 0..o.users {
        linking::save(&root, &format!("u{u}"), "lb", &l2, end).at("linking a user")?;
    }
    let (stop, stopped) = tokio::sync::watch::channel(false);
    let reg = tokio::spawn(registry::run(source.clone(), stopped));
    wait(
        deadline,
        || source.forward.totals().links == o.users,
        "every link to start",
    )
    .await?;
    let total = o.users * o.per_user;
    let hour = 3600 / o.per_user as i64;
    let plays: Vec<Listen> = (0..o.per_user)
        .flat_map(|k| {
            (0..o.users).map(move |u| play(&format!("u{u}"), now - 3600 + k as i64 * hour, k))
        })
        .collect();
    let recorded = Instant::now();
    store(&source, plays).await?;
    wait(
        deadline,
        || source.forward.totals().pending >= total,
        "the outage's plays to be journaled",
    )
    .await?;
    let journaled = recorded.elapsed();
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .at("binding the target again")?;
    let t = serve(target2.clone(), listener);
    let back = Instant::now();
    source.forward.flush(None);
    let want = total as u64;
    wait(
        deadline,
        || source.forward.totals().sent >= want,
        "the backlog to drain",
    )
    .await?;
    let outage = phase(o.users, total, back.elapsed());
    let _ = stop.send(true);
    let _ = reg.await;
    t.shut().await;
    check(&target2, total)?;
    Ok(ForwardReport {
        throughput,
        outage,
        outage_journaled_secs: journaled.as_secs_f64(),
    })
}

fn play(user: &str, ts: i64, i: usize) -> Listen {
    // Every user's plays land on the target's one account: the title
    // names the user, so no two plays are the same to its dedupe.
    let mut l = Listen::new(user, ts, "Bench Artist", &format!("Track {i} of {user}"));
    l.client = "bench".into();
    l.duration = Some(200);
    l
}

async fn store(st: &AppState, plays: Vec<Listen>) -> Result<(), BenchError> {
    for chunk in plays.chunks(1000) {
        spindle_server::scrobble::store(st, chunk.to_vec())
            .await
            .at("recording plays on the source")?;
    }
    Ok(())
}

fn phase(links: usize, plays: usize, took: Duration) -> Phase {
    let seconds = took.as_secs_f64();
    Phase {
        links,
        plays,
        seconds,
        plays_per_sec: plays as f64 / seconds.max(1e-9),
    }
}

async fn wait(limit: Duration, mut ok: impl FnMut() -> bool, what: &str) -> Result<(), BenchError> {
    let end = Instant::now() + limit;
    while !ok() {
        if Instant::now() > end {
            return Err(BenchError::Check(format!("timed out waiting for {what}")));
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    Ok(())
}

/// Every play arrived once.
fn check(target: &AppState, want: usize) -> Result<(), BenchError> {
    let got = target.listens.summary("sink");
    if got.playcount != want {
        return Err(BenchError::Check(format!(
            "the target recorded {} plays, {want} were sent",
            got.playcount
        )));
    }
    Ok(())
}
