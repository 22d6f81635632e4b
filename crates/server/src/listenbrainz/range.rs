//! The time ranges of ListenBrainz's statistics, in UTC as
//! listenbrainz.org counts them: `this_week`, `this_month` and
//! `this_year` run from the start of the current week (Monday), month or
//! year to now; `week`, `month`, `quarter`, `half_yearly` and `year` are
//! the previous whole calendar period; `all_time` runs from the first
//! listen. The listening activity of a range splits it, with the period
//! before it for comparison, into days, weeks, months or (for
//! `all_time`) years, as listenbrainz.org's `listening-activity` does.

use jiff::civil::Date;
use jiff::Span;

use crate::time::{date_of_day, day_of_date, utc, DAY};

/// A statistics range (`range=` of the stats API).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StatsRange {
    ThisWeek,
    ThisMonth,
    ThisYear,
    Week,
    Month,
    Quarter,
    HalfYearly,
    Year,
    AllTime,
}

/// Every range by its name in the API.
const NAMES: [(&str, StatsRange); 9] = [
    ("this_week", StatsRange::ThisWeek),
    ("this_month", StatsRange::ThisMonth),
    ("this_year", StatsRange::ThisYear),
    ("week", StatsRange::Week),
    ("month", StatsRange::Month),
    ("quarter", StatsRange::Quarter),
    ("half_yearly", StatsRange::HalfYearly),
    ("year", StatsRange::Year),
    ("all_time", StatsRange::AllTime),
];

/// The names `range=` accepts, for an error message.
pub const RANGE_NAMES: &str =
    "this_week, this_month, this_year, week, month, quarter, half_yearly, year or all_time";

/// A calendar period a range is made of.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Unit {
    Day,
    Week,
    Month,
    Quarter,
    Half,
    Year,
}

/// A span of time: `[from, to)` in UNIX seconds, and its name in
/// listenbrainz.org's words (`Monday 27 April 2020`, `April 2020`, `2020`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bucket {
    pub from: i64,
    pub to: i64,
    pub label: String,
}

fn ts(d: Date) -> i64 {
    day_of_date(d) * DAY
}

/// `d` moved by `n` of `unit`, clamped to what jiff represents.
fn step(unit: Unit, d: Date, n: i32) -> Date {
    let months = match unit {
        Unit::Day => return date_of_day(day_of_date(d) + i64::from(n)),
        Unit::Week => return date_of_day(day_of_date(d) + 7 * i64::from(n)),
        Unit::Month => n,
        Unit::Quarter => 3 * n,
        Unit::Half => 6 * n,
        Unit::Year => 12 * n,
    };
    d.checked_add(Span::new().months(i64::from(months)))
        .unwrap_or(if n < 0 { Date::MIN } else { Date::MAX })
}

/// The first day of the `unit` that holds `d` (weeks begin on Monday).
fn start_of(unit: Unit, d: Date) -> Date {
    let first_month = |m: i8| Date::new(d.year(), m, 1).unwrap_or(d);
    match unit {
        Unit::Day => d,
        Unit::Week => date_of_day(day_of_date(d) - i64::from(d.weekday().to_monday_zero_offset())),
        Unit::Month => d.first_of_month(),
        Unit::Quarter => first_month((d.month() - 1) / 3 * 3 + 1),
        Unit::Half => first_month(if d.month() <= 6 { 1 } else { 7 }),
        Unit::Year => first_month(1),
    }
}

impl StatsRange {
    /// The range called `name`, or `None`.
    pub fn parse(name: &str) -> Option<StatsRange> {
        NAMES.iter().find(|(n, _)| *n == name).map(|&(_, r)| r)
    }

    /// Its name in the API.
    pub fn name(self) -> &'static str {
        NAMES
            .iter()
            .find(|(_, r)| *r == self)
            .map_or("all_time", |(n, _)| n)
    }

    /// The period it counts (`None` for all time), and whether it is the
    /// current one (`this_…`) rather than the previous.
    fn unit(self) -> Option<(Unit, bool)> {
        Some(match self {
            StatsRange::ThisWeek => (Unit::Week, true),
            StatsRange::ThisMonth => (Unit::Month, true),
            StatsRange::ThisYear => (Unit::Year, true),
            StatsRange::Week => (Unit::Week, false),
            StatsRange::Month => (Unit::Month, false),
            StatsRange::Quarter => (Unit::Quarter, false),
            StatsRange::HalfYearly => (Unit::Half, false),
            StatsRange::Year => (Unit::Year, false),
            StatsRange::AllTime => return None,
        })
    }

    /// The span the top lists and daily activity count at `now`;
    /// `first` is the user's first listen (where `all_time` begins).
    pub fn span(self, now: i64, first: Option<i64>) -> (i64, i64) {
        let today = utc(now).date();
        match self.unit() {
            None => (first.unwrap_or(0).min(now), now + 1),
            Some((unit, true)) => (ts(start_of(unit, today)), now + 1),
            Some((unit, false)) => {
                let this = start_of(unit, today);
                (ts(step(unit, this, -1)), ts(this))
            }
        }
    }

    /// The listening activity's buckets at `now`: the range and the
    /// period before it, in days (weeks and months), weeks (quarters) or
    /// months (half years and years); for `all_time`, the years from the
    /// first listen's. A current range ends with the bucket holding now.
    pub fn buckets(self, now: i64, first: Option<i64>) -> Vec<Bucket> {
        let today = utc(now).date();
        let (begin, end, sub, label) = match self.unit() {
            None => {
                let first = utc(first.unwrap_or(now).min(now)).date();
                let end = step(Unit::Year, start_of(Unit::Year, today), 1);
                (start_of(Unit::Year, first), end, Unit::Year, "%Y")
            }
            Some((unit, this)) => {
                let start = start_of(unit, today);
                let (begin, end) = if this {
                    (step(unit, start, -1), step(unit, start, 1))
                } else {
                    (step(unit, start, -2), start)
                };
                let (sub, label) = match unit {
                    Unit::Week => (Unit::Day, "%A %d %B %Y"),
                    Unit::Month => (Unit::Day, "%d %B %Y"),
                    Unit::Quarter => (Unit::Week, "%d %B %Y"),
                    _ => (Unit::Month, "%B %Y"),
                };
                (begin, end, sub, label)
            }
        };
        let mut out = Vec::new();
        let mut d = begin;
        while d < end && ts(d) <= now {
            let next = step(sub, d, 1).min(end);
            if next <= d {
                break;
            }
            out.push(Bucket {
                from: ts(d),
                to: ts(next),
                label: d.strftime(label).to_string(),
            });
            d = next;
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 2020-05-13 (a Wednesday), 15:00 UTC.
    const NOW: i64 = 1_589_382_000;

    fn day(y: i16, m: i8, d: i8) -> i64 {
        ts(Date::new(y, m, d).unwrap())
    }

    #[test]
    fn every_name_parses_back_to_itself() {
        for (name, r) in NAMES {
            assert_eq!(StatsRange::parse(name), Some(r));
            assert_eq!(r.name(), name);
        }
        assert_eq!(StatsRange::parse("7day"), None);
    }

    #[test]
    fn current_ranges_run_from_the_period_start_to_now() {
        assert_eq!(
            StatsRange::ThisWeek.span(NOW, None),
            (day(2020, 5, 11), NOW + 1)
        );
        assert_eq!(
            StatsRange::ThisMonth.span(NOW, None),
            (day(2020, 5, 1), NOW + 1)
        );
        assert_eq!(
            StatsRange::ThisYear.span(NOW, None),
            (day(2020, 1, 1), NOW + 1)
        );
        assert_eq!(StatsRange::AllTime.span(NOW, Some(5)), (5, NOW + 1));
    }

    #[test]
    fn previous_ranges_are_whole_calendar_periods() {
        let cases = [
            (StatsRange::Week, day(2020, 5, 4), day(2020, 5, 11)),
            (StatsRange::Month, day(2020, 4, 1), day(2020, 5, 1)),
            (StatsRange::Quarter, day(2020, 1, 1), day(2020, 4, 1)),
            (StatsRange::HalfYearly, day(2019, 7, 1), day(2020, 1, 1)),
            (StatsRange::Year, day(2019, 1, 1), day(2020, 1, 1)),
        ];
        for (r, from, to) in cases {
            assert_eq!(r.span(NOW, None), (from, to), "{r:?}");
        }
    }

    #[test]
    fn a_week_begins_on_monday_even_on_a_sunday() {
        // 2020-05-17 is a Sunday: still the week of Monday the 11th.
        let sunday = day(2020, 5, 17) + 3600;
        assert_eq!(StatsRange::ThisWeek.span(sunday, None).0, day(2020, 5, 11));
        let monday = day(2020, 5, 18);
        assert_eq!(StatsRange::ThisWeek.span(monday, None).0, monday);
        assert_eq!(
            StatsRange::Week.span(monday, None),
            (day(2020, 5, 11), monday)
        );
    }

    #[test]
    fn activity_of_last_week_is_fourteen_named_days() {
        let b = StatsRange::Week.buckets(NOW, None);
        assert_eq!(b.len(), 14);
        assert_eq!(b[0].from, day(2020, 4, 27));
        assert_eq!(b[0].to, day(2020, 4, 28));
        assert_eq!(b[0].label, "Monday 27 April 2020");
        assert_eq!(b[13].to, day(2020, 5, 11));
    }

    #[test]
    fn activity_of_this_week_stops_today() {
        let b = StatsRange::ThisWeek.buckets(NOW, None);
        // Last week's 7 days, then Monday to Wednesday.
        assert_eq!(b.len(), 10);
        assert_eq!(b[9].label, "Wednesday 13 May 2020");
    }

    #[test]
    fn activity_of_a_year_is_months_and_of_all_time_years() {
        let b = StatsRange::Year.buckets(NOW, None);
        assert_eq!(b.len(), 24);
        assert_eq!(b[0].label, "January 2018");
        assert_eq!(b[23].to, day(2020, 1, 1));
        let q = StatsRange::Quarter.buckets(NOW, None);
        assert_eq!(q[0].from, day(2019, 10, 1));
        assert_eq!(q.last().map(|b| b.to), Some(day(2020, 4, 1)));
        let all = StatsRange::AllTime.buckets(NOW, Some(day(2017, 6, 1)));
        let labels: Vec<&str> = all.iter().map(|b| b.label.as_str()).collect();
        assert_eq!(labels, ["2017", "2018", "2019", "2020"]);
    }
}
