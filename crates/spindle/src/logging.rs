//! `--log-format`: the flag's values, turned into `spindle_log`'s format
//! (the subscriber and its formats live in the `spindle-log` crate).

/// How log lines are written.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    /// `spindle: …` lines
    #[default]
    Text,
    /// one JSON object per line
    Json,
}

/// Installs the process's log: see `spindle_log::init`.
pub fn init(format: LogFormat, prefix: &'static str) {
    let format = match format {
        LogFormat::Text => spindle_log::LogFormat::Text,
        LogFormat::Json => spindle_log::LogFormat::Json,
    };
    spindle_log::init(format, prefix);
}
