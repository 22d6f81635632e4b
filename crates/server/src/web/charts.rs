//! `/ui/chart/NAME.svg?period=…`: the user's charts as SVG pictures —
//! `listens` (listens per day, week or month), `artists`, `albums` and
//! `tracks` (top lists). Periods: `7day` (default), `30day`, `12month`,
//! `overall`, or `range` with `from` and `to` (YYYY-MM-DD, both included).
//! `limit` sets the rows of a top list (10 by default, at most 100).
//!
//! Days are the user's: they begin at midnight in the user's time zone
//! (`crate::accounts`' `timezone`; UTC when none is set). In UTC, counting
//! uses the history's day buckets, so a chart over a large history costs
//! milliseconds. In another zone the top lists count exactly from the
//! history's time index (whole UTC days from the buckets, the partial
//! ones listen by listen), and so does a listens chart of day columns (up
//! to 92 days: one range count per day); a chart of week or month
//! columns counts UTC days, whose few hours' shift does not show at that
//! scale.

use axum::extract::{Path, Query, State};
use axum::http::{header, HeaderMap, HeaderValue};
use axum::response::{IntoResponse, Response};
use jiff::tz::TimeZone;
use jiff::Timestamp;
use serde::Deserialize;
use spindle_listens::{ChartKind, ChartQuery, RecentQuery};

use super::{with_catalog, WebError, WebResult};
use crate::catalog::{album_id, artist_id, Catalog};
use crate::chart_svg::{self, Ranked, Span};
use crate::state::AppState;
use crate::time::{date_of_day, day_of_date, DAY};

/// Most day columns counted exactly in a zone other than UTC: 92, the
/// most a listens chart draws a column per day for.
pub const MAX_EXACT_DAYS: i64 = 92;

/// The civil day number (days since 1970-01-01) of `ts` in `tz`.
pub(super) fn local_day(tz: &TimeZone, ts: i64) -> i64 {
    let ts = Timestamp::from_second(ts).unwrap_or(Timestamp::UNIX_EPOCH);
    day_of_date(tz.to_datetime(ts).date())
}

/// When civil day `day` begins in `tz` (its first instant: midnight, or
/// the end of a DST gap that skips midnight), UNIX seconds.
pub(super) fn day_start(tz: &TimeZone, day: i64) -> i64 {
    date_of_day(day)
        .to_zoned(tz.clone())
        .map_or(day * DAY, |z| z.timestamp().as_second())
}

/// A named period for a user in `tz`: whole days of theirs, today
/// included (the same words and checks as [`chart_svg::period`], which
/// counts UTC days).
pub(super) fn period_in(
    tz: &TimeZone,
    q: &ChartQ,
    now: i64,
) -> Result<Span, chart_svg::PeriodError> {
    // The UTC span of the same dates: "today" is the user's.
    let today = local_day(tz, now);
    let shifted = today * DAY + now.rem_euclid(DAY);
    let utc = chart_svg::period(&q.period, q.from.as_deref(), q.to.as_deref(), shifted)?;
    if *tz == TimeZone::UTC {
        return Ok(utc);
    }
    Ok(Span {
        from: utc.from.map(|f| day_start(tz, f.div_euclid(DAY))),
        to: utc.to.map(|t| day_start(tz, t.div_euclid(DAY) + 1) - 1),
        label: utc.label,
    })
}

#[derive(Deserialize)]
pub(super) struct ChartQ {
    #[serde(default)]
    period: String,
    from: Option<String>,
    to: Option<String>,
    limit: Option<usize>,
}

fn svg(body: String) -> Response {
    let mut r = body.into_response();
    let h = r.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("image/svg+xml; charset=utf-8"),
    );
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    h.insert(
        "content-security-policy",
        HeaderValue::from_static("default-src 'none'"),
    );
    r
}

pub(super) async fn chart(
    State(st): State<AppState>,
    h: HeaderMap,
    Path(name): Path<String>,
    Query(q): Query<ChartQ>,
) -> WebResult {
    let kind = match name.strip_suffix(".svg").unwrap_or(&name) {
        "listens" => None,
        "artists" => Some(ChartKind::Artists),
        "albums" => Some(ChartKind::Albums),
        "tracks" => Some(ChartKind::Tracks),
        _ => return Err(WebError::not_found("no such chart")),
    };
    with_catalog(st, &h, move |st, cat, user| {
        let now = st.now();
        let tz = st.accounts.time_zone(user);
        let span = period_in(&tz, &q, now).map_err(|e| WebError::bad_request(e.to_string()))?;
        Ok(match kind {
            None => svg(listens_svg(st, user, &span, now, &tz)),
            Some(kind) => {
                let limit = q.limit.unwrap_or(10).clamp(1, 100);
                svg(top_svg(st, cat, user, kind, &span, limit))
            }
        })
    })
    .await
}

fn listens_svg(st: &AppState, user: &str, span: &Span, now: i64, tz: &TimeZone) -> String {
    let per_day = st.listens.per_day(user, span.from);
    let from = span
        .from
        .or_else(|| per_day.first().map(|d| d.0))
        .unwrap_or(now);
    let to = span.to.unwrap_or(now).max(from);
    let (first, last) = (local_day(tz, from), local_day(tz, to));
    let (step, cols) = if *tz == TimeZone::UTC || last - first >= MAX_EXACT_DAYS {
        // UTC buckets; outside UTC, drawn on the user's dates.
        chart_svg::columns(&per_day, first * DAY, last * DAY)
    } else {
        let local = per_local_day(st, user, tz, first, last);
        chart_svg::columns(&local, first * DAY, last * DAY)
    };
    let title = format!("Listens per {}, {}", step.noun(), span.label);
    chart_svg::time_svg("chart-listens", &title, "listen", &cols)
}

/// A user's listens per day of theirs from civil day `first` to `last`,
/// as [`chart_svg::columns`] takes them: (day number × [`DAY`], count).
/// One range count of the time index per day.
pub(super) fn per_local_day(
    st: &AppState,
    user: &str,
    tz: &TimeZone,
    first: i64,
    last: i64,
) -> Vec<(i64, u32)> {
    (first..=last)
        .filter_map(|day| {
            let q = RecentQuery {
                from: Some(day_start(tz, day)),
                to: Some(day_start(tz, day + 1) - 1),
                limit: 0,
                page: 1,
            };
            let n = st.listens.recent(user, &q).total;
            (n > 0).then(|| (day * DAY, u32::try_from(n).unwrap_or(u32::MAX)))
        })
        .collect()
}

fn top_svg(
    st: &AppState,
    cat: &Catalog,
    user: &str,
    kind: ChartKind,
    span: &Span,
    limit: usize,
) -> String {
    let chart = st.listens.chart(
        user,
        kind,
        &ChartQuery {
            from: span.from,
            to: span.to,
            artist: None,
            limit,
            page: 1,
        },
    );
    let counts: Vec<u32> = chart.rows.iter().map(|r| r.playcount).collect();
    let ranks = chart_svg::shared_ranks(&counts, 1);
    // The history is the user's own and shows as it is; a link goes only
    // to an album or artist of the music folders the user may see.
    let grant = st.accounts.folders_of(user);
    let sees = |songs: &[usize]| {
        songs.iter().any(|&n| {
            let folder = cat.songs[n].folder as u32 + 1;
            grant.as_ref().is_none_or(|ids| ids.contains(&folder))
        })
    };
    let rows: Vec<Ranked> = chart
        .rows
        .into_iter()
        .zip(ranks)
        .map(|(r, rank)| {
            // A link to the library's page of the artist or album, if the
            // library has it.
            let href = match kind {
                ChartKind::Albums => {
                    let id = album_id(&r.artist, &r.name);
                    cat.album(&id)
                        .filter(|a| sees(&a.songs))
                        .map(|_| format!("#/album/{id}"))
                }
                ChartKind::Artists | ChartKind::Tracks => {
                    let name = if kind == ChartKind::Artists {
                        &r.name
                    } else {
                        &r.artist
                    };
                    let id = artist_id(name);
                    cat.artist(&id)
                        .filter(|a| a.albums.iter().any(|&al| sees(&cat.albums[al].songs)))
                        .map(|_| format!("#/artist/{id}"))
                }
            };
            Ranked {
                rank,
                name: r.name,
                by: r.artist,
                count: r.playcount,
                href,
            }
        })
        .collect();
    let (what, id) = match kind {
        ChartKind::Artists => ("Top artists", "chart-artists"),
        ChartKind::Albums => ("Top albums", "chart-albums"),
        ChartKind::Tracks => ("Top tracks", "chart-tracks"),
    };
    let title = format!("{what}, {}", span.label);
    chart_svg::ranked_svg(id, &title, "listen", &rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(period: &str, from: Option<&str>, to: Option<&str>) -> ChartQ {
        ChartQ {
            period: period.into(),
            from: from.map(Into::into),
            to: to.map(Into::into),
            limit: None,
        }
    }

    #[test]
    fn in_utc_the_periods_are_the_utc_days_they_always_were() {
        let now = 1_700_000_000; // 2023-11-14 22:13 UTC
        for (p, f, t) in [
            ("7day", None, None),
            ("range", Some("2023-01-01"), Some("2023-01-31")),
        ] {
            let want = chart_svg::period(p, f, t, now).unwrap();
            assert_eq!(period_in(&TimeZone::UTC, &q(p, f, t), now).unwrap(), want);
        }
    }

    #[test]
    fn a_users_days_begin_at_their_midnight() {
        let tokyo = TimeZone::get("Asia/Tokyo").unwrap(); // UTC+9, no DST
                                                          // 2023-11-14 22:13 UTC is 2023-11-15 07:13 in Tokyo: today is the
                                                          // 15th there, and 7 days begin on the 9th at 00:00 +09:00.
        let now = 1_700_000_000;
        let s = period_in(&tokyo, &q("7day", None, None), now).unwrap();
        let nov9 = day_of_date(jiff::civil::date(2023, 11, 9));
        assert_eq!(s.from, Some(nov9 * DAY - 9 * 3600));
        assert_eq!(s.to, None);
        let r = period_in(
            &tokyo,
            &q("range", Some("2023-11-09"), Some("2023-11-09")),
            now,
        )
        .unwrap();
        assert_eq!(r.from, Some(nov9 * DAY - 9 * 3600));
        assert_eq!(r.to, Some((nov9 + 1) * DAY - 9 * 3600 - 1));
        assert_eq!(local_day(&tokyo, now), nov9 + 6);
        assert!(period_in(&tokyo, &q("range", Some("x"), Some("y")), now).is_err());
    }

    #[test]
    fn listens_fall_on_the_users_own_days_and_top_lists_count_them() {
        let k = crate::subsonic::testkit::Kit::new();
        let st = &k.state;
        // 2023-11-14 in UTC: 14:30 and 23:30. In Tokyo (+9) the second is
        // on the 15th; in UTC both are on the 14th.
        let day14 = day_of_date(jiff::civil::date(2023, 11, 14));
        let listens: Vec<spindle_listens::Listen> = [14 * 3600 + 1800, 23 * 3600 + 1800]
            .iter()
            .map(|s| spindle_listens::Listen::new("ann", day14 * DAY + s, "Artist", "Song"))
            .collect();
        st.listens.submit(&listens).unwrap();
        let utc = per_local_day(st, "ann", &TimeZone::UTC, day14 - 1, day14 + 1);
        assert_eq!(utc, [(day14 * DAY, 2)]);
        let tokyo = TimeZone::get("Asia/Tokyo").unwrap();
        let local = per_local_day(st, "ann", &tokyo, day14 - 1, day14 + 1);
        assert_eq!(local, [(day14 * DAY, 1), ((day14 + 1) * DAY, 1)]);
        // A top list of "the 15th" in Tokyo counts the second listen only.
        let q = q("range", Some("2023-11-15"), Some("2023-11-15"));
        let span = period_in(&tokyo, &q, (day14 + 2) * DAY).unwrap();
        let chart = st.listens.chart(
            "ann",
            ChartKind::Artists,
            &ChartQuery {
                from: span.from,
                to: span.to,
                artist: None,
                limit: 10,
                page: 1,
            },
        );
        assert_eq!(chart.rows[0].playcount, 1);
    }

    #[test]
    fn a_day_that_skips_midnight_begins_when_the_clock_comes_back() {
        // Santiago moved its clocks from 00:00 to 01:00 on 2023-09-03.
        let scl = TimeZone::get("America/Santiago").unwrap();
        let day = day_of_date(jiff::civil::date(2023, 9, 3));
        let start = day_start(&scl, day);
        assert_eq!(local_day(&scl, start), day);
        assert_eq!(local_day(&scl, start - 1), day - 1);
    }
}
