//! `--log-format`: the flag's values (the server's settings type, which
//! the settings file's `log.format` reads too), turned into
//! `spindle_log`'s format (the subscriber and its formats live in the
//! `spindle-log` crate).

pub use spindle_server::settings::LogFormat;

/// Installs the process's log: see `spindle_log::init`.
pub fn init(format: LogFormat, prefix: &'static str) {
    let format = match format {
        LogFormat::Text => spindle_log::LogFormat::Text,
        LogFormat::Json => spindle_log::LogFormat::Json,
    };
    spindle_log::init(format, prefix);
}
