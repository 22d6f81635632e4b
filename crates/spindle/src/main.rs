//! The `spindle` binary: parses the command line, turns it into library
//! configs, and prints errors once with context.

mod cli;
mod cmd;

use std::process::ExitCode;

fn main() -> ExitCode {
    let cli = <cli::Cli as clap::Parser>::parse();
    match cmd::dispatch(cli) {
        Ok(code) => code,
        Err(err) => {
            // A parse error of a query pattern exits with 2, as documented.
            let code = cmd::exit_code_for(&err);
            eprintln!("spindle: {err:#}");
            ExitCode::from(code)
        }
    }
}
