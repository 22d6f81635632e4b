//! Every Last.fm 2.0 method this server answers, one row each: its name
//! (lower case, as it is matched), how a cluster serves it, and which
//! handler runs it. Dispatch ([`find`], then a `match` on the operation
//! that the compiler checks for every operation) and the cluster's routing
//! ([`crate::cluster::route::classify`]) are read from this table, so
//! adding a method is a row and its handler.

use std::collections::HashMap;
use std::sync::LazyLock;

use spindle_listens::ChartKind::{self, Albums, Artists, Tracks};

use crate::cluster::route::Class::{self, Local, Memory, Write};

/// What a method does (the handlers in `super`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Op {
    GetToken,
    GetSession,
    GetMobileSession,
    UpdateNowPlaying,
    Scrobble,
    /// `track.love` (true) or `track.unlove` (false).
    Love(bool),
    UserInfo,
    RecentTracks,
    WeeklyChartList,
    WeeklyChart(ChartKind),
    LibraryArtists,
    Info(ChartKind),
    Top(ChartKind),
    LovedTracks,
}

/// One method: a row of [`TABLE`].
pub struct Method {
    /// The name in lower case (`track.scrobble`); calls match it in any
    /// case.
    pub name: &'static str,
    /// How a cluster serves it when it comes as a GET (a POST is always
    /// sent to the primary: its method is in the body).
    pub class: Class,
    pub(crate) op: Op,
}

const fn row(name: &'static str, class: Class, op: Op) -> Method {
    Method { name, class, op }
}

/// The table. Writes: scrobbles, loves and the session keys handed out;
/// memory: desktop-auth tokens and now playing, kept by the primary.
#[rustfmt::skip]
pub static TABLE: &[Method] = &[
    row("auth.gettoken", Memory, Op::GetToken),
    row("auth.getsession", Write, Op::GetSession),
    row("auth.getmobilesession", Write, Op::GetMobileSession),
    row("track.updatenowplaying", Memory, Op::UpdateNowPlaying),
    row("track.scrobble", Write, Op::Scrobble),
    row("track.love", Write, Op::Love(true)),
    row("track.unlove", Write, Op::Love(false)),
    row("user.getinfo", Local, Op::UserInfo),
    row("user.getrecenttracks", Memory, Op::RecentTracks),
    row("user.getweeklychartlist", Local, Op::WeeklyChartList),
    row("user.getweeklyartistchart", Local, Op::WeeklyChart(Artists)),
    row("user.getweeklyalbumchart", Local, Op::WeeklyChart(Albums)),
    row("user.getweeklytrackchart", Local, Op::WeeklyChart(Tracks)),
    row("library.getartists", Local, Op::LibraryArtists),
    row("track.getinfo", Local, Op::Info(Tracks)),
    row("artist.getinfo", Local, Op::Info(Artists)),
    row("album.getinfo", Local, Op::Info(Albums)),
    row("user.gettopartists", Local, Op::Top(Artists)),
    row("user.gettopalbums", Local, Op::Top(Albums)),
    row("user.gettoptracks", Local, Op::Top(Tracks)),
    row("user.getlovedtracks", Local, Op::LovedTracks),
];

static BY_NAME: LazyLock<HashMap<&'static str, &'static Method>> =
    LazyLock::new(|| TABLE.iter().map(|m| (m.name, m)).collect());

/// The method named `name` in any case.
pub fn find(name: &str) -> Option<&'static Method> {
    if name.bytes().any(|b| b.is_ascii_uppercase()) {
        BY_NAME.get(name.to_ascii_lowercase().as_str()).copied()
    } else {
        BY_NAME.get(name).copied()
    }
}

/// How a cluster serves a GET of the method `name`; an unknown one is
/// answered by any node (with its error).
pub fn class_of(name: &str) -> Class {
    find(name).map_or(Local, |m| m.class)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_method_is_in_the_table_once_in_lower_case_and_found_in_any_case() {
        let mut seen = std::collections::HashSet::new();
        for m in TABLE {
            assert!(seen.insert(m.name), "{} is twice in the table", m.name);
            assert_eq!(m.name, m.name.to_ascii_lowercase());
            assert!(find(m.name).is_some_and(|f| std::ptr::eq(f, m)));
        }
        assert_eq!(find("Track.Scrobble").map(|m| m.op), Some(Op::Scrobble));
        assert!(find("track.nosuch").is_none());
        assert_eq!(class_of("track.nosuch"), Local);
    }
}
