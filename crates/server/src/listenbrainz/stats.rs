//! ListenBrainz's user statistics, `/1/stats/user/NAME/STAT`, counted
//! from the listening history when asked (listenbrainz.org computes them
//! in batches; here they are always up to date, so `last_updated` is
//! now): `artists`, `releases` and `recordings` (top lists with `count`,
//! `offset` and `range`), `listening-activity` (listens per day, week,
//! month or year) and `daily-activity` (listens per weekday and hour,
//! UTC). Ranges are [`StatsRange`]s. A range without listens is answered
//! `204 No Content`, as listenbrainz.org answers stats it has not
//! computed; liblistenbrainz reads that as `None`.
//!
//! The same privacy as the user's listens ([`super::may_read`]).

use axum::http::StatusCode;
use serde_json::{json, Map, Value};
use spindle_listens::{ChartKind, ChartQuery};

use super::error::LbError;
use super::range::{StatsRange, RANGE_NAMES};
use super::{may_read, Call, Reply, MAX_ITEMS_PER_GET, PRIVATE};
use crate::params::Params;
use crate::state::AppState;

/// Rows of a top list when `count` is not given, as listenbrainz.org.
pub const DEFAULT_COUNT: usize = 25;

/// Weekday names in listenbrainz.org's order (Python's `calendar.day_name`).
const WEEKDAYS: [&str; 7] = [
    "Monday",
    "Tuesday",
    "Wednesday",
    "Thursday",
    "Friday",
    "Saturday",
    "Sunday",
];

/// `GET /1/stats/user/{name}/{stat}`. The statistic's name is checked
/// before the caller's right to read (an unknown one is 404 for anyone).
pub(super) async fn user_stat(c: Call) -> Result<Reply, LbError> {
    let (name, stat) = (c.param("name"), c.param("stat"));
    let kind = match stat.as_str() {
        "artists" => Some(ChartKind::Artists),
        "releases" => Some(ChartKind::Albums),
        "recordings" => Some(ChartKind::Tracks),
        "listening-activity" | "daily-activity" => None,
        _ => {
            return Err(LbError::new(
                StatusCode::NOT_FOUND,
                format!("No statistic '{stat}': artists, releases, recordings, listening-activity or daily-activity."),
            ))
        }
    };
    let st = &c.st;
    if !may_read(st, &c.req, &name) {
        return Err(LbError::new(StatusCode::UNAUTHORIZED, PRIVATE));
    }
    let q = Params::parse(c.req.uri().query(), b"");
    let range = match q.get("range").filter(|r| !r.is_empty()) {
        None => StatsRange::AllTime,
        Some(r) => StatsRange::parse(r).ok_or_else(|| {
            LbError::bad_request(format!("Invalid range: {r}; use {RANGE_NAMES}."))
        })?,
    };
    let ask = Ask {
        st,
        user: &name,
        range,
        now: st.now(),
    };
    let payload = match kind {
        Some(kind) => {
            let num = |k: &str, default: usize| match q.get(k).filter(|v| !v.is_empty()) {
                None => Ok(default),
                Some(v) => v.parse::<usize>().map_err(|_| {
                    LbError::bad_request(format!("'{k}' should be a non-negative integer"))
                }),
            };
            let (count, offset) = (num("count", DEFAULT_COUNT)?, num("offset", 0)?);
            ask.top(kind, count.min(MAX_ITEMS_PER_GET), offset)
        }
        None if stat == "listening-activity" => ask.listening_activity(),
        None => ask.daily_activity(),
    };
    // A range without listens: 204, as listenbrainz.org for stats it has
    // not computed.
    Ok(payload.map_or(Reply::NoContent, |p| Reply::Json(json!({ "payload": p }))))
}

/// One statistics question: whose, which range, when.
struct Ask<'a> {
    st: &'a AppState,
    user: &'a str,
    range: StatsRange,
    now: i64,
}

impl Ask<'_> {
    fn first_listen(&self) -> Option<i64> {
        self.st.listens.summary(self.user).first_listen
    }

    /// The fields every payload has, for `[from, to)`.
    fn frame(&self, from: i64, to: i64) -> Map<String, Value> {
        let mut m = Map::new();
        m.insert("user_id".into(), json!(self.user));
        m.insert("range".into(), json!(self.range.name()));
        m.insert("from_ts".into(), json!(from));
        m.insert("to_ts".into(), json!(to - 1));
        m.insert("last_updated".into(), json!(self.now));
        m
    }

    /// A top list; `None` when the range has no listens.
    fn top(&self, kind: ChartKind, count: usize, offset: usize) -> Option<Value> {
        let (from, to) = self.range.span(self.now, self.first_listen());
        // Rows offset..offset+count are the first page of offset+count.
        let chart = self.st.listens.chart(
            self.user,
            kind,
            &ChartQuery {
                from: Some(from),
                to: Some(to - 1),
                limit: offset.saturating_add(count),
                page: 1,
                ..ChartQuery::default()
            },
        );
        if chart.total == 0 {
            return None;
        }
        let rows: Vec<Value> = chart
            .rows
            .iter()
            .skip(offset)
            .map(|r| match kind {
                ChartKind::Artists => json!({
                    "artist_name": r.name, "artist_mbid": null, "artist_mbids": [],
                    "listen_count": r.playcount,
                }),
                ChartKind::Albums => json!({
                    "release_name": r.name, "release_mbid": null,
                    "artist_name": r.artist, "artist_mbids": [],
                    "listen_count": r.playcount,
                }),
                ChartKind::Tracks => json!({
                    "track_name": r.name, "recording_mbid": null,
                    "release_name": null, "release_mbid": null,
                    "artist_name": r.artist, "artist_mbids": [],
                    "listen_count": r.playcount,
                }),
            })
            .collect();
        let (list, total) = match kind {
            ChartKind::Artists => ("artists", "total_artist_count"),
            ChartKind::Albums => ("releases", "total_release_count"),
            ChartKind::Tracks => ("recordings", "total_recording_count"),
        };
        let mut m = self.frame(from, to);
        m.insert("count".into(), json!(rows.len()));
        m.insert("offset".into(), json!(offset));
        m.insert(total.into(), json!(chart.total));
        m.insert(list.into(), Value::Array(rows));
        Some(Value::Object(m))
    }

    /// Listens per bucket of the range and the period before it; for
    /// `all_time`, the years that have listens.
    fn listening_activity(&self) -> Option<Value> {
        let buckets = self.range.buckets(self.now, self.first_listen());
        let (from, to) = (buckets.first()?.from, buckets.last()?.to);
        let plays = self.st.listens.plays(self.user, Some(from), Some(to - 1));
        if plays.is_empty() {
            return None;
        }
        let rows: Vec<Value> = buckets
            .iter()
            .filter_map(|b| {
                let lo = plays.partition_point(|p| p.0 < b.from);
                let hi = plays.partition_point(|p| p.0 < b.to);
                let n = hi - lo;
                if n == 0 && self.range == StatsRange::AllTime {
                    return None;
                }
                Some(json!({
                    "from_ts": b.from, "to_ts": b.to - 1,
                    "time_range": b.label, "listen_count": n,
                }))
            })
            .collect();
        let mut m = self.frame(from, to);
        m.insert("listening_activity".into(), Value::Array(rows));
        Some(Value::Object(m))
    }

    /// Listens per weekday and hour (UTC) in the range.
    fn daily_activity(&self) -> Option<Value> {
        let (from, to) = self.range.span(self.now, self.first_listen());
        let plays = self.st.listens.plays(self.user, Some(from), Some(to - 1));
        if plays.is_empty() {
            return None;
        }
        let mut grid = [[0u32; 24]; 7];
        for &(ts, _) in &plays {
            let (wd, hour) = weekday_hour(ts);
            grid[wd][hour] += 1;
        }
        let days: Map<String, Value> = WEEKDAYS
            .iter()
            .zip(grid)
            .map(|(name, hours)| {
                let hours: Vec<Value> = hours
                    .iter()
                    .enumerate()
                    .map(|(h, n)| json!({"hour": h, "listen_count": n}))
                    .collect();
                ((*name).to_owned(), Value::Array(hours))
            })
            .collect();
        let mut m = self.frame(from, to);
        m.insert("daily_activity".into(), Value::Object(days));
        Some(Value::Object(m))
    }
}

/// The UTC weekday (0 = Monday) and hour of `ts`.
fn weekday_hour(ts: i64) -> (usize, usize) {
    const DAY: i64 = crate::time::DAY;
    // 1970-01-01 was a Thursday (3 days after a Monday).
    let days = ts.div_euclid(DAY);
    let wd = (days + 3).rem_euclid(7) as usize;
    let hour = (ts.rem_euclid(DAY) / 3600) as usize;
    (wd, hour)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn weekday_and_hour_are_utc() {
        // 2020-05-13 15:00 UTC, a Wednesday.
        assert_eq!(weekday_hour(1_589_382_000), (2, 15));
        // 1970-01-01 00:00 was a Thursday; the second before, Wednesday 23h.
        assert_eq!(weekday_hour(0), (3, 0));
        assert_eq!(weekday_hour(-1), (2, 23));
    }
}
