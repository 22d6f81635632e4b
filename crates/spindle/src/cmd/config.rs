//! `spindle config`: the server's settings file. `print-default` writes
//! the documented default file to stdout; `check` loads the file, the
//! environment and nothing else, as `spindle serve` would, and prints the
//! settings in effect (or the error, naming the key and line).

use std::path::PathBuf;

use spindle_server::settings::{self, Layer};

#[derive(Debug, clap::Subcommand)]
pub enum ConfigCommand {
    /// Print the default settings file, every key documented
    /// (`spindle config print-default > ~/.config/spindle/server.toml`).
    PrintDefault,
    /// Check a settings file and print the settings in effect (file and
    /// SPINDLE_… environment variables resolved).
    Check {
        /// The file (default: as `spindle serve` finds it).
        #[arg(long, value_name = "FILE")]
        config: Option<PathBuf>,
    },
}

pub fn run(cmd: &ConfigCommand) -> anyhow::Result<std::process::ExitCode> {
    match cmd {
        ConfigCommand::PrintDefault => print!("{}", settings::default_file()),
        ConfigCommand::Check { config } => {
            let file = super::serve::settings_path(config.as_deref());
            let s = settings::load(file.as_deref(), &super::serve::env_var, Layer::default())?;
            match &s.file {
                Some(f) => println!("# {}: OK; the settings in effect:", f.display()),
                None => println!("# no settings file; the settings in effect:"),
            }
            print!("{}", settings::render(&s.to_layer()));
        }
    }
    Ok(std::process::ExitCode::SUCCESS)
}
