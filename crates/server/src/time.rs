//! Calendar formatting without a date library.

const MONTHS: [&str; 12] = [
    "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
];

/// (year, month 1-12, day) of a day count since 1970-01-01 (Howard
/// Hinnant's civil_from_days).
pub fn civil(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

/// Last.fm's date text: `01 Jan 2020, 00:00` (UTC).
pub fn lastfm_date(ts: i64) -> String {
    let (y, m, d) = civil(ts.div_euclid(86_400));
    let secs = ts.rem_euclid(86_400);
    format!(
        "{d:02} {} {y}, {:02}:{:02}",
        MONTHS[(m - 1) as usize],
        secs / 3600,
        secs % 3600 / 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates() {
        assert_eq!(lastfm_date(0), "01 Jan 1970, 00:00");
        assert_eq!(lastfm_date(1_700_000_000), "14 Nov 2023, 22:13");
        assert_eq!(lastfm_date(951_782_400), "29 Feb 2000, 00:00");
    }
}
