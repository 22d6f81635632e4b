//! `spindle forward link|status|unlink`: the services a user's plays are
//! forwarded to (`spindle_server::forward`). Links are files in the data
//! dir, so these work beside a running server (it picks a new link up
//! within a few seconds) or without one.

use std::path::Path;

use anyhow::Context;
use clap::Subcommand;
use spindle_server::forward::linking::{self, LinkArgs};
use spindle_server::forward::{link, status, ForwardConfig, LinkKind};

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
        kind: LinkKind,
        #[command(flatten)]
        args: LinkArgs,
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

pub fn run(cmd: &ForwardCommand, data_dir: &Path) -> anyhow::Result<()> {
    let root = linking::root(data_dir);
    match cmd {
        ForwardCommand::Link { user, kind, args } => {
            if open_accounts(data_dir)?.roles(user).is_none() {
                anyhow::bail!("user {user:?} does not exist (see `spindle user list`)");
            }
            // Refuse a link beyond the limit before the user approves it.
            link::check_room(&root, user, args.name(*kind))?;
            let cfg = ForwardConfig::from_settings()
                .context("reading the server settings for [forward]")?;
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .context("starting the async runtime")?;
            let l = rt.block_on(args.link(*kind, &cfg, now(), |page| {
                println!("Open this page, log in as the account to link, and allow access:");
                println!("{page}");
                println!("Waiting for the approval…");
            }))?;
            let name = args.name(*kind);
            let dir = linking::save(&root, user, name, &l, linking::log_end(data_dir)?)?;
            println!(
                "linked {user}'s {name} to {} as {} ({}); plays from now on are forwarded",
                l.url,
                l.remote_user,
                dir.display()
            );
        }
        ForwardCommand::Status { user, json } => {
            let mut rows = status::from_files(&root, user.as_deref());
            // The files cannot say whether a server sends them now; its
            // lock on the data dir does.
            let running = status::server_running(data_dir);
            for r in &mut rows {
                r.running = running;
            }
            if *json {
                println!("{}", serde_json::to_string_pretty(&rows)?);
            } else if rows.is_empty() {
                println!("no links");
            } else {
                for r in &rows {
                    println!("{r}");
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
