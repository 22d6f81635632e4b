//! `spindle forward link|status|unlink`: the services a user's plays are
//! forwarded to (`spindle_server::forward`). Links are files in the data
//! dir, so these work beside a running server (it picks a new link up
//! within a few seconds) or without one.

use std::path::Path;
use std::time::Duration;

use anyhow::Context;
use clap::{Subcommand, ValueEnum};
use spindle_server::forward::{link, linking, status, LinkStatus};

use super::{now, open_accounts};

#[derive(Debug, Subcommand)]
pub enum ForwardCommand {
    /// Link USER's account at a Last.fm-compatible service (the desktop
    /// flow: open the printed page, approve, and this finishes) or a
    /// ListenBrainz-compatible one (with --token, checked first). Plays
    /// from now on are forwarded; link an existing NAME again to renew
    /// its credential.
    Link {
        user: String,
        kind: Kind,
        /// The link's name (default: the kind).
        #[arg(long)]
        name: Option<String>,
        /// The API root: a Last.fm 2.0 URL (…/2.0/) or a ListenBrainz root
        /// (default: forward.lastfm_url or forward.listenbrainz_url in the settings file).
        #[arg(long)]
        url: Option<String>,
        /// Last.fm API key (default: forward.lastfm_api_key).
        #[arg(long)]
        api_key: Option<String>,
        /// Last.fm API secret (default: forward.lastfm_api_secret).
        #[arg(long)]
        api_secret: Option<String>,
        /// The ListenBrainz user token.
        #[arg(long)]
        token: Option<String>,
        /// Seconds to wait for the Last.fm approval.
        #[arg(long, default_value_t = 300)]
        wait: u64,
    },
    /// Each link's queue, sent count and state (all users', or USER's).
    Status {
        user: Option<String>,
        /// One JSON array instead of lines.
        #[arg(long)]
        json: bool,
    },
    /// Remove USER's link NAME and its queue.
    Unlink { user: String, name: String },
}

/// The service kinds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Kind {
    /// Last.fm, Libre.fm or another Last.fm 2.0 API (a Spindle's /2.0/).
    Lastfm,
    /// ListenBrainz or another ListenBrainz API (a Spindle's root).
    Listenbrainz,
}

fn forward_settings() -> anyhow::Result<spindle_server::forward::ForwardConfig> {
    use spindle_server::settings::{env_var, load, settings_path, Layer};
    let file = settings_path(None);
    let s = load(file.as_deref(), &env_var, Layer::default())
        .context("reading the server settings for [forward]")?;
    Ok(s.http.forward)
}

pub fn run(cmd: &ForwardCommand, data_dir: &Path) -> anyhow::Result<()> {
    let root = linking::root(data_dir);
    match cmd {
        ForwardCommand::Link {
            user,
            kind,
            name,
            url,
            api_key,
            api_secret,
            token,
            wait,
        } => {
            if open_accounts(data_dir)?.roles(user).is_none() {
                anyhow::bail!("user {user:?} does not exist (see `spindle user list`)");
            }
            let cfg = forward_settings()?;
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .context("starting the async runtime")?;
            let (l, default_name) = match kind {
                Kind::Lastfm => {
                    let flow = rt.block_on(linking::start_lastfm(
                        url.as_deref(),
                        api_key.as_deref(),
                        api_secret.as_deref(),
                        &cfg,
                    ))?;
                    println!("Open this page, log in as the account to link, and allow access:");
                    println!("{}", flow.approve_url);
                    println!("Waiting for the approval…");
                    let l = rt.block_on(flow.wait(Duration::from_secs(*wait), now()))?;
                    (l, "lastfm")
                }
                Kind::Listenbrainz => {
                    let Some(t) = token else {
                        anyhow::bail!("a ListenBrainz link needs --token (the user token from the service's settings page)");
                    };
                    let l = rt.block_on(linking::listenbrainz(url.as_deref(), t, &cfg, now()))?;
                    (l, "listenbrainz")
                }
            };
            let name = name.as_deref().unwrap_or(default_name);
            let cursor = linking::log_end(data_dir)?;
            let dir = linking::save(&root, user, name, &l, cursor)?;
            println!(
                "linked {user}'s {name} to {} as {} ({}); plays from now on are forwarded",
                l.url,
                l.remote_user,
                dir.display()
            );
        }
        ForwardCommand::Status { user, json } => {
            let rows = status::from_files(&root, user.as_deref());
            if *json {
                println!("{}", serde_json::to_string_pretty(&rows)?);
            } else if rows.is_empty() {
                println!("no links");
            } else {
                for r in &rows {
                    println!("{}", line(r));
                }
            }
        }
        ForwardCommand::Unlink { user, name } => {
            link::remove(&root, user, name)?;
            println!("unlinked {user}'s {name}");
        }
    }
    Ok(())
}

fn line(r: &LinkStatus) -> String {
    let state = if r.needs_auth {
        "NEEDS RE-LINKING".to_owned()
    } else if let Some(e) = &r.last_error {
        format!("retrying: {e}")
    } else {
        "ok".to_owned()
    };
    format!(
        "{}\t{}\t{}\t{}\tas {}\tpending {}\tsent {}\t{}",
        r.user,
        r.name,
        r.kind.as_str(),
        r.url,
        r.remote_user,
        r.pending,
        r.sent,
        state
    )
}
