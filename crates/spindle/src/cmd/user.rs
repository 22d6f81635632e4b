//! `spindle user list|add|delete|passwd|role|token|privacy|set|sessions|
//! revoke|apikey` and `spindle apikey add`: accounts, beside a running
//! server or not (the server reads the accounts file again when it
//! changes).

use std::io::{BufRead, IsTerminal};
use std::path::Path;

use anyhow::Context;
use clap::{Subcommand, ValueEnum};
use spindle_server::accounts::{handle, Profile, Revoked, Roles, DEFAULT_TIME_ZONE};
use spindle_server::userdata::{UserData, USERDATA_DIR};

use super::{now, open_accounts};

#[derive(Debug, Subcommand)]
pub enum UserCommand {
    /// List the users with their roles and music folders.
    List,
    /// Add a user; asks for the password twice on a terminal.
    Add {
        name: String,
        /// Make the user an administrator (the first user always is).
        #[arg(long)]
        admin: bool,
        /// Read the password from the first line of standard input.
        #[arg(long)]
        password_stdin: bool,
    },
    /// Delete a user: the account, tokens, session keys, API keys, stars, playlists
    /// and settings. Their listening history stays.
    Delete { name: String },
    /// Give a user a new password.
    Passwd {
        name: String,
        /// Read the password from the first line of standard input.
        #[arg(long)]
        password_stdin: bool,
    },
    /// Make a user an administrator or a plain user.
    Role { name: String, role: Role },
    /// Print the user's ListenBrainz token (made on first use); it is
    /// also an OpenSubsonic apiKey and a /metrics bearer token.
    Token {
        name: String,
        /// Make a new token: the old one stops working at once.
        #[arg(long)]
        reset: bool,
    },
    /// Change a setting of the user's: `timezone` (an IANA name such as
    /// Europe/Paris, the day boundaries of the web UI's "today" and
    /// charts; "" or UTC for UTC, the default).
    Set {
        name: String,
        setting: Setting,
        value: String,
    },
    /// List the user's credentials besides the password: the
    /// ListenBrainz token (whether made), Last.fm session keys and
    /// OpenSubsonic API keys, each by the handle or id `revoke` takes.
    Sessions { name: String },
    /// Revoke one of the user's Last.fm session keys or API keys, named
    /// by its handle or id (from `sessions`; 8 digits are enough) or by
    /// the key itself.
    Revoke {
        name: String,
        session_or_key: String,
    },
    /// OpenSubsonic API keys, one per app (`apiKey=` instead of a user
    /// name and password).
    #[command(subcommand)]
    Apikey(UserApikeyCommand),
    /// Make the user's listening history public (anyone may read it
    /// through the ListenBrainz and Last.fm APIs) or private (only the
    /// user, with their token or session key; the default). A running
    /// server sees the change at once.
    Privacy { name: String, setting: Privacy },
}

/// The user's OpenSubsonic API keys.
#[derive(Debug, Subcommand)]
pub enum UserApikeyCommand {
    /// Make a key for one app and print it (shown once: only its hash is
    /// kept).
    Add {
        name: String,
        /// The app the key is for ("Symfonium on my phone").
        #[arg(long)]
        app: String,
    },
    /// List the user's keys (or everyone's) by id and app.
    List { name: Option<String> },
    /// Revoke a key by its id (from `list`) or the key itself.
    Revoke { name: String, id: String },
}

/// A setting `spindle user set` changes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Setting {
    /// The user's IANA time zone.
    Timezone,
}

/// What a user may administer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Role {
    /// Manages users, folders and scans, and has every Subsonic role.
    Admin,
    /// A listener: streams, downloads, playlists, ratings.
    User,
}

/// Who may read a user's listening history.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Privacy {
    Public,
    Private,
}

#[derive(Debug, Subcommand)]
pub enum ApikeyCommand {
    /// Make an API key and secret pair for a Last.fm client.
    Add {
        /// A note saying what the key is for.
        #[arg(long, default_value = "")]
        name: String,
    },
}

/// A new password: asked twice on a terminal, else (or with
/// `--password-stdin`) the first line of standard input.
fn read_password(name: &str, from_stdin: bool) -> anyhow::Result<String> {
    let pw = if !from_stdin && std::io::stdin().is_terminal() {
        let a = rpassword::prompt_password(format!("password for {name}: "))
            .context("reading the password")?;
        let b = rpassword::prompt_password("again: ").context("reading the password")?;
        anyhow::ensure!(a == b, "the passwords differ; nothing changed");
        a
    } else {
        let mut line = String::new();
        std::io::stdin()
            .lock()
            .read_line(&mut line)
            .context("reading the password from standard input")?;
        line.trim_end_matches(['\n', '\r']).to_owned()
    };
    anyhow::ensure!(
        !pw.is_empty(),
        "the password is empty; nothing changed (pipe one line, or run on a terminal to be asked)"
    );
    Ok(pw)
}

pub fn run_user(cmd: &UserCommand, data_dir: &Path) -> anyhow::Result<()> {
    let acc = open_accounts(data_dir)?;
    match cmd {
        UserCommand::List => {
            let users = acc.list_users();
            if users.is_empty() {
                println!(
                    "no users yet: `spindle user add NAME`, or open the web UI of `spindle serve`"
                );
            }
            for (name, p) in users {
                let folders = if p.folders.is_empty() {
                    "all folders".to_owned()
                } else {
                    let ids: Vec<String> = p.folders.iter().map(u32::to_string).collect();
                    format!("folders {}", ids.join(","))
                };
                println!("{name}\t{}\t{folders}", p.roles.summary());
            }
        }
        UserCommand::Add {
            name,
            admin,
            password_stdin,
        } => {
            anyhow::ensure!(!acc.user_exists(name), "user '{name}' already exists");
            let pw = read_password(name, *password_stdin)?;
            let profile = Profile {
                roles: Roles {
                    admin: *admin,
                    ..Roles::default()
                },
                ..Profile::default()
            };
            acc.add_user_with(name, &pw, now(), profile)?;
            let role = if acc.is_admin(name) {
                "administrator"
            } else {
                "user"
            };
            println!("user {name} added ({role})");
        }
        UserCommand::Delete { name } => {
            acc.delete_user(name)?;
            let dir = data_dir.join(USERDATA_DIR);
            let data = UserData::open(Some(&dir))
                .with_context(|| format!("opening the user data in {}", dir.display()))?;
            data.forget_user(name)
                .context("the account is deleted, but removing the user's data failed")?;
            println!("user {name} deleted (their listening history stays)");
        }
        UserCommand::Passwd {
            name,
            password_stdin,
        } => {
            anyhow::ensure!(acc.user_exists(name), "no user named '{name}'");
            let pw = read_password(name, *password_stdin)?;
            acc.set_password(name, &pw)?;
            println!("password of {name} changed");
        }
        UserCommand::Role { name, role } => {
            let mut p = acc
                .profile(name)
                .with_context(|| format!("no user named '{name}'"))?;
            p.roles.admin = *role == Role::Admin;
            acc.set_profile(name, p)?;
            match role {
                Role::Admin => println!("{name} is now an administrator"),
                Role::User => println!("{name} is now a plain user"),
            }
        }
        UserCommand::Token { name, reset } => {
            if *reset {
                let token = acc.reset_token(name)?;
                println!("{token}");
                eprintln!("the old token of {name} no longer works");
            } else {
                println!("{}", acc.user_token(name)?);
            }
        }
        UserCommand::Set {
            name,
            setting: Setting::Timezone,
            value,
        } => {
            acc.set_time_zone(name, value)?;
            let tz = acc
                .time_zone_name(name)
                .unwrap_or_else(|| DEFAULT_TIME_ZONE.to_owned());
            println!("the time zone of {name} is now {tz}");
        }
        UserCommand::Sessions { name } => print_sessions(&acc, name)?,
        UserCommand::Revoke {
            name,
            session_or_key,
        } => match acc.revoke(name, session_or_key)? {
            Some(Revoked::SessionKey { handle }) => {
                println!("Last.fm session key {handle} of {name} revoked")
            }
            Some(Revoked::AppKey { id, app }) => {
                println!("API key {id} ({app}) of {name} revoked")
            }
            Some(other) => println!("revoked: {other:?}"),
            None => anyhow::bail!(
                "{name} has no session key or API key '{session_or_key}': \
                 `spindle user sessions {name}` lists them"
            ),
        },
        UserCommand::Apikey(cmd) => run_user_apikey(cmd, &acc)?,
        UserCommand::Privacy { name, setting } => {
            anyhow::ensure!(acc.user_exists(name), "no user named '{name}'");
            let dir = data_dir.join(USERDATA_DIR);
            let data = UserData::open(Some(&dir))
                .with_context(|| format!("opening the user data in {}", dir.display()))?;
            data.set_listens_public(name, *setting == Privacy::Public)
                .context("saving the setting")?;
            match setting {
                Privacy::Public => println!("the listening history of {name} is now public"),
                Privacy::Private => println!("the listening history of {name} is now private"),
            }
        }
    }
    Ok(())
}

/// A time as `2023-11-14 22:13 UTC`.
fn when(ts: i64) -> String {
    format!("{} UTC", spindle_server::time::lastfm_date(ts))
}

fn print_sessions(acc: &spindle_server::Accounts, name: &str) -> anyhow::Result<()> {
    anyhow::ensure!(acc.user_exists(name), "no user named '{name}'");
    if acc.has_token(name) {
        println!(
            "ListenBrainz token: yes (`spindle user token {name}` prints it, --reset replaces it)"
        );
    } else {
        println!("ListenBrainz token: none yet (`spindle user token {name}` makes one)");
    }
    let sessions = acc.sessions_of(name);
    println!("Last.fm session keys: {}", sessions.len());
    let notes: std::collections::HashMap<String, String> = acc
        .api_keys()
        .into_iter()
        .map(|(k, a)| (k, a.name))
        .collect();
    for (sk, s) in &sessions {
        let note = notes
            .get(&s.api_key)
            .filter(|n| !n.is_empty())
            .map(|n| format!(" ({n})"))
            .unwrap_or_default();
        println!(
            "  {}	api_key {}{note}	since {}",
            handle(sk),
            s.api_key,
            when(s.created)
        );
    }
    let keys = acc.app_keys(Some(name));
    println!("API keys: {}", keys.len());
    for (id, k) in &keys {
        println!("  {id}	{}	since {}", k.app, when(k.created));
    }
    println!("web sessions: see the admin page (they live in the running server's memory)");
    Ok(())
}

fn run_user_apikey(cmd: &UserApikeyCommand, acc: &spindle_server::Accounts) -> anyhow::Result<()> {
    match cmd {
        UserApikeyCommand::Add { name, app } => {
            let (key, id) = acc.add_app_key(name, app, now())?;
            println!("{key}");
            eprintln!(
                "API key {id} for {name} ({}): shown once; `spindle user apikey revoke {name} {id}` ends it",
                app.trim()
            );
        }
        UserApikeyCommand::List { name } => {
            if let Some(n) = name {
                anyhow::ensure!(acc.user_exists(n), "no user named '{n}'");
            }
            for (id, k) in acc.app_keys(name.as_deref()) {
                println!("{id}	{}	{}	since {}", k.user, k.app, when(k.created));
            }
        }
        UserApikeyCommand::Revoke { name, id } => match acc.revoke(name, id)? {
            Some(Revoked::AppKey { id, app }) => println!("API key {id} ({app}) of {name} revoked"),
            Some(Revoked::SessionKey { handle }) => {
                println!("Last.fm session key {handle} of {name} revoked")
            }
            Some(other) => println!("revoked: {other:?}"),
            None => anyhow::bail!(
                "{name} has no API key '{id}': `spindle user apikey list {name}` lists them"
            ),
        },
    }
    Ok(())
}

pub fn run_apikey(cmd: &ApikeyCommand, data_dir: &Path) -> anyhow::Result<()> {
    let acc = open_accounts(data_dir)?;
    match cmd {
        ApikeyCommand::Add { name } => {
            let (key, secret) = acc.add_api_key(name, now())?;
            println!("api_key {key}\nsecret {secret}");
        }
    }
    Ok(())
}
