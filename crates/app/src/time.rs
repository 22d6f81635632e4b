//! Dates as the server writes and reads them, all in UTC and all through
//! `jiff`: UNIX seconds to a date and time, UTC day numbers (days since
//! 1970-01-01, as the listening history counts them) to dates and back,
//! and the text forms the APIs use.

use jiff::civil::{Date, DateTime};
use jiff::tz::Offset;
use jiff::{Span, Timestamp};

/// Seconds in a UTC day.
pub const DAY: i64 = 86_400;

const EPOCH: Date = Date::constant(1970, 1, 1);

/// The UTC date and time of `ts` UNIX seconds, clamped to what `jiff`
/// represents (the years -9999 to 9999).
pub fn utc(ts: i64) -> DateTime {
    let ts = ts.clamp(Timestamp::MIN.as_second(), Timestamp::MAX.as_second());
    Offset::UTC.to_datetime(Timestamp::from_second(ts).unwrap_or(Timestamp::UNIX_EPOCH))
}

/// The date of UTC day number `day`, clamped to `jiff`'s dates.
pub fn date_of_day(day: i64) -> Date {
    Span::new()
        .try_days(day)
        .and_then(|s| EPOCH.checked_add(s))
        .unwrap_or(if day < 0 { Date::MIN } else { Date::MAX })
}

/// The UTC day number of `date`.
pub fn day_of_date(date: Date) -> i64 {
    EPOCH.until(date).map_or(0, |s| i64::from(s.get_days()))
}

/// Last.fm's date text: `01 Jan 2020, 00:00` (UTC).
pub fn lastfm_date(ts: i64) -> String {
    utc(ts).strftime("%d %b %Y, %H:%M").to_string()
}

/// ISO 8601 with milliseconds, as Subsonic writes times:
/// `2020-01-01T00:00:00.000Z`.
pub fn iso8601(ts: i64) -> String {
    utc(ts).strftime("%Y-%m-%dT%H:%M:%S.000Z").to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates() {
        assert_eq!(lastfm_date(0), "01 Jan 1970, 00:00");
        assert_eq!(lastfm_date(1_700_000_000), "14 Nov 2023, 22:13");
        assert_eq!(lastfm_date(951_782_400), "29 Feb 2000, 00:00");
        assert_eq!(lastfm_date(-1), "31 Dec 1969, 23:59");
        assert_eq!(iso8601(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(iso8601(1_700_000_000), "2023-11-14T22:13:20.000Z");
        assert_eq!(iso8601(951_868_799), "2000-02-29T23:59:59.000Z");
        assert_eq!(iso8601(951_868_800), "2000-03-01T00:00:00.000Z");
        // Out of range: clamped, never a panic.
        assert!(iso8601(i64::MAX).starts_with("9999-12-"));
        assert!(lastfm_date(i64::MIN).contains("-9999"));
    }

    #[test]
    fn day_numbers_and_dates_are_inverse() {
        assert_eq!(date_of_day(0), Date::constant(1970, 1, 1));
        assert_eq!(date_of_day(-1), Date::constant(1969, 12, 31));
        assert_eq!(date_of_day(11_016), Date::constant(2000, 2, 29));
        assert_eq!(day_of_date(Date::constant(2000, 3, 1)), 11_017);
        assert_eq!(day_of_date(Date::constant(1, 1, 1)), -719_162);
        assert_eq!(day_of_date(Date::constant(9999, 12, 31)), 2_932_896);
        for day in (-800_000..=2_932_896).step_by(997) {
            assert_eq!(day_of_date(date_of_day(day)), day, "day {day}");
        }
        assert_eq!(date_of_day(i64::MAX), Date::MAX);
        assert_eq!(date_of_day(i64::MIN), Date::MIN);
    }
}
