//! Spindle's log: where the `tracing` events of the library crates go.
//! One subscriber for the process, installed by the `spindle` binary
//! before any command runs ([`init`]), writing to stderr (stdout is the
//! commands' output: `serve`'s first stdout line is its URL).
//!
//! The level filter is `SPINDLE_LOG`, else `RUST_LOG`, in
//! [`EnvFilter`] syntax (`debug`, `info,spindle_tiers=debug`); default
//! `info`.
//!
//! Two formats:
//! - [`LogFormat::Text`], the default: one line per event,
//!   `spindle: MESSAGE`, with `warning: ` (or `error: `, `debug: `,
//!   `trace: `) before the message below info level's, then ` key=value`
//!   for each field whose value the message does not already show. No
//!   timestamp: the journal or the terminal has one. Lines such as
//!   `spindle: auth failure for user 'ann' from 203.0.113.9 via subsonic`
//!   are matched by fail2ban (`docs/security.md`), so the message is the
//!   line. Control characters are escaped: one event is one line.
//! - [`LogFormat::Json`] (`serve --log-format json`): one JSON object per
//!   line with `timestamp`, `level`, `target`, `fields` (the message and
//!   the structured fields) and `span` (the background job, if any).
//!
//! It is *not* a place for log calls (the crates call `tracing` directly)
//! and knows nothing of the command line: the binary maps its flag to a
//! [`LogFormat`].
//!
//! ```
//! spindle_log::init(spindle_log::LogFormat::Text, "spindle");
//! tracing::info!("listening on 127.0.0.1:4533");
//! ```
#![forbid(unsafe_code)]

use std::fmt;

use tracing::field::{Field, Visit};
use tracing::{Event, Level, Subscriber};
use tracing_subscriber::filter::{EnvFilter, LevelFilter};
use tracing_subscriber::fmt::format::Writer;
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields, MakeWriter};
use tracing_subscriber::registry::LookupSpan;

/// How log lines are written.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum LogFormat {
    /// `spindle: …` lines.
    #[default]
    Text,
    /// One JSON object per line.
    Json,
}

/// The environment variables read for the level filter, first found wins.
const FILTER_VARS: [&str; 2] = ["SPINDLE_LOG", "RUST_LOG"];

/// Installs the process's subscriber, writing to stderr. `prefix` starts
/// every text line (`spindle`, or `spindle scrobble` for the scrobbler's
/// daemon). A filter that does not parse is reported once and replaced
/// by the default.
pub fn init(format: LogFormat, prefix: &'static str) {
    let (filter, bad) = filter_from_env();
    let subscriber = subscriber(format, prefix, filter, std::io::stderr);
    // Fails only when a subscriber is already set; the first one stays.
    if tracing::subscriber::set_global_default(subscriber).is_ok() {
        if let Some((var, e)) = bad {
            tracing::warn!("{var} does not parse ({e}); logging at info level");
        }
    }
}

/// The filter from the first set variable of [`FILTER_VARS`]; `info`
/// when none is, or (with the variable and its error) when it does not
/// parse.
fn filter_from_env() -> (EnvFilter, Option<(&'static str, String)>) {
    let set = FILTER_VARS.iter().find_map(|&var| {
        std::env::var(var)
            .ok()
            .filter(|s| !s.trim().is_empty())
            .map(|spec| (var, spec))
    });
    let builder = EnvFilter::builder().with_default_directive(LevelFilter::INFO.into());
    match set {
        None => (builder.parse_lossy(""), None),
        Some((var, spec)) => match builder.clone().parse(&spec) {
            Ok(f) => (f, None),
            Err(e) => (builder.parse_lossy(""), Some((var, e.to_string()))),
        },
    }
}

/// The subscriber for `format`, writing to `writer`.
fn subscriber<W>(
    format: LogFormat,
    prefix: &'static str,
    filter: EnvFilter,
    writer: W,
) -> Box<dyn Subscriber + Send + Sync>
where
    W: for<'w> MakeWriter<'w> + Send + Sync + 'static,
{
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(writer)
        .with_ansi(false);
    match format {
        LogFormat::Text => Box::new(builder.event_format(Text { prefix }).finish()),
        LogFormat::Json => Box::new(
            builder
                .json()
                .with_current_span(true)
                .with_span_list(false)
                .finish(),
        ),
    }
}

/// The text format; see the module's doc.
struct Text {
    prefix: &'static str,
}

impl<S, N> FormatEvent<S, N> for Text
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
{
    fn format_event(
        &self,
        _ctx: &FmtContext<'_, S, N>,
        mut w: Writer<'_>,
        event: &Event<'_>,
    ) -> fmt::Result {
        let mut f = Fields::default();
        event.record(&mut f);
        w.write_str(self.prefix)?;
        w.write_str(": ")?;
        w.write_str(match *event.metadata().level() {
            Level::ERROR => "error: ",
            Level::WARN => "warning: ",
            Level::INFO => "",
            Level::DEBUG => "debug: ",
            Level::TRACE => "trace: ",
        })?;
        write_escaped(&mut w, &f.message)?;
        for (name, value) in &f.fields {
            if f.message.contains(value.as_str()) {
                continue;
            }
            write!(w, " {name}=")?;
            if value
                .chars()
                .any(|c| c.is_whitespace() || c.is_control() || c == '"')
            {
                write!(w, "{value:?}")?;
            } else {
                w.write_str(value)?;
            }
        }
        w.write_char('\n')
    }
}

/// Writes `s` with its control characters escaped (`\n`, `\u{1b}`), so
/// a message that quotes a client's input stays one line.
fn write_escaped(w: &mut Writer<'_>, s: &str) -> fmt::Result {
    for c in s.chars() {
        if c.is_control() {
            write!(w, "{}", c.escape_default())?;
        } else {
            w.write_char(c)?;
        }
    }
    Ok(())
}

/// An event's message and its other fields, as text.
#[derive(Default)]
struct Fields {
    message: String,
    fields: Vec<(&'static str, String)>,
}

impl Visit for Fields {
    fn record_str(&mut self, field: &Field, value: &str) {
        if field.name() == "message" {
            value.clone_into(&mut self.message);
        } else {
            self.fields.push((field.name(), value.to_owned()));
        }
    }

    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        if field.name() == "message" {
            self.message = format!("{value:?}");
        } else {
            self.fields.push((field.name(), format!("{value:?}")));
        }
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write;
    use std::sync::{Arc, Mutex};

    use super::*;

    /// A writer into a shared buffer.
    #[derive(Clone, Default)]
    struct Buf(Arc<Mutex<Vec<u8>>>);

    impl Write for Buf {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    /// What `events` log in `format` at the default level.
    fn logged(format: LogFormat, prefix: &'static str, events: impl FnOnce()) -> String {
        let buf = Buf::default();
        let out = buf.clone();
        let filter = EnvFilter::builder()
            .with_default_directive(LevelFilter::INFO.into())
            .parse_lossy("");
        let sub = subscriber(format, prefix, filter, move || out.clone());
        tracing::subscriber::with_default(sub, events);
        let bytes = buf.0.lock().unwrap().clone();
        String::from_utf8(bytes).unwrap()
    }

    #[test]
    fn a_warning_says_so_after_the_prefix() {
        let out = logged(LogFormat::Text, "spindle", || {
            tracing::warn!("could not raise the open-files limit: {}", "EPERM");
        });
        assert_eq!(
            out,
            "spindle: warning: could not raise the open-files limit: EPERM\n"
        );
    }

    #[test]
    fn the_auth_failure_line_is_the_documented_one() {
        // As the throttle logs it (crates/server/src/throttle.rs): the
        // fields repeat what the line says, so the text shows the line
        // alone, exactly as docs/security.md gives it for fail2ban.
        let out = logged(LogFormat::Text, "spindle", || {
            tracing::info!(
                user = "ann",
                addr = "203.0.113.9",
                via = "subsonic",
                "auth failure for user 'ann' from 203.0.113.9 via subsonic"
            );
            tracing::info!(
                user = "ann",
                addr = "203.0.113.9",
                secs = 900,
                "auth lock for 203.0.113.9 (user 'ann') for 900 s"
            );
        });
        assert_eq!(
            out,
            "spindle: auth failure for user 'ann' from 203.0.113.9 via subsonic\n\
             spindle: auth lock for 203.0.113.9 (user 'ann') for 900 s\n"
        );
    }

    #[test]
    fn fields_the_message_does_not_show_follow_it_and_lines_stay_lines() {
        let out = logged(LogFormat::Text, "spindle scrobble", || {
            tracing::error!(service = "lastfm", n = 3, why = "a b", "journal\nlost");
            tracing::debug!("not at the default level");
        });
        assert_eq!(
            out,
            "spindle scrobble: error: journal\\nlost service=lastfm n=3 why=\"a b\"\n"
        );
    }

    #[test]
    fn json_lines_parse_with_level_message_and_fields() {
        let out = logged(LogFormat::Json, "spindle", || {
            let _job = tracing::info_span!("replay").entered();
            tracing::warn!(user = "ann", "auth failure for user 'ann'");
        });
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines.len(), 1, "{out}");
        let v: serde_json::Value = serde_json::from_str(lines[0]).unwrap();
        assert_eq!(v["level"], "WARN");
        assert_eq!(v["fields"]["message"], "auth failure for user 'ann'");
        assert_eq!(v["fields"]["user"], "ann");
        assert_eq!(v["span"]["name"], "replay");
        assert!(
            v["timestamp"].as_str().is_some_and(|t| !t.is_empty()),
            "{v}"
        );
        assert!(v["target"].as_str().is_some(), "{v}");
    }
}
