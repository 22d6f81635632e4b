//! Cover art over HTTP: the core's cover service ([`spindle_app::cover`],
//! re-exported here under the paths the adapters have always used) and
//! its answers (`answer`: validators, 304s, ranges, `Cache-Control`),
//! for Subsonic's `getCoverArt` ([`crate::subsonic`]) and the web UI's
//! `/ui/cover/ID` ([`crate::web`]).

mod serve;

pub use spindle_app::cover::*;

pub(crate) use serve::{answer, busy_headers};
