//! Last.fm's weekly charts, library and play counts, from the listening
//! history: `user.getWeeklyChartList` (the weeks of the user's history,
//! each from Sunday 12:00 UTC to the next, as Last.fm cuts them),
//! `user.getWeeklyArtistChart`, `…AlbumChart` and `…TrackChart` (`from`
//! and `to`; the last whole week by default), `library.getArtists` (the
//! user's artists by plays, paged), and `track.getInfo`,
//! `artist.getInfo` and `album.getInfo`, which with `username` carry
//! `userplaycount` (and `userloved` for a track).
//!
//! The `getInfo` methods' `playcount` and `listeners` count the users
//! whose history the caller may read (public ones and the caller's own),
//! so that a private history shows in no total; `userplaycount` is given
//! only when the caller may read `username`'s history. Something nobody
//! readable has played is "not found" (error 6), as Last.fm answers an
//! unknown name.

use spindle_listens::{normalise, ChartKind, ChartQuery};

use super::response::Node;
use super::{err, list_attrs, missing, paging, target_user, viewer, LfmError};
use crate::music::{history_readable, Music};
use crate::params::Params;
use crate::state::AppState;

/// Seconds in a week.
pub const WEEK: i64 = 7 * 86_400;

/// A week of Last.fm's charts begins on Sunday at 12:00 UTC: 1970-01-04
/// (a Sunday) 12:00 is the first after the epoch.
const WEEK_ORIGIN: i64 = 3 * 86_400 + 12 * 3600;

/// Most rows of a weekly chart (Last.fm's `limit`, and its default).
pub const MAX_WEEKLY_ROWS: usize = 1000;

/// Most weeks `user.getWeeklyChartList` lists: 2,000 (about 38 years),
/// the latest ones; a history stored with an extreme timestamp cannot
/// make the list endless.
pub const MAX_CHART_WEEKS: usize = 2000;

/// The start of the chart week (Sunday 12:00 UTC) that holds `ts`
/// (saturating at the ends of `i64`).
pub fn week_start(ts: i64) -> i64 {
    WEEK_ORIGIN.saturating_add(
        ts.saturating_sub(WEEK_ORIGIN)
            .div_euclid(WEEK)
            .saturating_mul(WEEK),
    )
}

/// The whole chart weeks from the one holding `first` (no earlier than
/// `min`, the config's `min_timestamp`) to the last that ended by `now`,
/// as (from, to): at most the latest [`MAX_CHART_WEEKS`].
pub fn weeks(first: i64, now: i64, min: i64) -> Vec<(i64, i64)> {
    let latest_end = week_start(now);
    let earliest = latest_end.saturating_sub(MAX_CHART_WEEKS as i64 * WEEK);
    let mut w = week_start(first.max(min)).max(earliest);
    let mut out = Vec::new();
    while out.len() < MAX_CHART_WEEKS {
        match w.checked_add(WEEK) {
            Some(end) if end <= now => {
                out.push((w, end));
                w = end;
            }
            _ => break,
        }
    }
    out
}

/// `user.getWeeklyChartList`.
pub(super) fn weekly_chart_list(
    st: &AppState,
    p: &Params,
    music: Option<&Music>,
) -> Result<Option<Node>, LfmError> {
    let user = target_user(st, p, music)?;
    let first = st.listens.summary(&user).first_listen;
    let charts = first
        .map(|f| weeks(f, st.now(), st.config.min_timestamp))
        .unwrap_or_default()
        .into_iter()
        .map(|(from, to)| {
            Node::new("chart")
                .attr("from", from.to_string())
                .attr("to", to.to_string())
        });
    Ok(Some(
        Node::new("weeklychartlist")
            .attr("user", user.as_str())
            .children(charts),
    ))
}

/// A time parameter, or `None` when absent.
fn time(p: &Params, name: &str) -> Result<Option<i64>, LfmError> {
    p.nonempty(name)
        .map(|v| {
            v.trim()
                .parse::<i64>()
                .map_err(|_| err(6, format!("Invalid parameters - '{name}' is not a number")))
        })
        .transpose()
}

/// `user.getWeekly{Artist,Album,Track}Chart`: listens in `[from, to)`;
/// one bound alone spans a week from it; neither, the last whole week.
pub(super) fn weekly_chart(
    st: &AppState,
    p: &Params,
    kind: ChartKind,
    music: Option<&Music>,
) -> Result<Option<Node>, LfmError> {
    let user = target_user(st, p, music)?;
    let (from, to) = match (time(p, "from")?, time(p, "to")?) {
        (Some(f), Some(t)) => (f, t),
        (Some(f), None) => (f, f.saturating_add(WEEK)),
        (None, Some(t)) => (t.saturating_sub(WEEK), t),
        (None, None) => {
            let this = week_start(st.now());
            (this - WEEK, this)
        }
    };
    let limit = match p.nonempty("limit") {
        None => MAX_WEEKLY_ROWS,
        Some(v) => v
            .parse::<usize>()
            .map_err(|_| err(6, "Invalid parameters - 'limit' is not a number"))?
            .clamp(1, MAX_WEEKLY_ROWS),
    };
    let chart = st.listens.chart(
        &user,
        kind,
        &ChartQuery {
            from: Some(from),
            to: Some(to.saturating_sub(1)),
            limit,
            page: 1,
            ..ChartQuery::default()
        },
    );
    let (outer, inner) = match kind {
        ChartKind::Artists => ("weeklyartistchart", "artist"),
        ChartKind::Albums => ("weeklyalbumchart", "album"),
        ChartKind::Tracks => ("weeklytrackchart", "track"),
    };
    let rows = chart.rows.iter().map(|r| {
        let mut n = Node::new(inner).attr("rank", r.rank.to_string());
        if kind != ChartKind::Artists {
            n = n.child(Node::text("artist", &r.artist).attr("mbid", ""));
        }
        n.child(Node::text("name", &r.name))
            .child(Node::text("mbid", ""))
            .child(Node::text("playcount", r.playcount.to_string()))
            .child(Node::text("url", ""))
    });
    Ok(Some(
        Node::new(outer)
            .attr("user", user.as_str())
            .attr("from", from.to_string())
            .attr("to", to.to_string())
            .children(rows),
    ))
}

/// `library.getArtists`: the user's artists by plays, paged.
pub(super) fn library_artists(
    st: &AppState,
    p: &Params,
    music: Option<&Music>,
) -> Result<Option<Node>, LfmError> {
    let user = target_user(st, p, music)?;
    let (limit, page) = paging(p, 50)?;
    let chart = st.listens.top(&user, ChartKind::Artists, None, limit, page);
    let rows = chart.rows.iter().map(|r| {
        Node::new("artist")
            .child(Node::text("name", &r.name))
            .child(Node::text("playcount", r.playcount.to_string()))
            .child(Node::text("tagcount", "0"))
            .child(Node::text("mbid", ""))
            .child(Node::text("url", ""))
            .child(Node::text("streamable", "0"))
    });
    Ok(Some(
        list_attrs(Node::new("artists"), &user, page, limit, chart.total).children(rows),
    ))
}

/// How often `user` played an artist (`name` empty), or an album or
/// track of `artist` called `name`; names match as charts match them
/// (normalised).
fn plays_of(st: &AppState, user: &str, kind: ChartKind, artist: &str, name: &str) -> u32 {
    let chart = st.listens.chart(
        user,
        kind,
        &ChartQuery {
            artist: Some(artist),
            limit: usize::MAX,
            page: 1,
            ..ChartQuery::default()
        },
    );
    if kind == ChartKind::Artists {
        return chart.rows.first().map_or(0, |r| r.playcount);
    }
    let want = normalise(name);
    chart
        .rows
        .iter()
        .find(|r| normalise(&r.name) == want)
        .map_or(0, |r| r.playcount)
}

/// `track.getInfo`, `artist.getInfo`, `album.getInfo`.
pub(super) fn info(
    st: &AppState,
    p: &Params,
    kind: ChartKind,
    music: Option<&Music>,
) -> Result<Option<Node>, LfmError> {
    let viewer = viewer(st, p)?;
    let artist = p.nonempty("artist").ok_or_else(|| missing("artist"))?;
    let name = match kind {
        ChartKind::Artists => "",
        ChartKind::Albums => p.nonempty("album").ok_or_else(|| missing("album"))?,
        ChartKind::Tracks => p.nonempty("track").ok_or_else(|| missing("track"))?,
    };
    let readable = |u: &str| history_readable(&st.accounts, music, u, viewer.as_deref());
    let (mut playcount, mut listeners) = (0u64, 0u64);
    for u in st.accounts.user_names() {
        if readable(&u) {
            let n = plays_of(st, &u, kind, artist, name);
            playcount += u64::from(n);
            listeners += u64::from(n > 0);
        }
    }
    if playcount == 0 {
        let what = match kind {
            ChartKind::Artists => "The artist you supplied could not be found",
            ChartKind::Albums => "Album not found",
            ChartKind::Tracks => "Track not found",
        };
        return Err(err(6, what));
    }
    let user = p.nonempty("username").filter(|u| readable(u));
    let userplaycount = user.map(|u| {
        Node::text(
            "userplaycount",
            plays_of(st, u, kind, artist, name).to_string(),
        )
    });
    let counts = |n: Node| {
        n.child(Node::text("listeners", listeners.to_string()))
            .child(Node::text("playcount", playcount.to_string()))
    };
    let artist_node = || {
        Node::new("artist")
            .child(Node::text("name", artist))
            .child(Node::text("mbid", ""))
            .child(Node::text("url", ""))
    };
    let node = match kind {
        ChartKind::Artists => {
            let stats = counts(Node::new("stats")).children(userplaycount);
            Node::new("artist")
                .child(Node::text("name", artist))
                .child(Node::text("mbid", ""))
                .child(Node::text("url", ""))
                .child(Node::text("streamable", "0"))
                .child(stats)
        }
        ChartKind::Albums => counts(
            Node::new("album")
                .child(Node::text("name", name))
                .child(Node::text("artist", artist))
                .child(Node::text("mbid", ""))
                .child(Node::text("url", "")),
        )
        .children(userplaycount),
        ChartKind::Tracks => {
            let loved = user.map(|u| {
                let l = st.listens.is_loved(u, artist, name);
                Node::text("userloved", if l { "1" } else { "0" })
            });
            counts(
                Node::new("track")
                    .child(Node::text("name", name))
                    .child(Node::text("mbid", ""))
                    .child(Node::text("url", ""))
                    .child(Node::text("duration", "0"))
                    .child(Node::text("streamable", "0").attr("fulltrack", "0")),
            )
            .child(artist_node())
            .children(userplaycount)
            .children(loved)
        }
    };
    Ok(Some(node))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 2005-02-13 12:00 UTC, a Sunday: the start of a Last.fm chart week
    /// (the first `from` of Last.fm's own chart lists).
    const SUNDAY_NOON: i64 = 1_108_296_000;

    #[test]
    fn a_chart_week_runs_from_sunday_noon_to_sunday_noon() {
        assert_eq!(week_start(SUNDAY_NOON), SUNDAY_NOON);
        assert_eq!(week_start(SUNDAY_NOON + WEEK - 1), SUNDAY_NOON);
        assert_eq!(week_start(SUNDAY_NOON + WEEK), SUNDAY_NOON + WEEK);
        // Sunday morning still belongs to the week before.
        assert_eq!(week_start(SUNDAY_NOON - 1), SUNDAY_NOON - WEEK);
        assert_eq!(week_start(0), WEEK_ORIGIN - WEEK);
    }

    #[test]
    fn the_chart_list_holds_only_whole_weeks_since_the_first_listen() {
        let first = SUNDAY_NOON + 3 * 86_400;
        // Two weeks and a day later: two whole weeks have ended.
        let now = SUNDAY_NOON + 2 * WEEK + 86_400;
        assert_eq!(
            weeks(first, now, 0),
            vec![
                (SUNDAY_NOON, SUNDAY_NOON + WEEK),
                (SUNDAY_NOON + WEEK, SUNDAY_NOON + 2 * WEEK)
            ]
        );
        assert!(weeks(first, SUNDAY_NOON + WEEK - 1, 0).is_empty());
    }

    #[test]
    fn an_extreme_first_listen_gives_a_bounded_list_from_the_earliest_time() {
        let now = SUNDAY_NOON + 10 * WEEK;
        // Clamped to the earliest accepted time: ten weeks, not overflow.
        let w = weeks(i64::MIN, now, SUNDAY_NOON);
        assert_eq!(w.len(), 10);
        assert_eq!(w[0], (SUNDAY_NOON, SUNDAY_NOON + WEEK));
        // With no floor, only the latest MAX_CHART_WEEKS.
        let w = weeks(i64::MIN, now, i64::MIN);
        assert_eq!(w.len(), MAX_CHART_WEEKS);
        assert_eq!(w.last(), Some(&(SUNDAY_NOON + 9 * WEEK, now)));
        // A clock at the end of time neither overflows nor runs on.
        assert_eq!(weeks(SUNDAY_NOON, i64::MAX, 0).len(), MAX_CHART_WEEKS);
        assert!(weeks(i64::MAX, i64::MAX, 0).is_empty());
    }
}
