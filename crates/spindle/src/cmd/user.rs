//! `spindle user add|token|privacy` and `spindle apikey add`: accounts
//! for the scrobble APIs.

use std::io::{BufRead, IsTerminal};
use std::path::Path;

use anyhow::Context;
use clap::{Subcommand, ValueEnum};
use spindle_server::userdata::{UserData, USERDATA_DIR};

use super::{now, open_accounts};

#[derive(Debug, Subcommand)]
pub enum UserCommand {
    /// Add a user; asks for the password (or reads one line from stdin).
    Add { name: String },
    /// Print the user's ListenBrainz token (made on first use).
    Token { name: String },
    /// Make the user's listening history public (anyone may read it
    /// through the ListenBrainz and Last.fm APIs) or private (only the
    /// user, with their token or session key; the default). A running
    /// server sees the change at once.
    Privacy { name: String, setting: Privacy },
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

fn read_password(name: &str) -> anyhow::Result<String> {
    if std::io::stdin().is_terminal() {
        let a = rpassword::prompt_password(format!("password for {name}: "))
            .context("reading the password")?;
        let b = rpassword::prompt_password("again: ").context("reading the password")?;
        anyhow::ensure!(a == b, "the passwords differ");
        Ok(a)
    } else {
        let mut line = String::new();
        std::io::stdin()
            .lock()
            .read_line(&mut line)
            .context("reading the password from stdin")?;
        Ok(line.trim_end_matches(['\n', '\r']).to_owned())
    }
}

pub fn run_user(cmd: &UserCommand, data_dir: &Path) -> anyhow::Result<()> {
    let acc = open_accounts(data_dir)?;
    match cmd {
        UserCommand::Add { name } => {
            let pw = read_password(name)?;
            acc.add_user(name, &pw, now())?;
            println!("user {name} added");
        }
        UserCommand::Token { name } => {
            println!("{}", acc.user_token(name)?);
        }
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
