//! `/ui/api/review?year=YYYY`: the logged-in user's year in review, for
//! the web UI's "Year in review" page — listens, hours listened (the sum
//! of the durations the history knows; a listen without one adds
//! nothing), the top 10 artists, albums and tracks, the busiest day and
//! month, and the artists first heard that year. The year is the user's:
//! it begins at midnight of 1 January in their time zone, and days and
//! months are counted in that zone (as "today" is, see
//! [`super::charts::local_day`]). Without `year`, the user's current
//! year.

use std::collections::{BTreeMap, HashSet};

use axum::extract::{Query, State};
use axum::response::IntoResponse;
use axum::Json;
use jiff::civil::Date;
use jiff::tz::TimeZone;
use serde::Deserialize;
use serde_json::{json, Value};
use spindle_listens::{ChartKind, ChartQuery};

use super::charts::{day_start, local_day};
use super::extract::User;
use super::{WebError, WebResult};
use crate::state::AppState;
use crate::time::{date_of_day, day_of_date};

/// Rows of each top list of a review.
pub const REVIEW_TOP: usize = 10;

/// Most newly found artists a review names (it counts them all).
pub const REVIEW_NEW_ARTISTS: usize = 50;

#[derive(Deserialize)]
pub(super) struct ReviewQ {
    year: Option<String>,
}

/// `GET /ui/api/review`.
pub(super) async fn review(
    State(st): State<AppState>,
    User(user, _): User,
    Query(q): Query<ReviewQ>,
) -> WebResult {
    let tz = st.accounts.time_zone(&user);
    let year = match q.year.as_deref().map(str::trim).filter(|y| !y.is_empty()) {
        None => date_of_day(local_day(&tz, st.now())).year(),
        Some(y) => y
            .parse::<i16>()
            .ok()
            .filter(|y| (1..=9998).contains(y))
            .ok_or_else(|| WebError::bad_request("year must be a year such as 2024 (1 to 9998)"))?,
    };
    Ok(st
        .call(move |st| Json(year_review(st, &user, &tz, year)).into_response())
        .await?)
}

/// When `year` begins and ends in `tz`: `[from, to]`, UNIX seconds.
pub(super) fn year_span(tz: &TimeZone, year: i16) -> (i64, i64) {
    let jan1 = |y: i16| Date::new(y, 1, 1).map_or(0, day_of_date);
    (
        day_start(tz, jan1(year)),
        day_start(tz, jan1(year.saturating_add(1))) - 1,
    )
}

/// The review of `user`'s `year` in `tz`.
fn year_review(st: &AppState, user: &str, tz: &TimeZone, year: i16) -> Value {
    let (from, to) = year_span(tz, year);
    let plays = st.listens.plays(user, Some(from), Some(to));
    let seconds: u64 = plays.iter().filter_map(|p| p.1).map(u64::from).sum();
    let mut per_day: BTreeMap<i64, u32> = BTreeMap::new();
    for &(ts, _) in &plays {
        *per_day.entry(local_day(tz, ts)).or_default() += 1;
    }
    let mut per_month: BTreeMap<i8, u32> = BTreeMap::new();
    for (&d, &n) in &per_day {
        *per_month.entry(date_of_day(d).month()).or_default() += n;
    }
    // The first of the busiest: ties go to the earlier day or month.
    let busiest_day = busiest(&per_day).map(
        |(d, n)| json!({"date": date_of_day(d).strftime("%Y-%m-%d").to_string(), "listens": n}),
    );
    let busiest_month = busiest(&per_month)
        .map(|(m, n)| json!({"month": format!("{year:04}-{m:02}"), "listens": n}));
    let chart = |kind, from: Option<i64>, to: i64, limit| {
        st.listens.chart(
            user,
            kind,
            &ChartQuery {
                from,
                to: Some(to),
                limit,
                page: 1,
                ..ChartQuery::default()
            },
        )
    };
    let top = |kind| -> Vec<Value> {
        chart(kind, Some(from), to, REVIEW_TOP)
            .rows
            .iter()
            .map(|r| match kind {
                ChartKind::Artists => json!({"name": r.name, "listens": r.playcount}),
                _ => json!({"name": r.name, "artist": r.artist, "listens": r.playcount}),
            })
            .collect()
    };
    // Artists of the year that no listen before it has.
    let before: HashSet<String> = chart(ChartKind::Artists, None, from - 1, usize::MAX)
        .rows
        .into_iter()
        .map(|r| r.name)
        .collect();
    let new: Vec<_> = chart(ChartKind::Artists, Some(from), to, usize::MAX)
        .rows
        .into_iter()
        .filter(|r| !before.contains(&r.name))
        .collect();
    let new_names: Vec<Value> = new
        .iter()
        .take(REVIEW_NEW_ARTISTS)
        .map(|r| json!({"name": r.name, "listens": r.playcount}))
        .collect();
    json!({
        "year": year,
        "from": from,
        "to": to,
        "listens": plays.len(),
        "seconds": seconds,
        "hours": (seconds as f64 / 360.0).round() / 10.0,
        "top_artists": top(ChartKind::Artists),
        "top_albums": top(ChartKind::Albums),
        "top_tracks": top(ChartKind::Tracks),
        "busiest_day": busiest_day,
        "busiest_month": busiest_month,
        "new_artist_count": new.len(),
        "new_artists": new_names,
    })
}

/// The key with the largest count; the first such on a tie.
fn busiest<K: Copy + Ord>(counts: &BTreeMap<K, u32>) -> Option<(K, u32)> {
    counts
        .iter()
        .fold(None, |best: Option<(K, u32)>, (&k, &n)| match best {
            Some((_, b)) if b >= n => best,
            _ => Some((k, n)),
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_year_begins_at_local_midnight() {
        // 2024-01-01T00:00Z and 2025-01-01T00:00Z.
        let (y24, y25) = (1_704_067_200, 1_735_689_600);
        assert_eq!(year_span(&TimeZone::UTC, 2024), (y24, y25 - 1));
        // New York is 5 hours behind UTC in winter.
        let ny = TimeZone::get("America/New_York").unwrap();
        assert_eq!(year_span(&ny, 2024), (y24 + 5 * 3600, y25 + 5 * 3600 - 1));
    }

    #[test]
    fn the_busiest_is_the_first_of_the_largest() {
        let counts: BTreeMap<i64, u32> = [(3, 2), (5, 7), (9, 7), (1, 1)].into_iter().collect();
        assert_eq!(busiest(&counts), Some((5, 7)));
        assert_eq!(busiest(&BTreeMap::<i64, u32>::new()), None);
    }
}
