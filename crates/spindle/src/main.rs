//! The `spindle` binary: parses the command line, turns it into library
//! configs, and prints errors once with context.
#![forbid(unsafe_code)]

mod cli;
mod cmd;
mod logging;

use std::process::ExitCode;

fn main() -> ExitCode {
    let cli = <cli::Cli as clap::Parser>::parse();
    let (format, prefix) = match &cli.command {
        cli::Command::Serve { args } => (args.log_format(), "spindle"),
        cli::Command::Scrobble { .. } => (logging::LogFormat::Text, "spindle scrobble"),
        _ => (logging::LogFormat::Text, "spindle"),
    };
    logging::init(format, prefix);
    match cmd::dispatch(cli) {
        Ok(code) => code,
        Err(err) => {
            // A parse error of a query pattern exits with 2, as documented.
            let code = cmd::exit_code_for(&err);
            eprintln!("spindle: {}", message(&err));
            ExitCode::from(code)
        }
    }
}

/// The error and its causes, as `{:#}` prints them, except a cause whose
/// text its error already quoted (many errors say "…: {source}" and also
/// name the source as their cause, which printed it twice).
fn message(err: &anyhow::Error) -> String {
    let mut msg = err.to_string();
    let mut last = msg.clone();
    for cause in err.chain().skip(1) {
        let c = cause.to_string();
        if !last.contains(&c) {
            msg.push_str(": ");
            msg.push_str(&c);
        }
        last = c;
    }
    msg
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_cause_already_quoted_by_its_error_is_not_printed_again() {
        let io = || std::io::Error::from(std::io::ErrorKind::NotFound);
        let quoting = spindle_io::BenchError::CreateTestFile {
            dir: "d".into(),
            source: io(),
        };
        let err = anyhow::Error::new(quoting).context("running iobench");
        let msg = super::message(&err);
        assert_eq!(msg.matches(&io().to_string()).count(), 1, "{msg}");
        assert!(msg.starts_with("running iobench: cannot create"), "{msg}");
        // Causes that are not quoted are kept, as {:#} shows them.
        let plain = anyhow::Error::new(io()).context("opening x");
        assert_eq!(super::message(&plain), format!("{plain:#}"));
    }
}
